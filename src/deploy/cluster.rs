//! Talking to a cluster: through `kubectl` (server-side apply, label-selected `get` and
//! `delete`), found on `PATH`. Why not the `kube` crate: see ARCHITECTURE.md "Deploy".
//!
//! Before anything runs, `reachable` checks that a kubeconfig exists (`KUBECONFIG`, else
//! `~/.kube/config`), that `kubectl` is installed and that the API server answers within
//! [`REQUEST_TIMEOUT`]; each failure is one clear message (exit 1).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// How long one request to the API server may take.
pub const REQUEST_TIMEOUT: &str = "10s";
/// The field manager of our server-side applies.
const FIELD_MANAGER: &str = "svc";

/// The kubeconfig files `kubectl` would read, if any exists.
fn kubeconfig() -> Result<String, String> {
    match std::env::var("KUBECONFIG") {
        Ok(v) if !v.trim().is_empty() => {
            let found = std::env::split_paths(&v).any(|p| p.is_file());
            if found {
                Ok(v)
            } else {
                Err(format!(
                    "no Kubernetes cluster is configured: KUBECONFIG names no readable file \
                     ({v})"
                ))
            }
        }
        _ => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            match home.map(|h| h.join(".kube/config")) {
                Some(p) if p.is_file() => Ok(p.display().to_string()),
                _ => Err(
                    "no Kubernetes cluster is configured: set KUBECONFIG or create \
                          ~/.kube/config (use --dry-run to see the manifests without a cluster)"
                        .into(),
                ),
            }
        }
    }
}

fn kubectl() -> Command {
    let mut cmd = Command::new("kubectl");
    cmd.arg(format!("--request-timeout={REQUEST_TIMEOUT}"));
    cmd
}

/// Run kubectl with `args` (and `input` on stdin): its stdout, or a message with its
/// stderr.
fn run(args: &[&str], input: Option<&str>) -> Result<String, String> {
    let mut child = kubectl()
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "kubectl is not available ({e}): svc talks to the cluster through kubectl; \
                 install it (https://kubernetes.io/docs/tasks/tools/)"
            )
        })?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot send the manifests to kubectl: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("kubectl failed: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// A configured, reachable cluster, or why not.
pub fn reachable() -> Result<(), String> {
    let config = kubeconfig()?;
    run(&["get", "--raw", "/version"], None)
        .map_err(|e| format!("cannot reach the Kubernetes cluster of {config}: {e}"))?;
    Ok(())
}

/// Whether an object exists.
pub fn exists(kind: &str, name: &str, namespace: &str) -> Result<bool, String> {
    let out = run(
        &[
            "get",
            kind,
            name,
            "-n",
            namespace,
            "--ignore-not-found",
            "-o",
            "name",
        ],
        None,
    )?;
    Ok(!out.trim().is_empty())
}

/// Server-side apply of a YAML stream.
pub fn apply(yaml: &str) -> Result<String, String> {
    run(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            &format!("--field-manager={FIELD_MANAGER}"),
            "-f",
            "-",
        ],
        Some(yaml),
    )
}

/// The label selecting every object of `app`.
fn selector(app: &str) -> String {
    format!("app.kubernetes.io/part-of={app},app.kubernetes.io/managed-by=svc")
}

/// `kubectl get` of the app's workloads, services, ingresses, pods and volumes.
pub fn status(app: &str, namespace: &str) -> Result<String, String> {
    run(
        &[
            "get",
            "deployments,statefulsets,daemonsets,services,ingresses,pods,persistentvolumeclaims",
            "-n",
            namespace,
            "-l",
            &selector(app),
            "-o",
            "wide",
        ],
        None,
    )
}

/// Delete every object of the app (namespaced and cluster-scoped; volumes too).
pub fn destroy(app: &str, namespace: &str) -> Result<String, String> {
    let mut out = run(
        &[
            "delete",
            "deployments,statefulsets,daemonsets,services,ingresses,configmaps,secrets,\
             serviceaccounts,persistentvolumeclaims",
            "-n",
            namespace,
            "-l",
            &selector(app),
            "--ignore-not-found",
        ],
        None,
    )?;
    out.push_str(&run(
        &[
            "delete",
            "clusterroles,clusterrolebindings,ingressclasses",
            "-l",
            &selector(app),
            "--ignore-not-found",
        ],
        None,
    )?);
    Ok(out)
}
