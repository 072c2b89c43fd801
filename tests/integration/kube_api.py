"""A stand-in Kubernetes API server for svc's deploy tests: just what `svc start --scale`
and `svc scale status|destroy` use, over plain HTTP on 127.0.0.1 (a free port).

    python3 kube_api.py DIR

- `GET /version`;
- `PATCH` of one object with `Content-Type: application/apply-patch+yaml` (server-side
  apply: create, or merge into the stored object; `fieldManager` is required, `force`
  recorded); a namespaced object in a namespace that does not exist is refused (404) as
  a real API server does;
- `GET` of one object (404 when absent) and `GET` of a collection with `labelSelector`
  (`k=v`, `k==v`, `k!=v`, `k`, comma-joined); a StatefulSet's volume claims appear as
  its controller would make them for pod 0;
- `DELETE` of one object (404 when absent).

Files in DIR: `kubeconfig` (written once listening; its current context points here with
a bearer token), `requests.jsonl` (one line per request: method, path, query, content
type, authorization), `store.json` (every stored object by path, rewritten after each
change) and, read on each request when present, `faults.json`: a list of
`{"method", "path" (a substring), "code", "reason", "message"}` answered as a `Status`
instead of the real answer.
"""

import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "svc-test-token"
LOCK = threading.Lock()
STORE = {}
COUNTER = [0]


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def status(code, reason, message):
    return code, {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def parse(path):
    """(group, version, namespace or None, plural, name or None), or None."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if len(rest) not in (1, 2):
        return None
    return group, version, namespace, rest[0], rest[1] if len(rest) == 2 else None


def key(group, version, namespace, plural, name):
    base = "/api/" + version if group == "" else "/apis/%s/%s" % (group, version)
    if namespace is not None:
        base += "/namespaces/" + namespace
    return "%s/%s/%s" % (base, plural, name)


def matches(labels, selector):
    for term in [t.strip() for t in selector.split(",") if t.strip()]:
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term not in labels:
            return False
    return True


def merge(old, new):
    out = dict(old)
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    outdir = "."

    def log_message(self, *args):
        pass

    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def handle_any(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        raw = self.body()
        record = {
            "method": method,
            "path": url.path,
            "query": query,
            "content_type": self.headers.get("Content-Type"),
            "authorization": self.headers.get("Authorization"),
        }
        with LOCK:
            with open(os.path.join(self.outdir, "requests.jsonl"), "a") as f:
                f.write(json.dumps(record) + "\n")
            code, body = self.fault(method, url.path) or self.route(method, url.path, query, raw)
            if method in ("PATCH", "DELETE") and code < 300:
                write_atomic(
                    os.path.join(self.outdir, "store.json"), json.dumps(STORE, indent=1)
                )
        self.answer(code, body)

    def do_GET(self):
        self.handle_any("GET")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def fault(self, method, path):
        try:
            with open(os.path.join(self.outdir, "faults.json")) as f:
                faults = json.load(f)
        except FileNotFoundError:
            return None
        for rule in faults:
            if rule.get("method", method) == method and rule.get("path", "") in path:
                return status(rule["code"], rule.get("reason", ""), rule.get("message", ""))
        return None

    def route(self, method, path, query, raw):
        if path == "/version":
            return 200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0"}
        parsed = parse(path)
        if parsed is None:
            return status(404, "NotFound", "the server could not find the requested resource")
        group, version, namespace, plural, name = parsed
        if name is None:
            if method != "GET":
                return status(405, "MethodNotAllowed", "only GET of a collection")
            return self.list(group, version, namespace, plural, query)
        k = key(group, version, namespace, plural, name)
        what = '%s "%s"' % (plural, name)
        if method == "GET":
            if k in STORE:
                return 200, STORE[k]
            return status(404, "NotFound", "%s not found" % what)
        if method == "DELETE":
            if k in STORE:
                return 200, STORE.pop(k)
            return status(404, "NotFound", "%s not found" % what)
        if method == "PATCH":
            return self.apply(k, namespace, name, what, query, raw)
        return status(405, "MethodNotAllowed", method)

    def list(self, group, version, namespace, plural, query):
        prefix = key(group, version, namespace, plural, "")
        selector = query.get("labelSelector", "")
        items = []
        for k, obj in STORE.items():
            same = k.startswith(prefix) and "/" not in k[len(prefix):]
            if namespace is None and not same:
                # A cluster-wide list of a namespaced kind.
                p = parse(k)
                same = p is not None and p[:2] == (group, version) and p[3] == plural
            if same and matches(obj["metadata"].get("labels") or {}, selector):
                item = dict(obj)
                item.pop("apiVersion", None)
                item.pop("kind", None)
                items.append(item)
        return 200, {
            "kind": "List",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(COUNTER[0])},
            "items": items,
        }

    def apply(self, k, namespace, name, what, query, raw):
        if self.headers.get("Content-Type") != "application/apply-patch+yaml":
            return status(415, "UnsupportedMediaType", "not a server-side apply")
        manager = query.get("fieldManager")
        if not manager:
            return status(400, "BadRequest", "fieldManager is required for apply patch")
        try:
            obj = json.loads(raw)  # JSON is YAML; svc sends JSON
        except ValueError as e:
            return status(400, "BadRequest", "cannot parse the patch: %s" % e)
        meta = obj.get("metadata") or {}
        if meta.get("name") != name:
            return status(400, "BadRequest", "the name of the object does not match the URL")
        if namespace is not None:
            if meta.get("namespace", namespace) != namespace:
                return status(400, "BadRequest", "the namespace does not match the URL")
            if namespace != "default" and key("", "v1", None, "namespaces", namespace) not in STORE:
                return status(404, "NotFound", 'namespaces "%s" not found' % namespace)
        COUNTER[0] += 1
        old = STORE.get(k)
        new = merge(old, obj) if old else obj
        new["metadata"].setdefault("uid", "uid-%d" % COUNTER[0])
        new["metadata"]["resourceVersion"] = str(COUNTER[0])
        new["metadata"]["managedFields"] = [
            {"manager": manager, "operation": "Apply", "force": query.get("force") == "true"}
        ]
        replicas = (new.get("spec") or {}).get("replicas")
        if new.get("kind") in ("Deployment", "StatefulSet") and replicas is not None:
            new["status"] = {"replicas": replicas, "readyReplicas": replicas}
        STORE[k] = new
        if new.get("kind") == "StatefulSet" and namespace is not None:
            self.claim_volumes(new, namespace)
        return (200 if old else 201), new

    def claim_volumes(self, sts, namespace):
        """What the StatefulSet controller does for pod 0: one claim per template,
        `{template}-{statefulset}-0`, carrying the template's labels."""
        for t in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
            name = "%s-%s-0" % (t["metadata"]["name"], sts["metadata"]["name"])
            k = key("", "v1", namespace, "persistentvolumeclaims", name)
            if k not in STORE:
                STORE[k] = {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "labels": dict(t["metadata"].get("labels") or {}),
                    },
                    "spec": t.get("spec") or {},
                    "status": {"phase": "Bound"},
                }


def main():
    outdir = sys.argv[1]
    Handler.outdir = outdir
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    config = (
        "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
        "clusters:\n"
        "- name: test\n  cluster:\n    server: http://127.0.0.1:%d\n"
        "- name: other\n  cluster:\n    server: http://127.0.0.1:1\n"
        "contexts:\n"
        "- name: other\n  context:\n    cluster: other\n    user: test\n"
        "- name: test\n  context:\n    cluster: test\n    user: test\n"
        "users:\n- name: test\n  user:\n    token: %s\n" % (port, TOKEN)
    )
    write_atomic(os.path.join(outdir, "kubeconfig"), config)
    server.serve_forever()


if __name__ == "__main__":
    main()
