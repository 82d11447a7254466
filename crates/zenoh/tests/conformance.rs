//! The shared provider conformance suite over `zenoh://`: each bus a Zenoh peer with scouting off (so it meets no
//! other test's session) and a key prefix of its own.

use std::sync::atomic::{AtomicU32, Ordering};

use nerve_bus::Bus;

static NEXT: AtomicU32 = AtomicU32::new(0);

fn bus() -> Bus {
    nerve_zenoh::register();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let url =
        format!("zenoh://?mode=peer&scouting=off&listen=tcp/127.0.0.1:0&prefix=conformance/{}/{n}", std::process::id());
    Bus::new(Some(&url)).unwrap_or_else(|e| panic!("{url}: {e}"))
}

nerve_bus::conformance_suite!(zenoh, bus);
