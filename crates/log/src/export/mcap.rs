//! [`McapExport`]: MCAP through Foxglove's own `mcap` crate: a JSON Schema per LCM type (schema encoding
//! `jsonschema`), JSON messages (message encoding `json`), one MCAP channel per (LCM channel, type), in chunks of
//! about 1 MiB compressed with zstd (or lz4, or not at all: [`Compression`]) with message indexes, and the summary
//! (schemas, channels, statistics, chunk indexes, summary offsets) so that readers such as Foxglove seek without
//! scanning. Each decoded type's `.lcm` definition goes into a metadata record (`nerve.lcm`), so the file says
//! what its messages were.
//!
//! Timestamps: an event's receive time (µs) becomes the message's log and publish time (ns); its event number is
//! the message's sequence number (low 32 bits).

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nerve_types::Struct;

use super::batch::{Batch, Done, Part, Pipeline, Work, Workers};
use super::json::push_base64;
use super::lcm_text::lcm_definition;
use super::schema::{json_schema, raw_schema, RAW_SCHEMA_NAME};
use super::sink::Sink;
use super::{fingerprint, push_fingerprint, Decoder, ExportError, ExportStats, Feed};
use crate::mcap::{write_options, Compression, LCM_METADATA};
use crate::EventRef;

use nerve_types::dynamic::JsonForm;

/// The export's file as the `mcap` writer sees it: bytes handed to the writer thread of [`Sink`] (`O_DIRECT`
/// where the system allows it), counted.
struct SinkOut {
    sink: Sink,
    written: u64,
}

impl io::Write for SinkOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sink.write(0, buf).map_err(io::Error::other)?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

type Writer = mcap::Writer<mcap::write::NoSeek<SinkOut>>;

/// Each message's type (`None`: raw) and JSON.
type MessageParts<'d> = Part<Option<&'d Struct>, ()>;

/// Exports to one MCAP file.
pub struct McapExport<'d> {
    path: PathBuf,
    out: Writer,
    decoder: &'d Decoder,
    /// Fingerprint of the decoded type (None: raw) -> schema id.
    schema_ids: HashMap<Option<u64>, u16>,
    /// LCM channel -> (schema id, MCAP channel id).
    channel_ids: HashMap<Vec<u8>, Vec<(u16, u16)>>,
    /// The `.lcm` definition of each decoded type, by name (the `nerve.lcm` metadata record).
    definitions: BTreeMap<String, String>,
    /// Batches of events on their way through the workers: each written here while the next is transcoded.
    pipeline: Pipeline<'d, Option<&'d Struct>, ()>,
    work: Work<'d, Option<&'d Struct>, ()>,
    stats: ExportStats,
}

impl<'d> McapExport<'d> {
    /// Creates `path` (overwriting it) and writes the MCAP header; chunks compressed with zstd.
    pub fn create(path: &Path, decoder: &'d Decoder) -> Result<McapExport<'d>, ExportError> {
        McapExport::create_with(path, decoder, Compression::Zstd)
    }

    /// Creates `path` (overwriting it) and writes the MCAP header; chunks compressed as `compression` says.
    pub fn create_with(
        path: &Path,
        decoder: &'d Decoder,
        compression: Compression,
    ) -> Result<McapExport<'d>, ExportError> {
        // Before the file exists, so that a compression this build lacks leaves nothing behind.
        let opts = write_options(compression).map_err(|e| ExportError::io(path, "creating", e))?;
        let mut sink = Sink::new();
        sink.create(path)?;
        // The sink is not seekable: the writer builds each chunk in memory (about 1 MiB) and then hands it over.
        let out = opts
            .disable_seeking(true)
            .create(mcap::write::NoSeek::new(SinkOut { sink, written: 0 }))
            .map_err(|e| mcap_error(path, e))?;
        Ok(McapExport {
            path: path.to_path_buf(),
            out,
            decoder,
            schema_ids: HashMap::new(),
            channel_ids: HashMap::new(),
            definitions: BTreeMap::new(),
            pipeline: Pipeline::default(),
            work: Arc::new(move |ev: &EventRef<'_>, out: &mut Vec<u8>, _: &mut ()| message_json(decoder, ev.data, out)),
            stats: ExportStats::default(),
        })
    }

    /// Exports the events `events` hands over (in order, to the function it is given: the caller's loop over its
    /// log), then writes the summary and the footer and closes the file. The messages' JSON is made on worker
    /// threads, a batch at a time, while the caller's thread reads the next batch and writes the one before.
    pub fn run<E: From<ExportError>>(
        mut self,
        events: impl FnOnce(&mut Feed<'_>) -> Result<(), E>,
    ) -> Result<ExportStats, E> {
        Workers::scope(|w| {
            events(&mut |ev| self.event(ev, w))?;
            Ok(self.finish(w)?)
        })
    }

    /// Exports one event (written with the batch it joins, once the batch after it has been handed over).
    fn event(&mut self, ev: &EventRef<'_>, workers: &Workers<'d>) -> Result<(), ExportError> {
        if self.pipeline.push(ev, workers, || self.work.clone()) {
            while let Some(done) = self.pipeline.ready(workers) {
                self.write_done(done)?;
            }
        }
        Ok(())
    }

    fn write_done(&mut self, mut done: Done<Option<&'d Struct>, ()>) -> Result<(), ExportError> {
        let r = self.write_batch(&done.batch, &mut done.parts);
        self.pipeline.recycle(done);
        r
    }

    /// Writes a transcoded batch's messages, in order.
    fn write_batch(&mut self, batch: &Batch, parts: &mut [MessageParts<'d>]) -> Result<(), ExportError> {
        for part in parts.iter_mut() {
            let mut start = 0;
            for (i, &(key, end)) in part.events.clone().zip(&part.results) {
                self.message(&batch.get(i), key, &part.out[start..end])?;
                start = end;
            }
            part.results.clear();
        }
        Ok(())
    }

    /// Writes one message (its JSON `json`), adding the schema and channel it is the first of.
    fn message(&mut self, ev: &EventRef<'_>, key: Option<&'d Struct>, json: &[u8]) -> Result<(), ExportError> {
        let time = (ev.utime.max(0) as u64).saturating_mul(1000);
        if key.is_some() {
            self.stats.decoded += 1;
        } else {
            self.stats.undecoded += 1;
        }
        let schema_id = match self.schema_ids.get(&key.map(|s| s.fingerprint)) {
            Some(&id) => id,
            None => {
                let (name, data) = match key {
                    Some(st) => {
                        let reg = self.decoder.registry().expect("decoded");
                        self.definitions.insert(st.name.full(), lcm_definition(reg.schema(), st));
                        (st.name.full(), json_schema(reg.schema(), st))
                    }
                    None => (RAW_SCHEMA_NAME.to_owned(), raw_schema()),
                };
                let id =
                    self.out.add_schema(&name, "jsonschema", data.as_bytes()).map_err(|e| mcap_error(&self.path, e))?;
                self.schema_ids.insert(key.map(|s| s.fingerprint), id);
                id
            }
        };
        let existing = self
            .channel_ids
            .get(ev.channel_bytes)
            .and_then(|v| v.iter().find(|(s, _)| *s == schema_id))
            .map(|&(_, c)| c);
        let channel_id = match existing {
            Some(c) => c,
            None => {
                let topic = ev.channel();
                let id = self
                    .out
                    .add_channel(schema_id, &topic, "json", &BTreeMap::new())
                    .map_err(|e| mcap_error(&self.path, e))?;
                self.channel_ids.entry(ev.channel_bytes.to_vec()).or_default().push((schema_id, id));
                id
            }
        };
        let header =
            mcap::records::MessageHeader { channel_id, sequence: ev.number as u32, log_time: time, publish_time: time };
        self.out.write_to_known_channel(&header, json).map_err(|e| mcap_error(&self.path, e))?;
        self.stats.messages += 1;
        Ok(())
    }

    /// Writes the last messages and chunk, the summary and the footer, and closes the file.
    fn finish(mut self, workers: &Workers<'d>) -> Result<ExportStats, ExportError> {
        self.pipeline.flush(workers, || self.work.clone());
        while let Some(done) = self.pipeline.next_done(workers) {
            self.write_done(done)?;
        }
        if !self.definitions.is_empty() {
            let metadata = mcap::records::Metadata {
                name: LCM_METADATA.to_owned(),
                metadata: std::mem::take(&mut self.definitions),
            };
            self.out.write_metadata(&metadata).map_err(|e| mcap_error(&self.path, e))?;
        }
        self.out.finish().map_err(|e| mcap_error(&self.path, e))?;
        let out = self.out.into_inner().into_inner();
        self.stats.bytes_out = out.written;
        out.sink.finish()?;
        Ok(self.stats)
    }
}

/// An error of the `mcap` writer as an export error (its I/O error, if that is what it is).
fn mcap_error(path: &Path, e: mcap::McapError) -> ExportError {
    match e {
        mcap::McapError::Io(e) => ExportError::io(path, "writing", e),
        other => ExportError::io(path, "writing", io::Error::new(io::ErrorKind::InvalidData, other.to_string())),
    }
}

/// Appends a message's JSON as MCAP export writes it: the transcoder's flat form (the type is returned), or for a
/// message no type decodes, an object of [`raw_schema`]: its fingerprint, its bytes in base64 and the reason
/// (`None`). `nerve foxglove` sends the same JSON.
pub fn message_json<'d>(decoder: &'d Decoder, data: &[u8], out: &mut Vec<u8>) -> Option<&'d Struct> {
    match decoder.json(data, JsonForm::Flat, out) {
        Ok(st) => Some(st),
        Err(why) => {
            out.extend_from_slice(b"{\"fingerprint\":\"");
            if let Some(f) = fingerprint(data) {
                push_fingerprint(out, f);
            }
            out.extend_from_slice(b"\",\"data\":\"");
            push_base64(out, data);
            out.extend_from_slice(b"\",\"error\":");
            out.extend_from_slice(nerve_types::dynamic::json_string(&why).as_bytes());
            out.push(b'}');
            None
        }
    }
}
