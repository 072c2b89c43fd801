//! The float functions whose last digits CPython takes from somewhere other than the
//! operations Rust's `f64` offers: `cbrt` is glibc's (CPython calls the C library, and
//! glibc's `cbrt` is not correctly rounded: `cbrt(27.0)` is `3.0000000000000004`), and
//! `gamma`/`lgamma` are CPython's own Lanczos approximation (`Modules/mathmodule.c`),
//! not the C library's. Each follows its reference operation for operation, over the
//! same C library calls (`exp`, `log`, `pow`, `sin`, `cos`), so results agree to the bit.
//! Domain and range errors are the caller's: these return what the C code returns.
#![expect(
    clippy::excessive_precision,
    reason = "the constants are written as their references print them"
)]

/// `cbrt` as glibc computes it: a rational first guess in the mantissa, one Halley step,
/// and the exponent's remainder mod 3 folded in through a power of 2^(1/3).
pub(super) fn cbrt(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x + x;
    }
    let (xm, xe) = frexp(x.abs());
    let u = 0.354_895_765_043_919_86
        + (1.508_191_937_815_848_96
            + (-2.114_994_941_673_712_87
                + (2.446_931_225_635_344_3
                    + (-1.834_692_774_836_130_86
                        + (0.784_932_344_976_639_262 - 0.145_263_899_385_486_377 * xm) * xm)
                        * xm)
                    * xm)
                * xm)
            * xm;
    let t2 = u * u * u;
    // 2^(k/3) for k = -2..=2, the exponent's remainder as C's `%` gives it.
    const FACTOR: [f64; 5] = [
        1.0 / 1.587_401_051_968_199_474_8,
        1.0 / 1.259_921_049_894_873_164_8,
        1.0,
        1.259_921_049_894_873_164_8,
        1.587_401_051_968_199_474_8,
    ];
    let ym = u * (t2 + 2.0 * xm) / (2.0 * t2 + xm) * FACTOR[(2 + xe % 3) as usize];
    ldexp(ym, xe / 3).copysign(x)
}

/// C's `frexp` for a finite non-zero `x`: `x = m * 2^e` with `0.5 <= |m| < 1`.
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(x * f64::from_bits(0x4350_0000_0000_0000)); // 2^54
        return (m, e - 54);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, exp - 1022)
}

/// C's `ldexp`: `m * 2^e`, exact unless the result leaves the range.
fn ldexp(m: f64, e: i32) -> f64 {
    let mut m = m;
    let mut e = e;
    // Apply in steps that keep each power of two representable.
    while e > 1000 {
        m *= f64::from_bits(((1023 + 1000) as u64) << 52);
        e -= 1000;
    }
    while e < -1000 {
        m *= f64::from_bits(((1023 - 1000) as u64) << 52);
        e += 1000;
    }
    m * f64::from_bits(((1023 + e) as u64) << 52)
}

const LANCZOS_N: usize = 13;
const LANCZOS_G: f64 = 6.024_680_040_776_729_583_740_234_375;
const LANCZOS_G_MINUS_HALF: f64 = 5.524_680_040_776_729_583_740_234_375;
const LANCZOS_NUM: [f64; LANCZOS_N] = [
    23_531_376_880.410_759_688_572_007_674_451_636_754_734_846_804_940,
    42_919_803_642.649_098_768_957_899_047_001_988_850_926_355_848_959,
    35_711_959_237.355_668_049_440_185_451_547_166_705_960_488_635_843,
    17_921_034_426.037_209_699_919_755_754_458_931_112_671_403_265_390,
    6_039_542_586.352_028_005_064_291_644_307_297_921_069_938_842_070_8,
    1_439_720_407.311_721_673_663_223_072_794_912_393_971_548_578_677_2,
    248_874_557.862_054_156_511_460_386_413_229_423_216_321_251_278_01,
    31_426_415.585_400_194_380_614_231_628_318_205_362_874_684_987_640,
    2_876_370.628_935_372_441_225_409_051_620_849_613_599_114_537_876_8,
    186_056.265_395_223_495_040_294_989_716_045_699_282_207_842_363_28,
    8_071.672_002_365_816_210_638_002_902_272_250_613_821_851_632_502_4,
    210.824_277_751_579_345_872_509_733_920_713_362_711_669_695_802_91,
    2.506_628_274_631_000_270_164_908_177_133_837_338_626_431_079_340_8,
];
const LANCZOS_DEN: [f64; LANCZOS_N] = [
    0.0,
    39_916_800.0,
    120_543_840.0,
    150_917_976.0,
    105_258_076.0,
    45_995_730.0,
    13_339_535.0,
    2_637_558.0,
    357_423.0,
    32_670.0,
    1_925.0,
    66.0,
    1.0,
];

/// Γ(n) for the integers 1..=23, exact in a double.
const GAMMA_INTEGRAL: [f64; 23] = [
    1.0,
    1.0,
    2.0,
    6.0,
    24.0,
    120.0,
    720.0,
    5040.0,
    40320.0,
    362_880.0,
    3_628_800.0,
    39_916_800.0,
    479_001_600.0,
    6_227_020_800.0,
    87_178_291_200.0,
    1_307_674_368_000.0,
    20_922_789_888_000.0,
    355_687_428_096_000.0,
    6_402_373_705_728_000.0,
    121_645_100_408_832_000.0,
    2_432_902_008_176_640_000.0,
    51_090_942_171_709_440_000.0,
    1_124_000_727_777_607_680_000.0,
];

/// The Lanczos sum as a ratio of two polynomials, evaluated in `x` below 5 and in `1/x`
/// above, so neither overflows.
fn lanczos_sum(x: f64) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    if x < 5.0 {
        for i in (0..LANCZOS_N).rev() {
            num = num * x + LANCZOS_NUM[i];
            den = den * x + LANCZOS_DEN[i];
        }
    } else {
        for i in 0..LANCZOS_N {
            num = num / x + LANCZOS_NUM[i];
            den = den / x + LANCZOS_DEN[i];
        }
    }
    num / den
}

/// sin(pi * x), exact at the integers and half-integers.
fn sinpi(x: f64) -> f64 {
    use std::f64::consts::PI;
    let y = x.abs() % 2.0;
    let n = (2.0 * y).round() as i32;
    let r = match n {
        0 => (PI * y).sin(),
        1 => (PI * (y - 0.5)).cos(),
        2 => (PI * (1.0 - y)).sin(),
        3 => -(PI * (y - 1.5)).cos(),
        _ => (PI * (y - 2.0)).sin(),
    };
    1.0f64.copysign(x) * r
}

/// `math.gamma` for an argument that is not a pole (the caller refuses those): CPython's
/// `m_tgamma`. Infinite when the result overflows.
pub(super) fn gamma(x: f64) -> f64 {
    use std::f64::consts::PI;
    if !x.is_finite() {
        return if x.is_nan() || x > 0.0 { x } else { f64::NAN };
    }
    if x == x.floor() && x > 0.0 && x <= GAMMA_INTEGRAL.len() as f64 {
        return GAMMA_INTEGRAL[x as usize - 1];
    }
    let absx = x.abs();
    if absx < 1e-20 {
        return 1.0 / x;
    }
    if absx > 200.0 {
        return if x < 0.0 {
            0.0 / sinpi(x)
        } else {
            f64::INFINITY
        };
    }
    let y = absx + LANCZOS_G_MINUS_HALF;
    let z = if absx > LANCZOS_G_MINUS_HALF {
        let q = y - absx;
        q - LANCZOS_G_MINUS_HALF
    } else {
        let q = y - LANCZOS_G_MINUS_HALF;
        q - absx
    };
    let z = z * LANCZOS_G / y;
    let mut r;
    if x < 0.0 {
        r = -PI / sinpi(absx) / absx * y.exp() / lanczos_sum(absx);
        r -= z * r;
        if absx < 140.0 {
            r /= y.powf(absx - 0.5);
        } else {
            let sqrtpow = y.powf(absx / 2.0 - 0.25);
            r /= sqrtpow;
            r /= sqrtpow;
        }
    } else {
        r = lanczos_sum(absx) / y.exp();
        r += z * r;
        if absx < 140.0 {
            r *= y.powf(absx - 0.5);
        } else {
            let sqrtpow = y.powf(absx / 2.0 - 0.25);
            r *= sqrtpow;
            r *= sqrtpow;
        }
    }
    r
}

/// `math.lgamma` for an argument that is not a pole: CPython's `m_lgamma`.
pub(super) fn lgamma(x: f64) -> f64 {
    const LOG_PI: f64 = 1.144_729_885_849_400_174_143_427_351_353_058_711_647;
    if !x.is_finite() {
        return if x.is_nan() { x } else { f64::INFINITY };
    }
    if x == x.floor() && x <= 2.0 {
        // 1 and 2 (the poles are the caller's).
        return 0.0;
    }
    let absx = x.abs();
    if absx < 1e-20 {
        return -absx.ln();
    }
    let mut r = lanczos_sum(absx).ln() - LANCZOS_G;
    r += (absx - 0.5) * ((absx + LANCZOS_G - 0.5).ln() - 1.0);
    if x < 0.0 {
        r = LOG_PI - sinpi(absx).abs().ln() - absx.ln() - r;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbrt_has_glibcs_last_digits() {
        assert_eq!(cbrt(27.0), 3.000_000_000_000_000_4);
        assert_eq!(cbrt(-8.0), -2.0);
        assert_eq!(cbrt(0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(cbrt(-0.0).to_bits(), (-0.0f64).to_bits());
        assert!(cbrt(f64::NAN).is_nan());
        assert_eq!(cbrt(f64::NEG_INFINITY), f64::NEG_INFINITY);
    }

    #[test]
    fn gamma_family_is_cpythons_lanczos() {
        assert_eq!(lgamma(5.0), 3.178_053_830_347_945);
        assert_eq!(gamma(5.0), 24.0);
        assert_eq!(gamma(0.5), 1.772_453_850_905_515_9);
        assert_eq!(gamma(201.0), f64::INFINITY);
    }
}
