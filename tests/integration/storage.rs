//! The `store()` builtin through the public surface: `svc run` scripts and `svc start`
//! over HTTP, with the local backend (files under the base path) and the object backend
//! against a real S3-compatible server (`moto_server`, started on a free loopback port
//! and killed by PID; skipped with a message when it is not installed — `.ci/run`
//! installs it).

use crate::support::{ServerGuard, free_port, post_json, request, wait_until};
use crate::{TempDir, stderr, stdout, svc};
use serde_json::{Value, json};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// `svc run main.svc` in `dir` with `env`.
fn run(dir: &Path, script: &str, env: &[(&str, &str)]) -> Output {
    std::fs::write(dir.join("main.svc"), script).expect("write script");
    svc()
        .current_dir(dir)
        .args(["run", "main.svc"])
        .envs(env.iter().copied())
        .output()
        .expect("spawn svc")
}

/// Run and expect success; its stdout.
fn run_ok(dir: &Path, script: &str, env: &[(&str, &str)]) -> String {
    let out = run(dir, script, env);
    assert!(
        out.status.success(),
        "svc run failed\n--- stdout\n{}--- stderr\n{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

/// Every method on one instance; the same script serves both backends (only the
/// `get_url` line differs, so it is printed by the callers' own checks).
const EVERY_METHOD: &str = r#"
with entry {
    s = store();
    print("backend", s.backend);
    print("upload", s.upload({"filename": "a.txt", "content": "hello"}, "docs//./a.txt"));
    print("upload64", s.upload({"content": "aGk=", "encoding": "base64"}, "docs/sub/b.txt", {"owner": "ann"}));
    print("exists", s.exists("docs/a.txt"), s.exists("docs"), s.exists("nope.txt"));
    print("download", s.download("docs/a.txt"), s.download("docs/sub/b.txt"));
    print("decode", s.download("docs/a.txt").decode(), type(s.download("docs/a.txt")).__name__);
    print("list", s.list_files("docs"));
    print("list_rec", s.list_files("docs", recursive=True));
    print("list_root", s.list_files(), s.list_files(prefix="", recursive=True));
    m = s.get_metadata("docs/a.txt");
    print("meta", m["size"], m["is_dir"], m["name"], sorted(m.keys()));
    print("meta_time", m["modified"][:2], m["modified"][4], "T" in m["modified"]);
    print("copy", s.copy("docs/a.txt", "c.txt"), s.download("c.txt"), s.copy("nope", "x"));
    print("move", s.move("c.txt", "moved/c.txt"), s.exists("c.txt"), s.download("moved/c.txt"), s.move("c.txt", "y"));
    print("to_dest", s.download("docs/a.txt", "out/a-copy.txt"));
    print("delete", s.delete("docs/a.txt"), s.delete("docs/a.txt"), s.exists("docs/a.txt"));
    print("delete_dir", s.delete("docs"), s.exists("docs/sub/b.txt"));
    print("left", s.list_files("moved", recursive=True));
    try { s.download("gone.txt"); } except FileNotFoundError as e { print("missing", e); }
    try { s.get_metadata("gone.txt"); } except FileNotFoundError as e { print("missing_meta", e); }
    every_byte = bytes(range(256));
    print("binary_up", s.upload({"content": every_byte}, "bin/all.bin"));
    got = s.download("bin/all.bin");
    print("binary", got == every_byte, len(got), got[0], got[127], got[128], got[255], got[-2:]);
    print("binary_size", s.get_metadata("bin/all.bin")["size"]);
}
"#;

const EVERY_METHOD_OUT: &str = "\
backend BACKEND
upload docs/a.txt
upload64 docs/sub/b.txt
exists True True False
download b'hello' b'hi'
decode hello bytes
list ['docs/a.txt']
list_rec ['docs/a.txt', 'docs/sub/b.txt']
list_root [] ['docs/a.txt', 'docs/sub/b.txt']
meta 5 False a.txt ['created', 'is_dir', 'modified', 'name', 'size']
meta_time 20 - True
copy True b'hello' False
move True False b'hello' False
to_dest None
delete True False False
delete_dir True False
left ['moved/c.txt']
missing no such file in storage: 'gone.txt'
missing_meta no such file in storage: 'gone.txt'
binary_up bin/all.bin
binary True 256 0 127 128 255 b'\\xfe\\xff'
binary_size 256
";

#[test]
fn local_backend_every_method() {
    let dir = TempDir::new("storage-local");
    let out = run_ok(dir.path(), EVERY_METHOD, &[]);
    assert_eq!(out, EVERY_METHOD_OUT.replace("BACKEND", "local"));
    // The files are where the spec's default puts them: `./storage` of the app.
    let base = dir.path().join("storage");
    assert_eq!(
        std::fs::read_to_string(base.join("moved/c.txt")).ok(),
        Some("hello".to_string())
    );
    assert!(!base.join("docs").exists());
    assert_eq!(
        std::fs::read_to_string(base.join("out/a-copy.txt")).ok(),
        Some("hello".to_string())
    );
    assert_eq!(
        std::fs::read(base.join("bin/all.bin")).ok(),
        Some((0..=255).collect::<Vec<u8>>())
    );
}

#[test]
fn local_get_url_is_a_file_uri_of_the_absolute_path() {
    let dir = TempDir::new("storage-url");
    let out = run_ok(
        dir.path(),
        r#"with entry { s = store(); s.upload({"content": "x"}, "a b/f.txt"); print(s.get_url("a b/f.txt")); print(s.get_url("a b/f.txt", expires_in=5)); }"#,
        &[],
    );
    let base = std::fs::canonicalize(dir.path().join("storage")).expect("base exists");
    let uri = format!("file://{}/a%20b/f.txt", base.display());
    assert_eq!(out, format!("{uri}\n{uri}\n"));
}

#[test]
fn upload_from_a_local_path_of_the_machine() {
    let dir = TempDir::new("storage-path");
    std::fs::write(dir.path().join("src.txt"), "from the app dir").expect("write");
    let elsewhere = TempDir::new("storage-path-abs");
    let absolute = elsewhere.path().join("abs.txt");
    std::fs::write(&absolute, "from anywhere").expect("write");
    let code = r#"
with entry {
    s = store();
    print(s.upload("src.txt", "dst.txt"), s.download("dst.txt").decode());
    print(s.upload("ABS", "in/abs.txt"), s.download("in/abs.txt").decode());
    try { s.upload("missing.txt", "x.txt"); } except FileNotFoundError as e { print("missing"); }
    try { s.upload(42, "x.txt"); } except TypeError as e { print("type", e); }
}
"#
    .replace("ABS", &absolute.display().to_string());
    let out = run_ok(dir.path(), &code, &[]);
    assert_eq!(
        out,
        "dst.txt from the app dir\nin/abs.txt from anywhere\nmissing\n\
         type upload source must be a path (str) or a file object, not int\n"
    );
}

#[test]
fn paths_cannot_escape_the_base() {
    let dir = TempDir::new("storage-escape");
    let outside = dir.path().join("secret.txt");
    std::fs::write(&outside, "top secret").expect("write");
    std::fs::create_dir_all(dir.path().join("storage")).expect("mkdir");
    std::os::unix::fs::symlink(dir.path(), dir.path().join("storage/link")).expect("symlink");
    std::os::unix::fs::symlink(&outside, dir.path().join("storage/file-link")).expect("symlink");
    let out = run_ok(
        dir.path(),
        r#"
with entry {
    s = store();
    for p in ["../secret.txt", "a/../../secret.txt", "/etc/passwd", "link/secret.txt", "file-link"] {
        try { print(s.download(p)); } except PermissionError as e { print("refused", e); }
    }
    for p in ["", "a\\b"] {
        try { s.upload({"content": "x"}, p); } except ValueError as e { print("bad", e); }
    }
    try { s.upload({"content": "x"}, "link/new.txt"); } except PermissionError as e { print("refused write"); }
    try { s.list_files("../"); } except PermissionError as e { print("refused list"); }
    try { s.delete(""); } except ValueError as e { print("refused delete of the base"); }
    try { store(base_path="../elsewhere"); } except PermissionError as e { print("refused base", e); }
    try { store(base_path="/tmp"); } except PermissionError as e { print("refused absolute base"); }
    try { store(base_path=".svc/data"); } except PermissionError as e { print("refused data dir"); }
    s.base_path = "/";
    try { s.download("etc/passwd"); } except PermissionError as e { print("refused rewrite", e); }
}
"#,
        &[],
    );
    assert_eq!(
        out,
        "refused storage path '../secret.txt' contains '..': it may not leave the storage base\n\
         refused storage path 'a/../../secret.txt' contains '..': it may not leave the storage base\n\
         refused storage path '/etc/passwd' is absolute: paths are relative to the storage base\n\
         refused storage path 'link/secret.txt' goes through a symbolic link\n\
         refused storage path 'file-link' goes through a symbolic link\n\
         bad storage path '' names no file\n\
         bad storage path 'a\\b' contains a backslash: use '/' between segments\n\
         refused write\n\
         refused list\n\
         refused delete of the base\n\
         refused base store(base_path=...): storage path '../elsewhere' contains '..': it may not leave the storage base\n\
         refused absolute base\n\
         refused data dir\n\
         refused rewrite this storage instance's base_path was changed: use store() to open another\n"
    );
    assert_eq!(
        std::fs::read_to_string(&outside).ok(),
        Some("top secret".into())
    );
    assert!(!dir.path().join("new.txt").exists());
}

#[test]
fn object_sizes_are_bounded() {
    let dir = TempDir::new("storage-size");
    std::fs::write(
        dir.path().join("svc.toml"),
        "[storage]\nmax_object_bytes = 10\n",
    )
    .expect("write config");
    std::fs::create_dir_all(dir.path().join("storage")).expect("mkdir");
    std::fs::write(dir.path().join("storage/big.txt"), "x".repeat(11)).expect("write");
    let out = run_ok(
        dir.path(),
        r#"
with entry {
    s = store();
    print(s.upload({"content": "0123456789"}, "ten.txt"), s.download("ten.txt"));
    try { s.upload({"content": "0123456789A"}, "eleven.txt"); } except ValueError as e { print(e); }
    try { s.download("big.txt"); } except ValueError as e { print(e); }
    try { s.copy("big.txt", "big2.txt"); } except ValueError as e { print("copy refused"); }
    print(s.exists("eleven.txt"), s.exists("big2.txt"));
}
"#,
        &[],
    );
    assert_eq!(
        out,
        "ten.txt b'0123456789'\n\
         object of 11 bytes is over the limit of 10 bytes ([storage] max_object_bytes)\n\
         object of 11 bytes is over the limit of 10 bytes ([storage] max_object_bytes)\n\
         copy refused\n\
         False False\n"
    );
}

#[test]
fn download_without_a_destination_is_the_exact_bytes() {
    let dir = TempDir::new("storage-binary");
    let out = run_ok(
        dir.path(),
        r#"
with entry {
    s = store();
    s.upload({"content": "//8A", "encoding": "base64"}, "bin");
    b = s.download("bin");
    print(type(b).__name__, b, len(b), b[0], b[1], b[2], b == b"\xff\xff\x00");
    try { b.decode(); } except UnicodeDecodeError as e { print("not text"); }
    print(s.download("bin", "copy.bin"), s.get_metadata("copy.bin")["size"]);
    s.upload({"content": "h\u00e9llo \u2713"}, "utf8.txt");
    t = s.download("utf8.txt");
    print(len(t), t.decode(), t.decode() == "h\u00e9llo \u2713");
    # A str content is the text itself, even when it reads as base64 or as a bytes repr.
    s.upload({"content": "aGk="}, "plain.txt");
    s.upload({"content": "b'x'"}, "repr.txt");
    print(s.download("plain.txt"), s.download("repr.txt"), s.download("repr.txt").decode());
    s.upload({"content": b""}, "empty");
    print(s.download("empty"), len(s.download("empty")));
    # A downloaded value goes back up unchanged.
    s.upload({"filename": "again.bin", "content": s.download("bin")}, "again.bin");
    print(s.download("again.bin") == b);
    try { s.upload({"content": b"aGk=", "encoding": "base64"}, "x"); } except ValueError as e { print(e); }
    try { s.upload(b"raw", "x"); } except TypeError as e { print(e); }
    print(s.exists("x"));
}
"#,
        &[],
    );
    assert_eq!(
        out,
        "bytes b'\\xff\\xff\\x00' 3 255 255 0 True\n\
         not text\n\
         None 3\n\
         10 h\u{e9}llo \u{2713} True\n\
         b'aGk=' b\"b'x'\" b'x'\n\
         b'' 0\n\
         True\n\
         upload: a file object whose 'content' is bytes takes no 'encoding'\n\
         a 'bytes' cannot be passed to a storage method\n\
         False\n"
    );
    let base = dir.path().join("storage");
    for name in ["bin", "copy.bin", "again.bin"] {
        assert_eq!(
            std::fs::read(base.join(name)).ok(),
            Some(vec![0xff, 0xff, 0x00]),
            "{name}"
        );
    }
    assert_eq!(
        std::fs::read(base.join("plain.txt")).ok(),
        Some(b"aGk=".to_vec())
    );
}

/// Where `store()` puts a file under each layer of configuration.
const WHERE: &str = r#"
with entry {
    s = store();
    s.upload({"content": "x"}, "f.txt");
    print(s.base_path.endswith("/" + BASE), s.create_dirs);
}
"#;

fn where_file(dir: &Path, base: &str, env: &[(&str, &str)]) -> String {
    run_ok(dir, &WHERE.replace("BASE", &format!("{base:?}")), env)
}

#[test]
fn configuration_precedence() {
    let dir = TempDir::new("storage-config");
    let d = dir.path();
    // Default: ./storage of the app.
    assert_eq!(where_file(d, "storage", &[]), "True True\n");
    assert!(d.join("storage/f.txt").is_file());
    // svc.toml `[storage]`, then `[scale.storage]` over it.
    std::fs::write(d.join("svc.toml"), "[storage]\nbase_path = \"files\"\n").expect("toml");
    assert_eq!(where_file(d, "files", &[]), "True True\n");
    assert!(d.join("files/f.txt").is_file());
    std::fs::write(
        d.join("svc.toml"),
        "[storage]\nbase_path = \"files\"\n[scale.storage]\nbase_path = \"scaled\"\n",
    )
    .expect("toml");
    assert_eq!(where_file(d, "scaled", &[]), "True True\n");
    // The environment beats the file.
    assert_eq!(
        where_file(d, "from-env", &[("SVC_STORAGE_PATH", "from-env")]),
        "True True\n"
    );
    assert!(d.join("from-env/f.txt").is_file());
    // An explicit argument beats all of them.
    let out = run_ok(
        d,
        r#"with entry { s = store(base_path="mine", create_dirs=True); s.upload({"content": "x"}, "f.txt"); print(s.base_path.endswith("/mine")); }"#,
        &[("SVC_STORAGE_PATH", "from-env")],
    );
    assert_eq!(out, "True\n");
    assert!(d.join("mine/f.txt").is_file());
    // create_dirs from the environment: false means a missing base is an error.
    let out = run(
        d,
        r#"with entry { try { store(base_path="absent"); } except FileNotFoundError as e { print("no dir"); } s = store(base_path="absent", create_dirs=True); print(s.create_dirs); }"#,
        &[("SVC_STORAGE_CREATE_DIRS", "false")],
    );
    assert_eq!(stdout(&out), "no dir\nTrue\n", "{}", stderr(&out));
    // A bad value names its variable or key.
    let out = run(d, WHERE, &[("SVC_STORAGE_TYPE", "cloud")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("SVC_STORAGE_TYPE: `cloud` is not `local` or `object`"),
        "{}",
        stderr(&out)
    );
    std::fs::write(d.join("svc.toml"), "[storage]\ntype = \"object\"\n").expect("toml");
    let out = run(d, WHERE, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no bucket is configured"),
        "{}",
        stderr(&out)
    );
}

const FACTORY: &str = r#"
with entry {
    d = StorageFactory.get_default();
    print(d.backend, d.base_path.endswith("/storage"));
    l = StorageFactory.create("local", {"base_path": "loc", "create_dirs": True});
    print(l.backend, l.base_path.endswith("/loc"), l.upload({"content": "x"}, "a.txt"));
    try { o = StorageFactory.create("object"); print(o.backend, o.upload({"content": "o"}, "o.txt"), o.exists("o.txt")); } except ValueError as e { print(e); }
    try { StorageFactory.create("local", {"endpoint_url": "http://10.0.0.1"}); } except ValueError as e { print(e); }
    try { StorageFactory.create("cloud"); } except ValueError as e { print(e); }
}
"#;

#[test]
fn storage_factory_create_and_get_default() {
    let dir = TempDir::new("storage-factory");
    let out = run_ok(dir.path(), FACTORY, &[]);
    assert_eq!(
        out,
        "local True\n\
         local True a.txt\n\
         object storage is not configured ([storage] type = \"object\" and a bucket)\n\
         storage config key 'endpoint_url' comes from the configuration ([storage] in svc.toml or SVC_STORAGE_*), not from svc code\n\
         unknown storage type 'cloud' (local or object)\n"
    );
    assert!(dir.path().join("loc/a.txt").is_file());
}

#[test]
fn store_is_unavailable_without_a_store() {
    let dir = TempDir::new("storage-nostore");
    std::fs::write(
        dir.path().join("main.svc"),
        "with entry { try { store(); } except RuntimeError as e { print(e); } }",
    )
    .expect("write");
    let out = svc()
        .current_dir(dir.path())
        .args(["run", "--no-store", "main.svc"])
        .output()
        .expect("spawn");
    assert_eq!(
        stdout(&out),
        "store() is not available here (no storage in this host)\n"
    );
}

const SERVED_APP: &str = r#"
walker:pub save_file {
    has f: UploadFile;
    has path: str;

    can go with Root entry {
        s = store();
        report s.upload(self.f, self.path);
        report s.list_files(recursive=True);
    }
}

def:pub read_file(path: str) -> bytes {
    return store().download(path);
}

def:pub read_text(path: str) -> str {
    return store().download(path).decode();
}

@restspec(envelope=False)
def:pub read_raw(path: str) -> bytes {
    return store().download(path);
}

def:pub url_of(path: str) -> str {
    return store().get_url(path, expires_in=120);
}

def:pub sneak(path: str) -> str {
    try { return store().download(path); } except PermissionError as e { return "refused"; }
}
"#;

fn result(resp: &crate::support::Response) -> Value {
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["data"]["result"].clone()
}

#[test]
fn served_calls_use_the_local_backend() {
    let dir = TempDir::new("storage-served");
    std::fs::write(dir.path().join("app.svc"), SERVED_APP).expect("write app");
    let s = ServerGuard::start(dir.path(), &["app.svc"]);
    let body = json!({"f": {"filename": "n.txt", "content": "served"}, "path": "up/n.txt"});
    let resp = post_json(s.port, "/walker/save_file", &body.to_string());
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.json()["data"]["reports"],
        json!(["up/n.txt", ["up/n.txt"]])
    );
    // A `bytes` result reaches the client as its repr text, in the envelope or raw
    // (service spec: binary returns are stringified); `.decode()` gives the text.
    assert_eq!(
        result(&post_json(
            s.port,
            "/function/read_file",
            r#"{"path": "up/n.txt"}"#
        )),
        json!("b'served'")
    );
    assert_eq!(
        result(&post_json(
            s.port,
            "/function/read_text",
            r#"{"path": "up/n.txt"}"#
        )),
        json!("served")
    );
    let raw = post_json(s.port, "/function/read_raw", r#"{"path": "up/n.txt"}"#);
    assert_eq!((raw.status, raw.body.as_str()), (200, "b'served'"));
    let url = result(&post_json(
        s.port,
        "/function/url_of",
        r#"{"path": "up/n.txt"}"#,
    ));
    let base = std::fs::canonicalize(dir.path().join("storage")).expect("base");
    assert_eq!(url, json!(format!("file://{}/up/n.txt", base.display())));
    assert_eq!(
        result(&post_json(
            s.port,
            "/function/sneak",
            r#"{"path": "../app.svc"}"#
        )),
        json!("refused")
    );
    // A missing file is the call's error, not a crash.
    let resp = post_json(s.port, "/function/read_file", r#"{"path": "none.txt"}"#);
    assert_eq!(resp.status, 500, "{}", resp.body);
    assert!(
        resp.body.contains("no such file in storage"),
        "{}",
        resp.body
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("storage/up/n.txt")).ok(),
        Some("served".into())
    );
}

// -------------------------------------------------------------------------------------
// Object backend against moto
// -------------------------------------------------------------------------------------

/// A `moto_server` (S3 and friends) on a free loopback port, killed by PID on drop.
struct Moto {
    child: Child,
    port: u16,
}

impl Moto {
    /// `None` (with a message) when `moto_server` is not installed.
    fn start() -> Option<Moto> {
        let port = free_port();
        let spawned = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("SKIPPED: moto_server is not installed (pip install 'moto[server]')");
                return None;
            }
            Err(e) => panic!("cannot start moto_server: {e}"),
        };
        let moto = Moto { child, port };
        assert!(
            wait_until(Duration::from_secs(30), || {
                TcpStream::connect(("127.0.0.1", port)).is_ok()
            }),
            "moto_server did not listen on {port}"
        );
        Some(moto)
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Create a bucket (S3 `CreateBucket`, unsigned: moto accepts it).
    fn bucket(&self, name: &str) {
        let resp = request(self.port, "PUT", &format!("/{name}"), &[], None);
        assert_eq!(resp.status, 200, "create bucket: {}", resp.body);
    }

    /// The environment of an app on bucket `bucket` of this server.
    fn env<'a>(&'a self, endpoint: &'a str, bucket: &'a str) -> Vec<(&'a str, &'a str)> {
        vec![
            ("SVC_STORAGE_TYPE", "object"),
            ("SVC_STORAGE_OBJ_BUCKET", bucket),
            ("SVC_STORAGE_OBJ_ENDPOINT_URL", endpoint),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
        ]
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET an absolute `http://127.0.0.1:PORT/...` URL with a plain HTTP request.
fn fetch(url: &str) -> crate::support::Response {
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .expect("a loopback URL");
    let (port, path) = rest.split_at(rest.find('/').expect("a path"));
    request(port.parse().expect("a port"), "GET", path, &[], None)
}

#[test]
fn object_backend_every_method_against_moto() {
    let Some(moto) = Moto::start() else { return };
    moto.bucket("every");
    let dir = TempDir::new("storage-s3");
    let endpoint = moto.endpoint();
    let mut env = moto.env(&endpoint, "every");
    env.push(("SVC_STORAGE_OBJ_PREFIX", "/app/"));
    let out = run_ok(dir.path(), EVERY_METHOD, &env);
    assert_eq!(out, EVERY_METHOD_OUT.replace("BACKEND", "object"));
    // The objects sit under the prefix in the bucket (moto's ListObjects, unsigned).
    let listing = request(moto.port, "GET", "/every?list-type=2", &[], None);
    assert!(
        listing.body.contains("<Key>app/moved/c.txt</Key>"),
        "{}",
        listing.body
    );
    assert!(!listing.body.contains("<Key>moved/"), "{}", listing.body);
    // A download destination is a local path under the base path.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("storage/out/a-copy.txt")).ok(),
        Some("hello".into())
    );
    // Upload metadata became user metadata of the object.
    let url = run_ok(
        dir.path(),
        r#"with entry { s = store(); s.upload({"content": "m"}, "meta.txt", {"owner": "ann", "content_type": "text/plain"}); print(s.get_url("meta.txt")); }"#,
        &env,
    );
    let got = fetch(url.trim());
    assert_eq!(got.body, "m");
    assert_eq!(got.header("x-amz-meta-owner"), Some("ann"), "{got:?}");
    assert_eq!(got.header("content-type"), Some("text/plain"), "{got:?}");
    // Objects are private: an unsigned request is refused.
    let denied = request(moto.port, "GET", "/every/app/meta.txt", &[], None);
    assert_eq!(denied.status, 403, "{denied:?}");
    // Hostile paths are refused before any request.
    let out = run_ok(
        dir.path(),
        r#"with entry { try { store().download("../x"); } except PermissionError as e { print("refused"); } }"#,
        &env,
    );
    assert_eq!(out, "refused\n");
}

#[test]
fn presigned_and_public_urls_against_moto() {
    let Some(moto) = Moto::start() else { return };
    moto.bucket("urls");
    let dir = TempDir::new("storage-s3-url");
    let endpoint = moto.endpoint();
    let env = moto.env(&endpoint, "urls");
    let url = run_ok(
        dir.path(),
        r#"with entry { s = store(); s.upload({"content": "signed body"}, "d/s.txt"); print(s.get_url("d/s.txt", expires_in=90)); }"#,
        &env,
    );
    let url = url.trim();
    assert!(
        url.starts_with(&format!("{endpoint}/urls/d/s.txt?")),
        "{url}"
    );
    assert!(url.contains("X-Amz-Expires=90"), "{url}");
    assert!(url.contains("X-Amz-Signature="), "{url}");
    let got = fetch(url);
    assert_eq!((got.status, got.body.as_str()), (200, "signed body"));
    // The default expiry is 3600 s; out-of-range expiries are refused.
    let out = run_ok(
        dir.path(),
        r#"with entry { s = store(); print("X-Amz-Expires=3600" in s.get_url("d/s.txt")); try { s.get_url("d/s.txt", expires_in=0); } except ValueError as e { print(e); } }"#,
        &env,
    );
    assert_eq!(out, "True\nexpires_in must be 1 to 604800 seconds, not 0\n");
    // public_read: objects are uploaded readable by anyone and the URL is permanent and
    // unsigned (path style on a custom endpoint).
    let mut public = env.clone();
    public.push(("SVC_STORAGE_OBJ_PUBLIC_READ", "true"));
    let out = run_ok(
        dir.path(),
        r#"with entry { s = store(); s.upload({"content": "signed body"}, "d/s.txt"); print(s.get_url("d/s.txt")); }"#,
        &public,
    );
    assert_eq!(out, format!("{endpoint}/urls/d/s.txt\n"));
    let got = fetch(out.trim());
    assert_eq!((got.status, got.body.as_str()), (200, "signed body"));
}

#[test]
fn object_configuration_precedence() {
    let Some(moto) = Moto::start() else { return };
    moto.bucket("from-file");
    moto.bucket("from-env");
    let dir = TempDir::new("storage-s3-config");
    let endpoint = moto.endpoint();
    std::fs::write(
        dir.path().join("svc.toml"),
        format!(
            "[storage]\ntype = \"object\"\nbucket = \"from-file\"\nendpoint_url = \"{endpoint}\"\n\
             region = \"eu-west-1\"\nprefix = \"p\"\n"
        ),
    )
    .expect("toml");
    let creds = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
    ];
    let script = r#"with entry { s = store(); s.upload({"content": "x"}, "k.txt"); print(s.backend, s.get_url("k.txt")); }"#;
    let out = run_ok(dir.path(), script, &creds);
    assert!(
        out.starts_with(&format!("object {endpoint}/from-file/p/k.txt?")),
        "{out}"
    );
    assert!(
        out.contains("%2Feu-west-1%2Fs3%2F"),
        "the file's region signs: {out}"
    );
    let mut env = creds.to_vec();
    env.extend([
        ("SVC_STORAGE_OBJ_BUCKET", "from-env"),
        ("SVC_STORAGE_OBJ_REGION", "us-west-2"),
        ("SVC_STORAGE_OBJ_PREFIX", "q"),
    ]);
    let out = run_ok(dir.path(), script, &env);
    assert!(
        out.starts_with(&format!("object {endpoint}/from-env/q/k.txt?")),
        "{out}"
    );
    assert!(out.contains("%2Fus-west-2%2Fs3%2F"), "{out}");
    // SVC_STORAGE_TYPE=local beats the file's `object`.
    env.push(("SVC_STORAGE_TYPE", "local"));
    let out = run_ok(dir.path(), script, &env);
    assert!(out.starts_with("local file://"), "{out}");
}

#[test]
fn storage_factory_with_the_object_backend() {
    let Some(moto) = Moto::start() else { return };
    moto.bucket("factory");
    let dir = TempDir::new("storage-s3-factory");
    let endpoint = moto.endpoint();
    let env = moto.env(&endpoint, "factory");
    let out = run_ok(dir.path(), FACTORY, &env);
    assert_eq!(
        out,
        "object True\n\
         local True a.txt\n\
         object o.txt True\n\
         storage config key 'endpoint_url' comes from the configuration ([storage] in svc.toml or SVC_STORAGE_*), not from svc code\n\
         unknown storage type 'cloud' (local or object)\n"
    );
    // The local instance wrote to the disk, the object one to the bucket.
    assert!(dir.path().join("loc/a.txt").is_file());
    assert!(!dir.path().join("storage/o.txt").exists());
}

#[test]
fn a_silent_object_endpoint_is_a_timeout_and_a_closed_one_an_os_error() {
    // An endpoint that accepts connections and never answers.
    let silent = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let endpoint = format!("http://{}", silent.local_addr().expect("addr"));
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in silent.incoming().take(8) {
            open.push(stream);
        }
    });
    let dir = TempDir::new("storage-s3-timeout");
    std::fs::write(
        dir.path().join("svc.toml"),
        "[storage]\ntimeout_seconds = 1.0\n",
    )
    .expect("toml");
    let env = [
        ("SVC_STORAGE_TYPE", "object"),
        ("SVC_STORAGE_OBJ_BUCKET", "b"),
        ("SVC_STORAGE_OBJ_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
    ];
    // The HTTP client's own timeout (an OSError) or the caller's deadline (TimeoutError,
    // an OSError too) ends it within the budget plus the retries' share of it.
    let script = r#"with entry { try { store().exists("a.txt"); } except OSError as e { print(type(e).__name__, "storage exists of 'a.txt' failed" in str(e) or "took longer" in str(e)); } }"#;
    let started = std::time::Instant::now();
    let out = run_ok(dir.path(), script, &env);
    assert!(
        out == "OSError True\n" || out == "TimeoutError True\n",
        "{out}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    drop(held);
    // Nothing listens: connection refused, an OSError naming the operation.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let env = [
        ("SVC_STORAGE_TYPE", "object"),
        ("SVC_STORAGE_OBJ_BUCKET", "b"),
        ("SVC_STORAGE_OBJ_ENDPOINT_URL", closed.as_str()),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
    ];
    let out = run_ok(
        dir.path(),
        r#"with entry { try { store().download("a.txt"); } except OSError as e { print(str(e).startswith("storage download of 'a.txt' failed")); } }"#,
        &env,
    );
    assert_eq!(out, "True\n");
}

#[test]
fn served_calls_use_the_object_backend() {
    let Some(moto) = Moto::start() else { return };
    moto.bucket("served");
    let dir = TempDir::new("storage-s3-served");
    std::fs::write(dir.path().join("app.svc"), SERVED_APP).expect("write app");
    let endpoint = moto.endpoint();
    let env = moto.env(&endpoint, "served");
    let port = free_port().to_string();
    let s = ServerGuard::launch(
        dir.path(),
        &[
            "app.svc",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--workers",
            "2",
        ],
        &env,
    );
    let body = json!({"f": {"filename": "n.txt", "content": "in the bucket"}, "path": "n.txt"});
    let resp = post_json(s.port, "/walker/save_file", &body.to_string());
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.json()["data"]["reports"], json!(["n.txt", ["n.txt"]]));
    assert_eq!(
        result(&post_json(
            s.port,
            "/function/read_file",
            r#"{"path": "n.txt"}"#
        )),
        json!("b'in the bucket'")
    );
    assert_eq!(
        result(&post_json(
            s.port,
            "/function/read_text",
            r#"{"path": "n.txt"}"#
        )),
        json!("in the bucket")
    );
    let url = result(&post_json(
        s.port,
        "/function/url_of",
        r#"{"path": "n.txt"}"#,
    ));
    let url = url.as_str().expect("a URL");
    assert!(url.contains("X-Amz-Expires=120"), "{url}");
    let got = fetch(url);
    assert_eq!((got.status, got.body.as_str()), (200, "in the bucket"));
    assert!(!dir.path().join("storage/n.txt").exists());
}
