//! Unit tests of the mappings: every built-in mapping against the real `.lcm` types, decoded back with the SDK's
//! own decoder; inconsistent and hostile messages refused with a reason; mapping files read or refused clearly.

use std::path::PathBuf;

use foxglove::schemas::{CompressedImage, FrameTransform, LaserScan, PoseInFrame, RawImage};
use foxglove::Decode;
use nerve_types::dynamic::Value;
use nerve_types::{Registry, TypeName};

use super::*;

fn registry() -> Registry {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (reg, diags) = Registry::load_dirs(&[root.join("tests/corpus/bot_core"), root.join("examples/types")]);
    assert!(!diags.has_errors(), "{diags:?}");
    reg
}

fn value(reg: &Registry, ty: &str, json: &str) -> Value {
    reg.from_json(&TypeName::parse(ty), json).unwrap()
}

fn convert(reg: &Registry, ty: &str, json: &str) -> Result<Converted, Refusal> {
    let mappings = Mappings::builtin().resolve(Some(reg)).unwrap();
    // Through the wire, as the server sees it: encode, then decode with the dynamic decoder (as the type named:
    // exlcm.pose_t is bot_core.pose_t in another package, so their fingerprints are the same).
    let name = TypeName::parse(ty);
    let decoded = reg.decode_as(&name, &reg.encode(&name, &value(reg, ty, json)).unwrap()).unwrap();
    mappings.get(ty).expect("a built-in mapping").convert(&decoded, "CAM", 1_700_000_000_000_000)
}

fn bot_image(w: i32, h: i32, stride: i32, format: i32, data: &[u8]) -> String {
    format!(
        r#"{{"utime": 1700000000123456, "width": {w}, "height": {h}, "row_stride": {stride}, "pixelformat": {format},
            "size": {}, "data": {data:?}, "nmetadata": 0, "metadata": []}}"#,
        data.len()
    )
}

const RGB: i32 = 859981650;
const GRAY: i32 = 1497715271;
const NV12: i32 = 842094158;

#[test]
fn the_bot_core_types_have_libbots_fingerprints() {
    // As the real lcm-gen 1.5.3 computes them from libbot2's bot2-core/lcmtypes (checked with .venv/bin/lcm-gen).
    let reg = registry();
    for (name, fp) in [
        ("bot_core.image_t", 0x14739ffe13d5f5f0u64),
        ("bot_core.planar_lidar_t", 0xe3d17423180b5e8d),
        ("bot_core.pose_t", 0x2e16efb052b0105e),
        ("bot_core.rigid_transform_t", 0xea9ffbf2acc5c5ae),
    ] {
        assert_eq!(reg.by_name(&TypeName::parse(name)).unwrap().fingerprint, fp, "{name}");
    }
}

#[test]
fn every_builtin_mapping_resolves_against_its_type_and_none_without_types() {
    let reg = registry();
    let all = Mappings::builtin().resolve(Some(&reg)).unwrap();
    assert_eq!(all.iter().count(), 7);
    assert_eq!(Mappings::builtin().resolve(None).unwrap().iter().count(), 0);
}

#[test]
fn a_bot_core_rgb_image_is_a_raw_image_with_every_field() {
    let reg = registry();
    let data: Vec<u8> = (0..24).collect();
    let c = convert(&reg, "bot_core.image_t", &bot_image(4, 2, 12, RGB, &data)).unwrap();
    assert_eq!(c.out, Out::RawImage);
    let img = RawImage::decode(&c.bytes[..]).unwrap();
    assert_eq!((img.width, img.height, img.step, img.encoding.as_str()), (4, 2, 12, "rgb8"));
    assert_eq!(&img.data[..], &data[..]);
    assert_eq!(img.frame_id, "CAM");
    let t = img.timestamp.unwrap();
    assert_eq!((t.sec(), t.nsec()), (1_700_000_000, 123_456_000));
    // Row stride 0 means packed rows; padding rows are kept as the step.
    let c = convert(&reg, "bot_core.image_t", &bot_image(4, 2, 0, GRAY, &data[..8])).unwrap();
    assert_eq!(RawImage::decode(&c.bytes[..]).unwrap().step, 4);
    let c = convert(&reg, "bot_core.image_t", &bot_image(4, 2, 6, GRAY, &data[..12])).unwrap();
    assert_eq!(RawImage::decode(&c.bytes[..]).unwrap().step, 6);
    // NV12: a chroma plane of half the rows.
    let c = convert(&reg, "bot_core.image_t", &bot_image(4, 2, 0, NV12, &data[..12])).unwrap();
    assert_eq!(RawImage::decode(&c.bytes[..]).unwrap().encoding, "nv12");
}

#[test]
fn an_mjpeg_image_is_a_compressed_image() {
    let reg = registry();
    let jpeg = [0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 0xff, 0xd9];
    let c = convert(&reg, "bot_core.image_t", &bot_image(640, 480, 0, 1196444237, &jpeg)).unwrap();
    assert_eq!(c.out, Out::CompressedImage);
    let img = CompressedImage::decode(&c.bytes[..]).unwrap();
    assert_eq!((img.format.as_str(), &img.data[..]), ("jpeg", &jpeg[..]));
}

#[test]
fn inconsistent_images_are_refused_with_the_reason() {
    let reg = registry();
    let data = [0u8; 24];
    let cases = [
        (bot_image(4, 2, 12, RGB, &data[..23]), "the data has 23"),
        (bot_image(4, 2, 12, RGB, &[0; 25]), "the data has 25"),
        (bot_image(4, 2, 11, RGB, &data), "row stride 11 is less than 12"),
        (bot_image(4, 2, 0, 357, &data[..16]), "unknown pixel format 357"),
        (bot_image(4, 2, 0, 12345, &data), "unknown pixel format"),
        (bot_image(-4, 2, 0, GRAY, &data), "negative"),
        (bot_image(0, 2, 0, GRAY, &[]), "a 0x2 image"),
        (bot_image(4, 2, -12, RGB, &data), "row stride -12"),
        // 2^31-1 squared times 4 would overflow 32 bits (and 64 with a big stride): counted in u64, refused.
        (bot_image(i32::MAX, i32::MAX, 0, 877807426, &data), "but the data has 24"),
        (bot_image(i32::MAX, i32::MAX, i32::MAX, GRAY, &data), "but the data has 24"),
    ];
    for (json, why) in cases {
        let err = convert(&reg, "bot_core.image_t", &json).unwrap_err();
        assert!(err.0.contains(why), "{json}: {err}");
    }
    let empty_jpeg = convert(&reg, "bot_core.image_t", &bot_image(4, 2, 0, 1196444237, &[])).unwrap_err();
    assert!(empty_jpeg.0.contains("no data"), "{empty_jpeg}");
}

#[test]
fn nerves_example_image_is_mapped_too() {
    let reg = registry();
    let json = r#"{"utime": 5, "width": 2, "height": 2, "pixelformat": 1497715271, "size": 4, "data": [1, 2, 3, 4]}"#;
    let c = convert(&reg, "exlcm.image_t", json).unwrap();
    let img = RawImage::decode(&c.bytes[..]).unwrap();
    assert_eq!((img.encoding.as_str(), img.step, &img.data[..]), ("mono8", 2, &[1u8, 2, 3, 4][..]));
    assert_eq!(img.timestamp.unwrap().nsec(), 5000);
}

#[test]
fn a_planar_lidar_scan_is_a_laser_scan_and_mismatched_intensities_are_refused() {
    let reg = registry();
    let json = r#"{"utime": 1, "nranges": 3, "ranges": [1.5, "NaN", 3.25], "nintensities": 3,
                   "intensities": [10, 20, 30], "rad0": -1.0, "radstep": 0.5}"#;
    let c = convert(&reg, "bot_core.planar_lidar_t", json).unwrap();
    let scan = LaserScan::decode(&c.bytes[..]).unwrap();
    assert_eq!((scan.start_angle, scan.end_angle), (-1.0, 0.0));
    assert_eq!(scan.ranges[0], 1.5);
    assert!(scan.ranges[1].is_nan(), "an invalid reading stays NaN");
    assert_eq!(scan.intensities, [10.0, 20.0, 30.0]);
    assert_eq!(scan.frame_id, "CAM");
    // No intensities at all is libbot's usual case.
    let json = r#"{"utime": 1, "nranges": 2, "ranges": [1, 2], "nintensities": 0, "intensities": [],
                   "rad0": 0, "radstep": 0.25}"#;
    assert!(LaserScan::decode(&convert(&reg, "bot_core.planar_lidar_t", json).unwrap().bytes[..]).is_ok());
    let json = r#"{"utime": 1, "nranges": 2, "ranges": [1, 2], "nintensities": 1, "intensities": [7],
                   "rad0": 0, "radstep": 0.25}"#;
    assert!(convert(&reg, "bot_core.planar_lidar_t", json).unwrap_err().0.contains("1 intensities for 2 ranges"));
    let json = r#"{"utime": 1, "nranges": 1, "ranges": [1], "nintensities": 0, "intensities": [],
                   "rad0": "Infinity", "radstep": 0.25}"#;
    assert!(convert(&reg, "bot_core.planar_lidar_t", json).unwrap_err().0.contains("start_angle is inf"));
    let json = r#"{"utime": 1, "nranges": 2, "ranges": [4, 5], "rad0": 0.5, "radstep": 0.25}"#;
    let scan = LaserScan::decode(&convert(&reg, "exlcm.laser_t", json).unwrap().bytes[..]).unwrap();
    assert_eq!((scan.start_angle, scan.end_angle, scan.ranges.len()), (0.5, 0.75, 2));
}

#[test]
fn poses_and_transforms_reorder_libbots_quaternion() {
    let reg = registry();
    let json = r#"{"utime": 2000000, "pos": [1, 2, 3], "vel": [0, 0, 0], "orientation": [0.5, 0.1, 0.2, 0.3],
                   "rotation_rate": [0, 0, 0], "accel": [0, 0, 0]}"#;
    let pose = PoseInFrame::decode(&convert(&reg, "bot_core.pose_t", json).unwrap().bytes[..]).unwrap();
    assert_eq!(pose.frame_id, "local");
    assert_eq!(pose.timestamp.unwrap().sec(), 2);
    let p = pose.pose.unwrap();
    let (pos, q) = (p.position.unwrap(), p.orientation.unwrap());
    assert_eq!((pos.x, pos.y, pos.z), (1.0, 2.0, 3.0));
    assert_eq!((q.x, q.y, q.z, q.w), (0.1, 0.2, 0.3, 0.5));
    let json = r#"{"utime": 3, "trans": [4, 5, 6], "quat": [1, 0, 0, 0]}"#;
    let t = FrameTransform::decode(&convert(&reg, "bot_core.rigid_transform_t", json).unwrap().bytes[..]).unwrap();
    assert_eq!((t.parent_frame_id.as_str(), t.child_frame_id.as_str()), ("local", "CAM"));
    let (tr, q) = (t.translation.unwrap(), t.rotation.unwrap());
    assert_eq!((tr.x, tr.y, tr.z, q.w, q.x), (4.0, 5.0, 6.0, 1.0, 0.0));
    let json = r#"{"utime": 3, "trans": [4, "NaN", 6], "quat": [1, 0, 0, 0]}"#;
    assert!(convert(&reg, "bot_core.rigid_transform_t", json).unwrap_err().0.contains("position holds NaN"));
}

#[test]
fn timestamps_out_of_foxgloves_range_are_refused() {
    let reg = registry();
    for utime in [-1i64, i64::MAX, i64::MIN] {
        let json = format!(r#"{{"utime": {utime}, "trans": [0, 0, 0], "quat": [1, 0, 0, 0]}}"#);
        let err = convert(&reg, "bot_core.rigid_transform_t", &json).unwrap_err();
        assert!(err.0.contains("outside what Foxglove's time holds"), "{utime}: {err}");
    }
}

const CAMERA_FILE: &str = r#"
builtin = false

[[mapping]]
type = "exlcm.image_t"
schema = "foxglove.RawImage"
encoding = "rgb8"
frame_id = "cam/{channel}"
timestamp = "receive"
[mapping.fields]
width = "width"
height = "height"
data = "data"

[[mapping]]
type = "exlcm.pose_t"
schema = "FrameTransform"
frame_id = "world"
child_frame_id = "base"
quaternion = "xyzw"
timestamp_unit = "ms"
fields = { position = "pos", orientation = "orientation" }
"#;

#[test]
fn a_mapping_file_replaces_the_builtin_ones() {
    let reg = registry();
    let m = Mappings::from_toml(CAMERA_FILE).unwrap().resolve(Some(&reg)).unwrap();
    assert_eq!(m.iter().count(), 2, "builtin = false leaves the built-in ones out");
    let json = r#"{"utime": 5, "width": 2, "height": 1, "pixelformat": 0, "size": 6, "data": [1, 2, 3, 4, 5, 6]}"#;
    let v = value(&reg, "exlcm.image_t", json);
    let c = m.get("exlcm.image_t").unwrap().convert(&v, "FRONT", 7_000_001).unwrap();
    let img = RawImage::decode(&c.bytes[..]).unwrap();
    assert_eq!((img.encoding.as_str(), img.frame_id.as_str(), img.step), ("rgb8", "cam/FRONT", 6));
    assert_eq!((img.timestamp.unwrap().sec(), img.timestamp.unwrap().nsec()), (7, 1000), "the receive time");
    let json = r#"{"utime": 1500, "pos": [1, 2, 3], "vel": [0, 0, 0], "orientation": [0.1, 0.2, 0.3, 0.9],
                   "rotation_rate": [0, 0, 0], "accel": [0, 0, 0]}"#;
    let c = m.get("exlcm.pose_t").unwrap().convert(&value(&reg, "exlcm.pose_t", json), "P", 0).unwrap();
    let t = FrameTransform::decode(&c.bytes[..]).unwrap();
    assert_eq!((t.parent_frame_id.as_str(), t.child_frame_id.as_str()), ("world", "base"));
    assert_eq!(t.rotation.unwrap().w, 0.9);
    assert_eq!((t.timestamp.unwrap().sec(), t.timestamp.unwrap().nsec()), (1, 500_000_000));
    // Without `builtin = false` the file's mappings join the built-in ones.
    let joined = Mappings::from_toml(&CAMERA_FILE.replace("builtin = false", "")).unwrap();
    assert_eq!(joined.resolve(Some(&reg)).unwrap().iter().count(), 7);
}

fn file_problems(text: &str) -> String {
    Mappings::from_toml(text).unwrap_err().to_string()
}

#[test]
fn a_bad_mapping_file_is_refused_saying_where_and_why() {
    // TOML syntax: the parser's line and column.
    let e = file_problems("[[mapping]]\ntype = \"a_t\"\nschema = ");
    assert!(e.contains("line 3"), "{e}");
    // Unknown keys, schemas and roles; missing roles; contradictions.
    let e = file_problems("[[mapping]]\ntype = \"a_t\"\nschema = \"foxglove.RawImage\"\ncolour = 1\n");
    assert!(e.contains("unknown field `colour`"), "{e}");
    let e = file_problems("[[mapping]]\ntype = \"a_t\"\nschema = \"foxglove.Image\"\n");
    assert!(e.contains("mapping 1 (a_t): schema \"foxglove.Image\" is not one of foxglove.RawImage"), "{e}");
    let e = file_problems(
        "[[mapping]]\ntype = \"a_t\"\nschema = \"LaserScan\"\nframe_id = \"x\"\nframe_id_field = \"f\"\n\
         timestamp_unit = \"days\"\nfields = { ranges = \"r\", start_angle = \"a\", colour = \"c\" }\n",
    );
    for want in [
        "mapping 1 (a_t): foxglove.LaserScan has no role \"colour\"",
        "needs fields.angle_step or fields.end_angle",
        "give frame_id or frame_id_field, not both",
        "timestamp_unit \"days\" is not one of s, ms, us, ns",
    ] {
        assert!(e.contains(want), "{want:?} in {e}");
    }
    let e = file_problems("[[mapping]]\ntype = \"a_t\"\nschema = \"RawImage\"\nfields = { width = \"w\" }\n");
    assert!(e.contains("fields.height is missing") && e.contains("fields.data is missing"), "{e}");
    let e = file_problems(
        "[[mapping]]\ntype = \"a_t\"\nschema = \"CompressedImage\"\nencoding = \"gif\"\nfields = { data = \"d\" }\n\
         [[mapping]]\ntype = \"a_t\"\nschema = \"CompressedImage\"\nfields = { data = \"d\" }\n",
    );
    assert!(
        e.contains("\"gif\" is not a CompressedImage format")
            && e.contains("mapping 2 (a_t): the type is mapped twice"),
        "{e}"
    );
}

#[test]
fn a_file_mapping_that_does_not_fit_its_type_is_refused_at_start() {
    let reg = registry();
    let text = r#"
[[mapping]]
type = "exlcm.laser_t"
schema = "LaserScan"
frame_id_field = "utime"
fields = { ranges = "rad0", start_angle = "ranges", angle_step = "nope" }

[[mapping]]
type = "acme.missing_t"
schema = "LocationFix"
fields = { latitude = "lat", longitude = "lon" }

[[mapping]]
type = "exlcm.image_t"
schema = "RawImage"
encoding = "yuv9"
timestamp = "width.x"
fields = { width = "width", height = "height", data = "data" }
"#;
    let problems = Mappings::from_toml(text).unwrap().resolve(Some(&reg)).unwrap_err();
    let all = problems.join("\n");
    for want in [
        "mapping for exlcm.laser_t: ranges = \"rad0\": float rad0 is not an array of numbers",
        "start_angle = \"ranges\": float[] ranges is not a number",
        "angle_step = \"nope\": exlcm.laser_t has no member \"nope\"",
        "frame_id_field = \"utime\": int64 utime is not a string",
        "mapping for acme.missing_t: no such LCM type among the types given (--types)",
        "encoding \"yuv9\": a RawImage needs a pixelformat member or one of the encodings uyvy",
        "timestamp = \"width.x\": \"width\" is not a (scalar) struct",
    ] {
        assert!(all.contains(want), "{want:?} in\n{all}");
    }
}

#[test]
fn hostile_values_of_the_wrong_shape_are_refused_not_panicked_on() {
    let reg = registry();
    let mapping = Mappings::builtin().resolve(Some(&reg)).unwrap();
    let image = mapping.get("bot_core.image_t").unwrap();
    // A value that is not the type the mapping expects at all (a caller's mistake, or a type renamed under it).
    let pose = value(&reg, "exlcm.laser_t", r#"{"utime": 1, "nranges": 0, "ranges": [], "rad0": 0, "radstep": 0}"#);
    assert!(image.convert(&pose, "X", 0).unwrap_err().0.contains("has no member"));
    assert!(image.convert(&Value::Int32(3), "X", 0).is_err());
    let laser = mapping.get("exlcm.laser_t").unwrap();
    let wrong = Value::Struct(nerve_types::dynamic::StructValue {
        ty: "exlcm.laser_t".into(),
        fields: vec![
            ("utime".into(), Value::String("soon".into())),
            ("ranges".into(), Value::Int8(1)),
            ("rad0".into(), Value::Bytes(vec![1])),
        ],
    });
    assert!(laser.convert(&wrong, "X", 0).unwrap_err().0.contains("timestamp utime is not a finite number"));
}

fn inline_registry(text: &str) -> Registry {
    let src = nerve_types::Source { path: "inline.lcm".into(), text: text.into() };
    Registry::new(nerve_types::check(&[src], &[]).unwrap().schema)
}

#[test]
fn a_file_maps_point_clouds_and_location_fixes() {
    let reg = inline_registry(
        "package acme; struct cloud_t { int64_t utime; string frame; int32_t n; float xs[n]; float ys[n]; \
         double zs[n]; }\n struct fix_t { int64_t utime; double lat; double lon; float alt; }",
    );
    let text = r#"
builtin = false
[[mapping]]
type = "acme.cloud_t"
schema = "PointCloud"
frame_id_field = "frame"
fields = { x = "xs", y = "ys", z = "zs" }
[[mapping]]
type = "acme.fix_t"
schema = "LocationFix"
frame_id = "gps"
fields = { latitude = "lat", longitude = "lon", altitude = "alt" }
"#;
    let m = Mappings::from_toml(text).unwrap().resolve(Some(&reg)).unwrap();
    let cloud = value(
        &reg,
        "acme.cloud_t",
        r#"{"utime": 9, "frame": "velo", "n": 2, "xs": [1, 2], "ys": [-1, 0.5], "zs": [0.25, 3]}"#,
    );
    let c = m.get("acme.cloud_t").unwrap().convert(&cloud, "C", 0).unwrap();
    assert_eq!(c.out, Out::PointCloud);
    let pc = foxglove::schemas::PointCloud::decode(&c.bytes[..]).unwrap();
    assert_eq!((pc.frame_id.as_str(), pc.point_stride, pc.fields.len()), ("velo", 12, 3));
    let names: Vec<(&str, u32)> = pc.fields.iter().map(|f| (f.name.as_str(), f.offset)).collect();
    assert_eq!(names, [("x", 0), ("y", 4), ("z", 8)]);
    let floats: Vec<f32> = pc.data.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    assert_eq!(floats, [1.0, -1.0, 0.25, 2.0, 0.5, 3.0]);
    let fix = value(&reg, "acme.fix_t", r#"{"utime": 9, "lat": 48.5, "lon": -123.25, "alt": 12.5}"#);
    let c = m.get("acme.fix_t").unwrap().convert(&fix, "G", 0).unwrap();
    let f = foxglove::schemas::LocationFix::decode(&c.bytes[..]).unwrap();
    assert_eq!((f.latitude, f.longitude, f.altitude, f.frame_id.as_str()), (48.5, -123.25, 12.5, "gps"));
    let far = value(&reg, "acme.fix_t", r#"{"utime": 9, "lat": 91, "lon": 0, "alt": 0}"#);
    assert!(m.get("acme.fix_t").unwrap().convert(&far, "G", 0).unwrap_err().0.contains("out of range"));
}

/// A small deterministic generator (xorshift64*), so that a failure names its case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn mutated_messages_and_mapping_files_never_panic_and_what_is_sent_is_consistent() {
    let reg = registry();
    let mappings = Mappings::builtin().resolve(Some(&reg)).unwrap();
    let data: Vec<u8> = (0..24).collect();
    let seeds = [
        ("bot_core.image_t", bot_image(4, 2, 12, RGB, &data)),
        ("bot_core.image_t", bot_image(4, 2, 0, NV12, &data[..12])),
        (
            "bot_core.planar_lidar_t",
            r#"{"utime": 1, "nranges": 2, "ranges": [1, 2], "nintensities": 2, "intensities": [3, 4],
                "rad0": 0, "radstep": 0.25}"#
                .into(),
        ),
        ("bot_core.rigid_transform_t", r#"{"utime": 3, "trans": [4, 5, 6], "quat": [1, 0, 0, 0]}"#.into()),
    ];
    let mut rng = Rng(0x5eed_f0c5);
    let (mut decoded, mut sent) = (0, 0);
    for case in 0..4000 {
        let (ty, json) = &seeds[case % seeds.len()];
        let name = TypeName::parse(ty);
        let mut bytes = reg.encode(&name, &value(&reg, ty, json)).unwrap();
        // Past the fingerprint, a few bytes set at random: counts, sizes, floats and pixel formats go hostile.
        for _ in 0..1 + rng.next() % 3 {
            let at = 8 + (rng.next() as usize) % (bytes.len() - 8);
            bytes[at] = rng.next() as u8;
        }
        let Ok(v) = reg.decode_as(&name, &bytes) else { continue };
        decoded += 1;
        let Ok(c) = mappings.get(ty).unwrap().convert(&v, "M", 0) else { continue };
        sent += 1;
        if c.out == Out::RawImage {
            let img = RawImage::decode(&c.bytes[..]).unwrap();
            let rows = if img.encoding == "nv12" { img.height as usize * 3 / 2 } else { img.height as usize };
            assert_eq!(img.data.len(), img.step as usize * rows, "case {case}: {img:?}");
        }
    }
    assert!(decoded > 1000 && sent > 100, "the mutations exercised the mappings: {decoded} decoded, {sent} sent");
    let text = CAMERA_FILE.as_bytes();
    for _ in 0..2000 {
        let mut t = text.to_vec();
        let at = (rng.next() as usize) % t.len();
        t[at] = b" =[]{}\"'.#\nxyz0\\"[(rng.next() % 16) as usize];
        if let Ok(m) = Mappings::from_toml(&String::from_utf8_lossy(&t)) {
            let _ = m.resolve(Some(&reg));
        }
    }
}
