//! Fuzzes the mapping between channel names and Zenoh keys (crates/zenoh/src/keys.rs), which a hostile Zenoh peer's
//! key reaches: any peer may publish any key under the prefix. The input is `PATTERN\nCHANNEL` (lossy UTF-8).
//! Decoding arbitrary text never panics; every non-empty name round-trips through its key and the key holds nothing
//! Zenoh reserves; the cover of any pattern is one of the three shapes keys.rs makes, and includes the key of every
//! channel the pattern matches. (Whether a cover is a canonical key expression needs Zenoh itself: its unit tests
//! check that for fixed cases.)
#![no_main]

// Included by path rather than through nerve-zenoh: that crate would compile ~180 Zenoh crates with sanitizers into
// every target's build. keys.rs needs only nerve_bus::Pattern.
#[path = "../../crates/zenoh/src/keys.rs"]
mod keys;

use libfuzzer_sys::fuzz_target;
use nerve_bus::Pattern;

const PREFIX: &str = "nerve";

/// What the docs of keys.rs promise of an encoded suffix: only plain characters, `%XX` escapes (upper-case hex) and
/// `/` between non-empty chunks; so no `*`, `$`, `?`, `#`, no chunk starting with `@`, no empty chunk.
fn check_encoded(name: &str, enc: &str) {
    assert!(!enc.contains(['*', '$', '?', '#']), "{name:?} -> {enc:?}");
    for chunk in enc.split('/') {
        assert!(!chunk.is_empty() && !chunk.starts_with('@'), "{name:?} -> {enc:?}: chunk {chunk:?}");
    }
    let b = enc.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = &b[i + 1..i + 3];
            assert!(hex.iter().all(|c| matches!(c, b'0'..=b'9' | b'A'..=b'F')), "{name:?} -> {enc:?}");
            i += 3;
        } else {
            assert!(b[i].is_ascii_alphanumeric() || b"_-.~/".contains(&b[i]), "{name:?} -> {enc:?}");
            i += 1;
        }
    }
}

/// Whether `cover` (one of keys::cover's shapes, checked here) includes the key `PREFIX/suffix` of a channel.
fn includes(cover: &str, suffix: &str) -> bool {
    let rest = cover.strip_prefix(PREFIX).and_then(|r| r.strip_prefix('/'));
    let rest = rest.unwrap_or_else(|| panic!("cover {cover:?} is not under {PREFIX}/"));
    if rest == "**" {
        return true;
    }
    if let Some(lit) = rest.strip_suffix("$*/**") {
        // `LIT$*` is the rest of LIT's chunk (possibly empty), `/**` any number of chunks after it.
        check_encoded(cover, lit);
        return suffix.starts_with(lit);
    }
    check_encoded(cover, rest);
    rest == suffix
}

fn round_trip(name: &str) {
    if name.is_empty() {
        assert_eq!(keys::encode(name), None);
        return;
    }
    let enc = keys::encode(name).expect("a non-empty name has a key");
    check_encoded(name, &enc);
    assert_eq!(keys::decode(&enc).as_deref(), Some(name), "{name:?} -> {enc:?}");
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // A foreign key's suffix: anything, as long as it does not panic; what it decodes to is a name of its own.
    if let Some(name) = keys::decode(&text) {
        assert!(!name.is_empty());
        round_trip(&name);
    }
    let (pattern, channel) = text.split_once('\n').unwrap_or((&text, ""));
    round_trip(&text);
    round_trip(pattern);
    round_trip(channel);
    // Long patterns only slow the regex compiler down; the cover reads the pattern's first metacharacters.
    if pattern.len() > 256 {
        return;
    }
    let Ok(p) = Pattern::new(pattern) else { return };
    let cover = keys::cover(PREFIX, &p);
    for ch in [channel, pattern] {
        if !ch.is_empty() && p.matches(ch) {
            let suffix = keys::encode(ch).expect("non-empty");
            assert!(includes(&cover, &suffix), "{pattern:?}: {cover:?} does not cover {PREFIX}/{suffix}");
        }
    }
});
