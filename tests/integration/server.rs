//! `svc start`: the real binary serving a fixture app over HTTP. Envelope shape and key
//! order, generated routes, typed coercion, raw responses, every error status, trace
//! ids, CORS, health, auth, middleware walkers, persistence, shutdown, port fallback,
//! `--faux` and `--dev`.

use crate::support::{ServerGuard, get, post_json, request};
use crate::{TempDir, stderr, stdout, svc_in};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The app most tests serve.
const APP: &str = r#""""Fixture app for the HTTP layer tests."""
import from http { HTTPMethod }

node Note {
    has text: str;
}

"""Add two integers."""
def:pub add(a: int, b: int = 2) -> int {
    return a + b;
}

def:pub shout(word: str, times: int = 1, loud: bool = False) -> str {
    s = word * times;
    return s.upper() if loud else s;
}

@restspec(method=HTTPMethod.GET)
def:pub greet(name: str, n: int = 1, tags: list[str] = []) -> dict {
    return {"name": name, "double": n * 2, "tags": tags};
}

@restspec(method=HTTPMethod.GET, path="/items/{item_id}")
def:pub get_item(item_id: int, verbose: bool = False) -> dict {
    return {"id": item_id, "next": item_id + 1, "verbose": verbose};
}

@restspec(method=HTTPMethod.GET, path="/robots.txt", envelope=False)
def:pub robots() -> str {
    return "User-agent: *\nDisallow:\n";
}

@restspec(method=HTTPMethod.GET, path="/report.csv", envelope=False, produces="text/csv")
def:pub report_csv() -> str {
    return "a,b\n1,2\n";
}

@restspec(method=HTTPMethod.GET, envelope=False)
def:pub raw_json() -> dict {
    return {"x": [1, 2]};
}

@restspec(envelope=False)
def:pub raw_fail() -> str {
    return str(1 / 0);
}

def:pub boom(n: int) -> int {
    return n // 0;
}

def secret() -> str {
    return "hidden";
}

walker:pub add_note {
    has text: str;

    can go with Root entry {
        here ++> Note(text=self.text);
        report self.text;
    }
}

walker:pub list_notes {
    can go with Root entry {
        visit [-->[?:Note]];
    }

    can show with Note entry {
        report here.text;
    }
}

walker private_walker {
    can go with Root entry {
        report "private";
    }
}

@restspec(protocol=APIProtocol.WEBHOOK)
walker:pub hooked {
    can go with Root entry {
        report "hook";
    }
}
"#;

/// `svc run seed.svc` writes a note to the same store `svc start app.svc` serves.
const SEED: &str =
    "import from app { Note }\n\nwith entry {\n    root ++> Note(text=\"seeded\");\n}\n";

fn app_dir(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write("app.svc", APP);
    dir
}

fn serve(tag: &str) -> (TempDir, ServerGuard) {
    let dir = app_dir(tag);
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    (dir, server)
}

/// `data.result` of a successful envelope (with its shape checked).
fn result(resp: &crate::support::Response) -> Value {
    assert_eq!(resp.status, 200, "{}", resp.body);
    let v = resp.json();
    assert_eq!(v["ok"], json!(true), "{}", resp.body);
    v["data"]["result"].clone()
}

/// The error envelope: `(code, details)` after checking the shape and status.
fn error(resp: &crate::support::Response, status: u16) -> (String, Value) {
    assert_eq!(resp.status, status, "{}", resp.body);
    let v = resp.json();
    assert_eq!(v["ok"], json!(false), "{}", resp.body);
    assert_eq!(v["type"], json!("error"));
    assert_eq!(v["data"], Value::Null);
    assert_eq!(v["meta"]["extra"]["http_status"], json!(status));
    assert!(
        resp.header("content-type")
            .is_some_and(|t| t.starts_with("application/json")),
        "{:?}",
        resp.headers
    );
    let code = v["error"]["code"].as_str().unwrap_or_default().to_string();
    assert!(
        !v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
    );
    (code, v["error"]["details"].clone())
}

#[test]
fn envelope_shape_and_calls() {
    let (_dir, s) = serve("calls");
    let p = s.port;

    // Key order, checked on the raw text.
    let resp = post_json(p, "/function/add", r#"{"a": 40}"#);
    assert_eq!(
        resp.body,
        r#"{"ok":true,"type":"response","data":{"result":42,"reports":[]},"error":null,"meta":{"extra":{"http_status":200}}}"#
    );
    // Typed coercion from strings; defaults keep their type.
    assert_eq!(
        result(&post_json(p, "/function/add", r#"{"a": "1", "b": "2"}"#)),
        json!(3)
    );
    assert_eq!(
        result(&post_json(
            p,
            "/function/shout",
            r#"{"word": "ab", "times": 2, "loud": "true"}"#
        )),
        json!("ABAB")
    );
    // Walkers: data = {result: the walker, reports}.
    let resp = post_json(p, "/walker/add_note", r#"{"text": "hello"}"#);
    let v = resp.json();
    assert_eq!(v["data"]["reports"], json!(["hello"]), "{}", resp.body);
    assert_eq!(v["data"]["result"]["text"], json!("hello"));
    assert_eq!(v["data"]["result"]["_svc_archetype"], json!("walker"));
    let v = post_json(p, "/walker/list_notes", "").json();
    assert_eq!(v["data"]["reports"], json!(["hello"]));

    // GET: parameters from the query string, coerced.
    let r = result(&get(p, "/function/greet?name=bo%20b&n=4&tags=a&tags=b"));
    assert_eq!(r, json!({"name": "bo b", "double": 8, "tags": ["a", "b"]}));
    // Custom path with a {param}.
    let r = result(&get(p, "/items/41?verbose=yes"));
    assert_eq!(r, json!({"id": 41, "next": 42, "verbose": true}));
    let (code, details) = error(&get(p, "/items/abc"), 422);
    assert_eq!(code, "VALIDATION_ERROR");
    assert_eq!(details[0]["field"], json!("item_id"));

    // Raw responses.
    let resp = get(p, "/robots.txt");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, "User-agent: *\nDisallow:\n");
    assert_eq!(
        resp.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    let resp = get(p, "/report.csv");
    assert_eq!(resp.header("content-type"), Some("text/csv; charset=utf-8"));
    assert_eq!(resp.body, "a,b\n1,2\n");
    assert_eq!(get(p, "/function/raw_json").body, r#"{"x":[1,2]}"#);
    let (code, _) = error(&post_json(p, "/function/raw_fail", "{}"), 500);
    assert_eq!(code, "EXECUTION_ERROR");

    // A runtime error: the svc message and position, no Rust internals.
    let resp = post_json(p, "/function/boom", r#"{"n": 1}"#);
    let (code, _) = error(&resp, 500);
    assert_eq!(code, "EXECUTION_ERROR");
    let message = resp.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.starts_with("ZeroDivisionError"), "{message}");
    assert!(message.contains("app.svc:"), "{message}");
    assert!(!message.contains(".rs"), "{message}");

    // The index.
    let v = get(p, "/").json();
    assert_eq!(v["docs"], json!("/docs"));
    assert!(v["version"].is_string() && v["name"].is_string(), "{v}");
}

#[test]
fn bad_input_is_an_envelope_never_a_5xx() {
    let (_dir, s) = serve("bad");
    let p = s.port;
    let cases: &[(&str, u16, &str)] = &[
        (r#"{"a": "#, 422, "body"),
        ("[1, 2]", 422, "body"),
        (r#""text""#, 422, "body"),
        (r#"{"a": "x"}"#, 422, "a"),
        (r#"{"a": true}"#, 422, "a"),
        (r#"{"a": 1, "zzz": 2}"#, 422, "zzz"),
        (r#"{"b": 1}"#, 422, "a"),
    ];
    for (body, status, field) in cases {
        let resp = post_json(p, "/function/add", body);
        let (code, details) = error(&resp, *status);
        assert_eq!(code, "VALIDATION_ERROR", "{body}");
        let fields: Vec<&str> = details
            .as_array()
            .map(|d| d.iter().filter_map(|x| x["field"].as_str()).collect())
            .unwrap_or_default();
        assert!(fields.contains(field), "{body}: {}", resp.body);
    }
    // Unknown walker field.
    let resp = post_json(p, "/walker/add_note", r#"{"text": "x", "nope": 1}"#);
    assert_eq!(error(&resp, 422).0, "VALIDATION_ERROR");

    // Wrong content type, multipart.
    let resp = request(
        p,
        "POST",
        "/function/add",
        &[("Content-Type", "text/plain")],
        Some(b"{\"a\":1}"),
    );
    assert_eq!(error(&resp, 415).0, "UNSUPPORTED_MEDIA_TYPE");
    let resp = request(
        p,
        "POST",
        "/function/add",
        &[("Content-Type", "multipart/form-data; boundary=x")],
        Some(b"--x--"),
    );
    assert_eq!(error(&resp, 415).0, "UNSUPPORTED_MEDIA_TYPE");

    // Body over 1 MiB.
    let mut big = b"{\"a\": \"".to_vec();
    big.resize(1024 * 1024 + 64, b'x');
    big.extend_from_slice(b"\"}");
    let resp = request(
        p,
        "POST",
        "/function/add",
        &[("Content-Type", "application/json")],
        Some(&big),
    );
    assert_eq!(error(&resp, 413).0, "PAYLOAD_TOO_LARGE");

    // Unknown path, wrong method (generated and fixed routes).
    assert_eq!(error(&get(p, "/nope"), 404).0, "NOT_FOUND");
    assert_eq!(
        error(&post_json(p, "/function/missing", "{}"), 404).0,
        "NOT_FOUND"
    );
    assert_eq!(error(&get(p, "/function/add"), 405).0, "METHOD_NOT_ALLOWED");
    assert_eq!(
        error(&post_json(p, "/healthz", "{}"), 405).0,
        "METHOD_NOT_ALLOWED"
    );
    // WEBHOOK walkers are never under /walker/.
    assert_eq!(
        error(&post_json(p, "/walker/hooked", "{}"), 404).0,
        "NOT_FOUND"
    );

    // The server is still fine.
    assert_eq!(
        result(&post_json(p, "/function/add", r#"{"a": 1}"#)),
        json!(3)
    );
}

#[test]
fn auth_trace_ids_cors_and_health() {
    let (_dir, s) = serve("edges");
    let p = s.port;

    // Private endpoints need a token; no token can be valid yet.
    let resp = post_json(p, "/function/secret", "{}");
    assert_eq!(error(&resp, 401).0, "UNAUTHORIZED");
    assert_eq!(
        resp.json()["error"]["message"],
        json!("authentication required")
    );
    let resp = post_json(p, "/walker/private_walker", "{}");
    assert_eq!(error(&resp, 401).0, "UNAUTHORIZED");
    let resp = request(
        p,
        "POST",
        "/function/secret",
        &[("Authorization", "Bearer abc.def.ghi")],
        None,
    );
    assert_eq!(resp.json()["error"]["message"], json!("invalid token"));
    assert_eq!(resp.status, 401);

    // X-Trace-Id: echoed, else a fresh UUID, on every kind of response.
    let resp = request(p, "GET", "/healthz", &[("X-Trace-Id", "trace-123")], None);
    assert_eq!(resp.header("x-trace-id"), Some("trace-123"));
    for resp in [
        get(p, "/healthz"),
        get(p, "/nope"),
        post_json(p, "/function/add", "{}"),
        get(p, "/docs"),
    ] {
        let id = resp.header("x-trace-id").unwrap_or_default();
        assert_eq!(id.len(), 36, "{:?}", resp.headers);
        assert_eq!(id.matches('-').count(), 4, "{id}");
    }
    let a = get(p, "/healthz");
    let b = get(p, "/healthz");
    assert_ne!(a.header("x-trace-id"), b.header("x-trace-id"));

    // CORS: preflight answered, headers on normal responses.
    let resp = request(
        p,
        "OPTIONS",
        "/function/add",
        &[
            ("Origin", "http://example.com"),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "content-type, authorization",
            ),
        ],
        None,
    );
    assert!(resp.status == 204 || resp.status == 200, "{resp:?}");
    assert_eq!(
        resp.header("access-control-allow-origin"),
        Some("http://example.com")
    );
    assert!(
        resp.header("access-control-allow-methods")
            .is_some_and(|m| m.contains("POST"))
    );
    assert!(
        resp.header("access-control-allow-headers")
            .is_some_and(|h| h.contains("authorization"))
    );
    let resp = get(p, "/healthz");
    assert_eq!(resp.header("access-control-allow-origin"), Some("*"));

    // Health bodies (not enveloped).
    for (path, body) in [
        ("/healthz", r#"{"status":"ok"}"#),
        ("/health", r#"{"status":"ok"}"#),
        ("/healthz/live", r#"{"status":"alive"}"#),
        ("/healthz/ready", r#"{"status":"ready"}"#),
    ] {
        let resp = get(p, path);
        assert_eq!((resp.status, resp.body.as_str()), (200, body), "{path}");
    }

    // Docs are mounted by default.
    let resp = get(p, "/openapi.json");
    assert_eq!(resp.status, 200);
    assert!(
        resp.json()["paths"]["/items/{item_id}"]["get"].is_object(),
        "{}",
        resp.body
    );
    assert_eq!(get(p, "/docs").status, 200);
    assert_eq!(get(p, "/redoc").status, 200);
}

#[test]
fn persistence_seeding_restart_and_sigterm() {
    let dir = app_dir("persist");
    dir.write("seed.svc", SEED);
    let out = svc_in(dir.path(), &["run", "seed.svc"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let s = ServerGuard::start(dir.path(), &["app.svc"]);
    assert!(
        s.stdout()
            .contains("store: embedded SQLite at .svc/data/anchor_store.db"),
        "{}",
        s.output()
    );
    let v = post_json(s.port, "/walker/list_notes", "{}").json();
    assert_eq!(
        v["data"]["reports"],
        json!(["seeded"]),
        "svc run data is served"
    );
    assert_eq!(
        post_json(s.port, "/walker/add_note", r#"{"text": "kept"}"#).status,
        200
    );
    let status = s.terminate();
    assert_eq!(status.code(), Some(0), "SIGTERM exits 0");

    let s = ServerGuard::start(dir.path(), &["app.svc"]);
    let v = post_json(s.port, "/walker/list_notes", "{}").json();
    assert_eq!(v["data"]["reports"], json!(["seeded", "kept"]));
}

#[test]
fn port_fallback_when_taken() {
    let dir = app_dir("port");
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let s = ServerGuard::start_on(dir.path(), &["app.svc"], port);
    assert_ne!(s.port, port);
    assert!(
        s.stdout().contains(&format!("port {port} is in use")),
        "{}",
        s.output()
    );
    assert_eq!(get(s.port, "/healthz").status, 200);
}

#[test]
fn faux_prints_the_api_and_serves_nothing() {
    let dir = app_dir("faux");
    let out = svc_in(dir.path(), &["start", "app.svc", "--faux"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "POST /function/add  (function add, public)",
        "a: int (body, required)",
        "b: int (body, default 2)",
        "GET /items/{item_id}",
        "item_id: int (path, required)",
        "verbose: bool (query, default false)",
        "POST /walker/add_note",
        "POST /function/secret  (function secret, bearer token required)",
        "text/csv; charset=utf-8",
        "/webhook/hooked",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(!dir.path().join(".svc").exists(), "--faux opened the store");
}

#[test]
fn a_broken_app_does_not_start() {
    let dir = TempDir::new("broken");
    dir.write("main.svc", "def:pub f( -> int {\n");
    let out = svc_in(dir.path(), &["start", "--port", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("main.svc"), "{}", stderr(&out));
}

const MIDDLEWARE_APP: &str = r#"
walker _authenticate {
    has headers: dict;

    can check with Root entry {
        if self.headers.get("x-app-key", "") != "letmein" {
            report {"error": "bad app key", "status": 401};
        }
    }
}

walker _before_request {
    has request: dict;

    can check with Root entry {
        if "blocked" in self.request["path"] {
            report {"error": "blocked by policy", "status": 403};
        }
    }
}

def:pub hello() -> str {
    return "hi";
}

def:pub blocked() -> str {
    return "never";
}
"#;

#[test]
fn middleware_walkers_can_reject() {
    let dir = TempDir::new("mw");
    dir.write("main.svc", MIDDLEWARE_APP);
    let s = ServerGuard::start(dir.path(), &[]);
    let p = s.port;
    let key = [("X-App-Key", "letmein")];
    let resp = request(p, "POST", "/function/hello", &key, None);
    assert_eq!(result(&resp), json!("hi"));
    let resp = post_json(p, "/function/hello", "{}");
    assert_eq!(error(&resp, 401).0, "UNAUTHORIZED");
    assert_eq!(resp.json()["error"]["message"], json!("bad app key"));
    let resp = request(p, "POST", "/function/blocked", &key, None);
    assert_eq!(error(&resp, 403).0, "FORBIDDEN");
    // Middleware walkers are not endpoints; health is not filtered by them.
    assert_eq!(
        error(
            &request(p, "POST", "/walker/_before_request", &key, None),
            404
        )
        .0,
        "NOT_FOUND"
    );
    assert_eq!(get(p, "/healthz").status, 200);
}

#[test]
fn dev_mode_reloads_on_change() {
    let dir = TempDir::new("dev");
    dir.write("main.svc", "def:pub v() -> int {\n    return 1;\n}\n");
    let s = ServerGuard::start(dir.path(), &["--dev"]);
    assert_eq!(result(&post_json(s.port, "/function/v", "{}")), json!(1));
    // A broken edit keeps the old app serving.
    std::thread::sleep(Duration::from_millis(20));
    dir.write("main.svc", "def:pub v( -> int {\n");
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(result(&post_json(s.port, "/function/v", "{}")), json!(1));
    dir.write(
        "main.svc",
        "def:pub v() -> int {\n    return 2;\n}\n\ndef:pub w() -> int {\n    return 3;\n}\n",
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let resp = post_json(s.port, "/function/w", "{}");
        if resp.status == 200 {
            assert_eq!(result(&resp), json!(3));
            break;
        }
        assert!(Instant::now() < deadline, "no reload\n{}", s.output());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(result(&post_json(s.port, "/function/v", "{}")), json!(2));
}

#[test]
fn config_switches_docs_and_quiet_health_logs() {
    let dir = app_dir("config");
    dir.write(
        "svc.toml",
        "[scale.server]\ndocs_enabled = false\nsuppress_health_check_logs = true\nmax_body_bytes = 64\n",
    );
    let s = ServerGuard::start(dir.path(), &["app.svc", "--log-format", "json"]);
    let p = s.port;
    assert_eq!(error(&get(p, "/openapi.json"), 404).0, "NOT_FOUND");
    assert_eq!(error(&get(p, "/docs"), 404).0, "NOT_FOUND");
    assert_eq!(get(p, "/").json()["docs"], Value::Null);
    let big = format!(r#"{{"a": 1, "pad": "{}"}}"#, "x".repeat(80));
    assert_eq!(
        error(&post_json(p, "/function/add", &big), 413).0,
        "PAYLOAD_TOO_LARGE"
    );
    assert_eq!(
        result(&post_json(p, "/function/add", r#"{"a": 1}"#)),
        json!(3)
    );
    // Access-log lines are JSON; health checks are left out.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !s.stderr().contains("/function/add") {
        assert!(Instant::now() < deadline, "no access log\n{}", s.output());
        std::thread::sleep(Duration::from_millis(10));
    }
    let logs = s.stderr();
    let access: Vec<Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == json!("svc::access"))
        .collect();
    assert!(
        access
            .iter()
            .any(|v| v["path"] == json!("/function/add") && v["status"] == json!(200)),
        "{logs}"
    );
    assert!(
        access.iter().all(|v| v["path"] != json!("/healthz")),
        "{logs}"
    );
    assert!(access.iter().all(|v| v["trace_id"].is_string()), "{logs}");
}
