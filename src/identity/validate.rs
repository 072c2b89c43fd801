//! Request parsing for the identity endpoints: the JSON body, identity objects and the
//! registration profile bounds (spec "Profile bounds").
//!
//! Shape failures (not a JSON object, a missing or mistyped field, an unknown identity
//! type, an empty value, profile bounds) are 422 `VALIDATION_ERROR` with one
//! `{field, message}` per problem, like every other request of the server; the rules the
//! spec states as 400 are raised by the handlers.

use crate::server::errors::{ApiError, ErrorCode, FieldError};
use actors::users::{IdentityRecord, IdentityType};
use serde_json::{Map, Value as Json};

/// Longest identity value, in characters (an e-mail address is at most 254).
pub const MAX_IDENTITY_CHARS: usize = 254;
pub const PROFILE_MAX_KEYS: usize = 20;
pub const PROFILE_MAX_KEY_CHARS: usize = 64;
pub const PROFILE_MAX_VALUE_CHARS: usize = 1024;
pub const PROFILE_MAX_JSON_BYTES: usize = 8192;

/// A required string field.
pub fn string(body: &Map<String, Json>, name: &str) -> Result<String, ApiError> {
    match body.get(name) {
        Some(Json::String(s)) => Ok(s.clone()),
        None | Some(Json::Null) => Err(ApiError::validation(name, "field required")),
        Some(_) => Err(ApiError::validation(name, "expected a string")),
    }
}

/// An optional boolean field.
pub fn optional_bool(body: &Map<String, Json>, name: &str) -> Result<Option<bool>, ApiError> {
    match body.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ApiError::validation(name, "expected a boolean")),
    }
}

/// `{type, value}` as raw strings (422 when the shape is wrong).
pub fn identity_shape(value: Option<&Json>, field: &str) -> Result<(String, String), ApiError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Err(ApiError::validation(field, "field required"));
    };
    let Json::Object(obj) = value else {
        return Err(ApiError::validation(
            field,
            "expected an object {type, value}",
        ));
    };
    let kind = match obj.get("type") {
        Some(Json::String(s)) => s.clone(),
        None | Some(Json::Null) => {
            return Err(ApiError::validation(
                &format!("{field}.type"),
                "field required",
            ));
        }
        Some(_) => {
            return Err(ApiError::validation(
                &format!("{field}.type"),
                "expected a string",
            ));
        }
    };
    let value = match obj.get("value") {
        Some(Json::String(s)) => s.clone(),
        None | Some(Json::Null) => {
            return Err(ApiError::validation(
                &format!("{field}.value"),
                "field required",
            ));
        }
        Some(_) => {
            return Err(ApiError::validation(
                &format!("{field}.value"),
                "expected a string",
            ));
        }
    };
    Ok((kind, value))
}

/// A `username` or `email` identity with a well-formed value.
pub fn identity(
    value: Option<&Json>,
    field: &str,
    is_recovery: Option<bool>,
) -> Result<IdentityRecord, ApiError> {
    let (kind, raw) = identity_shape(value, field)?;
    let Some(kind) = IdentityType::parse(&kind) else {
        return Err(ApiError::validation(
            &format!("{field}.type"),
            "expected 'username' or 'email'",
        ));
    };
    check_value(kind, &raw, &format!("{field}.value"))?;
    Ok(IdentityRecord::new(kind, &raw, is_recovery))
}

/// Non-empty after stripping, at most 254 characters, no control characters; an e-mail
/// must be an address mail can be sent to.
pub fn check_value(kind: IdentityType, raw: &str, field: &str) -> Result<(), ApiError> {
    let value = raw.trim();
    if value.is_empty() {
        return Err(ApiError::validation(field, "must not be empty"));
    }
    if value.chars().count() > MAX_IDENTITY_CHARS {
        return Err(ApiError::validation(
            field,
            format!("at most {MAX_IDENTITY_CHARS} characters"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(ApiError::validation(field, "contains control characters"));
    }
    if kind == IdentityType::Email && value.parse::<lettre::Address>().is_err() {
        return Err(ApiError::validation(field, "not a valid e-mail address"));
    }
    Ok(())
}

/// Usernames starting with `__` belong to internal accounts (`__guest__`, `__system__`).
pub fn reserved(identity: &IdentityRecord) -> Option<ApiError> {
    (identity.kind == IdentityType::Username && identity.value_normalized.starts_with("__")).then(
        || {
            ApiError::with_code_status(
                ErrorCode::ValidationError,
                400,
                "usernames starting with '__' are reserved",
            )
        },
    )
}

/// A password credential's text: `{type: password, password: non-empty string}`.
pub fn credential(value: Option<&Json>, field: &str) -> Result<String, ApiError> {
    let Some(Json::Object(obj)) = value.filter(|v| !v.is_null()) else {
        return Err(ApiError::validation(
            field,
            if value.is_none_or(Json::is_null) {
                "field required"
            } else {
                "expected an object {type, password}"
            },
        ));
    };
    match obj.get("type") {
        Some(Json::String(t)) if t == "password" => {}
        _ => {
            return Err(ApiError::validation(
                &format!("{field}.type"),
                "expected 'password'",
            ));
        }
    }
    string(obj, "password").map_err(|e| ApiError::validation_all(prefixed(e, field)))
}

/// Details of `e` with `prefix.` before each field.
fn prefixed(e: ApiError, prefix: &str) -> Vec<FieldError> {
    e.details
        .into_iter()
        .map(|d| FieldError {
            field: format!("{prefix}.{}", d.field),
            message: d.message,
        })
        .collect()
}

/// A new password: non-empty (`empty` is the error for that) and within bcrypt's 72 bytes.
pub fn new_password(password: &str, field: &str, empty: ApiError) -> Result<(), ApiError> {
    if password.is_empty() {
        return Err(empty);
    }
    if password.len() > actors::identity::password::MAX_PASSWORD_BYTES {
        return Err(ApiError::validation(
            field,
            format!(
                "at most {} bytes (bcrypt)",
                actors::identity::password::MAX_PASSWORD_BYTES
            ),
        ));
    }
    Ok(())
}

fn key_ok(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && key.len() <= PROFILE_MAX_KEY_CHARS
}

/// The registration profile: an object of at most 20 keys matching
/// `^[a-zA-Z][a-zA-Z0-9_]{0,63}$`, values str/int/float/bool (strings at most 1024
/// characters), at most 8192 bytes as JSON. Absent or null = empty.
pub fn profile(value: Option<&Json>) -> Result<Map<String, Json>, ApiError> {
    let map = match value {
        None | Some(Json::Null) => return Ok(Map::new()),
        Some(Json::Object(m)) => m,
        Some(_) => return Err(ApiError::validation("profile", "expected an object")),
    };
    let mut problems = Vec::new();
    let mut problem = |field: String, message: String| problems.push(FieldError { field, message });
    if map.len() > PROFILE_MAX_KEYS {
        problem(
            "profile".into(),
            format!("at most {PROFILE_MAX_KEYS} keys, found {}", map.len()),
        );
    }
    for (key, v) in map {
        let field = format!("profile.{key}");
        if key.chars().count() > PROFILE_MAX_KEY_CHARS {
            problem(
                field.clone(),
                format!("key longer than {PROFILE_MAX_KEY_CHARS} characters"),
            );
        } else if !key_ok(key) {
            problem(
                field.clone(),
                "key must match ^[a-zA-Z][a-zA-Z0-9_]{0,63}$".into(),
            );
        }
        match v {
            Json::String(s) if s.chars().count() > PROFILE_MAX_VALUE_CHARS => problem(
                field,
                format!("value longer than {PROFILE_MAX_VALUE_CHARS} characters"),
            ),
            Json::String(_) | Json::Number(_) | Json::Bool(_) => {}
            _ => problem(
                field,
                "value must be a string, an integer, a float or a boolean".into(),
            ),
        }
    }
    let size = serde_json::to_vec(map).map_or(usize::MAX, |b| b.len());
    if size > PROFILE_MAX_JSON_BYTES {
        problem(
            "profile".into(),
            format!("{size} bytes as JSON; at most {PROFILE_MAX_JSON_BYTES}"),
        );
    }
    if problems.is_empty() {
        Ok(map.clone())
    } else {
        Err(ApiError::validation_all(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(v: Json) -> Vec<String> {
        match profile(Some(&v)) {
            Ok(_) => Vec::new(),
            Err(e) => e.details.into_iter().map(|d| d.field).collect(),
        }
    }

    #[test]
    fn profile_bounds() {
        assert!(problems(json!({"a": "x", "n": 1, "f": 1.5, "b": true})).is_empty());
        assert_eq!(problems(json!({"_a": 1})), ["profile._a"]);
        assert_eq!(problems(json!({"a-b": 1})), ["profile.a-b"]);
        assert_eq!(problems(json!({"a": null})), ["profile.a"]);
        assert_eq!(problems(json!({"a": [1]})), ["profile.a"]);
        assert_eq!(problems(json!({"a": {"b": 1}})), ["profile.a"]);
        let long_key = format!("k{}", "x".repeat(64));
        assert_eq!(
            problems(json!({ long_key.clone(): 1 })),
            [format!("profile.{long_key}")]
        );
        assert!(problems(json!({ format!("k{}", "x".repeat(63)): 1 })).is_empty());
        assert!(problems(json!({"a": "é".repeat(1024)})).is_empty());
        assert_eq!(problems(json!({"a": "x".repeat(1025)})), ["profile.a"]);
        let many: Map<String, Json> = (0..21).map(|i| (format!("k{i}"), json!(i))).collect();
        assert_eq!(problems(Json::Object(many)), ["profile"]);
        let big: Map<String, Json> = (0..9)
            .map(|i| (format!("k{i}"), json!("x".repeat(1000))))
            .collect();
        assert_eq!(problems(Json::Object(big)), ["profile"]);
        assert!(profile(Some(&json!([1]))).is_err());
        assert_eq!(profile(None).map(|m| m.len()).ok(), Some(0));
    }

    #[test]
    fn identities() {
        let ok = identity(
            Some(&json!({"type": "email", "value": " Alice@Example.COM "})),
            "identity",
            None,
        )
        .expect("valid");
        assert_eq!(ok.value_normalized, "alice@example.com");
        assert_eq!(ok.value_raw, "Alice@Example.COM");
        for (v, field) in [
            (json!({"type": "phone", "value": "1"}), "identity.type"),
            (json!({"type": "email", "value": "nope"}), "identity.value"),
            (json!({"type": "username", "value": "  "}), "identity.value"),
            (json!({"type": "username"}), "identity.value"),
            (json!({"value": "x"}), "identity.type"),
            (json!("alice"), "identity"),
        ] {
            let e = identity(Some(&v), "identity", None).expect_err("invalid");
            assert_eq!(e.status.as_u16(), 422);
            assert_eq!(e.details[0].field, field, "{v}");
        }
        let guest = identity(
            Some(&json!({"type": "username", "value": "__Guest__"})),
            "i",
            None,
        )
        .expect("shape is fine");
        assert!(reserved(&guest).is_some());
    }

    #[test]
    fn credentials() {
        let c = credential(
            Some(&json!({"type": "password", "password": "pw"})),
            "credential",
        );
        assert_eq!(c.ok().as_deref(), Some("pw"));
        for v in [
            json!({"type": "otp", "password": "pw"}),
            json!({"type": "password"}),
            json!({"type": "password", "password": 5}),
            json!("pw"),
        ] {
            assert!(credential(Some(&v), "credential").is_err(), "{v}");
        }
        assert!(credential(None, "credential").is_err());
    }
}
