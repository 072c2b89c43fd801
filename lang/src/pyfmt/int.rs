//! Integers with CPython semantics: `int(str, base)` parsing and radix digit generation.

use num_bigint::BigInt;
use num_traits::Num;

use super::float::to_ascii_number;

/// CPython's default `sys.get_int_max_str_digits()`.
pub const INT_MAX_STR_DIGITS: usize = 4300;

/// Python's `int(s, base)` for a str: surrounding white space, a sign, `_` between digits,
/// base 0 (prefix decides, no leading zeros) and the `0x`/`0o`/`0b` prefixes of bases 16/8/2,
/// Unicode decimal digits. `None` wherever CPython raises ValueError.
pub fn parse_int(s: &str, base: u32) -> Option<BigInt> {
    parse_int_ex(s, base).ok()
}

/// [`parse_int`] with CPython's ValueError messages: `invalid literal for int() with base 10:
/// 'x'`, `int() base must be >= 2 and <= 36, or 0`, and the 4300-digit limit.
pub fn parse_int_ex(s: &str, base: u32) -> Result<BigInt, String> {
    if base != 0 && !(2..=36).contains(&base) {
        return Err("int() base must be >= 2 and <= 36, or 0".to_string());
    }
    let invalid = || {
        let mut msg = format!("invalid literal for int() with base {base}: ");
        let mut r = String::new();
        super::strmethods::push_str_repr(&mut r, s);
        // CPython formats with %.200R: the repr is cut to 200 characters.
        msg.extend(r.chars().take(200));
        msg
    };
    let mut buf = String::new();
    let Some(text) = to_ascii_number(s, &mut buf) else {
        return Err(invalid());
    };
    match parse_ascii_int(text.as_bytes(), base) {
        Ok(v) => Ok(v),
        Err(Some(n)) => Err(format!(
            "Exceeds the limit ({INT_MAX_STR_DIGITS} digits) for integer string conversion: \
             value has {n} digits; use sys.set_int_max_str_digits() to increase the limit"
        )),
        Err(None) => Err(invalid()),
    }
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

fn digit_value(b: u8) -> u32 {
    match b {
        b'0'..=b'9' => u32::from(b - b'0'),
        b'a'..=b'z' => u32::from(b - b'a') + 10,
        b'A'..=b'Z' => u32::from(b - b'A') + 10,
        _ => 99,
    }
}

/// Port of `PyLong_FromString`. `Err(Some(n))` is the digit-limit error for `n` digits.
fn parse_ascii_int(s: &[u8], mut base: u32) -> Result<BigInt, Option<usize>> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut i = 0;
    while is_c_space(at(i)) {
        i += 1;
    }
    let mut negative = false;
    if at(i) == b'+' || at(i) == b'-' {
        negative = at(i) == b'-';
        i += 1;
    }
    let mut error_if_nonzero = false;
    if base == 0 {
        base = if at(i) != b'0' {
            10
        } else {
            match at(i + 1) {
                b'x' | b'X' => 16,
                b'o' | b'O' => 8,
                b'b' | b'B' => 2,
                _ => {
                    error_if_nonzero = true;
                    10
                }
            }
        };
    }
    if at(i) == b'0' {
        let p = at(i + 1).to_ascii_lowercase();
        if (base == 16 && p == b'x') || (base == 8 && p == b'o') || (base == 2 && p == b'b') {
            i += 2;
            if at(i) == b'_' {
                i += 1;
            }
        }
    }
    if at(i) == b'_' {
        return Err(None);
    }
    let start = i;
    let mut digits = 0usize;
    let mut prev = 0u8;
    while i < s.len() {
        let b = at(i);
        if b == b'_' {
            if prev == b'_' {
                return Err(None);
            }
        } else if digit_value(b) < base {
            digits += 1;
        } else {
            break;
        }
        prev = b;
        i += 1;
    }
    if prev == b'_' {
        return Err(None);
    }
    if digits == 0 {
        return Err(None);
    }
    if !base.is_power_of_two() && digits > INT_MAX_STR_DIGITS {
        return Err(Some(digits));
    }
    let end = i;
    while is_c_space(at(i)) {
        i += 1;
    }
    if i != s.len() {
        return Err(None);
    }
    let run = s.get(start..end).unwrap_or(&[]);
    let value = if digits <= 12 || (base == 10 && digits <= 18) {
        let mut v: i64 = 0;
        for &b in run {
            if b != b'_' {
                v = v * i64::from(base) + i64::from(digit_value(b));
            }
        }
        BigInt::from(v)
    } else {
        let clean: Vec<u8> = run.iter().copied().filter(|&b| b != b'_').collect();
        let text = std::str::from_utf8(&clean).map_err(|_| None)?;
        BigInt::from_str_radix(text, base).map_err(|_| None)?
    };
    if error_if_nonzero && value != BigInt::from(0) {
        return Err(None);
    }
    Ok(if negative { -value } else { value })
}

/// Decimal `str(v)` with CPython's 4300-digit limit (ValueError `Exceeds the limit (4300
/// digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the
/// limit`).
pub fn int_to_str_checked(v: &BigInt) -> Result<String, String> {
    // 3.33 bits per digit: anything under 14000 bits has fewer than 4300 digits.
    if v.bits() >= 14_000 {
        let s = v.magnitude().to_string();
        if s.len() > INT_MAX_STR_DIGITS {
            return Err(format!(
                "Exceeds the limit ({INT_MAX_STR_DIGITS} digits) for integer string \
                 conversion; use sys.set_int_max_str_digits() to increase the limit"
            ));
        }
    }
    Ok(v.to_string())
}

/// Writes the digits of `v` in `base` (2..=36) into the end of `buf`, returning the digits.
pub(crate) fn u64_digits(buf: &mut [u8; 64], mut v: u64, base: u32, upper: bool) -> &[u8] {
    let table: &[u8; 36] = if upper {
        b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    } else {
        b"0123456789abcdefghijklmnopqrstuvwxyz"
    };
    let base = u64::from(base.clamp(2, 36));
    let mut pos = buf.len();
    loop {
        let d = (v % base) as usize;
        v /= base;
        pos -= 1;
        if let (Some(slot), Some(&c)) = (buf.get_mut(pos), table.get(d)) {
            *slot = c;
        }
        if v == 0 || pos == 0 {
            break;
        }
    }
    buf.get(pos..).unwrap_or(&[])
}
