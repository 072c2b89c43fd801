//! Service-to-service imports (`sv import from provider { f, W };`, decisions.md
//! "Service-to-service"): the imported names are stubs, and calling one is a host native
//! (`sv.call`) that the server answers with an HTTP call to the provider. `lang` never
//! talks to the network: without a host that answers `sv.call` (`svc run`'s script host
//! with no provider, `svc check`) a call raises a `RuntimeError` with the spec's message.
//!
//! The provider's source (beside the consumer) is only parsed, never run here: it tells
//! a walker from a function and gives a function's parameter names, so positional
//! arguments can be sent by name. A stub is `Value::Builtin("__sv__:<module>:<name>")`.

use super::value::*;
use super::{Interp, R};
use crate::ast::{self, ArchKind, Item};
use serde_json::{Map, Value as Json, json};
use std::rc::Rc;

/// The host native behind every stub call: args `[{module, name, kind, args}]`; answers
/// `{"result", "reports"}` or `{"__error__": {"message"}}`.
pub const SV_CALL: &str = "sv.call";
/// The prefix of a stub's builtin name.
pub const STUB_PREFIX: &str = "__sv__:";

/// What a stub stands for, from the provider's source.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Walker,
    Function,
    /// The provider's source was not readable: the host finds out.
    Unknown,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Walker => "walker",
            Kind::Function => "function",
            Kind::Unknown => "unknown",
        }
    }
}

impl Interp<'_> {
    /// Bind the names of an `sv import`: stubs, with the provider's source parsed (not
    /// run) to know walkers from functions and the functions' parameter names.
    pub(super) fn exec_sv_import(
        &mut self,
        imp: &ast::Import,
        from: &ast::ModPath,
        provider: &std::path::Path,
        scope: &ScopeRef,
    ) -> R<()> {
        let module: String = from
            .parts
            .last()
            .map(|p| p.name.to_string())
            .unwrap_or_default();
        let parsed = self
            .host
            .read_module(provider)
            .map(|text| crate::parser::parse(&text).module);
        for item in &imp.items {
            let name = &*item.name.name;
            let (kind, params) = match &parsed {
                Some(m) => describe(m, name),
                None => (Kind::Unknown, Vec::new()),
            };
            let stub = format!(
                "{STUB_PREFIX}{module}:{name}:{}:{}",
                kind.as_str(),
                params.join(",")
            );
            let bind = item.alias.as_ref().unwrap_or(&item.name);
            scope_define(scope, bind.name.clone(), Value::Builtin(Rc::from(stub)));
        }
        Ok(())
    }

    /// Call a stub: a function's result, or a walker stub (its fields and `reports`).
    pub(super) fn call_sv_stub(
        &mut self,
        stub: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let mut parts = stub.trim_start_matches(STUB_PREFIX).splitn(4, ':');
        let module = parts.next().unwrap_or_default().to_string();
        let name = parts.next().unwrap_or_default().to_string();
        let kind = parts.next().unwrap_or("unknown").to_string();
        let params: Vec<&str> = parts
            .next()
            .unwrap_or_default()
            .split(',')
            .filter(|p| !p.is_empty())
            .collect();
        let what = if kind == "walker" {
            format!("sv-to-sv walker spawn '{module}.{name}' failed")
        } else {
            format!("sv-to-sv RPC '{module}.{name}' failed")
        };
        if !args.is_empty() && (kind != "function" || args.len() > params.len()) {
            let why = if kind == "walker" {
                "an imported walker takes its has fields as keyword arguments only"
            } else {
                "pass the arguments by keyword (the provider's parameters are not known here)"
            };
            return Err(self.err("TypeError", format!("{what}: {why}")));
        }
        let mut body = Map::new();
        let named = params.iter().map(|p| Rc::from(*p)).zip(args);
        for (k, v) in named.chain(kwargs) {
            body.insert(k.to_string(), self.sv_argument(&what, &v)?);
        }
        let request = json!({"module": module, "name": name, "kind": kind, "args": body});
        let answer = match self.host.call_native(SV_CALL, &[request]) {
            Some(Ok(answer)) => answer,
            Some(Err(e)) => {
                return Err(self.err("RuntimeError", format!("{what}: {e}")));
            }
            None => {
                return Err(self.err(
                    "RuntimeError",
                    format!("{what}: service-to-service calls need a server (svc start)"),
                ));
            }
        };
        if let Some(e) = answer.get("__error__") {
            let msg = e
                .get("message")
                .and_then(Json::as_str)
                .unwrap_or("unknown error");
            return Err(self.err("RuntimeError", format!("{what}: {msg}")));
        }
        let result = answer.get("result").cloned().unwrap_or(Json::Null);
        if answer.get("kind").and_then(Json::as_str) != Some("walker") {
            return Ok(self.generic_from_wire(&result));
        }
        // The rehydrated walker: its public fields, `reports` attached.
        let mut names: Vec<String> = Vec::new();
        let mut values = Vec::new();
        if let Json::Object(fields) = &result {
            for (k, v) in fields {
                if !k.starts_with("_svc_") && k != "reports" {
                    names.push(k.clone());
                    values.push(self.generic_from_wire(v));
                }
            }
        }
        let reports: Vec<Value> = answer
            .get("reports")
            .and_then(Json::as_array)
            .map(|r| r.iter().map(|v| self.generic_from_wire(v)).collect())
            .unwrap_or_default();
        names.push("reports".into());
        values.push(Value::list(reports));
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let class = Rc::new(Class::builtin_record(&name, &refs));
        Ok(Value::Instance(Rc::new(Instance {
            class,
            fields: std::cell::RefCell::new(values),
            extra: Default::default(),
            id: next_id(),
        })))
    }

    /// One argument on the wire; anchors and callables do not cross (spec: pass ids).
    fn sv_argument(&mut self, what: &str, v: &Value) -> R<Json> {
        match v {
            Value::Anchor(_) => Err(self.err(
                "TypeError",
                format!("{what}: nodes and edges cannot cross services; pass jid(node) instead"),
            )),
            Value::Func(_) | Value::Builtin(_) | Value::Class(_) => Err(self.err(
                "TypeError",
                format!("{what}: functions and classes cannot cross services"),
            )),
            other => self.to_wire(other),
        }
    }
}

/// Whether `name` is a walker or a function of the provider, with a function's
/// parameter names.
fn describe(m: &ast::Module, name: &str) -> (Kind, Vec<String>) {
    for item in &m.items {
        match item {
            Item::Archetype(a) if &*a.name.name == name && a.kind == ArchKind::Walker => {
                return (Kind::Walker, Vec::new());
            }
            Item::Ability(ab) if ab.name.as_ref().is_some_and(|n| &*n.name == name) => {
                let params = ab
                    .signature
                    .as_ref()
                    .map(|s| {
                        s.params
                            .iter()
                            .filter(|p| p.kind == ast::ParamKind::Normal)
                            .map(|p| p.name.name.to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                return (Kind::Function, params);
            }
            _ => {}
        }
    }
    (Kind::Unknown, Vec::new())
}

#[cfg(test)]
mod tests {
    use crate::ast::Item;

    #[test]
    fn sv_import_parses_as_a_remote_import() {
        let parsed = crate::parser::parse("sv import from billing { charge, Invoice as I };\n");
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let Some(Item::Import(imp)) = parsed.module.items.first() else {
            panic!("not an import")
        };
        assert!(imp.remote);
        assert_eq!(imp.items.len(), 2);
        let plain = crate::parser::parse("import from billing { charge }\nsv = 1;\n");
        let Some(Item::Import(imp)) = plain.module.items.first() else {
            panic!("not an import")
        };
        assert!(!imp.remote, "a plain import stays in process");
    }
}
