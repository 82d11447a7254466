//! The Rust generator: one module file per LCM package, each type a plain Rust struct with `nerve_codec` impls and a
//! zero-copy view.
//!
//! # Output layout
//!
//! `nerve gen --rust --rust-path DIR` writes `DIR/mod.rs` and one file per package, so that `mod lcmtypes;` in a
//! user crate (with `DIR = src/lcmtypes`) just works:
//!
//! - package `exlcm` -> `DIR/exlcm.rs`, module `lcmtypes::exlcm`;
//! - a dotted package `deep.pkg` -> `DIR/deep/pkg.rs`, module `lcmtypes::deep::pkg` (with `DIR/deep.rs` declaring
//!   it, and holding package `deep`'s own types if there are any);
//! - types without a package -> `DIR/root.rs`, module `lcmtypes::root` (a package literally called `root` is then
//!   an error);
//! - `--package-prefix p` puts every package under `p` (`p.exlcm` -> `DIR/p/exlcm.rs`).
//!
//! A type in another package is named by a relative path (`super::seed::PathT`), so the tree can sit anywhere in a
//! crate. Generated code depends on nothing but the `nerve-codec` crate, and names everything else by absolute path
//! (`::std::vec::Vec`), so no LCM type name can shadow what the code uses.
//!
//! # Names
//!
//! - Type names become UpperCamelCase: the LCM name is split at `_`, and each non-empty part gets its first letter
//!   upper-cased, the rest kept (`image_t` -> `ImageT`, `lidar_point_t` -> `LidarPointT`, `HTTPThing` ->
//!   `HTTPThing`). Two types of one package that map to the same name are an error.
//! - Each struct `T` also gets `TView<'a>`, a view over encoded bytes.
//! - Members keep their LCM names (Rust keywords as raw identifiers, `r#type`); consts keep theirs as associated
//!   consts. Names Rust cannot use at all (`self`, `crate`, `_`, names with characters other than letters, digits
//!   and `_`) are reported as [`GenError`]s.
//! - A view accessor is named after its member, except that a member called `new` is read by `new_` (`new` is the
//!   view's constructor).
//!
//! # Types
//!
//! `int8_t`..`int64_t` -> `i8`..`i64`, `float`/`double` -> `f32`/`f64`, `byte` -> `u8`, `boolean` -> `bool`,
//! `string` -> `nerve_codec::Str`; a fixed dimension -> `[T; N]`, a variable one -> `Vec<T>` (nested outermost
//! first, so `double p[n][2]` is `Vec<[f64; 2]>`, `string s[2]` is `[Str; 2]`); a (deprecated) enum -> a newtype over
//! `i32` with associated consts. `Str` is an immutable string of a `String`'s size that keeps up to 22 bytes inline:
//! decoding a short string allocates nothing, where a `String` would cost a `malloc` and a `free` (a `path_t` of 50
//! named waypoints made 50 of each). It derefs to `str`, so users write `msg.id = "wp-1".into()` and read `&*msg.id`
//! or `msg.id.as_str()`. Every struct derives `Debug, Clone, PartialEq` and implements `Default` (derived, or
//! written out when an array is longer than 32, for which std has no `Default`). A struct that contains itself other
//! than through a variable-length array could never be finished, and is reported as an error.
//!
//! # Speed
//!
//! Encoding and decoding go member by member, but each run of consecutive fixed-size members is one checked chunk
//! (`take_fixed::<N>()`) read and written at constant offsets, and a struct whose encoded size is fixed gets
//! `__nerve_encode_fixed`/`__nerve_decode_fixed` over a `[u8; SIZE]`, so arrays of such structs are one length check
//! and a `chunks_exact` loop with no bounds checks inside. Arrays of numbers are converted in one pass
//! (`put_f32_slice`, `fill_f32`; the runtime byte-swaps them with SSSE3 where the CPU has it). A fixed-size struct
//! whose members are all numbers (or fixed arrays of them) and whose encoded and in-memory sizes are at most 16 bytes
//! also gets `__NERVE_SHUFFLE`, a `nerve_codec::fixed::Shuffle` built at compile time from `offset_of!` of each
//! member, and arrays of it decode and encode with one byte shuffle per element instead of a load, swap and store
//! per member (much faster for LiDAR points). It is the only `unsafe` in generated code: the constructor's
//! conditions (any bytes are a valid value; each field is a real member's offset and size) hold by construction,
//! and a `SAFETY:` comment says so. A variable array of variable-size structs (path_t's waypoints: a string and
//! two floats each) is decoded in place: each element is pushed as its `Default` and filled by `decode_body_into`
//! (always inlined, except in recursive types), so nothing comes back from a call through memory to be copied into
//! the vector; a value built piecemeal on the stack and read back whole misses store forwarding, once per element.
//!
//! # Robustness
//!
//! Decoders check every count against the bytes that remain (times the least encoded size of an element) before
//! allocating; items that encode to nothing (empty structs, rows of length 0) are bounded by
//! `nerve_codec::ZERO_SIZE_SLACK`; recursive types count their depth and stop at `nerve_codec::MAX_DEPTH` (LCM has
//! neither limit; both exist so that a hostile buffer cannot hang the decoder or exhaust its stack). Encoders return
//! `EncodeError::LengthMismatch` when a `Vec`'s length disagrees with its count member.
//!
//! # Also generated
//!
//! `nerve_codec::json::WriteJson` for every struct and view (members in declaration order, the interop harness's
//! JSON shape), used by the interop tests and handy for debugging.
//!
//! # Using it from a build script
//!
//! The files carry inner attributes (`#![allow(..)]`), so `include!` cannot take them directly; either generate
//! into `src/` and declare `mod lcmtypes;`, or wrap each package file in `pub mod <name> { .. }` as `bench/build.rs`
//! does.

mod decode;
mod encode;
mod fixed;
mod view;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use nerve_types::{ConstValue, Dim, Enum, Layout, Member, MemberType, Primitive, Schema, Span, Struct, TypeName};

use crate::plan::{self, Seg, StructPlan};
use crate::writer::CodeWriter;
use crate::{recursive_types, struct_refs, GenError, GeneratedFile, Input, Options};
use decode::*;
use encode::*;
use fixed::*;
use view::*;

const VEC: &str = "::std::vec::Vec";
const STRING: &str = "::std::string::String";
/// What an LCM `string` member becomes: the runtime's inline small string (no allocation per short string).
const STR: &str = "__nc::Str";
const RESULT: &str = "::core::result::Result";
const OK: &str = "::core::result::Result::<_, __nc::DecodeError>::Ok";
const EOK: &str = "::core::result::Result::<(), __nc::EncodeError>::Ok";

/// The module (file) that holds types without a package.
pub const ROOT_MODULE: &str = "root";

const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "else", "enum", "extern", "false", "fn", "for", "if", "impl", "in", "let",
    "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "static", "struct", "trait", "true", "type",
    "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];
const NOT_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

fn err(span: &Span, message: impl Into<String>) -> GenError {
    GenError { span: span.clone(), language: "rust", message: message.into() }
}

/// Whether `s` is a Rust identifier (ignoring keywords): a letter or `_` then letters, digits and `_`.
fn is_ident(s: &str) -> bool {
    let mut cs = s.chars();
    match cs.next() {
        Some(c) if c.is_alphabetic() || c == '_' => cs.all(|c| c.is_alphanumeric() || c == '_'),
        _ => false,
    }
}

/// `name` as a Rust identifier (raw for keywords), or an error naming `what`.
fn ident(name: &str, what: &str, span: &Span) -> Result<String, GenError> {
    if NOT_RAW.contains(&name) {
        return Err(err(span, format!("{what} '{name}' cannot be used as a Rust identifier")));
    }
    if !is_ident(name) {
        return Err(err(span, format!("{what} '{name}' is not a valid Rust identifier")));
    }
    if KEYWORDS.contains(&name) {
        Ok(format!("r#{name}"))
    } else {
        Ok(name.to_owned())
    }
}

/// The Rust type name for an LCM type name (see the module doc): `image_t` -> `ImageT`.
pub fn type_name(lcm_name: &str) -> String {
    let mut out = String::new();
    for part in lcm_name.split('_').filter(|p| !p.is_empty()) {
        let mut cs = part.chars();
        if let Some(c) = cs.next() {
            out.extend(c.to_uppercase());
            out.push_str(cs.as_str());
        }
    }
    out
}

fn checked_type_name(lcm_name: &str, span: &Span) -> Result<String, GenError> {
    let n = type_name(lcm_name);
    if n.is_empty() || n.starts_with(|c: char| c.is_numeric()) || !is_ident(&n) || NOT_RAW.contains(&n.as_str()) {
        return Err(err(span, format!("type name '{lcm_name}' gives '{n}', which is not a valid Rust type name")));
    }
    Ok(n)
}

/// The module path of a package (after the prefix): `deep.pkg` -> `["deep", "pkg"]`, none -> `["root"]`.
fn module_path(prefix: &str, package: &str) -> Vec<String> {
    let full = match (prefix.is_empty(), package.is_empty()) {
        (true, true) => return vec![ROOT_MODULE.to_owned()],
        (true, false) => package.to_owned(),
        (false, true) => prefix.to_owned(),
        (false, false) => format!("{prefix}.{package}"),
    };
    full.split('.').map(str::to_owned).collect()
}

/// Cleans a doc comment for rustdoc: no indented code blocks, and fenced blocks marked `text` (never doc-tested).
fn doc_text(doc: Option<&str>) -> Option<String> {
    let doc = doc?;
    let mut out = String::new();
    for l in doc.lines() {
        let t = l.trim();
        if t.starts_with("```") && t.trim_start_matches('`').trim().is_empty() {
            out.push_str("```text\n");
        } else {
            out.push_str(t);
            out.push('\n');
        }
    }
    if out.trim().is_empty() {
        None
    } else {
        Some(out)
    }
}

fn rust_lit(s: &str) -> String {
    format!("{s:?}")
}

fn json_key(name: &str) -> String {
    let mut s = String::from("\"");
    for c in name.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push_str("\":");
    s
}

/// What the generator knows about the whole schema.
struct Ctx<'a> {
    layout: &'a Layout,
    prefix: String,
    /// Structs that can reach themselves (their decoders count depth).
    recursive: HashSet<TypeName>,
    /// Whether the code may contain `unsafe` ([`Options::rust_unsafe`]).
    unsafe_ok: bool,
}

/// One element type, resolved for the package being written.
#[derive(Clone)]
enum Elem {
    Prim(Primitive),
    /// A struct: its path from the current module, and its fixed encoded size if it has one.
    Struct {
        path: String,
        view: String,
        fixed: Option<usize>,
        min: usize,
    },
    Enum {
        path: String,
    },
}

impl Elem {
    /// What the plan knows of it: its sizes.
    fn wire(&self) -> plan::Elem {
        match self {
            Elem::Prim(Primitive::String) => plan::Elem::Str,
            Elem::Prim(p) => plan::Elem::Prim(*p),
            Elem::Struct { fixed, min, .. } => plan::Elem::Struct { fixed: *fixed, min: *min },
            Elem::Enum { .. } => plan::Elem::Enum,
        }
    }

    /// The fixed size of one element.
    fn fixed(&self) -> Option<usize> {
        self.wire().fixed()
    }

    fn min(&self) -> usize {
        self.wire().min()
    }

    /// A primitive converted in bulk (`read_f32s`, `put_f32_slice`): every primitive but string.
    fn bulk(&self) -> Option<(&'static str, &'static str)> {
        match self {
            Elem::Prim(p) => match p {
                Primitive::Int8 => Some(("i8", "i8s")),
                Primitive::Int16 => Some(("i16", "i16s")),
                Primitive::Int32 => Some(("i32", "i32s")),
                Primitive::Int64 => Some(("i64", "i64s")),
                Primitive::Float => Some(("f32", "f32s")),
                Primitive::Double => Some(("f64", "f64s")),
                Primitive::Boolean => Some(("bool", "bools")),
                Primitive::Byte => Some(("u8", "u8s")),
                Primitive::String => None,
            },
            _ => None,
        }
    }

    fn rust(&self) -> String {
        match self {
            Elem::Prim(p) => prim_rust(*p).to_owned(),
            Elem::Struct { path, .. } | Elem::Enum { path } => path.clone(),
        }
    }

    /// Whether `[v; N]` works for a default value (the type is `Copy`).
    fn copy(&self) -> bool {
        !matches!(self, Elem::Prim(Primitive::String) | Elem::Struct { .. })
    }

    fn default_expr(&self) -> String {
        match self {
            Elem::Prim(Primitive::String) => format!("{STR}::EMPTY"),
            Elem::Prim(Primitive::Float) | Elem::Prim(Primitive::Double) => "0.0".into(),
            Elem::Prim(Primitive::Boolean) => "false".into(),
            Elem::Prim(_) => "0".into(),
            Elem::Struct { path, .. } | Elem::Enum { path } => {
                format!("<{path} as ::core::default::Default>::default()")
            }
        }
    }
}

fn prim_rust(p: Primitive) -> &'static str {
    match p {
        Primitive::Int8 => "i8",
        Primitive::Int16 => "i16",
        Primitive::Int32 => "i32",
        Primitive::Int64 => "i64",
        Primitive::Float => "f32",
        Primitive::Double => "f64",
        Primitive::String => STR,
        Primitive::Boolean => "bool",
        Primitive::Byte => "u8",
    }
}

/// One dimension as the code uses it: a fixed length, or the index of the count member.
#[derive(Clone, Copy, PartialEq, Eq)]
enum D {
    Fixed(usize),
    Var(usize),
}

/// A member resolved for code generation.
struct M {
    /// The LCM name.
    name: String,
    /// The Rust field identifier.
    ident: String,
    /// The view accessor identifier.
    accessor: String,
    elem: Elem,
    dims: Vec<D>,
    /// The encoded size of the whole member, if fixed.
    fixed: Option<usize>,
    doc: Option<String>,
}

impl M {
    fn rust_type(&self) -> String {
        wrap_type(&self.dims, &self.elem)
    }
}

fn wrap_type(dims: &[D], elem: &Elem) -> String {
    match dims.split_first() {
        None => elem.rust(),
        Some((D::Fixed(n), rest)) => format!("[{}; {n}]", wrap_type(rest, elem)),
        Some((D::Var(_), rest)) => format!("{VEC}<{}>", wrap_type(rest, elem)),
    }
}

fn default_expr(dims: &[D], elem: &Elem) -> String {
    match dims.split_first() {
        None => elem.default_expr(),
        Some((D::Var(_), _)) => format!("{VEC}::new()"),
        Some((D::Fixed(n), rest)) => {
            let copy = elem.copy() && rest.iter().all(|d| matches!(d, D::Fixed(_)));
            if copy {
                format!("[{}; {n}]", default_expr(rest, elem))
            } else {
                format!("::core::array::from_fn::<_, {n}, _>(|_| {})", default_expr(rest, elem))
            }
        }
    }
}

fn all_fixed(dims: &[D]) -> bool {
    dims.iter().all(|d| matches!(d, D::Fixed(_)))
}

fn fixed_count(dims: &[D]) -> usize {
    dims.iter().map(|d| if let D::Fixed(n) = d { *n } else { 1 }).product()
}

/// `place` flattened `k` times (`.as_flattened()`), giving a slice of elements.
fn flat(place: &str, k: usize, mutable: bool) -> String {
    if k == 0 {
        return if mutable { format!("(&mut {place}[..])") } else { format!("(&{place}[..])") };
    }
    let mut s = place.to_owned();
    for _ in 0..k {
        s.push_str(if mutable { ".as_flattened_mut()" } else { ".as_flattened()" });
    }
    s
}

/// Generates Rust code for every input type.
pub fn generate(input: &Input<'_>, opts: &Options) -> Result<Vec<GeneratedFile>, GenError> {
    let schema = &input.checked.schema;
    let ctx = Ctx {
        layout: &input.layout,
        prefix: opts.package_prefix.trim_matches('.').to_owned(),
        recursive: recursive_types(schema),
        unsafe_ok: opts.rust_unsafe,
    };
    check_finite(schema)?;

    // Group the input types by module path.
    let mut modules: BTreeMap<Vec<String>, (Vec<&Struct>, Vec<&Enum>)> = BTreeMap::new();
    for s in input.structs() {
        modules.entry(module_path(&ctx.prefix, &s.name.package)).or_default().0.push(s);
    }
    for e in input.enums() {
        modules.entry(module_path(&ctx.prefix, &e.name.package)).or_default().1.push(e);
    }
    if ctx.prefix.is_empty() && input.structs().iter().any(|s| s.name.package.is_empty()) {
        // A package called `root` would share the module of package-less types.
        if let Some(s) = input.structs().iter().find(|s| s.name.package == ROOT_MODULE) {
            return Err(err(&s.span, "package 'root' clashes with the module for package-less types"));
        }
    }

    // Every module path and its prefixes get a file; children are declared by their parent.
    let mut children: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    let mut all_paths: Vec<Vec<String>> = Vec::new();
    for path in modules.keys() {
        for i in 1..=path.len() {
            let p = path[..i].to_vec();
            let parent = path[..i - 1].to_vec();
            let kids = children.entry(parent).or_default();
            if !kids.contains(&path[i - 1]) {
                kids.push(path[i - 1].clone());
            }
            if !all_paths.contains(&p) {
                all_paths.push(p);
            }
        }
    }

    let mut files = Vec::new();
    let span0 = input.structs().first().map(|s| s.span.clone()).unwrap_or_default();
    let mut top = CodeWriter::new("    ");
    top.line("//! LCM types, generated by `nerve gen --rust`. Do not edit.");
    top.line("//!");
    top.line("//! One module per LCM package; each struct `T` has `TView<'a>` for reading fields without decoding.");
    top.line("//! The generated code needs only the `nerve-codec` crate.");
    top.blank();
    for k in children.get(&Vec::new()).into_iter().flatten() {
        top.line(format!("pub mod {};", ident(k, "package", &span0)?));
    }
    files.push(GeneratedFile { path: "mod.rs".into(), contents: top.finish() });

    all_paths.sort();
    for path in &all_paths {
        let (structs, enums) = modules.get(path).cloned().unwrap_or_default();
        let kids = children.get(path).cloned().unwrap_or_default();
        let text = module_file(&ctx, path, &structs, &enums, &kids)?;
        let mut file = std::path::PathBuf::new();
        for (i, c) in path.iter().enumerate() {
            if i + 1 == path.len() {
                file.push(format!("{c}.rs"));
            } else {
                file.push(c);
            }
        }
        files.push(GeneratedFile { path: file, contents: text });
    }
    Ok(files)
}

/// Rejects a struct that contains itself other than through a variable-length array (its Rust type would be
/// infinitely large, and no value of it could ever be encoded).
fn check_finite(schema: &Schema) -> Result<(), GenError> {
    for s in &schema.structs {
        let mut seen = HashSet::new();
        let mut stack: Vec<&TypeName> = struct_refs(s, true);
        while let Some(n) = stack.pop() {
            if n == &s.name {
                return Err(err(
                    &s.span,
                    format!(
                        "struct '{}' contains itself other than through a variable-length array, so no value of it \
                         could ever be encoded",
                        s.name
                    ),
                ));
            }
            if seen.insert(n.clone()) {
                if let Some(t) = schema.struct_named(n) {
                    stack.extend(struct_refs(t, true));
                }
            }
        }
    }
    Ok(())
}

impl Ctx<'_> {
    /// The path of a type from module `from`.
    fn path_to(&self, from: &[String], name: &TypeName, span: &Span) -> Result<String, GenError> {
        let to = module_path(&self.prefix, &name.package);
        let tn = checked_type_name(&name.name, span)?;
        if to == from {
            return Ok(tn);
        }
        let mut s = String::new();
        for _ in from {
            s.push_str("super::");
        }
        for c in &to {
            s.push_str(&ident(c, "package", span)?);
            s.push_str("::");
        }
        s.push_str(&tn);
        Ok(s)
    }

    fn elem(&self, from: &[String], ty: &MemberType, span: &Span) -> Result<Elem, GenError> {
        Ok(match ty {
            MemberType::Primitive(p) => Elem::Prim(*p),
            MemberType::Struct(n) => {
                let path = self.path_to(from, n, span)?;
                let plan::Elem::Struct { fixed, min } = plan::Elem::of(self.layout, ty) else {
                    unreachable!("a struct type plans as a struct")
                };
                Elem::Struct { view: format!("{path}View<'a>"), path, fixed, min }
            }
            MemberType::Enum(n) => Elem::Enum { path: self.path_to(from, n, span)? },
        })
    }

    fn members(&self, from: &[String], s: &Struct) -> Result<Vec<M>, GenError> {
        let mut out = Vec::new();
        for m in &s.members {
            out.push(self.member(from, s, m)?);
        }
        Ok(out)
    }

    fn member(&self, from: &[String], s: &Struct, m: &Member) -> Result<M, GenError> {
        let ident = ident(&m.name, "member name", &m.span)?;
        let accessor = if m.name == "new" { "new_".to_owned() } else { ident.clone() };
        let mut dims = Vec::new();
        for d in &m.dims {
            dims.push(match d {
                Dim::Fixed { len, .. } => D::Fixed(*len),
                Dim::Variable { member } => match s.members.iter().position(|x| &x.name == member) {
                    Some(i) => D::Var(i),
                    None => return Err(err(&m.span, format!("unknown count member '{member}'"))),
                },
            });
        }
        Ok(M {
            name: m.name.clone(),
            ident,
            accessor,
            elem: self.elem(from, &m.ty, &m.span)?,
            dims,
            fixed: self.layout.member_fixed_size(m),
            doc: doc_text(m.doc.as_deref()),
        })
    }
}

fn module_file(
    ctx: &Ctx<'_>,
    path: &[String],
    structs: &[&Struct],
    enums: &[&Enum],
    kids: &[String],
) -> Result<String, GenError> {
    let mut w = CodeWriter::new("    ");
    let pkg = path.join(".");
    w.line(format!("//! LCM package `{pkg}`, generated by `nerve gen --rust`. Do not edit."));
    w.line("#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, unused_imports, unused_variables)]");
    w.line(
        "#![allow(unused_mut, unused_parens, dead_code, missing_docs, clippy::all, clippy::pedantic, clippy::nursery)]",
    );
    w.blank();
    w.line("use ::nerve_codec as __nc;");
    let span0 = structs.first().map(|s| s.span.clone()).unwrap_or_default();
    // Names in this module's type namespace, to catch clashes.
    let mut names: HashMap<String, String> = HashMap::new();
    let mut claim = |n: String, what: String, span: &Span| -> Result<(), GenError> {
        if let Some(prev) = names.insert(n.clone(), what.clone()) {
            return Err(err(span, format!("{what} and {prev} both become the Rust name '{n}'")));
        }
        Ok(())
    };
    for k in kids {
        w.blank();
        w.line(format!("pub mod {};", ident(k, "package", &span0)?));
        claim(k.clone(), format!("package '{k}'"), &span0)?;
    }
    for e in enums {
        let n = checked_type_name(&e.name.name, &e.span)?;
        claim(n, format!("enum '{}'", e.name), &e.span)?;
        w.blank();
        emit_enum(&mut w, e)?;
    }
    for s in structs {
        let n = checked_type_name(&s.name.name, &s.span)?;
        claim(n.clone(), format!("struct '{}'", s.name), &s.span)?;
        claim(format!("{n}View"), format!("the view of struct '{}'", s.name), &s.span)?;
        w.blank();
        emit_struct(ctx, &mut w, path, s)?;
    }
    Ok(w.finish())
}

fn emit_enum(w: &mut CodeWriter, e: &Enum) -> Result<(), GenError> {
    let n = checked_type_name(&e.name.name, &e.span)?;
    w.doc("/// ", doc_text(e.doc.as_deref()).as_deref());
    if e.doc.is_some() {
        w.line("///");
    }
    w.line(format!("/// LCM enum `{}` (deprecated in LCM): an `int32` on the wire.", e.name));
    w.line("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]");
    w.line(format!("pub struct {n}(pub i32);"));
    w.blank();
    w.block(format!("impl {n} {{"), "}", |w| {
        for v in &e.values {
            if let Ok(id) = ident(&v.name, "enum value", &e.span) {
                w.line(format!("pub const {id}: {n} = {n}({});", v.value));
            }
        }
    });
    for v in &e.values {
        ident(&v.name, "enum value", &e.span)?;
    }
    w.blank();
    w.block(format!("impl __nc::Encode for {n} {{"), "}", |w| {
        w.line("#[inline]");
        w.line("fn encoded_body_size(&self) -> usize { 4 }");
        w.line("#[inline]");
        w.line(format!(
            "fn encode_body(&self, w: &mut __nc::Writer<'_>) -> {RESULT}<(), __nc::EncodeError> {{ w.put_i32(self.0) }}"
        ));
    });
    w.block(format!("impl __nc::Decode for {n} {{"), "}", |w| {
        w.line("#[inline]");
        w.line(format!(
            "fn decode_body(r: &mut __nc::Reader<'_>) -> {RESULT}<Self, __nc::DecodeError> {{ r.get_i32().map({n}) }}"
        ));
    });
    w.block(format!("impl __nc::Message for {n} {{"), "}", |w| {
        w.line(format!("const FINGERPRINT: u64 = 0x{:016x};", e.hash));
        w.line(format!("const TYPE_NAME: &'static str = {};", rust_lit(&e.name.full())));
    });
    w.block(format!("impl __nc::view::ViewPrim for {n} {{"), "}", |w| {
        w.line("const SIZE: usize = 4;");
        w.line("#[inline(always)]");
        w.line(format!(
            "fn read_at(buf: &[u8], at: usize) -> ::core::option::Option<Self> {{ <i32 as __nc::view::ViewPrim>::read_at(buf, at).map({n}) }}"
        ));
    });
    w.block(format!("impl __nc::json::WriteJson for {n} {{"), "}", |w| {
        w.line(format!(
            "fn write_json(&self, out: &mut {STRING}) -> {RESULT}<(), __nc::DecodeError> {{ self.0.write_json(out) }}"
        ));
    });
    Ok(())
}

fn const_value(c: &nerve_types::Const) -> String {
    match (c.ty, c.value) {
        (_, ConstValue::Int(v)) => {
            // lcm-gen copies the literal text; Rust reads `017` as decimal, so write the value instead.
            format!("{v}")
        }
        (Primitive::Float, ConstValue::Float(v)) => float_lit(v as f32 as f64, "f32", (v as f32).is_finite()),
        (_, ConstValue::Float(v)) => float_lit(v, "f64", v.is_finite()),
    }
}

fn float_lit(v: f64, ty: &str, finite: bool) -> String {
    if v.is_nan() {
        format!("{ty}::NAN")
    } else if !finite {
        if v > 0.0 {
            format!("{ty}::INFINITY")
        } else {
            format!("{ty}::NEG_INFINITY")
        }
    } else if ty == "f32" {
        format!("{:?}", v as f32)
    } else {
        format!("{v:?}")
    }
}

fn emit_struct(ctx: &Ctx<'_>, w: &mut CodeWriter, path: &[String], s: &Struct) -> Result<(), GenError> {
    let name = checked_type_name(&s.name.name, &s.span)?;
    let members = ctx.members(path, s)?;
    let plan = StructPlan::new(ctx.layout, s);
    let (fixed, min) = (plan.fixed, plan.min);
    let recursive = ctx.recursive.contains(&s.name);
    let manual_default = members.iter().any(|m| m.dims.iter().any(|d| matches!(d, D::Fixed(n) if *n > 32)));

    // The struct.
    if let Some(d) = doc_text(s.doc.as_deref()) {
        w.doc("/// ", Some(&d));
        w.line("///");
    }
    w.line(format!("/// LCM type `{}`, fingerprint `0x{:016x}`.", s.name, s.fingerprint));
    if manual_default {
        w.line("#[derive(Debug, Clone, PartialEq)]");
    } else {
        w.line("#[derive(Debug, Clone, PartialEq, Default)]");
    }
    w.block(format!("pub struct {name} {{"), "}", |w| {
        for m in &members {
            w.doc("/// ", m.doc.as_deref());
            w.line(format!("pub {}: {},", m.ident, m.rust_type()));
        }
    });

    if manual_default {
        w.blank();
        w.block(format!("impl ::core::default::Default for {name} {{"), "}", |w| {
            w.block("fn default() -> Self {", "}", |w| {
                w.block("Self {", "}", |w| {
                    for m in &members {
                        w.line(format!("{}: {},", m.ident, default_expr(&m.dims, &m.elem)));
                    }
                });
            });
        });
    }

    // Consts.
    let mut consts = Vec::new();
    for c in &s.consts {
        consts.push((ident(&c.name, "const name", &c.span)?, c));
    }
    if !consts.is_empty() || fixed.is_some() {
        w.blank();
        let mut body_err = Ok(());
        w.block(format!("impl {name} {{"), "}", |w| {
            for (id, c) in &consts {
                w.doc("/// ", doc_text(c.doc.as_deref()).as_deref());
                w.line(format!("/// (`= {}` in the `.lcm` file)", c.text.replace('`', "'")));
                w.line(format!("pub const {id}: {} = {};", prim_rust(c.ty), const_value(c)));
            }
            if let Some(size) = fixed {
                body_err = emit_fixed_fns(w, &members, &plan, size, ctx.unsafe_ok);
            }
        });
        body_err?;
    }

    // Encode.
    w.blank();
    let mut body_err = Ok(());
    w.block(format!("impl __nc::Encode for {name} {{"), "}", |w| {
        w.line("#[inline]");
        w.block("fn encoded_body_size(&self) -> usize {", "}", |w| match fixed {
            Some(n) => {
                w.line(format!("{n}"));
            }
            None => {
                let mut terms = vec![];
                let mut konst = 0usize;
                for m in &members {
                    match m.fixed {
                        Some(n) => konst += n,
                        None => terms.push(size_expr(&m.dims, &m.elem, &format!("self.{}", m.ident), 0)),
                    }
                }
                if terms.is_empty() {
                    w.line(format!("{konst}"));
                } else {
                    w.line(format!("let mut n = {konst};"));
                    for t in &terms {
                        w.line(format!("n += {t};"));
                    }
                    w.line("n");
                }
            }
        });
        w.line("#[inline]");
        w.block(
            format!("fn encode_body(&self, w: &mut __nc::Writer<'_>) -> {RESULT}<(), __nc::EncodeError> {{"),
            "}",
            |w| {
                if let Some(n) = fixed {
                    w.line(format!("self.__nerve_encode_fixed(w.take_fixed::<{n}>()?);"));
                    w.line(format!("{EOK}(())"));
                    return;
                }
                for seg in plan.segments(&members) {
                    match seg {
                        Seg::Run(ms, size) => {
                            w.line(format!("let b = w.take_fixed::<{size}>()?;"));
                            let mut o = 0;
                            for m in ms {
                                encode_fixed_member(w, m, &format!("self.{}", m.ident), "b", o);
                                o += m.fixed.unwrap_or(0);
                            }
                        }
                        Seg::Var(m) => {
                            if let Err(e) = encode_var_member(w, m, &members) {
                                body_err = Err(e);
                            }
                        }
                    }
                }
                w.line(format!("{EOK}(())"));
            },
        );
    });
    body_err?;

    // Decode.
    w.block(format!("impl __nc::Decode for {name} {{"), "}", |w| {
        w.line("#[inline]");
        w.block(
            format!("fn decode_body(r: &mut __nc::Reader<'_>) -> {RESULT}<Self, __nc::DecodeError> {{"),
            "}",
            |w| {
                if let Some(n) = fixed {
                    w.line(format!("r.take_fixed::<{n}>().map(Self::__nerve_decode_fixed)"));
                    return;
                }
                if recursive {
                    w.line("r.enter()?;");
                }
                let mut idx = 0;
                for seg in plan.segments(&members) {
                    match seg {
                        Seg::Run(ms, size) => {
                            w.line(format!("let b = r.take_fixed::<{size}>()?;"));
                            let mut o = 0;
                            for m in ms {
                                w.line(format!("let m_{idx} = {};", decode_fixed_member(m, "b", o)));
                                o += m.fixed.unwrap_or(0);
                                idx += 1;
                            }
                        }
                        Seg::Var(m) => {
                            decode_var_member(w, m, idx, &members);
                            idx += 1;
                        }
                    }
                }
                if recursive {
                    w.line("r.leave();");
                }
                let fields: Vec<String> =
                    members.iter().enumerate().map(|(i, m)| format!("{}: m_{i}", m.ident)).collect();
                w.line(format!("{OK}(Self {{ {} }})", fields.join(", ")));
            },
        );
        if fixed.is_none() {
            // The allocation-free decode: reuses the strings and vectors `self` already holds. Also how arrays of
            // such structs decode afresh (into default elements), so it has two callers per element type, and then
            // `#[inline]` left it a call per element, the reader's position going through memory, which made
            // path_t's `decode_into` measurably slower. A recursive type cannot be inlined into itself.
            w.line(if recursive { "#[inline]" } else { "#[inline(always)]" });
            w.block(
                format!(
                    "fn decode_body_into(&mut self, r: &mut __nc::Reader<'_>) -> {RESULT}<(), __nc::DecodeError> {{"
                ),
                "}",
                |w| {
                    if recursive {
                        w.line("r.enter()?;");
                    }
                    for seg in plan.segments(&members) {
                        match seg {
                            Seg::Run(ms, size) => {
                                w.line(format!("let b = r.take_fixed::<{size}>()?;"));
                                let mut o = 0;
                                for m in ms {
                                    w.line(format!("self.{} = {};", m.ident, decode_fixed_member(m, "b", o)));
                                    o += m.fixed.unwrap_or(0);
                                }
                            }
                            Seg::Var(m) => decode_var_member_into(w, m, &members),
                        }
                    }
                    if recursive {
                        w.line("r.leave();");
                    }
                    w.line(format!("{OK}(())"));
                },
            );
        }
    });

    w.block(format!("impl __nc::Message for {name} {{"), "}", |w| {
        w.line(format!("const FINGERPRINT: u64 = 0x{:016x};", s.fingerprint));
        w.line(format!("const TYPE_NAME: &'static str = {};", rust_lit(&s.name.full())));
    });

    w.block(format!("impl __nc::json::WriteJson for {name} {{"), "}", |w| {
        w.block(format!("fn write_json(&self, out: &mut {STRING}) -> {RESULT}<(), __nc::DecodeError> {{"), "}", |w| {
            for (i, m) in members.iter().enumerate() {
                let key = format!("{}{}", if i == 0 { "{" } else { "," }, json_key(&m.name));
                w.line(format!("out.push_str({});", rust_lit(&key)));
                w.line(format!("__nc::json::WriteJson::write_json(&self.{}, out)?;", m.ident));
            }
            if members.is_empty() {
                w.line("out.push('{');");
            }
            w.line("out.push('}');");
            w.line(format!("{OK}(())"));
        });
    });

    emit_view(w, s, &name, &members, fixed, min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(type_name("image_t"), "ImageT");
        assert_eq!(type_name("lidar_point_t"), "LidarPointT");
        assert_eq!(type_name("HTTPThing"), "HTTPThing");
        assert_eq!(type_name("_x__y"), "XY");
        assert_eq!(ident("type", "m", &Span::default()).unwrap(), "r#type");
        assert!(ident("self", "m", &Span::default()).is_err());
        assert!(ident("a//", "m", &Span::default()).is_err());
        assert_eq!(ident("aé", "m", &Span::default()).unwrap(), "aé");
        assert_eq!(module_path("", ""), vec!["root"]);
        assert_eq!(module_path("p", "deep.pkg"), vec!["p", "deep", "pkg"]);
    }
}
