//! The admin and SSO operations of the OpenAPI document (spec "Admin endpoints", "SSO
//! endpoints"; decisions.md "Admin"): a table like `/user/*`'s (tags `admin` and `sso`,
//! schemas `admin.<Name>`).

use super::user::{AUTH, BODY, BUSY, INTERNAL, Op, TOO_LARGE, add_ops, object, string, uuid};
use serde_json::{Map, Value, json};

/// The tag of the admin operations.
pub const TAG: &str = "admin";
/// The tag of the SSO operations.
pub const SSO_TAG: &str = "sso";

const FORBIDDEN: (u16, &[&str]) = (403, &["FORBIDDEN", "PASSWORD_RESET_REQUIRED"]);
const NOT_FOUND: (u16, &[&str]) = (404, &["NOT_FOUND"]);

const OPS: &[Op] = &[
    Op {
        tag: TAG,
        path: "/admin/login",
        method: "post",
        id: "admin_login",
        summary: "Admin password login; the token lives `session_expiry_hours`.",
        bearer: false,
        request: Some("admin.LoginRequest"),
        success: &[(200, "admin.LoggedIn")],
        errors: &[
            AUTH,
            (403, &["FORBIDDEN"]),
            TOO_LARGE,
            BODY,
            (429, &["RATE_LIMITED"]),
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        tag: TAG,
        path: "/admin/reset-password",
        method: "post",
        id: "admin_reset_password",
        summary: "An admin changes its own password (open while a change is required); a fresh admin token comes back.",
        bearer: true,
        request: Some("admin.ChangePasswordRequest"),
        success: &[(200, "admin.PasswordChanged")],
        errors: &[
            (400, &["BAD_REQUEST", "VALIDATION_ERROR"]),
            AUTH,
            (403, &["FORBIDDEN"]),
            TOO_LARGE,
            BODY,
            (429, &["RATE_LIMITED"]),
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        tag: TAG,
        path: "/admin/users",
        method: "get",
        id: "admin_list_users",
        summary: "List users, oldest first. Query: `limit` (1 to `max_page_size`, default 100), `offset` (0), `q` (part of a username, e-mail or user id), `role`, `status`.",
        bearer: true,
        request: None,
        success: &[(200, "admin.UserList")],
        errors: &[AUTH, FORBIDDEN, BODY, INTERNAL, BUSY],
    },
    Op {
        tag: TAG,
        path: "/admin/users",
        method: "post",
        id: "admin_create_user",
        summary: "Create a password account (it must change its password unless `requires_password_reset` is false).",
        bearer: true,
        request: Some("admin.CreateUserRequest"),
        success: &[(201, "admin.User")],
        errors: &[
            (400, &["VALIDATION_ERROR"]),
            AUTH,
            FORBIDDEN,
            (409, &["IDENTITY_TAKEN"]),
            TOO_LARGE,
            BODY,
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        tag: TAG,
        path: "/admin/users/{username}",
        method: "get",
        id: "admin_get_user",
        summary: "A user's details; `{username}` is a username, an e-mail or a user id.",
        bearer: true,
        request: None,
        success: &[(200, "admin.User")],
        errors: &[AUTH, FORBIDDEN, NOT_FOUND, INTERNAL, BUSY],
    },
    Op {
        tag: TAG,
        path: "/admin/users/{username}",
        method: "put",
        id: "admin_update_user",
        summary: "Update role, status or the must-change-password flag (protected accounts keep role and status).",
        bearer: true,
        request: Some("admin.UpdateUserRequest"),
        success: &[(200, "admin.UserUpdated")],
        errors: &[
            (400, &["VALIDATION_ERROR"]),
            AUTH,
            FORBIDDEN,
            NOT_FOUND,
            TOO_LARGE,
            BODY,
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        tag: TAG,
        path: "/admin/users/{username}",
        method: "delete",
        id: "admin_delete_user",
        summary: "Delete a user; the bootstrap admin, `system` accounts, the guest and the acting admin are refused (403).",
        bearer: true,
        request: None,
        success: &[(200, "admin.UserDeleted")],
        errors: &[AUTH, FORBIDDEN, NOT_FOUND, INTERNAL, BUSY],
    },
    Op {
        tag: TAG,
        path: "/admin/users/{username}/force-password-reset",
        method: "post",
        id: "admin_force_password_reset",
        summary: "The user must change its password; a reset mail goes to a verified recovery e-mail when mail is configured.",
        bearer: true,
        request: None,
        success: &[(200, "admin.ResetForced")],
        errors: &[
            (400, &["VALIDATION_ERROR"]),
            AUTH,
            FORBIDDEN,
            NOT_FOUND,
            INTERNAL,
            BUSY,
        ],
    },
    Op {
        tag: TAG,
        path: "/admin/sso/providers",
        method: "get",
        id: "admin_sso_providers",
        summary: "The SSO platforms and whether each is configured.",
        bearer: true,
        request: None,
        success: &[(200, "admin.SsoProviders")],
        errors: &[AUTH, FORBIDDEN, INTERNAL, BUSY],
    },
    Op {
        tag: TAG,
        path: "/admin/sso/users/{username}/accounts",
        method: "get",
        id: "admin_sso_accounts",
        summary: "A user's linked SSO accounts.",
        bearer: true,
        request: None,
        success: &[(200, "admin.SsoAccounts")],
        errors: &[AUTH, FORBIDDEN, NOT_FOUND, INTERNAL, BUSY],
    },
    Op {
        tag: TAG,
        path: "/admin/sso/users/{username}/accounts/{platform}",
        method: "delete",
        id: "admin_sso_unlink",
        summary: "Unlink a user's SSO account of one platform (the account stays).",
        bearer: true,
        request: None,
        success: &[(200, "admin.SsoAccounts")],
        errors: &[AUTH, FORBIDDEN, NOT_FOUND, INTERNAL, BUSY],
    },
    Op {
        tag: SSO_TAG,
        path: "/sso/{platform}/login",
        method: "get",
        id: "sso_login",
        summary: "302 to the provider's sign-in (`platform`: google, apple, github or another configured one); 501 when the provider is not configured.",
        bearer: false,
        request: None,
        success: &[],
        errors: &[
            NOT_FOUND,
            (501, &["NOT_IMPLEMENTED"]),
            (502, &["SSO_PROVIDER_ERROR"]),
            BUSY,
        ],
    },
    Op {
        tag: SSO_TAG,
        path: "/sso/{platform}/register",
        method: "get",
        id: "sso_register",
        summary: "302 to the provider (the same flow as login: a first sign-in creates the account).",
        bearer: false,
        request: None,
        success: &[],
        errors: &[
            NOT_FOUND,
            (501, &["NOT_IMPLEMENTED"]),
            (502, &["SSO_PROVIDER_ERROR"]),
            BUSY,
        ],
    },
    Op {
        tag: SSO_TAG,
        path: "/sso/{platform}/callback",
        method: "get",
        id: "sso_callback",
        summary: "The provider's redirect (`code`, `state`). With `client_auth_callback_url`: 302 to `<url>?token=` or `<url>?error=&message=`; else this JSON.",
        bearer: false,
        request: None,
        success: &[(200, "admin.SsoSignedIn")],
        errors: &[
            (400, &["INVALID_STATE", "SSO_FAILED"]),
            (401, &["UNAUTHORIZED"]),
            (409, &["IDENTITY_TAKEN"]),
            (501, &["NOT_IMPLEMENTED"]),
            (502, &["SSO_PROVIDER_ERROR"]),
            BUSY,
        ],
    },
    Op {
        tag: SSO_TAG,
        path: "/sso/{platform}/callback",
        method: "post",
        id: "sso_callback_post",
        summary: "The same callback for providers that post it (form or JSON body with `code`, `state`).",
        bearer: false,
        request: None,
        success: &[(200, "admin.SsoSignedIn")],
        errors: &[
            (400, &["INVALID_STATE", "SSO_FAILED"]),
            (401, &["UNAUTHORIZED"]),
            (409, &["IDENTITY_TAKEN"]),
            TOO_LARGE,
            BODY,
            (501, &["NOT_IMPLEMENTED"]),
            (502, &["SSO_PROVIDER_ERROR"]),
            BUSY,
        ],
    },
];

/// Add the admin and SSO paths to `paths`.
pub fn add_paths(paths: &mut Map<String, Value>) {
    add_ops(paths, OPS);
    // The redirects have no envelope: document them by hand.
    for p in ["/sso/{platform}/login", "/sso/{platform}/register"] {
        if let Some(Value::Object(responses)) = paths
            .get_mut(p)
            .and_then(|i| i.get_mut("get"))
            .and_then(|o| o.get_mut("responses"))
        {
            responses.insert(
                "302".into(),
                json!({"description": "Redirect (`Location`) to the provider's authorization URL with `state`, `nonce` and a PKCE S256 `code_challenge`."}),
            );
        }
    }
}

fn boolean() -> Value {
    json!({"type": "boolean"})
}

/// The `admin.*` schemas.
pub fn schemas(out: &mut Map<String, Value>) {
    let role = json!({"type": "string", "enum": ["admin", "system", "user"]});
    let status = json!({"type": "string", "enum": ["active", "disabled"]});
    let sso_account = object(
        &["platform", "email", "linked_at"],
        json!({"platform": string(), "email": string(), "linked_at": {"type": "string", "format": "date-time"}}),
    );
    let user = object(
        &[
            "user_id",
            "username",
            "role",
            "status",
            "requires_password_reset",
            "protected",
            "identities",
            "sso_accounts",
        ],
        json!({
            "user_id": uuid(),
            "username": {"type": ["string", "null"]},
            "email": {"type": ["string", "null"]},
            "role": role,
            "status": status,
            "requires_password_reset": boolean(),
            "has_password": boolean(),
            "protected": boolean(),
            "bootstrap_admin": boolean(),
            "root_id": string(),
            "identities": {"type": "array", "items": {"type": "object"}},
            "sso_accounts": {"type": "array", "items": sso_account.clone()},
            "profile": {"type": "object"},
            "created_at": {"type": "string", "format": "date-time"},
            "updated_at": {"type": "string", "format": "date-time"},
        }),
    );
    let rows: Vec<(&str, Value)> = vec![
        (
            "LoginRequest",
            object(
                &["username", "password"],
                json!({"username": string(), "password": string()}),
            ),
        ),
        (
            "LoggedIn",
            object(
                &[
                    "token",
                    "user_id",
                    "username",
                    "role",
                    "requires_password_reset",
                ],
                json!({"message": string(), "token": string(), "user_id": uuid(), "username": string(),
                       "role": {"type": "string", "const": "admin"}, "requires_password_reset": boolean()}),
            ),
        ),
        (
            "ChangePasswordRequest",
            object(
                &["current_password", "new_password"],
                json!({"current_password": string(), "new_password": string()}),
            ),
        ),
        (
            "PasswordChanged",
            object(
                &["message", "token"],
                json!({"message": string(), "token": string()}),
            ),
        ),
        ("User", user.clone()),
        (
            "UserList",
            object(
                &["users", "total", "count", "limit", "offset"],
                json!({"users": {"type": "array", "items": user.clone()}, "total": {"type": "integer"},
                       "count": {"type": "integer"}, "limit": {"type": "integer"}, "offset": {"type": "integer"}}),
            ),
        ),
        (
            "CreateUserRequest",
            object(
                &["username", "password"],
                json!({"username": string(), "password": string(), "email": string(), "role": role.clone(),
                       "requires_password_reset": boolean()}),
            ),
        ),
        (
            "UpdateUserRequest",
            object(
                &[],
                json!({"role": role, "status": status, "requires_password_reset": boolean()}),
            ),
        ),
        (
            "UserUpdated",
            object(
                &["message", "updates", "user"],
                json!({"message": string(), "updates": {"type": "array", "items": string()}, "user": user}),
            ),
        ),
        (
            "UserDeleted",
            object(
                &["message", "user_id"],
                json!({"message": string(), "user_id": uuid(), "username": string()}),
            ),
        ),
        (
            "ResetForced",
            object(
                &["username", "requires_password_reset", "email_sent"],
                json!({"message": string(), "username": string(), "user_id": uuid(), "requires_password_reset": boolean(), "email_sent": boolean()}),
            ),
        ),
        (
            "SsoProviders",
            object(
                &["providers", "sso_host", "client_auth_callback_url"],
                json!({
                    "providers": {"type": "array", "items": object(
                        &["platform", "configured"],
                        json!({"platform": string(), "configured": boolean(), "issuer": string(),
                               "client_id_set": boolean(), "client_secret_set": boolean()}),
                    )},
                    "sso_host": string(),
                    "client_auth_callback_url": string(),
                }),
            ),
        ),
        (
            "SsoAccounts",
            object(
                &["user_id", "sso_accounts"],
                json!({"username": string(), "user_id": uuid(), "sso_accounts": {"type": "array", "items": sso_account}}),
            ),
        ),
        (
            "SsoSignedIn",
            object(
                &[
                    "user_id", "token", "root_id", "role", "platform", "email", "created", "linked",
                ],
                json!({"message": string(), "user_id": uuid(), "token": string(), "root_id": string(), "role": string(),
                       "platform": string(), "operation": {"type": "string", "enum": ["login", "register"]},
                       "email": string(), "created": boolean(), "linked": boolean()}),
            ),
        ),
    ];
    for (name, schema) in rows {
        out.insert(format!("admin.{name}"), schema);
    }
}
