//! Identity (spec "User document", "JWT claims", "One-time tokens", "Identity
//! endpoints", "Authentication" 1-5, 9-11, 14): registration and login with bcrypt
//! passwords, JWT session tokens, the authenticated caller of generated endpoints,
//! e-mail verification and password reset by mail.
//!
//! Layout: `Identity` (this file) is the shared state mounted as `web::Data` next to the
//! server's `AppState`; `handlers` holds the `/user/*` endpoints, `jwt` the session
//! tokens, `password` bcrypt (always on actix's blocking pool, never on an HTTP worker),
//! `throttle` the sliding-window limits, `email` the emailer and its providers
//! (`svc_emailer`: a provider written in svc, `package.module:ClassName`),
//! `validate` request parsing and the registration bounds. Persistence is
//! `actors::users::UserStore`, reached only through [`Identity::db`] (blocking pool).

pub mod email;
pub mod handlers;
pub mod jwt;
pub mod password;
pub mod svc_emailer;
pub mod throttle;
pub mod validate;

use crate::config::{AuthConfig, Config, EmailerConfig, JwtConfig};
use crate::server::errors::{ApiError, ErrorCode};
use actix_web::web;
use actors::runtime::Caller;
use actors::users::{Status, UserError, UserRecord, UserStore};
use anyhow::{Context as _, bail};
use base64::Engine as _;
use email::Mailer;
use jwt::JwtKeys;
use lang::host::AnchorId;
use password::Passwords;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use throttle::Limiter;

/// How long a user looked up for a bearer token is trusted before it is read again (a
/// disabled or deleted account loses access within this time when another process
/// changed it; changes made through this process apply at once).
const USER_CACHE_TTL: Duration = Duration::from_secs(30);
/// Cached users at most; the cache is emptied when full.
const USER_CACHE_MAX: usize = 100_000;
/// send-verification mails per user per hour (decisions.md).
const VERIFICATION_MAILS_PER_HOUR: u32 = 5;
/// forgot-password requests per e-mail per hour (decisions.md).
const RESET_REQUESTS_PER_HOUR: u32 = 3;
const HOUR: Duration = Duration::from_secs(3600);

/// The identity settings of the configuration.
#[derive(Clone, Debug)]
pub struct IdentitySettings {
    /// With the secret resolved: configured, or generated and kept in
    /// [`IdentitySettings::generated_secret`].
    pub jwt: JwtConfig,
    pub auth: AuthConfig,
    pub emailer: EmailerConfig,
    /// No secret was configured: this file holds the generated development secret.
    pub generated_secret: Option<PathBuf>,
}

impl IdentitySettings {
    /// Take the identity sections of `config`. The `prod` profile refuses to start
    /// without a configured JWT secret and with the `log` mail provider; otherwise a
    /// missing secret is read from (or generated into) `jwt_secret` next to the store
    /// file.
    pub fn from_config(config: &Config) -> anyhow::Result<IdentitySettings> {
        let prod = config.profile.as_deref() == Some("prod");
        if prod && config.jwt.secret.is_none() {
            bail!(
                "refusing to start with profile `prod` without a JWT secret: a generated \
                 development secret is not shared by replicas and lives next to the data; set \
                 [scale.jwt] secret or JWT_SECRET"
            );
        }
        if prod && config.emailer.enabled && config.emailer.provider == "log" {
            bail!(
                "refusing to start with profile `prod`: [scale.emailer] provider `log` writes \
                 mails, with their verification and reset tokens, to the server log; configure \
                 `smtp` or another provider"
            );
        }
        let mut jwt = config.jwt.clone();
        let generated_secret = if jwt.secret.is_none() {
            let path = secret_path(&config.database.shelf_db_path);
            jwt.secret = Some(jwt::load_or_create_secret(&path)?);
            Some(path)
        } else {
            None
        };
        JwtKeys::new(&jwt)?;
        Ok(IdentitySettings {
            jwt,
            auth: config.auth.clone(),
            emailer: config.emailer.clone(),
            generated_secret,
        })
    }
}

/// Where the generated development secret is kept: `jwt_secret` in the store file's
/// directory (the data directory, created 0700).
pub fn secret_path(store_path: &Path) -> PathBuf {
    store_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(jwt::SECRET_FILE)
}

/// What a bearer token resolves to, cached for [`USER_CACHE_TTL`].
#[derive(Clone, Debug)]
struct CachedUser {
    root: AnchorId,
    active: bool,
    at: Instant,
}

/// Throttles of the identity endpoints.
pub struct Throttles {
    /// Failed logins (and wrong current passwords) per identity or user.
    pub login_identity: Limiter,
    /// Failed logins per client address.
    pub login_address: Limiter,
    /// Registrations per client address.
    pub registrations: Limiter,
    pub verification_mails: Limiter,
    pub reset_requests: Limiter,
}

/// The identity layer's shared state.
pub struct Identity {
    users: Arc<Mutex<UserStore>>,
    pub jwt: JwtKeys,
    pub auth: AuthConfig,
    pub passwords: Passwords,
    pub throttles: Throttles,
    /// `None` = e-mail disabled.
    pub mailer: Option<Mailer>,
    cache: Mutex<HashMap<String, CachedUser>>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("jwt", &self.jwt)
            .field("mailer", &self.mailer.as_ref().map(Mailer::name))
            .finish_non_exhaustive()
    }
}

impl Identity {
    /// Open the user store in `store_path`, create the guest (on `shared_root`) and
    /// system accounts, build the keys and the emailer. Blocks (startup only).
    pub fn start(
        settings: &IdentitySettings,
        store_path: &Path,
        shared_root: AnchorId,
    ) -> anyhow::Result<Identity> {
        let jwt = JwtKeys::new(&settings.jwt)?;
        if settings.generated_secret.is_none()
            && settings.jwt.secret.as_ref().is_some_and(|s| s.len() < 32)
        {
            tracing::warn!("the JWT secret is shorter than 32 bytes; use a long random value");
        }
        let mut users = UserStore::open(store_path)
            .with_context(|| format!("cannot open the user store {}", store_path.display()))?;
        users
            .ensure_system_accounts(&lang::host::format_id(shared_root), new_user_id, || {
                lang::host::format_id(new_root_id())
            })
            .context("cannot create the guest and system accounts")?;
        let passwords = Passwords::new(
            settings.auth.bcrypt_cost,
            settings.auth.bcrypt_queue_capacity as usize,
        );
        let window = Duration::from_secs(settings.auth.login_failure_window_seconds);
        let throttles = Throttles {
            login_identity: Limiter::new(settings.auth.login_max_failures, window),
            login_address: Limiter::new(settings.auth.login_max_failures_per_address, window),
            registrations: Limiter::new(
                settings.auth.register_max_per_address,
                Duration::from_secs(settings.auth.register_window_seconds),
            ),
            verification_mails: Limiter::new(VERIFICATION_MAILS_PER_HOUR, HOUR),
            reset_requests: Limiter::new(RESET_REQUESTS_PER_HOUR, HOUR),
        };
        let mailer = Mailer::start(&settings.emailer);
        Ok(Identity {
            users: Arc::new(Mutex::new(users)),
            jwt,
            auth: settings.auth.clone(),
            passwords,
            throttles,
            mailer,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Run `f` on the user store, on actix's blocking pool.
    pub async fn db<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut UserStore) -> Result<T, UserError> + Send + 'static,
    {
        let users = Arc::clone(&self.users);
        let result = web::block(move || {
            let mut store = users.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut store)
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "user store task failed");
            ApiError::new(ErrorCode::InternalError, "internal error")
        })?;
        result.map_err(user_error)
    }

    /// The caller a bearer token stands for: the user's id and root. Invalid or expired
    /// tokens, and tokens of deleted or disabled accounts, are 401.
    pub async fn caller(&self, token: &str) -> Result<Caller, ApiError> {
        let claims = self.verify_token(token)?;
        let user_id = claims.user_id;
        let cached = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache
                .get(&user_id)
                .filter(|c| c.at.elapsed() < USER_CACHE_TTL)
                .cloned()
        };
        let entry = match cached {
            Some(c) => c,
            None => {
                let id = user_id.clone();
                let user = self.db(move |s| s.get(&id)).await?;
                let Some(user) = user else {
                    return Err(unauthorized("invalid token: the account no longer exists"));
                };
                self.remember(&user)?
            }
        };
        if !entry.active {
            return Err(unauthorized("the account is disabled"));
        }
        Ok(Caller {
            user_id: Some(user_id),
            root: Some(entry.root),
        })
    }

    /// Cache what a token resolves to for `user`.
    fn remember(&self, user: &UserRecord) -> Result<CachedUser, ApiError> {
        let root = lang::host::parse_id(&user.root_id).ok_or_else(|| {
            tracing::error!(user_id = %user.user_id, "stored root id is not a valid id");
            ApiError::new(ErrorCode::InternalError, "internal error")
        })?;
        let entry = CachedUser {
            root,
            active: user.status == Status::Active,
            at: Instant::now(),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= USER_CACHE_MAX {
            cache.clear();
        }
        cache.insert(user.user_id.clone(), entry.clone());
        Ok(entry)
    }

    /// Drop a user from the token cache (after a change made through this process).
    pub fn forget(&self, user_id: &str) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.remove(user_id);
    }

    /// The claims of a valid session token, else 401.
    pub fn verify_token(&self, token: &str) -> Result<jwt::Claims, ApiError> {
        self.jwt.verify(token).map_err(|r| match r {
            jwt::Rejected::Expired => unauthorized("token expired"),
            jwt::Rejected::NotYetValid => unauthorized("invalid token: not valid yet"),
            jwt::Rejected::Invalid => unauthorized("invalid token"),
        })
    }
}

/// 401 `UNAUTHORIZED`.
pub fn unauthorized(message: &str) -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, message)
}

/// The HTTP face of a user-store failure.
fn user_error(e: UserError) -> ApiError {
    match e {
        UserError::Taken { kind, value } => ApiError::new(
            ErrorCode::IdentityTaken,
            format!("{kind} '{value}' is already taken"),
        ),
        UserError::TypeExists(kind) => ApiError::with_code_status(
            ErrorCode::ValidationError,
            400,
            format!("the account already has a {kind} identity (at most one of each type)"),
        ),
        UserError::NotFound => ApiError::new(ErrorCode::NotFound, "user not found"),
        UserError::Protected => ApiError::new(ErrorCode::Forbidden, "the account is protected"),
        other => {
            tracing::error!(error = %other, "user store failure");
            ApiError::new(
                ErrorCode::InternalError,
                "storage failure; see the server log",
            )
        }
    }
}

/// `n` bytes from the operating system's secure random source.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if aws_lc_rs::rand::fill(&mut bytes).is_err() {
        // The OS source failing is unrecoverable for a security service.
        tracing::error!("the system random source failed");
        std::process::abort();
    }
    bytes
}

/// A random UUID (version 4).
pub fn new_user_id() -> String {
    let mut b: [u8; 16] = random_bytes();
    b[6] = (b[6] & 0x0F) | 0x40;
    b[8] = (b[8] & 0x3F) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A fresh, unguessable root id for a new user.
pub fn new_root_id() -> AnchorId {
    loop {
        let id = u128::from_le_bytes(random_bytes());
        if id != 0 {
            return id;
        }
    }
}

/// A one-time token: 32 random bytes, URL-safe base64 without padding (43 characters).
pub fn new_one_time_token() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes::<32>())
}

/// The stored form of a one-time token: SHA-256, lowercase hex.
pub fn token_hash(token: &str) -> String {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes())
        .as_ref()
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// Mount the `/user/*` routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    handlers::configure(cfg);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_tokens() {
        let id = new_user_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(new_user_id(), id);
        let t = new_one_time_token();
        assert_eq!(t.len(), 43);
        assert!(
            t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(
            token_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn prod_profile_needs_a_secret_and_a_real_mailer() {
        let dir = std::env::temp_dir().join(format!(
            "svc-identity-settings-{}-{}",
            std::process::id(),
            actors::random_id()
        ));
        let mut config = Config::load_with_env(&dir, None, &|_| None).expect("defaults load");
        let dev = IdentitySettings::from_config(&config).expect("generated secret");
        let path = dir.join(".svc/data/jwt_secret");
        assert_eq!(dev.generated_secret.as_deref(), Some(path.as_path()));
        let again = IdentitySettings::from_config(&config).expect("reused secret");
        assert_eq!(again.jwt.secret, dev.jwt.secret);
        config.profile = Some("prod".into());
        let err = IdentitySettings::from_config(&config).expect_err("refused");
        assert!(err.to_string().contains("JWT_SECRET"), "{err}");
        config.jwt.secret = Some("a-real-secret-of-enough-length-0123456789".into());
        let prod = IdentitySettings::from_config(&config).expect("configured secret");
        assert_eq!(prod.generated_secret, None);
        config.emailer.provider = "log".into();
        let err = IdentitySettings::from_config(&config).expect_err("refused");
        assert!(err.to_string().contains("`log`"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
