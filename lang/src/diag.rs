//! Diagnostics shared by the parser and checker, rendered rustc-style.

pub mod codes;

pub use codes::Code;

use crate::span::{SourceFile, Span};
use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

/// One finding: a code such as `E0001` or `E2027`, a message and where it applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    pub span: Span,
}

impl Diagnostic {
    pub fn error(code: Code, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span,
        }
    }

    pub fn warning(code: Code, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            code,
            message: message.into(),
            span,
        }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Whether this diagnostic stops `svc run` before any code runs: the structural
    /// errors a compiler rejects (the `fatal` column of `codes`). Everything else the
    /// checker finds (an undefined name, a wrong arity, a trigger that is not a type)
    /// surfaces at run time as the svc exception Python semantics give, when and if the
    /// code is reached; `svc check` reports all.
    pub fn stops_run(&self) -> bool {
        self.is_error() && self.code.is_fatal()
    }

    /// `file:line:col: error[CODE]: message`, then the source line and a caret line.
    pub fn render(&self, file: &SourceFile) -> String {
        let (line, col) = file.line_col(self.span.start);
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut out = format!(
            "{}:{line}:{col}: {kind}[{}]: {}\n",
            file.name, self.code, self.message
        );
        let text = file.line_text(line);
        let gutter = line.to_string();
        let pad = " ".repeat(gutter.len());
        let _ = writeln!(out, "{pad} |");
        let _ = writeln!(out, "{gutter} | {text}");
        let width = {
            let (end_line, end_col) = file.line_col(self.span.end);
            if end_line == line && end_col > col {
                end_col - col
            } else {
                1
            }
        };
        let _ = writeln!(out, "{pad} | {}{}", " ".repeat(col - 1), "^".repeat(width));
        out
    }
}
