//! The log suite's player rows: a log of small messages played as fast as possible by `nerve play` (to `memq://`
//! and to udpm) and by the real `lcm-logplayer`, first with nothing listening on the port, then with the real
//! `lcm-logger` and with `nerve log` recording, which say how many of the messages a real subscriber received.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use super::{base_port, count_events, median, sigint, timed, wait_bounded, write_log, Out, Tools, GROUP};

/// The channel of the played messages.
const CHANNEL: &str = "PLAY";

/// The loggers that listen in the last rows.
const LISTENERS: [&str; 2] = ["lcm-logger", "nerve log"];

/// Plays `file` (of `n` events) with `cmd` while `listener` (one of [`LISTENERS`]) records `url`; the player's
/// messages per second and how many events on [`CHANNEL`] the logger recorded.
fn with_listener(
    t: &Tools,
    dir: &Path,
    listener: &str,
    url: &str,
    n: u64,
    mut cmd: Command,
) -> Result<(f64, u64), String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = dir.join("listened.lcmlog");
    let _ = std::fs::remove_file(&out);
    let mut logger = if listener == "nerve log" {
        let mut c = Command::new(t.nerve.as_ref().map_err(|e| e.clone())?);
        c.args(["log", "-q", "-f", "--url", url]);
        c
    } else {
        let mut c = Command::new(t.lcm_logger.as_ref().map_err(|e| e.clone())?);
        c.args(["-q", "-f", &format!("--lcm-url={url}")]);
        c
    };
    let mut child = logger
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting {listener}: {e}"))?;
    std::thread::sleep(Duration::from_millis(1000));
    let played = timed(&mut cmd);
    // lcm-logger writes an event only when a later one arrives: a few tail messages on another channel.
    let tail = Command::new(&me).args(["log-source", url, "0", "0"]).output();
    std::thread::sleep(Duration::from_millis(300));
    sigint(child.id());
    let stopped = wait_bounded(&mut child, Duration::from_secs(30));
    let secs = played?;
    tail.map_err(|e| format!("tail messages: {e}"))?;
    stopped.map_err(|e| format!("{listener} {e}"))?;
    let recorded = count_events(&out, CHANNEL)?;
    let _ = std::fs::remove_file(&out);
    Ok((n as f64 / secs, recorded))
}

/// A row: its name, messages per second and how many the listener received (if one did), the peer's rate.
type Row = (String, Result<(f64, Option<u64>), String>, Option<f64>);

pub(super) fn rows(out: &Out, t: &Tools, dir: &Path, quick: bool) {
    let n: u64 = if quick { 300_000 } else { 3_000_000 };
    let reps = if quick { 1 } else { 3 };
    let file = dir.join("small.lcmlog");
    let made = write_log(
        &file,
        (0..n).map(|i| (1_700_000_000_000_000 + i as i64, CHANNEL.to_owned(), i.to_be_bytes().to_vec())),
    );
    out.text("");
    out.text(&format!(
        "player: {n} messages of 8 bytes at speed 0 (as fast as possible), wall time of the process; median of {reps}. \
         In the first rows nothing listens on the port: the kernel goes down the whole send path and loops each \
         datagram back, then drops it at the UDP layer (nerve play's segmented sends of up to 64 datagrams, UDP \
         GSO, are dropped whole there, which flatters them; gso=0: sendmmsg alone, one datagram per sendmsg); in the last rows a logger (the real lcm-logger, \
         then nerve log; recv_buf_size=2 MB, as the echo suite) records the port, every datagram is cut apart and \
         queued to it, and `received` is what it wrote to its log (one run each: how much of a burst at that rate a \
         real subscriber takes, its socket buffer's and its own queue's drops included)"
    ));
    if let Err(e) = made {
        return out.text(&format!("  unavailable: writing the log: {e}"));
    }
    out.text(&format!("{:<48} {:>12} {:>8} {:>16}", "player", "msgs/s", "vs lcm", "received"));
    let port = base_port() + 100;
    let udpm = format!("udpm://{GROUP}:{port}?ttl=0");
    let listened = format!("udpm://{GROUP}:{}?ttl=0&recv_buf_size=2097152", port + 1);
    let run = |mut c: Command| -> Result<f64, String> {
        let mut v = Vec::new();
        for _ in 0..reps {
            v.push(n as f64 / timed(&mut c)?);
        }
        Ok(median(v))
    };
    let nerve = |url: &str| -> Result<Command, String> {
        let nv = t.nerve.as_ref().map_err(|e| e.clone())?;
        let mut c = Command::new(nv);
        c.args(["play", "-q", "--speed", "0", "--url", url]).arg(&file);
        Ok(c)
    };
    let lcm_player = |url: &str| -> Result<Command, String> {
        let p = t.lcm_logplayer.as_ref().map_err(|e| e.clone())?;
        let mut c = Command::new(p);
        c.args(["-s", "0", "-l", url]).arg(&file);
        Ok(c)
    };
    let lcm = lcm_player(&udpm).and_then(run);
    let mut rows: Vec<Row> = vec![
        (
            "nerve play --url memq:// (no transport)".into(),
            nerve("memq://").and_then(run).map(|r| (r, None)),
            lcm.clone().ok(),
        ),
        (
            "nerve play --url udpm://, nothing listening".into(),
            nerve(&udpm).and_then(run).map(|r| (r, None)),
            lcm.clone().ok(),
        ),
        (
            "nerve play --url udpm://?gso=0, nothing listening".into(),
            nerve(&format!("{udpm}&gso=0")).and_then(run).map(|r| (r, None)),
            lcm.clone().ok(),
        ),
        ("lcm-logplayer -s 0 -l udpm://, nothing listening".into(), lcm.clone().map(|r| (r, None)), lcm.clone().ok()),
    ];
    for listener in LISTENERS {
        let lcm_listened = lcm_player(&listened).and_then(|c| with_listener(t, dir, listener, &listened, n, c));
        let nerve_listened = nerve(&listened).and_then(|c| with_listener(t, dir, listener, &listened, n, c));
        let peer = lcm_listened.as_ref().ok().map(|l| l.0);
        rows.push((
            format!("nerve play --url udpm://, {listener} listening"),
            nerve_listened.map(|(r, g)| (r, Some(g))),
            peer,
        ));
        rows.push((format!("lcm-logplayer -s 0, {listener} listening"), lcm_listened.map(|(r, g)| (r, Some(g))), peer));
    }
    for (name, r, peer) in rows {
        match r {
            Ok((rate, received)) => {
                let ratio = peer.map(|l| format!("{:.2}x", rate / l)).unwrap_or_else(|| "-".into());
                let got = received.map_or("-".into(), |g| format!("{g} ({:.1}%)", 100.0 * g as f64 / n as f64));
                out.row(
                    format!("{name:<48} {rate:>12.0} {ratio:>8} {got:>16}"),
                    json!({"suite": "log", "figure": "player", "system": name, "msgs_per_s": rate, "messages": n,
                           "listener": received.map(|_| name.split(", ").nth(1).unwrap_or("").trim_end_matches(" listening")),
                           "received": received,
                           "vs_lcm_logplayer": peer.map(|l| rate / l)}),
                );
            }
            Err(e) => out.text(&format!("{name:<48} unavailable: {e}")),
        }
    }
    let _ = std::fs::remove_file(&file);
}
