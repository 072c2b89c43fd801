//! What the identity service does for an SSO login (spec "SSO endpoints", "States and
//! transitions" SSO rows): the redirect to the provider with a fresh `state`, `nonce` and
//! PKCE verifier kept in the user store (single use, `state_ttl_seconds`), and the
//! callback: take the state, exchange the code, then sign in the linked account, link
//! an existing account with the same verified e-mail, or create one. Never a second
//! account for one e-mail; `profile.sso.<platform>` is refreshed at every sign-in.

use super::super::messages::{SsoBegin, SsoCallback, SsoSignedIn};
use super::super::sso::{ExternalAccount, b64url, form, pkce_challenge, sso_failed};
use super::super::{ErrorKind, IdentityError, new_root_id, new_user_id, random_bytes, token_hash};
use super::{Result, Service};
use crate::users::{
    IdentityRecord, IdentityType, NewUser, PendingLogin, Role, SsoAccount, Status, UserError,
    UserRecord, iso8601_now, normalize,
};
use serde_json::{Map, Value as Json};

fn invalid_state() -> IdentityError {
    IdentityError::new(
        ErrorKind::InvalidState,
        "the SSO state is unknown, expired or already used; start the sign-in again",
    )
}

/// `profile.sso.<platform>` with what the provider gave.
fn with_sso_profile(
    mut profile: Map<String, Json>,
    platform: &str,
    a: &ExternalAccount,
) -> Map<String, Json> {
    let mut fields = Map::new();
    for (k, v) in [
        ("display_name", &a.display_name),
        ("first_name", &a.first_name),
        ("last_name", &a.last_name),
        ("picture", &a.picture),
    ] {
        fields.insert(k.into(), v.clone().map_or(Json::Null, Json::String));
    }
    let sso = profile
        .entry("sso")
        .or_insert_with(|| Json::Object(Map::new()));
    if !sso.is_object() {
        *sso = Json::Object(Map::new());
    }
    if let Json::Object(m) = sso {
        m.insert(platform.into(), Json::Object(fields));
    }
    profile
}

impl Service {
    /// The configured provider of `platform`: 501 `NOT_IMPLEMENTED` when it is not
    /// configured (or not a platform this server knows).
    fn provider(&self, platform: &str) -> Result<super::super::sso::ProviderSettings> {
        let Some(p) = self.sso.provider(platform).cloned() else {
            let known: Vec<&str> = self
                .sso
                .providers
                .iter()
                .map(|p| p.platform.as_str())
                .collect();
            let shown: String = platform.chars().take(64).collect();
            return Err(IdentityError::new(
                ErrorKind::NotImplemented,
                format!(
                    "SSO provider `{shown}` is not configured on this server (platforms: {}; \
                     set [scale.sso.<platform>] client_id and client_secret)",
                    known.join(", ")
                ),
            ));
        };
        if !p.configured() {
            return Err(IdentityError::new(
                ErrorKind::NotImplemented,
                format!(
                    "SSO provider `{platform}` is not configured on this server: set \
                     [scale.sso.{platform}] client_id and client_secret"
                ),
            ));
        }
        if p.issuer.is_empty() {
            return Err(IdentityError::new(
                ErrorKind::NotImplemented,
                format!(
                    "SSO provider `{platform}` has no OpenID issuer: set [scale.sso.{platform}] \
                     issuer to an OpenID Connect issuer URL"
                ),
            ));
        }
        Ok(p)
    }

    pub(in super::super) async fn sso_begin(&self, msg: SsoBegin) -> Result<String> {
        let p = self.provider(&msg.platform)?;
        let d = self.oidc.discover(&p.issuer).await?;
        let state = b64url(&random_bytes::<32>());
        let verifier = b64url(&random_bytes::<32>());
        let nonce = b64url(&random_bytes::<16>());
        let pending = PendingLogin {
            provider: msg.platform.clone(),
            operation: msg.operation.to_string(),
            code_verifier: verifier.clone(),
            nonce: nonce.clone(),
            redirect_uri: msg.redirect_uri.clone(),
        };
        let hash = token_hash(&state);
        let ttl = i64::try_from(self.sso.state_ttl_seconds).unwrap_or(i64::MAX);
        let max = self.sso.max_pending_logins;
        let stored = self
            .db(move |s| s.put_pending_login(&hash, &pending, ttl, max))
            .await?;
        if !stored {
            return Err(IdentityError::unavailable(
                "too many SSO sign-ins in progress; try again shortly",
                5,
            ));
        }
        let challenge = pkce_challenge(&verifier);
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", p.client_id.as_str()),
            ("redirect_uri", msg.redirect_uri.as_str()),
            ("scope", p.scopes.as_str()),
            ("state", state.as_str()),
            ("nonce", nonce.as_str()),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ];
        if !p.response_mode.is_empty() {
            pairs.push(("response_mode", p.response_mode.as_str()));
        }
        let sep = if d.authorization_endpoint.contains('?') {
            '&'
        } else {
            '?'
        };
        Ok(format!("{}{sep}{}", d.authorization_endpoint, form(&pairs)))
    }

    pub(in super::super) async fn sso_callback(&self, msg: SsoCallback) -> Result<SsoSignedIn> {
        let p = self.provider(&msg.platform)?;
        let state = msg
            .state
            .filter(|s| !s.is_empty() && s.len() <= 512)
            .ok_or_else(invalid_state)?;
        let hash = token_hash(&state);
        let pending = self
            .db(move |s| s.take_pending_login(&hash))
            .await?
            .filter(|l| l.provider == msg.platform)
            .ok_or_else(invalid_state)?;
        if let Some(error) = msg.error {
            let text = msg.error_description.unwrap_or_default();
            return Err(sso_failed(format!(
                "the identity provider refused the sign-in ({error}{}{text})",
                if text.is_empty() { "" } else { ": " }
            )));
        }
        let code = msg
            .code
            .filter(|c| !c.is_empty() && c.len() <= 4096)
            .ok_or_else(|| sso_failed("the callback carries no authorization code"))?;
        let d = self.oidc.discover(&p.issuer).await?;
        let account = self
            .oidc
            .exchange(
                &p,
                &d,
                &code,
                &pending.code_verifier,
                &pending.redirect_uri,
                &pending.nonce,
            )
            .await?;
        let email = account.email.clone().ok_or_else(|| {
            sso_failed("the identity provider gave no e-mail address; allow the e-mail scope")
        })?;
        let (user, created, linked) = self.sso_account(&msg.platform, &account, &email).await?;
        if user.status != Status::Active || user.role == Role::System {
            return Err(IdentityError::unauthorized("the account is disabled"));
        }
        let token = self.issue(&user)?;
        tracing::info!(user_id = %user.user_id, platform = %msg.platform, created, linked, "SSO sign-in");
        Ok(SsoSignedIn {
            user_id: user.user_id,
            token,
            root_id: user.root_id,
            role: user.role,
            platform: msg.platform,
            operation: pending.operation,
            email,
            created,
            linked,
        })
    }

    /// The account of an external sign-in: `(user, created, linked)`.
    async fn sso_account(
        &self,
        platform: &str,
        a: &ExternalAccount,
        email: &str,
    ) -> Result<(UserRecord, bool, bool)> {
        let link = SsoAccount {
            provider: platform.to_string(),
            external_id: a.external_id.clone(),
            email: email.to_string(),
            linked_at: iso8601_now(),
        };
        let (platform_s, ext) = (platform.to_string(), a.external_id.clone());
        let normalized = normalize(email);
        let (known, by_email) = self
            .db(move |s| {
                Ok((
                    s.by_sso(&platform_s, &ext)?,
                    s.by_identity(IdentityType::Email, &normalized)?,
                ))
            })
            .await?;
        let (user_id, profile, created, linked) = if let Some(u) = known {
            // Keep the link's e-mail current.
            let (uid, l) = (u.user_id.clone(), link.clone());
            self.db(move |s| s.link_sso(&uid, &l)).await?;
            (u.user_id, u.profile, false, false)
        } else if let Some(u) = by_email {
            let own_verified = u.identity(IdentityType::Email).is_some_and(|i| i.verified);
            if !(own_verified && a.email_verified) {
                return Err(IdentityError::new(
                    ErrorKind::Taken,
                    format!(
                        "an account with the e-mail {email} exists but the address is not verified \
                         {}; sign in with the account's password and verify it to link {platform}",
                        if own_verified {
                            "by the provider"
                        } else {
                            "on that account"
                        }
                    ),
                ));
            }
            let (uid, l) = (u.user_id.clone(), link.clone());
            self.db(move |s| s.link_sso(&uid, &l)).await?;
            (u.user_id, u.profile, false, true)
        } else {
            let mut identity = IdentityRecord::new(IdentityType::Email, email, Some(true));
            identity.verified = a.email_verified;
            let new = NewUser {
                user_id: new_user_id(),
                role: Role::User,
                root_id: lang::host::format_id(new_root_id()),
                password_hash: None,
                profile: Map::new(),
                identities: vec![identity],
            };
            let uid = new.user_id.clone();
            let l = link.clone();
            match self.db(move |s| s.create_linked(new, &l)).await {
                Ok(()) => (uid, Map::new(), true, false),
                // A concurrent callback of the same person won the race: use its account.
                Err(e) if e.kind == ErrorKind::Taken => {
                    let (p2, ext2) = (platform.to_string(), a.external_id.clone());
                    let u = self.db(move |s| s.by_sso(&p2, &ext2)).await?.ok_or(e)?;
                    (u.user_id, u.profile, false, false)
                }
                Err(e) => return Err(e),
            }
        };
        let profile = with_sso_profile(profile, platform, a);
        let uid = user_id.clone();
        let user = self
            .db(move |s| {
                s.set_profile(&uid, &profile)?;
                s.get(&uid)?.ok_or(UserError::NotFound)
            })
            .await?;
        self.shared.forget(&user.user_id);
        Ok((user, created, linked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sso_profile_is_replaced_per_platform() {
        let mut p = Map::new();
        p.insert("sso".into(), Json::String("junk".into()));
        p.insert("bio".into(), Json::String("hi".into()));
        let a = ExternalAccount {
            display_name: Some("Ann Lee".into()),
            ..ExternalAccount::default()
        };
        let out = with_sso_profile(p, "google", &a);
        assert_eq!(out["bio"], "hi");
        assert_eq!(out["sso"]["google"]["display_name"], "Ann Lee");
        assert_eq!(out["sso"]["google"]["picture"], Json::Null);
    }
}
