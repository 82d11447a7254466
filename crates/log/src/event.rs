//! The event-log format (spec section 5.1): the 28-byte big-endian event header, its limits, and the event types.

use std::borrow::Cow;

/// The sync word that starts every event.
pub const SYNC: u32 = 0xEDA1_DA01;

/// Bytes in an event header: sync, event number, timestamp, channel length, data length.
pub const HEADER_LEN: usize = 28;

/// A channel name must be shorter than this many bytes (LCM's reader rejects 1000 and more).
pub const MAX_CHANNEL_LEN: usize = 999;

/// One event, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The event number (0, 1, 2, ... as written; readers do not check it).
    pub number: i64,
    /// When it was received (or published, for the file provider), microseconds since the Unix epoch.
    pub utime: i64,
    /// The channel.
    pub channel: String,
    /// The message, fingerprint included.
    pub data: Vec<u8>,
}

/// One event, borrowed from the reader's buffer (valid until the next read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRef<'a> {
    /// The event number.
    pub number: i64,
    /// The timestamp, microseconds since the Unix epoch.
    pub utime: i64,
    /// The channel name as stored (LCM does not require UTF-8).
    pub channel_bytes: &'a [u8],
    /// The message.
    pub data: &'a [u8],
    /// Where the event's header starts in the file.
    pub offset: u64,
}

impl<'a> EventRef<'a> {
    /// The channel as text; bytes that are not UTF-8 become U+FFFD.
    pub fn channel(&self) -> Cow<'a, str> {
        String::from_utf8_lossy(self.channel_bytes)
    }

    /// An owned copy.
    pub fn to_owned(&self) -> Event {
        Event { number: self.number, utime: self.utime, channel: self.channel().into_owned(), data: self.data.to_vec() }
    }

    /// Bytes the event takes in the file, header included.
    pub fn encoded_len(&self) -> u64 {
        (HEADER_LEN + self.channel_bytes.len() + self.data.len()) as u64
    }
}

/// A header as read from the file, before its lengths are checked (by [`crate::LogReader`], or by a reader with
/// other limits: liblcm's `lcm_eventlog_read_next_event` takes what LCM's C reader takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawHeader {
    /// The event number.
    pub number: i64,
    /// The timestamp, microseconds since the Unix epoch.
    pub utime: i64,
    /// The channel name's length, as stored.
    pub channel_len: i32,
    /// The data's length, as stored.
    pub data_len: i32,
}

impl RawHeader {
    /// Parses the 24 bytes that follow the sync word (the sync word itself, `b[..4]`, is not looked at).
    pub fn parse(b: &[u8; HEADER_LEN]) -> RawHeader {
        let i64_at = |i: usize| i64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let i32_at = |i: usize| i32::from_be_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        RawHeader { number: i64_at(4), utime: i64_at(12), channel_len: i32_at(20), data_len: i32_at(24) }
    }

    /// The lengths if LCM's reader accepts them (channel 1..=999 bytes, data not negative).
    pub(crate) fn lengths(&self) -> Option<(usize, usize)> {
        let ch = usize::try_from(self.channel_len).ok().filter(|&c| (1..=MAX_CHANNEL_LEN).contains(&c))?;
        let data = usize::try_from(self.data_len).ok()?;
        Some((ch, data))
    }
}

/// Writes an event header into `out`: the sync word, then the rest as [`RawHeader`] reads it (each length as the
/// `i32` it is stored as).
pub fn encode_header(out: &mut [u8; HEADER_LEN], number: i64, utime: i64, channel_len: usize, data_len: usize) {
    out[0..4].copy_from_slice(&SYNC.to_be_bytes());
    out[4..12].copy_from_slice(&number.to_be_bytes());
    out[12..20].copy_from_slice(&utime.to_be_bytes());
    out[20..24].copy_from_slice(&(channel_len as i32).to_be_bytes());
    out[24..28].copy_from_slice(&(data_len as i32).to_be_bytes());
}
