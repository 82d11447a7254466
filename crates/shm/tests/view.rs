//! Views (`Reader::view`): a message kept as a view of its frame in shared memory stays valid while no writer has
//! reclaimed the frame, reports `Overwritten` once one has (and for ever after), never passes a check over torn
//! bytes while a writer races it, outlives its reader and channel handle, and unmaps the channel when dropped.

#![cfg(not(loom))]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{check_payload, payload, TestDir};
use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Reader, View, Wait};

fn view(reader: &mut Reader, mode: ReadMode) -> View {
    match reader.view(mode, Wait::Poll).unwrap() {
        GetOutcome::Message(v) => v,
        other => panic!("expected a message, got {other:?}"),
    }
}

#[test]
fn a_view_is_the_message_in_place_and_stays_valid_while_its_frame_is_kept() {
    let dir = TestDir::new("view-valid");
    // 4 frames of 1 KiB: the data ring is 4 KiB, so three more 1 KiB puts leave the first frame alone.
    let ch = Channel::create("v", &ChannelConfig::new(4, 1024).dir(dir.path())).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader();
    let first = payload(1, 1, 1024);
    w.put(&first).unwrap();
    let v = view(&mut r, ReadMode::Next);
    assert_eq!((v.seq(), v.len(), v.info().missed, v.info().origin), (1, 1024, 0, w.origin()));
    assert_eq!(v.bytes(), &first[..]);
    assert_eq!(v.bytes().as_ptr() as usize % 8, 0, "frames are 8-aligned");
    for k in 2..=4 {
        w.put(&payload(1, k, 1024)).unwrap();
    }
    assert!(v.still_valid());
    v.check().unwrap();
    assert_eq!(v.to_vec().unwrap(), first);
    assert_eq!(v.read(check_payload).unwrap(), Some((1, 1)));
    // Several views at once, in order, each its own message.
    let (a, b) = (view(&mut r, ReadMode::Next), view(&mut r, ReadMode::Next));
    assert_eq!((a.seq(), b.seq()), (2, 3));
    assert_eq!((check_payload(a.bytes()), check_payload(b.bytes())), (Some((1, 2)), Some((1, 3))));
    assert!(matches!(r.view(ReadMode::Newest, Wait::Poll).unwrap(), GetOutcome::Message(n) if n.seq() == 4));
    assert!(matches!(r.view(ReadMode::Next, Wait::Poll).unwrap(), GetOutcome::NothingNew));
    assert!(matches!(r.view(ReadMode::Next, Wait::Timeout(Duration::from_millis(10))).unwrap(), GetOutcome::TimedOut));
    assert!(a.check().is_ok() && b.check().is_ok() && v.check().is_ok());
    // An empty message is a view too.
    w.put(&[]).unwrap();
    let e = view(&mut r, ReadMode::Next);
    assert!(e.is_empty() && e.bytes().is_empty() && e.check().is_ok());
}

#[test]
fn once_the_writer_wraps_the_ring_the_view_reports_overwritten_for_ever() {
    let dir = TestDir::new("view-wrap");
    let ch = Channel::create("v", &ChannelConfig::new(4, 1024).dir(dir.path())).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader();
    w.put(&payload(1, 1, 1024)).unwrap();
    let older = view(&mut r, ReadMode::Next);
    assert_eq!(older.seq(), 1);
    // Three more frames fit beside it; the fourth put reuses its bytes. The writer never waits for the view.
    for k in 2..=4 {
        w.put(&payload(1, k, 1024)).unwrap();
        assert!(older.still_valid(), "put {k} left the frame alone");
    }
    let started = Instant::now();
    w.put(&payload(1, 5, 1024)).unwrap();
    assert!(started.elapsed() < Duration::from_secs(1), "a writer does not wait for a view");
    assert!(!older.still_valid());
    let err = older.check().unwrap_err();
    assert_eq!((err.seq(), err.file_shrank()), (1, false));
    assert!(err.to_string().contains("message 1 was overwritten"), "{err}");
    assert_eq!(older.to_vec(), Err(err));
    let mut ran = false;
    assert!(older.read(|_| ran = true).is_err());
    assert!(!ran, "read does not run over a frame already reclaimed");
    // The bytes in place are now the newer message's: never reported as the old one's.
    assert_eq!(check_payload(older.bytes()), Some((1, 5)));
    for k in 6..20 {
        w.put(&payload(1, k, 64)).unwrap();
        assert!(older.check().is_err(), "still overwritten after put {k}");
    }
    assert!(format!("{older:?}").contains("still_valid: false"));
}

#[test]
fn a_view_outlives_its_reader_and_channel_and_dropping_it_unmaps_the_channel() {
    let dir = TestDir::new("view-drop");
    let ch = Channel::create("v", &ChannelConfig::new(4, 256).dir(dir.path())).unwrap();
    // The mapping is found by the file's inode (/proc names it by the temporary name it was made under).
    let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(ch.path()).unwrap()).to_string();
    let mapped = || {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines().any(|l| l.split_whitespace().nth(4) == Some(inode.as_str()))
    };
    let mut w = ch.writer();
    w.put(&payload(2, 7, 200)).unwrap();
    let mut r = ch.reader();
    let mut r2 = ch.reader();
    let v = view(&mut r, ReadMode::Next);
    drop((w, r, ch));
    assert!(mapped(), "the view keeps the mapping");
    assert_eq!(v.read(check_payload).unwrap(), Some((2, 7)));
    let v2 = view(&mut r2, ReadMode::Next);
    drop(r2);
    drop(v);
    assert!(mapped(), "the other view still keeps it");
    assert_eq!(check_payload(v2.bytes()), Some((2, 7)));
    drop(v2);
    assert!(!mapped(), "dropping the last view released the mapping");
}

#[test]
fn a_view_on_a_channel_with_checksums_is_validated_when_taken() {
    let dir = TestDir::new("view-sum");
    let ch = Channel::create("v", &ChannelConfig::new(4, 512).checksum(true).dir(dir.path())).unwrap();
    let mut w = ch.writer();
    let mut r = ch.reader();
    w.put(&payload(3, 1, 500)).unwrap();
    let v = view(&mut r, ReadMode::Newest);
    assert_eq!(v.read(check_payload).unwrap(), Some((3, 1)));
    assert_eq!(r.corrupt_frames(), 0);
}

/// A writer puts self-checking frames as fast as it can into a ring of two frames while the reader takes views,
/// lets a varying time pass, then reads them: every read that the view's check passes is intact, and both outcomes
/// happen (the race is real).
#[test]
fn a_racing_writer_never_gets_a_torn_frame_past_the_check() {
    let dir = TestDir::new("view-race");
    let ch = Channel::create("v", &ChannelConfig::new(2, 4096).dir(dir.path())).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (mut w, stop) = (ch.writer(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut k = 0u64;
            while !stop.load(Ordering::Relaxed) && k < 50_000_000 {
                k += 1;
                w.put(&payload(9, k, 24 + (k as usize * 8) % 4072)).unwrap();
            }
        })
    };
    let mut r = ch.reader();
    let (mut intact, mut overwritten, mut copies) = (0u64, 0u64, 0u64);
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut buf = vec![0u8; 4096];
    for i in 0..200_000u64 {
        if Instant::now() > deadline && intact.min(copies).min(overwritten) > 20 {
            break;
        }
        let v = match r.view(ReadMode::Newest, Wait::Timeout(Duration::from_millis(100))).unwrap() {
            GetOutcome::Message(v) => v,
            GetOutcome::Retry | GetOutcome::TimedOut => continue,
            other => panic!("{other:?}"),
        };
        // From no delay to one long enough for the writer to go round the ring several times.
        if i % 4 == 3 {
            std::thread::sleep(Duration::from_micros(50));
        } else {
            for _ in 0..i % 64 {
                std::hint::spin_loop();
            }
        }
        if i % 2 == 0 {
            match v.read(check_payload) {
                Ok(got) => {
                    assert!(got.is_some(), "a torn frame passed the check (message {})", v.seq());
                    intact += 1;
                }
                Err(e) => {
                    assert_eq!(e.seq(), v.seq());
                    overwritten += 1;
                }
            }
        } else {
            // The documented rule with the bytes in place: copy, then check; a passing check vouches for the copy.
            let n = v.len();
            buf[..n].copy_from_slice(v.bytes());
            if v.check().is_ok() {
                assert!(check_payload(&buf[..n]).is_some(), "a torn copy passed the check (message {})", v.seq());
                copies += 1;
            } else {
                overwritten += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    eprintln!("views: {intact} read intact, {copies} copies intact, {overwritten} reported overwritten");
    assert!(intact > 0 && copies > 0, "some views were read intact");
    assert!(overwritten > 0, "some views were overwritten under the reader");
}
