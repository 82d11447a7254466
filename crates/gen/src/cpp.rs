//! The C++ generator: header-only classes with lcm-gen's C++ API, fast checked codecs, and views.
//!
//! # What it writes
//!
//! For each struct `pkg.name_t`, `<pkg path>/name_t.hpp` holding `namespace pkg { class name_t; class name_t_view; }`,
//! with the same public API as `lcm-gen -x --cpp-std c++11` (members with the same C++ types, `encode`, `decode`,
//! `getEncodedSize`, `getHash`, `getTypeName`, `_encodeNoHash`, `_decodeNoHash`, `_getEncodedSizeNoHash`,
//! `_computeHash`, constants as `static constexpr`), so code written against lcm-gen's classes compiles unchanged
//! after regenerating. `nerve_lcm.hpp` (the runtime, [`RUNTIME`]) is written at the root of the output directory;
//! nothing else is needed (no liblcm).
//!
//! `name_t::View` (also spelled `name_t_view`) reads members straight from an encoded buffer: each member has an
//! accessor of the same name (`ok_()` / `from_()` for members called `ok` / `from`, which the view itself uses).
//! Members whose offset is constant (everything before them has a fixed size) are read at that offset; later ones
//! skip the variable-size members before them without allocating. Errors never throw: see the header of
//! `nerve_lcm.hpp` for the `ok()` style.
//!
//! # Design
//!
//! Consecutive members of fixed encoded size form runs that are bounds-checked once and then encoded or decoded
//! without further checks; primitive arrays go through one bulk byte-swap loop, vectors are resized once after the
//! count has been checked against the bytes that remain (`nerve_lcm::check_dims`), and recursive types carry a depth
//! so hostile nesting cannot overflow the stack.
//!
//! Mutually recursive types cannot be split into one class per header (each needs the other complete), so every type
//! of a strongly connected component of the type graph is defined in one block that each of their headers holds,
//! under one include guard; lcm-gen's C++ output does not compile for such types at all.
//!
//! Enums (deprecated in LCM; lcm-gen's C++ emitter skips them) become a class holding `int32_t value`, with the
//! enum's values as constants and the same encode/decode API. A struct that contains itself by value (which LCM
//! accepts but no value could ever finish) is rejected with a [`GenError`].

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;

use nerve_types::{ConstValue, Dim, Enum, Member, MemberType, Primitive, Span, Struct, TypeName};

use crate::plan::{Seg, StructPlan};
use crate::writer::CodeWriter;
use crate::{GenError, GeneratedFile, Input, Options};

/// The runtime header every generated header includes, written as `nerve_lcm.hpp` at the output root.
pub const RUNTIME: &str = include_str!("../runtime/cpp/nerve_lcm.hpp");

const LANG: &str = "cpp";

/// C++ keywords and alternative tokens (C++20 included), which cannot name anything.
const KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
];

/// Names the generated message class uses itself, which a member or constant cannot take.
const CLASS_NAMES: &[&str] = &[
    "encode",
    "decode",
    "getEncodedSize",
    "getHash",
    "getTypeName",
    "_encodeNoHash",
    "_decodeNoHash",
    "_getEncodedSizeNoHash",
    "_computeHash",
    "View",
];

/// Names the view class uses itself; a member with one of these names gets an accessor with `_` appended.
const VIEW_NAMES: &[&str] = &["ok", "from"];

/// Generates C++ headers for every input type, plus `nerve_lcm.hpp`.
pub fn generate(input: &Input<'_>, opts: &Options) -> Result<Vec<GeneratedFile>, GenError> {
    let g = Gen::new(input, opts)?;
    let mut files = vec![GeneratedFile { path: PathBuf::from("nerve_lcm.hpp"), contents: RUNTIME.to_owned() }];
    for s in input.structs() {
        files.push(GeneratedFile { path: g.header_path(&s.name), contents: g.struct_header(s)? });
    }
    for e in input.enums() {
        files.push(GeneratedFile { path: g.header_path(&e.name), contents: g.enum_header(e) });
    }
    Ok(files)
}

struct Gen<'a> {
    input: &'a Input<'a>,
    prefix: String,
    /// Index into `schema.structs` -> its strongly connected component (a list of indices).
    scc_of: HashMap<TypeName, usize>,
    sccs: Vec<Vec<usize>>,
}

fn err(span: &Span, message: String) -> GenError {
    GenError { span: span.clone(), language: LANG, message }
}

fn check_ident(span: &Span, what: &str, name: &str) -> Result<(), GenError> {
    let portable = !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !portable {
        return Err(err(span, format!("{what} '{name}' is not a C++ identifier (letters, digits, _)")));
    }
    if KEYWORDS.contains(&name) {
        return Err(err(span, format!("{what} '{name}' is a C++ keyword")));
    }
    if name.starts_with("_nerve") {
        return Err(err(span, format!("{what} '{name}': names starting with _nerve are reserved for generated code")));
    }
    Ok(())
}

impl<'a> Gen<'a> {
    fn new(input: &'a Input<'a>, opts: &Options) -> Result<Gen<'a>, GenError> {
        let schema = &input.checked.schema;
        // Names.
        for s in input.structs() {
            check_ident(&s.span, "type name", &s.name.name)?;
            for p in s.name.package_path() {
                check_ident(&s.span, "package name", p)?;
            }
            for m in &s.members {
                check_ident(&m.span, "member name", &m.name)?;
                if CLASS_NAMES.contains(&m.name.as_str()) || m.name == s.name.name {
                    return Err(err(&m.span, format!("member name '{}' clashes with the generated C++ class", m.name)));
                }
            }
            for c in &s.consts {
                check_ident(&c.span, "constant name", &c.name)?;
                if CLASS_NAMES.contains(&c.name.as_str()) || c.name == s.name.name {
                    return Err(err(
                        &c.span,
                        format!("constant name '{}' clashes with the generated C++ class", c.name),
                    ));
                }
            }
        }
        for e in input.enums() {
            check_ident(&e.span, "enum name", &e.name.name)?;
            for p in e.name.package_path() {
                check_ident(&e.span, "package name", p)?;
            }
            for v in &e.values {
                check_ident(&e.span, "enum value", &v.name)?;
                if CLASS_NAMES.contains(&v.name.as_str()) || v.name == "value" || v.name == e.name.name {
                    return Err(err(&e.span, format!("enum value '{}' clashes with the generated C++ class", v.name)));
                }
            }
        }
        for s in &schema.structs {
            for p in s.name.package_path() {
                check_ident(&s.span, "package name", p)?;
            }
        }
        let sccs = tarjan(schema);
        let mut scc_of = HashMap::new();
        for (i, c) in sccs.iter().enumerate() {
            for &s in c {
                scc_of.insert(schema.structs[s].name.clone(), i);
            }
        }
        let g = Gen { input, prefix: opts.package_prefix.clone(), scc_of, sccs };
        // A by-value cycle (a struct containing itself without a variable array in between) cannot be a C++ class.
        for s in input.structs() {
            g.by_value_order(g.scc_of[&s.name])?;
        }
        Ok(g)
    }

    fn schema(&self) -> &'a nerve_types::Schema {
        &self.input.checked.schema
    }

    fn package(&self, n: &TypeName) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        if !self.prefix.is_empty() {
            v.extend(self.prefix.split('.').map(str::to_owned));
        }
        v.extend(n.package_path().into_iter().map(str::to_owned));
        v
    }

    fn header_path(&self, n: &TypeName) -> PathBuf {
        let mut p = PathBuf::new();
        for c in self.package(n) {
            p.push(c);
        }
        p.push(format!("{}.hpp", n.name));
        p
    }

    fn include_name(&self, n: &TypeName) -> String {
        let mut s = self.package(n).join("/");
        if !s.is_empty() {
            s.push('/');
        }
        s.push_str(&n.name);
        s.push_str(".hpp");
        s
    }

    /// `::pkg::name_t`
    fn qual(&self, n: &TypeName) -> String {
        let mut s = String::new();
        for c in self.package(n) {
            s.push_str("::");
            s.push_str(&c);
        }
        s.push_str("::");
        s.push_str(&n.name);
        s
    }

    fn guard(&self, n: &TypeName) -> String {
        let mut s = String::from("NERVE_LCM_");
        for c in self.package(n) {
            s.push_str(&c.to_ascii_uppercase());
            s.push('_');
        }
        s.push_str(&n.name.to_ascii_uppercase());
        s.push_str("_HPP");
        s
    }

    fn open_ns(&self, w: &mut CodeWriter, n: &TypeName) {
        let pk = self.package(n);
        if !pk.is_empty() {
            let open: Vec<String> = pk.iter().map(|c| format!("namespace {c} {{")).collect();
            w.line(open.join(" "));
        }
    }

    fn close_ns(&self, w: &mut CodeWriter, n: &TypeName) {
        let pk = self.package(n);
        if !pk.is_empty() {
            let close: Vec<&str> = pk.iter().map(|_| "}").collect();
            w.line(format!("{} // namespace {}", close.join(" "), pk.join("::")));
        }
    }

    /// The types of one component in an order where every type a class holds by value comes first.
    fn by_value_order(&self, scc: usize) -> Result<Vec<usize>, GenError> {
        let members: &Vec<usize> = &self.sccs[scc];
        let structs = &self.schema().structs;
        let mut state: HashMap<usize, u8> = HashMap::new(); // 1 = in progress, 2 = done
        let mut order = Vec::new();
        fn visit(
            g: &Gen<'_>,
            i: usize,
            members: &[usize],
            state: &mut HashMap<usize, u8>,
            order: &mut Vec<usize>,
        ) -> Result<(), GenError> {
            let structs = &g.schema().structs;
            match state.get(&i) {
                Some(2) => return Ok(()),
                Some(1) => {
                    let s = &structs[i];
                    return Err(err(
                        &s.span,
                        format!(
                            "type '{}' contains itself by value (not inside a variable-length array); no value of it \
                             could ever be finished, and C++ cannot declare it",
                            s.name
                        ),
                    ));
                }
                _ => {}
            }
            state.insert(i, 1);
            for m in &structs[i].members {
                if let MemberType::Struct(n) = &m.ty {
                    if m.all_dims_fixed() {
                        if let Some(j) = structs.iter().position(|s| &s.name == n) {
                            if members.contains(&j) {
                                visit(g, j, members, state, order)?;
                            }
                        }
                    }
                }
            }
            state.insert(i, 2);
            order.push(i);
            Ok(())
        }
        let mut sorted = members.clone();
        sorted.sort_by_key(|&i| structs[i].name.full());
        for i in sorted {
            visit(self, i, members, &mut state, &mut order)?;
        }
        Ok(order)
    }

    fn is_fixed(&self, n: &TypeName) -> Option<usize> {
        self.input.layout.fixed_size(n)
    }

    fn min_size(&self, n: &TypeName) -> usize {
        self.input.layout.min_size(n)
    }

    // ----------------------------------------------------------------------------------------------------------
    // Types

    fn elem_type(&self, ty: &MemberType) -> String {
        match ty {
            MemberType::Primitive(p) => prim_type(*p).to_owned(),
            MemberType::Struct(n) | MemberType::Enum(n) => self.qual(n),
        }
    }

    fn member_decl(&self, m: &Member) -> String {
        let t = self.elem_type(&m.ty);
        if m.all_dims_fixed() {
            let dims: String = m.dims.iter().map(|d| format!("[{}]", fixed_len(d))).collect();
            format!("{t} {}{dims};", m.name)
        } else {
            let mut t = format!(" {t} ");
            for _ in &m.dims {
                t = format!("std::vector<{t}>");
            }
            format!("{} {};", t.trim(), m.name)
        }
    }

    /// The view element protocol type for a member's element type.
    fn view_elem(&self, ty: &MemberType) -> String {
        match ty {
            MemberType::Primitive(Primitive::String) => "nerve_lcm::string_view".into(),
            MemberType::Primitive(p) => format!("nerve_lcm::prim<{}>", prim_type(*p)),
            MemberType::Enum(_) => "nerve_lcm::prim<int32_t>".into(),
            MemberType::Struct(n) => format!("{}_view", self.qual(n)),
        }
    }

    fn view_result(&self, m: &Member) -> String {
        let e = self.view_elem(&m.ty);
        if m.dims.is_empty() {
            match &m.ty {
                MemberType::Primitive(Primitive::String) | MemberType::Struct(_) => e,
                MemberType::Primitive(p) => format!("nerve_lcm::maybe<{}>", prim_type(*p)),
                MemberType::Enum(_) => "nerve_lcm::maybe<int32_t>".into(),
            }
        } else {
            format!("nerve_lcm::array_view<{e}, {}>", m.dims.len())
        }
    }

    fn elem_fixed(&self, ty: &MemberType) -> Option<usize> {
        self.input.layout.elem_fixed_size(ty)
    }

    fn elem_min(&self, ty: &MemberType) -> usize {
        self.input.layout.elem_min_size(ty)
    }

    // ----------------------------------------------------------------------------------------------------------
    // Headers

    fn struct_header(&self, s: &Struct) -> Result<String, GenError> {
        let scc = self.scc_of[&s.name];
        let order = self.by_value_order(scc)?;
        let structs = &self.schema().structs;
        let mut group: Vec<&Struct> = order.iter().map(|&i| &structs[i]).collect();
        let first = group.iter().map(|s| s.name.clone()).min().expect("a component is never empty");
        let in_group: BTreeSet<TypeName> = group.iter().map(|s| s.name.clone()).collect();

        let mut w = CodeWriter::new("    ");
        w.line("// THIS FILE IS GENERATED by nerve gen from LCM types. DO NOT EDIT.");
        if group.len() > 1 {
            let names: Vec<String> = group.iter().map(|s| s.name.full()).collect();
            w.line("//");
            w.line(format!(
                "// These types refer to each other, so each of their headers holds all of them: {}.",
                names.join(", ")
            ));
        }
        let guard = self.guard(&first);
        w.line(format!("#ifndef {guard}"));
        w.line(format!("#define {guard}"));
        w.blank();
        w.line("#include \"nerve_lcm.hpp\"");
        w.blank();
        w.line("#include <string>");
        w.line("#include <vector>");
        let needs_limits =
            group.iter().any(|s| s.consts.iter().any(|c| matches!(c.value, ConstValue::Float(f) if !f.is_finite())));
        if needs_limits {
            w.line("#include <limits>");
        }
        let mut deps: BTreeSet<String> = BTreeSet::new();
        for t in &group {
            for m in &t.members {
                match &m.ty {
                    MemberType::Struct(n) if !in_group.contains(n) => {
                        deps.insert(self.include_name(n));
                    }
                    MemberType::Enum(n) => {
                        deps.insert(self.include_name(n));
                    }
                    _ => {}
                }
            }
        }
        for d in &deps {
            w.line(format!("#include \"{d}\""));
        }
        w.blank();
        group.sort_by_key(|s| order.iter().position(|&i| structs[i].name == s.name));
        for t in &group {
            self.open_ns(&mut w, &t.name);
            w.line(format!("class {};", t.name.name));
            w.line(format!("class {}_view;", t.name.name));
            self.close_ns(&mut w, &t.name);
        }
        for t in &group {
            w.blank();
            self.class_def(&mut w, t);
        }
        for t in &group {
            w.blank();
            self.view_def(&mut w, t);
        }
        for t in &group {
            w.blank();
            self.class_methods(&mut w, t);
            w.blank();
            self.view_methods(&mut w, t);
        }
        w.blank();
        w.line(format!("#endif // {guard}"));
        Ok(w.finish())
    }

    fn class_def(&self, w: &mut CodeWriter, s: &Struct) {
        let name = &s.name.name;
        self.open_ns(w, &s.name);
        w.blank();
        w.doc("/// ", s.doc.as_deref());
        w.line(format!("class {name}"));
        w.line("{");
        w.line("  public:");
        w.indent();
        for m in &s.members {
            w.doc("/// ", m.doc.as_deref());
            if !m.dims.is_empty() {
                let dims: String = m.dims.iter().map(|d| format!("[{}]", dim_text(d))).collect();
                let tn = match &m.ty {
                    MemberType::Primitive(p) => p.lcm_name().to_owned(),
                    MemberType::Struct(n) | MemberType::Enum(n) => n.full(),
                };
                w.line(format!("/// LCM type: {tn}{dims}"));
            }
            w.line(self.member_decl(m));
            w.blank();
        }
        if !s.consts.is_empty() {
            w.dedent();
            w.line("  public:");
            w.indent();
            for c in &s.consts {
                w.doc("/// ", c.doc.as_deref());
                w.line(const_decl(c.ty, &c.name, c.value, &c.text));
            }
            w.blank();
        }
        w.dedent();
        w.line("  public:");
        w.indent();
        w.lines(format!(
            "/// Reads members straight from an encoded message without decoding it (see nerve_lcm.hpp).
typedef {name}_view View;

/// Encodes the message (fingerprint first) into buf[offset, offset + maxlen).
/// @return the number of bytes written, or < 0 when they do not fit or a count member is negative or larger
///   than its vector.
inline int encode(void *buf, int offset, int maxlen) const;

/// The number of bytes encode() writes.
inline int getEncodedSize() const;

/// Decodes a message from buf[offset, offset + maxlen) into this instance. Every length is checked against the
/// bytes that remain before anything is allocated.
/// @return the number of bytes read, or < 0 when the fingerprint differs or the bytes are truncated or malformed.
inline int decode(const void *buf, int offset, int maxlen);

/// The 64-bit fingerprint of the type (the same for every message of this type).
inline static int64_t getHash();

/// Returns \"{name}\".
inline static const char *getTypeName();

// LCM support functions, as lcm-gen writes them. Users should not call these.
inline int _encodeNoHash(void *buf, int offset, int maxlen) const;
inline int _getEncodedSizeNoHash() const;
inline int _decodeNoHash(const void *buf, int offset, int maxlen);
inline static uint64_t _computeHash(const nerve_lcm::hash_ptr *p);

// Nerve's codec (internal): pointers in, the pointer after the member out, 0 on failure.
inline uint8_t *_nerve_encode(uint8_t *_p, uint8_t *_e) const;
inline const uint8_t *_nerve_decode(const uint8_t *_p, const uint8_t *_e, unsigned _depth);
inline uint64_t _nerve_size() const;"
        ));
        if self.is_fixed(&s.name).is_some() {
            w.line("inline uint8_t *_nerve_encode_fixed(uint8_t *_p) const;");
            w.line("inline const uint8_t *_nerve_decode_fixed(const uint8_t *_p);");
        }
        w.dedent();
        w.line("};");
        w.blank();
        self.close_ns(w, &s.name);
    }

    fn view_def(&self, w: &mut CodeWriter, s: &Struct) {
        let name = &s.name.name;
        let fixed = self.is_fixed(&s.name);
        let min = self.min_size(&s.name);
        self.open_ns(w, &s.name);
        w.blank();
        w.line(format!(
            "/// Reads a {} straight from its encoded bytes (see nerve_lcm.hpp for the error style).",
            s.name
        ));
        w.line(format!("class {name}_view"));
        w.line("{");
        w.line("  public:");
        w.indent();
        w.lines(format!(
            "/// An invalid view.
{name}_view() : _nerve_p(0), _nerve_end(0) {{}}
/// A view of an encoded message (fingerprint first): invalid unless the fingerprint matches and buf holds at
/// least the fewest bytes such a message takes.
inline {name}_view(const void *buf, size_t len);
/// The same as the constructor.
static {name}_view from(const void *buf, size_t len) {{ return {name}_view(buf, len); }}
/// Whether the view was found and is well-formed as far as checked so far.
bool ok() const {{ return _nerve_p != 0; }}
"
        ));
        for (k, m) in s.members.iter().enumerate() {
            w.doc("/// ", m.doc.as_deref());
            let _ = k;
            w.line(format!("inline {} {}() const;", self.view_result(m), view_accessor(&m.name)));
        }
        w.blank();
        w.line("// Element protocol and walking (internal).");
        w.line(format!("typedef {name}_view _nerve_result;"));
        w.line(format!("static const bool _nerve_fixed = {};", fixed.is_some()));
        w.line(format!("static const size_t _nerve_size = {}u;", fixed.unwrap_or(0)));
        w.line(format!("static const size_t _nerve_min = {min}u;"));
        w.line(format!("static {name}_view _nerve_invalid() {{ return {name}_view(); }}"));
        w.line(format!("static inline {name}_view _nerve_make(const uint8_t *_p, const uint8_t *_e);"));
        w.line("static inline const uint8_t *_nerve_skip(const uint8_t *_p, const uint8_t *_e, unsigned _depth);");
        w.line("static inline const uint8_t *_nerve_walk(const uint8_t *_p, const uint8_t *_e, unsigned _idx, unsigned _depth);");
        w.line("const uint8_t *_nerve_p;");
        w.line("const uint8_t *_nerve_end;");
        w.dedent();
        w.line("};");
        w.blank();
        self.close_ns(w, &s.name);
    }

    // ----------------------------------------------------------------------------------------------------------
    // Message class methods

    fn class_methods(&self, w: &mut CodeWriter, s: &Struct) {
        let name = &s.name.name;
        let fp = format!("0x{:016x}ULL", s.fingerprint);
        self.open_ns(w, &s.name);
        w.blank();
        w.lines(format!(
            "inline int {name}::encode(void *buf, int offset, int maxlen) const
{{
    if (!buf || offset < 0 || maxlen < 8) return -1;
    uint8_t *_start = static_cast<uint8_t *>(buf) + offset;
    uint8_t *_p = nerve_lcm::store<uint64_t>(_start, {fp});
    _p = _nerve_encode(_p, _start + maxlen);
    if (!_p) return -1;
    return static_cast<int>(_p - _start);
}}

inline int {name}::decode(const void *buf, int offset, int maxlen)
{{
    if (!buf || offset < 0 || maxlen < 8) return -1;
    const uint8_t *_start = static_cast<const uint8_t *>(buf) + offset;
    if (nerve_lcm::load<uint64_t>(_start) != {fp}) return -1;
    const uint8_t *_p = _nerve_decode(_start + 8, _start + maxlen, 0);
    if (!_p) return -1;
    return static_cast<int>(_p - _start);
}}

inline int {name}::getEncodedSize() const
{{
    return nerve_lcm::clamp_int(nerve_lcm::sat_add(8, _nerve_size()));
}}

inline int64_t {name}::getHash()
{{
    return static_cast<int64_t>({fp});
}}

inline const char *{name}::getTypeName()
{{
    return \"{name}\";
}}

inline int {name}::_encodeNoHash(void *buf, int offset, int maxlen) const
{{
    if (!buf || offset < 0 || maxlen < 0) return -1;
    uint8_t *_start = static_cast<uint8_t *>(buf) + offset;
    uint8_t *_p = _nerve_encode(_start, _start + maxlen);
    if (!_p) return -1;
    return static_cast<int>(_p - _start);
}}

inline int {name}::_getEncodedSizeNoHash() const
{{
    return nerve_lcm::clamp_int(_nerve_size());
}}

inline int {name}::_decodeNoHash(const void *buf, int offset, int maxlen)
{{
    if (!buf || offset < 0 || maxlen < 0) return -1;
    const uint8_t *_start = static_cast<const uint8_t *>(buf) + offset;
    const uint8_t *_p = _nerve_decode(_start, _start + maxlen, 0);
    if (!_p) return -1;
    return static_cast<int>(_p - _start);
}}
"
        ));
        // _computeHash
        let children: Vec<&TypeName> = s
            .members
            .iter()
            .filter_map(|m| match &m.ty {
                MemberType::Struct(n) | MemberType::Enum(n) => Some(n),
                _ => None,
            })
            .collect();
        w.line(format!("inline uint64_t {name}::_computeHash(const nerve_lcm::hash_ptr *p)"));
        w.block("{", "}", |w| {
            w.line("for (const nerve_lcm::hash_ptr *fp = p; fp; fp = fp->parent)");
            w.line(format!("    if (fp->v == {name}::getHash) return 0;"));
            if children.is_empty() {
                w.line(format!("uint64_t hash = 0x{:016x}ULL;", s.base_hash));
            } else {
                w.line(format!("const nerve_lcm::hash_ptr cp = {{ p, {name}::getHash }};"));
                w.line(format!("uint64_t hash = 0x{:016x}ULL", s.base_hash));
                for c in &children {
                    w.line(format!("    + {}::_computeHash(&cp)", self.qual(c)));
                }
                w.line("    ;");
            }
            w.line("return nerve_lcm::rotate_hash(hash);");
        });
        w.blank();

        if let Some(size) = self.is_fixed(&s.name) {
            self.fixed_methods(w, s, size);
        } else {
            self.variable_methods(w, s);
        }
        self.close_ns(w, &s.name);
    }

    fn fixed_methods(&self, w: &mut CodeWriter, s: &Struct, size: usize) {
        let name = &s.name.name;
        w.line(format!("inline uint8_t *{name}::_nerve_encode_fixed(uint8_t *_p) const"));
        w.block("{", "}", |w| {
            for m in &s.members {
                self.fixed_member(w, m, true);
            }
            w.line("return _p;");
        });
        w.blank();
        w.line(format!("inline const uint8_t *{name}::_nerve_decode_fixed(const uint8_t *_p)"));
        w.block("{", "}", |w| {
            for m in &s.members {
                self.fixed_member(w, m, false);
            }
            w.line("return _p;");
        });
        w.blank();
        w.lines(format!(
            "inline uint8_t *{name}::_nerve_encode(uint8_t *_p, uint8_t *_e) const
{{
    if (!nerve_lcm::has(_p, _e, {size}u)) return 0;
    return _nerve_encode_fixed(_p);
}}

inline const uint8_t *{name}::_nerve_decode(const uint8_t *_p, const uint8_t *_e, unsigned)
{{
    if (!nerve_lcm::has(_p, _e, {size}u)) return 0;
    return _nerve_decode_fixed(_p);
}}

inline uint64_t {name}::_nerve_size() const
{{
    return {size}u;
}}
"
        ));
    }

    fn variable_methods(&self, w: &mut CodeWriter, s: &Struct) {
        let name = &s.name.name;
        let plan = StructPlan::new(&self.input.layout, s);
        let segs = plan.segments(&s.members);
        w.line(format!("inline uint8_t *{name}::_nerve_encode(uint8_t *_p, uint8_t *_e) const"));
        w.block("{", "}", |w| {
            for seg in &segs {
                match seg {
                    Seg::Run(run, size) => {
                        w.line(format!("if (!nerve_lcm::has(_p, _e, {size}u)) return 0;"));
                        for m in *run {
                            self.fixed_member(w, m, true);
                        }
                    }
                    Seg::Var(m) => self.variable_encode(w, s, m),
                }
            }
            w.line("return _p;");
        });
        w.blank();
        w.line(format!(
            "inline const uint8_t *{name}::_nerve_decode(const uint8_t *_p, const uint8_t *_e, unsigned _depth)"
        ));
        w.block("{", "}", |w| {
            w.line("if (_depth > NERVE_LCM_MAX_DEPTH) return 0;");
            for seg in &segs {
                match seg {
                    Seg::Run(run, size) => {
                        w.line(format!("if (!nerve_lcm::has(_p, _e, {size}u)) return 0;"));
                        for m in *run {
                            self.fixed_member(w, m, false);
                        }
                    }
                    Seg::Var(m) => self.variable_decode(w, s, m),
                }
            }
            w.line("return _p;");
        });
        w.blank();
        w.line(format!("inline uint64_t {name}::_nerve_size() const"));
        w.block("{", "}", |w| {
            let fixed_total: usize = segs.iter().map(|seg| if let Seg::Run(_, size) = seg { *size } else { 0 }).sum();
            w.line(format!("uint64_t _n = {fixed_total}u;"));
            for seg in &segs {
                if let Seg::Var(m) = seg {
                    self.variable_size(w, s, m);
                }
            }
            w.line("return _n;");
        });
        w.blank();
    }

    /// Statements for a fixed-size member, the bounds already checked: stores when `encode`, else loads.
    fn fixed_member(&self, w: &mut CodeWriter, m: &Member, encode: bool) {
        let lens: Vec<usize> = m.dims.iter().map(fixed_len).collect();
        let base = format!("this->{}", m.name);
        match &m.ty {
            MemberType::Primitive(p) => {
                let t = prim_type(*p);
                let sz = p.wire_size().expect("fixed members have no strings");
                if lens.is_empty() {
                    if encode {
                        w.line(format!("_p = nerve_lcm::store<{t}>(_p, {base});"));
                    } else {
                        w.line(format!("{base} = nerve_lcm::load<{t}>(_p);"));
                        w.line(format!("_p += {sz};"));
                    }
                    return;
                }
                let (outer, inner) = lens.split_at(lens.len() - 1);
                let inner = inner[0];
                let mut idx = String::new();
                for (k, len) in outer.iter().enumerate() {
                    w.line(format!("for (size_t _i{k} = 0; _i{k} < {len}u; ++_i{k}) {{"));
                    w.indent();
                    let _ = write!(idx, "[_i{k}]");
                }
                if encode {
                    w.line(format!("_p = nerve_lcm::store_n(_p, &{base}{idx}[0], {inner}u);"));
                } else {
                    w.line(format!("nerve_lcm::load_n(&{base}{idx}[0], _p, {inner}u);"));
                    w.line(format!("_p += {};", inner * sz));
                }
                for _ in outer {
                    w.dedent();
                    w.line("}");
                }
            }
            MemberType::Struct(_) | MemberType::Enum(_) => {
                let mut idx = String::new();
                for (k, len) in lens.iter().enumerate() {
                    w.line(format!("for (size_t _i{k} = 0; _i{k} < {len}u; ++_i{k}) {{"));
                    w.indent();
                    let _ = write!(idx, "[_i{k}]");
                }
                if encode {
                    w.line(format!("_p = {base}{idx}._nerve_encode_fixed(_p);"));
                } else {
                    w.line(format!("_p = {base}{idx}._nerve_decode_fixed(_p);"));
                }
                for _ in &lens {
                    w.dedent();
                    w.line("}");
                }
            }
        }
    }

    /// `uint64_t _d[N] = {...};` with checked counts; `on_negative` is the statement for a count out of range
    /// (None: treat it as 0).
    fn dims_decl(&self, w: &mut CodeWriter, m: &Member, on_bad: Option<&str>) {
        let mut items = Vec::new();
        for d in &m.dims {
            match d {
                Dim::Fixed { len, .. } => items.push(format!("{len}u")),
                Dim::Variable { member } => {
                    if let Some(stmt) = on_bad {
                        w.line(format!("if (!nerve_lcm::count_ok(this->{member})) {stmt}"));
                        items.push(format!("static_cast<uint64_t>(this->{member})"));
                    } else {
                        items.push(format!("nerve_lcm::count_or_zero(this->{member})"));
                    }
                }
            }
        }
        w.line(format!("const uint64_t _d[{}] = {{ {} }};", m.dims.len(), items.join(", ")));
    }

    fn variable_encode(&self, w: &mut CodeWriter, _s: &Struct, m: &Member) {
        let base = format!("this->{}", m.name);
        w.line(format!("// {}", m.name));
        let elem_stmt = |w: &mut CodeWriter, e: &str| match &m.ty {
            MemberType::Primitive(Primitive::String) => {
                w.line(format!("_p = nerve_lcm::put_string(_p, _e, {e});"));
                w.line("if (!_p) return 0;");
            }
            MemberType::Struct(n) if self.is_fixed(n).is_some() => {
                w.line(format!("_p = {e}._nerve_encode_fixed(_p);"));
            }
            MemberType::Enum(_) => {
                w.line(format!("_p = {e}._nerve_encode_fixed(_p);"));
            }
            _ => {
                w.line(format!("_p = {e}._nerve_encode(_p, _e);"));
                w.line("if (!_p) return 0;");
            }
        };
        if m.all_dims_fixed() {
            // C arrays (or a scalar) of variable-size elements.
            let mut idx = String::new();
            for (k, d) in m.dims.iter().enumerate() {
                w.line(format!("for (size_t _i{k} = 0; _i{k} < {}u; ++_i{k}) {{", fixed_len(d)));
                w.indent();
                let _ = write!(idx, "[_i{k}]");
            }
            elem_stmt(w, &format!("{base}{idx}"));
            for _ in &m.dims {
                w.dedent();
                w.line("}");
            }
            return;
        }
        w.line("{");
        w.indent();
        for d in &m.dims {
            if let Dim::Variable { member } = d {
                w.line(format!("if (this->{member} < 0) return 0;"));
            }
        }
        self.dims_decl(w, m, None);
        let rank = m.dims.len();
        let elem_fixed = self.elem_fixed(&m.ty);
        if let Some(sz) = elem_fixed {
            w.line("uint64_t _t = 1;");
            w.line(format!("for (unsigned _k = 0; _k < {rank}u; ++_k) _t = nerve_lcm::sat_mul(_t, _d[_k]);"));
            w.line(format!("if (!nerve_lcm::fits(_t, {sz}u, static_cast<size_t>(_e - _p))) return 0;"));
        }
        let mut expr = base.clone();
        for k in 0..rank {
            let v = format!("_v{k}");
            w.line(format!("const {} &{v} = {expr};", self.vec_type(&m.ty, rank - k)));
            w.line(format!("if ({v}.size() < _d[{k}]) return 0;"));
            if k + 1 == rank {
                match &m.ty {
                    MemberType::Primitive(p) if *p != Primitive::String => {
                        w.line(format!("_p = nerve_lcm::store_n(_p, {v}.data(), static_cast<size_t>(_d[{k}]));"));
                    }
                    _ => {
                        // Locals, so that stores through the byte pointer cannot make the compiler reload them.
                        w.line(format!("const {} *_a{k} = {v}.data();", self.elem_type(&m.ty)));
                        w.line(format!("const size_t _n{k} = static_cast<size_t>(_d[{k}]);"));
                        w.line(format!("for (size_t _i{k} = 0; _i{k} < _n{k}; ++_i{k}) {{"));
                        w.indent();
                        elem_stmt(w, &format!("_a{k}[_i{k}]"));
                        w.dedent();
                        w.line("}");
                    }
                }
            } else {
                w.line(format!("for (size_t _i{k} = 0; _i{k} < _d[{k}]; ++_i{k}) {{"));
                w.indent();
            }
            expr = format!("{v}[_i{k}]");
        }
        for _ in 0..rank - 1 {
            w.dedent();
            w.line("}");
        }
        w.dedent();
        w.line("}");
    }

    fn vec_type(&self, ty: &MemberType, levels: usize) -> String {
        let mut t = format!(" {} ", self.elem_type(ty));
        for _ in 0..levels {
            t = format!("std::vector<{t}>");
        }
        t.trim().to_owned()
    }

    fn variable_decode(&self, w: &mut CodeWriter, _s: &Struct, m: &Member) {
        let base = format!("this->{}", m.name);
        w.line(format!("// {}", m.name));
        let elem_stmt = |w: &mut CodeWriter, e: &str| match &m.ty {
            MemberType::Primitive(Primitive::String) => {
                w.line(format!("_p = nerve_lcm::get_string({e}, _p, _e);"));
                w.line("if (!_p) return 0;");
            }
            MemberType::Struct(n) if self.is_fixed(n).is_some() => {
                w.line(format!("_p = {e}._nerve_decode_fixed(_p);"));
            }
            MemberType::Enum(_) => {
                w.line(format!("_p = {e}._nerve_decode_fixed(_p);"));
            }
            _ => {
                w.line(format!("_p = {e}._nerve_decode(_p, _e, _depth + 1);"));
                w.line("if (!_p) return 0;");
            }
        };
        if m.all_dims_fixed() {
            let mut idx = String::new();
            for (k, d) in m.dims.iter().enumerate() {
                w.line(format!("for (size_t _i{k} = 0; _i{k} < {}u; ++_i{k}) {{", fixed_len(d)));
                w.indent();
                let _ = write!(idx, "[_i{k}]");
            }
            elem_stmt(w, &format!("{base}{idx}"));
            for _ in &m.dims {
                w.dedent();
                w.line("}");
            }
            return;
        }
        w.line("{");
        w.indent();
        self.dims_decl(w, m, Some("return 0;"));
        let rank = m.dims.len();
        let elem_min = self.elem_min(&m.ty);
        w.line(format!(
            "if (!nerve_lcm::check_dims(_d, {rank}u, {elem_min}u, static_cast<size_t>(_e - _p))) return 0;"
        ));
        let mut expr = base.clone();
        for k in 0..rank {
            let v = format!("_v{k}");
            w.line(format!("{} &{v} = {expr};", self.vec_type(&m.ty, rank - k)));
            w.line(format!("{v}.resize(static_cast<size_t>(_d[{k}]));"));
            if k + 1 == rank {
                match &m.ty {
                    MemberType::Primitive(p) if *p != Primitive::String => {
                        let sz = p.wire_size().unwrap_or(1);
                        w.line(format!("nerve_lcm::load_n({v}.data(), _p, static_cast<size_t>(_d[{k}]));"));
                        w.line(format!("_p += static_cast<size_t>(_d[{k}]) * {sz}u;"));
                    }
                    _ => {
                        // Locals: the compiler need not reload them in the loop.
                        w.line(format!("{} *_a{k} = {v}.data();", self.elem_type(&m.ty)));
                        w.line(format!("const size_t _n{k} = static_cast<size_t>(_d[{k}]);"));
                        w.line(format!("for (size_t _i{k} = 0; _i{k} < _n{k}; ++_i{k}) {{"));
                        w.indent();
                        elem_stmt(w, &format!("_a{k}[_i{k}]"));
                        w.dedent();
                        w.line("}");
                    }
                }
            } else {
                w.line(format!("for (size_t _i{k} = 0; _i{k} < _d[{k}]; ++_i{k}) {{"));
                w.indent();
            }
            expr = format!("{v}[_i{k}]");
        }
        for _ in 0..rank - 1 {
            w.dedent();
            w.line("}");
        }
        w.dedent();
        w.line("}");
    }

    fn variable_size(&self, w: &mut CodeWriter, _s: &Struct, m: &Member) {
        let base = format!("this->{}", m.name);
        let elem_fixed = self.elem_fixed(&m.ty);
        let elem_expr = |e: &str| match &m.ty {
            MemberType::Primitive(Primitive::String) => format!("nerve_lcm::string_size({e})"),
            _ => format!("{e}._nerve_size()"),
        };
        if m.all_dims_fixed() {
            let mut idx = String::new();
            for (k, d) in m.dims.iter().enumerate() {
                w.line(format!("for (size_t _i{k} = 0; _i{k} < {}u; ++_i{k}) {{", fixed_len(d)));
                w.indent();
                let _ = write!(idx, "[_i{k}]");
            }
            w.line(format!("_n = nerve_lcm::sat_add(_n, {});", elem_expr(&format!("{base}{idx}"))));
            for _ in &m.dims {
                w.dedent();
                w.line("}");
            }
            return;
        }
        w.line("{");
        w.indent();
        self.dims_decl(w, m, None);
        let rank = m.dims.len();
        if let Some(sz) = elem_fixed {
            w.line("uint64_t _t = 1;");
            w.line(format!("for (unsigned _k = 0; _k < {rank}u; ++_k) _t = nerve_lcm::sat_mul(_t, _d[_k]);"));
            w.line(format!("_n = nerve_lcm::sat_add(_n, nerve_lcm::sat_mul(_t, {sz}u));"));
        } else {
            let mut expr = base.clone();
            for k in 0..rank {
                let v = format!("_v{k}");
                w.line(format!("const {} &{v} = {expr};", self.vec_type(&m.ty, rank - k)));
                w.line(format!("for (size_t _i{k} = 0; _i{k} < _d[{k}] && _i{k} < {v}.size(); ++_i{k}) {{"));
                w.indent();
                expr = format!("{v}[_i{k}]");
            }
            w.line(format!("_n = nerve_lcm::sat_add(_n, {});", elem_expr(&expr)));
            for _ in 0..rank {
                w.dedent();
                w.line("}");
            }
        }
        w.dedent();
        w.line("}");
    }

    // ----------------------------------------------------------------------------------------------------------
    // Views

    fn view_methods(&self, w: &mut CodeWriter, s: &Struct) {
        let name = &s.name.name;
        let v = format!("{name}_view");
        let plan = StructPlan::new(&self.input.layout, s);
        let (min, fixed) = (plan.min, plan.fixed);
        let offs = plan.const_offsets();
        let nmem = s.members.len();
        self.open_ns(w, &s.name);
        w.blank();
        w.lines(format!(
            "inline {v}::{v}(const void *buf, size_t len) : _nerve_p(0), _nerve_end(0)
{{
    const uint8_t *_b = static_cast<const uint8_t *>(buf);
    if (!_b || len < 8 || !nerve_lcm::at_least(len - 8, {min}u)) return;
    if (nerve_lcm::load<uint64_t>(_b) != 0x{:016x}ULL) return;
    _nerve_p = _b + 8;
    _nerve_end = _b + len;
}}

inline {v} {v}::_nerve_make(const uint8_t *_p, const uint8_t *_e)
{{
    {v} _v;
    if (!_p || !nerve_lcm::has(_p, _e, {min}u)) return _v;
    _v._nerve_p = _p;
    _v._nerve_end = _e;
    return _v;
}}

inline const uint8_t *{v}::_nerve_skip(const uint8_t *_p, const uint8_t *_e, unsigned _depth)
{{
    return _nerve_walk(_p, _e, {nmem}u, _depth);
}}
",
            s.fingerprint
        ));
        // The walk.
        w.line(format!(
            "inline const uint8_t *{v}::_nerve_walk(const uint8_t *_p, const uint8_t *_e, unsigned _idx, unsigned _depth)"
        ));
        w.block("{", "}", |w| {
            w.line(format!("if (!_p || !nerve_lcm::has(_p, _e, {min}u)) return 0;"));
            if let Some(size) = fixed {
                w.line("(void)_depth;");
                w.line("(void)_idx;");
                // Every member has a constant offset.
                for (k, o) in offs.iter().enumerate() {
                    w.line(format!("if (_idx == {k}u) return _p + {};", o.unwrap_or(0)));
                }
                w.line(format!("return _p + {size};"));
                return;
            }
            w.line("if (_depth > NERVE_LCM_MAX_DEPTH) return 0;");
            // Count members: locals.
            let counts: BTreeSet<&str> = s
                .members
                .iter()
                .flat_map(|m| m.dims.iter())
                .filter_map(|d| match d {
                    Dim::Variable { member } => Some(member.as_str()),
                    _ => None,
                })
                .collect();
            let v0 = offs.iter().rposition(|o| o.is_some()).unwrap_or(0);
            for (k, m) in s.members.iter().enumerate() {
                if counts.contains(m.name.as_str()) {
                    let t = prim_type(m.ty.primitive().expect("counts are integers"));
                    if k < v0 {
                        w.line(format!(
                            "const int64_t _c_{} = nerve_lcm::load<{t}>(_p + {});",
                            m.name,
                            offs[k].unwrap_or(0)
                        ));
                    } else {
                        w.line(format!("int64_t _c_{} = 0;", m.name));
                    }
                }
            }
            w.line(format!("_p += {};", offs[v0].unwrap_or(0)));
            for (k, m) in s.members.iter().enumerate().skip(v0) {
                w.line(format!("if (_idx == {k}u) return _p;"));
                w.line(format!("// {}", m.name));
                match self.input.layout.member_fixed_size(m) {
                    Some(sz) => {
                        w.line(format!("if (!nerve_lcm::has(_p, _e, {sz}u)) return 0;"));
                        if counts.contains(m.name.as_str()) {
                            let t = prim_type(m.ty.primitive().expect("counts are integers"));
                            w.line(format!("_c_{} = nerve_lcm::load<{t}>(_p);", m.name));
                        }
                        w.line(format!("_p += {sz};"));
                    }
                    None => {
                        let e = self.view_elem(&m.ty);
                        if m.dims.is_empty() {
                            w.line(format!("_p = {e}::_nerve_skip(_p, _e, _depth + 1);"));
                        } else {
                            w.line("{");
                            w.indent();
                            w.line("uint64_t _t = 1;");
                            for d in &m.dims {
                                match d {
                                    Dim::Fixed { len, .. } => {
                                        w.line(format!("_t = nerve_lcm::sat_mul(_t, {len}u);"));
                                    }
                                    Dim::Variable { member } => {
                                        w.line(format!("if (!nerve_lcm::count_ok(_c_{member})) return 0;"));
                                        w.line(format!(
                                            "_t = nerve_lcm::sat_mul(_t, static_cast<uint64_t>(_c_{member}));"
                                        ));
                                    }
                                }
                            }
                            w.line(format!("_p = nerve_lcm::skip_n<{e} >(_p, _e, _t, _depth + 1);"));
                            w.dedent();
                            w.line("}");
                        }
                        w.line("if (!_p) return 0;");
                    }
                }
            }
            w.line("return _p;");
        });
        w.blank();
        // Accessors.
        for (k, m) in s.members.iter().enumerate() {
            let ret = self.view_result(m);
            w.line(format!("inline {ret} {v}::{}() const", view_accessor(&m.name)));
            w.block("{", "}", |w| {
                match offs[k] {
                    Some(o) => w.line(format!("const uint8_t *_s = _nerve_p ? _nerve_p + {o} : 0;")),
                    None => w.line(format!("const uint8_t *_s = _nerve_walk(_nerve_p, _nerve_end, {k}u, 0);")),
                };
                let e = self.view_elem(&m.ty);
                if m.dims.is_empty() {
                    w.line(format!("return {e}::_nerve_make(_s, _nerve_end);"));
                    return;
                }
                w.line(format!("if (!_s) return {ret}();"));
                let mut items = Vec::new();
                for d in &m.dims {
                    match d {
                        Dim::Fixed { len, .. } => items.push(format!("{len}")),
                        Dim::Variable { member } => {
                            let cm = s.member(member).expect("checked dimension member");
                            let ci = s.members.iter().position(|x| x.name == *member).unwrap_or(0);
                            let t = prim_type(cm.ty.primitive().expect("counts are integers"));
                            match offs[ci] {
                                Some(o) => items.push(format!("nerve_lcm::load<{t}>(_nerve_p + {o})")),
                                None => {
                                    w.line(format!(
                                        "const nerve_lcm::maybe<{t}> _c_{member} = {}();",
                                        view_accessor(member)
                                    ));
                                    w.line(format!("if (!_c_{member}.ok()) return {ret}();"));
                                    items.push(format!("_c_{member}.value()"));
                                }
                            }
                        }
                    }
                }
                w.line(format!("const int64_t _d[{}] = {{ {} }};", m.dims.len(), items.join(", ")));
                w.line(format!("return {ret}::_nerve_make(_s, _nerve_end, _d);"));
            });
            w.blank();
        }
        self.close_ns(w, &s.name);
    }

    // ----------------------------------------------------------------------------------------------------------
    // Enums

    fn enum_header(&self, e: &Enum) -> String {
        let name = &e.name.name;
        let guard = self.guard(&e.name);
        let hash = format!("0x{:016x}ULL", e.hash);
        let mut w = CodeWriter::new("    ");
        w.line("// THIS FILE IS GENERATED by nerve gen from LCM types. DO NOT EDIT.");
        w.line(format!("#ifndef {guard}"));
        w.line(format!("#define {guard}"));
        w.blank();
        w.line("#include \"nerve_lcm.hpp\"");
        w.blank();
        self.open_ns(&mut w, &e.name);
        w.blank();
        w.doc("/// ", e.doc.as_deref());
        w.line("/// A (deprecated) LCM enum: encoded as its fingerprint then an int32 value.");
        w.line(format!("class {name}"));
        w.line("{");
        w.line("  public:");
        w.indent();
        w.line("int32_t value;");
        w.blank();
        for v in &e.values {
            w.line(format!("static constexpr int32_t {} = {};", v.name, int_literal(i64::from(v.value), false)));
        }
        w.blank();
        w.lines(format!(
            "inline int encode(void *buf, int offset, int maxlen) const
{{
    if (!buf || offset < 0 || maxlen < 12) return -1;
    uint8_t *_p = static_cast<uint8_t *>(buf) + offset;
    _p = nerve_lcm::store<uint64_t>(_p, {hash});
    nerve_lcm::store<int32_t>(_p, value);
    return 12;
}}
inline int getEncodedSize() const {{ return 12; }}
inline int decode(const void *buf, int offset, int maxlen)
{{
    if (!buf || offset < 0 || maxlen < 12) return -1;
    const uint8_t *_p = static_cast<const uint8_t *>(buf) + offset;
    if (nerve_lcm::load<uint64_t>(_p) != {hash}) return -1;
    value = nerve_lcm::load<int32_t>(_p + 8);
    return 12;
}}
inline static int64_t getHash() {{ return static_cast<int64_t>({hash}); }}
inline static const char *getTypeName() {{ return \"{name}\"; }}
inline int _encodeNoHash(void *buf, int offset, int maxlen) const
{{
    if (!buf || offset < 0 || maxlen < 4) return -1;
    nerve_lcm::store<int32_t>(static_cast<uint8_t *>(buf) + offset, value);
    return 4;
}}
inline int _getEncodedSizeNoHash() const {{ return 4; }}
inline int _decodeNoHash(const void *buf, int offset, int maxlen)
{{
    if (!buf || offset < 0 || maxlen < 4) return -1;
    value = nerve_lcm::load<int32_t>(static_cast<const uint8_t *>(buf) + offset);
    return 4;
}}
inline static uint64_t _computeHash(const nerve_lcm::hash_ptr *) {{ return {hash}; }}

// Nerve's codec (internal).
uint8_t *_nerve_encode_fixed(uint8_t *_p) const {{ return nerve_lcm::store<int32_t>(_p, value); }}
const uint8_t *_nerve_decode_fixed(const uint8_t *_p)
{{
    value = nerve_lcm::load<int32_t>(_p);
    return _p + 4;
}}
uint64_t _nerve_size() const {{ return 4; }}"
        ));
        w.dedent();
        w.line("};");
        w.blank();
        self.close_ns(&mut w, &e.name);
        w.blank();
        w.line(format!("#endif // {guard}"));
        w.finish()
    }
}

fn view_accessor(name: &str) -> String {
    if VIEW_NAMES.contains(&name) {
        format!("{name}_")
    } else {
        name.to_owned()
    }
}

fn prim_type(p: Primitive) -> &'static str {
    match p {
        Primitive::Int8 => "int8_t",
        Primitive::Int16 => "int16_t",
        Primitive::Int32 => "int32_t",
        Primitive::Int64 => "int64_t",
        Primitive::Float => "float",
        Primitive::Double => "double",
        Primitive::String => "std::string",
        Primitive::Boolean => "int8_t",
        Primitive::Byte => "uint8_t",
    }
}

fn fixed_len(d: &Dim) -> usize {
    match d {
        Dim::Fixed { len, .. } => *len,
        Dim::Variable { .. } => 0,
    }
}

fn dim_text(d: &Dim) -> String {
    match d {
        Dim::Fixed { const_name: Some(c), .. } => c.clone(),
        Dim::Fixed { hash_text, .. } => hash_text.clone(),
        Dim::Variable { member } => member.clone(),
    }
}

fn int_literal(v: i64, long: bool) -> String {
    let suffix = if long { "LL" } else { "" };
    if v == i64::MIN {
        "(-9223372036854775807LL - 1)".into()
    } else if !long && v == i64::from(i32::MIN) {
        "(-2147483647 - 1)".into()
    } else {
        format!("{v}{suffix}")
    }
}

fn const_decl(ty: Primitive, name: &str, value: ConstValue, text: &str) -> String {
    let t = prim_type(ty);
    let lit = match value {
        ConstValue::Int(v) => int_literal(v, ty == Primitive::Int64),
        ConstValue::Float(f) => {
            let ft = if ty == Primitive::Float { "float" } else { "double" };
            if f.is_nan() {
                format!("std::numeric_limits<{ft}>::quiet_NaN()")
            } else if f.is_infinite() {
                let sign = if f < 0.0 { "-" } else { "" };
                format!("{sign}std::numeric_limits<{ft}>::infinity()")
            } else {
                let mut s = format!("{f:?}");
                if ty == Primitive::Float {
                    // A double literal converted to float: the same value lcm-gen's copied literal gives.
                    s = format!("static_cast<float>({s})");
                }
                s
            }
        }
    };
    let mut line = format!("static constexpr {t} {name} = {lit};");
    if text.trim() != lit && !text.is_empty() {
        let _ = write!(line, " // as written: {}", text.trim());
    }
    line
}

/// Strongly connected components of the struct graph (Tarjan), each a list of indices into `schema.structs`.
fn tarjan(schema: &nerve_types::Schema) -> Vec<Vec<usize>> {
    let n = schema.structs.len();
    let index_of: HashMap<&TypeName, usize> = schema.structs.iter().enumerate().map(|(i, s)| (&s.name, i)).collect();
    let edges: Vec<Vec<usize>> = schema
        .structs
        .iter()
        .map(|s| {
            s.members
                .iter()
                .filter_map(|m| match &m.ty {
                    MemberType::Struct(t) => index_of.get(t).copied(),
                    _ => None,
                })
                .collect()
        })
        .collect();
    struct St {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn strong(v: usize, edges: &[Vec<usize>], st: &mut St) {
        st.index[v] = Some(st.next);
        st.low[v] = st.next;
        st.next += 1;
        st.stack.push(v);
        st.on[v] = true;
        for &w in &edges[v] {
            match st.index[w] {
                None => {
                    strong(w, edges, st);
                    st.low[v] = st.low[v].min(st.low[w]);
                }
                Some(iw) if st.on[w] => st.low[v] = st.low[v].min(iw),
                _ => {}
            }
        }
        if Some(st.low[v]) == st.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = st.stack.pop() {
                st.on[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            comp.sort_unstable();
            st.out.push(comp);
        }
    }
    let mut st =
        St { index: vec![None; n], low: vec![0; n], on: vec![false; n], stack: Vec::new(), next: 0, out: Vec::new() };
    for v in 0..n {
        if st.index[v].is_none() {
            strong(v, &edges, &mut st);
        }
    }
    st.out
}
