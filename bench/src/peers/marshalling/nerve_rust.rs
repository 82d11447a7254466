//! Nerve's generated Rust (nerve_gen::rust::generate at build time): structs for encode and decode, views for the
//! three projections.

use std::hint::black_box;

use nerve_codec::Message;

use super::{mismatch, Cell, Metric};
use crate::data::{self, Case};
use crate::harness::timing::{measure, AlignedBuf, Config, INPUT_PHASE, OUTPUT_PHASE};

/// The generated code.
#[allow(missing_docs, dead_code, clippy::all)]
pub mod gen {
    include!(concat!(env!("OUT_DIR"), "/nerve_rust_include.rs"));
}

use gen::lidar::{LidarPointT, LidarT, LidarTView, MsgInfoT};
use gen::seed::{ImageT, LaserT, PathT, WaypointT};

const SYS: &str = "nerve-rust";
const SYS_REUSE: &str = "nerve-rust (reuse)";

fn to_lidar(m: &data::Lidar) -> LidarT {
    LidarT {
        msg_info: MsgInfoT { kind: m.msg_info.kind, timestamp: m.msg_info.timestamp, guid: m.msg_info.guid },
        npoints: m.points.len() as i32,
        points: m.points.iter().map(|p| LidarPointT { position: p.position, intensity: p.intensity }).collect(),
    }
}

fn to_image(m: &data::Image) -> ImageT {
    ImageT {
        utime: m.utime,
        width: m.width,
        height: m.height,
        pixelformat: m.pixelformat,
        size: m.data.len() as i32,
        data: m.data.clone(),
    }
}

fn to_laser(m: &data::Laser) -> LaserT {
    LaserT {
        utime: m.utime,
        nranges: m.ranges.len() as i32,
        ranges: m.ranges.clone(),
        rad0: m.rad0,
        radstep: m.radstep,
    }
}

fn to_path(m: &data::Path) -> PathT {
    PathT {
        timestamp: m.timestamp,
        num_waypoints: m.waypoints.len() as i32,
        waypoints: m.waypoints.iter().map(|w| WaypointT { id: w.id.as_str().into(), position: w.position }).collect(),
    }
}

/// Encode and decode through the generated struct `T`; verified against the reference bytes first.
fn encode_decode<T: Message + PartialEq + std::fmt::Debug>(
    name: &str,
    msg: &T,
    reference: &[u8],
    cfg: &Config,
) -> Vec<(Metric, Cell)> {
    let input = AlignedBuf::from_bytes(reference, INPUT_PHASE);
    let mut out = AlignedBuf::new(reference.len() + 64, OUTPUT_PHASE);
    match msg.encode_into(out.as_mut_slice()) {
        Ok(n) if out.as_slice()[..n] == *reference => {}
        Ok(n) => mismatch(SYS, name, &format!("encode wrote {n} bytes that differ from the reference LCM encoding")),
        Err(e) => mismatch(SYS, name, &format!("encode failed: {e}")),
    }
    match T::decode(input.as_slice()) {
        Ok(back) if back == *msg => {}
        Ok(_) => mismatch(SYS, name, "decode of the reference bytes differs from the message"),
        Err(e) => mismatch(SYS, name, &format!("decode failed: {e}")),
    }
    let enc = measure(cfg, || black_box(msg).encode_into(out.as_mut_slice()).is_ok());
    // black_box on the decoded value: without it the optimiser may see a value that is built and dropped unread and
    // remove the allocation and the copy (it did for image_t once the reader inlined fully).
    let dec = measure(cfg, || black_box(T::decode(black_box(input.as_slice()))).is_ok());
    vec![(Metric::Encode, Cell::Ns(enc)), (Metric::Decode, Cell::Ns(dec))]
}

/// The allocation-free decode: `decode_into` a value that already holds a decoded message (steady state of a
/// receive loop), so its strings and vectors are reused. Verified against the message first (from an empty value,
/// and again over the held one).
fn decode_reuse<T: Message + PartialEq + std::fmt::Debug + Default>(
    name: &str,
    msg: &T,
    reference: &[u8],
    cfg: &Config,
) -> Vec<(Metric, Cell)> {
    let input = AlignedBuf::from_bytes(reference, INPUT_PHASE);
    let mut held = T::default();
    for _ in 0..2 {
        match held.decode_into(input.as_slice()) {
            Ok(()) if held == *msg => {}
            Ok(()) => mismatch(SYS_REUSE, name, "decode_into of the reference bytes differs from the message"),
            Err(e) => mismatch(SYS_REUSE, name, &format!("decode_into failed: {e}")),
        }
    }
    let dec = measure(cfg, || black_box(&mut held).decode_into(black_box(input.as_slice())).is_ok());
    vec![(Metric::Decode, Cell::Ns(dec))]
}

/// The `nerve-rust (reuse)` row: `Message::decode_into` only.
pub fn run_reuse(case: &Case, cfg: &Config) -> Vec<(Metric, Cell)> {
    let reference = case.lcm_bytes();
    let name = case.name();
    match case {
        Case::Image(m) => decode_reuse(&name, &to_image(m), &reference, cfg),
        Case::Laser(m) => decode_reuse(&name, &to_laser(m), &reference, cfg),
        Case::Path(m) => decode_reuse(&name, &to_path(m), &reference, cfg),
        Case::Lidar(m) => decode_reuse(&name, &to_lidar(m), &reference, cfg),
    }
}

/// Full projection through the view: every numeric value, summed in the reference order.
fn view_sum(buf: &[u8]) -> Result<f64, nerve_codec::DecodeError> {
    let v = LidarTView::new(buf)?;
    let i = v.msg_info()?;
    let pts = v.points()?;
    let mut s = i.kind()? as f64 + i.timestamp()? as f64 + i.guid()? as f64 + pts.len() as f64;
    for p in pts.iter() {
        let p = p?;
        let pos = p.position()?;
        s += data::sum_point([pos.get(0)?, pos.get(1)?, pos.get(2)?], p.intensity()?);
    }
    Ok(s)
}

fn view_guid(buf: &[u8]) -> Result<i64, nerve_codec::DecodeError> {
    LidarTView::new(buf)?.msg_info()?.guid()
}

fn view_middle_y(buf: &[u8]) -> Result<f32, nerve_codec::DecodeError> {
    let pts = LidarTView::new(buf)?.points()?;
    pts.get(pts.len() / 2)?.position()?.get(1)
}

/// Every metric of `case`.
pub fn run(case: &Case, cfg: &Config) -> Vec<(Metric, Cell)> {
    let reference = case.lcm_bytes();
    let name = case.name();
    match case {
        Case::Image(m) => encode_decode(&name, &to_image(m), &reference, cfg),
        Case::Laser(m) => encode_decode(&name, &to_laser(m), &reference, cfg),
        Case::Path(m) => encode_decode(&name, &to_path(m), &reference, cfg),
        Case::Lidar(m) => {
            let mut cells = encode_decode(&name, &to_lidar(m), &reference, cfg);
            let input = AlignedBuf::from_bytes(&reference, INPUT_PHASE);
            let buf = input.as_slice();
            let (s, g, y) = (view_sum(buf), view_guid(buf), view_middle_y(buf));
            if s.as_ref().ok() != Some(&m.sum())
                || g.as_ref().ok() != Some(&m.msg_info.guid)
                || y.as_ref().ok().map(|y| y.to_bits()) != Some(m.middle_y().to_bits())
            {
                mismatch(SYS, &name, &format!("views gave sum {s:?}, guid {g:?}, middle y {y:?}"));
            }
            cells.push((Metric::Full, Cell::Ns(measure(cfg, || view_sum(black_box(buf)).ok()))));
            cells.push((Metric::Fixed, Cell::Ns(measure(cfg, || view_guid(black_box(buf)).ok()))));
            cells.push((Metric::Var, Cell::Ns(measure(cfg, || view_middle_y(black_box(buf)).ok()))));
            cells
        }
    }
}
