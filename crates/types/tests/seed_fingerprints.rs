//! Fingerprints of the seed types and LCM's own test types, against the values real lcm-gen 1.5.3 prints
//! (spec sections 2.3 and 2.4).

use nerve_types::{check, Source};

fn fingerprints(text: &str) -> Vec<(String, u64, u64)> {
    let src = Source { path: "t.lcm".into(), text: text.into() };
    let checked = check(&[src], &[]).unwrap_or_else(|e| panic!("{}", e.render()));
    checked.schema.structs.iter().map(|s| (s.name.full(), s.base_hash, s.fingerprint)).collect()
}

#[test]
fn seed_000_types() {
    let f = fingerprints(
        "struct waypoint_t { string id; float position[2]; }
         struct path_t { int64_t timestamp; int32_t num_waypoints; waypoint_t waypoints[num_waypoints]; }
         struct image_t { int64_t utime; int32_t width; int32_t height; int32_t pixelformat; int32_t size; byte data[size]; }
         struct laser_t { int64_t utime; int32_t nranges; float ranges[nranges]; float rad0; float radstep; }",
    );
    assert_eq!(
        f,
        [
            ("waypoint_t".into(), 0x2957ea2c01788c34, 0x52afd45802f11868),
            ("path_t".into(), 0xfaaa10c80e127ca7, 0x9ab3ca4022072a1e),
            ("image_t".into(), 0xf0f6fc49e18a4f98, 0xe1edf893c3149f31),
            ("laser_t".into(), 0x0c7a455a2737ecaa, 0x18f48ab44e6fd954),
        ]
    );
}

#[test]
fn mutual_recursion() {
    let f = fingerprints(
        "struct a_t { b_t b[0x1]; c_t c[1]; } struct b_t { int8_t n; a_t a[n]; } struct c_t { int8_t n; b_t b[n]; }",
    );
    assert_eq!(f[0].1, 0xdadefbd8fcffaf63);
    assert_eq!([f[0].2, f[1].2, f[2].2], [0x237edb03958bfbb7, 0x10147d7c75369fa4, 0xa0203407025235f7]);
}

#[test]
fn empty_struct_and_dimension_spelling() {
    assert_eq!(fingerprints("struct s {}")[0].2, 0x2468acf0);
    assert_eq!(fingerprints("struct s { int32_t a[2]; }")[0].1, 0x1fdd9dc9f02c2678);
    assert_eq!(fingerprints("struct s { int32_t a[0x2]; }")[0].1, 0x62360fd3d78948ed);
}

#[test]
fn enum_hash() {
    let src = Source { path: "e.lcm".into(), text: "enum color_t { RED=1, GREEN, BLUE=5 }".into() };
    let checked = check(&[src], &[]).unwrap();
    assert_eq!(checked.schema.enums[0].hash, 0x07636f6d82a7e5b6);
}
