//! [`Registry`]: the live objects a C library has handed out by pointer, so that every entry point can tell a
//! handle it made from NULL, a freed one or garbage without dereferencing it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// Objects of type `T` that C holds as `*const T`, each kept alive by the registry until [`Registry::remove`] (and
/// then until the last call using it returns).
pub struct Registry<T> {
    live: Mutex<Table<T>>,
}

/// How many live objects sit in the registry itself, beside its lock, before the rest go to a hash map.
const INLINE: usize = 8;

/// The live objects by address. Every entry point looks its handle up first, often after the caller slept (a 1 kHz
/// loop), when nothing is cached: a `HashMap` then cost a SipHash and a heap table on a page of its own (a cold
/// lookup was most of the gap between Ach's `ach_put` and nerve-shm's own put). The first
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
        Registry { live: Mutex::new(Table { inline: [const { None }; INLINE], overflow: None }) }
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
        if let Some(slot) = table.inline.iter_mut().find(|slot| slot.as_ref().is_some_and(|(a, _)| *a == addr)) {
            return slot.take().map(|(_, v)| v);
        }
        table.overflow.as_mut()?.remove(&addr)
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
