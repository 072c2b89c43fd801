//! The later parts of the object model: custom `def init(...)` constructors and the
//! generated initializer `super.init(...)` falls back to, Python-style `class` bodies
//! (explicit `self`, class-level attributes), typed enums and property accessors.

use super::*;

impl Interp<'_> {
    /// Build an instance of `c` (node, edge, obj, walker) with each field at its
    /// default, then run the user's `init` on it with the call's arguments. As in Jac,
    /// the generated initializer and `postinit` do not run (a field without a default
    /// that `init` leaves unset reads as `None`).
    pub(super) fn construct_with_init(
        &mut self,
        c: &Rc<Class>,
        init: &Rc<Function>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let dctx = self.class_ctx(c);
        let mut fields = Vec::with_capacity(c.fields.len());
        for f in &c.fields {
            let v = match (&f.default, f.postinit) {
                (Some(d), false) => self.eval(d, &dctx)?,
                _ => Value::None,
            };
            fields.push(v);
        }
        let v = self.new_object(c, fields);
        self.call_function(init, Some(v.clone()), args, kwargs, None)?;
        Ok(v)
    }

    /// A context for evaluating a class's field defaults.
    fn class_ctx(&self, c: &Rc<Class>) -> Ctx {
        let scope = c
            .scope
            .borrow()
            .clone()
            .unwrap_or_else(|| self.builtins.clone());
        Ctx {
            scope,
            this: None,
            here: None,
            visitor: None,
            class: Some(c.clone()),
            file: c.file,
        }
    }

    /// A fresh node/edge anchor or object of `c` with these field values.
    pub(super) fn new_object(&mut self, c: &Rc<Class>, fields: Vec<Value>) -> Value {
        match c.arch_kind() {
            Some(ArchKind::Node) | Some(ArchKind::Edge) => {
                let (id, owner) = (self.fresh_anchor_id(), self.host.user_root());
                let h = self.graph.new_anchor(id, c.clone(), fields, owner);
                Value::Anchor(h)
            }
            _ => Value::Instance(Rc::new(Instance {
                class: c.clone(),
                fields: std::cell::RefCell::new(fields),
                extra: Default::default(),
                id: next_id(),
                user_hash: Default::default(),
            })),
        }
    }

    /// `super.init(args)` when no base declares `init`: the generated initializer of
    /// `base` run on the existing object `this` (its fields from the arguments, in field
    /// order, then `postinit`, found from `this`'s own class as Python does).
    pub(super) fn generated_init(
        &mut self,
        base: &Rc<Class>,
        this: &Value,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        // `super.init(msg)` of a class deriving from a builtin exception: the
        // exception's `args`, as `Exception.__init__` sets them.
        // A `class` deriving from one (with no `init` and no `obj` in its line, whose
        // generated `init` it would inherit) has `Exception.__init__` too.
        let exception_init = base.kind == ClassKind::Exception
            || (base.is_exception()
                && std::iter::once(&**base)
                    .chain(base.mro.iter().map(|b| &**b))
                    .filter(|b| matches!(b.kind, ClassKind::Arch(_)))
                    .all(|b| b.python_class));
        if exception_init {
            if !kwargs.is_empty() {
                return Err(self.err(
                    "TypeError",
                    format!("{}() takes no keyword arguments", base.name),
                ));
            }
            if let Value::Instance(i) = this {
                i.set_extra(Rc::from("args"), Value::tuple(args));
            }
            return Ok(Value::None);
        }
        let init_fields: Vec<usize> = (0..base.fields.len())
            .filter(|&i| !base.fields[i].postinit && !base.fields[i].is_static)
            .collect();
        let qual = format!("{}.__init__", base.name);
        if args.len() > init_fields.len() {
            return Err(self.err(
                "TypeError",
                super::params::init_arity_message(
                    &qual,
                    init_fields
                        .iter()
                        .filter(|&&i| base.fields[i].default.is_none())
                        .count(),
                    init_fields.len(),
                    args.len(),
                ),
            ));
        }
        let mut values: Vec<Option<Value>> = vec![None; base.fields.len()];
        for (slot, a) in init_fields.iter().zip(args) {
            values[*slot] = Some(a);
        }
        for (k, v) in kwargs {
            match base.field_index.get(&k) {
                Some(&i) if init_fields.contains(&i) => {
                    if values[i].is_some() {
                        return Err(self.err(
                            "TypeError",
                            format!("{qual}() got multiple values for argument '{k}'"),
                        ));
                    }
                    values[i] = Some(v);
                }
                _ => {
                    return Err(self.err(
                        "TypeError",
                        format!("{qual}() got an unexpected keyword argument '{k}'"),
                    ));
                }
            }
        }
        let dctx = self.class_ctx(base);
        for (i, v) in values.into_iter().enumerate() {
            let f = &base.fields[i];
            if f.is_static {
                continue;
            }
            let v = match v {
                Some(v) => v,
                None if f.postinit => continue,
                None => match &f.default {
                    Some(d) => self.eval(d, &dctx)?,
                    None => {
                        return Err(self.err(
                            "TypeError",
                            format!(
                                "{qual}() missing 1 required positional argument: '{}'",
                                f.name
                            ),
                        ));
                    }
                },
            };
            self.set_attr(this, &f.name.clone(), v)?;
        }
        let own = self.class_of(this);
        if let Some(post) = own.find_method("postinit") {
            self.call_function(&post, Some(this.clone()), vec![], vec![], None)?;
        }
        Ok(Value::None)
    }
}

/// `int` or `str` when the enum was declared with that typed base (`enum X: int`),
/// which makes its members behave as their values in `str()`, comparisons and
/// arithmetic (Python's `IntEnum`/`StrEnum`).
pub(super) fn enum_value_type(c: &Class) -> Option<&'static str> {
    if c.kind != ClassKind::Enum {
        return None;
    }
    c.bases.iter().find_map(|b| match (&*b.name, b.kind) {
        ("int", ClassKind::Builtin) => Some("int"),
        ("str", ClassKind::Builtin) => Some("str"),
        ("float", ClassKind::Builtin) => Some("float"),
        _ => None,
    })
}

/// The operands with members of typed enums replaced by their values, if either is one.
pub(super) fn typed_enum_operands(a: &Value, b: &Value) -> Option<(Value, Value)> {
    let unwrap = |v: &Value| match v {
        Value::EnumMember(m) if enum_value_type(&m.class).is_some() => Some(m.value.clone()),
        _ => None,
    };
    match (unwrap(a), unwrap(b)) {
        (None, None) => None,
        (x, y) => Some((
            x.unwrap_or_else(|| a.clone()),
            y.unwrap_or_else(|| b.clone()),
        )),
    }
}

impl Interp<'_> {
    /// Add members `NAME [= value]` to an enum (its body or an `impl Enum { }`); a
    /// member without a value takes the last int value plus one (starting at 1).
    pub(super) fn add_enum_members(
        &mut self,
        class: &Rc<Class>,
        members: &[(&ast::Name, Option<&ast::Expr>)],
        ctx: &Ctx,
    ) -> R<()> {
        let mut auto = class
            .members
            .borrow()
            .iter()
            .rev()
            .find_map(|m| match m.value {
                Value::Int(i) => Some(i.saturating_add(1)),
                _ => None,
            })
            .unwrap_or(1);
        // As in a Python enum body, a value may name the members before it (bound to
        // their plain values while the body runs: `B = A * 2`).
        let body_ctx = {
            let scope = crate::interp::value::Scope::new_ref(Some(ctx.scope.clone()));
            for m in class.members.borrow().iter() {
                scope_define(&scope, m.name.clone(), m.value.clone());
            }
            Ctx {
                scope,
                ..ctx.clone()
            }
        };
        for (name, value) in members {
            let v = match value {
                Some(x) => self.eval(x, &body_ctx)?,
                None => Value::Int(auto),
            };
            scope_define(&body_ctx.scope, name.name.clone(), v.clone());
            if let Value::Int(i) = v {
                auto = i.saturating_add(1);
            }
            let member = Rc::new(EnumMember {
                class: class.clone(),
                name: name.name.clone(),
                value: v,
            });
            class.members.borrow_mut().push(member.clone());
            class
                .statics
                .borrow_mut()
                .insert(name.name.clone(), Value::EnumMember(member));
        }
        Ok(())
    }

    /// `impl Color { RED = 1, GREEN = 2 }`: the body the parser made of the members.
    pub(super) fn impl_enum_members(
        &mut self,
        class: &Rc<Class>,
        body: &[ast::Stmt],
        ctx: &Ctx,
    ) -> R<()> {
        let mut names: Vec<ast::Name> = Vec::new();
        let mut values: Vec<Option<&ast::Expr>> = Vec::new();
        for st in body {
            let (target, value) = match &st.kind {
                StmtKind::Assign { targets, value, .. } if targets.len() == 1 => {
                    (&targets[0], Some(value))
                }
                StmtKind::Expr(e) => (e, None),
                _ => continue,
            };
            if let ast::ExprKind::Name(n) = &target.kind {
                names.push(ast::Name {
                    name: n.clone(),
                    span: target.span,
                });
                values.push(value);
            }
        }
        let members: Vec<(&ast::Name, Option<&ast::Expr>)> =
            names.iter().zip(values.iter().copied()).collect();
        self.add_enum_members(class, &members, ctx)
    }
}

/// In a Python-style `class`, methods spell their receiver (`def f(self: P)`, `class
/// def g(cls)`); the interpreter passes it itself, so the explicit first parameter is
/// dropped from the bound list.
pub(super) fn drop_explicit_receiver(
    ab: &ast::Ability,
    owner: Option<&Rc<Class>>,
    mut params: Vec<ParamDef>,
) -> Vec<ParamDef> {
    // A `class` deriving from an exception is stored as an `obj` kind (see
    // `declare_archetype`); its methods still spell their receiver.
    let in_class =
        owner.is_some_and(|c| c.arch_kind() == Some(ArchKind::Class) || c.is_exception());
    let decorated_class_method = ab
        .decorators
        .iter()
        .any(|d| is_plain_decorator(d, "classmethod"));
    let is_class_method = ab.is_class_method || decorated_class_method;
    let is_static = ab.is_static
        || ab
            .decorators
            .iter()
            .any(|d| is_plain_decorator(d, "staticmethod"));
    // `@classmethod def c(cls: type)` in an `obj` spells its receiver too (jaclang
    // binds the class to `cls`; `class def` binds it implicitly).
    if !(in_class || decorated_class_method) || (is_static && !is_class_method) {
        return params;
    }
    let receiver = if is_class_method { "cls" } else { "self" };
    if params
        .first()
        .is_some_and(|p| p.kind == ast::ParamKind::Normal && &*p.name == receiver)
    {
        params.remove(0);
    }
    params
}

impl Interp<'_> {
    /// Bind `cls` in a class method's frame: the class it was called on, the class of
    /// the instance it was called on, else the declaring class.
    pub(super) fn bind_cls(&mut self, func: &Function, scope: &ScopeRef, this: Option<Value>) {
        let cls = match this {
            Some(Value::Class(c)) => Some(c),
            Some(v) => Some(self.class_of(&v)),
            None => func
                .owner
                .borrow()
                .as_ref()
                .and_then(std::rc::Weak::upgrade),
        };
        if let Some(c) = cls {
            scope
                .borrow_mut()
                .vars
                .insert(Rc::from("cls"), Value::Class(c));
        }
    }
}

impl Interp<'_> {
    /// A statement directly in a `class` body: `name = value` / `name: T = value`
    /// defines a class attribute (read through the class or its instances).
    pub(super) fn class_body_stmt(
        &mut self,
        class: &Rc<Class>,
        st: &ast::Stmt,
        ctx: &Ctx,
    ) -> R<()> {
        match &st.kind {
            StmtKind::Assign { targets, value, .. } => {
                let v = self.eval(value, ctx)?;
                for t in targets {
                    if let ast::ExprKind::Name(n) = &t.kind {
                        class.statics.borrow_mut().insert(n.clone(), v.clone());
                    }
                }
            }
            StmtKind::Declare { target, .. } => {
                if let ast::ExprKind::Name(n) = &target.kind {
                    class.statics.borrow_mut().insert(n.clone(), Value::None);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Is `d` the bare decorator `name` (`@property`, `@staticmethod`)?
pub(super) fn is_plain_decorator(d: &ast::Expr, name: &str) -> bool {
    matches!(&d.kind, ast::ExprKind::Name(n) if &**n == name)
}

/// The name a method is stored under in its class: a `@property` method is the getter
/// of that property and `@p.setter` its setter (as `has p { getter {} setter {} }`).
pub(super) fn method_key(decorators: &[ast::Expr], name: &Rc<str>) -> Rc<str> {
    for d in decorators {
        if is_plain_decorator(d, "property") {
            return Rc::from(getter_name(name));
        }
        if let ast::ExprKind::Attr {
            obj, name: attr, ..
        } = &d.kind
            && matches!(&obj.kind, ast::ExprKind::Name(p) if p == name)
        {
            match &*attr.name {
                "setter" => return Rc::from(setter_name(name)),
                "getter" => return Rc::from(getter_name(name)),
                "deleter" => return Rc::from(deleter_name(name)),
                _ => {}
            }
        }
    }
    name.clone()
}

/// The method a property's getter is stored as.
pub(super) fn getter_name(field: &str) -> String {
    format!("<get {field}>")
}

/// The method a decorated method (`@logged def add`) is kept as: the class attribute
/// `add` is what the decorators returned.
pub(super) fn undecorated_name(method: &str) -> String {
    format!("<undecorated {method}>")
}

/// The method a property's setter is stored as.
pub(super) fn setter_name(field: &str) -> String {
    format!("<set {field}>")
}

/// The method a property's deleter is stored as.
pub(super) fn deleter_name(field: &str) -> String {
    format!("<del {field}>")
}

/// The stored method an accessor keyword of property `field` names (`impl
/// Arch.field.getter`), or `None` for another word.
pub(super) fn accessor_method(field: &str, kind: &str) -> Option<String> {
    match kind {
        "getter" => Some(getter_name(field)),
        "setter" => Some(setter_name(field)),
        "deleter" => Some(deleter_name(field)),
        _ => None,
    }
}

impl Interp<'_> {
    /// `has v: T { getter { } setter(x: T) { } deleter { } }`: the accessors become
    /// methods under names no program can spell (`getter_name`, `setter_name`,
    /// `deleter_name`); reading `obj.v` calls the getter, assigning calls the setter,
    /// `del obj.v` the deleter. A property is not a stored field (not in the
    /// constructor, `str()` or the store). An accessor declared without a body
    /// (`getter;`) is a method whose body `impl Arch.v.getter { }` fills in.
    pub(super) fn declare_properties(&mut self, class: &Rc<Class>, h: &ast::HasDecl, ctx: &Ctx) {
        for v in &h.vars {
            let Some(acc) = &v.accessors else { continue };
            let parts = [
                (&acc.getter, getter_name(&v.name.name)),
                (&acc.setter, setter_name(&v.name.name)),
                (&acc.deleter, deleter_name(&v.name.name)),
            ];
            for (one, name) in parts {
                let Some(one) = one else { continue };
                let ability = ast::Ability {
                    kind: ast::AbilityKind::Def,
                    decorators: Vec::new(),
                    is_override: false,
                    is_static: false,
                    is_class_method: false,
                    is_async: false,
                    access: h.access,
                    name: Some(ast::Name {
                        name: Rc::from(name.as_str()),
                        span: v.name.span,
                    }),
                    signature: Some(ast::Signature {
                        params: one.params.clone(),
                        ret: one.ret.clone(),
                        span: one.span,
                    }),
                    event: None,
                    body: one.body.clone(),
                    is_abstract: false,
                    doc: None,
                    span: one.span,
                };
                let f = self.make_function_from_ability(&ability, ctx, Some(class));
                class
                    .methods
                    .borrow_mut()
                    .insert(Rc::from(name.as_str()), f);
            }
        }
    }
}
