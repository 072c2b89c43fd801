//! Entry points used by the CLI, the server and the MCP tools: check or run a file.

use crate::host::Host;
use crate::interp::Interp;
use crate::load;
use crate::span::SourceFile;
use std::path::Path;

pub use crate::limits::{DEFAULT_MAX_COLLECTION_ITEMS, DEFAULT_MAX_STRING_BYTES, Limits};

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub limits: Limits,
    /// The caller exits the process right after the run (`svc run`): the graph's
    /// memory is left to the operating system instead of being freed slot by slot
    /// (dropping a value runs no program code and does no I/O, so nothing a program
    /// can observe changes; a run that made 200,000 anchors spent about 5% of its time
    /// freeing them and having the allocator return the pages).
    pub exit_after: bool,
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

/// Stack size the CLI and server give the thread that runs the interpreter: deep svc
/// recursion (up to `Limits::max_depth` frames) must never overflow the native stack.
pub const INTERPRETER_STACK_BYTES: usize = 512 << 20;

/// Parse and check `path` and the `.svc` modules it imports.
pub fn check_file(path: &Path, host: &mut dyn Host) -> CheckOutcome {
    let file = match load::read(path, host) {
        Ok(f) => f,
        Err(e) => {
            return CheckOutcome {
                rendered: e,
                errors: 1,
                warnings: 0,
            };
        }
    };
    let diags = load::diagnostics(path, &file, host);
    let errors = diags.iter().filter(|d| d.is_error()).count();
    CheckOutcome {
        rendered: load::render(&diags, &file),
        errors,
        warnings: diags.len() - errors,
    }
}

/// Parse, check and run `path`: module-level code and `with entry` blocks, printing
/// through the host and committing graph changes through it at the end.
pub fn run_file(path: &Path, host: &mut dyn Host, options: &RunOptions) -> RunOutcome {
    match load::read(path, host) {
        Ok(file) => run_checked(path, file, host, options),
        Err(e) => RunOutcome { error: Some(e) },
    }
}

/// Like `run_file`, with the source given as a string (`path` names it and anchors
/// imports).
pub fn run_source(
    path: &Path,
    text: String,
    host: &mut dyn Host,
    options: &RunOptions,
) -> RunOutcome {
    run_checked(
        path,
        SourceFile::new(path.display().to_string(), text),
        host,
        options,
    )
}

fn run_checked(
    path: &Path,
    file: std::sync::Arc<SourceFile>,
    host: &mut dyn Host,
    options: &RunOptions,
) -> RunOutcome {
    let checked = match load::for_run(path, file, host) {
        Ok(c) => c,
        Err(rendered) => {
            return RunOutcome {
                error: Some(rendered),
            };
        }
    };
    let mut it = Interp::new(host, options.limits.clone());
    let fid = it.add_file(checked.file);
    let result = it
        .run_main(path, &checked.module, fid)
        .and_then(|()| it.commit());
    let outcome = match result {
        Ok(()) => RunOutcome { error: None },
        Err(e) => RunOutcome {
            error: Some(it.render_error(e)),
        },
    };
    if options.exit_after {
        std::mem::forget(std::mem::take(&mut it.graph));
    }
    outcome
}
