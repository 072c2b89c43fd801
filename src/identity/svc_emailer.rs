//! An e-mail provider written in svc (spec "Authentication" 10): `[scale.emailer]
//! provider = "package.module:ClassName"` names an `obj` in `<app dir>/package/module.svc`
//! (dots are directories). The module is loaded once, on the mailer thread, with its own
//! in-memory graph ([`MemoryHost`]: not the app's store); it must define the obj with
//!
//! - `def send_email(to_addr: str, subject: str, body_text: str, body_html: str | None = None,
//!   from_addr: str | None = None) -> bool` — `True` = sent; `False` or an exception is a
//!   send failure, handled like an SMTP failure;
//! - `def is_ready() -> bool` — called once at start; anything but `True` disables e-mail.
//!
//! Each call builds a fresh instance whose `has` fields come from `[scale.emailer]`: the
//! obj may declare `has config: dict = {}` (the whole section: `provider`, `from_address`
//! (the sender in use), `enabled` and every other key, without the `smtp` sub-table) and/or
//! fields named after single keys (`has api_key: str = ""`); keys it does not declare are
//! ignored. Mail calls pass `from_addr` only when the mail names its own sender, else
//! `None`. Whatever the module prints is logged (target `svc::mail`). An empty or invalid
//! provider, a missing module, obj or method, or a failing `is_ready` disables e-mail with
//! the reason logged; the server keeps running.
//!
//! The module runs under the interpreter host rules of walkers: on a thread with
//! `lang::driver::INTERPRETER_STACK_BYTES` of stack (the mailer thread, see
//! `email::Mailer::start`) and with the server's call limits (`server::Settings::limits`:
//! depth, and the call timeout), so deep recursion is a clean `RecursionError` and an
//! endless loop a timeout, never a crashed server.

use super::email::{EmailProvider, Mail};
use crate::config::EmailerConfig;
use futures_util::future::BoxFuture;
use lang::Limits;
use lang::host::MemoryHost;
use lang::serve::{self, CallError, InterfaceError, Program};
use serde_json::{Map, Value as Json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Whether `provider` has the `package.module:ClassName` form (rather than a name).
pub fn is_class_form(provider: &str) -> bool {
    provider.contains(':')
}

/// A parsed `package.module:ClassName`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassRef {
    /// `["package", "module"]`.
    pub module: Vec<String>,
    pub class: String,
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ClassRef {
    pub fn parse(provider: &str) -> Result<ClassRef, String> {
        let bad = || {
            format!(
                "provider `{provider}` is not of the form `package.module:ClassName` (identifiers \
                 separated by dots, then `:` and the obj's name)"
            )
        };
        let (module, class) = provider.trim().split_once(':').ok_or_else(bad)?;
        let module: Vec<String> = module.split('.').map(str::to_string).collect();
        if !module.iter().all(|m| is_identifier(m)) || !is_identifier(class) {
            return Err(bad());
        }
        Ok(ClassRef {
            module,
            class: class.to_string(),
        })
    }

    /// The module's file: `<app_dir>/package/module.svc`.
    pub fn path(&self, app_dir: &Path) -> PathBuf {
        let mut path = app_dir.to_path_buf();
        for part in &self.module {
            path.push(part);
        }
        path.set_extension("svc");
        path
    }
}

/// One mail for the worker.
struct Job {
    mail: Mail,
    reply: oneshot::Sender<Result<(), String>>,
}

/// The provider handed to the HTTP side: it queues mails for the [`Worker`].
struct SvcEmailer {
    jobs: mpsc::UnboundedSender<Job>,
}

impl EmailProvider for SvcEmailer {
    fn send_email(&self, mail: Mail, _from: String) -> BoxFuture<'static, Result<(), String>> {
        let (reply, answer) = oneshot::channel();
        let queued = self.jobs.send(Job { mail, reply });
        Box::pin(async move {
            if queued.is_err() {
                return Err("the svc emailer has stopped".into());
            }
            answer
                .await
                .unwrap_or_else(|_| Err("the svc emailer stopped before answering".into()))
        })
    }
}

/// The loaded module, on the mailer thread (a [`Program`] is `!Send`).
pub struct Worker {
    /// `ClassName`, for messages.
    class: String,
    program: Program,
    host: MemoryHost,
    limits: Limits,
    fields: Map<String, Json>,
    jobs: mpsc::UnboundedReceiver<Job>,
}

/// Load and check the provider of `config` (sending as `from`): the module, the obj and
/// its methods, then `is_ready()`. Runs on the mailer thread; `Err` is the reason e-mail
/// is disabled.
pub fn start(
    config: &EmailerConfig,
    from: &str,
) -> Result<(Arc<dyn EmailProvider>, Worker), String> {
    let class_ref = ClassRef::parse(&config.provider)?;
    let path = class_ref.path(&config.app_dir);
    if !path.is_file() {
        return Err(format!(
            "module {} not found (provider `{}`; `package.module` maps to \
             <app dir>/package/module.svc)",
            path.display(),
            config.provider
        ));
    }
    // The limits of walker calls: each `send_email`/`is_ready` call (and loading the
    // module) gets the call timeout.
    // (The defaults of `[scale.limits]`: the mailer is configured before the server's
    // settings exist.)
    let limits = crate::server::call_limits(&crate::config::LimitsConfig::default());
    let mut host = MemoryHost::new();
    let loaded = serve::load_app(&path, &mut host, &limits);
    log_output(&mut host, &class_ref.class);
    let loaded = loaded.map_err(|e| format!("cannot load {}: {}", path.display(), e.trim()))?;
    let class = class_ref.class;
    check_interface(&loaded.program, &mut host, &limits, &class, &path)?;
    let (tx, rx) = mpsc::unbounded_channel();
    let mut worker = Worker {
        fields: fields(config, from),
        class,
        program: loaded.program,
        host,
        limits,
        jobs: rx,
    };
    worker.ready()?;
    Ok((Arc::new(SvcEmailer { jobs: tx }), worker))
}

/// The obj's fields: `config` (the section) and each key of it.
fn fields(config: &EmailerConfig, from: &str) -> Map<String, Json> {
    let mut section = Map::new();
    section.insert("provider".into(), Json::String(config.provider.clone()));
    section.insert("from_address".into(), Json::String(from.to_string()));
    section.insert("enabled".into(), Json::Bool(config.enabled));
    for (k, v) in &config.options {
        section.insert(k.clone(), v.clone());
    }
    let mut fields = section.clone();
    fields.insert("config".into(), Json::Object(section));
    fields
}

/// Log what the module printed (and forget it).
fn log_output(host: &mut MemoryHost, class: &str) {
    let out = std::mem::take(&mut host.stdout);
    let out = out.trim_end();
    if !out.is_empty() {
        tracing::info!(target: "svc::mail", emailer = %class, "{out}");
    }
}

/// The message of a failed call.
fn describe(e: CallError) -> String {
    match e {
        CallError::Runtime { message, .. } => message,
        CallError::Validation(problems) => problems
            .iter()
            .map(|(field, m)| format!("field `{field}`: {m}"))
            .collect::<Vec<_>>()
            .join("; "),
        CallError::NotFound(m)
        | CallError::Limit(m)
        | CallError::Conflict(m)
        | CallError::ConflictAfterCommit(m)
        | CallError::ResponseTooLarge(m)
        | CallError::Overloaded(m)
        | CallError::Unavailable(m)
        | CallError::Host(m) => m,
        CallError::Cancelled => "cancelled".into(),
    }
}

/// The module defines obj `class` with `send_email` taking the spec's five arguments
/// positionally and `is_ready` taking none.
fn check_interface(
    program: &Program,
    host: &mut MemoryHost,
    limits: &Limits,
    class: &str,
    path: &Path,
) -> Result<(), String> {
    let interface = [
        (
            "send_email",
            5,
            "send_email(to_addr: str, subject: str, body_text: str, body_html: str | None = \
             None, from_addr: str | None = None) -> bool",
        ),
        ("is_ready", 0, "is_ready() -> bool"),
    ];
    let methods: Vec<(&str, usize)> = interface.iter().map(|(m, n, _)| (*m, *n)).collect();
    serve::check_object_interface(program, host, limits, class, &methods).map_err(|e| match e {
        InterfaceError::Missing => format!("{} defines no obj `{class}`", path.display()),
        InterfaceError::NotAType => format!("`{class}` in {} is not an obj", path.display()),
        InterfaceError::NotAnObject => format!(
            "`{class}` in {} is not an obj (a node, edge or walker cannot be an emailer)",
            path.display()
        ),
        InterfaceError::Method(i) => format!(
            "obj `{class}` in {} does not implement the emailer interface: it needs \
             `def {}`",
            path.display(),
            interface[i].2
        ),
    })
}

impl Worker {
    /// Serve mails until `stop` fires (or every provider handle is gone).
    pub async fn run(mut self, stop: oneshot::Receiver<()>) {
        tokio::pin!(stop);
        loop {
            tokio::select! {
                job = self.jobs.recv() => match job {
                    Some(job) => {
                        let outcome = self.deliver(&job.mail);
                        let _ = job.reply.send(outcome);
                    }
                    None => break,
                },
                _ = &mut stop => break,
            }
        }
    }

    /// `is_ready()` must answer `True`.
    fn ready(&mut self) -> Result<(), String> {
        match self.call("is_ready", &[]) {
            Ok(Json::Bool(true)) => Ok(()),
            Ok(Json::Bool(false)) => Err(format!("{}.is_ready() returned False", self.class)),
            Ok(other) => Err(format!(
                "{}.is_ready() returned {other}, not a bool",
                self.class
            )),
            Err(e) => Err(format!("{}.is_ready() failed: {e}", self.class)),
        }
    }

    /// One `send_email` call: `Ok` when it returned `True`.
    pub fn deliver(&mut self, mail: &Mail) -> Result<(), String> {
        let opt = |s: &Option<String>| s.clone().map_or(Json::Null, Json::String);
        let args = [
            Json::String(mail.to.clone()),
            Json::String(mail.subject.clone()),
            Json::String(mail.body_text.clone()),
            opt(&mail.body_html),
            opt(&mail.from),
        ];
        match self.call("send_email", &args) {
            Ok(Json::Bool(true)) => Ok(()),
            Ok(Json::Bool(false)) => Err(format!("{}.send_email returned False", self.class)),
            Ok(other) => Err(format!(
                "{}.send_email returned {other}, not a bool",
                self.class
            )),
            Err(e) => Err(format!("{}.send_email failed: {e}", self.class)),
        }
    }

    fn call(&mut self, method: &str, args: &[Json]) -> Result<Json, String> {
        let out = serve::call_object_method(
            &self.program,
            &mut self.host,
            &self.limits,
            &self.class,
            &self.fields,
            method,
            args,
        );
        log_output(&mut self.host, &self.class);
        out.map_err(describe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh app directory holding `mail/outbox.svc`, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(module: &str) -> Dir {
            use std::sync::atomic::{AtomicUsize, Ordering};
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "svc-emailer-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(dir.join("mail")).expect("dir");
            std::fs::write(dir.join("mail/outbox.svc"), module).expect("module");
            Dir(dir)
        }

        fn config(&self, class: &str) -> EmailerConfig {
            let mut c = EmailerConfig {
                provider: format!("mail.outbox:{class}"),
                from_address: "me@x.io".into(),
                app_dir: self.0.clone(),
                ..EmailerConfig::default()
            };
            c.options
                .insert("api_key".into(), Json::String("k-1".into()));
            c
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const MODULE: &str = r#"
obj Recorder {
    has api_key: str = "";
    has config: dict = {};

    def send_email(to_addr: str, subject: str, body_text: str, body_html: str | None = None,
                   from_addr: str | None = None) -> bool {
        return to_addr.endswith("@ok.io") and self.api_key == "k-1"
            and self.config["from_address"] == "me@x.io" and body_html is None;
    }

    def is_ready() -> bool {
        return self.api_key != "";
    }
}

obj Crasher {
    def send_email(to_addr: str, subject: str, body_text: str, body_html: str | None = None,
                   from_addr: str | None = None) -> bool {
        raise ValueError("relay refused " + to_addr);
    }

    def is_ready() -> bool {
        return True;
    }
}

obj NotReady {
    def send_email(to_addr: str, subject: str, body_text: str, body_html: str | None = None,
                   from_addr: str | None = None) -> bool {
        return True;
    }

    def is_ready() -> bool {
        return False;
    }
}

obj Short {
    def send_email(to_addr: str, subject: str) -> bool {
        return True;
    }

    def is_ready() -> bool {
        return True;
    }
}

obj NoReady {
    def send_email(*args: list) -> bool {
        return True;
    }
}

node Place {}
"#;

    fn mail(to: &str) -> Mail {
        Mail {
            to: to.into(),
            subject: "s".into(),
            body_text: "b".into(),
            body_html: None,
            from: None,
        }
    }

    fn start_err(dir: &Dir, class: &str) -> String {
        match start(&dir.config(class), "me@x.io") {
            Ok(_) => panic!("{class} started"),
            Err(e) => e,
        }
    }

    #[test]
    fn class_references() {
        let r = ClassRef::parse("mail.outbox:Recorder").expect("parsed");
        assert_eq!(
            r.path(Path::new("/app")),
            PathBuf::from("/app/mail/outbox.svc")
        );
        assert_eq!(
            ClassRef::parse("outbox:R").expect("parsed").module,
            vec!["outbox".to_string()]
        );
        for bad in [
            "mail.outbox",
            "mail..outbox:R",
            "../x:R",
            "mail/x:R",
            "m:",
            ":R",
            "m:R:S",
        ] {
            assert!(ClassRef::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn loads_checks_and_sends() {
        let dir = Dir::new(MODULE);
        let (_, mut w) = start(&dir.config("Recorder"), "me@x.io").expect("started");
        assert_eq!(w.deliver(&mail("a@ok.io")), Ok(()));
        let refused = w.deliver(&mail("a@no.io")).expect_err("refused");
        assert!(refused.contains("returned False"), "{refused}");

        let (_, mut w) = start(&dir.config("Crasher"), "me@x.io").expect("started");
        let e = w.deliver(&mail("z@ok.io")).expect_err("raised");
        assert!(e.contains("relay refused z@ok.io"), "{e}");

        assert!(start_err(&dir, "NotReady").contains("returned False"));
        assert!(start_err(&dir, "Short").contains("emailer interface"));
        assert!(start_err(&dir, "NoReady").contains("is_ready"));
        assert!(start_err(&dir, "Place").contains("not an obj"));
        assert!(start_err(&dir, "Nope").contains("defines no obj"));
        let mut no_key = dir.config("Recorder");
        no_key.options.clear();
        assert!(start(&no_key, "me@x.io").is_err(), "is_ready is false");
        let mut missing = dir.config("Recorder");
        missing.provider = "mail.absent:Recorder".into();
        assert!(start(&missing, "me@x.io").is_err_and(|e| e.contains("not found")));
        let broken = Dir::new("obj Broken {");
        assert!(start_err(&broken, "Broken").contains("cannot load"));
    }
}
