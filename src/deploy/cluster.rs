//! Talking to a cluster through the `kube` crate: server-side apply of the plan's objects,
//! label-selected lists for `svc scale status`, label-selected deletes for `destroy`.
//! Why `kube`, the static kind table and the runtime: ARCHITECTURE.md "Deploy".
//!
//! [`Cluster::connect`] loads the kubeconfig (`KUBECONFIG`, else `~/.kube/config`, its
//! current context; else the pod's service account when running in a cluster), makes a
//! current-thread tokio runtime and checks that the API server answers. Every request is
//! bounded by `[scale.kubernetes] request_timeout_seconds`. Every failure is one line for
//! the operator (`Err(String)`), never a panic nor a debug dump.

use super::manifests::{Object, Plan, Tier};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::config::KubeConfigOptions;
use kube::{Client, Config};
use serde_json::{Value as Json, json};
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

/// The longest server message repeated in an error line (a proxy's HTML page can be long).
const MAX_MESSAGE: usize = 500;

/// The field manager of our server-side applies.
pub const FIELD_MANAGER: &str = "svc";

/// One kind of object svc applies, lists or deletes. Order of [`KINDS`] = apply order
/// (what others refer to first); deletes go the other way.
struct Kind {
    api_version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    /// Applied or deleted by svc (a Pod is only listed: its workload owns it).
    managed: bool,
}

const fn kind(
    api_version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    managed: bool,
) -> Kind {
    Kind {
        api_version,
        kind,
        plural,
        namespaced,
        managed,
    }
}

/// Every kind `manifests` emits (a unit test checks it with every switch on), plus the
/// ones `status` shows. Known statically: no discovery round trip before each command.
const KINDS: &[Kind] = &[
    kind("v1", "Namespace", "namespaces", false, true),
    kind("v1", "ServiceAccount", "serviceaccounts", true, true),
    kind(RBAC, "ClusterRole", "clusterroles", false, true),
    kind(
        RBAC,
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        true,
    ),
    kind("v1", "Secret", "secrets", true, true),
    kind("v1", "ConfigMap", "configmaps", true, true),
    kind(
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        true,
    ),
    kind("v1", "Service", "services", true, true),
    kind("apps/v1", "StatefulSet", "statefulsets", true, true),
    kind("apps/v1", "Deployment", "deployments", true, true),
    kind("apps/v1", "DaemonSet", "daemonsets", true, true),
    kind("v1", "Pod", "pods", true, false),
    kind(NETWORKING, "IngressClass", "ingressclasses", false, true),
    kind(NETWORKING, "Ingress", "ingresses", true, true),
];
const RBAC: &str = "rbac.authorization.k8s.io/v1";
const NETWORKING: &str = "networking.k8s.io/v1";

fn find_kind(api_version: &str, kind: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.api_version == api_version && k.kind == kind)
}

impl Kind {
    fn resource(&self) -> ApiResource {
        let (group, version) = self
            .api_version
            .split_once('/')
            .unwrap_or(("", self.api_version));
        ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: self.api_version.into(),
            kind: self.kind.into(),
            plural: self.plural.into(),
        }
    }

    /// Position in the apply order.
    fn rank(&self) -> usize {
        KINDS
            .iter()
            .position(|k| std::ptr::eq(k, self))
            .unwrap_or(KINDS.len())
    }
}

/// The label selecting every object of `app`.
pub fn selector(app: &str) -> String {
    format!("app.kubernetes.io/part-of={app},app.kubernetes.io/managed-by=svc")
}

/// Where the cluster's configuration comes from.
enum Source {
    /// `KUBECONFIG` (one or more files) or `~/.kube/config`: its current context.
    Kubeconfig(String),
    /// The pod's service account (`KUBERNETES_SERVICE_HOST` and its token).
    InCluster,
}

fn source() -> Result<Source, String> {
    if let Ok(v) = std::env::var("KUBECONFIG")
        && !v.trim().is_empty()
    {
        return if std::env::split_paths(&v).any(|p| p.is_file()) {
            Ok(Source::Kubeconfig(v))
        } else {
            Err(format!(
                "no Kubernetes cluster is configured: KUBECONFIG names no readable file ({v})"
            ))
        };
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match home.map(|h| h.join(".kube/config")) {
        Some(p) if p.is_file() => Ok(Source::Kubeconfig(p.display().to_string())),
        _ if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() => Ok(Source::InCluster),
        _ => Err(
            "no Kubernetes cluster is configured: set KUBECONFIG or create \
                  ~/.kube/config (use --dry-run to see the manifests without a cluster)"
                .into(),
        ),
    }
}

/// An error and its causes on one line, each cause once.
fn one_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = e.source();
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a request was doing, for its error message.
enum Action<'a> {
    Reach,
    Read(&'a str, &'a str),
    Apply(&'a str, &'a str),
    List(&'a str),
    Delete(&'a str, &'a str),
}

impl Action<'_> {
    fn describe(&self) -> String {
        match self {
            Action::Reach => "reading the server version".into(),
            Action::Read(kind, name) => format!("reading {kind}/{name}"),
            Action::Apply(kind, name) => format!("applying {kind}/{name}"),
            Action::List(kind) => format!("listing {kind} objects"),
            Action::Delete(kind, name) => format!("deleting {kind}/{name}"),
        }
    }
}

/// A connected cluster: the client and the runtime its calls run on.
pub struct Cluster {
    runtime: tokio::runtime::Runtime,
    client: Client,
    /// The API server's URL, for messages.
    server: String,
    timeout: Duration,
}

impl Cluster {
    /// Load the configuration and check that the API server answers within `timeout`.
    pub fn connect(timeout: Duration) -> Result<Cluster, String> {
        let source = source()?;
        // The binary is synchronous here: this command's calls run one at a time on a
        // runtime of its own (the client's connection pool lives on it too).
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the Kubernetes client's runtime: {e}"))?;
        let mut config = match &source {
            Source::Kubeconfig(files) => runtime
                .block_on(Config::from_kubeconfig(&KubeConfigOptions::default()))
                .map_err(|e| format!("cannot use the kubeconfig {files}: {}", one_line(&e)))?,
            Source::InCluster => Config::incluster().map_err(|e| {
                format!(
                    "cannot use this pod's service account to reach the cluster: {}",
                    one_line(&e)
                )
            })?,
        };
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        config.write_timeout = Some(timeout);
        // Each request is bounded by `timeout` as a whole, retries included (below).
        let server = config.cluster_url.to_string();
        let client = runtime
            .block_on(async { Client::try_from(config) })
            .map_err(|e| {
                format!(
                    "cannot make a client for the Kubernetes cluster at {server}: {}",
                    one_line(&e)
                )
            })?;
        let cluster = Cluster {
            runtime,
            client,
            server,
            timeout,
        };
        let client = cluster.client.clone();
        cluster.call(
            &Action::Reach,
            async move { client.apiserver_version().await },
        )?;
        Ok(cluster)
    }

    /// Run one request on the runtime, bounded by the timeout; a failure as one line.
    fn call<T>(
        &self,
        action: &Action<'_>,
        request: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, String> {
        let outcome = self
            .runtime
            .block_on(async { tokio::time::timeout(self.timeout, request).await });
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(self.explain(action, &e)),
            Err(_) => Err(format!(
                "the Kubernetes cluster at {} did not answer within {} s while {} \
                 ([scale.kubernetes] request_timeout_seconds)",
                self.server,
                self.timeout.as_secs(),
                action.describe()
            )),
        }
    }

    fn explain(&self, action: &Action<'_>, error: &kube::Error) -> String {
        let server = &self.server;
        let status = match error {
            kube::Error::Api(status) => status,
            kube::Error::Service(e) => {
                return format!(
                    "cannot reach the Kubernetes cluster at {server}: {}",
                    one_line(e.as_ref())
                );
            }
            kube::Error::HyperError(e) => {
                return format!(
                    "cannot reach the Kubernetes cluster at {server}: {}",
                    one_line(e)
                );
            }
            kube::Error::Auth(e) => {
                return format!(
                    "cannot authenticate to the Kubernetes cluster at {server}: {}",
                    one_line(e)
                );
            }
            other => {
                return format!(
                    "the Kubernetes cluster at {server} failed while {}: {}",
                    action.describe(),
                    one_line(other)
                );
            }
        };
        let mut message = status
            .message
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if message.len() > MAX_MESSAGE {
            let mut end = MAX_MESSAGE;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
            message.push_str("...");
        }
        // A Kubernetes reason is one CamelCase word; kube's own stand-in for a body
        // that was not a `Status` ("Failed to parse error data") is left out.
        let reason = if status.reason.is_empty() || status.reason.contains(' ') {
            String::new()
        } else {
            format!(" {}", status.reason)
        };
        match (status.code, action) {
            (401, _) => format!(
                "the Kubernetes cluster at {server} refused the credentials of the \
                 kubeconfig's current user (401{reason}): {message}"
            ),
            (403, _) => format!(
                "the Kubernetes cluster at {server} forbids {} (403{reason}): {message}",
                action.describe()
            ),
            (code, Action::Apply(kind, name)) => {
                format!("the cluster rejected {kind}/{name} ({code}{reason}): {message}")
            }
            (code, _) => format!(
                "the Kubernetes cluster at {server} answered {code}{reason} while {}: \
                 {message}",
                action.describe()
            ),
        }
    }

    fn api(&self, kind: &Kind, namespace: &str) -> Api<DynamicObject> {
        let resource = kind.resource();
        if kind.namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &resource)
        } else {
            Api::all_with(self.client.clone(), &resource)
        }
    }

    /// Whether an object of a kind of [`KINDS`] exists.
    pub fn exists(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: &str,
    ) -> Result<bool, String> {
        let k = find_kind(api_version, kind)
            .ok_or_else(|| format!("svc does not know the kind {api_version}/{kind}"))?;
        let api = self.api(k, namespace);
        let found = self.call(&Action::Read(kind, name), api.get_opt(name))?;
        Ok(found.is_some())
    }

    /// Server-side apply (field manager `svc`, conflicts forced) of the plan's objects
    /// of `tiers`, in [`KINDS`] order; the plan's namespace is created first when
    /// missing. One line per object applied.
    pub fn apply(&self, plan: &Plan, tiers: &[Tier]) -> Result<Vec<String>, String> {
        let mut objects = Vec::new();
        for o in plan.objects.iter().filter(|o| tiers.contains(&o.tier)) {
            let api_version = o.body["apiVersion"].as_str().unwrap_or_default();
            let k = find_kind(api_version, &o.kind).ok_or_else(|| {
                format!(
                    "svc does not know how to apply {api_version}/{} ({}/{})",
                    o.kind, o.kind, o.name
                )
            })?;
            objects.push((k, o));
        }
        objects.sort_by_key(|(k, _)| k.rank());
        let mut done = Vec::new();
        let namespaced = objects.iter().any(|(k, _)| k.namespaced);
        let creates_namespace = objects
            .iter()
            .any(|(_, o)| o.kind == "Namespace" && o.name == plan.namespace);
        // `default` always exists (the API server refuses to delete it).
        if namespaced
            && !creates_namespace
            && plan.namespace != "default"
            && !self.exists("v1", "Namespace", &plan.namespace, "")?
        {
            let body = plan
                .objects
                .iter()
                .find(|o| o.kind == "Namespace" && o.name == plan.namespace)
                .map(|o| o.body.clone())
                .unwrap_or_else(|| {
                    json!({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": plan.namespace}})
                });
            let ns = Object {
                kind: "Namespace".into(),
                name: plan.namespace.clone(),
                namespace: None,
                tier: Tier::Platform,
                body,
            };
            done.push(self.apply_one(&KINDS[0], &ns)?);
        }
        for (k, o) in objects {
            done.push(self.apply_one(k, o)?);
        }
        Ok(done)
    }

    fn apply_one(&self, kind: &Kind, o: &Object) -> Result<String, String> {
        let object: DynamicObject = serde_json::from_value(o.body.clone())
            .map_err(|e| format!("{}/{} is not a Kubernetes object: {e}", o.kind, o.name))?;
        let namespace = o.namespace.as_deref().unwrap_or_default();
        let api = self.api(kind, namespace);
        let params = PatchParams::apply(FIELD_MANAGER).force();
        self.call(
            &Action::Apply(&o.kind, &o.name),
            api.patch(&o.name, &params, &Patch::Apply(&object)),
        )?;
        Ok(format!("{}/{} applied", o.kind, o.name))
    }

    /// The objects of `kind` that `selector` picks, in the namespace or cluster-wide.
    fn list(
        &self,
        kind: &Kind,
        namespace: &str,
        selector: &str,
    ) -> Result<Vec<DynamicObject>, String> {
        let api = self.api(kind, namespace);
        let params = ListParams::default().labels(selector);
        let list = self.call(&Action::List(kind.kind), api.list(&params))?;
        Ok(list.items)
    }

    /// The table of `svc scale status`: every object of `app` (kind, name, readiness or
    /// phase); empty when nothing is deployed.
    pub fn status(&self, app: &str, namespace: &str) -> Result<Vec<[String; 3]>, String> {
        let selector = selector(app);
        let mut rows = Vec::new();
        for kind in KINDS {
            for o in self.list(kind, namespace, &selector)? {
                let name = o.metadata.name.clone().unwrap_or_default();
                rows.push([kind.kind.to_string(), name, state(kind.kind, &o.data)]);
            }
        }
        Ok(rows)
    }

    /// Delete every object of `app` (the namespace itself is kept): the routes first,
    /// then the app's own objects, then the platform (workloads before their volumes,
    /// cluster-scoped objects last). One line per object deleted.
    pub fn destroy(&self, app: &str, namespace: &str) -> Result<Vec<String>, String> {
        let all = selector(app);
        let app_only = format!("{all},app.kubernetes.io/component=app");
        let order: Vec<&Kind> = KINDS
            .iter()
            .rev()
            .filter(|k| k.managed && k.kind != "Namespace")
            .collect();
        let routes = order.iter().filter(|k| k.kind == "Ingress");
        let app_objects = order.iter().filter(|k| k.namespaced);
        let mut done = Vec::new();
        let passes = routes
            .map(|k| (*k, all.as_str()))
            .chain(app_objects.map(|k| (*k, app_only.as_str())))
            .chain(order.iter().map(|k| (*k, all.as_str())));
        for (kind, selector) in passes {
            for o in self.list(kind, namespace, selector)? {
                let Some(name) = o.metadata.name.as_deref() else {
                    continue;
                };
                // Already going (a finalizer holds it): deleted by an earlier pass.
                if o.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                let api = self.api(kind, namespace);
                let deleted = self.call(&Action::Delete(kind.kind, name), async {
                    match api.delete(name, &DeleteParams::background()).await {
                        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(false),
                        Err(e) => Err(e),
                        Ok(_) => Ok(true),
                    }
                })?;
                if deleted {
                    done.push(format!("{}/{name} deleted", kind.kind));
                }
            }
        }
        Ok(done)
    }
}

/// The status column: ready/desired replicas of a workload, a phase, a service's type.
fn state(kind: &str, data: &Json) -> String {
    let int = |v: &Json| v.as_i64().unwrap_or(0);
    let status = &data["status"];
    match kind {
        "Deployment" | "StatefulSet" => format!(
            "{}/{} ready",
            int(&status["readyReplicas"]),
            data["spec"]["replicas"].as_i64().unwrap_or(1)
        ),
        "DaemonSet" => format!(
            "{}/{} ready",
            int(&status["numberReady"]),
            int(&status["desiredNumberScheduled"])
        ),
        "Pod" | "PersistentVolumeClaim" | "Namespace" => {
            status["phase"].as_str().unwrap_or("Pending").to_string()
        }
        "Service" => {
            let spec = &data["spec"];
            let kind = spec["type"].as_str().unwrap_or("ClusterIP");
            let ports: Vec<String> = spec["ports"]
                .as_array()
                .map(|ports| {
                    ports
                        .iter()
                        .filter_map(|p| p["nodePort"].as_i64().map(|n| n.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            if ports.is_empty() {
                kind.to_string()
            } else {
                format!("{kind} {}", ports.join(","))
            }
        }
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::deploy::manifests::{Inputs, plan};

    /// Every object a plan can hold (every switch on) has a row in the kind table.
    #[test]
    fn the_kind_table_covers_every_emitted_kind() {
        let dir = std::env::temp_dir().join(format!("svc-kinds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let entry = dir.join("shop.svc");
        std::fs::write(&entry, "def f() { return 1; }\n").expect("entry");
        let mut config = Config::load_with_env(&dir, None, &|_| None).expect("config");
        let k = &mut config.kubernetes;
        k.cache_dashboard = true;
        k.docdb_dashboard = true;
        k.logs_enabled = true;
        k.namespace = "shop-ns".into();
        k.domain = Some("shop.example.com".into());
        config.jwt.secret = Some("s".into());
        let plan = plan(&Inputs {
            entry: &entry,
            app_dir: &dir,
            config: &config,
            tls: true,
        })
        .expect("plan");
        let _ = std::fs::remove_dir_all(&dir);
        for o in &plan.objects {
            let api_version = o.body["apiVersion"].as_str().unwrap_or_default();
            let k = find_kind(api_version, &o.kind)
                .unwrap_or_else(|| panic!("{api_version}/{} is not in KINDS", o.kind));
            assert!(k.managed, "{}", o.kind);
            assert_eq!(k.namespaced, o.namespace.is_some(), "{}/{}", o.kind, o.name);
        }
    }

    #[test]
    fn resources_split_group_and_version() {
        let r = find_kind("apps/v1", "Deployment").expect("row").resource();
        assert_eq!((r.group.as_str(), r.version.as_str()), ("apps", "v1"));
        let r = find_kind("v1", "Secret").expect("row").resource();
        assert_eq!((r.group.as_str(), r.version.as_str()), ("", "v1"));
    }

    #[test]
    fn the_status_column() {
        let d = json!({"spec": {"replicas": 2}, "status": {"readyReplicas": 1}});
        assert_eq!(state("Deployment", &d), "1/2 ready");
        assert_eq!(
            state("Pod", &json!({"status": {"phase": "Running"}})),
            "Running"
        );
        let s = json!({"spec": {"type": "NodePort", "ports": [{"nodePort": 30080}]}});
        assert_eq!(state("Service", &s), "NodePort 30080");
        assert_eq!(state("ConfigMap", &json!({})), "-");
    }
}
