//! The registry: types found by fingerprint, shared fingerprints reported rather than guessed, and loading
//! directories where some files are broken.

use std::path::PathBuf;

use nerve_types::registry::RegistryError;
use nerve_types::{Registry, TypeName};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// A fresh directory under the target directory (no temp-dir crate needed), emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn decodes_by_fingerprint() {
    let (reg, diags) = Registry::load_dirs(&[corpus_dir()]);
    assert!(!diags.has_errors(), "{}", diags.render());
    // Spec 3.1's path_t message.
    let bytes =
        hex("9ab3ca4022072a1e 0000011f71fb04cb 00000002 00000002 4100 3f800000 c0200000 00000001 00 00000000 3f000000");
    let (st, value) = reg.decode(&bytes).unwrap();
    assert_eq!(st.name.full(), "seed.path_t");
    assert_eq!(reg.lookup(0x9ab3ca4022072a1e).unwrap().name.full(), "seed.path_t");
    assert_eq!(
        value.to_json(),
        r#"{"timestamp":1234567890123,"num_waypoints":2,"waypoints":[{"id":"A","position":[1.0,-2.5]},{"id":"","position":[0.0,0.5]}]}"#
    );
    assert_eq!(reg.decode(&bytes[..5]).unwrap_err(), RegistryError::TooShort { len: 5 });
    assert_eq!(reg.decode(&[0u8; 8]).unwrap_err(), RegistryError::Unknown { fingerprint: 0 });
    let e = reg.decode(&bytes[..20]).unwrap_err();
    assert!(matches!(e, RegistryError::Decode(_)), "{e}");
    assert!(e.to_string().starts_with("seed.path_t.waypoints"), "{e}");
}

#[test]
fn shared_fingerprints_are_reported_not_guessed() {
    // Types with no members all have fingerprint 0x2468acf0 (spec 1.2); the corpus has two.
    let (reg, diags) = Registry::load_dirs(&[corpus_dir()]);
    let names: Vec<String> = reg.candidates(0x2468acf0).iter().map(|s| s.name.full()).collect();
    assert!(names.len() >= 2, "{names:?}");
    assert!(names.contains(&"feat.empty_t".to_owned()), "{names:?}");
    assert!(names.contains(&"exlcm.exampleconst_t".to_owned()), "{names:?}");
    assert!(reg.lookup(0x2468acf0).is_none());
    let msg = 0x2468acf0u64.to_be_bytes();
    match reg.decode(&msg).unwrap_err() {
        RegistryError::Ambiguous { fingerprint, names: got } => {
            assert_eq!(fingerprint, 0x2468acf0);
            assert_eq!(got, names);
        }
        other => panic!("{other}"),
    }
    let v = reg.decode_as(&TypeName::parse("feat.empty_t"), &msg).unwrap();
    assert_eq!(v.to_json(), "{}");
    let warning = diags.0.iter().find(|d| d.message.contains("0x000000002468acf0")).expect("a warning");
    assert!(!warning.is_error());
    assert!(warning.message.contains("feat.empty_t"), "{}", warning.message);
}

#[test]
fn a_broken_file_is_left_out_with_its_diagnostics() {
    let dir = scratch("registry_broken");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("good.lcm"), "package p; struct good_t { int32_t x; }").unwrap();
    std::fs::write(dir.join("sub/bad.lcm"), "package p; struct bad_t { int32_t x }").unwrap();
    std::fs::write(dir.join("sub/needs_bad.lcm"), "package p; struct user_t { bad_t b; }").unwrap();
    std::fs::write(dir.join("notes.txt"), "not a type").unwrap();
    let missing = dir.join("no_such_dir");
    let (reg, diags) = Registry::load_dirs(&[dir.clone(), missing]);
    let names: Vec<String> = reg.schema().structs.iter().map(|s| s.name.full()).collect();
    assert_eq!(names, ["p.good_t"]);
    let text = diags.to_string();
    assert!(diags.has_errors());
    assert!(text.contains("bad.lcm:1:"), "{text}");
    assert!(text.contains("needs_bad.lcm:1:"), "{text}");
    assert!(text.contains("no_such_dir: error: no such file or directory"), "{text}");
    let good = reg.by_name(&TypeName::parse("p.good_t")).unwrap();
    let mut msg = good.fingerprint.to_be_bytes().to_vec();
    msg.extend_from_slice(&7i32.to_be_bytes());
    assert_eq!(reg.decode(&msg).unwrap().1.to_json(), r#"{"x":7}"#);
}
