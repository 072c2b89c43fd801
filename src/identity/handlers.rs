//! The `/user/*` endpoints (spec "Identity endpoints", decisions.md "Identity"): each
//! handler extracts (the [`SignedIn`] bearer, the JSON body parsed into the service's
//! typed message), sends the message to the identity service actor and maps the typed
//! reply to the envelope. Every answer is the envelope; statuses and codes per the
//! spec's Errors table (service errors through [`api_error`]).

use super::{api_error, validate};
use crate::server::auth::SignedIn;
use crate::server::body::json_object;
use crate::server::envelope;
use crate::server::errors::{ApiError, ErrorCode};
use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use actors::identity::IdentityHandle;
use actors::identity::messages::{
    AddIdentity, ChangePassword, ForgotPassword, Login, Me, Refresh, Register, ResetPassword,
    SendVerification, VerificationSent, VerifyIdentity,
};
use actors::users::IdentityType;
use futures_util::future::LocalBoxFuture;
use serde_json::{Map, Value as Json, json};

/// The fixed answer of forgot-password, whether or not the account exists.
pub const FORGOT_MESSAGE: &str =
    "If an account with that e-mail exists, a password reset link has been sent to it.";

/// Mount the routes (resources, so a wrong method is 405).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/user/register").route(web::post().to(register)))
        .service(web::resource("/user/login").route(web::post().to(login)))
        .service(web::resource("/user/refresh-token").route(web::post().to(refresh)))
        .service(web::resource("/user/me").route(web::get().to(me)))
        .service(web::resource("/user/password").route(web::put().to(change_password)))
        .service(web::resource("/user/add-identity").route(web::post().to(add_identity)))
        .service(web::resource("/user/send-verification").route(web::post().to(send_verification)))
        .service(web::resource("/user/verify-identity").route(web::post().to(verify_identity)))
        .service(web::resource("/user/forgot-password").route(web::post().to(forgot_password)))
        .service(web::resource("/user/reset-password").route(web::post().to(reset_password)));
}

type Result<T> = std::result::Result<T, ApiError>;
type Identity = web::Data<IdentityHandle>;

/// The request body as a JSON object (the server's one body reader: limits, deadline).
pub struct Body(pub Map<String, Json>);

impl FromRequest for Body {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Body>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let (req, payload) = (req.clone(), payload.take());
        Box::pin(async move { json_object(&req, payload).await.map(Body) })
    }
}

fn ok(data: Json) -> HttpResponse {
    envelope::success(StatusCode::OK, data)
}

fn bad_request(code: ErrorCode, message: &str) -> ApiError {
    ApiError::with_code_status(code, 400, message)
}

/// The client address failed logins and registrations are counted against: the TCP
/// peer (forwarding headers can be forged, so they are not trusted).
fn client_address(req: &HttpRequest) -> String {
    req.peer_addr()
        .map_or_else(|| "unknown".into(), |a| a.ip().to_string())
}

/// `POST /user/register`.
async fn register(id: Identity, req: HttpRequest, body: Body) -> Result<HttpResponse> {
    let registered = id
        .ask(parse_register(&body.0, client_address(&req))?)
        .await
        .map_err(api_error)?;
    Ok(envelope::success(
        StatusCode::CREATED,
        json!({"user_id": registered.user_id, "message": "User registered successfully"}),
    ))
}

/// `POST /user/login`.
async fn login(id: Identity, req: HttpRequest, body: Body) -> Result<HttpResponse> {
    let done = id
        .ask(parse_login(&body.0, client_address(&req))?)
        .await
        .map_err(api_error)?;
    let mut data = json!({
        "user_id": done.user_id,
        "token": done.token,
        "root_id": done.root_id,
        "role": done.role.as_str(),
    });
    // Only when set: an admin created the account or forced a reset.
    if done.requires_password_reset {
        data["requires_password_reset"] = json!(true);
    }
    Ok(ok(data))
}

/// `POST /user/refresh-token`: the token comes in the body (an optional `Bearer `
/// prefix is stripped); a fresh token for a still-active account.
async fn refresh(id: Identity, body: Body) -> Result<HttpResponse> {
    let done = id.ask(parse_refresh(&body.0)?).await.map_err(api_error)?;
    Ok(ok(
        json!({"token": done.token, "message": "Token refreshed successfully"}),
    ))
}

/// `GET /user/me`: never credentials, hashes, normalized values, external ids or the
/// root id.
async fn me(id: Identity, user: SignedIn) -> Result<HttpResponse> {
    let user = id.ask(Me { user_id: user.0 }).await.map_err(api_error)?;
    let mut identities: Vec<_> = user
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
    // SSO identities show their provider, never the external id.
    identities.extend(user.sso.iter().map(|a| {
        json!({
            "type": "sso",
            "provider": a.provider,
            "verified": true,
            "is_recovery": false,
            "linked_at": a.linked_at,
        })
    }));
    Ok(ok(json!({
        "user_id": user.user_id,
        "role": user.role.as_str(),
        "status": user.status.as_str(),
        "identities": identities,
        "profile": user.profile,
        "created_at": user.created_at,
        "updated_at": user.updated_at,
    })))
}

/// `PUT /user/password`: wrong current password or empty new one → 400.
async fn change_password(id: Identity, user: SignedIn, body: Body) -> Result<HttpResponse> {
    let user_id = user.0;
    let msg = parse_change_password(&body.0, user_id.clone())?;
    id.ask(msg).await.map_err(api_error)?;
    Ok(ok(
        json!({"user_id": user_id, "message": "Password updated successfully"}),
    ))
}

/// `POST /user/add-identity`: sends no mail; a new e-mail starts unverified.
async fn add_identity(id: Identity, user: SignedIn, body: Body) -> Result<HttpResponse> {
    let added = id
        .ask(parse_add_identity(&body.0, user.0)?)
        .await
        .map_err(api_error)?;
    Ok(ok(json!({"status": "added", "verified": added.verified})))
}

/// `POST /user/send-verification`: 202 after the mail was accepted by the mail server.
async fn send_verification(id: Identity, user: SignedIn, body: Body) -> Result<HttpResponse> {
    let sent = id
        .ask(parse_send_verification(&body.0, user.0)?)
        .await
        .map_err(api_error)?;
    Ok(match sent {
        VerificationSent::AlreadyVerified => {
            ok(json!({"status": "already_verified", "email_sent": false}))
        }
        VerificationSent::Sent => envelope::success(
            StatusCode::ACCEPTED,
            json!({"status": "pending_verification", "email_sent": true}),
        ),
    })
}

/// `POST /user/verify-identity`.
async fn verify_identity(id: Identity, body: Body) -> Result<HttpResponse> {
    let token = validate::string(&body.0, "token")?;
    let verified = id.ask(VerifyIdentity { token }).await.map_err(api_error)?;
    Ok(ok(
        json!({"status": "verified", "identity": verified.identity}),
    ))
}

/// `POST /user/forgot-password`: always the same 200 (see the service).
async fn forgot_password(id: Identity, body: Body) -> Result<HttpResponse> {
    let email = parse_email(&body.0)?;
    id.ask(ForgotPassword { email }).await.map_err(api_error)?;
    Ok(ok(json!({"status": "ok", "message": FORGOT_MESSAGE})))
}

/// `POST /user/reset-password`: the token is checked before any bcrypt work.
async fn reset_password(id: Identity, body: Body) -> Result<HttpResponse> {
    id.ask(parse_reset_password(&body.0)?)
        .await
        .map_err(api_error)?;
    Ok(ok(json!({"status": "password_reset"})))
}

// Request bodies to messages: shape failures are 422 (`validate`), the spec's 400 rows
// that need no store are checked here, in the order the endpoints always checked them.

fn parse_register(body: &Map<String, Json>, address: String) -> Result<Register> {
    let list = match body.get("identities") {
        Some(Json::Array(list)) => list,
        None | Some(Json::Null) => {
            return Err(ApiError::validation("identities", "field required"));
        }
        Some(_) => return Err(ApiError::validation("identities", "expected a list")),
    };
    let mut identities = Vec::new();
    for (i, item) in list.iter().enumerate() {
        identities.push(validate::identity(
            Some(item),
            &format!("identities[{i}]"),
            None,
        )?);
    }
    let password = validate::credential(body.get("credential"), "credential")?;
    validate::new_password(
        &password,
        "credential.password",
        ApiError::validation("credential.password", "must not be empty"),
    )?;
    let profile = validate::profile(body.get("profile"))?;
    if identities.is_empty() {
        return Err(bad_request(
            ErrorCode::ValidationError,
            "at least one identity is required",
        ));
    }
    for (i, a) in identities.iter().enumerate() {
        if identities[..i].iter().any(|b| b.kind == a.kind) {
            return Err(bad_request(
                ErrorCode::ValidationError,
                &format!("at most one identity of each type ({} twice)", a.kind),
            ));
        }
        if let Some(e) = validate::reserved(a) {
            return Err(e);
        }
    }
    Ok(Register {
        identities,
        password,
        profile,
        address,
    })
}

fn parse_login(body: &Map<String, Json>, address: String) -> Result<Login> {
    let (kind, value) = validate::identity_shape(body.get("identity"), "identity")?;
    let kind = IdentityType::parse(&kind)
        .ok_or_else(|| ApiError::validation("identity.type", "expected 'username' or 'email'"))?;
    let password = validate::credential(body.get("credential"), "credential")?;
    Ok(Login {
        kind,
        value,
        password,
        address,
    })
}

fn parse_refresh(body: &Map<String, Json>) -> Result<Refresh> {
    let raw = validate::string(body, "token")?;
    let raw = raw.trim();
    let token = match raw.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
        _ => raw,
    };
    Ok(Refresh {
        token: token.to_string(),
    })
}

fn parse_change_password(body: &Map<String, Json>, user_id: String) -> Result<ChangePassword> {
    let current_password = validate::string(body, "current_password")?;
    let new_password = validate::string(body, "new_password")?;
    validate::new_password(
        &new_password,
        "new_password",
        bad_request(ErrorCode::ValidationError, "new_password must not be empty"),
    )?;
    Ok(ChangePassword {
        user_id,
        current_password,
        new_password,
    })
}

fn parse_add_identity(body: &Map<String, Json>, user_id: String) -> Result<AddIdentity> {
    let is_recovery = validate::optional_bool(body, "is_recovery")?;
    let identity = validate::identity(body.get("identity"), "identity", is_recovery)?;
    if let Some(e) = validate::reserved(&identity) {
        return Err(e);
    }
    Ok(AddIdentity { user_id, identity })
}

fn parse_send_verification(body: &Map<String, Json>, user_id: String) -> Result<SendVerification> {
    let invalid = |m: &str| bad_request(ErrorCode::ValidationError, m);
    let (kind, value) = validate::identity_shape(body.get("identity"), "identity")
        .map_err(|e| invalid(&e.message))?;
    if kind != "email" {
        return Err(invalid("only an e-mail identity can be verified"));
    }
    if value.trim().is_empty() {
        return Err(invalid("identity.value must not be empty"));
    }
    Ok(SendVerification {
        user_id,
        email: value,
    })
}

/// `{identity: {type: email, value}}` (forgot-password).
fn parse_email(body: &Map<String, Json>) -> Result<String> {
    let (kind, value) = validate::identity_shape(body.get("identity"), "identity")?;
    if kind != "email" {
        return Err(ApiError::validation("identity.type", "expected 'email'"));
    }
    Ok(value)
}

fn parse_reset_password(body: &Map<String, Json>) -> Result<ResetPassword> {
    let token = validate::string(body, "token")?;
    let new_password = validate::string(body, "new_password")?;
    validate::new_password(
        &new_password,
        "new_password",
        bad_request(ErrorCode::ValidationError, "new_password must not be empty"),
    )?;
    Ok(ResetPassword {
        token,
        new_password,
    })
}
