//! The local backend of `store()`: files under the base path, read and written on the
//! calling interpreter thread (a run worker or `svc run`'s thread, never an executor).
//! Writes go to a temporary file beside the target and are renamed into place, so a
//! reader never sees half a file.

use super::paths::{normalize, resolve};
use super::{Answer, Args, MAX_LIST_FILES, Raise, Replied, Reply, check_size, iso_time};
use serde_json::{Value as Json, json};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// One local storage instance.
pub struct Local<'a> {
    pub base: &'a Path,
    pub create_dirs: bool,
    pub max_bytes: u64,
}

/// Dispatch one method.
pub fn call(s: &Local<'_>, method: &str, args: &Args<'_>) -> Replied {
    if method == "download" {
        let source = args.str("source")?;
        let file = resolve(s.base, source, false)?;
        let bytes = read_bounded(&file, source, s.max_bytes)?;
        return match args.opt_str("destination")? {
            Some(dest) => {
                let target = resolve(s.base, dest, false)?;
                s.write(&target, dest, &bytes)?;
                Ok(Reply::Value(Json::Null))
            }
            None => Ok(Reply::Content(bytes)),
        };
    }
    value_method(s, method, args).map(Reply::Value)
}

/// The methods that answer a JSON value.
fn value_method(s: &Local<'_>, method: &str, args: &Args<'_>) -> Answer {
    match method {
        "upload" => {
            let source = args
                .0
                .get("source")
                .ok_or_else(|| Raise::type_error("missing argument 'source'"))?;
            let destination = args.str("destination")?;
            let bytes = super::upload_bytes(source, s.max_bytes)?;
            let target = resolve(s.base, destination, false)?;
            s.write(&target, destination, &bytes)?;
            Ok(Json::String(normalize(destination, false)?))
        }
        "delete" => {
            let path = args.str("path")?;
            let target = resolve(s.base, path, false)?;
            let Ok(meta) = std::fs::symlink_metadata(&target) else {
                return Ok(Json::Bool(false));
            };
            let done = if meta.is_dir() {
                std::fs::remove_dir_all(&target)
            } else {
                std::fs::remove_file(&target)
            };
            done.map_err(|e| Raise::os(format!("cannot delete '{path}': {e}")))?;
            Ok(Json::Bool(true))
        }
        "exists" => {
            let path = args.str("path")?;
            let target = resolve(s.base, path, true)?;
            Ok(Json::Bool(std::fs::symlink_metadata(target).is_ok()))
        }
        "list_files" => {
            let prefix = args.opt_str("prefix")?.unwrap_or("");
            let recursive = args.bool_or("recursive", false)?;
            let dir = resolve(s.base, prefix, true)?;
            let start = normalize(prefix, true)?;
            Ok(Json::Array(
                list(&dir, &start, recursive)?
                    .into_iter()
                    .map(Json::String)
                    .collect(),
            ))
        }
        "get_metadata" => {
            let path = args.str("path")?;
            let target = resolve(s.base, path, true)?;
            let meta = std::fs::symlink_metadata(&target).map_err(|_| Raise::not_found(path))?;
            let modified = meta.modified().ok();
            let created = meta.created().ok().or(modified);
            let name = normalize(path, true)?
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string();
            Ok(json!({
                "size": meta.len(),
                "modified": modified.map(iso_time),
                "created": created.map(iso_time),
                "is_dir": meta.is_dir(),
                "name": name,
            }))
        }
        "copy" | "move" => {
            let source = args.str("source")?;
            let destination = args.str("destination")?;
            let from = resolve(s.base, source, false)?;
            let to = resolve(s.base, destination, false)?;
            let Ok(meta) = std::fs::symlink_metadata(&from) else {
                return Ok(Json::Bool(false));
            };
            if from == to {
                return Ok(Json::Bool(true));
            }
            if to.starts_with(&from) {
                return Err(Raise::value(format!(
                    "cannot {method} '{source}' into itself ('{destination}')"
                )));
            }
            s.parent_dir(&to, destination)?;
            let done = if method == "move" {
                std::fs::rename(&from, &to)
            } else if meta.is_dir() {
                copy_dir(&from, &to, s.max_bytes)
            } else {
                check_size(meta.len(), s.max_bytes)?;
                std::fs::copy(&from, &to).map(|_| ())
            };
            done.map_err(|e| Raise::os(format!("cannot {method} '{source}': {e}")))?;
            Ok(Json::Bool(true))
        }
        "get_url" => {
            let path = args.str("path")?;
            super::check_expiry(args)?;
            let target = resolve(s.base, path, true)?;
            Ok(Json::String(file_uri(&target)))
        }
        other => Err(Raise::new(
            "NotImplementedError",
            format!("storage has no method '{other}'"),
        )),
    }
}

impl Local<'_> {
    /// Make sure `target`'s directory exists (created when `create_dirs`).
    fn parent_dir(&self, target: &Path, shown: &str) -> Result<(), Raise> {
        let Some(parent) = target.parent() else {
            return Ok(());
        };
        if parent.is_dir() {
            return Ok(());
        }
        if !self.create_dirs {
            return Err(Raise::new(
                "FileNotFoundError",
                format!("the directory of '{shown}' does not exist (create_dirs is false)"),
            ));
        }
        std::fs::create_dir_all(parent)
            .map_err(|e| Raise::os(format!("cannot create the directory of '{shown}': {e}")))
    }

    /// Write `bytes` to `target` atomically (a temporary file renamed into place).
    fn write(&self, target: &Path, shown: &str, bytes: &[u8]) -> Result<(), Raise> {
        if target.is_dir() {
            return Err(Raise::os(format!("'{shown}' is a directory")));
        }
        self.parent_dir(target, shown)?;
        let tmp = temp_beside(target);
        let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, target));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(Raise::os(format!("cannot write '{shown}': {e}")));
        }
        Ok(())
    }
}

/// A fresh temporary name in `target`'s directory.
fn temp_beside(target: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.svc-tmp-{}-{n}", std::process::id()))
}

/// Read a whole file, refusing one over `max_bytes` (checked before and while reading).
pub fn read_bounded(file: &Path, shown: &str, max_bytes: u64) -> Result<Vec<u8>, Raise> {
    read_file(file, shown, max_bytes, false)
}

/// An upload's local source file (followed through symbolic links, as `open` would),
/// read up to `max_bytes`.
pub fn read_local_file(file: &Path, shown: &str, max_bytes: u64) -> Result<Vec<u8>, Raise> {
    read_file(file, shown, max_bytes, true)
}

/// A regular file's bytes (a symbolic link is followed only when `follow`), at most
/// `max_bytes`.
fn read_file(file: &Path, shown: &str, max_bytes: u64, follow: bool) -> Result<Vec<u8>, Raise> {
    let meta = if follow {
        std::fs::metadata(file)
    } else {
        std::fs::symlink_metadata(file)
    }
    .ok()
    .filter(std::fs::Metadata::is_file)
    .ok_or_else(|| {
        if follow {
            Raise::new("FileNotFoundError", format!("no such file: '{shown}'"))
        } else {
            Raise::not_found(shown)
        }
    })?;
    check_size(meta.len(), max_bytes)?;
    let f =
        std::fs::File::open(file).map_err(|e| Raise::os(format!("cannot read '{shown}': {e}")))?;
    let mut bytes = Vec::new();
    f.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Raise::os(format!("cannot read '{shown}': {e}")))?;
    check_size(bytes.len() as u64, max_bytes)?;
    Ok(bytes)
}

/// Files under `dir` as storage paths (`start` + `/` + name), sorted; symbolic links
/// are skipped, and directories are descended only when `recursive`.
fn list(dir: &Path, start: &str, recursive: bool) -> Result<Vec<String>, Raise> {
    let mut out = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), start.to_string())];
    while let Some((dir, shown)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.contains(".svc-tmp-") {
                continue;
            }
            let path = if shown.is_empty() {
                name
            } else {
                format!("{shown}/{name}")
            };
            if kind.is_file() {
                if out.len() >= MAX_LIST_FILES {
                    return Err(Raise::value(format!(
                        "more than {MAX_LIST_FILES} files to list: list a narrower prefix"
                    )));
                }
                out.push(path);
            } else if kind.is_dir() && recursive {
                pending.push((entry.path(), path));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Copy a directory tree (files and directories only; links are skipped).
fn copy_dir(from: &Path, to: &Path, max_bytes: u64) -> std::io::Result<()> {
    let mut pending = vec![(from.to_path_buf(), to.to_path_buf())];
    while let Some((src, dst)) = pending.pop() {
        std::fs::create_dir_all(&dst)?;
        for entry in std::fs::read_dir(&src)?.flatten() {
            let kind = entry.file_type()?;
            let target = dst.join(entry.file_name());
            if kind.is_dir() {
                pending.push((entry.path(), target));
            } else if kind.is_file() {
                if entry.metadata()?.len() > max_bytes {
                    return Err(std::io::Error::other(format!(
                        "a file is over the limit of {max_bytes} bytes ([storage] max_object_bytes)"
                    )));
                }
                std::fs::copy(entry.path(), target)?;
            }
        }
    }
    Ok(())
}

/// `file://` URI of an absolute path, with bytes outside the unreserved set and `/`
/// percent-encoded (as Python's `Path.as_uri()`).
pub fn file_uri(path: &Path) -> String {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = String::from("file://");
    for b in abs.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
