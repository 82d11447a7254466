//! Exporters: a log's events to MCAP ([`McapExport`]: a JSON schema per LCM type and JSON messages, for Foxglove),
//! JSON lines ([`JsonlExport`]) and CSV per channel ([`CsvExport`], flattened field names like
//! `pose.position[0]`).
//!
//! Messages are decoded by fingerprint with a [`nerve_types::Registry`] ([`Decoder`]). A message no type matches
//! (unknown fingerprint, several types share it, or the bytes do not decode) is still exported, raw, with the
//! reason, and counted in [`ExportStats`]; nothing is silently dropped.
//!
//! The caller drives: it reads events (filtering channels as it likes) and hands each to an exporter's `event`,
//! then calls `finish`. CSV needs every message's shape before it writes a header, so it takes two passes: `scan`
//! each event, then `event` each again.

mod csv;
mod json;
mod jsonl;
mod mcap;
mod schema;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use nerve_types::dynamic::Value;
use nerve_types::{Registry, Struct};

pub use self::csv::CsvExport;
pub use self::jsonl::JsonlExport;
pub use self::mcap::McapExport;
pub use self::schema::json_schema;

/// A failure while exporting.
#[derive(Debug)]
#[non_exhaustive]
pub enum ExportError {
    /// Writing (or creating) an output file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl ExportError {
    pub(crate) fn io(path: &Path, op: &'static str, source: io::Error) -> ExportError {
        ExportError::Io { path: path.to_path_buf(), op, source }
    }
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::Io { path, op, .. } => write!(f, "{op} {}", path.display()),
        }
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExportError::Io { source, .. } => Some(source),
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Messages written.
    pub messages: u64,
    /// Of those, decoded with a known type.
    pub decoded: u64,
    /// Of those, written raw: no type has the fingerprint (or several do), or the bytes did not decode.
    pub undecoded: u64,
    /// Bytes written.
    pub bytes_out: u64,
}

/// Decodes messages by fingerprint; without types, every message is undecoded.
pub struct Decoder {
    registry: Option<Registry>,
}

/// A message as the exporters see it.
pub enum Decoded<'r> {
    /// Decoded as this type.
    Value(&'r Struct, Value),
    /// Not decoded, and why.
    Raw(String),
}

impl Decoder {
    /// A decoder over `registry` (`None`: no types known).
    pub fn new(registry: Option<Registry>) -> Decoder {
        Decoder { registry }
    }

    /// The registry, if any.
    pub fn registry(&self) -> Option<&Registry> {
        self.registry.as_ref()
    }

    /// Decodes one message.
    pub fn decode(&self, data: &[u8]) -> Decoded<'_> {
        match &self.registry {
            None => Decoded::Raw(match data.get(..8) {
                Some(fp) => format!(
                    "no types given (--types) for fingerprint 0x{:016x}",
                    u64::from_be_bytes(fp.try_into().expect("8 bytes"))
                ),
                None => format!("message of {} bytes has no 8-byte fingerprint", data.len()),
            }),
            Some(reg) => match reg.decode(data) {
                Ok((st, v)) => Decoded::Value(st, v),
                Err(e) => Decoded::Raw(e.to_string()),
            },
        }
    }
}

/// The fingerprint of a message, if it has 8 bytes.
pub(crate) fn fingerprint(data: &[u8]) -> Option<u64> {
    data.get(..8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
}

/// Lowercase hex.
pub(crate) fn push_hex(out: &mut String, data: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(data.len() * 2);
    for &b in data {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
}

#[cfg(test)]
mod tests;
