//! Session tokens (spec "JWT claims", decisions.md "Identity"): HMAC-signed JWTs with
//! the claims `sub` and `user_id` (the same UUID), `role`, `iat` and `exp`, plus a random
//! `jti` so that two tokens issued for one account in the same second still differ (a
//! refresh answers a new token, not a copy of the one it was given).
//!
//! Verification accepts only the configured algorithm, requires `exp`, `sub` and `iat`,
//! checks expiry with no leeway, refuses a token issued in the future (`iat`) or not yet
//! valid (`nbf`, when present) beyond `[scale.jwt] clock_skew_seconds`, and rejects any
//! token that carries a `type` claim (API keys and other non-session tokens are typed).
//!
//! The secret is resolved before the keys are built (configured, or a generated
//! development secret the server keeps in its data directory): there is no built-in one.

use super::StartError;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// `[scale.jwt]` as the keys need it.
#[derive(Clone, Debug, Default)]
pub struct JwtSettings {
    /// Must be resolved (configured or generated) before the keys are built.
    pub secret: Option<String>,
    /// `HS256`, `HS384` or `HS512`.
    pub algorithm: String,
    /// Token lifetime in days.
    pub exp_delta_days: u32,
    /// Tolerated clock difference for `iat` and `nbf`, in seconds.
    pub clock_skew_seconds: u64,
}

/// Claims of a session token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub user_id: String,
    pub role: String,
    pub iat: i64,
    pub exp: i64,
    /// Not before: honoured when present (svc never sets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    /// Token id: 128 random bits in hex, fresh per issued token (svc always sets it;
    /// optional on verification).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// Present on non-session tokens only; a session token never has it.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<serde_json::Value>,
}

/// A fresh `jti`: 128 random bits as 32 lowercase hex digits.
fn token_id() -> String {
    let bytes: [u8; 16] = super::random_bytes();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Signing and verification keys with the validation rules.
pub struct JwtKeys {
    algorithm: Algorithm,
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    lifetime_secs: i64,
    clock_skew_secs: i64,
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtKeys")
            .field("algorithm", &self.algorithm)
            .field("clock_skew_secs", &self.clock_skew_secs)
            .finish_non_exhaustive()
    }
}

/// Why a token was refused (logged at debug; clients only see "invalid token").
#[derive(Debug, PartialEq, Eq)]
pub enum Rejected {
    Expired,
    /// Issued (`iat`) or valid from (`nbf`) further in the future than the clock skew.
    NotYetValid,
    Invalid,
}

impl JwtKeys {
    /// Keys from `[scale.jwt]`; only the HMAC algorithms take a shared secret. The secret
    /// must be resolved by then (configured or generated): there is no default.
    pub fn new(config: &JwtSettings) -> Result<JwtKeys, StartError> {
        let algorithm = match config.algorithm.trim().to_ascii_uppercase().as_str() {
            "HS256" => Algorithm::HS256,
            "HS384" => Algorithm::HS384,
            "HS512" => Algorithm::HS512,
            other => {
                return Err(StartError::Config(format!(
                    "[scale.jwt] algorithm `{other}` is not supported: use HS256, HS384 or HS512"
                )));
            }
        };
        let secret = config
            .secret
            .as_deref()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                StartError::Config("no JWT secret: set [scale.jwt] secret or JWT_SECRET".into())
            })?;
        let mut validation = Validation::new(algorithm);
        validation.algorithms = vec![algorithm];
        validation.leeway = 0;
        validation.validate_exp = true;
        // `nbf` is checked below with the clock skew (the library's check would share
        // `exp`'s leeway, which is zero).
        validation.validate_nbf = false;
        validation.set_required_spec_claims(&["exp", "sub", "iat"]);
        let lifetime_secs = i64::from(config.exp_delta_days)
            .checked_mul(86_400)
            .ok_or_else(|| StartError::Config("[scale.jwt] exp_delta_days is too large".into()))?;
        Ok(JwtKeys {
            algorithm,
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
            lifetime_secs,
            clock_skew_secs: i64::try_from(config.clock_skew_seconds).unwrap_or(i64::MAX),
        })
    }

    /// A fresh session token for `user_id` with `role`, valid for the configured days.
    pub fn issue(
        &self,
        user_id: &str,
        role: &str,
        now: i64,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        self.issue_for(user_id, role, now, self.lifetime_secs)
    }

    /// [`JwtKeys::issue`] with its own lifetime (admin sessions: `session_expiry_hours`).
    pub fn issue_for(
        &self,
        user_id: &str,
        role: &str,
        now: i64,
        lifetime_secs: i64,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        let claims = Claims {
            sub: user_id.to_string(),
            user_id: user_id.to_string(),
            role: role.to_string(),
            iat: now,
            exp: now.saturating_add(lifetime_secs),
            nbf: None,
            jti: Some(token_id()),
            kind: None,
        };
        jsonwebtoken::encode(&Header::new(self.algorithm), &claims, &self.encoding)
    }

    /// The claims of a valid session token.
    pub fn verify(&self, token: &str) -> Result<Claims, Rejected> {
        self.verify_at(token, crate::users::unix_now())
    }

    /// [`JwtKeys::verify`] at the time `now` (seconds since the epoch).
    pub fn verify_at(&self, token: &str, now: i64) -> Result<Claims, Rejected> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => Rejected::Expired,
                _ => Rejected::Invalid,
            })?;
        let claims = data.claims;
        if claims.kind.is_some() || claims.sub != claims.user_id || claims.user_id.is_empty() {
            return Err(Rejected::Invalid);
        }
        let latest = now.saturating_add(self.clock_skew_secs);
        if claims.iat > latest || claims.nbf.is_some_and(|nbf| nbf > latest) {
            return Err(Rejected::NotYetValid);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(secret: Option<&str>, alg: &str) -> JwtKeys {
        JwtKeys::new(&JwtSettings {
            secret: secret.map(str::to_string),
            algorithm: alg.into(),
            exp_delta_days: 7,
            clock_skew_seconds: 60,
        })
        .expect("keys")
    }

    fn now() -> i64 {
        crate::users::unix_now()
    }

    #[test]
    fn round_trip_with_both_ids() {
        let k = keys(Some("s3cret"), "HS256");
        let t = k.issue("u-1", "user", now()).expect("signed");
        let c = k.verify(&t).expect("valid");
        assert_eq!((c.sub.as_str(), c.user_id.as_str()), ("u-1", "u-1"));
        assert_eq!(c.exp - c.iat, 7 * 86_400);
        // Same account, same second: still two tokens, told apart by their `jti`.
        let at = now();
        let (a, b) = (
            k.issue("u-1", "user", at).expect("signed"),
            k.issue("u-1", "user", at).expect("signed"),
        );
        assert_ne!(a, b);
        let jti = k.verify(&a).expect("valid").jti.expect("jti set");
        assert!(
            jti.len() == 32 && jti.bytes().all(|c| c.is_ascii_hexdigit()),
            "{jti}"
        );
        assert!(
            JwtKeys::new(&JwtSettings {
                secret: None,
                algorithm: "HS256".into(),
                ..JwtSettings::default()
            })
            .is_err(),
            "no secret, no keys"
        );
    }

    fn forged(iat: i64, nbf: Option<i64>) -> String {
        let claims = Claims {
            sub: "u".into(),
            user_id: "u".into(),
            role: "user".into(),
            iat,
            exp: iat + 3600,
            nbf,
            jti: None,
            kind: None,
        };
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(b"s3cret"),
        )
        .expect("signed")
    }

    #[test]
    fn future_iat_and_nbf_beyond_the_skew_are_refused() {
        let k = keys(Some("s3cret"), "HS256");
        let now = 1_900_000_000;
        assert!(
            k.verify_at(&forged(now + 60, None), now).is_ok(),
            "within skew"
        );
        assert_eq!(
            k.verify_at(&forged(now + 61, None), now),
            Err(Rejected::NotYetValid)
        );
        assert!(k.verify_at(&forged(now, Some(now + 60)), now).is_ok());
        assert_eq!(
            k.verify_at(&forged(now, Some(now + 61)), now),
            Err(Rejected::NotYetValid)
        );
        assert!(k.verify_at(&forged(now - 10, Some(now - 5)), now).is_ok());
    }

    #[test]
    fn other_secret_algorithm_type_or_expiry_is_refused() {
        let k = keys(Some("s3cret"), "HS256");
        let t = keys(Some("other"), "HS256")
            .issue("u", "user", now())
            .expect("signed");
        assert_eq!(k.verify(&t), Err(Rejected::Invalid));
        let t = keys(Some("s3cret"), "HS512")
            .issue("u", "user", now())
            .expect("signed");
        assert_eq!(k.verify(&t), Err(Rejected::Invalid));
        let t = k.issue("u", "user", now() - 8 * 86_400).expect("signed");
        assert_eq!(k.verify(&t), Err(Rejected::Expired));
        let typed = Claims {
            sub: "u".into(),
            user_id: "u".into(),
            role: "user".into(),
            iat: now(),
            exp: now() + 60,
            nbf: None,
            jti: None,
            kind: Some("api_key".into()),
        };
        let t = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &typed,
            &EncodingKey::from_secret(b"s3cret"),
        )
        .expect("signed");
        assert_eq!(k.verify(&t), Err(Rejected::Invalid));
        assert_eq!(k.verify("not.a.token"), Err(Rejected::Invalid));
        assert!(
            JwtKeys::new(&JwtSettings {
                algorithm: "RS256".into(),
                ..JwtSettings::default()
            })
            .is_err()
        );
    }
}
