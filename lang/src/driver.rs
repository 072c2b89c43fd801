//! Entry points used by the CLI, the server and the MCP tools: check or run a file.

use crate::diag::Diagnostic;
use crate::host::Host;
use crate::interp::Interp;
use crate::span::SourceFile;
use std::path::Path;

pub use crate::limits::{DEFAULT_MAX_COLLECTION_ITEMS, DEFAULT_MAX_STRING_BYTES, Limits};

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
                .filter(Diagnostic::stops_run),
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
