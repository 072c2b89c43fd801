//! Native services a host process plugs into the interpreter's hosts: the seam through
//! which `Host::call_native` reaches things that live outside `lang` and `actors` (the
//! event broker of the binary today). Both the server's per-call host and `svc run`'s
//! `RunHost` forward unknown-to-them natives here.

use lang::host::HostError;
use serde_json::Value as Json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Who is calling a native: the run's trace id and its cancel flag.
#[derive(Clone, Copy, Debug, Default)]
pub struct NativeCall<'a> {
    /// The calling run's trace id (empty under `svc run`).
    pub trace_id: &'a str,
    /// Set when the run is cancelled (its requester went away, shutdown): a native that
    /// waits should check it every few tens of milliseconds and return early.
    pub cancel: Option<&'a AtomicBool>,
    /// The calling request's `Authorization` header, if any (forwarded by sv calls).
    pub authorization: Option<&'a str>,
}

impl NativeCall<'_> {
    pub fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }
}

/// A provider of native builtins (`publish`, `broker.consume`, ...). Called on the
/// interpreter's thread: an implementation must not block longer than the call asks
/// (a `consume` waits at most its timeout, which the interpreter caps at the run's
/// remaining time).
pub trait Natives: Send + Sync {
    /// Answer native `name` with `args`; `None` = not provided here.
    fn call(
        &self,
        name: &str,
        args: &[Json],
        call: NativeCall<'_>,
    ) -> Option<Result<Json, HostError>>;
}

/// A shareable `Natives` (cheap to clone, `Debug` for configuration structs).
#[derive(Clone)]
pub struct NativesHandle(pub Arc<dyn Natives>);

impl NativesHandle {
    pub fn new(natives: impl Natives + 'static) -> NativesHandle {
        NativesHandle(Arc::new(natives))
    }

    pub fn call(
        &self,
        name: &str,
        args: &[Json],
        call: NativeCall<'_>,
    ) -> Option<Result<Json, HostError>> {
        self.0.call(name, args, call)
    }
}

impl std::fmt::Debug for NativesHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NativesHandle")
    }
}

/// Several providers asked in turn: the first that knows a name answers it (the server
/// plugs in storage and the event broker together).
pub struct Chain(pub Vec<NativesHandle>);

impl Natives for Chain {
    fn call(
        &self,
        name: &str,
        args: &[Json],
        call: NativeCall<'_>,
    ) -> Option<Result<Json, HostError>> {
        self.0.iter().find_map(|n| n.call(name, args, call))
    }
}

/// One handle for `providers` (`None` when there are none; the one itself when alone).
pub fn chain(mut providers: Vec<NativesHandle>) -> Option<NativesHandle> {
    match providers.len() {
        0 => None,
        1 => providers.pop(),
        _ => Some(NativesHandle::new(Chain(providers))),
    }
}
