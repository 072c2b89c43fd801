//! `svc start --scale` and `svc scale status|destroy` (target `orchestrator`): the
//! `--dry-run` object table, the `--show-yaml` stream validated offline by PyPI's
//! `kubernetes-validate --strict` against Kubernetes 1.33 (skipped with a message when it
//! is not installed; `.ci/run` installs it), the switches, secrets by reference, the
//! unsupported targets, the errors without a cluster, and the apply / status / destroy
//! flow against a stand-in Kubernetes API server (`kube_api.py`, started here on a free
//! loopback port and stopped by PID) that records every request and stores the objects.

use crate::{TempDir, stderr, stdout, svc};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const APP: &str =
    "walker:pub hello {\n    can go with Root entry {\n        report \"hi\";\n    }\n}\n";

/// A distinctive password: it must never appear in a pod spec.
const DB_PASSWORD: &str = "db-Pa55-unique";

fn app(tag: &str, toml: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write("shop.svc", APP);
    dir.write("svc.toml", toml);
    dir
}

fn svc_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    svc()
        .current_dir(dir)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run svc")
}

/// No cluster at all: a kubeconfig path that does not exist.
const NO_CLUSTER: &[(&str, &str)] = &[("KUBECONFIG", "/nonexistent/svc-test-kubeconfig")];

#[test]
fn dry_run_prints_the_object_table_and_changes_nothing() {
    let dir = app("deploy-table", "");
    let out = svc_with(
        dir.path(),
        &["start", "shop.svc", "--scale", "--dry-run"],
        NO_CLUSTER,
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.starts_with("KIND"), "{text}");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .filter(|r: &Vec<&str>| r.len() == 3)
        .collect();
    let has = |kind: &str, name: &str, ns: &str| rows.iter().any(|r| r == &[kind, name, ns]);
    for (kind, name) in [
        ("Deployment", "shop"),
        ("Service", "shop"),
        ("ConfigMap", "shop-config"),
        ("ConfigMap", "shop-code"),
        ("StatefulSet", "shop-docdb"),
        ("Service", "shop-docdb"),
        ("StatefulSet", "shop-cache"),
        ("Service", "shop-cache"),
        ("Secret", "shop-docdb-secret"),
        ("Secret", "shop-cache-secret"),
        ("Deployment", "shop-ingress-controller"),
        ("Service", "shop-ingress"),
        ("Ingress", "shop"),
    ] {
        assert!(has(kind, name, "default"), "{kind} {name} missing:\n{text}");
    }
    assert!(has("IngressClass", "shop-nginx", "(cluster)"), "{text}");
    assert!(
        !text.contains("dashboard") && !text.contains("logs"),
        "switches are off by default:\n{text}"
    );
    assert!(text.contains("nothing was applied"), "{text}");
    assert!(
        stderr(&out).contains("weak development default"),
        "{}",
        stderr(&out)
    );
}

/// Documents of a YAML stream (split on `---` lines).
fn documents(yaml: &str) -> Vec<&str> {
    yaml.split("---\n")
        .filter(|d| !d.trim().is_empty())
        .collect()
}

fn kubernetes_validate(file: &Path) -> Option<Output> {
    let probe = Command::new("kubernetes-validate")
        .arg("--version")
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: kubernetes-validate is not installed (.ci/run installs it)");
        return None;
    }
    Some(
        Command::new("kubernetes-validate")
            .args(["--strict", "--kubernetes-version", "1.33.0"])
            .arg(file)
            .output()
            .expect("run kubernetes-validate"),
    )
}

#[test]
fn show_yaml_is_valid_kubernetes_with_every_switch_on() {
    let toml = format!(
        "[scale.kubernetes]\ncache_dashboard = true\ndocdb_dashboard = true\n\
         logs_enabled = true\ndomain = \"shop.example.com\"\nnamespace = \"shop-ns\"\n\
         docdb_root_password = \"{DB_PASSWORD}\"\ncache_password = \"cache-Pa55\"\n\
         replicas = 2\n[scale.jwt]\nsecret = \"jwt-Secret-value\"\n"
    );
    let dir = app("deploy-yaml", &toml);
    let out = svc_with(
        dir.path(),
        &[
            "start",
            "shop.svc",
            "--scale",
            "--dry-run",
            "--show-yaml",
            "--enable-tls",
        ],
        NO_CLUSTER,
    );
    let yaml = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    let docs = documents(&yaml);
    assert!(docs.len() > 30, "{yaml}");
    // Secrets only by reference: no password inside a workload.
    for doc in &docs {
        let workload = ["Deployment", "StatefulSet", "DaemonSet"]
            .iter()
            .any(|k| doc.contains(&format!("kind: \"{k}\"")));
        if workload {
            for secret in [DB_PASSWORD, "cache-Pa55", "jwt-Secret-value"] {
                assert!(!doc.contains(secret), "secret in a pod spec:\n{doc}");
            }
        }
    }
    assert!(yaml.contains("secretKeyRef"));
    assert!(yaml.contains("name: \"shop-docdb-secret\""));
    assert!(yaml.contains("name: \"shop-cache-secret\""));
    // Dashboards and the log pipeline, the cache dashboard behind basic auth, TLS.
    for name in [
        "shop-cache-dashboard",
        "shop-db-dashboard",
        "shop-logs-collector",
        "shop-logs-store",
        "shop-logs-dashboard",
    ] {
        assert!(yaml.contains(&format!("name: \"{name}\"")), "{name}");
    }
    let cache_ingress = docs
        .iter()
        .find(|d| d.contains("kind: \"Ingress\"") && d.contains("cache-dashboard"))
        .expect("the cache dashboard's ingress");
    assert!(cache_ingress.contains("nginx.ingress.kubernetes.io/auth-type: \"basic\""));
    assert!(yaml.contains("cert-manager.io/cluster-issuer: \"letsencrypt-prod\""));
    assert!(yaml.contains("nodePort: 30080"));
    assert!(yaml.contains("kind: \"Namespace\""));

    let file = dir.path().join("stream.yaml");
    std::fs::write(&file, &yaml).expect("write the stream");
    let Some(check) = kubernetes_validate(&file) else {
        return;
    };
    assert!(
        check.status.success(),
        "kubernetes-validate --strict refused the stream:\n{}{}",
        stdout(&check),
        stderr(&check)
    );
}

#[test]
fn disabled_stores_need_external_uris() {
    let dir = app(
        "deploy-external",
        "[scale.kubernetes]\ndocdb_enabled = false\n",
    );
    let out = svc_with(
        dir.path(),
        &["start", "shop.svc", "--scale", "--dry-run"],
        NO_CLUSTER,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("DOCDB_URI"), "{}", stderr(&out));
    let mut env = NO_CLUSTER.to_vec();
    env.push(("DOCDB_URI", "mongodb://db.example.com:27017"));
    let out = svc_with(
        dir.path(),
        &["start", "shop.svc", "--scale", "--dry-run"],
        &env,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("shop-docdb "), "{}", stdout(&out));
    assert!(stdout(&out).contains("shop-docdb-secret"));

    let dir = app(
        "deploy-external-cache",
        "[scale.kubernetes]\ncache_enabled = false\n",
    );
    let out = svc_with(
        dir.path(),
        &["start", "shop.svc", "--scale", "--dry-run"],
        NO_CLUSTER,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("CACHE_URL"), "{}", stderr(&out));

    let dir = app("deploy-tls", "");
    let out = svc_with(
        dir.path(),
        &["start", "shop.svc", "--scale", "--dry-run", "--enable-tls"],
        NO_CLUSTER,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("domain"), "{}", stderr(&out));
}

#[test]
fn other_targets_are_not_supported_in_this_build() {
    let dir = app("deploy-targets", "");
    for args in [
        &["start", "shop.svc", "--scale", "--target", "cloud_a"][..],
        &["start", "shop.svc", "--scale", "--target", "cloud_b"],
        &["start", "shop.svc", "--scale", "--experimental"],
        &["start", "shop.svc", "--client", "web"],
        &["scale", "status", "shop.svc", "--target", "cloud_a"],
    ] {
        let out = svc_with(dir.path(), args, NO_CLUSTER);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).contains("not supported in this build"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = svc_with(dir.path(), &["start", "shop.svc", "--dry-run"], NO_CLUSTER);
    assert_eq!(out.status.code(), Some(2), "--dry-run needs --scale");
}

#[test]
fn without_a_cluster_every_cluster_command_fails_clearly() {
    let dir = app("deploy-nocluster", "");
    for args in [
        &["start", "shop.svc", "--scale"][..],
        &["scale", "status", "shop.svc"],
        &["scale", "destroy", "shop.svc", "--yes"],
    ] {
        let out = svc_with(dir.path(), args, NO_CLUSTER);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("no Kubernetes cluster is configured"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // A kubeconfig whose API server does not answer.
    let config = dir.write(
        "kubeconfig",
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
         https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
         current-context: c\nusers:\n- name: u\n  user:\n    token: t\n",
    );
    let config = config.display().to_string();
    let out = svc_with(
        dir.path(),
        &["start", "shop.svc", "--scale"],
        &[("KUBECONFIG", &config)],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("cannot reach the Kubernetes cluster at https://127.0.0.1:1"),
        "{err}"
    );
    one_error_line(&out);
}

// ---------------------------------------------------------------------------------------
// Against a stand-in API server
// ---------------------------------------------------------------------------------------

/// `python3 kube_api.py DIR`, stopped by PID on drop.
struct KubeApi {
    child: Child,
    dir: TempDir,
}

impl KubeApi {
    fn start() -> KubeApi {
        let dir = TempDir::new("kube-api");
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/integration/kube_api.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 must be installed for the deploy tests");
        let deadline = Instant::now() + Duration::from_secs(15);
        while !dir.path().join("kubeconfig").is_file() {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                panic!("the stand-in API server exited ({status}):\n{err}");
            }
            assert!(
                Instant::now() < deadline,
                "the stand-in API server never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        KubeApi { child, dir }
    }

    fn kubeconfig(&self) -> String {
        self.dir.path().join("kubeconfig").display().to_string()
    }

    /// Every request so far: method, path, query, content type, authorization.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("requests.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a request record"))
            .collect()
    }

    /// The paths of the requests with `method`, in order.
    fn paths(&self, method: &str) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r["method"] == method)
            .map(|r| r["path"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The stored objects by path.
    fn store(&self) -> Map<String, Value> {
        std::fs::read_to_string(self.dir.path().join("store.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    fn object(&self, path: &str) -> Value {
        self.store()
            .get(path)
            .cloned()
            .unwrap_or_else(|| panic!("{path} is not stored"))
    }

    /// Answer requests with `method` whose path contains `path` by a failure `Status`.
    fn fail(&self, method: &str, path: &str, code: u16, reason: &str, message: &str) {
        let rules = json!([{"method": method, "path": path, "code": code, "reason": reason,
                            "message": message}]);
        std::fs::write(self.dir.path().join("faults.json"), rules.to_string()).expect("faults");
    }

    fn clear_faults(&self) {
        let _ = std::fs::remove_file(self.dir.path().join("faults.json"));
    }

    /// `svc ARGS` in `dir` against this server.
    fn svc(&self, dir: &Path, args: &[&str]) -> Output {
        svc_with(dir, args, &[("KUBECONFIG", &self.kubeconfig())])
    }
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A failed command: exit 1, and apart from warnings exactly one `error:` line on stderr
/// (no panic, no debug dump).
fn one_error_line(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("warning: "))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("Status {"),
        "{err}"
    );
    lines[0].to_string()
}

/// The objects of the `--dry-run` table as API paths, and the app's ones (no platform).
fn planned_paths(dir: &Path) -> BTreeSet<String> {
    let out = svc_with(
        dir,
        &["start", "shop.svc", "--scale", "--dry-run"],
        NO_CLUSTER,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let r: Vec<&str> = l.split_whitespace().collect();
            (r.len() == 3).then(|| api_path(r[0], r[1], r[2]))
        })
        .collect()
}

/// The API path of an object (the kinds svc emits).
fn api_path(kind: &str, name: &str, namespace: &str) -> String {
    let (base, plural) = match kind {
        "Namespace" => ("/api/v1", "namespaces"),
        "ServiceAccount" => ("/api/v1", "serviceaccounts"),
        "Secret" => ("/api/v1", "secrets"),
        "ConfigMap" => ("/api/v1", "configmaps"),
        "Service" => ("/api/v1", "services"),
        "PersistentVolumeClaim" => ("/api/v1", "persistentvolumeclaims"),
        "Deployment" => ("/apis/apps/v1", "deployments"),
        "StatefulSet" => ("/apis/apps/v1", "statefulsets"),
        "DaemonSet" => ("/apis/apps/v1", "daemonsets"),
        "ClusterRole" => ("/apis/rbac.authorization.k8s.io/v1", "clusterroles"),
        "ClusterRoleBinding" => ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings"),
        "IngressClass" => ("/apis/networking.k8s.io/v1", "ingressclasses"),
        "Ingress" => ("/apis/networking.k8s.io/v1", "ingresses"),
        other => panic!("no API path for {other}"),
    };
    if namespace == "(cluster)" {
        format!("{base}/{plural}/{name}")
    } else {
        format!("{base}/namespaces/{namespace}/{plural}/{name}")
    }
}

/// The app's own objects and its routes (applied by every deploy) in `default`.
const APP_AND_ROUTES: &[(&str, &str)] = &[
    ("ConfigMap", "shop-config"),
    ("ConfigMap", "shop-code"),
    ("Deployment", "shop"),
    ("Service", "shop"),
    ("Ingress", "shop"),
];

fn deploy_ok(api: &KubeApi, dir: &Path) -> String {
    let out = api.svc(dir, &["start", "shop.svc", "--scale"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    stdout(&out)
}

#[test]
fn first_deploy_applies_everything_later_ones_the_app_and_routes() {
    let api = KubeApi::start();
    let dir = app("deploy-apply", "");
    let planned = planned_paths(dir.path());
    let text = deploy_ok(&api, dir.path());
    assert!(text.contains("provisioned and deployed `shop`"), "{text}");
    let applied: BTreeSet<String> = api.paths("PATCH").into_iter().collect();
    assert_eq!(applied, planned, "the first deploy applies every object");
    for r in api.requests() {
        assert_eq!(r["authorization"], "Bearer svc-test-token", "{r}");
        if r["method"] == "PATCH" {
            assert_eq!(r["query"]["fieldManager"], "svc", "{r}");
            assert_eq!(r["query"]["force"], "true", "{r}");
            assert_eq!(r["content_type"], "application/apply-patch+yaml", "{r}");
        }
    }
    let first = api.paths("PATCH").len();

    // A new image and replica count: the second deploy applies the app and routes only.
    dir.write(
        "svc.toml",
        "[scale.kubernetes]\nimage = \"shop:v2\"\nreplicas = 3\n",
    );
    let text = deploy_ok(&api, dir.path());
    assert!(text.contains("updated the app `shop`"), "{text}");
    let second: BTreeSet<String> = api.paths("PATCH")[first..].iter().cloned().collect();
    let expected: BTreeSet<String> = APP_AND_ROUTES
        .iter()
        .map(|(k, n)| api_path(k, n, "default"))
        .collect();
    assert_eq!(second, expected);
    let deployment = api.object("/apis/apps/v1/namespaces/default/deployments/shop");
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "shop:v2"
    );
    let docdb = api.object("/apis/apps/v1/namespaces/default/statefulsets/shop-docdb");
    assert_eq!(
        docdb["metadata"]["resourceVersion"].as_str().map(|_| ()),
        Some(())
    );
}

#[test]
fn the_namespace_is_created_before_its_objects() {
    let api = KubeApi::start();
    let dir = app("deploy-ns", "[scale.kubernetes]\nnamespace = \"shop-ns\"\n");
    let text = deploy_ok(&api, dir.path());
    assert!(text.contains("in namespace `shop-ns`"), "{text}");
    let applied = api.paths("PATCH");
    assert_eq!(applied[0], "/api/v1/namespaces/shop-ns", "{applied:?}");
    // The stand-in refuses an object in a missing namespace: everything landed.
    let planned = planned_paths(dir.path());
    assert_eq!(applied.iter().cloned().collect::<BTreeSet<_>>(), planned);
    assert!(
        applied
            .iter()
            .skip(1)
            .all(|p| p != "/api/v1/namespaces/shop-ns")
    );
}

#[test]
fn status_lists_the_objects_of_the_app() {
    let api = KubeApi::start();
    let dir = app("deploy-status", "");
    let out = api.svc(dir.path(), &["scale", "status", "shop.svc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("no deployment of `shop` in namespace `default`"),
        "{}",
        stdout(&out)
    );
    deploy_ok(&api, dir.path());
    let out = api.svc(dir.path(), &["scale", "status", "shop.svc"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["KIND", "NAME", "STATUS"], "{text}");
    for row in [
        &["Deployment", "shop", "1/1", "ready"][..],
        &["StatefulSet", "shop-docdb", "1/1", "ready"],
        &["PersistentVolumeClaim", "data-shop-docdb-0", "Bound"],
        &["Service", "shop-ingress", "NodePort", "30080"],
        &["Service", "shop", "ClusterIP"],
        &["Ingress", "shop", "-"],
        &["IngressClass", "shop-nginx", "-"],
    ] {
        assert!(rows.iter().any(|r| r == row), "{row:?} missing:\n{text}");
    }
    let selector = "app.kubernetes.io/part-of=shop,app.kubernetes.io/managed-by=svc";
    let lists: Vec<Value> = api
        .requests()
        .into_iter()
        .filter(|r| r["method"] == "GET" && r["query"]["labelSelector"].is_string())
        .collect();
    assert!(!lists.is_empty());
    assert!(
        lists
            .iter()
            .all(|r| r["query"]["labelSelector"] == selector),
        "{lists:?}"
    );
}

/// `svc scale destroy shop.svc` answering `answer` on stdin.
fn destroy_answering(api: &KubeApi, dir: &Path, answer: &str) -> Output {
    let mut child = svc()
        .current_dir(dir)
        .args(["scale", "destroy", "shop.svc"])
        .env("KUBECONFIG", api.kubeconfig())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run svc");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(answer.as_bytes())
        .expect("answer");
    child.wait_with_output().expect("finished")
}

#[test]
fn destroy_asks_then_deletes_everything_routes_first() {
    let api = KubeApi::start();
    let dir = app("deploy-destroy", "");
    deploy_ok(&api, dir.path());
    let before = api.store();
    assert!(
        before.keys().any(|k| k.contains("persistentvolumeclaims")),
        "{before:?}"
    );

    let out = destroy_answering(&api, dir.path(), "no\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("Type the app name"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("nothing was deleted"),
        "{}",
        stderr(&out)
    );
    assert!(api.paths("DELETE").is_empty());
    assert_eq!(api.store(), before);

    let out = api.svc(dir.path(), &["scale", "destroy", "shop.svc", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        api.store().is_empty(),
        "left behind: {:?}",
        api.store().keys()
    );
    let deleted = api.paths("DELETE");
    assert_eq!(deleted.len(), before.len(), "{deleted:?}");
    let at = |path: &str| {
        deleted
            .iter()
            .position(|p| p == path)
            .unwrap_or_else(|| panic!("{path} not deleted: {deleted:?}"))
    };
    let ingress = at("/apis/networking.k8s.io/v1/namespaces/default/ingresses/shop");
    let app = at("/apis/apps/v1/namespaces/default/deployments/shop");
    let docdb = at("/apis/apps/v1/namespaces/default/statefulsets/shop-docdb");
    let volume = at("/api/v1/namespaces/default/persistentvolumeclaims/data-shop-docdb-0");
    assert!(
        ingress < app && app < docdb && docdb < volume,
        "{deleted:?}"
    );
    assert!(stdout(&out).contains("deleted"), "{}", stdout(&out));

    // The app name as the answer also confirms (nothing left to delete now).
    let out = destroy_answering(&api, dir.path(), "shop\n");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn refusals_of_the_server_are_one_clear_line() {
    let api = KubeApi::start();
    let dir = app("deploy-refused", "");
    api.fail(
        "PATCH",
        "/clusterroles/",
        403,
        "Forbidden",
        "clusterroles.rbac.authorization.k8s.io \"shop-ingress\" is forbidden: User \"dev\" \
         cannot patch resource \"clusterroles\" at the cluster scope",
    );
    let out = api.svc(dir.path(), &["start", "shop.svc", "--scale"]);
    let line = one_error_line(&out);
    assert!(
        line.contains("forbids applying ClusterRole/shop-ingress (403 Forbidden)"),
        "{line}"
    );
    assert!(line.contains("User \"dev\" cannot patch"), "{line}");

    api.fail(
        "PATCH",
        "/deployments/shop",
        422,
        "Invalid",
        "Deployment.apps \"shop\" is invalid: spec.template.spec.containers[0].image: \
         Required value",
    );
    let out = api.svc(dir.path(), &["start", "shop.svc", "--scale"]);
    let line = one_error_line(&out);
    assert!(
        line.contains("the cluster rejected Deployment/shop (422 Invalid)"),
        "{line}"
    );
    assert!(
        line.contains("containers[0].image: Required value"),
        "{line}"
    );

    api.fail("GET", "/version", 401, "Unauthorized", "Unauthorized");
    for args in [
        &["start", "shop.svc", "--scale"][..],
        &["scale", "status", "shop.svc"],
        &["scale", "destroy", "shop.svc", "--yes"],
    ] {
        let line = one_error_line(&api.svc(dir.path(), args));
        assert!(line.contains("refused the credentials"), "{args:?}: {line}");
    }
    api.fail(
        "GET",
        "/namespaces/default/secrets",
        403,
        "Forbidden",
        "no secrets for you",
    );
    let line = one_error_line(&api.svc(dir.path(), &["scale", "status", "shop.svc"]));
    assert!(
        line.contains("forbids listing Secret objects (403 Forbidden)"),
        "{line}"
    );
    // A long (or multi-line) message is cut, still on one line.
    let long = format!("{}\n{}", "x".repeat(3000), "y".repeat(3000));
    api.fail("GET", "/version", 500, "InternalError", &long);
    let line = one_error_line(&api.svc(dir.path(), &["scale", "status", "shop.svc"]));
    assert!(line.contains("answered 500 InternalError"), "{line}");
    assert!(line.len() < 1000 && line.ends_with("..."), "{line}");
    api.clear_faults();
    deploy_ok(&api, dir.path());
}

/// A kubeconfig whose current context points at `server`.
fn kubeconfig_for(dir: &TempDir, server: &str) -> String {
    dir.write(
        "kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
             {server}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             current-context: c\nusers:\n- name: u\n  user:\n    token: t\n"
        ),
    )
    .display()
    .to_string()
}

#[test]
fn an_unreachable_or_silent_server_fails_within_the_timeout() {
    let dir = app(
        "deploy-unreachable",
        "[scale.kubernetes]\nrequest_timeout_seconds = 2\n",
    );
    // A kubeconfig that is not one.
    let config = dir.write("kubeconfig", "clusters: [not yaml\n");
    let config = config.display().to_string();
    let out = svc_with(
        dir.path(),
        &["scale", "status", "shop.svc"],
        &[("KUBECONFIG", &config)],
    );
    let line = one_error_line(&out);
    assert!(
        line.contains(&format!("cannot use the kubeconfig {config}")),
        "{line}"
    );

    // A closed port: refused at once.
    let closed = crate::support::free_port();
    let config = kubeconfig_for(&dir, &format!("http://127.0.0.1:{closed}"));
    let started = Instant::now();
    let out = svc_with(
        dir.path(),
        &["scale", "status", "shop.svc"],
        &[("KUBECONFIG", &config)],
    );
    let line = one_error_line(&out);
    assert!(
        line.contains(&format!(
            "cannot reach the Kubernetes cluster at http://127.0.0.1:{closed}"
        )),
        "{line}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // A listener that never answers: the request timeout ends the wait.
    let silent = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let config = kubeconfig_for(&dir, &format!("http://127.0.0.1:{port}"));
    let started = Instant::now();
    let out = svc_with(
        dir.path(),
        &["start", "shop.svc", "--scale"],
        &[("KUBECONFIG", &config)],
    );
    let took = started.elapsed();
    let line = one_error_line(&out);
    assert!(line.contains("did not answer within 2 s"), "{line}");
    assert!(line.contains("request_timeout_seconds"), "{line}");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(15),
        "{took:?}"
    );
}
