//! `uuid`: `uuid4()` from the host's OS random source, `UUID(str)`, `.hex`, `.int`,
//! `.version`, `str()` and `repr()` as CPython.

use super::super::value::*;
use super::super::{Interp, R};
use std::rc::Rc;

pub const NAMES: &[&str] = &["uuid4", "UUID"];

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
                let mut b = [0u8; 16];
                self.host.random_bytes(&mut b);
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

    /// `UUID(hex)`: braces, hyphens and a `urn:uuid:` prefix are ignored, as CPython.
    pub(super) fn uuid_construct(
        &mut self,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let a = self.stdlib_args("UUID", &["hex"], 0, 1, args, kwargs)?;
        let hex = match a.get(0) {
            Some(Value::Str(s)) => s.clone(),
            Some(other) => {
                return Err(self.err(
                    "AttributeError",
                    format!(
                        "'{}' object has no attribute 'replace'",
                        self.type_name_of(other)
                    ),
                ));
            }
            None => {
                return Err(self.err(
                    "TypeError",
                    "one of the hex, bytes, bytes_le, fields, or int arguments must be given",
                ));
            }
        };
        let mut h = hex.replace("urn:", "").replace("uuid:", "");
        h = h.trim_matches(|c| c == '{' || c == '}').replace('-', "");
        if h.len() != 32 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(self.err("ValueError", "badly formed hexadecimal UUID string"));
        }
        let mut b = [0u8; 16];
        for (i, byte) in b.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap_or(0);
        }
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
