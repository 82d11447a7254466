//! A bounded fuzz-style test of the dynamic codec over every corpus type: random values round-trip through JSON and
//! bytes, and random bytes and mutations of valid encodings (truncations, bit flips, overwritten counts and string
//! lengths) decode to an error or a value, never a panic; whatever decodes encodes again.

use std::path::PathBuf;

use nerve_types::dynamic::Value;
use nerve_types::model::{Dim, MemberType, Primitive, Struct};
use nerve_types::{Registry, TypeName};

/// xorshift64*: deterministic, no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn corpus() -> Registry {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let (registry, diags) = Registry::load_dirs(&[dir]);
    assert!(!diags.has_errors(), "{}", diags.render());
    registry
}

/// Writes a random JSON value of struct `st`, with count members given explicitly (`None` if the type nests
/// without end, which the corpus does not do).
fn gen_struct(reg: &Registry, st: &Struct, rng: &mut Rng, depth: usize, out: &mut String) -> Option<()> {
    if depth > 12 {
        return None;
    }
    let mut counts: Vec<(&str, i64)> = Vec::new();
    for m in &st.members {
        for d in &m.dims {
            if let Dim::Variable { member } = d {
                if !counts.iter().any(|(c, _)| c == member) {
                    let n = if depth >= 3 { 0 } else { rng.below(4) as i64 };
                    counts.push((member.as_str(), n));
                }
            }
        }
    }
    out.push('{');
    for (i, m) in st.members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!("\"{}\":", m.name));
        if let Some((_, n)) = counts.iter().find(|(c, _)| *c == m.name) {
            out.push_str(&n.to_string());
            continue;
        }
        let lens: Vec<usize> = m
            .dims
            .iter()
            .map(|d| match d {
                Dim::Fixed { len, .. } => *len,
                Dim::Variable { member } => counts.iter().find(|(c, _)| c == member).map_or(0, |(_, n)| *n as usize),
            })
            .collect();
        gen_array(reg, &m.ty, &lens, rng, depth, out)?;
    }
    out.push('}');
    Some(())
}

fn gen_array(
    reg: &Registry,
    ty: &MemberType,
    lens: &[usize],
    rng: &mut Rng,
    depth: usize,
    out: &mut String,
) -> Option<()> {
    let Some((&n, rest)) = lens.split_first() else {
        return gen_elem(reg, ty, rng, depth, out);
    };
    out.push('[');
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        gen_array(reg, ty, rest, rng, depth, out)?;
    }
    out.push(']');
    Some(())
}

fn gen_elem(reg: &Registry, ty: &MemberType, rng: &mut Rng, depth: usize, out: &mut String) -> Option<()> {
    let pick = |rng: &mut Rng, xs: &[&str]| xs[rng.below(xs.len() as u64) as usize].to_owned();
    let s = match ty {
        MemberType::Primitive(p) => match p {
            Primitive::Int8 => pick(rng, &["0", "-128", "127", "5"]),
            Primitive::Int16 => pick(rng, &["0", "-32768", "32767", "-5"]),
            Primitive::Int32 => pick(rng, &["0", "-2147483648", "2147483647", "77"]),
            Primitive::Int64 => pick(rng, &["0", "-9223372036854775808", "9223372036854775807", "1234567890123"]),
            Primitive::Float => pick(rng, &["0.0", "-0.0", "\"NaN\"", "\"Infinity\"", "1e-45", "3.4028235e38", "0.1"]),
            Primitive::Double => {
                pick(rng, &["0.0", "-0.0", "\"-Infinity\"", "5e-324", "1.7976931348623157e308", "0.1"])
            }
            Primitive::Boolean => pick(rng, &["true", "false"]),
            Primitive::Byte => pick(rng, &["0", "255", "7"]),
            Primitive::String => pick(rng, &["\"\"", "\"a\"", "\"h\\u00e9llo \\\"q\\\"\"", "\"\\ud83e\\udd80\""]),
        },
        MemberType::Enum(_) => "1".to_owned(),
        MemberType::Struct(n) => {
            let st = reg.by_name(n)?;
            return gen_struct(reg, st, rng, depth + 1, out);
        }
    };
    out.push_str(&s);
    Some(())
}

/// Decodes `bytes` as `ty`; if it decodes, the value must encode again and decode to the same JSON.
fn must_not_panic(reg: &Registry, ty: &TypeName, bytes: &[u8]) -> bool {
    match reg.decode_as(ty, bytes) {
        Ok(v) => {
            let again = reg.encode(ty, &v).unwrap_or_else(|e| panic!("{ty}: decoded value does not encode: {e}"));
            let v2 = reg.decode_as(ty, &again).unwrap_or_else(|e| panic!("{ty}: re-encoding does not decode: {e}"));
            assert_eq!(v2.to_json(), v.to_json(), "{ty}");
            true
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            false
        }
    }
}

fn valid_encodings(reg: &Registry, rng: &mut Rng, per_type: usize) -> Vec<(TypeName, Vec<u8>)> {
    let mut out = Vec::new();
    for st in &reg.schema().structs {
        for _ in 0..per_type {
            let mut json = String::new();
            gen_struct(reg, st, rng, 0, &mut json).unwrap_or_else(|| panic!("{}: nests without end", st.name));
            let v = reg.from_json(&st.name, &json).unwrap_or_else(|e| panic!("{}: {e}\n{json}", st.name));
            let bytes = reg.encode(&st.name, &v).unwrap_or_else(|e| panic!("{}: {e}", st.name));
            let back = reg.decode_as(&st.name, &bytes).unwrap_or_else(|e| panic!("{}: {e}", st.name));
            assert_eq!(reg.encode(&st.name, &back).unwrap(), bytes, "{}", st.name);
            let again = reg.from_json(&st.name, &back.to_json()).unwrap_or_else(|e| panic!("{}: {e}", st.name));
            assert_eq!(reg.encode(&st.name, &again).unwrap(), bytes, "{}: JSON round trip", st.name);
            out.push((st.name.clone(), bytes));
        }
    }
    out
}

#[test]
fn random_values_round_trip_through_bytes_and_json() {
    let reg = corpus();
    let mut rng = Rng(0x5eed_0001);
    let n = valid_encodings(&reg, &mut rng, 8).len();
    assert!(n >= 8 * 40, "only {n} values: is the corpus there?");
}

#[test]
fn mutated_encodings_give_errors_not_panics() {
    let reg = corpus();
    let mut rng = Rng(0x5eed_0002);
    let valid = valid_encodings(&reg, &mut rng, 3);
    let (mut decoded, mut rejected) = (0usize, 0usize);
    let mut tally = |ok: bool| if ok { decoded += 1 } else { rejected += 1 };
    for (ty, bytes) in &valid {
        // Every strict truncation must fail (for long messages: a sample, plus every one near the end).
        let len = bytes.len();
        for n in (0..len).filter(|n| len <= 512 || n % 13 == 0 || n + 64 >= len) {
            assert!(!must_not_panic(&reg, ty, &bytes[..n]), "{ty}: truncated to {n} decoded");
        }
        for _ in 0..64 {
            let mut b = bytes.clone();
            match rng.below(4) {
                0 => {
                    let bit = rng.below(b.len() as u64 * 8) as usize;
                    b[bit / 8] ^= 1 << (bit % 8);
                }
                1 if b.len() > 12 => {
                    // An int32 (a count or string length, often) overwritten with an extreme value.
                    let at = 8 + rng.below(b.len() as u64 - 11) as usize;
                    let v: [i32; 5] = [i32::MAX, i32::MIN, -1, 0, 1 << 24];
                    b[at..at + 4].copy_from_slice(&v[rng.below(5) as usize].to_be_bytes());
                }
                2 => {
                    for _ in 0..1 + rng.below(8) {
                        let i = rng.below(b.len() as u64) as usize;
                        b[i] = rng.next() as u8;
                    }
                }
                _ => {
                    let keep = 8.min(b.len());
                    b.truncate(keep);
                    for _ in 0..rng.below(64) {
                        b.push(rng.next() as u8);
                    }
                }
            }
            tally(must_not_panic(&reg, ty, &b));
        }
    }
    assert!(decoded > 0 && rejected > 0, "decoded {decoded}, rejected {rejected}");
}

#[test]
fn random_bytes_by_fingerprint_give_errors_not_panics() {
    let reg = corpus();
    let mut rng = Rng(0x5eed_0003);
    for st in &reg.schema().structs {
        for len in 0..200u64 {
            let mut b = st.fingerprint.to_be_bytes().to_vec();
            for _ in 0..len {
                // Mostly small bytes, so that counts stay plausible and decoding goes deep.
                b.push(if rng.below(3) == 0 { rng.next() as u8 } else { rng.below(3) as u8 });
            }
            must_not_panic(&reg, &st.name, &b);
            let _ = reg.decode(&b);
        }
    }
    for _ in 0..2000 {
        let b: Vec<u8> = (0..rng.below(40)).map(|_| rng.next() as u8).collect();
        assert!(reg.decode(&b).is_err() || b.len() >= 8);
    }
}

#[test]
fn values_of_the_wrong_shape_are_encode_errors() {
    let reg = corpus();
    let ty = TypeName::parse("lcmtest.primitives_t");
    for v in [Value::Int8(1), Value::Array(vec![]), Value::Bytes(vec![1, 2])] {
        assert!(reg.encode(&ty, &v).is_err());
    }
}
