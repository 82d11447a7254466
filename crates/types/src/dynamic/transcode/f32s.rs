//! The shortest decimal digits of a `float`, as the standard library's formatter picks them (the shortest digits
//! that read back to the same float, the closest of those to its value, and on an exact tie the upper one), by
//! Giulietti's Schubfach algorithm ("The Schubfach way to render doubles", 2020; the `float` variant of Java's
//! `FloatToDecimal`): three 64-bit multiplications by a power of ten from a table, no loops over digits. It is
//! about twice as fast as `ryu` on `float`s, which dominate sensor logs; the tests hold it to the standard
//! library's text on every `float` (an ignored sweep) and on random ones. Subnormals, which have too few bits for
//! it to find their shortest digits, take the standard formatter's.

/// `floor(log10(2^q))`, exact for `|q| <= 1200` or so.
#[inline]
fn flog10pow2(q: i32) -> i32 {
    ((i64::from(q) * 661_971_961_083) >> 41) as i32
}

/// `floor(log10(3/4 * 2^q))`.
#[inline]
fn flog10_three_quarters_pow2(q: i32) -> i32 {
    ((i64::from(q) * 661_971_961_083 - 274_743_187_321) >> 41) as i32
}

/// `floor(log2(10^e))`.
#[inline]
fn flog2pow10(e: i32) -> i32 {
    ((i64::from(e) * 913_124_641_741) >> 38) as i32
}

const K_MIN: i32 = -46;

/// The upper 63 bits of `g(k) = floor(10^-k * 2^(125 - flog2pow10(-k))) + 1` for `k` in `-46..=31` (computed
/// exactly with big integers; the tests check a few against the definition).
static G1: [u64; 78] = [
    0x701a97b150cf1837, // -46
    0x59aedfc10d7279c5, // -45
    0x47bf19673df52e37, // -44
    0x72cb5bd86321e38c, // -43
    0x5bd5e313828182d6, // -42
    0x4977e8dc68679bdf, // -41
    0x758ca7c70d7292fe, // -40
    0x5e0a1fd271287598, // -39
    0x4b3b4ca85a86c47a, // -38
    0x785ee10d5da46d90, // -37
    0x604be73de4838ad9, // -36
    0x4d0985cb1d3608ae, // -35
    0x7b426fab61f00de3, // -34
    0x629b8c891b267182, // -33
    0x4ee2d6d415b85ace, // -32
    0x7e37be2022c0914b, // -31
    0x64f964e68233a76f, // -30
    0x50c783eb9b5c85f2, // -29
    0x409f9cbc7c4a04c2, // -28
    0x6765c793fa10079d, // -27
    0x52b7d2dcc80cd2e4, // -26
    0x422ca8b0a00a4250, // -25
    0x69e10de76676d080, // -24
    0x54b40b1f852bda00, // -23
    0x43c33c1937564800, // -22
    0x6c6b935b8bbd4000, // -21
    0x56bc75e2d6310000, // -20
    0x4563918244f40000, // -19
    0x6f05b59d3b200000, // -18
    0x58d15e1762800000, // -17
    0x470de4df82000000, // -16
    0x71afd498d0000000, // -15
    0x5af3107a40000000, // -14
    0x48c2739500000000, // -13
    0x746a528800000000, // -12
    0x5d21dba000000000, // -11
    0x4a817c8000000000, // -10
    0x7735940000000000, // -9
    0x5f5e100000000000, // -8
    0x4c4b400000000000, // -7
    0x7a12000000000000, // -6
    0x61a8000000000000, // -5
    0x4e20000000000000, // -4
    0x7d00000000000000, // -3
    0x6400000000000000, // -2
    0x5000000000000000, // -1
    0x4000000000000000, // 0
    0x6666666666666666, // 1
    0x51eb851eb851eb85, // 2
    0x4189374bc6a7ef9d, // 3
    0x68db8bac710cb295, // 4
    0x53e2d6238da3c211, // 5
    0x431bde82d7b634da, // 6
    0x6b5fca6af2bd215e, // 7
    0x55e63b88c230e77e, // 8
    0x44b82fa09b5a52cb, // 9
    0x6df37f675ef6eadf, // 10
    0x57f5ff85e592557f, // 11
    0x465e6604b7a84465, // 12
    0x709709a125da0709, // 13
    0x5a126e1a84ae6c07, // 14
    0x480ebe7b9d58566c, // 15
    0x734aca5f6226f0ad, // 16
    0x5c3bd5191b525a24, // 17
    0x49c97747490eae83, // 18
    0x760f253edb4ab0d2, // 19
    0x5e72843249088d75, // 20
    0x4b8ed0283a6d3df7, // 21
    0x78e480405d7b9658, // 22
    0x60b6cd004ac94513, // 23
    0x4d5f0a66a23a9da9, // 24
    0x7bcb43d769f762a8, // 25
    0x63090312bb2c4eed, // 26
    0x4f3a68dbc8f03f24, // 27
    0x7ec3daf941806506, // 28
    0x65697bfa9acd1d9f, // 29
    0x51212ffbaf0a7e18, // 30
    0x40e7599625a1fe7a, // 31
];

const Q_MIN: i32 = -149;
const C_MIN: u32 = 1 << 23;

/// Rounds `g * cp / 2^64` to odd (the bit below is kept as a sticky bit), as Schubfach's `rop`.
#[inline]
fn rop(g: u64, cp: u64) -> u32 {
    let x1 = ((u128::from(g) * u128::from(cp)) >> 64) as u64;
    let vbp = x1 >> 31;
    (vbp | (((x1 & 0xffff_ffff) + 0xffff_ffff) >> 32)) as u32
}

/// The shortest digits of a positive, finite, nonzero `float` (its bits): `(digits, exponent)` with the value
/// `digits * 10^exponent` and no trailing zeros in `digits`.
#[inline(always)]
pub(crate) fn shortest(bits: u32) -> (u32, i32) {
    let t = bits & ((1 << 23) - 1);
    let bq = (bits >> 23) as i32;
    let (f, e) = if bq != 0 {
        let mq = -Q_MIN + 1 - bq;
        let c = C_MIN | t;
        if 0 < mq && mq < 24 && (c >> mq) << mq == c {
            // An integer: its own digits.
            (c >> mq, 0)
        } else {
            to_decimal(-mq, c, 0)
        }
    } else {
        // Subnormals: so few significant bits that the shortest digits can be two or more fewer than Schubfach's
        // candidates (Java's variant, which it follows, wants at least two digits there). Rare; the standard
        // formatter's digits.
        return subnormal(bits);
    };
    strip_zeros(f, e)
}

#[cold]
fn subnormal(bits: u32) -> (u32, i32) {
    let text = format!("{:e}", f32::from_bits(bits));
    match super::num::decimal(text.as_bytes()) {
        Some((digits, e)) => strip_zeros(digits as u32, e),
        None => (0, 0),
    }
}

#[inline]
fn strip_zeros(mut f: u32, mut e: i32) -> (u32, i32) {
    if f == 0 {
        return (0, 0);
    }
    while f.is_multiple_of(10) {
        f /= 10;
        e += 1;
    }
    (f, e)
}

#[inline(always)]
fn to_decimal(q: i32, c: u32, dk: i32) -> (u32, i32) {
    let out = c & 1;
    let cb = u64::from(c) << 2;
    let cbr = cb + 2;
    let (cbl, k) =
        if c != C_MIN || q == Q_MIN { (cb - 2, flog10pow2(q)) } else { (cb - 1, flog10_three_quarters_pow2(q)) };
    let h = q + flog2pow10(-k) + 33;
    let g = G1[(k - K_MIN) as usize] + 1;
    let vb = rop(g, cb << h);
    let vbl = rop(g, cbl << h);
    let vbr = rop(g, cbr << h);
    let s = vb >> 2;
    if s >= 100 {
        // One digit fewer: s' = floor(s / 10), and the candidates 10 s' and 10 s' + 10.
        let sp10 = 10 * ((u64::from(s) * 1_717_986_919) >> 34) as u32;
        let tp10 = sp10 + 10;
        let upin = vbl + out <= sp10 << 2;
        let wpin = (tp10 << 2) + out <= vbr;
        if upin != wpin {
            return (if upin { sp10 } else { tp10 }, k);
        }
    }
    let t = s + 1;
    let uin = vbl + out <= s << 2;
    let win = (t << 2) + out <= vbr;
    if uin != win {
        return (if uin { s } else { t }, k + dk);
    }
    // Both in: the closer; on an exact tie the upper, as the standard library's formatter (Schubfach's own rule
    // is the even one).
    let twice_mid = (s + t) << 1;
    (if vb < twice_mid { s } else { t }, k + dk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_the_definition() {
        // g(k) = floor(10^-k 2^(125 - flog2pow10(-k))) + 1, checked where it is an integer product (k <= 0).
        for k in K_MIN..=0 {
            let r = 125 - flog2pow10(-k);
            // 10^-k * 2^r as a 192-bit number in three u64 limbs would be needed for k < -19; check k in -19..=0.
            if k < -19 || r < 0 {
                continue;
            }
            let ten = 10u128.pow((-k) as u32);
            // g = ten << r fits in u128 only if small enough: compare the top 63 bits via shifting.
            let bits = 128 - ten.leading_zeros() as i32 + r;
            assert!((126..=126).contains(&bits), "k {k}: {bits} bits");
            let g1 = if r >= 63 { (ten << (r - 63)) as u64 } else { (ten >> (63 - r)) as u64 };
            assert_eq!(G1[(k - K_MIN) as usize], g1, "k {k}");
        }
    }

    #[test]
    fn known_values() {
        for (x, want) in [
            (1.0f32, (1, 0)),
            (0.1, (1, -1)),
            (f32::from_bits(0x4550_da80), (33416563, -4)), // 3341.65625: a tie, upwards
            (16777216.0, (16777216, 0)),
            (f32::MAX, (34028235, 31)),
            (f32::MIN_POSITIVE, (11754944, -45)),
            (1e-45, (1, -45)),
            (f32::from_bits(0x15), (3, -44)),
            (f32::from_bits(0x7f_ffff), (11754942, -45)),
            (123456.79, (12345679, -2)),
        ] {
            assert_eq!(shortest(x.to_bits()), want, "{x:e}");
        }
    }
}
