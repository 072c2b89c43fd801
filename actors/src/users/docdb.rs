//! Identity storage in the document database (`DocUsers`): chosen with the graph's
//! document tier (`DOCDB_URI` / `[scale.database] docdb_uri`), so replicas sharing one
//! database share their users. Collections, in the URI's database:
//!
//! - `users`: the spec's user document, `_id` = `user_id`: `status`, `role`, `root_id`,
//!   `credentials: [{type: "password", password_hash}]`, `identities` (`username` and
//!   `email` entries `{type, value_raw, value_normalized, verified, is_recovery}`, `sso`
//!   entries `{type, provider, external_id, email, verified, linked_at}`; each carries
//!   `key` = `type:value_normalized` or `sso:provider:external_id`), `profile`,
//!   `requires_password_reset`, `created_at`, `updated_at`, `rev` (bumped by every change
//!   of the identities) and `format_version`. The unique sparse index `identity_unique` on
//!   `identities.key` makes a value unique across users: of two replicas registering one
//!   e-mail at once, the database lets exactly one insert through.
//! - `user_tokens`: one-time tokens by the SHA-256 hex of the token (`_id`), `kind`,
//!   `user_id`, `identity`, `expires_at` (Unix seconds), `state`; a TTL index on
//!   `expires_on` (the same instant as a date) purges them a day after expiry. A token is
//!   consumed by one conditional update (`state: issued` → `consumed`), so it works once
//!   whichever replica sees it.
//! - `webhook_api_keys` (the spec's name) and `webhook_keys`: the two webhook key flavors,
//!   unique on `key_hash` (and `webhook_keys` on `user_id` + `name`).
//! - `sso_pending`: SSO logins in flight by state hash, taken with one
//!   `findOneAndDelete`; a TTL index drops expired ones.
//!
//! Changes that add or remove identities read the document and write it back only if
//! `rev` is unchanged (retried on a lost race); single-field changes are plain `$set`s.
//!
//! Legacy flat user records (documents of `users` without `identities`, as the
//! original wrote them) are converted on every open, see [`migrate_legacy`].

use super::{
    ApiKeyRecord, BOOTSTRAP_ADMIN_ID, IdentityRecord, IdentityType, NewUser, PendingLogin, Role,
    SsoAccount, Status, TokenGrant, TokenKind, UserError, UserFilter, UserPage, UserRecord,
    WebhookKeyRecord, iso8601_now, normalize, unix_now,
};
use crate::bson_json;
use crate::docstore::{DEFAULT_DATABASE, DocTarget, block, client_for};
use crate::store::StoreError;
use futures_util::TryStreamExt as _;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Collection, IndexModel};
use serde_json::{Map, Value as Json};
use std::future::Future;
use std::time::Duration;

/// `format_version` of the user documents this build writes.
const USER_FORMAT_VERSION: i64 = 1;
/// Expired token documents are kept this long before the TTL index purges them.
const TOKEN_PURGE_GRACE: Duration = Duration::from_secs(86_400);
/// Compare-and-set attempts of one change before giving up (`Restarting`: retry).
const CAS_ATTEMPTS: u32 = 32;
/// Deepest profile value stored (profiles are validated flat maps plus `sso.<platform>`).
const MAX_PROFILE_DEPTH: usize = 8;
/// Legacy records converted per batch of the start-up migration.
const MIGRATION_BATCH: i64 = 500;

/// The collections of identity storage.
#[derive(Clone)]
struct Cols {
    users: Collection<Document>,
    tokens: Collection<Document>,
    api_keys: Collection<Document>,
    webhook_keys: Collection<Document>,
    pending: Collection<Document>,
}

/// Identity storage in the document database; see the module docs.
pub struct DocUsers {
    cols: Cols,
}

fn unavailable(e: StoreError) -> UserError {
    match e {
        StoreError::Unreachable(m) => UserError::Doc(m),
        other => UserError::Doc(other.to_string()),
    }
}

/// Run `fut` on the document tier's runtime and wait (at most the tier's deadline).
fn run<T, F>(fut: F) -> Result<T, UserError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, UserError>> + Send + 'static,
{
    block(async move { Ok(fut.await) }).map_err(unavailable)?
}

fn derr(e: mongodb::error::Error) -> UserError {
    UserError::Doc(e.to_string())
}

/// A duplicate key (11000) of a unique index.
fn is_duplicate(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind as K, WriteFailure};
    match &*e.kind {
        K::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        K::Command(c) => c.code == 11000,
        K::InsertMany(m) => m
            .write_errors
            .as_ref()
            .is_some_and(|es| es.iter().any(|w| w.code == 11000)),
        _ => false,
    }
}

fn identity_key(kind: IdentityType, normalized: &str) -> String {
    format!("{}:{normalized}", kind.as_str())
}

fn sso_key(provider: &str, external_id: &str) -> String {
    format!("sso:{provider}:{external_id}")
}

fn corrupt(what: impl Into<String>) -> UserError {
    UserError::Corrupt(what.into())
}

fn profile_doc(m: &Map<String, Json>) -> Result<Document, UserError> {
    bson_json::to_doc(m, MAX_PROFILE_DEPTH).map_err(|_| corrupt("a profile nested too deeply"))
}

fn profile_map(d: &Document) -> Result<Map<String, Json>, UserError> {
    bson_json::doc_json(d, MAX_PROFILE_DEPTH).map_err(|_| corrupt("a profile nested too deeply"))
}

fn identity_doc(i: &IdentityRecord) -> Document {
    doc! {
        "type": i.kind.as_str(),
        "value_raw": &i.value_raw,
        "value_normalized": &i.value_normalized,
        "verified": i.verified,
        "is_recovery": i.is_recovery,
        "key": identity_key(i.kind, &i.value_normalized),
    }
}

fn sso_doc(a: &SsoAccount) -> Document {
    doc! {
        "type": "sso",
        "provider": &a.provider,
        "external_id": &a.external_id,
        "email": &a.email,
        "verified": true,
        "linked_at": &a.linked_at,
        "key": sso_key(&a.provider, &a.external_id),
    }
}

fn credentials(hash: Option<&str>) -> Bson {
    Bson::Array(
        hash.map(|h| Bson::Document(doc! {"type": "password", "password_hash": h}))
            .into_iter()
            .collect(),
    )
}

fn user_doc(new: &NewUser, sso: Option<&SsoAccount>, now: &str) -> Result<Document, UserError> {
    let mut identities: Vec<Bson> = new
        .identities
        .iter()
        .map(|i| Bson::Document(identity_doc(i)))
        .collect();
    if let Some(a) = sso {
        identities.push(Bson::Document(sso_doc(a)));
    }
    Ok(doc! {
        "_id": &new.user_id,
        "user_id": &new.user_id,
        "status": Status::Active.as_str(),
        "role": new.role.as_str(),
        "root_id": &new.root_id,
        "credentials": credentials(new.password_hash.as_deref()),
        "identities": identities,
        "profile": profile_doc(&new.profile)?,
        "requires_password_reset": false,
        "created_at": now,
        "updated_at": now,
        "rev": 1_i64,
        "format_version": USER_FORMAT_VERSION,
    })
}

fn text(d: &Document, key: &str) -> Result<String, UserError> {
    d.get_str(key)
        .map(str::to_string)
        .map_err(|_| corrupt(format!("user document field {key}")))
}

fn flag(d: &Document, key: &str) -> bool {
    d.get_bool(key).unwrap_or(false)
}

fn int(d: &Document, key: &str) -> Option<i64> {
    match d.get(key) {
        Some(Bson::Int64(i)) => Some(*i),
        Some(Bson::Int32(i)) => Some(i64::from(*i)),
        Some(Bson::Double(f)) if f.fract() == 0.0 => Some(*f as i64),
        _ => None,
    }
}

/// A stored user document as a record, with its revision.
fn decode_user(d: &Document) -> Result<(UserRecord, i64), UserError> {
    let user_id = text(d, "user_id")?;
    let status = text(d, "status")?;
    let status = Status::parse(&status).ok_or_else(|| corrupt(format!("status {status}")))?;
    let role = text(d, "role")?;
    let role = Role::parse(&role).ok_or_else(|| corrupt(format!("role {role}")))?;
    let password_hash = d.get_array("credentials").ok().and_then(|cs| {
        cs.iter().find_map(|c| match c {
            Bson::Document(c) if c.get_str("type").ok() == Some("password") => {
                c.get_str("password_hash").ok().map(str::to_string)
            }
            _ => None,
        })
    });
    let mut identities = Vec::new();
    let mut sso = Vec::new();
    for i in d.get_array("identities").map(Vec::as_slice).unwrap_or(&[]) {
        let Bson::Document(i) = i else { continue };
        let kind = i.get_str("type").unwrap_or("");
        if kind == "sso" {
            sso.push(SsoAccount {
                provider: text(i, "provider")?,
                external_id: text(i, "external_id")?,
                email: i.get_str("email").unwrap_or("").to_string(),
                linked_at: i.get_str("linked_at").unwrap_or("").to_string(),
            });
            continue;
        }
        // Types a later build added are skipped, not fatal.
        let Some(kind) = IdentityType::parse(kind) else {
            continue;
        };
        identities.push(IdentityRecord {
            kind,
            value_raw: text(i, "value_raw")?,
            value_normalized: text(i, "value_normalized")?,
            verified: flag(i, "verified"),
            is_recovery: flag(i, "is_recovery"),
        });
    }
    let profile = d
        .get_document("profile")
        .map_or_else(|_| Ok(Map::new()), profile_map)?;
    Ok((
        UserRecord {
            user_id,
            status,
            role,
            root_id: text(d, "root_id")?,
            password_hash,
            profile,
            identities,
            sso,
            requires_password_reset: flag(d, "requires_password_reset"),
            created_at: text(d, "created_at")?,
            updated_at: text(d, "updated_at")?,
        },
        int(d, "rev").unwrap_or(0),
    ))
}

fn token_grant(d: &Document) -> Result<TokenGrant, UserError> {
    Ok(TokenGrant {
        user_id: text(d, "user_id")?,
        identity: text(d, "identity")?,
    })
}

fn api_key_doc(rec: &ApiKeyRecord, key_hash: &str) -> Document {
    doc! {
        "_id": &rec.api_key_id,
        "api_key_id": &rec.api_key_id,
        "user_id": &rec.user_id,
        "name": &rec.name,
        "key_hash": key_hash,
        "allowed_walkers": rec.allowed_walkers.as_ref().map_or(Bson::Null, |w| {
            Bson::Array(w.iter().map(|s| Bson::String(s.clone())).collect())
        }),
        "created_at": &rec.created_at,
        "expires_at": rec.expires_at.map_or(Bson::Null, Bson::Int64),
        "revoked": rec.revoked,
    }
}

fn strings(d: &Document, key: &str) -> Vec<String> {
    d.get_array(key)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn decode_api_key(d: &Document) -> Result<ApiKeyRecord, UserError> {
    Ok(ApiKeyRecord {
        api_key_id: text(d, "api_key_id")?,
        user_id: text(d, "user_id")?,
        name: text(d, "name")?,
        allowed_walkers: matches!(d.get("allowed_walkers"), Some(Bson::Array(_)))
            .then(|| strings(d, "allowed_walkers")),
        created_at: text(d, "created_at")?,
        expires_at: int(d, "expires_at"),
        revoked: flag(d, "revoked"),
    })
}

fn decode_webhook_key(d: &Document) -> Result<WebhookKeyRecord, UserError> {
    Ok(WebhookKeyRecord {
        id: text(d, "id")?,
        user_id: text(d, "user_id")?,
        name: text(d, "name")?,
        root_id: text(d, "root_id")?,
        walkers: strings(d, "walkers"),
        nodes: strings(d, "nodes"),
        key_hint: text(d, "key_hint")?,
        created_at: text(d, "created_at")?,
        expires_at: int(d, "expires_at").ok_or_else(|| corrupt("webhook key expires_at"))?,
    })
}

fn date_of(unix_secs: i64) -> DateTime {
    DateTime::from_millis(unix_secs.saturating_mul(1000))
}

fn index(keys: Document, name: &str, unique: bool) -> IndexModel {
    IndexModel::builder()
        .keys(keys)
        .options(
            IndexOptions::builder()
                .name(name.to_string())
                .unique(unique)
                .build(),
        )
        .build()
}

fn ttl_index(field: &str, after: Duration) -> IndexModel {
    IndexModel::builder()
        .keys(doc! {field: 1})
        .options(
            IndexOptions::builder()
                .name(format!("{field}_ttl"))
                .expire_after(after)
                .build(),
        )
        .build()
}

/// What a compare-and-set change of a user document decided.
enum Change<T> {
    /// Write the changed document and answer `T`.
    Write(T),
    /// Write nothing and answer.
    Keep(T),
}

impl DocUsers {
    /// Connect, create the collections' indexes, and migrate legacy user records.
    pub fn open(target: &DocTarget) -> Result<DocUsers, UserError> {
        if !(target.uri.starts_with("mongodb://") || target.uri.starts_with("mongodb+srv://")) {
            return Err(UserError::Doc(format!(
                "a document database URI starts with mongodb:// or mongodb+srv:// (got {})",
                target.redacted()
            )));
        }
        let client = client_for(&target.uri).map_err(unavailable)?;
        let db = client
            .default_database()
            .unwrap_or_else(|| client.database(DEFAULT_DATABASE));
        let cols = Cols {
            users: db.collection("users"),
            tokens: db.collection("user_tokens"),
            api_keys: db.collection("webhook_api_keys"),
            webhook_keys: db.collection("webhook_keys"),
            pending: db.collection("sso_pending"),
        };
        let c = cols.clone();
        run(async move {
            let identity_unique = IndexModel::builder()
                .keys(doc! {"identities.key": 1})
                .options(
                    IndexOptions::builder()
                        .name("identity_unique".to_string())
                        .unique(true)
                        .sparse(true)
                        .build(),
                )
                .build();
            c.users
                .create_indexes([
                    identity_unique,
                    index(doc! {"created_at": 1, "_id": 1}, "created", false),
                    index(doc! {"user_id": 1}, "by_user_id", false),
                ])
                .await
                .map_err(derr)?;
            c.tokens
                .create_indexes([
                    ttl_index("expires_on", TOKEN_PURGE_GRACE),
                    index(doc! {"user_id": 1, "kind": 1, "state": 1}, "by_user", false),
                ])
                .await
                .map_err(derr)?;
            c.api_keys
                .create_indexes([
                    index(doc! {"key_hash": 1}, "key_hash_unique", true),
                    index(doc! {"user_id": 1}, "by_user", false),
                ])
                .await
                .map_err(derr)?;
            c.webhook_keys
                .create_indexes([
                    index(doc! {"key_hash": 1}, "key_hash_unique", true),
                    index(doc! {"user_id": 1, "name": 1}, "name_unique", true),
                ])
                .await
                .map_err(derr)?;
            c.pending
                .create_indexes([ttl_index("expires_on", Duration::ZERO)])
                .await
                .map_err(derr)?;
            Ok(())
        })?;
        let users = DocUsers { cols };
        let report = users.migrate_legacy()?;
        if report.converted > 0 || report.disabled > 0 {
            tracing::info!(
                converted = report.converted,
                disabled = report.disabled,
                "legacy user records migrated"
            );
        }
        Ok(users)
    }

    fn raw_user(&self, filter: Document) -> Result<Option<Document>, UserError> {
        self.find_one(&self.cols.users, filter)
    }

    fn user_where(&self, filter: Document) -> Result<Option<UserRecord>, UserError> {
        self.raw_user(filter)?
            .map(|d| decode_user(&d).map(|(u, _)| u))
            .transpose()
    }

    /// `$set` fields of one user (and `updated_at`); `NotFound` when there is no such user.
    fn set_fields(&self, user_id: &str, mut fields: Document) -> Result<(), UserError> {
        fields.insert("updated_at", iso8601_now());
        let users = self.cols.users.clone();
        let id = user_id.to_string();
        let matched = run(async move {
            users
                .update_one(doc! {"_id": id}, doc! {"$set": fields})
                .await
                .map(|r| r.matched_count)
                .map_err(derr)
        })?;
        if matched == 0 {
            return Err(UserError::NotFound);
        }
        Ok(())
    }

    /// Read a user's document, let `f` change its `identities`, and write it back only
    /// if nobody changed it meanwhile (retried). `NotFound` without the user; a value
    /// taken meanwhile is the unique index's duplicate key, answered as `on_duplicate`.
    fn change_identities<T>(
        &self,
        id: &Bson,
        on_duplicate: impl Fn() -> UserError,
        mut f: impl FnMut(&UserRecord, &mut Vec<Bson>) -> Result<Change<T>, UserError>,
    ) -> Result<T, UserError> {
        for _ in 0..CAS_ATTEMPTS {
            let Some(raw) = self.raw_user(doc! {"_id": id.clone()})? else {
                return Err(UserError::NotFound);
            };
            let (user, rev) = decode_user(&raw)?;
            let mut identities = raw.get_array("identities").cloned().unwrap_or_default();
            let answer = match f(&user, &mut identities)? {
                Change::Keep(answer) => return Ok(answer),
                Change::Write(answer) => answer,
            };
            let users = self.cols.users.clone();
            let filter = doc! {"_id": id.clone(), "rev": rev};
            let update = doc! {"$set": {
                "identities": identities,
                "updated_at": iso8601_now(),
                "rev": rev + 1,
            }};
            let written = run(async move {
                match users.update_one(filter, update).await {
                    Ok(r) => Ok(Some(r.matched_count == 1)),
                    Err(e) if is_duplicate(&e) => Ok(None),
                    Err(e) => Err(derr(e)),
                }
            })?;
            match written {
                Some(true) => return Ok(answer),
                Some(false) => continue,
                None => return Err(on_duplicate()),
            }
        }
        Err(UserError::Restarting)
    }

    /// Insert a user document; on a duplicate key, tell which value is taken.
    fn insert_user(
        &self,
        d: Document,
        new: &NewUser,
        sso: Option<&SsoAccount>,
    ) -> Result<(), UserError> {
        let users = self.cols.users.clone();
        let duplicate = run(async move {
            match users.insert_one(d).await {
                Ok(_) => Ok(false),
                Err(e) if is_duplicate(&e) => Ok(true),
                Err(e) => Err(derr(e)),
            }
        })?;
        if !duplicate {
            return Ok(());
        }
        if let Some(a) = sso
            && self
                .raw_user(doc! {"identities.key": sso_key(&a.provider, &a.external_id)})?
                .is_some()
        {
            return Err(UserError::SsoTaken(a.provider.clone()));
        }
        let taken = new
            .identities
            .iter()
            .find(|i| {
                self.raw_user(doc! {"identities.key": identity_key(i.kind, &i.value_normalized)})
                    .ok()
                    .flatten()
                    .is_some()
            })
            .or(new.identities.first());
        Err(match taken {
            Some(i) => UserError::Taken {
                kind: i.kind,
                value: i.value_raw.clone(),
            },
            // The user id itself (a random UUID colliding, or a retried insert).
            None => UserError::Taken {
                kind: IdentityType::Username,
                value: new.user_id.clone(),
            },
        })
    }

    /// Consume an issued, unexpired token of `kind` with one conditional update; its
    /// grant, or `None` when it is not live (used, revoked, expired, unknown).
    fn consume(&self, kind: TokenKind, token_hash: &str) -> Result<Option<TokenGrant>, UserError> {
        let tokens = self.cols.tokens.clone();
        let hash = token_hash.to_string();
        let kind = kind.as_str();
        let taken = run(async move {
            tokens
                .find_one_and_update(
                    doc! {"_id": &hash, "kind": kind, "state": "issued",
                    "expires_at": {"$gt": unix_now()}},
                    doc! {"$set": {"state": "consumed"}},
                )
                .await
                .map_err(derr)
        })?;
        taken.as_ref().map(token_grant).transpose()
    }

    fn revoke_tokens(&self, user_id: &str, kind: TokenKind, keep: &str) -> Result<(), UserError> {
        let tokens = self.cols.tokens.clone();
        let filter = doc! {"user_id": user_id, "kind": kind.as_str(), "state": "issued",
        "_id": {"$ne": keep}};
        run(async move {
            tokens
                .update_many(filter, doc! {"$set": {"state": "revoked"}})
                .await
                .map(|_| ())
                .map_err(derr)
        })
    }

    fn find_one(
        &self,
        col: &Collection<Document>,
        filter: Document,
    ) -> Result<Option<Document>, UserError> {
        let col = col.clone();
        run(async move { col.find_one(filter).await.map_err(derr) })
    }

    fn count(&self, col: &Collection<Document>, filter: Document) -> Result<usize, UserError> {
        let col = col.clone();
        let n = run(async move { col.count_documents(filter).await.map_err(derr) })?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn find_all(
        &self,
        col: &Collection<Document>,
        filter: Document,
        sort: Document,
    ) -> Result<Vec<Document>, UserError> {
        let col = col.clone();
        run(async move {
            col.find(filter)
                .sort(sort)
                .await
                .map_err(derr)?
                .try_collect::<Vec<Document>>()
                .await
                .map_err(derr)
        })
    }

    /// Convert the legacy flat user records still in `users` (idempotent: a converted
    /// record is not legacy any more).
    pub fn migrate_legacy(&self) -> Result<MigrationReport, UserError> {
        let mut report = MigrationReport::default();
        loop {
            let users = self.cols.users.clone();
            let batch = run(async move {
                users
                    .find(doc! {"identities": {"$exists": false}})
                    .sort(doc! {"created_at": 1, "_id": 1})
                    .limit(MIGRATION_BATCH)
                    .await
                    .map_err(derr)?
                    .try_collect::<Vec<Document>>()
                    .await
                    .map_err(derr)
            })?;
            if batch.is_empty() {
                return Ok(report);
            }
            for legacy in batch {
                self.migrate_one(&legacy, &mut report)?;
            }
        }
    }

    fn migrate_one(
        &self,
        legacy: &Document,
        report: &mut MigrationReport,
    ) -> Result<(), UserError> {
        let old_id = legacy.get("_id").cloned().unwrap_or(Bson::Null);
        let converted = convert_legacy(legacy);
        let mut new = converted.doc;
        let users = self.cols.users.clone();
        let (id, attempt) = (old_id.clone(), new.clone());
        // The record is replaced in place (same `_id`), only while it is still legacy: a
        // replica migrating at the same time finds it converted already.
        let outcome = run(async move {
            match users
                .replace_one(doc! {"_id": id, "identities": {"$exists": false}}, attempt)
                .await
            {
                Ok(r) => Ok(Some(r.matched_count)),
                Err(e) if is_duplicate(&e) => Ok(None),
                Err(e) => Err(derr(e)),
            }
        })?;
        match outcome {
            Some(1) => {
                report.converted += 1;
                return Ok(());
            }
            Some(_) => return Ok(()),
            None => {}
        }
        // A normalized value collides with another account: keep the record, disabled,
        // its identities not claiming the value (no `key`).
        let identities: Vec<Bson> = new
            .get_array("identities")
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|i| match i {
                Bson::Document(mut i) => {
                    i.remove("key");
                    i.insert("collision", true);
                    Bson::Document(i)
                }
                other => other,
            })
            .collect();
        new.insert("identities", identities);
        new.insert("status", Status::Disabled.as_str());
        let users = self.cols.users.clone();
        let id = old_id.clone();
        let matched = run(async move {
            users
                .replace_one(doc! {"_id": id, "identities": {"$exists": false}}, new)
                .await
                .map(|r| r.matched_count)
                .map_err(derr)
        })?;
        if matched == 1 {
            report.disabled += 1;
            tracing::warn!(
                legacy_id = %old_id,
                identities = %converted.summary,
                "legacy user record collides with another account after normalization; \
                 migrated as disabled"
            );
        }
        Ok(())
    }
}

/// What a legacy migration did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MigrationReport {
    pub converted: u64,
    pub disabled: u64,
}

struct Converted {
    doc: Document,
    summary: String,
}

/// The id of a legacy record as text: a string as it is, an ObjectId as its hex.
fn legacy_text(b: Option<&Bson>) -> Option<String> {
    match b? {
        Bson::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Bson::ObjectId(o) => Some(o.to_hex()),
        _ => None,
    }
}

/// A legacy flat record `{_id, user_id?, username?, email?, password | password_hash,
/// root_id, role? | is_admin?, is_activated? | status?, profile?, created_at?}` in the
/// identity and credential format. The user id is `user_id`, else the `_id` text; the
/// root id is kept (a 24-hex ObjectId left-padded with zeros to 32 hex); the role is kept
/// (`is_admin: true` = `admin`); an activated record's e-mail counts as verified.
fn convert_legacy(l: &Document) -> Converted {
    let user_id = legacy_text(l.get("user_id"))
        .or_else(|| legacy_text(l.get("_id")))
        .unwrap_or_else(crate::identity::new_user_id);
    let mut identities = Vec::new();
    let verified_email = l.get_bool("is_activated").unwrap_or(false)
        || l.get_bool("email_verified").unwrap_or(false)
        || l.get_bool("verified").unwrap_or(false);
    if let Some(name) = legacy_text(l.get("username")) {
        identities.push(IdentityRecord::new(IdentityType::Username, &name, None));
    }
    if let Some(email) = legacy_text(l.get("email")) {
        let mut e = IdentityRecord::new(IdentityType::Email, &email, None);
        e.verified = verified_email;
        identities.push(e);
    }
    let summary = identities
        .iter()
        .map(|i| format!("{}={}", i.kind, i.value_normalized))
        .collect::<Vec<_>>()
        .join(", ");
    let hash = legacy_text(l.get("password_hash")).or_else(|| legacy_text(l.get("password")));
    let root_id = match l.get("root_id") {
        Some(Bson::ObjectId(o)) => format!("{:0>32}", o.to_hex()),
        Some(Bson::String(s)) => {
            let s = s.trim().to_lowercase().replace('-', "");
            if s.len() <= 32 && !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit()) {
                format!("{s:0>32}")
            } else {
                lang::host::format_id(crate::identity::new_root_id())
            }
        }
        _ => lang::host::format_id(crate::identity::new_root_id()),
    };
    let role = match l.get_str("role").ok().and_then(Role::parse) {
        Some(r) => r,
        None if l.get_bool("is_admin").unwrap_or(false) => Role::Admin,
        None => Role::User,
    };
    let status = match l.get_str("status").ok().and_then(Status::parse) {
        Some(s) => s,
        None if l.get_bool("is_active").ok() == Some(false) => Status::Disabled,
        None => Status::Active,
    };
    let now = iso8601_now();
    let created = legacy_text(l.get("created_at")).unwrap_or_else(|| now.clone());
    let profile = l.get_document("profile").cloned().unwrap_or_default();
    let mut d = doc! {
        "_id": l.get("_id").cloned().unwrap_or(Bson::String(user_id.clone())),
        "user_id": &user_id,
        "status": status.as_str(),
        "role": role.as_str(),
        "root_id": root_id,
        "credentials": credentials(hash.as_deref()),
        "identities": identities.iter().map(|i| Bson::Document(identity_doc(i))).collect::<Vec<_>>(),
        "profile": profile,
        "requires_password_reset": false,
        "created_at": created,
        "updated_at": now,
        "rev": 1_i64,
        "format_version": USER_FORMAT_VERSION,
        "migrated_from_legacy": true,
    };
    if user_id == BOOTSTRAP_ADMIN_ID {
        d.insert("role", Role::Admin.as_str());
    }
    Converted { doc: d, summary }
}

impl DocUsers {
    pub(super) fn check_health(&mut self) -> Result<(), UserError> {
        self.count(&self.cols.users, doc! {"_id": "__health__"})
            .map(|_| ())
    }

    pub(super) fn create(&mut self, new: NewUser) -> Result<UserRecord, UserError> {
        let now = iso8601_now();
        let d = user_doc(&new, None, &now)?;
        self.insert_user(d, &new, None)?;
        Ok(new.into_record(now))
    }

    pub(super) fn by_identity(
        &mut self,
        kind: IdentityType,
        normalized: &str,
    ) -> Result<Option<UserRecord>, UserError> {
        self.user_where(doc! {"identities.key": identity_key(kind, normalized)})
    }

    pub(super) fn get(&mut self, user_id: &str) -> Result<Option<UserRecord>, UserError> {
        // Legacy records converted in place keep their `_id`: look up by `user_id`
        // when the `_id` does not match.
        match self.user_where(doc! {"_id": user_id})? {
            Some(u) => Ok(Some(u)),
            None => self.user_where(doc! {"user_id": user_id}),
        }
    }

    /// The `_id` of a user's document.
    fn doc_id(&mut self, user_id: &str) -> Result<Bson, UserError> {
        if self.raw_user(doc! {"_id": user_id})?.is_some() {
            return Ok(Bson::String(user_id.to_string()));
        }
        self.raw_user(doc! {"user_id": user_id})?
            .and_then(|d| d.get("_id").cloned())
            .ok_or(UserError::NotFound)
    }

    fn set_by_user_id(&mut self, user_id: &str, fields: Document) -> Result<(), UserError> {
        match self.set_fields(user_id, fields.clone()) {
            Err(UserError::NotFound) => {
                let id = self.doc_id(user_id)?;
                let mut fields = fields;
                fields.insert("updated_at", iso8601_now());
                let users = self.cols.users.clone();
                run(async move {
                    users
                        .update_one(doc! {"_id": id}, doc! {"$set": fields})
                        .await
                        .map(|_| ())
                        .map_err(derr)
                })
            }
            other => other,
        }
    }

    pub(super) fn set_password(&mut self, user_id: &str, hash: &str) -> Result<(), UserError> {
        self.set_by_user_id(
            user_id,
            doc! {"credentials": credentials(Some(hash)), "requires_password_reset": false},
        )?;
        self.revoke_tokens(user_id, TokenKind::Reset, "")
    }

    pub(super) fn replace_password_hash(
        &mut self,
        user_id: &str,
        old: Option<&str>,
        new: &str,
    ) -> Result<bool, UserError> {
        let id = match self.doc_id(user_id) {
            Ok(id) => id,
            Err(UserError::NotFound) => return Ok(false),
            Err(e) => return Err(e),
        };
        let users = self.cols.users.clone();
        let filter = doc! {"_id": id, "credentials": credentials(old)};
        let update = doc! {"$set": {"credentials": credentials(Some(new)),
        "updated_at": iso8601_now()}};
        let modified = run(async move {
            users
                .update_one(filter, update)
                .await
                .map(|r| r.modified_count)
                .map_err(derr)
        })?;
        Ok(modified == 1)
    }

    pub(super) fn set_status(&mut self, user_id: &str, status: Status) -> Result<(), UserError> {
        self.set_by_user_id(user_id, doc! {"status": status.as_str()})
    }

    pub(super) fn delete(&mut self, user_id: &str) -> Result<(), UserError> {
        let user = self.get(user_id)?.ok_or(UserError::NotFound)?;
        if user.is_protected() {
            return Err(UserError::Protected);
        }
        let id = self.doc_id(user_id)?;
        let (users, tokens) = (self.cols.users.clone(), self.cols.tokens.clone());
        let uid = user_id.to_string();
        run(async move {
            tokens
                .delete_many(doc! {"user_id": &uid})
                .await
                .map_err(derr)?;
            users.delete_one(doc! {"_id": id}).await.map_err(derr)?;
            Ok(())
        })
    }

    pub(super) fn add_identity(
        &mut self,
        user_id: &str,
        identity: &IdentityRecord,
    ) -> Result<(), UserError> {
        let id = self.doc_id(user_id)?;
        let key = identity_key(identity.kind, &identity.value_normalized);
        if self.raw_user(doc! {"identities.key": &key})?.is_some() {
            return Err(UserError::Taken {
                kind: identity.kind,
                value: identity.value_raw.clone(),
            });
        }
        let taken = || UserError::Taken {
            kind: identity.kind,
            value: identity.value_raw.clone(),
        };
        self.change_identities(&id, taken, |user, identities| {
            if user.identity(identity.kind).is_some() {
                return Err(UserError::TypeExists(identity.kind));
            }
            identities.push(Bson::Document(identity_doc(identity)));
            Ok(Change::Write(()))
        })
    }

    pub(super) fn issue_token(
        &mut self,
        kind: TokenKind,
        token_hash: &str,
        grant: &TokenGrant,
        ttl_secs: i64,
        revoke_outstanding: bool,
    ) -> Result<(), UserError> {
        if revoke_outstanding {
            self.revoke_tokens(&grant.user_id, kind, token_hash)?;
        }
        let expires = unix_now().saturating_add(ttl_secs);
        let d = doc! {
            "_id": token_hash,
            "kind": kind.as_str(),
            "user_id": &grant.user_id,
            "identity": &grant.identity,
            "expires_at": expires,
            "expires_on": date_of(expires),
            "state": "issued",
        };
        let tokens = self.cols.tokens.clone();
        run(async move { tokens.insert_one(d).await.map(|_| ()).map_err(derr) })
    }

    pub(super) fn revoke_token(&mut self, token_hash: &str) -> Result<(), UserError> {
        let tokens = self.cols.tokens.clone();
        let hash = token_hash.to_string();
        run(async move {
            tokens
                .update_one(
                    doc! {"_id": hash, "state": "issued"},
                    doc! {"$set": {"state": "revoked"}},
                )
                .await
                .map(|_| ())
                .map_err(derr)
        })
    }

    pub(super) fn peek_token(
        &mut self,
        kind: TokenKind,
        token_hash: &str,
    ) -> Result<Option<TokenGrant>, UserError> {
        let filter = doc! {"_id": token_hash, "kind": kind.as_str(), "state": "issued",
        "expires_at": {"$gt": unix_now()}};
        let found = self.find_one(&self.cols.tokens, filter)?;
        found.as_ref().map(token_grant).transpose()
    }

    pub(super) fn redeem_verify(
        &mut self,
        token_hash: &str,
    ) -> Result<Option<IdentityRecord>, UserError> {
        let Some(grant) = self.consume(TokenKind::Verify, token_hash)? else {
            return Ok(None);
        };
        let id = match self.doc_id(&grant.user_id) {
            Ok(id) => id,
            Err(UserError::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        };
        let key = identity_key(IdentityType::Email, &grant.identity);
        let changed = self.change_identities(
            &id,
            || corrupt("an identity changed its key"),
            |_, identities| {
                let mut found = false;
                for i in identities.iter_mut() {
                    if let Bson::Document(i) = i
                        && i.get_str("key").ok() == Some(key.as_str())
                    {
                        i.insert("verified", true);
                        found = true;
                    }
                }
                Ok(if found {
                    Change::Write(true)
                } else {
                    Change::Keep(false)
                })
            },
        );
        match changed {
            Ok(true) => {}
            Ok(false) | Err(UserError::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        }
        let user = self.get(&grant.user_id)?;
        Ok(user.and_then(|u| u.identity(IdentityType::Email).cloned()))
    }

    pub(super) fn redeem_reset(
        &mut self,
        token_hash: &str,
        new_hash: &str,
    ) -> Result<Option<String>, UserError> {
        let Some(grant) = self.consume(TokenKind::Reset, token_hash)? else {
            return Ok(None);
        };
        match self.set_by_user_id(
            &grant.user_id,
            doc! {"credentials": credentials(Some(new_hash)), "requires_password_reset": false},
        ) {
            Ok(()) => {}
            Err(UserError::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        }
        self.revoke_tokens(&grant.user_id, TokenKind::Reset, token_hash)?;
        Ok(Some(grant.user_id))
    }

    pub(super) fn create_api_key(
        &mut self,
        rec: &ApiKeyRecord,
        key_hash: &str,
    ) -> Result<(), UserError> {
        let d = api_key_doc(rec, key_hash);
        let keys = self.cols.api_keys.clone();
        run(async move { keys.insert_one(d).await.map(|_| ()).map_err(derr) })
    }

    pub(super) fn api_keys_of(&mut self, user_id: &str) -> Result<Vec<ApiKeyRecord>, UserError> {
        self.find_all(
            &self.cols.api_keys,
            doc! {"user_id": user_id},
            doc! {"created_at": 1, "_id": 1},
        )?
        .iter()
        .map(decode_api_key)
        .collect()
    }

    pub(super) fn count_active_api_keys(&mut self, user_id: &str) -> Result<usize, UserError> {
        self.count(
            &self.cols.api_keys,
            doc! {"user_id": user_id, "revoked": false,
            "$or": [{"expires_at": Bson::Null}, {"expires_at": {"$gt": unix_now()}}]},
        )
    }

    pub(super) fn revoke_api_key(
        &mut self,
        user_id: &str,
        api_key_id: &str,
    ) -> Result<bool, UserError> {
        let keys = self.cols.api_keys.clone();
        let filter = doc! {"_id": api_key_id, "user_id": user_id};
        let matched = run(async move {
            keys.update_one(filter, doc! {"$set": {"revoked": true}})
                .await
                .map(|r| r.matched_count)
                .map_err(derr)
        })?;
        Ok(matched == 1)
    }

    pub(super) fn api_key_by_hash(
        &mut self,
        key_hash: &str,
    ) -> Result<Option<ApiKeyRecord>, UserError> {
        let found = self.find_one(&self.cols.api_keys, doc! {"key_hash": key_hash})?;
        found.as_ref().map(decode_api_key).transpose()
    }

    pub(super) fn create_webhook_key(
        &mut self,
        rec: &WebhookKeyRecord,
        key_hash: &str,
    ) -> Result<bool, UserError> {
        let d = doc! {
            "_id": &rec.id,
            "id": &rec.id,
            "user_id": &rec.user_id,
            "name": &rec.name,
            "root_id": &rec.root_id,
            "walkers": rec.walkers.iter().map(|w| Bson::String(w.clone())).collect::<Vec<_>>(),
            "nodes": rec.nodes.iter().map(|n| Bson::String(n.clone())).collect::<Vec<_>>(),
            "key_hash": key_hash,
            "key_hint": &rec.key_hint,
            "created_at": &rec.created_at,
            "expires_at": rec.expires_at,
        };
        let keys = self.cols.webhook_keys.clone();
        run(async move {
            match keys.insert_one(d).await {
                Ok(_) => Ok(true),
                Err(e) if is_duplicate(&e) => Ok(false),
                Err(e) => Err(derr(e)),
            }
        })
    }

    pub(super) fn webhook_keys_of(
        &mut self,
        user_id: &str,
    ) -> Result<Vec<WebhookKeyRecord>, UserError> {
        self.find_all(
            &self.cols.webhook_keys,
            doc! {"user_id": user_id},
            doc! {"created_at": 1, "_id": 1},
        )?
        .iter()
        .map(decode_webhook_key)
        .collect()
    }

    pub(super) fn count_webhook_keys(&mut self, user_id: &str) -> Result<usize, UserError> {
        self.count(&self.cols.webhook_keys, doc! {"user_id": user_id})
    }

    pub(super) fn extend_webhook_key(
        &mut self,
        user_id: &str,
        id: &str,
        secs: i64,
    ) -> Result<Option<i64>, UserError> {
        for _ in 0..CAS_ATTEMPTS {
            let filter = doc! {"_id": id, "user_id": user_id};
            let Some(found) = self.find_one(&self.cols.webhook_keys, filter)? else {
                return Ok(None);
            };
            let current = int(&found, "expires_at").unwrap_or(0);
            let expires = current.max(unix_now()).saturating_add(secs);
            let keys = self.cols.webhook_keys.clone();
            let filter = doc! {"_id": id, "user_id": user_id, "expires_at": current};
            let matched = run(async move {
                keys.update_one(filter, doc! {"$set": {"expires_at": expires}})
                    .await
                    .map(|r| r.matched_count)
                    .map_err(derr)
            })?;
            if matched == 1 {
                return Ok(Some(expires));
            }
        }
        Err(UserError::Restarting)
    }

    pub(super) fn delete_webhook_keys(
        &mut self,
        user_id: &str,
        ids: &[String],
    ) -> Result<usize, UserError> {
        let keys = self.cols.webhook_keys.clone();
        let filter = doc! {"_id": {"$in": ids}, "user_id": user_id};
        let n = run(async move {
            keys.delete_many(filter)
                .await
                .map(|r| r.deleted_count)
                .map_err(derr)
        })?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    pub(super) fn webhook_key_by_hash(
        &mut self,
        key_hash: &str,
    ) -> Result<Option<WebhookKeyRecord>, UserError> {
        let found = self.find_one(&self.cols.webhook_keys, doc! {"key_hash": key_hash})?;
        found.as_ref().map(decode_webhook_key).transpose()
    }

    pub(super) fn put_pending_login(
        &mut self,
        state_hash: &str,
        login: &PendingLogin,
        ttl_secs: i64,
        max_pending: u64,
    ) -> Result<bool, UserError> {
        let now = unix_now();
        let pending = self.cols.pending.clone();
        run(async move {
            pending
                .delete_many(doc! {"expires_at": {"$lte": now}})
                .await
                .map(|_| ())
                .map_err(derr)
        })?;
        let waiting = self.count(&self.cols.pending, doc! {})?;
        if u64::try_from(waiting).unwrap_or(u64::MAX) >= max_pending {
            return Ok(false);
        }
        let expires = now.saturating_add(ttl_secs);
        let d = doc! {
            "_id": state_hash,
            "provider": &login.provider,
            "operation": &login.operation,
            "code_verifier": &login.code_verifier,
            "nonce": &login.nonce,
            "redirect_uri": &login.redirect_uri,
            "expires_at": expires,
            "expires_on": date_of(expires),
        };
        let pending = self.cols.pending.clone();
        run(async move { pending.insert_one(d).await.map(|_| true).map_err(derr) })
    }

    pub(super) fn take_pending_login(
        &mut self,
        state_hash: &str,
    ) -> Result<Option<PendingLogin>, UserError> {
        let pending = self.cols.pending.clone();
        let filter = doc! {"_id": state_hash, "expires_at": {"$gt": unix_now()}};
        let taken = run(async move { pending.find_one_and_delete(filter).await.map_err(derr) })?;
        taken
            .map(|d| {
                Ok(PendingLogin {
                    provider: text(&d, "provider")?,
                    operation: text(&d, "operation")?,
                    code_verifier: text(&d, "code_verifier")?,
                    nonce: text(&d, "nonce")?,
                    redirect_uri: text(&d, "redirect_uri")?,
                })
            })
            .transpose()
    }

    pub(super) fn by_sso(
        &mut self,
        provider: &str,
        external_id: &str,
    ) -> Result<Option<UserRecord>, UserError> {
        self.user_where(doc! {"identities.key": sso_key(provider, external_id)})
    }

    pub(super) fn link_sso(
        &mut self,
        user_id: &str,
        account: &SsoAccount,
    ) -> Result<(), UserError> {
        let id = self.doc_id(user_id)?;
        let key = sso_key(&account.provider, &account.external_id);
        if let Some(owner) = self.raw_user(doc! {"identities.key": &key})?
            && owner.get_str("user_id").ok() != Some(user_id)
        {
            return Err(UserError::SsoTaken(account.provider.clone()));
        }
        let taken = || UserError::SsoTaken(account.provider.clone());
        self.change_identities(&id, taken, |_, identities| {
            let mut linked = false;
            for i in identities.iter_mut() {
                let Bson::Document(i) = i else { continue };
                if i.get_str("type").ok() != Some("sso")
                    || i.get_str("provider").ok() != Some(account.provider.as_str())
                {
                    continue;
                }
                if i.get_str("key").ok() != Some(key.as_str()) {
                    return Err(UserError::SsoTaken(account.provider.clone()));
                }
                if i.get_str("email").ok() == Some(account.email.as_str()) {
                    return Ok(Change::Keep(()));
                }
                i.insert("email", &account.email);
                linked = true;
            }
            if !linked {
                identities.push(Bson::Document(sso_doc(account)));
            }
            Ok(Change::Write(()))
        })
    }

    pub(super) fn create_linked(
        &mut self,
        new: NewUser,
        account: &SsoAccount,
    ) -> Result<(), UserError> {
        let d = user_doc(&new, Some(account), &iso8601_now())?;
        self.insert_user(d, &new, Some(account))
    }

    pub(super) fn unlink_sso(&mut self, user_id: &str, provider: &str) -> Result<bool, UserError> {
        let id = match self.doc_id(user_id) {
            Ok(id) => id,
            Err(UserError::NotFound) => return Ok(false),
            Err(e) => return Err(e),
        };
        let result = self.change_identities(
            &id,
            || corrupt("unlinking added a value"),
            |_, identities| {
                let before = identities.len();
                identities.retain(|i| {
                    !matches!(i, Bson::Document(i)
                        if i.get_str("type").ok() == Some("sso") && i.get_str("provider").ok() == Some(provider))
                });
                Ok(if identities.len() < before {
                    Change::Write(true)
                } else {
                    Change::Keep(false)
                })
            },
        );
        match result {
            Err(UserError::NotFound) => Ok(false),
            other => other,
        }
    }

    pub(super) fn list(
        &mut self,
        filter: &UserFilter,
        limit: usize,
        offset: usize,
    ) -> Result<UserPage, UserError> {
        let mut query = Document::new();
        if let Some(role) = filter.role {
            query.insert("role", role.as_str());
        }
        if let Some(status) = filter.status {
            query.insert("status", status.as_str());
        }
        if let Some(q) = filter.query.as_deref() {
            let pattern = regex_escape(&normalize(q));
            query.insert(
                "$or",
                vec![
                    doc! {"user_id": {"$regex": &pattern, "$options": "i"}},
                    doc! {"identities.value_normalized": {"$regex": &pattern}},
                ],
            );
        }
        let total = self.count(&self.cols.users, query.clone())?;
        let users = self.cols.users.clone();
        let (limit, offset) = (
            i64::try_from(limit).unwrap_or(i64::MAX),
            u64::try_from(offset).unwrap_or(u64::MAX),
        );
        let docs = run(async move {
            users
                .find(query)
                .sort(doc! {"created_at": 1, "_id": 1})
                .skip(offset)
                .limit(limit)
                .await
                .map_err(derr)?
                .try_collect::<Vec<Document>>()
                .await
                .map_err(derr)
        })?;
        let users = docs
            .iter()
            .map(|d| decode_user(d).map(|(u, _)| u))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(UserPage {
            total: u64::try_from(total).unwrap_or(0),
            users,
        })
    }

    pub(super) fn set_role(&mut self, user_id: &str, role: Role) -> Result<(), UserError> {
        self.set_by_user_id(user_id, doc! {"role": role.as_str()})
    }

    pub(super) fn set_requires_password_reset(
        &mut self,
        user_id: &str,
        required: bool,
    ) -> Result<(), UserError> {
        self.set_by_user_id(user_id, doc! {"requires_password_reset": required})
    }

    pub(super) fn set_profile(
        &mut self,
        user_id: &str,
        profile: &Map<String, Json>,
    ) -> Result<(), UserError> {
        self.set_by_user_id(user_id, doc! {"profile": profile_doc(profile)?})
    }
}

/// `text` as a regular expression matching itself.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/-".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_records_convert_to_identities_and_credentials() {
        let legacy = doc! {
            "_id": "u-1",
            "username": " Ann ",
            "email": "Ann@Example.com",
            "password": "a".repeat(64),
            "root_id": "ab".repeat(16),
            "is_admin": true,
            "is_activated": true,
        };
        let c = convert_legacy(&legacy);
        let (user, _) = decode_user(&c.doc).expect("decodes");
        assert_eq!(user.user_id, "u-1");
        assert_eq!(user.role, Role::Admin);
        assert_eq!(user.root_id, "ab".repeat(16));
        assert_eq!(user.password_hash, Some("a".repeat(64)));
        assert_eq!(user.identities.len(), 2);
        assert_eq!(user.identities[0].value_normalized, "ann");
        assert!(user.identities[1].verified && user.identities[1].is_recovery);
        assert_eq!(c.summary, "username=ann, email=ann@example.com");
    }

    #[test]
    fn regex_escaping_matches_literally() {
        assert_eq!(regex_escape("a.b*"), "a\\.b\\*");
    }

    #[test]
    fn profiles_round_trip() {
        let mut m = Map::new();
        m.insert("n".into(), Json::from(3));
        m.insert("f".into(), Json::from(1.5));
        m.insert("s".into(), Json::from("x"));
        m.insert(
            "sso".into(),
            serde_json::json!({"google": {"picture": "p"}}),
        );
        let d = profile_doc(&m).expect("converts");
        assert_eq!(profile_map(&d).expect("converts back"), m);
    }
}
