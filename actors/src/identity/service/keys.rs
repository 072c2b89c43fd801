//! What the identity service does for the webhook-key messages: API keys of the current
//! flavor, the webhook call check (key, signature, walker), and the keys of the
//! alternate flavor. Keys are stored only as their SHA-256 hex; the key owner must still
//! be an active account for a key to work.

use super::super::messages::{
    ApiKeyCreated, ApiKeyInfo, AuthenticateWalkerKey, AuthenticateWebhook, CreateApiKey,
    DeleteWebhookKeys, ExtendWebhookKey, GenerateWebhookKey, ListApiKeys, ListWebhookKeys,
    RevokeApiKey, WebhookKeyGenerated, WebhookKeyInfo,
};
use super::super::webhook::{
    API_KEY_PREFIX, MAX_KEY_LEN, WEBHOOK_KEY_PREFIX, key_hint, new_key, signature_matches,
    signed_text, timestamp_fresh,
};
use super::super::{ErrorKind, IdentityError, caller, token_hash};
use super::{Result, Service};
use crate::runtime::Caller;
use crate::users::{
    ApiKeyRecord, Role, Status, UserError, WebhookKeyRecord, iso8601, iso8601_now, unix_now,
};

const DAY: i64 = 86_400;

fn invalid_key() -> IdentityError {
    IdentityError::unauthorized("invalid, expired or revoked API key")
}

fn invalid_signature(message: &str) -> IdentityError {
    IdentityError::new(ErrorKind::InvalidSignature, message)
}

fn forbidden(message: String) -> IdentityError {
    IdentityError::new(ErrorKind::Forbidden, message)
}

fn info(rec: &ApiKeyRecord, now: i64) -> ApiKeyInfo {
    ApiKeyInfo {
        api_key_id: rec.api_key_id.clone(),
        name: rec.name.clone(),
        created_at: rec.created_at.clone(),
        expires_at: rec.expires_at_iso(),
        active: rec.active(now),
    }
}

fn webhook_info(rec: WebhookKeyRecord) -> WebhookKeyInfo {
    WebhookKeyInfo {
        expiration: iso8601(rec.expires_at, 0),
        id: rec.id,
        name: rec.name,
        root_id: rec.root_id,
        walkers: rec.walkers,
        nodes: rec.nodes,
        key: rec.key_hint,
    }
}

fn too_many(max: usize) -> IdentityError {
    IdentityError::new(
        ErrorKind::Rule,
        format!("at most {max} keys per user; delete one first"),
    )
}

impl Service {
    /// The caller a key's owner runs as: 401 when the account is gone, disabled or the
    /// system account.
    async fn owner(&self, user_id: String) -> Result<Caller> {
        let id = user_id.clone();
        let user = self.db(move |s| s.get(&id)).await?;
        let Some(user) = user.filter(|u| u.status == Status::Active && u.role != Role::System)
        else {
            return Err(invalid_key());
        };
        let entry = self.shared.remember(&user)?;
        caller(user_id, &entry)
    }

    pub(in super::super) async fn create_api_key(
        &self,
        msg: CreateApiKey,
    ) -> Result<ApiKeyCreated> {
        self.account(msg.user_id.clone()).await?;
        let max = self.webhook.max_keys_per_user;
        let uid = msg.user_id.clone();
        if self.db(move |s| s.count_active_api_keys(&uid)).await? >= max {
            return Err(too_many(max));
        }
        let days = msg.expiry_days.unwrap_or(self.webhook.api_key_expiry_days);
        let now = unix_now();
        let rec = ApiKeyRecord {
            api_key_id: super::super::new_user_id(),
            user_id: msg.user_id,
            name: msg.name,
            allowed_walkers: msg.allowed_walkers,
            created_at: iso8601_now(),
            expires_at: (days > 0).then(|| now.saturating_add(i64::from(days) * DAY)),
            revoked: false,
        };
        let api_key = new_key(API_KEY_PREFIX);
        let hash = token_hash(&api_key);
        let stored = rec.clone();
        self.db(move |s| s.create_api_key(&stored, &hash)).await?;
        tracing::info!(user_id = %rec.user_id, api_key_id = %rec.api_key_id, "API key created");
        Ok(ApiKeyCreated {
            api_key,
            info: info(&rec, now),
        })
    }

    pub(in super::super) async fn list_api_keys(
        &self,
        msg: ListApiKeys,
    ) -> Result<Vec<ApiKeyInfo>> {
        self.account(msg.user_id.clone()).await?;
        let keys = self.db(move |s| s.api_keys_of(&msg.user_id)).await?;
        let now = unix_now();
        Ok(keys.iter().map(|k| info(k, now)).collect())
    }

    pub(in super::super) async fn revoke_api_key(&self, msg: RevokeApiKey) -> Result<()> {
        let RevokeApiKey {
            user_id,
            api_key_id,
        } = msg;
        self.account(user_id.clone()).await?;
        let (uid, kid) = (user_id.clone(), api_key_id.clone());
        if !self.db(move |s| s.revoke_api_key(&uid, &kid)).await? {
            return Err(IdentityError::new(ErrorKind::NotFound, "API key not found"));
        }
        tracing::info!(%user_id, %api_key_id, "API key revoked");
        Ok(())
    }

    /// Key (401 `UNAUTHORIZED`), then signature (401 `INVALID_SIGNATURE`), then walker
    /// (403 `FORBIDDEN`), then the owner's account (401).
    pub(in super::super) async fn authenticate_webhook(
        &self,
        msg: AuthenticateWebhook,
    ) -> Result<Caller> {
        let key = msg.api_key.trim().to_string();
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            return Err(invalid_key());
        }
        let hash = token_hash(&key);
        let rec = self.db(move |s| s.api_key_by_hash(&hash)).await?;
        let now = unix_now();
        let Some(rec) = rec.filter(|r| r.active(now)) else {
            return Err(invalid_key());
        };
        let settings = &self.webhook;
        if settings.verify_signature {
            let Some(signature) = msg.signature.as_deref().filter(|s| !s.trim().is_empty()) else {
                return Err(invalid_signature("missing webhook signature"));
            };
            let timestamp = if settings.replay_guard {
                let Some(t) = msg.timestamp.as_deref() else {
                    return Err(invalid_signature("missing X-Webhook-Timestamp"));
                };
                if !timestamp_fresh(t, now, settings.timestamp_tolerance_seconds) {
                    return Err(invalid_signature(
                        "X-Webhook-Timestamp is not a Unix time within the allowed tolerance",
                    ));
                }
                Some(t)
            } else {
                None
            };
            if !signature_matches(&key, &signed_text(timestamp, &msg.body), signature) {
                return Err(invalid_signature("webhook signature does not match"));
            }
        }
        if let Some(allowed) = &rec.allowed_walkers
            && !allowed.contains(&msg.walker)
        {
            return Err(forbidden(format!(
                "this API key may not call walker '{}'",
                msg.walker
            )));
        }
        self.owner(rec.user_id).await
    }

    pub(in super::super) async fn generate_webhook_key(
        &self,
        msg: GenerateWebhookKey,
    ) -> Result<WebhookKeyGenerated> {
        let user = self.account(msg.user_id.clone()).await?;
        let max = self.webhook.max_keys_per_user;
        let uid = msg.user_id.clone();
        if self.db(move |s| s.count_webhook_keys(&uid)).await? >= max {
            return Err(too_many(max));
        }
        let now = unix_now();
        let key = new_key(WEBHOOK_KEY_PREFIX);
        let rec = WebhookKeyRecord {
            id: super::super::new_user_id(),
            user_id: msg.user_id,
            name: msg.name,
            root_id: user.root_id,
            walkers: msg.walkers,
            nodes: msg.nodes,
            key_hint: key_hint(&key),
            created_at: iso8601_now(),
            expires_at: now.saturating_add(msg.lifetime_secs),
        };
        let hash = token_hash(&key);
        let stored = rec.clone();
        if !self
            .db(move |s| s.create_webhook_key(&stored, &hash))
            .await?
        {
            return Err(IdentityError::new(
                ErrorKind::Conflict,
                format!("a webhook key named '{}' already exists", rec.name),
            ));
        }
        tracing::info!(user_id = %rec.user_id, id = %rec.id, "webhook key generated");
        Ok(WebhookKeyGenerated {
            id: rec.id,
            name: rec.name,
            key,
        })
    }

    pub(in super::super) async fn list_webhook_keys(
        &self,
        msg: ListWebhookKeys,
    ) -> Result<Vec<WebhookKeyInfo>> {
        self.account(msg.user_id.clone()).await?;
        let keys = self.db(move |s| s.webhook_keys_of(&msg.user_id)).await?;
        Ok(keys.into_iter().map(webhook_info).collect())
    }

    pub(in super::super) async fn extend_webhook_key(&self, msg: ExtendWebhookKey) -> Result<()> {
        let ExtendWebhookKey {
            user_id,
            id,
            lifetime_secs,
        } = msg;
        self.account(user_id.clone()).await?;
        match self
            .db(move |s| s.extend_webhook_key(&user_id, &id, lifetime_secs))
            .await?
        {
            Some(_) => Ok(()),
            None => Err(IdentityError::new(
                ErrorKind::NotFound,
                "webhook key not found",
            )),
        }
    }

    pub(in super::super) async fn delete_webhook_keys(
        &self,
        msg: DeleteWebhookKeys,
    ) -> Result<usize> {
        self.account(msg.user_id.clone()).await?;
        self.db(move |s| s.delete_webhook_keys(&msg.user_id, &msg.ids))
            .await
    }

    /// Key (401), walker and node restrictions (403), the owner's account (401); the
    /// caller runs on the key's root.
    pub(in super::super) async fn authenticate_walker_key(
        &self,
        msg: AuthenticateWalkerKey,
    ) -> Result<Caller> {
        let key = msg.key.trim().to_string();
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            return Err(invalid_key());
        }
        let hash = token_hash(&key);
        let rec = self.db(move |s| s.webhook_key_by_hash(&hash)).await?;
        let Some(rec) = rec.filter(|r| unix_now() < r.expires_at) else {
            return Err(invalid_key());
        };
        if !rec.walkers.is_empty() && !rec.walkers.contains(&msg.walker) {
            return Err(forbidden(format!(
                "this webhook key may not call walker '{}'",
                msg.walker
            )));
        }
        let node = msg.node.as_deref().unwrap_or(&rec.root_id);
        if !rec.nodes.is_empty() && !rec.nodes.iter().any(|n| n.eq_ignore_ascii_case(node)) {
            return Err(forbidden(format!(
                "this webhook key may not start a walker on node '{node}'"
            )));
        }
        let root = lang::host::parse_id(&rec.root_id).ok_or_else(|| {
            tracing::error!(id = %rec.id, "stored webhook key root is not a valid id");
            IdentityError::from(UserError::Corrupt("webhook key root".into()))
        })?;
        let mut caller = self.owner(rec.user_id).await?;
        caller.root = Some(root);
        Ok(caller)
    }
}
