//! Another process scribbles over a live channel: a child process (this test binary, started again in the scribbler
//! role) writes random bytes at random places of the channel file's header, index and data ring (with `pwrite`,
//! which the mapping sees) while writer and reader threads of this process run on it. Every put and get must return
//! (a result or an error, within a bound: no hang), the process must not crash, and on a channel made with
//! checksums no reader may be handed a message that is not intact (the scribbled ones are counted as corrupt).
//! Afterwards `Channel::check` reports the damage, and removing and making the channel again recovers it.
//! Bounded: about 3 s of scribbling per channel.

#![cfg(not(loom))]

mod common;

use std::os::unix::fs::FileExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{check_payload, payload, TestDir};
use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Wait, LOCK_PATIENCE};

const FRAMES: u64 = 16;
const FRAME_SIZE: u64 = 512;
const SCRIBBLING: Duration = Duration::from_secs(3);
/// The longest a put or get may take: a put waits at most LOCK_PATIENCE for the lock, a get at most its timeout.
const CALL_BOUND: Duration = Duration::from_secs(3);

/// The scribbler role: writes random bytes over the file named by the environment until its time is up.
#[test]
fn scribble_child() {
    let Some(path) = std::env::var_os("NERVE_SHM_SCRIBBLE_FILE") else { return };
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let len = file.metadata().unwrap().len();
    let mut x: u64 = std::env::var("NERVE_SHM_SCRIBBLE_SEED").unwrap().parse().unwrap();
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let end = Instant::now() + SCRIBBLING;
    while Instant::now() < end {
        // A third each: the header (576 bytes), the index, the data ring.
        let index_end = 576 + FRAMES * 64;
        let at = match next() % 3 {
            0 => next() % 576,
            1 => 576 + next() % (FRAMES * 64),
            _ => index_end + next() % (len - index_end),
        };
        let bytes: Vec<u8> = (0..1 + next() % 12).map(|_| next() as u8).collect();
        let n = bytes.len().min((len - at) as usize);
        let _ = file.write_at(&bytes[..n], at);
        thread::sleep(Duration::from_micros(300));
    }
}

#[derive(Default)]
struct Tally {
    puts: AtomicU64,
    put_errors: AtomicU64,
    messages: AtomicU64,
    intact: AtomicU64,
    get_errors: AtomicU64,
    corrupt: AtomicU64,
    slowest_call_ms: AtomicU64,
}

fn timed<T>(tally: &Tally, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    tally.slowest_call_ms.fetch_max(start.elapsed().as_millis() as u64, Ordering::Relaxed);
    out
}

/// Runs 2 writers and 2 readers (one copying, one zero-copy) on a channel while a child process scribbles over it.
fn scribble(tag: &str, checksum: bool, seed: u64) -> (Arc<Tally>, TestDir) {
    let dir = TestDir::new(tag);
    let config = ChannelConfig::new(FRAMES, FRAME_SIZE).dir(dir.path()).checksum(checksum);
    let channel = Channel::create("s", &config).unwrap();
    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for w in 0..2u64 {
        let (mut writer, tally, stop) = (channel.writer(), tally.clone(), stop.clone());
        threads.push(thread::spawn(move || {
            let mut counter = 0;
            while !stop.load(Ordering::Relaxed) {
                counter += 1;
                let p = payload(w, counter, 24 + (counter as usize * 37) % (FRAME_SIZE as usize - 24));
                match timed(&tally, || writer.put(&p)) {
                    Ok(_) => tally.puts.fetch_add(1, Ordering::Relaxed),
                    Err(_) => tally.put_errors.fetch_add(1, Ordering::Relaxed),
                };
                thread::sleep(Duration::from_micros(50));
            }
        }));
    }
    for zero_copy in [false, true] {
        let (mut reader, tally, stop) = (channel.reader(), tally.clone(), stop.clone());
        threads.push(thread::spawn(move || {
            let mut buf = vec![0u8; FRAME_SIZE as usize];
            let wait = Wait::Timeout(Duration::from_millis(20));
            while !stop.load(Ordering::Relaxed) {
                let got = timed(&tally, || {
                    if zero_copy {
                        reader
                            .get_with(ReadMode::Next, wait, |b| check_payload(b).is_some())
                            .map(|o| o.map(|(_, ok)| ok))
                    } else {
                        reader
                            .get(&mut buf, ReadMode::Next, wait)
                            .map(|o| o.map(|i| check_payload(&buf[..i.len]).is_some()))
                    }
                });
                match got {
                    Ok(GetOutcome::Message(ok)) => {
                        tally.messages.fetch_add(1, Ordering::Relaxed);
                        tally.intact.fetch_add(u64::from(ok), Ordering::Relaxed);
                    }
                    Ok(_) => {}
                    Err(_) => {
                        tally.get_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            tally.corrupt.fetch_add(reader.corrupt_frames(), Ordering::Relaxed);
        }));
    }
    let path = dir.path().join("nerve-s");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "scribble_child", "--nocapture", "--test-threads=1"])
        .env("NERVE_SHM_SCRIBBLE_FILE", &path)
        .env("NERVE_SHM_SCRIBBLE_SEED", seed.to_string())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "the scribbler failed: {status}");
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("a writer or reader thread panicked");
    }
    let slowest = Duration::from_millis(tally.slowest_call_ms.load(Ordering::Relaxed));
    assert!(slowest < CALL_BOUND, "a put or get took {slowest:?} (lock patience {LOCK_PATIENCE:?})");
    (tally, dir)
}

/// Damage found, then `rm` and `mk` recover the channel.
fn damage_is_found_and_recovered(dir: &TestDir, checksum: bool) {
    let path = dir.path().join("nerve-s");
    // A deterministic last scribble over the header's index-entry count, which the check must see.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_at(&[0xff; 8], 16).unwrap();
    let listed = Channel::list(Some(dir.path())).unwrap();
    assert!(listed[0].stats.is_err(), "damage not found: {:?}", listed[0].stats);
    Channel::remove("s", Some(dir.path())).unwrap();
    let config = ChannelConfig::new(FRAMES, FRAME_SIZE).dir(dir.path()).checksum(checksum);
    let channel = Channel::create("s", &config).unwrap();
    channel.check().unwrap();
    let mut reader = channel.reader_after_newest();
    channel.writer().put(&payload(9, 1, 100)).unwrap();
    let mut buf = [0u8; FRAME_SIZE as usize];
    let info = reader.get(&mut buf, ReadMode::Next, Wait::Poll).unwrap().message().unwrap();
    assert_eq!(check_payload(&buf[..info.len]), Some((9, 1)));
    assert!(Channel::list(Some(dir.path())).unwrap()[0].stats.is_ok());
}

#[test]
fn scribbled_channel_with_checksums_never_hands_out_scribbled_bytes() {
    let (tally, dir) = scribble("sum", true, 0x5eed_0001);
    let (messages, intact) = (tally.messages.load(Ordering::Relaxed), tally.intact.load(Ordering::Relaxed));
    eprintln!(
        "checksums: {} puts, {} put errors, {messages} messages, {} get errors, {} corrupt frames skipped",
        tally.puts.load(Ordering::Relaxed),
        tally.put_errors.load(Ordering::Relaxed),
        tally.get_errors.load(Ordering::Relaxed),
        tally.corrupt.load(Ordering::Relaxed)
    );
    assert!(messages > 0, "no message got through at all");
    assert_eq!(intact, messages, "a reader was handed scribbled bytes as a good message");
    damage_is_found_and_recovered(&dir, true);
}

#[test]
fn scribbled_channel_without_checksums_errs_but_never_crashes_or_hangs() {
    let (tally, dir) = scribble("plain", false, 0x5eed_0002);
    eprintln!(
        "no checksums: {} puts, {} put errors, {} messages ({} intact), {} get errors",
        tally.puts.load(Ordering::Relaxed),
        tally.put_errors.load(Ordering::Relaxed),
        tally.messages.load(Ordering::Relaxed),
        tally.intact.load(Ordering::Relaxed),
        tally.get_errors.load(Ordering::Relaxed)
    );
    assert!(tally.puts.load(Ordering::Relaxed) > 0);
    damage_is_found_and_recovered(&dir, false);
}

#[test]
fn healthy_busy_channel_is_never_reported_damaged() {
    let dir = TestDir::new("healthy");
    let channel = Channel::create("h", &ChannelConfig::new(4, 256).dir(dir.path()).checksum(true)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writer = channel.writer();
    let stop2 = stop.clone();
    let t = thread::spawn(move || {
        let mut i = 0u64;
        while !stop2.load(Ordering::Relaxed) {
            i += 1;
            writer.put(&payload(1, i, 24 + (i as usize * 13) % 200)).unwrap();
        }
    });
    let end = Instant::now() + Duration::from_millis(500);
    while Instant::now() < end {
        channel.check().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
}

#[test]
fn a_reader_skips_and_counts_a_frame_whose_bytes_fail_their_checksum() {
    let dir = TestDir::new("onebyte");
    let channel = Channel::create("c", &ChannelConfig::new(4, 64).dir(dir.path()).checksum(true)).unwrap();
    assert!(channel.stats().checksum);
    let mut reader = channel.reader_after_newest();
    let mut writer = channel.writer();
    writer.put(&payload(1, 1, 32)).unwrap();
    writer.put(&payload(1, 2, 32)).unwrap();
    // Flip one byte of the first frame (the data ring starts after the header and 4 index entries).
    let file = std::fs::OpenOptions::new().read(true).write(true).open(dir.path().join("nerve-c")).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, 576 + 4 * 64 + 20).unwrap();
    file.write_at(&[byte[0] ^ 1], 576 + 4 * 64 + 20).unwrap();
    assert!(channel.check().is_err(), "the checksum mismatch is damage");
    let mut buf = [0u8; 64];
    let info = reader.get(&mut buf, ReadMode::Next, Wait::Poll).unwrap().message().unwrap();
    assert_eq!((info.seq, info.missed, reader.corrupt_frames()), (2, 1, 1));
    assert_eq!(check_payload(&buf[..info.len]), Some((1, 2)));
}

#[test]
fn a_lock_word_overwritten_with_a_writer_nobody_runs_is_taken_over_not_waited_out() {
    let dir = TestDir::new("lockword");
    let channel = Channel::create("l", &ChannelConfig::new(4, 64).dir(dir.path())).unwrap();
    let mut writer = channel.writer();
    let mut reader = channel.reader();
    writer.put(&payload(1, 0, 32)).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(dir.path().join("nerve-l")).unwrap();
    // The lock word is the header's u32 at offset 128: a holder id in the low 30 bits, then "abandoned", "waiters".
    for (k, word) in [0x2345_6789u32 | 1 << 31, u32::MAX, 1 << 30].into_iter().enumerate() {
        file.write_at(&word.to_ne_bytes(), 128).unwrap();
        let start = Instant::now();
        writer.put(&payload(1, k as u64 + 1, 32)).unwrap();
        assert!(start.elapsed() < Duration::from_millis(100), "word {word:#x}: took {:?}", start.elapsed());
        assert_eq!(channel.stats().recoveries, k as u64 + 1, "word {word:#x}");
    }
    let mut buf = [0u8; 64];
    let info = reader.get(&mut buf, ReadMode::Newest, Wait::Poll).unwrap().message().unwrap();
    assert_eq!(check_payload(&buf[..info.len]), Some((1, 3)));
}
