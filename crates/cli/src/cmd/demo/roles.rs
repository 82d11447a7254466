//! The demo's own processes, each a `nerve demo --role ...` child of the scene: the sensor (laser scans and camera
//! images over udpm), the localizer (poses into a shared-memory channel) and the controller (the newest pose out of
//! it, once a millisecond). Each works from `--start-at` to `--until` (wall-clock microseconds, the same for all, so
//! every stream covers the same window), stops early on SIGINT or SIGTERM, and prints one [`RESULT`] line of
//! `key=value` figures it measured itself, which the scene reads.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use nerve_bus::Bus;
use nerve_shm::{Channel, GetOutcome, ReadMode, Wait};

use super::stats::{now_utime, percentile};
use super::types::{self, Camera, Types, IMAGE, LASER, POSE};

/// What starts a role's result line on its stdout.
pub const RESULT: &str = "nerve-demo-result";

/// Laser scans per second (the LCM paper's laser_t stream).
pub const LASER_HZ: f64 = 40.0;
/// Images per second.
pub const IMAGE_HZ: f64 = 30.0;
/// Poses written, and controller ticks, per second.
pub const POSE_HZ: f64 = 1000.0;

/// SIGINT or SIGTERM seen.
fn stop_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing a signal handler")?;
    }
    Ok(stop)
}

/// An absolute schedule on the wall clock: the k-th tick is due at `start + k * period`. Ticks that a late loop
/// could only run more than a period after they were due are skipped and counted, so falling behind never turns
/// into a burst and the schedule keeps its phase.
struct Ticker {
    next: i64,
    period: i64,
    skipped: u64,
}

impl Ticker {
    fn new(start: i64, hz: f64) -> Ticker {
        Ticker { next: start, period: (1e6 / hz).round() as i64, skipped: 0 }
    }

    /// Sleeps until the next tick (returns at once if it is due).
    fn wait(&mut self) {
        let now = now_utime();
        if self.next > now {
            std::thread::sleep(Duration::from_micros((self.next - now) as u64));
        }
    }

    /// Moves on to the following tick that is not yet more than a period overdue.
    fn advance(&mut self) {
        self.next += self.period;
        let behind = (now_utime() - self.next) / self.period;
        if behind > 0 {
            self.skipped += behind as u64;
            self.next += behind * self.period;
        }
    }
}

fn seconds(from: i64, to: i64) -> f64 {
    (to - from).max(1) as f64 / 1e6
}

/// The sensor: `exlcm.laser_t` on LASER at 40 Hz and `exlcm.image_t` (640x480 grey) on IMAGE at 30 Hz over udpm,
/// each stamped with the wall-clock time just before it is encoded and published.
pub fn sensor(url: &str, start_at: i64, until: i64) -> anyhow::Result<()> {
    let stop = stop_flag()?;
    let types = Types::load()?;
    let bus = Bus::new(Some(url)).with_context(|| format!("opening {url}"))?;
    let mut camera = Camera::new();
    let (mut scans, mut images) = (Ticker::new(start_at, LASER_HZ), Ticker::new(start_at, IMAGE_HZ));
    let (mut sent_laser, mut sent_image, mut bytes_laser, mut bytes_image, mut errors) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let began = now_utime();
    while !stop.load(Ordering::Relaxed) {
        let laser_first = scans.next <= images.next;
        let t = if laser_first { &mut scans } else { &mut images };
        if t.next >= until {
            break;
        }
        t.wait();
        let utime = now_utime();
        let secs = (utime - start_at) as f64 / 1e6;
        let (channel, ty, value) = if laser_first {
            (LASER.0, LASER.1, types::laser(utime, secs))
        } else {
            (IMAGE.0, IMAGE.1, camera.frame(utime))
        };
        let data = types.encode(ty, &value)?;
        match bus.publish_raw(channel, &data) {
            Ok(()) if laser_first => (sent_laser, bytes_laser) = (sent_laser + 1, bytes_laser + data.len() as u64),
            Ok(()) => (sent_image, bytes_image) = (sent_image + 1, bytes_image + data.len() as u64),
            Err(e) => {
                errors += 1;
                if errors == 1 {
                    eprintln!("nerve demo sensor: publishing on {channel}: {e}");
                }
            }
        }
        t.advance();
    }
    let secs = seconds(began.max(start_at), now_utime());
    println!(
        "{RESULT} role=sensor LASER_sent={sent_laser} LASER_bytes={bytes_laser} LASER_skipped_ticks={} IMAGE_sent={sent_image} \
         IMAGE_bytes={bytes_image} IMAGE_skipped_ticks={} errors={errors} seconds={secs:.3}",
        scans.skipped, images.skipped
    );
    Ok(())
}

/// The localizer: an `exlcm.pose_t` into shared-memory channel POSE (in `dir`) 1000 times a second.
pub fn localizer(dir: &Path, start_at: i64, until: i64) -> anyhow::Result<()> {
    let stop = stop_flag()?;
    let types = Types::load()?;
    let channel = Channel::open(POSE.0, Some(dir)).with_context(|| format!("opening shm channel {}", POSE.0))?;
    let mut writer = channel.writer();
    let mut ticks = Ticker::new(start_at, POSE_HZ);
    let mut sent = 0u64;
    let began = now_utime();
    while !stop.load(Ordering::Relaxed) && ticks.next < until {
        ticks.wait();
        let utime = now_utime();
        let data = types.encode(POSE.1, &types::pose(utime, (utime - start_at) as f64 / 1e6))?;
        writer.put(&data).context("writing a pose")?;
        sent += 1;
        ticks.advance();
    }
    let secs = seconds(began.max(start_at), now_utime());
    println!("{RESULT} role=localizer POSE_sent={sent} POSE_skipped_ticks={} seconds={secs:.3}", ticks.skipped);
    Ok(())
}

/// The controller: once a millisecond, the newest pose in POSE ([`ReadMode::Newest`], never waiting), its age (now
/// minus its `utime`) measured, the poses it skipped (two came between two ticks: the newest wins) and the ticks
/// that found nothing newer counted.
pub fn controller(dir: &Path, start_at: i64, until: i64) -> anyhow::Result<()> {
    let stop = stop_flag()?;
    let types = Types::load()?;
    let channel = Channel::open(POSE.0, Some(dir)).with_context(|| format!("opening shm channel {}", POSE.0))?;
    let mut reader = channel.reader();
    let mut buf = vec![0u8; channel.frame_size() as usize];
    // Half a period after the localizer's ticks, as two unsynchronised loops would be on average (on the same
    // schedule the controller would read just before each write and always find a pose a whole period old).
    let mut ticks = Ticker::new(start_at + (5e5 / POSE_HZ) as i64, POSE_HZ);
    let (mut n_ticks, mut read, mut skipped, mut nothing_new, mut retries) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut last_seq = 0u64;
    let mut ages: Vec<i64> = Vec::with_capacity(((until - start_at).max(0) / 1000 + 16) as usize);
    let mut last_xy = (0.0, 0.0);
    // Ticks count from the first pose read: before it there is nothing to control.
    let mut first_read: Option<i64> = None;
    while !stop.load(Ordering::Relaxed) && ticks.next < until {
        ticks.wait();
        match reader.get(&mut buf, ReadMode::Newest, Wait::Poll).context("reading POSE")? {
            GetOutcome::Message(info) => {
                let now = now_utime();
                let (utime, x, y) = types.pose_of(&buf[..info.len])?;
                ages.push(now - utime);
                first_read.get_or_insert(now);
                if last_seq > 0 {
                    skipped += info.seq.saturating_sub(last_seq + 1);
                }
                last_seq = info.seq;
                read += 1;
                last_xy = (x, y);
            }
            GetOutcome::NothingNew | GetOutcome::TimedOut if first_read.is_some() => nothing_new += 1,
            GetOutcome::NothingNew | GetOutcome::TimedOut => {}
            GetOutcome::Retry => retries += 1,
            GetOutcome::BufferTooSmall { needed } => bail!("a {needed}-byte pose in a {}-byte frame", buf.len()),
        }
        if first_read.is_some() {
            n_ticks += 1;
        }
        ticks.advance();
    }
    let secs = first_read.map_or(0.0, |t| seconds(t, now_utime()));
    ages.sort_unstable();
    println!(
        "{RESULT} role=controller ticks={n_ticks} read={read} skipped={skipped} nothing_new={nothing_new} \
         retries={retries} skipped_ticks={} age_p50_us={} age_p99_us={} age_max_us={} last_x={:.3} last_y={:.3} seconds={secs:.3}",
        ticks.skipped,
        percentile(&ages, 50.0).unwrap_or(0),
        percentile(&ages, 99.0).unwrap_or(0),
        ages.last().copied().unwrap_or(0),
        last_xy.0,
        last_xy.1,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_schedule_skips_what_it_missed_and_keeps_its_phase() {
        let start = now_utime() - 10_250;
        let mut t = Ticker::new(start, 1000.0);
        t.advance();
        // About ten ticks were overdue by more than a period: skipped, and the next one keeps the 1 ms grid.
        assert!((8..=10).contains(&t.skipped), "{}", t.skipped);
        assert_eq!((t.next - start) % 1000, 0);
        assert!(t.next + t.period > now_utime());
        let mut on_time = Ticker::new(now_utime() + 5_000, 40.0);
        on_time.advance();
        assert_eq!(on_time.skipped, 0);
    }
}
