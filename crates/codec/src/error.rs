//! Encoding and decoding errors, each with the byte offset where it happened.

use std::fmt;

/// Why a buffer could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The message starts with another type's fingerprint.
    WrongFingerprint {
        /// The fingerprint of the type asked for.
        expected: u64,
        /// The fingerprint found in the buffer.
        found: u64,
    },
    /// The buffer ends before the message does.
    Truncated {
        /// Bytes needed from the offset on.
        needed: usize,
        /// Bytes left from the offset on.
        remaining: usize,
    },
    /// An array's count member is negative.
    NegativeCount {
        /// The count read.
        count: i64,
    },
    /// A string's length prefix is 0 or negative (it counts the NUL, so the least is 1).
    BadStringLength {
        /// The length read.
        length: i32,
    },
    /// A string does not end in a NUL byte.
    MissingNul,
    /// A string is not valid UTF-8.
    InvalidUtf8,
    /// Recursive types nest deeper than [`crate::MAX_DEPTH`] levels (a guard against stack exhaustion).
    TooDeep {
        /// The limit.
        limit: u32,
    },
    /// A view's array was indexed past its end.
    IndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// The array's length.
        len: usize,
    },
}

/// A decoding failure: what went wrong and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// What went wrong.
    pub kind: DecodeErrorKind,
    /// The byte offset in the buffer where it was found.
    pub offset: usize,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DecodeErrorKind::WrongFingerprint { expected, found } => {
                write!(f, "wrong fingerprint 0x{found:016x} (expected 0x{expected:016x})")?
            }
            DecodeErrorKind::Truncated { needed, remaining } => {
                write!(f, "truncated: {needed} bytes needed, {remaining} left")?
            }
            DecodeErrorKind::NegativeCount { count } => write!(f, "negative array count {count}")?,
            DecodeErrorKind::BadStringLength { length } => write!(f, "bad string length {length}")?,
            DecodeErrorKind::MissingNul => write!(f, "string not terminated by NUL")?,
            DecodeErrorKind::InvalidUtf8 => write!(f, "string is not valid UTF-8")?,
            DecodeErrorKind::TooDeep { limit } => write!(f, "recursive types nested more than {limit} levels deep")?,
            DecodeErrorKind::IndexOutOfRange { index, len } => {
                write!(f, "index {index} out of range for length {len}")?
            }
        }
        write!(f, " at byte {}", self.offset)
    }
}

impl std::error::Error for DecodeError {}

/// Why a value could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// An array's length differs from what its count member (or fixed size) says.
    LengthMismatch {
        /// The array member.
        field: &'static str,
        /// The length the count member or declaration requires.
        expected: usize,
        /// The array's actual length.
        actual: usize,
    },
    /// A count member is negative.
    NegativeCount {
        /// The array member it sizes.
        field: &'static str,
        /// Its value.
        count: i64,
    },
    /// A string is too long for LCM's int32 length prefix.
    StringTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The output buffer is too small.
    BufferTooSmall {
        /// Bytes needed at the point of failure.
        needed: usize,
        /// Bytes left.
        remaining: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::LengthMismatch { field, expected, actual } => {
                write!(f, "array '{field}' has {actual} elements but its size says {expected}")
            }
            EncodeError::NegativeCount { field, count } => {
                write!(f, "count of array '{field}' is negative ({count})")
            }
            EncodeError::StringTooLong { len } => {
                write!(f, "string of {len} bytes is too long for LCM")
            }
            EncodeError::BufferTooSmall { needed, remaining } => {
                write!(f, "buffer too small: {needed} bytes needed, {remaining} left")
            }
        }
    }
}

impl std::error::Error for EncodeError {}
