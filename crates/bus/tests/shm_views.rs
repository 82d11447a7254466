//! View subscriptions over shm (`Shm::subscribe_views`): the handler gets each message as a view of its frame in
//! the channel's mapping (no copy), and a writer lapping a slow handler never waits: the view the handler kept
//! reports `Overwritten`, the messages overwritten before they were read are counted lost, and the newest arrives
//! intact.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use nerve_bus::provider::shm::{encode_channel, Shm, ShmConfig};
use nerve_shm::{Channel, ChannelConfig, View};

/// Whether `p` lies in a mapping of the file with inode `inode` in this process.
fn in_mapping_of(p: *const u8, inode: u64) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (lo, hi) = f[0].split_once('-').unwrap();
        let (lo, hi) = (usize::from_str_radix(lo, 16).unwrap(), usize::from_str_radix(hi, 16).unwrap());
        f.get(4).and_then(|i| i.parse::<u64>().ok()) == Some(inode) && (lo..hi).contains(&(p as usize))
    })
}

fn config(dir: &std::path::Path) -> ShmConfig {
    ShmConfig { dir: Some(dir.to_path_buf()), ..ShmConfig::default() }
}

#[test]
fn a_view_subscription_hands_over_the_frame_in_place() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let ch =
        Channel::open_or_create(&encode_channel("cam/left"), &ChannelConfig::new(4, 1 << 20).dir(dir.path())).unwrap();
    let (tx, rx) = mpsc::channel::<(String, View)>();
    let sub = Shm::subscribe_views(config(dir.path()), "cam/.*", move |channel, view| {
        tx.send((channel.to_owned(), view)).unwrap();
    })
    .unwrap();
    let frame: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    ch.writer().put(&frame).unwrap();
    let (channel, view) = rx.recv_timeout(Duration::from_secs(10)).expect("the message");
    assert_eq!(channel, "cam/left");
    let inode = std::fs::metadata(dir.path().join(format!("nerve-{}", encode_channel("cam/left")))).unwrap().ino();
    assert!(in_mapping_of(view.bytes().as_ptr(), inode), "the view's bytes are the channel file's, not a copy");
    assert_eq!(view.read(|b| b == &frame[..]), Ok(true));
    assert_eq!(sub.stats().received, 1);
    assert!(sub.take_errors().is_empty());
}

#[test]
fn a_writer_lapping_a_slow_handler_never_waits_and_the_view_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let ch = Channel::open_or_create("pose", &ChannelConfig::new(4, 64).dir(dir.path())).unwrap();
    let (tx, rx) = mpsc::channel::<(u64, bool, View)>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let sub = Shm::subscribe_views(config(dir.path()), "pose", move |_, view| {
        if view.seq() == 1 {
            // A slow handler: it holds the first view while the writer laps the ring several times.
            go_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        }
        tx.send((view.seq(), view.still_valid(), view)).unwrap();
    })
    .unwrap();
    let mut w = ch.writer();
    // Whole frames, so that each put reclaims the oldest frame's bytes (smaller messages share the data ring).
    let message = |i: u64| {
        let mut m = [0u8; 64];
        m[..8].copy_from_slice(&i.to_le_bytes());
        m
    };
    w.put(&message(1)).unwrap();
    std::thread::sleep(Duration::from_millis(200)); // the handler is holding message 1 now
    let t = Instant::now();
    for i in 2..=20u64 {
        w.put(&message(i)).unwrap();
    }
    let took = t.elapsed();
    assert!(took < Duration::from_millis(100), "the writer waited for the handler: 19 puts took {took:?}");
    go_tx.send(()).unwrap();

    let (seq, valid, first) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(seq, 1);
    assert!(!valid, "message 1's frame was overwritten while the handler held it");
    let e = first.check().unwrap_err();
    assert_eq!(e.seq(), 1);
    assert!(!e.file_shrank());
    assert!(first.to_vec().is_err(), "an overwritten view gives no bytes");

    // Then the messages still in the ring, in order, each intact when handed over; the newest is among them.
    let mut seen = Vec::new();
    while let Ok((seq, valid, view)) = rx.recv_timeout(Duration::from_secs(2)) {
        assert!(valid, "message {seq} was intact when handed over");
        assert_eq!(view.read(|b| u64::from_le_bytes(b[..8].try_into().unwrap())), Ok(seq));
        seen.push(seq);
        if seq == 20 {
            break;
        }
    }
    assert_eq!(seen.last(), Some(&20), "the newest message arrives: {seen:?}");
    assert!(seen.windows(2).all(|p| p[0] < p[1]), "in order: {seen:?}");
    let stats = sub.stats();
    assert_eq!(stats.received + stats.lost, 20, "every message is received or counted lost: {stats:?}");
    assert!(stats.lost >= 20 - 1 - 4, "the lapped messages are counted lost: {stats:?}");
}

#[test]
fn a_bad_pattern_or_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(Shm::subscribe_views(config(dir.path()), "(", |_, _| {}), Err(nerve_bus::BusError::Pattern(_))));
    assert!(matches!(
        Shm::subscribe_views(config(&dir.path().join("missing")), ".*", |_, _| {}),
        Err(nerve_bus::BusError::Config { .. })
    ));
}
