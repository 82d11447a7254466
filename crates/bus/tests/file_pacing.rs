//! The `file://` provider's pacing, timed by the wall clock: at `speed=1` the deliveries are as far apart as the
//! log's events, at `speed=2` half as far, and at `speed=0` the whole log arrives at once, far faster than the time
//! it spans. (`recv_utime` is computed from the log itself, so it cannot show pacing; this measures when each message
//! reaches a subscriber.) Each delivery is timed from the first: playback keeps an absolute schedule, so a delivery
//! made late by a loaded host shortens the gap after it, and only the time since the first shows the pacing. Bounds
//! are loose: an event 200 ms into the log must come at least 150 ms after the first.
//!
//! Also: a dispatcher started after the first event was played still gets the whole log (`nerve log`'s order), and
//! [`Playback::log_utime`] gives back the log's own times for the wall-clock `recv_utime`s playback stamps.

use std::path::Path;
use std::time::{Duration, Instant};

use std::sync::{Arc, Mutex};

use nerve_bus::provider::file::{FileProvider, Playback};
use nerve_bus::{Bus, Overflow, Url};
use nerve_log::LogWriter;

/// Writes a log of one small event at each offset (in ms) from an arbitrary first timestamp.
fn write_log(path: &Path, offsets_ms: &[i64]) {
    let mut w = LogWriter::create(path, true).unwrap();
    for (i, ms) in offsets_ms.iter().enumerate() {
        w.write_event(1_700_000_000_000_000 + ms * 1000, "PACE", &[i as u8]).unwrap();
    }
    w.flush().unwrap();
}

/// Plays `log` through `file://...?speed=S` to a subscriber; returns when each event arrived, measured from just
/// before the subscription that starts the playback.
fn arrivals(log: &Path, speed: &str, events: usize) -> Vec<Duration> {
    let bus = Bus::new(Some(&format!("file://{}?speed={speed}", log.display()))).unwrap();
    let t0 = Instant::now();
    let sub = bus.subscriber("PACE", 64, Overflow::DropNewest).unwrap();
    let mut at = Vec::new();
    for i in 0..events {
        let m =
            sub.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|| panic!("speed {speed}: event {i} never came"));
        at.push(t0.elapsed());
        assert_eq!(m.data, [i as u8], "speed {speed}: in log order");
    }
    at
}

/// Asserts that event `k` came no earlier than `k * step` after the first, less `slack`.
fn assert_paced(speed: &str, at: &[Duration], step: Duration, slack: Duration) {
    for k in 1..at.len() {
        let (since_first, due) = (at[k] - at[0], step * k as u32);
        assert!(
            since_first + slack >= due,
            "speed {speed}: event {k} came {since_first:?} after the first ({due:?} due); {at:?}"
        );
    }
}

#[test]
fn deliveries_keep_the_logs_gaps_scaled_by_speed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("pace.lcmlog");
    write_log(&log, &[0, 200, 400, 600]);

    let at = arrivals(&log, "1", 4);
    assert_paced("1", &at, Duration::from_millis(200), Duration::from_millis(50));

    // Twice as fast: half the log's gaps, and all of them well under the 600 ms they take at speed 1.
    let at = arrivals(&log, "2", 4);
    assert_paced("2", &at, Duration::from_millis(100), Duration::from_millis(25));
    let span = at[3] - at[0];
    assert!(span < Duration::from_millis(500), "speed 2: 600 ms of log took {span:?} (300 ms due); {at:?}");
}

#[test]
fn speed_0_delivers_the_whole_log_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("burst.lcmlog");
    // Ten seconds of log in five events.
    write_log(&log, &[0, 2500, 5000, 7500, 10_000]);
    let at = arrivals(&log, "0", 5);
    assert!(at[4] < Duration::from_secs(2), "speed 0: a 10 s log took {:?} to arrive; {at:?}", at[4]);
}

/// A bus playing `url`, and its playback handle.
fn playing(url: &str) -> (Bus, Playback) {
    let parsed = Url::parse(url).unwrap();
    let (file, _) = FileProvider::open(url, &parsed.network, &parsed.options).unwrap();
    let playback = file.playback();
    (Bus::with_provider(Box::new(file)), playback)
}

#[test]
fn a_dispatcher_started_after_the_first_event_still_gets_the_whole_log() {
    // `nerve log --url file://LOG` subscribes (which starts playback), then starts its dispatcher: when the first
    // event came before the dispatcher, playback used to wait for that event to be taken forever, and the log
    // recorded nothing. The gap between the two is made certain here.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("late.lcmlog");
    write_log(&log, &[0, 1, 2, 3, 4]);
    let (bus, playback) = playing(&format!("file://{}?speed=0", log.display()));
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = Arc::clone(&got);
    let _sub = bus
        .subscribe_with("PACE", 0, Overflow::DropNewest, move |m| {
            g.lock().unwrap().push(m.data[0]);
            Ok(())
        })
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while playback.delivered() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(playback.delivered(), 1, "the first event is played before anyone dispatches");
    let _dispatcher = bus.spawn_dispatcher().unwrap();
    while got.lock().unwrap().len() < 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(*got.lock().unwrap(), [0, 1, 2, 3, 4]);
}

#[test]
fn playback_maps_its_wall_clock_stamps_back_to_the_logs_times() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("times.lcmlog");
    let offsets = [0, 10, 25, 40];
    write_log(&log, &offsets);
    for speed in ["1", "4", "0"] {
        let (bus, playback) = playing(&format!("file://{}?speed={speed}", log.display()));
        assert_eq!(playback.log_utime(0), None, "nothing played yet");
        let sub = bus.subscriber("PACE", 64, Overflow::DropNewest).unwrap();
        for (i, ms) in offsets.iter().enumerate() {
            let m = sub.recv_timeout(Duration::from_secs(10)).unwrap();
            let logged = 1_700_000_000_000_000 + ms * 1000;
            assert!((m.recv_utime - logged).abs() > 1_000_000, "recv_utime is wall time, not the log's");
            let mapped = playback.log_utime(m.recv_utime).unwrap();
            if speed == "0" {
                // No schedule: the newest event played, which is this one or a later one.
                assert!(mapped >= logged, "speed 0, event {i}: {mapped} before {logged}");
            } else {
                let slack = speed.parse::<i64>().unwrap();
                assert!((mapped - logged).abs() <= slack, "speed {speed}, event {i}: {mapped} for {logged}");
            }
        }
    }
}
