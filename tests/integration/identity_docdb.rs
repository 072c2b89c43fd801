//! Identity storage in the document database: `svc start` replicas in separate app
//! directories (so they share no store file) on one SecantusDB share their users,
//! tokens and API keys; legacy flat user records are migrated on start. Skipped with a
//! message when `secantusd-py` (or, for the legacy test, `pymongo`) is not installed.

use crate::TempDir;
use crate::kvstore::Server;
use crate::support::{Response, ServerGuard, json_call, request, wait_until};
use aws_lc_rs::hmac;
use serde_json::{Value, json};
use std::time::Duration;

const SECRET: &str = "identity-docdb-secret-0123456789abcdef";

const APP: &str = r#"
node Note { has text: str; }

walker mine {
    can go with Root entry {
        here ++> Note(text="x");
        report len([-->[?:Note]]);
    }
}

@restspec(protocol=APIProtocol.WEBHOOK)
walker on_payment {
    has amount: int = 0;
    can run with Root entry { here ++> Note(text="paid"); report self.amount; }
}
"#;

const TOML: &str = r#"[scale.auth]
bcrypt_cost = 4
verify_url_template = "http://app.test/verify?token={token}"

[scale.emailer]
provider = "log"
from_address = "noreply@app.test"
"#;

fn app_dir(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write("main.svc", APP);
    dir.write("svc.toml", TOML);
    dir
}

fn replica(dir: &TempDir, uri: &str) -> ServerGuard {
    ServerGuard::replica(dir.path(), &[("JWT_SECRET", SECRET), ("DOCDB_URI", uri)])
}

fn post(port: u16, path: &str, token: Option<&str>, body: Value) -> Response {
    json_call(port, "POST", path, token, &body)
}

fn register(port: u16, username: &str, email: &str, password: &str) -> Response {
    post(
        port,
        "/user/register",
        None,
        json!({"identities": [{"type": "username", "value": username},
                              {"type": "email", "value": email}],
               "credential": {"type": "password", "password": password}}),
    )
}

fn login(port: u16, kind: &str, value: &str, password: &str) -> Response {
    post(
        port,
        "/user/login",
        None,
        json!({"identity": {"type": kind, "value": value},
               "credential": {"type": "password", "password": password}}),
    )
}

fn ok(resp: &Response, status: u16) -> Value {
    assert_eq!(resp.status, status, "{}", resp.body);
    resp.json()["data"].clone()
}

fn code(resp: &Response) -> String {
    resp.json()["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn sign(key: &str, body: &[u8]) -> String {
    let k = hmac::Key::new(hmac::HMAC_SHA256, key.as_bytes());
    hmac::sign(&k, body)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The token of the last mail the `log` mailer wrote to `server`'s log.
fn logged_token(server: &ServerGuard) -> String {
    let mut token = String::new();
    assert!(
        wait_until(Duration::from_secs(10), || {
            let out = server.output();
            if let Some(rest) = out
                .rsplit("token=")
                .next()
                .filter(|_| out.contains("token="))
            {
                token = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                    .collect();
            }
            !token.is_empty()
        }),
        "no mail in the log\n{}",
        server.output()
    );
    token
}

#[test]
fn replicas_on_one_document_database_share_users_tokens_and_keys() {
    let Some(db) = Server::docdb() else {
        return;
    };
    let uri = format!("{}identity", db.mongo_url());
    let (dir_a, dir_b) = (app_dir("iddoc-a"), app_dir("iddoc-b"));
    let a = replica(&dir_a, &uri);
    let b = replica(&dir_b, &uri);
    for r in [&a, &b] {
        assert!(
            r.stdout()
                .contains("svc: users in document database at mongodb://127.0.0.1:"),
            "the startup output names the identity backend:\n{}",
            r.stdout()
        );
    }

    // Registered on A, logs in on B (either identity), on the same root.
    let d = ok(&register(a.port, "Ann", "Ann@Example.com", "pw-ann-1"), 201);
    let ann = d["user_id"].as_str().expect("user_id").to_string();
    let on_b = ok(&login(b.port, "email", " ann@example.COM", "pw-ann-1"), 200);
    assert_eq!(on_b["user_id"], json!(ann));
    let on_a = ok(&login(a.port, "username", "ann", "pw-ann-1"), 200);
    assert_eq!(on_a["root_id"], on_b["root_id"]);
    let token = on_b["token"].as_str().expect("token").to_string();

    // Refresh on B; the private walker runs on the user's root on both replicas.
    let d = ok(
        &post(b.port, "/user/refresh-token", None, json!({"token": token})),
        200,
    );
    let fresh = d["token"].as_str().expect("token").to_string();
    for (i, (port, t)) in [(a.port, &token), (b.port, &fresh)].into_iter().enumerate() {
        let d = ok(&post(port, "/walker/mine", Some(t), json!({})), 200);
        assert_eq!(d["reports"], json!([i + 1]));
    }

    // A password changed on A: the old one fails on B, the new one works there.
    let r = json_call(
        a.port,
        "PUT",
        "/user/password",
        Some(&token),
        &json!({"current_password": "pw-ann-1", "new_password": "pw-ann-2"}),
    );
    ok(&r, 200);
    let r = login(b.port, "username", "ann", "pw-ann-1");
    assert_eq!(
        (r.status, code(&r).as_str()),
        (401, "UNAUTHORIZED"),
        "{}",
        r.body
    );
    ok(&login(b.port, "username", "ann", "pw-ann-2"), 200);

    // An API key made on A signs a webhook call on B, which runs on Ann's root.
    let key = ok(
        &post(
            a.port,
            "/api-key/create",
            Some(&token),
            json!({"name": "pay"}),
        ),
        201,
    )["api_key"]
        .as_str()
        .expect("api_key")
        .to_string();
    let body = br#"{"amount": 7}"#;
    let r = request(
        b.port,
        "POST",
        "/webhook/on_payment",
        &[
            ("Content-Type", "application/json"),
            ("X-API-Key", &key),
            ("X-Webhook-Signature", &sign(&key, body)),
        ],
        Some(body),
    );
    assert_eq!(ok(&r, 200)["reports"], json!([7]));
    let list = json_call(b.port, "GET", "/api-key/list", Some(&token), &json!({}));
    assert_eq!(ok(&list, 200)["api_keys"][0]["name"], json!("pay"));

    // A verification token mailed by A is redeemed on B, and only once.
    let r = post(
        a.port,
        "/user/send-verification",
        Some(&token),
        json!({"identity": {"type": "email", "value": "ann@example.com"}}),
    );
    ok(&r, 202);
    let vtoken = logged_token(&a);
    let r = post(
        b.port,
        "/user/verify-identity",
        None,
        json!({"token": vtoken}),
    );
    assert_eq!(ok(&r, 200)["status"], json!("verified"));
    for port in [a.port, b.port] {
        let r = post(
            port,
            "/user/verify-identity",
            None,
            json!({"token": vtoken}),
        );
        assert_eq!(
            (r.status, code(&r).as_str()),
            (400, "INVALID_TOKEN"),
            "{}",
            r.body
        );
    }
    let me = ok(
        &json_call(a.port, "GET", "/user/me", Some(&token), &json!({})),
        200,
    );
    assert!(me.to_string().contains("\"verified\":true"), "{me}");

    // The same e-mail registered on both replicas at once: exactly one 201.
    let statuses: Vec<(u16, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let port = if i % 2 == 0 { a.port } else { b.port };
                s.spawn(move || {
                    let r = register(port, &format!("dup{i}"), "Same@Example.com", "pw-dup-1");
                    (r.status, code(&r))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client"))
            .collect()
    });
    assert_eq!(
        statuses.iter().filter(|(s, _)| *s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses
            .iter()
            .all(|(s, c)| *s == 201 || (*s == 409 && c == "IDENTITY_TAKEN")),
        "{statuses:?}"
    );

    // A restart keeps the users (nothing of them is in the replica's directory).
    a.terminate();
    let a = replica(&dir_a, &uri);
    let d = ok(&login(a.port, "email", "ann@example.com", "pw-ann-2"), 200);
    assert_eq!(d["user_id"], json!(ann));
}

/// Run `script` with `pymongo` against `uri` (in `URI`); its stdout, or `None` (with a
/// message) when pymongo is not installed.
fn pymongo(uri: &str, script: &str) -> Option<String> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            &format!("import os, hashlib, pymongo, json\n{script}"),
        ])
        .env("URI", uri)
        .output()
        .ok()?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("No module named 'pymongo'") {
            eprintln!("SKIPPED: pymongo is not installed");
            return None;
        }
        panic!("pymongo script failed:\n{err}");
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn legacy_flat_user_records_are_migrated_once_on_start() {
    let Some(db) = Server::docdb() else {
        return;
    };
    let uri = format!("{}legacy", db.mongo_url());
    // Flat records as the original wrote them: SHA-256 password hashes, an ObjectId
    // record, and a username that collides with Carol's after normalization.
    let inserted = pymongo(
        &uri,
        r#"
users = pymongo.MongoClient(os.environ["URI"]).get_default_database()["users"]
sha = lambda p: hashlib.sha256(p.encode()).hexdigest()
users.insert_many([
    {"_id": "legacy-carol", "username": "Carol", "email": "carol@example.com",
     "password": sha("carol-pw"), "root_id": "ab" * 16, "role": "admin",
     "is_activated": True, "created_at": "2020-01-01T00:00:00.000Z"},
    {"_id": "legacy-carol-2", "username": " CAROL ", "email": "c2@example.com",
     "password": sha("c2-pw"), "root_id": "cd" * 16, "created_at": "2021-01-01T00:00:00.000Z"},
    {"email": "Dave@Example.com", "password": sha("dave-pw"), "root_id": "ef" * 16,
     "created_at": "2022-01-01T00:00:00.000Z"},
])
print("ok")
"#,
    );
    if inserted.is_none() {
        return;
    }
    let dir = app_dir("iddoc-legacy");
    let server = replica(&dir, &uri);
    assert!(
        wait_until(Duration::from_secs(5), || server
            .output()
            .contains("collides with another account")),
        "the collision is logged:\n{}",
        server.output()
    );

    // Carol keeps her id, root and role; her SHA-256 hash verifies once and becomes bcrypt.
    let d = ok(&login(server.port, "username", "carol", "carol-pw"), 200);
    assert_eq!(
        (&d["user_id"], &d["root_id"], &d["role"]),
        (
            &json!("legacy-carol"),
            &json!("ab".repeat(16)),
            &json!("admin")
        )
    );
    let r = login(server.port, "email", "carol@example.com", "wrong");
    assert_eq!(r.status, 401, "{}", r.body);
    let d = ok(
        &login(server.port, "email", "dave@example.com", "dave-pw"),
        200,
    );
    assert_eq!(d["root_id"], json!("ef".repeat(16)));
    // The colliding record is kept, disabled.
    let r = login(server.port, "email", "c2@example.com", "c2-pw");
    assert_eq!(r.status, 401, "{}", r.body);

    let state = r#"
users = pymongo.MongoClient(os.environ["URI"]).get_default_database()["users"]
docs = {str(d["_id"]): d for d in users.find({"migrated_from_legacy": True})}
print(json.dumps({
    "legacy_left": users.count_documents({"identities": {"$exists": False}}),
    "migrated": len(docs),
    "carol_hash": docs["legacy-carol"]["credentials"][0]["password_hash"][:4],
    "carol2_status": docs["legacy-carol-2"]["status"],
    "dave_ids": [i["type"] for d in docs.values() if d.get("root_id") == "ef" * 16
                 for i in d["identities"]],
}))
"#;
    let read = || -> Value {
        serde_json::from_str(&pymongo(&uri, state).expect("pymongo")).expect("json")
    };
    let before = read();
    assert_eq!(before["legacy_left"], json!(0));
    assert_eq!(before["migrated"], json!(3));
    assert_eq!(before["carol_hash"], json!("$2b$"), "rehashed with bcrypt");
    assert_eq!(before["carol2_status"], json!("disabled"));
    assert_eq!(before["dave_ids"], json!(["email"]));

    // Restarted twice: nothing converted again, everyone still logs in as before.
    server.terminate();
    for _ in 0..2 {
        let server = replica(&dir, &uri);
        ok(&login(server.port, "username", "carol", "carol-pw"), 200);
        ok(
            &login(server.port, "email", "dave@example.com", "dave-pw"),
            200,
        );
        let r = login(server.port, "email", "c2@example.com", "c2-pw");
        assert_eq!(r.status, 401, "{}", r.body);
        assert!(
            !server.output().contains("collides with another account"),
            "migrated once:\n{}",
            server.output()
        );
        server.terminate();
    }
    assert_eq!(read(), before);
}
