//! [`Registry`]: the live objects a C library has handed out by pointer, so that every entry point can tell a
//! handle it made from NULL, a freed one or garbage without dereferencing it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::thread::LocalKey;

/// Objects of type `T` that C holds as `*const T`, each kept alive by the registry until [`Registry::remove`] (and
/// then until the last call using it returns).
pub struct Registry<T> {
    live: Mutex<Table<T>>,
    /// How many objects were removed, ever: a [`ThreadCache`] entry found live while this read `n` is live while it
    /// still reads `n`.
    removals: OwnLine<AtomicU64>,
}

/// A value on a cache line of its own, so that the lock's traffic (another thread opening a handle) does not evict
/// what every call reads.
#[repr(align(64))]
struct OwnLine<T>(T);

/// How many handles a [`ThreadCache`] remembers (a control loop reads and writes a few channels).
const CACHED: usize = 4;

/// The handles one thread used lately, each with a reference that keeps it alive, for [`Registry::with`]. Each
/// library declares one per registry: `thread_local!(static C: RefCell<ThreadCache<T>> = const { ... })`.
///
/// Why: a 1 kHz control loop calls in after sleeping, when nothing is in the caches, and the lock and the reference
/// count of a locked lookup are two more cold lines written per call (Ach's `ach_put` after a 1 ms sleep took about
/// 300 ns longer than nerve-shm's own put, and a polling `ach_get` 40 ns where nerve-shm's takes 9). A remembered
/// handle costs one read of the registry's removal count instead.
///
/// The price: a handle closed by another thread stays mapped until this thread calls in again (its next call sees
/// the removal count move and lets go of everything it remembers) or ends.
pub struct ThreadCache<T> {
    removals: u64,
    entries: [Option<(usize, Arc<T>)>; CACHED],
    next: usize,
}

impl<T> ThreadCache<T> {
    /// An empty cache (for `thread_local!`'s `const` initializer).
    pub const fn new() -> ThreadCache<T> {
        ThreadCache { removals: 0, entries: [const { None }; CACHED], next: 0 }
    }
}

impl<T> Default for ThreadCache<T> {
    fn default() -> Self {
        ThreadCache::new()
    }
}

/// How many live objects sit in the registry itself, beside its lock, before the rest go to a hash map.
const INLINE: usize = 8;

/// The live objects by address. Every entry point looks its handle up first, often after the caller slept (a 1 kHz
/// loop), when nothing is cached: a `HashMap` then cost a SipHash and a heap table on a page of its own (a cold
/// lookup took about 500 ns here, most of the gap between Ach's `ach_put` and nerve-shm's own put). The first
/// [`INLINE`] objects live in slots beside the lock, so a lookup touches only the registry's own cache lines.
struct Table<T> {
    inline: [Option<(usize, Arc<T>)>; INLINE],
    overflow: Option<HashMap<usize, Arc<T>>>,
}

impl<T> Table<T> {
    fn find(&self, addr: usize) -> Option<&Arc<T>> {
        self.inline
            .iter()
            .flatten()
            .find(|(a, _)| *a == addr)
            .map(|(_, v)| v)
            .or_else(|| self.overflow.as_ref()?.get(&addr))
    }
}

impl<T> Registry<T> {
    /// An empty registry (a `static`).
    pub const fn new() -> Registry<T> {
        Registry {
            live: Mutex::new(Table { inline: [const { None }; INLINE], overflow: None }),
            removals: OwnLine(AtomicU64::new(0)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table<T>> {
        // A panic while the lock was held (caught by `guard`) leaves the table itself consistent: use it.
        self.live.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keeps `value` and returns the pointer C will hold.
    pub fn insert(&self, value: T) -> *const T {
        let value = Arc::new(value);
        let ptr = Arc::as_ptr(&value);
        let mut table = self.lock();
        match table.inline.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => *slot = Some((ptr as usize, value)),
            None => {
                table.overflow.get_or_insert_with(HashMap::new).insert(ptr as usize, value);
            }
        }
        ptr
    }

    /// The object behind `ptr`, if this registry handed it out and it was not removed.
    pub fn get(&self, ptr: *const T) -> Option<Arc<T>> {
        self.lock().find(ptr as usize).cloned()
    }

    /// Runs `f` on the object behind `ptr` if it is live (like [`Registry::get`]), taking neither the lock nor a
    /// reference when this thread's `cache` remembers it and nothing was removed since (see [`ThreadCache`]).
    ///
    /// Sound against a concurrent [`Registry::remove`]: the cache holds a reference, so the object outlives `f`, and
    /// a call that saw the removal count before the removal is ordered before it. A nested call (from `f`, or from a
    /// signal handler that interrupted one) finds the cache in use and takes the locked path.
    #[inline(always)]
    pub fn with<R>(
        &self,
        cache: &'static LocalKey<RefCell<ThreadCache<T>>>,
        ptr: *const T,
        f: impl FnOnce(&T) -> R,
    ) -> Option<R> {
        let addr = ptr as usize;
        // Read before any lookup, so that an entry stored under it was live after it was read.
        let removals = self.removals.0.load(Ordering::Acquire);
        let mut f = Some(f);
        let cached = cache.try_with(|cell| {
            let mut c = cell.try_borrow_mut().ok()?;
            if c.removals != removals {
                c.entries = [const { None }; CACHED];
                c.removals = removals;
            }
            let slot = match c.entries.iter().position(|e| e.as_ref().is_some_and(|(a, _)| *a == addr)) {
                Some(i) => i,
                None => {
                    let live = self.get(ptr)?;
                    let i = c.next;
                    c.next = (i + 1) % CACHED;
                    c.entries[i] = Some((addr, live));
                    i
                }
            };
            let (_, object) = c.entries[slot].as_ref()?;
            f.take().map(|f| f(object))
        });
        match cached {
            Ok(Some(r)) => Some(r),
            // The cache is in use or torn down with its thread, or `ptr` is not live: the locked lookup decides.
            _ => f.and_then(|f| self.get(ptr).map(|object| f(&object))),
        }
    }

    /// [`Registry::remove`], and this thread's `cache` lets go of what it remembers, so that an object removed by
    /// the thread that used it is freed now rather than at that thread's next call.
    pub fn remove_cached(&self, cache: &'static LocalKey<RefCell<ThreadCache<T>>>, ptr: *const T) -> Option<Arc<T>> {
        let removed = self.remove(ptr);
        let _ = cache.try_with(|cell| cell.try_borrow_mut().map(|mut c| *c = ThreadCache::new()));
        removed
    }

    /// Like [`Registry::get`] but never waits for the lock: `Err(())` if another thread (or the code a signal
    /// interrupted) holds it. For entry points that must be async-signal-safe.
    #[allow(clippy::result_unit_err)]
    pub fn try_get(&self, ptr: *const T) -> Result<Option<Arc<T>>, ()> {
        match self.live.try_lock() {
            Ok(table) => Ok(table.find(ptr as usize).cloned()),
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner().find(ptr as usize).cloned()),
            Err(TryLockError::WouldBlock) => Err(()),
        }
    }

    /// Forgets `ptr`; returns the object if it was live (it is freed when the last user drops it).
    pub fn remove(&self, ptr: *const T) -> Option<Arc<T>> {
        let addr = ptr as usize;
        let mut table = self.lock();
        let removed = match table.inline.iter_mut().find(|slot| slot.as_ref().is_some_and(|(a, _)| *a == addr)) {
            Some(slot) => slot.take().map(|(_, v)| v),
            None => table.overflow.as_mut()?.remove(&addr),
        };
        if removed.is_some() {
            self.removals.0.fetch_add(1, Ordering::Release);
        }
        removed
    }
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Registry::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_live_handles_are_found() {
        static R: Registry<String> = Registry::new();
        let p = R.insert("a".to_owned());
        assert_eq!(R.get(p).as_deref().map(String::as_str), Some("a"));
        assert!(R.get(std::ptr::null()).is_none());
        assert!(R.get(0xdead_beef as *const String).is_none());
        assert!(R.try_get(p).unwrap().is_some());
        let kept = R.remove(p).unwrap();
        assert!(R.get(p).is_none() && R.remove(p).is_none());
        assert_eq!(*kept, "a");
    }

    thread_local! {
        static RECENT: RefCell<ThreadCache<String>> = const { RefCell::new(ThreadCache::new()) };
    }

    #[test]
    fn a_remembered_object_removed_by_another_thread_is_refused_and_let_go() {
        static R: Registry<String> = Registry::new();
        let p = R.insert("kept".to_owned());
        let other = R.insert("other".to_owned());
        let len = |ptr| R.with(&RECENT, ptr, |s: &String| s.len());
        assert_eq!((len(p), len(other)), (Some(4), Some(5)));
        let weak = Arc::downgrade(&R.get(p).unwrap());
        // Removed on another thread while this one remembers it: the next call here refuses it, and lets go.
        let addr = p as usize;
        std::thread::spawn(move || assert!(R.remove(addr as *const String).is_some())).join().unwrap();
        assert_eq!(len(p), None);
        assert!(weak.upgrade().is_none(), "the cache still holds a removed object");
        assert_eq!(len(other), Some(5));
        // A nested call finds the cache in use and takes the locked lookup.
        assert_eq!(R.with(&RECENT, other, |_| len(other)), Some(Some(5)));
        // Removed by the thread that remembers it: freed at once.
        let weak = Arc::downgrade(&R.get(other).unwrap());
        assert!(R.remove_cached(&RECENT, other).is_some());
        assert!(weak.upgrade().is_none());
        assert_eq!(len(other), None);
    }

    #[test]
    fn a_cache_of_four_serves_more_objects_by_lookup() {
        static R: Registry<usize> = Registry::new();
        thread_local! {
            static NUMS: RefCell<ThreadCache<usize>> = const { RefCell::new(ThreadCache::new()) };
        }
        let ptrs: Vec<*const usize> = (0..10).map(|i| R.insert(i)).collect();
        for _ in 0..3 {
            for (i, p) in ptrs.iter().enumerate() {
                assert_eq!(R.with(&NUMS, *p, |v| *v), Some(i));
            }
        }
        assert_eq!(R.with(&NUMS, std::ptr::null(), |v| *v), None);
    }

    #[test]
    fn objects_past_the_inline_slots_are_found_and_removed_too() {
        static R: Registry<usize> = Registry::new();
        let ptrs: Vec<*const usize> = (0..3 * INLINE).map(|i| R.insert(i)).collect();
        for (i, p) in ptrs.iter().enumerate() {
            assert_eq!(R.get(*p).as_deref(), Some(&i));
        }
        // Free inline slots are reused; an object that went to the map stays findable there.
        for p in ptrs.iter().step_by(2) {
            assert!(R.remove(*p).is_some() && R.get(*p).is_none());
        }
        let again = R.insert(99);
        assert_eq!(R.get(again).as_deref(), Some(&99));
        for (i, p) in ptrs.iter().enumerate().skip(1).step_by(2) {
            assert_eq!(R.try_get(*p).unwrap().as_deref(), Some(&i));
        }
    }
}
