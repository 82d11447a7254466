//! [`View`]: a received message kept as a view of its frame in shared memory, with the rule that says when what was
//! read through it counts (spec/shm-protocol.md, "Views": steps `V1` and `V2`), and [`Overwritten`], what a view
//! reports once a writer has reclaimed its frame.
//!
//! A view is a G5 read whose validation is not done once after a closure but whenever the holder asks: the frame's
//! byte position is kept, and `V2` compares it with `tail` after an acquire fence, exactly as `G5` does. Writers know
//! nothing of views and never wait for one; the newest-sample rule is kept by reporting, not by pinning frames.

use std::fmt;
use std::sync::Arc;

use crate::error::ShmError;
use crate::memory::Memory;
use crate::ring::{frame_checksum, FrameAt, GetOutcome, MessageInfo, ReadMode, Reader, Shared, Wait};
use crate::sync::{fence, Ordering};

/// What V1 takes from the ring: where the frame is (under loom, whose data words cannot be borrowed as bytes, also
/// a copy of them for [`View::bytes`]).
#[cfg(not(loom))]
pub(crate) type Taken = FrameAt;
#[cfg(loom)]
pub(crate) type Taken = (FrameAt, Vec<u8>);

/// V1's zero-copy "read" for `Reader::get_core`: note where the frame is, and hash it in place on a channel with
/// checksums (G5's check then runs after the hash, as for `get_with`).
#[cfg(not(loom))]
pub(crate) fn take(memory: &Memory, frame: FrameAt, hash: bool) -> (Taken, u64) {
    let sum = if hash { frame_checksum(memory.data(frame.off, frame.len)) } else { 0 };
    (frame, sum)
}

#[cfg(loom)]
pub(crate) fn take(memory: &Memory, frame: FrameAt, hash: bool) -> (Taken, u64) {
    let mut copy = vec![0; frame.len];
    memory.read_data(frame.off, &mut copy);
    let sum = if hash { frame_checksum(&copy) } else { 0 };
    ((frame, copy), sum)
}

// `Reader::view` lives here, beside the type it makes, so the ring knows nothing of views (no ring <-> view circle).
impl Reader {
    /// Zero-copy get that hands the message out as a [`View`] of its frame in shared memory, to keep for as long as
    /// the caller likes: `view.bytes()` are the bytes in place, and [`View::check`] says whether they were still the
    /// message's when it was called (see [`View`] for the rule). The frame was intact when the view was made; a
    /// writer never waits for a view (it overwrites the frame when its turn comes, and the view then reports
    /// [`Overwritten`](crate::Overwritten)). Several views may be held at once, and they outlive the reader and the
    /// channel handle they came from. This never returns [`GetOutcome::BufferTooSmall`].
    ///
    /// Taking a view costs the same whatever the message's size (the bytes are not read), except on a channel with
    /// checksums, where the frame is hashed once, here.
    pub fn view(&mut self, mode: ReadMode, wait: Wait) -> Result<GetOutcome<View>, ShmError> {
        // V1: G1-G5 as a zero-copy read whose closure only notes where the frame is (and hashes it, on a channel with
        // checksums); G5's check after it says the frame was intact when the view was made.
        let outcome = self.get_core(mode, wait, None, || false, take)?;
        Ok(outcome.map(|(info, frame)| View::new(Arc::clone(&self.shared), info, frame)))
    }
}

/// A received message as a view of its frame in the channel's shared memory, made by
/// [`Reader::view`](crate::Reader::view): no copy, whatever its size. It keeps the channel mapped (it outlives the
/// reader and the channel handle it came from) and is released when dropped; nothing else is held (no lock, nothing
/// a writer waits for).
///
/// The rule: the frame was intact when the view was made. Writers keep putting, and when the data ring comes round
/// to the frame a writer overwrites it without waiting; from then on [`View::check`] returns [`Overwritten`] (and
/// [`View::still_valid`] false), every time. So read what you need through [`View::bytes`], then call `check`:
/// if it passes, every byte you read before it was the message's; if not, discard what you read. [`View::read`] and
/// [`View::to_vec`] do that for you (and refuse at once a view already overwritten). What a view must not do is act
/// on its bytes before a passing check, or trust bytes read after the last one. A frame lasts about `frames`
/// messages (fewer when messages are larger than a frame's share of the data ring), so a view of a channel put at
/// rate `r` stays valid for about `frames / r`.
///
/// On a channel with checksums the frame is hashed when the view is made; later scribbles by a process that ignores
/// the protocol are not detected by `check`, which reports writers' reclaiming only. A file that shrinks under the
/// mapping makes the bytes zeros and `check` report [`Overwritten::file_shrank`].
///
/// ```
/// use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Wait};
/// # let dir = std::env::temp_dir().join(format!("nerve-shm-view-doctest-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let channel = Channel::open_or_create("camera", &ChannelConfig::new(4, 1 << 20).dir(&dir))?;
/// let (mut writer, mut reader) = (channel.writer(), channel.reader());
/// writer.put(&[7u8; 1 << 20])?;
/// let GetOutcome::Message(view) = reader.view(ReadMode::Newest, Wait::Poll)? else { panic!() };
/// let sum: u64 = view.bytes().iter().map(|&b| u64::from(b)).sum(); // read in place: no copy
/// view.check().expect("not overwritten yet"); // so `sum` is over the message's bytes
/// assert_eq!(sum, 7 << 20);
/// for _ in 0..4 {
///     writer.put(&[0u8; 1 << 20])?; // the writer never waits for the view
/// }
/// assert!(view.check().is_err() && view.to_vec().is_err());
/// # Channel::remove("camera", Some(&dir))?;
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), nerve_shm::ShmError>(())
/// ```
pub struct View {
    shared: Arc<Shared>,
    info: MessageInfo,
    frame: FrameAt,
    #[cfg(loom)]
    snapshot: Vec<u8>,
}

impl View {
    #[cfg(not(loom))]
    pub(crate) fn new(shared: Arc<Shared>, info: MessageInfo, frame: Taken) -> View {
        View { shared, info, frame }
    }

    #[cfg(loom)]
    pub(crate) fn new(shared: Arc<Shared>, info: MessageInfo, (frame, snapshot): Taken) -> View {
        View { shared, info, frame, snapshot }
    }

    /// What came with the message (sequence number, length, missed count, put time, origin).
    pub fn info(&self) -> MessageInfo {
        self.info
    }

    /// The message's sequence number.
    pub fn seq(&self) -> u64 {
        self.info.seq
    }

    /// The message's length in bytes.
    pub fn len(&self) -> usize {
        self.info.len
    }

    /// Whether the message is empty.
    pub fn is_empty(&self) -> bool {
        self.info.len == 0
    }

    /// The frame's bytes where they lie in shared memory (8-byte aligned). They are the message's until a writer
    /// reclaims the frame, and whatever that writer puts there after: only what was read before a passing
    /// [`View::check`] counts.
    pub fn bytes(&self) -> &[u8] {
        #[cfg(not(loom))]
        return self.shared.memory.data(self.frame.off, self.frame.len);
        #[cfg(loom)]
        &self.snapshot
    }

    /// Whether the frame still holds the message: true means every byte read through [`View::bytes`] before this
    /// call was the message's. Once false, false for ever. One fence and one load of a word writers store to only
    /// when they reclaim frames.
    pub fn still_valid(&self) -> bool {
        // V2: the loads of the bytes read before are ordered before the `tail` load (G5's fence); a writer stores
        // `tail` past the frame's start before it writes a byte of it (W3).
        fence(Ordering::Acquire);
        let t = self.shared.header().tail.load(Ordering::Relaxed);
        t <= self.frame.start && !self.shared.damaged()
    }

    /// [`View::still_valid`] as a `Result`, for `?`.
    pub fn check(&self) -> Result<(), Overwritten> {
        if self.still_valid() {
            Ok(())
        } else {
            Err(Overwritten { seq: self.info.seq, file_shrank: self.shared.damaged() })
        }
    }

    /// Runs `f` over the bytes in place and returns its result if they were still the message's after it returned
    /// (not run at all on a view already overwritten). Like `Reader::get_with`'s closure, `f` may see bytes being
    /// overwritten: it must not act on them or panic on garbage; only a returned `Ok` is valid.
    pub fn read<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Result<R, Overwritten> {
        self.check()?;
        #[cfg(not(loom))]
        let result = f(self.bytes());
        #[cfg(loom)]
        let result = {
            // Under loom the bytes are read again from the data words, so the model sees them race with writers.
            let mut copy = vec![0; self.frame.len];
            self.shared.memory.read_data(self.frame.off, &mut copy);
            f(&copy)
        };
        self.check().map(|()| result)
    }

    /// A copy of the message, made only if the frame still held it after the copy (the copy is then intact).
    pub fn to_vec(&self) -> Result<Vec<u8>, Overwritten> {
        self.read(<[u8]>::to_vec)
    }
}

impl fmt::Debug for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("View")
            .field("channel", &self.shared.name)
            .field("info", &self.info)
            .field("still_valid", &self.still_valid())
            .finish()
    }
}

/// A [`View`]'s frame no longer holds its message: a writer reclaimed it for a newer one (writers never wait for
/// views), or the channel file shrank under the mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overwritten {
    seq: u64,
    file_shrank: bool,
}

impl Overwritten {
    /// The sequence number of the message the view held.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Whether the cause was the channel file shrinking under this handle (then every get fails too: reopen the
    /// channel) rather than a writer's reclaiming the frame.
    pub fn file_shrank(&self) -> bool {
        self.file_shrank
    }
}

impl fmt::Display for Overwritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file_shrank {
            write!(f, "message {}: the channel file shrank under this handle; reopen the channel", self.seq)
        } else {
            write!(
                f,
                "message {} was overwritten by newer messages while viewed (writers never wait for a view: copy \
                 what must outlive about a ring of messages, or read it sooner)",
                self.seq
            )
        }
    }
}

impl std::error::Error for Overwritten {}
