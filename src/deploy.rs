//! The deploy target (`svc start ENTRY --scale`, `svc scale status|destroy ENTRY`): spec
//! "Deployment provisioning", decisions.md "Deploy". Only the `orchestrator` target
//! (Kubernetes) is built; the others, `--experimental` and `--client` are refused with
//! exit 2.
//!
//! `manifests` builds the objects from the configuration (pure data), `yaml` writes them
//! as a YAML stream, `cluster` applies, shows and deletes them through the `kube` client
//! (on a current-thread runtime of its own: this path is synchronous). The first deploy
//! (no ingress controller Deployment yet) applies everything; later ones the app's objects and routes only; `--enable-tls`
//! against a live deployment re-applies the routes with the issuer annotation.

pub mod cluster;
pub mod manifests;
pub mod yaml;

use crate::config::Config;
use anyhow::Result;
use manifests::{Inputs, Plan, Tier};
use std::io::{BufRead as _, Write as _};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// `--target`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// Kubernetes.
    #[default]
    Orchestrator,
    #[value(name = "cloud_a", alias = "cloud-a")]
    CloudA,
    #[value(name = "cloud_b", alias = "cloud-b")]
    CloudB,
}

/// What `svc start --scale` was asked to do.
pub struct DeployRequest<'a> {
    pub entry: &'a Path,
    pub profile: Option<&'a str>,
    pub target: Target,
    pub dry_run: bool,
    pub show_yaml: bool,
    pub enable_tls: bool,
    pub experimental: bool,
    pub client: Option<&'a str>,
}

fn fail(message: &str, code: u8) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "error: {message}");
    ExitCode::from(code)
}

/// Refuse what this build does not support (exit 2).
fn unsupported(target: Target, experimental: bool, client: Option<&str>) -> Option<ExitCode> {
    let what = match (target, experimental, client) {
        (Target::CloudA, _, _) => "--target cloud_a",
        (Target::CloudB, _, _) => "--target cloud_b",
        (_, true, _) => "--experimental",
        (_, _, Some(_)) => "--client",
        _ => return None,
    };
    Some(fail(
        &format!(
            "{what} is not supported in this build (the deploy target is `orchestrator`, \
             Kubernetes)"
        ),
        2,
    ))
}

fn app_dir(entry: &Path) -> &Path {
    entry
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn load_plan(entry: &Path, profile: Option<&str>, tls: bool) -> Result<Result<Plan, String>> {
    if !entry.is_file() {
        return Ok(Err(format!("cannot read {}: not a file", entry.display())));
    }
    let dir = app_dir(entry);
    let config = Config::load(dir, profile)?;
    Ok(manifests::plan(&Inputs {
        entry,
        app_dir: dir,
        config: &config,
        tls,
    }))
}

/// The object table of `--dry-run`.
fn table(plan: &Plan) -> String {
    let rows: Vec<[String; 3]> = plan
        .objects
        .iter()
        .map(|o| {
            [
                o.kind.clone(),
                o.name.clone(),
                o.namespace.clone().unwrap_or_else(|| "(cluster)".into()),
            ]
        })
        .collect();
    columns(
        &["KIND".to_string(), "NAME".into(), "NAMESPACE".into()],
        &rows,
    )
}

/// Rows under a header, in aligned columns.
fn columns(header: &[String; 3], rows: &[[String; 3]]) -> String {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].len())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1) = (width(0), width(1));
    let mut out = String::new();
    for r in std::iter::once(header).chain(rows) {
        out.push_str(&format!("{:<w0$}  {:<w1$}  {}\n", r[0], r[1], r[2]));
    }
    out
}

fn stream(plan: &Plan, tiers: &[Tier]) -> String {
    let docs: Vec<serde_json::Value> = plan
        .objects
        .iter()
        .filter(|o| tiers.contains(&o.tier))
        .map(|o| o.body.clone())
        .collect();
    yaml::stream(&docs)
}

/// `svc start ENTRY --scale [...]`.
pub fn start(req: &DeployRequest<'_>) -> Result<ExitCode> {
    if let Some(code) = unsupported(req.target, req.experimental, req.client) {
        return Ok(code);
    }
    if req.show_yaml && !req.dry_run {
        return Ok(fail("--show-yaml works with --dry-run only", 2));
    }
    let plan = match load_plan(req.entry, req.profile, req.enable_tls)? {
        Ok(plan) => plan,
        Err(message) => return Ok(fail(&message, 1)),
    };
    for w in &plan.warnings {
        let _ = writeln!(std::io::stderr(), "warning: {w}");
    }
    if req.dry_run {
        let mut out = std::io::stdout().lock();
        if req.show_yaml {
            let _ =
                out.write_all(stream(&plan, &[Tier::Platform, Tier::App, Tier::Routes]).as_bytes());
        } else {
            let _ = out.write_all(table(&plan).as_bytes());
            let _ = writeln!(
                out,
                "{} objects for app `{}` in namespace `{}`; nothing was applied (--dry-run)",
                plan.objects.len(),
                plan.app,
                plan.namespace
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let cluster = match connect(&plan) {
        Ok(cluster) => cluster,
        Err(message) => return Ok(fail(&message, 1)),
    };
    let first = match provisioned(&cluster, &plan) {
        Ok(done) => !done,
        Err(message) => return Ok(fail(&message, 1)),
    };
    let tiers: &[Tier] = if first {
        &[Tier::Platform, Tier::App, Tier::Routes]
    } else {
        &[Tier::App, Tier::Routes]
    };
    match cluster.apply(&plan, tiers) {
        Ok(lines) => {
            say_lines(&lines);
            crate::server::say(&format!(
                "svc: {} `{}` in namespace `{}`{}\n",
                if first {
                    "provisioned and deployed"
                } else {
                    "updated the app"
                },
                plan.app,
                plan.namespace,
                if req.enable_tls {
                    " (TLS through the certificate issuer)"
                } else {
                    ""
                }
            ));
            Ok(ExitCode::SUCCESS)
        }
        Err(message) => Ok(fail(&message, 1)),
    }
}

/// The cluster of the kubeconfig, with the plan's request timeout.
fn connect(plan: &Plan) -> Result<cluster::Cluster, String> {
    cluster::Cluster::connect(Duration::from_secs(plan.request_timeout_seconds))
}

fn say_lines(lines: &[String]) {
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    crate::server::say(&text);
}

/// Whether the platform objects of a first deploy are there already: the platform's
/// Deployment (the ingress controller).
fn provisioned(cluster: &cluster::Cluster, plan: &Plan) -> Result<bool, String> {
    let marker = plan
        .objects
        .iter()
        .find(|o| o.tier == Tier::Platform && o.kind == "Deployment")
        .map(|o| o.name.clone())
        .unwrap_or_else(|| format!("{}-ingress-controller", plan.app));
    cluster.exists("apps/v1", "Deployment", &marker, &plan.namespace)
}

/// `svc scale status ENTRY`.
pub fn status(entry: &Path, target: Target) -> Result<ExitCode> {
    if let Some(code) = unsupported(target, false, None) {
        return Ok(code);
    }
    let plan = match load_plan(entry, None, false)? {
        Ok(plan) => plan,
        Err(message) => return Ok(fail(&message, 1)),
    };
    let cluster = match connect(&plan) {
        Ok(cluster) => cluster,
        Err(message) => return Ok(fail(&message, 1)),
    };
    match cluster.status(&plan.app, &plan.namespace) {
        Ok(rows) if rows.is_empty() => {
            crate::server::say(&format!(
                "no deployment of `{}` in namespace `{}`\n",
                plan.app, plan.namespace
            ));
            Ok(ExitCode::SUCCESS)
        }
        Ok(rows) => {
            let header = ["KIND".to_string(), "NAME".into(), "STATUS".into()];
            let mut text = columns(&header, &rows);
            text.push_str(&format!(
                "{} objects of `{}` in namespace `{}`\n",
                rows.len(),
                plan.app,
                plan.namespace
            ));
            crate::server::say(&text);
            Ok(ExitCode::SUCCESS)
        }
        Err(message) => Ok(fail(&message, 1)),
    }
}

/// `svc scale destroy ENTRY [--yes]`: asks first unless `yes`.
pub fn destroy(entry: &Path, target: Target, yes: bool) -> Result<ExitCode> {
    if let Some(code) = unsupported(target, false, None) {
        return Ok(code);
    }
    let plan = match load_plan(entry, None, false)? {
        Ok(plan) => plan,
        Err(message) => return Ok(fail(&message, 1)),
    };
    let cluster = match connect(&plan) {
        Ok(cluster) => cluster,
        Err(message) => return Ok(fail(&message, 1)),
    };
    if !yes {
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "This deletes every object of `{}` in namespace `{}`, its database and cache \
             volumes included. Type the app name to confirm: ",
            plan.app, plan.namespace
        );
        let _ = err.flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if answer.trim() != plan.app {
            return Ok(fail("not confirmed; nothing was deleted", 1));
        }
    }
    match cluster.destroy(&plan.app, &plan.namespace) {
        Ok(lines) => {
            say_lines(&lines);
            crate::server::say(&format!(
                "svc: deleted {} objects of `{}` in namespace `{}` (the namespace itself \
                 is kept)\n",
                lines.len(),
                plan.app,
                plan.namespace
            ));
            Ok(ExitCode::SUCCESS)
        }
        Err(message) => Ok(fail(&message, 1)),
    }
}
