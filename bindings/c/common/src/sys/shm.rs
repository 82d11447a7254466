//! [`ShmHandle`]: one open nerve-shm channel as a C library holds it (Ach's `ach_channel_t`, later `nerve.h`'s
//! channel handle): the channel, this handle's reader and a writer made on its first put.

use std::sync::{Mutex, MutexGuard};

use nerve_shm::{Channel, GetOutcome, MessageInfo, ReadMode, Reader, ShmError, View, Wait, Writer};

/// The result of [`ShmHandle::get`] (`GetOutcome` without `Retry`, which `get` handles itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Got {
    /// A message, now at the front of the buffer, and the sequence number this handle had read before it (so a
    /// newest-only get can tell whether it skipped any).
    Message(MessageInfo, u64),
    /// Nothing newer than what this handle read last (a poll).
    NothingNew,
    /// Nothing came in time, or the wait was interrupted.
    TimedOut,
    /// The next message needs a buffer of `needed` bytes; nothing was consumed.
    TooSmall {
        /// The message's length.
        needed: usize,
    },
}

/// An open channel with this handle's own read position. The reader and the writer each have their own lock, so one
/// thread may put while another waits in a get on the same handle.
///
/// `repr(C)`, writer first: in a pool slot (`crate::Pool`) the slot's state and the writer (its lock, and in it the
/// addresses of the lines the next put touches) then fill one cache line, the only line of the slot a put touches.
/// A control loop's put comes after a sleep, with nothing cached, where each line missed is a trip to memory.
/// The channel, which a put needs only to make the writer, starts the next line.
#[repr(C)]
pub struct ShmHandle {
    writer: Mutex<Option<Writer>>,
    channel: Channel,
    reader: Mutex<Reader>,
}

// The writer fits in a pool slot's first line after its 8-byte state.
const _: () =
    assert!(std::mem::offset_of!(ShmHandle, writer) == 0 && std::mem::size_of::<Mutex<Option<Writer>>>() <= 64 - 8);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic caught at the boundary while a lock was held leaves the reader or writer as the last completed call
    // left it (their state changes are single stores): keep using it.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl ShmHandle {
    /// A handle on `channel` whose reader starts at `last` (0: the oldest message still in the channel comes
    /// first, and any before it that were dropped count as missed).
    pub fn new(channel: Channel, last: u64) -> ShmHandle {
        let mut reader = channel.reader();
        reader.seek(last);
        ShmHandle { channel, reader: Mutex::new(reader), writer: Mutex::new(None) }
    }

    /// The channel.
    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    /// This handle's reader, locked (for position changes: `seek`, `last_seq`).
    pub fn reader(&self) -> MutexGuard<'_, Reader> {
        lock(&self.reader)
    }

    /// Puts a copy of `bytes` (never waits for a reader); returns its sequence number.
    pub fn put(&self, bytes: &[u8]) -> Result<u64, ShmError> {
        let mut writer = lock(&self.writer);
        writer.get_or_insert_with(|| self.channel.writer()).put(bytes)
    }

    /// Gets the next (or newest) message into `buf`, waiting as `wait` says; a wait ends early (as
    /// [`Got::TimedOut`]) once `interrupted` returns true (see `Reader::get_interruptible`). Messages overwritten
    /// under the reader are retried here and counted in the next message's `missed`.
    pub fn get(
        &self,
        buf: &mut [u8],
        mode: ReadMode,
        wait: Wait,
        interrupted: impl Fn() -> bool,
    ) -> Result<Got, ShmError> {
        let mut reader = lock(&self.reader);
        loop {
            let before = reader.last_seq();
            return Ok(match reader.get_interruptible(buf, mode, wait, &interrupted)? {
                GetOutcome::Message(info) => Got::Message(info, before),
                GetOutcome::NothingNew => Got::NothingNew,
                GetOutcome::TimedOut => Got::TimedOut,
                GetOutcome::BufferTooSmall { needed } => Got::TooSmall { needed },
                GetOutcome::Retry => continue,
            });
        }
    }
}

impl ShmHandle {
    /// Takes the next (or newest) message as a view of its frame in shared memory (`Reader::view`), waiting as
    /// `wait` says. `Retry` is handled here (the losses are counted in the next message's `missed`), so the outcome
    /// is a view, `NothingNew` or `TimedOut`.
    pub fn view(&self, mode: ReadMode, wait: Wait) -> Result<GetOutcome<View>, ShmError> {
        let mut reader = lock(&self.reader);
        loop {
            match reader.view(mode, wait)? {
                GetOutcome::Retry => continue,
                other => return Ok(other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nerve_shm::ChannelConfig;

    #[test]
    fn a_handle_reads_from_its_own_position_and_puts_through_one_writer() {
        let dir = std::env::temp_dir().join(format!("nerve-c-common-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ch = Channel::open_or_create("h", &ChannelConfig::new(4, 16).dir(&dir)).unwrap();
        let a = ShmHandle::new(ch.clone(), 0);
        for i in 0..6u8 {
            a.put(&[i]).unwrap();
        }
        let b = ShmHandle::new(ch.clone(), 0);
        let mut buf = [0u8; 16];
        // Four kept of six: the oldest comes first, two counted missed.
        match b.get(&mut buf, ReadMode::Next, Wait::Poll, || false).unwrap() {
            Got::Message(info, before) => assert_eq!((info.seq, info.missed, before, buf[0]), (3, 2, 0, 2)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(b.get(&mut buf[..0], ReadMode::Next, Wait::Poll, || false), Ok(Got::TooSmall { needed: 1 })));
        assert!(
            matches!(b.get(&mut buf, ReadMode::Newest, Wait::Poll, || false), Ok(Got::Message(i, 3)) if i.seq == 6)
        );
        assert_eq!(b.get(&mut buf, ReadMode::Next, Wait::Poll, || false).unwrap(), Got::NothingNew);
        assert_eq!(b.get(&mut buf, ReadMode::Next, Wait::Forever, || true).unwrap(), Got::TimedOut);
        assert!(a.put(&[0; 17]).is_err());
        a.put(b"view").unwrap();
        match b.view(ReadMode::Next, Wait::Poll).unwrap() {
            GetOutcome::Message(v) => assert_eq!((v.seq(), v.bytes(), v.check()), (7, &b"view"[..], Ok(()))),
            other => panic!("{other:?}"),
        }
        assert!(matches!(b.view(ReadMode::Next, Wait::Poll), Ok(GetOutcome::NothingNew)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
