//! [`JsonlExport`]: one JSON object per event, with the keys `nerve sub --json` prints plus the event number:
//! `{"event", "channel", "size", "fingerprint", "recv_utime", "type", "value"}` for a decoded message (the value as
//! Nerve writes values everywhere: nested arrays, byte arrays as numbers, NaN as `"NaN"`), and `"data_hex"` with
//! `"error"` instead of `"type"` and `"value"` for one no type decoded.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use nerve_types::dynamic::{json_string, JsonForm};

use super::{fingerprint, push_fingerprint, push_hex, push_int, Decoder, ExportError, ExportStats, OUT_CHUNK};
use crate::EventRef;

/// Exports to a JSON lines file.
pub struct JsonlExport<'d> {
    path: PathBuf,
    out: Box<dyn Write + 'd>,
    decoder: &'d Decoder,
    /// Lines not written yet (written in pieces of about [`OUT_CHUNK`]).
    buf: Vec<u8>,
    /// Each channel's name as a JSON string, escaped once.
    channels: HashMap<Vec<u8>, Box<[u8]>>,
    stats: ExportStats,
}

impl<'d> JsonlExport<'d> {
    /// Creates `path` (overwriting it).
    pub fn create(path: &Path, decoder: &'d Decoder) -> Result<JsonlExport<'d>, ExportError> {
        let file = File::create(path).map_err(|e| ExportError::io(path, "creating", e))?;
        Ok(JsonlExport::to_writer(path, Box::new(file), decoder))
    }

    /// Writes to `out` (`name` is used in error messages).
    pub fn to_writer(name: &Path, out: Box<dyn Write + 'd>, decoder: &'d Decoder) -> JsonlExport<'d> {
        JsonlExport {
            path: name.to_path_buf(),
            out,
            decoder,
            buf: Vec::with_capacity(OUT_CHUNK + (1 << 16)),
            channels: HashMap::new(),
            stats: ExportStats::default(),
        }
    }

    /// Exports one event.
    pub fn event(&mut self, ev: &EventRef<'_>) -> Result<(), ExportError> {
        let l = &mut self.buf;
        let start = l.len();
        l.extend_from_slice(b"{\"event\":");
        push_int(l, ev.number);
        l.extend_from_slice(b",\"channel\":");
        match self.channels.get(ev.channel_bytes) {
            Some(c) => l.extend_from_slice(c),
            None => {
                let c = json_string(&ev.channel());
                l.extend_from_slice(c.as_bytes());
                self.channels.insert(ev.channel_bytes.to_vec(), c.into_bytes().into());
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
        let decoded = match (self.decoder.candidate(ev.data), self.decoder.transcoder()) {
            (Some(st), Some(t)) => {
                l.extend_from_slice(b",\"type\":");
                match t.json_type_name(st) {
                    Some(name) => l.extend_from_slice(name),
                    None => l.extend_from_slice(json_string(&st.name.full()).as_bytes()),
                }
                l.extend_from_slice(b",\"value\":");
                match self.decoder.json(ev.data, JsonForm::Value, l) {
                    Ok(_) => Ok(()),
                    Err(why) => Err(why),
                }
            }
            _ => self.decoder.json(ev.data, JsonForm::Value, &mut Vec::new()).map(|_| ()),
        };
        match decoded {
            Ok(()) => {
                l.push(b'}');
                self.stats.decoded += 1;
            }
            Err(why) => {
                l.truncate(mark);
                l.extend_from_slice(b",\"data_hex\":\"");
                push_hex(l, ev.data);
                l.extend_from_slice(b"\",\"error\":");
                l.extend_from_slice(json_string(&why).as_bytes());
                l.push(b'}');
                self.stats.undecoded += 1;
            }
        }
        l.push(b'\n');
        self.stats.messages += 1;
        self.stats.bytes_out += (l.len() - start) as u64;
        if l.len() >= OUT_CHUNK {
            self.write_out()?;
        }
        Ok(())
    }

    fn write_out(&mut self) -> Result<(), ExportError> {
        self.out.write_all(&self.buf).map_err(|e| ExportError::io(&self.path, "writing", e))?;
        self.buf.clear();
        Ok(())
    }

    /// Flushes and closes.
    pub fn finish(mut self) -> Result<ExportStats, ExportError> {
        self.write_out()?;
        self.out.flush().map_err(|e| ExportError::io(&self.path, "writing", e))?;
        Ok(self.stats)
    }
}
