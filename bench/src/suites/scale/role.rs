//! The scale suite's processes under measurement: hidden subcommands of nerve-bench, started (pinned) by the driver.
//!
//! ```text
//! nerve-bench scale-sub SYSTEM URL PREFIX START N ACTIVE MAX_MS
//!     reads the N channels PREFIX<START> .. PREFIX<START+N-1>: SYSTEM `bus-pattern` with one bus subscription of the
//!     pattern `PREFIX.*` on URL (how a logger or `nerve sub` reads a directory of shm channels), `bus-each` with one
//!     subscription per channel (how a program reads its udpm channels), `iox` with one iceoryx2 subscriber and
//!     listener per service, the listeners in one WaitSet (URL is ignored). Prints "ready", handles messages until
//!     one shorter than 16 bytes (stop) or MAX_MS, then "recv TOTAL", "lat NS" for each message on PREFIX<ACTIVE>
//!     (-1: none) and "end" - the lines csrc/lcm_scale.c prints for LCM.
//! nerve-bench scale-read SYSTEM TARGET SIZE MODE COUNT MAX_MS READERS
//!     one reader of one channel of SIZE-byte messages: SYSTEM `shm` (a nerve-shm channel DIR/NAME) or `iox` (an
//!     iceoryx2 service), or `futex` (the control: a plain futex broadcast page, `super::futex`, MODE `zc-wait`); MODE `copy-poll`, `copy-wait`, `zc-poll` or `zc-wait` (a copy into a buffer of its own or a
//!     zero-copy read of the stamp where it lies; spinning or sleeping). Prints "ready", reads until COUNT messages,
//!     a stop message or MAX_MS, then "recv N", "s SEQ NS" per message and "end". READERS: how many readers the
//!     iceoryx2 service is made for (the driver makes it with the same number).
//! ```
//!
//! Every message starts with its sequence number (u64 LE) and the sender's CLOCK_MONOTONIC stamp in ns (u64 LE);
//! the latency is taken when the read is complete (after the copy, for a copying read).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iceoryx2::port::listener::Listener;
use iceoryx2::port::subscriber::Subscriber;
use iceoryx2::prelude::*;
use nerve_shm::{Channel, GetOutcome, ReadMode, Wait};

use crate::harness::clock::{mono_ns, set_timer_slack};

/// The channel-count role's word.
pub const ROLE_SUB: &str = "scale-sub";
/// The one-channel reader's word.
pub const ROLE_READ: &str = "scale-read";

/// The message of the channel-count and udpm parts: sequence number, stamp, filler.
pub const SMALL: usize = 64;
/// How long a waiting read sleeps before it looks at the clock again.
const SLICE: Duration = Duration::from_millis(50);

/// The hidden roles: `Some(exit code)` when `args[1]` is one of them.
pub fn hidden_role(args: &[String]) -> Option<ExitCode> {
    let role = args.get(1)?.as_str();
    if role != ROLE_SUB && role != ROLE_READ {
        return None;
    }
    set_timer_slack();
    let a: Vec<&str> = args[2..].iter().map(String::as_str).collect();
    let r = match (role, a.as_slice()) {
        (ROLE_SUB, [system, url, prefix, start, n, active, max_ms]) => (|| {
            let spec = SubSpec {
                prefix,
                start: num(start, "START")?,
                n: num(n, "N")?,
                active: num(active, "ACTIVE")?,
                max_ms: num(max_ms, "MAX_MS")?,
            };
            sub_role(system, url, &spec)
        })(),
        (ROLE_READ, [system, target, size, mode, count, max_ms, readers]) => (|| {
            let mode = ReadHow::parse(mode)?;
            let spec = ReadSpec {
                size: num(size, "SIZE")?,
                how: mode,
                count: num(count, "COUNT")?,
                max_ms: num(max_ms, "MAX_MS")?,
                readers: num(readers, "READERS")?,
            };
            read_role(system, target, &spec)
        })(),
        _ => Err(format!("bad arguments for {role}: {:?} (see src/suites/scale/role.rs)", &args[2..])),
    };
    Some(match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nerve-bench {role}: {e}");
            ExitCode::from(3)
        }
    })
}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("bad {what}: {s:?}"))
}

fn say(line: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

fn word(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
}

/// The sequence number and stamp of a message, or `None` for a stop message (shorter than 16 bytes).
fn head(b: &[u8]) -> Option<(u64, u64)> {
    Some((word(b, 0)?, word(b, 8)?))
}

/// Raises the open-file limit to its hard limit: iceoryx2 holds several descriptors per service, a thousand services
/// need more than the usual soft limit of 1,024.
#[allow(unsafe_code)]
pub fn raise_nofile() {
    let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit read and write one valid local rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

struct SubSpec<'a> {
    prefix: &'a str,
    start: usize,
    n: usize,
    active: i64,
    max_ms: u64,
}

impl SubSpec<'_> {
    fn active_name(&self) -> Option<String> {
        (self.active >= 0).then(|| format!("{}{}", self.prefix, self.active))
    }
}

/// What a subscriber counted.
#[derive(Default)]
struct Tally {
    total: u64,
    lat: Vec<u64>,
    stop: bool,
}

impl Tally {
    fn on(&mut self, active: bool, data: &[u8]) {
        let now = mono_ns();
        match head(data) {
            None => self.stop = true,
            Some((_, stamp)) => {
                self.total += 1;
                if active {
                    self.lat.push(now.wrapping_sub(stamp));
                }
            }
        }
    }

    fn print(&self) -> Result<(), String> {
        let mut o = std::io::BufWriter::new(std::io::stdout().lock());
        let w = |e: std::io::Error| format!("writing stdout: {e}");
        writeln!(o, "recv {}", self.total).map_err(w)?;
        for x in &self.lat {
            writeln!(o, "lat {x}").map_err(w)?;
        }
        writeln!(o, "end").map_err(w)?;
        o.flush().map_err(w)
    }
}

fn sub_role(system: &str, url: &str, spec: &SubSpec) -> Result<(), String> {
    match system {
        "bus-pattern" | "bus-each" => bus_sub(url, system == "bus-pattern", spec),
        "iox" => iox_sub(spec),
        other => Err(format!("unknown SYSTEM {other:?}: bus-pattern, bus-each or iox")),
    }
}

fn bus_sub(url: &str, pattern: bool, spec: &SubSpec) -> Result<(), String> {
    let bus = nerve_bus::Bus::new(Some(url)).map_err(|e| format!("Bus::new({url}): {e}"))?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let active = spec.active_name();
    let mut subs = Vec::new();
    let names: Vec<String> = if pattern {
        vec![format!("{}.*", regex_escape(spec.prefix))]
    } else {
        (spec.start..spec.start + spec.n).map(|i| format!("{}{i}", spec.prefix)).collect()
    };
    for name in names {
        let t = Arc::clone(&tally);
        let active = active.clone();
        let s = bus
            .subscribe_raw(&name, move |m| {
                let is_active = active.as_deref() == Some(m.channel.as_str());
                t.lock().unwrap_or_else(|p| p.into_inner()).on(is_active, &m.data);
            })
            .map_err(|e| format!("subscribing {name}: {e}"))?;
        subs.push(s);
    }
    say("ready");
    let deadline = mono_ns() + spec.max_ms * 1_000_000;
    while mono_ns() < deadline {
        bus.handle_timeout(SLICE).map_err(|e| format!("handle: {e}"))?;
        if tally.lock().unwrap_or_else(|p| p.into_inner()).stop {
            break;
        }
    }
    drop(subs);
    let t = tally.lock().unwrap_or_else(|p| p.into_inner());
    t.print()
}

/// A bus pattern (a regular expression) that matches `s` literally.
fn regex_escape(s: &str) -> String {
    s.chars().fold(String::new(), |mut out, c| {
        if r"\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

type IoxErr = String;

fn iox<E: std::fmt::Debug>(what: &str) -> impl FnOnce(E) -> IoxErr + '_ {
    move |e| format!("iceoryx2: {what}: {e:?}")
}

/// An iceoryx2 node, quiet and without its signal handler (the driver stops the roles by message).
pub fn iox_node() -> Result<Node<ipc::Service>, IoxErr> {
    set_log_level(LogLevel::Error);
    NodeBuilder::new().signal_handling_mode(SignalHandlingMode::Disabled).create::<ipc::Service>().map_err(iox("node"))
}

/// The publish-subscribe service of one scale channel: slices of bytes (the publisher sets their largest length),
/// `readers` subscribers.
pub fn iox_pubsub(
    node: &Node<ipc::Service>,
    name: &str,
    readers: usize,
) -> Result<iceoryx2::service::port_factory::publish_subscribe::PortFactory<ipc::Service, [u8], ()>, IoxErr> {
    let sn: ServiceName = name.try_into().map_err(iox("service name"))?;
    node.service_builder(&sn)
        .publish_subscribe::<[u8]>()
        .subscriber_max_buffer_size(4)
        .history_size(0)
        .max_subscribers(readers.max(2))
        .max_publishers(2)
        .max_nodes(readers.max(2) + 2)
        .open_or_create()
        .map_err(iox("publish_subscribe service"))
}

/// The event service beside a scale channel's publish-subscribe service: how a sleeping reader is woken.
pub fn iox_event(
    node: &Node<ipc::Service>,
    name: &str,
    readers: usize,
) -> Result<iceoryx2::service::port_factory::event::PortFactory<ipc::Service>, IoxErr> {
    let sn: ServiceName = name.try_into().map_err(iox("service name"))?;
    node.service_builder(&sn)
        .event()
        .max_listeners(readers.max(2))
        .max_notifiers(2)
        .max_nodes(readers.max(2) + 2)
        .open_or_create()
        .map_err(iox("event service"))
}

/// One service's ports in the subscriber: whether it is the active channel, its subscriber and its listener.
type IoxPorts = (bool, Subscriber<ipc::Service, [u8], ()>, Listener<ipc::Service>);

fn iox_sub(spec: &SubSpec) -> Result<(), String> {
    raise_nofile();
    let node = iox_node()?;
    let active = spec.active_name();
    let mut subs: Vec<IoxPorts> = Vec::new();
    for i in spec.start..spec.start + spec.n {
        let name = format!("{}{i}", spec.prefix);
        let s = iox_pubsub(&node, &name, 1)?.subscriber_builder().buffer_size(4).create().map_err(iox("subscriber"))?;
        let l = iox_event(&node, &name, 1)?.listener_builder().create().map_err(iox("listener"))?;
        subs.push((active.as_deref() == Some(name.as_str()), s, l));
    }
    let waitset = WaitSetBuilder::new().create::<ipc::Service>().map_err(iox("waitset"))?;
    let mut guards = Vec::new();
    let mut index = HashMap::new();
    for (i, (_, _, l)) in subs.iter().enumerate() {
        let g = waitset.attach_notification(l).map_err(iox("attach_notification"))?;
        index.insert(WaitSetAttachmentId::from_guard(&g), i);
        guards.push(g);
    }
    say("ready");
    let mut tally = Tally::default();
    let deadline = mono_ns() + spec.max_ms * 1_000_000;
    let mut failed = None;
    while !tally.stop && failed.is_none() && mono_ns() < deadline {
        let on_event = |id: WaitSetAttachmentId<ipc::Service>| {
            if let Some(&i) = index.get(&id) {
                let (is_active, s, l) = &subs[i];
                if let Err(e) = l.try_wait(|_| {}) {
                    failed = Some(format!("iceoryx2: try_wait: {e:?}"));
                }
                loop {
                    match s.receive() {
                        Ok(Some(sample)) => tally.on(*is_active, sample.payload()),
                        Ok(None) => break,
                        Err(e) => {
                            failed = Some(format!("iceoryx2: receive: {e:?}"));
                            break;
                        }
                    }
                }
            }
            CallbackProgression::Continue
        };
        waitset.wait_and_process_once_with_timeout(on_event, SLICE).map_err(iox("wait_and_process"))?;
    }
    if let Some(e) = failed {
        return Err(e);
    }
    drop(guards);
    tally.print()
}

/// How a one-channel reader reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadHow {
    /// Zero-copy (the stamp read where the message lies) rather than a copy into the reader's buffer.
    pub zero_copy: bool,
    /// Spin rather than sleep.
    pub poll: bool,
}

impl ReadHow {
    /// Every mode, in table order.
    pub const ALL: [ReadHow; 4] = [
        ReadHow { zero_copy: true, poll: true },
        ReadHow { zero_copy: true, poll: false },
        ReadHow { zero_copy: false, poll: true },
        ReadHow { zero_copy: false, poll: false },
    ];

    /// The mode's word on the command line.
    pub fn word(self) -> &'static str {
        match (self.zero_copy, self.poll) {
            (true, true) => "zc-poll",
            (true, false) => "zc-wait",
            (false, true) => "copy-poll",
            (false, false) => "copy-wait",
        }
    }

    fn parse(s: &str) -> Result<ReadHow, String> {
        ReadHow::ALL.into_iter().find(|m| m.word() == s).ok_or_else(|| format!("unknown MODE {s:?}"))
    }
}

/// What a one-channel reader got: per message its sequence number and latency.
struct Got {
    seen: Vec<(u64, u64)>,
}

impl Got {
    fn print(&self) -> Result<(), String> {
        let mut o = std::io::BufWriter::new(std::io::stdout().lock());
        let w = |e: std::io::Error| format!("writing stdout: {e}");
        writeln!(o, "recv {}", self.seen.len()).map_err(w)?;
        for (s, l) in &self.seen {
            writeln!(o, "s {s} {l}").map_err(w)?;
        }
        writeln!(o, "end").map_err(w)?;
        o.flush().map_err(w)
    }
}

/// What one reader reads, and for how long.
struct ReadSpec {
    size: usize,
    how: ReadHow,
    count: usize,
    max_ms: u64,
    readers: usize,
}

fn read_role(system: &str, target: &str, spec: &ReadSpec) -> Result<(), String> {
    let size = spec.size;
    if size < 16 {
        return Err(format!("SIZE {size}: at least 16 bytes (sequence number and stamp)"));
    }
    let got = match system {
        "shm" => shm_read(target, spec)?,
        "iox" => iox_read(target, spec)?,
        "futex" => futex_read(target, spec)?,
        other => return Err(format!("unknown SYSTEM {other:?}: shm, iox or futex")),
    };
    got.print()
}

fn shm_read(target: &str, spec: &ReadSpec) -> Result<Got, String> {
    let &ReadSpec { size, how, count, max_ms, .. } = spec;
    let p = Path::new(target);
    let (Some(dir), Some(name)) = (p.parent(), p.file_name().and_then(|n| n.to_str())) else {
        return Err(format!("target {target:?} is not DIR/NAME"));
    };
    // The driver made the channel (its frame size fits SIZE); the reader starts at its next message.
    let channel = Channel::open(name, Some(dir)).map_err(|e| format!("opening {target}: {e}"))?;
    let mut reader = channel.reader();
    let mut buf = vec![0u8; size];
    let mut got = Got { seen: Vec::with_capacity(count) };
    let wait = if how.poll { Wait::Poll } else { Wait::Timeout(SLICE) };
    say("ready");
    let deadline = mono_ns() + max_ms * 1_000_000;
    while got.seen.len() < count {
        let outcome = if how.zero_copy {
            reader.get_with(ReadMode::Next, wait, head).map_err(|e| format!("get_with: {e}"))?
        } else {
            match reader.get(&mut buf, ReadMode::Next, wait).map_err(|e| format!("get: {e}"))? {
                GetOutcome::Message(info) => GetOutcome::Message((info, head(&buf[..info.len]))),
                GetOutcome::BufferTooSmall { needed } => {
                    return Err(format!("a {needed}-byte message on a {size}-byte channel"))
                }
                GetOutcome::NothingNew => GetOutcome::NothingNew,
                GetOutcome::TimedOut => GetOutcome::TimedOut,
                GetOutcome::Retry => GetOutcome::Retry,
            }
        };
        match outcome {
            GetOutcome::Message((_, Some((seq, stamp)))) => got.seen.push((seq, mono_ns().wrapping_sub(stamp))),
            GetOutcome::Message((_, None)) => break,
            _ => {
                if mono_ns() >= deadline {
                    break;
                }
            }
        }
    }
    Ok(got)
}

fn iox_read(target: &str, spec: &ReadSpec) -> Result<Got, String> {
    let &ReadSpec { size, how, count, max_ms, readers } = spec;
    raise_nofile();
    let node = iox_node()?;
    let sub =
        iox_pubsub(&node, target, readers)?.subscriber_builder().buffer_size(4).create().map_err(iox("subscriber"))?;
    let listener = if how.poll {
        None
    } else {
        Some(iox_event(&node, target, readers)?.listener_builder().create().map_err(iox("listener"))?)
    };
    let mut buf = vec![0u8; size];
    let mut got = Got { seen: Vec::with_capacity(count) };
    say("ready");
    let deadline = mono_ns() + max_ms * 1_000_000;
    let mut spins: u32 = 0;
    while got.seen.len() < count {
        match sub.receive().map_err(iox("receive"))? {
            Some(sample) => {
                let h = if how.zero_copy {
                    head(sample.payload())
                } else {
                    let p = sample.payload();
                    let n = p.len().min(buf.len());
                    buf[..n].copy_from_slice(&p[..n]);
                    head(&buf[..n])
                };
                let now = mono_ns();
                match h {
                    Some((seq, stamp)) => got.seen.push((seq, now.wrapping_sub(stamp))),
                    None => break,
                }
            }
            None => {
                if let Some(l) = &listener {
                    l.timed_wait(|_| {}, SLICE).map_err(iox("timed_wait"))?;
                    if mono_ns() >= deadline {
                        break;
                    }
                } else {
                    std::hint::spin_loop();
                    spins = spins.wrapping_add(1);
                    if spins & 1023 == 0 && mono_ns() >= deadline {
                        break;
                    }
                }
            }
        }
    }
    Ok(got)
}

/// The control reader: sleeps on the broadcast page's futex word and takes each message's stamp.
fn futex_read(target: &str, spec: &ReadSpec) -> Result<Got, String> {
    let &ReadSpec { how, count, max_ms, .. } = spec;
    if how.poll || !how.zero_copy {
        return Err(format!("the futex control reads one way only, zc-wait (not {})", how.word()));
    }
    let page = super::futex::Broadcast::map(Path::new(target), false)?;
    let mut last = page.word();
    let mut got = Got { seen: Vec::with_capacity(count) };
    say("ready");
    let deadline = mono_ns() + max_ms * 1_000_000;
    while got.seen.len() < count && mono_ns() < deadline {
        match page.next(&mut last, SLICE) {
            Some(Some((seq, stamp))) => got.seen.push((seq, mono_ns().wrapping_sub(stamp))),
            Some(None) => break,
            None => {}
        }
    }
    Ok(got)
}
