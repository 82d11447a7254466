//! Byte-swapping copies of whole arrays of 2-, 4- and 8-byte numbers: the inner loop of every numeric-array encode
//! and decode (LCM is big-endian, the machines Nerve runs on are little-endian).
//!
//! Why not leave it to the compiler: x86-64's baseline (SSE2) has no byte shuffle, and LLVM lowers a vectorised
//! `swap_bytes` there as widen-bytes-to-words, two word shuffles and a pack per 8 bytes: seven shuffle instructions
//! per 16 bytes, which made a 180-float decode several times slower than the swap needs to be (the marshalling suite in
//! `bench/` shows it). SSSE3's `pshufb` reverses every element of a 16-byte block in one instruction;
//! every x86-64 CPU since 2006 has it, but it is not in the baseline, so it is detected at run time (std caches the
//! answer) and the portable loop remains for the rest, for other architectures, and for Miri.

use core::mem::MaybeUninit;

/// Copies `src` into `dst` (the first `min(src.len(), dst.len())` bytes, rounded down to whole elements), reversing
/// the bytes of every `S`-byte element. `S` is 2, 4 or 8. Every byte written is initialised: callers may treat
/// the written prefix of `dst` as initialised.
#[inline]
pub(crate) fn swap_copy<const S: usize>(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    let len = src.len().min(dst.len()) / S * S;
    let (src, dst) = (&src[..len], &mut dst[..len]);
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if len >= SIMD_MIN && ssse3() {
        // SAFETY: `ssse3()` has just confirmed that the CPU has SSSE3, the only target feature `swap_ssse3` enables.
        #[allow(unsafe_code)]
        unsafe {
            x86::swap_ssse3::<S>(src, dst)
        };
        return;
    }
    swap_portable::<S>(src, dst);
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
/// The shortest array that takes the SIMD path: below it the call into the `target_feature` function (which cannot
/// be inlined into its baseline caller) and the feature test cost about what they save, and the compiler can fully
/// unroll a small fixed-size array (a `float position[3]`) into `bswap`s where it is known at compile time.
const SIMD_MIN: usize = 32;

/// Whether this CPU has SSSE3 (known at compile time when the build targets it, otherwise std's cached detection).
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
fn ssse3() -> bool {
    cfg!(target_feature = "ssse3") || std::arch::is_x86_feature_detected!("ssse3")
}

/// The element-by-element loop: the reference the SIMD path is tested against, and the path everywhere else. Each
/// element goes through `from_be_bytes` of the unsigned integer of its size, which compiles to one `bswap` (or
/// `movbe`) per element; a byte-reversing loop instead makes LLVM emit SSE2 shuffles even for a single element.
#[inline]
pub(crate) fn swap_portable<const S: usize>(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    macro_rules! each {
        ($u:ty) => {
            for (d, s) in dst.chunks_exact_mut(S).zip(src.chunks_exact(S)) {
                if let (Some(s), Some(d)) = (s.first_chunk(), d.first_chunk_mut::<{ S }>()) {
                    let v = <$u>::from_be_bytes(*s).to_ne_bytes();
                    for (o, b) in d.iter_mut().zip(v) {
                        o.write(b);
                    }
                }
            }
        };
    }
    match S {
        2 => each!(u16),
        4 => each!(u32),
        8 => each!(u64),
        _ => unreachable!("swap_portable::<{S}>: elements are 2, 4 or 8 bytes"),
    }
}

/// Decodes elements of `S` encoded bytes from `src` into `dst` with the `pshufb` control `mask` (one 16-byte
/// load, shuffle and store per element; see `crate::fixed::Shuffle`), as far as each element's 16-byte load stays
/// inside `src` and its 16-byte store inside `dst`, and returns how many it decoded: the first `k` elements of
/// `dst` are then fully written (the caller decodes the rest). Returns 0 without SSSE3, on other architectures and
/// under Miri.
#[inline]
pub(crate) fn shuffle_into<T, const S: usize>(src: &[u8], dst: &mut [MaybeUninit<T>], mask: &[i8; 16]) -> usize {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if ssse3() {
        // SAFETY: `ssse3()` has just confirmed that the CPU has SSSE3, the only target feature `shuffle_ssse3`
        // enables.
        #[allow(unsafe_code)]
        return unsafe { x86::shuffle_ssse3::<T, S>(src, dst, mask) };
    }
    let _ = (src, dst, mask);
    0
}

/// Encodes leading elements of `src` into `dst` (`S` bytes each) with one shuffle each: each element is read as
/// its 8 bytes at 0 and its 8 bytes at `init - 8` (the caller guarantees that its first `init` bytes, 8 to 16, are
/// all member bytes, never padding), shuffled by `enc`, and stored as 16 bytes at `i * S`, for as many elements
/// as have that store inside `dst`. Returns how many (0 without SSSE3, elsewhere, under Miri).
#[inline]
pub(crate) fn unshuffle_from<T, const S: usize>(src: &[T], init: usize, dst: &mut [u8], enc: &[i8; 16]) -> usize {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if ssse3() {
        // SAFETY: `ssse3()` has just confirmed that the CPU has SSSE3, the only target feature
        // `unshuffle_ssse3` enables; the caller's guarantee about `init` is passed on.
        #[allow(unsafe_code)]
        return unsafe { x86::unshuffle_ssse3::<T, S>(src, init, dst, enc) };
    }
    let _ = (src, init, dst, enc);
    0
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod x86 {
    use core::arch::x86_64::{
        __m128i, _mm_loadl_epi64, _mm_loadu_si128, _mm_setr_epi8, _mm_shuffle_epi8, _mm_storeu_si128,
        _mm_unpacklo_epi64,
    };
    use core::mem::size_of;
    use core::mem::MaybeUninit;

    /// The `pshufb` control that reverses each `S`-byte element of a 16-byte block.
    #[inline(always)]
    fn reverse_mask<const S: usize>() -> [i8; 16] {
        let mut m = [0i8; 16];
        for (i, b) in m.iter_mut().enumerate() {
            // i - i % S is the element's first byte; S - 1 - i % S counts back from its last. Always < 16.
            *b = (i - i % S + (S - 1 - i % S)) as i8;
        }
        m
    }

    /// [`super::swap_copy`] 16 bytes at a time: four blocks per step, then single blocks, then one last block that
    /// ends exactly at the end (overlapping bytes already written, with the same values) instead of a scalar tail.
    /// The caller checks that `src` and `dst` have the same length, a multiple of `S`, of at least 16 bytes.
    #[target_feature(enable = "ssse3")]
    #[allow(unsafe_code)]
    pub(super) unsafe fn swap_ssse3<const S: usize>(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
        let len = src.len();
        assert!(len >= 16 && dst.len() == len && len.is_multiple_of(S) && 16 % S == 0);
        let m = reverse_mask::<S>();
        let mask = _mm_setr_epi8(
            m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10], m[11], m[12], m[13], m[14], m[15],
        );
        let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
        // A macro rather than a closure, so that the code stays inside this function's `target_feature`.
        macro_rules! block {
            ($o:expr) => {{
                let o: usize = $o;
                // SAFETY: the callers below keep `o + 16 <= len`, so the 16 bytes at `o` are inside `src` (readable)
                // and `dst` (writable; `MaybeUninit` accepts any bytes); `loadu`/`storeu` need no alignment; `src`
                // and `dst` are distinct borrows, so they do not overlap.
                unsafe {
                    let v = _mm_loadu_si128(s.add(o).cast::<__m128i>());
                    _mm_storeu_si128(d.add(o).cast::<__m128i>(), _mm_shuffle_epi8(v, mask));
                }
            }};
        }
        let mut o = 0;
        while o + 64 <= len {
            block!(o);
            block!(o + 16);
            block!(o + 32);
            block!(o + 48);
            o += 64;
        }
        while o + 16 <= len {
            block!(o);
            o += 16;
        }
        if o < len {
            // len - 16 is a multiple of S (both are), so this block swaps whole elements.
            block!(len - 16);
        }
    }

    /// See [`super::shuffle_into`]: the elements `i` with `i * size + 16 <= src.len()` and
    /// `i * size_of::<T>() + 16 <= dst.len() * size_of::<T>()`, four per step.
    #[target_feature(enable = "ssse3")]
    #[allow(unsafe_code)]
    pub(super) unsafe fn shuffle_ssse3<T, const S: usize>(
        src: &[u8],
        dst: &mut [MaybeUninit<T>],
        mask: &[i8; 16],
    ) -> usize {
        // A constant, so that the divisions below are multiplications.
        let size = S;
        let m = size_of::<T>();
        assert!(size > 0 && (1..=16).contains(&m));
        let n = dst.len().min(src.len() / size);
        let fit_src = if src.len() >= 16 { (src.len() - 16) / size + 1 } else { 0 };
        let fit_dst = if n * m >= 16 { (n * m - 16) / m + 1 } else { 0 };
        let k = n.min(fit_src).min(fit_dst);
        // SAFETY: `mask` is 16 readable bytes; `loadu` needs no alignment.
        let ctl = unsafe { _mm_loadu_si128(mask.as_ptr().cast::<__m128i>()) };
        let (s, d) = (src.as_ptr(), dst.as_mut_ptr().cast::<u8>());
        macro_rules! elem {
            ($i:expr) => {{
                let i: usize = $i;
                // SAFETY: i < k, so i * size + 16 <= src.len() (the load is inside `src`) and i * m + 16 <= n * m
                // <= the bytes of `dst` (the store is inside `dst`, which is `MaybeUninit` and accepts any bytes;
                // bytes past element i belong to later elements, which are written again after this one).
                unsafe {
                    let v = _mm_loadu_si128(s.add(i * size).cast::<__m128i>());
                    _mm_storeu_si128(d.add(i * m).cast::<__m128i>(), _mm_shuffle_epi8(v, ctl));
                }
            }};
        }
        let mut i = 0;
        while i + 4 <= k {
            elem!(i);
            elem!(i + 1);
            elem!(i + 2);
            elem!(i + 3);
            i += 4;
        }
        while i < k {
            elem!(i);
            i += 1;
        }
        k
    }

    /// See [`super::unshuffle_from`]: the elements `i` with `i * size + 16 <= dst.len()`.
    #[target_feature(enable = "ssse3")]
    #[allow(unsafe_code)]
    pub(super) unsafe fn unshuffle_ssse3<T, const S: usize>(
        src: &[T],
        init: usize,
        dst: &mut [u8],
        enc: &[i8; 16],
    ) -> usize {
        // A constant, so that the division below is a multiplication.
        let size = S;
        let m = size_of::<T>();
        assert!(size > 0 && (8..=16).contains(&init) && init <= m);
        let n = src.len().min(dst.len() / size);
        let k = if dst.len() >= 16 { ((dst.len() - 16) / size + 1).min(n) } else { 0 };
        // SAFETY: `enc` is 16 readable bytes; `loadu` needs no alignment.
        let ctl = unsafe { _mm_loadu_si128(enc.as_ptr().cast::<__m128i>()) };
        let (s, d) = (src.as_ptr().cast::<u8>(), dst.as_mut_ptr());
        for i in 0..k {
            // SAFETY: element i < n is inside `src`; bytes [0, 8) and [init - 8, init) of it are inside the element
            // (init <= size_of::<T>()) and are member bytes (the caller's guarantee), so initialised; `loadl`
            // needs no alignment. The store: i < k, so i * size + 16 <= dst.len().
            unsafe {
                let p = s.add(i * m);
                let lo = _mm_loadl_epi64(p.cast::<__m128i>());
                let hi = _mm_loadl_epi64(p.add(init - 8).cast::<__m128i>());
                let v = _mm_shuffle_epi8(_mm_unpacklo_epi64(lo, hi), ctl);
                _mm_storeu_si128(d.add(i * size).cast::<__m128i>(), v);
            }
        }
        k
    }
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    fn run(f: impl Fn(&[u8], &mut [MaybeUninit<u8>]), src: &[u8], n: usize) -> Vec<u8> {
        let mut out = vec![MaybeUninit::new(0xaa_u8); n];
        f(src, &mut out);
        out.iter()
            // SAFETY: `vec!` initialised every byte; `f` only writes initialised bytes.
            .map(|b| unsafe { b.assume_init() })
            .collect()
    }

    /// Pseudo-random bytes (xorshift), so the test needs no dependency.
    fn bytes(n: usize, mut seed: u64) -> Vec<u8> {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect()
    }

    fn check<const S: usize>() {
        // Every length up to a few 64-byte steps (Miri is slow: it checks the portable path on fewer).
        for n in 0..if cfg!(miri) { 40 } else { 200 } {
            let src = bytes(n + 3, n as u64 + 1);
            for skew in 0..3 {
                let src = &src[skew..skew + n];
                let want: Vec<u8> = src
                    .chunks_exact(S)
                    .flat_map(|c| c.iter().rev().copied())
                    .chain(core::iter::repeat_n(0xaa, n % S))
                    .collect();
                assert_eq!(run(swap_portable::<S>, src, n), want, "portable S={S} n={n}");
                assert_eq!(run(swap_copy::<S>, src, n), want, "dispatched S={S} n={n}");
                #[cfg(all(target_arch = "x86_64", not(miri)))]
                if ssse3() && n / S * S >= 16 {
                    let m = n / S * S;
                    let simd = |s: &[u8], d: &mut [MaybeUninit<u8>]| {
                        // SAFETY: SSSE3 is present (checked above); both slices are m bytes, a multiple of S, >= 16.
                        unsafe { x86::swap_ssse3::<S>(&s[..m], &mut d[..m]) }
                    };
                    assert_eq!(run(simd, src, n), want, "ssse3 S={S} n={n}");
                }
            }
        }
    }

    #[test]
    fn simd_and_portable_paths_agree_on_random_data() {
        check::<2>();
        check::<4>();
        check::<8>();
    }

    #[test]
    fn shuffle_decodes_the_elements_whose_loads_and_stores_fit() {
        // 10 elements of 13 bytes into 16-byte slots; mask: byte i of the slot is encoded byte 12 - i (i < 13).
        let src = bytes(130, 5);
        let mut mask = [-1i8; 16];
        for (i, m) in mask.iter_mut().take(13).enumerate() {
            *m = 12 - i as i8;
        }
        let mut dst = vec![MaybeUninit::new([0xaa_u8; 16]); 10];
        let k = shuffle_into::<_, 13>(&src, &mut dst, &mask);
        let simd = cfg!(all(target_arch = "x86_64", not(miri))) && {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            let has = ssse3();
            #[cfg(not(all(target_arch = "x86_64", not(miri))))]
            let has = false;
            has
        };
        // The 10th element's 16-byte load would end 3 bytes past the input: it is left to the caller.
        assert_eq!(k, if simd { 9 } else { 0 });
        for (e, slot) in dst.iter().take(k).enumerate() {
            // SAFETY: `shuffle_into` wrote the first k elements (and `vec!` initialised all of them).
            let got = unsafe { slot.assume_init() };
            let c = &src[13 * e..13 * e + 13];
            let mut want = [0u8; 16];
            for i in 0..13 {
                want[i] = c[12 - i];
            }
            assert_eq!(got, want, "element {e}");
        }
    }

    #[test]
    fn unshuffle_encodes_the_elements_whose_stores_fit() {
        // 10 elements of 16 initialised bytes into 13-byte slots; encoded byte j is byte 12 - j of the element.
        let src: Vec<[u8; 16]> = bytes(160, 7).chunks_exact(16).map(|c| c.try_into().unwrap()).collect();
        let mut enc = [-1i8; 16];
        for (j, e) in enc.iter_mut().take(13).enumerate() {
            // Memory byte x is lane x (x < 8) or lane x + 16 - 16 = x of the second load (init = 16).
            *e = 12 - j as i8;
        }
        let mut dst = vec![0xaa_u8; 130];
        let k = unshuffle_from::<_, 13>(&src, 16, &mut dst, &enc);
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        let simd = ssse3();
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        let simd = false;
        // The 10th element's 16-byte store would end 3 bytes past the output: it is left to the caller.
        assert_eq!(k, if simd { 9 } else { 0 });
        for (e, el) in src.iter().enumerate().take(k) {
            let want: Vec<u8> = (0..13).map(|j| el[12 - j]).collect();
            assert_eq!(&dst[13 * e..13 * e + 13], &want[..], "element {e}");
        }
        // Nothing past the last store (which spills 3 bytes into the next element's slot, for the caller to write).
        if k > 0 {
            assert!(dst[13 * (k - 1) + 16..].iter().all(|&b| b == 0xaa));
        }
    }

    #[test]
    fn shorter_destination_bounds_the_copy() {
        let src = bytes(40, 9);
        let got = run(swap_copy::<4>, &src, 22);
        assert_eq!(&got[..4], &[src[3], src[2], src[1], src[0]]);
        assert_eq!(&got[20..], &[0xaa, 0xaa]);
    }
}
