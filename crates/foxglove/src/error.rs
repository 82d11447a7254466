//! [`ServeError`]: why the server could not start.

use std::fmt;
use std::net::SocketAddr;

/// Why [`Server::start`](crate::Server::start) (or [`Server::json_channel`](crate::Server::json_channel)) failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The listen address could not be bound.
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The async runtime could not be made.
    Runtime(std::io::Error),
    /// Foxglove's SDK refused (its server, or a channel).
    Sdk(foxglove::FoxgloveError),
    /// The bus refused the server's subscription.
    Bus(nerve_bus::BusError),
    /// The forwarding thread could not be started.
    Thread(std::io::Error),
    /// Mappings from a file ([`Options::mappings`](crate::Options::mappings)) name types or members that the
    /// types given do not have: every problem.
    Mappings(Vec<String>),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Bind { addr, source } => write!(f, "cannot listen on {addr}: {source}"),
            ServeError::Runtime(e) => write!(f, "cannot start the server's runtime: {e}"),
            ServeError::Sdk(e) => write!(f, "Foxglove SDK: {e}"),
            ServeError::Bus(e) => write!(f, "subscribing to the bus: {e}"),
            ServeError::Thread(e) => write!(f, "cannot start the forwarding thread: {e}"),
            ServeError::Mappings(problems) => write!(f, "the Foxglove schema mappings: {}", problems.join("; ")),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Bind { source, .. } => Some(source),
            ServeError::Runtime(e) | ServeError::Thread(e) => Some(e),
            ServeError::Sdk(e) => Some(e),
            ServeError::Bus(e) => Some(e),
            ServeError::Mappings(_) => None,
        }
    }
}
