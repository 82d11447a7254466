//! The non-LCM peers: flatbuffers (flatc-generated code, verified reads), bincode (serde) and the memcpy floor.

use std::hint::black_box;

use super::{mismatch, Cell, Metric};
use crate::data::{self, Case, Lidar};
use crate::harness::timing::{measure, AlignedBuf, Config, INPUT_PHASE, OUTPUT_PHASE};

/// The memcpy floor: one copy of the case's LCM-encoded bytes between two warm, reused, aligned buffers (input at
/// 0, output at 2048 modulo 4096). One measurement, reported as both encode and decode.
pub fn memcpy(case: &Case, cfg: &Config) -> Vec<(Metric, Cell)> {
    let reference = case.lcm_bytes();
    let src = AlignedBuf::from_bytes(&reference, INPUT_PHASE);
    let mut dst = AlignedBuf::new(reference.len(), OUTPUT_PHASE);
    let t = measure(cfg, || {
        dst.as_mut_slice().copy_from_slice(black_box(src.as_slice()));
        dst.as_slice().as_ptr()
    });
    let na = || Cell::Na("a copy has no projection".into());
    vec![
        (Metric::Encode, Cell::Ns(t)),
        (Metric::Decode, Cell::Ns(t)),
        (Metric::Full, na()),
        (Metric::Fixed, na()),
        (Metric::Var, na()),
    ]
}

/// bincode 1.3 with serde derive on the normalized form: encode into a preallocated buffer, decode into a new
/// normalized value; projections decode the whole message (bincode has no random access).
pub fn bincode(case: &Case, cfg: &Config) -> Vec<(Metric, Cell)> {
    fn go<T>(case_name: &str, msg: &T, cfg: &Config) -> (Vec<(Metric, Cell)>, AlignedBuf)
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq,
    {
        let size = bincode::serialized_size(msg).unwrap() as usize;
        let mut out = AlignedBuf::new(size, OUTPUT_PHASE);
        bincode::serialize_into(out.as_mut_slice(), msg).unwrap();
        let input = AlignedBuf::from_bytes(out.as_slice(), INPUT_PHASE);
        let back: T = bincode::deserialize(input.as_slice()).unwrap();
        if back != *msg {
            mismatch("bincode", case_name, "decode differs from the normalized form");
        }
        let enc = measure(cfg, || {
            let w: &mut [u8] = out.as_mut_slice();
            bincode::serialize_into(w, black_box(msg)).is_ok()
        });
        let dec = measure(cfg, || bincode::deserialize::<T>(black_box(input.as_slice())).unwrap());
        (vec![(Metric::Encode, Cell::Ns(enc)), (Metric::Decode, Cell::Ns(dec))], input)
    }
    let name = case.name();
    match case {
        Case::Image(m) => go(&name, m, cfg).0,
        Case::Laser(m) => go(&name, m, cfg).0,
        Case::Path(m) => go(&name, m, cfg).0,
        Case::Lidar(m) => {
            let (mut cells, input) = go(&name, m, cfg);
            let buf = input.as_slice();
            let d = |b: &[u8]| bincode::deserialize::<Lidar>(b).unwrap();
            let v = d(buf);
            if v.sum() != m.sum() || v.msg_info.guid != m.msg_info.guid || v.middle_y() != m.middle_y() {
                mismatch("bincode", &name, "projections differ");
            }
            cells.push((Metric::Full, Cell::Ns(measure(cfg, || d(black_box(buf)).sum()))));
            cells.push((Metric::Fixed, Cell::Ns(measure(cfg, || d(black_box(buf)).msg_info.guid))));
            cells.push((Metric::Var, Cell::Ns(measure(cfg, || d(black_box(buf)).middle_y()))));
            cells
        }
    }
}

/// flatbuffers 2.1 with code from `flatc --rust` (bench/fbs/marshalling.fbs). Encode builds from the normalized
/// form into a reused builder; decode is a verified `root` plus a copy into the normalized form; projections read
/// through the verified root without a copy.
#[cfg(has_flatbuffers)]
pub fn flatbuffers(case: &Case, cfg: &Config) -> Vec<(Metric, Cell)> {
    use self::fb::bench::fb as g;
    use flatbuffers::FlatBufferBuilder;

    fn build_lidar<'a>(b: &mut FlatBufferBuilder<'a>, m: &Lidar) {
        b.reset();
        b.start_vector::<g::LidarPoint>(m.points.len());
        for p in m.points.iter().rev() {
            b.push(g::LidarPoint::new(p.position[0], p.position[1], p.position[2], p.intensity));
        }
        let pts = b.end_vector(m.points.len());
        let info = g::MsgInfo::new(m.msg_info.kind, m.msg_info.timestamp, m.msg_info.guid);
        let root = g::Lidar::create(b, &g::LidarArgs { msg_info: Some(&info), points: Some(pts) });
        b.finish_minimal(root);
    }
    fn build_image<'a>(b: &mut FlatBufferBuilder<'a>, m: &data::Image) {
        b.reset();
        let d = b.create_vector(&m.data);
        let root = g::Image::create(
            b,
            &g::ImageArgs {
                utime: m.utime,
                width: m.width,
                height: m.height,
                pixelformat: m.pixelformat,
                data: Some(d),
            },
        );
        b.finish_minimal(root);
    }
    fn build_laser<'a>(b: &mut FlatBufferBuilder<'a>, m: &data::Laser) {
        b.reset();
        let r = b.create_vector(&m.ranges);
        let root =
            g::Laser::create(b, &g::LaserArgs { utime: m.utime, ranges: Some(r), rad0: m.rad0, radstep: m.radstep });
        b.finish_minimal(root);
    }
    fn build_path<'a>(b: &mut FlatBufferBuilder<'a>, m: &data::Path) {
        b.reset();
        let mut offs = Vec::with_capacity(m.waypoints.len());
        for w in &m.waypoints {
            let id = b.create_string(&w.id);
            let pos = g::Position2::new(w.position[0], w.position[1]);
            offs.push(g::Waypoint::create(b, &g::WaypointArgs { id: Some(id), position: Some(&pos) }));
        }
        let v = b.create_vector(&offs);
        let root = g::Path::create(b, &g::PathArgs { timestamp: m.timestamp, waypoints: Some(v) });
        b.finish_minimal(root);
    }
    fn read_lidar(buf: &[u8]) -> Lidar {
        let r = flatbuffers::root::<g::Lidar>(buf).expect("verified");
        let i = r.msg_info().expect("msg_info");
        let points = r
            .points()
            .map(|v| {
                v.iter()
                    .map(|p| data::LidarPoint { position: [p.x(), p.y(), p.z()], intensity: p.intensity() })
                    .collect()
            })
            .unwrap_or_default();
        Lidar { msg_info: data::MsgInfo { kind: i.kind(), timestamp: i.timestamp(), guid: i.guid() }, points }
    }
    fn read_image(buf: &[u8]) -> data::Image {
        let r = flatbuffers::root::<g::Image>(buf).expect("verified");
        data::Image {
            utime: r.utime(),
            width: r.width(),
            height: r.height(),
            pixelformat: r.pixelformat(),
            data: r.data().map(|d| d.to_vec()).unwrap_or_default(),
        }
    }
    fn read_laser(buf: &[u8]) -> data::Laser {
        let r = flatbuffers::root::<g::Laser>(buf).expect("verified");
        data::Laser {
            utime: r.utime(),
            ranges: r.ranges().map(|v| v.iter().collect()).unwrap_or_default(),
            rad0: r.rad0(),
            radstep: r.radstep(),
        }
    }
    fn read_path(buf: &[u8]) -> data::Path {
        let r = flatbuffers::root::<g::Path>(buf).expect("verified");
        data::Path {
            timestamp: r.timestamp(),
            waypoints: r
                .waypoints()
                .map(|v| {
                    v.iter()
                        .map(|w| {
                            let p = w.position().expect("position");
                            data::Waypoint { id: w.id().unwrap_or("").to_string(), position: [p.x(), p.y()] }
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    fn go<'m, T: PartialEq>(
        name: &str,
        msg: &'m T,
        build: fn(&mut FlatBufferBuilder<'static>, &T),
        read: fn(&[u8]) -> T,
        cfg: &Config,
    ) -> (Vec<(Metric, Cell)>, AlignedBuf) {
        let mut b = FlatBufferBuilder::with_capacity(1 << 20);
        build(&mut b, msg);
        let input = AlignedBuf::from_bytes(b.finished_data(), INPUT_PHASE);
        if read(input.as_slice()) != *msg {
            mismatch("flatbuffers", name, "decode differs from the normalized form");
        }
        let enc = measure(cfg, || {
            build(&mut b, black_box(msg));
            b.finished_data().len()
        });
        let dec = measure(cfg, || read(black_box(input.as_slice())));
        (vec![(Metric::Encode, Cell::Ns(enc)), (Metric::Decode, Cell::Ns(dec))], input)
    }

    let name = case.name();
    match case {
        Case::Image(m) => go(&name, m, build_image, read_image, cfg).0,
        Case::Laser(m) => go(&name, m, build_laser, read_laser, cfg).0,
        Case::Path(m) => go(&name, m, build_path, read_path, cfg).0,
        Case::Lidar(m) => {
            let (mut cells, input) = go(&name, m, build_lidar, read_lidar, cfg);
            let buf = input.as_slice();
            let full = |b: &[u8]| {
                let r = flatbuffers::root::<g::Lidar>(b).expect("verified");
                let i = r.msg_info().expect("msg_info");
                let pts = r.points().expect("points");
                let mut s = i.kind() as f64 + i.timestamp() as f64 + i.guid() as f64 + pts.len() as f64;
                for p in pts.iter() {
                    s += data::sum_point([p.x(), p.y(), p.z()], p.intensity());
                }
                s
            };
            let fixed = |b: &[u8]| flatbuffers::root::<g::Lidar>(b).expect("verified").msg_info().expect("info").guid();
            let var = |b: &[u8]| {
                let pts = flatbuffers::root::<g::Lidar>(b).expect("verified").points().expect("points");
                pts[pts.len() / 2].y()
            };
            if full(buf) != m.sum() || fixed(buf) != m.msg_info.guid || var(buf) != m.middle_y() {
                mismatch("flatbuffers", &name, "projections differ");
            }
            cells.push((Metric::Full, Cell::Ns(measure(cfg, || full(black_box(buf))))));
            cells.push((Metric::Fixed, Cell::Ns(measure(cfg, || fixed(black_box(buf))))));
            cells.push((Metric::Var, Cell::Ns(measure(cfg, || var(black_box(buf))))));
            cells
        }
    }
}

/// flatc's output.
#[cfg(has_flatbuffers)]
#[allow(clippy::all, missing_docs, unused_imports, dead_code, non_camel_case_types, unsafe_code)]
#[allow(clippy::undocumented_unsafe_blocks)]
mod fb {
    include!(concat!(env!("OUT_DIR"), "/fbs/marshalling_generated.rs"));
}
