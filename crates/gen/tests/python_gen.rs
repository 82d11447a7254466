//! The Python generator's file layout, names and refusals (the generated code itself is tested against the real
//! LCM in tests/interop/test_python.py).

use nerve_gen::{python, GeneratedFile, Input, Options};
use nerve_types::Source;

fn gen(text: &str, opts: &Options) -> Result<Vec<GeneratedFile>, nerve_gen::GenError> {
    let checked = nerve_types::check(&[Source { path: "t.lcm".into(), text: text.into() }], &[]).unwrap();
    python::generate(&Input::new(&checked), opts)
}

fn file<'a>(files: &'a [GeneratedFile], path: &str) -> &'a str {
    &files.iter().find(|f| f.path.to_str() == Some(path)).unwrap_or_else(|| panic!("no {path}")).contents
}

#[test]
fn writes_one_module_per_type_an_init_per_package_and_the_runtime() {
    let files = gen("package a.b; struct p_t { int32_t x; } struct q_t { p_t p; }", &Options::default()).unwrap();
    let mut paths: Vec<_> = files.iter().map(|f| f.path.to_str().unwrap().to_owned()).collect();
    paths.sort();
    assert_eq!(paths, ["a/__init__.py", "a/b/__init__.py", "a/b/p_t.py", "a/b/q_t.py", "nerve_lcm.py"]);
    let init = file(&files, "a/b/__init__.py");
    assert!(init.contains("from .p_t import p_t as p_t\nfrom .q_t import q_t as q_t\n"));
    assert_eq!(file(&files, "nerve_lcm.py"), python::RUNTIME_MODULE);
    assert!(file(&files, "a/b/q_t.py").contains("from a.b.p_t import p_t as _nv_t0"));
}

#[test]
fn no_init_files_when_asked_and_package_prefix_goes_in_front() {
    let opts = Options { package_prefix: "pre".into(), python_init: false, ..Options::default() };
    let files = gen("package a; struct p_t { int32_t x; } struct q_t { p_t p; }", &opts).unwrap();
    assert!(files.iter().all(|f| !f.path.ends_with("__init__.py")));
    assert!(file(&files, "pre/a/q_t.py").contains("from pre.a.p_t import p_t as _nv_t0"));
}

#[test]
fn hex_and_octal_dimensions_and_constants_become_python_numbers() {
    let files = gen(
        "package p; struct t { const int32_t OCT = 017, HEX = 0x3; const double D = 1e+3; int32_t a[0x3]; int8_t b[010]; }",
        &Options::default(),
    )
    .unwrap();
    let m = file(&files, "p/t.py");
    assert!(m.contains("__dimensions__ = [[3], [8]]"), "{m}");
    assert!(m.contains("OCT = 15\n"), "{m}");
    assert!(m.contains("HEX = 0x3\n"), "{m}");
    assert!(m.contains("D = 1e+3\n"), "{m}");
    assert!(!m.contains("0x3i"), "no lcm-gen style struct format with hex text");
}

#[test]
fn names_python_cannot_use_are_errors() {
    for (text, word) in [
        ("struct t { int32_t class; }", "keyword"),
        ("struct t { int32_t encode; }", "clashes"),
        ("struct t { int32_t __slots__; }", "clashes"),
        ("package import; struct t { int32_t x; }", "keyword"),
    ] {
        let e = gen(text, &Options::default()).unwrap_err();
        assert_eq!(e.language, "python");
        assert!(e.message.contains(word), "{text}: {}", e.message);
    }
}

#[test]
fn with_numpy_small_fixed_numeric_arrays_are_tuples_and_the_rest_numpy() {
    let files = gen(
        "package p; struct t { int32_t n; float a[16]; boolean b[2]; int8_t big[17]; double m[2][2]; int16_t v[n]; byte y[2]; }",
        &Options { python_numpy: true, ..Options::default() },
    )
    .unwrap();
    let m = file(&files, "p/t.py");
    // defaults: tuples of zeros for the small fixed ones
    assert!(m.contains(&format!("self.a = ({})\n", vec!["0.0"; 16].join(", "))), "{m}");
    assert!(m.contains("self.b = (False, False)\n"), "{m}");
    assert!(m.contains("self.big = _np.zeros((17,), _np.int8)\n"), "{m}");
    assert!(m.contains("self.m = _np.zeros((2, 2,), _np.float64)\n"), "{m}");
    assert!(m.contains("self.y = bytes(2)\n"), "{m}");
    // decode: the small ones are slices of one unpack_from with the scalar before them
    assert!(m.contains("t = _nv_S0.unpack_from(data, off)\n"), "{m}");
    assert!(m.contains("o.n = t[0]\n"), "{m}");
    assert!(m.contains("o.a = t[1:17]\n"), "{m}");
    assert!(m.contains("o.b = t[17:19]\n"), "{m}");
    assert!(m.contains("_nv_S0 = _struct.Struct(\">i16f2?\")"), "{m}");
    assert!(m.contains("o.big = _nv_frombuffer(data, _nv_i1, 17, off)"), "{m}");
    assert!(m.contains("o.m = _nv_ndarray((c0, c1,), _nv_f8, data, off)"), "{m}");
    assert!(m.contains("o.y = data[off:e]"), "{m}");
}

#[test]
fn by_default_arrays_are_lcm_gens_lists_tuples_and_bytes_and_numpy_is_not_imported() {
    let files = gen(
        "package p; struct t { int32_t n; float a[16]; boolean b[2]; int8_t big[17]; double m[2][2]; int16_t v[n]; \
         byte y[2]; boolean vb[n]; byte my[2][n]; }",
        &Options::default(),
    )
    .unwrap();
    let m = file(&files, "p/t.py");
    assert!(!m.contains("import numpy") && !m.contains("_np."), "{m}");
    assert!(!python::RUNTIME_MODULE.contains("\nimport numpy"), "the runtime imports numpy only when asked");
    // defaults: lcm-gen's lists of zeros, nested as it nests them; variable arrays empty
    assert!(m.contains("self.a = [0.0] * 16\n"), "{m}");
    assert!(m.contains("self.b = [False] * 2\n"), "{m}");
    assert!(m.contains("self.big = [0] * 17\n"), "{m}");
    assert!(m.contains("self.m = [[0.0] * 2 for _ in range(2)]\n"), "{m}");
    assert!(m.contains("self.v = []\n"), "{m}");
    assert!(m.contains("self.y = bytes(2)\n"), "{m}");
    assert!(m.contains("self.my = [b\"\" for _ in range(2)]\n"), "{m}");
    // decode: every fixed 1-D number array is a slice of one unpack_from (a tuple), booleans a list
    assert!(m.contains("o.a = t[1:17]\n"), "{m}");
    assert!(m.contains("o.b = list(t[17:19])\n"), "{m}");
    assert!(m.contains("o.big = t[19:36]\n"), "{m}");
    assert!(m.contains("o.v = _nv_unpack_from(\">%dh\" % c0, data, p)"), "{m}");
    assert!(m.contains("o.vb = list(_nv_unpack_from(\">%d?\" % c0, data, p))"), "{m}");
    assert!(m.contains("_nerve_numpy = False"), "{m}");
}
