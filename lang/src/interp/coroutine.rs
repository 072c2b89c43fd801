//! Coroutines: `async def`, `async can`, `async walker` and `await`.
//!
//! svc runs programs sequentially (one interpreter per call, no event loop), so a
//! coroutine is a *pending* piece of work that runs to its end when it is awaited:
//! calling an `async` function binds nothing and runs nothing, it returns a coroutine
//! holding the callee and its arguments (`root spawn W()` of an `async walker` runs at
//! once, svc's earlier decision, and awaiting the walker returns it); `await c` runs it now and gives its result, and a second
//! `await` of the same coroutine is CPython's `RuntimeError`. `asyncio.run(c)` awaits
//! from synchronous code, `asyncio.sleep(d)` is a coroutine that sleeps (counting
//! against the run's time limit like `time.sleep`), and `asyncio.gather(*aws)` awaits
//! each in order and returns the list of results. Because nothing interleaves,
//! `gather` of coroutines that print around an `await asyncio.sleep(0)` prints each
//! coroutine's lines together rather than interleaved (a documented difference from
//! CPython's event loop); the results are the same.
//!
//! Walker abilities (`async can ... with T entry`) run when the walk reaches them, in
//! both async and plain walkers (jaclang drops the ability of a plain walker with a
//! "never awaited" warning; svc runs it, as its author meant).
//!
//! Nesting: an awaited coroutine runs through `call_function`, so chains of awaits
//! count against the call-depth limit like calls do.

use super::value::*;
use super::{Interp, R};
use std::cell::RefCell;
use std::rc::Rc;

/// A coroutine object.
pub struct Coroutine {
    pub name: Rc<str>,
    state: RefCell<State>,
}

enum State {
    /// A call of an `async` function, not yet started.
    Call {
        func: Rc<Function>,
        this: Option<Value>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    },
    /// `asyncio.sleep(delay, result)`.
    Sleep(Value, Value),
    /// `asyncio.gather(*aws)`.
    Gather(Vec<Value>),
    Running,
    Done,
}

fn make(name: &str, state: State) -> Value {
    Value::Coroutine(Rc::new(Coroutine {
        name: Rc::from(name),
        state: RefCell::new(state),
    }))
}

/// `v` is an `async walker` (its class or an instance).
fn is_async_walker(v: &Value) -> bool {
    match v {
        Value::Instance(i) => i.class.is_async && i.class.is_walker(),
        Value::Class(c) => c.is_async && c.is_walker(),
        _ => false,
    }
}

/// `asyncio.sleep(delay, result)`.
pub(super) fn sleep(delay: Value, result: Value) -> Value {
    make("sleep", State::Sleep(delay, result))
}

/// `asyncio.gather(*aws)`.
pub(super) fn gather(aws: Vec<Value>) -> Value {
    make("gather", State::Gather(aws))
}

impl Interp<'_> {
    /// The coroutine of a call of an `async` function.
    pub(super) fn defer_call(
        &mut self,
        func: &Rc<Function>,
        this: Option<Value>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> Value {
        make(
            &func.name,
            State::Call {
                func: func.clone(),
                this,
                args,
                kwargs,
            },
        )
    }

    /// `await v`: run a coroutine to its end and give its result.
    pub(super) fn await_value(&mut self, v: Value) -> R<Value> {
        // `spawn` of an `async walker` runs at once (the issue-8 decision, fixture
        // `walkers/async_forms`); awaiting the walker it gave is a no-op.
        if is_async_walker(&v) {
            return Ok(v);
        }
        let Value::Coroutine(c) = &v else {
            let t = self.type_name_of(&v);
            return Err(self.err(
                "TypeError",
                format!("object {t} can't be used in 'await' expression"),
            ));
        };
        let state = std::mem::replace(&mut *c.state.borrow_mut(), State::Running);
        let result = match state {
            State::Running => {
                return Err(self.err("RuntimeError", "coroutine is being awaited already"));
            }
            State::Done => {
                *c.state.borrow_mut() = State::Done;
                return Err(self.err("RuntimeError", "cannot reuse already awaited coroutine"));
            }
            State::Call {
                func,
                this,
                args,
                kwargs,
            } => {
                if matches!(&*func.body.borrow(), FuncBody::Generator(_)) {
                    *c.state.borrow_mut() = State::Done;
                    return Err(self.err(
                        "TypeError",
                        "object async_generator can't be used in 'await' expression",
                    ));
                }
                self.run_async = true;
                let r = self.call_function(&func, this, args, kwargs, None);
                self.run_async = false;
                r
            }
            State::Sleep(delay, result) => self.async_sleep(&delay).map(|()| result),
            State::Gather(aws) => {
                let mut out = Vec::with_capacity(aws.len());
                let mut r = Ok(());
                for aw in aws {
                    match self.await_value(aw) {
                        Ok(x) => out.push(x),
                        Err(e) => {
                            r = Err(e);
                            break;
                        }
                    }
                }
                r.map(|()| Value::list(out))
            }
        };
        *c.state.borrow_mut() = State::Done;
        result
    }

    fn async_sleep(&mut self, delay: &Value) -> R<()> {
        let secs = match delay {
            Value::Int(_) | Value::Bool(_) | Value::Float(_) | Value::BigInt(_) => {
                self.num_arg(delay)?
            }
            other => {
                let t = self.type_name_of(other);
                return Err(self.err(
                    "TypeError",
                    format!("'<=' not supported between instances of '{t}' and 'int'"),
                ));
            }
        };
        if secs.is_nan() || secs <= 0.0 {
            return Ok(());
        }
        self.call_stdlib("time.sleep", vec![delay.clone()], vec![])
            .map(|_| ())
    }
}
