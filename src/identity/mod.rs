//! Identity on the HTTP side (spec "User document", "JWT claims", "One-time tokens",
//! "Identity endpoints", "Authentication" 1-5, 9-11, 14). The service itself lives in
//! `actors::identity` (the identity service actor and the user-store supervisor); this
//! module resolves its settings, starts it with the server's emailer, mounts the
//! `/user/*` routes and maps its errors to the HTTP error table.
//!
//! Layout: `handlers` holds the `/user/*` endpoints (extract, send, map), `validate`
//! request parsing and the registration bounds, `secret` the generated development JWT
//! secret, `email` the emailer and its providers (`svc_emailer`: a provider written in
//! svc, `package.module:ClassName`, run by the interpreter), `admin` the `/admin*` routes
//! and the portal page (`admin_portal.html`), `sso` the `/sso/<platform>/*` routes.

pub mod admin;
pub mod email;
pub mod handlers;
pub mod secret;
pub mod sso;
pub mod svc_emailer;
pub mod validate;

use crate::config::{
    AdminConfig, AuthConfig, Config, EmailerConfig, JwtConfig, SsoConfig, WebhookConfig,
};
use crate::server::errors::{ApiError, ErrorCode};
use actix_web::web;
use actors::identity::jwt::{JwtKeys, JwtSettings};
use actors::identity::sso::{ProviderSettings, SsoSettings};
use actors::identity::webhook::WebhookSettings;
use actors::identity::{
    AdminSettings, AuthSettings, BootstrapAdmin, ErrorKind, IdentityConfig, IdentityError,
    IdentityHandle, MailSender,
};
use actors::users::UserTarget;
use anyhow::bail;
use email::Mailer;
use lang::host::AnchorId;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The identity settings of the configuration.
#[derive(Clone, Debug)]
pub struct IdentitySettings {
    /// With the secret resolved: configured, or generated and kept in
    /// [`IdentitySettings::generated_secret`].
    pub jwt: JwtConfig,
    pub auth: AuthConfig,
    pub emailer: EmailerConfig,
    /// `[scale.webhook]`.
    pub webhook: WebhookConfig,
    /// `[scale.admin]`.
    pub admin: AdminConfig,
    /// `[scale.sso]`.
    pub sso: SsoConfig,
    /// No secret was configured: this file holds the generated development secret.
    pub generated_secret: Option<PathBuf>,
    /// Where a generated first admin password is kept (no `ADMIN_DEFAULT_PASSWORD`).
    pub admin_password_file: PathBuf,
    /// `DOCDB_URI` / `[scale.database] docdb_uri`: users live in the document database
    /// with the graph, else in the store file.
    pub docdb_uri: Option<String>,
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
        let target = &config.sso.client_auth_callback_url;
        if !(target.is_empty() || target.starts_with("https://") || target.starts_with("http://")) {
            bail!(
                "[scale.sso] client_auth_callback_url must be an http:// or https:// URL, not \
                 `{target}`"
            );
        }
        let mut jwt = config.jwt.clone();
        let generated_secret = if jwt.secret.is_none() {
            let path = secret_path(&config.database.shelf_db_path);
            jwt.secret = Some(secret::load_or_create_secret(&path)?);
            Some(path)
        } else {
            None
        };
        JwtKeys::new(&jwt_settings(&jwt))?;
        Ok(IdentitySettings {
            jwt,
            auth: config.auth.clone(),
            emailer: config.emailer.clone(),
            webhook: config.webhook.clone(),
            admin: config.admin.clone(),
            sso: config.sso.clone(),
            generated_secret,
            admin_password_file: data_file(&config.database.shelf_db_path, ADMIN_PASSWORD_FILE),
            docdb_uri: config.database.docdb_uri.clone(),
        })
    }
}

fn jwt_settings(c: &JwtConfig) -> JwtSettings {
    JwtSettings {
        secret: c.secret.clone(),
        algorithm: c.algorithm.clone(),
        exp_delta_days: c.exp_delta_days,
        clock_skew_seconds: c.clock_skew_seconds,
    }
}

fn auth_settings(c: &AuthConfig) -> AuthSettings {
    AuthSettings {
        verify_token_ttl_seconds: c.verify_token_ttl_seconds,
        reset_token_ttl_seconds: c.reset_token_ttl_seconds,
        verify_url_template: c.verify_url_template.clone(),
        reset_url_template: c.reset_url_template.clone(),
        bcrypt_cost: c.bcrypt_cost,
        login_max_failures: c.login_max_failures,
        login_max_failures_per_address: c.login_max_failures_per_address,
        login_failure_window_seconds: c.login_failure_window_seconds,
        bcrypt_queue_capacity: c.bcrypt_queue_capacity,
        register_max_per_address: c.register_max_per_address,
        register_window_seconds: c.register_window_seconds,
    }
}

fn webhook_settings(c: &WebhookConfig) -> WebhookSettings {
    WebhookSettings {
        verify_signature: c.verify_signature,
        api_key_expiry_days: c.api_key_expiry_days,
        replay_guard: c.replay_guard,
        timestamp_tolerance_seconds: c.timestamp_tolerance_seconds,
        max_keys_per_user: c.max_keys_per_user,
    }
}

/// File of the generated first password of the bootstrap admin, next to the store file.
pub const ADMIN_PASSWORD_FILE: &str = "admin_password";

fn sso_settings(c: &SsoConfig) -> SsoSettings {
    SsoSettings {
        host: c.host.clone(),
        client_auth_callback_url: c.client_auth_callback_url.clone(),
        providers: c
            .providers
            .iter()
            .map(|p| ProviderSettings {
                platform: p.platform.clone(),
                client_id: p.client_id.clone(),
                client_secret: p.client_secret.clone(),
                issuer: p.issuer.clone(),
                scopes: p.scopes.clone(),
                response_mode: p.response_mode.clone(),
            })
            .collect(),
        state_ttl_seconds: c.state_ttl_seconds,
        max_pending_logins: c.max_pending_logins,
        http_timeout_seconds: c.http_timeout_seconds,
        discovery_ttl_seconds: c.discovery_ttl_seconds,
        max_response_bytes: c.max_response_bytes,
    }
}

/// The admin settings; the bootstrap admin's first password is `ADMIN_DEFAULT_PASSWORD`
/// (or `[scale.admin] default_password`), else a random one kept in
/// [`ADMIN_PASSWORD_FILE`] next to the store file.
fn admin_settings(c: &AdminConfig, password_file: &Path) -> AdminSettings {
    let bootstrap = if c.enabled {
        let (given, file) = (c.default_password.clone(), password_file.to_path_buf());
        Some(BootstrapAdmin {
            username: c.username.clone(),
            email: (!c.email.is_empty()).then(|| c.email.clone()),
            // Asked for only when the bootstrap admin does not exist yet, so the file is
            // written (and only then) for the admin it creates.
            password: Arc::new(move || {
                if given.is_empty() {
                    secret::load_or_create_random(&file, "admin password")
                        .map_err(|e| format!("{e:#}"))
                } else {
                    Ok(given.clone())
                }
            }),
        })
    } else {
        None
    };
    AdminSettings {
        enabled: c.enabled,
        bootstrap,
        session_expiry_hours: c.session_expiry_hours,
        require_password_reset: c.require_password_reset,
        max_page_size: c.max_page_size,
    }
}

/// Start the identity service over the user store in `store_path` (the guest account on
/// `shared_root`) with the configured emailer. Blocks (startup only).
pub fn start(
    settings: &IdentitySettings,
    store_path: &Path,
    shared_root: AnchorId,
) -> anyhow::Result<IdentityHandle> {
    if settings.generated_secret.is_none()
        && settings.jwt.secret.as_ref().is_some_and(|s| s.len() < 32)
    {
        tracing::warn!("the JWT secret is shorter than 32 bytes; use a long random value");
    }
    let mailer = Mailer::start(&settings.emailer).map(|m| Arc::new(m) as Arc<dyn MailSender>);
    let config = IdentityConfig {
        jwt: jwt_settings(&settings.jwt),
        auth: auth_settings(&settings.auth),
        mailer,
        webhook: webhook_settings(&settings.webhook),
        admin: admin_settings(&settings.admin, &settings.admin_password_file),
        sso: sso_settings(&settings.sso),
    };
    let target = UserTarget::choose(store_path.to_path_buf(), settings.docdb_uri.as_deref());
    let handle = IdentityHandle::start_on(config, &target, shared_root)?;
    if handle.bootstrap_created() {
        let password = if settings.admin.default_password.is_empty() {
            format!(
                "a random first password kept in {}",
                settings.admin_password_file.display()
            )
        } else {
            "the password of ADMIN_DEFAULT_PASSWORD".to_string()
        };
        tracing::warn!(
            "admin: created the bootstrap admin `{}` with {password}; log in at /admin and \
             change it{}",
            settings.admin.username,
            if settings.admin.require_password_reset {
                " (admin actions are refused until then)"
            } else {
                ""
            }
        );
    }
    Ok(handle)
}

/// The HTTP face of an identity service error: its code and status come from the
/// table (the spec's 400 `VALIDATION_ERROR` rows keep their 400).
pub fn api_error(e: IdentityError) -> ApiError {
    let error = match e.kind {
        ErrorKind::Unauthorized => ApiError::new(ErrorCode::Unauthorized, e.message),
        ErrorKind::Forbidden => ApiError::new(ErrorCode::Forbidden, e.message),
        ErrorKind::NotFound => ApiError::new(ErrorCode::NotFound, e.message),
        ErrorKind::Taken => ApiError::new(ErrorCode::IdentityTaken, e.message),
        ErrorKind::Conflict => ApiError::new(ErrorCode::Conflict, e.message),
        ErrorKind::InvalidSignature => ApiError::new(ErrorCode::InvalidSignature, e.message),
        ErrorKind::Rule => ApiError::with_code_status(ErrorCode::ValidationError, 400, e.message),
        ErrorKind::BadRequest => ApiError::new(ErrorCode::BadRequest, e.message),
        ErrorKind::InvalidToken => ApiError::new(ErrorCode::InvalidToken, e.message),
        ErrorKind::RateLimited => {
            return ApiError::rate_limited(e.message, e.retry_after.unwrap_or(1));
        }
        ErrorKind::Unavailable => {
            return ApiError::unavailable(e.message, e.retry_after.unwrap_or(1));
        }
        ErrorKind::EmailDisabled => ApiError::new(ErrorCode::EmailDisabled, e.message),
        ErrorKind::EmailSendFailed => ApiError::new(ErrorCode::EmailSendFailed, e.message),
        ErrorKind::Internal => ApiError::new(ErrorCode::InternalError, e.message),
        ErrorKind::NotImplemented => ApiError::new(ErrorCode::NotImplemented, e.message),
        ErrorKind::PasswordResetRequired => {
            ApiError::new(ErrorCode::PasswordResetRequired, e.message)
        }
        ErrorKind::InvalidState => ApiError::new(ErrorCode::InvalidState, e.message),
        ErrorKind::SsoFailed => ApiError::new(ErrorCode::SsoFailed, e.message),
        ErrorKind::ProviderError => ApiError::new(ErrorCode::SsoProviderError, e.message),
    };
    match e.retry_after {
        Some(secs) => error.with_retry_after(secs),
        None => error,
    }
}

/// Where the generated development secret is kept: `jwt_secret` in the store file's
/// directory (the data directory, created 0700).
pub fn secret_path(store_path: &Path) -> PathBuf {
    data_file(store_path, secret::SECRET_FILE)
}

/// `name` in the store file's directory.
fn data_file(store_path: &Path, name: &str) -> PathBuf {
    store_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(name)
}

/// Mount the `/user/*`, `/admin*` and `/sso/*` routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    handlers::configure(cfg);
    admin::configure(cfg);
    sso::configure(cfg);
}

#[cfg(test)]
mod tests {
    use super::*;

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
