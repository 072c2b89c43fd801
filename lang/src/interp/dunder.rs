//! Operators on user objects through the special methods their class defines, as
//! Python dispatches them: `a + b` calls `a.__add__(b)`, then `b.__radd__(a)`; `a < b`
//! calls `a.__lt__(b)`, then the reflection `b.__gt__(a)`; `==` falls back to identity
//! when neither side defines `__eq__`; `x in o`, `o[k]`, `o[k] = v`, `del o[k]`,
//! iteration, `o(...)`, truthiness and unary `-`/`+`/`~` likewise. Only an instance or
//! anchor whose class declares the method is asked, so the builtin types' paths are
//! untouched: each entry point is reached where the operation would otherwise fail (or,
//! for `==` and truthiness, where the answer would be identity or `True`).

use super::ops::is_same;
use super::*;
use crate::ast::{BinOp, CmpOp, UnaryOp};

/// The special methods every value has through `object` or its builtin type
/// (`a.__eq__(b)`, `f = a.__eq__`), answered by [`Interp::object_method`] when the
/// value's class does not define its own.
pub(super) fn is_object_dunder(name: &str) -> bool {
    matches!(
        name,
        "__eq__" | "__ne__" | "__hash__" | "__str__" | "__repr__"
    )
}

/// What an operator special method of a builtin value stands for
/// (`(3).__add__(4)`, `"a".__lt__("b")`, `(5).__neg__()`).
#[derive(Clone, Copy)]
enum ValueOp {
    /// A binary operator, reflected (`__radd__`: the argument is the left operand).
    Bin(BinOp, bool),
    Cmp(CmpOp),
    /// `__neg__`, `__pos__`, `__abs__`, `__invert__`, `__bool__`, `__int__`,
    /// `__float__`, `__index__` of a number.
    Unary,
}

/// The rank of a number's type in the numeric tower (int and bool, float, complex):
/// a number's operator methods take operands of its rank or lower, as CPython's
/// (`(3).__add__(1.5)` is `NotImplemented`, `(1.5).__add__(3)` is `4.5`).
fn num_rank(v: &Value) -> Option<u8> {
    match v {
        Value::Bool(_) | Value::Int(_) | Value::BigInt(_) => Some(0),
        Value::Float(_) => Some(1),
        Value::Complex(..) => Some(2),
        _ => None,
    }
}

fn is_set(v: &Value) -> bool {
    matches!(v, Value::Set(_) | Value::FrozenSet(_))
}

/// The operator special method `name` of the builtin value `v`, if its type has one.
fn value_operator(v: &Value, name: &str) -> Option<ValueOp> {
    // Method calls on builtin values ask here first (`xs.append`): a plain name is
    // answered at once.
    if !name.starts_with("__") {
        return None;
    }
    if let Some(op) = [CmpOp::Lt, CmpOp::LtE, CmpOp::Gt, CmpOp::GtE]
        .into_iter()
        .find(|op| compare_names(*op).is_some_and(|(n, _)| n == name))
    {
        // `object` has the ordering methods too (they decline): every value answers.
        return Some(ValueOp::Cmp(op));
    }
    let rank = num_rank(v);
    if matches!(
        name,
        "__neg__" | "__pos__" | "__abs__" | "__bool__" | "__int__" | "__float__"
    ) && rank.is_some_and(|r| r < 2)
        || matches!(name, "__invert__" | "__index__") && rank == Some(0)
    {
        return Some(ValueOp::Unary);
    }
    let (op, reflected) = BINARY_OPS.iter().find_map(|op| {
        let (fwd, rev) = binary_names(*op);
        (fwd == name)
            .then_some((*op, false))
            .or((rev == name).then_some((*op, true)))
    })?;
    use BinOp as B;
    let has = match v {
        Value::Bool(_) | Value::Int(_) | Value::BigInt(_) => op != B::MatMul,
        Value::Float(_) => matches!(
            op,
            B::Add | B::Sub | B::Mul | B::Div | B::FloorDiv | B::Mod | B::Pow
        ),
        Value::Complex(..) => matches!(op, B::Add | B::Sub | B::Mul | B::Div | B::Pow),
        Value::Str(_) | Value::Bytes(_) | Value::ByteArray(_) => {
            matches!((op, reflected), (B::Add | B::Mod, false) | (B::Mul, _))
        }
        Value::List(_) | Value::Tuple(_) => {
            matches!((op, reflected), (B::Add, false) | (B::Mul, _))
        }
        Value::Set(_) | Value::FrozenSet(_) => {
            matches!(op, B::BitAnd | B::BitOr | B::BitXor | B::Sub)
        }
        Value::Dict(_) => op == B::BitOr,
        _ => false,
    };
    has.then_some(ValueOp::Bin(op, reflected))
}

const BINARY_OPS: [BinOp; 13] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::FloorDiv,
    BinOp::Mod,
    BinOp::Pow,
    BinOp::MatMul,
    BinOp::BitAnd,
    BinOp::BitOr,
    BinOp::BitXor,
    BinOp::LShift,
    BinOp::RShift,
];

/// Whether `recv`'s ordering methods compare with `other` (else `NotImplemented`).
fn compares_with(recv: &Value, other: &Value) -> bool {
    use Value as V;
    match (recv, other) {
        (a, b) if num_rank(a).is_some() => {
            num_rank(a) < Some(2) && num_rank(b).is_some_and(|r| Some(r) <= num_rank(a))
        }
        (V::Str(_), V::Str(_))
        | (V::List(_), V::List(_))
        | (V::Tuple(_), V::Tuple(_))
        | (V::Bytes(_) | V::ByteArray(_), V::Bytes(_) | V::ByteArray(_)) => true,
        (a, b) => is_set(a) && is_set(b),
    }
}

/// A special method `v` has as a builtin value, besides `object`'s: the container
/// protocol of strings, lists, tuples, dicts, sets and ranges (`"abc".__len__()`,
/// `d.__contains__(k)`), `__next__`/`__iter__` of iterators, and the operator methods
/// of numbers, sequences, sets and dicts (`value_operator`). Objects answer these
/// only through their class, as in Python.
pub(super) fn has_value_dunder(v: &Value, name: &str) -> bool {
    if !name.starts_with("__") {
        return false;
    }
    if is_object_dunder(name) {
        return true;
    }
    if !is_object(v) && value_operator(v, name).is_some() {
        return true;
    }
    match v {
        Value::Str(_)
        | Value::Bytes(_)
        | Value::ByteArray(_)
        | Value::List(_)
        | Value::Tuple(_)
        | Value::Dict(_)
        | Value::Set(_)
        | Value::FrozenSet(_)
        | Value::Range(..) => {
            matches!(
                name,
                "__len__" | "__contains__" | "__getitem__" | "__iter__"
            )
        }
        Value::Iter(..) | Value::Lazy(_) => matches!(name, "__next__" | "__iter__"),
        _ => false,
    }
}

/// Python's `NotImplemented`, the answer of a special method that declines an operand.
pub(super) fn is_not_implemented(v: &Value) -> bool {
    matches!(v, Value::Builtin(n) if &**n == NOT_IMPLEMENTED)
}

/// The symbol of an ordering comparison, for CPython's "not supported" message.
fn compare_symbol(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "<",
        CmpOp::Gt => ">",
        CmpOp::LtE => "<=",
        _ => ">=",
    }
}

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
        // A method that returns `NotImplemented` declines: the reflection is asked, and
        // when both decline the caller raises its "unsupported operand" error.
        match self.call_dunder(a, fwd, vec![b.clone()]) {
            Some(Ok(v)) if is_not_implemented(&v) => {}
            Some(r) => return Some(r),
            None => {}
        }
        match self.call_dunder(b, rev, vec![a.clone()]) {
            Some(Ok(v)) if is_not_implemented(&v) => None,
            r => r,
        }
    }

    /// `a op b` for a comparison through `__eq__`, `__lt__`, ... and their reflections;
    /// `!=` without `__ne__` is the negation of `__eq__`. `None` when no side defines
    /// the method.
    pub(super) fn compare_dunder(&mut self, op: CmpOp, a: &Value, b: &Value) -> Option<R<bool>> {
        let (fwd, rev) = compare_names(op)?;
        // A method that returns `NotImplemented` declines, and the reflection is asked;
        // when every defined method declined, `==` and `!=` are identity and an ordering
        // is CPython's TypeError (answered here, so no method runs twice).
        let mut declined = false;
        for (x, y, name) in [(a, b, fwd), (b, a, rev)] {
            match self.call_dunder(x, name, vec![y.clone()]) {
                Some(Ok(v)) if is_not_implemented(&v) => declined = true,
                Some(r) => return Some(r.and_then(|v| self.truthy(&v))),
                None => {}
            }
        }
        match op {
            CmpOp::NotEq if !declined => self
                .compare_dunder(CmpOp::Eq, a, b)
                .map(|r| r.map(|eq| !eq)),
            _ if !declined => None,
            CmpOp::Eq => Some(Ok(is_same(a, b))),
            CmpOp::NotEq => Some(Ok(!is_same(a, b))),
            _ => Some(Err(self.err(
                "TypeError",
                format!(
                    "'{}' not supported between instances of '{}' and '{}'",
                    compare_symbol(op),
                    self.type_name_of(a),
                    self.type_name_of(b)
                ),
            ))),
        }
    }

    /// `recv.__eq__(x)`, `recv.__ne__(x)`, `recv.__hash__()` for a value whose class
    /// does not define the method: `object`'s (identity, else `NotImplemented`) for
    /// objects, the builtin type's for builtin values (`(1).__eq__(1.0)` declines as
    /// `int.__eq__` does), with CPython's argument errors.
    pub(super) fn object_method(
        &mut self,
        recv: &Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if !kwargs.is_empty() {
            return Err(self.err(
                "TypeError",
                format!("wrapper {name}() takes no keyword arguments"),
            ));
        }
        let operator = if is_object(recv) {
            None
        } else {
            value_operator(recv, name)
        };
        let want = usize::from(
            matches!(name, "__eq__" | "__ne__" | "__contains__" | "__getitem__")
                || matches!(operator, Some(ValueOp::Bin(..) | ValueOp::Cmp(_))),
        );
        // Read from a class (`P.__eq__(a, b)`), the method is unbound: its first
        // argument is the receiver.
        if let Value::Class(_) = recv
            && args.len() == want + 1
        {
            let mut rest = args;
            let first = rest.remove(0);
            return self.object_method(&first, name, rest, kwargs);
        }
        if args.len() != want {
            let plural = if want == 1 { "" } else { "s" };
            return Err(self.err(
                "TypeError",
                format!("expected {want} argument{plural}, got {}", args.len()),
            ));
        }
        let answer = |r: Option<bool>| {
            r.map_or_else(|| Value::Builtin(Rc::from(NOT_IMPLEMENTED)), Value::Bool)
        };
        if let Some(op) = operator {
            return self.value_operator_call(recv, name, op, args.first());
        }
        match (name, args.first()) {
            ("__eq__", Some(other)) => Ok(answer(self.object_eq(recv, other)?)),
            ("__contains__", Some(x)) => Ok(Value::Bool(self.contains(recv, x)?)),
            ("__getitem__", Some(k)) => self.get_item(recv, k),
            ("__str__", _) => Ok(Value::Str(self.to_str(recv)?.into())),
            ("__repr__", _) => Ok(Value::Str(self.repr(recv)?.into())),
            ("__len__", _) => self.call_builtin_fn("len", vec![recv.clone()], vec![]),
            ("__next__", _) => self.call_builtin_fn("next", vec![recv.clone()], vec![]),
            ("__iter__", _) if matches!(recv, Value::Iter(..) | Value::Lazy(_)) => Ok(recv.clone()),
            ("__iter__", _) => self.call_builtin_fn("iter", vec![recv.clone()], vec![]),
            ("__ne__", Some(other)) => {
                // `object.__ne__` asks the class's own `__eq__` when it has one.
                let eq = if is_object(recv)
                    && let Some(f) = self.class_of(recv).find_method("__eq__")
                {
                    let v = self.call_function(
                        &f,
                        Some(recv.clone()),
                        vec![other.clone()],
                        vec![],
                        None,
                    )?;
                    if is_not_implemented(&v) {
                        None
                    } else {
                        Some(self.truthy(&v)?)
                    }
                } else {
                    self.object_eq(recv, other)?
                };
                Ok(answer(eq.map(|e| !e)))
            }
            ("__hash__", _) => Ok(Value::Int(builtins::py_hash(self, recv)?)),
            _ => Err(self.err(
                "AttributeError",
                format!(
                    "'{}' object has no attribute '{name}'",
                    self.type_name_of(recv)
                ),
            )),
        }
    }

    /// `recv.name(arg)` for an operator special method of a builtin value: the operator
    /// itself, or `NotImplemented` where the type declines the operand's type.
    fn value_operator_call(
        &mut self,
        recv: &Value,
        name: &str,
        op: ValueOp,
        arg: Option<&Value>,
    ) -> R<Value> {
        let declined = || Ok(Value::Builtin(Rc::from(NOT_IMPLEMENTED)));
        match (op, arg) {
            (ValueOp::Cmp(op), Some(other)) => {
                if !compares_with(recv, other) {
                    return declined();
                }
                Ok(Value::Bool(self.compare(op, recv, other)?))
            }
            (ValueOp::Bin(op, reflected), Some(other)) => {
                let accepted = match recv {
                    _ if num_rank(recv).is_some() => {
                        num_rank(other).is_some_and(|r| Some(r) <= num_rank(recv))
                    }
                    Value::Set(_) | Value::FrozenSet(_) => is_set(other),
                    Value::Dict(_) => matches!(other, Value::Dict(_)),
                    // A sequence's repeat takes an int (`"a".__mul__("b")` says so).
                    _ if op == BinOp::Mul && num_rank(other) != Some(0) => {
                        let t = self.type_name_of(other);
                        return Err(self.err(
                            "TypeError",
                            format!("'{t}' object cannot be interpreted as an integer"),
                        ));
                    }
                    _ => true,
                };
                if !accepted {
                    return declined();
                }
                if reflected {
                    self.binary_op(op, other, recv)
                } else {
                    self.binary_op(op, recv, other)
                }
            }
            (ValueOp::Unary, _) => match name {
                "__neg__" => self.unary_op(UnaryOp::Neg, recv),
                "__pos__" => self.unary_op(UnaryOp::Pos, recv),
                "__invert__" => self.unary_op(UnaryOp::Invert, recv),
                "__bool__" => Ok(Value::Bool(self.truthy(recv)?)),
                "__index__" => self.call_builtin_fn("int", vec![recv.clone()], vec![]),
                _ => {
                    let f = name.trim_matches('_');
                    self.call_builtin_fn(f, vec![recv.clone()], vec![])
                }
            },
            _ => Err(self.err("TypeError", "expected 1 argument, got 0")),
        }
    }

    /// The builtin `__eq__` of `a` against `b`: `None` (NotImplemented) when `a`'s type
    /// does not compare with `b`'s.
    fn object_eq(&mut self, a: &Value, b: &Value) -> R<Option<bool>> {
        use Value as V;
        let int = |v: &Value| matches!(v, V::Int(_) | V::BigInt(_) | V::Bool(_));
        let comparable = match (a, b) {
            (x, y) if int(x) => int(y),
            (V::Float(_), y) => int(y) || matches!(y, V::Float(_)),
            (V::Str(_), V::Str(_))
            | (V::List(_), V::List(_))
            | (V::Tuple(_), V::Tuple(_))
            | (V::Dict(_), V::Dict(_))
            | (V::Set(_), V::Set(_))
            | (V::Range(..), V::Range(..))
            | (V::None, V::None) => true,
            (V::Instance(_), V::Instance(_)) => {
                Self::stdlib_type_name(a).is_some()
                    && Self::stdlib_type_name(a) == Self::stdlib_type_name(b)
            }
            _ => false,
        };
        if comparable {
            return Ok(Some(self.py_eq(a, b)?));
        }
        Ok(is_same(a, b).then_some(true))
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
