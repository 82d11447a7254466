//! libnerve: the C ABI of Nerve (`include/nerve/nerve.h`): the bus ([`bus`]: by URL, publish,
//! subscribe by pattern with capacity and overflow policy, handle, a pollable descriptor, per-subscription stats),
//! shared-memory channels (create, open, remove, put, loans written in place, get next or newest with wait and
//! timeout, missed counts, a buffer-too-small status that loses nothing, stats) and LCM event logs (read with the
//! damage report, write). Shared-memory channels are Linux only (nerve-shm's are); elsewhere their entry points
//! fail with `NERVE_E_INVALID` and a last error naming the transports that work.
//!
//! # Brief overview
//!
//! A `nerve_channel *` is a `ShmHandle` in `CHANNELS`; a `nerve_view *` is a `View` in `VIEWS` (it
//! keeps the channel mapped, so its data pointer stays readable until it is released); a `nerve_loan *` is a `LoanSlot` in this thread's
//! `LOANS` (a loan holds the channel's writer lock, which belongs to the thread that took it), all in `channel`; log readers and
//! writers are `nerve-log`'s, each behind a mutex in its registry. Every entry point runs under [`guard`] and looks
//! its handle up before touching it; statuses are [`status`]'s, the reason for the last error is
//! `nerve_last_error()`.

#![allow(unsafe_code)] // The C ABI: raw pointers from C at every entry point; each block says why it is sound.
#![deny(missing_docs)]

pub mod status;

use std::ffi::{c_char, c_int, c_void};
use std::fs::File;
use std::io::BufWriter;
use std::sync::{Mutex, MutexGuard};

use nerve_c_common::{guard, last_error, set_last_error, str_arg, Registry};
use nerve_log::{LogError, LogReader, LogWriter};
use status::*;

/// Every open `nerve_log_reader`.
pub static LOG_READERS: Registry<Mutex<LogReader<File>>> = Registry::new();
/// Every open `nerve_log_writer`.
pub static LOG_WRITERS: Registry<Mutex<LogWriter<BufWriter<File>>>> = Registry::new();

fn fail(status: c_int, message: impl Into<String>) -> c_int {
    set_last_error(message);
    status
}

fn fail_log(e: &LogError) -> c_int {
    let status = match e {
        LogError::Io { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => NERVE_E_NOT_FOUND,
            std::io::ErrorKind::PermissionDenied => NERVE_E_PERMISSION,
            _ => NERVE_E_IO,
        },
        LogError::ChannelLength { .. } => NERVE_E_INVALID,
        LogError::DataTooLong { .. } => NERVE_E_TOO_LARGE,
        LogError::Exists { .. } => NERVE_E_EXISTS,
        _ => NERVE_E_INTERNAL,
    };
    fail(status, e.to_string())
}

/// A required string argument.
fn text_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, c_int> {
    // SAFETY: nerve.h's contract: a string argument is NULL or NUL-terminated and lives for the call.
    unsafe { str_arg(p) }.map_err(|_| fail(NERVE_E_INVALID, format!("{what} is NULL or not UTF-8")))
}

/// A `(data, len)` byte argument: empty when `len` is 0 (whatever `data` is), an error when `data` is NULL for a
/// non-zero `len`.
fn bytes_arg<'a>(data: *const c_void, len: usize) -> Result<&'a [u8], c_int> {
    if len == 0 {
        Ok(&[])
    } else if data.is_null() {
        Err(fail(NERVE_E_INVALID, "data is NULL but len is not 0"))
    } else {
        // SAFETY: not NULL; nerve.h's contract: `len` readable bytes that stay unchanged for the call.
        Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })
    }
}

/// Writes `value` through an output pointer that must not be NULL.
fn out_required<T>(out: *mut T, value: T, what: &str) -> Result<(), c_int> {
    if out.is_null() || !out.is_aligned() {
        return Err(fail(NERVE_E_INVALID, format!("{what} is NULL or misaligned")));
    }
    // SAFETY: not NULL, aligned, writable by contract.
    unsafe { out.write(value) };
    Ok(())
}

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(status) => return status,
        }
    };
}

/// `nerve_last_error`.
#[no_mangle]
pub extern "C" fn nerve_last_error() -> *const c_char {
    guard(c"".as_ptr(), last_error)
}

/// `nerve_status_string`.
#[no_mangle]
pub extern "C" fn nerve_status_string(status: c_int) -> *const c_char {
    guard(c"unknown status".as_ptr(), || status_name(status).as_ptr())
}

/// A `nerve_view_handler`: the channel (NUL-terminated), the view (the handler's to release), its bytes and what came
/// with it, and the caller's pointer.
pub type NerveViewHandler = unsafe extern "C" fn(
    channel: *const c_char,
    view: *mut c_void,
    data: *const c_void,
    info: *const NerveMessageInfo,
    user: *mut c_void,
);

/// `nerve_message_info`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct NerveMessageInfo {
    /// Sequence number.
    pub seq: u64,
    /// Length (needed length for a buffer too small).
    pub len: u64,
    /// Missed since the last message.
    pub missed: u64,
    /// Put time, µs since the epoch.
    pub put_utime: i64,
    /// Writer's origin id.
    pub origin: u64,
}

/// `nerve_channel_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NerveChannelStats {
    /// Frames.
    pub frames: u64,
    /// Frame size.
    pub frame_size: u64,
    /// Messages put.
    pub messages: u64,
    /// Writers made.
    pub writer_opens: u64,
    /// Readers made.
    pub reader_opens: u64,
    /// Recoveries.
    pub recoveries: u64,
    /// Readers asleep.
    pub waiting_readers: u32,
    /// Mode bits.
    pub mode: u32,
}

/// `nerve_log_event`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NerveLogEvent {
    /// Event number.
    pub number: i64,
    /// Timestamp.
    pub utime: i64,
    /// Channel bytes.
    pub channel: *const c_char,
    /// Channel length.
    pub channel_len: usize,
    /// Message bytes.
    pub data: *const c_void,
    /// Message length.
    pub data_len: usize,
    /// File offset.
    pub offset: u64,
}

/// `nerve_log_damage`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NerveLogDamage {
    /// Damaged regions.
    pub regions: u64,
    /// Bytes skipped.
    pub bytes: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `nerve_log_reader_open`.
///
/// # Safety
///
/// `path` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_log_reader_open(path: *const c_char, out: *mut *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let path = tri!(text_arg(path, "path"));
        if out.is_null() || !out.is_aligned() {
            return fail(NERVE_E_INVALID, "out is NULL or misaligned");
        }
        match LogReader::open(path) {
            Ok(r) => {
                let p = LOG_READERS.insert(Mutex::new(r));
                tri!(out_required(out, p.cast_mut().cast(), "out"));
                NERVE_OK
            }
            Err(e) => fail_log(&e),
        }
    })
}

/// `nerve_log_reader_next`: the event's pointers point into the reader's buffer, valid until its next call.
///
/// # Safety
///
/// `event` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_log_reader_next(reader: *mut c_void, event: *mut NerveLogEvent) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let r = tri!(LOG_READERS.get(reader.cast()).ok_or_else(|| fail(NERVE_E_INVALID, "the log reader is not open")));
        if event.is_null() || !event.is_aligned() {
            return fail(NERVE_E_INVALID, "event is NULL or misaligned");
        }
        let mut r = lock(&r);
        match r.next_event() {
            Ok(Some(e)) => {
                let ev = NerveLogEvent {
                    number: e.number,
                    utime: e.utime,
                    channel: e.channel_bytes.as_ptr().cast(),
                    channel_len: e.channel_bytes.len(),
                    data: e.data.as_ptr().cast(),
                    data_len: e.data.len(),
                    offset: e.offset,
                };
                tri!(out_required(event, ev, "event"));
                NERVE_OK
            }
            Ok(None) => NERVE_END,
            Err(e) => fail_log(&e),
        }
    })
}

/// `nerve_log_reader_damage`.
///
/// # Safety
///
/// `damage` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_log_reader_damage(reader: *const c_void, damage: *mut NerveLogDamage) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let r = tri!(LOG_READERS.get(reader.cast()).ok_or_else(|| fail(NERVE_E_INVALID, "the log reader is not open")));
        let t = lock(&r).damage_totals();
        tri!(out_required(damage, NerveLogDamage { regions: t.regions, bytes: t.bytes }, "damage"));
        NERVE_OK
    })
}

/// `nerve_log_reader_close`.
///
/// # Safety
///
/// None beyond C's: the handle is looked up first.
#[no_mangle]
pub unsafe extern "C" fn nerve_log_reader_close(reader: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || match LOG_READERS.remove(reader.cast()) {
        Some(_) => NERVE_OK,
        None => fail(NERVE_E_INVALID, "the log reader is not open"),
    })
}

/// `nerve_log_writer_open`.
///
/// # Safety
///
/// `path` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_log_writer_open(path: *const c_char, flags: c_int, out: *mut *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let path = tri!(text_arg(path, "path"));
        if out.is_null() || !out.is_aligned() {
            return fail(NERVE_E_INVALID, "out is NULL or misaligned");
        }
        let opened = match flags {
            NERVE_LOG_CREATE => LogWriter::create(path, false),
            NERVE_LOG_OVERWRITE => LogWriter::create(path, true),
            NERVE_LOG_APPEND => LogWriter::append(path),
            other => return fail(NERVE_E_INVALID, format!("flags {other} is not an enum nerve_log_open_flags value")),
        };
        match opened {
            Ok(w) => {
                let p = LOG_WRITERS.insert(Mutex::new(w));
                tri!(out_required(out, p.cast_mut().cast(), "out"));
                NERVE_OK
            }
            Err(e) => fail_log(&e),
        }
    })
}

fn log_writer(p: *const c_void) -> Result<std::sync::Arc<Mutex<LogWriter<BufWriter<File>>>>, c_int> {
    LOG_WRITERS.get(p.cast()).ok_or_else(|| fail(NERVE_E_INVALID, "the log writer is not open"))
}

/// `nerve_log_writer_write`.
///
/// # Safety
///
/// `channel` is NULL or a NUL-terminated string; `data` is NULL (with `len` 0) or points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn nerve_log_writer_write(
    writer: *mut c_void,
    utime: i64,
    channel: *const c_char,
    data: *const c_void,
    len: usize,
) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let w = tri!(log_writer(writer));
        let channel = tri!(text_arg(channel, "channel"));
        let bytes = tri!(bytes_arg(data, len));
        let written = lock(&w).write_event(utime, channel, bytes);
        match written {
            Ok(()) => NERVE_OK,
            Err(e) => fail_log(&e),
        }
    })
}

/// `nerve_log_writer_flush`.
///
/// # Safety
///
/// None beyond C's: the handle is looked up first.
#[no_mangle]
pub unsafe extern "C" fn nerve_log_writer_flush(writer: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let w = tri!(log_writer(writer));
        let r = lock(&w).flush();
        match r {
            Ok(()) => NERVE_OK,
            Err(e) => fail_log(&e),
        }
    })
}

/// `nerve_log_writer_close`.
///
/// # Safety
///
/// None beyond C's: the handle is looked up first.
#[no_mangle]
pub unsafe extern "C" fn nerve_log_writer_close(writer: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let w =
            tri!(LOG_WRITERS.remove(writer.cast()).ok_or_else(|| fail(NERVE_E_INVALID, "the log writer is not open")));
        let r = lock(&w).flush();
        match r {
            Ok(()) => NERVE_OK,
            Err(e) => fail_log(&e),
        }
    })
}

// After `tri!`, which these modules use. The shared-memory half is the only part that differs between systems, and
// this is the one place that says so: nerve-shm's channels exist on Linux only; elsewhere every channel entry point
// is still exported (the same nerve.h everywhere) and fails with the bus's own refusal of shm:// (`not_linux`).
pub mod bus;
#[cfg(target_os = "linux")]
mod channel;
#[cfg(target_os = "linux")]
pub use channel::*;
#[cfg(not(target_os = "linux"))]
mod not_linux;
#[cfg(not(target_os = "linux"))]
pub use not_linux::*;
