//! The OpenAPI 3.1 document of a loaded app, built by hand as JSON from the endpoint
//! table (`lang::serve::EndpointInfo`) and the routes the HTTP layer actually mounted.
//!
//! Shape: one operation per route; `operationId` `walker_<name>` / `function_<name>`;
//! tags `walkers` / `functions`; bearer JWT (`bearerAuth`) required unless the endpoint
//! is public, where the token is optional (`security: [{}, {bearerAuth: []}]`: an
//! anonymous call runs on the shared root, a call with a token on the caller's root);
//! path and query parameters and the request body carry JSON Schemas derived from the
//! declared types; responses are the envelope (`components.schemas.Envelope`) and the
//! error envelope (`ErrorEnvelope`) for 401/404/409/413/422/500. WebSocket walkers are
//! not HTTP operations and are left out; webhook walkers (tag `webhooks`) document their
//! key scheme: `X-API-Key` plus the HMAC signature header (current flavor) or the
//! walker's declared key header or query parameter (alternate flavor).
//! The identity routes `/user/*` (tag `user`) come from the table in `openapi/user.rs`,
//! the key routes `/api-key/*` and `/webhook/...` from `openapi/webhook.rs`.

mod admin;
mod user;
mod webhook;

use lang::serve::{EndpointInfo, EndpointKind, ParamInfo, Protocol, TypeInfo};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashSet};

/// One mounted route of a walker or function, as the HTTP layer registered it.
pub struct RouteDoc<'a> {
    pub endpoint: &'a EndpointInfo,
    /// HTTP method (any case).
    pub method: String,
    /// The mounted path, `{param}` style (`{name:regex}` is accepted and shown as `{name}`).
    pub path: String,
    /// Parameters taken from path segments.
    pub path_params: Vec<String>,
    /// Parameters taken from the query string.
    pub query_params: Vec<String>,
}

/// `components.schemas` keys the document defines itself.
const BUILTIN_SCHEMAS: &[&str] = &["Envelope", "ErrorEnvelope", "ErrorBody", "Meta"];
const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Build the OpenAPI 3.1 document for `routes`.
/// `signature_header` is `[scale.webhook] signature_header`.
pub fn build(title: &str, version: &str, routes: &[RouteDoc], signature_header: &str) -> Value {
    let mut b = Builder::default();
    let mut paths = Map::new();
    for route in routes {
        if route.endpoint.spec.protocol == Protocol::Websocket {
            continue;
        }
        let method = route.method.to_ascii_lowercase();
        if !METHODS.contains(&method.as_str()) {
            tracing::warn!(method = %route.method, path = %route.path, "not documented: unknown HTTP method");
            continue;
        }
        let (path, template_params) = normalize_path(&route.path);
        let item = paths.entry(path.clone()).or_insert_with(|| json!({}));
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        if item.contains_key(&method) {
            tracing::warn!(method = %method, path = %path, "not documented: route listed twice");
            continue;
        }
        item.insert(
            method.clone(),
            b.operation(route, &method, &template_params),
        );
    }

    user::add_paths(&mut paths);
    webhook::add_paths(&mut paths);
    admin::add_paths(&mut paths);

    let mut schemas = Map::new();
    user::schemas(&mut schemas);
    webhook::schemas(&mut schemas);
    admin::schemas(&mut schemas);
    schemas.insert("Envelope".into(), envelope_schema());
    schemas.insert("ErrorEnvelope".into(), error_envelope_schema());
    schemas.insert("ErrorBody".into(), error_body_schema());
    schemas.insert("Meta".into(), meta_schema());
    for (name, key) in &b.objects {
        schemas.insert(
            key.clone(),
            json!({
                "title": name,
                "description": format!("An instance of archetype `{name}`: its public `has` fields."),
                "type": "object",
                "additionalProperties": true,
            }),
        );
    }

    let mut schemes = Map::new();
    schemes.insert(
        "bearerAuth".into(),
        json!({
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "`Authorization: Bearer <token>` with a token from login.",
        }),
    );
    if b.uses_api_key {
        schemes.insert(
            "apiKeyAuth".into(),
            json!({
                "type": "apiKey",
                "in": "header",
                "name": "X-API-Key",
                "description": "A key from `/api-key/create` (current webhook flavor); always sent together with `webhookSignature`.",
            }),
        );
        schemes.insert(
            "webhookSignature".into(),
            json!({
                "type": "apiKey",
                "in": "header",
                "name": signature_header,
                "description": webhook::signature_description(signature_header),
            }),
        );
    }
    for (name, scheme) in std::mem::take(&mut b.key_schemes) {
        schemes.insert(name, scheme);
    }

    json!({
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "Walkers and functions of this app. Every response is a JSON envelope \
                `{ok, type, data, error, meta}`: walkers return their reports in `data.reports`, \
                functions their return value in `data.result`.",
        },
        "tags": [
            {"name": "walkers", "description": "Walkers: spawned on the caller's root (or the shared root when anonymous)."},
            {"name": "functions", "description": "Functions: stateless calls."},
            {"name": user::TAG, "description": "Identity: accounts, session tokens, e-mail verification and password reset."},
            {"name": webhook::TAG, "description": "Inbound webhooks: API keys, webhook walkers and the alternate flavor's keys."},
            {"name": admin::TAG, "description": "The admin API (admin session token; the portal page is `/admin`)."},
            {"name": admin::SSO_TAG, "description": "Single sign-on with OpenID Connect providers."},
        ],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": error_responses(),
            "securitySchemes": schemes,
        },
    })
}

#[derive(Default)]
struct Builder {
    /// Archetype name -> component key, for every `Object` type seen.
    objects: BTreeMap<String, String>,
    operation_ids: HashSet<String>,
    uses_api_key: bool,
    /// Security schemes of alternate-flavor webhook keys (header or query), by name.
    key_schemes: BTreeMap<String, Value>,
}

/// Where a parameter travels.
#[derive(PartialEq)]
enum Place {
    Path,
    File,
    Query,
    Body,
}

impl Builder {
    fn operation(&mut self, route: &RouteDoc, method: &str, template_params: &[String]) -> Value {
        let ep = route.endpoint;
        let (kind, tag) = match ep.kind {
            EndpointKind::Walker => ("walker", "walkers"),
            EndpointKind::Function => ("function", "functions"),
        };
        let mut op = Map::new();
        op.insert("tags".into(), json!([tag]));
        op.insert(
            "operationId".into(),
            json!(self.operation_id(kind, &ep.name, method)),
        );
        if let Some(doc) = ep.doc.as_deref().map(clean_doc).filter(|d| !d.is_empty()) {
            let (summary, rest) = match doc.split_once('\n') {
                Some((first, rest)) => (first.trim().to_string(), rest.trim().to_string()),
                None => (doc.clone(), String::new()),
            };
            op.insert("summary".into(), json!(summary));
            if !rest.is_empty() {
                op.insert("description".into(), json!(rest));
            }
        }
        let webhook = ep.spec.protocol == Protocol::Webhook;
        if webhook {
            op.insert("tags".into(), json!([webhook::TAG]));
        }
        let security = if webhook {
            match &ep.spec.webhook {
                None => {
                    self.uses_api_key = true;
                    op.insert(
                        "description".into(),
                        json!("Current webhook flavor: send `X-API-Key` and the signature header (see the `webhookSignature` scheme). The walker runs on the key owner's root."),
                    );
                    json!([{"apiKeyAuth": [], "webhookSignature": []}])
                }
                Some(key) => {
                    op.insert(
                        "description".into(),
                        json!(format!(
                            "Alternate webhook flavor: the key from `/webhook/generate-key` in the {} `{}`. The walker runs on the key's root, or on a node id given as the segment after the walker name; the key's `walkers` and `nodes` lists restrict both (403).",
                            key.placement.as_str(),
                            key.name
                        )),
                    );
                    let place = match key.placement {
                        lang::serve::KeyPlacement::Header => Some("header"),
                        lang::serve::KeyPlacement::Query => Some("query"),
                        _ => None,
                    };
                    match place {
                        Some(place) => {
                            let name = format!(
                                "webhookKey.{place}.{}",
                                key.name
                                    .chars()
                                    .map(|c| if c.is_ascii_alphanumeric() || c == '-' {
                                        c
                                    } else {
                                        '_'
                                    })
                                    .collect::<String>()
                            );
                            self.key_schemes.insert(
                                name.clone(),
                                json!({
                                    "type": "apiKey",
                                    "in": place,
                                    "name": key.name,
                                    "description": "A key from `/webhook/generate-key` (alternate webhook flavor).",
                                }),
                            );
                            json!([{ name: [] }])
                        }
                        // In the path or the body: documented as a parameter or field.
                        None => json!([]),
                    }
                }
            }
        } else if ep.public {
            json!([{}, {"bearerAuth": []}])
        } else {
            json!([{"bearerAuth": []}])
        };
        op.insert("security".into(), security);

        // Classify: path, file, query (GET or listed), body — the spec's order.
        let is_get = method == "get" || method == "head";
        let place = |p: &ParamInfo| {
            if route.path_params.contains(&p.name) || template_params.contains(&p.name) {
                Place::Path
            } else if is_upload(&p.ty) {
                Place::File
            } else if route.query_params.contains(&p.name) || is_get {
                Place::Query
            } else {
                Place::Body
            }
        };

        let mut parameters = Vec::new();
        for name in template_params {
            let param = ep.params.iter().find(|p| &p.name == name);
            let schema = match param {
                Some(p) => self.param_schema(p),
                None => json!({"type": "string"}),
            };
            parameters
                .push(json!({"name": name, "in": "path", "required": true, "schema": schema}));
        }
        for p in ep.params.iter().filter(|p| place(p) == Place::Query) {
            parameters.push(json!({
                "name": p.name,
                "in": "query",
                "required": p.required,
                "schema": self.param_schema(p),
            }));
        }
        if !parameters.is_empty() {
            op.insert("parameters".into(), Value::Array(parameters));
        }

        let body_params: Vec<&ParamInfo> = ep
            .params
            .iter()
            .filter(|p| matches!(place(p), Place::Body | Place::File))
            .collect();
        let has_files = body_params.iter().any(|p| place(p) == Place::File);
        let has_body = !is_get || !body_params.is_empty();
        if has_body {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for p in &body_params {
                properties.insert(p.name.clone(), self.param_schema(p));
                if p.required {
                    required.push(json!(p.name));
                }
            }
            let mut schema = Map::new();
            schema.insert("type".into(), json!("object"));
            schema.insert("properties".into(), Value::Object(properties));
            if !required.is_empty() {
                schema.insert("required".into(), Value::Array(required.clone()));
            }
            if ep.kind == EndpointKind::Walker && !has_files {
                schema.insert("additionalProperties".into(), json!(false));
            }
            let media = if has_files {
                "multipart/form-data"
            } else {
                "application/json"
            };
            op.insert(
                "requestBody".into(),
                json!({
                    "required": !required.is_empty(),
                    "content": {media: {"schema": Value::Object(schema)}},
                }),
            );
        }

        let mut responses = Map::new();
        responses.insert("200".into(), self.success_response(ep));
        let mut error = |code: &str, name: &str| {
            responses.insert(
                code.into(),
                json!({"$ref": format!("#/components/responses/{name}")}),
            );
        };
        if webhook || !ep.public {
            error("401", "Unauthorized");
        }
        if webhook {
            error("403", "Forbidden");
        }
        error("404", "NotFound");
        error("409", "Conflict");
        if has_body {
            error("413", "PayloadTooLarge");
        }
        error("422", "ValidationError");
        error("500", "ExecutionError");
        op.insert("responses".into(), Value::Object(responses));
        Value::Object(op)
    }

    fn operation_id(&mut self, kind: &str, name: &str, method: &str) -> String {
        let base = format!("{kind}_{name}");
        let mut candidate = base.clone();
        let mut n = 2;
        while self.operation_ids.contains(&candidate) {
            candidate = if n == 2 {
                format!("{base}_{method}")
            } else {
                format!("{base}_{n}")
            };
            n += 1;
        }
        self.operation_ids.insert(candidate.clone());
        candidate
    }

    fn param_schema(&mut self, p: &ParamInfo) -> Value {
        let mut schema = self.schema(&p.ty);
        if let (Some(default), Some(obj)) = (&p.default, schema.as_object_mut()) {
            obj.insert("default".into(), default.clone());
        }
        schema
    }

    /// JSON Schema (2020-12, as OpenAPI 3.1 uses it) of a declared type.
    fn schema(&mut self, ty: &TypeInfo) -> Value {
        match ty {
            TypeInfo::Any => json!({}),
            TypeInfo::Int => json!({"type": "integer"}),
            TypeInfo::Float => json!({"type": "number"}),
            TypeInfo::Str => json!({"type": "string"}),
            TypeInfo::Bool => json!({"type": "boolean"}),
            TypeInfo::None => json!({"type": "null"}),
            TypeInfo::List(item) => json!({"type": "array", "items": self.schema(item)}),
            TypeInfo::Tuple(items) if items.is_empty() => json!({"type": "array", "maxItems": 0}),
            TypeInfo::Tuple(items) => {
                let prefix: Vec<Value> = items.iter().map(|t| self.schema(t)).collect();
                json!({
                    "type": "array",
                    "prefixItems": prefix,
                    "minItems": items.len(),
                    "maxItems": items.len(),
                })
            }
            TypeInfo::Dict(_, value) => {
                json!({"type": "object", "additionalProperties": self.schema(value)})
            }
            TypeInfo::Optional(inner) => nullable(self.schema(inner)),
            TypeInfo::Union(members) => {
                let any: Vec<Value> = members.iter().map(|t| self.schema(t)).collect();
                if any.is_empty() {
                    json!({})
                } else {
                    json!({"anyOf": any})
                }
            }
            TypeInfo::UploadFile => json!({
                "type": "string",
                "format": "binary",
                "contentMediaType": "application/octet-stream",
            }),
            TypeInfo::Object(name) => {
                let key = self.object_key(name);
                json!({"$ref": format!("#/components/schemas/{key}")})
            }
            TypeInfo::Enum(name, values) => {
                let mut schema = Map::new();
                schema.insert("title".into(), json!(name));
                if let Some(t) = common_json_type(values) {
                    schema.insert("type".into(), json!(t));
                }
                schema.insert("enum".into(), Value::Array(values.clone()));
                Value::Object(schema)
            }
        }
    }

    /// The `components.schemas` key of archetype `name` (registering it).
    fn object_key(&mut self, name: &str) -> String {
        if let Some(key) = self.objects.get(name) {
            return key.clone();
        }
        let mut key: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if key.is_empty() {
            key.push('_');
        }
        while BUILTIN_SCHEMAS.contains(&key.as_str()) || self.objects.values().any(|k| k == &key) {
            key = format!("app.{key}");
        }
        self.objects.insert(name.to_string(), key.clone());
        key
    }

    fn success_response(&mut self, ep: &EndpointInfo) -> Value {
        if ep.kind == EndpointKind::Function && !ep.spec.envelope {
            let produces = ep.spec.produces.as_deref().unwrap_or("text/plain");
            let media = produces.split(';').next().unwrap_or(produces).trim();
            let media = if media.is_empty() {
                "text/plain"
            } else {
                media
            };
            let schema = if crate::server::params::is_json_media(media) {
                ep.returns
                    .as_ref()
                    .map_or_else(|| json!({}), |t| self.schema(t))
            } else {
                json!({"type": "string"})
            };
            return json!({
                "description": "The function's return value as the body (no envelope).",
                "content": {media: {"schema": schema}},
            });
        }
        let (result, reports, description) = match ep.kind {
            EndpointKind::Walker => {
                let mut props = Map::new();
                for p in &ep.params {
                    props.insert(p.name.clone(), self.schema(&p.ty));
                }
                props.insert(
                    "_svc_type".into(),
                    json!({"type": "string", "const": ep.name}),
                );
                props.insert("_svc_id".into(), json!({"type": "string"}));
                props.insert(
                    "_svc_archetype".into(),
                    json!({"type": "string", "const": "walker"}),
                );
                let result = json!({
                    "type": "object",
                    "description": "The walker after its run.",
                    "properties": props,
                });
                let item = match ep
                    .params
                    .iter()
                    .find(|p| p.name == "reports")
                    .map(|p| &p.ty)
                {
                    Some(TypeInfo::List(item)) => self.schema(item),
                    _ => json!({}),
                };
                let reports = json!({"type": "array", "items": item});
                (
                    result,
                    reports,
                    "Walker ran; `data.reports` holds what it reported.",
                )
            }
            EndpointKind::Function => {
                let result = ep
                    .returns
                    .as_ref()
                    .map_or_else(|| json!({}), |t| self.schema(t));
                let reports = json!({"type": "array", "items": {}});
                (
                    result,
                    reports,
                    "Function returned; `data.result` holds its value.",
                )
            }
        };
        json!({
            "description": description,
            "content": {"application/json": {"schema": {
                "allOf": [
                    {"$ref": "#/components/schemas/Envelope"},
                    {"type": "object", "properties": {"data": {
                        "type": "object",
                        "properties": {"result": result, "reports": reports},
                    }}},
                ],
            }}},
        })
    }
}

/// Whether a parameter is a file upload (`UploadFile`, optional or a list of them).
fn is_upload(ty: &TypeInfo) -> bool {
    match ty {
        TypeInfo::UploadFile => true,
        TypeInfo::Optional(inner) | TypeInfo::List(inner) => is_upload(inner),
        _ => false,
    }
}

/// `T | None`: a `type` list when the schema is a plain typed one, else `anyOf`.
fn nullable(schema: Value) -> Value {
    if let Some(obj) = schema.as_object() {
        if obj.is_empty() {
            return schema; // any already admits null
        }
        let plain = !obj.contains_key("enum") && !obj.contains_key("$ref");
        if let (true, Some(Value::String(t))) = (plain, obj.get("type")) {
            let mut obj = obj.clone();
            let t = t.clone();
            obj.insert("type".into(), json!([t, "null"]));
            return Value::Object(obj);
        }
    }
    json!({"anyOf": [schema, {"type": "null"}]})
}

/// The JSON type shared by all enum values, if there is one.
fn common_json_type(values: &[Value]) -> Option<&'static str> {
    let type_of = |v: &Value| match v {
        Value::String(_) => Some("string"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        Value::Bool(_) => Some("boolean"),
        _ => None,
    };
    let first = type_of(values.first()?)?;
    values
        .iter()
        .all(|v| type_of(v) == Some(first))
        .then_some(first)
}

/// `{name:regex}` → `{name}`; returns the path and its template variables in order.
fn normalize_path(path: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(path.len());
    let mut params = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let inner = &after[..close];
        let name = inner.split(':').next().unwrap_or(inner).trim();
        out.push('{');
        out.push_str(name);
        out.push('}');
        if !params.iter().any(|p| p == name) {
            params.push(name.to_string());
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    if !out.starts_with('/') {
        out.insert(0, '/');
    }
    (out, params)
}

/// Python `inspect.cleandoc`: trim, and remove the common indentation of lines 2..n.
fn clean_doc(doc: &str) -> String {
    let lines: Vec<&str> = doc.trim().lines().collect();
    let indent = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if i == 0 {
            out.push(line.trim());
        } else {
            out.push(
                line.get(indent..)
                    .unwrap_or_else(|| line.trim_start())
                    .trim_end(),
            );
        }
    }
    out.join("\n")
}

fn meta_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "extra": {
                "type": "object",
                "properties": {"http_status": {"type": "integer", "description": "Equals the HTTP status."}},
                "additionalProperties": true,
            },
        },
        "additionalProperties": true,
    })
}

fn envelope_schema() -> Value {
    json!({
        "type": "object",
        "description": "The success envelope.",
        "required": ["ok", "type", "data", "error", "meta"],
        "properties": {
            "ok": {"type": "boolean", "const": true},
            "type": {"type": "string", "const": "response"},
            "data": {
                "type": "object",
                "required": ["result", "reports"],
                "properties": {
                    "result": {"description": "A function's return value; a walker's final state."},
                    "reports": {"type": "array", "items": {}, "description": "A walker's reported values."},
                },
            },
            "error": {"type": "null"},
            "meta": {"$ref": "#/components/schemas/Meta"},
        },
    })
}

fn error_envelope_schema() -> Value {
    json!({
        "type": "object",
        "description": "The failure envelope.",
        "required": ["ok", "type", "data", "error", "meta"],
        "properties": {
            "ok": {"type": "boolean", "const": false},
            "type": {"type": "string", "const": "error"},
            "data": {"type": "null"},
            "error": {"$ref": "#/components/schemas/ErrorBody"},
            "meta": {"$ref": "#/components/schemas/Meta"},
        },
    })
}

fn error_body_schema() -> Value {
    json!({
        "type": "object",
        "required": ["code", "message"],
        "properties": {
            "code": {
                "type": "string",
                "examples": ["VALIDATION_ERROR", "UNAUTHORIZED", "NOT_FOUND", "CONFLICT", "EXECUTION_ERROR"],
            },
            "message": {"type": "string"},
            "details": {
                "description": "Present when there is more to say; for VALIDATION_ERROR a list of `{field, message}`.",
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
                    "additionalProperties": true,
                },
            },
        },
    })
}

fn error_responses() -> Value {
    let mut out = Map::new();
    for (name, description) in [
        (
            "Unauthorized",
            "UNAUTHORIZED: missing, invalid or expired credentials.",
        ),
        (
            "Forbidden",
            "FORBIDDEN: the API key may not call this walker.",
        ),
        ("NotFound", "NOT_FOUND: no such walker, function or node."),
        (
            "Conflict",
            "CONFLICT: a concurrent write won after all replays.",
        ),
        (
            "PayloadTooLarge",
            "PAYLOAD_TOO_LARGE: the body exceeds `max_body_bytes`.",
        ),
        (
            "ValidationError",
            "VALIDATION_ERROR: malformed JSON, missing or mistyped field, unknown field.",
        ),
        (
            "ExecutionError",
            "EXECUTION_ERROR: the svc code failed; the message carries its source position.",
        ),
    ] {
        out.insert(
            name.into(),
            json!({
                "description": description,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}},
            }),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang::serve::RestSpec;

    fn param(name: &str, ty: TypeInfo, default: Option<Value>) -> ParamInfo {
        ParamInfo {
            name: name.into(),
            ty,
            required: default.is_none(),
            default,
        }
    }

    fn endpoint(kind: EndpointKind, name: &str, params: Vec<ParamInfo>) -> EndpointInfo {
        EndpointInfo {
            kind,
            name: name.into(),
            public: false,
            params,
            returns: None,
            spec: RestSpec::default(),
            doc: None,
            is_async: false,
        }
    }

    fn route<'a>(
        e: &'a EndpointInfo,
        method: &str,
        path: &str,
        path_params: &[&str],
    ) -> RouteDoc<'a> {
        RouteDoc {
            endpoint: e,
            method: method.into(),
            path: path.into(),
            path_params: path_params.iter().map(|s| s.to_string()).collect(),
            query_params: Vec::new(),
        }
    }

    /// A sample app touching every type and every kind of route.
    fn sample() -> Value {
        let mut create = endpoint(
            EndpointKind::Walker,
            "create_todo",
            vec![
                param("title", TypeInfo::Str, None),
                param("done", TypeInfo::Bool, Some(json!(false))),
                param("priority", TypeInfo::Int, Some(json!(3))),
                param("weight", TypeInfo::Float, Some(json!(1.5))),
                param(
                    "tags",
                    TypeInfo::List(Box::new(TypeInfo::Str)),
                    Some(json!([])),
                ),
                param(
                    "meta",
                    TypeInfo::Dict(Box::new(TypeInfo::Str), Box::new(TypeInfo::Int)),
                    Some(json!({})),
                ),
                param(
                    "note",
                    TypeInfo::Optional(Box::new(TypeInfo::Str)),
                    Some(Value::Null),
                ),
                param(
                    "color",
                    TypeInfo::Enum("Color".into(), vec![json!("red"), json!("green")]),
                    Some(json!("red")),
                ),
                param("owner", TypeInfo::Object("Envelope".into()), None),
                param("item", TypeInfo::Object("Item".into()), None),
                param(
                    "pair",
                    TypeInfo::Tuple(vec![TypeInfo::Int, TypeInfo::Str]),
                    None,
                ),
                param(
                    "either",
                    TypeInfo::Union(vec![TypeInfo::Int, TypeInfo::Str]),
                    None,
                ),
                param("anything", TypeInfo::Any, None),
                param(
                    "reports",
                    TypeInfo::List(Box::new(TypeInfo::Object("Item".into()))),
                    Some(json!([])),
                ),
            ],
        );
        create.doc =
            Some("Create a todo.\n\n    Adds it under root.\n      Indented line.\n    ".into());

        let mut list = endpoint(
            EndpointKind::Walker,
            "list_todos",
            vec![
                param("limit", TypeInfo::Int, Some(json!(10))),
                param(
                    "maybe_color",
                    TypeInfo::Optional(Box::new(TypeInfo::Enum(
                        "Color".into(),
                        vec![json!("red")],
                    ))),
                    None,
                ),
            ],
        );
        list.public = true;
        list.spec.method = "GET".into();

        let mut item = endpoint(
            EndpointKind::Function,
            "get_item",
            vec![
                param("item_id", TypeInfo::Int, None),
                param("verbose", TypeInfo::Bool, Some(json!(false))),
            ],
        );
        item.spec.method = "GET".into();
        item.spec.path = Some("/items/{item_id}".into());
        item.returns = Some(TypeInfo::Object("Item".into()));

        let mut upload = endpoint(
            EndpointKind::Function,
            "upload",
            vec![
                param("file", TypeInfo::UploadFile, None),
                param(
                    "extra",
                    TypeInfo::List(Box::new(TypeInfo::UploadFile)),
                    Some(json!([])),
                ),
                param("label", TypeInfo::Str, Some(json!("x"))),
            ],
        );
        upload.returns = Some(TypeInfo::Int);

        let mut robots = endpoint(EndpointKind::Function, "robots", vec![]);
        robots.public = true;
        robots.spec.method = "GET".into();
        robots.spec.path = Some("/robots.txt".into());
        robots.spec.envelope = false;

        let mut feed = endpoint(EndpointKind::Function, "feed", vec![]);
        feed.spec.envelope = false;
        feed.spec.produces = Some("application/json; charset=utf-8".into());
        feed.returns = Some(TypeInfo::List(Box::new(TypeInfo::Int)));

        let mut hook = endpoint(
            EndpointKind::Walker,
            "on_payment",
            vec![param("amount", TypeInfo::Float, None)],
        );
        hook.spec.protocol = Protocol::Webhook;

        let mut chat = endpoint(
            EndpointKind::Walker,
            "chat",
            vec![param("msg", TypeInfo::Str, None)],
        );
        chat.spec.protocol = Protocol::Websocket;

        let nothing = endpoint(EndpointKind::Walker, "ping", vec![]);

        let routes = vec![
            route(&create, "POST", "/walker/create_todo", &[]),
            route(
                &create,
                "POST",
                "/walker/create_todo/{node_id}",
                &["node_id"],
            ),
            route(&list, "GET", "/walker/list_todos", &[]),
            route(&item, "GET", "/items/{item_id:\\d+}", &["item_id"]),
            route(&upload, "POST", "/function/upload", &[]),
            route(&robots, "GET", "/robots.txt", &[]),
            route(&feed, "POST", "/function/feed", &[]),
            route(&hook, "POST", "/webhook/on_payment", &[]),
            route(&chat, "GET", "/ws/chat", &[]),
            route(&nothing, "post", "/walker/ping", &[]),
        ];
        build("Todo app", "0.1.0", &routes, "X-Webhook-Signature")
    }

    /// Resolve a local JSON pointer reference such as `#/components/schemas/X`.
    fn resolve<'d>(doc: &'d Value, reference: &str) -> Option<&'d Value> {
        doc.pointer(reference.strip_prefix('#')?)
    }

    fn collect_refs<'d>(v: &'d Value, out: &mut Vec<&'d str>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r);
                }
                m.values().for_each(|x| collect_refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
            _ => {}
        }
    }

    /// Structural checks of an OpenAPI 3.1 document; returns every problem found.
    fn validate(doc: &Value) -> Vec<String> {
        let mut problems = Vec::new();
        let mut fail = |p: String| problems.push(p);
        if doc["openapi"]
            .as_str()
            .is_none_or(|v| !v.starts_with("3.1."))
        {
            fail("openapi must be 3.1.x".into());
        }
        if !doc["info"]["title"].is_string() || !doc["info"]["version"].is_string() {
            fail("info.title and info.version are required strings".into());
        }
        let schemes = doc["components"]["securitySchemes"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let tags: Vec<&str> = doc["tags"].as_array().map_or(vec![], |t| {
            t.iter().filter_map(|t| t["name"].as_str()).collect()
        });
        let Some(paths) = doc["paths"].as_object() else {
            fail("paths must be an object".into());
            return problems;
        };
        let mut op_ids = HashSet::new();
        for (path, item) in paths {
            if !path.starts_with('/') {
                fail(format!("path {path} must start with /"));
            }
            let (_, template) = normalize_path(path);
            let Some(item) = item.as_object() else {
                fail(format!("{path}: path item must be an object"));
                continue;
            };
            for (method, op) in item {
                let at = format!("{method} {path}");
                if !METHODS.contains(&method.as_str()) {
                    fail(format!("{at}: not an HTTP method"));
                }
                match op["operationId"].as_str() {
                    Some(id) if op_ids.insert(id.to_string()) => {}
                    other => fail(format!("{at}: operationId missing or duplicate: {other:?}")),
                }
                for t in op["tags"].as_array().into_iter().flatten() {
                    if !t.as_str().is_some_and(|t| tags.contains(&t)) {
                        fail(format!("{at}: tag {t} not declared"));
                    }
                }
                let mut seen = HashSet::new();
                let mut path_params = HashSet::new();
                for p in op["parameters"].as_array().into_iter().flatten() {
                    let (Some(name), Some(place)) = (p["name"].as_str(), p["in"].as_str()) else {
                        fail(format!("{at}: parameter without name/in"));
                        continue;
                    };
                    if !["path", "query", "header", "cookie"].contains(&place) {
                        fail(format!("{at}: bad `in` {place}"));
                    }
                    if !seen.insert((name, place)) {
                        fail(format!("{at}: duplicate parameter {name}"));
                    }
                    if !p.get("schema").is_some_and(Value::is_object) {
                        fail(format!("{at}: parameter {name} without schema"));
                    }
                    if place == "path" {
                        path_params.insert(name.to_string());
                        if p["required"] != json!(true) {
                            fail(format!("{at}: path parameter {name} must be required"));
                        }
                    }
                }
                if path_params != template.iter().cloned().collect::<HashSet<_>>() {
                    fail(format!(
                        "{at}: path parameters {path_params:?} != template {template:?}"
                    ));
                }
                if let Some(body) = op.get("requestBody")
                    && body["content"].as_object().is_none_or(|c| c.is_empty())
                {
                    fail(format!("{at}: requestBody without content"));
                }
                match op["responses"].as_object() {
                    Some(r) if !r.is_empty() => {
                        for (code, resp) in r {
                            let ok_code = code == "default"
                                || (code.len() == 3 && code.chars().all(|c| c.is_ascii_digit()));
                            if !ok_code {
                                fail(format!("{at}: bad response code {code}"));
                            }
                            if resp.get("$ref").is_none() && !resp["description"].is_string() {
                                fail(format!("{at} {code}: response needs a description"));
                            }
                        }
                    }
                    _ => fail(format!("{at}: responses must be a non-empty object")),
                }
                for req in op["security"].as_array().into_iter().flatten() {
                    for name in req.as_object().into_iter().flat_map(|r| r.keys()) {
                        if !schemes.contains_key(name) {
                            fail(format!("{at}: security scheme {name} not declared"));
                        }
                    }
                }
            }
        }
        for (name, resp) in doc["components"]["responses"]
            .as_object()
            .into_iter()
            .flatten()
        {
            if !resp["description"].is_string() {
                fail(format!("components.responses.{name}: description required"));
            }
        }
        let mut refs = Vec::new();
        collect_refs(doc, &mut refs);
        for r in refs {
            if resolve(doc, r).is_none() {
                fail(format!("unresolved $ref {r}"));
            }
        }
        problems
    }

    #[test]
    fn document_is_well_formed_openapi_31() {
        let doc = sample();
        // Round-trip through a file, as a client would read it.
        let dir = std::env::temp_dir().join(format!("svc-openapi-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("test io");
        let file = dir.join("openapi.json");
        std::fs::write(&file, serde_json::to_string_pretty(&doc).expect("test io"))
            .expect("test io");
        let read: Value = serde_json::from_str(&std::fs::read_to_string(&file).expect("test io"))
            .expect("test io");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(read, doc);
        // `SVC_OPENAPI_DUMP=path` keeps a copy for an external validator.
        if let Ok(out) = std::env::var("SVC_OPENAPI_DUMP") {
            std::fs::write(out, serde_json::to_string_pretty(&doc).expect("test io"))
                .expect("test io");
        }
        let problems = validate(&read);
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn validator_catches_broken_documents() {
        let mut doc = sample();
        doc["paths"]["/walker/ping"]["post"]["responses"]["404"] =
            json!({"$ref": "#/components/responses/Nope"});
        doc["paths"]["/items/{item_id}"]["get"]["parameters"] = json!([]);
        let problems = validate(&doc);
        assert!(
            problems.iter().any(|p| p.contains("unresolved $ref")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("template")),
            "{problems:?}"
        );
    }

    #[test]
    fn walker_body_schema_and_types() {
        let doc = sample();
        let op = &doc["paths"]["/walker/create_todo"]["post"];
        assert_eq!(op["operationId"], "walker_create_todo");
        assert_eq!(op["tags"], json!(["walkers"]));
        assert_eq!(op["summary"], "Create a todo.");
        assert_eq!(op["description"], "Adds it under root.\n  Indented line.");
        assert_eq!(op["security"], json!([{"bearerAuth": []}]));
        assert!(op.get("parameters").is_none());
        let body = &op["requestBody"];
        assert_eq!(body["required"], true);
        let s = &body["content"]["application/json"]["schema"];
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(
            s["required"],
            json!(["title", "owner", "item", "pair", "either", "anything"])
        );
        let p = &s["properties"];
        assert_eq!(p["title"], json!({"type": "string"}));
        assert_eq!(p["done"], json!({"type": "boolean", "default": false}));
        assert_eq!(p["priority"], json!({"type": "integer", "default": 3}));
        assert_eq!(p["weight"], json!({"type": "number", "default": 1.5}));
        assert_eq!(
            p["tags"],
            json!({"type": "array", "items": {"type": "string"}, "default": []})
        );
        assert_eq!(
            p["meta"],
            json!({"type": "object", "additionalProperties": {"type": "integer"}, "default": {}})
        );
        assert_eq!(
            p["note"],
            json!({"type": ["string", "null"], "default": null})
        );
        assert_eq!(
            p["color"],
            json!({"title": "Color", "type": "string", "enum": ["red", "green"], "default": "red"})
        );
        assert_eq!(p["item"], json!({"$ref": "#/components/schemas/Item"}));
        // An archetype named like a built-in schema gets its own key.
        assert_eq!(
            p["owner"],
            json!({"$ref": "#/components/schemas/app.Envelope"})
        );
        assert_eq!(doc["components"]["schemas"]["Item"]["type"], "object");
        assert_eq!(
            doc["components"]["schemas"]["Item"]["additionalProperties"],
            true
        );
        assert_eq!(
            p["pair"],
            json!({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2})
        );
        assert_eq!(
            p["either"],
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}]})
        );
        assert_eq!(p["anything"], json!({}));
        // Responses: envelope with the walker's shape, errors by reference.
        let ok = &op["responses"]["200"]["content"]["application/json"]["schema"];
        assert_eq!(
            ok["allOf"][0],
            json!({"$ref": "#/components/schemas/Envelope"})
        );
        let data = &ok["allOf"][1]["properties"]["data"]["properties"];
        assert_eq!(
            data["reports"]["items"],
            json!({"$ref": "#/components/schemas/Item"})
        );
        assert_eq!(
            data["result"]["properties"]["_svc_type"]["const"],
            "create_todo"
        );
        for code in ["401", "404", "409", "413", "422", "500"] {
            assert!(op["responses"][code]["$ref"].is_string(), "{code}");
        }
        // The second mount of the same walker gets its own operationId and path parameter.
        let op2 = &doc["paths"]["/walker/create_todo/{node_id}"]["post"];
        assert_eq!(op2["operationId"], "walker_create_todo_post");
        assert_eq!(
            op2["parameters"],
            json!([{"name": "node_id", "in": "path", "required": true, "schema": {"type": "string"}}])
        );
    }

    #[test]
    fn get_routes_use_query_and_path_parameters() {
        let doc = sample();
        let op = &doc["paths"]["/walker/list_todos"]["get"];
        assert_eq!(
            op["security"],
            json!([{}, {"bearerAuth": []}]),
            "public: token optional"
        );
        assert!(op["responses"].get("401").is_none());
        assert!(op.get("requestBody").is_none());
        assert!(op["responses"].get("413").is_none());
        assert_eq!(
            op["parameters"],
            json!([
                {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "default": 10}},
                {"name": "maybe_color", "in": "query", "required": true, "schema": {"anyOf": [
                    {"title": "Color", "type": "string", "enum": ["red"]}, {"type": "null"}]}},
            ])
        );
        let op = &doc["paths"]["/items/{item_id}"]["get"];
        assert_eq!(op["operationId"], "function_get_item");
        assert_eq!(op["tags"], json!(["functions"]));
        assert_eq!(
            op["parameters"][0],
            json!({"name": "item_id", "in": "path", "required": true, "schema": {"type": "integer"}})
        );
        assert_eq!(op["parameters"][1]["in"], "query");
        let data = &op["responses"]["200"]["content"]["application/json"]["schema"]["allOf"][1]["properties"]
            ["data"];
        assert_eq!(
            data["properties"]["result"],
            json!({"$ref": "#/components/schemas/Item"})
        );
    }

    #[test]
    fn uploads_are_multipart() {
        let doc = sample();
        let body = &doc["paths"]["/function/upload"]["post"]["requestBody"];
        let s = &body["content"]["multipart/form-data"]["schema"];
        assert_eq!(s["properties"]["file"]["type"], "string");
        assert_eq!(s["properties"]["file"]["format"], "binary");
        assert_eq!(s["properties"]["extra"]["items"]["format"], "binary");
        assert_eq!(
            s["properties"]["label"],
            json!({"type": "string", "default": "x"})
        );
        assert_eq!(s["required"], json!(["file"]));
        assert!(body["content"].get("application/json").is_none());
    }

    #[test]
    fn raw_functions_declare_their_content_type() {
        let doc = sample();
        let op = &doc["paths"]["/robots.txt"]["get"];
        assert_eq!(
            op["responses"]["200"]["content"],
            json!({"text/plain": {"schema": {"type": "string"}}})
        );
        assert_eq!(
            op["responses"]["500"]["$ref"],
            "#/components/responses/ExecutionError"
        );
        let op = &doc["paths"]["/function/feed"]["post"];
        assert_eq!(
            op["responses"]["200"]["content"],
            json!({"application/json": {"schema": {"type": "array", "items": {"type": "integer"}}}})
        );
    }

    #[test]
    fn webhooks_use_api_keys_and_websockets_are_left_out() {
        let doc = sample();
        let op = &doc["paths"]["/webhook/on_payment"]["post"];
        assert_eq!(
            op["security"],
            json!([{"apiKeyAuth": [], "webhookSignature": []}])
        );
        assert_eq!(op["tags"], json!(["webhooks"]));
        let schemes = &doc["components"]["securitySchemes"];
        assert_eq!(schemes["webhookSignature"]["name"], "X-Webhook-Signature");
        assert_eq!(schemes["webhookSignature"]["in"], "header");
        assert!(
            schemes["webhookSignature"]["description"]
                .as_str()
                .is_some_and(|d| d.contains("HMAC-SHA256") && d.contains("sha256=")),
            "{schemes}"
        );
        assert_eq!(validate(&doc), Vec::<String>::new());
        assert_eq!(
            op["responses"]["403"]["$ref"],
            "#/components/responses/Forbidden"
        );
        assert_eq!(
            doc["components"]["securitySchemes"]["apiKeyAuth"]["name"],
            "X-API-Key"
        );
        assert!(doc["paths"].get("/ws/chat").is_none());
        assert_eq!(
            doc["components"]["securitySchemes"]["bearerAuth"]["scheme"],
            "bearer"
        );
    }

    #[test]
    fn envelopes_are_in_components() {
        let doc = sample();
        let s = &doc["components"]["schemas"];
        assert_eq!(
            s["Envelope"]["required"],
            json!(["ok", "type", "data", "error", "meta"])
        );
        assert_eq!(
            s["Envelope"]["properties"]["data"]["required"],
            json!(["result", "reports"])
        );
        assert_eq!(
            s["ErrorEnvelope"]["properties"]["error"]["$ref"],
            "#/components/schemas/ErrorBody"
        );
        assert_eq!(s["ErrorBody"]["required"], json!(["code", "message"]));
        assert!(s["ErrorBody"]["properties"]["details"].is_object());
        let empty = build("Empty", "1", &[], "X-Webhook-Signature");
        assert!(validate(&empty).is_empty());
        let paths = empty["paths"].as_object().expect("paths");
        assert!(
            paths.keys().all(|p| p.starts_with("/user/")
                || p.starts_with("/api-key/")
                || p.starts_with("/webhook")
                || p.starts_with("/admin/")
                || p.starts_with("/sso/")),
            "{paths:?}"
        );
    }

    #[test]
    fn user_routes_are_documented() {
        let doc = build("Users", "1", &[], "X-Webhook-Signature");
        assert_eq!(validate(&doc), Vec::<String>::new());
        let paths = &doc["paths"];
        for (path, method) in [
            ("/user/register", "post"),
            ("/user/login", "post"),
            ("/user/refresh-token", "post"),
            ("/user/me", "get"),
            ("/user/password", "put"),
            ("/user/add-identity", "post"),
            ("/user/send-verification", "post"),
            ("/user/verify-identity", "post"),
            ("/user/forgot-password", "post"),
            ("/user/reset-password", "post"),
        ] {
            let op = &paths[path][method];
            assert_eq!(op["tags"], json!(["user"]), "{method} {path}");
            let ok = op["responses"]
                .as_object()
                .and_then(|r| r.iter().find(|(code, _)| code.starts_with('2')))
                .map(|(_, r)| &r["content"]["application/json"]["schema"]);
            assert!(
                ok.is_some_and(|s| s["properties"]["data"]["$ref"].is_string()),
                "{method} {path}: {op}"
            );
        }
        let login = &paths["/user/login"]["post"];
        assert_eq!(
            login["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/user.LoginRequest"
        );
        assert_eq!(
            login["responses"]["429"]["content"]["application/json"]["schema"]["allOf"][1]["properties"]
                ["error"]["properties"]["code"]["enum"],
            json!(["RATE_LIMITED"])
        );
        assert_eq!(
            paths["/user/me"]["get"]["security"],
            json!([{"bearerAuth": []}])
        );
        assert_eq!(login["security"], json!([]));
        let schemas = &doc["components"]["schemas"];
        assert_eq!(
            schemas["user.LoggedIn"]["required"],
            json!(["user_id", "token", "root_id", "role"])
        );
        let codes = &paths["/user/send-verification"]["post"]["responses"];
        assert!(codes["502"]["description"].as_str() == Some("EMAIL_SEND_FAILED"));
    }

    #[test]
    fn helpers() {
        assert_eq!(
            normalize_path("items/{id:\\d+}/x/{id}"),
            ("/items/{id}/x/{id}".to_string(), vec!["id".to_string()])
        );
        assert_eq!(normalize_path("/a/{b"), ("/a/{b".to_string(), vec![]));
        assert_eq!(clean_doc("  One line.  "), "One line.");
        assert_eq!(nullable(json!({})), json!({}));
        assert_eq!(
            nullable(json!({"$ref": "#/x"})),
            json!({"anyOf": [{"$ref": "#/x"}, {"type": "null"}]})
        );
        assert_eq!(common_json_type(&[json!(1), json!(2.5)]), None);
        assert_eq!(common_json_type(&[json!(1), json!(2)]), Some("integer"));
    }
}
