//! Calls: any callable value, user functions (frames, parameter binding, tracebacks)
//! and construction of archetypes, builtin types, exceptions and enums.

use super::*;

impl Interp<'_> {
    /// Call any callable value.
    pub fn call_value(
        &mut self,
        f: &Value,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        match f {
            // An instance method read from its class (`Calc.add(c, 4)`, or the function
            // a method decorator received): the first argument is the receiver.
            Value::Func(func) if func.is_instance_method() && !args.is_empty() => {
                let mut args = args;
                let this = args.remove(0);
                self.call_function(func, Some(this), args, kwargs, None)
            }
            Value::Func(func) => self.call_function(func, None, args, kwargs, None),
            Value::Bound(b) => {
                let (recv, func) = (&b.0, &b.1);
                if func.owner.borrow().is_some() {
                    return self.call_function(func, Some(recv.clone()), args, kwargs, None);
                }
                // A plain function found on the class (what a method decorator
                // returned): the receiver is its first argument, as Python binds it.
                let mut all = Vec::with_capacity(args.len() + 1);
                all.push(recv.clone());
                all.extend(args);
                self.call_function(func, None, all, kwargs, None)
            }
            Value::Builtin(name) if &**name == NOT_IMPLEMENTED => {
                Err(self.err("TypeError", "'NotImplementedType' object is not callable"))
            }
            Value::Builtin(name) => self.call_builtin_fn(name, args, kwargs),
            Value::BuiltinMethod(b) => {
                let (recv, name) = (&b.0, &b.1);
                self.call_method_value(recv, name, args, kwargs)
            }
            Value::Class(c) => self.construct(c, args, kwargs),
            // `root()` is the older spelling of `root`: jaclang 0.16.7 and the newest
            // Jac both still accept it, and it is the root itself.
            Value::Anchor(h)
                if args.is_empty()
                    && kwargs.is_empty()
                    && self.graph.slot(*h).class.kind == ClassKind::Root =>
            {
                Ok(f.clone())
            }
            other => {
                // An object whose class defines `__call__`.
                if dunder::is_object(other)
                    && let Some(f) = self.class_of(other).find_method("__call__")
                {
                    return self.call_function(&f, Some(other.clone()), args, kwargs, None);
                }
                let t = self.type_name_of(other);
                Err(self.err("TypeError", format!("'{t}' object is not callable")))
            }
        }
    }

    /// Call a user function with an optional receiver (`self`) and walk context.
    pub fn call_function(
        &mut self,
        func: &Rc<Function>,
        this: Option<Value>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
        walk_ctx: Option<(Option<Value>, Option<Value>)>,
    ) -> R<Value> {
        if func.is_async && walk_ctx.is_none() && !std::mem::take(&mut self.run_async) {
            return Ok(self.defer_call(func, this, args, kwargs));
        }
        if self.depth >= self.limits.max_depth {
            return Err(self.err("RecursionError", "maximum recursion depth exceeded"));
        }
        self.tick()?;
        let scope = self.frame_scope(&func.closure, func.params.len());
        self.bind_params(func, &scope, args, kwargs)?;
        self.run_frame(func, this, scope, walk_ctx)
    }

    /// `f(a, b)` or `obj.m(a, b)` with positional arguments only, to a function whose
    /// parameters are all plain and exactly as many (not `async`: that call makes a
    /// coroutine): the arguments are evaluated straight
    /// into the new frame, without an argument vector. `None` (nothing evaluated) when the
    /// call does not have that shape.
    pub(super) fn call_plain(
        &mut self,
        func: &Rc<Function>,
        this: Option<Value>,
        args: &[ast::Arg],
        ctx: &Ctx,
    ) -> Option<R<Value>> {
        if func.params.len() != args.len()
            || func.is_classmethod
            || func.is_async
            || !args.iter().all(|a| matches!(a, ast::Arg::Positional(_)))
            || !func.params.iter().all(|p| p.kind == ast::ParamKind::Normal)
        {
            return None;
        }
        let scope = self.frame_scope(&func.closure, args.len());
        for (p, a) in func.params.iter().zip(args) {
            let ast::Arg::Positional(e) = a else {
                continue;
            };
            match self.eval(e, ctx) {
                Ok(v) => {
                    scope.borrow_mut().vars.insert(p.name.clone(), v);
                }
                Err(err) => {
                    self.recycle_frame(scope);
                    return Some(Err(err));
                }
            }
        }
        if self.depth >= self.limits.max_depth {
            self.recycle_frame(scope);
            return Some(Err(
                self.err("RecursionError", "maximum recursion depth exceeded")
            ));
        }
        if let Err(e) = self.tick() {
            self.recycle_frame(scope);
            return Some(Err(e));
        }
        Some(self.run_frame(func, this, scope, None))
    }

    /// Run `func`'s body in `scope`, its frame with the parameters bound.
    fn run_frame(
        &mut self,
        func: &Rc<Function>,
        this: Option<Value>,
        scope: ScopeRef,
        walk_ctx: Option<(Option<Value>, Option<Value>)>,
    ) -> R<Value> {
        let owner = func
            .owner
            .borrow()
            .as_ref()
            .and_then(std::rc::Weak::upgrade);
        let this = if func.is_classmethod {
            self.bind_cls(func, &scope, this);
            None
        } else {
            this
        };
        let (here, visitor) = walk_ctx.unwrap_or((None, None));
        // Lambdas and nested functions see `self`/`here`/`visitor` of where they were made.
        let (this, here, visitor) = match &func.captured {
            Some(c) if this.is_none() => (
                c.0.clone(),
                here.or_else(|| c.1.clone()),
                visitor.or_else(|| c.2.clone()),
            ),
            _ => (this, here, visitor),
        };
        // A function that is not a method but names its first parameter `self` (a
        // decorator's wrapper, `def w(self: any, x: int)`): `self` reads that argument.
        let this = match this {
            None if owner.is_none()
                && func
                    .params
                    .first()
                    .is_some_and(|p| &*p.name == "self" && p.kind == ast::ParamKind::Normal) =>
            {
                scope_get(&scope, "self")
            }
            this => this,
        };
        let ctx = Ctx {
            scope,
            this,
            here,
            visitor,
            class: owner,
            file: func.file,
        };
        let body = match &*func.body.borrow() {
            FuncBody::Block(b) => b.clone(),
            FuncBody::Generator(code) => {
                ctx.scope.borrow_mut().assigned = Some(code.assigned.clone());
                return Ok(self.make_generator(func.name.clone(), code.clone(), ctx));
            }
            FuncBody::Missing => {
                return Err(self.err(
                    "NotImplementedError",
                    format!("'{}' has no body (missing impl)", func.name),
                ));
            }
        };
        self.depth += 1;
        let r = if let Some(code) = self.vm_code(func, &body) {
            self.vm_run(func, code, &ctx).map(Flow::Return)
        } else {
            ctx.scope.borrow_mut().assigned = Some(assigned_names(func, &body));
            if func.is_lambda && body.len() == 1 {
                match &body[0].kind {
                    StmtKind::Expr(e) => self.eval(e, &ctx).map(Flow::Return),
                    _ => self.exec_block(&body, &ctx),
                }
            } else if let Some((last, init)) = body.split_last()
                && let StmtKind::Expr(e) = &last.kind
                && last.span.end == e.span.end
            {
                // A trailing expression without `;` is the function's value.
                match self.exec_block(init, &ctx) {
                    Ok(Flow::Normal) => self.eval(e, &ctx).map(Flow::Return),
                    other => other,
                }
            } else {
                self.exec_block(&body, &ctx)
            }
        };
        self.depth -= 1;
        self.recycle_frame(ctx.scope);
        match r {
            Ok(Flow::Return(v)) => Ok(v),
            Ok(_) => Ok(Value::None),
            Err(Interrupt::Exc(mut e)) => {
                e.leave_frame(func.name.clone(), Some((func.file, func.span)));
                Err(Interrupt::Exc(e))
            }
            Err(other) => Err(other),
        }
    }

    /// A fresh frame scope over `closure`: a recycled one when a finished call left it
    /// unshared (no closure kept it), else a new allocation.
    pub(super) fn frame_scope(&mut self, closure: &ScopeRef, params: usize) -> ScopeRef {
        match self.frame_pool.pop() {
            Some(scope) => {
                scope.borrow_mut().parent = Some(closure.clone());
                scope
            }
            None => Scope::with_capacity(Some(closure.clone()), params + 4),
        }
    }

    /// Return a finished call's frame to the pool if nothing else holds it (a nested
    /// def or lambda made in the frame keeps it alive and it is left alone).
    pub(super) fn recycle_frame(&mut self, scope: ScopeRef) {
        if Rc::strong_count(&scope) != 1
            || Rc::weak_count(&scope) != 0
            || self.frame_pool.len() >= FRAME_POOL
        {
            return;
        }
        {
            let mut s = scope.borrow_mut();
            s.vars.clear();
            s.parent = None;
            s.assigned = None;
        }
        self.frame_pool.push(scope);
    }

    pub(super) fn bind_params(
        &mut self,
        func: &Rc<Function>,
        scope: &ScopeRef,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<()> {
        use ast::ParamKind as K;
        let mut s = scope.borrow_mut();
        // Fast path: every parameter plain and given positionally, exactly once.
        if kwargs.is_empty()
            && args.len() == func.params.len()
            && func.params.iter().all(|p| p.kind == K::Normal)
        {
            for (p, a) in func.params.iter().zip(args) {
                s.vars.insert(p.name.clone(), a);
            }
            return Ok(());
        }
        drop(s);
        self.bind_params_general(func, scope, args, kwargs)
    }

    /// Instantiate a class: archetypes, builtin types and exceptions.
    pub fn construct(
        &mut self,
        c: &Rc<Class>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if self.is_event_class(c) {
            return self.construct_event(c, args, kwargs);
        }
        if stdlib::is_stdlib_class(c) {
            return self.stdlib_construct(c, args, kwargs);
        }
        match c.kind {
            ClassKind::Builtin => builtins::construct_builtin(self, c, args, kwargs),
            ClassKind::Exception => Ok(self.make_exception(c.clone(), args)),
            ClassKind::Enum => {
                let v = args.into_iter().next().unwrap_or(Value::None);
                for m in c.members.borrow().iter() {
                    if self.py_eq(&m.value, &v)? {
                        return Ok(Value::EnumMember(m.clone()));
                    }
                }
                let r = self.repr(&v)?;
                Err(self.err("ValueError", format!("{r} is not a valid {}", c.name)))
            }
            ClassKind::Root => Err(self.err("TypeError", "cannot create another Root")),
            _ if c.is_exception() => self.construct_exception_subclass(c, args, kwargs),
            _ => self.construct_archetype(c, args, kwargs),
        }
    }

    /// An archetype deriving from an exception. Its `args` are the positional arguments
    /// of the call (`BaseException.__new__` sets them before any `init` runs;
    /// `super.init(...)` replaces them). A `class` with no `init` and no `obj` in its
    /// line (whose generated `init` it would inherit) takes `Exception`'s arguments: any
    /// positional ones, no keywords.
    fn construct_exception_subclass(
        &mut self,
        c: &Rc<Class>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let positional = args.clone();
        let exception_init = c.find_method("init").is_none()
            && std::iter::once(&**c)
                .chain(c.mro.iter().map(|b| &**b))
                .filter(|b| matches!(b.kind, ClassKind::Arch(_)))
                .all(|b| b.python_class);
        let v = if exception_init {
            if !kwargs.is_empty() {
                return Err(self.err(
                    "TypeError",
                    format!("{}() takes no keyword arguments", c.name),
                ));
            }
            self.construct_archetype(c, Vec::new(), Vec::new())?
        } else {
            self.construct_archetype(c, args, kwargs)?
        };
        if let Value::Instance(i) = &v
            && i.get_extra("args").is_none()
        {
            i.set_extra(Rc::from("args"), Value::tuple(positional));
        }
        Ok(v)
    }

    pub(super) fn construct_archetype(
        &mut self,
        c: &Rc<Class>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if let Some(init) = c.find_method("init") {
            return self.construct_with_init(c, &init, args, kwargs);
        }
        let n = c.fields.len();
        let mut values: Vec<Option<Value>> = vec![None; n];
        // Positional arguments fill the fields `init` takes, in order; the qualified name
        // is only made for an error message (this runs once per constructed object).
        let init_field = |i: &usize| !c.fields[*i].postinit && !c.fields[*i].is_static;
        let qual = || format!("{}.__init__", c.name);
        let takes = (0..n).filter(init_field).count();
        if args.len() > takes {
            let required = (0..n)
                .filter(init_field)
                .filter(|&i| c.fields[i].default.is_none())
                .count();
            return Err(self.err(
                "TypeError",
                params::init_arity_message(&qual(), required, takes, args.len()),
            ));
        }
        for (slot, a) in (0..n).filter(init_field).zip(args) {
            values[slot] = Some(a);
        }
        for (k, v) in kwargs {
            match c.field_index.get(&k) {
                Some(&i) if !c.fields[i].postinit => {
                    if values[i].is_some() {
                        return Err(self.err(
                            "TypeError",
                            format!("{}() got multiple values for argument '{k}'", qual()),
                        ));
                    }
                    values[i] = Some(v);
                }
                _ => {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "{}.__init__() got an unexpected keyword argument '{}'",
                            c.name, k
                        ),
                    ));
                }
            }
        }
        // Every missing field is named at once, before any default runs, as CPython does.
        let missing: Vec<Rc<str>> = (0..n)
            .filter(|&i| values[i].is_none() && !c.fields[i].postinit)
            .filter(|&i| c.fields[i].default.is_none())
            .map(|i| c.fields[i].name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(self.err("TypeError", params::missing_message(&qual(), &missing)));
        }
        // Defaults run in the class's scope; the context is made for the first one.
        let mut dctx: Option<Ctx> = None;
        let mut fields = Vec::with_capacity(n);
        for (i, v) in values.into_iter().enumerate() {
            let f = &c.fields[i];
            let v = match v {
                Some(v) => v,
                None => match &f.default {
                    Some(d) if !f.postinit => {
                        let ctx = dctx.get_or_insert_with(|| Ctx {
                            scope: c
                                .scope
                                .borrow()
                                .clone()
                                .unwrap_or_else(|| self.builtins.clone()),
                            this: None,
                            here: None,
                            visitor: None,
                            class: Some(c.clone()),
                            file: c.file,
                        });
                        self.eval(d, ctx)?
                    }
                    _ => Value::None,
                },
            };
            fields.push(v);
        }
        let v = match c.arch_kind() {
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
        };
        if let Some(init) = c.find_method("postinit") {
            self.call_function(&init, Some(v.clone()), vec![], vec![], None)?;
        }
        Ok(v)
    }
}

/// The names `body` (the running body of `func`) assigns, cached on the function while
/// that body stays its body.
fn assigned_names(func: &Function, body: &Rc<[ast::Stmt]>) -> Rc<[Rc<str>]> {
    if let Some((b, names)) = &*func.assigned.borrow()
        && Rc::ptr_eq(b, body)
    {
        return names.clone();
    }
    let mut out = Vec::new();
    crate::ast::binds::collect_assigned(body, &mut out);
    let names: Rc<[Rc<str>]> = out.into();
    *func.assigned.borrow_mut() = Some((body.clone(), names.clone()));
    names
}
