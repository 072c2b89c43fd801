//! Graph endpoints (spec "Graph endpoints", decisions.md "Graph"): `GET /graph` (the
//! interactive page, served from the binary), `GET /graph/data` (optional bearer) and
//! `POST /traverse` (bearer required).
//!
//! Handlers only extract and translate: the caller (guest on the shared root without a
//! token, else the token's user on their own root) and the query go to the runtime as
//! one graph-view run (`Runtime::graph`), where the interpreter walks the graph through
//! its one access decision, so a user never sees another user's nodes. Every answer is
//! bounded by `[scale.graph]` (`node_limit`, `edge_limit`, `max_depth`) and the call
//! limits of `[scale.limits]`.

use super::AppState;
use super::auth::{Bearer, SignedIn};
use super::body::json_object;
use super::envelope;
use super::errors::ApiError;
use super::middleware::TraceId;
use crate::identity::api_error;
use actix_web::http::StatusCode;
use actix_web::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use actix_web::{HttpRequest, HttpResponse, web};
use actors::identity::IdentityHandle;
use actors::runtime::Caller;
use lang::serve::{GraphQuery, GraphShape};
use serde_json::{Map, Value as Json};

/// The page: HTML, CSS and script in one file, no external requests.
const PAGE: &str = include_str!("../assets/graph.html");

pub fn configure(cfg: &mut web::ServiceConfig) {
    // Resources, not bare routes: another method is 405 `METHOD_NOT_ALLOWED`, not 404.
    cfg.service(web::resource("/graph").route(web::get().to(page)))
        .service(web::resource("/graph/data").route(web::get().to(data)))
        .service(web::resource("/traverse").route(web::post().to(traverse)));
}

/// `GET /graph`.
async fn page() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((CACHE_CONTROL, "no-cache"))
        // Everything is inline; the page talks to this server only.
        .insert_header((
            CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; img-src 'self' data:",
        ))
        .body(PAGE)
}

/// `GET /graph/data`: the graph the caller may read from their root (the shared root
/// for a guest), as decisions.md's `{version, nodes, edges}` (not enveloped).
async fn data(
    state: web::Data<AppState>,
    identity: Option<web::Data<IdentityHandle>>,
    bearer: Bearer,
    trace: TraceId,
) -> Result<HttpResponse, ApiError> {
    let caller = caller_of(identity.as_ref().map(|d| d.get_ref()), bearer).await?;
    let limits = &state.settings.graph;
    let query = GraphQuery {
        source: None,
        depth: Some(limits.max_depth),
        detailed: false,
        node_types: None,
        edge_types: None,
        max_nodes: limits.node_limit,
        max_edges: limits.edge_limit,
        shape: GraphShape::Data,
    };
    let outcome = state.runtime.graph(caller, query, trace.0).await?;
    Ok(envelope::plain_json(StatusCode::OK, &outcome.result))
}

/// `POST /traverse`: body `{source, depth, detailed, node_types, edge_types}`; the
/// envelope with `data = {nodes, edges}`.
async fn traverse(
    state: web::Data<AppState>,
    identity: Option<web::Data<IdentityHandle>>,
    user: SignedIn,
    trace: TraceId,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let caller = caller_of(identity.as_ref().map(|d| d.get_ref()), Bearer(Some(user.0))).await?;
    let body = json_object(&req, payload).await?;
    let query = parse_traverse(&body, &state.settings.graph)?;
    let outcome = state.runtime.graph(caller, query, trace.0).await?;
    Ok(envelope::success(StatusCode::OK, outcome.result))
}

/// The caller of a graph request: the guest without a token, else the token's user.
async fn caller_of(identity: Option<&IdentityHandle>, bearer: Bearer) -> Result<Caller, ApiError> {
    match (bearer.0, identity) {
        (None, _) => Ok(Caller::default()),
        (Some(user_id), Some(identity)) => identity.caller(user_id).await.map_err(api_error),
        (Some(_), None) => Err(ApiError::new(
            super::errors::ErrorCode::Unauthorized,
            "invalid token",
        )),
    }
}

/// The spec's `/traverse` parameters, each checked: `source` (`"root"` or a node or edge
/// id, default root), `depth` (1; 0 to `max_depth`), `detailed` (false), `node_types`,
/// `edge_types` (lists of type names, default all). Unknown keys are refused, as for
/// walkers.
fn parse_traverse(
    body: &Map<String, Json>,
    limits: &crate::config::GraphConfig,
) -> Result<GraphQuery, ApiError> {
    let mut problems = Vec::new();
    let mut query = GraphQuery {
        source: None,
        depth: Some(1),
        detailed: false,
        node_types: None,
        edge_types: None,
        max_nodes: limits.node_limit,
        max_edges: limits.edge_limit,
        shape: GraphShape::Traverse,
    };
    let mut problem = |field: &str, message: String| {
        problems.push(super::errors::FieldError {
            field: field.to_string(),
            message,
        });
    };
    for (key, value) in body {
        match key.as_str() {
            "source" => match value {
                Json::Null => {}
                Json::String(s) if s.is_empty() || s == "root" => {}
                Json::String(s) => match lang::host::parse_id(s) {
                    Some(id) => query.source = Some(id),
                    None => problem(
                        "source",
                        "expected \"root\" or a node or edge id (32 hex digits)".into(),
                    ),
                },
                _ => problem("source", "expected a string".into()),
            },
            "depth" => match value.as_i64() {
                Some(d) if (0..=i64::from(limits.max_depth)).contains(&d) => {
                    query.depth = u32::try_from(d).ok();
                }
                Some(_) => problem(
                    "depth",
                    format!(
                        "must be between 0 and {} ([scale.graph] max_depth)",
                        limits.max_depth
                    ),
                ),
                None => problem("depth", "expected an integer".into()),
            },
            "detailed" => match value {
                Json::Bool(b) => query.detailed = *b,
                _ => problem("detailed", "expected a boolean".into()),
            },
            "node_types" | "edge_types" => {
                let types = match value {
                    Json::Null => None,
                    Json::Array(items) => {
                        let names: Option<Vec<String>> = items
                            .iter()
                            .map(|i| i.as_str().map(str::to_string))
                            .collect();
                        match names {
                            Some(n) if n.len() <= 256 => Some(n),
                            Some(_) => {
                                problem(key, "at most 256 type names".into());
                                None
                            }
                            None => {
                                problem(key, "expected a list of type names".into());
                                None
                            }
                        }
                    }
                    _ => {
                        problem(key, "expected a list of type names".into());
                        None
                    }
                };
                // An empty list means "all", as an absent one.
                let types = types.filter(|t| !t.is_empty());
                if key == "node_types" {
                    query.node_types = types;
                } else {
                    query.edge_types = types;
                }
            }
            other => problem(other, format!("unknown field '{other}'")),
        }
    }
    if problems.is_empty() {
        Ok(query)
    } else {
        Err(ApiError::validation_all(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Json) -> Result<GraphQuery, ApiError> {
        let Json::Object(map) = body else {
            panic!("not an object")
        };
        parse_traverse(&map, &crate::config::GraphConfig::default())
    }

    #[test]
    fn defaults_follow_the_spec() {
        let q = parse(json!({})).expect("valid");
        assert_eq!(q.source, None);
        assert_eq!(q.depth, Some(1));
        assert!(!q.detailed);
        assert_eq!((q.node_types, q.edge_types), (None, None));
    }

    #[test]
    fn every_field_is_checked() {
        let id = "0123456789abcdef0123456789abcdef";
        let q = parse(json!({"source": id, "depth": 3, "detailed": true,
                             "node_types": ["A"], "edge_types": []}))
        .expect("valid");
        assert_eq!(q.source, lang::host::parse_id(id));
        assert_eq!(q.depth, Some(3));
        assert_eq!(q.node_types, Some(vec!["A".to_string()]));
        assert_eq!(q.edge_types, None);
        let e = parse(json!({"source": "x", "depth": 65, "detailed": 1,
                             "node_types": [1], "what": 0}))
        .expect_err("invalid");
        let fields: Vec<&str> = e.details.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(e.status.as_u16(), 422);
        for f in ["source", "depth", "detailed", "node_types", "what"] {
            assert!(fields.contains(&f), "{fields:?}");
        }
    }
}
