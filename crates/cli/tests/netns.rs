//! Three hosts as network namespaces joined by veth links, made and removed by the test (root only; skipped with a
//! notice otherwise): a robot (this test's shm publisher at 1 kHz and a 30 Hz camera, `nerve bridge` between its
//! shm channels and Zenoh), a router (`nerve` as a Zenoh router), an operator (`nerve sub` over Zenoh, and commands
//! published back to the robot's shm). During the run the bridge is killed and restarted, the router restarted, the
//! robot's link taken down and up, and junk sent to the Zenoh port; after each, traffic resumes within
//! [`RESUME_WITHIN`], no malformed message reaches the operator, and the robot's shm reader holds the newest command.
//! Addresses are private to the namespaces; nothing leaves the machine.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{nerve, Guard, TestDir};
use nerve_bus::Bus;

/// How soon traffic must flow again after each fault. Zenoh clients retry a lost router with a back-off of up to
/// 4 s (its default), and a restarted process needs its session: 15 s bounds both with room for a loaded machine.
const RESUME_WITHIN: Duration = Duration::from_secs(15);

/// The fingerprint our test messages carry, and their layout: fingerprint, sequence number (big-endian), padding.
const FINGERPRINT: u64 = 0x4E45_5256_4550_4F53;
const CAMERA_BYTES: usize = 20_000;
/// The robot's udpm bus, inside its namespace only.
const ROBOT_UDPM: &str = "udpm://239.255.77.1:7700?ttl=0";

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// The namespaces and links; removed (with whatever runs in them, by PID) when dropped.
struct Hosts {
    names: Vec<String>,
}

impl Hosts {
    fn robot(&self) -> &str {
        &self.names[0]
    }
    fn router(&self) -> &str {
        &self.names[1]
    }
    fn operator(&self) -> &str {
        &self.names[2]
    }

    /// robot 10.77.1.1 -- 10.77.1.2 router 10.77.2.2 -- 10.77.2.1 operator, or `None` without root.
    fn make() -> Option<Hosts> {
        let tag = std::process::id() % 100_000;
        let names: Vec<String> = ["rb", "rt", "op"].iter().map(|n| format!("nz{n}{tag}")).collect();
        let hosts = Hosts { names };
        for n in &hosts.names {
            if !ip(&["netns", "add", n]) {
                return None;
            }
            assert!(ip(&["-n", n, "link", "set", "lo", "up"]));
        }
        // The robot's own LAN bus: udpm on loopback (TTL 0) inside its namespace.
        assert!(ip(&["-n", &hosts.names[0], "link", "set", "lo", "multicast", "on"]));
        assert!(ip(&["-n", &hosts.names[0], "route", "add", "239.0.0.0/8", "dev", "lo"]));
        let (rb, rt, op) = (hosts.robot(), hosts.router(), hosts.operator());
        let (a, b, c, d) = (format!("za{tag}"), format!("zb{tag}"), format!("zc{tag}"), format!("zd{tag}"));
        assert!(ip(&["link", "add", &a, "netns", rb, "type", "veth", "peer", "name", &b, "netns", rt]));
        assert!(ip(&["link", "add", &c, "netns", op, "type", "veth", "peer", "name", &d, "netns", rt]));
        for (ns, dev, addr) in
            [(rb, &a, "10.77.1.1/24"), (rt, &b, "10.77.1.2/24"), (op, &c, "10.77.2.1/24"), (rt, &d, "10.77.2.2/24")]
        {
            assert!(ip(&["-n", ns, "addr", "add", addr, "dev", dev]));
            assert!(ip(&["-n", ns, "link", "set", dev, "up"]));
        }
        Some(hosts)
    }

    /// Starts `nerve ARGS` in namespace `ns` (`ip netns exec` execs it, so the guard's PID is nerve's).
    fn spawn(&self, ns: &str, args: &[&str], stdout: bool) -> Guard {
        let exe = nerve().get_program().to_owned();
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(exe)
            .args(args)
            .stdout(if stdout { Stdio::piped() } else { Stdio::null() })
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        Guard(Some(child))
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for n in &self.names {
            // Removing a namespace removes the veth ends in it.
            let _ = ip(&["netns", "del", n]);
        }
    }
}

fn message(seq: u64, len: usize) -> Vec<u8> {
    let mut m = FINGERPRINT.to_be_bytes().to_vec();
    m.extend_from_slice(&seq.to_be_bytes());
    m.resize(len.max(16), 0x5A);
    m
}

fn hex_to_bytes(h: &str) -> Option<Vec<u8>> {
    (0..h.len()).step_by(2).map(|i| h.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok())).collect()
}

#[test]
fn robot_router_operator_survive_restarts_link_loss_and_junk() {
    let Some(hosts) = Hosts::make() else {
        eprintln!("netns test skipped: making network namespaces needs root and iproute2");
        return;
    };
    let shm = TestDir::new("netns", "robot");
    let robot_url = format!("shm://?dir={}&frames=64&frame_size=65536", shm.s());
    let router_args = ["sub", "NONE", "--url", "zenoh://?mode=router&scouting=off&listen=tcp/0.0.0.0:7447"];
    let mut router = hosts.spawn(hosts.router(), &router_args, false);
    std::thread::sleep(Duration::from_millis(800));
    let robot_zenoh = "zenoh://tcp/10.77.1.2:7447?mode=client";
    // Two routes: the robot's shm channels both ways, and its udpm LAN bus towards the operator.
    let routes = shm.path().join("routes.json");
    let config = serde_json::json!({"routes": [
        {"from": robot_url, "to": robot_zenoh, "channel": "POSE|CAMERA|CMD", "both_ways": true},
        {"from": ROBOT_UDPM, "to": robot_zenoh, "channel": "POSE|CAMERA"},
    ]});
    std::fs::write(&routes, config.to_string()).unwrap();
    let routes = routes.display().to_string();
    let bridge_args = ["bridge", "--config", &routes, "--interval", "60"];
    let mut bridge = hosts.spawn(hosts.robot(), &bridge_args, false);

    // The robot's publishers: this process writes the shm channels directly (shm is files, not network).
    let stop = Arc::new(AtomicBool::new(false));
    let robot = Arc::new(Bus::new(Some(&robot_url)).unwrap());
    let pose_seq = Arc::new(AtomicU64::new(0));
    let publisher = {
        let (robot, stop, seq) = (Arc::clone(&robot), Arc::clone(&stop), Arc::clone(&pose_seq));
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                robot.publish_raw("POSE", &message(n, 64)).unwrap();
                seq.store(n, Ordering::Relaxed);
                if n.is_multiple_of(33) {
                    robot.publish_raw("CAMERA", &message(n, CAMERA_BYTES)).unwrap();
                }
                // 1 kHz on an absolute schedule.
                let next = start + Duration::from_millis(n);
                if let Some(wait) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
        })
    };
    // The robot's command reader: the newest CMD in its shm channel.
    let newest_cmd = Arc::new(AtomicU64::new(0));
    let cmd_sub = {
        let newest = Arc::clone(&newest_cmd);
        robot
            .subscribe_raw("CMD", move |m| {
                if m.data.len() == 16 && m.data[..8] == FINGERPRINT.to_be_bytes() {
                    newest.store(u64::from_be_bytes(m.data[8..16].try_into().unwrap()), Ordering::Relaxed);
                }
            })
            .unwrap()
    };
    let _robot_dispatch = robot.spawn_dispatcher().unwrap();

    // The operator: a Zenoh subscriber printing JSON lines, read here.
    let op_url = "zenoh://tcp/10.77.2.2:7447?mode=client";
    let mut op = hosts.spawn(hosts.operator(), &["sub", "POSE|CAMERA", "--json", "--url", op_url], true);
    let last_pose = Arc::new(AtomicU64::new(0));
    let malformed = Arc::new(Mutex::new(Vec::<String>::new()));
    let cameras = Arc::new(AtomicU64::new(0));
    let reader = {
        let (last, bad, cams) = (Arc::clone(&last_pose), Arc::clone(&malformed), Arc::clone(&cameras));
        let out = op.0.as_mut().unwrap().stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let v: serde_json::Value = match serde_json::from_str(&line) {
                    Ok(v) => v,
                    Err(_) => {
                        bad.lock().unwrap().push(line);
                        continue;
                    }
                };
                let data = v["data_hex"].as_str().and_then(hex_to_bytes).unwrap_or_default();
                let want = if v["channel"] == "CAMERA" { CAMERA_BYTES } else { 64 };
                if data.len() != want || data[..8] != FINGERPRINT.to_be_bytes() {
                    bad.lock().unwrap().push(line);
                    continue;
                }
                let seq = u64::from_be_bytes(data[8..16].try_into().unwrap());
                if v["channel"] == "CAMERA" {
                    cams.fetch_add(1, Ordering::Relaxed);
                } else {
                    last.fetch_max(seq, Ordering::Relaxed);
                }
            }
        })
    };

    // The operator's commands, numbered; each `nerve pub` is a short Zenoh client session.
    let cmd_seq = AtomicU64::new(0);
    let send_command = || {
        let n = cmd_seq.fetch_add(1, Ordering::Relaxed) + 1;
        let hex: String = message(n, 16).iter().map(|b| format!("{b:02x}")).collect();
        let mut g = hosts.spawn(hosts.operator(), &["pub", "CMD", "--hex", &hex, "--url", op_url], false);
        let _ = g.0.as_mut().unwrap().wait();
        n
    };

    // Waits until the operator sees poses published after now, and the robot holds a command sent after now.
    let resumes = |what: &str| -> Duration {
        let t0 = Instant::now();
        let from = pose_seq.load(Ordering::Relaxed);
        let mut cmd = 0;
        let mut sent = Instant::now();
        while last_pose.load(Ordering::Relaxed) <= from || newest_cmd.load(Ordering::Relaxed) < cmd.max(1) {
            assert!(
                t0.elapsed() < RESUME_WITHIN,
                "{what}: traffic did not resume within {RESUME_WITHIN:?} (operator's newest pose {} of >{from}, robot's \
                 command {} of {cmd})",
                last_pose.load(Ordering::Relaxed),
                newest_cmd.load(Ordering::Relaxed)
            );
            // A new command when the last one arrived, or a second after it was sent (it may have gone out before
            // the path back to the robot was up again: best effort, newest wins).
            if newest_cmd.load(Ordering::Relaxed) >= cmd || sent.elapsed() > Duration::from_secs(1) {
                cmd = send_command();
                sent = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let took = t0.elapsed();
        eprintln!("{what}: traffic resumed in {took:?}");
        took
    };

    resumes("start");
    // The bridge killed mid-stream and restarted.
    drop(bridge);
    std::thread::sleep(Duration::from_millis(500));
    bridge = hosts.spawn(hosts.robot(), &bridge_args, false);
    resumes("bridge restart");
    // The router restarted: clients reconnect by themselves.
    drop(router);
    std::thread::sleep(Duration::from_millis(500));
    router = hosts.spawn(hosts.router(), &router_args, false);
    resumes("router restart");
    // The robot's link down for two seconds, then up.
    let link = format!("za{}", std::process::id() % 100_000);
    assert!(ip(&["-n", hosts.robot(), "link", "set", &link, "down"]));
    std::thread::sleep(Duration::from_secs(2));
    assert!(ip(&["-n", hosts.robot(), "link", "set", &link, "up"]));
    resumes("link down/up");
    // Junk datagrams to the robot's udpm group, from inside the robot: random bytes, LCM headers cut short.
    let junk = Command::new("ip")
        .args(["netns", "exec", hosts.robot(), "python3", "-c"])
        .arg(
            "import socket,os\n\
             u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
             u.setsockopt(socket.IPPROTO_IP,socket.IP_MULTICAST_TTL,0)\n\
             for i in range(500):\n\
             \x20 u.sendto(os.urandom(1+i*7%1400),('239.255.77.1',7700))\n\
             for i in range(200):\n\
             \x20 u.sendto(b'LC02'+os.urandom(4)+b'POSE',('239.255.77.1',7700))\n\
             \x20 u.sendto(b'LC03'+os.urandom(i%30),('239.255.77.1',7700))\n",
        )
        .status()
        .unwrap();
    assert!(junk.success());
    resumes("junk to the robot's udpm group");
    // Junk to the Zenoh port (TCP and UDP) from the operator's host.
    let junk = Command::new("ip")
        .args(["netns", "exec", hosts.operator(), "python3", "-c"])
        .arg(
            "import socket,os\n\
             for i in range(50):\n\
             \x20 s=socket.socket(); s.settimeout(1)\n\
             \x20 try:\n\
             \x20   s.connect(('10.77.2.2',7447)); s.sendall(os.urandom(64+i*37))\n\
             \x20 except OSError: pass\n\
             \x20 s.close()\n\
             \x20 u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); u.sendto(os.urandom(200),('10.77.2.2',7447)); u.close()\n",
        )
        .status()
        .unwrap();
    assert!(junk.success());
    resumes("junk to the Zenoh port");

    // The newest command wins on the robot: after the last one sent, the reader holds exactly it.
    let last_cmd = send_command();
    let t0 = Instant::now();
    while newest_cmd.load(Ordering::Relaxed) != last_cmd {
        assert!(
            t0.elapsed() < RESUME_WITHIN,
            "robot holds command {} not {last_cmd}",
            newest_cmd.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    stop.store(true, Ordering::Relaxed);
    publisher.join().unwrap();
    drop(cmd_sub);
    drop((bridge, router, op));
    reader.join().unwrap();
    let bad = malformed.lock().unwrap();
    assert!(bad.is_empty(), "{} malformed messages reached the operator, e.g. {:?}", bad.len(), bad.first());
    assert!(cameras.load(Ordering::Relaxed) > 0, "no camera frame reached the operator");
    let _ = std::io::stderr().flush();
    drop(hosts);
}
