//! The emailer (spec "Authentication" 10-11): `[scale.emailer] provider` is resolved in
//! the spec's order: the built-in `smtp` provider (lettre, STARTTLS, optional auth,
//! timeout), then a provider registered programmatically by name ([`register_provider`];
//! `log` is registered by default and writes mails to the server log, for development),
//! then the `package.module:ClassName` form: an `obj` in `<app dir>/package/module.svc`
//! implementing `send_email(...)` and `is_ready()` ([`super::svc_emailer`]). An empty,
//! unknown or failing provider disables e-mail with a logged message; the server keeps
//! running.
//!
//! Sending happens on a dedicated thread ("svc-mailer") running its own tokio runtime:
//! HTTP handlers hand a mail over and await the outcome without blocking their worker,
//! and the SMTP connection pool lives on one runtime. A `.svc` provider's module is loaded
//! and run on that thread too (an svc program never leaves the thread that loaded it).

use super::svc_emailer;
use crate::config::{EmailerConfig, SmtpConfig};
use actors::identity::MailSender;
use actors::identity::mail::Sending;
use futures_util::future::BoxFuture;
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// `From:` when `from_address` is empty.
pub const DEFAULT_FROM: &str = "no-reply@localhost";

pub use actors::identity::Mail;

/// A mail provider: `send_email` and `is_ready`, as the spec's custom emailer interface.
pub trait EmailProvider: Send + Sync + 'static {
    /// Send one message; runs on the mailer thread's runtime.
    fn send_email(&self, mail: Mail, from: String) -> BoxFuture<'static, Result<(), String>>;

    /// Whether the provider can send (checked at startup).
    fn is_ready(&self) -> bool {
        true
    }
}

/// Builds a provider from `[scale.emailer]`; called on the mailer thread's runtime.
pub type ProviderFactory = fn(&EmailerConfig) -> Result<Arc<dyn EmailProvider>, String>;

/// Where the provider comes from.
enum Source {
    /// `smtp` or a registered name.
    Factory(ProviderFactory),
    /// `package.module:ClassName`.
    Svc,
}

fn registry() -> &'static Mutex<Vec<(String, ProviderFactory)>> {
    static REGISTRY: OnceLock<Mutex<Vec<(String, ProviderFactory)>>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(Vec::new()))
}

/// Register the providers this build ships besides `smtp` (once, before the first
/// lookup; a name registered earlier by the embedding program is kept).
fn register_builtins() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if lookup("log").is_none() {
            register_provider("log", log_provider);
        }
    });
}

/// Register a provider under `name` (a later registration of the same name wins).
/// `smtp` is built in and cannot be replaced.
pub fn register_provider(name: &str, factory: ProviderFactory) {
    let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
    reg.retain(|(n, _)| n != name);
    reg.push((name.to_string(), factory));
}

fn registered(name: &str) -> Option<ProviderFactory> {
    register_builtins();
    lookup(name)
}

fn lookup(name: &str) -> Option<ProviderFactory> {
    let reg = registry().lock().unwrap_or_else(|e| e.into_inner());
    reg.iter().find(|(n, _)| n == name).map(|(_, f)| *f)
}

/// A started emailer: the provider on the mailer thread.
pub struct Mailer {
    from: String,
    provider: Arc<dyn EmailProvider>,
    runtime: tokio::runtime::Handle,
    /// Dropping the last handle stops the mailer thread.
    _stop: Arc<tokio::sync::oneshot::Sender<()>>,
}

impl Mailer {
    /// The emailer of `config`, or `None` (e-mail disabled, with the reason logged).
    pub fn start(config: &EmailerConfig) -> Option<Mailer> {
        let name = config.provider.trim().to_string();
        if !config.enabled {
            tracing::info!("e-mail is disabled ([scale.emailer] enabled = false)");
            return None;
        }
        if name.is_empty() {
            tracing::info!(
                "e-mail is disabled (no [scale.emailer] provider): verification mails and password \
                 reset are off"
            );
            return None;
        }
        let source = if name == "smtp" {
            Source::Factory(smtp_provider)
        } else if let Some(f) = registered(&name) {
            Source::Factory(f)
        } else if svc_emailer::is_class_form(&name) {
            Source::Svc
        } else {
            tracing::error!(
                provider = %name,
                "e-mail is disabled: unknown emailer provider (not `smtp`, a registered name or \
                 `package.module:ClassName`)"
            );
            return None;
        };
        if !config.options.is_empty() && !matches!(source, Source::Svc) {
            let keys: Vec<&str> = config.options.keys().map(String::as_str).collect();
            tracing::warn!(
                provider = %name,
                "[scale.emailer] keys {keys:?} ignored: only a `package.module:ClassName` \
                 provider reads them"
            );
        }
        let from = if config.from_address.is_empty() {
            tracing::warn!("[scale.emailer] from_address is empty; sending as {DEFAULT_FROM}");
            DEFAULT_FROM.to_string()
        } else {
            config.from_address.clone()
        };
        if from.parse::<Mailbox>().is_err() {
            tracing::error!(from_address = %from, "e-mail is disabled: from_address is not a valid address");
            return None;
        }
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let config = config.clone();
        let sender = from.clone();
        let mut builder = std::thread::Builder::new().name("svc-mailer".into());
        if matches!(source, Source::Svc) {
            // The interpreter runs here: give it the stack walkers get (reserved, not
            // committed), so deep recursion ends in a RecursionError, not a crash.
            builder = builder.stack_size(lang::driver::INTERPRETER_STACK_BYTES);
        }
        let spawned = builder.spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("cannot start the mailer runtime: {e}")));
                    return;
                }
            };
            let handle = runtime.handle().clone();
            match source {
                Source::Factory(factory) => {
                    let built = runtime.block_on(async { factory(&config) });
                    let _ = ready_tx.send(built.map(|p| (p, handle)));
                    let _ = runtime.block_on(stop_rx);
                }
                Source::Svc => match svc_emailer::start(&config, &sender) {
                    Ok((provider, worker)) => {
                        let _ = ready_tx.send(Ok((provider, handle)));
                        runtime.block_on(worker.run(stop_rx));
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                },
            }
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "e-mail is disabled: cannot start the mailer thread");
            return None;
        }
        let (provider, runtime) = match ready_rx.recv() {
            Ok(Ok(started)) => started,
            Ok(Err(e)) => {
                tracing::error!(provider = %name, error = %e, "e-mail is disabled: the provider failed to start");
                return None;
            }
            Err(_) => {
                tracing::error!(provider = %name, "e-mail is disabled: the mailer thread stopped");
                return None;
            }
        };
        if !provider.is_ready() {
            tracing::error!(provider = %name, "e-mail is disabled: the provider is not ready");
            return None;
        }
        tracing::info!(provider = %name, from = %from, "e-mail enabled");
        Some(Mailer {
            from,
            provider,
            runtime,
            _stop: Arc::new(stop_tx),
        })
    }
}

/// The identity service hands its mails over here.
impl MailSender for Mailer {
    /// Send and await the outcome (the caller only waits; the work runs on the mailer
    /// thread).
    fn send(&self, mail: Mail) -> Sending {
        let from = mail.from.clone().unwrap_or_else(|| self.from.clone());
        let job = self.runtime.spawn(self.provider.send_email(mail, from));
        Box::pin(async move {
            match job.await {
                Ok(result) => result,
                Err(e) => Err(format!("the mail task failed: {e}")),
            }
        })
    }

    /// Send without waiting; a failure is logged.
    fn send_in_background(&self, mail: Mail) {
        let from = mail.from.clone().unwrap_or_else(|| self.from.clone());
        let to = mail.to.clone();
        let job = self.provider.send_email(mail, from);
        self.runtime.spawn(async move {
            if let Err(e) = job.await {
                tracing::error!(to = %to, error = %e, "cannot send mail");
            }
        });
    }
}

/// A lettre message from a `Mail`.
pub fn build_message(mail: &Mail, from: &str) -> Result<Message, String> {
    let from: Mailbox = from.parse().map_err(|e| format!("bad from address: {e}"))?;
    let to: Mailbox = mail
        .to
        .parse()
        .map_err(|e| format!("bad recipient address: {e}"))?;
    let builder = Message::builder()
        .from(from)
        .to(to)
        .subject(mail.subject.clone());
    let built = match &mail.body_html {
        Some(html) => builder.multipart(MultiPart::alternative_plain_html(
            mail.body_text.clone(),
            html.clone(),
        )),
        None => builder.singlepart(
            SinglePart::builder()
                .header(ContentType::TEXT_PLAIN)
                .body(mail.body_text.clone()),
        ),
    };
    built.map_err(|e| format!("cannot build the message: {e}"))
}

/// The built-in SMTP provider.
struct Smtp {
    transport: AsyncSmtpTransport<Tokio1Executor>,
}

impl EmailProvider for Smtp {
    fn send_email(&self, mail: Mail, from: String) -> BoxFuture<'static, Result<(), String>> {
        let transport = self.transport.clone();
        Box::pin(async move {
            let message = build_message(&mail, &from)?;
            transport
                .send(message)
                .await
                .map(|_| ())
                .map_err(|e| format!("SMTP: {e}"))
        })
    }
}

/// The SMTP transport of `[scale.emailer.smtp]`.
pub fn smtp_transport(c: &SmtpConfig) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(c.host.as_str())
        .port(c.port)
        .timeout(Some(Duration::from_secs_f64(c.timeout)));
    if c.use_tls {
        let mut params = TlsParameters::builder(c.host.clone());
        if let Some(path) = &c.ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| format!("cannot read ca_file {}: {e}", path.display()))?;
            let cert = Certificate::from_pem(&pem)
                .map_err(|e| format!("ca_file {}: {e}", path.display()))?;
            params = params.add_root_certificate(cert);
        }
        let params = params
            .build_rustls()
            .map_err(|e| format!("TLS setup: {e}"))?;
        builder = builder.tls(Tls::Required(params));
    } else {
        builder = builder.tls(Tls::None);
    }
    if !c.username.is_empty() {
        builder = builder.credentials(Credentials::new(c.username.clone(), c.password.clone()));
    }
    Ok(builder.build())
}

fn smtp_provider(config: &EmailerConfig) -> Result<Arc<dyn EmailProvider>, String> {
    let transport = smtp_transport(&config.smtp)?;
    let probe = transport.clone();
    let target = format!("{}:{}", config.smtp.host, config.smtp.port);
    // A reachability probe for the log only: a relay that is down at start may be up by
    // the first mail.
    tokio::spawn(async move {
        match probe.test_connection().await {
            Ok(true) => tracing::info!(server = %target, "SMTP server reachable"),
            Ok(false) | Err(_) => {
                tracing::warn!(server = %target, "SMTP server not reachable now; mails will be retried per request");
            }
        }
    });
    Ok(Arc::new(Smtp { transport }))
}

/// `log`: writes each mail to the server log (target `svc::mail`). Development only:
/// the log then holds verification and reset tokens.
struct LogMailer;

impl EmailProvider for LogMailer {
    fn send_email(&self, mail: Mail, from: String) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move {
            tracing::info!(
                target: "svc::mail",
                from = %from,
                to = %mail.to,
                subject = %mail.subject,
                "{}",
                mail.body_text
            );
            Ok(())
        })
    }
}

fn log_provider(_: &EmailerConfig) -> Result<Arc<dyn EmailProvider>, String> {
    tracing::warn!(
        "the `log` emailer writes mails (and their tokens) to the log: development only"
    );
    Ok(Arc::new(LogMailer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_configurations() {
        let mut c = EmailerConfig::default();
        assert!(Mailer::start(&c).is_none(), "empty provider");
        c.provider = "nope".into();
        assert!(Mailer::start(&c).is_none(), "unknown provider");
        c.provider = "pkg.mod:Mailer".into();
        assert!(Mailer::start(&c).is_none(), "no such module");
        c.provider = "log".into();
        c.enabled = false;
        assert!(Mailer::start(&c).is_none(), "enabled = false");
        c.enabled = true;
        c.from_address = "not an address".into();
        assert!(Mailer::start(&c).is_none(), "bad from");
    }

    #[actix_web::test]
    async fn registered_providers_send() {
        struct Count;
        static SENT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        impl EmailProvider for Count {
            fn send_email(&self, m: Mail, from: String) -> BoxFuture<'static, Result<(), String>> {
                Box::pin(async move {
                    assert_eq!((m.to.as_str(), from.as_str()), ("a@b.io", "me@x.io"));
                    SENT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(())
                })
            }
        }
        fn count(_: &EmailerConfig) -> Result<Arc<dyn EmailProvider>, String> {
            Ok(Arc::new(Count))
        }
        register_provider("count", count);
        let c = EmailerConfig {
            provider: "count".into(),
            from_address: "me@x.io".into(),
            ..EmailerConfig::default()
        };
        let m = Mailer::start(&c).expect("started");
        let mail = Mail {
            to: "a@b.io".into(),
            subject: "s".into(),
            body_text: "b".into(),
            body_html: None,
            from: None,
        };
        m.send(mail).await.expect("sent");
        assert_eq!(SENT.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn messages() {
        let mail = Mail {
            to: "Bob@Example.com".into(),
            subject: "Hi".into(),
            body_text: "text".into(),
            body_html: Some("<p>html</p>".into()),
            from: None,
        };
        let m = build_message(&mail, "me@x.io").expect("built");
        let text = String::from_utf8(m.formatted()).expect("utf-8");
        assert!(text.contains("Subject: Hi") && text.contains("multipart/alternative"));
        assert!(build_message(&mail, "nope").is_err());
    }
}
