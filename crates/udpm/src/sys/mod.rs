//! Everything that differs between operating systems, behind one small interface (the rest of the crate has no
//! `cfg`):
//!
//! - `linux`: `sendmmsg`/`recvmmsg` batches, UDP GSO and the kernel's drop count;
//! - `portable`: the same functions over one `send_to`/`recv_from` per datagram, for every other system;
//! - `unix` and `windows`: error codes, waiting for a readable socket and naming interfaces.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;

#[cfg(not(target_os = "linux"))]
mod portable;
#[cfg(not(target_os = "linux"))]
pub(crate) use portable::*;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;
