//! Statements: control flow, `try`/`match`, walker statements, nested items, and
//! assignment/deletion targets.

use super::*;

/// The longest `__context__` chain `raise` walks looking for a cycle to cut (a chain is
/// as long as the handlers nested when its exceptions were raised).
const MAX_CONTEXT_CHAIN: usize = 10_000;

impl Interp<'_> {
    /// One iteration of a `for`: bind `item` to `target` and run `body`. `Some(flow)`
    /// ends the loop with that flow (a `break` ends it normally).
    fn for_item(
        &mut self,
        target: &ast::Expr,
        item: Value,
        body: &[ast::Stmt],
        ctx: &Ctx,
    ) -> R<Option<Flow>> {
        self.poll()?;
        self.assign(target, item, ctx)?;
        Ok(match self.exec_block(body, ctx)? {
            Flow::Break => Some(Flow::Normal),
            Flow::Continue | Flow::Normal => None,
            other => Some(other),
        })
    }

    pub fn exec_block(&mut self, stmts: &[ast::Stmt], ctx: &Ctx) -> R<Flow> {
        for s in stmts {
            match self.exec_stmt(s, ctx)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    pub(super) fn exec_stmt(&mut self, s: &ast::Stmt, ctx: &Ctx) -> R<Flow> {
        self.tick()?;
        super::at_origin(self.exec_stmt_inner(s, ctx), ctx.file, s.span)
    }

    pub(super) fn exec_stmt_inner(&mut self, s: &ast::Stmt, ctx: &Ctx) -> R<Flow> {
        match &s.kind {
            StmtKind::Empty | StmtKind::Error => Ok(Flow::Normal),
            StmtKind::Expr(e) => {
                self.eval(e, ctx)?;
                Ok(Flow::Normal)
            }
            StmtKind::Assign { targets, ty, value } => {
                let v = self.eval(value, ctx)?;
                if ty.is_some()
                    && targets.len() == 1
                    && let ast::ExprKind::Name(n) = &targets[0].kind
                {
                    scope_define(&ctx.scope, n.clone(), v);
                    return Ok(Flow::Normal);
                }
                for t in targets {
                    self.assign(t, v.clone(), ctx)?;
                }
                Ok(Flow::Normal)
            }
            StmtKind::Declare { target, .. } => {
                if let ast::ExprKind::Name(n) = &target.kind {
                    let _ = n;
                }
                Ok(Flow::Normal)
            }
            StmtKind::AugAssign { target, op, value } => {
                self.aug_assign(target, *op, value, ctx)?;
                Ok(Flow::Normal)
            }
            StmtKind::If {
                cond,
                body,
                elifs,
                orelse,
            } => {
                let c = self.eval(cond, ctx)?;
                if self.truthy(&c)? {
                    return self.exec_block(body, ctx);
                }
                for (c, b) in elifs {
                    let v = self.eval(c, ctx)?;
                    if self.truthy(&v)? {
                        return self.exec_block(b, ctx);
                    }
                }
                if let Some(b) = orelse {
                    return self.exec_block(b, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::While { cond, body, orelse } => {
                loop {
                    self.poll()?;
                    let c = self.eval(cond, ctx)?;
                    if !self.truthy(&c)? {
                        break;
                    }
                    match self.exec_block(body, ctx)? {
                        Flow::Break => return Ok(Flow::Normal),
                        Flow::Continue | Flow::Normal => {}
                        other => return Ok(other),
                    }
                }
                if let Some(b) = orelse {
                    return self.exec_block(b, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::Forever { body } => loop {
                self.poll()?;
                match self.exec_block(body, ctx)? {
                    Flow::Break => return Ok(Flow::Normal),
                    Flow::Continue | Flow::Normal => {}
                    other => return Ok(other),
                }
            },
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                let it = self.eval(iter, ctx)?;
                // Fast path for ranges: no materialisation.
                if let Value::Range(start, stop, step) = it {
                    let mut i = start;
                    while (step > 0 && i < stop) || (step < 0 && i > stop) {
                        if let Some(flow) = self.for_item(target, Value::Int(i), body, ctx)? {
                            return Ok(flow);
                        }
                        match i.checked_add(step) {
                            Some(n) => i = n,
                            None => break,
                        }
                    }
                } else if let Value::Generator(g) = &it {
                    if let Some(flow) = self.exec_for_generator(g, target, body, ctx)? {
                        return Ok(flow);
                    }
                } else if matches!(it, Value::Iter(..) | Value::Lazy(_)) {
                    // An iterator steps in place: what a `break` leaves stays in it
                    // (and a lazy `map`/`zip`/... computes only what is asked).
                    while let Some(item) = self.iter_step(&it)? {
                        if let Some(flow) = self.for_item(target, item, body, ctx)? {
                            return Ok(flow);
                        }
                    }
                } else {
                    let mut items = super::dictview::WatchedItems::new(self, &it)?;
                    while let Some(item) = items.next(self)? {
                        if let Some(flow) = self.for_item(target, item, body, ctx)? {
                            return Ok(flow);
                        }
                    }
                }
                if let Some(b) = orelse {
                    return self.exec_block(b, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::IterFor {
                init,
                cond,
                step,
                body,
                orelse,
            } => {
                self.exec_stmt(init, ctx)?;
                loop {
                    self.poll()?;
                    let c = self.eval(cond, ctx)?;
                    if !self.truthy(&c)? {
                        break;
                    }
                    match self.exec_block(body, ctx)? {
                        Flow::Break => return Ok(Flow::Normal),
                        Flow::Continue | Flow::Normal => {}
                        other => return Ok(other),
                    }
                    self.exec_stmt(step, ctx)?;
                }
                if let Some(b) = orelse {
                    return self.exec_block(b, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => self.exec_try(body, handlers, orelse.as_deref(), finally.as_deref(), ctx),
            StmtKind::With {
                items,
                body,
                is_async,
            } => self.exec_with(items, body, *is_async, ctx),
            StmtKind::Match { subject, cases } => self.exec_match(subject, cases, ctx),
            StmtKind::Switch { subject, cases } => self.exec_switch(subject, cases, ctx),
            StmtKind::Return(v) => {
                let v = match v {
                    Some(e) => self.eval(e, ctx)?,
                    None => Value::None,
                };
                Ok(Flow::Return(v))
            }
            StmtKind::Raise { exc, cause } => {
                let Some(e) = exc else {
                    return match self.handling.last() {
                        Some(v) => Err(Interrupt::Exc(Box::new(PyErr {
                            value: v.clone(),
                            trace: Vec::new(),
                            origin: None,
                        }))),
                        None => Err(self.err("RuntimeError", "No active exception to reraise")),
                    };
                };
                let v = self.eval(e, ctx)?;
                let v = self.exception_from(v)?;
                if let Some(c) = cause {
                    let cv = self.eval(c, ctx)?;
                    if let Value::Instance(i) = &v {
                        i.set_extra(Rc::from("__cause__"), cv);
                    }
                }
                Err(Interrupt::Exc(Box::new(PyErr {
                    value: v,
                    trace: Vec::new(),
                    origin: None,
                })))
            }
            StmtKind::Assert { cond, msg } => {
                let c = self.eval(cond, ctx)?;
                if self.truthy(&c)? {
                    return Ok(Flow::Normal);
                }
                let args = match msg {
                    Some(m) => vec![self.eval(m, ctx)?],
                    None => vec![],
                };
                let class = self
                    .builtin_class("AssertionError")
                    .ok_or_else(|| Interrupt::Limit("AssertionError class missing".into()))?;
                let v = self.make_exception(class, args);
                Err(Interrupt::Exc(Box::new(PyErr {
                    value: v,
                    trace: Vec::new(),
                    origin: None,
                })))
            }
            StmtKind::Delete(target) => {
                self.delete(target, ctx)?;
                Ok(Flow::Normal)
            }
            StmtKind::Break => Ok(Flow::Break),
            StmtKind::Continue => Ok(Flow::Continue),
            StmtKind::Skip => Ok(Flow::Skip),
            StmtKind::Disengage => {
                if let Some(w) = self.walks.last_mut() {
                    w.disengaged = true;
                }
                Ok(Flow::Disengage)
            }
            StmtKind::Visit {
                index,
                target,
                orelse,
            } => {
                let queued = self.exec_visit(index.as_ref(), target, ctx)?;
                if !queued && let Some(b) = orelse {
                    return self.exec_block(b, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::Report(e) => {
                let v = self.eval(e, ctx)?;
                self.report(v)?;
                Ok(Flow::Normal)
            }
            StmtKind::TypedContext { ty, body } => {
                let t = self.eval(ty, ctx)?;
                let subject = if matches!(ctx.this, Some(Value::Instance(ref i)) if i.class.is_walker())
                {
                    ctx.here.clone()
                } else {
                    ctx.visitor.clone().or_else(|| ctx.here.clone())
                };
                let Some(subject) = subject else {
                    return Ok(Flow::Normal);
                };
                if self.isinstance(&subject, &t)? {
                    return self.exec_block(body, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::Item(item) => {
                self.exec_nested_item(item, ctx)?;
                Ok(Flow::Normal)
            }
        }
    }

    pub(super) fn exec_nested_item(&mut self, item: &Item, ctx: &Ctx) -> R<()> {
        match item {
            Item::Ability(ab) => {
                let key = (ctx.file, ab.span.start);
                let f = self.closure_from_ability(key, ab, ctx);
                if let Some(n) = &ab.name {
                    let v = self.apply_decorators(&ab.decorators, Value::Func(f), ctx)?;
                    scope_define(&ctx.scope, n.name.clone(), v);
                }
            }
            Item::Glob(g) => {
                for v in &g.vars {
                    let val = match &v.value {
                        Some(e) => self.eval(e, ctx)?,
                        None => Value::None,
                    };
                    // A glob inside a block binds at module level.
                    let mut s = ctx.scope.clone();
                    loop {
                        let p = s.borrow().parent.clone();
                        match p {
                            Some(p) if !Rc::ptr_eq(&p, &self.builtins) => s = p,
                            _ => break,
                        }
                    }
                    mark_glob(&s, &v.name.name);
                    scope_define(&s, v.name.name.clone(), val);
                }
            }
            Item::Archetype(a) => {
                let module = Rc::from("__main__");
                let c = self.declare_archetype(a, ctx, &module)?;
                self.apply_method_decorators(&c, a, ctx)?;
                let v = self.apply_decorators(&a.decorators, Value::Class(c), ctx)?;
                scope_define(&ctx.scope, a.name.name.clone(), v);
            }
            Item::Enum(e) => {
                let module = Rc::from("__main__");
                self.declare_enum(e, ctx, &module)?;
            }
            Item::Import(imp) => {
                let path = self
                    .files
                    .get(ctx.file as usize)
                    .map(|f| PathBuf::from(&f.name))
                    .unwrap_or_default();
                self.exec_import(imp, ctx, &path)?;
            }
            Item::Impl(imp) => self.apply_impl(imp, ctx)?,
            Item::Entry(e) => {
                self.exec_block(&e.body, ctx)?;
            }
            Item::Test(_) => {}
        }
        Ok(())
    }

    pub(super) fn closure_from_ability(
        &mut self,
        key: (u32, u32),
        ab: &ast::Ability,
        ctx: &Ctx,
    ) -> Rc<Function> {
        let cached = self.fn_cache.borrow().get(&key).cloned();
        let t = match cached {
            Some(t) => t.clone(),
            None => {
                let t = Rc::new(FnTemplate {
                    name: ab
                        .name
                        .as_ref()
                        .map(|n| n.name.clone())
                        .unwrap_or_else(|| Rc::from("<fn>")),
                    params: ab
                        .signature
                        .as_ref()
                        .map(|s| {
                            s.params
                                .iter()
                                .map(|p| {
                                    (
                                        p.name.name.clone(),
                                        p.kind,
                                        p.default.clone().map(Rc::new),
                                        p.ty.clone().map(Rc::new),
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                    body: Rc::from(ab.body.clone().unwrap_or_default().as_slice()),
                    generator: ab.body.as_deref().and_then(|b| {
                        if ab.is_async && ab.event.is_none() {
                            super::generator::compile_coroutine(b)
                        } else {
                            super::generator::compile_if_generator(b)
                        }
                    }),
                    is_async: ab.is_async,
                    ret: ab
                        .signature
                        .as_ref()
                        .and_then(|s| s.ret.clone())
                        .map(Rc::new),
                    span: ab.span,
                });
                self.fn_cache.borrow_mut().insert(key, t.clone());
                t
            }
        };
        self.function_from_template(&t, ctx, false)
    }

    pub(super) fn function_from_template(
        &self,
        t: &FnTemplate,
        ctx: &Ctx,
        is_lambda: bool,
    ) -> Rc<Function> {
        Rc::new(Function {
            name: t.name.clone(),
            params: t
                .params
                .iter()
                .map(|(n, k, d, ty)| ParamDef {
                    name: n.clone(),
                    kind: *k,
                    default: d.clone(),
                    ty: ty.clone(),
                })
                .collect(),
            body: std::cell::RefCell::new(match &t.generator {
                Some(code) if !is_lambda => FuncBody::Generator(code.clone()),
                _ => FuncBody::Block(t.body.clone()),
            }),
            closure: ctx.scope.clone(),
            owner: std::cell::RefCell::new(ctx.class.as_ref().map(Rc::downgrade)),
            is_static: false,
            is_classmethod: false,
            is_lambda,
            is_async: t.is_async,
            captured: Some((ctx.this.clone(), ctx.here.clone(), ctx.visitor.clone())),
            defaults: Default::default(),
            decorators: Vec::new(),
            access: None,
            ret: t.ret.clone(),
            file: ctx.file,
            span: t.span,
            code: Default::default(),
            assigned: Default::default(),
        })
    }

    /// The function value of a lambda expression.
    pub(crate) fn make_lambda(
        &mut self,
        e: &ast::Expr,
        params: &[ast::Param],
        ret: Option<&ast::Expr>,
        body: &[ast::Stmt],
        ctx: &Ctx,
    ) -> Value {
        let key = (ctx.file, e.span.start);
        let cached = self.fn_cache.borrow().get(&key).cloned();
        let t = match cached {
            Some(t) => t.clone(),
            None => {
                let t = Rc::new(FnTemplate {
                    name: Rc::from("<lambda>"),
                    params: params
                        .iter()
                        .map(|p| {
                            (
                                p.name.name.clone(),
                                p.kind,
                                p.default.clone().map(Rc::new),
                                p.ty.clone().map(Rc::new),
                            )
                        })
                        .collect(),
                    body: Rc::from(body),
                    generator: None,
                    is_async: false,
                    ret: ret.cloned().map(Rc::new),
                    span: e.span,
                });
                self.fn_cache.borrow_mut().insert(key, t.clone());
                t
            }
        };
        // Lambdas see `self`/`here` of their defining frame through a closure scope.
        Value::Func(self.function_from_template(&t, ctx, true))
    }

    pub(super) fn exec_try(
        &mut self,
        body: &[ast::Stmt],
        handlers: &[ast::ExceptHandler],
        orelse: Option<&[ast::Stmt]>,
        finally: Option<&[ast::Stmt]>,
        ctx: &Ctx,
    ) -> R<Flow> {
        let result = self.exec_block(body, ctx);
        let result = match result {
            Err(Interrupt::Exc(err)) => {
                let mut handled = None;
                for h in handlers {
                    let matches = match &h.ty {
                        None => true,
                        Some(t) => {
                            let tv = self.eval(t, ctx)?;
                            self.exc_matches(&err.value, &tv)?
                        }
                    };
                    if matches {
                        self.set_traceback(&err);
                        if let Some(n) = &h.name {
                            scope_set(&ctx.scope, &n.name, err.value.clone());
                        }
                        self.handling.push(err.value.clone());
                        let r = self.exec_block(&h.body, ctx);
                        self.handling.pop();
                        if let Some(n) = &h.name {
                            unbind_handler_name(ctx, &n.name);
                        }
                        handled = Some(r);
                        break;
                    }
                }
                match handled {
                    Some(r) => r,
                    None => Err(Interrupt::Exc(err)),
                }
            }
            Ok(Flow::Normal) => match orelse {
                Some(b) => self.exec_block(b, ctx),
                None => Ok(Flow::Normal),
            },
            other => other,
        };
        if let Some(f) = finally {
            // An exception passing through is being handled while `finally` runs (an
            // error raised there gets it as `__context__`; a bare `raise` re-raises it).
            let pending = match &result {
                Err(Interrupt::Exc(err)) => Some(err.value.clone()),
                _ => None,
            };
            let pushed = pending.is_some();
            if let Some(p) = pending {
                self.handling.push(p);
            }
            let r = self.exec_block(f, ctx);
            if pushed {
                self.handling.pop();
            }
            match r? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        result
    }

    /// `with m1 as t1, m2 { body }`, as CPython runs it: each manager's `__enter__` result
    /// bound to its target, the rest nested inside; on the way out `__exit__` gets the
    /// exception's type, value and traceback (or three Nones), and a true result
    /// swallows the exception. A `return`, `break` or `continue` leaves through
    /// `__exit__(None, None, None)` too. Only an exception is offered to `__exit__`: a
    /// resource limit is not one, so it passes through untouched.
    pub(super) fn exec_with(
        &mut self,
        items: &[ast::WithItem],
        body: &[ast::Stmt],
        is_async: bool,
        ctx: &Ctx,
    ) -> R<Flow> {
        let Some((item, rest)) = items.split_first() else {
            return self.exec_block(body, ctx);
        };
        let manager = self.eval(&item.manager, ctx)?;
        let class = self.class_of(&manager);
        let (enter, exit, what) = if is_async {
            ("__aenter__", "__aexit__", "asynchronous context manager")
        } else {
            ("__enter__", "__exit__", "context manager")
        };
        if class.find_method(enter).is_none() || class.find_method(exit).is_none() {
            let t = self.type_name_of(&manager);
            return Err(self.err(
                "TypeError",
                format!("'{t}' object does not support the {what} protocol"),
            ));
        }
        let entered = match self.call_dunder(&manager, enter, Vec::new()) {
            Some(r) => self.with_await(r?, is_async)?,
            None => Value::None,
        };
        // Binding the target is inside the managed region, as in CPython: a failed
        // unpacking reaches `__exit__` too.
        let result = match &item.target {
            Some(t) => self
                .assign(t, entered, ctx)
                .and_then(|()| self.exec_with(rest, body, is_async, ctx)),
            None => self.exec_with(rest, body, is_async, ctx),
        };
        match result {
            Err(Interrupt::Exc(err)) => {
                self.set_traceback(&err);
                let ty = Value::Class(self.class_of(&err.value));
                let tb = match &err.value {
                    Value::Instance(i) => i.get_extra("__traceback__").unwrap_or(Value::None),
                    _ => Value::None,
                };
                let args = vec![ty, err.value.clone(), tb];
                let swallow = match self.call_dunder(&manager, exit, args) {
                    Some(r) => {
                        let r = self.with_await(r?, is_async)?;
                        self.truthy(&r)?
                    }
                    None => false,
                };
                if swallow {
                    Ok(Flow::Normal)
                } else {
                    Err(Interrupt::Exc(err))
                }
            }
            Err(other) => Err(other),
            Ok(flow) => {
                if let Some(r) =
                    self.call_dunder(&manager, exit, vec![Value::None, Value::None, Value::None])
                {
                    self.with_await(r?, is_async)?;
                }
                Ok(flow)
            }
        }
    }

    /// The result of `__aenter__`/`__aexit__` awaited in an `async with` (svc runs a
    /// coroutine when it is awaited); a plain `with` takes the result as it is.
    fn with_await(&mut self, v: Value, is_async: bool) -> R<Value> {
        if is_async { self.await_value(v) } else { Ok(v) }
    }

    pub(super) fn exc_matches(&mut self, exc: &Value, ty: &Value) -> R<bool> {
        match ty {
            Value::Tuple(items) => {
                for t in items.iter() {
                    if self.exc_matches(exc, t)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Value::Class(c) => Ok(self.class_of(exc).is_sub(c)),
            _ => Err(self.err(
                "TypeError",
                "catching classes that do not inherit from BaseException is not allowed",
            )),
        }
    }

    /// `raise X` accepts a class (instantiated with no args) or an instance.
    /// Record on a caught exception its `__traceback__`: one traceback object per frame
    /// from the catching one (the line it was running) down to where it was raised, as
    /// CPython's chain stands at the `except`.
    pub(super) fn set_traceback(&mut self, err: &super::PyErr) {
        let Value::Instance(inst) = &err.value else {
            return;
        };
        let Some(class) = self.builtin_class("traceback") else {
            return;
        };
        // Innermost last: the catching frame, then the frames it called.
        let mut frames: Vec<(u32, crate::span::Span)> =
            err.trace.iter().map(|f| (f.file, f.span)).collect();
        if let Some(o) = err.origin {
            frames.push(o);
        }
        let mut next = Value::None;
        for (file, span) in frames {
            let line = self
                .files
                .get(file as usize)
                .map_or(0, |f| f.line_col(span.start).0);
            let tb = Rc::new(Instance {
                class: class.clone(),
                fields: Default::default(),
                extra: Default::default(),
                id: super::value::next_id(),
                user_hash: Default::default(),
            });
            tb.set_extra(
                Rc::from("tb_lineno"),
                Value::Int(i64::try_from(line).unwrap_or(0)),
            );
            tb.set_extra(Rc::from("tb_next"), next);
            next = Value::Instance(tb);
        }
        inst.set_extra(Rc::from("__traceback__"), next);
    }

    /// The exception `raise v` raises (a class is instantiated), its `__context__` set to
    /// the exception being handled, as CPython chains them implicitly.
    pub(super) fn exception_from(&mut self, v: Value) -> R<Value> {
        let v = match &v {
            Value::Class(c) if c.is_exception() => self.call_value(&v, vec![], vec![])?,
            Value::Instance(i) if i.class.is_exception() => v,
            _ => return Err(self.err("TypeError", "exceptions must derive from BaseException")),
        };
        if let Value::Instance(new) = &v {
            self.chain_context(new);
        }
        Ok(v)
    }

    /// An exception raised while another is handled (in an `except` body, or a
    /// `finally` an exception passes through) gets it as `__context__`, as CPython
    /// does at every raise: the `raise` statement and the runtime's own errors alike.
    pub(super) fn chain_context(&self, new: &Rc<Instance>) {
        let Some(Value::Instance(ctx)) = self.handling.last() else {
            return;
        };
        if Rc::ptr_eq(new, ctx) {
            return;
        }
        let ctx = ctx.clone();
        // CPython cuts a chain that would lead back to the new exception, so no
        // cycle of contexts is made (nor leaked: they are reference counted).
        let mut cur = ctx.clone();
        for _ in 0..MAX_CONTEXT_CHAIN {
            let Some(Value::Instance(next)) = cur.get_extra("__context__") else {
                break;
            };
            if Rc::ptr_eq(&next, new) {
                cur.set_extra(Rc::from("__context__"), Value::None);
                break;
            }
            cur = next;
        }
        new.set_extra(Rc::from("__context__"), Value::Instance(ctx));
    }

    pub(super) fn exec_match(
        &mut self,
        subject: &ast::Expr,
        cases: &[ast::MatchCase],
        ctx: &Ctx,
    ) -> R<Flow> {
        let v = self.eval(subject, ctx)?;
        for c in cases {
            if self.match_pattern(&c.pattern, &v, ctx)? {
                if let Some(g) = &c.guard {
                    let gv = self.eval(g, ctx)?;
                    if !self.truthy(&gv)? {
                        continue;
                    }
                }
                return self.exec_block(&c.body, ctx);
            }
        }
        Ok(Flow::Normal)
    }

    // -----------------------------------------------------------------------------------
    // Assignment and deletion
    // -----------------------------------------------------------------------------------

    pub(crate) fn assign(&mut self, target: &ast::Expr, v: Value, ctx: &Ctx) -> R<()> {
        use ast::ExprKind as E;
        match &target.kind {
            E::Name(n) => {
                scope_set(&ctx.scope, n, v);
                Ok(())
            }
            E::Attr { obj, name, .. } => {
                let o = self.eval(obj, ctx)?;
                self.set_attr(&o, &name.name, v)
            }
            E::Index { obj, index, .. } => {
                let o = self.eval(obj, ctx)?;
                if let E::Slice { lower, upper, step } = &index.kind {
                    let lo = self.opt_int(lower.as_deref(), ctx)?;
                    let hi = self.opt_int(upper.as_deref(), ctx)?;
                    let st = self.opt_int(step.as_deref(), ctx)?;
                    return self.set_slice(&o, lo, hi, st, v);
                }
                let i = self.eval(index, ctx)?;
                self.set_item(&o, i, v)
            }
            E::Tuple(items) | E::List(items) => {
                let star = items.iter().position(|t| matches!(t.kind, E::Starred(_)));
                // A tuple of the right size binds from its items without a copy.
                if star.is_none()
                    && let Value::Tuple(t) = &v
                    && t.len() == items.len()
                {
                    for (target, x) in items.iter().zip(t.iter()) {
                        self.assign(target, x.clone(), ctx)?;
                    }
                    return Ok(());
                }
                let vals = self.iterate(&v)?;
                match star {
                    None => {
                        if vals.len() != items.len() {
                            return Err(if vals.len() > items.len() {
                                self.err(
                                    "ValueError",
                                    format!("too many values to unpack (expected {})", items.len()),
                                )
                            } else {
                                self.err(
                                    "ValueError",
                                    format!(
                                        "not enough values to unpack (expected {}, got {})",
                                        items.len(),
                                        vals.len()
                                    ),
                                )
                            });
                        }
                        for (t, x) in items.iter().zip(vals) {
                            self.assign(t, x, ctx)?;
                        }
                    }
                    Some(si) => {
                        let after = items.len() - si - 1;
                        if vals.len() < items.len() - 1 {
                            return Err(self.err(
                                "ValueError",
                                format!(
                                    "not enough values to unpack (expected at least {}, got {})",
                                    items.len() - 1,
                                    vals.len()
                                ),
                            ));
                        }
                        let mut vals = vals;
                        let tail = vals.split_off(vals.len() - after);
                        let mid = vals.split_off(si);
                        for (t, x) in items[..si].iter().zip(vals) {
                            self.assign(t, x, ctx)?;
                        }
                        if let E::Starred(inner) = &items[si].kind {
                            self.assign(inner, Value::list(mid), ctx)?;
                        }
                        for (t, x) in items[si + 1..].iter().zip(tail) {
                            self.assign(t, x, ctx)?;
                        }
                    }
                }
                Ok(())
            }
            E::Starred(inner) => self.assign(inner, v, ctx),
            E::Special(
                sp @ (ast::SpecialRef::Init | ast::SpecialRef::PostInit | ast::SpecialRef::Props),
            ) => {
                scope_set(&ctx.scope, &Rc::from(expr::special_name(*sp)), v);
                Ok(())
            }
            _ => Err(self.err("SyntaxError", "cannot assign to expression")),
        }
    }

    pub(super) fn opt_int(&mut self, e: Option<&ast::Expr>, ctx: &Ctx) -> R<Option<i64>> {
        match e {
            None => Ok(None),
            Some(e) => match self.eval(e, ctx)? {
                Value::None => Ok(None),
                Value::Int(i) => Ok(Some(i)),
                Value::Bool(b) => Ok(Some(i64::from(b))),
                _ => Err(self.err(
                    "TypeError",
                    "slice indices must be integers or None or have an __index__ method",
                )),
            },
        }
    }

    pub(super) fn aug_assign(
        &mut self,
        target: &ast::Expr,
        op: ast::BinOp,
        value: &ast::Expr,
        ctx: &Ctx,
    ) -> R<()> {
        use ast::ExprKind as E;
        match &target.kind {
            E::Name(n) => {
                let cur = self.lookup(n, ctx)?;
                let rhs = self.eval(value, ctx)?;
                if self.bytearray_inplace(op, &cur, &rhs)? {
                    return Ok(());
                }
                // In-place list extension keeps identity (xs += [1]).
                if op == ast::BinOp::Add
                    && let Value::List(l) = &cur
                {
                    let items = self.iterate(&rhs)?;
                    self.check_growth(l.borrow().len(), items.len())?;
                    l.borrow_mut().extend(items);
                    return Ok(());
                }
                // `s += t` grows the bound string in place when it is the only reference.
                let cur = match (&cur, &rhs) {
                    (Value::Str(s), Value::Str(t)) if op == ast::BinOp::Add => {
                        self.check_str_len(s.len().saturating_add(t.len()))?;
                        match scope_append_str(&ctx.scope, n, cur, t) {
                            Ok(()) => return Ok(()),
                            Err(cur) => cur,
                        }
                    }
                    _ => cur,
                };
                let nv = self.binary_op(op, &cur, &rhs)?;
                scope_set(&ctx.scope, n, nv);
                Ok(())
            }
            E::Attr { obj, name, .. } => {
                let o = self.eval(obj, ctx)?;
                let cur = self.get_attr(&o, &name.name)?;
                let rhs = self.eval(value, ctx)?;
                if self.bytearray_inplace(op, &cur, &rhs)? {
                    return self.set_attr(&o, &name.name, cur);
                }
                if op == ast::BinOp::Add
                    && let Value::List(l) = &cur
                {
                    let items = self.iterate(&rhs)?;
                    self.check_growth(l.borrow().len(), items.len())?;
                    l.borrow_mut().extend(items);
                    return self.set_attr(&o, &name.name, cur.clone());
                }
                let nv = self.binary_op(op, &cur, &rhs)?;
                self.set_attr(&o, &name.name, nv)
            }
            E::Index { obj, index, .. } => {
                let o = self.eval(obj, ctx)?;
                let i = self.eval(index, ctx)?;
                let cur = self.get_item(&o, &i)?;
                let rhs = self.eval(value, ctx)?;
                if self.bytearray_inplace(op, &cur, &rhs)? {
                    return self.set_item(&o, i, cur);
                }
                let nv = self.binary_op(op, &cur, &rhs)?;
                self.set_item(&o, i, nv)
            }
            _ => Err(self.err("SyntaxError", "illegal expression for augmented assignment")),
        }
    }

    pub(super) fn delete(&mut self, target: &ast::Expr, ctx: &Ctx) -> R<()> {
        use ast::ExprKind as E;
        match &target.kind {
            E::Name(n) => {
                // `del node_var` deletes the node when it holds one.
                if let Some(v @ Value::Anchor(_)) = scope_get(&ctx.scope, n) {
                    return self.destroy(&v);
                }
                if !scope_remove(&ctx.scope, n) {
                    return Err(self.err("NameError", format!("name '{n}' is not defined")));
                }
                Ok(())
            }
            E::Index { obj, index, .. } => {
                let o = self.eval(obj, ctx)?;
                if let E::Slice { lower, upper, step } = &index.kind {
                    let lo = self.opt_int(lower.as_deref(), ctx)?;
                    let hi = self.opt_int(upper.as_deref(), ctx)?;
                    let st = self.opt_int(step.as_deref(), ctx)?;
                    return self.del_slice(&o, lo, hi, st);
                }
                let i = self.eval(index, ctx)?;
                self.del_item(&o, &i)
            }
            E::List(items) | E::Tuple(items) => {
                for t in items {
                    self.delete(t, ctx)?;
                }
                Ok(())
            }
            E::Attr { obj, name, .. } => {
                let o = self.eval(obj, ctx)?;
                self.del_attr(&o, &name.name)
            }
            _ => {
                let v = self.eval(target, ctx)?;
                self.destroy(&v)
            }
        }
    }
}

/// The end of an `except ... as name` handler, however it ends, unbinds `name` as
/// CPython does (a later read is a NameError, or UnboundLocalError in a def). Only a
/// binding the handler made in this scope goes; one it rebound in an enclosing
/// function or a `glob` (svc's scoping rule) stays.
pub(super) fn unbind_handler_name(ctx: &Ctx, name: &str) {
    ctx.scope.borrow_mut().vars.remove(name);
}
