//! Coroutines: `async def`, `async can`, `async walker` and `await`, and the event loop
//! that runs them.
//!
//! Calling an `async` function binds nothing and runs nothing: it returns a coroutine
//! holding the callee and its arguments (`root spawn W()` of an `async walker` runs at
//! once, svc's earlier decision, and awaiting the walker returns it). An `async def`
//! body holding `await` is compiled as a generator whose awaits suspend it
//! (`generator::compile_coroutine`); [`Interp::async_run`] is the event loop that runs
//! such coroutines as tasks, interleaving them at their awaits as CPython's `asyncio`
//! does on one thread: `asyncio.sleep` parks a task until the loop's clock reaches its
//! wake time, `asyncio.gather` starts one task per awaitable and resumes the gathering
//! task with their results. A coroutine whose body cannot suspend (no `await`) runs to
//! its end when awaited. A second `await` of the same coroutine is CPython's
//! `RuntimeError`.
//!
//! Walker abilities (`async can ... with T entry`) run when the walk reaches them, in
//! both async and plain walkers (jaclang drops the ability of a plain walker with a
//! "never awaited" warning; svc runs it, as its author meant); their awaits run each
//! awaitable to its end.
//!
//! Nesting: coroutines awaiting one another in a task are a vector of generators, so a
//! chain of awaits costs heap, not native stack.

use super::generator::GenStep;
use super::value::*;
use super::{Interp, Interrupt, PyErr, R};
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

/// How the event loop starts an awaitable (`Interp::async_start`).
enum Start {
    Gen(Rc<super::generator::Generator>),
    Sleep(f64, Value),
    Gather(Vec<Value>),
    Value(R<Value>),
}

/// What a task gives its top generator when it runs next.
enum Resume {
    /// Start the task's awaitable (a gathered coroutine, or the loop's root).
    Start(Value),
    Send(Value),
    /// Raise this at the suspended await.
    Throw(Box<PyErr>),
}

/// A gather waiting for its tasks.
struct Gather {
    pending: usize,
    results: Vec<Value>,
}

/// One task of the event loop: the generators of the coroutines awaiting one another,
/// innermost last.
struct Task {
    stack: Vec<Rc<super::generator::Generator>>,
    resume: Resume,
    waiting: Option<Gather>,
    /// The gathering task and this task's place in its results.
    parent: Option<(usize, usize)>,
}

impl Task {
    fn new(resume: Resume, parent: Option<(usize, usize)>) -> Task {
        Task {
            stack: Vec::new(),
            resume,
            waiting: None,
            parent,
        }
    }
}

/// The event loop's state (`Interp::async_run`).
struct Loop {
    tasks: Vec<Task>,
    ready: std::collections::VecDeque<usize>,
    /// Sleeping tasks, earliest first: wake time (nanoseconds of the loop's clock),
    /// the order they slept in (ties), task.
    timers: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u64, usize)>>,
    /// The loop's clock (nanoseconds since it started, advanced by its sleeps).
    now: u64,
    seq: u64,
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
            } if !matches!(&*func.body.borrow(), FuncBody::Generator(_)) => {
                self.run_async = true;
                let r = self.call_function(&func, this, args, kwargs, None);
                self.run_async = false;
                r
            }
            // A coroutine that suspends at its awaits, a sleep or a gather: the event
            // loop runs it (and whatever it gathers) to its end.
            other => {
                *c.state.borrow_mut() = other;
                return self.async_run(v.clone());
            }
        };
        *c.state.borrow_mut() = State::Done;
        result
    }

    /// How the loop starts an awaitable `aw`: a suspending coroutine's generator (the
    /// coroutine is marked done: a second await is CPython's error), a sleep, a gather,
    /// or anything else awaited at once (a coroutine that runs to its end, an `async
    /// walker`, or the await's error).
    fn async_start(&mut self, aw: Value) -> R<Start> {
        if let Value::Coroutine(c) = &aw {
            let state = std::mem::replace(&mut *c.state.borrow_mut(), State::Running);
            match state {
                State::Call {
                    func,
                    this,
                    args,
                    kwargs,
                } if matches!(&*func.body.borrow(), FuncBody::Generator(_)) => {
                    *c.state.borrow_mut() = State::Done;
                    self.run_async = true;
                    let g = self.call_function(&func, this, args, kwargs, None);
                    self.run_async = false;
                    return match g? {
                        Value::Generator(g) => Ok(Start::Gen(g)),
                        other => Ok(Start::Value(Ok(other))),
                    };
                }
                State::Sleep(delay, result) => {
                    *c.state.borrow_mut() = State::Done;
                    let secs = self.sleep_secs(&delay)?;
                    return Ok(Start::Sleep(secs, result));
                }
                State::Gather(aws) => {
                    *c.state.borrow_mut() = State::Done;
                    return Ok(Start::Gather(aws));
                }
                other => *c.state.borrow_mut() = other,
            }
        }
        Ok(Start::Value(self.await_value(aw)))
    }

    /// The event loop: run the awaitable `root` to its end, with every coroutine it
    /// gathers, as CPython's `asyncio` does on one thread: a task runs until it awaits
    /// a sleep or a gather, ready tasks run in the order they became ready, sleeping
    /// ones wake in the order of their wake times (the loop sleeps until the first,
    /// which counts against the run's time limit). A coroutine awaiting another runs
    /// it in the same task (a stack of generators); an exception leaving a coroutine is
    /// raised at its awaiter's `await`, and one leaving a gathered task at the
    /// gather's. Everything is on the heap: nesting costs no native stack.
    pub(super) fn async_run(&mut self, root: Value) -> R<Value> {
        let mut lp = Loop {
            tasks: vec![Task::new(Resume::Start(root), None)],
            ready: std::collections::VecDeque::from([0]),
            timers: std::collections::BinaryHeap::new(),
            now: 0,
            seq: 0,
        };
        loop {
            let Some(t) = lp.ready.pop_front() else {
                // Nothing ready: wake the first sleeper (sleeping until its time).
                let Some(std::cmp::Reverse((wake, _, t))) = lp.timers.pop() else {
                    return Err(self.err(
                        "RuntimeError",
                        "event loop stopped before the coroutine finished",
                    ));
                };
                if wake > lp.now {
                    self.async_sleep((wake - lp.now) as f64 / 1e9)?;
                    lp.now = wake;
                }
                lp.ready.push_back(t);
                // Every sleeper due at the same time wakes in this round, in the order
                // they slept (CPython moves all due timers to its ready queue at once, so
                // a task they wake runs before a gather its first one completes).
                while let Some(std::cmp::Reverse((w, _, _))) = lp.timers.peek()
                    && *w <= lp.now
                {
                    if let Some(std::cmp::Reverse((_, _, t))) = lp.timers.pop() {
                        lp.ready.push_back(t);
                    }
                }
                continue;
            };
            if let Some(result) = self.async_step(&mut lp, t)? {
                return result.map_err(Interrupt::Exc);
            }
        }
    }

    /// Run task `t` until it parks (sleep, gather) or ends; `Some` with the root's
    /// outcome when the root task ended.
    fn async_step(&mut self, lp: &mut Loop, t: usize) -> R<Option<Result<Value, Box<PyErr>>>> {
        let mut resume = std::mem::replace(&mut lp.tasks[t].resume, Resume::Send(Value::None));
        loop {
            self.poll()?;
            // What the top generator gives next: an awaitable, or its end.
            let step: Result<GenStep, Box<PyErr>> = match resume {
                Resume::Start(aw) => Ok(GenStep::Yielded(aw)),
                Resume::Send(_) | Resume::Throw(_) => {
                    let (sent, throw) = match resume {
                        Resume::Throw(e) => (Value::None, Some(e)),
                        Resume::Send(v) | Resume::Start(v) => (v, None),
                    };
                    let Some(g) = lp.tasks[t].stack.last().cloned() else {
                        // The task's own awaitable finished (a task started on a sleep,
                        // a gather or a coroutine that ran at once).
                        return Ok(self.async_finish(lp, t, throw.map_or(Ok(sent), Err)));
                    };
                    match self.gen_resume_with(&g, sent, throw) {
                        Ok(s) => Ok(s),
                        Err(Interrupt::Exc(e)) => Err(e),
                        Err(other) => return Err(other),
                    }
                }
            };
            match step {
                Ok(GenStep::Yielded(aw)) => match self.async_start(aw) {
                    Ok(Start::Gen(g)) => {
                        lp.tasks[t].stack.push(g);
                        resume = Resume::Send(Value::None);
                    }
                    Ok(Start::Value(Ok(v))) => resume = Resume::Send(v),
                    Ok(Start::Value(Err(Interrupt::Exc(e)))) | Err(Interrupt::Exc(e)) => {
                        resume = Resume::Throw(e);
                    }
                    Ok(Start::Value(Err(other))) | Err(other) => return Err(other),
                    Ok(Start::Sleep(secs, result)) => {
                        lp.tasks[t].resume = Resume::Send(result);
                        if secs > 0.0 {
                            lp.seq += 1;
                            // Saturating: a delay past u64 nanoseconds waits "forever"
                            // (the run's time limit ends it).
                            let wake = lp.now.saturating_add((secs * 1e9) as u64);
                            lp.timers.push(std::cmp::Reverse((wake, lp.seq, t)));
                        } else {
                            lp.ready.push_back(t);
                        }
                        return Ok(None);
                    }
                    Ok(Start::Gather(aws)) => {
                        if aws.is_empty() {
                            resume = Resume::Send(Value::list(Vec::new()));
                            continue;
                        }
                        lp.tasks[t].waiting = Some(Gather {
                            pending: aws.len(),
                            results: vec![Value::None; aws.len()],
                        });
                        for (i, aw) in aws.into_iter().enumerate() {
                            lp.tasks.push(Task::new(Resume::Start(aw), Some((t, i))));
                            lp.ready.push_back(lp.tasks.len() - 1);
                        }
                        return Ok(None);
                    }
                },
                Ok(GenStep::Returned(v)) => {
                    lp.tasks[t].stack.pop();
                    if lp.tasks[t].stack.is_empty() {
                        return Ok(self.async_finish(lp, t, Ok(v)));
                    }
                    resume = Resume::Send(v);
                }
                Err(e) => {
                    lp.tasks[t].stack.pop();
                    if lp.tasks[t].stack.is_empty() {
                        return Ok(self.async_finish(lp, t, Err(e)));
                    }
                    resume = Resume::Throw(e);
                }
            }
        }
    }

    /// Task `t` ended with `outcome`: the root's is the loop's; a gathered task's goes
    /// to its gather (the list once all are done; the first exception at once).
    fn async_finish(
        &mut self,
        lp: &mut Loop,
        t: usize,
        outcome: Result<Value, Box<PyErr>>,
    ) -> Option<Result<Value, Box<PyErr>>> {
        let Some((parent, i)) = lp.tasks[t].parent else {
            return Some(outcome);
        };
        let Some(wait) = lp.tasks[parent].waiting.as_mut() else {
            // The gather already failed: this task's outcome goes nowhere.
            return None;
        };
        match outcome {
            Ok(v) => {
                wait.results[i] = v;
                wait.pending -= 1;
                if wait.pending == 0 {
                    let results = std::mem::take(&mut wait.results);
                    lp.tasks[parent].waiting = None;
                    lp.tasks[parent].resume = Resume::Send(Value::list(results));
                    lp.ready.push_back(parent);
                }
            }
            Err(e) => {
                lp.tasks[parent].waiting = None;
                lp.tasks[parent].resume = Resume::Throw(e);
                lp.ready.push_back(parent);
            }
        }
        None
    }

    /// `asyncio.sleep`'s delay in seconds (CPython's error for a non-number).
    fn sleep_secs(&mut self, delay: &Value) -> R<f64> {
        match delay {
            Value::Int(_) | Value::Bool(_) | Value::Float(_) | Value::BigInt(_) => {
                let s = self.num_arg(delay)?;
                Ok(if s.is_nan() { 0.0 } else { s })
            }
            other => {
                let t = self.type_name_of(other);
                Err(self.err(
                    "TypeError",
                    format!("'<=' not supported between instances of '{t}' and 'int'"),
                ))
            }
        }
    }

    /// The loop's real sleep until its next wake time (counts against the run's time
    /// limit, as `time.sleep` does).
    fn async_sleep(&mut self, secs: f64) -> R<()> {
        if secs.is_nan() || secs <= 0.0 {
            return Ok(());
        }
        self.call_stdlib("time.sleep", vec![Value::Float(secs)], vec![])
            .map(|_| ())
    }
}
