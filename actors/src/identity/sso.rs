//! Single sign-on with OpenID Connect providers (spec "SSO endpoints", "Authentication"
//! 8): the settings, and the protocol work the service does for a login: discovery of a
//! provider's endpoints from its issuer (`/.well-known/openid-configuration`, cached),
//! the authorization URL with `state`, `nonce` and PKCE (S256), the code exchange at the
//! token endpoint and the account claims from the ID token and the userinfo endpoint.
//!
//! Trust: the ID token comes straight from the token endpoint over the connection the
//! server opened itself (TLS to the issuer's host), so its signature is not checked
//! (OpenID Connect Core 3.1.3.7 allows it); its `iss`, `aud`, `exp` and `nonce` are. An
//! issuer must be `https://` except on a loopback host (local providers in tests).
//! Every outbound request has a timeout and a response-size bound, never follows
//! redirects, and its failures are 502 `SSO_PROVIDER_ERROR` to the client.

use super::{ErrorKind, IdentityError};
use base64::Engine as _;
use serde_json::{Map, Value as Json};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The platform names of the spec's three providers (the original's literal names);
/// `[scale.sso.<name>]` may add more (any OpenID Connect provider).
pub const PLATFORMS: [&str; 3] = ["google", "apple", "github"];

/// Whether `name` can be a platform name (a path segment and a config key).
pub fn valid_platform_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        && name.len() <= 32
}

/// One provider's settings (`[scale.sso.<platform>]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderSettings {
    pub platform: String,
    pub client_id: String,
    pub client_secret: String,
    /// The OpenID issuer whose discovery document names the endpoints.
    pub issuer: String,
    /// Space-separated scopes of the authorization request.
    pub scopes: String,
    /// `response_mode` of the authorization request; empty = the provider's default.
    pub response_mode: String,
}

impl ProviderSettings {
    /// Enabled when both the client id and the secret are set (spec).
    pub fn configured(&self) -> bool {
        !self.client_id.is_empty() && !self.client_secret.is_empty()
    }
}

/// `[scale.sso]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsoSettings {
    /// The server's public base URL (`https://app.example.com`); empty = taken from
    /// each request.
    pub host: String,
    /// Where the callback sends the browser: `<url>?token=` or `<url>?error=&message=`;
    /// empty = the callback answers JSON.
    pub client_auth_callback_url: String,
    /// One entry per platform of [`PLATFORMS`], then any other configured one.
    pub providers: Vec<ProviderSettings>,
    /// How long a login may take between the redirect and the callback.
    pub state_ttl_seconds: u64,
    /// Logins in flight at most (each is a row until its callback or expiry).
    pub max_pending_logins: u64,
    /// Timeout of each request to a provider.
    pub http_timeout_seconds: u64,
    /// How long a discovery document is reused.
    pub discovery_ttl_seconds: u64,
    /// Largest response read from a provider.
    pub max_response_bytes: usize,
}

impl Default for SsoSettings {
    fn default() -> SsoSettings {
        SsoSettings {
            host: String::new(),
            client_auth_callback_url: String::new(),
            providers: Vec::new(),
            state_ttl_seconds: 600,
            max_pending_logins: 10_000,
            http_timeout_seconds: 10,
            discovery_ttl_seconds: 3600,
            max_response_bytes: 1_048_576,
        }
    }
}

impl SsoSettings {
    pub fn provider(&self, platform: &str) -> Option<&ProviderSettings> {
        self.providers.iter().find(|p| p.platform == platform)
    }
}

/// The endpoints of a provider, from its discovery document.
#[derive(Clone, Debug)]
pub struct Discovery {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub userinfo_endpoint: Option<String>,
    pub auth_methods: Vec<String>,
    at: Instant,
}

/// What the provider says about the signed-in person.
#[derive(Clone, Debug, Default)]
pub struct ExternalAccount {
    pub external_id: String,
    pub email: Option<String>,
    pub email_verified: bool,
    pub display_name: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub picture: Option<String>,
}

fn provider_error(message: impl Into<String>) -> IdentityError {
    IdentityError::new(ErrorKind::ProviderError, message)
}

pub fn sso_failed(message: impl Into<String>) -> IdentityError {
    IdentityError::new(ErrorKind::SsoFailed, message)
}

/// URL-safe base64 without padding.
pub fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The PKCE S256 challenge of a verifier.
pub fn pkce_challenge(verifier: &str) -> String {
    b64url(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes()).as_ref())
}

/// `application/x-www-form-urlencoded` encoding of one value.
pub fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `k=v&k=v`, encoded.
pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `https://`, or `http://` on a loopback host.
fn acceptable_url(url: &str) -> bool {
    if url.starts_with("https://") {
        return true;
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// The outbound side of SSO: one HTTP client, the discovery cache.
pub struct OidcClient {
    /// Made by the first outbound request, not at start: building it loads the
    /// platform's CA roots (about 30 ms of CPU, a third of `svc start`'s start-up, and
    /// their memory) for a server that may never see an SSO login. A build failure is
    /// kept and answered to every SSO request.
    http: OnceLock<Result<reqwest::Client, String>>,
    timeout: Duration,
    max_response_bytes: usize,
    discovery_ttl: Duration,
    cache: Mutex<HashMap<String, Discovery>>,
}

impl OidcClient {
    pub fn new(settings: &SsoSettings) -> OidcClient {
        OidcClient {
            http: OnceLock::new(),
            timeout: Duration::from_secs(settings.http_timeout_seconds.max(1)),
            max_response_bytes: settings.max_response_bytes,
            discovery_ttl: Duration::from_secs(settings.discovery_ttl_seconds),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the HTTP client has been made (by a first SSO request).
    pub fn client_made(&self) -> bool {
        self.http.get().is_some()
    }

    /// The HTTP client, made on first use.
    fn http(&self) -> Result<&reqwest::Client, IdentityError> {
        let made = self.http.get_or_init(|| {
            reqwest::Client::builder()
                .timeout(self.timeout)
                .connect_timeout(self.timeout)
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("svc/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| format!("cannot build the SSO HTTP client: {e}"))
        });
        made.as_ref().map_err(|text| {
            tracing::error!("SSO: {text}");
            provider_error(text.clone())
        })
    }

    /// Send a request and read its JSON object answer within the size bound; the
    /// status comes back with it (error bodies are JSON objects too).
    async fn json(
        &self,
        req: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<(u16, Map<String, Json>), IdentityError> {
        let mut resp = req.send().await.map_err(|e| {
            tracing::warn!(error = %e, "SSO: {what} failed");
            provider_error(format!(
                "the identity provider could not be reached ({what})"
            ))
        })?;
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > self.max_response_bytes {
                        return Err(provider_error(format!(
                            "the identity provider's {what} answer is larger than {} bytes",
                            self.max_response_bytes
                        )));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "SSO: reading the {what} answer failed");
                    return Err(provider_error(format!(
                        "the identity provider's {what} answer could not be read"
                    )));
                }
            }
        }
        match serde_json::from_slice::<Json>(&body) {
            Ok(Json::Object(map)) => Ok((status, map)),
            _ => Err(provider_error(format!(
                "the identity provider's {what} answer (HTTP {status}) is not a JSON object"
            ))),
        }
    }

    /// The provider's endpoints, from the cache or its discovery document.
    pub async fn discover(&self, issuer: &str) -> Result<Discovery, IdentityError> {
        let issuer = issuer.trim_end_matches('/');
        if !acceptable_url(issuer) {
            return Err(IdentityError::new(
                ErrorKind::NotImplemented,
                format!("the SSO issuer `{issuer}` must be an https:// URL"),
            ));
        }
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(d) = cache
                .get(issuer)
                .filter(|d| d.at.elapsed() < self.discovery_ttl)
            {
                return Ok(d.clone());
            }
        }
        let url = format!("{issuer}/.well-known/openid-configuration");
        let (status, doc) = self.json(self.http()?.get(&url), "discovery").await?;
        if status != 200 {
            return Err(provider_error(format!(
                "the identity provider's discovery document answered HTTP {status}"
            )));
        }
        let text = |k: &str| doc.get(k).and_then(Json::as_str).map(str::to_string);
        let endpoint = |k: &str| -> Result<String, IdentityError> {
            text(k).filter(|u| acceptable_url(u)).ok_or_else(|| {
                provider_error(format!("the discovery document has no usable `{k}`"))
            })
        };
        let found_issuer = text("issuer").unwrap_or_default();
        if found_issuer.trim_end_matches('/') != issuer {
            return Err(provider_error(format!(
                "the discovery document names issuer `{found_issuer}`, not `{issuer}`"
            )));
        }
        let d = Discovery {
            issuer: found_issuer,
            authorization_endpoint: endpoint("authorization_endpoint")?,
            token_endpoint: endpoint("token_endpoint")?,
            userinfo_endpoint: text("userinfo_endpoint").filter(|u| acceptable_url(u)),
            auth_methods: doc
                .get("token_endpoint_auth_methods_supported")
                .and_then(Json::as_array)
                .map(|l| {
                    l.iter()
                        .filter_map(Json::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            at: Instant::now(),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.insert(issuer.to_string(), d.clone());
        Ok(d)
    }

    /// Exchange the code (with the PKCE verifier) and read the account: the ID token's
    /// claims, completed by the userinfo endpoint.
    pub async fn exchange(
        &self,
        provider: &ProviderSettings,
        d: &Discovery,
        code: &str,
        code_verifier: &str,
        redirect_uri: &str,
        nonce: &str,
    ) -> Result<ExternalAccount, IdentityError> {
        let mut pairs = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", code_verifier),
        ];
        let basic =
            d.auth_methods.is_empty() || d.auth_methods.iter().any(|m| m == "client_secret_basic");
        let mut req = self.http()?.post(&d.token_endpoint);
        if basic {
            let user = form_encode(&provider.client_id);
            let pass = form_encode(&provider.client_secret);
            let creds = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            req = req.header("Authorization", format!("Basic {creds}"));
        } else {
            pairs.push(("client_id", &provider.client_id));
            pairs.push(("client_secret", &provider.client_secret));
        }
        let req = req
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json")
            .body(form(&pairs));
        let (status, tokens) = self.json(req, "token").await?;
        if status != 200 {
            let error = tokens
                .get("error")
                .and_then(Json::as_str)
                .unwrap_or("error");
            let text = tokens
                .get("error_description")
                .and_then(Json::as_str)
                .unwrap_or("");
            return Err(sso_failed(format!(
                "the identity provider refused the code ({error}{}{text}); it may be expired or already used",
                if text.is_empty() { "" } else { ": " }
            )));
        }
        let mut claims = match tokens.get("id_token").and_then(Json::as_str) {
            Some(t) => id_token_claims(t, &d.issuer, &provider.client_id, nonce)?,
            None => Map::new(),
        };
        if let (Some(url), Some(access)) = (
            d.userinfo_endpoint.as_deref(),
            tokens.get("access_token").and_then(Json::as_str),
        ) {
            let req = self
                .http()?
                .get(url)
                .header("Authorization", format!("Bearer {access}"))
                .header("Accept", "application/json");
            let (status, info) = self.json(req, "userinfo").await?;
            if status != 200 {
                return Err(provider_error(format!(
                    "the userinfo endpoint answered HTTP {status}"
                )));
            }
            let sub = claims.get("sub").cloned();
            if sub.is_some() && info.get("sub") != sub.as_ref() {
                return Err(provider_error(
                    "the userinfo `sub` differs from the ID token's",
                ));
            }
            for (k, v) in info {
                claims.entry(k).or_insert(v);
            }
        }
        account(&claims)
    }
}

/// The claims of an ID token received from the token endpoint, with `iss`, `aud`, `exp`
/// and `nonce` checked (see the module docs for the signature).
fn id_token_claims(
    token: &str,
    issuer: &str,
    client_id: &str,
    nonce: &str,
) -> Result<Map<String, Json>, IdentityError> {
    let bad = |why: &str| provider_error(format!("the ID token is not acceptable: {why}"));
    let payload = token.split('.').nth(1).ok_or_else(|| bad("not a JWT"))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| bad("not a JWT"))?;
    let Ok(Json::Object(claims)) = serde_json::from_slice::<Json>(&bytes) else {
        return Err(bad("not a JWT"));
    };
    if claims
        .get("iss")
        .and_then(Json::as_str)
        .map(|s| s.trim_end_matches('/'))
        != Some(issuer.trim_end_matches('/'))
    {
        return Err(bad("wrong issuer"));
    }
    let aud_ok = match claims.get("aud") {
        Some(Json::String(a)) => a == client_id,
        Some(Json::Array(l)) => l.iter().any(|a| a.as_str() == Some(client_id)),
        _ => false,
    };
    if !aud_ok {
        return Err(bad("issued for another client"));
    }
    let exp = claims.get("exp").and_then(Json::as_i64).unwrap_or(0);
    if exp <= crate::users::unix_now() {
        return Err(bad("expired"));
    }
    if claims.get("nonce").and_then(Json::as_str) != Some(nonce) {
        return Err(bad("wrong nonce"));
    }
    Ok(claims)
}

fn account(claims: &Map<String, Json>) -> Result<ExternalAccount, IdentityError> {
    let text = |k: &str| {
        claims
            .get(k)
            .and_then(Json::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.chars().take(1024).collect::<String>())
    };
    let external_id = text("sub")
        .or_else(|| {
            claims
                .get("sub")
                .and_then(Json::as_i64)
                .map(|n| n.to_string())
        })
        .ok_or_else(|| provider_error("the identity provider gave no subject (`sub`)"))?;
    let email_verified = match claims.get("email_verified") {
        Some(Json::Bool(b)) => *b,
        Some(Json::String(s)) => s == "true",
        _ => false,
    };
    Ok(ExternalAccount {
        external_id,
        email: text("email").filter(|e| e.contains('@') && e.len() <= 254),
        email_verified,
        display_name: text("name"),
        first_name: text("given_name"),
        last_name: text("family_name"),
        picture: text("picture"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_http_client_is_made_by_the_first_request_not_at_start() {
        let client = OidcClient::new(&SsoSettings::default());
        assert!(!client.client_made());
        let rt = actix::System::new();
        // A loopback issuer with nothing listening: the request fails after making the
        // client.
        let found = rt.block_on(client.discover("http://127.0.0.1:9"));
        assert!(found.is_err());
        assert!(client.client_made());
    }

    #[test]
    fn pkce_and_forms() {
        // RFC 7636 appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(form(&[("a b", "x&y=z/é")]), "a%20b=x%26y%3Dz%2F%C3%A9");
    }

    #[test]
    fn issuers_need_tls_off_loopback() {
        assert!(acceptable_url("https://accounts.example.com"));
        assert!(acceptable_url("http://127.0.0.1:4000/oidc"));
        assert!(acceptable_url("http://localhost:4000"));
        assert!(acceptable_url("http://[::1]:4000"));
        assert!(!acceptable_url("http://example.com"));
        assert!(!acceptable_url("http://127.0.0.1.evil.com/"));
        assert!(!acceptable_url("ftp://127.0.0.1"));
    }

    #[test]
    fn id_token_checks() {
        let enc = |v: &Json| b64url(v.to_string().as_bytes());
        let exp = crate::users::unix_now() + 60;
        let good = serde_json::json!({"iss": "https://i", "aud": ["c"], "exp": exp, "nonce": "n", "sub": "s"});
        let t = format!("h.{}.sig", enc(&good));
        assert!(id_token_claims(&t, "https://i/", "c", "n").is_ok());
        assert!(id_token_claims(&t, "https://i", "c", "other").is_err());
        assert!(id_token_claims(&t, "https://j", "c", "n").is_err());
        assert!(id_token_claims(&t, "https://i", "d", "n").is_err());
        assert!(id_token_claims("garbage", "https://i", "c", "n").is_err());
    }
}
