//! The providers this build has, each under its URL scheme: the table the [registry](super::registry) starts from.
//! It only lists them. A provider imports neither this table nor the registry (it checks its options with
//! [`crate::url::Url::check_options`]), so providers and registry never use each other.

use super::file::FileProvider;
use super::inproc::Inproc;
use super::mpudpm::Mpudpm;
#[cfg(target_os = "linux")]
use super::shm::Shm;
use super::udpm::Udpm;
use super::Provider;
use crate::error::BusError;
use crate::url::Url;

/// A built-in provider's constructor.
pub(super) type Open = fn(&Url) -> Result<Box<dyn Provider>, BusError>;

/// The built-in schemes in registration order, each with its constructor.
pub(super) const BUILTINS: [(&str, Open); 6] = [
    ("udpm", Udpm::from_url),
    ("mpudpm", Mpudpm::from_url),
    ("memq", Inproc::memq_from_url),
    ("inproc", Inproc::from_url),
    ("file", FileProvider::from_url),
    ("shm", SHM),
];

/// shm:// channels are built on Linux's futexes and /dev/shm.
#[cfg(target_os = "linux")]
const SHM: Open = Shm::from_url;
#[cfg(not(target_os = "linux"))]
const SHM: Open = shm_unsupported;

/// shm:// where it is not built: a clear error naming the transports that work here.
#[cfg(not(target_os = "linux"))]
fn shm_unsupported(url: &Url) -> Result<Box<dyn Provider>, BusError> {
    Err(BusError::Config {
        url: url.to_string(),
        reason: "shm:// channels are only available on Linux; on this system use udpm, mpudpm, file, inproc, memq \
                 or zenoh"
            .into(),
    })
}
