//! Service-to-service calls (`sv import from provider { f, W }`) with two and three real
//! `svc start` processes: providers brought up by the consumer's start (transitively),
//! `SVC_SV_<MODULE>_URL` overrides, function results, walker stubs with reports, the
//! spec's error messages (a private function, a provider error, a provider killed
//! mid-run), the caller's `Authorization` forwarded, a provider that cannot start, and `svc run` finding a provider lazily.

use crate::support::{ServerGuard, free_port, post_json};
use crate::{TempDir, stderr, stdout, svc_in};
use serde_json::{Value, json};

const PROVIDER: &str = r#"
def:pub add(a: int, b: int) -> int {
    return a + b;
}

def:pub whoami() -> str {
    return "spawned";
}

def:priv secret() -> str {
    return "s";
}

def:pub boom() -> int {
    return 1 // 0;
}

walker:pub Greet {
    has name: str;

    can go with Root entry {
        report "hi " + self.name;
        report 2;
    }
}
"#;

const CONSUMER: &str = r#"
sv import from provider { add, whoami, secret, boom, Greet }

def:pub total(x: int) -> int {
    return add(a=x, b=1) + add(x, 2);
}

def:pub who() -> str {
    return whoami();
}

def:pub greet(n: str) -> list {
    w = Greet(name=n);
    return [w.name, w.reports];
}

def:pub hidden() -> str {
    return secret();
}

def:pub crash() -> int {
    return boom();
}
"#;

fn result(port: u16, function: &str, body: &Value) -> Value {
    let r = post_json(port, &format!("/function/{function}"), &body.to_string());
    assert_eq!(r.status, 200, "{function}: {}", r.body);
    r.json()["data"]["result"].clone()
}

fn failure(port: u16, function: &str) -> String {
    let r = post_json(port, &format!("/function/{function}"), "{}");
    assert_eq!(r.status, 500, "{function}: {}", r.body);
    let v = r.json();
    assert_eq!(v["error"]["code"], json!("EXECUTION_ERROR"));
    v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Register `name` and log in: the session token.
fn sign_in(port: u16, name: &str) -> String {
    let body = json!({"identities": [{"type": "username", "value": name}],
                      "credential": {"type": "password", "password": "pw-123456"}});
    let r = crate::support::json_call(port, "POST", "/user/register", None, &body);
    assert_eq!(r.status, 201, "{}", r.body);
    let body = json!({"identity": {"type": "username", "value": name},
                      "credential": {"type": "password", "password": "pw-123456"}});
    let r = crate::support::json_call(port, "POST", "/user/login", None, &body);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]["token"]
        .as_str()
        .expect("a token")
        .to_string()
}

#[test]
fn the_consumer_brings_its_provider_up_and_calls_it() {
    let dir = TempDir::new("sv-spawn");
    dir.write("provider.svc", PROVIDER);
    dir.write("main.svc", CONSUMER);
    let server = ServerGuard::start(dir.path(), &["main.svc"]);
    let port = server.port;
    assert_eq!(result(port, "total", &json!({"x": 3})), json!(9));
    assert_eq!(result(port, "who", &json!({})), json!("spawned"));
    assert_eq!(
        result(port, "greet", &json!({"n": "bo"})),
        json!(["bo", ["hi bo", 2]])
    );
    let msg = failure(port, "hidden");
    assert!(
        msg.contains("sv-to-sv RPC 'provider.secret' failed: "),
        "{msg}"
    );
    // A signed-in caller's Authorization goes on: the private function answers (both
    // processes share the app directory's store and development JWT secret).
    let token = sign_in(port, "carol");
    let r = crate::support::json_call(port, "POST", "/function/hidden", Some(&token), &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["result"], json!("s"));
    let msg = failure(port, "crash");
    assert!(
        msg.contains("sv-to-sv RPC 'provider.boom' failed: ZeroDivisionError"),
        "{msg}"
    );
    // The provider bound the loopback in 18000-18999 and stops with the consumer.
    let out = server.output();
    assert_eq!(
        out.matches(" at http://").count(),
        1,
        "one startup line:\n{out}"
    );
    let status = server.terminate();
    assert!(status.success());
}

#[test]
fn an_environment_url_wins_over_spawning() {
    let other = TempDir::new("sv-env-provider");
    other.write(
        "provider.svc",
        &PROVIDER.replace("return \"spawned\";", "return \"manual\";"),
    );
    let provider = ServerGuard::start(other.path(), &["provider.svc"]);
    let dir = TempDir::new("sv-env");
    dir.write("provider.svc", PROVIDER);
    dir.write("main.svc", CONSUMER);
    let url = format!("http://127.0.0.1:{}", provider.port);
    let port = free_port().to_string();
    let consumer = ServerGuard::launch(
        dir.path(),
        &["main.svc", "--host", "127.0.0.1", "--port", &port],
        &[("SVC_SV_PROVIDER_URL", &url)],
    );
    assert_eq!(result(consumer.port, "who", &json!({})), json!("manual"));

    // The provider dies: a clear runtime error, quickly (retries, then the message).
    drop(provider);
    let msg = failure(consumer.port, "who");
    assert!(
        msg.contains("sv-to-sv RPC 'provider.whoami' failed: cannot connect"),
        "{msg}"
    );
}

#[test]
fn providers_come_up_transitively() {
    let dir = TempDir::new("sv-chain");
    dir.write("leaf.svc", "def:pub depth() -> int {\n    return 1;\n}\n");
    dir.write(
        "middle.svc",
        "sv import from leaf { depth }\n\ndef:pub depth2() -> int {\n    return depth() + 1;\n}\n",
    );
    dir.write(
        "main.svc",
        "sv import from middle { depth2 }\n\ndef:pub depth3() -> int {\n    return depth2() + 1;\n}\n",
    );
    let server = ServerGuard::start(dir.path(), &["main.svc"]);
    assert_eq!(result(server.port, "depth3", &json!({})), json!(3));
}

#[test]
fn a_provider_that_cannot_start_stops_the_consumer() {
    let dir = TempDir::new("sv-broken");
    dir.write("provider.svc", "def:pub broken( {\n");
    dir.write("main.svc", CONSUMER);
    let out = svc_in(
        dir.path(),
        &["start", "main.svc", "--host", "127.0.0.1", "--port", "0"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("provider 'provider'"),
        "{}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("serving main.svc"));
}

#[test]
fn svc_run_finds_providers_lazily() {
    let dir = TempDir::new("sv-run");
    dir.write("provider.svc", PROVIDER);
    let provider = ServerGuard::start(dir.path(), &["provider.svc"]);
    dir.write(
        "script.svc",
        "sv import from provider { add, Greet }\n\nwith entry {\n    print(add(a=2, b=3));\n    \
         print(Greet(name=\"x\").reports);\n}\n",
    );
    let url = format!("http://127.0.0.1:{}", provider.port);
    let out = crate::svc()
        .current_dir(dir.path())
        .args(["run", "script.svc"])
        .env("SVC_SV_PROVIDER_URL", &url)
        .output()
        .expect("run svc");
    assert_eq!(stdout(&out), "5\n['hi x', 2]\n", "{}", stderr(&out));
    let out = svc_in(dir.path(), &["run", "script.svc"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("set SVC_SV_PROVIDER_URL"),
        "{}",
        stderr(&out)
    );
}

/// A consumer killed with SIGKILL (no chance to stop its providers) does not leave them
/// running: each provider watches a pipe from its consumer and shuts down when it closes.
#[test]
fn providers_stop_when_their_consumer_is_killed() {
    let dir = TempDir::new("sv-orphan");
    dir.write("provider.svc", PROVIDER);
    dir.write("main.svc", CONSUMER);
    let server = ServerGuard::start(dir.path(), &["main.svc"]);
    assert_eq!(result(server.port, "who", &json!({})), json!("spawned"));
    let children = std::process::Command::new("pgrep")
        .args(["-P", &server.pid().to_string()])
        .output()
        .expect("pgrep");
    let pids: Vec<String> = String::from_utf8_lossy(&children.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert!(!pids.is_empty(), "the consumer started its provider");
    // Alive = listed and not a zombie (an orphan's exit may wait for a reaper).
    let alive = |pid: &String| {
        std::process::Command::new("ps")
            .args(["-o", "stat=", "-p", pid])
            .output()
            .map(|o| {
                let stat = String::from_utf8_lossy(&o.stdout);
                o.status.success() && !stat.trim().starts_with('Z')
            })
            .unwrap_or(false)
    };
    drop(server); // SIGKILL
    assert!(
        crate::support::wait_until(std::time::Duration::from_secs(30), || {
            !pids.iter().any(&alive)
        }),
        "the provider outlived its killed consumer"
    );
}

const TYPED_PROVIDER: &str = r#"
enum Color { RED = "red", GREEN = "green" }

obj Point {
    has x: int, y: int;

    def norm1() -> int {
        return abs(self.x) + abs(self.y);
    }
}

obj Segment {
    has a: Point, b: Point, color: Color = Color.RED;
}

def:pub mirror(p: Point) -> Point {
    return Point(x=-p.x, y=-p.y);
}

def:pub span(a: Point, b: Point) -> Segment {
    return Segment(a=a, b=b, color=Color.GREEN);
}

def:pub corners(n: int) -> list[Point] {
    return [Point(x=i, y=i) for i in range(n)];
}

def:pub favourite() -> Color {
    return Color.GREEN;
}
"#;

/// Objects and enums cross the boundary (spec point 4): the consumer imports the types
/// by name, passes instances as arguments, and gets instances back, nested fields and
/// lists included, methods working.
#[test]
fn objects_and_enums_cross_the_boundary() {
    let dir = TempDir::new("sv-types");
    dir.write("provider.svc", TYPED_PROVIDER);
    let provider = ServerGuard::start(dir.path(), &["provider.svc"]);
    dir.write(
        "script.svc",
        r#"sv import from provider { Point, Segment, Color, mirror, span, corners, favourite }

with entry {
    m = mirror(Point(x=3, y=-4));
    print(type(m).__name__, m.x, m.y, m.norm1());
    s = span(Point(x=1, y=2), b=m);
    print(type(s).__name__, type(s.a).__name__, s.b.x, s.color == Color.GREEN);
    print([c.x for c in corners(3)], isinstance(corners(1)[0], Point));
    print(favourite() == Color.GREEN, favourite().name);
}
"#,
    );
    let url = format!("http://127.0.0.1:{}", provider.port);
    let out = crate::svc()
        .current_dir(dir.path())
        .args(["run", "script.svc"])
        .env("SVC_SV_PROVIDER_URL", &url)
        .output()
        .expect("run svc");
    assert_eq!(
        stdout(&out),
        "Point -3 4 7\nSegment Point -3 True\n[0, 1, 2] True\nTrue GREEN\n",
        "{}",
        stderr(&out)
    );
    let check = svc_in(dir.path(), &["check", "script.svc"]);
    assert!(check.status.success(), "{}", stderr(&check));
}

/// The consumer-side controls (spec point 8): `register` / `unregister` /
/// `resolve_url`, and test clients that route calls in process, under svc's
/// `sv_client` module and the original's `jaclang.runtimelib` path.
#[test]
fn consumer_side_controls_route_calls() {
    let dir = TempDir::new("sv-controls");
    dir.write("provider.svc", PROVIDER);
    let provider = ServerGuard::start(dir.path(), &["provider.svc"]);
    let url = format!("http://127.0.0.1:{}", provider.port);
    dir.write(
        "script.svc",
        &format!(
            r#"import from jaclang.runtimelib {{ sv_client }}
import from sv_client {{ register, unregister, resolve_url }}
sv import from provider {{ add, Greet }}

obj FakeProvider {{
    has calls: list = [];

    def post(path: str, body: dict) -> dict {{
        self.calls.append(path);
        if path == "/walker/Greet" {{
            return {{"ok": True, "data": {{"result": {{"name": body["name"]}}, "reports": ["fake"]}}}};
        }}
        return {{"ok": True, "data": {{"result": body["a"] * 100 + body["b"]}}}};
    }}
}}

with entry {{
    try {{
        resolve_url("provider");
    }} except RuntimeError as e {{
        print("unregistered:", "SVC_SV_PROVIDER_URL" in str(e));
    }}
    register("provider", "{url}");
    print(resolve_url("provider") == "{url}", add(a=2, b=3));
    fake = FakeProvider();
    sv_client.register_test_client("provider", fake);
    print(add(a=2, b=3), Greet(name="z").reports, fake.calls);
    sv_client.clear_test_clients();
    print(add(a=1, b=1));
    unregister("provider");
    try {{
        add(a=1, b=1);
    }} except RuntimeError as e {{
        print(str(e).startswith("sv-to-sv RPC 'provider.add' failed:"));
    }}
    try {{
        register("provider", "ftp://x");
    }} except ValueError as e {{
        print("refused");
    }}
}}
"#
        ),
    );
    let out = svc_in(dir.path(), &["run", "script.svc"]);
    assert_eq!(
        stdout(&out),
        "unregistered: True\nTrue 5\n203 ['fake'] ['/function/add', '/walker/Greet']\n2\nTrue\nrefused\n",
        "{}",
        stderr(&out)
    );
    let check = svc_in(dir.path(), &["check", "script.svc"]);
    assert!(check.status.success(), "{}", stderr(&check));
    dir.write("bad.svc", "import from sv_client { registr }\n");
    let check = svc_in(dir.path(), &["check", "bad.svc"]);
    assert!(
        stderr(&check).contains("cannot import name 'registr' from 'sv_client'")
            || stdout(&check).contains("cannot import name 'registr' from 'sv_client'"),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );
}
