//! `nerve foxglove` end to end: the binary on an shm bus the test publishes on, and its page in headless Chromium
//! (puppeteer-core, `crates/foxglove/tests/node/browser.mjs`): the channel table's rows and a plot's points are
//! checked against the traffic, and a screenshot of the page is kept (`target/tmp/foxglove-page.png`).

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{nerve, text, Guard, TestDir};
use nerve_bus::Bus;
use nerve_types::{Registry, TypeName};

fn foxglove_tests() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../foxglove/tests")
}

/// Starts `nerve foxglove` on `url` with the test types, on any free port; returns the guard and the address.
fn start_server(url: &str) -> (Guard, String) {
    let mut child = nerve()
        .args(["foxglove", "--url", url, "--listen", "127.0.0.1:0", "--types"])
        .arg(foxglove_tests().join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.split("http://").nth(1).and_then(|s| s.split('/').next()).unwrap_or_default().to_owned();
    assert!(!addr.is_empty(), "no address in {line:?}");
    (Guard(Some(child)), addr)
}

#[test]
fn the_page_shows_the_table_and_plots_what_was_published() {
    let node = foxglove_tests().join("node");
    assert!(node.join("node_modules/puppeteer-core").is_dir(), "run scripts/setup (npm ci in {})", node.display());
    let dir = TestDir::new("foxglove", "page");
    let (server, addr) = start_server(&dir.url());

    // POSE at 50 Hz: position[0] walks 0, 0.5, ... 9.5 and position[1] = -position[0]; MYSTERY, of no known type.
    let (reg, diags) = Registry::load_dirs(&[foxglove_tests().join("data")]);
    assert!(!diags.has_errors());
    let name = TypeName::parse("foxtest.pose_t");
    let poses: Vec<Vec<u8>> = (0..20)
        .map(|k| {
            let x = k as f64 * 0.5;
            let json = format!(
                r#"{{"utime":{k},"position":[{x:.1},{:.1},1.0],"q":[1.0,0.0,0.0,0.0],"frame":"map","counts":[{k}],
                   "waypoints":[{{"x":0.0,"y":0.0}},{{"x":1.0,"y":1.0}}],"ok":true,"raw":[1,2]}}"#,
                -x
            );
            reg.encode(&name, &reg.from_json(&name, &json).unwrap()).unwrap()
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let (bus, s) = (Bus::new(Some(&dir.url())).unwrap(), Arc::clone(&stop));
    let publisher = std::thread::spawn(move || {
        let mut k = 0;
        while !s.load(Ordering::Acquire) {
            bus.publish_raw("POSE", &poses[k % poses.len()]).unwrap();
            if k % 5 == 0 {
                bus.publish_raw("MYSTERY", &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1, 9]).unwrap();
            }
            k += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
    });

    let spec = serde_json::json!({
        "channel": "POSE",
        "type": "foxtest.pose_t",
        // 50 Hz published; the machine is shared, so the bounds are wide.
        "minRate": 20, "maxRate": 80,
        "fields": {
            "position[0]": (0..20).map(|k| k as f64 * 0.5).collect::<Vec<_>>(),
            "position[1]": (0..20).map(|k| -(k as f64) * 0.5).collect::<Vec<_>>(),
        },
        "otherRows": ["MYSTERY"],
        "minPoints": 40,
        "timeoutMs": 40000,
    });
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("foxglove-page.png");
    let started = Instant::now();
    let out = Command::new("node")
        .arg("browser.mjs")
        .arg(format!("http://{addr}/"))
        .arg(&spec_path)
        .arg(&shot)
        .current_dir(&node)
        .output()
        .expect("node runs");
    stop.store(true, Ordering::Release);
    publisher.join().unwrap();
    drop(server);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "browser test failed after {:?}: {stdout}\nstderr: {}",
        started.elapsed(),
        text(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(result["points"].as_u64().unwrap() >= 40, "{result}");
    assert!(shot.metadata().unwrap().len() > 10_000, "screenshot {} is missing or empty", shot.display());
}
