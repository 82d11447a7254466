//! The channel API in one process: files (create, open, reuse, refusal of foreign, old and truncated files,
//! permissions, list, remove), put/get semantics (order, newest, missed counts, buffer too small, waiting and
//! wake-up, loans) and typed messages.

#![cfg(not(loom))]

mod common;

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::time::{Duration, Instant};

use common::{check_payload, payload, TestDir};
use nerve_shm::{Channel, ChannelConfig, GetOutcome, MessageInfo, ReadMode, ShmError, Wait, VERSION};

fn config(dir: &TestDir, frames: u64, frame_size: u64) -> ChannelConfig {
    ChannelConfig::new(frames, frame_size).dir(dir.path())
}

fn get(reader: &mut nerve_shm::Reader, mode: ReadMode) -> Option<(MessageInfo, Vec<u8>)> {
    let mut buf = vec![0u8; 1 << 20];
    match reader.get(&mut buf, mode, Wait::Poll).unwrap() {
        GetOutcome::Message(info) => Some((info, buf[..info.len].to_vec())),
        GetOutcome::NothingNew => None,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn put_then_get_in_order() {
    let dir = TestDir::new("order");
    let ch = Channel::create("a", &config(&dir, 8, 64)).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader();
    for i in 0..5u8 {
        assert_eq!(w.put(&[i; 10]).unwrap(), u64::from(i) + 1);
    }
    for i in 0..5u8 {
        let (info, bytes) = get(&mut r, ReadMode::Next).unwrap();
        assert_eq!((info.seq, info.missed, info.len, info.origin), (u64::from(i) + 1, 0, 10, w.origin()));
        assert_eq!(bytes, [i; 10]);
        assert!(info.put_utime > 1_600_000_000_000_000);
    }
    assert!(get(&mut r, ReadMode::Next).is_none());
    assert_eq!(ch.newest_seq(), 5);
}

#[test]
fn newest_mode_skips_without_counting_missed() {
    let dir = TestDir::new("newest");
    let ch = Channel::create("a", &config(&dir, 8, 64)).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader();
    for i in 1..=6u8 {
        w.put(&[i]).unwrap();
    }
    let (info, bytes) = get(&mut r, ReadMode::Newest).unwrap();
    assert_eq!((info.seq, info.missed, bytes), (6, 0, vec![6]));
    assert!(get(&mut r, ReadMode::Newest).is_none());
    w.put(&[7]).unwrap();
    assert_eq!(get(&mut r, ReadMode::Next).unwrap().0.seq, 7);
}

#[test]
fn a_reader_that_fell_behind_is_told_how_many_it_missed() {
    let dir = TestDir::new("missed");
    let ch = Channel::create("a", &config(&dir, 4, 64)).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader(); // empty channel: starts before seq 1
    for i in 1..=10u8 {
        w.put(&[i; 3]).unwrap();
    }
    // The index keeps the last 4 (7..=10): 1..=6 are gone.
    let (info, bytes) = get(&mut r, ReadMode::Next).unwrap();
    assert_eq!((info.seq, info.missed, bytes), (7, 6, vec![7; 3]));
    for seq in 8..=10 {
        let (info, _) = get(&mut r, ReadMode::Next).unwrap();
        assert_eq!((info.seq, info.missed), (seq, 0));
    }
    // A reader from the oldest sees the 4 kept, with nothing missed.
    let mut old = ch.reader_from_oldest();
    let seqs: Vec<_> = std::iter::from_fn(|| get(&mut old, ReadMode::Next)).map(|(i, _)| (i.seq, i.missed)).collect();
    assert_eq!(seqs, [(7, 0), (8, 0), (9, 0), (10, 0)]);
}

#[test]
fn a_buffer_too_small_gets_its_own_status_and_loses_nothing() {
    let dir = TestDir::new("small");
    let ch = Channel::create("a", &config(&dir, 8, 256)).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader();
    w.put(&[1; 200]).unwrap();
    w.put(&[2; 20]).unwrap();
    let mut small = [0u8; 50];
    assert_eq!(r.get(&mut small, ReadMode::Next, Wait::Poll).unwrap(), GetOutcome::BufferTooSmall { needed: 200 });
    assert_eq!(r.get(&mut small, ReadMode::Next, Wait::Poll).unwrap(), GetOutcome::BufferTooSmall { needed: 200 });
    assert_eq!(r.last_seq(), 0);
    let (info, bytes) = get(&mut r, ReadMode::Next).unwrap();
    assert_eq!((info.seq, info.missed, bytes), (1, 0, vec![1; 200]));
    let info = r.get(&mut small, ReadMode::Next, Wait::Poll).unwrap().message().unwrap();
    assert_eq!((info.seq, &small[..20]), (2, &[2u8; 20][..]));
}

#[test]
fn a_buffer_too_small_after_falling_behind_counts_the_missed_messages_once() {
    // Found by the Promela model (spec/check's g4-keeps-count mutant): G2's skip must not be counted again when
    // G4 returns and the reader asks a second time.
    let dir = TestDir::new("small-behind");
    let ch = Channel::create("a", &config(&dir, 4, 256)).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader_from_oldest();
    for i in 1..=6u8 {
        w.put(&[i; 100]).unwrap();
    }
    let mut small = [0u8; 50];
    for _ in 0..3 {
        assert_eq!(r.get(&mut small, ReadMode::Next, Wait::Poll).unwrap(), GetOutcome::BufferTooSmall { needed: 100 });
    }
    let (info, bytes) = get(&mut r, ReadMode::Next).unwrap();
    assert_eq!((info.seq, info.missed, bytes), (3, 2, vec![3; 100]));
}

#[test]
fn zero_copy_get_sees_the_bytes_in_place() {
    let dir = TestDir::new("zerocopy");
    let ch = Channel::create("a", &config(&dir, 4, 4096)).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader();
    w.put(&payload(1, 1, 4000)).unwrap();
    let outcome = r.get_with(ReadMode::Next, Wait::Poll, check_payload).unwrap();
    assert_eq!(outcome, GetOutcome::Message((outcome.clone().message().unwrap().0, Some((1, 1)))));
    assert_eq!(r.get_with(ReadMode::Next, Wait::Poll, |b| b.len()).unwrap(), GetOutcome::NothingNew);
}

#[test]
fn loans_write_in_place_and_a_dropped_loan_publishes_nothing() {
    let dir = TestDir::new("loan");
    let ch = Channel::create("a", &config(&dir, 4, 64)).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader();
    let mut loan = w.loan(5).unwrap();
    assert_eq!((loan.len(), loan.seq()), (5, 1));
    loan.bytes_mut().copy_from_slice(b"hello");
    assert_eq!(loan.commit(), 1);
    let mut loan = w.loan(7).unwrap();
    loan.bytes_mut().copy_from_slice(b"discard");
    drop(loan);
    assert_eq!(ch.newest_seq(), 1);
    assert_eq!(ch.stats().aborted_loans, 1);
    let empty = w.loan(0).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.commit(), 2);
    assert_eq!(get(&mut r, ReadMode::Next).unwrap().1, b"hello");
    let (info, bytes) = get(&mut r, ReadMode::Next).unwrap();
    assert_eq!((info.seq, bytes.len()), (2, 0));
    assert!(matches!(w.loan(65), Err(ShmError::MessageTooLarge { len: 65, max: 64, .. })));
    assert!(matches!(w.put(&[0; 65]), Err(ShmError::MessageTooLarge { .. })));
}

#[test]
fn two_writers_in_one_thread_get_an_error_not_a_deadlock() {
    let dir = TestDir::new("deadlock");
    let ch = Channel::create("a", &config(&dir, 4, 64)).unwrap();
    let mut w1 = ch.writer();
    let mut w2 = ch.writer();
    let loan = w1.loan(4).unwrap();
    let err = w2.put(b"x").unwrap_err();
    assert!(matches!(err, ShmError::Lock { .. }), "{err}");
    loan.commit();
    w2.put(b"y").unwrap();
}

#[test]
fn messages_of_many_sizes_including_a_camera_image() {
    let dir = TestDir::new("sizes");
    let image = 640 * 480 * 3;
    let ch = Channel::create("cam", &config(&dir, 4, image as u64)).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader();
    let mut buf = vec![0u8; image];
    let sizes = [24, 25, 31, 32, 33, 1000, 4095, 4096, 65_537, image - 1, image, 24, image, 100];
    for (k, &len) in sizes.iter().enumerate() {
        let p = payload(9, k as u64, len);
        if k % 2 == 0 {
            w.put(&p).unwrap();
        } else {
            let mut loan = w.loan(len).unwrap();
            loan.bytes_mut().copy_from_slice(&p);
            loan.commit();
        }
        let info = r.get(&mut buf, ReadMode::Next, Wait::Poll).unwrap().message().unwrap();
        assert_eq!((info.seq, info.len, info.missed), (k as u64 + 1, len, 0));
        assert_eq!(check_payload(&buf[..len]), Some((9, k as u64)), "size {len}");
    }
}

#[test]
fn wrapping_the_data_ring_many_times_keeps_every_message_intact() {
    let dir = TestDir::new("wrap");
    let ch = Channel::create("a", &config(&dir, 5, 200)).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader();
    let mut buf = [0u8; 200];
    for k in 0..2000u64 {
        let len = 24 + (k as usize * 37) % 177;
        w.put(&payload(3, k, len)).unwrap();
        if k % 3 == 0 {
            while let GetOutcome::Message(info) = r.get(&mut buf, ReadMode::Next, Wait::Poll).unwrap() {
                assert!(check_payload(&buf[..info.len]).is_some(), "message {} torn", info.seq);
            }
        }
    }
    assert_eq!(ch.stats().messages, 2000);
}

#[test]
fn a_wait_with_timeout_returns_after_a_bounded_time() {
    let dir = TestDir::new("timeout");
    let ch = Channel::create("a", &config(&dir, 4, 64)).unwrap();
    let mut r = ch.reader();
    let mut buf = [0u8; 64];
    let t0 = Instant::now();
    assert_eq!(
        r.get(&mut buf, ReadMode::Next, Wait::Timeout(Duration::from_millis(60))).unwrap(),
        GetOutcome::TimedOut
    );
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(60), "returned early: {waited:?}");
    assert!(waited < Duration::from_secs(10), "did not return: {waited:?}");
    // With a spin asked for, the same.
    r.set_spin(Duration::from_millis(5));
    assert_eq!(
        r.get(&mut buf, ReadMode::Next, Wait::Timeout(Duration::from_millis(10))).unwrap(),
        GetOutcome::TimedOut
    );
    assert!(!ch.wait_for_newer(0, Duration::from_millis(10)));
    assert_eq!(ch.stats().waiting_readers, 0);
}

#[test]
fn time_spent_spinning_comes_off_the_sleep() {
    let dir = TestDir::new("spin-deadline");
    let ch = Channel::create("a", &config(&dir, 4, 64)).unwrap();
    let mut r = ch.reader();
    let mut buf = [0u8; 64];
    // A spin longer than the timeout is cut at the deadline and no sleep follows it: about 60 ms in all, not 60 ms of
    // spinning and then a slice (20 ms) asleep. The shortest of a few tries is judged: a busy host can preempt any
    // one of them past the bound, but a wait that sleeps after spinning is late every time.
    r.set_spin(Duration::from_secs(1));
    let mut shortest = Duration::MAX;
    for _ in 0..5 {
        let t0 = Instant::now();
        assert_eq!(
            r.get(&mut buf, ReadMode::Next, Wait::Timeout(Duration::from_millis(60))).unwrap(),
            GetOutcome::TimedOut
        );
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_millis(60), "returned early: {waited:?}");
        shortest = shortest.min(waited);
    }
    assert!(shortest < Duration::from_millis(76), "spun, then slept past the deadline: {shortest:?} at best");
    assert_eq!(ch.stats().waiting_readers, 0);
}

/// Rounds of "sleep on the channel, get woken by a put" that each wake-up test times.
const WAKE_ROUNDS: usize = 7;

/// Starts a thread that, in each of `rounds`, waits until a reader sleeps on `channel` (bounded: 10 s), puts a
/// message and sends the instant of the put; `woken` then runs the sleeping side of every round and returns when
/// it woke. Returns the median time from put to wake-up.
///
/// A sleeping reader also re-checks the channel at the end of every [`nerve_shm::WAIT_SLICE`], so a wake that did
/// nothing would still deliver, a slice late: the put comes moments after the reader fell asleep, so that is close
/// to a whole slice, where the futex wake takes microseconds. The median of several rounds keeps one late
/// scheduling of the reader on a busy host from deciding.
fn median_wake_latency(channel: &Channel, rounds: usize, mut woken: impl FnMut(usize) -> Instant) -> Duration {
    let target = channel.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    // Each round starts when the sleeping side says so: until its previous wait has returned, the waiting-reader
    // count may still show that wait, and a put then would not be a put to a sleeper.
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let putter = std::thread::spawn(move || {
        let mut w = target.writer();
        for round in 0..rounds {
            go_rx.recv().expect("the start of this round");
            let t0 = Instant::now();
            while target.stats().waiting_readers == 0 && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_micros(200));
            }
            let at = Instant::now();
            w.put(format!("wake up {round}").as_bytes()).unwrap();
            tx.send(at).unwrap();
        }
    });
    let mut latencies: Vec<Duration> = (0..rounds)
        .map(|round| {
            go_tx.send(()).unwrap();
            let woke = woken(round);
            woke.saturating_duration_since(rx.recv().expect("the put of this round"))
        })
        .collect();
    putter.join().unwrap();
    latencies.sort();
    eprintln!("put to wake-up, {rounds} rounds: {latencies:?}");
    latencies[rounds / 2]
}

#[test]
fn a_put_wakes_a_waiting_reader() {
    let dir = TestDir::new("wake");
    let ch = Channel::create("a", &config(&dir, 4, 64)).unwrap();
    let mut r = ch.reader();
    let mut buf = [0u8; 64];
    let median = median_wake_latency(&ch, WAKE_ROUNDS, |round| {
        let outcome = r.get(&mut buf, ReadMode::Next, Wait::Timeout(Duration::from_secs(20))).unwrap();
        let woke = Instant::now();
        let info = outcome.message().expect("woken by the put, not timed out");
        assert_eq!(&buf[..info.len], format!("wake up {round}").as_bytes());
        woke
    });
    // Well inside the slice: the wake-up woke the reader, it did not find the message at its next re-check.
    assert!(median < nerve_shm::WAIT_SLICE / 2, "a reader woke {median:?} after the put (median)");
    assert!(ch.wait_for_newer(0, Duration::from_secs(1)));
}

#[test]
fn readers_and_writers_on_several_threads_see_only_whole_messages_in_order() {
    let dir = TestDir::new("threads");
    let ch = Channel::create("a", &config(&dir, 8, 512)).unwrap();
    let per_writer = 3000u64;
    let writers: Vec<_> = (0..2u64)
        .map(|id| {
            let mut w = ch.writer();
            std::thread::spawn(move || {
                for k in 0..per_writer {
                    w.put(&payload(id, k, 24 + (k as usize * 13) % 480)).unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = [ReadMode::Next, ReadMode::Newest]
        .into_iter()
        .map(|mode| {
            let mut r = ch.reader();
            std::thread::spawn(move || {
                let mut buf = [0u8; 512];
                let (mut last_seq, mut got) = (0u64, 0u64);
                let mut last_counter = [None::<u64>; 2];
                let deadline = Instant::now() + Duration::from_secs(60);
                while last_seq < 2 * per_writer && Instant::now() < deadline {
                    match r.get(&mut buf, mode, Wait::Timeout(Duration::from_millis(200))).unwrap() {
                        GetOutcome::Message(info) => {
                            assert!(info.seq > last_seq, "sequence went back");
                            let (id, counter) = check_payload(&buf[..info.len]).expect("torn message");
                            let prev = &mut last_counter[id as usize];
                            assert!(prev.is_none_or(|p| counter > p), "writer {id} went back");
                            *prev = Some(counter);
                            last_seq = info.seq;
                            got += 1;
                        }
                        GetOutcome::TimedOut | GetOutcome::Retry => {}
                        other => panic!("{other:?}"),
                    }
                }
                (last_seq, got)
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    for r in readers {
        let (last, got) = r.join().unwrap();
        assert_eq!(last, 2 * per_writer, "the newest message is always reachable");
        assert!(got > 0);
    }
}

#[test]
fn create_refuses_an_existing_channel_and_open_or_create_reuses_one_of_the_same_sizes() {
    let dir = TestDir::new("exists");
    let ch = Channel::create("a", &config(&dir, 8, 64)).unwrap();
    ch.writer().put(b"kept").unwrap();
    assert!(matches!(Channel::create("a", &config(&dir, 8, 64)), Err(ShmError::AlreadyExists { .. })));
    match Channel::create("a", &config(&dir, 16, 64)) {
        Err(ShmError::SizeMismatch { existing, requested, path }) => {
            assert_eq!((existing, requested), ((8, 64), (16, 64)));
            assert!(path.ends_with("nerve-a"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(Channel::open_or_create("a", &config(&dir, 8, 65)), Err(ShmError::SizeMismatch { .. })));
    let again = Channel::open_or_create("a", &config(&dir, 8, 64)).unwrap();
    assert_eq!(get(&mut again.reader(), ReadMode::Next).unwrap().1, b"kept");
    let fresh = Channel::open_or_create("b", &config(&dir, 2, 8)).unwrap();
    assert_eq!((fresh.frames(), fresh.frame_size()), (2, 8));
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn open_reports_a_missing_channel_and_bad_names() {
    let dir = TestDir::new("missing");
    assert!(
        matches!(Channel::open("nope", Some(dir.path())), Err(ShmError::NotFound { path }) if path.ends_with("nerve-nope"))
    );
    for name in ["", "a/b", "..", "x\0y"] {
        assert!(matches!(Channel::open(name, Some(dir.path())), Err(ShmError::InvalidName { .. })), "{name:?}");
    }
    assert!(matches!(Channel::create("a", &config(&dir, 1, 64)), Err(ShmError::InvalidConfig { .. })));
    assert!(matches!(Channel::create("a", &config(&dir, 4, 0)), Err(ShmError::InvalidConfig { .. })));
    assert!(matches!(Channel::create("a", &config(&dir, 4, 8).mode(0o7777)), Err(ShmError::InvalidConfig { .. })));
}

#[test]
fn foreign_old_and_truncated_files_are_refused_with_clear_errors() {
    let dir = TestDir::new("foreign");
    let path = |n: &str| dir.path().join(format!("nerve-{n}"));
    std::fs::write(path("foreign"), b"PK\x03\x04 this is a zip file, not a channel, and it is long enough......")
        .unwrap();
    let err = Channel::open("foreign", Some(dir.path())).unwrap_err();
    assert!(matches!(err, ShmError::NotAChannel { .. }), "{err}");
    assert!(err.to_string().contains("not a Nerve channel"), "{err}");

    std::fs::write(path("empty"), b"").unwrap();
    assert!(matches!(Channel::open("empty", Some(dir.path())), Err(ShmError::Truncated { len: 0, .. })));

    Channel::create("old", &config(&dir, 4, 64)).unwrap();
    let f = OpenOptions::new().write(true).open(path("old")).unwrap();
    f.write_all_at(&(VERSION + 1).to_ne_bytes(), 8).unwrap();
    let err = Channel::open("old", Some(dir.path())).unwrap_err();
    assert!(matches!(err, ShmError::UnsupportedVersion { found, .. } if found == VERSION + 1), "{err}");

    Channel::create("short", &config(&dir, 4, 64)).unwrap();
    let f = OpenOptions::new().write(true).open(path("short")).unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len(len - 1).unwrap();
    let err = Channel::open("short", Some(dir.path())).unwrap_err();
    assert!(matches!(err, ShmError::Truncated { needed, .. } if needed == len), "{err}");

    Channel::create("sizes", &config(&dir, 4, 64)).unwrap();
    let f = OpenOptions::new().write(true).open(path("sizes")).unwrap();
    f.write_all_at(&1u64.to_ne_bytes(), 16).unwrap();
    assert!(matches!(Channel::open("sizes", Some(dir.path())), Err(ShmError::Corrupt { .. })));

    std::fs::create_dir(path("adir")).unwrap();
    assert!(Channel::open("adir", Some(dir.path())).is_err());

    // All of them show up in a listing, each with its error; the good one with its stats.
    Channel::create("good", &config(&dir, 4, 64)).unwrap();
    let listed = Channel::list(Some(dir.path())).unwrap();
    let names: Vec<_> = listed.iter().map(|c| (c.name.as_str(), c.stats.is_ok())).collect();
    assert_eq!(
        names,
        [
            ("adir", false),
            ("empty", false),
            ("foreign", false),
            ("good", true),
            ("old", false),
            ("short", false),
            ("sizes", false)
        ]
    );
}

#[test]
fn a_corrupt_index_entry_is_an_error_not_an_out_of_bounds_read() {
    let dir = TestDir::new("corrupt");
    let ch = Channel::create("a", &config(&dir, 4, 64)).unwrap();
    ch.writer().put(b"fine").unwrap();
    // Entry of seq 1 is entry 1: at header (576) + one 64-byte entry; its `len` field is at +16.
    let f = OpenOptions::new().write(true).open(ch.path()).unwrap();
    f.write_all_at(&1_000_000u32.to_ne_bytes(), 576 + 64 + 16).unwrap();
    let mut buf = [0u8; 64];
    let err = ch.reader().get(&mut buf, ReadMode::Next, Wait::Poll).unwrap_err();
    assert!(matches!(err, ShmError::Corrupt { .. }), "{err}");
}

#[test]
fn list_stats_and_remove() {
    let dir = TestDir::new("list");
    let ch = Channel::create("pose", &config(&dir, 10, 100)).unwrap();
    Channel::create("image", &config(&dir, 2, 1000).mode(0o640)).unwrap();
    std::fs::write(dir.path().join("unrelated"), b"x").unwrap();
    let mut w = ch.writer();
    let _r1 = ch.reader();
    let _r2 = ch.reader_from_oldest();
    for _ in 0..3 {
        w.put(b"abc").unwrap();
    }
    let s = ch.stats();
    assert_eq!((s.frames, s.frame_size, s.data_bytes), (10, 100, 10 * 104));
    assert_eq!((s.messages, s.writer_opens, s.reader_opens, s.recoveries), (3, 1, 2, 0));
    assert_eq!(s.mode, 0o600);
    assert!(s.created_utime > 0);
    let listed = Channel::list(Some(dir.path())).unwrap();
    let names: Vec<_> = listed.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["image", "pose"]);
    assert_eq!(listed[0].stats.as_ref().unwrap().mode, 0o640);
    assert_eq!(listed[1].stats.as_ref().unwrap().messages, 3);

    Channel::remove("pose", Some(dir.path())).unwrap();
    assert!(matches!(Channel::open("pose", Some(dir.path())), Err(ShmError::NotFound { .. })));
    // A process that has it open keeps working on it.
    w.put(b"still").unwrap();
    assert_eq!(ch.newest_seq(), 4);
    assert!(matches!(Channel::remove("pose", Some(dir.path())), Err(ShmError::NotFound { .. })));
    assert_eq!(Channel::list(Some(dir.path())).unwrap().len(), 1);
}

#[test]
fn modes_are_set_exactly_and_chmod_works() {
    let dir = TestDir::new("mode");
    let ch = Channel::create("a", &config(&dir, 4, 64)).unwrap();
    assert_eq!(std::fs::metadata(ch.path()).unwrap().permissions().mode() & 0o777, 0o600);
    let ch = Channel::create("b", &config(&dir, 4, 64).mode(0o666)).unwrap();
    assert_eq!(std::fs::metadata(ch.path()).unwrap().permissions().mode() & 0o777, 0o666, "umask must not apply");
    Channel::set_mode("b", Some(dir.path()), 0o660).unwrap();
    assert_eq!(ch.stats().mode, 0o660);
    assert!(matches!(Channel::set_mode("zz", Some(dir.path()), 0o600), Err(ShmError::NotFound { .. })));
}

/// As root, file modes do not stop us: the check runs in a child process that drops to user `nobody`.
#[test]
fn a_process_without_access_gets_permission_denied_with_the_path() {
    let dir = TestDir::new("perm");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    Channel::create("secret", &config(&dir, 4, 64)).unwrap();
    Channel::create("open", &config(&dir, 4, 64).mode(0o666)).unwrap();
    let me = std::fs::metadata(dir.path()).unwrap().uid();
    if me != 0 {
        // Not root: drop the owner's access instead and check in this process.
        Channel::set_mode("secret", Some(dir.path()), 0).unwrap();
        let err = Channel::open("secret", Some(dir.path())).unwrap_err();
        assert!(matches!(err, ShmError::PermissionDenied { ref path, .. } if path.ends_with("nerve-secret")), "{err}");
        return;
    }
    use std::os::unix::process::CommandExt;
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "permission_child", "--nocapture", "--test-threads=1"])
        .env("NERVE_SHM_PERMISSION_CHILD", dir.path())
        .uid(65534)
        .gid(65534)
        .stdout(std::process::Stdio::null())
        .status();
    match status {
        Ok(s) => assert!(s.success(), "the child as nobody failed: {s}"),
        // The test binary is not reachable by `nobody` (a private target directory): check the mode bits only.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!("note: cannot run the test binary as nobody ({e}); checked the mode bits only");
            let secret = Channel::open("secret", Some(dir.path())).unwrap();
            assert_eq!(secret.stats().mode, 0o600);
        }
        Err(e) => panic!("cannot start the child as nobody: {e}"),
    }
}

/// The child half of the test above (does nothing unless started by it).
#[test]
fn permission_child() {
    let Some(dir) = std::env::var_os("NERVE_SHM_PERMISSION_CHILD") else { return };
    let dir = std::path::Path::new(&dir);
    let err = Channel::open("secret", Some(dir)).unwrap_err();
    assert!(matches!(err, ShmError::PermissionDenied { ref path, .. } if path.ends_with("nerve-secret")), "{err}");
    assert!(err.to_string().contains("permission denied"), "{err}");
    let ch = Channel::open("open", Some(dir)).unwrap();
    ch.writer().put(b"from nobody").unwrap();
    assert_eq!(ch.newest_seq(), 1);
}

/// A tiny hand-written LCM type: `struct point_t { int64_t id; double x; }`.
#[derive(Debug, Clone, PartialEq, Default)]
struct Point {
    id: i64,
    x: f64,
}

impl nerve_codec::Encode for Point {
    fn encoded_body_size(&self) -> usize {
        16
    }
    fn encode_body(&self, w: &mut nerve_codec::Writer<'_>) -> Result<(), nerve_codec::EncodeError> {
        w.put_i64(self.id)?;
        w.put_f64(self.x)
    }
}

impl nerve_codec::Decode for Point {
    fn decode_body(r: &mut nerve_codec::Reader<'_>) -> Result<Self, nerve_codec::DecodeError> {
        Ok(Point { id: r.get_i64()?, x: r.get_f64()? })
    }
}

impl nerve_codec::Message for Point {
    const FINGERPRINT: u64 = 0x1234_5678_9abc_def0;
    const TYPE_NAME: &'static str = "test.point_t";
}

#[test]
fn typed_channels_encode_in_place_and_refuse_other_types() {
    let dir = TestDir::new("typed");
    let ch = Channel::create("points", &config(&dir, 4, 64)).unwrap();
    let mut w = nerve_shm::TypedWriter::<Point>::new(ch.writer());
    let mut r = nerve_shm::TypedReader::<Point>::new(ch.reader());
    w.put(&Point { id: 7, x: 1.5 }).unwrap();
    let (info, p) = r.get(ReadMode::Next, Wait::Poll).unwrap().message().unwrap();
    assert_eq!((info.seq, info.len, p), (1, 24, Point { id: 7, x: 1.5 }));
    w.put(&Point { id: 8, x: -2.0 }).unwrap();
    let mut reused = Point::default();
    let info = r.get_into(&mut reused, ReadMode::Next, Wait::Poll).unwrap().message().unwrap();
    assert_eq!((info.seq, reused), (2, Point { id: 8, x: -2.0 }));
    // Raw bytes that are not a point_t: a decode error naming the message, and the reader moves on.
    w.writer().put(b"not a point").unwrap();
    assert!(matches!(r.get(ReadMode::Next, Wait::Poll), Err(ShmError::Decode { seq: 3, .. })));
    assert_eq!(r.get(ReadMode::Next, Wait::Poll).unwrap(), GetOutcome::NothingNew);
}

#[test]
fn wait_any_sleeps_on_several_channels_and_names_the_one_that_got_a_message() {
    let dir = TestDir::new("waitany");
    let chans: Vec<_> = (0..3).map(|k| Channel::create(&format!("c{k}"), &config(&dir, 4, 64)).unwrap()).collect();
    chans[0].writer().put(b"old").unwrap();
    // Already newer: returns at once.
    let pairs: Vec<_> = chans.iter().map(|c| (c, 0)).collect();
    assert_eq!(Channel::wait_any(&pairs, Duration::from_secs(5)), Some(0));
    // Nothing newer: times out after a bounded time.
    let pairs: Vec<_> = chans.iter().map(|c| (c, c.newest_seq())).collect();
    let t0 = Instant::now();
    assert_eq!(Channel::wait_any(&pairs, Duration::from_millis(50)), None);
    assert!(t0.elapsed() >= Duration::from_millis(50) && t0.elapsed() < Duration::from_secs(10));
    // A put on the third channel wakes the waiter, well inside a slice (see median_wake_latency).
    let median = median_wake_latency(&chans[2], WAKE_ROUNDS, |_| {
        let pairs: Vec<_> = chans.iter().map(|c| (c, c.newest_seq())).collect();
        assert_eq!(Channel::wait_any(&pairs, Duration::from_secs(20)), Some(2));
        Instant::now()
    });
    assert!(median < nerve_shm::WAIT_SLICE / 2, "wait_any woke {median:?} after the put (median)");
    assert!(chans.iter().all(|c| c.stats().waiting_readers == 0));
    assert_eq!(Channel::wait_any(&[], Duration::from_millis(1)), None);
}

#[test]
fn listing_a_missing_directory_is_an_io_error_naming_it() {
    let dir = TestDir::new("nodir");
    let missing = dir.path().join("absent");
    let err = Channel::list(Some(&missing)).unwrap_err();
    assert!(matches!(err, ShmError::Io { ref path, .. } if *path == missing), "{err}");
}

#[test]
fn wake_readers_ends_an_interruptible_wait_at_once() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = TestDir::new("interrupt");
    let ch = Channel::create("a", &config(&dir, 4, 64)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (ch2, stop2) = (ch.clone(), Arc::clone(&stop));
    let waiter = std::thread::spawn(move || {
        let mut r = ch2.reader();
        let mut buf = [0u8; 64];
        r.get_interruptible(&mut buf, ReadMode::Next, Wait::Forever, || stop2.load(Ordering::SeqCst)).unwrap()
    });
    // Let it sleep through a few wait slices first: a wait without a deadline goes on until it is interrupted.
    std::thread::sleep(Duration::from_millis(100));
    assert!(!waiter.is_finished(), "a wait with no deadline ended by itself");
    stop.store(true, Ordering::SeqCst);
    ch.wake_readers();
    assert_eq!(waiter.join().unwrap(), GetOutcome::TimedOut);

    // A message that is there is returned whatever the check says; a poll is not a wait and is never interrupted.
    let mut r = ch.reader_after_newest();
    let mut buf = [0u8; 64];
    assert_eq!(r.get_interruptible(&mut buf, ReadMode::Next, Wait::Poll, || true).unwrap(), GetOutcome::NothingNew);
    ch.writer().put(b"x").unwrap();
    let got = r.get_interruptible(&mut buf, ReadMode::Next, Wait::Forever, || true).unwrap();
    assert!(matches!(got, GetOutcome::Message(info) if info.len == 1));
}

#[test]
fn a_channel_hands_out_its_file_descriptor() {
    use std::os::fd::AsRawFd;
    let dir = TestDir::new("fd");
    let ch = Channel::create("a", &config(&dir, 4, 64)).unwrap();
    let fd = ch.as_raw_fd();
    // The same file (it was made under a temporary name and linked, so compare inodes, not names).
    let by_fd = std::fs::metadata(format!("/proc/self/fd/{fd}")).unwrap();
    assert_eq!(by_fd.ino(), std::fs::metadata(ch.path()).unwrap().ino());
}
