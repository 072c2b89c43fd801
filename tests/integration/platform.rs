//! The platform around the app, over HTTP: `GET /metrics` (parsed by the strict
//! Prometheus parser of PyPI's `prometheus_client`, skipped with a message when it is not
//! installed; `.ci/run` installs it), its token and switch, and the graph endpoints
//! (`/graph`, `/graph/data`, `POST /traverse`) with their access rules and bounds, and
//! the page itself in headless Chromium (the system `chromium`, skipped with a message
//! when absent; `.ci/run` installs it).

use crate::TempDir;
use crate::support::{ServerGuard, get, json_call, request};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};

const APP: &str = r#"
import from http { HTTPMethod }

node Item {
    has name: str;
    has secret_note: str = "n";
}

node Tag {
    has label: str;
}

edge Holds {
    has weight: int = 1;
}

walker:pub add_item {
    has name: str;

    can go with Root entry {
        item = here +>: Holds(weight=2) :+> Item(name=self.name);
        item ++> Tag(label=self.name + "-tag");
        report jid(item);
    }
}

def:pub ping() -> str {
    return "pong";
}

@restspec(method=HTTPMethod.GET, path="/items/{item_id}")
def:pub get_item(item_id: int) -> int {
    return item_id;
}

"""Stores a session token the way a login page would, then opens /graph (browser test)."""
@restspec(method=HTTPMethod.GET, path="/seed-token", envelope=False, produces="text/html")
def:pub seed_token(token: str) -> str {
    return "<script>localStorage.setItem('svc_token', '" + token + "'); location.href = '/graph';</script>";
}
"#;

fn serve(tag: &str, env: &[(&str, &str)]) -> (TempDir, ServerGuard) {
    let dir = TempDir::new(tag);
    dir.write("main.svc", APP);
    let server = ServerGuard::replica(dir.path(), env);
    (dir, server)
}

/// Register `name` and log in: the session token.
fn sign_in(port: u16, name: &str) -> String {
    let body = json!({"identities": [{"type": "username", "value": name}],
                      "credential": {"type": "password", "password": "pw-123456"}});
    let r = json_call(port, "POST", "/user/register", None, &body);
    assert_eq!(r.status, 201, "{}", r.body);
    let body = json!({"identity": {"type": "username", "value": name},
                      "credential": {"type": "password", "password": "pw-123456"}});
    let r = json_call(port, "POST", "/user/login", None, &body);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]["token"]
        .as_str()
        .expect("a token")
        .to_string()
}

/// `add_item(name)` as `token`'s user (the guest without one): the new item's id.
fn add_item(port: u16, token: Option<&str>, name: &str) -> String {
    let r = json_call(
        port,
        "POST",
        "/walker/add_item",
        token,
        &json!({"name": name}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]["reports"][0]
        .as_str()
        .expect("an id")
        .to_string()
}

// ---------------------------------------------------------------------------------------
// /metrics
// ---------------------------------------------------------------------------------------

/// Parse an exposition with `prometheus_client`'s parser (which raises on any malformed
/// line); `None` when Python or the package is missing. The answer: `{family: {type,
/// samples: [[name, labels, value]]}}`.
fn strict_parse(text: &str) -> Option<Value> {
    const SCRIPT: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for fam in text_string_to_metric_families(sys.stdin.read()):
    out[fam.name] = {"type": fam.type,
                     "samples": [[s.name, s.labels, s.value] for s in fam.samples]}
print(json.dumps(out))
"#;
    let probe = Command::new("python3")
        .args(["-c", "import prometheus_client"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: python3 with prometheus_client is not installed (.ci/run installs it)");
        return None;
    }
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write exposition");
    let out = child.wait_with_output().expect("python3 finished");
    assert!(
        out.status.success(),
        "the strict parser refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("parser output is JSON"))
}

fn sample(families: &Value, family: &str, name: &str, labels: &Value) -> Option<f64> {
    families[family]["samples"]
        .as_array()?
        .iter()
        .find(|s| s[0] == json!(name) && &s[1] == labels)
        .and_then(|s| s[2].as_f64())
}

#[test]
fn metrics_name_route_templates_and_parse_strictly() {
    let (_dir, server) = serve("metrics", &[]);
    let port = server.port;
    add_item(port, None, "a");
    assert_eq!(get(port, "/items/41").status, 200);
    assert_eq!(get(port, "/items/42").status, 200);
    assert_eq!(get(port, "/no/such/7").status, 404);
    assert_eq!(get(port, "/healthz").status, 200);
    let r = get(port, "/metrics");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    // Route templates, never raw paths holding ids.
    assert!(!r.body.contains("/items/41"), "{}", r.body);
    for name in [
        "svc_http_requests_total",
        "svc_http_request_duration_seconds",
        "svc_runs_total",
        "svc_run_replays_total",
        "svc_run_queue_depth",
        "svc_ws_sessions",
        "svc_ws_messages_total",
        "svc_events_published_total",
        "svc_events_handled_total",
        "svc_store_commits_total",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
    ] {
        assert!(
            r.body.contains(&format!("# TYPE {name} ")),
            "{name} missing:\n{}",
            r.body
        );
    }
    let Some(f) = strict_parse(&r.body) else {
        return;
    };
    let requests = |method: &str, route: &str, status: &str| {
        sample(
            &f,
            "svc_http_requests",
            "svc_http_requests_total",
            &json!({"method": method, "route": route, "status": status}),
        )
    };
    assert_eq!(requests("GET", "/items/{item_id}", "200"), Some(2.0), "{f}");
    assert_eq!(requests("POST", "/walker/add_item", "200"), Some(1.0));
    assert_eq!(requests("GET", "unmatched", "404"), Some(1.0));
    assert_eq!(
        requests("GET", "/healthz", "200").map(|n| n >= 1.0),
        Some(true)
    );
    assert_eq!(
        f["svc_http_request_duration_seconds"]["type"],
        json!("histogram")
    );
    let count = sample(
        &f,
        "svc_http_request_duration_seconds",
        "svc_http_request_duration_seconds_count",
        &json!({"method": "GET", "route": "/items/{item_id}"}),
    );
    assert_eq!(count, Some(2.0));
    let runs = |kind: &str, name: &str| {
        sample(
            &f,
            "svc_runs",
            "svc_runs_total",
            &json!({"kind": kind, "name": name, "outcome": "ok"}),
        )
    };
    assert_eq!(runs("walker", "add_item"), Some(1.0));
    assert_eq!(runs("function", "get_item"), Some(2.0));
    let commits = sample(
        &f,
        "svc_store_commits",
        "svc_store_commits_total",
        &json!({"backend": "sqlite", "outcome": "ok"}),
    );
    assert!(commits.is_some_and(|n| n >= 1.0), "{f}");
    assert_eq!(f["svc_run_queue_depth"]["type"], json!("gauge"));
    let rss = sample(
        &f,
        "process_resident_memory_bytes",
        "process_resident_memory_bytes",
        &json!({}),
    );
    assert!(rss.is_some_and(|n| n > 0.0));
}

#[test]
fn metrics_token_and_switch() {
    let (_dir, server) = serve("metrics-token", &[("SVC_METRICS_TOKEN", "s3cret")]);
    let port = server.port;
    let r = get(port, "/metrics");
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], json!("UNAUTHORIZED"));
    let r = request(
        port,
        "GET",
        "/metrics",
        &[("Authorization", "Bearer wrong")],
        None,
    );
    assert_eq!(r.status, 401);
    let r = request(
        port,
        "GET",
        "/metrics",
        &[("Authorization", "Bearer s3cret")],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    drop(server);

    let (_dir, server) = serve("metrics-off", &[("SVC_METRICS_ENABLED", "false")]);
    let r = get(server.port, "/metrics");
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.json()["ok"], json!(false));
}

// ---------------------------------------------------------------------------------------
// Graph endpoints
// ---------------------------------------------------------------------------------------

fn graph_data(port: u16, token: Option<&str>) -> Value {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    let r = request(port, "GET", "/graph/data", &headers, None);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

fn labels(graph: &Value) -> Vec<String> {
    let mut out: Vec<String> = graph["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["label"].as_str().unwrap_or_default().to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn graph_page_is_self_contained() {
    let (_dir, server) = serve("graph-page", &[]);
    let r = get(server.port, "/graph");
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .is_some_and(|t| t.starts_with("text/html"))
    );
    assert!(r.body.contains("svc_token"), "reuses a stored token");
    assert!(r.body.contains("/graph/data"));
    for external in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!r.body.contains(external), "external request: {external}");
    }
}

#[test]
fn graph_data_shows_only_what_the_caller_may_read() {
    let (_dir, server) = serve("graph-data", &[]);
    let port = server.port;
    let alice = sign_in(port, "alice");
    let bob = sign_in(port, "bob");
    add_item(port, None, "public");
    add_item(port, Some(&alice), "alices");
    add_item(port, Some(&bob), "bobs");

    let public = graph_data(port, None);
    assert_eq!(public["version"], json!("1.0"));
    let shown = labels(&public);
    assert_eq!(shown.len(), 3, "{public}");
    assert!(shown.iter().any(|l| l.contains("'public'")), "{shown:?}");
    assert!(
        !shown
            .iter()
            .any(|l| l.contains("alices") || l.contains("bobs"))
    );
    let node = &public["nodes"][0];
    assert!(
        node["id"].as_str().is_some_and(|id| id.len() == 32),
        "{node}"
    );
    assert_eq!(node["type"], json!("Root"));
    let edges = public["edges"].as_array().expect("edges");
    assert_eq!(edges.len(), 2, "{public}");
    for e in edges {
        for k in ["id", "from", "to", "label"] {
            assert!(e[k].is_string(), "{k} of {e}");
        }
    }
    assert!(edges.iter().any(|e| e["label"] == json!("Holds")));

    let mine = labels(&graph_data(port, Some(&alice)));
    assert_eq!(mine.len(), 3, "{mine:?}");
    assert!(mine.iter().any(|l| l.contains("alices")));
    assert!(
        !mine
            .iter()
            .any(|l| l.contains("bobs") || l.contains("'public'"))
    );

    let r = request(
        port,
        "GET",
        "/graph/data",
        &[("Authorization", "Bearer nonsense")],
        None,
    );
    assert_eq!(r.status, 401);
}

fn traverse(port: u16, token: Option<&str>, body: &Value) -> crate::support::Response {
    json_call(port, "POST", "/traverse", token, body)
}

#[test]
fn traverse_follows_the_spec_parameters_and_access() {
    let (_dir, server) = serve("traverse", &[]);
    let port = server.port;
    let alice = sign_in(port, "alice");
    let bob = sign_in(port, "bob");
    let item = add_item(port, Some(&alice), "box");

    let r = traverse(port, None, &json!({}));
    assert_eq!(r.status, 401, "bearer required: {}", r.body);

    // Defaults: the root and one hop.
    let r = traverse(port, Some(&alice), &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["ok"], json!(true));
    let data = &v["data"];
    let nodes = data["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 2, "{data}");
    assert_eq!(nodes[0]["type"], json!("Root"));
    assert_eq!(nodes[1]["type"], json!("Item"));
    assert!(nodes[1].get("context").is_none(), "not detailed");
    let edge = &data["edges"][0];
    assert_eq!(edge["type"], json!("Holds"));
    assert_eq!(edge["source"], nodes[0]["id"]);
    assert_eq!(edge["target"], json!(item));
    assert_eq!(nodes[1]["edges"], json!([edge["id"]]));

    // Deeper, detailed, filtered.
    let r = traverse(
        port,
        Some(&alice),
        &json!({"depth": 2, "detailed": true, "node_types": ["Item", "Tag"]}),
    );
    let data = r.json()["data"].clone();
    let types: Vec<&str> = data["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["type"].as_str())
        .collect();
    assert_eq!(types, ["Root", "Item", "Tag"], "{data}");
    assert_eq!(
        data["nodes"][1]["context"],
        json!({"name": "box", "secret_note": "n"})
    );
    assert_eq!(data["edges"][0]["context"], json!({"weight": 2}));
    let r = traverse(
        port,
        Some(&alice),
        &json!({"depth": 2, "node_types": ["Tag"]}),
    );
    assert_eq!(r.json()["data"]["nodes"].as_array().map(Vec::len), Some(1));
    let r = traverse(
        port,
        Some(&alice),
        &json!({"depth": 3, "edge_types": ["Holds"]}),
    );
    assert_eq!(r.json()["data"]["nodes"].as_array().map(Vec::len), Some(2));

    // From a node: its own subtree; another user's node is not found.
    let r = traverse(port, Some(&alice), &json!({"source": item, "depth": 1}));
    let data = r.json()["data"].clone();
    assert_eq!(data["nodes"][0]["id"], json!(item));
    assert_eq!(data["nodes"][1]["type"], json!("Tag"));
    let r = traverse(port, Some(&bob), &json!({"source": item}));
    assert_eq!(r.status, 404, "{}", r.body);
    let r = traverse(port, Some(&bob), &json!({"depth": 5}));
    assert_eq!(r.json()["data"]["nodes"].as_array().map(Vec::len), Some(1));

    // Bad input: the envelope, 422, every field named.
    let r = traverse(
        port,
        Some(&alice),
        &json!({"source": "nope", "depth": -1, "detailed": "yes", "extra": 1}),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let fields: Vec<String> = r.json()["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["field"].as_str().map(str::to_string))
        .collect();
    assert_eq!(fields.len(), 4, "{fields:?}");
    let r = json_call(port, "POST", "/traverse", Some(&alice), &json!([1]));
    assert_eq!(r.status, 422);
    let r = traverse(port, Some(&alice), &json!({"depth": 1000}));
    assert_eq!(r.status, 422, "beyond [scale.graph] max_depth");
}

/// A wrong method on the graph endpoints and `/metrics` is 405 `METHOD_NOT_ALLOWED`
/// (decisions.md "Envelope and errors"), as on every other fixed route; they answered
/// 404 "no endpoint".
#[test]
fn graph_and_metrics_refuse_a_wrong_method_with_405() {
    let (_dir, server) = serve("methods", &[]);
    for (method, path) in [
        ("POST", "/graph"),
        ("POST", "/graph/data"),
        ("GET", "/traverse"),
        ("DELETE", "/traverse"),
        ("POST", "/metrics"),
    ] {
        let r = request(server.port, method, path, &[], Some(b"{}"));
        assert_eq!(r.status, 405, "{method} {path}: {}", r.body);
        assert_eq!(
            r.json()["error"]["code"],
            json!("METHOD_NOT_ALLOWED"),
            "{method} {path}"
        );
    }
    assert_eq!(get(server.port, "/graph").status, 200);
    assert_eq!(get(server.port, "/metrics").status, 200);
}

#[test]
fn graph_answers_are_bounded() {
    let dir = TempDir::new("graph-bounds");
    dir.write("main.svc", APP);
    dir.write(
        "svc.toml",
        "[scale.graph]\nnode_limit = 3\nedge_limit = 2\n",
    );
    let server = ServerGuard::start(dir.path(), &["main.svc"]);
    let port = server.port;
    for name in ["a", "b", "c"] {
        add_item(port, None, name);
    }
    let g = graph_data(port, None);
    assert_eq!(g["nodes"].as_array().map(Vec::len), Some(3), "{g}");
    assert_eq!(g["edges"].as_array().map(Vec::len), Some(2), "{g}");
    assert_eq!(g["truncated"], json!(true));
}

/// Load `url` in headless Chromium (a fresh profile in `profile`) and return the DOM
/// after its scripts ran; `None` when Chromium is not installed.
fn chromium_dom(url: &str, profile: &Path) -> Option<String> {
    let browser = ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(browser) = browser else {
        eprintln!("skipped: chromium is not installed (.ci/run installs it)");
        return None;
    };
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", url])
        .stderr(Stdio::null())
        .output()
        .expect("run chromium");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `(nodes, who)` the page shows: `data-nodes` of its body and the session label.
fn shown(dom: &str) -> (Option<u32>, Option<String>) {
    let nodes = dom
        .split("data-nodes=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|n| n.parse().ok());
    let who = dom
        .split("<span id=\"who\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .map(str::to_string);
    (nodes, who)
}

#[test]
fn graph_page_in_headless_chromium_shows_public_then_own_graph() {
    let (dir, server) = serve("graph-browser", &[]);
    let port = server.port;
    add_item(port, None, "public");
    let alice = sign_in(port, "alice");
    add_item(port, Some(&alice), "one");
    add_item(port, Some(&alice), "two");
    let profile = dir.path().join("browser-profile");
    let Some(dom) = chromium_dom(&format!("http://127.0.0.1:{port}/graph"), &profile) else {
        return;
    };
    // The guest's graph: root, the item, its tag.
    assert_eq!(shown(&dom), (Some(3), Some("public graph".into())), "{dom}");
    // A stored svc_token is reused: alice's root and her two items with their tags.
    let url = format!("http://127.0.0.1:{port}/seed-token?token={alice}");
    let dom = chromium_dom(&url, &profile).expect("chromium ran before");
    assert_eq!(shown(&dom), (Some(5), Some("your graph".into())), "{dom}");
}

// ---------------------------------------------------------------------------------------
// Start-up path
// ---------------------------------------------------------------------------------------

/// `--faux` loads the app as the runtime would: with `[scale.limits]` of the resolved
/// configuration (profile included) and with `--main`.
#[test]
fn faux_loads_the_app_the_runtime_would_serve() {
    let dir = TempDir::new("faux-config");
    dir.write(
        "app.svc",
        "def deep(n: int) -> int {\n    return 0 if n == 0 else deep(n - 1);\n}\n\n\
         glob depth = deep(40);\n\n\
         with entry:__main__ {\n    x = 1 / 0;\n}\n\n\
         def:pub ping() -> str {\n    return \"pong\";\n}\n",
    );
    let ok = crate::svc_in(dir.path(), &["start", "app.svc", "--faux"]);
    assert!(ok.status.success(), "{}", crate::stderr(&ok));
    assert!(crate::stdout(&ok).contains("/function/ping"));
    let main = crate::svc_in(dir.path(), &["start", "app.svc", "--faux", "--main"]);
    assert_eq!(main.status.code(), Some(1), "--main runs __main__ blocks");
    assert!(
        crate::stderr(&main).contains("division by zero"),
        "{}",
        crate::stderr(&main)
    );
    dir.write("svc.tight.toml", "[scale.limits]\nmax_call_depth = 10\n");
    let tight = crate::svc_in(
        dir.path(),
        &["start", "app.svc", "--faux", "--profile", "tight"],
    );
    assert_eq!(tight.status.code(), Some(1));
    assert!(
        crate::stderr(&tight).contains("maximum recursion depth"),
        "{}",
        crate::stderr(&tight)
    );
    assert!(!dir.path().join(".svc").exists(), "--faux opened the store");
}
