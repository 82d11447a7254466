//! LCM event logs: read them (resynchronising on damage, and saying where it was), write them byte for byte as LCM
//! does (with `lcm-logger`'s file splitting), and export them to MCAP, JSON lines and CSV.
//!
//! # Brief overview
//!
//! A log is a plain sequence of events, each a 28-byte header (sync word, event number, timestamp, channel and data
//! lengths) and the channel and message bytes (spec section 5.1). [`LogReader`] reads them in order as borrowed
//! [`EventRef`]s (or owned [`Event`]s through `Iterator`); [`LogWriter`] writes them, and [`SplitLog`] spreads them
//! over `FILE.00`, `FILE.01`, ... The `mcap` module (feature `mcap`) records to MCAP and reads it back the same
//! way, and `AnyLog` reads whichever a file is; chunks compressed with zstd or lz4 need the feature
//! `mcap-compression` (on by default; they are C libraries), without which only uncompressed MCAP works. The [`export`] module (feature `export`, on by default) turns events into MCAP
//! with a JSON schema per LCM type, JSON lines, or CSV per channel, decoding with `nerve-types`.
//!
//! ```
//! use nerve_log::{LogReader, LogWriter};
//! let mut w = LogWriter::new(Vec::new());
//! w.write_event(1_700_000_000_000_000, "POSE", b"\x01\x02")?;
//! let mut bytes = w.into_inner();
//! bytes.extend_from_slice(b"junk");                        // damage at the end
//! let mut r = LogReader::new(std::io::Cursor::new(bytes))?;
//! let e = r.next_event()?.unwrap();
//! assert_eq!((e.channel().as_ref(), e.data), ("POSE", &b"\x01\x02"[..]));
//! assert!(r.next_event()?.is_none());
//! assert_eq!(r.damage().len(), 1);                         // the 4 junk bytes, reported
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Design
//!
//! Damage is data, not an error. LCM's reader stops at the first event not followed by a sync word; this one skips
//! to the next sync word, records what it skipped as a [`Damage`] (offset, kind, bytes), and goes on, so nothing
//! intact after the damage is lost, and callers decide what damage means (the tools report it and exit 1). Nothing
//! read is trusted: an event's length must fit in what remains of the file and be followed by a sync word before a
//! byte of it is buffered, so a corrupt length never allocates.

#![deny(missing_docs)]

mod error;
mod event;
#[cfg(feature = "export")]
pub mod export;
#[cfg(feature = "mcap")]
pub mod mcap;
mod reader;
mod writer;

pub use error::LogError;
pub use event::{encode_header, Event, EventRef, RawHeader, HEADER_LEN, MAX_CHANNEL_LEN, SYNC};
pub use reader::{Damage, DamageKind, DamageTotals, LogReader, MAX_DAMAGE_RECORDS};
pub use writer::{numbered_name, LogWriter, SplitLog};
