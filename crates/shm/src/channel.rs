//! Channel files: [`ChannelConfig`], creating a channel atomically (a temporary file, fully initialised, then linked
//! under its name), opening one (validating its header before mapping it), listing, removing and chmod-ing them, and
//! their [`ChannelStats`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::ShmError;
use crate::ring::{wait_once, Reader, Shared, Writer};
use crate::sync::Ordering;
#[cfg(not(loom))]
use {
    crate::layout::{Geometry, PREFIX_LEN},
    crate::memory::Memory,
    nerve_codec::now_utime,
    std::fs::{self, OpenOptions},
    std::io,
    std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt},
    std::sync::atomic::{AtomicU64, Ordering as StdOrdering},
};

/// Where channels live unless told otherwise.
pub const DEFAULT_DIR: &str = "/dev/shm";
/// The environment variable that overrides [`DEFAULT_DIR`].
pub const DIR_ENV: &str = "NERVE_SHM_DIR";
/// Channel `NAME` is the file `nerve-NAME` in the channel directory (so listing skips other programs' files).
pub const FILE_PREFIX: &str = "nerve-";
/// The permission bits of a new channel file unless told otherwise: the creating user only.
pub const DEFAULT_MODE: u32 = 0o600;

/// The channel directory: `explicit` if given, else `$NERVE_SHM_DIR` if set and not empty, else `/dev/shm`.
pub fn channel_dir(explicit: Option<&Path>) -> PathBuf {
    match explicit {
        Some(dir) => dir.to_path_buf(),
        None => match std::env::var_os(DIR_ENV) {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => PathBuf::from(DEFAULT_DIR),
        },
    }
}

/// The file of channel `name` in `dir` (see [`channel_dir`]), after checking the name.
pub fn channel_path(name: &str, dir: Option<&Path>) -> Result<PathBuf, ShmError> {
    check_name(name)?;
    Ok(channel_dir(dir).join(format!("{FILE_PREFIX}{name}")))
}

fn check_name(name: &str) -> Result<(), ShmError> {
    let bad = |reason| Err(ShmError::InvalidName { name: name.to_string(), reason });
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > 200 {
        return bad("it is longer than 200 bytes");
    }
    if name.contains('/') || name.contains('\0') {
        return bad("it contains '/' or NUL");
    }
    if name == "." || name == ".." {
        return bad("it is '.' or '..'");
    }
    Ok(())
}

/// What a new channel is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelConfig {
    /// How many messages the index holds (at least 2): the most a reader can fall behind before it misses some.
    pub frames: u64,
    /// The largest message, in bytes. The data ring holds `max(frames, 3)` frames of this size (rounded up to 8).
    pub frame_size: u64,
    /// The file's permission bits ([`DEFAULT_MODE`] by default), set exactly (the umask does not apply).
    pub mode: u32,
    /// The channel directory (see [`channel_dir`]).
    pub dir: Option<PathBuf>,
    /// Whether every frame carries an xxh3-64 checksum of its bytes, which readers check: a reader is then never
    /// handed bytes another process scribbled over as a good message ([`crate::Reader::corrupt_frames`] counts
    /// them). Off by default (a hash of every message on both sides). Fixed when the channel is made: opening an
    /// existing channel keeps its setting. `put` hashes the caller's bytes; a loaned frame is hashed where it lies
    /// when it is committed, so a scribble made while the writer fills a loan is not caught.
    pub checksum: bool,
}

impl ChannelConfig {
    /// `frames` messages of at most `frame_size` bytes, mode 0600, in the default directory.
    pub fn new(frames: u64, frame_size: u64) -> ChannelConfig {
        ChannelConfig { frames, frame_size, mode: DEFAULT_MODE, dir: None, checksum: false }
    }

    /// Sets the file's permission bits.
    pub fn mode(mut self, mode: u32) -> ChannelConfig {
        self.mode = mode;
        self
    }

    /// Makes the channel with per-frame checksums (see [`ChannelConfig::checksum`]).
    pub fn checksum(mut self, checksum: bool) -> ChannelConfig {
        self.checksum = checksum;
        self
    }

    /// Sets the channel directory.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> ChannelConfig {
        self.dir = Some(dir.into());
        self
    }
}

/// A channel's sizes and counters, for `nerve chan ls`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelStats {
    /// `N`: index entries (messages the channel keeps at most).
    pub frames: u64,
    /// `M`: the largest message in bytes.
    pub frame_size: u64,
    /// `C`: the data ring's bytes.
    pub data_bytes: u64,
    /// The whole file's bytes.
    pub file_bytes: u64,
    /// Messages published since creation. Sequence numbers are consecutive from 1, so this is also the newest
    /// sequence number (0: none yet).
    pub messages: u64,
    /// Writers made on this channel since creation, by any process (cumulative: closed writers still count).
    pub writer_opens: u64,
    /// Readers made on this channel since creation, by any process (cumulative).
    pub reader_opens: u64,
    /// Readers registered as sleeping right now (a reader killed while it slept stays counted: harmless).
    pub waiting_readers: u32,
    /// Times a writer found the writer lock's owner dead and recovered the channel (`REC`).
    pub recoveries: u64,
    /// Loans dropped without commit.
    pub aborted_loans: u64,
    /// Whether frames carry checksums ([`ChannelConfig::checksum`]).
    pub checksum: bool,
    /// When the channel was made, in microseconds since the Unix epoch.
    pub created_utime: i64,
    /// The file's permission bits.
    pub mode: u32,
}

/// A channel found by [`Channel::list`].
#[derive(Debug)]
pub struct ListedChannel {
    /// The channel name.
    pub name: String,
    /// Its file.
    pub path: PathBuf,
    /// Its statistics, or why it could not be opened (a foreign or old file, no permission).
    pub stats: Result<ChannelStats, ShmError>,
}

/// An open channel: a mapped channel file. Cheap to clone; [`Writer`]s and [`Reader`]s keep the mapping alive.
///
/// Removing the file does not disturb processes that have it open (they keep the memory, as with Ach); new
/// processes no longer find it.
#[derive(Clone)]
pub struct Channel {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel").field("name", &self.shared.name).field("path", &self.shared.path).finish()
    }
}

impl Channel {
    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The channel file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// `N`: how many messages the channel keeps at most.
    pub fn frames(&self) -> u64 {
        self.shared.geometry().entries
    }

    /// `M`: the largest message in bytes.
    pub fn frame_size(&self) -> u64 {
        self.shared.geometry().max_message
    }

    /// The newest message's sequence number (0: none yet).
    pub fn newest_seq(&self) -> u64 {
        self.shared.header().newest.load(Ordering::Acquire)
    }

    /// Whether the channel file shrank under this handle (another process truncated it): its puts and gets fail
    /// since, and the channel must be opened again (see [`ShmError::Corrupt`]).
    pub fn is_damaged(&self) -> bool {
        self.shared.damaged()
    }

    /// Whether the channel's path still names the file this handle mapped (it was not removed, nor replaced by a
    /// rename over it, since it was opened).
    pub fn is_current(&self) -> bool {
        self.shared.is_current()
    }

    /// A writer on this channel.
    pub fn writer(&self) -> Writer {
        Writer::new(Arc::clone(&self.shared))
    }

    /// A reader whose first [`crate::ReadMode::Next`] get returns the newest message now in the channel (or the first
    /// one put, if it is empty): a late joiner sees the current state at once.
    pub fn reader(&self) -> Reader {
        let newest = self.newest_seq();
        Reader::new(Arc::clone(&self.shared), newest.saturating_sub(1))
    }

    /// A reader whose first get returns the oldest message still in the channel.
    pub fn reader_from_oldest(&self) -> Reader {
        let newest = self.newest_seq();
        Reader::new(Arc::clone(&self.shared), newest.saturating_sub(self.frames()))
    }

    /// A reader that gets only messages put after it was made.
    pub fn reader_after_newest(&self) -> Reader {
        Reader::new(Arc::clone(&self.shared), self.newest_seq())
    }

    /// Waits until the channel's newest sequence number is above `last` or `timeout` passes; returns whether it is.
    /// Sleeps on the channel's futex (in slices of [`crate::WAIT_SLICE`]), so it costs no CPU while waiting.
    ///
    /// To serve several channels from one thread, see [`Channel::wait_any`].
    pub fn wait_for_newer(&self, last: u64, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if self.newest_seq() > last {
                return true;
            }
            let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if remaining == Some(Duration::ZERO) {
                return self.newest_seq() > last;
            }
            wait_once(&self.shared, last, remaining, Duration::ZERO);
        }
    }

    /// Waits until one of several channels has a message newer than the sequence number paired with it, or
    /// `timeout` passes: returns the index of the first such channel, or `None`. One thread sleeps on every
    /// channel's futex word at once (`futex_waitv`, Linux 5.16; up to 128 channels, more are polled between
    /// sleeps), in slices of at most [`crate::WAIT_SLICE`]; on an older kernel it sleeps on the first channel
    /// in slices of a millisecond and polls the others. This is how a bus provider serves many channels from one
    /// thread.
    #[cfg(not(loom))]
    pub fn wait_any(channels: &[(&Channel, u64)], timeout: Duration) -> Option<usize> {
        let ready = || channels.iter().position(|(c, last)| c.newest_seq() > *last);
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if let Some(i) = ready() {
                return Some(i);
            }
            let remaining = deadline.map_or(crate::WAIT_SLICE, |d| d.saturating_duration_since(Instant::now()));
            if remaining.is_zero() || channels.is_empty() {
                return None;
            }
            let sleepers = &channels[..channels.len().min(crate::futex::FUTEX_WAITV_MAX)];
            // G-WAIT for each: read the word, register as a waiter, re-check, then sleep on all words at once.
            let words: Vec<_> = sleepers.iter().map(|(c, _)| c.shared.header().wake.load(Ordering::SeqCst)).collect();
            for (c, _) in sleepers {
                c.shared.header().waiters.fetch_add(1, Ordering::SeqCst);
            }
            let slice = remaining.min(crate::WAIT_SLICE);
            if ready().is_none() {
                let pairs: Vec<_> =
                    sleepers.iter().zip(&words).map(|((c, _), &w)| (&c.shared.header().wake, w)).collect();
                if crate::futex::futex_waitv(&pairs, slice).is_err() {
                    // No futex_waitv (Linux before 5.16): sleep on the first channel only, briefly.
                    channels[0].0.shared.memory.wait(words[0], slice.min(Duration::from_millis(1)));
                }
            }
            for (c, _) in sleepers {
                c.shared.header().waiters.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Wakes every reader sleeping on this channel, in any process, to look again (each one that finds nothing new
    /// sleeps again, after asking its `interrupted` check if it has one: [`Reader::get_interruptible`]). It takes no
    /// lock and allocates nothing (an atomic increment and a futex wake), so it may be called from a signal handler.
    pub fn wake_readers(&self) {
        // G-WAIT's wake word is bumped as a put's W10 bumps it, so a reader between its check and its sleep sees the
        // word changed and does not sleep.
        self.shared.wake_readers();
    }

    /// The channel's sizes and counters.
    pub fn stats(&self) -> ChannelStats {
        let h = self.shared.header();
        let g = self.shared.geometry();
        let (created_utime, mode) = self.file_facts();
        ChannelStats {
            frames: g.entries,
            frame_size: g.max_message,
            data_bytes: g.data_bytes,
            file_bytes: g.file_size as u64,
            messages: h.newest.load(Ordering::Acquire),
            writer_opens: h.writer_opens.load(Ordering::Relaxed),
            reader_opens: h.reader_opens.load(Ordering::Relaxed),
            waiting_readers: h.waiters.load(Ordering::Relaxed),
            recoveries: h.recoveries.load(Ordering::Relaxed),
            aborted_loans: h.aborted_loans.load(Ordering::Relaxed),
            checksum: g.checksum,
            created_utime,
            mode,
        }
    }

    /// Under loom there is no file.
    #[cfg(loom)]
    fn file_facts(&self) -> (i64, u32) {
        (0, 0)
    }
}

/// The channel file's descriptor, open for as long as the channel (Ach's `ach_channel_fd` hands it out).
#[cfg(not(loom))]
impl std::os::fd::AsRawFd for Channel {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(self.shared.memory.file())
    }
}

#[cfg(not(loom))]
impl Channel {
    /// Makes a new channel. Fails with [`ShmError::SizeMismatch`] if one exists under this name with other sizes,
    /// and [`ShmError::AlreadyExists`] if one exists with the same sizes (use [`Channel::open_or_create`] to reuse
    /// it). Other processes never see a half-made channel: the file is made and initialised under a temporary name,
    /// then linked under its own.
    pub fn create(name: &str, config: &ChannelConfig) -> Result<Channel, ShmError> {
        match Channel::create_or_existing(name, config)? {
            (channel, true) => Ok(channel),
            (channel, false) => Err(ShmError::AlreadyExists { path: channel.shared.path.clone() }),
        }
    }

    /// Opens the channel if it exists with these sizes, or makes it. [`ShmError::SizeMismatch`] if it exists with
    /// other sizes.
    pub fn open_or_create(name: &str, config: &ChannelConfig) -> Result<Channel, ShmError> {
        match Channel::open(name, config.dir.as_deref()) {
            Ok(channel) => channel.check_sizes(config),
            Err(ShmError::NotFound { .. }) => Ok(Channel::create_or_existing(name, config)?.0),
            Err(e) => Err(e),
        }
    }

    /// Opens an existing channel, checking its header (magic, layout version, sizes against the file's length).
    pub fn open(name: &str, dir: Option<&Path>) -> Result<Channel, ShmError> {
        let path = channel_path(name, dir)?;
        Channel::open_path(name, path)
    }

    /// Removes a channel's file. Processes that have it open keep working on it; new ones no longer find it.
    pub fn remove(name: &str, dir: Option<&Path>) -> Result<(), ShmError> {
        let path = channel_path(name, dir)?;
        fs::remove_file(&path).map_err(|e| match e.raw_os_error() {
            // unlink(2) needs write access to the directory, whatever the file's own mode: EACCES blames the
            // directory, EPERM its sticky bit.
            Some(libc::EACCES) | Some(libc::EPERM) => ShmError::DirectoryNotWritable {
                dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
                op: "removing a channel",
                sticky: e.raw_os_error() == Some(libc::EPERM),
            },
            _ => ShmError::io(path, "removing the channel", e),
        })
    }

    /// Sets a channel file's permission bits (like `chmod`).
    pub fn set_mode(name: &str, dir: Option<&Path>, mode: u32) -> Result<(), ShmError> {
        check_mode(mode)?;
        let path = channel_path(name, dir)?;
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).map_err(|e| ShmError::io(path, "chmod", e))
    }

    /// Every channel file in the directory (see [`channel_dir`]), sorted by name, each with its statistics or the
    /// error that kept it from opening, or [`ShmError::Corrupt`] when [`Channel::check`] finds it damaged. Other
    /// files are skipped.
    pub fn list(dir: Option<&Path>) -> Result<Vec<ListedChannel>, ShmError> {
        let dir = channel_dir(dir);
        let op = "listing the channel directory";
        // Not `ShmError::io`: a missing directory is not a missing channel.
        let dir_error = |e: io::Error| match e.kind() {
            io::ErrorKind::PermissionDenied => ShmError::PermissionDenied { path: dir.clone(), op },
            _ => ShmError::Io { path: dir.clone(), op, source: e },
        };
        let entries = fs::read_dir(&dir).map_err(dir_error)?;
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(dir_error)?;
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str().and_then(|n| n.strip_prefix(FILE_PREFIX)) else { continue };
            if check_name(name).is_err() {
                continue;
            }
            let path = entry.path();
            let stats = Channel::open_path(name, path.clone()).and_then(|c| c.check().map(|()| c.stats()));
            out.push(ListedChannel { name: name.to_string(), path, stats });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// When the file was made, and its permission bits.
    fn file_facts(&self) -> (i64, u32) {
        let mut created = [0u8; 8];
        let created = match self.shared.memory.file().read_exact_at(&mut created, 40) {
            Ok(()) => i64::from_ne_bytes(created),
            Err(_) => 0,
        };
        let mode = self.shared.memory.file().metadata().map(|m| m.permissions().mode() & 0o7777).unwrap_or(0);
        (created, mode)
    }

    fn check_sizes(self, config: &ChannelConfig) -> Result<Channel, ShmError> {
        let g = self.shared.geometry();
        if (g.entries, g.max_message) == (config.frames, config.frame_size) {
            Ok(self)
        } else {
            Err(ShmError::SizeMismatch {
                path: self.shared.path.clone(),
                existing: (g.entries, g.max_message),
                requested: (config.frames, config.frame_size),
            })
        }
    }

    fn open_path(name: &str, path: PathBuf) -> Result<Channel, ShmError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| ShmError::io(path.clone(), "opening the channel", e))?;
        let meta = file.metadata().map_err(|e| ShmError::io(path.clone(), "stat", e))?;
        if !meta.is_file() {
            let e = io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
            return Err(ShmError::Io { path, op: "opening the channel", source: e });
        }
        let mut prefix = [0u8; PREFIX_LEN];
        let mut got = 0;
        while got < PREFIX_LEN {
            match file.read_at(&mut prefix[got..], got as u64) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ShmError::io(path, "reading the header", e)),
            }
        }
        let geometry = Geometry::from_prefix(&path, &prefix[..got], meta.len())?;
        let memory = Memory::open(file, geometry).map_err(|e| ShmError::io(path.clone(), "mmap", e))?;
        Ok(Channel { shared: Arc::new(Shared { memory, name: name.to_string(), path, bells: Default::default() }) })
    }

    /// Makes the channel, or finds the one already there with the same sizes: `(channel, made_now)`.
    fn create_or_existing(name: &str, config: &ChannelConfig) -> Result<(Channel, bool), ShmError> {
        check_mode(config.mode)?;
        let path = channel_path(name, config.dir.as_deref())?;
        let geometry = Geometry::new(config.frames, config.frame_size)?.with_checksum(config.checksum);
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = dir.join(format!(
            ".{FILE_PREFIX}{name}.{}.{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, StdOrdering::Relaxed)
        ));
        let made = Channel::make_file(&tmp, geometry, config.mode);
        let memory = match made {
            Ok(memory) => memory,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
        };
        // Publish: link(2) fails if the name exists, so at most one creator wins and nobody sees a partial file.
        let linked = fs::hard_link(&tmp, &path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok((
                Channel {
                    shared: Arc::new(Shared { memory, name: name.to_string(), path, bells: Default::default() }),
                },
                true,
            )),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Ok((Channel::open_path(name, path)?.check_sizes(config)?, false))
            }
            Err(e) => Err(ShmError::io(path, "linking the new channel file", e)),
        }
    }

    /// The new channel file under its temporary name, mapped: sized, blocks reserved, header initialised, mode set.
    fn make_file(tmp: &Path, geometry: Geometry, mode: u32) -> Result<Memory, ShmError> {
        let err = |op| move |e| ShmError::io(tmp, op, e);
        let file = OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(tmp).map_err(|e| {
            match e.kind() {
                // The temporary file is an inner detail: what refused is the directory.
                io::ErrorKind::PermissionDenied => ShmError::DirectoryNotWritable {
                    dir: tmp.parent().map(Path::to_path_buf).unwrap_or_default(),
                    op: "making a channel",
                    sticky: false,
                },
                _ => ShmError::io(tmp, "creating the channel file", e),
            }
        })?;
        if !crate::sys::allocate(&file, geometry.file_size).map_err(err("reserving the channel's memory"))? {
            file.set_len(geometry.file_size as u64).map_err(err("sizing the channel file"))?;
        }
        file.set_permissions(fs::Permissions::from_mode(mode)).map_err(err("chmod"))?;
        Memory::initialise(file, geometry, now_utime()).map_err(err("initialising the channel"))
    }
}

#[cfg(not(loom))]
fn check_mode(mode: u32) -> Result<(), ShmError> {
    if mode > 0o777 {
        return Err(ShmError::InvalidConfig { reason: format!("mode {mode:o} has bits beyond 0777") });
    }
    Ok(())
}
