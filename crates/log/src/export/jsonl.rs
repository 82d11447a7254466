//! [`JsonlExport`]: one JSON object per event, with the keys `nerve sub --json` prints plus the event number:
//! `{"event", "channel", "size", "fingerprint", "recv_utime", "type", "value"}` for a decoded message (the value as
//! Nerve writes values everywhere: nested arrays, byte arrays as numbers, NaN as `"NaN"`), and `"data_hex"` with
//! `"error"` instead of `"type"` and `"value"` for one no type decoded.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use nerve_types::dynamic::json_string;

use super::{fingerprint, push_hex, Decoded, Decoder, ExportError, ExportStats};
use crate::EventRef;

/// Exports to a JSON lines file.
pub struct JsonlExport<'d> {
    path: PathBuf,
    out: BufWriter<Box<dyn Write + 'd>>,
    decoder: &'d Decoder,
    line: String,
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
            out: BufWriter::with_capacity(1 << 20, out),
            decoder,
            line: String::new(),
            stats: ExportStats::default(),
        }
    }

    /// Exports one event.
    pub fn event(&mut self, ev: &EventRef<'_>) -> Result<(), ExportError> {
        use std::fmt::Write as _;
        let l = &mut self.line;
        l.clear();
        let fp = fingerprint(ev.data).map_or("null".to_owned(), |f| format!("\"0x{f:016x}\""));
        let _ = write!(
            l,
            "{{\"event\":{},\"channel\":{},\"size\":{},\"fingerprint\":{fp},\"recv_utime\":{}",
            ev.number,
            json_string(&ev.channel()),
            ev.data.len(),
            ev.utime
        );
        match self.decoder.decode(ev.data) {
            Decoded::Value(st, v) => {
                let _ = write!(l, ",\"type\":{},\"value\":{}}}", json_string(&st.name.full()), v.to_json());
                self.stats.decoded += 1;
            }
            Decoded::Raw(why) => {
                l.push_str(",\"data_hex\":\"");
                push_hex(l, ev.data);
                let _ = write!(l, "\",\"error\":{}}}", json_string(&why));
                self.stats.undecoded += 1;
            }
        }
        l.push('\n');
        self.out.write_all(l.as_bytes()).map_err(|e| ExportError::io(&self.path, "writing", e))?;
        self.stats.messages += 1;
        self.stats.bytes_out += l.len() as u64;
        Ok(())
    }

    /// Flushes and closes.
    pub fn finish(mut self) -> Result<ExportStats, ExportError> {
        self.out.flush().map_err(|e| ExportError::io(&self.path, "writing", e))?;
        Ok(self.stats)
    }
}
