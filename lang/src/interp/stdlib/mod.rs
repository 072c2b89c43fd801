//! The standard-library subset built into svc (language.md decision 12): `math`, `random`,
//! `json`, `time`, `datetime`, `uuid` and `re`, with CPython's results, exception types
//! and messages for every listed name.
//!
//! Wiring: a module is a `ModuleObj` whose functions are `Value::Builtin("<module>.<name>")`
//! (dispatched by [`Interp::call_stdlib`]); its types are built-in record classes
//! (`Class::builtin_record`) marked with [`MARK`] in `stored.module`, so an instance of
//! one (a `datetime`, a match object ...) is recognised in O(1) by the few hooks the
//! shared interpreter files call: construction, methods, attributes, operators,
//! comparison, `str`/`repr`. Every clock reading, random byte and sleep goes through the
//! `Host` trait.

use super::value::*;
use super::{Interp, R};
use std::rc::Rc;

mod asyncio;
mod cfloat;
mod datetime;
mod json;
mod math;
mod random;
mod re;
mod stored;
mod strptime;
mod time;
mod uuid;

/// Marker in `Class::stored.module` of the stdlib's classes.
const MARK: &str = "@stdlib";

pub use crate::names::stdlib::{MODULES, members};

/// `name` is one of the built-in standard-library modules.
pub fn is_module(name: &str) -> bool {
    MODULES.contains(&name)
}

/// `name` is a stdlib function's qualified name (`math.sqrt`, `datetime.datetime.now`).
pub fn is_qualified(name: &str) -> bool {
    name.split_once('.').is_some_and(|(m, _)| is_module(m))
}

/// `c` is one of the stdlib's classes (constructed by [`Interp::stdlib_construct`]).
pub fn is_stdlib_class(c: &Class) -> bool {
    &*c.stored.module == MARK
}

/// Instances of `c` are dict keys and set members by value (the immutable `datetime`,
/// `date`, `timedelta`, `timezone` and `UUID`; not patterns or match objects).
pub fn hashes_by_value(c: &Class) -> bool {
    is_stdlib_class(c) && !c.stored.name.starts_with("re.")
}

/// `str()` and `repr()` of a `re` flag (`re.IGNORECASE`); `None` for other members.
pub fn flag_text(m: &EnumMember) -> Option<String> {
    match m.value {
        Value::Int(v) if re::is_flag_class(&m.class) => Some(re::flag_text(v)),
        _ => None,
    }
}

/// `c` is `re.RegexFlag` (shown as `<flag 'RegexFlag'>`, as CPython's `enum.Flag`).
pub fn is_flag_class(c: &Class) -> bool {
    re::is_flag_class(c)
}

/// How many leading fields of a by-value stdlib instance make its identity as a dict
/// key: all but the `fold` of a `datetime` or `time`, which CPython leaves out of `==` and `hash`.
pub fn identity_fields(c: &Class) -> usize {
    if matches!(&*c.stored.name, "datetime.datetime" | "datetime.time") {
        c.fields.len() - 1
    } else {
        c.fields.len()
    }
}

/// One stdlib class: its key in `builtin_classes`, its module, name and fields.
struct ClassSpec {
    key: &'static str,
    module: &'static str,
    name: &'static str,
    fields: &'static [&'static str],
    /// Base exception class for an exception type.
    exception_base: Option<&'static str>,
}

const CLASSES: &[ClassSpec] = &[
    ClassSpec {
        key: "datetime.timedelta",
        module: "datetime",
        name: "timedelta",
        fields: &["days", "seconds", "microseconds"],
        exception_base: None,
    },
    ClassSpec {
        key: "datetime.date",
        module: "datetime",
        name: "date",
        fields: &["year", "month", "day"],
        exception_base: None,
    },
    ClassSpec {
        key: "datetime.datetime",
        module: "datetime",
        name: "datetime",
        fields: &[
            "year",
            "month",
            "day",
            "hour",
            "minute",
            "second",
            "microsecond",
            "tzinfo",
            // Last: not part of the value (`identity_fields`).
            "fold",
        ],
        exception_base: None,
    },
    ClassSpec {
        key: "datetime.time",
        module: "datetime",
        name: "time",
        // `fold` last: not part of the value (`identity_fields`).
        fields: &["hour", "minute", "second", "microsecond", "tzinfo", "fold"],
        exception_base: None,
    },
    // `date.isocalendar()`: a named tuple (`stdlib_tuple` gives its items).
    ClassSpec {
        key: "datetime.IsoCalendarDate",
        module: "datetime",
        name: "IsoCalendarDate",
        fields: &["year", "week", "weekday"],
        exception_base: None,
    },
    ClassSpec {
        key: "datetime.timezone",
        module: "datetime",
        name: "timezone",
        fields: &["_offset", "_name"],
        exception_base: None,
    },
    ClassSpec {
        key: "uuid.UUID",
        module: "uuid",
        name: "UUID",
        fields: &["hex", "int", "version"],
        exception_base: None,
    },
    ClassSpec {
        key: "re.Pattern",
        module: "re",
        name: "Pattern",
        fields: &["pattern", "flags", "groups", "groupindex"],
        exception_base: None,
    },
    ClassSpec {
        key: "re.Match",
        module: "re",
        name: "Match",
        fields: &[
            "string",
            "re",
            "pos",
            "endpos",
            "lastindex",
            "lastgroup",
            "_spans",
        ],
        exception_base: None,
    },
    // `type Num = int | float;` binds `Num` to one of these (Python 3.12's
    // `typing.TypeAliasType`); its type parameters are `typing.TypeVar`s.
    ClassSpec {
        key: "typing.TypeAliasType",
        module: "typing",
        name: "TypeAliasType",
        fields: &["__name__", "__value__", "__type_params__", "__module__"],
        exception_base: None,
    },
    ClassSpec {
        key: "typing.TypeVar",
        module: "typing",
        name: "TypeVar",
        fields: &["__name__"],
        exception_base: None,
    },
    ClassSpec {
        key: "json.JSONDecodeError",
        module: "json.decoder",
        name: "JSONDecodeError",
        fields: &[],
        exception_base: Some("ValueError"),
    },
    ClassSpec {
        key: "re.error",
        module: "re",
        name: "error",
        fields: &[],
        exception_base: Some("Exception"),
    },
];

/// Positional and keyword arguments bound to a parameter list.
/// How CPython words arity errors for a callable (they differ by how it is written).
#[derive(Clone, Copy)]
pub(super) enum ArgStyle<'a> {
    /// A C function using argument clinic: `f() missing required argument 'x' (pos 1)`.
    Clinic(&'a str),
    /// A C function parsing keywords by hand (the `datetime` constructors and methods):
    /// `'x' is an invalid keyword argument for f()`; the name `function` words it as
    /// CPython does for the constructors.
    Keywords(&'a str),
    /// A function written in Python: `f() missing 1 required positional argument: 'x'`.
    Python(&'a str),
    /// A method written in Python (`Random.randint`): the counts include `self`.
    PyMethod(&'a str),
}

impl ArgStyle<'_> {
    fn callee(&self) -> String {
        match self {
            ArgStyle::Keywords("function") => "function".to_string(),
            ArgStyle::Clinic(f)
            | ArgStyle::Keywords(f)
            | ArgStyle::Python(f)
            | ArgStyle::PyMethod(f) => {
                format!("{f}()")
            }
        }
    }

    fn too_many(&self, required: usize, positional: usize, given: usize) -> String {
        let f = self.callee();
        match self {
            ArgStyle::Keywords(_) => {
                format!("{f} takes at most {positional} arguments ({given} given)")
            }
            ArgStyle::Clinic(_) => {
                if positional == required {
                    format!(
                        "{f} takes exactly {positional} argument{} ({given} given)",
                        if positional == 1 { "" } else { "s" }
                    )
                } else {
                    format!("{f} takes at most {positional} arguments ({given} given)")
                }
            }
            ArgStyle::Python(_) | ArgStyle::PyMethod(_) => {
                let extra = usize::from(matches!(self, ArgStyle::PyMethod(_)));
                let (lo, hi, given) = (required + extra, positional + extra, given + extra);
                let were = if given == 1 { "was" } else { "were" };
                if lo == hi {
                    format!(
                        "{f} takes {hi} positional argument{} but {given} {were} given",
                        if hi == 1 { "" } else { "s" }
                    )
                } else {
                    format!(
                        "{f} takes from {lo} to {hi} positional arguments but {given} {were} given"
                    )
                }
            }
        }
    }

    fn multiple(&self, k: &str, i: usize) -> String {
        match self {
            ArgStyle::Keywords(_) | ArgStyle::Clinic(_) => format!(
                "argument for {} given by name ('{k}') and position ({})",
                self.callee(),
                i + 1
            ),
            _ => format!("{} got multiple values for argument '{k}'", self.callee()),
        }
    }

    fn unexpected(&self, k: &str) -> String {
        match self {
            ArgStyle::Keywords("function") => {
                format!("'{k}' is an invalid keyword argument for this function")
            }
            ArgStyle::Keywords(_) | ArgStyle::Clinic(_) => {
                format!("'{k}' is an invalid keyword argument for {}", self.callee())
            }
            _ => format!("{} got an unexpected keyword argument '{k}'", self.callee()),
        }
    }

    fn missing(&self, params: &[&str], missing: &[usize]) -> String {
        let f = self.callee();
        match self {
            ArgStyle::Clinic(_) | ArgStyle::Keywords(_) => {
                let i = missing[0];
                format!(
                    "{f} missing required argument '{}' (pos {})",
                    params[i],
                    i + 1
                )
            }
            ArgStyle::Python(_) | ArgStyle::PyMethod(_) => {
                let names: Vec<Rc<str>> = missing.iter().map(|i| Rc::from(params[*i])).collect();
                let list = super::params::name_list(&names);
                format!(
                    "{f} missing {} required positional argument{}: {list}",
                    names.len(),
                    if names.len() == 1 { "" } else { "s" }
                )
            }
        }
    }
}

pub(super) struct Args {
    pub vals: Vec<Option<Value>>,
}

impl Args {
    pub fn get(&self, i: usize) -> Option<&Value> {
        self.vals.get(i).and_then(|v| v.as_ref())
    }
    /// The argument, treating an explicit `None` as absent.
    pub fn opt(&self, i: usize) -> Option<&Value> {
        self.get(i).filter(|v| !v.is_none())
    }
}

impl Interp<'_> {
    /// Install the stdlib's classes once per program (idempotent).
    fn ensure_stdlib_classes(&mut self) {
        if self.builtin_classes.contains_key("re.error") {
            return;
        }
        for spec in CLASSES {
            let class = match spec.exception_base {
                None => {
                    let mut c = Class::builtin_record(spec.name, spec.fields);
                    c.module = Rc::from(spec.module);
                    c.stored = StoredNames::new(MARK, spec.key, "");
                    c
                }
                Some(base) => {
                    let base = self
                        .builtin_classes
                        .get(base)
                        .cloned()
                        .expect("builtin exception classes are installed first");
                    let mut mro = vec![base.clone()];
                    mro.extend(base.mro.iter().cloned());
                    let mut c =
                        Class::bare_builtin(spec.name, ClassKind::Exception, vec![base], mro);
                    c.module = Rc::from(spec.module);
                    c
                }
            };
            Rc::make_mut(&mut self.builtin_classes).insert(spec.key, Rc::new(class));
        }
        self.install_regex_flag();
    }

    pub(super) fn stdlib_class(&mut self, key: &'static str) -> Rc<Class> {
        self.ensure_stdlib_classes();
        self.builtin_classes[key].clone()
    }

    /// The module object of a built-in standard-library module.
    pub(super) fn stdlib_module(&mut self, name: &str) -> Rc<ModuleObj> {
        self.ensure_stdlib_classes();
        let scope = Scope::new_ref(None);
        for member in members(name) {
            let v = self.stdlib_member(name, member);
            scope_define(&scope, Rc::from(*member), v);
        }
        Rc::new(ModuleObj {
            name: Rc::from(name),
            scope,
        })
    }

    /// The value of `module.member` (a constant, a class or a function).
    fn stdlib_member(&mut self, module: &str, member: &'static str) -> Value {
        let constant = match module {
            "math" => math::constant(member),
            "re" => re::flag_value(member).map(|v| self.re_flag(v)),
            "datetime" => self.datetime_member(member),
            _ => None,
        };
        if let Some(v) = constant {
            return v;
        }
        for spec in CLASSES {
            if spec.name == member && spec.key.split('.').next() == Some(module) {
                return Value::Class(self.builtin_classes[spec.key].clone());
            }
        }
        Value::Builtin(Rc::from(format!("{module}.{member}")))
    }

    /// A class attribute of a stdlib class that is a function (`datetime.now`).
    pub(super) fn stdlib_class_fn(class: &str, name: &str) -> Value {
        Value::Builtin(Rc::from(format!("{class}.{name}")))
    }

    /// `import name` / `import from name {..}` resolves to a module built into svc: `http`,
    /// or a stdlib module unless a `.svc` file of that name sits beside the importer
    /// (a local module wins, as a local `.py` file does in Python).
    pub(super) fn is_builtin_module(&mut self, name: &str, local: &std::path::Path) -> bool {
        super::builtin_module(name) || (is_module(name) && self.host.read_module(local).is_none())
    }

    /// Call a stdlib function by its qualified name ([`is_qualified`]).
    pub(super) fn call_stdlib(
        &mut self,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let (module, func) = name.split_once('.').unwrap_or((name, ""));
        self.ensure_stdlib_classes();
        match module {
            "math" => self.call_math(func, args, kwargs),
            "random" => self.call_random(func, args, kwargs),
            "json" => self.call_json(func, args, kwargs),
            "time" => self.call_time(func, args, kwargs),
            "datetime" => self.call_datetime_fn(func, args, kwargs),
            "uuid" => self.call_uuid(func, args, kwargs),
            "re" => self.call_re(func, args, kwargs),
            "asyncio" => self.call_asyncio(func, args, kwargs),
            _ => Err(self.err("NameError", format!("name '{name}' is not defined"))),
        }
    }

    /// The stdlib class key of an instance or class, if it is one of ours.
    pub(super) fn stdlib_key(v: &Value) -> Option<&str> {
        let c = match v {
            Value::Instance(i) => &i.class,
            Value::Class(c) => c,
            _ => return None,
        };
        (&*c.stored.module == MARK).then_some(&*c.stored.name)
    }

    /// `Class(args)` for a stdlib class.
    pub(super) fn stdlib_construct(
        &mut self,
        c: &Rc<Class>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let key = c.stored.name.to_string();
        match key.as_str() {
            "datetime.timedelta" | "datetime.date" | "datetime.datetime" | "datetime.time"
            | "datetime.timezone" => self.datetime_construct(&key, args, kwargs),
            "uuid.UUID" => self.uuid_construct(args, kwargs),
            _ => Err(self.err(
                "TypeError",
                format!("cannot create '{}.{}' instances", c.module, c.name),
            )),
        }
    }

    /// `recv.name(args)` on a stdlib instance or class ([`Interp::stdlib_key`] is `Some`).
    pub(super) fn call_stdlib_method(
        &mut self,
        recv: &Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let key = Self::stdlib_key(recv).unwrap_or("").to_string();
        if let Value::Class(_) = recv {
            // A class attribute that is a value (`timezone.utc`) called, or a function.
            if let Some(v) = self.datetime_class_attr(&key, name) {
                return self.call_value(&v, args, kwargs);
            }
            return self.call_stdlib(&format!("{key}.{name}"), args, kwargs);
        }
        match key.split_once('.').map_or("", |p| p.0) {
            "datetime" => self.datetime_method(&key, recv, name, args, kwargs),
            "re" => self.re_method(&key, recv, name, args, kwargs),
            _ => self.uuid_method(recv, name, args, kwargs),
        }
    }

    /// `recv.name` (not called) on a stdlib instance or class: a bound method or a
    /// class-level function, if `name` is one.
    pub(super) fn stdlib_attr(&mut self, recv: &Value, name: &str) -> Option<Value> {
        let key = Self::stdlib_key(recv)?;
        let methods: &[&str] = match key {
            "datetime.timedelta" => datetime::TIMEDELTA_METHODS,
            "datetime.date" => datetime::DATE_METHODS,
            "datetime.datetime" => datetime::DATETIME_METHODS,
            "datetime.time" => datetime::TIME_METHODS,
            "datetime.timezone" => &["utcoffset", "tzname"],
            "uuid.UUID" => &[],
            "re.Pattern" => re::PATTERN_METHODS,
            "re.Match" => re::MATCH_METHODS,
            _ => &[],
        };
        match recv {
            Value::Class(_) => {
                if let Some(v) = self.datetime_class_attr(key, name) {
                    return Some(v);
                }
                let statics: &[&str] = match key {
                    "datetime.datetime" => datetime::DATETIME_CLASS_FNS,
                    "datetime.date" => datetime::DATE_CLASS_FNS,
                    "datetime.time" => datetime::TIME_CLASS_FNS,
                    _ => &[],
                };
                statics
                    .contains(&name)
                    .then(|| Self::stdlib_class_fn(key, name))
            }
            _ => methods
                .contains(&name)
                .then(|| Value::BuiltinMethod(Rc::new((recv.clone(), Rc::from(name))))),
        }
    }

    /// `format(v, spec)` of a stdlib instance (`__format__`): dates and datetimes
    /// format a non-empty spec with `strftime`; the others take only the empty spec.
    pub(crate) fn stdlib_format(&mut self, v: &Value, spec: &str) -> Option<R<String>> {
        let key = match v {
            Value::Instance(_) => Self::stdlib_key(v)?,
            _ => return None,
        };
        if spec.is_empty() {
            return Some(self.to_str(v));
        }
        Some(match key {
            "datetime.date" | "datetime.datetime" | "datetime.time" => {
                self.datetime_strftime(v, spec)
            }
            _ => {
                let shown = if key.starts_with("datetime.") || key.starts_with("re.") {
                    key
                } else {
                    key.rsplit('.').next().unwrap_or(key)
                };
                Err(self.err(
                    "TypeError",
                    format!("unsupported format string passed to {shown}.__format__"),
                ))
            }
        })
    }

    /// `bool(v)` of a stdlib instance (a zero `timedelta` is false).
    pub(crate) fn stdlib_truthy(&self, v: &Value) -> Option<bool> {
        match Self::stdlib_key(v)? {
            "datetime.timedelta" if matches!(v, Value::Instance(_)) => {
                Some(self.datetime_key(v) != 0)
            }
            _ => None,
        }
    }

    /// The type name CPython shows in messages for a stdlib instance: the C types
    /// (`datetime`, `re`) carry their module (`'datetime.date' object has no attribute`).
    pub(crate) fn stdlib_type_name(v: &Value) -> Option<&str> {
        match v {
            Value::Instance(_) => {
                let key = Self::stdlib_key(v)?;
                (key.starts_with("datetime.") || key.starts_with("re.")).then_some(key)
            }
            _ => None,
        }
    }

    /// `str(v)` of a stdlib instance.
    pub(super) fn stdlib_str(&mut self, v: &Value) -> Option<R<String>> {
        let key = Self::stdlib_key(v)?;
        match key {
            "uuid.UUID" => Some(Ok(uuid::text(self.field(v, "hex")))),
            "typing.TypeAliasType" | "typing.TypeVar" => {
                Some(self.to_str(&self.field(v, "__name__")))
            }
            k if k.starts_with("datetime.") => Some(self.datetime_str(v)),
            _ => None,
        }
    }

    /// `repr(v)` of a stdlib instance.
    pub(super) fn stdlib_repr(&mut self, v: &Value) -> Option<R<String>> {
        let key = Self::stdlib_key(v)?;
        match key {
            "uuid.UUID" => Some(Ok(format!("UUID('{}')", uuid::text(self.field(v, "hex"))))),
            "typing.TypeAliasType" | "typing.TypeVar" => {
                Some(self.to_str(&self.field(v, "__name__")))
            }
            k if k.starts_with("datetime.") => Some(self.datetime_repr(v)),
            k if k.starts_with("re.") => Some(self.re_repr(v)),
            _ => None,
        }
    }

    /// The items of a stdlib named tuple (`date.isocalendar()`), which indexes,
    /// iterates, measures and compares as a tuple of them.
    pub(crate) fn stdlib_tuple(&self, v: &Value) -> Option<Value> {
        if Self::stdlib_key(v) != Some("datetime.IsoCalendarDate") {
            return None;
        }
        let Value::Instance(i) = v else { return None };
        Some(Value::tuple(i.fields.borrow().clone()))
    }

    /// `a == b` when either side is a stdlib value (by value, as CPython).
    pub(super) fn stdlib_eq(&mut self, a: &Value, b: &Value) -> Option<bool> {
        let ka = Self::stdlib_key(a);
        let kb = Self::stdlib_key(b);
        if ka.is_none() && kb.is_none() {
            return None;
        }
        if let Some(ta) = self
            .stdlib_tuple(a)
            .or_else(|| ka.is_none().then(|| a.clone()))
            && let Some(tb) = self
                .stdlib_tuple(b)
                .or_else(|| kb.is_none().then(|| b.clone()))
        {
            return self.py_eq(&ta, &tb).ok();
        }
        if !matches!((a, b), (Value::Instance(_), Value::Instance(_))) {
            return Some(false);
        }
        if ka == Some("re.Pattern") && kb == ka {
            // Equal by pattern text and flags, as CPython's patterns.
            let same = |it: &mut Self, f: &str| {
                let (x, y) = (it.field(a, f), it.field(b, f));
                super::ops::is_same(&x, &y)
            };
            return Some(same(self, "pattern") && same(self, "flags"));
        }
        if ka != kb || ka.is_some_and(|k| k.starts_with("re.")) {
            return Some(ops_identity(a, b));
        }
        if ka == Some("datetime.datetime") {
            // A naive and an aware datetime are never equal (no error, as in CPython).
            return Some(
                self.datetime_cmp(a, b)
                    .is_ok_and(|o| o == std::cmp::Ordering::Equal),
            );
        }
        if ka == Some("datetime.time") {
            return Some(
                self.time_cmp(a, b)
                    .is_ok_and(|o| o == std::cmp::Ordering::Equal),
            );
        }
        let (Value::Instance(x), Value::Instance(y)) = (a, b) else {
            return Some(false);
        };
        let (fx, fy) = (x.fields.borrow().clone(), y.fields.borrow().clone());
        let mut same = fx.len() == fy.len();
        for (p, q) in fx.iter().zip(fy.iter()) {
            same = same
                && match self.stdlib_eq(p, q) {
                    Some(e) => e,
                    None => key_eq(p, q),
                };
        }
        Some(same)
    }

    /// `a < b` when either side is a stdlib value.
    pub(super) fn stdlib_lt(&mut self, a: &Value, b: &Value) -> Option<R<bool>> {
        let ka = Self::stdlib_key(a)?.to_string();
        let kb = Self::stdlib_key(b);
        if matches!(
            (ka.as_str(), kb),
            ("datetime.date", Some("datetime.datetime"))
                | ("datetime.datetime", Some("datetime.date"))
        ) {
            return Some(Err(self.err(
                "TypeError",
                "can't compare datetime.datetime to datetime.date",
            )));
        }
        if kb != Some(ka.as_str()) {
            return None;
        }
        Some(match ka.as_str() {
            "datetime.datetime" => self
                .datetime_cmp(a, b)
                .map(|o| o == std::cmp::Ordering::Less),
            "datetime.time" => self.time_cmp(a, b).map(|o| o == std::cmp::Ordering::Less),
            "datetime.date" | "datetime.timedelta" => {
                let x = self.datetime_key(a);
                let y = self.datetime_key(b);
                Ok(x < y)
            }
            "uuid.UUID" => {
                let x = uuid::text(self.field(a, "hex"));
                let y = uuid::text(self.field(b, "hex"));
                Ok(x < y)
            }
            _ => return None,
        })
    }

    /// `a <op> b` when either side is a stdlib value.
    pub(super) fn stdlib_binop(
        &mut self,
        op: crate::ast::BinOp,
        a: &Value,
        b: &Value,
    ) -> Option<R<Value>> {
        if Self::stdlib_key(a).is_none() && Self::stdlib_key(b).is_none() {
            return None;
        }
        self.datetime_binop(op, a, b)
    }

    /// Field `name` of a stdlib instance.
    pub(super) fn field(&self, v: &Value, name: &str) -> Value {
        match v {
            Value::Instance(i) => i
                .class
                .field_slot(name)
                .map(|s| i.fields.borrow()[s].clone())
                .unwrap_or(Value::None),
            _ => Value::None,
        }
    }

    /// A new instance of a stdlib class with these field values (in field order).
    pub(super) fn stdlib_instance(&mut self, key: &'static str, fields: Vec<Value>) -> Value {
        let class = self.stdlib_class(key);
        debug_assert_eq!(class.fields.len(), fields.len());
        Value::Instance(Rc::new(Instance {
            class,
            fields: std::cell::RefCell::new(fields),
            extra: Default::default(),
            id: next_id(),
            user_hash: Default::default(),
        }))
    }

    /// Bind `args`/`kwargs` to `params` (CPython-style `TypeError`s, worded as a C
    /// function with argument clinic words them). Parameters after `positional` can only
    /// be passed by keyword.
    /// The one positional argument of a C function of CPython's that takes exactly one
    /// (`func` as CPython names it in its messages, e.g. `math.sqrt`, `time.sleep`).
    pub(super) fn one_positional<'a>(
        &self,
        func: &str,
        args: &'a [Value],
        kwargs: &[(Rc<str>, Value)],
    ) -> R<&'a Value> {
        if !kwargs.is_empty() {
            return Err(self.err("TypeError", format!("{func}() takes no keyword arguments")));
        }
        match args {
            [one] => Ok(one),
            _ => Err(self.err(
                "TypeError",
                format!("{func}() takes exactly one argument ({} given)", args.len()),
            )),
        }
    }

    pub(super) fn stdlib_args(
        &self,
        func: &str,
        params: &[&str],
        required: usize,
        positional: usize,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Args> {
        self.stdlib_args_as(
            ArgStyle::Clinic(func),
            params,
            required,
            positional,
            args,
            kwargs,
        )
    }

    /// [`Self::stdlib_args`] with the arity messages of a given kind of CPython callable.
    pub(super) fn stdlib_args_as(
        &self,
        style: ArgStyle<'_>,
        params: &[&str],
        required: usize,
        positional: usize,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Args> {
        if args.len() > positional {
            // A clinic function with keyword-only parameters (`isclose`, `prod`), or a
            // C function parsing keywords with them (`time(...)`), counts every
            // argument first, then the positional ones.
            if matches!(style, ArgStyle::Clinic(_) | ArgStyle::Keywords(_))
                && params.len() > positional
            {
                let f = style.callee();
                let given = args.len() + kwargs.len();
                let msg = if given > params.len() {
                    format!(
                        "{f} takes at most {} arguments ({given} given)",
                        params.len()
                    )
                } else {
                    format!(
                        "{f} takes {} {positional} positional argument{} ({} given)",
                        if required < positional {
                            "at most"
                        } else {
                            "exactly"
                        },
                        if positional == 1 { "" } else { "s" },
                        args.len()
                    )
                };
                return Err(self.err("TypeError", msg));
            }
            return Err(self.err(
                "TypeError",
                style.too_many(required, positional, args.len()),
            ));
        }
        let mut vals: Vec<Option<Value>> = vec![None; params.len()];
        for (i, a) in args.into_iter().enumerate() {
            vals[i] = Some(a);
        }
        for (k, v) in kwargs {
            match params.iter().position(|p| **p == *k) {
                Some(i) => {
                    if vals[i].is_some() {
                        return Err(self.err("TypeError", style.multiple(&k, i)));
                    }
                    vals[i] = Some(v);
                }
                None => return Err(self.err("TypeError", style.unexpected(&k))),
            }
        }
        let missing: Vec<usize> = (0..required.min(params.len()))
            .filter(|i| vals[*i].is_none())
            .collect();
        if !missing.is_empty() {
            return Err(self.err("TypeError", style.missing(params, &missing)));
        }
        Ok(Args { vals })
    }

    /// A number argument as `f64` (`int`, `bool`, `float`).
    pub(super) fn num_arg(&self, v: &Value) -> R<f64> {
        use num_traits::ToPrimitive;
        match v {
            Value::Float(f) => Ok(*f),
            Value::Int(i) => Ok(*i as f64),
            Value::Bool(b) => Ok(f64::from(u8::from(*b))),
            Value::BigInt(b) => b
                .to_f64()
                .filter(|f| f.is_finite())
                .ok_or_else(|| self.err("OverflowError", "int too large to convert to float")),
            other => Err(self.err(
                "TypeError",
                format!("must be real number, not {}", self.type_name_of(other)),
            )),
        }
    }

    /// An integer argument (`int`, `bool`).
    pub(super) fn int_arg(&self, v: &Value) -> R<i64> {
        match v {
            Value::Int(i) => Ok(*i),
            // A typed enum's member (`re.I`, an `enum E: int` member) is its int.
            Value::EnumMember(m) if super::decl_later::enum_value_type(&m.class) == Some("int") => {
                self.int_arg(&m.value)
            }
            Value::Bool(b) => Ok(i64::from(*b)),
            Value::BigInt(_) => {
                Err(self.err("OverflowError", "Python int too large to convert to C long"))
            }
            other => Err(self.err(
                "TypeError",
                format!(
                    "'{}' object cannot be interpreted as an integer",
                    self.type_name_of(other)
                ),
            )),
        }
    }

    /// A string argument.
    pub(super) fn str_arg(&self, func: &str, v: &Value) -> R<Rc<str>> {
        match v {
            Value::Str(s) => Ok(s.to_rc()),
            other => Err(self.err(
                "TypeError",
                format!(
                    "{func}() argument must be str, not {}",
                    self.type_name_of(other)
                ),
            )),
        }
    }
}

/// Identity of two values (`is`).
fn ops_identity(a: &Value, b: &Value) -> bool {
    super::ops::is_same(a, b)
}
