//! Server configuration for `svc start`: defaults, `svc.toml`, an optional profile file
//! and environment overrides, in that order (later wins). Command-line flags are applied
//! on top by the HTTP layer.
//!
//! Layout (see `svc.toml.example` for every key):
//!
//! 1. Built-in defaults (the spec's, plus `max_body_bytes` = 1 MiB from decisions.md).
//! 2. `<app_dir>/svc.toml`, if present: `[scale.server]`, `[scale.database]`,
//!    `[scale.limits]`, `[scale.websocket]`, `[scale.webhook]`, `[scale.events]` with
//!    `[scale.events.retry]`, the identity sections `[scale.jwt]`, `[scale.auth]`,
//!    `[scale.emailer]`, `[scale.emailer.smtp]`, and the storage section `[storage]` (or
//!    `[scale.storage]`, read after it).
//! 3. The profile file `<app_dir>/svc.<profile>.toml`, same layout, overlaid key by key,
//!    when a profile is named by `--profile` or, failing that, by `SVC_PROFILE`. The spec
//!    leaves profile files "not shown"; this is our choice. A named profile whose file is
//!    missing is an error (a typo must not silently run with the base settings).
//! 4. Environment variables (`SVC_SERVER_PORT`, ..., `DOCDB_URI`, `CACHE_URL`, and the
//!    spec's `JWT_SECRET`, `JWT_ALGORITHM`, `JWT_EXP_DELTA_DAYS`, `EMAILER_SMTP_PASSWORD`).
//!    An empty value counts as unset.
//!
//! `svc run` resolves the store path through the same files and variables (see
//! `cli::run`), so a script seeds the store `svc start` serves.
//!
//! Unknown keys inside the sections we read are ignored with a warning (through
//! `tracing`, so install the subscriber before loading), except in `[scale.emailer]`,
//! whose other keys are kept for a `package.module:ClassName` provider (the emailer
//! warns about them when another provider is in use). Keys the spec assigns to these
//! sections but later issues implement are accepted silently. Other sections belong to
//! their own features and are not looked at here. A value of the wrong type is an error
//! naming the key and the file.

use anyhow::{anyhow, bail};
use std::path::{Path, PathBuf};

/// Name of the main configuration file, next to the entry file.
pub const CONFIG_FILE: &str = "svc.toml";
/// Default of `max_body_bytes`: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
/// Default of `shelf_db_path`, relative to the app directory.
pub const DEFAULT_SHELF_DB_PATH: &str = ".svc/data/anchor_store.db";
/// Default of `body_read_timeout_seconds`.
pub const DEFAULT_BODY_READ_TIMEOUT_SECONDS: u64 = 30;

/// The whole configuration `svc start` runs with.
#[derive(Clone, Debug)]
pub struct Config {
    pub server: ServerConfig,
    pub database: DatabaseConfig,
    /// `[scale.limits]`: bounds of the run pool and the interpreter.
    pub limits: LimitsConfig,
    /// `[scale.websocket]`: heartbeat and bounds of `/ws/<walker>` sessions.
    pub websocket: WebsocketConfig,
    /// `[scale.jwt]`.
    pub jwt: JwtConfig,
    /// `[scale.auth]`.
    pub auth: AuthConfig,
    /// `[scale.emailer]` with `[scale.emailer.smtp]`.
    pub emailer: EmailerConfig,
    /// `[scale.webhook]`: API keys and webhook signatures.
    pub webhook: WebhookConfig,
    /// `[scale.admin]`: the admin portal and the bootstrap admin.
    pub admin: AdminConfig,
    /// `[scale.sso]` with `[scale.sso.<platform>]`: single sign-on.
    pub sso: SsoConfig,
    /// `[scale.events]` with `[scale.events.retry]`: the event-streaming broker.
    pub events: EventsConfig,
    /// `[storage]` / `[scale.storage]`: the `store()` builtin's backend.
    pub storage: StorageConfig,
    /// `[scale.graph]`: bounds of `/graph/data` and `/traverse`.
    pub graph: GraphConfig,
    /// `[scale.kubernetes]`: what `svc start --scale` provisions.
    pub kubernetes: KubernetesConfig,
    /// `[scale.sv]`: the bundled service-to-service call policy.
    pub sv: SvConfig,
    /// The profile in effect (`--profile`, else `SVC_PROFILE`).
    pub profile: Option<String>,
    /// `[scale.server] host` was set by a file or `SVC_SERVER_HOST` (not the default):
    /// the server then binds it even with a generated development JWT secret.
    pub host_explicit: bool,
    /// Configuration files actually read, in order.
    pub source: Vec<PathBuf>,
}

/// `[scale.limits]`: bounds of each walker or function call (read by the run pool and
/// the interpreter).
#[derive(Clone, Debug, PartialEq)]
pub struct LimitsConfig {
    /// Wall-clock budget of one call, seconds (30).
    pub call_timeout_seconds: f64,
    /// Deepest svc call stack (1000; at most 10,000).
    pub max_call_depth: u32,
    /// Largest string one operation may build (64 MiB).
    pub max_string_bytes: usize,
    /// Most items one list, tuple, dict or set may hold (10,000,000).
    pub max_collection_items: usize,
    /// Largest JSON result of one call (16 MiB).
    pub max_response_bytes: usize,
    /// Calls waiting for a worker at most; beyond, 503 (1024).
    pub run_queue_capacity: usize,
    /// Optimistic-concurrency replays of a call before 409 (8).
    pub max_replays: u32,
    /// A call whose endpoint's recent runs averaged at most this many microseconds runs
    /// on the HTTP thread that received it instead of the run pool (1000; 0 = never).
    pub inline_run_max_us: u64,
    /// Whether an endpoint that committed in its recent runs may run inline too (false:
    /// writers go to the run pool, where concurrent commits share group commits).
    pub inline_writers: bool,
    /// Anchors (loaded or committed) past which one call retires its run worker for a
    /// fresh thread, handing the heap the call grew back to the system (4096; 0 = never).
    pub worker_retire_anchors: usize,
}

impl Default for LimitsConfig {
    fn default() -> LimitsConfig {
        LimitsConfig {
            call_timeout_seconds: 30.0,
            max_call_depth: 1000,
            max_string_bytes: 64 << 20,
            max_collection_items: 10_000_000,
            max_response_bytes: 16 << 20,
            run_queue_capacity: 1024,
            max_replays: 8,
            inline_run_max_us: 1_000,
            inline_writers: false,
            worker_retire_anchors: actors::runtime::DEFAULT_RETIRE_ANCHORS,
        }
    }
}

/// `[scale.websocket]`: WebSocket sessions (`/ws/<walker>`).
#[derive(Clone, Debug, PartialEq)]
pub struct WebsocketConfig {
    /// Seconds between the server's protocol pings (30).
    pub ping_interval_seconds: f64,
    /// A session that sent nothing (frame, ping or pong) for this long is closed (90).
    pub idle_timeout_seconds: f64,
    /// A private walker's session has this long to send its token (first message) (10).
    pub auth_timeout_seconds: f64,
    /// Largest client message, continuation frames included (64 KiB); beyond, close 4413.
    pub max_frame_bytes: usize,
    /// Frames waiting to be written to one client (256); when full, close 1013.
    pub outbox_capacity: usize,
    /// Client messages of one session waiting for their run (64); beyond, an error frame.
    pub max_queued_messages: usize,
    /// Open sessions per process (16384); beyond, 503 before the upgrade.
    pub max_connections: usize,
    /// Cache-store pub/sub channel of cross-replica broadcasts (`svc:ws:broadcast`);
    /// identical on all replicas of one app sharing a cache.
    pub broadcast_channel: String,
}

impl Default for WebsocketConfig {
    fn default() -> WebsocketConfig {
        WebsocketConfig {
            ping_interval_seconds: 30.0,
            idle_timeout_seconds: 90.0,
            auth_timeout_seconds: 10.0,
            max_frame_bytes: 64 * 1024,
            outbox_capacity: 256,
            max_queued_messages: 64,
            max_connections: 16384,
            broadcast_channel: "svc:ws:broadcast".into(),
        }
    }
}

/// `[scale.events]`: event streaming (service-spec "Events"; decisions.md "Events").
#[derive(Clone, Debug, PartialEq)]
pub struct EventsConfig {
    /// Master switch (false): when off every event call is a no-op.
    pub enabled: bool,
    /// Cache-store URL of the stream broker; `None` = `[scale.database] cache_url`
    /// (`CACHE_URL`), else the in-memory broker.
    pub url: Option<String>,
    /// Consumer group of subscriptions and `broker.consume` that name none (`svc-scale`).
    pub consumer_group: String,
    /// Wire format: `json` (CloudEvents 1.0 JSON) only.
    pub serializer: String,
    /// An event delivered but not acknowledged this long is delivered again, to any
    /// consumer of its group (30).
    pub visibility_timeout_seconds: f64,
    /// `[scale.events.retry]`.
    pub retry: EventRetryConfig,
    /// Deliveries one subscription runs at once (64).
    pub max_in_flight: usize,
    /// Deliveries of one subscription sent to a run worker in one message (16): they run
    /// one after the other there, each its own run and commit; a failing one is retried
    /// alone.
    pub delivery_batch: usize,
    /// Published events waiting for the stream broker (10,000); beyond, dropped (logged).
    pub publish_queue_capacity: usize,
    /// Events kept per topic (100,000): the in-memory broker drops the oldest beyond it,
    /// the stream broker trims approximately (`XADD MAXLEN ~`).
    pub max_retained_events: usize,
    /// Largest serialized event (1 MiB); a larger one is not published (logged), a
    /// larger one read from the stream is dead-lettered unread.
    pub max_event_bytes: usize,
    /// Longest one broker read waits before a consumer checks for shutdown (0.5 s).
    pub poll_interval_seconds: f64,
    /// Most events one `broker.consume` returns (1,000).
    pub max_consume_messages: usize,
}

/// `[scale.events.retry]`.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRetryConfig {
    /// Delivery attempts before the dead-letter topic (3).
    pub max_attempts: u32,
    /// Delay before retry n (index n-1), clamped to the last value (`[1, 5, 30]`).
    pub backoff_seconds: Vec<f64>,
    /// Appended to a topic to name its dead-letter topic (`.dlq`).
    pub dead_letter_suffix: String,
}

impl Default for EventsConfig {
    fn default() -> EventsConfig {
        EventsConfig {
            enabled: false,
            url: None,
            consumer_group: "svc-scale".into(),
            serializer: "json".into(),
            visibility_timeout_seconds: 30.0,
            retry: EventRetryConfig {
                max_attempts: 3,
                backoff_seconds: vec![1.0, 5.0, 30.0],
                dead_letter_suffix: ".dlq".into(),
            },
            max_in_flight: 64,
            delivery_batch: 16,
            publish_queue_capacity: 10_000,
            max_retained_events: 100_000,
            max_event_bytes: 1 << 20,
            poll_interval_seconds: 0.5,
            max_consume_messages: 1000,
        }
    }
}

/// `[scale.sv]`: service-to-service calls (`sv import`).
#[derive(Clone, Debug, PartialEq)]
pub struct SvConfig {
    /// One attempt's time budget, connect to last byte (30 s).
    pub rpc_timeout_seconds: f64,
    /// Attempts of a call whose transport fails (3); provider errors are not retried.
    pub max_attempts: u32,
    /// Consecutive transport failures that open a provider's circuit breaker (5).
    pub breaker_failures: u32,
    /// How long an open breaker refuses calls before one probes again (30 s).
    pub breaker_open_seconds: f64,
    /// Keep-alive connections per provider, in use or idle (32).
    pub pool_max_connections: usize,
    /// An idle pooled connection is closed after this long (4 s: under the 5 s
    /// keep-alive timeout of an svc provider).
    pub pool_idle_seconds: f64,
    /// Calls waiting in one provider's client mailbox (1024); more are refused.
    pub mailbox_capacity: usize,
    /// Provider client actors per process (64); past it the least recently used goes.
    pub max_providers: usize,
}

impl Default for SvConfig {
    fn default() -> SvConfig {
        SvConfig {
            rpc_timeout_seconds: 30.0,
            max_attempts: 3,
            breaker_failures: 5,
            breaker_open_seconds: 30.0,
            pool_max_connections: 32,
            pool_idle_seconds: 4.0,
            mailbox_capacity: 1024,
            max_providers: 64,
        }
    }
}

/// The weak development default of every `[scale.kubernetes]` password (the spec
/// omits its value; deploys warn while one is in use).
pub const DEV_PASSWORD: &str = "svc-dev-password";

/// `[scale.kubernetes]`: the deploy target (spec "Deployment provisioning"; our extra
/// keys name the images, sizes and the namespace the spec leaves open).
#[derive(Clone, PartialEq, Eq)]
pub struct KubernetesConfig {
    pub docdb_enabled: bool,
    pub cache_enabled: bool,
    pub docdb_root_username: String,
    pub docdb_root_password: String,
    pub cache_username: String,
    pub cache_password: String,
    pub cache_dashboard: bool,
    pub docdb_dashboard: bool,
    pub logs_enabled: bool,
    pub cache_dashboard_username: String,
    pub cache_dashboard_password: String,
    pub docdb_dashboard_username: String,
    pub docdb_dashboard_password: String,
    /// Namespace of every namespaced object (`default`).
    pub namespace: String,
    /// Image of the app containers: it must hold the `svc` binary on its `PATH`.
    pub image: String,
    /// App replicas (1).
    pub replicas: u32,
    /// The ingress controller's one node port (30080).
    pub node_port: u16,
    pub docdb_image: String,
    pub cache_image: String,
    /// Persistent volume sizes of the document database and the cache store.
    pub docdb_storage: String,
    pub cache_storage: String,
    /// Host name of the ingress (none: any host); required by `--enable-tls`.
    pub domain: Option<String>,
    /// Certificate issuer named by `--enable-tls` (`letsencrypt-prod`, a cert-manager
    /// ClusterIssuer).
    pub tls_issuer: String,
    /// Longest wait for one request to the API server (10 s), connecting included;
    /// then the cluster command fails with exit 1.
    pub request_timeout_seconds: u64,
}

impl Default for KubernetesConfig {
    fn default() -> KubernetesConfig {
        KubernetesConfig {
            docdb_enabled: true,
            cache_enabled: true,
            docdb_root_username: "admin".into(),
            docdb_root_password: DEV_PASSWORD.into(),
            cache_username: "admin".into(),
            cache_password: DEV_PASSWORD.into(),
            cache_dashboard: false,
            docdb_dashboard: false,
            logs_enabled: false,
            cache_dashboard_username: "admin".into(),
            cache_dashboard_password: DEV_PASSWORD.into(),
            docdb_dashboard_username: "admin".into(),
            docdb_dashboard_password: DEV_PASSWORD.into(),
            namespace: "default".into(),
            image: "svc:latest".into(),
            replicas: 1,
            node_port: 30080,
            docdb_image: "mongo:7.0".into(),
            cache_image: "redis:7.2".into(),
            docdb_storage: "5Gi".into(),
            cache_storage: "1Gi".into(),
            domain: None,
            tls_issuer: "letsencrypt-prod".into(),
            request_timeout_seconds: 10,
        }
    }
}

impl std::fmt::Debug for KubernetesConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesConfig")
            .field("docdb_enabled", &self.docdb_enabled)
            .field("cache_enabled", &self.cache_enabled)
            .field("namespace", &self.namespace)
            .field("image", &self.image)
            .finish_non_exhaustive()
    }
}

/// `[scale.graph]`: how much one `/graph/data` or `/traverse` answer may hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphConfig {
    /// Most nodes in one answer (512, the spec's `graph_visualize` default); a walk
    /// cut short answers `truncated: true`.
    pub node_limit: usize,
    /// Most edges in one answer (512).
    pub edge_limit: usize,
    /// Largest `depth` a request may ask for (64); `/graph/data` walks this deep.
    pub max_depth: u32,
}

impl Default for GraphConfig {
    fn default() -> GraphConfig {
        GraphConfig {
            node_limit: 512,
            edge_limit: 512,
            max_depth: 64,
        }
    }
}

/// `[scale.server]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Listen port (8000).
    pub port: u16,
    /// Bind address (`0.0.0.0`).
    pub host: String,
    /// Serve `/docs`, `/redoc` and `/openapi.json` (true).
    pub docs_enabled: bool,
    /// Leave access-log lines of `/`, `/docs`, `/openapi.json` and the health paths out (false).
    pub suppress_health_check_logs: bool,
    /// Largest accepted request body (1 MiB), on every route; larger bodies get 413.
    pub max_body_bytes: usize,
    /// Longest time a request body may take to arrive, on every route (30 s); then 408.
    pub body_read_timeout_seconds: u64,
    /// Origins allowed by CORS (`["*"]`): `"*"` = any origin, without credentials;
    /// explicit origins (`https://app.example.com`) are echoed with credentials allowed;
    /// an empty list disables CORS.
    pub cors_origins: Vec<String>,
    /// Serve `GET /metrics` (true).
    pub metrics_enabled: bool,
    /// When set, `/metrics` requires `Authorization: Bearer <this token>` (none).
    pub metrics_token: Option<String>,
    /// Label sets kept per metric family (10,000); samples of more are dropped.
    pub metrics_max_series: usize,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            port: 8000,
            host: "0.0.0.0".into(),
            docs_enabled: true,
            suppress_health_check_logs: false,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            body_read_timeout_seconds: DEFAULT_BODY_READ_TIMEOUT_SECONDS,
            cors_origins: vec!["*".into()],
            metrics_enabled: true,
            metrics_token: None,
            metrics_max_series: crate::metrics::DEFAULT_MAX_SERIES,
        }
    }
}

/// `[scale.database]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseConfig {
    /// The embedded anchor store; a relative path is resolved against the app directory.
    pub shelf_db_path: PathBuf,
    /// Document database URI; when set, persistence uses the document backend.
    pub docdb_uri: Option<String>,
    /// Cache store URL (L2 and cross-replica L1 invalidation).
    pub cache_url: Option<String>,
    /// Publish every commit's anchors and flag them stale in the other live runs of
    /// every replica (needs `cache_url`).
    pub cache_l1_invalidation_enabled: bool,
    /// The pub/sub channel of the invalidations (identical on every replica).
    pub cache_l1_invalidation_channel: String,
    /// Document tier: read through the L2 cache in the cache store (needs `cache_url`).
    pub cache_l2_enabled: bool,
    /// Document tier: the longest an L2 entry lives (seconds, 1..=86400).
    pub cache_l2_ttl_seconds: u32,
    /// Embedded tier: approximate bytes of the process-wide L1 anchor cache (0 = off).
    pub l1_cache_bytes: usize,
    /// Embedded tier: most calls whose commits share one SQLite transaction.
    pub group_commit_max: usize,
    /// Embedded tier: how long a group's leader waits for more calls (µs, 0 = none).
    pub group_commit_wait_us: u32,
    /// Embedded tier: most handed-off (pipelined) commits waiting at once (0 = off).
    pub group_commit_pipeline: usize,
    /// Embedded tier: write-ahead log size past which the checkpointer restarts the log.
    pub wal_max_bytes: u64,
    /// Embedded tier: the least time between two checkpoints (ms).
    pub checkpoint_interval_ms: u32,
}

impl DatabaseConfig {
    /// The document tier's L2 cache, or why there is none (for the startup log).
    pub fn l2_settings(&self) -> Result<actors::l2::L2Settings, &'static str> {
        if self.docdb_uri.is_none() {
            return Err("the embedded tier's process-wide L1 cache serves instead");
        }
        let Some(url) = &self.cache_url else {
            return Err("no cache URL");
        };
        if !self.cache_l2_enabled {
            return Err("[scale.database] cache_l2_enabled = false");
        }
        Ok(actors::l2::L2Settings {
            url: url.clone(),
            ttl: std::time::Duration::from_secs(u64::from(self.cache_l2_ttl_seconds)),
        })
    }

    /// The graph tier this configuration names, with its L2 cache.
    pub fn store_target(&self) -> actors::StoreTarget {
        actors::StoreTarget::choose(self.shelf_db_path.clone(), self.docdb_uri.as_deref())
            .with_l2(self.l2_settings().ok())
    }
}

/// Default `cache_l1_invalidation_channel`.
pub const DEFAULT_INVALIDATION_CHANNEL: &str = "svc:anchor:invalidate";

impl DatabaseConfig {
    fn defaults(app_dir: &Path) -> DatabaseConfig {
        DatabaseConfig {
            shelf_db_path: app_dir.join(DEFAULT_SHELF_DB_PATH),
            docdb_uri: None,
            cache_url: None,
            cache_l1_invalidation_enabled: true,
            cache_l1_invalidation_channel: DEFAULT_INVALIDATION_CHANNEL.into(),
            cache_l2_enabled: true,
            cache_l2_ttl_seconds: actors::l2::DEFAULT_TTL.as_secs() as u32,
            l1_cache_bytes: actors::l1::DEFAULT_CACHE_BYTES,
            group_commit_max: actors::l1::DEFAULT_GROUP_MAX,
            group_commit_wait_us: actors::l1::DEFAULT_GROUP_WAIT.as_micros() as u32,
            group_commit_pipeline: actors::l1::DEFAULT_PIPELINE,
            wal_max_bytes: actors::checkpoint::DEFAULT_WAL_BYTES,
            checkpoint_interval_ms: actors::checkpoint::DEFAULT_INTERVAL.as_millis() as u32,
        }
    }
}

/// Default of `[storage] max_object_bytes`: 64 MiB.
pub const DEFAULT_MAX_OBJECT_BYTES: u64 = 64 * 1024 * 1024;

/// `[storage]` or `[scale.storage]` (the spec allows both; `[scale.storage]` is read
/// second, so it wins key by key): the backend of `store()`.
#[derive(Clone, PartialEq)]
pub struct StorageConfig {
    /// `local` or `object`.
    pub kind: StorageKind,
    /// Files of the local backend (and local paths named by svc code); relative to the
    /// app directory.
    pub base_path: PathBuf,
    /// Create missing directories (the base path, a destination's parents).
    pub create_dirs: bool,
    /// Object backend: the bucket (required when `type = "object"`).
    pub bucket: Option<String>,
    pub region: String,
    /// Key prefix inside the bucket (no leading or trailing `/`).
    pub prefix: String,
    /// An S3-compatible endpoint (`http://127.0.0.1:9000`); `None` = AWS.
    pub endpoint_url: Option<String>,
    /// `get_url` answers a permanent public URL instead of a pre-signed one.
    pub public_read: bool,
    /// Credentials; `None` = the standard `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`
    /// / `AWS_SESSION_TOKEN` environment variables.
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    /// Largest object `upload`/`download`/`copy` handle.
    pub max_object_bytes: u64,
    /// Longest one object-storage operation may take.
    pub timeout_seconds: f64,
}

/// `[storage] type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageKind {
    Local,
    Object,
}

impl StorageKind {
    fn parse(s: &str) -> Option<StorageKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "local" => Some(StorageKind::Local),
            "object" => Some(StorageKind::Object),
            _ => None,
        }
    }
}

impl StorageConfig {
    fn defaults(app_dir: &Path) -> StorageConfig {
        StorageConfig {
            kind: StorageKind::Local,
            base_path: app_dir.join("storage"),
            create_dirs: true,
            bucket: None,
            region: "us-east-1".into(),
            prefix: String::new(),
            endpoint_url: None,
            public_read: false,
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            max_object_bytes: DEFAULT_MAX_OBJECT_BYTES,
            timeout_seconds: 30.0,
        }
    }
}

impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redact = |s: &Option<String>| s.as_ref().map(|_| "<redacted>");
        f.debug_struct("StorageConfig")
            .field("kind", &self.kind)
            .field("base_path", &self.base_path)
            .field("create_dirs", &self.create_dirs)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("prefix", &self.prefix)
            .field("endpoint_url", &self.endpoint_url)
            .field("public_read", &self.public_read)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &redact(&self.secret_access_key))
            .field("session_token", &redact(&self.session_token))
            .field("max_object_bytes", &self.max_object_bytes)
            .field("timeout_seconds", &self.timeout_seconds)
            .finish()
    }
}

/// `[scale.jwt]`: session tokens.
#[derive(Clone, PartialEq, Eq)]
pub struct JwtConfig {
    /// Signing secret; `None` = a random development secret generated on first start and
    /// kept in the data directory (a warning; the `prod` profile refuses to start
    /// without a configured secret).
    pub secret: Option<String>,
    /// `HS256` (default), `HS384` or `HS512`.
    pub algorithm: String,
    /// Token lifetime in days (7).
    pub exp_delta_days: u32,
    /// Tolerated clock difference, in seconds, for `iat` and `nbf` (60): a token issued
    /// (or valid from) further in the future is refused.
    pub clock_skew_seconds: u64,
}

impl Default for JwtConfig {
    fn default() -> JwtConfig {
        JwtConfig {
            secret: None,
            algorithm: "HS256".into(),
            exp_delta_days: 7,
            clock_skew_seconds: 60,
        }
    }
}

impl std::fmt::Debug for JwtConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtConfig")
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("algorithm", &self.algorithm)
            .field("exp_delta_days", &self.exp_delta_days)
            .field("clock_skew_seconds", &self.clock_skew_seconds)
            .finish()
    }
}

/// `[scale.webhook]`: API keys and inbound webhooks (spec "Authentication" 6).
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookConfig {
    /// The spec's `secret` (`WEBHOOK_SECRET`): accepted, not used. Signatures are keyed
    /// with the API key itself (decisions.md), so no server-wide secret is needed.
    pub secret: Option<String>,
    /// Header carrying the signature (`X-Webhook-Signature`).
    pub signature_header: String,
    /// Check the signature (true).
    pub verify_signature: bool,
    /// Default API key lifetime in days (365); 0 = permanent.
    pub api_key_expiry_days: u32,
    /// Require a signed `X-Webhook-Timestamp` (false).
    pub replay_guard: bool,
    /// Largest distance of that timestamp from the server's clock, seconds (300).
    pub timestamp_tolerance_seconds: u64,
    /// Keys one user may hold, per flavor (100).
    pub max_keys_per_user: usize,
}

impl Default for WebhookConfig {
    fn default() -> WebhookConfig {
        WebhookConfig {
            secret: None,
            signature_header: "X-Webhook-Signature".into(),
            verify_signature: true,
            api_key_expiry_days: 365,
            replay_guard: false,
            timestamp_tolerance_seconds: 300,
            max_keys_per_user: 100,
        }
    }
}

impl std::fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("signature_header", &self.signature_header)
            .field("verify_signature", &self.verify_signature)
            .field("api_key_expiry_days", &self.api_key_expiry_days)
            .field("replay_guard", &self.replay_guard)
            .field(
                "timestamp_tolerance_seconds",
                &self.timestamp_tolerance_seconds,
            )
            .field("max_keys_per_user", &self.max_keys_per_user)
            .finish()
    }
}

/// `[scale.admin]`: the admin portal and API (spec "Authentication" 12).
#[derive(Clone, PartialEq, Eq)]
pub struct AdminConfig {
    /// false: no bootstrap admin, every `/admin*` route is 404 (true).
    pub enabled: bool,
    /// The bootstrap admin's username (`admin`; env `ADMIN_USERNAME`).
    pub username: String,
    /// The bootstrap admin's e-mail, verified (empty = none; env `ADMIN_EMAIL`).
    pub email: String,
    /// The bootstrap admin's first password (env `ADMIN_DEFAULT_PASSWORD`); empty = a
    /// random one written to `admin_password` next to the store file.
    pub default_password: String,
    /// Lifetime of an `/admin/login` token (24 h).
    pub session_expiry_hours: u32,
    /// The bootstrap admin must change its password before any admin action (true).
    pub require_password_reset: bool,
    /// Largest page of `GET /admin/users` (500).
    pub max_page_size: usize,
}

impl Default for AdminConfig {
    fn default() -> AdminConfig {
        AdminConfig {
            enabled: true,
            username: "admin".into(),
            email: String::new(),
            default_password: String::new(),
            session_expiry_hours: 24,
            require_password_reset: true,
            max_page_size: 500,
        }
    }
}

impl std::fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminConfig")
            .field("enabled", &self.enabled)
            .field("username", &self.username)
            .field("email", &self.email)
            .field("default_password", &"<redacted>")
            .field("session_expiry_hours", &self.session_expiry_hours)
            .field("require_password_reset", &self.require_password_reset)
            .field("max_page_size", &self.max_page_size)
            .finish()
    }
}

/// `[scale.sso]` (spec "Authentication" 8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsoConfig {
    /// The server's public base URL; the callback is `<host>/sso/<platform>/callback`.
    /// Empty = the scheme and host of each request.
    pub host: String,
    /// Empty = the callback answers JSON; else it redirects there.
    pub client_auth_callback_url: String,
    /// Seconds between the redirect to the provider and the callback (600).
    pub state_ttl_seconds: u64,
    /// Sign-ins in progress at most (10000).
    pub max_pending_logins: u64,
    /// Timeout of each request to a provider (10 s).
    pub http_timeout_seconds: u64,
    /// How long a provider's discovery document is reused (3600 s).
    pub discovery_ttl_seconds: u64,
    /// Largest answer read from a provider (1 MiB).
    pub max_response_bytes: usize,
    /// `[scale.sso.<platform>]`: one per platform of `actors::identity::sso::PLATFORMS`,
    /// then any other `[scale.sso.<name>]` (another OpenID Connect provider).
    pub providers: Vec<SsoProviderConfig>,
}

/// `[scale.sso.<platform>]`.
#[derive(Clone, PartialEq, Eq)]
pub struct SsoProviderConfig {
    pub platform: String,
    pub client_id: String,
    pub client_secret: String,
    pub issuer: String,
    pub scopes: String,
    pub response_mode: String,
}

impl std::fmt::Debug for SsoProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SsoProviderConfig")
            .field("platform", &self.platform)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("issuer", &self.issuer)
            .field("scopes", &self.scopes)
            .field("response_mode", &self.response_mode)
            .finish()
    }
}

impl SsoProviderConfig {
    /// The defaults of one platform: the public issuer of the provider where it has one.
    fn defaults(platform: &str) -> SsoProviderConfig {
        let (issuer, scopes, response_mode) = match platform {
            "google" => ("https://accounts.google.com", "openid email profile", ""),
            "apple" => (
                "https://appleid.apple.com",
                "openid email name",
                "form_post",
            ),
            _ => ("", "openid email profile", ""),
        };
        SsoProviderConfig {
            platform: platform.into(),
            client_id: String::new(),
            client_secret: String::new(),
            issuer: issuer.into(),
            scopes: scopes.into(),
            response_mode: response_mode.into(),
        }
    }
}

impl Default for SsoConfig {
    fn default() -> SsoConfig {
        SsoConfig {
            host: String::new(),
            client_auth_callback_url: String::new(),
            state_ttl_seconds: 600,
            max_pending_logins: 10_000,
            http_timeout_seconds: 10,
            discovery_ttl_seconds: 3600,
            max_response_bytes: 1_048_576,
            providers: actors::identity::sso::PLATFORMS
                .iter()
                .map(|p| SsoProviderConfig::defaults(p))
                .collect(),
        }
    }
}

/// `[scale.auth]`: one-time tokens, password hashing and login throttling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthConfig {
    /// Lifetime of an e-mail verification token (86400 s).
    pub verify_token_ttl_seconds: u64,
    /// Lifetime of a password reset token (1800 s).
    pub reset_token_ttl_seconds: u64,
    /// Link mailed for verification; `{token}` is replaced by the raw token; empty = the
    /// bare token.
    pub verify_url_template: String,
    /// Link mailed for a password reset, same rules.
    pub reset_url_template: String,
    /// bcrypt cost of new password hashes (12; 4-31).
    pub bcrypt_cost: u32,
    /// Failed logins per identity within the window before 429 (5).
    pub login_max_failures: u32,
    /// Failed logins per client address within the window before 429 (20).
    pub login_max_failures_per_address: u32,
    /// The sliding window of failed-login counting, and the longest lockout (900 s).
    pub login_failure_window_seconds: u64,
    /// Password hashes waiting for a bcrypt slot (one slot per core) at most (64);
    /// beyond it 503 `SERVICE_UNAVAILABLE` with `Retry-After`.
    pub bcrypt_queue_capacity: u32,
    /// Registrations per client address within `register_window_seconds` (10); then 429.
    pub register_max_per_address: u32,
    /// The sliding window of registration counting (3600 s).
    pub register_window_seconds: u64,
}

impl Default for AuthConfig {
    fn default() -> AuthConfig {
        AuthConfig {
            verify_token_ttl_seconds: 86_400,
            reset_token_ttl_seconds: 1_800,
            verify_url_template: String::new(),
            reset_url_template: String::new(),
            bcrypt_cost: 12,
            login_max_failures: 5,
            login_max_failures_per_address: 20,
            login_failure_window_seconds: 900,
            bcrypt_queue_capacity: 64,
            register_max_per_address: 10,
            register_window_seconds: 3600,
        }
    }
}

/// `[scale.emailer]`.
#[derive(Clone, PartialEq)]
pub struct EmailerConfig {
    /// Empty = e-mail disabled; `smtp`, a provider registered by name, or
    /// `package.module:ClassName` (an `obj` in `<app_dir>/package/module.svc`).
    pub provider: String,
    /// `From:` of outgoing mail.
    pub from_address: String,
    /// False disables e-mail features whatever the provider.
    pub enabled: bool,
    pub smtp: SmtpConfig,
    /// The other keys of `[scale.emailer]`, as JSON: settings of a
    /// `package.module:ClassName` provider (an API key, a region...).
    pub options: serde_json::Map<String, serde_json::Value>,
    /// The app directory, where `package.module:ClassName` modules are looked up.
    pub app_dir: PathBuf,
}

impl std::fmt::Debug for EmailerConfig {
    /// Option values may be secrets: only their keys are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmailerConfig")
            .field("provider", &self.provider)
            .field("from_address", &self.from_address)
            .field("enabled", &self.enabled)
            .field("smtp", &self.smtp)
            .field("options", &self.options.keys().collect::<Vec<_>>())
            .field("app_dir", &self.app_dir)
            .finish()
    }
}

impl Default for EmailerConfig {
    fn default() -> EmailerConfig {
        EmailerConfig {
            provider: String::new(),
            from_address: String::new(),
            enabled: true,
            smtp: SmtpConfig::default(),
            options: serde_json::Map::new(),
            app_dir: PathBuf::from("."),
        }
    }
}

/// `[scale.emailer.smtp]`.
#[derive(Clone, PartialEq)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    /// Empty = no authentication.
    pub username: String,
    /// Prefer the environment variable `EMAILER_SMTP_PASSWORD`.
    pub password: String,
    /// STARTTLS, required when true.
    pub use_tls: bool,
    /// Connect and command timeout in seconds (10.0).
    pub timeout: f64,
    /// Extra PEM certificate(s) to trust for STARTTLS (a private relay's CA), besides the
    /// built-in web roots. Relative paths are resolved against the app directory.
    pub ca_file: Option<PathBuf>,
}

impl Default for SmtpConfig {
    fn default() -> SmtpConfig {
        SmtpConfig {
            host: "localhost".into(),
            port: 25,
            username: String::new(),
            password: String::new(),
            use_tls: true,
            timeout: 10.0,
            ca_file: None,
        }
    }
}

impl std::fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("username", &self.username)
            .field(
                "password",
                &(!self.password.is_empty()).then_some("<redacted>"),
            )
            .field("use_tls", &self.use_tls)
            .field("timeout", &self.timeout)
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

/// Keys of `[scale.server]` that later issues read: accepted without a warning.
const SERVER_LATER_KEYS: &[&str] = &[];

impl Config {
    /// Load the configuration of the app in `app_dir`. `profile` (from `--profile`) beats
    /// the `SVC_PROFILE` environment variable.
    pub fn load(app_dir: &Path, profile: Option<&str>) -> anyhow::Result<Config> {
        Config::load_with_env(app_dir, profile, &|name| std::env::var(name).ok())
    }

    /// [`Config::load`] with the environment supplied by `env` (tests).
    pub fn load_with_env(
        app_dir: &Path,
        profile: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Config> {
        let env = |name: &str| env(name).filter(|v| !v.is_empty());
        let mut config = Config {
            server: ServerConfig::default(),
            database: DatabaseConfig::defaults(app_dir),
            limits: LimitsConfig::default(),
            websocket: WebsocketConfig::default(),
            jwt: JwtConfig::default(),
            auth: AuthConfig::default(),
            emailer: EmailerConfig {
                app_dir: app_dir.to_path_buf(),
                ..EmailerConfig::default()
            },
            webhook: WebhookConfig::default(),
            admin: AdminConfig::default(),
            sso: SsoConfig::default(),
            events: EventsConfig::default(),
            storage: StorageConfig::defaults(app_dir),
            graph: GraphConfig::default(),
            kubernetes: KubernetesConfig::default(),
            sv: SvConfig::default(),
            profile: None,
            host_explicit: false,
            source: Vec::new(),
        };

        let base = app_dir.join(CONFIG_FILE);
        if let Some(text) = read_if_present(&base)? {
            config.apply_file(app_dir, &base, &text)?;
        }

        let profile = match profile.filter(|p| !p.is_empty()) {
            Some(p) => Some(p.to_string()),
            None => env("SVC_PROFILE"),
        };
        if let Some(name) = &profile {
            check_profile_name(name)?;
            let file = app_dir.join(format!("svc.{name}.toml"));
            let text = read_if_present(&file)?.ok_or_else(|| {
                anyhow!(
                    "profile `{name}`: configuration file {} not found",
                    file.display()
                )
            })?;
            config.apply_file(app_dir, &file, &text)?;
        }
        config.profile = profile;

        config.apply_env(app_dir, &env)?;
        Ok(config)
    }

    /// Overlay the keys present in one TOML file.
    fn apply_file(&mut self, app_dir: &Path, file: &Path, text: &str) -> anyhow::Result<()> {
        let table: toml::Table = toml::from_str(text)
            .map_err(|e| anyhow!("{}: {}", file.display(), e.to_string().trim_end()))?;
        self.source.push(file.to_path_buf());
        if let Some(storage) = section(file, &table, "storage")? {
            self.apply_storage(app_dir, file, "storage", storage)?;
        }
        let Some(scale) = table.get("scale") else {
            return Ok(());
        };
        let scale = scale.as_table().ok_or_else(|| {
            anyhow!(
                "{}: `scale` must be a table, found {}",
                file.display(),
                scale.type_str()
            )
        })?;

        if let Some(server) = section(file, scale, "server")? {
            let s = &mut self.server;
            for (key, value) in server {
                let at = Key {
                    file,
                    section: "scale.server",
                    key,
                };
                match key.as_str() {
                    "port" => s.port = at.port(value)?,
                    "host" => {
                        s.host = at.non_empty_string(value)?;
                        self.host_explicit = true;
                    }
                    "docs_enabled" => s.docs_enabled = at.boolean(value)?,
                    "suppress_health_check_logs" => {
                        s.suppress_health_check_logs = at.boolean(value)?;
                    }
                    "max_body_bytes" => s.max_body_bytes = at.positive_size(value)?,
                    "body_read_timeout_seconds" => {
                        s.body_read_timeout_seconds = at.int_in(value, 1, 3600)?.into();
                    }
                    "cors_origins" => s.cors_origins = at.origins(value)?,
                    "metrics_enabled" => s.metrics_enabled = at.boolean(value)?,
                    "metrics_token" => s.metrics_token = at.optional_string(value)?,
                    "metrics_max_series" => s.metrics_max_series = at.positive_size(value)?,
                    other if SERVER_LATER_KEYS.contains(&other) => {}
                    _ => at.warn_unknown(),
                }
            }
        }
        if let Some(database) = section(file, scale, "database")? {
            let d = &mut self.database;
            for (key, value) in database {
                let at = Key {
                    file,
                    section: "scale.database",
                    key,
                };
                match key.as_str() {
                    "shelf_db_path" => d.shelf_db_path = app_dir.join(at.non_empty_string(value)?),
                    "docdb_uri" => d.docdb_uri = at.optional_string(value)?,
                    "cache_url" => d.cache_url = at.optional_string(value)?,
                    "cache_l1_invalidation_enabled" => {
                        d.cache_l1_invalidation_enabled = at.boolean(value)?;
                    }
                    "cache_l1_invalidation_channel" => {
                        d.cache_l1_invalidation_channel = at.non_empty_string(value)?;
                    }
                    "cache_l2_enabled" => d.cache_l2_enabled = at.boolean(value)?,
                    "cache_l2_ttl_seconds" => {
                        d.cache_l2_ttl_seconds = at.int_in(value, 1, 86_400)?;
                    }
                    "l1_cache_bytes" => {
                        d.l1_cache_bytes = value
                            .as_integer()
                            .and_then(|n| usize::try_from(n).ok())
                            .ok_or_else(|| at.wrong("a non-negative integer (bytes)", value))?;
                    }
                    "group_commit_max" => {
                        d.group_commit_max = at.int_in(value, 1, 4096)? as usize;
                    }
                    "group_commit_wait_us" => {
                        d.group_commit_wait_us = at.int_in(value, 0, 100_000)?;
                    }
                    "group_commit_pipeline" => {
                        d.group_commit_pipeline = at.int_in(value, 0, 65_536)? as usize;
                    }
                    "wal_max_bytes" => {
                        d.wal_max_bytes = value
                            .as_integer()
                            .and_then(|n| u64::try_from(n).ok())
                            .filter(|n| *n >= 1024 * 1024)
                            .ok_or_else(|| {
                                at.wrong("an integer of at least 1048576 (bytes)", value)
                            })?;
                    }
                    "checkpoint_interval_ms" => {
                        d.checkpoint_interval_ms = at.int_in(value, 1, 60_000)?;
                    }
                    _ => at.warn_unknown(),
                }
            }
        }
        if let Some(limits) = section(file, scale, "limits")? {
            let l = &mut self.limits;
            for (key, value) in limits {
                let at = Key {
                    file,
                    section: "scale.limits",
                    key,
                };
                match key.as_str() {
                    "call_timeout_seconds" => {
                        l.call_timeout_seconds = at.positive_seconds(value)?
                    }
                    "max_call_depth" => l.max_call_depth = at.int_in(value, 1, MAX_CALL_DEPTH)?,
                    "max_string_bytes" => l.max_string_bytes = at.positive_size(value)?,
                    "max_collection_items" => l.max_collection_items = at.positive_size(value)?,
                    "max_response_bytes" => l.max_response_bytes = at.positive_size(value)?,
                    "run_queue_capacity" => l.run_queue_capacity = at.positive_size(value)?,
                    "max_replays" => l.max_replays = at.int_in(value, 0, 1000)?,
                    "inline_run_max_us" => {
                        l.inline_run_max_us = u64::from(at.int_in(value, 0, 1_000_000)?)
                    }
                    "inline_writers" => l.inline_writers = at.boolean(value)?,
                    "worker_retire_anchors" => {
                        l.worker_retire_anchors = at.int_in(value, 0, 100_000_000)? as usize
                    }
                    _ => at.warn_unknown(),
                }
            }
        }
        if let Some(websocket) = section(file, scale, "websocket")? {
            let w = &mut self.websocket;
            for (key, value) in websocket {
                let at = Key {
                    file,
                    section: "scale.websocket",
                    key,
                };
                match key.as_str() {
                    "ping_interval_seconds" => {
                        w.ping_interval_seconds = at.positive_seconds(value)?
                    }
                    "idle_timeout_seconds" => {
                        w.idle_timeout_seconds = at.positive_seconds(value)?
                    }
                    "auth_timeout_seconds" => {
                        w.auth_timeout_seconds = at.positive_seconds(value)?
                    }
                    "max_frame_bytes" => w.max_frame_bytes = at.positive_size(value)?,
                    "outbox_capacity" => w.outbox_capacity = at.positive_size(value)?,
                    "max_queued_messages" => w.max_queued_messages = at.positive_size(value)?,
                    "max_connections" => w.max_connections = at.positive_size(value)?,
                    "broadcast_channel" => w.broadcast_channel = at.non_empty_string(value)?,
                    _ => at.warn_unknown(),
                }
            }
        }
        if let Some(webhook) = section(file, scale, "webhook")? {
            let w = &mut self.webhook;
            for (key, value) in webhook {
                let at = Key {
                    file,
                    section: "scale.webhook",
                    key,
                };
                match key.as_str() {
                    "secret" => w.secret = at.optional_string(value)?,
                    "signature_header" => {
                        let name = at.non_empty_string(value)?;
                        if actix_web::http::header::HeaderName::from_bytes(name.as_bytes()).is_err()
                        {
                            return Err(at.wrong("an HTTP header name", value));
                        }
                        w.signature_header = name;
                    }
                    "verify_signature" => w.verify_signature = at.boolean(value)?,
                    "api_key_expiry_days" => {
                        w.api_key_expiry_days = at.int_in(value, 0, MAX_KEY_DAYS)?
                    }
                    "replay_guard" => w.replay_guard = at.boolean(value)?,
                    "timestamp_tolerance_seconds" => {
                        w.timestamp_tolerance_seconds = at.int_in(value, 1, 86_400)?.into();
                    }
                    "max_keys_per_user" => w.max_keys_per_user = at.positive_size(value)?,
                    _ => at.warn_unknown(),
                }
            }
        }
        if let Some(graph) = section(file, scale, "graph")? {
            let g = &mut self.graph;
            for (key, value) in graph {
                let at = Key {
                    file,
                    section: "scale.graph",
                    key,
                };
                match key.as_str() {
                    "node_limit" => g.node_limit = at.positive_size(value)?,
                    "edge_limit" => g.edge_limit = at.positive_size(value)?,
                    "max_depth" => g.max_depth = at.int_in(value, 1, 10_000)?,
                    _ => at.warn_unknown(),
                }
            }
        }
        self.apply_kubernetes(file, scale)?;
        if let Some(sv) = section(file, scale, "sv")? {
            for (key, value) in sv {
                let at = Key {
                    file,
                    section: "scale.sv",
                    key,
                };
                let s = &mut self.sv;
                match key.as_str() {
                    "rpc_timeout_seconds" => s.rpc_timeout_seconds = at.positive_seconds(value)?,
                    "max_attempts" => s.max_attempts = at.int_in(value, 1, 10)?,
                    "breaker_failures" => s.breaker_failures = at.int_in(value, 1, 1000)?,
                    "breaker_open_seconds" => {
                        s.breaker_open_seconds = at.positive_seconds(value)?;
                    }
                    "pool_max_connections" => s.pool_max_connections = at.positive_size(value)?,
                    "pool_idle_seconds" => s.pool_idle_seconds = at.positive_seconds(value)?,
                    "mailbox_capacity" => s.mailbox_capacity = at.positive_size(value)?,
                    "max_providers" => s.max_providers = at.positive_size(value)?,
                    _ => at.warn_unknown(),
                }
            }
        }
        self.apply_events(file, scale)?;
        if let Some(storage) = section(file, scale, "storage")? {
            self.apply_storage(app_dir, file, "scale.storage", storage)?;
        }
        self.apply_identity(app_dir, file, scale)
    }

    /// `[scale.kubernetes]`.
    fn apply_kubernetes(&mut self, file: &Path, scale: &toml::Table) -> anyhow::Result<()> {
        let Some(kube) = section(file, scale, "kubernetes")? else {
            return Ok(());
        };
        let k = &mut self.kubernetes;
        for (key, value) in kube {
            let at = Key {
                file,
                section: "scale.kubernetes",
                key,
            };
            match key.as_str() {
                "docdb_enabled" => k.docdb_enabled = at.boolean(value)?,
                "cache_enabled" => k.cache_enabled = at.boolean(value)?,
                "docdb_root_username" => k.docdb_root_username = at.non_empty_string(value)?,
                "docdb_root_password" => k.docdb_root_password = at.non_empty_string(value)?,
                "cache_username" => k.cache_username = at.non_empty_string(value)?,
                "cache_password" => k.cache_password = at.non_empty_string(value)?,
                "cache_dashboard" => k.cache_dashboard = at.boolean(value)?,
                "docdb_dashboard" => k.docdb_dashboard = at.boolean(value)?,
                "logs_enabled" => k.logs_enabled = at.boolean(value)?,
                "cache_dashboard_username" => {
                    k.cache_dashboard_username = at.non_empty_string(value)?;
                }
                "cache_dashboard_password" => {
                    k.cache_dashboard_password = at.non_empty_string(value)?;
                }
                "docdb_dashboard_username" => {
                    k.docdb_dashboard_username = at.non_empty_string(value)?;
                }
                "docdb_dashboard_password" => {
                    k.docdb_dashboard_password = at.non_empty_string(value)?;
                }
                "namespace" => k.namespace = at.non_empty_string(value)?,
                "image" => k.image = at.non_empty_string(value)?,
                "replicas" => k.replicas = at.int_in(value, 0, 1000)?,
                "node_port" => {
                    k.node_port = u16::try_from(at.int_in(value, 30000, 32767)?)
                        .map_err(|_| at.wrong("a node port (30000-32767)", value))?;
                }
                "docdb_image" => k.docdb_image = at.non_empty_string(value)?,
                "cache_image" => k.cache_image = at.non_empty_string(value)?,
                "docdb_storage" => k.docdb_storage = at.non_empty_string(value)?,
                "cache_storage" => k.cache_storage = at.non_empty_string(value)?,
                "domain" => k.domain = at.optional_string(value)?,
                "tls_issuer" => k.tls_issuer = at.non_empty_string(value)?,
                "request_timeout_seconds" => {
                    k.request_timeout_seconds = u64::from(at.int_in(value, 1, 600)?);
                }
                _ => at.warn_unknown(),
            }
        }
        Ok(())
    }

    /// `[scale.events]` and `[scale.events.retry]` (also written as dotted keys
    /// `retry.max_attempts = 3` inside `[scale.events]`).
    fn apply_events(&mut self, file: &Path, scale: &toml::Table) -> anyhow::Result<()> {
        let Some(events) = section(file, scale, "events")? else {
            return Ok(());
        };
        let e = &mut self.events;
        for (key, value) in events {
            let at = Key {
                file,
                section: "scale.events",
                key,
            };
            match key.as_str() {
                "enabled" => e.enabled = at.boolean(value)?,
                "url" => e.url = at.optional_string(value)?,
                "consumer_group" => e.consumer_group = at.non_empty_string(value)?,
                "serializer" => {
                    let s = at.non_empty_string(value)?;
                    if s != "json" {
                        bail!(
                            "{}: [scale.events] serializer: only \"json\" is supported, found {s:?}",
                            file.display()
                        );
                    }
                    e.serializer = s;
                }
                "visibility_timeout_seconds" => {
                    e.visibility_timeout_seconds = at.positive_seconds(value)?;
                }
                "max_in_flight" => e.max_in_flight = at.int_in(value, 1, 10_000)? as usize,
                "delivery_batch" => e.delivery_batch = at.int_in(value, 1, 1_000)? as usize,
                "publish_queue_capacity" => e.publish_queue_capacity = at.positive_size(value)?,
                "max_retained_events" => e.max_retained_events = at.positive_size(value)?,
                "max_event_bytes" => e.max_event_bytes = at.positive_size(value)?,
                "poll_interval_seconds" => {
                    let s = at.positive_seconds(value)?;
                    if s > 5.0 {
                        return Err(at.wrong("a number of seconds (0-5]", value));
                    }
                    e.poll_interval_seconds = s;
                }
                "max_consume_messages" => {
                    e.max_consume_messages = at.int_in(value, 1, 100_000)? as usize;
                }
                "retry" => {
                    let retry = value.as_table().ok_or_else(|| at.wrong("a table", value))?;
                    for (key, value) in retry {
                        let at = Key {
                            file,
                            section: "scale.events.retry",
                            key,
                        };
                        match key.as_str() {
                            "max_attempts" => {
                                e.retry.max_attempts = at.int_in(value, 1, 1000)?;
                            }
                            "backoff_seconds" => e.retry.backoff_seconds = at.delays(value)?,
                            "dead_letter_suffix" => {
                                e.retry.dead_letter_suffix = at.non_empty_string(value)?;
                            }
                            _ => at.warn_unknown(),
                        }
                    }
                }
                _ => at.warn_unknown(),
            }
        }
        Ok(())
    }

    /// `[storage]` or `[scale.storage]`.
    fn apply_storage(
        &mut self,
        app_dir: &Path,
        file: &Path,
        name: &'static str,
        storage: &toml::Table,
    ) -> anyhow::Result<()> {
        let s = &mut self.storage;
        for (key, value) in storage {
            let at = Key {
                file,
                section: name,
                key,
            };
            match key.as_str() {
                "type" => {
                    let text = at.string(value)?;
                    s.kind = StorageKind::parse(&text)
                        .ok_or_else(|| at.wrong("`local` or `object`", value))?;
                }
                "base_path" => s.base_path = app_dir.join(at.non_empty_string(value)?),
                "create_dirs" => s.create_dirs = at.boolean(value)?,
                "bucket" => s.bucket = at.optional_string(value)?,
                "region" => s.region = at.non_empty_string(value)?,
                "prefix" => s.prefix = at.string(value)?.trim_matches('/').to_string(),
                "endpoint_url" => s.endpoint_url = at.optional_string(value)?,
                "public_read" => s.public_read = at.boolean(value)?,
                "access_key_id" => s.access_key_id = at.optional_string(value)?,
                "secret_access_key" => s.secret_access_key = at.optional_string(value)?,
                "session_token" => s.session_token = at.optional_string(value)?,
                "max_object_bytes" => s.max_object_bytes = at.positive_size(value)? as u64,
                "timeout_seconds" => s.timeout_seconds = at.positive_seconds(value)?,
                _ => at.warn_unknown(),
            }
        }
        Ok(())
    }

    /// `[scale.jwt]`, `[scale.auth]`, `[scale.emailer]` and `[scale.emailer.smtp]`.
    fn apply_identity(
        &mut self,
        app_dir: &Path,
        file: &Path,
        scale: &toml::Table,
    ) -> anyhow::Result<()> {
        if let Some(jwt) = section(file, scale, "jwt")? {
            let j = &mut self.jwt;
            for (key, value) in jwt {
                let at = Key {
                    file,
                    section: "scale.jwt",
                    key,
                };
                match key.as_str() {
                    "secret" => j.secret = at.optional_string(value)?,
                    "algorithm" => j.algorithm = at.non_empty_string(value)?,
                    "exp_delta_days" => j.exp_delta_days = at.int_in(value, 1, 36_500)?,
                    "clock_skew_seconds" => {
                        j.clock_skew_seconds = at.int_in(value, 0, 3600)?.into();
                    }
                    _ => at.warn_unknown(),
                }
            }
        }
        if let Some(auth) = section(file, scale, "auth")? {
            let a = &mut self.auth;
            for (key, value) in auth {
                let at = Key {
                    file,
                    section: "scale.auth",
                    key,
                };
                match key.as_str() {
                    "verify_token_ttl_seconds" => {
                        a.verify_token_ttl_seconds = at.int_in(value, 1, u32::MAX)?.into();
                    }
                    "reset_token_ttl_seconds" => {
                        a.reset_token_ttl_seconds = at.int_in(value, 1, u32::MAX)?.into();
                    }
                    "verify_url_template" => a.verify_url_template = at.string(value)?,
                    "reset_url_template" => a.reset_url_template = at.string(value)?,
                    "bcrypt_cost" => a.bcrypt_cost = at.int_in(value, 4, 31)?,
                    "login_max_failures" => {
                        a.login_max_failures = at.int_in(value, 1, 1_000_000)?
                    }
                    "login_max_failures_per_address" => {
                        a.login_max_failures_per_address = at.int_in(value, 1, 1_000_000)?;
                    }
                    "login_failure_window_seconds" => {
                        a.login_failure_window_seconds = at.int_in(value, 1, 604_800)?.into();
                    }
                    "bcrypt_queue_capacity" => {
                        a.bcrypt_queue_capacity = at.int_in(value, 0, 1_000_000)?;
                    }
                    "register_max_per_address" => {
                        a.register_max_per_address = at.int_in(value, 1, 1_000_000)?;
                    }
                    "register_window_seconds" => {
                        a.register_window_seconds = at.int_in(value, 1, 604_800)?.into();
                    }
                    _ => at.warn_unknown(),
                }
            }
        }
        if let Some(emailer) = section(file, scale, "emailer")? {
            let e = &mut self.emailer;
            for (key, value) in emailer {
                let at = Key {
                    file,
                    section: "scale.emailer",
                    key,
                };
                match key.as_str() {
                    "provider" => e.provider = at.string(value)?.trim().to_string(),
                    "from_address" => e.from_address = at.string(value)?.trim().to_string(),
                    "enabled" => e.enabled = at.boolean(value)?,
                    // `[scale.emailer.smtp]`, read below.
                    "smtp" => {}
                    // For a `package.module:ClassName` provider.
                    _ => {
                        e.options.insert(key.clone(), toml_to_json(value));
                    }
                }
            }
            let smtp = match emailer.get("smtp") {
                None => None,
                Some(toml::Value::Table(t)) => Some(t),
                Some(other) => bail!(
                    "{}: `scale.emailer.smtp` must be a table, found {}",
                    file.display(),
                    other.type_str()
                ),
            };
            if let Some(smtp) = smtp {
                let s = &mut e.smtp;
                for (key, value) in smtp {
                    let at = Key {
                        file,
                        section: "scale.emailer.smtp",
                        key,
                    };
                    match key.as_str() {
                        "host" => s.host = at.non_empty_string(value)?,
                        "port" => s.port = at.port(value)?,
                        "username" => s.username = at.string(value)?,
                        "password" => s.password = at.string(value)?,
                        "use_tls" => s.use_tls = at.boolean(value)?,
                        "timeout" => s.timeout = at.positive_seconds(value)?,
                        "ca_file" => {
                            s.ca_file = at.optional_string(value)?.map(|p| app_dir.join(p))
                        }
                        _ => at.warn_unknown(),
                    }
                }
            }
        }
        self.apply_admin_sso(file, scale)
    }

    /// `[scale.admin]`, `[scale.sso]` and `[scale.sso.<platform>]`.
    fn apply_admin_sso(&mut self, file: &Path, scale: &toml::Table) -> anyhow::Result<()> {
        if let Some(admin) = section(file, scale, "admin")? {
            let a = &mut self.admin;
            for (key, value) in admin {
                let at = Key {
                    file,
                    section: "scale.admin",
                    key,
                };
                match key.as_str() {
                    "enabled" => a.enabled = at.boolean(value)?,
                    "username" => a.username = at.non_empty_string(value)?.trim().to_string(),
                    "email" => a.email = at.string(value)?.trim().to_string(),
                    "default_password" => a.default_password = at.string(value)?,
                    "session_expiry_hours" => {
                        a.session_expiry_hours = at.int_in(value, 1, 8760)?;
                    }
                    "require_password_reset" => a.require_password_reset = at.boolean(value)?,
                    "max_page_size" => {
                        a.max_page_size = at.int_in(value, 1, 10_000)? as usize;
                    }
                    _ => at.warn_unknown(),
                }
            }
        }
        let Some(sso) = section(file, scale, "sso")? else {
            return Ok(());
        };
        for (key, value) in sso {
            let at = Key {
                file,
                section: "scale.sso",
                key,
            };
            let o = &mut self.sso;
            match key.as_str() {
                "host" => o.host = at.string(value)?.trim().trim_end_matches('/').to_string(),
                "client_auth_callback_url" => {
                    o.client_auth_callback_url = at.string(value)?.trim().to_string();
                }
                "state_ttl_seconds" => o.state_ttl_seconds = at.int_in(value, 10, 86_400)?.into(),
                "max_pending_logins" => {
                    o.max_pending_logins = at.int_in(value, 1, 10_000_000)?.into();
                }
                "http_timeout_seconds" => {
                    o.http_timeout_seconds = at.int_in(value, 1, 300)?.into();
                }
                "discovery_ttl_seconds" => {
                    o.discovery_ttl_seconds = at.int_in(value, 0, 604_800)?.into();
                }
                "max_response_bytes" => {
                    o.max_response_bytes = at.int_in(value, 1024, 67_108_864)? as usize;
                }
                p if value.is_table() => {
                    if !actors::identity::sso::valid_platform_name(p) {
                        bail!(
                            "{}: [scale.sso.{p}]: a platform name is lowercase letters, digits, \
                             `_` and `-`, starting with a letter (at most 32)",
                            file.display()
                        );
                    }
                    let toml::Value::Table(t) = value else {
                        continue;
                    };
                    let section = format!("scale.sso.{p}");
                    if !o.providers.iter().any(|e| e.platform == p) {
                        o.providers.push(SsoProviderConfig::defaults(p));
                    }
                    let Some(entry) = o.providers.iter_mut().find(|e| e.platform == p) else {
                        continue;
                    };
                    for (key, value) in t {
                        let at = Key {
                            file,
                            section: &section,
                            key,
                        };
                        match key.as_str() {
                            "client_id" => entry.client_id = at.string(value)?.trim().to_string(),
                            "client_secret" => entry.client_secret = at.string(value)?,
                            "issuer" => {
                                entry.issuer =
                                    at.string(value)?.trim().trim_end_matches('/').to_string();
                            }
                            "scopes" => entry.scopes = at.non_empty_string(value)?,
                            "response_mode" => entry.response_mode = at.string(value)?,
                            _ => at.warn_unknown(),
                        }
                    }
                }
                _ => at.warn_unknown(),
            }
        }
        Ok(())
    }

    /// Apply the environment overrides.
    fn apply_env(
        &mut self,
        app_dir: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<()> {
        if let Some(v) = env("SVC_SERVER_PORT") {
            self.server.port = v.trim().parse().map_err(|_| {
                anyhow!("environment variable SVC_SERVER_PORT: `{v}` is not a port (0-65535)")
            })?;
        }
        if let Some(v) = env("SVC_SERVER_HOST") {
            self.server.host = v.trim().to_string();
            self.host_explicit = true;
        }
        if let Some(v) = env("SVC_DOCS_ENABLED") {
            self.server.docs_enabled = env_bool("SVC_DOCS_ENABLED", &v)?;
        }
        if let Some(v) = env("SVC_SUPPRESS_HEALTH_CHECK_LOGS") {
            self.server.suppress_health_check_logs =
                env_bool("SVC_SUPPRESS_HEALTH_CHECK_LOGS", &v)?;
        }
        if let Some(v) = env("SVC_MAX_BODY_BYTES") {
            self.server.max_body_bytes = match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => bail!(
                    "environment variable SVC_MAX_BODY_BYTES: `{v}` is not a positive number of bytes"
                ),
            };
        }
        if let Some(v) = env("SVC_BODY_READ_TIMEOUT_SECONDS") {
            self.server.body_read_timeout_seconds = match v.trim().parse::<u64>() {
                Ok(n) if (1..=3600).contains(&n) => n,
                _ => bail!(
                    "environment variable SVC_BODY_READ_TIMEOUT_SECONDS: `{v}` is not a number of \
                     seconds (1-3600)"
                ),
            };
        }
        if let Some(v) = env("SVC_CORS_ORIGINS") {
            let list: Vec<&str> = v
                .split(',')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .collect();
            self.server.cors_origins = check_origins(&list)
                .map_err(|e| anyhow!("environment variable SVC_CORS_ORIGINS: {e}"))?;
        }
        if let Some(v) = env("SVC_METRICS_ENABLED") {
            self.server.metrics_enabled = env_bool("SVC_METRICS_ENABLED", &v)?;
        }
        if let Some(v) = env("SVC_METRICS_TOKEN") {
            self.server.metrics_token = Some(v);
        }
        if let Some(v) = env("SVC_SHELF_DB_PATH") {
            self.database.shelf_db_path = app_dir.join(v);
        }
        if let Some(v) = env("DOCDB_URI") {
            self.database.docdb_uri = Some(v);
        }
        if let Some(v) = env("CACHE_URL") {
            self.database.cache_url = Some(v);
        }
        if let Some(v) = env("SVC_EVENTS_ENABLED") {
            self.events.enabled = env_bool("SVC_EVENTS_ENABLED", &v)?;
        }
        if let Some(v) = env("SVC_EVENTS_URL") {
            self.events.url = Some(v);
        }
        if let Some(v) = env("JWT_SECRET") {
            self.jwt.secret = Some(v);
        }
        if let Some(v) = env("JWT_ALGORITHM") {
            self.jwt.algorithm = v.trim().to_string();
        }
        if let Some(v) = env("JWT_EXP_DELTA_DAYS") {
            self.jwt.exp_delta_days = match v.trim().parse::<u32>() {
                Ok(n) if (1..=36_500).contains(&n) => n,
                _ => bail!(
                    "environment variable JWT_EXP_DELTA_DAYS: `{v}` is not a number of days (1-36500)"
                ),
            };
        }
        if let Some(v) = env("SVC_JWT_CLOCK_SKEW_SECONDS") {
            self.jwt.clock_skew_seconds = match v.trim().parse::<u64>() {
                Ok(n) if n <= 3600 => n,
                _ => bail!(
                    "environment variable SVC_JWT_CLOCK_SKEW_SECONDS: `{v}` is not a number of \
                     seconds (0-3600)"
                ),
            };
        }
        if let Some(v) = env("EMAILER_SMTP_PASSWORD") {
            self.emailer.smtp.password = v;
        }
        if let Some(v) = env("WEBHOOK_SECRET") {
            self.webhook.secret = Some(v);
        }
        if let Some(v) = env("SVC_ADMIN_ENABLED") {
            self.admin.enabled = env_bool("SVC_ADMIN_ENABLED", &v)?;
        }
        if let Some(v) = env("ADMIN_USERNAME") {
            self.admin.username = v.trim().to_string();
        }
        if let Some(v) = env("ADMIN_EMAIL") {
            self.admin.email = v.trim().to_string();
        }
        if let Some(v) = env("ADMIN_DEFAULT_PASSWORD") {
            self.admin.default_password = v;
        }
        if let Some(v) = env("SVC_SSO_HOST") {
            self.sso.host = v.trim().trim_end_matches('/').to_string();
        }
        if let Some(v) = env("SVC_SSO_CLIENT_AUTH_CALLBACK_URL") {
            self.sso.client_auth_callback_url = v.trim().to_string();
        }
        // `SSO_<PLATFORM>_CLIENT_ID` etc. (the original's names; `-` is `_` there).
        for p in &mut self.sso.providers {
            let name = p.platform.to_ascii_uppercase().replace('-', "_");
            if let Some(v) = env(&format!("SSO_{name}_CLIENT_ID")) {
                p.client_id = v.trim().to_string();
            }
            if let Some(v) = env(&format!("SSO_{name}_CLIENT_SECRET")) {
                p.client_secret = v;
            }
            if let Some(v) = env(&format!("SSO_{name}_ISSUER")) {
                p.issuer = v.trim().trim_end_matches('/').to_string();
            }
        }
        self.apply_storage_env(app_dir, env)
    }

    /// The `SVC_STORAGE_*` variables of the spec's storage table.
    fn apply_storage_env(
        &mut self,
        app_dir: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<()> {
        let s = &mut self.storage;
        if let Some(v) = env("SVC_STORAGE_TYPE") {
            s.kind = StorageKind::parse(&v).ok_or_else(|| {
                anyhow!("environment variable SVC_STORAGE_TYPE: `{v}` is not `local` or `object`")
            })?;
        }
        if let Some(v) = env("SVC_STORAGE_PATH") {
            s.base_path = app_dir.join(v);
        }
        if let Some(v) = env("SVC_STORAGE_CREATE_DIRS") {
            s.create_dirs = env_bool("SVC_STORAGE_CREATE_DIRS", &v)?;
        }
        if let Some(v) = env("SVC_STORAGE_OBJ_BUCKET") {
            s.bucket = Some(v);
        }
        if let Some(v) = env("SVC_STORAGE_OBJ_REGION") {
            s.region = v.trim().to_string();
        }
        if let Some(v) = env("SVC_STORAGE_OBJ_PREFIX") {
            s.prefix = v.trim().trim_matches('/').to_string();
        }
        if let Some(v) = env("SVC_STORAGE_OBJ_ENDPOINT_URL") {
            s.endpoint_url = Some(v.trim().to_string());
        }
        if let Some(v) = env("SVC_STORAGE_OBJ_PUBLIC_READ") {
            s.public_read = env_bool("SVC_STORAGE_OBJ_PUBLIC_READ", &v)?;
        }
        Ok(())
    }
}

/// Longest API key lifetime accepted, in days (100 years).
pub const MAX_KEY_DAYS: u32 = 36_500;

/// Deepest `max_call_depth` accepted (the interpreter's cap).
const MAX_CALL_DEPTH: u32 = 10_000;

/// Validate a CORS allow-list: `"*"` alone, or origins `scheme://host[:port]` (a trailing
/// `/` is dropped; compared case-insensitively).
fn check_origins(list: &[&str]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for origin in list {
        let origin = origin.trim().trim_end_matches('/');
        if origin == "*" {
            if list.len() > 1 {
                return Err("`*` cannot be combined with explicit origins".into());
            }
            out.push("*".to_string());
            continue;
        }
        let valid = origin.split_once("://").is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                && !rest.is_empty()
                && !rest.contains(['/', '?', '#', ' ', ','])
        });
        if !valid {
            return Err(format!(
                "`{origin}` is not an origin (scheme://host[:port], or \"*\")"
            ));
        }
        out.push(origin.to_ascii_lowercase());
    }
    Ok(out)
}

/// A TOML value as JSON (dates and times become their text).
fn toml_to_json(value: &toml::Value) -> serde_json::Value {
    use serde_json::Value as Json;
    match value {
        toml::Value::String(s) => Json::String(s.clone()),
        toml::Value::Integer(i) => Json::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        toml::Value::Boolean(b) => Json::Bool(*b),
        toml::Value::Datetime(d) => Json::String(d.to_string()),
        toml::Value::Array(items) => Json::Array(items.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Json::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

/// The text of `path`, or `None` when it does not exist.
fn read_if_present(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow!("cannot read {}: {e}", path.display())),
    }
}

/// Profile names become part of a file name: keep them to a safe alphabet.
fn check_profile_name(name: &str) -> anyhow::Result<()> {
    let ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        bail!("invalid profile name `{name}`: use letters, digits, `-` and `_` only")
    }
}

/// `[scale.<name>]` as a table, if present.
fn section<'t>(
    file: &Path,
    scale: &'t toml::Table,
    name: &str,
) -> anyhow::Result<Option<&'t toml::Table>> {
    match scale.get(name) {
        None => Ok(None),
        Some(toml::Value::Table(t)) => Ok(Some(t)),
        Some(other) => bail!(
            "{}: `scale.{name}` must be a table, found {}",
            file.display(),
            other.type_str()
        ),
    }
}

/// One key of one file, for typed reads with error messages that name both.
struct Key<'a> {
    file: &'a Path,
    section: &'a str,
    key: &'a str,
}

impl Key<'_> {
    fn wrong(&self, expected: &str, value: &toml::Value) -> anyhow::Error {
        anyhow!(
            "{}: [{}] {}: expected {expected}, found {} {}",
            self.file.display(),
            self.section,
            self.key,
            value.type_str(),
            value
        )
    }

    fn warn_unknown(&self) {
        tracing::warn!(
            file = %self.file.display(),
            "unknown configuration key [{}] {} ignored",
            self.section,
            self.key
        );
    }

    fn port(&self, value: &toml::Value) -> anyhow::Result<u16> {
        value
            .as_integer()
            .and_then(|n| u16::try_from(n).ok())
            .ok_or_else(|| self.wrong("an integer port (0-65535)", value))
    }

    fn positive_size(&self, value: &toml::Value) -> anyhow::Result<usize> {
        value
            .as_integer()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| self.wrong("a positive integer", value))
    }

    fn boolean(&self, value: &toml::Value) -> anyhow::Result<bool> {
        value
            .as_bool()
            .ok_or_else(|| self.wrong("a boolean", value))
    }

    fn non_empty_string(&self, value: &toml::Value) -> anyhow::Result<String> {
        value
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| self.wrong("a non-empty string", value))
    }

    /// Any string (empty allowed).
    fn string(&self, value: &toml::Value) -> anyhow::Result<String> {
        value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.wrong("a string", value))
    }

    /// An integer within `lo..=hi`.
    fn int_in(&self, value: &toml::Value, lo: u32, hi: u32) -> anyhow::Result<u32> {
        value
            .as_integer()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (lo..=hi).contains(n))
            .ok_or_else(|| self.wrong(&format!("an integer from {lo} to {hi}"), value))
    }

    /// A CORS allow-list: an array of origin strings (see [`check_origins`]).
    fn origins(&self, value: &toml::Value) -> anyhow::Result<Vec<String>> {
        let items = value
            .as_array()
            .ok_or_else(|| self.wrong("an array of origins", value))?;
        let list = items
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| self.wrong("an array of strings", value))
            })
            .collect::<anyhow::Result<Vec<&str>>>()?;
        check_origins(&list).map_err(|e| {
            anyhow!(
                "{}: [{}] {}: {e}",
                self.file.display(),
                self.section,
                self.key
            )
        })
    }

    /// A positive number of seconds (integer or float).
    fn positive_seconds(&self, value: &toml::Value) -> anyhow::Result<f64> {
        let n = match value {
            toml::Value::Integer(n) => *n as f64,
            toml::Value::Float(f) => *f,
            _ => f64::NAN,
        };
        if n.is_finite() && n > 0.0 && n <= 3600.0 {
            Ok(n)
        } else {
            Err(self.wrong("a number of seconds (0-3600]", value))
        }
    }

    /// A non-empty array of delays in seconds, each in `[0, 3600]`.
    fn delays(&self, value: &toml::Value) -> anyhow::Result<Vec<f64>> {
        let items = value
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| self.wrong("a non-empty array of seconds", value))?;
        items
            .iter()
            .map(|v| {
                let n = match v {
                    toml::Value::Integer(n) => *n as f64,
                    toml::Value::Float(f) => *f,
                    _ => f64::NAN,
                };
                if n.is_finite() && (0.0..=3600.0).contains(&n) {
                    Ok(n)
                } else {
                    Err(self.wrong("an array of seconds, each 0-3600", value))
                }
            })
            .collect()
    }

    /// A string; empty means "not set".
    fn optional_string(&self, value: &toml::Value) -> anyhow::Result<Option<String>> {
        let s = value
            .as_str()
            .ok_or_else(|| self.wrong("a string", value))?;
        Ok((!s.is_empty()).then(|| s.to_string()))
    }
}

fn env_bool(name: &str, value: &str) -> anyhow::Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => bail!("environment variable {name}: `{value}` is not a boolean (true/false/1/0)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh empty directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            let dir = std::env::temp_dir().join(format!(
                "svc-config-test-{}-{n}-{nanos}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).expect("create temp dir");
            TempDir(dir)
        }

        fn write(&self, name: &str, text: &str) -> &TempDir {
            std::fs::write(self.0.join(name), text).expect("write config file");
            self
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn load(dir: &TempDir, profile: Option<&str>, env: &[(&str, &str)]) -> anyhow::Result<Config> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::load_with_env(&dir.0, profile, &move |k| env.get(k).cloned())
    }

    /// The L2 settings: on with a document database and a cache URL unless switched
    /// off; the reason when off; the TTL bounded.
    #[test]
    fn l2_settings_follow_the_tiers_and_the_switch() {
        let dir = TempDir::new();
        let c = load(&dir, None, &[("CACHE_URL", "redis://c:6379/")]).expect("loads");
        assert_eq!(
            c.database.l2_settings(),
            Err("the embedded tier's process-wide L1 cache serves instead")
        );
        let env = [
            ("CACHE_URL", "redis://c:6379/"),
            ("DOCDB_URI", "mongodb://d/x"),
        ];
        let c = load(&dir, None, &env).expect("loads");
        let on = c.database.l2_settings().expect("on");
        assert_eq!((on.url.as_str(), on.ttl.as_secs()), ("redis://c:6379/", 60));
        let c = load(&dir, None, &env[1..]).expect("loads");
        assert_eq!(c.database.l2_settings(), Err("no cache URL"));
        dir.write(
            "svc.toml",
            "[scale.database]\ncache_l2_enabled = false\ncache_l2_ttl_seconds = 5\n",
        );
        let c = load(&dir, None, &env).expect("loads");
        assert_eq!(c.database.cache_l2_ttl_seconds, 5);
        assert_eq!(
            c.database.l2_settings(),
            Err("[scale.database] cache_l2_enabled = false")
        );
        dir.write("svc.toml", "[scale.database]\ncache_l2_ttl_seconds = 0\n");
        assert!(load(&dir, None, &env).is_err(), "a TTL of 0 is refused");
    }

    #[test]
    fn defaults_without_any_file() {
        let dir = TempDir::new();
        let c = load(&dir, None, &[]).expect("config loads");
        assert_eq!(c.server, ServerConfig::default());
        assert_eq!(c.server.port, 8000);
        assert_eq!(c.server.host, "0.0.0.0");
        assert!(c.server.docs_enabled);
        assert!(!c.server.suppress_health_check_logs);
        assert_eq!(c.server.max_body_bytes, 1 << 20);
        assert_eq!(
            c.database.shelf_db_path,
            dir.0.join(".svc/data/anchor_store.db")
        );
        assert_eq!(c.database.docdb_uri, None);
        assert_eq!(c.database.cache_url, None);
        assert_eq!(c.profile, None);
        assert!(c.source.is_empty());
    }

    #[test]
    fn reads_both_sections() {
        let dir = TempDir::new();
        dir.write(
            "svc.toml",
            r#"
[scale.server]
port = 9000
host = "127.0.0.1"
docs_enabled = false
suppress_health_check_logs = true
max_body_bytes = 2048

[scale.database]
shelf_db_path = "state/db.sqlite"
docdb_uri = "mongodb://db:27017"
cache_url = ""
cache_l1_invalidation_enabled = true

[scale.kubernetes]
docdb_enabled = false
"#,
        );
        let c = load(&dir, None, &[]).expect("config loads");
        assert_eq!(
            c.server,
            ServerConfig {
                port: 9000,
                host: "127.0.0.1".into(),
                docs_enabled: false,
                suppress_health_check_logs: true,
                max_body_bytes: 2048,
                ..ServerConfig::default()
            }
        );
        assert_eq!(c.database.shelf_db_path, dir.0.join("state/db.sqlite"));
        assert_eq!(c.database.docdb_uri.as_deref(), Some("mongodb://db:27017"));
        assert_eq!(c.database.cache_url, None, "empty string means unset");
        assert_eq!(c.source, vec![dir.0.join("svc.toml")]);
    }

    /// The example file documents the defaults: uncommented, it changes nothing.
    #[test]
    fn example_file_shows_the_defaults() {
        let example = include_str!("../svc.toml.example");
        let mut text = String::new();
        for line in example.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                text.push_str(line);
            } else if let Some(setting) = line.strip_prefix("# ")
                && let Some((key, rest)) = setting.split_once(" = ")
                && key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                let value = rest.split(" #").next().unwrap_or(rest).trim();
                text.push_str(&format!("{key} = {value}"));
            }
            text.push('\n');
        }
        assert!(text.matches(" = ").count() >= 10, "{text}");
        let dir = TempDir::new();
        dir.write("svc.toml", &text);
        let c = load(&dir, None, &[]).expect("config loads");
        let defaults = load(&TempDir::new(), None, &[]).expect("config loads");
        assert_eq!(c.server, defaults.server);
        assert_eq!(c.limits, defaults.limits);
        assert_eq!(c.websocket, defaults.websocket);
        assert_eq!(c.jwt, defaults.jwt);
        assert_eq!(c.auth, defaults.auth);
        assert_eq!(c.webhook, defaults.webhook);
        assert_eq!(c.admin, defaults.admin);
        assert_eq!(c.sso, defaults.sso);
        assert_eq!(c.events, defaults.events);
        assert_eq!(c.graph, defaults.graph);
        assert_eq!(c.kubernetes, defaults.kubernetes);
        assert_eq!(c.sv, defaults.sv);
        assert_eq!(
            c.emailer,
            EmailerConfig {
                app_dir: dir.0.clone(),
                ..defaults.emailer
            }
        );
        assert_eq!(c.database.shelf_db_path, dir.0.join(DEFAULT_SHELF_DB_PATH));
        assert_eq!((c.database.docdb_uri, c.database.cache_url), (None, None));
        assert_eq!(c.storage.base_path, dir.0.join("storage"));
        assert_eq!(
            c.storage,
            StorageConfig {
                base_path: c.storage.base_path.clone(),
                ..defaults.storage
            }
        );
    }

    /// `[scale.storage]` over `[storage]`, the environment over both.
    #[test]
    fn storage_precedence() {
        let dir = TempDir::new();
        dir.write(
            "svc.toml",
            "[storage]\ntype = \"object\"\nbucket = \"a\"\nregion = \"eu-west-1\"\n\
             [scale.storage]\nbucket = \"b\"\nprefix = \"/p/\"\n",
        );
        let c = load(&dir, None, &[]).expect("config loads");
        assert_eq!(c.storage.kind, StorageKind::Object);
        assert_eq!(c.storage.bucket.as_deref(), Some("b"));
        assert_eq!(c.storage.region, "eu-west-1");
        assert_eq!(c.storage.prefix, "p");
        let c = load(
            &dir,
            None,
            &[
                ("SVC_STORAGE_TYPE", "local"),
                ("SVC_STORAGE_OBJ_BUCKET", "c"),
                ("SVC_STORAGE_OBJ_PUBLIC_READ", "yes"),
                ("SVC_STORAGE_PATH", "/srv/files"),
            ],
        )
        .expect("config loads");
        assert_eq!(c.storage.kind, StorageKind::Local);
        assert_eq!(c.storage.bucket.as_deref(), Some("c"));
        assert!(c.storage.public_read);
        assert_eq!(c.storage.base_path, PathBuf::from("/srv/files"));
        dir.write("svc.toml", "[storage]\ntype = \"blob\"\n");
        let e = load(&dir, None, &[]).expect_err("bad type");
        assert!(e.to_string().contains("`local` or `object`"), "{e}");
    }

    /// Other `[scale.emailer]` keys are kept for a `.svc` provider; a profile overlays
    /// them key by key.
    #[test]
    fn emailer_options_are_kept() {
        let dir = TempDir::new();
        dir.write(
            "svc.toml",
            "[scale.emailer]\nprovider = \"mail.out:Api\"\napi_key = \"k1\"\nretries = 3\n\
             region = { name = \"eu\", zones = [1, 2] }\n",
        )
        .write("svc.stage.toml", "[scale.emailer]\napi_key = \"k2\"\n");
        let c = load(&dir, Some("stage"), &[]).expect("config loads");
        assert_eq!(c.emailer.app_dir, dir.0);
        assert_eq!(
            serde_json::Value::Object(c.emailer.options.clone()),
            serde_json::json!({"api_key": "k2", "retries": 3, "region": {"name": "eu", "zones": [1, 2]}})
        );
        let shown = format!("{:?}", c.emailer);
        assert!(
            shown.contains("api_key") && !shown.contains("k2"),
            "{shown}"
        );
    }

    #[test]
    fn admin_and_sso_sections_and_env() {
        let dir = TempDir::new();
        dir.write(
            "svc.toml",
            r#"
[scale.admin]
username = "root"
session_expiry_hours = 3
require_password_reset = false
max_page_size = 50

[scale.sso]
host = "https://app.example.com/"
state_ttl_seconds = 120

[scale.sso.google]
client_id = "gid"
client_secret = "gsecret"

[scale.sso.corp]
client_id = "cid"
client_secret = "csecret"
issuer = "https://login.corp.example/"
"#,
        );
        let c = load(
            &dir,
            None,
            &[
                ("ADMIN_USERNAME", "chief"),
                ("ADMIN_DEFAULT_PASSWORD", "pw"),
                ("SSO_GITHUB_CLIENT_ID", "ghid"),
                ("SSO_CORP_ISSUER", "https://other.corp.example"),
            ],
        )
        .expect("config loads");
        assert_eq!(c.admin.username, "chief");
        assert_eq!(c.admin.default_password, "pw");
        assert_eq!(
            (c.admin.session_expiry_hours, c.admin.max_page_size),
            (3, 50)
        );
        assert!(!c.admin.require_password_reset);
        assert_eq!(c.sso.host, "https://app.example.com");
        assert_eq!(c.sso.state_ttl_seconds, 120);
        let names: Vec<_> = c
            .sso
            .providers
            .iter()
            .map(|p| p.platform.as_str())
            .collect();
        assert_eq!(names, ["google", "apple", "github", "corp"]);
        assert_eq!(c.sso.providers[0].client_id, "gid");
        assert_eq!(c.sso.providers[0].issuer, "https://accounts.google.com");
        assert_eq!(c.sso.providers[2].client_id, "ghid");
        assert_eq!(c.sso.providers[3].issuer, "https://other.corp.example");
        assert!(!format!("{:?}", c.sso).contains("csecret"));
        assert!(!format!("{:?}", c.admin).contains("\"pw\""));
        dir.write("svc.toml", "[scale.sso.\"Bad Name\"]\nclient_id = \"x\"\n");
        let err = load(&dir, None, &[]).expect_err("refused");
        assert!(err.to_string().contains("platform name"), "{err}");
    }

    #[test]
    fn identity_sections_and_env() {
        let dir = TempDir::new();
        dir.write(
            "svc.toml",
            r#"
[scale.jwt]
secret = "file-secret"
algorithm = "HS512"
exp_delta_days = 2

[scale.auth]
verify_token_ttl_seconds = 60
reset_token_ttl_seconds = 30
verify_url_template = "https://x/v?t={token}"
reset_url_template = ""
bcrypt_cost = 4
login_max_failures = 3
login_max_failures_per_address = 9
login_failure_window_seconds = 10

[scale.emailer]
provider = " smtp "
from_address = "noreply@x.io"
enabled = false

[scale.emailer.smtp]
host = "mail.x.io"
port = 587
username = "u"
password = "p"
use_tls = false
timeout = 2
ca_file = "ca.pem"
"#,
        );
        let c = load(&dir, None, &[]).expect("config loads");
        assert_eq!(c.jwt.secret.as_deref(), Some("file-secret"));
        assert_eq!(
            (c.jwt.algorithm.as_str(), c.jwt.exp_delta_days),
            ("HS512", 2)
        );
        assert_eq!(
            c.auth,
            AuthConfig {
                verify_token_ttl_seconds: 60,
                reset_token_ttl_seconds: 30,
                verify_url_template: "https://x/v?t={token}".into(),
                reset_url_template: String::new(),
                bcrypt_cost: 4,
                login_max_failures: 3,
                login_max_failures_per_address: 9,
                login_failure_window_seconds: 10,
                ..AuthConfig::default()
            }
        );
        assert_eq!(c.emailer.provider, "smtp");
        assert!(!c.emailer.enabled);
        assert_eq!(c.emailer.smtp.port, 587);
        assert_eq!(c.emailer.smtp.timeout, 2.0);
        assert_eq!(c.emailer.smtp.ca_file, Some(dir.0.join("ca.pem")));
        assert!(!format!("{:?}{:?}", c.jwt, c.emailer).contains("file-secret"));
        let c = load(
            &dir,
            None,
            &[
                ("JWT_SECRET", "env-secret"),
                ("JWT_ALGORITHM", "HS256"),
                ("JWT_EXP_DELTA_DAYS", "30"),
                ("EMAILER_SMTP_PASSWORD", "env-pass"),
            ],
        )
        .expect("config loads");
        assert_eq!(c.jwt.secret.as_deref(), Some("env-secret"));
        assert_eq!(
            (c.jwt.algorithm.as_str(), c.jwt.exp_delta_days),
            ("HS256", 30)
        );
        assert_eq!(c.emailer.smtp.password, "env-pass");
        for (text, needle) in [
            (
                "[scale.auth]\nbcrypt_cost = 3\n",
                "[scale.auth] bcrypt_cost",
            ),
            (
                "[scale.jwt]\nexp_delta_days = 0\n",
                "[scale.jwt] exp_delta_days",
            ),
            (
                "[scale.emailer.smtp]\ntimeout = -1\n",
                "[scale.emailer.smtp] timeout",
            ),
            ("[scale.emailer]\nsmtp = 1\n", "scale.emailer.smtp"),
        ] {
            let dir = TempDir::new();
            dir.write("svc.toml", text);
            let err = format!("{:#}", load(&dir, None, &[]).expect_err("must fail"));
            assert!(err.contains(needle), "{text:?}: {err}");
        }
        let err = format!(
            "{:#}",
            load(&TempDir::new(), None, &[("JWT_EXP_DELTA_DAYS", "x")]).expect_err("must fail")
        );
        assert!(err.contains("JWT_EXP_DELTA_DAYS"), "{err}");
    }

    /// `[scale.websocket]`: defaults, every key, and bad values naming the key.
    #[test]
    fn websocket_keys() {
        let c = load(&TempDir::new(), None, &[]).expect("config loads");
        assert_eq!(c.websocket.ping_interval_seconds, 30.0);
        assert_eq!(c.websocket.idle_timeout_seconds, 90.0);
        assert_eq!(c.websocket.max_frame_bytes, 65536);
        let dir = TempDir::new();
        dir.write(
            "svc.toml",
            r#"
[scale.websocket]
ping_interval_seconds = 0.5
idle_timeout_seconds = 2
auth_timeout_seconds = 1
max_frame_bytes = 1024
outbox_capacity = 8
max_queued_messages = 2
max_connections = 3
broadcast_channel = "app:ws"
"#,
        );
        let c = load(&dir, None, &[("CACHE_URL", "redis://cache:6379/")]).expect("loads");
        assert_eq!(
            c.websocket,
            WebsocketConfig {
                ping_interval_seconds: 0.5,
                idle_timeout_seconds: 2.0,
                auth_timeout_seconds: 1.0,
                max_frame_bytes: 1024,
                outbox_capacity: 8,
                max_queued_messages: 2,
                max_connections: 3,
                broadcast_channel: "app:ws".into(),
            }
        );
        assert_eq!(c.database.cache_url.as_deref(), Some("redis://cache:6379/"));
        for (text, needle) in [
            ("max_frame_bytes = 0", "[scale.websocket] max_frame_bytes"),
            (
                "idle_timeout_seconds = -1",
                "[scale.websocket] idle_timeout_seconds",
            ),
            (
                "broadcast_channel = \"\"",
                "[scale.websocket] broadcast_channel",
            ),
        ] {
            let dir = TempDir::new();
            dir.write("svc.toml", &format!("[scale.websocket]\n{text}\n"));
            let err = format!("{:#}", load(&dir, None, &[]).expect_err("must fail"));
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }

    /// The hardening keys: body deadline, CORS allow-list, JWT clock skew, bcrypt queue,
    /// registration limits and `[scale.limits]`; env overrides; bad values name the key.
    #[test]
    fn hardening_keys_and_limits() {
        let dir = TempDir::new();
        let c = load(&dir, None, &[]).expect("config loads");
        assert_eq!(c.server.body_read_timeout_seconds, 30);
        assert_eq!(c.server.cors_origins, vec!["*".to_string()]);
        assert_eq!(c.jwt.clock_skew_seconds, 60);
        assert_eq!(
            (
                c.auth.bcrypt_queue_capacity,
                c.auth.register_max_per_address,
                c.auth.register_window_seconds
            ),
            (64, 10, 3600)
        );
        assert_eq!(c.limits, LimitsConfig::default());
        assert_eq!(c.limits.call_timeout_seconds, 30.0);
        assert_eq!(
            c.limits.max_call_depth as usize,
            lang::Limits::default().max_depth
        );
        assert!(!c.host_explicit);
        dir.write(
            "svc.toml",
            r#"
[scale.server]
host = "0.0.0.0"
body_read_timeout_seconds = 5
cors_origins = ["https://App.example.com/", "http://localhost:3000"]

[scale.jwt]
clock_skew_seconds = 0

[scale.auth]
bcrypt_queue_capacity = 0
register_max_per_address = 2
register_window_seconds = 60

[scale.limits]
call_timeout_seconds = 2.5
max_call_depth = 200
max_string_bytes = 1024
max_collection_items = 99
max_response_bytes = 4096
run_queue_capacity = 3
max_replays = 0
inline_run_max_us = 0
inline_writers = true
worker_retire_anchors = 0
"#,
        );
        let c = load(&dir, None, &[]).expect("config loads");
        assert!(c.host_explicit, "a host in the file is explicit");
        assert_eq!(c.server.body_read_timeout_seconds, 5);
        assert_eq!(
            c.server.cors_origins,
            vec!["https://app.example.com", "http://localhost:3000"]
        );
        assert_eq!(c.jwt.clock_skew_seconds, 0);
        assert_eq!(c.auth.bcrypt_queue_capacity, 0);
        assert_eq!(c.auth.register_max_per_address, 2);
        assert_eq!(c.auth.register_window_seconds, 60);
        assert_eq!(
            c.limits,
            LimitsConfig {
                call_timeout_seconds: 2.5,
                max_call_depth: 200,
                max_string_bytes: 1024,
                max_collection_items: 99,
                max_response_bytes: 4096,
                run_queue_capacity: 3,
                max_replays: 0,
                inline_run_max_us: 0,
                inline_writers: true,
                worker_retire_anchors: 0,
            }
        );
        let c = load(
            &TempDir::new(),
            None,
            &[
                ("SVC_BODY_READ_TIMEOUT_SECONDS", "7"),
                ("SVC_CORS_ORIGINS", "https://a.io, https://b.io"),
                ("SVC_JWT_CLOCK_SKEW_SECONDS", "5"),
                ("SVC_SERVER_HOST", "0.0.0.0"),
            ],
        )
        .expect("config loads");
        assert_eq!(c.server.body_read_timeout_seconds, 7);
        assert_eq!(c.server.cors_origins, vec!["https://a.io", "https://b.io"]);
        assert_eq!(c.jwt.clock_skew_seconds, 5);
        assert!(c.host_explicit);
        let dir = TempDir::new();
        dir.write("svc.toml", "[scale.server]\ncors_origins = []\n");
        let c = load(&dir, None, &[]).expect("config loads");
        assert!(c.server.cors_origins.is_empty());
        for (text, needle) in [
            (
                "[scale.server]\ncors_origins = \"*\"\n",
                "[scale.server] cors_origins",
            ),
            (
                "[scale.server]\ncors_origins = [\"*\", \"https://a.io\"]\n",
                "cannot be combined",
            ),
            (
                "[scale.server]\ncors_origins = [\"a.io\"]\n",
                "not an origin",
            ),
            (
                "[scale.server]\nbody_read_timeout_seconds = 0\n",
                "[scale.server] body_read_timeout_seconds",
            ),
            (
                "[scale.limits]\nmax_call_depth = 20000\n",
                "[scale.limits] max_call_depth",
            ),
            (
                "[scale.limits]\ncall_timeout_seconds = 0\n",
                "[scale.limits] call_timeout_seconds",
            ),
            (
                "[scale.auth]\nregister_max_per_address = 0\n",
                "[scale.auth] register_max_per_address",
            ),
        ] {
            let dir = TempDir::new();
            dir.write("svc.toml", text);
            let err = format!("{:#}", load(&dir, None, &[]).expect_err("must fail"));
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }

    #[test]
    fn absolute_shelf_path_is_kept() {
        let dir = TempDir::new();
        dir.write(
            "svc.toml",
            "[scale.database]\nshelf_db_path = \"/var/lib/svc/a.db\"\n",
        );
        let c = load(&dir, None, &[]).expect("config loads");
        assert_eq!(c.database.shelf_db_path, PathBuf::from("/var/lib/svc/a.db"));
    }

    #[test]
    fn unknown_keys_are_ignored() {
        let dir = TempDir::new();
        dir.write(
            "svc.toml",
            "[scale.server]\nprot = 1\nport = 8100\n[other]\nx = 1\n",
        );
        let c = load(&dir, None, &[]).expect("config loads");
        assert_eq!(c.server.port, 8100);
    }

    #[test]
    fn wrong_types_name_the_key_and_file() {
        let cases = [
            ("[scale.server]\nport = \"80\"\n", "[scale.server] port"),
            ("[scale.server]\nport = 70000\n", "[scale.server] port"),
            ("[scale.server]\nhost = 1\n", "[scale.server] host"),
            (
                "[scale.server]\ndocs_enabled = \"yes\"\n",
                "[scale.server] docs_enabled",
            ),
            (
                "[scale.server]\nmax_body_bytes = 0\n",
                "[scale.server] max_body_bytes",
            ),
            (
                "[scale.server]\nmax_body_bytes = -5\n",
                "[scale.server] max_body_bytes",
            ),
            (
                "[scale.database]\ndocdb_uri = 5\n",
                "[scale.database] docdb_uri",
            ),
            (
                "[scale.database]\nshelf_db_path = \"\"\n",
                "[scale.database] shelf_db_path",
            ),
            ("[scale]\nserver = 3\n", "scale.server"),
            ("scale = 3\n", "`scale`"),
        ];
        for (text, needle) in cases {
            let dir = TempDir::new();
            dir.write("svc.toml", text);
            let err = format!("{:#}", load(&dir, None, &[]).expect_err("must fail"));
            assert!(err.contains(needle), "{text:?}: {err}");
            assert!(err.contains("svc.toml"), "{text:?}: {err}");
        }
    }

    #[test]
    fn invalid_toml_names_the_file() {
        let dir = TempDir::new();
        dir.write("svc.toml", "[scale.server\nport = 1\n");
        let err = format!("{:#}", load(&dir, None, &[]).expect_err("must fail"));
        assert!(err.contains("svc.toml") && err.contains("line 1"), "{err}");
    }

    #[test]
    fn profile_file_overlays_key_by_key() {
        let dir = TempDir::new();
        dir.write(
            "svc.toml",
            "[scale.server]\nport = 9000\nhost = \"127.0.0.1\"\n",
        )
        .write("svc.prod.toml", "[scale.server]\nport = 80\n");
        let c = load(&dir, Some("prod"), &[]).expect("config loads");
        assert_eq!(c.server.port, 80);
        assert_eq!(c.server.host, "127.0.0.1");
        assert_eq!(c.profile.as_deref(), Some("prod"));
        assert_eq!(
            c.source,
            vec![dir.0.join("svc.toml"), dir.0.join("svc.prod.toml")]
        );
    }

    #[test]
    fn profile_from_env_and_flag_wins() {
        let dir = TempDir::new();
        dir.write("svc.staging.toml", "[scale.server]\nport = 81\n")
            .write("svc.prod.toml", "[scale.server]\nport = 80\n");
        let c = load(&dir, None, &[("SVC_PROFILE", "staging")]).expect("config loads");
        assert_eq!((c.server.port, c.profile.as_deref()), (81, Some("staging")));
        let c = load(&dir, Some("prod"), &[("SVC_PROFILE", "staging")]).expect("config loads");
        assert_eq!((c.server.port, c.profile.as_deref()), (80, Some("prod")));
        // A profile file works without a base svc.toml.
        assert_eq!(c.source, vec![dir.0.join("svc.prod.toml")]);
    }

    #[test]
    fn missing_or_bad_profile_is_an_error() {
        let dir = TempDir::new();
        let err = format!(
            "{:#}",
            load(&dir, Some("prod"), &[]).expect_err("must fail")
        );
        assert!(
            err.contains("svc.prod.toml") && err.contains("not found"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            load(&dir, Some("../x"), &[]).expect_err("must fail")
        );
        assert!(err.contains("invalid profile name"), "{err}");
    }

    #[test]
    fn env_overrides_files() {
        let dir = TempDir::new();
        dir.write(
            "svc.toml",
            "[scale.server]\nport = 9000\n[scale.database]\ndocdb_uri = \"a\"\n",
        )
        .write("svc.prod.toml", "[scale.server]\nport = 80\n");
        let c = load(
            &dir,
            Some("prod"),
            &[
                ("SVC_SERVER_PORT", "7000"),
                ("SVC_SERVER_HOST", "::1"),
                ("SVC_DOCS_ENABLED", "false"),
                ("SVC_SUPPRESS_HEALTH_CHECK_LOGS", "1"),
                ("SVC_MAX_BODY_BYTES", "4096"),
                ("SVC_SHELF_DB_PATH", "other.db"),
                ("DOCDB_URI", "mongodb://x"),
                ("CACHE_URL", "redis://y"),
            ],
        )
        .expect("config loads");
        assert_eq!(
            c.server,
            ServerConfig {
                port: 7000,
                host: "::1".into(),
                docs_enabled: false,
                suppress_health_check_logs: true,
                max_body_bytes: 4096,
                ..ServerConfig::default()
            }
        );
        assert_eq!(c.database.shelf_db_path, dir.0.join("other.db"));
        assert_eq!(c.database.docdb_uri.as_deref(), Some("mongodb://x"));
        assert_eq!(c.database.cache_url.as_deref(), Some("redis://y"));
    }

    #[test]
    fn empty_env_values_count_as_unset() {
        let dir = TempDir::new();
        dir.write("svc.toml", "[scale.database]\ndocdb_uri = \"a\"\n");
        let c =
            load(&dir, None, &[("DOCDB_URI", ""), ("SVC_SERVER_PORT", "")]).expect("config loads");
        assert_eq!(c.database.docdb_uri.as_deref(), Some("a"));
        assert_eq!(c.server.port, 8000);
    }

    #[test]
    fn bad_env_values_name_the_variable() {
        let dir = TempDir::new();
        for (var, value) in [
            ("SVC_SERVER_PORT", "eighty"),
            ("SVC_SERVER_PORT", "65536"),
            ("SVC_DOCS_ENABLED", "maybe"),
            ("SVC_SUPPRESS_HEALTH_CHECK_LOGS", "2"),
            ("SVC_MAX_BODY_BYTES", "0"),
            ("SVC_MAX_BODY_BYTES", "1MiB"),
        ] {
            let err = format!(
                "{:#}",
                load(&dir, None, &[(var, value)]).expect_err("must fail")
            );
            assert!(
                err.contains(var) && err.contains(value),
                "{var}={value}: {err}"
            );
        }
    }
}
