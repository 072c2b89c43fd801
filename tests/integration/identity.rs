//! Identity over HTTP against the real binary: register → login → me → private walker →
//! refresh → password change; every error row of the spec; profile bounds; identity
//! normalization; isolation of users and the guest; verification and reset mails through
//! a real SMTP server (`aiosmtpd`, started here with `smtp_sink.py`, plain and STARTTLS);
//! expired and reused tokens; login throttling and timing; the JWT secret rules.

use crate::support::{Response, ServerGuard, free_port, request, wait_until};
use crate::{TempDir, stderr, svc, svc_in};
use serde_json::{Value, json};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "identity-tests-secret-0123456789abcdef0123";

/// The app: private walkers on the caller's root, public ones on the shared root for
/// guests, and walkers that try to read, write and connect to nodes by id.
const APP: &str = r#"node Secret {
    has text: str;
}

walker save {
    has text: str;

    can go with Root entry {
        s = Secret(text=self.text);
        here ++> s;
        report jid(s);
    }
}

walker mine {
    can go with Root entry {
        visit [-->[?:Secret]];
    }

    can show with Secret entry {
        report here.text;
    }
}

walker peek {
    has id: str;

    can go with Root entry {
        s = jobj(self.id);
        report None if s is None else s.text;
    }
}

walker tamper {
    has id: str;

    can go with Root entry {
        s = jobj(self.id);
        if s is None {
            report "unreadable";
        } else {
            s.text = "hacked";
            report "written";
        }
    }
}

walker attach {
    has id: str;

    can go with Root entry {
        s = jobj(self.id);
        if s is None {
            report "unreadable";
        } else {
            here ++> s;
            report "connected";
        }
    }
}

walker share {
    has id: str;
    has to: str;

    can go with Root entry {
        grant(jobj(self.id), self.to);
        report "shared";
    }
}

walker:pub pub_save {
    has text: str;

    can go with Root entry {
        s = Secret(text=self.text);
        here ++> s;
        report jid(s);
    }
}

walker:pub pub_mine {
    can go with Root entry {
        visit [-->[?:Secret]];
    }

    can show with Secret entry {
        report here.text;
    }
}

def whoami() -> str {
    return "private function";
}
"#;

// ---------------------------------------------------------------------------------------
// HTTP helpers
// ---------------------------------------------------------------------------------------

fn call(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> Response {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    let text = body.map(Value::to_string);
    request(
        port,
        method,
        path,
        &headers,
        text.as_deref().map(str::as_bytes),
    )
}

fn post(port: u16, path: &str, body: Value) -> Response {
    call(port, "POST", path, None, Some(&body))
}

fn post_as(port: u16, path: &str, token: &str, body: Value) -> Response {
    call(port, "POST", path, Some(token), Some(&body))
}

/// `data` of a successful envelope answered with `status`.
fn data(resp: &Response, status: u16) -> Value {
    assert_eq!(resp.status, status, "{}", resp.body);
    let v = resp.json();
    assert_eq!(v["ok"], json!(true), "{}", resp.body);
    assert_eq!(
        v["meta"]["extra"]["http_status"],
        json!(status),
        "{}",
        resp.body
    );
    v["data"].clone()
}

/// The `error` object of a failed envelope answered with `status` and `code`.
fn error(resp: &Response, status: u16, code: &str) -> Value {
    assert_eq!(resp.status, status, "{}", resp.body);
    let v = resp.json();
    assert_eq!(v["ok"], json!(false), "{}", resp.body);
    assert_eq!(v["error"]["code"], json!(code), "{}", resp.body);
    assert_eq!(
        v["meta"]["extra"]["http_status"],
        json!(status),
        "{}",
        resp.body
    );
    v["error"].clone()
}

fn register(port: u16, identities: Value, password: &str) -> Response {
    post(
        port,
        "/user/register",
        json!({"identities": identities, "credential": {"type": "password", "password": password}}),
    )
}

fn login(port: u16, kind: &str, value: &str, password: &str) -> Response {
    post(
        port,
        "/user/login",
        json!({"identity": {"type": kind, "value": value},
               "credential": {"type": "password", "password": password}}),
    )
}

/// `(user_id, token, root_id)` of a successful login.
fn login_ok(port: u16, kind: &str, value: &str, password: &str) -> (String, String, String) {
    let d = data(&login(port, kind, value, password), 200);
    let s = |k: &str| {
        d[k].as_str()
            .unwrap_or_else(|| panic!("{k} in {d}"))
            .to_string()
    };
    (s("user_id"), s("token"), s("root_id"))
}

/// `data.reports` of a walker call.
fn walk(port: u16, walker: &str, token: Option<&str>, body: Value) -> Vec<Value> {
    let resp = call(
        port,
        "POST",
        &format!("/walker/{walker}"),
        token,
        Some(&body),
    );
    let d = data(&resp, 200);
    d["reports"].as_array().cloned().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// The SMTP server
// ---------------------------------------------------------------------------------------

/// `python3 -m aiosmtpd` with `smtp_sink.Sink`, stopped by PID on drop.
struct SmtpSink {
    child: Child,
    port: u16,
    dir: TempDir,
}

impl SmtpSink {
    /// Start the sink; with `tls = Some((cert, key))` it requires STARTTLS.
    fn start(tls: Option<(&Path, &Path)>) -> SmtpSink {
        let dir = TempDir::new("smtp");
        let port = free_port();
        let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
        let mut cmd = std::process::Command::new("python3");
        cmd.env("PYTHONPATH", &here)
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
            .args(["-c", "smtp_sink.Sink"]);
        if let Some((cert, key)) = tls {
            cmd.arg("--tlscert").arg(cert).arg("--tlskey").arg(key);
        }
        cmd.arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .expect("python3 must be installed for the identity tests");
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                panic!(
                    "the SMTP sink exited ({status}); is aiosmtpd installed \
                     (`python3 -m pip install aiosmtpd`, see .ci/run)?\n{err}"
                );
            }
            assert!(Instant::now() < deadline, "the SMTP sink never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        SmtpSink { child, port, dir }
    }

    /// Every message received so far, oldest first.
    fn mails(&self) -> Vec<Value> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        names.retain(|p| p.extension().is_some_and(|e| e == "json"));
        names.sort();
        names
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .filter_map(|t| serde_json::from_str(&t).ok())
            .collect()
    }

    /// The messages to `to` (case-insensitive), waiting until there are `n`.
    fn wait_for(&self, to: &str, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let got: Vec<Value> = self
                .mails()
                .into_iter()
                .filter(|m| {
                    m["rcpt_tos"].as_array().is_some_and(|r| {
                        r.iter()
                            .any(|a| a.as_str().is_some_and(|a| a.eq_ignore_ascii_case(to)))
                    })
                })
                .collect();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "expected {n} mails to {to}, got {}: {got:?}",
                got.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The token of a mail whose link is `...token=<token>`.
fn mail_token(mail: &Value) -> String {
    let body = mail["body"].as_str().unwrap_or_default();
    let rest = body
        .split("token=")
        .nth(1)
        .unwrap_or_else(|| panic!("no token in {body:?}"));
    rest.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}

/// An app directory with the app and `svc.toml`.
fn app(tag: &str, toml: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write("app.svc", APP);
    dir.write("svc.toml", toml);
    dir
}

fn smtp_toml(port: u16, extra: &str) -> String {
    format!(
        r#"[scale.jwt]
secret = "{SECRET}"

[scale.auth]
bcrypt_cost = 4
verify_url_template = "http://app.test/verify?token={{token}}"
reset_url_template = "http://app.test/reset?token={{token}}"
{extra}
[scale.emailer]
provider = "smtp"
from_address = "svc app <noreply@app.test>"

[scale.emailer.smtp]
host = "127.0.0.1"
port = {port}
use_tls = false
timeout = 5
"#
    )
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

/// The whole happy path, every validation and error row of the account endpoints.
#[test]
fn register_login_me_walk_refresh_password() {
    let sink = SmtpSink::start(None);
    let dir = app("id-flow", &smtp_toml(sink.port, ""));
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    let port = server.port;

    // Register: 201, no token; the profile is kept apart from the account fields.
    let resp = post(
        port,
        "/user/register",
        json!({
            "identities": [{"type": "username", "value": "Alice"},
                           {"type": "email", "value": " Alice@Example.COM "}],
            "credential": {"type": "password", "password": "pw-alice-1"},
            "profile": {"display_name": "Alice A.", "age": 30, "score": 1.5, "beta": true,
                        "role": "admin"},
        }),
    );
    let d = data(&resp, 201);
    assert_eq!(d["message"], json!("User registered successfully"));
    assert!(d.get("token").is_none());
    let alice_id = d["user_id"].as_str().expect("user_id").to_string();
    assert_eq!(alice_id.len(), 36);
    assert_eq!(&alice_id[14..15], "4", "a UUID v4: {alice_id}");

    // Normalization: any case and padding of either identity logs in.
    let (uid, token, root) = login_ok(port, "email", "alice@example.com", "pw-alice-1");
    assert_eq!(uid, alice_id);
    assert_eq!(root.len(), 32);
    let (_, token2, root2) = login_ok(port, "username", "  ALICE ", "pw-alice-1");
    assert_eq!(root2, root);
    let d = data(
        &login(port, "email", "ALICE@EXAMPLE.COM", "pw-alice-1"),
        200,
    );
    assert_eq!(d["role"], json!("user"));
    assert_eq!(
        d.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec![
            "user_id".into(),
            "token".into(),
            "root_id".into(),
            "role".into()
        ])
    );
    assert!(!token2.is_empty());

    // The token: sub and user_id are the user, role, iat and exp 7 days apart, HS256.
    let claims = jsonwebtoken::decode::<Value>(
        &token,
        &jsonwebtoken::DecodingKey::from_secret(SECRET.as_bytes()),
        &jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256),
    )
    .expect("a valid HS256 token")
    .claims;
    assert_eq!(claims["sub"], json!(alice_id));
    assert_eq!(claims["user_id"], json!(alice_id));
    assert_eq!(claims["role"], json!("user"));
    let life = claims["exp"].as_i64().unwrap_or(0) - claims["iat"].as_i64().unwrap_or(0);
    assert_eq!(life, 7 * 86_400);

    // Me: the account without credentials, hashes, normalized values or the root id.
    let me = call(port, "GET", "/user/me", Some(&token), None);
    let d = data(&me, 200);
    assert_eq!(d["user_id"], json!(alice_id));
    assert_eq!(
        (d["role"].clone(), d["status"].clone()),
        (json!("user"), json!("active"))
    );
    assert_eq!(
        d["identities"],
        json!([
            {"type": "username", "value": "Alice", "verified": true, "is_recovery": false},
            {"type": "email", "value": "Alice@Example.COM", "verified": false, "is_recovery": true},
        ])
    );
    assert_eq!(d["profile"]["display_name"], json!("Alice A."));
    assert_eq!(
        d["profile"]["role"],
        json!("admin"),
        "profile keys never touch the account"
    );
    for k in ["created_at", "updated_at"] {
        let t = d[k].as_str().unwrap_or_default();
        assert!(
            t.len() >= 20 && t.as_bytes()[10] == b'T' && t.ends_with('Z'),
            "{k}: {t}"
        );
    }
    for leak in [
        "credentials",
        "password_hash",
        "value_normalized",
        "external_id",
        "root_id",
        &root,
        "$2b$",
    ] {
        assert!(!me.body.contains(leak), "me leaks {leak}: {}", me.body);
    }
    error(
        &call(port, "GET", "/user/me", None, None),
        401,
        "UNAUTHORIZED",
    );
    error(
        &call(port, "GET", "/user/me", Some("garbage"), None),
        401,
        "UNAUTHORIZED",
    );
    let other_key = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(b"another secret"),
    )
    .expect("signed");
    error(
        &call(port, "GET", "/user/me", Some(&other_key), None),
        401,
        "UNAUTHORIZED",
    );
    let mut typed = claims.clone();
    typed["type"] = json!("api_key");
    let typed = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &typed,
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .expect("signed");
    error(
        &call(port, "GET", "/user/me", Some(&typed), None),
        401,
        "UNAUTHORIZED",
    );
    let hs512 = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS512),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .expect("signed");
    error(
        &call(port, "GET", "/user/me", Some(&hs512), None),
        401,
        "UNAUTHORIZED",
    );
    let mut old = claims.clone();
    old["exp"] = json!(claims["iat"].as_i64().unwrap_or(0) - 10);
    let expired = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &old,
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .expect("signed");
    let e = error(
        &call(port, "GET", "/user/me", Some(&expired), None),
        401,
        "UNAUTHORIZED",
    );
    assert_eq!(e["message"], json!("token expired"));

    // Private walker and function: token required, run on the user's own root.
    let id = walk(port, "save", Some(&token), json!({"text": "alice's"}));
    assert_eq!(id.len(), 1);
    assert_eq!(
        walk(port, "mine", Some(&token), json!({})),
        vec![json!("alice's")]
    );
    error(
        &call(port, "POST", "/walker/mine", None, Some(&json!({}))),
        401,
        "UNAUTHORIZED",
    );
    error(
        &call(
            port,
            "POST",
            "/walker/mine",
            Some(&expired),
            Some(&json!({})),
        ),
        401,
        "UNAUTHORIZED",
    );
    error(
        &call(port, "POST", "/function/whoami", None, Some(&json!({}))),
        401,
        "UNAUTHORIZED",
    );
    let d = data(
        &call(
            port,
            "POST",
            "/function/whoami",
            Some(&token),
            Some(&json!({})),
        ),
        200,
    );
    assert_eq!(d["result"], json!("private function"));

    // Refresh: token in the body, `Bearer ` stripped; the old token keeps working.
    let d = data(
        &post(
            port,
            "/user/refresh-token",
            json!({"token": format!("Bearer {token}")}),
        ),
        200,
    );
    assert_eq!(d["message"], json!("Token refreshed successfully"));
    let fresh = d["token"].as_str().expect("token").to_string();
    assert_eq!(
        walk(port, "mine", Some(&fresh), json!({})),
        vec![json!("alice's")]
    );
    assert_eq!(
        walk(port, "mine", Some(&token), json!({})),
        vec![json!("alice's")]
    );
    let d = data(
        &post(port, "/user/refresh-token", json!({"token": token})),
        200,
    );
    assert!(d["token"].is_string());
    for bad in [
        json!({"token": "nope"}),
        json!({"token": expired}),
        json!({"token": ""}),
        json!({"token": typed}),
    ] {
        error(&post(port, "/user/refresh-token", bad), 401, "UNAUTHORIZED");
    }
    error(
        &post(port, "/user/refresh-token", json!({})),
        422,
        "VALIDATION_ERROR",
    );

    // Password change.
    let put = |body: Value, t: Option<&str>| call(port, "PUT", "/user/password", t, Some(&body));
    error(
        &put(json!({"current_password": "x", "new_password": "y"}), None),
        401,
        "UNAUTHORIZED",
    );
    let e = error(
        &put(
            json!({"current_password": "wrong", "new_password": "pw-2"}),
            Some(&token),
        ),
        400,
        "BAD_REQUEST",
    );
    assert_eq!(e["message"], json!("current password is incorrect"));
    error(
        &put(
            json!({"current_password": "pw-alice-1", "new_password": ""}),
            Some(&token),
        ),
        400,
        "VALIDATION_ERROR",
    );
    error(
        &put(json!({"current_password": "pw-alice-1"}), Some(&token)),
        422,
        "VALIDATION_ERROR",
    );
    let d = data(
        &put(
            json!({"current_password": "pw-alice-1", "new_password": "pw-alice-2"}),
            Some(&token),
        ),
        200,
    );
    assert_eq!(d["user_id"], json!(alice_id));
    assert!(d["message"].is_string());
    error(
        &login(port, "username", "alice", "pw-alice-1"),
        401,
        "UNAUTHORIZED",
    );
    login_ok(port, "username", "alice", "pw-alice-2");
    error(
        &call(
            port,
            "PATCH",
            "/user/password",
            Some(&token),
            Some(&json!({})),
        ),
        405,
        "METHOD_NOT_ALLOWED",
    );

    // Login failures all look alike.
    let wrong = error(
        &login(port, "username", "alice", "nope"),
        401,
        "UNAUTHORIZED",
    );
    let unknown = error(
        &login(port, "username", "nobody", "nope"),
        401,
        "UNAUTHORIZED",
    );
    assert_eq!(wrong, unknown);
    assert_eq!(wrong["message"], json!("Invalid credentials"));
    error(
        &login(port, "username", "__guest__", ""),
        401,
        "UNAUTHORIZED",
    );
    error(
        &login(port, "username", "__system__", ""),
        401,
        "UNAUTHORIZED",
    );
    error(&login(port, "phone", "1", "x"), 422, "VALIDATION_ERROR");
    error(
        &post(
            port,
            "/user/login",
            json!({"identity": {"type": "username", "value": "alice"}}),
        ),
        422,
        "VALIDATION_ERROR",
    );

    // Registration rules.
    let e = error(&register(port, json!([]), "pw"), 400, "VALIDATION_ERROR");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("at least one"),
        "{e}"
    );
    let two = json!([{"type": "username", "value": "bob"}, {"type": "username", "value": "bobby"}]);
    error(&register(port, two, "pw"), 400, "VALIDATION_ERROR");
    error(
        &register(
            port,
            json!([{"type": "username", "value": "__guest__"}]),
            "pw",
        ),
        400,
        "VALIDATION_ERROR",
    );
    let e = error(
        &register(
            port,
            json!([{"type": "email", "value": "ALICE@example.com"}]),
            "pw",
        ),
        409,
        "IDENTITY_TAKEN",
    );
    assert!(
        e["message"].as_str().unwrap_or_default().contains("taken"),
        "{e}"
    );
    error(
        &register(port, json!([{"type": "username", "value": " alice"}]), "pw"),
        409,
        "IDENTITY_TAKEN",
    );
    let long = "x".repeat(73);
    for (identities, password) in [
        (json!([{"type": "phone", "value": "1"}]), "pw"),
        (json!([{"type": "username", "value": ""}]), "pw"),
        (json!([{"type": "email", "value": "not-an-address"}]), "pw"),
        (json!([{"type": "username"}]), "pw"),
        (json!("bob"), "pw"),
        (json!([{"type": "username", "value": "bob"}]), ""),
        (json!([{"type": "username", "value": "bob"}]), long.as_str()),
    ] {
        error(
            &register(port, identities, password),
            422,
            "VALIDATION_ERROR",
        );
    }
    for body in [
        json!({"identities": [{"type": "username", "value": "bob"}]}),
        json!({"identities": [{"type": "username", "value": "bob"}], "credential": {"type": "otp", "password": "x"}}),
        json!([1, 2]),
    ] {
        error(&post(port, "/user/register", body), 422, "VALIDATION_ERROR");
    }
    let raw = request(
        port,
        "POST",
        "/user/register",
        &[("Content-Type", "application/json")],
        Some(b"{nope"),
    );
    error(&raw, 422, "VALIDATION_ERROR");

    // Profile bounds.
    let profile = |p: Value| {
        post(
            port,
            "/user/register",
            json!({"identities": [{"type": "username", "value": "pat"}],
                   "credential": {"type": "password", "password": "pw"}, "profile": p}),
        )
    };
    let many: serde_json::Map<String, Value> =
        (0..21).map(|i| (format!("k{i}"), json!(i))).collect();
    let big: serde_json::Map<String, Value> = (0..9)
        .map(|i| (format!("k{i}"), json!("x".repeat(1000))))
        .collect();
    for (p, field) in [
        (Value::Object(many), "profile"),
        (Value::Object(big), "profile"),
        (json!({"1abc": 1}), "profile.1abc"),
        (json!({"a-b": 1}), "profile.a-b"),
        (json!({format!("k{}", "x".repeat(64)): 1}), "profile.k"),
        (json!({"bio": "x".repeat(1025)}), "profile.bio"),
        (json!({"tags": ["a"]}), "profile.tags"),
        (json!({"nested": {"a": 1}}), "profile.nested"),
        (json!({"none": null}), "profile.none"),
        (json!("text"), "profile"),
    ] {
        let e = error(&profile(p.clone()), 422, "VALIDATION_ERROR");
        let f = e["details"][0]["field"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(f.starts_with(field), "{p}: {e}");
    }
    let fine: serde_json::Map<String, Value> = (0..20)
        .map(|i| (format!("k{i}"), json!("y".repeat(300))))
        .collect();
    data(&profile(Value::Object(fine)), 201);

    // add-identity and the user-deleted row.
    let bob = data(
        &register(
            port,
            json!([{"type": "username", "value": "bob"}]),
            "pw-bob",
        ),
        201,
    );
    let bob_id = bob["user_id"].as_str().expect("id").to_string();
    let (_, bob_token, _) = login_ok(port, "username", "bob", "pw-bob");
    let add = |t: Option<&str>, b: Value| call(port, "POST", "/user/add-identity", t, Some(&b));
    error(
        &add(
            None,
            json!({"identity": {"type": "email", "value": "b@x.io"}}),
        ),
        401,
        "UNAUTHORIZED",
    );
    error(
        &add(
            Some(&bob_token),
            json!({"identity": {"type": "email", "value": "alice@EXAMPLE.com"}}),
        ),
        409,
        "IDENTITY_TAKEN",
    );
    error(
        &add(
            Some(&bob_token),
            json!({"identity": {"type": "username", "value": "bob2"}}),
        ),
        400,
        "VALIDATION_ERROR",
    );
    error(
        &add(
            Some(&bob_token),
            json!({"identity": {"type": "email", "value": "nope"}}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    let d = data(
        &add(
            Some(&bob_token),
            json!({"identity": {"type": "email", "value": "Bob@X.io"}, "is_recovery": true}),
        ),
        200,
    );
    assert_eq!(d, json!({"status": "added", "verified": false}));
    assert!(sink.mails().is_empty(), "add-identity sends no mail");
    login_ok(port, "email", "bob@x.io", "pw-bob");
    let store = dir.path().join(".svc/data/anchor_store.db");
    actors::users::UserStore::open(&store)
        .and_then(|mut s| s.delete(&bob_id))
        .expect("delete bob behind the server's back");
    error(
        &call(port, "GET", "/user/me", Some(&bob_token), None),
        404,
        "NOT_FOUND",
    );
    error(
        &add(
            Some(&bob_token),
            json!({"identity": {"type": "username", "value": "bob3"}}),
        ),
        404,
        "NOT_FOUND",
    );
    error(
        &post(port, "/user/refresh-token", json!({"token": bob_token})),
        401,
        "UNAUTHORIZED",
    );
    error(
        &login(port, "username", "bob", "pw-bob"),
        401,
        "UNAUTHORIZED",
    );

    // A legacy SHA-256 password hash logs in once and is replaced by bcrypt.
    let legacy_hash = "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"; // sha256("1")
    let legacy_id = "3f1c2a9e-0000-4000-8000-00000000beef";
    let mut users = actors::users::UserStore::open(&store).expect("open the user store");
    users
        .create(actors::users::NewUser {
            user_id: legacy_id.into(),
            role: actors::users::Role::User,
            root_id: "ab".repeat(16),
            password_hash: Some(legacy_hash.into()),
            profile: serde_json::Map::new(),
            identities: vec![actors::users::IdentityRecord::new(
                actors::users::IdentityType::Username,
                "legacy",
                None,
            )],
        })
        .expect("a legacy user");
    error(&login(port, "username", "legacy", "2"), 401, "UNAUTHORIZED");
    login_ok(port, "username", "legacy", "1");
    let upgraded = users
        .get(legacy_id)
        .expect("read")
        .and_then(|u| u.password_hash)
        .unwrap_or_default();
    assert!(upgraded.starts_with("$2b$04$"), "{upgraded}");
    login_ok(port, "username", "legacy", "1");
}

/// Verification and reset mails through a plain SMTP server, their tokens redeemed once.
#[test]
fn verification_and_reset_by_mail() {
    let sink = SmtpSink::start(None);
    let dir = app("id-mail", &smtp_toml(sink.port, ""));
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    let port = server.port;
    let ids = json!([{"type": "username", "value": "carol"}, {"type": "email", "value": "Carol@Mail.test"}]);
    data(&register(port, ids, "pw-carol"), 201);
    let (_, token, _) = login_ok(port, "username", "carol", "pw-carol");
    let send =
        |t: Option<&str>, b: Value| call(port, "POST", "/user/send-verification", t, Some(&b));
    let email = |v: &str| json!({"identity": {"type": "email", "value": v}});

    error(&send(None, email("carol@mail.test")), 401, "UNAUTHORIZED");
    error(
        &send(
            Some(&token),
            json!({"identity": {"type": "username", "value": "carol"}}),
        ),
        400,
        "VALIDATION_ERROR",
    );
    error(
        &send(Some(&token), json!({"identity": {"type": "email"}})),
        400,
        "VALIDATION_ERROR",
    );
    error(&send(Some(&token), json!({})), 400, "VALIDATION_ERROR");
    error(
        &send(Some(&token), email("someone@else.test")),
        404,
        "NOT_FOUND",
    );

    // Forgot-password before the e-mail is verified: the same 200, and no mail.
    let forgot = |v: &str| post(port, "/user/forgot-password", email(v));
    let fixed = data(&forgot("carol@mail.test"), 200);
    assert_eq!(fixed["status"], json!("ok"));
    assert_eq!(data(&forgot("nobody@mail.test"), 200), fixed);

    // Verify: 202, the mail arrives, its token verifies once.
    let d = data(&send(Some(&token), email(" CAROL@mail.test")), 202);
    assert_eq!(
        d,
        json!({"status": "pending_verification", "email_sent": true})
    );
    let mails = sink.wait_for("Carol@Mail.test", 1);
    assert_eq!(
        mails.len(),
        1,
        "no reset mail for an unverified e-mail: {mails:?}"
    );
    let m = &mails[0];
    assert_eq!(m["mail_from"], json!("noreply@app.test"));
    assert!(
        m["body"]
            .as_str()
            .unwrap_or_default()
            .contains("http://app.test/verify?token="),
        "{m}"
    );
    assert_eq!(m["tls"], json!(false));
    let vtoken = mail_token(m);
    assert_eq!(vtoken.len(), 43);
    let verify = |t: &str| post(port, "/user/verify-identity", json!({"token": t}));
    let d = data(&verify(&vtoken), 200);
    assert_eq!(
        d,
        json!({"status": "verified", "identity": "Carol@Mail.test"})
    );
    error(&verify(&vtoken), 400, "INVALID_TOKEN");
    error(&verify("not-a-token"), 400, "INVALID_TOKEN");
    error(
        &post(port, "/user/verify-identity", json!({})),
        422,
        "VALIDATION_ERROR",
    );
    let me = data(&call(port, "GET", "/user/me", Some(&token), None), 200);
    assert_eq!(me["identities"][1]["verified"], json!(true));
    let d = data(&send(Some(&token), email("carol@mail.test")), 200);
    assert_eq!(d["status"], json!("already_verified"));

    // Reset: two requests, the newer token resets and revokes the older one.
    assert_eq!(data(&forgot("carol@MAIL.test"), 200), fixed);
    sink.wait_for("Carol@Mail.test", 2);
    assert_eq!(data(&forgot("carol@mail.test"), 200), fixed);
    let mails = sink.wait_for("Carol@Mail.test", 3);
    let (first, second) = (mail_token(&mails[1]), mail_token(&mails[2]));
    assert!(
        mails[2]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("http://app.test/reset?token=")
    );
    let reset = |t: &str, pw: &str| {
        post(
            port,
            "/user/reset-password",
            json!({"token": t, "new_password": pw}),
        )
    };
    error(&reset(&second, ""), 400, "VALIDATION_ERROR");
    let d = data(&reset(&second, "pw-carol-2"), 200);
    assert_eq!(d, json!({"status": "password_reset"}));
    error(&reset(&second, "pw-carol-3"), 400, "INVALID_TOKEN");
    error(&reset(&first, "pw-carol-3"), 400, "INVALID_TOKEN");
    error(&reset("bogus", "pw-carol-3"), 400, "INVALID_TOKEN");
    error(
        &login(port, "username", "carol", "pw-carol"),
        401,
        "UNAUTHORIZED",
    );
    login_ok(port, "email", "carol@mail.test", "pw-carol-2");

    // Three reset requests per e-mail per hour (the unverified one counted): the fourth
    // still answers 200 and sends nothing.
    assert_eq!(data(&forgot("carol@mail.test"), 200), fixed);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(sink.wait_for("Carol@Mail.test", 3).len(), 3);

    // Five verification mails per user per hour; each revokes the one before.
    let ids = json!([{"type": "username", "value": "dave"}, {"type": "email", "value": "dave@mail.test"}]);
    data(&register(port, ids, "pw-dave"), 201);
    let (_, dave, _) = login_ok(port, "username", "dave", "pw-dave");
    for _ in 0..5 {
        data(&send(Some(&dave), email("dave@mail.test")), 202);
    }
    let resp = send(Some(&dave), email("dave@mail.test"));
    error(&resp, 429, "RATE_LIMITED");
    let retry: u64 = resp
        .header("Retry-After")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!((3000..=3600).contains(&retry), "Retry-After {retry}");
    let mails = sink.wait_for("dave@mail.test", 5);
    error(&verify(&mail_token(&mails[0])), 400, "INVALID_TOKEN");
    data(&verify(&mail_token(&mails[4])), 200);
}

/// User A, user B and the guest never see each other's nodes unless granted.
#[test]
fn users_and_guest_are_isolated() {
    let dir = app(
        "id-iso",
        &format!("[scale.jwt]\nsecret = \"{SECRET}\"\n[scale.auth]\nbcrypt_cost = 4\n"),
    );
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    let port = server.port;
    data(
        &register(port, json!([{"type": "username", "value": "ann"}]), "pw"),
        201,
    );
    data(
        &register(port, json!([{"type": "username", "value": "ben"}]), "pw"),
        201,
    );
    let (_, ann, ann_root) = login_ok(port, "username", "ann", "pw");
    let (_, ben, ben_root) = login_ok(port, "username", "ben", "pw");
    assert_ne!(ann_root, ben_root);

    let ann_note = walk(port, "save", Some(&ann), json!({"text": "ann's"}))[0].clone();
    let ann_note = ann_note.as_str().expect("jid").to_string();
    let ben_note = walk(port, "save", Some(&ben), json!({"text": "ben's"}))[0].clone();
    let guest_note = walk(port, "pub_save", None, json!({"text": "guest's"}))[0].clone();
    let guest_note = guest_note.as_str().expect("jid").to_string();

    // Each root holds only its own; a token on a public walker means the caller's root.
    assert_eq!(
        walk(port, "mine", Some(&ann), json!({})),
        vec![json!("ann's")]
    );
    assert_eq!(
        walk(port, "mine", Some(&ben), json!({})),
        vec![json!("ben's")]
    );
    assert_eq!(
        walk(port, "pub_mine", None, json!({})),
        vec![json!("guest's")]
    );
    assert_eq!(
        walk(port, "pub_mine", Some(&ann), json!({})),
        vec![json!("ann's")]
    );
    error(
        &call(
            port,
            "POST",
            "/walker/pub_mine",
            Some("bad"),
            Some(&json!({})),
        ),
        401,
        "UNAUTHORIZED",
    );

    // No read, write or connect across users, nor between users and the guest.
    for (token, id) in [
        (&ben, &ann_note),
        (&ann, &guest_note),
        (&ann, &ben_root),
        (&ben, &ann_root),
    ] {
        assert_eq!(
            walk(port, "peek", Some(token), json!({"id": id})),
            vec![Value::Null],
            "{id}"
        );
        assert_eq!(
            walk(port, "tamper", Some(token), json!({"id": id})),
            vec![json!("unreadable")]
        );
        assert_eq!(
            walk(port, "attach", Some(token), json!({"id": id})),
            vec![json!("unreadable")]
        );
    }
    let ben_note = ben_note.as_str().expect("jid").to_string();
    assert_eq!(
        walk(port, "peek", Some(&ann), json!({"id": ben_note})),
        vec![Value::Null]
    );
    assert_eq!(
        walk(port, "peek", Some(&ann), json!({"id": guest_note})),
        vec![Value::Null]
    );
    assert_eq!(
        walk(port, "peek", Some(&ben), json!({"id": ben_note})),
        vec![json!("ben's")]
    );

    // Granted READ: ben reads ann's note but may neither write nor connect to it.
    assert_eq!(
        walk(
            port,
            "share",
            Some(&ann),
            json!({"id": ann_note, "to": ben_root})
        ),
        vec![json!("shared")]
    );
    assert_eq!(
        walk(port, "peek", Some(&ben), json!({"id": ann_note})),
        vec![json!("ann's")]
    );
    for w in ["tamper", "attach"] {
        let e = error(
            &call(
                port,
                "POST",
                &format!("/walker/{w}"),
                Some(&ben),
                Some(&json!({"id": ann_note})),
            ),
            500,
            "EXECUTION_ERROR",
        );
        assert!(
            e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("PermissionError"),
            "{e}"
        );
    }
    assert_eq!(
        walk(port, "mine", Some(&ann), json!({})),
        vec![json!("ann's")]
    );
    assert_eq!(
        walk(port, "mine", Some(&ben), json!({})),
        vec![json!("ben's")]
    );
    // Still closed to a third party.
    data(
        &register(port, json!([{"type": "username", "value": "cat"}]), "pw"),
        201,
    );
    let (_, cat, _) = login_ok(port, "username", "cat", "pw");
    assert_eq!(
        walk(port, "peek", Some(&cat), json!({"id": ann_note})),
        vec![Value::Null]
    );
}

/// Short token lifetimes, login throttling per identity and per address, and the login
/// timing of unknown identities against wrong passwords.
#[test]
fn expiry_throttling_and_timing() {
    let sink = SmtpSink::start(None);
    let extra = "verify_token_ttl_seconds = 3\nreset_token_ttl_seconds = 3\n\
                 login_max_failures = 3\nlogin_max_failures_per_address = 8\n";
    let dir = app("id-expiry", &smtp_toml(sink.port, extra));
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    let port = server.port;
    let ids =
        json!([{"type": "username", "value": "eve"}, {"type": "email", "value": "eve@mail.test"}]);
    data(&register(port, ids, "pw-eve"), 201);
    let (_, token, _) = login_ok(port, "username", "eve", "pw-eve");
    let email = json!({"identity": {"type": "email", "value": "eve@mail.test"}});
    data(
        &post_as(port, "/user/send-verification", &token, email.clone()),
        202,
    );
    let vtoken = mail_token(&sink.wait_for("eve@mail.test", 1)[0]);
    std::thread::sleep(Duration::from_millis(4100));
    error(
        &post(port, "/user/verify-identity", json!({"token": vtoken})),
        400,
        "INVALID_TOKEN",
    );
    data(
        &post_as(port, "/user/send-verification", &token, email.clone()),
        202,
    );
    let vtoken = mail_token(&sink.wait_for("eve@mail.test", 2)[1]);
    data(
        &post(port, "/user/verify-identity", json!({"token": vtoken})),
        200,
    );
    data(&post(port, "/user/forgot-password", email), 200);
    let rtoken = mail_token(&sink.wait_for("eve@mail.test", 3)[2]);
    std::thread::sleep(Duration::from_millis(4100));
    let e = post(
        port,
        "/user/reset-password",
        json!({"token": rtoken, "new_password": "x"}),
    );
    error(&e, 400, "INVALID_TOKEN");

    // Three failures lock the identity, even for the right password, with Retry-After.
    for _ in 0..3 {
        error(
            &login(port, "username", "eve", "wrong"),
            401,
            "UNAUTHORIZED",
        );
    }
    let locked = login(port, "username", "EVE", "pw-eve");
    error(&locked, 429, "RATE_LIMITED");
    let retry: u64 = locked
        .header("Retry-After")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!((800..=900).contains(&retry), "Retry-After {retry}");
    // Failures per client address: unknown identities count too (8 in all here).
    for i in 0..5 {
        error(
            &login(port, "username", &format!("ghost{i}"), "x"),
            401,
            "UNAUTHORIZED",
        );
    }
    data(
        &register(
            port,
            json!([{"type": "username", "value": "fay"}]),
            "pw-fay",
        ),
        201,
    );
    error(
        &login(port, "username", "fay", "pw-fay"),
        429,
        "RATE_LIMITED",
    );
}

/// Without an emailer (here: an unsupported provider, logged), verification answers 503
/// and forgot-password still 200; the development secret warns; login timing does not
/// tell unknown identities from wrong passwords.
#[test]
fn no_emailer_dev_secret_and_login_timing() {
    let toml = "[scale.auth]\nbcrypt_cost = 8\nlogin_max_failures = 1000\n\
                login_max_failures_per_address = 1000\n\
                [scale.emailer]\nprovider = \"mymail.module:Mailer\"\n";
    let dir = app("id-nomail", toml);
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    let port = server.port;
    data(
        &register(
            port,
            json!([{"type": "email", "value": "gil@mail.test"}]),
            "pw-gil",
        ),
        201,
    );
    let (_, token, _) = login_ok(port, "email", "gil@mail.test", "pw-gil");
    let email = json!({"identity": {"type": "email", "value": "gil@mail.test"}});
    error(
        &post_as(port, "/user/send-verification", &token, email.clone()),
        503,
        "EMAIL_DISABLED",
    );
    data(&post(port, "/user/forgot-password", email), 200);
    let d = data(
        &post_as(
            port,
            "/user/add-identity",
            &token,
            json!({"identity": {"type": "username", "value": "gil"}}),
        ),
        200,
    );
    assert_eq!(d, json!({"status": "added", "verified": true}));
    let err = server.stderr();
    assert!(err.contains("DEVELOPMENT"), "no dev-secret warning:\n{err}");
    assert!(
        err.contains("e-mail is disabled"),
        "no emailer message:\n{err}"
    );

    // Both paths spend one bcrypt verify (cost 8, about 40 ms in a debug build): each is
    // far slower than a login refused before any hashing. Their times agree within 10%,
    // compared by the fastest of interleaved attempts (contention from tests running in
    // parallel only adds time); a round spoiled by contention is measured again.
    let time = |f: &dyn Fn() -> Response| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let cheap = (0..5)
        .map(|_| {
            time(&|| {
                let r = post(
                    port,
                    "/user/login",
                    json!({"identity": {"type": "username", "value": "gil"}}),
                );
                assert_eq!(r.status, 422);
                r
            })
        })
        .fold(f64::MAX, f64::min);
    let mut rounds = Vec::new();
    for _ in 0..3 {
        let (mut unknown, mut wrong) = (f64::MAX, f64::MAX);
        for i in 0..10 {
            unknown = unknown.min(time(&|| {
                let r = login(port, "username", &format!("nobody{i}"), "pw-gil");
                error(&r, 401, "UNAUTHORIZED");
                r
            }));
            wrong = wrong.min(time(&|| {
                let r = login(port, "username", "gil", "not-it");
                error(&r, 401, "UNAUTHORIZED");
                r
            }));
        }
        assert!(
            unknown > 3.0 * cheap && wrong > 3.0 * cheap,
            "no bcrypt work: unknown {unknown:.4}s, wrong {wrong:.4}s, no-hash login {cheap:.4}s"
        );
        let ratio = unknown.max(wrong) / unknown.min(wrong);
        rounds.push(format!(
            "unknown {unknown:.4}s vs wrong password {wrong:.4}s (ratio {ratio:.3})"
        ));
        if ratio < 1.10 {
            return;
        }
    }
    panic!("login timing differs by more than 10%: {rounds:?}");
}

/// STARTTLS to an SMTP server with a private CA (`ca_file`), and a failing mail server.
#[test]
fn starttls_mail_and_send_failure() {
    let certs = TempDir::new("smtp-tls");
    let Some((ca, cert, key)) = make_certs(certs.path()) else {
        eprintln!(
            "SKIPPED starttls_mail_and_send_failure: the `openssl` command is not available to make a test CA"
        );
        return;
    };
    let sink = SmtpSink::start(Some((&cert, &key)));
    let toml = smtp_toml(sink.port, "").replace(
        "use_tls = false",
        &format!("use_tls = true\nca_file = \"{}\"", ca.display()),
    );
    let dir = app("id-tls", &toml);
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    let port = server.port;
    data(
        &register(
            port,
            json!([{"type": "username", "value": "hal"}, {"type": "email", "value": "hal@mail.test"}]),
            "pw-hal",
        ),
        201,
    );
    let (_, token, _) = login_ok(port, "username", "hal", "pw-hal");
    let email = json!({"identity": {"type": "email", "value": "hal@mail.test"}});
    data(
        &post_as(port, "/user/send-verification", &token, email.clone()),
        202,
    );
    let mail = sink.wait_for("hal@mail.test", 1)[0].clone();
    assert_eq!(mail["tls"], json!(true), "{mail}");
    data(
        &post(
            port,
            "/user/verify-identity",
            json!({"token": mail_token(&mail)}),
        ),
        200,
    );

    // The mail server goes away: 502, and the token issued for that mail is revoked.
    data(
        &register(
            port,
            json!([{"type": "username", "value": "ida"}, {"type": "email", "value": "ida@mail.test"}]),
            "pw-ida",
        ),
        201,
    );
    let (_, ida, _) = login_ok(port, "username", "ida", "pw-ida");
    drop(sink);
    let resp = post_as(
        port,
        "/user/send-verification",
        &ida,
        json!({"identity": {"type": "email", "value": "ida@mail.test"}}),
    );
    error(&resp, 502, "EMAIL_SEND_FAILED");
}

/// A CA and a server certificate for 127.0.0.1 made with `openssl`: `(ca, cert, key)`.
fn make_certs(dir: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let run = |args: &[&str]| {
        std::process::Command::new("openssl")
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    std::fs::write(
        dir.join("ext.cnf"),
        "basicConstraints=critical,CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n\
         extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n",
    )
    .ok()?;
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ok = run(&[
        &["req", "-x509"][..],
        &ec[..],
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=svc test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign",
        ],
    ]
    .concat())
        && run(&[
            &["req"][..],
            &ec[..],
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat())
        && run(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]);
    ok.then(|| {
        (
            dir.join("ca.pem"),
            dir.join("server.pem"),
            dir.join("server.key"),
        )
    })
}

/// The `prod` profile refuses the development JWT secret; `JWT_SECRET` satisfies it.
#[test]
fn prod_profile_needs_a_jwt_secret() {
    let dir = TempDir::new("id-prod");
    dir.write("app.svc", APP);
    dir.write("svc.prod.toml", "[scale.auth]\nbcrypt_cost = 4\n");
    let out = svc_in(
        dir.path(),
        &["start", "app.svc", "--profile", "prod", "--port", "0"],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("JWT_SECRET") && err.contains("prod"), "{err}");

    let mut child = svc()
        .current_dir(dir.path())
        .env("JWT_SECRET", SECRET)
        .args([
            "start",
            "app.svc",
            "--profile",
            "prod",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn svc start");
    let mut out = child.stdout.take().expect("stdout");
    let mut seen = String::new();
    let mut buf = [0u8; 512];
    while !seen.contains("serving") {
        match std::io::Read::read(&mut out, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen.contains("serving"),
        "prod with JWT_SECRET did not start: {seen}"
    );
}

/// The emailer module of `svc_emailer_providers`: `mail/outbox.svc` in the app directory.
/// `Recorder` prints each mail (the server logs module output), so the test reads the
/// tokens from the log.
const OUTBOX: &str = r#"obj Recorder {
    has api_key: str = "";
    has config: dict = {};

    def send_email(to_addr: str, subject: str, body_text: str, body_html: str | None = None,
                   from_addr: str | None = None) -> bool {
        print("OUTBOX|" + to_addr + "|" + subject + "|" + self.api_key + "|"
              + self.config["from_address"] + "|" + str(from_addr is None) + "|" + body_text);
        return True;
    }

    def is_ready() -> bool {
        return self.api_key == "k-123";
    }
}

obj Refuser {
    def send_email(to_addr: str, subject: str, body_text: str, body_html: str | None = None,
                   from_addr: str | None = None) -> bool {
        return False;
    }

    def is_ready() -> bool {
        return True;
    }
}

obj Crasher {
    def send_email(to_addr: str, subject: str, body_text: str, body_html: str | None = None,
                   from_addr: str | None = None) -> bool {
        raise ValueError("relay down for " + to_addr);
    }

    def is_ready() -> bool {
        return True;
    }
}

obj Sleeper {
    def send_email(to_addr: str, subject: str, body_text: str, body_html: str | None = None,
                   from_addr: str | None = None) -> bool {
        return True;
    }

    def is_ready() -> bool {
        return False;
    }
}
"#;

/// `[scale.emailer] provider = "mail.outbox:<class>"`: an `obj` in a `.svc` module is the
/// emailer. `True` sends (the tokens it got verify and reset), `False` or an exception is
/// a send failure (502, like an SMTP failure, the reason logged), and `is_ready()` answering
/// `False` disables e-mail (503) with the reason logged.
#[test]
fn svc_emailer_providers() {
    let start = |class: &str| {
        let toml = format!(
            "[scale.jwt]\nsecret = \"{SECRET}\"\n\n[scale.auth]\nbcrypt_cost = 4\n\
             verify_url_template = \"http://app.test/verify?token={{token}}\"\n\
             reset_url_template = \"http://app.test/reset?token={{token}}\"\n\n\
             [scale.emailer]\nprovider = \"mail.outbox:{class}\"\n\
             from_address = \"noreply@app.test\"\napi_key = \"k-123\"\n"
        );
        let dir = app(&format!("id-svcmail-{}", class.to_lowercase()), &toml);
        std::fs::create_dir_all(dir.path().join("mail")).expect("mail dir");
        dir.write("mail/outbox.svc", OUTBOX);
        let server = ServerGuard::start(dir.path(), &["app.svc"]);
        let port = server.port;
        data(
            &register(
                port,
                json!([{"type": "username", "value": "kim"}, {"type": "email", "value": "kim@mail.test"}]),
                "pw-kim",
            ),
            201,
        );
        let (_, token, _) = login_ok(port, "username", "kim", "pw-kim");
        (dir, server, token)
    };
    let email = json!({"identity": {"type": "email", "value": "kim@mail.test"}});
    // The mails `Recorder` printed so far: `to|subject|api_key|from_address|from_addr is
    // None|body` each, waiting until there are `n`.
    let outbox = |server: &ServerGuard, n: usize| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let log = server.stderr();
            let mails: Vec<String> = log.split("OUTBOX|").skip(1).map(str::to_string).collect();
            if mails.len() >= n {
                return mails;
            }
            assert!(Instant::now() < deadline, "expected {n} mails:\n{log}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };

    let (_dir, server, token) = start("Recorder");
    let port = server.port;
    let d = data(
        &post_as(port, "/user/send-verification", &token, email.clone()),
        202,
    );
    assert_eq!(
        d,
        json!({"status": "pending_verification", "email_sent": true})
    );
    let mail = outbox(&server, 1)[0].clone();
    assert!(
        mail.starts_with("kim@mail.test|Verify your e-mail address|k-123|noreply@app.test|True|"),
        "{mail}"
    );
    let verify = |t: &str| post(port, "/user/verify-identity", json!({"token": t}));
    data(&verify(&mail_token(&json!({"body": mail}))), 200);
    data(&post(port, "/user/forgot-password", email.clone()), 200);
    let mail = outbox(&server, 2)[1].clone();
    assert!(mail.contains("|Reset your password|"), "{mail}");
    let reset = json!({"token": mail_token(&json!({"body": mail})), "new_password": "pw-kim-2"});
    data(&post(port, "/user/reset-password", reset), 200);
    login_ok(port, "email", "kim@mail.test", "pw-kim-2");
    assert!(
        server.stderr().contains("e-mail enabled"),
        "{}",
        server.output()
    );

    for (class, reason) in [
        ("Refuser", "Refuser.send_email returned False"),
        ("Crasher", "relay down for kim@mail.test"),
    ] {
        let (_dir, server, token) = start(class);
        error(
            &post_as(
                server.port,
                "/user/send-verification",
                &token,
                email.clone(),
            ),
            502,
            "EMAIL_SEND_FAILED",
        );
        // The log writer thread writes the line a wake-up after the response.
        wait_until(Duration::from_secs(5), || server.stderr().contains(reason));
        let log = server.stderr();
        assert!(log.contains(reason), "{class}: no `{reason}` in\n{log}");
    }

    let (_dir, server, token) = start("Sleeper");
    error(
        &post_as(
            server.port,
            "/user/send-verification",
            &token,
            email.clone(),
        ),
        503,
        "EMAIL_DISABLED",
    );
    let log = server.stderr();
    assert!(
        log.contains("e-mail is disabled") && log.contains("Sleeper.is_ready() returned False"),
        "{log}"
    );
}

/// `/openapi.json` of a running server documents every `/user/*` route: request and
/// response schemas, bearer security, error statuses with their codes.
#[test]
fn user_routes_are_in_the_openapi_document() {
    let dir = app(
        "id-openapi",
        &format!("[scale.jwt]\nsecret = \"{SECRET}\"\n"),
    );
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    let resp = crate::support::get(server.port, "/openapi.json");
    assert_eq!(resp.status, 200, "{}", resp.body);
    let doc = resp.json();
    let schema = |r: &Value| r["content"]["application/json"]["schema"].clone();
    let resolve = |r: &Value| {
        let name = r["$ref"].as_str().expect("a $ref");
        let key = name.trim_start_matches("#/components/schemas/");
        let found = doc["components"]["schemas"][key].clone();
        assert!(found.is_object(), "{name} is not defined");
        found
    };
    for (path, method, body, status, errors) in [
        (
            "/user/register",
            "post",
            true,
            "201",
            &["409", "422", "429"][..],
        ),
        ("/user/login", "post", true, "200", &["401", "429"]),
        ("/user/refresh-token", "post", true, "200", &["401"]),
        ("/user/me", "get", false, "200", &["401", "404"]),
        ("/user/password", "put", true, "200", &["400", "401"]),
        ("/user/add-identity", "post", true, "200", &["400", "409"]),
        (
            "/user/send-verification",
            "post",
            true,
            "202",
            &["502", "503"],
        ),
        ("/user/verify-identity", "post", true, "200", &["400"]),
        ("/user/forgot-password", "post", true, "200", &["422"]),
        ("/user/reset-password", "post", true, "200", &["400"]),
    ] {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} is not documented");
        if body {
            let request = resolve(&schema(&op["requestBody"]));
            assert!(request["properties"].is_object(), "{method} {path}");
        }
        let ok = schema(&op["responses"][status]);
        assert_eq!(ok["properties"]["ok"]["const"], true, "{method} {path}");
        assert!(resolve(&ok["properties"]["data"])["properties"].is_object());
        for code in errors {
            let e = schema(&op["responses"][*code]);
            let codes = &e["allOf"][1]["properties"]["error"]["properties"]["code"]["enum"];
            assert!(
                codes.as_array().is_some_and(|c| !c.is_empty()),
                "{method} {path} {code}: {e}"
            );
        }
    }
    assert_eq!(
        doc["paths"]["/user/me"]["get"]["security"],
        json!([{"bearerAuth": []}])
    );
    let login_data = resolve(
        &schema(&doc["paths"]["/user/login"]["post"]["responses"]["200"])["properties"]["data"],
    );
    assert_eq!(
        login_data["required"],
        json!(["user_id", "token", "root_id", "role"])
    );
    // The app's own walkers are still there.
    assert!(
        doc["paths"]
            .as_object()
            .is_some_and(|p| p.keys().any(|k| !k.starts_with("/user/")))
    );
}
