//! A thousand idle shm channels under one subscription: a bounded number of threads, next to no CPU while nothing is
//! published, and a message on any one of them received at once. One test in this file, so the process's thread
//! count is the bus's alone. `NERVE_SHM_SCALE_CHANNELS` changes the count (and the test prints its figures).

use std::path::Path;
use std::time::{Duration, Instant};

use nerve_bus::provider::shm::encode_channel;
use nerve_bus::{Bus, Overflow};
use nerve_shm::{Channel, ChannelConfig};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// utime + stime of this process from /proc/self/stat, in clock ticks.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which is in parentheses and may hold spaces): state is field 3; utime, stime
    // are fields 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// Nanoseconds on a CPU, summed over this process's live threads (/proc/self/task/*/schedstat): finer than ticks.
fn cpu_nanos() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Clock ticks per second of /proc/self/stat: Linux's USER_HZ, 100 on every architecture Nerve runs on.
const TICKS_PER_SECOND: u64 = 100;

#[test]
fn a_thousand_idle_channels_cost_a_few_threads_and_no_cpu_and_wake_at_once() {
    let n: usize = std::env::var("NERVE_SHM_SCALE_CHANNELS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let dir = tempfile::Builder::new().prefix("nerve-shm-scale-").tempdir().unwrap();
    let config = ChannelConfig::new(4, 256).dir(dir.path());
    let channels: Vec<Channel> =
        (0..n).map(|i| Channel::open_or_create(&encode_channel(&format!("scale/{i}")), &config).unwrap()).collect();
    let baseline = threads();
    let url = format!("shm://?dir={}", Path::new(dir.path()).display());
    let bus = Bus::new(Some(&url)).unwrap();
    let sub = bus.subscriber("scale/.*", 1024, Overflow::DropOldest).unwrap();
    // Every channel is read: a message on the last one made arrives.
    let mut last = channels[n - 1].writer();
    last.put(b"ready").unwrap();
    assert!(sub.recv_timeout(Duration::from_secs(10)).is_some(), "the subscription reads its channels");
    std::thread::sleep(Duration::from_millis(300));

    let during = threads();
    let (t0, c0, s0) = (Instant::now(), cpu_ticks(), cpu_nanos());
    std::thread::sleep(Duration::from_secs(3));
    let secs = t0.elapsed().as_secs_f64();
    let tick_ms_per_s = (cpu_ticks() - c0) as f64 * 1000.0 / TICKS_PER_SECOND as f64 / secs;
    let ms_per_s = (cpu_nanos() - s0) as f64 / 1e6 / secs;

    let active = 737 % n;
    let mut writer = channels[active].writer();
    let mut delays = Vec::new();
    for i in 0..50u32 {
        let at = Instant::now();
        writer.put(&i.to_le_bytes()).unwrap();
        let m = sub.recv_timeout(Duration::from_secs(5)).expect("the message on the active channel");
        delays.push(at.elapsed());
        assert_eq!(m.channel, format!("scale/{active}"));
        std::thread::sleep(Duration::from_millis(2));
    }
    delays.sort();
    let (p50, max) = (delays[delays.len() / 2], delays[delays.len() - 1]);
    println!(
        "{n} idle shm channels: {} threads for the bus, idle CPU {ms_per_s:.2} ms/s ({tick_ms_per_s:.1} by \
         /proc/self/stat), channel {active}: p50 {p50:?}, max {max:?}",
        during - baseline
    );
    assert!(during <= baseline + 4, "{} threads for {n} channels (baseline {baseline})", during - baseline);
    assert!(ms_per_s < 5.0 && tick_ms_per_s < 10.0, "idle CPU {ms_per_s:.2} ms/s ({tick_ms_per_s:.1} by ticks)");
    assert!(p50 < Duration::from_millis(5), "p50 {p50:?} from the put to the subscriber");
    drop(bus);
}
