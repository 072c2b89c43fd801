//! `svc start --faux`: print the generated API (every endpoint with its method, path,
//! auth and parameters) to stdout and exit without serving. The app is loaded as the
//! runtime loads it (`load_app_as_main` with the configured call limits and `--main`),
//! on an in-memory host, so nothing is written to the store.

use super::params::{Source, classify};
use super::routes::{Pattern, route_path};
use actors::runtime::{EndpointInfo, EndpointKind};
use lang::serve::{Protocol, TypeInfo};
use std::fmt::Write as _;
use std::path::Path;

/// Load `entry` and render its API; `Err` is the load failure (text for stderr).
pub fn render(entry: &Path, limits: &lang::Limits, as_main: bool) -> Result<String, String> {
    let mut host = lang::host::MemoryHost::new();
    let app = lang::serve::load_app_as_main(entry, &mut host, limits, as_main)?;
    Ok(describe(&entry.display().to_string(), &app.endpoints))
}

/// The text `--faux` prints for these endpoints.
pub fn describe(entry: &str, endpoints: &[EndpointInfo]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "API of {entry}: {} endpoint(s)", endpoints.len());
    for e in endpoints {
        let kind = match e.kind {
            EndpointKind::Walker => "walker",
            EndpointKind::Function => "function",
        };
        let auth = if e.public {
            "public"
        } else {
            "bearer token required"
        };
        let _ = writeln!(out);
        match (e.spec.protocol, route_path(e)) {
            (Protocol::Http, Some(path)) => {
                let _ = writeln!(out, "{} {path}  ({kind} {}, {auth})", e.spec.method, e.name);
            }
            (Protocol::Webhook, _) => match &e.spec.webhook {
                None => {
                    let _ = writeln!(
                        out,
                        "POST /webhook/{}  ({kind} {}, X-API-Key + HMAC-SHA256 signature)",
                        e.name, e.name
                    );
                }
                Some(key) => {
                    let path = e.spec.path.as_deref().unwrap_or("");
                    let sep = if path.is_empty() || path.starts_with('/') {
                        ""
                    } else {
                        "/"
                    };
                    let _ = writeln!(
                        out,
                        "POST /webhook/walker/{}{sep}{path}  ({kind} {}, webhook key in {} '{}')",
                        e.name,
                        e.name,
                        key.placement.as_str(),
                        key.name
                    );
                }
            },
            _ => {
                let broadcast = if e.spec.broadcast { ", broadcast" } else { "" };
                let _ = writeln!(
                    out,
                    "WEBSOCKET /ws/{}  ({kind} {}, {auth}{broadcast})",
                    e.name, e.name
                );
            }
        }
        if let Some(doc) = e.doc.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
            for line in doc.lines() {
                let _ = writeln!(out, "    {}", line.trim());
            }
        }
        if e.kind == EndpointKind::Function && !e.spec.envelope {
            let produces = e.spec.produces.as_deref().unwrap_or("text/plain");
            let _ = writeln!(out, "    raw response: {produces}; charset=utf-8");
        }
        let pattern = Pattern::parse(&route_path(e).unwrap_or_default());
        let path_params: Vec<&str> = pattern.params().collect();
        for p in &e.params {
            let source = match classify(p, &e.spec.method, &path_params) {
                Source::Path => "path",
                Source::File => "file",
                Source::Query => "query",
                Source::Body => "body",
            };
            let need = match (&p.default, p.required) {
                (Some(d), _) => format!("default {d}"),
                (None, true) => "required".to_string(),
                (None, false) => "optional".to_string(),
            };
            let _ = writeln!(
                out,
                "    {}: {} ({source}, {need})",
                p.name,
                type_name(&p.ty)
            );
        }
        if let Some(ret) = &e.returns {
            let _ = writeln!(out, "    returns {}", type_name(ret));
        }
    }
    out
}

/// A declared type as svc source would spell it.
pub fn type_name(ty: &TypeInfo) -> String {
    let join =
        |items: &[TypeInfo], sep: &str| items.iter().map(type_name).collect::<Vec<_>>().join(sep);
    match ty {
        TypeInfo::Any => "any".into(),
        TypeInfo::Int => "int".into(),
        TypeInfo::Float => "float".into(),
        TypeInfo::Str => "str".into(),
        TypeInfo::Bool => "bool".into(),
        TypeInfo::None => "None".into(),
        TypeInfo::List(t) => format!("list[{}]", type_name(t)),
        TypeInfo::Tuple(items) if items.is_empty() => "tuple".into(),
        TypeInfo::Tuple(items) => format!("tuple[{}]", join(items, ", ")),
        TypeInfo::Dict(k, v) => format!("dict[{}, {}]", type_name(k), type_name(v)),
        TypeInfo::Optional(t) => format!("{} | None", type_name(t)),
        TypeInfo::Union(items) => join(items, " | "),
        TypeInfo::UploadFile => "UploadFile".into(),
        TypeInfo::Object(name) | TypeInfo::Enum(name, _) => name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names() {
        let t = TypeInfo::Optional(Box::new(TypeInfo::Dict(
            Box::new(TypeInfo::Str),
            Box::new(TypeInfo::List(Box::new(TypeInfo::Int))),
        )));
        assert_eq!(type_name(&t), "dict[str, list[int]] | None");
    }
}
