//! Receiving: which channels are read ([`RecvShared::consider`], called for the channels a subscription's scan or
//! the directory watcher finds), and the receive threads, each sleeping on all of its channels through one
//! nerve-shm [`WaitSet`].

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use nerve_shm::{decode_channel, Channel, GetOutcome, ReadMode, Reader, SetWaker, ShmError, View, Wait, WaitSet};

use super::{transport, ShmProviderError};
use crate::pattern::Pattern;
use crate::provider::{Incoming, Sink};

/// How many times opening a channel is retried when its file is replaced while being opened.
const OPEN_ATTEMPTS: u32 = 3;

/// The provider's counters.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) published: AtomicU64,
    pub(super) received: AtomicU64,
    pub(super) lost: AtomicU64,
    pub(super) malformed: AtomicU64,
    pub(super) own_dropped: AtomicU64,
}

/// A channel being read, as the provider keeps track of it: which file (device, inode), its receive thread, and
/// the flag that retires it.
pub(super) struct ChannelReader {
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

/// A receive thread: its inbox of channels to add, how many channels are assigned to it, and how to wake it (when
/// its inbox has something, a channel of it was retired, or the provider stops).
pub(super) struct Group {
    inbox: Arc<Mutex<Vec<Member>>>,
    assigned: usize,
    pub(super) thread: Option<JoinHandle<()>>,
    pub(super) waker: SetWaker,
    /// Some channel of this thread was retired: it looks for which at its next round.
    retired: Arc<AtomicBool>,
}

impl Group {
    /// Retires `r`, one of this thread's channels, and wakes the thread to drop it.
    fn retire(&mut self, r: &ChannelReader) {
        r.retire.store(true, Ordering::Relaxed);
        self.assigned -= 1;
        self.retired.store(true, Ordering::Relaxed);
        self.waker.wake();
    }
}

#[derive(Default)]
pub(super) struct RecvState {
    pub(super) sink: Option<Arc<dyn Sink>>,
    pub(super) patterns: Vec<Pattern>,
    /// Bus channel -> its reader.
    pub(super) readers: HashMap<String, ChannelReader>,
    pub(super) groups: Vec<Group>,
    /// Channel files already reported as unreadable (each is reported once), and whether a wait set's missing
    /// doorbell was reported.
    warned: std::collections::HashSet<PathBuf>,
}

impl RecvState {
    /// Stops reading `channel` (a subscription no longer wants it, or its file was replaced).
    pub(super) fn retire(&mut self, channel: &str) {
        if let Some(r) = self.readers.remove(channel) {
            self.groups[r.group].retire(&r);
        }
    }
}

/// A view subscription's handler ([`super::Shm::subscribe_views`]): the channel and the message as a view.
pub(super) type ViewHandler = Box<dyn FnMut(&str, View) + Send>;

/// A message as a receive thread took it: a copy for the bus, or a view for a view subscription's handler.
enum Taken {
    Bytes(Vec<u8>),
    View(View),
}

/// What the receive side's threads share.
pub(super) struct RecvShared {
    pub(super) dir: PathBuf,
    pub(super) origin: u64,
    pub(super) spin: Duration,
    pub(super) per_thread: usize,
    /// The permission bits of the channels this provider makes, which its doorbell file gets too if it makes it.
    pub(super) mode: u32,
    pub(super) stop: AtomicBool,
    pub(super) counters: Counters,
    pub(super) state: Mutex<RecvState>,
    /// A view subscription's handler: messages go to it as views of their frames (no copy), on the receive thread,
    /// instead of to the bus as copies.
    pub(super) views: Option<Mutex<ViewHandler>>,
}

/// Where a reader of a channel starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    /// Only messages published from now on (a channel that existed when a subscription was made).
    AfterNewest,
    /// The oldest message still in the channel (a channel made after the subscription).
    Oldest,
}

pub(super) fn now_utime() -> i64 {
    nerve_udpm::now_utime()
}

impl RecvShared {
    pub(super) fn lock(&self) -> MutexGuard<'_, RecvState> {
        self.state.lock().expect("shm receive state lock")
    }

    /// Starts reading `file_name` (a directory entry) if it is a channel a subscription wants and is not read yet
    /// (or is a new file under a name being read: the old reader is retired), on a receive thread with room.
    pub(super) fn consider(self: &Arc<Self>, st: &mut RecvState, file_name: &str, start: Start) {
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
        let reader = match start {
            Start::AfterNewest => ch.reader_after_newest(),
            Start::Oldest => ch.reader_from_oldest(),
        };
        // Replacing a channel's file: the old reader is retired (its thread drops it at its next round).
        st.retire(&channel);
        let group = match st.groups.iter().position(|g| g.assigned < self.per_thread) {
            Some(i) => i,
            None => match self.spawn_group(st, &sink) {
                Ok(i) => i,
                Err(source) => {
                    sink.report(transport(ShmProviderError::ReceiveThread { channel, source }));
                    return;
                }
            },
        };
        let retire = Arc::new(AtomicBool::new(false));
        let member = Member { channel: channel.clone(), ch, reader, retire: Arc::clone(&retire) };
        let g = &mut st.groups[group];
        g.inbox.lock().expect("shm inbox lock").push(member);
        g.assigned += 1;
        g.waker.wake();
        st.readers.insert(channel, ChannelReader { file: id, group, retire });
    }

    /// Starts a receive thread with its wait set; returns its index in `st.groups`.
    fn spawn_group(self: &Arc<Self>, st: &mut RecvState, sink: &Arc<dyn Sink>) -> std::io::Result<usize> {
        let mut set = WaitSet::with_mode(Some(&self.dir), self.mode);
        set.set_spin(self.spin);
        if let Some(e) = set.doorbell_error() {
            // Still correct, only slower: the set sleeps on its channels' own futex words, in slices.
            if st.warned.insert(self.dir.join(nerve_shm::BELL_FILE)) {
                let (dir, reason) = (self.dir.clone(), e.to_string());
                sink.report(transport(ShmProviderError::Doorbell { dir, reason }));
            }
        }
        let inbox = Arc::new(Mutex::new(Vec::new()));
        let retired = Arc::new(AtomicBool::new(false));
        let waker = set.waker();
        let (me, mine, sink, dropped) = (Arc::clone(self), Arc::clone(&inbox), Arc::clone(sink), Arc::clone(&retired));
        let thread = std::thread::Builder::new()
            .name("nerve-shm-rx".into())
            .spawn(move || me.receive(set, &mine, &dropped, sink))?;
        st.groups.push(Group { inbox, assigned: 0, thread: Some(thread), waker, retired });
        Ok(st.groups.len() - 1)
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
    pub(super) fn scan(self: &Arc<Self>, st: &mut RecvState, start: Start) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            if let Some(name) = entry.file_name().to_str() {
                self.consider(st, name, start);
            }
        }
    }

    /// A receive thread: sleeps on all its channels at once in `set` (no periodic wake-up: a put on any of them, or
    /// the provider's waker, wakes it), reads the channels the set names and hands each message to the bus, until
    /// the provider stops.
    fn receive(&self, mut set: WaitSet, inbox: &Mutex<Vec<Member>>, retired: &AtomicBool, sink: Arc<dyn Sink>) {
        // Indexed by the channel's key in `set`.
        let mut members: Vec<Option<Member>> = Vec::new();
        let mut ready = Vec::new();
        let mut poll = false;
        while !self.stop.load(Ordering::Relaxed) {
            for m in inbox.lock().expect("shm inbox lock").drain(..) {
                let key = set.add(&m.ch);
                if members.len() <= key {
                    members.resize_with(key + 1, || None);
                }
                members[key] = Some(m);
            }
            if retired.swap(false, Ordering::Relaxed) {
                for (key, slot) in members.iter_mut().enumerate() {
                    if slot.as_ref().is_some_and(|m| m.retire.load(Ordering::Relaxed)) {
                        *slot = None;
                        set.remove(key);
                    }
                }
            }
            // With callbacks waiting for an inline dispatcher, only look; else sleep until something comes.
            set.wait(if poll { Some(Duration::ZERO) } else { None }, &mut ready);
            for &key in &ready {
                let Some(m) = members.get_mut(key).and_then(|m| m.as_mut()) else { continue };
                if m.retire.load(Ordering::Relaxed) {
                    continue;
                }
                if self.read_some(m, &*sink) {
                    set.again(key);
                }
            }
            poll = sink.drained();
        }
    }

    /// Hands the bus what channel `m` has, at most one ring's worth (so no channel starves the others); returns
    /// whether it may have more.
    fn read_some(&self, m: &mut Member, sink: &dyn Sink) -> bool {
        let c = &self.counters;
        let batch = m.ch.frames();
        let mut taken = 0u64;
        while taken < batch {
            let got = match &self.views {
                None => m
                    .reader
                    .get_with(ReadMode::Next, Wait::Poll, |bytes| bytes.to_vec())
                    .map(|o| o.map(|(info, data)| (info, Taken::Bytes(data)))),
                // Views: the frame is not read here; the handler reads it in place and checks it.
                Some(_) => m.reader.view(ReadMode::Next, Wait::Poll).map(|o| o.map(|v| (v.info(), Taken::View(v)))),
            };
            match got {
                Ok(GetOutcome::Message((info, data))) => {
                    taken += 1;
                    c.lost.fetch_add(info.missed, Ordering::Relaxed);
                    if info.origin == self.origin {
                        c.own_dropped.fetch_add(1, Ordering::Relaxed);
                    } else {
                        c.received.fetch_add(1, Ordering::Relaxed);
                        match data {
                            Taken::Bytes(data) => {
                                sink.deliver(Incoming { channel: m.channel.clone(), data, recv_utime: now_utime() })
                            }
                            Taken::View(view) => {
                                if let Some(handler) = &self.views {
                                    (handler.lock().unwrap_or_else(|p| p.into_inner()))(&m.channel, view);
                                }
                            }
                        }
                    }
                }
                // Overwritten under the reader too often in a row: the losses come with the next message.
                Ok(GetOutcome::Retry) => taken += 1,
                Ok(GetOutcome::NothingNew | GetOutcome::TimedOut | GetOutcome::BufferTooSmall { .. }) => return false,
                Err(e) if m.reader.is_damaged() => {
                    // The file shrank under the mapping (another process truncated it): this reader reads zeros
                    // from now on. It is retired, and the channel is read again once its file is made anew.
                    self.retire_damaged(m, e, sink);
                    return false;
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
        true
    }

    /// Stops reading a channel whose file shrank under its mapping, says so to the bus, and forgets the file, so
    /// that the channel is read again when a file is made under its name (or found by a later scan).
    fn retire_damaged(&self, m: &Member, e: ShmError, sink: &dyn Sink) {
        m.retire.store(true, Ordering::Relaxed);
        let mut st = self.lock();
        if st.readers.get(&m.channel).is_some_and(|r| Arc::ptr_eq(&r.retire, &m.retire)) {
            st.retire(&m.channel);
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
pub(super) fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path).ok().map(|m| (m.dev(), m.ino()))
}
