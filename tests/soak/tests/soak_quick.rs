//! Runs `nerve-soak --quick --json` (about a minute: inproc, shm and udpm traffic, a publisher killed and
//! restarted every 5 s, subscriptions and channels made and dropped) and checks the shape of what it prints: six
//! periods with delivered and lost counts, every process's memory and descriptors, the shm files and the latency, then
//! the five bars with PASS or FAIL. Messages must have been delivered and none corrupted; the bars' verdicts are not
//! asserted (a loaded CI machine is no place to judge them: the lead's long run is), except the memory bar's, which
//! the run is made to judge: the udpm publisher is made to leak (`NERVE_SOAK_INJECT_LEAK_KIB_PER_S`, a knob only
//! the soak reads), so the bar must fail on it and hold for every other process, after the warm-up the run causes
//! (its rings' pages touched for the first time).

use std::process::Command;

#[test]
fn the_quick_soak_prints_every_period_and_every_bar() {
    let out = Command::new(env!("CARGO_BIN_EXE_nerve-soak"))
        .args(["--quick", "--json"])
        .env("NERVE_SOAK_INJECT_LEAK_KIB_PER_S", "64")
        .output()
        .expect("running");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // 0: every bar passed; 1: some failed; 2 would be a soak that could not run.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{:?}: {}\n{stdout}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> =
        stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    let periods: Vec<_> = lines.iter().filter(|v| v["kind"] == "period").collect();
    assert_eq!(periods.len(), 6, "{stdout}");
    for p in &periods {
        assert!(p["delivered"].as_u64().is_some_and(|d| d > 0), "nothing delivered: {p}");
        assert_eq!(p["lost"]["corrupt"], 0, "{p}");
        for key in ["transport", "queue overflow"] {
            assert!(p["lost"][key].as_u64().is_some(), "{p}");
        }
        for role in ["shm pub", "udpm pub", "shm sub (keeps up)", "shm sub (falls behind)", "udpm sub", "inproc"] {
            let (low, high) = (p["held_kib"][role].as_u64(), p["held_peak_kib"][role].as_u64());
            assert!(low.is_some_and(|k| k > 0) && high >= low, "{role}: {p}");
            // Every role reports its allocator's in-use bytes (mallinfo2), and its code pages are counted apart.
            let (heap, code) = (p["heap_kib"][role].as_u64(), p["code_kib"][role].as_u64());
            assert!(heap.is_some_and(|k| k > 0) && code.is_some_and(|k| k > 0), "{role}: {p}");
            assert!(p["vmrss_kib"][role].as_u64() >= low, "{role}: {p}");
            assert!(p["fds"][role].as_u64().is_some_and(|k| k > 0), "{role}: {p}");
        }
        for key in [
            "shm_keepup_lost",
            "skipped_ticks",
            "shm_files",
            "leftover_files",
            "latency_p50_us",
            "latency_p99_us",
            "latency_max_us",
        ] {
            assert!(p[key].as_u64().is_some(), "{key}: {p}");
        }
    }
    let bars: Vec<_> = lines.iter().filter(|v| v["kind"] == "bar").collect();
    assert_eq!(bars.len(), 5, "{stdout}");
    for b in &bars {
        assert!(b["pass"].is_boolean() && b["detail"].is_string(), "{b}");
    }
    // 64 KiB a second is several % of a publisher of a few MiB over the last half's 30 s; the bar allows 1 %.
    let memory = bars.iter().find(|b| b["bar"].as_str().is_some_and(|s| s.starts_with("resident memory"))).unwrap();
    assert_eq!(memory["pass"], false, "the leak went unseen: {memory}");
    let deviations = memory["deviation_pct"].as_object().expect("per-process deviations");
    assert_eq!(deviations.len(), 7, "{memory}");
    for (process, pct) in deviations {
        let pct = pct.as_f64().expect("a number");
        if process == "udpm pub" {
            assert!(pct > 1.0, "the leaking process is within the bar: {memory}");
        } else {
            assert!(pct <= 1.0, "{process} is not flat without a leak: {memory}\n{stdout}");
        }
    }
    assert_eq!(lines.iter().filter(|v| v["kind"] == "note").count(), 1, "{stdout}");
}
