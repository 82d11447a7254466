//! The nerve side of the echo and latency suites: the same four roles as `csrc/lcm_echo.c`, on nerve-bus, printing
//! the same lines. Run as hidden subcommands of nerve-bench (`nerve-bench echo-client URL REQ REP MAX_MS`, ...), with
//! the same positional arguments as the C program.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nerve_bus::{Bus, Overflow};

use super::clock::{mono_ns, set_timer_slack, sleep_until_ns};
use super::MSG_SIZE;

fn open(url: &str) -> Result<Bus, String> {
    Bus::new(Some(url)).map_err(|e| format!("Bus::new({url}): {e}"))
}

fn ready() {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "ready");
    let _ = o.flush();
}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("bad {what}: {s:?}"))
}

/// Runs a hidden role; `args` are the words after the role's name.
pub fn run_role(role: &str, args: &[String]) -> Result<(), String> {
    set_timer_slack();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match (role, a.as_slice()) {
        ("echo-client", [url, req, rep, max_ms]) => client(url, req, rep, num(max_ms, "MAX_MS")?),
        ("echo-source", [url, req, prefix, clients, rate, dur, drain]) => source(
            url,
            req,
            prefix,
            num(clients, "CLIENTS")?,
            num(rate, "RATE_BPS")?,
            num(dur, "DURATION_MS")?,
            num(drain, "DRAIN_MS")?,
        ),
        ("lat-recv", [url, chan, count, max_ms]) => lat_recv(url, chan, num(count, "COUNT")?, num(max_ms, "MAX_MS")?),
        ("lat-send", [url, chan, count, hz, size]) => {
            lat_send(url, chan, num(count, "COUNT")?, num(hz, "HZ")?, num(size, "SIZE")?)
        }
        _ => Err(format!("bad arguments for {role}: {args:?} (see src/harness/nerve.rs)")),
    }
}

/// Republishes every message of `req` on `rep` from the handler, with the bus's default subscription (queue of 30,
/// drop oldest), until a stop message or `max_ms`. Callbacks run through `spawn_dispatcher`, which on udpm and mpudpm
/// runs them on the transport's receive thread: the way to use Nerve when latency matters (LCM, whose only dispatch is
/// `lcm_handle` on the application's thread, pays a second thread wake-up per message).
fn client(url: &str, req: &str, rep: &str, max_ms: u64) -> Result<(), String> {
    let bus = open(url)?;
    let stop = Arc::new(AtomicBool::new(false));
    let (b, s, rep) = (bus.clone(), Arc::clone(&stop), rep.to_string());
    bus.subscribe_raw(req, move |m| {
        if m.data.len() < 16 {
            s.store(true, Ordering::Relaxed);
        } else {
            let _ = b.publish_raw(&rep, &m.data);
        }
    })
    .map_err(|e| format!("subscribe {req}: {e}"))?;
    let _dispatcher = bus.spawn_dispatcher().map_err(|e| format!("dispatcher: {e}"))?;
    ready();
    let deadline = mono_ns() + max_ms * 1_000_000;
    while !stop.load(Ordering::Relaxed) && mono_ns() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

struct Replies {
    rtt: Vec<u64>,
}

#[allow(clippy::too_many_arguments)]
fn source(
    url: &str,
    req: &str,
    prefix: &str,
    clients: usize,
    rate_bps: f64,
    duration_ms: u64,
    drain_ms: u64,
) -> Result<(), String> {
    let bus = open(url)?;
    let received: Arc<Vec<AtomicU64>> = Arc::new((0..clients).map(|_| AtomicU64::new(0)).collect());
    let replies = Arc::new(Mutex::new(Replies { rtt: Vec::with_capacity(1 << 16) }));
    let (r, rs, plen) = (Arc::clone(&received), Arc::clone(&replies), prefix.len());
    // The source's own queue is unbounded (as lcm_echo.c sets capacity 0): loss is measured in the clients and the
    // transport, not in the source.
    bus.subscribe_with(&format!("{prefix}[0-9]+"), 0, Overflow::DropOldest, move |m| {
        let now = mono_ns();
        if m.data.len() < 16 {
            return Ok(());
        }
        let Some(k) = m.channel.get(plen..).and_then(|s| s.parse::<usize>().ok()).filter(|&k| k < r.len()) else {
            return Ok(());
        };
        let ts = u64::from_le_bytes(m.data[8..16].try_into().expect("16 bytes checked"));
        rs.lock().expect("replies").rtt.push(now.wrapping_sub(ts));
        r[k].fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
    .map_err(|e| format!("subscribe: {e}"))?;
    let dispatcher = bus.spawn_dispatcher().map_err(|e| format!("dispatcher: {e}"))?;

    let mut msg = [0u8; MSG_SIZE];
    for (i, b) in msg.iter_mut().enumerate() {
        *b = (i * 7) as u8;
    }
    let per_s = rate_bps / MSG_SIZE as f64;
    let mut sent: u64 = 0;
    let t0 = mono_ns();
    let end = t0 + duration_ms * 1_000_000;
    loop {
        let now = mono_ns();
        if now >= end {
            break;
        }
        let due = if per_s > 0.0 { ((now - t0) as f64 * 1e-9 * per_s) as u64 + 1 } else { sent + 1 };
        while sent < due {
            msg[0..8].copy_from_slice(&sent.to_le_bytes());
            msg[8..16].copy_from_slice(&mono_ns().to_le_bytes());
            bus.publish_raw(req, &msg).map_err(|e| format!("publish: {e}"))?;
            sent += 1;
        }
        if per_s > 0.0 {
            let next = (t0 + (sent as f64 / per_s * 1e9) as u64).min(end);
            sleep_until_ns(next);
        }
    }
    let send_ns = mono_ns() - t0;
    let drain_end = mono_ns() + drain_ms * 1_000_000;
    loop {
        let got: u64 = received.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        if got >= sent * clients as u64 || mono_ns() >= drain_end {
            break;
        }
        sleep_until_ns(mono_ns() + 1_000_000);
    }
    drop(dispatcher);
    for _ in 0..3 {
        let _ = bus.publish_raw(req, &[0u8; 8]);
        sleep_until_ns(mono_ns() + 5_000_000);
    }
    let out = std::io::stdout();
    let mut o = std::io::BufWriter::new(out.lock());
    let w = |e: std::io::Error| e.to_string();
    writeln!(o, "sent {sent} {send_ns}").map_err(w)?;
    for (k, c) in received.iter().enumerate() {
        writeln!(o, "client {k} {}", c.load(Ordering::Relaxed)).map_err(w)?;
    }
    for x in &replies.lock().expect("replies").rtt {
        writeln!(o, "rtt {x}").map_err(w)?;
    }
    writeln!(o, "end").map_err(w)?;
    o.flush().map_err(w)
}

fn lat_recv(url: &str, chan: &str, count: usize, max_ms: u64) -> Result<(), String> {
    let bus = open(url)?;
    let stop = Arc::new(AtomicBool::new(false));
    let lat = Arc::new(Mutex::new(Vec::<u64>::with_capacity(count)));
    let (s, l) = (Arc::clone(&stop), Arc::clone(&lat));
    bus.subscribe_raw(chan, move |m| {
        let now = mono_ns();
        if m.data.len() < 16 {
            s.store(true, Ordering::Relaxed);
            return;
        }
        let ts = u64::from_le_bytes(m.data[8..16].try_into().expect("16 bytes checked"));
        let mut l = l.lock().expect("lat");
        if l.len() < count {
            l.push(now.wrapping_sub(ts));
        }
        if l.len() >= count {
            s.store(true, Ordering::Relaxed);
        }
    })
    .map_err(|e| format!("subscribe {chan}: {e}"))?;
    let dispatcher = bus.spawn_dispatcher().map_err(|e| format!("dispatcher: {e}"))?;
    ready();
    let deadline = mono_ns() + max_ms * 1_000_000;
    while !stop.load(Ordering::Relaxed) && mono_ns() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(dispatcher);
    let lat = lat.lock().expect("lat");
    let mut o = std::io::BufWriter::new(std::io::stdout().lock());
    let w = |e: std::io::Error| e.to_string();
    writeln!(o, "recv {}", lat.len()).map_err(w)?;
    for x in lat.iter() {
        writeln!(o, "lat {x}").map_err(w)?;
    }
    writeln!(o, "end").map_err(w)?;
    o.flush().map_err(w)
}

fn lat_send(url: &str, chan: &str, count: usize, hz: f64, size: usize) -> Result<(), String> {
    let bus = open(url)?;
    let mut msg = vec![0u8; size.max(16)];
    let period = (1e9 / hz) as u64;
    let mut t = mono_ns() + period;
    for i in 0..count as u64 {
        sleep_until_ns(t);
        msg[0..8].copy_from_slice(&i.to_le_bytes());
        msg[8..16].copy_from_slice(&mono_ns().to_le_bytes());
        bus.publish_raw(chan, &msg).map_err(|e| format!("publish: {e}"))?;
        t += period;
    }
    for _ in 0..3 {
        sleep_until_ns(mono_ns() + 5_000_000);
        let _ = bus.publish_raw(chan, &[0u8; 8]);
    }
    println!("sent {count}");
    Ok(())
}
