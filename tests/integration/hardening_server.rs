//! Hardening of the HTTP and identity layer (issue 7), each scenario through the real
//! binary: throttles that cannot be raced, the bounded bcrypt queue and registration
//! limits, JWT `iat`/`nbf`, the generated development secret (kept 0600, reused, loopback
//! bind), private store files, `svc run` and `svc start` on one store, the CORS
//! allow-list, the one body reader (size limit and read deadline), and the svc e-mail
//! plug-in under the interpreter's stack and limits. Each test checks the server is still
//! alive afterwards.

use crate::support::{Response, ServerGuard, get, json_call, request};
use crate::{TempDir, stderr, stdout, svc_in};
use serde_json::{Value, json};
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const SECRET: &str = "hardening-tests-secret-0123456789abcdef012";

const APP: &str = r#"node Item {
    has n: int = 0;
}

def:pub add(a: int, b: int = 2) -> int {
    return a + b;
}

walker:pub count {
    can go with Root entry {
        report len([-->]);
    }
}

with entry {
    root ++> Item();
    print(len([root -->]));
}
"#;

/// `svc start app.svc` with a fixed JWT secret and `auth` as `[scale.auth]` keys.
fn serve_auth(tag: &str, auth: &str) -> (TempDir, ServerGuard) {
    let dir = app(
        tag,
        &format!("[scale.jwt]\nsecret = \"{SECRET}\"\n[scale.auth]\n{auth}"),
    );
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    (dir, server)
}

fn app(tag: &str, toml: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write("app.svc", APP);
    dir.write("svc.toml", toml);
    dir
}

fn post(port: u16, path: &str, body: &Value) -> Response {
    json_call(port, "POST", path, None, body)
}

fn register(port: u16, username: &str, password: &str) -> Response {
    post(
        port,
        "/user/register",
        &json!({"identities": [{"type": "username", "value": username}],
                "credential": {"type": "password", "password": password}}),
    )
}

fn login(port: u16, username: &str, password: &str) -> Response {
    post(
        port,
        "/user/login",
        &json!({"identity": {"type": "username", "value": username},
                "credential": {"type": "password", "password": password}}),
    )
}

/// `(user_id, token)` of a successful login.
fn login_ok(port: u16, username: &str, password: &str) -> (String, String) {
    let resp = login(port, username, password);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let d = resp.json()["data"].clone();
    (
        d["user_id"].as_str().expect("user_id").to_string(),
        d["token"].as_str().expect("token").to_string(),
    )
}

/// The error code of a failed envelope answered with `status`.
fn code(resp: &Response, status: u16) -> String {
    assert_eq!(resp.status, status, "{}", resp.body);
    let v = resp.json();
    assert_eq!(v["ok"], json!(false), "{}", resp.body);
    v["error"]["code"].as_str().unwrap_or_default().to_string()
}

fn retry_after(resp: &Response) -> u64 {
    resp.header("Retry-After")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After: {resp:?}"))
}

fn assert_alive(server: &ServerGuard) {
    assert_eq!(
        get(server.port, "/healthz").status,
        200,
        "{}",
        server.output()
    );
}

/// Run `f(i)` on `n` threads released together; the answers in thread order.
fn parallel(n: usize, f: impl Fn(usize) -> Response + Send + Sync + 'static) -> Vec<Response> {
    let f = Arc::new(f);
    let barrier = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (f, barrier) = (Arc::clone(&f), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                f(i)
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|t| t.join().expect("request thread"))
        .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// 30 parallel wrong passwords against a limit of 5: every attempt takes its slot before
/// bcrypt runs, so at most 5 are tried (401) and the rest are 429 with `Retry-After`.
/// The password-change path counts the same way.
#[test]
fn parallel_wrong_passwords_stop_at_the_limit() {
    let (_dir, server) = serve_auth(
        "hard-race",
        "bcrypt_cost = 8\n\
         login_max_failures = 5\nlogin_max_failures_per_address = 1000\n\
         register_max_per_address = 1000\n",
    );
    let port = server.port;
    assert_eq!(register(port, "ann", "pw-ann").status, 201);
    let (_, token) = login_ok(port, "ann", "pw-ann");

    let tally = |answers: &[Response], tried: u16| {
        let mut n_tried = 0;
        for r in answers {
            if r.status == tried {
                n_tried += 1;
            } else {
                assert_eq!(code(r, 429), "RATE_LIMITED");
                assert!(retry_after(r) >= 1);
            }
        }
        n_tried
    };
    let answers = parallel(30, move |_| login(port, "ann", "wrong"));
    let tried = tally(&answers, 401);
    assert!(
        (1..=5).contains(&tried),
        "{tried} wrong passwords reached bcrypt (limit 5)"
    );
    // The account is locked now, even for the right password.
    assert_eq!(code(&login(port, "ann", "pw-ann"), 429), "RATE_LIMITED");

    let token = Arc::new(token);
    let answers = parallel(30, move |_| {
        json_call(
            port,
            "PUT",
            "/user/password",
            Some(&token),
            &json!({"current_password": "wrong", "new_password": "x"}),
        )
    });
    let tried = tally(&answers, 400);
    assert!(
        (1..=5).contains(&tried),
        "{tried} wrong current passwords reached bcrypt (limit 5)"
    );
    assert_alive(&server);
}

#[test]
fn parallel_right_passwords_are_never_throttled() {
    let (_dir, server) = serve_auth(
        "hard-right",
        "bcrypt_cost = 6\n\
         login_max_failures = 5\nlogin_max_failures_per_address = 5\n",
    );
    let port = server.port;
    assert_eq!(register(port, "bo", "pw-bo").status, 201);
    // More parallel logins than either limit: attempts in flight are waited for, and a
    // success gives its slot back, so none is refused.
    let answers = parallel(24, move |_| login(port, "bo", "pw-bo"));
    for r in &answers {
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert_alive(&server);
}

/// `[scale.auth] register_max_per_address`: the fourth registration from one address
/// within the window is 429 with `Retry-After`.
#[test]
fn registrations_are_limited_per_address() {
    let (_dir, server) = serve_auth(
        "hard-register",
        "bcrypt_cost = 4\n\
         register_max_per_address = 3\nregister_window_seconds = 600\n",
    );
    let port = server.port;
    for name in ["r1", "r2", "r3"] {
        assert_eq!(register(port, name, "pw").status, 201);
    }
    let resp = register(port, "r4", "pw");
    assert_eq!(code(&resp, 429), "RATE_LIMITED");
    assert!((590..=600).contains(&retry_after(&resp)), "{resp:?}");
    // Refused requests that never reach bcrypt do not count: a taken name is still 409.
    assert_eq!(code(&register(port, "r1", "pw"), 409), "IDENTITY_TAKEN");
    assert_alive(&server);
}

/// `[scale.auth] bcrypt_queue_capacity`: with one core's worth of slots busy and the
/// line full, a registration is answered at once with 503 and `Retry-After`.
#[test]
fn the_bcrypt_queue_is_bounded() {
    let (_dir, server) = serve_auth(
        "hard-queue",
        "bcrypt_cost = 12\n\
         bcrypt_queue_capacity = 1\nregister_max_per_address = 1000\n",
    );
    let port = server.port;
    // One slot per core (the server sees the cores this process sees) plus one place in
    // line: the rest of a simultaneous burst has nowhere to wait.
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let n = cores + 1 + 8;
    let answers = parallel(n, move |i| register(port, &format!("q{i}"), "pw"));
    let mut busy = 0;
    for r in &answers {
        if r.status == 201 {
            continue;
        }
        assert_eq!(code(r, 503), "SERVICE_UNAVAILABLE");
        assert_eq!(retry_after(r), 1);
        busy += 1;
    }
    assert!(
        busy >= 1,
        "{n} parallel hashes at cost 12 never filled the line"
    );
    assert!(busy < n, "nothing was hashed");
    assert_alive(&server);
}

/// A token is refused when its `iat` or `nbf` lies in the future beyond
/// `[scale.jwt] clock_skew_seconds` (60 by default); within the skew it is accepted.
#[test]
fn future_iat_and_nbf_are_refused() {
    let (_dir, server) = serve_auth("hard-jwt", "bcrypt_cost = 4\n");
    let port = server.port;
    assert_eq!(register(port, "jo", "pw-jo").status, 201);
    let (user_id, _) = login_ok(port, "jo", "pw-jo");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let forge = |iat: i64, nbf: Option<i64>| {
        let mut claims = json!({"sub": user_id, "user_id": user_id, "role": "user",
                                "iat": iat, "exp": now + 3600});
        if let Some(nbf) = nbf {
            claims["nbf"] = json!(nbf);
        }
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
        )
        .expect("signed")
    };
    let me = |token: &str| {
        let auth = format!("Bearer {token}");
        request(port, "GET", "/user/me", &[("Authorization", &auth)], None)
    };
    assert_eq!(me(&forge(now, None)).status, 200);
    assert_eq!(me(&forge(now + 30, None)).status, 200, "within the skew");
    assert_eq!(code(&me(&forge(now + 3600, None)), 401), "UNAUTHORIZED");
    assert_eq!(
        code(&me(&forge(now, Some(now + 3600))), 401),
        "UNAUTHORIZED"
    );
    assert_eq!(me(&forge(now - 60, Some(now - 30))).status, 200);
    assert_alive(&server);
}

/// No JWT secret configured: a random secret is generated into `.svc/data/jwt_secret`
/// (0600, directory 0700) and reused by the next start, with a warning; the server binds
/// 127.0.0.1 unless a host is set explicitly. Store files are 0600. Another app gets
/// another secret (nothing built in).
#[test]
fn generated_secret_is_private_reused_and_binds_loopback() {
    let dir = app("hard-secret", "[scale.auth]\nbcrypt_cost = 4\n");
    let start = || ServerGuard::launch(dir.path(), &["app.svc", "--port", "0"], &[]);
    let server = start();
    assert_eq!(server.host, "127.0.0.1", "{}", server.output());
    let err = server.stderr();
    for needle in [
        "DEVELOPMENT",
        "JWT_SECRET",
        "replicas",
        "jwt_secret",
        "127.0.0.1",
    ] {
        assert!(err.contains(needle), "warning lacks {needle:?}:\n{err}");
    }
    let port = server.port;
    assert_eq!(register(port, "sam", "pw-sam").status, 201);
    let (_, token) = login_ok(port, "sam", "pw-sam");
    let data = dir.path().join(".svc/data");
    let secret = std::fs::read_to_string(data.join("jwt_secret")).expect("secret kept");
    assert!(secret.trim().len() >= 43, "{secret:?}");
    assert_eq!(mode(&data.join("jwt_secret")), 0o600);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&dir.path().join(".svc")), 0o700);
    for file in [
        "anchor_store.db",
        "anchor_store.db-wal",
        "anchor_store.db-shm",
    ] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
    let me = |port: u16, token: &str| {
        let auth = format!("Bearer {token}");
        request(port, "GET", "/user/me", &[("Authorization", &auth)], None).status
    };
    assert_eq!(me(port, &token), 200);
    assert!(server.terminate().success());

    // The next start reuses the secret: the token still works.
    let server = start();
    assert_eq!(me(server.port, &token), 200, "{}", server.output());
    drop(server);

    // Another app has another secret.
    let other = app("hard-secret-2", "[scale.auth]\nbcrypt_cost = 4\n");
    let server = ServerGuard::launch(other.path(), &["app.svc", "--port", "0"], &[]);
    assert_eq!(me(server.port, &token), 401);
    drop(server);

    // An explicit host is kept, and the warning says so.
    let server = ServerGuard::launch(
        dir.path(),
        &["app.svc", "--port", "0", "--host", "0.0.0.0"],
        &[],
    );
    assert_eq!(server.host, "0.0.0.0", "{}", server.output());
    assert!(
        server.stderr().contains("binding 0.0.0.0 as configured"),
        "{}",
        server.output()
    );
    assert_alive(&server);
}

/// `--profile prod` refuses the `log` mail provider (it writes tokens to the log).
#[test]
fn prod_profile_refuses_the_log_mailer() {
    let dir = app("hard-prod-log", "");
    dir.write(
        "svc.prod.toml",
        &format!(
            "[scale.jwt]\nsecret = \"{SECRET}\"\n[scale.emailer]\nprovider = \"log\"\n\
             from_address = \"noreply@app.test\"\n"
        ),
    );
    // Run with a deadline: a server that does start must not hang the test.
    let mut child = crate::svc()
        .current_dir(dir.path())
        .args(["start", "app.svc", "--profile", "prod", "--port", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn svc start");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("svc start --profile prod with the `log` mailer did not refuse to start");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut err);
    }
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("`log`") && err.contains("prod"), "{err}");
}

/// `svc run` seeds the store `[scale.database] shelf_db_path` names (as `svc start`
/// does), not the default one.
#[test]
fn svc_run_and_start_share_the_configured_store() {
    let toml = format!(
        "[scale.jwt]\nsecret = \"{SECRET}\"\n[scale.database]\nshelf_db_path = \"state/app.db\"\n"
    );
    let dir = app("hard-run-path", &toml);
    let out = svc_in(dir.path(), &["run", "app.svc"]);
    assert_eq!(stdout(&out), "1\n", "{}", stderr(&out));
    let out = svc_in(dir.path(), &["run", "app.svc"]);
    assert_eq!(stdout(&out), "2\n", "{}", stderr(&out));
    assert!(dir.path().join("state/app.db").is_file());
    assert_eq!(mode(&dir.path().join("state/app.db")), 0o600);
    assert!(!dir.path().join(".svc/data/anchor_store.db").exists());
    // `svc start` imports the app: its `with entry` adds a third item to the same store.
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    let resp = post(server.port, "/walker/count", &json!({}));
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.json()["data"]["reports"], json!([3]));
    // The environment variable moves it the same way for both.
    let out = crate::svc()
        .current_dir(dir.path())
        .env("SVC_SHELF_DB_PATH", "elsewhere.db")
        .args(["run", "app.svc"])
        .output()
        .expect("svc run");
    assert_eq!(stdout(&out), "1\n", "{}", stderr(&out));
    assert!(dir.path().join("elsewhere.db").is_file());
    assert_alive(&server);
}

fn cors_request(port: u16, method: &str, origin: &str) -> Response {
    request(
        port,
        method,
        "/function/add",
        &[
            ("Origin", origin),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type"),
            ("Content-Type", "application/json"),
        ],
        (method == "POST").then_some(&br#"{"a": 1}"#[..]),
    )
}

/// `[scale.server] cors_origins`: `*` never with credentials; listed origins echoed with
/// credentials and `Vary: Origin`; others get nothing; `[]` disables CORS.
#[test]
fn cors_follows_the_allow_list() {
    let secret = format!("[scale.jwt]\nsecret = \"{SECRET}\"\n");
    // Default: any origin, no credentials.
    let dir = app("hard-cors-any", &secret);
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    for method in ["POST", "OPTIONS"] {
        let r = cors_request(server.port, method, "https://evil.example");
        assert_eq!(r.header("access-control-allow-origin"), Some("*"), "{r:?}");
        assert_eq!(r.header("access-control-allow-credentials"), None, "{r:?}");
    }
    drop(server);

    let dir = app(
        "hard-cors-list",
        &format!(
            "{secret}[scale.server]\ncors_origins = [\"https://app.example\", \"http://localhost:3000\"]\n"
        ),
    );
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    for method in ["POST", "OPTIONS"] {
        let r = cors_request(server.port, method, "https://app.example");
        assert_eq!(
            r.header("access-control-allow-origin"),
            Some("https://app.example"),
            "{r:?}"
        );
        assert_eq!(
            r.header("access-control-allow-credentials"),
            Some("true"),
            "{r:?}"
        );
        assert!(
            r.headers
                .iter()
                .any(|(k, v)| k.eq_ignore_ascii_case("vary") && v.contains("Origin")),
            "{r:?}"
        );
        let r = cors_request(server.port, method, "https://evil.example");
        assert!(
            r.headers
                .iter()
                .all(|(k, _)| !k.to_ascii_lowercase().starts_with("access-control-")),
            "{r:?}"
        );
    }
    let r = cors_request(server.port, "OPTIONS", "https://app.example");
    assert!(
        r.header("access-control-allow-methods")
            .is_some_and(|m| m.contains("POST")),
        "{r:?}"
    );
    drop(server);

    let dir = app(
        "hard-cors-off",
        &format!("{secret}[scale.server]\ncors_origins = []\n"),
    );
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    for method in ["POST", "OPTIONS"] {
        let r = cors_request(server.port, method, "https://app.example");
        assert!(
            r.headers
                .iter()
                .all(|(k, _)| !k.to_ascii_lowercase().starts_with("access-control-")),
            "{r:?}"
        );
    }
    assert_alive(&server);
}

/// Send the head and part of a body, then stall: the answer (read within 20 s).
fn stalled_request(port: u16, path: &str) -> (Response, Duration) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"identity\": "
    );
    let started = Instant::now();
    stream.write_all(head.as_bytes()).expect("send head");
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    // The answer ends with its body (`Connection: close` after a timeout, or the length).
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) => panic!("no answer to a stalled body ({e}): {raw:?}"),
        }
        let text = String::from_utf8_lossy(&raw);
        if let Some((head, body)) = text.split_once("\r\n\r\n")
            && let Some(len) = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_string())
                })
                .and_then(|v| v.parse::<usize>().ok())
            && body.len() >= len
        {
            break;
        }
    }
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let resp = Response {
        status,
        headers,
        body: body.to_string(),
    };
    (resp, elapsed)
}

/// One body reader for every route: `max_body_bytes` applies to `/user/*` (413), and a
/// body that stalls past `body_read_timeout_seconds` is 408 `REQUEST_TIMEOUT`, on the
/// identity routes and the generated ones alike.
#[test]
fn one_body_reader_with_size_limit_and_deadline() {
    let (_dir, server) = serve_auth(
        "hard-body",
        "bcrypt_cost = 4\n\
         [scale.server]\nmax_body_bytes = 256\nbody_read_timeout_seconds = 1\n",
    );
    let port = server.port;
    let big = json!({"identities": [{"type": "username", "value": "big"}],
                     "credential": {"type": "password", "password": "pw"},
                     "profile": {"note": "x".repeat(300)}});
    assert_eq!(
        code(&post(port, "/user/register", &big), 413),
        "PAYLOAD_TOO_LARGE"
    );
    assert_eq!(register(port, "small", "pw").status, 201);
    for path in ["/user/login", "/function/add"] {
        let (resp, elapsed) = stalled_request(port, path);
        assert_eq!(code(&resp, 408), "REQUEST_TIMEOUT", "{path}");
        assert!(
            elapsed >= Duration::from_millis(900),
            "{path}: answered after {elapsed:?}, before the deadline"
        );
    }
    assert_alive(&server);
}

/// The e-mail plug-in written in svc runs with the interpreter's stack and limits: deep
/// recursion in `is_ready()` is a clean `RecursionError` (e-mail disabled, logged), not
/// a native stack overflow that takes the server down.
#[test]
fn svc_emailer_runs_with_the_interpreter_stack_and_limits() {
    const DEEP: &str = r#"def down(n: int) -> int {
    if n == 0 {
        return 0;
    }
    return 1 + down(n - 1);
}

obj Deep {
    def send_email(to_addr: str, subject: str, body_text: str, body_html: str | None = None,
                   from_addr: str | None = None) -> bool {
        return True;
    }

    def is_ready() -> bool {
        return down(100000) > 0;
    }
}
"#;
    let toml = format!(
        "[scale.jwt]\nsecret = \"{SECRET}\"\n[scale.auth]\nbcrypt_cost = 4\n\
         [scale.emailer]\nprovider = \"mail.deep:Deep\"\nfrom_address = \"noreply@app.test\"\n"
    );
    let dir = app("hard-svcmail", &toml);
    std::fs::create_dir_all(dir.path().join("mail")).expect("mail dir");
    dir.write("mail/deep.svc", DEEP);
    let server = ServerGuard::start(dir.path(), &["app.svc"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server.stderr().contains("e-mail is disabled") {
        assert!(Instant::now() < deadline, "{}", server.output());
        std::thread::sleep(Duration::from_millis(20));
    }
    let err = server.stderr();
    assert!(err.contains("RecursionError"), "{err}");
    assert_eq!(register(server.port, "mo", "pw-mo").status, 201);
    let (_, token) = login_ok(server.port, "mo", "pw-mo");
    let resp = json_call(
        server.port,
        "POST",
        "/user/send-verification",
        Some(&token),
        &json!({"identity": {"type": "email", "value": "mo@mail.test"}}),
    );
    assert_eq!(code(&resp, 503), "EMAIL_DISABLED");
    assert_alive(&server);
}
