//! The admin API and portal (spec "Admin endpoints", "Authentication" 12, decisions.md
//! "Admin"). Handlers extract (the [`Admin`] extractor: a session token of an active
//! admin whose password needs no change; the JSON body), send the identity service its
//! message and map the reply. `/admin` serves the portal page from the binary
//! (`admin_portal.html`: one HTML file with its script and style inline, no request to
//! another origin). With `[scale.admin] enabled = false` every route here is 404.
//!
//! Users are named by `{username}` in paths: a username, else an e-mail, else a user id
//! (SSO-only accounts have no username).

use super::handlers::Body;
use super::{api_error, validate};
use crate::server::auth::SignedIn;
use crate::server::envelope;
use crate::server::errors::{ApiError, ErrorCode};
use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use actors::identity::messages::{
    AdminChangePassword, AdminLogin, CheckAdmin, CreateUser, DeleteUser, ForcePasswordReset,
    GetUser, ListUsers, SsoProviders, UnlinkSso, UpdateUser,
};
use actors::identity::{ErrorKind, IdentityHandle};
use actors::users::{
    BOOTSTRAP_ADMIN_ID, IdentityRecord, IdentityType, Role, Status, UserFilter, UserRecord,
};
use futures_util::future::LocalBoxFuture;
use serde_json::{Map, Value as Json, json};
use std::collections::HashMap;

/// The portal page (served as is).
const PORTAL: &str = include_str!("admin_portal.html");

type Result<T> = std::result::Result<T, ApiError>;
type Identity = web::Data<IdentityHandle>;

/// Mount the routes (resources, so a wrong method is 405).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/admin").route(web::get().to(portal)))
        .service(web::resource("/admin/").route(web::get().to(portal)))
        .service(web::resource("/admin/login").route(web::post().to(login)))
        .service(web::resource("/admin/reset-password").route(web::post().to(change_password)))
        .service(
            web::resource("/admin/users")
                .route(web::get().to(list_users))
                .route(web::post().to(create_user)),
        )
        .service(
            web::resource("/admin/users/{username}")
                .route(web::get().to(get_user))
                .route(web::put().to(update_user))
                .route(web::delete().to(delete_user)),
        )
        .service(
            web::resource("/admin/users/{username}/force-password-reset")
                .route(web::post().to(force_reset)),
        )
        .service(web::resource("/admin/sso/providers").route(web::get().to(sso_providers)))
        .service(
            web::resource("/admin/sso/users/{username}/accounts")
                .route(web::get().to(sso_accounts)),
        )
        .service(
            web::resource("/admin/sso/users/{username}/accounts/{platform}")
                .route(web::delete().to(sso_unlink)),
        );
}

fn disabled() -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        "the admin portal is disabled on this server",
    )
}

fn enabled(id: &IdentityHandle) -> Result<()> {
    if id.admin_enabled() {
        Ok(())
    } else {
        Err(disabled())
    }
}

/// The bearer of an admin route: an active admin that needs no password change. No
/// token 401; a token of anyone else 403 `FORBIDDEN`; an admin that must change its
/// password 403 `PASSWORD_RESET_REQUIRED`.
pub struct Admin(pub String);

impl FromRequest for Admin {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Admin>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let identity = req.app_data::<Identity>().cloned();
        let signed_in = SignedIn::from_request(req, payload).into_inner();
        Box::pin(async move {
            let identity = identity.ok_or_else(disabled)?;
            enabled(&identity)?;
            let user_id = signed_in?.0;
            identity
                .ask(CheckAdmin {
                    user_id: user_id.clone(),
                })
                .await
                .map_err(api_error)?;
            Ok(Admin(user_id))
        })
    }
}

fn ok(data: Json) -> HttpResponse {
    envelope::success(StatusCode::OK, data)
}

/// `GET /admin`: the portal page.
async fn portal(id: Identity) -> Result<HttpResponse> {
    enabled(&id)?;
    Ok(HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .insert_header((
            "Content-Security-Policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; img-src 'self' data:; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ))
        .insert_header(("X-Frame-Options", "DENY"))
        .body(PORTAL))
}

fn client_address(req: &HttpRequest) -> String {
    req.peer_addr()
        .map_or_else(|| "unknown".into(), |a| a.ip().to_string())
}

/// `POST /admin/login` `{username, password}` → `{token, user_id, username, role,
/// requires_password_reset}` (decisions.md); `username` may be the admin's e-mail.
async fn login(id: Identity, req: HttpRequest, body: Body) -> Result<HttpResponse> {
    enabled(&id)?;
    let username = validate::string(&body.0, "username")?;
    let password = validate::string(&body.0, "password")?;
    if username.trim().is_empty() {
        return Err(ApiError::validation("username", "must not be empty"));
    }
    let done = id
        .ask(AdminLogin {
            username,
            password,
            address: client_address(&req),
        })
        .await
        .map_err(api_error)?;
    Ok(ok(json!({
        "message": "Login successful",
        "token": done.token,
        "user_id": done.user_id,
        "username": done.username,
        "role": "admin",
        "requires_password_reset": done.requires_password_reset,
    })))
}

/// `POST /admin/reset-password` `{current_password, new_password}`: an admin changes its
/// own password (the one admin route open while a change is required) → `{message,
/// token}` with a fresh admin token.
async fn change_password(id: Identity, user: SignedIn, body: Body) -> Result<HttpResponse> {
    enabled(&id)?;
    let current_password = validate::string(&body.0, "current_password")?;
    let new_password = validate::string(&body.0, "new_password")?;
    validate::new_password(
        &new_password,
        "new_password",
        ApiError::with_code_status(
            ErrorCode::ValidationError,
            400,
            "new_password must not be empty",
        ),
    )?;
    if new_password == current_password {
        return Err(ApiError::with_code_status(
            ErrorCode::ValidationError,
            400,
            "the new password must differ from the current one",
        ));
    }
    let token = id
        .ask(AdminChangePassword {
            user_id: user.0,
            current_password,
            new_password,
        })
        .await
        .map_err(api_error)?;
    Ok(ok(
        json!({"message": "Password updated successfully", "token": token}),
    ))
}

/// The username of an account, else its e-mail.
fn display_name(u: &UserRecord) -> Json {
    u.identity(IdentityType::Username)
        .or_else(|| u.identity(IdentityType::Email))
        .map_or(Json::Null, |i| Json::String(i.value_raw.clone()))
}

fn sso_accounts_json(u: &UserRecord) -> Json {
    Json::Array(
        u.sso
            .iter()
            .map(|a| json!({"platform": a.provider, "email": a.email, "linked_at": a.linked_at}))
            .collect(),
    )
}

/// A user as the admin API shows it (never password hashes or external ids).
pub fn user_json(u: &UserRecord) -> Json {
    let email = u
        .identity(IdentityType::Email)
        .map_or(Json::Null, |i| Json::String(i.value_raw.clone()));
    let mut identities: Vec<Json> = u
        .identities
        .iter()
        .map(|i| {
            json!({
                "type": i.kind.as_str(),
                "value": i.value_raw,
                "verified": i.verified,
                "is_recovery": i.is_recovery,
            })
        })
        .collect();
    identities.extend(u.sso.iter().map(|a| {
        json!({"type": "sso", "provider": a.provider, "verified": true, "is_recovery": false,
               "linked_at": a.linked_at})
    }));
    json!({
        "user_id": u.user_id,
        "username": display_name(u),
        "email": email,
        "role": u.role.as_str(),
        "status": u.status.as_str(),
        "requires_password_reset": u.requires_password_reset,
        "has_password": u.password_hash.is_some(),
        "protected": u.is_protected(),
        "bootstrap_admin": u.user_id == BOOTSTRAP_ADMIN_ID,
        "root_id": u.root_id,
        "identities": identities,
        "sso_accounts": sso_accounts_json(u),
        "profile": u.profile,
        "created_at": u.created_at,
        "updated_at": u.updated_at,
    })
}

fn query(req: &HttpRequest) -> Result<HashMap<String, String>> {
    web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .map_err(|e| ApiError::validation("query", format!("malformed query string: {e}")))
}

fn number(q: &HashMap<String, String>, name: &str, default: usize) -> Result<usize> {
    match q.get(name) {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse()
            .map_err(|_| ApiError::validation(name, "expected a non-negative integer")),
    }
}

fn role(value: &str, field: &str) -> Result<Role> {
    Role::parse(value.trim())
        .ok_or_else(|| ApiError::validation(field, "expected 'admin', 'system' or 'user'"))
}

fn status(value: &str, field: &str) -> Result<Status> {
    Status::parse(value.trim())
        .ok_or_else(|| ApiError::validation(field, "expected 'active' or 'disabled'"))
}

/// `GET /admin/users?limit=100&offset=0&q=&role=&status=` → `{users, total, count,
/// limit, offset}`; `q` matches part of a username, an e-mail or the user id.
async fn list_users(id: Identity, _admin: Admin, req: HttpRequest) -> Result<HttpResponse> {
    let q = query(&req)?;
    let limit = number(&q, "limit", 100)?;
    let offset = number(&q, "offset", 0)?;
    let filter = UserFilter {
        query: q
            .get("q")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty()),
        role: q
            .get("role")
            .filter(|s| !s.is_empty())
            .map(|r| role(r, "role"))
            .transpose()?,
        status: q
            .get("status")
            .filter(|s| !s.is_empty())
            .map(|s| status(s, "status"))
            .transpose()?,
    };
    let page = id
        .ask(ListUsers {
            filter,
            limit,
            offset,
        })
        .await
        .map_err(|e| match e.kind {
            // The one rule of a listing is the page size's range: a bad query
            // parameter, answered like the other ones (422 with its field).
            ErrorKind::Rule => ApiError::validation("limit", e.message),
            _ => api_error(e),
        })?;
    let users: Vec<Json> = page.users.iter().map(user_json).collect();
    Ok(ok(json!({
        "users": users,
        "total": page.total,
        "count": users.len(),
        "limit": limit,
        "offset": offset,
    })))
}

/// `GET /admin/users/{username}`.
async fn get_user(id: Identity, _admin: Admin, path: web::Path<String>) -> Result<HttpResponse> {
    let user = id
        .ask(GetUser {
            name: path.into_inner(),
        })
        .await
        .map_err(api_error)?;
    Ok(ok(user_json(&user)))
}

/// `POST /admin/users` `{username, password, role?: "user", email?,
/// requires_password_reset?: true}` → 201 with the user. The registration shape
/// `{identities: [{type, value}], credential: {type: password, password}, role?}` is
/// accepted too.
async fn create_user(id: Identity, _admin: Admin, body: Body) -> Result<HttpResponse> {
    let b = &body.0;
    let identities = if b.contains_key("identities") {
        let Some(Json::Array(list)) = b.get("identities") else {
            return Err(ApiError::validation("identities", "expected a list"));
        };
        let mut out = Vec::new();
        for (i, item) in list.iter().enumerate() {
            out.push(validate::identity(
                Some(item),
                &format!("identities[{i}]"),
                None,
            )?);
        }
        out
    } else {
        let username = validate::string(b, "username")?;
        validate::check_value(IdentityType::Username, &username, "username")?;
        let mut out = vec![IdentityRecord::new(IdentityType::Username, &username, None)];
        match b.get("email") {
            None | Some(Json::Null) => {}
            Some(Json::String(e)) if e.trim().is_empty() => {}
            Some(Json::String(e)) => {
                validate::check_value(IdentityType::Email, e, "email")?;
                out.push(IdentityRecord::new(IdentityType::Email, e, None));
            }
            Some(_) => return Err(ApiError::validation("email", "expected a string")),
        }
        out
    };
    if identities.is_empty() {
        return Err(ApiError::with_code_status(
            ErrorCode::ValidationError,
            400,
            "at least one identity is required",
        ));
    }
    for (i, a) in identities.iter().enumerate() {
        if identities[..i].iter().any(|x| x.kind == a.kind) {
            return Err(ApiError::with_code_status(
                ErrorCode::ValidationError,
                400,
                format!("at most one identity of each type ({} twice)", a.kind),
            ));
        }
        if let Some(e) = validate::reserved(a) {
            return Err(e);
        }
    }
    let (password, field) = if b.contains_key("credential") {
        (
            validate::credential(b.get("credential"), "credential")?,
            "credential.password",
        )
    } else {
        (validate::string(b, "password")?, "password")
    };
    validate::new_password(
        &password,
        field,
        ApiError::validation(field, "must not be empty"),
    )?;
    let role = match b.get("role") {
        None | Some(Json::Null) => Role::User,
        Some(Json::String(r)) => role(r, "role")?,
        Some(_) => return Err(ApiError::validation("role", "expected a string")),
    };
    let requires_password_reset =
        validate::optional_bool(b, "requires_password_reset")?.unwrap_or(true);
    let user = id
        .ask(CreateUser {
            identities,
            password,
            role,
            requires_password_reset,
        })
        .await
        .map_err(api_error)?;
    Ok(envelope::success(StatusCode::CREATED, user_json(&user)))
}

/// `PUT /admin/users/{username}` `{role?, status?, requires_password_reset?}` (at least
/// one) → `{message, updates, user}`.
async fn update_user(
    id: Identity,
    admin: Admin,
    path: web::Path<String>,
    body: Body,
) -> Result<HttpResponse> {
    let b: &Map<String, Json> = &body.0;
    let mut updates = Vec::new();
    let role = match b.get("role") {
        None | Some(Json::Null) => None,
        Some(Json::String(r)) => Some(role(r, "role")?),
        Some(_) => return Err(ApiError::validation("role", "expected a string")),
    };
    let status = match b.get("status") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(status(s, "status")?),
        Some(_) => return Err(ApiError::validation("status", "expected a string")),
    };
    let reset = validate::optional_bool(b, "requires_password_reset")?;
    if let Some(r) = role {
        updates.push(format!("role set to '{}'", r.as_str()));
    }
    if let Some(s) = status {
        updates.push(format!("status set to '{}'", s.as_str()));
    }
    if let Some(f) = reset {
        updates.push(format!("requires_password_reset set to {f}"));
    }
    if updates.is_empty() {
        return Err(ApiError::with_code_status(
            ErrorCode::ValidationError,
            400,
            "nothing to update: send role, status or requires_password_reset",
        ));
    }
    let user = id
        .ask(UpdateUser {
            acting: admin.0,
            name: path.into_inner(),
            role,
            status,
            requires_password_reset: reset,
        })
        .await
        .map_err(api_error)?;
    Ok(ok(
        json!({"message": "User updated", "updates": updates, "user": user_json(&user)}),
    ))
}

/// `DELETE /admin/users/{username}` → `{message, user_id, username}`; protected
/// accounts (bootstrap admin, `system`, guest) and the acting admin are 403.
async fn delete_user(id: Identity, admin: Admin, path: web::Path<String>) -> Result<HttpResponse> {
    let user = id
        .ask(DeleteUser {
            acting: admin.0,
            name: path.into_inner(),
        })
        .await
        .map_err(api_error)?;
    Ok(ok(json!({
        "message": "User deleted",
        "user_id": user.user_id,
        "username": display_name(&user),
    })))
}

/// `POST /admin/users/{username}/force-password-reset` → `{message, username,
/// requires_password_reset: true, email_sent}`.
async fn force_reset(id: Identity, _admin: Admin, path: web::Path<String>) -> Result<HttpResponse> {
    let done = id
        .ask(ForcePasswordReset {
            name: path.into_inner(),
        })
        .await
        .map_err(api_error)?;
    Ok(ok(json!({
        "message": "The user must change the password",
        "username": display_name(&done.user),
        "user_id": done.user.user_id,
        "requires_password_reset": done.user.requires_password_reset,
        "email_sent": done.email_sent,
    })))
}

/// `GET /admin/sso/providers` → `{providers: [{platform, configured, issuer,
/// client_id_set, client_secret_set}], sso_host, client_auth_callback_url}`.
async fn sso_providers(id: Identity, _admin: Admin) -> Result<HttpResponse> {
    let list = id.ask(SsoProviders).await.map_err(api_error)?;
    let providers: Vec<Json> = list
        .providers
        .iter()
        .map(|p| {
            json!({
                "platform": p.platform,
                "configured": p.configured,
                "issuer": p.issuer,
                "client_id_set": p.client_id_set,
                "client_secret_set": p.client_secret_set,
            })
        })
        .collect();
    Ok(ok(json!({
        "providers": providers,
        "sso_host": list.host,
        "client_auth_callback_url": list.client_auth_callback_url,
    })))
}

/// `GET /admin/sso/users/{username}/accounts` → `{username, user_id, sso_accounts:
/// [{platform, email, linked_at}]}`.
async fn sso_accounts(
    id: Identity,
    _admin: Admin,
    path: web::Path<String>,
) -> Result<HttpResponse> {
    let user = id
        .ask(GetUser {
            name: path.into_inner(),
        })
        .await
        .map_err(api_error)?;
    Ok(ok(json!({
        "username": display_name(&user),
        "user_id": user.user_id,
        "sso_accounts": sso_accounts_json(&user),
    })))
}

/// `DELETE /admin/sso/users/{username}/accounts/{platform}`: remove the link (the account
/// stays) → `{message, username, user_id, sso_accounts}`.
async fn sso_unlink(
    id: Identity,
    _admin: Admin,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse> {
    let (name, platform) = path.into_inner();
    let user = id
        .ask(UnlinkSso { name, platform })
        .await
        .map_err(api_error)?;
    Ok(ok(json!({
        "message": "SSO account unlinked",
        "username": display_name(&user),
        "user_id": user.user_id,
        "sso_accounts": sso_accounts_json(&user),
    })))
}
