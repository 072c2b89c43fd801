//! The first stage every entry point shares (`svc run`, `svc check`, `svc test`, a
//! server loading its app): read a module through the host, parse it once, check it,
//! and render the diagnostics that stop it.

use crate::ast::Module;
use crate::diag::Diagnostic;
use crate::host::Host;
use crate::span::SourceFile;
use std::path::Path;
use std::sync::Arc;

/// A module parsed and checked with nothing that stops a run.
pub struct Checked {
    pub file: Arc<SourceFile>,
    pub module: Module,
}

/// The source of `path` through the host, or the one-line error (with its newline).
pub fn read(path: &Path, host: &mut dyn Host) -> Result<Arc<SourceFile>, String> {
    match host.read_module(path) {
        Some(text) => Ok(SourceFile::new(path.display().to_string(), text)),
        None => Err(format!("error: cannot read '{}'\n", path.display())),
    }
}

/// Every diagnostic of `file`: the parser's, then, when it found no error, the
/// checker's; in file order.
pub fn diagnostics(path: &Path, file: &SourceFile, host: &mut dyn Host) -> Vec<Diagnostic> {
    let parsed = crate::parser::parse(&file.text);
    let mut diags = parsed.diagnostics;
    if !diags.iter().any(Diagnostic::is_error) {
        diags.extend(crate::checker::check_module(&parsed.module, path, host));
    }
    diags.sort_by_key(|d| (d.span.start, d.severity));
    diags
}

/// Parse and check `file` for running: the module, or the rendered parse errors (else
/// the checker's diagnostics that stop a run).
pub fn for_run(path: &Path, file: Arc<SourceFile>, host: &mut dyn Host) -> Result<Checked, String> {
    let parsed = crate::parser::parse(&file.text);
    let mut stops: Vec<Diagnostic> = parsed
        .diagnostics
        .into_iter()
        .filter(Diagnostic::is_error)
        .collect();
    if stops.is_empty() {
        stops.extend(
            crate::checker::check_module(&parsed.module, path, host)
                .into_iter()
                .filter(Diagnostic::stops_run),
        );
    }
    if stops.is_empty() {
        Ok(Checked {
            file,
            module: parsed.module,
        })
    } else {
        Err(render(&stops, &file))
    }
}

/// Diagnostics rendered rustc-style, each followed by a blank line.
pub fn render(diags: &[Diagnostic], file: &SourceFile) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(&d.render(file));
        out.push('\n');
    }
    out
}
