//! Runs `nerve-bench scale --quick --json --out DIR` and checks what it prints and writes: every line a JSON object
//! of the documented shapes; Nerve's rows of every part measured (a peer may be unavailable, with its reason); the
//! shm subscriber's figures plausible (at least one thread, some memory, a latency);
//! and the tables and the SVG plots written under DIR. No timing is asserted.

use std::collections::BTreeSet;
use std::process::Command;

#[test]
fn the_quick_scale_run_prints_every_part_and_writes_its_plots() {
    let out = std::env::temp_dir().join(format!("nerve-bench-scale-quick-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(env!("CARGO_BIN_EXE_nerve-bench"))
        .args(["scale", "--quick", "--json", "--out"])
        .arg(&out)
        .output()
        .expect("running nerve-bench");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "nerve-bench scale failed: {}\n{stdout}", String::from_utf8_lossy(&run.stderr));
    let lines: Vec<serde_json::Value> =
        stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    let mut measured = BTreeSet::new();
    for v in &lines {
        assert_eq!(v["suite"], "scale", "{v}");
        if v["kind"] == "info" {
            continue;
        }
        let (case, system) = (v["case"].as_str().expect("case"), v["system"].as_str().expect("system"));
        if v.get("status").is_some() {
            assert_eq!(v["status"], "unavailable", "{v}");
            assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
            assert!(!system.starts_with("nerve"), "Nerve's own rows always run: {v}");
            continue;
        }
        assert!(v["metric"].is_string() && v["unit"].is_string(), "{v}");
        assert!(v["value"].is_number() || v["value"].is_null(), "{v}");
        measured.insert((case.to_string(), system.to_string(), v["metric"].as_str().unwrap().to_string()));
    }
    let get = |case: &str, system: &str, metric: &str| -> f64 {
        lines
            .iter()
            .find(|v| v["case"] == case && v["system"] == system && v["metric"] == metric)
            .and_then(|v| v["value"].as_f64())
            .unwrap_or_else(|| panic!("no {metric} of {system} in {case}:\n{stdout}"))
    };
    for n in [1, 100] {
        let case = format!("channels_{n}");
        assert!(get(&case, "nerve bus shm", "threads") >= 1.0);
        assert!(get(&case, "nerve bus shm", "rss") > 0.0);
        assert!(get(&case, "nerve bus shm", "idle_cpu") >= 0.0);
        assert!(get(&case, "nerve bus shm", "p50") > 0.0);
    }
    for case in ["size_64", "size_4194304"] {
        for sys in ["nerve-shm zc-wait", "nerve-shm copy-wait", "nerve-shm zc-poll", "nerve-shm copy-poll", "memcpy"] {
            assert!(get(case, sys, "p50") > 0.0, "{case} {sys}");
        }
    }
    for case in ["readers_1", "readers_4"] {
        assert!(get(case, "nerve-shm copy-wait", "last_p50") > 0.0);
        // The control row (a plain futex broadcast) is this suite's own: it always runs.
        assert!(get(case, "futex zc-wait", "last_p50") > 0.0, "{case}: the futex control row");
    }
    for sys in ["nerve udpm", "nerve mpudpm"] {
        assert!(get("udpm_100ch_3proc", sys, "cpu_mean") >= 0.0);
        assert!(get("udpm_100ch_3proc", sys, "recv_per_proc") > 0.0, "{sys} subscribers got nothing");
    }
    for file in [
        "scale.txt",
        "scale.jsonl",
        "channels-threads.svg",
        "channels-idle-cpu.svg",
        "channels-rss.svg",
        "channels-latency.svg",
        "size-p50.svg",
        "size-p99.svg",
        "readers.svg",
        "udpm-cpu.svg",
    ] {
        let body = std::fs::read_to_string(out.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        if file.ends_with(".svg") {
            assert!(body.starts_with("<svg") && body.contains("nerve"), "{file} is not a plot of Nerve's rows");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
