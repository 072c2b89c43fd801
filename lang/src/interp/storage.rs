//! The `store()` builtin of the service spec ("In-process interface: storage"): a
//! `Storage` instance whose methods (`upload`, `download`, `delete`, `exists`,
//! `list_files`, `get_metadata`, `copy`, `move`, `get_url`) are host natives.
//!
//! The interpreter never touches files or the network: `store(...)` asks the host
//! (`storage.open`) which backend and base path apply (the host resolves the
//! configuration), and every method call is `Host::call_native("storage.<method>",
//! [storage, arguments])` with JSON in and out. A host answers `{"value": v}`,
//! `{"bytes": "<base64>"}` (raw content: `download` without a destination, a `bytes`
//! value here) or `{"error": {"type": "FileNotFoundError", "message": ...}}`, raised
//! here as that svc exception. The two success forms are distinct keys, so a `str`
//! value is never read as bytes nor bytes as a `str`. A host without storage (`svc run
//! --no-store`, `svc check`) makes `store()` a `RuntimeError`.

use super::base64;
use super::plain_json::{PlainJson, Refusal};
use super::value::*;
use super::{Interp, R};
use serde_json::{Map, Value as Json};
use std::rc::Rc;

/// A storage argument as JSON (scalars, strings, lists and dicts with string keys); a
/// float JSON cannot hold is `null`.
const STORAGE_JSON: PlainJson = PlainJson {
    max_depth: 32,
    refuse: |why| match why {
        Refusal::TooDeep => Some((
            "ValueError",
            "storage argument nested too deeply".to_string(),
        )),
        Refusal::NonFinite(_) => None,
        Refusal::Key(_) => Some(("TypeError", "storage dict keys must be str".to_string())),
        Refusal::BigInt => Some((
            "TypeError",
            "a 'int' cannot be passed to a storage method".to_string(),
        )),
        Refusal::Type(t) => Some((
            "TypeError",
            format!("a '{t}' cannot be passed to a storage method"),
        )),
    },
};

/// The builtin function name.
pub(crate) const STORE: &str = "store";

/// The storage factory's methods (`StorageFactory.create`, `StorageFactory.get_default`).
pub(crate) const FACTORY_CREATE: &str = "StorageFactory.create";
pub(crate) const FACTORY_DEFAULT: &str = "StorageFactory.get_default";

/// Name of the class of the instances `store()` returns.
const STORAGE_CLASS: &str = "Storage";

/// Fields of a `Storage` instance, in order. They travel back to the host with every
/// method call, so the host keeps no per-instance state.
const STORAGE_FIELDS: &[&str] = &["backend", "base_path", "create_dirs"];

/// Methods of a `Storage` instance and their parameters (name, required).
const METHODS: &[(&str, &[(&str, bool)])] = &[
    (
        "upload",
        &[("source", true), ("destination", true), ("metadata", false)],
    ),
    ("download", &[("source", true), ("destination", false)]),
    ("delete", &[("path", true)]),
    ("exists", &[("path", true)]),
    ("list_files", &[("prefix", false), ("recursive", false)]),
    ("get_metadata", &[("path", true)]),
    ("copy", &[("source", true), ("destination", true)]),
    ("move", &[("source", true), ("destination", true)]),
    ("get_url", &[("path", true), ("expires_in", false)]),
];

/// A host's successful answer to a storage native.
enum Answer {
    /// `{"value": v}`: JSON, read as the wire form of arguments is.
    Value(Json),
    /// `{"bytes": "<base64>"}`: raw content, a `bytes` value.
    Bytes(Vec<u8>),
}

/// Exception types a host may name in an error answer; anything else is `OSError`.
const RAISABLE: &[&str] = &[
    "FileNotFoundError",
    "OSError",
    "PermissionError",
    "ValueError",
    "TypeError",
    "TimeoutError",
    "NotImplementedError",
    "RuntimeError",
];

impl Interp<'_> {
    /// Install the `Storage` class (not bound to a name: instances come from `store()`).
    pub(super) fn install_storage_class(&mut self) {
        let class = Class::builtin_record(STORAGE_CLASS, STORAGE_FIELDS);
        Rc::make_mut(&mut self.builtin_classes).insert(STORAGE_CLASS, Rc::new(class));
    }

    /// The ambient `StorageFactory`: `create(type, config)` and `get_default()`.
    pub(super) fn storage_factory(&self) -> Value {
        let scope = Scope::new_ref(None);
        for (name, builtin) in [("create", FACTORY_CREATE), ("get_default", FACTORY_DEFAULT)] {
            scope_define(&scope, Rc::from(name), Value::Builtin(Rc::from(builtin)));
        }
        Value::Module(Rc::new(ModuleObj {
            name: Rc::from("StorageFactory"),
            scope,
        }))
    }

    /// `StorageFactory.get_default()` (= `store()`) and `StorageFactory.create(type,
    /// config)`: a backend named explicitly, `config` giving `base_path` and
    /// `create_dirs` (object settings come from the configuration only).
    pub(super) fn call_storage_factory(
        &mut self,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if name == FACTORY_DEFAULT {
            self.bind_storage_args("get_default", &[], args, kwargs)?;
            return self.call_store(vec![], vec![]);
        }
        let bound = self.bind_storage_args(
            "create",
            &[("storage_type", true), ("config", false)],
            args,
            kwargs,
        )?;
        let mut request = Map::new();
        for (param, value) in bound {
            if let Some(v) = value {
                let j = self.plain_json(&v, &STORAGE_JSON)?;
                request.insert(param.to_string(), j);
            }
        }
        self.open_storage(request)
    }

    /// `v` is a `Storage` instance made by `store()`.
    pub(super) fn is_storage(&self, v: &Value) -> bool {
        match v {
            Value::Instance(inst) => self
                .builtin_classes
                .get(STORAGE_CLASS)
                .is_some_and(|c| Rc::ptr_eq(c, &inst.class)),
            _ => false,
        }
    }

    /// `storage.name` for a method name (a bound builtin method), else `None`.
    pub(super) fn storage_attr(&self, v: &Value, name: &str) -> Option<Value> {
        if self.is_storage(v) && METHODS.iter().any(|(m, _)| *m == name) {
            return Some(Value::BuiltinMethod(Rc::new((v.clone(), Rc::from(name)))));
        }
        None
    }

    /// `store(base_path='./storage', create_dirs=True)`.
    pub(super) fn call_store(
        &mut self,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let bound = self.bind_storage_args(
            "store",
            &[("base_path", false), ("create_dirs", false)],
            args,
            kwargs,
        )?;
        let mut request = Map::new();
        for (name, value) in bound {
            let j = match value {
                None => Json::Null,
                Some(Value::Str(s)) if name == "base_path" => Json::String(s.to_string()),
                Some(Value::None) => Json::Null,
                Some(v) if name == "create_dirs" => Json::Bool(self.truthy(&v)?),
                Some(v) => {
                    let t = self.type_name_of(&v);
                    return Err(self.err(
                        "TypeError",
                        format!("store() argument '{name}' must be str, not {t}"),
                    ));
                }
            };
            request.insert(name.to_string(), j);
        }
        self.open_storage(request)
    }

    /// Ask the host for a storage instance (`storage.open`).
    fn open_storage(&mut self, request: Map<String, Json>) -> R<Value> {
        let answer = self.storage_native("storage.open", vec![Json::Object(request)])?;
        let Answer::Value(Json::Object(fields)) = answer else {
            return Err(self.err("RuntimeError", "store(): the host answered no storage"));
        };
        let class = self
            .builtin_classes
            .get(STORAGE_CLASS)
            .cloned()
            .ok_or_else(|| self.err("RuntimeError", "store() is not available"))?;
        let values = STORAGE_FIELDS
            .iter()
            .map(|f| self.generic_from_wire(fields.get(*f).unwrap_or(&Json::Null)))
            .collect();
        Ok(Value::Instance(Rc::new(Instance {
            class,
            fields: std::cell::RefCell::new(values),
            extra: Default::default(),
            id: next_id(),
            user_hash: Default::default(),
        })))
    }

    /// A method of a `Storage` instance.
    pub(super) fn call_storage_method(
        &mut self,
        recv: &Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let Some((_, params)) = METHODS.iter().find(|(m, _)| *m == name) else {
            return Err(self.err(
                "AttributeError",
                format!("'Storage' object has no attribute '{name}'"),
            ));
        };
        let bound = self.bind_storage_args(name, params, args, kwargs)?;
        let mut call = Map::new();
        for (param, value) in bound {
            if let Some(v) = value {
                let v = if name == "upload" && param == "source" {
                    self.bytes_content(v)?
                } else {
                    v
                };
                let j = self.plain_json(&v, &STORAGE_JSON)?;
                call.insert(param.to_string(), j);
            }
        }
        let mut this = Map::new();
        if let Value::Instance(inst) = recv {
            for (f, v) in STORAGE_FIELDS.iter().zip(inst.fields.borrow().iter()) {
                let j = self.plain_json(v, &STORAGE_JSON)?;
                this.insert((*f).to_string(), j);
            }
        }
        let answer = self.storage_native(
            &format!("storage.{name}"),
            vec![Json::Object(this), Json::Object(call)],
        )?;
        Ok(match answer {
            Answer::Value(j) => self.generic_from_wire(&j),
            Answer::Bytes(b) => Value::Bytes(Rc::from(b)),
        })
    }

    /// An upload's file object whose `content` is a `bytes` value, as the host reads a
    /// binary file object: the content in base64 with `"encoding": "base64"`. Any other
    /// source is unchanged (a `str` content is the text itself, as before).
    fn bytes_content(&self, source: Value) -> R<Value> {
        let Value::Dict(d) = &source else {
            return Ok(source);
        };
        let content = HashKey(Value::Str("content".into()));
        let encoding = HashKey(Value::Str("encoding".into()));
        let found = match d.borrow().get(&content) {
            Some(Value::Bytes(b)) => Some(Rc::clone(b)),
            _ => None,
        };
        let Some(bytes) = found else {
            return Ok(source);
        };
        let mut file = d.borrow().clone();
        if !matches!(file.get(&encoding), None | Some(Value::None)) {
            return Err(self.err(
                "ValueError",
                "upload: a file object whose 'content' is bytes takes no 'encoding'",
            ));
        }
        file.insert(content, Value::Str(base64::encode(&bytes).into()));
        file.insert(encoding, Value::Str("base64".into()));
        Ok(Value::dict(file))
    }

    /// Bind arguments to `params` by position and name; returns `(name, value)` pairs.
    fn bind_storage_args(
        &mut self,
        fname: &str,
        params: &[(&'static str, bool)],
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Vec<(&'static str, Option<Value>)>> {
        if args.len() > params.len() {
            return Err(self.err(
                "TypeError",
                format!(
                    "{fname}() takes at most {} arguments ({} given)",
                    params.len(),
                    args.len()
                ),
            ));
        }
        let mut out: Vec<(&'static str, Option<Value>)> =
            params.iter().map(|(n, _)| (*n, None)).collect();
        for (slot, a) in out.iter_mut().zip(args) {
            slot.1 = Some(a);
        }
        for (k, v) in kwargs {
            let Some(slot) = out.iter_mut().find(|(n, _)| **n == *k) else {
                return Err(self.err(
                    "TypeError",
                    format!("{fname}() got an unexpected keyword argument '{k}'"),
                ));
            };
            if slot.1.is_some() {
                return Err(self.err(
                    "TypeError",
                    format!("{fname}() got multiple values for argument '{k}'"),
                ));
            }
            slot.1 = Some(v);
        }
        for ((n, required), (_, v)) in params.iter().zip(&out) {
            if *required && v.is_none() {
                return Err(self.err(
                    "TypeError",
                    format!("{fname}() missing required argument: '{n}'"),
                ));
            }
        }
        Ok(out)
    }

    /// Call a storage native and unwrap its `{"value"}` / `{"bytes"}` / `{"error"}`
    /// answer.
    fn storage_native(&mut self, name: &str, args: Vec<Json>) -> R<Answer> {
        let answer = match self.host.call_native(name, &args) {
            None => {
                return Err(self.err(
                    "RuntimeError",
                    "store() is not available here (no storage in this host)",
                ));
            }
            Some(Err(e)) => return Err(self.err("OSError", format!("storage: {e}"))),
            Some(Ok(j)) => j,
        };
        let Json::Object(mut m) = answer else {
            return Err(self.err("OSError", "storage: malformed answer from the host"));
        };
        if let Some(Json::Object(e)) = m.remove("error") {
            let ty = e.get("type").and_then(Json::as_str).unwrap_or("OSError");
            let ty = if RAISABLE.contains(&ty) {
                ty
            } else {
                "OSError"
            };
            let msg = e.get("message").and_then(Json::as_str).unwrap_or("");
            return Err(self.err(ty, msg.to_string()));
        }
        match (m.remove("value"), m.remove("bytes")) {
            (value, None) => Ok(Answer::Value(value.unwrap_or(Json::Null))),
            (None, Some(Json::String(text))) => match base64::decode(&text) {
                Some(bytes) => Ok(Answer::Bytes(bytes)),
                None => Err(self.err("OSError", "storage: malformed content from the host")),
            },
            _ => Err(self.err("OSError", "storage: malformed answer from the host")),
        }
    }
}
