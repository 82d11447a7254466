//! [`LogError`]: what reading or writing a log can fail with, each with the file and the operation.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A failure reading or writing a log. Damage inside a log is not an error: the reader skips it and reports it as
/// [`crate::Damage`].
#[derive(Debug)]
#[non_exhaustive]
pub enum LogError {
    /// An I/O call failed.
    Io {
        /// The file, when known.
        path: Option<PathBuf>,
        /// What was being done, e.g. "reading".
        op: &'static str,
        /// The error.
        source: io::Error,
    },
    /// A channel name that the format cannot hold (empty, or 1000 bytes or more).
    ChannelLength {
        /// The first bytes of the channel.
        channel: String,
        /// Its length in bytes.
        len: usize,
    },
    /// A message longer than the format's 31-bit length field.
    DataTooLong {
        /// The channel.
        channel: String,
        /// The message's length.
        len: usize,
    },
    /// The output file exists and overwriting was not asked for.
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// An MCAP file that cannot be read as one: cut short, a malformed record, a length past the reader's limit,
    /// a chunk whose CRC or decompression fails, or messages that are not LCM bytes.
    Mcap {
        /// The file, when known.
        path: Option<PathBuf>,
        /// What is wrong.
        reason: String,
    },
}

impl LogError {
    pub(crate) fn io(path: Option<&std::path::Path>, op: &'static str, source: io::Error) -> LogError {
        LogError::Io { path: path.map(|p| p.to_path_buf()), op, source }
    }
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogError::Io { path: Some(p), op, .. } => write!(f, "{op} {}", p.display()),
            LogError::Io { path: None, op, .. } => write!(f, "{op} the log"),
            LogError::ChannelLength { channel, len } => {
                write!(f, "channel '{channel}' is {len} bytes; a log event's channel must be 1 to 999 bytes")
            }
            LogError::DataTooLong { channel, len } => {
                write!(f, "message on '{channel}' is {len} bytes; a log event holds at most 2^31-1")
            }
            LogError::Exists { path } => write!(f, "{} exists (use --force to overwrite)", path.display()),
            LogError::Mcap { path: Some(p), reason } => write!(f, "{}: not readable as MCAP: {reason}", p.display()),
            LogError::Mcap { path: None, reason } => write!(f, "not readable as MCAP: {reason}"),
        }
    }
}

impl std::error::Error for LogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LogError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
