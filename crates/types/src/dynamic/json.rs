//! JSON for dynamic values: [`Value`] to JSON text, and JSON text to a [`Value`] of a given type.
//!
//! Both directions are bounded: writing walks the tree with an explicit stack, reading parses at most
//! [`MAX_DEPTH`](super::MAX_DEPTH) + 8 levels of nesting and then follows the schema with the same depth cap.

use std::collections::HashMap;
use std::sync::Arc;

use super::{elem_desc, Ctx, DynError, DynErrorKind, EnumValue, StructValue, Value, MAX_DEPTH};
use crate::model::{Dim, MemberType, Primitive, Struct, TypeName};

// ---------------------------------------------------------------------------------------------------------------
// Writing

/// `s` as a JSON string literal, quotes included.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_string(&mut out, s);
    out
}

fn push_string(out: &mut String, s: &str) {
    // One escaper for all of Nerve's JSON: the one generated Rust uses too.
    nerve_codec::json::write_str(s, out);
}

/// A finite float's text: shortest round-trip digits, an exponent only for very large or small magnitudes, and
/// always a `.` or an exponent so that readers keep it a float.
fn float_text(x: f64, display: &dyn Fn() -> String, exp: &dyn Fn() -> String) -> String {
    let a = x.abs();
    let mut s = if a != 0.0 && !(1e-5..1e16).contains(&a) { exp() } else { display() };
    if !s.contains(['.', 'e']) {
        s.push_str(".0");
    }
    s
}

fn push_f64(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("\"NaN\"");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "\"Infinity\"" } else { "\"-Infinity\"" });
    } else {
        out.push_str(&float_text(x, &|| format!("{x}"), &|| format!("{x:e}")));
    }
}

fn push_f32(out: &mut String, x: f32) {
    if !x.is_finite() {
        return push_f64(out, f64::from(x));
    }
    let s = float_text(f64::from(x), &|| format!("{x}"), &|| format!("{x:e}"));
    // A reader that parses into a double and then rounds to float must get the same bits back; the shortest
    // float digits almost always do, and where they do not the exact double value is written instead.
    match s.parse::<f64>() {
        Ok(d) if (d as f32).to_bits() == x.to_bits() => out.push_str(&s),
        _ => push_f64(out, f64::from(x)),
    }
}

fn push_scalar(out: &mut String, v: &Value) {
    match v {
        Value::Int8(x) => out.push_str(&x.to_string()),
        Value::Int16(x) => out.push_str(&x.to_string()),
        Value::Int32(x) => out.push_str(&x.to_string()),
        Value::Int64(x) => out.push_str(&x.to_string()),
        Value::Byte(x) => out.push_str(&x.to_string()),
        Value::Float(x) => push_f32(out, *x),
        Value::Double(x) => push_f64(out, *x),
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::String(s) => push_string(out, s),
        Value::Enum(e) => out.push_str(&e.value.to_string()),
        Value::Bytes(b) => {
            out.push('[');
            for (i, x) in b.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&x.to_string());
            }
            out.push(']');
        }
        Value::Array(_) | Value::Struct(_) => {
            unreachable!("containers are written by to_json's loop")
        }
    }
}

enum Frame<'v> {
    Array(std::slice::Iter<'v, Value>),
    Object(std::slice::Iter<'v, (Arc<str>, Value)>),
}

/// Opens a container (pushing a frame) or writes a scalar.
fn start<'v>(out: &mut String, v: &'v Value, stack: &mut Vec<Frame<'v>>) {
    match v {
        Value::Array(items) => {
            out.push('[');
            stack.push(Frame::Array(items.iter()));
        }
        Value::Struct(s) => {
            out.push('{');
            stack.push(Frame::Object(s.fields.iter()));
        }
        other => push_scalar(out, other),
    }
}

pub(crate) fn to_json(v: &Value) -> String {
    let mut out = String::new();
    let mut stack = Vec::new();
    start(&mut out, v, &mut stack);
    while let Some(top) = stack.last_mut() {
        let first = out.ends_with(['[', '{']);
        match top {
            Frame::Array(it) => match it.next() {
                Some(item) => {
                    if !first {
                        out.push(',');
                    }
                    start(&mut out, item, &mut stack);
                }
                None => {
                    out.push(']');
                    stack.pop();
                }
            },
            Frame::Object(it) => match it.next() {
                Some((name, item)) => {
                    if !first {
                        out.push(',');
                    }
                    push_string(&mut out, name);
                    out.push(':');
                    start(&mut out, item, &mut stack);
                }
                None => {
                    out.push('}');
                    stack.pop();
                }
            },
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing

const MAX_JSON_DEPTH: usize = MAX_DEPTH + 8;

/// A parsed JSON value with the byte offset where it starts.
#[derive(Debug)]
pub(crate) struct Json<'t> {
    at: usize,
    kind: JsonKind<'t>,
}

#[derive(Debug)]
enum JsonKind<'t> {
    Null,
    Bool(bool),
    /// The number's text, checked against JSON's grammar.
    Number(&'t str),
    Str(String),
    Array(Vec<Json<'t>>),
    Object(Vec<(String, Json<'t>)>),
}

impl Json<'_> {
    fn describe(&self) -> String {
        match &self.kind {
            JsonKind::Null => "null".into(),
            JsonKind::Bool(b) => b.to_string(),
            JsonKind::Number(n) => format!("the number {n}"),
            JsonKind::Str(s) if s.chars().count() <= 20 => format!("the string {}", json_string(s)),
            JsonKind::Str(_) => "a string".into(),
            JsonKind::Array(a) => format!("an array of {}", a.len()),
            JsonKind::Object(_) => "an object".into(),
        }
    }
}

struct Parser<'t> {
    text: &'t str,
    pos: usize,
}

fn json_err(message: impl Into<String>, at: usize) -> DynError {
    DynError::new(DynErrorKind::Json { message: message.into() }, Some(at))
}

impl<'t> Parser<'t> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), DynError> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{}'", b as char)))
        }
    }

    fn unexpected(&self, wanted: &str) -> DynError {
        match self.text[self.pos..].chars().next() {
            Some(c) => json_err(format!("expected {wanted}, found {c:?}"), self.pos),
            None => json_err(format!("expected {wanted}, found the end of the text"), self.pos),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json<'t>, DynError> {
        self.skip_ws();
        let at = self.pos;
        if depth > MAX_JSON_DEPTH {
            return Err(json_err(format!("nested more than {MAX_JSON_DEPTH} levels deep"), at));
        }
        let kind = match self.peek() {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => JsonKind::Str(self.string()?),
            Some(b'-' | b'0'..=b'9') => JsonKind::Number(self.number()?),
            _ => self.literal(at)?,
        };
        Ok(Json { at, kind })
    }

    #[inline(never)]
    fn object(&mut self, depth: usize) -> Result<JsonKind<'t>, DynError> {
        self.pos += 1;
        let mut members: Vec<(String, Json<'t>)> = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.skip_ws();
                let key_at = self.pos;
                if self.peek() != Some(b'"') {
                    return Err(self.unexpected("a member name in quotes"));
                }
                let key = self.string()?;
                if members.iter().any(|(k, _)| *k == key) {
                    return Err(json_err(format!("member {} given twice", json_string(&key)), key_at));
                }
                self.skip_ws();
                self.expect(b':')?;
                let v = self.value(depth + 1)?;
                members.push((key, v));
                self.skip_ws();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b'}') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.unexpected("',' or '}'")),
                }
            }
        }
        Ok(JsonKind::Object(members))
    }

    #[inline(never)]
    fn array(&mut self, depth: usize) -> Result<JsonKind<'t>, DynError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
        } else {
            loop {
                items.push(self.value(depth + 1)?);
                self.skip_ws();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b']') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.unexpected("',' or ']'")),
                }
            }
        }
        Ok(JsonKind::Array(items))
    }

    #[inline(never)]
    fn literal(&mut self, at: usize) -> Result<JsonKind<'t>, DynError> {
        let rest = &self.text[self.pos..];
        let lit = [("true", JsonKind::Bool(true)), ("false", JsonKind::Bool(false)), ("null", JsonKind::Null)]
            .into_iter()
            .find(|(w, _)| rest.starts_with(w));
        match lit {
            Some((w, k)) => {
                self.pos += w.len();
                Ok(k)
            }
            None => {
                let hint = if rest.starts_with("NaN") || rest.starts_with("Inf") || rest.starts_with("-Inf") {
                    " (write NaN and infinities as the strings \"NaN\", \"Infinity\", \"-Infinity\")"
                } else {
                    ""
                };
                Err(json_err(format!("{}{hint}", self.unexpected("a JSON value").kind_message()), at))
            }
        }
    }

    fn number(&mut self) -> Result<&'t str, DynError> {
        let start = self.pos;
        let b = self.text.as_bytes();
        let digits = |p: &mut usize| {
            let s = *p;
            while b.get(*p).is_some_and(u8::is_ascii_digit) {
                *p += 1;
            }
            *p > s
        };
        let mut p = self.pos;
        if b.get(p) == Some(&b'-') {
            p += 1;
        }
        let int_start = p;
        if !digits(&mut p) {
            return Err(json_err("a number needs digits", p));
        }
        if b[int_start] == b'0' && p - int_start > 1 {
            return Err(json_err("numbers may not have leading zeros", int_start));
        }
        if b.get(p) == Some(&b'.') {
            p += 1;
            if !digits(&mut p) {
                return Err(json_err("digits expected after '.'", p));
            }
        }
        if matches!(b.get(p), Some(b'e' | b'E')) {
            p += 1;
            if matches!(b.get(p), Some(b'+' | b'-')) {
                p += 1;
            }
            if !digits(&mut p) {
                return Err(json_err("digits expected in the exponent", p));
            }
        }
        self.pos = p;
        Ok(&self.text[start..p])
    }

    fn hex4(&mut self) -> Result<u32, DynError> {
        let s = self.text.get(self.pos..self.pos + 4).filter(|s| s.bytes().all(|c| c.is_ascii_hexdigit()));
        let Some(s) = s else {
            return Err(json_err("\\u needs 4 hex digits", self.pos));
        };
        self.pos += 4;
        u32::from_str_radix(s, 16).map_err(|_| json_err("\\u needs 4 hex digits", self.pos))
    }

    fn string(&mut self) -> Result<String, DynError> {
        let start = self.pos;
        self.pos += 1; // the opening quote
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            let Some(c) = rest.chars().next() else {
                return Err(json_err("unterminated string", start));
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                '\\' => {
                    let esc_at = self.pos;
                    self.pos += 1;
                    let e = self.peek().ok_or_else(|| json_err("unterminated string", start))?;
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xd800..0xdc00).contains(&hi) {
                                if !self.text[self.pos..].starts_with("\\u") {
                                    return Err(json_err("lone surrogate in \\u escape", esc_at));
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return Err(json_err("lone surrogate in \\u escape", esc_at));
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            let ch =
                                char::from_u32(code).ok_or_else(|| json_err("lone surrogate in \\u escape", esc_at))?;
                            out.push(ch);
                        }
                        _ => return Err(json_err("unknown escape in string", esc_at)),
                    }
                }
                c if (c as u32) < 0x20 => return Err(json_err("control character in string (escape it)", self.pos)),
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }
}

impl DynError {
    fn kind_message(&self) -> String {
        match self.kind() {
            DynErrorKind::Json { message } => message.clone(),
            k => k.to_string(),
        }
    }
}

/// Parses a whole JSON text (one value, nothing after it but whitespace).
pub(crate) fn parse(text: &str) -> Result<Json<'_>, DynError> {
    let mut p = Parser { text, pos: 0 };
    let v = p.value(0)?;
    p.skip_ws();
    if p.pos != text.len() {
        return Err(p.unexpected("the end of the text"));
    }
    Ok(v)
}

// ---------------------------------------------------------------------------------------------------------------
// JSON to values, guided by the schema

fn type_err(expected: String, j: &Json<'_>) -> DynError {
    DynError::new(DynErrorKind::TypeMismatch { expected, found: j.describe() }, Some(j.at))
}

fn int_from_json(j: &Json<'_>, ty: &str, min: i128, max: i128) -> Result<i64, DynError> {
    let JsonKind::Number(text) = j.kind else {
        return Err(type_err(format!("an integer ({ty})"), j));
    };
    if text.contains(['.', 'e', 'E']) {
        return Err(type_err(format!("an integer ({ty})"), j));
    }
    match text.parse::<i128>() {
        Ok(v) if (min..=max).contains(&v) => Ok(v as i64),
        _ => Err(DynError::new(DynErrorKind::OutOfRange { value: text.to_owned(), ty: ty.to_owned() }, Some(j.at))),
    }
}

fn float_from_json<F: std::str::FromStr + Copy>(
    j: &Json<'_>,
    ty: &str,
    nan: F,
    inf: F,
    neg_inf: F,
    is_finite: fn(F) -> bool,
) -> Result<F, DynError> {
    match &j.kind {
        JsonKind::Number(text) => match text.parse::<F>() {
            Ok(v) if is_finite(v) => Ok(v),
            _ => Err(DynError::new(
                DynErrorKind::OutOfRange { value: (*text).to_owned(), ty: ty.to_owned() },
                Some(j.at),
            )),
        },
        JsonKind::Str(s) if s == "NaN" => Ok(nan),
        JsonKind::Str(s) if s == "Infinity" => Ok(inf),
        JsonKind::Str(s) if s == "-Infinity" => Ok(neg_inf),
        _ => Err(type_err(format!("a number ({ty}) or \"NaN\", \"Infinity\", \"-Infinity\""), j)),
    }
}

/// Lengths seen at each dimension of one array member.
type Seen = Vec<Option<usize>>;

impl Ctx<'_> {
    pub(crate) fn read_json(&self, ty: &TypeName, text: &str) -> Result<Value, DynError> {
        let root = ty.full();
        let j = parse(text).map_err(|e| e.finish(&root))?;
        if let Some(si) = self.struct_index(ty) {
            self.struct_from_json(si, &j, 1).map_err(|e| e.finish(&root))
        } else if self.tables.enums.contains_key(ty) {
            self.elem_from_json(&MemberType::Enum(ty.clone()), &j, 1).map_err(|e| e.finish(&root))
        } else {
            Err(DynError::new(DynErrorKind::UnknownType { name: root.clone() }, None).finish(&root))
        }
    }

    fn struct_from_json(&self, si: usize, j: &Json<'_>, depth: usize) -> Result<Value, DynError> {
        if depth > MAX_DEPTH {
            return Err(DynError::new(DynErrorKind::TooDeep { limit: MAX_DEPTH }, Some(j.at)));
        }
        let st = &self.schema.structs[si];
        let names = &self.tables.member_names[si];
        let JsonKind::Object(given) = &j.kind else {
            return Err(type_err(format!("an object (struct {})", st.name), j));
        };
        check_member_names(st, given)?;
        let find = |name: &str| given.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        let mut values: Vec<Option<Value>> = Vec::with_capacity(st.members.len());
        // Count member -> (length seen, the array member it was seen in, where).
        let mut seen: HashMap<&str, (usize, usize)> = HashMap::new();
        for (m, name) in st.members.iter().zip(names) {
            let Some(jv) = find(&m.name) else {
                values.push(None);
                continue;
            };
            let v = if m.dims.is_empty() {
                self.elem_from_json(&m.ty, jv, depth + 1)
            } else {
                let mut lens: Seen = vec![None; m.dims.len()];
                let v = self.array_from_json(&m.ty, &m.dims, 0, jv, &mut lens, depth + 1);
                v.and_then(|v| record_lengths(&m.dims, &lens, jv.at, &mut seen).map(|()| v))
            }
            .map_err(|e| e.in_field(name))?;
            values.push(Some(v));
        }
        let fields = resolve_counts(st, names, values, &seen, j.at)?;
        Ok(Value::Struct(StructValue { ty: self.tables.struct_names[si].clone(), fields }))
    }

    #[allow(clippy::too_many_arguments)]
    fn array_from_json(
        &self,
        ty: &MemberType,
        dims: &[Dim],
        level: usize,
        j: &Json<'_>,
        lens: &mut Seen,
        depth: usize,
    ) -> Result<Value, DynError> {
        if depth > MAX_DEPTH {
            return Err(DynError::new(DynErrorKind::TooDeep { limit: MAX_DEPTH }, Some(j.at)));
        }
        let JsonKind::Array(items) = &j.kind else {
            return Err(type_err(format!("an array of {}", elem_desc(ty)), j));
        };
        match &dims[level] {
            Dim::Fixed { len, .. } if *len != items.len() => {
                return Err(DynError::new(
                    DynErrorKind::LengthMismatch { expected: *len, actual: items.len() },
                    Some(j.at),
                ))
            }
            Dim::Fixed { .. } => {}
            Dim::Variable { member } => match lens[level] {
                Some(l) if l != items.len() => {
                    let kind = DynErrorKind::CountConflict { member: member.clone(), first: l, second: items.len() };
                    return Err(DynError::new(kind, Some(j.at)));
                }
                _ => lens[level] = Some(items.len()),
            },
        }
        let last = level + 1 == dims.len();
        if last && *ty == MemberType::Primitive(Primitive::Byte) {
            let bytes = items
                .iter()
                .enumerate()
                .map(|(i, it)| int_from_json(it, "byte", 0, 255).map(|b| b as u8).map_err(|e| e.in_index(i)))
                .collect::<Result<Vec<u8>, _>>()?;
            return Ok(Value::Bytes(bytes));
        }
        let elem_struct = if last { self.element_struct(ty) } else { None };
        let mut out = Vec::with_capacity(items.len());
        for (i, it) in items.iter().enumerate() {
            let v = match elem_struct {
                Some(si) => self.struct_from_json(si, it, depth + 1),
                None if last => self.elem_from_json(ty, it, depth + 1),
                None => self.array_from_json(ty, dims, level + 1, it, lens, depth + 1),
            };
            out.push(v.map_err(|e| e.in_index(i))?);
        }
        Ok(Value::Array(out))
    }

    fn elem_from_json(&self, ty: &MemberType, j: &Json<'_>, depth: usize) -> Result<Value, DynError> {
        match ty {
            MemberType::Primitive(p) => primitive_from_json(*p, j),
            MemberType::Enum(name) => self.enum_from_json(name, j),
            MemberType::Struct(name) => match self.struct_index(name) {
                Some(si) => self.struct_from_json(si, j, depth),
                None => Err(DynError::new(DynErrorKind::UnknownType { name: name.full() }, Some(j.at))),
            },
        }
    }

    #[inline(never)]
    fn enum_from_json(&self, name: &TypeName, j: &Json<'_>) -> Result<Value, DynError> {
        let en = self.tables.enums.get(name).map(|&ei| (&self.schema.enums[ei], self.tables.enum_names[ei].clone()));
        let Some((en, full)) = en else {
            return Err(DynError::new(DynErrorKind::UnknownType { name: name.full() }, Some(j.at)));
        };
        let value = match &j.kind {
            JsonKind::Str(s) => match en.values.iter().find(|v| v.name == *s) {
                Some(v) => v.value,
                None => {
                    let names = en.values.iter().map(|v| v.name.as_str()).collect::<Vec<_>>().join(", ");
                    return Err(type_err(format!("a value of enum {name} ({names}) or its number"), j));
                }
            },
            _ => int_from_json(j, "int32_t", i32::MIN.into(), i32::MAX.into())? as i32,
        };
        Ok(Value::Enum(EnumValue { ty: full, value }))
    }
}

/// Every member named in a JSON object must be declared.
#[inline(never)]
fn check_member_names(st: &Struct, given: &[(String, Json<'_>)]) -> Result<(), DynError> {
    for (k, v) in given {
        if st.member(k).is_none() {
            let expected = st.members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ");
            return Err(DynError::new(DynErrorKind::UnknownMember { name: k.clone(), expected }, Some(v.at)));
        }
    }
    Ok(())
}

/// Notes the lengths an array member had at its variable dimensions; one count member must see one length.
#[inline(never)]
fn record_lengths<'s>(
    dims: &'s [Dim],
    lens: &Seen,
    at: usize,
    seen: &mut HashMap<&'s str, (usize, usize)>,
) -> Result<(), DynError> {
    for (d, l) in dims.iter().zip(lens) {
        if let (Dim::Variable { member }, Some(l)) = (d, l) {
            match seen.get(member.as_str()) {
                Some(&(first, _)) if first != *l => {
                    let kind = DynErrorKind::CountConflict { member: member.clone(), first, second: *l };
                    return Err(DynError::new(kind, Some(at)));
                }
                Some(_) => {}
                None => {
                    seen.insert(member.as_str(), (*l, at));
                }
            }
        }
    }
    Ok(())
}

/// Fills in count members left out (from the lengths seen), checks those given, and reports missing members.
#[inline(never)]
fn resolve_counts(
    st: &Struct,
    names: &[Arc<str>],
    values: Vec<Option<Value>>,
    seen: &HashMap<&str, (usize, usize)>,
    at_struct: usize,
) -> Result<Vec<(Arc<str>, Value)>, DynError> {
    // A missing array is reported before the count it would have given.
    for (m, v) in st.members.iter().zip(&values) {
        let is_count = st
            .members
            .iter()
            .any(|o| o.dims.iter().any(|d| matches!(d, Dim::Variable { member } if *member == m.name)));
        if v.is_none() && !is_count {
            let kind = DynErrorKind::MissingMember { name: m.name.clone() };
            return Err(DynError::new(kind, Some(at_struct)));
        }
    }
    let mut fields = Vec::with_capacity(st.members.len());
    for ((m, name), v) in st.members.iter().zip(names).zip(values) {
        let is_count = st
            .members
            .iter()
            .any(|o| o.dims.iter().any(|d| matches!(d, Dim::Variable { member } if *member == m.name)));
        let v = match (v, seen.get(m.name.as_str())) {
            (Some(v), Some(&(len, at))) => {
                let given = v.as_i64().unwrap_or(0);
                if usize::try_from(given).ok() != Some(len) {
                    let kind = if given < 0 {
                        DynErrorKind::NegativeCount { member: m.name.clone(), count: given }
                    } else {
                        DynErrorKind::LengthMismatch { expected: given as usize, actual: len }
                    };
                    let user = st
                        .members
                        .iter()
                        .find(|o| o.dims.iter().any(|d| matches!(d, Dim::Variable { member } if *member == m.name)));
                    let user_name = user.map(|u| u.name.as_str()).unwrap_or(&m.name);
                    return Err(DynError::new(kind, Some(at)).in_field(&Arc::from(user_name)));
                }
                v
            }
            (Some(v), None) => v,
            (None, Some(&(len, at))) => {
                let n = i128::try_from(len).unwrap_or(i128::MAX);
                let (ty, max) = match m.ty {
                    MemberType::Primitive(Primitive::Int8) => ("int8_t", i128::from(i8::MAX)),
                    MemberType::Primitive(Primitive::Int16) => ("int16_t", i128::from(i16::MAX)),
                    MemberType::Primitive(Primitive::Int32) => ("int32_t", i128::from(i32::MAX)),
                    _ => ("int64_t", i128::from(i64::MAX)),
                };
                if n > max {
                    let kind = DynErrorKind::OutOfRange { value: len.to_string(), ty: ty.to_owned() };
                    return Err(DynError::new(kind, Some(at)).in_field(name));
                }
                match m.ty {
                    MemberType::Primitive(Primitive::Int8) => Value::Int8(n as i8),
                    MemberType::Primitive(Primitive::Int16) => Value::Int16(n as i16),
                    MemberType::Primitive(Primitive::Int32) => Value::Int32(n as i32),
                    _ => Value::Int64(n as i64),
                }
            }
            (None, None) if is_count => {
                let kind = DynErrorKind::CannotInferCount { member: m.name.clone() };
                return Err(DynError::new(kind, Some(at_struct)));
            }
            (None, None) => {
                return Err(DynError::new(DynErrorKind::MissingMember { name: m.name.clone() }, Some(at_struct)))
            }
        };
        fields.push((name.clone(), v));
    }
    Ok(fields)
}

/// One primitive from JSON (kept out of the recursive functions so that their stack frames stay small).
#[inline(never)]
fn primitive_from_json(p: Primitive, j: &Json<'_>) -> Result<Value, DynError> {
    let v = match p {
        Primitive::Int8 => Value::Int8(int_from_json(j, "int8_t", i8::MIN.into(), i8::MAX.into())? as i8),
        Primitive::Int16 => Value::Int16(int_from_json(j, "int16_t", i16::MIN.into(), i16::MAX.into())? as i16),
        Primitive::Int32 => Value::Int32(int_from_json(j, "int32_t", i32::MIN.into(), i32::MAX.into())? as i32),
        Primitive::Int64 => Value::Int64(int_from_json(j, "int64_t", i64::MIN.into(), i64::MAX.into())?),
        Primitive::Byte => Value::Byte(int_from_json(j, "byte", 0, 255)? as u8),
        Primitive::Float => {
            Value::Float(float_from_json(j, "float", f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::is_finite)?)
        }
        Primitive::Double => {
            Value::Double(float_from_json(j, "double", f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::is_finite)?)
        }
        Primitive::Boolean => match j.kind {
            JsonKind::Bool(b) => Value::Boolean(b),
            _ => return Err(type_err("true or false (boolean)".into(), j)),
        },
        Primitive::String => match &j.kind {
            JsonKind::Str(s) => Value::String(s.clone()),
            _ => return Err(type_err("a string".into(), j)),
        },
    };
    Ok(v)
}
