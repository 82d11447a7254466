//! `nerve spy`'s plots on the live screen, driven through tmux (a server socket of this test's own) as
//! `tests/spy.rs` drives the table: open a channel, pick two numeric fields, and read the chart back.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nerve_bus::Bus;
use nerve_types::{Registry, TypeName};

mod common;
use common::TestDir;

struct Tmux(String);

impl Tmux {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux").args(["-L", &self.0]).args(args).output().unwrap()
    }
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "spy"]).stdout).into_owned()
    }
    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.run(&["send-keys", "-t", "spy", k]);
            std::thread::sleep(Duration::from_millis(150));
        }
    }
    /// Waits until one capture shows every one of `what` (a capture can catch a frame half drawn).
    fn wait_for_all(&self, what: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let s = self.screen();
            if what.iter().all(|w| s.contains(w)) {
                return s;
            }
            assert!(Instant::now() < deadline, "never saw all of {what:?}; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// Braille cells on the screen: the chart's points.
fn braille(screen: &str) -> usize {
    screen.chars().filter(|c| ('\u{2801}'..='\u{28ff}').contains(c)).count()
}

#[test]
fn picked_fields_are_plotted_live() {
    // A missing tmux fails the test (scripts/setup installs it): a test that skipped would pass unchecked.
    if let Err(e) = Command::new("tmux").arg("-V").output() {
        panic!("tmux is not installed (`tmux -V`: {e}); scripts/setup installs it");
    }
    let types = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../foxglove/tests/data");
    let (reg, diags) = Registry::load_dirs(std::slice::from_ref(&types));
    assert!(!diags.has_errors());
    let name = TypeName::parse("foxtest.pose_t");
    let dir = TestDir::new("spy", "plot");
    let url = dir.url();
    // POSE at 50 Hz: position[0] a sawtooth from 0 to 9.5, position[1] its negative.
    let poses: Vec<Vec<u8>> = (0..20)
        .map(|k| {
            let x = k as f64 * 0.5;
            let json = format!(
                r#"{{"utime":{k},"position":[{x:.1},{:.1},1.0],"q":[1.0,0.0,0.0,0.0],"frame":"map","counts":[],
                   "waypoints":[{{"x":0.0,"y":0.0}},{{"x":1.0,"y":1.0}}],"ok":true,"raw":[1,2]}}"#,
                -x
            );
            reg.encode(&name, &reg.from_json(&name, &json).unwrap()).unwrap()
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let (bus, s) = (Bus::new(Some(&url)).unwrap(), Arc::clone(&stop));
    let publisher = std::thread::spawn(move || {
        let mut k = 0;
        while !s.load(Ordering::Acquire) {
            bus.publish_raw("POSE", &poses[k % poses.len()]).unwrap();
            k += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
    });

    let tmux = Tmux(format!("nerve-spy-plot-test-{}", std::process::id()));
    let cmd = format!("{} spy --types {} --url '{url}'", env!("CARGO_BIN_EXE_nerve"), types.display());
    let started = tmux.run(&["new-session", "-d", "-s", "spy", "-x", "110", "-y", "36", &cmd]);
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    tmux.wait_for_all(&["POSE", "foxtest.pose_t"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for_all(&["position: double[3]", "f plot fields"]);
    tmux.keys(&["f"]);
    let list = tmux.wait_for_all(&["numeric fields", "[ ] utime", "[ ] position[0]", "[ ] waypoints[1].y"]);
    assert!(!list.contains("frame") && !list.contains("raw"), "only numeric fields are offered:\n{list}");
    // utime is first: move to position[0], pick it and position[1].
    tmux.keys(&["j", "Space", "j", "Space"]);
    tmux.wait_for_all(&[
        "[x] position[0]",
        "[x] position[1]",
        "plot: last 10 s",
        "POSE position[0]",
        "POSE position[1]",
    ]);
    // Two seconds of samples at the refresh rate: the lines have many points.
    std::thread::sleep(Duration::from_secs(2));
    let chart = tmux.wait_for_all(&["plot: last 10 s", "now"]);
    assert!(braille(&chart) > 40, "too few points drawn:\n{chart}");
    // The y axis spans both fields' values (-9.5 to 9.5 with a margin).
    let labels: Vec<f64> = chart
        .lines()
        .filter_map(|l| l.trim_start_matches(['│', ' ']).split([' ', '│', '┤']).next()?.parse().ok())
        .collect();
    let (lo, hi) = labels.iter().fold((f64::MAX, f64::MIN), |(a, b), &y| (a.min(y), b.max(y)));
    assert!(lo < -5.0 && hi > 5.0, "y labels {labels:?}:\n{chart}");
    // Back to the message: the chart stays; x clears it.
    tmux.keys(&["Escape"]);
    tmux.wait_for_all(&["position: double[3]", "plot: last 10 s"]);
    tmux.keys(&["+"]);
    tmux.wait_for_all(&["plot: last 20 s"]);
    tmux.keys(&["x"]);
    let cleared = tmux.wait_for_all(&["position: double[3]"]);
    assert!(!cleared.contains("plot: last"), "{cleared}");
    stop.store(true, Ordering::Release);
    publisher.join().unwrap();
}
