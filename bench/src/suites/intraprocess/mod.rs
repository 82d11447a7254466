//! `nerve-bench intraprocess`: node graphs in one process with Nerve's in-process delivery, and the same graphs with
//! in-process delivery turned off (over shm and over udpm), in the same run: what delivering by reference saves in
//! latency, CPU, memory and copies. See bench/README.md, "intraprocess".
//!
//! Four graphs (`topology`): the image pipeline and its two-viewer variant (owned 640x480 RGB images), and iRobot's
//! Sierra Nevada and Mont Blanc (shared subscriptions). For each graph and system: end-to-end latency (mean, p50,
//! p99, max), CPU %, resident memory and its growth over the run, copies and decodes per publication (`graph` says
//! how each is measured). The bars of issue 5 are computed from this run and printed as PASS / MISS.
//!
//! Before the graphs, `measure::copy_floor` times one bare image copy on this machine (back to back, and after 33 ms
//! idle as every frame is), so a graph that requires copies can be read against it; each in-run copy is timed too.

#[cfg(has_nerve_rust)]
mod frame;
#[cfg(has_nerve_rust)]
mod graph;
pub(crate) mod measure;
mod topology;

use serde_json::json;

use measure::{Measured, System};

use crate::harness::clock::{host, loadavg};
use crate::harness::{round3, Out};

const SUITE: &str = "intraprocess";

/// Every system, in row order.
const SYSTEMS: [System; 3] = [System::Inproc, System::Shm, System::Udpm];

/// The bars of issue 5.
const P50_RATIO: f64 = 20.0;
const GROWTH_PCT: f64 = 5.0;

/// A base port for this run, below the ephemeral range (runs started together use different ports).
fn base_port() -> u16 {
    14_000 + (std::process::id() % 10) as u16 * 100
}

/// Runs the suite; returns the exit code.
pub fn run(quick: bool, json: bool) -> i32 {
    let out = Out { json };
    let (inproc_s, transport_s) = if quick { (3.0, 3.0) } else { (60.0, 10.0) };
    let topologies = topology::all();
    let load = loadavg();
    let malloc = measure::realtime_malloc();
    let floor = measure::copy_floor(topology::IMAGE_BYTES);
    out.json(json!({"suite": SUITE, "kind": "info", "mode": if quick {"quick"} else {"full"}, "host": host(),
        "loadavg": load, "executor": "all nodes' timers and callbacks on one thread (ROS 2's intra-process design article's all-in-one executor)",
        "malloc": malloc, "seconds_inproc": inproc_s, "seconds_transport": transport_s,
        "copy_floor": {"bytes": topology::IMAGE_BYTES, "warm_p50_us": round3(floor.warm_us), "idle_33ms_p50_us": round3(floor.idle_us),
            "minor_faults_per_copy": round3(floor.faults_per_copy), "dst_minus_src_mod_4096": floor.alias}}));
    out.text(&format!(
        "intraprocess: ROS 2's intra-process design article's in-process suite, every node in this process, timers and callbacks on one executor thread{}",
        if quick { " [--quick: short runs, rough]" } else { "" }
    ));
    out.text(&format!(
        "host {}; load average at start: {load} (2 shared vCPUs: other work skews every figure)",
        host()
    ));
    out.text(&format!(
        "nerve-inproc: one inproc:// bus for all nodes, {inproc_s} s per graph; nerve-shm, nerve-udpm: one bus per node \
         (in-process delivery off), {transport_s} s per graph; the first tenth of each run is warm-up"
    ));
    out.text("latency: publish (first publication, CLOCK_MONOTONIC) to each consuming callback; copies and decodes per publication");
    out.text(&format!("allocator: {malloc}"));
    out.text(&format!(
        "copy floor: a bare clone of a fresh {} B image, same allocator: p50 {:.1} µs back to back, {:.1} µs after 33 ms \
         idle (as every frame here); {:.2} minor page faults per copy; (dst - src) % 4096 = {}",
        topology::IMAGE_BYTES,
        floor.warm_us,
        floor.idle_us,
        floor.faults_per_copy,
        floor.alias
    ));
    for t in &topologies {
        let (p, s) = t.counts();
        out.text(&format!("  {}: {} nodes, {p} publishers, {s} subscriptions", t.case, t.nodes.len()));
    }
    out.text("");
    out.text(&format!(
        "{:<24} {:<13} {:>6} {:>13} {:>8} {:>8} {:>8} {:>8} {:>6} {:>7} {:>8} {:>7} {:>8}",
        "case",
        "system",
        "pubs",
        "recv/expected",
        "mean µs",
        "p50 µs",
        "p99 µs",
        "max µs",
        "CPU %",
        "RSS MB",
        "growth %",
        "copies",
        "decodes"
    ));
    // NERVE_BENCH_CASES=sierra_nevada,mont_blanc and NERVE_BENCH_SYSTEMS=nerve-inproc run only those (for profiling;
    // a recorded run measures all).
    let only = |var: &str| std::env::var(var).ok().map(|v| v.split(',').map(str::to_string).collect::<Vec<_>>());
    let (cases, systems) = (only("NERVE_BENCH_CASES"), only("NERVE_BENCH_SYSTEMS"));
    if cases.is_some() || systems.is_some() {
        out.text(&format!("only: cases {cases:?}, systems {systems:?} (NERVE_BENCH_CASES / NERVE_BENCH_SYSTEMS)"));
    }
    let mut results: Vec<(&'static str, System, Result<Measured, String>)> = Vec::new();
    let mut port = base_port();
    for topo in &topologies {
        if cases.as_ref().is_some_and(|c| !c.iter().any(|c| c == topo.case)) {
            continue;
        }
        for system in SYSTEMS {
            port += 1;
            if systems.as_ref().is_some_and(|s| !s.iter().any(|s| s == system.name())) {
                continue;
            }
            let secs = if system == System::Inproc { inproc_s } else { transport_s };
            #[cfg(has_nerve_rust)]
            let r = graph::run(topo, system, secs, port);
            #[cfg(not(has_nerve_rust))]
            let r: Result<Measured, String> = {
                let _ = (secs, port);
                Err(format!("the generated Rust for bench/types is missing: {}", env!("BENCH_STATUS_NERVE_RUST")))
            };
            report(&out, topo.case, system, &r);
            results.push((topo.case, system, r));
        }
        out.text("");
    }
    bars(&out, &topologies, &results, quick, inproc_s, &floor);
    let load_end = loadavg();
    out.text(&format!("load average at end: {load_end}"));
    out.json(json!({"suite": SUITE, "kind": "info", "loadavg_end": load_end}));
    0
}

fn report(out: &Out, case: &str, system: System, r: &Result<Measured, String>) {
    let sys = system.name();
    let m = match r {
        Ok(m) => m,
        Err(e) => {
            out.text(&format!("{case:<24} {sys:<13} unavailable: {e}"));
            out.json(json!({"suite": SUITE, "case": case, "system": sys, "status": "unavailable", "reason": e}));
            return;
        }
    };
    let lat = m.hist.latencies();
    let cell = |f: fn(&crate::harness::Latencies) -> f64| {
        lat.as_ref().map(|l| format!("{:.1}", f(l))).unwrap_or_else(|| "-".into())
    };
    out.text(&format!(
        "{case:<24} {sys:<13} {:>6} {:>13} {:>8} {:>8} {:>8} {:>8} {:>6.1} {:>7.1} {:>8.2} {:>7.3} {:>8.3}",
        m.published,
        format!("{}/{}", m.hist.n(), m.expected),
        cell(|l| l.mean),
        cell(|l| l.p50),
        cell(|l| l.p99),
        cell(|l| l.max),
        m.cpu_pct,
        m.rss_mb,
        m.rss_growth_pct,
        m.copies_per_pub,
        m.decodes_per_pub,
    ));
    if let Some(c) = &m.copy {
        out.text(&format!(
            "{:<24} {:<13} ^ its {} copies: p50 {:.1} µs, max {:.1} µs each ((dst - src) % 4096 = {}); {:.2} minor page faults per publication",
            "", "", c.n, c.p50, c.max, m.copy_alias, m.faults_per_pub
        ));
    }
    for name in ["mean", "p50", "p99", "max"] {
        let v = lat.as_ref().map(|l| match name {
            "mean" => l.mean,
            "p50" => l.p50,
            "p99" => l.p99,
            _ => l.max,
        });
        match v {
            Some(v) => out.json(
                json!({"suite": SUITE, "case": case, "system": sys, "metric": name, "value": round3(v), "unit": "us"}),
            ),
            None => out
                .json(json!({"suite": SUITE, "case": case, "system": sys, "metric": name, "value": null, "unit": "us",
                "note": "no sample: nothing was received"})),
        }
    }
    // Extra fields on the copies line: what each copy took, and the page faults around them.
    let copy_fields = json!({"copy_p50_us": m.copy.as_ref().map(|c| round3(c.p50)), "copy_max_us": m.copy.as_ref().map(|c| round3(c.max)),
        "minor_faults_per_msg": round3(m.faults_per_pub)});
    for (metric, v, unit) in [
        ("published", m.published as f64, "msgs"),
        ("received", m.hist.n() as f64, "msgs"),
        ("expected", m.expected as f64, "msgs"),
        ("cpu_pct", m.cpu_pct, "%"),
        ("rss_mb", m.rss_mb, "MB"),
        ("rss_growth_pct", m.rss_growth_pct, "%"),
        ("copies_per_msg", m.copies_per_pub, "copies"),
        ("decodes_per_msg", m.decodes_per_pub, "decodes"),
    ] {
        let mut line =
            json!({"suite": SUITE, "case": case, "system": sys, "metric": metric, "value": round3(v), "unit": unit});
        if metric == "copies_per_msg" {
            if let (Some(l), Some(extra)) = (line.as_object_mut(), copy_fields.as_object()) {
                l.extend(extra.clone());
            }
        }
        out.json(line);
    }
}

type Results = [(&'static str, System, Result<Measured, String>)];

fn find<'a>(results: &'a Results, case: &str, system: System) -> Result<&'a Measured, String> {
    match results.iter().find(|(c, s, _)| *c == case && *s == system) {
        Some((_, _, Ok(m))) => Ok(m),
        Some((_, _, Err(e))) => Err(format!("{}: {e}", system.name())),
        None => Err(format!("{} not run", system.name())),
    }
}

/// One bar line, text and JSON.
#[allow(clippy::too_many_arguments)]
fn bar(
    out: &Out,
    name: &str,
    case: &str,
    metric: &str,
    op: &str,
    value: Result<(f64, String), String>,
    limit: f64,
    pass: impl Fn(f64) -> bool,
) -> Option<bool> {
    match value {
        Ok((v, definition)) => {
            let ok = pass(v);
            out.text(&format!(
                "  {name:<34} {case:<24} {v:>10.3} {op} {limit:<6} {}  ({definition})",
                if ok { "PASS" } else { "MISS" }
            ));
            out.json(json!({"suite": SUITE, "kind": "ratio", "bar": name, "case": case, "system": "nerve-inproc",
                "metric": metric, "op": op, "value": round3(v), "limit": limit, "pass": ok, "definition": definition}));
            Some(ok)
        }
        Err(why) => {
            out.text(&format!("  {name:<34} {case:<24} UNAVAILABLE ({why})"));
            out.json(json!({"suite": SUITE, "kind": "ratio", "bar": name, "case": case, "system": "nerve-inproc",
                "metric": metric, "op": op, "value": null, "pass": null, "reason": why}));
            None
        }
    }
}

fn bars(
    out: &Out,
    topologies: &[topology::Topology],
    results: &Results,
    quick: bool,
    inproc_s: f64,
    floor: &measure::CopyFloor,
) {
    out.text("bars (issue 5), from this run:");
    let (mut pass, mut total) = (0, 0);
    let mut tally = |r: Option<bool>| {
        total += 1;
        pass += r.unwrap_or(false) as usize;
    };
    for t in topologies {
        let v = match (find(results, t.case, System::Udpm), find(results, t.case, System::Inproc)) {
            (Ok(u), Ok(i)) => match (u.hist.latencies(), i.hist.latencies()) {
                (Some(ul), Some(il)) => Ok((
                    ul.p50 / il.p50,
                    format!("nerve-udpm p50 {:.1} µs / nerve-inproc p50 {:.2} µs", ul.p50, il.p50),
                )),
                _ => Err("a system received nothing".to_string()),
            },
            (u, i) => Err([u.err(), i.err()].into_iter().flatten().collect::<Vec<_>>().join("; ")),
        };
        tally(bar(out, "p50 udpm / inproc", t.case, "p50", ">=", v, P50_RATIO, |x| x >= P50_RATIO));
    }
    for t in topologies.iter().filter(|t| t.all_shared) {
        let v = find(results, t.case, System::Inproc).map(|m| {
            (
                m.copies_per_pub + m.decodes_per_pub,
                format!("copies {:.3} + decodes {:.3} per publication", m.copies_per_pub, m.decodes_per_pub),
            )
        });
        tally(bar(out, "zero copies (shared subscriptions)", t.case, "copies_per_msg", "<=", v, 0.0, |x| x == 0.0));
    }
    let run_note =
        if quick { format!("a {inproc_s} s --quick run, not the 60 s one") } else { format!("{inproc_s} s run") };
    for t in topologies {
        let v = find(results, t.case, System::Inproc).and_then(|m| {
            if m.rss_samples < 6 {
                return Err(format!("only {} memory samples", m.rss_samples));
            }
            Ok((m.rss_growth_pct, format!("VmRSS last third / first third - 1, {} samples, {run_note}", m.rss_samples)))
        });
        tally(bar(out, "memory flat (inproc growth %)", t.case, "rss_growth_pct", "<=", v, GROWTH_PCT, |x| {
            x <= GROWTH_PCT
        }));
    }
    out.text(&format!("bars passed: {pass} of {total}"));
    let shm_ratio: Vec<String> = topologies
        .iter()
        .filter_map(|t| {
            let (s, i) = (find(results, t.case, System::Shm).ok()?, find(results, t.case, System::Inproc).ok()?);
            Some(format!("{} {:.1}x", t.case, s.hist.latencies()?.p50 / i.hist.latencies()?.p50))
        })
        .collect();
    if !shm_ratio.is_empty() {
        out.text(&format!("informative: p50 nerve-shm / nerve-inproc: {}", shm_ratio.join(", ")));
    }
    // Where a graph's inproc time goes when it requires copies: the same graph without them, plus the copies.
    if let (Ok(one), Ok(two)) =
        (find(results, "image_pipeline", System::Inproc), find(results, "image_pipeline_2viewers", System::Inproc))
    {
        if let (Some(l1), Some(l2), Some(c)) = (one.hist.latencies(), two.hist.latencies(), &two.copy) {
            out.text(&format!(
                "informative: image_pipeline_2viewers nerve-inproc p50 {:.1} µs = image_pipeline's {:.1} µs + its one required copy per \
                 frame, p50 {:.1} µs in this run (copy floor above: {:.1} µs after idle, {:.1} µs back to back)",
                l2.p50, l1.p50, c.p50, floor.idle_us, floor.warm_us
            ));
        }
        // The 20x bar leaves this graph a budget of udpm's p50 / 20; on a host whose memory is slow after an idle
        // period, the one copy ROS 2's intra-process design article's table requires can take most of it by itself.
        if let Some(u) = find(results, "image_pipeline_2viewers", System::Udpm).ok().and_then(|u| u.hist.latencies()) {
            let budget = u.p50 / P50_RATIO;
            out.text(&format!(
                "informative: image_pipeline_2viewers budget for the 20x bar: nerve-udpm p50 / 20 = {budget:.1} µs; a bare copy \
                 of the image after 33 ms idle (copy floor) alone takes {:.0} % of it",
                100.0 * floor.idle_us / budget
            ));
        }
    }
    out.text("");
}
