//! liblcm: the C API of LCM 1.5.3 (`include/lcm/lcm.h`) over Nerve's bus, with LCM's symbol
//! names, soname (`liblcm.so.1`) and struct layouts, so a program built against the real liblcm runs on this one
//! with `LD_LIBRARY_PATH` alone, and one built against our headers runs on either. `lcm_create` takes any URL the
//! bus understands (`udpm://`, `memq://`, `shm://`, `inproc://`, `file://`, ...). The event-log half
//! (`lcm/eventlog.h`) is [`eventlog`].
//!
//! # Brief overview
//!
//! An `lcm_t *` is a [`BusHandle`] in [`INSTANCES`] (a [`Bus`] and the subscriptions made on it, bookkeeping shared
//! with libnerve in nerve-c-common); an `lcm_subscription_t *` is a [`SubHandle`] in [`SUBSCRIPTIONS`]. Every entry point runs under [`guard`] and looks its
//! handles up before using them, so NULL, destroyed and garbage handles get LCM's error value (-1 or NULL), never a
//! dereference. Handlers run inside `lcm_handle` on the caller's thread (the bus's dispatch), with an
//! `lcm_recv_buf_t` pointing into the received message.
//!
//! # Semantics (LCM's, except where docs/lcm-differences.md says)
//!
//! A process receives its own messages; `lcm_handle` waits for one message and dispatches it to every matching
//! subscription; `lcm_handle_timeout` returns >0 when it handled a message, 0 on timeout, <0 on error (a negative
//! timeout is an error, as in LCM); one thread at a time is inside `lcm_handle` per `lcm_t` (the others wait, as
//! on LCM's handle mutex); a subscription queue's default capacity is LCM's 30, but when full the OLDEST message is dropped
//! (LCM drops the newest), except on `memq://`, where every publication waits for `lcm_handle` as in LCM's memq.
//! docs/lcm-differences.md lists every difference.

#![allow(unsafe_code)] // The C ABI: raw pointers from C at every entry point; each block says why it is sound.
#![deny(missing_docs)]

pub mod eventlog;
mod sys;

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::ThreadId;
use std::time::Duration;

use nerve_bus::{Bus, Overflow};
use nerve_c_common::{descriptor, guard, set_last_error, str_arg, BusHandle, Registry, SubHandle, UnsubscribeError};

/// LCM's default subscription queue capacity (lcm.c), kept so programs see the same bound.
const DEFAULT_QUEUE_CAPACITY: usize = 30;

/// `lcm_recv_buf_t`, at LCM's layout: what a handler is given about the message it handles.
#[repr(C)]
pub struct RecvBuf {
    /// The message's bytes (valid only during the handler call).
    pub data: *mut c_void,
    /// Their length.
    pub data_size: u32,
    /// When it was received, microseconds since the epoch.
    pub recv_utime: i64,
    /// The `lcm_t` that received it.
    pub lcm: *mut c_void,
}

/// `lcm_msg_handler_t`.
pub type MsgHandler = unsafe extern "C" fn(rbuf: *const RecvBuf, channel: *const c_char, user_data: *mut c_void);

/// Every live `lcm_t` (a bus and the subscriptions made on it).
pub static INSTANCES: Registry<BusHandle> = Registry::new();
/// Every live `lcm_subscription_t`.
pub static SUBSCRIPTIONS: Registry<SubHandle> = Registry::new();

/// What `lcm_handle` keeps per `lcm_t` beside the bus: LCM's handle mutex and whether receiving has ended.
#[derive(Default)]
struct HandleState {
    /// The thread inside `lcm_handle` / `lcm_handle_timeout`, if any.
    inside: Mutex<Option<ThreadId>>,
    free: Condvar,
    /// Receiving stopped for good (a `file://` log played to its end): every later call fails, as in LCM.
    ended: std::sync::atomic::AtomicBool,
}

/// [`HandleState`] of every live `lcm_t`, by address.
static HANDLE_STATES: Mutex<Option<HashMap<usize, Arc<HandleState>>>> = Mutex::new(None);

fn handle_state(lcm: *mut c_void) -> Arc<HandleState> {
    let mut map = HANDLE_STATES.lock().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(map.get_or_insert_with(HashMap::new).entry(lcm as usize).or_default())
}

/// Runs one `handle` call as LCM does: -1 for ever once receiving has ended, and with `exclusive` (`lcm_handle`)
/// one thread at a time per `lcm_t`, as LCM's handle mutex makes it (a second `lcm_handle` waits until the first
/// returns). `lcm_handle_timeout` is not exclusive: LCM waits for a message outside that mutex (select on its
/// descriptor), so a second caller's timeout runs while the first waits; the bus still dispatches each message
/// once, one handler at a time. The thread already inside (a handler calling `lcm_handle`) passes, and the bus
/// refuses it.
fn serialised(lcm: *mut c_void, l: &BusHandle, what: &str, exclusive: bool, call: impl FnOnce() -> c_int) -> c_int {
    let state = handle_state(lcm);
    let me = std::thread::current().id();
    let mut inside = state.inside.lock().unwrap_or_else(PoisonError::into_inner);
    let reentered = !exclusive || *inside == Some(me);
    if !reentered {
        while inside.is_some() {
            inside = state.free.wait(inside).unwrap_or_else(PoisonError::into_inner);
        }
        *inside = Some(me);
    }
    drop(inside);
    let result = if state.ended.load(std::sync::atomic::Ordering::Acquire) {
        report(format!("{what}: receiving has ended (the log was played to its end)"));
        -1
    } else {
        let r = call();
        if r < 0 && l.bus.health().receive_stopped {
            state.ended.store(true, std::sync::atomic::Ordering::Release);
        }
        r
    };
    if !reentered {
        *state.inside.lock().unwrap_or_else(PoisonError::into_inner) = None;
        state.free.notify_one();
    }
    result
}

/// Says why a call failed on stderr, as LCM's C library does (its API has no other channel for the reason), and
/// keeps it as this thread's last error.
fn report(message: String) {
    eprintln!("Error: {message}");
    set_last_error(message);
}

/// `lcm_t *lcm_create(const char *provider)`: NULL or "" means `LCM_DEFAULT_URL` (after `NERVE_URL`), then LCM's
/// default multicast group. NULL on failure, with the reason on stderr.
///
/// # Safety
///
/// `provider` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn lcm_create(provider: *const c_char) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let url = if provider.is_null() {
            None
        } else {
            // SAFETY: not NULL; the caller promises a NUL-terminated string.
            match unsafe { str_arg(provider) } {
                Ok(u) => Some(u),
                Err(_) => {
                    report("lcm_create: the URL is not UTF-8".into());
                    return std::ptr::null_mut();
                }
            }
        };
        match Bus::new(url) {
            Ok(bus) => INSTANCES.insert(BusHandle::new(bus)) as *mut c_void,
            Err(e) => {
                report(format!("lcm_create: {e}"));
                std::ptr::null_mut()
            }
        }
    })
}

/// `void lcm_destroy(lcm_t *lcm)`: unsubscribes everything made on it and closes the bus. NULL or an unknown
/// pointer is ignored.
///
/// # Safety
///
/// Any pointer is accepted (it is looked up, never dereferenced).
#[no_mangle]
pub unsafe extern "C" fn lcm_destroy(lcm: *mut c_void) {
    guard((), || {
        if let Some(instance) = INSTANCES.remove(lcm as *const BusHandle) {
            instance.unsubscribe_all(&SUBSCRIPTIONS);
            if let Some(map) = HANDLE_STATES.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
                map.remove(&(lcm as usize));
            }
        }
    })
}

fn instance(lcm: *mut c_void, what: &str) -> Option<Arc<BusHandle>> {
    let found = INSTANCES.get(lcm as *const BusHandle);
    if found.is_none() {
        set_last_error(format!("{what}: not an lcm_t from lcm_create (NULL, destroyed or garbage)"));
    }
    found
}

/// `int lcm_get_fileno(lcm_t *lcm)`: a descriptor readable while a message waits for `lcm_handle`; -1 on error.
/// On Windows it is a `SOCKET` cast to `int`, as LCM's own Windows build returns (select and `WSAPoll` wait on it).
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn lcm_get_fileno(lcm: *mut c_void) -> c_int {
    guard(-1, || {
        let Some(l) = instance(lcm, "lcm_get_fileno") else { return -1 };
        l.bus.fileno().map(descriptor).unwrap_or_else(|e| {
            report(format!("lcm_get_fileno: {e}"));
            -1
        })
    })
}

/// `lcm_subscription_t *lcm_subscribe(lcm_t *, const char *channel, lcm_msg_handler_t, void *userdata)`:
/// `channel` is a regular expression matched against whole channel names. NULL on error.
///
/// # Safety
///
/// `channel` is NULL or a NUL-terminated string; `handler` is NULL or a function of LCM's handler type, which
/// stays callable while the subscription lives; `userdata` is passed back untouched.
#[no_mangle]
pub unsafe extern "C" fn lcm_subscribe(
    lcm: *mut c_void,
    channel: *const c_char,
    handler: Option<MsgHandler>,
    userdata: *mut c_void,
) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let Some(l) = instance(lcm, "lcm_subscribe") else { return std::ptr::null_mut() };
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let Ok(pattern) = (unsafe { str_arg(channel) }) else {
            set_last_error("lcm_subscribe: the channel is NULL or not UTF-8");
            return std::ptr::null_mut();
        };
        let Some(handler) = handler else {
            set_last_error("lcm_subscribe: the handler is NULL");
            return std::ptr::null_mut();
        };
        let (owner, user) = (lcm as usize, userdata as usize);
        let on_message = move |m: &nerve_bus::Received| {
            // A channel name with a NUL inside cannot be handed to C; no LCM transport carries one.
            let Ok(name) = CString::new(m.channel.as_bytes()) else { return Ok(()) };
            let rbuf = RecvBuf {
                data: m.data.as_ptr() as *mut c_void,
                data_size: m.data.len() as u32,
                recv_utime: m.recv_utime,
                lcm: owner as *mut c_void,
            };
            // SAFETY: the caller of lcm_subscribe promised a callable handler; rbuf, its data and the name live
            // for the whole call, as LCM's handler contract says (the handler must not keep them).
            unsafe { handler(&rbuf, name.as_ptr(), user as *mut c_void) };
            Ok(())
        };
        let this = lcm as *const BusHandle;
        match l.subscribe(this, &SUBSCRIPTIONS, pattern, DEFAULT_QUEUE_CAPACITY, Overflow::DropOldest, on_message) {
            Ok(ptr) => ptr as *mut c_void,
            Err(e) => {
                report(format!("lcm_subscribe: {e}"));
                std::ptr::null_mut()
            }
        }
    })
}

/// `int lcm_unsubscribe(lcm_t *, lcm_subscription_t *)`: 0, or -1 if either is unknown or they do not belong
/// together. Safe inside a handler.
///
/// # Safety
///
/// Any pointers are accepted.
#[no_mangle]
pub unsafe extern "C" fn lcm_unsubscribe(lcm: *mut c_void, handler: *mut c_void) -> c_int {
    guard(-1, || {
        let Some(l) = instance(lcm, "lcm_unsubscribe") else { return -1 };
        match l.unsubscribe(lcm as *const BusHandle, &SUBSCRIPTIONS, handler as *const SubHandle) {
            Ok(()) => 0,
            Err(e) => {
                set_last_error(match e {
                    UnsubscribeError::Unknown => "lcm_unsubscribe: not a live subscription".to_owned(),
                    UnsubscribeError::OtherBus => {
                        "lcm_unsubscribe: the subscription belongs to another lcm_t".to_owned()
                    }
                    UnsubscribeError::Bus(e) => format!("lcm_unsubscribe: {e}"),
                });
                -1
            }
        }
    })
}

/// `int lcm_publish(lcm_t *, const char *channel, const void *data, unsigned int datalen)`: 0, or -1 on error.
///
/// # Safety
///
/// `channel` is NULL or a NUL-terminated string; `data` is NULL (with `datalen` 0) or points to `datalen`
/// readable bytes.
#[no_mangle]
pub unsafe extern "C" fn lcm_publish(
    lcm: *mut c_void,
    channel: *const c_char,
    data: *const c_void,
    datalen: c_uint,
) -> c_int {
    guard(-1, || {
        let Some(l) = instance(lcm, "lcm_publish") else { return -1 };
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let Ok(channel) = (unsafe { str_arg(channel) }) else {
            set_last_error("lcm_publish: the channel is NULL or not UTF-8");
            return -1;
        };
        let bytes: &[u8] = if datalen == 0 {
            &[]
        } else if data.is_null() {
            set_last_error("lcm_publish: data is NULL");
            return -1;
        } else {
            // SAFETY: not NULL; the caller promises `datalen` readable bytes that stay unchanged during the call.
            unsafe { std::slice::from_raw_parts(data as *const u8, datalen as usize) }
        };
        match l.bus.publish_raw(channel, bytes) {
            Ok(()) => 0,
            Err(e) => {
                report(format!("lcm_publish: {e}"));
                -1
            }
        }
    })
}

/// `int lcm_handle(lcm_t *)`: waits for a message and dispatches it; 0, or -1 on error (including a call from
/// inside a handler, and every call once a `file://` log has been played to its end). One thread at a time per
/// `lcm_t`, as in LCM: a second `lcm_handle` waits until the first returns.
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn lcm_handle(lcm: *mut c_void) -> c_int {
    guard(-1, || {
        let Some(l) = instance(lcm, "lcm_handle") else { return -1 };
        serialised(lcm, &l, "lcm_handle", true, || match l.bus.handle() {
            Ok(()) => 0,
            Err(e) => {
                report(format!("lcm_handle: {e}"));
                -1
            }
        })
    })
}

/// `int lcm_handle_timeout(lcm_t *, int timeout_millis)`: >0 when a message was handled, 0 on timeout, <0 on
/// error (a negative timeout is one, as in LCM).
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn lcm_handle_timeout(lcm: *mut c_void, timeout_millis: c_int) -> c_int {
    guard(-1, || {
        let Some(l) = instance(lcm, "lcm_handle_timeout") else { return -1 };
        let Ok(millis) = u64::try_from(timeout_millis) else {
            set_last_error("lcm_handle_timeout: the timeout is negative");
            return -1;
        };
        serialised(lcm, &l, "lcm_handle_timeout", false, || match l.bus.handle_timeout(Duration::from_millis(millis)) {
            Ok(true) => 1,
            Ok(false) => 0,
            Err(e) => {
                report(format!("lcm_handle_timeout: {e}"));
                -1
            }
        })
    })
}

/// `int lcm_subscription_set_queue_capacity(lcm_subscription_t *, int num_messages)`: 0 or -1; 0 or less
/// means no limit, as in LCM.
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn lcm_subscription_set_queue_capacity(handler: *mut c_void, num_messages: c_int) -> c_int {
    guard(-1, || {
        let Some(sub) = SUBSCRIPTIONS.get(handler as *const SubHandle) else {
            set_last_error("lcm_subscription_set_queue_capacity: not a live subscription");
            return -1;
        };
        let capacity = usize::try_from(num_messages).unwrap_or(0);
        match sub.bus.set_queue_capacity(&sub.subscription, capacity) {
            Ok(()) => 0,
            Err(e) => {
                set_last_error(format!("lcm_subscription_set_queue_capacity: {e}"));
                -1
            }
        }
    })
}

/// `int lcm_subscription_get_queue_size(lcm_subscription_t *)`: messages waiting, or -1.
///
/// # Safety
///
/// Any pointer is accepted.
#[no_mangle]
pub unsafe extern "C" fn lcm_subscription_get_queue_size(handler: *mut c_void) -> c_int {
    guard(-1, || {
        let Some(sub) = SUBSCRIPTIONS.get(handler as *const SubHandle) else {
            set_last_error("lcm_subscription_get_queue_size: not a live subscription");
            return -1;
        };
        match sub.bus.queue_len(&sub.subscription) {
            Ok(n) => c_int::try_from(n).unwrap_or(c_int::MAX),
            Err(e) => {
                set_last_error(format!("lcm_subscription_get_queue_size: {e}"));
                -1
            }
        }
    })
}
