//! The provider registry: which URL scheme opens which [`Provider`]. [`crate::Bus::new`] looks the scheme up here.
//!
//! The built-in providers (`udpm`, `mpudpm`, `shm`, `file`, `memq`, `inproc`, listed in `builtin`) are registered
//! here the same way a provider crate registers its own: a scheme and a [`Constructor`] that parses the URL's
//! network part and options and opens the transport. A provider in another crate (zenoh, say) calls [`register`]
//! once at start-up, before the first `Bus::new` with its scheme; from then on its URLs work everywhere a URL is
//! taken (the CLI's `--url`, `NERVE_URL`). A constructor refuses an option it does not know with
//! [`check_options`](super::check_options) ([`BusError::UnknownOption`], naming the options it knows), so a misspelt
//! option is an error, not silence.

use std::sync::{Arc, OnceLock, RwLock};

use super::builtin::BUILTINS;
use super::Provider;
use crate::error::BusError;
use crate::url::Url;

/// Opens a provider from its parsed URL (the scheme is the one it was registered under).
pub type Constructor = Arc<dyn Fn(&Url) -> Result<Box<dyn Provider>, BusError> + Send + Sync>;

/// Schemes in registration order, each with its constructor (a later registration of a scheme replaces it in place).
type Table = RwLock<Vec<(String, Constructor)>>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        RwLock::new(BUILTINS.into_iter().map(|(s, c)| (s.to_owned(), Arc::new(c) as Constructor)).collect())
    })
}

/// Registers `constructor` for URLs whose scheme is `scheme` (`zenoh` for `zenoh://...`). Registering a scheme
/// again replaces its constructor (a built-in one too); the one replaced is returned.
pub fn register(
    scheme: &str,
    constructor: impl Fn(&Url) -> Result<Box<dyn Provider>, BusError> + Send + Sync + 'static,
) -> Option<Constructor> {
    let constructor: Constructor = Arc::new(constructor);
    // The table holds no lock across user code (constructors run outside it), so it is never poisoned by one.
    let mut t = table().write().unwrap_or_else(|e| e.into_inner());
    match t.iter_mut().find(|(s, _)| s == scheme) {
        Some((_, old)) => Some(std::mem::replace(old, constructor)),
        None => {
            t.push((scheme.to_owned(), constructor));
            None
        }
    }
}

/// The schemes registered, in registration order (the built-ins first).
pub fn schemes() -> Vec<String> {
    table().read().unwrap_or_else(|e| e.into_inner()).iter().map(|(s, _)| s.clone()).collect()
}

/// The constructor registered for `scheme`.
pub fn constructor(scheme: &str) -> Option<Constructor> {
    table().read().unwrap_or_else(|e| e.into_inner()).iter().find(|(s, _)| s == scheme).map(|(_, c)| Arc::clone(c))
}

/// Opens the provider `url` names, with the constructor registered for its scheme.
pub fn open(url: &Url) -> Result<Box<dyn Provider>, BusError> {
    let ctor = constructor(&url.provider)
        .ok_or_else(|| BusError::UnknownProvider { provider: url.provider.clone(), registered: schemes() })?;
    ctor(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_registered() {
        let s = schemes();
        for b in ["udpm", "mpudpm", "memq", "inproc", "file", "shm"] {
            assert!(s.iter().any(|x| x == b), "{b} in {s:?}");
        }
    }
}
