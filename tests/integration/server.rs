//! `svc start`: the real binary serving a fixture app over HTTP. Envelope shape and key
//! order, generated routes, typed coercion (JSON, query, forms), multipart uploads,
//! raw responses, every error status, HEAD/OPTIONS, trace ids, CORS, health, auth,
//! middleware walkers, persistence, concurrent writers, quarantine of a corrupted row,
//! shutdown, port fallback and `SVC_SERVER_PORT`, `--faux` and `--dev`. Each test
//! starts its servers once for a group of assertions.

use crate::support::{ServerGuard, free_port, get, post_json, request};
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
    // Every parameter given, in another order than declared: bound by name.
    assert_eq!(
        result(&post_json(
            p,
            "/function/shout",
            r#"{"loud": false, "times": 3, "word": "ab"}"#
        )),
        json!("ababab")
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

    // HEAD is GET without the body; OPTIONS is answered on every path (CORS).
    let full = get(p, "/items/41?verbose=yes");
    let head = request(p, "HEAD", "/items/41?verbose=yes", &[], None);
    assert_eq!((head.status, head.body.as_str()), (200, ""), "{head:?}");
    let length = full.body.len().to_string();
    assert_eq!(head.header("content-length"), Some(length.as_str()));
    assert!(head.header("x-trace-id").is_some());
    let head = request(p, "HEAD", "/healthz", &[], None);
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    assert_eq!(request(p, "HEAD", "/function/add", &[], None).status, 405);
    let resp = request(p, "OPTIONS", "/function/add", &[], None);
    assert!(resp.status == 204 || resp.status == 200, "{resp:?}");
    assert!(
        resp.header("access-control-allow-methods")
            .is_some_and(|m| m.contains("HEAD") && m.contains("POST")),
        "{resp:?}"
    );

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

    // Wrong content type; multipart other than form-data; an empty form lacks `a`.
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
        &[("Content-Type", "multipart/mixed; boundary=x")],
        Some(b"--x--"),
    );
    assert_eq!(error(&resp, 415).0, "UNSUPPORTED_MEDIA_TYPE");
    let resp = request(
        p,
        "POST",
        "/function/add",
        &[("Content-Type", "multipart/form-data; boundary=x")],
        Some(b"--x--"),
    );
    let (code, details) = error(&resp, 422);
    assert_eq!(
        (code.as_str(), &details[0]["field"]),
        ("VALIDATION_ERROR", &json!("a"))
    );

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
    // The default allow-list is `["*"]`: any origin, never with credentials.
    assert_eq!(resp.header("access-control-allow-origin"), Some("*"));
    assert_eq!(resp.header("access-control-allow-credentials"), None);
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
    assert_eq!(error(&get(p, "/redoc"), 404).0, "NOT_FOUND");
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
    // Access-log lines are JSON; health checks are left out. The lines of the two calls
    // are written after their responses: wait for the one asserted on (the 200), not for
    // the first line that mentions the path (the 413's).
    let deadline = Instant::now() + Duration::from_secs(30);
    let (logs, access) = loop {
        let logs = s.stderr();
        let access: Vec<Value> = logs
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["target"] == json!("svc::access"))
            .collect();
        if access
            .iter()
            .any(|v| v["path"] == json!("/function/add") && v["status"] == json!(200))
        {
            break (logs, access);
        }
        assert!(
            Instant::now() < deadline,
            "no access line for the 200 of /function/add\n{}",
            s.output()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        access
            .iter()
            .any(|v| v["path"] == json!("/function/add") && v["status"] == json!(413)),
        "{logs}"
    );
    assert!(
        access.iter().all(|v| v["path"] != json!("/healthz")),
        "{logs}"
    );
    assert!(access.iter().all(|v| v["trace_id"].is_string()), "{logs}");
}

/// Text access lines keep the subscriber's layout (time, level, target, message, fields
/// in order), and the log filter still governs them: `svc::access=warn` leaves them out
/// while other INFO lines stay.
#[test]
fn access_lines_in_text_follow_the_layout_and_the_filter() {
    let dir = app_dir("access-text");
    let port = free_port().to_string();
    let args = ["app.svc", "--host", "127.0.0.1", "--port", &port];
    let s = ServerGuard::launch(dir.path(), &args, &[("NO_COLOR", "1")]);
    assert_eq!(
        result(&post_json(s.port, "/function/add", r#"{"a": 1}"#)),
        json!(3)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let line = loop {
        let logs = s.stderr();
        if let Some(l) = logs.lines().find(|l| l.contains("path=/function/add ")) {
            break l.to_string();
        }
        assert!(Instant::now() < deadline, "no access line\n{}", s.output());
        std::thread::sleep(Duration::from_millis(10));
    };
    let (time, rest) = line
        .split_once("  INFO svc::access: request method=POST ")
        .unwrap();
    assert_eq!(time.len(), "2026-11-27T15:11:55.231363Z".len(), "{line}");
    assert!(time.ends_with('Z') && time.as_bytes()[10] == b'T', "{line}");
    let fields: Vec<&str> = rest
        .split(' ')
        .map(|f| f.split('=').next().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["path", "status", "duration_ms", "trace_id"],
        "{line}"
    );
    assert!(rest.contains(" status=200 "), "{line}");
    drop(s);

    let port = free_port().to_string();
    let quiet = ServerGuard::launch(
        dir.path(),
        &["app.svc", "--host", "127.0.0.1", "--port", &port],
        &[("SVC_LOG", "info,actix_server=warn,svc::access=warn")],
    );
    assert_eq!(
        result(&post_json(quiet.port, "/function/add", r#"{"a": 1}"#)),
        json!(3)
    );
    std::thread::sleep(Duration::from_millis(200));
    let logs = quiet.stderr();
    assert!(!logs.contains("svc::access"), "{logs}");
    assert!(logs.contains(" INFO "), "other INFO lines stay\n{logs}");
}

/// Forms, uploads, typed GET walkers and raised errors.
const FORMS_APP: &str = r#"
import from http { HTTPMethod }

def:pub upload(f: UploadFile, note: str = "", copies: int = 1) -> dict {
    return {
        "filename": f["filename"],
        "type": f["content_type"],
        "size": f["size"],
        "content": f["content"],
        "encoding": f.get("encoding", "text"),
        "note": note * copies
    };
}

def:pub names(files: list[UploadFile]) -> list {
    return [f["filename"] + "=" + f["content"] for f in files];
}

def:pub signup(name: str, age: int, tags: list[str] = [], agree: bool = False) -> dict {
    return {"name": name, "age": age + 1, "tags": tags, "agree": agree};
}

def:pub fail(why: str) -> int {
    raise ValueError(f"cannot do it: {why}");
}

walker:pub attach {
    has f: UploadFile;
    has label: str = "";

    can go with Root entry {
        report f"{self.label}:{self.f['filename']}:{self.f['size']}";
    }
}

@restspec(method=HTTPMethod.GET)
walker:pub search {
    has q: str;
    has limit: int = 10;
    has exact: bool = False;
    has ids: list[int] = [];

    can go with Root entry {
        report {"q": self.q, "limit": self.limit + 1, "exact": self.exact, "ids": ids_sum(self.ids)};
    }
}

def ids_sum(ids: list[int]) -> int {
    return sum(ids);
}
"#;

/// A `multipart/form-data` body with boundary `B0undary`: `(name, filename, type, bytes)`.
fn form_data(parts: &[(&str, Option<&str>, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut body = b"preamble is ignored\r\n".to_vec();
    for (name, filename, content_type, data) in parts {
        let mut head = format!("--B0undary\r\nContent-Disposition: form-data; name=\"{name}\"");
        if let Some(f) = filename {
            head.push_str(&format!("; filename=\"{f}\""));
        }
        head.push_str("\r\n");
        if let Some(t) = content_type {
            head.push_str(&format!("Content-Type: {t}\r\n"));
        }
        head.push_str("\r\n");
        body.extend_from_slice(head.as_bytes());
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"--B0undary--\r\n");
    body
}

const FORM_TYPE: (&str, &str) = ("Content-Type", "multipart/form-data; boundary=B0undary");

fn post_form(port: u16, path: &str, body: &[u8]) -> crate::support::Response {
    request(port, "POST", path, &[FORM_TYPE], Some(body))
}

#[test]
fn uploads_forms_and_typed_queries() {
    let dir = TempDir::new("forms");
    dir.write("main.svc", FORMS_APP);
    let s = ServerGuard::start(dir.path(), &[]);
    let p = s.port;

    // A text file with two extra fields (coerced by their declared types).
    let text = "line one\r\nline two ünïcode\n";
    let body = form_data(&[
        ("note", None, None, b"hi"),
        ("f", Some("notes.txt"), Some("text/plain"), text.as_bytes()),
        ("copies", None, None, b"3"),
    ]);
    assert_eq!(
        result(&post_form(p, "/function/upload", &body)),
        json!({"filename": "notes.txt", "type": "text/plain", "size": text.len(),
               "content": text, "encoding": "text", "note": "hihihi"})
    );
    // Binary content: base64; no part Content-Type: application/octet-stream; an
    // escaped quote and UTF-8 in the file name.
    let png = [0x89, b'P', b'N', b'G', 0, 0xff, 0xfe];
    let body = form_data(&[("f", Some("r\\\"sumé.png"), None, &png)]);
    assert_eq!(
        result(&post_form(p, "/function/upload", &body)),
        json!({"filename": "r\"sumé.png", "type": "application/octet-stream", "size": 7,
               "content": "iVBORwD//g==", "encoding": "base64", "note": ""})
    );
    // A JSON body may carry the upload object itself.
    let resp = post_json(
        p,
        "/function/upload",
        r#"{"f": {"filename": "a.bin", "content": "iVBORwD//g==", "encoding": "base64"}}"#,
    );
    assert_eq!(result(&resp)["size"], json!(7));
    // A list of files; one file where one is expected.
    let two = form_data(&[
        ("files", Some("a.txt"), None, b"A"),
        ("files", Some("b.txt"), None, b"B"),
    ]);
    assert_eq!(
        result(&post_form(p, "/function/names", &two)),
        json!(["a.txt=A", "b.txt=B"])
    );
    let twice = form_data(&[
        ("f", Some("a.txt"), None, b"A"),
        ("f", Some("b.txt"), None, b"B"),
    ]);
    assert_eq!(
        error(&post_form(p, "/function/upload", &twice), 422).0,
        "VALIDATION_ERROR"
    );
    // Walkers take files too.
    let body = form_data(&[
        ("label", None, None, b"doc"),
        ("f", Some("x.txt"), Some("text/plain"), b"12345"),
    ]);
    let v = post_form(p, "/walker/attach", &body).json();
    assert_eq!(v["data"]["reports"], json!(["doc:x.txt:5"]), "{v}");

    // Missing file, a text field where the file belongs, an empty file input.
    for body in [
        form_data(&[("note", None, None, b"no file")]),
        form_data(&[("f", None, None, b"not a file")]),
        form_data(&[("f", Some(""), Some("application/octet-stream"), b"")]),
    ] {
        let resp = post_form(p, "/function/upload", &body);
        let (code, details) = error(&resp, 422);
        assert_eq!(
            (code.as_str(), &details[0]["field"]),
            ("VALIDATION_ERROR", &json!("f"))
        );
    }
    let resp = post_json(p, "/function/upload", r#"{"f": "just text"}"#);
    assert_eq!(error(&resp, 422).0, "VALIDATION_ERROR");

    // Malformed multipart is a 422 envelope, never a 5xx.
    let mut unterminated = form_data(&[("f", Some("a.txt"), None, b"abc")]);
    unterminated.truncate(unterminated.len() - 16);
    let too_many: Vec<(String, Vec<u8>)> =
        (0..101).map(|i| (format!("x{i}"), b"v".to_vec())).collect();
    let too_many: Vec<(&str, Option<&str>, Option<&str>, &[u8])> = too_many
        .iter()
        .map(|(n, v)| (n.as_str(), None, None, v.as_slice()))
        .collect();
    let huge_header = format!(
        "--B0undary\r\nContent-Disposition: form-data; name=\"f\"; filename=\"{}\"\r\n\r\nx\r\n--B0undary--",
        "n".repeat(10_000)
    );
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("multipart/form-data; boundary=B0undary", unterminated),
        (
            "multipart/form-data; boundary=B0undary",
            form_data(&too_many),
        ),
        (
            "multipart/form-data; boundary=B0undary",
            huge_header.into_bytes(),
        ),
        (
            "multipart/form-data; boundary=B0undary",
            b"no boundary at all".to_vec(),
        ),
        (
            "multipart/form-data; boundary=B0undary",
            b"--B0undary\r\nContent-Type: text/plain\r\n\r\nx\r\n--B0undary--".to_vec(),
        ),
        (
            "multipart/form-data; boundary=B0undary",
            b"--B0undary\r\nContent-Disposition: form-data; name=\"f\r\n\r\nx\r\n--B0undary--"
                .to_vec(),
        ),
        (
            "multipart/form-data",
            form_data(&[("note", None, None, b"x")]),
        ),
    ];
    for (content_type, body) in cases {
        let resp = request(
            p,
            "POST",
            "/function/upload",
            &[("Content-Type", content_type)],
            Some(&body),
        );
        let (code, details) = error(&resp, 422);
        assert_eq!(code, "VALIDATION_ERROR");
        assert_eq!(details[0]["field"], json!("body"), "{}", resp.body);
    }
    // Over max_body_bytes (1 MiB by default): 413.
    let big = vec![b'a'; 1024 * 1024 + 1];
    let resp = post_form(
        p,
        "/function/upload",
        &form_data(&[("f", Some("big.txt"), None, &big)]),
    );
    assert_eq!(error(&resp, 413).0, "PAYLOAD_TOO_LARGE");

    // An HTML form post (URL-encoded): strings coerced by type, repeated keys are lists.
    let form = ("Content-Type", "application/x-www-form-urlencoded");
    let resp = request(
        p,
        "POST",
        "/function/signup",
        &[form],
        Some(b"name=Ada+L%C3%B6v&age=36&tags=a&tags=b%26c&agree=on"),
    );
    assert_eq!(
        result(&resp),
        json!({"name": "Ada Löv", "age": 37, "tags": ["a", "b&c"], "agree": true})
    );
    let resp = request(
        p,
        "POST",
        "/function/signup",
        &[form],
        Some(b"name=x&age=old"),
    );
    let (code, details) = error(&resp, 422);
    assert_eq!(
        (code.as_str(), &details[0]["field"]),
        ("VALIDATION_ERROR", &json!("age"))
    );

    // GET walker: typed query parameters (int, bool, list[int]) coerced.
    let v = get(
        p,
        "/walker/search?q=svc&limit=4&exact=true&ids=1&ids=2&ids=39",
    )
    .json();
    assert_eq!(
        v["data"]["reports"],
        json!([{"q": "svc", "limit": 5, "exact": true, "ids": 42}]),
        "{v}"
    );
    let v = get(p, "/walker/search?q=x").json();
    assert_eq!(
        v["data"]["reports"],
        json!([{"q": "x", "limit": 11, "exact": false, "ids": 0}])
    );
    let (code, details) = error(&get(p, "/walker/search?q=x&ids=1&ids=two"), 422);
    assert_eq!(
        (code.as_str(), &details[0]["field"]),
        ("VALIDATION_ERROR", &json!("ids"))
    );

    // A raised exception: 500 with the svc message, no host internals.
    let resp = post_json(p, "/function/fail", r#"{"why": "no disk"}"#);
    let (code, _) = error(&resp, 500);
    assert_eq!(code, "EXECUTION_ERROR");
    let message = resp.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.starts_with("ValueError: cannot do it: no disk"),
        "{message}"
    );
    for leak in [".rs:", "panicked", "src/", "rusqlite", "actix"] {
        assert!(!message.contains(leak), "{message}");
    }
    assert_eq!(get(p, "/healthz").status, 200);
}

/// Concurrent appends, the restart that keeps them, and quarantine of a corrupted row.
const STORE_APP: &str = r#"
node Item {
    has n: int;
}

walker:pub add_item {
    has n: int;

    can go with Root entry {
        here ++> Item(n=self.n);
    }
}

walker:pub count_items {
    can go with Root entry {
        items = [-->[?:Item]];
        report {"count": len(items), "sum": sum([i.n for i in items])};
    }
}
"#;

#[test]
fn concurrent_writers_restart_and_quarantine() {
    const THREADS: usize = 8;
    const EACH: usize = 25;
    let dir = TempDir::new("store");
    dir.write("main.svc", STORE_APP);
    let s = ServerGuard::start(dir.path(), &[]);
    let port = s.port;
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || {
                (0..EACH)
                    .map(|i| {
                        let body = format!(r#"{{"n": {}}}"#, t * EACH + i);
                        let resp = post_json(port, "/walker/add_item", &body);
                        (resp.status, resp.body)
                    })
                    .filter(|(status, _)| *status != 200)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for w in writers {
        let failures = w.join().expect("writer thread");
        assert!(failures.is_empty(), "{failures:?}");
    }
    let total = THREADS * EACH;
    let all = json!([{"count": total, "sum": total * (total - 1) / 2}]);
    let count = |port| post_json(port, "/walker/count_items", "{}");
    assert_eq!(
        count(port).json()["data"]["reports"],
        all,
        "every write landed"
    );
    assert_eq!(s.terminate().code(), Some(0));

    // Restart: the data is still there. Then corrupt one Item row while stopped.
    let s = ServerGuard::start(dir.path(), &[]);
    assert_eq!(
        count(s.port).json()["data"]["reports"],
        all,
        "restart keeps data"
    );
    assert_eq!(s.terminate().code(), Some(0));
    let db_path = dir.path().join(".svc/data/anchor_store.db");
    let db = rusqlite::Connection::open(&db_path).expect("open the store");
    let (victim, n): (String, i64) = db
        .query_row(
            "SELECT id, json_extract(fields, '$.n') FROM anchors WHERE arch_type = 'Item' \
             ORDER BY id LIMIT 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .expect("an Item row");
    db.execute(
        "UPDATE anchors SET fields = '{\"n\": 1, broken' WHERE id = ?1",
        [&victim],
    )
    .expect("corrupt the row");
    drop(db);

    // The server still serves; the row is quarantined, not dropped.
    let s = ServerGuard::start(dir.path(), &[]);
    let resp = count(s.port);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let expected_sum = (total * (total - 1) / 2) as i64 - n;
    assert_eq!(
        resp.json()["data"]["reports"],
        json!([{"count": total - 1, "sum": expected_sum}])
    );
    assert_eq!(
        post_json(s.port, "/walker/add_item", r#"{"n": 0}"#).status,
        200
    );
    let db = rusqlite::Connection::open(&db_path).expect("open the store");
    let (raw, reason): (String, String) = db
        .query_row(
            "SELECT raw, reason FROM anchors_quarantine WHERE id = ?1",
            [&victim],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .expect("the corrupted row is in anchors_quarantine");
    assert!(raw.contains("broken"), "{raw}");
    assert!(!reason.is_empty());
    let left: i64 = db
        .query_row(
            "SELECT count(*) FROM anchors WHERE id = ?1",
            [&victim],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(left, 0);
}

/// `SVC_SERVER_PORT` chooses the port when `--port` is not given.
#[test]
fn env_overrides_the_port() {
    use std::io::BufRead as _;
    use std::process::Stdio;

    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    let dir = app_dir("envport");
    let port = crate::support::free_port();
    let mut child = Kill(
        crate::svc()
            .current_dir(dir.path())
            .args(["start", "app.svc", "--host", "127.0.0.1", "--workers", "1"])
            .env("SVC_SERVER_PORT", port.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn svc start"),
    );
    let stdout = child.0.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(15);
    let line = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("serving") => break line,
            Ok(_) => {}
            Err(e) => panic!("no startup line: {e}"),
        }
    };
    assert!(
        line.contains(&format!("at http://127.0.0.1:{port} ")),
        "{line}"
    );
    assert_eq!(get(port, "/healthz").status, 200);
}

/// An `async def` endpoint answers with its coroutine's result, its gathered awaits run
/// by the event loop (it used to send the unawaited coroutine, which has no wire form).
#[test]
fn async_function_endpoint_runs_its_coroutine() {
    let dir = TempDir::new("async-fn");
    dir.write(
        "app.svc",
        "import asyncio;\n\
         async def:pub slow_add(a: int, b: int) -> int {\n\
             r = await asyncio.gather(asyncio.sleep(0.01, result=a), asyncio.sleep(0.02, result=b));\n\
             return r[0] + r[1];\n\
         }\n",
    );
    let s = ServerGuard::start(dir.path(), &["app.svc"]);
    let resp = post_json(s.port, "/function/slow_add", r#"{"a": 2, "b": 5}"#);
    assert_eq!(result(&resp), json!(7));
}
