//! [`CsvExport`]: one CSV file per channel (per channel and type when a channel carries several), with a column per
//! leaf field, named by its path: `pose.position[0]`, `ranges[17]`, `m[1][2]`. The first two columns are
//! `recv_utime` and `event`. A byte array is one column of hex. Messages no type decodes go to
//! `CHANNEL.undecoded.csv`-style files with `fingerprint`, `data_hex` and `error` columns.
//!
//! Variable-length arrays get as many columns as the longest seen, so the header needs every message first: a
//! first pass ([`CsvExport::scan`]) merges each message's shape, the second ([`CsvExport::event`]) writes rows
//! (cells beyond a shorter array are empty).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nerve_types::dynamic::Value;

use super::json::push_float_text;
use super::{fingerprint, push_hex, Decoded, Decoder, ExportError, ExportStats};
use crate::EventRef;

/// The columns a type's messages have needed so far.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Leaf,
    Struct(Vec<(Arc<str>, Shape)>),
    Array(Vec<Shape>),
}

impl Shape {
    fn merge(&mut self, v: &Value) {
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

    fn columns(&self, prefix: &str, out: &mut Vec<String>) {
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
    fn row(&self, v: Option<&Value>, out: &mut String) {
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

/// Which file a message goes to: its channel and its type (`None`: undecoded).
type Key = (String, Option<u64>);

struct Table {
    type_name: Option<String>,
    shape: Shape,
    file: Option<(PathBuf, BufWriter<File>)>,
}

/// Exports to CSV files in a directory.
pub struct CsvExport<'d> {
    dir: PathBuf,
    decoder: &'d Decoder,
    tables: HashMap<Key, Table>,
    /// Keys in first-seen order (file names are given in this order).
    order: Vec<Key>,
    names_given: bool,
    line: String,
    stats: ExportStats,
}

impl<'d> CsvExport<'d> {
    /// Exports into `dir` (created if missing).
    pub fn create(dir: &Path, decoder: &'d Decoder) -> Result<CsvExport<'d>, ExportError> {
        std::fs::create_dir_all(dir).map_err(|e| ExportError::io(dir, "creating directory", e))?;
        Ok(CsvExport {
            dir: dir.to_path_buf(),
            decoder,
            tables: HashMap::new(),
            order: Vec::new(),
            names_given: false,
            line: String::new(),
            stats: ExportStats::default(),
        })
    }

    /// First pass: learns the columns `ev` needs.
    pub fn scan(&mut self, ev: &EventRef<'_>) {
        let decoded = self.decoder.decode(ev.data);
        let (key, value, type_name) = match decoded {
            Decoded::Value(st, v) => ((ev.channel().into_owned(), Some(st.fingerprint)), Some(v), Some(st.name.full())),
            Decoded::Raw(_) => ((ev.channel().into_owned(), None), None, None),
        };
        let table = match self.tables.get_mut(&key) {
            Some(t) => t,
            None => {
                self.order.push(key.clone());
                self.tables.entry(key).or_insert(Table { type_name, shape: Shape::Leaf, file: None })
            }
        };
        if let Some(v) = value {
            table.shape.merge(&v);
        }
    }

    /// The files, once the first event has been written: channel, type (None: undecoded), path.
    pub fn files(&self) -> Vec<(String, Option<String>, PathBuf)> {
        self.order
            .iter()
            .filter_map(|k| {
                let t = &self.tables[k];
                t.file.as_ref().map(|(p, _)| (k.0.clone(), t.type_name.clone(), p.clone()))
            })
            .collect()
    }

    fn open_files(&mut self) -> Result<(), ExportError> {
        self.names_given = true;
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
        let file = File::create(&path).map_err(|e| ExportError::io(&path, "creating", e))?;
        let mut w = BufWriter::with_capacity(1 << 16, file);
        let mut header = String::from("recv_utime,event");
        if key.1.is_none() {
            header.push_str(",fingerprint,data_hex,error");
        } else {
            let mut cols = Vec::new();
            t.shape.columns("", &mut cols);
            for c in cols {
                header.push(',');
                push_text(&mut header, &c);
            }
        }
        header.push('\n');
        w.write_all(header.as_bytes()).map_err(|e| ExportError::io(&path, "writing", e))?;
        self.stats.bytes_out += header.len() as u64;
        t.file = Some((path, w));
        Ok(())
    }

    /// Second pass: writes `ev`'s row.
    pub fn event(&mut self, ev: &EventRef<'_>) -> Result<(), ExportError> {
        use std::fmt::Write as _;
        if !self.names_given {
            self.open_files()?;
        }
        let decoded = self.decoder.decode(ev.data);
        let key: Key = match &decoded {
            Decoded::Value(st, _) => (ev.channel().into_owned(), Some(st.fingerprint)),
            Decoded::Raw(_) => (ev.channel().into_owned(), None),
        };
        if !self.tables.contains_key(&key) {
            // Not seen by `scan`: its columns come from this message alone.
            self.scan(ev);
            let stem = format!("{}.{}", sanitize(&key.0), key.1.map_or("undecoded".to_owned(), |f| format!("{f:016x}")));
            let path = self.dir.join(format!("{stem}.late.csv"));
            self.open_table(&key, path)?;
        }
        let t = self.tables.get_mut(&key).expect("known key");
        let line = &mut self.line;
        line.clear();
        let _ = write!(line, "{},{}", ev.utime, ev.number);
        match decoded {
            Decoded::Value(_, v) => {
                t.shape.row(Some(&v), line);
                self.stats.decoded += 1;
            }
            Decoded::Raw(why) => {
                line.push(',');
                if let Some(f) = fingerprint(ev.data) {
                    let _ = write!(line, "0x{f:016x}");
                }
                line.push(',');
                push_hex(line, ev.data);
                line.push(',');
                push_text(line, &why);
                self.stats.undecoded += 1;
            }
        }
        line.push('\n');
        let (path, w) = t.file.as_mut().expect("opened");
        w.write_all(line.as_bytes()).map_err(|e| ExportError::io(path, "writing", e))?;
        self.stats.messages += 1;
        self.stats.bytes_out += line.len() as u64;
        Ok(())
    }

    /// Flushes and closes every file.
    pub fn finish(mut self) -> Result<ExportStats, ExportError> {
        if !self.names_given {
            self.open_files()?;
        }
        for t in self.tables.values_mut() {
            if let Some((path, w)) = t.file.as_mut() {
                w.flush().map_err(|e| ExportError::io(path, "writing", e))?;
            }
        }
        Ok(self.stats)
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
    use super::*;
    use nerve_types::dynamic::StructValue;

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
