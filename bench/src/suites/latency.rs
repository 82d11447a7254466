//! `nerve-bench latency`: one-way latency of 64-byte messages between processes, over Nerve's shm and udpm and over
//! every local transport a robot could use instead (`crate::peers::ipc`), with the futex and spin floors that bound
//! what a waiting and a polling reader can pay. See bench/README.md, "latency".
//!
//! Three parts, every process started by this driver, pinned, and measured in the same run:
//!
//! 1. the table: a sender posts time-stamped messages at 1 kHz to one receiver (case `64B_1kHz`) and to two
//!    (`64B_1kHz_2rx`) over every [`Path`]: the Nerve shared-memory channel waiting and polling, the two floors (a
//!    futex, a spun cache line), iceoryx2 polling and waiting, kernel IPC (pipe, POSIX mq, Unix stream and datagram
//!    sockets, UDP, TCP) and the multicast middlewares (nerve-udpm and the real LCM); in rounds, the rows taking
//!    turns ([`TABLE_ROUNDS`]);
//! 2. the frequency sweep (`sweep_<f>kHz`): latency over the period at 0.1 to 100 kHz for a few paths;
//! 3. the hop chain (`hops_<n>`): a message passed on by 1 to 64 processes, end to end.
//!
//! Then the bars of issue 4, each PASS or MISS with the figures of this run. A path's program implements the roles
//! `lat-recv` / `lat-send` (and for the chain the relay `ipc-hop`) and prints the lines the driver parses here:
//! `ready`, `sent N`, `recv N` / `gaps G` / `missed M` / `lat NS`... / `end`.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::harness::proc::{Proc, Program, Role};
use crate::harness::{
    base_port, cell, clock, go_program, java_program, lcm_program, nerve_program, own_exe, placement, python_program,
    round3, Jar, Latencies, Out, GROUP,
};
use crate::peers::ipc;

const SIZE: usize = 64;
const HZ: f64 = 1000.0;
const CASE_1: &str = "64B_1kHz";
const CASE_2: &str = "64B_1kHz_2rx";
/// The table's rows are measured in this many rounds of `seconds / TABLE_ROUNDS` each, every row taking its turn in
/// each round: on a shared host the background drifts over the minutes a full table takes, and a row measured in one
/// block would carry whatever that block got.
const TABLE_ROUNDS: u64 = 5;

/// What a row is, for the bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    /// The Nerve shared-memory channel.
    NerveShm,
    /// A floor (futex, spin).
    Floor,
    /// iceoryx2.
    Iceoryx,
    /// Kernel IPC: the rows waiting mode must beat.
    Kernel,
    /// Multicast middleware (nerve-udpm, LCM).
    Middleware,
    /// The bus (publish to callback) over its shm provider, from Rust and from Python.
    Bus,
}

/// How a path's roles are run.
#[derive(Clone)]
enum Runner {
    /// nerve-bench's `lat-recv` / `lat-send` on nerve-bus, or lcm_echo's: a `udpm://` URL and a channel.
    Udpm(Result<Program, String>),
    /// nerve-bench's `ipc-*` roles (src/peers/ipc) with an address of this scheme.
    Ipc(&'static str),
    /// The same roles as `Udpm` on a `shm://` bus of its own directory.
    Shm(Result<Program, String>),
}

/// One row of the table.
#[derive(Clone)]
struct Path {
    /// The JSON `system`.
    system: &'static str,
    /// What carries the message, for the table.
    transport: &'static str,
    group: Group,
    /// The receiver spins (placement of two receivers differs, see [`Placing`]).
    polls: bool,
    /// Two receivers read one publish (true) or the sender sends to each in turn (false).
    one_publish: bool,
    runner: Runner,
}

fn ipc_path(
    system: &'static str,
    transport: &'static str,
    group: Group,
    scheme: &'static str,
    polls: bool,
    one_publish: bool,
) -> Path {
    Path { system, transport, group, polls, one_publish, runner: Runner::Ipc(scheme) }
}

fn paths() -> Vec<Path> {
    use Group::*;
    vec![
        ipc_path("spin floor", "shared page, spun", Floor, "spin", true, true),
        ipc_path("futex floor", "shared page, futex", Floor, "futex", false, true),
        ipc_path("nerve-shm (poll)", "nerve-shm, Poll", NerveShm, "shm-poll", true, true),
        ipc_path("nerve-shm (wait)", "nerve-shm, wait", NerveShm, "shm-wait", false, true),
        ipc_path("nerve-shm (wait, xxh3)", "nerve-shm, wait, checksums", NerveShm, "shm-sum", false, true),
        ipc_path("ach API (poll)", "ach.h on nerve-shm, poll", NerveShm, "ach-poll", true, true),
        ipc_path("ach API (wait)", "ach.h on nerve-shm, wait", NerveShm, "ach-wait", false, true),
        ipc_path("bus shm (poll)", "Bus on shm://, poll", NerveShm, "bus-poll", true, true),
        ipc_path("bus shm (wait)", "Bus on shm://, wait", NerveShm, "bus-wait", false, true),
        ipc_path("C bus shm (poll)", "nerve.h, shm://, poll", NerveShm, "cbus-poll", true, true),
        ipc_path("C bus shm (wait)", "nerve.h, shm://, wait", NerveShm, "cbus-wait", false, true),
        ipc_path("iceoryx2 (poll)", "iceoryx2 0.10, spun", Iceoryx, "iox-poll", true, true),
        ipc_path("iceoryx2 (event)", "iceoryx2 0.10, event", Iceoryx, "iox-event", false, true),
        ipc_path("pipe", "named FIFO", Kernel, "pipe", false, false),
        ipc_path("posix-mq", "mq_timedreceive", Kernel, "mq", false, false),
        ipc_path("unix-stream", "AF_UNIX stream", Kernel, "ustream", false, false),
        ipc_path("unix-dgram", "AF_UNIX dgram", Kernel, "udgram", false, false),
        ipc_path("udp", "UDP 127.0.0.1", Kernel, "udp", false, false),
        ipc_path("tcp", "TCP 127.0.0.1", Kernel, "tcp", false, false),
        Path {
            system: "nerve-udpm",
            transport: "udpm multicast",
            group: Middleware,
            polls: false,
            one_publish: true,
            runner: Runner::Udpm(nerve_program()),
        },
        Path {
            system: "lcm-c-udpm",
            transport: "udpm multicast",
            group: Middleware,
            polls: false,
            one_publish: true,
            runner: Runner::Udpm(lcm_program()),
        },
        Path {
            system: "nerve-bus-shm",
            transport: "Bus shm://, Rust",
            group: Bus,
            polls: false,
            one_publish: true,
            runner: Runner::Shm(nerve_program()),
        },
        Path {
            system: "nerve-python-shm",
            transport: "nerve.Bus shm://, Py",
            group: Bus,
            polls: false,
            one_publish: true,
            runner: Runner::Shm(python_program("nerve")),
        },
        // Issue 41: an LCM Java program (java/Roles.java) on Nerve's lcm.jar over shm://, publish to handler; the
        // jar's reader thread sleeps in the bus (wait, 50 ms slices as the C bus rows) or spins on it (poll).
        Path {
            system: "Java bus shm (poll)",
            transport: "lcm.jar shm://, poll",
            group: Bus,
            polls: true,
            one_publish: true,
            runner: Runner::Shm(java_program(Jar::Nerve { poll: true })),
        },
        Path {
            system: "Java bus shm (wait)",
            transport: "lcm.jar shm://, wait",
            group: Bus,
            polls: false,
            one_publish: true,
            runner: Runner::Shm(java_program(Jar::Nerve { poll: false })),
        },
        // The same from Go (bench/go on bindings/go): a subscription's channel, its receive goroutine sleeping in
        // the bus (wait) or spinning on it (poll).
        Path {
            system: "Go bus shm (poll)",
            transport: "Go nerve shm://, poll",
            group: Bus,
            polls: true,
            one_publish: true,
            runner: Runner::Shm(go_program(true)),
        },
        Path {
            system: "Go bus shm (wait)",
            transport: "Go nerve shm://, wait",
            group: Bus,
            polls: false,
            one_publish: true,
            runner: Runner::Shm(go_program(false)),
        },
    ]
}

fn path(system: &str) -> Option<Path> {
    paths().into_iter().find(|p| p.system == system)
}

/// Names of this run's endpoints: files in one directory of its own, ports from its block, queue and service names
/// with its process id.
struct Names {
    dir: PathBuf,
    pid: u32,
    id: Cell<u32>,
    port: Cell<u16>,
}

impl Names {
    fn new() -> Result<Names, String> {
        let pid = std::process::id();
        let shm = std::path::Path::new("/dev/shm");
        let root = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
        let dir = root.join(format!("nerve-bench-latency-{pid}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        Ok(Names { dir, pid, id: Cell::new(0), port: Cell::new(base_port() + 2_000) })
    }

    fn next_id(&self) -> u32 {
        let i = self.id.get();
        self.id.set(i + 1);
        i
    }

    fn next_port(&self) -> u16 {
        let p = self.port.get();
        // The block is 2,200 ports wide (base_port); wrap inside it on a long run.
        self.port.set(if p >= base_port() + 2_190 { base_port() + 2_000 } else { p + 1 });
        p
    }

    fn target(&self, scheme: &str) -> String {
        let id = self.next_id();
        let d = self.dir.display();
        match scheme {
            "mq" => format!("/nerve-bench-{}-{id}", self.pid),
            "udp" | "tcp" => format!("127.0.0.1:{}", self.next_port()),
            "iox-poll" | "iox-event" => format!("nerve-bench/latency/{}/{id}", self.pid),
            "shm-poll" | "shm-wait" | "shm-sum" => format!("{d}/chan{id}"),
            "ach-poll" | "ach-wait" => format!("{d}/ach{id}"),
            "bus-poll" | "bus-wait" | "cbus-poll" | "cbus-wait" => format!("{d}/bus{id}"),
            _ => format!("{d}/{scheme}{id}"),
        }
    }

    /// The sender's address and each receiver's.
    fn endpoints(&self, p: &Path, receivers: usize) -> (String, Vec<String>) {
        match &p.runner {
            Runner::Udpm(_) => {
                let url = format!("udpm://{GROUP}:{}?ttl=0", self.next_port());
                (url.clone(), vec![url; receivers])
            }
            Runner::Shm(_) => {
                let dir = self.target("bus");
                // Made here, so every role finds it; if this fails, the roles say why when they open the bus.
                let _ = std::fs::create_dir_all(&dir);
                let url = format!("shm://?dir={dir}");
                (url.clone(), vec![url; receivers])
            }
            Runner::Ipc(scheme) if p.one_publish => {
                let a = format!("{scheme}:{}", self.target(scheme));
                (a.clone(), vec![a; receivers])
            }
            Runner::Ipc(scheme) => {
                let t: Vec<String> = (0..receivers).map(|_| self.target(scheme)).collect();
                (format!("{scheme}:{}", t.join(",")), t.iter().map(|x| format!("{scheme}:{x}")).collect())
            }
        }
    }
}

impl Drop for Names {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// CPUs for each process.
struct Placing {
    sender: Option<usize>,
    receiver: Option<usize>,
    cpus: Vec<usize>,
}

impl Placing {
    /// Receiver `k` of a path: every waiting receiver on the receiver CPU; polling receivers spread over the CPUs
    /// (two spinning processes on one vCPU would measure the scheduler's time slice, not the transport).
    fn rx(&self, p: &Path, k: usize) -> Option<usize> {
        if p.polls && k > 0 && self.cpus.len() >= 2 {
            return Some(self.cpus[(1 + k) % self.cpus.len()]);
        }
        self.receiver
    }

    /// Process `j` of a chain (0: the sender): alternately on the two CPUs, so every hop crosses.
    fn chain(&self, j: usize) -> Option<usize> {
        if self.cpus.is_empty() {
            None
        } else {
            Some(self.cpus[j % self.cpus.len().min(2)])
        }
    }
}

/// What one measurement gave.
struct Outcome {
    sent: u64,
    /// Messages that should have arrived: sent x receivers.
    expected: u64,
    lat: Option<Latencies>,
    lost: u64,
    /// Messages the transport reported as overwritten (shared-memory rings), part of `lost`.
    missed: u64,
}

impl Outcome {
    fn loss_pct(&self) -> f64 {
        if self.expected == 0 {
            0.0
        } else {
            100.0 * self.lost as f64 / self.expected as f64
        }
    }
}

fn program(p: &Path) -> Result<Program, String> {
    match &p.runner {
        Runner::Udpm(prog) | Runner::Shm(prog) => prog.clone(),
        Runner::Ipc(_) => {
            let exe = own_exe()?;
            // Client = the relay (an echo client's job: pass every message on), Source and LatSend = the sender.
            Ok(Program {
                exe,
                lead: Vec::new(),
                words: [ipc::ROLE_HOP, ipc::ROLE_SEND, ipc::ROLE_RECV, ipc::ROLE_SEND],
                env: Vec::new(),
            })
        }
    }
}

fn recv_args(p: &Path, addr: &str, count: u64, max_ms: u64) -> Vec<String> {
    match p.runner {
        Runner::Udpm(_) | Runner::Shm(_) => vec![addr.into(), "LAT".into(), count.to_string(), max_ms.to_string()],
        Runner::Ipc(_) => vec![addr.into(), count.to_string(), max_ms.to_string()],
    }
}

fn send_args(p: &Path, addr: &str, count: u64, hz: f64) -> Vec<String> {
    match p.runner {
        Runner::Udpm(_) | Runner::Shm(_) => {
            vec![addr.into(), "LAT".into(), count.to_string(), format!("{hz}"), SIZE.to_string()]
        }
        Runner::Ipc(_) => vec![addr.into(), count.to_string(), format!("{hz}"), SIZE.to_string()],
    }
}

/// The receivers' output: samples, and the transport's own missed count.
fn parse_receiver(name: &str, lines: &[String], ns: &mut Vec<u64>) -> Result<u64, String> {
    let mut missed = 0;
    for l in lines {
        if let Some(x) = l.strip_prefix("lat ") {
            ns.push(x.parse::<u64>().map_err(|_| format!("{name}: bad line {l:?}"))?);
        } else if let Some(x) = l.strip_prefix("missed ") {
            missed = x.parse::<u64>().map_err(|_| format!("{name}: bad line {l:?}"))?;
        }
    }
    Ok(missed)
}

fn parse_sent(name: &str, lines: &[String]) -> Result<u64, String> {
    lines
        .last()
        .and_then(|l| l.strip_prefix("sent "))
        .and_then(|n| n.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("{name} sender printed {lines:?}"))
}

/// What one or more runs over a path gave, before it is summarised: the samples of every run together.
#[derive(Default)]
struct Samples {
    sent: u64,
    expected: u64,
    ns: Vec<u64>,
    missed: u64,
}

impl Samples {
    fn add(&mut self, more: Samples) {
        self.sent += more.sent;
        self.expected += more.expected;
        self.ns.extend(more.ns);
        self.missed += more.missed;
    }

    fn outcome(mut self) -> Outcome {
        let lost = self.expected.saturating_sub(self.ns.len() as u64);
        Outcome {
            sent: self.sent,
            expected: self.expected,
            lat: Latencies::from_ns(&mut self.ns),
            lost,
            missed: self.missed,
        }
    }
}

/// A sender and `receivers` receivers over `p` at `hz` for `count` messages.
fn measure(p: &Path, names: &Names, place: &Placing, receivers: usize, hz: f64, count: u64) -> Result<Outcome, String> {
    measure_samples(p, names, place, receivers, hz, count).map(Samples::outcome)
}

/// [`measure`]'s run, its samples kept apart so that several runs can be pooled.
fn measure_samples(
    p: &Path,
    names: &Names,
    place: &Placing,
    receivers: usize,
    hz: f64,
    count: u64,
) -> Result<Samples, String> {
    let prog = program(p)?;
    let (send_addr, rx_addrs) = names.endpoints(p, receivers);
    let max_ms = (count as f64 / hz * 1e3) as u64 + 5_000;
    let wait = Duration::from_millis(max_ms + 5_000);
    let mut rxs = Vec::new();
    for (k, a) in rx_addrs.iter().enumerate() {
        let mut rx = Proc::spawn(
            &format!("{} receiver {k}", p.system),
            &prog,
            Role::LatRecv,
            &recv_args(p, a, count, max_ms),
            place.rx(p, k),
        )?;
        rx.expect_line("ready", Duration::from_secs(10))?;
        rxs.push(rx);
    }
    let mut tx = Proc::spawn(
        &format!("{} sender", p.system),
        &prog,
        Role::LatSend,
        &send_args(p, &send_addr, count, hz),
        place.sender,
    )?;
    let sent = parse_sent(p.system, &tx.collect("sent", wait)?)?;
    let mut ns = Vec::with_capacity(count as usize * receivers);
    let mut missed = 0;
    for (k, rx) in rxs.iter_mut().enumerate() {
        let lines = rx.collect("end", wait)?;
        missed += parse_receiver(&format!("{} receiver {k}", p.system), &lines, &mut ns)?;
    }
    tx.finish(Duration::from_secs(3));
    for rx in rxs {
        rx.finish(Duration::from_secs(3));
    }
    Ok(Samples { sent, expected: sent * receivers as u64, ns, missed })
}

/// A message passed along `hops` links: the sender, `hops - 1` relays, the receiver.
fn measure_chain(
    p: &Path,
    names: &Names,
    place: &Placing,
    hops: usize,
    hz: f64,
    count: u64,
) -> Result<Outcome, String> {
    let prog = program(p)?;
    let links: Vec<(String, Vec<String>)> = (0..hops).map(|_| names.endpoints(p, 1)).collect();
    let max_ms = (count as f64 / hz * 1e3) as u64 + 10_000;
    let wait = Duration::from_millis(max_ms + 5_000);
    let mut rx = Proc::spawn(
        &format!("{} receiver", p.system),
        &prog,
        Role::LatRecv,
        &recv_args(p, &links[hops - 1].1[0], count, max_ms),
        place.chain(hops),
    )?;
    rx.expect_line("ready", Duration::from_secs(10))?;
    let mut relays = Vec::new();
    for j in (1..hops).rev() {
        let args = [links[j - 1].1[0].clone(), links[j].0.clone(), max_ms.to_string()];
        let mut r = Proc::spawn(&format!("{} relay {j}", p.system), &prog, Role::Client, &args, place.chain(j))?;
        r.expect_line("ready", Duration::from_secs(10))?;
        relays.push(r);
    }
    let mut tx = Proc::spawn(
        &format!("{} sender", p.system),
        &prog,
        Role::LatSend,
        &send_args(p, &links[0].0, count, hz),
        place.chain(0),
    )?;
    let sent = parse_sent(p.system, &tx.collect("sent", wait)?)?;
    let mut ns = Vec::with_capacity(count as usize);
    let missed = parse_receiver(&format!("{} receiver", p.system), &rx.collect("end", wait)?, &mut ns)?;
    tx.finish(Duration::from_secs(3));
    for r in relays {
        r.finish(Duration::from_secs(3));
    }
    rx.finish(Duration::from_secs(3));
    let lost = sent.saturating_sub(ns.len() as u64);
    Ok(Outcome { sent, expected: sent, lat: Latencies::from_ns(&mut ns), lost, missed })
}

/// Results by (case, system).
type Results = BTreeMap<(String, String), Result<Outcome, String>>;

fn emit(out: &Out, case: &str, system: &str, r: &Result<Outcome, String>) {
    match r {
        Ok(o) => {
            out.latencies("latency", case, system, o.lat);
            out.json(json!({"suite": "latency", "case": case, "system": system, "metric": "loss_pct",
                "value": round3(o.loss_pct()), "unit": "%"}));
            out.json(json!({"suite": "latency", "case": case, "system": system, "metric": "lost",
                "value": o.lost, "unit": "msgs"}));
        }
        Err(e) => out.unavailable("latency", case, system, e),
    }
}

const HEAD: &str =
    "system             transport              sent   recv  lost  loss%  mean µs   p50 µs   p99 µs   max µs";

fn table_row(out: &Out, p: &Path, r: &Result<Outcome, String>) {
    match r {
        Ok(o) => out.text(&format!(
            "{:<18} {:<20} {:>6} {:>6} {:>5} {:>6.2} {:>8} {:>8} {:>8} {:>8}{}",
            p.system,
            p.transport,
            o.sent,
            o.lat.map_or(0, |l| l.n),
            o.lost,
            o.loss_pct(),
            cell(o.lat, |l| l.mean),
            cell(o.lat, |l| l.p50),
            cell(o.lat, |l| l.p99),
            cell(o.lat, |l| l.max),
            if o.missed > 0 { format!("  ({} reported overwritten)", o.missed) } else { String::new() }
        )),
        Err(e) => out.text(&format!("{:<18} {:<20} unavailable: {e}", p.system, p.transport)),
    }
}

/// Frequencies of the sweep (kHz), its paths and seconds per point.
fn sweep_plan(quick: bool) -> (Vec<f64>, Vec<&'static str>, f64) {
    if quick {
        (vec![1.0, 10.0, 100.0], vec!["nerve-shm (wait)", "nerve-shm (poll)", "futex floor", "pipe"], 0.3)
    } else {
        (vec![0.1, 1.0, 10.0, 100.0], vec!["nerve-shm (wait)", "nerve-shm (poll)", "futex floor", "pipe", "udp"], 2.0)
    }
}

/// Hop counts of the chain, its paths and seconds per point (at 1 kHz).
fn chain_plan(quick: bool) -> (Vec<usize>, Vec<&'static str>, f64) {
    if quick {
        (vec![1, 2, 4, 8], vec!["nerve-shm (wait)", "pipe"], 0.5)
    } else {
        (vec![1, 2, 4, 8, 16, 32, 64], vec!["nerve-shm (wait)", "futex floor", "pipe"], 2.0)
    }
}

fn khz_label(khz: f64) -> String {
    if khz < 1.0 {
        format!("{khz}")
    } else {
        format!("{}", khz as u64)
    }
}

/// The latency / period lines of a sweep or chain point.
fn period_ratios(out: &Out, case: &str, system: &str, o: &Outcome, period_us: f64) -> String {
    let Some(l) = o.lat else { return "       -       -       -".into() };
    for (m, v) in [("mean", l.mean), ("p99", l.p99), ("max", l.max)] {
        out.json(
            json!({"suite": "latency", "kind": "ratio", "bar": "latency / period", "case": case, "system": system,
            "metric": m, "op": "info", "value": round3(v / period_us), "limit": null, "pass": null,
            "definition": format!("{m} {v:.1} µs / period {period_us} µs")}),
        );
    }
    format!("{:>8.3} {:>7.3} {:>7.3}", l.mean / period_us, l.p99 / period_us, l.max / period_us)
}

/// Runs the suite.
pub fn run(quick: bool, json: bool) -> i32 {
    let out = Out { json };
    let secs: u64 = if quick { 1 } else { 10 };
    let count = HZ as u64 * secs;
    let rounds: u64 = if quick { 1 } else { TABLE_ROUNDS };
    let pl = placement("the sender", "the receivers");
    let cpus = clock::allowed_cpus();
    let place = Placing { sender: pl.a, receiver: pl.b, cpus: cpus.clone() };
    let names = match Names::new() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("nerve-bench latency: {e}");
            return 2;
        }
    };
    let load_start = clock::loadavg();
    let two_rx_place = match cpus.as_slice() {
        [a, b, ..] => format!(
            "two receivers: waiting ones both on cpu {b}; polling ones on cpu {b} and cpu {a} (with the sender)"
        ),
        _ => "two receivers: as one".into(),
    };
    let chain_place = match cpus.as_slice() {
        [a, b, ..] => format!(
            "chain: process j (0 = the sender) on cpu {a} for even j, cpu {b} for odd j, so every hop crosses vCPUs"
        ),
        _ => "chain: as one".into(),
    };
    out.json(json!({"suite": "latency", "kind": "info", "mode": if quick {"quick"} else {"full"}, "host": clock::host(),
        "loadavg": load_start, "placement": pl.text, "placement_two_receivers": two_rx_place, "placement_chain": chain_place,
        "message_bytes": SIZE, "hz": HZ, "seconds": secs, "rounds": rounds}));
    out.text(&format!(
        "latency: one-way, {SIZE}-byte messages, CLOCK_MONOTONIC stamped by the sender just before it sends and read by the receiver as it gets the message{}",
        if quick { " [--quick: rough]" } else { "" }
    ));
    out.text(&format!(
        "host {}; load average at start: {load_start} (2 shared vCPUs: other work skews every figure)",
        clock::host()
    ));
    out.text(&format!("placement: {} (waking a process on the other vCPU costs 35-50 µs here, BASELINES.md)", pl.text));
    out.text(&format!("           {two_rx_place}"));
    out.text(&format!("           {chain_place}"));
    if rounds > 1 {
        out.text(&format!(
            "table rows: {secs} s each as {rounds} rounds of {} s, every row taking its turn in each round (the host's drift over the minutes of a run falls on every row alike); a row's figures pool its rounds' samples",
            secs / rounds
        ));
    }
    let mut results: Results = BTreeMap::new();

    // 1. The table, one and two receivers.
    for (case, receivers) in [(CASE_1, 1usize), (CASE_2, 2)] {
        out.text("");
        out.text(&format!(
            "{} at {HZ} Hz for {secs} s (case {case}){}",
            if receivers == 1 { "one receiver" } else { "two receivers" },
            if receivers == 1 {
                ""
            } else {
                "; shared memory, iceoryx2 and udpm: one publish read by both; pipe, mq, sockets: the sender writes to each receiver's endpoint in turn, one stamp for both"
            }
        ));
        out.text(HEAD);
        let paths = paths();
        let mut pooled: Vec<Result<Samples, String>> = paths.iter().map(|_| Ok(Samples::default())).collect();
        for _ in 0..rounds {
            for (p, acc) in paths.iter().zip(pooled.iter_mut()) {
                if let Ok(samples) = acc {
                    match measure_samples(p, &names, &place, receivers, HZ, count / rounds) {
                        Ok(more) => samples.add(more),
                        Err(e) => *acc = Err(e),
                    }
                }
            }
        }
        for (p, acc) in paths.into_iter().zip(pooled) {
            let r = acc.map(Samples::outcome);
            table_row(&out, &p, &r);
            emit(&out, case, p.system, &r);
            results.insert((case.to_string(), p.system.to_string()), r);
        }
    }

    // 2. The frequency sweep.
    let (freqs, sweep_paths, point_s) = sweep_plan(quick);
    out.text("");
    out.text(&format!(
        "frequency sweep: one receiver, {point_s} s per point (cases sweep_<f>kHz); latency / period (1 = a whole cycle)"
    ));
    out.text("system             kHz     sent  lost  mean µs   p50 µs   p99 µs   max µs   mean/T   p99/T   max/T");
    for sys in &sweep_paths {
        let Some(p) = path(sys) else { continue };
        for &khz in &freqs {
            let hz = khz * 1e3;
            let n = ((hz * point_s).round() as u64).max(10);
            let case = format!("sweep_{}kHz", khz_label(khz));
            let r = measure(&p, &names, &place, 1, hz, n);
            match &r {
                Ok(o) => {
                    let ratios = period_ratios(&out, &case, p.system, o, 1e3 / khz);
                    out.text(&format!(
                        "{:<18} {:>5} {:>8} {:>5} {:>8} {:>8} {:>8} {:>8} {ratios}",
                        p.system,
                        khz_label(khz),
                        o.sent,
                        o.lost,
                        cell(o.lat, |l| l.mean),
                        cell(o.lat, |l| l.p50),
                        cell(o.lat, |l| l.p99),
                        cell(o.lat, |l| l.max)
                    ));
                }
                Err(e) => out.text(&format!("{:<18} {:>5} unavailable: {e}", p.system, khz_label(khz))),
            }
            emit(&out, &case, p.system, &r);
            results.insert((case, p.system.to_string()), r);
        }
    }

    // 3. The hop chain.
    let (hop_counts, chain_paths, chain_s) = chain_plan(quick);
    let chain_n = (HZ * chain_s) as u64;
    out.text("");
    out.text(&format!("hop chain at {HZ} Hz, {chain_s} s per point (cases hops_<n>): n links, n - 1 relay processes; end-to-end latency / period"));
    out.text("system             hops     sent  lost  mean µs   p50 µs   p99 µs   max µs   mean/T   p99/T   max/T");
    for sys in &chain_paths {
        let Some(p) = path(sys) else { continue };
        for &hops in &hop_counts {
            let case = format!("hops_{hops}");
            let r = measure_chain(&p, &names, &place, hops, HZ, chain_n);
            match &r {
                Ok(o) => {
                    let ratios = period_ratios(&out, &case, p.system, o, 1e6 / HZ);
                    out.text(&format!(
                        "{:<18} {:>5} {:>8} {:>5} {:>8} {:>8} {:>8} {:>8} {ratios}",
                        p.system,
                        hops,
                        o.sent,
                        o.lost,
                        cell(o.lat, |l| l.mean),
                        cell(o.lat, |l| l.p50),
                        cell(o.lat, |l| l.p99),
                        cell(o.lat, |l| l.max)
                    ));
                }
                Err(e) => out.text(&format!("{:<18} {:>5} unavailable: {e}", p.system, hops)),
            }
            emit(&out, &case, p.system, &r);
            results.insert((case, p.system.to_string()), r);
        }
    }

    bars(&out, &results, &chain_paths, &hop_counts);
    informative(&out, &results);
    let load_end = clock::loadavg();
    out.text(&format!("load average at end: {load_end}"));
    out.json(json!({"suite": "latency", "kind": "info", "loadavg_end": load_end}));
    0
}

/// One bar line: PASS/MISS with the figures, or UNAVAILABLE with the reason.
struct Bar<'a> {
    out: &'a Out,
    bar: &'static str,
}

impl Bar<'_> {
    #[allow(clippy::too_many_arguments)]
    fn verdict(&self, case: &str, system: &str, metric: &str, op: &str, value: f64, limit: f64, definition: String) {
        let pass = match op {
            "<=" => value <= limit,
            "<" => value < limit,
            _ => value == limit,
        };
        self.out.text(&format!(
            "  {:<4} {:<28} {case:<13} {definition} = {} {op} {limit}",
            if pass { "PASS" } else { "MISS" },
            self.bar,
            if op == "==" { format!("{value}") } else { format!("{value:.3}") }
        ));
        self.out.json(json!({"suite": "latency", "kind": "ratio", "bar": self.bar, "case": case, "system": system,
            "metric": metric, "op": op, "value": if op == "==" { json!(value) } else { json!(round3(value)) }, "limit": limit,
            "pass": pass, "definition": definition}));
    }

    /// `what`: the comparison that could not be made, e.g. "nerve-shm (wait) p50 vs pipe p50".
    fn unavailable(&self, case: &str, system: &str, metric: &str, op: &str, what: &str, reason: &str) {
        self.out.text(&format!("  UNAVAILABLE {:<28} {case:<13} {what}: {reason}", self.bar));
        self.out.json(json!({"suite": "latency", "kind": "ratio", "bar": self.bar, "case": case, "system": system,
            "metric": metric, "op": op, "value": null, "pass": null, "definition": what, "reason": reason}));
    }
}

fn lat_of<'a>(results: &'a Results, case: &str, system: &str) -> Result<(Latencies, &'a Outcome), String> {
    match results.get(&(case.to_string(), system.to_string())) {
        None => Err(format!("{system} was not measured in {case}")),
        Some(Err(e)) => Err(format!("{system}: {e}")),
        Some(Ok(o)) => o.lat.map(|l| (l, o)).ok_or_else(|| format!("{system} received nothing in {case}")),
    }
}

fn metric(l: &Latencies, m: &str) -> f64 {
    match m {
        "p50" => l.p50,
        "p99" => l.p99,
        "mean" => l.mean,
        _ => l.max,
    }
}

/// The bars of issue 4.
fn bars(out: &Out, results: &Results, chain_paths: &[&str], hop_counts: &[usize]) {
    const WAIT: &str = "nerve-shm (wait)";
    const POLL: &str = "nerve-shm (poll)";
    out.text("");
    out.text("bars (issue 4; figures from this run)");
    for case in [CASE_1, CASE_2] {
        // Waiting mode within 1.5x of the futex floor, p50 and p99.
        for (bar, m) in [("wait p50 vs futex floor", "p50"), ("wait p99 vs futex floor", "p99")] {
            let b = Bar { out, bar };
            match (lat_of(results, case, WAIT), lat_of(results, case, "futex floor")) {
                (Ok((w, _)), Ok((f, _))) => {
                    let (a, c) = (metric(&w, m), metric(&f, m));
                    b.verdict(
                        case,
                        WAIT,
                        m,
                        "<=",
                        a / c,
                        1.5,
                        format!("{WAIT} {m} {a:.1} µs / futex floor {m} {c:.1} µs"),
                    )
                }
                (Err(e), _) | (_, Err(e)) => {
                    b.unavailable(case, WAIT, m, "<=", &format!("{WAIT} {m} vs futex floor {m}"), &e)
                }
            }
        }
        // Waiting mode below every kernel IPC row, p50 and p99.
        let b = Bar { out, bar: "wait below kernel IPC" };
        for k in paths().into_iter().filter(|p| p.group == Group::Kernel) {
            for m in ["p50", "p99"] {
                match (lat_of(results, case, WAIT), lat_of(results, case, k.system)) {
                    (Ok((w, _)), Ok((r, _))) => {
                        let (a, c) = (metric(&w, m), metric(&r, m));
                        b.verdict(
                            case,
                            WAIT,
                            m,
                            "<",
                            a / c,
                            1.0,
                            format!("{WAIT} {m} {a:.1} µs / {} {m} {c:.1} µs", k.system),
                        )
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        b.unavailable(case, WAIT, m, "<", &format!("{WAIT} {m} vs {} {m}", k.system), &e)
                    }
                }
            }
        }
        // Polling mode p50 at most iceoryx2's.
        let b = Bar { out, bar: "poll p50 vs iceoryx2 (poll)" };
        match (lat_of(results, case, POLL), lat_of(results, case, "iceoryx2 (poll)")) {
            (Ok((n, _)), Ok((i, _))) => b.verdict(
                case,
                POLL,
                "p50",
                "<=",
                n.p50 / i.p50,
                1.0,
                format!("{POLL} p50 {:.2} µs / iceoryx2 (poll) p50 {:.2} µs", n.p50, i.p50),
            ),
            (Err(e), _) | (_, Err(e)) => {
                b.unavailable(case, POLL, "p50", "<=", &format!("{POLL} p50 vs iceoryx2 (poll) p50"), &e)
            }
        }
    }
    // Ach's C API on nerve-shm within 1.1x of nerve-shm itself, waiting and polling, p50 and p99 (issue 25).
    let b = Bar { out, bar: "ach API vs nerve-shm" };
    for case in [CASE_1, CASE_2] {
        for (ach, shm) in [("ach API (wait)", WAIT), ("ach API (poll)", POLL)] {
            for m in ["p50", "p99"] {
                match (lat_of(results, case, ach), lat_of(results, case, shm)) {
                    (Ok((a, _)), Ok((n, _))) => {
                        let (x, y) = (metric(&a, m), metric(&n, m));
                        b.verdict(case, ach, m, "<=", x / y, 1.1, format!("{ach} {m} {x:.2} µs / {shm} {m} {y:.2} µs"))
                    }
                    (Err(e), _) | (_, Err(e)) => b.unavailable(case, ach, m, "<=", &format!("{ach} {m} vs {shm}"), &e),
                }
            }
        }
    }
    // Python's bus within 3x of Rust's: publish to callback over shm, p50 (issue 20).
    let b = Bar { out, bar: "python p50 vs rust bus" };
    for case in [CASE_1, CASE_2] {
        match (lat_of(results, case, "nerve-python-shm"), lat_of(results, case, "nerve-bus-shm")) {
            (Ok((py, _)), Ok((rs, _))) => b.verdict(
                case,
                "nerve-python-shm",
                "p50",
                "<=",
                py.p50 / rs.p50,
                3.0,
                format!("nerve-python-shm p50 {:.1} µs / nerve-bus-shm p50 {:.1} µs", py.p50, rs.p50),
            ),
            (Err(e), _) | (_, Err(e)) => {
                b.unavailable(case, "nerve-python-shm", "p50", "<=", "nerve-python-shm p50 vs nerve-bus-shm p50", &e)
            }
        }
    }
    // nerve.h's bus from C within 1.1x of the Rust bus, publish to handler over shm://, waiting and polling, p50
    // (issue 21).
    let b = Bar { out, bar: "C bus vs Rust bus" };
    for case in [CASE_1, CASE_2] {
        for (c, rust) in [("C bus shm (wait)", "bus shm (wait)"), ("C bus shm (poll)", "bus shm (poll)")] {
            match (lat_of(results, case, c), lat_of(results, case, rust)) {
                (Ok((a, _)), Ok((n, _))) => {
                    let (x, y) = (metric(&a, "p50"), metric(&n, "p50"));
                    b.verdict(case, c, "p50", "<=", x / y, 1.1, format!("{c} p50 {x:.2} µs / {rust} p50 {y:.2} µs"))
                }
                (Err(e), _) | (_, Err(e)) => b.unavailable(case, c, "p50", "<=", &format!("{c} p50 vs {rust}"), &e),
            }
        }
    }
    // Java on Nerve's lcm.jar and Go on bindings/go within 1.5x of C's nerve.h bus, publish to handler over shm://,
    // waiting and polling, p50 (issue 41).
    for (bar, lang) in [("Java bus vs C bus", "Java"), ("Go bus vs C bus", "Go")] {
        lang_vs_c(out, results, bar, lang);
    }
    // No message lost to a reader that keeps up: the 1 kHz table and the chain (the sweep's fast points may outrun a
    // waiting reader, which then skips to the newest by design; their loss is printed above).
    let b = Bar { out, bar: "no loss (reader keeps up)" };
    let mut cases: Vec<(String, &str)> = Vec::new();
    for case in [CASE_1, CASE_2] {
        cases.push((case.to_string(), WAIT));
        cases.push((case.to_string(), POLL));
    }
    for sys in chain_paths.iter().filter(|s| s.starts_with("nerve-shm")) {
        for h in hop_counts {
            cases.push((format!("hops_{h}"), sys));
        }
    }
    for (case, sys) in cases {
        match results.get(&(case.clone(), sys.to_string())) {
            Some(Ok(o)) => {
                b.verdict(&case, sys, "lost", "==", o.lost as f64, 0.0, format!("{sys} lost of {}", o.expected))
            }
            Some(Err(e)) => b.unavailable(&case, sys, "lost", "==", &format!("{sys} lost"), e),
            None => b.unavailable(&case, sys, "lost", "==", &format!("{sys} lost"), "not measured in this run"),
        }
    }
}

/// `"{lang} bus shm (wait)"` and `(poll)` against the C bus rows of the same mode: p50 within 1.5x.
fn lang_vs_c(out: &Out, results: &Results, bar: &'static str, lang: &str) {
    let b = Bar { out, bar };
    for case in [CASE_1, CASE_2] {
        for mode in ["wait", "poll"] {
            let (l, c) = (format!("{lang} bus shm ({mode})"), format!("C bus shm ({mode})"));
            match (lat_of(results, case, &l), lat_of(results, case, &c)) {
                (Ok((a, _)), Ok((n, _))) => {
                    let (x, y) = (metric(&a, "p50"), metric(&n, "p50"));
                    b.verdict(case, &l, "p50", "<=", x / y, 1.5, format!("{l} p50 {x:.2} µs / {c} p50 {y:.2} µs"))
                }
                (Err(e), _) | (_, Err(e)) => b.unavailable(case, &l, "p50", "<=", &format!("{l} p50 vs {c}"), &e),
            }
        }
    }
}

/// Informative ratios: nerve-udpm against the real LCM (issue 3 set no bar here).
fn informative(out: &Out, results: &Results) {
    out.text("");
    out.text("informative: nerve-udpm / lcm-c-udpm (issue 3 sets no bar on one-way latency)");
    for case in [CASE_1, CASE_2] {
        match (lat_of(results, case, "nerve-udpm"), lat_of(results, case, "lcm-c-udpm")) {
            (Ok((n, _)), Ok((l, _))) => {
                out.text(&format!(
                    "  {case:<13} mean {:.3}  p50 {:.3}  p99 {:.3}  max {:.3}",
                    n.mean / l.mean,
                    n.p50 / l.p50,
                    n.p99 / l.p99,
                    n.max / l.max
                ));
                for m in ["mean", "p50", "p99", "max"] {
                    let (a, b) = (metric(&n, m), metric(&l, m));
                    out.json(json!({"suite": "latency", "kind": "ratio", "bar": "nerve-udpm / lcm-c-udpm (informative)",
                        "case": case, "system": "nerve-udpm", "metric": m, "op": "info", "value": round3(a / b),
                        "limit": null, "pass": null, "definition": format!("nerve-udpm {m} {a:.1} µs / lcm-c-udpm {m} {b:.1} µs")}));
                }
            }
            (Err(e), _) | (_, Err(e)) => out.text(&format!("  {case:<13} unavailable: {e}")),
        }
    }
}
