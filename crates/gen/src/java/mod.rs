//! The Java generator: classes with lcm-gen's Java API, encoding byte for byte as lcm-gen's do, checked and fast.
//!
//! # What it writes
//!
//! For each struct `pkg.name_t`, `<pkg path>/name_t.java` holding `public final class name_t` with the same API as
//! `lcm-gen -j` (public fields of the same Java types, `encode(DataOutput)`, `_encodeRecursive`,
//! `_decodeRecursive`, `_decodeRecursiveFactory`, constructors from `DataInput` and `byte[]`, `copy()`,
//! `LCM_FINGERPRINT`, `LCM_FINGERPRINT_BASE`, `_hashRecursive`, the constants), so that code written against
//! lcm-gen's classes, and LCM's own `lcm.jar`, work unchanged. The package is the type's (after `--package-prefix`),
//! or `--jdefaultpkg` for a type without one; `--jdecl` is what follows the class name. Enums (deprecated in LCM)
//! become lcm-gen's enum classes holding `int value`. `nerve_lcm/Codec.java` (the runtime, [`RUNTIME`]) is written at
//! the root of the output directory; the classes need only it and `lcm.jar` (or a drop-in for its `lcm.lcm`
//! package). Every file is pure ASCII (other characters as `\u` escapes), so no compiler encoding setting matters.
//!
//! # Design
//!
//! lcm-gen's classes read and write one number at a time through `DataInput` / `DataOutput`. These decode through
//! `nerve_lcm.Codec.Reader`, which reads an `LCMDataInputStream`'s buffer in place (and any other `DataInput` a
//! step at a time), and encode into a per-thread `Codec.Writer` that reaches the `DataOutput` in one write. The
//! runs of fixed-size members from the plan are bounds-checked once; a count is checked against the bytes that
//! can back it before its array is allocated, so a hostile message gets an `IOException`, never a huge allocation;
//! recursive types count their depth. Strings are UTF-8 as in every other LCM language, where lcm-gen's Java writes
//! the low byte of each UTF-16 unit (the same bytes for ASCII).
//!
//! Members are always reached through `this.`, so that generated locals never shadow them; names Java cannot use
//! (a keyword, a member named like a package the class must reach) are reported as [`GenError`]s.

mod code;

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use nerve_types::{ConstValue, Enum, Member, MemberType, Primitive, Span, Struct, TypeName};

use crate::plan::StructPlan;
use crate::writer::CodeWriter;
use crate::{GenError, GeneratedFile, Input, Options};

/// The runtime every generated class uses, written as `nerve_lcm/Codec.java` at the output root.
pub const RUNTIME: &str = include_str!("Codec.java");

const LANG: &str = "java";

/// Java's keywords and literals, which cannot name anything.
const KEYWORDS: &[&str] = &[
    "abstract",
    "assert",
    "boolean",
    "break",
    "byte",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extends",
    "false",
    "final",
    "finally",
    "float",
    "for",
    "goto",
    "if",
    "implements",
    "import",
    "instanceof",
    "int",
    "interface",
    "long",
    "native",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "short",
    "static",
    "strictfp",
    "super",
    "switch",
    "synchronized",
    "this",
    "throw",
    "throws",
    "transient",
    "true",
    "try",
    "void",
    "volatile",
    "while",
    "_",
];

/// Static names of the generated class, which a constant (sharing the fields' namespace) cannot take.
const CLASS_FIELDS: &[&str] = &["LCM_FINGERPRINT", "LCM_FINGERPRINT_BASE"];

/// Generates Java classes for every input type, plus `nerve_lcm/Codec.java`.
pub fn generate(input: &Input<'_>, opts: &Options) -> Result<Vec<GeneratedFile>, GenError> {
    let g = Gen::new(input, opts)?;
    let mut files = vec![GeneratedFile { path: PathBuf::from("nerve_lcm/Codec.java"), contents: RUNTIME.to_owned() }];
    for s in input.structs() {
        files.push(GeneratedFile { path: g.file_path(&s.name), contents: ascii(&g.struct_class(s)) });
    }
    for e in input.enums() {
        files.push(GeneratedFile { path: g.file_path(&e.name), contents: ascii(&g.enum_class(e)) });
    }
    Ok(files)
}

struct Gen<'a> {
    input: &'a Input<'a>,
    prefix: String,
    default_package: String,
    decl: String,
    recursive: HashSet<TypeName>,
}

fn err(span: &Span, message: String) -> GenError {
    GenError { span: span.clone(), language: LANG, message }
}

fn check_ident(span: &Span, what: &str, name: &str) -> Result<(), GenError> {
    let ok = name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    if !ok {
        return Err(err(span, format!("{what} '{name}' is not a Java identifier")));
    }
    if KEYWORDS.contains(&name) {
        return Err(err(span, format!("{what} '{name}' is a Java keyword")));
    }
    if name.starts_with("_nerve") {
        return Err(err(span, format!("{what} '{name}': names starting with _nerve are reserved for generated code")));
    }
    Ok(())
}

/// `text` with every character outside ASCII written as Java's `\uXXXX` (UTF-16 units), which javac reads the same
/// whatever its source encoding.
fn ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        }
    }
    out
}

impl<'a> Gen<'a> {
    fn new(input: &'a Input<'a>, opts: &Options) -> Result<Gen<'a>, GenError> {
        let default_package = if opts.java_default_package.is_empty() {
            "lcmtypes".to_owned()
        } else {
            opts.java_default_package.clone()
        };
        let g = Gen {
            input,
            prefix: opts.package_prefix.clone(),
            default_package,
            decl: opts.java_decl.clone(),
            recursive: crate::recursive_types(&input.checked.schema),
        };
        for s in input.structs() {
            check_ident(&s.span, "type name", &s.name.name)?;
            for p in g.package(&s.name).split('.') {
                check_ident(&s.span, "package name", p)?;
            }
            // A field named like the first part of a package the class names in an expression (a static call)
            // would hide that package from javac.
            let mut roots: HashSet<String> = HashSet::from(["nerve_lcm".to_owned(), "java".to_owned()]);
            for m in &s.members {
                if let MemberType::Struct(n) | MemberType::Enum(n) = &m.ty {
                    roots.insert(g.package(n).split('.').next().unwrap_or_default().to_owned());
                }
            }
            for m in &s.members {
                check_ident(&m.span, "member name", &m.name)?;
                if roots.contains(&m.name) {
                    return Err(err(
                        &m.span,
                        format!("member name '{}' would hide the Java package of that name from the class", m.name),
                    ));
                }
            }
            for c in &s.consts {
                check_ident(&c.span, "constant name", &c.name)?;
                if CLASS_FIELDS.contains(&c.name.as_str()) || s.members.iter().any(|m| m.name == c.name) {
                    return Err(err(&c.span, format!("constant name '{}' clashes with a field of the class", c.name)));
                }
                if roots.contains(&c.name) {
                    return Err(err(
                        &c.span,
                        format!("constant name '{}' would hide the Java package of that name from the class", c.name),
                    ));
                }
            }
        }
        for e in input.enums() {
            check_ident(&e.span, "enum name", &e.name.name)?;
            for p in g.package(&e.name).split('.') {
                check_ident(&e.span, "package name", p)?;
            }
            for v in &e.values {
                check_ident(&e.span, "enum value", &v.name)?;
                if v.name == "value" || v.name == "LCM_FINGERPRINT" {
                    return Err(err(&e.span, format!("enum value '{}' clashes with a field of the class", v.name)));
                }
            }
        }
        Ok(g)
    }

    /// The Java package of a type: the prefix, then its own package, or the default package if both are empty.
    fn package(&self, n: &TypeName) -> String {
        let parts: Vec<&str> = self.prefix.split('.').chain(n.package.split('.')).filter(|p| !p.is_empty()).collect();
        if parts.is_empty() {
            self.default_package.clone()
        } else {
            parts.join(".")
        }
    }

    /// The fully qualified Java class of a type.
    fn class(&self, n: &TypeName) -> String {
        format!("{}.{}", self.package(n), n.name)
    }

    fn file_path(&self, n: &TypeName) -> PathBuf {
        let mut p: PathBuf = self.package(n).split('.').collect();
        p.push(format!("{}.java", n.name));
        p
    }

    /// The Java type of one element of a member.
    fn elem_type(&self, ty: &MemberType) -> String {
        match ty {
            MemberType::Primitive(p) => prim_type(*p).to_owned(),
            MemberType::Struct(n) | MemberType::Enum(n) => self.class(n),
        }
    }

    fn banner(w: &mut CodeWriter) {
        w.line("/* LCM type definition class file");
        w.line(" * This file was automatically generated by nerve gen");
        w.line(" * DO NOT MODIFY BY HAND!!!!");
        w.line(" */");
        w.blank();
    }

    fn struct_class(&self, s: &Struct) -> String {
        let plan = StructPlan::new(&self.input.layout, s);
        let me = self.class(&s.name);
        let mut w = CodeWriter::new("    ");
        Self::banner(&mut w);
        w.line(format!("package {};", self.package(&s.name)));
        w.blank();
        javadoc(&mut w, s.doc.as_deref());
        let decl = if self.decl.is_empty() { String::new() } else { format!(" {}", self.decl) };
        w.line(format!("public final class {}{decl}", s.name.name));
        w.block("{", "}", |w| {
            for m in &s.members {
                javadoc(w, m.doc.as_deref());
                w.line(format!("public {} {}{};", self.elem_type(&m.ty), m.name, "[]".repeat(m.dims.len())));
                w.blank();
            }
            method(w, format!("public {}()", s.name.name), |w| {
                // lcm-gen allocates the arrays whose every dimension is fixed.
                for m in s.members.iter().filter(|m| !m.dims.is_empty() && m.all_dims_fixed()) {
                    w.line(format!("this.{} = new {};", m.name, self.alloc(m, &[])));
                }
            });
            w.blank();
            w.line(format!("public static final long LCM_FINGERPRINT = 0x{:016x}L;", s.fingerprint));
            w.line(format!("public static final long LCM_FINGERPRINT_BASE = 0x{:016x}L;", s.base_hash));
            w.blank();
            for c in &s.consts {
                javadoc(w, c.doc.as_deref());
                w.line(format!(
                    "public static final {} {} = {};",
                    prim_type(c.ty),
                    c.name,
                    const_literal(c.ty, c.value)
                ));
            }
            if !s.consts.is_empty() {
                w.blank();
            }
            self.hash_method(w, s, &me);
            self.encode_methods(w, s, &plan);
            w.blank();
            self.decode_methods(w, s, &plan, &me);
            w.blank();
            self.copy_method(w, s, &me);
        });
        w.finish()
    }

    /// lcm-gen's `_hashRecursive`: the fingerprint computed at run time through the classes of the members, which
    /// lcm-gen's classes call on these (the constant above is the same value).
    fn hash_method(&self, w: &mut CodeWriter, s: &Struct, me: &str) {
        method(w, "public static long _hashRecursive(java.util.ArrayList<Class<?>> classes)", |w| {
            w.line(format!("if (classes.contains({me}.class))"));
            w.line("    return 0L;");
            w.line(format!("classes.add({me}.class);"));
            w.line("long hash = LCM_FINGERPRINT_BASE");
            for m in &s.members {
                if let MemberType::Struct(n) | MemberType::Enum(n) = &m.ty {
                    w.line(format!("     + {}._hashRecursive(classes)", self.class(n)));
                }
            }
            w.line("    ;");
            w.line("classes.remove(classes.size() - 1);");
            w.line("return (hash<<1) + ((hash>>63)&1);");
        });
        w.blank();
    }

    fn encode_methods(&self, w: &mut CodeWriter, s: &Struct, plan: &StructPlan) {
        method(w, "public void encode(java.io.DataOutput outs) throws java.io.IOException", |w| {
            w.line("nerve_lcm.Codec.Writer _w = nerve_lcm.Codec.writer();");
            w.block("try {", "}", |w| {
                w.line("_w.need(8);");
                w.line("_w.i64u(LCM_FINGERPRINT);");
                w.line("_w.sink = outs;");
                w.line("_nerveEncode(_w);");
                w.line("_w.flush();");
            });
            w.block("finally {", "}", |w| {
                w.line("_w.release();");
            });
        });
        w.blank();
        method(w, "public void _encodeRecursive(java.io.DataOutput outs) throws java.io.IOException", |w| {
            w.line("nerve_lcm.Codec.Writer _w = nerve_lcm.Codec.writer();");
            w.block("try {", "}", |w| {
                w.line("_w.sink = outs;");
                w.line("_nerveEncode(_w);");
                w.line("_w.flush();");
            });
            w.block("finally {", "}", |w| {
                w.line("_w.release();");
            });
        });
        w.blank();
        method(w, "public void _nerveEncode(nerve_lcm.Codec.Writer _w) throws java.io.IOException", |w| {
            self.encode_body(w, s, plan);
        });
    }

    fn decode_methods(&self, w: &mut CodeWriter, s: &Struct, plan: &StructPlan, me: &str) {
        let name = &s.name.name;
        method(w, format!("public {name}(byte[] data) throws java.io.IOException"), |w| {
            w.line("nerve_lcm.Codec.Reader _r = new nerve_lcm.Codec.Reader(data, 0, data.length);");
            w.line("_r.fingerprint(LCM_FINGERPRINT);");
            w.line("_nerveDecode(_r);");
        });
        w.blank();
        method(w, format!("public {name}(java.io.DataInput ins) throws java.io.IOException"), |w| {
            w.line("nerve_lcm.Codec.Reader _r = nerve_lcm.Codec.Reader.of(ins);");
            w.line("_r.fingerprint(LCM_FINGERPRINT);");
            w.line("_nerveDecode(_r);");
            w.line("_r.finish();");
        });
        w.blank();
        method(
            w,
            format!("public static {me} _decodeRecursiveFactory(java.io.DataInput ins) throws java.io.IOException"),
            |w| {
                w.line(format!("{me} o = new {me}();"));
                w.line("o._decodeRecursive(ins);");
                w.line("return o;");
            },
        );
        w.blank();
        method(w, "public void _decodeRecursive(java.io.DataInput ins) throws java.io.IOException", |w| {
            w.line("nerve_lcm.Codec.Reader _r = nerve_lcm.Codec.Reader.of(ins);");
            w.line("_nerveDecode(_r);");
            w.line("_r.finish();");
        });
        w.blank();
        // Decodes without the fixed-size arrays the public constructor allocates (decoding replaces them).
        method(w, format!("private {name}(nerve_lcm.Codec.Reader _r) throws java.io.IOException"), |w| {
            w.line("_nerveDecode(_r);");
        });
        w.blank();
        method(
            w,
            format!("public static {me} _nerveDecodeFactory(nerve_lcm.Codec.Reader _r) throws java.io.IOException"),
            |w| {
                w.line(format!("return new {me}(_r);"));
            },
        );
        w.blank();
        method(w, "public void _nerveDecode(nerve_lcm.Codec.Reader _r) throws java.io.IOException", |w| {
            if self.recursive.contains(&s.name) {
                w.line("_r.enter();");
                self.decode_body(w, s, plan);
                w.line("_r.leave();");
            } else {
                self.decode_body(w, s, plan);
            }
        });
    }

    fn enum_class(&self, e: &Enum) -> String {
        let me = self.class(&e.name);
        let name = &e.name.name;
        let mut w = CodeWriter::new("    ");
        Self::banner(&mut w);
        w.line(format!("package {};", self.package(&e.name)));
        w.blank();
        javadoc(&mut w, e.doc.as_deref());
        let decl = if self.decl.is_empty() { String::new() } else { format!(" {}", self.decl) };
        w.line(format!("public final class {name}{decl}"));
        w.block("{", "}", |w| {
            w.line("public int value;");
            w.blank();
            for v in &e.values {
                w.line(format!("public static final int {} = {};", v.name, v.value));
            }
            w.blank();
            w.line(format!("public {name}(int value) {{ this.value = value; }}"));
            w.blank();
            w.line("public int getValue() { return value; }");
            w.blank();
            method(w, "public void _encodeRecursive(java.io.DataOutput outs) throws java.io.IOException", |w| {
                w.line("outs.writeInt(this.value);");
            });
            w.blank();
            method(w, "public void encode(java.io.DataOutput outs) throws java.io.IOException", |w| {
                w.line("outs.writeLong(LCM_FINGERPRINT);");
                w.line("_encodeRecursive(outs);");
            });
            w.blank();
            method(
                w,
                format!("public static {me} _decodeRecursiveFactory(java.io.DataInput ins) throws java.io.IOException"),
                |w| {
                    w.line(format!("{me} o = new {me}(0);"));
                    w.line("o._decodeRecursive(ins);");
                    w.line("return o;");
                },
            );
            w.blank();
            method(w, "public void _decodeRecursive(java.io.DataInput ins) throws java.io.IOException", |w| {
                w.line("this.value = ins.readInt();");
            });
            w.blank();
            method(w, format!("public {name}(java.io.DataInput ins) throws java.io.IOException"), |w| {
                w.line("if (ins.readLong() != LCM_FINGERPRINT)");
                w.line("    throw new java.io.IOException(\"LCM Decode error: bad fingerprint\");");
                w.line("_decodeRecursive(ins);");
            });
            w.blank();
            method(w, format!("public {me} copy()"), |w| {
                w.line(format!("return new {me}(this.value);"));
            });
            w.blank();
            method(w, "public static final long _hashRecursive(java.util.ArrayList<Class<?>> clss)", |w| {
                w.line("return LCM_FINGERPRINT;");
            });
            w.blank();
            w.line(format!("public static final long LCM_FINGERPRINT = 0x{:016x}L;", e.hash));
        });
        w.finish()
    }

    /// `T[d0][d1]...` for a `new` of member `m`, with the dimensions' Java expressions (`dims[i]`, or each fixed
    /// length and `(int) this.count` when `dims` is empty).
    fn alloc(&self, m: &Member, dims: &[String]) -> String {
        let mut s = self.elem_type(&m.ty);
        for (i, d) in m.dims.iter().enumerate() {
            match dims.get(i) {
                Some(e) => {
                    let _ = write!(s, "[{e}]");
                }
                None => {
                    let _ = write!(s, "[{}]", dim_expr(d, true));
                }
            }
        }
        s
    }
}

/// A dimension's Java expression: the fixed length, or the count member (cast to int for `new`).
fn dim_expr(d: &nerve_types::Dim, cast: bool) -> String {
    match d {
        nerve_types::Dim::Fixed { len, .. } => len.to_string(),
        nerve_types::Dim::Variable { member } if cast => format!("(int) this.{member}"),
        nerve_types::Dim::Variable { member } => format!("this.{member}"),
    }
}

/// A method or constructor: its signature, then its body in braces on their own lines, as lcm-gen writes them.
fn method(w: &mut CodeWriter, signature: impl AsRef<str>, body: impl FnOnce(&mut CodeWriter)) {
    w.line(signature);
    w.block("{", "}", body);
}

fn javadoc(w: &mut CodeWriter, doc: Option<&str>) {
    if let Some(doc) = doc {
        w.line("/**");
        // "*/" inside a comment would end it early.
        w.doc(" * ", Some(&doc.replace("*/", "*&#47;")));
        w.line(" */");
    }
}

/// The Java type lcm-gen gives a primitive.
fn prim_type(p: Primitive) -> &'static str {
    match p {
        Primitive::Int8 | Primitive::Byte => "byte",
        Primitive::Int16 => "short",
        Primitive::Int32 => "int",
        Primitive::Int64 => "long",
        Primitive::Float => "float",
        Primitive::Double => "double",
        Primitive::String => "String",
        Primitive::Boolean => "boolean",
    }
}

/// A constant's value as a Java literal of its type.
fn const_literal(ty: Primitive, v: ConstValue) -> String {
    match (ty, v) {
        (Primitive::Int8 | Primitive::Byte, ConstValue::Int(i)) => format!("(byte) {i}"),
        (Primitive::Int16, ConstValue::Int(i)) => format!("(short) {i}"),
        (Primitive::Int64, ConstValue::Int(i)) => format!("{i}L"),
        (_, ConstValue::Int(i)) => i.to_string(),
        (Primitive::Float, ConstValue::Float(f)) => float_literal(f as f32 as f64, "f", "Float"),
        (_, ConstValue::Float(f)) => float_literal(f, "", "Double"),
    }
}

fn float_literal(f: f64, suffix: &str, class: &str) -> String {
    if f.is_nan() {
        format!("{class}.NaN")
    } else if f.is_infinite() {
        format!("{class}.{}_INFINITY", if f > 0.0 { "POSITIVE" } else { "NEGATIVE" })
    } else if suffix == "f" {
        format!("{:?}f", f as f32)
    } else {
        format!("{f:?}")
    }
}
