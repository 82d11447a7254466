//! [`Sink`]: output files written on a thread of their own, so that writing a batch's text overlaps making the
//! next batch's.
//!
//! Exporters hand the sink whole buffers ([`Sink::send`]) or small pieces ([`Sink::write`]). A regular file is
//! written with `O_DIRECT` where the system allows it (see [`Target`]): the caller's bytes are copied into the
//! file's aligned staging block ([`Block`]), and each full block goes to the writer thread and from it straight
//! to the disk, with no page-cache copy on the cores that make the text; the caller keeps its buffer (emptied),
//! so the buffers the text is made in stay the same few, already in memory, and only the blocks travel. For any
//! other file `send` swaps the caller's buffer for an empty one the writer thread has finished with (nothing is
//! copied), and small writes are gathered per file into pieces of about [`OUT_CHUNK`]. Bytes are written in the
//! order they were handed over; at most [`IN_FLIGHT`] buffers or blocks wait, so a slow disk holds the exporter
//! back instead of filling memory. Every [`SYNC_EVERY`] bytes of a file written through the page cache a third
//! thread syncs the file's data (`fdatasync`) behind the writer, so that the disk writes while the next text is
//! made rather than all at the end. At the end the writer syncs every file, so the output is on the disk when the
//! export returns (as `--to lcm`'s is). A write error stops all writing; it is reported by the next call, with
//! the file's path.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::{ExportError, OUT_CHUNK};

/// Buffers handed over and not yet written, at most (each a part's text, a chunk or a table's rows: some MiB). A
/// file written with `O_DIRECT` holds the writer for the disk's time per block, so the queue has room for a few
/// blocks' worth: with 4, the caller's thread waited on a full queue about 400 more times per export.
pub(crate) const IN_FLIGHT: usize = 32;
/// Bytes written to a file between two `fdatasync`s: the disk writes while the next text is made, and no more
/// than this is left for the last one.
const SYNC_EVERY: usize = 32 << 20;
/// Written buffers kept for reuse, at most: enough for every part of a batch (see `batch`) and those in flight.
const SPARES: usize = 96;

enum Msg {
    Open(Target),
    Data(usize, Vec<u8>),
    /// A staging block of a file written with `O_DIRECT`: full, or the file's last (`true`).
    Block(usize, Block, bool),
}

/// Staging blocks made for a sink's files written with `O_DIRECT`, at most, beyond one per file: those on their way
/// to the disk. When all are, the caller's thread waits for the writer to be done with one. (8 MiB in flight; each
/// block is new memory the first time it is filled, a page fault per 4 KiB.)
const SPARE_BLOCKS: usize = 8;

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
    inline: Vec<Target>,
    /// Per file written with `O_DIRECT`: the staging block being filled.
    blocks: Vec<Option<Block>>,
    /// Blocks the writer thread is done with, and how many have been made.
    free_blocks: Receiver<Block>,
    blocks_made: usize,
}

impl Sink {
    /// A sink with no files yet (its thread waits for the first).
    pub(crate) fn new() -> Sink {
        let (tx, rx) = sync_channel::<Msg>(IN_FLIGHT);
        let (spare_tx, spare) = sync_channel::<Vec<u8>>(SPARES);
        let (block_tx, free_blocks) = sync_channel::<Block>(DIRECT_FILES + SPARE_BLOCKS);
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
                    let mut files: Vec<Target> = Vec::new();
                    let mut error = None;
                    for msg in rx {
                        match msg {
                            Msg::Open(f) => files.push(f),
                            Msg::Data(i, mut buf) => {
                                if error.is_none() {
                                    let t = &mut files[i];
                                    match t.write(&buf) {
                                        Err(e) => {
                                            flag.store(true, Ordering::Release);
                                            error = Some((i, e));
                                        }
                                        Ok(()) if t.unsynced >= SYNC_EVERY => {
                                            t.unsynced = 0;
                                            // Busy with the last one: this one waits for the next or the end.
                                            if let Ok(clone) = t.file.try_clone() {
                                                let _ = sync_tx.try_send((i, clone));
                                            }
                                        }
                                        Ok(()) => {}
                                    }
                                }
                                buf.clear();
                                // Full of spares already: this one is dropped.
                                let _ = spare_tx.try_send(buf);
                            }
                            Msg::Block(i, mut block, last) => {
                                if error.is_none() {
                                    let t = &mut files[i];
                                    if let Err(e) = t.write_block(&mut block, last) {
                                        flag.store(true, Ordering::Release);
                                        error = Some((i, e));
                                    }
                                }
                                block.len = 0;
                                let _ = block_tx.try_send(block);
                            }
                        }
                    }
                    drop(sync_tx);
                    if let Some(Ok(Err(e))) = syncer.map(|t| t.join()) {
                        error = error.or(Some(e));
                    }
                    if error.is_none() {
                        error = files.iter_mut().enumerate().find_map(|(i, t)| t.finish().err().map(|e| (i, e)));
                    }
                    match error {
                        Some(e) => Err(e),
                        None => Ok(()),
                    }
                })
            })
            .ok();
        Sink {
            paths: Vec::new(),
            pending: Vec::new(),
            tx: thread.as_ref().map(|_| tx),
            spare,
            failed,
            thread,
            inline: Vec::new(),
            blocks: Vec::new(),
            free_blocks,
            blocks_made: 0,
        }
    }

    /// Creates `path` (overwriting it); its number for [`Sink::send`] and [`Sink::write`].
    pub(crate) fn create(&mut self, path: &Path) -> Result<usize, ExportError> {
        let direct = self.paths.len() < DIRECT_FILES;
        let target = Target::create(path, direct).map_err(|e| ExportError::io(path, "creating", e))?;
        let block = target.direct.is_some().then(|| self.new_block());
        self.paths.push(path.to_path_buf());
        self.pending.push(Vec::new());
        self.blocks.push(block);
        self.hand_over(Msg::Open(target))?;
        Ok(self.paths.len() - 1)
    }

    /// A staging block: one the writer is done with, a new one, or (when as many are on their way to the disk as
    /// may be) the next the writer is done with.
    fn new_block(&mut self) -> Block {
        if let Ok(b) = self.free_blocks.try_recv() {
            return b;
        }
        if self.blocks_made < DIRECT_FILES + SPARE_BLOCKS || self.tx.is_none() {
            self.blocks_made += 1;
            return Block::new();
        }
        // (No writer thread left: its error comes with the next hand-over.)
        self.free_blocks.recv().unwrap_or_else(|_| Block::new())
    }

    /// Copies `data` into file `i`'s staging blocks, handing each full one over.
    fn stage(&mut self, i: usize, mut data: &[u8]) -> Result<(), ExportError> {
        while !data.is_empty() {
            let block = self.blocks[i].as_mut().expect("a file written with O_DIRECT");
            data = &data[block.put(data)..];
            if block.len == STAGE {
                let next = self.new_block();
                let full = self.blocks[i].replace(next).expect("a file written with O_DIRECT");
                self.hand_over(Msg::Block(i, full, false))?;
            }
        }
        Ok(())
    }

    /// Hands `buf`'s bytes to file `i` (after any bytes written before) and leaves `buf` empty (for a file written
    /// with `O_DIRECT` the same buffer, its bytes copied into the staging block; otherwise another).
    pub(crate) fn send(&mut self, i: usize, buf: &mut Vec<u8>) -> Result<(), ExportError> {
        if buf.is_empty() {
            return Ok(());
        }
        if self.blocks[i].is_some() {
            self.stage(i, buf)?;
            buf.clear();
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
        if self.blocks[i].is_some() {
            return self.stage(i, bytes);
        }
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
                    self.inline[i].write(&buf).map_err(|e| ExportError::io(&self.paths[i], "writing", e))
                }
                Msg::Block(i, mut block, last) => self.inline[i]
                    .write_block(&mut block, last)
                    .map_err(|e| ExportError::io(&self.paths[i], "writing", e)),
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
            if let Some(block) = self.blocks[i].take() {
                self.hand_over(Msg::Block(i, block, true))?;
            }
        }
        if self.failed.load(Ordering::Acquire) {
            return Err(self.stop());
        }
        for (f, path) in self.inline.iter_mut().zip(&self.paths) {
            f.finish().map_err(|e| ExportError::io(path, "syncing", e))?;
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

/// One output file, as the writer thread writes it.
///
/// A regular file is written with `O_DIRECT` where the system allows it: the bytes go from aligned staging blocks
/// ([`Block`], filled on the caller's thread) to the disk without a copy into the page cache. Writing through the
/// page cache costs CPU (the copy, page allocation and accounting, then writeback) on the cores that make the text,
/// a sizeable share of an export's work; bypassing it
/// leaves the disk's DMA doing the work. The last, partial block is written padded to [`ALIGN`] and the file cut
/// back to its length. Anything else (a pipe, `/dev/null`, a file system that refuses `O_DIRECT`, a sink's files
/// beyond the first [`DIRECT_FILES`]) is written through the page cache, as before.
pub(crate) struct Target {
    file: File,
    /// Bytes written since the last sync behind the writer (page-cache writes only).
    unsynced: usize,
    /// Of a file written with `O_DIRECT`: bytes written, and where to reopen it through the page cache if a write
    /// is refused.
    direct: Option<Direct>,
}

struct Direct {
    written: u64,
    path: PathBuf,
}

/// Alignment (of memory, file offsets and lengths) for writes that bypass the page cache.
const ALIGN: usize = 4096;
/// Bytes of a staging block: written to the disk in one `O_DIRECT` write (a multiple of [`ALIGN`]). 1 MiB rather
/// than 4: larger blocks are that much more new memory to fault in (a large share of a CSV export's page faults), and
/// the export's CPU time went down with them, no slower to write.
const STAGE: usize = 1 << 20;
/// Files of one sink written with `O_DIRECT`, at most (the first ones created): each holds a staging block, and a
/// CSV export of a log with hundreds of channels would otherwise hold hundreds of them.
const DIRECT_FILES: usize = 8;

/// A staging block for a file written with `O_DIRECT`: [`STAGE`] bytes at an aligned address, `len` of them filled.
pub(crate) struct Block {
    buf: Vec<u8>,
    /// Where the aligned block starts in `buf`.
    at: usize,
    len: usize,
}

impl Block {
    fn new() -> Block {
        let buf = vec![0u8; STAGE + ALIGN];
        let at = buf.as_ptr().addr().wrapping_neg() % ALIGN;
        Block { buf, at, len: 0 }
    }

    /// Copies as much of `data` as fits; how much.
    fn put(&mut self, data: &[u8]) -> usize {
        let n = (STAGE - self.len).min(data.len());
        self.buf[self.at + self.len..self.at + self.len + n].copy_from_slice(&data[..n]);
        self.len += n;
        n
    }
}

impl Target {
    /// Creates `path`; written with `O_DIRECT` if `direct` and the system allows it.
    fn create(path: &Path, direct: bool) -> io::Result<Target> {
        let file = File::create(path)?;
        let direct = if direct && file.metadata()?.is_file() { open_direct(path) } else { None };
        Ok(match direct {
            Some(file) => Target { file, unsynced: 0, direct: Some(Direct { written: 0, path: path.to_path_buf() }) },
            None => Target { file, unsynced: 0, direct: None },
        })
    }

    /// Writes `data` through the page cache.
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.unsynced += data.len();
        self.file.write_all(data)
    }

    /// Writes a staging block's bytes: with `O_DIRECT` (the last block padded to [`ALIGN`] and the file cut back to
    /// its length), or through the page cache if the file is not (or no longer) written so.
    fn write_block(&mut self, block: &mut Block, last: bool) -> io::Result<()> {
        let Some(d) = &mut self.direct else {
            return self.write(&block.buf[block.at..block.at + block.len]);
        };
        if block.len == 0 {
            return Ok(());
        }
        let padded = block.len.next_multiple_of(ALIGN);
        block.buf[block.at + block.len..block.at + padded].fill(0);
        match self.file.write_all(&block.buf[block.at..block.at + padded]) {
            Ok(()) => {
                d.written += block.len as u64;
                if last {
                    // The padding cut off.
                    self.file.set_len(d.written)?;
                }
                Ok(())
            }
            // Refused (a file system without O_DIRECT for these sizes): the rest through the page cache, from
            // where the direct writes ended (a partial direct write is rewritten).
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                let d = self.direct.take().expect("direct");
                let mut file = std::fs::OpenOptions::new().write(true).open(&d.path)?;
                file.seek(SeekFrom::Start(d.written))?;
                file.write_all(&block.buf[block.at..block.at + block.len])?;
                file.set_len(d.written + block.len as u64)?;
                self.file = file;
                self.unsynced = block.len;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Syncs the file (`fdatasync`).
    fn finish(&mut self) -> io::Result<()> {
        sync(&self.file)
    }
}

/// `path` (just created, empty) opened again with `O_DIRECT`; `None` where the system does not allow it.
#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(path).ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_: &Path) -> Option<File> {
    None
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

    /// Pieces of every kind of size (around the alignment, across staging blocks) to file `f`, sent whole and
    /// written in pieces by turns; the bytes written.
    fn write_pieces(s: &mut Sink, f: usize) -> Vec<u8> {
        let mut want = Vec::new();
        for k in 0..40usize {
            let n = [1, 4095, 4096, 4097, 700_000, STAGE - 3, 3, STAGE + 5][k % 8] / (1 + k / 8);
            let mut piece: Vec<u8> = (0..n).map(|x| (x * 31 + k) as u8).collect();
            want.extend_from_slice(&piece);
            if k % 3 == 0 {
                s.write(f, &piece).unwrap();
            } else {
                s.send(f, &mut piece).unwrap();
                assert!(piece.is_empty());
            }
        }
        want
    }

    #[test]
    fn direct_writes_keep_every_byte_and_the_length() {
        let path = std::env::temp_dir().join(format!("nerve-sink-direct-{}", std::process::id()));
        let mut s = Sink::new();
        let f = s.create(&path).unwrap();
        let direct = s.blocks[f].is_some();
        let want = write_pieces(&mut s, f);
        s.finish().unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len(), want.len(), "direct: {direct}");
        assert!(got == want, "direct: {direct}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_refused_direct_write_goes_on_through_the_page_cache() {
        let path = std::env::temp_dir().join(format!("nerve-sink-refused-{}", std::process::id()));
        let mut s = Sink::new();
        let f = s.create(&path).unwrap();
        // A first block that starts off the alignment: the kernel refuses it (EINVAL), as a file system without
        // O_DIRECT for that size would.
        let Some(block) = &mut s.blocks[f] else {
            // No O_DIRECT here: nothing to refuse.
            let _ = std::fs::remove_file(&path);
            return;
        };
        // (`buf` has `ALIGN` bytes beyond a block from any aligned start.)
        block.at += 1;
        let want = write_pieces(&mut s, f);
        s.finish().unwrap();
        // (A file system that takes misaligned direct writes, as tmpfs may, refuses nothing: the bytes still hold.)
        assert!(std::fs::read(&path).unwrap() == want);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn files_beyond_the_direct_ones_go_through_the_page_cache() {
        let dir = std::env::temp_dir().join(format!("nerve-sink-many-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Sink::new();
        let n = DIRECT_FILES + 3;
        let files: Vec<usize> = (0..n).map(|i| s.create(&dir.join(format!("f{i}"))).unwrap()).collect();
        for round in 0..3usize {
            for &f in &files {
                let mut buf: Vec<u8> = (0..5000 + f * 999 + round).map(|x| (x + f) as u8).collect();
                s.send(f, &mut buf).unwrap();
            }
        }
        s.finish().unwrap();
        for &f in &files {
            let want: Vec<u8> =
                (0..3usize).flat_map(|round| (0..5000 + f * 999 + round).map(move |x| (x + f) as u8)).collect();
            assert!(std::fs::read(dir.join(format!("f{f}"))).unwrap() == want, "file {f}");
        }
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
