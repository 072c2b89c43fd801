//! Running svc code given as a string, for embedders such as the MCP tools: no file is
//! read (imports of other modules fail cleanly), no store is opened (the graph lives in
//! memory and is handed back), and everything printed is captured.

use crate::endpoint::{CallError, EndpointKind, Start};
use crate::host::{AnchorId, Host, HostError, MemoryHost, StoredAnchor};
use crate::limits::Limits;
use serde_json::{Map, Value as Json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What one snippet run left behind.
#[derive(Clone, Debug, Default)]
pub struct SnippetRun {
    /// Everything `print` wrote, in order.
    pub stdout: String,
    /// `None` on success; else the diagnostics or the runtime error with its traceback.
    pub error: Option<String>,
    /// `entrypoint` was a walker: its reports. A function: its return value (one item).
    pub reports: Vec<Json>,
    /// The entrypoint asked for exists (a walker or a function of the module).
    pub entrypoint_found: bool,
    /// The in-memory graph after the run: every committed anchor by id.
    pub anchors: HashMap<AnchorId, StoredAnchor>,
    /// The root node's id in `anchors`.
    pub root: AnchorId,
}

/// A memory host whose only readable module is the snippet itself.
struct SnippetHost {
    mem: MemoryHost,
    path: PathBuf,
    code: String,
}

impl Host for SnippetHost {
    fn load(&mut self, id: AnchorId) -> Result<Option<StoredAnchor>, HostError> {
        self.mem.load(id)
    }
    fn commit(&mut self, changes: crate::host::CommitSet) -> Result<(), HostError> {
        self.mem.commit(changes)
    }
    fn user_root(&self) -> AnchorId {
        self.mem.user_root()
    }
    fn write_stdout(&mut self, text: &str) {
        self.mem.write_stdout(text);
    }
    fn read_module(&mut self, path: &Path) -> Option<String> {
        (path == self.path).then(|| self.code.clone())
    }
    fn module_key(&mut self, path: &Path) -> Option<PathBuf> {
        (path == self.path).then(|| path.to_path_buf())
    }
    fn plain_glyphs(&self) -> bool {
        true
    }
}

fn host(name: &str, code: &str) -> SnippetHost {
    SnippetHost {
        mem: MemoryHost::new(),
        path: PathBuf::from(name),
        code: code.to_string(),
    }
}

fn finish(h: SnippetHost, mut run: SnippetRun) -> SnippetRun {
    run.stdout.push_str(&h.mem.stdout);
    run.root = h.mem.root;
    run.anchors = h.mem.anchors;
    run
}

fn call_error_text(e: CallError) -> String {
    match e {
        CallError::NotFound(m) => format!("NotFound: {m}"),
        CallError::Validation(fields) => {
            let parts: Vec<String> = fields.iter().map(|(f, m)| format!("{f}: {m}")).collect();
            format!("ValidationError: {}", parts.join("; "))
        }
        CallError::Runtime { exc_type, message } => format!("{exc_type}: {message}"),
        CallError::Limit(m) => format!("LimitExceeded: {m}"),
        other => format!("{other:?}"),
    }
}

/// Parse, check and run `code` as the main module named `name` (module code and every
/// `with entry` block), then, when `entrypoint` names one of its walkers, spawn it on
/// root without arguments, or, when it names a function, call it without arguments.
/// An `entrypoint` that names neither is not an error (`entrypoint_found` is false).
pub fn run_snippet(
    name: &str,
    code: &str,
    entrypoint: Option<&str>,
    limits: &Limits,
) -> SnippetRun {
    let path = PathBuf::from(name);
    let Some(entry) = entrypoint.filter(|e| !e.trim().is_empty()) else {
        let mut h = host(name, code);
        let outcome = crate::driver::run_source(
            &path,
            code.to_string(),
            &mut h,
            &crate::RunOptions {
                limits: limits.clone(),
                ..crate::RunOptions::default()
            },
        );
        return finish(
            h,
            SnippetRun {
                error: outcome.error,
                ..SnippetRun::default()
            },
        );
    };
    let mut h = host(name, code);
    let app = match crate::serve::load_app_as_main(&path, &mut h, limits, true) {
        Ok(app) => app,
        Err(_) => {
            // Loading failed: run it plainly once more to keep what it printed first.
            return run_snippet(name, code, None, limits);
        }
    };
    let mut run = SnippetRun {
        stdout: app.load_output.clone(),
        ..SnippetRun::default()
    };
    let entry = entry.trim();
    let Some(kind) = app
        .endpoints
        .iter()
        .find(|e| e.name == entry)
        .map(|e| e.kind)
    else {
        return finish(h, run);
    };
    run.entrypoint_found = true;
    let args = Map::new();
    let outcome = match kind {
        EndpointKind::Walker => {
            crate::serve::spawn_walker(&app.program, &mut h, limits, entry, &args, Start::Root)
        }
        EndpointKind::Function => {
            crate::serve::call_function(&app.program, &mut h, limits, entry, &args)
        }
    };
    match outcome {
        Ok(o) => {
            run.reports = match kind {
                EndpointKind::Walker => o.reports,
                EndpointKind::Function => vec![o.result],
            };
        }
        Err(e) => run.error = Some(call_error_text(e)),
    }
    finish(h, run)
}
