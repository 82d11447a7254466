//! The forwarding thread: reads every bus channel through one drop-oldest queue, advertises each channel to the
//! SDK when its first message (or a message of another type) arrives, and transcodes to JSON only the messages of
//! channels some client subscribed to.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use foxglove::{Context, PartialMetadata, RawChannel, Schema};
use nerve_bus::{Bus, Overflow, Received, Subscriber};
use nerve_log::export::{json_schema, message_json, raw_schema, Decoder, RAW_SCHEMA_NAME};
use nerve_types::Registry;

use crate::ServeError;

/// What the server has done with the bus's traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Messages taken from the bus.
    pub received: u64,
    /// Messages sent to subscribed clients (transcoded once, whatever the number of clients).
    pub sent: u64,
    /// Of those, messages no type decoded (sent as base64 bytes).
    pub undecoded: u64,
    /// Messages of channels nobody subscribed to (counted, not decoded).
    pub unsubscribed: u64,
    /// Messages the server's bus queue dropped because the server fell behind (the oldest go).
    pub bus_queue_dropped: u64,
    /// Channels advertised so far (a channel whose type changed counts again).
    pub advertised: u64,
    /// Clients connected now.
    pub clients: u64,
    /// Messages dropped for clients that did not keep up, all clients so far (see [`crate::Server::clients`]).
    pub client_dropped: u64,
}

#[derive(Default)]
struct Counters {
    received: AtomicU64,
    sent: AtomicU64,
    undecoded: AtomicU64,
    unsubscribed: AtomicU64,
    advertised: AtomicU64,
}

/// The thread and what it shares.
pub(crate) struct Forwarder {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
    subscriber: Arc<Subscriber>,
}

/// Messages taken from the queue per wake-up (the queue is drained in batches so an idle wait costs one wake-up).
const BATCH: usize = 256;

impl Forwarder {
    pub(crate) fn start(
        bus: &Bus,
        registry: Option<Registry>,
        context: Arc<Context>,
        capacity: usize,
    ) -> Result<Forwarder, ServeError> {
        let subscriber = Arc::new(bus.subscriber(".*", capacity, Overflow::DropOldest).map_err(ServeError::Bus)?);
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let mut state = State { decoder: Decoder::new(registry), context, channels: HashMap::new(), json: Vec::new() };
        let (sub, s, c) = (Arc::clone(&subscriber), Arc::clone(&stop), Arc::clone(&counters));
        let thread = std::thread::Builder::new()
            .name("nerve-foxglove-fwd".into())
            .spawn(move || {
                while !s.load(Ordering::Acquire) {
                    let Some(first) = sub.recv_timeout(Duration::from_millis(50)) else { continue };
                    state.forward(&first, &c);
                    for _ in 1..BATCH {
                        match sub.try_recv() {
                            Some(m) => state.forward(&m, &c),
                            None => break,
                        }
                    }
                }
            })
            .map_err(ServeError::Thread)?;
        Ok(Forwarder { stop, thread: Some(thread), counters, subscriber })
    }

    pub(crate) fn stats(&self) -> ServerStats {
        let c = &self.counters;
        ServerStats {
            received: c.received.load(Ordering::Relaxed),
            sent: c.sent.load(Ordering::Relaxed),
            undecoded: c.undecoded.load(Ordering::Relaxed),
            unsubscribed: c.unsubscribed.load(Ordering::Relaxed),
            bus_queue_dropped: self.subscriber.stats().dropped_overflow,
            advertised: c.advertised.load(Ordering::Relaxed),
            clients: 0,
            client_dropped: 0,
        }
    }

    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A bus channel as advertised: the fingerprint its messages had when it was advertised.
struct Advertised {
    fingerprint: Option<u64>,
    channel: Arc<RawChannel>,
}

struct State {
    decoder: Decoder,
    context: Arc<Context>,
    channels: HashMap<String, Advertised>,
    json: Vec<u8>,
}

impl State {
    fn forward(&mut self, msg: &Received, counters: &Counters) {
        counters.received.fetch_add(1, Ordering::Relaxed);
        let fingerprint = msg.data.get(..8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")));
        let current = self.channels.get(&msg.channel).filter(|a| a.fingerprint == fingerprint);
        let channel = match current {
            Some(a) => Arc::clone(&a.channel),
            None => match self.advertise(&msg.channel, fingerprint) {
                Some(ch) => {
                    counters.advertised.fetch_add(1, Ordering::Relaxed);
                    ch
                }
                None => return,
            },
        };
        if !channel.has_sinks() {
            counters.unsubscribed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.json.clear();
        if message_json(&self.decoder, &msg.data, &mut self.json).is_none() {
            counters.undecoded.fetch_add(1, Ordering::Relaxed);
        }
        let log_time = u64::try_from(msg.recv_utime).unwrap_or(0).saturating_mul(1000);
        channel.log_with_meta(&self.json, PartialMetadata { log_time: Some(log_time) });
        counters.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// Advertises `name` for messages of `fingerprint` (replacing an advertisement for another type).
    fn advertise(&mut self, name: &str, fingerprint: Option<u64>) -> Option<Arc<RawChannel>> {
        if let Some(old) = self.channels.remove(name) {
            old.channel.close();
        }
        let st = fingerprint.and_then(|f| self.decoder.registry()?.lookup(f));
        let schema = match (st, self.decoder.registry()) {
            (Some(st), Some(reg)) => {
                Schema::new(st.name.full(), "jsonschema", json_schema(reg.schema(), st).into_bytes())
            }
            _ => Schema::new(RAW_SCHEMA_NAME, "jsonschema", raw_schema().into_bytes()),
        };
        let mut builder = self.context.channel_builder(name).message_encoding("json").schema(schema);
        if let Some(f) = fingerprint {
            builder = builder.add_metadata("fingerprint", &format!("0x{f:016x}"));
        }
        // The SDK refuses only a topic already taken with another schema, which `remove` above rules out.
        let channel = builder.build_raw().ok()?;
        self.channels.insert(name.to_owned(), Advertised { fingerprint, channel: Arc::clone(&channel) });
        Some(channel)
    }
}
