//! The udpm transport against the real LCM 1.5.3 (from `.venv`, made by `scripts/setup`), both ways, on loopback
//! multicast with TTL 0: small messages, the exact fragmentation boundary, multi-fragment messages.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use nerve_udpm::{Config, Receiver, Sender};

fn venv_python() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(p.exists(), "{} missing: run scripts/setup", p.display());
    p
}

/// A port of its own per test, so parallel tests (and other runs on this host) never see each other's traffic.
fn config(offset: u16) -> Config {
    let port = 20000 + (std::process::id() % 20000) as u16 + offset;
    let (c, _) =
        Config::from_url_parts(&format!("239.255.76.67:{port}"), &[("recv_buf_size".into(), "4194304".into())])
            .expect("valid");
    c
}

/// The payloads both directions use: empty, small, exactly at the small/fragment boundary for the channel, one
/// byte past it, and 1 MB.
fn payloads(channel: &str) -> Vec<Vec<u8>> {
    let boundary = 65499 - channel.len() - 1;
    [0usize, 100, boundary, boundary + 1, 1_000_000]
        .iter()
        .map(|&n| (0..n).map(|i| (i * 31 % 253) as u8).collect())
        .collect()
}

#[test]
fn real_lcm_publishes_nerve_receives() {
    let cfg = config(0);
    let mut rx = Receiver::open(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let script = format!(
        r#"
import lcm, sys
lc = lcm.LCM("udpm://{}:{}?ttl=0")
boundary = 65499 - len("EDGE") - 1
for n in [0, 100, boundary, boundary + 1, 1000000]:
    lc.publish("EDGE", bytes((i * 31 % 253) for i in range(n)))
"#,
        cfg.group, cfg.port
    );
    let status = Command::new(venv_python()).arg("-c").arg(script).status().unwrap();
    assert!(status.success());
    let mut got = Vec::new();
    while let Some(m) = rx.recv(Some(Duration::from_secs(3))).unwrap() {
        if m.channel == "LCM_SELF_TEST" {
            continue;
        }
        got.push(m);
        if got.len() == 5 {
            break;
        }
    }
    let want = payloads("EDGE");
    assert_eq!(got.len(), want.len(), "stats: {:?}", rx.stats());
    for (m, w) in got.iter().zip(&want) {
        assert_eq!(m.channel, "EDGE");
        assert_eq!(m.payload.len(), w.len());
        assert!(m.payload == *w, "payload of {} bytes differs", w.len());
    }
    assert_eq!(rx.stats().malformed_total(), 0);
}

#[test]
fn nerve_publishes_real_lcm_receives() {
    let cfg = config(1);
    let script = format!(
        r#"
import lcm, sys, hashlib, select
lc = lcm.LCM("udpm://{}:{}?ttl=0&recv_buf_size=4194304")
got = []
def on(ch, data):
    got.append((ch, len(data), hashlib.sha256(data).hexdigest()))
lc.subscribe("EDGE", on)
lc.handle_timeout(0)
print("ready", flush=True)
while len(got) < 5:
    if lc.handle_timeout(5000) <= 0:
        break
for g in got:
    print(*g, flush=True)
"#,
        cfg.group, cfg.port
    );
    let mut child = Command::new(venv_python()).arg("-c").arg(script).stdout(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let mut tx = Sender::open(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let want = payloads("EDGE");
    for p in &want {
        tx.send("EDGE", p).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut lines = Vec::new();
    for l in out.lines() {
        lines.push(l.unwrap());
    }
    let status = child.wait().unwrap();
    assert!(status.success());
    let expected: Vec<String> = want.iter().map(|p| format!("EDGE {} {}", p.len(), sha256_hex(p))).collect();
    assert_eq!(lines, expected);
    let _ = std::io::stdout().flush();
}

/// SHA-256 with Python's hashlib on the other side; computed here with the venv's Python too, to keep the test
/// free of a hashing dependency.
fn sha256_hex(data: &[u8]) -> String {
    let mut child = Command::new(venv_python())
        .args(["-c", "import sys, hashlib; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// 100 MB (1,600 fragments) in each direction. Both receivers ask for a 256 MiB kernel buffer, so the whole burst
/// fits even when the receiving process gets no CPU for a while on a loaded machine (scripts/setup raises
/// net.core.rmem_max to allow it), as LCM's docs advise for large messages.
#[test]
fn hundred_megabytes_both_ways() {
    let mut cfg = config(2);
    cfg.recv_buf_size = Some(256 << 20);
    let size = 100_000_000usize;
    let url = format!("udpm://{}:{}?ttl=0&recv_buf_size={}", cfg.group, cfg.port, 256 << 20);

    // Real LCM -> Nerve.
    let mut rx = Receiver::open(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let script =
        format!("import lcm\nlc = lcm.LCM('{url}')\nlc.publish('HUGE', bytes(range(256)) * ({size} // 256))\n");
    let publisher = std::thread::spawn(move || Command::new(venv_python()).arg("-c").arg(script).status().unwrap());
    let m = loop {
        let m = rx.recv(Some(Duration::from_secs(20))).unwrap().unwrap_or_else(|| panic!("nothing; {:?}", rx.stats()));
        if m.channel == "HUGE" {
            break m;
        }
    };
    assert!(publisher.join().unwrap().success());
    assert_eq!(m.payload.len(), size);
    assert!(m.payload.chunks(256).all(|c| c.iter().enumerate().all(|(i, &b)| b == i as u8)));

    // Nerve -> real LCM.
    let script = format!(
        r#"
import lcm
lc = lcm.LCM("{url}")
got = []
lc.subscribe("HUGE", lambda ch, d: got.append(len(d) == {size} and d == bytes(range(256)) * ({size} // 256)))
lc.handle_timeout(0)
print("ready", flush=True)
lc.handle_timeout(20000)
print(got, flush=True)
"#
    );
    let mut child = Command::new(venv_python()).arg("-c").arg(script).stdout(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let payload: Vec<u8> = (0..size).map(|i| i as u8).collect();
    Sender::open(&cfg).unwrap().send("HUGE", &payload).unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(line.trim(), "[True]", "real LCM did not receive the 100 MB message whole");
}
