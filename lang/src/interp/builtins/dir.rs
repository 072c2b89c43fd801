//! `dir(x)`: the sorted attribute names of a value, a type, an object or a module. Builtin
//! values and types list CPython 3.12's names (tables generated from CPython 3.12.1), the
//! instances and classes of archetypes list what jaclang 0.16.7's generated classes
//! carry plus their own fields, statics, methods and abilities, modules their bindings.

use super::args::Kwargs;
use crate::ast::ArchKind;
use crate::interp::value::{Class, ClassKind, PyStr, Value};
use crate::interp::{Interp, Interrupt};
use std::collections::BTreeSet;
use std::rc::Rc;

/// `dir(...)`. One positional argument; `dir()` with none would list the caller's local
/// names, which neither core exposes to a builtin, so it is refused with a clear error.
pub(super) fn dir(it: &mut Interp, args: Vec<Value>, kwargs: &Kwargs) -> Result<Value, Interrupt> {
    if !kwargs.is_empty() {
        return Err(it.err("TypeError", "dir() takes no keyword arguments"));
    }
    if args.len() > 1 {
        return Err(it.err(
            "TypeError",
            format!("dir expected at most 1 argument, got {}", args.len()),
        ));
    }
    let Some(v) = args.into_iter().next() else {
        return Err(it.err(
            "TypeError",
            "dir() without an argument (the local names) is not supported in svc; \
             pass the object to list",
        ));
    };
    let mut names: BTreeSet<Rc<str>> = BTreeSet::new();
    collect(it, &v, &mut names)?;
    it.check_items(names.len())?;
    Ok(Value::list(
        names
            .into_iter()
            .map(|n| Value::Str(PyStr::from(n)))
            .collect(),
    ))
}

fn add_table(names: &mut BTreeSet<Rc<str>>, table: &str) {
    names.extend(table.split_ascii_whitespace().map(Rc::from));
}

fn builtin_table(type_name: &str) -> Option<&'static str> {
    BUILTIN_DIRS
        .iter()
        .find(|(n, _)| *n == type_name)
        .map(|(_, t)| *t)
}

/// The names a builtin type's instances (and the type itself) list.
fn add_builtin(names: &mut BTreeSet<Rc<str>>, type_name: &str) {
    let table = builtin_table(type_name)
        .or_else(|| builtin_table("object"))
        .unwrap_or("");
    add_table(names, table);
}

fn collect(it: &mut Interp, v: &Value, names: &mut BTreeSet<Rc<str>>) -> Result<(), Interrupt> {
    match v {
        Value::Module(m) => {
            let dunders = if crate::interp::stdlib::is_module(&m.name) {
                MODULE_DUNDERS
                    .iter()
                    .find(|(n, _)| *n == &*m.name)
                    .map_or(PLAIN_MODULE_DUNDERS, |(_, t)| *t)
            } else {
                PLAIN_MODULE_DUNDERS
            };
            add_table(names, dunders);
            names.extend(m.scope.borrow().vars.names().cloned());
        }
        Value::Class(c) => add_class(names, c, true),
        Value::Instance(i) => {
            add_class(names, &i.class, false);
            if let Some(extra) = i.extra.borrow().as_ref() {
                names.extend(extra.keys().cloned());
            }
        }
        Value::Anchor(_) => {
            let class = it.class_of(v);
            add_class(names, &class, false);
        }
        Value::EnumMember(m) => {
            add_table(names, ENUM_MEMBER);
            add_members(names, &m.class, false);
        }
        Value::Builtin(n) if &**n == crate::interp::value::NOT_IMPLEMENTED => {
            add_builtin(names, "NotImplementedType");
        }
        Value::Builtin(_) | Value::BuiltinMethod(_) => {
            add_builtin(names, "builtin_function_or_method");
        }
        Value::Func(_) => add_builtin(names, "function"),
        Value::Bound(_) => add_table(names, BOUND_METHOD),
        Value::Iter(..) => add_builtin(names, "list_iterator"),
        other => {
            let class = it.class_of(other);
            add_builtin(names, &class.name);
        }
    }
    Ok(())
}

/// The nearest builtin exception class of `c`'s line.
fn builtin_exception(c: &Class) -> Option<&str> {
    std::iter::once(c)
        .chain(c.mro.iter().map(|m| &**m))
        .find(|m| m.kind == ClassKind::Exception && &*m.module == "builtins")
        .map(|m| &*m.name)
}

fn add_class(names: &mut BTreeSet<Rc<str>>, c: &Rc<Class>, is_type: bool) {
    match c.kind {
        ClassKind::Builtin => add_builtin(names, &c.name),
        ClassKind::Enum => {
            if is_type {
                add_table(names, ENUM_CLASS);
                names.extend(c.members.borrow().iter().map(|m| m.name.clone()));
            } else {
                add_table(names, ENUM_MEMBER);
            }
            add_members(names, c, false);
            return;
        }
        ClassKind::Exception if builtin_exception(c).is_some() && &*c.module == "builtins" => {
            let table = builtin_table(&c.name)
                .or_else(|| builtin_table("BaseException"))
                .unwrap_or("");
            add_table(names, table);
            return;
        }
        _ => {
            if let Some(exc) = builtin_exception(c) {
                let table = builtin_table(exc)
                    .or_else(|| builtin_table("BaseException"))
                    .unwrap_or("");
                add_table(names, table);
                add_table(names, "__module__ __weakref__");
            } else if c.python_class || c.arch_kind() == Some(ArchKind::Class) {
                add_builtin(names, "object");
                add_table(names, "__dict__ __module__ __weakref__");
            } else {
                add_table(names, ARCHETYPE);
                match c.kind {
                    ClassKind::Root => add_table(names, "__jac_base__ __getattr__"),
                    ClassKind::Arch(ArchKind::Walker) => {
                        add_table(names, "__jac_base__ __jac_async__ reports");
                    }
                    ClassKind::Arch(ArchKind::Node | ArchKind::Edge) | ClassKind::GenericEdge => {
                        add_table(names, "__jac_base__");
                    }
                    _ => {}
                }
            }
        }
    }
    add_members(names, c, is_type);
}

/// The fields, statics, methods and named abilities `c` and its ancestors declare. On the
/// type itself (`is_type`) a field is listed only when it has a default, as the class
/// attribute a dataclass keeps for it.
fn add_members(names: &mut BTreeSet<Rc<str>>, c: &Rc<Class>, is_type: bool) {
    for f in &c.fields {
        if !is_type || f.is_static || f.default.is_some() {
            names.insert(f.name.clone());
        }
    }
    for k in std::iter::once(c).chain(c.mro.iter()) {
        if k.kind == ClassKind::Builtin {
            continue;
        }
        // `init` and `postinit` are the generated class's `__init__`/`__post_init__`.
        names.extend(k.methods.borrow().keys().map(|n| match &**n {
            "init" => Rc::from("__init__"),
            "postinit" => Rc::from("__post_init__"),
            _ => n.clone(),
        }));
        names.extend(
            k.statics
                .borrow()
                .iter()
                .filter(|(_, v)| !matches!(v, Value::EnumMember(_)))
                .map(|(n, _)| n.clone()),
        );
        names.extend(k.abilities.borrow().iter().filter_map(|a| a.name.clone()));
    }
}

/// What jaclang 0.16.7's class for an `obj` lists before its own members (a dataclass
/// with the runtime's hooks); `node`, `edge`, `walker` and `root` add a few.
const ARCHETYPE: &str = "__annotations__ __class__ __dataclass_fields__ __dataclass_params__ \
     __delattr__ __dict__ __dir__ __doc__ __eq__ __format__ __ge__ __getattribute__ \
     __getstate__ __gt__ __hash__ __init__ __init_subclass__ __jac__ __jac_access__ \
     __jac_fingerprint__ __le__ __lt__ __match_args__ __module__ __ne__ __new__ \
     __post_init__ __reduce__ __reduce_ex__ __repr__ __setattr__ __sizeof__ __str__ \
     __subclasshook__ __weakref__ _jac_entry_funcs_ _jac_exit_funcs_ _subclass_hooks";

/// An enum member (Python's `Enum` member `dir`).
const ENUM_MEMBER: &str = "__class__ __doc__ __eq__ __hash__ __module__ name value";

/// An enum type.
const ENUM_CLASS: &str = "__class__ __contains__ __doc__ __getitem__ __init_subclass__ \
     __iter__ __len__ __members__ __module__ __name__ __qualname__";

/// A bound method.
const BOUND_METHOD: &str = "__call__ __class__ __delattr__ __dir__ __doc__ __eq__ __format__ \
     __func__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
     __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ \
     __self__ __setattr__ __sizeof__ __str__ __subclasshook__";

/// A module that is a Jac file.
const PLAIN_MODULE_DUNDERS: &str = "__doc__ __file__ __loader__ __name__ __package__ __spec__";

/// The module attributes CPython 3.12's standard modules list.
const MODULE_DUNDERS: &[(&str, &str)] = &[
    ("math", PLAIN_MODULE_DUNDERS),
    ("time", "__doc__ __loader__ __name__ __package__ __spec__"),
    (
        "json",
        "__all__ __author__ __builtins__ __cached__ __doc__ __file__ __loader__ __name__ \
         __package__ __path__ __spec__ __version__",
    ),
    (
        "random",
        "__all__ __builtins__ __cached__ __doc__ __file__ __loader__ __name__ __package__ \
         __spec__",
    ),
    (
        "datetime",
        "__all__ __builtins__ __cached__ __doc__ __file__ __loader__ __name__ __package__ \
         __spec__",
    ),
    (
        "uuid",
        "__author__ __builtins__ __cached__ __doc__ __file__ __loader__ __name__ \
         __package__ __spec__",
    ),
    (
        "re",
        "__all__ __builtins__ __cached__ __doc__ __file__ __loader__ __name__ __package__ \
         __path__ __spec__ __version__",
    ),
    (
        "asyncio",
        "__all__ __builtins__ __cached__ __doc__ __file__ __loader__ __name__ __package__ \
         __path__ __spec__",
    ),
];

/// CPython 3.12's `dir()` of each builtin type's instances (the type lists the same).
const BUILTIN_DIRS: &[(&str, &str)] = &[
    (
        "object",
        "__class__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ __getattribute__ \
         __getstate__ __gt__ __hash__ __init__ __init_subclass__ __le__ __lt__ __ne__ \
         __new__ __reduce__ __reduce_ex__ __repr__ __setattr__ __sizeof__ __str__ \
         __subclasshook__",
    ),
    (
        "int",
        "__abs__ __add__ __and__ __bool__ __ceil__ __class__ __delattr__ __dir__ __divmod__ \
         __doc__ __eq__ __float__ __floor__ __floordiv__ __format__ __ge__ __getattribute__ \
         __getnewargs__ __getstate__ __gt__ __hash__ __index__ __init__ __init_subclass__ \
         __int__ __invert__ __le__ __lshift__ __lt__ __mod__ __mul__ __ne__ __neg__ __new__ \
         __or__ __pos__ __pow__ __radd__ __rand__ __rdivmod__ __reduce__ __reduce_ex__ \
         __repr__ __rfloordiv__ __rlshift__ __rmod__ __rmul__ __ror__ __round__ __rpow__ \
         __rrshift__ __rshift__ __rsub__ __rtruediv__ __rxor__ __setattr__ __sizeof__ \
         __str__ __sub__ __subclasshook__ __truediv__ __trunc__ __xor__ as_integer_ratio \
         bit_count bit_length conjugate denominator from_bytes imag is_integer numerator \
         real to_bytes",
    ),
    (
        "bool",
        "__abs__ __add__ __and__ __bool__ __ceil__ __class__ __delattr__ __dir__ __divmod__ \
         __doc__ __eq__ __float__ __floor__ __floordiv__ __format__ __ge__ __getattribute__ \
         __getnewargs__ __getstate__ __gt__ __hash__ __index__ __init__ __init_subclass__ \
         __int__ __invert__ __le__ __lshift__ __lt__ __mod__ __mul__ __ne__ __neg__ __new__ \
         __or__ __pos__ __pow__ __radd__ __rand__ __rdivmod__ __reduce__ __reduce_ex__ \
         __repr__ __rfloordiv__ __rlshift__ __rmod__ __rmul__ __ror__ __round__ __rpow__ \
         __rrshift__ __rshift__ __rsub__ __rtruediv__ __rxor__ __setattr__ __sizeof__ \
         __str__ __sub__ __subclasshook__ __truediv__ __trunc__ __xor__ as_integer_ratio \
         bit_count bit_length conjugate denominator from_bytes imag is_integer numerator \
         real to_bytes",
    ),
    (
        "float",
        "__abs__ __add__ __bool__ __ceil__ __class__ __delattr__ __dir__ __divmod__ __doc__ \
         __eq__ __float__ __floor__ __floordiv__ __format__ __ge__ __getattribute__ \
         __getformat__ __getnewargs__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __int__ __le__ __lt__ __mod__ __mul__ __ne__ __neg__ __new__ \
         __pos__ __pow__ __radd__ __rdivmod__ __reduce__ __reduce_ex__ __repr__ \
         __rfloordiv__ __rmod__ __rmul__ __round__ __rpow__ __rsub__ __rtruediv__ \
         __setattr__ __sizeof__ __str__ __sub__ __subclasshook__ __truediv__ __trunc__ \
         as_integer_ratio conjugate fromhex hex imag is_integer real",
    ),
    (
        "complex",
        "__abs__ __add__ __bool__ __class__ __complex__ __delattr__ __dir__ __doc__ __eq__ \
         __format__ __ge__ __getattribute__ __getnewargs__ __getstate__ __gt__ __hash__ \
         __init__ __init_subclass__ __le__ __lt__ __mul__ __ne__ __neg__ __new__ __pos__ \
         __pow__ __radd__ __reduce__ __reduce_ex__ __repr__ __rmul__ __rpow__ __rsub__ \
         __rtruediv__ __setattr__ __sizeof__ __str__ __sub__ __subclasshook__ __truediv__ \
         conjugate imag real",
    ),
    (
        "str",
        "__add__ __class__ __contains__ __delattr__ __dir__ __doc__ __eq__ __format__ \
         __ge__ __getattribute__ __getitem__ __getnewargs__ __getstate__ __gt__ __hash__ \
         __init__ __init_subclass__ __iter__ __le__ __len__ __lt__ __mod__ __mul__ __ne__ \
         __new__ __reduce__ __reduce_ex__ __repr__ __rmod__ __rmul__ __setattr__ __sizeof__ \
         __str__ __subclasshook__ capitalize casefold center count encode endswith \
         expandtabs find format format_map index isalnum isalpha isascii isdecimal isdigit \
         isidentifier islower isnumeric isprintable isspace istitle isupper join ljust \
         lower lstrip maketrans partition removeprefix removesuffix replace rfind rindex \
         rjust rpartition rsplit rstrip split splitlines startswith strip swapcase title \
         translate upper zfill",
    ),
    (
        "bytes",
        "__add__ __buffer__ __bytes__ __class__ __contains__ __delattr__ __dir__ __doc__ \
         __eq__ __format__ __ge__ __getattribute__ __getitem__ __getnewargs__ __getstate__ \
         __gt__ __hash__ __init__ __init_subclass__ __iter__ __le__ __len__ __lt__ __mod__ \
         __mul__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ __rmod__ __rmul__ \
         __setattr__ __sizeof__ __str__ __subclasshook__ capitalize center count decode \
         endswith expandtabs find fromhex hex index isalnum isalpha isascii isdigit islower \
         isspace istitle isupper join ljust lower lstrip maketrans partition removeprefix \
         removesuffix replace rfind rindex rjust rpartition rsplit rstrip split splitlines \
         startswith strip swapcase title translate upper zfill",
    ),
    (
        "bytearray",
        "__add__ __alloc__ __buffer__ __class__ __contains__ __delattr__ __delitem__ __dir__ \
         __doc__ __eq__ __format__ __ge__ __getattribute__ __getitem__ __getstate__ __gt__ \
         __hash__ __iadd__ __imul__ __init__ __init_subclass__ __iter__ __le__ __len__ __lt__ \
         __mod__ __mul__ __ne__ __new__ __reduce__ __reduce_ex__ __release_buffer__ __repr__ \
         __rmod__ __rmul__ __setattr__ __setitem__ __sizeof__ __str__ __subclasshook__ append \
         capitalize center clear copy count decode endswith expandtabs extend find fromhex \
         hex index insert isalnum isalpha isascii isdigit islower isspace istitle isupper \
         join ljust lower lstrip maketrans partition pop remove removeprefix removesuffix \
         replace reverse rfind rindex rjust rpartition rsplit rstrip split splitlines \
         startswith strip swapcase title translate upper zfill",
    ),
    (
        "list",
        "__add__ __class__ __class_getitem__ __contains__ __delattr__ __delitem__ __dir__ \
         __doc__ __eq__ __format__ __ge__ __getattribute__ __getitem__ __getstate__ __gt__ \
         __hash__ __iadd__ __imul__ __init__ __init_subclass__ __iter__ __le__ __len__ \
         __lt__ __mul__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ __reversed__ \
         __rmul__ __setattr__ __setitem__ __sizeof__ __str__ __subclasshook__ append clear \
         copy count extend index insert pop remove reverse sort",
    ),
    (
        "tuple",
        "__add__ __class__ __class_getitem__ __contains__ __delattr__ __dir__ __doc__ \
         __eq__ __format__ __ge__ __getattribute__ __getitem__ __getnewargs__ __getstate__ \
         __gt__ __hash__ __init__ __init_subclass__ __iter__ __le__ __len__ __lt__ __mul__ \
         __ne__ __new__ __reduce__ __reduce_ex__ __repr__ __rmul__ __setattr__ __sizeof__ \
         __str__ __subclasshook__ count index",
    ),
    (
        "dict",
        "__class__ __class_getitem__ __contains__ __delattr__ __delitem__ __dir__ __doc__ \
         __eq__ __format__ __ge__ __getattribute__ __getitem__ __getstate__ __gt__ __hash__ \
         __init__ __init_subclass__ __ior__ __iter__ __le__ __len__ __lt__ __ne__ __new__ \
         __or__ __reduce__ __reduce_ex__ __repr__ __reversed__ __ror__ __setattr__ \
         __setitem__ __sizeof__ __str__ __subclasshook__ clear copy fromkeys get items keys \
         pop popitem setdefault update values",
    ),
    (
        "set",
        "__and__ __class__ __class_getitem__ __contains__ __delattr__ __dir__ __doc__ \
         __eq__ __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __iand__ \
         __init__ __init_subclass__ __ior__ __isub__ __iter__ __ixor__ __le__ __len__ \
         __lt__ __ne__ __new__ __or__ __rand__ __reduce__ __reduce_ex__ __repr__ __ror__ \
         __rsub__ __rxor__ __setattr__ __sizeof__ __str__ __sub__ __subclasshook__ __xor__ \
         add clear copy difference difference_update discard intersection \
         intersection_update isdisjoint issubset issuperset pop remove symmetric_difference \
         symmetric_difference_update union update",
    ),
    (
        "frozenset",
        "__and__ __class__ __class_getitem__ __contains__ __delattr__ __dir__ __doc__ \
         __eq__ __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __iter__ __le__ __len__ __lt__ __ne__ __new__ __or__ __rand__ \
         __reduce__ __reduce_ex__ __repr__ __ror__ __rsub__ __rxor__ __setattr__ __sizeof__ \
         __str__ __sub__ __subclasshook__ __xor__ copy difference intersection isdisjoint \
         issubset issuperset symmetric_difference union",
    ),
    (
        "range",
        "__bool__ __class__ __contains__ __delattr__ __dir__ __doc__ __eq__ __format__ \
         __ge__ __getattribute__ __getitem__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __iter__ __le__ __len__ __lt__ __ne__ __new__ __reduce__ \
         __reduce_ex__ __repr__ __reversed__ __setattr__ __sizeof__ __str__ \
         __subclasshook__ count index start step stop",
    ),
    (
        "slice",
        "__class__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ __getattribute__ \
         __getstate__ __gt__ __hash__ __init__ __init_subclass__ __le__ __lt__ __ne__ \
         __new__ __reduce__ __reduce_ex__ __repr__ __setattr__ __sizeof__ __str__ \
         __subclasshook__ indices start step stop",
    ),
    (
        "NoneType",
        "__bool__ __class__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ \
         __getattribute__ __getstate__ __gt__ __hash__ __init__ __init_subclass__ __le__ \
         __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ __setattr__ __sizeof__ \
         __str__ __subclasshook__",
    ),
    (
        "builtin_function_or_method",
        "__call__ __class__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ \
         __getattribute__ __getstate__ __gt__ __hash__ __init__ __init_subclass__ __le__ \
         __lt__ __module__ __name__ __ne__ __new__ __qualname__ __reduce__ __reduce_ex__ \
         __repr__ __self__ __setattr__ __sizeof__ __str__ __subclasshook__ \
         __text_signature__",
    ),
    (
        "function",
        "__annotations__ __builtins__ __call__ __class__ __closure__ __code__ __defaults__ \
         __delattr__ __dict__ __dir__ __doc__ __eq__ __format__ __ge__ __get__ \
         __getattribute__ __getstate__ __globals__ __gt__ __hash__ __init__ \
         __init_subclass__ __kwdefaults__ __le__ __lt__ __module__ __name__ __ne__ __new__ \
         __qualname__ __reduce__ __reduce_ex__ __repr__ __setattr__ __sizeof__ __str__ \
         __subclasshook__ __type_params__",
    ),
    (
        "generator",
        "__class__ __del__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ \
         __getattribute__ __getstate__ __gt__ __hash__ __init__ __init_subclass__ __iter__ \
         __le__ __lt__ __name__ __ne__ __new__ __next__ __qualname__ __reduce__ \
         __reduce_ex__ __repr__ __setattr__ __sizeof__ __str__ __subclasshook__ close \
         gi_code gi_frame gi_running gi_suspended gi_yieldfrom send throw",
    ),
    ("traceback", "tb_frame tb_lasti tb_lineno tb_next"),
    (
        "map",
        "__class__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ __getattribute__ \
         __getstate__ __gt__ __hash__ __init__ __init_subclass__ __iter__ __le__ __lt__ \
         __ne__ __new__ __next__ __reduce__ __reduce_ex__ __repr__ __setattr__ __sizeof__ \
         __str__ __subclasshook__",
    ),
    (
        "filter",
        "__class__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ __getattribute__ \
         __getstate__ __gt__ __hash__ __init__ __init_subclass__ __iter__ __le__ __lt__ \
         __ne__ __new__ __next__ __reduce__ __reduce_ex__ __repr__ __setattr__ __sizeof__ \
         __str__ __subclasshook__",
    ),
    (
        "zip",
        "__class__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ __getattribute__ \
         __getstate__ __gt__ __hash__ __init__ __init_subclass__ __iter__ __le__ __lt__ \
         __ne__ __new__ __next__ __reduce__ __reduce_ex__ __repr__ __setattr__ __setstate__ \
         __sizeof__ __str__ __subclasshook__",
    ),
    (
        "enumerate",
        "__class__ __class_getitem__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ \
         __getattribute__ __getstate__ __gt__ __hash__ __init__ __init_subclass__ __iter__ \
         __le__ __lt__ __ne__ __new__ __next__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __sizeof__ __str__ __subclasshook__",
    ),
    (
        "list_iterator",
        "__class__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ __getattribute__ \
         __getstate__ __gt__ __hash__ __init__ __init_subclass__ __iter__ __le__ \
         __length_hint__ __lt__ __ne__ __new__ __next__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __setstate__ __sizeof__ __str__ __subclasshook__",
    ),
    (
        "NotImplementedType",
        "__bool__ __class__ __delattr__ __dir__ __doc__ __eq__ __format__ __ge__ \
         __getattribute__ __getstate__ __gt__ __hash__ __init__ __init_subclass__ __le__ \
         __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ __setattr__ __sizeof__ \
         __str__ __subclasshook__",
    ),
    (
        "BaseException",
        "__cause__ __class__ __context__ __delattr__ __dict__ __dir__ __doc__ __eq__ \
         __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __setstate__ __sizeof__ __str__ __subclasshook__ __suppress_context__ \
         __traceback__ add_note args with_traceback",
    ),
    (
        "AttributeError",
        "__cause__ __class__ __context__ __delattr__ __dict__ __dir__ __doc__ __eq__ \
         __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __setstate__ __sizeof__ __str__ __subclasshook__ __suppress_context__ \
         __traceback__ add_note args name obj with_traceback",
    ),
    (
        "NameError",
        "__cause__ __class__ __context__ __delattr__ __dict__ __dir__ __doc__ __eq__ \
         __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __setstate__ __sizeof__ __str__ __subclasshook__ __suppress_context__ \
         __traceback__ add_note args name with_traceback",
    ),
    (
        "StopIteration",
        "__cause__ __class__ __context__ __delattr__ __dict__ __dir__ __doc__ __eq__ \
         __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __setstate__ __sizeof__ __str__ __subclasshook__ __suppress_context__ \
         __traceback__ add_note args value with_traceback",
    ),
    (
        "ImportError",
        "__cause__ __class__ __context__ __delattr__ __dict__ __dir__ __doc__ __eq__ \
         __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __setstate__ __sizeof__ __str__ __subclasshook__ __suppress_context__ \
         __traceback__ add_note args msg name name_from path with_traceback",
    ),
    (
        "SyntaxError",
        "__cause__ __class__ __context__ __delattr__ __dict__ __dir__ __doc__ __eq__ \
         __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __setstate__ __sizeof__ __str__ __subclasshook__ __suppress_context__ \
         __traceback__ add_note args end_lineno end_offset filename lineno msg offset \
         print_file_and_line text with_traceback",
    ),
    (
        "OSError",
        "__cause__ __class__ __context__ __delattr__ __dict__ __dir__ __doc__ __eq__ \
         __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __setstate__ __sizeof__ __str__ __subclasshook__ __suppress_context__ \
         __traceback__ add_note args characters_written errno filename filename2 strerror \
         with_traceback",
    ),
    (
        "UnicodeEncodeError",
        "__cause__ __class__ __context__ __delattr__ __dict__ __dir__ __doc__ __eq__ \
         __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __setstate__ __sizeof__ __str__ __subclasshook__ __suppress_context__ \
         __traceback__ add_note args encoding end object reason start with_traceback",
    ),
    (
        "UnicodeDecodeError",
        "__cause__ __class__ __context__ __delattr__ __dict__ __dir__ __doc__ __eq__ \
         __format__ __ge__ __getattribute__ __getstate__ __gt__ __hash__ __init__ \
         __init_subclass__ __le__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ \
         __setattr__ __setstate__ __sizeof__ __str__ __subclasshook__ __suppress_context__ \
         __traceback__ add_note args encoding end object reason start with_traceback",
    ),
];
