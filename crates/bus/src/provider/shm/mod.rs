//! The `shm://` provider: nerve-shm channels as a bus, one channel per bus channel, in one directory.
//!
//! `shm://?frames=64&frame_size=64K&mode=0600&dir=/dev/shm&spin_us=0&channels_per_thread=N&checksum=none` (every
//! option optional; see [`ShmConfig`]).
//!
//! **Names.** Bus channel `NAME` is the channel file `nerve-ENC` where `ENC` is [`encode_channel`]`(NAME)`: `%`, `/`
//! and control characters percent-encoded (and a whole name of `.` or `..`), everything else as it is, so the common
//! names (`POSE`, `CAMERA_LEFT`) are the same file as the raw nerve-shm API's channel of that name, and
//! [`decode_channel`] turns a file's name back into the bus channel exactly. Both are nerve-shm's (the naming is part
//! of its files' format), re-exported here.
//!
//! **Publishing** (`publish`). One [`Writer`](nerve_shm::Writer) per channel, made on the first publication: the
//! channel is opened as it is if it exists (its creator chose its sizes), else made with the URL's sizes. A message
//! longer than the channel's frame size is an error naming the channel and both sizes
//! ([`ShmProviderError::MessageTooLarge`]; when the channel's sizes are not the URL's,
//! [`ShmProviderError::ChannelSizesDiffer`] says so); a message longer than the URL's frame size does not make the
//! channel at all ([`ShmProviderError::TooLargeToMake`]), so that a retry with a larger `frame_size` is not refused
//! by a channel the failed try left behind. Publishing never waits for a reader. Every message carries this
//! provider's [`new_origin`](super::new_origin) id.
//!
//! **Receiving** (`receive`): **one thread for every channel read.** The receive thread sleeps on all its channels
//! at once through a nerve-shm [`WaitSet`](nerve_shm::WaitSet): one futex word (the set's doorbell) that a put on
//! any of the channels rings, naming the channel in the doorbell's ready bitmap. So an idle subscription to any
//! number of channels costs one sleeping thread and no periodic wake-up, and a message is read at once whatever the
//! number of channels. `channels_per_thread=N` spreads the channels over threads of at most N each (each with its
//! own wait set), for callbacks slow enough that one thread could not keep up. After a wake-up a thread reads every
//! channel the set named, in order ([`ReadMode::Next`](nerve_shm::ReadMode)) and at most one ring's worth per channel
//! at a time (a channel with more is named again at once), so a reader that keeps up loses nothing and no channel
//! starves the others; messages it missed because writers overwrote them first are counted in
//! [`ProviderStats::lost`]. Entries written by this provider (its origin) are skipped and counted in
//! [`ProviderStats::own_dropped`]: the bus delivered them in-process already. Between rounds a thread calls
//! [`Sink::drained`], so an inline dispatcher's callbacks run on it (a slow callback holds up the channels of its
//! thread, as on udpm; the rings absorb that up to their size). A channel handed to a thread is added to its set
//! at once (the thread is woken for it; its reader already exists, so nothing is missed). The directory watcher
//! calls [`Sink::drained`] too when idle, so in-process messages are dispatched even while no channel is read.
//!
//! **Views** (`views`). [`Shm::subscribe_views`] is a subscription outside the bus's queues whose handler gets each
//! message as a nerve-shm [`View`](nerve_shm::View) of its frame (no copy), on the same receive path; a frame that
//! writers reclaim while the handler holds it fails [`View::check`](nerve_shm::View::check) (writers never wait).
//!
//! **Discovery** (`watch`). The provider reads only channels whose bus name matches a subscribed pattern. A new
//! subscription scans the directory and reads the matching channels that exist from their next message on (only
//! what is published after it subscribed, as on udpm). A watcher thread learns of channels made later from inotify
//! (watching the directory for new names; the watch is set before any scan, so nothing falls between) and reads
//! those from their oldest message, so nothing published on them after the subscription is missed. Without inotify
//! (a per-user limit reached) it rescans every [`RESCAN`] instead. A channel removed and made again under the same
//! name (a new file) replaces the old one: its reader is retired and the new file is read from its oldest message
//! (a writer still on the removed file is not heard any more). A channel file that cannot be opened (permissions,
//! another layout version) is skipped and reported to the bus once per path, through [`Sink::report`]: a
//! [`BusError::Transport`] holding [`ShmProviderError::Channel`] (the channel and nerve-shm's error, which names the
//! file), returned by the next `handle()` and counted in `Bus::health()`; receiving goes on, and nothing is printed.
//! When the last subscription that wants a channel is removed, the channel stops being read (its reader is retired,
//! and its place on its thread freed for another channel); subscribing again reads it from its next message.
//!
//! **QoS.** Best effort and volatile only ([`QosSupport::default`]): a writer never waits, so a reader that falls
//! more than a ring behind loses the oldest messages (counted), which is not reliable delivery; and a channel's ring
//! holds the messages of every writer with no record of their durability, so it cannot stand in for
//! transient-local publishers' stores.

mod config;
mod publish;
mod receive;
mod views;
mod watch;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use nerve_shm::ShmError;

use self::publish::Writers;
use self::receive::{Counters, RecvShared, RecvState, Start};
use super::{Provider, ProviderStats, QosSupport, Sink};
use crate::error::BusError;
use crate::pattern::Pattern;
use crate::url::Url;

pub use self::config::{ShmConfig, OPTIONS};
pub use self::views::ViewSubscription;
pub use self::watch::RESCAN;
pub use nerve_shm::{decode_channel, encode_channel, parse_mode, parse_size, DEFAULT_FRAMES, DEFAULT_FRAME_SIZE};

pub(super) fn transport(e: ShmProviderError) -> BusError {
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
    /// A receive thread cannot use its channel directory's doorbell file (its channels are read all the same,
    /// slept on through their own futex words, in slices).
    Doorbell {
        /// The channel directory.
        dir: PathBuf,
        /// What nerve-shm reported.
        reason: String,
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
            ShmProviderError::Doorbell { dir, reason } => write!(
                f,
                "shm channels in {}: no doorbell for the receive thread ({reason}); its channels are read all the \
                 same, woken more slowly",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for ShmProviderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ShmProviderError::TooLargeToMake { .. }
            | ShmProviderError::ChannelSizesDiffer { .. }
            | ShmProviderError::Doorbell { .. } => None,
            ShmProviderError::Channel { source, .. } => Some(source),
            ShmProviderError::ReceiveThread { source, .. } => Some(source),
            ShmProviderError::MessageTooLarge { .. } => None,
        }
    }
}

/// Shared-memory channels as a bus.
pub struct Shm {
    config: ShmConfig,
    origin: u64,
    writers: Writers,
    recv: Arc<RecvShared>,
    watcher: Mutex<Option<JoinHandle<()>>>,
}

impl Shm {
    /// A provider over `config`'s directory, which must exist (checked now, so a wrong `dir=` is reported at
    /// creation). Nothing is opened until the first publication or subscription.
    pub fn open(config: ShmConfig) -> Result<Shm, BusError> {
        Shm::open_with(config, None)
    }

    /// [`Shm::open`], with a view subscription's handler when `views` is given.
    fn open_with(config: ShmConfig, views: Option<receive::ViewHandler>) -> Result<Shm, BusError> {
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
                mode: config.mode,
                stop: AtomicBool::new(false),
                counters: Counters::default(),
                state: Mutex::new(RecvState::default()),
                views: views.map(Mutex::new),
            }),
            config,
            origin,
            writers: Mutex::new(std::collections::HashMap::new()),
            watcher: Mutex::new(None),
        })
    }

    /// The registry's constructor for `shm://?options`: an unknown option is an error.
    pub fn from_url(url: &Url) -> Result<Box<dyn Provider>, BusError> {
        url.check_options(OPTIONS)?;
        let (config, _) = ShmConfig::from_url(&url.to_string(), &url.network, &url.options)?;
        Ok(Box::new(Shm::open(config)?))
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
            for g in &mut st.groups {
                // Asleep with no deadline: woken to see the stop flag.
                g.waker.wake();
                threads.extend(g.thread.take());
            }
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

impl Provider for Shm {
    fn name(&self) -> &'static str {
        "shm"
    }

    fn publish(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        self.publish_message(channel, data)
    }

    fn start(&self, sink: Arc<dyn Sink>) -> Result<(), BusError> {
        self.start_watcher(sink)
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
        // Channels no remaining subscription wants stop being read: their readers are retired (each thread is woken to drop
        // its retired readers). A later subscription that wants one again
        // reads it from its next message, as a new subscription to an existing channel does.
        let unwanted: Vec<String> =
            st.readers.keys().filter(|c| !st.patterns.iter().any(|p| p.matches(c))).cloned().collect();
        for channel in unwanted {
            st.retire(&channel);
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
