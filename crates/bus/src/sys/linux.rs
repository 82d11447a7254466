//! Linux: the readable level is an eventfd (one counter, no buffer; written and drained by one system call each).

use std::io;
use std::os::fd::AsFd;

use nix::sys::eventfd::{EfdFlags, EventFd};

use super::Handle;

/// A descriptor that polls readable from [`Notify::raise`] until [`Notify::lower`].
pub(crate) struct Notify(EventFd);

impl Notify {
    pub(crate) fn new() -> io::Result<Notify> {
        Ok(Notify(EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?))
    }

    /// Makes it readable (again: the counter only grows).
    #[inline]
    pub(crate) fn raise(&self) {
        let _ = self.0.write(1);
    }

    /// Makes it unreadable (a read resets the counter; one that finds it at 0 fails with EAGAIN, harmlessly).
    #[inline]
    pub(crate) fn lower(&self) {
        let _ = self.0.read();
    }

    pub(crate) fn handle(&self) -> Handle<'_> {
        self.0.as_fd()
    }
}
