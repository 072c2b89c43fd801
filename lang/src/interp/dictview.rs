//! Dict views (`d.keys()`, `d.values()`, `d.items()`): live objects over the dict, as
//! CPython's, so they print as `dict_keys([...])`, see later changes of the dict, and
//! the keys and items views take the set operators (`&`, `|`, `-`, `^`, comparisons).
//! Everything that walks a view asks it for its items (`DictView::items`), a snapshot
//! like the one a `for` over the dict itself takes.

use super::value::{Dict, IterItems, Set, Value};
use super::{Interp, R};
use crate::ast::{BinOp, CmpOp};
use std::cell::RefCell;
use std::rc::Rc;

/// The dict or set a `for` loop (or comprehension) walks a snapshot of, with its size
/// when the loop started: CPython's iterators raise `RuntimeError` at the next step
/// once the size changed, and so does a loop over the snapshot that checks this.
pub enum SizeWatch {
    Dict(Rc<RefCell<Dict>>, usize),
    Set(Rc<RefCell<Set>>, usize),
}

impl SizeWatch {
    /// The watch for a loop over `v` (a dict, one of its views, or a set).
    pub fn of(v: &Value) -> Option<SizeWatch> {
        match v {
            Value::Dict(d) => Some(SizeWatch::Dict(d.clone(), d.borrow().len())),
            Value::View(view) => Some(SizeWatch::Dict(view.dict.clone(), view.dict.borrow().len())),
            Value::Set(s) => Some(SizeWatch::Set(s.clone(), s.borrow().len())),
            _ => None,
        }
    }

    /// CPython's error once the container's size is not the one the loop started with.
    pub fn check(&self, it: &Interp) -> R<()> {
        let (changed, what) = match self {
            SizeWatch::Dict(d, n) => (d.borrow().len() != *n, "dictionary"),
            SizeWatch::Set(s, n) => (s.borrow().len() != *n, "Set"),
        };
        if changed {
            return Err(it.err(
                "RuntimeError",
                format!("{what} changed size during iteration"),
            ));
        }
        Ok(())
    }
}

/// The items a tree-walker loop (a `for` or a comprehension) walks: a list's read live,
/// anything else's a snapshot, checked against `src`'s size before each step when it is
/// a dict, view or set.
pub struct WatchedItems {
    items: IterItems,
    watch: Option<SizeWatch>,
}

impl WatchedItems {
    pub fn new(it: &mut Interp, src: &Value) -> R<WatchedItems> {
        Ok(WatchedItems {
            items: it.iter_items(src)?,
            watch: SizeWatch::of(src),
        })
    }

    pub fn next(&mut self, it: &Interp) -> R<Option<Value>> {
        if let Some(w) = &self.watch {
            w.check(it)?;
        }
        Ok(self.items.next())
    }
}

/// Which view of a dict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewKind {
    Keys,
    Values,
    Items,
}

/// A view of a dict (`Value::View`).
#[derive(Debug)]
pub struct DictView {
    pub dict: Rc<RefCell<Dict>>,
    pub kind: ViewKind,
}

impl DictView {
    pub fn make(dict: &Rc<RefCell<Dict>>, kind: ViewKind) -> Value {
        Value::View(Rc::new(DictView {
            dict: dict.clone(),
            kind,
        }))
    }

    /// The type name (`dict_keys`, `dict_values`, `dict_items`).
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            ViewKind::Keys => "dict_keys",
            ViewKind::Values => "dict_values",
            ViewKind::Items => "dict_items",
        }
    }

    pub fn len(&self) -> usize {
        self.dict.borrow().len()
    }

    /// The view's items now, in the dict's order.
    pub fn items(&self) -> Vec<Value> {
        let d = self.dict.borrow();
        match self.kind {
            ViewKind::Keys => d.keys().map(|k| k.0.clone()).collect(),
            ViewKind::Values => d.values().cloned().collect(),
            ViewKind::Items => d
                .iter()
                .map(|(k, v)| Value::tuple(vec![k.0.clone(), v.clone()]))
                .collect(),
        }
    }

    /// Keys and items views behave as sets; a values view does not.
    pub fn set_like(&self) -> bool {
        self.kind != ViewKind::Values
    }
}

/// Whether `v` is a keys or items view.
fn set_like_view(v: &Value) -> bool {
    matches!(v, Value::View(w) if w.set_like())
}

impl Interp<'_> {
    /// `x in view`.
    pub(crate) fn view_contains(&mut self, v: &DictView, item: &Value) -> R<bool> {
        match v.kind {
            ViewKind::Keys => {
                let k = self.dict_key(&v.dict, item)?;
                Ok(v.dict.borrow().contains_key(&k))
            }
            ViewKind::Items => {
                let Value::Tuple(t) = item else {
                    return Ok(false);
                };
                if t.len() != 2 {
                    return Ok(false);
                }
                let k = self.dict_key(&v.dict, &t[0])?;
                let found = v.dict.borrow().get(&k).cloned();
                match found {
                    Some(x) => self.py_eq(&x, &t[1]),
                    None => Ok(false),
                }
            }
            ViewKind::Values => {
                for x in v.items() {
                    if self.py_eq(&x, item)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    /// A keys or items view (or any other iterable) as a `set`, for the set operators.
    fn view_operand_set(&mut self, v: &Value) -> R<Value> {
        Ok(match v {
            Value::Set(_) | Value::FrozenSet(_) => v.clone(),
            other => {
                let s = super::builtins::collections::set_of(self, other)?;
                Value::Set(Rc::new(RefCell::new(s)))
            }
        })
    }

    /// `&`, `|`, `-`, `^` with a keys or items view on either side: a `set`, the other
    /// side any iterable (CPython's `dict_keys.__and__` and its reflections). `None`
    /// for anything else, which then fails as an unsupported operand.
    pub(crate) fn view_binop(&mut self, op: BinOp, a: &Value, b: &Value) -> Option<R<Value>> {
        if !matches!(
            op,
            BinOp::BitAnd | BinOp::BitOr | BinOp::Sub | BinOp::BitXor
        ) || !(set_like_view(a) || set_like_view(b))
        {
            return None;
        }
        Some((|| {
            let x = self.view_operand_set(a)?;
            let y = self.view_operand_set(b)?;
            let r = self.binary_op(op, &x, &y)?;
            // `frozenset & dict_keys` is still a `set`, as in CPython.
            Ok(match r {
                Value::FrozenSet(s) => Value::Set(s),
                other => other,
            })
        })())
    }

    /// Comparisons with a view on either side: keys and items views compare as sets
    /// with sets and set-like views (`==` with anything else is false); values views
    /// only by identity. `None` leaves `in`, `is` and the rest to the caller.
    pub(crate) fn view_compare(&mut self, op: CmpOp, a: &Value, b: &Value) -> Option<R<bool>> {
        if !matches!(
            op,
            CmpOp::Eq | CmpOp::NotEq | CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE
        ) {
            return None;
        }
        let setish =
            |v: &Value| matches!(v, Value::Set(_) | Value::FrozenSet(_)) || set_like_view(v);
        if !(setish(a) && setish(b)) {
            return match op {
                CmpOp::Eq => Some(Ok(super::ops::is_same(a, b))),
                CmpOp::NotEq => Some(Ok(!super::ops::is_same(a, b))),
                _ => None,
            };
        }
        Some((|| {
            let x = self.view_operand_set(a)?;
            let y = self.view_operand_set(b)?;
            self.compare(op, &x, &y)
        })())
    }
}

/// Methods of a view: `isdisjoint` on keys and items views.
pub(crate) fn view_method(
    it: &mut Interp,
    v: &Rc<DictView>,
    name: &str,
    args: Vec<Value>,
) -> R<Option<Value>> {
    if name != "isdisjoint" || !v.set_like() {
        return Ok(None);
    }
    if args.len() != 1 {
        return Err(it.err(
            "TypeError",
            format!(
                "{}.isdisjoint() takes exactly one argument ({} given)",
                v.type_name(),
                args.len()
            ),
        ));
    }
    for x in it.iterate(&args[0])? {
        if it.view_contains(v, &x)? {
            return Ok(Some(Value::Bool(false)));
        }
    }
    Ok(Some(Value::Bool(true)))
}
