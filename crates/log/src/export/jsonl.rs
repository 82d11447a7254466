//! [`JsonlExport`]: one JSON object per event, with the keys `nerve sub --json` prints plus the event number:
//! `{"event", "channel", "size", "fingerprint", "recv_utime", "type", "value"}` for a decoded message (the value as
//! Nerve writes values everywhere: nested arrays, byte arrays as numbers, NaN as `"NaN"`), and `"data_hex"` with
//! `"error"` instead of `"type"` and `"value"` for one no type decoded.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nerve_types::dynamic::{json_string, JsonForm};

use super::batch::{Done, Part, Pipeline, Work, Workers};
use super::sink::Sink;
use super::{fingerprint, push_fingerprint, push_hex, push_int, Decoder, ExportError, ExportStats, Feed};
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
    /// Batches of events on their way through the workers (each line's result: whether its message decoded): each
    /// written here while the next is transcoded.
    pipeline: Pipeline<'d, bool, ChannelNames>,
    work: Work<'d, bool, ChannelNames>,
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
            pipeline: Pipeline::default(),
            work: Arc::new(move |ev: &EventRef<'_>, out: &mut Vec<u8>, names: &mut ChannelNames| {
                line(decoder, ev, out, names)
            }),
            stats: ExportStats::default(),
        }
    }

    /// Exports the events `events` hands over (in order, to the function it is given: the caller's loop over its
    /// log), then flushes and closes the output. The lines are made on worker threads, a batch at a time, while the
    /// caller's thread reads the next batch and hands the one before to the output.
    pub fn run<E: From<ExportError>>(
        mut self,
        events: impl FnOnce(&mut Feed<'_>) -> Result<(), E>,
    ) -> Result<ExportStats, E> {
        Workers::scope(|w| {
            events(&mut |ev| self.event(ev, w))?;
            Ok(self.finish(w)?)
        })
    }

    /// Exports one event (written out with the batch it joins, once the batch after it has been handed over).
    fn event(&mut self, ev: &EventRef<'_>, workers: &Workers<'d>) -> Result<(), ExportError> {
        if self.pipeline.push(ev, workers, || self.work.clone()) {
            while let Some(done) = self.pipeline.ready(workers) {
                self.write_done(done)?;
            }
        }
        Ok(())
    }

    fn write_done(&mut self, mut done: Done<bool, ChannelNames>) -> Result<(), ExportError> {
        let r = write_parts(&mut done.parts, &self.path, &mut self.out, &mut self.stats);
        self.pipeline.recycle(done);
        r
    }

    /// Writes what is left, flushes and closes.
    fn finish(mut self, workers: &Workers<'d>) -> Result<ExportStats, ExportError> {
        self.pipeline.flush(workers, || self.work.clone());
        while let Some(done) = self.pipeline.next_done(workers) {
            self.write_done(done)?;
        }
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
