//! The event-streaming built-ins of the service spec ("In-process interface: event
//! streaming"): the `Event` record, `publish(topic, event)`, the `@subscribe(...)`
//! decorator and the pull interface `broker.consume(...)` / `broker.ack(event)`.
//!
//! The interpreter never talks to a broker: `publish`, `consume` and `ack` are host
//! natives (`Host::call_native` with the names in [`natives`]). A host that does not know
//! them (events disabled, `MemoryHost`) makes `publish` a no-op, `consume` return `[]`
//! and `ack` return `False`. Records cross the host boundary as JSON objects with the
//! record's field names ([`EVENT_FIELDS`]); the wire format (CloudEvents) belongs to the
//! broker, at the edge.
//!
//! Subscriptions are metadata: `@subscribe` leaves its `def` as it is, and
//! `serve::LoadedApp::subscriptions` lists the decorated handlers (like the endpoint
//! table) for a server to wire to its broker.

use super::value::*;
use super::{Ctx, Interp, R};
use crate::ast::{self, ExprKind as E, Item};
use crate::endpoint::{CallError, CallOutcome, RetryOverride, SubscriptionInfo};
pub use crate::names::{EVENT_MODULES, EVENT_NAMES};
use serde_json::{Map, Value as Json};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The fields of an `Event`, in declaration order. The last three are managed by the
/// broker (producers leave them empty; they never travel on the wire).
pub const EVENT_FIELDS: &[&str] = &[
    "data",
    "trace_id",
    "event_type",
    "id",
    "source",
    "time",
    "headers",
    "delivery_id",
    "delivery_topic",
    "delivery_group",
];

/// `Event.source` of every event made here (decisions.md "Events").
pub const EVENT_SOURCE: &str = "svc-scale";

/// Names of the host natives behind the built-ins, and their JSON arguments.
pub mod natives {
    /// `[topic, record]` → anything (ignored). Fire-and-forget: the host logs and
    /// swallows broker errors.
    pub const PUBLISH: &str = "events.publish";
    /// `[topic, max_messages, timeout_seconds, start_from | null, group | null]` → a
    /// list of records (with `delivery_*` filled in).
    pub const CONSUME: &str = "events.consume";
    /// `[record]` → bool (acknowledged).
    pub const ACK: &str = "events.ack";
}

/// Built-in function names dispatched here.
pub(crate) const EVENT_BUILTINS: &[&str] =
    &["publish", "subscribe", "broker.consume", "broker.ack"];

/// The current UTC time in RFC 3339 with microseconds, e.g. `2026-11-25T08:09:10.123456Z`.
pub fn now_rfc3339() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(d)
}

/// RFC 3339 text of a time since the Unix epoch (UTC).
pub fn rfc3339(since_epoch: Duration) -> String {
    let secs = since_epoch.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days to a civil date (proleptic Gregorian), Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        since_epoch.subsec_micros()
    )
}

impl Interp<'_> {
    /// Install `Event`, `publish`, `subscribe` and `broker` in the builtins scope.
    pub(super) fn install_event_builtins(&mut self) {
        let class = Rc::new(Class::builtin_record("Event", EVENT_FIELDS));
        Rc::make_mut(&mut self.builtin_classes).insert("Event", class.clone());
        scope_define(&self.builtins, Rc::from("Event"), Value::Class(class));
        for name in ["publish", "subscribe"] {
            scope_define(
                &self.builtins,
                Rc::from(name),
                Value::Builtin(Rc::from(name)),
            );
        }
        scope_define(
            &self.builtins,
            Rc::from("broker"),
            Value::Module(self.broker_module()),
        );
    }

    /// The ambient `broker` object: `consume` and `ack`.
    fn broker_module(&self) -> Rc<ModuleObj> {
        let scope = Scope::new_ref(None);
        scope_define(
            &scope,
            Rc::from("consume"),
            Value::Builtin(Rc::from("broker.consume")),
        );
        scope_define(
            &scope,
            Rc::from("ack"),
            Value::Builtin(Rc::from("broker.ack")),
        );
        scope_define(
            &scope,
            Rc::from("publish"),
            Value::Builtin(Rc::from("publish")),
        );
        Rc::new(ModuleObj {
            name: Rc::from("broker"),
            scope,
        })
    }

    /// `c` is the built-in `Event` class.
    pub(super) fn is_event_class(&self, c: &Rc<Class>) -> bool {
        self.builtin_classes
            .get("Event")
            .is_some_and(|e| Rc::ptr_eq(e, c))
    }

    /// A value bound by `import from <event module> { name }`.
    pub(super) fn event_module_member(&mut self, module: &str, name: &str) -> R<Value> {
        if EVENT_NAMES.contains(&name)
            && let Some(v) = scope_get(&self.builtins, name)
        {
            return Ok(v);
        }
        Err(self.err(
            "ImportError",
            format!("cannot import name '{name}' from '{module}'"),
        ))
    }

    /// `Event(data=..., trace_id=..., event_type=..., headers=...)`: `id` a fresh UUID4,
    /// `source` "svc-scale", `time` now (UTC, RFC 3339) unless given.
    pub(super) fn construct_event(
        &mut self,
        c: &Rc<Class>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let mut values: Vec<Option<Value>> = vec![None; EVENT_FIELDS.len()];
        if args.len() > 4 {
            return Err(self.err(
                "TypeError",
                format!(
                    "Event() takes at most 4 positional arguments but {} were given",
                    args.len()
                ),
            ));
        }
        // Positional order: data, trace_id, event_type, id (as the record lists them).
        for (i, a) in args.into_iter().enumerate() {
            values[i] = Some(a);
        }
        for (k, v) in kwargs {
            let Some(i) = EVENT_FIELDS.iter().position(|f| **f == *k) else {
                return Err(self.err(
                    "TypeError",
                    format!("Event.__init__() got an unexpected keyword argument '{k}'"),
                ));
            };
            if values[i].is_some() {
                return Err(self.err(
                    "TypeError",
                    format!("Event() got multiple values for argument '{k}'"),
                ));
            }
            values[i] = Some(v);
        }
        let fields = values
            .into_iter()
            .enumerate()
            .map(|(i, v)| match (EVENT_FIELDS[i], v) {
                (_, Some(v)) => v,
                ("data", None) => Value::None,
                ("id", None) => Value::str(&crate::ids::uuid4(&mut *self.host)),
                ("source", None) => Value::str(EVENT_SOURCE),
                ("time", None) => Value::str(&now_rfc3339()),
                ("headers", None) => Value::dict(Dict::default()),
                (_, None) => Value::str(""),
            })
            .collect();
        Ok(Value::Instance(Rc::new(Instance {
            class: c.clone(),
            fields: std::cell::RefCell::new(fields),
            extra: Default::default(),
            id: next_id(),
            user_hash: Default::default(),
        })))
    }

    /// The record of an `Event` (or, for any other value, of `Event(data=value)`) as a
    /// JSON object of [`EVENT_FIELDS`].
    fn event_record(&mut self, v: &Value) -> R<Map<String, Json>> {
        let event = match v {
            Value::Instance(i) if self.is_event_class(&i.class) => v.clone(),
            other => {
                let c = self.builtin_classes.get("Event").cloned();
                let Some(c) = c else {
                    return Err(self.err("RuntimeError", "Event is not available"));
                };
                self.construct_event(&c, vec![other.clone()], vec![])?
            }
        };
        let Value::Instance(inst) = &event else {
            return Err(self.err("TypeError", "publish() expects an Event"));
        };
        let fields = inst.fields.borrow().clone();
        let mut out = Map::new();
        for (name, value) in EVENT_FIELDS.iter().zip(fields.iter()) {
            let j = match (*name, value) {
                ("data" | "headers", v) => self.to_wire(v)?,
                (_, Value::None) => Json::String(String::new()),
                (_, Value::Str(s)) => Json::String(s.to_string()),
                (_, v) => Json::String(self.to_str(v)?),
            };
            out.insert((*name).to_string(), j);
        }
        Ok(out)
    }

    /// An `Event` from a record received from the host (unknown keys ignored, missing
    /// ones empty).
    pub(crate) fn event_from_record(&mut self, j: &Json) -> R<Value> {
        let Some(c) = self.builtin_classes.get("Event").cloned() else {
            return Err(self.err("RuntimeError", "Event is not available"));
        };
        let empty = Map::new();
        let m = j.as_object().unwrap_or(&empty);
        let fields = EVENT_FIELDS
            .iter()
            .map(|name| match (*name, m.get(*name)) {
                ("data", Some(v)) => self.generic_from_wire(v),
                ("data", None) => Value::None,
                ("headers", Some(v @ Json::Object(_))) => self.generic_from_wire(v),
                ("headers", _) => Value::dict(Dict::default()),
                (_, Some(Json::String(s))) => Value::str(s),
                (_, Some(Json::Null) | None) => Value::str(""),
                (_, Some(other)) => Value::str(&other.to_string()),
            })
            .collect();
        Ok(Value::Instance(Rc::new(Instance {
            class: c,
            fields: std::cell::RefCell::new(fields),
            extra: Default::default(),
            id: next_id(),
            user_hash: Default::default(),
        })))
    }

    /// `publish`, `subscribe`, `broker.consume`, `broker.ack`.
    pub(super) fn call_event_builtin(
        &mut self,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let mut args = args.into_iter();
        let kw = |key: &str| -> Option<Value> {
            kwargs
                .iter()
                .find(|(k, _)| &**k == key)
                .map(|(_, v)| v.clone())
        };
        match name {
            // A decorator: its target stays as it is (the server reads the metadata).
            "subscribe" => Ok(Value::Builtin(Rc::from("__identity__"))),
            "publish" => {
                let topic = args.next().or_else(|| kw("topic"));
                let event = args.next().or_else(|| kw("event"));
                let topic = self.topic_arg("publish", topic)?;
                let Some(event) = event else {
                    return Err(self.err(
                        "TypeError",
                        "publish() missing 1 required positional argument: 'event'",
                    ));
                };
                let mut record = self.event_record(&event)?;
                if record
                    .get("event_type")
                    .and_then(Json::as_str)
                    .is_none_or(str::is_empty)
                {
                    record.insert("event_type".into(), Json::String(topic.clone()));
                    if let Value::Instance(i) = &event
                        && self.is_event_class(&i.class)
                    {
                        i.fields.borrow_mut()[2] = Value::str(&topic);
                    }
                }
                // Fire-and-forget: the host logs and swallows broker errors.
                let _ = self.host.call_native(
                    natives::PUBLISH,
                    &[Json::String(topic), Json::Object(record)],
                );
                Ok(Value::None)
            }
            "broker.consume" => {
                let topic = args.next().or_else(|| kw("topic"));
                let topic = self.topic_arg("consume", topic)?;
                let max = match args.next().or_else(|| kw("max_messages")) {
                    None => 1,
                    Some(Value::Int(n)) => n.max(1),
                    Some(_) => return Err(self.err("TypeError", "max_messages must be an int")),
                };
                let timeout = match args.next().or_else(|| kw("timeout_seconds")) {
                    None | Some(Value::None) => 1.0,
                    Some(Value::Int(n)) => n as f64,
                    Some(Value::Float(f)) => f,
                    Some(_) => {
                        return Err(self.err("TypeError", "timeout_seconds must be a number"));
                    }
                };
                // Never wait past the run's own deadline.
                let mut timeout = if timeout.is_finite() {
                    timeout.max(0.0)
                } else {
                    0.0
                };
                if let Some(d) = self.deadline {
                    let left = d.saturating_duration_since(Instant::now()).as_secs_f64();
                    timeout = timeout.min(left);
                }
                let start_from = args.next().or_else(|| kw("start_from"));
                let group = args.next().or_else(|| kw("group"));
                let text = |it: &mut Self, v: Option<Value>| -> R<Json> {
                    Ok(match v {
                        None | Some(Value::None) => Json::Null,
                        Some(v) => Json::String(it.to_str(&v)?),
                    })
                };
                let start_from = text(self, start_from)?;
                let group = text(self, group)?;
                let answer = self.host.call_native(
                    natives::CONSUME,
                    &[
                        Json::String(topic),
                        Json::from(max),
                        Json::from(timeout),
                        start_from,
                        group,
                    ],
                );
                let records = match answer {
                    None => Vec::new(),
                    Some(Ok(Json::Array(items))) => items,
                    Some(Ok(_)) => Vec::new(),
                    Some(Err(e)) => {
                        return Err(self.err("RuntimeError", format!("broker.consume: {e}")));
                    }
                };
                let mut events = Vec::with_capacity(records.len());
                for r in &records {
                    events.push(self.event_from_record(r)?);
                }
                Ok(Value::list(events))
            }
            "broker.ack" => {
                let Some(event) = args.next().or_else(|| kw("event")) else {
                    return Err(self.err(
                        "TypeError",
                        "ack() missing 1 required positional argument: 'event'",
                    ));
                };
                let record = self.event_record(&event)?;
                match self.host.call_native(natives::ACK, &[Json::Object(record)]) {
                    None => Ok(Value::Bool(false)),
                    Some(Ok(j)) => Ok(Value::Bool(j.as_bool().unwrap_or(false))),
                    Some(Err(e)) => Err(self.err("RuntimeError", format!("broker.ack: {e}"))),
                }
            }
            _ => Err(self.err("NameError", format!("name '{name}' is not defined"))),
        }
    }

    fn topic_arg(&mut self, func: &str, v: Option<Value>) -> R<String> {
        match v {
            Some(Value::Str(s)) if !s.is_empty() => Ok(s.to_string()),
            Some(Value::Str(_)) => {
                Err(self.err("ValueError", format!("{func}(): topic must not be empty")))
            }
            Some(_) => Err(self.err("TypeError", format!("{func}(): topic must be a str"))),
            None => Err(self.err(
                "TypeError",
                format!("{func}() missing 1 required positional argument: 'topic'"),
            )),
        }
    }

    /// The `@subscribe(...)` handlers declared in the main file, in file order.
    pub(crate) fn subscription_table(
        &mut self,
        module: &ast::Module,
        ctx: &Ctx,
    ) -> R<Vec<SubscriptionInfo>> {
        let mut out = Vec::new();
        for item in &module.items {
            let Item::Ability(ab) = item else { continue };
            let Some(name) = &ab.name else { continue };
            for d in &ab.decorators {
                let E::Call { func, args } = &d.kind else {
                    continue;
                };
                if !matches!(&func.kind, E::Name(n) if &**n == "subscribe") {
                    continue;
                }
                let mut info = SubscriptionInfo {
                    handler: name.name.to_string(),
                    topic: String::new(),
                    group: None,
                    start_from: None,
                    retry: RetryOverride::default(),
                };
                for a in args {
                    let (key, v) = match a {
                        ast::Arg::Positional(v) => ("topic", v),
                        ast::Arg::Keyword(k, v) => (&*k.name, v),
                        _ => continue,
                    };
                    let v = self.eval(v, ctx)?;
                    match key {
                        "topic" => info.topic = self.to_str(&v)?,
                        "group" if !matches!(v, Value::None) => info.group = Some(self.to_str(&v)?),
                        "start_from" if !matches!(v, Value::None) => {
                            info.start_from = Some(self.to_str(&v)?);
                        }
                        "retry" => info.retry = self.retry_override(&v)?,
                        _ => {}
                    }
                }
                if info.topic.is_empty() {
                    return Err(self.err(
                        "TypeError",
                        format!("@subscribe on '{}' needs a topic", name.name),
                    ));
                }
                let normal = ab.signature.as_ref().map_or(0, |s| {
                    s.params
                        .iter()
                        .filter(|p| p.kind == ast::ParamKind::Normal)
                        .count()
                });
                if normal != 1 {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "@subscribe handler '{}' must take exactly one parameter (the Event)",
                            name.name
                        ),
                    ));
                }
                out.push(info);
            }
        }
        Ok(out)
    }

    /// `retry=` of `@subscribe`: an int (max attempts), a dict or an object with
    /// `max_attempts`, `backoff_seconds`, `dead_letter_suffix`.
    fn retry_override(&mut self, v: &Value) -> R<RetryOverride> {
        let mut r = RetryOverride::default();
        let get = |it: &mut Self, key: &str| -> R<Option<Value>> {
            Ok(match v {
                Value::Dict(d) => d.borrow().get(&HashKey(Value::str(key))).cloned(),
                Value::Instance(_) => it.get_attr(v, key).ok(),
                _ => None,
            })
        };
        match v {
            Value::None => return Ok(r),
            Value::Int(n) => {
                r.max_attempts = Some((*n).clamp(1, i64::from(u32::MAX)) as u32);
                return Ok(r);
            }
            _ => {}
        }
        if let Some(Value::Int(n)) = get(self, "max_attempts")? {
            r.max_attempts = Some(n.clamp(1, i64::from(u32::MAX)) as u32);
        }
        if let Some(b) = get(self, "backoff_seconds")? {
            let items = match &b {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.to_vec(),
                other => vec![other.clone()],
            };
            let mut secs = Vec::new();
            for x in items {
                match x {
                    Value::Int(n) => secs.push(n.max(0) as f64),
                    Value::Float(f) if f.is_finite() => secs.push(f.max(0.0)),
                    _ => return Err(self.err("TypeError", "retry backoff_seconds must be numbers")),
                }
            }
            r.backoff_seconds = Some(secs);
        }
        if let Some(s) = get(self, "dead_letter_suffix")? {
            r.dead_letter_suffix = Some(self.to_str(&s)?);
        }
        Ok(r)
    }

    /// `serve::deliver_event`: call handler `name` with the `Event` of `record`, commit.
    pub fn serve_event(&mut self, name: &str, record: &Json) -> Result<CallOutcome, CallError> {
        let func = match self.main_global(name) {
            Some(Value::Func(f)) => f,
            _ => {
                return Err(CallError::NotFound(format!(
                    "event handler '{name}' not found"
                )));
            }
        };
        self.serving = true;
        let r = self
            .event_from_record(record)
            .and_then(|event| self.call_function(&func, None, vec![event], vec![], None))
            .and_then(|v| {
                self.commit()?;
                Ok(v)
            });
        let v = match r {
            Ok(v) => v,
            Err(e) => return Err(self.call_error(e)),
        };
        let result = self.to_wire(&v).unwrap_or(Json::Null);
        Ok(CallOutcome {
            result,
            reports: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_renders_utc_dates() {
        assert_eq!(
            rfc3339(Duration::from_secs(0)),
            "1970-01-01T00:00:00.000000Z"
        );
        assert_eq!(
            rfc3339(Duration::from_micros(1_764_058_150_123_456)),
            "2025-11-25T08:09:10.123456Z"
        );
        assert_eq!(
            rfc3339(Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000000Z"
        );
    }
}
