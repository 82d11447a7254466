//! The bus over `shm://` as a latency peer, publish to handler, twice: through the Rust API (`nerve_bus::Bus`) and
//! through nerve.h's C ABI (`bindings/c/nerve`: the `nerve_bus_*` entry points a C program links against, with an
//! `extern "C"` handler), so the C rows sit beside the Rust ones they are held to (issue 21: C p50 within 1.1x).
//!
//! - `bus-wait` / `cbus-wait`: the receiver sleeps in `handle_timeout` (50 ms slices);
//! - `bus-poll` / `cbus-poll`: the receiver spins on `handle_timeout` with a zero timeout.
//!
//! A target `DIR/NAME` sets `NERVE_SHM_DIR` to `DIR` in the peer process (before its bus opens; each peer is a
//! process of its own) and uses bus channel `NAME`; the handler copies the message into the receiver's buffer.

#![allow(unsafe_code)] // Calls into libnerve's C ABI; each block says why its pointers are valid.

use std::ffi::{c_int, c_void, CStr, CString};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nerve::bus::{
    nerve_bus_close, nerve_bus_handle_timeout, nerve_bus_open, nerve_bus_publish, nerve_bus_subscribe, NerveReceived,
};
use nerve::status::{NERVE_DROP_OLDEST, NERVE_OK, NERVE_TIMED_OUT};
use nerve_bus::{Bus, Overflow};

use super::{Got, IpcError, Rx, Tx, SIZE};
use crate::harness::clock::mono_ns;

/// How long one waiting `handle_timeout` sleeps before returning [`Got::Idle`].
const SLICE: Duration = Duration::from_millis(50);

/// A subscription's queue: as many messages as the `shm-*` rows' channel has frames.
const CAPACITY: usize = 512;

/// Sets the channel directory from `DIR/NAME` and returns `NAME`.
fn channel_of(target: &str) -> Result<String, IpcError> {
    let p = Path::new(target);
    match (p.parent(), p.file_name().and_then(|n| n.to_str())) {
        (Some(d), Some(n)) if !d.as_os_str().is_empty() => {
            std::env::set_var(nerve_shm::DIR_ENV, d);
            Ok(n.to_owned())
        }
        _ => Err(IpcError::bad(format!("bus target {target:?} is not DIR/NAME"))),
    }
}

/// The last message a handler copied, if one came since the receiver last looked.
struct Slot {
    msg: [u8; SIZE],
    full: bool,
}

impl Default for Slot {
    fn default() -> Slot {
        Slot { msg: [0; SIZE], full: false }
    }
}

impl Slot {
    fn take(&mut self, buf: &mut [u8; SIZE]) -> bool {
        if std::mem::take(&mut self.full) {
            buf.copy_from_slice(&self.msg);
            true
        } else {
            false
        }
    }

    fn put(&mut self, data: &[u8]) {
        if data.len() == SIZE {
            self.msg.copy_from_slice(data);
            self.full = true;
        }
    }
}

/// A Rust bus receiver.
pub struct BusRx {
    bus: Bus,
    slot: Arc<Mutex<Slot>>,
    poll: bool,
}

impl BusRx {
    /// Opens `shm://` and subscribes to the target's channel; `poll`: spin instead of waiting.
    pub fn open(target: &str, poll: bool) -> Result<BusRx, IpcError> {
        let channel = channel_of(target)?;
        let bus = Bus::new(Some("shm://")).map_err(|e| IpcError::bad(format!("Bus::new(shm://): {e}")))?;
        let slot = Arc::new(Mutex::new(Slot::default()));
        let s = Arc::clone(&slot);
        bus.subscribe_with(&channel, CAPACITY, Overflow::DropOldest, move |m| {
            s.lock().unwrap_or_else(|p| p.into_inner()).put(&m.data);
            Ok(())
        })
        .map_err(|e| IpcError::bad(format!("subscribing {channel}: {e}")))?;
        Ok(BusRx { bus, slot, poll })
    }
}

impl Rx for BusRx {
    fn recv(&mut self, buf: &mut [u8; SIZE], deadline_ns: u64) -> Result<Got, IpcError> {
        let timeout = if self.poll { Duration::ZERO } else { SLICE };
        let mut spins: u32 = 0;
        loop {
            let handled = self.bus.handle_timeout(timeout).map_err(|e| IpcError::bad(format!("handle: {e}")))?;
            if handled && self.slot.lock().unwrap_or_else(|p| p.into_inner()).take(buf) {
                return Ok(Got::Msg);
            }
            if !self.poll {
                return Ok(Got::Idle);
            }
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins & 1023 == 0 && mono_ns() >= deadline_ns {
                return Ok(Got::Idle);
            }
        }
    }
}

/// A Rust bus sender.
pub struct BusTx {
    bus: Bus,
    channel: String,
}

impl BusTx {
    /// Opens `shm://` for the target's channel.
    pub fn open(target: &str) -> Result<BusTx, IpcError> {
        let channel = channel_of(target)?;
        let bus = Bus::new(Some("shm://")).map_err(|e| IpcError::bad(format!("Bus::new(shm://): {e}")))?;
        Ok(BusTx { bus, channel })
    }
}

impl Tx for BusTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        self.bus.publish_raw(&self.channel, msg).map_err(|e| IpcError::bad(format!("publish: {e}")))
    }
}

/// An error of a nerve.h call, with its status name and `nerve_last_error()`.
fn c_err(what: &str, status: c_int) -> IpcError {
    // SAFETY: both return NUL-terminated strings the library keeps alive until this thread's next call.
    let (name, detail) =
        unsafe { (CStr::from_ptr(nerve::nerve_status_string(status)), CStr::from_ptr(nerve::nerve_last_error())) };
    IpcError::bad(format!("{what}: {}: {}", name.to_string_lossy(), detail.to_string_lossy()))
}

/// An open `nerve_bus`, closed on drop.
struct CBus(*mut c_void);

impl CBus {
    fn open() -> Result<CBus, IpcError> {
        let mut bus = std::ptr::null_mut();
        // SAFETY: a NUL-terminated URL and a writable out pointer.
        let r = unsafe { nerve_bus_open(c"shm://".as_ptr(), &mut bus) };
        if r != NERVE_OK {
            return Err(c_err("nerve_bus_open", r));
        }
        Ok(CBus(bus))
    }
}

impl Drop for CBus {
    fn drop(&mut self) {
        // SAFETY: a bus this value opened (closing ends its subscriptions).
        unsafe { nerve_bus_close(self.0) };
    }
}

/// The C handler: copies the message into the receiver's slot (`user`).
unsafe extern "C" fn on_message(msg: *const NerveReceived, user: *mut c_void) {
    // SAFETY: libnerve passes a valid message for the call; `user` is the receiver's boxed Slot, which outlives the
    // subscription (the bus, which ends it, is dropped first) and is touched only on this thread.
    unsafe {
        let m = &*msg;
        (*user.cast::<Slot>()).put(std::slice::from_raw_parts(m.data.cast::<u8>(), m.len));
    }
}

/// A receiver through nerve.h.
pub struct CBusRx {
    // Field order: the bus (and its subscription) goes before the slot its handler writes to.
    bus: CBus,
    slot: Box<Slot>,
    poll: bool,
}

impl CBusRx {
    /// Opens `shm://` and subscribes to the target's channel through nerve.h.
    pub fn open(target: &str, poll: bool) -> Result<CBusRx, IpcError> {
        let channel = CString::new(channel_of(target)?).map_err(|_| IpcError::bad("bus channel has a NUL"))?;
        let bus = CBus::open()?;
        let mut slot = Box::<Slot>::default();
        let mut sub = std::ptr::null_mut();
        let user: *mut Slot = &mut *slot;
        // SAFETY: an open bus, a NUL-terminated pattern, a handler of nerve_handler's type, a user pointer that lives
        // as long as the subscription, a writable out pointer.
        let r = unsafe {
            nerve_bus_subscribe(
                bus.0,
                channel.as_ptr(),
                CAPACITY,
                NERVE_DROP_OLDEST,
                Some(on_message),
                user.cast(),
                &mut sub,
            )
        };
        if r != NERVE_OK {
            return Err(c_err("nerve_bus_subscribe", r));
        }
        Ok(CBusRx { bus, slot, poll })
    }
}

impl Rx for CBusRx {
    fn recv(&mut self, buf: &mut [u8; SIZE], deadline_ns: u64) -> Result<Got, IpcError> {
        let timeout_ns = if self.poll { 0 } else { SLICE.as_nanos() as i64 };
        let mut spins: u32 = 0;
        loop {
            // SAFETY: an open bus.
            let r = unsafe { nerve_bus_handle_timeout(self.bus.0, timeout_ns) };
            match r {
                NERVE_OK if self.slot.take(buf) => return Ok(Got::Msg),
                NERVE_OK | NERVE_TIMED_OUT => {}
                other => return Err(c_err("nerve_bus_handle_timeout", other)),
            }
            if !self.poll {
                return Ok(Got::Idle);
            }
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins & 1023 == 0 && mono_ns() >= deadline_ns {
                return Ok(Got::Idle);
            }
        }
    }
}

/// A sender through nerve.h.
pub struct CBusTx {
    bus: CBus,
    channel: CString,
}

impl CBusTx {
    /// Opens `shm://` for the target's channel through nerve.h.
    pub fn open(target: &str) -> Result<CBusTx, IpcError> {
        let channel = CString::new(channel_of(target)?).map_err(|_| IpcError::bad("bus channel has a NUL"))?;
        Ok(CBusTx { bus: CBus::open()?, channel })
    }
}

impl Tx for CBusTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        // SAFETY: an open bus, a NUL-terminated channel, SIZE readable bytes.
        let r = unsafe { nerve_bus_publish(self.bus.0, self.channel.as_ptr(), msg.as_ptr().cast(), SIZE) };
        if r == NERVE_OK {
            Ok(())
        } else {
            Err(c_err("nerve_bus_publish", r))
        }
    }
}
