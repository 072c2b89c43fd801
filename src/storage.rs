//! The host side of the `store()` builtin (service spec "In-process interface: storage"):
//! `StorageNatives` answers the interpreter's `storage.*` natives for `svc run` and
//! every served call, with the local backend (`local.rs`, files under the base path, on
//! the calling thread) or the object backend (`object.rs`, S3-compatible through
//! `object_store`, run by the storage service thread and its tokio runtime).
//!
//! Paths from svc code are hostile input (`paths.rs`): relative, `/`-separated, no `..`,
//! no symbolic links on the way, sizes bounded by `[storage] max_object_bytes`. Every
//! refusal is an svc exception with a clear message, never a host failure.

mod local;
mod object;
mod paths;

use actors::natives::{NativeCall, Natives, NativesHandle};
use lang::host::HostError;
use serde_json::{Map, Value as Json, json};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::config::{StorageConfig, StorageKind};

/// Most paths one `list_files` answers.
pub const MAX_LIST_FILES: usize = 100_000;
/// Distinct base paths one process opens at most (each is remembered).
pub const MAX_BASE_PATHS: usize = 10_000;
/// Longest `get_url` expiry accepted (7 days, S3's limit for pre-signed URLs).
pub const MAX_URL_EXPIRY_SECONDS: i64 = 7 * 24 * 3600;

/// An svc exception to raise: its type and message.
#[derive(Debug, Clone, PartialEq)]
pub struct Raise {
    pub kind: &'static str,
    pub message: String,
}

impl Raise {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Raise {
        Raise {
            kind,
            message: message.into(),
        }
    }

    pub fn value(message: impl Into<String>) -> Raise {
        Raise::new("ValueError", message)
    }

    pub fn os(message: impl Into<String>) -> Raise {
        Raise::new("OSError", message)
    }

    pub fn not_found(path: &str) -> Raise {
        Raise::new(
            "FileNotFoundError",
            format!("no such file in storage: '{path}'"),
        )
    }

    pub fn type_error(message: impl Into<String>) -> Raise {
        Raise::new("TypeError", message)
    }
}

pub type Answer = Result<Json, Raise>;

/// What a method call answers the interpreter.
#[derive(Debug, PartialEq)]
pub enum Reply {
    /// A JSON value, sent as `{"value": v}`.
    Value(Json),
    /// Raw content (`download` without a destination), sent as `{"bytes": "<base64>"}`
    /// and read back as a `bytes` value, whatever the content (UTF-8 text or not).
    Content(Vec<u8>),
}

/// A method call's answer.
pub type Replied = Result<Reply, Raise>;

/// The arguments of one method call, by parameter name.
pub struct Args<'a>(pub &'a Map<String, Json>);

impl Args<'_> {
    /// A required `str` argument.
    pub fn str(&self, name: &str) -> Result<&str, Raise> {
        match self.0.get(name) {
            Some(Json::String(s)) => Ok(s),
            Some(other) => Err(Raise::type_error(format!(
                "'{name}' must be str, not {}",
                json_type(other)
            ))),
            None => Err(Raise::type_error(format!("missing argument '{name}'"))),
        }
    }

    /// An optional `str` argument (`None` when absent or `None`).
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>, Raise> {
        match self.0.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(_) => self.str(name).map(Some),
        }
    }

    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, Raise> {
        match self.0.get(name) {
            None | Some(Json::Null) => Ok(default),
            Some(Json::Bool(b)) => Ok(*b),
            Some(other) => Err(Raise::type_error(format!(
                "'{name}' must be bool, not {}",
                json_type(other)
            ))),
        }
    }

    pub fn int_or(&self, name: &str, default: i64) -> Result<i64, Raise> {
        match self.0.get(name) {
            None | Some(Json::Null) => Ok(default),
            Some(Json::Number(n)) if n.as_i64().is_some() => Ok(n.as_i64().unwrap_or(default)),
            Some(other) => Err(Raise::type_error(format!(
                "'{name}' must be int, not {}",
                json_type(other)
            ))),
        }
    }
}

fn json_type(j: &Json) -> &'static str {
    match j {
        Json::Null => "NoneType",
        Json::Bool(_) => "bool",
        Json::Number(n) if n.is_f64() => "float",
        Json::Number(_) => "int",
        Json::String(_) => "str",
        Json::Array(_) => "list",
        Json::Object(_) => "dict",
    }
}

/// What `upload` stores: bytes from a file object (an `UploadFile` dict) or from a local
/// file. A path source is a file of the machine the app runs on, as the app's own code
/// would open it (absolute, or relative to the working directory of `svc start` /
/// `svc run`), like the original's `upload(path, ...)`: it is not a storage path and is
/// not confined to the base path. Only app code names it (a client never calls `store()`
/// directly); the size bound applies as to every object.
pub fn upload_bytes(source: &Json, max_bytes: u64) -> Result<Vec<u8>, Raise> {
    let bytes = match source {
        Json::String(path) => local::read_local_file(Path::new(path), path, max_bytes)?,
        Json::Object(file) => {
            let Some(Json::String(content)) = file.get("content") else {
                return Err(Raise::type_error(
                    "upload source must be a path (str) or a file object with 'content'",
                ));
            };
            match file.get("encoding").and_then(Json::as_str) {
                Some("base64") => {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD
                        .decode(content.as_bytes())
                        .map_err(|e| Raise::value(format!("upload content is not base64: {e}")))?
                }
                _ => content.as_bytes().to_vec(),
            }
        }
        other => {
            return Err(Raise::type_error(format!(
                "upload source must be a path (str) or a file object, not {}",
                json_type(other)
            )));
        }
    };
    check_size(bytes.len() as u64, max_bytes)?;
    Ok(bytes)
}

/// Refuse an object larger than the configured bound.
pub fn check_size(size: u64, max_bytes: u64) -> Result<(), Raise> {
    if size > max_bytes {
        return Err(Raise::value(format!(
            "object of {size} bytes is over the limit of {max_bytes} bytes ([storage] max_object_bytes)"
        )));
    }
    Ok(())
}

/// `get_url`'s `expires_in` (seconds, 1 to `MAX_URL_EXPIRY_SECONDS`, default 3600).
pub fn check_expiry(args: &Args<'_>) -> Result<u64, Raise> {
    let n = args.int_or("expires_in", 3600)?;
    if !(1..=MAX_URL_EXPIRY_SECONDS).contains(&n) {
        return Err(Raise::value(format!(
            "expires_in must be 1 to {MAX_URL_EXPIRY_SECONDS} seconds, not {n}"
        )));
    }
    Ok(n.unsigned_abs())
}

/// The `storage.*` natives.
pub struct StorageNatives {
    config: StorageConfig,
    /// The app directory: explicit `store(base_path=...)` arguments are relative to it.
    app_dir: PathBuf,
    /// Base paths handed out by `storage.open`: a method call naming another one (an
    /// instance whose `base_path` field svc code rewrote) is refused.
    opened: Mutex<HashSet<PathBuf>>,
    object: Option<object::ObjectService>,
}

impl StorageNatives {
    /// The natives for an app in `app_dir` under `config`. The object backend's client
    /// is built here, so a bad endpoint or bucket setting fails at start.
    pub fn new(config: &StorageConfig, app_dir: &Path) -> anyhow::Result<StorageNatives> {
        let object = match config.kind {
            StorageKind::Local => None,
            StorageKind::Object => Some(object::ObjectService::start(config)?),
        };
        Ok(StorageNatives {
            config: config.clone(),
            app_dir: app_dir.to_path_buf(),
            opened: Mutex::new(HashSet::new()),
            object,
        })
    }

    /// A shareable handle for `RuntimeConfig::natives` / `RunHost::with_natives`.
    pub fn handle(self) -> NativesHandle {
        NativesHandle::new(self)
    }

    /// `store(base_path, create_dirs)`.
    fn open(&self, args: &[Json]) -> Answer {
        let empty = Map::new();
        let request = match args.first() {
            Some(Json::Object(m)) => m,
            _ => &empty,
        };
        // `StorageFactory.create(storage_type, config)`: the backend named, the base
        // path and create_dirs from `config`.
        let kind = match request.get("storage_type") {
            None => self.config.kind,
            Some(Json::String(t)) => match t.trim().to_ascii_lowercase().as_str() {
                "local" => StorageKind::Local,
                "object" if self.object.is_some() => StorageKind::Object,
                "object" => {
                    return Err(Raise::value(
                        "object storage is not configured ([storage] type = \"object\" and a bucket)",
                    ));
                }
                other => {
                    return Err(Raise::value(format!(
                        "unknown storage type '{other}' (local or object)"
                    )));
                }
            },
            Some(other) => {
                return Err(Raise::type_error(format!(
                    "storage type must be str, not {}",
                    json_type(other)
                )));
            }
        };
        let request = match request.get("config") {
            None | Some(Json::Null) if request.contains_key("storage_type") => &empty,
            None | Some(Json::Null) => request,
            Some(Json::Object(config)) => {
                if let Some(key) = config
                    .keys()
                    .find(|k| !["base_path", "create_dirs"].contains(&k.as_str()))
                {
                    return Err(Raise::value(format!(
                        "storage config key '{key}' comes from the configuration \
                         ([storage] in svc.toml or SVC_STORAGE_*), not from svc code"
                    )));
                }
                config
            }
            Some(other) => {
                return Err(Raise::type_error(format!(
                    "storage config must be dict, not {}",
                    json_type(other)
                )));
            }
        };
        let args = Args(request);
        let base = match args.opt_str("base_path")? {
            Some(explicit) => paths::app_relative_base(&self.app_dir, explicit)?,
            None => self.config.base_path.clone(),
        };
        let create_dirs = args.bool_or("create_dirs", self.config.create_dirs)?;
        if kind == StorageKind::Local {
            if create_dirs {
                std::fs::create_dir_all(&base).map_err(|e| {
                    Raise::os(format!(
                        "cannot create the storage directory {}: {e}",
                        base.display()
                    ))
                })?;
            } else if !base.is_dir() {
                return Err(Raise::new(
                    "FileNotFoundError",
                    format!(
                        "the storage directory {} does not exist (create_dirs is false)",
                        base.display()
                    ),
                ));
            }
        }
        let base = std::fs::canonicalize(&base).unwrap_or(base);
        let Ok(mut opened) = self.opened.lock() else {
            return Err(Raise::os("storage unavailable"));
        };
        if opened.len() >= MAX_BASE_PATHS && !opened.contains(&base) {
            return Err(Raise::value(format!(
                "more than {MAX_BASE_PATHS} distinct storage base paths opened by this process"
            )));
        }
        opened.insert(base.clone());
        drop(opened);
        Ok(json!({
            "backend": match kind {
                StorageKind::Local => "local",
                StorageKind::Object => "object",
            },
            "base_path": base.to_string_lossy(),
            "create_dirs": create_dirs,
        }))
    }

    /// One method call on a `Storage` instance.
    fn method(&self, method: &str, args: &[Json], call: NativeCall<'_>) -> Replied {
        let (Some(Json::Object(this)), Some(Json::Object(call_args))) = (args.first(), args.get(1))
        else {
            return Err(Raise::type_error("malformed storage call"));
        };
        let base = match this.get("base_path") {
            Some(Json::String(b)) => PathBuf::from(b),
            _ => return Err(Raise::type_error("not a storage instance")),
        };
        let known = self
            .opened
            .lock()
            .map(|o| o.contains(&base))
            .unwrap_or(false);
        if !known {
            return Err(Raise::new(
                "PermissionError",
                "this storage instance's base_path was changed: use store() to open another",
            ));
        }
        let create_dirs = matches!(this.get("create_dirs"), Some(Json::Bool(true)));
        let args = Args(call_args);
        let object = match this.get("backend") {
            Some(Json::String(b)) if b == "object" => self.object.as_ref(),
            _ => None,
        };
        match object {
            None => local::call(
                &local::Local {
                    base: &base,
                    create_dirs,
                    max_bytes: self.config.max_object_bytes,
                },
                method,
                &args,
            ),
            Some(service) => service.call(&base, method, &args, call),
        }
    }
}

impl Natives for StorageNatives {
    fn call(
        &self,
        name: &str,
        args: &[Json],
        call: NativeCall<'_>,
    ) -> Option<Result<Json, HostError>> {
        let method = name.strip_prefix("storage.")?;
        let answer = if method == "open" {
            self.open(args).map(Reply::Value)
        } else {
            self.method(method, args, call)
        };
        Some(Ok(match answer {
            Ok(Reply::Value(value)) => json!({ "value": value }),
            Ok(Reply::Content(bytes)) => {
                use base64::Engine as _;
                json!({ "bytes": base64::engine::general_purpose::STANDARD.encode(bytes) })
            }
            Err(raise) => json!({ "error": { "type": raise.kind, "message": raise.message } }),
        }))
    }
}

/// RFC 3339 text (UTC, microseconds) of a time.
pub fn iso_time(t: std::time::SystemTime) -> String {
    let d = match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d,
        Err(_) => std::time::Duration::ZERO,
    };
    let secs = d.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}+00:00",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        d.subsec_micros()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_time_of_known_instants() {
        let t = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        assert_eq!(iso_time(t(0)), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(iso_time(t(951_782_400)), "2000-02-29T00:00:00.000000+00:00");
        assert_eq!(
            iso_time(t(1_795_000_000)),
            "2026-11-18T11:06:40.000000+00:00"
        );
    }
}
