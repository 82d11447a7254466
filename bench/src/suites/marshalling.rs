//! `nerve-bench marshalling`: encode, decode and the three projections of every case (bench/types) for Nerve's Rust,
//! C and Python against real LCM C and Python, flatbuffers, bincode and a memcpy floor, each checked against the
//! reference encoding before it is timed; prints the tables, the ratios to the peers and the bars. It shows what
//! Nerve's generated code costs against the codecs a robot would otherwise use.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;

use serde_json::json;

use crate::data::{self, Case};
use crate::harness::timing::Config;
use crate::peers::marshalling as systems;
use crate::peers::marshalling::{mismatch, Cell, Metric, METRICS};

/// Every system, in row order.
pub const SYSTEMS: [&str; 13] = [
    "nerve-rust",
    "nerve-rust (reuse)",
    "nerve-c",
    "nerve-c (arena)",
    "lcm-c",
    "flatbuffers",
    "bincode",
    "memcpy",
    "nerve-python",
    "nerve-python-list",
    "lcm-python",
    "nerve-java",
    "lcm-java",
];

/// The order the native systems are timed in within a round: each system a bar compares next to what it is compared
/// with (lcm-c, or memcpy where lcm-c is at the floor), so the two sides of a ratio are timed moments apart.
const MEASURE_ORDER: [&str; 8] =
    ["nerve-rust (reuse)", "nerve-rust", "lcm-c", "nerve-c", "nerve-c (arena)", "memcpy", "flatbuffers", "bincode"];

/// The allocation-free decode rows: measured for `decode` only; their other metrics are the normal API's.
const REUSE_NOTE: &str =
    "decode only: this row is the allocation-free decode API; encode and views are the normal row's";

/// A Python system's medians by (case, metric), or why it is unavailable.
type PyResult = Result<BTreeMap<(String, Metric), f64>, String>;

/// The result of one system on one case.
type Outcome = Result<Vec<(Metric, Cell)>, String>;

/// Every round's figures of each (case, system), in the order the rounds ran: what the bars pair.
type Rounds = BTreeMap<(String, &'static str), Vec<BTreeMap<Metric, f64>>>;

/// A bar's value from figures of the same round: `f` of each round's figures of `sides`, and the median of that over
/// the rounds. The host's speed shifts by up to 2x over seconds (a run on 2026-11-22 had both C rows 1.7x faster
/// than in the run before while the Rust rows stayed put); the ratio of two medians taken over different moments
/// moves with it, the ratio within a round moves much less.
fn paired<const N: usize>(
    rounds: &Rounds,
    case: &str,
    sides: [(&str, Metric); N],
    f: impl Fn([f64; N]) -> f64,
) -> Result<f64, String> {
    let series: Vec<&Vec<BTreeMap<Metric, f64>>> = sides
        .iter()
        .map(|(sys, _)| rounds.get(&(case.to_string(), *sys)).ok_or_else(|| format!("{sys} has no rounds on {case}")))
        .collect::<Result<_, _>>()?;
    let n = series.iter().map(|s| s.len()).min().unwrap_or(0);
    let mut values: Vec<f64> = (0..n)
        .filter_map(|i| {
            let mut x = [0.0; N];
            for (k, (s, (_, m))) in series.iter().zip(&sides).enumerate() {
                x[k] = *s[i].get(m)?;
            }
            Some(f(x))
        })
        .collect();
    if values.is_empty() {
        return Err(format!("no round on {case} measured every side"));
    }
    Ok(crate::harness::timing::median(&mut values))
}

/// Options of the suite.
pub struct Options {
    /// `--quick`.
    pub quick: bool,
    /// `--json`.
    pub json: bool,
    /// What pinning did (printed).
    pub pinning: String,
}

/// Runs the suite and prints the results. Returns the process exit code.
pub fn run(opts: &Options) -> i32 {
    let cfg = if opts.quick { Config::quick() } else { Config::full() };
    let mut cases = data::cases();
    // NERVE_BENCH_CASES=path_t,laser_t runs only those cases (for profiling; a recorded run measures all).
    let only: Option<Vec<String>> =
        std::env::var("NERVE_BENCH_CASES").ok().map(|v| v.split(',').map(str::to_string).collect());
    if let Some(only) = &only {
        cases.retain(|c| only.iter().any(|n| *n == c.name()));
        if cases.is_empty() {
            eprintln!("nerve-bench: NERVE_BENCH_CASES matched none of the cases");
            return 2;
        }
    }
    let mut out = Output::new(opts.json);

    out.header(opts, &cases, only.as_deref());

    // Python rows first (subprocesses), so a missing interpreter shows up early. The interpreters (one per Python
    // system) run at once, each timing one (case, metric) at a time on request, and the requests alternate between
    // them, PY_ROUNDS rounds in a full run: timed one whole run after the other, the processes carried whatever the
    // host was doing at the time, and their ratio moved by 30 % with it.
    let mut runs = run_python(&cases, opts.quick, opts.json);
    runs.extend(systems::java::run(&cases, opts.quick));
    let mut rounds = Rounds::new();
    for (sys, rs) in &runs {
        for (i, r) in rs.iter().enumerate() {
            for ((case, m), ns) in r.iter().flatten() {
                let per_round = rounds.entry((case.clone(), sys)).or_default();
                if per_round.len() <= i {
                    per_round.resize_with(i + 1, BTreeMap::new);
                }
                per_round[i].insert(*m, *ns);
            }
        }
    }
    let py: BTreeMap<&str, PyResult> = runs.into_iter().map(|(s, r)| (s, median_of_rounds(r))).collect();

    // The native systems of a case take turns, NATIVE_ROUNDS times in a full run, and each figure is the median of
    // its rounds: on a shared host the background drifts over the seconds a case takes, and a system measured in
    // one block carried whatever that block got.
    let native_rounds = if opts.quick { 1 } else { NATIVE_ROUNDS };
    let mut results: BTreeMap<(String, &str), Outcome> = BTreeMap::new();
    for case in &cases {
        let cname = case.name();
        let mut native: BTreeMap<&str, Vec<Outcome>> = BTreeMap::new();
        for _ in 0..native_rounds {
            for sys in MEASURE_ORDER {
                if let Some(r) = run_native(sys, case, &cfg) {
                    native.entry(sys).or_default().push(r);
                }
            }
        }
        for sys in SYSTEMS {
            let r: Outcome = match sys {
                "nerve-python" | "nerve-python-list" | "lcm-python" | "nerve-java" | "lcm-java" => match &py[sys] {
                    Err(e) => Err(e.clone()),
                    Ok(m) => Ok(METRICS
                        .iter()
                        .map(|&met| match m.get(&(cname.clone(), met)) {
                            Some(&ns) => (met, Cell::Ns(ns)),
                            None if sys.ends_with("java") => (met, Cell::Na("not measured for this system".into())),
                            None => (met, Cell::Na("projections are measured on the LiDAR cases only".into())),
                        })
                        .collect()),
                },
                _ => {
                    let runs = native.remove(sys).unwrap_or_default();
                    let per_round = runs.iter().flatten().map(|cells| {
                        cells
                            .iter()
                            .filter_map(|(m, c)| if let Cell::Ns(ns) = c { Some((*m, *ns)) } else { None })
                            .collect()
                    });
                    rounds.insert((cname.clone(), sys), per_round.collect());
                    median_of_native_rounds(runs)
                }
            };
            let r = r.map(|cells| complete(case, sys, cells));
            results.insert((cname.clone(), sys), r);
        }
        out.case_table(case, &results);
    }
    out.ratios(&cases, &results, &rounds);
    out.finish();
    0
}

/// Fills in the metrics a system did not report as not applicable (projections on the LCM's paper cases).
fn complete(case: &Case, sys: &str, mut cells: Vec<(Metric, Cell)>) -> Vec<(Metric, Cell)> {
    for m in METRICS {
        if !cells.iter().any(|(c, _)| *c == m) {
            let why = match case {
                _ if sys.ends_with(')') => REUSE_NOTE,
                Case::Lidar(_) => "not measured for this system",
                _ => "projections are measured on the LiDAR cases only (PolySync's serialization paper)",
            };
            cells.push((m, Cell::Na(why.into())));
        }
    }
    cells.sort_by_key(|(m, _)| *m);
    cells
}

/// Which API a bar's figure comes from, for its definition.
fn api(sys: &str, m: Metric) -> String {
    match (sys, m) {
        ("nerve-rust (reuse)", _) => {
            "nerve-rust decode_into (reuses the held value's strings and vectors: no allocation)".into()
        }
        ("nerve-c (arena)", _) => {
            "nerve-c T_decode_arena (strings and arrays from a reset arena: no malloc/free)".into()
        }
        ("nerve-rust", Metric::Decode) => "nerve-rust decode (allocates; value dropped)".into(),
        ("nerve-c" | "lcm-c", Metric::Decode) => format!("{sys} decode + decode_cleanup (malloc + free)"),
        _ => format!("{sys} {}", m.name()),
    }
}

fn get(results: &BTreeMap<(String, &str), Outcome>, case: &str, sys: &str, m: Metric) -> Result<f64, String> {
    match results.get(&(case.to_string(), sys)) {
        None => Err(format!("{sys} not run")),
        Some(Err(e)) => Err(format!("{sys} {e}")),
        Some(Ok(cells)) => match cells.iter().find(|(c, _)| *c == m) {
            Some((_, Cell::Ns(v))) => Ok(*v),
            Some((_, Cell::Na(why))) => Err(format!("{sys} {}: {why}", m.name())),
            None => Err(format!("{sys} has no {}", m.name())),
        },
    }
}

/// Rounds of the native rows of each case in a full run (the systems taking turns).
const NATIVE_ROUNDS: usize = 9;

/// One native system's figures on one case; `None` for the Python systems, which run apart.
fn run_native(sys: &str, case: &Case, cfg: &Config) -> Option<Outcome> {
    Some(match sys {
        "nerve-rust" => systems::nerve_rust(case, cfg),
        "nerve-rust (reuse)" => systems::nerve_rust_reuse(case, cfg),
        "nerve-c (arena)" => systems::nerve_c_arena(case, cfg),
        "nerve-c" => systems::nerve_c(case, cfg),
        "lcm-c" => systems::lcm_c(case, cfg),
        "flatbuffers" => systems::flatbuffers(case, cfg),
        "bincode" => Ok(systems::others::bincode(case, cfg)),
        "memcpy" => Ok(systems::others::memcpy(case, cfg)),
        _ => return None,
    })
}

/// Each metric's median over the rounds (a metric that does not apply keeps its reason); the first failure if a
/// round failed.
fn median_of_native_rounds(rounds: Vec<Outcome>) -> Outcome {
    let rounds = rounds.into_iter().collect::<Result<Vec<_>, _>>()?;
    let Some(first) = rounds.first() else { return Err("unavailable: no round ran".into()) };
    Ok(first
        .iter()
        .map(|(metric, cell)| match cell {
            Cell::Na(why) => (*metric, Cell::Na(why.clone())),
            Cell::Ns(_) => {
                let mut v: Vec<f64> = rounds
                    .iter()
                    .filter_map(|r| r.iter().find(|(m, _)| m == metric))
                    .filter_map(|(_, c)| if let Cell::Ns(ns) = c { Some(*ns) } else { None })
                    .collect();
                (*metric, Cell::Ns(crate::harness::timing::median(&mut v)))
            }
        })
        .collect())
}

/// Rounds of the Python rows in a full run (the interpreters taking turns).
const PY_ROUNDS: usize = 9;

/// Each figure's median over the rounds; the first failure if a round failed.
fn median_of_rounds(rounds: Vec<PyResult>) -> PyResult {
    let rounds = rounds.into_iter().collect::<Result<Vec<_>, _>>()?;
    let Some(first) = rounds.first() else { return Err("unavailable: no round ran".into()) };
    Ok(first
        .keys()
        .map(|k| {
            let mut v: Vec<f64> = rounds.iter().filter_map(|r| r.get(k).copied()).collect();
            (k.clone(), crate::harness::timing::median(&mut v))
        })
        .collect())
}

/// The Python rows: the interpreters (one per Python system) serve bench/python/marshalling.py at once, and every
/// (case, metric) is timed in one, then the next, round after round. Returns each system's rounds (a failed system: one `Err`).
fn run_python(cases: &[Case], quick: bool, json_out: bool) -> BTreeMap<&'static str, Vec<PyResult>> {
    let systems = ["nerve-python", "nerve-python-list", "lcm-python"];
    let tmp = std::env::temp_dir().join(format!("nerve-bench-{}", std::process::id()));
    let manifest = write_manifest(&tmp, cases);
    let mut workers: Vec<Result<PyWorker, String>> =
        systems.iter().map(|&sys| manifest.clone().and_then(|mf| PyWorker::start(sys, &mf, quick, json_out))).collect();
    let rounds = if quick { 1 } else { PY_ROUNDS };
    let mut figures: Vec<Vec<BTreeMap<(String, Metric), f64>>> = vec![Vec::with_capacity(rounds); systems.len()];
    let mut object_loop: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for _ in 0..rounds {
        for f in &mut figures {
            f.push(BTreeMap::new());
        }
        for case in cases {
            let cname = case.name();
            let lidar = matches!(case, Case::Lidar(_));
            let metrics: &[&str] = if lidar {
                &["encode", "decode", "full_projection", "object_loop", "fixed_field", "variable_region"]
            } else {
                &["encode", "decode"]
            };
            for &metric in metrics {
                for (k, w) in workers.iter_mut().enumerate() {
                    let Ok(worker) = w else { continue };
                    if metric == "object_loop" && worker.sys != "nerve-python" {
                        continue; // lcm-python's full projection is this loop already
                    }
                    match worker.measure(&cname, metric) {
                        Err(e) => *w = Err(e),
                        Ok(None) => {}
                        Ok(Some(ns)) => match Metric::from_name(metric) {
                            Some(m) => {
                                figures[k].last_mut().expect("pushed this round").insert((cname.clone(), m), ns);
                            }
                            None => object_loop.entry(cname.clone()).or_default().push(ns),
                        },
                    }
                }
            }
        }
    }
    let failed: Vec<Option<String>> = workers.iter().map(|w| w.as_ref().err().cloned()).collect();
    drop(workers); // closes their stdin: they exit
    let _ = std::fs::remove_dir_all(&tmp);
    for (cname, mut v) in object_loop {
        let ns = crate::harness::timing::median(&mut v);
        let what = format!(
            "nerve-python {cname}: decode + read every value through objects (the loop lcm-python runs): {:.2} us",
            ns / 1000.0
        );
        if json_out {
            println!("{}", json!({"suite": "marshalling", "kind": "info", "system": "nerve-python", "python": what}));
        } else {
            println!("python: {what}");
        }
    }
    systems
        .iter()
        .zip(figures)
        .zip(failed)
        .map(|((&sys, rounds), failed)| match failed {
            Some(e) => (sys, vec![Err(e)]),
            None => (sys, rounds.into_iter().map(Ok).collect()),
        })
        .collect()
}

/// Writes each case's reference encoding and the manifest the Python script reads; the manifest's path.
fn write_manifest(dir: &std::path::Path, cases: &[Case]) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("unavailable: {e}"))?;
    let mut manifest = Vec::new();
    for c in cases {
        let f = dir.join(format!("{}.lcm.bin", c.name()));
        std::fs::write(&f, c.lcm_bytes()).map_err(|e| format!("unavailable: {e}"))?;
        let expect = match c {
            Case::Lidar(l) => json!({"sum": l.sum(), "guid": l.msg_info.guid, "middle_y": l.middle_y() as f64}),
            _ => serde_json::Value::Null,
        };
        manifest.push(json!({"name": c.name(), "type": c.lcm_type(), "file": f, "expect": expect}));
    }
    let mf = dir.join("cases.json");
    std::fs::write(&mf, serde_json::to_vec(&manifest).expect("JSON values serialize"))
        .map_err(|e| format!("unavailable: {e}"))?;
    Ok(mf)
}

/// One Python interpreter running bench/python/marshalling.py: loaded and verified, timing on request.
struct PyWorker {
    sys: &'static str,
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl PyWorker {
    /// Starts the script for `sys` and waits until it has verified every case (printing its info lines).
    fn start(sys: &'static str, manifest: &std::path::Path, quick: bool, json_out: bool) -> Result<PyWorker, String> {
        use std::process::Stdio;
        let (status, dir) = match sys {
            "nerve-python" => (env!("BENCH_STATUS_NERVE_PY"), "nerve_py"),
            "nerve-python-list" => (env!("BENCH_STATUS_NERVE_PY_LIST"), "nerve_py_list"),
            _ => (env!("BENCH_STATUS_LCM_PY"), "lcm_py"),
        };
        if status != "ok" {
            return Err(status.to_string());
        }
        let venv = crate::harness::venv();
        let python = venv.join("bin/python");
        if !python.exists() {
            return Err(format!("unavailable: {} not found (run scripts/setup)", python.display()));
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/marshalling.py");
        let gen = PathBuf::from(env!("BENCH_OUT_DIR")).join(dir);
        let mut cmd = Command::new(&python);
        cmd.arg(script).arg("--system").arg(sys).arg("--path").arg(&gen).arg("--manifest").arg(manifest);
        if quick {
            cmd.arg("--quick");
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("unavailable: running {}: {e}", python.display()))?;
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().expect("piped"));
        let mut w = PyWorker { sys, child, stdin, stdout };
        loop {
            let v = w.next_line()?;
            if v.get("ready").is_some() {
                return Ok(w);
            }
            if let Some(i) = v.get("info").and_then(|i| i.as_str()) {
                if json_out {
                    println!("{}", json!({"suite": "marshalling", "kind": "info", "system": sys, "python": i}));
                } else {
                    println!("python: {i}");
                }
            }
        }
    }

    /// The median time of one `metric` operation on `case`, in ns; `None` if the case has no such metric.
    fn measure(&mut self, case: &str, metric: &str) -> Result<Option<f64>, String> {
        let stdin = self.stdin.as_mut().ok_or("unavailable: stdin closed")?;
        writeln!(stdin, "{}", json!({"case": case, "metric": metric}))
            .and_then(|()| stdin.flush())
            .map_err(|e| self.failure(&format!("writing a request: {e}")))?;
        let v = self.next_line()?;
        Ok(v["ns"].as_f64())
    }

    /// The next JSON line of the script; a failure if it ended or reported an error (a verification error aborts the
    /// bench, see [`mismatch`]).
    fn next_line(&mut self) -> Result<serde_json::Value, String> {
        use std::io::BufRead;
        loop {
            let mut line = String::new();
            match self.stdout.read_line(&mut line) {
                Ok(0) => return Err(self.failure("the script ended early")),
                Err(e) => return Err(self.failure(&format!("reading its output: {e}"))),
                Ok(_) => {}
            }
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
            if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
                mismatch(self.sys, "(python)", e);
            }
            if let Some(e) = v.get("unavailable").and_then(|e| e.as_str()) {
                return Err(format!("unavailable: {e}"));
            }
            return Ok(v);
        }
    }

    /// Why the script stopped serving, with its stderr.
    fn failure(&mut self, what: &str) -> String {
        use std::io::Read;
        self.stdin = None;
        let _ = self.child.wait();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        format!("unavailable: {} script failed ({what}): {}", self.sys, err.trim())
    }
}

impl Drop for PyWorker {
    fn drop(&mut self) {
        self.stdin = None; // EOF: the script returns
        let _ = self.child.wait();
    }
}
fn fmt_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.1} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2} us", ns / 1e3)
    } else {
        format!("{:.2} ms", ns / 1e6)
    }
}

/// Text or JSON lines.
struct Output {
    json: bool,
    text: String,
}

impl Output {
    fn new(json: bool) -> Output {
        Output { json, text: String::new() }
    }

    fn flush(&mut self) {
        print!("{}", self.text);
        let _ = std::io::stdout().flush();
        self.text.clear();
    }

    fn line(&mut self, v: serde_json::Value) {
        self.text.push_str(&v.to_string());
        self.text.push('\n');
    }

    fn header(&mut self, opts: &Options, cases: &[Case], only: Option<&[String]>) {
        if self.json {
            self.line(json!({"suite": "marshalling", "kind": "info", "mode": if opts.quick {"quick"} else {"full"},
                "pinning": opts.pinning, "host": host(), "loadavg": loadavg()}));
        } else {
            let mode = match (opts.quick, only) {
                (q, Some(only)) => format!("{}, only {}", if q { "quick" } else { "full" }, only.join(",")),
                (true, None) => "quick".to_string(),
                (false, None) => "full".to_string(),
            };
            let _ = writeln!(self.text, "nerve-bench marshalling ({mode} run) on {}", host());
            let _ = writeln!(self.text, "pinning: {}", opts.pinning);
            let _ = writeln!(
                self.text,
                "load average at start: {} (other work on this machine skews absolute times; ratios are the figure)",
                loadavg()
            );
            let _ = writeln!(
                self.text,
                "method: median time per operation over many samples of >= 20 us (small operations batched), after a \
                 warm-up; every system verified against the reference values first; buffers 64-byte aligned, inputs at \
                 {} and outputs at {} modulo 4096 (no 4 KiB aliasing){}",
                crate::harness::timing::INPUT_PHASE,
                crate::harness::timing::OUTPUT_PHASE,
                if opts.quick {
                    String::new()
                } else {
                    format!(
                        "; the systems of a case take turns {NATIVE_ROUNDS} times (the Python interpreters {PY_ROUNDS} \
                         times) and each figure is the median of its rounds; each ratio is the median over the rounds \
                         of the ratio within a round"
                    )
                }
            );
            let _ = writeln!(
                self.text,
                "fixed field = msg_info.guid; variable region = position[1] of point npoints/2; nerve-rust projections \
                 read through views, C/bincode/Python decode the whole message"
            );
            let _ = writeln!(self.text, "LCM-encoded sizes:");
            for c in cases {
                let _ = writeln!(self.text, "  {:<12} {:>8} bytes ({})", c.name(), c.lcm_bytes().len(), c.lcm_type());
            }
        }
        self.flush();
    }

    fn case_table(&mut self, case: &Case, results: &BTreeMap<(String, &str), Outcome>) {
        let cname = case.name();
        if self.json {
            for sys in SYSTEMS {
                match &results[&(cname.clone(), sys)] {
                    Err(e) => self.line(json!({"suite": "marshalling", "case": cname, "system": sys,
                        "status": "unavailable", "reason": e.trim_start_matches("unavailable: ")})),
                    Ok(cells) => {
                        for (m, c) in cells {
                            match c {
                                Cell::Ns(ns) => self.line(json!({"suite": "marshalling", "case": cname, "system": sys,
                                    "metric": m.name(), "value": ns / 1000.0, "unit": "us"})),
                                Cell::Na(why) => self.line(json!({"suite": "marshalling", "case": cname, "system": sys,
                                    "metric": m.name(), "value": null, "unit": "us", "note": format!("not applicable: {why}")})),
                            }
                        }
                    }
                }
            }
        } else {
            let _ = writeln!(
                self.text,
                "\n{} ({}, {} bytes in LCM format): median per operation",
                cname,
                case.lcm_type(),
                case.lcm_bytes().len()
            );
            let _ = write!(self.text, "  {:<18}", "system");
            for m in METRICS {
                let _ = write!(self.text, " {:>12}", m.header());
            }
            self.text.push('\n');
            for sys in SYSTEMS {
                let _ = write!(self.text, "  {sys:<18}");
                match &results[&(cname.clone(), sys)] {
                    Err(e) => {
                        let _ = writeln!(self.text, " {e}");
                    }
                    Ok(cells) => {
                        for (_, c) in cells {
                            let s = match c {
                                Cell::Ns(ns) => fmt_ns(*ns),
                                Cell::Na(_) => "-".into(),
                            };
                            let _ = write!(self.text, " {s:>12}");
                        }
                        self.text.push('\n');
                    }
                }
            }
        }
        self.flush();
    }

    fn ratios(&mut self, cases: &[Case], results: &BTreeMap<(String, &str), Outcome>, rounds: &Rounds) {
        let mut rows: Vec<Bar> = Vec::new();
        // Bar 1: encode <= 0.7x and decode <= 0.5x of lcm-c where lcm-c > 1.5x memcpy, else within 1.1x memcpy.
        for c in cases {
            let cn = c.name();
            for (m, limit) in [(Metric::Encode, 0.7), (Metric::Decode, 0.5)] {
                // The normal API (decode allocates, the value is dropped/cleaned up after) for both, and for decode
                // also the allocation-free API (its own rows, compared with lcm-c's only decode, which allocates).
                let systems: &[&str] = match m {
                    Metric::Decode => &["nerve-rust", "nerve-rust (reuse)", "nerve-c", "nerve-c (arena)"],
                    _ => &["nerve-rust", "nerve-c"],
                };
                for &sys in systems {
                    let bar = format!("{} vs lcm-c", m.name());
                    let lcm = get(results, &cn, "lcm-c", m);
                    let floor = get(results, &cn, "memcpy", m);
                    let me = get(results, &cn, sys, m);
                    let r = match (me, lcm, floor) {
                        (Ok(_), Ok(lcm), Ok(floor)) if lcm > 1.5 * floor => {
                            paired(rounds, &cn, [(sys, m), ("lcm-c", m)], |[me, lcm]| me / lcm).map(|v| {
                                (
                                    v,
                                    limit,
                                    format!(
                                        "{} / {} (lcm-c is {:.1}x memcpy)",
                                        api(sys, m),
                                        api("lcm-c", m),
                                        lcm / floor
                                    ),
                                )
                            })
                        }
                        (Ok(_), Ok(lcm), Ok(floor)) => paired(rounds, &cn, [(sys, m), ("memcpy", m)], |[me, floor]| {
                            me / floor
                        })
                        .map(|v| {
                            (
                                v,
                                1.1,
                                format!("{} / memcpy (lcm-c is at the floor: {:.2}x memcpy)", api(sys, m), lcm / floor),
                            )
                        }),
                        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Err(e),
                    };
                    rows.push(Bar::le(bar, &cn, sys, m, r));
                }
            }
        }
        // Bar 2: LiDAR 10,000 round trip within 4x the memcpy floor.
        for sys in ["nerve-rust", "nerve-c"] {
            let cn = "lidar_10000";
            let r = (|| {
                get(results, cn, sys, Metric::Encode)?;
                get(results, cn, sys, Metric::Decode)?;
                let f = get(results, cn, "memcpy", Metric::Encode)?;
                let sides = [(sys, Metric::Encode), (sys, Metric::Decode), ("memcpy", Metric::Encode)];
                let v = paired(rounds, cn, sides, |[e, d, f]| (e + d) / (2.0 * f))?;
                Ok((
                    v,
                    4.0,
                    format!(
                    "({sys} encode + decode) / (memcpy out + memcpy in); the round-trip floor is two copies of the \
                     encoded bytes, 2 x {}", fmt_ns(f)),
                ))
            })();
            rows.push(Bar::le("round trip vs memcpy".into(), cn, sys, Metric::Encode, r).with_metric("round_trip"));
        }
        // Bar 3: views at most 20 ns at every size.
        for c in cases.iter().filter(|c| matches!(c, Case::Lidar(_))) {
            let cn = c.name();
            for m in [Metric::Fixed, Metric::Var] {
                let r = get(results, &cn, "nerve-rust", m)
                    .map(|v| (v, 20.0, format!("nerve-rust view read of {}, in ns", m.name())));
                rows.push(Bar::le(format!("view {} (ns)", m.name()), &cn, "nerve-rust", m, r));
            }
        }
        // Bar 4: Python at least 10x faster than lcm-python (image_t: no slower).
        for cn in ["laser_t", "path_t", "lidar_10000", "image_t"] {
            let limit = if cn == "image_t" { 1.0 } else { 10.0 };
            for m in [Metric::Encode, Metric::Decode] {
                let r = (|| {
                    get(results, cn, "nerve-python", m)?;
                    get(results, cn, "lcm-python", m)?;
                    let v = paired(rounds, cn, [("lcm-python", m), ("nerve-python", m)], |[l, n]| l / n)?;
                    Ok((v, limit, format!("lcm-python {0} / nerve-python {0} (speed-up)", m.name())))
                })();
                rows.push(Bar::ge(format!("python {} speed-up", m.name()), cn, "nerve-python", m, r));
            }
        }
        // Bar 4b: the default generated Python (lists, lcm-gen's drop-in) decodes at least 2x faster than lcm-python.
        for cn in ["laser_t", "path_t"] {
            let m = Metric::Decode;
            let r = (|| {
                get(results, cn, "nerve-python-list", m)?;
                get(results, cn, "lcm-python", m)?;
                let v = paired(rounds, cn, [("lcm-python", m), ("nerve-python-list", m)], |[l, n]| l / n)?;
                Ok((v, 2.0, "lcm-python decode / nerve-python-list decode (speed-up; the default, list output)".into()))
            })();
            rows.push(Bar::ge("python list decode speed-up".into(), cn, "nerve-python-list", m, r));
        }
        // Bar 5: Nerve's generated Java at least as fast as lcm-gen's, both on the JVM in the same run.
        for c in cases {
            let cn = c.name();
            for m in [Metric::Encode, Metric::Decode] {
                let r = (|| {
                    get(results, &cn, "nerve-java", m)?;
                    get(results, &cn, "lcm-java", m)?;
                    let v = paired(rounds, &cn, [("nerve-java", m), ("lcm-java", m)], |[n, l]| n / l)?;
                    Ok((v, 1.0, format!("nerve-java {0} / lcm-java {0} (one JVM, lcm.jar's streams)", m.name())))
                })();
                rows.push(Bar::le(format!("java {} vs lcm-java", m.name()), &cn, "nerve-java", m, r));
            }
        }
        // Supplementary: a Python decoder may defer work to the first read (nerve-python's struct arrays do), so the
        // decode row alone can flatter it; decode + read every value (the full projection) cannot.
        {
            let cn = "lidar_10000";
            let r = (|| {
                get(results, cn, "nerve-python", Metric::Full)?;
                get(results, cn, "lcm-python", Metric::Full)?;
                let v =
                    paired(rounds, cn, [("lcm-python", Metric::Full), ("nerve-python", Metric::Full)], |[l, n]| l / n)?;
                Ok((
                    v,
                    10.0,
                    "lcm-python full_projection / nerve-python full_projection (decode + read every value; \
                    supplementary to the decode row, which a lazy decoder can flatter)"
                        .to_string(),
                ))
            })();
            rows.push(Bar::ge("python decode+read-all speed-up".into(), cn, "nerve-python", Metric::Full, r));
        }

        if self.json {
            for b in &rows {
                let mut v = json!({"suite": "marshalling", "kind": "ratio", "bar": b.bar, "case": b.case,
                    "system": b.system, "metric": b.metric, "op": b.op});
                match &b.r {
                    Ok((val, lim, def)) => {
                        v["value"] = json!(val);
                        v["limit"] = json!(lim);
                        v["pass"] = json!(b.pass());
                        v["definition"] = json!(def);
                    }
                    Err(e) => {
                        v["value"] = serde_json::Value::Null;
                        v["pass"] = serde_json::Value::Null;
                        v["reason"] = json!(e);
                    }
                }
                self.line(v);
            }
        } else {
            let _ = writeln!(self.text, "\nratios (the bars of issue 2)");
            let _ = writeln!(
                self.text,
                "  round-trip floor = memcpy out + memcpy in = 2 x (one copy of the LCM-encoded bytes between warm buffers)"
            );
            let _ = writeln!(
                self.text,
                "  {:<32} {:<12} {:<18} {:>9} {:>8}  result",
                "bar", "case", "system", "measured", "limit"
            );
            for b in &rows {
                let _ = write!(self.text, "  {:<32} {:<12} {:<18}", b.bar, b.case, b.system);
                match &b.r {
                    Ok((val, lim, def)) => {
                        let unit = if b.bar.starts_with("view") { "" } else { "x" };
                        let _ = writeln!(
                            self.text,
                            " {:>8.3}{unit:1} {:>2}{lim:<6} {}  [{def}]",
                            val,
                            b.op,
                            if b.pass() { "PASS" } else { "FAIL" }
                        );
                    }
                    Err(e) => {
                        let _ = writeln!(self.text, " {:>9} {:>8}  UNAVAILABLE ({e})", "-", "-");
                    }
                }
            }
            let pass = rows.iter().filter(|b| b.r.is_ok() && b.pass()).count();
            let fail = rows.iter().filter(|b| b.r.is_ok() && !b.pass()).count();
            let na = rows.iter().filter(|b| b.r.is_err()).count();
            let _ = writeln!(self.text, "  bars: {pass} pass, {fail} fail, {na} unavailable");
            let _ = writeln!(self.text, "load average at end: {}", loadavg());
        }
        self.flush();
    }

    fn finish(&mut self) {
        self.flush();
    }
}

struct Bar {
    bar: String,
    case: String,
    system: String,
    metric: String,
    op: &'static str,
    r: Result<(f64, f64, String), String>,
}

impl Bar {
    fn le(bar: String, case: &str, system: &str, m: Metric, r: Result<(f64, f64, String), String>) -> Bar {
        Bar { bar, case: case.into(), system: system.into(), metric: m.name().into(), op: "<=", r }
    }
    fn ge(bar: String, case: &str, system: &str, m: Metric, r: Result<(f64, f64, String), String>) -> Bar {
        Bar { op: ">=", ..Bar::le(bar, case, system, m, r) }
    }
    fn with_metric(mut self, m: &str) -> Bar {
        self.metric = m.into();
        self
    }
    fn pass(&self) -> bool {
        match &self.r {
            Ok((v, l, _)) if self.op == "<=" => v <= l,
            Ok((v, l, _)) => v >= l,
            Err(_) => false,
        }
    }
}

fn host() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    // Counted from /proc/cpuinfo: after pinning, available_parallelism() would say 1.
    let n = std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(0);
    format!("{name} ({cpu}, {n} CPUs)")
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
