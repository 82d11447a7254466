//! `nerve-example-pubsub pub [--url URL] [--channel NAME] [--count N] [--rate HZ]` publishes N laser scans
//! (the generated `LaserT`) on a channel of the bus, HZ a second; `nerve-example-pubsub sub [--url URL] [--channel
//! NAME] [--count N] [--timeout SECONDS]` prints the first N that arrive, one line each, and fails if none arrives
//! for SECONDS.

use std::process::ExitCode;
use std::time::Duration;

use nerve_bus::{Bus, Overflow};
use nerve_example_pubsub::lcmtypes::exlcm::LaserT;

const USAGE: &str = "usage: nerve-example-pubsub pub|sub [--url URL] [--channel NAME] [--count N] [--rate HZ] \
                     [--timeout SECONDS]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut url, mut channel) = ("udpm://239.255.76.67:7667?ttl=0", "EXLASER");
    let (mut count, mut rate, mut timeout) = (10, 10.0, 10.0);
    for opt in args.get(1..).unwrap_or_default().chunks(2) {
        let [name, value] = opt else { return Err(USAGE.into()) };
        match name.as_str() {
            "--url" => url = value,
            "--channel" => channel = value,
            "--count" => count = value.parse()?,
            "--rate" => rate = value.parse()?,
            "--timeout" => timeout = value.parse()?,
            _ => return Err(USAGE.into()),
        }
    }
    if !(rate > 0.0 && timeout > 0.0) {
        return Err(USAGE.into());
    }
    let bus = Bus::new(Some(url))?;
    match args.first().map(String::as_str) {
        Some("pub") => {
            for i in 0..count {
                let ranges: Vec<f32> = (0..5).map(|b| 1.0 + i as f32 + 0.25 * b as f32).collect();
                let scan = LaserT {
                    utime: nerve_codec::now_utime(),
                    nranges: ranges.len() as i32,
                    ranges,
                    rad0: -std::f32::consts::FRAC_PI_2,
                    radstep: std::f32::consts::PI / 180.0,
                };
                bus.publish(channel, &scan)?;
                println!("published scan {i} on {channel}");
                std::thread::sleep(Duration::from_secs_f64(1.0 / rate));
            }
        }
        Some("sub") => {
            let sub = bus.subscriber(channel, 100, Overflow::DropOldest)?;
            eprintln!("waiting for {count} laser_t on {channel} at {url}");
            let mut received = 0;
            while received < count {
                let Some(m) = sub.recv_timeout(Duration::from_secs_f64(timeout)) else {
                    return Err(format!("timed out after {received} of {count} scans").into());
                };
                let scan = match m.decode::<LaserT>() {
                    Ok(scan) => scan,
                    Err(e) => {
                        eprintln!("not a laser_t on {}: {e}", m.channel);
                        continue;
                    }
                };
                let ranges: Vec<String> = scan.ranges.iter().map(|r| format!("{r:.2}")).collect();
                println!(
                    "laser_t utime={} nranges={} ranges=[{}] rad0={:.4} radstep={:.4}",
                    scan.utime,
                    scan.nranges,
                    ranges.join(" "),
                    scan.rad0,
                    scan.radstep
                );
                received += 1;
            }
        }
        _ => return Err(USAGE.into()),
    }
    Ok(())
}
