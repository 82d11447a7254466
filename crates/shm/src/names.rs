//! Channel file names for bus channel names, and the sizes and modes `nerve chan` and the `shm://` bus provider
//! read from the command line and URLs: the naming is part of the channel files' format, so it lives here.

/// A new channel's index entries (messages kept) unless told otherwise (`shm://?frames=`, `nerve chan mk -n`).
pub const DEFAULT_FRAMES: u64 = 64;
/// A new channel's frame size (its largest message) unless told otherwise: 64 KiB, room for every ordinary state
/// or command message; image channels need a `frame_size` of their own (or `nerve chan mk`). The file of a default
/// channel reserves about `frames * frame_size` = 4 MiB of memory.
pub const DEFAULT_FRAME_SIZE: u64 = 64 * 1024;

/// The file-name form of bus channel `channel` (without the [`crate::FILE_PREFIX`]): `%`, `/` and control
/// characters become `%XX` (upper-case hex), a whole name of `.` or `..` becomes `%2E` or `%2E%2E`; everything else
/// stays. [`decode_channel`] reverses it.
pub fn encode_channel(channel: &str) -> String {
    if channel == "." || channel == ".." {
        return channel.replace('.', "%2E");
    }
    let mut out = String::with_capacity(channel.len());
    for c in channel.chars() {
        if c == '%' || c == '/' || c.is_ascii_control() {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The bus channel whose file-name form is `encoded`, or `None` if no channel name encodes to it (a channel made
/// through the raw nerve-shm API with a `%` in its name that is not an escape, say).
pub fn decode_channel(encoded: &str) -> Option<String> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = encoded.get(i + 1..i + 3)?;
            if !hex.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let decoded = String::from_utf8(out).ok()?;
    (encode_channel(&decoded) == encoded).then_some(decoded)
}

/// A size in bytes: digits, optionally followed by `K`, `M` or `G` (binary multiples; `KiB`, `k` and the like are
/// accepted too). `None` if it is not one or overflows.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// Permission bits in octal (`600`, `0600`, `0o600`), at most 0777.
pub fn parse_mode(text: &str) -> Option<u32> {
    let t = text.trim();
    let t = t.strip_prefix("0o").unwrap_or(t);
    u32::from_str_radix(t, 8).ok().filter(|m| *m <= 0o777)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_names_round_trip() {
        for name in ["POSE", "a/b/c", "50%", "%2F", ".", "..", "...", ".hidden", "tab\there", "ünï/cødé", "x%y/z%"]
        {
            let enc = encode_channel(name);
            assert!(!enc.contains('/') && !enc.contains('\0'), "{name:?} -> {enc:?}");
            assert!(enc != "." && enc != "..");
            assert_eq!(decode_channel(&enc).as_deref(), Some(name), "{name:?} -> {enc:?}");
        }
        assert_eq!(encode_channel("POSE"), "POSE");
        assert_eq!(encode_channel("a/b%"), "a%2Fb%25");
        // Names no channel encodes to.
        for raw in ["50%", "%zz", "%2f", "%41", "a%2"] {
            assert_eq!(decode_channel(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn sizes_and_modes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(65536));
        assert_eq!(parse_size("2MiB"), Some(2 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("1T"), None);
        assert_eq!(parse_size("99999999999999999999"), None);
        assert_eq!(parse_mode("0660"), Some(0o660));
        assert_eq!(parse_mode("600"), Some(0o600));
        assert_eq!(parse_mode("0o640"), Some(0o640));
        assert_eq!(parse_mode("1777"), None);
        assert_eq!(parse_mode("689"), None);
    }
}
