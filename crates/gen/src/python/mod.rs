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

mod decl;
mod decode;
mod encode;
mod glue;

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use nerve_types::{ConstValue, Dim, Member, MemberType, Primitive, Schema, Span, Struct, TypeName};

use crate::plan;
use crate::writer::CodeWriter;
use crate::{recursive_types, GenError, GeneratedFile, Input, Options};
use decl::enum_module;
use glue::package_init;

/// The runtime module that generated Python imports (`import nerve_lcm`).
pub const RUNTIME_MODULE: &str = include_str!("../../runtime/python/nerve_lcm.py");

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
            files.push(package_init(pkg, names));
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

    /// The Python expression for dimension `d` of member `m` on object `obj`.
    fn dim_expr(d: &Dim, obj: &str) -> String {
        match d {
            Dim::Fixed { len, .. } => len.to_string(),
            Dim::Variable { member } => format!("{obj}.{member}"),
        }
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
