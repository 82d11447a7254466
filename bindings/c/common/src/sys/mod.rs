//! Everything in nerve-c-common that differs between operating systems, behind one small interface (the rest of the
//! crate, and liblcm above it, has no `cfg`):
//!
//! - [`ShmHandle`] and [`Got`] (`shm`): nerve-shm channels, which are built on Linux's futexes and /dev/shm and exist
//!   there only; elsewhere `shm_unavailable()` is the error a shm entry point fails with, the bus's own refusal of
//!   `shm://` (which names the transports that work), so every library and tool says it one way;
//! - [`descriptor`]: what `Bus::fileno` returns as the `int` of the C APIs (`lcm_get_fileno`, `nerve_bus_fileno`): a
//!   file descriptor on Unix, a socket on Windows.

#[cfg(target_os = "linux")]
mod shm;
#[cfg(target_os = "linux")]
pub use shm::{Got, ShmHandle};

/// Why a shared-memory entry point cannot run on this system: the bus's own error for `shm://` ("shm:// channels are
/// only available on Linux; on this system use udpm, ...").
#[cfg(not(target_os = "linux"))]
pub fn shm_unavailable() -> String {
    match nerve_bus::Bus::new(Some("shm://")) {
        Err(e) => e.to_string(),
        // Not reached: the bus has no shm provider here. Said the same way if one is ever registered.
        Ok(_) => "shared-memory channels are only available on Linux".to_owned(),
    }
}

/// A bus's descriptor as C's `int`: on Unix the file descriptor itself.
#[cfg(unix)]
pub fn descriptor(fd: std::os::fd::RawFd) -> std::ffi::c_int {
    fd
}

/// A bus's descriptor as C's `int`: on Windows a `SOCKET` (select and `WSAPoll` wait on it), cast to `int` as LCM's own
/// Windows build does in `lcm_get_fileno`. A socket's value is a small kernel handle index, so it fits.
#[cfg(windows)]
pub fn descriptor(socket: std::os::windows::io::RawSocket) -> std::ffi::c_int {
    socket as std::ffi::c_int
}
