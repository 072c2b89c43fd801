//! The admin operations of the user store (spec "Admin endpoints", decisions.md "Admin"):
//! the bootstrap admin, paged and filtered listing, role, status and the
//! `requires_password_reset` flag, profile replacement (SSO profile refresh).

use super::{BOOTSTRAP_ADMIN_ID, SqliteUsers, corrupt};
use super::{
    IdentityRecord, IdentityType, NewUser, Role, Status, UserError, UserRecord, UserStore,
    iso8601_now,
};
use rusqlite::{Connection, params};
use serde_json::{Map, Value as Json};

/// Add `users.requires_password_reset` to a store written by an older build.
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let has: i64 = conn.query_row(
        "SELECT count(*) FROM pragma_table_info('users') WHERE name = 'requires_password_reset'",
        [],
        |r| r.get(0),
    )?;
    if has == 0 {
        conn.execute_batch(
            "ALTER TABLE users ADD COLUMN requires_password_reset INTEGER NOT NULL DEFAULT 0;",
        )?;
    }
    Ok(())
}

/// Which users a listing shows: all filters are optional and combine with AND.
#[derive(Clone, Debug, Default)]
pub struct UserFilter {
    /// A case-insensitive substring of any username or e-mail identity, or the user id.
    pub query: Option<String>,
    pub role: Option<Role>,
    pub status: Option<Status>,
}

/// One page of a listing, oldest account first.
#[derive(Clone, Debug)]
pub struct UserPage {
    /// Matching users in all pages.
    pub total: u64,
    pub users: Vec<UserRecord>,
}

impl SqliteUsers {
    /// A page of users matching `filter`, oldest first.
    pub fn list(
        &mut self,
        filter: &UserFilter,
        limit: usize,
        offset: usize,
    ) -> Result<UserPage, UserError> {
        let pattern = filter.query.as_deref().map(|q| {
            let escaped = q
                .trim()
                .to_lowercase()
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            format!("%{escaped}%")
        });
        let role = filter.role.map(Role::as_str);
        let status = filter.status.map(Status::as_str);
        let filter_sql = "FROM users u WHERE (?1 IS NULL OR u.role = ?1) \
             AND (?2 IS NULL OR u.status = ?2) \
             AND (?3 IS NULL OR lower(u.user_id) LIKE ?3 ESCAPE '\\' OR EXISTS (\
                 SELECT 1 FROM user_identities i WHERE i.user_id = u.user_id \
                 AND i.value_normalized LIKE ?3 ESCAPE '\\'))";
        let total: i64 = self.conn.query_row(
            &format!("SELECT count(*) {filter_sql}"),
            params![role, status, pattern],
            |r| r.get(0),
        )?;
        let ids: Vec<String> = {
            let mut stmt = self.conn.prepare(&format!(
                "SELECT u.user_id {filter_sql} ORDER BY u.created_at, u.user_id LIMIT ?4 OFFSET ?5"
            ))?;
            let rows = stmt.query_map(
                params![
                    role,
                    status,
                    pattern,
                    i64::try_from(limit).unwrap_or(i64::MAX),
                    i64::try_from(offset).unwrap_or(i64::MAX)
                ],
                |r| r.get::<_, String>(0),
            )?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut users = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(u) = self.get(&id)? {
                users.push(u);
            }
        }
        Ok(UserPage {
            total: u64::try_from(total).unwrap_or(0),
            users,
        })
    }

    /// Set an account's role.
    pub fn set_role(&mut self, user_id: &str, role: Role) -> Result<(), UserError> {
        let n = self.conn.execute(
            "UPDATE users SET role = ?2, updated_at = ?3 WHERE user_id = ?1",
            params![user_id, role.as_str(), iso8601_now()],
        )?;
        if n == 0 {
            return Err(UserError::NotFound);
        }
        Ok(())
    }

    /// Set or clear the must-change-password flag.
    pub fn set_requires_password_reset(
        &mut self,
        user_id: &str,
        required: bool,
    ) -> Result<(), UserError> {
        let n = self.conn.execute(
            "UPDATE users SET requires_password_reset = ?2, updated_at = ?3 WHERE user_id = ?1",
            params![user_id, required, iso8601_now()],
        )?;
        if n == 0 {
            return Err(UserError::NotFound);
        }
        Ok(())
    }

    /// Replace an account's profile.
    pub fn set_profile(
        &mut self,
        user_id: &str,
        profile: &Map<String, Json>,
    ) -> Result<(), UserError> {
        let text = serde_json::to_string(profile).map_err(|e| corrupt(e.to_string()))?;
        let n = self.conn.execute(
            "UPDATE users SET profile = ?2, updated_at = ?3 WHERE user_id = ?1",
            params![user_id, text, iso8601_now()],
        )?;
        if n == 0 {
            return Err(UserError::NotFound);
        }
        Ok(())
    }
}

impl UserStore {
    /// Create the bootstrap admin (the fixed all-zero id, role `admin`) when it is
    /// missing; `true` when it was created now. An existing one is left as it is (its
    /// password may have been changed since).
    pub fn ensure_bootstrap_admin(
        &mut self,
        username: &str,
        email: Option<&str>,
        password_hash: &str,
        root_id: &str,
        requires_password_reset: bool,
    ) -> Result<bool, UserError> {
        if self.get(BOOTSTRAP_ADMIN_ID)?.is_some() {
            return Ok(false);
        }
        let mut identities = vec![IdentityRecord::new(IdentityType::Username, username, None)];
        if let Some(email) = email {
            let mut e = IdentityRecord::new(IdentityType::Email, email, None);
            // The operator configured it: it is trusted as verified.
            e.verified = true;
            identities.push(e);
        }
        let new = NewUser {
            user_id: BOOTSTRAP_ADMIN_ID.into(),
            role: Role::Admin,
            root_id: root_id.into(),
            password_hash: Some(password_hash.into()),
            profile: Map::new(),
            identities,
        };
        match self.create(new) {
            Ok(_) => {}
            // Another process created it between the check and the insert.
            Err(UserError::Taken { .. }) if self.get(BOOTSTRAP_ADMIN_ID)?.is_some() => {
                return Ok(false);
            }
            Err(e) => return Err(e),
        }
        self.set_requires_password_reset(BOOTSTRAP_ADMIN_ID, requires_password_reset)?;
        Ok(true)
    }
}
