//! Doorbells (spec/shm-protocol.md, "Wait sets"): the file of a channel directory that holds one futex word per
//! wait set ([`BellFile`]), and the writer's side of the protocol, `B-RING`: after `W10`, a put rings the doorbell
//! of every wait set registered in its channel's header, setting the channel's hint in that doorbell's ready bitmap
//! so the waiter knows which channel to look at without looking at all of them.

use std::path::Path;
#[cfg(not(loom))]
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::ShmError;
use crate::layout::{decode_registration, Bell, Header, BELLS, BELL_SLOTS, GENERATION_MASK};
use crate::memory::BellMemory;
use crate::sync::{fence, Ordering};

/// A channel directory's doorbell file, mapped, with the doorbells this process has claimed.
pub(crate) struct BellFile {
    pub(crate) memory: BellMemory,
    /// Doorbells claimed by wait sets of this process: the kernel's byte locks do not tell a process's own locks
    /// from free ones, so this does.
    taken: Mutex<Vec<bool>>,
    #[cfg(not(loom))]
    pub(crate) path: PathBuf,
}

impl BellFile {
    /// Claims a free doorbell for a new wait set: `(index, generation)`, or `None` when all are held by live
    /// processes. Its ready bitmap starts empty; registrations made for its earlier owners stop matching.
    pub(crate) fn claim(&self) -> Result<Option<(usize, u64)>, ShmError> {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        #[cfg(not(loom))]
        let index = self
            .memory
            .claim(&taken)
            .map_err(|e| ShmError::io(self.path.clone(), "claiming a doorbell's byte lock", e))?;
        #[cfg(loom)]
        let index = taken.iter().position(|t| !t);
        let Some(index) = index else { return Ok(None) };
        taken[index] = true;
        drop(taken);
        let generation = loop {
            let g = self.memory.header().generation.fetch_add(1, Ordering::Relaxed).wrapping_add(1) & GENERATION_MASK;
            if g != 0 {
                break g;
            }
        };
        let bell = self.memory.bell(index);
        bell.sleeping.store(0, Ordering::Relaxed);
        bell.summary.store(0, Ordering::Relaxed);
        for word in &bell.ready {
            word.store(0, Ordering::Relaxed);
        }
        bell.generation.store(generation, Ordering::SeqCst);
        Ok(Some((index, generation)))
    }

    /// Gives doorbell `index` back: registrations still naming it stop matching (generation 0 is never handed out).
    pub(crate) fn release(&self, index: usize) {
        self.memory.bell(index).generation.store(0, Ordering::SeqCst);
        #[cfg(not(loom))]
        self.memory.release(index);
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = taken.get_mut(index) {
            *t = false;
        }
    }

    /// Whether a registration `(bell, generation)` belongs to a live wait set: the doorbell still has that
    /// generation and its owner (this process, or one holding its byte lock) is alive.
    pub(crate) fn registration_live(&self, bell: usize, generation: u64) -> bool {
        if self.memory.bell(bell).generation.load(Ordering::SeqCst) != generation {
            return false;
        }
        if self.taken.lock().unwrap_or_else(|p| p.into_inner()).get(bell).copied().unwrap_or(false) {
            return true;
        }
        #[cfg(not(loom))]
        return self.memory.held_elsewhere(bell);
        #[cfg(loom)]
        false
    }

    /// Doorbell `index`.
    pub(crate) fn bell(&self, index: usize) -> &Bell {
        self.memory.bell(index)
    }
}

/// A channel handle's way to its directory's doorbell file, found on the first put that has a doorbell to ring.
#[derive(Default)]
pub(crate) struct Link(OnceLock<Arc<BellFile>>);

impl Link {
    /// The doorbell file of the directory of the channel at `channel`, opened now if this handle has none yet
    /// (`None` if it cannot be: the registration that made the put look was then not made through it).
    fn get(&self, channel: &Path) -> Option<&Arc<BellFile>> {
        if let Some(file) = self.0.get() {
            return Some(file);
        }
        #[cfg(not(loom))]
        {
            let dir = channel.parent()?;
            let file = files::open(dir, None).ok()?;
            Some(self.0.get_or_init(|| file))
        }
        #[cfg(loom)]
        {
            let _ = channel;
            None
        }
    }

    /// Uses `file` (a wait set of this process that adds the channel has it at hand already).
    pub(crate) fn set(&self, file: &Arc<BellFile>) {
        let _ = self.0.set(Arc::clone(file));
    }
}

/// B-RING: after W10, ring every live registration `mask` names in the channel header `h` (the caller loaded
/// `bell_mask` with SeqCst and found it non-zero). Never waits: atomics, and one futex wake per doorbell whose owner
/// sleeps. Out of line: a channel nobody waits on through a wait set never runs it.
#[cold]
#[inline(never)]
pub(crate) fn ring(h: &Header, link: &Link, channel: &Path, mask: u32) {
    let Some(file) = link.get(channel) else { return };
    for (i, slot) in h.bell_slots.iter().enumerate().take(BELL_SLOTS.min(32)) {
        if mask & (1 << i) == 0 {
            continue;
        }
        let reg = slot.load(Ordering::SeqCst); // B-RING: the registration
        if reg == 0 {
            continue;
        }
        let (b, hint, generation) = decode_registration(reg);
        let bell = file.memory.bell(b);
        if bell.generation.load(Ordering::SeqCst) != generation {
            continue; // B-RING: a registration of a wait set that is gone
        }
        // B-RING: mark the hint ready (its word, then the summary bit), bump the word, wake a sleeping owner.
        bell.ready[hint / 64].fetch_or(1 << (hint % 64), Ordering::SeqCst);
        bell.summary.fetch_or(1 << (hint / 64), Ordering::SeqCst);
        bell.word.fetch_add(1, Ordering::SeqCst);
        // B-RING: paired with B-WAIT's fence between `sleeping` and its re-check of the summary.
        fence(Ordering::SeqCst);
        if bell.sleeping.load(Ordering::SeqCst) != 0 {
            file.memory.wake(bell);
        }
    }
}

/// Rings doorbell `index` without marking a channel (a wait set's waker): its owner wakes and looks at its flags.
pub(crate) fn ring_only(file: &BellFile, index: usize) {
    let bell = file.memory.bell(index);
    bell.word.fetch_add(1, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    if bell.sleeping.load(Ordering::SeqCst) != 0 {
        file.memory.wake(bell);
    }
}

impl BellFile {
    /// A doorbell file on the heap, for the loom model.
    #[cfg(loom)]
    pub(crate) fn in_memory() -> Arc<BellFile> {
        Arc::new(BellFile { memory: BellMemory::new(), taken: Mutex::new(vec![false; BELLS]) })
    }
}

/// Opening and making doorbell files, one mapping per directory and process.
#[cfg(not(loom))]
pub(crate) mod files {
    use super::*;
    use crate::layout::{BELL_FILE, BELL_FILE_SIZE, BELL_MAGIC, VERSION};
    use std::fs::{self, OpenOptions};
    use std::io;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    use std::sync::atomic::AtomicU64;

    /// The doorbell files this process has mapped, by directory.
    static OPEN: Mutex<Vec<(PathBuf, Arc<BellFile>)>> = Mutex::new(Vec::new());

    /// The doorbell file of `dir`, mapped once per process (again if the file was replaced since). With
    /// `create: Some(mode)` it is made (with those permission bits) if it does not exist.
    pub(crate) fn open(dir: &Path, create: Option<u32>) -> Result<Arc<BellFile>, ShmError> {
        let path = dir.join(BELL_FILE);
        let now = fs::symlink_metadata(&path).ok().map(|m| (m.dev(), m.ino()));
        let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, file)) = open.iter().find(|(d, f)| d == dir && Some(f.memory.file_id()) == now) {
            return Ok(Arc::clone(file));
        }
        let file = match open_path(&path) {
            Err(ShmError::NotFound { .. }) if create.is_some() => make(dir, &path, create.unwrap_or(0o600))?,
            other => other?,
        };
        let file = Arc::new(file);
        open.retain(|(d, _)| d != dir);
        open.push((dir.to_path_buf(), Arc::clone(&file)));
        Ok(file)
    }

    fn prefix() -> [u8; 24] {
        let mut p = [0u8; 24];
        p[..8].copy_from_slice(&BELL_MAGIC);
        p[8..12].copy_from_slice(&VERSION.to_ne_bytes());
        p[12..16].copy_from_slice(&(BELLS as u32).to_ne_bytes());
        p[16..24].copy_from_slice(&(BELL_FILE_SIZE as u64).to_ne_bytes());
        p
    }

    fn open_path(path: &Path) -> Result<BellFile, ShmError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| ShmError::io(path.to_path_buf(), "opening the doorbell file", e))?;
        let meta = file.metadata().map_err(|e| ShmError::io(path.to_path_buf(), "stat", e))?;
        if !meta.is_file() || meta.len() < BELL_FILE_SIZE as u64 {
            return Err(ShmError::Corrupt {
                path: path.to_path_buf(),
                what: format!("a doorbell file of {} bytes (it has {BELL_FILE_SIZE})", meta.len()),
            });
        }
        let memory = BellMemory::open(file).map_err(|e| ShmError::io(path.to_path_buf(), "mmap", e))?;
        let found = memory.prefix();
        let expected = prefix();
        if found[..8] != BELL_MAGIC {
            return Err(ShmError::NotAChannel { path: path.to_path_buf(), found: found[..8].try_into().unwrap() });
        }
        let version = u32::from_ne_bytes(found[8..12].try_into().unwrap());
        if version != VERSION {
            return Err(ShmError::UnsupportedVersion { path: path.to_path_buf(), found: version, supported: VERSION });
        }
        if found != expected {
            return Err(ShmError::Corrupt { path: path.to_path_buf(), what: "doorbell file sizes".into() });
        }
        Ok(BellFile { memory, taken: Mutex::new(vec![false; BELLS]), path: path.to_path_buf() })
    }

    /// Makes the doorbell file as channels are made: under a temporary name, complete, then linked.
    fn make(dir: &Path, path: &Path, mode: u32) -> Result<BellFile, ShmError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = dir.join(format!(
            "{BELL_FILE}.{}.{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let made = (|| -> io::Result<()> {
            let file = OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&tmp)?;
            if !crate::sys::allocate(&file, BELL_FILE_SIZE)? {
                file.set_len(BELL_FILE_SIZE as u64)?;
            }
            file.set_permissions(fs::Permissions::from_mode(mode))?;
            let memory = BellMemory::open(file)?;
            memory.write_prefix(&prefix());
            // A random first generation: registrations made against an earlier file of this name never match.
            use std::hash::{BuildHasher, Hasher};
            let seed = std::collections::hash_map::RandomState::new().build_hasher().finish();
            memory.header().generation.store(seed & GENERATION_MASK, Ordering::Release);
            Ok(())
        })();
        let linked = made.and_then(|()| fs::hard_link(&tmp, path));
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => open_path(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => open_path(path),
            Err(e) => Err(ShmError::io(path.to_path_buf(), "making the doorbell file", e)),
        }
    }
}
