//! The object backend of `store()`: an S3-compatible bucket through `object_store`.
//!
//! `object_store` is async and the interpreter threads have no runtime, so the client
//! lives on the storage service: one `svc-storage` thread owning a current-thread tokio
//! runtime, taking typed requests (`Request`: method, base, arguments, reply channel)
//! from a bounded queue and running each as its own task, so slow requests overlap. A
//! caller (a run worker, `svc run`) blocks on its reply for at most
//! `[storage] timeout_seconds`, checking its run's cancel flag every 50 ms. Supervision:
//! a request whose task panics answers `OSError` (its reply channel is dropped), and a
//! service whose thread is gone is started again on the next request.

use super::paths::{normalize, segments};
use super::{Answer, Args, MAX_LIST_FILES, Raise, Replied, Reply, check_size};
use crate::config::StorageConfig;
use actors::natives::NativeCall;
use futures_util::StreamExt as _;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::signer::Signer as _;
use object_store::{
    Attribute, Attributes, ClientOptions, ObjectStore as _, ObjectStoreExt as _, PutOptions,
    PutPayload,
};
use serde_json::{Map, Value as Json, json};
use std::path::{Path, PathBuf};
use std::sync::mpsc as sync_mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Requests waiting for the storage service at most; more are refused with `OSError`.
const QUEUE_CAPACITY: usize = 256;

/// One method call for the service.
struct Request {
    method: String,
    /// The local base path (upload sources and download destinations live there).
    base: PathBuf,
    args: Map<String, Json>,
    reply: sync_mpsc::SyncSender<Replied>,
}

/// The client and settings every task shares.
struct Bucket {
    store: AmazonS3,
    config: StorageConfig,
}

/// Handle of the storage service (what `StorageNatives` holds).
pub struct ObjectService {
    bucket: Arc<Bucket>,
    sender: Mutex<mpsc::Sender<Request>>,
}

impl ObjectService {
    /// Build the client from the configuration and start the service thread.
    pub fn start(config: &StorageConfig) -> anyhow::Result<ObjectService> {
        let Some(bucket_name) = config.bucket.clone() else {
            anyhow::bail!(
                "[storage] type is `object` but no bucket is configured \
                 (`bucket` or SVC_STORAGE_OBJ_BUCKET)"
            );
        };
        let timeout = Duration::from_secs_f64(config.timeout_seconds);
        let mut client = ClientOptions::new()
            .with_timeout(timeout)
            .with_connect_timeout(timeout.min(Duration::from_secs(10)));
        if config.public_read {
            // Every object written is readable by anyone, so the permanent URL works.
            let mut headers = object_store::HeaderMap::new();
            headers.insert(
                "x-amz-acl",
                object_store::HeaderValue::from_static("public-read"),
            );
            client = client.with_default_headers(headers);
        }
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(bucket_name)
            .with_region(config.region.clone())
            .with_client_options(client)
            // A few quick retries inside the operation's time budget, so no task outlives
            // the caller that gave up on it by much.
            .with_retry(object_store::RetryConfig {
                max_retries: 2,
                retry_timeout: timeout,
                ..object_store::RetryConfig::default()
            });
        if let Some(endpoint) = &config.endpoint_url {
            builder = builder
                .with_endpoint(endpoint.trim_end_matches('/'))
                .with_allow_http(endpoint.starts_with("http://"))
                .with_virtual_hosted_style_request(false);
        }
        if let Some(key) = &config.access_key_id {
            builder = builder.with_access_key_id(key);
        }
        if let Some(secret) = &config.secret_access_key {
            builder = builder.with_secret_access_key(secret);
        }
        if let Some(token) = &config.session_token {
            builder = builder.with_token(token);
        }
        let store = builder
            .build()
            .map_err(|e| anyhow::anyhow!("object storage configuration: {e}"))?;
        let bucket = Arc::new(Bucket {
            store,
            config: config.clone(),
        });
        let sender = spawn_service(Arc::clone(&bucket))?;
        Ok(ObjectService {
            bucket,
            sender: Mutex::new(sender),
        })
    }

    /// One method call: queue it and wait for the answer.
    pub fn call(
        &self,
        base: &Path,
        method: &str,
        args: &Args<'_>,
        call: NativeCall<'_>,
    ) -> Replied {
        let (reply, answer) = sync_mpsc::sync_channel(1);
        let mut request = Request {
            method: method.to_string(),
            base: base.to_path_buf(),
            args: args.0.clone(),
            reply,
        };
        // Two tries: the second after restarting a service whose thread is gone.
        for attempt in 0..2 {
            let Ok(mut sender) = self.sender.lock() else {
                return Err(Raise::os("storage service unavailable"));
            };
            match sender.try_send(request) {
                Ok(()) => break,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    return Err(Raise::os(format!(
                        "storage service busy: {QUEUE_CAPACITY} requests are waiting"
                    )));
                }
                Err(mpsc::error::TrySendError::Closed(back)) => {
                    if attempt == 1 {
                        return Err(Raise::os("storage service unavailable"));
                    }
                    tracing::warn!("the storage service stopped; starting it again");
                    *sender = spawn_service(Arc::clone(&self.bucket))
                        .map_err(|e| Raise::os(format!("storage service unavailable: {e}")))?;
                    request = back;
                }
            }
        }
        let deadline =
            Instant::now() + Duration::from_secs_f64(self.bucket.config.timeout_seconds + 1.0);
        loop {
            match answer.recv_timeout(Duration::from_millis(50)) {
                Ok(result) => return result,
                Err(sync_mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Raise::os("storage operation failed (internal error)"));
                }
                Err(sync_mpsc::RecvTimeoutError::Timeout) => {
                    if call.cancelled() {
                        return Err(Raise::os("storage operation cancelled"));
                    }
                    if Instant::now() >= deadline {
                        return Err(Raise::new(
                            "TimeoutError",
                            format!(
                                "storage operation '{method}' took longer than {} s \
                                 ([storage] timeout_seconds)",
                                self.bucket.config.timeout_seconds
                            ),
                        ));
                    }
                }
            }
        }
    }
}

/// Start the service thread; its queue's sender.
fn spawn_service(bucket: Arc<Bucket>) -> anyhow::Result<mpsc::Sender<Request>> {
    let (sender, mut receiver) = mpsc::channel::<Request>(QUEUE_CAPACITY);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("svc-storage".into())
        .spawn(move || {
            runtime.block_on(async move {
                while let Some(request) = receiver.recv().await {
                    let bucket = Arc::clone(&bucket);
                    tokio::spawn(async move {
                        let Request {
                            method,
                            base,
                            args,
                            reply,
                        } = request;
                        let answer = bucket.call(&method, &base, &Args(&args)).await;
                        let _ = reply.send(answer);
                    });
                }
            });
        })?;
    Ok(sender)
}

impl Bucket {
    /// The object key of a storage path: `<prefix>/<path>`.
    fn key(&self, path: &str, allow_root: bool) -> Result<ObjectPath, Raise> {
        let segs = segments(path, allow_root)?;
        let prefix = self.config.prefix.split('/').filter(|s| !s.is_empty());
        let parts: Vec<&str> = prefix.chain(segs).collect();
        ObjectPath::parse(parts.join("/"))
            .map_err(|e| Raise::value(format!("storage path '{path}' is not a valid key: {e}")))
    }

    /// The storage path of a key (the prefix taken off).
    fn storage_path(&self, key: &ObjectPath) -> String {
        let text = key.as_ref();
        if self.config.prefix.is_empty() {
            return text.to_string();
        }
        text.strip_prefix(&self.config.prefix)
            .map(|rest| rest.trim_start_matches('/').to_string())
            .unwrap_or_else(|| text.to_string())
    }

    async fn call(&self, method: &str, base: &Path, args: &Args<'_>) -> Replied {
        if method == "download" {
            let source = args.str("source")?;
            let key = self.key(source, false)?;
            let got = self
                .store
                .get(&key)
                .await
                .map_err(|e| failure("download", source, e))?;
            check_size(got.meta.size, self.config.max_object_bytes)?;
            let bytes = got
                .bytes()
                .await
                .map_err(|e| failure("download", source, e))?
                .to_vec();
            return match args.opt_str("destination")? {
                Some(dest) => {
                    let target = super::paths::resolve(base, dest, false)?;
                    write_local(&target, dest, &bytes)?;
                    Ok(Reply::Value(Json::Null))
                }
                None => Ok(Reply::Content(bytes)),
            };
        }
        self.value_method(method, args).await.map(Reply::Value)
    }

    /// The methods that answer a JSON value.
    async fn value_method(&self, method: &str, args: &Args<'_>) -> Answer {
        let max = self.config.max_object_bytes;
        match method {
            "upload" => {
                let source = args
                    .0
                    .get("source")
                    .ok_or_else(|| Raise::type_error("missing argument 'source'"))?;
                let destination = args.str("destination")?;
                let bytes = super::upload_bytes(source, max)?;
                let key = self.key(destination, false)?;
                let mut attributes = Attributes::new();
                if let Some(Json::Object(meta)) = args.0.get("metadata") {
                    for (k, v) in meta {
                        let v = match v {
                            Json::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        let attribute = match k.as_str() {
                            "content_type" | "ContentType" | "Content-Type" => {
                                Attribute::ContentType
                            }
                            _ => Attribute::Metadata(k.clone().into()),
                        };
                        attributes.insert(attribute, v.into());
                    }
                }
                let opts = PutOptions {
                    attributes,
                    ..PutOptions::default()
                };
                self.store
                    .put_opts(&key, PutPayload::from(bytes), opts)
                    .await
                    .map_err(|e| failure("upload", destination, e))?;
                Ok(Json::String(normalize(destination, false)?))
            }
            "delete" => {
                let path = args.str("path")?;
                let key = self.key(path, false)?;
                match self.store.head(&key).await {
                    Ok(_) => {
                        self.store
                            .delete(&key)
                            .await
                            .map_err(|e| failure("delete", path, e))?;
                        return Ok(Json::Bool(true));
                    }
                    Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(failure("delete", path, e)),
                }
                // A "directory": every object under `path/`.
                let under = self.list_keys(&key, true).await?;
                for k in &under {
                    self.store
                        .delete(k)
                        .await
                        .map_err(|e| failure("delete", path, e))?;
                }
                Ok(Json::Bool(!under.is_empty()))
            }
            "exists" => {
                let path = args.str("path")?;
                let key = self.key(path, true)?;
                if !key.as_ref().is_empty() {
                    match self.store.head(&key).await {
                        Ok(_) => return Ok(Json::Bool(true)),
                        Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(failure("exists", path, e)),
                    }
                }
                let listed = self
                    .store
                    .list_with_delimiter(Some(&key))
                    .await
                    .map_err(|e| failure("exists", path, e))?;
                Ok(Json::Bool(
                    !listed.objects.is_empty() || !listed.common_prefixes.is_empty(),
                ))
            }
            "list_files" => {
                let prefix = args.opt_str("prefix")?.unwrap_or("");
                let recursive = args.bool_or("recursive", false)?;
                let key = self.key(prefix, true)?;
                let mut out: Vec<String> = self
                    .list_keys(&key, recursive)
                    .await?
                    .iter()
                    .map(|k| self.storage_path(k))
                    .collect();
                out.sort();
                Ok(Json::Array(out.into_iter().map(Json::String).collect()))
            }
            "get_metadata" => {
                let path = args.str("path")?;
                let key = self.key(path, true)?;
                let name = normalize(path, true)?
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .to_string();
                match self.store.head(&key).await {
                    Ok(meta) => {
                        let when = meta.last_modified.to_rfc3339();
                        Ok(json!({
                            "size": meta.size,
                            "modified": when,
                            "created": when,
                            "is_dir": false,
                            "name": name,
                        }))
                    }
                    Err(object_store::Error::NotFound { .. }) => {
                        let listed = self
                            .store
                            .list_with_delimiter(Some(&key))
                            .await
                            .map_err(|e| failure("get_metadata", path, e))?;
                        if listed.objects.is_empty() && listed.common_prefixes.is_empty() {
                            return Err(Raise::not_found(path));
                        }
                        Ok(json!({
                            "size": 0,
                            "modified": None::<String>,
                            "created": None::<String>,
                            "is_dir": true,
                            "name": name,
                        }))
                    }
                    Err(e) => Err(failure("get_metadata", path, e)),
                }
            }
            "copy" | "move" => {
                let source = args.str("source")?;
                let destination = args.str("destination")?;
                let from = self.key(source, false)?;
                let to = self.key(destination, false)?;
                match self.store.head(&from).await {
                    Ok(meta) => check_size(meta.size, max)?,
                    Err(object_store::Error::NotFound { .. }) => return Ok(Json::Bool(false)),
                    Err(e) => return Err(failure(method, source, e)),
                }
                if from == to {
                    return Ok(Json::Bool(true));
                }
                let done = if method == "move" {
                    self.store.rename(&from, &to).await
                } else {
                    self.store.copy(&from, &to).await
                };
                done.map_err(|e| failure(method, source, e))?;
                Ok(Json::Bool(true))
            }
            "get_url" => {
                let path = args.str("path")?;
                let expires = super::check_expiry(args)?;
                let key = self.key(path, false)?;
                if self.config.public_read {
                    return Ok(Json::String(self.public_url(&key)));
                }
                let url = self
                    .store
                    .signed_url(
                        object_store::signer::Method::GET,
                        &key,
                        Duration::from_secs(expires),
                    )
                    .await
                    .map_err(|e| failure("get_url", path, e))?;
                Ok(Json::String(url.to_string()))
            }
            other => Err(Raise::new(
                "NotImplementedError",
                format!("storage has no method '{other}'"),
            )),
        }
    }

    /// Keys under `dir` (`dir` itself excluded): all of them when `recursive`, else only
    /// the objects directly inside it. At most `MAX_LIST_FILES`.
    async fn list_keys(&self, dir: &ObjectPath, recursive: bool) -> Result<Vec<ObjectPath>, Raise> {
        let prefix = (!dir.as_ref().is_empty()).then_some(dir);
        let shown = dir.as_ref();
        let too_many = || {
            Raise::value(format!(
                "more than {MAX_LIST_FILES} files to list: list a narrower prefix"
            ))
        };
        if !recursive {
            let listed = self
                .store
                .list_with_delimiter(prefix)
                .await
                .map_err(|e| failure("list_files", shown, e))?;
            if listed.objects.len() > MAX_LIST_FILES {
                return Err(too_many());
            }
            return Ok(listed.objects.into_iter().map(|m| m.location).collect());
        }
        let mut stream = self.store.list(prefix);
        let mut out = Vec::new();
        while let Some(item) = stream.next().await {
            let meta = item.map_err(|e| failure("list_files", shown, e))?;
            if out.len() >= MAX_LIST_FILES {
                return Err(too_many());
            }
            out.push(meta.location);
        }
        Ok(out)
    }

    /// A permanent URL of an object in a publicly readable bucket: path style on a
    /// configured endpoint, virtual-hosted AWS style otherwise.
    fn public_url(&self, key: &ObjectPath) -> String {
        let bucket = self.config.bucket.as_deref().unwrap_or_default();
        let encoded: Vec<String> = key.as_ref().split('/').map(encode_segment).collect();
        let encoded = encoded.join("/");
        match &self.config.endpoint_url {
            Some(endpoint) => format!("{}/{bucket}/{encoded}", endpoint.trim_end_matches('/')),
            None => format!(
                "https://{bucket}.s3.{}.amazonaws.com/{encoded}",
                self.config.region
            ),
        }
    }
}

/// Percent-encode one key segment (RFC 3986 unreserved characters stay).
fn encode_segment(seg: &str) -> String {
    let mut out = String::new();
    for b in seg.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An `object_store` error as an svc exception.
fn failure(op: &str, path: &str, e: object_store::Error) -> Raise {
    match e {
        object_store::Error::NotFound { .. } => Raise::not_found(path),
        other => Raise::os(format!("storage {op} of '{path}' failed: {other}")),
    }
}

/// A download's destination on the local disk (under the base path).
fn write_local(target: &Path, shown: &str, bytes: &[u8]) -> Result<(), Raise> {
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Raise::os(format!("cannot create the directory of '{shown}': {e}")))?;
    }
    std::fs::write(target, bytes).map_err(|e| Raise::os(format!("cannot write '{shown}': {e}")))
}
