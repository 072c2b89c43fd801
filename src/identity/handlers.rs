//! The `/user/*` endpoints (spec "Identity endpoints", decisions.md "Identity"). Every
//! answer is the envelope; statuses and codes per the spec's Errors table.

use super::email::Mail;
use super::password::Check;
use super::validate;
use super::{Identity, new_one_time_token, new_root_id, new_user_id, token_hash, unauthorized};
use crate::server::auth::bearer_token;
use crate::server::body::json_object;
use crate::server::envelope;
use crate::server::errors::{ApiError, ErrorCode};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use actors::users::{
    IdentityType, NewUser, Role, Status, TokenGrant, TokenKind, UserRecord, normalize,
};
use serde_json::json;

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

fn ok(data: serde_json::Value) -> HttpResponse {
    envelope::success(StatusCode::OK, data)
}

fn bad_request(code: ErrorCode, message: &str) -> ApiError {
    ApiError::with_code_status(code, 400, message)
}

/// The user id of the request's bearer token (401 without a valid one).
fn bearer_user(id: &Identity, req: &HttpRequest) -> Result<String> {
    match bearer_token(req.headers())? {
        Some(token) => Ok(id.verify_token(token)?.user_id),
        None => Err(unauthorized("authentication required")),
    }
}

/// The bearer's account: 404 when it no longer exists, 401 when disabled.
async fn bearer_account(id: &Identity, req: &HttpRequest) -> Result<UserRecord> {
    let user_id = bearer_user(id, req)?;
    let user = id.db(move |s| s.get(&user_id)).await?;
    let user = user.ok_or_else(|| ApiError::new(ErrorCode::NotFound, "user not found"))?;
    if user.status != Status::Active {
        return Err(unauthorized("the account is disabled"));
    }
    Ok(user)
}

/// The client address failed logins are counted against: the TCP peer (forwarding
/// headers can be forged, so they are not trusted).
fn client_address(req: &HttpRequest) -> String {
    req.peer_addr()
        .map_or_else(|| "unknown".into(), |a| a.ip().to_string())
}

/// `POST /user/register`.
async fn register(
    id: web::Data<Identity>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse> {
    let body = json_object(&req, payload).await?;
    let list = match body.get("identities") {
        Some(serde_json::Value::Array(list)) => list,
        None | Some(serde_json::Value::Null) => {
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
    // Refuse a taken value before spending bcrypt time (the insert checks again).
    let probe = identities.clone();
    id.db(move |s| {
        for i in &probe {
            if s.by_identity(i.kind, &i.value_normalized)?.is_some() {
                return Err(actors::users::UserError::Taken {
                    kind: i.kind,
                    value: i.value_raw.clone(),
                });
            }
        }
        Ok(())
    })
    .await?;
    // Counted before bcrypt runs; given back only if hashing does not happen (a full
    // bcrypt queue).
    let slot = id
        .throttles
        .registrations
        .reserve(&client_address(&req))
        .map_err(|secs| {
            ApiError::rate_limited(
                "too many registrations from this address; try again later",
                secs,
            )
        })?;
    let hash = id.passwords.hash(password).await?;
    slot.keep();
    let new = NewUser {
        user_id: new_user_id(),
        role: Role::User,
        root_id: lang::host::format_id(new_root_id()),
        password_hash: Some(hash),
        profile,
        identities,
    };
    let user = id.db(move |s| s.create(new)).await?;
    tracing::info!(user_id = %user.user_id, "user registered");
    Ok(envelope::success(
        StatusCode::CREATED,
        json!({"user_id": user.user_id, "message": "User registered successfully"}),
    ))
}

/// `POST /user/login`: constant work whether or not the identity exists (one lookup,
/// one bcrypt verify), throttled per identity and per client address. Each attempt takes
/// its slot in both limits before bcrypt runs, so parallel guesses cannot exceed them; a
/// failure keeps the slots, a success clears the identity's failures and gives the
/// address slot back, any other outcome gives both back.
async fn login(
    id: web::Data<Identity>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse> {
    let body = json_object(&req, payload).await?;
    let (kind, value) = validate::identity_shape(body.get("identity"), "identity")?;
    let kind = IdentityType::parse(&kind)
        .ok_or_else(|| ApiError::validation("identity.type", "expected 'username' or 'email'"))?;
    let password = validate::credential(body.get("credential"), "credential")?;
    let normalized = normalize(&value);
    let identity_key = format!("{kind}:{normalized}");
    let address = client_address(&req);
    let t = &id.throttles;
    // Attempts in flight count against the limits; a request waits for them (they may
    // succeed) rather than being refused, and is refused once failures fill a limit.
    let (by_identity, by_address) = match (
        t.login_identity.reserve_wait(&identity_key).await,
        t.login_address.reserve_wait(&address).await,
    ) {
        (Ok(i), Ok(a)) => (i, a),
        // A slot taken in the other limit is given back as it drops here.
        (i, a) => {
            let secs = i.err().max(a.err()).unwrap_or(1);
            return Err(ApiError::rate_limited(
                "too many failed logins; try again later",
                secs,
            ));
        }
    };
    let user = id
        .db(move |s| s.by_identity(kind, &normalized))
        .await?
        .filter(|u| u.status == Status::Active && u.role != Role::System);
    let hash = user.as_ref().and_then(|u| u.password_hash.clone());
    let check = id.passwords.check(password.clone(), hash).await?;
    let user = match user {
        Some(u) if check != Check::Mismatch => u,
        _ => {
            by_identity.keep();
            by_address.keep();
            return Err(unauthorized("Invalid credentials"));
        }
    };
    t.login_identity.clear(&identity_key);
    drop((by_identity, by_address));
    if check == Check::MatchLegacy {
        // Transparent upgrade of a legacy SHA-256 hash to bcrypt.
        let new_hash = id.passwords.hash(password).await?;
        let (uid, old) = (user.user_id.clone(), user.password_hash.clone());
        id.db(move |s| s.replace_password_hash(&uid, old.as_deref(), &new_hash))
            .await?;
        tracing::info!(user_id = %user.user_id, "legacy password hash upgraded to bcrypt");
    }
    let token = issue(&id, &user)?;
    Ok(ok(json!({
        "user_id": user.user_id,
        "token": token,
        "root_id": user.root_id,
        "role": user.role.as_str(),
    })))
}

fn issue(id: &Identity, user: &UserRecord) -> Result<String> {
    id.jwt
        .issue(&user.user_id, user.role.as_str(), actors::users::unix_now())
        .map_err(|e| {
            tracing::error!(error = %e, "cannot sign a token");
            ApiError::new(ErrorCode::InternalError, "internal error")
        })
}

/// `POST /user/refresh-token`: the token comes in the body (an optional `Bearer `
/// prefix is stripped); a fresh token for a still-active account.
async fn refresh(
    id: web::Data<Identity>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse> {
    let body = json_object(&req, payload).await?;
    let raw = validate::string(&body, "token")?;
    let raw = raw.trim();
    let token = match raw.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
        _ => raw,
    };
    let claims = id.verify_token(token)?;
    let user_id = claims.user_id;
    let user = id.db(move |s| s.get(&user_id)).await?;
    let user = user
        .filter(|u| u.status == Status::Active && u.role != Role::System)
        .ok_or_else(|| unauthorized("invalid token"))?;
    let token = issue(&id, &user)?;
    Ok(ok(
        json!({"token": token, "message": "Token refreshed successfully"}),
    ))
}

/// `GET /user/me`: never credentials, hashes, normalized values, external ids or the
/// root id.
async fn me(id: web::Data<Identity>, req: HttpRequest) -> Result<HttpResponse> {
    let user = bearer_account(&id, &req).await?;
    let identities: Vec<_> = user
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

/// `PUT /user/password`: wrong current password or empty new one → 400. Wrong current
/// passwords count as failed logins of the account, each attempt counted before bcrypt
/// runs (as for login).
async fn change_password(
    id: web::Data<Identity>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse> {
    let user = bearer_account(&id, &req).await?;
    let body = json_object(&req, payload).await?;
    let current = validate::string(&body, "current_password")?;
    let new = validate::string(&body, "new_password")?;
    validate::new_password(
        &new,
        "new_password",
        bad_request(ErrorCode::ValidationError, "new_password must not be empty"),
    )?;
    let key = format!("user:{}", user.user_id);
    let attempt = id
        .throttles
        .login_identity
        .reserve_wait(&key)
        .await
        .map_err(|secs| {
            ApiError::rate_limited("too many wrong passwords; try again later", secs)
        })?;
    if !id
        .passwords
        .verify(current, user.password_hash.clone())
        .await?
    {
        attempt.keep();
        return Err(bad_request(
            ErrorCode::BadRequest,
            "current password is incorrect",
        ));
    }
    id.throttles.login_identity.clear(&key);
    drop(attempt);
    let hash = id.passwords.hash(new).await?;
    let uid = user.user_id.clone();
    id.db(move |s| s.set_password(&uid, &hash)).await?;
    Ok(ok(
        json!({"user_id": user.user_id, "message": "Password updated successfully"}),
    ))
}

/// `POST /user/add-identity`: sends no mail; a new e-mail starts unverified.
async fn add_identity(
    id: web::Data<Identity>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse> {
    let user_id = bearer_user(&id, &req)?;
    let body = json_object(&req, payload).await?;
    let is_recovery = validate::optional_bool(&body, "is_recovery")?;
    let identity = validate::identity(body.get("identity"), "identity", is_recovery)?;
    if let Some(e) = validate::reserved(&identity) {
        return Err(e);
    }
    let verified = identity.verified;
    id.db(move |s| s.add_identity(&user_id, &identity)).await?;
    Ok(ok(json!({"status": "added", "verified": verified})))
}

/// The link (or bare token) a mail carries.
fn link(template: &str, token: &str) -> String {
    if template.is_empty() {
        token.to_string()
    } else {
        template.replace("{token}", token)
    }
}

fn verification_mail(id: &Identity, to: &str, token: &str) -> Mail {
    let hours = id.auth.verify_token_ttl_seconds.div_ceil(3600);
    let link = link(&id.auth.verify_url_template, token);
    let what = if id.auth.verify_url_template.is_empty() {
        "Your e-mail verification token"
    } else {
        "Open this link to verify your e-mail address"
    };
    Mail {
        to: to.to_string(),
        subject: "Verify your e-mail address".into(),
        body_text: format!(
            "{what}:\n\n{link}\n\nIt expires in {hours} hour(s) and works once. If you did not \
             ask for this, ignore this message.\n"
        ),
        body_html: None,
        from: None,
    }
}

fn reset_mail(id: &Identity, to: &str, token: &str) -> Mail {
    let minutes = id.auth.reset_token_ttl_seconds.div_ceil(60);
    let link = link(&id.auth.reset_url_template, token);
    let what = if id.auth.reset_url_template.is_empty() {
        "Your password reset token"
    } else {
        "Open this link to choose a new password"
    };
    Mail {
        to: to.to_string(),
        subject: "Reset your password".into(),
        body_text: format!(
            "{what}:\n\n{link}\n\nIt expires in {minutes} minute(s) and works once. If you did \
             not ask for a reset, ignore this message: your password is unchanged.\n"
        ),
        body_html: None,
        from: None,
    }
}

/// `POST /user/send-verification`: 202 after the mail was accepted by the mail server.
async fn send_verification(
    id: web::Data<Identity>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse> {
    let user_id = bearer_user(&id, &req)?;
    let body = json_object(&req, payload).await?;
    let invalid = |m: &str| bad_request(ErrorCode::ValidationError, m);
    let (kind, value) = validate::identity_shape(body.get("identity"), "identity")
        .map_err(|e| invalid(&e.message))?;
    if kind != "email" {
        return Err(invalid("only an e-mail identity can be verified"));
    }
    if value.trim().is_empty() {
        return Err(invalid("identity.value must not be empty"));
    }
    let Some(mailer) = id.mailer.as_ref() else {
        return Err(ApiError::new(
            ErrorCode::EmailDisabled,
            "e-mail is not configured on this server",
        ));
    };
    let uid = user_id.clone();
    let user = id
        .db(move |s| s.get(&uid))
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "user not found"))?;
    if user.status != Status::Active {
        return Err(unauthorized("the account is disabled"));
    }
    let normalized = normalize(&value);
    let Some(email) = user
        .identity(IdentityType::Email)
        .filter(|i| i.value_normalized == normalized)
        .cloned()
    else {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            "that e-mail is not an identity of this account",
        ));
    };
    if email.verified {
        return Ok(ok(
            json!({"status": "already_verified", "email_sent": false}),
        ));
    }
    if let Err(secs) = id.throttles.verification_mails.acquire(&user_id) {
        return Err(ApiError::rate_limited(
            "too many verification mails; try again later",
            secs,
        ));
    }
    let token = new_one_time_token();
    let hash = token_hash(&token);
    let grant = TokenGrant {
        user_id,
        identity: email.value_normalized.clone(),
    };
    let ttl = i64::try_from(id.auth.verify_token_ttl_seconds).unwrap_or(i64::MAX);
    let stored = hash.clone();
    id.db(move |s| s.issue_token(TokenKind::Verify, &stored, &grant, ttl, true))
        .await?;
    if let Err(e) = mailer
        .send(verification_mail(&id, &email.value_raw, &token))
        .await
    {
        tracing::error!(error = %e, "cannot send a verification mail");
        id.db(move |s| s.revoke_token(&hash)).await?;
        return Err(ApiError::new(
            ErrorCode::EmailSendFailed,
            "the verification e-mail could not be sent; try again later",
        ));
    }
    Ok(envelope::success(
        StatusCode::ACCEPTED,
        json!({"status": "pending_verification", "email_sent": true}),
    ))
}

/// `POST /user/verify-identity`.
async fn verify_identity(
    id: web::Data<Identity>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse> {
    let body = json_object(&req, payload).await?;
    let token = validate::string(&body, "token")?;
    let hash = token_hash(token.trim());
    let verified = id.db(move |s| s.redeem_verify(&hash)).await?;
    let Some(identity) = verified else {
        return Err(bad_request(
            ErrorCode::InvalidToken,
            "the token is invalid, expired or already used",
        ));
    };
    Ok(ok(
        json!({"status": "verified", "identity": identity.value_raw}),
    ))
}

/// `POST /user/forgot-password`: always the same 200; the lookup, the token and the mail
/// happen after the answer, so neither the body nor the timing tells whether the account
/// exists. A reset goes only to a verified recovery e-mail of an active account.
async fn forgot_password(
    id: web::Data<Identity>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse> {
    let body = json_object(&req, payload).await?;
    let (kind, value) = validate::identity_shape(body.get("identity"), "identity")?;
    if kind != "email" {
        return Err(ApiError::validation("identity.type", "expected 'email'"));
    }
    let normalized = normalize(&value);
    let answer = ok(json!({"status": "ok", "message": FORGOT_MESSAGE}));
    if normalized.is_empty() || id.mailer.is_none() {
        return Ok(answer);
    }
    if id.throttles.reset_requests.acquire(&normalized).is_err() {
        tracing::info!("password reset requests for one e-mail over the hourly limit; ignored");
        return Ok(answer);
    }
    let id = id.into_inner();
    actix_web::rt::spawn(async move {
        if let Err(e) = send_reset(&id, normalized).await {
            tracing::error!(error = %e.message, "password reset request failed");
        }
    });
    Ok(answer)
}

async fn send_reset(id: &Identity, normalized: String) -> Result<()> {
    let Some(mailer) = id.mailer.as_ref() else {
        return Ok(());
    };
    let lookup = normalized.clone();
    let user = id
        .db(move |s| s.by_identity(IdentityType::Email, &lookup))
        .await?;
    let Some(user) = user.filter(|u| u.status == Status::Active && u.role != Role::System) else {
        return Ok(());
    };
    let Some(email) = user
        .identity(IdentityType::Email)
        .filter(|i| i.verified && i.is_recovery)
        .cloned()
    else {
        return Ok(());
    };
    let token = new_one_time_token();
    let hash = token_hash(&token);
    let grant = TokenGrant {
        user_id: user.user_id.clone(),
        identity: normalized,
    };
    let ttl = i64::try_from(id.auth.reset_token_ttl_seconds).unwrap_or(i64::MAX);
    id.db(move |s| s.issue_token(TokenKind::Reset, &hash, &grant, ttl, false))
        .await?;
    mailer.send_in_background(reset_mail(id, &email.value_raw, &token));
    Ok(())
}

/// `POST /user/reset-password`: the token is checked before any bcrypt work, then
/// consumed together with the password change (other reset tokens are revoked).
async fn reset_password(
    id: web::Data<Identity>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse> {
    let body = json_object(&req, payload).await?;
    let token = validate::string(&body, "token")?;
    let new = validate::string(&body, "new_password")?;
    validate::new_password(
        &new,
        "new_password",
        bad_request(ErrorCode::ValidationError, "new_password must not be empty"),
    )?;
    let invalid = || {
        bad_request(
            ErrorCode::InvalidToken,
            "the token is invalid, expired or already used",
        )
    };
    let hash = token_hash(token.trim());
    let probe = hash.clone();
    if id
        .db(move |s| s.peek_token(TokenKind::Reset, &probe))
        .await?
        .is_none()
    {
        return Err(invalid());
    }
    let password_hash = id.passwords.hash(new).await?;
    let user_id = id
        .db(move |s| s.redeem_reset(&hash, &password_hash))
        .await?
        .ok_or_else(invalid)?;
    id.forget(&user_id);
    tracing::info!(user_id = %user_id, "password reset");
    Ok(ok(json!({"status": "password_reset"})))
}
