//! The Rust generator's golden output (`test_data/rust/basic/out/`), compiled into this test and exercised:
//! encodings, length checks, truncated and hostile buffers, views, recursion limits, defaults, consts and names.
//!
//! `UPDATE_EXPECT=1 cargo test -p nerve-gen --test rust_golden` rewrites the golden files after a deliberate change
//! (the other languages' golden files are in tests/golden.rs, on the same helper).
//! (Byte-for-byte agreement with the real LCM over the whole corpus is tested in tests/interop/test_rust.py.)

mod common;

use nerve_codec::view::StructView;
use nerve_codec::{DecodeErrorKind, EncodeError, Message};
use nerve_gen::{rust, Input, Options};
use nerve_types::Source;

// Generated output, kept byte for byte as the generator writes it: rustfmt must not touch it.
#[rustfmt::skip]
#[path = "../test_data/rust/basic/out/mod.rs"]
#[allow(dead_code)]
mod lcmtypes;

use lcmtypes::demo::{NodeT, NodeTView, PointT, PointTView, ScanT, ScanTView};
use lcmtypes::other::{UsesT, UsesTView};

#[test]
fn generated_code_matches_the_golden_files() {
    let checked = common::basic_input();
    let files = rust::generate(&Input::new(&checked), &Options::default()).unwrap();
    let mut names: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    names.sort();
    assert_eq!(names, ["demo.rs", "mod.rs", "other.rs", "root.rs"]);
    common::check_golden(&common::test_data().join("rust/basic/out"), &files);
}

fn scan() -> ScanT {
    ScanT {
        utime: -2,
        n: 2,
        points: vec![
            PointT { position: [1.0, -2.5, 0.0], intensity: 7 },
            PointT { position: [f32::INFINITY, 0.5, 3.0], intensity: 255 },
        ],
        name: "hé".into(),
        nrows: 1,
        grid: vec![[0.25, -1.0]],
        flags: {
            let mut f = [false; 40];
            f[39] = true;
            f
        },
        r#type: -1,
    }
}

#[test]
fn encodes_lcm_bytes() {
    let p = PointT { position: [1.0, -2.5, 0.0], intensity: 7 };
    let bytes = p.encode().unwrap();
    let mut want = PointT::FINGERPRINT.to_be_bytes().to_vec();
    want.extend_from_slice(&[0x3f, 0x80, 0, 0, 0xc0, 0x20, 0, 0, 0, 0, 0, 0, 7]);
    assert_eq!(bytes, want);

    let s = scan();
    let bytes = s.encode().unwrap();
    assert_eq!(bytes.len(), s.encoded_size());
    let mut want = ScanT::FINGERPRINT.to_be_bytes().to_vec();
    want.extend_from_slice(&(-2i64).to_be_bytes());
    want.extend_from_slice(&2i32.to_be_bytes());
    want.extend_from_slice(&bytes[20..20 + 13]); // point 0, checked above through PointT
    want.extend_from_slice(&[0x7f, 0x80, 0, 0, 0x3f, 0, 0, 0, 0x40, 0x40, 0, 0, 0xff]);
    want.extend_from_slice(&[0, 0, 0, 4, b'h', 0xc3, 0xa9, 0]);
    want.extend_from_slice(&1i16.to_be_bytes());
    want.extend_from_slice(&0.25f64.to_be_bytes());
    want.extend_from_slice(&(-1.0f64).to_be_bytes());
    want.extend_from_slice(&[0; 39]);
    want.extend_from_slice(&[1, 0xff]);
    assert_eq!(bytes, want);
    assert_eq!(&bytes[20..33], &p.encode().unwrap()[8..]);
    assert_eq!(ScanT::decode(&bytes).unwrap(), s);
}

#[test]
fn fingerprints_and_names() {
    assert_eq!(ScanT::TYPE_NAME, "demo.scan_t");
    assert_eq!(lcmtypes::root::BareT::TYPE_NAME, "bare_t");
    let checked = nerve_types::check(
        &[Source {
            path: "p.lcm".into(),
            text: "package demo; struct point_t { float position[3]; byte intensity; }".into(),
        }],
        &[],
    )
    .unwrap();
    assert_eq!(PointT::FINGERPRINT, checked.schema.structs[0].fingerprint);
}

#[test]
fn consts_defaults_and_keywords() {
    assert_eq!(ScanT::MAX_POINTS, 10);
    assert_eq!(ScanT::SCALE, 0.5);
    assert_eq!(ScanT::OCT, 15, "017 is octal in LCM (C), so 15");
    let d = ScanT::default();
    assert_eq!(d.flags, [false; 40]);
    assert!(d.points.is_empty() && d.name.is_empty() && d.r#type == 0);
    assert_eq!(d.encoded_size(), 8 + 8 + 4 + 5 + 2 + 40 + 1);
    assert_eq!(ScanT::decode(&d.encode().unwrap()).unwrap(), d);
}

#[test]
fn length_mismatch_and_negative_counts_are_encode_errors() {
    let mut s = scan();
    s.n = 3;
    assert_eq!(s.encode().unwrap_err(), EncodeError::LengthMismatch { field: "points", expected: 3, actual: 2 });
    let mut s = scan();
    s.nrows = 0;
    assert_eq!(s.encode().unwrap_err(), EncodeError::LengthMismatch { field: "grid", expected: 0, actual: 1 });
    let mut s = scan();
    s.n = -1;
    assert_eq!(s.encode().unwrap_err(), EncodeError::NegativeCount { field: "points", count: -1 });
    let mut u = UsesT { n: 1, ..Default::default() };
    assert!(matches!(u.encode().unwrap_err(), EncodeError::LengthMismatch { field: "scans", .. }));
    u.scans.push(scan());
    assert_eq!(UsesT::decode(&u.encode().unwrap()).unwrap(), u);
}

#[test]
fn every_truncation_is_a_decode_error_and_views_never_panic() {
    let bytes = scan().encode().unwrap();
    for n in 0..bytes.len() {
        assert!(ScanT::decode(&bytes[..n]).is_err(), "accepted {n} of {} bytes", bytes.len());
        if let Ok(v) = ScanTView::new(&bytes[..n]) {
            // Whatever is still there reads; the rest is an error, never a panic.
            let _ = v.utime();
            let _ = v.points().and_then(|p| p.get(1)).and_then(|p| p.position()).and_then(|a| a.get(2));
            let _ = v.name();
            let _ = v.grid().and_then(|g| g.get(0)).and_then(|r| r.get(1));
            let _ = v.r#type();
            assert!(v.body_len().is_err());
        }
    }
    // Trailing bytes are ignored, as in LCM.
    let mut long = bytes.clone();
    long.extend_from_slice(&[0xff; 7]);
    assert_eq!(ScanT::decode(&long).unwrap(), scan());
}

#[test]
fn hostile_counts_fail_before_allocating() {
    let mut bytes = scan().encode().unwrap();
    bytes[16..20].copy_from_slice(&i32::MAX.to_be_bytes());
    let e = ScanT::decode(&bytes).unwrap_err();
    assert!(matches!(e.kind, DecodeErrorKind::Truncated { .. }), "{e}");
    bytes[16..20].copy_from_slice(&(-5i32).to_be_bytes());
    assert_eq!(ScanT::decode(&bytes).unwrap_err().kind, DecodeErrorKind::NegativeCount { count: -5 });
    assert!(ScanTView::new(&bytes).unwrap().points().is_err());
    // A string length of 2^31-1.
    let mut bytes = scan().encode().unwrap();
    bytes[46..50].copy_from_slice(&i32::MAX.to_be_bytes());
    assert!(ScanT::decode(&bytes).is_err());
    assert!(ScanTView::new(&bytes).unwrap().name().is_err());
    assert!(ScanTView::new(&bytes).unwrap().r#type().is_err());
}

#[test]
fn views_read_the_same_values_as_decode() {
    let s = scan();
    let bytes = s.encode().unwrap();
    let v = ScanTView::new(&bytes).unwrap();
    assert_eq!(v.utime().unwrap(), -2);
    assert_eq!(v.n().unwrap(), 2);
    let pts = v.points().unwrap();
    assert_eq!(pts.len(), 2);
    assert_eq!(pts.get(1).unwrap().position().unwrap().get(0).unwrap(), f32::INFINITY);
    assert_eq!(pts.get(1).unwrap().intensity().unwrap(), 255);
    assert!(pts.get(2).is_err());
    let all: Vec<u8> = pts.iter().map(|p| p.unwrap().intensity().unwrap()).collect();
    assert_eq!(all, [7, 255]);
    assert_eq!(v.name().unwrap(), "hé");
    assert_eq!(v.grid().unwrap().get(0).unwrap().to_vec(), vec![0.25, -1.0]);
    assert_eq!(v.flags().unwrap().to_vec(), s.flags.to_vec());
    assert_eq!(v.r#type().unwrap(), -1);
    assert_eq!(v.body_len().unwrap(), bytes.len() - 8);
    use nerve_codec::json::WriteJson;
    assert_eq!(v.to_json().unwrap(), s.to_json().unwrap());

    let p = PointTView::new(&s.points[0].encode().unwrap()).unwrap().position().unwrap().to_vec();
    assert_eq!(p, vec![1.0, -2.5, 0.0]);
    assert!(matches!(
        ScanTView::new(&s.points[0].encode().unwrap()).unwrap_err().kind,
        DecodeErrorKind::WrongFingerprint { .. }
    ));

    let u = UsesT {
        p: s.points[1].clone(),
        n: 2,
        scans: vec![ScanT::default(), s.clone()],
        names: ["a".into(), "".into()],
    };
    let ub = u.encode().unwrap();
    let uv = UsesTView::new(&ub).unwrap();
    assert_eq!(uv.scans().unwrap().get(1).unwrap().name().unwrap(), "hé");
    assert_eq!(uv.names().unwrap().get(0).unwrap(), "a");
    assert_eq!(uv.to_json().unwrap(), u.to_json().unwrap());
}

fn chain(depth: usize) -> NodeT {
    let mut n = NodeT::default();
    for _ in 0..depth {
        n = NodeT { n: 1, children: vec![n] };
    }
    n
}

#[test]
fn recursion_is_bounded() {
    let ok = chain(nerve_codec::MAX_DEPTH as usize - 1).encode().unwrap();
    assert_eq!(NodeT::decode(&ok).unwrap(), chain(nerve_codec::MAX_DEPTH as usize - 1));
    assert_eq!(NodeTView::new(&ok).unwrap().body_len().unwrap(), ok.len() - 8);
    // A hostile buffer: 100,000 levels of one child each. It must fail, not overflow the stack.
    let mut deep = NodeT::FINGERPRINT.to_be_bytes().to_vec();
    for _ in 0..100_000 {
        deep.extend_from_slice(&1i32.to_be_bytes());
    }
    deep.extend_from_slice(&0i32.to_be_bytes());
    let e = NodeT::decode(&deep).unwrap_err();
    assert!(matches!(e.kind, DecodeErrorKind::TooDeep { .. }), "{e}");
    assert!(NodeTView::new(&deep).unwrap().body_len().is_err());
}

/// `decode_into` gives exactly what `decode` gives, whatever the value held before (larger, smaller, default),
/// reuses the memory it holds, and rejects every truncation as `decode` does.
#[test]
fn decode_into_matches_decode_and_reuses_memory() {
    let mut big = UsesT {
        p: PointT { position: [1.0, 2.0, 3.0], intensity: 4 },
        n: 3,
        scans: vec![scan(), scan(), scan()],
        names: ["a long name to reuse".into(), "x".into()],
    };
    big.scans[1].name = "a much longer scan name than before".into();
    big.scans[2].points.clear();
    big.scans[2].n = 0;
    let small = UsesT { p: PointT::default(), n: 1, scans: vec![scan()], names: ["".into(), "é".into()] };
    let (big_bytes, small_bytes) = (big.encode().unwrap(), small.encode().unwrap());
    let mut v = UsesT::default();
    for bytes in [&big_bytes, &small_bytes, &big_bytes, &small_bytes, &small_bytes] {
        v.decode_into(bytes).unwrap();
        assert_eq!(v, UsesT::decode(bytes).unwrap());
    }
    // Steady state: decoding the same shape again keeps every buffer in place (a long name's heap text, reused at
    // the same length, as well as the inline short ones).
    v.decode_into(&big_bytes).unwrap();
    assert!(v.scans[1].name.is_heap() && !v.names[0].is_heap());
    let ptrs = (v.scans.as_ptr(), v.scans[1].name.as_ptr(), v.scans[0].points.as_ptr(), v.names[0].as_ptr());
    v.decode_into(&big_bytes).unwrap();
    assert_eq!(ptrs, (v.scans.as_ptr(), v.scans[1].name.as_ptr(), v.scans[0].points.as_ptr(), v.names[0].as_ptr()));
    assert_eq!(v, big);
    for n in 0..big_bytes.len() {
        assert!(v.decode_into(&big_bytes[..n]).is_err(), "accepted {n} of {} bytes", big_bytes.len());
    }
    let mut node = NodeT::default();
    node.decode_into(&chain(10).encode().unwrap()).unwrap();
    assert_eq!(node, chain(10));
    assert!(node.decode_into(&chain(nerve_codec::MAX_DEPTH as usize + 5).encode().unwrap()).is_err());
    let mut wrong = ScanT::default();
    assert_eq!(
        wrong.decode_into(&big_bytes).unwrap_err().kind,
        DecodeErrorKind::WrongFingerprint { expected: ScanT::FINGERPRINT, found: UsesT::FINGERPRINT }
    );
}
