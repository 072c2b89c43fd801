//! What the identity service does for the admin messages (spec "Admin endpoints",
//! decisions.md "Admin"): admin login with its own session lifetime, the admin check of
//! every admin route (role `admin`, active, password changed when required), and the
//! user operations. A user is named by username, else e-mail, else user id.

use super::super::messages::{
    AdminChangePassword, AdminLoggedIn, AdminLogin, ChangePassword, CheckAdmin, CreateUser,
    DeleteUser, ForcePasswordReset, ForcedReset, GetUser, ListUsers, Login, SsoProviderInfo,
    SsoProviderList, SsoProviders, UnlinkSso, UpdateUser,
};
use super::super::{ErrorKind, IdentityError, new_root_id, new_user_id};
use super::{Result, Service};
use crate::users::{
    BOOTSTRAP_ADMIN_ID, IdentityType, NewUser, Role, Status, UserPage, UserRecord, normalize,
};
use serde_json::Map;

fn forbidden(message: &str) -> IdentityError {
    IdentityError::new(ErrorKind::Forbidden, message)
}

fn not_found() -> IdentityError {
    IdentityError::new(ErrorKind::NotFound, "user not found")
}

impl Service {
    /// The user a path names: a username, else an e-mail, else a user id.
    async fn named(&self, name: String) -> Result<UserRecord> {
        let found = self
            .db(move |s| {
                let n = normalize(&name);
                if let Some(u) = s.by_identity(IdentityType::Username, &n)? {
                    return Ok(Some(u));
                }
                if let Some(u) = s.by_identity(IdentityType::Email, &n)? {
                    return Ok(Some(u));
                }
                s.get(name.trim())
            })
            .await?;
        found.ok_or_else(not_found)
    }

    fn admin_token(&self, user: &UserRecord) -> Result<String> {
        let lifetime = i64::from(self.admin.session_expiry_hours).saturating_mul(3600);
        self.shared
            .jwt
            .issue_for(
                &user.user_id,
                Role::Admin.as_str(),
                crate::users::unix_now(),
                lifetime,
            )
            .map_err(|e| {
                tracing::error!(error = %e, "cannot sign a token");
                IdentityError::internal()
            })
    }

    /// Password login of an admin; a non-admin with the right password is 403.
    pub(in super::super) async fn admin_login(&self, msg: AdminLogin) -> Result<AdminLoggedIn> {
        let kind = if msg.username.contains('@') {
            IdentityType::Email
        } else {
            IdentityType::Username
        };
        let user = self
            .check_password(Login {
                kind,
                value: msg.username,
                password: msg.password,
                address: msg.address,
            })
            .await?;
        if user.role != Role::Admin {
            return Err(forbidden("admin access required"));
        }
        let token = self.admin_token(&user)?;
        let username = user
            .identity(IdentityType::Username)
            .or_else(|| user.identity(IdentityType::Email))
            .map(|i| i.value_raw.clone())
            .unwrap_or_default();
        Ok(AdminLoggedIn {
            user_id: user.user_id,
            username,
            token,
            requires_password_reset: user.requires_password_reset,
        })
    }

    /// The admin's own password change (allowed while a change is required).
    pub(in super::super) async fn admin_change_password(
        &self,
        msg: AdminChangePassword,
    ) -> Result<String> {
        let user = self.account(msg.user_id.clone()).await?;
        if user.role != Role::Admin {
            return Err(forbidden("admin access required"));
        }
        self.change_password(ChangePassword {
            user_id: msg.user_id,
            current_password: msg.current_password,
            new_password: msg.new_password,
        })
        .await?;
        self.shared.forget(&user.user_id);
        self.admin_token(&user)
    }

    pub(in super::super) async fn check_admin(&self, msg: CheckAdmin) -> Result<()> {
        let uid = msg.user_id.clone();
        let user = self.db(move |s| s.get(&uid)).await?;
        let Some(user) = user.filter(|u| u.status == Status::Active) else {
            return Err(IdentityError::unauthorized(
                "invalid token: the account no longer exists or is disabled",
            ));
        };
        if user.role != Role::Admin {
            return Err(forbidden("admin access required"));
        }
        if user.requires_password_reset {
            return Err(IdentityError::new(
                ErrorKind::PasswordResetRequired,
                "change the admin password first (POST /admin/reset-password)",
            ));
        }
        Ok(())
    }

    pub(in super::super) async fn list_users(&self, msg: ListUsers) -> Result<UserPage> {
        if msg.limit == 0 || msg.limit > self.admin.max_page_size {
            return Err(IdentityError::new(
                ErrorKind::Rule,
                format!("limit must be from 1 to {}", self.admin.max_page_size),
            ));
        }
        self.db(move |s| s.list(&msg.filter, msg.limit, msg.offset))
            .await
    }

    pub(in super::super) async fn get_user(&self, msg: GetUser) -> Result<UserRecord> {
        self.named(msg.name).await
    }

    pub(in super::super) async fn create_user(&self, msg: CreateUser) -> Result<UserRecord> {
        let identities = msg.identities;
        let probe = identities.clone();
        self.db(move |s| {
            for i in &probe {
                if s.by_identity(i.kind, &i.value_normalized)?.is_some() {
                    return Err(crate::users::UserError::Taken {
                        kind: i.kind,
                        value: i.value_raw.clone(),
                    });
                }
            }
            Ok(())
        })
        .await?;
        let hash = self.passwords.hash(msg.password).await?;
        let new = NewUser {
            user_id: new_user_id(),
            role: msg.role,
            root_id: lang::host::format_id(new_root_id()),
            password_hash: Some(hash),
            profile: Map::new(),
            identities,
        };
        let reset = msg.requires_password_reset;
        let user = self
            .db(move |s| {
                let u = s.create(new)?;
                s.set_requires_password_reset(&u.user_id, reset)?;
                s.get(&u.user_id)?.ok_or(crate::users::UserError::NotFound)
            })
            .await?;
        tracing::info!(user_id = %user.user_id, role = user.role.as_str(), "user created by an admin");
        Ok(user)
    }

    pub(in super::super) async fn update_user(&self, msg: UpdateUser) -> Result<UserRecord> {
        let user = self.named(msg.name).await?;
        let changes_account = msg.role.is_some_and(|r| r != user.role)
            || msg.status.is_some_and(|s| s != user.status);
        // The bootstrap admin and the internal accounts (`__guest__`, `__system__`) keep
        // their role and status; another `system` account may be changed back (it is only
        // protected from deletion while it is `system`).
        let internal = user.user_id == BOOTSTRAP_ADMIN_ID
            || user
                .identity(IdentityType::Username)
                .is_some_and(|i| i.value_normalized.starts_with("__"));
        if changes_account && internal {
            return Err(forbidden(
                "the bootstrap admin and internal accounts keep their role and status",
            ));
        }
        if changes_account && user.user_id == msg.acting {
            return Err(forbidden(
                "an admin cannot change its own role or status (ask another admin)",
            ));
        }
        let uid = user.user_id.clone();
        let (role, status, reset) = (msg.role, msg.status, msg.requires_password_reset);
        let user = self
            .db(move |s| {
                if let Some(r) = role {
                    s.set_role(&uid, r)?;
                }
                if let Some(st) = status {
                    s.set_status(&uid, st)?;
                }
                if let Some(f) = reset {
                    s.set_requires_password_reset(&uid, f)?;
                }
                s.get(&uid)?.ok_or(crate::users::UserError::NotFound)
            })
            .await?;
        self.shared.forget(&user.user_id);
        Ok(user)
    }

    pub(in super::super) async fn delete_user(&self, msg: DeleteUser) -> Result<UserRecord> {
        let user = self.named(msg.name).await?;
        if user.user_id == msg.acting {
            return Err(forbidden("an admin cannot delete its own account"));
        }
        if user.is_protected() {
            return Err(forbidden(
                "the account is protected (bootstrap admin, system or guest) and cannot be deleted",
            ));
        }
        let uid = user.user_id.clone();
        self.db(move |s| s.delete(&uid)).await?;
        self.shared.forget(&user.user_id);
        tracing::info!(user_id = %user.user_id, "user deleted by an admin");
        Ok(user)
    }

    pub(in super::super) async fn force_password_reset(
        &self,
        msg: ForcePasswordReset,
    ) -> Result<ForcedReset> {
        let user = self.named(msg.name).await?;
        if user.password_hash.is_none() {
            return Err(IdentityError::new(
                ErrorKind::Rule,
                "the account has no password (an SSO-only or internal account)",
            ));
        }
        let uid = user.user_id.clone();
        self.db(move |s| s.set_requires_password_reset(&uid, true))
            .await?;
        let email = user
            .identity(IdentityType::Email)
            .filter(|i| i.verified && i.is_recovery)
            .map(|i| i.value_normalized.clone());
        let email_sent = match (email, self.mailer.is_some()) {
            (Some(e), true) => self.send_reset(e).await.is_ok(),
            _ => false,
        };
        let uid = user.user_id.clone();
        let user = self.db(move |s| s.get(&uid)).await?.ok_or_else(not_found)?;
        Ok(ForcedReset { user, email_sent })
    }

    pub(in super::super) async fn sso_providers(
        &self,
        _msg: SsoProviders,
    ) -> Result<SsoProviderList> {
        let providers = self
            .sso
            .providers
            .iter()
            .map(|settings| SsoProviderInfo {
                platform: settings.platform.clone(),
                configured: settings.configured() && !settings.issuer.is_empty(),
                issuer: settings.issuer.clone(),
                client_id_set: !settings.client_id.is_empty(),
                client_secret_set: !settings.client_secret.is_empty(),
            })
            .collect();
        Ok(SsoProviderList {
            providers,
            host: self.sso.host.clone(),
            client_auth_callback_url: self.sso.client_auth_callback_url.clone(),
        })
    }

    pub(in super::super) async fn unlink_sso(&self, msg: UnlinkSso) -> Result<UserRecord> {
        let user = self.named(msg.name).await?;
        let (uid, platform) = (user.user_id.clone(), msg.platform.clone());
        let removed = self.db(move |s| s.unlink_sso(&uid, &platform)).await?;
        if !removed {
            return Err(IdentityError::new(
                ErrorKind::NotFound,
                format!("the user has no linked {} account", msg.platform),
            ));
        }
        let uid = user.user_id.clone();
        self.db(move |s| s.get(&uid)).await?.ok_or_else(not_found)
    }
}
