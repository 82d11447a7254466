//! [`DynError`]: what went wrong in the dynamic codec, at which member path and byte offset.

use std::fmt;
use std::sync::Arc;

use nerve_codec::DecodeErrorKind;

/// One step of a member path: a member name or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// `.name`
    Field(Arc<str>),
    /// `[i]`
    Index(usize),
}

/// Why a value could not be decoded, encoded or read from JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DynErrorKind {
    /// The wire bytes are wrong: truncated, wrong fingerprint, negative count, bad string.
    Decode(DecodeErrorKind),
    /// The type is not in the schema.
    UnknownType {
        /// The full name asked for.
        name: String,
    },
    /// The value nests deeper than [`MAX_DEPTH`](super::MAX_DEPTH).
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// More elements that take no bytes than [`MAX_EMPTY_ELEMENTS`](super::MAX_EMPTY_ELEMENTS).
    TooManyEmptyElements {
        /// The limit.
        limit: usize,
    },
    /// A value of the wrong kind for its member.
    TypeMismatch {
        /// What the schema wants, e.g. `int32_t` or `array of float`.
        expected: String,
        /// What was given.
        found: String,
    },
    /// An array's length differs from its count member or fixed size.
    LengthMismatch {
        /// The length the count member or declaration says.
        expected: usize,
        /// The array's length.
        actual: usize,
    },
    /// A count member is negative (encoding) .
    NegativeCount {
        /// The count member.
        member: String,
        /// Its value.
        count: i64,
    },
    /// A member is missing from a struct value or JSON object.
    MissingMember {
        /// The member.
        name: String,
    },
    /// A struct value or JSON object has a member the type does not declare.
    UnknownMember {
        /// The member given.
        name: String,
        /// The members the type declares, comma-separated.
        expected: String,
    },
    /// A struct value's members are not in declaration order.
    MemberOrder {
        /// The member declared at this position.
        expected: String,
        /// The member found there.
        found: String,
    },
    /// A string too long for LCM's int32 length prefix.
    StringTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A JSON number does not fit the member's type.
    OutOfRange {
        /// The number as written.
        value: String,
        /// The member's type.
        ty: String,
    },
    /// A count member left out of JSON cannot be taken from array lengths (its arrays are all nested in empty ones).
    CannotInferCount {
        /// The count member.
        member: String,
    },
    /// Arrays sized by one count member have different lengths (or sub-arrays of one array do: LCM has no ragged
    /// arrays).
    CountConflict {
        /// The count member.
        member: String,
        /// One length seen.
        first: usize,
        /// Another.
        second: usize,
    },
    /// The JSON text is not valid JSON.
    Json {
        /// What is wrong.
        message: String,
    },
}

/// A dynamic codec error: what, at which member path, and at which byte offset of the input (the encoded message,
/// or the JSON text) when there is one.
///
/// It is one pointer wide, so that the `Result`s of the recursive decoder stay small on the stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynError(Box<Inner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    kind: DynErrorKind,
    root: String,
    path: Vec<PathSegment>,
    offset: Option<usize>,
}

impl DynError {
    /// An error not yet placed in a path (the path is collected while the error travels up, innermost first).
    #[cold]
    pub(crate) fn new(kind: DynErrorKind, offset: Option<usize>) -> DynError {
        DynError(Box::new(Inner { kind, root: String::new(), path: Vec::new(), offset }))
    }

    pub(crate) fn in_field(mut self, name: &Arc<str>) -> DynError {
        self.0.path.push(PathSegment::Field(name.clone()));
        self
    }

    pub(crate) fn in_index(mut self, i: usize) -> DynError {
        self.0.path.push(PathSegment::Index(i));
        self
    }

    pub(crate) fn with_offset(mut self, offset: usize) -> DynError {
        self.0.offset.get_or_insert(offset);
        self
    }

    /// Puts the path (collected innermost first) in order, under `root`.
    pub(crate) fn finish(mut self, root: &str) -> DynError {
        self.0.path.reverse();
        self.0.root = root.to_owned();
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &DynErrorKind {
        &self.0.kind
    }

    /// The type the operation started from (the first part of the path).
    pub fn root(&self) -> &str {
        &self.0.root
    }

    /// The members and indices from the root to where it went wrong.
    pub fn path(&self) -> &[PathSegment] {
        &self.0.path
    }

    /// Byte offset into the input, when the error is about a place in it.
    pub fn offset(&self) -> Option<usize> {
        self.0.offset
    }

    /// The path as text, e.g. `path_t.waypoints[3].id`.
    pub fn path_string(&self) -> String {
        let mut s = self.0.root.clone();
        for seg in &self.0.path {
            match seg {
                PathSegment::Field(f) => {
                    s.push('.');
                    s.push_str(f);
                }
                PathSegment::Index(i) => s.push_str(&format!("[{i}]")),
            }
        }
        s
    }
}

impl fmt::Display for DynErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DynErrorKind::Decode(k) => match k {
                DecodeErrorKind::WrongFingerprint { expected, found } => {
                    write!(f, "wrong fingerprint 0x{found:016x} (expected 0x{expected:016x})")
                }
                DecodeErrorKind::Truncated { needed, remaining } => {
                    write!(f, "truncated: {needed} bytes needed, {remaining} left")
                }
                DecodeErrorKind::NegativeCount { count } => write!(f, "negative array count {count}"),
                DecodeErrorKind::BadStringLength { length } => write!(f, "bad string length {length}"),
                DecodeErrorKind::MissingNul => write!(f, "string not terminated by NUL"),
                DecodeErrorKind::InvalidUtf8 => write!(f, "string is not valid UTF-8"),
                other => write!(f, "{other:?}"),
            },
            DynErrorKind::UnknownType { name } => write!(f, "unknown type '{name}'"),
            DynErrorKind::TooDeep { limit } => write!(f, "nested more than {limit} levels deep"),
            DynErrorKind::TooManyEmptyElements { limit } => {
                write!(f, "more than {limit} array elements that take no bytes")
            }
            DynErrorKind::TypeMismatch { expected, found } => write!(f, "expected {expected}, found {found}"),
            DynErrorKind::LengthMismatch { expected, actual } => {
                write!(f, "array has {actual} elements but its size says {expected}")
            }
            DynErrorKind::NegativeCount { member, count } => write!(f, "count member '{member}' is negative ({count})"),
            DynErrorKind::MissingMember { name } => write!(f, "member '{name}' is missing"),
            DynErrorKind::UnknownMember { name, expected } => {
                write!(f, "unknown member '{name}' (the members are: {expected})")
            }
            DynErrorKind::MemberOrder { expected, found } => {
                write!(f, "member '{found}' out of order: '{expected}' is declared here")
            }
            DynErrorKind::StringTooLong { len } => write!(f, "string of {len} bytes is too long for LCM"),
            DynErrorKind::OutOfRange { value, ty } => write!(f, "{value} does not fit in {ty}"),
            DynErrorKind::CannotInferCount { member } => write!(
                f,
                "count member '{member}' is missing and cannot be taken from array lengths (give it explicitly)"
            ),
            DynErrorKind::CountConflict { member, first, second } => {
                write!(f, "arrays sized by '{member}' have different lengths ({first} and {second})")
            }
            DynErrorKind::Json { message } => write!(f, "invalid JSON: {message}"),
        }
    }
}

impl fmt::Display for DynError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path_string();
        if !path.is_empty() {
            write!(f, "{path}: ")?;
        }
        write!(f, "{}", self.0.kind)?;
        if let Some(o) = self.0.offset {
            write!(f, " at byte {o}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DynError {}
