//! What a process costs, read from /proc: CPU time of all its threads (schedstat, in ns), thread count and resident
//! memory. The same reading for Nerve and every peer, from outside the process.

use std::time::Duration;

use crate::harness::clock::mono_ns;

/// CPU time of every thread of `pid` so far, in ns: the sum of `/proc/PID/task/*/schedstat`'s first field (time on
/// a CPU, kept by the scheduler to the nanosecond; `stat`'s utime and stime count 10 ms ticks).
pub fn cpu_ns(pid: u32) -> Result<u64, String> {
    let dir = format!("/proc/{pid}/task");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("reading {dir}: {e}"))?;
    let mut sum = 0u64;
    for e in entries.flatten() {
        // A thread that ended between the listing and the read took its time with it; that is all it can do.
        if let Ok(s) = std::fs::read_to_string(e.path().join("schedstat")) {
            sum += s.split_whitespace().next().and_then(|w| w.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    Ok(sum)
}

fn status_field(pid: u32, key: &str) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let s = std::fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?;
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{path} has no {key}"))
}

/// Threads of `pid`.
pub fn threads(pid: u32) -> Result<u64, String> {
    status_field(pid, "Threads:")
}

/// Resident memory of `pid` in KiB.
pub fn rss_kib(pid: u32) -> Result<u64, String> {
    status_field(pid, "VmRSS:")
}

/// CPU per second of wall time of each of `pids` over `window`, in ms/s.
pub fn cpu_rates(pids: &[u32], window: Duration) -> Result<Vec<f64>, String> {
    let t0 = mono_ns();
    let c0 = pids.iter().map(|&p| cpu_ns(p)).collect::<Result<Vec<_>, _>>()?;
    std::thread::sleep(window);
    let c1 = pids.iter().map(|&p| cpu_ns(p)).collect::<Result<Vec<_>, _>>()?;
    let secs = (mono_ns() - t0) as f64 / 1e9;
    Ok(c0.iter().zip(&c1).map(|(a, b)| b.saturating_sub(*a) as f64 / 1e6 / secs).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_threads_memory_and_cpu_time() {
        let pid = std::process::id();
        assert!(threads(pid).unwrap() >= 1);
        assert!(rss_kib(pid).unwrap() > 0);
        let before = cpu_ns(pid).unwrap();
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        assert!(cpu_ns(pid).unwrap() > before + 10_000_000, "30 ms of spinning shows as CPU time");
    }
}
