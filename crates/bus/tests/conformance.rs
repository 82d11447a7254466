//! The provider conformance suite (`nerve_bus::conformance`, feature `test-support`), run over every built-in
//! provider (inproc and memq in-process, udpm and mpudpm over real loopback multicast, shm over channel files in a
//! scratch directory), each keyed by a constructor of fresh buses, as a provider in another crate runs it. (A bus
//! delivers its own publications in-process; what crosses each transport between processes is tested in the
//! provider's own suite.)

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_bus::Bus;

static NEXT_PORT: AtomicU16 = AtomicU16::new(0);

/// A fresh bus per test; udpm tests each get their own port so they never hear each other.
fn bus(provider: &str) -> Bus {
    let url = match provider {
        "memq" => "memq://".to_owned(),
        // inproc:// buses of one name are shared process-wide: a name per test.
        "inproc" => format!("inproc://conformance-{}", NEXT_PORT.fetch_add(1, Ordering::Relaxed)),
        "udpm" => {
            // Ten ports per test process, in a block chosen by the process id.
            let port = 20000 + (std::process::id() % 4000) as u16 * 10 + NEXT_PORT.fetch_add(1, Ordering::Relaxed) % 10;
            format!("udpm://239.255.76.68:{port}?ttl=0&recv_buf_size=2097152")
        }
        "mpudpm" => {
            // A block of 16 ports per test.
            let port =
                10000 + (std::process::id() % 500) as u16 * 100 + (NEXT_PORT.fetch_add(1, Ordering::Relaxed) % 6) * 16;
            format!("mpudpm://239.255.76.71:{port}?ttl=0&nports=16&recv_buf_size=2097152")
        }
        "shm" => {
            // A channel directory per test (cargo's scratch directory for integration tests), emptied first.
            let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
                "conformance-shm-{}-{}",
                std::process::id(),
                NEXT_PORT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            format!("shm://?dir={}&frames=64&frame_size=4096", dir.display())
        }
        _ => unreachable!(),
    };
    Bus::new(Some(&url)).unwrap_or_else(|e| panic!("{url}: {e}"))
}

nerve_bus::conformance_suite!(inproc, || bus("inproc"));
nerve_bus::conformance_suite!(memq, || bus("memq"));
nerve_bus::conformance_suite!(udpm, || bus("udpm"));
nerve_bus::conformance_suite!(mpudpm, || bus("mpudpm"));
nerve_bus::conformance_suite!(shm, || bus("shm"));

/// The suite checks that an inline dispatcher runs callbacks off the dispatch thread; here, that each built-in
/// provider's is the thread it names.
#[test]
fn inline_dispatchers_run_callbacks_on_the_providers_receive_threads() {
    for (p, expected) in
        [("udpm", "nerve-udpm-rx"), ("mpudpm", "nerve-mpudpm-rx"), ("shm", "nerve-shm-"), ("memq", "nerve-dispatch")]
    {
        let bus = bus(p);
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let s = Arc::clone(&seen);
        bus.subscribe_raw("T", move |_| {
            s.lock().unwrap().push(std::thread::current().name().unwrap_or("?").to_owned())
        })
        .unwrap();
        let dispatcher = bus.spawn_dispatcher().unwrap();
        assert_eq!(dispatcher.is_inline(), p != "memq");
        bus.publish_raw("T", &[1]).unwrap();
        let end = Instant::now() + Duration::from_secs(5);
        while seen.lock().unwrap().is_empty() {
            assert!(Instant::now() < end, "{p}: not handled");
            std::thread::sleep(Duration::from_millis(2));
        }
        // shm: a channel's receive thread, or the thread that watches the directory for new channels.
        assert!(seen.lock().unwrap().iter().all(|t| t.starts_with(expected)), "{p}: {seen:?}");
    }
}
