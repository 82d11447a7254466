//! The [`Provider`] trait: LCM's provider vtable (create, publish, subscribe, handle, fileno) in Rust form, the
//! [`registry`] of URL schemes (where a provider crate adds its own with [`register`]), and the providers this build
//! has. A provider moves bytes; matching, queues and dispatch belong to the bus. A provider never prints: an error
//! after [`Provider::start`] goes to the bus through [`Sink::report`] or [`Sink::receive_stopped`].
//!
//! # A bus's own messages
//!
//! The bus delivers every publication to its own subscriptions itself, directly (typed ones without encoding), and
//! hands it to the provider only when [`Provider::leaves_process`] says it can reach someone else. So a provider
//! must never hand the bus back a message that this same provider instance published: that would be a second copy
//! to every subscription of the process (the duplicate ROS 2's intra-process design article warns of). udpm and mpudpm
//! recognise their own datagrams by the source address (their send socket's; `own::OwnSender`); a transport that
//! carries an origin with each message (shm's index entries) writes a [`new_origin`] id per provider instance and skips
//! entries that bear it. Drops of the provider's own messages are counted in [`ProviderStats::own_dropped`].

use std::sync::Arc;

use crate::error::{BatchError, BusError};
use crate::pattern::Pattern;
pub use crate::qos::QosSupport;
use crate::url::Url;
pub use registry::{register, Constructor};

mod builtin;
pub mod file;
pub mod inproc;
pub mod mpudpm;
mod own;
pub mod registry;
#[cfg(target_os = "linux")]
pub mod shm;
mod thread;
mod turn;
pub mod udpm;

/// A message as a provider hands it to the bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// The channel.
    pub channel: String,
    /// The encoded message.
    pub data: Vec<u8>,
    /// When it arrived, microseconds since the epoch.
    pub recv_utime: i64,
}

/// Where a provider delivers what it receives (the bus).
pub trait Sink: Send + Sync {
    /// Takes one message into the subscriptions' queues. Must not block for long.
    fn deliver(&self, msg: Incoming);
    /// Called by a provider's receive thread each time it has handed over everything the transport had, or
    /// [`DRAIN_TURN`] messages of a socket that stays full (and when it has been idle for a while; udpm also right
    /// after the first message that ends an idle wait, so a reply does not wait for one more read of an empty
    /// socket). The bus may then run callbacks on this thread, when the user asked for a dispatcher: at least one
    /// message's, and more for as long as the thread has spent on its transport since its previous turn of
    /// callbacks. So under load the thread splits its time evenly between draining the socket into the subscriptions'
    /// queues and running callbacks: a backlog waits in those queues (in a drop-oldest one the newest wins) rather
    /// than in the kernel's FIFO buffer, a flood that never lets the socket empty still leaves callbacks their turns,
    /// and callbacks that are cheaper than reading are not left behind the reads (one callback per turn left an echo
    /// source's unbounded queue half a millisecond behind its socket). Returns whether more callbacks are waiting,
    /// in which case the provider should come back without blocking.
    fn drained(&self) -> bool {
        false
    }
    /// Whether a message on `channel` would go anywhere (a subscription matches it). A provider asks before it
    /// copies or reassembles a message, so that traffic nobody here subscribed to costs little; a message turned away
    /// counts as unmatched ([`crate::Bus::unmatched`]), as one delivered to no subscription does.
    fn wants(&self, channel: &str) -> bool {
        let _ = channel;
        true
    }
    /// Reports an error that happened after [`Provider::start`], outside any call that could return it (a channel
    /// that cannot be read, a socket that cannot be opened for a new subscription): the bus returns it from the next
    /// `handle()` and counts it in `Bus::health()`. Receiving goes on. A provider never prints.
    fn report(&self, error: BusError) {
        let _ = error;
    }
    /// Reports that receiving stopped for good on `error` (a receive thread that ended): like [`Sink::report`], and
    /// `Bus::health()` says that nothing more will arrive.
    fn receive_stopped(&self, error: BusError) {
        let _ = error;
    }
    /// Called by whoever lets go of a transport that `handle()` callers read themselves
    /// ([`Provider::receive_here`]) while callers want it: the bus wakes the callers that found it taken and wait,
    /// so that they look again ([`Provider::receive_here_free`]).
    fn reader_free(&self) {}
    /// Whether a message delivered to a callback subscription still waits for `handle()` (or a dispatcher) to take
    /// it: for a provider that hands over its next message only once the last one was taken (`file://` playback,
    /// one event per `handle()` as in LCM).
    fn waiting(&self) -> bool {
        false
    }
}

/// How many messages a receive thread hands over between two calls of [`Sink::drained`] while its socket is never
/// empty: without a bound, a flood that keeps the socket full would leave every callback waiting (the echo suite's
/// clients at full rate echoed almost none of the requests: nearly all their time went to reading).
pub const DRAIN_TURN: usize = 64;

/// How many turns of a udpm or mpudpm receive thread may pass between two copies of its receiver's counters while
/// callbacks keep it from waiting (it copies them before every wait). A copy takes the lock that readers of the
/// counters share (mpudpm's also builds a vector), which per turn would slow a thread that is already behind; the
/// kernel's drop count is not copied but read by whoever asks for the counters (`nerve_udpm::KernelDrops`), so no
/// copy makes a system call.
const STATS_TURN: u32 = 64;

/// When a udpm or mpudpm receive thread copies its receivers' counters: at the end of a turn after which it will
/// wait (so they are fresh while it sleeps), and every [`STATS_TURN`] turns while callbacks keep it from waiting.
#[derive(Default)]
pub(crate) struct StatsTurns(u32);

impl StatsTurns {
    /// Counts a turn; whether to copy the counters now.
    pub(crate) fn due(&mut self, callbacks_waiting: bool) -> bool {
        self.0 += 1;
        if callbacks_waiting && self.0 < STATS_TURN {
            return false;
        }
        self.0 = 0;
        true
    }
}

/// Transport counters a provider keeps, for `spy` and for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProviderStats {
    /// Messages published.
    pub published: u64,
    /// Messages received whole.
    pub received: u64,
    /// Datagrams or frames dropped as malformed.
    pub malformed: u64,
    /// Messages lost in the transport that it could detect (e.g. incomplete fragmented messages dropped).
    pub lost: u64,
    /// Datagrams the kernel dropped before they were read because the socket's receive buffer was full (udpm,
    /// mpudpm). A dropped fragment also shows in `lost` once its message is given up.
    pub kernel_dropped: u64,
    /// Messages of which not one datagram arrived, from gaps in the senders' sequence numbers (udpm; see
    /// `nerve_udpm::sequence`). Together with `lost` this is every message the transport lost, the kernel's
    /// drops included. `None` where the transport cannot tell (mpudpm; shm counts its losses exactly in `lost`).
    pub unseen: Option<u64>,
    /// Messages this provider published that came back to it and were not handed to the bus (which delivered them
    /// in-process already).
    pub own_dropped: u64,
    /// Messages read and dropped unopened, neither copied nor reassembled (udpm, mpudpm): this provider's own (also in
    /// `own_dropped`) and those on channels no subscription here matches (also in [`crate::Bus::unmatched`]).
    pub turned_away: u64,
}

/// A random 64-bit id, different on every call in every process (never 0): what a provider can stamp on what it
/// sends so that it recognises its own messages when they come back (see the module doc).
pub fn new_origin() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_i64(nerve_codec::now_utime());
    h.finish().max(1)
}

/// Refuses the first of `url`'s options that is not one of `known`: [`BusError::UnknownOption`], naming it and
/// the options the provider knows. For constructors (a provider crate's too), so that every provider treats options
/// alike.
pub fn check_options(url: &Url, known: &[&str]) -> Result<(), BusError> {
    Ok(url.check_options(known)?)
}

/// One transport.
pub trait Provider: Send + Sync {
    /// The URL scheme, e.g. `udpm`.
    fn name(&self) -> &'static str;
    /// Sends one message.
    fn publish(&self, channel: &str, data: &[u8]) -> Result<(), BusError>;
    /// Sends several messages, in order, exactly as [`Provider::publish`] on each would, stopping at the first that
    /// fails. This default does just that; a transport that can send many in fewer system calls overrides it
    /// (udpm and mpudpm: `sendmmsg`).
    fn publish_batch(&self, batch: &[(&str, &[u8])]) -> Result<(), BatchError> {
        for (sent, &(channel, data)) in batch.iter().enumerate() {
            self.publish(channel, data).map_err(|error| BatchError { sent, error })?;
        }
        Ok(())
    }
    /// Starts receiving into `sink`. Called once, on the first subscription, `handle` or `fileno`.
    fn start(&self, sink: Arc<dyn Sink>) -> Result<(), BusError>;
    /// A subscription was added: a provider that receives selectively (multi-port udpm) joins what it needs.
    fn subscribed(&self, _pattern: &Pattern) -> Result<(), BusError> {
        Ok(())
    }
    /// A subscription with `pattern` was removed (each [`Provider::subscribed`] is matched by at most one call
    /// with an equal pattern): a provider that receives selectively may stop receiving what no remaining
    /// subscription wants (shm stops reading those channels). Receiving more than is wanted is never wrong: the bus
    /// counts what matches no subscription as unmatched.
    fn unsubscribed(&self, _pattern: &Pattern) {}
    /// Counters so far.
    fn stats(&self) -> ProviderStats;
    /// Whether messages arrive on a receive thread of the provider's own (so callbacks can run there).
    fn has_receive_thread(&self) -> bool {
        false
    }
    /// For a `handle()` caller that found nothing to dispatch: reads the transport on the calling thread, waiting
    /// until `until` at most (a provider may return sooner), and hands what it read to the sink, so that the
    /// callbacks run without a hand-off from the receive thread (see `turn`). It does not wait when `has_work`
    /// (asked once the transport is in hand) says something is waiting for the caller already, and it returns when
    /// anything comes, the provider's own datagrams included (their in-process copies wait in the queues by then).
    /// `false` when it cannot now: the provider has no such path, or its receive thread has the transport in hand
    /// (it stands aside after its current wait); the caller then waits to be woken as usual.
    fn receive_here(&self, _until: Option<std::time::Instant>, _has_work: &dyn Fn() -> bool) -> bool {
        false
    }
    /// Whether [`Provider::receive_here`] would find the transport free now: asked by a caller that found it taken,
    /// before it waits (under the lock that [`Sink::reader_free`] takes, so no wake-up is lost in between).
    fn receive_here_free(&self) -> bool {
        false
    }
    /// Whether the receive threads also call [`Sink::drained`] soon after this bus publishes (udpm hears its own
    /// datagrams, shm is woken by its own writes, both then skip them), so that an inline dispatcher runs the
    /// callbacks of in-process deliveries too. A provider whose transport never shows a process its own traffic
    /// (zenoh) says no, and an inline dispatcher then keeps a thread of its own for in-process deliveries.
    fn drains_after_own_publications(&self) -> bool {
        true
    }
    /// Whether what is published through this provider may reach anyone outside this bus (another process, a file).
    /// When not (`inproc://`, `memq://`), the bus delivers in-process only and never encodes a typed message for it.
    fn leaves_process(&self) -> bool {
        true
    }
    /// Which QoS policies beyond best effort and volatile the transport can honour for messages from other
    /// processes; typed publishers and subscriptions that ask for more are refused at creation.
    fn qos_support(&self) -> QosSupport {
        QosSupport::default()
    }
    /// Writes out what the transport buffers (a log being written); nothing for the others.
    fn flush(&self) -> Result<(), BusError> {
        Ok(())
    }
    /// Whether every publication waits for a `handle()` to take it, whatever the capacity of the byte-level
    /// callback subscriptions it is queued for (`memq://`: LCM's memq keeps each publication in a queue of its own,
    /// unbounded, and applies a subscription's capacity only as `handle()` takes one message out, where it never
    /// overflows). Other providers apply the capacity on arrival, with the subscription's overflow policy.
    fn holds_until_handled(&self) -> bool {
        false
    }
    /// The name of the process-wide bus this provider is for, if buses of its scheme and this name are one bus in
    /// a process (`inproc://NAME`): `Bus::new` then returns the bus already open under that scheme and name, if
    /// one is, and drops this provider unused.
    fn domain(&self) -> Option<&str> {
        None
    }
}

#[cfg(test)]
mod stats_turns_tests {
    use super::{StatsTurns, STATS_TURN};

    #[test]
    fn counters_are_copied_before_every_wait_and_every_stats_turn_while_busy() {
        let mut t = StatsTurns::default();
        assert!(t.due(false), "a turn that ends in a wait copies");
        let busy: Vec<bool> = (0..STATS_TURN * 2).map(|_| t.due(true)).collect();
        let copies: Vec<usize> = busy.iter().enumerate().filter(|(_, &d)| d).map(|(i, _)| i + 1).collect();
        assert_eq!(copies, [STATS_TURN as usize, 2 * STATS_TURN as usize], "every {STATS_TURN}th busy turn");
        assert!(!t.due(true), "one busy turn after a copy");
        assert!(t.due(false), "a wait copies at once, whatever the count");
    }
}

#[cfg(test)]
mod check_options_tests {
    use super::check_options;
    use crate::error::BusError;
    use crate::url::Url;

    #[test]
    fn unknown_options_are_named_with_the_known_ones() {
        let url = Url::parse("shm://?frame=8").unwrap();
        let e = check_options(&url, &["frames", "frame_size"]).unwrap_err();
        let BusError::UnknownOption { option, known, .. } = &e else { panic!("{e:?}") };
        assert_eq!(option, "frame");
        assert_eq!(known, &["frames", "frame_size"]);
        let text = e.to_string();
        assert!(text.contains("'frame'") && text.contains("frames, frame_size"), "{text}");
        assert!(check_options(&Url::parse("shm://?frames=8").unwrap(), &["frames"]).is_ok());
    }
}
