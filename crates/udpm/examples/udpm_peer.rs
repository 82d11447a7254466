//! A minimal udpm peer, portable to every system the crate builds for: publishes or receives raw payloads, so a
//! build for another system (Windows under Wine, say) can be checked against a Linux Nerve or the real LCM.
//!
//! `udpm_peer pub URL CHANNEL COUNT`: sends COUNT messages `hello N` on CHANNEL, one every 50 ms.
//! `udpm_peer sub URL CHANNEL COUNT SECONDS`: prints each message on CHANNEL (`CHANNEL payload`) until COUNT have
//! come or SECONDS have passed; exits 1 if fewer came.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use nerve_udpm::{Config, Receiver, Sender};

fn run(args: &[String]) -> Result<bool, String> {
    let usage = "usage: udpm_peer pub URL CHANNEL COUNT | sub URL CHANNEL COUNT SECONDS";
    let (mode, url, channel) = match args {
        [m, u, c, ..] => (m.as_str(), u.as_str(), c.as_str()),
        _ => return Err(usage.into()),
    };
    let count: usize = args.get(3).and_then(|c| c.parse().ok()).ok_or(usage)?;
    let url = url.strip_prefix("udpm://").unwrap_or(url);
    let (group, query) = url.split_once('?').unwrap_or((url, ""));
    let opts: Vec<(String, String)> = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k.to_string(), v.to_string())
        })
        .collect();
    let config = Config::from_url_parts(group, &opts).map_err(|e| e.to_string())?.0;
    match mode {
        "pub" => {
            let mut tx = Sender::open(&config).map_err(|e| e.to_string())?;
            for i in 0..count {
                tx.send(channel, format!("hello {i}").as_bytes()).map_err(|e| e.to_string())?;
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(true)
        }
        "sub" => {
            let secs: u64 = args.get(4).and_then(|s| s.parse().ok()).ok_or(usage)?;
            let mut rx = Receiver::open(&config).map_err(|e| e.to_string())?;
            let deadline = Instant::now() + Duration::from_secs(secs);
            let mut got = 0;
            println!("ready");
            while got < count {
                let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
                if let Some(m) = rx.recv(Some(left)).map_err(|e| e.to_string())? {
                    if m.channel == channel {
                        println!("{} {}", m.channel, String::from_utf8_lossy(&m.payload));
                        got += 1;
                    }
                }
            }
            Ok(got >= count)
        }
        _ => Err(usage.into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("udpm_peer: {e}");
            ExitCode::from(2)
        }
    }
}
