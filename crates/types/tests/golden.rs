//! Golden tests in rust-analyzer's layout: `test_data/ok/NNNN_name.lcm` must be accepted and describe to
//! `NNNN_name.txt` (every struct's full name, base hash, fingerprint, members with types and dimensions, consts,
//! warnings); `test_data/err/NNNN_name.lcm` must be rejected with the diagnostics rendered in `NNNN_name.txt`.
//! Every input is checked with `test_data/include` as the include path (`-I`).
//!
//! `UPDATE_EXPECT=1 cargo test -p nerve-types --test golden` rewrites the `.txt` files; review the diff.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use nerve_types::{load, Checked, ConstValue, Dim, MemberType};

fn test_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("test_data")
}

/// Runs the checker on `input` (a path relative to the crate, so diagnostics name it stably) and compares the
/// result with the `.txt` next to it, or rewrites that file when UPDATE_EXPECT is set.
fn check(input: &Path, expect_ok: bool) {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let rel = input.strip_prefix(&crate_dir).expect("under the crate").to_path_buf();
    let include = rel.parent().unwrap().parent().unwrap().join("include");
    // Paths relative to the crate directory, which is where `cargo test` runs the test.
    let actual = match load(std::slice::from_ref(&rel), &[include]) {
        Ok(checked) => {
            assert!(expect_ok, "{} was accepted:\n{}", rel.display(), describe(&checked));
            describe(&checked)
        }
        Err(diags) => {
            assert!(!expect_ok, "{} was rejected:\n{}", rel.display(), diags.render());
            assert!(diags.has_errors());
            diags.render() + "\n"
        }
    };
    let expect_path = input.with_extension("txt");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&expect_path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&expect_path)
        .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_EXPECT=1", expect_path.display()));
    if expected != actual {
        panic!(
            "{} differs from {} (UPDATE_EXPECT=1 rewrites it):\n--- expected\n{expected}\n--- actual\n{actual}",
            rel.display(),
            expect_path.display()
        );
    }
}

fn describe(checked: &Checked) -> String {
    let mut out = String::new();
    for (i, s) in checked.schema.structs.iter().enumerate() {
        let origin = if i < checked.input_structs { "" } else { " (from the include path)" };
        writeln!(out, "struct {}{origin}", s.name).unwrap();
        writeln!(out, "  base_hash   0x{:016x}", s.base_hash).unwrap();
        writeln!(out, "  fingerprint 0x{:016x}", s.fingerprint).unwrap();
        if let Some(doc) = &s.doc {
            writeln!(out, "  doc {doc:?}").unwrap();
        }
        for m in &s.members {
            let ty = match &m.ty {
                MemberType::Primitive(p) => p.lcm_name().to_owned(),
                MemberType::Struct(n) => format!("struct {n}"),
                MemberType::Enum(n) => format!("enum {n}"),
            };
            let mut dims = String::new();
            for d in &m.dims {
                match d {
                    Dim::Fixed { len, hash_text, const_name: None } => write!(dims, "[{len} as {hash_text:?}]"),
                    Dim::Fixed { len, hash_text, const_name: Some(c) } => {
                        write!(dims, "[{len} by const {c} = {hash_text:?}]")
                    }
                    Dim::Variable { member } => write!(dims, "[var {member}]"),
                }
                .unwrap();
            }
            write!(out, "  member {}: {ty}{dims}", m.name).unwrap();
            if let Some(doc) = &m.doc {
                write!(out, "  doc {doc:?}").unwrap();
            }
            out.push('\n');
        }
        for c in &s.consts {
            let value = match c.value {
                ConstValue::Int(v) => v.to_string(),
                ConstValue::Float(v) => format!("{v:e}"),
            };
            write!(out, "  const {}: {} = {value} (written {:?})", c.name, c.ty.lcm_name(), c.text).unwrap();
            if let Some(doc) = &c.doc {
                write!(out, "  doc {doc:?}").unwrap();
            }
            out.push('\n');
        }
    }
    for e in &checked.schema.enums {
        let values: Vec<String> = e.values.iter().map(|v| format!("{}={}", v.name, v.value)).collect();
        writeln!(out, "enum {} hash 0x{:016x}: {}", e.name, e.hash, values.join(", ")).unwrap();
    }
    for w in &checked.warnings {
        writeln!(out, "{}", w.render()).unwrap();
    }
    out
}

fn inputs(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(test_data().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "lcm"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    files
}

#[test]
fn ok() {
    for f in inputs("ok") {
        check(&f, true);
    }
}

#[test]
fn err() {
    for f in inputs("err") {
        check(&f, false);
    }
}

#[test]
fn every_expectation_has_an_input() {
    for dir in ["ok", "err"] {
        for e in std::fs::read_dir(test_data().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|e| e == "txt") {
                assert!(p.with_extension("lcm").exists(), "{} has no .lcm", p.display());
            }
        }
    }
}

#[test]
fn missing_input_file() {
    let err = load(&[PathBuf::from("test_data/err/does_not_exist.lcm")], &[]).unwrap_err();
    let text = err.render();
    assert!(text.starts_with("test_data/err/does_not_exist.lcm: error: cannot read: "), "{text}");
}
