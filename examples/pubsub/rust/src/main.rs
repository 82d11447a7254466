//! `nerve-example-pubsub pub|sub [--url URL]`: publishes five laser scans at 10 Hz, or prints the first five it
//! receives, decoded into the generated `LaserT`.

use std::time::Duration;

use nerve_bus::{Bus, Overflow};
use nerve_example_pubsub::lcmtypes::exlcm::LaserT;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args.iter().position(|a| a == "--url").and_then(|i| args.get(i + 1)).map(String::as_str);
    let bus = Bus::new(url)?;
    match args.first().map(String::as_str) {
        Some("pub") => {
            for i in 0..5 {
                let ranges: Vec<f32> = (0..180).map(|b| 1.0 + (b as f32 * 0.01) + i as f32).collect();
                let scan = LaserT {
                    utime: i,
                    nranges: ranges.len() as i32,
                    ranges,
                    rad0: -std::f32::consts::FRAC_PI_2,
                    radstep: std::f32::consts::PI / 180.0,
                };
                bus.publish("EXLASER", &scan)?;
                println!("published scan {i}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Some("sub") => {
            let sub = bus.subscriber("EXLASER", 100, Overflow::DropOldest)?;
            for _ in 0..5 {
                let Some(m) = sub.recv_timeout(Duration::from_secs(30)) else {
                    return Err("no scan within 30 s".into());
                };
                match m.decode::<LaserT>() {
                    Ok(scan) => {
                        println!("scan {}: {} ranges, first {:.2} m", scan.utime, scan.ranges.len(), scan.ranges[0])
                    }
                    Err(e) => println!("not a laser_t on {}: {e}", m.channel),
                }
            }
        }
        _ => return Err("usage: nerve-example-pubsub pub|sub [--url URL]".into()),
    }
    Ok(())
}
