//! libach: Ach 2.x's C API (`include/ach.h`) over nerve-shm channels, so a program written for Ach moves to Nerve by
//! relinking.
//!
//! # Brief overview
//!
//! `ach_create` makes a nerve-shm channel (frames and frame size as Ach takes them), `ach_open` fills an
//! `ach_channel_t` ([`layout::AchChannelT`], Ach's layout) whose `shm` field holds the handle of an [`AchChannel`]
//! kept in [`CHANNELS`]: the channel name and a [`ShmHandle`] (this handle's reader, a writer made on the first put).
//! `ach_get` maps Ach's options onto `ReadMode` / `Wait` and the outcome onto Ach's status codes ([`status`]).
//!
//! # Design
//!
//! A channel made here is a Nerve channel, file `nerve-NAME` in the channel directory, so `nerve chan` and the bus's
//! `shm://` provider (whose channel `NAME` is that same file, and whose messages are the frames' bytes as they are)
//! see it. Ach's semantics are kept where its documentation states them: a new handle reads from the oldest frame the
//! channel still has, `ACH_MISSED_FRAME` when frames were skipped (in order: dropped before this handle read them;
//! with `ACH_O_LAST`: passed over), `ACH_OVERFLOW` with the needed size and nothing consumed, `ACH_O_COPY` re-reads
//! the newest, `ach_cancel` is sticky until the handle's `cancel` field is cleared and safe in a signal handler (it
//! sets that field and wakes the channel's sleepers: `Channel::wake_readers`; waits ask the field after every
//! wake-up: `Reader::get_interruptible`). What Ach does and Nerve cannot, or does better, is in ach.h's header
//! comment and the README.
//!
//! Every entry point runs inside [`guard`]: a panic becomes `ACH_BUG` with a message in `ach_errstr()`. Handles are
//! checked against [`CHANNELS`] before use, so NULL, closed and garbage handles are `ACH_EINVAL`. It is a
//! [`Pool`], not a registry, because a 1 kHz loop's `ach_put` after a sleep pays for every cold cache line it touches:
//! the pool checks a handle on the channel's own slot (see `nerve_c_common::Pool`).

#![allow(unsafe_code)] // The C ABI: every function takes raw pointers from C; each block says why it is sound.
#![deny(missing_docs)]

pub mod layout;
pub mod status;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::os::fd::AsRawFd;
use std::ptr::{self, addr_of, addr_of_mut};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use layout::{AchAttrT, AchCancelAttrT, AchChannelT, AchCreateAttrT, SET_CLOCK_BIT, TRUNCATE_BIT};
use nerve_c_common::{guard, last_error, set_last_error, str_arg, Got, Pool, ShmHandle};
use nerve_shm::{Channel, ChannelConfig, ReadMode, ShmError, Wait};
use status::*;

/// `ACH_O_WAIT`.
pub const ACH_O_WAIT: c_int = 0x01;
/// `ACH_O_LAST`.
pub const ACH_O_LAST: c_int = 0x02;
/// `ACH_O_COPY`.
pub const ACH_O_COPY: c_int = 0x04;
/// `ACH_O_RELTIME`.
pub const ACH_O_RELTIME: c_int = 0x08;
/// `ACH_MAP_DEFAULT`.
pub const ACH_MAP_DEFAULT: c_int = 0;
/// `ACH_MAP_ANON`.
pub const ACH_MAP_ANON: c_int = 1;
/// `ACH_MAP_USER`.
pub const ACH_MAP_USER: c_int = 2;
/// `ACH_MAP_KERNEL`.
pub const ACH_MAP_KERNEL: c_int = 3;
/// `ACH_DEFAULT_FRAME_COUNT`.
pub const ACH_DEFAULT_FRAME_COUNT: usize = 16;
/// `ACH_DEFAULT_FRAME_SIZE`.
pub const ACH_DEFAULT_FRAME_SIZE: usize = 512;
/// `ACH_CHAN_NAME_MAX`: a name is shorter than this.
pub const ACH_CHAN_NAME_MAX: usize = 64;
/// `ACH_DEFAULT_CLOCK`, the one clock of timeouts.
pub const ACH_DEFAULT_CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// What `ach_channel_t.vtab` points to while a handle is open (Ach's method table; here only a mark).
static OPEN_MARK: u8 = 0;

/// An open handle's channel, as `ach_channel_t.shm` names it. `repr(C)`, handle first: what a put touches
/// shares the pool slot's first cache line (see `ShmHandle`).
#[repr(C)]
pub struct AchChannel {
    handle: ShmHandle,
    name: String,
}

/// How many handles a process may have open at once (each holds a descriptor too, and the default limit of those is
/// 1024).
pub const MAX_OPEN_HANDLES: usize = 4096;

/// Every open handle's [`AchChannel`].
pub static CHANNELS: Pool<AchChannel, MAX_OPEN_HANDLES> = Pool::new();

fn open_mark() -> *const c_void {
    addr_of!(OPEN_MARK).cast()
}

/// `ach_channel_t.shm` holds a [`CHANNELS`] handle mixed with this key, rather than the handle itself, so that a call
/// can trust the field alone: a handle is a slot number (low 32 bits) and a generation (high), both small, and the
/// key is [`OPEN_MARK`]'s address with its halves swapped (random under ASLR; its low half, the address's high half,
/// is 0 or far above the pool's slot count in Linux's usual layouts). A zeroed handle then names no slot, and a
/// stale or garbage one only by a one-in-2^32 chance of generation. The `vtab` mark is still set for programs
/// that look at it, but not read: it is 72 bytes on, in the handle's next cache line, and a control loop's call after
/// a sleep pays for every cold line it reads.
fn handle_key() -> usize {
    (open_mark() as usize).rotate_left(32)
}

/// The `shm` field of a handle open on [`CHANNELS`] handle `handle`.
fn shm_field(handle: usize) -> *mut c_void {
    (handle ^ handle_key()) as *mut c_void
}

/// The [`CHANNELS`] handle an `shm` field names (garbage names nothing open; see [`handle_key`]).
fn pool_handle(shm: *const c_void) -> usize {
    shm as usize ^ handle_key()
}

/// Records `message` for `ach_errstr()` and returns `status`.
fn fail(status: c_int, message: impl Into<String>) -> c_int {
    set_last_error(message);
    status
}

fn fail_shm(e: &ShmError) -> c_int {
    fail(status_of(e), e.to_string())
}

/// Ach's channel-name rule: 1 to 63 bytes of `[A-Za-z0-9._-]`, not starting with `.`.
fn check_name(name: *const c_char) -> Result<String, c_int> {
    // SAFETY: ach.h's contract: a name argument is NULL or a NUL-terminated string.
    let name = match unsafe { str_arg(name) } {
        Ok(n) => n,
        Err(_) => return Err(fail(ACH_INVALID_NAME, "the channel name is NULL or not UTF-8")),
    };
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.len() >= ACH_CHAN_NAME_MAX || name.starts_with('.') || !name.chars().all(ok_char) {
        return Err(fail(
            ACH_INVALID_NAME,
            format!("channel name {name:?}: Ach names are 1 to 63 of [A-Za-z0-9._-], not starting with '.'"),
        ));
    }
    Ok(name.to_owned())
}

/// Runs `f` on the open channel behind a handle, or fails with `ACH_EINVAL` for NULL, a misaligned pointer, or a
/// handle that is not open.
fn with_channel(chan: *const AchChannelT, f: impl FnOnce(&AchChannel) -> c_int) -> c_int {
    match checked_shm(chan) {
        Ok(handle) => CHANNELS.with(handle, f).unwrap_or_else(|| fail(ACH_EINVAL, CLOSED)),
        Err(s) => s,
    }
}

const CLOSED: &str = "the channel handle is not open (never opened, closed, or garbage)";

/// The [`CHANNELS`] handle the `ach_channel_t`'s `shm` field names (whether it is open is for the pool to say).
fn checked_shm(chan: *const AchChannelT) -> Result<usize, c_int> {
    if chan.is_null() || !chan.is_aligned() {
        return Err(fail(ACH_EINVAL, "the channel handle is NULL or misaligned"));
    }
    // SAFETY: not NULL and aligned; ach.h's contract is that it points to an ach_channel_t. A plain field is read.
    Ok(pool_handle(unsafe { (*chan).shm }))
}

/// The handle's `cancel` field as an atomic (C writes it from signal handlers and other threads).
///
/// # Safety
///
/// `chan` points to a live `ach_channel_t`.
unsafe fn cancel_flag<'a>(chan: *mut AchChannelT) -> &'a AtomicI32 {
    // SAFETY: the field is an aligned, live `int` (sig_atomic_t) for as long as the handle; C only ever stores whole
    // values to it.
    unsafe { AtomicI32::from_ptr(addr_of_mut!((*chan).cancel)) }
}

/// `ach_create`.
///
/// # Safety
///
/// `channel_name` is NULL or a NUL-terminated string; `attr` is NULL or points to an `ach_create_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_create(
    channel_name: *const c_char,
    frame_cnt: usize,
    frame_size: usize,
    attr: *mut AchCreateAttrT,
) -> c_int {
    guard(ACH_BUG, || {
        let name = match check_name(channel_name) {
            Ok(n) => n,
            Err(s) => return s,
        };
        let (map, truncate, clock) = if attr.is_null() {
            (ACH_MAP_DEFAULT, false, None)
        } else if !attr.is_aligned() {
            return fail(ACH_EINVAL, "attr is misaligned");
        } else {
            // SAFETY: not NULL, aligned, an ach_create_attr_t by contract; plain fields read.
            let (map, flags, clock) = unsafe { ((*attr).map, (*attr).flags, (*attr).clock) };
            (map, flags & TRUNCATE_BIT != 0, (flags & SET_CLOCK_BIT != 0).then_some(clock))
        };
        if let Err(s) = check_map(map) {
            return s;
        }
        if clock.is_some_and(|c| c != ACH_DEFAULT_CLOCK) {
            return fail(ACH_ENOTSUP, "timeouts are on ACH_DEFAULT_CLOCK (CLOCK_MONOTONIC) only");
        }
        let frames = if frame_cnt == 0 { ACH_DEFAULT_FRAME_COUNT } else { frame_cnt }.max(2);
        let size = if frame_size == 0 { ACH_DEFAULT_FRAME_SIZE } else { frame_size };
        if truncate {
            match Channel::remove(&name, None) {
                Ok(()) | Err(ShmError::NotFound { .. }) => {}
                Err(e) => return fail_shm(&e),
            }
        }
        match Channel::create(&name, &ChannelConfig::new(frames as u64, size as u64)) {
            Ok(_) => ACH_OK,
            Err(e) => fail_shm(&e),
        }
    })
}

fn check_map(map: c_int) -> Result<(), c_int> {
    match map {
        ACH_MAP_DEFAULT | ACH_MAP_USER => Ok(()),
        ACH_MAP_ANON => Err(fail(ACH_ENOTSUP, "anonymous (heap) channels are not offered: use a named channel")),
        ACH_MAP_KERNEL => Err(fail(ACH_ENOTSUP, "Ach's kernel-module channels are not offered: use a named channel")),
        other => Err(fail(ACH_EINVAL, format!("map {other} is not an enum ach_map value"))),
    }
}

/// `ach_open`.
///
/// # Safety
///
/// `chan` is NULL or points to a writable `ach_channel_t`; `channel_name` is NULL or a NUL-terminated string; `attr`
/// is NULL or points to an `ach_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_open(chan: *mut AchChannelT, channel_name: *const c_char, attr: *mut AchAttrT) -> c_int {
    guard(ACH_BUG, || {
        if chan.is_null() || !chan.is_aligned() {
            return fail(ACH_EINVAL, "the channel handle is NULL or misaligned");
        }
        let name = match check_name(channel_name) {
            Ok(n) => n,
            Err(s) => return s,
        };
        if !attr.is_null() {
            if !attr.is_aligned() {
                return fail(ACH_EINVAL, "attr is misaligned");
            }
            // SAFETY: not NULL, aligned, an ach_attr_t by contract.
            if let Err(s) = check_map(unsafe { (*attr).map }) {
                return s;
            }
        }
        let channel = match Channel::open(&name, None) {
            Ok(c) => c,
            Err(e) => return fail_shm(&e),
        };
        let (fd, len) = (channel.as_raw_fd(), channel.stats().file_bytes as usize);
        // Ach: a new handle's seq_num is 0, so its first get returns the oldest frame still there, with
        // ACH_MISSED_FRAME if older ones were dropped.
        let handle = match CHANNELS.insert(AchChannel { name, handle: ShmHandle::new(channel, 0) }) {
            Ok(h) => h,
            Err(_) => {
                return fail(
                    ACH_FAILED_SYSCALL,
                    format!("{MAX_OPEN_HANDLES} handles are open in this process, the most it may have: close one"),
                )
            }
        };
        // SAFETY: chan is not NULL, aligned and writable by contract; all-zero bytes are a valid ach_channel_t.
        unsafe {
            ptr::write_bytes(chan, 0, 1);
            (*chan).shm = shm_field(handle);
            (*chan).len = len;
            (*chan).fd = fd;
            (*chan).map = ACH_MAP_USER;
            (*chan).clock = ACH_DEFAULT_CLOCK;
            (*chan).vtab = open_mark();
        }
        ACH_OK
    })
}

/// Converts `abstime` (absolute on ACH_DEFAULT_CLOCK, or relative with ACH_O_RELTIME) into the time left.
fn time_left(ts: &libc::timespec, relative: bool) -> Result<Duration, c_int> {
    if !(0..1_000_000_000).contains(&ts.tv_nsec) {
        return Err(fail(ACH_EINVAL, format!("timeout tv_nsec {} is not in 0..1e9", ts.tv_nsec)));
    }
    let as_duration = |t: &libc::timespec| {
        if t.tv_sec < 0 {
            Duration::ZERO
        } else {
            Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
        }
    };
    if relative {
        return Ok(as_duration(ts));
    }
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec to a valid, writable local.
    if unsafe { libc::clock_gettime(ACH_DEFAULT_CLOCK, &mut now) } != 0 {
        return Err(fail(ACH_FAILED_SYSCALL, "clock_gettime(CLOCK_MONOTONIC) failed"));
    }
    Ok(as_duration(ts).saturating_sub(as_duration(&now)))
}

/// `ach_get`.
///
/// # Safety
///
/// `chan` is NULL or points to an `ach_channel_t`; `buf` is NULL (with `size` 0) or points to `size` writable bytes;
/// `frame_size` is NULL or writable; `abstime` is NULL or points to a `timespec`.
#[no_mangle]
pub unsafe extern "C" fn ach_get(
    chan: *mut AchChannelT,
    buf: *mut c_void,
    size: usize,
    frame_size: *mut usize,
    abstime: *const libc::timespec,
    options: c_int,
) -> c_int {
    guard(ACH_BUG, || {
        with_channel(chan, |ch| {
            if options & !(ACH_O_WAIT | ACH_O_LAST | ACH_O_COPY | ACH_O_RELTIME) != 0 {
                return fail(ACH_EINVAL, format!("unknown ach_get option bits {options:#x}"));
            }
            if buf.is_null() && size != 0 {
                return fail(ACH_EINVAL, "buf is NULL but size is not 0");
            }
            if !frame_size.is_null() && !frame_size.is_aligned() {
                return fail(ACH_EINVAL, "frame_size is misaligned");
            }
            // SAFETY: chan was found open, so it points to a live ach_channel_t.
            let cancel = unsafe { cancel_flag(chan) };
            if cancel.load(Ordering::SeqCst) != 0 {
                return fail(ACH_CANCELED, "canceled by ach_cancel() (clear the handle's cancel field to go on)");
            }
            let wait = if options & ACH_O_WAIT == 0 {
                Wait::Poll
            } else if abstime.is_null() {
                Wait::Forever
            } else if !abstime.is_aligned() {
                return fail(ACH_EINVAL, "abstime is misaligned");
            } else {
                // SAFETY: not NULL, aligned, a timespec by contract.
                match time_left(unsafe { &*abstime }, options & ACH_O_RELTIME != 0) {
                    Ok(d) => Wait::Timeout(d),
                    Err(s) => return s,
                }
            };
            let mut mode = if options & ACH_O_LAST != 0 { ReadMode::Newest } else { ReadMode::Next };
            if options & ACH_O_COPY != 0 && wait == Wait::Poll {
                // ACH_O_COPY: the newest frame again if this handle has seen it (a waiting get waits for a new one).
                let newest = ch.handle.channel().newest_seq();
                let mut reader = ch.handle.reader();
                if newest > 0 && reader.last_seq() >= newest {
                    reader.seek(newest - 1);
                    mode = ReadMode::Newest;
                }
            }
            let out: &mut [u8] = if size == 0 {
                &mut []
            } else {
                // SAFETY: buf is not NULL and points to size writable bytes by contract, not aliased during the call.
                unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), size) }
            };
            let set_size = |n: usize| {
                if !frame_size.is_null() {
                    // SAFETY: not NULL, aligned (checked), writable by contract.
                    unsafe { *frame_size = n };
                }
            };
            let got = ch.handle.get(out, mode, wait, || cancel.load(Ordering::SeqCst) != 0);
            match got {
                Ok(Got::Message(info, before)) => {
                    set_size(info.len);
                    // SAFETY: chan is a live ach_channel_t (open, checked above).
                    unsafe { (*chan).seq_num = info.seq };
                    let skipped = match mode {
                        ReadMode::Next => info.missed > 0,
                        ReadMode::Newest => info.seq > before + 1,
                    };
                    if skipped {
                        ACH_MISSED_FRAME
                    } else {
                        ACH_OK
                    }
                }
                Ok(Got::NothingNew) => ACH_STALE_FRAMES,
                Ok(Got::TimedOut) if cancel.load(Ordering::SeqCst) != 0 => {
                    fail(ACH_CANCELED, "canceled by ach_cancel() while waiting")
                }
                Ok(Got::TimedOut) => ACH_TIMEOUT,
                Ok(Got::TooSmall { needed }) => {
                    set_size(needed);
                    fail(ACH_OVERFLOW, format!("the frame has {needed} bytes, the buffer {size}: nothing was consumed"))
                }
                Err(e) => fail_shm(&e),
            }
        })
    })
}

/// `ach_put`.
///
/// # Safety
///
/// `chan` is NULL or points to an `ach_channel_t`; `buf` is NULL or points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn ach_put(chan: *mut AchChannelT, buf: *const c_void, len: usize) -> c_int {
    guard(ACH_BUG, || {
        with_channel(chan, |ch| {
            if len == 0 || buf.is_null() {
                return fail(ACH_EINVAL, "ach_put needs a buffer of at least one byte");
            }
            // SAFETY: buf is not NULL and points to len readable bytes by contract.
            let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
            // A frame larger than the channel's is the writer's MessageTooLarge, ACH_OVERFLOW (checked there, not
            // here: the channel's size is a line the put does not otherwise touch).
            match ch.handle.put(bytes) {
                Ok(_) => ACH_OK,
                Err(e) => fail_shm(&e),
            }
        })
    })
}

/// `ach_flush`.
///
/// # Safety
///
/// `chan` is NULL or points to an `ach_channel_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_flush(chan: *mut AchChannelT) -> c_int {
    guard(ACH_BUG, || {
        with_channel(chan, |ch| {
            let newest = ch.handle.channel().newest_seq();
            ch.handle.reader().seek(newest);
            // SAFETY: chan is a live, open ach_channel_t.
            unsafe { (*chan).seq_num = newest };
            ACH_OK
        })
    })
}

/// `ach_close`.
///
/// # Safety
///
/// `chan` is NULL or points to an `ach_channel_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_close(chan: *mut AchChannelT) -> c_int {
    guard(ACH_BUG, || {
        let handle = match checked_shm(chan) {
            Ok(h) => h,
            Err(s) => return s,
        };
        if !CHANNELS.remove(handle) {
            return fail(ACH_EINVAL, CLOSED);
        }
        // SAFETY: chan is a live ach_channel_t (checked), open until now.
        unsafe {
            (*chan).vtab = ptr::null();
            (*chan).shm = ptr::null_mut();
            (*chan).fd = -1;
        }
        ACH_OK
    })
}

/// `ach_chmod`.
///
/// # Safety
///
/// `chan` is NULL or points to an `ach_channel_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_chmod(chan: *mut AchChannelT, mode: libc::mode_t) -> c_int {
    guard(ACH_BUG, || {
        with_channel(chan, |ch| match Channel::set_mode(&ch.name, ch.handle.channel().path().parent(), mode) {
            Ok(()) => ACH_OK,
            Err(e) => fail_shm(&e),
        })
    })
}

/// `ach_unlink`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ach_unlink(name: *const c_char) -> c_int {
    guard(ACH_BUG, || {
        let name = match check_name(name) {
            Ok(n) => n,
            Err(s) => return s,
        };
        match Channel::remove(&name, None) {
            Ok(()) => ACH_OK,
            Err(e) => fail_shm(&e),
        }
    })
}

/// `ach_cancel`: async-signal-safe. It sets the handle's `cancel` field and wakes the channel's sleeping readers;
/// it takes no lock that a thread it interrupted could hold ([`CHANNELS`] is lock-free) and allocates nothing, so on
/// an error it sets no `ach_errstr`.
///
/// # Safety
///
/// `chan` is NULL or points to an `ach_channel_t`; `attr` is NULL or points to an `ach_cancel_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_cancel(chan: *mut AchChannelT, attr: *const AchCancelAttrT) -> c_int {
    guard(ACH_BUG, || {
        let _ = attr; // Ach's async_unsafe only chooses how Ach wakes waiters; every cancel here is signal-safe.
        if chan.is_null() || !chan.is_aligned() {
            return ACH_EINVAL;
        }
        // SAFETY: not NULL, aligned; an ach_channel_t by contract. A plain field read.
        let handle = pool_handle(unsafe { (*chan).shm });
        let woken = CHANNELS.with(handle, |ch| {
            // SAFETY: chan is an open, live ach_channel_t.
            unsafe { cancel_flag(chan) }.store(1, Ordering::SeqCst);
            ch.handle.channel().wake_readers();
        });
        if woken.is_some() {
            ACH_OK
        } else {
            ACH_EINVAL
        }
    })
}

/// `ach_cancel_attr_init`.
///
/// # Safety
///
/// `attr` is NULL or points to a writable `ach_cancel_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_cancel_attr_init(attr: *mut AchCancelAttrT) {
    guard((), || {
        if !attr.is_null() && attr.is_aligned() {
            // SAFETY: not NULL, aligned, writable by contract; all-zero is the default.
            unsafe { ptr::write_bytes(attr, 0, 1) };
        }
    })
}

/// `ach_attr_init`.
///
/// # Safety
///
/// `attr` is NULL or points to a writable `ach_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_attr_init(attr: *mut AchAttrT) {
    guard((), || {
        if !attr.is_null() && attr.is_aligned() {
            // SAFETY: not NULL, aligned, writable by contract; all-zero is ACH_MAP_DEFAULT.
            unsafe { ptr::write_bytes(attr, 0, 1) };
        }
    })
}

/// `ach_attr_set_shm`: records an anonymous channel's memory, as Ach does (`ach_open` then refuses it).
///
/// # Safety
///
/// `attr` is NULL or points to a writable `ach_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_attr_set_shm(attr: *mut AchAttrT, shm: *mut c_void) -> c_int {
    guard(ACH_BUG, || {
        if attr.is_null() || !attr.is_aligned() {
            return fail(ACH_EINVAL, "attr is NULL or misaligned");
        }
        // SAFETY: not NULL, aligned, writable by contract.
        unsafe {
            (*attr).map = ACH_MAP_ANON;
            (*attr).shm = shm;
        }
        ACH_OK
    })
}

/// `ach_create_attr_init`.
///
/// # Safety
///
/// `attr` is NULL or points to a writable `ach_create_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_create_attr_init(attr: *mut AchCreateAttrT) {
    guard((), || {
        if !attr.is_null() && attr.is_aligned() {
            // SAFETY: not NULL, aligned, writable by contract; zero, then Ach's defaults.
            unsafe {
                ptr::write_bytes(attr, 0, 1);
                (*attr).map = ACH_MAP_USER;
                (*attr).clock = ACH_DEFAULT_CLOCK;
            }
        }
    })
}

/// Runs `f` on a non-NULL, aligned `ach_create_attr_t`, or fails with `ACH_EINVAL`.
fn with_create_attr(attr: *mut AchCreateAttrT, f: impl FnOnce(&mut AchCreateAttrT) -> c_int) -> c_int {
    if attr.is_null() || !attr.is_aligned() {
        return fail(ACH_EINVAL, "attr is NULL or misaligned");
    }
    // SAFETY: not NULL, aligned; an ach_create_attr_t, writable and not aliased during the call, by contract.
    f(unsafe { &mut *attr })
}

/// `ach_create_attr_set_clock`: only ACH_DEFAULT_CLOCK (timeouts are on it).
///
/// # Safety
///
/// `attr` is NULL or points to a writable `ach_create_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_create_attr_set_clock(attr: *mut AchCreateAttrT, clock: libc::clockid_t) -> c_int {
    guard(ACH_BUG, || {
        with_create_attr(attr, |a| {
            if clock != ACH_DEFAULT_CLOCK {
                return fail(ACH_ENOTSUP, "timeouts are on ACH_DEFAULT_CLOCK (CLOCK_MONOTONIC) only");
            }
            a.clock = clock;
            a.flags |= SET_CLOCK_BIT;
            ACH_OK
        })
    })
}

/// `ach_create_attr_set_map`: any `enum ach_map` value, as Ach (ach_create refuses ANON and KERNEL).
///
/// # Safety
///
/// `attr` is NULL or points to a writable `ach_create_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_create_attr_set_map(attr: *mut AchCreateAttrT, map: c_int) -> c_int {
    guard(ACH_BUG, || {
        with_create_attr(attr, |a| {
            if !(ACH_MAP_DEFAULT..=ACH_MAP_KERNEL).contains(&map) {
                return fail(ACH_EINVAL, format!("map {map} is not an enum ach_map value"));
            }
            a.map = map;
            ACH_OK
        })
    })
}

/// `ach_create_attr_set_truncate`.
///
/// # Safety
///
/// `attr` is NULL or points to a writable `ach_create_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_create_attr_set_truncate(attr: *mut AchCreateAttrT, truncate: c_int) -> c_int {
    guard(ACH_BUG, || {
        with_create_attr(attr, |a| {
            if truncate != 0 {
                a.flags |= TRUNCATE_BIT;
            } else {
                a.flags &= !TRUNCATE_BIT;
            }
            ACH_OK
        })
    })
}

/// `ach_create_attr_get_shm`: anonymous channels are not offered, so there is never one (`ACH_EINVAL`, as Ach for
/// a channel that is not anonymous).
///
/// # Safety
///
/// `attr` is NULL or points to an `ach_create_attr_t`.
#[no_mangle]
pub unsafe extern "C" fn ach_create_attr_get_shm(attr: *mut AchCreateAttrT, shm: *mut *mut c_void) -> c_int {
    guard(ACH_BUG, || {
        let _ = shm;
        with_create_attr(attr, |_| fail(ACH_EINVAL, "no anonymous channel: they are not offered"))
    })
}

/// Writes `value` to an out-parameter after checking the handle, or fails with `ACH_EINVAL`.
fn channel_out<T>(chan: *const AchChannelT, out: *mut T, value: impl FnOnce(&AchChannel) -> T) -> c_int {
    with_channel(chan, |ch| {
        if out.is_null() || !out.is_aligned() {
            return fail(ACH_EINVAL, "the output pointer is NULL or misaligned");
        }
        // SAFETY: not NULL, aligned, writable by contract.
        unsafe { out.write(value(ch)) };
        ACH_OK
    })
}

/// `ach_channel_fd`.
///
/// # Safety
///
/// `channel` is NULL or points to an `ach_channel_t`; `file_descriptor` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ach_channel_fd(channel: *const AchChannelT, file_descriptor: *mut c_int) -> c_int {
    guard(ACH_BUG, || channel_out(channel, file_descriptor, |ch| ch.handle.channel().as_raw_fd()))
}

/// `ach_channel_map`: always `ACH_MAP_USER`.
///
/// # Safety
///
/// `channel` is NULL or points to an `ach_channel_t`; `map` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ach_channel_map(channel: *const AchChannelT, map: *mut c_int) -> c_int {
    guard(ACH_BUG, || channel_out(channel, map, |_| ACH_MAP_USER))
}

/// `ach_channel_clock`: always `ACH_DEFAULT_CLOCK`.
///
/// # Safety
///
/// `channel` is NULL or points to an `ach_channel_t`; `clock` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ach_channel_clock(channel: *const AchChannelT, clock: *mut libc::clockid_t) -> c_int {
    guard(ACH_BUG, || channel_out(channel, clock, |_| ACH_DEFAULT_CLOCK))
}

/// `ach_result_to_string`: a static string, never NULL.
#[no_mangle]
pub extern "C" fn ach_result_to_string(result: c_int) -> *const c_char {
    guard(c"UNKNOWN".as_ptr(), || status_name(result).as_ptr())
}

/// `ach_errstr`: this thread's last error message.
#[no_mangle]
pub extern "C" fn ach_errstr() -> *const c_char {
    guard(c"".as_ptr(), last_error)
}

/// `ach_dump`: the channel's sizes and counters on stderr.
///
/// # Safety
///
/// None beyond C's: `shm` is only compared against the open handles, never dereferenced otherwise.
#[no_mangle]
pub unsafe extern "C" fn ach_dump(shm: *mut c_void) {
    guard((), || {
        let dumped = CHANNELS.with(pool_handle(shm), |ch| {
            let s = ch.handle.channel().stats();
            eprintln!(
                "channel {} ({}): frames {}, frame size {}, data bytes {}, file bytes {}, messages {}, \
                 writers opened {}, readers opened {}, waiting readers {}, recoveries {}, mode {:o}",
                ch.name,
                ch.handle.channel().path().display(),
                s.frames,
                s.frame_size,
                s.data_bytes,
                s.file_bytes,
                s.messages,
                s.writer_opens,
                s.reader_opens,
                s.waiting_readers,
                s.recoveries,
                s.mode
            );
        });
        if dumped.is_none() {
            eprintln!("ach_dump: {shm:p} is not an open channel");
        }
    })
}

/// The text of a NUL-terminated C string this library returned (for its own tests).
///
/// # Safety
///
/// `p` is a non-NULL pointer returned by `ach_result_to_string` or `ach_errstr`.
pub unsafe fn text(p: *const c_char) -> String {
    // SAFETY: by contract, a NUL-terminated string this library keeps alive.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
