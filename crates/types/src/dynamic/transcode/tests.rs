//! Differential tests: the transcoder against the value-tree path (decode, then `to_json`) on every type of the
//! corpus (`tests/corpus`) and the seed types (`examples/types`), on random messages and on damaged copies of
//! them: the same JSON, or the same error.

use std::path::PathBuf;

use super::*;
use crate::dynamic::Value;
use crate::model::{Dim, MemberType, Schema, TypeName};
use crate::{check, Source};

/// xorshift64: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn load(dir: &str) -> Registry {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir);
    let (reg, diags) = Registry::load_dirs(&[path]);
    assert!(!diags.has_errors(), "{}", diags.render());
    assert!(!reg.schema().structs.is_empty());
    reg
}

fn registry(text: &str) -> Registry {
    let src = Source { path: "t.lcm".into(), text: text.into() };
    Registry::new(check(&[src], &[]).unwrap_or_else(|e| panic!("{}", e.render())).schema)
}

const FLOATS32: [u32; 12] = [
    0,
    0x8000_0000,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0x0000_0001,
    0x3727_c5ac,
    0x5f0a_c723,
    0x3dcc_cccd,
    0x4b7f_ffff,
    0x7f7f_ffff,
    0x2f4e_e41d,
];
const FLOATS64: [u64; 8] = [
    0,
    0x8000_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0xfff8_0000_0000_0000,
    0x3ee4_f8b5_88e3_68f1,
    0x4341_c379_37e0_8000,
    0x0000_0000_0000_0001,
    0x3fb9_9999_9999_999a,
];

/// A random string: ASCII mostly, with what JSON and CSV escape, and multi-byte characters.
fn random_string(rng: &mut Rng) -> String {
    const PARTS: [&str; 16] =
        ["a", "Z", " ", ",", "\"", "\\", "\n", "\r", "\t", "\u{1}", "\u{7f}", "\u{85}", "é", "\u{2028}", "€", "😀"];
    let n = rng.below(9);
    (0..n).map(|_| PARTS[rng.below(16) as usize]).collect()
}

/// Appends a random, valid body of `st` (counts kept small, recursion cut off by depth).
fn random_body(schema: &Schema, st: &Struct, rng: &mut Rng, depth: usize, out: &mut Vec<u8>) {
    let mut counts: Vec<(&str, i64)> = Vec::new();
    for m in &st.members {
        let lens: Vec<usize> = m
            .dims
            .iter()
            .map(|d| match d {
                Dim::Fixed { len, .. } => *len,
                Dim::Variable { member } => counts.iter().find(|(n, _)| n == member).map_or(0, |(_, c)| *c as usize),
            })
            .collect();
        let total: usize = lens.iter().product();
        for _ in 0..total {
            match &m.ty {
                MemberType::Primitive(p) => {
                    let is_count = st
                        .members
                        .iter()
                        .any(|o| o.dims.iter().any(|d| matches!(d, Dim::Variable { member } if *member == m.name)));
                    if is_count && m.dims.is_empty() {
                        let c = if depth > 3 { 0 } else { rng.below(4) as i64 };
                        counts.push((&m.name, c));
                        let b = c.to_be_bytes();
                        out.extend_from_slice(&b[8 - p.wire_size().unwrap()..]);
                        continue;
                    }
                    random_primitive(*p, rng, out);
                }
                MemberType::Enum(_) => out.extend_from_slice(&(rng.next() as i32).to_be_bytes()),
                MemberType::Struct(n) => {
                    let inner = schema.struct_named(n).unwrap();
                    random_body(schema, inner, rng, depth + 1, out);
                }
            }
        }
    }
}

fn random_primitive(p: Primitive, rng: &mut Rng, out: &mut Vec<u8>) {
    let r = rng.next();
    match p {
        Primitive::Float => {
            let bits = match r % 4 {
                0 => FLOATS32[rng.below(12) as usize],
                1 => (((r >> 8) % 200_000) as f32 / 1000.0 - 100.0).to_bits(),
                _ => (r >> 16) as u32,
            };
            out.extend_from_slice(&bits.to_be_bytes());
        }
        Primitive::Double => {
            let bits = match r % 4 {
                0 => FLOATS64[rng.below(8) as usize],
                1 => (((r >> 8) % 2_000_000) as f64 / 1e4 - 100.0).to_bits(),
                _ => rng.next(),
            };
            out.extend_from_slice(&bits.to_be_bytes());
        }
        Primitive::String => {
            let s = random_string(rng);
            out.extend_from_slice(&(s.len() as i32 + 1).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        }
        other => {
            let n = other.wire_size().unwrap();
            out.extend_from_slice(&r.to_be_bytes()[..n]);
        }
    }
}

/// The transcoder and the tree agree on `bytes`: the same JSON, or the same error (also for `validate` and CSV).
fn agree(t: &Transcoder, bytes: &[u8]) -> bool {
    let tree = t.registry().decode(bytes);
    let mut out = b"prefix".to_vec();
    let fast = t.json(bytes, JsonForm::Value, &mut out);
    let mut row = Vec::new();
    let csv = t.csv_row(bytes, &CsvShape::new(), &mut row);
    match (&tree, &fast) {
        (Ok((st, v)), Ok(st2)) => {
            assert_eq!(st.name, st2.name);
            assert_eq!(std::str::from_utf8(&out[6..]).unwrap(), v.to_json(), "{}", st.name.full());
            assert_eq!(t.validate(bytes).map(|s| &s.name), Ok(&st.name));
            assert!(csv.is_ok());
            true
        }
        (Err(a), Err(b)) => {
            assert_eq!(a, b, "errors differ");
            assert_eq!(out, b"prefix", "output left as it was");
            assert_eq!(t.validate(bytes).err().as_ref(), Some(a));
            assert_eq!(csv.err().as_ref(), Some(a));
            assert!(row.is_empty());
            false
        }
        _ => panic!("tree {:?} vs transcoder {:?}", tree.map(|(s, v)| (s.name.full(), v)), fast.map(|s| s.name.full())),
    }
}

fn differential(reg: Registry, messages_per_type: usize, seed: u64) {
    let t = Transcoder::new(reg);
    let mut rng = Rng(seed);
    let (mut ok, mut err) = (0, 0);
    for st in &t.registry().schema().structs {
        if t.registry().lookup(st.fingerprint).is_none() {
            continue; // a shared fingerprint: both report it ambiguous (checked below)
        }
        for _ in 0..messages_per_type {
            let mut msg = st.fingerprint.to_be_bytes().to_vec();
            random_body(t.registry().schema(), st, &mut rng, 0, &mut msg);
            assert!(agree(&t, &msg), "a valid {} message", st.name.full());
            ok += 1;
            // Damaged copies: cut short, a byte changed, bytes added.
            let cut = rng.below(msg.len() as u64 + 1) as usize;
            if agree(&t, &msg[..cut]) {
                ok += 1;
            } else {
                err += 1;
            }
            let mut bent = msg.clone();
            let at = 8 + rng.below(bent.len() as u64 - 7) as usize;
            if at < bent.len() {
                bent[at] = rng.next() as u8;
            }
            if agree(&t, &bent) {
                ok += 1;
            } else {
                err += 1;
            }
            bent.push(rng.next() as u8);
            agree(&t, &bent);
        }
        // Random bodies behind the right fingerprint.
        for _ in 0..messages_per_type / 4 {
            let mut msg = st.fingerprint.to_be_bytes().to_vec();
            let n = rng.below(64);
            msg.extend((0..n).map(|_| (rng.next() % 5) as u8));
            if agree(&t, &msg) {
                ok += 1;
            } else {
                err += 1;
            }
        }
    }
    assert!(ok > 0 && err > 0, "{ok} decoded, {err} errors");
}

#[test]
fn corpus_types_agree_with_the_tree_path() {
    differential(load("tests/corpus"), 200, 0x5eed);
}

#[test]
fn seed_types_agree_with_the_tree_path() {
    differential(load("examples/types"), 300, 0xfeed);
}

#[test]
fn unknown_short_and_ambiguous_messages_fail_as_the_registry_says() {
    let reg = registry("package a; struct p_t { int32_t x; } struct q_t { int32_t x; }");
    let fp = reg.schema().structs[0].fingerprint;
    let t = Transcoder::new(reg);
    for bytes in [&b"short"[..], &[0u8; 12][..], &[fp.to_be_bytes().as_slice(), &[0, 0, 0, 1]].concat()] {
        let e = t.json(bytes, JsonForm::Flat, &mut Vec::new()).unwrap_err();
        assert_eq!(Err(e), t.registry().decode(bytes).map(|_| ()));
    }
}

#[test]
fn deep_recursion_and_empty_elements_fail_as_the_tree_does() {
    let reg =
        registry("struct node_t { int32_t n; node_t c[n]; } struct e_t { } struct many_t { int32_t n; e_t e[n]; }");
    let fp = reg.schema().structs[0].fingerprint;
    let t = Transcoder::new(reg);
    for levels in [10usize, 255, 256, 600] {
        let mut msg = fp.to_be_bytes().to_vec();
        for _ in 0..levels {
            msg.extend_from_slice(&1i32.to_be_bytes());
        }
        msg.extend_from_slice(&0i32.to_be_bytes());
        agree(&t, &msg);
    }
    let many = t.registry().schema().structs[2].fingerprint;
    for n in [0i32, 3, 65_536, 65_537, -1] {
        let mut msg = many.to_be_bytes().to_vec();
        msg.extend_from_slice(&n.to_be_bytes());
        agree(&t, &msg);
    }
}

#[test]
fn flat_form_flattens_arrays_and_writes_bytes_as_base64() {
    let reg = registry("struct t_t { float m[2][2]; byte b[2][2]; double d; int8_t n; string s[n]; }");
    let ty = TypeName::parse("t_t");
    let v = reg
        .from_json(
            &ty,
            r#"{"m": [[1, "NaN"], [3, 4.5]], "b": [[0, 1], [2, 255]], "d": "-Infinity", "n": 2, "s": ["a", "é"]}"#,
        )
        .unwrap();
    let bytes = reg.encode(&ty, &v).unwrap();
    let t = Transcoder::new(reg);
    let mut out = Vec::new();
    t.json(&bytes, JsonForm::Flat, &mut out).unwrap();
    assert_eq!(
        std::str::from_utf8(&out).unwrap(),
        r#"{"m":[1.0,null,3.0,4.5],"b":"AAEC/w==","d":null,"n":2,"s":["a","é"]}"#
    );
}

#[test]
fn csv_shapes_grow_and_rows_follow_them() {
    let reg = registry(
        "struct p_t { double x; string name; } \
         struct t_t { int32_t n; float r[n]; p_t p; int8_t k; p_t ps[k]; byte blob[2]; boolean ok; }",
    );
    let ty = TypeName::parse("t_t");
    let enc = |json: &str| reg.encode(&ty, &reg.from_json(&ty, json).unwrap()).unwrap();
    let a = enc(
        r#"{"n": 2, "r": [1, 2.5], "p": {"x": -1, "name": "a,b"}, "k": 0, "ps": [], "blob": [0, 171], "ok": true}"#,
    );
    let b = enc(
        r#"{"n": 3, "r": [1, 2, "NaN"], "p": {"x": 1e300, "name": "q\""}, "k": 1, "ps": [{"x": 0.5, "name": ""}], "blob": [1, 2], "ok": false}"#,
    );
    let t = Transcoder::new(reg.clone());
    let mut shape = CsvShape::new();
    t.csv_merge(&a, &mut shape).unwrap();
    t.csv_merge(&b, &mut shape).unwrap();
    assert!(t.csv_merge(&b[..b.len() - 1], &mut shape).is_err());
    assert_eq!(
        shape.columns(),
        ["n", "r[0]", "r[1]", "r[2]", "p.x", "p.name", "k", "ps[0].x", "ps[0].name", "blob", "ok"]
    );
    // Merged apart and joined, either way round, or into an empty shape: the same shape.
    for (first, second) in [(&a, &b), (&b, &a)] {
        let (mut x, mut y) = (CsvShape::new(), CsvShape::new());
        t.csv_merge(first, &mut x).unwrap();
        t.csv_merge(second, &mut y).unwrap();
        x.absorb(y);
        assert_eq!(x.columns(), shape.columns());
        let mut empty = CsvShape::new();
        empty.absorb(x.clone());
        x.absorb(CsvShape::new());
        assert_eq!((empty.columns(), x.columns()), (shape.columns(), shape.columns()));
    }
    // Growth is reported by the merge that makes it, and `covers` says whether joining would add columns.
    let (mut x, mut y) = (CsvShape::new(), CsvShape::new());
    assert!(t.csv_merge_grew(&a, &mut x).unwrap().1, "the first message makes the columns");
    assert!(!t.csv_merge_grew(&a, &mut x).unwrap().1, "the same message again adds none");
    t.csv_merge(&b, &mut y).unwrap();
    assert!(!x.covers(&y) && y.covers(&CsvShape::new()) && !CsvShape::new().covers(&y));
    assert!(t.csv_merge_grew(&b, &mut x).unwrap().1, "a longer array, a longer nested array");
    assert!(x.covers(&y) && y.covers(&x) && x.covers(&x.clone()));
    assert!(!t.csv_merge_grew(&a, &mut x).unwrap().1, "a shorter message adds none");
    let mut row = Vec::new();
    t.csv_row(&a, &shape, &mut row).unwrap();
    assert_eq!(std::str::from_utf8(&row).unwrap(), ",2,1.0,2.5,,-1.0,\"a,b\",0,,,00ab,true");
    row.clear();
    t.csv_row(&b, &shape, &mut row).unwrap();
    assert_eq!(std::str::from_utf8(&row).unwrap(), ",3,1.0,2.0,NaN,1e300,\"q\"\"\",1,0.5,,0102,false");
    // The values the tree holds for the same message.
    let (_, v) = reg.decode(&b).unwrap();
    assert!(matches!(v, Value::Struct(_)));
}

#[test]
fn nested_plain_structs_meet_the_depth_limit_as_the_tree_does() {
    // s0 holds s1 holds ... s{N-1} holds a byte: every struct plain (fixed size, nothing in it can be wrong), and
    // arrays of them, so that the shortcuts that read past plain structs meet the depth limit at every level.
    for levels in [500usize, 509, 510, 511, 512, 520] {
        let mut text = String::new();
        for i in 0..levels - 1 {
            text.push_str(&format!("struct s{i}_t {{ s{}_t a; }}\n", i + 1));
        }
        text.push_str(&format!("struct s{}_t {{ int8_t x; }}\n", levels - 1));
        text.push_str("struct top_t { int32_t n; s0_t many[n]; s0_t one; s0_t fixed[2][1]; }\n");
        let reg = registry(&text);
        let top = reg.by_name(&TypeName::parse("top_t")).unwrap().fingerprint;
        let t = Transcoder::new(reg);
        for (n, extra) in [(0i32, 3usize), (2, 5), (3, 5), (1, 0)] {
            let mut msg = top.to_be_bytes().to_vec();
            msg.extend_from_slice(&n.to_be_bytes());
            msg.extend(std::iter::repeat_n(7u8, extra));
            agree(&t, &msg);
            let mut shape = CsvShape::new();
            assert_eq!(t.csv_merge(&msg, &mut shape).err(), t.registry().decode(&msg).err());
        }
    }
}

#[test]
fn csv_columns_of_plain_struct_arrays_grow_past_those_merged() {
    // Arrays of a plain struct: the elements a message as long has merged already are read past in one step.
    let reg = registry("struct pt_t { float x; int32_t i; } struct t_t { int32_t n; pt_t ps[n]; int8_t tail; }");
    let ty = TypeName::parse("t_t");
    let enc = |n: usize| {
        let ps: Vec<String> = (0..n).map(|k| format!(r#"{{"x": {k}.5, "i": {k}}}"#)).collect();
        reg.encode(&ty, &reg.from_json(&ty, &format!(r#"{{"n": {n}, "ps": [{}], "tail": 7}}"#, ps.join(","))).unwrap())
            .unwrap()
    };
    let t = Transcoder::new(reg.clone());
    let mut shape = CsvShape::new();
    for n in [3, 2, 0, 5, 4] {
        t.csv_merge(&enc(n), &mut shape).unwrap();
    }
    let mut want = vec!["n".to_owned()];
    for k in 0..5 {
        want.extend([format!("ps[{k}].x"), format!("ps[{k}].i")]);
    }
    want.push("tail".into());
    assert_eq!(shape.columns(), want);
    // Short of bytes inside or past the merged elements: the tree decoder's error, and the shape as it was.
    for n in [4usize, 6] {
        let msg = enc(n);
        for cut in [1, 5, 9] {
            let short = &msg[..msg.len() - cut];
            let before = shape.clone();
            assert_eq!(t.csv_merge(short, &mut shape).err(), t.registry().decode(short).err(), "{n} {cut}");
            assert_eq!(shape, before);
        }
    }
    let mut row = Vec::new();
    t.csv_row(&enc(2), &shape, &mut row).unwrap();
    assert_eq!(std::str::from_utf8(&row).unwrap(), ",2,0.5,0,1.5,1,,,,,,,7");
}
