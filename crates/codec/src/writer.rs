//! [`Writer`]: checked, big-endian writes into a buffer.

use crate::error::EncodeError;

/// A cursor over an output buffer. Every write checks the room that remains first.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

macro_rules! scalar_writers {
    ($($put:ident, $put_slice:ident, $bulk:ident: $t:ty, $n:expr, $to:expr;)*) => {$(
        #[allow(clippy::redundant_closure_call)]
        #[doc = concat!("Writes one big-endian `", stringify!($t), "`.")]
        #[inline]
        pub fn $put(&mut self, v: $t) -> Result<(), EncodeError> {
            *self.take_fixed::<$n>()? = ($to)(v);
            Ok(())
        }

        #[doc = concat!("Writes a slice of `", stringify!($t), "`s back to back (in one pass the compiler vectorises).")]
        #[inline]
        pub fn $put_slice(&mut self, vs: &[$t]) -> Result<(), EncodeError> {
            let dst = self.take_array(vs.len(), $n)?;
            crate::fixed::$bulk(dst, vs);
            Ok(())
        }
    )*};
}

impl<'a> Writer<'a> {
    /// A writer at the start of `buf`.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Writer<'a> {
        Writer { buf, pos: 0 }
    }

    /// Bytes written so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Room left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reserves the next `n` bytes and returns them to be filled.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&mut [u8], EncodeError> {
        if n > self.remaining() {
            return Err(EncodeError::BufferTooSmall { needed: n, remaining: self.remaining() });
        }
        let out = &mut self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Reserves the next `N` bytes as an array reference (one check for a run of fixed-size members).
    #[inline]
    pub fn take_fixed<const N: usize>(&mut self) -> Result<&mut [u8; N], EncodeError> {
        let remaining = self.remaining();
        let start = self.pos;
        match self.buf.get_mut(start..).and_then(|s| s.first_chunk_mut::<N>()) {
            Some(c) => {
                self.pos = start + N;
                Ok(c)
            }
            None => Err(EncodeError::BufferTooSmall { needed: N, remaining }),
        }
    }

    /// Reserves `count` elements of `size` bytes each.
    #[inline]
    pub fn take_array(&mut self, count: usize, size: usize) -> Result<&mut [u8], EncodeError> {
        match count.checked_mul(size) {
            Some(n) => self.take(n),
            None => Err(EncodeError::BufferTooSmall { needed: usize::MAX, remaining: self.remaining() }),
        }
    }

    scalar_writers! {
        put_i8, put_i8_slice, write_i8s: i8, 1, |v: i8| v.to_be_bytes();
        put_u8, put_u8_slice, write_u8s: u8, 1, |v: u8| v.to_be_bytes();
        put_i16, put_i16_slice, write_i16s: i16, 2, |v: i16| v.to_be_bytes();
        put_i32, put_i32_slice, write_i32s: i32, 4, |v: i32| v.to_be_bytes();
        put_i64, put_i64_slice, write_i64s: i64, 8, |v: i64| v.to_be_bytes();
        put_u64, put_u64_slice, write_u64s: u64, 8, |v: u64| v.to_be_bytes();
        put_f32, put_f32_slice, write_f32s: f32, 4, |v: f32| v.to_be_bytes();
        put_f64, put_f64_slice, write_f64s: f64, 8, |v: f64| v.to_be_bytes();
        put_bool, put_bool_slice, write_bools: bool, 1, |v: bool| [u8::from(v)];
    }

    /// Writes raw bytes (a `byte` array).
    #[inline]
    pub fn put_bytes(&mut self, b: &[u8]) -> Result<(), EncodeError> {
        self.take(b.len())?.copy_from_slice(b);
        Ok(())
    }

    /// Writes a string: int32 length counting the NUL, the UTF-8 bytes, a NUL. One check of the room left; inlined
    /// so that the position stays in a register across an array of strings.
    #[inline]
    pub fn put_str(&mut self, s: &str) -> Result<(), EncodeError> {
        let b = s.as_bytes();
        let Ok(len) = i32::try_from(b.len() + 1) else {
            return Err(EncodeError::StringTooLong { len: b.len() });
        };
        let dst = self.take(b.len() + 5)?;
        let (head, rest) = dst.split_at_mut(4);
        head.copy_from_slice(&len.to_be_bytes());
        let (body, nul) = rest.split_at_mut(b.len());
        copy_short(body, b);
        if let Some(z) = nul.first_mut() {
            *z = 0;
        }
        Ok(())
    }

    /// Checks an array's length against the length its count member or declaration requires.
    #[inline]
    pub fn check_len(field: &'static str, expected: usize, actual: usize) -> Result<(), EncodeError> {
        if expected == actual {
            Ok(())
        } else {
            Err(EncodeError::LengthMismatch { field, expected, actual })
        }
    }

    /// Turns a count member's value into a length, rejecting negative counts.
    #[inline]
    pub fn count(field: &'static str, value: i64) -> Result<usize, EncodeError> {
        usize::try_from(value).map_err(|_| EncodeError::NegativeCount { field, count: value })
    }
}

/// The encoded size of a string: length prefix, bytes, NUL.
#[inline]
pub fn string_size(s: &str) -> usize {
    4 + s.len() + 1
}

/// `dst.copy_from_slice(src)` (same lengths), with strings of up to 16 bytes (names, ids, frames: most strings in
/// messages) copied by two overlapping fixed-size moves instead of a call to `memcpy`, which costs more than the copy
/// at these sizes (path_t's 50 ids of 10-11 bytes: nerve-rust encode / lcm-c encode 0.50 -> 0.39 on the marshalling
/// suite).
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if (8..=16).contains(&n) {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..].copy_from_slice(&src[n - 8..]);
    } else if (4..8).contains(&n) {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..].copy_from_slice(&src[n - 4..]);
    } else {
        dst.copy_from_slice(src);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_of_every_short_length_are_copied_whole() {
        let text = "0123456789abcdefghijklmnopqrstuvwxyz";
        for n in 0..=text.len() {
            let mut buf = [0xAAu8; 64];
            let mut w = Writer::new(&mut buf);
            w.put_str(&text[..n]).unwrap();
            assert_eq!(w.position(), n + 5);
            assert_eq!(&buf[..4], &((n + 1) as i32).to_be_bytes());
            assert_eq!(&buf[4..4 + n], &text.as_bytes()[..n], "length {n}");
            assert_eq!(buf[4 + n], 0);
            assert!(buf[5 + n..].iter().all(|&b| b == 0xAA), "length {n}: wrote past the string");
        }
    }

    #[test]
    fn writes_big_endian_and_strings() {
        let mut buf = [0u8; 16];
        let mut w = Writer::new(&mut buf);
        w.put_i16(-2).unwrap();
        w.put_str("").unwrap();
        w.put_f32_slice(&[1.0]).unwrap();
        let n = w.position();
        assert_eq!(&buf[..n], &[0xff, 0xfe, 0, 0, 0, 1, 0, 0x3f, 0x80, 0, 0]);
    }

    #[test]
    fn too_small_is_an_error() {
        let mut buf = [0u8; 3];
        assert!(matches!(
            Writer::new(&mut buf).put_i32(1),
            Err(EncodeError::BufferTooSmall { needed: 4, remaining: 3 })
        ));
    }
}
