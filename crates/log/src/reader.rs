//! [`LogReader`]: reads events, skips damage the way LCM resynchronises (on the sync word), and reports each damaged
//! region as a [`Damage`] instead of stopping.
//!
//! LCM's C reader stops at the first event that is not followed by a sync word. This one keeps going: after any
//! damage it scans for the next sync word and carries on from there, so every intact event after the damage is
//! still read. What it skips is recorded (offset, what, bytes skipped).
//!
//! Nothing read from the file is trusted before it is checked against the file: an event's claimed length must fit
//! in the bytes that remain, so a huge length field never allocates; and an event must be followed by a sync word
//! (or the end of the file) before it is believed, which is checked by peeking at that position before the event's
//! bytes are read.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::LogError;
use crate::event::{EventRef, RawHeader, HEADER_LEN, SYNC};

/// The buffer the reader starts with; it grows only to hold an event bigger than this.
const BUF_LEN: usize = 1 << 18;

/// How many damaged regions are kept in detail; the rest are only counted.
pub const MAX_DAMAGE_RECORDS: usize = 1000;

const SYNC_BYTES: [u8; 4] = SYNC.to_be_bytes();

/// What was wrong with a damaged region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DamageKind {
    /// Bytes that are not an event (no sync word where an event should start).
    Garbage,
    /// A sync word followed by lengths LCM rejects (channel not 1..999 bytes, or negative data length).
    BadHeader {
        /// The channel length field.
        channel_len: i32,
        /// The data length field.
        data_len: i32,
    },
    /// An event whose lengths run past the next sync word or past the end of the file, with more events after it.
    BadLength {
        /// Bytes the header claims for the event (header included).
        claimed: u64,
    },
    /// The last event is cut off: its header claims more bytes than the file has.
    TruncatedEvent {
        /// Bytes the header claims for the event (header included).
        claimed: u64,
    },
    /// Fewer than 28 bytes at the end of the file: the start of a header.
    TruncatedHeader,
    /// The whole file is bytes without one sync word: it is not an LCM event log at all (a text file, random
    /// bytes, another format). Reported as the only damage, covering the file.
    NotALog,
}

/// A damaged region of a log: where it starts, what it is, and how many bytes were skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Damage {
    /// The file offset where the damage starts.
    pub offset: u64,
    /// What it is.
    pub kind: DamageKind,
    /// Bytes skipped (from `offset`).
    pub skipped: u64,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}: ", self.offset)?;
        match self.kind {
            DamageKind::Garbage => write!(f, "{} bytes that are not an event (no sync word)", self.skipped),
            DamageKind::BadHeader { channel_len, data_len } => write!(
                f,
                "event header with channel length {channel_len} and data length {data_len}; {} bytes skipped to the next sync word",
                self.skipped
            ),
            DamageKind::BadLength { claimed } => write!(
                f,
                "event claims {claimed} bytes, which runs past the next sync word or the end of the file; {} bytes skipped",
                self.skipped
            ),
            DamageKind::TruncatedEvent { claimed } => {
                write!(f, "last event truncated: it claims {claimed} bytes, {} remain", self.skipped)
            }
            DamageKind::TruncatedHeader => write!(f, "last event truncated inside its header ({} bytes)", self.skipped),
            DamageKind::NotALog => {
                write!(f, "not an LCM event log: no sync word (0xEDA1DA01) in its {} bytes", self.skipped)
            }
        }
    }
}

/// Totals of the damage found so far, including regions beyond [`MAX_DAMAGE_RECORDS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DamageTotals {
    /// Damaged regions.
    pub regions: u64,
    /// Bytes skipped in them.
    pub bytes: u64,
}

/// Reads the events of a log in file order.
pub struct LogReader<R> {
    src: R,
    path: Option<PathBuf>,
    /// The file's length when it was opened.
    len: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`; the source's own position is always `buf_off + hi`.
    buf_off: u64,
    /// Where reading started (the first event's offset in an intact log).
    start: u64,
    lo: usize,
    hi: usize,
    damage: Vec<Damage>,
    totals: DamageTotals,
    events: u64,
}

impl LogReader<File> {
    /// Opens a log file.
    pub fn open(path: impl AsRef<Path>) -> Result<LogReader<File>, LogError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| LogError::io(Some(path), "opening", e))?;
        let mut r = LogReader::new(file).map_err(|e| LogError::io(Some(path), "reading", e))?;
        r.path = Some(path.to_path_buf());
        Ok(r)
    }
}

impl<R: Read + Seek> LogReader<R> {
    /// Reads a log from `src`, from its current position to its end.
    pub fn new(mut src: R) -> io::Result<LogReader<R>> {
        let start = src.stream_position()?;
        let end = src.seek(SeekFrom::End(0))?;
        src.seek(SeekFrom::Start(start))?;
        Ok(LogReader {
            src,
            path: None,
            len: end,
            buf: vec![0; BUF_LEN],
            buf_off: start,
            start,
            lo: 0,
            hi: 0,
            damage: Vec::new(),
            totals: DamageTotals::default(),
            events: 0,
        })
    }

    /// The file's length in bytes (when it was opened).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How far reading has got, in bytes from the start of the file.
    pub fn offset(&self) -> u64 {
        self.buf_off + self.lo as u64
    }

    /// Events read so far.
    pub fn events_read(&self) -> u64 {
        self.events
    }

    /// The damaged regions found so far, in file order (the first [`MAX_DAMAGE_RECORDS`]).
    pub fn damage(&self) -> &[Damage] {
        &self.damage
    }

    /// Totals of all damage found so far.
    pub fn damage_totals(&self) -> DamageTotals {
        self.totals
    }

    /// Whether the file turned out not to be an LCM event log at all (no sync word anywhere in it; known once
    /// [`LogReader::next_event`] has returned `None`, or earlier). An empty file is an empty log, not this.
    pub fn is_not_a_log(&self) -> bool {
        self.damage.first().is_some_and(|d| d.kind == DamageKind::NotALog)
    }

    /// Moves to `offset` and reads on from the first sync word at or after it (bytes skipped to find it are not
    /// damage). Used to seek by time.
    pub fn seek_to(&mut self, offset: u64) -> Result<(), LogError> {
        self.jump(offset.min(self.len))?;
        self.skip_to_sync()?;
        Ok(())
    }

    /// The next intact event, or `None` at the end of the file. Damage on the way is skipped and recorded.
    pub fn next_event(&mut self) -> Result<Option<EventRef<'_>>, LogError> {
        loop {
            let pos = self.offset();
            if !self.fill(4)? {
                let rest = self.hi - self.lo;
                if rest > 0 {
                    self.lo = self.hi;
                    let kind = if self.whole_file(pos, rest as u64) {
                        DamageKind::NotALog
                    } else {
                        DamageKind::TruncatedHeader
                    };
                    self.record(pos, kind, rest as u64);
                }
                return Ok(None);
            }
            if self.buf[self.lo..self.lo + 4] != SYNC_BYTES {
                let skipped = self.skip_to_sync()?;
                let kind = if self.whole_file(pos, skipped) { DamageKind::NotALog } else { DamageKind::Garbage };
                self.record(pos, kind, skipped);
                continue;
            }
            if !self.fill(HEADER_LEN)? {
                let rest = self.hi - self.lo;
                self.lo = self.hi;
                self.record(pos, DamageKind::TruncatedHeader, rest as u64);
                return Ok(None);
            }
            let header: &[u8; HEADER_LEN] = self.buf[self.lo..self.lo + HEADER_LEN].try_into().expect("28 bytes");
            let h = RawHeader::parse(header);
            let Some((ch, dl)) = h.lengths() else {
                self.lo += 1;
                let skipped = 1 + self.skip_to_sync()?;
                self.record(pos, DamageKind::BadHeader { channel_len: h.channel_len, data_len: h.data_len }, skipped);
                continue;
            };
            let total = (HEADER_LEN + ch + dl) as u64;
            let remaining = self.len.saturating_sub(pos);
            if total > remaining {
                // Either the file ends inside this event, or its length field is wrong and more events follow.
                self.lo += 1;
                let skipped = 1 + self.skip_to_sync()?;
                let kind = if self.offset() >= self.len && !self.more_bytes()? {
                    DamageKind::TruncatedEvent { claimed: total }
                } else {
                    DamageKind::BadLength { claimed: total }
                };
                self.record(pos, kind, skipped);
                continue;
            }
            let end = pos + total;
            if !self.sync_or_end_at(end)? {
                // Not followed by a sync word. If a sync word appears inside the bytes the event claims, its
                // length ran over the next event: drop it and resume there. Otherwise the event is whole and
                // garbage follows it (reported on the next call).
                if let Some(s) = self.find_sync_between(pos + 1, end)? {
                    self.jump(s)?;
                    self.record(pos, DamageKind::BadLength { claimed: total }, s - pos);
                    continue;
                }
            }
            let total = total as usize;
            if !self.fill(total)? {
                // The file shrank under us: what is left is a truncated event.
                let rest = self.hi - self.lo;
                self.lo = self.hi;
                self.record(pos, DamageKind::TruncatedEvent { claimed: total as u64 }, rest as u64);
                return Ok(None);
            }
            let start = self.lo;
            self.lo += total;
            self.events += 1;
            let b = &self.buf[start..start + total];
            return Ok(Some(EventRef {
                number: h.number,
                utime: h.utime,
                channel_bytes: &b[HEADER_LEN..HEADER_LEN + ch],
                data: &b[HEADER_LEN + ch..],
                offset: pos,
            }));
        }
    }

    /// Whether `skipped` bytes of damage at `pos` are the whole file, read from its start with nothing before.
    fn whole_file(&self, pos: u64, skipped: u64) -> bool {
        pos == self.start && self.events == 0 && self.totals.regions == 0 && pos + skipped >= self.len
    }

    fn io_err(&self, op: &'static str, e: io::Error) -> LogError {
        LogError::io(self.path.as_deref(), op, e)
    }

    fn record(&mut self, offset: u64, kind: DamageKind, skipped: u64) {
        self.totals.regions += 1;
        self.totals.bytes += skipped;
        if self.damage.len() < MAX_DAMAGE_RECORDS {
            self.damage.push(Damage { offset, kind, skipped });
        }
    }

    /// Makes at least `need` bytes available at `lo`; false if the file ends first (whatever there is stays).
    fn fill(&mut self, need: usize) -> Result<bool, LogError> {
        if self.hi - self.lo >= need {
            return Ok(true);
        }
        if self.lo > 0 {
            self.buf.copy_within(self.lo..self.hi, 0);
            self.buf_off += self.lo as u64;
            self.hi -= self.lo;
            self.lo = 0;
        }
        if self.buf.len() < need {
            // Callers only ask for bytes that the file's length says are there (or at most 28).
            self.buf.resize(need, 0);
        } else if need <= BUF_LEN && self.buf.len() > 4 * BUF_LEN {
            // A big event has gone: give its memory back.
            self.buf.truncate(BUF_LEN.max(self.hi));
            self.buf.shrink_to_fit();
        }
        while self.hi < need {
            match self.src.read(&mut self.buf[self.hi..]) {
                Ok(0) => return Ok(false),
                Ok(n) => self.hi += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_err("reading", e)),
            }
        }
        Ok(true)
    }

    /// Whether any byte is left to read.
    fn more_bytes(&mut self) -> Result<bool, LogError> {
        self.fill(1)
    }

    /// Moves to `offset`, keeping the buffer when the offset is inside it.
    fn jump(&mut self, offset: u64) -> Result<(), LogError> {
        if offset >= self.buf_off && offset <= self.buf_off + self.hi as u64 {
            self.lo = (offset - self.buf_off) as usize;
            return Ok(());
        }
        self.src.seek(SeekFrom::Start(offset)).map_err(|e| self.io_err("seeking in", e))?;
        self.buf_off = offset;
        self.lo = 0;
        self.hi = 0;
        Ok(())
    }

    /// Advances to the next sync word (or the end of the file); returns the bytes skipped.
    fn skip_to_sync(&mut self) -> Result<u64, LogError> {
        let mut skipped = 0u64;
        loop {
            if let Some(i) = find_sync(&self.buf[self.lo..self.hi]) {
                self.lo += i;
                return Ok(skipped + i as u64);
            }
            // Keep the last 3 bytes: they may be the start of a sync word.
            let keep = (self.hi - self.lo).min(3);
            let drop = self.hi - self.lo - keep;
            self.lo += drop;
            skipped += drop as u64;
            if !self.fill(keep + 1)? {
                let rest = self.hi - self.lo;
                self.lo = self.hi;
                return Ok(skipped + rest as u64);
            }
        }
    }

    /// Whether the 4 bytes at `offset` are a sync word, or fewer than 4 bytes remain there.
    fn sync_or_end_at(&mut self, offset: u64) -> Result<bool, LogError> {
        if offset + 4 > self.len {
            return Ok(true);
        }
        let rel = (offset - self.buf_off) as usize;
        if rel + 4 <= BUF_LEN.max(self.buf.len()) {
            // Close by: read it through the buffer (it is needed next anyway).
            let need = rel + 4 - self.lo;
            if self.fill(need)? {
                let rel = (offset - self.buf_off) as usize;
                return Ok(self.buf[rel..rel + 4] == SYNC_BYTES);
            }
            return Ok(true);
        }
        // Far ahead (a big event): peek without reading what lies between.
        let mut word = [0u8; 4];
        let back = self.buf_off + self.hi as u64;
        let r = self.src.seek(SeekFrom::Start(offset)).and_then(|_| read_up_to(&mut self.src, &mut word));
        let restored = self.src.seek(SeekFrom::Start(back));
        let got = r.map_err(|e| self.io_err("reading", e))?;
        restored.map_err(|e| self.io_err("seeking in", e))?;
        Ok(got < 4 || word == SYNC_BYTES)
    }

    /// The first sync word starting in `[from, to)`, reading in bounded chunks.
    fn find_sync_between(&mut self, from: u64, to: u64) -> Result<Option<u64>, LogError> {
        // Inside the buffer already?
        let buf_end = self.buf_off + self.hi as u64;
        if from >= self.buf_off && to + 3 <= buf_end {
            let a = (from - self.buf_off) as usize;
            let b = (to - self.buf_off) as usize + 3;
            return Ok(find_sync(&self.buf[a..b]).map(|i| from + i as u64));
        }
        let back = buf_end;
        let mut chunk = vec![0u8; 1 << 16];
        let mut at = from;
        let mut found = None;
        let result = (|| -> io::Result<()> {
            while at < to {
                self.src.seek(SeekFrom::Start(at))?;
                let want = ((to - at) as usize + 3).min(chunk.len());
                let n = read_up_to(&mut self.src, &mut chunk[..want])?;
                if let Some(i) = find_sync(&chunk[..n]) {
                    if at + (i as u64) < to {
                        found = Some(at + i as u64);
                    }
                    return Ok(());
                }
                if n < 4 {
                    return Ok(());
                }
                at += (n - 3) as u64;
            }
            Ok(())
        })();
        let restored = self.src.seek(SeekFrom::Start(back));
        result.map_err(|e| self.io_err("reading", e))?;
        restored.map_err(|e| self.io_err("seeking in", e))?;
        Ok(found)
    }
}

/// Reads until `buf` is full or the end; returns the bytes read.
fn read_up_to(src: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The index of the first sync word in `b`.
fn find_sync(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i + 4 <= b.len() {
        match b[i..b.len() - 3].iter().position(|&x| x == SYNC_BYTES[0]) {
            None => return None,
            Some(j) => {
                i += j;
                if b[i..i + 4] == SYNC_BYTES {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}

impl<R: Read + Seek> Iterator for LogReader<R> {
    type Item = Result<crate::Event, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_event() {
            Ok(Some(e)) => Some(Ok(e.to_owned())),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests;
