//! Everything in the bus that differs between operating systems, behind one small interface (the rest of the crate
//! has no `cfg` but the shm provider's, which is Linux only):
//!
//! - [`Notify`]: the level that is readable while callbacks wait (`Bus::fileno`): an eventfd on Linux (`linux`),
//!   a loopback UDP socket connected to itself everywhere else (`portable`), which select, poll and Windows's
//!   `WSAPoll` all wait on as they would on LCM's own descriptor;
//! - [`Handle`] and [`RawHandle`], what `Bus::as_fd` and `Bus::fileno` hand out: a file descriptor on Unix, a
//!   socket on Windows;
//! - [`poll_readable`]: waiting for any of several UDP sockets (the mpudpm receive thread), and [`is_readable`]
//!   (the conformance suite's look at a bus's descriptor): `poll(2)` on Unix (`unix`), `WSAPoll` on Windows
//!   (`windows`).

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::Notify;

#[cfg(not(target_os = "linux"))]
mod portable;
#[cfg(not(target_os = "linux"))]
pub(crate) use portable::Notify;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::*;
#[cfg(unix)]
pub use unix::{Handle, RawHandle};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;
#[cfg(windows)]
pub use windows::{Handle, RawHandle};
