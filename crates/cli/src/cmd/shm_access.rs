//! Before `sub` or `spy` listen on `shm://`: can this user read what they would listen to? The provider skips a
//! channel it cannot open (with a warning) and a directory it cannot list (silently: it may become readable), so
//! without this check a user without permission sees nothing at all and a clean exit. Also which of the shm
//! provider's errors are the input's fault (`cmd::exit`).

use anyhow::{bail, Context};
use nerve_bus::provider::shm::{decode_channel, ShmConfig, ShmProviderError};
use nerve_bus::{Pattern, Url};
use nerve_shm::Channel;

/// Fails (status 2) when `url` is a `shm://` bus whose channel directory this user cannot list, or on which channels
/// matching `pattern` exist and none of them can be opened. Anything else wrong with the URL or pattern is left for
/// the bus to report.
pub fn check_readable(url: &str, pattern: &str) -> anyhow::Result<()> {
    let Ok(parsed) = Url::parse(url) else { return Ok(()) };
    if parsed.provider != "shm" {
        return Ok(());
    }
    let Ok((config, _)) = ShmConfig::from_url(url, &parsed.network, &parsed.options) else { return Ok(()) };
    let Ok(pattern) = Pattern::new(pattern) else { return Ok(()) };
    let dir = config.directory();
    if !dir.is_dir() {
        return Ok(());
    }
    let listed =
        Channel::list(Some(&dir)).with_context(|| format!("cannot read the channel directory {}", dir.display()))?;
    let mut readable = 0;
    let mut unreadable = Vec::new();
    for c in listed {
        let name = decode_channel(&c.name).unwrap_or(c.name);
        if !pattern.matches(&name) {
            continue;
        }
        match c.stats {
            Ok(_) => readable += 1,
            Err(e) => unreadable.push(format!("channel {name}: {e}")),
        }
    }
    if readable == 0 && !unreadable.is_empty() {
        bail!("no channel in {} that matches the pattern can be read:\n  {}", dir.display(), unreadable.join("\n  "));
    }
    Ok(())
}

/// `Some(true)` when `e` is an shm provider error that is the input's fault (a message or channel too large, sizes
/// that differ), `Some(false)` for its other errors, `None` when it is not one.
pub fn is_rejection(e: &(dyn std::error::Error + 'static)) -> Option<bool> {
    let s = e.downcast_ref::<ShmProviderError>()?;
    Some(matches!(
        s,
        ShmProviderError::MessageTooLarge { .. }
            | ShmProviderError::TooLargeToMake { .. }
            | ShmProviderError::ChannelSizesDiffer { .. }
    ))
}
