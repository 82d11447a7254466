//! [`Registry`]: the live objects a C library has handed out by pointer, so that every entry point can tell a
//! handle it made from NULL, a freed one or garbage without dereferencing it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// Objects of type `T` that C holds as `*const T`, each kept alive by the registry until [`Registry::remove`] (and
/// then until the last call using it returns).
pub struct Registry<T> {
    live: Mutex<Option<HashMap<usize, Arc<T>>>>,
}

impl<T> Registry<T> {
    /// An empty registry (a `static`).
    pub const fn new() -> Registry<T> {
        Registry { live: Mutex::new(None) }
    }

    fn lock(&self) -> MutexGuard<'_, Option<HashMap<usize, Arc<T>>>> {
        // A panic while the lock was held (caught by `guard`) leaves the map itself consistent: use it.
        self.live.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keeps `value` and returns the pointer C will hold.
    pub fn insert(&self, value: T) -> *const T {
        let value = Arc::new(value);
        let ptr = Arc::as_ptr(&value);
        self.lock().get_or_insert_with(HashMap::new).insert(ptr as usize, value);
        ptr
    }

    /// The object behind `ptr`, if this registry handed it out and it was not removed.
    pub fn get(&self, ptr: *const T) -> Option<Arc<T>> {
        self.lock().as_ref()?.get(&(ptr as usize)).cloned()
    }

    /// Like [`Registry::get`] but never waits for the lock: `Err(())` if another thread (or the code a signal
    /// interrupted) holds it. For entry points that must be async-signal-safe.
    #[allow(clippy::result_unit_err)]
    pub fn try_get(&self, ptr: *const T) -> Result<Option<Arc<T>>, ()> {
        match self.live.try_lock() {
            Ok(live) => Ok(live.as_ref().and_then(|m| m.get(&(ptr as usize)).cloned())),
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner().as_ref().and_then(|m| m.get(&(ptr as usize)).cloned())),
            Err(TryLockError::WouldBlock) => Err(()),
        }
    }

    /// Forgets `ptr`; returns the object if it was live (it is freed when the last user drops it).
    pub fn remove(&self, ptr: *const T) -> Option<Arc<T>> {
        self.lock().as_mut()?.remove(&(ptr as usize))
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
}
