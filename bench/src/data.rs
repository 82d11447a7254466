//! The cases: the normalized in-memory form of each message (PolySync's serialization paper's idea, used to check every system's
//! output), deterministic test values, a reference LCM encoder (to check the LCM-format systems byte for byte), and
//! the expected projections.

use serde::{Deserialize, Serialize};

/// Fingerprints of bench/types, computed by nerve-types at build time.
#[allow(missing_docs, dead_code)]
pub mod fp {
    include!(concat!(env!("OUT_DIR"), "/fingerprints.rs"));
}

/// seed.image_t.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    pub utime: i64,
    pub width: i32,
    pub height: i32,
    pub pixelformat: i32,
    pub data: Vec<u8>,
}

/// seed.laser_t.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Laser {
    pub utime: i64,
    pub ranges: Vec<f32>,
    pub rad0: f32,
    pub radstep: f32,
}

/// seed.waypoint_t.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Waypoint {
    pub id: String,
    pub position: [f32; 2],
}

/// seed.path_t.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Path {
    pub timestamp: i64,
    pub waypoints: Vec<Waypoint>,
}

/// lidar.msg_info_t.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MsgInfo {
    pub kind: i64,
    pub timestamp: i64,
    pub guid: i64,
}

/// lidar.lidar_point_t.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LidarPoint {
    pub position: [f32; 3],
    pub intensity: u8,
}

/// lidar.lidar_t (PolySync's serialization paper's LiDARPointsMsg).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lidar {
    pub msg_info: MsgInfo,
    pub points: Vec<LidarPoint>,
}

impl Lidar {
    /// Full projection: every numeric value as f64, summed in one fixed order (the C glue, the flatbuffers and
    /// bincode readers and the Python script use the same order, so the sums compare exactly).
    pub fn sum(&self) -> f64 {
        let mut s = self.msg_info.kind as f64
            + self.msg_info.timestamp as f64
            + self.msg_info.guid as f64
            + self.points.len() as f64;
        for p in &self.points {
            s += sum_point(p.position, p.intensity);
        }
        s
    }

    /// The variable-region field: position[1] of the middle point.
    pub fn middle_y(&self) -> f32 {
        self.points[self.points.len() / 2].position[1]
    }
}

/// One point's share of the full-projection sum.
#[inline(always)]
pub fn sum_point(pos: [f32; 3], intensity: u8) -> f64 {
    pos[0] as f64 + pos[1] as f64 + pos[2] as f64 + intensity as f64
}

/// A case of the suite.
pub enum Case {
    /// LCM's paper Fig. 6: a 640x480 grayscale image.
    Image(Image),
    /// LCM's paper Fig. 6: a planar laser scan, 180 ranges.
    Laser(Laser),
    /// LCM's paper Fig. 6: a path of 50 waypoints.
    Path(Path),
    /// PolySync's serialization paper: a LiDAR message of n points.
    Lidar(Lidar),
}

impl Case {
    /// The name printed in tables and JSON.
    pub fn name(&self) -> String {
        match self {
            Case::Image(_) => "image_t".into(),
            Case::Laser(_) => "laser_t".into(),
            Case::Path(_) => "path_t".into(),
            Case::Lidar(l) => format!("lidar_{}", l.points.len()),
        }
    }

    /// The LCM type name of the message.
    pub fn lcm_type(&self) -> &'static str {
        match self {
            Case::Image(_) => "seed.image_t",
            Case::Laser(_) => "seed.laser_t",
            Case::Path(_) => "seed.path_t",
            Case::Lidar(_) => "lidar.lidar_t",
        }
    }

    /// The reference LCM encoding (fingerprint included).
    pub fn lcm_bytes(&self) -> Vec<u8> {
        let mut w = Vec::new();
        match self {
            Case::Image(m) => {
                w.extend(fp::SEED_IMAGE_T.to_be_bytes());
                w.extend(m.utime.to_be_bytes());
                w.extend(m.width.to_be_bytes());
                w.extend(m.height.to_be_bytes());
                w.extend(m.pixelformat.to_be_bytes());
                w.extend((m.data.len() as i32).to_be_bytes());
                w.extend(&m.data);
            }
            Case::Laser(m) => {
                w.extend(fp::SEED_LASER_T.to_be_bytes());
                w.extend(m.utime.to_be_bytes());
                w.extend((m.ranges.len() as i32).to_be_bytes());
                for r in &m.ranges {
                    w.extend(r.to_be_bytes());
                }
                w.extend(m.rad0.to_be_bytes());
                w.extend(m.radstep.to_be_bytes());
            }
            Case::Path(m) => {
                w.extend(fp::SEED_PATH_T.to_be_bytes());
                w.extend(m.timestamp.to_be_bytes());
                w.extend((m.waypoints.len() as i32).to_be_bytes());
                for p in &m.waypoints {
                    w.extend((p.id.len() as i32 + 1).to_be_bytes());
                    w.extend(p.id.as_bytes());
                    w.push(0);
                    w.extend(p.position[0].to_be_bytes());
                    w.extend(p.position[1].to_be_bytes());
                }
            }
            Case::Lidar(m) => {
                w.extend(fp::LIDAR_LIDAR_T.to_be_bytes());
                w.extend(m.msg_info.kind.to_be_bytes());
                w.extend(m.msg_info.timestamp.to_be_bytes());
                w.extend(m.msg_info.guid.to_be_bytes());
                w.extend((m.points.len() as i32).to_be_bytes());
                for p in &m.points {
                    for x in p.position {
                        w.extend(x.to_be_bytes());
                    }
                    w.push(p.intensity);
                }
            }
        }
        w
    }
}

/// A small deterministic generator (xorshift64*), so every run encodes the same values.
pub struct Rng(u64);

impl Rng {
    /// Seeded.
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [lo, hi).
    pub fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// Every case, in the order they are printed: LCM's paper Fig. 6, then PolySync's serialization paper at 10 to 10,000 points.
pub fn cases() -> Vec<Case> {
    let mut rng = Rng::new(0x5eed_0002);
    let mut out = Vec::new();
    let (w, h) = (640, 480);
    out.push(Case::Image(Image {
        utime: 1_700_000_000_000_001,
        width: w,
        height: h,
        pixelformat: 0x5945_5247, // LCM's GRAY ("GREY")
        data: (0..w * h).map(|_| (rng.next_u64() >> 56) as u8).collect(),
    }));
    out.push(Case::Laser(Laser {
        utime: 1_700_000_000_000_002,
        ranges: (0..180).map(|_| rng.f32(0.2, 30.0)).collect(),
        rad0: -std::f32::consts::FRAC_PI_2,
        radstep: std::f32::consts::PI / 180.0,
    }));
    out.push(Case::Path(Path {
        timestamp: 1_700_000_000_000_003,
        waypoints: (0..50)
            .map(|i| Waypoint {
                id: format!("waypoint {i}"),
                position: [rng.f32(-100.0, 100.0), rng.f32(-100.0, 100.0)],
            })
            .collect(),
    }));
    for n in [10usize, 100, 1000, 10_000] {
        out.push(Case::Lidar(Lidar {
            msg_info: MsgInfo { kind: 3, timestamp: 1_700_000_000_000_004, guid: 0x0123_4567_89ab_cdef },
            points: (0..n)
                .map(|_| LidarPoint {
                    position: [rng.f32(-50.0, 50.0), rng.f32(-50.0, 50.0), rng.f32(-3.0, 10.0)],
                    intensity: (rng.next_u64() >> 56) as u8,
                })
                .collect(),
        }));
    }
    out
}
