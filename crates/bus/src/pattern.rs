//! [`Pattern`]: a channel subscription, a regular expression matched against the WHOLE channel name.
//!
//! LCM's C library wraps a pattern as `^` + pattern + `$`, which anchors a top-level alternation only half:
//! `FOO|BAR` also matches `FOOX` and `XBAR`. Nerve wraps it as `^(?:` + pattern + `)$`, so `FOO|BAR` matches
//! exactly `FOO` and `BAR`, as Java's LCM and the tcpq server do. Write `FOO.*` to match a prefix.

use std::fmt;

/// A compiled, fully anchored channel pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    regex: regex::Regex,
    /// The one channel it matches, when it matches only one.
    literal: Option<String>,
}

/// A pattern that is not a valid regular expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    /// The pattern given.
    pub pattern: String,
    /// The regex engine's explanation.
    pub reason: String,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad channel pattern '{}': {}", self.pattern, self.reason)
    }
}

impl std::error::Error for PatternError {}

impl Pattern {
    /// Compiles `text`.
    pub fn new(text: &str) -> Result<Pattern, PatternError> {
        let error = |e: regex::Error| PatternError { pattern: text.to_owned(), reason: e.to_string() };
        // Checked alone first, so that an error points into the user's text rather than into our anchoring.
        regex::Regex::new(text).map_err(error)?;
        let regex = regex::Regex::new(&format!("^(?:{text})$")).map_err(error)?;
        let literal = (regex::escape(text) == text).then(|| text.to_owned());
        Ok(Pattern { text: text.to_owned(), regex, literal })
    }

    /// The pattern that matches exactly `channel`, whatever characters it holds (typed in-process subscriptions).
    /// Fails only when the name is too long for the regex engine's size limit.
    pub fn exact(channel: &str) -> Result<Pattern, PatternError> {
        let text = regex::escape(channel);
        let regex = regex::Regex::new(&format!("^(?:{text})$"))
            .map_err(|e| PatternError { pattern: channel.to_owned(), reason: e.to_string() })?;
        Ok(Pattern { text, regex, literal: Some(channel.to_owned()) })
    }

    /// Whether the whole `channel` matches.
    pub fn matches(&self, channel: &str) -> bool {
        self.regex.is_match(channel)
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern is a plain channel name (no regex metacharacters), so it matches only itself.
    pub fn literal(&self) -> Option<&str> {
        self.literal.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fully_anchored() {
        let p = Pattern::new("FOO|BAR").unwrap();
        assert!(p.matches("FOO") && p.matches("BAR"));
        assert!(!p.matches("FOOX") && !p.matches("XBAR") && !p.matches("FOO|BAR"));
        let p = Pattern::new("POSE.*").unwrap();
        assert!(p.matches("POSE") && p.matches("POSE_EST") && !p.matches("XPOSE"));
        assert!(Pattern::new("(").is_err());
        assert_eq!(Pattern::new("A_B").unwrap().literal(), Some("A_B"));
        assert_eq!(Pattern::new("A.B").unwrap().literal(), None);
        let p = Pattern::exact("A.B|C").unwrap();
        assert!(p.matches("A.B|C") && !p.matches("AXB|C") && !p.matches("C"));
        assert_eq!(p.literal(), Some("A.B|C"));
    }
}
