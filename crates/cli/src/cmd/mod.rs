//! One module per subcommand, each with `Args` (its command line) and `run`, and the helpers they share. The only
//! `cfg` is here: `chan`, `demo` and the shm checks are Linux's; `not_linux` stands in for them elsewhere.

pub mod bench;
pub mod bridge;
#[cfg(target_os = "linux")]
pub mod chan;
mod damage;
#[cfg(target_os = "linux")]
pub mod demo;
pub mod exit;
pub mod export;
pub mod foxglove;
pub mod gen;
pub mod log;
mod message_json;
#[cfg(not(target_os = "linux"))]
mod not_linux;
pub mod play;
pub mod publish;
mod receive_args;
#[cfg(not(target_os = "linux"))]
pub use not_linux::{chan, demo, shm_access};
#[cfg(target_os = "linux")]
mod shm_access;
pub mod spy;
pub mod sub;
mod types_arg;
