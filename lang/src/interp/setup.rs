//! Builtins setup: the builtin classes, exception hierarchy, enums and functions
//! installed in the builtins scope of every program.

use super::*;

impl Interp<'_> {
    pub(super) fn new_builtin_class(
        &mut self,
        name: &'static str,
        kind: ClassKind,
        base: Option<&str>,
    ) -> Rc<Class> {
        let c = self.hidden_class(name, kind, base, "builtins");
        scope_define(&self.builtins, Rc::from(name), Value::Class(c.clone()));
        c
    }

    /// A builtin class `class_of`, `__mro__` or `__bases__` answers with, not a name in
    /// the builtins scope (`base`: a builtin class installed before it).
    fn hidden_class(
        &mut self,
        name: &'static str,
        kind: ClassKind,
        base: Option<&str>,
        module: &str,
    ) -> Rc<Class> {
        let bases: Vec<Rc<Class>> = base
            .and_then(|b| self.builtin_classes.get(b).cloned())
            .into_iter()
            .collect();
        let mro = ancestors(&bases);
        let mut c = Class::bare_builtin(name, kind, bases, mro);
        if module != "builtins" {
            c.module = Rc::from(module);
        }
        let c = Rc::new(c);
        Rc::make_mut(&mut self.builtin_classes).insert(name, c.clone());
        c
    }

    pub(super) fn install_builtins(&mut self) {
        for t in [
            "object",
            "int",
            "float",
            "str",
            "list",
            "dict",
            "set",
            "tuple",
            "range",
            "type",
            "NoneType",
            "function",
            "generator",
            "coroutine",
            "frozenset",
            "bytes",
            "bytearray",
            "complex",
            "traceback",
            "slice",
        ] {
            self.new_builtin_class(
                t,
                ClassKind::Builtin,
                if t == "object" { None } else { Some("object") },
            );
        }
        self.new_builtin_class("bool", ClassKind::Builtin, Some("int"));
        // The types of the lazy iterators (`type(m).__name__`), whose names stay the
        // builtin functions that make them, and of `NotImplemented`: classes known to
        // `class_of` only.
        for t in [
            "map",
            "filter",
            "zip",
            "enumerate",
            "NotImplementedType",
            "method",
            "builtin_function_or_method",
            "dict_keys",
            "dict_values",
            "dict_items",
        ]
        .into_iter()
        .chain(IterKind::ALL.iter().map(|k| k.name()))
        {
            self.hidden_class(t, ClassKind::Builtin, Some("object"), "builtins");
        }
        self.new_builtin_class("any", ClassKind::Builtin, Some("object"));
        // The bases jaclang gives every archetype (what `__mro__` and `__bases__` show):
        // `Archetype` under each kind's own, and `Enum`; `type(Color)` of an enum is
        // `enum.EnumType`, a `type`.
        const ARCHETYPE: &str = "jaclang.jac0core.archetype";
        self.hidden_class("Archetype", ClassKind::Builtin, Some("object"), ARCHETYPE);
        for t in ["NodeArchetype", "EdgeArchetype", "WalkerArchetype"] {
            self.hidden_class(t, ClassKind::Builtin, Some("Archetype"), ARCHETYPE);
        }
        self.hidden_class("Enum", ClassKind::Enum, Some("object"), "enum");
        self.hidden_class("EnumType", ClassKind::Builtin, Some("type"), "enum");
        let excs: &[(&'static str, &str)] = &[
            ("BaseException", "object"),
            ("Exception", "BaseException"),
            ("ArithmeticError", "Exception"),
            ("ZeroDivisionError", "ArithmeticError"),
            ("OverflowError", "ArithmeticError"),
            ("LookupError", "Exception"),
            ("KeyError", "LookupError"),
            ("IndexError", "LookupError"),
            ("ValueError", "Exception"),
            ("TypeError", "Exception"),
            ("AttributeError", "Exception"),
            ("NameError", "Exception"),
            ("UnboundLocalError", "NameError"),
            ("RuntimeError", "Exception"),
            ("RecursionError", "RuntimeError"),
            ("NotImplementedError", "RuntimeError"),
            ("AssertionError", "Exception"),
            ("StopIteration", "Exception"),
            ("GeneratorExit", "BaseException"),
            ("ImportError", "Exception"),
            ("ModuleNotFoundError", "ImportError"),
            ("SyntaxError", "Exception"),
            ("PermissionError", "Exception"),
            ("OSError", "Exception"),
            ("FileNotFoundError", "OSError"),
            ("TimeoutError", "OSError"),
            ("UnicodeError", "ValueError"),
            ("UnicodeEncodeError", "UnicodeError"),
            ("UnicodeDecodeError", "UnicodeError"),
            ("MemoryError", "Exception"),
            // kvstore's connection failures (CPython: subclasses of OSError).
            ("ConnectionError", "Exception"),
            ("TimeoutError", "Exception"),
        ];
        for (n, b) in excs {
            self.new_builtin_class(n, ClassKind::Exception, Some(b));
        }
        // Object-spatial builtins.
        let root = self.new_builtin_class("Root", ClassKind::Root, None);
        Rc::make_mut(&mut self.classes).insert(root.name.clone(), root);
        let ge = self.new_builtin_class("GenericEdge", ClassKind::GenericEdge, None);
        Rc::make_mut(&mut self.classes).insert(ge.name.clone(), ge);
        // `Node` and `Edge`: the ambient bases every node and edge matches
        // (`Class::is_sub`); builtin types, so they are not archetypes of their own.
        self.new_builtin_class(value::OSP_NODE_BASE, ClassKind::Builtin, None);
        self.new_builtin_class(value::OSP_EDGE_BASE, ClassKind::Builtin, None);
        self.install_enum(
            "AccessLevel",
            &[
                ("NO_ACCESS", Value::Int(-1)),
                ("READ", Value::Int(0)),
                ("CONNECT", Value::Int(1)),
                ("WRITE", Value::Int(2)),
            ],
        );
        self.install_enum(
            "APIProtocol",
            &[
                ("HTTP", Value::str("http")),
                ("WEBHOOK", Value::str("webhook")),
                ("WEBSOCKET", Value::str("websocket")),
            ],
        );
        self.install_enum(
            "ScheduleTrigger",
            &[
                ("CRON", Value::str("cron")),
                ("INTERVAL", Value::str("interval")),
                ("DATE", Value::str("date")),
            ],
        );
        for (n, v) in [
            ("NoPerm", -1),
            ("ReadPerm", 0),
            ("ConnectPerm", 1),
            ("WritePerm", 2),
        ] {
            scope_define(&self.builtins, Rc::from(n), Value::Int(v));
        }
        self.install_storage_class();
        let factory = self.storage_factory();
        scope_define(&self.builtins, Rc::from("StorageFactory"), factory);
        scope_define(
            &self.builtins,
            Rc::from(storage::STORE),
            Value::Builtin(Rc::from(storage::STORE)),
        );
        scope_define(
            &self.builtins,
            Rc::from(NOT_IMPLEMENTED),
            Value::Builtin(Rc::from(NOT_IMPLEMENTED)),
        );
        for name in builtins::BUILTIN_FUNCTIONS
            .iter()
            .chain(OSP_BUILTINS.iter())
        {
            scope_define(
                &self.builtins,
                Rc::from(*name),
                Value::Builtin(Rc::from(*name)),
            );
        }
        self.install_event_builtins();
    }

    pub(super) fn install_enum(
        &mut self,
        name: &'static str,
        members: &[(&str, Value)],
    ) -> Rc<Class> {
        let c = self.new_builtin_class(name, ClassKind::Enum, None);
        for (n, v) in members {
            let m = Rc::new(EnumMember {
                class: c.clone(),
                name: Rc::from(*n),
                value: v.clone(),
            });
            c.members.borrow_mut().push(m.clone());
            c.statics
                .borrow_mut()
                .insert(Rc::from(*n), Value::EnumMember(m));
        }
        c
    }

    pub(super) fn builtin_module(&mut self, name: &str) -> Rc<ModuleObj> {
        if stdlib::is_module(name) {
            return self.stdlib_module(name);
        }
        let scope = Scope::new_ref(None);
        if name == "sv_client" {
            for f in crate::names::SV_CLIENT_NAMES {
                scope_define(
                    &scope,
                    Rc::from(*f),
                    Value::Builtin(Rc::from(format!("{}{f}", super::sv::CLIENT_PREFIX))),
                );
            }
        }
        if name == "http" {
            let c = self.builtin_class("HTTPMethod").unwrap_or_else(|| {
                self.install_enum(
                    "HTTPMethod",
                    &[
                        ("GET", Value::str("GET")),
                        ("POST", Value::str("POST")),
                        ("PUT", Value::str("PUT")),
                        ("PATCH", Value::str("PATCH")),
                        ("DELETE", Value::str("DELETE")),
                        ("HEAD", Value::str("HEAD")),
                        ("OPTIONS", Value::str("OPTIONS")),
                    ],
                )
            });
            scope_define(&scope, Rc::from("HTTPMethod"), Value::Class(c));
        }
        Rc::new(ModuleObj {
            name: Rc::from(name),
            scope,
        })
    }

    pub(super) fn builtin_module_member(&mut self, module: &str, name: &str) -> R<Value> {
        let m = self.builtin_module(module);
        scope_get(&m.scope, name).ok_or_else(|| {
            self.err(
                "ImportError",
                format!("cannot import name '{name}' from '{module}'"),
            )
        })
    }
}
