//! The interpreter side of `crate::serve`: running an app's module code once, the endpoint table, JSON
//! coercion of arguments and the JSON form of results.

use super::encode::{Dialect, Key, Out as _, Part, Shape, TreeOut, identity};
use super::instance_id;
use super::value::*;
use super::{Ctx, Interp, Interrupt, Program, R};
use crate::ast::{self, ArchKind, ExprKind as E, Item};
use crate::endpoint::*;
use crate::host::{Host, HostError, format_id, parse_id};
use crate::limits::Limits;

/// A program loaded for serving: parse, check and run module-level code once; each call
/// then starts from this state with a fresh graph.
pub struct LoadedApp {
    pub program: Program,
    pub endpoints: Vec<EndpointInfo>,
    /// The `@subscribe` handlers (not endpoints), in file order.
    pub subscriptions: Vec<SubscriptionInfo>,
    /// Text the module-level code printed while loading.
    pub load_output: String,
}

use serde_json::{Map, Value as Json, json};
use std::path::Path;
use std::rc::Rc;

/// Archetypes nested deeper than this in one value are sent as references; plain
/// containers deeper than this are an error (a JSON parser refuses such depth anyway).
const WIRE_MAX_DEPTH: usize = 100;

/// Marker at the start of the limit message of an oversize response (the server maps it
/// to `RESPONSE_TOO_LARGE`).
pub const RESPONSE_TOO_LARGE: &str = "response too large";

/// The wire form of a value (`Interp::to_wire`), one top-level value at a time.
#[derive(Default)]
struct Wire {
    /// Anchors already expanded (a repeat or a cycle is sent as a reference).
    expanded: FxHashMap<Handle, ()>,
}

/// The members of an archetype's wire object: its public `has` fields (no statics, no
/// `:priv`/`:protect` fields, no walker `reports`).
fn wire_fields(class: &Class, fields: &[Value]) -> Vec<(Key, Part)> {
    class
        .fields
        .iter()
        .zip(fields.iter())
        .filter(|(f, _)| {
            !(f.is_static
                || matches!(
                    f.access,
                    Some(ast::Access::Priv) | Some(ast::Access::Protect)
                )
                || (&*f.name == "reports" && class.is_walker()))
        })
        .map(|(f, x)| (Key::Name(f.name.clone()), Part::Value(x.clone())))
        .collect()
}

impl Dialect for Wire {
    type Out = TreeOut;

    fn shape(
        &mut self,
        it: &mut Interp<'_>,
        v: &Value,
        depth: usize,
        out: &mut TreeOut,
    ) -> R<Shape> {
        if depth > WIRE_MAX_DEPTH && !matches!(v, Value::Anchor(_)) {
            return Err(it.err(
                "ValueError",
                format!("value nested more than {WIRE_MAX_DEPTH} levels deep cannot be sent"),
            ));
        }
        it.wire_charge(8)?;
        let leaf = match v {
            Value::None => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => json!(i),
            Value::BigInt(b) => {
                use num_traits::ToPrimitive;
                match b.to_u64() {
                    Some(u) => json!(u),
                    None => {
                        let text = b.to_string();
                        it.wire_charge(text.len())?;
                        Json::String(text)
                    }
                }
            }
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
            Value::Str(s) => {
                it.wire_charge(s.len())?;
                Json::String(s.to_string())
            }
            Value::Range(a, b, step) => {
                let n = super::ops::range_len(*a, *b, *step).max(0) as usize;
                it.wire_charge(n.saturating_mul(2))?;
                let items = it.iterate(v)?;
                return Ok(Shape::Values { id: None, items });
            }
            Value::List(l) => return Ok(Shape::list(l)),
            Value::Tuple(t) => return Ok(Shape::tuple(t)),
            Value::Set(_)
            | Value::FrozenSet(_)
            | Value::Iter(..)
            | Value::Lazy(_)
            | Value::View(_) => {
                let items = it.iterate(v)?;
                return Ok(Shape::Values { id: None, items });
            }
            Value::Dict(d) => return Ok(Shape::dict(d)),
            Value::EnumMember(m) => {
                return Ok(Shape::instead(m.value.clone(), true));
            }
            Value::Anchor(h) => return it.wire_anchor(self, *h, depth, out),
            Value::Instance(i) => {
                let class = i.class.clone();
                let mut entries = wire_fields(&class, &i.fields.borrow());
                if class.is_exception() {
                    entries.push((
                        Key::Fixed("message"),
                        Part::Lit(Json::String(it.to_str(v)?)),
                    ));
                }
                entries.push((
                    Key::Fixed("_svc_type"),
                    Part::Lit(Json::String(class.name.to_string())),
                ));
                if class.is_walker() {
                    entries.push((
                        Key::Fixed("_svc_id"),
                        Part::Lit(Json::String(format_id(instance_id(i.id)))),
                    ));
                }
                let kind = match class.arch_kind() {
                    Some(ArchKind::Walker) => "walker",
                    _ => "obj",
                };
                entries.push((
                    Key::Fixed("_svc_archetype"),
                    Part::Lit(Json::String(kind.into())),
                ));
                return Ok(Shape::Object {
                    id: Some(identity(i)),
                    entries,
                });
            }
            other => {
                let text = it.to_str(other)?;
                it.wire_charge(text.len())?;
                Json::String(text)
            }
        };
        out.leaf(leaf);
        Ok(Shape::Leaf)
    }

    fn key(&mut self, it: &mut Interp<'_>, key: Key, out: &mut TreeOut) -> R<bool> {
        // The keys the encoder adds (`_svc_type`, ...) are not charged to the budget.
        let charged = !matches!(key, Key::Fixed(_));
        let text = match key.text() {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(other) => std::borrow::Cow::Owned(it.to_str(other)?),
        };
        if charged {
            it.wire_charge(text.len())?;
        }
        out.key(&text);
        Ok(true)
    }

    fn cycle(&mut self, it: &mut Interp<'_>) -> Interrupt {
        it.err("ValueError", "Circular reference detected")
    }
}

/// Run the module code of `path` (parsed and checked by `crate::load`); build its
/// endpoint table.
pub(crate) fn load_app(
    path: &Path,
    file: std::sync::Arc<crate::span::SourceFile>,
    module: &ast::Module,
    host: &mut dyn Host,
    limits: &Limits,
    as_main: bool,
) -> Result<LoadedApp, String> {
    let capture = CaptureHost {
        inner: host,
        out: String::new(),
    };
    let mut capture = capture;
    let (program, endpoints, subscriptions) = {
        let mut it = Interp::new(&mut capture, limits.clone());
        let fid = it.add_file(file);
        if let Err(e) = it
            .run_entry_module(path, module, fid, as_main)
            .and_then(|()| it.commit())
        {
            return Err(it.render_error(e));
        }
        let endpoints = match it.endpoint_table(module, fid) {
            Ok(e) => e,
            Err(e) => return Err(it.render_error(e)),
        };
        let ctx = it.module_ctx(fid);
        let subscriptions = match it.subscription_table(module, &ctx) {
            Ok(s) => s,
            Err(e) => return Err(it.render_error(e)),
        };
        (it.program(), endpoints, subscriptions)
    };
    Ok(LoadedApp {
        program,
        endpoints,
        subscriptions,
        load_output: capture.out,
    })
}

/// `@subscribe(...)`.
fn is_subscribe(d: &ast::Expr) -> bool {
    matches!(&d.kind, E::Call { func, .. } if matches!(&func.kind, E::Name(n) if &**n == "subscribe"))
}

/// Collects what module code prints while an app loads.
struct CaptureHost<'a> {
    inner: &'a mut dyn Host,
    out: String,
}

impl Host for CaptureHost<'_> {
    fn load(
        &mut self,
        id: crate::host::AnchorId,
    ) -> Result<Option<crate::host::StoredAnchor>, HostError> {
        self.inner.load(id)
    }
    fn load_many(
        &mut self,
        ids: &[crate::host::AnchorId],
    ) -> Result<Vec<crate::host::StoredAnchor>, HostError> {
        self.inner.load_many(ids)
    }
    fn load_edges(
        &mut self,
        id: crate::host::AnchorId,
    ) -> Result<Vec<crate::host::AnchorId>, HostError> {
        self.inner.load_edges(id)
    }
    fn commit(&mut self, changes: crate::host::CommitSet) -> Result<(), HostError> {
        self.inner.commit(changes)
    }
    fn user_root(&self) -> crate::host::AnchorId {
        self.inner.user_root()
    }
    fn shared_root(&self) -> crate::host::AnchorId {
        self.inner.shared_root()
    }
    fn write_stdout(&mut self, text: &str) {
        self.out.push_str(text);
    }
    fn call_native(&mut self, name: &str, args: &[Json]) -> Option<Result<Json, HostError>> {
        self.inner.call_native(name, args)
    }
    fn read_module(&mut self, path: &Path) -> Option<String> {
        self.inner.read_module(path)
    }
}

/// A declared parameter: name, type annotation, required (no default).
type Declared = (Rc<str>, Option<Rc<ast::Expr>>, bool);

impl Interp<'_> {
    pub(super) fn module_ctx(&self, file: u32) -> Ctx {
        let scope = match &self.main_module {
            Some(m) => m.scope.clone(),
            None => self.builtins.clone(),
        };
        Ctx::module(scope, file)
    }

    /// The app's own walkers and functions (declared in the main file), in file order.
    /// Names starting with `_` are middleware walkers, not endpoints.
    fn endpoint_table(&mut self, module: &ast::Module, file: u32) -> R<Vec<EndpointInfo>> {
        let ctx = self.module_ctx(file);
        let mut out = Vec::new();
        for item in &module.items {
            match item {
                Item::Archetype(a) if a.kind == ArchKind::Walker => {
                    let Some(Value::Class(class)) = self.main_global(&a.name.name) else {
                        continue;
                    };
                    let mut spec = self.rest_spec(&a.decorators, &ctx)?;
                    self.walker_specs(&class, &mut spec);
                    let mut params = Vec::new();
                    for f in &class.fields {
                        if f.is_static || f.postinit || &*f.name == "reports" {
                            continue;
                        }
                        let ty = match &f.ty {
                            Some(t) => self.type_info(t, &ctx),
                            None => TypeInfo::Any,
                        };
                        let default = match &f.default {
                            Some(d) => self.constant_json(d, &ctx),
                            None => None,
                        };
                        params.push(ParamInfo {
                            name: f.name.to_string(),
                            ty,
                            required: f.default.is_none(),
                            default,
                        });
                    }
                    out.push(EndpointInfo {
                        kind: EndpointKind::Walker,
                        name: a.name.name.to_string(),
                        public: a.access == Some(ast::Access::Pub),
                        params,
                        returns: None,
                        spec,
                        doc: a.doc.clone(),
                        is_async: a.is_async,
                    });
                }
                Item::Ability(ab) if ab.kind == ast::AbilityKind::Def => {
                    let Some(name) = &ab.name else { continue };
                    // An event handler is not an endpoint.
                    if ab.decorators.iter().any(is_subscribe) {
                        continue;
                    }
                    let spec = self.rest_spec(&ab.decorators, &ctx)?;
                    let mut params = Vec::new();
                    if let Some(sig) = &ab.signature {
                        for p in &sig.params {
                            if p.kind != ast::ParamKind::Normal {
                                continue;
                            }
                            let ty = match &p.ty {
                                Some(t) => self.type_info(t, &ctx),
                                None => TypeInfo::Any,
                            };
                            let default = match &p.default {
                                Some(d) => self.constant_json(d, &ctx),
                                None => None,
                            };
                            params.push(ParamInfo {
                                name: p.name.name.to_string(),
                                ty,
                                required: p.default.is_none(),
                                default,
                            });
                        }
                    }
                    let returns = ab
                        .signature
                        .as_ref()
                        .and_then(|s| s.ret.as_ref())
                        .map(|t| self.type_info(t, &ctx));
                    out.push(EndpointInfo {
                        kind: EndpointKind::Function,
                        name: name.name.to_string(),
                        public: ab.access == Some(ast::Access::Pub),
                        params,
                        returns,
                        spec,
                        doc: ab.doc.clone(),
                        is_async: ab.is_async,
                    });
                }
                _ => {}
            }
        }
        out.retain(|e| !e.name.starts_with('_'));
        Ok(out)
    }

    /// `@restspec(...)` keyword arguments, evaluated in module scope.
    fn rest_spec(&mut self, decorators: &[ast::Expr], ctx: &Ctx) -> R<RestSpec> {
        let mut spec = RestSpec::default();
        for d in decorators {
            let E::Call { func, args } = &d.kind else {
                continue;
            };
            let is_restspec = matches!(&func.kind, E::Name(n) if &**n == "restspec");
            if !is_restspec {
                continue;
            }
            for a in args {
                let ast::Arg::Keyword(k, v) = a else { continue };
                let v = self.eval(v, ctx)?;
                let text = match &v {
                    Value::EnumMember(m) => match &m.value {
                        Value::Str(s) => s.to_string(),
                        other => self.to_str(other)?,
                    },
                    other => self.to_str(other)?,
                };
                match &*k.name {
                    "method" => spec.method = text.to_ascii_uppercase(),
                    "path" => spec.path = (!text.is_empty()).then_some(text),
                    "protocol" => {
                        spec.protocol = match text.to_ascii_lowercase().as_str() {
                            "webhook" => Protocol::Webhook,
                            "websocket" => Protocol::Websocket,
                            _ => Protocol::Http,
                        }
                    }
                    "broadcast" => spec.broadcast = self.truthy(&v)?,
                    "produces" => spec.produces = (!text.is_empty()).then_some(text),
                    "envelope" => spec.envelope = self.truthy(&v)?,
                    _ => {}
                }
            }
        }
        Ok(spec)
    }

    /// A walker's nested `__specs__` class: its static `webhook` setting (the alternate
    /// webhook flavor, which makes the walker a WEBHOOK walker) and its static `path`
    /// (used when `@restspec` names none). Malformed settings are ignored, with the
    /// defaults taking their place (`type` header, `name` `X-API-KEY`).
    fn walker_specs(&mut self, class: &Class, spec: &mut RestSpec) {
        let Some(Value::Class(specs)) = class.find_static("__specs__") else {
            return;
        };
        if spec.path.is_none()
            && let Some(v) = specs.find_static("path")
            && let Ok(Json::String(p)) = self.to_wire(&v)
            && !p.is_empty()
        {
            spec.path = Some(p);
        }
        let Some(v) = specs.find_static("webhook") else {
            return;
        };
        let Ok(Json::Object(setting)) = self.to_wire(&v) else {
            return;
        };
        let placement = match setting.get("type").and_then(Json::as_str) {
            Some("query") => KeyPlacement::Query,
            Some("path") => KeyPlacement::Path,
            Some("body") => KeyPlacement::Body,
            _ => KeyPlacement::Header,
        };
        let name = setting
            .get("name")
            .and_then(Json::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(DEFAULT_WEBHOOK_KEY_NAME)
            .to_string();
        spec.protocol = Protocol::Webhook;
        spec.webhook = Some(WebhookKeySpec { placement, name });
    }

    /// The JSON of a default when it evaluates without side effects worth worrying about
    /// (literals, containers, enum members).
    fn constant_json(&mut self, e: &ast::Expr, ctx: &Ctx) -> Option<Json> {
        match &e.kind {
            E::Call { .. } | E::Spawn { .. } | E::Connect { .. } | E::Lambda { .. } => None,
            _ => {
                let v = self.eval(e, ctx).ok()?;
                self.to_wire(&v).ok()
            }
        }
    }

    /// The server's view of a type annotation.
    pub(super) fn type_info(&mut self, t: &ast::Expr, ctx: &Ctx) -> TypeInfo {
        match &t.kind {
            E::None => TypeInfo::None,
            E::Name(n) => match &**n {
                "int" => TypeInfo::Int,
                "float" => TypeInfo::Float,
                "str" => TypeInfo::Str,
                "bool" => TypeInfo::Bool,
                "list" => TypeInfo::List(Box::new(TypeInfo::Any)),
                "dict" => TypeInfo::Dict(Box::new(TypeInfo::Str), Box::new(TypeInfo::Any)),
                "tuple" => TypeInfo::Tuple(vec![]),
                "UploadFile" => TypeInfo::UploadFile,
                "any" | "object" => TypeInfo::Any,
                other => match scope_get(&ctx.scope, other) {
                    Some(Value::Class(c)) if c.kind == ClassKind::Enum => {
                        let mut values = Vec::new();
                        for m in c.members.borrow().iter() {
                            if let Ok(j) = self.to_wire(&m.value) {
                                values.push(j);
                            }
                        }
                        TypeInfo::Enum(c.name.to_string(), values)
                    }
                    Some(Value::Class(c)) if c.arch_kind().is_some() => {
                        TypeInfo::Object(c.name.to_string())
                    }
                    _ => TypeInfo::Any,
                },
            },
            E::Index { obj, index, .. } => {
                let E::Name(n) = &obj.kind else {
                    return TypeInfo::Any;
                };
                let items: Vec<&ast::Expr> = match &index.kind {
                    E::Tuple(items) => items.iter().collect(),
                    _ => vec![&**index],
                };
                match &**n {
                    "list" | "set" => TypeInfo::List(Box::new(
                        items
                            .first()
                            .map_or(TypeInfo::Any, |t| self.type_info(t, ctx)),
                    )),
                    "dict" => TypeInfo::Dict(
                        Box::new(
                            items
                                .first()
                                .map_or(TypeInfo::Str, |t| self.type_info(t, ctx)),
                        ),
                        Box::new(
                            items
                                .get(1)
                                .map_or(TypeInfo::Any, |t| self.type_info(t, ctx)),
                        ),
                    ),
                    "tuple" => {
                        TypeInfo::Tuple(items.iter().map(|t| self.type_info(t, ctx)).collect())
                    }
                    "Optional" => TypeInfo::Optional(Box::new(
                        items
                            .first()
                            .map_or(TypeInfo::Any, |t| self.type_info(t, ctx)),
                    )),
                    _ => TypeInfo::Any,
                }
            }
            E::Binary {
                op: ast::BinOp::BitOr,
                left,
                right,
            } => {
                let (l, r) = (self.type_info(left, ctx), self.type_info(right, ctx));
                match (l, r) {
                    (TypeInfo::None, x) | (x, TypeInfo::None) => TypeInfo::Optional(Box::new(x)),
                    (TypeInfo::Union(mut a), b) => {
                        a.push(b);
                        TypeInfo::Union(a)
                    }
                    (a, b) => TypeInfo::Union(vec![a, b]),
                }
            }
            _ => TypeInfo::Any,
        }
    }

    // -----------------------------------------------------------------------------------
    // Calls
    // -----------------------------------------------------------------------------------

    pub(super) fn call_error(&mut self, e: Interrupt) -> CallError {
        match e {
            Interrupt::Limit(m) if m.starts_with(RESPONSE_TOO_LARGE) => {
                CallError::ResponseTooLarge(m)
            }
            Interrupt::Limit(m) if m == super::CANCELLED => CallError::Cancelled,
            Interrupt::Limit(m) => CallError::Limit(m),
            Interrupt::Host(h) => CallError::from_host(h, self.durable_commits > 0),
            Interrupt::Suspend(_) => CallError::Limit("`yield` outside its generator".into()),
            Interrupt::Exc(err) => {
                let class = self.class_of(&err.value);
                let msg = self.to_str(&err.value).unwrap_or_default();
                let frame = err.trace.first().map(|f| (f.file, f.span)).or(err.origin);
                let at = match frame
                    .and_then(|(f, s)| self.files.get(f as usize).map(|file| (file.clone(), s)))
                {
                    Some((file, span)) => {
                        let (line, col) = file.line_col(span.start);
                        format!(" (at {}:{line}:{col})", file.name)
                    }
                    None => String::new(),
                };
                CallError::Runtime {
                    exc_type: class.name.to_string(),
                    message: format!("{}: {msg}{at}", class.name),
                }
            }
        }
    }

    /// Coerce JSON arguments to declared parameters (name, type, required). A name not
    /// declared is a validation problem when `unknown` says how to word it, else
    /// ignored; a missing required one is "field required".
    fn coerce_args(
        &mut self,
        params: &[Declared],
        args: &Map<String, Json>,
        ctx: &Ctx,
        unknown: Option<&dyn Fn(&str) -> String>,
    ) -> Result<Vec<(Rc<str>, Value)>, CallError> {
        let mut kwargs = Vec::with_capacity(args.len());
        let mut problems = Vec::new();
        for (k, v) in args {
            match params.iter().find(|(n, _, _)| &**n == k.as_str()) {
                Some((n, ty, _)) => {
                    let ty = match ty {
                        Some(t) => self.type_info(t, ctx),
                        None => TypeInfo::Any,
                    };
                    match self.from_wire(v, &ty) {
                        Ok(val) => kwargs.push((n.clone(), val)),
                        Err(m) => problems.push((k.clone(), m)),
                    }
                }
                None => {
                    if let Some(word) = unknown {
                        problems.push((k.clone(), word(k)));
                    }
                }
            }
        }
        for (n, _, required) in params {
            if *required && !args.contains_key(&**n) {
                problems.push((n.to_string(), "field required".to_string()));
            }
        }
        if problems.is_empty() {
            Ok(kwargs)
        } else {
            Err(CallError::Validation(problems))
        }
    }

    /// Run walker `name` with JSON arguments from `start`.
    pub fn serve_spawn(
        &mut self,
        name: &str,
        args: &Map<String, Json>,
        start: Start,
    ) -> Result<CallOutcome, CallError> {
        let class = match self.main_global(name) {
            Some(Value::Class(c)) if c.is_walker() => c,
            _ => return Err(CallError::NotFound(format!("walker '{name}' not found"))),
        };
        let file = class.file;
        let ctx = self.module_ctx(file);
        let params: Vec<Declared> = class
            .fields
            .iter()
            .filter(|f| !f.postinit && !f.is_static && &*f.name != "reports")
            .map(|f| (f.name.clone(), f.ty.clone(), f.default.is_none()))
            .collect();
        let kwargs = self.coerce_args(
            &params,
            args,
            &ctx,
            Some(&|k| format!("unknown field: walker '{name}' has no field '{k}'")),
        )?;
        let walker = match self.construct(&class, vec![], kwargs) {
            Ok(w) => w,
            Err(e) => return Err(self.call_error(e)),
        };
        let loc = match start {
            Start::Root => self.root_handle().map(Value::Anchor),
            Start::Node(id) => match self.handle_of(id) {
                Ok(Some(h)) if self.can_read(h).unwrap_or(false) => Ok(Value::Anchor(h)),
                Ok(_) => {
                    return Err(CallError::NotFound(format!(
                        "node '{}' not found",
                        format_id(id)
                    )));
                }
                Err(e) => Err(e),
            },
        };
        self.serving = true;
        let result = loc
            .and_then(|loc| self.spawn(walker, loc))
            .and_then(|w| self.commit_last().map(|()| w));
        let walker = match result {
            Ok(w) => w,
            Err(e) => return Err(self.call_error(e)),
        };
        let reports = match self
            .get_attr(&walker, "reports")
            .and_then(|r| self.iterate(&r))
        {
            Ok(r) => r,
            Err(e) => return Err(self.call_error(e)),
        };
        let mut out = Vec::with_capacity(reports.len());
        for r in &reports {
            out.push(self.to_wire(r).map_err(|e| self.call_error(e))?);
        }
        let result = self.to_wire(&walker).map_err(|e| self.call_error(e))?;
        Ok(CallOutcome {
            result,
            reports: out,
        })
    }

    /// Call function `name` with JSON arguments.
    pub fn serve_call(
        &mut self,
        name: &str,
        args: &Map<String, Json>,
    ) -> Result<CallOutcome, CallError> {
        let func = match self.main_global(name) {
            Some(Value::Func(f)) => f,
            _ => return Err(CallError::NotFound(format!("function '{name}' not found"))),
        };
        let ctx = self.module_ctx(func.file);
        let params: Vec<Declared> = func
            .params
            .iter()
            .filter(|p| p.kind == ast::ParamKind::Normal)
            .map(|p| (p.name.clone(), p.ty.clone(), p.default.is_none()))
            .collect();
        let kwargs = self.coerce_args(
            &params,
            args,
            &ctx,
            Some(&|k| format!("unknown parameter: function '{name}' has no parameter '{k}'")),
        )?;
        // Every parameter plain and given: pass them positionally, in declaration order
        // (the same binding; it takes the call's fast path instead of matching names).
        // `coerce_args` gave each parameter at most once, by its own name.
        let (args, kwargs) = if kwargs.len() == func.params.len()
            && func.params.iter().all(|p| p.kind == ast::ParamKind::Normal)
        {
            let mut kwargs = kwargs;
            kwargs.sort_by_key(|(n, _)| func.params.iter().position(|p| p.name == *n));
            (kwargs.into_iter().map(|(_, v)| v).collect(), Vec::new())
        } else {
            (Vec::new(), kwargs)
        };
        self.serving = true;
        let r = self
            .call_function(&func, None, args, kwargs, None)
            .and_then(|v| {
                // An `async def` endpoint: its coroutine is run to its end here.
                let v = match v {
                    Value::Coroutine(_) => self.await_value(v)?,
                    v => v,
                };
                self.commit_last()?;
                Ok(v)
            });
        let v = match r {
            Ok(v) => v,
            Err(e) => return Err(self.call_error(e)),
        };
        let result = self.to_wire(&v).map_err(|e| self.call_error(e))?;
        let reports = std::mem::take(&mut self.top_reports);
        let mut out = Vec::with_capacity(reports.len());
        for r in &reports {
            out.push(self.to_wire(r).map_err(|e| self.call_error(e))?);
        }
        Ok(CallOutcome {
            result,
            reports: out,
        })
    }

    /// `serve::call_object_method`: construct obj `class`, call `method`, commit.
    pub fn serve_object_method(
        &mut self,
        class: &str,
        fields: &Map<String, Json>,
        method: &str,
        args: &[Json],
    ) -> Result<Json, CallError> {
        let class = match self.main_global(class) {
            Some(Value::Class(c))
                if c.arch_kind() == Some(ArchKind::Obj)
                    || c.kind == ClassKind::Arch(ArchKind::Class) =>
            {
                c
            }
            _ => return Err(CallError::NotFound(format!("obj '{class}' not found"))),
        };
        let ctx = self.module_ctx(class.file);
        // Fields the obj does not declare are ignored; none is required here (the
        // constructor reports a missing one as a runtime error).
        let params: Vec<Declared> = class
            .fields
            .iter()
            .filter(|f| !f.postinit && !f.is_static)
            .map(|f| (f.name.clone(), f.ty.clone(), false))
            .collect();
        let kwargs = self.coerce_args(&params, fields, &ctx, None)?;
        let args: Vec<Value> = args.iter().map(|a| self.generic_from_wire(a)).collect();
        self.serving = true;
        let result = self
            .construct(&class, vec![], kwargs)
            .and_then(|obj| self.call_method_value(&obj, method, args, vec![]))
            .and_then(|v| {
                self.commit()?;
                Ok(v)
            });
        match result {
            Ok(v) => self.to_wire(&v).map_err(|e| self.call_error(e)),
            Err(e) => Err(self.call_error(e)),
        }
    }

    // -----------------------------------------------------------------------------------
    // JSON on the wire
    // -----------------------------------------------------------------------------------

    /// The wire form of a value: archetypes become objects of their public fields plus
    /// `_svc_type`, `_svc_id` and `_svc_archetype`; enums their value.
    ///
    /// The encoder is cycle-safe and bounded: an anchor is expanded once per top-level
    /// value (a repeat, a cycle, or one nested deeper than `WIRE_MAX_DEPTH` becomes a
    /// reference `{_svc_id, _svc_type, _svc_archetype, _svc_ref: true}`); an anchor the
    /// caller may not read is a stub `{_svc_id, _svc_archetype, _svc_restricted: true}`
    /// with no fields; a cyclic object or container is a `ValueError`; and every value
    /// of one response draws on one byte budget (`Limits::max_response_bytes`).
    #[allow(clippy::wrong_self_convention)] // `self` is the interpreter doing the conversion, not the value converted
    pub fn to_wire(&mut self, v: &Value) -> R<Json> {
        let mut out = TreeOut::default();
        self.encode(&mut Wire::default(), v, &mut out)?;
        Ok(out.finish())
    }

    /// Charge `n` bytes of output to the response budget.
    fn wire_charge(&mut self, n: usize) -> R<()> {
        self.wire_spent = self.wire_spent.saturating_add(n);
        if self.wire_spent > self.limits.max_response_bytes {
            return Err(Interrupt::Limit(format!(
                "{RESPONSE_TOO_LARGE}: the response would exceed {} bytes \
                 ([scale.limits] max_response_bytes)",
                self.limits.max_response_bytes
            )));
        }
        Ok(())
    }

    /// A node or edge: its fields after a READ check, once per top-level value.
    fn wire_anchor(
        &mut self,
        w: &mut Wire,
        h: Handle,
        depth: usize,
        out: &mut TreeOut,
    ) -> R<Shape> {
        let (class, id) = { (self.graph.slot(h).class.clone(), self.graph.id_of(h)) };
        let kind = if class.is_edge() { "edge" } else { "node" };
        let mut m = Map::new();
        if !self.can_read(h)? {
            m.insert("_svc_id".into(), Json::String(format_id(id)));
            m.insert("_svc_archetype".into(), Json::String(kind.into()));
            m.insert("_svc_restricted".into(), Json::Bool(true));
            out.leaf(Json::Object(m));
            return Ok(Shape::Leaf);
        }
        if depth > WIRE_MAX_DEPTH || w.expanded.insert(h, ()).is_some() {
            m.insert("_svc_type".into(), Json::String(class.name.to_string()));
            m.insert("_svc_id".into(), Json::String(format_id(id)));
            m.insert("_svc_archetype".into(), Json::String(kind.into()));
            m.insert("_svc_ref".into(), Json::Bool(true));
            out.leaf(Json::Object(m));
            return Ok(Shape::Leaf);
        }
        self.decode_fields(h)?;
        let mut entries = wire_fields(&class, &self.graph.slot(h).fields);
        entries.push((
            Key::Fixed("_svc_type"),
            Part::Lit(Json::String(class.name.to_string())),
        ));
        entries.push((
            Key::Fixed("_svc_id"),
            Part::Lit(Json::String(format_id(id))),
        ));
        entries.push((
            Key::Fixed("_svc_archetype"),
            Part::Lit(Json::String(kind.into())),
        ));
        Ok(Shape::Object { id: None, entries })
    }

    /// Coerce a JSON argument to the declared type; `Err` is the validation message.
    #[allow(clippy::wrong_self_convention)] // `self` is the interpreter doing the conversion, not the value converted
    pub fn from_wire(&mut self, j: &Json, ty: &TypeInfo) -> Result<Value, String> {
        let kind = |j: &Json| match j {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        };
        match ty {
            TypeInfo::Any | TypeInfo::UploadFile | TypeInfo::Union(_) | TypeInfo::Tuple(_) => {
                Ok(self.generic_from_wire(j))
            }
            TypeInfo::None => match j {
                Json::Null => Ok(Value::None),
                other => Err(format!("expected null, got {}", kind(other))),
            },
            TypeInfo::Optional(inner) => match j {
                Json::Null => Ok(Value::None),
                other => self.from_wire(other, inner),
            },
            TypeInfo::Int => match j {
                Json::Number(n) => match n.as_i64() {
                    Some(i) => Ok(Value::Int(i)),
                    None => match n.as_f64() {
                        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Value::Int(f as i64)),
                        _ => Err(format!("expected an integer, got {n}")),
                    },
                },
                Json::String(s) => crate::pyfmt::parse_int(s.trim(), 10)
                    .map(Value::from_bigint)
                    .ok_or_else(|| format!("expected an integer, got '{s}'")),
                Json::Bool(_) => Err("expected an integer, got boolean".into()),
                other => Err(format!("expected an integer, got {}", kind(other))),
            },
            TypeInfo::Float => match j {
                Json::Number(n) => n
                    .as_f64()
                    .map(Value::Float)
                    .ok_or_else(|| "expected a number".into()),
                Json::String(s) => crate::pyfmt::parse_float(s.trim())
                    .map(Value::Float)
                    .ok_or_else(|| format!("expected a number, got '{s}'")),
                other => Err(format!("expected a number, got {}", kind(other))),
            },
            TypeInfo::Str => match j {
                Json::String(s) => Ok(Value::str(s)),
                other => Err(format!("expected a string, got {}", kind(other))),
            },
            TypeInfo::Bool => match j {
                Json::Bool(b) => Ok(Value::Bool(*b)),
                Json::String(s) => match s.to_ascii_lowercase().as_str() {
                    "true" | "1" | "yes" | "on" => Ok(Value::Bool(true)),
                    "false" | "0" | "no" | "off" => Ok(Value::Bool(false)),
                    _ => Err(format!("expected a boolean, got '{s}'")),
                },
                other => Err(format!("expected a boolean, got {}", kind(other))),
            },
            TypeInfo::List(inner) => match j {
                Json::Array(items) => {
                    let mut out = Vec::with_capacity(items.len());
                    for (i, x) in items.iter().enumerate() {
                        out.push(
                            self.from_wire(x, inner)
                                .map_err(|m| format!("item {i}: {m}"))?,
                        );
                    }
                    Ok(Value::list(out))
                }
                other => Err(format!("expected an array, got {}", kind(other))),
            },
            TypeInfo::Dict(_, inner) => match j {
                Json::Object(m) => {
                    let mut d = Dict::default();
                    for (k, x) in m {
                        let v = self
                            .from_wire(x, inner)
                            .map_err(|e| format!("key '{k}': {e}"))?;
                        d.insert(HashKey(Value::str(k)), v);
                    }
                    Ok(Value::dict(d))
                }
                other => Err(format!("expected an object, got {}", kind(other))),
            },
            TypeInfo::Enum(name, _) => {
                let Some(Value::Class(c)) = self
                    .main_global(name)
                    .or_else(|| self.classes.get(name.as_str()).cloned().map(Value::Class))
                else {
                    return Err(format!("unknown enum '{name}'"));
                };
                let members = c.members.borrow().clone();
                for m in &members {
                    let wire = self.to_wire(&m.value).map_err(|_| "bad enum".to_string())?;
                    if &wire == j || matches!(j, Json::String(s) if *s == *m.name) {
                        return Ok(Value::EnumMember(m.clone()));
                    }
                }
                Err(format!("expected one of the values of {name}"))
            }
            TypeInfo::Object(name) => {
                let Some(class) = self.classes.get(name.as_str()).cloned() else {
                    return Err(format!("unknown type '{name}'"));
                };
                match j {
                    Json::String(s) if class.is_node() => {
                        let id = parse_id(s).ok_or_else(|| format!("expected a {name} id"))?;
                        match self.handle_of(id) {
                            Ok(Some(h))
                                if self.can_read(h).unwrap_or(false)
                                    && self.graph.slot(h).class.is_sub(&class) =>
                            {
                                Ok(Value::Anchor(h))
                            }
                            _ => Err(format!("no {name} with id '{s}'")),
                        }
                    }
                    Json::Object(m) if class.arch_kind() == Some(ArchKind::Obj) => {
                        let mut kwargs = Vec::new();
                        for (k, x) in m {
                            if k.starts_with("_svc_") {
                                continue;
                            }
                            let Some(&i) = class.field_index.get(k.as_str()) else {
                                return Err(format!("{name} has no field '{k}'"));
                            };
                            let fty = match class.fields[i].ty.clone() {
                                Some(t) => {
                                    // Field types name things in the declaring module.
                                    let mut ctx = self.module_ctx(class.file);
                                    if let Some(scope) = class.scope.borrow().clone() {
                                        ctx.scope = scope;
                                    }
                                    self.type_info(&t, &ctx)
                                }
                                None => TypeInfo::Any,
                            };
                            kwargs.push((Rc::from(k.as_str()), self.from_wire(x, &fty)?));
                        }
                        self.construct(&class, vec![], kwargs).map_err(|e| {
                            match self.call_error(e) {
                                CallError::Runtime { message, .. } => message,
                                other => format!("{other:?}"),
                            }
                        })
                    }
                    other => Err(format!("expected a {name}, got {}", kind(other))),
                }
            }
        }
    }

    pub(super) fn generic_from_wire(&mut self, j: &Json) -> Value {
        match j {
            Json::Null => Value::None,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            Json::String(s) => Value::str(s),
            Json::Array(items) => {
                Value::list(items.iter().map(|x| self.generic_from_wire(x)).collect())
            }
            Json::Object(m) => {
                let mut d = Dict::default();
                for (k, x) in m {
                    let v = self.generic_from_wire(x);
                    d.insert(HashKey(Value::str(k)), v);
                }
                Value::dict(d)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::host::MemoryHost;
    use crate::serve::{self, CallError};
    use serde_json::json;

    fn app(src: &str) -> (serve::LoadedApp, MemoryHost) {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("svc-serve-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("app.svc");
        std::fs::write(&path, src).expect("write");
        let mut host = MemoryHost::new();
        let app = serve::load_app(&path, &mut host, &crate::Limits::default());
        // The loaded program keeps its source; the file is not needed past loading.
        let _ = std::fs::remove_dir_all(&dir);
        (app.expect("load"), host)
    }

    #[test]
    fn a_served_call_leaves_its_cleared_stacks_to_the_next_and_keeps_no_deep_ones() {
        let (app, mut host) = app(
            "def:pub add(a: int, b: int) -> int {\n    return a + b;\n}\n\ndef:pub deep(n: int, a: int = 0, b: int = 0, c: int = 0, d: int = 0, e: int = 0) -> int {\n    if n == 0 {\n        return 0;\n    }\n    return 1 + deep(n - 1, a, b, c, d, e);\n}\n",
        );
        let limits = crate::Limits::default();
        let call = |host: &mut MemoryHost, name: &str, args: serde_json::Value| {
            let serde_json::Value::Object(args) = args else {
                panic!("args")
            };
            serve::call_function(&app.program, host, &limits, name, &args).map(|o| o.result)
        };
        assert!(app.program.scratch.borrow().stacks.is_empty());
        assert_eq!(
            call(&mut host, "add", json!({"a": 2, "b": 3})),
            Ok(json!(5))
        );
        let kept = app.program.scratch.borrow().stacks.len();
        assert!(kept >= 1, "a run's stacks are kept for the next");
        // The next call takes them, and sees nothing of the last one's values.
        assert_eq!(
            call(&mut host, "add", json!({"a": 40, "b": 2})),
            Ok(json!(42))
        );
        assert_eq!(app.program.scratch.borrow().stacks.len(), kept);
        // A deep recursion (six slots a frame) grows its stack set past what is kept.
        assert_eq!(call(&mut host, "deep", json!({"n": 900})), Ok(json!(900)));
        assert!(
            app.program
                .scratch
                .borrow()
                .stacks
                .iter()
                .all(|s| s.worth_keeping())
        );
        assert_eq!(
            call(&mut host, "add", json!({"a": 1, "b": 1})),
            Ok(json!(2))
        );
    }

    #[test]
    fn object_methods_take_and_give_json() {
        let (app, mut host) = app(
            "obj Mailer {\n    has prefix: str = \"\", sent: int = 0;\n    def send_email(to: str, subject: str) -> bool {\n        self.sent += 1;\n        return to.endswith(self.prefix);\n    }\n}\n",
        );
        let limits = crate::Limits::default();
        let fields = serde_json::Map::from_iter([("prefix".to_string(), json!("@x.org"))]);
        let ok = serve::call_object_method(
            &app.program,
            &mut host,
            &limits,
            "Mailer",
            &fields,
            "send_email",
            &[json!("a@x.org"), json!("hi")],
        );
        assert_eq!(ok, Ok(json!(true)));
        let missing = serve::call_object_method(
            &app.program,
            &mut host,
            &limits,
            "Nope",
            &fields,
            "send_email",
            &[],
        );
        assert!(matches!(missing, Err(CallError::NotFound(_))));
        let bad = serve::call_object_method(
            &app.program,
            &mut host,
            &limits,
            "Mailer",
            &fields,
            "nope",
            &[],
        );
        assert!(matches!(bad, Err(CallError::Runtime { .. })));
    }
}
