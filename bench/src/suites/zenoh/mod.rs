//! The zenoh suite (`nerve-bench zenoh [--fleet] [--quick] [--json]`, bench/README.md "zenoh"): Nerve over Zenoh
//! between two hosts made of network namespaces joined by a veth pair, to show what Nerve's layer adds to Zenoh's:
//!
//! - (a) 64-byte and 64-KiB messages at 1 kHz and flat out through the `zenoh://` provider (Bus publish to Bus
//!   subscription) against the `zenoh` crate's own pub/sub with the same configuration (peer mode, explicit listen
//!   and connect endpoints on the veth addresses, scouting off), the same keys and publisher QoS: one-way latency
//!   p50/p99/max, msgs/s and MB/s, and the bars (p50 and p99 within 1.2x of plain Zenoh, throughput at least 0.8x);
//! - (b) a bridge hop: an shm publisher, `nerve bridge shm:// zenoh://` on host A, `nerve bridge zenoh:// shm://` on
//!   host B, an shm reader, against plain Zenoh between the same hosts (the added p50 and p99);
//! - (c) the same 1 kHz 64-byte stream over udpm, multicast across the veth with TTL 1;
//! - the fleet: N robots (processes on host B) each publishing a 1 kHz pose and a 10 Hz 100-KiB map tile through one
//!   Zenoh router (host A) to one station: delivered vs sent, p99 latency, the router's CPU and memory per robot
//!   (`fleet`).
//!
//! Every process is a child: this program in a hidden role (`role`) or `nerve bridge`, started with `ip netns exec`
//! (`net`). Latency is one-way on CLOCK_MONOTONIC, which network namespaces share. Without root the suite says so
//! and measures nothing.

mod fleet;
mod net;
mod role;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::clock;
use net::{Hosts, Proc, ADDR_A, ADDR_B};
pub use role::hidden_role;

const SUITE: &str = "zenoh";
const NERVE: &str = "nerve zenoh://";
const PLAIN: &str = "zenoh (Rust API)";

/// Text for the table, JSON for `--json`.
pub struct Out {
    json: bool,
}

impl Out {
    fn text(&self, s: &str) {
        if !self.json {
            println!("{s}");
        }
    }
    fn json(&self, v: Value) {
        if self.json {
            println!("{v}");
        }
    }
}

/// How long each measurement runs.
#[derive(Clone, Copy)]
struct Timing {
    warm_ms: u64,
    run_ms: u64,
    /// Rounds of part (a).
    rounds: u32,
}

/// One one-way measurement.
#[derive(Clone, Default)]
struct Measured {
    sent: u64,
    received: u64,
    p50_us: Option<f64>,
    p99_us: Option<f64>,
    max_us: Option<f64>,
    msgs_per_s: f64,
    mb_per_s: f64,
}

fn f64_of(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// Reads a subscriber's result for class `class`.
fn class_result(sub: &Value, class: &str) -> (u64, u64, u64, u64, [Option<f64>; 3]) {
    let c = &sub["classes"][class];
    let u = |k: &str| c[k].as_u64().unwrap_or(0);
    (
        u("received"),
        u("bytes"),
        u("first_ns"),
        u("last_ns"),
        [f64_of(&c["p50_us"]), f64_of(&c["p99_us"]), f64_of(&c["max_us"])],
    )
}

/// Where this program is, for the roles.
fn me() -> Result<PathBuf, String> {
    std::env::current_exe().map_err(|e| format!("finding nerve-bench: {e}"))
}

fn role_args(words: &[&str]) -> Vec<String> {
    std::iter::once("zenoh-role").chain(words.iter().copied()).map(String::from).collect()
}

/// One stream `channel` of `size` bytes at `rate` (0: flat out) from a publisher in `pub_ns` to a subscriber in
/// `sub_ns`. The subscriber starts first and says when it is ready; the publisher warms up, then measures.
#[allow(clippy::too_many_arguments)]
fn one_way(
    pub_ns: &str,
    sub_ns: &str,
    api: &str,
    pub_url: &str,
    sub_url: &str,
    size: usize,
    rate: u64,
    t: Timing,
) -> Result<Measured, String> {
    let exe = me()?;
    let mut sub = Proc::spawn(sub_ns, &exe, &role_args(&["sub", api, sub_url]), "subscriber", false)?;
    sub.ready(Duration::from_secs(15))?;
    let stream = format!("PING:{size}:{rate}");
    let (warm, run) = (t.warm_ms.to_string(), t.run_ms.to_string());
    let mut publisher =
        Proc::spawn(pub_ns, &exe, &role_args(&["pub", api, pub_url, &warm, &run, &stream]), "publisher", false)?;
    let sent = publisher.line(Duration::from_millis(t.warm_ms + t.run_ms + 15_000))?;
    // What is still in flight arrives; then the subscriber reports.
    std::thread::sleep(Duration::from_millis(300));
    let got = sub.finish(Duration::from_secs(10))?;
    drop(publisher);
    let (received, bytes, first, last, [p50, p99, max]) = class_result(&got, "PING");
    let span = if received > 1 && last > first { (last - first) as f64 / 1e9 } else { t.run_ms as f64 / 1e3 };
    Ok(Measured {
        sent: sent["sent"]["PING"].as_u64().unwrap_or(0),
        received,
        p50_us: p50,
        p99_us: p99,
        max_us: max,
        msgs_per_s: received as f64 / span,
        mb_per_s: bytes as f64 / span / 1e6,
    })
}

fn zenoh_urls(port: u16) -> (String, String) {
    (
        format!("zenoh://tcp/{ADDR_B}:{port}?mode=peer&scouting=off"),
        format!("zenoh://?mode=peer&scouting=off&listen=tcp/{ADDR_B}:{port}"),
    )
}

fn header(out: &Out) {
    out.text(&format!(
        "  {:<22} {:<40} {:>8} {:>8} {:>9} {:>9} {:>9} {:>10} {:>8}",
        "case", "system", "sent", "received", "p50 µs", "p99 µs", "max µs", "msgs/s", "MB/s"
    ));
}

fn row(out: &Out, part: &str, case: &str, label: &str, system: &str, round: u32, r: &Result<Measured, String>) {
    let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
    match r {
        Ok(m) => {
            out.text(&format!(
                "  {case:<22} {label:<40} {:>8} {:>8} {:>9} {:>9} {:>9} {:>10.0} {:>8.2}",
                m.sent,
                m.received,
                f(m.p50_us),
                f(m.p99_us),
                f(m.max_us),
                m.msgs_per_s,
                m.mb_per_s
            ));
            out.json(json!({"suite": SUITE, "kind": "row", "part": part, "case": case, "system": system,
                "round": round, "sent": m.sent, "received": m.received, "p50_us": r1(m.p50_us), "p99_us": r1(m.p99_us),
                "max_us": r1(m.max_us),
                "msgs_per_s": m.msgs_per_s.round(), "mb_per_s": (m.mb_per_s * 100.0).round() / 100.0}));
        }
        Err(e) => {
            out.text(&format!("  {case:<22} {label:<40} unavailable: {e}"));
            out.json(json!({"suite": SUITE, "kind": "row", "part": part, "case": case, "system": system,
                "round": round, "status": "unavailable", "reason": e}));
        }
    }
}

/// Rounded to 0.1 (µs) for JSON.
pub fn r1(v: Option<f64>) -> Option<f64> {
    v.map(|v| (v * 10.0).round() / 10.0)
}

/// One PASS/MISS line: `value op limit`.
fn bar(out: &Out, name: &str, case: &str, value: Option<f64>, op: &str, limit: f64, definition: &str) {
    match value {
        Some(v) => {
            let pass = if op == "<=" { v <= limit } else { v >= limit };
            out.text(&format!(
                "  {} {name:<26} {case:<18} {definition} = {v:.3} {op} {limit}",
                if pass { "PASS" } else { "MISS" }
            ));
            out.json(
                json!({"suite": SUITE, "kind": "bar", "bar": name, "case": case, "value": (v * 1000.0).round() / 1000.0,
                "op": op, "limit": limit, "pass": pass, "definition": definition}),
            );
        }
        None => {
            out.text(&format!("  UNAVAILABLE {name:<26} {case:<18} {definition}: not measured"));
            out.json(json!({"suite": SUITE, "kind": "bar", "bar": name, "case": case, "value": null, "pass": null,
                "definition": definition}));
        }
    }
}

fn ratio(
    a: &Result<Measured, String>,
    b: &Result<Measured, String>,
    f: impl Fn(&Measured) -> Option<f64>,
) -> Option<f64> {
    match (a, b) {
        (Ok(a), Ok(b)) => match (f(a), f(b)) {
            (Some(x), Some(y)) if y > 0.0 => Some(x / y),
            _ => None,
        },
        _ => None,
    }
}

/// Part (a): the provider against plain Zenoh; returns plain Zenoh's 64-byte 1 kHz run for (b).
fn provider_vs_zenoh(out: &Out, hosts: &Hosts, t: Timing, port: &mut u16) -> Result<Measured, String> {
    out.text("");
    out.text(&format!(
        "(a) {NERVE} (Bus publish -> Bus subscription) vs {PLAIN}: host A -> host B over the veth; both peers, \
         scouting off, B listens on tcp/{ADDR_B}, A connects; key nerve/PING, dropping congestion control, express up \
         to {} bytes; {} ms warm-up, {} ms measured, {} round(s)",
        nerve_zenoh::EXPRESS_MAX,
        t.warm_ms,
        t.run_ms,
        t.rounds
    ));
    header(out);
    let cases: [(&str, usize, u64); 4] = [
        ("64 B at 1 kHz", 64, 1000),
        ("64 KiB at 1 kHz", 65536, 1000),
        ("64 B flat out", 64, 0),
        ("64 KiB flat out", 65536, 0),
    ];
    // Rounds alternate the two systems case by case, so both see the same moments of this shared machine; the bars
    // take each figure's median over the rounds.
    let mut results: Vec<(&str, [Rounds; 2])> = cases.iter().map(|c| (c.0, [Vec::new(), Vec::new()])).collect();
    for round in 1..=t.rounds {
        for (i, &(case, size, rate)) in cases.iter().enumerate() {
            for (j, (system, api)) in [(NERVE, "bus"), (PLAIN, "zenoh")].into_iter().enumerate() {
                *port += 1;
                let (pub_url, sub_url) = zenoh_urls(*port);
                let r = one_way(&hosts.a, &hosts.b, api, &pub_url, &sub_url, size, rate, t);
                let label = if t.rounds > 1 { format!("{system} (round {round})") } else { system.to_string() };
                row(out, "a", case, &label, system, round, &r);
                results[i].1[j].push(r);
            }
        }
    }
    let medians: Vec<(&str, [Result<Measured, String>; 2])> =
        results.iter().map(|(case, [n, z])| (*case, [median(n), median(z)])).collect();
    if t.rounds > 1 {
        out.text("");
        out.text(&format!("  median of each figure over the {} rounds:", t.rounds));
        for (case, pair) in &medians {
            for (system, r) in [NERVE, PLAIN].into_iter().zip(pair) {
                row(out, "a-median", case, system, system, 0, r);
            }
        }
    }
    out.text("");
    out.text(&format!(
        "bars (issue 22), from this run{}:",
        if t.rounds > 1 { " (medians over the rounds)" } else { "" }
    ));
    for (case, [n, z]) in &medians {
        if case.ends_with("1 kHz") {
            bar(out, "p50 within 1.2x of zenoh", case, ratio(n, z, |m| m.p50_us), "<=", 1.2, "nerve p50 / zenoh p50");
            bar(out, "p99 within 1.2x of zenoh", case, ratio(n, z, |m| m.p99_us), "<=", 1.2, "nerve p99 / zenoh p99");
        } else {
            let r = ratio(n, z, |m| Some(m.msgs_per_s));
            bar(out, "throughput >= 0.8x zenoh", case, r, ">=", 0.8, "nerve msgs/s / zenoh msgs/s");
        }
    }
    let [_, plain] =
        medians.into_iter().next().map(|m| m.1).unwrap_or_else(|| [Err(String::new()), Err(String::new())]);
    plain
}

/// One system's rounds of one case.
type Rounds = Vec<Result<Measured, String>>;

/// Each figure's median over the rounds that measured (sent and received: their sums).
fn median(rounds: &[Result<Measured, String>]) -> Result<Measured, String> {
    let ok: Vec<&Measured> = rounds.iter().filter_map(|r| r.as_ref().ok()).collect();
    if ok.is_empty() {
        return Err(rounds.iter().find_map(|r| r.as_ref().err().cloned()).unwrap_or_else(|| "not run".into()));
    }
    let med = |f: &dyn Fn(&Measured) -> Option<f64>| -> Option<f64> {
        let mut v: Vec<f64> = ok.iter().filter_map(|m| f(m)).collect();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            None
        } else if v.len() % 2 == 1 {
            Some(v[v.len() / 2])
        } else {
            Some((v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0)
        }
    };
    Ok(Measured {
        sent: ok.iter().map(|m| m.sent).sum(),
        received: ok.iter().map(|m| m.received).sum(),
        p50_us: med(&|m| m.p50_us),
        p99_us: med(&|m| m.p99_us),
        max_us: med(&|m| m.max_us),
        msgs_per_s: med(&|m| Some(m.msgs_per_s)).unwrap_or(0.0),
        mb_per_s: med(&|m| Some(m.mb_per_s)).unwrap_or(0.0),
    })
}

/// Part (b): shm -> bridge -> zenoh -> bridge -> shm.
fn bridge_hop(out: &Out, hosts: &Hosts, t: Timing, port: &mut u16, plain: &Result<Measured, String>) {
    out.text("");
    out.text(
        "(b) a bridge hop, 64 B at 1 kHz: shm publisher -> nerve bridge shm:// zenoh:// (host A, listens) -> \
         nerve bridge zenoh:// shm:// (host B, connects) -> shm reader, vs zenoh (Rust API) A -> B in (a) (its median \
         over the rounds)",
    );
    header(out);
    let case = "64 B at 1 kHz";
    let system = "shm > bridge > zenoh > bridge > shm";
    let r = (|| {
        let nerve = me()?.with_file_name("nerve");
        if !nerve.exists() {
            return Err("no nerve binary next to nerve-bench (cargo build --release -p nerve-cli)".to_string());
        }
        let dir = std::env::temp_dir().join(format!("nerve-bench-zenoh-{}", std::process::id()));
        let _cleanup = RemoveDir(dir.clone());
        let shm = |side: &str| -> Result<String, String> {
            let d = dir.join(side);
            std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
            Ok(format!("shm://?dir={}&frames=64&frame_size=64K", d.display()))
        };
        let (shm_a, shm_b) = (shm("a")?, shm("b")?);
        *port += 1;
        let listen = format!("zenoh://?mode=peer&scouting=off&listen=tcp/{ADDR_A}:{port}");
        let connect = format!("zenoh://tcp/{ADDR_A}:{port}?mode=peer&scouting=off");
        let bridge = |from: &str, to: &str| -> Vec<String> {
            ["bridge", from, to, "--channel", "PING", "--interval", "60"].iter().map(|s| s.to_string()).collect()
        };
        let _bridge_a = Proc::spawn(&hosts.a, &nerve, &bridge(&shm_a, &listen), "nerve bridge (A)", true)?;
        std::thread::sleep(Duration::from_millis(500));
        let _bridge_b = Proc::spawn(&hosts.b, &nerve, &bridge(&connect, &shm_b), "nerve bridge (B)", true)?;
        std::thread::sleep(Duration::from_millis(1000));
        one_way(&hosts.a, &hosts.b, "bus", &shm_a, &shm_b, 64, 1000, t)
    })();
    row(out, "b", case, system, system, 1, &r);
    match (&r, plain) {
        (Ok(b), Ok(z)) => {
            let add = |x: Option<f64>, y: Option<f64>| x.zip(y).map(|(x, y)| x - y);
            let (p50, p99) = (add(b.p50_us, z.p50_us), add(b.p99_us, z.p99_us));
            let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:+.0} µs"));
            out.text(&format!("  added by the bridge hop vs zenoh (Rust API) A -> B: p50 {}, p99 {}", f(p50), f(p99)));
            out.json(json!({"suite": SUITE, "kind": "added", "part": "b", "case": case,
                "definition": "bridge hop minus zenoh (Rust API), same hosts", "added_p50_us": r1(p50),
                "added_p99_us": r1(p99)}));
        }
        _ => out.text("  added by the bridge hop: unavailable (a run above failed)"),
    }
}

/// Removes a directory when dropped.
struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Part (c): udpm across the veth, TTL 1.
fn udpm(out: &Out, hosts: &Hosts, t: Timing) {
    out.text("");
    out.text(
        "(c) nerve udpm:// for reference, 64 B at 1 kHz: multicast 239.255.78.1 across the veth with TTL 1 (routed \
         over the link in each namespace; TTL 0 never leaves a host)",
    );
    header(out);
    let url = "udpm://239.255.78.1:7800?ttl=1";
    let r = one_way(&hosts.a, &hosts.b, "bus", url, url, 64, 1000, t);
    let system = "nerve udpm:// (TTL 1)";
    row(out, "c", "64 B at 1 kHz", system, system, 1, &r);
}

/// Runs the suite; the exit code (0 when it ran or was skipped for want of root; the bars are reported, not
/// enforced, as in the latency suite).
pub fn run(quick: bool, json: bool, fleet_only: bool) -> i32 {
    let out = Out { json };
    let t = if quick {
        Timing { warm_ms: 500, run_ms: 1000, rounds: 1 }
    } else {
        Timing { warm_ms: 1000, run_ms: 5000, rounds: 3 }
    };
    out.text(&format!(
        "zenoh: Nerve over Zenoh between two network namespaces joined by a veth pair (A {ADDR_A}, B {ADDR_B}); \
         one-way latency on CLOCK_MONOTONIC (bench/README.md, \"zenoh\"){}",
        if quick { "; --quick: short runs, rough figures" } else { "" }
    ));
    out.text(&format!("host {}, load average at start: {}", clock::host(), clock::loadavg()));
    if let Some(why) = net::unavailable() {
        out.text(&format!("zenoh suite skipped: {why}"));
        out.json(json!({"suite": SUITE, "kind": "skipped", "reason": why}));
        return 0;
    }
    let hosts = match Hosts::make() {
        Ok(h) => h,
        Err(e) => {
            out.text(&format!("zenoh suite skipped: cannot make the namespaces: {e}"));
            out.json(json!({"suite": SUITE, "kind": "skipped", "reason": e}));
            return 0;
        }
    };
    out.json(json!({"suite": SUITE, "kind": "info", "host": clock::host(), "loadavg_start": clock::loadavg(),
        "warm_ms": t.warm_ms, "run_ms": t.run_ms, "quick": quick}));
    let mut port = 7446u16;
    if !fleet_only {
        let plain = provider_vs_zenoh(&out, &hosts, t, &mut port);
        bridge_hop(&out, &hosts, t, &mut port, &plain);
        udpm(&out, &hosts, t);
    }
    fleet::run(&out, &hosts, quick);
    out.text("");
    out.text(&format!("load average at end: {}", clock::loadavg()));
    out.json(json!({"suite": SUITE, "kind": "info", "loadavg_end": clock::loadavg()}));
    drop(hosts);
    0
}
