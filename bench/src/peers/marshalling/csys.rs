//! C systems that follow LCM's C API: `lcm-c` (the real lcm-gen 1.5.3) and `nerve-c` (Nerve's C generator), each
//! compiled by build.rs with `csrc/lcm_api_glue.c` at -O3. The glue exports `<sys>_<type>_<op>` functions.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void, CString};

use super::{mismatch, Cell, Metric};
use crate::data::{Case, Lidar};
use crate::harness::timing::{measure, AlignedBuf, Config, INPUT_PHASE, OUTPUT_PHASE};

/// The glue's functions for one system.
#[allow(missing_docs)]
pub struct CApi {
    pub lidar_new: unsafe extern "C" fn(i64, i64, i64, i32, *const f32, *const u8) -> *mut c_void,
    pub lidar_free: unsafe extern "C" fn(*mut c_void),
    pub lidar_encode: unsafe extern "C" fn(*const c_void, *mut u8, c_int) -> c_int,
    pub lidar_decode: unsafe extern "C" fn(*const u8, c_int) -> c_int,
    pub lidar_reencode: unsafe extern "C" fn(*const u8, c_int, *mut u8, c_int) -> c_int,
    pub lidar_full: unsafe extern "C" fn(*const u8, c_int, *mut f64) -> c_int,
    pub lidar_fixed: unsafe extern "C" fn(*const u8, c_int, *mut i64) -> c_int,
    pub lidar_var: unsafe extern "C" fn(*const u8, c_int, *mut f32) -> c_int,
    pub image_new: unsafe extern "C" fn(i64, i32, i32, i32, i32, *const u8) -> *mut c_void,
    pub image_free: unsafe extern "C" fn(*mut c_void),
    pub image_encode: unsafe extern "C" fn(*const c_void, *mut u8, c_int) -> c_int,
    pub image_decode: unsafe extern "C" fn(*const u8, c_int) -> c_int,
    pub image_reencode: unsafe extern "C" fn(*const u8, c_int, *mut u8, c_int) -> c_int,
    pub laser_new: unsafe extern "C" fn(i64, i32, *const f32, f32, f32) -> *mut c_void,
    pub laser_free: unsafe extern "C" fn(*mut c_void),
    pub laser_encode: unsafe extern "C" fn(*const c_void, *mut u8, c_int) -> c_int,
    pub laser_decode: unsafe extern "C" fn(*const u8, c_int) -> c_int,
    pub laser_reencode: unsafe extern "C" fn(*const u8, c_int, *mut u8, c_int) -> c_int,
    pub path_new: unsafe extern "C" fn(i64, i32, *const *const std::ffi::c_char, *const f32) -> *mut c_void,
    pub path_free: unsafe extern "C" fn(*mut c_void),
    pub path_encode: unsafe extern "C" fn(*const c_void, *mut u8, c_int) -> c_int,
    pub path_decode: unsafe extern "C" fn(*const u8, c_int) -> c_int,
    pub path_reencode: unsafe extern "C" fn(*const u8, c_int, *mut u8, c_int) -> c_int,
    /// `(decode_arena, reencode_arena)` per type: the allocation-free decode (nerve-c only; lcm-c's return
    /// [`UNSUPPORTED`]).
    pub arena: [(DecodeFn, ReencodeFn); 4],
}

type DecodeFn = unsafe extern "C" fn(*const u8, c_int) -> c_int;
type ReencodeFn = unsafe extern "C" fn(*const u8, c_int, *mut u8, c_int) -> c_int;

/// What the glue's arena functions return for a system without them (lcm-c).
pub const UNSUPPORTED: c_int = -1000;

macro_rules! c_api {
    ($modname:ident, $prefix:literal) => {
        /// Declarations of one system's glue functions.
        pub mod $modname {
            use std::ffi::{c_char, c_int, c_void};
            extern "C" {
                #[link_name = concat!($prefix, "_lidar_new")]
                fn lidar_new(k: i64, t: i64, g: i64, n: i32, pos: *const f32, inten: *const u8) -> *mut c_void;
                #[link_name = concat!($prefix, "_lidar_free")]
                fn lidar_free(m: *mut c_void);
                #[link_name = concat!($prefix, "_lidar_encode")]
                fn lidar_encode(m: *const c_void, buf: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_lidar_decode")]
                fn lidar_decode(buf: *const u8, len: c_int) -> c_int;
                #[link_name = concat!($prefix, "_lidar_reencode")]
                fn lidar_reencode(buf: *const u8, len: c_int, out: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_lidar_full")]
                fn lidar_full(buf: *const u8, len: c_int, sum: *mut f64) -> c_int;
                #[link_name = concat!($prefix, "_lidar_fixed")]
                fn lidar_fixed(buf: *const u8, len: c_int, guid: *mut i64) -> c_int;
                #[link_name = concat!($prefix, "_lidar_var")]
                fn lidar_var(buf: *const u8, len: c_int, y: *mut f32) -> c_int;
                #[link_name = concat!($prefix, "_image_new")]
                fn image_new(u: i64, w: i32, h: i32, pf: i32, size: i32, data: *const u8) -> *mut c_void;
                #[link_name = concat!($prefix, "_image_free")]
                fn image_free(m: *mut c_void);
                #[link_name = concat!($prefix, "_image_encode")]
                fn image_encode(m: *const c_void, buf: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_image_decode")]
                fn image_decode(buf: *const u8, len: c_int) -> c_int;
                #[link_name = concat!($prefix, "_image_reencode")]
                fn image_reencode(buf: *const u8, len: c_int, out: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_laser_new")]
                fn laser_new(u: i64, n: i32, ranges: *const f32, rad0: f32, radstep: f32) -> *mut c_void;
                #[link_name = concat!($prefix, "_laser_free")]
                fn laser_free(m: *mut c_void);
                #[link_name = concat!($prefix, "_laser_encode")]
                fn laser_encode(m: *const c_void, buf: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_laser_decode")]
                fn laser_decode(buf: *const u8, len: c_int) -> c_int;
                #[link_name = concat!($prefix, "_laser_reencode")]
                fn laser_reencode(buf: *const u8, len: c_int, out: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_path_new")]
                fn path_new(t: i64, n: i32, ids: *const *const c_char, pos: *const f32) -> *mut c_void;
                #[link_name = concat!($prefix, "_path_free")]
                fn path_free(m: *mut c_void);
                #[link_name = concat!($prefix, "_path_encode")]
                fn path_encode(m: *const c_void, buf: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_path_decode")]
                fn path_decode(buf: *const u8, len: c_int) -> c_int;
                #[link_name = concat!($prefix, "_path_reencode")]
                fn path_reencode(buf: *const u8, len: c_int, out: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_lidar_decode_arena")]
                fn lidar_decode_arena(buf: *const u8, len: c_int) -> c_int;
                #[link_name = concat!($prefix, "_lidar_reencode_arena")]
                fn lidar_reencode_arena(buf: *const u8, len: c_int, out: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_image_decode_arena")]
                fn image_decode_arena(buf: *const u8, len: c_int) -> c_int;
                #[link_name = concat!($prefix, "_image_reencode_arena")]
                fn image_reencode_arena(buf: *const u8, len: c_int, out: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_laser_decode_arena")]
                fn laser_decode_arena(buf: *const u8, len: c_int) -> c_int;
                #[link_name = concat!($prefix, "_laser_reencode_arena")]
                fn laser_reencode_arena(buf: *const u8, len: c_int, out: *mut u8, max: c_int) -> c_int;
                #[link_name = concat!($prefix, "_path_decode_arena")]
                fn path_decode_arena(buf: *const u8, len: c_int) -> c_int;
                #[link_name = concat!($prefix, "_path_reencode_arena")]
                fn path_reencode_arena(buf: *const u8, len: c_int, out: *mut u8, max: c_int) -> c_int;
            }
            /// The table of functions.
            pub fn api() -> super::CApi {
                super::CApi {
                    lidar_new,
                    lidar_free,
                    lidar_encode,
                    lidar_decode,
                    lidar_reencode,
                    lidar_full,
                    lidar_fixed,
                    lidar_var,
                    image_new,
                    image_free,
                    image_encode,
                    image_decode,
                    image_reencode,
                    laser_new,
                    laser_free,
                    laser_encode,
                    laser_decode,
                    laser_reencode,
                    path_new,
                    path_free,
                    path_encode,
                    path_decode,
                    path_reencode,
                    arena: [
                        (lidar_decode_arena, lidar_reencode_arena),
                        (image_decode_arena, image_reencode_arena),
                        (laser_decode_arena, laser_reencode_arena),
                        (path_decode_arena, path_reencode_arena),
                    ],
                }
            }
        }
    };
}

#[cfg(has_lcm_c)]
c_api!(lcmc, "lcmc");
#[cfg(has_nerve_c)]
c_api!(nervec, "nervec");

/// A message in the C system's in-memory form, freed on drop.
struct CMsg {
    ptr: *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
}

impl Drop for CMsg {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from the matching `_new` function and is freed once.
        unsafe { (self.free)(self.ptr) }
    }
}

/// Runs every metric of `case` for one C system. Verifies first: the encoding equals the reference bytes, a decode
/// re-encodes to them, and the projections give the expected values.
pub fn run(sys: &str, api: &CApi, case: &Case, cfg: &Config) -> Vec<(Metric, Cell)> {
    let reference = case.lcm_bytes();
    let len = reference.len() as c_int;
    let input = AlignedBuf::from_bytes(&reference, INPUT_PHASE);
    let mut out = AlignedBuf::new(reference.len() + 64, OUTPUT_PHASE);
    let max = out.as_slice().len() as c_int;
    let inp = input.as_slice().as_ptr();
    let name = case.name();

    // Build the in-memory form and pick the type's functions.
    let _keep_strings: Vec<CString>;
    let (msg, encode, decode, reencode) = match case {
        Case::Image(m) => {
            // SAFETY: the data pointer is valid for `len` bytes; the glue copies it.
            let p = unsafe {
                (api.image_new)(m.utime, m.width, m.height, m.pixelformat, m.data.len() as i32, m.data.as_ptr())
            };
            (CMsg { ptr: p, free: api.image_free }, api.image_encode, api.image_decode, api.image_reencode)
        }
        Case::Laser(m) => {
            // SAFETY: the ranges pointer is valid for n floats; the glue copies them.
            let p = unsafe { (api.laser_new)(m.utime, m.ranges.len() as i32, m.ranges.as_ptr(), m.rad0, m.radstep) };
            (CMsg { ptr: p, free: api.laser_free }, api.laser_encode, api.laser_decode, api.laser_reencode)
        }
        Case::Path(m) => {
            _keep_strings = m.waypoints.iter().map(|w| CString::new(w.id.clone()).unwrap()).collect();
            let ids: Vec<*const std::ffi::c_char> = _keep_strings.iter().map(|s| s.as_ptr()).collect();
            let pos: Vec<f32> = m.waypoints.iter().flat_map(|w| w.position).collect();
            // SAFETY: n valid C strings and 2n floats; the glue copies them.
            let p = unsafe { (api.path_new)(m.timestamp, ids.len() as i32, ids.as_ptr(), pos.as_ptr()) };
            (CMsg { ptr: p, free: api.path_free }, api.path_encode, api.path_decode, api.path_reencode)
        }
        Case::Lidar(m) => {
            let pos: Vec<f32> = m.points.iter().flat_map(|p| p.position).collect();
            let inten: Vec<u8> = m.points.iter().map(|p| p.intensity).collect();
            let i = &m.msg_info;
            // SAFETY: 3n floats and n bytes; the glue copies them.
            let p = unsafe {
                (api.lidar_new)(i.kind, i.timestamp, i.guid, m.points.len() as i32, pos.as_ptr(), inten.as_ptr())
            };
            (CMsg { ptr: p, free: api.lidar_free }, api.lidar_encode, api.lidar_decode, api.lidar_reencode)
        }
    };

    // Verify.
    let outp = out.as_mut_slice().as_mut_ptr();
    // SAFETY: `msg` is a live message of the matching type; `out` holds `max` bytes.
    let n = unsafe { encode(msg.ptr, outp, max) };
    if n != len || out.as_slice()[..reference.len()] != reference[..] {
        mismatch(
            sys,
            &name,
            &format!("encode wrote {n} bytes that differ from the reference LCM encoding ({len} bytes)"),
        );
    }
    let mut back = vec![0u8; reference.len() + 64];
    // SAFETY: `inp` holds `len` bytes, `back` holds its length.
    let n = unsafe { reencode(inp, len, back.as_mut_ptr(), back.len() as c_int) };
    if n != len || back[..reference.len()] != reference[..] {
        mismatch(sys, &name, "decode then encode does not give the reference bytes back");
    }
    // SAFETY: as above.
    if unsafe { decode(inp, len) } != len {
        mismatch(sys, &name, "decode failed");
    }

    let mut cells = Vec::new();
    let enc = measure(cfg, || {
        // SAFETY: the same live message and buffer as in the verification above.
        unsafe { encode(msg.ptr, outp, max) }
    });
    let dec = measure(cfg, || {
        // SAFETY: `inp` holds `len` bytes, as in the verification above.
        unsafe { decode(inp, len) }
    });
    cells.push((Metric::Encode, Cell::Ns(enc)));
    cells.push((Metric::Decode, Cell::Ns(dec)));

    if let Case::Lidar(m) = case {
        lidar_projections(sys, api, m, inp, len, cfg, &name, &mut cells);
    }
    cells
}

/// The allocation-free decode (`pkg_T_decode_arena` into an arena reset before each call; nothing freed), verified
/// like the normal decode: decoding the reference bytes and encoding the result gives them back. Only `decode` is
/// measured; the other metrics are the normal API's (see the system's own row).
pub fn run_arena(sys: &str, api: &CApi, case: &Case, cfg: &Config) -> Result<Vec<(Metric, Cell)>, String> {
    let reference = case.lcm_bytes();
    let len = reference.len() as c_int;
    let input = AlignedBuf::from_bytes(&reference, INPUT_PHASE);
    let inp = input.as_slice().as_ptr();
    let name = case.name();
    let (decode, reencode) = match case {
        Case::Lidar(_) => api.arena[0],
        Case::Image(_) => api.arena[1],
        Case::Laser(_) => api.arena[2],
        Case::Path(_) => api.arena[3],
    };
    let mut back = vec![0u8; reference.len() + 64];
    // SAFETY: `inp` holds `len` bytes, `back` holds its length.
    let n = unsafe { reencode(inp, len, back.as_mut_ptr(), back.len() as c_int) };
    if n == UNSUPPORTED {
        return Err("unavailable: no allocation-free decode in this API".into());
    }
    if n != len || back[..reference.len()] != reference[..] {
        mismatch(sys, &name, "arena decode then encode does not give the reference bytes back");
    }
    // SAFETY: as above.
    if unsafe { decode(inp, len) } != len {
        mismatch(sys, &name, "arena decode failed");
    }
    let dec = measure(cfg, || {
        // SAFETY: `inp` holds `len` bytes, as in the verification above.
        unsafe { decode(inp, len) }
    });
    Ok(vec![(Metric::Decode, Cell::Ns(dec))])
}

#[allow(clippy::too_many_arguments)]
fn lidar_projections(
    sys: &str,
    api: &CApi,
    m: &Lidar,
    inp: *const u8,
    len: c_int,
    cfg: &Config,
    name: &str,
    cells: &mut Vec<(Metric, Cell)>,
) {
    let (mut s, mut g, mut y) = (0f64, 0i64, 0f32);
    // SAFETY: `inp` holds `len` bytes; the out-pointers are valid locals.
    let ok = unsafe {
        (api.lidar_full)(inp, len, &mut s) == 0
            && (api.lidar_fixed)(inp, len, &mut g) == 0
            && (api.lidar_var)(inp, len, &mut y) == 0
    };
    if !ok || s != m.sum() || g != m.msg_info.guid || y.to_bits() != m.middle_y().to_bits() {
        mismatch(sys, name, &format!("projections gave sum {s}, guid {g}, middle y {y}"));
    }
    cells.push((
        Metric::Full,
        Cell::Ns(measure(cfg, || {
            let mut s = 0f64;
            // SAFETY: `inp` holds `len` bytes; the out-pointer is a valid local.
            unsafe { (api.lidar_full)(inp, len, &mut s) };
            s
        })),
    ));
    cells.push((
        Metric::Fixed,
        Cell::Ns(measure(cfg, || {
            let mut g = 0i64;
            // SAFETY: `inp` holds `len` bytes; the out-pointer is a valid local.
            unsafe { (api.lidar_fixed)(inp, len, &mut g) };
            g
        })),
    ));
    cells.push((
        Metric::Var,
        Cell::Ns(measure(cfg, || {
            let mut y = 0f32;
            // SAFETY: `inp` holds `len` bytes; the out-pointer is a valid local.
            unsafe { (api.lidar_var)(inp, len, &mut y) };
            y
        })),
    ));
}
