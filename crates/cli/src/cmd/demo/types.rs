//! The demo's messages: the seed types (`examples/types`, compiled into the binary so `nerve demo` runs from
//! anywhere), encoded and decoded with `nerve_types`' dynamic codec, as a program that only has the `.lcm` files
//! would. Every message carries the time it was made in its `utime`, so a receiver measures latency from it.

use std::f64::consts::PI;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use nerve_types::dynamic::{StructValue, Value};
use nerve_types::{check, Registry, Source, TypeName};

/// The `.lcm` files the demo uses, as they are in `examples/types`.
const SOURCES: [(&str, &str); 3] = [
    ("examples/types/laser_t.lcm", include_str!("../../../../../examples/types/laser_t.lcm")),
    ("examples/types/image_t.lcm", include_str!("../../../../../examples/types/image_t.lcm")),
    ("examples/types/pose_t.lcm", include_str!("../../../../../examples/types/pose_t.lcm")),
];

/// Channel and type of the laser scans.
pub const LASER: (&str, &str) = ("LASER", "exlcm.laser_t");
/// Channel and type of the camera images.
pub const IMAGE: (&str, &str) = ("IMAGE", "exlcm.image_t");
/// Channel and type of the pose estimates.
pub const POSE: (&str, &str) = ("POSE", "exlcm.pose_t");

/// Beams in a scan (the laser_t of the LCM paper's marshalling benchmark).
pub const RANGES: usize = 180;
/// Image size (the image_t of the LCM paper's marshalling benchmark: 640x480 grey).
pub const WIDTH: usize = 640;
/// Image height.
pub const HEIGHT: usize = 480;
/// `image_t.PIXEL_FORMAT_GRAY`.
const GRAY: i32 = 0x5945_5247;

/// The demo's types with the dynamic codec's tables built once; cheap to clone and share between threads.
#[derive(Clone)]
pub struct Types(Arc<Registry>);

impl Types {
    /// Checks the compiled-in `.lcm` files.
    pub fn load() -> anyhow::Result<Types> {
        let sources: Vec<Source> =
            SOURCES.iter().map(|(path, text)| Source { path: (*path).into(), text: (*text).to_owned() }).collect();
        let checked = check(&sources, &[]).map_err(|d| anyhow!("the demo's types:\n{}", d.render()))?;
        Ok(Types(Arc::new(Registry::new(checked.schema))))
    }

    /// The registry (for the spy, which identifies messages by fingerprint).
    pub fn registry(&self) -> &Registry {
        &self.0
    }

    /// Encodes `value` as `ty`.
    pub fn encode(&self, ty: &str, value: &Value) -> anyhow::Result<Vec<u8>> {
        self.0.encode(&TypeName::parse(ty), value).with_context(|| format!("encoding a {ty}"))
    }

    /// Decodes a whole message of `ty` and returns its `utime` (every demo type has one, first).
    pub fn utime_of(&self, ty: &str, bytes: &[u8]) -> anyhow::Result<i64> {
        let v = self.0.decode_as(&TypeName::parse(ty), bytes).with_context(|| format!("decoding a {ty}"))?;
        v.as_struct().and_then(|s| s.get("utime")).and_then(Value::as_i64).ok_or_else(|| anyhow!("{ty} without utime"))
    }

    /// Decodes a pose and returns `(utime, x, y)`.
    pub fn pose_of(&self, bytes: &[u8]) -> anyhow::Result<(i64, f64, f64)> {
        let v = self.0.decode_as(&TypeName::parse(POSE.1), bytes).context("decoding a pose")?;
        let s = v.as_struct().ok_or_else(|| anyhow!("a pose that is not a struct"))?;
        let utime = s.get("utime").and_then(Value::as_i64).ok_or_else(|| anyhow!("a pose without utime"))?;
        let (x, y) = match s.get("pos") {
            Some(Value::Array(p)) => match (p.first(), p.get(1)) {
                (Some(Value::Double(x)), Some(Value::Double(y))) => (*x, *y),
                _ => return Err(anyhow!("a pose whose pos is not doubles")),
            },
            _ => return Err(anyhow!("a pose without pos")),
        };
        Ok((utime, x, y))
    }
}

fn record(ty: &str, fields: Vec<(&str, Value)>) -> Value {
    Value::Struct(StructValue { ty: ty.into(), fields: fields.into_iter().map(|(n, v)| (n.into(), v)).collect() })
}

fn doubles(xs: &[f64]) -> Value {
    Value::Array(xs.iter().map(|&x| Value::Double(x)).collect())
}

/// A scan of a round room 4 m across, seen from a robot circling inside it: 180 beams over a half turn.
pub fn laser(utime: i64, t: f64) -> Value {
    let rad0 = -PI / 2.0;
    let radstep = PI / (RANGES - 1) as f64;
    let (rx, ry) = (0.8 * t.cos(), 0.8 * t.sin());
    let ranges = (0..RANGES)
        .map(|i| {
            // Distance along the beam to the circle of radius 2 m around the origin.
            let a = t + rad0 + i as f64 * radstep;
            let (dx, dy) = (a.cos(), a.sin());
            let b = rx * dx + ry * dy;
            let c = rx * rx + ry * ry - 4.0;
            Value::Float((-b + (b * b - c).sqrt()) as f32)
        })
        .collect();
    record(
        LASER.1,
        vec![
            ("utime", Value::Int64(utime)),
            ("nranges", Value::Int32(RANGES as i32)),
            ("ranges", Value::Array(ranges)),
            ("rad0", Value::Float(rad0 as f32)),
            ("radstep", Value::Float(radstep as f32)),
        ],
    )
}

/// A grey test pattern that scrolls by one row per frame.
pub struct Camera {
    pixels: Vec<u8>,
}

impl Camera {
    /// A diagonal gradient.
    pub fn new() -> Camera {
        let pixels = (0..WIDTH * HEIGHT).map(|i| ((i % WIDTH + i / WIDTH) % 256) as u8).collect();
        Camera { pixels }
    }

    /// The next frame, stamped `utime`.
    pub fn frame(&mut self, utime: i64) -> Value {
        self.pixels.rotate_left(WIDTH);
        record(
            IMAGE.1,
            vec![
                ("utime", Value::Int64(utime)),
                ("width", Value::Int32(WIDTH as i32)),
                ("height", Value::Int32(HEIGHT as i32)),
                ("pixelformat", Value::Int32(GRAY)),
                ("size", Value::Int32((WIDTH * HEIGHT) as i32)),
                ("data", Value::Bytes(self.pixels.clone())),
            ],
        )
    }
}

/// The pose of a robot driving a circle of 0.8 m radius at 1 rad/s, `t` seconds in.
pub fn pose(utime: i64, t: f64) -> Value {
    let (s, c) = t.sin_cos();
    let yaw = t + PI / 2.0;
    record(
        POSE.1,
        vec![
            ("utime", Value::Int64(utime)),
            ("pos", doubles(&[0.8 * c, 0.8 * s, 0.0])),
            ("vel", doubles(&[-0.8 * s, 0.8 * c, 0.0])),
            ("orientation", doubles(&[(yaw / 2.0).cos(), 0.0, 0.0, (yaw / 2.0).sin()])),
            ("rotation_rate", doubles(&[0.0, 0.0, 1.0])),
            ("accel", doubles(&[0.0, 0.8, 0.0])),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_encodes_and_its_utime_reads_back() {
        let types = Types::load().unwrap();
        let laser = types.encode(LASER.1, &laser(11, 0.3)).unwrap();
        assert_eq!(laser.len(), 8 + 8 + 4 + 4 * RANGES + 4 + 4);
        assert_eq!(types.utime_of(LASER.1, &laser).unwrap(), 11);
        let image = types.encode(IMAGE.1, &Camera::new().frame(22)).unwrap();
        assert_eq!(image.len(), 8 + 8 + 4 * 4 + WIDTH * HEIGHT);
        assert_eq!(types.utime_of(IMAGE.1, &image).unwrap(), 22);
        let pose = types.encode(POSE.1, &pose(33, 0.0)).unwrap();
        assert_eq!(pose.len(), 8 + 8 + 16 * 8);
        let (utime, x, y) = types.pose_of(&pose).unwrap();
        assert_eq!((utime, x, y), (33, 0.8, 0.0));
        assert!(types.utime_of(LASER.1, &pose).is_err(), "a pose is not a laser scan");
    }

    #[test]
    fn the_room_is_two_metres_from_its_centre() {
        let Value::Struct(s) = laser(0, 0.0) else { panic!() };
        let Some(Value::Array(r)) = s.get("ranges") else { panic!() };
        // From (0.8, 0) the beam at angle 0 (the middle one, pointing at +x... rad0 + 90 steps) hits at x = 2.
        let Value::Float(mid) = r[RANGES / 2] else { panic!() };
        assert!((mid - 1.2).abs() < 0.02, "{mid}");
    }
}
