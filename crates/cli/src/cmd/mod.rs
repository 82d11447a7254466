//! One module per subcommand; each has `Args` (its command line) and `run`.

pub mod bench;
pub mod chan;
pub mod demo;
pub mod export;
pub mod gen;
pub mod log;
pub mod play;
pub mod publish;
mod receive_args;
pub mod spy;
pub mod sub;
mod types_arg;
