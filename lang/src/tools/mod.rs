//! Compiler tools over the svc parser: formatter, linter, transpilers to Python and
//! JavaScript, syntax-tree dumps and the grammar reference (what `svc format` and the
//! `svc mcp` compiler tools call).
//!
//! Every tool takes source text and never panics. Recursion over the tree is bounded:
//! the parser caps nesting at `parser::MAX_DEPTH`, and the one tree walk the tools share
//! (`tree::module_tree`, also used by the transpilers' depth guard) refuses trees deeper
//! than [`tree::MAX_TREE_DEPTH`] — left-leaning operator chains are not capped by the
//! parser. The formatter itself works on the token stream, iteratively.

mod ast_dump;
mod format;
pub mod grammar;
mod lint;
#[cfg(test)]
mod tests;
mod to_js;
mod to_py;
pub mod tree;

pub use ast_dump::{ast_json, ast_tree};
pub use format::format_source;
pub use grammar::{grammar_spec, grammar_tokens};
pub use lint::{LINT_RULES, lint_source};
pub use to_js::{svc_to_js, svc_to_js_with_warnings};
pub use to_py::{svc_to_python, svc_to_python_with_warnings};

use crate::diag::Diagnostic;
use crate::span::SourceFile;

/// A tool could not do its job on this input (syntax errors, nesting too deep).
#[derive(Debug, Clone)]
pub struct ToolError {
    pub message: String,
    pub line: Option<u32>,
    pub col: Option<u32>,
}

impl ToolError {
    fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            line: None,
            col: None,
        }
    }

    /// Remember a byte offset until [`ToolError::locate`] turns it into line/column.
    fn at_offset(mut self, offset: u32) -> ToolError {
        self.col = Some(offset);
        self.line = None;
        self
    }

    /// Resolve an offset stored by [`ToolError::at_offset`] against the source.
    fn locate(mut self, src: &str) -> ToolError {
        if let (None, Some(off)) = (self.line, self.col) {
            let (l, c) = line_col(src, off);
            self.line = Some(l);
            self.col = Some(c);
        }
        self
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.col) {
            (Some(l), Some(c)) => write!(f, "{l}:{c}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ToolError {}

/// A finding of the linter (`code` is an `L` code or a compiler `E` code).
#[derive(Debug, Clone)]
pub struct LintViolation {
    pub line: u32,
    pub col: u32,
    pub message: String,
    pub severity: String,
    pub code: String,
}

/// What [`lint_source`] found and, with `auto_fix`, the fixed code.
#[derive(Debug, Clone)]
pub struct LintReport {
    pub violations: Vec<LintViolation>,
    pub fixed_code: Option<String>,
    pub changed: bool,
}

/// Stack of the thread every public tool runs on (reserved, not committed): the parser's
/// tree of a long operator chain is as deep as the chain, and building, walking and
/// dropping it recurses, so the tools do not depend on their caller's stack size (an
/// async executor's worker has 2 MiB).
const TOOL_STACK_BYTES: usize = 256 << 20;

/// Run `f` on a scoped thread with [`TOOL_STACK_BYTES`] of stack (inline if no thread
/// can be started).
pub(crate) fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let slot = std::sync::Mutex::new(Some(f));
    let take = || slot.lock().ok().and_then(|mut g| g.take());
    let ran = std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("svc-tools".into())
            .stack_size(TOOL_STACK_BYTES)
            .spawn_scoped(scope, || take().map(|f| f()));
        match spawned.map(|h| h.join()) {
            Ok(Ok(v)) => v,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => None,
        }
    });
    match ran {
        Some(v) => v,
        // No thread could be started: run here.
        None => match take() {
            Some(f) => f(),
            None => std::process::abort(),
        },
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(src: &str, offset: u32) -> (u32, u32) {
    let file = SourceFile::new("", src);
    let (l, c) = file.line_col(offset);
    (l as u32, c as u32)
}

/// Parse `src`; the module if there is no syntax error, else the first error.
pub(crate) fn parse_clean(src: &str) -> Result<crate::ast::Module, ToolError> {
    let parsed = crate::parser::parse(src);
    if let Some(d) = parsed.diagnostics.iter().find(|d| d.is_error()) {
        return Err(diag_error(src, d));
    }
    Ok(parsed.module)
}

pub(crate) fn diag_error(src: &str, d: &Diagnostic) -> ToolError {
    let (l, c) = line_col(src, d.span.start);
    ToolError {
        message: format!("syntax error[{}]: {}", d.code.as_str(), d.message),
        line: Some(l),
        col: Some(c),
    }
}
