//! [`WaitSet`]: one thread sleeping on any number of channels, with no periodic wake-up, woken at once by a put on
//! any of them (spec/shm-protocol.md, "Wait sets": registration `B-REG`, the writer's `B-RING` in `bell`, the
//! waiter's `B-WAIT`).

#[cfg(not(loom))]
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bell::{ring_only, BellFile};
use crate::channel::Channel;
use crate::error::ShmError;
use crate::layout::{decode_registration, encode_registration, Bell, HINTS};
use crate::sync::{fence, AtomicBool, Ordering};

/// The longest a [`WaitSet`] sleeps without a deadline before it looks at its channels anyway. It only bounds the
/// delay that a writer killed between publishing a message and ringing the doorbell (or a process scribbling over
/// a doorbell) can cause; an idle set wakes this rarely, whatever its size.
pub const SET_RESCUE: Duration = Duration::from_secs(10);

/// The doorbell a wait set owns.
struct Own {
    file: Arc<BellFile>,
    index: usize,
    generation: u64,
}

impl Own {
    fn bell(&self) -> &Bell {
        self.file.bell(self.index)
    }
}

/// A channel in a wait set.
struct Member {
    channel: Channel,
    /// Its registration slot in the channel's header, or `None`: the set sleeps on the channel's own futex word.
    slot: Option<(usize, u64)>,
    /// For a member without a registration: the newest sequence number when it was last handed out.
    seen: u64,
    /// In the set's queue for the next [`WaitSet::wait`].
    queued: bool,
}

/// Many channels, one sleeping thread: [`WaitSet::wait`] sleeps until a message is put on any of them (or a
/// [`SetWaker`] wakes it, or its timeout passes) and hands out the keys of the channels to read.
///
/// The set owns a doorbell: a futex word in its directory's doorbell file (`.nerve-bells`, made beside the
/// channels by the first set) that every put on a member channel rings, after setting the member's hint bit in the
/// doorbell's ready bitmap; so the set sleeps on one word, with no slice, and the cost of a message does not grow
/// with the number of channels. It registers in each channel's header (a few slots per channel): a set killed with
/// `kill -9` leaves registrations that cost writers a few atomics until another set claims its doorbell or its slot
/// (a doorbell's owner is known to be alive by a byte lock, as a writer lock's holder is). A channel of another
/// directory, or one whose slots are all taken by live sets, is slept on through its own futex word instead
/// (`futex_waitv`, with the doorbell), and a set that cannot have a doorbell ([`WaitSet::doorbell_error`]) sleeps
/// on its channels' words in slices of [`crate::WAIT_SLICE`]: slower, never wrong.
///
/// A key handed out by `wait` says "look at this channel": read it until it has nothing new (or call
/// [`WaitSet::again`] to have it handed out again at once); a key may be handed out with nothing new (two members
/// share a hint bit every 4,096 keys).
///
/// ```
/// use nerve_shm::{Channel, ChannelConfig, WaitSet};
/// # let dir = tempfile::tempdir().unwrap();
/// let config = ChannelConfig::new(8, 64).dir(dir.path());
/// let channels: Vec<Channel> =
///     (0..3).map(|i| Channel::open_or_create(&format!("c{i}"), &config)).collect::<Result<_, _>>()?;
/// let mut set = WaitSet::new(Some(dir.path()));
/// let keys: Vec<usize> = channels.iter().map(|c| set.add(c)).collect();
/// let mut ready = Vec::new();
/// set.wait(Some(std::time::Duration::ZERO), &mut ready); // new members are handed out once
/// channels[2].writer().put(b"hello")?;
/// set.wait(None, &mut ready);
/// assert_eq!(ready, [keys[2]]);
/// # Ok::<(), nerve_shm::ShmError>(())
/// ```
pub struct WaitSet {
    own: Option<Own>,
    error: Option<ShmError>,
    members: Vec<Option<Member>>,
    free: Vec<usize>,
    queue: Vec<usize>,
    /// The keys of the members without a registration.
    unregistered: Vec<usize>,
    interrupt: Arc<AtomicBool>,
    spin: Duration,
}

/// Wakes a [`WaitSet`] from another thread: its `wait` returns (with no key) as soon as it sees the wake.
#[derive(Clone)]
pub struct SetWaker {
    interrupt: Arc<AtomicBool>,
    bell: Option<(Arc<BellFile>, usize)>,
}

impl SetWaker {
    /// Makes the set's current or next `wait` return. Takes no lock.
    pub fn wake(&self) {
        self.interrupt.store(true, Ordering::SeqCst);
        if let Some((file, index)) = &self.bell {
            ring_only(file, *index);
        }
    }
}

impl std::fmt::Debug for WaitSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitSet")
            .field("channels", &self.len())
            .field("doorbell", &self.own.as_ref().map(|o| o.index))
            .finish()
    }
}

impl WaitSet {
    /// A wait set with a doorbell in the channel directory `dir` (see [`crate::channel_dir`]), making the
    /// directory's doorbell file (mode 0600) if it has none.
    #[cfg(not(loom))]
    pub fn new(dir: Option<&Path>) -> WaitSet {
        WaitSet::with_mode(dir, crate::DEFAULT_MODE)
    }

    /// [`WaitSet::new`], making the doorbell file with permission bits `mode` if there is none (give the mode of
    /// the channels: every process that writes them rings the doorbells).
    #[cfg(not(loom))]
    pub fn with_mode(dir: Option<&Path>, mode: u32) -> WaitSet {
        let dir = crate::channel_dir(dir);
        let claimed = crate::bell::files::open(&dir, Some(mode)).and_then(|file| {
            let got = file.claim()?;
            got.map(|(index, generation)| Own { file, index, generation }).ok_or_else(|| ShmError::Io {
                path: dir.join(crate::layout::BELL_FILE),
                op: "claiming a doorbell",
                source: std::io::Error::other(format!(
                    "all {} doorbells are held by live processes",
                    crate::layout::BELLS
                )),
            })
        });
        let (own, error) = match claimed {
            Ok(own) => (Some(own), None),
            Err(e) => (None, Some(e)),
        };
        WaitSet::from_parts(own, error)
    }

    /// A wait set whose doorbell lives on the heap, for the loom model (`--cfg loom` only).
    #[cfg(loom)]
    pub fn in_memory() -> WaitSet {
        let file = BellFile::in_memory();
        let (index, generation) = file.claim().unwrap().unwrap();
        WaitSet::from_parts(Some(Own { file, index, generation }), None)
    }

    fn from_parts(own: Option<Own>, error: Option<ShmError>) -> WaitSet {
        WaitSet {
            own,
            error,
            members: Vec::new(),
            free: Vec::new(),
            queue: Vec::new(),
            unregistered: Vec::new(),
            interrupt: Arc::new(AtomicBool::new(false)),
            spin: Duration::ZERO,
        }
    }

    /// Why this set has no doorbell (it then sleeps in slices), if it has none.
    pub fn doorbell_error(&self) -> Option<&ShmError> {
        self.error.as_ref()
    }

    /// How many channels the set has.
    pub fn len(&self) -> usize {
        self.members.len() - self.free.len()
    }

    /// Whether the set has no channel.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many of its channels the set sleeps on through its doorbell (the others through their own futex word).
    pub fn rung_channels(&self) -> usize {
        self.members.iter().flatten().filter(|m| m.slot.is_some()).count()
    }

    /// A handle that wakes this set from another thread.
    pub fn waker(&self) -> SetWaker {
        SetWaker {
            interrupt: Arc::clone(&self.interrupt),
            bell: self.own.as_ref().map(|o| (Arc::clone(&o.file), o.index)),
        }
    }

    /// Makes `wait` poll for up to `spin` before it sleeps (costs CPU; saves a sleeping thread's wake-up).
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin = spin;
    }

    /// The channel of `key`.
    pub fn channel(&self, key: usize) -> Option<&Channel> {
        self.members.get(key).and_then(|m| m.as_ref()).map(|m| &m.channel)
    }

    /// Adds a channel and returns its key. It is handed out by the next `wait` without sleeping, so that what was
    /// put before it was added is looked at too; from then on every put on it wakes the set.
    pub fn add(&mut self, channel: &Channel) -> usize {
        let key = self.free.pop().unwrap_or_else(|| {
            self.members.push(None);
            self.members.len() - 1
        });
        let slot = self.register(channel, key);
        // B-REG: the re-check after registering (a put before it is then seen by the caller's first look).
        fence(Ordering::SeqCst);
        let seen = channel.newest_seq();
        if slot.is_none() {
            self.unregistered.push(key);
        }
        self.members[key] = Some(Member { channel: channel.clone(), slot, seen, queued: false });
        self.again(key);
        key
    }

    /// Removes the channel of `key` (its registration with it).
    pub fn remove(&mut self, key: usize) -> Option<Channel> {
        let m = self.members.get_mut(key)?.take()?;
        if let Some((i, reg)) = m.slot {
            let _ =
                m.channel.shared.header().bell_slots[i].compare_exchange(reg, 0, Ordering::SeqCst, Ordering::Relaxed);
        }
        self.queue.retain(|k| *k != key);
        self.unregistered.retain(|k| *k != key);
        self.free.push(key);
        Some(m.channel)
    }

    /// Hands `key` out again at the next `wait`, without sleeping (its channel has more than the caller read).
    pub fn again(&mut self, key: usize) {
        if let Some(Some(m)) = self.members.get_mut(key) {
            if !m.queued {
                m.queued = true;
                self.queue.push(key);
            }
        }
    }

    /// B-REG: takes a free registration slot in the channel's header (reclaiming the slots of sets that are gone),
    /// or `None` if this set has no doorbell, the channel lives in another directory, or all slots hold live sets.
    fn register(&self, channel: &Channel, key: usize) -> Option<(usize, u64)> {
        let own = self.own.as_ref()?;
        #[cfg(not(loom))]
        {
            let dir = channel.path().parent()?;
            let theirs = crate::bell::files::open(dir, None).ok()?;
            if !Arc::ptr_eq(&theirs, &own.file) {
                return None;
            }
        }
        channel.shared.bells.set(&own.file);
        let h = channel.shared.header();
        let reg = encode_registration(own.index, key % HINTS, own.generation);
        // First without asking the kernel anything (registrations of doorbells claimed again since are stale),
        // then, if every slot is taken, with the liveness check of each slot's doorbell.
        for ask_kernel in [false, true] {
            for (i, slot) in h.bell_slots.iter().enumerate() {
                let old = slot.load(Ordering::SeqCst);
                if old != 0 {
                    let (b, _, generation) = decode_registration(old);
                    let stale = if ask_kernel {
                        !own.file.registration_live(b, generation)
                    } else {
                        own.file.bell(b).generation.load(Ordering::SeqCst) != generation
                    };
                    if !stale || slot.compare_exchange(old, 0, Ordering::SeqCst, Ordering::Relaxed).is_err() {
                        continue;
                    }
                }
                // B-REG: the slot, then its bit in bell_mask (bits are never cleared: a bit names a slot in use or
                // once used, and the lowest free slot is taken, so they stay few).
                if slot.compare_exchange(0, reg, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
                    h.bell_mask.fetch_or(1 << i, Ordering::SeqCst);
                    return Some((i, reg));
                }
            }
        }
        None
    }

    /// Waits until a member channel may have something new, a [`SetWaker`] wakes the set, or `timeout` passes
    /// (`None`: no deadline); fills `ready` with the keys to look at (empty: woken or timed out) and returns how
    /// many. Without a deadline it sleeps until woken (or [`SET_RESCUE`] passes, then looks anyway).
    pub fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<usize>) -> usize {
        ready.clear();
        let mut deadline: Option<Instant> = None;
        loop {
            self.collect(ready);
            if !ready.is_empty() {
                return ready.len();
            }
            if self.interrupt.swap(false, Ordering::SeqCst) {
                return 0;
            }
            let remaining = match timeout {
                None => None,
                Some(d) => {
                    let now = Instant::now();
                    let end = *deadline.get_or_insert_with(|| now.checked_add(d).unwrap_or(now + SET_RESCUE * 1000));
                    let left = end.saturating_duration_since(now);
                    if left.is_zero() {
                        return 0;
                    }
                    Some(left)
                }
            };
            if !self.spin.is_zero() && self.spin_until_rung(remaining) {
                continue;
            }
            self.sleep(remaining);
        }
    }

    /// Whether something rang (or a member without a registration changed), without taking it.
    fn rung(&self) -> bool {
        self.own.as_ref().is_some_and(|o| o.bell().summary.load(Ordering::SeqCst) != 0)
            || self.interrupt.load(Ordering::SeqCst)
            || self
                .unregistered
                .iter()
                .filter_map(|&k| self.members[k].as_ref())
                .any(|m| m.channel.newest_seq() != m.seen)
    }

    fn spin_until_rung(&self, remaining: Option<Duration>) -> bool {
        let start = Instant::now();
        let spin = remaining.map_or(self.spin, |r| r.min(self.spin));
        while start.elapsed() < spin {
            if self.rung() {
                return true;
            }
            std::hint::spin_loop();
        }
        false
    }

    /// Takes what rang: the queue, the doorbell's ready bits (B-WAIT: summary, then each word it names) mapped to
    /// keys, and the members without a registration whose newest changed.
    fn collect(&mut self, ready: &mut Vec<usize>) {
        for key in self.queue.drain(..) {
            if let Some(Some(m)) = self.members.get_mut(key) {
                m.queued = false;
                if m.slot.is_none() {
                    m.seen = m.channel.newest_seq();
                }
                ready.push(key);
            }
        }
        if let Some(own) = &self.own {
            let bell = own.bell();
            let mut summary = bell.summary.swap(0, Ordering::SeqCst); // B-WAIT: take the summary
            while summary != 0 {
                let w = summary.trailing_zeros() as usize;
                summary &= summary - 1;
                let Some(word) = bell.ready.get(w) else { continue };
                let mut bits = word.swap(0, Ordering::SeqCst); // B-WAIT: take the ready word
                while bits != 0 {
                    let hint = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let mut key = hint;
                    while key < self.members.len() {
                        if self.members[key].as_ref().is_some_and(|m| m.slot.is_some()) {
                            ready.push(key);
                        }
                        key += HINTS;
                    }
                }
            }
        }
        for &key in &self.unregistered {
            if let Some(Some(m)) = self.members.get_mut(key) {
                let newest = m.channel.newest_seq();
                if newest != m.seen {
                    m.seen = newest;
                    ready.push(key);
                }
            }
        }
        ready.sort_unstable();
        ready.dedup();
    }

    /// B-WAIT: read the doorbell word, say "sleeping", register on the members without a registration (G-WAIT),
    /// re-check, sleep; undo. The sleep has no slice unless some member cannot be slept on at once.
    fn sleep(&mut self, remaining: Option<Duration>) {
        let rescue = remaining.map_or(SET_RESCUE, |r| r.min(SET_RESCUE));
        let own = self.own.as_ref();
        let w0 = own.map(|o| o.bell().word.load(Ordering::SeqCst)); // B-WAIT: w0 = word
        if let Some(o) = own {
            o.bell().sleeping.fetch_add(1, Ordering::SeqCst); // B-WAIT: sleeping
        }
        let unregistered: Vec<&Channel> =
            self.unregistered.iter().filter_map(|&k| self.members[k].as_ref()).map(|m| &m.channel).collect();
        #[cfg(not(loom))]
        let room = crate::futex::FUTEX_WAITV_MAX - 1;
        #[cfg(loom)]
        let room = 0;
        let watched = &unregistered[..unregistered.len().min(room)];
        let words: Vec<u32> = watched
            .iter()
            .map(|c| {
                let h = c.shared.header();
                let w = h.wake.load(Ordering::SeqCst); // G-WAIT: w0
                h.waiters.fetch_add(1, Ordering::SeqCst);
                w
            })
            .collect();
        let sliced = own.is_none() || watched.len() < unregistered.len();
        let slice = if sliced { rescue.min(crate::WAIT_SLICE) } else { rescue };
        // B-WAIT: re-check (the doorbell's summary, the unregistered members, the waker), then sleep. The fence pairs
        // with B-RING's between its bump of the word and its load of `sleeping`: either that load sees this set
        // sleeping, or this re-check sees the ring.
        fence(Ordering::SeqCst);
        if !self.rung() && !slice.is_zero() {
            match (own, w0) {
                (Some(o), Some(w0)) if watched.is_empty() => o.file.memory.wait(o.bell(), w0, slice),
                _ => sleep_many(own.zip(w0), watched, &words, slice),
            }
        }
        if let Some(o) = own {
            o.bell().sleeping.fetch_sub(1, Ordering::SeqCst);
        }
        for c in watched {
            c.shared.header().waiters.fetch_sub(1, Ordering::SeqCst);
        }
        #[cfg(not(loom))]
        if self.own.as_ref().is_some_and(|o| o.file.memory.damaged()) {
            // The doorbell file shrank under its mapping: sleep on the channels' own words from now on.
            let own = self.own.take();
            if let Some(o) = &own {
                self.error = Some(ShmError::Corrupt {
                    path: o.file.path.clone(),
                    what: "the doorbell file shrank under this wait set".into(),
                });
            }
            for (key, m) in self.members.iter_mut().enumerate() {
                let Some(m) = m else { continue };
                if let Some((i, reg)) = m.slot.take() {
                    self.unregistered.push(key);
                    let _ = m.channel.shared.header().bell_slots[i].compare_exchange(
                        reg,
                        0,
                        Ordering::SeqCst,
                        Ordering::Relaxed,
                    );
                }
                m.seen = 0; // looked at once more
            }
        }
    }
}

/// Sleeps on a doorbell word and channel words at once (`futex_waitv`), at most `slice`.
#[cfg(not(loom))]
fn sleep_many(own: Option<(&Own, u32)>, channels: &[&Channel], words: &[u32], slice: Duration) {
    let mut pairs: Vec<(&crate::sync::AtomicU32, u32)> = Vec::with_capacity(channels.len() + 1);
    if let Some((o, w0)) = own {
        pairs.push((&o.bell().word, w0));
    }
    pairs.extend(channels.iter().zip(words).map(|(c, &w)| (&c.shared.header().wake, w)));
    if pairs.is_empty() {
        std::thread::sleep(slice);
        return;
    }
    if crate::futex::futex_waitv(&pairs, slice).is_err() {
        // No futex_waitv (Linux before 5.16): sleep on the first word only, briefly.
        crate::futex::futex_wait(pairs[0].0, pairs[0].1, slice.min(Duration::from_millis(1)));
    }
}

#[cfg(loom)]
fn sleep_many(_own: Option<(&Own, u32)>, _channels: &[&Channel], _words: &[u32], _slice: Duration) {
    loom::thread::yield_now();
}

impl Drop for WaitSet {
    fn drop(&mut self) {
        for key in 0..self.members.len() {
            self.remove(key);
        }
        if let Some(own) = self.own.take() {
            own.file.release(own.index);
        }
    }
}
