//! The echo suite's client role (`bench/`: `lcm_echo client`, and `nerve-bench echo-client` on this bus) as a
//! program of its own, small enough to cross-build for Windows: tests/interop/test_windows.py runs it under Wine
//! against the real LCM's echo source on Linux for a smoke figure.
//!
//! `echo_client URL REQ REP MAX_MS`: subscribes to REQ, prints "ready", and republishes every message on REP from a
//! dispatcher (on udpm, the receive thread), until a message shorter than 16 bytes (stop) or MAX_MS.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nerve_bus::Bus;

fn run(url: &str, req: &str, rep: &str, max_ms: u64) -> Result<(), String> {
    let bus = Bus::new(Some(url)).map_err(|e| format!("open {url}: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let (b, s, rep) = (bus.clone(), Arc::clone(&stop), rep.to_string());
    let _sub = bus
        .subscribe_raw(req, move |m| {
            if m.data.len() < 16 {
                s.store(true, Ordering::Relaxed);
            } else {
                let _ = b.publish_raw(&rep, &m.data);
            }
        })
        .map_err(|e| format!("subscribe {req}: {e}"))?;
    let _dispatcher = bus.spawn_dispatcher().map_err(|e| format!("dispatcher: {e}"))?;
    println!("ready");
    let deadline = Instant::now() + Duration::from_millis(max_ms);
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, req, rep, max_ms] = args.as_slice() else {
        eprintln!("usage: echo_client URL REQ REP MAX_MS");
        return ExitCode::from(2);
    };
    let Ok(max_ms) = max_ms.parse() else {
        eprintln!("echo_client: MAX_MS {max_ms:?} is not a number of milliseconds");
        return ExitCode::from(2);
    };
    match run(url, req, rep, max_ms) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo_client: {e}");
            ExitCode::FAILURE
        }
    }
}
