//! Where the time of a zero-copy read of a big frame goes: the view itself, or the writer's flood of memory before
//! it? Each row times one `Reader::view` + `View::check` (the bytes untouched) right after some put, on one thread:
//!
//! - `64 B put, view it`: the baseline;
//! - `4 MiB put, view it`: the case that looked slow (view_read's 4 MiB row);
//! - `4 MiB put, view a 64 B channel`: the same flood, then a view of *another* channel's 64-byte message (put
//!   before the flood): if this costs what the 4 MiB view costs, the cost is the flood's aftermath (caches, TLB,
//!   page walks), not the frame's size;
//! - `4 MiB put, two clock reads`: what just reading the clock costs after the same flood;
//! - `4 MiB loan, 16 bytes written, view it`: a 4 MiB message whose bytes were not written (no flood).
//!
//! Then two threads (run it on two CPUs): a writer stamps each message after filling it (as `nerve-bench scale`'s
//! writer does) and a reader spins on `view`; rows give the stamp-to-view latency for 64 B, for 4 MiB filled, and for
//! 4 MiB not filled (only the stamp written), with the writer's own time from the stamp to the end of its commit.
//! Minimum, p50 and p90 in ns (minimums resist a loaded host).
//!
//! ```sh
//! cargo build --release -p nerve-shm --example view_flood
//! taskset -c 0,1 target/release/examples/view_flood [--quick]
//! ```

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Wait, Writer};

const MIB4: usize = 4 << 20;

fn row(name: &str, samples: &mut [u64]) {
    samples.sort_unstable();
    let at = |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize];
    println!("{name:<44} {:>8} {:>8} {:>8}   n {}", at(0.0), at(0.5), at(0.9), samples.len());
}

/// A clock in ns shared by both threads (one `Instant` origin).
fn ns(origin: Instant) -> u64 {
    origin.elapsed().as_nanos() as u64
}

/// Puts a `len`-byte message through a loan: all of it written (`fill`) or only its first 16 bytes, the stamp last.
fn put_stamped(w: &mut Writer, len: usize, fill: Option<&[u8]>, origin: Instant) -> u64 {
    let mut loan = w.loan(len).expect("loan");
    let b = loan.bytes_mut();
    if let Some(f) = fill {
        b.copy_from_slice(f);
    }
    let stamp = ns(origin);
    b[0..8].copy_from_slice(&stamp.to_le_bytes());
    loan.commit();
    stamp
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 100 } else { 1000 };
    let base = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm".into() } else { std::env::temp_dir() };
    let dir = base.join(format!("nerve-view-flood-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let big = Channel::create("big", &ChannelConfig::new(4, MIB4 as u64).dir(&dir))?;
    let small = Channel::create("small", &ChannelConfig::new(4, 64).dir(&dir))?;
    let (mut wb, mut rb) = (big.writer(), big.reader());
    let (mut ws, mut rs) = (small.writer(), small.reader());
    let frame = vec![0x5au8; MIB4];
    let view = |r: &mut nerve_shm::Reader| {
        let t = Instant::now();
        let GetOutcome::Message(v) = r.view(ReadMode::Newest, Wait::Poll).expect("view") else { panic!("no view") };
        v.check().expect("intact");
        let dt = t.elapsed().as_nanos() as u64;
        black_box(v.bytes().as_ptr());
        dt
    };

    println!("one thread: the view of a message just put          min      p50      p90   (ns)");
    let mut s: Vec<u64> = (0..n)
        .map(|_| {
            ws.put(&[1u8; 64]).expect("put");
            view(&mut rs)
        })
        .collect();
    row("64 B put, view it", &mut s);
    let mut s: Vec<u64> = (0..n)
        .map(|_| {
            wb.put(&frame).expect("put");
            view(&mut rb)
        })
        .collect();
    row("4 MiB put, view it", &mut s);
    let mut s: Vec<u64> = (0..n)
        .map(|_| {
            ws.put(&[1u8; 64]).expect("put");
            wb.put(&frame).expect("put");
            view(&mut rs)
        })
        .collect();
    row("4 MiB put, view a 64 B channel", &mut s);
    let mut s: Vec<u64> = (0..n)
        .map(|_| {
            wb.put(&frame).expect("put");
            let t = Instant::now();
            black_box(Instant::now());
            t.elapsed().as_nanos() as u64
        })
        .collect();
    row("4 MiB put, two clock reads", &mut s);
    let origin = Instant::now();
    let mut s: Vec<u64> = (0..n)
        .map(|_| {
            put_stamped(&mut wb, MIB4, None, origin);
            view(&mut rb)
        })
        .collect();
    row("4 MiB loan, 16 bytes written, view it", &mut s);

    println!("\ntwo threads: writer's stamp to the reader's view       min      p50      p90   (ns)");
    for (name, len, filled) in [
        ("64 B", 64usize, true),
        ("4 MiB, filled then stamped", MIB4, true),
        ("4 MiB, only the stamp written", MIB4, false),
    ] {
        let ch = if len == 64 { &small } else { &big };
        let mut reader = ch.reader_after_newest();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU64::new(0));
        let (stop2, seen2) = (Arc::clone(&stop), Arc::clone(&seen));
        let spinner = std::thread::spawn(move || {
            let mut lat = Vec::new();
            while !stop2.load(Ordering::Relaxed) {
                if let GetOutcome::Message(v) = reader.view(ReadMode::Next, Wait::Poll).expect("view") {
                    let stamp = u64::from_le_bytes(v.bytes()[0..8].try_into().expect("8 bytes"));
                    let now = ns(origin);
                    if v.check().is_ok() {
                        lat.push(now.saturating_sub(stamp));
                    }
                    seen2.fetch_add(1, Ordering::Release);
                }
            }
            lat
        });
        let mut w = ch.writer();
        let mut commit = Vec::new();
        for i in 0..n as u64 {
            let stamp = put_stamped(&mut w, len, filled.then_some(&frame[..len]), origin);
            commit.push(ns(origin) - stamp);
            // Wait for the reader, then leave the line alone for a while (as a 100 Hz camera would).
            while seen.load(Ordering::Acquire) <= i {
                std::hint::spin_loop();
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        stop.store(true, Ordering::Relaxed);
        let mut lat = spinner.join().expect("reader");
        row(&format!("{name}: latency"), &mut lat);
        row(&format!("{name}: writer, stamp to commit done"), &mut commit);
    }
    drop((big, small));
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
