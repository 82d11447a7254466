//! The `shm://` provider: nerve-shm channels as a bus, one channel per bus channel, in one directory.
//!
//! `shm://?frames=64&frame_size=64K&mode=0600&dir=/dev/shm&spin_us=0&channels_per_thread=1&checksum=none` (every
//! option optional; see [`ShmConfig`]).
//!
//! **Names.** Bus channel `NAME` is the channel file `nerve-ENC` where `ENC` is [`encode_channel`]`(NAME)`: `%`, `/`
//! and control characters percent-encoded (and a whole name of `.` or `..`), everything else as it is, so the common
//! names (`POSE`, `CAMERA_LEFT`) are the same file as the raw nerve-shm API's channel of that name, and
//! [`decode_channel`] turns a file's name back into the bus channel exactly.
//!
//! **Publishing.** One [`Writer`] per channel, made on the first publication: the channel is opened as it is if it
//! exists (its creator chose its sizes), else made with the URL's sizes. A message longer than the channel's frame
//! size is an error naming the channel and both sizes ([`ShmProviderError::MessageTooLarge`]; when the channel's
//! sizes are not the URL's, [`ShmProviderError::ChannelSizesDiffer`] says so); a message longer than the URL's frame
//! size does not make the channel at all ([`ShmProviderError::TooLargeToMake`]), so that a retry with a larger
//! `frame_size` is not refused by a channel the failed try left behind. Publishing never waits for a reader. Every
//! message carries this provider's [`new_origin`](super::new_origin) id.
//!
//! **Receiving: a thread per channel by default, or one thread for up to 128.** A futex word is per channel. By
//! default each channel read gets a receive thread of its own that sleeps on that channel's futex (as a lone
//! nerve-shm reader does), so the latency does not depend on how many channels a process reads; the cost is a
//! thread per channel and its idle wake-ups (one per [`nerve_shm::WAIT_SLICE`]). With `channels_per_thread=N` (up to
//! [`MAX_CHANNELS_PER_THREAD`]) one thread serves N channels, sleeping on all their futex words at once
//! ([`Channel::wait_any`], `futex_waitv`): fewer threads, but every wake-up then costs the kernel time in proportion
//! to the channels it sleeps on, so idle channels slow the busy ones of their thread. The round trips of both
//! layouts, beside raw nerve-shm's, are printed by `latency_added_by_the_bus_is_printed` in `tests/shm_provider.rs`
//! and recorded by the latency suite in `bench/`. After a wake-up a thread reads every channel it has that has
//! something, in order ([`ReadMode::Next`])
//! and at most one ring's worth per channel at a time, so a reader that keeps up loses nothing and no channel starves
//! the others; messages it missed because writers overwrote them first are counted in [`ProviderStats::lost`].
//! Entries written by this provider (its origin) are skipped and counted in [`ProviderStats::own_dropped`]: the bus
//! delivered them in-process already. Between rounds a thread calls [`Sink::drained`], so an inline dispatcher's
//! callbacks run on it (a slow callback holds up the channels of its thread, as on udpm; the rings absorb that up to
//! their size). A channel handed to a thread that is asleep is picked up when it next wakes, within
//! [`nerve_shm::WAIT_SLICE`] (its reader already exists, so nothing is missed). The directory watcher calls
//! [`Sink::drained`] too when idle, so in-process messages are dispatched even while no channel is read.
//!
//! **Discovery.** The provider reads only channels whose bus name matches a subscribed pattern. A new subscription
//! scans the directory and reads the matching channels that exist from their next message on (only what is
//! published after it subscribed, as on udpm). A watcher thread learns of channels made later from inotify (watching
//! the directory for new names; the watch is set before any scan, so nothing falls between) and reads those from
//! their oldest message, so nothing published on them after the subscription is missed. Without inotify (a per-user
//! limit reached) it rescans every [`RESCAN`] instead. A channel removed and made again under the same name (a new
//! file) replaces the old one: its reader is retired and the new file is read from its oldest message (a writer still
//! on the removed file is not heard any more). A channel file that cannot be opened (permissions, another layout
//! version) is skipped and reported to the bus once per path, through [`Sink::report`]: a
//! [`BusError::Transport`] holding [`ShmProviderError::Channel`] (the channel and nerve-shm's error, which names the
//! file), returned by the next `handle()` and counted in `Bus::health()`; receiving goes on, and nothing is printed.
//! When the last subscription that wants a channel is removed, the
//! channel stops being read (its reader is retired, and its thread freed for another channel); subscribing again
//! reads it from its next message.
//!
//! **QoS.** Best effort and volatile only ([`QosSupport::default`]): a writer never waits, so a reader that falls
//! more than a ring behind loses the oldest messages (counted), which is not reliable delivery; and a channel's ring
//! holds the messages of every writer with no record of their durability, so it cannot stand in for
//! transient-local publishers' stores.

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Reader, ShmError, Wait, Writer};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use super::{Incoming, Provider, ProviderStats, QosSupport, Sink};
use crate::error::BusError;
use crate::pattern::Pattern;
use crate::url::Url;

/// The options a `shm://` URL takes.
pub const OPTIONS: &[&str] = &["frames", "frame_size", "mode", "dir", "spin_us", "channels_per_thread", "checksum"];

/// A new channel's index entries (messages kept) unless the URL says otherwise.
pub const DEFAULT_FRAMES: u64 = 64;
/// A new channel's frame size (its largest message) unless the URL says otherwise: 64 KiB, room for every
/// ordinary state or command message; image channels need a `frame_size` of their own (or `nerve chan mk`).
/// The file of a default channel reserves about `frames * frame_size` = 4 MiB of memory.
pub const DEFAULT_FRAME_SIZE: u64 = 64 * 1024;
/// How long the directory watcher sleeps at most before it looks at its stop flag.
const POLL: Duration = Duration::from_millis(100);
/// The most channels one receive thread may serve (`futex_waitv` takes at most 128 words).
pub const MAX_CHANNELS_PER_THREAD: usize = 128;
/// How often the directory is rescanned when inotify is not available.
pub const RESCAN: Duration = Duration::from_millis(500);
/// How many times opening a channel is retried when its file is replaced while being opened.
const OPEN_ATTEMPTS: u32 = 3;

fn transport(e: ShmProviderError) -> BusError {
    BusError::Transport { provider: "shm", source: Box::new(e) }
}

/// A failure of the `shm://` provider on one channel (inside [`BusError::Transport`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum ShmProviderError {
    /// A message longer than the channel's frame size (the largest message it takes).
    MessageTooLarge {
        /// The bus channel.
        channel: String,
        /// The channel file.
        path: PathBuf,
        /// The message's length.
        len: usize,
        /// The channel's frame size.
        frame_size: u64,
    },
    /// A message for a channel that does not exist yet, longer than the frame size the URL makes channels with: the
    /// channel is not made.
    TooLargeToMake {
        /// The bus channel.
        channel: String,
        /// The channel file it would be.
        path: PathBuf,
        /// The message's length.
        len: usize,
        /// The URL's frame size.
        frame_size: u64,
    },
    /// A message longer than the frame size of a channel that exists with other sizes than the URL's (a channel
    /// keeps the sizes it was made with).
    ChannelSizesDiffer {
        /// The bus channel.
        channel: String,
        /// The channel file.
        path: PathBuf,
        /// The message's length.
        len: usize,
        /// The channel's frame size.
        frame_size: u64,
        /// The URL's frame size.
        url_frame_size: u64,
    },
    /// Opening, making or writing the channel failed.
    Channel {
        /// The bus channel.
        channel: String,
        /// What nerve-shm reported (with the file's path).
        source: ShmError,
    },
    /// No receive thread could be started to read the channel (it is not read).
    ReceiveThread {
        /// The bus channel.
        channel: String,
        /// Why.
        source: std::io::Error,
    },
}

impl std::fmt::Display for ShmProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShmProviderError::MessageTooLarge { channel, path, len, frame_size } => write!(
                f,
                "channel {channel}: a message of {len} bytes does not fit the channel's frame size of {frame_size} \
                 bytes ({}; make the channel with a larger frame size: shm://?frame_size=... before it exists, or \
                 nerve chan mk --frame-size)",
                path.display()
            ),
            ShmProviderError::TooLargeToMake { channel, path, len, frame_size } => write!(
                f,
                "channel {channel}: a message of {len} bytes does not fit the frame size of {frame_size} bytes that \
                 this URL makes channels with, so the channel was not made ({}); give the largest message as \
                 shm://?frame_size=..., or make the channel first with nerve chan mk --frame-size",
                path.display()
            ),
            ShmProviderError::ChannelSizesDiffer { channel, path, len, frame_size, url_frame_size } => write!(
                f,
                "channel {channel}: a message of {len} bytes does not fit the channel's frame size of {frame_size} \
                 bytes: the channel exists ({}) with other sizes than the URL's frame_size={url_frame_size}, and \
                 keeps the sizes it was made with; `nerve chan rm {channel}` removes it, so that the next \
                 publication makes it with the URL's sizes",
                path.display()
            ),
            ShmProviderError::Channel { channel, .. } => write!(f, "channel {channel}"),
            ShmProviderError::ReceiveThread { channel, .. } => {
                write!(f, "channel {channel}: cannot start a receive thread; the channel is not read")
            }
        }
    }
}

impl std::error::Error for ShmProviderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ShmProviderError::TooLargeToMake { .. } | ShmProviderError::ChannelSizesDiffer { .. } => None,
            ShmProviderError::Channel { source, .. } => Some(source),
            ShmProviderError::ReceiveThread { source, .. } => Some(source),
            ShmProviderError::MessageTooLarge { .. } => None,
        }
    }
}

/// The file-name form of bus channel `channel` (without nerve-shm's `nerve-` prefix): `%`, `/` and control
/// characters become `%XX` (upper-case hex), a whole name of `.` or `..` becomes `%2E` or `%2E%2E`; everything else
/// stays. [`decode_channel`] reverses it.
pub fn encode_channel(channel: &str) -> String {
    if channel == "." || channel == ".." {
        return channel.replace('.', "%2E");
    }
    let mut out = String::with_capacity(channel.len());
    for c in channel.chars() {
        if c == '%' || c == '/' || c.is_ascii_control() {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The bus channel whose file-name form is `encoded`, or `None` if no channel name encodes to it (a channel made
/// through the raw nerve-shm API with a `%` in its name that is not an escape, say).
pub fn decode_channel(encoded: &str) -> Option<String> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = encoded.get(i + 1..i + 3)?;
            if !hex.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let decoded = String::from_utf8(out).ok()?;
    (encode_channel(&decoded) == encoded).then_some(decoded)
}

/// A size in bytes: digits, optionally followed by `K`, `M` or `G` (binary multiples; `KiB`, `k` and the like are
/// accepted too). `None` if it is not one or overflows.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// Permission bits in octal (`600`, `0600`, `0o600`), at most 0777.
pub fn parse_mode(text: &str) -> Option<u32> {
    let t = text.trim();
    let t = t.strip_prefix("0o").unwrap_or(t);
    u32::from_str_radix(t, 8).ok().filter(|m| *m <= 0o777)
}

/// A `shm://` URL's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShmConfig {
    /// `frames=N`: index entries of the channels this provider makes ([`DEFAULT_FRAMES`]).
    pub frames: u64,
    /// `frame_size=BYTES` (suffixes K, M, G): the largest message of the channels it makes ([`DEFAULT_FRAME_SIZE`]).
    pub frame_size: u64,
    /// `mode=0600`: the permission bits of the channel files it makes (octal).
    pub mode: u32,
    /// `dir=/path`: the channel directory (default: `NERVE_SHM_DIR`, else `/dev/shm`).
    pub dir: Option<PathBuf>,
    /// `spin_us=U`: a receive thread polls its channels this long before it sleeps (keeps a CPU busy while it
    /// waits; saves the wake-up of a sleeping thread).
    pub spin: Duration,
    /// `channels_per_thread=N`: how many channels one receive thread serves (1, the default, to
    /// [`MAX_CHANNELS_PER_THREAD`]); see the module doc for the latency this trades for threads.
    pub channels_per_thread: usize,
    /// `checksum=xxh3` (or `none`, the default): the channels this provider makes carry a checksum per frame, so
    /// its readers never take bytes another process scribbled over for a message (they count them as missed).
    pub checksum: bool,
}

impl Default for ShmConfig {
    fn default() -> ShmConfig {
        ShmConfig {
            frames: DEFAULT_FRAMES,
            frame_size: DEFAULT_FRAME_SIZE,
            mode: nerve_shm::DEFAULT_MODE,
            dir: None,
            spin: Duration::ZERO,
            channels_per_thread: 1,
            checksum: false,
        }
    }
}

impl ShmConfig {
    /// From a `shm://` URL's network part (which must be empty) and options; unknown options are returned for the
    /// caller to warn about.
    pub fn from_url(
        url: &str,
        network: &str,
        options: &[(String, String)],
    ) -> Result<(ShmConfig, Vec<String>), BusError> {
        let bad = |reason: String| BusError::Config { url: url.to_owned(), reason };
        if !network.is_empty() {
            return Err(bad(format!(
                "shm:// takes no address ('{network}'): give the channel directory as shm://?dir={network}"
            )));
        }
        let mut config = ShmConfig::default();
        let mut unknown = Vec::new();
        for (k, v) in options {
            match k.as_str() {
                "frames" => {
                    config.frames = v
                        .parse::<u64>()
                        .ok()
                        .filter(|n| (2..=nerve_shm::MAX_FRAMES).contains(n))
                        .ok_or_else(|| bad(format!("frames={v}: expected 2 to {}", nerve_shm::MAX_FRAMES)))?
                }
                "frame_size" => {
                    config.frame_size =
                        parse_size(v).filter(|n| (1..=nerve_shm::MAX_FRAME_SIZE).contains(n)).ok_or_else(|| {
                            bad(format!(
                                "frame_size={v}: expected 1 to {} bytes (K, M, G allowed)",
                                nerve_shm::MAX_FRAME_SIZE
                            ))
                        })?
                }
                "mode" => {
                    config.mode =
                        parse_mode(v).ok_or_else(|| bad(format!("mode={v}: expected octal bits like 0600")))?
                }
                "dir" if v.is_empty() => return Err(bad("dir= is empty".into())),
                "dir" => config.dir = Some(PathBuf::from(v)),
                "channels_per_thread" => {
                    config.channels_per_thread =
                        v.parse::<usize>().ok().filter(|n| (1..=MAX_CHANNELS_PER_THREAD).contains(n)).ok_or_else(
                            || bad(format!("channels_per_thread={v}: expected 1 to {MAX_CHANNELS_PER_THREAD}")),
                        )?
                }
                "checksum" => {
                    config.checksum = match v.as_str() {
                        "xxh3" => true,
                        "none" => false,
                        _ => return Err(bad(format!("checksum={v}: expected xxh3 or none"))),
                    }
                }
                "spin_us" => {
                    let us = v.parse::<u64>().map_err(|_| bad(format!("spin_us={v}: expected microseconds")))?;
                    config.spin = Duration::from_micros(us);
                }
                _ => unknown.push(k.clone()),
            }
        }
        let data = config.frames.max(3).checked_mul(config.frame_size.div_ceil(8) * 8);
        if data.is_none_or(|d| d > nerve_shm::MAX_DATA_BYTES) {
            return Err(bad(format!(
                "frames={} of frame_size={} is more than the {} bytes a channel may hold",
                config.frames,
                config.frame_size,
                nerve_shm::MAX_DATA_BYTES
            )));
        }
        Ok((config, unknown))
    }

    /// The channel directory this configuration resolves to.
    pub fn directory(&self) -> PathBuf {
        nerve_shm::channel_dir(self.dir.as_deref())
    }

    fn channel_config(&self) -> ChannelConfig {
        let c = ChannelConfig::new(self.frames, self.frame_size).mode(self.mode).checksum(self.checksum);
        match &self.dir {
            Some(d) => c.dir(d),
            None => c,
        }
    }
}

/// The provider's counters.
#[derive(Default)]
struct Counters {
    published: AtomicU64,
    received: AtomicU64,
    lost: AtomicU64,
    malformed: AtomicU64,
    own_dropped: AtomicU64,
}

/// A channel being read, as the provider keeps track of it: which file (device, inode), its receive thread, and
/// the flag that retires it.
struct ChannelReader {
    file: (u64, u64),
    group: usize,
    retire: Arc<AtomicBool>,
}

/// A channel being read, as its receive thread holds it.
struct Member {
    channel: String,
    ch: Channel,
    reader: Reader,
    retire: Arc<AtomicBool>,
}

/// A receive thread: its inbox of channels to add, and how many channels are assigned to it.
struct Group {
    inbox: Arc<Mutex<Vec<Member>>>,
    assigned: usize,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct RecvState {
    sink: Option<Arc<dyn Sink>>,
    patterns: Vec<Pattern>,
    /// Bus channel -> its reader.
    readers: HashMap<String, ChannelReader>,
    groups: Vec<Group>,
    /// Channel files already reported as unreadable (each is reported once).
    warned: std::collections::HashSet<PathBuf>,
}

/// What the receive side's threads share.
struct RecvShared {
    dir: PathBuf,
    origin: u64,
    spin: Duration,
    per_thread: usize,
    stop: AtomicBool,
    counters: Counters,
    state: Mutex<RecvState>,
}

/// Where a reader of a channel starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// Only messages published from now on (a channel that existed when a subscription was made).
    AfterNewest,
    /// The oldest message still in the channel (a channel made after the subscription).
    Oldest,
}

/// How often a publisher checks that its channel's path still names the file it writes (a `stat`): a channel
/// removed and made anew, or replaced by a rename over it, is opened again within this long.
const FILE_CHECK: Duration = Duration::from_millis(100);

/// A channel's writer as the provider keeps it, with when it last checked that its file is still the channel's.
struct Publisher {
    writer: Writer,
    checked: Instant,
}

/// Shared-memory channels as a bus.
pub struct Shm {
    config: ShmConfig,
    origin: u64,
    writers: Mutex<HashMap<String, Arc<Mutex<Publisher>>>>,
    recv: Arc<RecvShared>,
    watcher: Mutex<Option<JoinHandle<()>>>,
}

impl Shm {
    /// A provider over `config`'s directory, which must exist (checked now, so a wrong `dir=` is reported at
    /// creation). Nothing is opened until the first publication or subscription.
    pub fn open(config: ShmConfig) -> Result<Shm, BusError> {
        let dir = config.directory();
        if !dir.is_dir() {
            return Err(BusError::Config {
                url: format!("shm://?dir={}", dir.display()),
                reason: format!("channel directory {} does not exist (or is not a directory)", dir.display()),
            });
        }
        let origin = super::new_origin();
        Ok(Shm {
            recv: Arc::new(RecvShared {
                dir,
                origin,
                spin: config.spin,
                per_thread: config.channels_per_thread,
                stop: AtomicBool::new(false),
                counters: Counters::default(),
                state: Mutex::new(RecvState::default()),
            }),
            config,
            origin,
            writers: Mutex::new(HashMap::new()),
            watcher: Mutex::new(None),
        })
    }

    /// The registry's constructor for `shm://?options`: an unknown option is an error.
    pub fn from_url(url: &Url) -> Result<Box<dyn Provider>, BusError> {
        url.check_options(OPTIONS)?;
        let (config, _) = ShmConfig::from_url(&url.to_string(), &url.network, &url.options)?;
        Ok(Box::new(Shm::open(config)?))
    }

    /// The writer of `channel`, made (and the channel opened or made) on first use.
    fn writer(&self, channel: &str) -> Result<Arc<Mutex<Publisher>>, BusError> {
        let mut writers = self.writers.lock().expect("shm writers lock");
        if let Some(w) = writers.get(channel) {
            return Ok(Arc::clone(w));
        }
        let err = |source| transport(ShmProviderError::Channel { channel: channel.to_owned(), source });
        let name = encode_channel(channel);
        let dir = self.config.dir.as_deref();
        // The channel's creator chose its sizes: an existing channel is used as it is.
        let opened = match Channel::open(&name, dir) {
            Err(ShmError::NotFound { .. }) => match Channel::open_or_create(&name, &self.config.channel_config()) {
                // Made meanwhile by someone else, with other sizes.
                Err(ShmError::SizeMismatch { .. }) => Channel::open(&name, dir),
                other => other,
            },
            other => other,
        };
        let mut writer = opened.map_err(err)?.writer();
        writer.set_origin(self.origin);
        let writer = Arc::new(Mutex::new(Publisher { writer, checked: Instant::now() }));
        writers.insert(channel.to_owned(), Arc::clone(&writer));
        Ok(writer)
    }

    /// Refuses a message of `len` bytes for a channel that does not exist yet when it would not fit the channel
    /// this URL would make: a failed publication must not leave behind a channel that refuses the retry.
    fn check_fits_new_channel(&self, channel: &str, len: usize) -> Result<(), BusError> {
        if len as u64 <= self.config.frame_size || self.writers.lock().expect("shm writers lock").contains_key(channel)
        {
            return Ok(());
        }
        match Channel::open(&encode_channel(channel), self.config.dir.as_deref()) {
            Err(ShmError::NotFound { path }) => Err(transport(ShmProviderError::TooLargeToMake {
                channel: channel.to_owned(),
                path,
                len,
                frame_size: self.config.frame_size,
            })),
            // It exists (its size is checked against the message by `publish`), or fails to open as `writer` will say.
            _ => Ok(()),
        }
    }
}

impl Drop for Shm {
    fn drop(&mut self) {
        self.recv.stop.store(true, Ordering::Relaxed);
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        if let Some(w) = self.watcher.lock().map(|mut w| w.take()).unwrap_or(None) {
            threads.push(w);
        }
        {
            let mut st = self.recv.lock();
            threads.extend(st.groups.iter_mut().filter_map(|g| g.thread.take()));
        }
        for t in threads {
            join_unless_current(t);
        }
    }
}

/// Joins `t`, unless it is the calling thread (the last handle on a bus dropped inside a callback that runs on one
/// of this provider's threads): that one ends by itself once it returns and sees the stop flag.
fn join_unless_current(t: JoinHandle<()>) {
    if t.thread().id() != std::thread::current().id() {
        let _ = t.join();
    }
}

fn now_utime() -> i64 {
    nerve_udpm::now_utime()
}

impl RecvShared {
    fn lock(&self) -> MutexGuard<'_, RecvState> {
        self.state.lock().expect("shm receive state lock")
    }

    /// Starts reading `file_name` (a directory entry) if it is a channel a subscription wants and is not read yet
    /// (or is a new file under a name being read: the old reader is retired), on a receive thread with room.
    fn consider(self: &Arc<Self>, st: &mut RecvState, file_name: &str, start: Start) {
        let Some(encoded) = file_name.strip_prefix(nerve_shm::FILE_PREFIX) else { return };
        let Some(channel) = decode_channel(encoded) else { return };
        let Some(sink) = st.sink.clone() else { return };
        if !st.patterns.iter().any(|p| p.matches(&channel)) {
            return;
        }
        let path = self.dir.join(file_name);
        let Some(id) = file_id(&path) else { return }; // gone already
        if st.readers.get(&channel).is_some_and(|r| r.file == id) {
            return;
        }
        let Some((ch, id)) = self.open_stable(st, &channel, encoded, &path) else { return };
        if st.readers.get(&channel).is_some_and(|r| r.file == id) {
            return;
        }
        let mut reader = match start {
            Start::AfterNewest => ch.reader_after_newest(),
            Start::Oldest => ch.reader_from_oldest(),
        };
        reader.set_spin(self.spin);
        let retire = Arc::new(AtomicBool::new(false));
        // Replacing a channel's file: the old reader is retired (its thread drops it at its next round).
        if let Some(old) = st.readers.remove(&channel) {
            old.retire.store(true, Ordering::Relaxed);
            st.groups[old.group].assigned -= 1;
        }
        let group = match st.groups.iter().position(|g| g.assigned < self.per_thread) {
            Some(i) => i,
            None => {
                let inbox = Arc::new(Mutex::new(Vec::new()));
                let (me, mine) = (Arc::clone(self), Arc::clone(&inbox));
                let spawned =
                    std::thread::Builder::new().name("nerve-shm-rx".into()).spawn(move || me.receive(&mine, sink));
                match spawned {
                    Ok(thread) => st.groups.push(Group { inbox, assigned: 0, thread: Some(thread) }),
                    Err(source) => {
                        st.sink
                            .as_ref()
                            .inspect(|s| s.report(transport(ShmProviderError::ReceiveThread { channel, source })));
                        return;
                    }
                }
                st.groups.len() - 1
            }
        };
        let member = Member { channel: channel.clone(), ch, reader, retire: Arc::clone(&retire) };
        st.groups[group].inbox.lock().expect("shm inbox lock").push(member);
        st.groups[group].assigned += 1;
        st.readers.insert(channel, ChannelReader { file: id, group, retire });
    }

    /// Opens the channel file at `path` and returns it with the (device, inode) it is, checked not to have been
    /// replaced while it was opened. An unreadable channel is reported to the bus once.
    fn open_stable(
        &self,
        st: &mut RecvState,
        channel: &str,
        encoded: &str,
        path: &Path,
    ) -> Option<(Channel, (u64, u64))> {
        for _ in 0..OPEN_ATTEMPTS {
            let before = file_id(path)?;
            let ch = match Channel::open(encoded, Some(&self.dir)) {
                Ok(ch) => ch,
                Err(ShmError::NotFound { .. }) => return None,
                Err(e) => {
                    if st.warned.insert(path.to_path_buf()) {
                        if let Some(sink) = &st.sink {
                            sink.report(transport(ShmProviderError::Channel {
                                channel: channel.to_owned(),
                                source: e,
                            }));
                        }
                    }
                    return None;
                }
            };
            if file_id(path) == Some(before) {
                return Some((ch, before));
            }
        }
        None
    }

    /// Every channel file in the directory that a subscription wants and is not read yet.
    fn scan(self: &Arc<Self>, st: &mut RecvState, start: Start) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            if let Some(name) = entry.file_name().to_str() {
                self.consider(st, name, start);
            }
        }
    }

    /// A receive thread: sleeps on its channels (on the one's futex, or on all at once) and hands each message to
    /// the bus as it comes, until the provider stops.
    fn receive(&self, inbox: &Mutex<Vec<Member>>, sink: Arc<dyn Sink>) {
        let mut members: Vec<Member> = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            members.append(&mut inbox.lock().expect("shm inbox lock"));
            members.retain(|m| !m.retire.load(Ordering::Relaxed));
            let mut taken = 0;
            for m in &mut members {
                taken += self.read_some(m, Wait::Poll, &*sink);
            }
            let callbacks_waiting = sink.drained();
            if taken > 0 || callbacks_waiting {
                continue;
            }
            match members.as_mut_slice() {
                [] => std::thread::sleep(nerve_shm::WAIT_SLICE),
                // Sleeps in the reader's own wait (which spins first if asked), and reads at once when woken.
                [one] => {
                    self.read_some(one, Wait::Timeout(nerve_shm::WAIT_SLICE), &*sink);
                }
                many => {
                    let waiting: Vec<(&Channel, u64)> = many.iter().map(|m| (&m.ch, m.reader.last_seq())).collect();
                    if !self.spin.is_zero() {
                        let end = Instant::now() + self.spin;
                        while Instant::now() < end && !waiting.iter().any(|(c, last)| c.newest_seq() > *last) {
                            std::hint::spin_loop();
                        }
                    }
                    Channel::wait_any(&waiting, nerve_shm::WAIT_SLICE);
                }
            }
        }
    }

    /// Hands the bus what channel `m` has, at most one ring's worth, waiting as `first` says for the first one;
    /// returns how many entries were taken.
    fn read_some(&self, m: &mut Member, first: Wait, sink: &dyn Sink) -> u64 {
        let c = &self.counters;
        let batch = m.ch.frames();
        let mut taken = 0u64;
        let mut wait = first;
        while taken < batch {
            let got = m.reader.get_with(ReadMode::Next, wait, |bytes| bytes.to_vec());
            wait = Wait::Poll;
            match got {
                Ok(GetOutcome::Message((info, data))) => {
                    taken += 1;
                    c.lost.fetch_add(info.missed, Ordering::Relaxed);
                    if info.origin == self.origin {
                        c.own_dropped.fetch_add(1, Ordering::Relaxed);
                    } else {
                        c.received.fetch_add(1, Ordering::Relaxed);
                        sink.deliver(Incoming { channel: m.channel.clone(), data, recv_utime: now_utime() });
                    }
                }
                // Overwritten under the reader too often in a row: the losses come with the next message.
                Ok(GetOutcome::Retry) => taken += 1,
                Ok(GetOutcome::NothingNew | GetOutcome::TimedOut | GetOutcome::BufferTooSmall { .. }) => break,
                Err(e) if m.reader.is_damaged() => {
                    // The file shrank under the mapping (another process truncated it): this reader reads zeros
                    // from now on. It is retired, and the channel is read again once its file is made anew.
                    self.retire_damaged(m, e, sink);
                    break;
                }
                Err(_) => {
                    // An index entry no channel can hold (a process with write access scribbled on it): count it
                    // and skip that one message.
                    taken += 1;
                    c.malformed.fetch_add(1, Ordering::Relaxed);
                    c.lost.fetch_add(skip_one(&mut m.reader, &m.ch), Ordering::Relaxed);
                }
            }
        }
        taken
    }
}

impl RecvShared {
    /// Stops reading a channel whose file shrank under its mapping, says so to the bus, and forgets the file, so
    /// that the channel is read again when a file is made under its name (or found by a later scan).
    fn retire_damaged(&self, m: &Member, e: ShmError, sink: &dyn Sink) {
        m.retire.store(true, Ordering::Relaxed);
        let mut st = self.lock();
        if st.readers.get(&m.channel).is_some_and(|r| Arc::ptr_eq(&r.retire, &m.retire)) {
            if let Some(old) = st.readers.remove(&m.channel) {
                st.groups[old.group].assigned -= 1;
            }
        }
        drop(st);
        sink.report(transport(ShmProviderError::Channel { channel: m.channel.clone(), source: e }));
    }
}

/// Moves `reader` past the message it would read next (the one whose index entry is corrupt): that is `last + 1`,
/// or the oldest message the channel keeps if the reader fell behind (G2), in which case the gap is lost. Returns
/// how many messages were lost besides the corrupt one.
fn skip_one(reader: &mut Reader, channel: &Channel) -> u64 {
    let oldest = channel.newest_seq().saturating_sub(channel.frames() - 1).max(1);
    let want = (reader.last_seq() + 1).max(oldest);
    let gap = want - (reader.last_seq() + 1);
    reader.seek(want);
    gap
}

/// A file's (device, inode), if it exists.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Watches the directory for new channel files (or rescans it periodically without inotify), and gives an inline
/// dispatcher a chance to run callbacks while no channel is read.
fn watch(shared: Arc<RecvShared>, inotify: Option<Inotify>) {
    let mut last_scan = Instant::now();
    let mut callbacks_waiting = false;
    while !shared.stop.load(Ordering::Relaxed) {
        let wait = if callbacks_waiting { Duration::ZERO } else { POLL };
        let mut names: Vec<String> = Vec::new();
        let mut rescan = false;
        match &inotify {
            Some(ino) => {
                let mut fds = [nix::poll::PollFd::new(ino.as_fd(), nix::poll::PollFlags::POLLIN)];
                let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
                if nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms)).unwrap_or(0) > 0 {
                    for ev in ino.read_events().unwrap_or_default() {
                        if ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                            rescan = true;
                        } else if let Some(name) = ev.name.as_ref().and_then(|n| n.to_str()) {
                            names.push(name.to_owned());
                        }
                    }
                }
            }
            None => {
                std::thread::sleep(wait);
                rescan = last_scan.elapsed() >= RESCAN;
            }
        }
        let sink = {
            let mut st = shared.lock();
            for name in &names {
                shared.consider(&mut st, name, Start::Oldest);
            }
            if rescan {
                last_scan = Instant::now();
                shared.scan(&mut st, Start::Oldest);
            }
            st.sink.clone()
        };
        callbacks_waiting = sink.is_some_and(|s| s.drained());
    }
}

impl Provider for Shm {
    fn name(&self) -> &'static str {
        "shm"
    }

    fn publish(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        self.check_fits_new_channel(channel, data.len())?;
        let mut writer = self.writer(channel)?;
        let stale = {
            let mut p = writer.lock().expect("shm writer lock");
            // A file truncated under the writer (it reads zeros since), or removed or replaced (its messages would go
            // to a file nobody opens any more): the channel is opened again, or made again if it is gone.
            let due = p.checked.elapsed() >= FILE_CHECK;
            if due {
                p.checked = Instant::now();
            }
            p.writer.is_damaged() || (due && !p.writer.is_current())
        };
        if stale {
            self.writers.lock().expect("shm writers lock").remove(channel);
            writer = self.writer(channel)?;
        }
        let mut p = writer.lock().expect("shm writer lock");
        let w = &mut p.writer;
        if data.len() > w.max_message() {
            let path =
                nerve_shm::channel_path(&encode_channel(channel), self.config.dir.as_deref()).unwrap_or_default();
            let frame_size = w.max_message() as u64;
            if frame_size != self.config.frame_size {
                return Err(transport(ShmProviderError::ChannelSizesDiffer {
                    channel: channel.to_owned(),
                    path,
                    len: data.len(),
                    frame_size,
                    url_frame_size: self.config.frame_size,
                }));
            }
            return Err(transport(ShmProviderError::MessageTooLarge {
                channel: channel.to_owned(),
                path,
                len: data.len(),
                frame_size: w.max_message() as u64,
            }));
        }
        w.put(data).map_err(|source| transport(ShmProviderError::Channel { channel: channel.to_owned(), source }))?;
        drop(p);
        self.recv.counters.published.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn start(&self, sink: Arc<dyn Sink>) -> Result<(), BusError> {
        let mut watcher = self.watcher.lock().expect("shm watcher lock");
        if watcher.is_some() {
            return Ok(());
        }
        // The watch is set here, before any subscription scans the directory, so that a channel made after a
        // scan is always seen by the watcher.
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok().and_then(|ino| {
            let flags = AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_ONLYDIR;
            ino.add_watch(&self.recv.dir, flags).ok().map(|_| ino)
        });
        self.recv.lock().sink = Some(sink);
        let shared = Arc::clone(&self.recv);
        let thread = std::thread::Builder::new()
            .name("nerve-shm-watch".into())
            .spawn(move || watch(shared, inotify))
            .map_err(|e| BusError::Transport { provider: "shm", source: Box::new(e) })?;
        *watcher = Some(thread);
        Ok(())
    }

    fn subscribed(&self, pattern: &Pattern) -> Result<(), BusError> {
        let mut st = self.recv.lock();
        st.patterns.push(pattern.clone());
        // Channels that exist now: only what is published from now on.
        self.recv.scan(&mut st, Start::AfterNewest);
        Ok(())
    }

    fn unsubscribed(&self, pattern: &Pattern) {
        let mut st = self.recv.lock();
        let Some(i) = st.patterns.iter().position(|p| p.as_str() == pattern.as_str()) else { return };
        st.patterns.remove(i);
        // Channels no remaining subscription wants stop being read: their readers are retired (each thread drops
        // its retired readers at its next round, within a wait slice). A later subscription that wants one again
        // reads it from its next message, as a new subscription to an existing channel does.
        let unwanted: Vec<String> =
            st.readers.keys().filter(|c| !st.patterns.iter().any(|p| p.matches(c))).cloned().collect();
        for channel in unwanted {
            if let Some(r) = st.readers.remove(&channel) {
                r.retire.store(true, Ordering::Relaxed);
                st.groups[r.group].assigned -= 1;
            }
        }
    }

    fn stats(&self) -> ProviderStats {
        let c = &self.recv.counters;
        ProviderStats {
            published: c.published.load(Ordering::Relaxed),
            received: c.received.load(Ordering::Relaxed),
            malformed: c.malformed.load(Ordering::Relaxed),
            lost: c.lost.load(Ordering::Relaxed),
            own_dropped: c.own_dropped.load(Ordering::Relaxed),
            ..ProviderStats::default()
        }
    }

    fn has_receive_thread(&self) -> bool {
        true
    }

    fn qos_support(&self) -> QosSupport {
        QosSupport::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_names_round_trip() {
        for name in ["POSE", "a/b/c", "50%", "%2F", ".", "..", "...", ".hidden", "tab\there", "ünï/cødé", "x%y/z%"]
        {
            let enc = encode_channel(name);
            assert!(!enc.contains('/') && !enc.contains('\0'), "{name:?} -> {enc:?}");
            assert!(enc != "." && enc != "..");
            assert_eq!(decode_channel(&enc).as_deref(), Some(name), "{name:?} -> {enc:?}");
        }
        assert_eq!(encode_channel("POSE"), "POSE");
        assert_eq!(encode_channel("a/b%"), "a%2Fb%25");
        // Names no channel encodes to.
        for raw in ["50%", "%zz", "%2f", "%41", "a%2"] {
            assert_eq!(decode_channel(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn sizes_and_modes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(65536));
        assert_eq!(parse_size("2MiB"), Some(2 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("1T"), None);
        assert_eq!(parse_size("99999999999999999999"), None);
        assert_eq!(parse_mode("0660"), Some(0o660));
        assert_eq!(parse_mode("600"), Some(0o600));
        assert_eq!(parse_mode("0o640"), Some(0o640));
        assert_eq!(parse_mode("1777"), None);
        assert_eq!(parse_mode("689"), None);
    }

    #[test]
    fn url_options() {
        let opts = |s: &[(&str, &str)]| s.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        let (c, unknown) = ShmConfig::from_url(
            "shm://",
            "",
            &opts(&[
                ("frames", "8"),
                ("frame_size", "1M"),
                ("mode", "0640"),
                ("dir", "/x"),
                ("spin_us", "50"),
                ("ttl", "0"),
            ]),
        )
        .unwrap();
        assert_eq!((c.frames, c.frame_size, c.mode, c.spin), (8, 1 << 20, 0o640, Duration::from_micros(50)));
        assert_eq!(c.dir.as_deref(), Some(Path::new("/x")));
        assert_eq!(unknown, ["ttl"]);
        assert_eq!(ShmConfig::from_url("shm://", "", &[]).unwrap().0, ShmConfig::default());
        for bad in
            [("frames", "1"), ("frames", "x"), ("frame_size", "0"), ("mode", "999"), ("dir", ""), ("spin_us", "-1")]
        {
            assert!(ShmConfig::from_url("shm://", "", &opts(&[bad])).is_err(), "{bad:?}");
        }
        assert!(ShmConfig::from_url("shm://x", "x", &[]).is_err());
        assert_eq!(
            ShmConfig::from_url("shm://", "", &opts(&[("channels_per_thread", "128")])).unwrap().0.channels_per_thread,
            128
        );
        for bad in ["0", "129", "x"] {
            assert!(ShmConfig::from_url("shm://", "", &opts(&[("channels_per_thread", bad)])).is_err());
        }
        assert!(ShmConfig::from_url("shm://", "", &opts(&[("frames", "16777216"), ("frame_size", "1G")])).is_err());
        assert!(ShmConfig::from_url("shm://", "", &opts(&[("checksum", "xxh3")])).unwrap().0.checksum);
        assert!(!ShmConfig::from_url("shm://", "", &opts(&[("checksum", "none")])).unwrap().0.checksum);
        assert!(ShmConfig::from_url("shm://", "", &opts(&[("checksum", "crc")])).is_err());
        assert!(ShmConfig::default().channel_config().checksum == ShmConfig::default().checksum);
    }
}
