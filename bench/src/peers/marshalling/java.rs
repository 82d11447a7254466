//! The Java rows: Nerve's generated classes (`nerve-java`) against lcm-gen's (`lcm-java`), compiled by build.rs
//! against LCM's own lcm.jar and timed in one JVM by bench/java/Marshalling.java, the two systems taking turns on
//! every (case, metric), round after round.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::process::{Command, Stdio};

use super::Metric;
use crate::data::Case;

/// The Java systems, in row order.
pub const SYSTEMS: [&str; 2] = ["nerve-java", "lcm-java"];

/// Rounds in a full run.
const ROUNDS: usize = 9;

/// One round's medians by (case, metric).
pub type Round = BTreeMap<(String, Metric), f64>;

/// Each Java system's rounds, or why the rows are unavailable (one `Err` per system).
pub fn run(cases: &[Case], quick: bool) -> BTreeMap<&'static str, Vec<Result<Round, String>>> {
    let failed = |e: String| SYSTEMS.iter().map(|&s| (s, vec![Err(e.clone())])).collect();
    let status = env!("BENCH_STATUS_JAVA");
    if status != "ok" {
        return failed(status.to_string());
    }
    let tmp = std::env::temp_dir().join(format!("nerve-bench-java-{}", std::process::id()));
    let result = measure(cases, quick, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    match result {
        Err(e) => failed(e),
        Ok(lines) => {
            let rounds = if quick { 1 } else { ROUNDS };
            let mut out: BTreeMap<&'static str, Vec<Result<Round, String>>> =
                SYSTEMS.iter().map(|&s| (s, (0..rounds).map(|_| Ok(Round::new())).collect())).collect();
            for v in lines {
                let (Some(r), Some(case), Some(sys), Some(metric), Some(ns)) = (
                    v["round"].as_u64(),
                    v["case"].as_str(),
                    v["system"].as_str(),
                    v["metric"].as_str().and_then(metric),
                    v["ns"].as_f64(),
                ) else {
                    continue;
                };
                let Some(rs) = SYSTEMS.iter().find(|&&s| s == sys).and_then(|s| out.get_mut(s)) else { continue };
                if let Some(Ok(round)) = rs.get_mut(r as usize) {
                    round.insert((case.to_string(), metric), ns);
                }
            }
            out
        }
    }
}

fn metric(name: &str) -> Option<Metric> {
    match name {
        "encode" => Some(Metric::Encode),
        "decode" => Some(Metric::Decode),
        _ => None,
    }
}

/// Writes the cases' reference encodings, runs the JVM and returns its timing lines.
fn measure(cases: &[Case], quick: bool, dir: &std::path::Path) -> Result<Vec<serde_json::Value>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("unavailable: {e}"))?;
    let mut cmd = Command::new("java");
    cmd.args(["-Xms512m", "-Xmx512m", "-XX:+UseParallelGC", "-cp", env!("BENCH_JAVA_CP"), "Marshalling"]);
    cmd.arg(if quick { 1 } else { ROUNDS }.to_string()).arg(quick.to_string());
    for c in cases {
        let f = dir.join(format!("{}.lcm.bin", c.name()));
        std::fs::write(&f, c.lcm_bytes()).map_err(|e| format!("unavailable: {e}"))?;
        cmd.arg(c.name()).arg(c.lcm_type()).arg(&f);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("unavailable: running java: {e}"))?;
    let stdout = std::io::BufReader::new(child.stdout.take().expect("piped"));
    let mut lines = Vec::new();
    for line in stdout.lines() {
        let line = line.map_err(|e| format!("unavailable: reading the JVM's output: {e}"))?;
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
            // As the other rows' verification failures: no figures for systems that disagree.
            eprintln!("nerve-bench marshalling: VERIFICATION FAILED: {e}");
            eprintln!("nerve-bench marshalling: aborting (no figures are printed for systems that disagree)");
            std::process::exit(3);
        }
        lines.push(v);
    }
    let out = child.wait_with_output().map_err(|e| format!("unavailable: {e}"))?;
    if !out.status.success() {
        return Err(format!("unavailable: the JVM failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(lines)
}
