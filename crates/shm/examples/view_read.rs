//! The cost of reading one message of each size from a channel, four ways: a view (`Reader::view` and
//! `View::check`: zero-copy, kept), a zero-copy closure (`Reader::get_with` over `len()`), a copying read
//! (`Reader::get` into a buffer) and a plain memcpy of the same size between two heap buffers. Each sample is one
//! read of a message just put (the put is not timed); it prints p50 and p99 in nanoseconds.
//!
//! ```sh
//! cargo build --release -p nerve-shm --example view_read
//! taskset -c 1 target/release/examples/view_read [--quick]
//! ```

use std::hint::black_box;
use std::time::Instant;

use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Wait};

const SIZES: [usize; 6] = [64, 4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20];

fn percentile(samples: &mut [u64], p: f64) -> u64 {
    samples.sort_unstable();
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let quick = std::env::args().any(|a| a == "--quick");
    let base = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm".into() } else { std::env::temp_dir() };
    let dir = base.join(format!("nerve-view-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!(
        "{:>9}  {:>16}  {:>16}  {:>16}  {:>16}   (p50 / p99, ns; one read per sample)",
        "size", "view+check", "get_with(len)", "get (copy)", "memcpy"
    );
    for size in SIZES {
        let samples = match (quick, size) {
            (true, _) => 50,
            (false, s) if s >= 4 << 20 => 300,
            (false, s) if s >= 1 << 20 => 1000,
            _ => 10_000,
        };
        let name = format!("view-read-{size}");
        let ch = Channel::create(&name, &ChannelConfig::new(4, size as u64).dir(&dir))?;
        let mut writer = ch.writer();
        let mut reader = ch.reader();
        let message = vec![0x5au8; size];
        let mut buf = vec![0u8; size];
        let mut dst = vec![0u8; size];
        let (mut view, mut with, mut copy, mut memcpy) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for i in 0..samples + samples / 10 {
            let keep = i >= samples / 10; // the first tenth warms up
            writer.put(&message)?;
            let t = Instant::now();
            let GetOutcome::Message(v) = reader.view(ReadMode::Newest, Wait::Poll)? else { panic!("no view") };
            v.check()?;
            let dt = t.elapsed().as_nanos() as u64;
            black_box(v.bytes().as_ptr());
            drop(v);
            keep.then(|| view.push(dt));

            writer.put(&message)?;
            let t = Instant::now();
            let got = reader.get_with(ReadMode::Newest, Wait::Poll, |b| b.len())?;
            let dt = t.elapsed().as_nanos() as u64;
            assert!(matches!(got, GetOutcome::Message((_, n)) if n == size));
            keep.then(|| with.push(dt));

            writer.put(&message)?;
            let t = Instant::now();
            let got = reader.get(&mut buf, ReadMode::Newest, Wait::Poll)?;
            let dt = t.elapsed().as_nanos() as u64;
            assert!(matches!(got, GetOutcome::Message(info) if info.len == size));
            keep.then(|| copy.push(dt));

            // The memcpy's source is as warm as the channel's frame after a put (just written).
            buf.fill(i as u8);
            let t = Instant::now();
            dst.copy_from_slice(black_box(&buf));
            black_box(&mut dst);
            let dt = t.elapsed().as_nanos() as u64;
            keep.then(|| memcpy.push(dt));
        }
        let cell = |s: &mut Vec<u64>| format!("{} / {}", percentile(s, 0.5), percentile(s, 0.99));
        let label = if size >= 1 << 20 {
            format!("{} MiB", size >> 20)
        } else if size >= 1024 {
            format!("{} KiB", size >> 10)
        } else {
            format!("{size} B")
        };
        println!(
            "{label:>9}  {:>16}  {:>16}  {:>16}  {:>16}",
            cell(&mut view),
            cell(&mut with),
            cell(&mut copy),
            cell(&mut memcpy)
        );
        drop((writer, reader, ch));
        Channel::remove(&name, Some(&dir))?;
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
