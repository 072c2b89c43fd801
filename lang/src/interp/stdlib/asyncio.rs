//! `asyncio`: `run`, `sleep` and `gather`, run by svc's event loop
//! (`interp/coroutine.rs` has the model).

use super::super::value::*;
use super::super::{Interp, R};
use std::rc::Rc;

impl Interp<'_> {
    pub(super) fn call_asyncio(
        &mut self,
        func: &str,
        mut args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        match func {
            "run" => {
                // `debug=` and `loop_factory=` change nothing here.
                if let Some((k, _)) = kwargs
                    .iter()
                    .find(|(k, _)| !matches!(&**k, "debug" | "loop_factory"))
                {
                    return Err(self.err(
                        "TypeError",
                        format!("run() got an unexpected keyword argument '{k}'"),
                    ));
                }
                if args.len() != 1 {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "run() takes 1 positional argument but {} were given",
                            args.len()
                        ),
                    ));
                }
                let main = args.pop().unwrap_or(Value::None);
                if !matches!(main, Value::Coroutine(_)) {
                    let r = self.repr(&main)?;
                    return Err(
                        self.err("ValueError", format!("a coroutine was expected, got {r}"))
                    );
                }
                self.await_value(main)
            }
            "sleep" => {
                let mut delay = None;
                let mut result = Value::None;
                for (k, v) in kwargs {
                    match &*k {
                        "delay" if delay.is_none() => delay = Some(v),
                        "result" => result = v,
                        _ => {
                            return Err(self.err(
                                "TypeError",
                                format!("sleep() got an unexpected keyword argument '{k}'"),
                            ));
                        }
                    }
                }
                if args.len() > 2 {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "sleep() takes from 1 to 2 positional arguments but {} were given",
                            args.len()
                        ),
                    ));
                }
                let mut it = args.into_iter();
                if let Some(d) = it.next() {
                    delay = Some(d);
                }
                if let Some(r) = it.next() {
                    result = r;
                }
                let Some(delay) = delay else {
                    return Err(self.err(
                        "TypeError",
                        "sleep() missing 1 required positional argument: 'delay'",
                    ));
                };
                Ok(super::super::coroutine::sleep(delay, result))
            }
            "gather" => {
                if let Some((k, _)) = kwargs.iter().find(|(k, _)| &**k != "return_exceptions") {
                    return Err(self.err(
                        "TypeError",
                        format!("gather() got an unexpected keyword argument '{k}'"),
                    ));
                }
                if let Some(bad) = args.iter().find(|a| !matches!(a, Value::Coroutine(_))) {
                    let _ = bad;
                    return Err(self.err(
                        "TypeError",
                        "An asyncio.Future, a coroutine or an awaitable is required",
                    ));
                }
                Ok(super::super::coroutine::gather(args))
            }
            _ => Err(self.err(
                "AttributeError",
                format!("module 'asyncio' has no attribute '{func}'"),
            )),
        }
    }
}
