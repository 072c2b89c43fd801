//! Operators on user objects through the special methods their class defines, as
//! Python dispatches them: `a + b` calls `a.__add__(b)`, then `b.__radd__(a)`; `a < b`
//! calls `a.__lt__(b)`, then the reflection `b.__gt__(a)`; `==` falls back to identity
//! when neither side defines `__eq__`; `x in o`, `o[k]`, `o[k] = v`, `del o[k]`,
//! iteration, `o(...)`, truthiness and unary `-`/`+`/`~` likewise. Only an instance or
//! anchor whose class declares the method is asked, so the builtin types' paths are
//! untouched: each entry point is reached where the operation would otherwise fail (or,
//! for `==` and truthiness, where the answer would be identity or `True`).

use super::*;
use crate::ast::{BinOp, CmpOp, UnaryOp};

/// An archetype instance or anchor (whose class may define special methods).
#[inline]
pub(super) fn is_object(v: &Value) -> bool {
    matches!(v, Value::Instance(_) | Value::Anchor(_))
}

/// The method names of a binary operator: forward and reflected.
fn binary_names(op: BinOp) -> (&'static str, &'static str) {
    match op {
        BinOp::Add => ("__add__", "__radd__"),
        BinOp::Sub => ("__sub__", "__rsub__"),
        BinOp::Mul => ("__mul__", "__rmul__"),
        BinOp::Div => ("__truediv__", "__rtruediv__"),
        BinOp::FloorDiv => ("__floordiv__", "__rfloordiv__"),
        BinOp::Mod => ("__mod__", "__rmod__"),
        BinOp::Pow => ("__pow__", "__rpow__"),
        BinOp::MatMul => ("__matmul__", "__rmatmul__"),
        BinOp::BitAnd => ("__and__", "__rand__"),
        BinOp::BitOr => ("__or__", "__ror__"),
        BinOp::BitXor => ("__xor__", "__rxor__"),
        BinOp::LShift => ("__lshift__", "__rlshift__"),
        BinOp::RShift => ("__rshift__", "__rrshift__"),
    }
}

/// A comparison's method and the one its reflection calls (`a < b` is `b > a`).
fn compare_names(op: CmpOp) -> Option<(&'static str, &'static str)> {
    Some(match op {
        CmpOp::Eq => ("__eq__", "__eq__"),
        CmpOp::NotEq => ("__ne__", "__ne__"),
        CmpOp::Lt => ("__lt__", "__gt__"),
        CmpOp::Gt => ("__gt__", "__lt__"),
        CmpOp::LtE => ("__le__", "__ge__"),
        CmpOp::GtE => ("__ge__", "__le__"),
        _ => return None,
    })
}

impl Interp<'_> {
    /// `v.name(args)` when `v` is an object whose class defines `name`.
    pub(super) fn call_dunder(
        &mut self,
        v: &Value,
        name: &str,
        args: Vec<Value>,
    ) -> Option<R<Value>> {
        if !is_object(v) {
            return None;
        }
        let f = self.class_of(v).find_method(name)?;
        Some(self.call_function(&f, Some(v.clone()), args, Vec::new(), None))
    }

    /// `a op b` through `__op__` / `__rop__`; `None` when neither side defines it.
    pub(super) fn binary_dunder(&mut self, op: BinOp, a: &Value, b: &Value) -> Option<R<Value>> {
        let (fwd, rev) = binary_names(op);
        if let Some(r) = self.call_dunder(a, fwd, vec![b.clone()]) {
            return Some(r);
        }
        self.call_dunder(b, rev, vec![a.clone()])
    }

    /// `a op b` for a comparison through `__eq__`, `__lt__`, ... and their reflections;
    /// `!=` without `__ne__` is the negation of `__eq__`. `None` when no side defines
    /// the method.
    pub(super) fn compare_dunder(&mut self, op: CmpOp, a: &Value, b: &Value) -> Option<R<bool>> {
        let (fwd, rev) = compare_names(op)?;
        let r = match self.call_dunder(a, fwd, vec![b.clone()]) {
            Some(r) => r,
            None => match self.call_dunder(b, rev, vec![a.clone()]) {
                Some(r) => r,
                None if op == CmpOp::NotEq => {
                    return self
                        .compare_dunder(CmpOp::Eq, a, b)
                        .map(|r| r.map(|eq| !eq));
                }
                None => return None,
            },
        };
        Some(r.and_then(|v| self.truthy(&v)))
    }

    /// `-v`, `+v`, `~v` through `__neg__`, `__pos__`, `__invert__`.
    pub(super) fn unary_dunder(&mut self, op: UnaryOp, v: &Value) -> Option<R<Value>> {
        let name = match op {
            UnaryOp::Neg => "__neg__",
            UnaryOp::Pos => "__pos__",
            UnaryOp::Invert => "__invert__",
            UnaryOp::Not => return None,
        };
        self.call_dunder(v, name, Vec::new())
    }

    /// Truthiness through `__bool__`, then `__len__`.
    pub(super) fn truthy_dunder(&mut self, v: &Value) -> Option<R<bool>> {
        if let Some(r) = self.call_dunder(v, "__bool__", Vec::new()) {
            return Some(r.and_then(|b| match b {
                Value::Bool(b) => Ok(b),
                other => {
                    let t = self.type_name_of(&other);
                    Err(self.err(
                        "TypeError",
                        format!("__bool__ should return bool, returned {t}"),
                    ))
                }
            }));
        }
        let r = self.call_dunder(v, "__len__", Vec::new())?;
        Some(r.and_then(|n| self.truthy(&n)))
    }

    /// The items of an object that defines `__iter__`: the iterable it returns, or an
    /// iterator object whose `__next__` is called until `StopIteration` (at most
    /// `max_collection_items` items).
    pub(super) fn iterate_dunder(&mut self, v: &Value) -> Option<R<Vec<Value>>> {
        let it = match self.call_dunder(v, "__iter__", Vec::new())? {
            Ok(it) => it,
            Err(e) => return Some(Err(e)),
        };
        if !is_object(&it) {
            return Some(self.iterate(&it));
        }
        if self.class_of(&it).find_method("__next__").is_none() {
            let t = self.type_name_of(&it);
            return Some(Err(self.err(
                "TypeError",
                format!("iter() returned non-iterator of type '{t}'"),
            )));
        }
        let mut out = Vec::new();
        loop {
            if let Err(e) = self.poll() {
                return Some(Err(e));
            }
            match self.call_dunder(&it, "__next__", Vec::new()) {
                Some(Ok(x)) => {
                    if let Err(e) = self.check_growth(out.len(), 1) {
                        return Some(Err(e));
                    }
                    out.push(x);
                }
                Some(Err(Interrupt::Exc(e))) if self.exc_is(&e.value, "StopIteration") => break,
                Some(Err(e)) => return Some(Err(e)),
                None => break,
            }
        }
        Some(Ok(out))
    }
}
