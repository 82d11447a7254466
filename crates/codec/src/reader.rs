//! [`Reader`]: checked, big-endian reads from an encoded buffer.

use crate::error::{DecodeError, DecodeErrorKind};
use crate::Str;

/// A cursor over an encoded buffer. Every read checks the bytes that remain first.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    depth: u32,
}

macro_rules! scalar_readers {
    ($($get:ident, $get_vec:ident, $get_vec_into:ident, $fill:ident, $bulk:ident: $t:ty, $n:expr, $from:expr;)*) => {$(
        #[doc = concat!("Reads one big-endian `", stringify!($t), "`.")]
        #[inline]
        pub fn $get(&mut self) -> Result<$t, DecodeError> {
            let b = self.take_fixed::<$n>()?;
            Ok($from(*b))
        }

        #[doc = concat!("Reads `n` `", stringify!($t), "`s into a new vector, after checking that they are there.")]
        #[inline]
        pub fn $get_vec(&mut self, n: usize) -> Result<Vec<$t>, DecodeError> {
            let bytes = self.take_array(n, $n)?;
            // One allocation of exactly n, each element written once (no zero-filling first), by a vector byte
            // swap for the multi-byte types (crate::fixed's `swap`).
            let mut v = Vec::with_capacity(n);
            crate::fixed::DecodeVec::decode_vec(&mut v, bytes, n);
            Ok(v)
        }

        #[doc = concat!("Reads `n` `", stringify!($t), "`s into `v`, reusing its capacity: no allocation once `v` has held `n` \
            elements (the allocation-free decode, [`crate::Message::decode_into`]).")]
        #[inline]
        pub fn $get_vec_into(&mut self, v: &mut Vec<$t>, n: usize) -> Result<(), DecodeError> {
            let bytes = self.take_array(n, $n)?;
            crate::fixed::DecodeVec::decode_vec(v, bytes, n);
            Ok(())
        }

        #[doc = concat!("Reads `out.len()` `", stringify!($t), "`s into `out` (a fixed-size array).")]
        #[inline]
        pub fn $fill(&mut self, out: &mut [$t]) -> Result<(), DecodeError> {
            let bytes = self.take_array(out.len(), $n)?;
            crate::fixed::$bulk(bytes, out);
            Ok(())
        }
    )*};
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    #[inline]
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0, depth: 0 }
    }

    /// Enters one level of a recursive type; fails past [`crate::MAX_DEPTH`] levels, so that a hostile buffer
    /// cannot exhaust the stack. Generated decoders of recursive types pair it with [`Reader::leave`].
    #[inline]
    pub fn enter(&mut self) -> Result<(), DecodeError> {
        if self.depth >= crate::MAX_DEPTH {
            return Err(self.error(DecodeErrorKind::TooDeep { limit: crate::MAX_DEPTH }));
        }
        self.depth += 1;
        Ok(())
    }

    /// Leaves a level entered with [`Reader::enter`].
    #[inline]
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Takes the next `N` bytes as an array reference (one check for a run of fixed-size members).
    #[inline]
    pub fn take_fixed<const N: usize>(&mut self) -> Result<&'a [u8; N], DecodeError> {
        let buf: &'a [u8] = self.buf;
        match buf.get(self.pos..).and_then(|s| s.first_chunk::<N>()) {
            Some(c) => {
                self.pos += N;
                Ok(c)
            }
            None => Err(self.error(DecodeErrorKind::Truncated { needed: N, remaining: self.remaining() })),
        }
    }

    /// Checks, before anything is allocated, that a multi-dimensional array of the given dimensions (outermost
    /// first), with elements of at least `min_size` bytes, can still be in the buffer. Items that encode to nothing
    /// (empty structs, rows of length 0) are bounded too: at each level there may be at most
    /// [`crate::ZERO_SIZE_SLACK`] more items than bytes left, so a count can never make the decoder loop or
    /// allocate far beyond the size of its input.
    #[inline]
    pub fn ensure_dims(&self, dims: &[usize], min_size: usize) -> Result<(), DecodeError> {
        let too_many = |needed: usize| self.error(DecodeErrorKind::Truncated { needed, remaining: self.remaining() });
        let Some(total) = crate::fixed::product(dims) else {
            return Err(too_many(usize::MAX));
        };
        self.ensure_elements(total, min_size)?;
        if min_size == 0 || total == 0 {
            let limit = self.remaining().saturating_add(crate::ZERO_SIZE_SLACK);
            let mut items = 1usize;
            for d in dims {
                items = items.saturating_mul(*d);
                if items > limit {
                    return Err(too_many(items));
                }
            }
        }
        Ok(())
    }

    /// The offset of the next byte to read.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// An error of `kind` at the current offset.
    #[cold]
    pub fn error(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError { kind, offset: self.pos }
    }

    /// Takes the next `n` bytes.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(self.error(DecodeErrorKind::Truncated { needed: n, remaining: self.remaining() }));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Takes `count` elements of `size` bytes each, checking the product against what remains (and for overflow).
    #[inline]
    pub fn take_array(&mut self, count: usize, size: usize) -> Result<&'a [u8], DecodeError> {
        match count.checked_mul(size) {
            Some(n) => self.take(n),
            None => Err(self.error(DecodeErrorKind::Truncated { needed: usize::MAX, remaining: self.remaining() })),
        }
    }

    /// Checks, before anything is allocated, that `count` elements of at least `min_size` bytes each can still be in
    /// the buffer. Use it before a loop that decodes variable-size elements (strings, structs).
    #[inline]
    pub fn ensure_elements(&self, count: usize, min_size: usize) -> Result<(), DecodeError> {
        match count.checked_mul(min_size) {
            Some(n) if n <= self.remaining() => Ok(()),
            _ => Err(self.error(DecodeErrorKind::Truncated {
                needed: count.saturating_mul(min_size),
                remaining: self.remaining(),
            })),
        }
    }

    /// Turns a count member's value into a length, rejecting negative counts.
    #[inline]
    pub fn count(&self, value: i64) -> Result<usize, DecodeError> {
        usize::try_from(value).map_err(|_| self.error(DecodeErrorKind::NegativeCount { count: value }))
    }

    /// Reads and checks the fingerprint at the front of a message.
    #[inline]
    pub fn expect_fingerprint(&mut self, expected: u64) -> Result<(), DecodeError> {
        let at = self.pos;
        let found = self.get_u64()?;
        if found != expected {
            return Err(DecodeError { kind: DecodeErrorKind::WrongFingerprint { expected, found }, offset: at });
        }
        Ok(())
    }

    scalar_readers! {
        get_i8, get_i8_vec, get_i8_vec_into, fill_i8, read_i8s: i8, 1, i8::from_be_bytes;
        get_u8, get_u8_vec, get_u8_vec_into, fill_u8, read_u8s: u8, 1, u8::from_be_bytes;
        get_i16, get_i16_vec, get_i16_vec_into, fill_i16, read_i16s: i16, 2, i16::from_be_bytes;
        get_i32, get_i32_vec, get_i32_vec_into, fill_i32, read_i32s: i32, 4, i32::from_be_bytes;
        get_i64, get_i64_vec, get_i64_vec_into, fill_i64, read_i64s: i64, 8, i64::from_be_bytes;
        get_u64, get_u64_vec, get_u64_vec_into, fill_u64, read_u64s: u64, 8, u64::from_be_bytes;
        get_f32, get_f32_vec, get_f32_vec_into, fill_f32, read_f32s: f32, 4, f32::from_be_bytes;
        get_f64, get_f64_vec, get_f64_vec_into, fill_f64, read_f64s: f64, 8, f64::from_be_bytes;
        get_bool, get_bool_vec, get_bool_vec_into, fill_bool, read_bools: bool, 1, |b: [u8; 1]| b[0] != 0;
    }

    /// Reads a `byte` array into `v`, reusing its capacity.
    #[inline]
    pub fn get_bytes_into(&mut self, v: &mut Vec<u8>, n: usize) -> Result<(), DecodeError> {
        let b = self.take(n)?;
        v.clear();
        v.extend_from_slice(b);
        Ok(())
    }

    /// Reads a byte array without copying it.
    #[inline]
    pub fn get_bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        self.take(n)
    }

    /// Reads a string without copying it: int32 length (counting the NUL), the bytes, the NUL.
    #[inline(always)]
    pub fn get_str(&mut self) -> Result<&'a str, DecodeError> {
        self.get_str_and_rest().map(|(s, _)| s)
    }

    /// [`Reader::get_str`], and the buffer from the string's first byte to its end: what [`Str`] copies a short
    /// string from in one fixed-size block.
    ///
    /// The usual string (its length, bytes and NUL all there, short ASCII text) is read with one bounds check per
    /// step and no change to the reader until it has passed them all; anything else, valid or not, goes through
    /// [`Reader::get_str_and_rest_checked`] from the same position, which gives the same result and every error
    /// with its kind and offset. Out of line, the rare cases leave the decoders small enough to be inlined into
    /// their array loops, and their registers to the loop (path_t's `decode_into`: about 110 instructions per waypoint
    /// before, 90 after).
    #[inline(always)]
    fn get_str_and_rest(&mut self) -> Result<(&'a str, &'a [u8]), DecodeError> {
        let buf: &'a [u8] = self.buf;
        if let Some((len, rest)) = buf.get(self.pos..).and_then(|b| b.split_first_chunk::<4>()) {
            let n = i32::from_be_bytes(*len) as i64 - 1;
            if (0..=16).contains(&n) {
                let n = n as usize;
                if let (Some(&0), true) = (rest.get(n), ascii_prefix(rest, n)) {
                    let text = &rest[..n];
                    self.pos += 4 + n + 1;
                    // SAFETY: `ascii_prefix` found every byte of `text` below 0x80, and ASCII is valid UTF-8.
                    #[allow(unsafe_code)]
                    return Ok((unsafe { std::str::from_utf8_unchecked(text) }, rest));
                }
            }
        }
        self.get_str_and_rest_checked()
    }

    /// [`Reader::get_str_and_rest`] step by step: every check, and every error with its kind and offset.
    #[cold]
    #[inline(never)]
    fn get_str_and_rest_checked(&mut self) -> Result<(&'a str, &'a [u8]), DecodeError> {
        let at = self.pos;
        let len = self.get_i32()?;
        if len <= 0 {
            self.pos = at;
            return Err(self.error(DecodeErrorKind::BadStringLength { length: len }));
        }
        let buf: &'a [u8] = self.buf;
        let rest = buf.get(self.pos..).unwrap_or_default();
        let body = self.take(len as usize)?;
        let (text, nul) = body.split_at(body.len() - 1);
        if nul[0] != 0 {
            return Err(DecodeError { kind: DecodeErrorKind::MissingNul, offset: self.pos - 1 });
        }
        match utf8(text) {
            Some(s) => Ok((s, rest)),
            None => Err(DecodeError { kind: DecodeErrorKind::InvalidUtf8, offset: at + 4 }),
        }
    }

    /// Reads a string into a new [`Str`]: no allocation for text of up to [`Str::INLINE_CAP`] bytes.
    #[inline]
    pub fn get_string(&mut self) -> Result<Str, DecodeError> {
        let (s, rest) = self.get_str_and_rest()?;
        Ok(Str::new_at_front(s, rest))
    }

    /// Reads a string into `s`, reusing its memory (the allocation-free decode; see [`Str::assign`]).
    ///
    /// Always inlined: as a call per string, with the reader's position going through memory, it cost path_t's
    /// `decode_into` about a tenth of its time (its rare cases are calls of their own, so it stays small).
    #[inline(always)]
    pub fn get_string_into(&mut self, s: &mut Str) -> Result<(), DecodeError> {
        let (t, rest) = self.get_str_and_rest()?;
        s.assign_at_front(t, rest);
        Ok(())
    }

    /// Skips a string without checking its UTF-8 (for views that walk past it).
    pub fn skip_string(&mut self) -> Result<(), DecodeError> {
        let at = self.pos;
        let len = self.get_i32()?;
        if len <= 0 {
            self.pos = at;
            return Err(self.error(DecodeErrorKind::BadStringLength { length: len }));
        }
        self.take(len as usize).map(|_| ())
    }
}

/// `text` as UTF-8, with a fast path for the usual short ASCII string: `is_ascii` tests a word at a time, where
/// `str::from_utf8` walks a short string byte by byte.
#[inline]
#[allow(unsafe_code)]
fn utf8(text: &[u8]) -> Option<&str> {
    if text.is_ascii() {
        // SAFETY: every byte is below 0x80, and a run of ASCII bytes is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(text) })
    } else {
        std::str::from_utf8(text).ok()
    }
}

/// Whether the first `n` bytes of `window` (`n` at most 16) are ASCII, from one 16-byte load: the first byte with
/// its high bit set must come at `n` or later. False when `window` is shorter than 16 bytes, which only sends the
/// caller to its step-by-step path. `is_ascii` walks a short text's bytes after its last whole word one at a time,
/// a branch on the length per byte.
#[inline(always)]
fn ascii_prefix(window: &[u8], n: usize) -> bool {
    match window.first_chunk::<16>() {
        Some(w) if n <= 16 => {
            let high = u128::from_le_bytes(*w) & 0x8080_8080_8080_8080_8080_8080_8080_8080;
            // Little-endian: byte i is bits 8i..8i+8, so the first high bit at bit 8i + 7 is byte i's (none: 128).
            high.trailing_zeros() as usize >= 8 * n
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian() {
        let mut r = Reader::new(&[0, 0, 1, 0, 0xff]);
        assert_eq!(r.get_i32().unwrap(), 256);
        assert_eq!(r.get_i8().unwrap(), -1);
        assert!(matches!(r.get_i8().unwrap_err().kind, DecodeErrorKind::Truncated { needed: 1, remaining: 0 }));
    }

    #[test]
    fn huge_counts_fail_before_allocating() {
        let r = Reader::new(&[0; 16]);
        assert!(r.ensure_elements(usize::MAX, 4).is_err());
        let mut r = Reader::new(&[0; 16]);
        assert!(r.get_f64_vec(usize::MAX / 2).is_err());
        assert!(r.count(-1).is_err());
    }

    #[test]
    fn zero_size_items_are_bounded() {
        let r = Reader::new(&[0; 4]);
        // Two empty structs in no bytes are fine (LCM allows them); 2^31 rows of nothing are not.
        assert!(r.ensure_dims(&[2], 0).is_ok());
        assert!(r.ensure_dims(&[crate::ZERO_SIZE_SLACK + 4], 0).is_ok());
        assert!(r.ensure_dims(&[crate::ZERO_SIZE_SLACK + 5], 0).is_err());
        assert!(r.ensure_dims(&[i32::MAX as usize, 0], 4).is_err());
        assert!(r.ensure_dims(&[1, 1], 4).is_ok());
        assert!(r.ensure_dims(&[1, 2], 4).is_err());
    }

    #[test]
    fn ascii_fast_path_and_full_validation_agree() {
        // Both branches of `utf8` (checked under Miri by scripts/test): ASCII, multi-byte UTF-8, invalid bytes.
        assert_eq!(utf8(b"waypoint-17"), Some("waypoint-17"));
        assert_eq!(utf8("h\u{e9}\u{20ac}".as_bytes()), Some("h\u{e9}\u{20ac}"));
        assert_eq!(utf8(b""), Some(""));
        assert_eq!(utf8(&[b'a', 0xc3]), None);
        assert_eq!(utf8(&[0xff; 17]), None);
    }

    #[test]
    fn ascii_prefix_sees_only_its_bytes() {
        // Every length up to 16 followed by bytes that are not ASCII, which must not count; a non-ASCII byte at
        // every position of the prefix; windows too short; lengths past 16.
        assert!(ascii_prefix(&[0xff; 16], 0));
        for n in 1..=16 {
            let mut window = vec![b'a'; n];
            window.extend_from_slice(&[0xff; 20]);
            assert!(ascii_prefix(&window, n), "n {n}");
            for bad in 0..n {
                let mut w = window.clone();
                w[bad] = 0x80;
                assert!(!ascii_prefix(&w, n), "n {n}, byte {bad}");
            }
            assert!(!ascii_prefix(&window[..15], n.min(15)));
        }
        assert!(!ascii_prefix(&[b'a'; 40], 17));
    }

    #[test]
    fn fast_and_step_by_step_strings_agree() {
        // Strings the fast path takes and ones it leaves to the checked path (long, non-ASCII, empty, at the end of
        // the buffer), each followed by more bytes or not: same text, same position after.
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for t in [
            "",
            "a",
            "waypoint 7",
            "sixteen bytes!!!",
            "seventeen bytes!!",
            "h\u{e9}llo",
            "a text longer than twenty-two bytes",
        ] {
            let mut b = ((t.len() + 1) as i32).to_be_bytes().to_vec();
            b.extend_from_slice(t.as_bytes());
            b.push(0);
            cases.push(b.clone());
            b.extend_from_slice(&[0xff; 24]);
            cases.push(b);
        }
        for b in &cases {
            let (mut fast, mut slow) = (Reader::new(b), Reader::new(b));
            let f = fast.get_str_and_rest().map(|(s, _)| s.to_string());
            let s = slow.get_str_and_rest_checked().map(|(s, _)| s.to_string());
            assert_eq!((f, fast.position()), (s, slow.position()));
        }
    }

    #[test]
    fn strings_are_checked() {
        assert_eq!(Reader::new(&[0, 0, 0, 2, b'A', 0]).get_str().unwrap(), "A");
        assert_eq!(Reader::new(&[0, 0, 0, 1, 0]).get_str().unwrap(), "");
        let kind = |b: &[u8]| Reader::new(b).get_str().unwrap_err().kind;
        assert_eq!(kind(&[0, 0, 0, 0]), DecodeErrorKind::BadStringLength { length: 0 });
        assert_eq!(kind(&[0xff, 0xff, 0xff, 0xff]), DecodeErrorKind::BadStringLength { length: -1 });
        assert_eq!(kind(&[0, 0, 0, 2, b'A', b'B']), DecodeErrorKind::MissingNul);
        assert_eq!(kind(&[0, 0, 0, 2, 0xc3, 0]), DecodeErrorKind::InvalidUtf8);
        assert!(matches!(kind(&[0x7f, 0xff, 0xff, 0xff, 0]), DecodeErrorKind::Truncated { .. }));
    }

    #[test]
    fn strings_decode_into_str() {
        let enc = |t: &str| {
            let mut b = ((t.len() + 1) as i32).to_be_bytes().to_vec();
            b.extend_from_slice(t.as_bytes());
            b.push(0);
            b
        };
        let long = "a waypoint name longer than 22 bytes";
        let long2 = "A WAYPOINT NAME LONGER THAN 22 BYTES";
        assert_eq!(Reader::new(&enc("wp-1")).get_string().unwrap(), "wp-1");
        assert!(!Reader::new(&enc("wp-1")).get_string().unwrap().is_heap());
        // Followed by more of the message: the short string is copied as a whole inline buffer's worth.
        let mut more = enc("wp-1");
        more.extend_from_slice(&[0xff; 30]);
        let mut r = Reader::new(&more);
        assert_eq!(r.get_string().unwrap(), "wp-1");
        assert_eq!(r.remaining(), 30);
        assert_eq!(Reader::new(&enc(long)).get_string().unwrap(), long);

        let mut s = Str::default();
        Reader::new(&enc(long)).get_string_into(&mut s).unwrap();
        let held = s.as_ptr();
        Reader::new(&enc(long2)).get_string_into(&mut s).unwrap();
        assert_eq!((s.as_str(), s.as_ptr()), (long2, held));
        Reader::new(&enc("\u{e9}t\u{e9}")).get_string_into(&mut s).unwrap();
        assert_eq!(s, "\u{e9}t\u{e9}");
        // A bad string leaves a valid value behind.
        assert!(Reader::new(&[0, 0, 0, 2, 0xc3, 0]).get_string_into(&mut s).is_err());
        assert_eq!(s, "\u{e9}t\u{e9}");
    }
}
