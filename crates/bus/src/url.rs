//! [`Url`]: `provider://network?key=value&key=value`, parsed as LCM parses it (spec 4.1), and the default URL; and
//! the check every provider's constructor makes of its URL's options ([`Url::check_options`]), so that a misspelt
//! option is an error, not silence, alike for every provider.

use std::fmt;

/// LCM's default URL, and ours.
pub const DEFAULT_URL: &str = "udpm://239.255.76.67:7667?ttl=0";

/// A parsed bus URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// The provider, e.g. `udpm`.
    pub provider: String,
    /// The part between `://` and the first `?`.
    pub network: String,
    /// `key=value` options in order; a key without `=` has the value "".
    pub options: Vec<(String, String)>,
}

/// A URL without `://`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlError {
    /// The text given.
    pub url: String,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad URL '{}': expected provider://network?options, e.g. {DEFAULT_URL}", self.url)
    }
}

impl std::error::Error for UrlError {}

impl Url {
    /// Parses `text`. As in LCM, a repeated key replaces the earlier one.
    pub fn parse(text: &str) -> Result<Url, UrlError> {
        let (provider, rest) = text.split_once("://").ok_or_else(|| UrlError { url: text.to_owned() })?;
        if provider.is_empty() {
            return Err(UrlError { url: text.to_owned() });
        }
        let mut parts = rest.split('?');
        let network = parts.next().unwrap_or("").to_owned();
        let mut options: Vec<(String, String)> = Vec::new();
        for part in parts {
            for kv in part.split('&').filter(|kv| !kv.is_empty()) {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                options.retain(|(old, _)| old != k);
                options.push((k.to_owned(), v.to_owned()));
            }
        }
        Ok(Url { provider: provider.to_owned(), network, options })
    }

    /// The URL to use when none is given: `NERVE_URL`, then `LCM_DEFAULT_URL` (so LCM users' settings carry
    /// over), then [`DEFAULT_URL`]. Empty variables count as unset, as in LCM.
    pub fn from_env() -> String {
        ["NERVE_URL", "LCM_DEFAULT_URL"]
            .iter()
            .filter_map(|v| std::env::var(v).ok())
            .find(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_URL.to_owned())
    }
}

/// An option of a URL that its provider does not know: `crate::BusError::UnknownOption` once converted (this module
/// sits below the bus's error type, which holds [`UrlError`], so it names the option and leaves the error to it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownOption {
    /// The URL.
    pub url: String,
    /// The provider (the URL's scheme).
    pub provider: String,
    /// The option given.
    pub option: String,
    /// The options the provider knows.
    pub known: Vec<String>,
}

impl Url {
    /// Refuses the first of the options that is not one of `known` (the options the provider knows).
    pub(crate) fn check_options(&self, known: &[&str]) -> Result<(), UnknownOption> {
        match self.options.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some((option, _)) => Err(self.unknown_option(option, known)),
        }
    }

    /// `option`, which this URL's provider does not know (it knows `known`).
    pub(crate) fn unknown_option(&self, option: &str, known: &[&str]) -> UnknownOption {
        UnknownOption {
            url: self.to_string(),
            provider: self.provider.clone(),
            option: option.to_owned(),
            known: known.iter().map(|k| (*k).to_owned()).collect(),
        }
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.provider, self.network)?;
        for (i, (k, v)) in self.options.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { '?' } else { '&' })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_lcm() {
        let u = Url::parse("udpm://239.255.76.67:7667?ttl=1&recv_buf_size=8&flag?ttl=2").unwrap();
        assert_eq!(u.provider, "udpm");
        assert_eq!(u.network, "239.255.76.67:7667");
        assert_eq!(
            u.options,
            [("recv_buf_size".into(), "8".into()), ("flag".into(), "".into()), ("ttl".into(), "2".into())]
        );
        assert_eq!(Url::parse("memq://").unwrap().network, "");
        assert!(Url::parse("memq").is_err());
        assert!(Url::parse("://x").is_err());
    }

    #[test]
    fn unknown_options_are_named_with_the_known_ones() {
        let url = Url::parse("shm://?frame=8").unwrap();
        let e = url.check_options(&["frames", "frame_size"]).unwrap_err();
        assert_eq!(e.url, "shm://?frame=8");
        assert_eq!(e.provider, "shm");
        assert_eq!(e.option, "frame");
        assert_eq!(e.known, ["frames", "frame_size"]);
        assert!(Url::parse("shm://?frames=8").unwrap().check_options(&["frames"]).is_ok());
        assert!(Url::parse("memq://").unwrap().check_options(&[]).is_ok());
    }
}
