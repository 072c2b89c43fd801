//! Inbound webhooks against a real `svc start`: API keys (`/api-key/*`), the current
//! flavor (`POST /webhook/<walker>` with `X-API-Key` and a real HMAC-SHA256 signature
//! computed here), the replay guard, and the alternate flavor's keys and key placements.

use crate::TempDir;
use crate::support::{Response, ServerGuard, json_call, request};
use aws_lc_rs::hmac;
use serde_json::{Value, json};

const APP: &str = r#"
node Event { has kind: str = ""; has amount: int = 0; }

@restspec(protocol=APIProtocol.WEBHOOK)
walker on_payment {
    has kind: str = "";
    has amount: int = 0;

    can run with Root entry {
        here ++> Event(kind=self.kind, amount=self.amount);
        report {"kind": self.kind, "amount": self.amount};
    }
}

@restspec(protocol=APIProtocol.WEBHOOK)
walker other_hook {
    can run with Root entry { report "other"; }
}

walker events {
    can run with Root entry {
        report [e.kind for e in [-->][?:Event]];
    }
}

walker by_header {
    has note: str = "";
    obj __specs__ { static has webhook: dict = {"type": "header", "name": "X-Hook-Key"}; }
    can run with Root entry { here ++> Event(kind="header:" + self.note); report "header"; }
}

walker by_query {
    has note: str = "";
    obj __specs__ { static has webhook: dict = {"type": "query", "name": "key"}; }
    can run with Root entry { here ++> Event(kind="query:" + self.note); report "query"; }
}

walker by_path {
    has note: str = "";
    obj __specs__ {
        static has webhook: dict = {"type": "path", "name": "key"};
        static has path: str = "/{key}";
    }
    can run with Root entry { here ++> Event(kind="path:" + self.note); report "path"; }
}

walker by_body {
    has note: str = "";
    obj __specs__ { static has webhook: dict = {"type": "body", "name": "key"}; }
    can run with Root entry { here ++> Event(kind="body:" + self.note); report "body"; }
}
"#;

/// An app directory with `APP` and a `svc.toml` (cheap bcrypt plus `extra`).
fn app(extra: &str) -> TempDir {
    let dir = TempDir::new("hooks");
    dir.write("main.svc", APP);
    dir.write(
        "svc.toml",
        &format!("[scale.auth]\nbcrypt_cost = 4\n\n{extra}\n"),
    );
    dir
}

fn serve(dir: &TempDir) -> ServerGuard {
    ServerGuard::start(dir.path(), &["main.svc"])
}

/// Register `name` and log in: the session token.
fn token(port: u16, name: &str) -> String {
    crate::support::register_and_login(port, name)
}

/// Lowercase hex HMAC-SHA256 of `text` keyed with `key`.
fn sign(key: &str, text: &[u8]) -> String {
    let k = hmac::Key::new(hmac::HMAC_SHA256, key.as_bytes());
    hmac::sign(&k, text)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `POST /api-key/create` as `token` with `body`: the whole `data`.
fn create_key(port: u16, token: &str, body: &Value) -> Value {
    let r = json_call(port, "POST", "/api-key/create", Some(token), body);
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["data"].clone()
}

/// `POST /webhook/<walker>` with the given key and signature headers.
fn hook(
    port: u16,
    walker: &str,
    key: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
) -> Response {
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(k) = key {
        headers.push(("X-API-Key", k));
    }
    if let Some(s) = signature {
        headers.push(("X-Webhook-Signature", s));
    }
    request(
        port,
        "POST",
        &format!("/webhook/{walker}"),
        &headers,
        Some(body),
    )
}

/// A correctly signed call.
fn signed(port: u16, walker: &str, key: &str, body: &[u8]) -> Response {
    hook(port, walker, Some(key), Some(&sign(key, body)), body)
}

/// The entry of a key list with this `name`.
fn named(list: &Value, name: &str) -> Value {
    list.as_array()
        .and_then(|l| l.iter().find(|k| k["name"] == json!(name)))
        .unwrap_or_else(|| panic!("no key named {name} in {list}"))
        .clone()
}

fn error_code(r: &Response) -> String {
    let v = r.json();
    assert_eq!(v["ok"], json!(false), "{}", r.body);
    v["error"]["code"].as_str().expect("a code").to_string()
}

/// The `Event` kinds on `token`'s root, read through the ordinary walker endpoint.
fn events(port: u16, token: &str) -> Value {
    let r = json_call(port, "POST", "/walker/events", Some(token), &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]["reports"][0].clone()
}

#[test]
fn api_keys_are_created_listed_without_the_key_and_revoked_by_their_owner_only() {
    let dir = app("");
    let server = serve(&dir);
    let port = server.port;
    let alice = token(port, "alice");
    let bob = token(port, "bob");
    let made = create_key(port, &alice, &json!({"name": "ci"}));
    let key = made["api_key"].as_str().expect("api_key").to_string();
    assert!(key.len() >= 43, "at least 256 bits: {key}");
    for field in ["api_key_id", "name", "created_at", "expires_at"] {
        assert!(made[field].is_string(), "{field}: {made}");
    }
    assert_eq!(made["name"], json!("ci"));
    let id = made["api_key_id"].as_str().expect("id").to_string();

    let r = json_call(port, "GET", "/api-key/list", Some(&alice), &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        !r.body.contains(&key),
        "the key is never listed: {}",
        r.body
    );
    let list = r.json()["data"]["api_keys"].clone();
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list[0]["api_key_id"], json!(id));
    assert_eq!(list[0]["active"], json!(true));
    assert!(list[0].get("api_key").is_none(), "{list}");

    // Bob neither sees nor revokes Alice's key.
    let r = json_call(port, "GET", "/api-key/list", Some(&bob), &json!({}));
    assert_eq!(r.json()["data"]["api_keys"], json!([]));
    let r = request(
        port,
        "DELETE",
        &format!("/api-key/{id}"),
        &[("Authorization", &format!("Bearer {bob}"))],
        None,
    );
    assert_eq!(
        (r.status, error_code(&r).as_str()),
        (404, "NOT_FOUND"),
        "{}",
        r.body
    );
    assert_eq!(signed(port, "on_payment", &key, b"{}").status, 200);

    // No token: 401.
    let r = json_call(port, "POST", "/api-key/create", None, &json!({"name": "x"}));
    assert_eq!(r.status, 401, "{}", r.body);
    let r = json_call(
        port,
        "POST",
        "/api-key/create",
        Some(&alice),
        &json!({"name": ""}),
    );
    assert_eq!(r.status, 422, "{}", r.body);

    // Alice revokes it: listed inactive, refused by the webhook.
    let r = request(
        port,
        "DELETE",
        &format!("/api-key/{id}"),
        &[("Authorization", &format!("Bearer {alice}"))],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["data"]["message"].is_string(), "{}", r.body);
    let r = json_call(port, "GET", "/api-key/list", Some(&alice), &json!({}));
    assert_eq!(
        r.json()["data"]["api_keys"][0]["active"],
        json!(false),
        "{}",
        r.body
    );
    let r = signed(port, "on_payment", &key, b"{}");
    assert_eq!(
        (r.status, error_code(&r).as_str()),
        (401, "UNAUTHORIZED"),
        "{}",
        r.body
    );
}

#[test]
fn a_signed_webhook_runs_on_the_key_owners_root() {
    let dir = app("");
    let server = serve(&dir);
    let port = server.port;
    let alice = token(port, "alice");
    let bob = token(port, "bob");
    let key = create_key(port, &alice, &json!({"name": "pay"}))["api_key"]
        .as_str()
        .expect("key")
        .to_string();
    let body = br#"{"kind": "paid", "amount": 42}"#;
    let r = signed(port, "on_payment", &key, body);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["data"]["reports"],
        json!([{"kind": "paid", "amount": 42}])
    );
    // The `sha256=` prefix is accepted.
    let body2 = br#"{"kind": "prefixed"}"#;
    let sig = format!("sha256={}", sign(&key, body2));
    let r = hook(port, "on_payment", Some(&key), Some(&sig), body2);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(events(port, &alice), json!(["paid", "prefixed"]));
    assert_eq!(events(port, &bob), json!([]), "not on another user's root");
}

#[test]
fn missing_wrong_and_foreign_keys_and_signatures_are_refused() {
    let dir = app("");
    let server = serve(&dir);
    let port = server.port;
    let alice = token(port, "alice");
    let key = create_key(port, &alice, &json!({"name": "k"}))["api_key"]
        .as_str()
        .expect("key")
        .to_string();
    let other = create_key(port, &alice, &json!({"name": "k2"}))["api_key"]
        .as_str()
        .expect("key")
        .to_string();
    let body = br#"{"kind": "x"}"#;
    let cases: Vec<(Response, u16, &str)> = vec![
        (
            hook(port, "on_payment", None, Some(&sign(&key, body)), body),
            401,
            "UNAUTHORIZED",
        ),
        (
            hook(
                port,
                "on_payment",
                Some("svc_nope"),
                Some(&sign("svc_nope", body)),
                body,
            ),
            401,
            "UNAUTHORIZED",
        ),
        (
            hook(port, "on_payment", Some(&key), None, body),
            401,
            "INVALID_SIGNATURE",
        ),
        (
            hook(
                port,
                "on_payment",
                Some(&key),
                Some(&sign(&key, b"{}")),
                body,
            ),
            401,
            "INVALID_SIGNATURE",
        ),
        (
            hook(
                port,
                "on_payment",
                Some(&key),
                Some(&sign(&other, body)),
                body,
            ),
            401,
            "INVALID_SIGNATURE",
        ),
        (
            hook(port, "on_payment", Some(&key), Some("not hex at all"), body),
            401,
            "INVALID_SIGNATURE",
        ),
    ];
    for (i, (r, status, code)) in cases.iter().enumerate() {
        assert_eq!(
            (r.status, error_code(r).as_str()),
            (*status, *code),
            "case {i}: {}",
            r.body
        );
    }
    assert_eq!(events(port, &alice), json!([]), "nothing ran");
}

#[test]
fn allowed_walkers_and_only_webhook_walkers() {
    let dir = app("");
    let server = serve(&dir);
    let port = server.port;
    let alice = token(port, "alice");
    let key = create_key(
        port,
        &alice,
        &json!({"name": "k", "allowed_walkers": ["on_payment"]}),
    )["api_key"]
        .as_str()
        .expect("key")
        .to_string();
    assert_eq!(signed(port, "on_payment", &key, b"{}").status, 200);
    let r = signed(port, "other_hook", &key, b"{}");
    assert_eq!(
        (r.status, error_code(&r).as_str()),
        (403, "FORBIDDEN"),
        "{}",
        r.body
    );
    for walker in ["events", "nope", "by_header"] {
        let r = signed(port, walker, &key, b"{}");
        assert_eq!(r.status, 404, "{walker}: {}", r.body);
    }
    let r = json_call(port, "POST", "/walker/on_payment", Some(&alice), &json!({}));
    assert_eq!(
        r.status, 404,
        "webhook walkers are not under /walker: {}",
        r.body
    );
}

#[test]
fn a_body_over_the_limit_is_413() {
    let dir = app("[scale.server]\nmax_body_bytes = 1024\n");
    let server = serve(&dir);
    let port = server.port;
    let alice = token(port, "alice");
    let key = create_key(port, &alice, &json!({"name": "k"}))["api_key"]
        .as_str()
        .expect("key")
        .to_string();
    let body = format!(r#"{{"kind": "{}"}}"#, "x".repeat(4096));
    let r = signed(port, "on_payment", &key, body.as_bytes());
    assert_eq!(
        (r.status, error_code(&r).as_str()),
        (413, "PAYLOAD_TOO_LARGE"),
        "{}",
        r.body
    );
}

#[test]
fn expiry_defaults_permanent_keys_and_expired_keys() {
    let dir = app("[scale.webhook]\napi_key_expiry_days = 0\n");
    let server = serve(&dir);
    let port = server.port;
    let alice = token(port, "alice");
    let permanent = create_key(port, &alice, &json!({"name": "forever"}));
    assert_eq!(
        permanent["expires_at"],
        json!(null),
        "config 0 = permanent: {permanent}"
    );
    let dated = create_key(port, &alice, &json!({"name": "dated", "expiry_days": 2}));
    assert!(dated["expires_at"].is_string(), "{dated}");
    let key = dated["api_key"].as_str().expect("key").to_string();
    assert_eq!(signed(port, "on_payment", &key, b"{}").status, 200);
    // Move its expiry into the past in the store itself (no clock games).
    let db = rusqlite::Connection::open(dir.path().join(".svc/data/anchor_store.db"))
        .expect("open store");
    db.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy timeout");
    let n = db
        .execute(
            "UPDATE webhook_api_keys SET expires_at = 1 WHERE api_key_id = ?1",
            [dated["api_key_id"].as_str().expect("id")],
        )
        .expect("update");
    assert_eq!(n, 1);
    let r = signed(port, "on_payment", &key, b"{}");
    assert_eq!(
        (r.status, error_code(&r).as_str()),
        (401, "UNAUTHORIZED"),
        "{}",
        r.body
    );
    let r = json_call(port, "GET", "/api-key/list", Some(&alice), &json!({}));
    let list = r.json()["data"]["api_keys"].clone();
    assert_eq!(named(&list, "dated")["active"], json!(false), "{list}");
    assert_eq!(named(&list, "forever")["active"], json!(true), "{list}");
}

#[test]
fn the_replay_guard_signs_the_timestamp() {
    let dir = app("[scale.webhook]\nreplay_guard = true\ntimestamp_tolerance_seconds = 300\n");
    let server = serve(&dir);
    let port = server.port;
    let alice = token(port, "alice");
    let key = create_key(port, &alice, &json!({"name": "k"}))["api_key"]
        .as_str()
        .expect("key")
        .to_string();
    let body = br#"{"kind": "guarded"}"#;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let send = |ts: Option<String>, sig: String| {
        let mut headers = vec![
            ("Content-Type", "application/json".to_string()),
            ("X-API-Key", key.clone()),
            ("X-Webhook-Signature", sig),
        ];
        if let Some(t) = ts {
            headers.push(("X-Webhook-Timestamp", t));
        }
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        request(port, "POST", "/webhook/on_payment", &headers, Some(body))
    };
    let signed_with = |t: &str| {
        let mut text = format!("{t}.").into_bytes();
        text.extend_from_slice(body);
        sign(&key, &text)
    };
    // The body alone is not enough any more.
    let r = send(None, sign(&key, body));
    assert_eq!(
        (r.status, error_code(&r).as_str()),
        (401, "INVALID_SIGNATURE"),
        "{}",
        r.body
    );
    let t = now.to_string();
    let r = send(Some(t.clone()), sign(&key, body));
    assert_eq!(r.status, 401, "the timestamp must be signed: {}", r.body);
    let r = send(Some(t.clone()), signed_with(&t));
    assert_eq!(r.status, 200, "{}", r.body);
    let stale = (now - 3600).to_string();
    let r = send(Some(stale.clone()), signed_with(&stale));
    assert_eq!(
        (r.status, error_code(&r).as_str()),
        (401, "INVALID_SIGNATURE"),
        "{}",
        r.body
    );
    assert_eq!(events(port, &alice), json!(["guarded"]));
}

#[test]
fn keys_survive_a_restart() {
    let dir = app("[scale.jwt]\nsecret = \"webhook-tests-secret-0123456789abcdef\"\n");
    let (key, alice) = {
        let server = serve(&dir);
        let alice = token(server.port, "alice");
        let key = create_key(server.port, &alice, &json!({"name": "k"}))["api_key"]
            .as_str()
            .expect("key")
            .to_string();
        server.terminate();
        (key, alice)
    };
    let server = serve(&dir);
    let r = signed(server.port, "on_payment", &key, br#"{"kind": "after"}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    let r = json_call(
        server.port,
        "GET",
        "/api-key/list",
        Some(&alice),
        &json!({}),
    );
    assert_eq!(
        r.json()["data"]["api_keys"][0]["active"],
        json!(true),
        "{}",
        r.body
    );
    assert_eq!(events(server.port, &alice), json!(["after"]));
}

/// `POST /webhook/generate-key` as `token`: the whole `data`.
fn generate(port: u16, token: &str, body: &Value) -> Value {
    let r = json_call(port, "POST", "/webhook/generate-key", Some(token), body);
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["data"].clone()
}

fn alt(port: u16, path: &str, headers: &[(&str, &str)], body: &Value) -> Response {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    request(port, "POST", path, &all, Some(body.to_string().as_bytes()))
}

#[test]
fn alternate_flavor_key_placements_run_on_the_keys_root() {
    let dir = app("");
    let server = serve(&dir);
    let port = server.port;
    let alice = token(port, "alice");
    let made = generate(
        port,
        &alice,
        &json!({"name": "all", "walkers": [], "nodes": [],
                                             "expiration": {"count": 1, "interval": "days"}}),
    );
    let key = made["key"].as_str().expect("key").to_string();
    assert!(
        made["id"].is_string() && made["name"] == json!("all"),
        "{made}"
    );
    let note = json!({"note": "n"});
    let r = alt(
        port,
        "/webhook/walker/by_header",
        &[("X-Hook-Key", &key)],
        &note,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["reports"], json!(["header"]));
    let r = alt(
        port,
        &format!("/webhook/walker/by_query?key={key}"),
        &[],
        &note,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = alt(port, &format!("/webhook/walker/by_path/{key}"), &[], &note);
    assert_eq!(r.status, 200, "{}", r.body);
    let r = alt(
        port,
        "/webhook/walker/by_body",
        &[],
        &json!({"note": "n", "key": key}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        events(port, &alice),
        json!(["header:n", "query:n", "path:n", "body:n"])
    );

    // Missing or wrong keys, wrong placements.
    let cases = [
        alt(port, "/webhook/walker/by_header", &[], &note),
        alt(
            port,
            "/webhook/walker/by_header",
            &[("X-Hook-Key", "svcwh_wrong")],
            &note,
        ),
        alt(
            port,
            "/webhook/walker/by_query",
            &[("X-Hook-Key", &key)],
            &note,
        ),
        alt(port, "/webhook/walker/by_body", &[], &note),
    ];
    for (i, r) in cases.iter().enumerate() {
        assert_eq!(
            (r.status, error_code(r).as_str()),
            (401, "UNAUTHORIZED"),
            "case {i}: {}",
            r.body
        );
    }
    // A current-flavor API key is not an alternate-flavor key, and vice versa.
    let api_key = create_key(port, &alice, &json!({"name": "k"}))["api_key"]
        .as_str()
        .expect("key")
        .to_string();
    let r = alt(
        port,
        "/webhook/walker/by_header",
        &[("X-Hook-Key", &api_key)],
        &note,
    );
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(signed(port, "on_payment", &key, b"{}").status, 401);
    // Only alternate-flavor walkers are served there.
    let r = alt(
        port,
        "/webhook/walker/on_payment",
        &[("X-Hook-Key", &key)],
        &note,
    );
    assert_eq!(r.status, 404, "{}", r.body);
    let r = alt(
        port,
        "/webhook/walker/events",
        &[("X-Hook-Key", &key)],
        &note,
    );
    assert_eq!(r.status, 404, "{}", r.body);
}

#[test]
fn alternate_flavor_keys_are_listed_restricted_extended_and_deleted() {
    let dir = app("");
    let server = serve(&dir);
    let port = server.port;
    let alice = token(port, "alice");
    let bob = token(port, "bob");
    let only_query = generate(
        port,
        &alice,
        &json!({"name": "q", "walkers": ["by_query"],
                                                   "expiration": {"count": 2, "interval": "hours"}}),
    );
    let key = only_query["key"].as_str().expect("key").to_string();
    let r = json_call(
        port,
        "POST",
        "/webhook/generate-key",
        Some(&alice),
        &json!({"name": "q"}),
    );
    assert_eq!(
        (r.status, error_code(&r).as_str()),
        (409, "CONFLICT"),
        "{}",
        r.body
    );
    let r = json_call(
        port,
        "POST",
        "/webhook/generate-key",
        None,
        &json!({"name": "z"}),
    );
    assert_eq!(r.status, 401, "{}", r.body);

    let note = json!({"note": "n"});
    assert_eq!(
        alt(
            port,
            &format!("/webhook/walker/by_query?key={key}"),
            &[],
            &note
        )
        .status,
        200
    );
    let r = alt(
        port,
        "/webhook/walker/by_header",
        &[("X-Hook-Key", &key)],
        &note,
    );
    assert_eq!(
        (r.status, error_code(&r).as_str()),
        (403, "FORBIDDEN"),
        "{}",
        r.body
    );
    // A node list without the root refuses a call on the root.
    let elsewhere = generate(
        port,
        &alice,
        &json!({"name": "n", "nodes": ["0123456789abcdef0123456789abcdef"]}),
    );
    let nkey = elsewhere["key"].as_str().expect("key").to_string();
    let r = alt(
        port,
        "/webhook/walker/by_header",
        &[("X-Hook-Key", &nkey)],
        &note,
    );
    assert_eq!(
        (r.status, error_code(&r).as_str()),
        (403, "FORBIDDEN"),
        "{}",
        r.body
    );

    let r = json_call(port, "GET", "/webhook", Some(&alice), &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        !r.body.contains(&key) && !r.body.contains(&nkey),
        "keys are not listed back: {}",
        r.body
    );
    let keys = r.json()["data"]["keys"].clone();
    assert_eq!(keys.as_array().map(Vec::len), Some(2), "{keys}");
    for field in [
        "id",
        "name",
        "root_id",
        "walkers",
        "nodes",
        "expiration",
        "key",
    ] {
        assert!(keys[0].get(field).is_some(), "{field}: {keys}");
    }
    let q = named(&keys, "q");
    assert_eq!(q["walkers"], json!(["by_query"]));
    assert_eq!(
        named(&keys, "n")["nodes"],
        json!(["0123456789abcdef0123456789abcdef"])
    );
    let r = json_call(port, "GET", "/webhook", Some(&bob), &json!({}));
    assert_eq!(r.json()["data"]["keys"], json!([]), "{}", r.body);

    // Extend: later expiration; Bob cannot extend Alice's key.
    let id = only_query["id"].as_str().expect("id").to_string();
    let before = q["expiration"].as_str().expect("iso").to_string();
    let r = json_call(
        port,
        "PATCH",
        &format!("/webhook/extend/{id}"),
        Some(&alice),
        &json!({"count": 3, "interval": "days"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["data"]["message"].is_string(), "{}", r.body);
    let r = json_call(port, "GET", "/webhook", Some(&alice), &json!({}));
    let after = named(&r.json()["data"]["keys"], "q")["expiration"]
        .as_str()
        .expect("iso")
        .to_string();
    assert!(after > before, "{before} -> {after}");
    let r = json_call(
        port,
        "PATCH",
        &format!("/webhook/extend/{id}"),
        Some(&bob),
        &json!({"count": 3, "interval": "days"}),
    );
    assert_eq!(r.status, 404, "{}", r.body);
    let r = json_call(
        port,
        "PATCH",
        &format!("/webhook/extend/{id}"),
        Some(&alice),
        &json!({"count": 3, "interval": "weeks"}),
    );
    assert_eq!(r.status, 422, "{}", r.body);

    // Delete: Bob's attempt deletes nothing; Alice's deletes, and the key stops working.
    let r = json_call(
        port,
        "DELETE",
        "/webhook/delete",
        Some(&bob),
        &json!({"ids": [id]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        alt(
            port,
            &format!("/webhook/walker/by_query?key={key}"),
            &[],
            &note
        )
        .status,
        200
    );
    let r = json_call(
        port,
        "DELETE",
        "/webhook/delete",
        Some(&alice),
        &json!({"ids": [id]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["data"]["message"].is_string(), "{}", r.body);
    let r = alt(
        port,
        &format!("/webhook/walker/by_query?key={key}"),
        &[],
        &note,
    );
    assert_eq!(r.status, 401, "{}", r.body);
}

#[test]
fn faux_lists_webhook_walkers_with_their_routes() {
    let dir = app("");
    let out = crate::svc_in(dir.path(), &["start", "main.svc", "--faux"]);
    let text = crate::stdout(&out);
    assert!(out.status.success(), "{text}{}", crate::stderr(&out));
    assert!(text.contains("POST /webhook/on_payment"), "{text}");
    assert!(
        text.contains("POST /webhook/walker/by_path/{key}"),
        "{text}"
    );
    assert!(text.contains("POST /webhook/walker/by_query"), "{text}");
    assert!(!text.contains("not served yet"), "{text}");
}

#[test]
fn openapi_documents_the_key_routes_and_webhook_security() {
    let dir = app("");
    let server = serve(&dir);
    let r = request(server.port, "GET", "/openapi.json", &[], None);
    assert_eq!(r.status, 200, "{}", r.body);
    let doc = r.json();
    let paths = &doc["paths"];
    for (path, method) in [
        ("/api-key/create", "post"),
        ("/api-key/list", "get"),
        ("/api-key/{api_key_id}", "delete"),
        ("/webhook/generate-key", "post"),
        ("/webhook", "get"),
        ("/webhook/extend/{id}", "patch"),
        ("/webhook/delete", "delete"),
    ] {
        assert_eq!(
            paths[path][method]["security"],
            json!([{"bearerAuth": []}]),
            "{method} {path}"
        );
    }
    assert_eq!(
        paths["/webhook/on_payment"]["post"]["security"],
        json!([{"apiKeyAuth": [], "webhookSignature": []}])
    );
    assert!(
        paths["/webhook/walker/by_path/{key}"]["post"].is_object(),
        "{paths}"
    );
    assert!(
        paths.get("/webhook/events").is_none(),
        "only webhook walkers"
    );
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["apiKeyAuth"]["name"], json!("X-API-Key"));
    assert_eq!(
        schemes["webhookSignature"]["name"],
        json!("X-Webhook-Signature")
    );
    assert_eq!(
        schemes["webhookKey.header.X-Hook-Key"]["in"],
        json!("header")
    );
    assert_eq!(schemes["webhookKey.query.key"]["in"], json!("query"));
    let created = &paths["/api-key/create"]["post"]["responses"]["201"];
    assert!(created.is_object(), "{}", paths["/api-key/create"]);
}
