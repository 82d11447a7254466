//! Everything in liblcm that differs between operating systems (the rest has no `cfg`): the 64-bit seek and tell of
//! a C stream that `lcm_eventlog_*` use, POSIX's `fseeko` / `ftello` on Unix, the C runtime's `_fseeki64` /
//! `_ftelli64` on Windows (as LCM's own Windows build maps them), so a log past 2 GiB seeks on both. What
//! `lcm_get_fileno` returns is nerve-c-common's `descriptor`.

#[cfg(windows)]
use std::ffi::c_int;

/// A stream offset: 64 bits everywhere.
pub type Offset = i64;

#[cfg(unix)]
pub use libc::{fseeko, ftello};

#[cfg(windows)]
extern "C" {
    /// `fseeko`'s twin in the C runtime (msvcrt, ucrt).
    #[link_name = "_fseeki64"]
    pub fn fseeko(stream: *mut libc::FILE, offset: Offset, whence: c_int) -> c_int;
    /// `ftello`'s twin.
    #[link_name = "_ftelli64"]
    pub fn ftello(stream: *mut libc::FILE) -> Offset;
}

// On Unix the offset type is off_t, 64 bits on every system Nerve builds for.
#[cfg(unix)]
const _: () = assert!(std::mem::size_of::<libc::off_t>() == std::mem::size_of::<Offset>());
