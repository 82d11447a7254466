//! [`McapExport`]: writes MCAP (format version 0) from the specification: a JSON Schema per LCM type (schema
//! encoding `jsonschema`), JSON messages (message encoding `json`), one MCAP channel per (LCM channel, type), in
//! uncompressed chunks of about 1 MiB with message indexes, and a summary (schemas, channels, statistics, chunk
//! indexes, summary offsets) so that readers such as Foxglove seek without scanning.
//!
//! Timestamps: an event's receive time (µs) becomes the message's log and publish time (ns); its event number is
//! the message's sequence number (low 32 bits).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};

use nerve_types::dynamic::JsonForm;
use nerve_types::Struct;

use std::sync::Arc;

use super::batch::{Batch, Done, Part, Pipeline, Work, Workers};
use super::json::push_base64;
use super::schema::{json_schema, raw_schema, RAW_SCHEMA_NAME};
use super::sink::Sink;
use super::{fingerprint, push_fingerprint, Decoder, ExportError, ExportStats, Feed};
use crate::EventRef;

const MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";
const CHUNK_TARGET: usize = 1 << 20;

const OP_HEADER: u8 = 0x01;
const OP_FOOTER: u8 = 0x02;
const OP_SCHEMA: u8 = 0x03;
const OP_CHANNEL: u8 = 0x04;
const OP_MESSAGE: u8 = 0x05;
const OP_CHUNK: u8 = 0x06;
const OP_MESSAGE_INDEX: u8 = 0x07;
const OP_CHUNK_INDEX: u8 = 0x08;
const OP_STATISTICS: u8 = 0x0B;
const OP_SUMMARY_OFFSET: u8 = 0x0E;
const OP_DATA_END: u8 = 0x0F;

/// Little-endian record building.
struct Rec(Vec<u8>);

impl Rec {
    fn new(op: u8) -> Rec {
        let mut v = Vec::with_capacity(64);
        v.push(op);
        v.extend_from_slice(&[0; 8]);
        Rec(v)
    }
    fn u16(&mut self, x: u16) -> &mut Self {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }
    fn u32(&mut self, x: u32) -> &mut Self {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }
    fn u64(&mut self, x: u64) -> &mut Self {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
    fn done(mut self) -> Vec<u8> {
        let len = (self.0.len() - 9) as u64;
        self.0[1..9].copy_from_slice(&len.to_le_bytes());
        self.0
    }
}

struct SchemaRec {
    id: u16,
    name: String,
    data: String,
}

struct ChannelRec {
    id: u16,
    schema_id: u16,
    topic: String,
}

struct ChunkIndexRec {
    start: u64,
    end: u64,
    offset: u64,
    length: u64,
    index_offsets: Vec<(u16, u64)>,
    index_length: u64,
    size: u64,
}

fn schema_record(s: &SchemaRec) -> Vec<u8> {
    let mut r = Rec::new(OP_SCHEMA);
    r.u16(s.id).str(&s.name).str("jsonschema").u32(s.data.len() as u32).bytes(s.data.as_bytes());
    r.done()
}

fn channel_record(c: &ChannelRec) -> Vec<u8> {
    let mut r = Rec::new(OP_CHANNEL);
    r.u16(c.id).u16(c.schema_id).str(&c.topic).str("json").u32(0);
    r.done()
}

/// Each message's type (`None`: raw) and JSON.
type MessageParts<'d> = Part<Option<&'d Struct>, ()>;

/// A piece of the chunk being made, in order: bytes of `McapExport::chunk` (record headers, schema and channel
/// records, and messages carried over from a batch before), or a message's JSON in a part of the batch being
/// written (not copied until the chunk is written out).
#[derive(Clone)]
enum Piece {
    Own(Range<usize>),
    Json(usize, Range<usize>),
}

/// Exports to one MCAP file.
pub struct McapExport<'d> {
    path: PathBuf,
    out: Sink,
    pos: u64,
    decoder: &'d Decoder,
    schemas: Vec<SchemaRec>,
    /// Fingerprint of the decoded type (None: raw) -> schema id.
    schema_ids: HashMap<Option<u64>, u16>,
    channels: Vec<ChannelRec>,
    /// LCM channel -> (schema id, MCAP channel id).
    channel_ids: HashMap<String, Vec<(u16, u16)>>,
    /// The chunk being made: its pieces, the bytes of its own pieces, and its length.
    pieces: Vec<Piece>,
    chunk: Vec<u8>,
    chunk_len: usize,
    chunk_start: u64,
    chunk_end: u64,
    chunk_messages: u64,
    chunk_index: BTreeMap<u16, Vec<(u64, u64)>>,
    chunk_indexes: Vec<ChunkIndexRec>,
    channel_counts: BTreeMap<u16, u64>,
    first_time: Option<u64>,
    last_time: u64,
    /// Batches of events on their way through the workers: each written here while the next is transcoded.
    pipeline: Pipeline<'d, Option<&'d Struct>, ()>,
    work: Work<'d, Option<&'d Struct>, ()>,
    stats: ExportStats,
}

impl<'d> McapExport<'d> {
    /// Creates `path` (overwriting it) and writes the MCAP header.
    pub fn create(path: &Path, decoder: &'d Decoder) -> Result<McapExport<'d>, ExportError> {
        let mut out = Sink::new();
        out.create(path)?;
        let mut x = McapExport {
            path: path.to_path_buf(),
            out,
            pos: 0,
            decoder,
            schemas: Vec::new(),
            schema_ids: HashMap::new(),
            channels: Vec::new(),
            channel_ids: HashMap::new(),
            pieces: Vec::new(),
            chunk: Vec::with_capacity(CHUNK_TARGET + (1 << 16)),
            chunk_len: 0,
            chunk_start: u64::MAX,
            chunk_end: 0,
            chunk_messages: 0,
            chunk_index: BTreeMap::new(),
            chunk_indexes: Vec::new(),
            channel_counts: BTreeMap::new(),
            first_time: None,
            last_time: 0,
            pipeline: Pipeline::default(),
            work: Arc::new(move |ev: &EventRef<'_>, out: &mut Vec<u8>, _: &mut ()| message_json(decoder, ev.data, out)),
            stats: ExportStats::default(),
        };
        x.put(MAGIC)?;
        let mut h = Rec::new(OP_HEADER);
        h.str("").str(concat!("nerve ", env!("CARGO_PKG_VERSION")));
        x.put(&h.done())?;
        Ok(x)
    }

    fn put(&mut self, b: &[u8]) -> Result<(), ExportError> {
        self.out.write(0, b)?;
        self.pos += b.len() as u64;
        Ok(())
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

    /// Writes a transcoded batch's messages, in order. The chunk's messages are copied once, from the parts into
    /// the file's buffer, when the chunk is written out; those of a chunk not full yet are kept (copied) here.
    fn write_batch(&mut self, batch: &Batch, parts: &mut [MessageParts<'d>]) -> Result<(), ExportError> {
        for p in 0..parts.len() {
            let results = std::mem::take(&mut parts[p].results);
            let mut start = 0;
            for (i, &(key, end)) in parts[p].events.clone().zip(&results) {
                self.message(&batch.get(i), key, Piece::Json(p, start..end), parts)?;
                start = end;
            }
            parts[p].results = results;
            parts[p].results.clear();
        }
        for k in 0..self.pieces.len() {
            if let Piece::Json(p, r) = &self.pieces[k] {
                let at = self.chunk.len();
                self.chunk.extend_from_slice(&parts[*p].out[r.clone()]);
                self.pieces[k] = Piece::Own(at..self.chunk.len());
            }
        }
        Ok(())
    }

    /// Appends `bytes` to the chunk (to its last piece if that ends where they go).
    fn own(&mut self, bytes: &[u8]) {
        let at = self.chunk.len();
        self.chunk.extend_from_slice(bytes);
        self.chunk_len += bytes.len();
        match self.pieces.last_mut() {
            Some(Piece::Own(r)) if r.end == at => r.end = self.chunk.len(),
            _ => self.pieces.push(Piece::Own(at..self.chunk.len())),
        }
    }

    /// A piece's bytes.
    fn piece<'a>(&'a self, piece: &Piece, parts: &'a [MessageParts<'d>]) -> &'a [u8] {
        match piece {
            Piece::Own(r) => &self.chunk[r.clone()],
            Piece::Json(p, r) => &parts[*p].out[r.clone()],
        }
    }

    /// Writes one message record (its JSON `json`, in `parts`), and the schema and channel records it is the first
    /// of, into the chunk.
    fn message(
        &mut self,
        ev: &EventRef<'_>,
        key: Option<&'d Struct>,
        json: Piece,
        parts: &[MessageParts<'d>],
    ) -> Result<(), ExportError> {
        let json_len = self.piece(&json, parts).len();
        let time = (ev.utime.max(0) as u64).saturating_mul(1000);
        if key.is_some() {
            self.stats.decoded += 1;
        } else {
            self.stats.undecoded += 1;
        }
        let schema_id = match self.schema_ids.get(&key.map(|s| s.fingerprint)) {
            Some(&id) => id,
            None => {
                let id = u16::try_from(self.schemas.len() + 1).map_err(|_| self.too_many("types"))?;
                let (name, data) = match key {
                    Some(st) => {
                        let reg = self.decoder.registry().expect("decoded");
                        (st.name.full(), json_schema(reg.schema(), st))
                    }
                    None => (RAW_SCHEMA_NAME.to_owned(), raw_schema()),
                };
                let rec = SchemaRec { id, name, data };
                self.own(&schema_record(&rec));
                self.schemas.push(rec);
                self.schema_ids.insert(key.map(|s| s.fingerprint), id);
                id
            }
        };
        let channel = ev.channel();
        let existing = self
            .channel_ids
            .get(channel.as_ref())
            .and_then(|v| v.iter().find(|(s, _)| *s == schema_id))
            .map(|&(_, c)| c);
        let channel_id = match existing {
            Some(c) => c,
            None => {
                let id = u16::try_from(self.channels.len() + 1).map_err(|_| self.too_many("channels"))?;
                let rec = ChannelRec { id, schema_id, topic: channel.clone().into_owned() };
                self.own(&channel_record(&rec));
                self.channels.push(rec);
                self.channel_ids.entry(channel.into_owned()).or_default().push((schema_id, id));
                id
            }
        };
        let offset = self.chunk_len as u64;
        let mut head = [0u8; 31];
        head[0] = OP_MESSAGE;
        head[1..9].copy_from_slice(&((22 + json_len) as u64).to_le_bytes());
        head[9..11].copy_from_slice(&channel_id.to_le_bytes());
        head[11..15].copy_from_slice(&(ev.number as u32).to_le_bytes());
        head[15..23].copy_from_slice(&time.to_le_bytes());
        head[23..31].copy_from_slice(&time.to_le_bytes());
        self.own(&head);
        self.pieces.push(json);
        self.chunk_len += json_len;
        self.chunk_index.entry(channel_id).or_default().push((time, offset));
        self.chunk_start = self.chunk_start.min(time);
        self.chunk_end = self.chunk_end.max(time);
        self.chunk_messages += 1;
        *self.channel_counts.entry(channel_id).or_default() += 1;
        self.first_time = Some(self.first_time.map_or(time, |t| t.min(time)));
        self.last_time = self.last_time.max(time);
        self.stats.messages += 1;
        if self.chunk_len >= CHUNK_TARGET {
            self.flush_chunk(parts)?;
        }
        Ok(())
    }

    fn too_many(&self, what: &str) -> ExportError {
        ExportError::io(
            &self.path,
            "writing",
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("more than 65535 {what}: MCAP ids are 16 bits"),
            ),
        )
    }

    /// Writes out the chunk (its JSON pieces in `parts`) and its message indexes.
    fn flush_chunk(&mut self, parts: &[MessageParts<'d>]) -> Result<(), ExportError> {
        if self.chunk_len == 0 {
            return Ok(());
        }
        let (start, end) = if self.chunk_messages == 0 { (0, 0) } else { (self.chunk_start, self.chunk_end) };
        let pieces = std::mem::take(&mut self.pieces);
        let mut hasher = crc32fast::Hasher::new();
        for piece in &pieces {
            hasher.update(self.piece(piece, parts));
        }
        let crc = hasher.finalize();
        let chunk_len = self.chunk_len;
        let chunk_offset = self.pos;
        let mut head = Rec::new(OP_CHUNK);
        head.u64(start).u64(end).u64(chunk_len as u64).u32(crc).str("").u64(chunk_len as u64);
        let mut head = head.0;
        let total = (head.len() - 9 + chunk_len) as u64;
        head[1..9].copy_from_slice(&total.to_le_bytes());
        self.put(&head)?;
        let chunk_size = chunk_len as u64;
        for piece in &pieces {
            match piece {
                Piece::Own(r) => self.out.write(0, &self.chunk[r.clone()])?,
                Piece::Json(p, r) => self.out.write(0, &parts[*p].out[r.clone()])?,
            }
        }
        self.pos += chunk_size;
        let chunk_length = self.pos - chunk_offset;
        let index_start = self.pos;
        let mut index_offsets = Vec::new();
        let entries = std::mem::take(&mut self.chunk_index);
        for (channel, list) in &entries {
            index_offsets.push((*channel, self.pos));
            let mut r = Rec::new(OP_MESSAGE_INDEX);
            r.u16(*channel).u32((list.len() * 16) as u32);
            for (t, o) in list {
                r.u64(*t).u64(*o);
            }
            self.put(&r.done())?;
        }
        self.chunk_indexes.push(ChunkIndexRec {
            start,
            end,
            offset: chunk_offset,
            length: chunk_length,
            index_offsets,
            index_length: self.pos - index_start,
            size: chunk_size,
        });
        self.chunk.clear();
        self.chunk_len = 0;
        self.pieces = pieces;
        self.pieces.clear();
        self.chunk_start = u64::MAX;
        self.chunk_end = 0;
        self.chunk_messages = 0;
        Ok(())
    }

    /// Writes the last messages and chunk, the summary and the footer, and closes the file.
    fn finish(mut self, workers: &Workers<'d>) -> Result<ExportStats, ExportError> {
        self.pipeline.flush(workers, || self.work.clone());
        while let Some(done) = self.pipeline.next_done(workers) {
            self.write_done(done)?;
        }
        self.flush_chunk(&[])?;
        let mut end = Rec::new(OP_DATA_END);
        end.u32(0);
        self.put(&end.done())?;
        let summary_start = self.pos;
        let mut summary = Vec::new();
        let mut offsets = Vec::new();
        let mut group = |summary: &mut Vec<u8>, op: u8, records: Vec<Vec<u8>>| {
            if records.is_empty() {
                return;
            }
            let start = summary.len();
            for r in records {
                summary.extend_from_slice(&r);
            }
            offsets.push((op, summary_start + start as u64, (summary.len() - start) as u64));
        };
        group(&mut summary, OP_SCHEMA, self.schemas.iter().map(schema_record).collect());
        group(&mut summary, OP_CHANNEL, self.channels.iter().map(channel_record).collect());
        let mut st = Rec::new(OP_STATISTICS);
        st.u64(self.stats.messages)
            .u16(self.schemas.len() as u16)
            .u32(self.channels.len() as u32)
            .u32(0)
            .u32(0)
            .u32(self.chunk_indexes.len() as u32)
            .u64(self.first_time.unwrap_or(0))
            .u64(self.last_time)
            .u32((self.channel_counts.len() * 10) as u32);
        for (c, n) in &self.channel_counts {
            st.u16(*c).u64(*n);
        }
        group(&mut summary, OP_STATISTICS, vec![st.done()]);
        let chunk_records = self
            .chunk_indexes
            .iter()
            .map(|c| {
                let mut r = Rec::new(OP_CHUNK_INDEX);
                r.u64(c.start).u64(c.end).u64(c.offset).u64(c.length).u32((c.index_offsets.len() * 10) as u32);
                for (ch, off) in &c.index_offsets {
                    r.u16(*ch).u64(*off);
                }
                r.u64(c.index_length).str("").u64(c.size).u64(c.size);
                r.done()
            })
            .collect();
        group(&mut summary, OP_CHUNK_INDEX, chunk_records);
        let summary_offset_start = summary_start + summary.len() as u64;
        for (op, start, len) in offsets {
            let mut r = Rec::new(OP_SUMMARY_OFFSET);
            r.0.push(op);
            r.u64(start).u64(len);
            summary.extend_from_slice(&r.done());
        }
        let mut footer = Rec::new(OP_FOOTER);
        footer.u64(summary_start).u64(summary_offset_start);
        let footer_head = footer.0.clone();
        let mut crc = crc32fast::Hasher::new();
        crc.update(&summary);
        let mut head = footer_head;
        head[1..9].copy_from_slice(&20u64.to_le_bytes());
        crc.update(&head);
        footer.u32(crc.finalize());
        self.put(&summary)?;
        self.put(&footer.done())?;
        self.put(MAGIC)?;
        self.stats.bytes_out = self.pos;
        self.out.finish()?;
        Ok(self.stats)
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
