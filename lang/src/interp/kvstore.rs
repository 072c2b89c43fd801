//! The `kvstore(db_name, db_type, uri)` built-in of the service spec ("In-process
//! interface: `kvstore`"): an object whose methods reach a document database (`docdb`)
//! or a cache store (`cache`) through the host.
//!
//! The interpreter never talks to a database. It checks the arguments of each method
//! (Python-style `TypeError`s), raises `NotImplementedError` for a method the backend
//! does not have, turns values into JSON and sends one host native per call
//! ([`natives`]). The host answers JSON, or `{"__error__": {"type", "message"}}` for a
//! failure the program may catch (`ConnectionError`, `TimeoutError`, `ValueError`, ...).
//! `find_nodes` gets anchor documents back and puts them into the run's graph as nodes
//! (`materialise`), skipping those the caller may not read.

use super::plain_json::{PlainJson, Refusal};
use super::value::*;
use super::{Interp, R};
use crate::host::{AccessPolicy, AnchorKind, StoredAnchor, parse_id};
use serde_json::{Map, Value as Json};
use std::rc::Rc;
use std::sync::Arc;

/// Names of the host natives behind the built-in, and their JSON arguments.
pub mod natives {
    /// `[db_name, db_type, uri | null]` → `{"handle": int}`: resolves the URI (argument,
    /// environment, `svc.toml`) and names the backend; connecting happens on first use.
    pub const OPEN: &str = "kvstore.open";
    /// `[handle, db_name, method, {param: value}]` → the method's result.
    pub const CALL: &str = "kvstore.call";
}

/// The backends a program may name (`mongodb` and `redis` are the original's names).
const DB_TYPES: &[(&str, &str)] = &[
    ("docdb", "docdb"),
    ("mongodb", "docdb"),
    ("cache", "cache"),
    ("redis", "cache"),
    ("clouddoc", "clouddoc"),
];

/// A parameter's default (`Required` = no default).
#[derive(Clone, Copy)]
enum Dflt {
    Required,
    None,
    EmptyDict,
    Int(i64),
    Str(&'static str),
    False,
}

use Dflt::{EmptyDict, False, Int, Required, Str};

/// Which backends have a method.
#[derive(Clone, Copy, PartialEq)]
enum On {
    Both,
    Docdb,
    Cache,
}

struct Method {
    name: &'static str,
    on: On,
    /// Parameters in order, with their defaults.
    docdb: &'static [(&'static str, Dflt)],
    cache: &'static [(&'static str, Dflt)],
}

/// Collection of the common methods on the document database unless `col_name` is given.
pub const DEFAULT_KV_COLLECTION: &str = "kvstore";

/// Every method of the spec's table, with its parameters per backend.
const METHODS: &[Method] = &[
    Method {
        name: "get",
        on: On::Both,
        docdb: &[("key", Required), ("col_name", Str(DEFAULT_KV_COLLECTION))],
        cache: &[("key", Required)],
    },
    Method {
        name: "set",
        on: On::Both,
        docdb: &[
            ("key", Required),
            ("value", Required),
            ("col_name", Str(DEFAULT_KV_COLLECTION)),
        ],
        cache: &[("key", Required), ("value", Required)],
    },
    Method {
        name: "delete",
        on: On::Both,
        docdb: &[("key", Required), ("col_name", Str(DEFAULT_KV_COLLECTION))],
        cache: &[("key", Required)],
    },
    Method {
        name: "exists",
        on: On::Both,
        docdb: &[("key", Required), ("col_name", Str(DEFAULT_KV_COLLECTION))],
        cache: &[("key", Required)],
    },
    Method {
        name: "find_one",
        on: On::Docdb,
        docdb: &[("col_name", Required), ("filter", EmptyDict)],
        cache: &[],
    },
    Method {
        name: "find",
        on: On::Docdb,
        docdb: &[
            ("col_name", Required),
            ("filter", EmptyDict),
            ("limit", Int(0)),
            ("sort", Dflt::None),
        ],
        cache: &[],
    },
    Method {
        name: "insert_one",
        on: On::Docdb,
        docdb: &[("col_name", Required), ("document", Required)],
        cache: &[],
    },
    Method {
        name: "insert_many",
        on: On::Docdb,
        docdb: &[("col_name", Required), ("documents", Required)],
        cache: &[],
    },
    Method {
        name: "update_one",
        on: On::Docdb,
        docdb: &[
            ("col_name", Required),
            ("filter", Required),
            ("update", Required),
            ("upsert", False),
        ],
        cache: &[],
    },
    Method {
        name: "update_many",
        on: On::Docdb,
        docdb: &[
            ("col_name", Required),
            ("filter", Required),
            ("update", Required),
            ("upsert", False),
        ],
        cache: &[],
    },
    Method {
        name: "delete_one",
        on: On::Docdb,
        docdb: &[("col_name", Required), ("filter", Required)],
        cache: &[],
    },
    Method {
        name: "delete_many",
        on: On::Docdb,
        docdb: &[("col_name", Required), ("filter", Required)],
        cache: &[],
    },
    Method {
        name: "find_by_id",
        on: On::Docdb,
        docdb: &[("col_name", Required), ("id", Required)],
        cache: &[],
    },
    Method {
        name: "update_by_id",
        on: On::Docdb,
        docdb: &[
            ("col_name", Required),
            ("id", Required),
            ("update", Required),
        ],
        cache: &[],
    },
    Method {
        name: "delete_by_id",
        on: On::Docdb,
        docdb: &[("col_name", Required), ("id", Required)],
        cache: &[],
    },
    Method {
        name: "find_nodes",
        on: On::Docdb,
        docdb: &[
            ("node_type", Required),
            ("filter", EmptyDict),
            ("col_name", Str("_anchors")),
        ],
        cache: &[],
    },
    Method {
        name: "set_with_ttl",
        on: On::Cache,
        docdb: &[],
        cache: &[("key", Required), ("value", Required), ("ttl", Required)],
    },
    Method {
        name: "expire",
        on: On::Cache,
        docdb: &[],
        cache: &[("key", Required), ("seconds", Required)],
    },
    Method {
        name: "incr",
        on: On::Cache,
        docdb: &[],
        cache: &[("key", Required)],
    },
    Method {
        name: "scan_keys",
        on: On::Cache,
        docdb: &[],
        cache: &[("pattern", Str("*"))],
    },
    Method {
        name: "set_nx_with_ttl",
        on: On::Cache,
        docdb: &[],
        cache: &[("key", Required), ("value", Required), ("ttl", Required)],
    },
    Method {
        name: "delete_if_equals",
        on: On::Cache,
        docdb: &[],
        cache: &[("key", Required), ("expected_value", Required)],
    },
];

/// Deepest nesting of a value sent to a store (as the anchor store's limit).
const MAX_DEPTH: usize = 100;

/// A kvstore document or value as JSON, with Python's `json` message for a value that
/// is not plain data.
const KV_JSON: PlainJson = PlainJson {
    max_depth: MAX_DEPTH,
    refuse: |why| {
        Some(match why {
            Refusal::TooDeep => (
                "ValueError",
                format!(
                    "kvstore: value nested more than {MAX_DEPTH} levels deep (a circular reference?)"
                ),
            ),
            Refusal::BigInt => (
                "ValueError",
                "kvstore: int too large to store (the stores keep 64-bit ints)".to_string(),
            ),
            Refusal::NonFinite(f) => ("ValueError", format!("kvstore: cannot store the float {f}")),
            Refusal::Key(t) => (
                "TypeError",
                format!("kvstore: dict keys must be str, not {t}"),
            ),
            Refusal::Type(t) => (
                "TypeError",
                format!("Object of type {t} is not JSON serializable"),
            ),
        })
    },
};

/// The exceptions a host may name in an `__error__` answer.
const HOST_EXCEPTIONS: &[&str] = &[
    "NotImplementedError",
    "ValueError",
    "TypeError",
    "KeyError",
    "ConnectionError",
    "TimeoutError",
    "RuntimeError",
    "MemoryError",
    "PermissionError",
];

impl Interp<'_> {
    /// The `KvStore` class of the objects `kvstore(...)` returns.
    fn kvstore_class(&mut self) -> Rc<Class> {
        if let Some(c) = self.builtin_classes.get("KvStore") {
            return c.clone();
        }
        let class = Class::builtin_record("KvStore", &["db_name", "db_type", "_handle"]);
        let class = Rc::new(class);
        Rc::make_mut(&mut self.builtin_classes).insert("KvStore", class.clone());
        class
    }

    /// `v` is an object made by `kvstore(...)`.
    pub(super) fn is_kvstore(&self, v: &Value) -> bool {
        matches!(v, Value::Instance(inst) if self
            .builtin_classes
            .get("KvStore")
            .is_some_and(|c| Rc::ptr_eq(c, &inst.class)))
    }

    /// `kvstore.<name>` as a bound method, if `name` is one.
    pub(super) fn kvstore_attr(&self, v: &Value, name: &str) -> Option<Value> {
        if !self.is_kvstore(v) || !METHODS.iter().any(|m| m.name == name) {
            return None;
        }
        Some(Value::BuiltinMethod(Rc::new((v.clone(), Rc::from(name)))))
    }

    /// `kvstore(db_name, db_type="docdb", uri=None)`.
    pub(super) fn call_kvstore(
        &mut self,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        const PARAMS: &[(&str, Dflt)] = &[
            ("db_name", Required),
            ("db_type", Str("docdb")),
            ("uri", Dflt::None),
        ];
        let vals = self.kv_bind("kvstore", PARAMS, args, kwargs)?;
        let db_name = self.kv_str("kvstore", "db_name", &vals[0])?;
        let db_type = self.kv_str("kvstore", "db_type", &vals[1])?;
        let uri = match &vals[2] {
            Value::None => Json::Null,
            v => Json::String(self.kv_str("kvstore", "uri", v)?),
        };
        if db_name.is_empty() || db_name.len() > 64 {
            return Err(self.err(
                "ValueError",
                "kvstore: db_name must be 1 to 64 characters".to_string(),
            ));
        }
        let Some(&(_, backend)) = DB_TYPES.iter().find(|(n, _)| *n == db_type) else {
            return Err(self.err(
                "ValueError",
                format!(
                    "kvstore: unknown db_type '{db_type}' (expected 'docdb', 'clouddoc' or 'cache')"
                ),
            ));
        };
        let reply = self.kv_native(
            natives::OPEN,
            &[
                Json::String(db_name.clone()),
                Json::String(backend.to_string()),
                uri,
            ],
        )?;
        let handle = reply.get("handle").and_then(Json::as_i64).ok_or_else(|| {
            self.err(
                "RuntimeError",
                "kvstore: the host gave no store handle".to_string(),
            )
        })?;
        let class = self.kvstore_class();
        Ok(Value::Instance(Rc::new(Instance {
            class,
            fields: std::cell::RefCell::new(vec![
                Value::str(&db_name),
                Value::str(backend),
                Value::Int(handle),
            ]),
            extra: Default::default(),
            id: next_id(),
            user_hash: Default::default(),
        })))
    }

    /// `store.<name>(args)` on a kvstore object.
    pub(super) fn call_kvstore_method(
        &mut self,
        recv: &Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let Value::Instance(inst) = recv else {
            return Err(self.err("TypeError", "not a kvstore object".to_string()));
        };
        let (db_name, backend, handle) = {
            let f = inst.fields.borrow();
            (f[0].clone(), f[1].clone(), f[2].clone())
        };
        let backend = match &backend {
            Value::Str(s) => s.to_string(),
            _ => String::new(),
        };
        let Some(method) = METHODS.iter().find(|m| m.name == name) else {
            return Err(self.err(
                "AttributeError",
                format!("'KvStore' object has no attribute '{name}'"),
            ));
        };
        let supported = match method.on {
            On::Both => true,
            On::Docdb => backend == "docdb",
            On::Cache => backend == "cache",
        };
        if !supported {
            return Err(self.err(
                "NotImplementedError",
                format!("kvstore: the {backend} backend does not support {name}()"),
            ));
        }
        let params = if backend == "docdb" {
            method.docdb
        } else {
            method.cache
        };
        let vals = self.kv_bind(name, params, args, kwargs)?;
        let mut named = Map::new();
        for ((pname, _), v) in params.iter().zip(vals.iter()) {
            let j = self.kv_param_json(name, pname, v)?;
            named.insert((*pname).to_string(), j);
        }
        let db_name = match db_name {
            Value::Str(s) => Json::String(s.to_string()),
            _ => Json::Null,
        };
        let handle = match handle {
            Value::Int(i) => Json::from(i),
            _ => Json::Null,
        };
        let reply = self.kv_native(
            natives::CALL,
            &[
                handle,
                db_name,
                Json::String(name.into()),
                Json::Object(named),
            ],
        )?;
        if name == "find_nodes" {
            return self.kv_nodes(&reply);
        }
        Ok(self.kv_from_json(&reply, 0))
    }

    /// One host native; an `__error__` answer becomes the exception it names.
    fn kv_native(&mut self, name: &str, args: &[Json]) -> R<Json> {
        let reply = match self.host.call_native(name, args) {
            Some(Ok(j)) => j,
            Some(Err(e)) => return Err(self.err("RuntimeError", format!("kvstore: {e}"))),
            None => {
                return Err(self.err(
                    "RuntimeError",
                    "kvstore is not available in this host (it needs `svc run` with a store \
                     or `svc start`)"
                        .to_string(),
                ));
            }
        };
        if let Some(e) = reply.get("__error__") {
            let ty = e
                .get("type")
                .and_then(Json::as_str)
                .unwrap_or("RuntimeError");
            let ty = if HOST_EXCEPTIONS.contains(&ty) {
                ty
            } else {
                "RuntimeError"
            };
            let msg = e.get("message").and_then(Json::as_str).unwrap_or("");
            return Err(self.err(ty, msg.to_string()));
        }
        Ok(reply)
    }

    /// Python-style binding of positional and keyword arguments to `params`.
    fn kv_bind(
        &mut self,
        func: &str,
        params: &[(&str, Dflt)],
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Vec<Value>> {
        if args.len() > params.len() {
            return Err(self.err(
                "TypeError",
                format!(
                    "{func}() takes {} positional arguments but {} were given",
                    params.len(),
                    args.len()
                ),
            ));
        }
        let mut slots: Vec<Option<Value>> = vec![None; params.len()];
        for (i, a) in args.into_iter().enumerate() {
            slots[i] = Some(a);
        }
        for (k, v) in kwargs {
            let Some(i) = params.iter().position(|(p, _)| **p == *k) else {
                return Err(self.err(
                    "TypeError",
                    format!("{func}() got an unexpected keyword argument '{k}'"),
                ));
            };
            if slots[i].is_some() {
                return Err(self.err(
                    "TypeError",
                    format!("{func}() got multiple values for argument '{k}'"),
                ));
            }
            slots[i] = Some(v);
        }
        let mut out = Vec::with_capacity(params.len());
        for ((pname, default), slot) in params.iter().zip(slots) {
            let v = match (slot, default) {
                (Some(v), _) => v,
                (None, Required) => {
                    return Err(self.err(
                        "TypeError",
                        format!("{func}() missing required argument: '{pname}'"),
                    ));
                }
                (None, Dflt::None) => Value::None,
                (None, EmptyDict) => Value::dict(Dict::default()),
                (None, Int(i)) => Value::Int(*i),
                (None, Str(s)) => Value::str(s),
                (None, False) => Value::Bool(false),
            };
            out.push(v);
        }
        Ok(out)
    }

    fn kv_str(&mut self, func: &str, param: &str, v: &Value) -> R<String> {
        match v {
            Value::Str(s) => Ok(s.to_string()),
            other => {
                let t = self.type_name_of(other);
                Err(self.err(
                    "TypeError",
                    format!("{func}(): {param} must be str, not {t}"),
                ))
            }
        }
    }

    /// A parameter as JSON, with the type checks of its name.
    fn kv_param_json(&mut self, func: &str, param: &str, v: &Value) -> R<Json> {
        match param {
            "key" | "col_name" | "node_type" | "pattern" => {
                Ok(Json::String(self.kv_str(func, param, v)?))
            }
            "ttl" | "seconds" | "limit" => match v {
                Value::Int(i) if *i >= 0 => Ok(Json::from(*i)),
                Value::Int(_) => Err(self.err(
                    "ValueError",
                    format!("{func}(): {param} must not be negative"),
                )),
                other => {
                    let t = self.type_name_of(other);
                    Err(self.err(
                        "TypeError",
                        format!("{func}(): {param} must be int, not {t}"),
                    ))
                }
            },
            "upsert" => match v {
                Value::Bool(b) => Ok(Json::Bool(*b)),
                other => {
                    let t = self.type_name_of(other);
                    Err(self.err(
                        "TypeError",
                        format!("{func}(): upsert must be bool, not {t}"),
                    ))
                }
            },
            "filter" | "update" | "document" => match v {
                Value::Dict(_) => self.plain_json(v, &KV_JSON),
                other => {
                    let t = self.type_name_of(other);
                    Err(self.err(
                        "TypeError",
                        format!("{func}(): {param} must be dict, not {t}"),
                    ))
                }
            },
            "documents" => match v {
                Value::List(_) | Value::Tuple(_) => self.plain_json(v, &KV_JSON),
                other => {
                    let t = self.type_name_of(other);
                    Err(self.err(
                        "TypeError",
                        format!("{func}(): documents must be a list of dicts, not {t}"),
                    ))
                }
            },
            _ => self.plain_json(v, &KV_JSON),
        }
    }

    fn kv_from_json(&mut self, j: &Json, depth: usize) -> Value {
        match j {
            Json::Null => Value::None,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            Json::String(s) => Value::str(s),
            // The host bounds nesting; deeper is cut rather than recursed into.
            _ if depth > MAX_DEPTH + 28 => Value::None,
            Json::Array(items) => Value::list(
                items
                    .iter()
                    .map(|x| self.kv_from_json(x, depth + 1))
                    .collect(),
            ),
            Json::Object(m) => {
                let mut d = Dict::default();
                for (k, x) in m {
                    let v = self.kv_from_json(x, depth + 1);
                    d.insert(HashKey(Value::str(k)), v);
                }
                Value::dict(d)
            }
        }
    }

    /// `find_nodes`' answer (a list of anchor documents) as the nodes of this run's graph:
    /// an anchor already loaded keeps its handle; others are materialised from the
    /// document. Anchors of archetypes this program does not declare, and anchors the
    /// caller may not read, are left out.
    fn kv_nodes(&mut self, reply: &Json) -> R<Value> {
        let mut out = Vec::new();
        for doc in reply.as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let Some(id) = doc.get("id").and_then(Json::as_str).and_then(parse_id) else {
                continue;
            };
            let h = match self.graph.handle_by_id(id) {
                Some(h) if self.graph.is_live(h) => Some(h),
                Some(_) => None,
                None => {
                    let Some(stored) = stored_node(id, doc) else {
                        continue;
                    };
                    self.materialise(stored)?
                }
            };
            let Some(h) = h else { continue };
            if self.can_read(h)? {
                out.push(Value::Anchor(h));
            }
        }
        Ok(Value::list(out))
    }
}

/// A node's stored form from an anchor document
/// (`{id, arch_module, arch_type, fingerprint, owner, access, fields}`).
fn stored_node(id: crate::host::AnchorId, doc: &Json) -> Option<StoredAnchor> {
    let text = |k: &str| doc.get(k).and_then(Json::as_str).unwrap_or("");
    let owner = parse_id(text("owner"))?;
    let fields = match doc.get("fields") {
        Some(Json::Object(m)) => Json::Object(m.clone()).to_string(),
        _ => "{}".to_string(),
    };
    let mut access = AccessPolicy::default();
    if let Some(a) = doc.get("access") {
        access.public = a
            .get("public")
            .and_then(Json::as_i64)
            .and_then(|l| i8::try_from(l).ok());
        for pair in a
            .get("roots")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            let root = pair.get(0).and_then(Json::as_str).and_then(parse_id);
            let level = pair
                .get(1)
                .and_then(Json::as_i64)
                .and_then(|l| i8::try_from(l).ok());
            if let (Some(root), Some(level)) = (root, level) {
                access.roots.push((root, level));
            }
        }
    }
    Some(StoredAnchor {
        id,
        kind: AnchorKind::Node,
        arch_module: Arc::from(text("arch_module")),
        arch_type: Arc::from(text("arch_type")),
        fingerprint: Arc::from(text("fingerprint")),
        owner,
        access,
        fields,
        ends: None,
        edges: None,
    })
}
