//! Identity as a service of actors (spec "User document", "JWT claims", "One-time
//! tokens", "Identity endpoints", "Authentication" 1-5, 9-11, 14): registration and login
//! with bcrypt passwords, JWT session tokens, the authenticated caller of generated
//! endpoints, e-mail verification and password reset by mail.
//!
//! Actors:
//! - [`IdentityService`] (on its own arbiter) receives the typed messages of
//!   `messages.rs` (one per `/user/*` operation, [`messages::CallerOf`] for generated
//!   endpoints, and the webhook-key messages of `/api-key/*` and `/webhook/*`) and answers typed replies or an [`IdentityError`]. Each
//!   message becomes a future on the actor's thread (`service.rs`): it awaits the user
//!   store, the bcrypt pool and the mailer, so the thread is never blocked and many
//!   requests are in flight at once.
//! - [`UserStoreSupervisor`] (`crate::users`, on its own arbiter, supervised) owns the
//!   user store's connection; the service reaches users only through it.
//!
//! Other modules hold an [`IdentityHandle`]: it sends the messages, verifies a session
//! token's signature (pure work on the keys, no state, so no thread hop) and answers a
//! token's caller from a short-lived cache before asking the service.
//!
//! Inside: `jwt` the session tokens, `password` bcrypt on the blocking pool behind a
//! bounded queue, `throttle` the sliding-window limits (slots reserved before bcrypt),
//! `mail` the messages and the [`MailSender`] the server plugs in (its providers, one of
//! them running svc code, live in the binary), `webhook` the webhook key format and the
//! HMAC signature check (`service/keys.rs` the key operations).

pub mod jwt;
pub mod mail;
pub mod messages;
pub mod password;
mod service;
pub mod sso;
pub mod throttle;
pub mod webhook;

pub use mail::{Mail, MailSender};

use crate::runtime::Caller;
use crate::users::{
    CheckUsers, Status, UserError, UserRecord, UserStore, UserStoreSupervisor, UserTarget,
    WithUsers,
};
use actix::{Actor, Addr, Arbiter, Context, Handler, Message, ResponseFuture, Supervisor};
use base64::Engine as _;
use jwt::{JwtKeys, JwtSettings};
use lang::host::AnchorId;
use messages::CallerOf;
use service::Service;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a user looked up for a bearer token is trusted before it is read again (a
/// disabled or deleted account loses access within this time when another process
/// changed it; changes made through this process apply at once).
const USER_CACHE_TTL: Duration = Duration::from_secs(30);
/// Cached users at most; the cache is emptied when full.
const USER_CACHE_MAX: usize = 100_000;
/// `Retry-After` of a request the user store could not serve while restarting.
const RESTART_RETRY_SECS: u64 = 1;

/// `[scale.auth]` as the service needs it.
#[derive(Clone, Debug)]
pub struct AuthSettings {
    pub verify_token_ttl_seconds: u64,
    pub reset_token_ttl_seconds: u64,
    pub verify_url_template: String,
    pub reset_url_template: String,
    pub bcrypt_cost: u32,
    pub login_max_failures: u32,
    pub login_max_failures_per_address: u32,
    pub login_failure_window_seconds: u64,
    pub bcrypt_queue_capacity: u32,
    pub register_max_per_address: u32,
    pub register_window_seconds: u64,
}

/// What kind of failure an [`IdentityError`] is; the HTTP layer maps each to its code
/// and status (one exhaustive `match`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// 401 `UNAUTHORIZED`.
    Unauthorized,
    /// 403 `FORBIDDEN`.
    Forbidden,
    /// 404 `NOT_FOUND`.
    NotFound,
    /// 409 `IDENTITY_TAKEN`.
    Taken,
    /// 409 `CONFLICT` (a webhook key name already used).
    Conflict,
    /// 401 `INVALID_SIGNATURE`: a webhook signature missing, malformed or wrong.
    InvalidSignature,
    /// 400 `VALIDATION_ERROR`: a rule of the request is broken (the spec's 400 rows).
    Rule,
    /// 400 `BAD_REQUEST`.
    BadRequest,
    /// 400 `INVALID_TOKEN`: a one-time token unknown, expired or used.
    InvalidToken,
    /// 429 `RATE_LIMITED`, with `retry_after`.
    RateLimited,
    /// 503 `SERVICE_UNAVAILABLE`, with `retry_after` (a full bcrypt queue, a restarting
    /// store): retry.
    Unavailable,
    /// 503 `EMAIL_DISABLED`.
    EmailDisabled,
    /// 502 `EMAIL_SEND_FAILED`.
    EmailSendFailed,
    /// 500 `INTERNAL_ERROR`.
    Internal,
    /// 501 `NOT_IMPLEMENTED`: an SSO provider that is not configured.
    NotImplemented,
    /// 403 `PASSWORD_RESET_REQUIRED`: an admin must change the password first.
    PasswordResetRequired,
    /// 400 `INVALID_STATE`: an SSO callback's `state` unknown, expired, used or forged.
    InvalidState,
    /// 400 `SSO_FAILED`: the provider refused (denied consent, a bad or replayed code,
    /// no e-mail).
    SsoFailed,
    /// 502 `SSO_PROVIDER_ERROR`: the provider could not be reached or answered nonsense.
    ProviderError,
}

/// A refusal or failure of the identity service, with the message the client sees.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct IdentityError {
    pub kind: ErrorKind,
    pub message: String,
    /// Seconds for `Retry-After` (rate limits and 503s).
    pub retry_after: Option<u64>,
}

impl IdentityError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> IdentityError {
        IdentityError {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn unauthorized(message: &str) -> IdentityError {
        IdentityError::new(ErrorKind::Unauthorized, message)
    }

    pub fn rate_limited(message: &str, secs: u64) -> IdentityError {
        IdentityError {
            retry_after: Some(secs.max(1)),
            ..IdentityError::new(ErrorKind::RateLimited, message)
        }
    }

    pub fn unavailable(message: &str, secs: u64) -> IdentityError {
        IdentityError {
            retry_after: Some(secs.max(1)),
            ..IdentityError::new(ErrorKind::Unavailable, message)
        }
    }

    pub fn internal() -> IdentityError {
        IdentityError::new(ErrorKind::Internal, "internal error")
    }

    /// The service or the user store cannot take the request now (stopped, restarting).
    fn restarting() -> IdentityError {
        IdentityError::unavailable(
            "the user store is restarting; try again shortly",
            RESTART_RETRY_SECS,
        )
    }
}

/// The client-facing form of a user-store failure.
impl From<UserError> for IdentityError {
    fn from(e: UserError) -> IdentityError {
        match e {
            UserError::Taken { kind, value } => IdentityError::new(
                ErrorKind::Taken,
                format!("{kind} '{value}' is already taken"),
            ),
            UserError::TypeExists(kind) => IdentityError::new(
                ErrorKind::Rule,
                format!("the account already has a {kind} identity (at most one of each type)"),
            ),
            UserError::NotFound => IdentityError::new(ErrorKind::NotFound, "user not found"),
            UserError::Protected => {
                IdentityError::new(ErrorKind::Forbidden, "the account is protected")
            }
            UserError::SsoTaken(provider) => IdentityError::new(
                ErrorKind::Taken,
                format!(
                    "that {provider} account is linked to another user, or this user has another {provider} account"
                ),
            ),
            UserError::Restarting => IdentityError::restarting(),
            other => {
                tracing::error!(error = %other, "user store failure");
                IdentityError::new(ErrorKind::Internal, "storage failure; see the server log")
            }
        }
    }
}

/// Why the identity service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Config(String),
    #[error("cannot open the user store ({store}): {source}")]
    Open { store: String, source: UserError },
    #[error("cannot create the guest and system accounts: {0}")]
    Accounts(UserError),
}

/// What a bearer token resolves to, cached for [`USER_CACHE_TTL`].
#[derive(Clone, Debug)]
struct CachedUser {
    root: AnchorId,
    active: bool,
    at: Instant,
}

/// State the handle and the service share: the keys and the token cache.
struct Shared {
    jwt: JwtKeys,
    cache: Mutex<HashMap<String, CachedUser>>,
}

impl Shared {
    /// The user id of a valid session token, else 401.
    fn verify(&self, token: &str) -> Result<jwt::Claims, IdentityError> {
        self.jwt.verify(token).map_err(|r| match r {
            jwt::Rejected::Expired => IdentityError::unauthorized("token expired"),
            jwt::Rejected::NotYetValid => {
                IdentityError::unauthorized("invalid token: not valid yet")
            }
            jwt::Rejected::Invalid => IdentityError::unauthorized("invalid token"),
        })
    }

    fn cached(&self, user_id: &str) -> Option<CachedUser> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(user_id)
            .filter(|c| c.at.elapsed() < USER_CACHE_TTL)
            .cloned()
    }

    /// Cache what a token resolves to for `user`.
    fn remember(&self, user: &UserRecord) -> Result<CachedUser, IdentityError> {
        let root = lang::host::parse_id(&user.root_id).ok_or_else(|| {
            tracing::error!(user_id = %user.user_id, "stored root id is not a valid id");
            IdentityError::internal()
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
    fn forget(&self, user_id: &str) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.remove(user_id);
    }
}

/// The identity service actor; see the module docs. Its state is shared with the
/// futures of the requests in flight (none of it is touched across an `await` under a
/// lock).
pub struct IdentityService {
    service: Arc<Service>,
}

impl Actor for IdentityService {
    type Context = Context<Self>;
}

/// Each message runs as its own future on the actor's thread (`ResponseFuture`): the
/// handler returns at once, so a slow bcrypt or mail never holds up other messages.
macro_rules! serve {
    ($($message:ty => $method:ident),* $(,)?) => {$(
        impl Handler<$message> for IdentityService {
            type Result = ResponseFuture<<$message as Message>::Result>;

            fn handle(&mut self, msg: $message, _ctx: &mut Context<Self>) -> Self::Result {
                let service = Arc::clone(&self.service);
                Box::pin(async move { service.$method(msg).await })
            }
        }
    )*};
}

serve! {
    messages::Register => register,
    messages::Login => login,
    messages::Refresh => refresh,
    messages::Me => me,
    messages::ChangePassword => change_password,
    messages::AddIdentity => add_identity,
    messages::SendVerification => send_verification,
    messages::VerifyIdentity => verify_identity,
    messages::ForgotPassword => forgot_password,
    messages::ResetPassword => reset_password,
    messages::CallerOf => caller_of,
    messages::CreateApiKey => create_api_key,
    messages::ListApiKeys => list_api_keys,
    messages::RevokeApiKey => revoke_api_key,
    messages::AuthenticateWebhook => authenticate_webhook,
    messages::GenerateWebhookKey => generate_webhook_key,
    messages::ListWebhookKeys => list_webhook_keys,
    messages::ExtendWebhookKey => extend_webhook_key,
    messages::DeleteWebhookKeys => delete_webhook_keys,
    messages::AuthenticateWalkerKey => authenticate_walker_key,
    messages::AdminLogin => admin_login,
    messages::AdminChangePassword => admin_change_password,
    messages::CheckAdmin => check_admin,
    messages::ListUsers => list_users,
    messages::GetUser => get_user,
    messages::CreateUser => create_user,
    messages::UpdateUser => update_user,
    messages::DeleteUser => delete_user,
    messages::ForcePasswordReset => force_password_reset,
    messages::SsoProviders => sso_providers,
    messages::UnlinkSso => unlink_sso,
    messages::SsoBegin => sso_begin,
    messages::SsoCallback => sso_callback,
}

/// The arbiters of the identity actors, stopped with the last handle.
struct Arbiters(Arbiter, Arbiter);

impl Drop for Arbiters {
    fn drop(&mut self) {
        self.0.stop();
        self.1.stop();
    }
}

/// What other modules hold: sends the service its messages; see the module docs.
#[derive(Clone)]
pub struct IdentityHandle {
    service: Addr<IdentityService>,
    users: Addr<UserStoreSupervisor>,
    shared: Arc<Shared>,
    admin_enabled: bool,
    bootstrap_created: bool,
    /// Where identity storage lives, for the startup line.
    users_backend: Arc<str>,
    _arbiters: Arc<Arbiters>,
}

impl std::fmt::Debug for IdentityHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityHandle")
            .field("jwt", &self.shared.jwt)
            .finish_non_exhaustive()
    }
}

/// Everything the service starts with.
pub struct IdentityConfig {
    pub jwt: JwtSettings,
    pub auth: AuthSettings,
    /// `None` = e-mail disabled.
    pub mailer: Option<Arc<dyn MailSender>>,
    /// `[scale.webhook]`.
    pub webhook: webhook::WebhookSettings,
    /// The admin settings and the bootstrap admin.
    pub admin: AdminSettings,
    /// `[scale.sso]`.
    pub sso: sso::SsoSettings,
}

/// The bootstrap admin created on first start (spec "Authentication" 12).
#[derive(Clone)]
pub struct BootstrapAdmin {
    pub username: String,
    pub email: Option<String>,
    /// The first password, asked for only when the admin does not exist yet (a
    /// generated one is then written somewhere the operator can read it).
    pub password: Arc<dyn Fn() -> Result<String, String> + Send + Sync>,
}

impl std::fmt::Debug for BootstrapAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootstrapAdmin")
            .field("username", &self.username)
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}

/// `[scale.admin]` as the service needs it.
#[derive(Clone, Debug)]
pub struct AdminSettings {
    /// false: no bootstrap, every `/admin*` route is 404.
    pub enabled: bool,
    /// `None` = create no bootstrap admin.
    pub bootstrap: Option<BootstrapAdmin>,
    /// Lifetime of an `/admin/login` token.
    pub session_expiry_hours: u32,
    /// The bootstrap admin must change its password before any admin action.
    pub require_password_reset: bool,
    /// Largest `limit` of `GET /admin/users`.
    pub max_page_size: usize,
}

impl Default for AdminSettings {
    fn default() -> AdminSettings {
        AdminSettings {
            enabled: true,
            bootstrap: None,
            session_expiry_hours: 24,
            require_password_reset: true,
            max_page_size: 500,
        }
    }
}

impl IdentityHandle {
    /// Open the user store in `store_path`, create the guest (on `shared_root`) and
    /// system accounts, and start the user-store supervisor and the identity service,
    /// each on an arbiter of its own. Blocks (startup only); call inside an actix system.
    pub fn start(
        config: IdentityConfig,
        store_path: &Path,
        shared_root: AnchorId,
    ) -> Result<IdentityHandle, StartError> {
        IdentityHandle::start_on(
            config,
            &UserTarget::Sqlite(store_path.to_path_buf()),
            shared_root,
        )
    }

    /// [`IdentityHandle::start`] with identity storage in `target` (the document
    /// database when the graph is there: replicas sharing it share their users).
    pub fn start_on(
        config: IdentityConfig,
        target: &UserTarget,
        shared_root: AnchorId,
    ) -> Result<IdentityHandle, StartError> {
        let jwt = JwtKeys::new(&config.jwt)?;
        let mut users = UserStore::open_target(target).map_err(|source| StartError::Open {
            store: target.describe(),
            source,
        })?;
        users
            .ensure_system_accounts(&lang::host::format_id(shared_root), new_user_id, || {
                lang::host::format_id(new_root_id())
            })
            .map_err(StartError::Accounts)?;
        let wanted = match (config.admin.enabled, config.admin.bootstrap.as_ref()) {
            (true, Some(b)) => users
                .get(crate::users::BOOTSTRAP_ADMIN_ID)
                .map_err(StartError::Accounts)?
                .is_none()
                .then_some(b),
            _ => None,
        };
        // The first password is settled now (a generated one is written to its file, and
        // a failure stops the start); its bcrypt hash is not: at the default cost it
        // takes ~250 ms, longer than the rest of start-up. It is the user-store
        // supervisor's first message instead (below), so every later user-store
        // operation, an admin login included, is served after the admin exists.
        let bootstrap = match wanted {
            Some(b) => Some((
                b.username.clone(),
                b.email.clone(),
                (b.password)().map_err(StartError::Config)?,
            )),
            None => None,
        };
        let bootstrap_created = bootstrap.is_some();
        let oidc = sso::OidcClient::new(&config.sso);
        let shared = Arc::new(Shared {
            jwt,
            cache: Mutex::new(HashMap::new()),
        });
        let users_arbiter = Arbiter::new();
        let supervised = target.clone();
        let users = Supervisor::start_in_arbiter(&users_arbiter.handle(), move |_| {
            UserStoreSupervisor::new(supervised, users)
        });
        if let Some((username, email, password)) = bootstrap {
            let cost = config.auth.bcrypt_cost;
            let reset = config.admin.require_password_reset;
            users.do_send(WithUsers::new(move |store: &mut UserStore| {
                let hash = match bcrypt::hash(&password, cost) {
                    Ok(hash) => hash,
                    Err(e) => {
                        tracing::error!("cannot hash the bootstrap admin's password: {e}");
                        return Ok(false);
                    }
                };
                let created = store.ensure_bootstrap_admin(
                    &username,
                    email.as_deref(),
                    &hash,
                    &lang::host::format_id(new_root_id()),
                    reset,
                );
                if let Err(e) = &created {
                    tracing::error!("cannot create the bootstrap admin: {e}");
                }
                created
            }));
        }
        let service = Arc::new(Service::new(
            users.clone(),
            Arc::clone(&shared),
            config.auth,
            config.mailer,
            config.webhook,
            config.admin.clone(),
            config.sso,
            oidc,
        ));
        let service_arbiter = Arbiter::new();
        let service = IdentityService::start_in_arbiter(&service_arbiter.handle(), move |_| {
            IdentityService { service }
        });
        Ok(IdentityHandle {
            service,
            users,
            shared,
            admin_enabled: config.admin.enabled,
            bootstrap_created,
            users_backend: target.describe().into(),
            _arbiters: Arc::new(Arbiters(service_arbiter, users_arbiter)),
        })
    }

    /// `[scale.admin] enabled`: the `/admin*` routes answer.
    pub fn admin_enabled(&self) -> bool {
        self.admin_enabled
    }

    /// Where users, identities, tokens and keys are stored (for the startup line).
    pub fn users_backend(&self) -> &str {
        &self.users_backend
    }

    /// The bootstrap admin was created by this start.
    pub fn bootstrap_created(&self) -> bool {
        self.bootstrap_created
    }

    /// Send `msg` to the service and await its reply (503 when the service is gone).
    pub async fn ask<M, R>(&self, msg: M) -> Result<R, IdentityError>
    where
        M: Message<Result = Result<R, IdentityError>> + Send + 'static,
        R: Send + 'static,
        IdentityService: Handler<M>,
    {
        self.service
            .send(msg)
            .await
            .unwrap_or_else(|_| Err(IdentityError::restarting()))
    }

    /// The user id of a valid session token, else 401 (expired, not yet valid, forged,
    /// typed).
    pub fn verify(&self, token: &str) -> Result<String, IdentityError> {
        Ok(self.shared.verify(token)?.user_id)
    }

    /// The caller a verified token's user runs as: the user's id and root. Tokens of
    /// deleted or disabled accounts are 401. Answered from the cache when it can be,
    /// else by the service.
    pub async fn caller(&self, user_id: String) -> Result<Caller, IdentityError> {
        let entry = match self.shared.cached(&user_id) {
            Some(entry) => entry,
            None => return self.ask(CallerOf { user_id }).await,
        };
        caller(user_id, &entry)
    }

    /// Probe the user store through its supervisor (for `/healthz/ready`).
    pub async fn users_health(&self) -> Result<(), String> {
        match self.users.send(CheckUsers).await {
            Ok(health) => health,
            Err(e) => Err(format!("user store supervisor unavailable: {e}")),
        }
    }
}

fn caller(user_id: String, entry: &CachedUser) -> Result<Caller, IdentityError> {
    if !entry.active {
        return Err(IdentityError::unauthorized("the account is disabled"));
    }
    Ok(Caller {
        user_id: Some(user_id),
        root: Some(entry.root),
        authorization: None,
    })
}

/// `n` bytes from the operating system's secure random source.
///
/// Read from the kernel's generator (`/dev/urandom`, opened once), not through aws-lc's
/// `rand::fill`: aws-lc seeds its own DRBG tree from a CPU-jitter entropy collector the
/// first time it is used in a process, which costs ~50 ms of CPU, and the first caller
/// is `svc start` itself (the JWT secret, the system accounts), so it was most of the
/// server's start-up time. aws-lc's generator is the fallback when the device cannot be
/// read.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    use std::io::Read as _;
    static URANDOM: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    let mut bytes = [0u8; N];
    let device = URANDOM.get_or_init(|| std::fs::File::open("/dev/urandom").ok());
    if let Some(mut file) = device.as_ref()
        && file.read_exact(&mut bytes).is_ok()
    {
        return bytes;
    }
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

#[cfg(test)]
mod tests;
