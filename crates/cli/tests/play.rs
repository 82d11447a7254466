//! `nerve play` end to end over udpm: a subscriber on its own socket receives every event played, in log order, with
//! the batched publication at `--speed 0` (full batches, an event too big for a batch, fragmented events inside one),
//! with `--channel` and `--remap`, at a speed above 0, and again and again with `--loop`; and the pacing, timed by the
//! wall clock where each message arrives: the log's gaps at `--speed 1`, half of them at 2, all at once at 0.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Guard, TestDir};
use nerve_bus::{Bus, Overflow, Subscriber};

/// A URL of this test process's own: group 239.255.76.86, a port from its PID; `slot` keeps the tests apart.
fn url(slot: u32) -> String {
    format!("udpm://239.255.76.86:{}?ttl=0&recv_buf_size=16777216", 29_000 + (std::process::id() % 500) * 4 + slot)
}

/// Event `i`'s channel and payload: its number first, then a size that now and then needs fragments or is bigger
/// than a batch.
fn event(i: usize) -> (String, Vec<u8>) {
    let channel = ["PA", "PB", "SKIP"][i % 3].to_owned();
    let len = match i {
        400 => 300_000,
        700 => 70_000,
        _ => 8 + i % 50,
    };
    let mut data = vec![(i % 251) as u8; len];
    data[..4].copy_from_slice(&(i as u32).to_be_bytes());
    (channel, data)
}

const EVENTS: usize = 1200;

/// Writes a log of `EVENTS` events, 1 ms apart.
fn write_log(path: &Path) {
    let mut b = Vec::new();
    for i in 0..EVENTS {
        let (channel, data) = event(i);
        b.extend_from_slice(&0xEDA1_DA01u32.to_be_bytes());
        b.extend_from_slice(&(i as i64).to_be_bytes());
        b.extend_from_slice(&(1_700_000_000_000_000i64 + i as i64 * 1000).to_be_bytes());
        b.extend_from_slice(&(channel.len() as i32).to_be_bytes());
        b.extend_from_slice(&(data.len() as i32).to_be_bytes());
        b.extend_from_slice(channel.as_bytes());
        b.extend_from_slice(&data);
    }
    std::fs::write(path, b).unwrap();
}

/// What a subscriber should see from one pass with `--channel 'P.*' --remap PA=RA`.
fn expected_pass() -> Vec<(String, Vec<u8>)> {
    (0..EVENTS)
        .map(event)
        .filter(|(c, _)| c != "SKIP")
        .map(|(c, d)| (if c == "PA" { "RA".to_owned() } else { c }, d))
        .collect()
}

/// Takes messages until `n` have come or none for 5 s.
fn take(sub: &Subscriber, n: usize) -> Vec<(String, Vec<u8>)> {
    let mut got = Vec::new();
    while got.len() < n {
        match sub.recv_timeout(Duration::from_secs(5)) {
            Some(m) => got.push((m.channel.clone(), m.data.clone())),
            None => break,
        }
    }
    got
}

fn play(url: &str, log: &Path, speed: &str, extra: &[&str]) -> std::process::Command {
    let mut c = common::nerve();
    c.args(["play", "-q", "--speed", speed, "--channel", "P.*", "--remap", "PA=RA", "--url", url]).args(extra).arg(log);
    c
}

fn check(got: &[(String, Vec<u8>)], expected: &[(String, Vec<u8>)]) {
    assert_eq!(got.len(), expected.len(), "every event played arrives");
    for (k, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(g == e, "message {k}: got {} ({} bytes), expected {} ({} bytes)", g.0, g.1.len(), e.0, e.1.len());
    }
}

#[test]
fn every_event_arrives_in_log_order_at_speed_0_and_above() {
    let dir = TestDir::new("play", "order");
    let log = dir.path().join("events.lcmlog");
    write_log(&log);
    let expected = expected_pass();
    for (slot, speed) in [(0, "0"), (1, "20")] {
        let url = url(slot);
        let bus = Bus::new(Some(&url)).unwrap();
        let sub = bus.subscriber(".*", 4 * EVENTS, Overflow::DropOldest).unwrap();
        let out = play(&url, &log, speed, &[]).output().unwrap();
        assert!(out.status.success(), "speed {speed}: {}", common::text(&out.stderr));
        check(&take(&sub, expected.len()), &expected);
        assert!(sub.try_recv().is_none(), "speed {speed}: nothing more");
    }
}

#[test]
fn loop_plays_the_log_again_in_the_same_order() {
    let dir = TestDir::new("play", "loop");
    let log = dir.path().join("events.lcmlog");
    write_log(&log);
    let url = url(2);
    let bus = Bus::new(Some(&url)).unwrap();
    // The player does not stop: a full queue keeps what came first.
    let sub = bus.subscriber(".*", 2 * EVENTS, Overflow::DropNewest).unwrap();
    let child =
        Guard(Some(play(&url, &log, "0", &["--loop"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()));
    let one = expected_pass();
    let end = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while got.len() < 2 * one.len() && Instant::now() < end {
        got.extend(take(&sub, 2 * one.len() - got.len()));
    }
    drop(child);
    check(&got[..one.len().min(got.len())], &one);
    check(&got[one.len().min(got.len())..], &one);
}

/// Writes a log of one small `PA` event at each offset (in ms) from an arbitrary first timestamp.
fn write_paced_log(path: &Path, offsets_ms: &[i64]) {
    let mut w = nerve_log::LogWriter::create(path, true).unwrap();
    for (i, ms) in offsets_ms.iter().enumerate() {
        w.write_event(1_700_000_000_000_000 + ms * 1000, "PA", &[i as u8]).unwrap();
    }
    w.flush().unwrap();
}

/// Plays `log` at `speed` to a subscriber on its own socket; returns when each of its `events` arrived, measured
/// from the start of the player.
fn paced_arrivals(log: &Path, speed: &str, events: usize) -> Vec<Duration> {
    let url = url(3);
    let bus = Bus::new(Some(&url)).unwrap();
    let sub = bus.subscriber(".*", 64, Overflow::DropNewest).unwrap();
    let t0 = Instant::now();
    let mut child = Guard(Some(play(&url, log, speed, &[]).stdout(Stdio::null()).spawn().unwrap()));
    let mut at = Vec::new();
    for i in 0..events {
        let m =
            sub.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|| panic!("speed {speed}: event {i} never came"));
        at.push(t0.elapsed());
        assert_eq!((m.channel.as_str(), &m.data[..]), ("RA", &[i as u8][..]), "speed {speed}: in log order");
    }
    let status = child.0.take().unwrap().wait().unwrap();
    assert!(status.success(), "speed {speed}: nerve play {status}");
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

/// Each delivery is timed from the first: both players keep an absolute schedule, so a delivery made late by a
/// loaded host shortens the gap after it, and only the time since the first shows the pacing. Bounds are loose (an
/// event 200 ms into the log must come at least 150 ms after the first), and still fail a player that does not
/// wait, or waits at the wrong speed.
#[test]
fn play_keeps_the_logs_gaps_scaled_by_speed_and_plays_at_once_at_speed_0() {
    let dir = TestDir::new("play", "pace");
    let log = dir.path().join("pace.lcmlog");
    write_paced_log(&log, &[0, 200, 400, 600]);

    let at = paced_arrivals(&log, "1", 4);
    assert_paced("1", &at, Duration::from_millis(200), Duration::from_millis(50));

    // Twice as fast: half the log's gaps, and all of them well under the 600 ms they take at speed 1.
    let at = paced_arrivals(&log, "2", 4);
    assert_paced("2", &at, Duration::from_millis(100), Duration::from_millis(25));
    let span = at[3] - at[0];
    assert!(span < Duration::from_millis(500), "speed 2: 600 ms of log took {span:?} (300 ms due); {at:?}");

    // As fast as possible: ten seconds of log arrive, player start included, in a fraction of that.
    let burst = dir.path().join("burst.lcmlog");
    write_paced_log(&burst, &[0, 2500, 5000, 7500, 10_000]);
    let at = paced_arrivals(&burst, "0", 5);
    assert!(at[4] < Duration::from_millis(2500), "speed 0: a 10 s log took {:?} to arrive; {at:?}", at[4]);
}
