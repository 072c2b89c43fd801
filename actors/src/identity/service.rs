//! What the [`IdentityService`](super::IdentityService) does for each message: the
//! rules of the spec's "Identity endpoints" that need the user store, the throttles,
//! bcrypt or the mailer. The store is reached only through the [`UserStoreSupervisor`];
//! bcrypt runs on the blocking pool behind [`Passwords`]' bounded queue; mail goes to
//! the [`MailSender`]. Messages arrive checked for shape by the HTTP layer.

use super::mail::{reset_mail, verification_mail};
use super::messages::{
    AddIdentity, CallerOf, ChangePassword, ForgotPassword, IdentityAdded, IdentityVerified,
    LoggedIn, Login, Me, Refresh, Refreshed, Register, Registered, ResetPassword, SendVerification,
    VerificationSent, VerifyIdentity,
};
use super::password::{Check, Passwords};
use super::sso::{OidcClient, SsoSettings};
use super::throttle::Limiter;
use super::webhook::WebhookSettings;
use super::{
    AdminSettings, AuthSettings, ErrorKind, IdentityError, MailSender, Shared, new_one_time_token,
    new_root_id, new_user_id, token_hash,
};
use crate::runtime::Caller;
use crate::users::{
    IdentityType, NewUser, Role, Status, TokenGrant, TokenKind, UserError, UserRecord, UserStore,
    UserStoreSupervisor, WithUsers, normalize,
};
use actix::Addr;
use std::sync::Arc;
use std::time::Duration;

mod admin;
mod keys;
mod sso;

/// send-verification mails per user per hour (decisions.md).
const VERIFICATION_MAILS_PER_HOUR: u32 = 5;
/// forgot-password requests per e-mail per hour (decisions.md).
const RESET_REQUESTS_PER_HOUR: u32 = 3;
const HOUR: Duration = Duration::from_secs(3600);

type Result<T> = std::result::Result<T, IdentityError>;

/// Throttles of the identity operations.
struct Throttles {
    /// Failed logins (and wrong current passwords) per identity or user.
    login_identity: Limiter,
    /// Failed logins per client address.
    login_address: Limiter,
    /// Registrations per client address.
    registrations: Limiter,
    verification_mails: Limiter,
    reset_requests: Limiter,
}

/// The service's state, shared by the futures of the requests in flight.
pub(super) struct Service {
    users: Addr<UserStoreSupervisor>,
    shared: Arc<Shared>,
    auth: AuthSettings,
    passwords: Passwords,
    throttles: Throttles,
    /// `None` = e-mail disabled.
    mailer: Option<Arc<dyn MailSender>>,
    webhook: WebhookSettings,
    admin: AdminSettings,
    sso: SsoSettings,
    oidc: OidcClient,
}

fn bad_request(message: &str) -> IdentityError {
    IdentityError::new(ErrorKind::BadRequest, message)
}

fn invalid_token() -> IdentityError {
    IdentityError::new(
        ErrorKind::InvalidToken,
        "the token is invalid, expired or already used",
    )
}

impl Service {
    pub(super) fn new(
        users: Addr<UserStoreSupervisor>,
        shared: Arc<Shared>,
        auth: AuthSettings,
        mailer: Option<Arc<dyn MailSender>>,
        webhook: WebhookSettings,
        admin: AdminSettings,
        sso: SsoSettings,
        oidc: OidcClient,
    ) -> Service {
        let passwords = Passwords::new(auth.bcrypt_cost, auth.bcrypt_queue_capacity as usize);
        let window = Duration::from_secs(auth.login_failure_window_seconds);
        let throttles = Throttles {
            login_identity: Limiter::new(auth.login_max_failures, window),
            login_address: Limiter::new(auth.login_max_failures_per_address, window),
            registrations: Limiter::new(
                auth.register_max_per_address,
                Duration::from_secs(auth.register_window_seconds),
            ),
            verification_mails: Limiter::new(VERIFICATION_MAILS_PER_HOUR, HOUR),
            reset_requests: Limiter::new(RESET_REQUESTS_PER_HOUR, HOUR),
        };
        Service {
            users,
            shared,
            auth,
            passwords,
            throttles,
            mailer,
            webhook,
            admin,
            sso,
            oidc,
        }
    }

    /// Run `f` on the user store, on its supervisor's thread.
    async fn db<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut UserStore) -> std::result::Result<T, UserError> + Send + 'static,
    {
        match self.users.send(WithUsers::new(f)).await {
            Ok(result) => result.map_err(IdentityError::from),
            Err(_) => Err(IdentityError::from(UserError::Restarting)),
        }
    }

    /// The account of a verified token's user: 404 when it no longer exists, 401 when
    /// disabled. Every operation a signed-in user asks for goes through it first, so a
    /// disabled account can do nothing with a token it still holds.
    async fn account(&self, user_id: String) -> Result<UserRecord> {
        let user = self.db(move |s| s.get(&user_id)).await?;
        let user = user.ok_or_else(|| IdentityError::new(ErrorKind::NotFound, "user not found"))?;
        if user.status != Status::Active {
            return Err(IdentityError::unauthorized("the account is disabled"));
        }
        Ok(user)
    }

    fn issue(&self, user: &UserRecord) -> Result<String> {
        self.shared
            .jwt
            .issue(&user.user_id, user.role.as_str(), crate::users::unix_now())
            .map_err(|e| {
                tracing::error!(error = %e, "cannot sign a token");
                IdentityError::internal()
            })
    }

    pub(super) async fn register(&self, msg: Register) -> Result<Registered> {
        let Register {
            identities,
            password,
            profile,
            address,
        } = msg;
        // Refuse a taken value before spending bcrypt time (the insert checks again).
        let probe = identities.clone();
        self.db(move |s| {
            for i in &probe {
                if s.by_identity(i.kind, &i.value_normalized)?.is_some() {
                    return Err(UserError::Taken {
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
        let slot = self
            .throttles
            .registrations
            .reserve(&address)
            .map_err(|secs| {
                IdentityError::rate_limited(
                    "too many registrations from this address; try again later",
                    secs,
                )
            })?;
        let hash = self.passwords.hash(password).await?;
        slot.keep();
        let new = NewUser {
            user_id: new_user_id(),
            role: Role::User,
            root_id: lang::host::format_id(new_root_id()),
            password_hash: Some(hash),
            profile,
            identities,
        };
        let user = self.db(move |s| s.create(new)).await?;
        tracing::info!(user_id = %user.user_id, "user registered");
        Ok(Registered {
            user_id: user.user_id,
        })
    }

    /// Constant work whether or not the identity exists (one lookup, one bcrypt verify),
    /// throttled per identity and per client address. Each attempt takes its slot in both
    /// limits before bcrypt runs, so parallel guesses cannot exceed them; a failure keeps
    /// the slots, a success clears the identity's failures and gives the address slot
    /// back, any other outcome gives both back.
    pub(super) async fn login(&self, msg: Login) -> Result<LoggedIn> {
        let user = self.check_password(msg).await?;
        let token = self.issue(&user)?;
        Ok(LoggedIn {
            user_id: user.user_id,
            token,
            root_id: user.root_id,
            role: user.role,
            requires_password_reset: user.requires_password_reset,
        })
    }

    /// The active, non-system account whose identity and password match (login's
    /// work, shared by `/admin/login`); see [`Service::login`].
    async fn check_password(&self, msg: Login) -> Result<UserRecord> {
        let Login {
            kind,
            value,
            password,
            address,
        } = msg;
        let normalized = normalize(&value);
        let identity_key = format!("{kind}:{normalized}");
        let t = &self.throttles;
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
                return Err(IdentityError::rate_limited(
                    "too many failed logins; try again later",
                    secs,
                ));
            }
        };
        let user = self
            .db(move |s| s.by_identity(kind, &normalized))
            .await?
            .filter(|u| u.status == Status::Active && u.role != Role::System);
        let hash = user.as_ref().and_then(|u| u.password_hash.clone());
        let check = self.passwords.check(password.clone(), hash).await?;
        let user = match user {
            Some(u) if check != Check::Mismatch => u,
            _ => {
                by_identity.keep();
                by_address.keep();
                return Err(IdentityError::unauthorized("Invalid credentials"));
            }
        };
        t.login_identity.clear(&identity_key);
        drop((by_identity, by_address));
        if check == Check::MatchLegacy {
            // Transparent upgrade of a legacy SHA-256 hash to bcrypt.
            let new_hash = self.passwords.hash(password).await?;
            let (uid, old) = (user.user_id.clone(), user.password_hash.clone());
            self.db(move |s| s.replace_password_hash(&uid, old.as_deref(), &new_hash))
                .await?;
            tracing::info!(user_id = %user.user_id, "legacy password hash upgraded to bcrypt");
        }
        Ok(user)
    }

    pub(super) async fn refresh(&self, msg: Refresh) -> Result<Refreshed> {
        let claims = self.shared.verify(&msg.token)?;
        let user_id = claims.user_id;
        let user = self.db(move |s| s.get(&user_id)).await?;
        let user = user
            .filter(|u| u.status == Status::Active && u.role != Role::System)
            .ok_or_else(|| IdentityError::unauthorized("invalid token"))?;
        let token = self.issue(&user)?;
        Ok(Refreshed { token })
    }

    pub(super) async fn me(&self, msg: Me) -> Result<UserRecord> {
        self.account(msg.user_id).await
    }

    /// Wrong current password → 400. Wrong current passwords count as failed logins of
    /// the account, each attempt counted before bcrypt runs (as for login).
    pub(super) async fn change_password(&self, msg: ChangePassword) -> Result<()> {
        let user = self.account(msg.user_id).await?;
        let key = format!("user:{}", user.user_id);
        let attempt = self
            .throttles
            .login_identity
            .reserve_wait(&key)
            .await
            .map_err(|secs| {
                IdentityError::rate_limited("too many wrong passwords; try again later", secs)
            })?;
        if !self
            .passwords
            .verify(msg.current_password, user.password_hash.clone())
            .await?
        {
            attempt.keep();
            return Err(bad_request("current password is incorrect"));
        }
        self.throttles.login_identity.clear(&key);
        drop(attempt);
        let hash = self.passwords.hash(msg.new_password).await?;
        let uid = user.user_id.clone();
        self.db(move |s| s.set_password(&uid, &hash)).await?;
        Ok(())
    }

    /// Sends no mail; a new e-mail starts unverified. A deleted account is 404, a
    /// disabled one 401 (as for `/user/me`).
    pub(super) async fn add_identity(&self, msg: AddIdentity) -> Result<IdentityAdded> {
        let AddIdentity { user_id, identity } = msg;
        self.account(user_id.clone()).await?;
        let verified = identity.verified;
        self.db(move |s| s.add_identity(&user_id, &identity))
            .await?;
        Ok(IdentityAdded { verified })
    }

    /// `Sent` after the mail was accepted by the mail server.
    pub(super) async fn send_verification(
        &self,
        msg: SendVerification,
    ) -> Result<VerificationSent> {
        let SendVerification { user_id, email } = msg;
        let Some(mailer) = self.mailer.as_ref() else {
            return Err(IdentityError::new(
                ErrorKind::EmailDisabled,
                "e-mail is not configured on this server",
            ));
        };
        let uid = user_id.clone();
        let user = self
            .db(move |s| s.get(&uid))
            .await?
            .ok_or_else(|| IdentityError::new(ErrorKind::NotFound, "user not found"))?;
        if user.status != Status::Active {
            return Err(IdentityError::unauthorized("the account is disabled"));
        }
        let normalized = normalize(&email);
        let Some(email) = user
            .identity(IdentityType::Email)
            .filter(|i| i.value_normalized == normalized)
            .cloned()
        else {
            return Err(IdentityError::new(
                ErrorKind::NotFound,
                "that e-mail is not an identity of this account",
            ));
        };
        if email.verified {
            return Ok(VerificationSent::AlreadyVerified);
        }
        if let Err(secs) = self.throttles.verification_mails.acquire(&user_id) {
            return Err(IdentityError::rate_limited(
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
        let ttl = i64::try_from(self.auth.verify_token_ttl_seconds).unwrap_or(i64::MAX);
        let stored = hash.clone();
        self.db(move |s| s.issue_token(TokenKind::Verify, &stored, &grant, ttl, true))
            .await?;
        if let Err(e) = mailer
            .send(verification_mail(&self.auth, &email.value_raw, &token))
            .await
        {
            tracing::error!(error = %e, "cannot send a verification mail");
            self.db(move |s| s.revoke_token(&hash)).await?;
            return Err(IdentityError::new(
                ErrorKind::EmailSendFailed,
                "the verification e-mail could not be sent; try again later",
            ));
        }
        Ok(VerificationSent::Sent)
    }

    pub(super) async fn verify_identity(&self, msg: VerifyIdentity) -> Result<IdentityVerified> {
        let hash = token_hash(msg.token.trim());
        let verified = self.db(move |s| s.redeem_verify(&hash)).await?;
        let identity = verified.ok_or_else(invalid_token)?;
        Ok(IdentityVerified {
            identity: identity.value_raw,
        })
    }

    /// Always `Ok`; the lookup, the token and the mail happen after the answer, so
    /// neither the answer nor its timing tells whether the account exists. A reset goes
    /// only to a verified recovery e-mail of an active account.
    pub(super) async fn forgot_password(self: Arc<Self>, msg: ForgotPassword) -> Result<()> {
        let normalized = normalize(&msg.email);
        if normalized.is_empty() || self.mailer.is_none() {
            return Ok(());
        }
        if self.throttles.reset_requests.acquire(&normalized).is_err() {
            tracing::info!("password reset requests for one e-mail over the hourly limit; ignored");
            return Ok(());
        }
        actix::spawn(async move {
            if let Err(e) = self.send_reset(normalized).await {
                tracing::error!(error = %e.message, "password reset request failed");
            }
        });
        Ok(())
    }

    async fn send_reset(&self, normalized: String) -> Result<()> {
        let Some(mailer) = self.mailer.as_ref() else {
            return Ok(());
        };
        let lookup = normalized.clone();
        let user = self
            .db(move |s| s.by_identity(IdentityType::Email, &lookup))
            .await?;
        let Some(user) = user.filter(|u| u.status == Status::Active && u.role != Role::System)
        else {
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
        let ttl = i64::try_from(self.auth.reset_token_ttl_seconds).unwrap_or(i64::MAX);
        self.db(move |s| s.issue_token(TokenKind::Reset, &hash, &grant, ttl, false))
            .await?;
        mailer.send_in_background(reset_mail(&self.auth, &email.value_raw, &token));
        Ok(())
    }

    /// The token is checked before any bcrypt work, then consumed together with the
    /// password change (other reset tokens are revoked).
    pub(super) async fn reset_password(&self, msg: ResetPassword) -> Result<()> {
        let hash = token_hash(msg.token.trim());
        let probe = hash.clone();
        if self
            .db(move |s| s.peek_token(TokenKind::Reset, &probe))
            .await?
            .is_none()
        {
            return Err(invalid_token());
        }
        let password_hash = self.passwords.hash(msg.new_password).await?;
        let user_id = self
            .db(move |s| s.redeem_reset(&hash, &password_hash))
            .await?
            .ok_or_else(invalid_token)?;
        self.shared.forget(&user_id);
        tracing::info!(user_id = %user_id, "password reset");
        Ok(())
    }

    /// Tokens of deleted or disabled accounts are 401.
    pub(super) async fn caller_of(&self, msg: CallerOf) -> Result<Caller> {
        let id = msg.user_id.clone();
        let user = self.db(move |s| s.get(&id)).await?;
        let Some(user) = user else {
            return Err(IdentityError::unauthorized(
                "invalid token: the account no longer exists",
            ));
        };
        let entry = self.shared.remember(&user)?;
        super::caller(msg.user_id, &entry)
    }
}
