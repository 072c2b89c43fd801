//! The webhook operations of the OpenAPI document (spec "API key endpoints", "Webhook
//! endpoint", "Alternate webhook flavor"; decisions.md "Webhooks"): the fixed key routes
//! from a table like `/user/*`'s (tag `webhooks`, schemas `webhook.<Name>`), and the
//! security schemes of webhook walkers: `apiKeyAuth` (`X-API-Key`) together with
//! `webhookSignature` (the HMAC-SHA256 header) for the current flavor, and one scheme per
//! declared key header or query parameter for the alternate flavor.

use super::user::{AUTH, BODY, BUSY, INTERNAL, Op, TOO_LARGE, add_ops, object, string, uuid};
use serde_json::{Map, Value, json};

/// The tag of the webhook operations (key routes and webhook walkers).
pub const TAG: &str = "webhooks";

const NOT_FOUND: (u16, &[&str]) = (404, &["NOT_FOUND"]);

const OPS: &[Op] = &[
    Op {
        tag: TAG,
        path: "/api-key/create",
        method: "post",
        id: "api_key_create",
        summary: "Create an API key for webhooks (shown once; stored only as its SHA-256).",
        bearer: true,
        request: Some("webhook.ApiKeyRequest"),
        success: &[(201, "webhook.ApiKeyCreated")],
        errors: &[
            AUTH,
            (400, &["VALIDATION_ERROR"]),
            TOO_LARGE,
            BODY,
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        tag: TAG,
        path: "/api-key/list",
        method: "get",
        id: "api_key_list",
        summary: "The caller's API keys (never the keys themselves).",
        bearer: true,
        request: None,
        success: &[(200, "webhook.ApiKeyList")],
        errors: &[AUTH, INTERNAL, BUSY],
    },
    Op {
        tag: TAG,
        path: "/api-key/{api_key_id}",
        method: "delete",
        id: "api_key_revoke",
        summary: "Revoke one of the caller's API keys (another user's key is 404).",
        bearer: true,
        request: None,
        success: &[(200, "webhook.Message")],
        errors: &[AUTH, NOT_FOUND, INTERNAL, BUSY],
    },
    Op {
        tag: TAG,
        path: "/webhook/generate-key",
        method: "post",
        id: "webhook_generate_key",
        summary: "Alternate flavor: generate a webhook key (shown once).",
        bearer: true,
        request: Some("webhook.GenerateKeyRequest"),
        success: &[(201, "webhook.KeyGenerated")],
        errors: &[
            AUTH,
            (400, &["VALIDATION_ERROR"]),
            (409, &["CONFLICT"]),
            TOO_LARGE,
            BODY,
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        tag: TAG,
        path: "/webhook",
        method: "get",
        id: "webhook_list_keys",
        summary: "Alternate flavor: the caller's webhook keys (`key` is only a hint).",
        bearer: true,
        request: None,
        success: &[(200, "webhook.KeyList")],
        errors: &[AUTH, INTERNAL, BUSY],
    },
    Op {
        tag: TAG,
        path: "/webhook/extend/{id}",
        method: "patch",
        id: "webhook_extend_key",
        summary: "Alternate flavor: push a key's expiration back (from the later of its \
            expiration and now).",
        bearer: true,
        request: Some("webhook.Expiration"),
        success: &[(200, "webhook.Message")],
        errors: &[AUTH, NOT_FOUND, TOO_LARGE, BODY, INTERNAL, BUSY],
    },
    Op {
        tag: TAG,
        path: "/webhook/delete",
        method: "delete",
        id: "webhook_delete_keys",
        summary: "Alternate flavor: delete the caller's keys among `ids`.",
        bearer: true,
        request: Some("webhook.DeleteKeysRequest"),
        success: &[(200, "webhook.Message")],
        errors: &[AUTH, TOO_LARGE, BODY, INTERNAL, BUSY],
    },
];

/// Add the key routes to `paths` (a walker route at the same method and path loses, as
/// it does in the server: the fixed routes are mounted first).
pub fn add_paths(paths: &mut Map<String, Value>) {
    add_ops(paths, OPS);
}

/// The text of the current flavor's signature scheme.
pub fn signature_description(header: &str) -> String {
    format!(
        "`{header}`: the lowercase hex HMAC-SHA256 of the raw request body, keyed with the \
         API key (the `X-API-Key` value as sent); a `sha256=` prefix is accepted and the \
         comparison is constant-time. With `[scale.webhook] replay_guard` on, also send \
         `X-Webhook-Timestamp` (decimal Unix seconds, within `timestamp_tolerance_seconds`) \
         and sign `<timestamp>.<raw body>` instead. Failures: unknown, expired or revoked key \
         401 `UNAUTHORIZED`; missing or wrong signature 401 `INVALID_SIGNATURE`; walker not \
         in the key's `allowed_walkers` 403 `FORBIDDEN`; body over `max_body_bytes` 413."
    )
}

/// The `webhook.*` schemas.
pub fn schemas(out: &mut Map<String, Value>) {
    let iso = json!({"type": "string", "format": "date-time"});
    let iso_or_null = json!({"type": ["string", "null"], "format": "date-time",
        "description": "null = permanent"});
    let names = json!({"type": "array", "items": {"type": "string"}, "maxItems": 100});
    let expiration = object(
        &["count", "interval"],
        json!({
            "count": {"type": "integer", "minimum": 1},
            "interval": {"enum": ["seconds", "minutes", "hours", "days"]},
        }),
    );
    let rows: Vec<(&str, Value)> = vec![
        (
            "ApiKeyRequest",
            object(
                &["name"],
                json!({
                    "name": {"type": "string", "minLength": 1, "maxLength": 100},
                    "expiry_days": {"type": ["integer", "null"], "minimum": 0, "maximum": 36500,
                        "description": "Days until expiry; 0 = permanent; absent = `[scale.webhook] api_key_expiry_days`."},
                    "allowed_walkers": {"type": ["array", "null"], "items": {"type": "string"},
                        "description": "Webhook walkers this key may call; absent, null or empty = all."},
                }),
            ),
        ),
        (
            "ApiKeyCreated",
            object(
                &["api_key", "api_key_id", "name", "created_at", "expires_at"],
                json!({
                    "api_key": {"type": "string", "description": "The key: shown only here."},
                    "api_key_id": uuid(),
                    "name": string(),
                    "created_at": iso,
                    "expires_at": iso_or_null,
                }),
            ),
        ),
        (
            "ApiKey",
            object(
                &["api_key_id", "name", "created_at", "expires_at", "active"],
                json!({
                    "api_key_id": uuid(),
                    "name": string(),
                    "created_at": iso,
                    "expires_at": iso_or_null,
                    "active": {"type": "boolean", "description": "Neither revoked nor expired."},
                }),
            ),
        ),
        (
            "ApiKeyList",
            object(
                &["api_keys"],
                json!({"api_keys": {"type": "array", "items": {"$ref": "#/components/schemas/webhook.ApiKey"}}}),
            ),
        ),
        (
            "Message",
            object(&["message"], json!({"message": string()})),
        ),
        ("Expiration", expiration.clone()),
        (
            "GenerateKeyRequest",
            object(
                &["name"],
                json!({
                    "name": {"type": "string", "minLength": 1, "maxLength": 100,
                        "description": "Unique among the caller's keys."},
                    "walkers": {"type": "array", "items": {"type": "string"}, "description": "Empty = all."},
                    "nodes": {"type": "array", "items": {"type": "string"},
                        "description": "Node ids (32 hex) a walker may start on; empty = all."},
                    "expiration": {"$ref": "#/components/schemas/webhook.Expiration",
                        "description": "Absent = 60 days."},
                }),
            ),
        ),
        (
            "KeyGenerated",
            object(
                &["id", "name", "key"],
                json!({"id": uuid(), "name": string(),
                       "key": {"type": "string", "description": "The key: shown only here."}}),
            ),
        ),
        (
            "Key",
            object(
                &[
                    "id",
                    "name",
                    "root_id",
                    "walkers",
                    "nodes",
                    "expiration",
                    "key",
                ],
                json!({
                    "id": uuid(),
                    "name": string(),
                    "root_id": string(),
                    "walkers": names.clone(),
                    "nodes": names,
                    "expiration": iso,
                    "key": {"type": "string", "description": "The key's first characters only."},
                }),
            ),
        ),
        (
            "KeyList",
            object(
                &["keys"],
                json!({"keys": {"type": "array", "items": {"$ref": "#/components/schemas/webhook.Key"}}}),
            ),
        ),
        (
            "DeleteKeysRequest",
            object(
                &["ids"],
                json!({"ids": {"type": "array", "items": {"type": "string"}, "maxItems": 1000}}),
            ),
        ),
    ];
    for (name, schema) in rows {
        out.insert(format!("webhook.{name}"), schema);
    }
}
