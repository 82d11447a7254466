//! Helpers for generated code: fixed-size chunks, bulk conversion of primitive slices, and fallible array building.
//!
//! Generated encoders and decoders take one checked chunk for a whole run of fixed-size members (or a whole array of
//! fixed-size structs) and then read and write at constant offsets inside it, so the compiler can drop every bounds
//! check. The offsets these helpers are given come from the generator, which knows the chunk's size; an offset out
//! of range is a generator bug, never a property of the input, and panics.

use crate::error::DecodeError;

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_range(at: usize, n: usize, len: usize) -> ! {
    panic!(
        "nerve-codec: generated code read {n} bytes at {at} of a {len}-byte chunk (generator bug)"
    )
}

/// The `K` bytes at offset `o` of `b`, copied.
#[inline(always)]
#[track_caller]
pub fn at<const K: usize>(b: &[u8], o: usize) -> [u8; K] {
    *chunk::<K>(b, o)
}

/// The `K` bytes at offset `o` of `b`, as an array reference.
#[inline(always)]
#[track_caller]
pub fn chunk<const K: usize>(b: &[u8], o: usize) -> &[u8; K] {
    match b.get(o..).and_then(|s| s.first_chunk::<K>()) {
        Some(c) => c,
        None => out_of_range(o, K, b.len()),
    }
}

/// The `K` bytes at offset `o` of `b`, as a mutable array reference.
#[inline(always)]
#[track_caller]
pub fn chunk_mut<const K: usize>(b: &mut [u8], o: usize) -> &mut [u8; K] {
    let len = b.len();
    match b.get_mut(o..).and_then(|s| s.first_chunk_mut::<K>()) {
        Some(c) => c,
        None => out_of_range(o, K, len),
    }
}

/// `b` cut into `S`-byte array references (a trailing partial chunk is ignored). `S` must not be 0 (generated code
/// never asks for zero-size chunks; if it did, it would get one per byte rather than a panic).
#[inline(always)]
pub fn chunks<const S: usize>(b: &[u8]) -> impl ExactSizeIterator<Item = &[u8; S]> + '_ {
    b.chunks_exact(S.max(1)).map(|c| chunk::<S>(c, 0))
}

/// `b` cut into mutable `S`-byte array references (a trailing partial chunk is ignored).
#[inline(always)]
pub fn chunks_mut<const S: usize>(
    b: &mut [u8],
) -> impl ExactSizeIterator<Item = &mut [u8; S]> + '_ {
    b.chunks_exact_mut(S).map(|c| chunk_mut::<S>(c, 0))
}

/// `n` elements decoded by `f` from consecutive `S`-byte chunks at the front of `b` (which the caller has checked
/// holds `n * S` bytes), into a new `Vec` of exactly `n`. The chunks come from `as_chunks` (a division by the
/// constant `S`, i.e. a multiply) cut to `n` with one check, so the loop has no per-element bounds check and the
/// `Vec` is filled from an exact-size iterator.
#[inline(always)]
pub fn decode_chunks<const S: usize, T>(b: &[u8], n: usize, f: impl Fn(&[u8; S]) -> T) -> Vec<T> {
    if S == 0 {
        return (0..n).map(|_| f(chunk::<S>(b, 0))).collect();
    }
    exact_chunks::<S>(b, n).iter().map(f).collect()
}

/// Like [`decode_chunks`], into `v`, reusing its capacity (the allocation-free decode).
#[inline(always)]
pub fn decode_chunks_into<const S: usize, T>(v: &mut Vec<T>, b: &[u8], n: usize, f: impl Fn(&[u8; S]) -> T) {
    v.clear();
    if S == 0 {
        v.extend((0..n).map(|_| f(chunk::<S>(b, 0))));
        return;
    }
    v.extend(exact_chunks::<S>(b, n).iter().map(f));
}

/// The first `n` `S`-byte chunks of `b` (`S > 0`); `b` must hold them (the decoders' callers check it first).
#[inline(always)]
#[track_caller]
fn exact_chunks<const S: usize>(b: &[u8], n: usize) -> &[[u8; S]] {
    let (chunks, _) = b.as_chunks::<S>();
    match chunks.get(..n) {
        Some(c) => c,
        None => out_of_range(0, n.saturating_mul(S), b.len()),
    }
}

/// Builds `[T; N]` from a fallible element reader, stopping at the first error. `filler` makes the (unused)
/// elements after an error, so that no element is ever left uninitialised and no `unsafe` is needed.
#[inline]
pub fn try_array<T, const N: usize>(
    mut read: impl FnMut() -> Result<T, DecodeError>,
    mut filler: impl FnMut() -> T,
) -> Result<[T; N], DecodeError> {
    let mut err = None;
    let arr = core::array::from_fn(|_| {
        if err.is_none() {
            match read() {
                Ok(v) => return v,
                Err(e) => err = Some(e),
            }
        }
        filler()
    });
    match err {
        Some(e) => Err(e),
        None => Ok(arr),
    }
}

macro_rules! bulk {
    ($($read:ident, $write:ident: $t:ty, $n:expr, $from:expr, $to:expr;)*) => {$(
        #[doc = concat!("Converts big-endian bytes to `", stringify!($t), "`s: `out.len()` of them from the front of `src`.")]
        #[inline]
        pub fn $read(src: &[u8], out: &mut [$t]) {
            let from = $from;
            for (o, c) in out.iter_mut().zip(chunks::<$n>(src)) {
                *o = from(*c);
            }
        }

        #[doc = concat!("Writes `vs` as big-endian `", stringify!($t), "`s to the front of `dst`.")]
        #[inline]
        pub fn $write(dst: &mut [u8], vs: &[$t]) {
            let to = $to;
            for (d, v) in chunks_mut::<$n>(dst).zip(vs) {
                *d = to(*v);
            }
        }
    )*};
}

bulk! {
    read_i8s, write_i8s: i8, 1, |b: [u8; 1]| b[0] as i8, |v: i8| [v as u8];
    read_u8s, write_u8s: u8, 1, |b: [u8; 1]| b[0], |v: u8| [v];
    read_i16s, write_i16s: i16, 2, i16::from_be_bytes, i16::to_be_bytes;
    read_i32s, write_i32s: i32, 4, i32::from_be_bytes, i32::to_be_bytes;
    read_i64s, write_i64s: i64, 8, i64::from_be_bytes, i64::to_be_bytes;
    read_u64s, write_u64s: u64, 8, u64::from_be_bytes, u64::to_be_bytes;
    read_f32s, write_f32s: f32, 4, f32::from_be_bytes, f32::to_be_bytes;
    read_f64s, write_f64s: f64, 8, f64::from_be_bytes, f64::to_be_bytes;
    read_bools, write_bools: bool, 1, |b: [u8; 1]| b[0] != 0, |v: bool| [u8::from(v)];
}

/// The number of elements of a multi-dimensional array: the product of its dimensions, or `None` on overflow.
#[inline]
pub fn product(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |acc, d| acc.checked_mul(*d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::DecodeErrorKind;

    #[test]
    fn bulk_round_trip() {
        let vs = [1.5f32, -0.0, f32::INFINITY];
        let mut b = [0u8; 12];
        write_f32s(&mut b, &vs);
        assert_eq!(&b[..4], &[0x3f, 0xc0, 0, 0]);
        let mut back = [0f32; 3];
        read_f32s(&b, &mut back);
        assert_eq!(back.map(f32::to_bits), vs.map(f32::to_bits));
    }

    #[test]
    fn try_array_stops_at_the_first_error() {
        let mut i = 0;
        let r: Result<[u32; 4], _> = try_array(
            || {
                i += 1;
                if i == 3 {
                    Err(DecodeError {
                        kind: DecodeErrorKind::MissingNul,
                        offset: 7,
                    })
                } else {
                    Ok(i)
                }
            },
            || 0,
        );
        assert_eq!(r.unwrap_err().offset, 7);
        assert_eq!(i, 3);
        let ok: Result<[u32; 3], DecodeError> = try_array(|| Ok(5), || 0);
        assert_eq!(ok.unwrap(), [5, 5, 5]);
    }

    #[test]
    fn product_overflow() {
        assert_eq!(product(&[2, 3, 4]), Some(24));
        assert_eq!(product(&[]), Some(1));
        assert_eq!(product(&[usize::MAX, 2]), None);
    }

    #[test]
    fn decode_chunks_takes_the_first_n_chunks() {
        let b = [0u8, 1, 2, 3, 4, 5, 6, 7];
        let sum = |c: &[u8; 3]| c.iter().map(|&x| u32::from(x)).sum::<u32>();
        assert_eq!(decode_chunks::<3, _>(&b, 2, sum), vec![3, 12]);
        assert_eq!(decode_chunks::<3, _>(&b, 0, sum), Vec::<u32>::new());
        let mut v = vec![9, 9, 9];
        decode_chunks_into::<3, _>(&mut v, &b, 2, sum);
        assert_eq!(v, vec![3, 12]);
        // zero-size elements (empty structs): n of them, from no bytes
        assert_eq!(decode_chunks::<0, _>(&[], 4, |_| 1u8), vec![1; 4]);
        decode_chunks_into::<0, _>(&mut v, &[], 1, |_| 7);
        assert_eq!(v, vec![7]);
    }

    #[test]
    #[should_panic(expected = "generator bug")]
    fn decode_chunks_past_the_end_is_a_generator_bug() {
        decode_chunks::<4, _>(&[0; 7], 2, |c| c[0]);
    }
}
