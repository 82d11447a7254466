//! Runs `nerve-bench intraprocess --quick --json` and checks the shape of what it prints: every line a JSON object of
//! the documented shapes; for every graph every system either produced all its metrics or said it is unavailable;
//! the inproc rows of the shared-subscription graphs counted no copy (what the suite is for, not a timing). Every
//! system here is Nerve's own, so one unavailable fails the test. No time is asserted.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const CASES: [&str; 4] = ["image_pipeline", "image_pipeline_2viewers", "sierra_nevada", "mont_blanc"];
const SYSTEMS: [&str; 3] = ["nerve-inproc", "nerve-shm", "nerve-udpm"];
const METRICS: [(&str, &str); 12] = [
    ("mean", "us"),
    ("p50", "us"),
    ("p99", "us"),
    ("max", "us"),
    ("published", "msgs"),
    ("received", "msgs"),
    ("expected", "msgs"),
    ("cpu_pct", "%"),
    ("rss_mb", "MB"),
    ("rss_growth_pct", "%"),
    ("copies_per_msg", "copies"),
    ("decodes_per_msg", "decodes"),
];

#[test]
fn quick_json_has_the_documented_shape() {
    let out = Command::new(env!("CARGO_BIN_EXE_nerve-bench"))
        .args(["intraprocess", "--quick", "--json"])
        .output()
        .expect("running nerve-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "nerve-bench intraprocess failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut values: BTreeMap<(String, String), BTreeMap<String, serde_json::Value>> = BTreeMap::new();
    let mut unavailable = BTreeMap::new();
    let mut bars = Vec::new();
    let mut infos = 0;
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(v["suite"], "intraprocess", "{v}");
        match v.get("kind").and_then(|k| k.as_str()) {
            Some("info") => infos += 1,
            Some("ratio") => {
                for k in ["bar", "case", "system", "metric", "op"] {
                    assert!(v[k].is_string(), "ratio line without {k}: {v}");
                }
                if v["value"].is_null() {
                    assert!(v["pass"].is_null() && v["reason"].is_string(), "{v}");
                } else {
                    assert!(v["value"].is_number() && v["pass"].is_boolean() && v["definition"].is_string(), "{v}");
                }
                bars.push(v);
            }
            Some(other) => panic!("unknown kind {other}: {v}"),
            None => {
                let key = (v["case"].as_str().unwrap().to_string(), v["system"].as_str().unwrap().to_string());
                if v.get("status").is_some() {
                    assert_eq!(v["status"], "unavailable", "{v}");
                    assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
                    assert!(
                        unavailable.insert(key, v["reason"].as_str().unwrap_or_default().to_string()).is_none(),
                        "duplicate: {v}"
                    );
                    continue;
                }
                let metric = v["metric"].as_str().expect("metric").to_string();
                let unit =
                    METRICS.iter().find(|(m, _)| *m == metric).unwrap_or_else(|| panic!("unknown metric: {v}")).1;
                assert_eq!(v["unit"], unit, "{v}");
                assert!(v["value"].is_number() || (v["value"].is_null() && v["note"].is_string()), "{v}");
                assert!(values.entry(key).or_default().insert(metric, v["value"].clone()).is_none(), "duplicate: {v}");
            }
        }
    }
    assert_eq!(infos, 2, "one info line at the start, one at the end");
    // Every system is Nerve's own (in-process, shm, udpm on loopback): none may be unavailable.
    assert!(unavailable.is_empty(), "Nerve rows unavailable: {unavailable:?}");
    for case in CASES {
        for sys in SYSTEMS {
            let key = (case.to_string(), sys.to_string());
            let got = values.get(&key).unwrap_or_else(|| panic!("{key:?} neither measured nor unavailable"));
            let names: BTreeSet<&str> = got.keys().map(String::as_str).collect();
            assert_eq!(names, METRICS.iter().map(|(m, _)| *m).collect(), "{key:?}");
        }
    }
    // In-process delivery always runs here; with shared subscriptions it makes no copy and decodes nothing.
    for case in ["sierra_nevada", "mont_blanc"] {
        let inproc = &values[&(case.to_string(), "nerve-inproc".to_string())];
        assert_eq!(inproc["copies_per_msg"], 0.0, "{case}");
        assert_eq!(inproc["decodes_per_msg"], 0.0, "{case}");
    }
    // Every bar is printed for every graph it applies to: p50 and memory for four, zero copies for two.
    let count = |bar: &str| bars.iter().filter(|b| b["bar"] == bar).count();
    assert_eq!(count("p50 udpm / inproc"), 4);
    assert_eq!(count("memory flat (inproc growth %)"), 4);
    assert_eq!(count("zero copies (shared subscriptions)"), 2);
}
