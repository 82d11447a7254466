//! The dynamic codec: any LCM message to a [`Value`] tree and back, given only the checked [`Schema`].
//!
//! # Brief overview
//!
//! [`decode`] checks the fingerprint and walks the type's members in wire order, reading with the same checked
//! [`Reader`] that generated code uses; [`encode`] walks a [`Value`] against the schema and writes exactly the
//! bytes LCM writes, checking every value's type and every array's length against its count member. [`Codec`]
//! does the same with the per-schema tables (sizes, name index) built once, for repeated use. Values convert to JSON
//! ([`Value::to_json`]) and back ([`from_json`], guided by the schema).
//!
//! ```
//! use nerve_types::{check, Source, TypeName, dynamic};
//! let src = Source { path: "w.lcm".into(), text: "struct waypoint_t { string id; float position[2]; }".into() };
//! let schema = check(&[src], &[]).unwrap().schema;
//! let ty = TypeName::parse("waypoint_t");
//! let value = dynamic::from_json(&schema, &ty, r#"{"id": "A", "position": [1, -2.5]}"#).unwrap();
//! let bytes = dynamic::encode(&schema, &ty, &value).unwrap();
//! assert_eq!(bytes.len(), 22);
//! assert_eq!(dynamic::decode(&schema, &ty, &bytes).unwrap(), value);
//! assert_eq!(value.to_json(), r#"{"id":"A","position":[1.0,-2.5]}"#);
//! ```
//!
//! # Design
//!
//! Nothing read from the wire is trusted. Every array count is checked against the bytes that remain times the
//! least encoded size of one element ([`Layout`]) before anything is allocated; elements that take no bytes at all
//! (empty structs, sub-arrays with a zero dimension) are charged to a fixed budget of [`MAX_EMPTY_ELEMENTS`] per
//! message instead, since no byte count bounds them. Recursive types nest as deep as the input says, so nesting is
//! capped at [`MAX_DEPTH`] levels (each struct and each array dimension is one level) and deeper input is an error,
//! not a stack overflow. Every error says where: the field path (`path_t.waypoints[3].id`) and the byte offset.

mod error;
mod json;
pub mod registry;
mod transcode;

use std::collections::HashMap;
use std::sync::Arc;

use nerve_codec::Reader;

use crate::layout::Layout;
use crate::model::{Dim, MemberType, Primitive, Schema, Struct, TypeName};

pub use error::{DynError, DynErrorKind, PathSegment};
pub use json::json_string;
pub use registry::{Registry, RegistryError};
pub use transcode::{push_hex, CsvShape, JsonForm, Transcoder};

/// The deepest a value tree may nest: each struct and each array dimension is one level.
pub const MAX_DEPTH: usize = 512;

/// How many elements that take no bytes on the wire (empty structs, sub-arrays with a zero dimension) one message
/// may hold. Their count is not bounded by the message's length, so it is bounded here.
pub const MAX_EMPTY_ELEMENTS: usize = 1 << 16;

/// Any LCM value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `int8_t`
    Int8(i8),
    /// `int16_t`
    Int16(i16),
    /// `int32_t`
    Int32(i32),
    /// `int64_t`
    Int64(i64),
    /// `float`
    Float(f32),
    /// `double`
    Double(f64),
    /// `boolean`
    Boolean(bool),
    /// `byte`
    Byte(u8),
    /// `string`
    String(String),
    /// The innermost dimension of a `byte` array, kept as bytes.
    Bytes(Vec<u8>),
    /// One dimension of an array of anything else (or an outer dimension of a byte array).
    Array(Vec<Value>),
    /// A struct.
    Struct(StructValue),
    /// A (deprecated) enum.
    Enum(EnumValue),
}

/// A struct's value: its members in declaration order.
#[derive(Debug, Clone, PartialEq)]
pub struct StructValue {
    /// The struct's full name, e.g. `lcmtest.node_t`.
    pub ty: Arc<str>,
    /// `(member name, value)` in declaration order.
    pub fields: Vec<(Arc<str>, Value)>,
}

impl StructValue {
    /// The member called `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(n, _)| &**n == name).map(|(_, v)| v)
    }
}

/// An enum's value.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumValue {
    /// The enum's full name.
    pub ty: Arc<str>,
    /// Its value as encoded (which need not be one of the declared values).
    pub value: i32,
}

impl Value {
    /// The value of an integer (`int8_t` to `int64_t`, or `byte`), widened.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int8(v) => Some(v.into()),
            Value::Int16(v) => Some(v.into()),
            Value::Int32(v) => Some(v.into()),
            Value::Int64(v) => Some(v),
            Value::Byte(v) => Some(v.into()),
            _ => None,
        }
    }

    /// The struct value, if this is one.
    pub fn as_struct(&self) -> Option<&StructValue> {
        match self {
            Value::Struct(s) => Some(s),
            _ => None,
        }
    }

    /// A short description of what kind of value this is, for error messages.
    pub fn kind_name(&self) -> String {
        match self {
            Value::Int8(_) => "int8_t".into(),
            Value::Int16(_) => "int16_t".into(),
            Value::Int32(_) => "int32_t".into(),
            Value::Int64(_) => "int64_t".into(),
            Value::Float(_) => "float".into(),
            Value::Double(_) => "double".into(),
            Value::Boolean(_) => "boolean".into(),
            Value::Byte(_) => "byte".into(),
            Value::String(_) => "string".into(),
            Value::Bytes(b) => format!("byte array of {}", b.len()),
            Value::Array(a) => format!("array of {}", a.len()),
            Value::Struct(s) => format!("struct {}", s.ty),
            Value::Enum(e) => format!("enum {}", e.ty),
        }
    }

    /// The value as JSON text (see the [`json`](self#json) notes on [`Value::to_json`]).
    ///
    /// Structs are objects with members in declaration order, arrays are arrays (a byte array is an array of
    /// numbers), integers are exact (int64 too), floats are numbers that read back to the same bits (always with a
    /// `.` or an exponent, so `-0.0` stays a float), and the non-finite floats are the strings `"NaN"`,
    /// `"Infinity"` and `"-Infinity"`. An enum is its integer value.
    pub fn to_json(&self) -> String {
        json::to_json(self)
    }
}

/// Per-schema tables: the index from names to declarations and the names shared by every decoded value.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tables {
    structs: HashMap<TypeName, usize>,
    enums: HashMap<TypeName, usize>,
    struct_names: Vec<Arc<str>>,
    member_names: Vec<Vec<Arc<str>>>,
    enum_names: Vec<Arc<str>>,
}

impl Tables {
    pub(crate) fn new(schema: &Schema) -> Tables {
        let mut t = Tables::default();
        for (i, s) in schema.structs.iter().enumerate() {
            t.structs.entry(s.name.clone()).or_insert(i);
            t.struct_names.push(Arc::from(s.name.full()));
            t.member_names.push(s.members.iter().map(|m| Arc::from(m.name.as_str())).collect());
        }
        for (i, e) in schema.enums.iter().enumerate() {
            t.enums.entry(e.name.clone()).or_insert(i);
            t.enum_names.push(Arc::from(e.name.full()));
        }
        t
    }
}

/// The codec over one schema, with its tables built once. The free functions ([`decode`], [`encode`],
/// [`from_json`]) build one per call.
#[derive(Debug, Clone)]
pub struct Codec<'s> {
    schema: &'s Schema,
    layout: Layout,
    tables: Tables,
}

impl<'s> Codec<'s> {
    /// Builds the tables for `schema`.
    pub fn new(schema: &'s Schema) -> Codec<'s> {
        Codec { schema, layout: Layout::new(schema), tables: Tables::new(schema) }
    }

    pub(crate) fn ctx(&self) -> Ctx<'_> {
        Ctx { schema: self.schema, layout: &self.layout, tables: &self.tables }
    }

    /// Decodes a whole message of type `ty` (a struct, or a deprecated enum), checking its fingerprint first.
    /// Bytes after the message are ignored, as in LCM.
    pub fn decode(&self, ty: &TypeName, bytes: &[u8]) -> Result<Value, DynError> {
        self.ctx().decode(ty, bytes)
    }

    /// Decodes the body of struct `ty` (no fingerprint) from `r`, for a message nested in another format. Offsets in
    /// errors are offsets in the reader's buffer.
    pub fn decode_body(&self, ty: &TypeName, r: &mut Reader<'_>) -> Result<Value, DynError> {
        self.ctx().decode_body(ty, r)
    }

    /// Encodes `value` as a whole message of type `ty`, fingerprint first.
    pub fn encode(&self, ty: &TypeName, value: &Value) -> Result<Vec<u8>, DynError> {
        self.ctx().encode(ty, value)
    }

    /// Appends the body of struct `ty` (no fingerprint) to `out`.
    pub fn encode_body(&self, ty: &TypeName, value: &Value, out: &mut Vec<u8>) -> Result<(), DynError> {
        self.ctx().encode_body(ty, value, out)
    }

    /// Reads JSON text as a value of type `ty` (see [`from_json`]).
    pub fn from_json(&self, ty: &TypeName, text: &str) -> Result<Value, DynError> {
        self.ctx().read_json(ty, text)
    }
}

/// Decodes a whole message of type `ty` given only the schema (see [`Codec::decode`]).
pub fn decode(schema: &Schema, ty: &TypeName, bytes: &[u8]) -> Result<Value, DynError> {
    Codec::new(schema).decode(ty, bytes)
}

/// Decodes the body of struct `ty` from `r` (see [`Codec::decode_body`]).
pub fn decode_body(schema: &Schema, ty: &TypeName, r: &mut Reader<'_>) -> Result<Value, DynError> {
    Codec::new(schema).decode_body(ty, r)
}

/// Encodes `value` as a message of type `ty`, byte-identical to LCM (see [`Codec::encode`]).
pub fn encode(schema: &Schema, ty: &TypeName, value: &Value) -> Result<Vec<u8>, DynError> {
    Codec::new(schema).encode(ty, value)
}

/// Reads JSON text as a value of type `ty`.
///
/// The JSON is what [`Value::to_json`] writes: an object per struct with every member (in any order), arrays for
/// arrays, numbers for numbers (integers must be integers in range; a float may be written as an integer), the
/// strings `"NaN"`, `"Infinity"` and `"-Infinity"` for those floats, an enum as its number or value name. Unknown
/// members are errors. A **count member may be left out**: it is then taken from the length of the arrays it sizes
/// (which must agree); if it is given, it must equal their length. Errors name the member path and the byte
/// offset in the JSON text.
pub fn from_json(schema: &Schema, ty: &TypeName, text: &str) -> Result<Value, DynError> {
    Codec::new(schema).from_json(ty, text)
}

/// Borrowed tables: what the decoder, encoder and JSON reader work from.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub(crate) schema: &'a Schema,
    pub(crate) layout: &'a Layout,
    pub(crate) tables: &'a Tables,
}

/// How the element of an array (or a scalar member) is read and written.
fn elem_desc(ty: &MemberType) -> String {
    match ty {
        MemberType::Primitive(p) => p.lcm_name().to_owned(),
        MemberType::Struct(n) => format!("struct {n}"),
        MemberType::Enum(n) => format!("enum {n}"),
    }
}

fn decode_err(e: nerve_codec::DecodeError) -> DynError {
    DynError::new(DynErrorKind::Decode(e.kind), Some(e.offset))
}

/// The lengths of a member's dimensions, from the declaration and the count members already known.
fn dim_lengths<F>(member_dims: &[Dim], count_of: F) -> Result<Vec<usize>, DynError>
where
    F: Fn(&str) -> Option<i64>,
{
    member_dims
        .iter()
        .map(|d| match d {
            Dim::Fixed { len, .. } => Ok(*len),
            Dim::Variable { member } => {
                let c = count_of(member)
                    .ok_or_else(|| DynError::new(DynErrorKind::MissingMember { name: member.clone() }, None))?;
                usize::try_from(c)
                    .map_err(|_| DynError::new(DynErrorKind::NegativeCount { member: member.clone(), count: c }, None))
            }
        })
        .collect()
}

macro_rules! bulk {
    ($r:expr, $n:expr, $size:expr, $variant:ident, $t:ty) => {{
        let bytes = $r.take_array($n, $size).map_err(decode_err)?;
        Value::Array(
            bytes
                .chunks_exact($size)
                .map(|c| Value::$variant(<$t>::from_be_bytes(c.try_into().expect("exact chunks"))))
                .collect(),
        )
    }};
}

impl<'a> Ctx<'a> {
    pub(crate) fn struct_index(&self, ty: &TypeName) -> Option<usize> {
        self.tables.structs.get(ty).copied()
    }

    /// The struct an array's elements are, looked up once for the whole array rather than per element (hashing the
    /// name each time was a visible share of decoding an array of small structs, and more of encoding one); `None` for
    /// other element types and for an unknown struct, which the per-element path reports.
    pub(crate) fn element_struct(&self, ty: &MemberType) -> Option<usize> {
        match ty {
            MemberType::Struct(name) => self.struct_index(name),
            _ => None,
        }
    }

    pub(crate) fn decode(&self, ty: &TypeName, bytes: &[u8]) -> Result<Value, DynError> {
        let mut r = Reader::new(bytes);
        let root = ty.full();
        if let Some(si) = self.struct_index(ty) {
            let st = &self.schema.structs[si];
            r.expect_fingerprint(st.fingerprint).map_err(|e| decode_err(e).finish(&root))?;
            let mut budget = MAX_EMPTY_ELEMENTS;
            self.decode_struct(si, &mut r, 1, &mut budget).map_err(|e| e.finish(&root))
        } else if let Some(&ei) = self.tables.enums.get(ty) {
            let en = &self.schema.enums[ei];
            r.expect_fingerprint(en.hash).map_err(|e| decode_err(e).finish(&root))?;
            let value = r.get_i32().map_err(|e| decode_err(e).finish(&root))?;
            Ok(Value::Enum(EnumValue { ty: self.tables.enum_names[ei].clone(), value }))
        } else {
            Err(DynError::new(DynErrorKind::UnknownType { name: root.clone() }, None).finish(&root))
        }
    }

    pub(crate) fn decode_body(&self, ty: &TypeName, r: &mut Reader<'_>) -> Result<Value, DynError> {
        let root = ty.full();
        let si = self
            .struct_index(ty)
            .ok_or_else(|| DynError::new(DynErrorKind::UnknownType { name: root.clone() }, None).finish(&root))?;
        let mut budget = MAX_EMPTY_ELEMENTS;
        self.decode_struct(si, r, 1, &mut budget).map_err(|e| e.finish(&root))
    }

    fn decode_struct(
        &self,
        si: usize,
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
    ) -> Result<Value, DynError> {
        if depth > MAX_DEPTH {
            return Err(DynError::new(DynErrorKind::TooDeep { limit: MAX_DEPTH }, Some(r.position())));
        }
        let st: &Struct = &self.schema.structs[si];
        let names = &self.tables.member_names[si];
        let mut fields: Vec<(Arc<str>, Value)> = Vec::with_capacity(st.members.len());
        for (m, name) in st.members.iter().zip(names) {
            let v = if m.dims.is_empty() {
                self.decode_elem(&m.ty, r, depth + 1, budget)
            } else {
                let at = r.position();
                let count_of = |c: &str| fields.iter().find(|(n, _)| &**n == c).and_then(|(_, v)| v.as_i64());
                match dim_lengths(&m.dims, count_of) {
                    Ok(lens) => self.decode_array(&m.ty, &lens, r, depth + 1, budget),
                    Err(e) => Err(e.with_offset(at)),
                }
            }
            .map_err(|e| e.in_field(name))?;
            fields.push((name.clone(), v));
        }
        Ok(Value::Struct(StructValue { ty: self.tables.struct_names[si].clone(), fields }))
    }

    fn decode_elem(
        &self,
        ty: &MemberType,
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
    ) -> Result<Value, DynError> {
        match ty {
            MemberType::Primitive(p) => decode_primitive(*p, r),
            MemberType::Enum(name) => self.decode_enum(name, r),
            MemberType::Struct(name) => match self.struct_index(name) {
                Some(si) => self.decode_struct(si, r, depth, budget),
                None => Err(DynError::new(DynErrorKind::UnknownType { name: name.full() }, Some(r.position()))),
            },
        }
    }

    #[inline(never)]
    fn decode_enum(&self, name: &TypeName, r: &mut Reader<'_>) -> Result<Value, DynError> {
        let value = r.get_i32().map_err(decode_err)?;
        let ty = match self.tables.enums.get(name) {
            Some(&ei) => self.tables.enum_names[ei].clone(),
            None => Arc::from(name.full()),
        };
        Ok(Value::Enum(EnumValue { ty, value }))
    }

    fn decode_array(
        &self,
        ty: &MemberType,
        lens: &[usize],
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
    ) -> Result<Value, DynError> {
        if depth > MAX_DEPTH {
            return Err(DynError::new(DynErrorKind::TooDeep { limit: MAX_DEPTH }, Some(r.position())));
        }
        let Some((&n, rest)) = lens.split_first() else {
            return self.decode_elem(ty, r, depth, budget);
        };
        match ty {
            MemberType::Primitive(p) if rest.is_empty() => decode_primitive_array(*p, n, r),
            _ => self.decode_elements(ty, n, rest, r, depth, budget),
        }
    }

    /// Decodes `n` elements (sub-arrays when `rest` is not empty) after checking that they can be there.
    fn decode_elements(
        &self,
        ty: &MemberType,
        n: usize,
        rest: &[usize],
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
    ) -> Result<Value, DynError> {
        let sub_min = rest.iter().fold(self.layout.elem_min_size(ty), |a, &l| a.saturating_mul(l));
        if sub_min == 0 {
            if n > *budget {
                return Err(DynError::new(
                    DynErrorKind::TooManyEmptyElements { limit: MAX_EMPTY_ELEMENTS },
                    Some(r.position()),
                ));
            }
            *budget -= n;
        } else {
            r.ensure_elements(n, sub_min).map_err(decode_err)?;
        }
        let elem_struct = if rest.is_empty() { self.element_struct(ty) } else { None };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let v = match elem_struct {
                Some(si) => self.decode_struct(si, r, depth + 1, budget),
                None if rest.is_empty() => self.decode_elem(ty, r, depth + 1, budget),
                None => self.decode_array(ty, rest, r, depth + 1, budget),
            };
            out.push(v.map_err(|e| e.in_index(i))?);
        }
        Ok(Value::Array(out))
    }

    pub(crate) fn encode(&self, ty: &TypeName, value: &Value) -> Result<Vec<u8>, DynError> {
        let root = ty.full();
        let mut out = Vec::new();
        if let Some(si) = self.struct_index(ty) {
            out.extend_from_slice(&self.schema.structs[si].fingerprint.to_be_bytes());
            self.encode_struct(si, value, &mut out, 1).map_err(|e| e.finish(&root))?;
        } else if let Some(&ei) = self.tables.enums.get(ty) {
            out.extend_from_slice(&self.schema.enums[ei].hash.to_be_bytes());
            self.encode_elem(&MemberType::Enum(ty.clone()), value, &mut out, 1).map_err(|e| e.finish(&root))?;
        } else {
            return Err(DynError::new(DynErrorKind::UnknownType { name: root.clone() }, None).finish(&root));
        }
        Ok(out)
    }

    pub(crate) fn encode_body(&self, ty: &TypeName, value: &Value, out: &mut Vec<u8>) -> Result<(), DynError> {
        let root = ty.full();
        let si = self
            .struct_index(ty)
            .ok_or_else(|| DynError::new(DynErrorKind::UnknownType { name: root.clone() }, None).finish(&root))?;
        self.encode_struct(si, value, out, 1).map_err(|e| e.finish(&root))
    }

    fn encode_struct(&self, si: usize, value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), DynError> {
        if depth > MAX_DEPTH {
            return Err(DynError::new(DynErrorKind::TooDeep { limit: MAX_DEPTH }, None));
        }
        let st = &self.schema.structs[si];
        let full = &self.tables.struct_names[si];
        let sv = match value {
            Value::Struct(sv) if sv.ty == *full => sv,
            other => {
                return Err(DynError::new(
                    DynErrorKind::TypeMismatch { expected: format!("struct {full}"), found: other.kind_name() },
                    None,
                ))
            }
        };
        for (i, m) in st.members.iter().enumerate() {
            let Some((name, v)) = sv.fields.get(i) else {
                return Err(DynError::new(DynErrorKind::MissingMember { name: m.name.clone() }, None));
            };
            if **name != *m.name {
                let kind = if st.member(name).is_some() {
                    DynErrorKind::MemberOrder { expected: m.name.clone(), found: name.to_string() }
                } else {
                    DynErrorKind::UnknownMember { name: name.to_string(), expected: member_list(st) }
                };
                return Err(DynError::new(kind, None));
            }
            let r = if m.dims.is_empty() {
                self.encode_elem(&m.ty, v, out, depth + 1)
            } else {
                let count_of = |c: &str| sv.get(c).and_then(Value::as_i64);
                dim_lengths(&m.dims, count_of).and_then(|lens| self.encode_array(&m.ty, &lens, v, out, depth + 1))
            };
            r.map_err(|e| e.in_field(name))?;
        }
        if let Some((name, _)) = sv.fields.get(st.members.len()) {
            return Err(DynError::new(
                DynErrorKind::UnknownMember { name: name.to_string(), expected: member_list(st) },
                None,
            ));
        }
        Ok(())
    }

    fn encode_array(
        &self,
        ty: &MemberType,
        lens: &[usize],
        value: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DynError> {
        if depth > MAX_DEPTH {
            return Err(DynError::new(DynErrorKind::TooDeep { limit: MAX_DEPTH }, None));
        }
        let Some((&n, rest)) = lens.split_first() else {
            return self.encode_elem(ty, value, out, depth);
        };
        let mismatch = |actual| DynError::new(DynErrorKind::LengthMismatch { expected: n, actual }, None);
        match value {
            Value::Bytes(b) if rest.is_empty() && *ty == MemberType::Primitive(Primitive::Byte) => {
                if b.len() != n {
                    return Err(mismatch(b.len()));
                }
                out.extend_from_slice(b);
                Ok(())
            }
            Value::Array(items) => {
                if items.len() != n {
                    return Err(mismatch(items.len()));
                }
                let elem_struct = if rest.is_empty() { self.element_struct(ty) } else { None };
                for (i, item) in items.iter().enumerate() {
                    let r = match elem_struct {
                        Some(si) => self.encode_struct(si, item, out, depth + 1),
                        None if rest.is_empty() => self.encode_elem(ty, item, out, depth + 1),
                        None => self.encode_array(ty, rest, item, out, depth + 1),
                    };
                    r.map_err(|e| e.in_index(i))?;
                }
                Ok(())
            }
            other => Err(DynError::new(
                DynErrorKind::TypeMismatch {
                    expected: format!("array of {}", elem_desc(ty)),
                    found: other.kind_name(),
                },
                None,
            )),
        }
    }

    fn encode_elem(&self, ty: &MemberType, value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), DynError> {
        match (ty, value) {
            (MemberType::Primitive(p), v) => return encode_primitive(*p, v, out),
            (MemberType::Enum(name), Value::Enum(e)) if *e.ty == *name.full() => {
                out.extend_from_slice(&e.value.to_be_bytes())
            }
            (MemberType::Struct(name), v) => {
                let si = self
                    .struct_index(name)
                    .ok_or_else(|| DynError::new(DynErrorKind::UnknownType { name: name.full() }, None))?;
                return self.encode_struct(si, v, out, depth);
            }
            _ => return Err(mismatch(ty, value)),
        };
        Ok(())
    }
}

/// One primitive value (kept out of the recursive functions so that their stack frames stay small).
#[inline(never)]
fn decode_primitive(p: Primitive, r: &mut Reader<'_>) -> Result<Value, DynError> {
    let v = match p {
        Primitive::Int8 => r.get_i8().map(Value::Int8),
        Primitive::Int16 => r.get_i16().map(Value::Int16),
        Primitive::Int32 => r.get_i32().map(Value::Int32),
        Primitive::Int64 => r.get_i64().map(Value::Int64),
        Primitive::Float => r.get_f32().map(Value::Float),
        Primitive::Double => r.get_f64().map(Value::Double),
        Primitive::Boolean => r.get_bool().map(Value::Boolean),
        Primitive::Byte => r.get_u8().map(Value::Byte),
        Primitive::String => r.get_str().map(|s| Value::String(s.to_owned())),
    };
    v.map_err(decode_err)
}

/// A one-dimensional array of numbers: one bounds check, one pass.
#[inline(never)]
fn decode_primitive_array(p: Primitive, n: usize, r: &mut Reader<'_>) -> Result<Value, DynError> {
    let v = match p {
        Primitive::Byte => Value::Bytes(r.get_bytes(n).map_err(decode_err)?.to_vec()),
        Primitive::Int8 => bulk!(r, n, 1, Int8, i8),
        Primitive::Int16 => bulk!(r, n, 2, Int16, i16),
        Primitive::Int32 => bulk!(r, n, 4, Int32, i32),
        Primitive::Int64 => bulk!(r, n, 8, Int64, i64),
        Primitive::Float => bulk!(r, n, 4, Float, f32),
        Primitive::Double => bulk!(r, n, 8, Double, f64),
        Primitive::Boolean => {
            let bytes = r.take_array(n, 1).map_err(decode_err)?;
            Value::Array(bytes.iter().map(|&b| Value::Boolean(b != 0)).collect())
        }
        Primitive::String => {
            r.ensure_elements(n, 5).map_err(decode_err)?;
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                out.push(decode_primitive(p, r).map_err(|e| e.in_index(i))?);
            }
            Value::Array(out)
        }
    };
    Ok(v)
}

/// One primitive value (kept out of the recursive functions so that their stack frames stay small).
#[inline(never)]
fn encode_primitive(p: Primitive, v: &Value, out: &mut Vec<u8>) -> Result<(), DynError> {
    match (p, v) {
        (Primitive::Int8, Value::Int8(x)) => out.extend_from_slice(&x.to_be_bytes()),
        (Primitive::Int16, Value::Int16(x)) => out.extend_from_slice(&x.to_be_bytes()),
        (Primitive::Int32, Value::Int32(x)) => out.extend_from_slice(&x.to_be_bytes()),
        (Primitive::Int64, Value::Int64(x)) => out.extend_from_slice(&x.to_be_bytes()),
        (Primitive::Float, Value::Float(x)) => out.extend_from_slice(&x.to_be_bytes()),
        (Primitive::Double, Value::Double(x)) => out.extend_from_slice(&x.to_be_bytes()),
        (Primitive::Boolean, Value::Boolean(x)) => out.push(u8::from(*x)),
        (Primitive::Byte, Value::Byte(x)) => out.push(*x),
        (Primitive::String, Value::String(s)) => {
            let len = i32::try_from(s.len() + 1)
                .map_err(|_| DynError::new(DynErrorKind::StringTooLong { len: s.len() }, None))?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        }
        _ => return Err(mismatch(&MemberType::Primitive(p), v)),
    }
    Ok(())
}

fn mismatch(ty: &MemberType, value: &Value) -> DynError {
    DynError::new(DynErrorKind::TypeMismatch { expected: elem_desc(ty), found: value.kind_name() }, None)
}

fn member_list(st: &Struct) -> String {
    st.members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests;
