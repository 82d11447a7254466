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

mod decl;
mod enums;
mod methods;
mod view;

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;

use nerve_types::{ConstValue, Dim, Enum, Member, MemberType, Primitive, Span, Struct, TypeName};

use crate::plan::{Seg, StructPlan};
use crate::writer::CodeWriter;
use crate::{GenError, GeneratedFile, Input, Options};

/// The runtime header every generated header includes, written as `nerve_lcm.hpp` at the output root.
pub const RUNTIME: &str = include_str!("../../runtime/cpp/nerve_lcm.hpp");

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
