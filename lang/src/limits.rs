//! Resource limits of one run (`Limits`): a low module the driver, the server side and
//! the interpreter all read, so none of them imports another for it.

use std::time::Duration;

/// Resource limits a host sets on one run; hitting one is a clean svc error.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Maximum depth of svc call frames (functions, abilities, nested spawns).
    pub max_depth: usize,
    /// Maximum number of interpreter operations (statements and calls), if any.
    pub max_ops: Option<u64>,
    /// Wall-clock budget for the whole run, if any. Checked between statements, on
    /// every loop iteration and periodically inside long builtins.
    pub timeout: Option<Duration>,
    /// Largest JSON result a served call may produce (result and reports together).
    pub max_response_bytes: usize,
    /// Set by the host when nobody waits for the run any more (the HTTP client went
    /// away): the run stops at its next check, unless it already committed something.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Largest string one operation may build (repetition, `join`, padding, `%` and
    /// format widths, `replace`, concatenation), in bytes; also bounds the bit length
    /// of int results (`max_string_bytes * 8`, capped at 4,000,000 bits).
    /// Beyond it the operation raises a catchable `MemoryError`.
    pub max_string_bytes: usize,
    /// Largest number of items one list, tuple, dict or set may reach through one
    /// operation or by growing (repetition, materialising a range, comprehensions,
    /// `append`/`extend`/`insert`, item assignment, `add`/`update`); beyond it a
    /// catchable `MemoryError`.
    pub max_collection_items: usize,
    /// Run defs the compiled core can take on it (`interp/vm`); `false` keeps every
    /// body on the tree-walker (`svc run --no-vm`), to compare the two.
    pub vm: bool,
}

/// Default of [`Limits::max_string_bytes`]: 64 MiB.
pub const DEFAULT_MAX_STRING_BYTES: usize = 64 << 20;
/// Default of [`Limits::max_collection_items`].
pub const DEFAULT_MAX_COLLECTION_ITEMS: usize = 10_000_000;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: 1000,
            max_ops: None,
            timeout: None,
            max_response_bytes: 16 << 20,
            cancel: None,
            max_string_bytes: DEFAULT_MAX_STRING_BYTES,
            max_collection_items: DEFAULT_MAX_COLLECTION_ITEMS,
            vm: true,
        }
    }
}
