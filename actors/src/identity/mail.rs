//! The mails of the identity service (verification, password reset) and the
//! [`MailSender`] it sends them with. The server plugs its emailer in (SMTP, a
//! registered provider, or one written in svc); the service only composes messages.

use super::AuthSettings;
use std::future::Future;
use std::pin::Pin;

/// One outgoing message.
#[derive(Clone, Debug)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub body_text: String,
    pub body_html: Option<String>,
    /// `None` = the configured `from_address`.
    pub from: Option<String>,
}

/// The outcome of a send, `Err` with the reason.
pub type Sending = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'static>>;

/// Where the service hands mails over.
pub trait MailSender: Send + Sync + 'static {
    /// Send and await the outcome (the caller only waits; the work runs elsewhere).
    fn send(&self, mail: Mail) -> Sending;

    /// Send without waiting; a failure is logged.
    fn send_in_background(&self, mail: Mail);
}

/// The link (or bare token) a mail carries.
fn link(template: &str, token: &str) -> String {
    if template.is_empty() {
        token.to_string()
    } else {
        template.replace("{token}", token)
    }
}

pub(super) fn verification_mail(auth: &AuthSettings, to: &str, token: &str) -> Mail {
    let hours = auth.verify_token_ttl_seconds.div_ceil(3600);
    let link = link(&auth.verify_url_template, token);
    let what = if auth.verify_url_template.is_empty() {
        "Your e-mail verification token"
    } else {
        "Open this link to verify your e-mail address"
    };
    Mail {
        to: to.to_string(),
        subject: "Verify your e-mail address".into(),
        body_text: format!(
            "{what}:\n\n{link}\n\nIt expires in {hours} hour(s) and works once. If you did not \
             ask for this, ignore this message.\n"
        ),
        body_html: None,
        from: None,
    }
}

pub(super) fn reset_mail(auth: &AuthSettings, to: &str, token: &str) -> Mail {
    let minutes = auth.reset_token_ttl_seconds.div_ceil(60);
    let link = link(&auth.reset_url_template, token);
    let what = if auth.reset_url_template.is_empty() {
        "Your password reset token"
    } else {
        "Open this link to choose a new password"
    };
    Mail {
        to: to.to_string(),
        subject: "Reset your password".into(),
        body_text: format!(
            "{what}:\n\n{link}\n\nIt expires in {minutes} minute(s) and works once. If you did \
             not ask for a reset, ignore this message: your password is unchanged.\n"
        ),
        body_html: None,
        from: None,
    }
}
