//! One module per subcommand, each with `Args` (its command line) and `run`, and the helpers they share.

pub mod bench;
pub mod bridge;
pub mod chan;
mod damage;
pub mod demo;
pub mod exit;
pub mod export;
pub mod foxglove;
pub mod gen;
pub mod log;
mod message_json;
pub mod play;
pub mod publish;
mod receive_args;
mod shm_access;
pub mod spy;
pub mod sub;
mod types_arg;
