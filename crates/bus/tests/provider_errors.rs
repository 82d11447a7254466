//! Errors a real provider meets after start reach the user through the API, never stderr: an shm channel file
//! that cannot be read (not a channel) comes back from the next `handle_timeout` and in `Bus::health()`, while the
//! channels that can be read go on being read.

use std::time::Duration;

use nerve_bus::{Bus, BusError};

#[test]
fn an_unreadable_shm_channel_is_an_error_from_handle_and_in_health() {
    let dir = tempfile::Builder::new().prefix("nerve-bus-provider-errors-").tempdir().unwrap();
    // A file where the channel BROKEN's file would be, that is not a channel.
    std::fs::write(dir.path().join("nerve-BROKEN"), vec![0x55u8; 4096]).unwrap();
    let url = format!("shm://?dir={}&frames=8&frame_size=1024", dir.path().display());
    let bus = Bus::new(Some(&url)).unwrap();
    let sub = bus.subscribe_raw(".*", |_| {}).unwrap();

    let e = bus.handle_timeout(Duration::from_secs(5)).unwrap_err();
    assert!(matches!(e, BusError::Transport { provider: "shm", .. }), "{e:?}");
    let chain = format!("{e}: {}", std::error::Error::source(&e).unwrap());
    assert!(chain.contains("BROKEN"), "{chain}");
    let health = bus.health();
    assert_eq!(health.transport_errors, 1, "reported once: {health:?}");
    assert!(!health.receive_stopped);
    assert!(health.last_error.unwrap().contains("BROKEN"));

    // Other channels are still read: another bus (another writer origin) publishes on GOOD.
    let other = Bus::new(Some(&url)).unwrap();
    other.publish_raw("GOOD", b"x").unwrap();
    assert!(bus.handle_timeout(Duration::from_secs(5)).unwrap(), "GOOD arrives");
    assert_eq!(bus.stats(&sub).unwrap().delivered, 1);
}
