//! Number text for the transcoder, byte for byte what the value-tree path writes, only faster: `itoa` for integers,
//! `zmij` for the floats and doubles of ordinary magnitude, `ryu` and Schubfach (`f32s`) for the rest, with Nerve's
//! rules on top. `zmij` is the vendored copy in `third_party/zmij`, whose `push_finite` writes the text straight into
//! the output (reading it back out of zmij's own buffer stalled on the stores that had just laid it out).
//!
//! Nerve's float text is the shortest digits that read back to the same float, written plainly for magnitudes in
//! `[1e-5, 1e16)` and with an exponent otherwise (`1e-7`, `1.5e20`), with `.0` added when there is neither a `.`
//! nor an `e`. The tree path gets it from `Display` / `LowerExp`. `zmij` and `ryu` give the same shortest digits
//! (the closest to the value of those that read back) and, inside a band of magnitudes, the same form; `zmij` is
//! about twice as fast as Schubfach and the digit layout below on sensor floats (7 to 9 digits), so it writes
//! every `float` in its band (`[1.001e-5, 0.999e13)`) and every `double` in `[1.001e-5, 0.999e16)`, an ignored test
//! holding it to the Schubfach path on every float of the band. On an exact tie between two shortest candidates
//! (`zmij` and `ryu` pick the even digit, the standard formatter the upper), which a filter on the bits rules out
//! for almost every value, Schubfach's digits (floats) or the standard formatter (doubles) write it. Outside the
//! bands, a double takes `ryu` (`zmij` writes `1e+16`), with the standard formatter near the bands' edges; a float
//! takes Schubfach's digits (with the standard formatter's choice on ties), written in Nerve's form directly.
//!
//! A `float` in JSON also passes the tree path's check that a reader which parses into a double and then rounds to
//! float gets the same bits back; where it does not (double rounding), the double's digits are written instead.
//! [`push_f32_json`] makes the same check from the digits, for the few floats an exact argument on the bits cannot
//! clear.

use std::fmt::Write as _;

use super::f32s::shortest;

/// Appends an integer.
#[inline]
pub(crate) fn push_int<I: itoa::Integer>(out: &mut Vec<u8>, x: I) {
    out.extend_from_slice(itoa::Buffer::new().format(x).as_bytes());
}

/// Whether Nerve writes a float of this magnitude with an exponent.
#[inline]
fn wants_exp(a: f64) -> bool {
    a != 0.0 && !(1e-5..1e16).contains(&a)
}

/// Whether `ryu`'s choice of plain or exponent form is surely Nerve's for this magnitude: inside these bands the
/// shortest digits cannot cross a power of ten where the two differ, so the text need not be looked at.
#[inline]
fn form_surely_agrees(a: f64, low: f64, high: f64) -> bool {
    (low..high).contains(&a)
}

/// A finite `f64` as Nerve's float text.
#[inline]
pub(crate) fn push_f64_text(out: &mut Vec<u8>, x: f64) {
    let a = x.abs();
    let (m, e2) = odd_parts(x.to_bits() & !(1 << 63), 52, 1075);
    if form_surely_agrees(a, 1.001e-5, 0.999e16) {
        // `zmij` (faster) writes this band plainly too; outside it, its exponents have a `+` (`1e+16`).
        let start = out.len();
        zmij::push_finite(out, x);
        if tie_possible(m, e2, &TIE_LIMITS_18) && is_tie(&out[start..], m, e2) {
            out.truncate(start);
            slow_text(out, a, x, x);
        }
        return;
    }
    let mut b = ryu::Buffer::new();
    let s = b.format_finite(x).as_bytes();
    let form_ok = s.contains(&b'e') == wants_exp(a);
    if form_ok && !(tie_possible(m, e2, &TIE_LIMITS_18) && is_tie(s, m, e2)) {
        out.extend_from_slice(s);
    } else {
        slow_text(out, a, x, x);
    }
}

/// Whether `zmij`'s text for a finite `f32` is surely Nerve's: inside this band of magnitudes both write it
/// plainly (`zmij` for shortest digits with a decimal exponent in `-6..=12`, Nerve for magnitudes in `[1e-5,
/// 1e16)`; the margins keep a value just under a power of ten whose shortest digits round up to it inside both),
/// and unless the value could be an exact tie between two shortest candidates (`zmij` breaks those to even, the
/// standard formatter upwards), the digits are the same: both are the shortest that read back, the closest of
/// those to the value.
#[inline(always)]
fn zmij_f32_agrees(mag: u32) -> bool {
    // (The bits of positive floats are in the order of their values.)
    const LOW: u32 = 1.001e-5f32.to_bits();
    const HIGH: u32 = 0.999e13f32.to_bits();
    if !(LOW..HIGH).contains(&mag) {
        return false;
    }
    let (m, e2) = odd_parts(u64::from(mag), 23, 150);
    !tie_possible(m, e2, &TIE_LIMITS_10)
}

/// A finite `f32` as Nerve's float text (its own shortest digits; CSV cells).
#[inline]
pub(crate) fn push_f32_text(out: &mut Vec<u8>, x: f32) {
    let mag = x.to_bits() & 0x7fff_ffff;
    if zmij_f32_agrees(mag) {
        zmij::push_finite(out, x);
    } else {
        push_f32_text_schubfach(out, x);
    }
}

/// `,` and a finite `f32` as Nerve's float text (a CSV cell after another).
#[inline]
pub(crate) fn push_comma_f32_text(out: &mut Vec<u8>, x: f32) {
    out.push(b',');
    push_f32_text(out, x);
}

/// [`push_f32_text`] from Schubfach's digits (any finite float).
#[inline(never)]
fn push_f32_text_schubfach(out: &mut Vec<u8>, x: f32) {
    let mag = x.to_bits() & 0x7fff_ffff;
    if mag == 0 {
        out.extend_from_slice(if x.is_sign_negative() { b"-0.0" } else { b"0.0" });
        return;
    }
    let (digits, e) = shortest(mag);
    push_digits(out, x.is_sign_negative(), digits, e, wants_exp(f64::from(x).abs()));
}

/// The 8 decimal digits of `v` (below 10^8, with leading zeros) as ASCII, first digit in the lowest byte: the
/// halves, quarters and eighths split with multiplications in 32-, 16- and 8-bit lanes of one register.
#[inline]
fn eight_digits(v: u32) -> u64 {
    let v = u64::from(v);
    let merged = (v / 10_000) | ((v % 10_000) << 32);
    let hundreds = ((merged * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let merged = ((merged - 100 * hundreds) << 16) | hundreds;
    let tens = ((merged * 103) >> 10) & 0x000f_000f_000f_000f;
    let merged = ((merged - 10 * tens) << 8) | tens;
    merged + 0x3030_3030_3030_3030
}

/// The decimal digits of `v` (below 10^9) as ASCII in a register, first digit in the lowest byte, followed by
/// '0's; and how many digits.
#[inline]
fn ascii_digits(v: u32) -> (u128, usize) {
    let n = v.checked_ilog10().map_or(1, |l| l as usize + 1);
    let nine = u128::from(v / 100_000_000 + 0x30) | (u128::from(eight_digits(v % 100_000_000)) << 8);
    let zeros = u128::from_le_bytes([b'0'; 16]);
    ((nine >> (8 * (9 - n))) | (zeros << (8 * n)), n)
}

/// Nerve's float text from shortest digits (`digits * 10^e`, no trailing zeros), as `Display` (plain) or
/// `LowerExp` (`exp_form`) writes them, with `.0` after a plain integer.
#[inline(always)]
fn push_digits(out: &mut Vec<u8>, negative: bool, digits: u32, e: i32, exp_form: bool) {
    if digits >= 1_000_000_000 {
        return push_digits_slow(out, negative, digits, e, exp_form);
    }
    // The digits as text in a register, first digit in the lowest byte and '0's after them (which the plain form
    // `ddd000.0` takes as its padding): runs of them are stored 16 bytes at a time, and the text cut to its length.
    let (ascii, n) = ascii_digits(digits);
    let run = |from: usize| (ascii >> (8 * from)).to_le_bytes();
    let n = n as i32;
    let point = n + e;
    // The text's length, to know it fits before a byte is placed.
    let len = i32::from(negative)
        + if exp_form {
            let x = (point - 1).abs();
            1 + if n > 1 { n } else { 0 } + 1 + i32::from(point - 1 < 0) + if x >= 10 { 2 } else { 1 }
        } else if point <= 0 {
            2 - point + n
        } else if point >= n {
            point + 2
        } else {
            n + 1
        };
    // (Every copy below ends within 48 bytes of the text's start when it is at most 32 long, which every float's
    // text in Nerve's forms is.)
    if !(1..=32).contains(&len) {
        return push_digits_slow(out, negative, digits, e, exp_form);
    }
    // Written in place at the end of `out` (a local buffer copied over would be read back right after its bytes
    // were stored, which stalls). '0's already in place: the padding of `0.000ddd` is only skipped over.
    let start = out.len();
    out.extend_from_slice(&[b'0'; 48]);
    let t = &mut out[start..];
    let mut p = 0;
    if negative {
        t[0] = b'-';
        p = 1;
    }
    if exp_form {
        t[p] = ascii as u8;
        p += 1;
        if n > 1 {
            t[p] = b'.';
            t[p + 1..p + 17].copy_from_slice(&run(1));
            p += n as usize;
        }
        t[p] = b'e';
        p += 1;
        let mut x = point - 1;
        if x < 0 {
            t[p] = b'-';
            p += 1;
            x = -x;
        }
        if x >= 10 {
            t[p] = b'0' + (x / 10) as u8;
            p += 1;
        }
        t[p] = b'0' + (x % 10) as u8;
        p += 1;
    } else if point <= 0 {
        t[p + 1] = b'.';
        p += 2 + point.unsigned_abs() as usize;
        t[p..p + 16].copy_from_slice(&run(0));
        p += n as usize;
    } else if point >= n {
        t[p..p + 16].copy_from_slice(&run(0));
        p += point as usize;
        t[p] = b'.';
        t[p + 1] = b'0';
        p += 2;
    } else {
        let point = point as usize;
        t[p..p + 16].copy_from_slice(&run(0));
        t[p + point] = b'.';
        t[p + point + 1..p + point + 17].copy_from_slice(&run(point));
        p += n as usize + 1;
    }
    debug_assert_eq!(p as i32, len);
    out.truncate(start + p);
}

#[cold]
fn push_digits_slow(out: &mut Vec<u8>, negative: bool, digits: u32, e: i32, exp_form: bool) {
    let d = digits.to_string();
    let n = d.len() as i32;
    let point = n + e;
    if negative {
        out.push(b'-');
    }
    if exp_form {
        out.push(d.as_bytes()[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&d.as_bytes()[1..]);
        }
        out.push(b'e');
        push_int(out, point - 1);
    } else if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + point.unsigned_abs() as usize, b'0');
        out.extend_from_slice(d.as_bytes());
    } else if point >= n {
        out.extend_from_slice(d.as_bytes());
        out.resize(out.len() + (point - n) as usize, b'0');
        out.extend_from_slice(b".0");
    } else {
        out.extend_from_slice(&d.as_bytes()[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&d.as_bytes()[point as usize..]);
    }
}

/// A float's magnitude (its bits without the sign) as `m * 2^e` with `m` odd; `(0, 0)` for zero.
#[inline]
fn odd_parts(bits: u64, mantissa_bits: u32, bias: i32) -> (u64, i32) {
    let field = (bits >> mantissa_bits) as i32;
    let frac = bits & ((1 << mantissa_bits) - 1);
    let (m, e) = if field == 0 { (frac, 1 - bias) } else { (frac | (1 << mantissa_bits), field - bias) };
    if m == 0 {
        return (0, 0);
    }
    let tz = m.trailing_zeros();
    (m >> tz, e + tz as i32)
}

/// `5^k` for `k` in `0..=27` (all below 2^63).
const POW5: [u64; 28] = {
    let mut t = [1u64; 28];
    let mut k = 1;
    while k < 28 {
        t[k] = t[k - 1] * 5;
        k += 1;
    }
    t
};

/// For `D` digits, the largest odd `m` with `m * 5^k < 10^D`, for each `k` (0 where none).
const fn tie_limits<const D: u32>() -> [u64; 28] {
    let mut t = [0u64; 28];
    let mut k = 0;
    while k < 28 {
        let limit = 10u128.pow(D) - 1;
        t[k] = (limit / POW5[k] as u128) as u64;
        k += 1;
    }
    t
}

const TIE_LIMITS_18: [u64; 28] = tie_limits::<18>();
const TIE_LIMITS_10: [u64; 28] = tie_limits::<10>();

/// Whether the exact decimal value of `m * 2^e` (`m` odd) is short enough (one digit more than the most shortest
/// digits can have: 18 for a double with `TIE_LIMITS_18`, 10 for a float with `TIE_LIMITS_10`) for its shortest
/// digits to be a tie between two candidates: `ryu` and `zmij` break such ties to even, the standard formatter
/// upwards. A cheap filter on the bits: almost every float fails it.
#[inline]
fn tie_possible(m: u64, e: i32, limits: &[u64; 28]) -> bool {
    if m == 0 {
        return false;
    }
    if e < 0 {
        let k = e.unsigned_abs() as usize;
        k < 28 && m <= limits[k]
    } else {
        let k = e as usize + 1;
        k < 28 && m.is_multiple_of(POW5[k])
    }
}

/// Whether the value `m * 2^e` lies exactly halfway between two numbers of the form `ryu`'s digits have (a tie
/// in their last place): twice the value times `10^-(last digit's exponent)` is then an odd integer.
#[cold]
fn is_tie(text: &[u8], m: u64, e: i32) -> bool {
    let Some((_, last)) = significant_digits(text) else { return true };
    let k = -last;
    if e + 1 + k != 0 {
        return false;
    }
    k >= 0 || 5u64.checked_pow(k.unsigned_abs()).is_some_and(|p| m.is_multiple_of(p))
}

/// The digits of float text as an integer without trailing zeros, and the power of ten of its last digit.
fn significant_digits(text: &[u8]) -> Option<(u64, i32)> {
    let (mut m, mut e) = decimal(text)?;
    while m != 0 && m % 10 == 0 {
        m /= 10;
        e += 1;
    }
    Some((m, e))
}

/// Float text as `(digits, power of ten)`: `-12.5e3` is `(125, 2)` (the sign is dropped); `None` past 19 digits.
pub(crate) fn decimal(text: &[u8]) -> Option<(u64, i32)> {
    let body = text.strip_prefix(b"-").unwrap_or(text);
    let mut mantissa: u64 = 0;
    let mut digits = 0u32;
    let mut exp10: i32 = 0;
    let mut after_point = false;
    for (i, &c) in body.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                if mantissa != 0 || c != b'0' {
                    digits += 1;
                }
                if digits > 19 {
                    return None;
                }
                mantissa = mantissa * 10 + u64::from(c - b'0');
                if after_point {
                    exp10 -= 1;
                }
            }
            b'.' => after_point = true,
            b'e' => {
                let e: i32 = std::str::from_utf8(&body[i + 1..]).ok()?.parse().ok()?;
                return Some((mantissa, exp10.checked_add(e)?));
            }
            _ => return None,
        }
    }
    Some((mantissa, exp10))
}

/// A finite `f32` in JSON: its text if a double-then-float reader gets the same bits back, else the double's.
#[inline]
pub(crate) fn push_f32_json(out: &mut Vec<u8>, x: f32) {
    let mag = x.to_bits() & 0x7fff_ffff;
    if zmij_f32_agrees(mag) && !may_double_round(x) {
        zmij::push_finite(out, x);
    } else {
        push_f32_json_schubfach(out, x);
    }
}

/// [`push_f32_json`] from Schubfach's digits (any finite float).
#[inline(never)]
fn push_f32_json_schubfach(out: &mut Vec<u8>, x: f32) {
    let mag = x.to_bits() & 0x7fff_ffff;
    if mag == 0 {
        out.extend_from_slice(if x.is_sign_negative() { b"-0.0" } else { b"0.0" });
        return;
    }
    let (digits, e) = shortest(mag);
    let exp_form = wants_exp(f64::from(x).abs());
    if may_double_round(x) && !reads_back(digits, e, mag, exp_form) {
        push_f64_text(out, f64::from(x));
    } else {
        push_digits(out, x.is_sign_negative(), digits, e, exp_form);
    }
}

/// Whether `digits * 10^e`, read as a double and rounded to float, is the float `mag`: one correctly rounded
/// multiplication or division of exact doubles when the power of ten allows (Clinger's fast path), else the
/// standard parser on the text.
#[cold]
fn reads_back(digits: u32, e: i32, mag: u32, exp_form: bool) -> bool {
    let d = if e.unsigned_abs() <= 22 {
        let m = f64::from(digits);
        if e >= 0 {
            m * POW10[e as usize]
        } else {
            m / POW10[e.unsigned_abs() as usize]
        }
    } else {
        let mut text = Vec::new();
        push_digits(&mut text, false, digits, e, exp_form);
        match std::str::from_utf8(&text).ok().and_then(|t| t.parse::<f64>().ok()) {
            Some(d) => d,
            None => return false,
        }
    };
    (d as f32).to_bits() == mag
}

/// Whether the shortest digits `d` of `x` could fail the tree path's check (`(d as f64) as f32 == x`), from `x`
/// alone; when it cannot be ruled out, the caller makes the check. `d` lies in `x`'s rounding interval
/// `[x - h, x + h]` (`h` half an f32 ulp), so the double nearest `d` does too, and rounds back to `x` unless it is
/// exactly an end `b` of the interval and `x`'s mantissa is odd (the tie goes to the even neighbour); and the
/// double nearest `d` is `b` only if `d` is within half a double ulp of `b`.
#[inline]
fn may_double_round(x: f32) -> bool {
    let bits = x.to_bits() & 0x7fff_ffff;
    if bits & 1 == 0 {
        return false;
    }
    let field = (bits >> 23) as i32;
    if field == 0 {
        return true;
    }
    // log2 of x is in [e2, e2 + 1); floor(log10 x) is at least log10_floor (by the usual fixed-point product for
    // floor(e2 * log10(2)), exact for |e2| < 1650, less one).
    let e2 = field - 127;
    let log10_floor = ((e2 * 78_913) >> 18) - 1;
    // d = D * 10^q with D < 10^9 has q >= floor(log10 d) - 8, so d * 10^k is an integer for k = 8 - log10_floor,
    // and b * 10^k stays below 1e11. With x = m * 2^(e2 - 23) (m the 24-bit mantissa), b * 10^k is
    // (2m +- 1) * 5^k / 2^s with s = 1 - (e2 - 23) - k: an odd number over 2^s, at least 2^-s from any integer,
    // while d * 10^k is an integer; d rounds to b only within 1e11 * 2^-53 < 2^-16 of it: impossible for
    // 1 <= s <= 16 (most floats of ordinary magnitude).
    let k = 8 - log10_floor;
    !(k >= 0 && (1..=16).contains(&(1 - (e2 - 23) - k)))
}

/// The standard formatter's text, as the tree path writes it (the rare cases `ryu`'s form differs).
#[cold]
#[inline(never)]
fn slow_text(out: &mut Vec<u8>, a: f64, display: impl std::fmt::Display, exp: impl std::fmt::LowerExp) {
    let mut s = String::with_capacity(32);
    let _ = if wants_exp(a) { write!(s, "{exp:e}") } else { write!(s, "{display}") };
    if !s.contains(['.', 'e']) {
        s.push_str(".0");
    }
    out.extend_from_slice(s.as_bytes());
}

/// Powers of ten that are exact doubles.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// `byte` values as JSON numbers followed by a comma: the text in the low 4 bytes (first character lowest), its
/// length with the comma above them; one load per byte.
static BYTE_TEXT: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let (h, te, o) = ((i / 100) as u8, ((i / 10) % 10) as u8, (i % 10) as u8);
        let (text, len) = if i >= 100 {
            ([b'0' + h, b'0' + te, b'0' + o, b','], 4)
        } else if i >= 10 {
            ([b'0' + te, b'0' + o, b',', 0], 3)
        } else {
            ([b'0' + o, b',', 0, 0], 2)
        };
        t[i] = u32::from_le_bytes(text) as u64 | (len << 32);
        i += 1;
    }
    t
};

/// A byte's text (4 bytes stored, some past its end) at `at` in `w`; where the next one goes.
#[inline(always)]
fn put_byte_text(w: &mut [u8], at: usize, entry: u64) -> usize {
    w[at..at + 4].copy_from_slice(&(entry as u32).to_le_bytes());
    at + (entry >> 32) as usize
}

/// Bytes as comma-separated numbers (`1,2,255`), no brackets.
pub(crate) fn push_byte_numbers(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let start = out.len();
    out.resize(start + data.len() * 4, 0);
    let buf = &mut out[start..];
    let mut p = 0;
    // Four at a time into one 16-byte window: one bounds check and the four loads side by side.
    let mut quads = data.chunks_exact(4);
    for q in &mut quads {
        let w = &mut buf[p..p + 16];
        let e = q.iter().map(|&b| BYTE_TEXT[usize::from(b)]);
        p += e.fold(0, |at, entry| put_byte_text(w, at, entry));
    }
    for &b in quads.remainder() {
        p = put_byte_text(buf, p, BYTE_TEXT[usize::from(b)]);
    }
    // Drop the last comma.
    out.truncate(start + p - 1);
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Each byte's two lowercase hex digits: one load and one two-byte store per byte.
static HEX_PAIRS: [[u8; 2]; 256] = {
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX[i >> 4], HEX[i & 15]];
        i += 1;
    }
    t
};

/// A nibble's lowercase hex digit, by arithmetic (which the compiler does 16 or 32 lanes at a time).
#[inline(always)]
fn hex_digit(nibble: u8) -> u8 {
    nibble + if nibble > 9 { b'a' - 10 } else { b'0' }
}

/// Appends `data` as lowercase hex (how the transcoder writes a byte array in CSV, and the exporters a raw
/// message). Runs of 64 bytes are made in a block on the stack, which the compiler vectorises, and appended
/// whole, faster for an image than a table lookup per byte; and the output is not zeroed first.
pub fn push_hex(out: &mut Vec<u8>, data: &[u8]) {
    out.reserve(data.len() * 2);
    let mut runs = data.chunks_exact(64);
    for run in &mut runs {
        let mut text = [0u8; 128];
        for (pair, &b) in text.chunks_exact_mut(2).zip(run) {
            pair[0] = hex_digit(b >> 4);
            pair[1] = hex_digit(b & 15);
        }
        out.extend_from_slice(&text);
    }
    for &b in runs.remainder() {
        out.extend_from_slice(&HEX_PAIRS[usize::from(b)]);
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Every 12 bits' two base64 characters, the first in the low byte.
static B64_PAIRS: [u16; 4096] = {
    let mut t = [0u16; 4096];
    let mut i = 0;
    while i < 4096 {
        t[i] = B64[i >> 6] as u16 | (B64[i & 63] as u16) << 8;
        i += 1;
    }
    t
};

/// Standard base64 with padding.
pub(crate) fn push_base64(out: &mut Vec<u8>, data: &[u8]) {
    out.reserve(data.len().div_ceil(3) * 4);
    // Six bytes (read as eight) to eight characters at a time: four lookups of 12 bits and one 8-byte store, into a
    // block on the stack appended whole (so the output is not zeroed first), 48 bytes a block while 50 are left
    // (the last read of eight stays inside the data).
    let mut done = 0;
    while data.len() - done >= 50 {
        let mut text = [0u8; 64];
        for (k, w) in text.chunks_exact_mut(8).enumerate() {
            let at = done + 6 * k;
            let x = u64::from_be_bytes(data[at..at + 8].try_into().expect("eight bytes"));
            let pair = |shift: u32| u64::from(B64_PAIRS[((x >> shift) & 0xfff) as usize]);
            let v = pair(52) | pair(40) << 16 | pair(28) << 32 | pair(16) << 48;
            w.copy_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&text);
        done += 48;
    }
    let start = out.len();
    out.resize(start + (data.len() - done).div_ceil(3) * 4, 0);
    let buf = &mut out[start..];
    let data = &data[done..];
    let mut chunks = data.chunks_exact(3);
    for (quad, c) in buf.chunks_exact_mut(4).zip(&mut chunks) {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        quad[0] = B64[((n >> 18) & 63) as usize];
        quad[1] = B64[((n >> 12) & 63) as usize];
        quad[2] = B64[((n >> 6) & 63) as usize];
        quad[3] = B64[(n & 63) as usize];
    }
    let tail = buf.len().saturating_sub(4);
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            buf[tail..].copy_from_slice(&[B64[((n >> 18) & 63) as usize], B64[((n >> 12) & 63) as usize], b'=', b'=']);
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            buf[tail..].copy_from_slice(&[
                B64[((n >> 18) & 63) as usize],
                B64[((n >> 12) & 63) as usize],
                B64[((n >> 6) & 63) as usize],
                b'=',
            ]);
        }
        _ => {}
    }
}

/// Which bytes of UTF-8 text [`push_json_str`] must look at: `"`, `\`, controls, DEL, and the lead bytes of
/// U+0080..U+009F (`C2`) and U+2028/U+2029 (`E2`).
static NEEDS_LOOK: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[0x7f] = true;
    t[0xc2] = true;
    t[0xe2] = true;
    t
};

/// `s` as a JSON string literal, escaped exactly as `nerve_codec::json::write_str` escapes it.
pub(crate) fn push_json_str(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        if !NEEDS_LOOK[usize::from(b[i])] {
            i += 1;
            continue;
        }
        // (code point to write as \uXXXX or a short escape, bytes it takes)
        let (esc, len): (Result<&[u8], u32>, usize) = match b[i] {
            b'"' => (Ok(b"\\\""), 1),
            b'\\' => (Ok(b"\\\\"), 1),
            b'\n' => (Ok(b"\\n"), 1),
            b'\r' => (Ok(b"\\r"), 1),
            b'\t' => (Ok(b"\\t"), 1),
            c @ (0..=0x1f | 0x7f) => (Err(u32::from(c)), 1),
            // U+0080..U+009F: C2 80..C2 9F.
            0xc2 if matches!(b.get(i + 1), Some(0x80..=0x9f)) => (Err(u32::from(b[i + 1])), 2),
            // U+2028, U+2029: E2 80 A8, E2 80 A9.
            0xe2 if b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xa8 | 0xa9)) => {
                (Err(0x2000 | u32::from(b[i + 2] - 0x80)), 3)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&b[start..i]);
        match esc {
            Ok(e) => out.extend_from_slice(e),
            Err(cp) => {
                out.extend_from_slice(b"\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(HEX[((cp >> shift) & 15) as usize]);
                }
            }
        }
        i += len;
        start = i;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree path's float text, copied from before the transcoder existed: the reference.
    fn old_text(x: f64, display: &dyn Fn() -> String, exp: &dyn Fn() -> String) -> String {
        let a = x.abs();
        let mut s = if a != 0.0 && !(1e-5..1e16).contains(&a) { exp() } else { display() };
        if !s.contains(['.', 'e']) {
            s.push_str(".0");
        }
        s
    }

    fn old_f64(x: f64) -> String {
        old_text(x, &|| format!("{x}"), &|| format!("{x:e}"))
    }

    fn old_f32(x: f32) -> String {
        old_text(f64::from(x), &|| format!("{x}"), &|| format!("{x:e}"))
    }

    /// The tree path's JSON of a float given its text.
    fn json_of(x: f32, s: String) -> String {
        match s.parse::<f64>() {
            Ok(d) if (d as f32).to_bits() == x.to_bits() => s,
            _ => old_f64(f64::from(x)),
        }
    }

    fn new<T>(f: fn(&mut Vec<u8>, T), x: T) -> String {
        let mut v = Vec::new();
        f(&mut v, x);
        String::from_utf8(v).unwrap()
    }

    /// A small deterministic generator (xorshift).
    pub(crate) struct Rng(pub(crate) u64);
    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn check_f32(x: f32) {
        if x.is_finite() {
            let old = old_f32(x);
            assert_eq!(new(push_f32_text, x), old, "f32 text {x:e} ({:#x})", x.to_bits());
            assert_eq!(new(push_comma_f32_text, x), format!(",{old}"), "f32 cell {x:e} ({:#x})", x.to_bits());
            assert_eq!(new(push_f32_json, x), json_of(x, old), "f32 json {x:e} ({:#x})", x.to_bits());
        }
    }

    fn check_f64(x: f64) {
        if x.is_finite() {
            assert_eq!(new(push_f64_text, x), old_f64(x), "f64 {x:e} ({:#x})", x.to_bits());
        }
    }

    #[test]
    fn floats_match_the_tree_path_at_the_edges() {
        let mut f32s = vec![0.0f32, -0.0, 1.0, -1.5, 0.1, 1e-5, 1e-6, 9.99999e-6, 1.00001e-5, 1e13, 9.999999e12, 1e16];
        f32s.extend([1e15, 9.999999e15, 1.0000001e16, f32::MIN_POSITIVE, f32::MAX, f32::MIN, f32::EPSILON, 16777216.0]);
        f32s.extend([3.4028235e38, 1e-45, 7.038531e-26, 123456.79, 0.3, 2.5e-5, 3e-6]);
        for x in f32s {
            for y in [x, -x, f32::from_bits(x.to_bits() + 1), f32::from_bits(x.to_bits().saturating_sub(1))] {
                check_f32(y);
            }
        }
        let f64s = [0.0f64, 1e-5, 1e16, 9999999999999998.0, 1e-6, 9.999999999999999e-6, 0.1, 1e300, 5e-324, f64::MAX];
        for x in f64s {
            for y in [x, -x, f64::from_bits(x.to_bits() + 1), f64::from_bits(x.to_bits().saturating_sub(1))] {
                check_f64(y);
            }
        }
    }

    #[test]
    fn floats_match_the_tree_path_on_random_bits() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200_000 {
            let r = rng.next();
            check_f32(f32::from_bits(r as u32));
            check_f64(f64::from_bits(r));
            // Values of ordinary magnitude, as sensors send them.
            check_f32((r >> 40) as f32 / 1024.0 - 4096.0);
            check_f64((r >> 11) as f64 / (1u64 << 30) as f64 - 1000.0);
        }
    }

    #[test]
    fn subnormals_and_a_stride_through_every_f32_match_the_tree_path() {
        for bits in (0..0x80_0000u32).step_by(97).chain(0..64) {
            check_f32(f32::from_bits(bits));
            check_f32(-f32::from_bits(bits));
        }
        for bits in (0..=u32::MAX).step_by(65_537) {
            check_f32(f32::from_bits(bits));
        }
    }

    #[test]
    fn integers_of_every_length() {
        let mut v = b"[".to_vec();
        let mut want = String::from("[");
        for x in [0i64, 7, -7, 42, 99_999, -1_000_000, i64::from(i32::MIN), i64::from(u32::MAX), i64::MAX, i64::MIN] {
            push_int(&mut v, x);
            v.push(b',');
            want.push_str(&format!("{x},"));
        }
        assert_eq!(String::from_utf8(v).unwrap(), want);
    }

    #[test]
    fn floats_with_full_mantissas_match_the_tree_path_in_every_binade() {
        // Random mantissas (as sensor values have: 7 to 9 digits, rarely a tie) at every exponent, both signs.
        let mut rng = Rng(0x5eed_0002);
        for exp in 0..255u32 {
            for _ in 0..2_000 {
                let r = rng.next();
                check_f32(f32::from_bits((exp << 23) | (r as u32 & 0x807f_ffff)));
                check_f64(f64::from_bits((u64::from(exp) * 8 + (r >> 61)) << 52 | (r & 0x800f_ffff_ffff_ffff)));
            }
        }
    }

    /// `zmij`'s text where [`push_f32_text`] and [`push_f32_json`] take it is the Schubfach path's (which
    /// `every_f32_matches_the_tree_path` holds to the standard library), for every float in the band (minutes
    /// in release: `cargo test --release -p nerve-types zmij_band -- --ignored`).
    #[test]
    #[ignore]
    fn zmij_band_matches_schubfach_on_every_f32() {
        let mut taken = 0u64;
        for bits in 0..=u32::MAX {
            if !zmij_f32_agrees(bits & 0x7fff_ffff) {
                continue;
            }
            taken += 1;
            let x = f32::from_bits(bits);
            assert_eq!(new(push_f32_text, x), new(push_f32_text_schubfach, x), "f32 text {x:e} ({bits:#x})");
            if !may_double_round(x) {
                assert_eq!(new(push_f32_json, x), new(push_f32_json_schubfach, x), "f32 json {x:e} ({bits:#x})");
            }
        }
        // (929,149,202 floats: both signs of about 56 binades, less the few that could be ties.)
        assert!(taken > 900_000_000, "{taken}");
    }

    /// Every `f32` (takes a quarter of an hour in release, more on a busy machine:
    /// `cargo test --release -p nerve-types every_f32 -- --ignored`).
    #[test]
    #[ignore]
    fn every_f32_matches_the_tree_path() {
        for bits in 0..=u32::MAX {
            check_f32(f32::from_bits(bits));
        }
    }

    /// The odd-mantissa `f32`s `may_double_round` clears read back from their shortest digits (every one in every
    /// 7th binade, 1 in 64 elsewhere; `cargo test --release -p nerve-types shortcut -- --ignored`, minutes).
    #[test]
    #[ignore]
    fn double_rounding_shortcut_never_clears_a_failure() {
        let mut cleared = 0u64;
        for bits in (1..0x7f80_0000u32).step_by(2) {
            let x = f32::from_bits(bits);
            if !may_double_round(x) {
                cleared += 1;
                if cleared.is_multiple_of(64) || (bits >> 23).is_multiple_of(7) {
                    let s = old_f32(x);
                    assert_eq!(s.parse::<f64>().map(|d| (d as f32).to_bits()), Ok(bits), "{s}");
                }
            }
        }
        // (568,099,120 of the 2^31 odd-mantissa floats below infinity, mostly those of ordinary magnitude.)
        assert!(cleared > 1 << 29, "{cleared}");
    }

    #[test]
    fn digits_in_a_register() {
        let mut rng = Rng(99);
        let mut vs: Vec<u32> = vec![0, 1, 9, 10, 99, 100, 9999, 10_000, 99_999_999, 100_000_000, 999_999_999];
        vs.extend((0..200_000).map(|_| (rng.next() % 1_000_000_000) as u32));
        for v in vs {
            let (ascii, n) = ascii_digits(v);
            let bytes = ascii.to_le_bytes();
            let want = v.to_string();
            assert_eq!(&bytes[..n], want.as_bytes(), "{v}");
            assert!(bytes[n..].iter().all(|&b| b == b'0'), "{v}");
        }
    }

    #[test]
    fn bytes_hex_base64_and_strings() {
        let data: Vec<u8> = (0..=255).collect();
        let mut v = Vec::new();
        push_byte_numbers(&mut v, &data);
        let want: Vec<String> = data.iter().map(u8::to_string).collect();
        assert_eq!(String::from_utf8(v).unwrap(), want.join(","));
        let mut v = Vec::new();
        push_hex(&mut v, &[0, 0xab, 0xff]);
        assert_eq!(v, b"00abff");
        // Every length of tail after the runs of four, after text already there.
        for n in 0..12 {
            let mut v = b"[".to_vec();
            push_byte_numbers(&mut v, &data[250 - n..]);
            let want: Vec<String> = data[250 - n..].iter().map(u8::to_string).collect();
            assert_eq!(String::from_utf8(v).unwrap(), format!("[{}", want.join(",")));
        }
        let mut v = Vec::new();
        push_hex(&mut v, &data);
        assert_eq!(String::from_utf8(v).unwrap(), data.iter().map(|b| format!("{b:02x}")).collect::<String>());
        // Runs of 64 and every length of tail after them, after text already there.
        for n in [63, 64, 65, 127, 128, 129, 200, 256] {
            let mut v = b"x".to_vec();
            push_hex(&mut v, &data[..n]);
            let want: String = data[..n].iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(String::from_utf8(v).unwrap(), format!("x{want}"));
        }
        for (input, want) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE=")]
        {
            let mut v = Vec::new();
            push_base64(&mut v, input.as_bytes());
            assert_eq!(v, want.as_bytes());
        }
        // Every length around the runs of six and the blocks of 48, every byte value, after text already there:
        // against a plain three-bytes-at-a-time encoder.
        let plain = |data: &[u8]| -> Vec<u8> {
            let mut v = Vec::new();
            for c in data.chunks(3) {
                let n = c.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
                for k in 0..4 {
                    v.push(if k <= c.len() { B64[(n >> (18 - 6 * k)) as usize & 63] } else { b'=' });
                }
            }
            v
        };
        let bytes: Vec<u8> = (0..600u32).map(|i| (i * 97 + i / 256) as u8).collect();
        for n in (0..120).chain(590..600) {
            let mut v = b"x".to_vec();
            push_base64(&mut v, &bytes[..n]);
            assert_eq!(v[1..], plain(&bytes[..n]), "{n}");
        }
        let mut rng = Rng(7);
        let alphabet =
            ['a', '"', '\\', '\n', '\r', '\t', '\u{0}', '\u{1f}', '\u{7f}', '\u{80}', '\u{9f}', '\u{a0}', 'é'];
        let alphabet2 = ['\u{2028}', '\u{2029}', '\u{2027}', '\u{202a}', '€', '😀', ' ', '/', '\u{c2}', '\u{e2}'];
        for _ in 0..20_000 {
            let n = (rng.next() % 12) as usize;
            let s: String = (0..n)
                .map(|_| {
                    let r = rng.next() as usize;
                    if r.is_multiple_of(2) {
                        alphabet[r / 2 % alphabet.len()]
                    } else {
                        alphabet2[r / 2 % alphabet2.len()]
                    }
                })
                .collect();
            let mut want = String::new();
            nerve_codec::json::write_str(&s, &mut want);
            let mut v = Vec::new();
            push_json_str(&mut v, &s);
            assert_eq!(String::from_utf8(v).unwrap(), want, "{s:?}");
        }
    }
}
