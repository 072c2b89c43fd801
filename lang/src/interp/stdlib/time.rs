//! `time`: `time`, `time_ns`, `monotonic`, `perf_counter` and `sleep`, all through the
//! `Host`. A sleep counts against the run's time limit: one that would pass the
//! deadline sleeps up to it and then fails with the time-limit error; without a
//! deadline one call sleeps at most [`MAX_SLEEP_SECS`].

use super::super::value::*;
use super::super::{Interp, Interrupt, R};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// The longest single `time.sleep` of a run without a time limit (svc's bound).
pub const MAX_SLEEP_SECS: f64 = 86_400.0;

/// A sleep is taken in slices this long, so a cancelled run stops promptly.
const SLICE: Duration = Duration::from_millis(50);

impl Interp<'_> {
    pub(super) fn call_time(
        &mut self,
        func: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if func != "sleep" {
            if !args.is_empty() || !kwargs.is_empty() {
                return Err(self.err(
                    "TypeError",
                    format!("time.{func}() takes no arguments ({} given)", args.len()),
                ));
            }
            return Ok(match func {
                "time" => Value::Float(self.host.unix_time_nanos() as f64 / 1e9),
                "time_ns" => Value::from_bigint(self.host.unix_time_nanos().into()),
                "monotonic" | "perf_counter" => {
                    Value::Float(self.host.monotonic_nanos() as f64 / 1e9)
                }
                "monotonic_ns" | "perf_counter_ns" => {
                    Value::from_bigint(self.host.monotonic_nanos().into())
                }
                _ => {
                    return Err(self.err(
                        "AttributeError",
                        format!("module 'time' has no attribute '{func}'"),
                    ));
                }
            });
        }
        let secs = match self.one_positional("time.sleep", &args, &kwargs)? {
            v @ (Value::Int(_) | Value::Bool(_) | Value::Float(_) | Value::BigInt(_)) => {
                self.num_arg(v)?
            }
            other => {
                return Err(self.err(
                    "TypeError",
                    format!(
                        "'{}' object cannot be interpreted as an integer",
                        self.type_name_of(other)
                    ),
                ));
            }
        };
        if secs.is_nan() {
            return Err(self.err("ValueError", "Invalid value NaN (not a number)"));
        }
        if secs < 0.0 {
            return Err(self.err("ValueError", "sleep length must be non-negative"));
        }
        let want = Duration::from_secs_f64(secs.min(MAX_SLEEP_SECS));
        let start = Instant::now();
        let until = start + want;
        let mut past_deadline = false;
        let end = match self.deadline {
            Some(d) if d < until => {
                past_deadline = true;
                d
            }
            _ => until,
        };
        // Counted in slices rather than read back from the clock, so a host whose
        // `sleep` returns at once (a test) does not spin.
        let total = end.saturating_duration_since(start);
        let mut slept = Duration::ZERO;
        while slept < total {
            if let Some(c) = &self.limits.cancel
                && c.load(std::sync::atomic::Ordering::Relaxed)
            {
                return Err(Interrupt::Limit(super::super::CANCELLED.into()));
            }
            let step = (total - slept).min(SLICE);
            self.host.sleep(step);
            slept += step;
        }
        if past_deadline {
            return Err(Interrupt::Limit("time budget exceeded".into()));
        }
        Ok(Value::None)
    }
}
