//! The runtime that Nerve-generated Rust code depends on: LCM's binary encoding (spec section 3).
//!
//! # Brief overview
//!
//! Generated types implement [`Message`] (a top-level type with a fingerprint) on top of [`Encode`] and [`Decode`]
//! (the body, also used for nested types). Encoding goes through a [`Writer`] over a buffer sized in advance by
//! [`Encode::encoded_body_size`]; decoding goes through a [`Reader`] that checks every length against the bytes that
//! remain before it allocates or copies, so a truncated or corrupt buffer gives a [`DecodeError`], never a panic, an
//! over-read or a huge allocation. Views read single fields straight from an encoded buffer (see [`view`]).
//! [`Message::decode_into`] decodes into an existing value and reuses its strings' and vectors' memory: in a
//! steady-state loop it allocates nothing. An LCM `string` member is a [`Str`] (`msg.id = "wp-1".into()`, read as
//! `&*msg.id` or `msg.id.as_str()`): a 24-byte immutable string that keeps text of up to 22 bytes inline, so even
//! [`Message::decode`] allocates nothing for a short string.
//!
//! # Design
//!
//! LCM's format is big-endian with no padding, no tags and no counts of its own: an array's length is an earlier
//! member. So the decoder cannot trust anything: a count is checked against the remaining bytes times the smallest
//! encoded size of one element before any `Vec` is made. Arrays of plain numbers are converted in one pass over a
//! byte slice, with one SSSE3 `pshufb` per 16 bytes where the CPU has it (`fixed`'s `swap`: the compiler's own
//! vectorisation of a byte swap on baseline x86-64 takes seven shuffles per 16 bytes), and arrays of small
//! all-numeric structs (a LiDAR point) with one `pshufb` per element ([`fixed::Shuffle`]); that is where the speed
//! over LCM's per-element C loops comes from. The other cost LCM's C pays per element is an allocation (and a free) per string; [`Str`]
//! instead of `String` removes it for short strings (ids, names, frame labels), without which a string-heavy message
//! such as a path of 50 named waypoints decodes no faster than LCM's C, however tight the rest of the decoder.

#![deny(missing_docs)]

mod error;
pub mod fixed;
pub mod json;
mod reader;
mod str;
mod utime;
pub mod view;
mod writer;

/// How deeply recursive types may nest in a buffer being decoded or viewed. LCM itself has no limit; without one,
/// a hostile buffer of nested `node_t`s could exhaust the stack.
pub const MAX_DEPTH: u32 = 256;

/// How many more array items than there are bytes left a decoder or view accepts when the items encode to nothing
/// (empty structs, or sub-arrays of length 0). LCM itself has no limit; without one, a count of 2^31 empty rows in a
/// tiny buffer would make the decoder loop for seconds or allocate gigabytes for the rows' `Vec`s. The same figure as
/// the generated C's `NERVE_LCM_SLACK` and Python's, so one message decodes in every language or in none.
pub const ZERO_SIZE_SLACK: usize = 65536;

pub use error::{DecodeError, DecodeErrorKind, EncodeError};
pub use reader::Reader;
pub use str::Str;
pub use utime::now_utime;
pub use writer::{string_size, Writer};

/// A type's body: what is encoded after the fingerprint (and, for nested types, in place inside the parent).
pub trait Encode {
    /// The number of bytes [`Encode::encode_body`] writes.
    fn encoded_body_size(&self) -> usize;
    /// Writes the body. Fails if an array's length disagrees with its count member, or the buffer is too small.
    fn encode_body(&self, w: &mut Writer<'_>) -> Result<(), EncodeError>;
}

/// Reading a type's body back.
pub trait Decode: Sized {
    /// Reads the body, checking every length against the bytes that remain.
    fn decode_body(r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Reads the body into `self`, reusing the memory of its [`Str`]s and `Vec`s (see [`Message::decode_into`]).
    /// On error `self` holds a valid but unspecified mix of old and new values.
    #[inline]
    fn decode_body_into(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError> {
        *self = Self::decode_body(r)?;
        Ok(())
    }
}

/// An LCM message type: a body with a fingerprint in front.
pub trait Message: Encode + Decode {
    /// The 64-bit fingerprint F(T) written in front of every encoded message.
    const FINGERPRINT: u64;
    /// The full LCM type name, e.g. `exlcm.example_t`.
    const TYPE_NAME: &'static str;

    /// Bytes the encoded message takes, fingerprint included.
    fn encoded_size(&self) -> usize {
        8 + self.encoded_body_size()
    }

    /// Encodes into the front of `buf`, returning the number of bytes written.
    fn encode_into(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        let mut w = Writer::new(buf);
        w.put_u64(Self::FINGERPRINT)?;
        self.encode_body(&mut w)?;
        Ok(w.position())
    }

    /// Encodes into a new vector of exactly the right size.
    fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let mut buf = vec![0u8; self.encoded_size()];
        let n = self.encode_into(&mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }

    /// Decodes a message, checking the fingerprint first. Bytes after the message are ignored, as in LCM.
    fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(buf);
        r.expect_fingerprint(Self::FINGERPRINT)?;
        Self::decode_body(&mut r)
    }

    /// Decodes a message into `self`, reusing the memory it already holds: the allocation-free decode for real-time
    /// loops. `Vec`s keep their capacity, so once `self` has held a message at least as large as the incoming one,
    /// decoding allocates nothing for them; a string of up to 22 bytes never allocates, and a longer one reuses its
    /// allocation when the new text is as long (see [`Str::assign`]). Checks exactly what [`Message::decode`] checks
    /// and gives the same value on success. On error `self` holds a valid but unspecified mix of old and new values
    /// (decode again before using it).
    ///
    /// ```ignore
    /// let mut msg = PathT::default();
    /// loop {
    ///     let buf = receive();
    ///     msg.decode_into(&buf)?; // no allocation in steady state
    /// }
    /// ```
    #[inline]
    fn decode_into(&mut self, buf: &[u8]) -> Result<(), DecodeError> {
        let mut r = Reader::new(buf);
        r.expect_fingerprint(Self::FINGERPRINT)?;
        self.decode_body_into(&mut r)
    }
}

/// Reads the fingerprint at the front of an encoded message, if there are 8 bytes.
pub fn fingerprint_of(buf: &[u8]) -> Option<u64> {
    buf.get(..8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
}
