//! The typed messages of the [`IdentityService`](super::IdentityService), one per
//! operation, named as commands, and their replies. Requests arrive parsed and checked
//! for shape (the HTTP layer's extractors); the service applies the rules that need
//! the store, the throttles, bcrypt or the mailer. Every reply is
//! `Result<_, IdentityError>`.

use super::IdentityError;
use crate::runtime::Caller;
use crate::users::{IdentityRecord, IdentityType, Role, UserRecord};
use actix::Message;
use serde_json::{Map, Value as Json};

/// `POST /user/register`: identities checked for shape, at most one per type, none
/// reserved; a non-empty password within bcrypt's bytes; a bounded profile.
#[derive(Debug, Message)]
#[rtype(result = "Result<Registered, IdentityError>")]
pub struct Register {
    pub identities: Vec<IdentityRecord>,
    pub password: String,
    pub profile: Map<String, Json>,
    /// The client address registrations are counted against.
    pub address: String,
}

#[derive(Debug)]
pub struct Registered {
    pub user_id: String,
}

/// `POST /user/login`.
#[derive(Debug, Message)]
#[rtype(result = "Result<LoggedIn, IdentityError>")]
pub struct Login {
    pub kind: IdentityType,
    /// The identity value as given (normalized by the service).
    pub value: String,
    pub password: String,
    /// The client address failed logins are counted against.
    pub address: String,
}

#[derive(Debug)]
pub struct LoggedIn {
    pub user_id: String,
    pub token: String,
    pub root_id: String,
    pub role: Role,
}

/// `POST /user/refresh-token`: a fresh session token for a still-active account.
#[derive(Debug, Message)]
#[rtype(result = "Result<Refreshed, IdentityError>")]
pub struct Refresh {
    /// The token, without a `Bearer ` prefix.
    pub token: String,
}

#[derive(Debug)]
pub struct Refreshed {
    pub token: String,
}

/// `GET /user/me`: the bearer's account (404 when gone, 401 when disabled).
#[derive(Debug, Message)]
#[rtype(result = "Result<UserRecord, IdentityError>")]
pub struct Me {
    pub user_id: String,
}

/// `PUT /user/password`.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), IdentityError>")]
pub struct ChangePassword {
    pub user_id: String,
    pub current_password: String,
    /// Non-empty, within bcrypt's bytes.
    pub new_password: String,
}

/// `POST /user/add-identity`: a checked identity, not reserved.
#[derive(Debug, Message)]
#[rtype(result = "Result<IdentityAdded, IdentityError>")]
pub struct AddIdentity {
    pub user_id: String,
    pub identity: IdentityRecord,
}

#[derive(Debug)]
pub struct IdentityAdded {
    pub verified: bool,
}

/// `POST /user/send-verification` for an e-mail value (non-empty).
#[derive(Debug, Message)]
#[rtype(result = "Result<VerificationSent, IdentityError>")]
pub struct SendVerification {
    pub user_id: String,
    pub email: String,
}

#[derive(Debug, PartialEq, Eq)]
pub enum VerificationSent {
    /// A token was issued and the mail accepted by the mail server.
    Sent,
    /// Nothing to do.
    AlreadyVerified,
}

/// `POST /user/verify-identity`: redeem a verification token.
#[derive(Debug, Message)]
#[rtype(result = "Result<IdentityVerified, IdentityError>")]
pub struct VerifyIdentity {
    pub token: String,
}

#[derive(Debug)]
pub struct IdentityVerified {
    /// The e-mail as the user wrote it.
    pub identity: String,
}

/// `POST /user/forgot-password` for an e-mail value: always `Ok`; the lookup, the token
/// and the mail happen after the answer.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), IdentityError>")]
pub struct ForgotPassword {
    pub email: String,
}

/// `POST /user/reset-password`.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), IdentityError>")]
pub struct ResetPassword {
    pub token: String,
    /// Non-empty, within bcrypt's bytes.
    pub new_password: String,
}

/// The caller a verified session token's user runs as (generated endpoints), read
/// from the store and cached; 401 for a deleted or disabled account.
#[derive(Debug, Message)]
#[rtype(result = "Result<Caller, IdentityError>")]
pub struct CallerOf {
    pub user_id: String,
}
