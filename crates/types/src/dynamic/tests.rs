//! Unit tests: spec 3.1's example encodings as exact bytes, errors with paths and offsets, JSON both ways.

use super::*;
use crate::{check, Source};

fn schema(text: &str) -> Schema {
    check(&[Source { path: "t.lcm".into(), text: text.into() }], &[])
        .unwrap_or_else(|e| panic!("{}", e.render()))
        .schema
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

const SEED: &str = "struct waypoint_t { string id; float position[2]; }
    struct path_t { int64_t timestamp; int32_t num_waypoints; waypoint_t waypoints[num_waypoints]; }
    struct image_t { int64_t utime; int32_t width; int32_t height; int32_t pixelformat; int32_t size; byte data[size]; }
    struct laser_t { int64_t utime; int32_t nranges; float ranges[nranges]; float rad0; float radstep; }";

const LCMTEST: &str = "package lcmtest;
    struct primitives_t { int8_t i8; int16_t i16; int32_t num_ranges; int64_t i64; int16_t ranges[num_ranges];
        float position[3]; double orientation[4]; string name; boolean enabled; }
    struct node_t { int32_t num_children; node_t children[num_children]; }
    struct multidim_array_t { int32_t size_a; int32_t size_b; int32_t size_c; int32_t data[size_a][size_b][size_c];
        string strarray[2][size_c]; }
    struct bools_t { boolean one_bool; boolean fixed_array[3]; int8_t num_a; int8_t num_b;
        boolean one_dim_array[num_a]; boolean two_dim_array[num_a][num_b]; }";

/// Decodes, checks the JSON, re-encodes to the same bytes, and reads the JSON back to the same value.
fn roundtrip(s: &Schema, ty: &str, bytes: &[u8], json: &str) {
    let ty = TypeName::parse(ty);
    let v = decode(s, &ty, bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v.to_json(), json);
    assert_eq!(encode(s, &ty, &v).unwrap(), bytes);
    let back = from_json(s, &ty, json).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(encode(s, &ty, &back).unwrap(), bytes);
}

#[test]
fn spec_3_1_seed_encodings() {
    let s = schema(SEED);
    roundtrip(
        &s,
        "waypoint_t",
        &hex("52afd45802f11868 00000002 4100 3f800000 c0200000"),
        r#"{"id":"A","position":[1.0,-2.5]}"#,
    );
    roundtrip(
        &s,
        "path_t",
        &hex(
            "9ab3ca4022072a1e 0000011f71fb04cb 00000002 00000002 4100 3f800000 c0200000 00000001 00 00000000 3f000000",
        ),
        r#"{"timestamp":1234567890123,"num_waypoints":2,"waypoints":[{"id":"A","position":[1.0,-2.5]},{"id":"","position":[0.0,0.5]}]}"#,
    );
    roundtrip(
        &s,
        "image_t",
        &hex("e1edf893c3149f31 0000000000000001 00000002 00000001 59455247 00000002 00ff"),
        r#"{"utime":1,"width":2,"height":1,"pixelformat":1497715271,"size":2,"data":[0,255]}"#,
    );
    roundtrip(
        &s,
        "laser_t",
        &hex("18f48ab44e6fd954 ffffffffffffffff 00000003 3f800000 40000000 7f800000 bfc90fdb 3c23d70a"),
        r#"{"utime":-1,"nranges":3,"ranges":[1.0,2.0,"Infinity"],"rad0":-1.5707964,"radstep":0.01}"#,
    );
}

#[test]
fn spec_3_1_lcmtest_encodings() {
    let s = schema(LCMTEST);
    let prim = hex("84e62b31229e6d55 03 001e 00000003 0000000000007530 0000 0001 0002
         40400000 40400000 40400000 4008000000000000 4008000000000000 4008000000000000 4008000000000000
         00000002 3300 01");
    assert_eq!(prim.len(), 80);
    roundtrip(
        &s,
        "lcmtest.primitives_t",
        &prim,
        r#"{"i8":3,"i16":30,"num_ranges":3,"i64":30000,"ranges":[0,1,2],"position":[3.0,3.0,3.0],"orientation":[3.0,3.0,3.0,3.0],"name":"3","enabled":true}"#,
    );
    roundtrip(
        &s,
        "lcmtest.node_t",
        &hex("31fe946c75d6e4e7 00000002 00000001 00000000 00000001 00000000"),
        r#"{"num_children":2,"children":[{"num_children":1,"children":[{"num_children":0,"children":[]}]},{"num_children":1,"children":[{"num_children":0,"children":[]}]}]}"#,
    );
    let mut md = hex("3c0248e7bd699f76 00000002 00000002 00000002");
    for i in 0..8u32 {
        md.extend_from_slice(&i.to_be_bytes());
    }
    for i in 0..4u8 {
        md.extend_from_slice(&[0, 0, 0, 2, b'0' + i, 0]);
    }
    assert_eq!(md.len(), 76);
    roundtrip(
        &s,
        "lcmtest.multidim_array_t",
        &md,
        r#"{"size_a":2,"size_b":2,"size_c":2,"data":[[[0,1],[2,3]],[[4,5],[6,7]]],"strarray":[["0","1"],["2","3"]]}"#,
    );
    roundtrip(
        &s,
        "lcmtest.bools_t",
        &hex("239fecd5036a5707 01 010001 02 01 0001 0100"),
        r#"{"one_bool":true,"fixed_array":[true,false,true],"num_a":2,"num_b":1,"one_dim_array":[false,true],"two_dim_array":[[true],[false]]}"#,
    );
}

#[test]
fn errors_name_the_path_and_offset() {
    let s = schema(SEED);
    let path = TypeName::parse("path_t");
    let good =
        hex("9ab3ca4022072a1e 0000011f71fb04cb 00000002 00000002 4100 3f800000 c0200000 00000001 00 00000000 3f000000");
    // The second waypoint's id loses its NUL.
    let mut bad = good.clone();
    bad[38] = b'x';
    let e = decode(&s, &path, &bad).unwrap_err();
    assert_eq!(e.path_string(), "path_t.waypoints[1].id");
    assert_eq!(*e.kind(), DynErrorKind::Decode(nerve_codec::DecodeErrorKind::MissingNul));
    assert_eq!(e.offset(), Some(38));
    assert_eq!(e.to_string(), "path_t.waypoints[1].id: string not terminated by NUL at byte 38");
    // A count that cannot fit in what remains is refused before anything is allocated.
    let mut huge = good.clone();
    huge[16..20].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
    let e = decode(&s, &path, &huge).unwrap_err();
    assert_eq!(e.path_string(), "path_t.waypoints");
    assert!(matches!(*e.kind(), DynErrorKind::Decode(nerve_codec::DecodeErrorKind::Truncated { .. })), "{e}");
    let mut neg = good.clone();
    neg[16..20].copy_from_slice(&(-1i32).to_be_bytes());
    let e = decode(&s, &path, &neg).unwrap_err();
    assert!(matches!(e.kind(), DynErrorKind::NegativeCount { count: -1, .. }), "{e}");
    assert_eq!(e.offset(), Some(20));
    let e = decode(&s, &path, &good[..8]).unwrap_err();
    assert_eq!(e.to_string(), "path_t.timestamp: truncated: 8 bytes needed, 0 left at byte 8");
    let e = decode(&s, &TypeName::parse("laser_t"), &good).unwrap_err();
    assert!(matches!(*e.kind(), DynErrorKind::Decode(nerve_codec::DecodeErrorKind::WrongFingerprint { .. })));
    // Every truncation fails cleanly; extra bytes after the message are ignored, as in LCM.
    for n in 0..good.len() {
        assert!(decode(&s, &path, &good[..n]).is_err(), "truncated to {n}");
    }
    let mut longer = good.clone();
    longer.extend_from_slice(b"tail");
    assert!(decode(&s, &path, &longer).is_ok());
}

#[test]
fn encode_checks_types_and_counts() {
    let s = schema(SEED);
    let path = TypeName::parse("path_t");
    let mut v = from_json(&s, &path, r#"{"timestamp":1,"waypoints":[{"id":"a","position":[1,2]}]}"#).unwrap();
    assert_eq!(v.as_struct().unwrap().get("num_waypoints"), Some(&Value::Int32(1)));
    let Value::Struct(sv) = &mut v else { unreachable!() };
    sv.fields[1].1 = Value::Int32(2);
    let e = encode(&s, &path, &v).unwrap_err();
    assert_eq!(e.to_string(), "path_t.waypoints: array has 1 elements but its size says 2");
    let Value::Struct(sv) = &mut v else { unreachable!() };
    sv.fields[1].1 = Value::Int64(1);
    let e = encode(&s, &path, &v).unwrap_err();
    assert_eq!(e.to_string(), "path_t.num_waypoints: expected int32_t, found int64_t");
    let Value::Struct(sv) = &mut v else { unreachable!() };
    sv.fields[1].1 = Value::Int32(1);
    let Value::Array(ws) = &mut sv.fields[2].1 else { unreachable!() };
    let Value::Struct(w) = &mut ws[0] else { unreachable!() };
    w.fields[1].1 = Value::Array(vec![Value::Float(1.0)]);
    let e = encode(&s, &path, &v).unwrap_err();
    assert_eq!(e.path_string(), "path_t.waypoints[0].position");
    assert_eq!(*e.kind(), DynErrorKind::LengthMismatch { expected: 2, actual: 1 });
    let e = encode(&s, &path, &Value::Int8(0)).unwrap_err();
    assert_eq!(e.to_string(), "path_t: expected struct path_t, found int8_t");
}

#[test]
fn json_input_is_strict_and_says_where() {
    let s = schema(SEED);
    let path = TypeName::parse("path_t");
    let err = |j: &str| from_json(&s, &path, j).unwrap_err().to_string();
    assert_eq!(
        err(r#"{"timestamp":1,"waypoints":[{"id":5,"position":[1,2]}]}"#),
        "path_t.waypoints[0].id: expected a string, found the number 5 at byte 34"
    );
    assert_eq!(
        err(r#"{"timestamp":1.5,"waypoints":[]}"#),
        "path_t.timestamp: expected an integer (int64_t), found the number 1.5 at byte 13"
    );
    assert_eq!(
        err(r#"{"timestamp":1,"num_waypoints":3,"waypoints":[]}"#),
        "path_t.waypoints: array has 0 elements but its size says 3 at byte 45"
    );
    assert_eq!(err(r#"{"timestamp":1}"#), "path_t: member 'waypoints' is missing at byte 0");
    assert_eq!(
        err(r#"{"timestamp":1,"waypoints":[],"x":2}"#),
        "path_t: unknown member 'x' (the members are: timestamp, num_waypoints, waypoints) at byte 34"
    );
    assert!(err(r#"{"timestamp":1,"waypoints":[]"#).contains("invalid JSON: expected ',' or '}'"));
    assert!(err(r#"{"timestamp":NaN}"#).contains("\"NaN\""));
    let laser = TypeName::parse("laser_t");
    let v = from_json(&s, &laser, r#"{"utime":0,"ranges":["NaN","-Infinity",1e-3],"rad0":3,"radstep":-0.0}"#).unwrap();
    assert_eq!(v.to_json(), r#"{"utime":0,"nranges":3,"ranges":["NaN","-Infinity",0.001],"rad0":3.0,"radstep":-0.0}"#);
    let e = from_json(&s, &laser, r#"{"utime":0,"ranges":[],"rad0":1e39,"radstep":0}"#).unwrap_err();
    assert_eq!(e.to_string(), "laser_t.rad0: 1e39 does not fit in float at byte 30");
    let img = TypeName::parse("image_t");
    let e = from_json(&s, &img, r#"{"utime":0,"width":0,"height":0,"pixelformat":0,"data":[1,256]}"#).unwrap_err();
    assert_eq!(e.to_string(), "image_t.data[1]: 256 does not fit in byte at byte 58");
}

#[test]
fn json_counts_inferred_across_dimensions() {
    let s = schema(LCMTEST);
    let md = TypeName::parse("lcmtest.multidim_array_t");
    let v = from_json(&s, &md, r#"{"data":[[[1,2,3]]],"strarray":[["a","b","c"],["","",""]]}"#).unwrap();
    assert_eq!(
        v.to_json(),
        r#"{"size_a":1,"size_b":1,"size_c":3,"data":[[[1,2,3]]],"strarray":[["a","b","c"],["","",""]]}"#
    );
    let e = from_json(&s, &md, r#"{"data":[[[1,2]]],"strarray":[["a","b","c"],["","",""]]}"#).unwrap_err();
    assert!(matches!(e.kind(), DynErrorKind::CountConflict { .. }), "{e}");
    assert_eq!(e.path_string(), "lcmtest.multidim_array_t.strarray");
    let e = from_json(&s, &md, r#"{"data":[[[1,2]],[[1]]],"strarray":[["a","b"],["",""]]}"#).unwrap_err();
    assert_eq!(e.path_string(), "lcmtest.multidim_array_t.data[1][0]");
    let e = from_json(&s, &md, r#"{"data":[],"strarray":[[],[]]}"#).unwrap_err();
    assert_eq!(*e.kind(), DynErrorKind::CannotInferCount { member: "size_b".into() });
}

#[test]
fn recursion_is_capped_not_a_stack_overflow() {
    let s = schema(LCMTEST);
    let node = TypeName::parse("lcmtest.node_t");
    // A chain of nodes each with one child, deeper than the cap: 4 bytes per level.
    let levels = MAX_DEPTH;
    let mut bytes = hex("31fe946c75d6e4e7");
    for _ in 0..levels {
        bytes.extend_from_slice(&1i32.to_be_bytes());
    }
    bytes.extend_from_slice(&0i32.to_be_bytes());
    let e = decode(&s, &node, &bytes).unwrap_err();
    assert_eq!(*e.kind(), DynErrorKind::TooDeep { limit: MAX_DEPTH });
    // Half as deep (a struct and an array per level) decodes, prints and encodes again.
    let mut ok = hex("31fe946c75d6e4e7");
    for _ in 0..MAX_DEPTH / 2 - 1 {
        ok.extend_from_slice(&1i32.to_be_bytes());
    }
    ok.extend_from_slice(&0i32.to_be_bytes());
    eprintln!("A");
    let v = decode(&s, &node, &ok).unwrap();
    eprintln!("B");
    assert_eq!(encode(&s, &node, &v).unwrap(), ok);
    eprintln!("C");
    let j = v.to_json();
    eprintln!("D");
    assert_eq!(from_json(&s, &node, &j).unwrap(), v);
    eprintln!("E");
    // Deep JSON is refused by the parser's own cap.
    let deep = "[".repeat(100_000);
    assert!(from_json(&s, &node, &deep).is_err());
}

#[test]
fn elements_that_take_no_bytes_are_bounded() {
    let s = schema(
        "struct e_t { } struct many_t { int64_t n; e_t e[n]; } struct grid_t { int32_t a; int32_t b; int8_t g[a][b]; }",
    );
    let many = TypeName::parse("many_t");
    let fp = s.struct_named(&many).unwrap().fingerprint;
    let mut bytes = fp.to_be_bytes().to_vec();
    bytes.extend_from_slice(&(i64::MAX).to_be_bytes());
    let e = decode(&s, &many, &bytes).unwrap_err();
    assert_eq!(*e.kind(), DynErrorKind::TooManyEmptyElements { limit: MAX_EMPTY_ELEMENTS });
    let mut ok = fp.to_be_bytes().to_vec();
    ok.extend_from_slice(&3i64.to_be_bytes());
    let v = decode(&s, &many, &ok).unwrap();
    assert_eq!(v.to_json(), r#"{"n":3,"e":[{},{},{}]}"#);
    // A zero inner dimension makes the outer one free too.
    let grid = TypeName::parse("grid_t");
    let mut g = s.struct_named(&grid).unwrap().fingerprint.to_be_bytes().to_vec();
    g.extend_from_slice(&i32::MAX.to_be_bytes());
    g.extend_from_slice(&0i32.to_be_bytes());
    assert_eq!(
        *decode(&s, &grid, &g).unwrap_err().kind(),
        DynErrorKind::TooManyEmptyElements { limit: MAX_EMPTY_ELEMENTS }
    );
}

#[test]
fn floats_print_exactly() {
    for x in [0.1f32, f32::MAX, f32::MIN_POSITIVE, 1e-45, -0.0, 16777217.0, 3.4e-39] {
        let j = Value::Float(x).to_json();
        assert_eq!((j.parse::<f64>().unwrap() as f32).to_bits(), x.to_bits(), "{j}");
        assert!(j.contains(['.', 'e']), "{j}");
    }
    for x in [0.1f64, f64::MAX, 5e-324, -0.0, 1e16, 123456789.125] {
        let j = Value::Double(x).to_json();
        assert_eq!(j.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{j}");
    }
    assert_eq!(Value::String("\u{2028}\u{85}\u{7f}".into()).to_json(), r#""\u2028\u0085\u007f""#);
    assert_eq!(Value::Int64(i64::MIN).to_json(), "-9223372036854775808");
    assert_eq!(Value::String("a\"\\\n\u{1}é".into()).to_json(), r#""a\"\\\n\u0001é""#);
}

#[test]
fn enums_decode_and_encode() {
    let s = schema("enum color_t { RED=1, GREEN, BLUE=5 } struct pix_t { color_t c; color_t cs[2]; }");
    let pix = TypeName::parse("pix_t");
    let v = from_json(&s, &pix, r#"{"c":"GREEN","cs":[5,-7]}"#).unwrap();
    let bytes = encode(&s, &pix, &v).unwrap();
    assert_eq!(&bytes[8..], &hex("00000002 00000005 fffffff9")[..]);
    assert_eq!(decode(&s, &pix, &bytes).unwrap(), v);
    assert_eq!(v.to_json(), r#"{"c":2,"cs":[5,-7]}"#);
    let color = TypeName::parse("color_t");
    let top = encode(&s, &color, &from_json(&s, &color, "\"BLUE\"").unwrap()).unwrap();
    assert_eq!(top, hex("07636f6d82a7e5b6 00000005"));
    assert_eq!(decode(&s, &color, &top).unwrap().to_json(), "5");
}
