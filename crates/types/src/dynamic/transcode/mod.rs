//! The streaming transcoder: LCM bytes straight to JSON text or CSV cells, with no value tree.
//!
//! # Brief overview
//!
//! [`Transcoder`] owns a [`Registry`] and compiles a plan per struct once (members in wire order, element kinds,
//! fixed dimensions, which earlier member gives each variable one, JSON keys already escaped). [`Transcoder::json`]
//! identifies a message by its fingerprint and appends its JSON to a caller's buffer in one pass over the bytes,
//! in either of two [`JsonForm`]s; [`Transcoder::csv_merge`] and [`Transcoder::csv_row`] do the same for CSV
//! through a [`CsvShape`] (the columns a type's messages need).
//!
//! ```
//! use nerve_types::{check, dynamic, Registry, Source, TypeName};
//! use nerve_types::dynamic::{JsonForm, Transcoder};
//! let src = Source { path: "w.lcm".into(), text: "struct waypoint_t { string id; float position[2]; }".into() };
//! let registry = Registry::new(check(&[src], &[]).unwrap().schema);
//! let ty = TypeName::parse("waypoint_t");
//! let value = registry.from_json(&ty, r#"{"id": "A", "position": [1, -2.5]}"#).unwrap();
//! let bytes = registry.encode(&ty, &value).unwrap();
//! let t = Transcoder::new(registry);
//! let mut out = Vec::new();
//! let st = t.json(&bytes, JsonForm::Value, &mut out).unwrap();
//! assert_eq!(st.name.full(), "waypoint_t");
//! assert_eq!(out, value.to_json().as_bytes());
//! ```
//!
//! # Design
//!
//! The output is exactly what the tree path writes ([`Value::to_json`](super::Value::to_json) for
//! [`JsonForm::Value`]), and so are the errors: the walk makes the same checks as the tree decoder in the same order
//! (fingerprint, every count against the bytes left times the least element size, the budget of elements that take
//! no bytes, the depth limit, string lengths, NULs and UTF-8) and builds the same [`DynError`] with the same path
//! and offset, so a caller cannot tell the two apart except by speed. Differential tests over the corpus and random
//! messages, and the `dynamic_decode` fuzz target, hold it to that. Nothing is allocated per message beyond the
//! output's growth; numbers are formatted with `itoa`, `ryu` and Schubfach under Nerve's float rules (see `num`).

mod csv;
mod f32s;
mod num;
mod plan;

use std::collections::HashMap;

use nerve_codec::{fingerprint_of, Reader};

use self::num::{push_base64, push_byte_numbers, push_f32_json, push_f64_text, push_int, push_json_str};
use self::plan::{DimPlan, Elem, MemberPlan, Op, Plans};
use super::registry::{Registry, RegistryError};
use super::{decode_err, DynError, DynErrorKind, MAX_DEPTH, MAX_EMPTY_ELEMENTS};
use crate::model::{Primitive, Struct};

pub use self::csv::CsvShape;
pub use self::num::push_hex;

/// Which JSON the transcoder writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonForm {
    /// What [`Value::to_json`](super::Value::to_json) writes: nested arrays, a byte array as an array of numbers,
    /// NaN and the infinities as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
    Value,
    /// The form a JSON Schema can describe per member: every array flattened row-major into one, a byte array
    /// (of any dimensions) as one base64 string, NaN and the infinities as `null`. (MCAP export writes this.)
    Flat,
}

/// A fingerprint's struct: the one the registry answers with, and the one decoded (the first of its name).
#[derive(Debug, Clone)]
enum Lookup {
    One { st: usize, si: usize },
    Many(Vec<String>),
}

/// LCM messages to JSON text or CSV cells in one pass, with plans compiled once per type (see the module docs).
#[derive(Debug, Clone)]
pub struct Transcoder {
    registry: Registry,
    plans: Plans,
    lookup: HashMap<u64, Lookup>,
}

const VALUE: u8 = 0;
const FLAT: u8 = 1;
const SKIP: u8 = 2;

impl Transcoder {
    /// Compiles a plan for every struct of `registry`.
    pub fn new(registry: Registry) -> Transcoder {
        let schema = registry.schema();
        let plans = Plans::new(schema);
        let mut lookup = HashMap::new();
        for (i, s) in schema.structs.iter().enumerate() {
            let entry = lookup.entry(s.fingerprint);
            match entry {
                std::collections::hash_map::Entry::Vacant(v) => {
                    if let Some(&si) = plans.by_name.get(&s.name) {
                        v.insert(Lookup::One { st: i, si });
                    }
                }
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    let names = match o.get() {
                        Lookup::One { st, .. } => vec![schema.structs[*st].name.full(), s.name.full()],
                        Lookup::Many(names) => names.iter().cloned().chain([s.name.full()]).collect(),
                    };
                    o.insert(Lookup::Many(names));
                }
            }
        }
        Transcoder { registry, plans, lookup }
    }

    /// The registry it was made from.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Gives the walk the message's plan, reader and limits, after the checks [`Registry::decode`] makes first;
    /// errors are [`Registry::decode`]'s, path and offset included.
    fn run<T>(
        &self,
        bytes: &[u8],
        f: impl FnOnce(&Walk<'_>, usize, &mut Reader<'_>, &mut usize) -> Result<T, DynError>,
    ) -> Result<(&Struct, T), RegistryError> {
        let fingerprint = fingerprint_of(bytes).ok_or(RegistryError::TooShort { len: bytes.len() })?;
        let (st, si) = match self.lookup.get(&fingerprint) {
            None => return Err(RegistryError::Unknown { fingerprint }),
            Some(Lookup::Many(names)) => return Err(RegistryError::Ambiguous { fingerprint, names: names.clone() }),
            Some(Lookup::One { st, si }) => (*st, *si),
        };
        let plan = &self.plans.structs[si];
        let mut r = Reader::new(bytes);
        r.expect_fingerprint(plan.fingerprint).map_err(|e| decode_err(e).finish(&plan.full))?;
        let walk = Walk { plans: &self.plans, bytes };
        let mut budget = MAX_EMPTY_ELEMENTS;
        let t = f(&walk, si, &mut r, &mut budget).map_err(|e| e.finish(&plan.full))?;
        Ok((&self.registry.schema().structs[st], t))
    }

    /// Identifies `bytes` by fingerprint (as [`Registry::decode`] does) and appends the message's JSON in `form` to
    /// `out`. On error `out` is left as it was and the error is the one [`Registry::decode`] gives.
    pub fn json<'s>(&'s self, bytes: &[u8], form: JsonForm, out: &mut Vec<u8>) -> Result<&'s Struct, RegistryError> {
        let start = out.len();
        let r = self.run(bytes, |w, si, r, budget| match form {
            JsonForm::Value if w.write_plain::<VALUE>(si, r, 1, out) => Ok(()),
            JsonForm::Value => w.structure::<VALUE>(si, r, 1, budget, out),
            JsonForm::Flat if w.write_plain::<FLAT>(si, r, 1, out) => Ok(()),
            JsonForm::Flat => w.structure::<FLAT>(si, r, 1, budget, out),
        });
        match r {
            Ok((st, ())) => Ok(st),
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }

    /// Checks that `bytes` decode (as [`Registry::decode`] would) without writing anything: the type, or the error.
    pub fn validate(&self, bytes: &[u8]) -> Result<&Struct, RegistryError> {
        self.run(bytes, |w, si, r, budget| w.structure::<SKIP>(si, r, 1, budget, &mut Vec::new())).map(|(st, ())| st)
    }

    /// The escaped JSON string of a struct's full name (`"pkg.name_t"`, quotes included).
    pub fn json_type_name(&self, st: &Struct) -> Option<&[u8]> {
        let si = *self.plans.by_name.get(&st.name)?;
        Some(&self.plans.structs[si].full_json)
    }
}

/// A struct's count members' values, kept while its later members are read.
enum Counts {
    Inline([i64; 8]),
    Heap(Vec<i64>),
}

impl Counts {
    #[inline]
    fn new(n: usize) -> Counts {
        if n <= 8 {
            Counts::Inline([0; 8])
        } else {
            Counts::Heap(vec![0; n])
        }
    }

    #[inline]
    fn get(&self, k: usize) -> i64 {
        match self {
            Counts::Inline(a) => a[k],
            Counts::Heap(v) => v[k],
        }
    }

    #[inline]
    fn set(&mut self, k: usize, v: i64) {
        match self {
            Counts::Inline(a) => a[k] = v,
            Counts::Heap(x) => x[k] = v,
        }
    }
}

/// A member's dimension lengths, resolved.
enum Lens {
    Inline([usize; 8], usize),
    Heap(Vec<usize>),
}

impl Lens {
    #[inline]
    fn as_slice(&self) -> &[usize] {
        match self {
            Lens::Inline(a, n) => &a[..*n],
            Lens::Heap(v) => v,
        }
    }
}

/// The lengths of `m`'s dimensions, as the tree decoder's `dim_lengths` finds them (errors without an offset yet).
#[inline]
fn lens(m: &MemberPlan, counts: &Counts) -> Result<Lens, DynError> {
    let one = |d: &DimPlan| match d {
        DimPlan::Fixed(n) => Ok(*n),
        DimPlan::Count { slot, member } => {
            let c = counts.get(*slot);
            usize::try_from(c)
                .map_err(|_| DynError::new(DynErrorKind::NegativeCount { member: member.clone(), count: c }, None))
        }
        DimPlan::Missing { member } => Err(DynError::new(DynErrorKind::MissingMember { name: member.clone() }, None)),
    };
    if m.dims.len() <= 8 {
        let mut a = [0usize; 8];
        for (slot, d) in a.iter_mut().zip(m.dims.iter()) {
            *slot = one(d)?;
        }
        Ok(Lens::Inline(a, m.dims.len()))
    } else {
        m.dims.iter().map(one).collect::<Result<Vec<_>, _>>().map(Lens::Heap)
    }
}

#[cold]
fn too_deep(r: &Reader<'_>) -> DynError {
    DynError::new(DynErrorKind::TooDeep { limit: MAX_DEPTH }, Some(r.position()))
}

/// Ends a container opened with `open`: the trailing separator becomes the closer.
#[inline]
fn close(out: &mut Vec<u8>, closer: u8) {
    match out.last_mut() {
        Some(last) if *last == b',' => *last = closer,
        _ => out.push(closer),
    }
}

/// A finite or non-finite float's JSON in mode `M`: Nerve's text, or the `"NaN"` strings (VALUE) / `null` (FLAT).
#[inline]
fn push_f64<const M: u8>(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        push_f64_text(out, x);
    } else {
        push_non_finite::<M>(out, x);
    }
}

#[inline]
fn push_f32<const M: u8>(out: &mut Vec<u8>, x: f32) {
    if x.is_finite() {
        push_f32_json(out, x);
    } else {
        push_non_finite::<M>(out, f64::from(x));
    }
}

#[cold]
fn push_non_finite<const M: u8>(out: &mut Vec<u8>, x: f64) {
    out.extend_from_slice(if M == FLAT {
        b"null"
    } else if x.is_nan() {
        b"\"NaN\""
    } else if x > 0.0 {
        b"\"Infinity\""
    } else {
        b"\"-Infinity\""
    });
}

/// One message's walk: the plans and the message's bytes (byte arrays are sliced from them).
struct Walk<'a> {
    plans: &'a Plans,
    bytes: &'a [u8],
}

impl Walk<'_> {
    /// Reads past `n` structs `si` that start at `depth`, if they are plain (see `StructPlan::plain`), are all
    /// there and stay within the depth limit: then nothing in them can be wrong. Otherwise reads nothing.
    #[inline]
    pub(crate) fn skip_plain(&self, si: usize, n: usize, r: &mut Reader<'_>, depth: usize) -> bool {
        let Some((size, extra)) = self.plans.structs[si].plain else { return false };
        match size.checked_mul(n) {
            Some(total) if total <= r.remaining() && depth + extra <= MAX_DEPTH => r.take(total).is_ok(),
            _ => false,
        }
    }

    /// Writes a plain struct that starts at `depth` by its program, if it has one, is all there and stays within
    /// the depth limit (then nothing in it can be wrong). Otherwise writes and reads nothing.
    #[inline]
    fn write_plain<const M: u8>(&self, si: usize, r: &mut Reader<'_>, depth: usize, out: &mut Vec<u8>) -> bool {
        let p = &self.plans.structs[si];
        let (Some(ops), Some((size, extra))) = (&p.ops, p.plain) else { return false };
        if depth + extra > MAX_DEPTH {
            return false;
        }
        let mut ahead = r.clone();
        let Ok(data) = ahead.take(size) else { return false };
        let start = out.len();
        if run_ops::<M>(&ops[usize::from(M == FLAT)], data, out) {
            *r = ahead;
            true
        } else {
            out.truncate(start);
            false
        }
    }

    /// The last dimension of an array of `n` plain structs that start at `depth`, written as the loop in `array`
    /// writes it (brackets in VALUE mode, each element followed by a comma), by the struct's program with one length
    /// check for all of them, if it has one, they are all there and within the depth limit. Otherwise writes and
    /// reads nothing.
    fn write_plain_run<const M: u8>(
        &self,
        si: usize,
        n: usize,
        r: &mut Reader<'_>,
        depth: usize,
        out: &mut Vec<u8>,
    ) -> bool {
        let p = &self.plans.structs[si];
        let (Some(ops), Some((size, extra))) = (&p.ops, p.plain) else { return false };
        if depth + extra > MAX_DEPTH {
            return false;
        }
        let mut ahead = r.clone();
        let Some(data) = size.checked_mul(n).and_then(|len| ahead.take(len).ok()) else { return false };
        let ops = &ops[usize::from(M == FLAT)];
        let start = out.len();
        if M == VALUE {
            out.push(b'[');
        }
        for one in data.chunks_exact(size) {
            if !run_ops::<M>(ops, one, out) {
                out.truncate(start);
                return false;
            }
            out.push(b',');
        }
        if M == VALUE {
            close(out, b']');
        }
        *r = ahead;
        true
    }

    /// A struct (the tree decoder's `decode_struct`).
    fn structure<const M: u8>(
        &self,
        si: usize,
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DynError> {
        if depth > MAX_DEPTH {
            return Err(too_deep(r));
        }
        let p = &self.plans.structs[si];
        let mut counts = Counts::new(p.count_slots);
        if M != SKIP {
            out.push(b'{');
        }
        for m in p.members.iter() {
            if M != SKIP {
                out.extend_from_slice(&m.key);
            }
            self.member::<M>(m, r, depth, budget, out, &mut counts).map_err(|e| e.in_field(&m.name))?;
            if M != SKIP {
                out.push(b',');
            }
        }
        if M != SKIP {
            close(out, b'}');
        }
        Ok(())
    }

    fn member<const M: u8>(
        &self,
        m: &MemberPlan,
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
        out: &mut Vec<u8>,
        counts: &mut Counts,
    ) -> Result<(), DynError> {
        if m.dims.is_empty() {
            let c = self.elem::<M>(&m.elem, r, depth + 1, budget, out)?;
            if let Some(k) = m.count_slot {
                counts.set(k, c);
            }
            return Ok(());
        }
        let at = r.position();
        let lens = lens(m, counts).map_err(|e| e.with_offset(at))?;
        let lens = lens.as_slice();
        if M == FLAT {
            if m.is_byte_array() {
                let start = r.position();
                self.array::<SKIP>(m, lens, r, depth + 1, budget, out)?;
                out.push(b'"');
                push_base64(out, &self.bytes[start..r.position()]);
                out.push(b'"');
            } else {
                out.push(b'[');
                self.array::<FLAT>(m, lens, r, depth + 1, budget, out)?;
                close(out, b']');
            }
            return Ok(());
        }
        self.array::<M>(m, lens, r, depth + 1, budget, out)
    }

    /// One element (the tree decoder's `decode_elem`); an integer's value is returned for count members.
    #[inline]
    fn elem<const M: u8>(
        &self,
        e: &Elem,
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
        out: &mut Vec<u8>,
    ) -> Result<i64, DynError> {
        match e {
            Elem::Prim(p) => scalar::<M>(*p, r, out),
            Elem::Enum => {
                let v = r.get_i32().map_err(decode_err)?;
                if M != SKIP {
                    push_int(out, v);
                }
                Ok(0)
            }
            Elem::Struct(si) => {
                if M == SKIP {
                    if self.skip_plain(*si, 1, r, depth) {
                        return Ok(0);
                    }
                } else if self.write_plain::<M>(*si, r, depth, out) {
                    return Ok(0);
                }
                self.structure::<M>(*si, r, depth, budget, out).map(|()| 0)
            }
            Elem::Unknown(name) => {
                Err(DynError::new(DynErrorKind::UnknownType { name: name.clone() }, Some(r.position())))
            }
        }
    }

    /// An array level (the tree decoder's `decode_array` and `decode_elements`). In FLAT mode only leaves are
    /// written, each followed by a comma; the member writes the one pair of brackets.
    fn array<const M: u8>(
        &self,
        m: &MemberPlan,
        lens: &[usize],
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DynError> {
        if depth > MAX_DEPTH {
            return Err(too_deep(r));
        }
        let Some((&n, rest)) = lens.split_first() else {
            return self.elem::<M>(&m.elem, r, depth, budget, out).map(|_| ());
        };
        if let Elem::Prim(p) = m.elem {
            if rest.is_empty() {
                return prim_array::<M>(p, n, r, out);
            }
        }
        if let (SKIP, Elem::Struct(si), true) = (M, &m.elem, rest.is_empty()) {
            if self.skip_plain(*si, n, r, depth + 1) {
                return Ok(());
            }
        }
        if let (false, Elem::Struct(si), true) = (M == SKIP, &m.elem, rest.is_empty()) {
            if self.write_plain_run::<M>(*si, n, r, depth + 1, out) {
                return Ok(());
            }
        }
        let sub_min = rest.iter().fold(m.elem_min, |a, &l| a.saturating_mul(l));
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
        if M == VALUE {
            out.push(b'[');
        }
        for i in 0..n {
            let v = if rest.is_empty() {
                self.elem::<M>(&m.elem, r, depth + 1, budget, out).map(|_| ())
            } else {
                self.array::<M>(m, rest, r, depth + 1, budget, out)
            };
            v.map_err(|e| e.in_index(i))?;
            if M == VALUE || (M == FLAT && rest.is_empty()) {
                out.push(b',');
            }
        }
        if M == VALUE {
            close(out, b']');
        }
        Ok(())
    }
}

/// Runs a plain struct's program over its bytes (exactly its size). `false` if the program and the bytes disagree,
/// which the plans rule out; the caller then takes the walk.
fn run_ops<const M: u8>(ops: &[Op], data: &[u8], out: &mut Vec<u8>) -> bool {
    let mut pos = 0usize;
    for op in ops {
        match op {
            Op::Short(text, len) => {
                let start = out.len();
                out.extend_from_slice(text);
                out.truncate(start + usize::from(*len));
            }
            Op::Lit(text) => out.extend_from_slice(text),
            Op::Run(p, n) => {
                let Some(size) = p.wire_size() else { return false };
                let Some(bytes) = size.checked_mul(*n).and_then(|len| data.get(pos..pos + len)) else { return false };
                pos += bytes.len();
                if !run_values::<M>(*p, bytes, out) {
                    return false;
                }
            }
            Op::Enums(n) => {
                let Some(bytes) = data.get(pos..pos + 4 * n) else { return false };
                pos += bytes.len();
                for (k, c) in bytes.chunks_exact(4).enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    push_int(out, i32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                }
            }
            Op::Base64(n) => {
                let Some(bytes) = data.get(pos..pos + n) else { return false };
                pos += n;
                push_base64(out, bytes);
            }
            // (CSV programs only.)
            Op::Hex(_) => return false,
        }
    }
    pos == data.len()
}

/// Comma-separated values of a primitive (not a string) from their bytes.
#[inline]
fn run_values<const M: u8>(p: Primitive, bytes: &[u8], out: &mut Vec<u8>) -> bool {
    macro_rules! each {
        ($size:expr, $t:ty, $push:expr) => {{
            for (k, c) in bytes.chunks_exact($size).enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                let mut a = [0u8; $size];
                a.copy_from_slice(c);
                $push(&mut *out, <$t>::from_be_bytes(a));
            }
        }};
    }
    match p {
        Primitive::Byte => push_byte_numbers(out, bytes),
        Primitive::Int8 => each!(1, i8, push_int::<i8>),
        Primitive::Int16 => each!(2, i16, push_int::<i16>),
        Primitive::Int32 => each!(4, i32, push_int::<i32>),
        Primitive::Int64 => each!(8, i64, push_int::<i64>),
        Primitive::Float => each!(4, f32, push_f32::<M>),
        Primitive::Double => each!(8, f64, push_f64::<M>),
        Primitive::Boolean => {
            for (k, &b) in bytes.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(if b != 0 { b"true" } else { b"false" });
            }
        }
        Primitive::String => return false,
    }
    true
}

/// One primitive value; an integer's value is returned (for count members).
#[inline]
fn scalar<const M: u8>(p: Primitive, r: &mut Reader<'_>, out: &mut Vec<u8>) -> Result<i64, DynError> {
    macro_rules! int {
        ($get:ident) => {{
            let v = r.$get().map_err(decode_err)?;
            if M != SKIP {
                push_int(out, v);
            }
            Ok(i64::from(v))
        }};
    }
    match p {
        Primitive::Int8 => int!(get_i8),
        Primitive::Int16 => int!(get_i16),
        Primitive::Int32 => int!(get_i32),
        Primitive::Int64 => int!(get_i64),
        Primitive::Byte => int!(get_u8),
        Primitive::Float => {
            let v = r.get_f32().map_err(decode_err)?;
            if M != SKIP {
                push_f32::<M>(out, v);
            }
            Ok(0)
        }
        Primitive::Double => {
            let v = r.get_f64().map_err(decode_err)?;
            if M != SKIP {
                push_f64::<M>(out, v);
            }
            Ok(0)
        }
        Primitive::Boolean => {
            let v = r.get_bool().map_err(decode_err)?;
            if M != SKIP {
                out.extend_from_slice(if v { b"true" } else { b"false" });
            }
            Ok(0)
        }
        Primitive::String => {
            let s = r.get_str().map_err(decode_err)?;
            if M != SKIP {
                push_json_str(out, s);
            }
            Ok(0)
        }
    }
}

/// The last dimension of a primitive array (the tree decoder's `decode_primitive_array`): VALUE writes brackets,
/// FLAT writes each element followed by a comma, SKIP only checks.
fn prim_array<const M: u8>(p: Primitive, n: usize, r: &mut Reader<'_>, out: &mut Vec<u8>) -> Result<(), DynError> {
    macro_rules! bulk {
        ($size:expr, $t:ty, $push:expr) => {{
            let bytes = r.take_array(n, $size).map_err(decode_err)?;
            if M != SKIP {
                if M == VALUE {
                    out.push(b'[');
                }
                out.reserve(n * 12);
                for c in bytes.chunks_exact($size) {
                    let v = <$t>::from_be_bytes(c.try_into().expect("exact chunks"));
                    $push(&mut *out, v);
                    out.push(b',');
                }
                if M == VALUE {
                    close(out, b']');
                }
            }
        }};
    }
    match p {
        Primitive::Byte => {
            let bytes = r.get_bytes(n).map_err(decode_err)?;
            if M == VALUE {
                out.push(b'[');
                push_byte_numbers(out, bytes);
                out.push(b']');
            } else if M == FLAT && !bytes.is_empty() {
                push_byte_numbers(out, bytes);
                out.push(b',');
            }
        }
        Primitive::Int8 => bulk!(1, i8, push_int::<i8>),
        Primitive::Int16 => bulk!(2, i16, push_int::<i16>),
        Primitive::Int32 => bulk!(4, i32, push_int::<i32>),
        Primitive::Int64 => bulk!(8, i64, push_int::<i64>),
        Primitive::Float => bulk!(4, f32, push_f32::<M>),
        Primitive::Double => bulk!(8, f64, push_f64::<M>),
        Primitive::Boolean => {
            let bytes = r.take_array(n, 1).map_err(decode_err)?;
            if M != SKIP {
                if M == VALUE {
                    out.push(b'[');
                }
                for &b in bytes {
                    out.extend_from_slice(if b != 0 { b"true," } else { b"false," });
                }
                if M == VALUE {
                    close(out, b']');
                }
            }
        }
        Primitive::String => {
            r.ensure_elements(n, 5).map_err(decode_err)?;
            if M == VALUE {
                out.push(b'[');
            }
            for i in 0..n {
                let s = r.get_str().map_err(|e| decode_err(e).in_index(i))?;
                if M != SKIP {
                    push_json_str(out, s);
                    out.push(b',');
                }
            }
            if M == VALUE {
                close(out, b']');
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
