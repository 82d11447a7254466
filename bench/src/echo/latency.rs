//! `nerve-bench latency`: one-way latency of 64-byte messages at 1 kHz between two processes (seed 001 Fig. 8's
//! first column; BASELINES.md "Local IPC latency"). See bench/README.md, "latency".
//!
//! A row is a [`Path`]: a system name, the transport, and a program whose `lat-recv` / `lat-send` roles take an
//! address string (a URL here). Adding a transport (issue 4: shared memory, pipes, sockets) is one more entry in
//! [`paths`] with a program that implements the two roles and prints the same lines.

use std::time::Duration;

use serde_json::json;

use super::proc::{Proc, Program, Role};
use super::{base_port, cell, clock, lcm_program, nerve_program, placement, round3, Latencies, Out, GROUP};

const SIZE: usize = 64;
const HZ: f64 = 1000.0;
const CASE: &str = "64B_1kHz";

/// One row of the table.
struct Path {
    /// The JSON `system`, e.g. `nerve-udpm`.
    system: &'static str,
    /// The transport, for the table.
    transport: &'static str,
    /// What runs the two roles, or why nothing can.
    program: Result<Program, String>,
    /// The address both roles are given, from a port of this run.
    address: fn(u16) -> String,
}

fn udpm_url(port: u16) -> String {
    format!("udpm://{GROUP}:{port}?ttl=0")
}

fn paths() -> Vec<Path> {
    vec![
        Path { system: "nerve-udpm", transport: "udpm", program: nerve_program(), address: udpm_url },
        Path { system: "lcm-c-udpm", transport: "udpm", program: lcm_program(), address: udpm_url },
    ]
}

struct Row {
    sent: usize,
    lat: Option<Latencies>,
    loss_pct: f64,
}

fn measure(path: &Path, program: &Program, port: u16, count: usize, cpu_send: Option<usize>, cpu_recv: Option<usize>) -> Result<Row, String> {
    let addr = (path.address)(port);
    let max_ms = (count as f64 / HZ * 1e3) as u64 + 5_000;
    let mut rx = Proc::spawn(&format!("{} receiver", path.system), program, Role::LatRecv,
        &[addr.clone(), "LAT".into(), count.to_string(), max_ms.to_string()], cpu_recv)?;
    rx.expect_line("ready", Duration::from_secs(10))?;
    let mut tx = Proc::spawn(&format!("{} sender", path.system), program, Role::LatSend,
        &[addr, "LAT".into(), count.to_string(), format!("{HZ}"), SIZE.to_string()], cpu_send)?;
    let sent_line = tx.collect("sent", Duration::from_millis(max_ms + 5_000))?;
    let lines = rx.collect("end", Duration::from_millis(max_ms + 5_000))?;
    tx.finish(Duration::from_secs(3));
    rx.finish(Duration::from_secs(3));
    let sent: usize = sent_line
        .last()
        .and_then(|l| l.strip_prefix("sent "))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("{} sender printed {sent_line:?}", path.system))?;
    let mut ns = Vec::with_capacity(count);
    for l in &lines {
        if let Some(x) = l.strip_prefix("lat ") {
            ns.push(x.parse::<u64>().map_err(|_| format!("bad line {l:?}"))?);
        }
    }
    let loss_pct = if sent == 0 { 0.0 } else { 100.0 * sent.saturating_sub(ns.len()) as f64 / sent as f64 };
    Ok(Row { sent, lat: Latencies::from_ns(&mut ns), loss_pct })
}

/// Runs the suite.
pub fn run(quick: bool, json: bool) -> i32 {
    let out = Out { json };
    let secs = if quick { 1 } else { 10 };
    let count = (HZ as usize) * secs;
    let place = placement("the sender", "the receiver");
    let load_start = clock::loadavg();
    out.json(json!({"suite": "latency", "kind": "info", "mode": if quick {"quick"} else {"full"}, "host": clock::host(),
        "loadavg": load_start, "placement": place.text, "message_bytes": SIZE, "hz": HZ, "seconds": secs}));
    out.text(&format!(
        "latency: one-way, {SIZE}-byte messages at {HZ} Hz for {secs} s, CLOCK_MONOTONIC stamped by the sender and read by the receiver's handler{}",
        if quick { " [--quick: rough]" } else { "" }
    ));
    out.text(&format!("host {}; load average at start: {load_start} (2 shared vCPUs: other work skews every figure)", clock::host()));
    out.text(&format!("placement: {} (waking a process on the other vCPU costs 35-50 µs here, BASELINES.md)", place.text));
    out.text("");
    out.text(&format!("{:<14} {:<9} {:>6} {:>6} {:>6} {:>8} {:>8} {:>8} {:>8}", "system", "transport", "sent", "recv", "loss%", "mean µs", "p50 µs", "p99 µs", "max µs"));
    let mut rows: Vec<(&'static str, Option<Latencies>)> = Vec::new();
    for (port, p) in (base_port() + 2_000..).zip(paths()) {
        let r = match &p.program {
            Err(e) => Err(e.clone()),
            Ok(prog) => measure(&p, prog, port, count, place.a, place.b),
        };
        match r {
            Ok(r) => {
                out.text(&format!(
                    "{:<14} {:<9} {:>6} {:>6} {:>6.2} {:>8} {:>8} {:>8} {:>8}",
                    p.system,
                    p.transport,
                    r.sent,
                    r.lat.map_or(0, |l| l.n),
                    r.loss_pct,
                    cell(r.lat, |l| l.mean),
                    cell(r.lat, |l| l.p50),
                    cell(r.lat, |l| l.p99),
                    cell(r.lat, |l| l.max)
                ));
                out.latencies("latency", CASE, p.system, r.lat);
                out.json(json!({"suite": "latency", "case": CASE, "system": p.system, "metric": "loss_pct",
                    "value": round3(r.loss_pct), "unit": "%"}));
                rows.push((p.system, r.lat));
            }
            Err(e) => {
                out.text(&format!("{:<14} {:<9} unavailable: {e}", p.system, p.transport));
                out.unavailable("latency", CASE, p.system, &e);
            }
        }
    }
    out.text("");
    out.text("ratios (informative; issue 3 sets no bar on one-way latency): nerve-udpm / lcm-c-udpm");
    let get = |s: &str| rows.iter().find(|(n, _)| *n == s).and_then(|(_, l)| *l);
    match (get("nerve-udpm"), get("lcm-c-udpm")) {
        (Some(n), Some(l)) => {
            out.text(&format!(
                "  mean {:.3}  p50 {:.3}  p99 {:.3}  max {:.3}",
                n.mean / l.mean,
                n.p50 / l.p50,
                n.p99 / l.p99,
                n.max / l.max
            ));
            for (m, a, b) in [("mean", n.mean, l.mean), ("p50", n.p50, l.p50), ("p99", n.p99, l.p99), ("max", n.max, l.max)] {
                out.json(json!({"suite": "latency", "kind": "ratio", "bar": "nerve-udpm / lcm-c-udpm (informative)",
                    "case": CASE, "system": "nerve-udpm", "metric": m, "op": "info", "value": round3(a / b),
                    "limit": null, "pass": null, "definition": format!("nerve-udpm {m} {a:.1} µs / lcm-c-udpm {m} {b:.1} µs")}));
            }
        }
        _ => out.text("  unavailable: a row has no samples"),
    }
    let load_end = clock::loadavg();
    out.text(&format!("load average at end: {load_end}"));
    out.json(json!({"suite": "latency", "kind": "info", "loadavg_end": load_end}));
    0
}
