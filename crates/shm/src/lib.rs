//! Shared-memory channels between processes on one host, where the newest sample always wins (the design of the
//! Ach paper): `put` never waits for a reader and drops the oldest messages when the channel is full; `get` returns the
//! next unseen message in order or the newest one, polls or sleeps with a timeout, and says how many messages a
//! reader missed. The protocol is spec/shm-protocol.md; its step labels (`W1`..`W10`, `G1`..`G6`, `REC`) are in the
//! code.
//!
//! # Brief overview
//!
//! A [`Channel`] is a file (`nerve-NAME` under `/dev/shm`, or `$NERVE_SHM_DIR`, or a [`ChannelConfig::dir`]) with a
//! header, an index ring of `frames` entries and a data ring of variable-size frames. [`Channel::create`],
//! [`Channel::open`] and [`Channel::open_or_create`] map it; a foreign, old-version or truncated file is refused
//! with a [`ShmError`]. A [`Writer`] puts bytes ([`Writer::put`]) or fills a loaned frame in place
//! ([`Writer::loan`], then [`Loan::commit`]); a [`Reader`] gets them ([`Reader::get`] into a buffer,
//! [`Reader::get_with`] zero-copy through a closure, or [`Reader::view`] zero-copy as a [`View`] to keep) as a
//! [`GetOutcome`] with [`MessageInfo`] (sequence number, missed count, put time, the writer's origin id).
//! [`TypedWriter`] and [`TypedReader`] do the same for LCM message types.
//! [`Channel::stats`], [`Channel::list`], [`Channel::remove`] and [`Channel::set_mode`] serve `nerve chan`, with
//! the file names of bus channels ([`encode_channel`], [`decode_channel`]) and the sizes and modes of the command
//! line ([`parse_size`], [`parse_mode`], [`DEFAULT_FRAMES`], [`DEFAULT_FRAME_SIZE`]). A [`WaitSet`] lets one thread
//! sleep on any number of channels ([`Channel::wait_any`] is its sliced ancestor, for up to 128).
//!
//! # Waiting on many channels
//!
//! [`WaitSet::new`] (or [`WaitSet::with_mode`]) claims a doorbell in the channel directory; [`WaitSet::add`] takes a
//! [`Channel`] and returns its key; [`WaitSet::wait`] sleeps (no slice: a put on any member rings the doorbell and
//! wakes it at once; `Some(timeout)` is honoured) and fills a `Vec` with the keys to read, which the caller reads
//! with its own [`Reader`]s until they have nothing new (or hands back with [`WaitSet::again`]). [`WaitSet::remove`]
//! drops a member; [`WaitSet::waker`] gives a [`SetWaker`] that ends a wait from another thread;
//! [`WaitSet::set_spin`] polls before sleeping; [`WaitSet::rung_channels`] says how many members are woken through
//! the doorbell, and [`WaitSet::doorbell_error`] why there is no doorbell (the set then sleeps in slices: slower,
//! still correct). An idle set costs nothing but its thread's sleep, whatever the number of channels; the cost of a
//! wake-up does not grow with it either.
//!
//! ```
//! # use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Wait, WaitSet};
//! # let dir = tempfile::tempdir().unwrap();
//! let config = ChannelConfig::new(16, 256).dir(dir.path());
//! let mut readers = Vec::new();
//! let mut set = WaitSet::new(Some(dir.path()));
//! for i in 0..100 {
//!     let channel = Channel::open_or_create(&format!("joint{i}"), &config)?;
//!     let key = set.add(&channel);
//!     assert_eq!(key, readers.len());
//!     readers.push(channel.reader_after_newest());
//! }
//! let mut writer = Channel::open("joint42", Some(dir.path()))?.writer();
//! writer.put(b"angle=0.5")?;
//! let (mut ready, mut buf) = (Vec::new(), [0u8; 256]);
//! set.wait(Some(std::time::Duration::from_secs(5)), &mut ready);
//! for &key in &ready {
//!     while let GetOutcome::Message(info) = readers[key].get(&mut buf, ReadMode::Next, Wait::Poll)? {
//!         assert_eq!((key, &buf[..info.len]), (42, &b"angle=0.5"[..]));
//!     }
//! }
//! # Ok::<(), nerve_shm::ShmError>(())
//! ```
//!
//! ```
//! use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Wait};
//! # let dir = std::env::temp_dir().join(format!("nerve-shm-doctest-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! let channel = Channel::open_or_create("pose", &ChannelConfig::new(16, 1024).dir(&dir))?;
//! let mut writer = channel.writer();
//! let mut reader = channel.reader();
//! writer.put(b"x=1.0")?;
//! let mut loan = writer.loan(5)?; // written in place: no copy
//! loan.bytes_mut().copy_from_slice(b"x=2.0");
//! loan.commit();
//!
//! let mut buf = [0u8; 1024];
//! match reader.get(&mut buf, ReadMode::Next, Wait::Poll)? {
//!     GetOutcome::Message(info) => assert_eq!(&buf[..info.len], b"x=1.0"),
//!     other => panic!("{other:?}"),
//! }
//! // Zero-copy: the closure runs over the bytes in shared memory; its result counts only if they were intact.
//! let newest = reader.get_with(ReadMode::Newest, Wait::Timeout(std::time::Duration::from_millis(100)), |b| b.len())?;
//! assert!(matches!(newest, GetOutcome::Message((info, 5)) if info.seq == 2 && info.missed == 0));
//! Channel::remove("pose", Some(&dir))?;
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), nerve_shm::ShmError>(())
//! ```
//!
//! # Design
//!
//! Writers take turns on a lock in the header (a futex word naming its holder), held for one put; readers take no lock
//! at all and validate what they read instead (the index entry as a seqlock, the data against the `tail` watermark
//! below which writers may overwrite). So a reader can never make a writer wait, however slow or stuck it is, and a
//! process killed at any instant leaves no lock held (the kernel drops the holder's liveness byte lock, so the next
//! writer sees it dead, takes the lock over and finishes or forgets the dead writer's put, `REC`) and no torn message
//! visible. Waiting readers sleep on a futex word the writers bump, rather than spinning: on a loaded machine with few
//! cores a spinning reader steals the writer's CPU. Spinning before sleeping is available ([`Reader::set_spin`])
//! because waking a sleeping process costs more than a short spin. A wait set sleeps on its own doorbell word, which
//! every put on a member rings after waking the channel's own sleepers (spec/shm-protocol.md, "Wait sets").
//!
//! # What a reader may hold on to
//!
//! Nothing that makes a writer wait: [`Reader::get`] copies; [`Reader::get_with`]'s closure sees the bytes in place,
//! may see them being overwritten (its result is then discarded and it runs again on a newer message), and must not
//! keep a reference to them or act on them before `get_with` returns its result. A [`View`] keeps a message in place
//! for as long as its holder likes, but does not keep writers off its frame: once they reclaim it (about a ring of
//! messages later) [`View::check`] reports [`Overwritten`], and only what was read before a passing check counts.
//! A [`Loan`] belongs to its writer until commit or drop and holds the writer lock meanwhile (other writers wait for
//! it; readers never do).
//!
//! # Reading big frames without a copy
//!
//! For a frame of megabytes (a camera image), take a view and read it in place:
//!
//! ```no_run
//! # use nerve_shm::{Channel, GetOutcome, ReadMode, Wait};
//! # fn process(_: &[u8]) -> u64 { 0 }
//! # let channel = Channel::open("camera", None)?;
//! let mut reader = channel.reader();
//! if let GetOutcome::Message(view) = reader.view(ReadMode::Newest, Wait::Forever)? {
//!     let result = process(view.bytes()); // in shared memory, no copy
//!     if view.check().is_ok() {
//!         // `result` was computed from the message's bytes: use it.
//!     } // else a writer overwrote the frame meanwhile: drop `result`, take the next view.
//! }
//! # Ok::<(), nerve_shm::ShmError>(())
//! ```
//!
//! Taking a view and checking it cost the same for 64 bytes and for 16 MiB (one index entry read, two loads of
//! `tail`; no byte of the frame is touched, except on a channel with checksums, where it is hashed once when the
//! view is taken). A benchmark of zero-copy reads should time `reader.view(..)` and `view.check()`, and, to compare
//! like with like, whatever touching of `view.bytes()` the copying read's consumer would do too; [`View::to_vec`]
//! is the copying read through a view (a copy that is intact when it returns `Ok`). `examples/view_read.rs`
//! prints these figures beside [`Reader::get`] and a plain memcpy of the same size.
//!
//! # Trust
//!
//! Every process that uses a channel needs read and write access to its file (readers register as waiters). Values
//! read from the file are bounds-checked before use, so a process with write access that scribbles over the file
//! causes errors and counted misses, never a crash or a hang (a writer waits at most [`LOCK_PATIENCE`] for the
//! lock); [`Channel::check`] finds the damage, and a channel made with [`ChannelConfig::checksum`] never hands out
//! scribbled bytes as a message. A lock word overwritten with a holder that does not exist is taken over after one
//! liveness check (holders are named by random ids backed by byte locks the kernel drops when their process dies,
//! not by pids, so a reused pid cannot look alive); a live holder that stalls makes a writer wait at most
//! [`LOCK_PATIENCE`] (and one bounded liveness check), then the put fails.
//!
//! A file truncated or shrunk under a handle faults its mapping (`SIGBUS`): the process does not die. A handler
//! maps zeros over the faulting channel mapping, the operation in progress fails or counts a miss, and the handle
//! says it is damaged ([`Channel::is_damaged`]) and fails every put and get with a "reopen" error after that; open
//! the channel again once its file is made anew. A file removed or replaced by a rename over it is not noticed by
//! the mapping (it keeps the old file): [`Channel::is_current`] says whether the path still names it, and the bus
//! provider asks it to reopen. Such a process can still destroy the channel: give access only to trusted processes
//! (mode 0600 by default). Why a handler rather than checks: nothing checked before an access can stop the file
//! shrinking between the check and the access; the handler's design is in the `sys` module's source docs.

#![deny(missing_docs)]

mod bell;
mod channel;
#[cfg(not(loom))]
mod check;
mod error;
#[cfg(not(loom))]
mod futex;
#[cfg(loom)]
mod heap;
mod layout;
#[cfg(not(loom))]
mod lock;
mod names;
mod ring;
mod sync;
#[cfg(not(loom))]
mod sys;
mod typed;
mod view;
mod waitset;

#[cfg(loom)]
use heap as memory;
#[cfg(not(loom))]
use sys as memory;

pub use channel::{
    channel_dir, channel_path, Channel, ChannelConfig, ChannelStats, ListedChannel, DEFAULT_DIR, DEFAULT_MODE, DIR_ENV,
    FILE_PREFIX,
};
pub use error::ShmError;
pub use layout::{BELL_FILE, BELL_MAGIC, MAGIC, MAX_DATA_BYTES, MAX_FRAMES, MAX_FRAME_SIZE, VERSION};
pub use names::{decode_channel, encode_channel, parse_mode, parse_size, DEFAULT_FRAMES, DEFAULT_FRAME_SIZE};
pub use ring::{
    process_origin, GetOutcome, Loan, MessageInfo, ReadMode, Reader, Wait, Writer, LOCK_PATIENCE, RETRY_LIMIT,
    WAIT_SLICE,
};
pub use typed::{TypedReader, TypedWriter};
pub use view::{Overwritten, View};
pub use waitset::{SetWaker, WaitSet, SET_RESCUE};
