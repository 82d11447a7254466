//! The `shm://` provider under a hostile neighbour: a channel file truncated, removed and made anew, or replaced by a
//! rename over it, while a bus publishes on it and a bus reads it in this process. A truncate must not kill the
//! process (the mapping's SIGBUS is repaired by nerve-shm), the publication in progress fails with an error, and
//! traffic flows again once the channel is made anew, on the reading bus and through the same publishing bus.

use std::path::Path;
use std::time::{Duration, Instant};

use nerve_bus::{Bus, Overflow};
use nerve_shm::{Channel, ChannelConfig};

fn bus(dir: &Path) -> Bus {
    Bus::new(Some(&format!("shm://?dir={}", dir.display()))).unwrap()
}

/// Publishes `data` until the subscriber gets it (the publisher may still be on the old file for up to its file
/// check interval); panics after 5 s.
fn publish_until_received(publisher: &Bus, sub: &nerve_bus::Subscriber, data: &[u8]) {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let _ = publisher.publish_raw("V", data);
        if let Some(m) = sub.recv_timeout(Duration::from_millis(50)) {
            if m.data == data {
                return;
            }
        }
        assert!(Instant::now() < end, "{:?} never came through", String::from_utf8_lossy(data));
    }
}

#[test]
fn a_truncated_channel_fails_the_publication_and_works_again_once_made_anew() {
    let dir = tempfile::tempdir().unwrap();
    let config = ChannelConfig::new(8, 256).dir(dir.path());
    Channel::create("V", &config).unwrap();
    let (a, b) = (bus(dir.path()), bus(dir.path()));
    let sub = b.subscriber("V", 100, Overflow::DropOldest).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    publish_until_received(&a, &sub, b"before");

    let path = nerve_shm::channel_path("V", Some(dir.path())).unwrap();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
    let err = a.publish_raw("V", b"into a truncated file").unwrap_err();
    let mut chain = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(e) = source {
        chain += &format!(": {e}");
        source = e.source();
    }
    assert!(chain.contains("channel file is 0 bytes") || chain.contains("shrank"), "{chain}");
    std::thread::sleep(Duration::from_millis(100)); // the receive thread touches the file and is repaired too

    Channel::remove("V", Some(dir.path())).unwrap();
    Channel::create("V", &config).unwrap();
    publish_until_received(&a, &sub, b"after it was made anew");
}

#[test]
fn a_channel_replaced_by_a_rename_over_it_is_followed_by_publisher_and_reader() {
    let dir = tempfile::tempdir().unwrap();
    let spare = tempfile::tempdir().unwrap();
    Channel::create("V", &ChannelConfig::new(8, 256).dir(dir.path())).unwrap();
    let (a, b) = (bus(dir.path()), bus(dir.path()));
    let sub = b.subscriber("V", 100, Overflow::DropOldest).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    publish_until_received(&a, &sub, b"before");

    drop(Channel::create("V", &ChannelConfig::new(4, 512).dir(spare.path())).unwrap());
    let new = nerve_shm::channel_path("V", Some(spare.path())).unwrap();
    std::fs::rename(new, nerve_shm::channel_path("V", Some(dir.path())).unwrap()).unwrap();
    // Longer than the publisher's file check interval, and than the reader's move to the new file: the message
    // must then go through the new file.
    std::thread::sleep(Duration::from_millis(300));
    publish_until_received(&a, &sub, b"on the file renamed over the old one");
    let channel = Channel::open("V", Some(dir.path())).unwrap();
    assert_eq!(channel.frames(), 4, "the publisher wrote its message into the new file");
    assert!(channel.newest_seq() >= 1);
}
