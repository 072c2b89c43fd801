//! `svc start --scale` and `svc scale status|destroy` (target `orchestrator`): the
//! `--dry-run` object table, the `--show-yaml` stream validated offline by PyPI's
//! `kubernetes-validate --strict` against Kubernetes 1.33 (skipped with a message when it
//! is not installed; `.ci/run` installs it), the switches, secrets by reference, the
//! unsupported targets, the errors without a cluster, and the apply / status / destroy
//! flow against a stand-in `kubectl` on `PATH` that records what it is asked.

use crate::{TempDir, stderr, stdout, svc};
use std::path::Path;
use std::process::{Command, Output, Stdio};

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
        err.contains("cannot reach the Kubernetes cluster") || err.contains("kubectl is not"),
        "{err}"
    );
}

/// A stand-in `kubectl` on `PATH`: logs each call's arguments to `calls.log`, saves the
/// stdin of `apply` to `applied-N.yaml`, and answers `get deployment` with a name once
/// `provisioned` exists in its directory.
fn fake_kubectl(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    let script = format!(
        "#!/bin/sh\nD='{d}'\necho \"$*\" >> \"$D/calls.log\"\ncase \"$*\" in\n\
         *\" apply \"*) n=$(ls \"$D\" | grep -c '^applied-'); cat > \"$D/applied-$n.yaml\"; \
         touch \"$D/provisioned\"; echo applied;;\n\
         *\"get --raw /version\"*) echo '{{}}';;\n\
         *\"get deployment \"*) if [ -e \"$D/provisioned\" ]; then echo deployment.apps/x; fi;;\n\
         *\" get \"*) echo 'NAME READY'; echo 'shop 1/1';;\n\
         *\" delete \"*) echo deleted;;\nesac\n",
        d = dir.display()
    );
    let path = bin.join("kubectl");
    std::fs::write(&path, script).expect("write fake kubectl");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn first_deploy_provisions_everything_later_ones_the_app_only() {
    let dir = app("deploy-apply", "");
    let path = fake_kubectl(dir.path());
    let config = dir.write("kubeconfig", "apiVersion: v1\nkind: Config\n");
    let config = config.display().to_string();
    let env = [("PATH", path.as_str()), ("KUBECONFIG", config.as_str())];
    let out = svc_with(dir.path(), &["start", "shop.svc", "--scale"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("provisioned and deployed"),
        "{}",
        stdout(&out)
    );
    let first = std::fs::read_to_string(dir.path().join("applied-0.yaml")).expect("applied");
    assert!(first.contains("name: \"shop-docdb\""));
    assert!(first.contains("name: \"shop-ingress-controller\""));

    let out = svc_with(dir.path(), &["start", "shop.svc", "--scale"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("updated the app"), "{}", stdout(&out));
    let second = std::fs::read_to_string(dir.path().join("applied-1.yaml")).expect("applied");
    assert!(second.contains("name: \"shop\""));
    assert!(
        !second.contains("shop-docdb\""),
        "databases are not touched again"
    );
    assert!(!second.contains("shop-ingress-controller"));
    let calls = std::fs::read_to_string(dir.path().join("calls.log")).expect("calls");
    assert!(calls.contains("apply --server-side"), "{calls}");

    let out = svc_with(dir.path(), &["scale", "status", "shop.svc"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("shop 1/1"));

    // destroy asks: a wrong answer deletes nothing, the app name or --yes deletes.
    let mut child = svc()
        .current_dir(dir.path())
        .args(["scale", "destroy", "shop.svc"])
        .envs(env)
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
        .write_all(b"no\n")
        .expect("answer");
    let out = child.wait_with_output().expect("finished");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("Type the app name"),
        "{}",
        stderr(&out)
    );
    let calls = std::fs::read_to_string(dir.path().join("calls.log")).expect("calls");
    assert!(!calls.contains("delete"), "{calls}");
    let out = svc_with(dir.path(), &["scale", "destroy", "shop.svc", "--yes"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let calls = std::fs::read_to_string(dir.path().join("calls.log")).expect("calls");
    assert!(
        calls.contains("delete") && calls.contains("app.kubernetes.io/part-of=shop"),
        "{calls}"
    );
}
