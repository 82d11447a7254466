//! The Nerve shared-memory channel (`nerve-shm`) as a latency peer: one channel file per link, one `put` read by
//! every receiver, each reader in order ([`ReadMode::Next`]) so that a skipped message is counted.
//!
//! - `shm-wait`: the receiver sleeps in `get(.., Wait::Timeout)` (the channel's futex; no spinning: the reader's
//!   default) - the waiting mode the bars hold against the futex floor and kernel IPC;
//! - `shm-poll`: the receiver spins on `get(.., Wait::Poll)` - the polling mode held against iceoryx2's;
//! - `shm-sum`: `shm-wait` on a channel made with per-frame checksums (xxh3, hashed by the writer and checked by the
//!   reader): what the checksum option costs.

use std::path::Path;
use std::time::Duration;

use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Reader, Wait, Writer};

use super::{Got, IpcError, IpcErrorKind, Rx, Tx, SIZE};
use crate::harness::clock::mono_ns;

/// Messages a channel keeps (how far a reader may fall behind before it misses some).
const FRAMES: u64 = 512;

/// How long one waiting `get` sleeps before returning [`Got::Idle`].
const SLICE: Duration = Duration::from_millis(50);

/// `dir/name` into the channel directory and name.
fn split(target: &str) -> Result<(&Path, &str), IpcError> {
    let p = Path::new(target);
    match (p.parent(), p.file_name().and_then(|n| n.to_str())) {
        (Some(d), Some(n)) if !d.as_os_str().is_empty() => Ok((d, n)),
        _ => Err(IpcError::bad(format!("nerve-shm target {target:?} is not DIR/NAME"))),
    }
}

/// Wraps a channel error with what was being done. Takes a `&'static str` or a `String` made by the caller *only on
/// the error path*: the per-message calls pass a literal, so a get or put allocates nothing (an eager
/// `"...".into()` there was a `malloc` and `free` per message, inside the measured latency).
fn shm_err(what: impl Into<String>) -> impl FnOnce(nerve_shm::ShmError) -> IpcError {
    move |e| IpcError { what: what.into(), kind: IpcErrorKind::Shm(e) }
}

/// A reader of one channel.
pub struct ShmRx {
    reader: Reader,
    poll: bool,
    missed: u64,
    _channel: Channel,
}

impl ShmRx {
    /// Opens (or makes) the channel `DIR/NAME`; `poll`: spin instead of waiting; `checksum`: make it with
    /// per-frame checksums.
    pub fn open(target: &str, poll: bool, checksum: bool) -> Result<ShmRx, IpcError> {
        let (dir, name) = split(target)?;
        let config = ChannelConfig::new(FRAMES, SIZE as u64).dir(dir).checksum(checksum);
        let channel =
            Channel::open_or_create(name, &config).map_err(shm_err(format!("opening nerve-shm channel {target}")))?;
        // An empty channel: the first Next get returns the first message put.
        let reader = channel.reader();
        Ok(ShmRx { reader, poll, missed: 0, _channel: channel })
    }
}

impl Rx for ShmRx {
    fn recv(&mut self, buf: &mut [u8; SIZE], deadline_ns: u64) -> Result<Got, IpcError> {
        let wait = if self.poll { Wait::Poll } else { Wait::Timeout(SLICE) };
        let mut spins: u32 = 0;
        loop {
            match self.reader.get(buf, ReadMode::Next, wait).map_err(shm_err("nerve-shm get"))? {
                GetOutcome::Message(info) if info.len == SIZE => {
                    self.missed += info.missed;
                    return Ok(Got::Msg);
                }
                GetOutcome::Message(info) => {
                    return Err(IpcError::bad(format!("nerve-shm: a {}-byte message, not {SIZE}", info.len)))
                }
                GetOutcome::BufferTooSmall { needed } => {
                    return Err(IpcError::bad(format!("nerve-shm: a {needed}-byte message, not {SIZE}")))
                }
                GetOutcome::TimedOut => return Ok(Got::Idle),
                // Overwritten under the reader RETRY_LIMIT times: the loss shows in the next message's `missed`.
                GetOutcome::Retry => {}
                GetOutcome::NothingNew => {
                    std::hint::spin_loop();
                    spins = spins.wrapping_add(1);
                    if spins & 1023 == 0 && mono_ns() >= deadline_ns {
                        return Ok(Got::Idle);
                    }
                }
            }
        }
    }

    fn missed(&self) -> u64 {
        self.missed
    }
}

/// The writer of one channel.
pub struct ShmTx {
    writer: Writer,
    _channel: Channel,
}

impl ShmTx {
    /// Opens the channel the receivers made.
    pub fn open(target: &str) -> Result<ShmTx, IpcError> {
        let (dir, name) = split(target)?;
        let channel = Channel::open(name, Some(dir)).map_err(shm_err(format!("opening nerve-shm channel {target}")))?;
        Ok(ShmTx { writer: channel.writer(), _channel: channel })
    }
}

impl Tx for ShmTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        self.writer.put(msg).map_err(shm_err("nerve-shm put"))?;
        Ok(())
    }
}
