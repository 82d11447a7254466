//! The `file://` provider's pacing, timed by the wall clock: at `speed=1` the deliveries are as far apart as the
//! log's events, at `speed=2` half as far, and at `speed=0` the whole log arrives at once, far faster than the time
//! it spans. (`recv_utime` is computed from the log itself, so it cannot show pacing; this measures when each message
//! reaches a subscriber.) Each delivery is timed from the first: playback keeps an absolute schedule, so a delivery
//! made late by a loaded host shortens the gap after it, and only the time since the first shows the pacing. Bounds
//! are loose: an event 200 ms into the log must come at least 150 ms after the first.

use std::path::Path;
use std::time::{Duration, Instant};

use nerve_bus::{Bus, Overflow};
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
