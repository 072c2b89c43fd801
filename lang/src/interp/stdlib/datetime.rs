//! `datetime`: `datetime`, `date`, `time`, `timedelta` and `timezone` (fixed offsets, `utc`) with
//! hand-written proleptic-Gregorian arithmetic. svc has no time-zone database: local
//! time is UTC (`now()`, `fromtimestamp()` and `timestamp()` of a naive datetime).

use super::super::value::*;
use super::super::{Interp, R};
use crate::ast::BinOp;
use std::cmp::Ordering;
use std::rc::Rc;

pub const TIMEDELTA_METHODS: &[&str] = &["total_seconds"];
pub const DATE_METHODS: &[&str] = &[
    "isocalendar",
    "isoformat",
    "strftime",
    "weekday",
    "isoweekday",
    "replace",
    "toordinal",
];
pub const DATETIME_METHODS: &[&str] = &[
    "isocalendar",
    "isoformat",
    "strftime",
    "weekday",
    "isoweekday",
    "replace",
    "toordinal",
    "timestamp",
    "date",
    "astimezone",
    "utcoffset",
    "tzname",
    "dst",
    "time",
    "timetz",
];
pub const TIME_METHODS: &[&str] = &[
    "isoformat",
    "strftime",
    "replace",
    "utcoffset",
    "tzname",
    "dst",
];
pub const TIME_CLASS_FNS: &[&str] = &["fromisoformat"];
pub const DATETIME_CLASS_FNS: &[&str] = &[
    "now",
    "utcnow",
    "today",
    "fromtimestamp",
    "utcfromtimestamp",
    "fromisoformat",
    "strptime",
    "fromordinal",
    "combine",
];
pub const DATE_CLASS_FNS: &[&str] = &["today", "fromtimestamp", "fromisoformat", "fromordinal"];

const US_PER_SEC: i128 = 1_000_000;
const US_PER_DAY: i128 = 86_400 * US_PER_SEC;
const MAX_TD_DAYS: i128 = 999_999_999;
/// Days from 0001-01-01 to 1970-01-01.
const EPOCH_ORDINAL: i64 = 719_162;

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A datetime as plain numbers: local microseconds since 0001-01-01 and the UTC
/// offset in microseconds of an aware one.
#[derive(Clone, Copy)]
struct Dt {
    us: i128,
    offset: Option<i128>,
}

/// Python's `//` on integers (rounds toward negative infinity).
fn floor_div(x: i128, y: i128) -> i128 {
    let q = x / y;
    if x % y != 0 && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

fn int_of(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

/// `%02d`-style helpers.
fn fmt_offset(us: i128, colon: bool) -> String {
    let sign = if us < 0 { '-' } else { '+' };
    let a = us.abs();
    let (h, rest) = (a / (3600 * US_PER_SEC), a % (3600 * US_PER_SEC));
    let (m, rest) = (rest / (60 * US_PER_SEC), rest % (60 * US_PER_SEC));
    let (s, micro) = (rest / US_PER_SEC, rest % US_PER_SEC);
    let sep = if colon { ":" } else { "" };
    let mut out = format!("{sign}{h:02}{sep}{m:02}");
    if s != 0 || micro != 0 {
        out.push_str(&format!("{sep}{s:02}"));
        if micro != 0 {
            out.push_str(&format!(".{micro:06}"));
        }
    }
    out
}

impl Interp<'_> {
    pub(super) fn datetime_member(&mut self, name: &str) -> Option<Value> {
        match name {
            "MINYEAR" => Some(Value::Int(1)),
            "MAXYEAR" => Some(Value::Int(9999)),
            _ => None,
        }
    }

    /// `timezone.utc` (one instance per program, kept on the class).
    fn utc(&mut self) -> Value {
        let class = self.stdlib_class("datetime.timezone");
        if let Some(v) = class.statics.borrow().get("utc") {
            return v.clone();
        }
        let zero = self.make_td(0);
        let v = self.stdlib_instance("datetime.timezone", vec![zero, Value::None]);
        class
            .statics
            .borrow_mut()
            .insert(Rc::from("utc"), v.clone());
        v
    }

    /// `timezone.utc` (for `strptime`).
    pub(super) fn stdlib_call_utc(&mut self) -> Value {
        self.utc()
    }

    /// `timezone(timedelta(microseconds=us))` (for `strptime`).
    pub(super) fn stdlib_fixed_offset(&mut self, us: i128) -> Value {
        let off = self.make_td(us);
        self.stdlib_instance("datetime.timezone", vec![off, Value::None])
    }

    /// A `datetime` from its eight fields (`fold` 0), validated as the constructor does.
    pub(super) fn checked_datetime(&mut self, mut fields: Vec<Value>) -> R<Value> {
        fields.push(Value::Int(0));
        let n: Vec<i64> = fields.iter().take(7).map(int_of).collect();
        self.validate_ymd(n[0], n[1], n[2])?;
        self.validate_time(n[3], n[4], n[5], n[6])?;
        Ok(self.stdlib_instance("datetime.datetime", fields))
    }

    pub(super) fn datetime_class_attr(&mut self, key: &str, name: &str) -> Option<Value> {
        match (key, name) {
            ("datetime.timezone", "utc") => Some(self.utc()),
            ("datetime.timedelta", "max") => Some(self.make_td((MAX_TD_DAYS + 1) * US_PER_DAY - 1)),
            ("datetime.timedelta", "min") => Some(self.make_td(-MAX_TD_DAYS * US_PER_DAY)),
            ("datetime.date", "min") => Some(self.stdlib_instance(
                "datetime.date",
                vec![Value::Int(1), Value::Int(1), Value::Int(1)],
            )),
            ("datetime.date", "max") => Some(self.stdlib_instance(
                "datetime.date",
                vec![Value::Int(9999), Value::Int(12), Value::Int(31)],
            )),
            ("datetime.time", "min") => Some(self.stdlib_instance(
                "datetime.time",
                vec![
                    Value::Int(0),
                    Value::Int(0),
                    Value::Int(0),
                    Value::Int(0),
                    Value::None,
                    Value::Int(0),
                ],
            )),
            ("datetime.time", "max") => Some(self.stdlib_instance(
                "datetime.time",
                vec![
                    Value::Int(23),
                    Value::Int(59),
                    Value::Int(59),
                    Value::Int(999_999),
                    Value::None,
                    Value::Int(0),
                ],
            )),
            ("datetime.datetime", "min") => {
                let f = [1, 1, 1, 0, 0, 0, 0].map(Value::Int);
                let mut f = f.to_vec();
                f.extend([Value::None, Value::Int(0)]);
                Some(self.stdlib_instance("datetime.datetime", f))
            }
            ("datetime.datetime", "max") => {
                let mut f = [9999, 12, 31, 23, 59, 59, 999_999].map(Value::Int).to_vec();
                f.extend([Value::None, Value::Int(0)]);
                Some(self.stdlib_instance("datetime.datetime", f))
            }
            _ => None,
        }
    }

    // ----- construction of values -----

    fn make_td(&mut self, us: i128) -> Value {
        let days = us.div_euclid(US_PER_DAY);
        let rest = us.rem_euclid(US_PER_DAY);
        self.stdlib_instance(
            "datetime.timedelta",
            vec![
                Value::Int(days as i64),
                Value::Int((rest / US_PER_SEC) as i64),
                Value::Int((rest % US_PER_SEC) as i64),
            ],
        )
    }

    fn checked_td(&mut self, us: i128) -> R<Value> {
        let days = us.div_euclid(US_PER_DAY);
        if days.abs() > MAX_TD_DAYS {
            return Err(self.err(
                "OverflowError",
                format!("days={days}; must have magnitude <= 999999999"),
            ));
        }
        Ok(self.make_td(us))
    }

    fn td_us(&self, v: &Value) -> i128 {
        let f = |n| i128::from(int_of(&self.field(v, n)));
        f("days") * US_PER_DAY + f("seconds") * US_PER_SEC + f("microseconds")
    }

    fn make_date(&mut self, days_since_epoch: i64) -> R<Value> {
        let (y, m, d) = civil_from_days(days_since_epoch);
        if !(1..=9999).contains(&y) {
            return Err(self.err("OverflowError", "date value out of range"));
        }
        Ok(self.stdlib_instance(
            "datetime.date",
            vec![Value::Int(y), Value::Int(m), Value::Int(d)],
        ))
    }

    fn date_days(&self, v: &Value) -> i64 {
        days_from_civil(
            int_of(&self.field(v, "year")),
            int_of(&self.field(v, "month")),
            int_of(&self.field(v, "day")),
        )
    }

    fn make_dt(&mut self, us: i128, tz: Value) -> R<Value> {
        let days = us.div_euclid(US_PER_DAY) as i64 - EPOCH_ORDINAL;
        let t = us.rem_euclid(US_PER_DAY);
        let (y, m, d) = civil_from_days(days);
        if !(1..=9999).contains(&y) {
            return Err(self.err("OverflowError", "date value out of range"));
        }
        let secs = t / US_PER_SEC;
        Ok(self.stdlib_instance(
            "datetime.datetime",
            vec![
                Value::Int(y),
                Value::Int(m),
                Value::Int(d),
                Value::Int((secs / 3600) as i64),
                Value::Int((secs / 60 % 60) as i64),
                Value::Int((secs % 60) as i64),
                Value::Int((t % US_PER_SEC) as i64),
                tz,
                Value::Int(0),
            ],
        ))
    }

    fn dt_of(&self, v: &Value) -> Dt {
        let f = |n| i128::from(int_of(&self.field(v, n)));
        let days = i128::from(self.date_days(v) + EPOCH_ORDINAL);
        let us = days * US_PER_DAY
            + (f("hour") * 3600 + f("minute") * 60 + f("second")) * US_PER_SEC
            + f("microsecond");
        let tz = self.field(v, "tzinfo");
        let offset = (!tz.is_none()).then(|| self.td_us(&self.field(&tz, "_offset")));
        Dt { us, offset }
    }

    /// Microseconds since the Unix epoch of the host clock.
    fn now_us(&mut self) -> i128 {
        self.host.unix_time_nanos().div_euclid(1000)
    }

    /// `tz` argument: `None` or a timezone.
    fn tz_arg(&self, v: Option<&Value>) -> R<Value> {
        match v {
            None | Some(Value::None) => Ok(Value::None),
            Some(v) if Self::stdlib_key(v) == Some("datetime.timezone") => Ok(v.clone()),
            Some(other) => Err(self.err(
                "TypeError",
                format!(
                    "tzinfo argument must be None or of a tzinfo subclass, not type '{}'",
                    self.type_name_of(other)
                ),
            )),
        }
    }

    /// A datetime at Unix microseconds `unix_us`, in `tz` (naive: local time = UTC).
    fn dt_from_unix(&mut self, unix_us: i128, tz: Value) -> R<Value> {
        let offset = if tz.is_none() {
            0
        } else {
            self.td_us(&self.field(&tz, "_offset"))
        };
        let us = unix_us + i128::from(EPOCH_ORDINAL) * US_PER_DAY + offset;
        self.make_dt(us, tz)
    }

    /// A `fold=` argument: 0 or 1.
    fn fold_arg(&self, v: &Value) -> R<i64> {
        match self.int_arg(v)? {
            f @ (0 | 1) => Ok(f),
            _ => Err(self.err("ValueError", "fold must be either 0 or 1")),
        }
    }

    fn validate_ymd(&self, y: i64, m: i64, d: i64) -> R<()> {
        if !(1..=9999).contains(&y) {
            return Err(self.err("ValueError", format!("year {y} is out of range")));
        }
        if !(1..=12).contains(&m) {
            return Err(self.err("ValueError", "month must be in 1..12"));
        }
        if d < 1 || d > days_in_month(y, m) {
            return Err(self.err("ValueError", "day is out of range for month"));
        }
        Ok(())
    }

    fn validate_time(&self, h: i64, mi: i64, s: i64, us: i64) -> R<()> {
        if !(0..=23).contains(&h) {
            return Err(self.err("ValueError", "hour must be in 0..23"));
        }
        if !(0..=59).contains(&mi) {
            return Err(self.err("ValueError", "minute must be in 0..59"));
        }
        if !(0..=59).contains(&s) {
            return Err(self.err("ValueError", "second must be in 0..59"));
        }
        if !(0..=999_999).contains(&us) {
            return Err(self.err("ValueError", "microsecond must be in 0..999999"));
        }
        Ok(())
    }

    /// `datetime(...)`, `date(...)`, `timedelta(...)`, `timezone(...)`.
    pub(super) fn datetime_construct(
        &mut self,
        key: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        match key {
            "datetime.timedelta" => {
                const P: &[&str] = &[
                    "days",
                    "seconds",
                    "microseconds",
                    "milliseconds",
                    "minutes",
                    "hours",
                    "weeks",
                ];
                const UNIT: [i128; 7] = [
                    US_PER_DAY,
                    US_PER_SEC,
                    1,
                    1000,
                    60 * US_PER_SEC,
                    3600 * US_PER_SEC,
                    7 * US_PER_DAY,
                ];
                let a = self.stdlib_args_as(
                    super::ArgStyle::Keywords("__new__"),
                    P,
                    0,
                    7,
                    args,
                    kwargs,
                )?;
                // CPython's `delta_new`: each float's whole part and the whole part of
                // its fraction times the unit are exact; only what is left below one
                // microsecond is summed as a float and rounded once, half to even
                // against the parity of the exact total.
                let mut exact: i128 = 0;
                let mut leftover = 0.0f64;
                for (i, unit) in UNIT.iter().enumerate() {
                    match a.get(i) {
                        None => {}
                        Some(Value::Float(f)) => {
                            if f.is_nan() {
                                return Err(
                                    self.err("ValueError", "cannot convert float NaN to integer")
                                );
                            }
                            if f.is_infinite() {
                                return Err(self.err(
                                    "OverflowError",
                                    "cannot convert float infinity to integer",
                                ));
                            }
                            let whole = f.trunc();
                            if whole.abs() > 1e18 {
                                return Err(self.err(
                                    "OverflowError",
                                    "Python int too large to convert to C int",
                                ));
                            }
                            exact += (whole as i128) * unit;
                            let scaled = (f - whole) * (*unit as f64);
                            let scaled_whole = scaled.trunc();
                            exact += scaled_whole as i128;
                            leftover += scaled - scaled_whole;
                        }
                        Some(v @ (Value::Int(_) | Value::Bool(_))) => {
                            exact += i128::from(int_of(v)) * unit;
                        }
                        Some(Value::BigInt(_)) => {
                            return Err(self
                                .err("OverflowError", "Python int too large to convert to C int"));
                        }
                        Some(other) => {
                            return Err(self.err(
                                "TypeError",
                                format!(
                                    "unsupported type for timedelta {} component: {}",
                                    P[i],
                                    self.type_name_of(other)
                                ),
                            ));
                        }
                    }
                }
                let mut whole_us = leftover.round();
                if (whole_us - leftover).abs() == 0.5 {
                    let odd = f64::from(u8::from(exact.rem_euclid(2) == 1));
                    whole_us = 2.0 * ((leftover + odd) * 0.5).round() - odd;
                }
                let us = exact + whole_us as i128;
                self.checked_td(us)
            }
            "datetime.date" => {
                let a = self.stdlib_args_as(
                    super::ArgStyle::Keywords("function"),
                    &["year", "month", "day"],
                    3,
                    3,
                    args,
                    kwargs,
                )?;
                let mut v = [0i64; 3];
                for (i, slot) in v.iter_mut().enumerate() {
                    *slot = self.int_arg(a.get(i).unwrap_or(&Value::None))?;
                }
                self.validate_ymd(v[0], v[1], v[2])?;
                Ok(self
                    .stdlib_instance("datetime.date", v.iter().map(|x| Value::Int(*x)).collect()))
            }
            "datetime.datetime" => {
                let a = self.stdlib_args_as(
                    super::ArgStyle::Keywords("function"),
                    &[
                        "year",
                        "month",
                        "day",
                        "hour",
                        "minute",
                        "second",
                        "microsecond",
                        "tzinfo",
                        "fold",
                    ],
                    3,
                    9,
                    args,
                    kwargs,
                )?;
                // `fold` (which side of a repeated wall-clock hour) is kept and shown
                // by `repr`; svc's time zones are fixed offsets, where it changes nothing.
                let fold = match a.get(8) {
                    Some(f) => self.fold_arg(f)?,
                    None => 0,
                };
                let mut v = [0i64; 7];
                for (i, slot) in v.iter_mut().enumerate() {
                    if let Some(x) = a.get(i) {
                        *slot = self.int_arg(x)?;
                    }
                }
                self.validate_ymd(v[0], v[1], v[2])?;
                self.validate_time(v[3], v[4], v[5], v[6])?;
                let tz = self.tz_arg(a.get(7))?;
                let mut fields: Vec<Value> = v.iter().map(|x| Value::Int(*x)).collect();
                fields.extend([tz, Value::Int(fold)]);
                Ok(self.stdlib_instance("datetime.datetime", fields))
            }
            "datetime.time" => {
                let a = self.stdlib_args_as(
                    super::ArgStyle::Keywords("function"),
                    &["hour", "minute", "second", "microsecond", "tzinfo", "fold"],
                    0,
                    5,
                    args,
                    kwargs,
                )?;
                let fold = match a.get(5) {
                    Some(f) => self.fold_arg(f)?,
                    None => 0,
                };
                let mut v = [0i64; 4];
                for (i, slot) in v.iter_mut().enumerate() {
                    if let Some(x) = a.get(i) {
                        *slot = self.int_arg(x)?;
                    }
                }
                self.validate_time(v[0], v[1], v[2], v[3])?;
                let tz = self.tz_arg(a.get(4))?;
                let mut fields: Vec<Value> = v.iter().map(|x| Value::Int(*x)).collect();
                fields.extend([tz, Value::Int(fold)]);
                Ok(self.stdlib_instance("datetime.time", fields))
            }
            "datetime.timezone" => {
                let a = self.stdlib_args("timezone", &["offset", "name"], 1, 2, args, kwargs)?;
                let off = a.get(0).cloned().unwrap_or(Value::None);
                if Self::stdlib_key(&off) != Some("datetime.timedelta") {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "timezone() argument 1 must be datetime.timedelta, not {}",
                            self.type_name_of(&off)
                        ),
                    ));
                }
                let us = self.td_us(&off);
                if us.abs() >= US_PER_DAY {
                    let shown = self.repr(&off)?;
                    return Err(self.err(
                        "ValueError",
                        format!(
                            "offset must be a timedelta strictly between -timedelta(hours=24) and timedelta(hours=24), not {shown}."
                        ),
                    ));
                }
                let name = match a.get(1) {
                    None => Value::None,
                    Some(Value::Str(s)) => Value::Str(s.clone()),
                    Some(other) => {
                        return Err(self.err(
                            "TypeError",
                            format!(
                                "timezone() argument 2 must be str, not {}",
                                self.type_name_of(other)
                            ),
                        ));
                    }
                };
                if us == 0 && name.is_none() {
                    return Ok(self.utc());
                }
                Ok(self.stdlib_instance("datetime.timezone", vec![off, name]))
            }
            _ => Err(self.err("TypeError", "not a datetime type")),
        }
    }

    /// Class-level functions: `datetime.now()`, `date.today()`, ...
    pub(super) fn call_datetime_fn(
        &mut self,
        func: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let Some((class, name)) = func.split_once('.') else {
            return Err(self.err(
                "AttributeError",
                format!("module 'datetime' has no attribute '{func}'"),
            ));
        };
        let is_date = class == "date";
        match name {
            "now" | "today" | "utcnow" => {
                let a = if name == "now" {
                    self.stdlib_args(name, &["tz"], 0, 1, args, kwargs)?
                } else {
                    self.stdlib_args(name, &[], 0, 0, args, kwargs)?
                };
                let now = self.now_us();
                if is_date {
                    return self.make_date(now.div_euclid(US_PER_DAY) as i64);
                }
                let tz = self.tz_arg(a.get(0))?;
                self.dt_from_unix(now, tz)
            }
            "fromtimestamp" | "utcfromtimestamp" => {
                let a = if name == "fromtimestamp" && !is_date {
                    self.stdlib_args(name, &["timestamp", "tz"], 1, 2, args, kwargs)?
                } else {
                    self.stdlib_args(name, &["timestamp"], 1, 1, args, kwargs)?
                };
                let ts = self.num_arg(a.get(0).unwrap_or(&Value::None))?;
                if !ts.is_finite() || ts.abs() > 3.0e11 {
                    return Err(self.err(
                        "ValueError",
                        if ts.is_nan() {
                            "Invalid value NaN (not a number)".to_string()
                        } else {
                            "year is out of range".to_string()
                        },
                    ));
                }
                let whole = ts.trunc();
                let frac = crate::pyfmt::round_half_even((ts - whole) * 1e6, 0);
                let unix_us = (whole as i128) * US_PER_SEC + frac as i128;
                if is_date {
                    return self.make_date(unix_us.div_euclid(US_PER_DAY) as i64);
                }
                let tz = self.tz_arg(a.get(1))?;
                self.dt_from_unix(unix_us, tz)
            }
            "strptime" if !is_date => self.strptime_args(args, kwargs),
            "combine" => self.datetime_combine(args, kwargs),
            "fromisoformat" if class == "time" => {
                let a = self.stdlib_args(name, &["time_string"], 1, 1, args, kwargs)?;
                let s = match a.get(0) {
                    Some(Value::Str(s)) => s.to_rc(),
                    Some(_) => {
                        return Err(self.err("TypeError", "fromisoformat: argument must be str"));
                    }
                    None => Rc::from(""),
                };
                // The clock part of a datetime on any day, a leading `T` allowed.
                let clock = s.strip_prefix('T').unwrap_or(&s);
                if clock.is_empty() {
                    return Err(self.err(
                        "ValueError",
                        format!("Invalid isoformat string: {}", crate::pyfmt::str_repr(&s)),
                    ));
                }
                let dt = self.parse_iso_as(&format!("2000-01-01T{clock}"), false, &s)?;
                Ok(self.time_of(&dt, true))
            }
            "fromordinal" => {
                let a = self.stdlib_args(name, &["n"], 1, 1, args, kwargs)?;
                let n = match a.get(0) {
                    Some(Value::Int(n)) => *n,
                    Some(Value::Bool(b)) => i64::from(*b),
                    Some(other) => {
                        let t = self.type_name_of(other);
                        return Err(self.err(
                            "TypeError",
                            format!("'{t}' object cannot be interpreted as an integer"),
                        ));
                    }
                    None => 0,
                };
                if n < 1 {
                    return Err(self.err("ValueError", "ordinal must be >= 1"));
                }
                if n > 3_652_059 {
                    let (y, _, _) = civil_from_days(n - EPOCH_ORDINAL - 1);
                    return Err(self.err("ValueError", format!("year {y} is out of range")));
                }
                let days = n - EPOCH_ORDINAL - 1;
                if is_date {
                    return self.make_date(days);
                }
                self.dt_from_unix(i128::from(days) * US_PER_DAY, Value::None)
            }
            "fromisoformat" => {
                let a = self.stdlib_args(name, &["date_string"], 1, 1, args, kwargs)?;
                let s = match a.get(0) {
                    Some(Value::Str(s)) => s.to_rc(),
                    Some(_) => {
                        return Err(self.err("TypeError", "fromisoformat: argument must be str"));
                    }
                    None => Rc::from(""),
                };
                self.parse_iso(&s, is_date)
            }
            _ => Err(self.err(
                "AttributeError",
                format!("type object 'datetime.{class}' has no attribute '{name}'"),
            )),
        }
    }

    fn parse_iso(&mut self, s: &str, is_date: bool) -> R<Value> {
        self.parse_iso_as(s, is_date, s)
    }

    /// [`Self::parse_iso`], naming `shown` in its "Invalid isoformat string" error.
    fn parse_iso_as(&mut self, s: &str, is_date: bool, shown: &str) -> R<Value> {
        let bad = |it: &Self| {
            it.err(
                "ValueError",
                format!(
                    "Invalid isoformat string: {}",
                    crate::pyfmt::str_repr(shown)
                ),
            )
        };
        let num = |t: &str| -> Option<i64> {
            (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .then(|| t.parse().ok())
                .flatten()
        };
        if !s.is_ascii() {
            return Err(bad(self));
        }
        let (date_part, rest) = if s.len() >= 10 && s.as_bytes().get(4) == Some(&b'-') {
            (&s[..10], &s[10..])
        } else if s.len() >= 8 && s[..8].bytes().all(|b| b.is_ascii_digit()) {
            (&s[..8], &s[8..])
        } else {
            return Err(bad(self));
        };
        let (y, m, d) = if date_part.len() == 10 {
            if date_part.as_bytes()[7] != b'-' {
                return Err(bad(self));
            }
            (
                num(&date_part[..4]),
                num(&date_part[5..7]),
                num(&date_part[8..10]),
            )
        } else {
            (
                num(&date_part[..4]),
                num(&date_part[4..6]),
                num(&date_part[6..8]),
            )
        };
        let (Some(y), Some(m), Some(d)) = (y, m, d) else {
            return Err(bad(self));
        };
        if is_date {
            if !rest.is_empty() {
                return Err(bad(self));
            }
            self.validate_ymd(y, m, d)?;
            return Ok(self.stdlib_instance(
                "datetime.date",
                vec![Value::Int(y), Value::Int(m), Value::Int(d)],
            ));
        }
        let mut t = [0i64; 4];
        let mut tz = Value::None;
        if !rest.is_empty() {
            let time = &rest[1..];
            // Split off the offset.
            let (clock, off) = match time.find(['+', '-', 'Z', 'z']) {
                Some(i) => (&time[..i], Some(&time[i..])),
                None => (time, None),
            };
            let (hms, fraction) = match clock.split_once(['.', ',']) {
                Some((a, b)) => (a, Some(b)),
                None => (clock, None),
            };
            let parts: Vec<&str> = if hms.contains(':') {
                hms.split(':').collect()
            } else {
                hms.as_bytes()
                    .chunks(2)
                    .map(|c| std::str::from_utf8(c).unwrap_or(""))
                    .collect()
            };
            if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.len() != 2) {
                return Err(bad(self));
            }
            for (i, p) in parts.iter().enumerate() {
                t[i] = num(p).ok_or_else(|| bad(self))?;
            }
            if let Some(f) = fraction {
                if parts.len() != 3 || f.is_empty() || f.len() > 9 {
                    return Err(bad(self));
                }
                let digits: String = f.chars().take(6).collect();
                let v = num(&digits).ok_or_else(|| bad(self))?;
                t[3] = v * 10i64.pow(6 - digits.len() as u32);
            }
            if let Some(off) = off {
                let us = if off == "Z" || off == "z" {
                    0
                } else {
                    let sign = if off.starts_with('-') { -1 } else { 1 };
                    let body = &off[1..];
                    let p: Vec<&str> = if body.contains(':') {
                        body.split(':').collect()
                    } else {
                        body.as_bytes()
                            .chunks(2)
                            .map(|c| std::str::from_utf8(c).unwrap_or(""))
                            .collect()
                    };
                    if p.is_empty() || p.len() > 3 || p.iter().any(|x| x.len() != 2) {
                        return Err(bad(self));
                    }
                    let mut total: i128 = 0;
                    for (i, x) in p.iter().enumerate() {
                        let v = i128::from(num(x).ok_or_else(|| bad(self))?);
                        total += v * [3600, 60, 1][i] * US_PER_SEC;
                    }
                    sign * total
                };
                tz = if us == 0 {
                    self.utc()
                } else {
                    if us.abs() >= US_PER_DAY {
                        return Err(bad(self));
                    }
                    let off = self.make_td(us);
                    self.stdlib_instance("datetime.timezone", vec![off, Value::None])
                };
            }
        }
        self.validate_ymd(y, m, d)?;
        self.validate_time(t[0], t[1], t[2], t[3])?;
        let mut fields: Vec<Value> = [y, m, d, t[0], t[1], t[2], t[3]]
            .iter()
            .map(|x| Value::Int(*x))
            .collect();
        fields.extend([tz, Value::Int(0)]);
        Ok(self.stdlib_instance("datetime.datetime", fields))
    }

    // ----- methods -----

    pub(super) fn datetime_method(
        &mut self,
        key: &str,
        recv: &Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let type_name = key.trim_start_matches("datetime.");
        let known: &[&str] = match key {
            "datetime.timedelta" => TIMEDELTA_METHODS,
            "datetime.date" => DATE_METHODS,
            "datetime.datetime" => DATETIME_METHODS,
            "datetime.time" => TIME_METHODS,
            _ => &["utcoffset", "tzname"],
        };
        if !known.contains(&name) {
            return Err(self.err(
                "AttributeError",
                format!("'datetime.{type_name}' object has no attribute '{name}'"),
            ));
        }
        let is_dt = key == "datetime.datetime";
        if key == "datetime.time" {
            return self.time_method(recv, name, args, kwargs);
        }
        match (key, name) {
            ("datetime.timedelta", "total_seconds") => {
                self.stdlib_args(name, &[], 0, 0, args, kwargs)?;
                // CPython divides the microseconds as ints. Whole seconds stay below
                // 2**53 for every timedelta, so whole + fraction is one rounding, not the
                // two of `us as f64 / 1e6` once `us` passes 2**53.
                let us = self.td_us(recv);
                let (whole, rest) = (us.div_euclid(1_000_000), us.rem_euclid(1_000_000));
                Ok(Value::Float(whole as f64 + rest as f64 / 1e6))
            }
            ("datetime.timezone", _) => {
                let off = self.field(recv, "_offset");
                if name == "utcoffset" {
                    return Ok(off);
                }
                self.datetime_str(recv).map(|s| Value::str(&s))
            }
            (_, "isocalendar") => {
                self.stdlib_args(name, &[], 0, 0, args, kwargs)?;
                let days = self.date_days(recv);
                let y = int_of(&self.field(recv, "year"));
                let wd = (days + 3).rem_euclid(7);
                let (iso_year, week) =
                    iso_week(y, days - days_from_civil(y, 1, 1) + 1, wd as usize);
                let fields = vec![Value::Int(iso_year), Value::Int(week), Value::Int(wd + 1)];
                Ok(self.stdlib_instance("datetime.IsoCalendarDate", fields))
            }
            (_, "weekday") | (_, "isoweekday") | (_, "toordinal") => {
                self.stdlib_args(name, &[], 0, 0, args, kwargs)?;
                let days = self.date_days(recv);
                let wd = (days + 3).rem_euclid(7);
                Ok(Value::Int(match name {
                    "weekday" => wd,
                    "isoweekday" => wd + 1,
                    _ => days + EPOCH_ORDINAL + 1,
                }))
            }
            (_, "isoformat") => {
                if !is_dt {
                    self.stdlib_args(name, &[], 0, 0, args, kwargs)?;
                    return self.datetime_str(recv).map(|s| Value::str(&s));
                }
                let a = self.stdlib_args_as(
                    super::ArgStyle::Keywords(name),
                    &["sep", "timespec"],
                    0,
                    2,
                    args,
                    kwargs,
                )?;
                let sep = match a.get(0) {
                    Some(Value::Str(s)) if s.chars().count() == 1 => s.to_string(),
                    Some(Value::Str(_)) => {
                        return Err(self.err(
                            "TypeError",
                            "isoformat() argument 1 must be a unicode character, not str",
                        ));
                    }
                    Some(other) => {
                        return Err(self.err(
                            "TypeError",
                            format!(
                                "isoformat() argument 1 must be a unicode character, not {}",
                                self.type_name_of(other)
                            ),
                        ));
                    }
                    None => "T".to_string(),
                };
                let spec = match a.get(1) {
                    Some(v) => self.str_arg("isoformat", v)?.to_string(),
                    None => "auto".to_string(),
                };
                self.iso(recv, &sep, &spec).map(|s| Value::str(&s))
            }
            (_, "strftime") => self.strftime_method(recv, name, args, kwargs),
            (_, "replace") => {
                let names: &[&str] = if is_dt {
                    &[
                        "year",
                        "month",
                        "day",
                        "hour",
                        "minute",
                        "second",
                        "microsecond",
                        "tzinfo",
                        "fold",
                    ]
                } else {
                    &["year", "month", "day"]
                };
                let a = self.stdlib_args_as(
                    super::ArgStyle::Keywords(name),
                    names,
                    0,
                    names.len(),
                    args,
                    kwargs,
                )?;
                let Value::Instance(inst) = recv else {
                    return Err(self.err("TypeError", "replace() needs an instance"));
                };
                let mut fields = inst.fields.borrow().clone();
                for (i, slot) in fields.iter_mut().enumerate() {
                    if let Some(v) = a.get(i) {
                        *slot = if i == 7 {
                            self.tz_arg(Some(v))?
                        } else if i == 8 {
                            Value::Int(self.fold_arg(v)?)
                        } else {
                            Value::Int(self.int_arg(v)?)
                        };
                    }
                }
                let n: Vec<i64> = fields.iter().take(7).map(int_of).collect();
                self.validate_ymd(n[0], n[1], n[2])?;
                if is_dt {
                    self.validate_time(n[3], n[4], n[5], n[6])?;
                }
                Ok(self.stdlib_instance(
                    if is_dt {
                        "datetime.datetime"
                    } else {
                        "datetime.date"
                    },
                    fields,
                ))
            }
            (_, "timestamp") => {
                self.stdlib_args(name, &[], 0, 0, args, kwargs)?;
                let dt = self.dt_of(recv);
                let unix = dt.us - dt.offset.unwrap_or(0) - i128::from(EPOCH_ORDINAL) * US_PER_DAY;
                Ok(Value::Float(unix as f64 / 1e6))
            }
            (_, "date") => {
                self.stdlib_args(name, &[], 0, 0, args, kwargs)?;
                let days = self.date_days(recv);
                self.make_date(days)
            }
            (_, "time") | (_, "timetz") => {
                self.stdlib_args(name, &[], 0, 0, args, kwargs)?;
                Ok(self.time_of(recv, name == "timetz"))
            }
            (_, "dst") => {
                // svc's time zones are fixed offsets (`timezone`), whose `dst()` is None.
                self.stdlib_args(name, &[], 0, 0, args, kwargs)?;
                Ok(Value::None)
            }
            (_, "utcoffset") | (_, "tzname") => {
                self.stdlib_args(name, &[], 0, 0, args, kwargs)?;
                let tz = self.field(recv, "tzinfo");
                if tz.is_none() {
                    return Ok(Value::None);
                }
                if name == "utcoffset" {
                    return Ok(self.field(&tz, "_offset"));
                }
                self.datetime_str(&tz).map(|s| Value::str(&s))
            }
            (_, "astimezone") => {
                let a = self.stdlib_args(name, &["tz"], 0, 1, args, kwargs)?;
                let dt = self.dt_of(recv);
                let unix = dt.us - dt.offset.unwrap_or(0) - i128::from(EPOCH_ORDINAL) * US_PER_DAY;
                let tz = match self.tz_arg(a.get(0))? {
                    // Local time is UTC in svc.
                    Value::None => self.utc(),
                    tz => tz,
                };
                self.dt_from_unix(unix, tz)
            }
            _ => Err(self.err(
                "AttributeError",
                format!("'datetime.{type_name}' object has no attribute '{name}'"),
            )),
        }
    }

    fn iso(&mut self, v: &Value, sep: &str, spec: &str) -> R<String> {
        let g = |n| int_of(&self.field(v, n));
        let (y, mo, d) = (g("year"), g("month"), g("day"));
        // The time part and offset are a time's (`time_iso` reads the same fields).
        let time = self.time_iso(v, spec)?;
        Ok(format!("{y:04}-{mo:02}-{d:02}{sep}{time}"))
    }

    /// The `strftime(format)` method of a date, datetime or time.
    fn strftime_method(
        &mut self,
        recv: &Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let a = self.stdlib_args_as(
            super::ArgStyle::Keywords(name),
            &["format"],
            1,
            1,
            args,
            kwargs,
        )?;
        let f = match a.get(0) {
            Some(Value::Str(s)) => s.to_rc(),
            other => {
                let t = other.map(|v| self.type_name_of(v)).unwrap_or_default();
                return Err(self.err(
                    "TypeError",
                    format!("strftime() argument 1 must be str, not {t}"),
                ));
            }
        };
        self.strftime(recv, &f).map(|s| Value::str(&s))
    }

    pub(super) fn datetime_strftime(&mut self, v: &Value, f: &str) -> R<String> {
        self.strftime(v, f)
    }

    fn strftime(&mut self, v: &Value, f: &str) -> R<String> {
        if Self::stdlib_key(v) == Some("datetime.time") {
            // A time formats as a datetime on 1900-01-01, as CPython's `time.strftime`.
            let mut fields = vec![Value::Int(1900), Value::Int(1), Value::Int(1)];
            for n in ["hour", "minute", "second", "microsecond", "tzinfo", "fold"] {
                fields.push(self.field(v, n));
            }
            let dt = self.stdlib_instance("datetime.datetime", fields);
            return self.strftime(&dt, f);
        }
        let is_dt = Self::stdlib_key(v) == Some("datetime.datetime");
        let g = |n| {
            if is_dt || matches!(n, "year" | "month" | "day") {
                int_of(&self.field(v, n))
            } else {
                0
            }
        };
        let (y, mo, d, h, mi, s, us) = (
            g("year"),
            g("month"),
            g("day"),
            g("hour"),
            g("minute"),
            g("second"),
            g("microsecond"),
        );
        let days = days_from_civil(y, mo, d);
        let wd = (days + 3).rem_euclid(7) as usize; // Monday = 0
        let yday = days - days_from_civil(y, 1, 1) + 1;
        let tz = if is_dt {
            self.field(v, "tzinfo")
        } else {
            Value::None
        };
        let h12 = if h % 12 == 0 { 12 } else { h % 12 };
        let mut out = String::new();
        let mut chars = f.chars();
        while let Some(c) = chars.next() {
            if out.len() > self.max_text_bytes() {
                return Err(self.err(
                    "MemoryError",
                    crate::pyfmt::too_large(out.len(), self.max_text_bytes()),
                ));
            }
            if c != '%' {
                out.push(c);
                continue;
            }
            let Some(mut code) = chars.next() else {
                out.push('%');
                break;
            };
            // `%-d`, `%-m`, ...: the platform (glibc) form without padding.
            let unpadded = code == '-';
            if unpadded {
                match chars.next() {
                    Some(c) => code = c,
                    None => {
                        out.push_str("%-");
                        break;
                    }
                }
            }
            let piece = match code {
                'Y' => format!("{y}"),
                'y' => format!("{:02}", y % 100),
                'm' => format!("{mo:02}"),
                'd' => format!("{d:02}"),
                'e' => format!("{d:2}"),
                // glibc's space-padded hours, which CPython passes through on Linux.
                'k' => format!("{h:2}"),
                'l' => format!("{h12:2}"),
                'G' => format!("{}", iso_week(y, yday, wd).0),
                'V' => format!("{:02}", iso_week(y, yday, wd).1),
                'H' => format!("{h:02}"),
                'I' => format!("{h12:02}"),
                'M' => format!("{mi:02}"),
                'S' => format!("{s:02}"),
                'f' => format!("{us:06}"),
                'p' => (if h < 12 { "AM" } else { "PM" }).to_string(),
                'b' | 'h' => MONTHS[(mo - 1) as usize][..3].to_string(),
                'B' => MONTHS[(mo - 1) as usize].to_string(),
                'a' => DAYS[wd][..3].to_string(),
                'A' => DAYS[wd].to_string(),
                'w' => format!("{}", (wd + 1) % 7),
                'u' => format!("{}", wd + 1),
                'j' => format!("{yday:03}"),
                'U' => format!("{:02}", (yday + 6 - ((wd as i64 + 1) % 7)) / 7),
                'W' => format!("{:02}", (yday + 6 - wd as i64) / 7),
                'c' => format!(
                    "{} {} {d:2} {h:02}:{mi:02}:{s:02} {y}",
                    &DAYS[wd][..3],
                    &MONTHS[(mo - 1) as usize][..3]
                ),
                'x' => format!("{mo:02}/{d:02}/{:02}", y % 100),
                'X' => format!("{h:02}:{mi:02}:{s:02}"),
                'D' => format!("{mo:02}/{d:02}/{:02}", y % 100),
                'F' => format!("{y}-{mo:02}-{d:02}"),
                'T' => format!("{h:02}:{mi:02}:{s:02}"),
                'R' => format!("{h:02}:{mi:02}"),
                'n' => "\n".to_string(),
                't' => "\t".to_string(),
                'z' => {
                    if tz.is_none() {
                        String::new()
                    } else {
                        fmt_offset(self.td_us(&self.field(&tz, "_offset")), false)
                    }
                }
                'Z' => {
                    if tz.is_none() {
                        String::new()
                    } else {
                        self.datetime_str(&tz)?
                    }
                }
                '%' => "%".to_string(),
                other => format!("%{other}"),
            };
            if unpadded && "dmHIMSjyUWe".contains(code) {
                let t = piece.trim_start_matches([' ', '0']);
                out.push_str(if t.is_empty() { "0" } else { t });
            } else {
                out.push_str(&piece);
            }
        }
        Ok(out)
    }

    // ----- text -----

    pub(super) fn datetime_str(&mut self, v: &Value) -> R<String> {
        match Self::stdlib_key(v) {
            // A named tuple: `str` is its `repr`.
            Some("datetime.IsoCalendarDate") => self.datetime_repr(v),
            Some("datetime.timedelta") => {
                let g = |n| int_of(&self.field(v, n));
                let (days, secs, us) = (g("days"), g("seconds"), g("microseconds"));
                let mut out = String::new();
                if days != 0 {
                    out.push_str(&format!(
                        "{days} day{}, ",
                        if days.abs() != 1 { "s" } else { "" }
                    ));
                }
                out.push_str(&format!(
                    "{}:{:02}:{:02}",
                    secs / 3600,
                    secs / 60 % 60,
                    secs % 60
                ));
                if us != 0 {
                    out.push_str(&format!(".{us:06}"));
                }
                Ok(out)
            }
            Some("datetime.date") => {
                let g = |n| int_of(&self.field(v, n));
                Ok(format!(
                    "{:04}-{:02}-{:02}",
                    g("year"),
                    g("month"),
                    g("day")
                ))
            }
            Some("datetime.datetime") => self.iso(v, " ", "auto"),
            Some("datetime.time") => self.time_iso(v, "auto"),
            Some("datetime.timezone") => {
                if let Value::Str(s) = self.field(v, "_name") {
                    return Ok(s.to_string());
                }
                let us = self.td_us(&self.field(v, "_offset"));
                if us == 0 {
                    return Ok("UTC".into());
                }
                Ok(format!("UTC{}", fmt_offset(us, true)))
            }
            _ => Ok(String::new()),
        }
    }

    pub(super) fn datetime_repr(&mut self, v: &Value) -> R<String> {
        let g = |n| int_of(&self.field(v, n));
        match Self::stdlib_key(v) {
            Some("datetime.IsoCalendarDate") => Ok(format!(
                "datetime.IsoCalendarDate(year={}, week={}, weekday={})",
                g("year"),
                g("week"),
                g("weekday")
            )),
            Some("datetime.timedelta") => {
                let mut parts = Vec::new();
                for (n, label) in [
                    ("days", "days"),
                    ("seconds", "seconds"),
                    ("microseconds", "microseconds"),
                ] {
                    let x = g(n);
                    if x != 0 {
                        parts.push(format!("{label}={x}"));
                    }
                }
                if parts.is_empty() {
                    return Ok("datetime.timedelta(0)".into());
                }
                Ok(format!("datetime.timedelta({})", parts.join(", ")))
            }
            Some("datetime.date") => Ok(format!(
                "datetime.date({}, {}, {})",
                g("year"),
                g("month"),
                g("day")
            )),
            Some("datetime.datetime") => {
                let mut out = format!(
                    "datetime.datetime({}, {}, {}, {}, {}",
                    g("year"),
                    g("month"),
                    g("day"),
                    g("hour"),
                    g("minute")
                );
                let (s, us) = (g("second"), g("microsecond"));
                if s != 0 || us != 0 {
                    out.push_str(&format!(", {s}"));
                }
                if us != 0 {
                    out.push_str(&format!(", {us}"));
                }
                if g("fold") != 0 {
                    out.push_str(", fold=1");
                }
                let tz = self.field(v, "tzinfo");
                if !tz.is_none() {
                    out.push_str(", tzinfo=");
                    out.push_str(&self.datetime_repr(&tz)?);
                }
                out.push(')');
                Ok(out)
            }
            Some("datetime.time") => {
                let (h, mi, s, us, fold) = (
                    g("hour"),
                    g("minute"),
                    g("second"),
                    g("microsecond"),
                    g("fold"),
                );
                let mut out = format!("datetime.time({h}, {mi}");
                if s != 0 || us != 0 {
                    out.push_str(&format!(", {s}"));
                }
                if us != 0 {
                    out.push_str(&format!(", {us}"));
                }
                // `time` shows `tzinfo` before `fold` (a `datetime` the other way round).
                let tz = self.field(v, "tzinfo");
                if !tz.is_none() {
                    out.push_str(", tzinfo=");
                    out.push_str(&self.datetime_repr(&tz)?);
                }
                if fold != 0 {
                    out.push_str(", fold=1");
                }
                out.push(')');
                Ok(out)
            }
            Some("datetime.timezone") => {
                let off = self.field(v, "_offset");
                let name = self.field(v, "_name");
                if self.td_us(&off) == 0 && name.is_none() {
                    return Ok("datetime.timezone.utc".into());
                }
                let mut out = format!("datetime.timezone({}", self.datetime_repr(&off)?);
                if !name.is_none() {
                    out.push_str(", ");
                    out.push_str(&self.repr(&name)?);
                }
                out.push(')');
                Ok(out)
            }
            _ => Ok(String::new()),
        }
    }

    // ----- time -----

    /// The `time` of a datetime, with its `tzinfo` when `with_tz` (`timetz()`).
    fn time_of(&mut self, dt: &Value, with_tz: bool) -> Value {
        let mut fields: Vec<Value> = ["hour", "minute", "second", "microsecond"]
            .iter()
            .map(|n| self.field(dt, n))
            .collect();
        fields.push(if with_tz {
            self.field(dt, "tzinfo")
        } else {
            Value::None
        });
        fields.push(self.field(dt, "fold"));
        self.stdlib_instance("datetime.time", fields)
    }

    /// `datetime.combine(date, time, tzinfo=time.tzinfo)`.
    fn datetime_combine(&mut self, args: Vec<Value>, kwargs: Vec<(Rc<str>, Value)>) -> R<Value> {
        let a = self.stdlib_args_as(
            super::ArgStyle::Keywords("combine"),
            &["date", "time", "tzinfo"],
            2,
            3,
            args,
            kwargs,
        )?;
        let (d, t) = (a.get(0).cloned(), a.get(1).cloned());
        let (d, t) = (d.unwrap_or(Value::None), t.unwrap_or(Value::None));
        if !matches!(
            Self::stdlib_key(&d),
            Some("datetime.date" | "datetime.datetime")
        ) || !matches!(d, Value::Instance(_))
        {
            return Err(self.err(
                "TypeError",
                format!(
                    "combine() argument 1 must be datetime.date, not {}",
                    self.type_name_of(&d)
                ),
            ));
        }
        if Self::stdlib_key(&t) != Some("datetime.time") || !matches!(t, Value::Instance(_)) {
            return Err(self.err(
                "TypeError",
                format!(
                    "combine() argument 2 must be datetime.time, not {}",
                    self.type_name_of(&t)
                ),
            ));
        }
        let tz = match a.get(2) {
            Some(v) => self.tz_arg(Some(v))?,
            None => self.field(&t, "tzinfo"),
        };
        let mut fields: Vec<Value> = ["year", "month", "day"]
            .iter()
            .map(|n| self.field(&d, n))
            .collect();
        for n in ["hour", "minute", "second", "microsecond"] {
            fields.push(self.field(&t, n));
        }
        fields.extend([tz, self.field(&t, "fold")]);
        Ok(self.stdlib_instance("datetime.datetime", fields))
    }

    /// Microseconds since midnight of a time and its UTC offset, if aware.
    fn time_us(&self, v: &Value) -> (i128, Option<i128>) {
        let f = |n| i128::from(int_of(&self.field(v, n)));
        let us =
            (f("hour") * 3600 + f("minute") * 60 + f("second")) * US_PER_SEC + f("microsecond");
        let tz = self.field(v, "tzinfo");
        let offset = (!tz.is_none()).then(|| self.td_us(&self.field(&tz, "_offset")));
        (us, offset)
    }

    /// Order of two times (naive with naive, aware with aware, by their UTC time).
    pub(super) fn time_cmp(&mut self, a: &Value, b: &Value) -> R<Ordering> {
        match (self.time_us(a), self.time_us(b)) {
            ((x, None), (y, None)) => Ok(x.cmp(&y)),
            ((x, Some(p)), (y, Some(q))) => Ok((x - p).cmp(&(y - q))),
            _ => Err(self.err(
                "TypeError",
                "can't compare offset-naive and offset-aware times",
            )),
        }
    }

    /// `t.isoformat(timespec)` of a time.
    fn time_iso(&mut self, v: &Value, spec: &str) -> R<String> {
        let g = |n| int_of(&self.field(v, n));
        let (h, mi, s, us) = (g("hour"), g("minute"), g("second"), g("microsecond"));
        let mut out = match spec {
            "auto" if us != 0 => format!("{h:02}:{mi:02}:{s:02}.{us:06}"),
            "auto" | "seconds" => format!("{h:02}:{mi:02}:{s:02}"),
            "hours" => format!("{h:02}"),
            "minutes" => format!("{h:02}:{mi:02}"),
            "milliseconds" => format!("{h:02}:{mi:02}:{s:02}.{:03}", us / 1000),
            "microseconds" => format!("{h:02}:{mi:02}:{s:02}.{us:06}"),
            _ => return Err(self.err("ValueError", "Unknown timespec value")),
        };
        let tz = self.field(v, "tzinfo");
        if !tz.is_none() {
            out.push_str(&fmt_offset(self.td_us(&self.field(&tz, "_offset")), true));
        }
        Ok(out)
    }

    /// Methods of a `time` (`name` is one of [`TIME_METHODS`]).
    fn time_method(
        &mut self,
        recv: &Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        match name {
            "isoformat" => {
                let a = self.stdlib_args_as(
                    super::ArgStyle::Keywords(name),
                    &["timespec"],
                    0,
                    1,
                    args,
                    kwargs,
                )?;
                let spec = match a.get(0) {
                    Some(v) => self.str_arg("isoformat", v)?.to_string(),
                    None => "auto".to_string(),
                };
                self.time_iso(recv, &spec).map(|s| Value::str(&s))
            }
            "replace" => {
                const NAMES: &[&str] =
                    &["hour", "minute", "second", "microsecond", "tzinfo", "fold"];
                let a = self.stdlib_args_as(
                    super::ArgStyle::Keywords(name),
                    NAMES,
                    0,
                    5,
                    args,
                    kwargs,
                )?;
                let mut fields: Vec<Value> = NAMES.iter().map(|n| self.field(recv, n)).collect();
                for (i, slot) in fields.iter_mut().enumerate() {
                    if let Some(v) = a.get(i) {
                        *slot = match i {
                            4 => self.tz_arg(Some(v))?,
                            5 => Value::Int(self.fold_arg(v)?),
                            _ => Value::Int(self.int_arg(v)?),
                        };
                    }
                }
                let n: Vec<i64> = fields.iter().take(4).map(int_of).collect();
                self.validate_time(n[0], n[1], n[2], n[3])?;
                Ok(self.stdlib_instance("datetime.time", fields))
            }
            "utcoffset" | "tzname" | "dst" => {
                self.stdlib_args(name, &[], 0, 0, args, kwargs)?;
                let tz = self.field(recv, "tzinfo");
                if tz.is_none() || name == "dst" {
                    return Ok(Value::None);
                }
                if name == "utcoffset" {
                    return Ok(self.field(&tz, "_offset"));
                }
                self.datetime_str(&tz).map(|s| Value::str(&s))
            }
            // `strftime`.
            _ => self.strftime_method(recv, name, args, kwargs),
        }
    }

    // ----- comparison and arithmetic -----

    /// Order of two datetimes (naive with naive, aware with aware).
    pub(super) fn datetime_cmp(&mut self, a: &Value, b: &Value) -> R<Ordering> {
        let (x, y) = (self.dt_of(a), self.dt_of(b));
        match (x.offset, y.offset) {
            (None, None) => Ok(x.us.cmp(&y.us)),
            (Some(p), Some(q)) => Ok((x.us - p).cmp(&(y.us - q))),
            _ => Err(self.err(
                "TypeError",
                "can't compare offset-naive and offset-aware datetimes",
            )),
        }
    }

    /// The ordering key of a date or timedelta.
    pub(super) fn datetime_key(&self, v: &Value) -> i128 {
        match Self::stdlib_key(v) {
            Some("datetime.date") => i128::from(self.date_days(v)),
            Some("datetime.timedelta") => self.td_us(v),
            _ => 0,
        }
    }

    /// `-td` (the only unary operator with a stdlib operand).
    pub(crate) fn datetime_neg(&mut self, v: &Value) -> Option<R<Value>> {
        (Self::stdlib_key(v) == Some("datetime.timedelta")).then(|| {
            let us = self.td_us(v);
            self.checked_td(-us)
        })
    }

    /// `abs(td)`.
    pub(crate) fn datetime_abs(&mut self, v: &Value) -> Option<R<Value>> {
        (Self::stdlib_key(v) == Some("datetime.timedelta")).then(|| {
            let us = self.td_us(v).abs();
            self.checked_td(us)
        })
    }

    pub(super) fn datetime_binop(&mut self, op: BinOp, a: &Value, b: &Value) -> Option<R<Value>> {
        let ka = Self::stdlib_key(a).map(str::to_string);
        let kb = Self::stdlib_key(b).map(str::to_string);
        let (ka, kb) = (ka.as_deref(), kb.as_deref());
        const TD: Option<&str> = Some("datetime.timedelta");
        const DATE: Option<&str> = Some("datetime.date");
        const DT: Option<&str> = Some("datetime.datetime");
        let num = |v: &Value| matches!(v, Value::Int(_) | Value::Bool(_) | Value::Float(_));
        Some(match (op, ka, kb) {
            (BinOp::Add, TD, TD) => {
                let us = self.td_us(a) + self.td_us(b);
                self.checked_td(us)
            }
            (BinOp::Sub, TD, TD) => {
                let us = self.td_us(a) - self.td_us(b);
                self.checked_td(us)
            }
            (BinOp::Mul, TD, None) | (BinOp::Mul, None, TD) if num(a) || num(b) => {
                let (td, k) = if ka == TD { (a, b) } else { (b, a) };
                let us = self.td_us(td);
                match k {
                    Value::Float(f) => {
                        let r = crate::pyfmt::round_half_even(us as f64 * f, 0);
                        if !r.is_finite() || r.abs() > 1e20 {
                            return Some(Err(self.err(
                                "OverflowError",
                                "cannot convert float infinity to integer",
                            )));
                        }
                        self.checked_td(r as i128)
                    }
                    k => {
                        let n = i128::from(int_of(k));
                        match us.checked_mul(n) {
                            Some(x) => self.checked_td(x),
                            None => Err(self
                                .err("OverflowError", "Python int too large to convert to C int")),
                        }
                    }
                }
            }
            (BinOp::Div, TD, TD) | (BinOp::FloorDiv, TD, TD) | (BinOp::Mod, TD, TD) => {
                let (x, y) = (self.td_us(a), self.td_us(b));
                if y == 0 {
                    return Some(Err(self.err(
                        "ZeroDivisionError",
                        if op == BinOp::Div {
                            "division by zero"
                        } else {
                            "integer division or modulo by zero"
                        },
                    )));
                }
                match op {
                    BinOp::Div => Ok(Value::Float(x as f64 / y as f64)),
                    BinOp::FloorDiv => Ok(Value::Int(floor_div(x, y) as i64)),
                    _ => {
                        let r = x - y * floor_div(x, y);
                        self.checked_td(r)
                    }
                }
            }
            (BinOp::Div, TD, None) | (BinOp::FloorDiv, TD, None) if num(b) => {
                let us = self.td_us(a);
                match b {
                    Value::Float(f) if op == BinOp::Div => {
                        if *f == 0.0 {
                            return Some(Err(
                                self.err("ZeroDivisionError", "integer division or modulo by zero")
                            ));
                        }
                        let r = crate::pyfmt::round_half_even(us as f64 / f, 0);
                        self.checked_td(r as i128)
                    }
                    Value::Float(_) => Err(self.err(
                        "TypeError",
                        "unsupported operand type(s) for //: 'datetime.timedelta' and 'float'",
                    )),
                    k => {
                        let n = i128::from(int_of(k));
                        if n == 0 {
                            return Some(Err(
                                self.err("ZeroDivisionError", "integer division or modulo by zero")
                            ));
                        }
                        let q = floor_div(us, n);
                        if op == BinOp::FloorDiv {
                            self.checked_td(q)
                        } else {
                            // Round half to even, as CPython: `r / n` is in [0, 1).
                            let r = us - q * n;
                            let twice = 2 * r.abs();
                            let up = twice > n.abs() || (twice == n.abs() && q % 2 != 0);
                            self.checked_td(q + i128::from(up))
                        }
                    }
                }
            }
            (BinOp::Add, DATE, TD) | (BinOp::Add, TD, DATE) | (BinOp::Sub, DATE, TD) => {
                let (d, td) = if ka == DATE { (a, b) } else { (b, a) };
                let delta = self.td_us(td).div_euclid(US_PER_DAY) as i64;
                let days = self.date_days(d);
                self.make_date(if op == BinOp::Add {
                    days + delta
                } else {
                    days - delta
                })
            }
            (BinOp::Sub, DATE, DATE) => {
                let us = i128::from(self.date_days(a) - self.date_days(b)) * US_PER_DAY;
                self.checked_td(us)
            }
            (BinOp::Add, DT, TD) | (BinOp::Add, TD, DT) | (BinOp::Sub, DT, TD) => {
                let (d, td) = if ka == DT { (a, b) } else { (b, a) };
                let delta = self.td_us(td);
                let x = self.dt_of(d);
                let tz = self.field(d, "tzinfo");
                self.make_dt(
                    if op == BinOp::Add {
                        x.us + delta
                    } else {
                        x.us - delta
                    },
                    tz,
                )
            }
            (BinOp::Sub, DT, DT) => {
                let (x, y) = (self.dt_of(a), self.dt_of(b));
                match (x.offset, y.offset) {
                    (None, None) => self.checked_td(x.us - y.us),
                    (Some(p), Some(q)) => self.checked_td((x.us - p) - (y.us - q)),
                    _ => Err(self.err(
                        "TypeError",
                        "can't subtract offset-naive and offset-aware datetimes",
                    )),
                }
            }
            _ => {
                let sym = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::Div => "/",
                    BinOp::FloorDiv => "//",
                    BinOp::Mod => "%",
                    _ => return None,
                };
                let name = |it: &Self, v: &Value, k: Option<&str>| match k {
                    Some(k) => k.to_string(),
                    None => it.type_name_of(v),
                };
                Err(self.err(
                    "TypeError",
                    format!(
                        "unsupported operand type(s) for {sym}: '{}' and '{}'",
                        name(self, a, ka),
                        name(self, b, kb)
                    ),
                ))
            }
        })
    }
}

/// The ISO 8601 year and week of a day given its year, day of the year (1-based) and
/// weekday (Monday 0), as `%G` and `%V` print them.
fn iso_week(y: i64, yday: i64, wd: usize) -> (i64, i64) {
    // A year has 53 ISO weeks when it starts on a Thursday, or on a Wednesday in a
    // leap year: the weekday of its last day tells both.
    let weeks = |y: i64| {
        let p =
            |y: i64| (y + y.div_euclid(4) - y.div_euclid(100) + y.div_euclid(400)).rem_euclid(7);
        if p(y) == 4 || p(y - 1) == 3 { 53 } else { 52 }
    };
    let week = (yday - (wd as i64 + 1) + 10).div_euclid(7);
    if week < 1 {
        (y - 1, weeks(y - 1))
    } else if week > weeks(y) {
        (y + 1, 1)
    } else {
        (y, week)
    }
}
