//! Service-to-service calls, the host side (spec "Service-to-service calls", decisions.md
//! "Service-to-service"): the `sv.call` native behind the stubs of `sv import`, provider
//! resolution, the bundled call policy, and bringing providers up at `svc start`.
//!
//! - **Resolution**, first match wins: a URL registered in this process (a provider this
//!   `svc start` spawned, or `register`), then `SVC_SV_<MODULE>_URL`. Nothing found is
//!   the spec's runtime error naming the variable to set.
//! - **Policy and transport** (`sv/client.rs`, `sv/http.rs`): a call is a message to
//!   the provider's client actor, which owns a keep-alive HTTP/1.1 connection pool, the
//!   provider's circuit breaker and the retry timers. `X-Trace-Id` of the calling run and
//!   the inbound `Authorization` are sent on; a transport failure (connect, reset, a
//!   broken answer, timeout) is retried up to `[scale.sv] max_attempts` times with
//!   exponential backoff (100 ms, 200 ms, ...); each attempt is bounded by
//!   `rpc_timeout_seconds`; one circuit breaker per provider opens after
//!   `breaker_failures` consecutive failed calls and refuses calls at once for
//!   `breaker_open_seconds`, then lets one call probe. `https://` provider URLs are
//!   refused with a clear message. The answer body is bounded by `max_response_bytes`.
//! - **Startup** (`spawn_providers`): every provider the entry `sv import`s, transitively
//!   (each spawned `svc start` brings up its own), that has no `SVC_SV_*` URL is started
//!   as a child `svc start <provider>.svc --host 127.0.0.1 --port <18000-18999>`, up to
//!   8 at once; the consumer serves only once all answer `/healthz`, and a provider that
//!   fails stops the consumer's start with the provider's output.

mod client;
mod http;

use actors::natives::{NativeCall, Natives, NativesHandle};
use client::{Clients, Outgoing, Target};
use lang::host::HostError;
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Ports of automatically started providers (spec "Limits").
pub const SIBLING_PORTS: std::ops::RangeInclusive<u16> = 18000..=18999;
/// Providers started at once.
pub const PARALLEL_STARTS: usize = 8;
/// How long a provider may take to answer `/healthz` after its start.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// `[scale.sv]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SvSettings {
    pub rpc_timeout: Duration,
    pub max_attempts: u32,
    pub breaker_failures: u32,
    pub breaker_open: Duration,
    pub max_response_bytes: usize,
    /// Connections per provider, in use or idle.
    pub pool_max_connections: usize,
    /// An idle pooled connection is closed after this long.
    pub pool_idle: Duration,
    /// Calls waiting in one provider actor's mailbox (and, apart, for a connection).
    pub mailbox_capacity: usize,
    /// Provider actors one process keeps.
    pub max_providers: usize,
}

impl SvSettings {
    /// The longest a call may take: every attempt's `rpc_timeout` and the backoffs
    /// between them. A waiting run worker gives up after it (and a second of grace).
    pub fn call_budget(&self) -> Duration {
        let attempts = self.max_attempts.max(1);
        let backoff: u64 = (1..attempts).map(|a| 100u64 << (a - 1).min(6)).sum();
        self.rpc_timeout * attempts + Duration::from_millis(backoff)
    }
}

/// The call policy from `[scale.sv]`; answers are bounded like call results.
pub fn settings(config: &crate::config::SvConfig, max_response_bytes: usize) -> SvSettings {
    SvSettings {
        rpc_timeout: Duration::from_secs_f64(config.rpc_timeout_seconds),
        max_attempts: config.max_attempts.max(1),
        breaker_failures: config.breaker_failures.max(1),
        breaker_open: Duration::from_secs_f64(config.breaker_open_seconds),
        max_response_bytes,
        pool_max_connections: config.pool_max_connections.max(1),
        pool_idle: Duration::from_secs_f64(config.pool_idle_seconds),
        mailbox_capacity: config.mailbox_capacity.max(1),
        max_providers: config.max_providers.max(1),
    }
}

/// The `sv.call` native, the registered provider URLs, and the client actors.
pub struct SvNatives {
    urls: Mutex<HashMap<String, String>>,
    clients: Clients,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The environment variable naming `module`'s URL.
pub use lang::names::sv_env_var as env_var;

impl SvNatives {
    pub fn new(settings: SvSettings) -> Arc<SvNatives> {
        Arc::new(SvNatives {
            urls: Mutex::new(HashMap::new()),
            clients: Clients::new(settings),
        })
    }

    pub fn handle(self: &Arc<Self>) -> NativesHandle {
        NativesHandle(Arc::clone(self) as Arc<dyn Natives>)
    }

    /// `register(module_name, url)`.
    pub fn register(&self, module: &str, url: &str) {
        lock(&self.urls).insert(module.to_string(), url.trim_end_matches('/').to_string());
    }

    /// `resolve_url(module_name)`: registered, else `SVC_SV_<MODULE>_URL`.
    pub fn resolve_url(&self, module: &str) -> Result<String, String> {
        if let Some(url) = lock(&self.urls).get(module) {
            return Ok(url.clone());
        }
        let var = env_var(module);
        match std::env::var(&var) {
            Ok(url) if !url.trim().is_empty() => Ok(url.trim().trim_end_matches('/').to_string()),
            _ => Err(format!(
                "no URL for provider '{module}': set {var}, or start the consumer with \
                 `svc start` so it brings the provider up"
            )),
        }
    }

    /// One stub call: `{module, name, kind, args}` → `{kind, result, reports}` or
    /// `{"__error__": {message}}`. The request goes to the provider's client actor.
    fn call(&self, request: &Json, call: NativeCall<'_>) -> Json {
        let module = request["module"].as_str().unwrap_or_default();
        let name = request["name"].as_str().unwrap_or_default();
        let kind = request["kind"].as_str().unwrap_or("unknown");
        let error = |message: String| json!({"__error__": {"message": message}});
        let body = match request.get("args") {
            Some(args) => args.to_string(),
            None => "{}".to_string(),
        };
        let base = match self.resolve_url(module) {
            Ok(url) => url,
            Err(e) => return error(e),
        };
        let target = match split_url(&base) {
            Ok((authority, prefix)) => Target {
                base,
                authority,
                prefix,
            },
            Err(e) => return error(e),
        };
        let kinds: &[&str] = match kind {
            "walker" => &["walker"],
            "function" => &["function"],
            _ => &["function", "walker"],
        };
        let mut last = String::new();
        for (i, k) in kinds.iter().enumerate() {
            let outgoing = Outgoing {
                path: format!("/{k}/{name}"),
                body: body.clone().into_bytes(),
                trace_id: call.trace_id.to_string(),
                authorization: call.authorization.map(str::to_string),
            };
            let answer = match self
                .clients
                .call(module, &target, outgoing, &|| call.cancelled())
            {
                Ok(answer) => answer,
                Err(message) => return error(message),
            };
            let body: Json = serde_json::from_slice(&answer.body).unwrap_or(Json::Null);
            if answer.status == 200 {
                return match body {
                    Json::Object(env) if env.get("ok") == Some(&Json::Bool(true)) => json!({
                        "kind": k,
                        "result": env["data"]["result"],
                        "reports": env["data"]["reports"],
                    }),
                    _ => error("the provider did not answer the envelope".into()),
                };
            }
            last = body["error"]["message"]
                .as_str()
                .map_or_else(|| format!("HTTP {}", answer.status), str::to_string);
            // An unknown kind: a 404 as a function may be a walker.
            if !(answer.status == 404 && i + 1 < kinds.len()) {
                return error(last);
            }
        }
        error(last)
    }
}

impl Natives for SvNatives {
    fn call(
        &self,
        name: &str,
        args: &[Json],
        call: NativeCall<'_>,
    ) -> Option<Result<Json, HostError>> {
        let text = |i: usize| args.get(i).and_then(Json::as_str).unwrap_or_default();
        match name {
            "sv.call" => {
                let request = args.first().cloned().unwrap_or(Json::Null);
                Some(Ok(SvNatives::call(self, &request, call)))
            }
            "sv.register" => {
                if let Err(e) = split_url(text(1)) {
                    return Some(Err(HostError::Other(e)));
                }
                self.register(text(0), text(1));
                Some(Ok(Json::Null))
            }
            "sv.unregister" => {
                lock(&self.urls).remove(text(0));
                Some(Ok(Json::Null))
            }
            "sv.resolve_url" => Some(
                self.resolve_url(text(0))
                    .map(Json::String)
                    .map_err(HostError::Other),
            ),
            _ => None,
        }
    }
}

/// `http://host:port[/base]` → (`host:port`, base path).
fn split_url(url: &str) -> Result<(String, String), String> {
    if url.starts_with("https://") {
        return Err(format!(
            "{url}: https provider URLs are not supported in this build (use http:// on a \
             private network)"
        ));
    }
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: a provider URL must start with http://"))?;
    let (authority, base) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let authority = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    Ok((authority, base.to_string()))
}

// ---------------------------------------------------------------------------------------
// Bringing providers up at `svc start`
// ---------------------------------------------------------------------------------------

/// The modules `entry` imports with `sv import`, with their source paths (beside it).
pub fn providers_of(entry: &Path) -> Vec<(String, PathBuf)> {
    let Ok(text) = std::fs::read_to_string(entry) else {
        return Vec::new();
    };
    let dir = entry.parent().unwrap_or(Path::new("."));
    let parsed = lang::parser::parse(&text);
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for item in &parsed.module.items {
        if let lang::ast::Item::Import(imp) = item
            && imp.remote
            && let Some(from) = &imp.from
            && let Some(last) = from.parts.last()
        {
            let mut path = dir.to_path_buf();
            for part in &from.parts[..from.parts.len() - 1] {
                path.push(&*part.name);
            }
            path.push(format!("{}.svc", last.name));
            let module = last.name.to_string();
            if !out.iter().any(|(m, _)| *m == module) {
                out.push((module, path));
            }
        }
    }
    out
}

/// Providers started by this process; stopped (SIGTERM, so each stops its own) when
/// dropped.
pub struct Siblings(Vec<Child>);

impl Drop for Siblings {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let pid = child.id().to_string();
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for child in &mut self.0 {
            while Instant::now() < deadline {
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A free loopback port in 18000-18999, starting from a per-process offset.
fn free_sibling_port(taken: &[u16]) -> Option<u16> {
    let span = u32::from(SIBLING_PORTS.end() - SIBLING_PORTS.start()) + 1;
    let offset = std::process::id() % span;
    (0..span)
        .map(|i| SIBLING_PORTS.start() + ((offset + i * 7) % span) as u16)
        .find(|p| !taken.contains(p) && std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
}

/// Start one provider and wait for its startup line: its URL.
fn start_one(module: &str, source: &Path, port: u16) -> Result<(Child, String), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find svc itself: {e}"))?;
    let mut child = Command::new(exe)
        .args(["start"])
        .arg(source)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        // The provider watches this pipe: when the consumer exits, however it exits,
        // the pipe closes and the provider shuts down (`server::shutdown`).
        .env(crate::server::shutdown::WATCH_PARENT_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start provider '{module}': {e}"))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    // The provider's stdout is read for its startup line only (echoing it would put a
    // second "serving ... at" line in the consumer's output); its logs go to stderr.
    if let Some(out) = stdout {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if line.contains(" at http://") {
                    let _ = tx.send(line);
                }
            }
        });
    }
    let errors = Arc::new(Mutex::new(String::new()));
    if let Some(err) = stderr {
        let errors = Arc::clone(&errors);
        let module = module.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut e = lock(&errors);
                if e.len() < 64 * 1024 {
                    e.push_str(&line);
                    e.push('\n');
                }
                drop(e);
                let _ = writeln!(std::io::stderr(), "[{module}] {line}");
            }
        });
    }
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(50)) {
            let url = line
                .split(" at ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .unwrap_or_default()
                .to_string();
            return Ok((child, url));
        }
        if let Ok(Some(status)) = child.try_wait() {
            std::thread::sleep(Duration::from_millis(50));
            return Err(format!(
                "provider '{module}' ({}) did not start ({status}):\n{}",
                source.display(),
                lock(&errors)
            ));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!(
                "provider '{module}' did not start within {} s",
                START_TIMEOUT.as_secs()
            ));
        }
    }
}

/// Bring up every provider of `entry` without an `SVC_SV_*` URL (each spawned one brings
/// up its own), register their URLs in `natives`; `Err` stops the consumer's start.
pub fn spawn_providers(entry: &Path, natives: &SvNatives) -> Result<Siblings, String> {
    let wanted: Vec<(String, PathBuf)> = providers_of(entry)
        .into_iter()
        .filter(|(m, _)| std::env::var(env_var(m)).is_err())
        .collect();
    let mut siblings = Siblings(Vec::new());
    let mut taken = Vec::new();
    for batch in wanted.chunks(PARALLEL_STARTS) {
        let mut jobs = Vec::new();
        for (module, source) in batch {
            if !source.is_file() {
                return Err(format!(
                    "provider '{module}' not found: {} (ModuleNotFoundError: the provider's \
                     source must be beside the consumer)",
                    source.display()
                ));
            }
            let port = free_sibling_port(&taken)
                .ok_or_else(|| "no free port in 18000-18999 for a provider".to_string())?;
            taken.push(port);
            let (module, source) = (module.clone(), source.clone());
            jobs.push(std::thread::spawn(move || {
                start_one(&module, &source, port).map(|r| (module, r))
            }));
        }
        let mut failure = None;
        for job in jobs {
            match job.join() {
                Ok(Ok((module, (child, url)))) => {
                    natives.register(&module, &url);
                    siblings.0.push(child);
                }
                Ok(Err(e)) => failure = failure.or(Some(e)),
                Err(_) => failure = failure.or(Some("a provider start panicked".into())),
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
    }
    Ok(siblings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_variables() {
        assert_eq!(env_var("billing"), "SVC_SV_BILLING_URL");
        assert_eq!(env_var("my-svc"), "SVC_SV_MY_SVC_URL");
        assert_eq!(
            split_url("http://127.0.0.1:18001/").ok(),
            Some(("127.0.0.1:18001".into(), String::new()))
        );
        assert_eq!(
            split_url("http://svc.local/api").ok(),
            Some(("svc.local:80".into(), "/api".into()))
        );
        assert!(split_url("https://x").is_err());
    }
}
