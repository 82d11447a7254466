//! Runs `nerve-bench foxglove --quick --json` and checks the shape of what it prints: either both systems' rows
//! (the server's messages, CPU per message and latency percentiles, the spy's messages and CPU per message) and the
//! ratio line, and the mapped image's row (frames received as foxglove.RawImage, CPU per frame, latency
//! percentiles), or every row `unavailable` with a reason (no `nerve` binary next to `nerve-bench`). No timing is
//! asserted.

use std::process::Command;

#[test]
fn the_foxglove_suite_prints_both_systems_and_their_ratio() {
    let out = Command::new(env!("CARGO_BIN_EXE_nerve-bench"))
        .args(["foxglove", "--quick", "--json"])
        .output()
        .expect("running nerve-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "nerve-bench foxglove failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    for v in &lines {
        assert_eq!(v["suite"], "foxglove", "{v}");
    }
    let system =
        |name: &str| lines.iter().find(|v| v["system"] == name).unwrap_or_else(|| panic!("no {name}: {stdout}"));
    let mapped = lines
        .iter()
        .find(|v| v["case"] == "mapped image 640x480 30 Hz")
        .unwrap_or_else(|| panic!("no mapped image row: {stdout}"));
    let (server, spy) = (system("nerve foxglove"), system("nerve spy --once"));
    if server["status"] == "unavailable" {
        for v in [server, spy, mapped] {
            assert_eq!(v["status"], "unavailable", "{v}");
            assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
        }
        eprintln!("the suite's programs are unavailable: {}", server["reason"]);
        return;
    }
    for v in [server, spy] {
        assert!(v["messages"].as_u64().is_some_and(|n| n > 0), "{v}");
        assert!(v["cpu_us_per_msg"].as_f64().is_some_and(|c| c > 0.0), "{v}");
    }
    assert!(server["pose_messages"].as_u64().is_some_and(|n| n > 0), "{server}");
    for k in ["pose_latency_p50_us", "pose_latency_p99_us"] {
        assert!(server[k].as_f64().is_some_and(|l| l >= 0.0), "{k}: {server}");
    }
    for k in ["image_latency_p50_us", "image_latency_p99_us"] {
        assert!(server[k].is_null() || server[k].as_f64().is_some_and(|l| l >= 0.0), "{k}: {server}");
    }
    assert!(mapped["frames"].as_u64().is_some_and(|n| n > 0), "{mapped}");
    assert!(mapped["cpu_us_per_frame"].as_f64().is_some_and(|c| c > 0.0), "{mapped}");
    for k in ["latency_p50_us", "latency_p99_us"] {
        assert!(mapped[k].as_f64().is_some_and(|l| l >= 0.0), "{k}: {mapped}");
    }
    let ratio = lines.iter().find(|v| v["kind"] == "ratio").expect("a ratio line");
    assert_eq!(ratio["definition"], "nerve foxglove / nerve spy --once", "{ratio}");
    assert!(ratio["value"].as_f64().is_some_and(|r| r > 0.0), "{ratio}");
}
