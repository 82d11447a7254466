//! Exporters: a log's events to MCAP ([`McapExport`]: a JSON schema per LCM type and JSON messages, for Foxglove),
//! JSON lines ([`JsonlExport`]) and CSV per channel ([`CsvExport`], flattened field names like
//! `pose.position[0]`).
//!
//! Messages are decoded by fingerprint with a [`nerve_types::Registry`] ([`Decoder`]). A message no type matches
//! (unknown fingerprint, several types share it, or the bytes do not decode) is still exported, raw, with the
//! reason, and counted in [`ExportStats`]; nothing is silently dropped.
//!
//! The exporters do not build value trees: the registry's [`Transcoder`] writes each message's JSON (or CSV cells)
//! straight from its bytes into the output buffer, through a plan compiled once per type, with exactly the text
//! and the errors the tree path gives ([`Decoder::decode`] is that path, kept for callers that want values).
//! Events are transcoded in batches on worker threads that live as long as the export (`batch`); the caller's
//! thread reads the next batch meanwhile, and puts each transcoded batch's text in order into the files' buffers
//! (MCAP records and indexes, CSV tables); the text is written to the files on a thread of its own (`sink`), so
//! that reading, transcoding, ordering and writing overlap.
//!
//! The caller drives: an exporter's `run` is given the caller's loop over its log, which it calls with a [`Feed`]
//! to hand each event to (filtering channels as it likes); `run` returns when everything is written and synced.
//! CSV's header names the columns of every message of a table, so it calls the loop a second time when a table's
//! columns grew after its header was written (a longer array came later), to write that table again.

mod batch;
mod csv;
mod json;
mod jsonl;
mod lcm_text;
mod mcap;
mod schema;
mod sink;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use nerve_types::dynamic::{JsonForm, Transcoder, Value};
use nerve_types::{Registry, Struct};

use crate::EventRef;

pub use self::csv::CsvExport;
pub use self::jsonl::JsonlExport;
pub use self::lcm_text::{lcm_definition, registry_from_mcap, type_defs};
pub use self::mcap::{message_json, McapExport};
pub use self::schema::{json_schema, raw_schema, RAW_SCHEMA_NAME};

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

/// How an exporter's `run` is handed the events: the caller's loop over its log calls it with each event to
/// export, in order (filtering channels as it likes), and passes on its error.
pub type Feed<'f> = dyn FnMut(&EventRef<'_>) -> Result<(), ExportError> + 'f;

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
    transcoder: Option<Transcoder>,
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
        Decoder { transcoder: registry.map(Transcoder::new) }
    }

    /// The registry, if any.
    pub fn registry(&self) -> Option<&Registry> {
        self.transcoder.as_ref().map(Transcoder::registry)
    }

    /// The transcoder over the registry, if any.
    pub fn transcoder(&self) -> Option<&Transcoder> {
        self.transcoder.as_ref()
    }

    /// Decodes one message into a value tree.
    pub fn decode(&self, data: &[u8]) -> Decoded<'_> {
        match self.registry() {
            None => Decoded::Raw(no_types(data)),
            Some(reg) => match reg.decode(data) {
                Ok((st, v)) => Decoded::Value(st, v),
                Err(e) => Decoded::Raw(e.to_string()),
            },
        }
    }

    /// Appends one message's JSON in `form` to `out` (no value tree); or the reason [`Decoder::decode`] gives for
    /// not decoding it, with `out` as it was.
    pub fn json(&self, data: &[u8], form: JsonForm, out: &mut Vec<u8>) -> Result<&Struct, String> {
        match &self.transcoder {
            None => Err(no_types(data)),
            Some(t) => t.json(data, form, out).map_err(|e| e.to_string()),
        }
    }

    /// The type a message would decode as (its fingerprint is one type's), before decoding it.
    pub fn candidate(&self, data: &[u8]) -> Option<&Struct> {
        self.registry()?.lookup(fingerprint(data)?)
    }
}

fn no_types(data: &[u8]) -> String {
    match fingerprint(data) {
        Some(fp) => format!("no types given (--types) for fingerprint 0x{fp:016x}"),
        None => format!("message of {} bytes has no 8-byte fingerprint", data.len()),
    }
}

/// The fingerprint of a message, if it has 8 bytes.
pub(crate) fn fingerprint(data: &[u8]) -> Option<u64> {
    data.get(..8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
}

pub(crate) use nerve_types::dynamic::push_hex;

/// `0x` and 16 lowercase hex digits.
pub(crate) fn push_fingerprint(out: &mut Vec<u8>, fp: u64) {
    out.extend_from_slice(b"0x");
    push_hex(out, &fp.to_be_bytes());
}

/// An integer's decimal text.
pub(crate) fn push_int<I: itoa::Integer>(out: &mut Vec<u8>, x: I) {
    out.extend_from_slice(itoa::Buffer::new().format(x).as_bytes());
}

/// Where the exporters keep output before writing it: written out in pieces of about this size.
pub(crate) const OUT_CHUNK: usize = 1 << 20;

#[cfg(test)]
mod tests;
