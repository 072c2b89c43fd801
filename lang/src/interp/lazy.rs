//! Lazy `map`, `filter`, `zip` and `enumerate` objects: each value is computed when the
//! consumer asks for it (a `for` step, `next`, `list`), as CPython's iterators do, so a
//! `break` leaves the rest unrun and an endless generator can be their source.

use super::generator::GenStep;
use super::value::{IterKind, Value};
use super::{Interp, R};
use std::cell::RefCell;
use std::rc::Rc;

/// Which builtin made a lazy iterator (its type name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LazyKind {
    Map,
    Filter,
    Zip,
    Enumerate,
}

impl LazyKind {
    pub fn name(self) -> &'static str {
        match self {
            LazyKind::Map => "map",
            LazyKind::Filter => "filter",
            LazyKind::Zip => "zip",
            LazyKind::Enumerate => "enumerate",
        }
    }
}

/// What a lazy iterator still has to do. Every source is an iterator value (`Iter`,
/// `Generator` or `Lazy`), made by `Interp::iterator_of` when the object was built.
#[derive(Debug)]
enum State {
    Map {
        f: Value,
        srcs: Vec<Value>,
    },
    Filter {
        f: Value,
        src: Value,
    },
    Zip {
        srcs: Vec<Value>,
        strict: bool,
    },
    Enumerate {
        next: i64,
        src: Value,
    },
    /// Exhausted (a source ran out): every later step ends at once.
    Done,
    /// A step is running (its callback asked this iterator for a value again).
    Running,
}

/// A lazy iterator object (`Value::Lazy`).
#[derive(Debug)]
pub struct Lazy {
    pub kind: LazyKind,
    state: RefCell<State>,
}

impl Lazy {
    pub fn map(f: Value, srcs: Vec<Value>) -> Value {
        Self::make(LazyKind::Map, State::Map { f, srcs })
    }

    pub fn filter(f: Value, src: Value) -> Value {
        Self::make(LazyKind::Filter, State::Filter { f, src })
    }

    pub fn zip(srcs: Vec<Value>, strict: bool) -> Value {
        Self::make(LazyKind::Zip, State::Zip { srcs, strict })
    }

    pub fn enumerate(src: Value, start: i64) -> Value {
        Self::make(LazyKind::Enumerate, State::Enumerate { next: start, src })
    }

    fn make(kind: LazyKind, state: State) -> Value {
        Value::Lazy(Rc::new(Lazy {
            kind,
            state: RefCell::new(state),
        }))
    }
}

impl State {
    /// The values this state holds (its function and sources), leaving it `Done`.
    fn take_values(&mut self, out: &mut Vec<Value>) {
        match std::mem::replace(self, State::Done) {
            State::Map { f, srcs } => {
                out.push(f);
                out.extend(srcs);
            }
            State::Filter { f, src } => {
                out.push(f);
                out.push(src);
            }
            State::Zip { srcs, .. } => out.extend(srcs),
            State::Enumerate { src, .. } => out.push(src),
            State::Done | State::Running => {}
        }
    }
}

impl Drop for Lazy {
    /// A chain of lazy objects (`m = map(f, m)` in a loop) is freed with a work list,
    /// not one native frame per link.
    fn drop(&mut self) {
        let mut pending = Vec::new();
        self.state.get_mut().take_values(&mut pending);
        while let Some(v) = pending.pop() {
            if let Value::Lazy(rc) = v
                && let Ok(mut inner) = Rc::try_unwrap(rc)
            {
                inner.state.get_mut().take_values(&mut pending);
            }
        }
    }
}

/// CPython's `zip(strict=True)` messages: argument `i` (0-based, `i >= 1`) ended
/// before (`shorter`) or after the ones before it.
fn zip_strict_message(i: usize, shorter: bool) -> String {
    let which = if shorter { "shorter" } else { "longer" };
    if i == 1 {
        format!("zip() argument 2 is {which} than argument 1")
    } else {
        format!("zip() argument {} is {which} than arguments 1-{}", i + 1, i)
    }
}

impl Interp<'_> {
    /// The iterator that walks `v` for a lazy object: iterators are used as they are
    /// (so the lazy object consumes them), anything else is read into items now.
    pub(crate) fn iterator_of(&mut self, v: &Value) -> R<Value> {
        Ok(match v {
            Value::Iter(..) | Value::Generator(_) | Value::Lazy(_) => v.clone(),
            other => Value::Iter(
                Rc::new(RefCell::new(self.iter_items(other)?)),
                IterKind::of(other, false),
            ),
        })
    }

    /// The next value of an iterator value (`Iter`, `Generator`, `Lazy`), or `None`
    /// once it is exhausted. Anything else is `None` (callers pass iterators only).
    pub(crate) fn iter_step(&mut self, it: &Value) -> R<Option<Value>> {
        match it {
            Value::Iter(i, _) => Ok(i.borrow_mut().next()),
            Value::Generator(g) => Ok(match self.gen_resume(g, Value::None)? {
                GenStep::Yielded(v) => Some(v),
                GenStep::Returned(_) => None,
            }),
            Value::Lazy(l) => self.lazy_next(l),
            _ => Ok(None),
        }
    }

    /// One step of a lazy object. The state is taken out while the step runs, so a
    /// callback that asks the same object again gets CPython's `ValueError` for a
    /// running generator instead of a double borrow.
    pub(crate) fn lazy_next(&mut self, l: &Rc<Lazy>) -> R<Option<Value>> {
        let state = std::mem::replace(&mut *l.state.borrow_mut(), State::Running);
        if matches!(state, State::Running) {
            return Err(self.err(
                "ValueError",
                format!("{} object already executing", l.kind.name()),
            ));
        }
        let mut state = state;
        // Lazy objects over lazy objects recurse natively, one level each: bounded
        // by the recursion limit as nested calls are.
        let out = if self.depth >= self.limits.max_depth {
            Err(self.err("RecursionError", "maximum recursion depth exceeded"))
        } else {
            self.depth += 1;
            let r = self.lazy_step(&mut state);
            self.depth -= 1;
            r
        };
        if out.as_ref().is_ok_and(Option::is_none) {
            state = State::Done;
        }
        *l.state.borrow_mut() = state;
        out
    }

    fn lazy_step(&mut self, state: &mut State) -> R<Option<Value>> {
        self.poll()?;
        match state {
            State::Done | State::Running => Ok(None),
            State::Map { f, srcs } => {
                let mut row = Vec::with_capacity(srcs.len());
                for s in srcs.iter() {
                    match self.iter_step(s)? {
                        Some(v) => row.push(v),
                        None => return Ok(None),
                    }
                }
                let f = f.clone();
                self.call_value(&f, row, Vec::new()).map(Some)
            }
            State::Filter { f, src } => loop {
                let Some(v) = self.iter_step(src)? else {
                    return Ok(None);
                };
                let keep = if f.is_none() {
                    self.truthy(&v)?
                } else {
                    let f = f.clone();
                    let r = self.call_value(&f, vec![v.clone()], Vec::new())?;
                    self.truthy(&r)?
                };
                if keep {
                    return Ok(Some(v));
                }
                self.poll()?;
            },
            State::Zip { srcs, strict } => {
                if srcs.is_empty() {
                    return Ok(None);
                }
                let mut row = Vec::with_capacity(srcs.len());
                for (i, s) in srcs.iter().enumerate() {
                    match self.iter_step(s)? {
                        Some(v) => row.push(v),
                        None => {
                            if !*strict {
                                return Ok(None);
                            }
                            if i > 0 {
                                return Err(self.err("ValueError", zip_strict_message(i, true)));
                            }
                            // The first ended: every other must end here too.
                            for (j, other) in srcs.iter().enumerate().skip(1) {
                                if self.iter_step(other)?.is_some() {
                                    return Err(
                                        self.err("ValueError", zip_strict_message(j, false))
                                    );
                                }
                            }
                            return Ok(None);
                        }
                    }
                }
                Ok(Some(Value::tuple(row)))
            }
            State::Enumerate { next, src } => {
                let Some(v) = self.iter_step(src)? else {
                    return Ok(None);
                };
                let i = *next;
                *next = i.saturating_add(1);
                Ok(Some(Value::tuple(vec![Value::Int(i), v])))
            }
        }
    }

    /// Step iterator value `it` until `pred` holds for a value (true) or it is
    /// exhausted (false), as `any`, `all` and `in` consume an iterator: the rest stays
    /// unrun.
    pub(crate) fn iter_find(
        &mut self,
        it: &Value,
        pred: &mut dyn FnMut(&mut Self, &Value) -> R<bool>,
    ) -> R<bool> {
        if let Value::Generator(g) = it {
            return self.gen_find(g, pred);
        }
        while let Some(v) = self.iter_step(it)? {
            self.poll()?;
            if pred(self, &v)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Every remaining value of a lazy object (`list(m)`, `sorted(m)`, ...), bounded
    /// by the item limit as a generator's are.
    pub(crate) fn lazy_collect(&mut self, l: &Rc<Lazy>) -> R<Vec<Value>> {
        let mut out = Vec::new();
        while let Some(v) = self.lazy_next(l)? {
            out.push(v);
            self.check_items(out.len())?;
        }
        Ok(out)
    }
}
