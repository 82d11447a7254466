//! [`CsvExport`]: one CSV file per channel (per channel and type when a channel carries several), with a column per
//! leaf field, named by its path: `pose.position[0]`, `ranges[17]`, `m[1][2]`. The first two columns are
//! `recv_utime` and `event`. A byte array is one column of hex. Messages no type decodes go to
//! `CHANNEL.undecoded.csv`-style files with `fingerprint`, `data_hex` and `error` columns.
//!
//! Variable-length arrays get as many columns as the longest seen, and the header names every column, so a table's
//! header depends on all its messages. [`CsvExport::run`] reads the log once when it can: a table's file is made
//! when its first message comes, with that message's columns, and its rows are made in batches on the workers with
//! the columns as they are; each worker also merges the columns of the messages it writes
//! ([`nerve_types::dynamic::CsvShape`]), and those are joined when the batch is written out. A table whose columns
//! grow after its header is written (a later message has a longer array) gets no more rows in that pass, only its
//! columns learnt; a second pass over the log writes such tables again, each into a new file that replaces the first
//! when the export ends. A log whose tables keep their columns (sensors of fixed sizes) is read once, not twice as
//! it was when the first pass only learnt the columns. No value tree is built: rows and columns are read straight
//! from the messages' bytes by the transcoder.
//!
//! A file's name depends on the other tables (a channel with two types gets a file per type, named with the type),
//! so files are made under the names the tables seen so far give, each name unused before, and renamed when the
//! export ends if later tables changed them.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nerve_types::dynamic::{CsvShape, JsonForm};

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

/// Which file a message goes to: its channel and its type (`None`: undecoded).
type Key = (String, Option<u64>);

struct Table {
    type_name: Option<String>,
    /// Its file as made (its path, and its number in the exporter's [`Sink`]).
    file: (PathBuf, usize),
    /// The file the first pass made, when the second writes the table again (removed at the end).
    first_file: Option<PathBuf>,
    /// Rows not written yet (written in pieces of about [`OUT_CHUNK`]).
    buf: Vec<u8>,
    /// Rows and bytes (the header's included) in its file.
    rows: u64,
    bytes: u64,
    /// Its columns grew after its header was written: written again by the second pass.
    again: bool,
}

impl Table {
    /// Hands the rows to the sink (the buffer comes back empty).
    fn write_out(&mut self, sink: &mut Sink) -> Result<(), ExportError> {
        sink.send(self.file.1, &mut self.buf)
    }
}

/// A table's columns as the workers make rows with them.
#[derive(Clone)]
struct Columns {
    shape: CsvShape,
    /// Whether rows are made in this pass (not for a table whose columns grew after its header, in the first pass;
    /// only for such tables in the second).
    rows: bool,
}

/// A part's work: its rows per table (each handed to the table's file whole, with their count), and the columns of
/// the messages it has seen, per table, with the tables whose columns grew in the batch (first pass only).
#[derive(Default)]
struct PartState {
    rows: HashMap<Key, (Vec<u8>, u64)>,
    shapes: HashMap<Key, CsvShape>,
    grown: Vec<Key>,
}

/// What a worker made of an event.
enum Row {
    /// A row of its table, in the part's rows of that table.
    Decoded,
    /// Nothing: its table gets no rows in this pass.
    Skipped,
    /// Left to the caller's thread: a message that does not decode (a raw row).
    Serial,
}

/// Exports to CSV files in a directory.
pub struct CsvExport<'d> {
    dir: PathBuf,
    decoder: &'d Decoder,
    tables: HashMap<Key, Table>,
    /// Each table's columns (shared: each batch's rows are made from them on other threads while this one writes the
    /// rows before; a change makes a copy if a batch still has them).
    columns: Arc<HashMap<Key, Columns>>,
    /// The files, written on their own thread.
    sink: Sink,
    /// Keys in first-seen order (file names are given in this order).
    order: Vec<Key>,
    /// The keys of `tables` by type, so that the caller's thread can tell a message of a table it has from a first
    /// one without making a `Key` (an allocation) for every event.
    known: HashMap<Option<u64>, HashSet<String>>,
    /// File names given so far (a name is never given twice, even once its table has been renamed in thought).
    names: HashSet<PathBuf>,
    /// The batches on their way through the workers: each batch's rows added to their files here while the next is
    /// transcoded.
    rows: Pipeline<'d, Row, PartState>,
    /// Whether this is the second pass (only the tables written again), and the events the first pass was handed:
    /// the second stops there (the log may have grown since).
    second: bool,
    first_events: u64,
    second_events: u64,
}

impl<'d> CsvExport<'d> {
    /// Exports into `dir` (created if missing).
    pub fn create(dir: &Path, decoder: &'d Decoder) -> Result<CsvExport<'d>, ExportError> {
        std::fs::create_dir_all(dir).map_err(|e| ExportError::io(dir, "creating directory", e))?;
        Ok(CsvExport {
            dir: dir.to_path_buf(),
            decoder,
            tables: HashMap::new(),
            columns: Arc::default(),
            sink: Sink::new(),
            order: Vec::new(),
            known: HashMap::new(),
            names: HashSet::new(),
            rows: Pipeline::default(),
            second: false,
            first_events: 0,
            second_events: 0,
        })
    }

    /// Exports the events `events` hands over (in order, to the function it is given: the caller's loop over its
    /// log). It is called once, and a second time (the same events must come) only if a table's columns grew after
    /// its header was written (see the module docs). Then flushes, closes and names every file. The rows are made
    /// on worker threads, a batch at a time, while the caller's thread reads the next batch and writes out the one
    /// before.
    pub fn run<E: From<ExportError>>(
        mut self,
        mut events: impl FnMut(&mut Feed<'_>) -> Result<(), E>,
    ) -> Result<ExportStats, E> {
        Workers::scope(|w| {
            events(&mut |ev| self.event(ev, w))?;
            self.end_pass(w)?;
            if self.tables.values().any(|t| t.again) {
                self.start_second_pass()?;
                events(&mut |ev| self.event(ev, w))?;
                self.end_pass(w)?;
            }
            Ok(self.finish()?)
        })
    }

    /// Adds `ev` to the batch (its table made first if it is new), and writes out the batches that are done.
    fn event(&mut self, ev: &EventRef<'_>, workers: &Workers<'d>) -> Result<(), ExportError> {
        if self.second {
            // Only the tables written again, and only as far as the first pass went.
            self.second_events += 1;
            if self.second_events > self.first_events || !self.tables.get(&self.key_of(ev)).is_some_and(|t| t.again) {
                return Ok(());
            }
        } else {
            self.first_events += 1;
            self.learn(ev)?;
        }
        let (decoder, columns, learning) = (self.decoder, &self.columns, !self.second);
        if self.rows.push(ev, workers, || row_work(decoder, columns, learning)) {
            while let Some(done) = self.rows.ready(workers) {
                self.write_done(done)?;
            }
        }
        Ok(())
    }

    /// The table `ev` would go to if it decodes: its channel and the type its fingerprint names (if one does).
    fn key_of(&self, ev: &EventRef<'_>) -> Key {
        (ev.channel().into_owned(), self.decoder.candidate(ev.data).map(|st| st.fingerprint))
    }

    /// Makes `ev`'s table if this is its first message (its columns this message's), so that the workers have
    /// columns for every table whose messages they see. (A message that does not decode makes its channel's raw
    /// table, and its type's table waits for one that does.)
    fn learn(&mut self, ev: &EventRef<'_>) -> Result<(), ExportError> {
        let fingerprint = self.decoder.candidate(ev.data).map(|st| st.fingerprint);
        if self.known.get(&fingerprint).is_some_and(|channels| channels.contains(ev.channel().as_ref())) {
            return Ok(());
        }
        let key = self.key_of(ev);
        if let (Some(st), Some(t), Some(_)) = (self.decoder.candidate(ev.data), self.decoder.transcoder(), key.1) {
            let mut shape = CsvShape::new();
            if t.csv_merge(ev.data, &mut shape).is_ok() {
                return self.make_table(key, Some(st.name.full()), shape);
            }
        }
        let raw = (key.0, None);
        if self.tables.contains_key(&raw) {
            return Ok(());
        }
        self.make_table(raw, None, CsvShape::new())
    }

    /// Makes a table: its file, under the name the tables so far give it, with its header.
    fn make_table(&mut self, key: Key, type_name: Option<String>, shape: CsvShape) -> Result<(), ExportError> {
        self.order.push(key.clone());
        let mut path = self.file_names().pop().expect("a name for the table just added").1;
        let mut n = 1;
        while self.names.contains(&path) {
            n += 1;
            // (Every name ends in `.csv`: the stem is the name without it.)
            path = self.dir.join(format!("{}~~{n}.csv", path.file_stem().unwrap_or_default().to_string_lossy()));
        }
        self.names.insert(path.clone());
        let file = self.sink.create(&path)?;
        let mut table =
            Table { type_name, file: (path, file), first_file: None, buf: Vec::new(), rows: 0, bytes: 0, again: false };
        let header = header(&key, &shape);
        table.buf.extend_from_slice(header.as_bytes());
        table.bytes = header.len() as u64;
        self.known.entry(key.1).or_default().insert(key.0.clone());
        self.tables.insert(key.clone(), table);
        Arc::make_mut(&mut self.columns).insert(key, Columns { shape, rows: true });
        Ok(())
    }

    /// Every table's file name as the tables so far give them, in their order: `CHANNEL.csv`, or
    /// `CHANNEL.TYPE.csv` when the channel has several tables, with `~2`, `~3`... for names taken already.
    fn file_names(&self) -> Vec<(Key, PathBuf)> {
        let mut per_channel: HashMap<&str, usize> = HashMap::new();
        for (ch, _) in &self.order {
            *per_channel.entry(ch).or_default() += 1;
        }
        let mut taken: HashMap<String, usize> = HashMap::new();
        let mut names = Vec::new();
        for key in &self.order {
            let mut stem = sanitize(&key.0);
            if per_channel[key.0.as_str()] > 1 {
                let type_name = self.tables.get(key).and_then(|t| t.type_name.clone()).or_else(|| {
                    // (The table being made: not in `tables` yet.)
                    key.1.and_then(|f| self.decoder.registry().and_then(|r| r.lookup(f)).map(|st| st.name.full()))
                });
                stem.push('.');
                stem.push_str(&sanitize(type_name.as_deref().unwrap_or("undecoded")));
            }
            let n = taken.entry(stem.clone()).or_default();
            *n += 1;
            let name = if *n == 1 { format!("{stem}.csv") } else { format!("{stem}~{n}.csv") };
            names.push((key.clone(), self.dir.join(name)));
        }
        names
    }

    /// Writes out a transcoded batch, and takes the batch back.
    fn write_done(&mut self, mut done: Done<Row, PartState>) -> Result<(), ExportError> {
        let r = self.write_batch(&done.batch, &mut done.parts);
        self.rows.recycle(done);
        r
    }

    /// Adds a transcoded batch's rows to their files in order (raw rows made here), then joins the columns the
    /// workers learnt: a table whose columns grew is written again. In a batch, a table's rows are either all
    /// decoded ones (from the parts' buffers) or all raw ones made here, so each table keeps its order.
    fn write_batch(&mut self, batch: &Batch, parts: &mut [Part<Row, PartState>]) -> Result<(), ExportError> {
        for part in parts.iter_mut() {
            for (i, (r, _)) in part.events.clone().zip(part.results.drain(..)) {
                if let Row::Serial = r {
                    self.event_serial(&batch.get(i))?;
                }
            }
            for (key, (buf, rows)) in part.state.rows.iter_mut().filter(|(_, (b, _))| !b.is_empty()) {
                let table = self.tables.get_mut(key).expect("the rows were made from this table");
                table.rows += std::mem::take(rows);
                table.bytes += buf.len() as u64;
                if !table.buf.is_empty() {
                    table.write_out(&mut self.sink)?;
                }
                // (The part keeps its buffer when the file is written with O_DIRECT: the rows are copied into the
                // file's staging block; otherwise the buffer goes, and the part gets an empty one the writer is done
                // with.)
                self.sink.send(table.file.1, buf)?;
            }
        }
        for part in parts.iter_mut() {
            for key in part.state.grown.drain(..) {
                let learnt = &part.state.shapes[&key];
                if self.columns[&key].shape.covers(learnt) {
                    continue;
                }
                let columns = Arc::make_mut(&mut self.columns).get_mut(&key).expect("a table for every shape learnt");
                columns.shape.absorb(learnt.clone());
                columns.rows = false;
                self.tables.get_mut(&key).expect("a table for every shape learnt").again = true;
            }
        }
        Ok(())
    }

    /// Writes the raw row of `ev`, a message that does not decode, on this thread (in the first pass: the second
    /// writes only decoded rows, of the tables written again).
    fn event_serial(&mut self, ev: &EventRef<'_>) -> Result<(), ExportError> {
        if self.second {
            return Ok(());
        }
        let why = match self.decoder.json(ev.data, JsonForm::Value, &mut Vec::new()) {
            Err(w) => w,
            // Decodes, yet its fingerprint names no one type: cannot be (the registry answers both).
            Ok(st) => format!("fingerprint 0x{:016x} is not one type's", st.fingerprint),
        };
        let key = (ev.channel().into_owned(), None);
        if !self.tables.contains_key(&key) {
            self.make_table(key.clone(), None, CsvShape::new())?;
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
        table.rows += 1;
        table.bytes += (table.buf.len() - start) as u64;
        if table.buf.len() >= OUT_CHUNK {
            table.write_out(&mut self.sink)?;
        }
        Ok(())
    }

    /// Hands the last batch to the workers and writes out every batch.
    fn end_pass(&mut self, workers: &Workers<'d>) -> Result<(), ExportError> {
        let (decoder, columns, learning) = (self.decoder, &self.columns, !self.second);
        self.rows.flush(workers, || row_work(decoder, columns, learning));
        while let Some(done) = self.rows.next_done(workers) {
            self.write_done(done)?;
        }
        Ok(())
    }

    /// Starts the second pass: each table written again gets a new file (named at the end), with the header of its
    /// columns as they are now (every message's), and rows are made for those tables only.
    fn start_second_pass(&mut self) -> Result<(), ExportError> {
        self.second = true;
        let columns = Arc::make_mut(&mut self.columns);
        for key in &self.order {
            let (table, c) = (self.tables.get_mut(key).expect("known key"), columns.get_mut(key).expect("known key"));
            c.rows = table.again;
            if !table.again {
                continue;
            }
            let path =
                self.dir.join(format!("{}.again~", table.file.0.file_stem().unwrap_or_default().to_string_lossy()));
            let file = self.sink.create(&path)?;
            // The rows of the first file were handed over already; what is left of them goes with it.
            table.write_out(&mut self.sink)?;
            table.first_file = Some(std::mem::replace(&mut table.file, (path, file)).0);
            let header = header(key, &c.shape);
            table.buf.extend_from_slice(header.as_bytes());
            (table.rows, table.bytes) = (0, header.len() as u64);
        }
        Ok(())
    }

    /// Writes what is left, flushes and closes every file, then gives each its name.
    fn finish(mut self) -> Result<ExportStats, ExportError> {
        for t in self.tables.values_mut() {
            t.write_out(&mut self.sink)?;
        }
        let moves: Vec<(PathBuf, PathBuf)> = self
            .file_names()
            .into_iter()
            .map(|(key, name)| (self.tables[&key].file.0.clone(), name))
            .filter(|(from, to)| from != to)
            .collect();
        self.sink.finish()?;
        let mut stats = ExportStats::default();
        for (key, t) in &self.tables {
            stats.messages += t.rows;
            stats.bytes_out += t.bytes;
            if key.1.is_some() {
                stats.decoded += t.rows;
            } else {
                stats.undecoded += t.rows;
            }
            if let Some(first) = &t.first_file {
                std::fs::remove_file(first).map_err(|e| ExportError::io(first, "removing", e))?;
            }
        }
        // Through names of their own first, so that no file is renamed onto one not renamed yet.
        let staged: Vec<PathBuf> =
            (0..moves.len()).map(|i| self.dir.join(format!(".nerve-export-{i}.renaming~"))).collect();
        for ((from, _), via) in moves.iter().zip(&staged) {
            std::fs::rename(from, via).map_err(|e| ExportError::io(from, "renaming", e))?;
        }
        for ((_, to), via) in moves.iter().zip(&staged) {
            std::fs::rename(via, to).map_err(|e| ExportError::io(to, "renaming to", e))?;
        }
        Ok(stats)
    }
}

/// A table's header line: `recv_utime,event` and its columns (a raw table's are fixed).
fn header(key: &Key, shape: &CsvShape) -> String {
    let mut header = String::from("recv_utime,event");
    if key.1.is_none() {
        header.push_str(",fingerprint,data_hex,error");
    } else {
        let mut line = Vec::new();
        for c in shape.columns() {
            line.push(b',');
            push_text(&mut line, &c);
        }
        header.push_str(&String::from_utf8_lossy(&line));
    }
    header.push('\n');
    header
}

/// The workers' work: for each decoded message of a table with rows in this pass, a row (with the columns as they
/// are when the batch is handed over); in the first pass also its columns merged into the part's own.
fn row_work<'d>(
    decoder: &'d Decoder,
    columns: &Arc<HashMap<Key, Columns>>,
    learning: bool,
) -> Work<'d, Row, PartState> {
    let columns = columns.clone();
    Arc::new(move |ev: &EventRef<'_>, _: &mut Vec<u8>, state: &mut PartState| {
        row(decoder, &columns, learning, ev, state)
    })
}

/// A decoded message's row (`recv_utime,event,cells...`), appended to its table's rows in the part; a message that
/// does not decode is left to the caller's thread.
fn row(
    decoder: &Decoder,
    columns: &HashMap<Key, Columns>,
    learning: bool,
    ev: &EventRef<'_>,
    state: &mut PartState,
) -> Row {
    let (Some(st), Some(t)) = (decoder.candidate(ev.data), decoder.transcoder()) else { return Row::Serial };
    let key = (ev.channel().into_owned(), Some(st.fingerprint));
    let Some(c) = columns.get(&key) else { return Row::Serial };
    if learning {
        let shape = state.shapes.entry(key.clone()).or_default();
        match t.csv_merge_grew(ev.data, shape) {
            Ok((_, true)) => state.grown.push(key.clone()),
            Ok((_, false)) => {}
            Err(_) => return Row::Serial,
        }
    }
    if !c.rows {
        return Row::Skipped;
    }
    let (out, rows) = state.rows.entry(key).or_default();
    let start = out.len();
    push_int(out, ev.utime);
    out.push(b',');
    push_int(out, ev.number);
    match t.csv_row(ev.data, &c.shape, out) {
        Ok(_) => {
            out.push(b'\n');
            *rows += 1;
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
