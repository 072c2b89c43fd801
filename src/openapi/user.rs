//! The `/user/*` operations of the OpenAPI document (spec "Identity endpoints"): one
//! table row per route with its request body, the `data` shape of its success envelope,
//! its security and the error codes each failure status answers with. Schemas live under
//! `components.schemas` as `user.<Name>` (no app archetype can take such a key).

use serde_json::{Map, Value, json};

/// The tag of the identity operations.
pub const TAG: &str = "user";

/// One `/user/*` route.
pub(super) struct Op {
    pub(super) tag: &'static str,
    pub(super) path: &'static str,
    pub(super) method: &'static str,
    pub(super) id: &'static str,
    pub(super) summary: &'static str,
    /// Needs `Authorization: Bearer <token>`.
    pub(super) bearer: bool,
    /// `user.<name>` of the JSON body, if any.
    pub(super) request: Option<&'static str>,
    /// Success statuses with the `user.<name>` of their `data`.
    pub(super) success: &'static [(u16, &'static str)],
    /// Failure statuses with the codes they answer with.
    pub(super) errors: &'static [(u16, &'static [&'static str])],
}

pub(super) const BODY: (u16, &[&str]) = (422, &["VALIDATION_ERROR"]);
pub(super) const TOO_LARGE: (u16, &[&str]) = (413, &["PAYLOAD_TOO_LARGE"]);
pub(super) const BUSY: (u16, &[&str]) = (503, &["SERVICE_UNAVAILABLE"]);
pub(super) const AUTH: (u16, &[&str]) = (401, &["UNAUTHORIZED"]);
pub(super) const INTERNAL: (u16, &[&str]) = (500, &["INTERNAL_ERROR"]);

const OPS: &[Op] = &[
    Op {
        path: "/user/register",
        method: "post",
        id: "user_register",
        tag: TAG,
        summary: "Create an account (no token is returned: log in next).",
        bearer: false,
        request: Some("RegisterRequest"),
        success: &[(201, "Registered")],
        errors: &[
            (400, &["VALIDATION_ERROR"]),
            (409, &["IDENTITY_TAKEN"]),
            TOO_LARGE,
            BODY,
            (429, &["RATE_LIMITED"]),
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        path: "/user/login",
        method: "post",
        id: "user_login",
        tag: TAG,
        summary: "Exchange an identity and password for a session token.",
        bearer: false,
        request: Some("LoginRequest"),
        success: &[(200, "LoggedIn")],
        errors: &[
            AUTH,
            TOO_LARGE,
            BODY,
            (429, &["RATE_LIMITED"]),
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        path: "/user/refresh-token",
        method: "post",
        id: "user_refresh_token",
        tag: TAG,
        summary: "A fresh session token for a valid one (given in the body).",
        bearer: false,
        request: Some("RefreshRequest"),
        success: &[(200, "Refreshed")],
        errors: &[AUTH, TOO_LARGE, BODY, INTERNAL, BUSY],
    },
    Op {
        path: "/user/me",
        method: "get",
        id: "user_me",
        tag: TAG,
        summary: "The caller's account: never credentials, hashes or the root id.",
        bearer: true,
        request: None,
        success: &[(200, "Me")],
        errors: &[AUTH, (404, &["NOT_FOUND"]), INTERNAL, BUSY],
    },
    Op {
        path: "/user/password",
        method: "put",
        id: "user_change_password",
        tag: TAG,
        summary: "Change the caller's password (wrong current passwords count as failed logins).",
        bearer: true,
        request: Some("ChangePasswordRequest"),
        success: &[(200, "PasswordChanged")],
        errors: &[
            (400, &["BAD_REQUEST", "VALIDATION_ERROR"]),
            AUTH,
            (404, &["NOT_FOUND"]),
            TOO_LARGE,
            BODY,
            (429, &["RATE_LIMITED"]),
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        path: "/user/add-identity",
        method: "post",
        id: "user_add_identity",
        tag: TAG,
        summary: "Add a username or e-mail identity to the caller's account (no mail is sent).",
        bearer: true,
        request: Some("AddIdentityRequest"),
        success: &[(200, "IdentityAdded")],
        errors: &[
            (400, &["VALIDATION_ERROR"]),
            AUTH,
            (404, &["NOT_FOUND"]),
            (409, &["IDENTITY_TAKEN"]),
            TOO_LARGE,
            BODY,
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        path: "/user/send-verification",
        method: "post",
        id: "user_send_verification",
        tag: TAG,
        summary: "Mail a verification token for one of the caller's e-mail identities.",
        bearer: true,
        request: Some("SendVerificationRequest"),
        success: &[(202, "VerificationSent"), (200, "VerificationSent")],
        errors: &[
            (400, &["VALIDATION_ERROR"]),
            AUTH,
            (404, &["NOT_FOUND"]),
            TOO_LARGE,
            BODY,
            (429, &["RATE_LIMITED"]),
            INTERNAL,
            (502, &["EMAIL_SEND_FAILED"]),
            (503, &["EMAIL_DISABLED", "SERVICE_UNAVAILABLE"]),
        ],
    },
    Op {
        path: "/user/verify-identity",
        method: "post",
        id: "user_verify_identity",
        tag: TAG,
        summary: "Redeem a verification token (the token is the credential).",
        bearer: false,
        request: Some("TokenRequest"),
        success: &[(200, "IdentityVerified")],
        errors: &[(400, &["INVALID_TOKEN"]), TOO_LARGE, BODY, INTERNAL, BUSY],
    },
    Op {
        path: "/user/forgot-password",
        method: "post",
        id: "user_forgot_password",
        tag: TAG,
        summary: "Always the same answer; a reset token goes to a verified recovery e-mail of the account, if there is one.",
        bearer: false,
        request: Some("ForgotPasswordRequest"),
        success: &[(200, "ForgotPassword")],
        errors: &[TOO_LARGE, BODY, BUSY],
    },
    Op {
        path: "/user/reset-password",
        method: "post",
        id: "user_reset_password",
        tag: TAG,
        summary: "Set a new password with a reset token (the token is the credential).",
        bearer: false,
        request: Some("ResetPasswordRequest"),
        success: &[(200, "PasswordReset")],
        errors: &[
            (400, &["INVALID_TOKEN", "VALIDATION_ERROR"]),
            TOO_LARGE,
            BODY,
            INTERNAL,
            BUSY,
        ],
    },
];

/// `#/components/schemas/user.<name>`, or `<name>` itself when it has a namespace
/// (`webhook.ApiKeyCreated`).
pub(super) fn schema_ref(name: &str) -> Value {
    if name.contains('.') {
        return json!({"$ref": format!("#/components/schemas/{name}")});
    }
    json!({"$ref": format!("#/components/schemas/user.{name}")})
}

/// Add the `/user/*` paths to `paths` (they are mounted before the app's routes, so
/// they win over an app route of the same method and path).
pub fn add_paths(paths: &mut Map<String, Value>) {
    add_ops(paths, OPS);
}

/// Add the operations of `ops` to `paths`.
pub(super) fn add_ops(paths: &mut Map<String, Value>, ops: &[Op]) {
    for op in ops {
        let item = paths.entry(op.path).or_insert_with(|| json!({}));
        if let Some(item) = item.as_object_mut() {
            item.insert(op.method.into(), operation(op));
        }
    }
}

fn operation(op: &Op) -> Value {
    let mut out = Map::new();
    out.insert("tags".into(), json!([op.tag]));
    out.insert("operationId".into(), json!(op.id));
    out.insert("summary".into(), json!(op.summary));
    let path_params: Vec<Value> = op
        .path
        .split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": string()}))
        .collect();
    if !path_params.is_empty() {
        out.insert("parameters".into(), Value::Array(path_params));
    }
    if let Some(name) = op.request {
        out.insert(
            "requestBody".into(),
            json!({
                "required": true,
                "content": {"application/json": {"schema": schema_ref(name)}},
            }),
        );
    }
    let security = if op.bearer {
        json!([{"bearerAuth": []}])
    } else {
        json!([])
    };
    out.insert("security".into(), security);
    let mut responses = Map::new();
    for &(status, data) in op.success {
        let description = if op.success.len() > 1 && status == 200 {
            "Nothing to do (already done)."
        } else {
            "Success: the envelope with `data` as shown."
        };
        responses.insert(
            status.to_string(),
            json!({
                "description": description,
                "content": {"application/json": {"schema": success_envelope(data)}},
            }),
        );
    }
    // Every route with a JSON body refuses another declared content type
    // (`server::body::json_object`).
    let unsupported: &[(u16, &[&str])] = if op.request.is_some() {
        &[(415, &["UNSUPPORTED_MEDIA_TYPE"])]
    } else {
        &[]
    };
    for &(status, codes) in op.errors.iter().chain(unsupported) {
        responses.insert(
            status.to_string(),
            json!({
                "description": codes.join(", "),
                "content": {"application/json": {"schema": error_envelope(codes)}},
            }),
        );
    }
    out.insert("responses".into(), Value::Object(responses));
    Value::Object(out)
}

/// The success envelope with `data` of schema `user.<data>`.
fn success_envelope(data: &str) -> Value {
    json!({
        "type": "object",
        "required": ["ok", "type", "data", "error", "meta"],
        "properties": {
            "ok": {"type": "boolean", "const": true},
            "type": {"type": "string", "const": "response"},
            "data": schema_ref(data),
            "error": {"type": "null"},
            "meta": {"$ref": "#/components/schemas/Meta"},
        },
    })
}

/// The failure envelope whose `error.code` is one of `codes`.
fn error_envelope(codes: &[&str]) -> Value {
    json!({
        "allOf": [
            {"$ref": "#/components/schemas/ErrorEnvelope"},
            {"properties": {"error": {"properties": {"code": {"enum": codes}}}}},
        ],
    })
}

pub(super) fn object(required: &[&str], properties: Value) -> Value {
    json!({
        "type": "object",
        "required": required,
        "properties": properties,
    })
}

pub(super) fn string() -> Value {
    json!({"type": "string"})
}

pub(super) fn uuid() -> Value {
    json!({"type": "string", "format": "uuid"})
}

/// The `user.*` schemas.
pub fn schemas(out: &mut Map<String, Value>) {
    let password =
        json!({"type": "string", "minLength": 1, "description": "At most 72 bytes (bcrypt)."});
    let token = json!({"type": "string", "description": "A session token (JWT)."});
    let one_time = json!({"type": "string", "description": "The one-time token from the mail."});
    let rows: Vec<(&str, Value)> = vec![
        (
            "Identity",
            object(
                &["type", "value"],
                json!({
                    "type": {"type": "string", "enum": ["username", "email"]},
                    "value": {"type": "string", "minLength": 1, "maxLength": 254},
                }),
            ),
        ),
        (
            "EmailIdentity",
            object(
                &["type", "value"],
                json!({"type": {"type": "string", "const": "email"}, "value": string()}),
            ),
        ),
        (
            "PasswordCredential",
            object(
                &["type", "password"],
                json!({"type": {"type": "string", "const": "password"}, "password": password}),
            ),
        ),
        (
            "RegisterRequest",
            object(
                &["identities", "credential"],
                json!({
                    "identities": {
                        "type": "array",
                        "minItems": 1,
                        "items": schema_ref("Identity"),
                        "description": "At most one of each type; usernames starting with `__` are reserved.",
                    },
                    "credential": schema_ref("PasswordCredential"),
                    "profile": {
                        "type": "object",
                        "maxProperties": 20,
                        "propertyNames": {"pattern": "^[a-zA-Z][a-zA-Z0-9_]{0,63}$"},
                        "additionalProperties": {"type": ["string", "integer", "number", "boolean"]},
                        "description": "At most 8192 bytes as JSON; strings at most 1024 characters.",
                    },
                }),
            ),
        ),
        (
            "LoginRequest",
            object(
                &["identity", "credential"],
                json!({"identity": schema_ref("Identity"), "credential": schema_ref("PasswordCredential")}),
            ),
        ),
        (
            "RefreshRequest",
            object(
                &["token"],
                json!({"token": {"type": "string", "description": "A session token; an optional `Bearer ` prefix is stripped."}}),
            ),
        ),
        (
            "ChangePasswordRequest",
            object(
                &["current_password", "new_password"],
                json!({"current_password": string(), "new_password": password}),
            ),
        ),
        (
            "AddIdentityRequest",
            object(
                &["identity"],
                json!({"identity": schema_ref("Identity"), "is_recovery": {"type": "boolean"}}),
            ),
        ),
        (
            "SendVerificationRequest",
            object(
                &["identity"],
                json!({"identity": schema_ref("EmailIdentity")}),
            ),
        ),
        (
            "TokenRequest",
            object(&["token"], json!({"token": one_time})),
        ),
        (
            "ForgotPasswordRequest",
            object(
                &["identity"],
                json!({"identity": schema_ref("EmailIdentity")}),
            ),
        ),
        (
            "ResetPasswordRequest",
            object(
                &["token", "new_password"],
                json!({"token": one_time, "new_password": password}),
            ),
        ),
        (
            "Registered",
            object(
                &["user_id", "message"],
                json!({"user_id": uuid(), "message": string()}),
            ),
        ),
        (
            "LoggedIn",
            object(
                &["user_id", "token", "root_id", "role"],
                json!({"user_id": uuid(), "token": token, "root_id": string(), "role": string()}),
            ),
        ),
        (
            "Refreshed",
            object(
                &["token", "message"],
                json!({"token": token, "message": string()}),
            ),
        ),
        (
            "Me",
            object(
                &[
                    "user_id",
                    "role",
                    "status",
                    "identities",
                    "profile",
                    "created_at",
                    "updated_at",
                ],
                json!({
                    "user_id": uuid(),
                    "role": string(),
                    "status": string(),
                    "identities": {
                        "type": "array",
                        "items": object(
                            &["type", "value", "verified", "is_recovery"],
                            json!({
                                "type": string(),
                                "value": string(),
                                "verified": {"type": "boolean"},
                                "is_recovery": {"type": "boolean"},
                            }),
                        ),
                    },
                    "profile": {"type": "object", "additionalProperties": true},
                    "created_at": {"type": "string", "format": "date-time"},
                    "updated_at": {"type": "string", "format": "date-time"},
                }),
            ),
        ),
        (
            "PasswordChanged",
            object(
                &["user_id", "message"],
                json!({"user_id": uuid(), "message": string()}),
            ),
        ),
        (
            "IdentityAdded",
            object(
                &["status", "verified"],
                json!({"status": {"type": "string", "const": "added"}, "verified": {"type": "boolean"}}),
            ),
        ),
        (
            "VerificationSent",
            object(
                &["status", "email_sent"],
                json!({
                    "status": {"type": "string", "enum": ["pending_verification", "already_verified"]},
                    "email_sent": {"type": "boolean"},
                }),
            ),
        ),
        (
            "IdentityVerified",
            object(
                &["status", "identity"],
                json!({"status": {"type": "string", "const": "verified"}, "identity": string()}),
            ),
        ),
        (
            "ForgotPassword",
            object(
                &["status", "message"],
                json!({"status": {"type": "string", "const": "ok"}, "message": string()}),
            ),
        ),
        (
            "PasswordReset",
            object(
                &["status"],
                json!({"status": {"type": "string", "const": "password_reset"}}),
            ),
        ),
    ];
    for (name, schema) in rows {
        out.insert(format!("user.{name}"), schema);
    }
}
