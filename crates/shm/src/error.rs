//! [`ShmError`]: everything a channel operation can fail with, each with the channel file's path or the sizes
//! involved.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A shared-memory channel failure.
#[derive(Debug)]
#[non_exhaustive]
pub enum ShmError {
    /// The channel name cannot be a file name in the channel directory.
    InvalidName {
        /// The name given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The sizes or mode asked for cannot make a channel.
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// No channel file at this path.
    NotFound {
        /// The channel file.
        path: PathBuf,
    },
    /// `create` found a channel of the same sizes already there (use `open_or_create` to reuse it).
    AlreadyExists {
        /// The channel file.
        path: PathBuf,
    },
    /// A channel already exists under this name with other sizes.
    SizeMismatch {
        /// The channel file.
        path: PathBuf,
        /// Frames and frame size of the existing channel.
        existing: (u64, u64),
        /// Frames and frame size asked for.
        requested: (u64, u64),
    },
    /// The process may not read and write the channel file (readers need write access too: they register as
    /// waiters and count themselves in the statistics).
    PermissionDenied {
        /// The channel file (or directory).
        path: PathBuf,
        /// What was being done.
        op: &'static str,
    },
    /// The channel directory does not let this process make or remove a channel file there: making and removing
    /// need write access to the directory (the channel file's own mode does not matter), and in a directory with
    /// the sticky bit (as `/dev/shm` has) only a file's owner may remove it.
    DirectoryNotWritable {
        /// The channel directory.
        dir: PathBuf,
        /// What was being done, e.g. "making a channel".
        op: &'static str,
        /// Whether the sticky bit is what refused it (the file belongs to another user).
        sticky: bool,
    },
    /// The file does not start with the channel magic: it is not a Nerve channel.
    NotAChannel {
        /// The file.
        path: PathBuf,
        /// Its first bytes.
        found: [u8; 8],
    },
    /// The file is a Nerve channel of another layout version.
    UnsupportedVersion {
        /// The channel file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The version this library reads and writes.
        supported: u32,
    },
    /// The file is shorter than its header says it must be.
    Truncated {
        /// The channel file.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The length its header (or the fixed header) needs.
        needed: u64,
    },
    /// The header or an index entry holds values no channel of this layout can have.
    Corrupt {
        /// The channel file.
        path: PathBuf,
        /// What is inconsistent.
        what: String,
    },
    /// A message longer than the channel's frame size.
    MessageTooLarge {
        /// The channel file.
        path: PathBuf,
        /// The message length.
        len: usize,
        /// The channel's frame size.
        max: u64,
    },
    /// The writer lock failed: a live writer held it past [`crate::LOCK_PATIENCE`] (a loan not committed, a stopped
    /// process), this thread already holds it through another writer of the same channel (a loan not yet
    /// committed), or this writer's liveness lock could not be taken.
    Lock {
        /// The channel file.
        path: PathBuf,
        /// What the lock call reported.
        reason: String,
    },
    /// A system call on the channel file failed.
    Io {
        /// The channel file (or directory).
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The error.
        source: io::Error,
    },
    /// A typed reader received bytes that do not decode as its message type.
    Decode {
        /// The channel file.
        path: PathBuf,
        /// The message's sequence number.
        seq: u64,
        /// Why it does not decode.
        source: nerve_codec::DecodeError,
    },
    /// A typed writer's message could not be encoded.
    Encode(nerve_codec::EncodeError),
}

impl ShmError {
    #[cfg_attr(loom, allow(dead_code))]
    /// Maps an I/O error, turning "permission denied" and "not found" into their own variants.
    pub(crate) fn io(path: impl Into<PathBuf>, op: &'static str, source: io::Error) -> ShmError {
        let path = path.into();
        match source.kind() {
            io::ErrorKind::PermissionDenied => ShmError::PermissionDenied { path, op },
            io::ErrorKind::NotFound => ShmError::NotFound { path },
            _ => ShmError::Io { path, op, source },
        }
    }
}

impl fmt::Display for ShmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShmError::InvalidName { name, reason } => write!(f, "invalid channel name {name:?}: {reason}"),
            ShmError::InvalidConfig { reason } => write!(f, "invalid channel configuration: {reason}"),
            ShmError::NotFound { path } => write!(f, "{}: no such channel", path.display()),
            ShmError::AlreadyExists { path } => write!(f, "{}: channel already exists", path.display()),
            ShmError::SizeMismatch { path, existing, requested } => write!(
                f,
                "{}: channel exists with {} frames of {} bytes, not the {} frames of {} bytes asked for",
                path.display(),
                existing.0,
                existing.1,
                requested.0,
                requested.1
            ),
            ShmError::PermissionDenied { path, op } => {
                write!(
                    f,
                    "{}: permission denied ({op}; readers and writers both need read and write access)",
                    path.display()
                )
            }
            ShmError::DirectoryNotWritable { dir, op, sticky: false } => write!(
                f,
                "{}: permission denied ({op} needs write access to the channel directory, whatever the channel \
                 file's own mode)",
                dir.display()
            ),
            ShmError::DirectoryNotWritable { dir, op, sticky: true } => write!(
                f,
                "{}: permission denied ({op}: the directory is sticky, so only the channel file's owner or root may \
                 do it)",
                dir.display()
            ),
            ShmError::NotAChannel { path, found } => {
                write!(f, "{}: not a Nerve channel (starts with {:02x?}, not \"NERVESHM\")", path.display(), found)
            }
            ShmError::UnsupportedVersion { path, found, supported } => write!(
                f,
                "{}: channel layout version {found}, this library reads version {supported} (recreate the channel)",
                path.display()
            ),
            ShmError::Truncated { path, len, needed } => {
                write!(f, "{}: channel file is {len} bytes, its layout needs {needed}", path.display())
            }
            ShmError::Corrupt { path, what } => write!(f, "{}: corrupt channel: {what}", path.display()),
            ShmError::MessageTooLarge { path, len, max } => {
                write!(f, "{}: message of {len} bytes exceeds the frame size {max}", path.display())
            }
            ShmError::Lock { path, reason } => write!(f, "{}: writer lock: {reason}", path.display()),
            // The source is not repeated here: it is the next link of the chain (`source()`).
            ShmError::Io { path, op, .. } => write!(f, "{}: {op}", path.display()),
            ShmError::Decode { path, seq, .. } => write!(f, "{}: message {seq} does not decode", path.display()),
            ShmError::Encode(_) => write!(f, "encoding the message"),
        }
    }
}

impl std::error::Error for ShmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ShmError::Io { source, .. } => Some(source),
            ShmError::Decode { source, .. } => Some(source),
            ShmError::Encode(e) => Some(e),
            _ => None,
        }
    }
}
