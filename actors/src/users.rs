//! The user store of the identity layer (spec "User document"): users, their
//! identities and password credential, and the one-time verification and reset tokens,
//! in the same SQLite file as the anchor store, over a connection of its own.
//!
//! Tables (created on open, next to `anchors`):
//!
//! - `users(user_id, status, role, root_id, password_hash, profile, created_at,
//!   updated_at)`: `user_id` a UUID v4, `password_hash` the bcrypt hash of the `password`
//!   credential (NULL = no password: the guest and system accounts, and later SSO-only
//!   users), `profile` JSON object text, timestamps ISO 8601 UTC.
//! - `user_identities(id, user_id, type, value_raw, value_normalized, verified,
//!   is_recovery)`: `UNIQUE(type, value_normalized)` makes a value unique across users
//!   after normalization, `UNIQUE(user_id, type)` allows one identity per type per user.
//! - `user_tokens(token_hash, kind, user_id, identity, expires_at, state)`: one-time
//!   tokens stored only as the SHA-256 hex of the raw token; `state` is `issued`,
//!   `consumed` or `revoked`; expired rows are purged a day after expiry.
//! - `webhook_api_keys` and `webhook_keys`: the webhook keys of both flavors, stored as
//!   the SHA-256 hex of the key (`keys.rs`).
//! - `user_sso_accounts` (one per user and provider, an external account linked to one
//!   user only) and `sso_pending` (the `state` of an SSO login in flight, single use):
//!   `sso.rs`.
//! - `users.requires_password_reset` (added to older stores on open): the bootstrap
//!   admin and accounts an admin created or forced must change their password; any
//!   password change clears it (`admin.rs` has the admin operations).
//!
//! Passwords are hashed by the caller (on a blocking pool); this module only stores the
//! hash. Every multi-row change runs in one IMMEDIATE transaction.
//!
//! In the server the store is owned by the [`UserStoreSupervisor`] actor (`supervisor.rs`):
//! nobody else holds the connection.

mod admin;
mod backend;
mod docdb;
mod keys;
mod sso;
mod supervisor;

pub use admin::{UserFilter, UserPage};
pub use backend::{UserBackend, UserStore, UserTarget};
pub use docdb::{DocUsers, MigrationReport};
pub use keys::{ApiKeyRecord, WebhookKeyRecord};
pub use sso::{PendingLogin, SsoAccount};
#[cfg(test)]
pub(crate) use supervisor::DropConnection;
pub use supervisor::{CheckUsers, UserStoreSupervisor, WithUsers};

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};
use serde_json::{Map, Value as Json};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The guest account's username: anonymous callers of public endpoints act as it, on the
/// shared root.
pub const GUEST_USERNAME: &str = "__guest__";
/// The internal `system` account's username.
pub const SYSTEM_USERNAME: &str = "__system__";
/// The bootstrap admin's fixed id (protected; created by the admin issue).
pub const BOOTSTRAP_ADMIN_ID: &str = "00000000-0000-0000-0000-000000000000";

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Expired token rows are kept this long (seconds) before they are purged.
const TOKEN_PURGE_GRACE: i64 = 86_400;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS users (
    user_id       TEXT PRIMARY KEY,
    status        TEXT NOT NULL,      -- active | disabled
    role          TEXT NOT NULL,      -- admin | system | user
    root_id       TEXT NOT NULL,      -- 32 lowercase hex
    password_hash TEXT,               -- bcrypt; NULL = no password credential
    profile       TEXT NOT NULL,      -- json object
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS user_identities (
    id               INTEGER PRIMARY KEY,
    user_id          TEXT NOT NULL,
    type             TEXT NOT NULL,   -- username | email
    value_raw        TEXT NOT NULL,
    value_normalized TEXT NOT NULL,
    verified         INTEGER NOT NULL,
    is_recovery      INTEGER NOT NULL,
    UNIQUE (type, value_normalized),
    UNIQUE (user_id, type)
);
CREATE TABLE IF NOT EXISTS user_tokens (
    token_hash TEXT PRIMARY KEY,      -- sha-256 hex of the raw token
    kind       TEXT NOT NULL,         -- verify | reset
    user_id    TEXT NOT NULL,
    identity   TEXT NOT NULL,         -- normalized e-mail the token is for
    expires_at INTEGER NOT NULL,      -- unix seconds
    state      TEXT NOT NULL          -- issued | consumed | revoked
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS user_tokens_by_user ON user_tokens (user_id, kind, state);
";

#[derive(Debug, thiserror::Error)]
pub enum UserError {
    #[error("cannot create store directory or file {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The value is already an identity of another account (or of this one).
    #[error("{kind} '{value}' is already taken")]
    Taken { kind: IdentityType, value: String },
    /// The account already has an identity of this type.
    #[error("the account already has a {0} identity")]
    TypeExists(IdentityType),
    #[error("no such user")]
    NotFound,
    /// The external account is linked to another user, or the user already has another
    /// account of this provider.
    #[error("another {0} account is linked already")]
    SsoTaken(String),
    #[error("the account is protected and cannot be deleted")]
    Protected,
    #[error("stored user data is corrupt: {0}")]
    Corrupt(String),
    /// The document database failed or could not be reached.
    #[error("document database: {0}")]
    Doc(String),
    /// The connection failed and the store is being re-opened: retry shortly.
    #[error("the user store is restarting")]
    Restarting,
}

/// `username` or `email` (SSO identities come with the SSO issue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IdentityType {
    Username,
    Email,
}

impl IdentityType {
    pub fn as_str(self) -> &'static str {
        match self {
            IdentityType::Username => "username",
            IdentityType::Email => "email",
        }
    }

    pub fn parse(text: &str) -> Option<IdentityType> {
        match text {
            "username" => Some(IdentityType::Username),
            "email" => Some(IdentityType::Email),
            _ => None,
        }
    }
}

impl std::fmt::Display for IdentityType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Admin,
    System,
    User,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::System => "system",
            Role::User => "user",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "admin" => Some(Role::Admin),
            "system" => Some(Role::System),
            "user" => Some(Role::User),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Active,
    Disabled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Disabled => "disabled",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        match text {
            "active" => Some(Status::Active),
            "disabled" => Some(Status::Disabled),
            _ => None,
        }
    }
}

/// The normalized form of an identity value: stripped and lowercased.
pub fn normalize(value: &str) -> String {
    value.trim().to_lowercase()
}

/// One identity of a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityRecord {
    pub kind: IdentityType,
    pub value_raw: String,
    pub value_normalized: String,
    pub verified: bool,
    pub is_recovery: bool,
}

impl IdentityRecord {
    /// A new identity with the spec's defaults: a username is verified on creation; an
    /// e-mail is created unverified and is the recovery identity unless told otherwise.
    pub fn new(kind: IdentityType, value: &str, is_recovery: Option<bool>) -> IdentityRecord {
        IdentityRecord {
            kind,
            value_raw: value.trim().to_string(),
            value_normalized: normalize(value),
            verified: kind == IdentityType::Username,
            is_recovery: kind == IdentityType::Email && is_recovery.unwrap_or(true),
        }
    }
}

/// A stored user.
#[derive(Clone, Debug, PartialEq)]
pub struct UserRecord {
    pub user_id: String,
    pub status: Status,
    pub role: Role,
    /// The user's graph root (32 hex).
    pub root_id: String,
    pub password_hash: Option<String>,
    pub profile: Map<String, Json>,
    /// In creation order.
    pub identities: Vec<IdentityRecord>,
    /// Linked external (SSO) accounts, in link order.
    pub sso: Vec<SsoAccount>,
    /// The password must be changed (bootstrap admin, admin-created or forced).
    pub requires_password_reset: bool,
    pub created_at: String,
    pub updated_at: String,
}

impl UserRecord {
    /// The guest, any `system` account and the bootstrap admin cannot be deleted.
    pub fn is_protected(&self) -> bool {
        self.role == Role::System
            || self.user_id == BOOTSTRAP_ADMIN_ID
            || self
                .identities
                .iter()
                .any(|i| i.kind == IdentityType::Username && i.value_normalized == GUEST_USERNAME)
    }

    pub fn identity(&self, kind: IdentityType) -> Option<&IdentityRecord> {
        self.identities.iter().find(|i| i.kind == kind)
    }
}

/// What a registration stores.
#[derive(Clone, Debug)]
pub struct NewUser {
    pub user_id: String,
    pub role: Role,
    pub root_id: String,
    pub password_hash: Option<String>,
    pub profile: Map<String, Json>,
    pub identities: Vec<IdentityRecord>,
}

impl NewUser {
    /// The record of this user just stored at `now`: active, no SSO links yet.
    pub(crate) fn into_record(self, now: String) -> UserRecord {
        UserRecord {
            user_id: self.user_id,
            status: Status::Active,
            role: self.role,
            root_id: self.root_id,
            password_hash: self.password_hash,
            profile: self.profile,
            identities: self.identities,
            sso: Vec::new(),
            requires_password_reset: false,
            created_at: now.clone(),
            updated_at: now,
        }
    }
}

/// A one-time token's purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    Verify,
    Reset,
}

impl TokenKind {
    fn as_str(self) -> &'static str {
        match self {
            TokenKind::Verify => "verify",
            TokenKind::Reset => "reset",
        }
    }
}

/// An outstanding (issued, unexpired) token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenGrant {
    pub user_id: String,
    /// The normalized e-mail the token was sent to.
    pub identity: String,
}

/// The user store over one SQLite file (the anchor store's).
pub struct SqliteUsers {
    conn: Connection,
}

impl std::fmt::Debug for SqliteUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteUsers").finish_non_exhaustive()
    }
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The current time as ISO 8601 UTC with milliseconds (`2026-01-02T03:04:05.678Z`).
pub fn iso8601_now() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    iso8601(
        i64::try_from(now.as_secs()).unwrap_or(0),
        now.subsec_millis(),
    )
}

/// `secs` since the epoch as ISO 8601 UTC.
pub fn iso8601(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn corrupt(what: impl Into<String>) -> UserError {
    UserError::Corrupt(what.into())
}

fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
    )
}

impl SqliteUsers {
    /// Open (or create) the user tables in the store file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteUsers, UserError> {
        let path = path.as_ref();
        // The same file as the anchor store: created 0600 (it holds password hashes).
        crate::store::prepare_private_file(path).map_err(|source| UserError::Dir {
            path: path.to_path_buf(),
            source,
        })?;
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.execute_batch("PRAGMA synchronous = NORMAL;")?;
        conn.set_prepared_statement_cache_capacity(32);
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(SCHEMA)?;
        tx.execute_batch(keys::SCHEMA)?;
        tx.execute_batch(sso::SCHEMA)?;
        admin::migrate(&tx)?;
        tx.commit()?;
        Ok(SqliteUsers { conn })
    }

    /// A cheap query that fails when the connection or the file is unusable.
    pub fn check_health(&mut self) -> Result<(), UserError> {
        let _: i64 = self
            .conn
            .query_row("SELECT count(*) FROM users WHERE 0", [], |r| r.get(0))?;
        Ok(())
    }

    /// Store a new user; `Taken` when an identity value is already used.
    pub fn create(&mut self, new: NewUser) -> Result<UserRecord, UserError> {
        let now = iso8601_now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        insert_user(&tx, &new, &now)?;
        tx.commit()?;
        Ok(new.into_record(now))
    }

    /// The user owning the identity `(kind, normalized value)`.
    pub fn by_identity(
        &mut self,
        kind: IdentityType,
        normalized: &str,
    ) -> Result<Option<UserRecord>, UserError> {
        let user_id: Option<String> = self
            .conn
            .prepare_cached(
                "SELECT user_id FROM user_identities WHERE type = ?1 AND value_normalized = ?2",
            )?
            .query_row(params![kind.as_str(), normalized], |r| r.get(0))
            .optional()?;
        match user_id {
            Some(id) => self.get(&id),
            None => Ok(None),
        }
    }

    /// A user by id, with identities.
    pub fn get(&mut self, user_id: &str) -> Result<Option<UserRecord>, UserError> {
        let row = self
            .conn
            .prepare_cached(
                "SELECT status, role, root_id, password_hash, profile, created_at, updated_at, \
                 requires_password_reset FROM users WHERE user_id = ?1",
            )?
            .query_row([user_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, bool>(7)?,
                ))
            })
            .optional()?;
        let Some((
            status,
            role,
            root_id,
            password_hash,
            profile,
            created_at,
            updated_at,
            requires_password_reset,
        )) = row
        else {
            return Ok(None);
        };
        let status = Status::parse(&status).ok_or_else(|| corrupt(format!("status {status}")))?;
        let role = Role::parse(&role).ok_or_else(|| corrupt(format!("role {role}")))?;
        let profile = match serde_json::from_str::<Json>(&profile) {
            Ok(Json::Object(m)) => m,
            _ => return Err(corrupt(format!("profile of {user_id}"))),
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT type, value_raw, value_normalized, verified, is_recovery \
             FROM user_identities WHERE user_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([user_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, bool>(3)?,
                r.get::<_, bool>(4)?,
            ))
        })?;
        let mut identities = Vec::new();
        for row in rows {
            let (kind, value_raw, value_normalized, verified, is_recovery) = row?;
            // Types a later build added are skipped, not fatal.
            let Some(kind) = IdentityType::parse(&kind) else {
                continue;
            };
            identities.push(IdentityRecord {
                kind,
                value_raw,
                value_normalized,
                verified,
                is_recovery,
            });
        }
        drop(stmt);
        let sso = sso::accounts_of(&self.conn, user_id)?;
        Ok(Some(UserRecord {
            user_id: user_id.to_string(),
            status,
            role,
            root_id,
            password_hash,
            profile,
            identities,
            sso,
            requires_password_reset,
            created_at,
            updated_at,
        }))
    }

    /// Replace the password hash; outstanding reset tokens of the user are revoked (a
    /// changed password invalidates reset links sent before).
    pub fn set_password(&mut self, user_id: &str, hash: &str) -> Result<(), UserError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let n = tx.execute(
            "UPDATE users SET password_hash = ?2, updated_at = ?3, requires_password_reset = 0 \
             WHERE user_id = ?1",
            params![user_id, hash, iso8601_now()],
        )?;
        if n == 0 {
            return Err(UserError::NotFound);
        }
        revoke(&tx, user_id, TokenKind::Reset, None)?;
        tx.commit()?;
        Ok(())
    }

    /// Replace the password hash if it is still `old` (a rehash after login: no token is
    /// revoked); `false` when the password changed meanwhile.
    pub fn replace_password_hash(
        &mut self,
        user_id: &str,
        old: Option<&str>,
        new: &str,
    ) -> Result<bool, UserError> {
        let n = self.conn.execute(
            "UPDATE users SET password_hash = ?3, updated_at = ?4 \
             WHERE user_id = ?1 AND password_hash IS ?2",
            params![user_id, old, new, iso8601_now()],
        )?;
        Ok(n == 1)
    }

    /// Set an account's status (admin operations; kept here so they share the store).
    pub fn set_status(&mut self, user_id: &str, status: Status) -> Result<(), UserError> {
        let n = self.conn.execute(
            "UPDATE users SET status = ?2, updated_at = ?3 WHERE user_id = ?1",
            params![user_id, status.as_str(), iso8601_now()],
        )?;
        if n == 0 {
            return Err(UserError::NotFound);
        }
        Ok(())
    }

    /// Delete an account with its identities and tokens; protected accounts refuse.
    pub fn delete(&mut self, user_id: &str) -> Result<(), UserError> {
        let user = self.get(user_id)?.ok_or(UserError::NotFound)?;
        if user.is_protected() {
            return Err(UserError::Protected);
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM user_identities WHERE user_id = ?1", [user_id])?;
        tx.execute("DELETE FROM user_tokens WHERE user_id = ?1", [user_id])?;
        tx.execute(
            "DELETE FROM user_sso_accounts WHERE user_id = ?1",
            [user_id],
        )?;
        tx.execute("DELETE FROM users WHERE user_id = ?1", [user_id])?;
        tx.commit()?;
        Ok(())
    }

    /// Add an identity to an existing user.
    pub fn add_identity(
        &mut self,
        user_id: &str,
        identity: &IdentityRecord,
    ) -> Result<(), UserError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let exists: Option<i64> = tx
            .query_row("SELECT 1 FROM users WHERE user_id = ?1", [user_id], |r| {
                r.get(0)
            })
            .optional()?;
        if exists.is_none() {
            return Err(UserError::NotFound);
        }
        let owner: Option<String> = tx
            .query_row(
                "SELECT user_id FROM user_identities WHERE type = ?1 AND value_normalized = ?2",
                params![identity.kind.as_str(), identity.value_normalized],
                |r| r.get(0),
            )
            .optional()?;
        if owner.is_some() {
            return Err(UserError::Taken {
                kind: identity.kind,
                value: identity.value_raw.clone(),
            });
        }
        let has_type: Option<i64> = tx
            .query_row(
                "SELECT 1 FROM user_identities WHERE user_id = ?1 AND type = ?2",
                params![user_id, identity.kind.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        if has_type.is_some() {
            return Err(UserError::TypeExists(identity.kind));
        }
        insert_identity(&tx, user_id, identity)?;
        tx.execute(
            "UPDATE users SET updated_at = ?2 WHERE user_id = ?1",
            params![user_id, iso8601_now()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Store a freshly issued token (its SHA-256 hex) valid until `now + ttl`; with
    /// `revoke_outstanding`, the user's other issued tokens of this kind are revoked.
    pub fn issue_token(
        &mut self,
        kind: TokenKind,
        token_hash: &str,
        grant: &TokenGrant,
        ttl_secs: i64,
        revoke_outstanding: bool,
    ) -> Result<(), UserError> {
        let now = unix_now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "DELETE FROM user_tokens WHERE expires_at < ?1",
            [now - TOKEN_PURGE_GRACE],
        )?;
        if revoke_outstanding {
            revoke(&tx, &grant.user_id, kind, None)?;
        }
        tx.execute(
            "INSERT INTO user_tokens (token_hash, kind, user_id, identity, expires_at, state) \
             VALUES (?1, ?2, ?3, ?4, ?5, 'issued')",
            params![
                token_hash,
                kind.as_str(),
                grant.user_id,
                grant.identity,
                now.saturating_add(ttl_secs)
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Revoke one issued token (a mail that could not be sent).
    pub fn revoke_token(&mut self, token_hash: &str) -> Result<(), UserError> {
        self.conn.execute(
            "UPDATE user_tokens SET state = 'revoked' WHERE token_hash = ?1 AND state = 'issued'",
            [token_hash],
        )?;
        Ok(())
    }

    /// The grant of an issued, unexpired token, without consuming it.
    pub fn peek_token(
        &mut self,
        kind: TokenKind,
        token_hash: &str,
    ) -> Result<Option<TokenGrant>, UserError> {
        Ok(live_token(&self.conn, kind, token_hash, unix_now())?)
    }

    /// Redeem a verification token: consume it and mark its e-mail identity verified.
    /// `None` when the token is unknown, expired, already used or revoked, or its
    /// identity is no longer on the account. Returns the identity as stored.
    pub fn redeem_verify(&mut self, token_hash: &str) -> Result<Option<IdentityRecord>, UserError> {
        let now = unix_now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let Some(grant) = consume_token(&tx, TokenKind::Verify, token_hash, now)? else {
            return Ok(None);
        };
        let n = tx.execute(
            "UPDATE user_identities SET verified = 1 \
             WHERE user_id = ?1 AND type = 'email' AND value_normalized = ?2",
            params![grant.user_id, grant.identity],
        )?;
        if n == 0 {
            tx.commit()?;
            return Ok(None);
        }
        tx.execute(
            "UPDATE users SET updated_at = ?2 WHERE user_id = ?1",
            params![grant.user_id, iso8601_now()],
        )?;
        tx.commit()?;
        let user = self.get(&grant.user_id)?;
        Ok(user.and_then(|u| u.identity(IdentityType::Email).cloned()))
    }

    /// Redeem a reset token: consume it, set the password hash and revoke the user's
    /// other outstanding reset tokens, atomically. `None` when the token is not live.
    pub fn redeem_reset(
        &mut self,
        token_hash: &str,
        new_hash: &str,
    ) -> Result<Option<String>, UserError> {
        let now = unix_now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let Some(grant) = consume_token(&tx, TokenKind::Reset, token_hash, now)? else {
            return Ok(None);
        };
        let n = tx.execute(
            "UPDATE users SET password_hash = ?2, updated_at = ?3, requires_password_reset = 0 \
             WHERE user_id = ?1",
            params![grant.user_id, new_hash, iso8601_now()],
        )?;
        if n == 0 {
            tx.commit()?;
            return Ok(None);
        }
        revoke(&tx, &grant.user_id, TokenKind::Reset, Some(token_hash))?;
        tx.commit()?;
        Ok(Some(grant.user_id))
    }
}

impl UserStore {
    /// Create the guest account (on `shared_root`) and the `system` account if they are
    /// missing; `new_root` gives the system account's root.
    pub fn ensure_system_accounts(
        &mut self,
        shared_root: &str,
        new_user_id: impl Fn() -> String,
        new_root: impl Fn() -> String,
    ) -> Result<(), UserError> {
        for (name, role, root) in [
            (GUEST_USERNAME, Role::User, shared_root.to_string()),
            (SYSTEM_USERNAME, Role::System, new_root()),
        ] {
            if self.by_identity(IdentityType::Username, name)?.is_some() {
                continue;
            }
            let created = self.create(NewUser {
                user_id: new_user_id(),
                role,
                root_id: root,
                password_hash: None,
                profile: Map::new(),
                identities: vec![IdentityRecord::new(IdentityType::Username, name, None)],
            });
            match created {
                // Another process created it between the check and the insert.
                Ok(_) | Err(UserError::Taken { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Insert a user row and its identities (inside the caller's transaction); `Taken` when
/// an identity value is already used.
fn insert_user(conn: &Connection, new: &NewUser, now: &str) -> Result<(), UserError> {
    let profile = serde_json::to_string(&new.profile).map_err(|e| corrupt(e.to_string()))?;
    for i in &new.identities {
        let taken: Option<String> = conn
            .query_row(
                "SELECT user_id FROM user_identities WHERE type = ?1 AND value_normalized = ?2",
                params![i.kind.as_str(), i.value_normalized],
                |r| r.get(0),
            )
            .optional()?;
        if taken.is_some() {
            return Err(UserError::Taken {
                kind: i.kind,
                value: i.value_raw.clone(),
            });
        }
    }
    conn.execute(
        "INSERT INTO users (user_id, status, role, root_id, password_hash, profile, \
         created_at, updated_at) VALUES (?1, 'active', ?2, ?3, ?4, ?5, ?6, ?6)",
        params![
            new.user_id,
            new.role.as_str(),
            new.root_id,
            new.password_hash,
            profile,
            now
        ],
    )?;
    for i in &new.identities {
        insert_identity(conn, &new.user_id, i)?;
    }
    Ok(())
}

fn insert_identity(conn: &Connection, user_id: &str, i: &IdentityRecord) -> Result<(), UserError> {
    let inserted = conn.execute(
        "INSERT INTO user_identities (user_id, type, value_raw, value_normalized, verified, \
         is_recovery) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            user_id,
            i.kind.as_str(),
            i.value_raw,
            i.value_normalized,
            i.verified,
            i.is_recovery
        ],
    );
    match inserted {
        Ok(_) => Ok(()),
        Err(e) if is_unique_violation(&e) => Err(UserError::Taken {
            kind: i.kind,
            value: i.value_raw.clone(),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Take a live (issued, unexpired) token of `kind`: mark it consumed and return what it
/// grants; `None` when it is unknown, used, revoked or expired.
fn consume_token(
    conn: &Connection,
    kind: TokenKind,
    token_hash: &str,
    now: i64,
) -> rusqlite::Result<Option<TokenGrant>> {
    let grant = live_token(conn, kind, token_hash, now)?;
    if grant.is_some() {
        conn.execute(
            "UPDATE user_tokens SET state = 'consumed' WHERE token_hash = ?1",
            [token_hash],
        )?;
    }
    Ok(grant)
}

fn live_token(
    conn: &Connection,
    kind: TokenKind,
    token_hash: &str,
    now: i64,
) -> rusqlite::Result<Option<TokenGrant>> {
    conn.prepare_cached(
        "SELECT user_id, identity FROM user_tokens \
         WHERE token_hash = ?1 AND kind = ?2 AND state = 'issued' AND expires_at > ?3",
    )?
    .query_row(params![token_hash, kind.as_str(), now], |r| {
        Ok(TokenGrant {
            user_id: r.get(0)?,
            identity: r.get(1)?,
        })
    })
    .optional()
}

/// Revoke the user's issued tokens of `kind`, except `keep`.
fn revoke(
    conn: &Connection,
    user_id: &str,
    kind: TokenKind,
    keep: Option<&str>,
) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE user_tokens SET state = 'revoked' \
         WHERE user_id = ?1 AND kind = ?2 AND state = 'issued' AND token_hash <> ?3",
        params![user_id, kind.as_str(), keep.unwrap_or("")],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Temp(PathBuf);

    impl Temp {
        fn new() -> Temp {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "svc-users-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            Temp(dir)
        }

        fn store(&self) -> UserStore {
            UserStore::open(self.0.join("store.db")).expect("open user store")
        }
    }

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn alice() -> NewUser {
        NewUser {
            user_id: "u-alice".into(),
            role: Role::User,
            root_id: "a".repeat(32),
            password_hash: Some("hash".into()),
            profile: Map::new(),
            identities: vec![
                IdentityRecord::new(IdentityType::Username, "Alice", None),
                IdentityRecord::new(IdentityType::Email, " Alice@Example.COM ", None),
            ],
        }
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(iso8601(1_767_312_245, 999), "2026-01-02T00:04:05.999Z");
    }

    #[test]
    fn identities_are_normalized_and_unique() {
        let t = Temp::new();
        let mut s = t.store();
        let u = s.create(alice()).expect("created");
        assert_eq!(u.identities[1].value_raw, "Alice@Example.COM");
        assert!(u.identities[0].verified && !u.identities[0].is_recovery);
        assert!(!u.identities[1].verified && u.identities[1].is_recovery);
        let found = s
            .by_identity(IdentityType::Email, &normalize("ALICE@example.com"))
            .expect("query")
            .expect("found");
        assert_eq!(found, u);
        let mut bob = alice();
        bob.user_id = "u-bob".into();
        bob.identities = vec![IdentityRecord::new(IdentityType::Username, "ALICE ", None)];
        assert!(matches!(s.create(bob), Err(UserError::Taken { .. })));
        assert!(s.get("u-bob").expect("query").is_none());
        let email = IdentityRecord::new(IdentityType::Email, "b@x.io", Some(false));
        assert!(matches!(
            s.add_identity("u-alice", &email),
            Err(UserError::TypeExists(IdentityType::Email))
        ));
        assert!(matches!(
            s.add_identity("nobody", &email),
            Err(UserError::NotFound)
        ));
    }

    #[test]
    fn system_accounts_are_created_once_and_protected() {
        let t = Temp::new();
        let mut s = t.store();
        let ids = AtomicUsize::new(0);
        let next = || format!("id-{}", ids.fetch_add(1, Ordering::Relaxed));
        s.ensure_system_accounts(&"0".repeat(32), next, || "f".repeat(32))
            .expect("bootstrap");
        s.ensure_system_accounts(&"0".repeat(32), next, || "f".repeat(32))
            .expect("idempotent");
        let guest = s
            .by_identity(IdentityType::Username, GUEST_USERNAME)
            .expect("query")
            .expect("guest");
        assert_eq!(guest.root_id, "0".repeat(32));
        assert!(guest.is_protected() && guest.password_hash.is_none());
        let system = s
            .by_identity(IdentityType::Username, SYSTEM_USERNAME)
            .expect("query")
            .expect("system");
        assert_eq!(system.role, Role::System);
        assert!(matches!(
            s.delete(&system.user_id),
            Err(UserError::Protected)
        ));
        assert!(matches!(
            s.delete(&guest.user_id),
            Err(UserError::Protected)
        ));
        s.create(alice()).expect("created");
        s.delete("u-alice").expect("deleted");
        assert!(s.get("u-alice").expect("query").is_none());
    }

    #[test]
    fn tokens_are_single_use_and_revocable() {
        let t = Temp::new();
        let mut s = t.store();
        s.create(alice()).expect("created");
        let grant = TokenGrant {
            user_id: "u-alice".into(),
            identity: "alice@example.com".into(),
        };
        s.issue_token(TokenKind::Verify, "v1", &grant, 60, true)
            .expect("issued");
        s.issue_token(TokenKind::Verify, "v2", &grant, 60, true)
            .expect("issued");
        assert_eq!(s.redeem_verify("v1").expect("query"), None, "revoked");
        let id = s.redeem_verify("v2").expect("query").expect("verified");
        assert!(id.verified);
        assert_eq!(s.redeem_verify("v2").expect("query"), None, "single use");

        for h in ["r1", "r2", "r3"] {
            s.issue_token(TokenKind::Reset, h, &grant, 60, false)
                .expect("issued");
        }
        s.issue_token(TokenKind::Reset, "r0", &grant, -1, false)
            .expect("issued already expired");
        assert_eq!(s.peek_token(TokenKind::Reset, "r0").expect("query"), None);
        assert_eq!(
            s.peek_token(TokenKind::Verify, "r1").expect("query"),
            None,
            "kinds do not mix"
        );
        assert_eq!(
            s.redeem_reset("r1", "new").expect("query").as_deref(),
            Some("u-alice")
        );
        assert_eq!(s.redeem_reset("r2", "x").expect("query"), None);
        let u = s.get("u-alice").expect("query").expect("user");
        assert_eq!(u.password_hash.as_deref(), Some("new"));
        s.issue_token(TokenKind::Reset, "r4", &grant, 60, false)
            .expect("issued");
        s.set_password("u-alice", "newer").expect("set");
        assert_eq!(s.redeem_reset("r4", "x").expect("query"), None);
        assert!(
            !s.replace_password_hash("u-alice", Some("stale"), "x")
                .expect("ran")
        );
        assert!(
            s.replace_password_hash("u-alice", Some("newer"), "bcrypt")
                .expect("ran")
        );
        let u = s.get("u-alice").expect("query").expect("user");
        assert_eq!(u.password_hash.as_deref(), Some("bcrypt"));
    }
}
