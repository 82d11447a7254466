//! Generated types on the bus: a `LaserT` published by one bus arrives typed at another over real loopback
//! multicast; an `ImageT` on the same channel reaches a `LaserT` subscription as a type error, not a garbage value;
//! and views read the received bytes without decoding.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_bus::{Bus, TypeError};
use nerve_codec::Message;
use nerve_example_pubsub::lcmtypes::exlcm::{ImageT, LaserT, LaserTView};

#[test]
fn generated_types_travel_typed() {
    let url = format!("udpm://239.255.76.76:{}?ttl=0", 30000 + std::process::id() % 30000);
    let (a, b) = (Bus::new(Some(&url)).unwrap(), Bus::new(Some(&url)).unwrap());
    let got: Arc<Mutex<Vec<Result<LaserT, TypeError>>>> = Arc::default();
    let g = Arc::clone(&got);
    let sub = b
        .subscribe::<LaserT>("SCAN", move |m, scan| {
            if let Ok(s) = &scan {
                // The view over the raw bytes agrees with the decoded value.
                let v = LaserTView::new(&m.data).unwrap();
                assert_eq!(v.utime().unwrap(), s.utime);
                assert_eq!(v.ranges().unwrap().len(), s.ranges.len());
            }
            g.lock().unwrap().push(scan);
        })
        .unwrap();
    let scan = LaserT { utime: 42, nranges: 3, ranges: vec![1.0, 2.0, f32::INFINITY], rad0: -1.5, radstep: 0.01 };
    a.publish("SCAN", &scan).unwrap();
    a.publish("SCAN", &ImageT { utime: 1, width: 1, height: 1, pixelformat: 0, size: 1, data: vec![7] }).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.lock().unwrap().len() < 2 && Instant::now() < deadline {
        b.handle_timeout(Duration::from_millis(100)).unwrap();
    }
    let got = got.lock().unwrap();
    assert_eq!(got[0], Ok(scan));
    assert!(
        matches!(got[1], Err(TypeError::WrongType { found: Some(f), .. }) if f == ImageT::FINGERPRINT),
        "{:?}",
        got[1]
    );
    assert_eq!(b.stats(&sub).unwrap().decode_errors, 1);
}
