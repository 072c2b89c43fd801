//! The generated development JWT secret (spec "JWT claims", decisions.md "Identity"):
//! without `[scale.jwt] secret` / `JWT_SECRET` the server generates a random one on first
//! start and keeps it in the data directory ([`load_or_create_secret`]).

use anyhow::{Context as _, bail};
use base64::Engine as _;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

/// File name of the generated development secret, next to the store file.
pub const SECRET_FILE: &str = "jwt_secret";
/// Random bytes of a generated secret (256 bits, the HS256 key size).
const GENERATED_SECRET_BYTES: usize = 32;

/// The development secret kept in `path`: read when the file exists, else generated
/// (32 random bytes, URL-safe base64) and written with mode 0600, its directory created
/// 0700. Two servers starting at once agree on one secret: the file appears whole or not
/// at all (written aside, then hard-linked into place, which fails if it exists).
pub fn load_or_create_secret(path: &Path) -> anyhow::Result<String> {
    load_or_create_random(path, "JWT secret")
}

/// A random value kept in `path` as [`load_or_create_secret`] keeps the secret (also the
/// bootstrap admin's generated first password); `what` names it in errors.
pub fn load_or_create_random(path: &Path, what: &str) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => return check_stored_secret(path, &text, what),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => bail!("cannot read the {what} file {}: {e}", path.display()),
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    actors::store::create_private_dir(dir)
        .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(actors::identity::random_bytes::<GENERATED_SECRET_BYTES>());
    let name = path
        .file_name()
        .map_or_else(|| SECRET_FILE.into(), |n| n.to_string_lossy().into_owned());
    let aside = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&aside)
        .and_then(|mut f| {
            f.write_all(secret.as_bytes())?;
            f.write_all(b"\n")?;
            f.sync_all()
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&aside);
        bail!("cannot write the {what} file {}: {e}", aside.display());
    }
    let linked = std::fs::hard_link(&aside, path);
    let _ = std::fs::remove_file(&aside);
    match linked {
        Ok(()) => Ok(secret),
        // Another process created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the {what} file {}", path.display()))?;
            check_stored_secret(path, &text, what)
        }
        Err(e) => bail!("cannot create the {what} file {}: {e}", path.display()),
    }
}

/// A stored secret must be long enough to be one we generated; a file others can read
/// is refused (anyone who reads it can forge tokens).
fn check_stored_secret(path: &Path, text: &str, what: &str) -> anyhow::Result<String> {
    let mode = std::fs::metadata(path)
        .with_context(|| format!("cannot read the {what} file {}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        bail!(
            "the {what} file {} is accessible to other users (mode {:o}); run `chmod 600` \
             on it, or delete it to generate a new one",
            path.display(),
            mode & 0o777
        );
    }
    let secret = text.trim();
    if secret.len() < 32 {
        bail!(
            "the {what} file {} holds fewer than 32 characters; delete it to generate a \
             new one",
            path.display()
        );
    }
    Ok(secret.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_secret_is_kept_private_and_reused() {
        let dir = std::env::temp_dir().join(format!(
            "svc-jwt-secret-{}-{}",
            std::process::id(),
            actors::random_id()
        ));
        let path = dir.join("data").join(SECRET_FILE);
        let first = load_or_create_secret(&path).expect("generated");
        assert!(first.len() >= 43, "{first}");
        let mode = |p: &Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.join("data")), 0o700);
        assert_eq!(load_or_create_secret(&path).expect("reused"), first);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = load_or_create_secret(&path).expect_err("readable by others");
        assert!(err.to_string().contains("chmod 600"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
