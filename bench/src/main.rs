//! `nerve-bench`: Nerve's benchmark suites (bench/README.md says what each measures).
//!
//! ```text
//! nerve-bench marshalling [--quick] [--json]
//! nerve-bench echo [--quick] [--json]
//! nerve-bench latency [--quick] [--json]
//! nerve-bench intraprocess [--quick] [--json]
//! nerve-bench foxglove [--quick] [--json]
//! nerve-bench zenoh [--fleet] [--quick] [--json]
//! nerve-bench scale [--quick] [--json] [--out DIR]
//! ```
//!
//! `nerve bench SUITE` runs this program. Figures are medians measured in this run; ratios against the peers measured
//! in the same run are the result, absolute times on a shared machine are not.

mod data;
mod harness;
mod peers;
mod suites;

use suites::{echo, foxglove, intraprocess, latency, log, marshalling, scale, zenoh};

use std::process::ExitCode;

const USAGE: &str = "usage: nerve-bench SUITE [--quick] [--json] [--fleet] [--out DIR]\n\nsuites:\n  marshalling  LCM's paper Fig. 6 and PolySync's serialization paper \
Table 1: encode, decode and projections for Nerve's Rust, C and Python, real LCM C and Python, flatbuffers, bincode \
and a memcpy floor\n  echo         LCM's paper Figs. 4-5: 800-byte messages echoed by 1/2/4 client processes over udpm, nerve vs real \
LCM C: bandwidth, loss, round trip\n  latency      the Ach paper Fig. 8: one-way latency of 64-byte messages between processes at 1 kHz (one and two receivers), a 0.1-100 kHz sweep and a 1-64 hop chain: nerve-shm, Ach's C API on nerve-shm, futex and spin floors, iceoryx2, pipe, POSIX mq, Unix sockets, UDP, TCP, nerve-udpm, real LCM C\n  log          nerve log keep-up at the echo suite's top rate vs lcm-logger, nerve play msgs/s vs lcm-logplayer, nerve export MB/s vs a file copy\n  intraprocess ROS 2's intra-process design article: image pipeline, Sierra Nevada, Mont Blanc in one process, nerve inproc vs the same graph over shm and udpm\n  foxglove     nerve foxglove serving a 1 kHz pose and a 30 Hz 640x480 image to one client: CPU per message and publish-to-client latency, vs nerve spy --once on the same traffic\n  zenoh        issue 22, between two network namespaces (root): the zenoh:// provider vs Zenoh's own Rust pub/sub (64 B and 64 KiB, 1 kHz and flat out: latency, msgs/s, PASS/MISS bars), a bridge hop shm > zenoh > shm, udpm across the veth, and a fleet of 1-50 robots through one Zenoh router (--fleet: the fleet only)\n  scale        1-1,000 shm channels under one subscriber (threads, idle CPU, memory, latency), 64 B-16 MiB messages (copy and zero-copy, poll and wait), 1-16 readers of one channel, and 1,000 udpm channels in 10 processes: nerve vs iceoryx2, real LCM C and a memcpy; tables and SVG plots under --out DIR\n\n  --quick  a few repetitions (CI); figures are rough\n  --json   one JSON object per line\n  --out    where the scale suite writes its tables and plots (default: a directory in the temp dir)\n";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(code) = harness::hidden_role(&args)
        .or_else(|| peers::ipc::hidden_role(&args))
        .or_else(|| log::hidden_role(&args))
        .or_else(|| zenoh::hidden_role(&args))
        .or_else(|| scale::hidden_role(&args))
    {
        return code;
    }
    let mut suite = None;
    let mut quick = false;
    let mut json = false;
    let mut fleet_only = false;
    let mut out = None;
    let mut argv = std::env::args().skip(1);
    while let Some(a) = argv.next() {
        match a.as_str() {
            "--out" => match argv.next() {
                Some(dir) => out = Some(std::path::PathBuf::from(dir)),
                None => {
                    eprint!("nerve-bench: --out needs a directory\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--quick" => quick = true,
            "--fleet" => fleet_only = true,
            "--json" => json = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            s if !s.starts_with('-') && suite.is_none() => suite = Some(s.to_string()),
            other => {
                eprint!("nerve-bench: unexpected argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    match suite.as_deref() {
        Some("marshalling") => {
            let pinning = pin_to_one_cpu();
            let code = marshalling::run(&marshalling::Options { quick, json, pinning });
            ExitCode::from(code as u8)
        }
        Some("echo") => ExitCode::from(echo::run(quick, json) as u8),
        Some("latency") => ExitCode::from(latency::run(quick, json) as u8),
        Some("intraprocess") => ExitCode::from(intraprocess::run(quick, json) as u8),
        Some("log") => ExitCode::from(log::run(quick, json) as u8),
        Some("foxglove") => ExitCode::from(foxglove::run(quick, json) as u8),
        Some("zenoh") => ExitCode::from(zenoh::run(quick, json, fleet_only) as u8),
        Some("scale") => ExitCode::from(scale::run(quick, json, out) as u8),
        Some("soak") => {
            eprintln!("nerve-bench: the soak is its own program: run nerve-soak (or nerve bench soak)");
            ExitCode::from(2)
        }
        Some(other) => {
            eprint!("nerve-bench: unknown suite {other:?}\n{USAGE}");
            ExitCode::from(2)
        }
        None => {
            eprint!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Pins this process (and the Python subprocesses it starts) to one CPU: the last one it may run on.
#[allow(unsafe_code)]
fn pin_to_one_cpu() -> String {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity/sched_setaffinity read or write exactly size_of bytes.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return "not pinned (sched_getaffinity failed)".into();
        }
        let cpu = (0..libc::CPU_SETSIZE as usize).rev().find(|&c| libc::CPU_ISSET(c, &set));
        let Some(cpu) = cpu else { return "not pinned (empty CPU set)".into() };
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) != 0 {
            return format!("not pinned (sched_setaffinity to cpu {cpu} failed)");
        }
        format!("pinned to cpu {cpu} with sched_setaffinity (Python subprocesses inherit it)")
    }
}
