//! The HTTP layer of `svc start`: serves the app's walkers and functions as generated
//! endpoints with the JSON envelope, plus health and documentation routes.
//!
//! Request path: `middleware::HttpLayer` (trace id, CORS, compression, metrics, access
//! log, envelope fallback) → fixed routes (`health`, the identity routes `/user/*` of
//! `crate::identity`, docs, the `/` index) → the default service, `routes::endpoint`,
//! which resolves the route (`routes::Matched`), authorizes the caller
//! (`auth::authorize`) and reads the arguments (`params::call_args`); it runs the app's
//! middleware walkers (`hooks`), calls the runtime and wraps the outcome (`envelope`).
//! Every failure is an `errors::ApiError`: one code table, one envelope.

pub mod auth;
pub mod body;
pub mod dev;
pub mod envelope;
pub mod errors;
pub mod faux;
pub mod graph;
pub mod health;
pub mod hooks;
pub mod invalidation;
pub mod listen;
pub mod logging;
pub mod metrics;
pub mod middleware;
pub mod multipart;
pub mod params;
pub mod peer;
pub mod routes;
pub mod shutdown;
pub mod ws;

use crate::config::Config;
use crate::{docs, openapi};
use actix_web::http::StatusCode;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, guard, web};
use actors::runtime::{Runtime, RuntimeConfig};
use anyhow::{Context as _, Result, bail};
use errors::{ApiError, ErrorCode};
use routes::RouteTable;
use serde_json::json;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// Where the server binds when it runs on a generated development JWT secret and no
/// host was set explicitly.
pub const LOOPBACK_HOST: &str = "127.0.0.1";

/// What `svc start` was asked for, as the server sees it: `cli` builds it from its clap
/// arguments (which stay in `cli`), so the server owns its own input type.
#[derive(Clone, Debug)]
pub struct StartOptions {
    pub entry: PathBuf,
    /// `--port`: beats `[scale.server] port`.
    pub port: Option<u16>,
    /// `--host`: beats `[scale.server] host`.
    pub host: Option<String>,
    /// `--main`: run the entry's `with entry:__main__` blocks at load.
    pub main: bool,
    /// `--faux`: print the API and exit.
    pub faux: bool,
    /// `--dev`: reload on change.
    pub dev: bool,
    /// `--api_port` (only 0, the main port, is supported).
    pub api_port: u16,
    /// `--profile`: also read `svc.<profile>.toml`.
    pub profile: Option<String>,
    /// `--workers`: interpreter threads.
    pub workers: Option<usize>,
    pub log_format: logging::LogFormat,
}

/// What the server runs with: the configuration with the command line applied.
#[derive(Clone, Debug)]
pub struct Settings {
    pub entry: PathBuf,
    /// Shown by `/` and the docs title: the app directory's name.
    pub app_name: String,
    pub host: String,
    pub port: u16,
    pub docs_enabled: bool,
    pub suppress_health_check_logs: bool,
    pub max_body_bytes: usize,
    /// `[scale.server] body_read_timeout_seconds`.
    pub body_read_timeout: Duration,
    /// `[scale.server] cors_origins`.
    pub cors: middleware::Cors,
    pub store_path: PathBuf,
    /// `[scale.database] l1_cache_bytes`, `group_commit_max`, `group_commit_wait_us`,
    /// `group_commit_pipeline`.
    pub embedded: actors::l1::EmbeddedTuning,
    /// `DOCDB_URI` / `[scale.database] docdb_uri`: the graph lives in the document
    /// database when set.
    pub docdb_uri: Option<String>,
    /// The document tier's L2 cache (`[scale.database] cache_l2_*` with a cache URL), or
    /// why there is none.
    pub l2: Result<actors::l2::L2Settings, &'static str>,
    /// Run workers (interpreter threads).
    pub workers: usize,
    /// `--main`: run the entry's `with entry:__main__` blocks at load.
    pub as_main: bool,
    /// `[scale.jwt]`, `[scale.auth]`, `[scale.emailer]` and the profile.
    pub identity: crate::identity::IdentitySettings,
    /// `[scale.limits]`.
    pub limits: crate::config::LimitsConfig,
    /// `[scale.websocket]`.
    pub websocket: crate::config::WebsocketConfig,
    /// The cache store URL (`CACHE_URL`, else `[scale.database] cache_url`): carries
    /// WebSocket broadcasts and L1 invalidations across replicas, and events unless
    /// `[scale.events] url`.
    pub cache_url: Option<String>,
    /// The L1 invalidation channel, `None` when `cache_l1_invalidation_enabled` is off.
    pub invalidation_channel: Option<String>,
    /// `[scale.events]`.
    pub events: crate::config::EventsConfig,
    /// `[storage]` / `[scale.storage]`: the backend of `store()`.
    pub storage: crate::config::StorageConfig,
    /// The entry file's directory (explicit `store(base_path=...)` is relative to it).
    pub app_dir: PathBuf,
    /// `[scale.server] metrics_enabled`: serve `/metrics`.
    pub metrics_enabled: bool,
    /// `[scale.server] metrics_token`: the bearer token `/metrics` requires, if any.
    pub metrics_token: Option<String>,
    /// `[scale.graph]`.
    pub graph: crate::config::GraphConfig,
    /// `[scale.sv]`: service-to-service calls.
    pub sv: crate::sv::SvSettings,
}

impl Settings {
    fn resolve(args: &StartOptions, config: Config) -> Result<Settings> {
        let app_dir = app_dir(&args.entry);
        actors::kvstore::configure(actors::kvstore::KvSettings {
            docdb_uri: config.database.docdb_uri.clone(),
            cache_url: config.database.cache_url.clone(),
        });
        let app_name = std::fs::canonicalize(&app_dir)
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "svc app".into());
        let identity = crate::identity::IdentitySettings::from_config(&config)?;
        let host_explicit = args.host.is_some() || config.host_explicit;
        let mut host = args.host.clone().unwrap_or(config.server.host);
        if let Some(secret_file) = &identity.generated_secret {
            let bind = if host_explicit {
                format!("binding {host} as configured")
            } else {
                host = LOOPBACK_HOST.into();
                format!(
                    "so the server binds {LOOPBACK_HOST} only (set [scale.server] host, \
                     SVC_SERVER_HOST or --host to listen elsewhere)"
                )
            };
            tracing::warn!(
                "JWT secret: none configured, so a random DEVELOPMENT secret is in use, kept in \
                 {}. This is a development setting: replicas need one shared JWT_SECRET (or \
                 [scale.jwt] secret), and `--profile prod` refuses to start without it; {bind}.",
                secret_file.display()
            );
        }
        let cors = middleware::Cors::new(&config.server.cors_origins);
        crate::metrics::global().set_max_series(config.server.metrics_max_series);
        Ok(Settings {
            entry: args.entry.clone(),
            app_name,
            host,
            port: args.port.unwrap_or(config.server.port),
            docs_enabled: config.server.docs_enabled,
            suppress_health_check_logs: config.server.suppress_health_check_logs,
            max_body_bytes: config.server.max_body_bytes,
            body_read_timeout: Duration::from_secs(config.server.body_read_timeout_seconds),
            cors,
            embedded: actors::l1::EmbeddedTuning {
                cache_bytes: config.database.l1_cache_bytes,
                group_max: config.database.group_commit_max,
                group_wait: Duration::from_micros(u64::from(config.database.group_commit_wait_us)),
                pipeline: config.database.group_commit_pipeline,
                checkpoint: actors::checkpoint::CheckpointTuning {
                    wal_bytes: config.database.wal_max_bytes,
                    interval: Duration::from_millis(u64::from(
                        config.database.checkpoint_interval_ms,
                    )),
                },
            },
            l2: config.database.l2_settings(),
            store_path: config.database.shelf_db_path,
            docdb_uri: config.database.docdb_uri.clone(),
            workers: args
                .workers
                .unwrap_or_else(actors::runtime::default_workers)
                .max(1),
            as_main: args.main,
            identity,
            limits: config.limits.clone(),
            websocket: config.websocket.clone(),
            cache_url: config.database.cache_url.clone(),
            invalidation_channel: config
                .database
                .cache_l1_invalidation_enabled
                .then(|| config.database.cache_l1_invalidation_channel.clone()),
            events: config.events.clone(),
            storage: config.storage.clone(),
            app_dir,
            metrics_enabled: config.server.metrics_enabled,
            metrics_token: config.server.metrics_token.clone(),
            graph: config.graph.clone(),
            sv: crate::sv::settings(&config.sv, config.limits.max_response_bytes),
        })
    }

    /// The interpreter limits of every svc call the server makes (`[scale.limits]`):
    /// walkers, functions and svc plug-ins such as an e-mail provider written in svc.
    pub fn limits(&self) -> lang::Limits {
        call_limits(&self.limits)
    }
}

/// `lang::Limits` from `[scale.limits]`.
pub fn call_limits(l: &crate::config::LimitsConfig) -> lang::Limits {
    lang::Limits {
        timeout: Some(Duration::from_secs_f64(l.call_timeout_seconds)),
        max_depth: l.max_call_depth as usize,
        max_string_bytes: l.max_string_bytes,
        max_collection_items: l.max_collection_items,
        max_response_bytes: l.max_response_bytes,
        ..lang::Limits::default()
    }
}

/// The entry file's directory (`.` for a bare file name).
fn app_dir(entry: &Path) -> PathBuf {
    entry
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

/// Shared by every worker of the HTTP server.
pub struct AppState {
    pub runtime: Runtime,
    pub settings: Settings,
    /// Set once shutdown begins: `/healthz/ready` answers 503.
    pub draining: AtomicBool,
    /// Open WebSocket sessions and broadcast hubs.
    pub ws: Arc<ws::Registry>,
    table: RwLock<Arc<RouteTable>>,
    /// The event broker (`None` when `[scale.events]` is off).
    pub events: Option<Arc<crate::events::Events>>,
    /// The consumer-group actors of the app's `@subscribe` handlers, with the
    /// subscriptions they serve (a `--dev` reload that changes them rewires).
    pub consumers: std::sync::Mutex<Subscribed>,
}

/// Running consumer-group actors and the subscriptions they were started for.
#[derive(Default)]
pub struct Subscribed {
    pub subscriptions: Vec<lang::serve::SubscriptionInfo>,
    pub consumers: Option<crate::events::consumer::Consumers>,
}

impl AppState {
    /// The state of the app serving `req`.
    pub fn of(req: &HttpRequest) -> Result<&web::Data<AppState>, ApiError> {
        req.app_data::<web::Data<AppState>>()
            .ok_or_else(|| ApiError::new(ErrorCode::InternalError, "server state missing"))
    }

    /// The current route table (swapped whole by `--dev` reloads).
    pub fn table(&self) -> Arc<RouteTable> {
        let guard = self.table.read().unwrap_or_else(|e| e.into_inner());
        Arc::clone(&guard)
    }

    pub fn swap_table(&self, table: RouteTable) {
        let mut guard = self.table.write().unwrap_or_else(|e| e.into_inner());
        *guard = Arc::new(table);
    }
}

/// `svc start`: the configuration is resolved first (files, profile, environment), then
/// `--faux` or the server. Nothing is opened or written before it.
pub fn start(args: &StartOptions) -> Result<ExitCode> {
    logging::init(args.log_format);
    // The registry's clock is `process_start_time_seconds`.
    let _ = crate::metrics::global();
    let meta = std::fs::metadata(&args.entry)
        .with_context(|| format!("cannot read {}", args.entry.display()))?;
    if !meta.is_file() {
        bail!("cannot read {}: not a file", args.entry.display());
    }
    let config = Config::load(&app_dir(&args.entry), args.profile.as_deref())?;
    if args.faux {
        // The app as the runtime loads it: the configured call limits, `--main`.
        return match faux::render(&args.entry, &call_limits(&config.limits), args.main) {
            Ok(text) => {
                say(&text);
                Ok(ExitCode::SUCCESS)
            }
            Err(text) => {
                say_err(&text);
                Ok(ExitCode::from(1))
            }
        };
    }
    let settings = Settings::resolve(args, config)?;
    if args.api_port != 0 && args.api_port != settings.port {
        tracing::warn!(
            api_port = args.api_port,
            "a separate API port is not supported; the API is served on the main port"
        );
    }
    let dev = args.dev;
    let outcome = actix_web::rt::System::new().block_on(serve(settings, dev));
    logging::flush();
    outcome
}

async fn serve(settings: Settings, dev: bool) -> Result<ExitCode> {
    let started = Instant::now();
    let invalidation = invalidation::Publisher::new(
        settings.cache_url.as_deref(),
        settings.invalidation_channel.as_deref(),
    );
    let events = crate::events::Events::start(&settings.events, settings.cache_url.as_deref());
    // Providers of `sv import`s come up before the app loads (spec: before serving);
    // they stop when this server returns.
    let sv = crate::sv::SvNatives::new(settings.sv.clone());
    let _siblings = match crate::sv::spawn_providers(&settings.entry, &sv) {
        Ok(siblings) => siblings,
        Err(message) => {
            say_err(&format!("error: {message}\n"));
            return Ok(ExitCode::from(1));
        }
    };
    let config = RuntimeConfig {
        entry: settings.entry.clone(),
        store_path: settings.store_path.clone(),
        docdb_uri: settings.docdb_uri.clone(),
        workers: settings.workers,
        limits: settings.limits(),
        max_replays: settings.limits.max_replays,
        as_main: settings.as_main,
        queue_capacity: settings.limits.run_queue_capacity,
        committed: invalidation.as_ref().map(invalidation::Publisher::sink),
        natives: actors::natives::chain(
            std::iter::once(
                crate::storage::StorageNatives::new(&settings.storage, &settings.app_dir)?.handle(),
            )
            .chain(events.as_ref().map(|e| e.natives()))
            .chain(std::iter::once(sv.handle()))
            .collect(),
        ),
        embedded: settings.embedded.clone(),
        l2: settings.l2.clone().ok(),
        inline_run_max_us: settings.limits.inline_run_max_us,
        inline_writers: settings.limits.inline_writers,
        retire_anchors: settings.limits.worker_retire_anchors,
    };
    match &settings.l2 {
        Ok(l2) => tracing::info!(
            target: "svc::cache",
            "L2 cache: on, over the cache store {} (entries live {} s)",
            actors::docstore::redact(&l2.url),
            l2.ttl.as_secs()
        ),
        Err(why) => tracing::info!(target: "svc::cache", "L2 cache: off ({why})"),
    }
    let (runtime, loaded) = match Runtime::start(config) {
        Ok(started) => started,
        Err(text) => {
            say_err(&text);
            return Ok(ExitCode::from(1));
        }
    };
    if !loaded.load_output.is_empty() {
        say(&loaded.load_output);
    }
    if let Some(invalidation) = invalidation {
        invalidation.start(&runtime);
    }
    let consumers = Subscribed {
        subscriptions: loaded.subscriptions.clone(),
        consumers: start_consumers(events.as_ref(), &runtime, &loaded.subscriptions),
    };
    let hooks = hooks::probe(&runtime).await;
    let (table, warnings) = RouteTable::build(&loaded.endpoints, hooks);
    for w in &warnings {
        tracing::warn!("{w}");
    }
    let openapi = settings.docs_enabled.then(|| {
        let header = &settings.identity.webhook.signature_header;
        let doc = openapi_document(&settings.app_name, &table, header).to_string();
        docs::Pages::new(&settings.app_name, doc)
    });

    let (listener, port) = listen::bind(&settings.host, settings.port)
        .with_context(|| format!("cannot listen on {}:{}", settings.host, settings.port))?;
    if port != settings.port && settings.port != 0 {
        say(&format!(
            "svc: port {} is in use; using port {port} instead\n",
            settings.port
        ));
    }
    let identity = web::Data::new(crate::identity::start(
        &settings.identity,
        &settings.store_path,
        runtime.shared_root(),
    )?);
    let users_backend = identity.users_backend().to_string();
    let entry = settings.entry.display().to_string();
    let host = settings.host.clone();
    let store = runtime.store_target().describe();
    let ws = ws::Registry::start(settings.websocket.clone(), settings.cache_url.as_deref());
    let state = web::Data::new(AppState {
        runtime: runtime.clone(),
        settings,
        draining: AtomicBool::new(false),
        ws,
        table: RwLock::new(Arc::new(table)),
        events: events.clone(),
        consumers: std::sync::Mutex::new(consumers),
    });

    let app_state = state.clone();
    let metrics_enabled = state.settings.metrics_enabled;
    let server = HttpServer::new(move || {
        // This closure runs once on each HTTP worker thread: let the thread host quick
        // runs itself (`actors::runtime`, inline runs).
        app_state.runtime.host_runs_here();
        let openapi = openapi.clone();
        App::new()
            .app_data(app_state.clone())
            .app_data(identity.clone())
            .wrap(middleware::HttpLayer)
            // The generated endpoints' own prefixes first: a call then does not try
            // every fixed route's pattern before it reaches the table (actix tries
            // routes in order; the patterns with parameters are regexes, ~5% of a
            // function call). No fixed route lives under them.
            .service(web::scope(GENERATED_PREFIXES[0]).default_service(web::to(routes::endpoint)))
            .service(web::scope(GENERATED_PREFIXES[1]).default_service(web::to(routes::endpoint)))
            .configure(health::configure)
            .configure(crate::identity::configure)
            .configure(crate::webhook::configure)
            .configure(ws::configure)
            .configure(graph::configure)
            .configure(move |cfg| {
                if metrics_enabled {
                    metrics::configure(cfg);
                }
            })
            .configure(move |cfg| {
                if let Some(pages) = &openapi {
                    docs::configure(cfg, pages);
                }
            })
            .service(
                web::resource("/")
                    .guard(guard::fn_guard(|ctx| {
                        ctx.app_data::<web::Data<AppState>>()
                            .is_some_and(|s| !s.table().claims("/"))
                    }))
                    .route(web::get().to(index)),
            )
            .default_service(web::to(routes::endpoint))
    })
    .on_connect(peer::on_connect)
    // Small writes go out at once: actix-web 4.18 leaves Nagle's algorithm on unless
    // told, and a WebSocket session that writes frame after frame then waits for the
    // peer's (delayed) ACK before each next one (benches/ws/README.md, "TCP_NODELAY").
    .tcp_nodelay(true)
    .workers(http_workers())
    .disable_signals()
    .shutdown_timeout(shutdown::SHUTDOWN_TIMEOUT_SECS)
    .listen(listener)?
    .run();
    shutdown::spawn(server.handle(), state.clone());
    if dev {
        dev::spawn(app_dir(&state.settings.entry), state.clone());
    }
    say(&format!("svc: users in {users_backend}\n"));
    // Everything logged while starting is on stderr before the ready line.
    logging::flush();
    say(&format!(
        "svc: serving {entry} at http://{host}:{port} (store: {store})\n"
    ));
    let _ = std::io::stdout().flush();
    tracing::debug!(startup_ms = started.elapsed().as_millis() as u64, "ready");

    server.await?;
    let consumers = state
        .consumers
        .lock()
        .map(|mut c| c.consumers.take())
        .unwrap_or_else(|p| p.into_inner().consumers.take());
    if let Some(consumers) = consumers {
        // Signalled and joined within the spec's 10 s.
        consumers.stop_and_join(Duration::from_secs(shutdown::SHUTDOWN_TIMEOUT_SECS));
    }
    if let Some(events) = &events {
        events.shutdown(Duration::from_secs(2));
    }
    shutdown::drain(&runtime).await;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// Wire the app's `@subscribe` handlers to the broker: one consumer-group actor each.
pub(crate) fn start_consumers(
    events: Option<&Arc<crate::events::Events>>,
    runtime: &Runtime,
    subscriptions: &[lang::serve::SubscriptionInfo],
) -> Option<crate::events::consumer::Consumers> {
    let Some(events) = events else {
        if !subscriptions.is_empty() {
            tracing::warn!(
                target: "svc::events",
                "{} @subscribe handler(s) not wired: [scale.events] enabled = false",
                subscriptions.len()
            );
        }
        return None;
    };
    let consumers = crate::events::consumer::Consumers::start(events, runtime, subscriptions);
    tracing::info!(
        target: "svc::events",
        "events: broker {}, {} subscription(s)",
        events.broker.kind(),
        consumers.len()
    );
    Some(consumers)
}

/// The path prefixes of the generated endpoints (`routes::RouteTable`), routed first.
pub(crate) const GENERATED_PREFIXES: [&str; 2] = ["/function", "/walker"];

/// HTTP worker threads: request handling only awaits the run pool, so few are needed.
fn http_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .div_ceil(1)
        .clamp(1, 4)
}

/// The OpenAPI document of the served routes.
fn openapi_document(title: &str, table: &RouteTable, signature_header: &str) -> serde_json::Value {
    let docs: Vec<openapi::RouteDoc<'_>> = table
        .routes()
        .map(|(method, path, endpoint)| {
            let pattern = routes::Pattern::parse(path);
            let path_params: Vec<&str> = pattern.params().collect();
            let query_params = endpoint
                .params
                .iter()
                .filter(|p| {
                    params::classify(p, method.as_str(), &path_params) == params::Source::Query
                })
                .map(|p| p.name.clone())
                .collect();
            openapi::RouteDoc {
                endpoint,
                method: method.to_string(),
                path: path.to_string(),
                path_params: path_params.iter().map(|s| s.to_string()).collect(),
                query_params,
            }
        })
        .collect();
    let mut docs = docs;
    let hooks = table.webhook_walkers();
    for endpoint in &hooks {
        let path = match &endpoint.spec.webhook {
            None => format!("/webhook/{}", endpoint.name),
            Some(_) => {
                let declared = endpoint.spec.path.as_deref().unwrap_or("");
                let sep = if declared.is_empty() || declared.starts_with('/') {
                    ""
                } else {
                    "/"
                };
                format!("/webhook/walker/{}{sep}{declared}", endpoint.name)
            }
        };
        let path_params = routes::Pattern::parse(&path)
            .params()
            .map(str::to_string)
            .collect();
        docs.push(openapi::RouteDoc {
            endpoint,
            method: "POST".into(),
            path,
            path_params,
            query_params: Vec::new(),
        });
    }
    openapi::build(title, env!("CARGO_PKG_VERSION"), &docs, signature_header)
}

/// `GET /` when no endpoint claims it: a small JSON index (decisions.md "Health").
async fn index(state: web::Data<AppState>) -> HttpResponse {
    let docs = state.settings.docs_enabled.then_some("/docs");
    envelope::plain_json(
        StatusCode::OK,
        &json!({
            "name": state.settings.app_name,
            "version": env!("CARGO_PKG_VERSION"),
            "docs": docs,
        }),
    )
}

/// Write to stdout; a closed stdout (`svc start | head`) is not an error worth dying for.
pub(crate) fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Write to stderr, ignoring a closed stream.
pub(crate) fn say_err(text: &str) {
    logging::flush();
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
