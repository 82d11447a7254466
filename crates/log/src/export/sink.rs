//! [`Sink`]: output files written on a thread of their own, so that writing a batch's text overlaps making the
//! next batch's.
//!
//! Exporters hand the sink whole buffers ([`Sink::send`] swaps the caller's buffer for an empty one the writer
//! thread has finished with, so nothing is copied and big buffers are reused rather than faulted in again) or small
//! pieces ([`Sink::write`], gathered per file into pieces of about [`OUT_CHUNK`]). Buffers are written in the order
//! they were handed over; at most [`IN_FLIGHT`] wait, so a slow disk holds the exporter back instead of filling
//! memory. Every [`SYNC_EVERY`] bytes of a file a third thread syncs the file's data (`fdatasync`) behind the
//! writer, so that the disk writes while the next text is made rather than all at the end; at the end the writer
//! syncs every file, so the output is on the disk when the export returns (as `--to lcm`'s is). A write error
//! stops all writing; it is reported by the next call, with the file's path.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::{ExportError, OUT_CHUNK};

/// Buffers handed over and not yet written, at most.
pub(crate) const IN_FLIGHT: usize = 4;
/// Bytes written to a file between two `fdatasync`s: the disk writes while the next text is made, and no more
/// than this is left for the last one.
const SYNC_EVERY: usize = 32 << 20;
/// Written buffers kept for reuse, at most: enough for every part of a batch (see `batch`) and those in flight.
const SPARES: usize = 96;

enum Msg {
    Open(File),
    Data(usize, Vec<u8>),
}

/// Files written on one writer thread, in the order their bytes were handed over.
pub(crate) struct Sink {
    paths: Vec<PathBuf>,
    /// Small writes not handed over yet, per file.
    pending: Vec<Vec<u8>>,
    tx: Option<SyncSender<Msg>>,
    spare: Receiver<Vec<u8>>,
    failed: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), (usize, io::Error)>>>,
    /// The files, when no writer thread could be started and they are written on the caller's thread.
    inline: Vec<File>,
}

impl Sink {
    /// A sink with no files yet (its thread waits for the first).
    pub(crate) fn new() -> Sink {
        let (tx, rx) = sync_channel::<Msg>(IN_FLIGHT);
        let (spare_tx, spare) = sync_channel::<Vec<u8>>(SPARES);
        let failed = Arc::new(AtomicBool::new(false));
        let flag = failed.clone();
        let thread = std::thread::Builder::new()
            .name("nerve-export-write".into())
            .spawn(move || {
                let (sync_tx, sync_rx) = sync_channel::<(usize, File)>(1);
                std::thread::scope(|s| {
                    // Syncs files behind the writer: `fdatasync` blocks this thread, not the writes.
                    let syncer = std::thread::Builder::new()
                        .name("nerve-export-sync".into())
                        .spawn_scoped(s, move || {
                            for (i, f) in sync_rx {
                                sync(&f).map_err(|e| (i, e))?;
                            }
                            Ok(())
                        })
                        .ok();
                    let mut files: Vec<(File, usize)> = Vec::new();
                    let mut error = None;
                    for msg in rx {
                        match msg {
                            Msg::Open(f) => files.push((f, 0)),
                            Msg::Data(i, mut buf) => {
                                if error.is_none() {
                                    let (f, unsynced) = &mut files[i];
                                    *unsynced += buf.len();
                                    if let Err(e) = f.write_all(&buf) {
                                        flag.store(true, Ordering::Release);
                                        error = Some((i, e));
                                    } else if *unsynced >= SYNC_EVERY {
                                        *unsynced = 0;
                                        // Busy with the last one: this one waits for the next or the end.
                                        if let Ok(clone) = f.try_clone() {
                                            let _ = sync_tx.try_send((i, clone));
                                        }
                                    }
                                }
                                buf.clear();
                                // Full of spares already: this one is dropped.
                                let _ = spare_tx.try_send(buf);
                            }
                        }
                    }
                    drop(sync_tx);
                    if let Some(Ok(Err(e))) = syncer.map(|t| t.join()) {
                        error = error.or(Some(e));
                    }
                    if error.is_none() {
                        error = files.iter().enumerate().find_map(|(i, (f, _))| sync(f).err().map(|e| (i, e)));
                    }
                    match error {
                        Some(e) => Err(e),
                        None => Ok(()),
                    }
                })
            })
            .ok();
        Sink { paths: Vec::new(), pending: Vec::new(), tx: thread.as_ref().map(|_| tx), spare, failed, thread, inline: Vec::new() }
    }

    /// Creates `path` (overwriting it); its number for [`Sink::send`] and [`Sink::write`].
    pub(crate) fn create(&mut self, path: &Path) -> Result<usize, ExportError> {
        let file = File::create(path).map_err(|e| ExportError::io(path, "creating", e))?;
        self.paths.push(path.to_path_buf());
        self.pending.push(Vec::new());
        self.hand_over(Msg::Open(file))?;
        Ok(self.paths.len() - 1)
    }

    /// Hands `buf`'s bytes to file `i` (after any bytes written before) and leaves `buf` empty.
    pub(crate) fn send(&mut self, i: usize, buf: &mut Vec<u8>) -> Result<(), ExportError> {
        if buf.is_empty() {
            return Ok(());
        }
        // Small writes before it go first, on their own: `buf` (an MCAP chunk, a batch's text) is not copied
        // behind them.
        self.flush_file(i)?;
        let spare = self.spare.try_recv().unwrap_or_default();
        let full = std::mem::replace(buf, spare);
        self.hand_over(Msg::Data(i, full))
    }

    /// Appends `bytes` to file `i` (handed over in pieces of about [`OUT_CHUNK`]).
    pub(crate) fn write(&mut self, i: usize, bytes: &[u8]) -> Result<(), ExportError> {
        self.pending[i].extend_from_slice(bytes);
        if self.pending[i].len() >= OUT_CHUNK {
            self.flush_file(i)?;
        }
        Ok(())
    }

    fn flush_file(&mut self, i: usize) -> Result<(), ExportError> {
        if self.pending[i].is_empty() {
            return Ok(());
        }
        let spare = self.spare.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.pending[i], spare);
        self.hand_over(Msg::Data(i, full))
    }

    fn hand_over(&mut self, msg: Msg) -> Result<(), ExportError> {
        if self.failed.load(Ordering::Acquire) {
            return Err(self.stop());
        }
        let Some(tx) = &self.tx else {
            // No writer thread could be started: written here.
            return match msg {
                Msg::Open(f) => {
                    self.inline.push(f);
                    Ok(())
                }
                Msg::Data(i, buf) => {
                    self.inline[i].write_all(&buf).map_err(|e| ExportError::io(&self.paths[i], "writing", e))
                }
            };
        };
        if tx.send(msg).is_err() {
            return Err(self.stop());
        }
        Ok(())
    }

    /// Ends the writer thread; its error, or one saying it ended.
    #[cold]
    fn stop(&mut self) -> ExportError {
        self.tx = None;
        let r = self.thread.take().map(|t| t.join());
        self.failed.store(true, Ordering::Release);
        match r {
            Some(Ok(Err((i, e)))) => ExportError::io(&self.paths[i], "writing", e),
            _ => ExportError::io(
                self.paths.first().map_or(Path::new("-"), |p| p.as_path()),
                "writing",
                io::Error::other("the export's writer thread ended"),
            ),
        }
    }

    /// Hands over what is left, waits until everything is written, and closes the files.
    pub(crate) fn finish(mut self) -> Result<(), ExportError> {
        for i in 0..self.pending.len() {
            self.flush_file(i)?;
        }
        if self.failed.load(Ordering::Acquire) {
            return Err(self.stop());
        }
        for (f, path) in self.inline.iter().zip(&self.paths) {
            sync(f).map_err(|e| ExportError::io(path, "syncing", e))?;
        }
        self.tx = None;
        match self.thread.take().map(|t| t.join()) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err((i, e)))) => Err(ExportError::io(&self.paths[i], "writing", e)),
            Some(Err(_)) => Err(ExportError::io(
                self.paths.first().map_or(Path::new("-"), |p| p.as_path()),
                "writing",
                io::Error::other("the export's writer thread panicked"),
            )),
        }
    }
}

/// `fdatasync`; a file that cannot be synced (`/dev/null`, a pipe) is not an error.
fn sync(f: &File) -> io::Result<()> {
    match f.sync_data() {
        Err(e) if matches!(e.kind(), io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported) => Ok(()),
        r => r,
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // Closing the channel ends the thread once it has written what it holds.
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_arrive_in_order_per_file() {
        let dir = std::env::temp_dir().join(format!("nerve-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Sink::new();
        let a = s.create(&dir.join("a")).unwrap();
        let b = s.create(&dir.join("b")).unwrap();
        let (mut want_a, mut want_b) = (Vec::new(), Vec::new());
        for k in 0..200u32 {
            let piece: Vec<u8> = (0..(k * 7919) % 300_000).map(|x| (x ^ k) as u8).collect();
            if k % 3 == 0 {
                want_a.extend_from_slice(&piece);
                s.write(a, &piece).unwrap();
            } else if k % 5 == 0 {
                // Small writes and a whole buffer to the same file keep their order.
                want_a.extend_from_slice(&piece[..piece.len() / 3]);
                s.write(a, &piece[..piece.len() / 3]).unwrap();
                want_a.extend_from_slice(&piece);
                let mut buf = piece;
                s.send(a, &mut buf).unwrap();
                assert!(buf.is_empty());
            } else {
                want_b.extend_from_slice(&piece);
                let mut buf = piece;
                s.send(b, &mut buf).unwrap();
                assert!(buf.is_empty());
            }
        }
        s.finish().unwrap();
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), want_a);
        assert_eq!(std::fs::read(dir.join("b")).unwrap(), want_b);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_write_error_names_the_file() {
        let mut s = Sink::new();
        // Writing to /dev/full fails with ENOSPC.
        let Ok(f) = s.create(Path::new("/dev/full")) else { return };
        let mut r = Ok(());
        for _ in 0..64 {
            r = s.send(f, &mut vec![1u8; 1 << 20]);
            if r.is_err() {
                break;
            }
        }
        let e = r.and_then(|()| s.finish()).unwrap_err();
        assert!(e.to_string().contains("/dev/full"), "{e}");
    }
}
