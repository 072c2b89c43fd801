//! Single sign-on against a real OpenID Connect provider (spec "SSO endpoints", "States
//! and transitions" SSO rows): npm `oidc-provider`, started on loopback by
//! `oidc/provider.mjs` (installed with `npm ci` in `tests/integration/oidc` by `.ci/run`),
//! with a scripted sign-in in place of its login page. Covers the redirect with `state`
//! and PKCE, account creation, linking by verified e-mail (never a duplicate), the
//! profile refresh, `/user/me`, the JSON answer and the `client_auth_callback_url`
//! redirects, the POST callback, replayed codes and tampered states, the 501 of an
//! unconfigured provider, and the admin SSO routes. Skipped, with a message, only when
//! `node` is not installed.

use crate::TempDir;
use crate::admin::{ADMIN_PASSWORD, APP, SECRET, call, data, error};
use crate::support::{Response, ServerGuard, free_port, get, request};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `node oidc/provider.mjs`, killed by PID on drop.
struct Oidc {
    child: Child,
    port: u16,
}

impl Oidc {
    /// Start the provider for the svc server on `svc_port`; `None` (test skipped) when
    /// `node` is missing.
    fn start(svc_port: u16) -> Option<Oidc> {
        if Command::new("node").arg("--version").output().is_err() {
            eprintln!("skipped: `node` is not installed (the SSO tests run npm `oidc-provider`)");
            return None;
        }
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/integration/oidc");
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "npm `oidc-provider` is not installed: run `npm ci` in {} (.ci/run does)",
            dir.display()
        );
        let port = free_port();
        let redirects: Vec<String> = ["google", "github"]
            .iter()
            .map(|p| format!("http://127.0.0.1:{svc_port}/sso/{p}/callback"))
            .collect();
        let mut child = Command::new("node")
            .current_dir(&dir)
            .arg("provider.mjs")
            .arg(port.to_string())
            .arg(redirects.join(","))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn node");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("READY") {
                    let _ = tx.send(());
                }
            }
        });
        let oidc = Oidc { child, port };
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the OIDC provider did not start within 30 s");
        Some(oidc)
    }

    fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Who signs in next (`{"deny": true}` refuses).
    fn next(&self, claims: Value) {
        let r = request(
            self.port,
            "POST",
            "/__test/next",
            &[("Content-Type", "application/json")],
            Some(claims.to_string().as_bytes()),
        );
        assert_eq!(r.status, 204, "{}", r.body);
    }
}

impl Drop for Oidc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server whose google and github providers are the test provider; `extra` is more
/// TOML for `[scale.sso]`.
fn setup(extra: &str) -> Option<(TempDir, ServerGuard, Oidc)> {
    let svc_port = free_port();
    let oidc = Oidc::start(svc_port)?;
    let issuer = oidc.issuer();
    let toml = format!(
        "[scale.auth]\nbcrypt_cost = 4\n[scale.admin]\nrequire_password_reset = false\n\
         [scale.sso]\n{extra}\n\
         [scale.sso.google]\nclient_id = \"svc-google\"\nclient_secret = \"google-secret\"\nissuer = \"{issuer}\"\n\
         [scale.sso.github]\nclient_id = \"svc-github\"\nclient_secret = \"github-secret\"\nissuer = \"{issuer}/\"\n"
    );
    let dir = TempDir::new("sso");
    dir.write("app.svc", APP);
    dir.write("svc.toml", &toml);
    let port = svc_port.to_string();
    let s = ServerGuard::launch(
        dir.path(),
        &[
            "app.svc",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--workers",
            "2",
        ],
        &[
            ("JWT_SECRET", SECRET),
            ("ADMIN_DEFAULT_PASSWORD", ADMIN_PASSWORD),
            ("ADMIN_EMAIL", "boss@example.com"),
        ],
    );
    assert_eq!(s.port, svc_port, "the server fell back to another port");
    Some((dir, s, oidc))
}

/// `(port, path and query)` of an absolute loopback URL.
fn split(url: &str) -> (u16, String) {
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("not loopback: {url}"));
    let (port, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    (
        port.parse().expect("port"),
        if path.is_empty() {
            "/".into()
        } else {
            path.into()
        },
    )
}

/// Follow the provider's redirects (keeping its cookies) from the authorization URL
/// until it sends the browser back to svc; that callback URL (path and query).
fn through_provider(svc_port: u16, authorize: &str) -> String {
    let mut jar: BTreeMap<String, String> = BTreeMap::new();
    let mut url = authorize.to_string();
    for _ in 0..10 {
        let (port, path) = split(&url);
        if port == svc_port {
            return path;
        }
        let cookie = jar
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        let headers: Vec<(&str, &str)> = if cookie.is_empty() {
            vec![]
        } else {
            vec![("Cookie", cookie.as_str())]
        };
        let r = request(port, "GET", &path, &headers, None);
        for (k, v) in &r.headers {
            if k.eq_ignore_ascii_case("set-cookie")
                && let Some((name, value)) = v.split(';').next().and_then(|c| c.split_once('='))
            {
                jar.insert(name.trim().to_string(), value.trim().to_string());
            }
        }
        assert!(
            matches!(r.status, 302 | 303),
            "provider answered {}: {}",
            r.status,
            r.body
        );
        let next = r.header("location").expect("Location").to_string();
        url = if next.starts_with('/') {
            format!("http://127.0.0.1:{port}{next}")
        } else {
            next
        };
    }
    panic!("too many redirects");
}

/// `/sso/<platform>/login` → the provider → the callback URL svc gets (not yet called).
fn authorize(svc_port: u16, platform: &str, op: &str) -> String {
    let r = get(svc_port, &format!("/sso/{platform}/{op}"));
    assert_eq!(r.status, 302, "{}", r.body);
    let location = r.header("location").expect("Location");
    assert!(
        location.contains("code_challenge_method=S256"),
        "{location}"
    );
    assert!(
        location.contains("state=") && location.contains("nonce="),
        "{location}"
    );
    through_provider(svc_port, location)
}

/// A whole sign-in answered by JSON: `data` of the callback.
fn sign_in(svc_port: u16, platform: &str) -> Value {
    let callback = authorize(svc_port, platform, "login");
    data(&get(svc_port, &callback), 200)
}

fn ann() -> Value {
    json!({"sub": "g-ann", "email": "Ann@Example.com", "email_verified": true, "name": "Ann Lee",
           "given_name": "Ann", "family_name": "Lee", "picture": "https://img.example/ann.png"})
}

fn me(port: u16, token: &str) -> Value {
    data(&call(port, "GET", "/user/me", Some(token), None), 200)
}

#[test]
fn first_sign_in_creates_the_account_and_later_ones_reuse_it() {
    let Some((_dir, s, oidc)) = setup("") else {
        return;
    };
    let p = s.port;
    oidc.next(ann());
    let d = sign_in(p, "google");
    assert_eq!(
        (d["created"].clone(), d["linked"].clone()),
        (json!(true), json!(false)),
        "{d}"
    );
    assert_eq!(d["platform"], json!("google"));
    assert_eq!(d["operation"], json!("login"));
    assert_eq!(d["message"], json!("Login successful"));
    assert_eq!(d["role"], json!("user"));
    let uid = d["user_id"].clone();
    let token = d["token"].as_str().expect("token").to_string();
    let m = me(p, &token);
    assert_eq!(m["user_id"], uid);
    let ids = m["identities"].as_array().expect("identities");
    assert!(
        ids.iter().any(|i| i["type"] == json!("email")
            && i["value"] == json!("Ann@Example.com")
            && i["verified"] == json!(true)),
        "{m}"
    );
    let sso: Vec<_> = ids.iter().filter(|i| i["type"] == json!("sso")).collect();
    assert_eq!(sso.len(), 1, "{m}");
    assert_eq!(sso[0]["provider"], json!("google"));
    assert!(
        sso[0].get("external_id").is_none() && sso[0].get("value").is_none(),
        "{m}"
    );
    assert!(
        !m.to_string().contains("g-ann"),
        "the external id leaked: {m}"
    );
    assert_eq!(
        m["profile"]["sso"]["google"]["display_name"],
        json!("Ann Lee")
    );
    assert_eq!(m["profile"]["sso"]["google"]["first_name"], json!("Ann"));
    assert_eq!(m["profile"]["sso"]["google"]["last_name"], json!("Lee"));
    assert_eq!(
        m["profile"]["sso"]["google"]["picture"],
        json!("https://img.example/ann.png")
    );

    // Again, with a new display name and via /register: the same account, refreshed.
    let mut again = ann();
    again["name"] = json!("Ann B. Lee");
    oidc.next(again);
    let callback = authorize(p, "google", "register");
    let d = data(&get(p, &callback), 200);
    assert_eq!(
        (
            d["user_id"].clone(),
            d["created"].clone(),
            d["operation"].clone()
        ),
        (uid.clone(), json!(false), json!("register"))
    );
    let m = me(p, d["token"].as_str().expect("token"));
    assert_eq!(
        m["profile"]["sso"]["google"]["display_name"],
        json!("Ann B. Lee")
    );

    // The same person through another platform joins the same account (same e-mail).
    oidc.next(json!({"sub": "gh-ann", "email": "ann@example.com", "email_verified": true}));
    let d = sign_in(p, "github");
    assert_eq!(
        (d["user_id"].clone(), d["linked"].clone()),
        (uid.clone(), json!(true))
    );
    let admin = data(
        &call(
            p,
            "POST",
            "/admin/login",
            None,
            Some(json!({"username": "admin", "password": ADMIN_PASSWORD})),
        ),
        200,
    );
    let at = admin["token"].as_str().expect("token");
    let list = data(
        &call(p, "GET", "/admin/users?q=ann@example.com", Some(at), None),
        200,
    );
    assert_eq!(list["total"], json!(1), "never a duplicate: {list}");
    let acc = data(
        &call(
            p,
            "GET",
            "/admin/sso/users/ann@example.com/accounts",
            Some(at),
            None,
        ),
        200,
    );
    let platforms: Vec<_> = acc["sso_accounts"]
        .as_array()
        .expect("list")
        .iter()
        .map(|a| a["platform"].clone())
        .collect();
    assert_eq!(platforms, vec![json!("google"), json!("github")]);

    // Unlink: the identity goes, the account stays.
    let d = data(
        &call(
            p,
            "DELETE",
            "/admin/sso/users/ann@example.com/accounts/github",
            Some(at),
            None,
        ),
        200,
    );
    assert_eq!(d["sso_accounts"].as_array().map(Vec::len), Some(1));
    let m = me(p, &token);
    assert_eq!(
        m["identities"]
            .as_array()
            .expect("ids")
            .iter()
            .filter(|i| i["type"] == json!("sso"))
            .count(),
        1
    );
    // A disabled account cannot sign in through SSO either.
    data(
        &call(
            p,
            "PUT",
            "/admin/users/ann@example.com",
            Some(at),
            Some(json!({"status": "disabled"})),
        ),
        200,
    );
    oidc.next(ann());
    let callback = authorize(p, "google", "login");
    error(&get(p, &callback), 401, "UNAUTHORIZED");
    error(
        &call(p, "GET", "/user/me", Some(&token), None),
        401,
        "UNAUTHORIZED",
    );
    let providers = data(&call(p, "GET", "/admin/sso/providers", Some(at), None), 200);
    assert_eq!(providers["providers"][0]["configured"], json!(true));
    assert_eq!(providers["providers"][1]["configured"], json!(false));
}

#[test]
fn an_existing_verified_e_mail_is_linked_an_unverified_one_is_not() {
    let Some((_dir, s, oidc)) = setup("") else {
        return;
    };
    let p = s.port;
    // The bootstrap admin's ADMIN_EMAIL is verified: linked, not duplicated.
    oidc.next(json!({"sub": "g-boss", "email": "boss@example.com", "email_verified": true, "name": "Boss"}));
    let d = sign_in(p, "google");
    assert_eq!(d["user_id"], json!("00000000-0000-0000-0000-000000000000"));
    assert_eq!(
        (d["created"].clone(), d["linked"].clone(), d["role"].clone()),
        (json!(false), json!(true), json!("admin"))
    );

    // An account whose e-mail was never verified is not taken over.
    data(
        &call(
            p,
            "POST",
            "/user/register",
            None,
            Some(json!({
            "identities": [{"type": "username", "value": "carl"}, {"type": "email", "value": "carl@example.com"}],
            "credential": {"type": "password", "password": "carl-pass"}})),
        ),
        201,
    );
    oidc.next(json!({"sub": "g-carl", "email": "carl@example.com", "email_verified": true}));
    let callback = authorize(p, "google", "login");
    error(&get(p, &callback), 409, "IDENTITY_TAKEN");
    // Nor by a provider that does not vouch for the address.
    oidc.next(json!({"sub": "g-fake-boss", "email": "boss@example.com", "email_verified": false}));
    let callback = authorize(p, "google", "login");
    error(&get(p, &callback), 409, "IDENTITY_TAKEN");
    // A provider refusal is a clear error.
    oidc.next(json!({"deny": true}));
    let callback = authorize(p, "google", "login");
    let e = error(&get(p, &callback), 400, "SSO_FAILED");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("access_denied")),
        "{e}"
    );
}

#[test]
fn replayed_codes_and_tampered_states_are_refused() {
    let Some((_dir, s, oidc)) = setup("") else {
        return;
    };
    let p = s.port;
    oidc.next(ann());
    let callback = authorize(p, "google", "login");
    data(&get(p, &callback), 200);
    // The same callback again: its state was used.
    error(&get(p, &callback), 400, "INVALID_STATE");
    // The used code with a fresh, valid state: the provider refuses the code.
    oidc.next(ann());
    let fresh = get(p, "/sso/google/login");
    let location = fresh.header("location").expect("Location");
    let state = location
        .split("state=")
        .nth(1)
        .and_then(|s| s.split('&').next())
        .expect("state");
    let code = callback
        .split("code=")
        .nth(1)
        .and_then(|s| s.split('&').next())
        .expect("code");
    let replay = format!("/sso/google/callback?code={code}&state={state}");
    error(&get(p, &replay), 400, "SSO_FAILED");
    // A tampered state.
    oidc.next(ann());
    let callback = authorize(p, "google", "login");
    let tampered = callback.replacen("state=", "state=x", 1);
    error(&get(p, &tampered), 400, "INVALID_STATE");
    error(
        &get(p, "/sso/google/callback?code=abc"),
        400,
        "INVALID_STATE",
    );
    // A state is bound to its platform.
    let github = callback.replacen("/sso/google/", "/sso/github/", 1);
    error(&get(p, &github), 400, "INVALID_STATE");
}

#[test]
fn redirects_to_the_client_and_the_post_callback() {
    let Some((_dir, s, oidc)) =
        setup("client_auth_callback_url = \"http://app.example/auth?from=svc\"")
    else {
        return;
    };
    let p = s.port;
    oidc.next(ann());
    let callback = authorize(p, "google", "login");
    let r = get(p, &callback);
    assert_eq!(r.status, 302, "{}", r.body);
    let to = r.header("location").expect("Location");
    let token = to
        .strip_prefix("http://app.example/auth?from=svc&token=")
        .unwrap_or_else(|| panic!("{to}"));
    assert_eq!(me(p, token)["identities"][1]["provider"], json!("google"));
    // Failures redirect with error and message.
    let r = get(p, &callback);
    let to = r.header("location").expect("Location");
    assert!(
        to.starts_with("http://app.example/auth?from=svc&error=INVALID_STATE&message="),
        "{to}"
    );

    // The callback as a POST form (providers that post it).
    oidc.next(json!({"sub": "gh-zoe", "email": "zoe@example.com", "email_verified": true}));
    let callback = authorize(p, "github", "login");
    let (path, query) = callback.split_once('?').expect("query");
    let r = request(
        p,
        "POST",
        path,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some(query.as_bytes()),
    );
    assert_eq!(r.status, 302, "{}", r.body);
    assert!(r.header("location").is_some_and(|l| l.contains("&token=")));
}

#[test]
fn unconfigured_and_unknown_providers() {
    let dir = TempDir::new("sso-none");
    dir.write("app.svc", APP);
    let port = free_port().to_string();
    let s = ServerGuard::launch(
        dir.path(),
        &["app.svc", "--host", "127.0.0.1", "--port", &port],
        &[
            ("JWT_SECRET", SECRET),
            ("ADMIN_DEFAULT_PASSWORD", ADMIN_PASSWORD),
        ],
    );
    for platform in ["google", "apple", "github"] {
        for op in ["login", "register", "callback"] {
            let r: Response = get(s.port, &format!("/sso/{platform}/{op}?code=a&state=b"));
            let e = error(&r, 501, "NOT_IMPLEMENTED");
            let m = e["message"].as_str().unwrap_or("");
            assert!(m.contains(platform) && m.contains("client_id"), "{m}");
        }
    }
    let e = error(&get(s.port, "/sso/myspace/login"), 501, "NOT_IMPLEMENTED");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("google, apple, github")),
        "{e}"
    );
}

#[test]
fn an_unreachable_provider_is_a_502() {
    let dir = TempDir::new("sso-down");
    dir.write("app.svc", APP);
    // A port nothing listens on.
    let closed = free_port();
    dir.write(
        "svc.toml",
        &format!(
            "[scale.sso]\nhttp_timeout_seconds = 2\n[scale.sso.google]\nclient_id = \"a\"\n\
             client_secret = \"b\"\nissuer = \"http://127.0.0.1:{closed}\"\n\
             [scale.sso.apple]\nclient_id = \"a\"\nclient_secret = \"b\"\n\
             issuer = \"http://example.com\"\n"
        ),
    );
    let port = free_port().to_string();
    let s = ServerGuard::launch(
        dir.path(),
        &["app.svc", "--host", "127.0.0.1", "--port", &port],
        &[
            ("JWT_SECRET", SECRET),
            ("ADMIN_DEFAULT_PASSWORD", ADMIN_PASSWORD),
        ],
    );
    error(&get(s.port, "/sso/google/login"), 502, "SSO_PROVIDER_ERROR");
    // A plain-HTTP issuer off loopback is refused before any request.
    let e = error(&get(s.port, "/sso/apple/login"), 501, "NOT_IMPLEMENTED");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("https://")),
        "{e}"
    );
}
