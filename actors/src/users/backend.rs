//! The one interface of identity storage ([`UserBackend`]) and the store the identity
//! service holds ([`UserStore`]): the embedded SQLite backend ([`SqliteUsers`], the
//! default) or the document-database backend ([`DocUsers`], when `DOCDB_URI` /
//! `[scale.database] docdb_uri` is set, the same setting that chooses the graph tier).
//!
//! Every operation has one meaning on both backends, whichever replica runs it: a value
//! is unique across users after normalization (a unique index decides, never a read
//! before the write), a one-time token is consumed by one conditional update, and a
//! change of a user document is a compare-and-set on its revision.

use super::docdb::DocUsers;
use super::{
    ApiKeyRecord, IdentityRecord, IdentityType, NewUser, PendingLogin, Role, SqliteUsers,
    SsoAccount, Status, TokenGrant, TokenKind, UserError, UserFilter, UserPage, UserRecord,
    WebhookKeyRecord,
};
use crate::docstore::DocTarget;
use serde_json::{Map, Value as Json};
use std::path::PathBuf;

/// Declares [`UserBackend`] and implements it for [`SqliteUsers`] by its inherent
/// methods of the same names, and for [`DocUsers`] likewise.
macro_rules! user_backend {
    ($( $(#[$doc:meta])* fn $name:ident(&mut self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty; )*) => {
        /// Identity storage: users with their identities, credentials and SSO links,
        /// one-time tokens, SSO logins in flight, and webhook keys of both flavors.
        pub trait UserBackend: Send {
            $( $(#[$doc])* fn $name(&mut self $(, $arg: $ty)*) -> $ret; )*
        }

        impl UserBackend for SqliteUsers {
            $( fn $name(&mut self $(, $arg: $ty)*) -> $ret { SqliteUsers::$name(self $(, $arg)*) } )*
        }

        impl UserBackend for DocUsers {
            $( fn $name(&mut self $(, $arg: $ty)*) -> $ret { DocUsers::$name(self $(, $arg)*) } )*
        }
    };
}

user_backend! {
    /// A cheap query that fails when the connection is unusable.
    fn check_health(&mut self) -> Result<(), UserError>;
    /// Store a new user; `Taken` when an identity value is already used.
    fn create(&mut self, new: NewUser) -> Result<UserRecord, UserError>;
    /// The user owning the identity `(kind, normalized value)`.
    fn by_identity(&mut self, kind: IdentityType, normalized: &str) -> Result<Option<UserRecord>, UserError>;
    /// A user by id.
    fn get(&mut self, user_id: &str) -> Result<Option<UserRecord>, UserError>;
    /// Replace the password hash and revoke outstanding reset tokens.
    fn set_password(&mut self, user_id: &str, hash: &str) -> Result<(), UserError>;
    /// Replace the password hash if it is still `old`; `false` when it changed meanwhile.
    fn replace_password_hash(&mut self, user_id: &str, old: Option<&str>, new: &str) -> Result<bool, UserError>;
    fn set_status(&mut self, user_id: &str, status: Status) -> Result<(), UserError>;
    /// Delete an account with its identities, tokens and links; protected ones refuse.
    fn delete(&mut self, user_id: &str) -> Result<(), UserError>;
    fn add_identity(&mut self, user_id: &str, identity: &IdentityRecord) -> Result<(), UserError>;
    fn issue_token(&mut self, kind: TokenKind, token_hash: &str, grant: &TokenGrant, ttl_secs: i64, revoke_outstanding: bool) -> Result<(), UserError>;
    fn revoke_token(&mut self, token_hash: &str) -> Result<(), UserError>;
    fn peek_token(&mut self, kind: TokenKind, token_hash: &str) -> Result<Option<TokenGrant>, UserError>;
    /// Consume a verification token (once) and mark its e-mail verified.
    fn redeem_verify(&mut self, token_hash: &str) -> Result<Option<IdentityRecord>, UserError>;
    /// Consume a reset token (once), set the password, revoke the other reset tokens.
    fn redeem_reset(&mut self, token_hash: &str, new_hash: &str) -> Result<Option<String>, UserError>;
    fn create_api_key(&mut self, rec: &ApiKeyRecord, key_hash: &str) -> Result<(), UserError>;
    fn api_keys_of(&mut self, user_id: &str) -> Result<Vec<ApiKeyRecord>, UserError>;
    fn count_active_api_keys(&mut self, user_id: &str) -> Result<usize, UserError>;
    fn revoke_api_key(&mut self, user_id: &str, api_key_id: &str) -> Result<bool, UserError>;
    fn api_key_by_hash(&mut self, key_hash: &str) -> Result<Option<ApiKeyRecord>, UserError>;
    fn create_webhook_key(&mut self, rec: &WebhookKeyRecord, key_hash: &str) -> Result<bool, UserError>;
    fn webhook_keys_of(&mut self, user_id: &str) -> Result<Vec<WebhookKeyRecord>, UserError>;
    fn count_webhook_keys(&mut self, user_id: &str) -> Result<usize, UserError>;
    fn extend_webhook_key(&mut self, user_id: &str, id: &str, secs: i64) -> Result<Option<i64>, UserError>;
    fn delete_webhook_keys(&mut self, user_id: &str, ids: &[String]) -> Result<usize, UserError>;
    fn webhook_key_by_hash(&mut self, key_hash: &str) -> Result<Option<WebhookKeyRecord>, UserError>;
    fn put_pending_login(&mut self, state_hash: &str, login: &PendingLogin, ttl_secs: i64, max_pending: u64) -> Result<bool, UserError>;
    fn take_pending_login(&mut self, state_hash: &str) -> Result<Option<PendingLogin>, UserError>;
    fn by_sso(&mut self, provider: &str, external_id: &str) -> Result<Option<UserRecord>, UserError>;
    fn link_sso(&mut self, user_id: &str, account: &SsoAccount) -> Result<(), UserError>;
    fn create_linked(&mut self, new: NewUser, account: &SsoAccount) -> Result<(), UserError>;
    fn unlink_sso(&mut self, user_id: &str, provider: &str) -> Result<bool, UserError>;
    fn list(&mut self, filter: &UserFilter, limit: usize, offset: usize) -> Result<UserPage, UserError>;
    fn set_role(&mut self, user_id: &str, role: Role) -> Result<(), UserError>;
    fn set_requires_password_reset(&mut self, user_id: &str, required: bool) -> Result<(), UserError>;
    fn set_profile(&mut self, user_id: &str, profile: &Map<String, Json>) -> Result<(), UserError>;
}

/// Where identity storage lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserTarget {
    /// The embedded store file (the anchor store's).
    Sqlite(PathBuf),
    /// The document database of the graph tier.
    Doc(DocTarget),
}

impl UserTarget {
    /// The document database when `docdb_uri` is set, else the store file.
    pub fn choose(store_path: PathBuf, docdb_uri: Option<&str>) -> UserTarget {
        match docdb_uri {
            Some(uri) if !uri.trim().is_empty() => UserTarget::Doc(DocTarget::new(uri.trim())),
            _ => UserTarget::Sqlite(store_path),
        }
    }

    /// For the startup line and logs (passwords redacted).
    pub fn describe(&self) -> String {
        match self {
            UserTarget::Sqlite(path) => format!("embedded SQLite at {}", path.display()),
            UserTarget::Doc(t) => format!("document database at {}", t.redacted()),
        }
    }
}

/// The identity store of one process: one backend behind [`UserBackend`]. Methods of
/// the trait are called on it directly (`Deref`).
pub struct UserStore {
    backend: Box<dyn UserBackend>,
}

impl std::fmt::Debug for UserStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserStore").finish_non_exhaustive()
    }
}

impl UserStore {
    /// The embedded backend over the store file at `path`.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<UserStore, UserError> {
        Ok(UserStore {
            backend: Box::new(SqliteUsers::open(path)?),
        })
    }

    /// Open the backend `target` names (the document one creates its indexes and
    /// migrates legacy user records first).
    pub fn open_target(target: &UserTarget) -> Result<UserStore, UserError> {
        match target {
            UserTarget::Sqlite(path) => UserStore::open(path),
            UserTarget::Doc(t) => Ok(UserStore {
                backend: Box::new(DocUsers::open(t)?),
            }),
        }
    }
}

impl std::ops::Deref for UserStore {
    type Target = dyn UserBackend;

    fn deref(&self) -> &Self::Target {
        &*self.backend
    }
}

impl std::ops::DerefMut for UserStore {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut *self.backend
    }
}
