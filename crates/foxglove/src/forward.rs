//! The forwarding thread: reads every bus channel through one drop-oldest queue, advertises each channel to the
//! SDK when its first message (or a message of another type) arrives, and transcodes to JSON only the messages of
//! channels some client subscribed to. While a log plays, it also stamps messages with the log's time and
//! broadcasts that time (the protocol's `time` capability), so Foxglove's timeline follows the log.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use foxglove::{Context, PartialMetadata, RawChannel, Schema, WebSocketServerHandle};
use nerve_bus::provider::file::Playback;
use nerve_bus::{Bus, Overflow, Received, Subscriber};
use nerve_log::export::{json_schema, message_json, raw_schema, Decoded, Decoder, RAW_SCHEMA_NAME};
use nerve_types::Registry;

use crate::mapping::{Mapping, Mappings, Out};

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
    /// Messages sent in a Foxglove well-known schema on mapped channels (see [`crate::Server::mapped`]).
    pub mapped_sent: u64,
    /// Messages of mapped channels that could not be converted (inconsistent or unmappable), sent raw only.
    pub mapped_refused: u64,
}

/// One mapped channel: a bus channel sent a second time in a Foxglove well-known schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedStats {
    /// The bus channel.
    pub channel: String,
    /// The topic it is advertised on in the well-known schema (`<channel>/foxglove.RawImage`, ...).
    pub topic: String,
    /// The schema's name (`foxglove.RawImage`, ...).
    pub schema: &'static str,
    /// The LCM type mapped.
    pub lcm_type: String,
    /// Messages converted and sent.
    pub sent: u64,
    /// Messages that could not be converted (sent raw only).
    pub refused: u64,
    /// Why the last refused message was refused.
    pub last_refusal: Option<String>,
}

#[derive(Default)]
struct Counters {
    received: AtomicU64,
    sent: AtomicU64,
    undecoded: AtomicU64,
    unsubscribed: AtomicU64,
    advertised: AtomicU64,
    mapped_sent: AtomicU64,
    mapped_refused: AtomicU64,
    // Per bus channel; touched once per converted message (uncontended but for `Server::mapped`).
    mapped: Mutex<BTreeMap<String, MappedStats>>,
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

/// A played log's time is broadcast at most this often while messages flow (Foxglove redraws its timeline at
/// about this rate; a time message per bus message would cost each client a frame per message)...
const TIME_EVERY: Duration = Duration::from_millis(20);
/// ...and repeated this often when nothing flows (the log paused or ended), for clients that connected since.
const TIME_AGAIN: Duration = Duration::from_secs(1);

/// The clock of a log being played: the playback (which maps a message's wall-clock stamp back to the log's
/// time) and the server that broadcasts that time to its clients.
pub(crate) struct LogClock {
    pub(crate) playback: Playback,
    pub(crate) sdk: Arc<WebSocketServerHandle>,
}

/// What a [`LogClock`] has told the clients: the newest log time seen (ns), and when and what was last broadcast.
struct Told {
    clock: LogClock,
    newest: Option<u64>,
    last: Option<(Instant, u64)>,
}

impl Told {
    /// Broadcasts the newest log time if it changed and [`TIME_EVERY`] has passed, or [`TIME_AGAIN`] has.
    fn tell(&mut self) {
        let Some(newest) = self.newest else { return };
        let due = match self.last {
            None => true,
            Some((at, told)) => {
                let since = at.elapsed();
                (told != newest && since >= TIME_EVERY) || since >= TIME_AGAIN
            }
        };
        if due {
            self.clock.sdk.broadcast_time(newest);
            self.last = Some((Instant::now(), newest));
        }
    }
}

impl Forwarder {
    pub(crate) fn start(
        bus: &Bus,
        registry: Option<Registry>,
        mappings: Mappings,
        context: Arc<Context>,
        capacity: usize,
        clock: Option<LogClock>,
    ) -> Result<Forwarder, ServeError> {
        let subscriber = Arc::new(bus.subscriber(".*", capacity, Overflow::DropOldest).map_err(ServeError::Bus)?);
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let mut state = State {
            decoder: Decoder::new(registry),
            mappings,
            context,
            channels: HashMap::new(),
            json: Vec::new(),
            told: clock.map(|clock| Told { clock, newest: None, last: None }),
        };
        let (sub, s, c) = (Arc::clone(&subscriber), Arc::clone(&stop), Arc::clone(&counters));
        let thread = std::thread::Builder::new()
            .name("nerve-foxglove-fwd".into())
            .spawn(move || {
                while !s.load(Ordering::Acquire) {
                    let Some(first) = sub.recv_timeout(Duration::from_millis(50)) else {
                        if let Some(told) = &mut state.told {
                            told.tell();
                        }
                        continue;
                    };
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
            mapped_sent: c.mapped_sent.load(Ordering::Relaxed),
            mapped_refused: c.mapped_refused.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn mapped(&self) -> Vec<MappedStats> {
        self.counters.mapped.lock().map(|m| m.values().cloned().collect()).unwrap_or_default()
    }

    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A bus channel as advertised: the fingerprint its messages had when it was advertised, and its mapped channel.
struct Advertised {
    fingerprint: Option<u64>,
    channel: Arc<RawChannel>,
    mapped: Option<MappedChannel>,
}

/// The second advertisement of a channel whose type has a mapping.
struct MappedChannel {
    mapping: Mapping,
    out: Out,
    channel: Arc<RawChannel>,
}

struct State {
    decoder: Decoder,
    mappings: Mappings,
    context: Arc<Context>,
    channels: HashMap<String, Advertised>,
    json: Vec<u8>,
    told: Option<Told>,
}

impl State {
    fn forward(&mut self, msg: &Received, counters: &Counters) {
        counters.received.fetch_add(1, Ordering::Relaxed);
        let log_time = self.log_time(msg);
        let fingerprint = msg.data.get(..8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")));
        let current = self.channels.get(&msg.channel).is_some_and(|a| a.fingerprint == fingerprint);
        if !current {
            if !self.advertise(&msg.channel, fingerprint, msg, counters) {
                return;
            }
            counters.advertised.fetch_add(1, Ordering::Relaxed);
        }
        let advertised = self.channels.get(&msg.channel).expect("advertised above");
        let raw = advertised.channel.has_sinks();
        let mapped = advertised.mapped.as_ref().is_some_and(|m| m.channel.has_sinks());
        if !raw && !mapped {
            counters.unsubscribed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if raw {
            let channel = Arc::clone(&advertised.channel);
            self.json.clear();
            if message_json(&self.decoder, &msg.data, &mut self.json).is_none() {
                counters.undecoded.fetch_add(1, Ordering::Relaxed);
            }
            channel.log_with_meta(&self.json, PartialMetadata { log_time: Some(log_time) });
            counters.sent.fetch_add(1, Ordering::Relaxed);
        }
        if mapped {
            self.forward_mapped(msg, log_time, counters);
        }
    }

    /// The time (ns) `msg` is stamped with: its receive time, or while a log plays the log's time of it, which
    /// is then also broadcast (whether or not anyone subscribed to `msg`'s channel: the timeline moves anyway).
    fn log_time(&mut self, msg: &Received) -> u64 {
        let utime = match &self.told {
            Some(told) => told.clock.playback.log_utime(msg.recv_utime).unwrap_or(msg.recv_utime),
            None => msg.recv_utime,
        };
        let ns = u64::try_from(utime).unwrap_or(0).saturating_mul(1000);
        if let Some(told) = &mut self.told {
            told.newest = Some(ns);
            told.tell();
        }
        ns
    }

    /// Converts `msg` for its channel's mapped channel and sends it there, or counts why not.
    fn forward_mapped(&mut self, msg: &Received, log_time: u64, counters: &Counters) {
        let advertised = self.channels.get_mut(&msg.channel).expect("advertised");
        let Some(mapped) = advertised.mapped.as_mut() else { return };
        let converted = match self.decoder.decode(&msg.data) {
            // A played log's time stands for the receive time, as it does for the raw view.
            Decoded::Value(_, value) => mapped.mapping.convert(&value, &msg.channel, (log_time / 1000) as i64),
            Decoded::Raw(why) => Err(crate::mapping::Refusal(why)),
        };
        let mut stats = counters.mapped.lock().unwrap_or_else(|e| e.into_inner());
        let entry = stats.entry(msg.channel.clone()).or_insert_with(|| mapped_stats(&msg.channel, mapped));
        match converted {
            Ok(c) => {
                if c.out != mapped.out {
                    // An image channel that turned from raw pixels to JPEG (or back): the other schema's topic.
                    match advertise_mapped(&self.context, &msg.channel, &mapped.mapping, c.out) {
                        Some(channel) => {
                            mapped.channel.close();
                            mapped.channel = channel;
                            mapped.out = c.out;
                            *entry = MappedStats {
                                sent: entry.sent,
                                refused: entry.refused,
                                ..mapped_stats(&msg.channel, mapped)
                            };
                            counters.advertised.fetch_add(1, Ordering::Relaxed);
                        }
                        None => return,
                    }
                }
                mapped.channel.log_with_meta(&c.bytes, PartialMetadata { log_time: Some(log_time) });
                entry.sent += 1;
                counters.mapped_sent.fetch_add(1, Ordering::Relaxed);
            }
            Err(why) => {
                entry.refused += 1;
                entry.last_refusal = Some(why.0);
                counters.mapped_refused.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Advertises `name` for messages of `fingerprint` (replacing an advertisement for another type), and its
    /// mapped channel if its type has a mapping; `first` is the message that made it (an image mapping's first
    /// message says which of its schemas to advertise). False if the SDK refused.
    fn advertise(&mut self, name: &str, fingerprint: Option<u64>, first: &Received, counters: &Counters) -> bool {
        if let Some(old) = self.channels.remove(name) {
            old.channel.close();
            if let Some(m) = old.mapped {
                m.channel.close();
            }
            if let Ok(mut stats) = counters.mapped.lock() {
                stats.remove(name);
            }
        }
        let st = fingerprint.and_then(|f| self.decoder.registry()?.lookup(f));
        let schema = match (st, self.decoder.registry()) {
            (Some(st), Some(reg)) => {
                Schema::new(st.name.full(), "jsonschema", json_schema(reg.schema(), st).into_bytes())
            }
            _ => Schema::new(RAW_SCHEMA_NAME, "jsonschema", raw_schema().into_bytes()),
        };
        let mapping = st.and_then(|st| self.mappings.get(&st.name.full())).cloned();
        let mut builder = self.context.channel_builder(name).message_encoding("json").schema(schema);
        if let Some(f) = fingerprint {
            builder = builder.add_metadata("fingerprint", &format!("0x{f:016x}"));
        }
        // The SDK refuses only a topic already taken with another schema, which `remove` above rules out.
        let Ok(channel) = builder.build_raw() else { return false };
        let mapped = mapping.and_then(|mapping| {
            let out = match self.decoder.decode(&first.data) {
                Decoded::Value(_, v) => mapping.convert(&v, name, first.recv_utime).map(|c| c.out).ok(),
                Decoded::Raw(_) => None,
            };
            let out = out.unwrap_or_else(|| mapping.default_out());
            let channel = advertise_mapped(&self.context, name, &mapping, out)?;
            counters.advertised.fetch_add(1, Ordering::Relaxed);
            Some(MappedChannel { mapping, out, channel })
        });
        if let Some(m) = &mapped {
            if let Ok(mut stats) = counters.mapped.lock() {
                stats.insert(name.to_owned(), mapped_stats(name, m));
            }
        }
        self.channels.insert(name.to_owned(), Advertised { fingerprint, channel, mapped });
        true
    }
}

/// Advertises the mapped channel of bus channel `name` in schema `out`.
fn advertise_mapped(context: &Arc<Context>, name: &str, mapping: &Mapping, out: Out) -> Option<Arc<RawChannel>> {
    context
        .channel_builder(out.topic(name))
        .message_encoding(Out::message_encoding())
        .schema(out.schema())
        .add_metadata("mapped_from", name)
        .add_metadata("lcm_type", &mapping.type_name)
        .build_raw()
        .ok()
}

fn mapped_stats(name: &str, m: &MappedChannel) -> MappedStats {
    MappedStats {
        channel: name.to_owned(),
        topic: m.out.topic(name),
        schema: m.out.schema_name(),
        lcm_type: m.mapping.type_name.clone(),
        sent: 0,
        refused: 0,
        last_refusal: None,
    }
}
