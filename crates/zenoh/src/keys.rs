//! Channel names as Zenoh key expressions and back, and the key expression that covers a channel pattern.
//!
//! Channel `X` is the key `PREFIX/X` when `X` is already a plain key (chunks of letters, digits, `_-.~`, joined by
//! single `/`), so a Zenoh user sees `nerve/robot/pose` for the channel `robot/pose`. Any other character (and a `/`
//! that would make an empty chunk: leading, trailing or doubled) is percent-encoded as `%XX` per UTF-8 byte, `%`
//! itself included. Decoding is plain percent-decoding, so `decode(encode(x)) == x` for every name: a name kept as
//! it is contains no `%`, and an encoded one decodes byte for byte.

use nerve_bus::Pattern;

/// Characters a key keeps as they are (besides `/` between two non-empty chunks). Zenoh reserves `*`, `$`, `?`,
/// `#` and a leading `@`; the rest of the ASCII punctuation is encoded too, so that the rule is short to state.
fn plain(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'~')
}

/// The key suffix (after `PREFIX/`) of `channel`. `None` for the empty name, which no key can hold.
pub fn encode(channel: &str) -> Option<String> {
    if channel.is_empty() {
        return None;
    }
    let bytes = channel.as_bytes();
    let mut out = String::with_capacity(channel.len());
    for (i, &b) in bytes.iter().enumerate() {
        let keeps_slash =
            b == b'/' && !out.is_empty() && !out.ends_with('/') && bytes.get(i + 1).is_some_and(|&n| n != b'/');
        if plain(b) || keeps_slash {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Some(out)
}

/// The channel whose key suffix is `suffix`, or `None` when it is not one [`encode`] makes (a bad `%` escape, or
/// bytes that are not UTF-8): a foreign publisher's key under our prefix that no Nerve channel maps to.
pub fn decode(suffix: &str) -> Option<String> {
    let bytes = suffix.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().filter(|s| !s.is_empty())
}

/// The literal text every channel `pattern` matches starts with (possibly empty), read from the regex conservatively:
/// up to the first metacharacter, less the character a quantifier makes optional, and nothing at all when there is
/// an alternation anywhere (a top-level `|` would make any prefix wrong).
fn literal_prefix(pattern: &str) -> &str {
    if pattern.contains('|') {
        return "";
    }
    let Some(stop) = pattern.find(|c: char| "\\.+*?()[]{}^$".contains(c)) else {
        return pattern;
    };
    let mut end = stop;
    if matches!(pattern.as_bytes()[stop], b'?' | b'*' | b'{') {
        // The character before is optional: step back over it (a whole UTF-8 character).
        end = pattern[..stop].char_indices().last().map_or(0, |(i, _)| i);
    }
    &pattern[..end]
}

/// The narrowest key expression under `prefix` that covers every channel `pattern` matches: the exact key for a
/// plain name, else `PREFIX/<encoded literal prefix>$*/**` (or `PREFIX/**`). The bus's regex filters the rest.
pub fn cover(prefix: &str, pattern: &Pattern) -> String {
    if let Some(channel) = pattern.literal() {
        if let Some(suffix) = encode(channel) {
            return format!("{prefix}/{suffix}");
        }
    }
    let mut lit = literal_prefix(pattern.as_str());
    // A `/` is kept in a key only between two non-empty chunks; cut the literal before the first `/` that a longer
    // channel might encode differently (leading, trailing, or doubled), so its encoding prefixes every match's.
    let b = lit.as_bytes();
    if let Some(cut) =
        (0..b.len()).find(|&i| b[i] == b'/' && (i == 0 || i + 1 == b.len() || b[i + 1] == b'/' || b[i - 1] == b'/'))
    {
        lit = &lit[..cut];
    }
    match encode(lit) {
        Some(enc) => format!("{prefix}/{enc}$*/**"),
        None => format!("{prefix}/**"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zenoh::key_expr::keyexpr;

    fn ke(s: &str) -> &keyexpr {
        keyexpr::new(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn plain_names_are_kept_and_others_round_trip() {
        assert_eq!(encode("POSE_EST").unwrap(), "POSE_EST");
        assert_eq!(encode("robot/pose").unwrap(), "robot/pose");
        for name in [
            "POSE",
            "a b",
            "/lead",
            "trail/",
            "a//b",
            "/",
            "//",
            "%",
            "50%2F",
            "a*b",
            "**",
            "$*",
            "@admin",
            "q?x#y",
            "ünï/cödé",
            "a/b/c",
            "x.y-z~",
        ] {
            let enc = encode(name).unwrap();
            ke(&format!("nerve/{enc}"));
            assert!(!enc.contains(['*', '$', '?', '#']), "{name} -> {enc}");
            assert_eq!(decode(&enc).as_deref(), Some(name), "{name} -> {enc}");
        }
        assert_eq!(encode(""), None);
        for bad in ["%", "%G0", "%4", "%FF", ""] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn covers_are_valid_and_narrow() {
        let cases = [
            ("POSE", "nerve/POSE"),
            ("POSE.*", "nerve/POSE$*/**"),
            ("POSEX?", "nerve/POSE$*/**"),
            ("FOO|BAR", "nerve/**"),
            (".*", "nerve/**"),
            ("robot/po.*", "nerve/robot/po$*/**"),
            ("robot/.*", "nerve/robot$*/**"),
            ("a b.*", "nerve/a%20b$*/**"),
            ("(?i)pose", "nerve/**"),
        ];
        for (p, want) in cases {
            let got = cover("nerve", &Pattern::new(p).unwrap());
            assert_eq!(got, want, "{p}");
            ke(&got);
        }
    }

    #[test]
    fn a_cover_includes_the_key_of_every_channel_its_pattern_matches() {
        let channels = [
            "POSE",
            "POSE_EST",
            "POSEX",
            "POS",
            "robot/pose",
            "robot/",
            "robot//x",
            "robot",
            "a b",
            "a bc/d",
            "/x",
            "FOO",
            "BAR",
            "ünï",
        ];
        let patterns =
            ["POSE.*", "POSEX?", "robot/.*", "robot.*", "robot/po.*", "a b.*", "FOO|BAR", ".*", "/.*", "ün.*"];
        for p in patterns {
            let pattern = Pattern::new(p).unwrap();
            let c = cover("nerve", &pattern);
            for ch in channels.iter().filter(|ch| pattern.matches(ch)) {
                let key = format!("nerve/{}", encode(ch).unwrap());
                assert!(ke(&c).includes(ke(&key)), "{p}: {c} does not cover {key}");
            }
        }
    }
}
