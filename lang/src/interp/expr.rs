//! Expression evaluation: names, literals, calls, comprehensions, f-strings and the
//! object-spatial expressions (edge references, connect, spawn, filters).

use super::dunder;
use super::value::*;
use super::{Ctx, Interp, Interrupt, R};
use crate::ast::{self, Arg, EdgeDir, ExprKind as E};
use std::rc::Rc;

impl Interp<'_> {
    pub(crate) fn lookup(&mut self, name: &Rc<str>, ctx: &Ctx) -> R<Value> {
        let parent = {
            let s = ctx.scope.borrow();
            if let Some(v) = s.vars.get(name) {
                return Ok(v.clone());
            }
            // A name the running def assigns (`Scope::assigned`), not bound yet: only
            // where an assignment would rebind it, else an UnboundLocalError.
            if let Some(a) = &s.assigned
                && a.iter().any(|n| n == name)
            {
                let parent = s.parent.clone();
                drop(s);
                return match parent.and_then(|p| scope_get_enclosing(&p, name)) {
                    Some(v) => Ok(v),
                    None => Err(self.err(
                        "UnboundLocalError",
                        format!(
                            "cannot access local variable '{name}' where it is not associated with a value"
                        ),
                    )),
                };
            }
            s.parent.clone()
        };
        match parent.and_then(|p| scope_get(&p, name)) {
            Some(v) => Ok(v),
            None => self
                .self_type(name, ctx.this.as_ref(), ctx.class.as_ref())
                .ok_or_else(|| self.err("NameError", format!("name '{name}' is not defined"))),
        }
    }

    /// `Self` where no binding has that name (both cores ask on a miss only): the
    /// enclosing type, as jaclang runs it: the receiver's class in an instance method
    /// (`Self(...)` in a method inherited by `Dog` builds a `Dog`), the class itself in a
    /// class method, and the declaring class in a static method.
    pub(crate) fn self_type(
        &self,
        name: &str,
        this: Option<&Value>,
        owner: Option<&Rc<Class>>,
    ) -> Option<Value> {
        if name != "Self" {
            return None;
        }
        match this {
            Some(Value::Class(c)) => Some(Value::Class(c.clone())),
            Some(v @ (Value::Instance(_) | Value::Anchor(_))) => {
                Some(Value::Class(self.class_of(v)))
            }
            _ => owner.map(|c| Value::Class(c.clone())),
        }
    }

    /// Evaluate an expression; an exception raised here records this expression as its
    /// origin unless an inner expression already did.
    #[inline]
    pub fn eval(&mut self, e: &ast::Expr, ctx: &Ctx) -> R<Value> {
        if self.replay.is_some() {
            return self.eval_replayed(e, ctx);
        }
        super::at_origin(self.eval_inner(e, ctx), ctx.file, e.span)
    }

    /// [`Self::eval`] while a generator runs a statement with nested `yield`s
    /// (`generator.rs`, `Replay`): kept out of line, off the hot path.
    #[cold]
    #[inline(never)]
    fn eval_replayed(&mut self, e: &ast::Expr, ctx: &Ctx) -> R<Value> {
        super::at_origin(self.eval_replay(e, ctx), ctx.file, e.span)
    }

    pub(crate) fn eval_inner(&mut self, e: &ast::Expr, ctx: &Ctx) -> R<Value> {
        match &e.kind {
            E::None => Ok(Value::None),
            E::Bool(b) => Ok(Value::Bool(*b)),
            E::Int(i) => Ok(Value::Int(*i)),
            E::BigInt(digits) => match digits.parse::<num_bigint::BigInt>() {
                Ok(b) => Ok(Value::from_bigint(b)),
                Err(_) => Err(self.err("ValueError", format!("invalid integer literal {digits}"))),
            },
            E::Float(f) => Ok(Value::Float(*f)),
            E::Str(s) => Ok(Value::Str(s.clone().into())),
            E::Bytes(b) => Ok(Value::Bytes(b.clone())),
            E::FString(parts) => {
                let s = self.eval_fstring(parts, ctx)?;
                Ok(Value::Str(PyStr::from(s)))
            }
            E::Ellipsis => Ok(Value::None),
            E::Name(n) => self.lookup(n, ctx),
            E::Special(sp) => self.eval_special(*sp, ctx),
            E::List(items) => Ok(Value::list(self.eval_items(items, ctx)?)),
            E::Tuple(items) => Ok(Value::tuple(self.eval_items(items, ctx)?)),
            E::Set(items) => {
                let mut vals = self.eval_items(items, ctx)?;
                if items.len() > 2 && items.iter().all(is_number_literal) {
                    marshal_order(&mut vals);
                }
                let mut set = Set::default();
                for v in vals {
                    let k = self.new_set_key(&set, &v)?;
                    set.insert(k);
                }
                if items.len() > 2 && items.iter().all(is_number_literal) {
                    super::ops::order_const_display(&mut set);
                }
                Ok(Value::Set(Rc::new(std::cell::RefCell::new(set))))
            }
            E::Dict(items) => {
                let mut d = Dict::default();
                for it in items {
                    match it {
                        ast::DictItem::Pair(k, v) => {
                            let k = self.eval(k, ctx)?;
                            let v = self.eval(v, ctx)?;
                            let k = self.new_dict_key(&d, &k)?;
                            d.insert(k, v);
                        }
                        ast::DictItem::Spread(x) => {
                            let v = self.eval(x, ctx)?;
                            match &v {
                                Value::Dict(src) => {
                                    for (k, v) in src.borrow().iter() {
                                        d.insert(k.clone(), v.clone());
                                    }
                                }
                                other => {
                                    let t = self.type_name_of(other);
                                    return Err(self.err(
                                        "TypeError",
                                        format!("'{t}' object is not a mapping"),
                                    ));
                                }
                            }
                        }
                    }
                }
                Ok(Value::dict(d))
            }
            E::GenExp { elt, gens } => self.gen_expression(e, elt, gens, ctx),
            E::ListComp { elt, gens } => {
                let mut out = Vec::new();
                let scope = Scope::new_comprehension(ctx.scope.clone());
                let cctx = Ctx {
                    scope,
                    ..ctx.clone()
                };
                self.comprehend(gens, &cctx, &mut |it, c| {
                    let v = it.eval(elt, c)?;
                    it.check_growth(out.len(), 1)?;
                    out.push(v);
                    Ok(())
                })?;
                Ok(Value::list(out))
            }
            E::SetComp { elt, gens } => {
                let mut out = Set::default();
                let scope = Scope::new_comprehension(ctx.scope.clone());
                let cctx = Ctx {
                    scope,
                    ..ctx.clone()
                };
                self.comprehend(gens, &cctx, &mut |it, c| {
                    let v = it.eval(elt, c)?;
                    let k = it.new_set_key(&out, &v)?;
                    if out.len() >= it.max_collection_items() && !out.contains(&k) {
                        it.check_growth(out.len(), 1)?;
                    }
                    out.insert(k);
                    Ok(())
                })?;
                Ok(Value::Set(Rc::new(std::cell::RefCell::new(out))))
            }
            E::DictComp { key, value, gens } => {
                let mut out = Dict::default();
                let scope = Scope::new_comprehension(ctx.scope.clone());
                let cctx = Ctx {
                    scope,
                    ..ctx.clone()
                };
                self.comprehend(gens, &cctx, &mut |it, c| {
                    let k = it.eval(key, c)?;
                    let v = it.eval(value, c)?;
                    let k = it.new_dict_key(&out, &k)?;
                    if out.len() >= it.max_collection_items() && !out.contains_key(&k) {
                        it.check_growth(out.len(), 1)?;
                    }
                    out.insert(k, v);
                    Ok(())
                })?;
                Ok(Value::dict(out))
            }
            E::Starred(inner) => self.eval(inner, ctx),
            E::Attr {
                obj,
                name,
                null_safe,
            } => {
                let o = self.eval(obj, ctx)?;
                if *null_safe {
                    return self.null_safe_attr(&o, &name.name);
                }
                self.get_attr(&o, &name.name)
            }
            E::Index {
                obj,
                index,
                null_safe,
            } => {
                let o = self.eval(obj, ctx)?;
                if *null_safe && o.is_none() {
                    return Ok(Value::None);
                }
                let r = if let E::Slice { lower, upper, step } = &index.kind {
                    let lo = self.opt_slice_bound(lower.as_deref(), ctx)?;
                    let hi = self.opt_slice_bound(upper.as_deref(), ctx)?;
                    let st = self.opt_slice_bound(step.as_deref(), ctx)?;
                    self.get_slice(&o, lo, hi, st)
                } else {
                    let i = self.eval(index, ctx)?;
                    self.get_item(&o, &i)
                };
                if *null_safe {
                    // jaclang's `safe_subscript`: a missing key or index, or a value
                    // that cannot be indexed so, reads as None.
                    return self.none_on(r, &["KeyError", "IndexError", "TypeError"]);
                }
                r
            }
            E::Slice { .. } => Err(self.err("SyntaxError", "slice outside of an index")),
            E::Call { func, args } => self.eval_call(func, args, ctx),
            E::Unary { op, operand } => {
                let v = self.eval(operand, ctx)?;
                self.unary_op(*op, &v)
            }
            E::Binary { op, left, right } => {
                let a = self.eval(left, ctx)?;
                let b = self.eval(right, ctx)?;
                self.binary_op(*op, &a, &b)
            }
            E::BoolOp { op, left, right } => {
                let a = self.eval(left, ctx)?;
                let t = self.truthy(&a)?;
                match op {
                    ast::BoolOp::And if !t => Ok(a),
                    ast::BoolOp::Or if t => Ok(a),
                    _ => self.eval(right, ctx),
                }
            }
            E::Compare { left, ops } => {
                let mut a = self.eval(left, ctx)?;
                for (op, re) in ops {
                    let b = self.eval(re, ctx)?;
                    if !self.compare(*op, &a, &b)? {
                        return Ok(Value::Bool(false));
                    }
                    a = b;
                }
                Ok(Value::Bool(true))
            }
            E::Ternary { cond, then, orelse } => {
                let c = self.eval(cond, ctx)?;
                if self.truthy(&c)? {
                    self.eval(then, ctx)
                } else {
                    self.eval(orelse, ctx)
                }
            }
            E::Walrus { name, value } => {
                let v = self.eval(value, ctx)?;
                scope_set(&walrus_scope(&ctx.scope), &name.name, v.clone());
                Ok(v)
            }
            E::Lambda { params, ret, body } => {
                Ok(self.make_lambda(e, params, ret.as_deref(), body, ctx))
            }
            E::Cast { expr, .. } => self.eval(expr, ctx),
            E::Ref(x) => {
                let v = self.eval(x, ctx)?;
                match v {
                    Value::Instance(_) | Value::Anchor(_) => Ok(v),
                    Value::Str(_) => self.call_osp_builtin("jobj", vec![v], Vec::new()),
                    other => {
                        let t = self.type_name_of(&other);
                        Err(self.err(
                            "TypeError",
                            format!("'&' needs a jid string or a node, edge or object, not '{t}'"),
                        ))
                    }
                }
            }
            E::Yield { .. } => Err(self.err(
                "SyntaxError",
                "`yield` is only supported as a statement or the right side of an assignment \
                 in a function body",
            )),
            E::Pipe { op, left, right } => {
                let (f, x) = match op {
                    ast::PipeOp::Forward | ast::PipeOp::AtomicForward => (right, left),
                    ast::PipeOp::Backward | ast::PipeOp::AtomicBackward => (left, right),
                };
                let xv = self.eval(x, ctx)?;
                let fv = self.eval(f, ctx)?;
                // A tuple written out on the piped side is the argument list, as in
                // jaclang: `(a, b) |> f` is `f(a, b)` (a tuple in a variable stays one).
                if let (ast::ExprKind::Tuple(_), Value::Tuple(items)) = (&x.kind, &xv) {
                    return self.call_value(&fv, items.to_vec(), vec![]);
                }
                self.call_value(&fv, vec![xv], vec![])
            }
            E::Await(inner) => {
                let v = self.eval(inner, ctx)?;
                self.await_value(v)
            }
            E::Spawn { left, right } => {
                let a = self.eval(left, ctx)?;
                let b = self.eval(right, ctx)?;
                self.spawn(a, b)
            }
            E::Connect { left, right, op } => self.eval_connect(left, right, op, ctx),
            E::Disconnect { left, right, op } => {
                let a = self.eval(left, ctx)?;
                let b = self.eval(right, ctx)?;
                self.disconnect(&a, &b, op, ctx)
            }
            E::EdgeRef(r) => {
                let (nodes, pairs) = self.eval_edge_ref(r, ctx)?;
                if r.edges {
                    Ok(Value::list(
                        pairs.into_iter().map(|(e, _)| Value::Anchor(e)).collect(),
                    ))
                } else {
                    Ok(Value::list(nodes.into_iter().map(Value::Anchor).collect()))
                }
            }
            E::Filter { obj, filter } => {
                let o = self.eval(obj, ctx)?;
                let items = self.iterate(&o)?;
                Ok(Value::list(self.apply_filter(items, filter, ctx)?))
            }
            E::AssignComp { obj, assigns } => {
                let o = self.eval(obj, ctx)?;
                let items = self.iterate(&o)?;
                for (n, ve) in assigns {
                    let v = self.eval(ve, ctx)?;
                    for it in &items {
                        self.set_attr(it, &n.name, v.clone())?;
                    }
                }
                Ok(o)
            }
            E::Error => Err(self.err("SyntaxError", "invalid syntax")),
        }
    }

    fn opt_slice_bound(&mut self, e: Option<&ast::Expr>, ctx: &Ctx) -> R<Option<i64>> {
        match e {
            None => Ok(None),
            Some(e) => match self.eval(e, ctx)? {
                Value::None => Ok(None),
                Value::Int(i) => Ok(Some(i)),
                Value::Bool(b) => Ok(Some(i64::from(b))),
                Value::BigInt(b) => {
                    use num_traits::Signed;
                    Ok(Some(if b.is_negative() { i64::MIN } else { i64::MAX }))
                }
                _ => Err(self.err(
                    "TypeError",
                    "slice indices must be integers or None or have an __index__ method",
                )),
            },
        }
    }

    fn eval_special(&mut self, sp: ast::SpecialRef, ctx: &Ctx) -> R<Value> {
        use ast::SpecialRef as S;
        match sp {
            S::SelfRef => ctx
                .this
                .clone()
                .ok_or_else(|| self.err("NameError", "name 'self' is not defined")),
            S::Here => ctx
                .here
                .clone()
                .ok_or_else(|| self.err("NameError", "name 'here' is not defined")),
            S::Visitor => ctx
                .visitor
                .clone()
                .ok_or_else(|| self.err("NameError", "name 'visitor' is not defined")),
            S::Root => Ok(Value::Anchor(self.root_handle()?)),
            S::Super => {
                let this = ctx
                    .this
                    .clone()
                    .ok_or_else(|| self.err("RuntimeError", "super(): no arguments"))?;
                let class = match &ctx.class {
                    Some(c) => c.clone(),
                    None => self.class_of(&this),
                };
                Ok(Value::Super(Rc::new((this, class))))
            }
            // `init`, `postinit` and `props` are keywords, but programs use them as
            // plain variable names too.
            S::Init | S::PostInit | S::Props => {
                let name: Rc<str> = Rc::from(special_name(sp));
                self.lookup(&name, ctx)
            }
        }
    }

    fn eval_items(&mut self, items: &[ast::Expr], ctx: &Ctx) -> R<Vec<Value>> {
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            if let E::Starred(inner) = &it.kind {
                let v = self.eval(inner, ctx)?;
                out.extend(self.iterate(&v)?);
            } else {
                out.push(self.eval(it, ctx)?);
            }
        }
        Ok(out)
    }

    fn comprehend(
        &mut self,
        gens: &[ast::Comprehension],
        ctx: &Ctx,
        body: &mut dyn FnMut(&mut Self, &Ctx) -> R<()>,
    ) -> R<()> {
        let Some((first, rest)) = gens.split_first() else {
            return body(self, ctx);
        };
        let it = self.eval(&first.iter, ctx)?;
        // Ranges are walked lazily: only what the comprehension keeps counts against the
        // item limit, and the time budget applies on every item.
        if let Value::Range(start, stop, step) = it {
            let mut i = start;
            while (step > 0 && i < stop) || (step < 0 && i > stop) {
                self.comprehend_item(first, rest, Value::Int(i), ctx, body)?;
                match i.checked_add(step) {
                    Some(n) => i = n,
                    None => break,
                }
            }
            return Ok(());
        }
        let mut items = super::dictview::WatchedItems::new(self, &it)?;
        while let Some(item) = items.next(self)? {
            self.comprehend_item(first, rest, item, ctx, body)?;
        }
        Ok(())
    }

    /// One item of a comprehension's generator `first`: bind, filter, recurse.
    fn comprehend_item(
        &mut self,
        first: &ast::Comprehension,
        rest: &[ast::Comprehension],
        item: Value,
        ctx: &Ctx,
        body: &mut dyn FnMut(&mut Self, &Ctx) -> R<()>,
    ) -> R<()> {
        self.poll()?;
        self.assign_local(&first.target, item, ctx)?;
        for c in &first.conds {
            let v = self.eval(c, ctx)?;
            if !self.truthy(&v)? {
                return Ok(());
            }
        }
        self.comprehend(rest, ctx, body)
    }

    /// Bind a comprehension target in the comprehension's own scope.
    fn assign_local(&mut self, target: &ast::Expr, v: Value, ctx: &Ctx) -> R<()> {
        match &target.kind {
            E::Name(n) => {
                scope_define(&ctx.scope, n.clone(), v);
                Ok(())
            }
            E::Tuple(items) | E::List(items) => {
                // A tuple of the right size binds from its items without a copy.
                if let Value::Tuple(t) = &v
                    && t.len() == items.len()
                    && !items.iter().any(|t| matches!(t.kind, E::Starred(_)))
                {
                    for (target, x) in items.iter().zip(t.iter()) {
                        self.assign_local(target, x.clone(), ctx)?;
                    }
                    return Ok(());
                }
                let vals = self.iterate(&v)?;
                if vals.len() != items.len() {
                    return Err(self.err(
                        "ValueError",
                        format!(
                            "not enough values to unpack (expected {}, got {})",
                            items.len(),
                            vals.len()
                        ),
                    ));
                }
                for (t, x) in items.iter().zip(vals) {
                    self.assign_local(t, x, ctx)?;
                }
                Ok(())
            }
            _ => self.assign(target, v, ctx),
        }
    }

    /// An f-string's `{s}` or `{n}` piece without conversion, spec or `=`: written
    /// straight into `out`; `false` (nothing written) for other values.
    pub(super) fn fstr_plain(&mut self, out: &mut String, v: &Value) -> R<bool> {
        match v {
            Value::Str(s) => {
                self.check_str_len(out.len().saturating_add(s.len()))?;
                out.push_str(s);
                Ok(true)
            }
            Value::Int(i) => {
                use std::fmt::Write;
                let _ = write!(out, "{i}");
                self.check_str_len(out.len())?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// An f-string piece with its conversion already made (`conv`) and its format spec
    /// (`spec_text`, empty when none), appended to `out`.
    pub(super) fn fstr_formatted(
        &mut self,
        out: &mut String,
        v: &Value,
        conv: Option<String>,
        spec_text: &str,
    ) -> R<()> {
        let piece = match conv {
            Some(s) if spec_text.is_empty() => s,
            Some(s) => self.format_value(&Value::Str(PyStr::from(s)), spec_text)?,
            None if spec_text.is_empty() => self.to_str(v)?,
            None => self.format_value(v, spec_text)?,
        };
        self.check_str_len(out.len().saturating_add(piece.len()))?;
        out.push_str(&piece);
        Ok(())
    }

    fn eval_fstring(&mut self, parts: &[ast::FStringPart], ctx: &Ctx) -> R<String> {
        let mut out = String::new();
        for p in parts {
            match p {
                ast::FStringPart::Literal(s) => out.push_str(s),
                ast::FStringPart::Expr {
                    expr,
                    conversion,
                    spec,
                    debug_text,
                } => {
                    let v = self.eval(expr, ctx)?;
                    // `{s}` and `{n}` alone: written straight into the result.
                    if conversion.is_none()
                        && spec.is_none()
                        && debug_text.is_none()
                        && self.fstr_plain(&mut out, &v)?
                    {
                        continue;
                    }
                    if let Some(t) = debug_text {
                        out.push_str(t);
                    }
                    let conv = match conversion {
                        Some('r') => Some(self.repr(&v)?),
                        Some('s') => Some(self.to_str(&v)?),
                        Some('a') => Some(self.repr(&v)?),
                        _ if debug_text.is_some() && spec.is_none() => Some(self.repr(&v)?),
                        _ => None,
                    };
                    let spec_text = match spec {
                        Some(sp) => self.eval_fstring(sp, ctx)?,
                        None => String::new(),
                    };
                    self.fstr_formatted(&mut out, &v, conv, &spec_text)?;
                }
            }
        }
        Ok(out)
    }

    /// `format(v, spec)` with Python's format mini-language.
    pub fn format_value(&mut self, v: &Value, spec: &str) -> R<String> {
        use crate::pyfmt;
        if let Some(r) = self.stdlib_format(v, spec) {
            return r;
        }
        // Only numbers, strings and enum members have a `__format__` of their own (or a
        // class that defines one); every other value has `object.__format__`, which
        // takes the empty spec alone.
        let own_format = matches!(
            v,
            Value::Bool(_)
                | Value::Int(_)
                | Value::BigInt(_)
                | Value::Float(_)
                | Value::Complex(..)
                | Value::Str(_)
                | Value::EnumMember(_)
        );
        if !spec.is_empty() && !own_format {
            if let Some(r) = self.call_dunder(v, "__format__", vec![Value::str(spec)]) {
                return match r? {
                    Value::Str(s) => Ok(s.to_string()),
                    other => {
                        let t = self.type_name_of(&other);
                        Err(self.err(
                            "TypeError",
                            format!("__format__ must return a str, not {t}"),
                        ))
                    }
                };
            }
            let t = self.type_name_of(v);
            return Err(self.err(
                "TypeError",
                format!("unsupported format string passed to {t}.__format__"),
            ));
        }
        let fs = pyfmt::parse_format_spec(spec).map_err(|m| self.err("ValueError", m))?;
        let numeric = matches!(
            v,
            Value::Bool(_)
                | Value::Int(_)
                | Value::BigInt(_)
                | Value::Float(_)
                | Value::Complex(..)
        );
        self.check_format_spec(&fs, numeric)?;
        let r = match v {
            Value::Bool(b) => {
                if spec.is_empty() {
                    Ok(if *b {
                        "True".to_string()
                    } else {
                        "False".to_string()
                    })
                } else {
                    pyfmt::format_int(&num_bigint::BigInt::from(i64::from(*b)), &fs)
                }
            }
            Value::Int(i) => pyfmt::format_int(&num_bigint::BigInt::from(*i), &fs),
            Value::BigInt(b) => pyfmt::format_int(b, &fs),
            Value::Float(f) => pyfmt::format_float(*f, &fs),
            Value::Str(s) => pyfmt::format_str(s, &fs),
            Value::Complex(re, im) => super::complex::format_complex(*re, *im, &fs),
            Value::EnumMember(m) if spec.is_empty() && super::stdlib::flag_text(m).is_some() => {
                return self.to_str(v);
            }
            Value::EnumMember(m) => {
                let m = m.clone();
                return self.format_value(&m.value, spec);
            }
            other => {
                let s = self.to_str(other)?;
                pyfmt::format_str(&s, &fs)
            }
        };
        r.map_err(|m| {
            let kind = match pyfmt::error_kind(&m) {
                pyfmt::PyErrorKind::MemoryError => "MemoryError",
                _ => "ValueError",
            };
            self.err(kind, m)
        })
    }

    // -----------------------------------------------------------------------------------
    // Calls
    // -----------------------------------------------------------------------------------

    fn eval_args(&mut self, args: &[Arg], ctx: &Ctx) -> R<(Vec<Value>, Vec<(Rc<str>, Value)>)> {
        let mut pos = Vec::with_capacity(args.len());
        let mut kw = Vec::new();
        for a in args {
            match a {
                Arg::Positional(e) => pos.push(self.eval(e, ctx)?),
                Arg::Keyword(n, e) => kw.push((n.name.clone(), self.eval(e, ctx)?)),
                Arg::Star(e) => {
                    let v = self.eval(e, ctx)?;
                    pos.extend(self.iterate(&v)?);
                }
                Arg::DoubleStar(e) => {
                    let v = self.eval(e, ctx)?;
                    match &v {
                        Value::Dict(d) => {
                            for (k, v) in d.borrow().iter() {
                                match &k.0 {
                                    Value::Str(s) => kw.push((s.to_rc(), v.clone())),
                                    _ => {
                                        return Err(
                                            self.err("TypeError", "keywords must be strings")
                                        );
                                    }
                                }
                            }
                        }
                        other => {
                            let t = self.type_name_of(other);
                            return Err(self.err(
                                "TypeError",
                                format!("argument after ** must be a mapping, not {t}"),
                            ));
                        }
                    }
                }
            }
        }
        Ok((pos, kw))
    }

    fn eval_call(&mut self, func: &ast::Expr, args: &[Arg], ctx: &Ctx) -> R<Value> {
        // Method calls without allocating a bound method.
        if let E::Attr {
            obj,
            name,
            null_safe,
        } = &func.kind
        {
            let recv = self.eval(obj, ctx)?;
            if *null_safe {
                // Only the attribute is guarded, as jaclang compiles `a?.m(x)`:
                // `(None if a is None else getattr(a, "m", None))(x)`, so calling what
                // a None receiver gave is CPython's "'NoneType' object is not callable".
                let f = self.null_safe_attr(&recv, &name.name)?;
                let (pos, kw) = self.eval_args(args, ctx)?;
                return self.call_value(&f, pos, kw);
            }
            // A declared (non-static) method of an object or node: no argument vector.
            let method = match &recv {
                Value::Instance(inst) if Self::stdlib_key(&recv).is_none() => {
                    inst.class.find_method(&name.name)
                }
                Value::Anchor(h) => self.graph.slot(*h).class.find_method(&name.name),
                _ => None,
            };
            if let Some(f) = method
                && !f.is_static
                && let Some(r) = self.call_plain(&f, Some(recv.clone()), args, ctx)
            {
                return r;
            }
            let (pos, kw) = self.eval_args(args, ctx)?;
            return self.call_method_value(&recv, &name.name, pos, kw);
        }
        if let E::Name(n) = &func.kind
            && &**n == "super"
        {
            // super() / super(): treat like the `super` reference.
            return self.eval_special(ast::SpecialRef::Super, ctx);
        }
        let f = self.eval(func, ctx)?;
        if let Value::Func(fun) = &f
            && let Some(r) = self.call_plain(fun, None, args, ctx)
        {
            return r;
        }
        let (pos, kw) = self.eval_args(args, ctx)?;
        self.call_value(&f, pos, kw)
    }

    /// `recv.name(args)`.
    /// `o?.name`: None when `o` is None or has no attribute `name` (jaclang reads it
    /// with `getattr(o, name, None)`); other exceptions propagate.
    fn null_safe_attr(&mut self, o: &Value, name: &str) -> R<Value> {
        if o.is_none() {
            return Ok(Value::None);
        }
        let r = self.get_attr(o, name);
        self.none_on(r, &["AttributeError"])
    }

    /// `r`, or None when it raised an exception of one of the builtin types `kinds`
    /// (their subclasses included).
    fn none_on(&mut self, r: R<Value>, kinds: &[&str]) -> R<Value> {
        match r {
            Err(Interrupt::Exc(e)) if kinds.iter().any(|k| self.exc_is(&e.value, k)) => {
                Ok(Value::None)
            }
            r => r,
        }
    }

    pub(crate) fn call_method_value(
        &mut self,
        recv: &Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if Self::stdlib_key(recv).is_some() {
            if dunder::has_value_dunder(recv, name) {
                return self.object_method(recv, name, args, kwargs);
            }
            return self.call_stdlib_method(recv, name, args, kwargs);
        }
        match recv {
            Value::Instance(inst) => {
                // The runtime's record classes (`KvStore`, `Storage`) declare no methods,
                // so a declared method never shadows theirs.
                if let Some(f) = inst.class.find_method(name) {
                    let this = if f.is_static {
                        None
                    } else {
                        Some(recv.clone())
                    };
                    return self.call_function(&f, this, args, kwargs, None);
                }
                if self.is_kvstore(recv) {
                    return self.call_kvstore_method(recv, name, args, kwargs);
                }
                if self.is_storage(recv) {
                    return self.call_storage_method(recv, name, args, kwargs);
                }
                if name == "with_traceback" && inst.class.is_exception() {
                    if let Some(v) = builtins::call_method(self, recv, name, args, kwargs)? {
                        return Ok(v);
                    }
                    return Ok(Value::None);
                }
            }
            Value::Anchor(h) => {
                let class = self.graph.slot(*h).class.clone();
                if let Some(f) = class.find_method(name) {
                    let this = if f.is_static {
                        None
                    } else {
                        Some(recv.clone())
                    };
                    return self.call_function(&f, this, args, kwargs, None);
                }
            }
            Value::Generator(g) => return self.gen_method(g, name, args),
            Value::Super(s) => {
                let (this, class) = (&s.0, &s.1);
                // CPython's `super()`: the classes after the defining one in the
                // receiver's own method resolution order (a diamond's `B` reaches `C`).
                let owner = self.class_of(this);
                let after = std::iter::once(&owner)
                    .chain(owner.mro.iter())
                    .position(|c| c.id == class.id)
                    .map_or(&class.mro[..], |i| &owner.mro[i..]);
                for base in after.iter() {
                    if let Some(f) = base.methods.borrow().get(name).cloned() {
                        return self.call_function(&f, Some(this.clone()), args, kwargs, None);
                    }
                    // A decorated method: what the decorators returned, bound to `self`.
                    if let Some(Value::Func(f)) = base.statics.borrow().get(name).cloned() {
                        let bound = Value::Bound(Rc::new((this.clone(), f)));
                        return self.call_value(&bound, args, kwargs);
                    }
                }
                if name == "init" || name == "__init__" {
                    if let Some(base) = after.first().cloned() {
                        return self.generated_init(&base, this, args, kwargs);
                    }
                    return Ok(Value::None);
                }
                if name == "postinit" {
                    return Ok(Value::None);
                }
                return Err(self.err(
                    "AttributeError",
                    format!("'super' object has no attribute '{name}'"),
                ));
            }
            Value::Class(c) if c.kind == ClassKind::Builtin => {
                if let Some(v) = builtins::call_method(self, recv, name, args, kwargs)? {
                    return Ok(v);
                }
                return Err(self.err(
                    "AttributeError",
                    format!("type object '{}' has no attribute '{name}'", c.name),
                ));
            }
            Value::Str(_)
            | Value::Bytes(_)
            | Value::ByteArray(_)
            | Value::Complex(..)
            | Value::Slice(_)
            | Value::List(_)
            | Value::Dict(_)
            | Value::Set(_)
            | Value::FrozenSet(_)
            | Value::Tuple(_)
            | Value::Int(_)
            | Value::BigInt(_)
            | Value::Float(_)
            | Value::Bool(_)
            | Value::Range(..)
            | Value::View(_) => {
                if dunder::has_value_dunder(recv, name) {
                    return self.object_method(recv, name, args, kwargs);
                }
                if let Some(v) = builtins::call_method(self, recv, name, args, kwargs)? {
                    return Ok(v);
                }
                let t = self.type_name_of(recv);
                return Err(self.err(
                    "AttributeError",
                    format!("'{t}' object has no attribute '{name}'"),
                ));
            }
            _ => {}
        }
        let f = self.get_attr(recv, name)?;
        // `object`'s own `__eq__`/`__ne__`/`__hash__` (what `get_attr` gives when the
        // class defines none): answered here, since calling the method value would
        // come back to this function.
        if let Value::BuiltinMethod(b) = &f
            && dunder::has_value_dunder(recv, &b.1)
        {
            return self.object_method(recv, name, args, kwargs);
        }
        self.call_value(&f, args, kwargs)
    }

    /// Builtin function by name: Python builtins first, then object-spatial ones.
    pub(crate) fn call_builtin_fn(
        &mut self,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if name == "kvstore" {
            return self.call_kvstore(args, kwargs);
        }
        if super::stdlib::is_qualified(name) {
            return self.call_stdlib(name, args, kwargs);
        }
        if name.starts_with(super::sv::STUB_PREFIX) {
            return self.call_sv_stub(name, args, kwargs);
        }
        if let Some(f) = name.strip_prefix(super::sv::CLIENT_PREFIX) {
            return self.call_sv_client(f, args, kwargs);
        }
        if super::OSP_BUILTINS.contains(&name) {
            return self.call_osp_builtin(name, args, kwargs);
        }
        if super::events::EVENT_BUILTINS.contains(&name) {
            return self.call_event_builtin(name, args, kwargs);
        }
        if name == super::storage::STORE {
            return self.call_store(args, kwargs);
        }
        if name == super::storage::FACTORY_CREATE || name == super::storage::FACTORY_DEFAULT {
            return self.call_storage_factory(name, args, kwargs);
        }
        match builtins::call_builtin(self, name, args, kwargs)? {
            Some(v) => Ok(v),
            None => Err(self.err("NameError", format!("name '{name}' is not defined"))),
        }
    }

    fn call_osp_builtin(
        &mut self,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let kw = |k: &str| {
            kwargs
                .iter()
                .find(|(n, _)| &**n == k)
                .map(|(_, v)| v.clone())
        };
        let arg0 = args.first().cloned();
        match name {
            "jid" => match arg0 {
                Some(Value::Anchor(h)) => {
                    Ok(Value::str(&crate::host::format_id(self.graph.id_of(h))))
                }
                Some(Value::Instance(i)) => Ok(Value::str(&crate::host::format_id(
                    super::instance_id(i.id),
                ))),
                _ => Err(self.err("TypeError", "jid() expects a node, edge or walker")),
            },
            "jobj" => {
                let id = match arg0 {
                    Some(v @ Value::Anchor(_)) => return Ok(v),
                    Some(Value::Str(s)) => s,
                    _ => return Ok(Value::None),
                };
                if &*id == "root" {
                    return Ok(Value::Anchor(self.root_handle()?));
                }
                let Some(id) = crate::host::parse_id(&id) else {
                    return Ok(Value::None);
                };
                match self.handle_of(id)? {
                    Some(h) if self.can_read(h)? => Ok(Value::Anchor(h)),
                    _ => Ok(Value::None),
                }
            }
            "grant" | "revoke" => {
                let Some(Value::Anchor(h)) = arg0 else {
                    return Err(self.err("TypeError", format!("{name}() expects a node or edge")));
                };
                self.check_write(h)?;
                let level = match kw("level").or_else(|| {
                    args.get(1)
                        .cloned()
                        .filter(|v| !matches!(v, Value::Anchor(_) | Value::Str(_)))
                }) {
                    Some(v) => self.level_of(&v)?,
                    None => crate::host::level::READ,
                };
                // grant(node, user_root_or_id): open to one user.
                let user = match args.get(1) {
                    Some(Value::Anchor(u)) => Some(self.graph.id_of(*u)),
                    Some(Value::Str(s)) => crate::host::parse_id(s),
                    _ => None,
                };
                let slot = self.graph.slot_mut(h);
                match (name, user) {
                    ("grant", Some(u)) => {
                        slot.access.roots.retain(|(r, _)| *r != u);
                        slot.access.roots.push((u, level));
                    }
                    ("revoke", Some(u)) => slot.access.roots.retain(|(r, _)| *r != u),
                    ("grant", None) => slot.access.public = Some(level),
                    _ => slot.access.public = Some(crate::host::level::NO_ACCESS),
                }
                self.graph.mark_dirty(h);
                Ok(Value::Bool(true))
            }
            "perm_grant" | "perm_revoke" | "allow_root" | "disallow_root" => {
                let Some(Value::Anchor(h)) = arg0 else {
                    return Err(self.err("TypeError", format!("{name}() expects a node or edge")));
                };
                self.check_write(h)?;
                let slot_level = |it: &mut Self, v: Option<&Value>| -> R<i8> {
                    match v {
                        Some(v) => it.level_of(v),
                        None => Ok(crate::host::level::READ),
                    }
                };
                match name {
                    "perm_grant" => {
                        let l = slot_level(self, args.get(1).or(kw("level").as_ref()))?;
                        self.graph.slot_mut(h).access.public = Some(l);
                    }
                    "perm_revoke" => {
                        self.graph.slot_mut(h).access.public = Some(crate::host::level::NO_ACCESS);
                    }
                    _ => {
                        let root = match args.get(1) {
                            Some(Value::Anchor(u)) => Some(self.graph.id_of(*u)),
                            Some(Value::Str(s)) => crate::host::parse_id(s),
                            _ => None,
                        };
                        let Some(root) = root else {
                            return Err(self
                                .err("TypeError", format!("{name}() expects a root or root id")));
                        };
                        let l = slot_level(self, args.get(2).or(kw("level").as_ref()))?;
                        let acc = &mut self.graph.slot_mut(h).access;
                        acc.roots.retain(|(r, _)| *r != root);
                        if name == "allow_root" {
                            acc.roots.push((root, l));
                        }
                    }
                }
                self.graph.mark_dirty(h);
                Ok(Value::Bool(true))
            }
            "allroots" => Ok(Value::list(vec![Value::Anchor(self.root_handle()?)])),
            "save" => {
                if let Some(Value::Anchor(h)) = arg0 {
                    // Saving stores the node's current fields (in-place changes such as
                    // `n.tags.append(..)` included): the same WRITE as an assignment.
                    self.check_write(h)?;
                    self.decode_fields(h)?;
                    self.graph.mark_dirty(h);
                }
                Ok(arg0.unwrap_or(Value::None))
            }
            "commit" => {
                self.commit()?;
                Ok(Value::None)
            }
            "on_commit" => {
                if let Some(f) = arg0 {
                    self.on_commit.push(f);
                }
                Ok(Value::None)
            }
            "destroy" => {
                if let Some(v) = arg0 {
                    self.destroy(&v)?;
                }
                Ok(Value::None)
            }
            "printgraph" => self.printgraph_call(args, kwargs),
            // Server metadata decorators: return a decorator that leaves its target as is.
            "restspec" | "schedule" => Ok(Value::Builtin(Rc::from("__identity__"))),
            _ => Err(self.err("NameError", format!("name '{name}' is not defined"))),
        }
    }

    fn level_of(&mut self, v: &Value) -> R<i8> {
        match v {
            Value::Int(i) => Ok((*i).clamp(-1, 2) as i8),
            Value::EnumMember(m) => match m.value {
                Value::Int(i) => Ok(i.clamp(-1, 2) as i8),
                _ => Err(self.err("TypeError", "access level must be an AccessLevel")),
            },
            Value::Str(s) => Ok(match &**s {
                "NO_ACCESS" => -1,
                "READ" => 0,
                "CONNECT" => 1,
                "WRITE" => 2,
                _ => return Err(self.err("ValueError", format!("unknown access level '{s}'"))),
            }),
            _ => Err(self.err("TypeError", "access level must be an AccessLevel")),
        }
    }

    // -----------------------------------------------------------------------------------
    // Connect / disconnect
    // -----------------------------------------------------------------------------------

    fn eval_connect(
        &mut self,
        left: &ast::Expr,
        right: &ast::Expr,
        op: &ast::ConnectOp,
        ctx: &Ctx,
    ) -> R<Value> {
        let a = self.eval(left, ctx)?;
        let b = self.eval(right, ctx)?;
        self.connect_values(a, b, op, ctx)
    }

    /// `a ++> b` (or `op`'s other forms) on evaluated operands; the value is the
    /// arrow-head operand.
    pub(crate) fn connect_values(
        &mut self,
        a: Value,
        b: Value,
        op: &ast::ConnectOp,
        ctx: &Ctx,
    ) -> R<Value> {
        let lefts = self.anchors_of(&a)?;
        let rights = self.anchors_of(&b)?;
        // Only nodes have edges: an edge as an end is jaclang's TypeError (it then
        // tries the operand as a list of nodes).
        for &h in lefts.iter().chain(&rights) {
            let class = &self.graph.slot(h).class;
            if class.is_edge() {
                let msg = format!("'{}' object is not iterable", class.name);
                return Err(self.err("TypeError", msg));
            }
        }
        for &l in &lefts {
            for &r in &rights {
                let edge = match &op.edge {
                    Some(ee) => {
                        let ev = self.eval(ee, ctx)?;
                        let ev = match ev {
                            Value::Class(c) if c.is_edge() => self.construct(&c, vec![], vec![])?,
                            other => other,
                        };
                        for (n, ve) in &op.assigns {
                            let v = self.eval(ve, ctx)?;
                            self.set_attr(&ev, &n.name, v)?;
                        }
                        Some(ev)
                    }
                    None => None,
                };
                match op.dir {
                    EdgeDir::Out => self.connect(l, r, edge, false)?,
                    EdgeDir::In => self.connect(r, l, edge, false)?,
                    EdgeDir::Any => self.connect(l, r, edge, true)?,
                };
            }
        }
        // Decision 10: the expression yields its arrow-head operand: the right-hand side
        // for `++>` and `<++>`, the left-hand side for `<++`.
        Ok(if op.dir == EdgeDir::In { a } else { b })
    }

    fn disconnect(&mut self, a: &Value, b: &Value, op: &ast::EdgeOp, ctx: &Ctx) -> R<Value> {
        let lefts = self.anchors_of(a)?;
        let rights = self.anchors_of(b)?;
        let et = match &op.edge_type {
            Some(t) => Some(self.eval(t, ctx)?),
            None => None,
        };
        let pairs = self.hop(&lefts, op, et.as_ref(), ctx)?;
        let mut removed = false;
        for (e, n) in pairs {
            if rights.contains(&n) && self.graph.is_live(e) {
                // Detaching changes both ends' edge lists: CONNECT on each, as attaching.
                let ends = self.graph.slot(e).ends();
                if let Some(ends) = ends {
                    for end in [ends.source(), ends.target()] {
                        if let Some(eh) = self.handle_of(end)? {
                            self.check_connect(eh)?;
                        }
                    }
                }
                self.remove_edge(e)?;
                removed = true;
            }
        }
        Ok(Value::Bool(removed))
    }
}

use super::builtins;

/// The source spelling of a special reference used as a plain name.
pub(crate) fn special_name(sp: ast::SpecialRef) -> &'static str {
    use ast::SpecialRef as S;
    match sp {
        S::Init => "init",
        S::PostInit => "postinit",
        S::Props => "props",
        S::SelfRef => "self",
        S::Super => "super",
        S::Here => "here",
        S::Root => "root",
        S::Visitor => "visitor",
    }
}

/// A number literal, possibly negated: what CPython folds into a constant.
fn is_number_literal(e: &ast::Expr) -> bool {
    match &e.kind {
        E::Int(_) | E::Float(_) => true,
        E::Unary {
            op: ast::UnaryOp::Neg | ast::UnaryOp::Pos,
            operand,
        } => matches!(operand.kind, E::Int(_) | E::Float(_)),
        _ => false,
    }
}

/// CPython compiles a set display of three or more constants to a `frozenset`
/// constant, which the cached bytecode jaclang runs stores with its items sorted by
/// their `marshal` bytes; the set is filled from that. Reorder `vals` (the numbers of
/// such a display) the same way, so the set's table order (`ops::set_items`) is the
/// one CPython builds. Values other than `i32`-sized ints and floats leave it as is.
fn marshal_order(vals: &mut [Value]) {
    let key = |v: &Value| -> Option<Vec<u8>> {
        match v {
            Value::Int(i) => {
                let i = i32::try_from(*i).ok()?;
                Some([&[0xe9u8][..], &i.to_le_bytes()].concat())
            }
            Value::Float(f) => Some([&[0xe7u8][..], &f.to_le_bytes()].concat()),
            _ => None,
        }
    };
    let Some(keys) = vals.iter().map(key).collect::<Option<Vec<_>>>() else {
        return;
    };
    let mut order: Vec<usize> = (0..vals.len()).collect();
    order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
    let sorted: Vec<Value> = order.iter().map(|&i| vals[i].clone()).collect();
    vals.clone_from_slice(&sorted);
}
