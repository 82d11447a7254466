//! [`JsonlExport`]: one JSON object per event, with the keys `nerve sub --json` prints plus the event number:
//! `{"event", "channel", "size", "fingerprint", "recv_utime", "type", "value"}` for a decoded message (the value as
//! Nerve writes values everywhere: nested arrays, byte arrays as numbers, NaN as `"NaN"`), and `"data_hex"` with
//! `"error"` instead of `"type"` and `"value"` for one no type decoded.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use nerve_types::dynamic::{json_string, JsonForm};

use super::batch::{transcode_while, Batch, Part};
use super::sink::Sink;
use super::{fingerprint, push_fingerprint, push_hex, push_int, Decoder, ExportError, ExportStats};
use crate::EventRef;

/// Each channel's name as a JSON string, escaped once (per thread).
type ChannelNames = HashMap<Vec<u8>, Box<[u8]>>;

/// Where the lines go: a file written on its own thread, or a caller's writer.
enum Output<'d> {
    File(Sink),
    Writer(Box<dyn Write + 'd>),
}

/// Exports to a JSON lines file.
pub struct JsonlExport<'d> {
    path: PathBuf,
    out: Output<'d>,
    decoder: &'d Decoder,
    batch: Batch,
    /// Whether each line's message decoded.
    parts: Vec<Part<bool, ChannelNames>>,
    /// The last batch's lines, not written yet: written while the next batch is transcoded.
    done: Vec<Part<bool, ChannelNames>>,
    stats: ExportStats,
}

impl<'d> JsonlExport<'d> {
    /// Creates `path` (overwriting it).
    pub fn create(path: &Path, decoder: &'d Decoder) -> Result<JsonlExport<'d>, ExportError> {
        let mut sink = Sink::new();
        sink.create(path)?;
        Ok(JsonlExport::with_output(path, Output::File(sink), decoder))
    }

    /// Writes to `out` (`name` is used in error messages).
    pub fn to_writer(name: &Path, out: Box<dyn Write + 'd>, decoder: &'d Decoder) -> JsonlExport<'d> {
        JsonlExport::with_output(name, Output::Writer(out), decoder)
    }

    fn with_output(name: &Path, out: Output<'d>, decoder: &'d Decoder) -> JsonlExport<'d> {
        JsonlExport {
            path: name.to_path_buf(),
            out,
            decoder,
            batch: Batch::default(),
            parts: Vec::new(),
            done: Vec::new(),
            stats: ExportStats::default(),
        }
    }

    /// Exports one event (written out with the batch it joins).
    pub fn event(&mut self, ev: &EventRef<'_>) -> Result<(), ExportError> {
        self.batch.push(ev);
        if self.batch.is_full() {
            self.run_batch()?;
        }
        Ok(())
    }

    /// Transcodes the batch (on several threads) while handing the lines of the batch before it to the output on
    /// this thread; the batch's lines are written with the next batch, or by [`JsonlExport::finish`].
    fn run_batch(&mut self) -> Result<(), ExportError> {
        let decoder = self.decoder;
        let mut parts = std::mem::take(&mut self.parts);
        let mut done = std::mem::take(&mut self.done);
        let (batch, path, out, stats) = (&self.batch, &self.path, &mut self.out, &mut self.stats);
        let result = transcode_while(batch, &mut parts, &|ev, out, names| line(decoder, ev, out, names), || {
            write_parts(&mut done, path, out, stats)
        });
        // The parts keep their channel names from batch to batch: the two sets take turns.
        self.parts = done;
        self.done = parts;
        self.batch.clear();
        result
    }

    /// Writes what is left, flushes and closes.
    pub fn finish(mut self) -> Result<ExportStats, ExportError> {
        self.run_batch()?;
        write_parts(&mut self.done, &self.path, &mut self.out, &mut self.stats)?;
        match self.out {
            Output::File(sink) => sink.finish()?,
            Output::Writer(mut w) => w.flush().map_err(|e| ExportError::io(&self.path, "writing", e))?,
        }
        Ok(self.stats)
    }
}

/// Hands transcoded parts' lines to the output, in order, and counts them.
fn write_parts(
    parts: &mut [Part<bool, ChannelNames>],
    path: &Path,
    out: &mut Output<'_>,
    stats: &mut ExportStats,
) -> Result<(), ExportError> {
    for part in parts {
        for (decoded, _) in part.results.drain(..) {
            stats.messages += 1;
            if decoded {
                stats.decoded += 1;
            } else {
                stats.undecoded += 1;
            }
        }
        stats.bytes_out += part.out.len() as u64;
        match out {
            Output::File(sink) => sink.send(0, &mut part.out)?,
            Output::Writer(w) => {
                w.write_all(&part.out).map_err(|e| ExportError::io(path, "writing", e))?;
                part.out.clear();
            }
        }
    }
    Ok(())
}

/// Appends one event's line to `l`; whether its message decoded.
pub(super) fn line(decoder: &Decoder, ev: &EventRef<'_>, l: &mut Vec<u8>, names: &mut ChannelNames) -> bool {
    l.extend_from_slice(b"{\"event\":");
    push_int(l, ev.number);
    l.extend_from_slice(b",\"channel\":");
    match names.get(ev.channel_bytes) {
        Some(c) => l.extend_from_slice(c),
        None => {
            let c = json_string(&ev.channel());
            l.extend_from_slice(c.as_bytes());
            names.insert(ev.channel_bytes.to_vec(), c.into_bytes().into());
        }
    }
    l.extend_from_slice(b",\"size\":");
    push_int(l, ev.data.len());
    l.extend_from_slice(b",\"fingerprint\":");
    match fingerprint(ev.data) {
        Some(f) => {
            l.push(b'"');
            push_fingerprint(l, f);
            l.push(b'"');
        }
        None => l.extend_from_slice(b"null"),
    }
    l.extend_from_slice(b",\"recv_utime\":");
    push_int(l, ev.utime);
    let mark = l.len();
    // The type first (the one its fingerprint names), then the value straight from the bytes.
    let decoded = match (decoder.candidate(ev.data), decoder.transcoder()) {
        (Some(st), Some(t)) => {
            l.extend_from_slice(b",\"type\":");
            match t.json_type_name(st) {
                Some(name) => l.extend_from_slice(name),
                None => l.extend_from_slice(json_string(&st.name.full()).as_bytes()),
            }
            l.extend_from_slice(b",\"value\":");
            decoder.json(ev.data, JsonForm::Value, l).map(|_| ())
        }
        _ => decoder.json(ev.data, JsonForm::Value, &mut Vec::new()).map(|_| ()),
    };
    let ok = decoded.is_ok();
    match decoded {
        Ok(()) => l.push(b'}'),
        Err(why) => {
            l.truncate(mark);
            l.extend_from_slice(b",\"data_hex\":\"");
            push_hex(l, ev.data);
            l.extend_from_slice(b"\",\"error\":");
            l.extend_from_slice(json_string(&why).as_bytes());
            l.push(b'}');
        }
    }
    l.push(b'\n');
    ok
}
