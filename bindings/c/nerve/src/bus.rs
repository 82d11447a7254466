//! nerve.h's bus: `nerve_bus` (a bus by URL, over every provider) and `nerve_subscription` (a C callback on a channel
//! pattern, with its queue capacity and overflow policy). The bookkeeping (which subscriptions a bus has, closing a
//! bus ends them) is nerve-c-common's [`BusHandle`], shared with liblcm; this module is the C shapes and statuses.
//! Handlers run inside `nerve_bus_handle*` on the calling thread; the bus's own panic guard
//! (`BusError::HandlerPanicked`) and [`guard`] keep any Rust panic on this side.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Arc;
use std::time::Duration;

use nerve_bus::{Bus, BusError, Origin, Overflow, Received};
use nerve_c_common::{guard, BusHandle, Registry, SubHandle, UnsubscribeError};

use super::status::*;
use super::{bytes_arg, fail, out_required, text_arg};

/// Every open `nerve_bus`.
pub static BUSES: Registry<BusHandle> = Registry::new();
/// Every live `nerve_subscription`.
pub static SUBSCRIPTIONS: Registry<SubHandle> = Registry::new();

/// `nerve_received`: one message as a handler sees it (valid during the call).
#[repr(C)]
pub struct NerveReceived {
    /// The channel, NUL-terminated.
    pub channel: *const c_char,
    /// The bytes.
    pub data: *const c_void,
    /// Their length.
    pub len: usize,
    /// When it arrived, microseconds since the epoch.
    pub recv_utime: i64,
    /// 1 if published through this same bus, 0 if it came from the transport.
    pub local: c_int,
}

/// `nerve_handler`.
pub type NerveHandler = unsafe extern "C" fn(msg: *const NerveReceived, user: *mut c_void);

/// `nerve_subscription_stats`.
#[repr(C)]
pub struct NerveSubscriptionStats {
    /// Messages that matched and were queued.
    pub received: u64,
    /// Messages handed to the handler.
    pub delivered: u64,
    /// Messages dropped because the queue was full.
    pub dropped: u64,
    /// Messages waiting in the queue now.
    pub queued: u64,
}

fn fail_bus(e: &BusError) -> c_int {
    let status = match e {
        BusError::Url(_)
        | BusError::UnknownProvider { .. }
        | BusError::UnknownOption { .. }
        | BusError::Config { .. }
        | BusError::Pattern(_)
        | BusError::NotSubscribed => NERVE_E_INVALID,
        BusError::HandleInsideHandler => NERVE_E_BUSY,
        BusError::Transport { .. } => NERVE_E_IO,
        _ => NERVE_E_INTERNAL,
    };
    fail(status, e.to_string())
}

fn bus_of(p: *const c_void) -> Result<Arc<BusHandle>, c_int> {
    BUSES.get(p.cast()).ok_or_else(|| fail(NERVE_E_INVALID, "the bus handle is not open (NULL, closed, or garbage)"))
}

fn subscription_of(p: *const c_void) -> Result<Arc<SubHandle>, c_int> {
    SUBSCRIPTIONS
        .get(p.cast())
        .ok_or_else(|| fail(NERVE_E_INVALID, "the subscription handle is not live (NULL, ended, or garbage)"))
}

/// `nerve_bus_open`.
///
/// # Safety
///
/// `url` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_bus_open(url: *const c_char, out: *mut *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let url = if url.is_null() { None } else { Some(tri!(text_arg(url, "url"))) };
        if out.is_null() || !out.is_aligned() {
            return fail(NERVE_E_INVALID, "out is NULL or misaligned");
        }
        let bus = match Bus::new(url) {
            Ok(b) => b,
            Err(e) => return fail_bus(&e),
        };
        let ptr = BUSES.insert(BusHandle::new(bus));
        tri!(out_required(out, ptr as *mut c_void, "out"));
        NERVE_OK
    })
}

/// `nerve_bus_close`.
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn nerve_bus_close(bus: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || match BUSES.remove(bus.cast()) {
        Some(b) => {
            b.unsubscribe_all(&SUBSCRIPTIONS);
            match b.bus.flush() {
                Ok(()) => NERVE_OK,
                Err(e) => fail_bus(&e),
            }
        }
        None => fail(NERVE_E_INVALID, "the bus handle is not open (NULL, closed, or garbage)"),
    })
}

/// `nerve_bus_publish`.
///
/// # Safety
///
/// `channel` is NULL or a NUL-terminated string; `data` is NULL (with `len` 0) or points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn nerve_bus_publish(
    bus: *mut c_void,
    channel: *const c_char,
    data: *const c_void,
    len: usize,
) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let b = tri!(bus_of(bus));
        let channel = tri!(text_arg(channel, "channel"));
        let bytes = tri!(bytes_arg(data, len));
        match b.bus.publish_raw(channel, bytes) {
            Ok(()) => NERVE_OK,
            Err(e) => fail_bus(&e),
        }
    })
}

/// `nerve_bus_subscribe`.
///
/// # Safety
///
/// `pattern` is NULL or a NUL-terminated string; `handler` is NULL or a function that stays callable while the
/// subscription lives; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_bus_subscribe(
    bus: *mut c_void,
    pattern: *const c_char,
    capacity: usize,
    overflow: c_int,
    handler: Option<NerveHandler>,
    user: *mut c_void,
    out: *mut *mut c_void,
) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let b = tri!(bus_of(bus));
        let pattern = tri!(text_arg(pattern, "pattern"));
        let overflow = match overflow {
            NERVE_DROP_OLDEST => Overflow::DropOldest,
            NERVE_DROP_NEWEST => Overflow::DropNewest,
            other => return fail(NERVE_E_INVALID, format!("overflow {other} is not an enum nerve_overflow value")),
        };
        let Some(handler) = handler else { return fail(NERVE_E_INVALID, "handler is NULL") };
        if out.is_null() || !out.is_aligned() {
            return fail(NERVE_E_INVALID, "out is NULL or misaligned");
        }
        let user = user as usize;
        let on_message = move |m: &Received| {
            // A channel name with a NUL inside cannot be handed to C (no transport carries one).
            let Ok(name) = CString::new(m.channel.as_bytes()) else { return Ok(()) };
            let msg = NerveReceived {
                channel: name.as_ptr(),
                data: m.data.as_ptr().cast(),
                len: m.data.len(),
                recv_utime: m.recv_utime,
                local: c_int::from(m.origin == Origin::Local),
            };
            // SAFETY: the caller of nerve_bus_subscribe promised a callable handler; `msg` and what it points to
            // live for the whole call (nerve.h: valid only during the call).
            unsafe { handler(&msg, user as *mut c_void) };
            Ok(())
        };
        match b.subscribe(bus as *const BusHandle, &SUBSCRIPTIONS, pattern, capacity, overflow, on_message) {
            Ok(ptr) => {
                tri!(out_required(out, ptr as *mut c_void, "out"));
                NERVE_OK
            }
            Err(e) => fail_bus(&e),
        }
    })
}

/// `nerve_bus_unsubscribe`.
///
/// # Safety
///
/// Any pointers are accepted.
#[no_mangle]
pub unsafe extern "C" fn nerve_bus_unsubscribe(bus: *mut c_void, sub: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let b = tri!(bus_of(bus));
        match b.unsubscribe(bus as *const BusHandle, &SUBSCRIPTIONS, sub as *const SubHandle) {
            Ok(()) => NERVE_OK,
            Err(UnsubscribeError::Unknown) => {
                fail(NERVE_E_INVALID, "the subscription handle is not live (NULL, ended, or garbage)")
            }
            Err(UnsubscribeError::OtherBus) => fail(NERVE_E_INVALID, "the subscription belongs to another bus"),
            Err(UnsubscribeError::Bus(e)) => fail_bus(&e),
        }
    })
}

/// `nerve_bus_handle`.
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn nerve_bus_handle(bus: *mut c_void) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let b = tri!(bus_of(bus));
        match b.bus.handle() {
            Ok(()) => NERVE_OK,
            Err(e) => fail_bus(&e),
        }
    })
}

/// `nerve_bus_handle_timeout`.
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn nerve_bus_handle_timeout(bus: *mut c_void, timeout_ns: i64) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let b = tri!(bus_of(bus));
        let result = if timeout_ns < 0 {
            b.bus.handle().map(|()| true)
        } else {
            b.bus.handle_timeout(Duration::from_nanos(timeout_ns as u64))
        };
        match result {
            Ok(true) => NERVE_OK,
            Ok(false) => NERVE_TIMED_OUT,
            Err(e) => fail_bus(&e),
        }
    })
}

/// `nerve_bus_fileno`.
///
/// # Safety
///
/// `fd` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_bus_fileno(bus: *mut c_void, fd: *mut c_int) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let b = tri!(bus_of(bus));
        match b.bus.fileno() {
            Ok(f) => {
                tri!(out_required(fd, nerve_c_common::descriptor(f), "fd"));
                NERVE_OK
            }
            Err(e) => fail_bus(&e),
        }
    })
}

/// `nerve_subscription_set_capacity`.
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn nerve_subscription_set_capacity(sub: *mut c_void, capacity: usize) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let s = tri!(subscription_of(sub));
        match s.bus.set_queue_capacity(&s.subscription, capacity) {
            Ok(()) => NERVE_OK,
            Err(e) => fail_bus(&e),
        }
    })
}

/// `nerve_subscription_stats_get`.
///
/// # Safety
///
/// `stats` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nerve_subscription_stats_get(sub: *mut c_void, stats: *mut NerveSubscriptionStats) -> c_int {
    guard(NERVE_E_INTERNAL, || {
        let s = tri!(subscription_of(sub));
        let (st, queued) = match (s.bus.stats(&s.subscription), s.bus.queue_len(&s.subscription)) {
            (Ok(st), Ok(q)) => (st, q),
            (Err(e), _) | (_, Err(e)) => return fail_bus(&e),
        };
        let value = NerveSubscriptionStats {
            received: st.received,
            delivered: st.delivered,
            dropped: st.dropped_overflow + st.dropped_limit,
            queued: queued as u64,
        };
        tri!(out_required(stats, value, "stats"));
        NERVE_OK
    })
}
