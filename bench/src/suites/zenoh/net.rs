//! Two hosts as network namespaces joined by a veth pair, made by the suite and removed when dropped (as
//! crates/cli/tests/netns.rs does): host A 10.78.1.1/24, host B 10.78.1.2/24, private addresses that never leave
//! the machine; loopback up in each and multicast (239.0.0.0/8) routed over the veth, for udpm with TTL 1. Also the
//! processes the suite runs in them: `ip netns exec NS PROGRAM ...` execs the program, so the child's PID is the
//! program's own (its /proc/PID/stat is the process measured, and killing it kills nothing else).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

pub const ADDR_A: &str = "10.78.1.1";
pub const ADDR_B: &str = "10.78.1.2";

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).stdin(Stdio::null()).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Why the suite cannot make namespaces here, if it cannot.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid takes no arguments and cannot fail.
    #[allow(unsafe_code)]
    let uid = unsafe { libc::geteuid() };
    if uid != 0 {
        return Some("needs root (it makes network namespaces and a veth link); run it with sudo".into());
    }
    if Command::new("ip").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        return Some("needs iproute2's `ip`".into());
    }
    None
}

/// The two namespaces; removed (with the veth pair) when dropped.
pub struct Hosts {
    pub a: String,
    pub b: String,
}

impl Hosts {
    pub fn make() -> Result<Hosts, String> {
        let tag = std::process::id() % 100_000;
        let hosts = Hosts { a: format!("nzbA{tag}"), b: format!("nzbB{tag}") };
        let (va, vb) = (format!("zbA{tag}"), format!("zbB{tag}"));
        // Made one by one: a failure part way leaves `hosts` to remove what exists (Drop ignores what does not).
        ip(&["netns", "add", &hosts.a])?;
        ip(&["netns", "add", &hosts.b])?;
        ip(&["link", "add", &va, "netns", &hosts.a, "type", "veth", "peer", "name", &vb, "netns", &hosts.b])?;
        for (ns, dev, addr) in [(&hosts.a, &va, ADDR_A), (&hosts.b, &vb, ADDR_B)] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            // udpm's group goes over the link (TTL 1 crosses exactly this one hop, no router forwards it further).
            ip(&["-n", ns, "route", "add", "239.0.0.0/8", "dev", dev])?;
        }
        Ok(hosts)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for n in [&self.a, &self.b] {
            // Removing a namespace removes the veth end in it, and with it its peer.
            let _ = ip(&["netns", "del", n]);
        }
    }
}

/// A process in a namespace: its stdout lines arrive on a channel; killed (by its PID) and reaped when dropped.
pub struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    name: String,
}

impl Proc {
    /// Starts `exe ARGS` in namespace `ns`; `quiet` sends its stdout and stderr to /dev/null.
    pub fn spawn(ns: &str, exe: &Path, args: &[String], name: &str, quiet: bool) -> Result<Proc, String> {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(if quiet { Stdio::null() } else { Stdio::piped() })
            .stderr(if quiet { Stdio::null() } else { Stdio::inherit() })
            .spawn()
            .map_err(|e| format!("starting {name}: {e}"))?;
        let (tx, lines) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let stdin = child.stdin.take();
        Ok(Proc { child, stdin, lines, name: name.to_string() })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next JSON line it prints, within `timeout`.
    pub fn line(&mut self, timeout: Duration) -> Result<serde_json::Value, String> {
        match self.lines.recv_timeout(timeout) {
            Ok(l) => serde_json::from_str(&l).map_err(|e| format!("{}: not JSON ({e}): {l}", self.name)),
            Err(_) => {
                let status = self.child.try_wait().ok().flatten();
                Err(match status {
                    Some(s) => format!("{} ended ({s}) without a result", self.name),
                    None => format!("{} printed nothing within {timeout:?}", self.name),
                })
            }
        }
    }

    /// Waits for its `{"ready":true}`.
    pub fn ready(&mut self, timeout: Duration) -> Result<(), String> {
        let v = self.line(timeout)?;
        if v["ready"] == true {
            Ok(())
        } else {
            Err(format!("{}: expected ready, got {v}", self.name))
        }
    }

    /// Closes its stdin (a subscriber or router then prints its result and ends) and returns its last line.
    pub fn finish(&mut self, timeout: Duration) -> Result<serde_json::Value, String> {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.flush();
        }
        self.line(timeout)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stdin.take();
        // A role ends by itself once its stdin is closed; give it a moment, then kill it by its own PID.
        for _ in 0..20 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// utime + stime of process `pid`, in clock ticks, and its resident memory in KiB.
pub fn cpu_ticks_and_rss(pid: u32) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state): utime is field 14, stime 15.
    let (utime, stime): (u64, u64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some((utime + stime, rss))
}

/// Clock ticks a second (for /proc/PID/stat's CPU times).
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf takes a constant and touches no memory of ours.
    #[allow(unsafe_code)]
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}
