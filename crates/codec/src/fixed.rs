//! Helpers for generated code: fixed-size chunks, bulk conversion of primitive slices, and fallible array building.
//!
//! Generated encoders and decoders take one checked chunk for a whole run of fixed-size members (or a whole array of
//! fixed-size structs) and then read and write at constant offsets inside it, so the compiler can drop every bounds
//! check. The offsets these helpers are given come from the generator, which knows the chunk's size; an offset out
//! of range is a generator bug, never a property of the input, and panics.

use core::marker::PhantomData;
use core::mem::MaybeUninit;

use crate::error::DecodeError;

mod swap;

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_range(at: usize, n: usize, len: usize) -> ! {
    panic!("nerve-codec: generated code read {n} bytes at {at} of a {len}-byte chunk (generator bug)")
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
pub fn chunks_mut<const S: usize>(b: &mut [u8]) -> impl ExactSizeIterator<Item = &mut [u8; S]> + '_ {
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

/// One member of a fixed-size struct as [`Shuffle::new`] needs it: where it is in memory (`offset_of!`), where it is
/// in the encoding, and its element size and count (a fixed array of numbers is one member of `count` elements).
#[derive(Debug, Clone, Copy)]
pub struct Field {
    mem: usize,
    enc: usize,
    size: usize,
    count: usize,
}

impl Field {
    /// A member at memory offset `mem` and encoded offset `enc`: `count` big-endian numbers of `size` bytes each.
    pub const fn new(mem: usize, enc: usize, size: usize, count: usize) -> Field {
        Field { mem, enc, size, count }
    }
}

/// How to decode one encoded element of a small fixed-size struct `T` straight into `T`'s memory with a single
/// byte shuffle (SSSE3 `pshufb`): for each of the first 16 bytes of `T`, the encoded byte it comes from (big-endian
/// numbers reversed), or zero for padding. Arrays of such structs (a LiDAR point: `float position[3]; byte
/// intensity;`, 13 bytes encoded, 16 in memory) then decode with one load, one shuffle and one store per element
/// instead of a load, a swap and a store per member: [`decode_chunks_shuffled`], and back with
/// [`encode_chunks_shuffled`] when the members fill the first 8 to 16 bytes of `T` (read as two 8-byte loads, so
/// that no padding byte is read).
pub struct Shuffle<T> {
    mask: [i8; 16],
    /// For encoding: the length `L` of the run of member bytes at the front of `T` (8 to 16, then nothing but
    /// padding), or 0 when the members do not form one such run. Each element is read as the 8 bytes at 0 and the
    /// 8 at `L - 8` (member bytes only: reading padding would read uninitialised memory) into one 16-byte vector.
    init: usize,
    /// For encoding: encoded byte `j` is byte `enc[j]` of that vector (or zero, past the encoding).
    enc: [i8; 16],
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Shuffle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Shuffle<T> {}

impl<T> Shuffle<T> {
    /// The shuffle for `T` given its members (generated code passes `offset_of!` for each), or `None` when it
    /// cannot apply: `T` or its encoding is over 16 bytes, `T` has no size, or a member lies outside either.
    ///
    /// # Safety
    ///
    /// Every member of `T` must accept any bit pattern (integers, floats, fixed arrays of them; not `bool`,
    /// `char`, references or enums with invalid values): the decoder writes shuffled input bytes into all of `T`'s
    /// bytes. And `fields` must describe members of `T` (offsets from `offset_of!`, the members' real sizes): the
    /// encoder reads the bytes they cover, which must not be padding.
    #[allow(unsafe_code)]
    pub const unsafe fn new(encoded_size: usize, fields: &[Field]) -> Option<Self> {
        let mem_size = core::mem::size_of::<T>();
        if mem_size == 0 || mem_size > 16 || encoded_size > 16 {
            return None;
        }
        let mut mask = [-1i8; 16];
        let mut f = 0;
        while f < fields.len() {
            let Field { mem, enc, size, count } = fields[f];
            let Some(bytes) = size.checked_mul(count) else {
                return None;
            };
            if mem + bytes > mem_size || enc + bytes > encoded_size {
                return None;
            }
            let mut i = 0;
            while i < bytes {
                // Byte i of the member in memory is byte (size - 1 - i % size) of the same element encoded.
                mask[mem + i] = (enc + i - i % size + (size - 1 - i % size)) as i8;
                i += 1;
            }
            f += 1;
        }
        // The encoder's view: member bytes must be exactly a prefix [0, L) with 8 <= L <= 16.
        let mut init = 0;
        while init < mem_size && mask[init] >= 0 {
            init += 1;
        }
        let mut x = init;
        while x < 16 {
            if mask[x] >= 0 {
                init = 0;
            }
            x += 1;
        }
        let mut enc = [-1i8; 16];
        if init >= 8 {
            let mut x = 0;
            while x < init {
                // Memory byte x sits in lane x of the first 8-byte load, or in lane 8 + (x - (L - 8)) of the second.
                let lane = if x < 8 { x } else { x + 16 - init };
                enc[mask[x] as usize] = lane as i8;
                x += 1;
            }
        } else {
            init = 0;
        }
        Some(Shuffle { mask, init, enc, _t: PhantomData })
    }
}

/// Encodes `src` into `dst` (`src.len()` elements of `S` bytes; the caller reserved exactly that), with one byte
/// shuffle per element where `shuffle` allows it and the CPU has SSSE3, and `f` for the rest (and everything
/// otherwise). The bytes are the same either way.
#[inline(always)]
pub fn encode_chunks_shuffled<const S: usize, T>(
    dst: &mut [u8],
    src: &[T],
    shuffle: Option<Shuffle<T>>,
    f: impl Fn(&T, &mut [u8; S]),
) {
    let done = match shuffle {
        Some(s) if S > 0 && s.init > 0 => {
            let n = src.len().min(dst.len() / S);
            swap::unshuffle_from::<T, S>(&src[..n], s.init, &mut dst[..n * S], &s.enc)
        }
        _ => 0,
    };
    let src = src.get(done..).unwrap_or_default();
    let dst = dst.get_mut(done.saturating_mul(S)..).unwrap_or_default();
    for (c, e) in chunks_mut::<S>(dst).zip(src) {
        f(e, c);
    }
}

/// [`decode_chunks`] for a fixed-size struct that has a [`Shuffle`]: on CPUs with SSSE3, every element whose
/// 16-byte load and store stay inside the input and the vector is decoded by one byte shuffle; `f` decodes the
/// rest (and everything when `shuffle` is `None`, without SSSE3, and under Miri). The result is the same either way.
#[inline(always)]
pub fn decode_chunks_shuffled<const S: usize, T>(
    b: &[u8],
    n: usize,
    shuffle: Option<Shuffle<T>>,
    f: impl Fn(&[u8; S]) -> T,
) -> Vec<T> {
    // `with_capacity`, not `reserve_exact` on an empty `Vec`: the latter goes through `RawVec`'s out-of-line grow
    // path, which costs a few nanoseconds on a 10-point message.
    let mut v = Vec::with_capacity(n);
    decode_chunks_shuffled_into(&mut v, b, n, shuffle, f);
    v
}

/// Like [`decode_chunks_shuffled`], into `v`, reusing its capacity (the allocation-free decode).
#[inline(always)]
pub fn decode_chunks_shuffled_into<const S: usize, T>(
    v: &mut Vec<T>,
    b: &[u8],
    n: usize,
    shuffle: Option<Shuffle<T>>,
    f: impl Fn(&[u8; S]) -> T,
) {
    if S == 0 {
        return decode_chunks_into(v, b, n, f);
    }
    let chunks = exact_chunks::<S>(b, n);
    v.clear();
    if v.capacity() < n {
        v.reserve_exact(n);
    }
    let spare = &mut v.spare_capacity_mut()[..n];
    let done = match shuffle {
        Some(s) => swap::shuffle_into::<T, S>(chunks.as_flattened(), spare, &s.mask),
        None => 0,
    };
    let (spare, chunks) = (&mut spare[done.min(n)..], &chunks[done.min(n)..]);
    for (slot, c) in spare.iter_mut().zip(chunks) {
        slot.write(f(c));
    }
    // SAFETY: `shuffle_into` initialised the first `done` elements (its contract; the `Shuffle` constructor's
    // caller promised that any bytes are a valid `T`), the loop wrote the other `n - done`, and `reserve_exact`
    // made the capacity at least `n`.
    #[allow(unsafe_code)]
    unsafe {
        v.set_len(n)
    };
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

/// Plain numbers that LCM stores big-endian in 2, 4 or 8 bytes: no padding, and every bit pattern is a valid
/// value, so their memory may be filled byte by byte (by [`swap::swap_copy`]). Sealed: only these six.
pub(crate) trait Swapped: Copy + sealed::Sealed {
    /// The encoded (and in-memory) size in bytes.
    const SIZE: usize;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! swapped {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Swapped for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
        }
    )*};
}
swapped!(i16, i32, i64, u64, f32, f64);

/// The memory of `vs` as bytes to be written. Private: the bytes are only ever written with initialised values
/// (by `swap_copy`), which keeps every element a valid `T`.
#[inline(always)]
fn uninit_bytes_of<T: Swapped>(vs: &mut [MaybeUninit<T>]) -> &mut [MaybeUninit<u8>] {
    let len = core::mem::size_of_val(vs);
    // SAFETY: the pointer and length cover exactly the memory of `vs`, which this borrow owns for its lifetime;
    // `MaybeUninit<u8>` has alignment 1 and accepts any content.
    #[allow(unsafe_code)]
    unsafe {
        core::slice::from_raw_parts_mut(vs.as_mut_ptr().cast::<MaybeUninit<u8>>(), len)
    }
}

/// `vs` viewed as `MaybeUninit`, so that initialised and spare memory go through the same code.
#[inline(always)]
fn as_uninit<T: Swapped>(vs: &mut [T]) -> &mut [MaybeUninit<T>] {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout; the callers only write initialised values of `T` (whole elements
    // of initialised bytes; every bit pattern is a valid `T`, see `Swapped`), so `vs` stays initialised.
    #[allow(unsafe_code)]
    unsafe {
        core::slice::from_raw_parts_mut(vs.as_mut_ptr().cast::<MaybeUninit<T>>(), vs.len())
    }
}

/// The bytes of `vs` in memory (native order).
#[inline(always)]
fn bytes_of<T: Swapped>(vs: &[T]) -> &[u8] {
    // SAFETY: the pointer and length cover exactly the memory of `vs`; `Swapped` types have no padding, so every
    // byte is initialised; `u8` has alignment 1.
    #[allow(unsafe_code)]
    unsafe {
        core::slice::from_raw_parts(vs.as_ptr().cast::<u8>(), core::mem::size_of_val(vs))
    }
}

/// Converts big-endian bytes to `T`s: `out.len()` of them (or as many as `src` holds) from the front of `src`.
#[inline]
pub(crate) fn read_swapped<T: Swapped>(src: &[u8], out: &mut [T]) {
    let n = out.len().min(src.len() / T::SIZE);
    swap_elems::<T>(&src[..n * T::SIZE], &mut as_uninit(out)[..n]);
}

/// Writes `vs` as big-endian bytes to the front of `dst` (as many as fit).
#[inline]
pub(crate) fn write_swapped<T: Swapped>(dst: &mut [u8], vs: &[T]) {
    let n = vs.len().min(dst.len() / T::SIZE);
    // SAFETY: `MaybeUninit<u8>` has `u8`'s layout, and `swap_copy` writes only initialised bytes, so `dst` stays
    // initialised.
    #[allow(unsafe_code)]
    let d = unsafe { core::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<MaybeUninit<u8>>(), n * T::SIZE) };
    swap_size::<T>(bytes_of(&vs[..n]), d);
}

/// Decodes `n` big-endian `T`s from the front of `src` into `v`, replacing its contents and reusing its capacity.
/// Each element is written once, straight from the byte swap (no zero-filling first). `src` must hold `n` elements
/// (the decoders check it before they call this); if it does not, this panics (a bug in the caller).
#[inline]
pub(crate) fn read_swapped_vec<T: Swapped>(v: &mut Vec<T>, src: &[u8], n: usize) {
    let bytes = n.checked_mul(T::SIZE).and_then(|len| src.get(..len));
    let Some(bytes) = bytes else { out_of_range(0, n.saturating_mul(T::SIZE), src.len()) };
    v.clear();
    if v.capacity() < n {
        v.reserve_exact(n);
    }
    swap_elems::<T>(bytes, &mut v.spare_capacity_mut()[..n]);
    // SAFETY: `swap_elems` initialised all `n * T::SIZE` bytes of the first `n` spare elements (`bytes` is exactly
    // that long), and `reserve_exact` made the capacity at least `n`.
    #[allow(unsafe_code)]
    unsafe {
        v.set_len(n)
    };
}

/// Swaps whole elements from `src` (exactly `out.len()` of them) into `out`.
#[inline(always)]
fn swap_elems<T: Swapped>(src: &[u8], out: &mut [MaybeUninit<T>]) {
    swap_size::<T>(src, uninit_bytes_of(out));
}

#[inline(always)]
fn swap_size<T: Swapped>(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    #[cfg(target_endian = "big")]
    {
        for (d, s) in dst.iter_mut().zip(src) {
            d.write(*s);
        }
    }
    #[cfg(target_endian = "little")]
    match T::SIZE {
        2 => swap::swap_copy::<2>(src, dst),
        4 => swap::swap_copy::<4>(src, dst),
        _ => swap::swap_copy::<8>(src, dst),
    }
}

/// Decoding a whole array of one primitive type into a `Vec` (what [`crate::Reader`]'s `get_*_vec` and
/// `get_*_vec_into` do after checking the length).
pub(crate) trait DecodeVec: Sized {
    /// Replaces the contents of `v` with `n` elements decoded from the front of `src`, reusing its capacity. `src`
    /// must hold them (the reader checks it first; otherwise this panics, a bug in the caller).
    fn decode_vec(v: &mut Vec<Self>, src: &[u8], n: usize);
}

impl<T: Swapped> DecodeVec for T {
    #[inline]
    fn decode_vec(v: &mut Vec<T>, src: &[u8], n: usize) {
        read_swapped_vec(v, src, n)
    }
}

macro_rules! bulk {
    ($($read:ident, $write:ident: $t:ty;)*) => {$(
        #[doc = concat!("Converts big-endian bytes to `", stringify!($t), "`s: `out.len()` of them from the front of `src`.")]
        #[inline]
        pub fn $read(src: &[u8], out: &mut [$t]) {
            read_swapped(src, out)
        }

        #[doc = concat!("Writes `vs` as big-endian `", stringify!($t), "`s to the front of `dst`.")]
        #[inline]
        pub fn $write(dst: &mut [u8], vs: &[$t]) {
            write_swapped(dst, vs)
        }
    )*};
}

macro_rules! bulk_bytes {
    ($($read:ident, $write:ident: $t:ty, $from:expr, $to:expr;)*) => {$(
        #[doc = concat!("Converts bytes to `", stringify!($t), "`s: `out.len()` of them from the front of `src`.")]
        #[inline]
        pub fn $read(src: &[u8], out: &mut [$t]) {
            let from = $from;
            for (o, c) in out.iter_mut().zip(src) {
                *o = from(*c);
            }
        }

        #[doc = concat!("Writes `vs` as `", stringify!($t), "`s to the front of `dst`.")]
        #[inline]
        pub fn $write(dst: &mut [u8], vs: &[$t]) {
            let to = $to;
            for (d, v) in dst.iter_mut().zip(vs) {
                *d = to(*v);
            }
        }

        impl DecodeVec for $t {
            #[inline]
            fn decode_vec(v: &mut Vec<$t>, src: &[u8], n: usize) {
                let Some(bytes) = src.get(..n) else { out_of_range(0, n, src.len()) };
                let from = $from;
                v.clear();
                v.reserve_exact(n);
                v.extend(bytes.iter().map(|b| from(*b)));
            }
        }
    )*};
}

bulk_bytes! {
    read_i8s, write_i8s: i8, |b: u8| b as i8, |v: i8| v as u8;
    read_u8s, write_u8s: u8, |b: u8| b, |v: u8| v;
    read_bools, write_bools: bool, |b: u8| b != 0, u8::from;
}

bulk! {
    read_i16s, write_i16s: i16;
    read_i32s, write_i32s: i32;
    read_i64s, write_i64s: i64;
    read_u64s, write_u64s: u64;
    read_f32s, write_f32s: f32;
    read_f64s, write_f64s: f64;
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
    fn vectors_decode_in_place_and_round_trip() {
        // Through the public readers and writers, every multi-byte type, at lengths on both sides of the SIMD
        // threshold; `get_*_vec_into` over a longer and a shorter held vector (reused capacity).
        macro_rules! each {
            ($($t:ty, $get:ident, $into:ident, $put:ident;)*) => {$(
                for n in [0usize, 1, 3, 7, 33, 100] {
                    let vs: Vec<$t> = (0..n).map(|i| ((i * 3 + 1) as $t) * (if i % 2 == 0 { 1 } else { 2 } as $t)).collect();
                    let mut buf = vec![0u8; n * core::mem::size_of::<$t>()];
                    crate::Writer::new(&mut buf).$put(&vs).unwrap();
                    let want: Vec<u8> = vs.iter().flat_map(|v| v.to_be_bytes()).collect();
                    assert_eq!(buf, want);
                    assert_eq!(crate::Reader::new(&buf).$get(n).unwrap(), vs);
                    for held in [vec![<$t>::default(); 2 * n + 1], vec![<$t>::default(); n / 2]] {
                        let mut held = held;
                        crate::Reader::new(&buf).$into(&mut held, n).unwrap();
                        assert_eq!(held, vs);
                    }
                    let mut arr = vec![<$t>::default(); n];
                    read_swapped(&buf, &mut arr);
                    assert_eq!(arr, vs);
                }
            )*};
        }
        each! {
            i16, get_i16_vec, get_i16_vec_into, put_i16_slice;
            i32, get_i32_vec, get_i32_vec_into, put_i32_slice;
            i64, get_i64_vec, get_i64_vec_into, put_i64_slice;
            u64, get_u64_vec, get_u64_vec_into, put_u64_slice;
            f32, get_f32_vec, get_f32_vec_into, put_f32_slice;
            f64, get_f64_vec, get_f64_vec_into, put_f64_slice;
        }
        let mut v = vec![1u8, 2, 3];
        crate::Reader::new(&[9, 8]).get_u8_vec_into(&mut v, 2).unwrap();
        assert_eq!(v, [9, 8]);
        assert_eq!(crate::Reader::new(&[0, 2]).get_bool_vec(2).unwrap(), [false, true]);
    }

    /// A LiDAR point: 13 bytes encoded, 16 in memory (3 of padding).
    #[derive(Debug, Clone, Copy)]
    struct Point {
        position: [f32; 3],
        intensity: u8,
    }

    /// Members the compiler reorders in memory (i32 first): 7 bytes encoded, 8 in memory.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Mixed {
        a: i16,
        b: i32,
        c: i8,
    }

    /// Exactly 16 bytes both ways.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Wide {
        x: f64,
        y: i64,
    }

    fn point(c: &[u8; 13]) -> Point {
        Point { position: [0, 4, 8].map(|o| f32::from_be_bytes(at::<4>(c, o))), intensity: c[12] }
    }
    fn point_bits(p: &Point) -> ([u32; 3], u8) {
        (p.position.map(f32::to_bits), p.intensity)
    }
    fn mixed(c: &[u8; 7]) -> Mixed {
        Mixed { a: i16::from_be_bytes(at::<2>(c, 0)), b: i32::from_be_bytes(at::<4>(c, 2)), c: c[6] as i8 }
    }
    fn wide(c: &[u8; 16]) -> Wide {
        Wide { x: f64::from_be_bytes(at::<8>(c, 0)), y: i64::from_be_bytes(at::<8>(c, 8)) }
    }

    fn enc_point(p: &Point, c: &mut [u8; 13]) {
        for (k, v) in p.position.iter().enumerate() {
            *chunk_mut::<4>(c, 4 * k) = v.to_be_bytes();
        }
        c[12] = p.intensity;
    }
    fn enc_mixed(p: &Mixed, c: &mut [u8; 7]) {
        *chunk_mut::<2>(c, 0) = p.a.to_be_bytes();
        *chunk_mut::<4>(c, 2) = p.b.to_be_bytes();
        c[6] = p.c as u8;
    }
    fn enc_wide(p: &Wide, c: &mut [u8; 16]) {
        *chunk_mut::<8>(c, 0) = p.x.to_be_bytes();
        *chunk_mut::<8>(c, 8) = p.y.to_be_bytes();
    }

    /// `encode_chunks_shuffled` against the member-by-member encoder, on the values `decode_chunks` gives.
    fn check_encode<const S: usize, T>(vals: &[T], s: Option<Shuffle<T>>, f: impl Fn(&T, &mut [u8; S]) + Copy) -> bool {
        let mut want = vec![0xaa; vals.len() * S];
        for (c, e) in chunks_mut::<S>(&mut want).zip(vals) {
            f(e, c);
        }
        let mut got = vec![0x55; vals.len() * S];
        encode_chunks_shuffled::<S, T>(&mut got, vals, s, f);
        got == want
    }

    #[allow(unsafe_code)]
    #[test]
    fn shuffled_struct_arrays_decode_like_the_scalar_loop() {
        use core::mem::offset_of;
        // SAFETY: both members are numbers (an array of f32, a u8).
        let sp = unsafe {
            Shuffle::<Point>::new(
                13,
                &[Field::new(offset_of!(Point, position), 0, 4, 3), Field::new(offset_of!(Point, intensity), 12, 1, 1)],
            )
        };
        // SAFETY: all three members are integers.
        let sm = unsafe {
            Shuffle::<Mixed>::new(
                7,
                &[
                    Field::new(offset_of!(Mixed, a), 0, 2, 1),
                    Field::new(offset_of!(Mixed, b), 2, 4, 1),
                    Field::new(offset_of!(Mixed, c), 6, 1, 1),
                ],
            )
        };
        // SAFETY: an f64 and an i64.
        let sw = unsafe {
            Shuffle::<Wide>::new(
                16,
                &[Field::new(offset_of!(Wide, x), 0, 8, 1), Field::new(offset_of!(Wide, y), 8, 8, 1)],
            )
        };
        assert!(sp.is_some() && sm.is_some() && sw.is_some());
        // Point's member bytes are [0, 13) and Wide's [0, 16): both encode by shuffle; Mixed's 7 are too few.
        assert_eq!([sp.map(|s| s.init), sm.map(|s| s.init), sw.map(|s| s.init)], [Some(13), Some(0), Some(16)]);
        // Too big for one shuffle: no shuffle, and the scalar loop does all the work.
        // SAFETY: an array of i64 (and the Wide below: an f64 and an i64).
        assert!(unsafe { Shuffle::<[i64; 3]>::new(24, &[Field::new(0, 0, 8, 3)]) }.is_none());
        // A member that lies outside the encoding is refused.
        // SAFETY: as above, Wide's members are an f64 and an i64.
        assert!(unsafe { Shuffle::<Wide>::new(12, &[Field::new(0, 8, 8, 1)]) }.is_none());

        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let bytes: Vec<u8> = (0..16 * 80 + 3)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        let mut held_p = vec![point(&[7; 13]); 100];
        let mut held_m = Vec::new();
        let mut held_w = vec![wide(&[1; 16]); 3];
        for n in 0..if cfg!(miri) { 20 } else { 80 } {
            for skew in [0, 3] {
                let b = &bytes[skew..];
                let want: Vec<_> = decode_chunks::<13, _>(b, n, point).iter().map(point_bits).collect();
                let got = decode_chunks_shuffled::<13, _>(b, n, sp, point);
                assert_eq!(got.iter().map(point_bits).collect::<Vec<_>>(), want, "Point n={n}");
                // Only the bytes of the n elements are read: a slice of exactly n * 13 bytes gives the same.
                let exact = decode_chunks_shuffled::<13, _>(&b[..n * 13], n, sp, point);
                assert_eq!(exact.iter().map(point_bits).collect::<Vec<_>>(), want);
                decode_chunks_shuffled_into::<13, _>(&mut held_p, b, n, sp, point);
                assert_eq!(held_p.iter().map(point_bits).collect::<Vec<_>>(), want);

                let want = decode_chunks::<7, _>(b, n, mixed);
                assert_eq!(decode_chunks_shuffled::<7, _>(&b[..n * 7], n, sm, mixed), want, "Mixed n={n}");
                decode_chunks_shuffled_into::<7, _>(&mut held_m, b, n, sm, mixed);
                assert_eq!(held_m, want);

                let want: Vec<_> = decode_chunks::<16, _>(b, n, wide).iter().map(|w| (w.x.to_bits(), w.y)).collect();
                decode_chunks_shuffled_into::<16, _>(&mut held_w, &b[..n * 16], n, sw, wide);
                assert_eq!(held_w.iter().map(|w| (w.x.to_bits(), w.y)).collect::<Vec<_>>(), want, "Wide n={n}");
                // Encoding back gives the input bytes (point and wide: 16-byte stores; mixed: no encode shuffle).
                assert!(check_encode(&decode_chunks::<13, _>(b, n, point), sp, enc_point), "encode Point n={n}");
                assert!(check_encode(&decode_chunks::<7, _>(b, n, mixed), sm, enc_mixed), "encode Mixed n={n}");
                assert!(check_encode(&decode_chunks::<16, _>(b, n, wide), sw, enc_wide), "encode Wide n={n}");
                // Without a shuffle: the scalar loop alone.
                assert_eq!(decode_chunks_shuffled::<7, Mixed>(b, n, None, mixed), decode_chunks::<7, _>(b, n, mixed));
            }
        }
    }

    #[test]
    fn try_array_stops_at_the_first_error() {
        let mut i = 0;
        let r: Result<[u32; 4], _> = try_array(
            || {
                i += 1;
                if i == 3 {
                    Err(DecodeError { kind: DecodeErrorKind::MissingNul, offset: 7 })
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
