//! MCAP recordings of LCM traffic, through Foxglove's own `mcap` crate: [`McapWriter`] records events as they
//! arrive (what `nerve log run.mcap` writes), [`SplitMcap`] spreads them over several files, and [`McapReader`]
//! reads them back as [`EventRef`]s, as [`crate::LogReader`] reads an LCM log, so that playing, exporting and the
//! bus's `file://` provider take either; [`AnyLog`] opens whichever a file is.
//!
//! A recording is self-describing. Each message is the LCM bytes as received (message encoding `lcm`), on an MCAP
//! channel per (LCM channel, type); the channel's schema (encoding `lcm`) is the `.lcm` definition of its type,
//! with every type it uses, so a reader needs no `.lcm` files to decode it (a message whose fingerprint no type
//! given to the recorder has is on a channel without a schema). An event's receive time in microseconds is the
//! message's log and publish time in nanoseconds, and its event number its sequence number, so what is played
//! back is what was recorded, byte for byte and microsecond for microsecond.
//!
//! Reading trusts nothing in the file: no record (nor a chunk, compressed or not) longer than [`MAX_RECORD`] is
//! buffered, whatever a length field or a chunk's uncompressed size claims, nor is a string or map that claims
//! more than its record holds, chunks are checked against their CRCs before any of their messages is handed out,
//! and a file that is cut short or malformed is an error ([`LogError::Mcap`]) after the messages before the damage.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mcap::records::{op, MessageHeader, Record};
use mcap::sans_io::linear_reader::{LinearReadEvent, LinearReader, LinearReaderOptions};

use crate::error::LogError;
use crate::event::EventRef;
use crate::reader::{Damage, DamageTotals, LogReader};

mod chunk_bounds;
use chunk_bounds::ChunkBounds;

/// The message and schema encoding of a Nerve recording: LCM bytes, and `.lcm` text.
pub const LCM_ENCODING: &str = "lcm";

/// The metadata record in which an export for Foxglove (JSON messages) keeps the `.lcm` definition of each type
/// it decoded, by full type name.
pub const LCM_METADATA: &str = "nerve.lcm";

/// The longest record a reader buffers (a message, or a chunk's decompressed records as it reads them); a file
/// claiming more is refused.
pub const MAX_RECORD: usize = 256 << 20;

/// The MCAP magic that starts (and ends) every file.
pub const MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";

/// How chunks are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Zstandard (what Foxglove's tools write by default).
    #[default]
    Zstd,
    /// LZ4 frames: faster, larger.
    Lz4,
    /// Not compressed.
    None,
}

impl FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Compression, String> {
        match s {
            "zstd" => Ok(Compression::Zstd),
            "lz4" => Ok(Compression::Lz4),
            "none" => Ok(Compression::None),
            other => Err(format!("unknown compression '{other}' (zstd, lz4 or none)")),
        }
    }
}

impl Compression {
    /// The name MCAP gives it (a chunk's `compression` field), `none` for none.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
            Compression::None => "none",
        }
    }
}

/// The `mcap` writer's options for Nerve's files: chunks of about a mebibyte compressed as asked, message and
/// chunk indexes, statistics and summary offsets. An error (`Unsupported`) for a compression this build lacks.
pub fn write_options(compression: Compression) -> io::Result<mcap::WriteOptions> {
    Ok(mcap::WriteOptions::new()
        .compression(chunk_compression(compression)?)
        .library(concat!("nerve ", env!("CARGO_PKG_VERSION")))
        .chunk_size(Some(mcap::WriteOptions::DEFAULT_CHUNK_SIZE)))
}

// The one place the feature `mcap-compression` is looked at: without it the `mcap` crate has no zstd and no lz4,
// writing with either is refused here, and reading a chunk compressed with either fails in `mcap_error`'s terms.
#[cfg(feature = "mcap-compression")]
fn chunk_compression(compression: Compression) -> io::Result<Option<mcap::Compression>> {
    Ok(match compression {
        Compression::Zstd => Some(mcap::Compression::Zstd),
        Compression::Lz4 => Some(mcap::Compression::Lz4),
        Compression::None => None,
    })
}

#[cfg(not(feature = "mcap-compression"))]
fn chunk_compression(compression: Compression) -> io::Result<Option<mcap::Compression>> {
    match compression {
        Compression::None => Ok(None),
        other => Err(io::Error::new(io::ErrorKind::Unsupported, not_built(other.name()) + " (compression none works)")),
    }
}

/// Why a build cannot write or read chunks compressed with `name` (zstd or lz4).
fn not_built(name: &str) -> String {
    format!(
        "this build has no {name} compression: nerve-log's feature `mcap-compression` was off when it was built \
         (zstd and lz4 are C libraries, left out where no C compiler for the target was at hand)"
    )
}

/// A type's definition as a recording carries it: its full name and its `.lcm` text (with the types it uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDef {
    /// The full name, e.g. `exlcm.example_t`.
    pub name: String,
    /// The `.lcm` text.
    pub lcm: String,
}

/// Finds the definition of the type with a fingerprint (`None`: unknown, recorded without a schema).
pub type TypeDefs = Arc<dyn Fn(u64) -> Option<TypeDef> + Send + Sync>;

/// A file the `mcap` writer writes through a buffer, with its length known (for splitting).
struct Counted {
    file: BufWriter<File>,
    pos: u64,
    len: Arc<AtomicU64>,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.pos += n as u64;
        self.len.fetch_max(self.pos, Ordering::Relaxed);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Seek for Counted {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = self.file.seek(to)?;
        Ok(self.pos)
    }
}

/// Records events into one MCAP file (see the module docs).
pub struct McapWriter {
    out: Option<mcap::Writer<Counted>>,
    path: PathBuf,
    defs: TypeDefs,
    /// Fingerprint -> schema id (0: no schema).
    schemas: HashMap<u64, u16>,
    /// (channel, schema id) -> MCAP channel id.
    channels: HashMap<(Vec<u8>, u16), u16>,
    next_number: u32,
    len: Arc<AtomicU64>,
    /// Message bytes written since the file last grew: what the open chunk holds, before compression.
    pending: u64,
    len_seen: u64,
}

impl McapWriter {
    /// Creates `path` (and missing directories); an existing file is an error unless `overwrite`.
    pub fn create(
        path: impl AsRef<Path>,
        overwrite: bool,
        compression: Compression,
        defs: TypeDefs,
    ) -> Result<McapWriter, LogError> {
        let path = path.as_ref();
        // Before the file exists, so that a compression this build lacks leaves nothing behind.
        let opts = write_options(compression).map_err(|e| LogError::io(Some(path), "creating", e))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| LogError::io(Some(dir), "creating directory", e))?;
        }
        let mut open = OpenOptions::new();
        open.write(true).read(true);
        if overwrite {
            open.create(true).truncate(true);
        } else {
            open.create_new(true);
        }
        let file = open.open(path).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => LogError::Exists { path: path.to_path_buf() },
            _ => LogError::io(Some(path), "creating", e),
        })?;
        let len = Arc::new(AtomicU64::new(0));
        let counted = Counted { file: BufWriter::with_capacity(1 << 20, file), pos: 0, len: len.clone() };
        let out = opts.create(counted).map_err(|e| mcap_error(Some(path), e))?;
        Ok(McapWriter {
            out: Some(out),
            path: path.to_path_buf(),
            defs,
            schemas: HashMap::new(),
            channels: HashMap::new(),
            next_number: 0,
            len,
            pending: 0,
            len_seen: 0,
        })
    }

    fn out(&mut self) -> &mut mcap::Writer<Counted> {
        self.out.as_mut().expect("open until finished")
    }

    /// Writes one event (numbered after the one before, from 0).
    pub fn write_event(&mut self, utime: i64, channel: &str, data: &[u8]) -> Result<(), LogError> {
        if channel.is_empty() {
            return Err(LogError::ChannelLength { channel: String::new(), len: 0 });
        }
        let schema_id = match data.get(..8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes"))) {
            None => 0,
            Some(fp) => match self.schemas.get(&fp) {
                Some(&id) => id,
                None => {
                    let id = match (self.defs)(fp) {
                        Some(def) => self
                            .out()
                            .add_schema(&def.name, LCM_ENCODING, def.lcm.as_bytes())
                            .map_err(|e| mcap_error(Some(&self.path), e))?,
                        None => 0,
                    };
                    self.schemas.insert(fp, id);
                    id
                }
            },
        };
        let key = (channel.as_bytes().to_vec(), schema_id);
        let channel_id = match self.channels.get(&key) {
            Some(&id) => id,
            None => {
                let id = self
                    .out()
                    .add_channel(schema_id, channel, LCM_ENCODING, &BTreeMap::new())
                    .map_err(|e| mcap_error(Some(&self.path), e))?;
                self.channels.insert(key, id);
                id
            }
        };
        let time = (utime.max(0) as u64).saturating_mul(1000);
        let header = MessageHeader { channel_id, sequence: self.next_number, log_time: time, publish_time: time };
        let path = self.path.clone();
        self.out().write_to_known_channel(&header, data).map_err(|e| mcap_error(Some(&path), e))?;
        self.next_number = self.next_number.wrapping_add(1);
        let len = self.bytes_written();
        if len != self.len_seen {
            self.len_seen = len;
            self.pending = 0;
        }
        self.pending += data.len() as u64 + channel.len() as u64;
        Ok(())
    }

    /// Message bytes in the open chunk, before compression (an upper bound on what it adds to the file).
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Bytes in the file so far: what the writer has handed over (a chunk is handed over once it is full or
    /// flushed).
    pub fn bytes_written(&self) -> u64 {
        self.len.load(Ordering::Relaxed)
    }

    /// Ends the open chunk and writes it out, so that what was recorded so far is in the file.
    pub fn flush(&mut self) -> Result<(), LogError> {
        let path = self.path.clone();
        self.out().flush().map_err(|e| mcap_error(Some(&path), e))?;
        self.pending = 0;
        self.len_seen = self.bytes_written();
        Ok(())
    }

    /// Writes the summary and the footer, and has the kernel put the file on disk.
    pub fn finish(mut self) -> Result<PathBuf, LogError> {
        let mut out = self.out.take().expect("open until finished");
        out.finish().map_err(|e| mcap_error(Some(&self.path), e))?;
        let mut counted = out.into_inner();
        counted.file.flush().map_err(|e| LogError::io(Some(&self.path), "writing", e))?;
        counted.file.get_ref().sync_data().map_err(|e| LogError::io(Some(&self.path), "syncing", e))?;
        Ok(self.path)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `base` with `.NN` before its extension: `run.mcap` -> `run.00.mcap` (so that the name still says MCAP).
pub fn numbered_mcap_name(base: &Path, n: u32) -> PathBuf {
    let stem = base.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match base.extension() {
        Some(ext) => format!("{stem}.{n:02}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{n:02}"),
    };
    base.with_file_name(name)
}

/// A recording that may be split into several files, each a complete MCAP file: `run.00.mcap`, `run.01.mcap`,
/// ... (the first names that do not exist yet), a new one started once the current one passes a size or has
/// been open for a time.
pub struct SplitMcap {
    base: PathBuf,
    split_bytes: Option<u64>,
    split_utime: Option<i64>,
    compression: Compression,
    defs: TypeDefs,
    next_index: u32,
    current: Option<McapWriter>,
    /// The first event's time in the current file.
    opened_at: Option<i64>,
    files: Vec<PathBuf>,
}

impl SplitMcap {
    /// Creates the first file. With neither a split size nor a split time it is `base` itself, and an existing
    /// `base` is an error unless `overwrite`.
    pub fn create(
        base: impl AsRef<Path>,
        split_bytes: Option<u64>,
        split_micros: Option<i64>,
        overwrite: bool,
        compression: Compression,
        defs: TypeDefs,
    ) -> Result<SplitMcap, LogError> {
        let base = base.as_ref().to_path_buf();
        let mut s = SplitMcap {
            base,
            split_bytes,
            split_utime: split_micros,
            compression,
            defs,
            next_index: 0,
            current: None,
            opened_at: None,
            files: Vec::new(),
        };
        let w = if s.splits() {
            s.open_numbered()?
        } else {
            McapWriter::create(&s.base, overwrite, compression, s.defs.clone())?
        };
        s.files.push(w.path().to_path_buf());
        s.current = Some(w);
        Ok(s)
    }

    fn splits(&self) -> bool {
        self.split_bytes.is_some() || self.split_utime.is_some()
    }

    fn open_numbered(&mut self) -> Result<McapWriter, LogError> {
        loop {
            let path = numbered_mcap_name(&self.base, self.next_index);
            self.next_index = self.next_index.saturating_add(1);
            match McapWriter::create(&path, false, self.compression, self.defs.clone()) {
                Ok(w) => return Ok(w),
                Err(LogError::Exists { .. }) if self.next_index < u32::MAX => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes one event, first starting the next file if this event is past the split time, and after it if the
    /// file has passed the split size.
    pub fn write_event(&mut self, utime: i64, channel: &str, data: &[u8]) -> Result<(), LogError> {
        if let (Some(span), Some(at)) = (self.split_utime, self.opened_at) {
            if utime.saturating_sub(at) >= span {
                self.rotate()?;
            }
        }
        self.opened_at.get_or_insert(utime);
        let w = self.current.as_mut().expect("open");
        w.write_event(utime, channel, data)?;
        if let Some(limit) = self.split_bytes {
            // The open chunk may take the file past the size once compressed: write it out to know.
            if w.bytes_written().saturating_add(w.pending()) > limit {
                w.flush()?;
            }
            if w.bytes_written() > limit {
                self.rotate()?;
            }
        }
        Ok(())
    }

    /// Finishes the current file and starts the next one (only when splitting).
    pub fn rotate(&mut self) -> Result<(), LogError> {
        if !self.splits() {
            return Ok(());
        }
        let next = self.open_numbered()?;
        if let Some(done) = self.current.replace(next) {
            done.finish()?;
        }
        self.opened_at = None;
        self.files.push(self.current.as_ref().expect("open").path().to_path_buf());
        Ok(())
    }

    /// Writes out what was recorded so far (the open chunk).
    pub fn flush(&mut self) -> Result<(), LogError> {
        self.current.as_mut().expect("open").flush()
    }

    /// Finishes the current file (summary, footer) and syncs it.
    pub fn finish(&mut self) -> Result<(), LogError> {
        match self.current.take() {
            Some(w) => w.finish().map(|_| ()),
            None => Ok(()),
        }
    }

    /// Every file written so far, in order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }
}

/// A schema as a recording's reader found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaInfo {
    /// The schema's name (a type's full name).
    pub name: String,
    /// Its encoding (`lcm` in a recording, `jsonschema` in an export for Foxglove).
    pub encoding: String,
    /// Its text.
    pub data: Vec<u8>,
}

/// A metadata record: its name and its entries.
pub type MetadataRecord = (String, BTreeMap<String, String>);

struct ChannelInfo {
    topic: Vec<u8>,
    encoding: String,
}

/// Reads the messages of an MCAP recording in file order (see the module docs).
pub struct McapReader {
    file: Box<dyn Read + Send>,
    path: Option<PathBuf>,
    len: u64,
    read: u64,
    reader: LinearReader,
    bounds: ChunkBounds,
    schemas: HashMap<u16, SchemaInfo>,
    channels: HashMap<u16, ChannelInfo>,
    metadata: Vec<MetadataRecord>,
    data: Vec<u8>,
    channel: u16,
    events: u64,
    done: bool,
}

fn linear_reader() -> LinearReader {
    LinearReader::new_with_options(
        // Each chunk is checked against its CRC before a message of it is handed out (which holds the chunk,
        // within the record limit, while it is read).
        LinearReaderOptions::default().with_record_length_limit(MAX_RECORD).with_prevalidate_chunk_crcs(true),
    )
}

impl McapReader {
    /// Opens an MCAP file.
    pub fn open(path: impl AsRef<Path>) -> Result<McapReader, LogError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| LogError::io(Some(path), "opening", e))?;
        let mut r = McapReader::new(file).map_err(|e| LogError::io(Some(path), "reading", e))?;
        r.path = Some(path.to_path_buf());
        Ok(r)
    }

    /// Reads MCAP from `file`, from its start.
    pub fn new(mut file: File) -> io::Result<McapReader> {
        let len = file.seek(SeekFrom::End(0))?;
        file.seek(SeekFrom::Start(0))?;
        Ok(McapReader::from_reader(file, len))
    }

    /// Reads MCAP from any byte stream (`len`: its length, for progress).
    pub fn from_reader(src: impl Read + Send + 'static, len: u64) -> McapReader {
        McapReader {
            file: Box::new(src),
            path: None,
            len,
            read: 0,
            reader: linear_reader(),
            bounds: ChunkBounds::new(),
            schemas: HashMap::new(),
            channels: HashMap::new(),
            metadata: Vec::new(),
            data: Vec::new(),
            channel: 0,
            events: 0,
            done: false,
        }
    }

    /// The file's length in bytes (when it was opened).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How far reading has got, in bytes from the start of the file.
    pub fn offset(&self) -> u64 {
        self.read
    }

    /// Messages read so far.
    pub fn events_read(&self) -> u64 {
        self.events
    }

    /// The schemas read so far, by id.
    pub fn schemas(&self) -> &HashMap<u16, SchemaInfo> {
        &self.schemas
    }

    /// The metadata records read so far (name, entries).
    pub fn metadata(&self) -> &[MetadataRecord] {
        &self.metadata
    }

    /// The next message, or `None` at the end of the file; an error for a file that is cut short or malformed,
    /// or whose messages are not LCM bytes (an export for Foxglove holds JSON).
    pub fn next_event(&mut self) -> Result<Option<EventRef<'_>>, LogError> {
        if self.done {
            return Ok(None);
        }
        loop {
            let event = match self.reader.next_event() {
                None => {
                    self.done = true;
                    return Ok(None);
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Err(mcap_error(self.path.as_deref(), e));
                }
                Some(Ok(ev)) => ev,
            };
            match event {
                LinearReadEvent::ReadRequest(need) => {
                    let fed = feed(&mut self.reader, &mut self.bounds, &mut self.file, need, self.path.as_deref());
                    match fed {
                        Ok(n) => self.read += n as u64,
                        Err(e) => {
                            self.done = true;
                            return Err(e);
                        }
                    }
                }
                LinearReadEvent::Record { opcode, data } => {
                    if !matches!(opcode, op::SCHEMA | op::CHANNEL | op::MESSAGE | op::METADATA) {
                        continue;
                    }
                    let record = match parse_record(self.path.as_deref(), opcode, data) {
                        Ok(r) => r,
                        Err(e) => {
                            self.done = true;
                            return Err(e);
                        }
                    };
                    match record {
                        Record::Schema { header, data } => {
                            let info =
                                SchemaInfo { name: header.name, encoding: header.encoding, data: data.into_owned() };
                            self.schemas.insert(header.id, info);
                        }
                        Record::Channel(c) => {
                            self.channels.insert(
                                c.id,
                                ChannelInfo { topic: c.topic.into_bytes(), encoding: c.message_encoding },
                            );
                        }
                        Record::Metadata(m) => self.metadata.push((m.name, m.metadata)),
                        Record::Message { header, data } => {
                            let Some(ch) = self.channels.get(&header.channel_id) else {
                                self.done = true;
                                return Err(self.malformed(format!(
                                    "a message on channel id {} before any channel record with that id",
                                    header.channel_id
                                )));
                            };
                            if ch.encoding != LCM_ENCODING {
                                self.done = true;
                                let why = format!(
                                    "channel '{}' holds '{}' messages, not LCM bytes (an export for viewing, not a \
                                     recording: only MCAP with LCM messages plays back as LCM)",
                                    String::from_utf8_lossy(&ch.topic),
                                    ch.encoding
                                );
                                return Err(self.malformed(why));
                            }
                            self.data.clear();
                            self.data.extend_from_slice(&data);
                            self.channel = header.channel_id;
                            self.events += 1;
                            let ch = &self.channels[&self.channel];
                            return Ok(Some(EventRef {
                                number: i64::from(header.sequence),
                                utime: (header.log_time / 1000) as i64,
                                channel_bytes: &ch.topic,
                                data: &self.data,
                                offset: self.read,
                            }));
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    fn malformed(&self, why: String) -> LogError {
        LogError::Mcap { path: self.path.clone(), reason: why }
    }
}

/// What a type lookup needs from an MCAP file: its schemas, in id order, and its metadata records. It reads the
/// file through (messages skipped), with the limits of [`McapReader`].
pub fn read_schemas(path: &Path) -> Result<(Vec<SchemaInfo>, Vec<MetadataRecord>), LogError> {
    let mut file = File::open(path).map_err(|e| LogError::io(Some(path), "opening", e))?;
    let mut reader = linear_reader();
    let mut bounds = ChunkBounds::new();
    let mut schemas = BTreeMap::new();
    let mut metadata = Vec::new();
    while let Some(event) = reader.next_event() {
        match event.map_err(|e| mcap_error(Some(path), e))? {
            LinearReadEvent::ReadRequest(need) => {
                feed(&mut reader, &mut bounds, &mut file, need, Some(path))?;
            }
            LinearReadEvent::Record { opcode, data } if opcode == op::SCHEMA || opcode == op::METADATA => {
                match parse_record(Some(path), opcode, data)? {
                    Record::Schema { header, data } => {
                        let info = SchemaInfo { name: header.name, encoding: header.encoding, data: data.into_owned() };
                        schemas.insert(header.id, info);
                    }
                    Record::Metadata(m) => metadata.push((m.name, m.metadata)),
                    _ => {}
                }
            }
            LinearReadEvent::Record { .. } => {}
        }
    }
    Ok((schemas.into_values().collect(), metadata))
}

/// `mcap::parse_record`, after checking that every length the record declares fits in it. The crate reserves a
/// string's declared length before reading it (binrw's `count`), so without the check a ten-byte metadata record
/// claiming a 4 GB name asks for 4 GB, whatever the record limit.
fn parse_record<'a>(path: Option<&Path>, opcode: u8, data: &'a [u8]) -> Result<Record<'a>, LogError> {
    check_declared_lengths(opcode, data)
        .map_err(|reason| LogError::Mcap { path: path.map(Path::to_path_buf), reason })?;
    mcap::parse_record(opcode, data).map_err(|e| mcap_error(path, e))
}

/// Walks the length-prefixed fields of the records the reader parses (schema, channel, metadata; a message has
/// none) as the `mcap` crate will, and says which one claims more bytes than the record has left.
fn check_declared_lengths(opcode: u8, data: &[u8]) -> Result<(), String> {
    struct Fields<'a> {
        record: &'static str,
        data: &'a [u8],
        at: usize,
    }
    impl Fields<'_> {
        fn fixed(&mut self, n: usize) -> Result<(), String> {
            self.prefixed_by(n, "ids")
        }
        fn prefixed_by(&mut self, n: usize, what: &str) -> Result<(), String> {
            let left = self.data.len() - self.at;
            if n > left {
                return Err(format!("a {} record claims {n} bytes for its {what} with {left} left in it", self.record));
            }
            self.at += n;
            Ok(())
        }
        fn length(&mut self, what: &str) -> Result<usize, String> {
            let at = self.at;
            self.prefixed_by(4, what)?;
            Ok(u32::from_le_bytes(self.data[at..at + 4].try_into().expect("four bytes")) as usize)
        }
        fn string(&mut self, what: &str) -> Result<(), String> {
            let n = self.length(what)?;
            self.prefixed_by(n, what)
        }
        fn string_map(&mut self, what: &str) -> Result<(), String> {
            let n = self.length(what)?;
            let (start, end) = (self.at, self.at.saturating_add(n));
            self.prefixed_by(n, what)?;
            // The crate reads key and value pairs until it has read the map's bytes.
            self.at = start;
            while self.at < end {
                self.string(what)?;
                self.string(what)?;
            }
            Ok(())
        }
    }
    let record = match opcode {
        op::SCHEMA => "schema",
        op::CHANNEL => "channel",
        op::METADATA => "metadata",
        _ => return Ok(()),
    };
    let mut f = Fields { record, data, at: 0 };
    match opcode {
        op::SCHEMA => {
            f.fixed(2)?;
            f.string("name")?;
            f.string("encoding")?;
            f.string("data")
        }
        op::CHANNEL => {
            f.fixed(4)?;
            f.string("topic")?;
            f.string("message encoding")?;
            f.string_map("metadata")
        }
        _ => {
            f.string("name")?;
            f.string_map("metadata")
        }
    }
}

/// Reads up to `need` bytes of `file` into `reader`, which sees them only once `bounds` has passed them (see
/// [`chunk_bounds`]); how many were read.
fn feed(
    reader: &mut LinearReader,
    bounds: &mut ChunkBounds,
    file: &mut dyn Read,
    need: usize,
    path: Option<&Path>,
) -> Result<usize, LogError> {
    let buf = reader.insert(need);
    let n = read_retrying(file, buf).map_err(|e| LogError::io(path, "reading", e))?;
    bounds.check(&buf[..n]).map_err(|reason| LogError::Mcap { path: path.map(Path::to_path_buf), reason })?;
    reader.notify_read(n);
    Ok(n)
}

fn read_retrying(file: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// An LCM log or an MCAP recording, whichever a file is (by its first bytes), read event by event.
pub enum AnyLog {
    /// An LCM event log.
    Lcm(LogReader<File>),
    /// An MCAP recording (boxed: its reader's state is large).
    Mcap(Box<McapReader>),
}

impl AnyLog {
    /// Opens `path`: MCAP if it starts with MCAP's magic, an LCM log otherwise.
    pub fn open(path: impl AsRef<Path>) -> Result<AnyLog, LogError> {
        let path = path.as_ref();
        if is_mcap(path)? {
            McapReader::open(path).map(|r| AnyLog::Mcap(Box::new(r)))
        } else {
            LogReader::open(path).map(AnyLog::Lcm)
        }
    }

    /// The next event (see [`LogReader::next_event`] and [`McapReader::next_event`]).
    pub fn next_event(&mut self) -> Result<Option<EventRef<'_>>, LogError> {
        match self {
            AnyLog::Lcm(r) => r.next_event(),
            AnyLog::Mcap(r) => r.next_event(),
        }
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            AnyLog::Lcm(r) => r.len(),
            AnyLog::Mcap(r) => r.len(),
        }
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How far reading has got, in bytes.
    pub fn offset(&self) -> u64 {
        match self {
            AnyLog::Lcm(r) => r.offset(),
            AnyLog::Mcap(r) => r.offset(),
        }
    }

    /// The damaged regions of an LCM log (an MCAP file's damage is an error instead).
    pub fn damage(&self) -> &[Damage] {
        match self {
            AnyLog::Lcm(r) => r.damage(),
            AnyLog::Mcap(_) => &[],
        }
    }

    /// Totals of an LCM log's damage.
    pub fn damage_totals(&self) -> DamageTotals {
        match self {
            AnyLog::Lcm(r) => r.damage_totals(),
            AnyLog::Mcap(_) => DamageTotals::default(),
        }
    }

    /// Whether the file turned out to be neither an LCM log nor MCAP.
    pub fn is_not_a_log(&self) -> bool {
        match self {
            AnyLog::Lcm(r) => r.is_not_a_log(),
            AnyLog::Mcap(_) => false,
        }
    }
}

/// Whether `path` starts with MCAP's magic.
pub fn is_mcap(path: &Path) -> Result<bool, LogError> {
    let mut f = File::open(path).map_err(|e| LogError::io(Some(path), "opening", e))?;
    let mut head = [0u8; 8];
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(LogError::io(Some(path), "reading", e)),
        }
    }
    Ok(got == head.len() && &head == MAGIC)
}

/// Whether a path names an MCAP file by its extension (`.mcap`, any case).
pub fn has_mcap_extension(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mcap"))
}

fn mcap_error(path: Option<&Path>, e: mcap::McapError) -> LogError {
    match e {
        mcap::McapError::Io(e) => LogError::io(path, "reading or writing", e),
        // Only a build without the feature `mcap-compression` lacks these two.
        mcap::McapError::UnsupportedCompression(name) if name == "zstd" || name == "lz4" => LogError::Mcap {
            path: path.map(Path::to_path_buf),
            reason: format!("a chunk is compressed with {name}, and {}", not_built(&name)),
        },
        other => LogError::Mcap { path: path.map(Path::to_path_buf), reason: other.to_string() },
    }
}
