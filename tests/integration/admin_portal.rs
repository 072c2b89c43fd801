//! The admin portal page in headless Chromium (Debian `chromium`, the system browser,
//! driven over the DevTools protocol with the WebSocket client of `support.rs`): log in,
//! change the first password, list and search users, change a role, delete a user, with
//! every request of the page going to the server's own origin. Skipped, with a message,
//! when no `chromium` is installed (`.ci/run` installs it).

use crate::TempDir;
use crate::admin::{ADMIN_PASSWORD, NEW_PASSWORD, call, data, error, server};
use crate::support::{Frame, WsClient, free_port, get};
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A headless Chromium with a DevTools port, killed by PID on drop.
struct Browser {
    child: Child,
    port: u16,
    _profile: TempDir,
}

impl Browser {
    fn start() -> Option<Browser> {
        let binary = ["chromium", "chromium-browser"].into_iter().find(|b| {
            Command::new(b)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
        let Some(binary) = binary else {
            eprintln!("skipped: no `chromium` installed (apt-get install chromium)");
            return None;
        };
        let profile = TempDir::new("chromium");
        let port = free_port();
        let child = Command::new(binary)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-sync",
                "--disable-component-update",
                "--disable-dev-shm-usage",
            ])
            .arg(format!("--remote-debugging-port={port}"))
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chromium");
        Some(Browser {
            child,
            port,
            _profile: profile,
        })
    }

    /// The DevTools WebSocket path of the first page.
    fn page(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                let list = get(self.port, "/json/list");
                if list.status == 200
                    && let Ok(Value::Array(targets)) = serde_json::from_str::<Value>(&list.body)
                    && let Some(url) = targets
                        .iter()
                        .find(|t| t["type"] == json!("page"))
                        .and_then(|t| t["webSocketDebuggerUrl"].as_str())
                {
                    let path = url.split_once("/devtools/").map(|(_, p)| p).expect("path");
                    return format!("/devtools/{path}");
                }
            }
            assert!(
                Instant::now() < deadline,
                "chromium's DevTools did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A DevTools session on one page, recording the URL of every request the page makes.
struct Page {
    ws: WsClient,
    next_id: u64,
    requests: Vec<String>,
}

impl Page {
    fn command(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.ws
            .send_json(&json!({"id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.ws.recv_within(left) {
                Some(Frame::Text(t)) => {
                    let v: Value = serde_json::from_str(&t).expect("DevTools JSON");
                    if v["method"] == json!("Network.requestWillBeSent") {
                        if let Some(url) = v["params"]["request"]["url"].as_str() {
                            self.requests.push(url.to_string());
                        }
                    } else if v["id"] == json!(id) {
                        assert!(v.get("error").is_none(), "{method}: {v}");
                        return v["result"].clone();
                    }
                }
                Some(_) => {}
                None => panic!("no answer to {method}"),
            }
        }
    }

    /// Evaluate `js` in the page; its value.
    fn eval(&mut self, js: &str) -> Value {
        let r = self.command(
            "Runtime.evaluate",
            json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(r.get("exceptionDetails").is_none(), "{js}: {r}");
        r["result"]["value"].clone()
    }

    /// Wait until `js` is true.
    fn wait_for(&mut self, js: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.eval(js) != json!(true) {
            let status = self.eval("document.getElementById('status') && document.getElementById('status').textContent");
            assert!(
                Instant::now() < deadline,
                "never true: {js} (status: {status})"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

const FILL: &str = "var set = (id, v) => { document.getElementById(id).value = v; };";

#[test]
fn portal_logs_in_changes_the_password_and_manages_users() {
    let Some(browser) = Browser::start() else {
        return;
    };
    let (_dir, s) = server("[scale.auth]\nbcrypt_cost = 4\n", &[]);
    let p = s.port;
    data(
        &call(
            p,
            "POST",
            "/user/register",
            None,
            Some(json!({
            "identities": [{"type": "username", "value": "pat"}],
            "credential": {"type": "password", "password": "pat-pass"}})),
        ),
        201,
    );
    data(
        &call(
            p,
            "POST",
            "/user/register",
            None,
            Some(json!({
            "identities": [{"type": "username", "value": "quinn"}],
            "credential": {"type": "password", "password": "quinn-pass"}})),
        ),
        201,
    );
    let ws = WsClient::connect(browser.port, &browser.page()).expect("DevTools socket");
    let mut page = Page {
        ws,
        next_id: 0,
        requests: Vec::new(),
    };
    page.command("Network.enable", json!({}));
    page.command("Page.enable", json!({}));
    let origin = format!("http://127.0.0.1:{p}");
    page.command("Page.navigate", json!({"url": format!("{origin}/admin")}));
    page.wait_for("document.readyState === 'complete' && !!document.getElementById('login-form')");

    // Log in with the first password; the portal asks for a new one.
    page.eval(&format!(
        "{FILL} set('login-username', 'admin'); set('login-password', '{ADMIN_PASSWORD}'); \
         document.getElementById('login-form').requestSubmit(); true"
    ));
    page.wait_for("!document.getElementById('reset-view').hidden");
    page.eval(&format!(
        "{FILL} set('reset-current', '{ADMIN_PASSWORD}'); set('reset-new', '{NEW_PASSWORD}'); \
         document.getElementById('reset-form').requestSubmit(); true"
    ));
    page.wait_for(
        "!document.getElementById('users-view').hidden && \
         document.getElementById('users-body').textContent.includes('pat')",
    );
    // The password really changed.
    error(
        &call(
            p,
            "POST",
            "/admin/login",
            None,
            Some(json!({"username": "admin", "password": ADMIN_PASSWORD})),
        ),
        401,
        "UNAUTHORIZED",
    );
    let api = data(
        &call(
            p,
            "POST",
            "/admin/login",
            None,
            Some(json!({"username": "admin", "password": NEW_PASSWORD})),
        ),
        200,
    );
    let token = api["token"].as_str().expect("token").to_string();

    // Search, open pat, make it an admin.
    page.eval(&format!(
        "{FILL} set('search-q', 'pat'); document.getElementById('search-form').requestSubmit(); true"
    ));
    page.wait_for("document.querySelectorAll('#users-body tr').length === 1");
    page.eval(
        "[...document.querySelectorAll('#users-body button')]\
         .find(b => b.getAttribute('aria-label') === 'View pat').click(); true",
    );
    page.wait_for(
        "!document.getElementById('detail-view').hidden && \
         document.getElementById('detail-title').textContent.includes('pat')",
    );
    page.eval(
        "document.getElementById('detail-role').value = 'admin'; \
         document.getElementById('role-form').requestSubmit(); true",
    );
    page.wait_for(
        "document.getElementById('status').textContent.includes('Role changed to admin')",
    );
    let pat = data(&call(p, "GET", "/admin/users/pat", Some(&token), None), 200);
    assert_eq!(pat["role"], json!("admin"));

    // Delete pat (the confirmation is accepted).
    page.eval(
        "window.confirm = () => true; document.getElementById('detail-delete').click(); true",
    );
    page.wait_for("document.getElementById('status').textContent.includes('Deleted pat')");
    error(
        &call(p, "GET", "/admin/users/pat", Some(&token), None),
        404,
        "NOT_FOUND",
    );

    // The list's own row controls: quinn's role, then quinn.
    page.eval(&format!(
        "{FILL} set('search-q', ''); document.getElementById('search-form').requestSubmit(); true"
    ));
    page.wait_for("!!document.querySelector('[aria-label=\"Role of quinn\"]')");
    page.eval(
        "const s = document.querySelector('[aria-label=\"Role of quinn\"]'); s.value = 'system'; \
         s.dispatchEvent(new Event('change')); true",
    );
    page.wait_for(
        "document.getElementById('status').textContent.includes('quinn changed to system')",
    );
    let quinn = data(
        &call(p, "GET", "/admin/users/quinn", Some(&token), None),
        200,
    );
    assert_eq!(quinn["role"], json!("system"));
    // A system account cannot be deleted: the list offers no delete for it until its
    // role is back to user.
    page.wait_for("!document.querySelector('[aria-label=\"Delete quinn\"]')");
    page.eval(
        "const r = document.querySelector('[aria-label=\"Role of quinn\"]'); r.value = 'user'; \
         r.dispatchEvent(new Event('change')); true",
    );
    page.wait_for("!!document.querySelector('[aria-label=\"Delete quinn\"]')");
    page.eval("document.querySelector('[aria-label=\"Delete quinn\"]').click(); true");
    page.wait_for("document.getElementById('status').textContent.includes('Deleted quinn')");
    error(
        &call(p, "GET", "/admin/users/quinn", Some(&token), None),
        404,
        "NOT_FOUND",
    );
    // Every request of the page went to the server's own origin.
    assert!(page.requests.len() >= 5, "{:?}", page.requests);
    for url in &page.requests {
        assert!(
            url.starts_with(&format!("{origin}/")),
            "a request left the origin: {url}"
        );
    }
}
