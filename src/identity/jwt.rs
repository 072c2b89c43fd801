//! Session tokens (spec "JWT claims", decisions.md "Identity"): HMAC-signed JWTs with
//! the claims `sub` and `user_id` (the same UUID), `role`, `iat` and `exp`.
//!
//! Verification accepts only the configured algorithm, requires `exp` and `sub`, checks
//! expiry with no leeway, and rejects any token that carries a `type` claim (API keys and
//! other non-session tokens are typed).

use crate::config::JwtConfig;
use anyhow::{Context as _, bail};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// The secret used when none is configured: for development only (anyone who reads this
/// source can forge tokens signed with it).
pub const DEV_SECRET: &str = "svc-development-secret-do-not-use-in-production";

/// Claims of a session token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub user_id: String,
    pub role: String,
    pub iat: i64,
    pub exp: i64,
    /// Present on non-session tokens only; a session token never has it.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<serde_json::Value>,
}

/// Signing and verification keys with the validation rules.
pub struct JwtKeys {
    algorithm: Algorithm,
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    lifetime_secs: i64,
    /// The built-in development secret is in use.
    pub dev_secret: bool,
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtKeys")
            .field("algorithm", &self.algorithm)
            .field("dev_secret", &self.dev_secret)
            .finish_non_exhaustive()
    }
}

/// Why a token was refused (logged at debug; clients only see "invalid token").
#[derive(Debug, PartialEq, Eq)]
pub enum Rejected {
    Expired,
    Invalid,
}

impl JwtKeys {
    /// Keys from `[scale.jwt]`; only the HMAC algorithms take a shared secret.
    pub fn new(config: &JwtConfig) -> anyhow::Result<JwtKeys> {
        let algorithm = match config.algorithm.trim().to_ascii_uppercase().as_str() {
            "HS256" => Algorithm::HS256,
            "HS384" => Algorithm::HS384,
            "HS512" => Algorithm::HS512,
            other => {
                bail!("[scale.jwt] algorithm `{other}` is not supported: use HS256, HS384 or HS512")
            }
        };
        let secret = config.secret.as_deref().unwrap_or(DEV_SECRET);
        let mut validation = Validation::new(algorithm);
        validation.algorithms = vec![algorithm];
        validation.leeway = 0;
        validation.validate_exp = true;
        validation.set_required_spec_claims(&["exp", "sub"]);
        let lifetime_secs = i64::from(config.exp_delta_days)
            .checked_mul(86_400)
            .context("[scale.jwt] exp_delta_days is too large")?;
        Ok(JwtKeys {
            algorithm,
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
            lifetime_secs,
            dev_secret: config.secret.is_none(),
        })
    }

    /// A fresh session token for `user_id` with `role`, valid for the configured days.
    pub fn issue(&self, user_id: &str, role: &str, now: i64) -> anyhow::Result<String> {
        let claims = Claims {
            sub: user_id.to_string(),
            user_id: user_id.to_string(),
            role: role.to_string(),
            iat: now,
            exp: now.saturating_add(self.lifetime_secs),
            kind: None,
        };
        jsonwebtoken::encode(&Header::new(self.algorithm), &claims, &self.encoding)
            .context("cannot sign the session token")
    }

    /// The claims of a valid session token.
    pub fn verify(&self, token: &str) -> Result<Claims, Rejected> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => Rejected::Expired,
                _ => Rejected::Invalid,
            })?;
        let claims = data.claims;
        if claims.kind.is_some() || claims.sub != claims.user_id || claims.user_id.is_empty() {
            return Err(Rejected::Invalid);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(secret: Option<&str>, alg: &str) -> JwtKeys {
        JwtKeys::new(&JwtConfig {
            secret: secret.map(str::to_string),
            algorithm: alg.into(),
            exp_delta_days: 7,
        })
        .expect("keys")
    }

    fn now() -> i64 {
        actors::users::unix_now()
    }

    #[test]
    fn round_trip_with_both_ids() {
        let k = keys(Some("s3cret"), "HS256");
        assert!(!k.dev_secret);
        let t = k.issue("u-1", "user", now()).expect("signed");
        let c = k.verify(&t).expect("valid");
        assert_eq!((c.sub.as_str(), c.user_id.as_str()), ("u-1", "u-1"));
        assert_eq!(c.exp - c.iat, 7 * 86_400);
        assert!(keys(None, "HS256").dev_secret);
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
            JwtKeys::new(&JwtConfig {
                algorithm: "RS256".into(),
                ..JwtConfig::default()
            })
            .is_err()
        );
    }
}
