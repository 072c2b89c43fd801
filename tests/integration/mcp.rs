//! `svc mcp`: the tool-protocol server, driven by the official MCP Python SDK client
//! (PyPI `mcp`, installed by `.ci/run`) over all three transports on loopback, plus the
//! JSON-RPC envelope below the SDK (`mcp/raw.py` for HTTP, raw lines here for stdio).
//! The scenarios live in `tests/integration/mcp/client.py`; each prints `ok` or the
//! failed check.

use crate::support::free_port;
use crate::{TempDir, stderr, stdout, svc, svc_in};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/integration/mcp")
        .join(name)
}

/// A project directory with a program for `execute_command` to check.
fn project() -> TempDir {
    let dir = TempDir::new("mcp");
    std::fs::write(dir.path().join("ok.svc"), "with entry { print(\"ok\"); }\n").expect("write");
    dir
}

fn python(args: &[&str], cwd: &Path) -> (bool, String) {
    let out = Command::new("python3")
        .args(args)
        .current_dir(cwd)
        .env("NO_EMOJI", "1")
        .output()
        .expect("python3 runs (with the `mcp` package: .ci/run installs it)");
    let text = format!("{}{}", stdout(&out), stderr(&out));
    (out.status.success(), text)
}

/// `svc mcp` on an HTTP transport; stopped by PID on drop.
struct McpServer {
    child: Child,
    port: u16,
}

impl McpServer {
    fn start(dir: &Path, transport: &str) -> McpServer {
        let port = free_port();
        let child = svc()
            .current_dir(dir)
            .args([
                "mcp",
                "--transport",
                transport,
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn svc mcp");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "svc mcp did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        McpServer { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client(scenario: &str, transport: &str, target: &str, dir: &Path) {
    let (ok, text) = python(
        &[
            script("client.py").to_str().expect("utf-8 path"),
            scenario,
            transport,
            target,
            dir.to_str().expect("utf-8 path"),
        ],
        dir,
    );
    assert!(
        ok && text.contains(&format!("ok {scenario}")),
        "{scenario} over {transport}:\n{text}"
    );
}

fn binary() -> String {
    env!("CARGO_BIN_EXE_svc").to_string()
}

#[test]
fn stdio_every_tool_prompt_and_resource() {
    let dir = project();
    client("full", "stdio", &binary(), dir.path());
}

#[test]
fn sse_every_tool_prompt_and_resource() {
    let dir = project();
    let server = McpServer::start(dir.path(), "sse");
    client("full", "sse", &server.url("/sse"), dir.path());
}

#[test]
fn streamable_http_every_tool_prompt_and_resource() {
    let dir = project();
    let server = McpServer::start(dir.path(), "streamable-http");
    client("full", "streamable-http", &server.url("/mcp"), dir.path());
}

#[test]
fn the_sdk_client_in_its_default_mode_falls_back_to_the_handshake() {
    let dir = project();
    client("auto", "stdio", &binary(), dir.path());
    let server = McpServer::start(dir.path(), "streamable-http");
    client("auto", "streamable-http", &server.url("/mcp"), dir.path());
}

#[test]
fn a_slow_call_does_not_block_others_on_any_transport() {
    let dir = project();
    client("concurrency", "stdio", &binary(), dir.path());
    let sse = McpServer::start(dir.path(), "sse");
    client("concurrency", "sse", &sse.url("/sse"), dir.path());
    let http = McpServer::start(dir.path(), "streamable-http");
    client(
        "concurrency",
        "streamable-http",
        &http.url("/mcp"),
        dir.path(),
    );
}

#[test]
fn switches_of_svc_toml_remove_tools_and_resources() {
    let dir = project();
    std::fs::write(
        dir.path().join("svc.toml"),
        "[mcp]\nenable_ast = true\nenable_format = false\nenable_validate = false\n\
         enable_py2svc = false\nexpose_examples = false\nexpose_grammar = false\n\
         expose_pitfalls = false\n",
    )
    .expect("write svc.toml");
    client("switches", "stdio", &binary(), dir.path());
}

#[test]
fn sse_json_rpc_envelope() {
    let dir = project();
    let server = McpServer::start(dir.path(), "sse");
    let (ok, text) = python(
        &[
            script("raw.py").to_str().expect("utf-8"),
            "sse",
            &server.url(""),
        ],
        dir.path(),
    );
    assert!(ok && text.contains("ok"), "{text}");
}

#[test]
fn streamable_http_json_rpc_envelope() {
    let dir = project();
    let server = McpServer::start(dir.path(), "streamable-http");
    let (ok, text) = python(
        &[
            script("raw.py").to_str().expect("utf-8"),
            "streamable-http",
            &server.url(""),
        ],
        dir.path(),
    );
    assert!(ok && text.contains("ok"), "{text}");
}

#[test]
fn stdio_json_rpc_envelope() {
    let dir = project();
    let mut child = svc()
        .current_dir(dir.path())
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn svc mcp");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let mut ask = |line: &str| -> serde_json::Value {
        writeln!(input, "{line}").expect("write");
        input.flush().expect("flush");
        let mut answer = String::new();
        output.read_line(&mut answer).expect("read");
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("not JSON ({e}): {answer:?}"))
    };
    let a = ask("{oops");
    assert_eq!(a["error"]["code"], -32700, "{a}");
    assert!(a["id"].is_null());
    let a = ask(r#"{"jsonrpc":"2.0","id":"x","method":"no/such"}"#);
    assert_eq!(
        (a["id"].as_str(), a["error"]["code"].as_i64()),
        (Some("x"), Some(-32601)),
        "{a}"
    );
    let a = ask(r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#);
    assert_eq!(a["error"]["code"], -32600, "{a}");
    let a = ask(
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    assert_eq!(a["result"]["serverInfo"]["name"], "svc", "{a}");
    // A notification is not answered: the next line answers the ping after it.
    let a = ask(concat!(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#
    ));
    assert_eq!(
        a,
        serde_json::json!({"jsonrpc": "2.0", "id": 4, "result": {}})
    );
    let a = ask(r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{}}"#);
    assert_eq!(
        (a["id"].as_i64(), a["error"]["code"].as_i64()),
        (Some(5), Some(-32602)),
        "{a}"
    );
    let a = ask(concat!(
        r#"[{"jsonrpc":"2.0","id":6,"method":"prompts/list"},"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"svc://guide/pitfalls"}},"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"},"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"svc://nope"}}]"#
    ));
    let items = a
        .as_array()
        .unwrap_or_else(|| panic!("a batch answers with an array: {a}"));
    assert_eq!(items.len(), 3, "{a}");
    let by_id = |id: i64| {
        items
            .iter()
            .find(|i| i["id"] == id)
            .unwrap_or_else(|| panic!("id {id} in {a}"))
    };
    assert_eq!(
        by_id(6)["result"]["prompts"].as_array().map(Vec::len),
        Some(9)
    );
    assert!(
        by_id(7)["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );
    assert!(by_id(8)["error"]["code"].is_i64(), "{a}");
    let a = ask("[]");
    assert_eq!(a["error"]["code"], -32600, "{a}");
    // End of input ends the server cleanly, after answering what was asked.
    writeln!(input, r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"run_svc","arguments":{{"code":"with entry {{ print(9); }}"}}}}}}"#).expect("write");
    drop(input);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut output, &mut rest).expect("read");
    assert!(
        rest.contains(r#""stdout":"9\n""#),
        "answered before exit: {rest}"
    );
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
}

#[test]
fn inspect_prints_every_resource_tool_and_prompt() {
    let dir = project();
    let out = svc_in(dir.path(), &["mcp", "--inspect"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for want in [
        "Tools (18):",
        "Prompts (9):",
        "svc://grammar/spec",
        "svc://grammar/tokens",
        "svc://guide/pitfalls",
        "validate_svc",
        "execute_command",
        "write_module(name, purpose, has_impl?)",
    ] {
        assert!(text.contains(want), "{want} in:\n{text}");
    }
    assert!(
        !text.contains("get_ast"),
        "get_ast is off by default:\n{text}"
    );

    std::fs::write(
        dir.path().join("svc.toml"),
        "[mcp]\nexpose_docs = false\nenable_ast = true\n",
    )
    .expect("write");
    let text = stdout(&svc_in(dir.path(), &["mcp", "--inspect"]));
    assert!(
        text.contains("get_ast") && !text.contains("search_docs"),
        "{text}"
    );
    assert!(
        !text.contains("svc://docs/") && text.contains("svc://guide/pitfalls"),
        "{text}"
    );

    std::fs::write(dir.path().join("svc.toml"), "[mcp]\nport = \"many\"\n").expect("write");
    let out = svc_in(dir.path(), &["mcp", "--inspect"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("[mcp] port"), "{}", stderr(&out));

    let out = svc_in(dir.path(), &["mcp", "--transport", "carrier-pigeon"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_taken_port_is_a_clean_failure() {
    let dir = project();
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let port = listener.local_addr().expect("addr").port().to_string();
    let out = svc_in(
        dir.path(),
        &[
            "mcp",
            "--transport",
            "sse",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("error"), "{}", stderr(&out));
}
