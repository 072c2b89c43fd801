//! Declarations: archetypes (fields, abilities, statics), enums, functions made from
//! abilities, `impl` blocks and globs.

use super::*;

impl Interp<'_> {
    pub(super) fn eval_bases(&mut self, bases: &[ast::Expr], ctx: &Ctx) -> R<Vec<Rc<Class>>> {
        let mut out = Vec::new();
        for b in bases {
            match self.eval(b, ctx)? {
                Value::Class(c) => out.push(c),
                other => {
                    let t = self.type_name_of(&other);
                    return Err(self.err(
                        "TypeError",
                        format!("base must be an archetype or class, not '{t}'"),
                    ));
                }
            }
        }
        Ok(out)
    }

    pub(super) fn declare_archetype(
        &mut self,
        a: &ast::Archetype,
        ctx: &Ctx,
        module: &Rc<str>,
    ) -> R<Rc<Class>> {
        let mut bases = self.eval_bases(&a.bases, ctx)?;
        let is_exc = bases.iter().any(|b| b.is_exception());
        let kind = if is_exc && matches!(a.kind, ArchKind::Class | ArchKind::Obj) {
            ClassKind::Arch(ArchKind::Obj)
        } else {
            ClassKind::Arch(a.kind)
        };
        // Fields: inherited first.
        let mut fields: Vec<FieldDef> = Vec::new();
        for b in &bases {
            for f in &b.fields {
                if let Some(pos) = fields.iter().position(|x| x.name == f.name) {
                    fields.remove(pos);
                }
                fields.push(FieldDef {
                    name: f.name.clone(),
                    ty: f.ty.clone(),
                    default: f.default.clone(),
                    postinit: f.postinit,
                    is_static: f.is_static,
                    access: f.access,
                });
            }
        }
        let mut statics: Vec<(Rc<str>, Option<Rc<ast::Expr>>)> = Vec::new();
        for m in &a.members {
            if let Member::Has(h) = m {
                for v in &h.vars {
                    if v.accessors.is_some() {
                        continue;
                    }
                    if h.is_static {
                        statics.push((v.name.name.clone(), v.default.clone().map(Rc::new)));
                        continue;
                    }
                    let def = FieldDef {
                        name: v.name.name.clone(),
                        ty: Some(Rc::new(v.ty.clone())),
                        default: v.default.clone().map(Rc::new),
                        postinit: v.postinit,
                        is_static: false,
                        access: h.access,
                    };
                    if let Some(pos) = fields.iter().position(|x| x.name == def.name) {
                        fields[pos] = def;
                    } else {
                        fields.push(def);
                    }
                }
            }
        }
        let mut field_index = FxHashMap::default();
        for (i, f) in fields.iter().enumerate() {
            field_index.insert(f.name.clone(), i);
        }
        let fingerprint = {
            use std::hash::{Hash, Hasher};
            let mut h = FxHasher::default();
            for f in &fields {
                f.name.hash(&mut h);
            }
            format!("{:016x}", h.finish())
        };
        let mro = ancestors(&bases);
        let class = Rc::new(Class {
            name: a.name.name.clone(),
            kind,
            module: self.shown_module(ctx.file, module),
            bases: std::mem::take(&mut bases),
            mro,
            fields,
            field_index,
            methods: Default::default(),
            abilities: Default::default(),
            statics: Default::default(),
            members: Default::default(),
            access: a.access,
            decorators: a.decorators.iter().map(|d| Rc::new(d.clone())).collect(),
            endpoints: a
                .endpoints
                .as_ref()
                .map(|(s, t)| (Rc::new(s.clone()), Rc::new(t.clone()))),
            id: next_id(),
            scope: std::cell::RefCell::new(Some(ctx.scope.clone())),
            stored: StoredNames::new(module, &a.name.name, &fingerprint),
            span: a.name.span,
            file: ctx.file,
            is_async: a.is_async,
            python_class: a.kind == ArchKind::Class,
            outer: Default::default(),
            locals: a.locals.clone(),
        });
        // Inherited abilities first, in slot order.
        let mut abilities: Vec<Rc<AbilityDef>> = Vec::new();
        for b in &class.bases {
            for ab in b.abilities.borrow().iter() {
                if let Some(n) = &ab.name
                    && let Some(pos) = abilities.iter().position(|x| x.name.as_ref() == Some(n))
                {
                    abilities[pos] = ab.clone();
                    continue;
                }
                abilities.push(ab.clone());
            }
        }
        for m in &a.members {
            match m {
                Member::Ability(ab) => {
                    let f = self.make_function_from_ability(ab, ctx, Some(&class));
                    if ab.kind == ast::AbilityKind::Can || ab.event.is_some() {
                        let ev = ab.event.as_ref();
                        let def = Rc::new(AbilityDef {
                            name: ab.name.as_ref().map(|n| n.name.clone()),
                            trigger: ev.and_then(|e| e.trigger.clone()).map(Rc::new),
                            resolved: Default::default(),
                            is_exit: ev.is_some_and(|e| e.is_exit),
                            func: f.clone(),
                        });
                        if let Some(n) = &def.name
                            && let Some(pos) =
                                abilities.iter().position(|x| x.name.as_ref() == Some(n))
                        {
                            abilities[pos] = def;
                        } else {
                            abilities.push(def);
                        }
                        if let Some(n) = &ab.name {
                            class.add_method(n.name.clone(), f);
                        }
                    } else if let Some(n) = &ab.name {
                        // A method whose decorators are called is kept aside until the
                        // module's decorator pass binds `name = d(f)` on the class.
                        let key = if super::modules::has_called_method_decorators(ab) {
                            Rc::from(decl_later::undecorated_name(&n.name))
                        } else {
                            decl_later::method_key(&ab.decorators, &n.name)
                        };
                        class.add_method(key, f);
                    }
                }
                Member::Archetype(inner) => {
                    let c = self.declare_archetype(inner, ctx, module)?;
                    *c.outer.borrow_mut() = Some(Rc::downgrade(&class));
                    class
                        .statics
                        .borrow_mut()
                        .insert(inner.name.name.clone(), Value::Class(c));
                }
                Member::Enum(e) => {
                    let c = self.declare_enum(e, ctx, module)?;
                    *c.outer.borrow_mut() = Some(Rc::downgrade(&class));
                    class
                        .statics
                        .borrow_mut()
                        .insert(e.name.name.clone(), Value::Class(c));
                }
                Member::Impl(imp) => self.apply_impl(imp, ctx)?,
                Member::Stmt(st) => self.class_body_stmt(&class, st, ctx)?,
                Member::Has(h) => self.declare_properties(&class, h, ctx),
                _ => {}
            }
        }
        *class.abilities.borrow_mut() = abilities;
        for (name, default) in statics {
            let v = match default {
                Some(e) => self.eval(&e, ctx)?,
                None => Value::None,
            };
            class.statics.borrow_mut().insert(name, v);
        }
        if class.arch_kind().is_some() {
            Rc::make_mut(&mut self.classes).insert(class.name.clone(), class.clone());
        }
        Ok(class)
    }

    pub(super) fn declare_enum(
        &mut self,
        e: &ast::EnumDecl,
        ctx: &Ctx,
        module: &Rc<str>,
    ) -> R<Rc<Class>> {
        let bases = self.eval_bases(&e.bases, ctx)?;
        // A typed enum (`enum S: str`) is a subclass of its base (`isinstance(S.A, str)`).
        let mro = ancestors(&bases);
        let class = Rc::new(Class {
            name: e.name.name.clone(),
            kind: ClassKind::Enum,
            module: self.shown_module(ctx.file, module),
            bases,
            mro,
            fields: Vec::new(),
            field_index: Default::default(),
            methods: Default::default(),
            abilities: Default::default(),
            statics: Default::default(),
            members: Default::default(),
            access: e.access,
            decorators: Vec::new(),
            endpoints: None,
            id: next_id(),
            scope: std::cell::RefCell::new(Some(ctx.scope.clone())),
            stored: StoredNames::new(module, &e.name.name, ""),
            span: e.name.span,
            file: ctx.file,
            is_async: false,
            python_class: false,
            outer: Default::default(),
            locals: None,
        });
        let members: Vec<(&ast::Name, Option<&ast::Expr>)> = e
            .members
            .iter()
            .map(|m| (&m.name, m.value.as_ref()))
            .collect();
        self.add_enum_members(&class, &members, ctx)?;
        for x in &e.extra {
            if let Member::Ability(ab) = x {
                let f = self.make_function_from_ability(ab, ctx, Some(&class));
                if let Some(n) = &ab.name {
                    class.add_method(n.name.clone(), f);
                }
            }
        }
        // `with entry { }` inside an enum body runs when the enum is declared, as part
        // of the class body jaclang emits it into: what it binds becomes part of the
        // enum, not a module name: a `def` a method, a class or a `__name` an
        // attribute, any other value a member (after the declared ones), as a Python
        // enum body makes them. The members' plain values are names there.
        for x in &e.extra {
            if let Member::Entry(block) = x
                && !block.is_exit
            {
                let scope = crate::interp::value::Scope::new_ref(Some(ctx.scope.clone()));
                for m in class.members.borrow().iter() {
                    scope_define(&scope, m.name.clone(), m.value.clone());
                }
                let declared: Vec<Rc<str>> = class
                    .members
                    .borrow()
                    .iter()
                    .map(|m| m.name.clone())
                    .collect();
                let body_ctx = Ctx {
                    scope: scope.clone(),
                    ..ctx.clone()
                };
                self.exec_block(&block.body, &body_ctx)?;
                let bound: Vec<(Rc<str>, Value)> = {
                    let s = scope.borrow();
                    s.vars
                        .names()
                        .filter_map(|n| s.vars.get(n).map(|v| (n.clone(), v.clone())))
                        .collect()
                };
                for (name, v) in bound {
                    match v {
                        Value::Func(f) => class.add_method(name, f),
                        // The declared members' names, bound to their values for
                        // the block (a rebinding keeps the member).
                        _ if declared.contains(&name) => {}
                        v @ Value::Class(_) => {
                            class.statics.borrow_mut().insert(name, v);
                        }
                        v if name.starts_with("__") => {
                            class.statics.borrow_mut().insert(name, v);
                        }
                        v => {
                            let member = Rc::new(EnumMember {
                                class: class.clone(),
                                name: name.clone(),
                                value: v,
                            });
                            class.members.borrow_mut().push(member.clone());
                            class
                                .statics
                                .borrow_mut()
                                .insert(name, Value::EnumMember(member));
                        }
                    }
                }
            }
        }
        scope_define(&ctx.scope, e.name.name.clone(), Value::Class(class.clone()));
        Rc::make_mut(&mut self.classes).insert(class.name.clone(), class.clone());
        Ok(class)
    }

    pub(super) fn make_function_from_ability(
        &mut self,
        ab: &ast::Ability,
        ctx: &Ctx,
        owner: Option<&Rc<Class>>,
    ) -> Rc<Function> {
        let params = ab
            .signature
            .as_ref()
            .map(|s| {
                s.params
                    .iter()
                    .map(|p| ParamDef {
                        name: p.name.name.clone(),
                        kind: p.kind,
                        default: p.default.clone().map(Rc::new),
                        ty: p.ty.clone().map(Rc::new),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let params = decl_later::drop_explicit_receiver(ab, owner, params);
        let name: Rc<str> = ab.name.as_ref().map(|n| n.name.clone()).unwrap_or_else(|| {
            Rc::from(if ab.event.as_ref().is_some_and(|e| e.is_exit) {
                "<exit>"
            } else {
                "<entry>"
            })
        });
        let body = match &ab.body {
            Some(b) => super::generator::func_body(
                Rc::from(b.as_slice()),
                ab.is_async && ab.event.is_none(),
            ),
            // An `abst` method called anyway does nothing and returns None (as in
            // jaclang, whose archetypes are not abstract base classes).
            None if ab.is_abstract => FuncBody::Block(Rc::from([])),
            None => FuncBody::Missing,
        };
        Rc::new(Function {
            name,
            params,
            body: std::cell::RefCell::new(body),
            closure: ctx.scope.clone(),
            owner: std::cell::RefCell::new(owner.map(Rc::downgrade)),
            is_static: ab.is_static
                || ab
                    .decorators
                    .iter()
                    .any(|d| decl_later::is_plain_decorator(d, "staticmethod")),
            is_classmethod: ab.is_class_method
                || ab
                    .decorators
                    .iter()
                    .any(|d| decl_later::is_plain_decorator(d, "classmethod")),
            is_lambda: false,
            is_async: ab.is_async,
            captured: None,
            defaults: Default::default(),
            decorators: ab.decorators.iter().map(|d| Rc::new(d.clone())).collect(),
            access: ab.access,
            ret: ab
                .signature
                .as_ref()
                .and_then(|s| s.ret.clone())
                .map(Rc::new),
            file: ctx.file,
            span: ab.span,
            code: Default::default(),
            assigned: Default::default(),
        })
    }

    /// `impl Target.member { body }`: fill in a declared member's body.
    pub(super) fn apply_impl(&mut self, imp: &ast::ImplBlock, ctx: &Ctx) -> R<()> {
        // An `impl` of an `async def` holding `await` is a coroutine body; an ability's
        // (`impl W.a with T entry`) never is.
        let is_ability = matches!(imp.kind, ast::ImplKind::Event(_));
        let body = |f: &Function| {
            super::generator::func_body(Rc::from(imp.body.as_slice()), f.is_async && !is_ability)
        };
        let names: Vec<&str> = imp.target.iter().map(|n| &*n.name).collect();
        let Some((first, rest)) = names.split_first() else {
            return Ok(());
        };
        let target = scope_get(&ctx.scope, first);
        if rest.is_empty() {
            // impl f(x: int) -> int { } : body of a top-level function.
            if let Some(Value::Func(f)) = target {
                *f.body.borrow_mut() = body(&f);
                return Ok(());
            }
            if let Some(Value::Class(c)) = &target
                && c.kind == ClassKind::Enum
            {
                return self.impl_enum_members(c, &imp.body, ctx);
            }
            let span = imp.target.first().map(|n| n.span).unwrap_or(imp.span);
            let _ = span;
            return Err(self.err(
                "NameError",
                format!("impl target '{first}' is not declared"),
            ));
        }
        let mut class = match target {
            Some(Value::Class(c)) => c,
            _ => {
                return Err(self.err(
                    "NameError",
                    format!("impl target '{first}' is not declared"),
                ));
            }
        };
        // `impl Arch.prop.getter { }`: the body of a property's accessor.
        if let [field, kind] = rest
            && let Some(m) = decl_later::accessor_method(field, kind)
            && let Some(f) = class.methods.borrow().get(m.as_str()).cloned()
        {
            *f.body.borrow_mut() = body(&f);
            return Ok(());
        }
        for (i, n) in rest.iter().enumerate() {
            if i + 1 < rest.len() {
                match class.find_static(n) {
                    Some(Value::Class(c)) => class = c,
                    _ => {
                        return Err(self.err(
                            "NameError",
                            format!("impl target '{}' is not declared", names.join(".")),
                        ));
                    }
                }
                continue;
            }
            let f = class.methods.borrow().get(*n).cloned().or_else(|| {
                let kept = decl_later::undecorated_name(n);
                class.methods.borrow().get(kept.as_str()).cloned()
            });
            match f {
                Some(f) => *f.body.borrow_mut() = body(&f),
                None => {
                    // Anonymous or undeclared: declare it as a method now.
                    let ability = ast::Ability {
                        kind: match &imp.kind {
                            ast::ImplKind::Event(_) => ast::AbilityKind::Can,
                            _ => ast::AbilityKind::Def,
                        },
                        decorators: Vec::new(),
                        is_override: false,
                        is_static: false,
                        is_class_method: false,
                        is_async: false,
                        access: None,
                        name: Some(ast::Name {
                            name: Rc::from(*n),
                            span: imp.span,
                        }),
                        signature: match &imp.kind {
                            ast::ImplKind::Signature(s) => s.clone(),
                            _ => None,
                        },
                        event: match &imp.kind {
                            ast::ImplKind::Event(e) => Some(e.clone()),
                            _ => None,
                        },
                        body: Some(imp.body.clone()),
                        is_abstract: false,
                        doc: None,
                        span: imp.span,
                    };
                    let f = self.make_function_from_ability(&ability, ctx, Some(&class));
                    if let Some(ev) = &ability.event {
                        class.abilities.borrow_mut().push(Rc::new(AbilityDef {
                            name: Some(Rc::from(*n)),
                            trigger: ev.trigger.clone().map(Rc::new),
                            resolved: Default::default(),
                            is_exit: ev.is_exit,
                            func: f.clone(),
                        }));
                    }
                    class.add_method(Rc::from(*n), f);
                }
            }
        }
        Ok(())
    }

    /// The `typing.TypeAliasType` a `type Name[T] = value;` binds: its name, value (the
    /// parameters erased), `typing.TypeVar` parameters and module.
    fn type_alias_value(
        &mut self,
        g: &ast::Glob,
        name: &Rc<str>,
        value: Value,
        ctx: &Ctx,
    ) -> Value {
        let params = g
            .type_params
            .iter()
            .map(|p| {
                self.stdlib_instance("typing.TypeVar", vec![Value::Str(p.name.clone().into())])
            })
            .collect();
        let module = scope_get(&ctx.scope, "__name__").unwrap_or_else(|| Value::str("__main__"));
        self.stdlib_instance(
            "typing.TypeAliasType",
            vec![
                Value::Str(name.clone().into()),
                value,
                Value::tuple(params),
                module,
            ],
        )
    }

    pub(super) fn exec_glob(&mut self, g: &ast::Glob, ctx: &Ctx) -> R<()> {
        // `type Pair[T] = tuple[T, T];`: the parameters are erased to `any`, in a scope
        // of the alias's own (Python evaluates an alias lazily, so `T` never leaks).
        // The alias's own name is `any` there too, so a recursive alias (`type Json =
        // int | list[Json];`) evaluates.
        let alias_ctx = if !g.is_alias {
            None
        } else {
            let scope = crate::interp::value::Scope::new_ref(Some(ctx.scope.clone()));
            let any = scope_get(&ctx.scope, "any").unwrap_or(Value::None);
            for p in &g.type_params {
                scope_define(&scope, p.name.clone(), any.clone());
            }
            for v in &g.vars {
                scope_define(&scope, v.name.name.clone(), any.clone());
            }
            Some(Ctx {
                scope,
                ..ctx.clone()
            })
        };
        for v in &g.vars {
            let val = match (&v.value, &alias_ctx) {
                // Python never evaluates an alias's value when it is declared, so a
                // name declared further down (or any other error) is not raised
                // here: the alias is then `any`.
                (Some(e), Some(actx)) => match self.eval(e, actx) {
                    Err(Interrupt::Exc(_)) => scope_get(&ctx.scope, "any").unwrap_or(Value::None),
                    r => r?,
                },
                (Some(e), None) => self.eval(e, ctx)?,
                (None, _) => Value::None,
            };
            let val = if g.is_alias {
                self.type_alias_value(g, &v.name.name, val, ctx)
            } else {
                val
            };
            mark_glob(&ctx.scope, &v.name.name);
            scope_define(&ctx.scope, v.name.name.clone(), val);
        }
        Ok(())
    }
}
