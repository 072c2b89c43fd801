//! The Kubernetes objects of one app (spec "Deployment provisioning", decisions.md
//! "Deploy"), built as JSON values from `[scale.kubernetes]`, `[scale.database]` and the
//! app directory. Pure data: nothing here talks to a cluster.
//!
//! Invariants: no secret value is ever written into a pod spec (pods read the
//! `{app}-docdb-secret`, `{app}-cache-secret` and other Secrets by `secretKeyRef` or a
//! secret volume); every object carries `app.kubernetes.io/part-of: {app}` and
//! `app.kubernetes.io/managed-by: svc`, which `svc scale status`/`destroy` select on.

use crate::config::{Config, KubernetesConfig};
use serde_json::{Map, Value as Json, json};
use std::path::Path;

/// The app container's port.
const APP_PORT: u16 = 8000;
/// The app's code ConfigMap holds at most this many bytes (a ConfigMap holds 1 MiB).
pub const MAX_CODE_BYTES: usize = 900 * 1024;
/// Longest `{app}` name, so every derived name stays a DNS-1035 label (63 characters).
const MAX_APP_NAME: usize = 30;

/// When an object is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Provisioned by the first deploy only (databases, ingress controller, dashboards).
    Platform,
    /// Applied by every deploy (the app's Deployment, Service, ConfigMaps).
    App,
    /// The Ingress routes: every deploy, and `--enable-tls` on its own.
    Routes,
}

/// One object to apply.
#[derive(Clone, Debug)]
pub struct Object {
    pub kind: String,
    pub name: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    pub tier: Tier,
    pub body: Json,
}

/// Everything one app deploys.
#[derive(Debug)]
pub struct Plan {
    pub app: String,
    pub namespace: String,
    pub objects: Vec<Object>,
    /// Things the operator should know (weak default passwords, a missing JWT secret).
    pub warnings: Vec<String>,
    /// `[scale.kubernetes] request_timeout_seconds`: the bound of each cluster request.
    pub request_timeout_seconds: u64,
}

/// `{app}`: the entry file's stem, lower-cased, made a DNS-1035 label (letters, digits
/// and `-`, starting with a letter), at most 30 characters.
pub fn app_name(entry: &Path) -> Result<String, String> {
    let stem = entry
        .file_stem()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut name = String::new();
    for c in stem.chars() {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if !(c == '-' && (name.is_empty() || name.ends_with('-'))) {
            name.push(c);
        }
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "app-");
    }
    name.truncate(MAX_APP_NAME);
    let name = name.trim_end_matches('-').to_string();
    if name.is_empty() {
        return Err(format!(
            "cannot make a Kubernetes name from the entry file {}",
            entry.display()
        ));
    }
    Ok(name)
}

/// What a plan is built from.
pub struct Inputs<'a> {
    pub entry: &'a Path,
    pub app_dir: &'a Path,
    pub config: &'a Config,
    /// `--enable-tls`: the certificate issuer annotation and a TLS section on the Ingress.
    pub tls: bool,
}

/// Build the plan; `Err` is a message for the operator (exit 1).
pub fn plan(inputs: &Inputs<'_>) -> Result<Plan, String> {
    let k = &inputs.config.kubernetes;
    let db = &inputs.config.database;
    let app = app_name(inputs.entry)?;
    if !k.docdb_enabled && db.docdb_uri.is_none() {
        return Err(
            "[scale.kubernetes] docdb_enabled = false needs an external document \
                    database: set [scale.database] docdb_uri or DOCDB_URI"
                .into(),
        );
    }
    if !k.cache_enabled && db.cache_url.is_none() {
        return Err(
            "[scale.kubernetes] cache_enabled = false needs an external cache store: \
                    set [scale.database] cache_url or CACHE_URL"
                .into(),
        );
    }
    if inputs.tls && k.domain.is_none() {
        return Err(
            "--enable-tls needs a host name: set [scale.kubernetes] domain (and point \
                    its DNS record at the cluster's load balancer first)"
                .into(),
        );
    }
    let mut b = Builder {
        app: app.clone(),
        ns: k.namespace.clone(),
        objects: Vec::new(),
    };
    let mut warnings = Vec::new();
    let weak = [
        (
            "docdb_root_password",
            &k.docdb_root_password,
            k.docdb_enabled,
        ),
        ("cache_password", &k.cache_password, k.cache_enabled),
        (
            "cache_dashboard_password",
            &k.cache_dashboard_password,
            k.cache_dashboard,
        ),
        (
            "docdb_dashboard_password",
            &k.docdb_dashboard_password,
            k.docdb_dashboard || k.logs_enabled,
        ),
    ];
    for (key, value, used) in weak {
        if used && value.as_str() == crate::config::DEV_PASSWORD {
            warnings.push(format!(
                "[scale.kubernetes] {key} is the weak development default: change it before \
                 using a shared cluster"
            ));
        }
    }
    if inputs.config.jwt.secret.is_none() && k.replicas > 1 {
        warnings.push(
            "no JWT secret is configured ([scale.jwt] secret or JWT_SECRET): each replica \
             generates its own, so a token works on one replica only"
                .into(),
        );
    }

    if k.namespace != "default" {
        b.cluster(
            Tier::Platform,
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": k.namespace, "labels": b.labels("namespace")}}),
        );
    }
    b.app_objects(inputs)?;
    if k.docdb_enabled {
        b.docdb(k);
    }
    if k.cache_enabled {
        b.cache(k);
    }
    b.secrets(inputs.config, &app);
    b.ingress_controller(k);
    b.routes(k, inputs.tls);
    if k.cache_dashboard {
        b.cache_dashboard(k);
    }
    if k.docdb_dashboard {
        b.docdb_dashboard(k);
    }
    if k.logs_enabled {
        b.logs(k);
    }
    Ok(Plan {
        app,
        namespace: k.namespace.clone(),
        objects: b.objects,
        warnings,
        request_timeout_seconds: k.request_timeout_seconds,
    })
}

struct Builder {
    app: String,
    ns: String,
    objects: Vec<Object>,
}

fn env_secret(name: &str, secret: &str, key: &str) -> Json {
    json!({"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
}

impl Builder {
    fn name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.app)
    }

    fn labels(&self, component: &str) -> Json {
        json!({
            "app.kubernetes.io/name": if component == "app" { self.app.clone() } else { self.name(component) },
            "app.kubernetes.io/component": component,
            "app.kubernetes.io/part-of": self.app,
            "app.kubernetes.io/managed-by": "svc",
        })
    }

    fn selector(&self, component: &str) -> Json {
        json!({"app.kubernetes.io/part-of": self.app, "app.kubernetes.io/component": component})
    }

    fn meta(&self, name: &str, component: &str) -> Json {
        json!({"name": name, "namespace": self.ns, "labels": self.labels(component)})
    }

    fn push(&mut self, tier: Tier, body: Json) {
        let kind = body["kind"].as_str().unwrap_or_default().to_string();
        let name = body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.objects.push(Object {
            kind,
            name,
            namespace: Some(self.ns.clone()),
            tier,
            body,
        });
    }

    fn cluster(&mut self, tier: Tier, body: Json) {
        self.push(tier, body);
        if let Some(last) = self.objects.last_mut() {
            last.namespace = None;
        }
    }

    fn service(&mut self, tier: Tier, component: &str, name: &str, port: u16, headless: bool) {
        let mut spec = json!({
            "selector": self.selector(component),
            "ports": [{"name": "main", "port": port, "targetPort": port, "protocol": "TCP"}],
        });
        if headless {
            spec["clusterIP"] = json!("None");
        }
        let body = json!({"apiVersion": "v1", "kind": "Service",
                          "metadata": self.meta(name, component), "spec": spec});
        self.push(tier, body);
    }

    /// A Deployment of one container.
    fn deployment(&mut self, tier: Tier, component: &str, name: &str, replicas: u32, pod: Json) {
        let body = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": self.meta(name, component),
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": self.selector(component)},
                "template": {"metadata": {"labels": self.labels(component)}, "spec": pod},
            },
        });
        self.push(tier, body);
    }

    /// A StatefulSet of one replica with one persistent volume claim template `data`.
    fn stateful_set(&mut self, component: &str, storage: &str, pod: Json) {
        let name = self.name(component);
        let body = json!({
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": self.meta(&name, component),
            "spec": {
                "serviceName": name,
                "replicas": 1,
                "selector": {"matchLabels": self.selector(component)},
                "template": {"metadata": {"labels": self.labels(component)}, "spec": pod},
                "volumeClaimTemplates": [{
                    "metadata": {"name": "data", "labels": self.labels(component)},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": storage}},
                    },
                }],
            },
        });
        self.push(Tier::Platform, body);
    }

    /// The app: its settings and code ConfigMaps, Deployment and Service.
    fn app_objects(&mut self, inputs: &Inputs<'_>) -> Result<(), String> {
        let k = &inputs.config.kubernetes;
        let settings = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": self.meta(&self.name("config"), "app"),
            "data": {
                "SVC_SERVER_HOST": "0.0.0.0",
                "SVC_SERVER_PORT": APP_PORT.to_string(),
                "SVC_SHELF_DB_PATH": "/data/anchor_store.db",
            },
        });
        self.push(Tier::App, settings);
        let code = code_files(inputs.app_dir)?;
        let body = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": self.meta(&self.name("code"), "app"),
            "data": code,
        });
        self.push(Tier::App, body);
        let entry = inputs
            .entry
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "main.svc".into());
        let mut env = vec![
            env_secret("DOCDB_URI", &self.name("docdb-secret"), "uri"),
            env_secret("CACHE_URL", &self.name("cache-secret"), "url"),
        ];
        if inputs.config.jwt.secret.is_some() {
            env.push(env_secret(
                "JWT_SECRET",
                &self.name("app-secret"),
                "jwt_secret",
            ));
        }
        let probe = |path: &str| {
            json!({"httpGet": {"path": path, "port": APP_PORT}, "periodSeconds": 10,
                   "timeoutSeconds": 3})
        };
        let pod = json!({
            "containers": [{
                "name": "app",
                "image": k.image,
                "command": ["svc", "start", format!("/app/{entry}"), "--host", "0.0.0.0",
                            "--port", APP_PORT.to_string()],
                "ports": [{"name": "http", "containerPort": APP_PORT}],
                "envFrom": [{"configMapRef": {"name": self.name("config")}}],
                "env": env,
                "readinessProbe": probe("/healthz/ready"),
                "livenessProbe": probe("/healthz/live"),
                "volumeMounts": [
                    {"name": "code", "mountPath": "/app", "readOnly": true},
                    {"name": "data", "mountPath": "/data"},
                ],
            }],
            "volumes": [
                {"name": "code", "configMap": {"name": self.name("code")}},
                {"name": "data", "emptyDir": {}},
            ],
        });
        let app = self.app.clone();
        self.deployment(Tier::App, "app", &app, k.replicas, pod);
        self.service(Tier::App, "app", &app, APP_PORT, false);
        Ok(())
    }

    /// `{app}-docdb-secret`, `{app}-cache-secret` (provisioned or external URIs) and
    /// `{app}-app-secret` (the JWT secret, when configured).
    fn secrets(&mut self, config: &Config, app: &str) {
        let k = &config.kubernetes;
        let db = &config.database;
        let docdb_uri = db.docdb_uri.clone().unwrap_or_else(|| {
            format!(
                "mongodb://{}:{}@{app}-docdb:27017/?authSource=admin",
                percent(&k.docdb_root_username),
                percent(&k.docdb_root_password)
            )
        });
        let cache_url = db.cache_url.clone().unwrap_or_else(|| {
            format!(
                "redis://{}:{}@{app}-cache:6379/0",
                percent(&k.cache_username),
                percent(&k.cache_password)
            )
        });
        let secret = |b: &Builder, name: String, component: &str, data: Json| {
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                   "metadata": b.meta(&name, component), "stringData": data})
        };
        let docdb = secret(
            self,
            self.name("docdb-secret"),
            "docdb",
            json!({"username": k.docdb_root_username, "password": k.docdb_root_password,
                   "uri": docdb_uri}),
        );
        self.push(Tier::Platform, docdb);
        let cache = secret(
            self,
            self.name("cache-secret"),
            "cache",
            json!({"username": k.cache_username, "password": k.cache_password,
                   "url": cache_url}),
        );
        self.push(Tier::Platform, cache);
        if let Some(jwt) = &config.jwt.secret {
            let app_secret = secret(
                self,
                self.name("app-secret"),
                "app",
                json!({"jwt_secret": jwt}),
            );
            self.push(Tier::App, app_secret);
        }
    }

    fn docdb(&mut self, k: &KubernetesConfig) {
        let secret = self.name("docdb-secret");
        let pod = json!({
            "containers": [{
                "name": "docdb",
                "image": k.docdb_image,
                "ports": [{"name": "mongo", "containerPort": 27017}],
                "env": [
                    env_secret("MONGO_INITDB_ROOT_USERNAME", &secret, "username"),
                    env_secret("MONGO_INITDB_ROOT_PASSWORD", &secret, "password"),
                ],
                "volumeMounts": [{"name": "data", "mountPath": "/data/db"}],
            }],
        });
        self.stateful_set("docdb", &k.docdb_storage, pod);
        let name = self.name("docdb");
        self.service(Tier::Platform, "docdb", &name, 27017, false);
    }

    fn cache(&mut self, k: &KubernetesConfig) {
        let secret = self.name("cache-secret");
        let pod = json!({
            "containers": [{
                "name": "cache",
                "image": k.cache_image,
                "args": ["--appendonly", "yes", "--dir", "/data",
                         "--requirepass", "$(CACHE_PASSWORD)",
                         "--user", "$(CACHE_USERNAME)", "on", ">$(CACHE_PASSWORD)",
                         "~*", "&*", "+@all"],
                "ports": [{"name": "redis", "containerPort": 6379}],
                "env": [
                    env_secret("CACHE_USERNAME", &secret, "username"),
                    env_secret("CACHE_PASSWORD", &secret, "password"),
                ],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }],
        });
        self.stateful_set("cache", &k.cache_storage, pod);
        let name = self.name("cache");
        self.service(Tier::Platform, "cache", &name, 6379, false);
    }

    /// The reverse-proxy ingress controller (ingress-nginx) of this app, exposed on one
    /// node port, with its IngressClass `{app}-nginx` and the RBAC it needs.
    fn ingress_controller(&mut self, k: &KubernetesConfig) {
        let name = self.name("ingress");
        let class = self.name("nginx");
        let component = "ingress";
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                             "metadata": self.meta(&name, component)});
        self.push(Tier::Platform, account);
        let read = ["get", "list", "watch"];
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name, "labels": self.labels(component)},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps", "endpoints", "nodes", "pods",
                                                   "secrets", "namespaces", "services"],
                 "verbs": read},
                {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": read},
                {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "ingressclasses"],
                 "verbs": read},
                {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses/status"],
                 "verbs": ["update"]},
                {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                 "verbs": ["get", "create", "update"]},
            ],
        });
        self.cluster(Tier::Platform, role);
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": self.labels(component)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": self.ns}],
        });
        self.cluster(Tier::Platform, binding);
        let controller = format!("svc.dev/{class}");
        let ingress_class = json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": {"name": class, "labels": self.labels(component)},
            "spec": {"controller": controller},
        });
        self.cluster(Tier::Platform, ingress_class);
        let pod = json!({
            "serviceAccountName": name,
            "containers": [{
                "name": "controller",
                "image": "registry.k8s.io/ingress-nginx/controller:v1.11.3",
                "args": ["/nginx-ingress-controller",
                         format!("--ingress-class={class}"),
                         format!("--controller-class={controller}"),
                         format!("--election-id={name}-leader"),
                         format!("--watch-namespace={}", self.ns)],
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "POD_NAMESPACE",
                     "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                ],
                "ports": [{"name": "http", "containerPort": 80}, {"name": "https", "containerPort": 443}],
                "securityContext": {"runAsUser": 101, "allowPrivilegeEscalation": true,
                                    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}},
            }],
        });
        let controller_name = self.name("ingress-controller");
        self.deployment(Tier::Platform, component, &controller_name, 1, pod);
        let service = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": self.meta(&name, component),
            "spec": {
                "type": "NodePort",
                "selector": self.selector(component),
                "ports": [{"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP",
                           "nodePort": k.node_port}],
            },
        });
        self.push(Tier::Platform, service);
    }

    fn ingress(
        &self,
        name: &str,
        component: &str,
        paths: Vec<Json>,
        annotations: Json,
        k: &KubernetesConfig,
        tls: bool,
    ) -> Json {
        let mut rule = json!({"http": {"paths": paths}});
        if let Some(host) = &k.domain {
            rule["host"] = json!(host);
        }
        let mut spec = json!({"ingressClassName": self.name("nginx"), "rules": [rule]});
        let mut annotations = annotations;
        if tls && let Some(host) = &k.domain {
            annotations["cert-manager.io/cluster-issuer"] = json!(k.tls_issuer);
            spec["tls"] = json!([{"hosts": [host], "secretName": self.name("tls")}]);
        }
        let mut meta = self.meta(name, component);
        if annotations.as_object().is_some_and(|a| !a.is_empty()) {
            meta["annotations"] = annotations;
        }
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta,
               "spec": spec})
    }

    fn path(&self, path: &str, kind: &str, service: &str, port: u16) -> Json {
        json!({"path": path, "pathType": kind,
               "backend": {"service": {"name": service, "port": {"number": port}}}})
    }

    /// The Ingress routing by path: `/` to the app, the dashboards beside it.
    fn routes(&mut self, k: &KubernetesConfig, tls: bool) {
        let mut paths = Vec::new();
        if k.docdb_dashboard {
            paths.push(self.path("/db-dashboard", "Prefix", &self.name("db-dashboard"), 8081));
        }
        if k.logs_enabled {
            paths.push(self.path(
                "/logs-dashboard",
                "Prefix",
                &self.name("logs-dashboard"),
                3000,
            ));
        }
        paths.push(self.path("/", "Prefix", &self.app, APP_PORT));
        let app = self.app.clone();
        let body = self.ingress(&app, "app", paths, json!({}), k, tls);
        self.push(Tier::Routes, body);
        if k.cache_dashboard {
            let name = self.name("cache-dashboard");
            let paths = vec![self.path("/cache-dashboard/", "Prefix", &name, 5540)];
            let auth = json!({
                "nginx.ingress.kubernetes.io/auth-type": "basic",
                "nginx.ingress.kubernetes.io/auth-secret": self.name("cache-dashboard-auth"),
                "nginx.ingress.kubernetes.io/auth-realm": "cache dashboard",
            });
            let body = self.ingress(&name, "cache-dashboard", paths, auth, k, tls);
            self.push(Tier::Routes, body);
        }
    }

    /// The cache dashboard: always behind HTTP basic authentication at the ingress.
    fn cache_dashboard(&mut self, k: &KubernetesConfig) {
        let name = self.name("cache-dashboard");
        let component = "cache-dashboard";
        // nginx reads `user:{PLAIN}password` lines (RFC 2307 scheme); the file only ever
        // lives in this Secret.
        let auth = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": self.meta(&self.name("cache-dashboard-auth"), component),
            "stringData": {"auth": format!("{}:{{PLAIN}}{}\n", k.cache_dashboard_username,
                                           k.cache_dashboard_password)}});
        self.push(Tier::Platform, auth);
        let pod = json!({"containers": [{
            "name": "dashboard",
            "image": "redis/redisinsight:2.58",
            "env": [{"name": "RI_PROXY_PATH", "value": "/cache-dashboard"}],
            "ports": [{"name": "http", "containerPort": 5540}],
        }]});
        self.deployment(Tier::Platform, component, &name, 1, pod);
        self.service(Tier::Platform, component, &name, 5540, false);
    }

    /// The database dashboard with its own login (`{app}-docdb-dashboard-secret`).
    fn docdb_dashboard(&mut self, k: &KubernetesConfig) {
        let name = self.name("db-dashboard");
        let component = "db-dashboard";
        let secret = self.name("docdb-dashboard-secret");
        let body = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": self.meta(&secret, component),
            "stringData": {"username": k.docdb_dashboard_username,
                           "password": k.docdb_dashboard_password}});
        self.push(Tier::Platform, body);
        let pod = json!({"containers": [{
            "name": "dashboard",
            "image": "mongo-express:1.0",
            "env": [
                {"name": "ME_CONFIG_SITE_BASEURL", "value": "/db-dashboard"},
                {"name": "ME_CONFIG_BASICAUTH", "value": "true"},
                env_secret("ME_CONFIG_BASICAUTH_USERNAME", &secret, "username"),
                env_secret("ME_CONFIG_BASICAUTH_PASSWORD", &secret, "password"),
                env_secret("ME_CONFIG_MONGODB_URL", &self.name("docdb-secret"), "uri"),
            ],
            "ports": [{"name": "http", "containerPort": 8081}],
        }]});
        self.deployment(Tier::Platform, component, &name, 1, pod);
        self.service(Tier::Platform, component, &name, 8081, false);
    }

    /// The log pipeline: a collector on every node (Promtail) shipping pod logs to a log
    /// store (Loki), and a dashboard (Grafana) with a pod-logs board, at
    /// `/logs-dashboard`, whose login is the database dashboard's.
    fn logs(&mut self, k: &KubernetesConfig) {
        let store = self.name("logs-store");
        let pod = json!({"containers": [{
            "name": "loki",
            "image": "grafana/loki:3.1.1",
            "args": ["-config.file=/etc/loki/local-config.yaml"],
            "ports": [{"name": "http", "containerPort": 3100}],
            "volumeMounts": [{"name": "data", "mountPath": "/loki"}],
        }]});
        self.stateful_set("logs-store", "2Gi", pod);
        self.service(Tier::Platform, "logs-store", &store, 3100, false);

        let collector = self.name("logs-collector");
        let component = "logs-collector";
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                             "metadata": self.meta(&collector, component)});
        self.push(Tier::Platform, account);
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": collector, "labels": self.labels(component)},
            "rules": [{"apiGroups": [""], "resources": ["nodes", "pods", "services", "endpoints"],
                       "verbs": ["get", "list", "watch"]}],
        });
        self.cluster(Tier::Platform, role);
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": collector, "labels": self.labels(component)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": collector},
            "subjects": [{"kind": "ServiceAccount", "name": collector, "namespace": self.ns}],
        });
        self.cluster(Tier::Platform, binding);
        let config = format!(
            "server:\n  http_listen_port: 9080\npositions:\n  filename: /tmp/positions.yaml\n\
             clients:\n  - url: http://{store}:3100/loki/api/v1/push\nscrape_configs:\n  \
             - job_name: pods\n    kubernetes_sd_configs:\n      - role: pod\n    \
             relabel_configs:\n      - source_labels: [__meta_kubernetes_namespace]\n        \
             target_label: namespace\n      - source_labels: [__meta_kubernetes_pod_name]\n        \
             target_label: pod\n      - source_labels: [__meta_kubernetes_pod_container_name]\n        \
             target_label: container\n      - source_labels: [__meta_kubernetes_pod_uid, \
             __meta_kubernetes_pod_container_name]\n        separator: /\n        \
             target_label: __path__\n        replacement: /var/log/pods/*$1/*.log\n"
        );
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": self.meta(&collector, component),
                        "data": {"promtail.yaml": config}});
        self.push(Tier::Platform, cm);
        let ds = json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": self.meta(&collector, component),
            "spec": {
                "selector": {"matchLabels": self.selector(component)},
                "template": {
                    "metadata": {"labels": self.labels(component)},
                    "spec": {
                        "serviceAccountName": collector,
                        "containers": [{
                            "name": "promtail",
                            "image": "grafana/promtail:3.1.1",
                            "args": ["-config.file=/etc/promtail/promtail.yaml"],
                            "env": [{"name": "HOSTNAME",
                                     "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                            "volumeMounts": [
                                {"name": "config", "mountPath": "/etc/promtail"},
                                {"name": "pods", "mountPath": "/var/log/pods", "readOnly": true},
                            ],
                        }],
                        "volumes": [
                            {"name": "config", "configMap": {"name": collector}},
                            {"name": "pods", "hostPath": {"path": "/var/log/pods"}},
                        ],
                    },
                },
            },
        });
        self.push(Tier::Platform, ds);

        let dash = self.name("logs-dashboard");
        let component = "logs-dashboard";
        let provisioning = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": self.meta(&dash, component),
            "data": {
                "datasources.yaml": format!(
                    "apiVersion: 1\ndatasources:\n  - name: Logs\n    type: loki\n    uid: logs\n    \
                     url: http://{store}:3100\n    isDefault: true\n"),
                "dashboards.yaml": "apiVersion: 1\nproviders:\n  - name: svc\n    type: file\n    \
                     options:\n      path: /etc/grafana/provisioning/dashboards\n",
                "pod-logs.json": pod_logs_board(&self.ns).to_string(),
            },
        });
        self.push(Tier::Platform, provisioning);
        let secret = self.name("docdb-dashboard-secret");
        if !k.docdb_dashboard {
            let body = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": self.meta(&secret, component),
                "stringData": {"username": k.docdb_dashboard_username,
                               "password": k.docdb_dashboard_password}});
            self.push(Tier::Platform, body);
        }
        let pod = json!({
            "containers": [{
                "name": "grafana",
                "image": "grafana/grafana:11.2.0",
                "env": [
                    {"name": "GF_SERVER_ROOT_URL", "value": "%(protocol)s://%(domain)s/logs-dashboard/"},
                    {"name": "GF_SERVER_SERVE_FROM_SUB_PATH", "value": "true"},
                    env_secret("GF_SECURITY_ADMIN_USER", &secret, "username"),
                    env_secret("GF_SECURITY_ADMIN_PASSWORD", &secret, "password"),
                ],
                "ports": [{"name": "http", "containerPort": 3000}],
                "volumeMounts": [
                    {"name": "provisioning", "mountPath": "/etc/grafana/provisioning/datasources/datasources.yaml", "subPath": "datasources.yaml"},
                    {"name": "provisioning", "mountPath": "/etc/grafana/provisioning/dashboards/dashboards.yaml", "subPath": "dashboards.yaml"},
                    {"name": "provisioning", "mountPath": "/etc/grafana/provisioning/dashboards/pod-logs.json", "subPath": "pod-logs.json"},
                ],
            }],
            "volumes": [{"name": "provisioning", "configMap": {"name": dash}}],
        });
        self.deployment(Tier::Platform, component, &dash, 1, pod);
        self.service(Tier::Platform, component, &dash, 3000, false);
    }
}

/// A Grafana board listing the namespace's pod logs.
fn pod_logs_board(namespace: &str) -> Json {
    json!({
        "title": "Pod logs",
        "uid": "svc-pod-logs",
        "schemaVersion": 39,
        "panels": [{
            "type": "logs",
            "title": "Pod logs",
            "gridPos": {"x": 0, "y": 0, "w": 24, "h": 20},
            "datasource": {"type": "loki", "uid": "logs"},
            "targets": [{"expr": format!("{{namespace=\"{namespace}\"}}"), "refId": "A"}],
        }],
    })
}

/// The app's code for its ConfigMap: the `.svc` files and `svc*.toml` files of the app
/// directory (not its subdirectories), at most [`MAX_CODE_BYTES`] in all.
fn code_files(dir: &Path) -> Result<Map<String, Json>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read the app directory {}: {e}", dir.display()))?;
    let mut files: Vec<(String, String)> = Vec::new();
    let mut total = 0usize;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        let wanted = name.ends_with(".svc")
            || (name.starts_with("svc") && name.ends_with(".toml") && name != "svc.toml.example");
        if !wanted || !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        total += text.len();
        if total > MAX_CODE_BYTES {
            return Err(format!(
                "the app's .svc and svc*.toml files exceed {MAX_CODE_BYTES} bytes, more than \
                 one ConfigMap holds: build an image with the app inside and set \
                 [scale.kubernetes] image"
            ));
        }
        files.push((name, text));
    }
    files.sort();
    Ok(files
        .into_iter()
        .map(|(k, v)| (k, Json::String(v)))
        .collect())
}

/// Percent-encode a URI user-info part.
fn percent(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_names_are_dns_labels() {
        let name = |s: &str| app_name(Path::new(s));
        assert_eq!(name("dir/My_App.svc").as_deref(), Ok("my-app"));
        assert_eq!(name("9lives.svc").as_deref(), Ok("app-9lives"));
        assert_eq!(name("a__b--c.svc").as_deref(), Ok("a-b-c"));
        assert!(name("___.svc").is_err());
        let long = name(&format!("{}.svc", "x".repeat(80))).expect("a name");
        assert_eq!(long.len(), MAX_APP_NAME);
    }

    #[test]
    fn userinfo_is_percent_encoded() {
        assert_eq!(percent("p@ss:w/rd"), "p%40ss%3Aw%2Frd");
    }
}
