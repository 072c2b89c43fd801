//! Findings of the black-box conformance audit of the HTTP surface (spec, decisions.md
//! and HTTP itself): every 401 names its challenge (`WWW-Authenticate`), a refreshed
//! session token is a new token even within the issuing second, and the JSON-only
//! routes (`/user/*`, `/api-key/*`, `/admin/*`) refuse another declared content type
//! with 415 as the generated endpoints and webhooks do; a 405 names the methods the
//! path serves (`Allow`); a disabled account can do nothing with the token it still
//! holds (it could create API keys and webhook keys and add identities); an admin
//! page size out of range is a 422 like the other bad query parameters.

use crate::TempDir;
use crate::support::{Response, ServerGuard, free_port, json_call, register_and_login, request};
use base64::Engine as _;
use serde_json::{Value, json};

const APP: &str = r#"import from http { HTTPMethod }

@restspec(method=HTTPMethod.GET, path="/items/{id}")
def:pub item(id: int) -> int { return id; }

@restspec(method=HTTPMethod.DELETE, path="/items/{id}")
def:pub drop_item(id: int) -> int { return id; }

walker:pub open_walk {
    can go with Root entry { report "open"; }
}

walker closed_walk {
    can go with Root entry { report "closed"; }
}

@restspec(protocol=APIProtocol.WEBHOOK)
walker hook {
    has msg: str = "";
    can go with Root entry { report self.msg; }
}
"#;

const TOML: &str = "[scale.jwt]\nsecret = \"conformance-tests-secret-0123456789abcdef\"\n\
                    [scale.auth]\nbcrypt_cost = 4\n";

fn server() -> (TempDir, ServerGuard) {
    let dir = TempDir::new("conformance");
    dir.write("app.svc", APP);
    dir.write("svc.toml", TOML);
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    (dir, server)
}

fn assert_error(r: &Response, status: u16, code: &str) {
    assert_eq!(r.status, status, "{}", r.body);
    let body = r.json();
    assert_eq!(body["ok"], json!(false), "{}", r.body);
    assert_eq!(body["error"]["code"], json!(code), "{}", r.body);
    assert_eq!(
        body["meta"]["extra"]["http_status"],
        json!(status),
        "{}",
        r.body
    );
}

/// The payload of a JWT, decoded without verification.
fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("three parts");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url payload");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

/// RFC 9110 11.6.1: a 401 carries `WWW-Authenticate`. Bearer routes name `Bearer`,
/// webhooks (API key) their own scheme; other statuses carry none.
#[test]
fn every_401_names_its_challenge() {
    let (_dir, server) = server();
    let port = server.port;
    let bearer = |r: &Response| {
        assert_eq!(r.status, 401, "{}", r.body);
        let challenge = r.header("WWW-Authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer"), "{challenge:?}: {}", r.body);
    };
    bearer(&json_call(
        port,
        "POST",
        "/walker/closed_walk",
        None,
        &json!({}),
    ));
    bearer(&json_call(
        port,
        "POST",
        "/walker/open_walk",
        Some("not-a-jwt"),
        &json!({}),
    ));
    bearer(&request(port, "GET", "/user/me", &[], None));
    bearer(&json_call(
        port,
        "POST",
        "/user/login",
        None,
        &json!({"identity": {"type": "username", "value": "nobody"},
                "credential": {"type": "password", "password": "wrong"}}),
    ));
    bearer(&json_call(
        port,
        "POST",
        "/user/refresh-token",
        None,
        &json!({"token": "x"}),
    ));
    bearer(&request(port, "GET", "/api-key/list", &[], None));
    let hook = json_call(port, "POST", "/webhook/hook", None, &json!({"msg": "m"}));
    assert_error(&hook, 401, "UNAUTHORIZED");
    let challenge = hook.header("WWW-Authenticate").unwrap_or_default();
    assert!(challenge.starts_with("ApiKey"), "{challenge:?}");
    let hook = request(
        port,
        "POST",
        "/webhook/hook",
        &[
            ("Content-Type", "application/json"),
            ("X-API-Key", "svc_nope"),
        ],
        Some(b"{}"),
    );
    assert_error(&hook, 401, "UNAUTHORIZED");
    assert!(hook.header("WWW-Authenticate").is_some());
    // Not a 401: no challenge.
    let token = register_and_login(port, "challenger");
    let r = json_call(port, "GET", "/admin/users", Some(&token), &json!({}));
    assert_error(&r, 403, "FORBIDDEN");
    assert_eq!(r.header("WWW-Authenticate"), None);
    let r = json_call(port, "POST", "/walker/open_walk", None, &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("WWW-Authenticate"), None);
}

/// Spec: refresh answers `{token, message}`, "new token, fresh expiry"; the old token
/// stays valid. Two tokens issued for one account in the same second used to be
/// byte-identical (same claims, same signature), so a refresh could hand the caller
/// its own token back.
#[test]
fn a_refresh_is_a_new_token_even_within_the_same_second() {
    let (_dir, server) = server();
    let port = server.port;
    let token = register_and_login(port, "refresher");
    let refresh = |t: &str| {
        let r = json_call(
            port,
            "POST",
            "/user/refresh-token",
            None,
            &json!({"token": t}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.json()["data"]["message"],
            json!("Token refreshed successfully")
        );
        r.json()["data"]["token"]
            .as_str()
            .expect("token")
            .to_string()
    };
    // Refresh until two answers share their `iat` second (refresh does no hashing, so
    // this takes two or three calls): they must still be two tokens.
    let mut pair = None;
    for _ in 0..20 {
        let (a, b) = (refresh(&token), refresh(&token));
        if claims(&a)["iat"] == claims(&b)["iat"] {
            pair = Some((a, b));
            break;
        }
    }
    let (a, b) = pair.expect("two refreshes within one second");
    assert_ne!(a, b, "a refresh answered an identical token");
    assert_ne!(claims(&a)["jti"], claims(&b)["jti"]);
    for t in [&token, &a, &b] {
        let r = json_call(port, "GET", "/user/me", Some(t), &json!({}));
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let c = claims(&a);
    for k in ["sub", "user_id", "role", "iat", "exp"] {
        assert!(c.get(k).is_some(), "claim {k} missing: {c}");
    }
    assert_eq!(c["sub"], c["user_id"]);
}

/// "All JSON bodies use Content-Type: application/json": the identity, API-key and
/// admin routes refuse another declared type with 415 (they used to parse any body as
/// JSON whatever its declared type); no Content-Type at all is still read as JSON.
#[test]
fn json_routes_refuse_another_content_type() {
    let (_dir, server) = server();
    let port = server.port;
    let token = register_and_login(port, "typed");
    let login = json!({"identity": {"type": "username", "value": "typed"},
                       "credential": {"type": "password", "password": "pw-123456"}})
    .to_string();
    let post = |path: &str, ctype: Option<&str>, auth: Option<&str>| {
        let bearer = auth.map(|t| format!("Bearer {t}"));
        let mut headers = Vec::new();
        if let Some(c) = ctype {
            headers.push(("Content-Type", c));
        }
        if let Some(b) = &bearer {
            headers.push(("Authorization", b.as_str()));
        }
        let body = if path == "/user/login" {
            login.clone()
        } else {
            json!({"name": "k"}).to_string()
        };
        request(port, "POST", path, &headers, Some(body.as_bytes()))
    };
    for ctype in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/xml",
    ] {
        let r = post("/user/login", Some(ctype), None);
        assert_error(&r, 415, "UNSUPPORTED_MEDIA_TYPE");
        let r = post("/api-key/create", Some(ctype), Some(&token));
        assert_error(&r, 415, "UNSUPPORTED_MEDIA_TYPE");
    }
    for ctype in [
        None,
        Some("application/json"),
        Some("application/json; charset=utf-8"),
        Some("application/vnd.api+json"),
    ] {
        let r = post("/user/login", ctype, None);
        assert_eq!(r.status, 200, "{ctype:?}: {}", r.body);
    }
    let r = post("/api-key/create", Some("Application/JSON"), Some(&token));
    assert_eq!(r.status, 201, "{}", r.body);
    // The OpenAPI document says so.
    let doc = request(port, "GET", "/openapi.json", &[], None).json();
    for (path, method) in [("/user/login", "post"), ("/api-key/create", "post")] {
        let responses = &doc["paths"][path][method]["responses"];
        assert!(responses["415"].is_object(), "{path}: {responses}");
    }
    assert!(doc["paths"]["/user/me"]["get"]["responses"]["415"].is_null());
}

/// RFC 9110 15.5.6: a 405 carries `Allow` with the methods the path does serve.
#[test]
fn a_405_names_the_allowed_methods() {
    let (_dir, server) = server();
    let port = server.port;
    let r = request(port, "GET", "/walker/open_walk", &[], None);
    assert_error(&r, 405, "METHOD_NOT_ALLOWED");
    assert_eq!(r.header("Allow"), Some("POST"), "{:?}", r.headers);
    let r = json_call(port, "POST", "/items/3", None, &json!({}));
    assert_error(&r, 405, "METHOD_NOT_ALLOWED");
    let allow = r.header("Allow").unwrap_or_default();
    let mut methods: Vec<&str> = allow.split(',').map(str::trim).collect();
    methods.sort_unstable();
    assert_eq!(methods, ["DELETE", "GET", "HEAD"], "{allow:?}");
    let r = request(port, "GET", "/items/3", &[], None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["result"], json!(3));
    // Fixed routes (actix answers their 405; the envelope replaces its body only).
    for (method, path, allowed) in [
        ("GET", "/user/login", "POST"),
        ("POST", "/healthz", "GET"),
        ("GET", "/webhook/hook", "POST"),
    ] {
        let r = request(port, method, path, &[], None);
        assert_error(&r, 405, "METHOD_NOT_ALLOWED");
        let allow = r.header("Allow").unwrap_or_default();
        assert!(allow.contains(allowed), "{method} {path}: {allow:?}");
    }
}

/// A server whose bootstrap admin may act at once, with the admin's session token.
fn admin_server() -> (TempDir, ServerGuard, String) {
    let dir = TempDir::new("conformance-admin");
    dir.write("app.svc", APP);
    dir.write(
        "svc.toml",
        &format!("{TOML}[scale.admin]\nrequire_password_reset = false\n"),
    );
    let port = free_port().to_string();
    let server = ServerGuard::launch(
        dir.path(),
        &["app.svc", "--port", &port],
        &[("ADMIN_DEFAULT_PASSWORD", "admin-pass-123")],
    );
    let r = json_call(
        server.port,
        "POST",
        "/admin/login",
        None,
        &json!({"username": "admin", "password": "admin-pass-123"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let token = r.json()["data"]["token"]
        .as_str()
        .expect("admin token")
        .to_string();
    (dir, server, token)
}

/// A disabled account's token is refused everywhere, as `/user/me` and walker calls
/// refuse it (401), and a deleted account's is 404 on the account routes; re-enabled,
/// the same token works again.
#[test]
fn a_disabled_account_can_do_nothing_with_its_token() {
    let (_dir, server, admin) = admin_server();
    let port = server.port;
    let token = register_and_login(port, "dormant");
    let key = json_call(
        port,
        "POST",
        "/api-key/create",
        Some(&token),
        &json!({"name": "k0"}),
    );
    assert_eq!(key.status, 201, "{}", key.body);
    let key_id = key.json()["data"]["api_key_id"]
        .as_str()
        .expect("key id")
        .to_string();
    let set_status = |status: &str| {
        let r = json_call(
            port,
            "PUT",
            "/admin/users/dormant",
            Some(&admin),
            &json!({"status": status}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    };
    let calls = [
        ("POST", "/api-key/create".to_string(), json!({"name": "k1"})),
        ("GET", "/api-key/list".to_string(), json!({})),
        ("DELETE", format!("/api-key/{key_id}"), json!({})),
        (
            "POST",
            "/webhook/generate-key".to_string(),
            json!({"name": "g1", "walkers": [], "nodes": [],
                   "expiration": {"count": 1, "interval": "days"}}),
        ),
        ("GET", "/webhook".to_string(), json!({})),
        (
            "POST",
            "/user/add-identity".to_string(),
            json!({"identity": {"type": "email", "value": "dormant@example.com"},
                   "is_recovery": true}),
        ),
        ("GET", "/user/me".to_string(), json!({})),
        ("POST", "/walker/closed_walk".to_string(), json!({})),
    ];
    set_status("disabled");
    for (method, path, body) in &calls {
        let r = json_call(port, method, path, Some(&token), body);
        assert_error(&r, 401, "UNAUTHORIZED");
        assert!(r.body.contains("disabled"), "{method} {path}: {}", r.body);
    }
    set_status("active");
    for (method, path, body) in &calls {
        let r = json_call(port, method, path, Some(&token), body);
        assert!(r.status < 300, "{method} {path}: {} {}", r.status, r.body);
    }
    let r = json_call(
        port,
        "DELETE",
        "/admin/users/dormant",
        Some(&admin),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let gone = [
        ("/api-key/create", json!({"name": "k2"})),
        (
            "/user/add-identity",
            json!({"identity": {"type": "email", "value": "gone@example.com"}}),
        ),
    ];
    for (path, body) in gone {
        let r = json_call(port, "POST", path, Some(&token), &body);
        assert_error(&r, 404, "NOT_FOUND");
    }
}

/// decisions.md: request validation failures are 422 `VALIDATION_ERROR` with
/// `details`; a page size out of range was a bare 400 while a negative one was 422.
#[test]
fn admin_page_bounds_are_validation_errors() {
    let (_dir, server, admin) = admin_server();
    let port = server.port;
    for query in [
        "limit=0",
        "limit=100000",
        "limit=-1",
        "limit=abc",
        "offset=-5",
    ] {
        let r = json_call(
            port,
            "GET",
            &format!("/admin/users?{query}"),
            Some(&admin),
            &json!({}),
        );
        assert_error(&r, 422, "VALIDATION_ERROR");
        let field = query.split('=').next().unwrap_or_default();
        assert_eq!(
            r.json()["error"]["details"][0]["field"],
            json!(field),
            "{}",
            r.body
        );
    }
    let r = json_call(
        port,
        "GET",
        "/admin/users?limit=1",
        Some(&admin),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["users"].as_array().map(Vec::len), Some(1));
    let doc = request(port, "GET", "/openapi.json", &[], None).json();
    let responses = &doc["paths"]["/admin/users"]["get"]["responses"];
    assert!(
        responses["400"].is_null() && responses["422"].is_object(),
        "{responses}"
    );
}
