//! The typed messages of the [`IdentityService`](super::IdentityService), one per
//! operation, named as commands, and their replies. Requests arrive parsed and checked
//! for shape (the HTTP layer's extractors); the service applies the rules that need
//! the store, the throttles, bcrypt or the mailer. Every reply is
//! `Result<_, IdentityError>`.

use super::IdentityError;
use crate::runtime::Caller;
use crate::users::{IdentityRecord, IdentityType, Role, Status, UserFilter, UserPage, UserRecord};
use actix::Message;
use serde_json::{Map, Value as Json};

/// `POST /user/register`: identities checked for shape, at most one per type, none
/// reserved; a non-empty password within bcrypt's bytes; a bounded profile.
#[derive(Debug, Message)]
#[rtype(result = "Result<Registered, IdentityError>")]
pub struct Register {
    pub identities: Vec<IdentityRecord>,
    pub password: String,
    pub profile: Map<String, Json>,
    /// The client address registrations are counted against.
    pub address: String,
}

#[derive(Debug)]
pub struct Registered {
    pub user_id: String,
}

/// `POST /user/login`.
#[derive(Debug, Message)]
#[rtype(result = "Result<LoggedIn, IdentityError>")]
pub struct Login {
    pub kind: IdentityType,
    /// The identity value as given (normalized by the service).
    pub value: String,
    pub password: String,
    /// The client address failed logins are counted against.
    pub address: String,
}

#[derive(Debug)]
pub struct LoggedIn {
    pub user_id: String,
    pub token: String,
    pub root_id: String,
    pub role: Role,
    /// An admin created the account or forced a reset: the password should change.
    pub requires_password_reset: bool,
}

/// `POST /user/refresh-token`: a fresh session token for a still-active account.
#[derive(Debug, Message)]
#[rtype(result = "Result<Refreshed, IdentityError>")]
pub struct Refresh {
    /// The token, without a `Bearer ` prefix.
    pub token: String,
}

#[derive(Debug)]
pub struct Refreshed {
    pub token: String,
}

/// `GET /user/me`: the bearer's account (404 when gone, 401 when disabled).
#[derive(Debug, Message)]
#[rtype(result = "Result<UserRecord, IdentityError>")]
pub struct Me {
    pub user_id: String,
}

/// `PUT /user/password`.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), IdentityError>")]
pub struct ChangePassword {
    pub user_id: String,
    pub current_password: String,
    /// Non-empty, within bcrypt's bytes.
    pub new_password: String,
}

/// `POST /user/add-identity`: a checked identity, not reserved.
#[derive(Debug, Message)]
#[rtype(result = "Result<IdentityAdded, IdentityError>")]
pub struct AddIdentity {
    pub user_id: String,
    pub identity: IdentityRecord,
}

#[derive(Debug)]
pub struct IdentityAdded {
    pub verified: bool,
}

/// `POST /user/send-verification` for an e-mail value (non-empty).
#[derive(Debug, Message)]
#[rtype(result = "Result<VerificationSent, IdentityError>")]
pub struct SendVerification {
    pub user_id: String,
    pub email: String,
}

#[derive(Debug, PartialEq, Eq)]
pub enum VerificationSent {
    /// A token was issued and the mail accepted by the mail server.
    Sent,
    /// Nothing to do.
    AlreadyVerified,
}

/// `POST /user/verify-identity`: redeem a verification token.
#[derive(Debug, Message)]
#[rtype(result = "Result<IdentityVerified, IdentityError>")]
pub struct VerifyIdentity {
    pub token: String,
}

#[derive(Debug)]
pub struct IdentityVerified {
    /// The e-mail as the user wrote it.
    pub identity: String,
}

/// `POST /user/forgot-password` for an e-mail value: always `Ok`; the lookup, the token
/// and the mail happen after the answer.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), IdentityError>")]
pub struct ForgotPassword {
    pub email: String,
}

/// `POST /user/reset-password`.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), IdentityError>")]
pub struct ResetPassword {
    pub token: String,
    /// Non-empty, within bcrypt's bytes.
    pub new_password: String,
}

/// The caller a verified session token's user runs as (generated endpoints), read
/// from the store and cached; 401 for a deleted or disabled account.
#[derive(Debug, Message)]
#[rtype(result = "Result<Caller, IdentityError>")]
pub struct CallerOf {
    pub user_id: String,
}

// Webhook keys (spec "API key endpoints", "Webhook endpoint", "Alternate webhook
// flavor"; decisions.md "Webhooks"). The service owns the rules; `webhook.rs` the key
// format and the signature check.

/// An API key as listed: never the key itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKeyInfo {
    pub api_key_id: String,
    pub name: String,
    pub created_at: String,
    /// ISO 8601; `None` = permanent.
    pub expires_at: Option<String>,
    /// Neither revoked nor expired.
    pub active: bool,
}

/// `POST /api-key/create`: a fresh key for the signed-in user.
#[derive(Debug, Message)]
#[rtype(result = "Result<ApiKeyCreated, IdentityError>")]
pub struct CreateApiKey {
    pub user_id: String,
    /// Non-empty, bounded (checked by the HTTP layer).
    pub name: String,
    /// Days until expiry; `None` = `[scale.webhook] api_key_expiry_days`; 0 = permanent.
    pub expiry_days: Option<u32>,
    /// `None` = every webhook walker.
    pub allowed_walkers: Option<Vec<String>>,
}

#[derive(Debug)]
pub struct ApiKeyCreated {
    /// The key: shown once, stored only as its SHA-256.
    pub api_key: String,
    pub info: ApiKeyInfo,
}

/// `GET /api-key/list`.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<ApiKeyInfo>, IdentityError>")]
pub struct ListApiKeys {
    pub user_id: String,
}

/// `DELETE /api-key/{api_key_id}`: 404 unless it is the user's key.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), IdentityError>")]
pub struct RevokeApiKey {
    pub user_id: String,
    pub api_key_id: String,
}

/// `POST /webhook/<walker>`: check the key, the signature of the raw body and the
/// walker; the caller the walker runs as (the key owner, on the owner's root).
#[derive(Debug, Message)]
#[rtype(result = "Result<Caller, IdentityError>")]
pub struct AuthenticateWebhook {
    pub api_key: String,
    /// The signature header's value, if sent.
    pub signature: Option<String>,
    /// `X-Webhook-Timestamp`, if sent (checked when the replay guard is on).
    pub timestamp: Option<String>,
    pub body: Vec<u8>,
    pub walker: String,
}

/// A key of the alternate flavor as listed (`key` is only a hint: its first characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookKeyInfo {
    pub id: String,
    pub name: String,
    pub root_id: String,
    pub walkers: Vec<String>,
    pub nodes: Vec<String>,
    /// ISO 8601.
    pub expiration: String,
    pub key: String,
}

/// `POST /webhook/generate-key`.
#[derive(Debug, Message)]
#[rtype(result = "Result<WebhookKeyGenerated, IdentityError>")]
pub struct GenerateWebhookKey {
    pub user_id: String,
    pub name: String,
    pub walkers: Vec<String>,
    pub nodes: Vec<String>,
    /// Lifetime in seconds (positive, bounded by the HTTP layer).
    pub lifetime_secs: i64,
}

#[derive(Debug)]
pub struct WebhookKeyGenerated {
    pub id: String,
    pub name: String,
    /// The key: shown once, stored only as its SHA-256.
    pub key: String,
}

/// `GET /webhook`.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<WebhookKeyInfo>, IdentityError>")]
pub struct ListWebhookKeys {
    pub user_id: String,
}

/// `PATCH /webhook/extend/{id}`: 404 unless it is the user's key.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), IdentityError>")]
pub struct ExtendWebhookKey {
    pub user_id: String,
    pub id: String,
    pub lifetime_secs: i64,
}

/// `DELETE /webhook/delete`: the user's keys among `ids`; how many were deleted.
#[derive(Debug, Message)]
#[rtype(result = "Result<usize, IdentityError>")]
pub struct DeleteWebhookKeys {
    pub user_id: String,
    pub ids: Vec<String>,
}

/// `POST /webhook/walker/<walker>`: check an alternate-flavor key against the walker and
/// the start node (`None` = the key's root); the caller the walker runs as.
#[derive(Debug, Message)]
#[rtype(result = "Result<Caller, IdentityError>")]
pub struct AuthenticateWalkerKey {
    pub key: String,
    pub walker: String,
    /// The start node's id (32 hex), when the call names one.
    pub node: Option<String>,
}

// Admin (spec "Admin endpoints", decisions.md "Admin"). Users are named by `{username}`
// in paths: the service resolves it as a username, else an e-mail, else a user id.

/// `POST /admin/login`: an admin's password login; the token lives
/// `session_expiry_hours`.
#[derive(Debug, Message)]
#[rtype(result = "Result<AdminLoggedIn, IdentityError>")]
pub struct AdminLogin {
    pub username: String,
    pub password: String,
    pub address: String,
}

#[derive(Debug)]
pub struct AdminLoggedIn {
    pub user_id: String,
    pub username: String,
    pub token: String,
    pub requires_password_reset: bool,
}

/// `POST /admin/reset-password`: an admin (also one that must change its password)
/// changes its own password; a fresh admin token comes back.
#[derive(Debug, Message)]
#[rtype(result = "Result<String, IdentityError>")]
pub struct AdminChangePassword {
    pub user_id: String,
    pub current_password: String,
    pub new_password: String,
}

/// May this token's user act as an admin now? 403 `FORBIDDEN` for anyone else, 403
/// `PASSWORD_RESET_REQUIRED` for an admin that must change its password first.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), IdentityError>")]
pub struct CheckAdmin {
    pub user_id: String,
}

/// `GET /admin/users`.
#[derive(Debug, Message)]
#[rtype(result = "Result<UserPage, IdentityError>")]
pub struct ListUsers {
    pub filter: UserFilter,
    /// Checked against `max_page_size` by the service.
    pub limit: usize,
    pub offset: usize,
}

/// `GET /admin/users/{username}`, `GET /admin/sso/users/{username}/accounts`.
#[derive(Debug, Message)]
#[rtype(result = "Result<UserRecord, IdentityError>")]
pub struct GetUser {
    pub name: String,
}

/// `POST /admin/users`: a password account that must change its password at first use.
#[derive(Debug, Message)]
#[rtype(result = "Result<UserRecord, IdentityError>")]
pub struct CreateUser {
    /// Checked for shape, at most one per type, none reserved.
    pub identities: Vec<IdentityRecord>,
    pub password: String,
    pub role: Role,
    pub requires_password_reset: bool,
}

/// `PUT /admin/users/{username}`: any of role, status and the reset flag.
#[derive(Debug, Message)]
#[rtype(result = "Result<UserRecord, IdentityError>")]
pub struct UpdateUser {
    pub acting: String,
    pub name: String,
    pub role: Option<Role>,
    pub status: Option<Status>,
    pub requires_password_reset: Option<bool>,
}

/// `DELETE /admin/users/{username}`: protected accounts and the acting admin refuse.
#[derive(Debug, Message)]
#[rtype(result = "Result<UserRecord, IdentityError>")]
pub struct DeleteUser {
    pub acting: String,
    pub name: String,
}

/// `POST /admin/users/{username}/force-password-reset`: the password must change; a
/// reset mail goes to a verified recovery e-mail when mail is configured.
#[derive(Debug, Message)]
#[rtype(result = "Result<ForcedReset, IdentityError>")]
pub struct ForcePasswordReset {
    pub name: String,
}

#[derive(Debug)]
pub struct ForcedReset {
    pub user: UserRecord,
    pub email_sent: bool,
}

/// `GET /admin/sso/providers`.
#[derive(Debug, Message)]
#[rtype(result = "Result<SsoProviderList, IdentityError>")]
pub struct SsoProviders;

#[derive(Debug)]
pub struct SsoProviderList {
    pub providers: Vec<SsoProviderInfo>,
    pub host: String,
    pub client_auth_callback_url: String,
}

#[derive(Debug)]
pub struct SsoProviderInfo {
    pub platform: String,
    pub configured: bool,
    pub issuer: String,
    pub client_id_set: bool,
    pub client_secret_set: bool,
}

/// `DELETE /admin/sso/users/{username}/accounts/{platform}`: the account stays.
#[derive(Debug, Message)]
#[rtype(result = "Result<UserRecord, IdentityError>")]
pub struct UnlinkSso {
    pub name: String,
    pub platform: String,
}

// SSO (spec "SSO endpoints").

/// `GET /sso/<platform>/login` and `/register`: the provider URL to redirect to.
#[derive(Debug, Message)]
#[rtype(result = "Result<String, IdentityError>")]
pub struct SsoBegin {
    pub platform: String,
    /// `login` or `register`.
    pub operation: &'static str,
    /// This server's callback URL for the platform.
    pub redirect_uri: String,
}

/// `GET|POST /sso/<platform>/callback`.
#[derive(Debug, Message)]
#[rtype(result = "Result<SsoSignedIn, IdentityError>")]
pub struct SsoCallback {
    pub platform: String,
    pub state: Option<String>,
    pub code: Option<String>,
    /// The provider's `error` and `error_description`, when it refused.
    pub error: Option<String>,
    pub error_description: Option<String>,
}

#[derive(Debug)]
pub struct SsoSignedIn {
    pub user_id: String,
    pub token: String,
    pub root_id: String,
    pub role: Role,
    pub platform: String,
    pub operation: String,
    pub email: String,
    /// A new account was created.
    pub created: bool,
    /// The external account was linked to an existing account by this sign-in.
    pub linked: bool,
}
