//! Storage paths from svc code: hostile input. A path is relative and `/`-separated;
//! empty and `.` segments are dropped; `..`, absolute paths, backslashes and NUL are
//! refused; and on the local disk no existing component below the base may be a
//! symbolic link, so a path can never leave the base directory.

use super::Raise;
use std::path::{Path, PathBuf};

/// Longest storage path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest single segment, in bytes (common file systems' limit).
const MAX_SEGMENT_BYTES: usize = 255;

/// The segments of a storage path after the checks. `allow_root`: the empty path (the
/// base itself) is accepted, e.g. by `list_files` and `exists`.
pub fn segments(path: &str, allow_root: bool) -> Result<Vec<&str>, Raise> {
    if path.len() > MAX_PATH_BYTES {
        return Err(Raise::value(format!(
            "storage path is {} bytes long, over the limit of {MAX_PATH_BYTES}",
            path.len()
        )));
    }
    if path.contains('\0') {
        return Err(Raise::value("storage path contains a NUL character"));
    }
    if path.contains('\\') {
        return Err(Raise::value(format!(
            "storage path '{path}' contains a backslash: use '/' between segments"
        )));
    }
    if path.starts_with('/') {
        return Err(Raise::new(
            "PermissionError",
            format!("storage path '{path}' is absolute: paths are relative to the storage base"),
        ));
    }
    let mut out = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                return Err(Raise::new(
                    "PermissionError",
                    format!(
                        "storage path '{path}' contains '..': it may not leave the storage base"
                    ),
                ));
            }
            s if s.len() > MAX_SEGMENT_BYTES => {
                return Err(Raise::value(format!(
                    "storage path segment is {} bytes long, over the limit of {MAX_SEGMENT_BYTES}",
                    s.len()
                )));
            }
            s => out.push(s),
        }
    }
    if out.is_empty() && !allow_root {
        return Err(Raise::value(format!("storage path '{path}' names no file")));
    }
    Ok(out)
}

/// The normalized text of a storage path (`a/./b//c` → `a/b/c`).
pub fn normalize(path: &str, allow_root: bool) -> Result<String, Raise> {
    Ok(segments(path, allow_root)?.join("/"))
}

/// The local file a storage path names under `base`, refusing symbolic links on the
/// way (the base itself may be one: the operator chose it).
pub fn resolve(base: &Path, path: &str, allow_root: bool) -> Result<PathBuf, Raise> {
    let mut out = base.to_path_buf();
    let mut checking = true;
    for seg in segments(path, allow_root)? {
        out.push(seg);
        if checking {
            match std::fs::symlink_metadata(&out) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(Raise::new(
                        "PermissionError",
                        format!("storage path '{path}' goes through a symbolic link"),
                    ));
                }
                Ok(_) => {}
                // Nothing below a missing component exists yet.
                Err(_) => checking = false,
            }
        }
    }
    Ok(out)
}

/// An explicit `store(base_path=...)`: relative to the app directory, never leaving it,
/// and never the app's own data directory `.svc`.
pub fn app_relative_base(app_dir: &Path, base_path: &str) -> Result<PathBuf, Raise> {
    let segs = segments(base_path, true).map_err(|e| Raise {
        message: format!("store(base_path=...): {}", e.message),
        ..e
    })?;
    if segs.first() == Some(&".svc") {
        return Err(Raise::new(
            "PermissionError",
            "store(base_path=...) may not name the app's data directory '.svc'",
        ));
    }
    resolve(app_dir, &segs.join("/"), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_paths_are_refused() {
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a\\b",
            "a\0b",
            "",
            "./",
            "a/..",
        ] {
            assert!(segments(bad, false).is_err(), "{bad:?} accepted");
        }
        assert!(segments(&"a".repeat(MAX_PATH_BYTES + 1), false).is_err());
        assert!(segments(&"a".repeat(300), false).is_err());
    }

    #[test]
    fn paths_are_normalized() {
        assert_eq!(normalize("a//b/./c", false).ok(), Some("a/b/c".to_string()));
        assert_eq!(normalize("", true).ok(), Some(String::new()));
        assert_eq!(normalize("dir/", false).ok(), Some("dir".to_string()));
    }
}
