//! Webhook keys and signatures: the key format of both flavors and the check of an
//! `X-Webhook-Signature` (decisions.md "Webhooks").
//!
//! Keys are 32 random bytes (256 bits), URL-safe base64 without padding, behind a prefix
//! that tells the flavors apart (`svc_` API keys, `svcwh_` alternate-flavor keys). The
//! store keeps only their SHA-256 hex ([`super::token_hash`]).
//!
//! The signature is the lowercase hex HMAC-SHA256 of the *signed text*, keyed with the
//! API key's bytes as sent in `X-API-Key`; a `sha256=` prefix is accepted and hex is
//! read case-insensitively; the comparison is constant-time (`aws_lc_rs::hmac::verify`).
//! The signed text is the raw request body, byte for byte. With the replay guard on
//! (`[scale.webhook] replay_guard`), the request must also send `X-Webhook-Timestamp`
//! (decimal Unix seconds, within `timestamp_tolerance_seconds` of the server's clock),
//! and the signed text is `<timestamp>.<raw body>`: the timestamp header's value exactly
//! as sent, one `.` (0x2E), then the body.

use super::random_bytes;
use aws_lc_rs::hmac;
use base64::Engine as _;

/// Prefix of current-flavor API keys.
pub const API_KEY_PREFIX: &str = "svc_";
/// Prefix of alternate-flavor keys.
pub const WEBHOOK_KEY_PREFIX: &str = "svcwh_";
/// The longest key looked up (longer input is refused before hashing).
pub const MAX_KEY_LEN: usize = 256;
/// Characters of an alternate-flavor key shown in lists.
const HINT_CHARS: usize = 10;

/// `[scale.webhook]` as the service needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookSettings {
    /// Check `X-Webhook-Signature` (true by default).
    pub verify_signature: bool,
    /// Default lifetime of an API key in days; 0 = permanent.
    pub api_key_expiry_days: u32,
    /// Require a signed `X-Webhook-Timestamp` (off by default).
    pub replay_guard: bool,
    /// Largest distance of the timestamp from the server's clock, in seconds.
    pub timestamp_tolerance_seconds: u64,
    /// Active API keys (and alternate-flavor keys) one user may hold.
    pub max_keys_per_user: usize,
}

impl Default for WebhookSettings {
    fn default() -> WebhookSettings {
        WebhookSettings {
            verify_signature: true,
            api_key_expiry_days: 365,
            replay_guard: false,
            timestamp_tolerance_seconds: 300,
            max_keys_per_user: 100,
        }
    }
}

/// A fresh key: `prefix` then 32 random bytes in URL-safe base64 (43 characters).
pub fn new_key(prefix: &str) -> String {
    format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes::<32>())
    )
}

/// What a list shows of an alternate-flavor key: its first characters and an ellipsis.
pub fn key_hint(key: &str) -> String {
    let head: String = key.chars().take(HINT_CHARS).collect();
    format!("{head}…")
}

/// The text a request signs: the body, or `<timestamp>.<body>` with a timestamp.
pub fn signed_text(timestamp: Option<&str>, body: &[u8]) -> Vec<u8> {
    match timestamp {
        None => body.to_vec(),
        Some(t) => {
            let mut text = Vec::with_capacity(t.len() + 1 + body.len());
            text.extend_from_slice(t.as_bytes());
            text.push(b'.');
            text.extend_from_slice(body);
            text
        }
    }
}

/// The lowercase hex HMAC-SHA256 of `text` keyed with `key` (what a sender computes).
pub fn sign(key: &str, text: &[u8]) -> String {
    let k = hmac::Key::new(hmac::HMAC_SHA256, key.as_bytes());
    hex(hmac::sign(&k, text).as_ref())
}

/// Whether `given` (hex, optionally `sha256=`-prefixed, surrounding spaces ignored) is the
/// HMAC-SHA256 of `text` keyed with `key`; constant-time in the tag.
pub fn signature_matches(key: &str, text: &[u8], given: &str) -> bool {
    let given = given.trim();
    let given = given
        .get(..7)
        .filter(|p| p.eq_ignore_ascii_case("sha256="))
        .map_or(given, |_| &given[7..]);
    let Some(tag) = unhex(given) else {
        return false;
    };
    let k = hmac::Key::new(hmac::HMAC_SHA256, key.as_bytes());
    hmac::verify(&k, text, &tag).is_ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex to bytes (either case); `None` for anything else or an odd length. Bounded: a
/// SHA-256 tag is 64 characters, longer text is refused before decoding.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16);
    text.as_bytes()
        .chunks(2)
        .map(|pair| Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8))
        .collect()
}

/// Whether `timestamp` (decimal Unix seconds) is within `tolerance` of `now`.
pub fn timestamp_fresh(timestamp: &str, now: i64, tolerance: u64) -> bool {
    let Ok(t) = timestamp.trim().parse::<i64>() else {
        return false;
    };
    now.abs_diff(t) <= tolerance
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231, test case 2 (key "Jefe").
    #[test]
    fn hmac_sha256_known_answer() {
        let text = b"what do ya want for nothing?";
        let tag = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        assert_eq!(sign("Jefe", text), tag);
        assert!(signature_matches("Jefe", text, tag));
        assert!(signature_matches("Jefe", text, &format!("sha256={tag}")));
        assert!(signature_matches("Jefe", text, &tag.to_uppercase()));
        assert!(!signature_matches(
            "Jefe",
            b"what do ya want for nothing!",
            tag
        ));
        assert!(!signature_matches("jefe", text, tag));
        assert!(!signature_matches("Jefe", text, &tag[..63]));
        assert!(!signature_matches("Jefe", text, ""));
        assert!(!signature_matches("Jefe", text, "sha256="));
        assert!(!signature_matches("Jefe", text, &"zz".repeat(32)));
        assert!(!signature_matches("Jefe", text, "é"));
    }

    #[test]
    fn keys_are_long_random_and_prefixed() {
        let a = new_key(API_KEY_PREFIX);
        let b = new_key(API_KEY_PREFIX);
        assert_ne!(a, b);
        assert!(a.starts_with("svc_") && a.len() == 4 + 43, "{a}");
        let h = key_hint(&new_key(WEBHOOK_KEY_PREFIX));
        assert!(h.starts_with("svcwh_") && h.ends_with('…'), "{h}");
    }

    #[test]
    fn signed_text_and_timestamps() {
        assert_eq!(signed_text(None, b"{}"), b"{}");
        assert_eq!(signed_text(Some("17"), b"{}"), b"17.{}");
        assert!(timestamp_fresh("1000", 1200, 300));
        assert!(!timestamp_fresh("1000", 1301, 300));
        assert!(!timestamp_fresh("soon", 1000, 300));
    }
}
