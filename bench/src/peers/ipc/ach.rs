//! Ach's C API on nerve-shm (`bindings/c/ach`, issue 25) as a latency peer: the calls an Ach program makes
//! (`ach_create`, `ach_open`, `ach_put`, `ach_get`), through the same `extern "C"` entry points a C program links
//! against, on a channel of the same sizes as the `shm-*` rows' (512 frames of 64 bytes). Set beside those rows, it
//! shows what Ach's API costs on top of nerve-shm itself.
//!
//! - `ach-wait`: the receiver sleeps in `ach_get(.., ACH_O_WAIT | ACH_O_RELTIME)` with a 50 ms timeout;
//! - `ach-poll`: the receiver spins on `ach_get(.., 0)` (`ACH_STALE_FRAMES` when there is nothing new).
//!
//! An Ach channel name has no directory: a target `DIR/NAME` sets `NERVE_SHM_DIR` to `DIR` in the peer process
//! (before any channel call; each peer is a process of its own) and uses `NAME`.

#![allow(unsafe_code)] // Calls into libach's C ABI; each block says why its pointers are valid.

use std::ffi::{c_int, CString};
use std::mem::MaybeUninit;
use std::path::Path;

use ach::layout::AchChannelT;
use ach::status::{ACH_EEXIST, ACH_MISSED_FRAME, ACH_OK, ACH_STALE_FRAMES, ACH_TIMEOUT};
use ach::{ach_close, ach_create, ach_errstr, ach_get, ach_open, ach_put, text, ACH_O_RELTIME, ACH_O_WAIT};

use super::{Got, IpcError, Rx, Tx, SIZE};
use crate::harness::clock::mono_ns;

/// Frames of a channel (as the `shm-*` rows').
const FRAMES: usize = 512;

/// How long one waiting `ach_get` sleeps before returning [`Got::Idle`].
const SLICE_NS: i64 = 50_000_000;

/// An error of an ach call, with its status name and `ach_errstr()`.
fn ach_err(what: &str, status: c_int) -> IpcError {
    // SAFETY: both return non-NULL NUL-terminated strings the library keeps alive.
    let (name, detail) = unsafe { (text(ach::ach_result_to_string(status)), text(ach_errstr())) };
    IpcError::bad(format!("{what}: {name}: {detail}"))
}

/// An open handle; closed on drop. Held inline, where a C program keeps its `ach_channel_t` (a global, or a field of
/// its state), not behind a pointer of its own: a put after the sender's sleep then misses the cache lines a C
/// program's would, and no more. (A handle may move between calls: libach keeps no pointer to it.)
struct Handle(MaybeUninit<AchChannelT>);

impl Handle {
    /// Makes the channel `DIR/NAME` if it does not exist (both receivers of a fan-out try) and opens it.
    fn open(target: &str, create: bool) -> Result<Handle, IpcError> {
        let p = Path::new(target);
        let (dir, name) = match (p.parent(), p.file_name().and_then(|n| n.to_str())) {
            (Some(d), Some(n)) if !d.as_os_str().is_empty() => (d, n),
            _ => return Err(IpcError::bad(format!("ach target {target:?} is not DIR/NAME"))),
        };
        std::env::set_var(nerve_shm::DIR_ENV, dir);
        let name = CString::new(name).map_err(|_| IpcError::bad(format!("ach target {target:?} has a NUL")))?;
        if create {
            // SAFETY: a NUL-terminated name; NULL attributes are allowed.
            let r = unsafe { ach_create(name.as_ptr(), FRAMES, SIZE, std::ptr::null_mut()) };
            if r != ACH_OK && r != ACH_EEXIST {
                return Err(ach_err(&format!("ach_create {target}"), r));
            }
        }
        let mut h = Handle(MaybeUninit::zeroed());
        // SAFETY: a writable ach_channel_t, a NUL-terminated name, NULL attributes.
        let r = unsafe { ach_open(h.0.as_mut_ptr(), name.as_ptr(), std::ptr::null_mut()) };
        if r != ACH_OK {
            // Not open: nothing for Drop's ach_close to do (it answers ACH_EINVAL).
            return Err(ach_err(&format!("ach_open {target}"), r));
        }
        Ok(h)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: an ach_channel_t this handle owns, open or refused by ach_close.
        unsafe { ach_close(self.0.as_mut_ptr()) };
    }
}

/// A receiver: one handle.
pub struct AchRx {
    handle: Handle,
    poll: bool,
    missed: u64,
}

impl AchRx {
    /// Makes (if needed) and opens the channel `DIR/NAME`; `poll`: spin instead of waiting.
    pub fn open(target: &str, poll: bool) -> Result<AchRx, IpcError> {
        Ok(AchRx { handle: Handle::open(target, true)?, poll, missed: 0 })
    }
}

impl Rx for AchRx {
    fn recv(&mut self, buf: &mut [u8; SIZE], deadline_ns: u64) -> Result<Got, IpcError> {
        let slice = libc::timespec { tv_sec: 0, tv_nsec: SLICE_NS as _ };
        let (timeout, options) = if self.poll {
            (std::ptr::null(), 0)
        } else {
            (&slice as *const libc::timespec, ACH_O_WAIT | ACH_O_RELTIME)
        };
        let mut spins: u32 = 0;
        loop {
            let mut n = 0usize;
            // SAFETY: an open handle; buf has SIZE writable bytes; n is writable; timeout is NULL or a timespec.
            let r =
                unsafe { ach_get(self.handle.0.as_mut_ptr(), buf.as_mut_ptr().cast(), SIZE, &mut n, timeout, options) };
            match r {
                ACH_OK | ACH_MISSED_FRAME if n == SIZE => {
                    if r == ACH_MISSED_FRAME {
                        // Ach says only that frames were skipped; the receiver's sequence gaps count how many.
                        self.missed += 1;
                    }
                    return Ok(Got::Msg);
                }
                ACH_OK | ACH_MISSED_FRAME => return Err(IpcError::bad(format!("ach: a {n}-byte frame, not {SIZE}"))),
                ACH_TIMEOUT => return Ok(Got::Idle),
                ACH_STALE_FRAMES => {
                    std::hint::spin_loop();
                    spins = spins.wrapping_add(1);
                    if spins & 1023 == 0 && mono_ns() >= deadline_ns {
                        return Ok(Got::Idle);
                    }
                }
                other => return Err(ach_err("ach_get", other)),
            }
        }
    }

    fn missed(&self) -> u64 {
        self.missed
    }
}

/// The sender: one handle on the channel the receivers made.
pub struct AchTx {
    handle: Handle,
}

impl AchTx {
    /// Opens the channel `DIR/NAME`.
    pub fn open(target: &str) -> Result<AchTx, IpcError> {
        Ok(AchTx { handle: Handle::open(target, false)? })
    }
}

impl Tx for AchTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        // SAFETY: an open handle; msg has SIZE readable bytes.
        let r = unsafe { ach_put(self.handle.0.as_mut_ptr(), msg.as_ptr().cast(), SIZE) };
        if r == ACH_OK {
            Ok(())
        } else {
            Err(ach_err("ach_put", r))
        }
    }
}
