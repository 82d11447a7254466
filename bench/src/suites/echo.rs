//! `nerve-bench echo`: a source process sends 800-byte messages over udpm at target rates, 1/2/4 echo-client
//! processes republish each one on a reply channel of their own, and the source reports offered and delivered
//! bandwidth, loss and round-trip latency, for Nerve against real LCM C (and LCM's C program on Nerve's liblcm, and a
//! bare-UDP floor). It shows whether Nerve's udpm keeps up with LCM's where LCM is fastest. See bench/README.md,
//! "echo".

use std::time::Duration;

use serde_json::json;

use crate::harness::proc::{Proc, Program, Role};
use crate::harness::{
    base_port, cell, clock, java_program, lcm_on_nerve_program, lcm_program, nerve_program, nerve_provider, placement,
    python_program, round3, udp_floor_program, Jar, Latencies, Out, Placement, GROUP, MSG_SIZE,
};

/// Target rates in MB/s (10^6 bytes); `None` is as fast as the source can publish.
const RATES: [Option<u32>; 6] = [Some(1), Some(5), Some(10), Some(20), Some(50), None];
const CLIENTS: [usize; 3] = [1, 2, 4];
const QUICK_RATES: [Option<u32>; 2] = [Some(5), None];
const QUICK_CLIENTS: [usize; 2] = [1, 4];
/// Ports a multi-port point spreads its channels over.
const MP_PORTS: u16 = 64;
/// The receive buffer every process asks for (LCM's paper used 2 MB buffers); the same URL option for every system.
const RECV_BUF: usize = 2 * 1024 * 1024;
const REQ: &str = "ECHO_REQ";
const REP_PREFIX: &str = "ECHO_REP_";

struct System {
    name: &'static str,
    scheme: &'static str,
    /// Ports one point uses.
    span: u16,
    program: Result<Program, String>,
    /// Measured only at points of at most this many clients (the Python rows: issue 20 compares them at one).
    max_clients: usize,
}

impl System {
    fn url(&self, port: u16) -> String {
        match self.scheme {
            "mpudpm" => format!("mpudpm://{GROUP}:{port}?ttl=0&nports={MP_PORTS}&recv_buf_size={RECV_BUF}"),
            s => format!("{s}://{GROUP}:{port}?ttl=0&recv_buf_size={RECV_BUF}"),
        }
    }
}

fn systems(base: u16) -> Vec<System> {
    let nerve = nerve_program();
    let mut mp = System {
        name: "nerve-mpudpm",
        scheme: "mpudpm",
        span: MP_PORTS,
        program: nerve.clone(),
        max_clients: usize::MAX,
    };
    if let Err(e) = nerve_provider(&mp.url(base)) {
        mp.program = Err(format!("no mpudpm provider in this build of nerve-bus ({e})"));
    }
    vec![
        System { name: "nerve", scheme: "udpm", span: 1, program: nerve, max_clients: usize::MAX },
        System { name: "lcm-c", scheme: "udpm", span: 1, program: lcm_program(), max_clients: usize::MAX },
        System {
            name: "lcm-c-nerve",
            scheme: "udpm",
            span: 1,
            program: lcm_on_nerve_program(),
            max_clients: usize::MAX,
        },
        mp,
        System { name: "udp-floor", scheme: "udpm", span: 1, program: udp_floor_program(), max_clients: usize::MAX },
        System {
            name: "nerve.lcm-python",
            scheme: "udpm",
            span: 1,
            program: python_program("nerve.lcm"),
            max_clients: 1,
        },
        System { name: "lcm-python", scheme: "udpm", span: 1, program: python_program("lcm"), max_clients: 1 },
        // Issue 41: one Java program on Nerve's lcm.jar and on LCM's, at one client (a JVM per process).
        System {
            name: "nerve-java",
            scheme: "udpm",
            span: 1,
            program: java_program(Jar::Nerve { poll: false }),
            max_clients: 1,
        },
        System { name: "lcm-java", scheme: "udpm", span: 1, program: java_program(Jar::Lcm), max_clients: 1 },
    ]
}

/// One measured point.
#[derive(Debug, Clone)]
struct Point {
    offered_mbps: f64,
    delivered_mbps: f64,
    loss_pct: f64,
    rtt: Option<Latencies>,
    note: String,
}

fn case_name(rate: Option<u32>, clients: usize) -> String {
    match rate {
        Some(r) => format!("{r}MBps_{clients}clients"),
        None => format!("max_{clients}clients"),
    }
}

fn rate_label(rate: Option<u32>) -> String {
    rate.map(|r| format!("{r}")).unwrap_or_else(|| "max".into())
}

struct Timing {
    /// Sending time of one round.
    duration_ms: u64,
    drain_ms: u64,
    /// Each point is measured in this many rounds, every system taking its turn in each, and each system's figures
    /// pool its rounds: a burst of the host's other work then falls on every system alike, not on whichever ran
    /// during it (this host's speed changes from one second to the next).
    rounds: u32,
}

/// What one source process reported, before any statistic: pooled over a point's rounds.
#[derive(Debug, Default)]
struct Run {
    sent: u64,
    echoed: u64,
    rtt: Vec<u64>,
    /// The sending windows, summed (ns).
    window_ns: u64,
    notes: Vec<String>,
}

impl Run {
    fn add(&mut self, other: Run) {
        self.sent += other.sent;
        self.echoed += other.echoed;
        self.rtt.extend(other.rtt);
        self.window_ns += other.window_ns;
        for n in other.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
    }

    fn point(mut self, clients: usize) -> Point {
        // Rates are per second of the sending windows, which both sources keep by the same absolute-time schedule.
        // The source's own clock of its sending phase also holds the overshoot of its last sleep (up to milliseconds
        // on a busy host), time in which it sends nothing: dividing by it made two runs that lost nothing differ by
        // 0.1 %.
        let secs = self.window_ns as f64 / 1e9;
        let offered_mbps = self.sent as f64 * MSG_SIZE as f64 / secs / 1e6;
        let delivered_mbps = self.echoed as f64 / clients as f64 * MSG_SIZE as f64 / secs / 1e6;
        let expected = self.sent * clients as u64;
        let loss_pct =
            if expected == 0 { 0.0 } else { 100.0 * (expected.saturating_sub(self.echoed)) as f64 / expected as f64 };
        Point {
            offered_mbps,
            delivered_mbps,
            loss_pct,
            rtt: Latencies::from_ns(&mut self.rtt),
            note: self.notes.join("; "),
        }
    }
}

fn measure(
    sys: &System,
    program: &Program,
    clients: usize,
    rate: Option<u32>,
    port: u16,
    t: &Timing,
    place: &Placement,
) -> Result<Run, String> {
    let (cpu_source, cpu_clients) = (place.a, place.b);
    let url = sys.url(port);
    let max_ms = (t.duration_ms + t.drain_ms + 3_000).to_string();
    let mut procs = Vec::new();
    for k in 0..clients {
        let args = vec![url.clone(), REQ.into(), format!("{REP_PREFIX}{k}"), max_ms.clone()];
        let mut p = Proc::spawn(&format!("{} client {k}", sys.name), program, Role::Client, &args, cpu_clients)?;
        p.expect_line("ready", Duration::from_secs(10))?;
        procs.push(p);
    }
    let rate_bps = rate.map(|r| r as f64 * 1e6).unwrap_or(0.0);
    let args = vec![
        url,
        REQ.into(),
        REP_PREFIX.into(),
        clients.to_string(),
        format!("{rate_bps}"),
        t.duration_ms.to_string(),
        t.drain_ms.to_string(),
    ];
    let mut src = Proc::spawn(&format!("{} source", sys.name), program, Role::Source, &args, cpu_source)?;
    let lines = src.collect("end", Duration::from_millis(t.duration_ms + t.drain_ms + 15_000))?;
    src.finish(Duration::from_secs(5));
    let mut killed = 0;
    for p in procs {
        if !p.finish(Duration::from_secs(3)) {
            killed += 1;
        }
    }
    let (mut sent, mut send_ns, mut got) = (None, 0u64, vec![0u64; clients]);
    let mut rtt = Vec::with_capacity(lines.len());
    for l in &lines {
        let w: Vec<&str> = l.split(' ').collect();
        match w.as_slice() {
            ["rtt", x] => rtt.push(x.parse::<u64>().map_err(|_| format!("bad line {l:?}"))?),
            ["sent", n, ns] => {
                sent = Some(n.parse::<u64>().map_err(|_| format!("bad line {l:?}"))?);
                send_ns = ns.parse().map_err(|_| format!("bad line {l:?}"))?;
            }
            ["client", k, n] => {
                let k: usize = k.parse().map_err(|_| format!("bad line {l:?}"))?;
                if k < clients {
                    got[k] = n.parse().map_err(|_| format!("bad line {l:?}"))?;
                }
            }
            ["end"] => {}
            _ => return Err(format!("{} source printed {l:?}", sys.name)),
        }
    }
    let sent = sent.ok_or_else(|| format!("{} source printed no 'sent' line", sys.name))?;
    let window_ns = t.duration_ms * 1_000_000;
    let mut notes = Vec::new();
    if send_ns > window_ns + window_ns / 20 {
        notes.push(format!("the source sent for {:.0} ms, past its {} ms window", send_ns as f64 / 1e6, t.duration_ms));
    }
    if killed > 0 {
        notes.push(format!("{killed} client(s) missed the stop message and were killed"));
    }
    Ok(Run { sent, echoed: got.iter().sum(), rtt, window_ns, notes })
}

/// Runs the suite; the exit code (0 unless the run itself could not be made).
pub fn run(quick: bool, json: bool) -> i32 {
    let out = Out { json };
    let t = if quick {
        Timing { duration_ms: 300, drain_ms: 100, rounds: 1 }
    } else {
        Timing { duration_ms: 1_000, drain_ms: 300, rounds: 2 }
    };
    let (rates, clients): (&[Option<u32>], &[usize]) =
        if quick { (&QUICK_RATES, &QUICK_CLIENTS) } else { (&RATES, &CLIENTS) };
    let base = base_port();
    let systems = systems(base);
    let place = placement("the source", "every echo client");
    let load_start = clock::loadavg();
    out.json(json!({"suite": "echo", "kind": "info", "mode": if quick {"quick"} else {"full"}, "host": clock::host(),
        "loadavg": load_start, "placement": place.text, "message_bytes": MSG_SIZE, "duration_ms": t.duration_ms,
        "rounds": t.rounds, "drain_ms": t.drain_ms, "url": systems[0].url(base)}));
    out.text(&format!(
        "echo: LCM's paper Figs. 4-5 ({MSG_SIZE}-byte messages; a source, 1/2/4 echo clients; {} s per point as {} round(s) of {} s, \
         every system taking its turn in each round, each round then up to {} ms for late echoes){}",
        t.duration_ms as f64 * t.rounds as f64 / 1e3,
        t.rounds,
        t.duration_ms as f64 / 1e3,
        t.drain_ms,
        if quick { " [--quick: rough]" } else { "" }
    ));
    out.text(&format!(
        "host {}; load average at start: {load_start} (2 shared vCPUs: other work skews every figure)",
        clock::host()
    ));
    out.text(&format!("placement: {}", place.text));
    out.text(&format!("url: {} (one port per point{})", systems[0].url(base), ""));
    for s in &systems {
        let what = match (&s.program, s.name) {
            (Err(e), _) => format!("unavailable: {e}"),
            (Ok(_), "nerve") => "nerve-bus over udpm (Rust, this program's hidden roles)".into(),
            (Ok(_), "lcm-c") => "real LCM 1.5.3 C (csrc/lcm_echo.c against the wheel's liblcm)".into(),
            (Ok(_), "lcm-c-nerve") => {
                "the same lcm_echo binary on Nerve's LCM-compatible liblcm (LD_LIBRARY_PATH; bindings/c/lcm)".into()
            }
            (Ok(_), "nerve.lcm-python") => {
                "nerve.lcm in Python (python/roles.py: an LCM program, `import nerve.lcm as lcm`; one client only)"
                    .into()
            }
            (Ok(_), "lcm-python") => "the real LCM 1.5.3 Python module (the same program, `import lcm`)".into(),
            (Ok(_), "nerve-java") => {
                "Nerve's lcm.jar (bindings/java, JNI; java/Roles.java, an LCM Java program)".into()
            }
            (Ok(_), "lcm-java") => "the real LCM 1.5.3 lcm.jar (the same program)".into(),
            (Ok(_), "udp-floor") => {
                "the floor: LCM's datagrams with a blocking recv and a sendto, nothing else (csrc/udp_echo_floor.c)"
                    .into()
            }
            (Ok(_), _) => format!("nerve-bus over multi-port udpm ({MP_PORTS} ports)"),
        };
        out.text(&format!("  {:<16} {what}", s.name));
    }
    out.text("");
    out.text(&format!(
        "{:<16} {:>7} {:>6} {:>9} {:>9} {:>7} {:>8} {:>8} {:>8} {:>8}",
        "system", "clients", "target", "offered", "delivered", "loss", "mean", "p50", "p99", "max"
    ));
    out.text(&format!(
        "{:<16} {:>7} {:>6} {:>9} {:>9} {:>7} {:>8} {:>8} {:>8} {:>8}",
        "", "", "MB/s", "MB/s", "MB/s", "%", "rtt µs", "µs", "µs", "µs"
    ));

    let mut port = base;
    if !quick {
        // One round of the first point for every system, not counted: in recorded runs the first point measured
        // after the host had been idle read 30 % slow for whichever systems ran first, while the next points did not.
        for s in &systems {
            if let (Ok(program), true) = (&s.program, clients[0] <= s.max_clients) {
                let _ = measure(s, program, clients[0], rates[0], port, &t, &place);
            }
            port += s.span;
        }
        out.text("(a warm-up round of the first point ran first for every system, not counted)");
    }
    let mut results: Vec<(String, &'static str, Result<Point, String>)> = Vec::new();
    for &k in clients {
        for &rate in rates {
            let case = case_name(rate, k);
            let systems: Vec<&System> = systems.iter().filter(|s| k <= s.max_clients).collect();
            let mut runs: Vec<Result<Run, String>> =
                systems.iter().map(|s| s.program.clone().map(|_| Run::default())).collect();
            // A port (or block of ports) per system and point; its rounds reuse it, since every process of a round
            // has exited, its sockets with it, before the next round starts.
            let ports: Vec<u16> = systems
                .iter()
                .map(|s| {
                    port += s.span;
                    port - s.span
                })
                .collect();
            for _ in 0..t.rounds {
                for ((s, pooled), &p) in systems.iter().zip(runs.iter_mut()).zip(&ports) {
                    let (Ok(program), Ok(so_far)) = (&s.program, pooled.as_mut()) else { continue };
                    match measure(s, program, k, rate, p, &t, &place) {
                        Ok(run) => so_far.add(run),
                        Err(e) => *pooled = Err(e),
                    }
                }
            }
            for (s, run) in systems.iter().zip(runs) {
                let r = run.map(|run| run.point(k));
                match &r {
                    Ok(p) => {
                        out.text(&format!(
                            "{:<16} {:>7} {:>6} {:>9.2} {:>9.2} {:>7.2} {:>8} {:>8} {:>8} {:>8}{}",
                            s.name,
                            k,
                            rate_label(rate),
                            p.offered_mbps,
                            p.delivered_mbps,
                            p.loss_pct,
                            cell(p.rtt, |l| l.mean),
                            cell(p.rtt, |l| l.p50),
                            cell(p.rtt, |l| l.p99),
                            cell(p.rtt, |l| l.max),
                            if p.note.is_empty() { String::new() } else { format!("  ({})", p.note) }
                        ));
                        for (m, v, u) in [
                            ("offered_mbps", p.offered_mbps, "MB/s"),
                            ("delivered_mbps", p.delivered_mbps, "MB/s"),
                            ("loss_pct", p.loss_pct, "%"),
                        ] {
                            out.json(json!({"suite": "echo", "case": case, "system": s.name, "metric": m,
                                "value": round3(v), "unit": u}));
                        }
                        out.latencies("echo", &case, s.name, p.rtt);
                    }
                    Err(e) => {
                        out.text(&format!("{:<16} {:>7} {:>6} unavailable: {e}", s.name, k, rate_label(rate)));
                        out.unavailable("echo", &case, s.name, e);
                    }
                }
                results.push((case.clone(), s.name, r));
            }
            if systems.iter().filter(|s| s.program.is_ok()).count() > 1 {
                out.text("");
            }
        }
    }
    ratios(&out, &results);
    lcm_on_nerve_ratios(&out, &results);
    let load_end = clock::loadavg();
    out.text(&format!("load average at end: {load_end}"));
    out.json(json!({"suite": "echo", "kind": "info", "loadavg_end": load_end}));
    0
}

/// The bars of issue 3, nerve vs lcm-c at each point of this run.
fn ratios(out: &Out, results: &[(String, &'static str, Result<Point, String>)]) {
    out.text("ratios: issue 3's bars, nerve vs lcm-c at the same point of this run");
    out.text("  delivered: nerve delivered / lcm-c delivered >= 1 (rounded to 3 decimals: both sources keep one schedule, so");
    out.text("             two runs that lose nothing differ by a message at most); loss: nerve loss % <= lcm-c loss %; p50: nerve p50 / lcm-c p50 <= 0.8");
    out.text("  floor p50: udp-floor p50 / lcm-c p50, for reference (no bar): what the kernel's path and this host's wake-ups leave");
    out.text(&format!(
        "{:<18} {:>10} {:<5} {:>15} {:<5} {:>9} {:<5} {:>9}",
        "case", "delivered", "", "loss n / l %", "", "p50", "", "floor p50"
    ));
    let (mut pass, mut total) = (0, 0);
    let find =
        |case: &str, sys: &str| results.iter().find(|(c, s, _)| c == case && *s == sys).map(|(_, _, r)| r.clone());
    let mut cases: Vec<&String> = Vec::new();
    for (c, _, _) in results {
        if !cases.contains(&c) {
            cases.push(c);
        }
    }
    for case in cases {
        let (Some(n), Some(l)) = (find(case, "nerve"), find(case, "lcm-c")) else { continue };
        let (n, l) = match (n, l) {
            (Ok(n), Ok(l)) => (n, l),
            (n, l) => {
                let why = [n.err(), l.err()].into_iter().flatten().collect::<Vec<_>>().join("; ");
                out.text(&format!("{case:<18} UNAVAILABLE ({why})"));
                for (bar, metric, op) in BARS {
                    out.json(json!({"suite": "echo", "kind": "ratio", "bar": bar, "case": case, "system": "nerve",
                        "metric": metric, "op": op, "value": null, "pass": null, "reason": why}));
                }
                continue;
            }
        };
        let d = if l.delivered_mbps > 0.0 { n.delivered_mbps / l.delivered_mbps } else { f64::INFINITY };
        let d_pass = (d * 1000.0).round() / 1000.0 >= 1.0;
        let loss_pass = n.loss_pct <= l.loss_pct;
        let p50 = match (n.rtt, l.rtt) {
            (Some(a), Some(b)) => Some(a.p50 / b.p50),
            _ => None,
        };
        let p50_pass = p50.map(|r| r <= 0.8);
        let floor = match (find(case, "udp-floor"), l.rtt) {
            (Some(Ok(Point { rtt: Some(f), .. })), Some(b)) => format!("{:.3}", f.p50 / b.p50),
            _ => "-".into(),
        };
        let v = |b: bool| if b { "PASS" } else { "FAIL" };
        out.text(&format!(
            "{case:<18} {d:>10.3} {:<5} {:>7.2} / {:<5.2} {:<5} {:>9} {:<5} {floor:>9}",
            v(d_pass),
            n.loss_pct,
            l.loss_pct,
            v(loss_pass),
            p50.map(|r| format!("{r:.3}")).unwrap_or_else(|| "-".into()),
            p50_pass.map(v).unwrap_or("UNAVAILABLE (no echo)")
        ));
        total += 3;
        pass += d_pass as usize + loss_pass as usize + p50_pass.unwrap_or(false) as usize;
        out.json(json!({"suite": "echo", "kind": "ratio", "bar": BARS[0].0, "case": case, "system": "nerve",
            "metric": "delivered_mbps", "op": ">=", "value": round3(d), "limit": 1.0, "pass": d_pass,
            "definition": format!("nerve delivered {:.3} MB/s / lcm-c delivered {:.3} MB/s", n.delivered_mbps, l.delivered_mbps)}));
        out.json(json!({"suite": "echo", "kind": "ratio", "bar": BARS[1].0, "case": case, "system": "nerve",
            "metric": "loss_pct", "op": "<=", "value": round3(n.loss_pct), "limit": round3(l.loss_pct), "pass": loss_pass,
            "definition": "nerve loss % (value) <= lcm-c loss % (limit)"}));
        match p50 {
            Some(r) => out.json(json!({"suite": "echo", "kind": "ratio", "bar": BARS[2].0, "case": case, "system": "nerve",
                "metric": "p50", "op": "<=", "value": round3(r), "limit": 0.8, "pass": r <= 0.8,
                "definition": format!("nerve p50 {:.1} µs / lcm-c p50 {:.1} µs", n.rtt.map_or(0.0, |x| x.p50), l.rtt.map_or(0.0, |x| x.p50))})),
            None => out.json(json!({"suite": "echo", "kind": "ratio", "bar": BARS[2].0, "case": case, "system": "nerve",
                "metric": "p50", "op": "<=", "value": null, "pass": null, "reason": "a system received no echo"})),
        }
    }
    out.text(&format!("bars passed: {pass} of {total}"));
    out.text("");
    python_ratios(out, results);
    java_ratios(out, results);
}

/// Issue 20's bars: `nerve.lcm` in Python against the real LCM Python module, one client, every rate.
fn python_ratios(out: &Out, results: &[(String, &'static str, Result<Point, String>)]) {
    let pair = Pair { n: "nerve.lcm-python", l: "lcm-python", bars: PY_BARS, p50_strict: true };
    out.text("ratios: issue 20's bars, nerve.lcm-python vs lcm-python (the same Python program) at one client");
    out.text("  delivered: nerve.lcm-python delivered / lcm-python delivered >= 1 (to 3 decimals); p50: ratio < 1");
    pair_ratios(out, results, &pair);
}

/// Issue 41's bars: the same Java program (bench/java/Roles.java) on Nerve's lcm.jar against LCM's, one client,
/// every rate: at least as much delivered, p50 no higher.
fn java_ratios(out: &Out, results: &[(String, &'static str, Result<Point, String>)]) {
    let pair = Pair { n: "nerve-java", l: "lcm-java", bars: JAVA_BARS, p50_strict: false };
    out.text("ratios: issue 41's bars, nerve-java vs lcm-java (the same Java program on each jar) at one client");
    out.text("  delivered: nerve-java delivered / lcm-java delivered >= 1 (to 3 decimals); p50: ratio <= 1");
    pair_ratios(out, results, &pair);
}

/// Two rows of one program on two libraries, compared at every point both ran.
struct Pair {
    n: &'static str,
    l: &'static str,
    bars: [(&'static str, &'static str, &'static str); 2],
    /// The p50 bar is `<` (else `<=`).
    p50_strict: bool,
}

fn pair_ratios(out: &Out, results: &[(String, &'static str, Result<Point, String>)], pair: &Pair) {
    let (n_sys, l_sys) = (pair.n, pair.l);
    let (bars, op) = (pair.bars, if pair.p50_strict { "<" } else { "<=" });
    let ok = |r: f64| if pair.p50_strict { r < 1.0 } else { r <= 1.0 };
    let find =
        |case: &str, sys: &str| results.iter().find(|(c, s, _)| c == case && *s == sys).map(|(_, _, r)| r.clone());
    let mut cases: Vec<&String> = Vec::new();
    for (c, s, _) in results {
        if *s == n_sys && !cases.contains(&c) {
            cases.push(c);
        }
    }
    let (mut pass, mut total) = (0, 0);
    for case in cases {
        let (Some(n), Some(l)) = (find(case, n_sys), find(case, l_sys)) else { continue };
        let (n, l) = match (n, l) {
            (Ok(n), Ok(l)) => (n, l),
            (n, l) => {
                let why = [n.err(), l.err()].into_iter().flatten().collect::<Vec<_>>().join("; ");
                out.text(&format!("{case:<18} UNAVAILABLE ({why})"));
                for (bar, metric, op) in bars {
                    out.json(json!({"suite": "echo", "kind": "ratio", "bar": bar, "case": case, "system": n_sys,
                        "metric": metric, "op": op, "value": null, "pass": null, "reason": why}));
                }
                continue;
            }
        };
        let d = if l.delivered_mbps > 0.0 { n.delivered_mbps / l.delivered_mbps } else { f64::INFINITY };
        let d_pass = (d * 1000.0).round() / 1000.0 >= 1.0;
        let p50 = match (n.rtt, l.rtt) {
            (Some(a), Some(b)) => Some((a.p50 / b.p50, a.p50, b.p50)),
            _ => None,
        };
        let v = |b: bool| if b { "PASS" } else { "FAIL" };
        out.text(&format!(
            "{case:<18} delivered {d:>7.3} {:<5} p50 {:>7} {}",
            v(d_pass),
            p50.map(|(r, _, _)| format!("{r:.3}")).unwrap_or_else(|| "-".into()),
            p50.map(|(r, _, _)| v(ok(r))).unwrap_or("UNAVAILABLE (no echo)")
        ));
        total += 2;
        pass += d_pass as usize + p50.is_some_and(|(r, _, _)| ok(r)) as usize;
        out.json(json!({"suite": "echo", "kind": "ratio", "bar": bars[0].0, "case": case, "system": n_sys,
            "metric": "delivered_mbps", "op": ">=", "value": round3(d), "limit": 1.0, "pass": d_pass,
            "definition": format!("{n_sys} delivered {:.3} MB/s / {l_sys} delivered {:.3} MB/s", n.delivered_mbps, l.delivered_mbps)}));
        match p50 {
            Some((r, a, b)) => out.json(json!({"suite": "echo", "kind": "ratio", "bar": bars[1].0, "case": case,
                "system": n_sys, "metric": "p50", "op": op, "value": round3(r), "limit": 1.0, "pass": ok(r),
                "definition": format!("{n_sys} p50 {a:.1} µs / {l_sys} p50 {b:.1} µs")})),
            None => out.json(json!({"suite": "echo", "kind": "ratio", "bar": bars[1].0, "case": case, "system": n_sys,
                "metric": "p50", "op": op, "value": null, "pass": null, "reason": "a system received no echo"})),
        }
    }
    out.text(&format!("bars passed: {pass} of {total}"));
    out.text("");
}

const PY_BARS: [(&str, &str, &str); 2] =
    [("python delivered vs lcm-python", "delivered_mbps", ">="), ("python p50 vs lcm-python", "p50", "<")];

const JAVA_BARS: [(&str, &str, &str); 2] =
    [("java delivered vs lcm-java", "delivered_mbps", ">="), ("java p50 vs lcm-java", "p50", "<=")];

/// Issue 21's bars: LCM's own C echo program on Nerve's liblcm delivers at least what it delivers on the real
/// liblcm, with a p50 round trip no higher, at every point of this run.
fn lcm_on_nerve_ratios(out: &Out, results: &[(String, &'static str, Result<Point, String>)]) {
    out.text("ratios: issue 21's bars, lcm-c-nerve (lcm_echo on Nerve's liblcm) vs lcm-c (the same binary on LCM's)");
    out.text("  delivered: lcm-c-nerve / lcm-c >= 1 (rounded to 3 decimals); p50: lcm-c-nerve p50 / lcm-c p50 <= 1");
    let find =
        |case: &str, sys: &str| results.iter().find(|(c, s, _)| c == case && *s == sys).map(|(_, _, r)| r.clone());
    let mut cases: Vec<&String> = Vec::new();
    for (c, _, _) in results {
        if !cases.contains(&c) {
            cases.push(c);
        }
    }
    let (mut pass, mut total) = (0, 0);
    for case in cases {
        let (Some(n), Some(l)) = (find(case, "lcm-c-nerve"), find(case, "lcm-c")) else { continue };
        let (n, l) = match (n, l) {
            (Ok(n), Ok(l)) => (n, l),
            (n, l) => {
                let why = [n.err(), l.err()].into_iter().flatten().collect::<Vec<_>>().join("; ");
                out.text(&format!("{case:<18} UNAVAILABLE ({why})"));
                for (bar, metric, op) in LCM_ON_NERVE_BARS {
                    out.json(json!({"suite": "echo", "kind": "ratio", "bar": bar, "case": case,
                        "system": "lcm-c-nerve", "metric": metric, "op": op, "value": null, "pass": null,
                        "reason": why}));
                }
                continue;
            }
        };
        let d = if l.delivered_mbps > 0.0 { n.delivered_mbps / l.delivered_mbps } else { f64::INFINITY };
        let d_pass = (d * 1000.0).round() / 1000.0 >= 1.0;
        let v = |b: bool| if b { "PASS" } else { "FAIL" };
        total += 2;
        pass += d_pass as usize;
        out.json(json!({"suite": "echo", "kind": "ratio", "bar": LCM_ON_NERVE_BARS[0].0, "case": case,
            "system": "lcm-c-nerve", "metric": "delivered_mbps", "op": ">=", "value": round3(d), "limit": 1.0,
            "pass": d_pass, "definition": format!("lcm-c-nerve delivered {:.3} MB/s / lcm-c delivered {:.3} MB/s",
            n.delivered_mbps, l.delivered_mbps)}));
        let p50 = match (n.rtt, l.rtt) {
            (Some(a), Some(b)) => {
                let r = a.p50 / b.p50;
                pass += (r <= 1.0) as usize;
                out.json(json!({"suite": "echo", "kind": "ratio", "bar": LCM_ON_NERVE_BARS[1].0, "case": case,
                    "system": "lcm-c-nerve", "metric": "p50", "op": "<=", "value": round3(r), "limit": 1.0,
                    "pass": r <= 1.0, "definition": format!("lcm-c-nerve p50 {:.1} µs / lcm-c p50 {:.1} µs", a.p50, b.p50)}));
                format!("{r:.3} {}", v(r <= 1.0))
            }
            _ => {
                out.json(json!({"suite": "echo", "kind": "ratio", "bar": LCM_ON_NERVE_BARS[1].0, "case": case,
                    "system": "lcm-c-nerve", "metric": "p50", "op": "<=", "value": null, "pass": null,
                    "reason": "a system received no echo"}));
                "UNAVAILABLE (no echo)".to_owned()
            }
        };
        out.text(&format!("{case:<18} delivered {d:>7.3} {:<5} p50 {p50}", v(d_pass)));
    }
    out.text(&format!("bars passed: {pass} of {total}"));
    out.text("");
}

const LCM_ON_NERVE_BARS: [(&str, &str, &str); 2] =
    [("lcm-c on nerve: delivered vs lcm-c", "delivered_mbps", ">="), ("lcm-c on nerve: p50 vs lcm-c", "p50", "<=")];

const BARS: [(&str, &str, &str); 3] = [
    ("delivered vs lcm-c", "delivered_mbps", ">="),
    ("loss vs lcm-c", "loss_pct", "<="),
    ("p50 round trip vs lcm-c", "p50", "<="),
];
