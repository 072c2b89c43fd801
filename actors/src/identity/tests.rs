//! Tests of the identity service: ids and tokens, and the actors end to end on a
//! temporary store (register, login, the caller cache, the user store's restart).

use super::*;
use std::path::PathBuf;

#[test]
fn ids_and_tokens() {
    let id = new_user_id();
    assert_eq!(id.len(), 36);
    assert_eq!(&id[14..15], "4");
    assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"));
    assert_ne!(new_user_id(), id);
    let t = new_one_time_token();
    assert_eq!(t.len(), 43);
    assert!(
        t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    assert_eq!(
        token_hash("abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

/// A temporary store file, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        Dir(std::env::temp_dir().join(format!(
            "svc-identity-{name}-{}-{}",
            std::process::id(),
            crate::random_id()
        )))
    }

    fn store(&self) -> PathBuf {
        self.0.join("store.db")
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config() -> IdentityConfig {
    IdentityConfig {
        jwt: JwtSettings {
            secret: Some("identity-actor-tests-secret-0123456789abcdef".into()),
            algorithm: "HS256".into(),
            exp_delta_days: 1,
            clock_skew_seconds: 60,
        },
        auth: AuthSettings {
            verify_token_ttl_seconds: 3600,
            reset_token_ttl_seconds: 600,
            verify_url_template: String::new(),
            reset_url_template: String::new(),
            bcrypt_cost: 4,
            login_max_failures: 2,
            login_max_failures_per_address: 20,
            login_failure_window_seconds: 60,
            bcrypt_queue_capacity: 8,
            register_max_per_address: 10,
            register_window_seconds: 60,
        },
        mailer: None,
        webhook: super::webhook::WebhookSettings::default(),
        admin: AdminSettings {
            bootstrap: Some(BootstrapAdmin {
                username: "root-admin".into(),
                email: None,
                password: Arc::new(|| Ok("first-password".to_string())),
            }),
            ..AdminSettings::default()
        },
        sso: sso::SsoSettings::default(),
    }
}

fn register(username: &str) -> messages::Register {
    messages::Register {
        identities: vec![crate::users::IdentityRecord::new(
            crate::users::IdentityType::Username,
            username,
            None,
        )],
        password: "pw-1".into(),
        profile: serde_json::Map::new(),
        address: "127.0.0.1".into(),
    }
}

fn login(username: &str, password: &str) -> messages::Login {
    messages::Login {
        kind: crate::users::IdentityType::Username,
        value: username.into(),
        password: password.into(),
        address: "127.0.0.1".into(),
    }
}

#[test]
fn register_login_and_the_callers_root() {
    let dir = Dir::new("flow");
    actix::System::new().block_on(async {
        let id = IdentityHandle::start(config(), &dir.store(), 7).expect("started");
        let user = id.ask(register("Ann")).await.expect("registered");
        let taken = id.ask(register("ann")).await.expect_err("taken");
        assert_eq!(taken.kind, ErrorKind::Taken);
        let wrong = id.ask(login("ann", "nope")).await.expect_err("wrong");
        assert_eq!(
            (wrong.kind, wrong.message.as_str()),
            (ErrorKind::Unauthorized, "Invalid credentials")
        );
        let done = id.ask(login(" ANN ", "pw-1")).await.expect("logged in");
        assert_eq!(done.user_id, user.user_id);
        assert_eq!(id.verify(&done.token).as_ref(), Ok(&user.user_id));
        let caller = id.caller(user.user_id.clone()).await.expect("caller");
        assert_eq!(caller.root.map(lang::host::format_id), Some(done.root_id));
        let cached = id.caller(user.user_id.clone()).await.expect("cached");
        assert_eq!(cached.root, caller.root);
        let gone = id.caller(new_user_id()).await.expect_err("no such user");
        assert_eq!(gone.kind, ErrorKind::Unauthorized);
        assert_eq!(id.users_health().await, Ok(()));
    });
}

#[test]
fn parallel_right_passwords_are_never_throttled() {
    let dir = Dir::new("parallel");
    actix::System::new().block_on(async {
        let id = IdentityHandle::start(config(), &dir.store(), 7).expect("started");
        id.ask(register("bob")).await.expect("registered");
        // Twice the failure limit at once: every attempt in flight holds a slot.
        let logins: Vec<_> = (0..4)
            .map(|_| {
                let id = id.clone();
                actix::spawn(async move { id.ask(login("bob", "pw-1")).await })
            })
            .collect();
        for login in logins {
            login
                .await
                .expect("joined")
                .expect("a right password is never refused");
        }
    });
}

#[test]
fn a_lost_user_store_answers_retryable_errors_until_it_reopens() {
    let dir = Dir::new("restart");
    actix::System::new().block_on(async {
        let id = IdentityHandle::start(config(), &dir.store(), 7).expect("started");
        id.ask(register("cat")).await.expect("registered");
        // The connection is lost and the file cannot be opened (a directory now).
        std::fs::remove_dir_all(&dir.0).expect("removed");
        std::fs::create_dir_all(dir.store()).expect("a directory in its place");
        id.users
            .send(crate::users::DropConnection)
            .await
            .expect("delivered");
        let e = id.ask(login("cat", "pw-1")).await.expect_err("no store");
        assert_eq!((e.kind, e.retry_after), (ErrorKind::Unavailable, Some(1)));
        assert!(id.users_health().await.is_err(), "the probe sees it");
        // A usable path again: the supervisor re-opens it (a fresh, empty store).
        std::fs::remove_dir_all(dir.store()).expect("removed");
        assert_eq!(id.users_health().await, Ok(()));
        id.ask(register("cat"))
            .await
            .expect("registered in the new store");
    });
}

/// `random_bytes` comes from the kernel's generator (not aws-lc's, whose first use costs
/// ~50 ms of entropy collection at start-up): right length, different every time.
#[test]
fn random_bytes_are_fresh_each_call() {
    let a: [u8; 32] = super::random_bytes();
    let b: [u8; 32] = super::random_bytes();
    assert_ne!(a, b);
    assert_ne!(a, [0u8; 32]);
    let ids: std::collections::HashSet<String> = (0..100).map(|_| super::new_user_id()).collect();
    assert_eq!(ids.len(), 100);
}
