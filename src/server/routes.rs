//! The generated endpoints: the route table built from the app's endpoint table (spec
//! "Generated endpoints"), path matching with `{param}` segments, the `Matched`
//! extractor and the one handler every walker and function call goes through.
//!
//! The table is consulted by the app's default service, after the fixed routes (health,
//! docs), so it can be swapped whole when `--dev` reloads the app, and a function with a
//! custom path such as `/robots.txt` answers before anything else would.

use super::auth::authorize;
use super::envelope;
use super::errors::{ApiError, ErrorCode};
use super::hooks::{self, Hooks};
use super::middleware::{TraceId, new_trace_id};
use super::{AppState, params};
use actix_web::http::Method;
use actix_web::{HttpMessage as _, HttpRequest, HttpResponse, web};
use actors::runtime::{CallError, CallRequest, EndpointInfo, EndpointKind, Start};
use lang::serve::{KeyPlacement, Protocol};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// The path an endpoint is served at, or `None` when it is not served under the
/// generated routes (WEBHOOK and WEBSOCKET walkers have their own routes).
pub fn route_path(e: &EndpointInfo) -> Option<String> {
    if e.spec.protocol != Protocol::Http {
        return None;
    }
    Some(match &e.spec.path {
        Some(p) if p.starts_with('/') => p.clone(),
        Some(p) => format!("/{p}"),
        None => match e.kind {
            EndpointKind::Walker => format!("/walker/{}", e.name),
            EndpointKind::Function => format!("/function/{}", e.name),
        },
    })
}

/// One segment of a route path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param(String),
}

/// A route path such as `/items/{id}`, split into segments (empty segments and a
/// trailing slash do not count).
#[derive(Clone, Debug)]
pub struct Pattern {
    text: String,
    segments: Vec<Segment>,
}

impl Pattern {
    pub fn parse(text: &str) -> Pattern {
        let segments = text
            .split('/')
            .filter(|s| !s.is_empty())
            .map(
                |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) if !name.is_empty() => Segment::Param(name.to_string()),
                    _ => Segment::Literal(s.to_string()),
                },
            )
            .collect();
        Pattern {
            text: text.to_string(),
            segments,
        }
    }

    /// The path as declared.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Names of the `{param}` segments.
    pub fn params(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Param(p) => Some(p.as_str()),
            Segment::Literal(_) => None,
        })
    }

    fn literals(&self) -> usize {
        self.segments
            .iter()
            .filter(|s| matches!(s, Segment::Literal(_)))
            .count()
    }

    /// Two patterns that match the same paths (`/a/{x}` and `/a/{y}`).
    fn same_shape(&self, other: &Pattern) -> bool {
        self.segments.len() == other.segments.len()
            && self
                .segments
                .iter()
                .zip(&other.segments)
                .all(|(a, b)| match (a, b) {
                    (Segment::Literal(x), Segment::Literal(y)) => x == y,
                    (Segment::Param(_), Segment::Param(_)) => true,
                    _ => false,
                })
    }

    /// Match a raw request path: the same answer as `captures(&split_path(raw))`, without
    /// collecting the segments (every generated call resolves its path against each
    /// route until one matches).
    fn captures_raw(&self, raw: &str) -> Option<Vec<(String, String)>> {
        self.match_segments(raw.split('/').filter(|s| !s.is_empty()).map(decode_segment))
    }

    /// Match already-decoded path segments; the captured `{param}` values on success.
    pub fn captures<S: AsRef<str>>(&self, segments: &[S]) -> Option<Vec<(String, String)>> {
        if segments.len() != self.segments.len() {
            return None;
        }
        self.match_segments(segments.iter())
    }

    /// The one matcher: each decoded segment against its pattern segment, and none left.
    fn match_segments<S: AsRef<str>>(
        &self,
        mut segments: impl Iterator<Item = S>,
    ) -> Option<Vec<(String, String)>> {
        let mut out = Vec::new();
        for pat in &self.segments {
            let seg = segments.next()?;
            let seg = seg.as_ref();
            match pat {
                Segment::Literal(l) if l == seg => {}
                Segment::Literal(_) => return None,
                Segment::Param(name) => out.push((name.clone(), seg.to_string())),
            }
        }
        segments.next().is_none().then_some(out)
    }
}

/// The endpoints served at one path, by method, each with its metrics `route` label
/// (its declared path, [`route_path`]; made once here, not per request).
#[derive(Debug)]
struct PathGroup {
    pattern: Pattern,
    methods: Vec<(Method, Arc<EndpointInfo>, Arc<str>)>,
}

/// Every generated route of the loaded app, plus what the app's middleware walkers are.
#[derive(Debug, Default)]
pub struct RouteTable {
    /// Most specific (most literal segments) first; declaration order otherwise.
    groups: Vec<PathGroup>,
    /// WEBSOCKET walkers by name, served at `/ws/<name>` (`super::ws`).
    websockets: HashMap<String, Arc<EndpointInfo>>,
    /// WEBHOOK walkers of the current flavor by name, served at `/webhook/<name>`
    /// (`crate::webhook`).
    webhooks: HashMap<String, Arc<EndpointInfo>>,
    /// WEBHOOK walkers of the alternate flavor by name, served at
    /// `/webhook/walker/<name>` followed by their declared path.
    walker_hooks: HashMap<String, (Arc<EndpointInfo>, Pattern)>,
    pub hooks: Hooks,
}

/// A request resolved to its endpoint.
#[derive(Clone, Debug)]
pub struct Matched {
    pub endpoint: Arc<EndpointInfo>,
    /// `{param}` values from the path, percent-decoded.
    pub path_params: Vec<(String, String)>,
    /// The endpoint's declared path: the request's `route` label in the metrics.
    pub route: Arc<str>,
}

impl RouteTable {
    /// Build the table; the strings are warnings for the log (duplicate routes, bad
    /// methods, path parameters that name no parameter).
    pub fn build(endpoints: &[EndpointInfo], hooks: Hooks) -> (RouteTable, Vec<String>) {
        let mut warnings = Vec::new();
        let mut groups: Vec<PathGroup> = Vec::new();
        let mut websockets = HashMap::new();
        let mut webhooks = HashMap::new();
        let mut walker_hooks = HashMap::new();
        for e in endpoints {
            if e.spec.protocol == Protocol::Webhook {
                if e.kind == EndpointKind::Function {
                    warnings.push(format!(
                        "function '{}': protocol WEBHOOK applies to walkers only; not served",
                        e.name
                    ));
                    continue;
                }
                let endpoint = Arc::new(e.clone());
                match &e.spec.webhook {
                    None => {
                        webhooks.insert(e.name.clone(), endpoint);
                    }
                    Some(key) => {
                        let pattern = Pattern::parse(e.spec.path.as_deref().unwrap_or(""));
                        if key.placement == KeyPlacement::Path
                            && !pattern.params().any(|p| p == key.name)
                        {
                            warnings.push(format!(
                                "walker '{}': its webhook key is in the path, but its path \
                                 declares no '{{{}}}'; not served",
                                e.name, key.name
                            ));
                            continue;
                        }
                        walker_hooks.insert(e.name.clone(), (endpoint, pattern));
                    }
                }
                continue;
            }
            if e.spec.protocol == Protocol::Websocket {
                match e.kind {
                    EndpointKind::Walker => {
                        websockets.insert(e.name.clone(), Arc::new(e.clone()));
                    }
                    EndpointKind::Function => warnings.push(format!(
                        "function '{}': protocol WEBSOCKET applies to walkers only; not served",
                        e.name
                    )),
                }
                continue;
            }
            let Some(path) = route_path(e) else {
                continue;
            };
            let Ok(method) = Method::from_bytes(e.spec.method.as_bytes()) else {
                warnings.push(format!(
                    "{} '{}': unknown HTTP method '{}', not served",
                    kind_name(e.kind),
                    e.name,
                    e.spec.method
                ));
                continue;
            };
            let pattern = Pattern::parse(&path);
            for p in pattern.params() {
                if !e.params.iter().any(|q| q.name == p) {
                    warnings.push(format!(
                        "{} '{}': path parameter '{{{p}}}' names no parameter; ignored",
                        kind_name(e.kind),
                        e.name
                    ));
                }
            }
            let endpoint = Arc::new(e.clone());
            let route = Arc::from(path.as_str());
            match groups.iter_mut().find(|g| g.pattern.same_shape(&pattern)) {
                Some(g) if g.methods.iter().any(|(m, ..)| *m == method) => warnings.push(format!(
                    "{} '{}': {method} {path} is already served by another endpoint; not served",
                    kind_name(e.kind),
                    e.name
                )),
                Some(g) => g.methods.push((method, endpoint, route)),
                None => groups.push(PathGroup {
                    pattern,
                    methods: vec![(method, endpoint, route)],
                }),
            }
        }
        // Stable: declaration order among equally specific paths.
        groups.sort_by_key(|g| std::cmp::Reverse(g.pattern.literals()));
        let table = RouteTable {
            groups,
            websockets,
            webhooks,
            walker_hooks,
            hooks,
        };
        (table, warnings)
    }

    /// Every served route: `(method, path, endpoint)`, in table order.
    pub fn routes(&self) -> impl Iterator<Item = (&Method, &str, &EndpointInfo)> {
        self.groups.iter().flat_map(|g| {
            g.methods
                .iter()
                .map(move |(m, e, _)| (m, g.pattern.as_str(), &**e))
        })
    }

    /// The WEBSOCKET walker served at `/ws/<name>`, if any.
    pub fn websocket(&self, name: &str) -> Option<Arc<EndpointInfo>> {
        self.websockets.get(name).cloned()
    }

    /// The current-flavor WEBHOOK walker served at `/webhook/<name>`, if any.
    pub fn webhook(&self, name: &str) -> Option<Arc<EndpointInfo>> {
        self.webhooks.get(name).cloned()
    }

    /// The alternate-flavor WEBHOOK walker served at `/webhook/walker/<name>...`, with
    /// its declared path.
    pub fn walker_hook(&self, name: &str) -> Option<(Arc<EndpointInfo>, Pattern)> {
        self.walker_hooks.get(name).cloned()
    }

    /// Every WEBHOOK walker (both flavors), in name order.
    pub fn webhook_walkers(&self) -> Vec<Arc<EndpointInfo>> {
        let mut all: Vec<_> = self
            .webhooks
            .values()
            .chain(self.walker_hooks.values().map(|(e, _)| e))
            .cloned()
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Whether some endpoint is served at exactly this path (for `/`).
    pub fn claims(&self, path: &str) -> bool {
        let segments = split_path(path);
        self.groups
            .iter()
            .any(|g| g.pattern.captures(&segments).is_some())
    }

    /// The methods served at this path, for the `Allow` header of a 405 (`HEAD` with
    /// `GET`, which answers it).
    fn methods_at(&self, segments: &[Cow<'_, str>]) -> Vec<&str> {
        let mut allowed: Vec<&str> = Vec::new();
        let served = self
            .groups
            .iter()
            .filter(|g| g.pattern.captures(segments).is_some())
            .flat_map(|g| g.methods.iter().map(|(m, ..)| m));
        for m in served {
            let head = (*m == Method::GET).then_some("HEAD");
            for name in std::iter::once(m.as_str()).chain(head) {
                if !allowed.contains(&name) {
                    allowed.push(name);
                }
            }
        }
        allowed
    }

    /// Resolve a request: its endpoint, or 404 `NOT_FOUND` / 405 `METHOD_NOT_ALLOWED`.
    pub fn resolve(&self, method: &Method, raw_path: &str) -> Result<Matched, ApiError> {
        let mut path_known = false;
        for g in &self.groups {
            let Some(path_params) = g.pattern.captures_raw(raw_path) else {
                continue;
            };
            path_known = true;
            if let Some((_, e, route)) = g.methods.iter().find(|(m, ..)| m == method) {
                return Ok(Matched {
                    endpoint: Arc::clone(e),
                    path_params,
                    route: Arc::clone(route),
                });
            }
        }
        if path_known {
            Err(ApiError::method_not_allowed(
                format!("method {method} is not allowed on {raw_path}"),
                &self.methods_at(&split_path(raw_path)),
            ))
        } else {
            Err(ApiError::new(
                ErrorCode::NotFound,
                format!("no endpoint at {raw_path}"),
            ))
        }
    }
}

fn kind_name(kind: EndpointKind) -> &'static str {
    match kind {
        EndpointKind::Walker => "walker",
        EndpointKind::Function => "function",
    }
}

/// A raw request path as percent-decoded segments (empty segments dropped); a segment
/// without `%` is borrowed, not copied.
pub fn split_path(raw: &str) -> Vec<Cow<'_, str>> {
    raw.split('/')
        .filter(|s| !s.is_empty())
        .map(decode_segment)
        .collect()
}

/// One raw path segment, percent-decoded; borrowed when it has no `%`.
fn decode_segment(s: &str) -> Cow<'_, str> {
    if s.contains('%') {
        Cow::Owned(params::percent_decode(s, false))
    } else {
        Cow::Borrowed(s)
    }
}

impl Matched {
    /// Resolve `req` in `table` and remember the answer in the request's extensions (the
    /// middleware labels the request's metrics with its `route`).
    fn resolve(table: &RouteTable, req: &HttpRequest) -> Result<Matched, ApiError> {
        let matched = table.resolve(req.method(), req.path())?;
        req.extensions_mut().insert(matched.clone());
        Ok(matched)
    }
}

/// Every walker and function endpoint: resolve the route (404, 405), authorize the
/// caller (401), read the arguments (413, 408, 415, 422), run the app's middleware
/// walkers, call, wrap.
///
/// One handler with the steps in that order and no extractors: six extractors (two of
/// them boxed futures, each cloning the request or its parts) cost more than the steps.
pub async fn endpoint(req: HttpRequest, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    let state = AppState::of(&req)?;
    let table = state.table();
    let target = Matched::resolve(&table, &req)?;
    let e = &target.endpoint;
    let caller = authorize(&req, e.public).await?;
    let args = params::call_args(&req, &target, payload).await?;
    // Taken, not copied: nothing after this handler reads it (the middleware keeps its
    // own).
    let trace = req.extensions_mut().remove::<TraceId>();
    let trace = trace.unwrap_or_else(|| TraceId(new_trace_id()));
    hooks::run(state, table.hooks, &req, &caller, &trace).await?;
    drop(table);
    // Service-to-service calls of this run forward the caller's credentials.
    let mut caller = caller;
    caller.authorization = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let call = state.runtime.call(CallRequest {
        kind: e.kind,
        name: e.name.clone(),
        args,
        start: Start::Root,
        caller,
        trace_id: trace.0,
    });
    // A client that disconnects cancels its run (dropping `call` sends `Cancel`).
    let reply = tokio::select! {
        biased;
        outcome = call => outcome,
        () = super::peer::gone(&req) => Err(CallError::Cancelled),
    };
    let kind = match e.kind {
        EndpointKind::Walker => "walker",
        EndpointKind::Function => "function",
    };
    crate::metrics::global().run(kind, &e.name, crate::metrics::run_outcome(&reply));
    let outcome = reply?;
    Ok(match (e.kind, e.spec.envelope) {
        (EndpointKind::Function, false) => {
            envelope::raw(e.spec.produces.as_deref(), &outcome.result)
        }
        _ => envelope::call_success(&outcome),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang::serve::{ParamInfo, RestSpec, TypeInfo};

    fn ep(kind: EndpointKind, name: &str, method: &str, path: Option<&str>) -> EndpointInfo {
        EndpointInfo {
            kind,
            name: name.into(),
            public: true,
            params: vec![ParamInfo {
                name: "id".into(),
                ty: TypeInfo::Int,
                required: true,
                default: None,
            }],
            returns: None,
            spec: RestSpec {
                method: method.into(),
                path: path.map(str::to_string),
                ..RestSpec::default()
            },
            doc: None,
            is_async: false,
        }
    }

    #[test]
    fn default_and_custom_paths() {
        let eps = [
            ep(EndpointKind::Walker, "w", "POST", None),
            ep(EndpointKind::Function, "f", "GET", None),
            ep(EndpointKind::Function, "item", "GET", Some("/items/{id}")),
            ep(EndpointKind::Function, "robots", "GET", Some("robots.txt")),
            ep(
                EndpointKind::Function,
                "newest",
                "GET",
                Some("/items/newest"),
            ),
        ];
        let (t, warnings) = RouteTable::build(&eps, Hooks::default());
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            t.resolve(&Method::POST, "/walker/w")
                .map(|m| m.endpoint.name.clone())
                .ok(),
            Some("w".into())
        );
        let m = t.resolve(&Method::GET, "/items/4%202/").expect("matches");
        assert_eq!(m.endpoint.name, "item");
        assert_eq!(m.path_params, vec![("id".into(), "4 2".into())]);
        assert_eq!(
            t.resolve(&Method::GET, "/items/newest")
                .map(|m| m.endpoint.name.clone())
                .ok(),
            Some("newest".into())
        );
        assert_eq!(
            t.resolve(&Method::GET, "/robots.txt")
                .map(|m| m.endpoint.name.clone())
                .ok(),
            Some("robots".into())
        );
        let e = t.resolve(&Method::GET, "/walker/w").err();
        assert_eq!(
            e.as_ref().map(|e| (e.code, e.allow.as_deref())),
            Some((ErrorCode::MethodNotAllowed, Some("POST")))
        );
        let e = t
            .resolve(&Method::GET, "/walker/nope")
            .err()
            .map(|e| e.code);
        assert_eq!(e, Some(ErrorCode::NotFound));
        assert!(!t.claims("/"));
    }

    #[test]
    fn a_raw_path_matches_as_its_split_segments_do() {
        let patterns = ["/", "/a", "/a/{x}", "/a/b", "/{x}/{y}", "/a%20b/{x}"];
        let paths = [
            "", "/", "//", "/a", "/a/", "//a//", "/a/b", "/a/b/c", "/a/4%202", "/x/y", "/a%20b/c",
            "/a b/c", "/a/%zz", "a/b",
        ];
        for p in patterns {
            let pattern = Pattern::parse(p);
            for path in paths {
                assert_eq!(
                    pattern.captures_raw(path),
                    pattern.captures(&split_path(path)),
                    "{p} against {path}"
                );
            }
        }
    }

    #[test]
    fn webhook_and_websocket_walkers_are_not_generated() {
        let mut hook = ep(EndpointKind::Walker, "hook", "POST", None);
        hook.spec.protocol = Protocol::Webhook;
        let mut ws = ep(EndpointKind::Walker, "chat", "POST", None);
        ws.spec.protocol = Protocol::Websocket;
        let (t, _) = RouteTable::build(&[hook, ws], Hooks::default());
        assert_eq!(t.routes().count(), 0);
        assert!(t.resolve(&Method::POST, "/walker/hook").is_err());
        assert!(t.resolve(&Method::POST, "/walker/chat").is_err());
        assert!(t.websocket("chat").is_some());
        assert!(t.websocket("hook").is_none());
        assert!(t.webhook("hook").is_some());
        assert!(t.webhook("chat").is_none());
    }

    #[test]
    fn alternate_webhook_walkers_need_their_key_variable_in_the_path() {
        use lang::serve::WebhookKeySpec;
        let alt = |name: &str, placement, path: Option<&str>| {
            let mut e = ep(EndpointKind::Walker, name, "POST", path);
            e.spec.protocol = Protocol::Webhook;
            e.spec.webhook = Some(WebhookKeySpec {
                placement,
                name: "key".into(),
            });
            e
        };
        let eps = [
            alt("by_header", KeyPlacement::Header, None),
            alt("by_path", KeyPlacement::Path, Some("/{key}")),
            alt("bad_path", KeyPlacement::Path, Some("/{other}")),
        ];
        let (t, warnings) = RouteTable::build(&eps, Hooks::default());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("bad_path"), "{warnings:?}");
        assert!(t.walker_hook("by_header").is_some());
        assert!(t.webhook("by_header").is_none(), "one flavor per walker");
        let (_, pattern) = t.walker_hook("by_path").expect("served");
        assert_eq!(
            pattern.captures(&["k1".to_string()]),
            Some(vec![("key".to_string(), "k1".to_string())])
        );
        assert!(t.walker_hook("bad_path").is_none());
        assert_eq!(t.routes().count(), 0);
    }

    #[test]
    fn duplicates_warn() {
        let eps = [
            ep(EndpointKind::Function, "a", "GET", Some("/x/{id}")),
            ep(EndpointKind::Function, "b", "GET", Some("/x/{id}")),
        ];
        let (t, warnings) = RouteTable::build(&eps, Hooks::default());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(t.routes().count(), 1);
    }
}
