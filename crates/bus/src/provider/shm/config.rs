//! The `shm://` URL's options ([`ShmConfig`]).

use std::path::PathBuf;
use std::time::Duration;

use nerve_shm::{parse_mode, parse_size, ChannelConfig, DEFAULT_FRAMES, DEFAULT_FRAME_SIZE};

use crate::error::BusError;

/// The options a `shm://` URL takes.
pub const OPTIONS: &[&str] = &["frames", "frame_size", "mode", "dir", "spin_us", "channels_per_thread", "checksum"];

/// A `shm://` URL's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShmConfig {
    /// `frames=N`: index entries of the channels this provider makes ([`DEFAULT_FRAMES`]).
    pub frames: u64,
    /// `frame_size=BYTES` (suffixes K, M, G): the largest message of the channels it makes ([`DEFAULT_FRAME_SIZE`]).
    pub frame_size: u64,
    /// `mode=0600`: the permission bits of the channel files it makes (octal).
    pub mode: u32,
    /// `dir=/path`: the channel directory (default: `NERVE_SHM_DIR`, else `/dev/shm`).
    pub dir: Option<PathBuf>,
    /// `spin_us=U`: a receive thread polls its channels this long before it sleeps (keeps a CPU busy while it
    /// waits; saves the wake-up of a sleeping thread).
    pub spin: Duration,
    /// `channels_per_thread=N`: the most channels one receive thread serves (default: no limit, one thread for
    /// every channel read; each thread sleeps on its channels through one wait set, see the module doc).
    pub channels_per_thread: usize,
    /// `checksum=xxh3` (or `none`, the default): the channels this provider makes carry a checksum per frame, so
    /// its readers never take bytes another process scribbled over for a message (they count them as missed).
    pub checksum: bool,
}

impl Default for ShmConfig {
    fn default() -> ShmConfig {
        ShmConfig {
            frames: DEFAULT_FRAMES,
            frame_size: DEFAULT_FRAME_SIZE,
            mode: nerve_shm::DEFAULT_MODE,
            dir: None,
            spin: Duration::ZERO,
            channels_per_thread: usize::MAX,
            checksum: false,
        }
    }
}

impl ShmConfig {
    /// From a `shm://` URL's network part (which must be empty) and options; unknown options are returned for the
    /// caller to warn about.
    pub fn from_url(
        url: &str,
        network: &str,
        options: &[(String, String)],
    ) -> Result<(ShmConfig, Vec<String>), BusError> {
        let bad = |reason: String| BusError::Config { url: url.to_owned(), reason };
        if !network.is_empty() {
            return Err(bad(format!(
                "shm:// takes no address ('{network}'): give the channel directory as shm://?dir={network}"
            )));
        }
        let mut config = ShmConfig::default();
        let mut unknown = Vec::new();
        for (k, v) in options {
            match k.as_str() {
                "frames" => {
                    config.frames = v
                        .parse::<u64>()
                        .ok()
                        .filter(|n| (2..=nerve_shm::MAX_FRAMES).contains(n))
                        .ok_or_else(|| bad(format!("frames={v}: expected 2 to {}", nerve_shm::MAX_FRAMES)))?
                }
                "frame_size" => {
                    config.frame_size =
                        parse_size(v).filter(|n| (1..=nerve_shm::MAX_FRAME_SIZE).contains(n)).ok_or_else(|| {
                            bad(format!(
                                "frame_size={v}: expected 1 to {} bytes (K, M, G allowed)",
                                nerve_shm::MAX_FRAME_SIZE
                            ))
                        })?
                }
                "mode" => {
                    config.mode =
                        parse_mode(v).ok_or_else(|| bad(format!("mode={v}: expected octal bits like 0600")))?
                }
                "dir" if v.is_empty() => return Err(bad("dir= is empty".into())),
                "dir" => config.dir = Some(PathBuf::from(v)),
                "channels_per_thread" => {
                    config.channels_per_thread = v.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                        bad(format!("channels_per_thread={v}: expected a number of channels, at least 1"))
                    })?
                }
                "checksum" => {
                    config.checksum = match v.as_str() {
                        "xxh3" => true,
                        "none" => false,
                        _ => return Err(bad(format!("checksum={v}: expected xxh3 or none"))),
                    }
                }
                "spin_us" => {
                    let us = v.parse::<u64>().map_err(|_| bad(format!("spin_us={v}: expected microseconds")))?;
                    config.spin = Duration::from_micros(us);
                }
                _ => unknown.push(k.clone()),
            }
        }
        let data = config.frames.max(3).checked_mul(config.frame_size.div_ceil(8) * 8);
        if data.is_none_or(|d| d > nerve_shm::MAX_DATA_BYTES) {
            return Err(bad(format!(
                "frames={} of frame_size={} is more than the {} bytes a channel may hold",
                config.frames,
                config.frame_size,
                nerve_shm::MAX_DATA_BYTES
            )));
        }
        Ok((config, unknown))
    }

    /// The channel directory this configuration resolves to.
    pub fn directory(&self) -> PathBuf {
        nerve_shm::channel_dir(self.dir.as_deref())
    }

    pub(super) fn channel_config(&self) -> ChannelConfig {
        let c = ChannelConfig::new(self.frames, self.frame_size).mode(self.mode).checksum(self.checksum);
        match &self.dir {
            Some(d) => c.dir(d),
            None => c,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn url_options() {
        let opts = |s: &[(&str, &str)]| s.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        let (c, unknown) = ShmConfig::from_url(
            "shm://",
            "",
            &opts(&[
                ("frames", "8"),
                ("frame_size", "1M"),
                ("mode", "0640"),
                ("dir", "/x"),
                ("spin_us", "50"),
                ("ttl", "0"),
            ]),
        )
        .unwrap();
        assert_eq!((c.frames, c.frame_size, c.mode, c.spin), (8, 1 << 20, 0o640, Duration::from_micros(50)));
        assert_eq!(c.dir.as_deref(), Some(Path::new("/x")));
        assert_eq!(unknown, ["ttl"]);
        assert_eq!(ShmConfig::from_url("shm://", "", &[]).unwrap().0, ShmConfig::default());
        for bad in
            [("frames", "1"), ("frames", "x"), ("frame_size", "0"), ("mode", "999"), ("dir", ""), ("spin_us", "-1")]
        {
            assert!(ShmConfig::from_url("shm://", "", &opts(&[bad])).is_err(), "{bad:?}");
        }
        assert!(ShmConfig::from_url("shm://x", "x", &[]).is_err());
        assert_eq!(
            ShmConfig::from_url("shm://", "", &opts(&[("channels_per_thread", "128")])).unwrap().0.channels_per_thread,
            128
        );
        assert_eq!(ShmConfig::default().channels_per_thread, usize::MAX, "one receive thread by default");
        for bad in ["0", "-1", "x"] {
            assert!(ShmConfig::from_url("shm://", "", &opts(&[("channels_per_thread", bad)])).is_err());
        }
        assert!(ShmConfig::from_url("shm://", "", &opts(&[("frames", "16777216"), ("frame_size", "1G")])).is_err());
        assert!(ShmConfig::from_url("shm://", "", &opts(&[("checksum", "xxh3")])).unwrap().0.checksum);
        assert!(!ShmConfig::from_url("shm://", "", &opts(&[("checksum", "none")])).unwrap().0.checksum);
        assert!(ShmConfig::from_url("shm://", "", &opts(&[("checksum", "crc")])).is_err());
        assert!(ShmConfig::default().channel_config().checksum == ShmConfig::default().checksum);
    }
}
