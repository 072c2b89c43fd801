//! The kvstore service: the backends behind the `kvstore(...)` built-in (service spec
//! "In-process interface: `kvstore`"). The interpreter sends the host natives of
//! `lang::serve::kvstore::natives`; `ServeHost`, `LoadHost` and `RunHost` hand them to
//! [`call`].
//!
//! One service per process (`service()`): its own small tokio runtime (one worker thread,
//! `svc-kvstore`) drives the async clients of both backends (the checked `mongodb`
//! feature set has no `sync` API), and one client per (backend, URI) is shared by every
//! run. A caller (a run worker, `svc run`'s thread) spawns the operation on that runtime
//! and waits for its answer with a deadline, polling its cancel flag, so a run never waits
//! longer than [`OP_TIMEOUT`] and a cancelled run stops waiting at once. A connection
//! that fails is dropped and made again on the next call (the service's supervision).
//!
//! Expected failures are answered as data, `{"__error__": {"type", "message"}}`, which the
//! interpreter raises as that exception (`ConnectionError`, `TimeoutError`, `ValueError`,
//! `NotImplementedError`).

mod cache;
mod docdb;

use lang::host::HostError;
use serde_json::{Value as Json, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// Longest wait for one operation (connecting included).
pub const OP_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for a connection to a server.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Most documents or keys one call returns (`find`, `find_nodes`, `scan_keys`) or takes
/// (`insert_many`).
pub const MAX_ITEMS: usize = 10_000;
/// Largest value or document one call stores or returns, as JSON text.
pub const MAX_VALUE_BYTES: usize = 16 * 1024 * 1024;
/// Most distinct (backend, URI) pairs one process keeps clients for.
pub const MAX_STORES: usize = 64;

/// The configured URIs (`[scale.database] docdb_uri` / `cache_url`, already overridden
/// by `DOCDB_URI` / `CACHE_URL`): what `kvstore(...)` uses when its `uri` is `None`.
#[derive(Clone, Debug, Default)]
pub struct KvSettings {
    pub docdb_uri: Option<String>,
    pub cache_url: Option<String>,
}

static SETTINGS: Mutex<Option<KvSettings>> = Mutex::new(None);

/// Set the configured URIs (the binary does this once at `svc run` / `svc start`).
pub fn configure(settings: KvSettings) {
    if let Ok(mut s) = SETTINGS.lock() {
        *s = Some(settings);
    }
}

fn settings() -> KvSettings {
    SETTINGS
        .lock()
        .ok()
        .and_then(|s| s.clone())
        .unwrap_or_default()
}

/// A failure the program sees as an exception of type `kind`.
#[derive(Debug, Clone, PartialEq)]
pub struct KvError {
    pub kind: &'static str,
    pub message: String,
}

impl KvError {
    pub fn new(kind: &'static str, message: impl Into<String>) -> KvError {
        KvError {
            kind,
            message: message.into(),
        }
    }

    fn value(message: impl Into<String>) -> KvError {
        KvError::new("ValueError", message)
    }

    fn into_json(self) -> Json {
        json!({"__error__": {"type": self.kind, "message": self.message}})
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Docdb,
    Cache,
}

enum Client {
    Cache(redis::aio::MultiplexedConnection),
    Docdb(mongodb::Client),
}

struct Store {
    backend: Backend,
    uri: String,
    client: tokio::sync::Mutex<Option<Client>>,
}

struct Service {
    runtime: Option<tokio::runtime::Runtime>,
    stores: Mutex<Vec<Arc<Store>>>,
}

fn service() -> &'static Service {
    static SERVICE: OnceLock<Service> = OnceLock::new();
    SERVICE.get_or_init(|| Service {
        runtime: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("svc-kvstore")
            .enable_all()
            .build()
            .ok(),
        stores: Mutex::new(Vec::new()),
    })
}

/// Answer a kvstore native (`None` = not a kvstore name).
pub fn call(
    name: &str,
    args: &[Json],
    cancel: Option<&AtomicBool>,
) -> Option<Result<Json, HostError>> {
    let answer = match name {
        lang::serve::kvstore::natives::OPEN => open(args),
        lang::serve::kvstore::natives::CALL => call_method(args, cancel),
        _ => return None,
    };
    Some(Ok(answer.unwrap_or_else(KvError::into_json)))
}

/// `[db_name, db_type, uri | null]` → `{"handle": n}`.
fn open(args: &[Json]) -> Result<Json, KvError> {
    let db_type = args.get(1).and_then(Json::as_str).unwrap_or("");
    let backend = match db_type {
        "docdb" => Backend::Docdb,
        "cache" => Backend::Cache,
        "clouddoc" => {
            return Err(KvError::new(
                "NotImplementedError",
                "kvstore: the clouddoc backend is not configured in this build (svc has no \
                 cloud document database client); use db_type='docdb' or 'cache'",
            ));
        }
        other => {
            return Err(KvError::value(format!(
                "kvstore: unknown db_type '{other}'"
            )));
        }
    };
    let explicit = args
        .get(2)
        .and_then(Json::as_str)
        .map(str::trim)
        .filter(|u| !u.is_empty());
    let configured = settings();
    let uri = match (explicit, backend) {
        (Some(u), _) => u.to_string(),
        (None, Backend::Docdb) => configured.docdb_uri.ok_or_else(|| {
            KvError::value(
                "kvstore: no document database URI (pass uri=..., set DOCDB_URI or \
                 [scale.database] docdb_uri)",
            )
        })?,
        (None, Backend::Cache) => configured.cache_url.ok_or_else(|| {
            KvError::value(
                "kvstore: no cache URL (pass uri=..., set CACHE_URL or [scale.database] \
                 cache_url)",
            )
        })?,
    };
    let schemes: &[&str] = match backend {
        Backend::Docdb => &["mongodb://", "mongodb+srv://"],
        Backend::Cache => &["redis://", "rediss://", "unix://", "redis+unix://"],
    };
    if !schemes.iter().any(|s| uri.starts_with(s)) {
        return Err(KvError::value(format!(
            "kvstore: a {db_type} URI starts with {}",
            schemes.join(" or ")
        )));
    }
    let mut stores = service()
        .stores
        .lock()
        .map_err(|_| KvError::new("RuntimeError", "kvstore: service unavailable"))?;
    if let Some(i) = stores
        .iter()
        .position(|s| s.backend == backend && s.uri == uri)
    {
        return Ok(json!({"handle": i}));
    }
    if stores.len() >= MAX_STORES {
        return Err(KvError::value(format!(
            "kvstore: at most {MAX_STORES} distinct stores per process"
        )));
    }
    stores.push(Arc::new(Store {
        backend,
        uri,
        client: tokio::sync::Mutex::new(None),
    }));
    Ok(json!({"handle": stores.len() - 1}))
}

/// `[handle, db_name, method, {param: value}]` → the method's result.
fn call_method(args: &[Json], cancel: Option<&AtomicBool>) -> Result<Json, KvError> {
    let svc = service();
    let store = args
        .first()
        .and_then(Json::as_u64)
        .and_then(|i| {
            let stores = svc.stores.lock().ok()?;
            stores.get(usize::try_from(i).ok()?).cloned()
        })
        .ok_or_else(|| KvError::value("kvstore: unknown store handle"))?;
    let db_name = args.get(1).and_then(Json::as_str).unwrap_or("").to_string();
    let method = args.get(2).and_then(Json::as_str).unwrap_or("").to_string();
    let params = match args.get(3) {
        Some(Json::Object(m)) => m.clone(),
        _ => serde_json::Map::new(),
    };
    let Some(runtime) = &svc.runtime else {
        return Err(KvError::new(
            "RuntimeError",
            "kvstore: the service could not start its runtime",
        ));
    };
    let (tx, rx) = mpsc::sync_channel(1);
    let task = runtime.spawn(async move {
        let op = run(&store, &db_name, &method, &params);
        let answer = match tokio::time::timeout(OP_TIMEOUT, op).await {
            Ok(answer) => answer,
            Err(_) => {
                // The connection may be wedged: make a new one next time.
                *store.client.lock().await = None;
                Err(KvError::new(
                    "TimeoutError",
                    format!(
                        "kvstore: {method}() took longer than {} s",
                        OP_TIMEOUT.as_secs()
                    ),
                ))
            }
        };
        let _ = tx.send(answer);
    });
    let deadline = Instant::now() + OP_TIMEOUT + Duration::from_secs(1);
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(answer) => return answer,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(KvError::new(
                    "RuntimeError",
                    "kvstore: the operation failed",
                ));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            task.abort();
            return Err(KvError::new(
                "RuntimeError",
                "kvstore: the call was cancelled",
            ));
        }
        if Instant::now() >= deadline {
            task.abort();
            return Err(KvError::new(
                "TimeoutError",
                format!("kvstore: no answer within {} s", OP_TIMEOUT.as_secs()),
            ));
        }
    }
}

/// One operation: connect if needed, run it, drop the connection if it failed.
async fn run(
    store: &Store,
    db_name: &str,
    method: &str,
    params: &serde_json::Map<String, Json>,
) -> Result<Json, KvError> {
    let mut slot = store.client.lock().await;
    if slot.is_none() {
        *slot = Some(connect(store).await?);
    }
    match slot.as_mut() {
        Some(Client::Cache(conn)) => {
            let mut conn = conn.clone();
            drop(slot);
            let r = cache::run(&mut conn, db_name, method, params).await;
            if let Err(e) = &r
                && e.kind == "ConnectionError"
            {
                *store.client.lock().await = None;
            }
            r
        }
        Some(Client::Docdb(client)) => {
            let client = client.clone();
            drop(slot);
            docdb::run(&client, db_name, method, params).await
        }
        None => Err(KvError::new("ConnectionError", "kvstore: not connected")),
    }
}

async fn connect(store: &Store) -> Result<Client, KvError> {
    match store.backend {
        Backend::Cache => cache::connect(&store.uri).await.map(Client::Cache),
        Backend::Docdb => docdb::connect(&store.uri).await.map(Client::Docdb),
    }
}

/// The text of a stored value (JSON), refused beyond [`MAX_VALUE_BYTES`].
fn encode_value(v: &Json) -> Result<String, KvError> {
    let text = v.to_string();
    if text.len() > MAX_VALUE_BYTES {
        return Err(KvError::new(
            "MemoryError",
            format!(
                "kvstore: value of {} bytes exceeds the limit of {MAX_VALUE_BYTES}",
                text.len()
            ),
        ));
    }
    Ok(text)
}

fn str_param<'a>(
    params: &'a serde_json::Map<String, Json>,
    name: &str,
) -> Result<&'a str, KvError> {
    params
        .get(name)
        .and_then(Json::as_str)
        .ok_or_else(|| KvError::new("TypeError", format!("kvstore: {name} must be str")))
}

fn int_param(params: &serde_json::Map<String, Json>, name: &str) -> Result<i64, KvError> {
    params
        .get(name)
        .and_then(Json::as_i64)
        .ok_or_else(|| KvError::new("TypeError", format!("kvstore: {name} must be int")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clouddoc_is_not_configured() {
        let e = open(&[json!("app"), json!("clouddoc"), Json::Null]).expect_err("refused");
        assert_eq!(e.kind, "NotImplementedError");
        assert!(e.message.contains("not configured in this build"), "{e:?}");
    }

    #[test]
    fn schemes_are_checked() {
        let e = open(&[json!("app"), json!("cache"), json!("mongodb://x")]).expect_err("bad");
        assert_eq!(e.kind, "ValueError");
        let h = open(&[json!("app"), json!("cache"), json!("redis://127.0.0.1:1/")]);
        let again = open(&[json!("x"), json!("cache"), json!("redis://127.0.0.1:1/")]);
        assert_eq!(
            h.expect("opens"),
            again.expect("opens"),
            "one client per URI"
        );
    }
}
