//! Webhook keys in the user store: the API keys of the current webhook flavor
//! (`webhook_api_keys`, the spec's collection name) and the keys of the alternate flavor
//! (`webhook_keys`). Only the SHA-256 hex of a key is stored; a key is looked up by that
//! hash. The tables are created with `CREATE TABLE IF NOT EXISTS` on open, so a store
//! written by an older build gains them on its next start.
//!
//! Times: `created_at` ISO 8601 text, `expires_at` Unix seconds (`NULL` = permanent for
//! API keys).

use super::{SqliteUsers, UserError, iso8601, unix_now};
use rusqlite::{OptionalExtension as _, Row, params};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS webhook_api_keys (
    api_key_id      TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL,
    name            TEXT NOT NULL,
    key_hash        TEXT NOT NULL UNIQUE,   -- sha-256 hex of the key
    allowed_walkers TEXT,                   -- json list; NULL = every webhook walker
    created_at      TEXT NOT NULL,
    expires_at      INTEGER,                -- unix seconds; NULL = permanent
    revoked         INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS webhook_api_keys_by_user ON webhook_api_keys (user_id);
CREATE TABLE IF NOT EXISTS webhook_keys (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    name       TEXT NOT NULL,
    root_id    TEXT NOT NULL,
    walkers    TEXT NOT NULL,               -- json list; [] = every walker
    nodes      TEXT NOT NULL,               -- json list; [] = every node
    key_hash   TEXT NOT NULL UNIQUE,        -- sha-256 hex of the key
    key_hint   TEXT NOT NULL,               -- the key's first characters, for lists
    created_at TEXT NOT NULL,
    expires_at INTEGER NOT NULL,            -- unix seconds
    UNIQUE (user_id, name)
) WITHOUT ROWID;
";

/// One API key of the current flavor (never the key itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub api_key_id: String,
    pub user_id: String,
    pub name: String,
    /// `None` = every webhook walker.
    pub allowed_walkers: Option<Vec<String>>,
    pub created_at: String,
    /// Unix seconds; `None` = permanent.
    pub expires_at: Option<i64>,
    pub revoked: bool,
}

impl ApiKeyRecord {
    /// Not revoked and not expired at `now`.
    pub fn active(&self, now: i64) -> bool {
        !self.revoked && self.expires_at.is_none_or(|t| now < t)
    }

    /// `expires_at` as ISO 8601, `None` when permanent.
    pub fn expires_at_iso(&self) -> Option<String> {
        self.expires_at.map(|t| iso8601(t, 0))
    }
}

/// One key of the alternate flavor (never the key itself: `key_hint` is its prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookKeyRecord {
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub root_id: String,
    /// Empty = every webhook walker.
    pub walkers: Vec<String>,
    /// Empty = every node.
    pub nodes: Vec<String>,
    pub key_hint: String,
    pub created_at: String,
    /// Unix seconds.
    pub expires_at: i64,
}

fn list_to_text(list: &[String]) -> String {
    serde_json::to_string(list).unwrap_or_else(|_| "[]".into())
}

fn text_to_list(text: &str) -> Result<Vec<String>, UserError> {
    serde_json::from_str(text).map_err(|e| UserError::Corrupt(format!("stored key list: {e}")))
}

fn api_key_row(r: &Row<'_>) -> rusqlite::Result<(ApiKeyRecord, Option<String>)> {
    Ok((
        ApiKeyRecord {
            api_key_id: r.get(0)?,
            user_id: r.get(1)?,
            name: r.get(2)?,
            allowed_walkers: None,
            created_at: r.get(4)?,
            expires_at: r.get(5)?,
            revoked: r.get::<_, i64>(6)? != 0,
        },
        r.get(3)?,
    ))
}

fn api_key_of(
    (mut rec, walkers): (ApiKeyRecord, Option<String>),
) -> Result<ApiKeyRecord, UserError> {
    rec.allowed_walkers = walkers.as_deref().map(text_to_list).transpose()?;
    Ok(rec)
}

const API_KEY_COLUMNS: &str =
    "api_key_id, user_id, name, allowed_walkers, created_at, expires_at, revoked";

fn webhook_key_row(r: &Row<'_>) -> rusqlite::Result<(WebhookKeyRecord, String, String)> {
    Ok((
        WebhookKeyRecord {
            id: r.get(0)?,
            user_id: r.get(1)?,
            name: r.get(2)?,
            root_id: r.get(3)?,
            walkers: Vec::new(),
            nodes: Vec::new(),
            key_hint: r.get(6)?,
            created_at: r.get(7)?,
            expires_at: r.get(8)?,
        },
        r.get(4)?,
        r.get(5)?,
    ))
}

fn webhook_key_of(
    (mut rec, walkers, nodes): (WebhookKeyRecord, String, String),
) -> Result<WebhookKeyRecord, UserError> {
    rec.walkers = text_to_list(&walkers)?;
    rec.nodes = text_to_list(&nodes)?;
    Ok(rec)
}

const WEBHOOK_KEY_COLUMNS: &str =
    "id, user_id, name, root_id, walkers, nodes, key_hint, created_at, expires_at";

impl SqliteUsers {
    /// Store a new API key (by its hash).
    pub fn create_api_key(&mut self, rec: &ApiKeyRecord, key_hash: &str) -> Result<(), UserError> {
        let walkers = rec.allowed_walkers.as_deref().map(list_to_text);
        self.conn.execute(
            "INSERT INTO webhook_api_keys (api_key_id, user_id, name, key_hash, allowed_walkers, \
             created_at, expires_at, revoked) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0)",
            params![
                rec.api_key_id,
                rec.user_id,
                rec.name,
                key_hash,
                walkers,
                rec.created_at,
                rec.expires_at
            ],
        )?;
        Ok(())
    }

    /// The user's API keys, oldest first (revoked and expired ones included).
    pub fn api_keys_of(&mut self, user_id: &str) -> Result<Vec<ApiKeyRecord>, UserError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {API_KEY_COLUMNS} FROM webhook_api_keys WHERE user_id = ?1 \
             ORDER BY created_at, api_key_id"
        ))?;
        let rows = stmt
            .query_map([user_id], api_key_row)?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(api_key_of).collect()
    }

    /// Keys of the user that are neither revoked nor expired.
    pub fn count_active_api_keys(&mut self, user_id: &str) -> Result<usize, UserError> {
        let n: i64 = self.conn.query_row(
            "SELECT count(*) FROM webhook_api_keys WHERE user_id = ?1 AND revoked = 0 \
             AND (expires_at IS NULL OR expires_at > ?2)",
            params![user_id, unix_now()],
            |r| r.get(0),
        )?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Revoke the user's key `api_key_id`; `false` when the user has no such key.
    pub fn revoke_api_key(&mut self, user_id: &str, api_key_id: &str) -> Result<bool, UserError> {
        let known: Option<i64> = self
            .conn
            .query_row(
                "SELECT revoked FROM webhook_api_keys WHERE api_key_id = ?1 AND user_id = ?2",
                params![api_key_id, user_id],
                |r| r.get(0),
            )
            .optional()?;
        if known.is_none() {
            return Ok(false);
        }
        self.conn.execute(
            "UPDATE webhook_api_keys SET revoked = 1 WHERE api_key_id = ?1 AND user_id = ?2",
            params![api_key_id, user_id],
        )?;
        Ok(true)
    }

    /// The API key with this hash, whatever its state.
    pub fn api_key_by_hash(&mut self, key_hash: &str) -> Result<Option<ApiKeyRecord>, UserError> {
        let row = self
            .conn
            .prepare_cached(&format!(
                "SELECT {API_KEY_COLUMNS} FROM webhook_api_keys WHERE key_hash = ?1"
            ))?
            .query_row([key_hash], api_key_row)
            .optional()?;
        row.map(api_key_of).transpose()
    }

    /// Store a new alternate-flavor key; `false` when the user already has a key of
    /// that name.
    pub fn create_webhook_key(
        &mut self,
        rec: &WebhookKeyRecord,
        key_hash: &str,
    ) -> Result<bool, UserError> {
        let inserted = self.conn.execute(
            "INSERT INTO webhook_keys (id, user_id, name, root_id, walkers, nodes, key_hash, \
             key_hint, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                rec.id,
                rec.user_id,
                rec.name,
                rec.root_id,
                list_to_text(&rec.walkers),
                list_to_text(&rec.nodes),
                key_hash,
                rec.key_hint,
                rec.created_at,
                rec.expires_at
            ],
        );
        match inserted {
            Ok(_) => Ok(true),
            Err(e) if super::is_unique_violation(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The user's alternate-flavor keys, oldest first.
    pub fn webhook_keys_of(&mut self, user_id: &str) -> Result<Vec<WebhookKeyRecord>, UserError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {WEBHOOK_KEY_COLUMNS} FROM webhook_keys WHERE user_id = ?1 \
             ORDER BY created_at, id"
        ))?;
        let rows = stmt
            .query_map([user_id], webhook_key_row)?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(webhook_key_of).collect()
    }

    /// How many alternate-flavor keys the user has.
    pub fn count_webhook_keys(&mut self, user_id: &str) -> Result<usize, UserError> {
        let n: i64 = self.conn.query_row(
            "SELECT count(*) FROM webhook_keys WHERE user_id = ?1",
            [user_id],
            |r| r.get(0),
        )?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Extend the user's key `id` by `secs`, counted from its expiry or from `now`,
    /// whichever is later; the new expiry, or `None` when the user has no such key.
    pub fn extend_webhook_key(
        &mut self,
        user_id: &str,
        id: &str,
        secs: i64,
    ) -> Result<Option<i64>, UserError> {
        let current: Option<i64> = self
            .conn
            .query_row(
                "SELECT expires_at FROM webhook_keys WHERE id = ?1 AND user_id = ?2",
                params![id, user_id],
                |r| r.get(0),
            )
            .optional()?;
        let Some(current) = current else {
            return Ok(None);
        };
        let expires = current.max(unix_now()).saturating_add(secs);
        self.conn.execute(
            "UPDATE webhook_keys SET expires_at = ?3 WHERE id = ?1 AND user_id = ?2",
            params![id, user_id, expires],
        )?;
        Ok(Some(expires))
    }

    /// Delete those of `ids` that are the user's keys; how many were deleted.
    pub fn delete_webhook_keys(
        &mut self,
        user_id: &str,
        ids: &[String],
    ) -> Result<usize, UserError> {
        let tx = self.conn.transaction()?;
        let mut n = 0;
        for id in ids {
            n += tx.execute(
                "DELETE FROM webhook_keys WHERE id = ?1 AND user_id = ?2",
                params![id, user_id],
            )?;
        }
        tx.commit()?;
        Ok(n)
    }

    /// The alternate-flavor key with this hash.
    pub fn webhook_key_by_hash(
        &mut self,
        key_hash: &str,
    ) -> Result<Option<WebhookKeyRecord>, UserError> {
        let row = self
            .conn
            .prepare_cached(&format!(
                "SELECT {WEBHOOK_KEY_COLUMNS} FROM webhook_keys WHERE key_hash = ?1"
            ))?
            .query_row([key_hash], webhook_key_row)
            .optional()?;
        row.map(webhook_key_of).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::users::UserStore;

    fn store() -> (UserStore, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "svc-keys-{}-{}",
            std::process::id(),
            crate::random_id()
        ));
        let store = UserStore::open(dir.join("s.db")).expect("open");
        (store, dir)
    }

    fn key(id: &str, user: &str, expires_at: Option<i64>) -> ApiKeyRecord {
        ApiKeyRecord {
            api_key_id: id.into(),
            user_id: user.into(),
            name: "ci".into(),
            allowed_walkers: Some(vec!["hook".into()]),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            expires_at,
            revoked: false,
        }
    }

    #[test]
    fn api_keys_are_found_by_hash_listed_per_user_and_revoked() {
        let (mut s, dir) = store();
        s.create_api_key(&key("k1", "u1", None), "h1")
            .expect("insert");
        s.create_api_key(&key("k2", "u2", Some(1)), "h2")
            .expect("insert");
        let k1 = s.api_key_by_hash("h1").expect("read").expect("found");
        assert_eq!(k1.allowed_walkers, Some(vec!["hook".to_string()]));
        assert!(k1.active(unix_now()));
        let k2 = s.api_key_by_hash("h2").expect("read").expect("found");
        assert!(!k2.active(unix_now()), "expired");
        assert_eq!(s.api_keys_of("u1").expect("list").len(), 1);
        assert_eq!(s.count_active_api_keys("u2").expect("count"), 0);
        assert!(
            !s.revoke_api_key("u2", "k1").expect("revoke"),
            "not u2's key"
        );
        assert!(s.revoke_api_key("u1", "k1").expect("revoke"));
        let k1 = s.api_key_by_hash("h1").expect("read").expect("found");
        assert!(k1.revoked && !k1.active(unix_now()));
        drop(s);
        // Reopening an existing store keeps the keys (the schema is idempotent).
        let mut again = UserStore::open(dir.join("s.db")).expect("reopen");
        assert!(again.api_key_by_hash("h1").expect("read").is_some());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn webhook_keys_names_extend_and_delete() {
        let (mut s, dir) = store();
        let rec = WebhookKeyRecord {
            id: "w1".into(),
            user_id: "u1".into(),
            name: "n".into(),
            root_id: "00".into(),
            walkers: vec![],
            nodes: vec!["a".into()],
            key_hint: "svcwh_ab".into(),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            expires_at: 10,
        };
        assert!(s.create_webhook_key(&rec, "h").expect("insert"));
        let dup = WebhookKeyRecord {
            id: "w2".into(),
            ..rec.clone()
        };
        assert!(
            !s.create_webhook_key(&dup, "h2").expect("insert"),
            "name taken"
        );
        let found = s.webhook_key_by_hash("h").expect("read").expect("found");
        assert_eq!(found, rec);
        let now = unix_now();
        let new = s
            .extend_webhook_key("u1", "w1", 60)
            .expect("extend")
            .expect("known");
        assert!(new >= now + 60, "extended from now when already expired");
        assert_eq!(s.extend_webhook_key("u2", "w1", 60).expect("extend"), None);
        assert_eq!(
            s.delete_webhook_keys("u2", &["w1".into()]).expect("delete"),
            0
        );
        assert_eq!(
            s.delete_webhook_keys("u1", &["w1".into(), "zz".into()])
                .expect("delete"),
            1
        );
        assert!(s.webhook_keys_of("u1").expect("list").is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }
}
