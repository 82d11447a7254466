//! The C structs of ach.h as Rust sees them (`ach_channel_t`, `ach_create_attr_t`, `ach_attr_t`,
//! `ach_cancel_attr_t`), field for field at Ach's offsets (x86-64 and other LP64 Linux), checked at compile time here
//! and by `_Static_assert`s in the C tests.

use std::ffi::{c_int, c_uint, c_void};
use std::mem::{offset_of, size_of};

/// `ach_channel_t`: Ach's handle layout, 128 bytes.
#[repr(C)]
pub struct AchChannelT {
    /// `struct ach_header *shm`: this library's channel object (a `Pool` handle, a slot
    /// number and a generation, mixed with a per-process key: `handle_key` in lib.rs; not a pointer).
    pub shm: *mut c_void,
    /// `size_t len`: the channel file's length.
    pub len: usize,
    /// `int fd`.
    pub fd: c_int,
    _pad0: u32,
    /// `uint64_t seq_num` (in a union with the 24-byte `achk_opt_t k_opts`).
    pub seq_num: u64,
    _k_opts_rest: [u64; 2],
    /// `size_t next_index`.
    pub next_index: usize,
    /// `enum ach_map map`.
    pub map: c_int,
    /// `clockid_t clock`.
    pub clock: libc::clockid_t,
    /// `volatile sig_atomic_t cancel`.
    pub cancel: c_int,
    _pad1: u32,
    /// `const struct ach_channel_vtab *vtab`: [`crate::OPEN_MARK`] while open (set for programs that look; the
    /// library itself goes by `shm`).
    pub vtab: *const c_void,
    _reserved: [u64; 6],
}

const _: () = {
    assert!(size_of::<AchChannelT>() == 128);
    assert!(offset_of!(AchChannelT, len) == 8);
    assert!(offset_of!(AchChannelT, fd) == 16);
    assert!(offset_of!(AchChannelT, seq_num) == 24);
    assert!(offset_of!(AchChannelT, next_index) == 48);
    assert!(offset_of!(AchChannelT, map) == 56);
    assert!(offset_of!(AchChannelT, clock) == 60);
    assert!(offset_of!(AchChannelT, cancel) == 64);
    assert!(offset_of!(AchChannelT, vtab) == 72);
};

/// `ach_create_attr_t`: 128 bytes; `truncate` and `set_clock` are bits 0 and 1 of the bit-field word at 20.
#[repr(C)]
pub struct AchCreateAttrT {
    /// `enum ach_map map` (union with `int map_anon`).
    pub map: c_int,
    _pad0: u32,
    /// `struct ach_header *shm`.
    pub shm: *mut c_void,
    /// `clockid_t clock`.
    pub clock: libc::clockid_t,
    /// `unsigned int truncate : 1; unsigned int set_clock : 1;`
    pub flags: c_uint,
    _reserved: [u64; 13],
}

/// Bit of [`AchCreateAttrT::flags`]: `truncate`.
pub const TRUNCATE_BIT: c_uint = 1;
/// Bit of [`AchCreateAttrT::flags`]: `set_clock`.
pub const SET_CLOCK_BIT: c_uint = 2;

const _: () = {
    assert!(size_of::<AchCreateAttrT>() == 128);
    assert!(offset_of!(AchCreateAttrT, shm) == 8);
    assert!(offset_of!(AchCreateAttrT, clock) == 16);
    assert!(offset_of!(AchCreateAttrT, flags) == 20);
};

/// `ach_attr_t`: 64 bytes.
#[repr(C)]
pub struct AchAttrT {
    /// `enum ach_map map`.
    pub map: c_int,
    _pad0: u32,
    /// `struct ach_header *shm`.
    pub shm: *mut c_void,
    _reserved: [u64; 6],
}

const _: () = assert!(size_of::<AchAttrT>() == 64 && offset_of!(AchAttrT, shm) == 8);

/// `ach_cancel_attr_t`: 64 bytes.
#[repr(C)]
pub struct AchCancelAttrT {
    /// `int async_unsafe`.
    pub async_unsafe: c_int,
    _pad0: u32,
    _reserved: [i64; 7],
}

const _: () = assert!(size_of::<AchCancelAttrT>() == 64);
