//! [`OwnSender`]: recognises the datagrams a udpm or mpudpm provider sent itself, when multicast loops them back.
//!
//! A datagram is ours when it comes from our send socket: the same UDP port, and an IP address of this host (so a
//! socket of the same port number on another host is not mistaken for ours; two sockets of one host never share an
//! ephemeral port, the send socket does not set SO_REUSEADDR). Whether an address belongs to this host is asked of
//! the kernel once per address (binding a socket to it succeeds only for a local address) and remembered.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::Mutex;

use nerve_udpm::Sender;

/// How many distinct source addresses are remembered as local or not (a bound: traffic from many hosts must not
/// grow the list without limit; beyond it the kernel is asked again).
const REMEMBERED: usize = 64;

/// The send socket's port, and which source addresses are this host's.
#[derive(Default)]
pub(crate) struct OwnSender {
    /// 0 until the socket has sent (an unbound UDP socket gets its port on its first send).
    port: AtomicU16,
    local: Mutex<Vec<(IpAddr, bool)>>,
    dropped: AtomicU64,
}

impl OwnSender {
    /// Records the send socket's port, once it has one (call after each send until it does).
    pub(crate) fn note(&self, sender: &Sender) {
        if self.port.load(Ordering::Relaxed) == 0 {
            if let Ok(a) = sender.local_addr() {
                self.port.store(a.port(), Ordering::Relaxed);
            }
        }
    }

    /// Whether a message from `from` is one this provider sent; counts it if so.
    pub(crate) fn is_own(&self, from: SocketAddr) -> bool {
        let port = self.port.load(Ordering::Relaxed);
        if port == 0 || from.port() != port || !self.is_local(from.ip()) {
            return false;
        }
        self.dropped.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// How many of its own messages were recognised (and so not delivered).
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn is_local(&self, ip: IpAddr) -> bool {
        let mut known = self.local.lock().expect("own address lock");
        if let Some((_, local)) = known.iter().find(|(a, _)| *a == ip) {
            return *local;
        }
        let local = ip.is_loopback() || UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok();
        if known.len() >= REMEMBERED {
            known.remove(0);
        }
        known.push((ip, local));
        local
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_port_on_our_host() {
        let own = OwnSender::default();
        let here: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        assert!(!own.is_own(here), "nothing is ours before we have sent");
        own.port.store(40001, Ordering::Relaxed);
        assert!(own.is_own(here));
        assert!(!own.is_own("127.0.0.1:40002".parse().unwrap()), "another socket of this host");
        // TEST-NET-3 is never assigned to a host: the same port there is someone else's socket.
        assert!(!own.is_own("203.0.113.7:40001".parse().unwrap()));
        assert_eq!(own.dropped(), 1);
    }
}
