//! Entry points used by the CLI, the server and the MCP tools: check or run a file.

use crate::diag::Diagnostic;
use crate::host::Host;
use crate::interp::Interp;
use crate::span::SourceFile;
use std::path::Path;
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
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub limits: Limits,
}

/// The result of `check_file`.
#[derive(Clone, Debug, Default)]
pub struct CheckOutcome {
    /// Every diagnostic rendered rustc-style, in file order, separated by blank lines.
    pub rendered: String,
    pub errors: usize,
    pub warnings: usize,
}

/// The result of `run_file`.
#[derive(Clone, Debug, Default)]
pub struct RunOutcome {
    /// `None` on success; otherwise the full text for stderr (diagnostics, or the runtime
    /// error with its svc traceback). The process exits 1 when this is `Some`.
    pub error: Option<String>,
}

/// Whether a diagnostic stops `svc run` before any code runs: the structural errors a
/// compiler rejects (the `fatal` column of `diag::codes`). Everything else the checker
/// finds (an undefined name, a wrong arity, a trigger that is not a type) surfaces at
/// run time as the svc exception Python semantics give, when and if the code is
/// reached; `svc check` reports all.
pub(crate) fn is_fatal(d: &crate::diag::Diagnostic) -> bool {
    d.is_error() && d.code.is_fatal()
}

/// Stack size the CLI and server give the thread that runs the interpreter: deep svc
/// recursion (up to `Limits::max_depth` frames) must never overflow the native stack.
pub const INTERPRETER_STACK_BYTES: usize = 512 << 20;

fn read_source(path: &Path, host: &mut dyn Host) -> Result<String, String> {
    match host.read_module(path) {
        Some(t) => Ok(t),
        None => Err(format!("error: cannot read '{}'", path.display())),
    }
}

fn render_all(diags: &[Diagnostic], file: &SourceFile) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(&d.render(file));
        out.push('\n');
    }
    out
}

/// Parse and check `path` and the `.svc` modules it imports.
pub fn check_file(path: &Path, host: &mut dyn Host) -> CheckOutcome {
    let text = match read_source(path, host) {
        Ok(t) => t,
        Err(e) => {
            return CheckOutcome {
                rendered: e + "\n",
                errors: 1,
                warnings: 0,
            };
        }
    };
    let file = SourceFile::new(path.display().to_string(), text);
    let mut diags = crate::parser::parse(&file.text).diagnostics;
    if !diags.iter().any(Diagnostic::is_error) {
        let module = crate::parser::parse(&file.text).module;
        diags.extend(crate::checker::check_module(&module, path, host));
    }
    diags.sort_by_key(|d| (d.span.start, d.severity));
    let errors = diags.iter().filter(|d| d.is_error()).count();
    CheckOutcome {
        rendered: render_all(&diags, &file),
        errors,
        warnings: diags.len() - errors,
    }
}

/// Parse, check and run `path`: module-level code and `with entry` blocks, printing
/// through the host and committing graph changes through it at the end.
pub fn run_file(path: &Path, host: &mut dyn Host, options: &RunOptions) -> RunOutcome {
    let text = match read_source(path, host) {
        Ok(t) => t,
        Err(e) => {
            return RunOutcome {
                error: Some(e + "\n"),
            };
        }
    };
    run_source(path, text, host, options)
}

/// Like `run_file`, with the source given as a string (`path` names it and anchors
/// imports).
pub fn run_source(
    path: &Path,
    text: String,
    host: &mut dyn Host,
    options: &RunOptions,
) -> RunOutcome {
    let file = SourceFile::new(path.display().to_string(), text);
    let parsed = crate::parser::parse(&file.text);
    let mut diags: Vec<Diagnostic> = parsed
        .diagnostics
        .into_iter()
        .filter(Diagnostic::is_error)
        .collect();
    if diags.is_empty() {
        diags.extend(
            crate::checker::check_module(&parsed.module, path, host)
                .into_iter()
                .filter(is_fatal),
        );
    }
    if !diags.is_empty() {
        return RunOutcome {
            error: Some(render_all(&diags, &file)),
        };
    }
    let mut it = Interp::new(host, options.limits.clone());
    let fid = it.add_file(file);
    let result = it
        .run_main(path, &parsed.module, fid)
        .and_then(|()| it.commit());
    match result {
        Ok(()) => RunOutcome { error: None },
        Err(e) => RunOutcome {
            error: Some(it.render_error(e)),
        },
    }
}
