//! The few system calls the latency peers need that `std` does not wrap: `mkfifo`, POSIX message queues, a shared
//! mapping of a file, and futex wait/wake on a word in it. Every `unsafe` block of the `ipc` module lives here.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64};

use super::IpcError;

fn cstr(s: &str, what: &str) -> Result<CString, IpcError> {
    CString::new(s).map_err(|_| IpcError::bad(format!("{what} {s:?} contains a NUL byte")))
}

fn path_cstr(p: &Path) -> Result<CString, IpcError> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| IpcError::bad(format!("path {} contains a NUL byte", p.display())))
}

/// `mkfifo(path, 0600)`.
pub fn mkfifo(path: &Path) -> Result<(), IpcError> {
    let c = path_cstr(path)?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(IpcError::os(format!("mkfifo {}", path.display()), io::Error::last_os_error()));
    }
    Ok(())
}

/// A POSIX message queue descriptor (closed on drop).
pub struct Mq {
    mqd: libc::mqd_t,
    name: String,
}

/// `CLOCK_REALTIME` + `ms` as a timespec (POSIX queues time out against the realtime clock).
fn realtime_after(ms: u64) -> libc::timespec {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the valid local it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    let ns = ts.tv_nsec as u64 + (ms % 1000) * 1_000_000;
    libc::timespec {
        tv_sec: ts.tv_sec + (ms / 1000) as libc::time_t + (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

impl Mq {
    /// Creates (or opens) the queue `name` for reading, `msgsize` bytes per message, at most `maxmsg` messages
    /// (falling back to 10, the unprivileged default limit, when the system refuses more).
    pub fn create_reader(name: &str, msgsize: usize, maxmsg: usize) -> Result<Mq, IpcError> {
        let c = cstr(name, "queue name")?;
        let mut last = None;
        for max in [maxmsg, 10] {
            // SAFETY: mq_attr is plain data; all-zero is a valid value that we then fill in.
            let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
            attr.mq_maxmsg = max as libc::c_long;
            attr.mq_msgsize = msgsize as libc::c_long;
            // SAFETY: `c` is NUL-terminated; with O_CREAT mq_open reads a mode_t and a pointer to a valid mq_attr
            // that outlives the call.
            let mqd = unsafe {
                libc::mq_open(
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_CREAT | libc::O_CLOEXEC,
                    0o600 as libc::mode_t,
                    &attr as *const libc::mq_attr,
                )
            };
            if mqd != -1 {
                return Ok(Mq { mqd, name: name.to_string() });
            }
            last = Some(io::Error::last_os_error());
        }
        Err(IpcError::os(format!("mq_open {name} (create)"), last.unwrap_or_else(io::Error::last_os_error)))
    }

    /// Opens an existing queue for writing.
    pub fn open_writer(name: &str) -> Result<Mq, IpcError> {
        let c = cstr(name, "queue name")?;
        // SAFETY: `c` is NUL-terminated; without O_CREAT mq_open takes no further arguments.
        let mqd = unsafe { libc::mq_open(c.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        if mqd == -1 {
            return Err(IpcError::os(format!("mq_open {name} (write)"), io::Error::last_os_error()));
        }
        Ok(Mq { mqd, name: name.to_string() })
    }

    /// Receives one message into `buf`, waiting at most `ms`; `Ok(None)` on timeout.
    pub fn receive(&self, buf: &mut [u8], ms: u64) -> Result<Option<usize>, IpcError> {
        let ts = realtime_after(ms);
        // SAFETY: `buf` is valid for writes of its length (at least the queue's message size, checked by the kernel,
        // which fails with EMSGSIZE otherwise); `ts` is a valid local; a null priority pointer is allowed.
        let n =
            unsafe { libc::mq_timedreceive(self.mqd, buf.as_mut_ptr().cast(), buf.len(), std::ptr::null_mut(), &ts) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ETIMEDOUT) | Some(libc::EINTR) => Ok(None),
            _ => Err(IpcError::os(format!("mq_timedreceive {}", self.name), e)),
        }
    }

    /// Sends `msg`, waiting at most `ms` for room.
    pub fn send(&self, msg: &[u8], ms: u64) -> Result<(), IpcError> {
        let ts = realtime_after(ms);
        // SAFETY: `msg` is valid for reads of its length; `ts` is a valid local.
        let r = unsafe { libc::mq_timedsend(self.mqd, msg.as_ptr().cast(), msg.len(), 0, &ts) };
        if r != 0 {
            return Err(IpcError::os(format!("mq_timedsend {}", self.name), io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Removes the queue's name (the queue lives on until every descriptor is closed).
    pub fn unlink(name: &str) {
        if let Ok(c) = CString::new(name) {
            // SAFETY: `c` is NUL-terminated; unlinking a name that does not exist only returns ENOENT.
            unsafe { libc::mq_unlink(c.as_ptr()) };
        }
    }
}

impl Drop for Mq {
    fn drop(&mut self) {
        // SAFETY: `mqd` is a descriptor this value opened and nobody else closes.
        unsafe { libc::mq_close(self.mqd) };
    }
}

/// A shared, writable mapping of a whole file (unmapped on drop).
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
    _fd: OwnedFd,
}

impl Mapping {
    /// Opens `path` (creating it with mode 0600 when `create`), makes it at least `len` bytes long and maps `len`
    /// bytes of it shared. A new file reads as zeros.
    pub fn open(path: &Path, len: usize, create: bool) -> Result<Mapping, IpcError> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .mode(0o600)
            .open(path)
            .map_err(|e| IpcError::os(format!("opening {}", path.display()), e))?;
        let have = file.metadata().map_err(|e| IpcError::os(format!("stat {}", path.display()), e))?.len();
        if have < len as u64 {
            file.set_len(len as u64).map_err(|e| IpcError::os(format!("ftruncate {}", path.display()), e))?;
        }
        let fd = OwnedFd::from(file);
        // SAFETY: a fresh shared mapping of a descriptor we own, at least `len` bytes long (made so above); the
        // kernel picks the address. Only the benchmark's own processes use these files and none shrinks them.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(IpcError::os(format!("mmap {}", path.display()), io::Error::last_os_error()));
        }
        Ok(Mapping { ptr: ptr.cast(), len, _fd: fd })
    }

    /// The 32-bit atomic at byte `offset` (which must be 4-aligned and in bounds: a bad offset is a bug, so it
    /// panics rather than returning an error).
    pub fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        assert!(offset & 3 == 0 && offset + 4 <= self.len, "atomic_u32 at {offset} in a mapping of {}", self.len);
        // SAFETY: in bounds and aligned (checked above; the mapping is page aligned); the memory stays mapped for as
        // long as `&self` lives; every process touches these words only through atomics, so sharing them is sound.
        unsafe { &*(self.ptr.add(offset) as *const AtomicU32) }
    }

    /// The 64-bit atomic at byte `offset` (8-aligned and in bounds, as for [`Mapping::atomic_u32`]).
    pub fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        assert!(offset & 7 == 0 && offset + 8 <= self.len, "atomic_u64 at {offset} in a mapping of {}", self.len);
        // SAFETY: as in atomic_u32: in bounds, aligned, mapped while `&self` lives, only ever accessed atomically.
        unsafe { &*(self.ptr.add(offset) as *const AtomicU64) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned; the borrows handed out by the users of this mapping
        // (see floor.rs) do not outlive it.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// `FUTEX_WAIT` (shared, not private: the word is in a mapping shared between processes) while `*word == expected`,
/// for at most `ms`. Returns on a wake-up, a timeout, a signal or a changed word alike; the caller re-checks.
pub fn futex_wait(word: &AtomicU32, expected: u32, ms: u64) {
    let ts = libc::timespec { tv_sec: (ms / 1000) as libc::time_t, tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long };
    // SAFETY: `word` is a valid, aligned 32-bit atomic for the duration of the call; `ts` is a valid local relative
    // timeout; the remaining arguments are unused by FUTEX_WAIT.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// `FUTEX_WAKE` of every waiter on `word` (shared).
pub fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: `word` is a valid, aligned 32-bit atomic; FUTEX_WAKE reads no other argument.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}
