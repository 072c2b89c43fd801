//! Structural pattern matching for `match` (and the values of `switch`).
//!
//! Patterns are parsed as expressions (`case Point(x=0) as p:` is a call inside a cast);
//! this module reads them as patterns with Python's rules: `_` matches anything, a bare
//! name captures, a dotted name is a value compared with `==`, `None`/`True`/`False`
//! compare by identity, `A | B` tries alternatives, `P as n` binds, `[a, *rest]` and
//! `(a, b)` match lists and tuples (not strings), `{"k": v, **rest}` matches dicts (extra
//! keys allowed), `C(p, k=q)` checks `isinstance` then fields (positional sub-patterns
//! follow the declared `has` order; a builtin type takes one positional sub-pattern
//! matched against the subject itself). Recursion follows the pattern's nesting, which
//! the parser bounds; the subject's size never adds native depth.

use super::*;
use ast::ExprKind as E;

/// Builtin types whose class pattern `int(x)` matches the subject itself.
const SELF_MATCHING: &[&str] = &[
    "bool",
    "int",
    "float",
    "str",
    "list",
    "tuple",
    "dict",
    "set",
    "frozenset",
    "bytes",
];

impl Interp<'_> {
    pub(super) fn match_pattern(&mut self, p: &ast::Expr, v: &Value, ctx: &Ctx) -> R<bool> {
        match &p.kind {
            E::Name(n) if &**n == "_" => Ok(true),
            E::Name(n) => {
                scope_set(&ctx.scope, n, v.clone());
                Ok(true)
            }
            E::None => Ok(v.is_none()),
            E::Bool(b) => Ok(matches!(v, Value::Bool(x) if x == b)),
            E::Binary {
                op: ast::BinOp::BitOr,
                left,
                right,
            } => Ok(self.match_pattern(left, v, ctx)? || self.match_pattern(right, v, ctx)?),
            E::Cast { expr, ty } => {
                if !self.match_pattern(expr, v, ctx)? {
                    return Ok(false);
                }
                match &ty.kind {
                    E::Name(n) if &**n != "_" => scope_set(&ctx.scope, n, v.clone()),
                    _ => {}
                }
                Ok(true)
            }
            E::List(items) | E::Tuple(items) => self.match_sequence(items, v, ctx),
            E::Dict(items) => self.match_mapping(items, v, ctx),
            E::Call { func, args } => self.match_class(func, args, v, ctx),
            _ => {
                let pv = self.eval(p, ctx)?;
                self.py_eq(&pv, v)
            }
        }
    }

    fn match_sequence(&mut self, items: &[ast::Expr], v: &Value, ctx: &Ctx) -> R<bool> {
        let vals: Vec<Value> = match v {
            Value::List(l) => l.borrow().clone(),
            Value::Tuple(t) => (**t).clone(),
            Value::Range(..) => self.iterate(v)?,
            _ => return Ok(false),
        };
        let star = items.iter().position(|t| matches!(t.kind, E::Starred(_)));
        match star {
            None => {
                if vals.len() != items.len() {
                    return Ok(false);
                }
                for (pi, vi) in items.iter().zip(vals.iter()) {
                    if !self.match_pattern(pi, vi, ctx)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Some(si) => {
                let after = items.len() - si - 1;
                if vals.len() < items.len() - 1 {
                    return Ok(false);
                }
                let mid_end = vals.len() - after;
                for (pi, vi) in items[..si].iter().zip(vals[..si].iter()) {
                    if !self.match_pattern(pi, vi, ctx)? {
                        return Ok(false);
                    }
                }
                for (pi, vi) in items[si + 1..].iter().zip(vals[mid_end..].iter()) {
                    if !self.match_pattern(pi, vi, ctx)? {
                        return Ok(false);
                    }
                }
                if let E::Starred(inner) = &items[si].kind
                    && let E::Name(n) = &inner.kind
                    && &**n != "_"
                {
                    scope_set(&ctx.scope, n, Value::list(vals[si..mid_end].to_vec()));
                }
                Ok(true)
            }
        }
    }

    fn match_mapping(&mut self, items: &[ast::DictItem], v: &Value, ctx: &Ctx) -> R<bool> {
        let Value::Dict(d) = v else {
            return Ok(false);
        };
        let mut used = Vec::new();
        let mut rest_name = None;
        for item in items {
            match item {
                ast::DictItem::Pair(k, pat) => {
                    let kv = self.eval(k, ctx)?;
                    let key = self.hash_key(&kv)?;
                    let found = d.borrow().get(&key).cloned();
                    let Some(found) = found else {
                        return Ok(false);
                    };
                    if !self.match_pattern(pat, &found, ctx)? {
                        return Ok(false);
                    }
                    used.push(key);
                }
                ast::DictItem::Spread(r) => {
                    if let E::Name(n) = &r.kind {
                        rest_name = Some(n.clone());
                    }
                }
            }
        }
        if let Some(n) = rest_name {
            let rest: Dict = d
                .borrow()
                .iter()
                .filter(|(k, _)| !used.contains(k))
                .map(|(k, x)| (k.clone(), x.clone()))
                .collect();
            scope_set(&ctx.scope, &n, Value::dict(rest));
        }
        Ok(true)
    }

    fn match_class(
        &mut self,
        func: &ast::Expr,
        args: &[ast::Arg],
        v: &Value,
        ctx: &Ctx,
    ) -> R<bool> {
        let cls = self.eval(func, ctx)?;
        if !matches!(cls, Value::Class(_)) {
            return Err(self.err(
                "TypeError",
                "called match pattern must be a class".to_string(),
            ));
        }
        if !self.isinstance(v, &cls)? {
            return Ok(false);
        }
        let Value::Class(c) = &cls else {
            return Ok(false);
        };
        let mut pos = 0usize;
        for a in args {
            match a {
                ast::Arg::Positional(pe) => {
                    let sub = if c.kind == ClassKind::Builtin && SELF_MATCHING.contains(&&*c.name) {
                        if pos > 0 {
                            return Err(self.err(
                                "TypeError",
                                format!(
                                    "{}() accepts 1 positional sub-pattern ({} given)",
                                    c.name,
                                    pos + 1
                                ),
                            ));
                        }
                        v.clone()
                    } else {
                        let fields: Vec<Rc<str>> = c
                            .fields
                            .iter()
                            .filter(|f| !f.is_static && !f.postinit)
                            .map(|f| f.name.clone())
                            .collect();
                        let Some(name) = fields.get(pos) else {
                            return Err(self.err(
                                "TypeError",
                                format!(
                                    "{}() accepts {} positional sub-patterns ({} given)",
                                    c.name,
                                    fields.len(),
                                    pos + 1
                                ),
                            ));
                        };
                        match self.get_attr(v, name) {
                            Ok(x) => x,
                            Err(Interrupt::Exc(_)) => return Ok(false),
                            Err(other) => return Err(other),
                        }
                    };
                    pos += 1;
                    if !self.match_pattern(pe, &sub, ctx)? {
                        return Ok(false);
                    }
                }
                ast::Arg::Keyword(n, pe) => {
                    let fv = match self.get_attr(v, &n.name) {
                        Ok(x) => x,
                        Err(Interrupt::Exc(_)) => return Ok(false),
                        Err(other) => return Err(other),
                    };
                    if !self.match_pattern(pe, &fv, ctx)? {
                        return Ok(false);
                    }
                }
                _ => {}
            }
        }
        Ok(true)
    }

    /// `switch`: the first case whose value equals the subject (or `default`) runs, then
    /// execution falls through the following cases until a `break`.
    pub(super) fn exec_switch(
        &mut self,
        subject: &ast::Expr,
        cases: &[ast::SwitchCase],
        ctx: &Ctx,
    ) -> R<Flow> {
        let v = self.eval(subject, ctx)?;
        let mut start = None;
        for (i, c) in cases.iter().enumerate() {
            if let Some(pat) = &c.value
                && self.match_pattern(pat, &v, ctx)?
            {
                start = Some(i);
                break;
            }
        }
        let start = start.or_else(|| cases.iter().position(|c| c.value.is_none()));
        let Some(start) = start else {
            return Ok(Flow::Normal);
        };
        for c in &cases[start..] {
            match self.exec_block(&c.body, ctx)? {
                Flow::Normal => {}
                Flow::Break => return Ok(Flow::Normal),
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }
}
