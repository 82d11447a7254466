//! LCM's datagram formats (spec 4.2): the small `LC02` packet and the `LC03` fragment, both ways.
//!
//! Parsing never trusts the datagram: every malformed one maps to a [`Malformed`] reason, which the receiver counts
//! and drops. Building writes into caller-owned buffers so a publisher allocates nothing per message.

use std::fmt;

/// Magic of a message sent in one datagram ("LC02").
pub const MAGIC_SHORT: u32 = 0x4c43_3032;
/// Magic of one fragment of a larger message ("LC03").
pub const MAGIC_LONG: u32 = 0x4c43_3033;
/// Longest channel name, in bytes.
pub const MAX_CHANNEL_LEN: usize = 63;
/// Largest `channel + NUL + payload` sent as one datagram on Linux (8 + 65499 = 65507, the IPv4 UDP limit).
pub const MAX_SMALL_BODY: usize = 65499;
/// Bytes of channel and payload one fragment carries (65487 + the 20-byte header = 65507).
pub const FRAGMENT_BODY: usize = 65487;
/// Header size of a small datagram.
pub const SHORT_HEADER: usize = 8;
/// Header size of a fragment.
pub const LONG_HEADER: usize = 20;
/// Most fragments a message may have (the count is a u16).
pub const MAX_FRAGMENTS: usize = 65535;
/// Largest payload LCM's format can carry (65535 fragments, about 4 GB), less the channel name's length.
pub const MAX_MESSAGE: usize = MAX_FRAGMENTS * FRAGMENT_BODY - 1;

/// Why a datagram was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Malformed {
    /// Shorter than its header.
    Short,
    /// Neither LC02 nor LC03.
    BadMagic,
    /// The channel has no NUL within 64 bytes (or within the datagram).
    ChannelUnterminated,
    /// The channel is not UTF-8.
    ChannelNotUtf8,
    /// A fragment count of zero, or a fragment number not below the count.
    BadFragmentNumber,
    /// A fragment whose data runs past the message's total size.
    FragmentOutOfRange,
    /// A total size above the configured cap.
    TooLarge,
    /// Fragment 0 whose offset is not 0. (A later fragment whose bytes overlap another's, at offset 0 or anywhere,
    /// is dropped with its message by reassembly, which checks that the fragments tile the payload.)
    BadOffset,
}

impl Malformed {
    /// Every reason, for stats tables.
    pub const ALL: [Malformed; 8] = [
        Malformed::Short,
        Malformed::BadMagic,
        Malformed::ChannelUnterminated,
        Malformed::ChannelNotUtf8,
        Malformed::BadFragmentNumber,
        Malformed::FragmentOutOfRange,
        Malformed::TooLarge,
        Malformed::BadOffset,
    ];

    /// A short name for the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Malformed::Short => "short datagram",
            Malformed::BadMagic => "bad magic",
            Malformed::ChannelUnterminated => "channel not NUL-terminated within 64 bytes",
            Malformed::ChannelNotUtf8 => "channel not UTF-8",
            Malformed::BadFragmentNumber => "bad fragment number or count",
            Malformed::FragmentOutOfRange => "fragment past the message's end",
            Malformed::TooLarge => "message larger than the cap",
            Malformed::BadOffset => "fragment 0 not at offset 0",
        }
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed datagram, borrowing from the receive buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Datagram<'a> {
    /// A whole message in one datagram.
    Small {
        /// The sender's sequence number.
        seq: u32,
        /// The channel.
        channel: &'a str,
        /// The message bytes.
        payload: &'a [u8],
    },
    /// One fragment of a larger message.
    Fragment(Fragment<'a>),
}

/// One fragment of a fragmented message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment<'a> {
    /// The sender's sequence number, the same in every fragment of a message.
    pub seq: u32,
    /// The message's total payload size (the channel not counted).
    pub total: u32,
    /// Where this fragment's payload bytes go.
    pub offset: u32,
    /// This fragment's number, from 0.
    pub number: u16,
    /// How many fragments the message has.
    pub count: u16,
    /// The channel: only fragment 0 carries it.
    pub channel: Option<&'a str>,
    /// The payload bytes this fragment carries.
    pub data: &'a [u8],
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}

/// Splits `channel\0rest` (the channel at most 63 bytes).
fn split_channel(b: &[u8]) -> Result<(&str, &[u8]), Malformed> {
    let window = &b[..b.len().min(MAX_CHANNEL_LEN + 1)];
    let nul = window.iter().position(|&c| c == 0).ok_or(Malformed::ChannelUnterminated)?;
    let channel = std::str::from_utf8(&b[..nul]).map_err(|_| Malformed::ChannelNotUtf8)?;
    Ok((channel, &b[nul + 1..]))
}

/// Parses one datagram. `max_message` caps the total size a fragmented message may announce.
pub fn parse(b: &[u8], max_message: usize) -> Result<Datagram<'_>, Malformed> {
    if b.len() < SHORT_HEADER {
        return Err(Malformed::Short);
    }
    match be32(b, 0) {
        MAGIC_SHORT => {
            let (channel, payload) = split_channel(&b[SHORT_HEADER..])?;
            Ok(Datagram::Small { seq: be32(b, 4), channel, payload })
        }
        MAGIC_LONG => {
            if b.len() < LONG_HEADER {
                return Err(Malformed::Short);
            }
            let seq = be32(b, 4);
            let total = be32(b, 8);
            let offset = be32(b, 12);
            let number = be16(b, 16);
            let count = be16(b, 18);
            if count == 0 || number >= count {
                return Err(Malformed::BadFragmentNumber);
            }
            if total as usize > max_message {
                return Err(Malformed::TooLarge);
            }
            let body = &b[LONG_HEADER..];
            let (channel, data) = if number == 0 {
                if offset != 0 {
                    return Err(Malformed::BadOffset);
                }
                let (c, d) = split_channel(body)?;
                (Some(c), d)
            } else {
                (None, body)
            };
            // u64 so that offset + len cannot wrap (LCM C's 32-bit check can: its open PR #628).
            if offset as u64 + data.len() as u64 > total as u64 {
                return Err(Malformed::FragmentOutOfRange);
            }
            Ok(Datagram::Fragment(Fragment { seq, total, offset, number, count, channel, data }))
        }
        _ => Err(Malformed::BadMagic),
    }
}

/// Why a message cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// The channel is longer than 63 bytes.
    ChannelTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The channel contains a NUL byte, which would end it early on the wire.
    ChannelHasNul,
    /// The message needs more than 65535 fragments.
    MessageTooLarge {
        /// Its size in bytes.
        len: usize,
    },
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::ChannelTooLong { len } => write!(f, "channel of {len} bytes is longer than LCM's 63"),
            SendError::ChannelHasNul => write!(f, "channel contains a NUL byte"),
            SendError::MessageTooLarge { len } => {
                write!(f, "message of {len} bytes is larger than LCM's limit of {MAX_MESSAGE}")
            }
        }
    }
}

impl std::error::Error for SendError {}

/// Checks a channel name for sending.
pub fn check_channel(channel: &str) -> Result<(), SendError> {
    if channel.len() > MAX_CHANNEL_LEN {
        return Err(SendError::ChannelTooLong { len: channel.len() });
    }
    if channel.as_bytes().contains(&0) {
        return Err(SendError::ChannelHasNul);
    }
    Ok(())
}

/// How a message is laid out in datagrams, exactly as LCM's C sender does it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// One LC02 datagram.
    Small,
    /// `count` LC03 fragments.
    Fragmented {
        /// How many fragments.
        count: u16,
    },
}

/// Decides small or fragmented, and how many fragments, for a channel and payload size.
pub fn plan(channel: &str, payload_len: usize) -> Result<Plan, SendError> {
    check_channel(channel)?;
    let body = channel.len() + 1 + payload_len;
    if body <= MAX_SMALL_BODY {
        return Ok(Plan::Small);
    }
    let count = body.div_ceil(FRAGMENT_BODY);
    if count > MAX_FRAGMENTS {
        return Err(SendError::MessageTooLarge { len: payload_len });
    }
    Ok(Plan::Fragmented { count: count as u16 })
}

/// Writes the small datagram for a message into `out` (cleared first).
pub fn write_small(out: &mut Vec<u8>, seq: u32, channel: &str, payload: &[u8]) {
    out.clear();
    push_small_header(out, seq, channel);
    out.extend_from_slice(payload);
}

/// Appends the header of a small datagram (magic, sequence number, channel, NUL) to `out`: the datagram is this
/// followed by the whole payload.
pub fn push_small_header(out: &mut Vec<u8>, seq: u32, channel: &str) {
    out.extend_from_slice(&MAGIC_SHORT.to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(channel.as_bytes());
    out.push(0);
}

/// Writes fragment `number` of `count` for a message into `out` (cleared first). Fragment 0 carries the channel
/// and `FRAGMENT_BODY - channel - 1` payload bytes; each later one up to `FRAGMENT_BODY` payload bytes.
pub fn write_fragment(out: &mut Vec<u8>, seq: u32, channel: &str, payload: &[u8], number: u16, count: u16) {
    out.clear();
    let data = push_fragment_header(out, seq, channel, payload.len(), number, count);
    out.extend_from_slice(&payload[data]);
}

/// Appends the header of fragment `number` of `count` (the 20 bytes, and for fragment 0 the channel and its NUL)
/// to `out`, and returns the range of the payload that follows it in the datagram.
pub fn push_fragment_header(
    out: &mut Vec<u8>,
    seq: u32,
    channel: &str,
    payload_len: usize,
    number: u16,
    count: u16,
) -> std::ops::Range<usize> {
    let first = FRAGMENT_BODY - channel.len() - 1;
    let (offset, len) = if number == 0 {
        (0, first.min(payload_len))
    } else {
        let offset = first + (number as usize - 1) * FRAGMENT_BODY;
        (offset, FRAGMENT_BODY.min(payload_len - offset))
    };
    out.extend_from_slice(&MAGIC_LONG.to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&(payload_len as u32).to_be_bytes());
    out.extend_from_slice(&(offset as u32).to_be_bytes());
    out.extend_from_slice(&number.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    if number == 0 {
        out.extend_from_slice(channel.as_bytes());
        out.push(0);
    }
    offset..offset + len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_round_trip() {
        let mut buf = Vec::new();
        write_small(&mut buf, 7, "POSE", b"\x01\x02");
        assert_eq!(&buf[..8], b"LC02\x00\x00\x00\x07");
        assert_eq!(parse(&buf, 1 << 28), Ok(Datagram::Small { seq: 7, channel: "POSE", payload: b"\x01\x02" }));
    }

    #[test]
    fn boundaries_match_lcm_captures() {
        // Spec 4.2: "EDG" with 65495 payload bytes is one 65507-byte datagram; 65496 bytes is 2 fragments.
        assert_eq!(plan("EDG", 65495), Ok(Plan::Small));
        assert_eq!(plan("EDG", 65496), Ok(Plan::Fragmented { count: 2 }));
        // "BIG" with 150000 bytes: 3 datagrams of 65507, 65507 and 19050 bytes at offsets 0, 65483, 130970.
        let payload = vec![7u8; 150_000];
        assert_eq!(plan("BIG", payload.len()), Ok(Plan::Fragmented { count: 3 }));
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        for n in 0..3 {
            write_fragment(&mut buf, 1, "BIG", &payload, n, 3);
            let Ok(Datagram::Fragment(f)) = parse(&buf, 1 << 28) else { panic!("fragment {n} did not parse") };
            seen.push((buf.len(), f.offset));
        }
        assert_eq!(seen, [(65507, 0), (65507, 65483), (19050, 130970)]);
    }

    #[test]
    fn headers_then_payload_are_the_whole_datagrams() {
        // A batched send writes only the headers and points at the payload: the same bytes as the single send.
        let mut whole = Vec::new();
        let mut header = Vec::new();
        write_small(&mut whole, 9, "POSE", b"abc");
        push_small_header(&mut header, 9, "POSE");
        header.extend_from_slice(b"abc");
        assert_eq!(header, whole);
        let payload: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
        for n in 0..3 {
            write_fragment(&mut whole, 4, "BIG", &payload, n, 3);
            header.clear();
            let data = push_fragment_header(&mut header, 4, "BIG", payload.len(), n, 3);
            header.extend_from_slice(&payload[data]);
            assert_eq!(header, whole, "fragment {n}");
        }
    }

    #[test]
    fn malformed_datagrams_are_classified() {
        let p = |b: &[u8]| parse(b, 1 << 28).unwrap_err();
        assert_eq!(p(b"LC02"), Malformed::Short);
        assert_eq!(p(b"XXXX\0\0\0\0a\0"), Malformed::BadMagic);
        assert_eq!(p(b"LC02\0\0\0\0abc"), Malformed::ChannelUnterminated);
        let mut long = b"LC02\0\0\0\0".to_vec();
        long.extend_from_slice(&[b'a'; 64]);
        long.push(0);
        assert_eq!(p(&long), Malformed::ChannelUnterminated);
        assert_eq!(p(b"LC02\0\0\0\0\xff\0"), Malformed::ChannelNotUtf8);
        let frag = |total: u32, offset: u32, number: u16, count: u16, body: &[u8]| {
            let mut b = b"LC03\0\0\0\x01".to_vec();
            b.extend_from_slice(&total.to_be_bytes());
            b.extend_from_slice(&offset.to_be_bytes());
            b.extend_from_slice(&number.to_be_bytes());
            b.extend_from_slice(&count.to_be_bytes());
            b.extend_from_slice(body);
            b
        };
        assert_eq!(p(&frag(10, 0, 0, 0, b"c\0")), Malformed::BadFragmentNumber);
        assert_eq!(p(&frag(10, 0, 2, 2, b"x")), Malformed::BadFragmentNumber);
        assert_eq!(p(&frag(u32::MAX, 0, 0, 2, b"c\0")), Malformed::TooLarge);
        assert_eq!(p(&frag(10, 4, 0, 2, b"c\0")), Malformed::BadOffset);
        assert_eq!(p(&frag(10, 8, 1, 2, b"xyz")), Malformed::FragmentOutOfRange);
        // An offset near 2^32 must not wrap around the bounds check.
        assert_eq!(parse(&frag(10, u32::MAX - 1, 1, 2, b"xyz"), usize::MAX), Err(Malformed::FragmentOutOfRange));
        assert_eq!(p(&frag(10, 0, 0, 2, b"c\0")[..19]), Malformed::Short);
    }

    #[test]
    fn channel_limits() {
        assert!(check_channel(&"a".repeat(63)).is_ok());
        assert_eq!(check_channel(&"a".repeat(64)), Err(SendError::ChannelTooLong { len: 64 }));
        assert_eq!(check_channel("a\0b"), Err(SendError::ChannelHasNul));
        assert!(matches!(plan("", MAX_MESSAGE), Ok(Plan::Fragmented { count: 65535 })));
        assert!(matches!(plan("c", MAX_MESSAGE), Err(SendError::MessageTooLarge { .. })));
    }
}
