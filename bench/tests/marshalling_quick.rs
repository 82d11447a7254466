//! Runs `nerve-bench marshalling --quick --json` and checks the shape of what it prints: every line is a JSON
//! object of the documented shapes, and for every case every system either produced all five metrics (a value, or
//! null with a note when the metric does not apply) or said it is unavailable; Nerve's own systems (and the peers
//! that need nothing beyond this crate) always run, so one of them unavailable fails the test. No timing is
//! asserted.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const SYSTEMS: [&str; 13] = [
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
const METRICS: [&str; 5] = ["encode", "decode", "full_projection", "fixed_field", "variable_region"];
const CASES: [&str; 7] = ["image_t", "laser_t", "path_t", "lidar_10", "lidar_100", "lidar_1000", "lidar_10000"];

#[test]
fn quick_json_has_every_system_and_metric() {
    let out = Command::new(env!("CARGO_BIN_EXE_nerve-bench"))
        .args(["marshalling", "--quick", "--json"])
        .output()
        .expect("running nerve-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "nerve-bench failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));

    let mut metrics: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut unavailable: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut ratios = 0;
    let mut infos = 0;
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(v["suite"], "marshalling", "{line}");
        match v.get("kind").and_then(|k| k.as_str()) {
            // One run header, plus one line per system that reports how it ran (e.g. whether Python's native
            // accelerator was in use).
            Some("info") if v.get("system").is_none() => infos += 1,
            Some("info") => assert!(v["system"].as_str().is_some_and(|s| SYSTEMS.contains(&s)), "{line}"),
            Some("ratio") => {
                ratios += 1;
                for k in ["bar", "case", "system", "metric", "op"] {
                    assert!(v[k].is_string(), "ratio line without {k}: {line}");
                }
                if v["value"].is_null() {
                    assert!(v["pass"].is_null() && v["reason"].is_string(), "{line}");
                } else {
                    assert!(v["value"].is_f64() && v["limit"].is_number() && v["pass"].is_boolean(), "{line}");
                    assert!(v["definition"].is_string(), "{line}");
                }
            }
            Some(other) => panic!("unknown kind {other}: {line}"),
            None => {
                let case = v["case"].as_str().expect("case").to_string();
                let sys = v["system"].as_str().expect("system").to_string();
                assert!(CASES.contains(&case.as_str()), "{line}");
                assert!(SYSTEMS.contains(&sys.as_str()), "{line}");
                if v.get("status").is_some() {
                    assert_eq!(v["status"], "unavailable", "{line}");
                    assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{line}");
                    unavailable.insert((case, sys), v["reason"].as_str().unwrap_or_default().to_string());
                } else {
                    let m = v["metric"].as_str().expect("metric").to_string();
                    assert!(METRICS.contains(&m.as_str()), "{line}");
                    assert_eq!(v["unit"], "us", "{line}");
                    if v["value"].is_null() {
                        assert!(v["note"].as_str().is_some_and(|n| n.starts_with("not applicable")), "{line}");
                    } else {
                        let x = v["value"].as_f64().expect("number");
                        assert!(x.is_finite() && x >= 0.0, "{line}");
                    }
                    // Exactly the keys on a measurement line.
                    let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
                    let want: BTreeSet<&str> = if v["value"].is_null() {
                        ["suite", "case", "system", "metric", "value", "unit", "note"].into()
                    } else {
                        ["suite", "case", "system", "metric", "value", "unit"].into()
                    };
                    assert_eq!(keys, want, "{line}");
                    assert!(metrics.entry((case, sys)).or_default().insert(m), "duplicate metric: {line}");
                }
            }
        }
    }
    assert_eq!(infos, 1);
    assert!(ratios > 0, "no ratio lines");
    for case in CASES {
        for sys in SYSTEMS {
            let key = (case.to_string(), sys.to_string());
            let got = metrics.get(&key).cloned().unwrap_or_default();
            if unavailable.contains_key(&key) {
                assert!(got.is_empty(), "{case}/{sys} is both unavailable and measured");
            } else {
                let want: BTreeSet<String> = METRICS.iter().map(|s| s.to_string()).collect();
                assert_eq!(got, want, "{case}/{sys}: neither all metrics nor unavailable");
            }
        }
    }
    // Nerve's own systems (`nerve-...`: scripts/setup installs all they need, a C compiler and the venv with the
    // native extension), and the peers that need nothing beyond this crate, always run: "unavailable" from one of
    // them is a failure, not a missing peer.
    for ((case, sys), reason) in &unavailable {
        let must_run = sys.starts_with("nerve") || ["bincode", "memcpy"].contains(&sys.as_str());
        assert!(!must_run, "{case}/{sys} unavailable: {reason}");
    }
}
