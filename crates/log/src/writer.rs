//! [`LogWriter`]: writes events byte for byte as LCM's `lcm_eventlog_write_event` does (event numbers from 0 per
//! file), and [`SplitLog`]: a log split into `FILE.00`, `FILE.01`, ... once a file passes a size, as
//! `lcm-logger --increment --split-mb N` names and splits them.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::LogError;
use crate::event::{encode_header, HEADER_LEN, MAX_CHANNEL_LEN};

/// The write buffer of a log file.
const WRITE_BUF: usize = 1 << 20;

/// Writes events to `W`.
pub struct LogWriter<W: Write> {
    out: W,
    path: Option<PathBuf>,
    next_number: i64,
    bytes: u64,
}

impl LogWriter<BufWriter<File>> {
    /// Creates `path` (and missing directories). An existing file is an error unless `overwrite`.
    pub fn create(path: impl AsRef<Path>, overwrite: bool) -> Result<Self, LogError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| LogError::io(Some(dir), "creating directory", e))?;
        }
        let mut opts = OpenOptions::new();
        opts.write(true);
        if overwrite {
            opts.create(true).truncate(true);
        } else {
            opts.create_new(true);
        }
        let file = opts.open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => LogError::Exists { path: path.to_path_buf() },
            _ => LogError::io(Some(path), "creating", e),
        })?;
        let mut w = LogWriter::new(BufWriter::with_capacity(WRITE_BUF, file));
        w.path = Some(path.to_path_buf());
        Ok(w)
    }

    /// Opens `path` for appending (creating it if missing). Event numbers start at 0 again, as in LCM.
    pub fn append(path: impl AsRef<Path>) -> Result<Self, LogError> {
        let path = path.as_ref();
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| LogError::io(Some(path), "opening for append", e))?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut w = LogWriter::new(BufWriter::with_capacity(WRITE_BUF, file));
        w.path = Some(path.to_path_buf());
        w.bytes = bytes;
        Ok(w)
    }

    /// Flushes and asks the kernel to put the data on disk (`fdatasync`).
    pub fn sync(&mut self) -> Result<(), LogError> {
        self.flush()?;
        self.out.get_ref().sync_data().map_err(|e| LogError::io(self.path.as_deref(), "syncing", e))
    }
}

impl<W: Write> LogWriter<W> {
    /// A writer onto `out` (which should be buffered).
    pub fn new(out: W) -> Self {
        LogWriter { out, path: None, next_number: 0, bytes: 0 }
    }

    /// Writes one event numbered after the previous one (from 0).
    pub fn write_event(&mut self, utime: i64, channel: &str, data: &[u8]) -> Result<(), LogError> {
        let n = self.next_number;
        self.write_numbered(n, utime, channel.as_bytes(), data)
    }

    /// Writes one event with the given number (to copy events as they are); later events are numbered after it.
    pub fn write_numbered(&mut self, number: i64, utime: i64, channel: &[u8], data: &[u8]) -> Result<(), LogError> {
        if channel.is_empty() || channel.len() > MAX_CHANNEL_LEN {
            let shown: String = String::from_utf8_lossy(channel).chars().take(64).collect();
            return Err(LogError::ChannelLength { channel: shown, len: channel.len() });
        }
        if data.len() > i32::MAX as usize {
            return Err(LogError::DataTooLong {
                channel: String::from_utf8_lossy(channel).into_owned(),
                len: data.len(),
            });
        }
        let mut header = [0u8; HEADER_LEN];
        encode_header(&mut header, number, utime, channel.len(), data.len());
        let r = self
            .out
            .write_all(&header)
            .and_then(|_| self.out.write_all(channel))
            .and_then(|_| self.out.write_all(data));
        r.map_err(|e| LogError::io(self.path.as_deref(), "writing", e))?;
        self.next_number = number.wrapping_add(1);
        self.bytes += (HEADER_LEN + channel.len() + data.len()) as u64;
        Ok(())
    }

    /// Bytes in the file so far (including what an appended file had).
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// The number the next event gets.
    pub fn next_number(&self) -> i64 {
        self.next_number
    }

    /// Flushes buffered events to the file.
    pub fn flush(&mut self) -> Result<(), LogError> {
        self.out.flush().map_err(|e| LogError::io(self.path.as_deref(), "writing", e))
    }

    /// The file's path, when it was opened by path.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// `base.NN`: lcm-logger's `--increment` name (`%s.%02d`).
pub fn numbered_name(base: &Path, n: u32) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(format!(".{n:02}"));
    PathBuf::from(s)
}

/// A log that may be split into several files.
///
/// Without a split size it is one file, `base`. With one, it is `base.00`, `base.01`, ... (the first names that do
/// not exist yet, as `lcm-logger -i` picks them), and a new file is started after the event that takes the current
/// one past the size. Event numbers start at 0 in each file, as lcm-logger writes them.
pub struct SplitLog {
    base: PathBuf,
    split_bytes: Option<u64>,
    split_micros: Option<i64>,
    /// The first event's time in the current file.
    opened_at: Option<i64>,
    next_index: u32,
    current: LogWriter<BufWriter<File>>,
    files: Vec<PathBuf>,
}

impl SplitLog {
    /// Creates the first file. With no split size, an existing `base` is an error unless `overwrite`.
    pub fn create(base: impl AsRef<Path>, split_bytes: Option<u64>, overwrite: bool) -> Result<SplitLog, LogError> {
        let base = base.as_ref().to_path_buf();
        let (current, next_index) = match split_bytes {
            None => (LogWriter::create(&base, overwrite)?, 0),
            Some(_) => Self::open_numbered(&base, 0)?,
        };
        let files = vec![current.path().expect("opened by path").to_path_buf()];
        Ok(SplitLog { base, split_bytes, split_micros: None, opened_at: None, next_index, current, files })
    }

    /// Creates the first file of a log split by size, by time (a new file for the first event `split_micros` or
    /// more after the current file's first), or both; numbered from the first (`base.00`) when either is given.
    pub fn create_split(
        base: impl AsRef<Path>,
        split_bytes: Option<u64>,
        split_micros: Option<i64>,
        overwrite: bool,
    ) -> Result<SplitLog, LogError> {
        // Splitting by time alone still numbers the files: a byte limit past any file is splitting by time.
        let bytes = if split_micros.is_some() { split_bytes.or(Some(u64::MAX)) } else { split_bytes };
        let mut log = SplitLog::create(base, bytes, overwrite)?;
        log.split_micros = split_micros;
        Ok(log)
    }

    fn open_numbered(base: &Path, from: u32) -> Result<(LogWriter<BufWriter<File>>, u32), LogError> {
        let mut n = from;
        loop {
            let path = numbered_name(base, n);
            match LogWriter::create(&path, false) {
                Ok(w) => return Ok((w, n + 1)),
                Err(LogError::Exists { .. }) if n < u32::MAX => n += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes one event, starting the next file first if the current one has passed the split size.
    pub fn write_event(&mut self, utime: i64, channel: &str, data: &[u8]) -> Result<(), LogError> {
        if let (Some(span), Some(at)) = (self.split_micros, self.opened_at) {
            if utime.saturating_sub(at) >= span {
                self.rotate()?;
            }
        }
        self.opened_at.get_or_insert(utime);
        self.current.write_event(utime, channel, data)?;
        if let Some(limit) = self.split_bytes {
            if self.current.bytes_written() > limit {
                self.rotate()?;
            }
        }
        Ok(())
    }

    /// Closes the current file and starts the next one (only when splitting).
    pub fn rotate(&mut self) -> Result<(), LogError> {
        if self.split_bytes.is_none() {
            return Ok(());
        }
        self.current.flush()?;
        let (w, next) = Self::open_numbered(&self.base, self.next_index)?;
        self.current = w;
        self.next_index = next;
        self.opened_at = None;
        self.files.push(self.current.path().expect("opened by path").to_path_buf());
        Ok(())
    }

    /// Flushes the current file.
    pub fn flush(&mut self) -> Result<(), LogError> {
        self.current.flush()
    }

    /// Flushes the current file and has the kernel write it to disk.
    pub fn sync(&mut self) -> Result<(), LogError> {
        self.current.sync()
    }

    /// Every file written so far, in order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes_match_the_spec_example() {
        // Spec 5.1: the second event of the example, written by Python's EventLog.
        let mut w = LogWriter::new(Vec::new());
        w.write_numbered(1, 1_700_000_000_500_000, b"X", &[1, 2]).unwrap();
        let want = "eda1da01000000000000000100060a241825e12000000001000000025801 02".replace(' ', "");
        let got: String = w.into_inner().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn numbers_count_from_zero_and_channel_limits_are_checked() {
        let mut w = LogWriter::new(Vec::new());
        w.write_event(5, "A", b"").unwrap();
        w.write_event(6, "B", b"xy").unwrap();
        assert_eq!(w.next_number(), 2);
        assert_eq!(w.bytes_written(), 28 + 1 + 28 + 3);
        assert!(matches!(w.write_event(7, "", b""), Err(LogError::ChannelLength { len: 0, .. })));
        assert!(matches!(w.write_event(7, &"c".repeat(1000), b""), Err(LogError::ChannelLength { len: 1000, .. })));
        w.write_event(7, &"c".repeat(999), b"").unwrap();
    }

    #[test]
    fn split_log_names_and_sizes_like_lcm_logger() {
        let dir = std::env::temp_dir().join(format!("nerve-log-split-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("rec.log");
        // An existing .00 is skipped, as lcm-logger -i does.
        std::fs::write(numbered_name(&base, 0), b"keep").unwrap();
        let mut log = SplitLog::create(&base, Some(2500), false).unwrap();
        for i in 0..10 {
            log.write_event(i, "CH", &[i as u8; 1000]).unwrap();
        }
        log.flush().unwrap();
        let names: Vec<String> =
            log.files().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        // 1030 bytes per event: a file passes 2500 bytes at its third event.
        assert_eq!(names, ["rec.log.01", "rec.log.02", "rec.log.03", "rec.log.04"]);
        assert_eq!(std::fs::read(numbered_name(&base, 0)).unwrap(), b"keep");
        let sizes: Vec<u64> = log.files().iter().map(|p| std::fs::metadata(p).unwrap().len()).collect();
        assert_eq!(sizes, [3090, 3090, 3090, 1030]);
        let numbers: Vec<i64> =
            crate::LogReader::open(numbered_name(&base, 2)).unwrap().map(|e| e.unwrap().number).collect();
        assert_eq!(numbers, [0, 1, 2]);
        // Closed first: Windows deletes no directory holding an open file.
        drop(log);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_to_overwrite_unless_asked() {
        let dir = std::env::temp_dir().join(format!("nerve-log-exists-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.log");
        std::fs::write(&p, b"x").unwrap();
        assert!(matches!(LogWriter::create(&p, false), Err(LogError::Exists { .. })));
        LogWriter::create(&p, true).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
