//! SSO in the user store (spec "User document": `sso` identities; "SSO endpoints"):
//!
//! - `user_sso_accounts(user_id, provider, external_id, email, linked_at)`:
//!   `UNIQUE(provider, external_id)` links an external account to one user only,
//!   `UNIQUE(user_id, provider)` allows one account per provider per user.
//! - `sso_pending(state_hash, provider, operation, code_verifier, nonce, redirect_uri,
//!   expires_at)`:
//!   the `state` of a login in flight (stored as its SHA-256 hex) with the PKCE verifier,
//!   the nonce and the redirect URI; taken (deleted) by the first callback that presents it, so a replayed
//!   callback finds nothing. In the store file, so every replica sharing it accepts the
//!   callback.

use super::{NewUser, insert_user};
use super::{SqliteUsers, UserError, UserRecord, iso8601_now, unix_now};
use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS user_sso_accounts (
    user_id     TEXT NOT NULL,
    provider    TEXT NOT NULL,
    external_id TEXT NOT NULL,       -- the provider's subject (`sub`)
    email       TEXT NOT NULL,       -- as the provider gave it at the last sign-in
    linked_at   TEXT NOT NULL,
    UNIQUE (provider, external_id),
    UNIQUE (user_id, provider)
);
CREATE TABLE IF NOT EXISTS sso_pending (
    state_hash    TEXT PRIMARY KEY,  -- sha-256 hex of the state
    provider      TEXT NOT NULL,
    operation     TEXT NOT NULL,     -- login | register
    code_verifier TEXT NOT NULL,
    nonce         TEXT NOT NULL,
    redirect_uri  TEXT NOT NULL,     -- sent again with the code exchange
    expires_at    INTEGER NOT NULL   -- unix seconds
) WITHOUT ROWID;
";

/// An external account linked to a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsoAccount {
    /// The platform name (`google`, `apple`, `github`).
    pub provider: String,
    /// The provider's subject; never shown by `/user/me`.
    pub external_id: String,
    pub email: String,
    pub linked_at: String,
}

/// A login in flight, as stored for its `state`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingLogin {
    pub provider: String,
    pub operation: String,
    pub code_verifier: String,
    pub nonce: String,
    pub redirect_uri: String,
}

pub(super) fn accounts_of(conn: &Connection, user_id: &str) -> rusqlite::Result<Vec<SsoAccount>> {
    let mut stmt = conn.prepare_cached(
        "SELECT provider, external_id, email, linked_at FROM user_sso_accounts \
         WHERE user_id = ?1 ORDER BY rowid",
    )?;
    let rows = stmt.query_map([user_id], |r| {
        Ok(SsoAccount {
            provider: r.get(0)?,
            external_id: r.get(1)?,
            email: r.get(2)?,
            linked_at: r.get(3)?,
        })
    })?;
    rows.collect()
}

impl SqliteUsers {
    /// Store a login in flight; `false` (nothing stored) when `max_pending` unexpired
    /// logins are already waiting. Expired ones are purged first.
    pub fn put_pending_login(
        &mut self,
        state_hash: &str,
        login: &PendingLogin,
        ttl_secs: i64,
        max_pending: u64,
    ) -> Result<bool, UserError> {
        let now = unix_now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM sso_pending WHERE expires_at <= ?1", [now])?;
        let waiting: i64 = tx.query_row("SELECT count(*) FROM sso_pending", [], |r| r.get(0))?;
        if u64::try_from(waiting).unwrap_or(0) >= max_pending {
            return Ok(false);
        }
        tx.execute(
            "INSERT INTO sso_pending (state_hash, provider, operation, code_verifier, nonce, \
             redirect_uri, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                state_hash,
                login.provider,
                login.operation,
                login.code_verifier,
                login.nonce,
                login.redirect_uri,
                now.saturating_add(ttl_secs)
            ],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// Take (delete) the unexpired login of `state_hash`; `None` when unknown, expired or
    /// already taken.
    pub fn take_pending_login(
        &mut self,
        state_hash: &str,
    ) -> Result<Option<PendingLogin>, UserError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let found = tx
            .query_row(
                "SELECT provider, operation, code_verifier, nonce, redirect_uri FROM sso_pending \
                 WHERE state_hash = ?1 AND expires_at > ?2",
                params![state_hash, unix_now()],
                |r| {
                    Ok(PendingLogin {
                        provider: r.get(0)?,
                        operation: r.get(1)?,
                        code_verifier: r.get(2)?,
                        nonce: r.get(3)?,
                        redirect_uri: r.get(4)?,
                    })
                },
            )
            .optional()?;
        tx.execute(
            "DELETE FROM sso_pending WHERE state_hash = ?1",
            [state_hash],
        )?;
        tx.commit()?;
        Ok(found)
    }

    /// The user an external account is linked to.
    pub fn by_sso(
        &mut self,
        provider: &str,
        external_id: &str,
    ) -> Result<Option<UserRecord>, UserError> {
        let user_id: Option<String> = self
            .conn
            .query_row(
                "SELECT user_id FROM user_sso_accounts WHERE provider = ?1 AND external_id = ?2",
                params![provider, external_id],
                |r| r.get(0),
            )
            .optional()?;
        match user_id {
            Some(id) => self.get(&id),
            None => Ok(None),
        }
    }

    /// Link an external account to a user, or refresh the link's e-mail when it is
    /// there already. `Taken` when the account is linked to another user, `TypeExists`
    /// when the user has another account of that provider.
    pub fn link_sso(&mut self, user_id: &str, account: &SsoAccount) -> Result<(), UserError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        link(&tx, user_id, account)?;
        tx.commit()?;
        Ok(())
    }

    /// Create a user with one linked external account, atomically.
    pub fn create_linked(&mut self, new: NewUser, account: &SsoAccount) -> Result<(), UserError> {
        let now = iso8601_now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        insert_user(&tx, &new, &now)?;
        link(&tx, &new.user_id, account)?;
        tx.commit()?;
        Ok(())
    }

    /// Remove a user's link to `provider`; `false` when there was none. The account
    /// itself stays.
    pub fn unlink_sso(&mut self, user_id: &str, provider: &str) -> Result<bool, UserError> {
        let n = self.conn.execute(
            "DELETE FROM user_sso_accounts WHERE user_id = ?1 AND provider = ?2",
            params![user_id, provider],
        )?;
        if n > 0 {
            self.conn.execute(
                "UPDATE users SET updated_at = ?2 WHERE user_id = ?1",
                params![user_id, iso8601_now()],
            )?;
        }
        Ok(n > 0)
    }
}

fn link(conn: &Connection, user_id: &str, a: &SsoAccount) -> Result<(), UserError> {
    let owner: Option<String> = conn
        .query_row(
            "SELECT user_id FROM user_sso_accounts WHERE provider = ?1 AND external_id = ?2",
            params![a.provider, a.external_id],
            |r| r.get(0),
        )
        .optional()?;
    match owner {
        Some(o) if o == user_id => {
            conn.execute(
                "UPDATE user_sso_accounts SET email = ?3 WHERE provider = ?1 AND external_id = ?2",
                params![a.provider, a.external_id, a.email],
            )?;
            return Ok(());
        }
        Some(_) => {
            return Err(UserError::SsoTaken(a.provider.clone()));
        }
        None => {}
    }
    let has: Option<i64> = conn
        .query_row(
            "SELECT 1 FROM user_sso_accounts WHERE user_id = ?1 AND provider = ?2",
            params![user_id, a.provider],
            |r| r.get(0),
        )
        .optional()?;
    if has.is_some() {
        return Err(UserError::SsoTaken(a.provider.clone()));
    }
    conn.execute(
        "INSERT INTO user_sso_accounts (user_id, provider, external_id, email, linked_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![user_id, a.provider, a.external_id, a.email, a.linked_at],
    )?;
    conn.execute(
        "UPDATE users SET updated_at = ?2 WHERE user_id = ?1",
        params![user_id, iso8601_now()],
    )?;
    Ok(())
}
