//! The Python generator: `<ppath>/<pkg path>/<name>.py` per type, API-compatible with lcm-gen 1.5.3's `-p`.
//!
//! # What it writes
//!
//! For a struct `pkg.name_t`, module `pkg/name_t.py` holds class `name_t` with lcm-gen's names: `__slots__`,
//! `__typenames__`, `__dimensions__`, constants as class attributes, `encode()`, `decode(data)` (bytes, any buffer,
//! or a file-like object with `read`), `_encode_one(buf)` / `_decode_one(buf)`, `_get_hash_recursive(parents)`,
//! `_get_packed_fingerprint()` and `get_hash()`. Each package gets an `__init__.py` that imports its classes as
//! lcm-gen's does (unless `--python-no-init`), and `nerve_lcm.py` (the one runtime module, [`RUNTIME_MODULE`]) goes
//! at the root of the output directory. `__init__` also takes the members as keyword arguments.
//!
//! lcm-gen's Python bugs are not copied: dimensions spelled in hex or octal (`x[0x3]`, `x[010]`) and octal
//! constants give working code, nested types without a package are imported properly, and a truncated or corrupt
//! message raises `nerve_lcm.DecodeError` (a `ValueError` with the byte `offset`) instead of decoding silently.
//!
//! # Decoding untrusted bytes
//!
//! Every count and string length is checked against the bytes left before anything is allocated or read; a string
//! must end in its NUL and be valid UTF-8; a message nested more than 256 levels of recursive structs deep (the Rust
//! decoder's limit; the count restarts below a struct outside every cycle, which Rust's does not), or deeper than
//! Python's recursion limit allows from the caller's stack, is a `DecodeError`, not a `RecursionError`. An array of
//! a zero-size struct (which takes no bytes), and each outer level of rows of a multi-dimensional array (a row of
//! length 0 takes no bytes either), may have at most 65,536 items more than the bytes left, so a hostile count cannot
//! make millions of objects.
//!
//! # Two representations
//!
//! By default the values are lcm-gen's, so that the classes are a drop-in for lcm-gen's: a new object holds lists
//! (fixed arrays of zeros nested as lcm-gen nests them, variable arrays empty; a fixed byte array `bytes(n)`, where
//! lcm-gen writes `b""`, which encodes to a short message), and a decoded one lists outside and in an array's
//! innermost dimension a tuple of numbers, a list of bools or `bytes`. The module imports only `struct` and the
//! runtime. `--python-numpy` ([`crate::Options::python_numpy`]) writes the numpy representation below instead;
//! each class says which it has (`_nerve_numpy`), for the native accelerator.
//!
//! # Speed
//!
//! The code is straight-line per type: runs of fixed-size scalars and fixed 1-D arrays (small ones with numpy) are
//! one precompiled `struct.Struct` `unpack_from` / `pack`, decoding walks the bytes with an offset (no `BytesIO`),
//! objects are made with `object.__new__` and slot assignment. With numpy, numeric arrays are one `np.frombuffer`
//! view (big-endian, read-only, no copy) and encode with one `tobytes`, and a one-dimensional array of a fixed-size
//! struct decodes lazily into a `nerve_lcm.StructArray` (see the runtime's docstring for these choices); by default
//! an array is one `struct.unpack_from` per innermost run.
//!
//! # Small fixed arrays are tuples (numpy mode)
//!
//! A numeric or boolean array with one constant dimension of at most `SMALL_ARRAY` (16) elements, such as
//! `float position[2]` or `double orientation[4]`, is a `tuple` of Python numbers: decoded as a slice of its run's
//! `unpack_from`, `(0.0, 0.0)` in `__init__`, and encoded with `pack(*x)` from a tuple, a list or a numpy array
//! (which goes through `tolist()`; anything `pack` refuses goes through the checked numpy conversion, as for other
//! arrays). Two reasons: LCM's generated Python gives exactly this tuple (`struct.unpack`), so code written against
//! it keeps working; and making a numpy array costs several times as much as a small tuple, which dominated the
//! decoding of messages with many small vectors (`path_t`'s waypoints). Every other numeric array (variable size,
//! longer, or multi-dimensional) stays a numpy array, and a 1-D byte array stays `bytes`. The runtime's
//! `TUPLE_MAX` holds the same number for the native accelerator.
//!
//! # The native accelerator
//!
//! Each struct module ends with `_rt.accelerate(cls, "pkg.name", (member classes...))`. When the optional
//! extension `nerve._native` (the `nerve` package, `bindings/python`, PyO3; `scripts/setup` installs it) imports, that
//! call replaces the class's `decode` / `encode` with a native codec that interprets a plan compiled from
//! `__slots__`, `__typenames__`, `__dimensions__` and those classes, giving the same representation as the code
//! above. It is a fast path only: any input it does not handle exactly, and any malformed message, goes to the
//! pure-Python codec (kept as `_nerve_py_decode` / `_nerve_py_encode`), so results and errors are identical with or
//! without it (`NERVE_LCM_PURE=1` turns it off).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use nerve_types::{ConstValue, Dim, Member, MemberType, Primitive, Schema, Span, Struct, TypeName};

use crate::plan;
use crate::writer::CodeWriter;
use crate::{recursive_types, GenError, GeneratedFile, Input, Options};

/// The runtime module that generated Python imports (`import nerve_lcm`).
pub const RUNTIME_MODULE: &str = include_str!("../runtime/python/nerve_lcm.py");

/// The file name of [`RUNTIME_MODULE`], written at the root of the output directory.
pub const RUNTIME_MODULE_NAME: &str = "nerve_lcm.py";

const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];

/// Class attributes every generated class has: a member or const with one of these names would clash.
const RESERVED_MEMBERS: &[&str] = &[
    "encode",
    "decode",
    "get_hash",
    "_encode_one",
    "_decode_one",
    "_get_hash_recursive",
    "_get_packed_fingerprint",
    "_packed_fingerprint",
];

/// A fixed-size one-dimensional numeric or boolean array of at most this many elements (`float position[2]`,
/// `double orientation[4]`) is a tuple of Python numbers, as in LCM's Python, and is unpacked and packed with the
/// scalars around it (one `struct` call for the run). Must equal the runtime's `TUPLE_MAX`, which the native
/// accelerator reads (a unit test below checks it).
const SMALL_ARRAY: usize = 16;

/// An array of zero-size elements may exceed the bytes left by this many elements.
const ZERO_SIZE_SLACK: usize = 65536;

/// How many levels of recursive structs a decoder enters: nerve-codec's `MAX_DEPTH`, the Rust decoder's limit (a
/// test holds the two equal; nerve-codec is only a dev-dependency of this crate).
const MAX_DEPTH: u32 = 256;

/// Generates one module per input struct and enum, `__init__.py` files, and `nerve_lcm.py`.
pub fn generate(input: &Input<'_>, opts: &Options) -> Result<Vec<GeneratedFile>, GenError> {
    let schema = &input.checked.schema;
    let prefix: Vec<String> = opts.package_prefix.split('.').filter(|s| !s.is_empty()).map(str::to_owned).collect();
    for p in &prefix {
        check_ident(p, &Span::default(), "package prefix component")?;
    }
    let mut files = Vec::new();
    // package path (python) -> class names, in declaration order
    let mut packages: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    let recursive = recursive_types(schema);
    for st in input.structs() {
        check_struct(st)?;
        let g = Gen { schema, input, prefix: &prefix, numpy: opts.python_numpy, recursive: &recursive };
        let pkg = g.py_package(&st.name);
        files.push(GeneratedFile { path: module_path(&pkg, &st.name.name), contents: g.struct_module(st) });
        register(&mut packages, pkg, &st.name.name);
    }
    for en in input.enums() {
        check_type_name(&en.name, &en.span)?;
        for v in &en.values {
            check_ident(&v.name, &en.span, "enum value")?;
            if v.name == "value" || RESERVED_MEMBERS.contains(&v.name.as_str()) || v.name.starts_with("_nerve") {
                return Err(err(&en.span, format!("enum value name '{}' clashes with the generated class", v.name)));
            }
        }
        let g = Gen { schema, input, prefix: &prefix, numpy: opts.python_numpy, recursive: &recursive };
        let pkg = g.py_package(&en.name);
        files.push(GeneratedFile { path: module_path(&pkg, &en.name.name), contents: enum_module(en) });
        register(&mut packages, pkg, &en.name.name);
    }
    if opts.python_init {
        for (pkg, names) in &packages {
            if pkg.is_empty() {
                continue;
            }
            let mut w = CodeWriter::new("    ");
            w.line("\"\"\"LCM package __init__.py file")
                .line("This file automatically generated by nerve gen.")
                .line("DO NOT MODIFY BY HAND!!!!")
                .line("\"\"\"")
                .blank();
            for n in names {
                w.line(format!("from .{n} import {n} as {n}"));
            }
            let mut path: PathBuf = pkg.iter().collect();
            path.push("__init__.py");
            files.push(GeneratedFile { path, contents: w.finish() });
        }
    }
    files.push(GeneratedFile { path: RUNTIME_MODULE_NAME.into(), contents: RUNTIME_MODULE.to_owned() });
    Ok(files)
}

fn register(packages: &mut BTreeMap<Vec<String>, Vec<String>>, pkg: Vec<String>, name: &str) {
    for i in 0..pkg.len() {
        packages.entry(pkg[..i].to_vec()).or_default();
    }
    packages.entry(pkg).or_default().push(name.to_owned());
}

fn module_path(pkg: &[String], name: &str) -> PathBuf {
    let mut p: PathBuf = pkg.iter().collect();
    p.push(format!("{name}.py"));
    p
}

fn err(span: &Span, message: String) -> GenError {
    GenError { span: span.clone(), language: "python", message }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c == '_' || c.is_alphabetic() => chars.all(|c| c == '_' || c.is_alphanumeric()),
        _ => false,
    }
}

fn check_ident(name: &str, span: &Span, what: &str) -> Result<(), GenError> {
    if !is_ident(name) {
        return Err(err(span, format!("{what} '{name}' is not a Python identifier")));
    }
    if PY_KEYWORDS.contains(&name) {
        return Err(err(span, format!("{what} '{name}' is a Python keyword")));
    }
    Ok(())
}

fn check_type_name(name: &TypeName, span: &Span) -> Result<(), GenError> {
    for p in name.package_path() {
        check_ident(p, span, "package name component")?;
    }
    check_ident(&name.name, span, "type name")?;
    if name.name.starts_with("_nv") {
        return Err(err(span, format!("type name '{}' clashes with generated names (_nv...)", name.name)));
    }
    if name.package.is_empty() && name.name == "nerve_lcm" {
        return Err(err(span, "type name 'nerve_lcm' clashes with the runtime module".into()));
    }
    Ok(())
}

fn check_member_name(name: &str, span: &Span, what: &str) -> Result<(), GenError> {
    check_ident(name, span, what)?;
    if RESERVED_MEMBERS.contains(&name)
        || name.starts_with("_nerve")
        || (name.starts_with("__") && name.ends_with("__"))
    {
        return Err(err(span, format!("{what} '{name}' clashes with a method or attribute of the generated class")));
    }
    Ok(())
}

fn check_struct(st: &Struct) -> Result<(), GenError> {
    check_type_name(&st.name, &st.span)?;
    for m in &st.members {
        check_member_name(&m.name, &m.span, "member name")?;
    }
    for c in &st.consts {
        check_member_name(&c.name, &c.span, "const name")?;
    }
    Ok(())
}

/// Python string literal (double-quoted, escaped).
fn py_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn py_bytes(b: &[u8]) -> String {
    let mut out = String::from("b\"");
    for x in b {
        let _ = write!(out, "\\x{x:02x}");
    }
    out.push('"');
    out
}

/// A docstring body safe inside `"""..."""`.
fn doc_text(s: &str) -> String {
    s.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"")
}

/// The Python literal for a constant: the text as written when Python reads it the same way (lcm-gen copies the
/// text verbatim, which breaks for octal), else the value.
fn const_literal(ty: Primitive, text: &str, value: ConstValue) -> String {
    let t = text.trim();
    let body = t.strip_prefix('-').unwrap_or(t);
    let is_int = |b: &str| {
        (b == "0" || (b.starts_with(|c: char| ('1'..='9').contains(&c)) && b.chars().all(|c| c.is_ascii_digit())))
            || ((b.starts_with("0x") || b.starts_with("0X"))
                && b.len() > 2
                && b[2..].chars().all(|c| c.is_ascii_hexdigit()))
    };
    let is_float = |b: &str| {
        let (mant, exp) = match b.find(['e', 'E']) {
            Some(i) => (&b[..i], Some(&b[i + 1..])),
            None => (b, None),
        };
        let exp_ok = exp.is_none_or(|e| {
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            !e.is_empty() && e.chars().all(|c| c.is_ascii_digit())
        });
        let (ip, fp) = match mant.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (mant, None),
        };
        let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
        let mant_ok = match fp {
            Some(f) => digits(ip) && digits(f) && !(ip.is_empty() && f.is_empty()),
            None => !ip.is_empty() && digits(ip) && exp.is_some(),
        };
        exp_ok && mant_ok
    };
    match (ty, value) {
        (_, ConstValue::Int(v)) => {
            if is_int(body) {
                t.to_owned()
            } else {
                v.to_string()
            }
        }
        (_, ConstValue::Float(v)) => {
            if is_int(body) || is_float(body) {
                t.to_owned()
            } else if v.is_nan() {
                "float(\"nan\")".to_owned()
            } else if v.is_infinite() {
                if v > 0.0 {
                    "float(\"inf\")".to_owned()
                } else {
                    "float(\"-inf\")".to_owned()
                }
            } else {
                format!("{v:?}")
            }
        }
    }
}

/// `struct` format character and numpy dtype (wire byte order) of a primitive other than string.
fn prim_codes(p: Primitive) -> (char, &'static str) {
    match p {
        Primitive::Int8 => ('b', "i1"),
        Primitive::Int16 => ('h', ">i2"),
        Primitive::Int32 => ('i', ">i4"),
        Primitive::Int64 => ('q', ">i8"),
        Primitive::Float => ('f', ">f4"),
        Primitive::Double => ('d', ">f8"),
        Primitive::Boolean => ('?', "u1"),
        Primitive::Byte => ('B', "u1"),
        Primitive::String => unreachable!("strings have no fixed code"),
    }
}

/// The native numpy dtype used for default (zero) arrays.
fn native_dtype(p: Primitive) -> &'static str {
    match p {
        Primitive::Int8 => "_np.int8",
        Primitive::Int16 => "_np.int16",
        Primitive::Int32 => "_np.int32",
        Primitive::Int64 => "_np.int64",
        Primitive::Float => "_np.float32",
        Primitive::Double => "_np.float64",
        Primitive::Boolean => "_np.bool_",
        Primitive::Byte => "_np.uint8",
        Primitive::String => unreachable!(),
    }
}

fn dtype_var(p: Primitive) -> &'static str {
    match p {
        Primitive::Int8 => "_nv_i1",
        Primitive::Int16 => "_nv_i2",
        Primitive::Int32 => "_nv_i4",
        Primitive::Int64 => "_nv_i8",
        Primitive::Float => "_nv_f4",
        Primitive::Double => "_nv_f8",
        Primitive::Boolean | Primitive::Byte => "_nv_u1",
        Primitive::String => unreachable!(),
    }
}

struct Gen<'a> {
    schema: &'a Schema,
    input: &'a Input<'a>,
    prefix: &'a [String],
    /// `--python-numpy`: numpy arrays, tuples for small fixed arrays and `StructArray`s (see the module docs);
    /// otherwise lcm-gen's lists, tuples and bytes.
    numpy: bool,
    /// The structs that reach themselves through their members: their decoders count the nesting depth.
    recursive: &'a HashSet<TypeName>,
}

/// Per-module state: precompiled Structs and imported classes.
#[derive(Default)]
struct Module {
    structs: Vec<String>,
    imports: Vec<TypeName>,
}

impl Module {
    fn fmt(&mut self, f: &str) -> String {
        let i = match self.structs.iter().position(|s| s == f) {
            Some(i) => i,
            None => {
                self.structs.push(f.to_owned());
                self.structs.len() - 1
            }
        };
        format!("_nv_S{i}")
    }

    fn class(&mut self, name: &TypeName) -> String {
        let i = match self.imports.iter().position(|s| s == name) {
            Some(i) => i,
            None => {
                self.imports.push(name.clone());
                self.imports.len() - 1
            }
        };
        format!("_nv_t{i}")
    }
}

/// What a member is, from the generator's point of view.
enum Kind {
    /// A scalar primitive other than string.
    Scalar(Primitive),
    String,
    /// A struct or enum scalar.
    Nested,
    /// A small fixed-size 1-D array of a number or boolean (at most [`SMALL_ARRAY`] elements): a tuple.
    Tuple(Primitive, usize),
    /// Any other array of a primitive other than string (a numpy array, or bytes).
    PrimArray(Primitive),
    /// An array of strings, structs or enums (nested lists, or a StructArray).
    ObjArray,
}

impl Gen<'_> {
    fn kind(&self, m: &Member) -> Kind {
        match (&m.ty, m.dims.is_empty()) {
            (MemberType::Primitive(Primitive::String), true) => Kind::String,
            (MemberType::Primitive(p), true) => Kind::Scalar(*p),
            (_, true) => Kind::Nested,
            (MemberType::Primitive(Primitive::String), false) => Kind::ObjArray,
            (MemberType::Primitive(p), false) => match self.run_len(m) {
                Some(n) => Kind::Tuple(*p, n),
                None => Kind::PrimArray(*p),
            },
            (_, false) => Kind::ObjArray,
        }
    }

    /// The length of an array member that is read and written with the scalars around it (one `struct` call for
    /// the run): with numpy, the small tuples of [`tuple_len`]; otherwise every 1-D fixed number or boolean
    /// array (lcm-gen's `struct.unpack` tuple, or a list of bools).
    fn run_len(&self, m: &Member) -> Option<usize> {
        if self.numpy {
            return tuple_len(m);
        }
        match (&m.ty, &m.dims[..]) {
            (MemberType::Primitive(p), [Dim::Fixed { len, .. }])
                if !matches!(p, Primitive::String | Primitive::Byte) =>
            {
                Some(*len)
            }
            _ => None,
        }
    }
}

/// The length of a member that is a tuple (see [`SMALL_ARRAY`]): a number or boolean array with one fixed
/// dimension of at most `SMALL_ARRAY` elements. Byte arrays are `bytes` whatever their size.
fn tuple_len(m: &Member) -> Option<usize> {
    match (&m.ty, &m.dims[..]) {
        (MemberType::Primitive(p), [Dim::Fixed { len, .. }])
            if !matches!(p, Primitive::String | Primitive::Byte) && *len <= SMALL_ARRAY =>
        {
            Some(*len)
        }
        _ => None,
    }
}

impl<'a> Gen<'a> {
    /// The depth argument of a call from `st`'s decoder into a member of type `ty`: one level more from a recursive
    /// struct into a recursive struct (as nerve-codec's `Reader::enter` counts); none otherwise (a struct outside
    /// every cycle occurs once on a path, so the count it does not carry stays bounded).
    fn nested_depth_arg(&self, st: &Struct, ty: &MemberType) -> &'static str {
        match ty {
            MemberType::Struct(n) if self.recursive.contains(&st.name) && self.recursive.contains(n) => ", depth + 1",
            _ => "",
        }
    }

    fn py_package(&self, name: &TypeName) -> Vec<String> {
        let mut v: Vec<String> = self.prefix.to_vec();
        v.extend(name.package_path().iter().map(|s| (*s).to_owned()));
        v
    }

    fn py_module(&self, name: &TypeName) -> String {
        let mut v = self.py_package(name);
        v.push(name.name.clone());
        v.join(".")
    }

    /// Whether arrays of this struct can be one numpy structured array: fixed size > 0, only non-string primitives
    /// and such structs inside.
    fn records_ok(&self, name: &TypeName) -> bool {
        self.numpy
            && self.records_ok_inner(name, &mut Vec::new())
            && self.input.layout.fixed_size(name).is_some_and(|s| s > 0)
    }

    fn records_ok_inner(&self, name: &TypeName, path: &mut Vec<TypeName>) -> bool {
        if path.contains(name) {
            return false;
        }
        let Some(st) = self.schema.struct_named(name) else {
            return false;
        };
        path.push(name.clone());
        let ok = st.members.iter().all(|m| {
            m.all_dims_fixed()
                && match &m.ty {
                    MemberType::Primitive(p) => *p != Primitive::String,
                    MemberType::Struct(n) => self.records_ok_inner(n, path),
                    MemberType::Enum(_) => false,
                }
        });
        path.pop();
        ok
    }

    /// The numpy structured dtype description (a Python list literal) of a records-ok struct.
    fn dtype_desc(&self, name: &TypeName) -> String {
        let st = self.schema.struct_named(name).expect("records_ok checked it");
        let fields: Vec<String> = st
            .members
            .iter()
            .map(|m| {
                let base = match &m.ty {
                    MemberType::Primitive(p) => py_str(prim_codes(*p).1),
                    MemberType::Struct(n) => self.dtype_desc(n),
                    MemberType::Enum(_) => unreachable!(),
                };
                let shape: Vec<String> = m.dims.iter().map(|d| fixed_len(d).to_string()).collect();
                if shape.is_empty() {
                    format!("({}, {base})", py_str(&m.name))
                } else {
                    format!("({}, {base}, ({},))", py_str(&m.name), shape.join(", "))
                }
            })
            .collect();
        format!("[{}]", fields.join(", "))
    }

    fn min_elem(&self, ty: &MemberType) -> usize {
        plan::Elem::of(&self.input.layout, ty).min()
    }

    fn struct_module(&self, st: &Struct) -> String {
        let mut md = Module::default();
        let cls = st.name.name.as_str();
        let full = st.name.full();
        let mut body = CodeWriter::new("    ");

        // --- class header
        body.line(format!("class {cls}(object):"));
        body.indent();
        if let Some(doc) = &st.doc {
            body.line("\"\"\"");
            body.lines(doc_text(doc));
            body.line("\"\"\"");
        }
        body.blank();
        let names: Vec<String> = st.members.iter().map(|m| py_str(&m.name)).collect();
        body.line(format!("__slots__ = [{}]", names.join(", ")));
        body.blank();
        let typenames: Vec<String> = st
            .members
            .iter()
            .map(|m| match &m.ty {
                MemberType::Primitive(p) => py_str(p.lcm_name()),
                MemberType::Struct(n) | MemberType::Enum(n) => py_str(&n.full()),
            })
            .collect();
        body.line(format!("__typenames__ = [{}]", typenames.join(", ")));
        body.blank();
        let dims: Vec<String> = st
            .members
            .iter()
            .map(|m| {
                if m.dims.is_empty() {
                    "None".to_owned()
                } else {
                    let d: Vec<String> = m
                        .dims
                        .iter()
                        .map(|d| match d {
                            Dim::Fixed { len, .. } => len.to_string(),
                            Dim::Variable { member } => py_str(member),
                        })
                        .collect();
                    format!("[{}]", d.join(", "))
                }
            })
            .collect();
        body.line(format!("__dimensions__ = [{}]", dims.join(", ")));
        body.blank();
        for c in &st.consts {
            body.doc("# ", c.doc.as_deref());
            body.line(format!("{} = {}", c.name, const_literal(c.ty, &c.text, c.value)));
        }
        if !st.consts.is_empty() {
            body.blank();
        }
        body.line(format!("_packed_fingerprint = {}", py_bytes(&st.fingerprint.to_be_bytes())));
        let fixed = self.input.layout.fixed_size(&st.name);
        body.line(format!("_nerve_size = {}", fixed.map_or("None".to_owned(), |s| s.to_string())));
        let records = self.records_ok(&st.name);
        if records {
            body.line(format!("_nerve_dtype = _np.dtype({})", self.dtype_desc(&st.name)));
        } else {
            body.line("_nerve_dtype = None");
        }
        body.line(format!("_nerve_numpy = {}", if self.numpy { "True" } else { "False" }));
        body.blank();

        // --- __init__
        body.line("def __init__(self, **members):");
        body.indent();
        for m in &st.members {
            body.doc("# ", m.doc.as_deref());
            let v = self.default_value(m, &mut md);
            body.line(format!("self.{} = {v}", m.name));
        }
        body.block("if members:", "", |w| {
            w.block("for k, v in members.items():", "", |w| {
                w.line("setattr(self, k, v)");
            });
        });
        body.dedent();

        // --- encode
        body.line("def encode(self):");
        body.indent();
        body.line(format!("parts = [{cls}._packed_fingerprint]"));
        body.line("try:");
        body.indent().line("self._nerve_enc(parts.append)").dedent();
        body.line("except _rt.EncodeError:");
        body.indent().line("raise").dedent();
        body.line("except _struct.error as e:");
        body.indent()
            .line(format!("raise _rt.EncodeError({}+ str(e)) from None", py_str(&format!("{full}: "))))
            .dedent();
        body.line("return b\"\".join(parts)");
        body.dedent().blank();

        body.line("def _encode_one(self, buf):");
        body.indent();
        body.line("parts = []");
        body.line("self._nerve_enc(parts.append)");
        body.line("buf.write(b\"\".join(parts))");
        body.dedent().blank();

        body.line("def _nerve_enc(self, ap):");
        body.indent();
        self.emit_encode(st, &mut body, &mut md);
        body.dedent().blank();

        // --- decode
        body.line("@staticmethod");
        body.line("def decode(data):");
        body.indent();
        body.line("if data.__class__ is not bytes:");
        body.indent().line("data = _rt.as_bytes(data)").dedent();
        body.line(format!("if data[:8] != {cls}._packed_fingerprint:"));
        body.indent()
            .line(format!("raise _rt.bad_fingerprint(data, 0x{:016x}, {})", st.fingerprint, py_str(&full)))
            .dedent();
        body.line("try:");
        body.indent().line(format!("return {cls}._nerve_dec(data, 8)[0]")).dedent();
        body.line("except RecursionError:");
        body.indent().line(format!("raise _rt.too_deep({}) from None", py_str(&full))).dedent();
        body.dedent().blank();

        body.line("@staticmethod");
        body.line("def _decode_one(buf):");
        body.indent().line(format!("return _rt.decode_one({cls}, buf)")).dedent().blank();

        body.line("@staticmethod");
        if self.recursive.contains(&st.name) {
            // The Rust decoder's limit, counted the same way (levels of recursive types), so that the outcome for
            // given bytes does not depend on how deep the caller's stack already is (as Python's recursion limit
            // would make it): the native codec hands what nests deeper than its own limit to this code.
            body.line("def _nerve_dec(data, off, depth=0):");
            body.indent();
            body.line(format!("if depth >= {MAX_DEPTH}:"));
            body.indent().line(format!("raise _rt.too_deep({})", py_str(&full))).dedent();
        } else {
            body.line("def _nerve_dec(data, off):");
            body.indent();
        }
        self.emit_decode(st, &mut body, &mut md);
        body.dedent().blank();

        if records {
            self.emit_from_records(st, &mut body, &mut md);
        }

        // --- hashes
        body.line("@staticmethod");
        body.line("def _get_hash_recursive(parents):");
        body.indent();
        body.line(format!("if {cls} in parents: return 0"));
        let nested: Vec<String> = st
            .members
            .iter()
            .filter_map(|m| match &m.ty {
                MemberType::Struct(n) | MemberType::Enum(n) => {
                    Some(format!(" + {}._get_hash_recursive(newparents)", md.class(n)))
                }
                MemberType::Primitive(_) => None,
            })
            .collect();
        if !nested.is_empty() {
            body.line(format!("newparents = parents + [{cls}]"));
        }
        body.line(format!("tmphash = (0x{:016x}{}) & 0xffffffffffffffff", st.base_hash, nested.join("")));
        body.line("tmphash = (((tmphash << 1) & 0xffffffffffffffff) + (tmphash >> 63)) & 0xffffffffffffffff");
        body.line("return tmphash");
        body.dedent().blank();
        body.line("@staticmethod");
        body.line("def _get_packed_fingerprint():");
        body.indent().line(format!("return {cls}._packed_fingerprint")).dedent().blank();
        body.line("def get_hash(self):");
        body.indent()
            .line("\"\"\"The LCM fingerprint of the type.\"\"\"")
            .line(format!("return 0x{:016x}", st.fingerprint));
        body.dedent();
        body.dedent();

        // --- assemble the module
        let mut w = CodeWriter::new("    ");
        w.line("\"\"\"LCM type definitions");
        w.line("This file automatically generated by nerve gen.");
        w.line("DO NOT MODIFY BY HAND!!!!");
        w.line("\"\"\"").blank();
        w.line("import struct as _struct").blank();
        if self.numpy {
            w.line("import numpy as _np").blank();
        }
        w.line("import nerve_lcm as _rt").blank();
        w.line("_nv_new = object.__new__");
        w.line("_nv_unpack_I = _rt.unpack_I");
        w.line("_nv_pack_I = _rt.pack_I");
        w.line("_nv_unpack_from = _struct.unpack_from");
        let numpy_names: &[(&str, &str)] = if self.numpy {
            w.line("_nv_frombuffer = _np.frombuffer");
            w.line("_nv_ndarray = _np.ndarray");
            &[
                ("_nv_i1", "i1"),
                ("_nv_i2", ">i2"),
                ("_nv_i4", ">i4"),
                ("_nv_i8", ">i8"),
                ("_nv_f4", ">f4"),
                ("_nv_f8", ">f8"),
                ("_nv_u1", "u1"),
            ]
        } else {
            &[]
        };
        for &(v, d) in numpy_names {
            w.line(format!("{v} = _np.dtype({})", py_str(d)));
        }
        for (i, f) in md.structs.iter().enumerate() {
            w.line(format!("_nv_S{i} = _struct.Struct({})", py_str(f)));
        }
        w.blank().blank();
        let text = body.finish();
        let mut out = w.finish();
        out.push_str(&text);
        out.push('\n');
        // per member: the class of a struct or enum member, None for primitives (for `_rt.accelerate`)
        let member_classes: Vec<String> = st
            .members
            .iter()
            .map(|m| match &m.ty {
                MemberType::Primitive(_) => "None".to_owned(),
                t => md.class(type_name(t)),
            })
            .collect();
        let mut tail = CodeWriter::new("    ");
        tail.line("# Classes this one uses (imported last, so that types that use each other can load).");
        for (i, n) in md.imports.iter().enumerate() {
            if n == &st.name {
                tail.line(format!("_nv_t{i} = {cls}"));
            } else {
                tail.line(format!("from {} import {} as _nv_t{i}", self.py_module(n), n.name));
            }
        }
        tail.blank();
        tail.line("# The pure-Python codec above is kept; the native accelerator, when installed, takes over.");
        tail.line(format!(
            "_rt.accelerate({cls}, {}, ({}{}))",
            py_str(&full),
            member_classes.join(", "),
            if member_classes.len() == 1 { "," } else { "" }
        ));
        out.push_str(&tail.finish());
        out
    }

    fn default_value(&self, m: &Member, md: &mut Module) -> String {
        match self.kind(m) {
            Kind::Scalar(p) => match p {
                Primitive::Float | Primitive::Double => "0.0".into(),
                Primitive::Boolean => "False".into(),
                _ => "0".into(),
            },
            Kind::String => "\"\"".into(),
            Kind::Nested => format!("{}()", md.class(type_name(&m.ty))),
            Kind::Tuple(p, n) => {
                let zero = zero_literal(p);
                match n {
                    _ if !self.numpy => format!("[{zero}] * {n}"),
                    0 => "()".into(),
                    1 => format!("({zero},)"),
                    _ => format!("({})", vec![zero; n].join(", ")),
                }
            }
            Kind::PrimArray(p) if !self.numpy => {
                // lcm-gen's nesting: lists outside, the innermost dimension a list of zeros or (byte) bytes; a
                // fixed byte array holds zero bytes rather than lcm-gen's b"", so a fresh message encodes
                let (inner, outer) = m.dims.split_last().expect("an array");
                let elem = match (p, inner) {
                    (Primitive::Byte, Dim::Fixed { len, .. }) => format!("bytes({len})"),
                    (Primitive::Byte, Dim::Variable { .. }) => "b\"\"".to_owned(),
                    (_, Dim::Variable { .. }) => "[]".to_owned(),
                    (_, Dim::Fixed { len, .. }) => format!("[{}] * {len}", zero_literal(p)),
                };
                nested_default(outer, 0, &elem)
            }
            Kind::PrimArray(p) => {
                let shape: Vec<String> =
                    m.dims.iter().map(|d| if d.is_fixed() { fixed_len(d).to_string() } else { "0".into() }).collect();
                if p == Primitive::Byte && m.dims.len() == 1 {
                    format!("bytes({})", shape[0])
                } else {
                    format!("_np.zeros(({},), {})", shape.join(", "), native_dtype(p))
                }
            }
            Kind::ObjArray => {
                let elem = match &m.ty {
                    MemberType::Primitive(_) => "\"\"".to_owned(),
                    t => format!("{}()", md.class(type_name(t))),
                };
                nested_default(&m.dims, 0, &elem)
            }
        }
    }

    /// The Python expression for dimension `d` of member `m` on object `obj`.
    fn dim_expr(d: &Dim, obj: &str) -> String {
        match d {
            Dim::Fixed { len, .. } => len.to_string(),
            Dim::Variable { member } => format!("{obj}.{member}"),
        }
    }

    /// The slow, checked encoding of one primitive array member (numpy conversion, shape check).
    fn prim_array_line(&self, m: &Member, p: Primitive, what: &str) -> String {
        let shape: Vec<String> = m.dims.iter().map(|d| Self::dim_expr(d, "self")).collect();
        let shape = format!("({},)", shape.join(", "));
        if !self.numpy {
            // nested sequences (lists, tuples, bytes, numpy arrays too) packed with `struct`, checked
            let code = if p == Primitive::Boolean { '?' } else { prim_codes(p).0 };
            return format!("ap(_rt.pack_array(self.{}, \"{code}\", {shape}, {what}))", m.name);
        }
        match p {
            Primitive::Byte => {
                format!("ap(_rt.byte_array_bytes(self.{}, {shape}, {what}))", m.name)
            }
            Primitive::Boolean => {
                format!("ap(_rt.bool_array_bytes(self.{}, {shape}, {what}))", m.name)
            }
            _ => format!("ap(_rt.array_bytes(self.{}, {}, {shape}, {what}))", m.name, dtype_var(p)),
        }
    }

    fn emit_encode(&self, st: &Struct, w: &mut CodeWriter, md: &mut Module) {
        let full = st.name.full();
        let numpy = self.numpy;
        // A run: scalars, and small 1-D fixed arrays packed with `*` (one `pack` for all; if that fails, e.g. for
        // a list longer than the array, each member again through the checked path).
        let mut run: Vec<(&Member, Primitive, Option<usize>)> = Vec::new();
        let mut any = false;
        let flush = |run: &mut Vec<(&Member, Primitive, Option<usize>)>, w: &mut CodeWriter, md: &mut Module| {
            if run.is_empty() {
                return;
            }
            let mut fmt = String::from(">");
            for (_, p, len) in run.iter() {
                if let Some(n) = len {
                    let _ = write!(fmt, "{n}");
                }
                fmt.push(prim_codes(*p).0);
            }
            let s = md.fmt(&fmt);
            // numpy arrays go through tolist(): unpacking a list is several times faster than an array
            let mut args = Vec::new();
            for (i, (m, _, len)) in run.iter().enumerate() {
                if len.is_some() {
                    w.line(format!("x{i} = self.{}", m.name));
                    if numpy {
                        w.line(format!("if x{i}.__class__ is _nv_ndarray:"));
                        w.indent().line(format!("x{i} = x{i}.tolist()")).dedent();
                    }
                    args.push(format!("*x{i}"));
                } else {
                    args.push(format!("self.{}", m.name));
                }
            }
            let fast = format!("ap({s}.pack({}))", args.join(", "));
            if run.iter().all(|(_, _, len)| len.is_none()) {
                w.line(fast);
            } else {
                w.line("try:");
                w.indent().line(fast).dedent();
                w.line("except (_struct.error, TypeError):");
                w.indent();
                for (m, p, len) in run.iter() {
                    let what = py_str(&format!("{full}.{}", m.name));
                    if len.is_some() {
                        w.line(self.prim_array_line(m, *p, &what));
                    } else {
                        let s = md.fmt(&format!(">{}", prim_codes(*p).0));
                        w.line(format!("ap({s}.pack(self.{}))", m.name));
                    }
                }
                w.dedent();
            }
            run.clear();
        };
        for m in &st.members {
            any = true;
            let what = py_str(&format!("{full}.{}", m.name));
            match self.kind(m) {
                Kind::Scalar(p) => run.push((m, p, None)),
                Kind::String => {
                    flush(&mut run, w, md);
                    w.line(format!("e = self.{}.encode(\"utf-8\")", m.name));
                    w.line("ap(_nv_pack_I(len(e) + 1))");
                    w.line("ap(e)");
                    w.line("ap(b\"\\0\")");
                }
                Kind::Nested => {
                    flush(&mut run, w, md);
                    let c = md.class(type_name(&m.ty));
                    w.line(format!("v = self.{}", m.name));
                    w.line(format!("if v.__class__ is {c}:"));
                    w.indent().line("v._nerve_enc(ap)").dedent();
                    w.line("else:");
                    w.indent().line(format!("_rt.encode_other(v, {c}, ap, {what})")).dedent();
                }
                Kind::Tuple(p, n) => run.push((m, p, Some(n))),
                Kind::PrimArray(p) => {
                    flush(&mut run, w, md);
                    w.line(self.prim_array_line(m, p, &what));
                }
                Kind::ObjArray => {
                    flush(&mut run, w, md);
                    self.emit_encode_obj_array(m, w, md, &what);
                }
            }
        }
        flush(&mut run, w, md);
        if !any {
            w.line("pass");
        }
    }

    fn emit_encode_obj_array(&self, m: &Member, w: &mut CodeWriter, md: &mut Module, what: &str) {
        let n = m.dims.len();
        for (i, d) in m.dims.iter().enumerate() {
            w.line(format!("c{i} = {}", Self::dim_expr(d, "self")));
        }
        w.line(format!("a0 = self.{}", m.name));
        let is_struct = matches!(m.ty, MemberType::Struct(_));
        for i in 0..n {
            let last = i + 1 == n;
            if last && is_struct {
                let c = md.class(type_name(&m.ty));
                w.line(format!("_rt.encode_struct_list(a{i}, c{i}, {c}, ap, {what})"));
                break;
            }
            w.line(format!("_rt.check_len(a{i}, c{i}, {what})"));
            w.line(format!("for i{i} in range(c{i}):"));
            w.indent();
            if !last {
                w.line(format!("a{} = a{i}[i{i}]", i + 1));
            } else {
                w.line(format!("v = a{i}[i{i}]"));
                match &m.ty {
                    MemberType::Primitive(_) => {
                        w.line("e = v.encode(\"utf-8\")");
                        w.line("ap(_nv_pack_I(len(e) + 1))");
                        w.line("ap(e)");
                        w.line("ap(b\"\\0\")");
                    }
                    t => {
                        let c = md.class(type_name(t));
                        w.line(format!("if v.__class__ is {c}:"));
                        w.indent().line("v._nerve_enc(ap)").dedent();
                        w.line("else:");
                        w.indent().line(format!("_rt.encode_other(v, {c}, ap, {what})")).dedent();
                    }
                }
            }
        }
        for i in (0..n).rev() {
            let last = i + 1 == n;
            if !(last && is_struct) {
                w.dedent();
            }
        }
    }

    fn emit_decode(&self, st: &Struct, w: &mut CodeWriter, md: &mut Module) {
        let full = py_str(&st.name.full());
        // lcm-gen's decoder gives a list of bools for a boolean array (a tuple for numbers); with numpy, a tuple
        let as_list = |p: Primitive| !self.numpy && p == Primitive::Boolean;
        let cls = &st.name.name;
        w.line(format!("o = _nv_new({cls})"));
        if st.members.is_empty() {
            w.line("return o, off");
            return;
        }
        w.line("ln = len(data)");
        w.line("try:");
        w.indent();
        // A run: scalars and tuples (small fixed arrays), read with one `unpack_from`; a tuple is a slice of it.
        let mut run: Vec<(&Member, Primitive, Option<usize>)> = Vec::new();
        let flush = |run: &mut Vec<(&Member, Primitive, Option<usize>)>, w: &mut CodeWriter, md: &mut Module| {
            if run.is_empty() {
                return;
            }
            let mut fmt = String::from(">");
            let mut size = 0;
            for (_, p, len) in run.iter() {
                if let Some(n) = len {
                    let _ = write!(fmt, "{n}");
                }
                fmt.push(prim_codes(*p).0);
                size += p.wire_size().unwrap_or(0) * len.unwrap_or(1);
            }
            let s = md.fmt(&fmt);
            match &run[..] {
                [(m, p, Some(_))] if as_list(*p) => {
                    w.line(format!("o.{} = list({s}.unpack_from(data, off))", m.name));
                }
                [(m, _, Some(_))] => {
                    w.line(format!("o.{} = {s}.unpack_from(data, off)", m.name));
                }
                _ if run.iter().all(|(_, _, len)| len.is_none()) => {
                    let targets: Vec<String> = run.iter().map(|(m, _, _)| format!("o.{}", m.name)).collect();
                    w.line(format!("{}, = {s}.unpack_from(data, off)", targets.join(", ")));
                }
                _ => {
                    w.line(format!("t = {s}.unpack_from(data, off)"));
                    let mut i = 0;
                    for (m, p, len) in run.iter() {
                        match len {
                            Some(n) if as_list(*p) => {
                                w.line(format!("o.{} = list(t[{i}:{}])", m.name, i + n));
                                i += n;
                            }
                            Some(n) => {
                                w.line(format!("o.{} = t[{i}:{}]", m.name, i + n));
                                i += n;
                            }
                            None => {
                                w.line(format!("o.{} = t[{i}]", m.name));
                                i += 1;
                            }
                        }
                    }
                }
            }
            w.line(format!("off += {size}"));
            run.clear();
        };
        for m in &st.members {
            let what = py_str(&m.name);
            match self.kind(m) {
                Kind::Scalar(p) => run.push((m, p, None)),
                Kind::Tuple(p, n) => run.push((m, p, Some(n))),
                Kind::String => {
                    flush(&mut run, w, md);
                    emit_decode_string(w, &format!("o.{}", m.name), &full);
                }
                Kind::Nested => {
                    flush(&mut run, w, md);
                    let c = md.class(type_name(&m.ty));
                    let depth = self.nested_depth_arg(st, &m.ty);
                    w.line(format!("o.{}, off = {c}._nerve_dec(data, off{depth})", m.name));
                }
                Kind::PrimArray(p) => {
                    flush(&mut run, w, md);
                    self.emit_counts(m, w, &full, &what);
                    let fixed: usize = m.dims.iter().filter(|d| d.is_fixed()).map(fixed_len).product();
                    let size = p.wire_size().unwrap_or(1) * fixed;
                    let count = count_expr(m, fixed);
                    let var = m.dims.iter().any(|d| !d.is_fixed());
                    let end = if var {
                        format!("off + {count} * {}", p.wire_size().unwrap_or(1))
                    } else {
                        format!("off + {size}")
                    };
                    w.line(format!("e = {end}"));
                    w.line("if e > ln:");
                    w.indent().line(format!("raise _rt.truncated(data, off, {full})")).dedent();
                    if !self.numpy {
                        Self::emit_rows_bound(m, w, &full, &what);
                        emit_decode_prim_lists(m, p, w);
                        w.line("off = e");
                        continue;
                    }
                    let shape: Vec<String> = (0..m.dims.len()).map(|i| format!("c{i}")).collect();
                    let shape = format!("({},)", shape.join(", "));
                    let value = match p {
                        Primitive::Byte if m.dims.len() == 1 => "data[off:e]".to_owned(),
                        Primitive::Boolean if m.dims.len() == 1 => {
                            format!("_nv_frombuffer(data, _nv_u1, {count}, off) != 0")
                        }
                        Primitive::Boolean => {
                            format!("_nv_ndarray({shape}, _nv_u1, data, off) != 0")
                        }
                        _ if m.dims.len() == 1 => {
                            format!("_nv_frombuffer(data, {}, {count}, off)", dtype_var(p))
                        }
                        _ => format!("_nv_ndarray({shape}, {}, data, off)", dtype_var(p)),
                    };
                    w.line(format!("o.{} = {value}", m.name));
                    w.line("off = e");
                }
                Kind::ObjArray => {
                    flush(&mut run, w, md);
                    self.emit_decode_obj_array(m, w, md, &full, &what, self.nested_depth_arg(st, &m.ty));
                }
            }
        }
        flush(&mut run, w, md);
        w.dedent();
        w.line("except _struct.error:");
        w.indent().line(format!("raise _rt.truncated(data, off, {full}) from None")).dedent();
        w.line("except UnicodeDecodeError as ex:");
        w.indent().line(format!("raise _rt.bad_utf8(ex, off, {full}) from None")).dedent();
        w.line("return o, off");
    }

    /// Writes `c0 = ...; c1 = ...` for every dimension, checking variable ones are not negative.
    fn emit_counts(&self, m: &Member, w: &mut CodeWriter, full: &str, what: &str) {
        for (i, d) in m.dims.iter().enumerate() {
            w.line(format!("c{i} = {}", Self::dim_expr(d, "o")));
            if !d.is_fixed() {
                w.line(format!("if c{i} < 0:"));
                w.indent().line(format!("raise _rt.bad_count({what}, c{i}, off, {full})")).dedent();
            }
        }
    }

    /// Bounds the rows of a multi-dimensional array with a variable dimension: each row is a list even when it
    /// encodes to nothing (`a[size_a][size_b]` with `size_b` 0), so a count checked only against the bytes of its
    /// elements could make millions of empty lists from a few bytes. At each outer level there may be at most
    /// [`ZERO_SIZE_SLACK`] more rows than bytes left (nerve-codec's `ensure_dims` rule; the C runtime's too).
    fn emit_rows_bound(m: &Member, w: &mut CodeWriter, full: &str, what: &str) {
        let n = m.dims.len();
        if n < 2 || m.dims.iter().all(|d| d.is_fixed()) {
            return;
        }
        let prefixes: Vec<String> =
            (1..n).map(|k| (0..k).map(|i| format!("c{i}")).collect::<Vec<_>>().join(" * ")).collect();
        // One test per level, so the error names the count that is too many.
        for rows in &prefixes {
            w.line(format!("if {rows} > ln - off + {ZERO_SIZE_SLACK}:"));
            w.indent().line(format!("raise _rt.too_many({what}, {rows}, 0, data, off, {full})")).dedent();
        }
    }

    fn emit_decode_obj_array(
        &self,
        m: &Member,
        w: &mut CodeWriter,
        md: &mut Module,
        full: &str,
        what: &str,
        depth: &str,
    ) {
        self.emit_counts(m, w, full, what);
        Self::emit_rows_bound(m, w, full, what);
        let n = m.dims.len();
        let fixed: usize = m.dims.iter().filter(|d| d.is_fixed()).map(fixed_len).product();
        let count = count_expr(m, fixed);
        let var = m.dims.iter().any(|d| !d.is_fixed());
        // The fast path: a 1-D array of a fixed-size struct stays packed.
        if let (1, MemberType::Struct(sn)) = (n, &m.ty) {
            if self.records_ok(sn) {
                let size = self.input.layout.fixed_size(sn).unwrap_or(1);
                let c = md.class(sn);
                w.line(format!("e = off + c0 * {size}"));
                w.line("if e > ln:");
                w.indent().line(format!("raise _rt.too_many({what}, c0, {size}, data, off, {full})")).dedent();
                w.line(format!("o.{} = _rt.StructArray._packed({c}, data, off, c0)", m.name));
                w.line("off = e");
                return;
            }
        }
        let min = self.min_elem(&m.ty);
        if var {
            if min == 0 {
                w.line(format!("if {count} > ln - off + {ZERO_SIZE_SLACK}:"));
            } else {
                w.line(format!("if {count} * {min} > ln - off:"));
            }
            w.indent().line(format!("raise _rt.too_many({what}, {count}, {min}, data, off, {full})")).dedent();
        }
        let elem_class = match &m.ty {
            MemberType::Primitive(_) => None,
            t => Some(md.class(type_name(t))),
        };
        for i in 0..n {
            w.line(format!("a{i} = []"));
            w.line(format!("for _ in range(c{i}):"));
            w.indent();
        }
        match &elem_class {
            None => emit_decode_string(w, "v", full),
            Some(c) => {
                w.line(format!("v, off = {c}._nerve_dec(data, off{depth})"));
            }
        }
        w.line(format!("a{}.append(v)", n - 1));
        for i in (0..n).rev() {
            w.dedent();
            if i > 0 {
                w.line(format!("a{}.append(a{i})", i - 1));
            }
        }
        w.line(format!("o.{} = a0", m.name));
    }

    /// `_nerve_from_records(rec)`: every element of a structured array as an object, vectorized per field.
    fn emit_from_records(&self, st: &Struct, w: &mut CodeWriter, md: &mut Module) {
        let cls = &st.name.name;
        w.line("@staticmethod");
        w.line("def _nerve_from_records(rec):");
        w.indent();
        w.line("n = len(rec)");
        let mut cols = Vec::new();
        for (i, m) in st.members.iter().enumerate() {
            let field = format!("rec[{}]", py_str(&m.name));
            let col = match (&m.ty, m.dims.len()) {
                (MemberType::Primitive(Primitive::Boolean), 0) => {
                    format!("({field} != 0).tolist()")
                }
                (MemberType::Primitive(_), 0) => format!("{field}.tolist()"),
                (MemberType::Primitive(Primitive::Boolean), _) if tuple_len(m).is_some() => {
                    format!("list(map(tuple, ({field} != 0).tolist()))")
                }
                (MemberType::Primitive(_), _) if tuple_len(m).is_some() => {
                    format!("list(map(tuple, {field}.tolist()))")
                }
                (MemberType::Primitive(Primitive::Boolean), _) => format!("{field} != 0"),
                (MemberType::Primitive(Primitive::Byte), 1) => {
                    format!("[x.tobytes() for x in {field}]")
                }
                (MemberType::Primitive(_), _) => field,
                (t, 0) => format!("{}._nerve_from_records({field})", md.class(type_name(t))),
                (t, nd) => {
                    let c = md.class(type_name(t));
                    let dims: Vec<String> = m.dims.iter().map(|d| fixed_len(d).to_string()).collect();
                    let flat = format!("{c}._nerve_from_records({field}.reshape(-1))");
                    if nd == 1 {
                        format!("[_rt.StructArray({c}, g) for g in _rt.nest({flat}, [n, {}])]", dims.join(", "))
                    } else {
                        format!("_rt.nest({flat}, [n, {}])", dims.join(", "))
                    }
                }
            };
            w.line(format!("f{i} = {col}"));
            cols.push(format!("f{i}"));
        }
        w.line("out = []");
        w.line("ap = out.append");
        let vars: Vec<String> = (0..st.members.len()).map(|i| format!("v{i}")).collect();
        if st.members.len() == 1 {
            w.line(format!("for v0 in {}:", cols[0]));
        } else {
            w.line(format!("for {} in zip({}):", vars.join(", "), cols.join(", ")));
        }
        w.indent();
        w.line(format!("o = _nv_new({cls})"));
        for (i, m) in st.members.iter().enumerate() {
            w.line(format!("o.{} = v{i}", m.name));
        }
        w.line("ap(o)");
        w.dedent();
        w.line("return out");
        w.dedent().blank();
    }
}

fn type_name(t: &MemberType) -> &TypeName {
    match t {
        MemberType::Struct(n) | MemberType::Enum(n) => n,
        MemberType::Primitive(_) => unreachable!("primitives have no class"),
    }
}

fn fixed_len(d: &Dim) -> usize {
    match d {
        Dim::Fixed { len, .. } => *len,
        Dim::Variable { .. } => 1,
    }
}

/// The element count of a member as a Python expression over `c0..cN` (fixed ones folded into `fixed`).
fn count_expr(m: &Member, fixed: usize) -> String {
    let mut parts: Vec<String> =
        m.dims.iter().enumerate().filter(|(_, d)| !d.is_fixed()).map(|(i, _)| format!("c{i}")).collect();
    if fixed != 1 || parts.is_empty() {
        parts.push(fixed.to_string());
    }
    parts.join(" * ")
}

/// The Python zero of a primitive other than string.
fn zero_literal(p: Primitive) -> &'static str {
    match p {
        Primitive::Float | Primitive::Double => "0.0",
        Primitive::Boolean => "False",
        _ => "0",
    }
}

fn nested_default(dims: &[Dim], i: usize, elem: &str) -> String {
    if i == dims.len() {
        return elem.to_owned();
    }
    match &dims[i] {
        Dim::Variable { .. } => "[]".to_owned(),
        Dim::Fixed { len, .. } => format!("[{} for _ in range({len})]", nested_default(dims, i + 1, elem)),
    }
}

/// Decodes a primitive array member as lcm-gen's decoder gives it, the bytes already checked to end at `e`: lists
/// for the outer dimensions, the innermost one a tuple of numbers, a list of bools or bytes (`off` is left at the
/// start; the caller moves it to `e`).
fn emit_decode_prim_lists(m: &Member, p: Primitive, w: &mut CodeWriter) {
    let n = m.dims.len();
    let last = n - 1;
    let size = p.wire_size().unwrap_or(1);
    let inner = match p {
        Primitive::Byte => format!("data[p:p + c{last}]"),
        Primitive::Boolean => format!("list(_nv_unpack_from(\">%d?\" % c{last}, data, p))"),
        _ => format!("_nv_unpack_from(\">%d{}\" % c{last}, data, p)", prim_codes(p).0),
    };
    if n == 1 {
        w.line("p = off");
        w.line(format!("o.{} = {inner}", m.name));
        return;
    }
    w.line("p = off");
    for i in 0..last {
        w.line(format!("a{i} = []"));
        w.line(format!("for _ in range(c{i}):"));
        w.indent();
    }
    w.line(format!("a{}.append({inner})", last - 1));
    w.line(format!("p += c{last} * {size}"));
    for i in (0..last).rev() {
        w.dedent();
        if i > 0 {
            w.line(format!("a{}.append(a{i})", i - 1));
        }
    }
    w.line(format!("o.{} = a0", m.name));
}

/// Decodes one string at `off` into `target` (an assignable expression), advancing `off`.
fn emit_decode_string(w: &mut CodeWriter, target: &str, full: &str) {
    w.line("k, = _nv_unpack_I(data, off)");
    w.line("e = off + 4 + k");
    w.line("if k == 0 or e > ln or data[e - 1]:");
    w.indent().line(format!("raise _rt.bad_string(data, off, k, {full})")).dedent();
    w.line(format!("{target} = data[off + 4:e - 1].decode(\"utf-8\")"));
    w.line("off = e");
}

fn enum_module(en: &nerve_types::Enum) -> String {
    let cls = &en.name.name;
    let full = py_str(&en.name.full());
    let mut w = CodeWriter::new("    ");
    w.line("\"\"\"LCM type definitions");
    w.line("This file automatically generated by nerve gen.");
    w.line("DO NOT MODIFY BY HAND!!!!");
    w.line("\"\"\"").blank();
    w.line("import struct as _struct").blank();
    w.line("import nerve_lcm as _rt").blank();
    w.line("_nv_i = _struct.Struct(\">i\")").blank().blank();
    w.line(format!("class {cls}(object):"));
    w.indent();
    if let Some(doc) = &en.doc {
        w.line("\"\"\"").lines(doc_text(doc)).line("\"\"\"");
    }
    w.line("__slots__ = [\"value\"]");
    for v in &en.values {
        w.line(format!("{} = {}", v.name, v.value));
    }
    w.line(format!("_packed_fingerprint = {}", py_bytes(&en.hash.to_be_bytes())));
    w.line("_nerve_size = 4");
    w.line("_nerve_dtype = None").blank();
    w.line("def __init__(self, value=0):");
    w.indent().line("self.value = value").dedent().blank();
    w.line("@staticmethod");
    w.line("def _get_hash_recursive(parents):");
    w.indent().line(format!("return 0x{:016x}", en.hash)).dedent().blank();
    w.line("@staticmethod");
    w.line("def _get_packed_fingerprint():");
    w.indent().line(format!("return {cls}._packed_fingerprint")).dedent().blank();
    w.line("def get_hash(self):");
    w.indent().line(format!("return 0x{:016x}", en.hash)).dedent().blank();
    w.line("def encode(self):");
    w.indent().line(format!("return {cls}._packed_fingerprint + _nv_i.pack(self.value)")).dedent().blank();
    w.line("def _nerve_enc(self, ap):");
    w.indent().line("ap(_nv_i.pack(self.value))").dedent().blank();
    w.line("def _encode_one(self, buf):");
    w.indent().line("buf.write(_nv_i.pack(self.value))").dedent().blank();
    w.line("@staticmethod");
    w.line("def decode(data):");
    w.indent();
    w.line("if data.__class__ is not bytes:");
    w.indent().line("data = _rt.as_bytes(data)").dedent();
    w.line(format!("if data[:8] != {cls}._packed_fingerprint:"));
    w.indent().line(format!("raise _rt.bad_fingerprint(data, 0x{:016x}, {full})", en.hash)).dedent();
    w.line(format!("return {cls}._nerve_dec(data, 8)[0]"));
    w.dedent().blank();
    w.line("@staticmethod");
    w.line("def _decode_one(buf):");
    w.indent().line(format!("return _rt.decode_one({cls}, buf)")).dedent().blank();
    w.line("@staticmethod");
    w.line("def _nerve_dec(data, off):");
    w.indent();
    w.line("try:");
    w.indent().line("v, = _nv_i.unpack_from(data, off)").dedent();
    w.line("except _struct.error:");
    w.indent().line(format!("raise _rt.truncated(data, off, {full}) from None")).dedent();
    w.line(format!("return {cls}(v), off + 4"));
    w.dedent();
    w.dedent();
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_tuple_max_equals_small_array() {
        assert!(
            RUNTIME_MODULE.contains(&format!("\nTUPLE_MAX = {SMALL_ARRAY}\n")),
            "nerve_lcm.TUPLE_MAX must equal SMALL_ARRAY"
        );
    }

    #[test]
    fn python_decoders_stop_where_the_rust_decoder_does() {
        assert_eq!(MAX_DEPTH as usize, nerve_codec::MAX_DEPTH as usize);
    }
}
