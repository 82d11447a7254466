//! The `mpudpm://` provider: LCM's multi-port UDP multicast. Each channel has its own port (of `nports` from the
//! start port), so a process receives only the datagrams of ports its subscriptions need, not every datagram on the
//! group. A plain-name subscription joins its channel's port at once; a pattern joins the ports of the channels
//! that match it as they become known from publishers' announcements (nerve_udpm::multiport), so a pattern may miss
//! the first messages of a channel that another process has only just started publishing (as with liblcm). When
//! the last subscription that needs a port goes, the port's socket is closed (liblcm keeps it).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_udpm::multiport::{self, Update};
use nerve_udpm::{Config, Filter, KernelDrops, Receiver, RecvStats, Sender};

use super::own::OwnSender;
use super::thread::ReceiveThread;
use super::{Incoming, Provider, ProviderStats, Sink, StatsTurns, DRAIN_TURN};
use crate::error::{BatchError, BusError};
use crate::pattern::Pattern;
use crate::sys;
use crate::url::Url;

/// The options an `mpudpm://` URL takes: udpm's and `nports`.
pub const OPTIONS: &[&str] =
    &["ttl", "recv_buf_size", "iface", "interface", "max_message_mb", "gso", "transmit_only", "nports"];

/// How often a publisher re-announces its channels (liblcm: about every 5 s).
const ANNOUNCE_EVERY: Duration = Duration::from_secs(5);
/// How often the receive thread looks up to join new ports and announce.
const POLL: Duration = Duration::from_millis(50);

fn transport(e: nerve_udpm::UdpmError) -> BusError {
    BusError::Transport { provider: "mpudpm", source: Box::new(e) }
}

struct Publishing {
    sender: Sender,
    /// Channels this process publishes, with their ports: what it announces.
    channels: BTreeMap<String, u16>,
    last_announce: Option<Instant>,
}

impl Publishing {
    fn announce(&mut self, start: u16, nports: u16) -> Result<(), nerve_udpm::UdpmError> {
        let update = Update { nports, mapping: self.channels.iter().map(|(c, p)| (c.clone(), *p)).collect() };
        self.last_announce = Some(Instant::now());
        self.sender.send_to_port(start, multiport::UPDATE_CHANNEL, &update.encode())
    }
}

#[derive(Default)]
struct Interest {
    patterns: Vec<Pattern>,
    /// Every channel known to exist (announced by anyone, or published here), with its port.
    known: BTreeMap<String, u16>,
    ports: BTreeSet<u16>,
}

impl Interest {
    fn add_channel(&mut self, channel: &str, port: u16) {
        if self.known.insert(channel.to_owned(), port).is_none() && self.patterns.iter().any(|p| p.matches(channel)) {
            self.ports.insert(port);
        }
    }

    /// The ports `pattern` needs: those of the known channels it matches, and its own channel's if it names one.
    fn ports_of(&self, pattern: &Pattern, start: u16, nports: u16) -> Vec<u16> {
        let known = self.known.iter().filter(|(c, _)| pattern.matches(c)).map(|(_, p)| *p);
        known.chain(pattern.literal().map(|channel| multiport::port_of(channel, start, nports))).collect()
    }
}

struct Shared {
    start: u16,
    nports: u16,
    publishing: Mutex<Publishing>,
    interest: Mutex<Interest>,
    /// Sockets opened (bound and joined) by `subscribed`, waiting for the receive thread to take them. Opening them
    /// before `subscribed` returns means the kernel queues every datagram sent after subscribing.
    opened: Mutex<Vec<(u16, Receiver)>>,
    /// Every port a socket has been opened for.
    listening: Mutex<BTreeSet<u16>>,
    /// Each open socket's counters as the receive thread last copied them (without the kernel's drops), and its
    /// drop count, read when the provider's counters are.
    stats: Mutex<Vec<(RecvStats, Arc<KernelDrops>)>>,
    /// What the sockets closed so far had counted (so the provider's counters never go back).
    closed_stats: Mutex<ProviderStats>,
    /// Recognises this provider's own datagrams (the bus delivered them in-process already).
    own: OwnSender,
}

impl Shared {
    /// Opens a socket on each of `ports` not listened on yet.
    fn listen(&self, config: &Config, ports: impl IntoIterator<Item = u16>) -> Result<(), BusError> {
        let mut listening = self.listening.lock().expect("listening lock");
        for port in ports {
            if listening.insert(port) {
                let rx = Receiver::open_port(config, port).map_err(transport)?;
                self.opened.lock().expect("opened lock").push((port, rx));
            }
        }
        Ok(())
    }
}

/// Multi-port UDP multicast, LCM's `mpudpm` wire format.
pub struct Mpudpm {
    config: Config,
    shared: Arc<Shared>,
    published: AtomicU64,
    receive: Mutex<Option<ReceiveThread>>,
}

impl Mpudpm {
    /// The registry's constructor for `mpudpm://ADDR:PORT?options`.
    pub fn from_url(url: &Url) -> Result<Box<dyn Provider>, BusError> {
        Ok(Box::new(Mpudpm::open(super::udpm::udpm_config(url, OPTIONS)?)?))
    }

    /// Opens the send side; `config.ports` is the number of ports (LCM's default 500 when absent).
    pub fn open(mut config: Config) -> Result<Mpudpm, BusError> {
        let nports = *config.ports.get_or_insert(multiport::DEFAULT_PORTS);
        let sender = Sender::open(&config).map_err(transport)?;
        let shared = Arc::new(Shared {
            start: config.port,
            nports,
            publishing: Mutex::new(Publishing { sender, channels: BTreeMap::new(), last_announce: None }),
            interest: Mutex::new(Interest::default()),
            opened: Mutex::new(Vec::new()),
            listening: Mutex::new(BTreeSet::new()),
            stats: Mutex::new(Vec::new()),
            closed_stats: Mutex::new(ProviderStats::default()),
            own: OwnSender::default(),
        });
        Ok(Mpudpm { config, shared, published: AtomicU64::new(0), receive: Mutex::new(None) })
    }

    /// The ports this process listens on now (the start port is always one of them once receiving).
    pub fn joined_ports(&self) -> BTreeSet<u16> {
        let mut ports = self.shared.interest.lock().expect("interest lock").ports.clone();
        ports.insert(self.shared.start);
        ports
    }
}

impl Provider for Mpudpm {
    fn name(&self) -> &'static str {
        "mpudpm"
    }

    fn publish(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        let (start, nports) = (self.shared.start, self.shared.nports);
        let port = multiport::port_of(channel, start, nports);
        let internal = multiport::is_internal(channel);
        let new = !internal && !self.shared.publishing.lock().expect("publishing lock").channels.contains_key(channel);
        if new {
            // Our own pattern subscriptions hear our own channels, as on udpm: listen before the first send.
            let wanted = {
                let mut i = self.shared.interest.lock().expect("interest lock");
                i.add_channel(channel, port);
                i.ports.contains(&port)
            };
            if wanted {
                self.shared.listen(&self.config, [port])?;
            }
        }
        let mut p = self.shared.publishing.lock().expect("publishing lock");
        if new {
            // Announce before the data, as liblcm does, so remote patterns can join the port as early as possible.
            p.channels.insert(channel.to_owned(), port);
            p.announce(start, nports).map_err(transport)?;
        } else if !internal && p.last_announce.is_none_or(|t| t.elapsed() >= ANNOUNCE_EVERY) {
            p.announce(start, nports).map_err(transport)?;
        }
        p.sender.send_to_port(port, channel, data).map_err(transport)?;
        self.shared.own.note(&p.sender);
        drop(p);
        self.published.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn publish_batch(&self, batch: &[(&str, &[u8])]) -> Result<(), BatchError> {
        let (start, nports) = (self.shared.start, self.shared.nports);
        let mut i = 0;
        while i < batch.len() {
            let mut p = self.shared.publishing.lock().expect("publishing lock");
            // A run of messages on channels already published here goes out in one batched send, each datagram to
            // its channel's port; a channel published for the first time takes `publish`'s way (listening first,
            // announcing before its data).
            let end = batch[i..]
                .iter()
                .position(|(c, _)| !multiport::is_internal(c) && !p.channels.contains_key(*c))
                .map_or(batch.len(), |k| i + k);
            if end == i {
                drop(p);
                let (channel, data) = batch[i];
                self.publish(channel, data).map_err(|error| BatchError { sent: i, error })?;
                i += 1;
                continue;
            }
            let run = &batch[i..end];
            // As `publish` does before a message, once per run: re-announce when it is time.
            if run.iter().any(|(c, _)| !multiport::is_internal(c))
                && p.last_announce.is_none_or(|t| t.elapsed() >= ANNOUNCE_EVERY)
            {
                p.announce(start, nports).map_err(|e| BatchError { sent: i, error: transport(e) })?;
            }
            let result = p.sender.send_batch_to_ports(run, |c| multiport::port_of(c, start, nports));
            self.shared.own.note(&p.sender);
            drop(p);
            let sent = result.as_ref().map_or_else(|e| e.sent, |()| run.len());
            self.published.fetch_add(sent as u64, Ordering::Relaxed);
            if let Err(e) = result {
                return Err(BatchError { sent: i + e.sent, error: transport(e.error) });
            }
            i = end;
        }
        Ok(())
    }

    fn subscribed(&self, pattern: &Pattern) -> Result<(), BusError> {
        let (start, nports) = (self.shared.start, self.shared.nports);
        let ports = {
            let mut i = self.shared.interest.lock().expect("interest lock");
            let ports = i.ports_of(pattern, start, nports);
            i.ports.extend(ports.iter().copied());
            i.patterns.push(pattern.clone());
            ports
        };
        self.shared.listen(&self.config, ports)?;
        // Ask publishers to announce their channels, so that patterns find them without waiting for the next round.
        let mut p = self.shared.publishing.lock().expect("publishing lock");
        p.sender.send_to_port(start, multiport::REQUEST_CHANNEL, multiport::REQUEST_PAYLOAD).map_err(transport)?;
        self.shared.own.note(&p.sender);
        Ok(())
    }

    fn unsubscribed(&self, pattern: &Pattern) {
        let (start, nports) = (self.shared.start, self.shared.nports);
        let mut i = self.shared.interest.lock().expect("interest lock");
        let Some(at) = i.patterns.iter().position(|p| p.as_str() == pattern.as_str()) else { return };
        i.patterns.remove(at);
        // The receive thread closes the sockets of ports no longer here (never the start port's).
        let ports: BTreeSet<u16> = i.patterns.iter().flat_map(|p| i.ports_of(p, start, nports)).collect();
        i.ports = ports;
    }

    fn start(&self, sink: Arc<dyn Sink>) -> Result<(), BusError> {
        let mut slot = self.receive.lock().expect("receive lock");
        if slot.is_some() {
            return Ok(());
        }
        self.shared.listen(&self.config, [self.shared.start])?;
        let (shared, config) = (Arc::clone(&self.shared), self.config.clone());
        *slot = Some(ReceiveThread::spawn("mpudpm", "nerve-mpudpm-rx", move |stop| {
            receive_loop(&config, &shared, &sink, stop)
        })?);
        Ok(())
    }

    fn has_receive_thread(&self) -> bool {
        true
    }

    fn stats(&self) -> ProviderStats {
        let mut s = *self.shared.closed_stats.lock().expect("stats lock");
        for (counters, drops) in self.shared.stats.lock().expect("stats lock").iter() {
            add_socket_stats(&mut s, &RecvStats { kernel_dropped: drops.total(), ..*counters });
        }
        s.published = self.published.load(Ordering::Relaxed);
        s.own_dropped = self.shared.own.dropped();
        s
    }
}

/// Adds one socket's counters to a provider's.
fn add_socket_stats(s: &mut ProviderStats, r: &RecvStats) {
    s.received += r.messages;
    s.malformed += r.malformed_total() + r.reassembly.dropped_inconsistent;
    s.lost += r.reassembly.dropped_incomplete + r.reassembly.dropped_too_large;
    s.kernel_dropped += r.kernel_dropped;
    s.turned_away += r.unwanted;
}

/// Closes the sockets of ports no subscription needs any more (the start port's stays: announcements come there),
/// keeping their counters. Holding `listening` while deciding means a port that a new subscription wants again is
/// either kept or closed before that subscription opens a socket of its own for it.
fn close_unwanted(shared: &Shared, receivers: &mut HashMap<u16, Receiver>, mut filter: impl FnMut() -> Filter) {
    let mut listening = shared.listening.lock().expect("listening lock");
    receivers.extend(shared.opened.lock().expect("opened lock").drain(..).map(|(port, mut rx)| {
        rx.set_filter(filter());
        (port, rx)
    }));
    let wanted = shared.interest.lock().expect("interest lock").ports.clone();
    let unwanted: Vec<u16> = receivers.keys().copied().filter(|p| *p != shared.start && !wanted.contains(p)).collect();
    if unwanted.is_empty() {
        return;
    }
    for port in unwanted {
        if let Some(rx) = receivers.remove(&port) {
            add_socket_stats(&mut shared.closed_stats.lock().expect("stats lock"), &rx.stats());
            listening.remove(&port);
        }
    }
    // The closed sockets' counters are in `closed_stats` now, not to be counted twice.
    copy_counters(shared, receivers);
}

/// Publishes the open sockets' counters for `Provider::stats` (no system call: the kernel's drops are read there).
fn copy_counters(shared: &Shared, receivers: &HashMap<u16, Receiver>) {
    *shared.stats.lock().expect("stats lock") =
        receivers.values().map(|rx| (rx.counters(), rx.kernel_drops())).collect();
}

fn receive_loop(config: &Config, shared: &Arc<Shared>, sink: &Arc<dyn Sink>, stop: &AtomicBool) {
    // As on udpm: our own messages (the bus delivered them in-process already) and channels no subscription matches
    // are turned away before they are copied or reassembled; other channels share a port with the wanted ones.
    // The protocol's own channels always pass.
    let filter = || -> Filter {
        let (shared, sink) = (Arc::clone(shared), Arc::clone(sink));
        Box::new(move |channel, from| {
            multiport::is_internal(channel) || (!shared.own.is_own(from) && sink.wants(channel))
        })
    };

    let mut receivers: HashMap<u16, Receiver> = HashMap::new();
    // While callbacks wait to run on this thread, poll without blocking (see `Sink::drained`).
    let mut callbacks_waiting = false;
    let mut stats_turns = StatsTurns::default();
    while !stop.load(Ordering::Relaxed) {
        // Join the ports of channels that announcements have made known to match a pattern, then take the sockets
        // opened for us.
        let wanted = shared.interest.lock().expect("interest lock").ports.clone();
        if let Err(err) = shared.listen(config, wanted) {
            // That port is not listened on (it is not tried again); the rest go on.
            sink.report(err);
        }
        close_unwanted(shared, &mut receivers, filter);
        {
            let mut p = shared.publishing.lock().expect("publishing lock");
            if !p.channels.is_empty() && p.last_announce.is_some_and(|t| t.elapsed() >= ANNOUNCE_EVERY) {
                let _ = p.announce(shared.start, shared.nports);
            }
        }
        let ports: Vec<u16> = receivers.keys().copied().collect();
        let mut ready: Vec<u16> = Vec::new();
        let wait = if callbacks_waiting { Duration::ZERO } else { POLL };
        if sys::poll_readable(ports.iter().map(|p| receivers[p].socket()), wait, |i| ready.push(ports[i])).is_err() {
            continue;
        }
        for port in ready {
            let rx = receivers.get_mut(&port).expect("polled receivers exist");
            let mut turn = 0;
            // Woken by poll: the first read must happen; after it, read only while the socket may hold more.
            let mut got = rx.recv(Some(Duration::ZERO));
            while let Ok(Some(m)) = got {
                turn += 1;
                if turn == DRAIN_TURN {
                    turn = 0;
                    sink.drained();
                }
                if m.channel == multiport::UPDATE_CHANNEL {
                    if let Ok(update) = Update::decode(&m.payload) {
                        let mut i = shared.interest.lock().expect("interest lock");
                        for (channel, port) in update.mapping {
                            i.add_channel(&channel, port);
                        }
                    }
                } else if m.channel == multiport::REQUEST_CHANNEL {
                    let mut p = shared.publishing.lock().expect("publishing lock");
                    if !p.channels.is_empty() {
                        let _ = p.announce(shared.start, shared.nports);
                    }
                } else if !multiport::is_internal(&m.channel) {
                    // not our own: the filter turned those away
                    sink.deliver(Incoming { channel: m.channel, data: m.payload, recv_utime: m.recv_utime });
                }
                got = rx.recv_queued();
            }
            if let Err(e) = got {
                // Not expected on a bound UDP socket; the other ports go on, and so does this one's next read.
                sink.report(transport(e));
            }
        }
        callbacks_waiting = sink.drained();
        if stats_turns.due(callbacks_waiting) {
            copy_counters(shared, &receivers);
        }
    }
}
