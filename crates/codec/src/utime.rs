//! The clock of LCM's `utime`: the wall clock, in microseconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch (the wall clock): LCM's `utime`, what a message's `recv_utime` and a log
/// event's time are on. A clock set before the epoch reads 0; past `i64::MAX` microseconds it stays there.
pub fn now_utime() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // Miri's isolation has no wall clock to read; the code under it is safe Rust, which Miri has nothing to add to.
    #[cfg_attr(miri, ignore)]
    fn reads_the_wall_clock_in_microseconds() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as i64;
        let now = now_utime();
        let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as i64;
        assert!(before <= now && now <= after, "{before} <= {now} <= {after}");
    }
}
