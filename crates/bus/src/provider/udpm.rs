//! The `udpm://` provider: nerve-udpm's sender, and a receive thread that hands whole messages to the bus, except
//! the ones this provider sent itself (multicast loops them back; the bus delivered them in-process already).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use nerve_udpm::{Config, KernelDrops, Receiver, RecvStats, Sender};

use super::own::OwnSender;
use super::thread::ReceiveThread;
use super::turn::Turn;
use super::{Incoming, Provider, ProviderStats, Sink, StatsTurns, DRAIN_TURN};
use crate::error::{BatchError, BusError};
use crate::url::Url;

/// The options a `udpm://` URL takes (`transmit_only` is LCM's obsolete one, accepted and ignored as LCM does).
pub const OPTIONS: &[&str] = &["ttl", "recv_buf_size", "iface", "interface", "max_message_mb", "gso", "transmit_only"];

/// How long the self-test may take before receiving is refused (liblcm waits up to 10 s).
const SELF_TEST_WITHIN: Duration = Duration::from_secs(3);

/// How often the receive thread looks up from the socket to see whether it should stop.
const POLL: Duration = Duration::from_millis(100);

fn transport(e: nerve_udpm::UdpmError) -> BusError {
    BusError::Transport { provider: "udpm", source: Box::new(e) }
}

/// The nerve-udpm configuration of a udpm or mpudpm URL, whose provider takes the options `known`.
pub(crate) fn udpm_config(url: &Url, known: &[&str]) -> Result<Config, BusError> {
    let (config, unknown) = Config::from_url_parts(&url.network, &url.options)
        .map_err(|e| BusError::Config { url: url.to_string(), reason: e.to_string() })?;
    match unknown.first() {
        Some(option) => Err(url.unknown_option(option, known).into()),
        None => Ok(config),
    }
}

/// UDP multicast, LCM's wire format.
pub struct Udpm {
    config: Config,
    sender: Mutex<Sender>,
    published: AtomicU64,
    receive: Mutex<Option<ReceiveThread>>,
    /// The receive thread's counters as it last copied them (without the kernel's drops, read when asked for).
    recv_stats: Arc<Mutex<RecvStats>>,
    /// The receive socket's drop count, from `start` on.
    kernel_drops: OnceLock<Arc<KernelDrops>>,
    /// The receiver, read by the receive thread or by a `handle()` caller (`Provider::receive_here`), from `start`
    /// on.
    reading: OnceLock<Arc<Reading>>,
    own: Arc<OwnSender>,
}

/// What either reader of the socket needs.
struct Reading {
    turn: Turn<Receiver>,
    sink: Arc<dyn Sink>,
    /// The receiver's counters as last copied (without the kernel's drops, read when asked for).
    stats: Arc<Mutex<RecvStats>>,
}

impl Reading {
    fn deliver(&self, m: nerve_udpm::Message) {
        self.sink.deliver(Incoming { channel: m.channel, data: m.payload, recv_utime: m.recv_utime })
    }
}

impl Udpm {
    /// Opens the send side now (so a missing multicast route is reported at creation, as LCM does); the receive
    /// side opens on `start`.
    pub fn open(config: Config) -> Result<Udpm, BusError> {
        let sender = Sender::open(&config).map_err(transport)?;
        Ok(Udpm {
            config,
            sender: Mutex::new(sender),
            published: AtomicU64::new(0),
            receive: Mutex::new(None),
            recv_stats: Arc::new(Mutex::new(RecvStats::default())),
            kernel_drops: OnceLock::new(),
            reading: OnceLock::new(),
            own: Arc::new(OwnSender::default()),
        })
    }

    /// The registry's constructor for `udpm://ADDR:PORT?options`: an unknown option (`nports` too, which only
    /// mpudpm takes) is an error.
    pub fn from_url(url: &Url) -> Result<Box<dyn Provider>, BusError> {
        let config = udpm_config(url, OPTIONS)?;
        if config.ports.is_some() {
            return Err(url.unknown_option("nports", OPTIONS).into());
        }
        Ok(Box::new(Udpm::open(config)?))
    }

    /// The receiver's detailed counters (malformed datagrams by reason, reassembly).
    pub fn recv_stats(&self) -> RecvStats {
        let mut stats = *self.recv_stats.lock().expect("stats lock");
        if let Some(drops) = self.kernel_drops.get() {
            stats.kernel_dropped = drops.total();
        }
        stats
    }
}

impl Provider for Udpm {
    fn name(&self) -> &'static str {
        "udpm"
    }

    fn publish(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        let mut sender = self.sender.lock().expect("sender lock");
        sender.send(channel, data).map_err(transport)?;
        self.own.note(&sender);
        drop(sender);
        self.published.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn publish_batch(&self, batch: &[(&str, &[u8])]) -> Result<(), BatchError> {
        let mut sender = self.sender.lock().expect("sender lock");
        let result = sender.send_batch(batch);
        self.own.note(&sender);
        drop(sender);
        let sent = result.as_ref().map_or_else(|e| e.sent, |()| batch.len());
        self.published.fetch_add(sent as u64, Ordering::Relaxed);
        result.map_err(|e| BatchError { sent: e.sent, error: transport(e.error) })
    }

    fn start(&self, sink: Arc<dyn Sink>) -> Result<(), BusError> {
        let mut slot = self.receive.lock().expect("receive lock");
        if slot.is_some() {
            return Ok(());
        }
        let mut rx = Receiver::open(&self.config).map_err(transport)?;
        // As liblcm does when it sets up receiving: prove that what we send comes back, so a firewall or a missing
        // loopback shows up now as an error, not later as silence.
        {
            let mut sender = self.sender.lock().expect("sender lock");
            let own = &self.own;
            rx.self_test(&mut sender, SELF_TEST_WITHIN, |m| {
                // The self-test sends before this first check, so the send socket's port is known by now.
                if !own.is_own(m.sender) {
                    sink.deliver(Incoming { channel: m.channel, data: m.payload, recv_utime: m.recv_utime })
                }
            })
            .map_err(transport)?;
            own.note(&sender);
        }
        // Our own messages (the bus delivered them in-process already) and channels no subscription matches are
        // turned away before they are copied or reassembled.
        let (own, wants) = (Arc::clone(&self.own), Arc::clone(&sink));
        rx.set_filter(Box::new(move |channel, from| !own.is_own(from) && wants.wants(channel)));
        let drops = rx.kernel_drops();
        let reading = Arc::new(Reading { turn: Turn::new(rx), sink, stats: Arc::clone(&self.recv_stats) });
        let shared = Arc::clone(&reading);
        *slot = Some(ReceiveThread::spawn("udpm", "nerve-udpm-rx", move |stop_flag| {
            let Reading { turn, sink, stats } = &*shared;
            // While callbacks wait to run here, do not block on the socket: alternate between draining it and
            // a turn of callbacks (`Sink::drained`).
            let mut callbacks_waiting = false;
            let mut stats_turns = StatsTurns::default();
            // Each turn holds the receiver; between turns a `handle()` caller may have it (`Turn`).
            while let Some(mut rx) = turn.thread(stop_flag) {
                let wait = if callbacks_waiting { Duration::ZERO } else { POLL };
                // Back from the wait whenever the socket stirs, this process's own datagrams included: an inline
                // dispatcher then runs the callbacks of their in-process copies (`drains_after_own_publications`),
                // and a caller waiting for the socket gets it after this turn rather than after POLL.
                let mut got = rx.recv_until_activity(Some(wait));
                if !callbacks_waiting {
                    // The first message after an idle wait runs its callbacks at once, before another read of the
                    // socket: that read (empty, in the usual case) would only delay the reply a round trip waits for.
                    // (More callbacks waiting, if any, run after the drain below.)
                    if let Ok(Some(m)) = got {
                        shared.deliver(m);
                        sink.drained();
                        got = rx.recv_queued();
                    }
                }
                let mut delivered = 0;
                while let Ok(Some(m)) = got {
                    shared.deliver(m);
                    delivered += 1;
                    if delivered == DRAIN_TURN {
                        delivered = 0;
                        sink.drained();
                    }
                    // Not a read that would find the socket empty: the wait that follows returns at once if
                    // something came meanwhile.
                    got = rx.recv_queued();
                }
                if let Err(e) = got {
                    // A receive error other than a timeout is not expected on a bound UDP socket; report it
                    // once and stop rather than spin.
                    *stats.lock().expect("stats lock") = rx.counters();
                    sink.receive_stopped(transport(e));
                    break;
                }
                callbacks_waiting = sink.drained();
                if stats_turns.due(callbacks_waiting) {
                    *stats.lock().expect("stats lock") = rx.counters();
                }
                drop(rx);
                if turn.is_wanted() {
                    // A caller that found the socket taken may be waiting for it: it is free now.
                    sink.reader_free();
                }
            }
        })?);
        let _ = self.reading.set(reading);
        // Only a start that got its receive thread running gets here, and only once (the slot is taken now).
        let _ = self.kernel_drops.set(drops);
        Ok(())
    }

    fn has_receive_thread(&self) -> bool {
        true
    }

    fn receive_here(&self, until: Option<Instant>, has_work: &dyn Fn() -> bool) -> bool {
        let Some(reading) = self.reading.get() else { return false };
        let Some(mut rx) = reading.turn.caller() else { return false };
        if has_work() {
            return true;
        }
        // At most POLL at a time, as the receive thread: the caller looks at its deadline and the bus in between.
        let wait = until.map_or(POLL, |d| d.saturating_duration_since(Instant::now()).min(POLL));
        let mut got = rx.recv_until_activity(Some(wait));
        while let Ok(Some(m)) = got {
            reading.deliver(m);
            got = rx.recv_queued();
        }
        if let Err(e) = got {
            // The receive thread, when it reads again, meets the same error and stops; this caller hears of it now.
            reading.sink.report(transport(e));
        }
        *reading.stats.lock().expect("stats lock") = rx.counters();
        drop(rx);
        // Another caller may wait for the socket.
        reading.sink.reader_free();
        true
    }

    fn receive_here_free(&self) -> bool {
        self.reading.get().is_some_and(|r| r.turn.is_free())
    }

    fn stats(&self) -> ProviderStats {
        let r = self.recv_stats();
        ProviderStats {
            published: self.published.load(Ordering::Relaxed),
            received: r.messages,
            malformed: r.malformed_total() + r.reassembly.dropped_inconsistent,
            lost: r.reassembly.dropped_incomplete + r.reassembly.dropped_too_large,
            kernel_dropped: r.kernel_dropped,
            unseen: r.unseen,
            own_dropped: self.own.dropped(),
            turned_away: r.unwanted,
        }
    }
}
