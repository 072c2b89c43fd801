//! The content `svc mcp` bundles (`src/mcp/content/`), held to what it claims through the
//! CLI: every fenced `svc` block of the Markdown pages passes `svc check`, and every
//! example app passes `svc check`, runs with `svc run`, and is served by `svc start`.
//!
//! Convention of the pages: a block tagged `svc` is a complete program; a fragment or a
//! deliberate mistake is tagged `svc fragment`. Other tags are for shell, TOML, JSON and
//! plain text.

use crate::support::{ServerGuard, WsClient, get, json_call, request};
use crate::{TempDir, stderr, stdout, svc_in};
use serde_json::json;
use std::path::{Path, PathBuf};

fn content_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/mcp/content")
}

/// Every Markdown page under `docs/` and `guide/`, sorted.
fn pages() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["docs", "guide"] {
        for entry in std::fs::read_dir(content_dir().join(sub)).expect("read content dir") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The fenced blocks of a Markdown text: (info string, body, line of the fence).
fn fenced_blocks(text: &str) -> Vec<(String, String, usize)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some((info.trim().to_string(), String::new(), i + 1));
                }
            }
            Some((info, mut body, at)) => {
                if trimmed == "```" {
                    blocks.push((info, body, at));
                } else {
                    body.push_str(line);
                    body.push('\n');
                    open = Some((info, body, at));
                }
            }
        }
    }
    assert!(open.is_none(), "an unclosed code fence");
    blocks
}

const KNOWN_TAGS: &[&str] = &["svc", "svc fragment", "sh", "toml", "json", "text"];

#[test]
fn every_svc_block_of_the_pages_passes_svc_check() {
    let dir = TempDir::new("mcp-docs");
    let mut checked = 0;
    let mut failures = Vec::new();
    for page in pages() {
        let name = page
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&page).expect("read page");
        for (info, body, line) in fenced_blocks(&text) {
            assert!(
                KNOWN_TAGS.contains(&info.as_str()),
                "{name}:{line}: unknown code fence tag {info:?} (use one of {KNOWN_TAGS:?})"
            );
            if info != "svc" {
                continue;
            }
            let file = format!("block{checked}.svc");
            dir.write(&file, &body);
            let out = svc_in(dir.path(), &["check", &file]);
            let err = stderr(&out);
            if !out.status.success() || err.contains("warning[") {
                failures.push(format!("{name}:{line}:\n{body}\n{err}"));
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "blocks failing `svc check`:\n{}",
        failures.join("\n")
    );
    assert!(checked >= 50, "only {checked} svc blocks found");
}

/// The example categories: the directories under `examples/`.
fn example_dirs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(content_dir().join("examples"))
        .expect("read examples")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// A copy of one example in a fresh directory (runs write `.svc/data` beside the entry).
fn copy_example(category: &str) -> TempDir {
    let dir = TempDir::new(&format!("mcp-ex-{category}"));
    let src = content_dir().join("examples").join(category);
    for entry in std::fs::read_dir(&src).expect("read example") {
        let path = entry.expect("dir entry").path();
        let text = std::fs::read_to_string(&path).expect("read example file");
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        dir.write(&name, &text);
    }
    dir
}

#[test]
fn every_example_directory_is_bundled() {
    let module = std::fs::read_to_string(content_dir().join("mod.rs")).expect("read mod.rs");
    let dirs = example_dirs();
    assert!(dirs.len() >= 6, "{} examples", dirs.len());
    for dir in dirs {
        let category = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        assert!(
            module.contains(&format!("\"{category}\"")),
            "examples/{category} is not listed in src/mcp/content/mod.rs"
        );
        assert!(
            dir.join("main.svc").is_file(),
            "examples/{category} has no main.svc"
        );
    }
}

#[test]
fn every_example_passes_check_and_runs() {
    for dir in example_dirs() {
        let category = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let copy = copy_example(&category);
        for entry in std::fs::read_dir(copy.path()).expect("read copy") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_some_and(|e| e == "svc") {
                let file = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let out = svc_in(copy.path(), &["check", &file]);
                assert!(
                    out.status.success() && !stderr(&out).contains("warning["),
                    "{category}/{file}: svc check failed\n{}",
                    stderr(&out)
                );
            }
        }
        let out = crate::svc()
            .current_dir(copy.path())
            .env_remove("CACHE_URL")
            .env_remove("DOCDB_URI")
            .args(["run", "--timeout", "20", "main.svc"])
            .output()
            .expect("run svc");
        assert!(
            out.status.success(),
            "{category}: svc run failed\n{}{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(
            !stdout(&out).trim().is_empty(),
            "{category}: the demo printed nothing"
        );
    }
}

#[test]
fn examples_print_their_demo_output() {
    let run = |category: &str| {
        let copy = copy_example(category);
        let out = crate::svc()
            .current_dir(copy.path())
            .env_remove("CACHE_URL")
            .args(["run", "main.svc"])
            .output()
            .expect("run svc");
        stdout(&out)
    };
    assert!(run("todo").contains("open: ['ship svc']"));
    assert!(run("social").contains("feed: ['svc walkers are neat', 'first!']"));
    assert!(run("chat-websocket").contains("2. bob: hello ann"));
    assert!(
        run("events")
            .contains("[{'item': 'apple', 'amount': 2.0}, {'item': 'pear', 'amount': 1.5}]")
    );
    assert!(run("kvstore").contains("no cache store configured"));
    assert!(run("rest-api").contains("{'books': 1, 'oldest': 1965}"));
    assert!(run("basics").contains("caught: no values"));
}

#[test]
fn served_examples_list_their_routes() {
    let routes: &[(&str, &[&str])] = &[
        (
            "todo",
            &[
                "POST /walker/add_todo",
                "POST /walker/list_todos",
                "POST /walker/complete_todo",
                "POST /walker/clear_done",
            ],
        ),
        ("social", &["POST /walker/feed", "POST /walker/profile_of"]),
        (
            "chat-websocket",
            &["WEBSOCKET /ws/chat", "POST /walker/history"],
        ),
        (
            "events",
            &["POST /function/place_order", "POST /function/invoices"],
        ),
        (
            "kvstore",
            &["POST /function/view", "POST /function/rebuild_report"],
        ),
        (
            "rest-api",
            &[
                "PUT /books/{slug}",
                "GET /books/{slug}",
                "DELETE /books/{slug}",
                "GET /robots.txt",
                "GET /walker/shelf_stats",
            ],
        ),
    ];
    for (category, expected) in routes {
        let copy = copy_example(category);
        let out = svc_in(copy.path(), &["start", "main.svc", "--faux"]);
        let text = stdout(&out);
        assert!(out.status.success(), "{category}: {}", stderr(&out));
        for route in *expected {
            assert!(text.contains(route), "{category}: no {route} in\n{text}");
        }
        // Helpers start with `_` and stay off the API.
        assert!(
            !text.contains("/function/_"),
            "{category}: a helper is served\n{text}"
        );
    }
}

#[test]
fn todo_example_serves_its_walkers() {
    let copy = copy_example("todo");
    let server = ServerGuard::start(copy.path(), &["main.svc"]);
    let added = json_call(
        server.port,
        "POST",
        "/walker/add_todo",
        None,
        &json!({"title": "from http"}),
    );
    assert_eq!(added.status, 200, "{}", added.body);
    let id = added.json()["data"]["reports"][0]["id"]
        .as_str()
        .map(str::to_string);
    let id = id.unwrap_or_else(|| panic!("no id in {}", added.body));
    let done = json_call(
        server.port,
        "POST",
        "/walker/complete_todo",
        None,
        &json!({"id": id}),
    );
    assert_eq!(
        done.json()["data"]["reports"],
        json!([true]),
        "{}",
        done.body
    );
    let listed = json_call(server.port, "POST", "/walker/list_todos", None, &json!({}));
    let reports = listed.json()["data"]["reports"].clone();
    assert_eq!(
        reports,
        json!([{"id": id, "title": "from http", "done": true}]),
        "{}",
        listed.body
    );
    let missing = json_call(server.port, "POST", "/walker/add_todo", None, &json!({}));
    assert_eq!(missing.status, 422, "{}", missing.body);
}

#[test]
fn rest_api_example_serves_custom_routes() {
    let copy = copy_example("rest-api");
    let server = ServerGuard::start(copy.path(), &["main.svc"]);
    let put = json_call(
        server.port,
        "PUT",
        "/books/dune",
        None,
        &json!({"title": "Dune", "year": 1965}),
    );
    assert_eq!(put.status, 200, "{}", put.body);
    let got = get(server.port, "/books/dune");
    assert_eq!(
        got.json()["data"]["result"]["title"],
        "Dune",
        "{}",
        got.body
    );
    let listed = get(server.port, "/books?since=1900");
    assert_eq!(
        listed.json()["data"]["result"][0]["slug"],
        "dune",
        "{}",
        listed.body
    );
    let robots = get(server.port, "/robots.txt");
    assert!(robots.body.starts_with("User-agent: *"), "{}", robots.body);
    let gone = request(server.port, "DELETE", "/books/dune", &[], None);
    assert_eq!(gone.json()["data"]["result"], true, "{}", gone.body);
}

#[test]
fn chat_example_broadcasts_over_websocket() {
    let copy = copy_example("chat-websocket");
    let server = ServerGuard::start(copy.path(), &["main.svc"]);
    let mut ann = WsClient::connect(server.port, "/ws/chat").expect("connect ann");
    let mut bob = WsClient::connect(server.port, "/ws/chat").expect("connect bob");
    ann.send_json(&json!({"user": "ann", "text": "hi bob"}));
    for client in [&mut ann, &mut bob] {
        let reply = client.recv_json();
        assert_eq!(reply["ok"], true, "{reply}");
        assert_eq!(reply["data"]["reports"][0]["text"], "hi bob", "{reply}");
    }
    let history = json_call(
        server.port,
        "POST",
        "/walker/history",
        None,
        &json!({"room": "lobby"}),
    );
    assert_eq!(
        history.json()["data"]["reports"][0][0]["user"],
        "ann",
        "{}",
        history.body
    );
}
