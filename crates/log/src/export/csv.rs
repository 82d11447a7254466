//! [`CsvExport`]: one CSV file per channel (per channel and type when a channel carries several), with a column per
//! leaf field, named by its path: `pose.position[0]`, `ranges[17]`, `m[1][2]`. The first two columns are
//! `recv_utime` and `event`. A byte array is one column of hex. Messages no type decodes go to
//! `CHANNEL.undecoded.csv`-style files with `fingerprint`, `data_hex` and `error` columns.
//!
//! Variable-length arrays get as many columns as the longest seen, so the header needs every message first:
//! [`CsvExport::run`] takes the log twice. The first pass merges each message's shape (in batches on the workers,
//! each thread into shapes of its own, joined at the end; a big message of a table already seen on the caller's
//! thread, which costs less than copying it into a batch), the second writes rows (cells beyond a shorter array are
//! empty; its first batch is read while the workers finish the first pass). Both passes read the messages' bytes
//! through the transcoder ([`nerve_types::dynamic::CsvShape`]); no value tree is built.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nerve_types::dynamic::{CsvShape, JsonForm};
use nerve_types::Struct;

use super::batch::{Batch, Done, Part, Pipeline, Work, Workers};
use super::sink::Sink;
use super::{fingerprint, push_fingerprint, push_hex, push_int, Decoder, ExportError, ExportStats, Feed, OUT_CHUNK};
use crate::EventRef;

/// A CSV field, quoted when it needs to be (RFC 4180).
fn push_text(out: &mut Vec<u8>, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        out.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

/// Messages of at least this many bytes are walked in the first pass on the caller's thread once their table is
/// known (see [`CsvExport::scan_inline`]).
pub(crate) const INLINE_SCAN_BYTES: usize = 64 << 10;

/// Which file a message goes to: its channel and its type (`None`: undecoded).
type Key = (String, Option<u64>);

struct Table {
    type_name: Option<String>,
    /// Its path and its number in the exporter's [`Sink`].
    file: Option<(PathBuf, usize)>,
    /// Rows not written yet (written in pieces of about [`OUT_CHUNK`]).
    buf: Vec<u8>,
}

impl Table {
    fn new(type_name: Option<String>) -> Table {
        Table { type_name, file: None, buf: Vec::new() }
    }

    /// Hands the rows to the sink (the buffer comes back empty).
    fn write_out(&mut self, sink: &mut Sink) -> Result<(), ExportError> {
        if let Some((_, i)) = self.file {
            sink.send(i, &mut self.buf)?;
        }
        Ok(())
    }
}

/// Exports to CSV files in a directory.
pub struct CsvExport<'d> {
    dir: PathBuf,
    decoder: &'d Decoder,
    tables: HashMap<Key, Table>,
    /// Each table's columns (apart from the rest of it, and shared: each batch's rows are made from them on other
    /// threads while this one writes the rows before; a table opened late adds its columns to a copy).
    shapes: Arc<HashMap<Key, CsvShape>>,
    /// The files, written on their own thread.
    sink: Sink,
    /// Keys in first-seen order (file names are given in this order).
    order: Vec<Key>,
    /// The second pass's batches on their way through the workers: each batch's rows added to their files here
    /// while the next is transcoded.
    rows: Pipeline<'d, Row, TableRows>,
    /// The first pass's batches; the parts' states are the columns learnt so far on the workers.
    scan: Pipeline<'d, Option<&'d Struct>, HashMap<Key, CsvShape>>,
    /// The columns learnt on this thread in the first pass (big messages of tables already seen: see
    /// [`CsvExport::scan_inline`]).
    inline_shapes: HashMap<Key, CsvShape>,
    /// Whether the first pass has ended and the files are open.
    opened: bool,
    stats: ExportStats,
}

/// A part's decoded rows, per table, each table's in event order: the caller's thread hands each buffer to the
/// table's file whole (no copy of the rows on that thread).
type TableRows = HashMap<Key, Vec<u8>>;

/// What the parallel pass made of an event.
enum Row {
    /// A row of its channel's and type's table, in the part's rows of that table.
    Decoded,
    /// Left to the caller's thread: a raw row, or a table `scan` did not see.
    Serial,
}

impl<'d> CsvExport<'d> {
    /// Exports into `dir` (created if missing).
    pub fn create(dir: &Path, decoder: &'d Decoder) -> Result<CsvExport<'d>, ExportError> {
        std::fs::create_dir_all(dir).map_err(|e| ExportError::io(dir, "creating directory", e))?;
        Ok(CsvExport {
            dir: dir.to_path_buf(),
            decoder,
            tables: HashMap::new(),
            shapes: Arc::default(),
            sink: Sink::new(),
            order: Vec::new(),
            rows: Pipeline::default(),
            scan: Pipeline::default(),
            inline_shapes: HashMap::new(),
            opened: false,
            stats: ExportStats::default(),
        })
    }

    /// Exports the events `events` hands over (in order, to the function it is given: the caller's loop over its
    /// log), which it is called for twice: the first pass learns every table's columns, the second writes the rows
    /// (the same events must come both times). Then flushes and closes every file. The messages are walked and
    /// the rows made on worker threads, a batch at a time, while the caller's thread reads the next batch and
    /// writes out the one before.
    pub fn run<E: From<ExportError>>(mut self, mut events: impl FnMut(&mut Feed<'_>) -> Result<(), E>) -> Result<ExportStats, E> {
        Workers::scope(|w| {
            events(&mut |ev| {
                self.scan(ev, w);
                Ok(())
            })?;
            // The last columns are learnt on the workers while this thread reads the second pass's first batch.
            let decoder = self.decoder;
            self.scan.flush(w, || scan_work(decoder));
            events(&mut |ev| self.event(ev, w))?;
            Ok(self.finish(w)?)
        })
    }

    /// First pass: learns the columns `ev` needs (with the batch it joins, or here: see [`CsvExport::scan_inline`]).
    fn scan(&mut self, ev: &EventRef<'_>, workers: &Workers<'d>) {
        if self.scan_inline(ev) {
            return;
        }
        let decoder = self.decoder;
        let work = || scan_work(decoder);
        if self.scan.push(ev, workers, work) {
            while let Some(done) = self.scan.ready(workers) {
                self.scanned(done);
            }
        }
    }

    /// Learns the columns of a big message of a table the first pass has seen already on this thread, instead of
    /// copying it into a batch for the workers (for an image, the copy cost far more than the walk): such a
    /// message adds no table, so the order of the files is as the workers would have made it. `false` (nothing
    /// learnt) for a small message, a table not seen yet, or a message that does not decode, which goes to the
    /// workers as any other (to give its channel's raw table its place in the order).
    fn scan_inline(&mut self, ev: &EventRef<'_>) -> bool {
        if ev.data.len() < INLINE_SCAN_BYTES {
            return false;
        }
        let (Some(st), Some(t)) = (self.decoder.candidate(ev.data), self.decoder.transcoder()) else { return false };
        let key = (ev.channel().into_owned(), Some(st.fingerprint));
        if !self.tables.contains_key(&key) {
            return false;
        }
        // (A message that does not decode changes no shape, and an empty one adds no columns when joined.)
        t.csv_merge(ev.data, self.inline_shapes.entry(key).or_default()).is_ok()
    }

    /// Gives the tables of a batch walked on the workers their places in the file order, in the order of the events
    /// (as [`CsvExport::scan_now`] one at a time would).
    fn scanned(&mut self, mut done: Done<Option<&'d Struct>, HashMap<Key, CsvShape>>) {
        for part in &mut done.parts {
            for (i, (st, _)) in part.events.clone().zip(part.results.drain(..)) {
                let key = (done.batch.get(i).channel().into_owned(), st.map(|s| s.fingerprint));
                if !self.tables.contains_key(&key) {
                    self.order.push(key.clone());
                    self.tables.insert(key.clone(), Table::new(st.map(|s| s.name.full())));
                    Arc::make_mut(&mut self.shapes).insert(key, CsvShape::new());
                }
            }
        }
        self.scan.recycle(done);
    }

    /// Ends the first pass: the threads' columns joined into each table's.
    fn end_scan(&mut self, workers: &Workers<'d>) {
        let decoder = self.decoder;
        let work = || scan_work(decoder);
        self.scan.flush(workers, work);
        while let Some(done) = self.scan.next_done(workers) {
            self.scanned(done);
        }
        let shapes = Arc::make_mut(&mut self.shapes);
        let inline = self.inline_shapes.drain();
        for (key, shape) in self.scan.parts_mut().flat_map(|part| part.state.drain()).chain(inline) {
            shapes.get_mut(&key).expect("a table for every shape learnt").absorb(shape);
        }
    }

    /// Learns the columns `ev` needs, now (a table `scan` did not see).
    fn scan_now(&mut self, ev: &EventRef<'_>) {
        let channel = ev.channel();
        // (A copy if a batch on the workers still has them: it leaves this table's rows to this thread.)
        let shapes = Arc::make_mut(&mut self.shapes);
        if let (Some(st), Some(t)) = (self.decoder.candidate(ev.data), self.decoder.transcoder()) {
            let key = (channel.clone().into_owned(), Some(st.fingerprint));
            match shapes.get_mut(&key) {
                Some(shape) => {
                    if t.csv_merge(ev.data, shape).is_ok() {
                        return;
                    }
                }
                None => {
                    let mut shape = CsvShape::new();
                    if t.csv_merge(ev.data, &mut shape).is_ok() {
                        self.order.push(key.clone());
                        self.tables.insert(key.clone(), Table::new(Some(st.name.full())));
                        shapes.insert(key, shape);
                        return;
                    }
                }
            }
        }
        let key = (channel.into_owned(), None);
        if !self.tables.contains_key(&key) {
            self.order.push(key.clone());
            self.tables.insert(key.clone(), Table::new(None));
            shapes.insert(key, CsvShape::new());
        }
    }

    fn open_files(&mut self, workers: &Workers<'d>) -> Result<(), ExportError> {
        self.end_scan(workers);
        self.opened = true;
        // The first pass's batches are the second's.
        self.rows.take_batches(&mut self.scan);
        let mut per_channel: HashMap<&str, usize> = HashMap::new();
        for (ch, _) in &self.order {
            *per_channel.entry(ch).or_default() += 1;
        }
        let mut taken: HashMap<String, usize> = HashMap::new();
        let mut names = Vec::new();
        for key in &self.order {
            let t = &self.tables[key];
            let mut stem = sanitize(&key.0);
            if per_channel[key.0.as_str()] > 1 {
                stem.push('.');
                stem.push_str(&sanitize(t.type_name.as_deref().unwrap_or("undecoded")));
            }
            let n = taken.entry(stem.clone()).or_default();
            *n += 1;
            let name = if *n == 1 { format!("{stem}.csv") } else { format!("{stem}~{n}.csv") };
            names.push((key.clone(), self.dir.join(name)));
        }
        for (key, path) in names {
            self.open_table(&key, path)?;
        }
        Ok(())
    }

    fn open_table(&mut self, key: &Key, path: PathBuf) -> Result<(), ExportError> {
        let t = self.tables.get_mut(key).expect("known key");
        let file = self.sink.create(&path)?;
        let mut header = String::from("recv_utime,event");
        if key.1.is_none() {
            header.push_str(",fingerprint,data_hex,error");
        } else {
            let mut line = Vec::new();
            for c in self.shapes[key].columns() {
                line.push(b',');
                push_text(&mut line, &c);
            }
            header.push_str(&String::from_utf8_lossy(&line));
        }
        header.push('\n');
        t.buf.extend_from_slice(header.as_bytes());
        self.stats.bytes_out += header.len() as u64;
        t.file = Some((path, file));
        Ok(())
    }

    /// Opens the file of a table `scan` did not see (its columns come from this message alone).
    fn open_late(&mut self, ev: &EventRef<'_>, key: &Key) -> Result<(), ExportError> {
        self.scan_now(ev);
        let stem = format!("{}.{}", sanitize(&key.0), key.1.map_or("undecoded".to_owned(), |f| format!("{f:016x}")));
        let path = self.dir.join(format!("{stem}.late.csv"));
        self.open_table(key, path)
    }

    /// Second pass: writes `ev`'s row (with the batch it joins, once the batch after it has been handed over). The
    /// first batch is filled before the first pass ends, and handed over once the files are open.
    fn event(&mut self, ev: &EventRef<'_>, workers: &Workers<'d>) -> Result<(), ExportError> {
        if !self.opened {
            if self.rows.fill(ev) {
                self.open_files(workers)?;
                let (decoder, shapes) = (self.decoder, &self.shapes);
                self.rows.flush(workers, || row_work(decoder, shapes));
            }
            return Ok(());
        }
        let (decoder, shapes) = (self.decoder, &self.shapes);
        let work = || row_work(decoder, shapes);
        if self.rows.push(ev, workers, work) {
            while let Some(done) = self.rows.ready(workers) {
                self.write_done(done)?;
            }
        }
        Ok(())
    }

    fn write_done(&mut self, mut done: Done<Row, TableRows>) -> Result<(), ExportError> {
        let r = self.write_batch(&done.batch, &mut done.parts);
        self.rows.recycle(done);
        r
    }

    /// Adds a transcoded batch's rows to their files in order (those left to this thread made here). In a batch, a
    /// table's rows are either all decoded ones (from the parts' buffers) or all left to this thread (a table opened
    /// late, which the batch's columns did not have, a raw table), so each table keeps its order.
    fn write_batch(&mut self, batch: &Batch, parts: &mut [Part<Row, TableRows>]) -> Result<(), ExportError> {
        for part in parts {
            for (i, (r, _)) in part.events.clone().zip(part.results.drain(..)) {
                match r {
                    Row::Decoded => {
                        self.stats.messages += 1;
                        self.stats.decoded += 1;
                    }
                    Row::Serial => self.event_serial(&batch.get(i))?,
                }
            }
            let mut rows = Rows { tables: &mut self.tables, sink: &mut self.sink, stats: &mut self.stats };
            rows.send(&mut part.state)?;
        }
        Ok(())
    }

    /// Writes `ev`'s row on this thread.
    fn event_serial(&mut self, ev: &EventRef<'_>) -> Result<(), ExportError> {
        let channel = ev.channel().into_owned();
        let mut why = None;
        if let (Some(st), Some(t)) = (self.decoder.candidate(ev.data), self.decoder.transcoder()) {
            let key = (channel.clone(), Some(st.fingerprint));
            if !self.tables.contains_key(&key) {
                match t.validate(ev.data) {
                    Ok(_) => self.open_late(ev, &key)?,
                    Err(e) => why = Some(e.to_string()),
                }
            }
            if let Some(table) = self.tables.get_mut(&key) {
                let start = table.buf.len();
                push_int(&mut table.buf, ev.utime);
                table.buf.push(b',');
                push_int(&mut table.buf, ev.number);
                match t.csv_row(ev.data, &self.shapes[&key], &mut table.buf) {
                    Ok(_) => {
                        table.buf.push(b'\n');
                        self.stats.decoded += 1;
                        return self.written(&key, start);
                    }
                    Err(e) => {
                        table.buf.truncate(start);
                        why = Some(e.to_string());
                    }
                }
            }
        }
        let why = match why {
            Some(w) => w,
            None => match self.decoder.json(ev.data, JsonForm::Value, &mut Vec::new()) {
                Err(w) => w,
                // Decodes, yet its fingerprint names no one type: cannot be (the registry answers both).
                Ok(st) => format!("fingerprint 0x{:016x} is not one type's", st.fingerprint),
            },
        };
        let key = (channel, None);
        if !self.tables.contains_key(&key) {
            self.open_late(ev, &key)?;
        }
        let table = self.tables.get_mut(&key).expect("known key");
        let l = &mut table.buf;
        let start = l.len();
        push_int(l, ev.utime);
        l.push(b',');
        push_int(l, ev.number);
        l.push(b',');
        if let Some(f) = fingerprint(ev.data) {
            push_fingerprint(l, f);
        }
        l.push(b',');
        push_hex(l, ev.data);
        l.push(b',');
        push_text(l, &why);
        l.push(b'\n');
        self.stats.undecoded += 1;
        self.written(&key, start)
    }

    /// Counts a row written from `start` of `key`'s buffer, and writes the buffer out when it is big.
    fn written(&mut self, key: &Key, start: usize) -> Result<(), ExportError> {
        Rows { tables: &mut self.tables, sink: &mut self.sink, stats: &mut self.stats }.written(key, start)
    }

    /// Writes what is left, flushes and closes every file.
    fn finish(mut self, workers: &Workers<'d>) -> Result<ExportStats, ExportError> {
        if !self.opened {
            self.open_files(workers)?;
        }
        let (decoder, shapes) = (self.decoder, &self.shapes);
        let work = || row_work(decoder, shapes);
        self.rows.flush(workers, work);
        while let Some(done) = self.rows.next_done(workers) {
            self.write_done(done)?;
        }
        for t in self.tables.values_mut() {
            t.write_out(&mut self.sink)?;
        }
        self.sink.finish()?;
        Ok(self.stats)
    }
}

/// The first pass's work: each thread merges the columns into shapes of its own, joined at the end.
fn scan_work<'d>(decoder: &'d Decoder) -> Work<'d, Option<&'d Struct>, HashMap<Key, CsvShape>> {
    Arc::new(move |ev: &EventRef<'_>, _: &mut Vec<u8>, shapes: &mut HashMap<Key, CsvShape>| scan_one(decoder, ev, shapes))
}

/// The second pass's work: a row for each decoded message of a table the scan made (the columns as they are when
/// the batch is handed over).
fn row_work<'d>(decoder: &'d Decoder, shapes: &Arc<HashMap<Key, CsvShape>>) -> Work<'d, Row, TableRows> {
    let shapes = shapes.clone();
    Arc::new(move |ev: &EventRef<'_>, _: &mut Vec<u8>, rows: &mut TableRows| row(decoder, &shapes, ev, rows))
}

/// Merges `ev`'s columns into its table's shape in `shapes` (a thread's own), if its message decodes with a type;
/// the type, or `None` for a message that goes to its channel's raw table.
fn scan_one<'d>(decoder: &'d Decoder, ev: &EventRef<'_>, shapes: &mut HashMap<Key, CsvShape>) -> Option<&'d Struct> {
    let (Some(st), Some(t)) = (decoder.candidate(ev.data), decoder.transcoder()) else { return None };
    let key = (ev.channel().into_owned(), Some(st.fingerprint));
    match shapes.get_mut(&key) {
        Some(shape) => t.csv_merge(ev.data, shape).is_ok().then_some(st),
        None => {
            // Kept only if the message decodes: a table's shape is never learnt from nothing.
            let mut shape = CsvShape::new();
            let ok = t.csv_merge(ev.data, &mut shape).is_ok();
            if ok {
                shapes.insert(key, shape);
            }
            ok.then_some(st)
        }
    }
}

/// What adding decoded rows to their files takes (the exporter less the columns, which other threads read then).
struct Rows<'a> {
    tables: &'a mut HashMap<Key, Table>,
    sink: &'a mut Sink,
    stats: &'a mut ExportStats,
}

impl Rows<'_> {
    /// Hands a part's rows to their tables' files (each buffer whole, after any rows the table holds already).
    fn send(&mut self, rows: &mut TableRows) -> Result<(), ExportError> {
        for (key, buf) in rows.iter_mut().filter(|(_, b)| !b.is_empty()) {
            let table = self.tables.get_mut(key).expect("the rows were made from this table");
            self.stats.bytes_out += buf.len() as u64;
            let Some((_, file)) = table.file else {
                table.buf.extend_from_slice(buf);
                buf.clear();
                continue;
            };
            if !table.buf.is_empty() {
                table.write_out(self.sink)?;
            }
            // (The part keeps its buffer when the file is written with O_DIRECT: the rows are copied into the
            // file's staging block; otherwise the buffer goes, and the part gets an empty one the writer is done with.)
            self.sink.send(file, buf)?;
        }
        Ok(())
    }

    /// Counts a row written from `start` of `key`'s buffer, and writes the buffer out when it is big.
    fn written(&mut self, key: &Key, start: usize) -> Result<(), ExportError> {
        let table = self.tables.get_mut(key).expect("known key");
        self.stats.messages += 1;
        self.stats.bytes_out += (table.buf.len() - start) as u64;
        if table.buf.len() >= OUT_CHUNK {
            table.write_out(self.sink)?;
        }
        Ok(())
    }
}

/// A decoded message's row (`recv_utime,event,cells...`) for a table the scan made, appended to that table's rows;
/// anything else is left to the caller's thread.
fn row(decoder: &Decoder, shapes: &HashMap<Key, CsvShape>, ev: &EventRef<'_>, rows: &mut TableRows) -> Row {
    let (Some(st), Some(t)) = (decoder.candidate(ev.data), decoder.transcoder()) else { return Row::Serial };
    let key = (ev.channel().into_owned(), Some(st.fingerprint));
    let Some(shape) = shapes.get(&key) else { return Row::Serial };
    let out = rows.entry(key).or_default();
    let start = out.len();
    push_int(out, ev.utime);
    out.push(b',');
    push_int(out, ev.number);
    match t.csv_row(ev.data, shape, out) {
        Ok(_) => {
            out.push(b'\n');
            Row::Decoded
        }
        Err(_) => {
            out.truncate(start);
            Row::Serial
        }
    }
}

/// The CSV exporter's row writing from value trees, as it was before the transcoder: the reference the
/// transcoder's cells are held to in tests.
#[cfg(test)]
pub(crate) mod tree {
    use std::sync::Arc;

    use nerve_types::dynamic::Value;

    use super::super::json::push_float_text;

    /// The columns a type's messages have needed so far.
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum Shape {
        Leaf,
        Struct(Vec<(Arc<str>, Shape)>),
        Array(Vec<Shape>),
    }

    impl Shape {
        pub(crate) fn merge(&mut self, v: &Value) {
            match v {
                Value::Struct(s) => {
                    if !matches!(self, Shape::Struct(_)) {
                        *self = Shape::Struct(s.fields.iter().map(|(n, _)| (n.clone(), Shape::Leaf)).collect());
                    }
                    let Shape::Struct(fields) = self else { unreachable!() };
                    for ((_, shape), (_, fv)) in fields.iter_mut().zip(&s.fields) {
                        shape.merge(fv);
                    }
                }
                Value::Array(items) => {
                    if !matches!(self, Shape::Array(_)) {
                        *self = Shape::Array(Vec::new());
                    }
                    let Shape::Array(elems) = self else { unreachable!() };
                    if elems.len() < items.len() {
                        elems.resize(items.len(), Shape::Leaf);
                    }
                    for (shape, item) in elems.iter_mut().zip(items) {
                        shape.merge(item);
                    }
                }
                _ => {}
            }
        }

        pub(crate) fn columns(&self, prefix: &str, out: &mut Vec<String>) {
            match self {
                Shape::Leaf => out.push(prefix.to_owned()),
                Shape::Struct(fields) => {
                    for (name, shape) in fields {
                        let p = if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") };
                        shape.columns(&p, out);
                    }
                }
                Shape::Array(elems) => {
                    for (i, shape) in elems.iter().enumerate() {
                        shape.columns(&format!("{prefix}[{i}]"), out);
                    }
                }
            }
        }

        /// Appends `v`'s cells in column order (`None`: the value has no such element; empty cells).
        pub(crate) fn row(&self, v: Option<&Value>, out: &mut String) {
            match self {
                Shape::Leaf => {
                    out.push(',');
                    if let Some(v) = v {
                        push_cell(out, v);
                    }
                }
                Shape::Struct(fields) => {
                    let s = v.and_then(Value::as_struct);
                    for (i, (_, shape)) in fields.iter().enumerate() {
                        shape.row(s.and_then(|s| s.fields.get(i)).map(|(_, fv)| fv), out);
                    }
                }
                Shape::Array(elems) => {
                    let items = match v {
                        Some(Value::Array(items)) => Some(items),
                        _ => None,
                    };
                    for (i, shape) in elems.iter().enumerate() {
                        shape.row(items.and_then(|it| it.get(i)), out);
                    }
                }
            }
        }
    }

    fn push_cell(out: &mut String, v: &Value) {
        use std::fmt::Write;
        let _ = match v {
            Value::Int8(x) => write!(out, "{x}"),
            Value::Int16(x) => write!(out, "{x}"),
            Value::Int32(x) => write!(out, "{x}"),
            Value::Int64(x) => write!(out, "{x}"),
            Value::Byte(x) => write!(out, "{x}"),
            Value::Enum(e) => write!(out, "{}", e.value),
            Value::Boolean(b) => write!(out, "{}", if *b { "true" } else { "false" }),
            Value::Float(x) if !x.is_finite() => write!(out, "{x}"),
            Value::Double(x) if !x.is_finite() => write!(out, "{x}"),
            Value::Float(x) => {
                push_float_text(out, f64::from(*x), *x, *x);
                Ok(())
            }
            Value::Double(x) => {
                push_float_text(out, *x, *x, *x);
                Ok(())
            }
            Value::String(s) => {
                push_text(out, s);
                Ok(())
            }
            Value::Bytes(b) => {
                push_hex(out, b);
                Ok(())
            }
            other => {
                push_text(out, &other.to_json());
                Ok(())
            }
        };
    }

    /// A CSV field, quoted when it needs to be (RFC 4180).
    fn push_text(out: &mut String, s: &str) {
        if s.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&s.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(s);
        }
    }


    /// Lowercase hex.
    fn push_hex(out: &mut String, data: &[u8]) {
        for b in data {
            out.push_str(&format!("{b:02x}"));
        }
    }
}

/// A channel or type name as a file name: `/`, `\`, control characters and a leading `.` become `_`.
fn sanitize(name: &str) -> String {
    let mut s: String =
        name.chars().map(|c| if c == '/' || c == '\\' || c.is_control() || c == ':' { '_' } else { c }).collect();
    if s.starts_with('.') || s.is_empty() {
        s.insert(0, '_');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::tree::Shape;
    use super::*;
    use nerve_types::dynamic::{StructValue, Value};

    fn sv(fields: Vec<(&str, Value)>) -> Value {
        Value::Struct(StructValue { ty: "t".into(), fields: fields.into_iter().map(|(n, v)| (n.into(), v)).collect() })
    }

    #[test]
    fn shapes_grow_to_the_longest_array_and_name_columns_by_path() {
        let a = sv(vec![
            ("n", Value::Int32(2)),
            ("r", Value::Array(vec![Value::Float(1.0), Value::Float(2.5)])),
            ("p", sv(vec![("x", Value::Double(-1.0)), ("name", Value::String("a,b".into()))])),
        ]);
        let b = sv(vec![
            ("n", Value::Int32(3)),
            ("r", Value::Array(vec![Value::Float(1.0), Value::Float(2.0), Value::Float(f32::NAN)])),
            ("p", sv(vec![("x", Value::Double(1e300)), ("name", Value::String("q\"".into()))])),
        ]);
        let mut shape = Shape::Leaf;
        shape.merge(&a);
        shape.merge(&b);
        let mut cols = Vec::new();
        shape.columns("", &mut cols);
        assert_eq!(cols, ["n", "r[0]", "r[1]", "r[2]", "p.x", "p.name"]);
        let mut row = String::new();
        shape.row(Some(&a), &mut row);
        assert_eq!(row, ",2,1.0,2.5,,-1.0,\"a,b\"");
        row.clear();
        shape.row(Some(&b), &mut row);
        assert_eq!(row, ",3,1.0,2.0,NaN,1e300,\"q\"\"\"");
    }

    #[test]
    fn file_names_are_safe() {
        assert_eq!(sanitize("POSE/est"), "POSE_est");
        assert_eq!(sanitize(".hidden"), "_.hidden");
        assert_eq!(sanitize("a\nb"), "a_b");
    }
}
