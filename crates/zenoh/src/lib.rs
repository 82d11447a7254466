//! The `zenoh://` provider: Nerve channels over Eclipse Zenoh (the `zenoh` crate), so a bus reaches past the
//! multicast LAN: through Zenoh routers, across routed networks and Wi-Fi, with Zenoh's TLS and authentication.
//!
//! Channel `X` is the key expression `PREFIX/X` (`nerve/X` by default; names that are not plain keys are
//! percent-encoded reversibly, see [`keys`]); the payload is the LCM bytes unchanged (fingerprint first), so any
//! Zenoh client decodes them with generated types. A subscription's pattern becomes the narrowest key expression that
//! covers it ([`keys::cover`]) and the bus's regex filters the rest, so a subscription picks up channels made after
//! it. Publishers use Zenoh's dropping congestion control (a slow link drops, never blocks the publisher: newest
//! sample wins) and send small messages express (unbatched).
//!
//! `zenoh://[ENDPOINT,...]?options`: the network part, when given, is a list of endpoints to connect to. Options
//! ([`OPTIONS`]): `config=PATH` (a Zenoh JSON5 configuration: TLS, user/password, access control, ...), `mode=peer
//! |client|router`, `connect=EP,EP`, `listen=EP,EP`, `scouting=on|off` (multicast scouting), `prefix=KEY`. Options
//! given in the URL override the file. With none, the session is a Zenoh peer that finds peers on the LAN by
//! multicast scouting.
//!
//! Call [`register`] once before the first `Bus::new("zenoh://...")`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use nerve_bus::provider::{check_options, Incoming, Provider, ProviderStats, Sink};
use nerve_bus::{BusError, Pattern, Url};
use zenoh::key_expr::{keyexpr, KeyExpr};
use zenoh::pubsub::{Publisher, Subscriber};
use zenoh::qos::CongestionControl;
use zenoh::sample::{Locality, Sample};
use zenoh::{Config, Session, Wait};

pub mod keys;

/// The options a `zenoh://` URL takes.
pub const OPTIONS: &[&str] = &["config", "mode", "connect", "listen", "scouting", "prefix"];

/// The key prefix channels live under unless `prefix=` says otherwise.
pub const DEFAULT_PREFIX: &str = "nerve";

/// Messages up to this size are sent express (not batched with others: lower latency); larger ones are batched.
pub const EXPRESS_MAX: usize = 4096;

/// Registers `zenoh` with the bus's provider registry (idempotent).
pub fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        nerve_bus::provider::register("zenoh", ZenohProvider::from_url);
    });
}

fn transport(e: zenoh::Error) -> BusError {
    BusError::Transport { provider: "zenoh", source: e }
}

/// The Zenoh configuration and key prefix a `zenoh://` URL names.
pub fn config_from_url(url: &Url) -> Result<(Config, String), BusError> {
    check_options(url, OPTIONS)?;
    let bad = |reason: String| BusError::Config { url: url.to_string(), reason };
    let option = |name: &str| url.options.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let mut config = match option("config") {
        Some(path) => Config::from_file(path).map_err(|e| bad(format!("config file '{path}': {e}")))?,
        None => Config::default(),
    };
    let mut set = |key: &str, json: String| config.insert_json5(key, &json).map_err(|e| bad(format!("{key}: {e}")));
    if let Some(mode) = option("mode") {
        if !matches!(mode, "peer" | "client" | "router") {
            return Err(bad(format!("mode '{mode}': expected peer, client or router")));
        }
        set("mode", json_string(mode))?;
    }
    let endpoints = |list: &str| -> String {
        let items: Vec<String> = list.split(',').filter(|e| !e.is_empty()).map(json_string).collect();
        format!("[{}]", items.join(","))
    };
    let mut connect: Vec<&str> = Vec::new();
    if !url.network.is_empty() {
        connect.push(&url.network);
    }
    if let Some(c) = option("connect") {
        connect.push(c);
    }
    if !connect.is_empty() {
        set("connect/endpoints", endpoints(&connect.join(",")))?;
    }
    if let Some(l) = option("listen") {
        set("listen/endpoints", endpoints(l))?;
    }
    if let Some(s) = option("scouting") {
        let on = match s {
            "on" | "true" | "1" => true,
            "off" | "false" | "0" => false,
            _ => return Err(bad(format!("scouting '{s}': expected on or off"))),
        };
        set("scouting/multicast/enabled", on.to_string())?;
    }
    let prefix = option("prefix").unwrap_or(DEFAULT_PREFIX).trim_end_matches('/').to_owned();
    match keyexpr::new(prefix.as_str()) {
        Ok(k) if !k.is_wild() => {}
        _ => return Err(bad(format!("prefix '{prefix}' is not a key expression without wildcards"))),
    }
    Ok((config, prefix))
}

/// `s` as a JSON string literal (endpoints and modes go into the JSON5 configuration).
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[derive(Default)]
struct Counters {
    published: AtomicU64,
    received: AtomicU64,
    malformed: AtomicU64,
    turned_away: AtomicU64,
}

/// One Zenoh subscriber on a cover key. `live` is cleared before it is replaced by a wider one, so a message is not
/// handed over by both while they overlap.
struct Active {
    live: Arc<AtomicBool>,
    _subscriber: Subscriber<()>,
}

#[derive(Default)]
struct Subscriptions {
    /// Each subscribed pattern's cover key, with how many subscriptions have it.
    wanted: Vec<(String, usize)>,
    /// The Zenoh subscribers, on covers none of which intersects another (so each message arrives once).
    active: HashMap<String, Active>,
}

/// The covers to subscribe to for `wanted`: none included in another, none intersecting another (two that intersect
/// without one including the other give way to the whole prefix).
fn minimal_covers(prefix: &str, wanted: &[(String, usize)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let ke = |s: &str| keyexpr::new(s).map(|k| k.to_owned()).ok();
    for (cover, _) in wanted {
        let Some(c) = ke(cover) else { continue };
        if out.iter().filter_map(|d| ke(d)).any(|d| d.includes(&c)) {
            continue;
        }
        out.retain(|d| !ke(d).is_some_and(|d| c.includes(&d)));
        if out.iter().filter_map(|d| ke(d)).any(|d| d.intersects(&c)) {
            return vec![format!("{prefix}/**")];
        }
        out.push(cover.clone());
    }
    out
}

/// A bus's Zenoh session.
pub struct ZenohProvider {
    session: Session,
    prefix: String,
    /// One publisher per channel and express flag, declared on first use.
    publishers: Mutex<HashMap<(String, bool), Publisher<'static>>>,
    subscriptions: Mutex<Subscriptions>,
    sink: Arc<OnceLock<Arc<dyn Sink>>>,
    counters: Arc<Counters>,
}

impl ZenohProvider {
    /// Opens a Zenoh session with `config`; channels live under `prefix`.
    pub fn open(config: Config, prefix: String) -> Result<ZenohProvider, BusError> {
        let session = zenoh::open(config).wait().map_err(|e| BusError::Transport {
            provider: "zenoh",
            // Zenoh's own words name the endpoints; a peer that refused our certificate or password ends here too.
            source: format!(
                "cannot open a Zenoh session: {e} (a peer that refuses the TLS certificate or user/password in the \
                 config shows here as a failed connection)"
            )
            .into(),
        })?;
        Ok(ZenohProvider {
            session,
            prefix,
            publishers: Mutex::default(),
            subscriptions: Mutex::default(),
            sink: Arc::default(),
            counters: Arc::default(),
        })
    }

    /// The registry's constructor for `zenoh://...` URLs.
    pub fn from_url(url: &Url) -> Result<Box<dyn Provider>, BusError> {
        let (config, prefix) = config_from_url(url)?;
        Ok(Box::new(ZenohProvider::open(config, prefix)?))
    }

    /// The Zenoh session (for its id, or to reach Zenoh features Nerve does not wrap).
    pub fn session(&self) -> &Session {
        &self.session
    }

    fn key_of(&self, channel: &str) -> Result<String, BusError> {
        let suffix = keys::encode(channel).ok_or_else(|| BusError::Transport {
            provider: "zenoh",
            source: "the empty channel name has no Zenoh key".into(),
        })?;
        Ok(format!("{}/{suffix}", self.prefix))
    }

    /// Subscribes to the covers `wanted` now calls for and drops the ones it no longer does: new ones are declared
    /// first, then the old ones stop handing over messages and are undeclared.
    fn resubscribe(&self, subs: &mut Subscriptions) -> Result<(), BusError> {
        let desired = minimal_covers(&self.prefix, &subs.wanted);
        let mut added = Vec::new();
        for cover in desired.iter().filter(|c| !subs.active.contains_key(*c)) {
            let live = Arc::new(AtomicBool::new(false));
            let subscriber = self.declare(cover, Arc::clone(&live))?;
            added.push((cover.clone(), Active { live, _subscriber: subscriber }));
        }
        let retired: Vec<String> = subs.active.keys().filter(|c| !desired.contains(c)).cloned().collect();
        for cover in &retired {
            subs.active[cover].live.store(false, Ordering::Release);
        }
        for (cover, active) in added {
            active.live.store(true, Ordering::Release);
            subs.active.insert(cover, active);
        }
        for cover in retired {
            subs.active.remove(&cover);
        }
        Ok(())
    }

    fn declare(&self, cover: &str, live: Arc<AtomicBool>) -> Result<Subscriber<()>, BusError> {
        let prefix = format!("{}/", self.prefix);
        let sink = Arc::clone(&self.sink);
        let counters = Arc::clone(&self.counters);
        let key = KeyExpr::try_from(cover.to_owned()).map_err(transport)?;
        self.session
            .declare_subscriber(key)
            // Our own publications reach our subscriptions in-process already (the bus delivers them).
            .allowed_origin(Locality::Remote)
            .callback(move |sample: Sample| {
                if !live.load(Ordering::Acquire) {
                    return;
                }
                let Some(sink) = sink.get() else { return };
                let channel = sample.key_expr().as_str().strip_prefix(prefix.as_str()).and_then(keys::decode);
                let Some(channel) = channel else {
                    // A key under our prefix that no channel maps to (a foreign publisher's): never handed over.
                    counters.malformed.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                if !sink.wants(&channel) {
                    counters.turned_away.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                counters.received.fetch_add(1, Ordering::Relaxed);
                let data = sample.payload().to_bytes().into_owned();
                sink.deliver(Incoming { channel, data, recv_utime: nerve_codec::now_utime() });
                // With a dispatcher, the callbacks run here, on Zenoh's thread, as a Zenoh subscriber's own callback
                // does: no hand-off to another thread (that wake-up was most of what zenoh:// added to Zenoh's
                // latency). Zenoh calls back once per sample, never to say "no more", so run everything waiting.
                while sink.drained() {}
            })
            .wait()
            .map_err(transport)
    }
}

impl Provider for ZenohProvider {
    fn name(&self) -> &'static str {
        "zenoh"
    }

    fn publish(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        let express = data.len() <= EXPRESS_MAX;
        let mut publishers = self.publishers.lock().unwrap_or_else(|e| e.into_inner());
        let slot = (channel.to_owned(), express);
        if !publishers.contains_key(&slot) {
            let key = KeyExpr::try_from(self.key_of(channel)?).map_err(transport)?;
            let publisher = self
                .session
                .declare_publisher(key)
                // Newest sample wins: a congested link drops rather than blocking the publisher.
                .congestion_control(CongestionControl::Drop)
                .express(express)
                .allowed_destination(Locality::Remote)
                .wait()
                .map_err(transport)?;
            publishers.insert(slot.clone(), publisher);
        }
        publishers[&slot].put(data).wait().map_err(transport)?;
        self.counters.published.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn start(&self, sink: Arc<dyn Sink>) -> Result<(), BusError> {
        let _ = self.sink.set(sink);
        Ok(())
    }

    fn subscribed(&self, pattern: &Pattern) -> Result<(), BusError> {
        let cover = keys::cover(&self.prefix, pattern);
        let mut subs = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
        match subs.wanted.iter_mut().find(|(c, _)| *c == cover) {
            Some((_, n)) => *n += 1,
            None => subs.wanted.push((cover, 1)),
        }
        self.resubscribe(&mut subs)
    }

    fn unsubscribed(&self, pattern: &Pattern) {
        let cover = keys::cover(&self.prefix, pattern);
        let mut subs = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = subs.wanted.iter().position(|(c, _)| *c == cover) {
            subs.wanted[i].1 -= 1;
            if subs.wanted[i].1 == 0 {
                subs.wanted.remove(i);
            }
        }
        if let Err(e) = self.resubscribe(&mut subs) {
            if let Some(sink) = self.sink.get() {
                sink.report(e);
            }
        }
    }

    /// Samples arrive on Zenoh's own threads, which run a dispatcher's callbacks ([`Bus::spawn_dispatcher`]). As
    /// with a Zenoh subscriber's callback, a handler that blocks holds up Zenoh's reading of that link (its sender
    /// then drops, as our dropping congestion control says); a handler that must block belongs on an executor.
    ///
    /// [`Bus::spawn_dispatcher`]: nerve_bus::Bus::spawn_dispatcher
    fn has_receive_thread(&self) -> bool {
        true
    }

    /// Zenoh never shows a session its own samples (and we ask it not to), so an inline dispatcher keeps a thread
    /// for this bus's in-process deliveries.
    fn drains_after_own_publications(&self) -> bool {
        false
    }

    fn stats(&self) -> ProviderStats {
        let c = &self.counters;
        ProviderStats {
            published: c.published.load(Ordering::Relaxed),
            received: c.received.load(Ordering::Relaxed),
            malformed: c.malformed.load(Ordering::Relaxed),
            turned_away: c.turned_away.load(Ordering::Relaxed),
            ..ProviderStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn options_are_checked() {
        let e = config_from_url(&url("zenoh://?mdoe=peer")).unwrap_err();
        assert!(matches!(e, BusError::UnknownOption { .. }), "{e}");
        for bad in
            ["zenoh://?mode=hub", "zenoh://?scouting=maybe", "zenoh://?prefix=a/*", "zenoh://?config=/nonexistent"]
        {
            let e = config_from_url(&url(bad)).unwrap_err();
            assert!(matches!(e, BusError::Config { .. }), "{bad}: {e}");
        }
        let (c, p) = config_from_url(&url(
            "zenoh://tcp/127.0.0.1:7447?mode=client&listen=tcp/127.0.0.1:0&scouting=off&prefix=x/y/",
        ))
        .unwrap();
        assert_eq!(p, "x/y");
        assert_eq!(c.get_json("mode").unwrap(), "\"client\"");
        assert_eq!(c.get_json("connect/endpoints").unwrap(), "[\"tcp/127.0.0.1:7447\"]");
        assert_eq!(c.get_json("scouting/multicast/enabled").unwrap(), "false");
    }

    #[test]
    fn covers_never_overlap() {
        let w = |v: &[&str]| v.iter().map(|s| (s.to_string(), 1)).collect::<Vec<_>>();
        assert_eq!(minimal_covers("n", &w(&["n/A", "n/A$*/**", "n/AB"])), ["n/A$*/**"]);
        assert_eq!(minimal_covers("n", &w(&["n/A", "n/B"])), ["n/A", "n/B"]);
        assert_eq!(minimal_covers("n", &w(&["n/A$*/**", "n/**"])), ["n/**"]);
        assert_eq!(minimal_covers("n", &w(&["n/A$*/**", "n/*/B"])), ["n/**"]);
    }
}
