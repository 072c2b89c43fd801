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
use crate::endpoint::TypeInfo;
use crate::names::SV_CLIENT_NAMES;
use serde_json::{Map, Value as Json, json};
use std::collections::HashMap;
use std::rc::Rc;

/// The host native behind every stub call: args `[{module, name, kind, args}]`; answers
/// `{"result", "reports"}` or `{"__error__": {"message"}}`.
pub const SV_CALL: &str = "sv.call";
/// The prefix of a stub's builtin name.
pub const STUB_PREFIX: &str = "__sv__:";
/// The prefix of the builtin names of `sv_client`'s functions.
pub const CLIENT_PREFIX: &str = "sv_client.";
/// Host natives behind `sv_client.register`, `unregister` and `resolve_url`.
pub const SV_REGISTER: &str = "sv.register";
pub const SV_UNREGISTER: &str = "sv.unregister";
pub const SV_RESOLVE: &str = "sv.resolve_url";
/// Hidden dicts in the builtins scope, shared by every run of a loaded program: test
/// clients (module name → client object) and, without a host that keeps them, the
/// registered URLs.
const TEST_CLIENTS: &str = "__sv_test_clients__";
const REGISTRY: &str = "__sv_registry__";
/// Hidden builtins-scope table: provider module name → the scope its boundary types
/// were declared in.
const TYPES_TABLE: &str = "__sv_types__";

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
        let text = self.host.read_module(provider);
        let parsed = text.as_ref().map(|t| crate::parser::parse(t).module);
        let wanted: Vec<&str> = imp.items.iter().map(|i| &*i.name.name).collect();
        let types = match (&parsed, &text) {
            (Some(m), Some(t)) => self.declare_boundary_types(m, t, &wanted, provider, &module)?,
            _ => None,
        };
        for item in &imp.items {
            let name = &*item.name.name;
            let bind = item.alias.as_ref().unwrap_or(&item.name);
            if let Some(v) = types.as_ref().and_then(|s| scope_get(s, name)) {
                scope_define(scope, bind.name.clone(), v);
                continue;
            }
            let (kind, params, ret) = match (&parsed, &text) {
                (Some(m), Some(t)) => describe(m, t, name),
                _ => (Kind::Unknown, Vec::new(), String::new()),
            };
            let stub = format!(
                "{STUB_PREFIX}{module}:{name}:{}:{}:{ret}",
                kind.as_str(),
                params.join(",")
            );
            scope_define(scope, bind.name.clone(), Value::Builtin(Rc::from(stub)));
        }
        // The types the imported ones refer to come along under their own names (so
        // nested fields rehydrate), unless the consumer already has that name.
        if let Some(types) = &types {
            let vars = types.borrow().vars.to_vec();
            for (k, v) in vars {
                if scope_get(scope, &k).is_none() {
                    scope_define(scope, k, v);
                }
            }
        }
        Ok(())
    }

    /// The provider's objects and enums that the import names, with every object and
    /// enum they mention (transitively), declared from the provider's source in a scope
    /// of their own: values of these types cross the boundary (spec point 4). Their
    /// methods come along; the provider's other module-level names do not.
    fn declare_boundary_types(
        &mut self,
        m: &ast::Module,
        text: &str,
        wanted: &[&str],
        provider: &std::path::Path,
        module: &str,
    ) -> R<Option<ScopeRef>> {
        let items = boundary_items(m, text, wanted);
        if items.is_empty() {
            return Ok(None);
        }
        let sf = crate::span::SourceFile::new(provider.display().to_string(), text.to_string());
        let file = self.add_file(sf);
        let scope = Scope::new_module(self.builtins.clone());
        let ctx = super::Ctx::module(scope.clone(), file);
        self.declare_items(&items, &ctx, provider, &Rc::from(module), true)?;
        // Kept so the provider's return annotations resolve among its own names.
        let types = Value::Module(Rc::new(ModuleObj {
            name: Rc::from(module),
            scope: scope.clone(),
        }));
        self.sv_table(TYPES_TABLE)
            .borrow_mut()
            .insert(HashKey(Value::str(module)), types);
        Ok(Some(scope))
    }

    /// Call a stub: a function's result, or a walker stub (its fields and `reports`).
    pub(super) fn call_sv_stub(
        &mut self,
        stub: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let mut parts = stub.trim_start_matches(STUB_PREFIX).splitn(5, ':');
        let module = parts.next().unwrap_or_default().to_string();
        let name = parts.next().unwrap_or_default().to_string();
        let kind = parts.next().unwrap_or("unknown").to_string();
        let params: Vec<&str> = parts
            .next()
            .unwrap_or_default()
            .split(',')
            .filter(|p| !p.is_empty())
            .collect();
        let ret = parts.next().unwrap_or_default();
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
        let answer = if let Some(client) = self.sv_test_client(&module) {
            self.call_test_client(&client, &request)
                .map_err(|e| self.err("RuntimeError", format!("{what}: {e}")))?
        } else {
            self.sv_remote(&request, &what)?
        };
        self.sv_answer(answer, &module, &name, ret, &what)
    }

    /// The host's answer to one stub call.
    fn sv_remote(&mut self, request: &Json, what: &str) -> R<Json> {
        Ok(
            match self
                .host
                .call_native(SV_CALL, std::slice::from_ref(request))
            {
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
            },
        )
    }

    /// A stub call's value from its answer: a function's result (rehydrated by the
    /// provider's return annotation, and objects by their type tag), or the walker.
    fn sv_answer(
        &mut self,
        answer: Json,
        module: &str,
        name: &str,
        ret: &str,
        what: &str,
    ) -> R<Value> {
        if let Some(e) = answer.get("__error__") {
            let msg = e
                .get("message")
                .and_then(Json::as_str)
                .unwrap_or("unknown error");
            return Err(self.err("RuntimeError", format!("{what}: {msg}")));
        }
        let result = answer.get("result").cloned().unwrap_or(Json::Null);
        if answer.get("kind").and_then(Json::as_str) != Some("walker") {
            return Ok(self.sv_typed(&result, ret, module));
        }
        // The rehydrated walker: its public fields, `reports` attached.
        let mut names: Vec<String> = Vec::new();
        let mut values = Vec::new();
        if let Json::Object(fields) = &result {
            for (k, v) in fields {
                if !k.starts_with("_svc_") && k != "reports" {
                    names.push(k.clone());
                    values.push(self.sv_hydrate(v, module));
                }
            }
        }
        let reports: Vec<Value> = answer
            .get("reports")
            .and_then(Json::as_array)
            .map(|r| r.iter().map(|v| self.sv_hydrate(v, module)).collect())
            .unwrap_or_default();
        names.push("reports".into());
        values.push(Value::list(reports));
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let class = Rc::new(Class::builtin_record(name, &refs));
        Ok(Value::Instance(Rc::new(Instance {
            class,
            fields: std::cell::RefCell::new(values),
            extra: Default::default(),
            id: next_id(),
            user_hash: Default::default(),
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

impl Interp<'_> {
    /// A function result, rehydrated by the provider's return annotation where it names
    /// types the consumer has (objects, enums, lists and dicts of them), else by the
    /// objects' type tags.
    fn sv_typed(&mut self, result: &Json, ret: &str, module: &str) -> Value {
        if !ret.is_empty() {
            let (expr, diags) = crate::parser::parse_expr(ret);
            if diags.iter().all(|d| !d.is_error()) {
                let mut ctx = self.module_ctx(0);
                let types = self.sv_table(TYPES_TABLE);
                let found = types.borrow().get(&HashKey(Value::str(module))).cloned();
                if let Some(Value::Module(m)) = found {
                    ctx.scope = m.scope.clone();
                }
                let ty = self.type_info(&expr, &ctx);
                if !matches!(ty, TypeInfo::Any)
                    && let Ok(v) = self.from_wire(result, &ty)
                {
                    return v;
                }
            }
        }
        self.sv_hydrate(result, module)
    }

    /// A value from the wire where an object tagged `_svc_archetype: "obj"` whose
    /// `_svc_type` is one of the provider's types imported here becomes an instance
    /// of it; everything else as plain JSON values. Recursion follows the JSON nesting,
    /// which the JSON parser caps at 128 levels.
    fn sv_hydrate(&mut self, j: &Json, module: &str) -> Value {
        if let Json::Object(m) = j
            && m.get("_svc_archetype").and_then(Json::as_str) == Some("obj")
            && let Some(ty) = m.get("_svc_type").and_then(Json::as_str)
            && self
                .classes
                .get(ty)
                .is_some_and(|c| &*c.stored.module == module)
            && let Ok(v) = self.from_wire(j, &TypeInfo::Object(ty.to_string()))
        {
            return v;
        }
        match j {
            Json::Array(items) => {
                Value::list(items.iter().map(|x| self.sv_hydrate(x, module)).collect())
            }
            Json::Object(m) => {
                let mut d = Dict::default();
                for (k, x) in m {
                    let v = self.sv_hydrate(x, module);
                    d.insert(HashKey(Value::str(k)), v);
                }
                Value::dict(d)
            }
            other => self.generic_from_wire(other),
        }
    }

    /// A hidden dict of the builtins scope (created on first use).
    fn sv_table(&mut self, key: &str) -> Rc<std::cell::RefCell<Dict>> {
        if let Some(Value::Dict(d)) = scope_get(&self.builtins, key) {
            return d;
        }
        let d = Value::dict(Dict::default());
        scope_define(&self.builtins, Rc::from(key), d.clone());
        match d {
            Value::Dict(d) => d,
            _ => unreachable!("just made a dict"),
        }
    }

    fn sv_test_client(&mut self, module: &str) -> Option<Value> {
        let Some(Value::Dict(d)) = scope_get(&self.builtins, TEST_CLIENTS) else {
            return None;
        };
        let table = d.borrow();
        table.get(&HashKey(Value::str(module))).cloned()
    }

    /// A call routed to a test client: `client.post(path, body)` answers the provider's
    /// envelope, as a dict or as a response object with a `json()` method.
    fn call_test_client(&mut self, client: &Value, request: &Json) -> Result<Json, String> {
        let kind = request["kind"].as_str().unwrap_or("unknown");
        let kind = if kind == "walker" {
            "walker"
        } else {
            "function"
        };
        let name = request["name"].as_str().unwrap_or_default();
        let path = Value::str(&format!("/{kind}/{name}"));
        let body = self.generic_from_wire(&request["args"]);
        let describe = |it: &mut Self, e: super::Interrupt| match it.call_error(e) {
            crate::endpoint::CallError::Runtime { message, .. } => message,
            other => format!("{other:?}"),
        };
        let mut answer = self
            .call_method_value(client, "post", vec![path, body], Vec::new())
            .map_err(|e| describe(self, e))?;
        if !matches!(answer, Value::Dict(_)) {
            answer = self
                .call_method_value(&answer, "json", Vec::new(), Vec::new())
                .map_err(|e| describe(self, e))?;
        }
        let envelope = self.to_wire(&answer).map_err(|e| describe(self, e))?;
        match envelope {
            Json::Object(env) if env.get("ok") == Some(&Json::Bool(true)) => Ok(json!({
                "kind": kind,
                "result": env.get("data").and_then(|d| d.get("result")).cloned().unwrap_or(Json::Null),
                "reports": env.get("data").and_then(|d| d.get("reports")).cloned().unwrap_or(json!([])),
            })),
            Json::Object(env) => Ok(json!({"__error__": {"message": env
                .get("error")
                .and_then(|e| e.get("message"))
                .and_then(Json::as_str)
                .unwrap_or("the test client answered an error")}})),
            _ => Err("the test client's post() did not answer an envelope".into()),
        }
    }

    /// A value bound by `import from sv_client { .. }` or
    /// `import from jaclang.runtimelib { sv_client }`.
    pub(super) fn sv_client_member(&mut self, module: &str, name: &str) -> R<Value> {
        if module == "sv_client" && SV_CLIENT_NAMES.contains(&name) {
            return Ok(Value::Builtin(Rc::from(format!("{CLIENT_PREFIX}{name}"))));
        }
        if module != "sv_client" && name == "sv_client" {
            return Ok(Value::Module(self.builtin_module("sv_client")));
        }
        Err(self.err(
            "ImportError",
            format!("cannot import name '{name}' from '{module}'"),
        ))
    }

    /// `sv_client.<f>(..)` (spec "Service-to-service calls", point 8).
    pub(super) fn call_sv_client(
        &mut self,
        f: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let params: &[&str] = match f {
            "register" => &["module_name", "url"],
            "register_test_client" => &["module_name", "client"],
            "unregister" | "unregister_test_client" | "resolve_url" => &["module_name"],
            "clear_test_clients" => &[],
            _ => {
                return Err(self.err(
                    "AttributeError",
                    format!("module 'sv_client' has no attribute '{f}'"),
                ));
            }
        };
        let mut vals: Vec<Option<Value>> = vec![None; params.len()];
        if args.len() > params.len() {
            return Err(self.err(
                "TypeError",
                format!(
                    "{f}() takes {} positional arguments but {} were given",
                    params.len(),
                    args.len()
                ),
            ));
        }
        for (i, a) in args.into_iter().enumerate() {
            vals[i] = Some(a);
        }
        for (k, v) in kwargs {
            let Some(i) = params.iter().position(|p| **p == *k) else {
                return Err(self.err(
                    "TypeError",
                    format!("{f}() got an unexpected keyword argument '{k}'"),
                ));
            };
            vals[i] = Some(v);
        }
        if let Some(i) = vals.iter().position(Option::is_none) {
            return Err(self.err(
                "TypeError",
                format!(
                    "{f}() missing 1 required positional argument: '{}'",
                    params[i]
                ),
            ));
        }
        let vals: Vec<Value> = vals.into_iter().flatten().collect();
        let text = |it: &mut Self, v: &Value, what: &str| -> R<String> {
            match v {
                Value::Str(s) => Ok(s.to_string()),
                other => Err(it.err(
                    "TypeError",
                    format!("{f}(): {what} must be a str, not {}", other.type_name()),
                )),
            }
        };
        match f {
            "register" => {
                let module = text(self, &vals[0], "module_name")?;
                let url = text(self, &vals[1], "url")?;
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(self.err(
                        "ValueError",
                        format!("register(): '{url}' is not an http:// URL"),
                    ));
                }
                let table = self.sv_table(REGISTRY);
                table
                    .borrow_mut()
                    .insert(HashKey(Value::str(&module)), Value::str(&url));
                if let Some(Err(e)) = self
                    .host
                    .call_native(SV_REGISTER, &[json!(module), json!(url)])
                {
                    return Err(self.err("RuntimeError", e.to_string()));
                }
                Ok(Value::None)
            }
            "unregister" => {
                let module = text(self, &vals[0], "module_name")?;
                let table = self.sv_table(REGISTRY);
                table
                    .borrow_mut()
                    .shift_remove(&HashKey(Value::str(&module)));
                let _ = self.host.call_native(SV_UNREGISTER, &[json!(module)]);
                Ok(Value::None)
            }
            "resolve_url" => {
                let module = text(self, &vals[0], "module_name")?;
                match self.host.call_native(SV_RESOLVE, &[json!(module)]) {
                    Some(Ok(Json::String(url))) => return Ok(Value::str(&url)),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(self.err("RuntimeError", e.to_string())),
                    None => {}
                }
                let table = self.sv_table(REGISTRY);
                let found = table.borrow().get(&HashKey(Value::str(&module))).cloned();
                found.ok_or_else(|| {
                    self.err(
                        "RuntimeError",
                        format!(
                            "sv-to-sv service '{module}' not registered: set {} or call \
                             sv_client.register()",
                            crate::names::sv_env_var(&module)
                        ),
                    )
                })
            }
            "register_test_client" => {
                let module = text(self, &vals[0], "module_name")?;
                let table = self.sv_table(TEST_CLIENTS);
                table
                    .borrow_mut()
                    .insert(HashKey(Value::str(&module)), vals[1].clone());
                Ok(Value::None)
            }
            "unregister_test_client" => {
                let module = text(self, &vals[0], "module_name")?;
                let table = self.sv_table(TEST_CLIENTS);
                table
                    .borrow_mut()
                    .shift_remove(&HashKey(Value::str(&module)));
                Ok(Value::None)
            }
            _ => {
                let table = self.sv_table(TEST_CLIENTS);
                table.borrow_mut().clear();
                Ok(Value::None)
            }
        }
    }
}

/// Whether `name` is a walker or a function of the provider, with a function's
/// parameter names and its return annotation's source text (empty when none).
fn describe(m: &ast::Module, text: &str, name: &str) -> (Kind, Vec<String>, String) {
    for item in &m.items {
        match item {
            Item::Archetype(a) if &*a.name.name == name && a.kind == ArchKind::Walker => {
                return (Kind::Walker, Vec::new(), String::new());
            }
            Item::Ability(ab) if ab.name.as_ref().is_some_and(|n| &*n.name == name) => {
                let Some(sig) = &ab.signature else {
                    return (Kind::Function, Vec::new(), String::new());
                };
                let params = sig
                    .params
                    .iter()
                    .filter(|p| p.kind == ast::ParamKind::Normal)
                    .map(|p| p.name.name.to_string())
                    .collect();
                let ret = sig
                    .ret
                    .as_ref()
                    .and_then(|r| text.get(r.span.start as usize..r.span.end as usize))
                    .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
                    .unwrap_or_default();
                return (Kind::Function, params, ret);
            }
            _ => {}
        }
    }
    (Kind::Unknown, Vec::new(), String::new())
}

/// The provider's `obj`/`class` archetypes and enums among `wanted`, with every one
/// of them their source mentions, transitively (field types, bases, defaults), in the
/// provider's order. Nodes, edges and walkers are not values that cross.
fn boundary_items(m: &ast::Module, text: &str, wanted: &[&str]) -> Vec<Item> {
    let span_text = |sp: crate::span::Span| text.get(sp.start as usize..sp.end as usize);
    let mut types: HashMap<&str, (usize, &str)> = HashMap::new();
    for (i, item) in m.items.iter().enumerate() {
        match item {
            Item::Archetype(a) if matches!(a.kind, ArchKind::Obj | ArchKind::Class) => {
                types.insert(&a.name.name, (i, span_text(a.span).unwrap_or_default()));
            }
            Item::Enum(e) => {
                types.insert(&e.name.name, (i, span_text(e.span).unwrap_or_default()));
            }
            _ => {}
        }
    }
    let mut chosen: Vec<usize> = Vec::new();
    let mut work: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|w| types.contains_key(w))
        .collect();
    let mut seen: std::collections::HashSet<&str> = work.iter().copied().collect();
    while let Some(name) = work.pop() {
        let (index, source) = types[name];
        chosen.push(index);
        for word in identifiers(source) {
            if types.contains_key(word) && seen.insert(word) {
                let (key, _) = types
                    .get_key_value(word)
                    .map(|(k, v)| (*k, v))
                    .unwrap_or((word, &(0, "")));
                work.push(key);
            }
        }
    }
    chosen.sort_unstable();
    chosen.into_iter().map(|i| m.items[i].clone()).collect()
}

/// The identifiers of a piece of source text (a cheap over-approximation of the names
/// a declaration mentions: words in strings and comments are harmless extras).
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        })
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
