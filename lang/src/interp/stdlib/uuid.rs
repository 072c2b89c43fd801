//! `uuid`: `uuid4()` from the host's OS random source, `UUID(str)`, `.hex`, `.int`,
//! `.version`, `str()` and `repr()` as CPython.

use super::super::value::*;
use super::super::{Interp, R};
use std::rc::Rc;

/// The 8-4-4-4-12 text of a UUID from its 32 hex digits.
pub fn text(hex: Value) -> String {
    let Value::Str(h) = hex else {
        return String::new();
    };
    if h.len() != 32 {
        return h.to_string();
    }
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

impl Interp<'_> {
    fn make_uuid(&mut self, bytes: [u8; 16]) -> Value {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let int = num_bigint::BigInt::from_bytes_be(num_bigint::Sign::Plus, &bytes);
        // RFC 4122 variant: the version field counts.
        let version = if bytes[8] & 0xc0 == 0x80 {
            Value::Int(i64::from(bytes[6] >> 4))
        } else {
            Value::None
        };
        self.stdlib_instance(
            "uuid.UUID",
            vec![Value::str(&hex), Value::from_bigint(int), version],
        )
    }

    pub(super) fn call_uuid(
        &mut self,
        func: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        match func {
            "uuid4" => {
                self.stdlib_args_as(super::ArgStyle::Python("uuid4"), &[], 0, 0, args, kwargs)?;
                let mut b: [u8; 16] = crate::ids::random(&mut *self.host);
                b[6] = (b[6] & 0x0f) | 0x40;
                b[8] = (b[8] & 0x3f) | 0x80;
                Ok(self.make_uuid(b))
            }
            _ => Err(self.err(
                "AttributeError",
                format!("module 'uuid' has no attribute '{func}'"),
            )),
        }
    }

    /// `UUID(hex)` or `UUID(int=n)`, with `version=` setting the version and variant
    /// bits: CPython's `UUID.__init__` (braces, hyphens and a `urn:uuid:` prefix ignored).
    /// `bytes=`, `bytes_le=` and `fields=` are refused (not in decision 12's list).
    pub(super) fn uuid_construct(
        &mut self,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        use num_bigint::BigInt;
        let a = self.stdlib_args_as(
            super::ArgStyle::PyMethod("UUID.__init__"),
            &["hex", "bytes", "bytes_le", "fields", "int", "version"],
            0,
            6,
            args,
            kwargs,
        )?;
        let given = (0..5).filter(|i| a.opt(*i).is_some()).count();
        if given != 1 {
            return Err(self.err(
                "TypeError",
                "one of the hex, bytes, bytes_le, fields, or int arguments must be given",
            ));
        }
        if let Some(i) = (1..4).find(|i| a.opt(*i).is_some()) {
            let name = ["hex", "bytes", "bytes_le", "fields"][i];
            return Err(self.err(
                "TypeError",
                format!("UUID({name}=...) is not supported by svc"),
            ));
        }
        let mut n = match (a.opt(0), a.opt(4)) {
            (Some(Value::Str(hex)), _) => {
                let mut h = hex.replace("urn:", "").replace("uuid:", "");
                h = h.trim_matches(|c| c == '{' || c == '}').replace('-', "");
                if h.chars().count() != 32 {
                    return Err(self.err("ValueError", "badly formed hexadecimal UUID string"));
                }
                if !h.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(self.err(
                        "ValueError",
                        format!("invalid literal for int() with base 16: '{h}'"),
                    ));
                }
                BigInt::parse_bytes(h.as_bytes(), 16).unwrap_or_default()
            }
            (Some(other), _) => {
                return Err(self.err(
                    "AttributeError",
                    format!(
                        "'{}' object has no attribute 'replace'",
                        self.type_name_of(other)
                    ),
                ));
            }
            (None, Some(v)) => {
                let n = match v {
                    Value::Int(i) => BigInt::from(*i),
                    Value::Bool(b) => BigInt::from(u8::from(*b)),
                    Value::BigInt(b) => (**b).clone(),
                    other => {
                        let t = self.type_name_of(other);
                        return Err(self.err(
                            "TypeError",
                            format!("'<=' not supported between instances of 'int' and '{t}'"),
                        ));
                    }
                };
                if n.sign() == num_bigint::Sign::Minus || n.bits() > 128 {
                    return Err(
                        self.err("ValueError", "int is out of range (need a 128-bit value)")
                    );
                }
                n
            }
            (None, None) => BigInt::default(),
        };
        if let Some(v) = a.opt(5) {
            let version = self.int_arg(v)?;
            if !(1..=5).contains(&version) {
                return Err(self.err("ValueError", "illegal version number"));
            }
            let one = BigInt::from(1);
            // Variant RFC 4122 (bits 62-63 = 0b10), then the version nibble (bits 76-79).
            n &= !(BigInt::from(0xc000u32) << 48u32) & ((&one << 128u32) - &one);
            n |= BigInt::from(0x8000u32) << 48u32;
            n &= !(BigInt::from(0xf000u32) << 64u32) & ((&one << 128u32) - &one);
            n |= BigInt::from(version) << 76u32;
        }
        let (_, digits) = n.to_bytes_be();
        let mut b = [0u8; 16];
        b[16 - digits.len()..].copy_from_slice(&digits);
        Ok(self.make_uuid(b))
    }

    pub(super) fn uuid_method(
        &mut self,
        _recv: &Value,
        name: &str,
        _args: Vec<Value>,
        _kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        Err(self.err(
            "AttributeError",
            format!("'UUID' object has no attribute '{name}'"),
        ))
    }
}
