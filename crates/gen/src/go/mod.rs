//! The Go generator: one `.go` file per struct with the API lcm-gen 1.5.3 writes for `-g`, and a small runtime
//! file per Go package.
//!
//! # What it writes
//!
//! For a struct `pkg.sub.name_t` the file is `<go-path>/pkg/sub/name_t.go` (`--go-strip-dirs`: `<go-path>/name_t.go`)
//! in Go package `sub` (the last part of the LCM package; a type without a package goes to
//! `--go-default-package`, `lcmtypes` unless given). Names follow lcm-gen: the Go type is the full LCM name with
//! dots and underscores removed and the letter after each upper-cased (`lidar.lidar_point_t` -> `LidarLidarPointT`);
//! a member `msg_info` becomes the exported field `MsgInfo` tagged `` `msg_info` `` (`--go-tag-name json`:
//! `` `json:"msg_info"` ``); a const `MAX_N` becomes `LidarLidarPointT_MAXN` of its Go type; another package's type
//! is named through its import, `prefix + pkg/sub` (`--go-import-prefix`). `int8_t`..`int64_t`, `float`, `double`,
//! `byte`, `boolean`, `string` become `int8`..`int64`, `float32`, `float64`, `byte`, `bool`, `string`; a fixed
//! dimension a Go array `[3]T`, a variable one a slice `[]T`, outermost first.
//!
//! Each type has lcm-gen's methods and functions with their signatures: `Copy() T` (a deep copy), `Encode()`,
//! `MarshalBinary()`, `Decode(data)`, `UnmarshalBinary(data)`, `Size()`, one `XGet()` per member that sizes an
//! array (it sets that member from the slices' lengths and fails if the slices disagree; `Size`, `Encode` and
//! `MarshalBinary` call it, so the count members need not be set by hand), the function `T_Fingerprint(path
//! ...uint64)` and the constant `name_t_Fingerprint` (the base hash). `--go-fingerprint` gives lcm-gen's other
//! naming: the fingerprint as a suffix of file and type names (`LidarLidarT_11331655872227436214`) and the
//! constant `T_Fingerprint` instead of the function. Two more methods are what one type's code calls for another's,
//! in whatever package: `AppendBinary(b)` (Go's `encoding.BinaryAppender`) and `DecodeBody(data, depth)`, which
//! decodes a body (no fingerprint) from the front of `data` and says how many bytes it took. A type whose encoded
//! size is fixed also gets `EncodeFixed(b)` / `DecodeFixed(d)` over exactly its bytes, so arrays of it take one
//! bounds check. lcm-gen's Go backend crashes on any variable-length array of a primitive and names an undeclared
//! type in arrays of structs; this one writes what that API would be for every type, including the ones lcm-gen's Go
//! cannot.
//!
//! Names that Go cannot take are [`GenError`]s, not code that does not compile: a package whose Go name is a Go
//! keyword, a member whose Go name is empty, starts with a digit, repeats another's or a method's (`size` ->
//! `Size`), and two package-level names that collide. Enums (deprecated in LCM, and refused by lcm-gen's Go) are
//! refused too. A member whose Go name is a method's gets a `_` after it: image_t's `size` is the field `Size_`
//! (with the getter `Size_Get()`), since `Size()` is the method.
//!
//! Go forbids import cycles, which LCM packages may have (`feat.second_t` holds a `deep.pkg.leaf_t`, and
//! `deep.pkg.uses_all_t` a `feat.scalars_t`): packages that refer to each other in a cycle become one Go package,
//! that of the first of them by name, and the types of the others are written there as `<package>_<name>.go`. Type
//! names carry their LCM package, so they do not collide.
//!
//! # Decoding untrusted bytes
//!
//! `Decode` fails on a short buffer, a wrong fingerprint and bytes after the message (as lcm-gen's does), and
//! `DecodeBody` never reads past its buffer: each run of fixed-size members is one bounds check; every array's
//! dimensions are checked against the bytes that remain, at the least encoded size of an element, before anything is
//! allocated (elements that encode to nothing at most `nerveZeroSizeSlack` more than the bytes left, the slack
//! every Nerve decoder allows); a string's length must be at least 1, fit, and end in a zero; recursive types stop
//! `nerveMaxDepth` levels deep. Every failure is an `error`, never a panic. These checks live in `nerve_lcm.go`,
//! written once per Go package.

mod decode;
mod encode;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use nerve_types::{Dim, Member, MemberType, Primitive, Struct, TypeName};

use crate::plan::{Elem, StructPlan};
use crate::writer::CodeWriter;
use crate::{recursive_types, GenError, GeneratedFile, Input};

/// The Go options (`--go-*`, lcm-gen's where it has them).
#[derive(Debug, Clone)]
pub struct GoOptions {
    /// Name the struct tags (`json` gives `` `json:"x"` ``); empty: the member name alone, as lcm-gen.
    pub tag_name: String,
    /// Write every file straight into the output directory, not into one directory per package.
    pub strip_dirs: bool,
    /// lcm-gen's `--go-fingerprint`: the fingerprint as a suffix of file and type names, and a constant.
    pub fingerprint: bool,
    /// Put in front of the import path of every other package (`example.com/robot/lcmtypes/`).
    pub import_prefix: String,
    /// The Go package (and directory) of types that have no LCM package.
    pub default_package: String,
}

impl Default for GoOptions {
    fn default() -> GoOptions {
        GoOptions {
            tag_name: String::new(),
            strip_dirs: false,
            fingerprint: false,
            import_prefix: String::new(),
            default_package: "lcmtypes".to_owned(),
        }
    }
}

/// The file every generated Go package gets, with the bounds checks and string helpers its types share.
pub const RUNTIME_FILE: &str = "nerve_lcm.go";

const RUNTIME: &str = include_str!("runtime.go.txt");

const GO_KEYWORDS: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "type",
    "var",
];

/// Identifiers a generated file uses that an imported package's name must not shadow.
const FILE_NAMES: &[&str] = &[
    "binary", "fmt", "math", "bits", "bool", "byte", "int", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "float32", "float64", "string", "len", "make", "append", "copy", "nil", "true", "false",
    "error", "uintptr", "rune", "cap", "new", "panic", "any", "p", "x", "b", "d", "o", "n", "s", "v", "l", "ok", "err",
    "depth", "size", "path", "r", "k", "i", "fp", "data",
];

/// The methods every generated type has (a field of the same name would not compile).
const METHODS: &[&str] = &[
    "Copy",
    "Encode",
    "MarshalBinary",
    "Decode",
    "UnmarshalBinary",
    "Size",
    "AppendBinary",
    "DecodeBody",
    "EncodeFixed",
    "DecodeFixed",
];

/// Generates one `.go` file per input struct and `nerve_lcm.go` for each Go package.
pub fn generate(input: &Input<'_>, opts: &crate::Options) -> Result<Vec<GeneratedFile>, GenError> {
    if let Some(e) = input.enums().first() {
        return Err(err(
            &e.span,
            format!("enum {} (deprecated in LCM) is not supported by the Go generator, as by lcm-gen's", e.name),
        ));
    }
    let g = Gen {
        input,
        opts: &opts.go,
        prefix: &opts.package_prefix,
        recursive: recursive_types(&input.checked.schema),
        merged: merged_packages(&input.checked.schema),
    };
    let mut files = Vec::new();
    // Go package directory -> (Go package name, package-level names declared there).
    let mut packages: BTreeMap<PathBuf, (String, HashMap<String, String>)> = BTreeMap::new();
    for s in input.structs() {
        let pkg = g.go_package(&s.name);
        if GO_KEYWORDS.contains(&pkg.as_str()) {
            return Err(err(&s.span, format!("package name '{pkg}' is a Go keyword")));
        }
        let dir = g.dir(&s.name);
        let entry = packages.entry(dir.clone()).or_insert_with(|| (pkg.clone(), HashMap::new()));
        if entry.0 != pkg {
            return Err(err(
                &s.span,
                format!(
                    "Go packages '{}' and '{pkg}' would share the directory '{}' (--go-strip-dirs)",
                    entry.0,
                    dir.display()
                ),
            ));
        }
        for name in g.package_names(s) {
            if let Some(other) = entry.1.insert(name.clone(), s.name.full()) {
                return Err(err(&s.span, format!("{} and {other} both declare the Go name '{name}'", s.name)));
            }
        }
        let m = g.members(s)?;
        files.push(GeneratedFile { path: dir.join(g.file_name(s)), contents: g.file(s, &m) });
    }
    for (dir, (pkg, _)) in packages {
        files.push(GeneratedFile {
            path: dir.join(RUNTIME_FILE),
            contents: format!("{}\npackage {pkg}\n{}", banner_text(None), RUNTIME),
        });
    }
    Ok(files)
}

fn err(span: &nerve_types::Span, message: String) -> GenError {
    GenError { span: span.clone(), language: "go", message }
}

/// lcm-gen's first lines, and Go's marker of generated code; `from` names the input file.
fn banner_text(from: Option<&str>) -> String {
    let from = from.map(|f| format!(" from {f}")).unwrap_or_default();
    format!(
        "// THIS IS AN AUTOMATICALLY GENERATED FILE.  DO NOT MODIFY\n// BY HAND!!\n//\n// Code generated by nerve gen \
         (LCM-compatible Go){from}; DO NOT EDIT.\n"
    )
}

/// lcm-gen's `go_name`: drops dots and underscores and upper-cases the ASCII letter after each.
fn go_name(s: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in s.chars() {
        if c == '.' || c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// [`go_name`] with its first letter upper-cased (an exported name).
fn exported(s: &str) -> String {
    let mut n = go_name(s);
    if let Some(c) = n.chars().next() {
        let up = c.to_ascii_uppercase();
        n.replace_range(..c.len_utf8(), up.encode_utf8(&mut [0; 4]));
    }
    n
}

/// A const's literal as written (as lcm-gen copies it), unless Go would read it as another value: a hex or octal
/// literal beyond the type's signed range (`0xffffffffffffffff` is -1 in an `int64_t` for LCM) is written as the
/// value instead.
fn const_literal(c: &nerve_types::Const) -> String {
    let nerve_types::ConstValue::Int(v) = c.value else { return c.text.clone() };
    let (neg, digits) = match c.text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, c.text.strip_prefix('+').unwrap_or(&c.text)),
    };
    let magnitude = if let Some(h) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        u128::from_str_radix(h, 16).ok()
    } else if digits.len() > 1 && digits.starts_with('0') {
        u128::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse::<u128>().ok()
    };
    let as_go = magnitude.map(|m| if neg { -(m as i128) } else { m as i128 });
    if as_go == Some(i128::from(v)) {
        c.text.clone()
    } else {
        v.to_string()
    }
}

fn valid_ident(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next().is_some_and(|c| c.is_alphabetic() || c == '_') && cs.all(|c| c.is_alphanumeric() || c == '_')
}

/// A primitive's Go type.
pub(super) fn prim_type(p: Primitive) -> &'static str {
    match p {
        Primitive::Int8 => "int8",
        Primitive::Int16 => "int16",
        Primitive::Int32 => "int32",
        Primitive::Int64 => "int64",
        Primitive::Float => "float32",
        Primitive::Double => "float64",
        Primitive::String => "string",
        Primitive::Boolean => "bool",
        Primitive::Byte => "byte",
    }
}

/// A member as the emitters see it: the model, its plan and its Go names.
pub(super) struct M<'a> {
    pub m: &'a Member,
    pub elem: Elem,
    /// The encoded size of the whole member, if fixed.
    pub fixed: Option<usize>,
    /// The exported field name.
    pub field: String,
    /// The element's Go type.
    pub elem_type: String,
    /// The element's struct, if it is one: its Go name as this file spells it, and whether it is recursive.
    pub strukt: Option<(String, bool)>,
}

impl M<'_> {
    /// The Go type of the member from dimension `from` inwards (`from == dims.len()`: the element).
    pub fn type_from(&self, from: usize) -> String {
        let mut t = String::new();
        for d in &self.m.dims[from..] {
            match d {
                Dim::Fixed { len, .. } => {
                    let _ = write!(t, "[{len}]");
                }
                Dim::Variable { .. } => t.push_str("[]"),
            }
        }
        t + &self.elem_type
    }
}

pub(super) struct Gen<'a> {
    pub input: &'a Input<'a>,
    pub opts: &'a GoOptions,
    pub prefix: &'a str,
    pub recursive: HashSet<TypeName>,
    /// LCM package -> the package it shares a Go package with, for packages that refer to each other in a cycle.
    pub merged: HashMap<String, String>,
}

/// Packages whose types refer to each other in a cycle, which Go's imports cannot: each maps to the first (by
/// name) of its strongly connected component, whose Go package they all become.
fn merged_packages(schema: &nerve_types::Schema) -> HashMap<String, String> {
    let mut edges: BTreeMap<&str, HashSet<&str>> = BTreeMap::new();
    for s in &schema.structs {
        let e = edges.entry(s.name.package.as_str()).or_default();
        for m in &s.members {
            if let MemberType::Struct(n) = &m.ty {
                e.insert(n.package.as_str());
            }
        }
    }
    let reach = |from: &str| {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut todo = vec![from];
        while let Some(p) = todo.pop() {
            for q in edges.get(p).into_iter().flatten() {
                if seen.insert(q) {
                    todo.push(q);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&str, HashSet<&str>> = edges.keys().map(|p| (*p, reach(p))).collect();
    let mut out = HashMap::new();
    for (p, r) in &reaches {
        let rep = reaches
            .iter()
            .filter(|(q, rq)| q == &p || (r.contains(*q) && rq.contains(*p)))
            .map(|(q, _)| *q)
            .min()
            .unwrap_or(p);
        if rep != *p {
            out.insert((*p).to_owned(), rep.to_owned());
        }
    }
    out
}

impl Gen<'_> {
    /// The LCM package whose Go package the type is in (its own, unless merged), with `--package-prefix` in front
    /// (empty: none).
    fn package(&self, n: &TypeName) -> String {
        let own = self.merged.get(&n.package).unwrap_or(&n.package);
        match (self.prefix.is_empty(), own.is_empty()) {
            (true, _) => own.clone(),
            (false, true) => self.prefix.to_owned(),
            (false, false) => format!("{}.{}", self.prefix, own),
        }
    }

    /// Whether the type's Go package is another LCM package's (see [`merged_packages`]).
    fn is_merged(&self, n: &TypeName) -> bool {
        self.merged.contains_key(&n.package)
    }

    /// The type's name with its package, underscored (`feat_second_t`), for the file and constant names of a type
    /// in a merged package.
    fn unique_short(&self, n: &TypeName) -> String {
        if self.is_merged(n) {
            n.full().replace('.', "_")
        } else {
            n.name.clone()
        }
    }

    /// The Go package name of a type.
    fn go_package(&self, n: &TypeName) -> String {
        let pkg = self.package(n);
        match pkg.rsplit('.').next() {
            Some(last) if !last.is_empty() => last.to_owned(),
            _ => self.opts.default_package.clone(),
        }
    }

    /// The package's path below the output directory (and below the import prefix).
    fn package_path(&self, n: &TypeName) -> String {
        let pkg = self.package(n);
        if pkg.is_empty() {
            self.opts.default_package.clone()
        } else {
            pkg.replace('.', "/")
        }
    }

    fn dir(&self, n: &TypeName) -> PathBuf {
        if self.opts.strip_dirs {
            PathBuf::new()
        } else {
            PathBuf::from(self.package_path(n))
        }
    }

    fn fingerprint_of(&self, n: &TypeName) -> u64 {
        self.input.checked.schema.struct_named(n).map_or(0, |s| s.fingerprint)
    }

    /// The Go type name (with lcm-gen's fingerprint suffix under `--go-fingerprint`).
    pub fn type_name(&self, n: &TypeName) -> String {
        let base = exported(&n.full());
        if self.opts.fingerprint {
            format!("{base}_{}", self.fingerprint_of(n))
        } else {
            base
        }
    }

    fn file_name(&self, s: &Struct) -> String {
        if self.opts.fingerprint {
            format!("{}_{}.go", self.unique_short(&s.name), s.fingerprint)
        } else {
            format!("{}.go", self.unique_short(&s.name))
        }
    }

    /// The base-hash constant lcm-gen declares (`name_t_Fingerprint`), or under `--go-fingerprint` the
    /// fingerprint constant.
    fn hash_const(&self, s: &Struct) -> String {
        if self.opts.fingerprint {
            format!("{}_Fingerprint", self.type_name(&s.name))
        } else {
            format!("{}_Fingerprint", self.unique_short(&s.name))
        }
    }

    /// Every package-level name the struct's file declares.
    fn package_names(&self, s: &Struct) -> Vec<String> {
        let t = self.type_name(&s.name);
        let mut v = vec![t.clone(), self.hash_const(s)];
        if !self.opts.fingerprint {
            v.push(format!("{t}_Fingerprint"));
        }
        v.extend(s.consts.iter().map(|c| format!("{t}_{}", exported(&c.name))));
        v
    }

    /// Names of members that size an array (they get an `XGet()`), in declaration order.
    fn counts<'s>(&self, s: &'s Struct) -> Vec<&'s Member> {
        s.members
            .iter()
            .filter(|c| {
                s.members
                    .iter()
                    .any(|m| m.dims.iter().any(|d| matches!(d, Dim::Variable { member } if *member == c.name)))
            })
            .collect()
    }

    /// The Go field name of each member: lcm-gen's, with a `_` after a name that a method of the type has
    /// (image_t's `size` is `Size_`, as `Size()` is the method; its getter is `Size_Get()`).
    pub(super) fn fields(&self, s: &Struct) -> Result<Vec<String>, GenError> {
        let mut fields: Vec<String> = s.members.iter().map(|m| exported(&m.name)).collect();
        for f in &mut fields {
            if METHODS.contains(&f.as_str()) {
                f.push('_');
            }
        }
        let getters: Vec<String> = s
            .members
            .iter()
            .zip(&fields)
            .filter(|(m, _)| self.counts(s).iter().any(|c| c.name == m.name))
            .map(|(_, f)| format!("{f}Get"))
            .collect();
        for f in &mut fields {
            if getters.contains(f) {
                f.push('_');
            }
        }
        let mut seen: HashMap<&str, &str> = HashMap::new();
        for (m, f) in s.members.iter().zip(&fields) {
            if !valid_ident(f) {
                return Err(err(&m.span, format!("member '{}' has no Go name (lcm-gen's rule gives '{f}')", m.name)));
            }
            if let Some(other) = seen.insert(f, &m.name) {
                return Err(err(&m.span, format!("members '{other}' and '{}' are both '{f}' in Go", m.name)));
            }
        }
        Ok(fields)
    }

    fn members<'s>(&self, s: &'s Struct) -> Result<Vec<M<'s>>, GenError> {
        let plan = StructPlan::new(&self.input.layout, s);
        let fields = self.fields(s)?;
        let mut out = Vec::new();
        for ((m, mp), field) in s.members.iter().zip(&plan.members).zip(fields) {
            let (elem_type, strukt) = match &m.ty {
                MemberType::Primitive(p) => (prim_type(*p).to_owned(), None),
                MemberType::Enum(_) => ("int32".to_owned(), None),
                MemberType::Struct(n) => {
                    let mut t = self.type_name(n);
                    if self.package(n) != self.package(&s.name) {
                        t = format!("{}.{t}", self.import_alias(s, n));
                    }
                    (t.clone(), Some((t, self.recursive.contains(n))))
                }
            };
            out.push(M { m, elem: mp.elem, fixed: mp.fixed, field, elem_type, strukt });
        }
        Ok(out)
    }

    /// Other packages this struct's file imports: import path -> the name the file calls it by.
    fn imports(&self, s: &Struct) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut taken: HashSet<String> = FILE_NAMES.iter().map(|s| (*s).to_owned()).collect();
        taken.extend(GO_KEYWORDS.iter().map(|s| (*s).to_owned()));
        let mut seen = Vec::new();
        for m in &s.members {
            let MemberType::Struct(n) = &m.ty else { continue };
            let pkg = self.package(n);
            if pkg == self.package(&s.name) || seen.contains(&pkg) {
                continue;
            }
            seen.push(pkg.clone());
            let path = format!("{}{}", self.opts.import_prefix, self.package_path(n));
            let mut name = self.go_package(n);
            let local = name.len() > 1
                && (name.starts_with('i') || name.starts_with('n'))
                && name[1..].bytes().all(|c| c.is_ascii_digit());
            if taken.contains(&name) || local {
                name = format!("lcm_{}", self.package_path(n).replace('/', "_"));
            }
            taken.insert(name.clone());
            out.insert(pkg, (path, name));
        }
        out.into_values().collect()
    }

    /// The name `s`'s file imports `n`'s package by.
    fn import_alias(&self, s: &Struct, n: &TypeName) -> String {
        let path = format!("{}{}", self.opts.import_prefix, self.package_path(n));
        self.imports(s).remove(&path).unwrap_or_else(|| self.go_package(n))
    }

    fn tag(&self, m: &Member) -> String {
        if self.opts.tag_name.is_empty() {
            format!("`{}`", m.name)
        } else {
            format!("`{}:\"{}\"`", self.opts.tag_name, m.name)
        }
    }

    // ------------------------------------------------------------------------------------------------ the file

    fn file(&self, s: &Struct, ms: &[M<'_>]) -> String {
        let t = self.type_name(&s.name);
        let mut w = CodeWriter::new("\t");
        w.lines(banner_text(Some(&s.span.file.display().to_string())));
        w.blank();
        w.line(format!("package {}", self.go_package(&s.name)));
        w.blank();
        w.line("import (");
        w.indent();
        for std in ["encoding/binary", "fmt", "math", "math/bits"] {
            w.line(format!("\"{std}\""));
        }
        let imports = self.imports(s);
        if !imports.is_empty() {
            w.blank();
        }
        for (path, name) in imports {
            let last = path.rsplit('/').next().unwrap_or("");
            if name == last {
                w.line(format!("\"{path}\""));
            } else {
                w.line(format!("{name} \"{path}\""));
            }
        }
        w.dedent();
        w.line(")");
        w.blank();
        w.line("var _ = binary.BigEndian");
        w.line("var _ = fmt.Errorf");
        w.blank();
        w.line("const _ = math.Pi");
        w.line("const _ = bits.UintSize");
        w.blank();
        if self.opts.fingerprint {
            w.line(format!("const {} uint64 = 0x{:016x}", self.hash_const(s), s.fingerprint));
        } else {
            w.line(format!("const {} uint64 = 0x{:016x}", self.hash_const(s), s.base_hash));
        }
        w.blank();
        if !s.consts.is_empty() {
            w.line("// LCM constants");
            w.block("const (", ")", |w| {
                let rows: Vec<(Option<&str>, [String; 3])> = s
                    .consts
                    .iter()
                    .map(|c| {
                        let lit = const_literal(c).replace('X', "x").replace('E', "e");
                        let cols =
                            [format!("{t}_{}", exported(&c.name)), prim_type(c.ty).to_owned(), format!("= {lit}")];
                        (c.doc.as_deref(), cols)
                    })
                    .collect();
                aligned(w, &rows);
            });
            w.blank();
        }
        self.struct_decl(&mut w, s, ms, &t);
        self.copy(&mut w, ms, &t);
        self.encode_fns(&mut w, s, ms, &t);
        self.decode_fns(&mut w, s, ms, &t);
        self.getters(&mut w, s, ms, &t);
        if !self.opts.fingerprint {
            self.fingerprint_fn(&mut w, s, ms, &t);
        }
        self.size(&mut w, s, ms, &t);
        w.finish()
    }

    fn struct_decl(&self, w: &mut CodeWriter, s: &Struct, ms: &[M<'_>], t: &str) {
        w.doc("// ", s.doc.as_deref());
        w.block(format!("type {t} struct {{"), "}", |w| {
            let rows: Vec<(Option<&str>, [String; 3])> =
                ms.iter().map(|m| (m.m.doc.as_deref(), [m.field.clone(), m.type_from(0), self.tag(m.m)])).collect();
            aligned(w, &rows);
        });
        w.blank();
    }

    /// `Copy`: values of fixed-size parts are copied by assignment, slices and types with slices or strings in
    /// them element by element.
    fn copy(&self, w: &mut CodeWriter, ms: &[M<'_>], t: &str) {
        w.line("// Copy creates a deep copy");
        w.block(format!("func (x *{t}) Copy() (p {t}) {{"), "}", |w| {
            for m in ms {
                let by_value = m.m.all_dims_fixed() && !matches!(m.elem, Elem::Struct { fixed: None, .. });
                if by_value {
                    w.line(format!("p.{0} = x.{0}", m.field));
                    continue;
                }
                let by_value_from =
                    m.m.dims
                        .iter()
                        .rposition(|d| !d.is_fixed())
                        .map_or(0, |i| i + 1)
                        .max(if matches!(m.elem, Elem::Struct { fixed: None, .. }) { m.m.dims.len() } else { 0 });
                copy_level(w, m, 0, by_value_from, &format!("p.{}", m.field), &format!("x.{}", m.field));
            }
            w.line("return");
        });
        w.blank();
    }

    /// `name_tFingerprint(path ...uint64)`: lcm-gen's recursive computation, one term per struct member.
    fn fingerprint_fn(&self, w: &mut CodeWriter, s: &Struct, ms: &[M<'_>], t: &str) {
        let k = self.hash_const(s);
        w.line("// Fingerprint generates the LCM fingerprint value for this message");
        w.block(format!("func {t}_Fingerprint(path ...uint64) uint64 {{"), "}", |w| {
            w.block("for _, v := range path {", "}", |w| {
                w.block(format!("if v == {k} {{"), "}", |w| {
                    w.line("return 0");
                });
            });
            w.line(format!("path = append(path, {k})"));
            let mut sum = k.clone();
            for m in ms {
                if let Some((st, _)) = &m.strukt {
                    let _ = write!(sum, "+\n\t{st}_Fingerprint(path...)");
                }
            }
            w.lines(format!("return bits.RotateLeft64({sum}, 1)"));
        });
        w.blank();
    }

    /// One `XGet()` per count member: the common length of every slice it sizes.
    fn getters(&self, w: &mut CodeWriter, s: &Struct, ms: &[M<'_>], t: &str) {
        for c in self.counts(s) {
            let Some(cm) = ms.iter().find(|m| m.m.name == c.name) else { continue };
            let MemberType::Primitive(cp) = c.ty else { continue };
            let ty = prim_type(cp);
            let method = format!("{}Get", cm.field);
            w.line(format!("// {method}() returns the value of dynamic array size attribute"));
            w.line(format!("// {t}.{}.", c.name));
            w.line("// And validates that the size is correct for all fields in which it is used.");
            w.block(format!("func (p *{t}) {method}() ({ty}, error) {{"), "}", |w| {
                w.line("v, ok := 0, false");
                for m in ms {
                    for (j, d) in m.m.dims.iter().enumerate() {
                        if !matches!(d, Dim::Variable { member } if *member == c.name) {
                            continue;
                        }
                        let mut expr = format!("p.{}", m.field);
                        for i in 0..j {
                            w.line(format!("for i{i} := range {expr} {{"));
                            w.indent();
                            let _ = write!(expr, "[i{i}]");
                        }
                        w.line(format!("if l := len({expr}); !ok {{"));
                        w.line("\tv, ok = l, true");
                        w.line("} else if l != v {");
                        w.line(format!(
                            "\treturn 0, fmt.Errorf(\"lcm: {}: %d elements in {}, but %d in an earlier array sized by {}\", l, v)",
                            s.name, m.m.name, c.name
                        ));
                        w.line("}");
                        for _ in 0..j {
                            w.dedent();
                            w.line("}");
                        }
                    }
                }
                w.block("if !ok {", "}", |w| {
                    w.line(format!("return p.{}, nil", cm.field));
                });
                if cp != Primitive::Int64 {
                    let max = match cp {
                        Primitive::Int8 => "math.MaxInt8",
                        Primitive::Int16 => "math.MaxInt16",
                        _ => "math.MaxInt32",
                    };
                    w.block(format!("if v > {max} {{"), "}", |w| {
                        w.line(format!(
                            "return 0, fmt.Errorf(\"lcm: {}: %d elements do not fit the {} count {}\", v)",
                            s.name,
                            cp.lcm_name(),
                            c.name
                        ));
                    });
                }
                w.line(format!("p.{} = {ty}(v)", cm.field));
                w.line(format!("return p.{}, nil", cm.field));
            });
            w.blank();
        }
    }

    /// `Size()`: the encoded body's size; sets and checks the count members first, as lcm-gen's does.
    fn size(&self, w: &mut CodeWriter, s: &Struct, ms: &[M<'_>], t: &str) {
        w.line("// Size returns the size of this message in bytes");
        w.block(format!("func (p *{t}) Size() (size int, err error) {{"), "}", |w| {
            let plan = StructPlan::new(&self.input.layout, s);
            if let Some(n) = plan.fixed {
                w.line(format!("return {n}, nil"));
                return;
            }
            self.call_getters(w, s, ms, "return 0, err");
            let fixed: usize = ms.iter().filter_map(|m| m.fixed).sum();
            if fixed > 0 {
                w.line(format!("size = {fixed}"));
            }
            for m in ms.iter().filter(|m| m.fixed.is_none()) {
                size_member(w, m);
            }
            w.line("return size, nil");
        });
    }

    /// Calls every count getter, so the counts match the slices.
    pub(super) fn call_getters(&self, w: &mut CodeWriter, s: &Struct, ms: &[M<'_>], on_error: &str) {
        for c in self.counts(s) {
            let Some(cm) = ms.iter().find(|m| m.m.name == c.name) else { continue };
            w.block(format!("if _, err := p.{}Get(); err != nil {{", cm.field), "}", |w| {
                w.line(on_error);
            });
        }
    }
}

/// Writes rows of columns aligned as gofmt aligns them: a row with a comment above it starts a new section.
fn aligned(w: &mut CodeWriter, rows: &[(Option<&str>, [String; 3])]) {
    let mut start = 0;
    while start < rows.len() {
        let end = rows[start + 1..].iter().position(|r| r.0.is_some()).map_or(rows.len(), |k| start + 1 + k);
        let section = &rows[start..end];
        let width = |i: usize| section.iter().map(|r| r.1[i].chars().count()).max().unwrap_or(0);
        let (w0, w1) = (width(0), width(1));
        for (doc, cols) in section {
            w.doc("// ", *doc);
            let pad0 = w0 - cols[0].chars().count() + 1;
            let pad1 = w1 - cols[1].chars().count() + 1;
            w.line(format!("{}{:pad0$}{}{:pad1$}{}", cols[0], "", cols[1], "", cols[2]));
        }
        start = end;
    }
}

/// Copies dimension `level` onwards of a member from `src` to `dst`; from `by_value_from` on, by assignment.
fn copy_level(w: &mut CodeWriter, m: &M<'_>, level: usize, by_value_from: usize, dst: &str, src: &str) {
    if level >= by_value_from {
        if level == m.m.dims.len() && matches!(m.elem, Elem::Struct { fixed: None, .. }) {
            w.line(format!("{dst} = {src}.Copy()"));
        } else {
            w.line(format!("{dst} = {src}"));
        }
        return;
    }
    let i = format!("i{level}");
    if !m.m.dims[level].is_fixed() {
        w.block(format!("if {src} != nil {{"), "}", |w| {
            w.line(format!("{dst} = make({}, len({src}))", m.type_from(level)));
            if level + 1 >= by_value_from {
                w.line(format!("copy({dst}, {src})"));
                return;
            }
            w.block(format!("for {i} := range {src} {{"), "}", |w| {
                copy_level(w, m, level + 1, by_value_from, &format!("{dst}[{i}]"), &format!("{src}[{i}]"));
            });
        });
    } else {
        w.block(format!("for {i} := range {src} {{"), "}", |w| {
            copy_level(w, m, level + 1, by_value_from, &format!("{dst}[{i}]"), &format!("{src}[{i}]"));
        });
    }
}

/// Adds a variable-size member's encoded size to `size`.
fn size_member(w: &mut CodeWriter, m: &M<'_>) {
    let dims = &m.m.dims;
    // Dimensions after the last variable one are fixed: with a fixed-size element they are one chunk.
    let last_var = dims.iter().rposition(|d| !d.is_fixed());
    let (loop_to, chunk) = match (m.elem.fixed(), last_var) {
        (Some(e), Some(lv)) => {
            let tail: usize =
                dims[lv + 1..].iter().map(|d| if let Dim::Fixed { len, .. } = d { *len } else { 1 }).product();
            (lv, Some(e * tail))
        }
        _ => (dims.len(), None),
    };
    let mut expr = format!("p.{}", m.field);
    let mut depth = 0;
    for i in 0..loop_to {
        w.line(format!("for i{i} := range {expr} {{"));
        w.indent();
        let _ = write!(expr, "[i{i}]");
        depth += 1;
    }
    match (chunk, m.elem) {
        (Some(c), _) => {
            w.line(format!("size += {c} * len({expr})"));
        }
        (None, Elem::Str) => {
            w.line(format!("size += 5 + len({expr})"));
        }
        (None, Elem::Struct { .. }) => {
            w.block(format!("if n, err := {expr}.Size(); err != nil {{"), "} else {", |w| {
                w.line("return 0, err");
            });
            w.line("\tsize += n");
            w.line("}");
        }
        (None, e) => {
            w.line(format!("size += {}", e.fixed().unwrap_or(0)));
        }
    }
    for _ in 0..depth {
        w.dedent();
        w.line("}");
    }
}

/// The primitive a member's elements are written as on the wire (an enum is an `int32`), or `None` for a string
/// or a struct; shared by encode and decode.
fn prim_of(m: &M<'_>) -> Option<Primitive> {
    match m.elem {
        Elem::Prim(p) => Some(p),
        Elem::Enum => Some(Primitive::Int32),
        _ => None,
    }
}
