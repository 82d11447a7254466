//! Runs `nerve-bench echo --quick --json` and `nerve-bench latency --quick --json` and checks the shape of what they
//! print: every line is a JSON object of the documented shapes, and for every case every system either produced all
//! its metrics (a value, or null with a note) or said it is unavailable; Nerve's own rows always run, so one of them
//! unavailable fails the test. No timing is asserted.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

fn run(suite: &str) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_nerve-bench"))
        .args([suite, "--quick", "--json"])
        .output()
        .expect("running nerve-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "nerve-bench {suite} failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect()
}

/// Checks every line; returns (case, system) -> metrics, the unavailable (case, system) pairs and the ratio lines.
#[allow(clippy::type_complexity)]
fn check(
    suite: &str,
    lines: &[serde_json::Value],
    units: &BTreeMap<&str, &str>,
) -> (BTreeMap<(String, String), BTreeSet<String>>, BTreeSet<(String, String)>, Vec<serde_json::Value>) {
    let mut metrics: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut unavailable = BTreeSet::new();
    let mut ratios = Vec::new();
    let mut infos = 0;
    for v in lines {
        assert_eq!(v["suite"], suite, "{v}");
        match v.get("kind").and_then(|k| k.as_str()) {
            Some("info") => infos += 1,
            Some("ratio") => {
                for k in ["bar", "case", "system", "metric", "op"] {
                    assert!(v[k].is_string(), "ratio line without {k}: {v}");
                }
                if v["value"].is_null() {
                    assert!(v["pass"].is_null() && v["reason"].is_string(), "{v}");
                } else {
                    assert!(v["value"].is_number() && v["definition"].is_string(), "{v}");
                    assert!(v["pass"].is_boolean() || v["op"] == "info", "{v}");
                }
                ratios.push(v.clone());
            }
            Some(other) => panic!("unknown kind {other}: {v}"),
            None => {
                let case = v["case"].as_str().expect("case").to_string();
                let sys = v["system"].as_str().expect("system").to_string();
                if v.get("status").is_some() {
                    assert_eq!(v["status"], "unavailable", "{v}");
                    assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
                    assert!(unavailable.insert((case, sys)), "duplicate: {v}");
                    continue;
                }
                let m = v["metric"].as_str().expect("metric").to_string();
                let unit = units.get(m.as_str()).unwrap_or_else(|| panic!("unknown metric {m}: {v}"));
                assert_eq!(v["unit"], *unit, "{v}");
                let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
                if v["value"].is_null() {
                    assert!(v["note"].is_string(), "{v}");
                    assert_eq!(keys, ["suite", "case", "system", "metric", "value", "unit", "note"].into(), "{v}");
                } else {
                    let x = v["value"].as_f64().expect("number");
                    assert!(x.is_finite() && x >= 0.0, "{v}");
                    assert_eq!(keys, ["suite", "case", "system", "metric", "value", "unit"].into(), "{v}");
                }
                assert!(metrics.entry((case, sys)).or_default().insert(m), "duplicate metric: {v}");
            }
        }
    }
    assert!(infos >= 1, "no info line");
    (metrics, unavailable, ratios)
}

/// Fails if a Nerve row (a system named `nerve...`) is unavailable: unlike a peer's, a Nerve row has nothing missing
/// to blame (scripts/setup installs what the peers need too), so its "unavailable" is a failure. One exception:
/// the `nerve-java` row needs Nerve's jar, which Maven builds (`scripts/install-java`, run by pytest's Java tests
/// after this step), not cargo; without the jar that row may say so, and with it, it must run.
fn nerve_rows_ran(lines: &[serde_json::Value]) {
    let jar_built = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bindings/java/target/lcm.jar").exists();
    let excused = |v: &serde_json::Value| {
        v["system"] == "nerve-java"
            && !jar_built
            && v["reason"].as_str().is_some_and(|r| r.contains("lcm.jar not found"))
    };
    let failed: Vec<String> = lines
        .iter()
        .filter(|v| v["status"] == "unavailable" && v["system"].as_str().is_some_and(|s| s.starts_with("nerve")))
        .filter(|v| !excused(v))
        .map(|v| format!("{} {}: {}", v["case"], v["system"], v["reason"]))
        .collect();
    assert!(failed.is_empty(), "Nerve rows unavailable:\n{}", failed.join("\n"));
}

/// Every (case, system) either has all `want` metrics or is unavailable, never both, never neither.
fn complete(
    cases: &[&str],
    systems: &[&str],
    want: &[&str],
    metrics: &BTreeMap<(String, String), BTreeSet<String>>,
    unavailable: &BTreeSet<(String, String)>,
) {
    let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    for case in cases {
        for sys in systems {
            let key = (case.to_string(), sys.to_string());
            match (metrics.get(&key), unavailable.contains(&key)) {
                (Some(m), false) => assert_eq!(m, &want, "{case} {sys}"),
                (None, true) => {}
                other => panic!("{case} {sys}: metrics and unavailable {other:?}"),
            }
        }
    }
    let known: BTreeSet<(String, String)> = metrics.keys().chain(unavailable.iter()).cloned().collect();
    for (c, s) in &known {
        assert!(cases.contains(&c.as_str()) && systems.contains(&s.as_str()), "unexpected {c} {s}");
    }
}

#[test]
fn echo_quick_json_has_every_system_and_metric() {
    let lines = run("echo");
    nerve_rows_ran(&lines);
    let units: BTreeMap<&str, &str> = [
        ("offered_mbps", "MB/s"),
        ("delivered_mbps", "MB/s"),
        ("loss_pct", "%"),
        ("mean", "us"),
        ("p50", "us"),
        ("p99", "us"),
        ("max", "us"),
    ]
    .into();
    let (metrics, unavailable, ratios) = check("echo", &lines, &units);
    let metric_names: Vec<&str> = units.keys().copied().collect();
    let cases = ["5MBps_1clients", "max_1clients", "5MBps_4clients", "max_4clients"];
    let native = ["nerve", "lcm-c", "lcm-c-nerve", "nerve-mpudpm", "udp-floor"];
    // The Python rows (issue 20) and the Java rows (issue 41) run at one client only.
    let one_client = [
        "nerve",
        "lcm-c",
        "lcm-c-nerve",
        "nerve-mpudpm",
        "udp-floor",
        "nerve.lcm-python",
        "lcm-python",
        "nerve-java",
        "lcm-java",
    ];
    for (cases, systems) in [(&cases[..2], &one_client[..]), (&cases[2..], &native[..])] {
        let of = |c: &String| cases.contains(&c.as_str());
        let m = metrics.iter().filter(|((c, _), _)| of(c)).map(|(k, v)| (k.clone(), v.clone())).collect();
        let u = unavailable.iter().filter(|(c, _)| of(c)).cloned().collect();
        complete(cases, systems, &metric_names, &m, &u);
    }
    // Three bars per case (issue 3), and at one client issue 20's two, each with a verdict or a reason.
    for case in cases {
        let bars: BTreeSet<&str> =
            ratios.iter().filter(|r| r["case"] == case).map(|r| r["bar"].as_str().unwrap()).collect();
        // And issue 21's two (lcm-c on nerve) at every point.
        assert!(bars.contains("lcm-c on nerve: delivered vs lcm-c") && bars.contains("lcm-c on nerve: p50 vs lcm-c"));
        let want = if case.ends_with("_1clients") { 9 } else { 5 };
        assert_eq!(bars.len(), want, "{case}: {bars:?}");
        if want == 9 {
            assert!(bars.contains("python delivered vs lcm-python") && bars.contains("python p50 vs lcm-python"));
            assert!(bars.contains("java delivered vs lcm-java") && bars.contains("java p50 vs lcm-java"));
        }
    }
}

#[test]
fn latency_quick_json_has_every_system_and_metric() {
    let lines = run("latency");
    nerve_rows_ran(&lines);
    let units: BTreeMap<&str, &str> =
        [("mean", "us"), ("p50", "us"), ("p99", "us"), ("max", "us"), ("loss_pct", "%"), ("lost", "msgs")].into();
    let (metrics, unavailable, ratios) = check("latency", &lines, &units);
    let metric_names: Vec<&str> = units.keys().copied().collect();
    // Issue 4's rows (and issue 25's ach API rows, issue 20's bus rows from Rust and Python): every one measured or
    // unavailable with a reason, in each part of the suite (not their speed).
    let table = [
        "spin floor",
        "futex floor",
        "nerve-shm (poll)",
        "nerve-shm (wait)",
        "nerve-shm (wait, xxh3)",
        "ach API (poll)",
        "ach API (wait)",
        "bus shm (poll)",
        "bus shm (wait)",
        "C bus shm (poll)",
        "C bus shm (wait)",
        "iceoryx2 (poll)",
        "iceoryx2 (event)",
        "pipe",
        "posix-mq",
        "unix-stream",
        "unix-dgram",
        "udp",
        "tcp",
        "nerve-udpm",
        "lcm-c-udpm",
        "nerve-bus-shm",
        "nerve-python-shm",
        "Java bus shm (poll)",
        "Java bus shm (wait)",
        "Go bus shm (poll)",
        "Go bus shm (wait)",
    ];
    let sweep = ["nerve-shm (wait)", "nerve-shm (poll)", "futex floor", "pipe"];
    let chain = ["nerve-shm (wait)", "pipe"];
    let parts: [(Vec<&str>, &[&str]); 3] = [
        (vec!["64B_1kHz", "64B_1kHz_2rx"], &table),
        (vec!["sweep_1kHz", "sweep_10kHz", "sweep_100kHz"], &sweep),
        (vec!["hops_1", "hops_2", "hops_4", "hops_8"], &chain),
    ];
    for (cases, systems) in &parts {
        let of_part = |c: &String| cases.contains(&c.as_str());
        let m = metrics.iter().filter(|((c, _), _)| of_part(c)).map(|(k, v)| (k.clone(), v.clone())).collect();
        let u = unavailable.iter().filter(|(c, _)| of_part(c)).cloned().collect();
        complete(cases, systems, &metric_names, &m, &u);
    }
    let all_cases: Vec<&str> = parts.iter().flat_map(|(c, _)| c.iter().copied()).collect();
    for (c, s) in metrics.keys().chain(unavailable.iter()) {
        assert!(all_cases.contains(&c.as_str()), "unexpected case {c} ({s})");
    }
    // Issue 4's bars (and issue 20's Python one): each printed for both table cases, with a verdict or the reason
    // there is none.
    for case in ["64B_1kHz", "64B_1kHz_2rx"] {
        let bars: BTreeSet<&str> =
            ratios.iter().filter(|r| r["case"] == case).map(|r| r["bar"].as_str().unwrap()).collect();
        for bar in [
            "wait p50 vs futex floor",
            "wait p99 vs futex floor",
            "wait below kernel IPC",
            "poll p50 vs iceoryx2 (poll)",
            "ach API vs nerve-shm",
            "C bus vs Rust bus",
            "no loss (reader keeps up)",
            "python p50 vs rust bus",
            "Java bus vs C bus",
            "Go bus vs C bus",
        ] {
            assert!(bars.contains(bar), "{case}: no {bar:?} line in {bars:?}");
        }
        let vs_kernel = ratios.iter().filter(|r| r["case"] == case && r["bar"] == "wait below kernel IPC").count();
        assert_eq!(vs_kernel, 12, "{case}: six kernel rows x p50, p99");
        let vs_shm = ratios.iter().filter(|r| r["case"] == case && r["bar"] == "ach API vs nerve-shm").count();
        assert_eq!(vs_shm, 4, "{case}: ach API (wait, poll) x p50, p99");
        let c_bus = ratios.iter().filter(|r| r["case"] == case && r["bar"] == "C bus vs Rust bus").count();
        assert_eq!(c_bus, 2, "{case}: C bus (wait, poll) p50");
        let java = ratios.iter().filter(|r| r["case"] == case && r["bar"] == "Java bus vs C bus").count();
        assert_eq!(java, 2, "{case}: Java bus (wait, poll) p50");
        let go = ratios.iter().filter(|r| r["case"] == case && r["bar"] == "Go bus vs C bus").count();
        assert_eq!(go, 2, "{case}: Go bus (wait, poll) p50");
    }
}
