//! Black-box integration tests: they run the real `svc` binary.
//!
//! One test binary (every extra one costs a link on CI); modules by concern:
//! `cli` (commands, exit codes, persistence), `fixtures` (the data-driven
//! `tests/fixtures/**` suites), `server` (`svc start` over HTTP, with the client and
//! server guard of `support`), `identity` (users, tokens and mail, against a real SMTP
//! server) and `hardening_server` (bounds, throttles, secrets, CORS and body reading of
//! the HTTP and identity layer) and `websocket` (`/ws/<walker>` sessions, broadcast,
//! and two replicas sharing a real `redis-server`) and `webhooks` (API keys, signed
//! webhook calls and the alternate webhook flavor), `kvstore` (the `kvstore(...)`
//! built-in against a real `redis-server` and SecantusDB, in `svc run` and two replicas)
//! and `storage` (the `store()` builtin, local files and a real S3-compatible `moto_server`)
//! and `platform` (`/metrics` under a strict Prometheus parser, the graph endpoints) and
//! `deploy` (`--scale`: the object table, the YAML stream under `kubernetes-validate`, the
//! cluster commands against a stand-in Kubernetes API server) and `sv` (service-to-service calls
//! between two and three `svc start` processes) and `sv_client` (the per-provider client
//! actor: pooled connections, providers that close them, the breaker, cancel) and `docdb` (the document-database tier
//! with replicas sharing a real SecantusDB, and `svc db`), `l2` (that tier's L2 cache in a
//! real `redis-server`: fresh reads across replicas, the fill race, a cache-store outage),
//! `format` (`svc format` and `--check`), `lang_decl` (annex files and `svc test`), `admin` (the admin API, the bootstrap admin and the portal page), `mcp_content` (the
//! pages and example apps bundled for `svc mcp`: code blocks pass `svc check`, examples
//! run and serve), `admin_portal` (the
//! portal in headless Chromium over the DevTools protocol) and `sso` (single
//! sign-on against a real OpenID Connect provider, npm `oidc-provider`) and `vm` (limits
//! inside the compiled execution core, compared with `svc run --no-vm`) and `conformance`
//! (findings of the black-box audit against the spec and HTTP: 401 challenges, 405
//! `Allow`, refreshed tokens, content types of the JSON-only routes, disabled accounts).

mod admin;
mod admin_portal;
mod cli;
mod conformance;
mod deploy;
mod docdb;
mod events;
mod fixtures;
mod format;
mod hardening;
mod hardening_server;
mod identity;
mod identity_docdb;
mod inline;
mod invalidation;
mod kvstore;
mod l2;
mod lang_decl;
mod mcp;
mod mcp_content;
mod platform;
mod server;
mod sso;
mod stdlib;
mod storage;
mod support;
mod sv;
mod sv_client;
mod tier;
mod vm;
mod webhooks;
mod websocket;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

/// The `svc` binary under test, with a stable, colourless output environment.
pub fn svc() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_svc"));
    cmd.env("NO_COLOR", "1").env("NO_EMOJI", "1");
    cmd
}

/// Run `svc ARGS...` in `dir` and collect its output.
pub fn svc_in(dir: &Path, args: &[&str]) -> Output {
    svc()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("spawn the svc binary")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("svc-it-{tag}-{}-{n}-{nanos:x}", std::process::id()));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write `name` inside the directory and return its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let file = self.path.join(name);
        std::fs::write(&file, text).expect("write temp file");
        file
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
