//! Any Nerve bus, live over the Foxglove WebSocket protocol, and a page of our own served by the same server.
//!
//! # Brief overview
//!
//! [`Server::start`] takes a [`nerve_bus::Bus`] and the types it knows ([`nerve_types::Registry`]) and serves:
//!
//! - **the Foxglove WebSocket protocol**, spoken by Foxglove's own SDK (the `foxglove` crate's
//!   `WebSocketServer`). Each bus channel is advertised when its first message arrives, with the JSON schema of
//!   its `.lcm` type (the one the MCAP export writes, [`nerve_log::export::json_schema`]); messages go out as the
//!   MCAP export's JSON ([`nerve_log::export::message_json`], the transcoder, no value tree). A channel whose
//!   fingerprint no type matches is advertised as `nerve.undecoded` (its fingerprint in the channel's metadata)
//!   and its messages are sent as their bytes in base64. Only channels some client subscribed to are transcoded.
//! - **Foxglove's well-known schemas** for the types a [`Mappings`] maps ([`mapping`]: built in for libbot's
//!   `bot_core` image, planar lidar, pose and rigid transform and Nerve's example types, or from a TOML file): such
//!   a channel is advertised a second time, as `<channel>/<schema>` (`CAMERA/foxglove.RawImage`,
//!   `LIDAR/foxglove.LaserScan`, `CAMERA/foxglove.CompressedImage` for an MJPEG camera, ...), with schema and
//!   message encoding `protobuf`, its messages the SDK's own schema types (`foxglove::schemas::RawImage`, ...)
//!   encoded as the SDK encodes them; its metadata names the bus channel (`mapped_from`) and the LCM type
//!   (`lcm_type`). The raw view stays. A message that does not fit its mapping is counted ([`Server::mapped`],
//!   [`ServerStats::mapped_refused`]) and sent only raw, never broken.
//! - **a page** (`GET /`): the spy's channel table, a channel's newest message as a tree and live plots of the
//!   numeric fields the user picks, drawn with uPlot, and the channel's picture when it is also sent in a
//!   well-known schema (an image on a canvas, a laser scan or point cloud as a top-down plot), decoded with
//!   protobufjs from the schema advertised; the page, uPlot and protobufjs are built into the binary.
//!
//! While a log plays (`file://LOG`, given as [`Options::playback`]) the server declares the protocol's `time`
//! capability and broadcasts the log's time, and stamps messages with it, so Foxglove's timeline shows the log's
//! time rather than the wall clock's; live buses are stamped with their receive time and declare no clock.
//!
//! Both are on one port: a small front ([`front`](crate::front)) reads each connection's HTTP request head and
//! either answers it with the page or hands the connection, head included, to the SDK's server listening on
//! loopback. The SDK has no hook for plain HTTP requests, hence the front.
//!
//! # Newest wins
//!
//! Nothing here can slow the bus: the server reads the bus through one drop-oldest queue (drops counted in
//! [`ServerStats::bus_queue_dropped`]), and each client has a bounded queue of its own in the front
//! ([`Options::client_backlog`], [`Options::client_backlog_bytes`]) that drops that client's oldest messages when
//! it does not keep up, counted per client ([`Server::clients`]) and in total ([`ServerStats::client_dropped`]).
//! The SDK never waits on a client either, and the front reads the SDK's output for each client as it comes, so
//! the SDK's own (uncounted) per-client queue does not fill.

#![deny(missing_docs)]

mod error;
mod forward;
mod front;
pub mod mapping;
mod outbox;
mod page;
mod publish;

use std::net::SocketAddr;
use std::sync::Arc;

use foxglove::websocket::Capability;
use foxglove::{Context, WebSocketServerHandle};
use nerve_bus::provider::file::Playback;
use nerve_bus::Bus;
use nerve_types::Registry;

pub use error::ServeError;
pub use forward::{MappedStats, ServerStats};
pub use mapping::Mappings;
pub use outbox::ClientStats;

/// What [`Server::start`] serves, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the page and the protocol are served (one port for both).
    pub listen: SocketAddr,
    /// Whether clients may publish JSON into the bus, on channels whose type is known.
    pub allow_publish: bool,
    /// The server's name, shown by Foxglove.
    pub name: String,
    /// Messages the server's bus subscription holds before it drops the oldest.
    pub bus_queue: usize,
    /// Messages a client's queue holds before it drops that client's oldest.
    pub client_backlog: usize,
    /// Bytes (of the messages' JSON) a client's queue holds before it drops that client's oldest.
    pub client_backlog_bytes: usize,
    /// The playback of the log the bus plays (`file://LOG`), if it is one: the server then follows the log's
    /// clock (the protocol's `time` capability) instead of the wall clock.
    pub playback: Option<Playback>,
    /// Which LCM types are also sent in Foxglove's well-known schemas (default: the built-in ones,
    /// [`Mappings::builtin`]); checked against the types at start.
    pub mappings: Mappings,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 8765)),
            allow_publish: false,
            name: "nerve".into(),
            bus_queue: 4096,
            client_backlog: 1024,
            // About 25 frames of a 640x480 image's JSON: most of a second of a 30 Hz camera.
            client_backlog_bytes: 32 << 20,
            playback: None,
            mappings: Mappings::builtin(),
        }
    }
}

/// The SDK's own queue per client (messages). The front empties it as fast as the SDK fills it, whatever the client
/// does, so it only has to absorb the front's scheduling delays; its drops would not be counted, hence its size.
const SDK_BACKLOG: usize = 8192;

/// A running server; stops when dropped.
pub struct Server {
    // Field order is drop order: the forwarder first (no more logging), then the SDK's server, then the runtime.
    forwarder: forward::Forwarder,
    // Shared with the forwarder only to broadcast a played log's time; the forwarder is stopped first.
    sdk: Option<Arc<WebSocketServerHandle>>,
    context: Arc<Context>,
    clients: Arc<outbox::Clients>,
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// Starts serving `bus` (its channels decoded with `registry`, if any) as `options` say.
    pub fn start(bus: &Bus, registry: Option<Registry>, options: Options) -> Result<Server, ServeError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("nerve-foxglove")
            .enable_all()
            .build()
            .map_err(ServeError::Runtime)?;
        let context = Context::new();
        let publisher = publish::Publisher::new(bus.clone(), registry.clone(), options.allow_publish);
        let mut sdk = context
            .websocket_server()
            .name(options.name.clone())
            .bind("127.0.0.1", 0)
            .message_backlog_size(SDK_BACKLOG)
            .tokio_runtime(runtime.handle())
            .listener(Arc::new(publisher));
        let mut capabilities = Vec::new();
        if options.allow_publish {
            capabilities.push(Capability::ClientPublish);
            sdk = sdk.supported_encodings(["json"]);
        }
        if options.playback.is_some() {
            capabilities.push(Capability::Time);
        }
        let sdk = Arc::new(runtime.block_on(sdk.capabilities(capabilities).start()).map_err(ServeError::Sdk)?);
        let sdk_addr = SocketAddr::from(([127, 0, 0, 1], sdk.port()));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(options.listen))
            .map_err(|source| ServeError::Bind { addr: options.listen, source })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Bind { addr: options.listen, source })?;
        let clients = Arc::new(outbox::Clients::default());
        let limits = outbox::Limits { messages: options.client_backlog.max(1), bytes: options.client_backlog_bytes };
        runtime.spawn(front::serve(listener, sdk_addr, Arc::clone(&clients), limits));
        let clock = options.playback.map(|playback| forward::LogClock { playback, sdk: Arc::clone(&sdk) });
        let mappings = options.mappings.clone().resolve(registry.as_ref()).map_err(ServeError::Mappings)?;
        let forwarder =
            forward::Forwarder::start(bus, registry, mappings, Arc::clone(&context), options.bus_queue, clock)?;
        Ok(Server { forwarder, sdk: Some(sdk), context, clients, addr, runtime: Some(runtime) })
    }

    /// The address the page and the protocol are served on (the actual port when `listen` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the server has forwarded so far.
    pub fn stats(&self) -> ServerStats {
        ServerStats {
            clients: self.clients.stats().len() as u64,
            client_dropped: self.clients.total_dropped(),
            ..self.forwarder.stats()
        }
    }

    /// The mapped channels advertised so far (by bus channel name), with the messages sent and refused on each.
    pub fn mapped(&self) -> Vec<MappedStats> {
        self.forwarder.mapped()
    }

    /// The clients connected now (in order of connection), with the messages sent to and dropped for each.
    pub fn clients(&self) -> Vec<ClientStats> {
        self.clients.stats()
    }

    /// A channel of the server's own (not the bus's) carrying JSON messages described by `json_schema`, named
    /// `schema_name`: the spy's statistics table, for instance. Advertised to clients like a bus channel.
    pub fn json_channel(&self, topic: &str, schema_name: &str, json_schema: String) -> Result<JsonChannel, ServeError> {
        let channel = self
            .context
            .channel_builder(topic)
            .message_encoding("json")
            .schema(foxglove::Schema::new(schema_name, "jsonschema", json_schema.into_bytes()))
            .build_raw()
            .map_err(ServeError::Sdk)?;
        Ok(JsonChannel { channel })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.forwarder.stop();
        // The forwarder's thread has ended, so its share of the handle is gone.
        if let Some(sdk) = self.sdk.take().and_then(Arc::into_inner) {
            // Closes the clients' connections; the runtime's shutdown below ends the tasks left.
            drop(sdk.stop());
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(std::time::Duration::from_millis(500));
        }
    }
}

/// A server-side channel of JSON messages (see [`Server::json_channel`]).
pub struct JsonChannel {
    channel: Arc<foxglove::RawChannel>,
}

impl JsonChannel {
    /// Whether a client subscribed to it (so that the caller makes the JSON only when someone will read it).
    pub fn has_subscribers(&self) -> bool {
        self.channel.has_sinks()
    }

    /// Sends one JSON message to the clients subscribed to it.
    pub fn publish(&self, json: &str) {
        self.channel.log(json.as_bytes());
    }
}

/// Entry points for the fuzz targets (`fuzz/fuzz_targets/foxglove_front.rs`): the front's parsing of what a client
/// sends before the SDK sees it (the HTTP request head) and its splitting of a byte stream into WebSocket frames.
/// Not an API.
#[doc(hidden)]
pub mod fuzzing {
    use std::net::SocketAddr;
    use std::sync::Arc;

    /// What the front decides for a client's request head (its `Debug` form).
    pub fn request_head(head: &[u8]) -> String {
        format!("{:?}", crate::front::parse(head))
    }

    /// The frames the outbox splits `bytes` into and writes to a client (at most `messages` data frames queued),
    /// concatenated as written.
    pub fn split_frames(bytes: &[u8], messages: usize) -> Vec<u8> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a current-thread runtime");
        runtime.block_on(async {
            let clients = Arc::new(crate::outbox::Clients::default());
            let limits = crate::outbox::Limits { messages: messages.max(1), bytes: 1 << 20 };
            let registration = clients.register(SocketAddr::from(([127, 0, 0, 1], 1)), limits);
            registration.outbox.fill(&mut &[][..], bytes.to_vec(), |_| {}).await;
            let mut out = Vec::new();
            registration.outbox.drain(&mut out).await;
            out
        })
    }
}

#[cfg(test)]
mod fuzzing_tests {
    use super::fuzzing::{request_head, split_frames};

    #[test]
    fn hostile_heads_and_streams_get_a_decision_and_frames_never_grow() {
        assert_eq!(request_head(b"GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n"), "WebSocket");
        for head in [&b""[..], b"\xff\xfe", b"GET", b"GET / HTTP/1.1 extra\r\n\r\n", b"POST / HTTP/1.1\r\n\r\n"] {
            assert!(request_head(head).starts_with("Refuse"), "{head:?}");
        }
        // Two binary frames, a reserved opcode, a frame announcing 2^63 bytes: what is written is a prefix.
        let mut stream = vec![0x82, 0x02, 0x01, 0x07, 0x82, 0x01, 0x01];
        stream.extend_from_slice(&[0x83, 0x00]);
        let written = split_frames(&stream, 4);
        assert_eq!(written, &stream[..7]);
        let huge = [0x82, 0x7f, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert!(split_frames(&huge, 4).is_empty());
    }
}
