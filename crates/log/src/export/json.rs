//! The JSON form of a message in MCAP exports (what [`super::json_schema`] describes): multi-dimensional arrays
//! flattened row-major, byte arrays as base64, NaN and infinities as `null` (`JsonForm::Flat`, which the
//! transcoder writes); base64 itself, for raw messages; and, in tests, the same form written from a value tree,
//! as the exporter wrote it before the transcoder (the reference the transcoder's output is held to).

#[cfg(test)]
use std::collections::HashMap;

#[cfg(test)]
use nerve_types::dynamic::{json_string, StructValue, Value};
#[cfg(test)]
use nerve_types::{Member, MemberType, Primitive, Schema, Struct};

/// Writes values of a schema's types as the MCAP JSON form (the tree path).
#[cfg(test)]
pub(crate) struct FlatJson<'s> {
    by_name: HashMap<String, &'s Struct>,
}

#[cfg(test)]
impl<'s> FlatJson<'s> {
    pub(crate) fn new(schema: &'s Schema) -> FlatJson<'s> {
        FlatJson { by_name: schema.structs.iter().map(|s| (s.name.full(), s)).collect() }
    }

    /// Appends the JSON of `v`, a value of `st`.
    pub(crate) fn write_struct(&self, out: &mut String, st: &Struct, v: &StructValue) {
        out.push('{');
        for (i, (m, (name, fv))) in st.members.iter().zip(&v.fields).enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&json_string(name));
            out.push(':');
            self.write_member(out, m, fv);
        }
        out.push('}');
    }

    fn write_member(&self, out: &mut String, m: &Member, v: &Value) {
        if m.dims.is_empty() {
            return self.write_element(out, &m.ty, v);
        }
        if m.ty == MemberType::Primitive(Primitive::Byte) {
            let mut bytes = Vec::new();
            collect_bytes(v, &mut bytes);
            out.push('"');
            push_base64_str(out, &bytes);
            out.push('"');
            return;
        }
        out.push('[');
        let mut first = true;
        self.write_leaves(out, &m.ty, v, &mut first);
        out.push(']');
    }

    fn write_leaves(&self, out: &mut String, ty: &MemberType, v: &Value, first: &mut bool) {
        match v {
            Value::Array(items) => {
                for item in items {
                    self.write_leaves(out, ty, item, first);
                }
            }
            leaf => {
                if !*first {
                    out.push(',');
                }
                *first = false;
                self.write_element(out, ty, leaf);
            }
        }
    }

    fn write_element(&self, out: &mut String, ty: &MemberType, v: &Value) {
        match v {
            Value::Struct(sv) => {
                let st = match ty {
                    MemberType::Struct(name) => self.by_name.get(&name.full()).copied(),
                    _ => None,
                }
                .or_else(|| self.by_name.get(&*sv.ty).copied());
                match st {
                    Some(st) => self.write_struct(out, st, sv),
                    // The decoder only makes values of the schema's types.
                    None => out.push_str(&v.to_json()),
                }
            }
            other => push_scalar(out, other),
        }
    }
}

#[cfg(test)]
fn collect_bytes(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Bytes(b) => out.extend_from_slice(b),
        Value::Byte(b) => out.push(*b),
        Value::Array(items) => items.iter().for_each(|i| collect_bytes(i, out)),
        _ => {}
    }
}

/// Standard base64 with padding.
pub(crate) fn push_base64(out: &mut Vec<u8>, data: &[u8]) {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out.reserve(data.len().div_ceil(3) * 4);
    let mut chunks = data.chunks_exact(3);
    for c in &mut chunks {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        out.extend_from_slice(&[18, 12, 6, 0].map(|shift| T[((n >> shift) & 63) as usize]));
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.extend_from_slice(&[T[((n >> 18) & 63) as usize], T[((n >> 12) & 63) as usize], b'=', b'=']);
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.extend_from_slice(&[
                T[((n >> 18) & 63) as usize],
                T[((n >> 12) & 63) as usize],
                T[((n >> 6) & 63) as usize],
                b'=',
            ]);
        }
        _ => {}
    }
}

/// Standard base64 with padding, into a `String` (the tree path).
#[cfg(test)]
pub(crate) fn push_base64_str(out: &mut String, data: &[u8]) {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out.reserve(data.len().div_ceil(3) * 4);
    let mut chunks = data.chunks_exact(3);
    for c in &mut chunks {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        for shift in [18, 12, 6, 0] {
            out.push(T[((n >> shift) & 63) as usize] as char);
        }
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.push(T[((n >> 18) & 63) as usize] as char);
            out.push(T[((n >> 12) & 63) as usize] as char);
            out.push_str("==");
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.push(T[((n >> 18) & 63) as usize] as char);
            out.push(T[((n >> 12) & 63) as usize] as char);
            out.push(T[((n >> 6) & 63) as usize] as char);
            out.push('=');
        }
        _ => {}
    }
}

#[cfg(test)]
/// Appends a scalar without allocating: integers, floats (shortest round-trip digits, `null` when not finite),
/// booleans, strings, enums; a byte array as base64. (Containers are written by the callers.)
pub(crate) fn push_scalar(out: &mut String, v: &Value) {
    use std::fmt::Write;
    let _ = match v {
        Value::Int8(x) => write!(out, "{x}"),
        Value::Int16(x) => write!(out, "{x}"),
        Value::Int32(x) => write!(out, "{x}"),
        Value::Int64(x) => write!(out, "{x}"),
        Value::Byte(x) => write!(out, "{x}"),
        Value::Enum(e) => write!(out, "{}", e.value),
        Value::Boolean(b) => {
            out.push_str(if *b { "true" } else { "false" });
            Ok(())
        }
        Value::Float(x) => {
            push_f32(out, *x);
            Ok(())
        }
        Value::Double(x) => {
            push_f64(out, *x);
            Ok(())
        }
        Value::String(s) => {
            nerve_codec_json_str(out, s);
            Ok(())
        }
        Value::Bytes(b) => {
            out.push('"');
            push_base64_str(out, b);
            out.push('"');
            Ok(())
        }
        // Not scalars; written whole as a fallback.
        Value::Array(_) | Value::Struct(_) => {
            out.push_str(&v.to_json());
            Ok(())
        }
    };
}

#[cfg(test)]
fn nerve_codec_json_str(out: &mut String, s: &str) {
    out.push_str(&json_string(s));
}

#[cfg(test)]
/// Shortest round-trip digits, with an exponent only for very large or small magnitudes (as Nerve's JSON writes
/// them), and `.0` so readers keep it a float.
pub(crate) fn push_float_text(out: &mut String, x: f64, display: impl std::fmt::Display, exp: impl std::fmt::LowerExp) {
    use std::fmt::Write;
    let start = out.len();
    let a = x.abs();
    let _ = if a != 0.0 && !(1e-5..1e16).contains(&a) { write!(out, "{exp:e}") } else { write!(out, "{display}") };
    if !out[start..].contains(['.', 'e']) {
        out.push_str(".0");
    }
}

#[cfg(test)]
pub(crate) fn push_f64(out: &mut String, x: f64) {
    if x.is_finite() {
        push_float_text(out, x, x, x);
    } else {
        out.push_str("null");
    }
}

#[cfg(test)]
pub(crate) fn push_f32(out: &mut String, x: f32) {
    if !x.is_finite() {
        out.push_str("null");
        return;
    }
    let start = out.len();
    push_float_text(out, f64::from(x), x, x);
    // Readers parse into a double and may round to float: the shortest float digits almost always give the same
    // bits back; where they do not, write the exact double value instead.
    let ok = out[start..].parse::<f64>().is_ok_and(|d| (d as f32).to_bits() == x.to_bits());
    if !ok {
        out.truncate(start);
        push_float_text(out, f64::from(x), f64::from(x), f64::from(x));
    }
}

#[cfg(test)]
mod tests {
    use super::{push_base64, push_base64_str};

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            let mut v = Vec::new();
            push_base64(&mut v, input.as_bytes());
            assert_eq!(v, want.as_bytes());
            let mut s = String::new();
            push_base64_str(&mut s, input.as_bytes());
            assert_eq!(s, want);
        }
    }
}
