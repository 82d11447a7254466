//! The fleet part of the zenoh suite: N robots, each a process in host B running Nerve's `zenoh://` provider as a
//! Zenoh client, publish a 64-byte pose at 1 kHz (`R<i>_POSE`) and a 100-KiB map tile at 10 Hz (`R<i>_MAP`)
//! through one Zenoh router (a process in host A: the session Nerve opens for `mode=router`) to one station (a Nerve
//! client in host A subscribed to everything). Per N: what the station got of what the robots sent, its p99
//! latency, the router's CPU (utime + stime from /proc/PID/stat over the measured window) and resident memory, and
//! the robots' own memory. The robots share host B's two vCPUs with each other, so at large N the robots' pacing
//! shows in "sent" (a robot more than 10 ms behind skips ahead rather than bursting).

use std::time::{Duration, Instant};

use serde_json::json;

use super::net::{cpu_ticks_and_rss, ticks_per_second, Hosts, Proc, ADDR_A};
use super::{me, role_args, Out, SUITE};

const POSE: usize = 64;
const MAP: usize = 100 * 1024;

struct Fleet {
    n: usize,
    sent: [u64; 2],
    received: [u64; 2],
    p99_ms: [Option<f64>; 2],
    router_cpu_pct: f64,
    router_rss_kib: u64,
    router_idle_rss_kib: u64,
    robot_rss_kib: u64,
    skipped: u64,
    /// Messages the station's own subscription queue (the bus's, LCM's 30, oldest dropped) dropped.
    station_queue_drops: u64,
    seconds: f64,
}

fn measure(hosts: &Hosts, n: usize, port: u16, warm_ms: u64, run_ms: u64) -> Result<Fleet, String> {
    let exe = me()?;
    let router_url = format!("zenoh://?mode=router&scouting=off&listen=tcp/{ADDR_A}:{port}");
    let client_url = format!("zenoh://tcp/{ADDR_A}:{port}?mode=client&scouting=off");
    let mut router = Proc::spawn(&hosts.a, &exe, &role_args(&["router", &router_url]), "router", false)?;
    router.ready(Duration::from_secs(15))?;
    let mut station = Proc::spawn(&hosts.a, &exe, &role_args(&["sub", "bus", &client_url]), "station", false)?;
    station.ready(Duration::from_secs(15))?;
    std::thread::sleep(Duration::from_millis(200));
    let (_, router_idle_rss_kib) = cpu_ticks_and_rss(router.pid()).ok_or("router's /proc entry")?;
    let (warm, run) = (warm_ms.to_string(), run_ms.to_string());
    let mut robots = Vec::with_capacity(n);
    for i in 0..n {
        let pose = format!("R{i}_POSE:{POSE}:1000");
        let map = format!("R{i}_MAP:{MAP}:10");
        let args = role_args(&["pub", "bus", &client_url, &warm, &run, &pose, &map]);
        robots.push(Proc::spawn(&hosts.b, &exe, &args, &format!("robot {i}"), false)?);
    }
    // The measured window starts once the last robot is through its warm-up.
    let spawned = Instant::now();
    std::thread::sleep(Duration::from_millis(warm_ms));
    let (cpu0, _) = cpu_ticks_and_rss(router.pid()).ok_or("router's /proc entry")?;
    let t0 = Instant::now();
    let mut sent = [0u64; 2];
    let (mut robot_rss, mut skipped) = (0u64, 0u64);
    let deadline = Duration::from_millis(warm_ms + run_ms + 20_000);
    let mut router_end = None;
    for (i, r) in robots.iter_mut().enumerate() {
        let v = r.line(deadline.saturating_sub(spawned.elapsed()).max(Duration::from_millis(100)))?;
        if router_end.is_none() {
            // The first robot done: the router's figures before the robots' sessions close.
            router_end = Some((cpu_ticks_and_rss(router.pid()).ok_or("router's /proc entry")?, t0.elapsed()));
        }
        sent[0] += v["sent"][format!("R{i}_POSE")].as_u64().unwrap_or(0);
        sent[1] += v["sent"][format!("R{i}_MAP")].as_u64().unwrap_or(0);
        robot_rss += v["rss_kib"].as_u64().unwrap_or(0);
        skipped += v["skipped"].as_u64().unwrap_or(0);
    }
    let ((cpu1, router_rss_kib), window) = router_end.ok_or("no robot")?;
    std::thread::sleep(Duration::from_millis(500));
    let got = station.finish(Duration::from_secs(15))?;
    drop(robots);
    let class = |c: &str| (got["classes"][c]["received"].as_u64().unwrap_or(0), got["classes"][c]["p99_us"].as_f64());
    let ((pose_got, pose_p99), (map_got, map_p99)) = (class("POSE"), class("MAP"));
    let window = window.as_secs_f64().max(1e-3);
    Ok(Fleet {
        n,
        sent,
        received: [pose_got, map_got],
        p99_ms: [pose_p99.map(|u| u / 1e3), map_p99.map(|u| u / 1e3)],
        router_cpu_pct: (cpu1.saturating_sub(cpu0)) as f64 / ticks_per_second() / window * 100.0,
        router_rss_kib,
        router_idle_rss_kib,
        robot_rss_kib: robot_rss / n.max(1) as u64,
        skipped,
        station_queue_drops: got["queue_overflow"].as_u64().unwrap_or(0),
        seconds: run_ms as f64 / 1e3,
    })
}

fn r2(v: Option<f64>) -> Option<f64> {
    v.map(|v| (v * 100.0).round() / 100.0)
}

/// Runs the fleet for each N and prints the table.
pub fn run(out: &Out, hosts: &Hosts, quick: bool) {
    let (ns, warm_ms, run_ms): (&[usize], u64, u64) =
        if quick { (&[1, 5], 1500, 1500) } else { (&[1, 5, 10, 25, 50], 3000, 5000) };
    out.text("");
    out.text(&format!(
        "fleet: N robots (processes in host B, nerve zenoh:// clients) -> one Zenoh router (a process in host A, \
         tcp/{ADDR_A}) -> one station (host A, nerve zenoh:// client, subscribed to everything); each robot a {POSE} B \
         pose at 1 kHz and a {} KiB map tile at 10 Hz; {warm_ms} ms warm-up, {run_ms} ms measured per N. \
         CPU is % of one core over the measured window; host B's robots share the same 2 vCPUs",
        MAP / 1024
    ));
    out.text(&format!(
        "  {:>3} {:>9} {:>9} {:>7} {:>9} {:>7} {:>7} {:>7} {:>9} {:>10} {:>11} {:>10} {:>11} {:>10}",
        "N",
        "pose sent",
        "pose got",
        "pose %",
        "p99 ms",
        "map sent",
        "map got",
        "map %",
        "map p99",
        "router CPU",
        "CPU%/robot",
        "router MiB",
        "KiB/robot",
        "robot MiB"
    ));
    for (i, &n) in ns.iter().enumerate() {
        let r = measure(hosts, n, 7600 + i as u16, warm_ms, run_ms);
        match r {
            Ok(f) => {
                let pct = |g: u64, s: u64| if s > 0 { g as f64 * 100.0 / s as f64 } else { 0.0 };
                let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
                let per_robot_kib = f.router_rss_kib.saturating_sub(f.router_idle_rss_kib) as f64 / n as f64;
                out.text(&format!(
                    "  {n:>3} {:>9} {:>9} {:>6.1}% {:>9} {:>7} {:>7} {:>6.1}% {:>9} {:>9.1}% {:>10.2}% \
                     {:>10.1} {:>11.0} \
                     {:>10.1}",
                    f.sent[0],
                    f.received[0],
                    pct(f.received[0], f.sent[0]),
                    ms(f.p99_ms[0]),
                    f.sent[1],
                    f.received[1],
                    pct(f.received[1], f.sent[1]),
                    ms(f.p99_ms[1]),
                    f.router_cpu_pct,
                    f.router_cpu_pct / n as f64,
                    f.router_rss_kib as f64 / 1024.0,
                    per_robot_kib,
                    f.robot_rss_kib as f64 / 1024.0
                ));
                out.json(json!({"suite": SUITE, "kind": "fleet", "robots": f.n, "seconds": f.seconds,
                    "pose_sent": f.sent[0], "pose_received": f.received[0], "pose_p99_ms": r2(f.p99_ms[0]),
                    "map_sent": f.sent[1], "map_received": f.received[1], "map_p99_ms": r2(f.p99_ms[1]),
                    "pose_rate_sent": f.sent[0] as f64 / f.seconds,
                    "pose_rate_received": f.received[0] as f64 / f.seconds,
                    "router_cpu_pct": (f.router_cpu_pct * 10.0).round() / 10.0,
                    "router_rss_kib": f.router_rss_kib, "router_idle_rss_kib": f.router_idle_rss_kib,
                    "router_rss_per_robot_kib": per_robot_kib.round(), "robot_rss_kib": f.robot_rss_kib,
                    "robot_pose_skipped": f.skipped, "station_queue_drops": f.station_queue_drops}));
                if f.skipped > 0 || f.station_queue_drops > 0 {
                    out.text(&format!(
                        "      (robots fell behind their schedule and skipped {} sends; the station's subscription \
                         queue dropped {} messages, the rest of what is missing never reached the station)",
                        f.skipped, f.station_queue_drops
                    ));
                }
            }
            Err(e) => {
                out.text(&format!("  {n:>3} unavailable: {e}"));
                out.json(json!({"suite": SUITE, "kind": "fleet", "robots": n, "status": "unavailable", "reason": e}));
            }
        }
    }
}
