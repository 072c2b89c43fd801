//! Unit tests for `pyfmt`: generated CPython cases (`cases.rs`) plus hand-written checks.

use std::str::FromStr;

use num_bigint::BigInt;

use super::*;

#[rustfmt::skip]
mod cases;

type A = PrintfArg;

fn big(s: &str) -> BigInt {
    BigInt::from_str(s).expect("test literal")
}

fn f(bits: u64) -> f64 {
    f64::from_bits(bits)
}

fn same_float(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fn fmt_float(x: f64, spec: &str) -> Result<String, String> {
    format_float(x, &parse_format_spec(spec)?)
}

fn fmt_int(v: &BigInt, spec: &str) -> Result<String, String> {
    format_int(v, &parse_format_spec(spec)?)
}

fn fmt_str(s: &str, spec: &str) -> Result<String, String> {
    format_str(s, &parse_format_spec(spec)?)
}

fn as_res(r: &Result<&str, &str>) -> Result<String, String> {
    r.map(str::to_string).map_err(str::to_string)
}

#[test]
fn pyfmt_float_repr_cases() {
    let mut bad = Vec::new();
    for &(bits, want) in cases::FLOAT_REPR {
        let got = float_repr(f(bits));
        if got != want {
            bad.push(format!("{bits:#x}: got {got:?} want {want:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_float_repr_examples() {
    let cases = [
        (1.0, "1.0"),
        (0.1, "0.1"),
        (1e-6, "1e-06"),
        (1e16, "1e+16"),
        (1.5e300, "1.5e+300"),
        (f64::INFINITY, "inf"),
        (f64::NEG_INFINITY, "-inf"),
        (f64::NAN, "nan"),
        (-0.0, "-0.0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1000.000001, "1000.000001"),
        (123456789012345.0, "123456789012345.0"),
        (1e15, "1000000000000000.0"),
        (0.0001, "0.0001"),
        (5e-324, "5e-324"),
    ];
    for (x, want) in cases {
        assert_eq!(float_repr(x), want, "{x:e}");
    }
    let mut s = String::from("x=");
    push_float_repr(&mut s, -2.5);
    assert_eq!(s, "x=-2.5");
}

#[test]
fn pyfmt_format_float_cases() {
    let mut bad = Vec::new();
    for &(bits, spec, ref want) in cases::FORMAT_FLOAT {
        let got = fmt_float(f(bits), spec);
        if got != as_res(want) {
            bad.push(format!(
                "format({:?}, {spec:?}): got {got:?} want {want:?}",
                f(bits)
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_format_int_cases() {
    let mut bad = Vec::new();
    for &(v, spec, ref want) in cases::FORMAT_INT {
        let got = fmt_int(&big(v), spec);
        if got != as_res(want) {
            bad.push(format!("format({v}, {spec:?}): got {got:?} want {want:?}"));
        }
        if let Ok(i) = v.parse::<i64>() {
            let fast = parse_format_spec(spec).and_then(|s| format_i64(i, &s));
            if fast != as_res(want) {
                bad.push(format!(
                    "format_i64({v}, {spec:?}): got {fast:?} want {want:?}"
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_format_str_cases() {
    let mut bad = Vec::new();
    for &(s, spec, ref want) in cases::FORMAT_STR {
        let got = fmt_str(s, spec);
        if got != as_res(want) {
            bad.push(format!(
                "format({s:?}, {spec:?}): got {got:?} want {want:?}"
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_format_spec_parsing() {
    let s = parse_format_spec("*^+z#012,.3f").expect("valid");
    assert_eq!(s.fill, Some('*'));
    assert_eq!(s.align, Some('^'));
    assert_eq!(s.sign, Some('+'));
    assert!(s.no_neg_0 && s.alt);
    assert!(!s.zero, "a 0 after an explicit fill is part of the width");
    assert_eq!(s.width, Some(12));
    assert_eq!(s.grouping, Some(','));
    assert_eq!(s.precision, Some(3));
    assert_eq!(s.ty, Some('f'));
    let z = parse_format_spec("010").expect("valid");
    assert!(z.zero && z.width == Some(10) && z.fill.is_none());
    assert!(parse_format_spec("").expect("valid").is_empty());
    assert_eq!(
        parse_format_spec_for("abc", "int"),
        Err("Invalid format specifier 'abc' for object of type 'int'".to_string())
    );
    assert_eq!(
        parse_format_spec(".").expect_err("an error"),
        "Format specifier missing precision"
    );
    assert_eq!(
        parse_format_spec("99999999999999999999").expect_err("an error"),
        "Too many decimal digits in format string"
    );
    assert_eq!(
        parse_format_spec(",_").expect_err("an error"),
        "Cannot specify both ',' and '_'."
    );
    // Unicode digits count as a width, as in CPython.
    assert_eq!(parse_format_spec("\u{663}").expect("valid").width, Some(3));
    assert_eq!(format_i64_spec(5, "\u{663}"), Ok("  5".to_string()));
    assert_eq!(format_int_spec(&big("-12"), "+05"), Ok("-0012".to_string()));
    assert_eq!(format_float_spec(0.5, ".1%"), Ok("50.0%".to_string()));
    assert_eq!(format_str_spec("ab", "^6"), Ok("  ab  ".to_string()));
    assert_eq!(
        format_float_spec(2.0, "abc").expect_err("an error"),
        "Invalid format specifier 'abc' for object of type 'float'"
    );
}

#[test]
fn pyfmt_format_surrogate_char_is_an_error() {
    assert!(format_i64_spec(0xd800, "c").is_err());
    assert!(printf_format("%c", &[A::I64(0xdfff)]).is_err());
}

#[test]
fn pyfmt_round_cases() {
    let mut bad = Vec::new();
    for &(bits, nd, ref want) in cases::ROUND {
        let got = round_float(f(bits), nd);
        let ok = match (&got, want) {
            (Ok(g), Ok(w)) => same_float(*g, f(*w)),
            (Err(g), Err(w)) => g == w,
            _ => false,
        };
        if !ok {
            bad.push(format!(
                "round({:?}, {nd}): got {got:?} want {want:?}",
                f(bits)
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_round_examples() {
    assert_eq!(round_half_even(2.675, 2), 2.67);
    assert_eq!(round_half_even(0.5, 0), 0.0);
    assert_eq!(round_half_even(1.5, 0), 2.0);
    assert_eq!(round_half_even(-2.5, 0).to_bits(), (-2.0f64).to_bits());
    assert_eq!(round_half_even(1234.5678, -2), 1200.0);
    assert_eq!(round_half_even(1250.0, -2), 1200.0);
    assert_eq!(round_half_even(1350.0, -2), 1400.0);
    assert_eq!(round_half_even(-0.4, 0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(round_half_even(1.7976931348623157e308, -308), f64::INFINITY);
    assert_eq!(
        round_float(1.7976931348623157e308, -308),
        Err("rounded value too large to represent".to_string())
    );
    assert_eq!(round_to_int(2.5), Ok(big("2")));
    assert_eq!(round_to_int(3.5), Ok(big("4")));
    assert_eq!(round_to_int(-0.5), Ok(big("0")));
    assert_eq!(round_to_int(1e20), Ok(big("100000000000000000000")));
    assert_eq!(
        round_to_int(f64::NAN),
        Err("cannot convert float NaN to integer".to_string())
    );
    assert_eq!(
        round_to_int(f64::INFINITY),
        Err("cannot convert float infinity to integer".to_string())
    );
}

#[test]
fn pyfmt_parse_int_cases() {
    let mut bad = Vec::new();
    for &(s, base, ref want) in cases::PARSE_INT {
        let got = parse_int_ex(s, base).map(|v| v.to_str_radix(16));
        if got != as_res(want) {
            bad.push(format!("int({s:?}, {base}): got {got:?} want {want:?}"));
        }
        if parse_int(s, base).map(|v| v.to_str_radix(16)) != want.ok().map(str::to_string) {
            bad.push(format!("parse_int({s:?}, {base}) disagrees"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_parse_float_cases() {
    let mut bad = Vec::new();
    for &(s, ref want) in cases::PARSE_FLOAT {
        let got = parse_float_ex(s);
        let ok = match (&got, want) {
            (Ok(g), Ok(w)) => same_float(*g, f(*w)),
            (Err(g), Err(w)) => g == w,
            _ => false,
        };
        if !ok {
            bad.push(format!("float({s:?}): got {got:?} want {want:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert_eq!(parse_float(" 1e3 "), Some(1000.0));
    assert_eq!(parse_float("-Infinity"), Some(f64::NEG_INFINITY));
    assert_eq!(parse_float("1_0.5"), Some(10.5));
    assert!(parse_float("nan").is_some_and(f64::is_nan));
    assert_eq!(parse_float("abc"), None);
}

#[test]
fn pyfmt_divmod_cases() {
    let mut bad = Vec::new();
    for &(a, b, q, r) in cases::DIVMOD {
        let (a, b) = (f(a), f(b));
        let (gq, gr) = (float_floordiv(a, b), float_mod(a, b));
        if !same_float(gq, f(q)) || !same_float(gr, f(r)) {
            bad.push(format!(
                "divmod({a:?}, {b:?}): got ({gq:?}, {gr:?}) want ({:?}, {:?})",
                f(q),
                f(r)
            ));
        }
        let (dq, dr) = float_divmod(a, b);
        if !same_float(dq, f(q)) || !same_float(dr, f(r)) {
            bad.push(format!("float_divmod({a:?}, {b:?}) disagrees"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_int_float_conversions() {
    for &(v, want) in cases::INT_TO_FLOAT {
        let got = int_to_float(&big(v));
        assert_eq!(got.map(f64::to_bits), want, "float({v})");
    }
    for &(bits, want) in cases::FLOAT_TO_INT {
        let got = float_to_int(f(bits)).map(|v| v.to_string());
        assert_eq!(got.as_deref(), want, "int({:?})", f(bits));
        let fast = float_to_i64(f(bits));
        if let Some(i) = fast {
            assert_eq!(Some(i.to_string()).as_deref(), want);
        }
    }
    assert_eq!(float_to_i64(9.3e18), None);
    assert_eq!(float_to_i64(-9_223_372_036_854_775_808.0), Some(i64::MIN));
    assert_eq!(
        float_to_int_checked(f64::NAN),
        Err("cannot convert float NaN to integer".to_string())
    );
    assert!(float_is_integer(3.0) && !float_is_integer(3.5) && !float_is_integer(f64::INFINITY));
}

#[test]
fn pyfmt_str_repr_cases() {
    for &(s, want) in cases::STR_REPR {
        assert_eq!(str_repr(s), want, "repr({s:?})");
    }
    for &(s, want) in cases::ASCII_REPR {
        assert_eq!(ascii_escape(&str_repr(s)), want, "ascii({s:?})");
    }
    // Unicode 15 (CPython 3.12) additions are printable; unassigned code points are not.
    assert_eq!(str_repr("\u{31350}"), "'\u{31350}'");
    assert_eq!(str_repr("\u{11f00}"), "'\u{11f00}'");
    assert_eq!(str_repr("\u{323b0}"), "'\\U000323b0'");
}

#[test]
fn pyfmt_split_cases() {
    let mut bad = Vec::new();
    for &(s, sep, max, rev, ref want) in cases::SPLIT {
        let got = if rev {
            py_rsplit(s, sep, max)
        } else {
            py_split(s, sep, max)
        };
        let want: Result<Vec<String>, String> = match want {
            Ok(parts) => Ok(parts.iter().map(|p| p.to_string()).collect()),
            Err(e) => Err(e.to_string()),
        };
        if got != want {
            bad.push(format!(
                "{s:?}.{}split({sep:?}, {max}): got {got:?} want {want:?}",
                if rev { "r" } else { "" }
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_splitlines_cases() {
    for &(s, keep, want) in cases::SPLITLINES {
        assert_eq!(py_splitlines(s, keep), want, "{s:?}.splitlines({keep})");
    }
}

#[test]
fn pyfmt_strip_cases() {
    for &(s, chars, both, left, right) in cases::STRIP {
        assert_eq!(py_strip(s, chars), both, "{s:?}.strip({chars:?})");
        assert_eq!(py_lstrip(s, chars), left, "{s:?}.lstrip({chars:?})");
        assert_eq!(py_rstrip(s, chars), right, "{s:?}.rstrip({chars:?})");
    }
}

#[test]
fn pyfmt_case_mapping_cases() {
    let mut bad = Vec::new();
    for &(s, title, cap, swap, lower, upper) in cases::CASES {
        let got = (
            py_title(s),
            py_capitalize(s),
            py_swapcase(s),
            py_lower(s),
            py_upper(s),
        );
        let want = (
            title.to_string(),
            cap.to_string(),
            swap.to_string(),
            lower.to_string(),
            upper.to_string(),
        );
        if got != want {
            bad.push(format!("{s:?}: got {got:?} want {want:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_predicate_cases() {
    let mut bad = Vec::new();
    for &(s, want) in cases::PREDICATES {
        let got = [
            py_isdigit(s),
            py_isalpha(s),
            py_isalnum(s),
            py_isspace(s),
            py_isupper(s),
            py_islower(s),
            py_isdecimal(s),
            py_isnumeric(s),
            py_istitle(s),
            py_isprintable(s),
        ];
        if got != want {
            bad.push(format!("{s:?}: got {got:?} want {want:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_find_count_cases() {
    let mut bad = Vec::new();
    for &(s, sub, start, end, find, rfind, count) in cases::FIND {
        let got = (
            py_find(s, sub, start, end),
            py_rfind(s, sub, start, end),
            py_count_range(s, sub, start, end) as i64,
        );
        if got != (find, rfind, count) {
            bad.push(format!(
                "{s:?} {sub:?} {start:?} {end:?}: got {got:?} want {:?}",
                (find, rfind, count)
            ));
        }
        if start.is_none() && end.is_none() && py_count(s, sub) as i64 != count {
            bad.push(format!("{s:?}.count({sub:?}) disagrees"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_replace_cases() {
    for &(s, old, new, count, want) in cases::REPLACE {
        assert_eq!(
            py_replace(s, old, new, count),
            want,
            "{s:?}.replace({old:?}, {new:?}, {count})"
        );
    }
}

#[test]
fn pyfmt_pad_cases() {
    for &(s, w, fill, center, ljust, rjust, zfill) in cases::PAD {
        assert_eq!(py_center(s, w, fill), center, "{s:?}.center({w}, {fill:?})");
        assert_eq!(py_ljust(s, w, fill), ljust, "{s:?}.ljust({w}, {fill:?})");
        assert_eq!(py_rjust(s, w, fill), rjust, "{s:?}.rjust({w}, {fill:?})");
        assert_eq!(py_zfill(s, w), zfill, "{s:?}.zfill({w})");
    }
}

#[test]
fn pyfmt_expandtabs_cases() {
    for &(s, ts, want) in cases::EXPANDTABS {
        assert_eq!(py_expandtabs(s, ts), want, "{s:?}.expandtabs({ts})");
    }
}

#[test]
fn pyfmt_other_str_methods() {
    assert_eq!(py_partition("a=b=c", "="), Some(("a", "=", "b=c")));
    assert_eq!(py_partition("abc", "="), Some(("abc", "", "")));
    assert_eq!(py_rpartition("a=b=c", "="), Some(("a=b", "=", "c")));
    assert_eq!(py_rpartition("abc", "="), Some(("", "", "abc")));
    assert_eq!(py_partition("abc", ""), None);
    assert!(py_startswith("héllo", "él", Some(1), None));
    assert!(!py_startswith("héllo", "él", Some(2), None));
    assert!(py_endswith("héllo", "ll", None, Some(4)));
    assert!(py_startswith("abc", "", Some(3), None));
    assert!(!py_startswith("abc", "", Some(4), None));
    assert_eq!(py_removeprefix("prefix-x", "prefix-"), "x");
    assert_eq!(py_removesuffix("x.py", ".py"), "x");
    assert_eq!(py_removesuffix("x", ""), "x");
    assert_eq!(py_join(", ", &["a", "b", "c"]), "a, b, c");
    assert_eq!(char_len("日本"), 2);
    assert!(py_isascii("abc") && !py_isascii("é"));
}

#[test]
fn pyfmt_slice_cases() {
    let mut bad = Vec::new();
    for &(n, start, stop, step, want) in cases::SLICES {
        let got = slice_indices(n, start, stop, step);
        if got != want {
            bad.push(format!(
                "range({n})[{start:?}:{stop:?}:{step}]: got {got:?} want {want:?}"
            ));
        }
        let (_, _, _, count) = slice_range(n, start, stop, step);
        if count != want.len() {
            bad.push(format!(
                "slice_range count for {n} {start:?} {stop:?} {step}"
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
    // Extreme values do not overflow.
    assert_eq!(slice_indices(3, None, None, i64::MIN), vec![2]);
    assert_eq!(
        slice_indices(3, Some(i64::MIN), Some(i64::MAX), i64::MAX),
        vec![0]
    );
    assert_eq!(
        slice_range(5, Some(i64::MAX), Some(i64::MIN), -1),
        (4, -1, -1, 5)
    );
}

#[test]
fn pyfmt_normalize_index() {
    assert_eq!(normalize_index(3, 0), Some(0));
    assert_eq!(normalize_index(3, 2), Some(2));
    assert_eq!(normalize_index(3, 3), None);
    assert_eq!(normalize_index(3, -1), Some(2));
    assert_eq!(normalize_index(3, -3), Some(0));
    assert_eq!(normalize_index(3, -4), None);
    assert_eq!(normalize_index(0, 0), None);
    assert_eq!(normalize_index(0, -1), None);
    assert_eq!(normalize_index(5, i64::MIN), None);
    assert_eq!(normalize_index(5, i64::MAX), None);
}

#[test]
fn pyfmt_printf_cases() {
    let mut bad = Vec::new();
    for (fmt, args, want) in cases::printf_cases() {
        let got = printf_format(fmt, &args);
        if got != as_res(&want) {
            bad.push(format!("{fmt:?} % {args:?}: got {got:?} want {want:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_printf_mapping_cases() {
    let mut bad = Vec::new();
    for (fmt, items, dict_str, want) in cases::printf_map_cases() {
        let dict = A::Obj {
            type_name: "dict".into(),
            str: dict_str.into(),
            repr: dict_str.into(),
        };
        let mut lookup = |k: &str| -> Result<PrintfArg, String> {
            items
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| format!("KeyError: '{k}'"))
        };
        let got = printf_format_args(fmt, PrintfArgs::Mapping(&dict, &mut lookup));
        if got != as_res(&want) {
            bad.push(format!("{fmt:?} % {dict_str}: got {got:?} want {want:?}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} failures:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn pyfmt_printf_single_and_fast_args() {
    let five = A::I64(5);
    assert_eq!(
        printf_format_args("%s", PrintfArgs::Single(&five)),
        Ok("5".to_string())
    );
    assert_eq!(
        printf_format_args("%s %s", PrintfArgs::Single(&five)),
        Err("not enough arguments for format string".to_string())
    );
    assert_eq!(
        printf_format_args("abc", PrintfArgs::Single(&five)),
        Err("not all arguments converted during string formatting".to_string())
    );
    assert_eq!(
        printf_format("%05.1f|%x", &[A::I64(2), A::I64(255)]),
        Ok("002.0|ff".to_string())
    );
    assert_eq!(
        printf_format("%d", &[A::I64(i64::MIN)]),
        Ok(i64::MIN.to_string())
    );
}

#[test]
fn pyfmt_error_kinds() {
    use PyErrorKind::*;
    let k = |fmt: &str, args: &[PrintfArg]| {
        error_kind(&printf_format(fmt, args).expect_err("an error"))
    };
    assert_eq!(k("%s %s", &[A::I64(1)]), TypeError);
    assert_eq!(k("%s", &[A::I64(1), A::I64(2)]), TypeError);
    assert_eq!(
        k(
            "%d",
            &[A::Str {
                str: "x".into(),
                repr: "'x'".into()
            }]
        ),
        TypeError
    );
    assert_eq!(k("%x", &[A::Float(1.5)]), TypeError);
    assert_eq!(
        k(
            "%f",
            &[A::Str {
                str: "x".into(),
                repr: "'x'".into()
            }]
        ),
        TypeError
    );
    assert_eq!(k("%c", &[A::Float(1.5)]), TypeError);
    assert_eq!(k("%*d", &[A::Float(1.5), A::I64(1)]), TypeError);
    assert_eq!(k("%c", &[A::I64(-1)]), OverflowError);
    assert_eq!(k("%d", &[A::Float(f64::INFINITY)]), OverflowError);
    assert_eq!(k("%d", &[A::Float(f64::NAN)]), ValueError);
    assert_eq!(k("%y", &[A::I64(1)]), ValueError);
    assert_eq!(k("%", &[A::I64(1)]), ValueError);
    assert_eq!(
        error_kind("int too large to convert to float"),
        OverflowError
    );
    assert_eq!(
        error_kind(&format_i64_spec(1, "q").expect_err("an error")),
        ValueError
    );
    assert_eq!(
        error_kind(&format_i64_spec(-1, "c").expect_err("an error")),
        OverflowError
    );
    assert_eq!(
        error_kind(&round_float(1.7976931348623157e308, -308).expect_err("an error")),
        OverflowError
    );
}

#[test]
fn sizes_over_a_bound_are_memory_errors() {
    let bounded =
        |fmt: &str, args: &[PrintfArg]| printf_format_bounded(fmt, PrintfArgs::Tuple(args), 1000);
    let s = |t: &str| A::Str {
        str: t.into(),
        repr: format!("'{t}'"),
    };
    assert_eq!(
        bounded("%2000d", &[A::I64(1)]),
        Err("string would have 2000 bytes (limit 1000)".to_string())
    );
    assert_eq!(
        bounded("%*d", &[A::I64(-2000), A::I64(1)]),
        Err("string would have 2000 bytes (limit 1000)".to_string())
    );
    assert_eq!(
        bounded("%.2000f", &[A::Float(1.5)]),
        Err("string would have 2000 bytes (limit 1000)".to_string())
    );
    assert_eq!(
        bounded("%s%s", &[s(&"a".repeat(600)), s(&"b".repeat(600))]),
        Err("string would have 1200 bytes (limit 1000)".to_string())
    );
    // A precision truncates strings; widths within the bound work as before.
    assert_eq!(
        bounded("%.2000s|%5d", &[s("abc"), A::I64(7)]),
        Ok("abc|    7".to_string())
    );
    assert_eq!(
        error_kind("string would have 2000 bytes (limit 1000)"),
        PyErrorKind::MemoryError
    );
    // Unbounded callers keep CPython's texts for absurd widths.
    assert_eq!(
        printf_format("%99999999999d", &[A::I64(1)]),
        Err("width too big".to_string())
    );
    // Format specs: parsed up to sys.maxsize, refused over MAX_SPEC_NUMBER when built.
    let over = MAX_SPEC_NUMBER + 1;
    let spec = parse_format_spec(&format!(">{over}")).expect("parses");
    assert_eq!(spec.width, Some(over));
    assert_eq!(
        error_kind(&format_str("x", &spec).expect_err("too wide")),
        PyErrorKind::MemoryError
    );
    assert_eq!(
        error_kind(&format_i64(1, &spec).expect_err("too wide")),
        PyErrorKind::MemoryError
    );
    let spec = parse_format_spec(&format!(".{over}f")).expect("parses");
    assert_eq!(
        error_kind(&format_float(1.5, &spec).expect_err("too precise")),
        PyErrorKind::MemoryError
    );
    let spec = parse_format_spec(&format!(".{over}")).expect("parses");
    assert_eq!(format_str("abc", &spec), Ok("abc".to_string()));
}

#[test]
fn pyfmt_int_str_limit() {
    let small = big(&"9".repeat(4300));
    assert!(int_to_str_checked(&small).is_ok());
    let large = big(&"9".repeat(4301));
    assert_eq!(
        int_to_str_checked(&large).expect_err("an error"),
        "Exceeds the limit (4300 digits) for integer string conversion; use \
         sys.set_int_max_str_digits() to increase the limit"
    );
    assert_eq!(int_to_str_checked(&big("-123")), Ok("-123".to_string()));
}

#[test]
fn pyfmt_unicode_tables_ascii_fast_paths_agree() {
    use super::tables;
    let in_table =
        |t: &[(u32, u32)], c: char| t.iter().any(|&(lo, hi)| (lo..=hi).contains(&(c as u32)));
    for b in 0u8..128 {
        let c = char::from(b);
        assert_eq!(
            unicode::is_printable(c),
            in_table(tables::PRINTABLE, c),
            "{c:?}"
        );
        assert_eq!(unicode::is_space(c), in_table(tables::SPACE, c), "{c:?}");
        assert_eq!(unicode::is_alpha(c), in_table(tables::ALPHA, c), "{c:?}");
        assert_eq!(
            unicode::is_decimal(c),
            in_table(tables::DECIMAL, c),
            "{c:?}"
        );
        assert_eq!(unicode::is_digit(c), in_table(tables::DIGIT, c), "{c:?}");
        assert_eq!(
            unicode::is_numeric(c),
            in_table(tables::NUMERIC, c),
            "{c:?}"
        );
        assert_eq!(unicode::is_cased(c), in_table(tables::CASED, c), "{c:?}");
        assert_eq!(
            unicode::is_case_ignorable(c),
            in_table(tables::CASE_IGNORABLE, c),
            "{c:?}"
        );
    }
    for t in [
        tables::PRINTABLE,
        tables::ALPHA,
        tables::DECIMAL,
        tables::DIGIT,
        tables::NUMERIC,
        tables::SPACE,
        tables::TITLECASE,
        tables::CASED,
        tables::CASE_IGNORABLE,
    ] {
        assert!(
            t.windows(2).all(|w| w[0].1 < w[1].0),
            "tables are sorted and disjoint"
        );
    }
    assert!(tables::TITLE_MAP.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(unicode::decimal_value('\u{663}'), Some(3));
    assert_eq!(unicode::decimal_value('\u{1d7d8}'), Some(0));
    assert_eq!(unicode::decimal_value('x'), None);
    assert_eq!(unicode::decimal_value('\u{b2}'), None);
}

/// No input may panic: feed a spread of odd specs and formats through every entry point.
#[test]
fn pyfmt_no_panics_on_odd_input() {
    let specs = [
        "",
        "é",
        "éé",
        "é<",
        "<é",
        "\u{10ffff}^10",
        "0",
        "00",
        "#",
        ",",
        "_",
        ".",
        ".0",
        "z",
        "+#0,.3%",
        "\u{663}\u{664}",
        "=",
        "<<<",
        "x<",
        ".99999999999",
        "9999999999",
        "%",
        "c",
    ];
    for s in specs {
        let _ = format_i64_spec(-7, s);
        let _ = format_int_spec(&big("-123456789012345678901234567890"), s);
        let _ = format_float_spec(-1.5e-7, s);
        let _ = format_float_spec(f64::NAN, s);
        let _ = format_str_spec("héllo", s);
    }
    let fmts = [
        "%",
        "%(",
        "%(é",
        "%(a)",
        "%*",
        "%.*",
        "%é",
        "%-",
        "%0",
        "%#",
        "%ll",
        "%.9999999999d",
    ];
    for fmt in fmts {
        let _ = printf_format(fmt, &[A::I64(1), A::I64(2)]);
    }
    for s in ["", "é", "\u{10ffff}", "-", "0x", "0_", "\u{663}_1"] {
        let _ = parse_int(s, 0);
        let _ = parse_float(s);
        let _ = py_split(s, Some("é"), 1);
        let _ = py_rsplit(s, None, 1);
        let _ = py_find(s, "é", Some(-1), Some(i64::MAX));
        let _ = py_rfind(s, "", Some(i64::MIN), Some(i64::MIN));
        let _ = py_title(s);
        let _ = py_center(s, 5, 'é');
        let _ = py_zfill(s, 3);
        let _ = py_expandtabs(s, i64::MAX);
    }
}
