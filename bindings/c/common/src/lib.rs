//! The Rust layer that Nerve's C libraries share (DESIGN.md part `bindings/c`): each C library (`libach`,
//! `libnerve`, the LCM-compatible `liblcm`) is a crate of its own under `bindings/c` that declares its C API and maps
//! it onto this one.
//!
//! # Brief overview
//!
//! - [`guard`] runs the body of every C entry point: a Rust panic is caught there and becomes the entry point's error
//!   value (with [`last_error`] saying what happened), so no panic ever unwinds into C.
//! - [`Registry`] keeps the live objects that C holds by pointer, so a handle that is NULL, freed, or garbage is
//!   refused with an error rather than dereferenced.
//! - [`Pool`] does the same for objects that the calls of a control loop reach (Ach's channels): a fixed table whose
//!   handles are checked and held with one atomic add on the object's own slot.
//! - [`set_last_error`] / [`last_error`]: a thread-local message for the last failure, as `errno`'s text.
//! - [`ShmHandle`] is one open nerve-shm channel as a C library holds it: the channel, a reader (its own position in
//!   the channel) and a writer made on the first put, each behind its own lock so one thread may put while another
//!   waits in a get. Linux only, as nerve-shm is: `sys` holds everything that differs between systems.
//! - [`BusHandle`] / [`SubHandle`]: a bus and its callback subscriptions as a C library holds them (libnerve's
//!   `nerve_bus`, liblcm's `lcm_t`).
//!
//! # Design
//!
//! Every C library is its own crate (so each gets its own shared-object name and soname, and its own static library)
//! and depends on this one for everything that is not its API's shape. Entry points take raw pointers and are
//! `unsafe extern "C"`; what can be checked is checked here (NULL, a handle this library never made or already
//! freed); what C cannot tell us (a pointer to memory that is not there) is the caller's contract, written in each
//! header.

#![allow(unsafe_code)] // C strings from C callers (`str_arg`); every block says why it is sound.
#![deny(missing_docs)]

mod bus;
mod pool;
mod registry;
mod sys;

pub use bus::{BusHandle, SubHandle, UnsubscribeError};
pub use pool::Pool;
pub use registry::Registry;
pub use sys::*;

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Runs an entry point's body; a panic becomes `on_panic` (and the last error says so) instead of unwinding into C.
#[inline(always)]
pub fn guard<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            set_last_error(format!("internal error (a bug in Nerve, please report it): {what}"));
            on_panic
        }
    }
}

/// Records `message` as this thread's last error (a NUL inside it is cut off there).
pub fn set_last_error(message: impl Into<String>) {
    let mut bytes = message.into().into_bytes();
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(nul);
    }
    let text = CString::new(bytes).unwrap_or_default();
    // try_with: a thread being torn down has no last error to keep.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = text);
}

/// This thread's last error message (empty if none), valid until this thread's next call into the library.
pub fn last_error() -> *const c_char {
    LAST_ERROR.try_with(|e| e.borrow().as_ptr()).unwrap_or(c"".as_ptr())
}

/// Why a string argument was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrArgError {
    /// The pointer was NULL.
    Null,
    /// The bytes are not UTF-8.
    NotUtf8,
}

/// A NUL-terminated C string argument as UTF-8.
///
/// # Safety
///
/// `p` is NULL or points to a NUL-terminated string that stays valid and unchanged for `'a`.
pub unsafe fn str_arg<'a>(p: *const c_char) -> Result<&'a str, StrArgError> {
    if p.is_null() {
        return Err(StrArgError::Null);
    }
    // SAFETY: not NULL, and the caller promises a NUL-terminated string that lives for 'a.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|_| StrArgError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_error_value_and_the_last_error() {
        let r = guard(-1, || -> i32 { panic!("boom") });
        assert_eq!(r, -1);
        // SAFETY: last_error returns this thread's NUL-terminated message.
        let msg = unsafe { CStr::from_ptr(last_error()) }.to_str().unwrap().to_owned();
        assert!(msg.contains("boom"), "{msg}");
        assert_eq!(guard(-1, || 7), 7);
    }

    #[test]
    fn string_arguments_are_checked() {
        // SAFETY: NULL is allowed; the others are NUL-terminated literals.
        unsafe {
            assert_eq!(str_arg(std::ptr::null()), Err(StrArgError::Null));
            assert_eq!(str_arg(c"pose".as_ptr()), Ok("pose"));
            assert_eq!(str_arg(c"\xff\xfe".as_ptr()), Err(StrArgError::NotUtf8));
        }
        set_last_error("a\0b");
        // SAFETY: as above.
        assert_eq!(unsafe { CStr::from_ptr(last_error()) }.to_bytes(), b"a");
    }
}
