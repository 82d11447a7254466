//! nerve.h's shared-memory channels over nerve-shm (Linux only; `not_linux` stands in elsewhere): `nerve_channel`
//! (create, open, remove, put, loans written in place, get next or newest with wait and timeout, stats),
//! `nerve_view` (a message read in place) and `nerve_view_subscription` (views of every matching channel).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CString};
use std::path::Path;
use std::time::Duration;

use nerve_c_common::{guard, Got, Registry, ShmHandle};
use nerve_shm::{Channel, ChannelConfig, GetOutcome, Loan, ReadMode, ShmError, View, Wait, Writer};

use super::status::*;
use super::{bytes_arg, fail, out_required, text_arg, NerveChannelStats, NerveMessageInfo, NerveViewHandler};

/// An optional directory argument (NULL: the default).
fn dir_arg<'a>(p: *const c_char) -> Result<Option<&'a Path>, c_int> {
    if p.is_null() {
        Ok(None)
    } else {
        text_arg(p, "dir").map(|d| Some(Path::new(d)))
    }
}

/// Writes `value` through an output pointer that may be NULL (then nothing is written).
fn out_optional<T>(out: *mut T, value: T) -> Result<(), c_int> {
    if out.is_null() {
        return Ok(());
    }
    out_required(out, value, "an output pointer")
}

/// Every open `nerve_channel`.
pub static CHANNELS: Registry<ShmHandle> = Registry::new();
/// Every `nerve_view` not yet released (each keeps its channel mapped).
pub static VIEWS: Registry<View> = Registry::new();

thread_local! {
    /// This thread's loans (a loan holds the writer lock, which the thread that took it must release).
    static LOANS: RefCell<HashMap<usize, Box<LoanSlot>>> = RefCell::new(HashMap::new());
}

/// A loan and the writer it borrows. The writer is a heap object of its own that outlives the loan (dropped after
/// it, in `Drop`), so the loan can be kept between C calls.
pub struct LoanSlot {
    loan: Option<Loan<'static>>,
    writer: *mut Writer,
}

impl Drop for LoanSlot {
    fn drop(&mut self) {
        // The loan first (uncommitted: it publishes nothing and releases the lock), then its writer.
        self.loan = None;
        // SAFETY: `writer` came from Box::into_raw in nerve_channel_loan and is freed only here, after the loan that
        // borrowed it is gone.
        drop(unsafe { Box::from_raw(self.writer) });
    }
}

fn fail_shm(e: &ShmError) -> c_int {
    let status = match e {
        ShmError::InvalidName { .. } | ShmError::InvalidConfig { .. } => NERVE_E_INVALID,
        ShmError::NotFound { .. } => NERVE_E_NOT_FOUND,
        ShmError::AlreadyExists { .. } | ShmError::SizeMismatch { .. } => NERVE_E_EXISTS,
        ShmError::PermissionDenied { .. } => NERVE_E_PERMISSION,
        ShmError::NotAChannel { .. }
        | ShmError::UnsupportedVersion { .. }
        | ShmError::Truncated { .. }
        | ShmError::Corrupt { .. } => NERVE_E_BAD_FILE,
        ShmError::MessageTooLarge { .. } => NERVE_E_TOO_LARGE,
        ShmError::Lock { .. } => NERVE_E_BUSY,
        ShmError::Io { .. } => NERVE_E_IO,
        _ => NERVE_E_INTERNAL,
    };
    fail(status, e.to_string())
}

/// Opens a handle on `ch` at `start` and hands it to C.
fn hand_out(ch: Channel, start: c_int, out: *mut *mut c_void) -> c_int {
    let newest = ch.newest_seq();
    let last = match start {
        NERVE_START_NEWEST => newest.saturating_sub(1),
        NERVE_START_OLDEST => newest.saturating_sub(ch.frames()),
        NERVE_START_NEXT => newest,
        other => return fail(NERVE_E_INVALID, format!("start {other} is not an enum nerve_start value")),
    };
    if out.is_null() || !out.is_aligned() {
        return fail(NERVE_E_INVALID, "out is NULL or misaligned");
    }
    let p = CHANNELS.insert(ShmHandle::new(ch, last));
    tri!(out_required(out, p.cast_mut().cast(), "out"));
    NERVE_OK
}

/// `nerve_channel_create`.
///
/// # Safety
///
/// `name` and `dir` are NULL or NUL-terminated strings; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_create(
    name: *const c_char,
    frames: u64,
    frame_size: u64,
    mode: u32,
    dir: *const c_char,
    flags: c_int,
    out: *mut *mut c_void,
) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let name = tri!(text_arg(name, "name"));
        let dir = tri!(dir_arg(dir));
        if out.is_null() {
            return fail(NERVE_E_INVALID, "out is NULL");
        }
        let mut config = ChannelConfig::new(frames, frame_size).mode(mode);
        if let Some(d) = dir {
            config = config.dir(d);
        }
        let made = match flags {
            NERVE_CREATE_NEW => Channel::create(name, &config),
            NERVE_CREATE_OR_OPEN => Channel::open_or_create(name, &config),
            other => return fail(NERVE_E_INVALID, format!("flags {other} is not an enum nerve_create_flags value")),
        };
        match made {
            Ok(ch) => hand_out(ch, NERVE_START_NEWEST, out),
            Err(e) => fail_shm(&e),
        }
    })
}

/// `nerve_channel_open`.
///
/// # Safety
///
/// `name` and `dir` are NULL or NUL-terminated strings; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_open(
    name: *const c_char,
    dir: *const c_char,
    start: c_int,
    out: *mut *mut c_void,
) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let name = tri!(text_arg(name, "name"));
        let dir = tri!(dir_arg(dir));
        if !(NERVE_START_NEWEST..=NERVE_START_NEXT).contains(&start) {
            return fail(NERVE_E_INVALID, format!("start {start} is not an enum nerve_start value"));
        }
        match Channel::open(name, dir) {
            Ok(ch) => hand_out(ch, start, out),
            Err(e) => fail_shm(&e),
        }
    })
}

/// `nerve_channel_close`.
///
/// # Safety
///
/// None beyond C's: the handle is looked up, never dereferenced unless open.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_close(channel: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || match CHANNELS.remove(channel.cast()) {
        Some(_) => NERVE_OK,
        None => fail(NERVE_E_INVALID, "the channel handle is not open (NULL, closed, or garbage)"),
    })
}

/// `nerve_channel_remove`.
///
/// # Safety
///
/// `name` and `dir` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_remove(name: *const c_char, dir: *const c_char) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let name = tri!(text_arg(name, "name"));
        let dir = tri!(dir_arg(dir));
        match Channel::remove(name, dir) {
            Ok(()) => NERVE_OK,
            Err(e) => fail_shm(&e),
        }
    })
}

/// `nerve_channel_sizes`.
///
/// # Safety
///
/// `frames` and `frame_size` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_sizes(channel: *const c_void, frames: *mut u64, frame_size: *mut u64) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let h = tri!(channel_of(channel));
        tri!(out_optional(frames, h.channel().frames()));
        tri!(out_optional(frame_size, h.channel().frame_size()));
        NERVE_OK
    })
}

/// The open channel behind a `nerve_channel *`, or `NERVE_E_INVALID`.
fn channel_of(p: *const c_void) -> Result<std::sync::Arc<ShmHandle>, c_int> {
    CHANNELS
        .get(p.cast())
        .ok_or_else(|| fail(NERVE_E_INVALID, "the channel handle is not open (NULL, closed, or garbage)"))
}

/// `nerve_channel_put`.
///
/// # Safety
///
/// `data` is NULL (with `len` 0) or points to `len` readable bytes; `seq` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_put(
    channel: *mut c_void,
    data: *const c_void,
    len: usize,
    seq: *mut u64,
) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let h = tri!(channel_of(channel));
        let bytes = tri!(bytes_arg(data, len));
        match h.put(bytes) {
            Ok(s) => {
                tri!(out_optional(seq, s));
                NERVE_OK
            }
            Err(e) => fail_shm(&e),
        }
    })
}

/// `nerve_channel_loan`.
///
/// # Safety
///
/// `data` and `loan` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_loan(
    channel: *mut c_void,
    len: usize,
    data: *mut *mut c_void,
    loan: *mut *mut c_void,
) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let h = tri!(channel_of(channel));
        if data.is_null() || loan.is_null() || !data.is_aligned() || !loan.is_aligned() {
            return fail(NERVE_E_INVALID, "data or loan is NULL or misaligned");
        }
        let writer = Box::into_raw(Box::new(h.channel().writer()));
        // SAFETY: `writer` is a fresh heap object freed only by LoanSlot's Drop, after the loan made here is dropped;
        // nothing else refers to it, so the exclusive borrow may last as long as the loan.
        let borrowed: &'static mut Writer = unsafe { &mut *writer };
        let mut lent = match borrowed.loan(len) {
            Ok(l) => l,
            Err(e) => {
                // SAFETY: from Box::into_raw above; the failed loan holds no borrow of it any more.
                drop(unsafe { Box::from_raw(writer) });
                return fail_shm(&e);
            }
        };
        let bytes = lent.bytes_mut().as_mut_ptr();
        let slot = Box::new(LoanSlot { loan: Some(lent), writer });
        let key = &*slot as *const LoanSlot as usize;
        LOANS.with(|l| l.borrow_mut().insert(key, slot));
        tri!(out_required(data, bytes.cast(), "data"));
        tri!(out_required(loan, key as *mut c_void, "loan"));
        NERVE_OK
    })
}

fn take_loan(loan: *mut c_void) -> Result<Box<LoanSlot>, c_int> {
    LOANS.with(|l| l.borrow_mut().remove(&(loan as usize))).ok_or_else(|| {
        fail(
            NERVE_E_INVALID,
            "the loan is not open in this thread (NULL, already ended, garbage, or taken by another thread)",
        )
    })
}

/// `nerve_loan_commit`.
///
/// # Safety
///
/// `seq` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_loan_commit(loan: *mut c_void, seq: *mut u64) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let mut slot = tri!(take_loan(loan));
        let s = match slot.loan.take() {
            Some(l) => l.commit(),
            None => return fail(NERVE_E_INTERNAL, "a loan slot without its loan"),
        };
        drop(slot);
        tri!(out_optional(seq, s));
        NERVE_OK
    })
}

/// `nerve_loan_abort`.
///
/// # Safety
///
/// None beyond C's: the loan is looked up, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn nerve_loan_abort(loan: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        drop(tri!(take_loan(loan)));
        NERVE_OK
    })
}

/// `nerve_channel_get`.
///
/// # Safety
///
/// `buf` is NULL (with `capacity` 0) or points to `capacity` writable bytes; `info` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_get(
    channel: *mut c_void,
    buf: *mut c_void,
    capacity: usize,
    mode: c_int,
    timeout_ns: i64,
    info: *mut NerveMessageInfo,
) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let h = tri!(channel_of(channel));
        let mode = match mode {
            NERVE_READ_NEXT => ReadMode::Next,
            NERVE_READ_NEWEST => ReadMode::Newest,
            other => return fail(NERVE_E_INVALID, format!("mode {other} is not an enum nerve_read_mode value")),
        };
        let wait = match timeout_ns {
            0 => Wait::Poll,
            t if t < 0 => Wait::Forever,
            t => Wait::Timeout(Duration::from_nanos(t as u64)),
        };
        if !info.is_null() && !info.is_aligned() {
            return fail(NERVE_E_INVALID, "info is misaligned");
        }
        let out: &mut [u8] = if capacity == 0 {
            &mut []
        } else if buf.is_null() {
            return fail(NERVE_E_INVALID, "buf is NULL but capacity is not 0");
        } else {
            // SAFETY: not NULL; capacity writable bytes by contract, not aliased during the call.
            unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), capacity) }
        };
        match h.get(out, mode, wait, || false) {
            Ok(Got::Message(m, _)) => {
                let i = NerveMessageInfo {
                    seq: m.seq,
                    len: m.len as u64,
                    missed: m.missed,
                    put_utime: m.put_utime,
                    origin: m.origin,
                };
                tri!(out_optional(info, i));
                NERVE_OK
            }
            Ok(Got::NothingNew) => NERVE_NOTHING_NEW,
            Ok(Got::TimedOut) => NERVE_TIMED_OUT,
            Ok(Got::TooSmall { needed }) => {
                let i = NerveMessageInfo { len: needed as u64, ..NerveMessageInfo::default() };
                tri!(out_optional(info, i));
                NERVE_BUFFER_TOO_SMALL
            }
            Err(e) => fail_shm(&e),
        }
    })
}

/// `nerve_channel_view`.
///
/// # Safety
///
/// `view`, `data`, `len` and `info` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_view(
    channel: *mut c_void,
    mode: c_int,
    timeout_ns: i64,
    view: *mut *mut c_void,
    data: *mut *const c_void,
    len: *mut usize,
    info: *mut NerveMessageInfo,
) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let h = tri!(channel_of(channel));
        let mode = tri!(read_mode_arg(mode));
        if view.is_null() || data.is_null() || !view.is_aligned() || !data.is_aligned() {
            return fail(NERVE_E_INVALID, "view or data is NULL or misaligned");
        }
        if (!len.is_null() && !len.is_aligned()) || (!info.is_null() && !info.is_aligned()) {
            return fail(NERVE_E_INVALID, "len or info is misaligned");
        }
        match h.view(mode, wait_arg(timeout_ns)) {
            Ok(GetOutcome::Message(v)) => {
                let m = v.info();
                let bytes = v.bytes().as_ptr();
                let i = NerveMessageInfo {
                    seq: m.seq,
                    len: m.len as u64,
                    missed: m.missed,
                    put_utime: m.put_utime,
                    origin: m.origin,
                };
                let p = VIEWS.insert(v);
                tri!(out_required(view, p.cast_mut().cast(), "view"));
                tri!(out_required(data, bytes.cast(), "data"));
                tri!(out_optional(len, m.len));
                tri!(out_optional(info, i));
                NERVE_OK
            }
            Ok(GetOutcome::NothingNew) => NERVE_NOTHING_NEW,
            Ok(GetOutcome::TimedOut) => NERVE_TIMED_OUT,
            Ok(other) => fail(NERVE_E_INTERNAL, format!("a view came back as {other:?}")),
            Err(e) => fail_shm(&e),
        }
    })
}

/// `nerve_view_check`.
///
/// # Safety
///
/// None beyond C's: the view is looked up, never dereferenced unless live.
#[no_mangle]
pub unsafe extern "C" fn nerve_view_check(view: *const c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let v = tri!(VIEWS
            .get(view.cast())
            .ok_or_else(|| fail(NERVE_E_INVALID, "the view is not live (NULL, released, or garbage)")));
        match v.check() {
            Ok(()) => NERVE_OK,
            Err(e) => fail(NERVE_OVERWRITTEN, e.to_string()),
        }
    })
}

/// `nerve_view_release`.
///
/// # Safety
///
/// None beyond C's: the view is looked up, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn nerve_view_release(view: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || match VIEWS.remove(view.cast()) {
        Some(_) => NERVE_OK,
        None => fail(NERVE_E_INVALID, "the view is not live (NULL, already released, or garbage)"),
    })
}

/// Every running `nerve_view_subscription`.
pub static VIEW_SUBSCRIPTIONS: Registry<nerve_bus::provider::shm::ViewSubscription> = Registry::new();

/// `nerve_shm_subscribe_views`.
///
/// # Safety
///
/// `dir` and `pattern` are NULL or NUL-terminated strings; `handler` is NULL or a function that stays callable
/// while the subscription runs; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_shm_subscribe_views(
    dir: *const c_char,
    pattern: *const c_char,
    handler: Option<NerveViewHandler>,
    user: *mut c_void,
    out: *mut *mut c_void,
) -> c_int {
    use nerve_bus::provider::shm::{Shm, ShmConfig};
    guard(NERVE_E_INTERNAL, || {
        let dir = tri!(dir_arg(dir)).map(Path::to_path_buf);
        let pattern = tri!(text_arg(pattern, "pattern"));
        let Some(handler) = handler else { return fail(NERVE_E_INVALID, "handler is NULL") };
        if out.is_null() || !out.is_aligned() {
            return fail(NERVE_E_INVALID, "out is NULL or misaligned");
        }
        let user = user as usize;
        let on_view = move |channel: &str, v: View| {
            // A channel name with a NUL inside cannot be handed to C (no channel file has one).
            let Ok(name) = CString::new(channel) else { return };
            let m = v.info();
            let info = NerveMessageInfo {
                seq: m.seq,
                len: m.len as u64,
                missed: m.missed,
                put_utime: m.put_utime,
                origin: m.origin,
            };
            let data = v.bytes().as_ptr();
            let view = VIEWS.insert(v);
            // SAFETY: the caller of nerve_shm_subscribe_views promised a callable handler; `name` and `info` live
            // for the call, `view` (and the bytes at `data`) until the handler releases it.
            unsafe { handler(name.as_ptr(), view.cast_mut().cast(), data.cast(), &info, user as *mut c_void) };
        };
        let config = ShmConfig { dir, ..ShmConfig::default() };
        match Shm::subscribe_views(config, pattern, on_view) {
            Ok(sub) => {
                let p = VIEW_SUBSCRIPTIONS.insert(sub);
                tri!(out_required(out, p.cast_mut().cast(), "out"));
                NERVE_OK
            }
            Err(e @ (nerve_bus::BusError::Pattern(_) | nerve_bus::BusError::Config { .. })) => {
                fail(NERVE_E_INVALID, e.to_string())
            }
            Err(e) => fail(NERVE_E_IO, e.to_string()),
        }
    })
}

/// `nerve_view_subscription_close`.
///
/// # Safety
///
/// None beyond C's: the subscription is looked up, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn nerve_view_subscription_close(sub: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || match VIEW_SUBSCRIPTIONS.remove(sub.cast()) {
        Some(_) => NERVE_OK,
        None => fail(NERVE_E_INVALID, "the subscription is not running (NULL, closed already, or garbage)"),
    })
}

/// An `enum nerve_read_mode` argument.
fn read_mode_arg(mode: c_int) -> Result<ReadMode, c_int> {
    match mode {
        NERVE_READ_NEXT => Ok(ReadMode::Next),
        NERVE_READ_NEWEST => Ok(ReadMode::Newest),
        other => Err(fail(NERVE_E_INVALID, format!("mode {other} is not an enum nerve_read_mode value"))),
    }
}

/// A `timeout_ns` argument: 0 polls, a negative one waits for ever.
fn wait_arg(timeout_ns: i64) -> Wait {
    match timeout_ns {
        0 => Wait::Poll,
        t if t < 0 => Wait::Forever,
        t => Wait::Timeout(Duration::from_nanos(t as u64)),
    }
}

/// `nerve_channel_skip_to_newest`.
///
/// # Safety
///
/// None beyond C's: the handle is looked up first.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_skip_to_newest(channel: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let h = tri!(channel_of(channel));
        let newest = h.channel().newest_seq();
        h.reader().seek(newest);
        NERVE_OK
    })
}

/// `nerve_channel_stats_get`.
///
/// # Safety
///
/// `stats` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_channel_stats_get(channel: *const c_void, stats: *mut NerveChannelStats) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let h = tri!(channel_of(channel));
        let s = h.channel().stats();
        let out = NerveChannelStats {
            frames: s.frames,
            frame_size: s.frame_size,
            messages: s.messages,
            writer_opens: s.writer_opens,
            reader_opens: s.reader_opens,
            recoveries: s.recoveries,
            waiting_readers: s.waiting_readers,
            mode: s.mode,
        };
        tri!(out_required(stats, out, "stats"));
        NERVE_OK
    })
}
