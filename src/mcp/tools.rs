//! The 19 tools. Each takes the call's JSON arguments and answers a JSON object; a
//! failure is an object too (`{error, ...}`, flagged `isError`), never a panic. Work
//! on svc code runs on its own thread with the interpreter's stack, bounded by the
//! 10-second limit, so a slow call never holds up other requests.

use super::catalog;
use super::config::McpConfig;
use super::content;
use serde_json::{Map, Value as Json, json};
use std::sync::Arc;
use std::time::Duration;

/// Largest `code` / `python_code` a compiler tool accepts (spec: 100 KB).
pub const MAX_INPUT_BYTES: usize = 100 * 1024;
/// Time limit of one compiler-tool operation (spec: 10 s).
pub const COMPILER_TIMEOUT: Duration = Duration::from_secs(10);
/// Compiler-tool operations running at once; later calls wait their turn (within
/// their own time limit).
const MAX_CONCURRENT_OPERATIONS: usize = 4;

/// A tool's answer: the JSON object and whether it reports a failure.
pub struct Answer {
    pub value: Json,
    pub is_error: bool,
}

fn ok(value: Json) -> Answer {
    Answer {
        value,
        is_error: false,
    }
}

fn fail(message: impl Into<String>) -> Answer {
    Answer {
        value: json!({"error": message.into()}),
        is_error: true,
    }
}

/// What a tool call needs: the settings and the bound on concurrent operations.
pub struct Tools {
    pub config: McpConfig,
    permits: Arc<tokio::sync::Semaphore>,
}

type Args = Map<String, Json>;

fn req_str(args: &Args, name: &str) -> Result<String, Answer> {
    match args.get(name) {
        Some(Json::String(s)) => Ok(s.clone()),
        Some(other) => Err(fail(format!(
            "argument `{name}` must be a string, found {}",
            kind_of(other)
        ))),
        None => Err(fail(format!("missing required argument `{name}`"))),
    }
}

fn opt_str(args: &Args, name: &str) -> Result<Option<String>, Answer> {
    match args.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(fail(format!(
            "argument `{name}` must be a string, found {}",
            kind_of(other)
        ))),
    }
}

fn opt_bool(args: &Args, name: &str, default: bool) -> Result<bool, Answer> {
    match args.get(name) {
        None | Some(Json::Null) => Ok(default),
        Some(Json::Bool(b)) => Ok(*b),
        Some(Json::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Json::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
        Some(other) => Err(fail(format!(
            "argument `{name}` must be a boolean, found {}",
            kind_of(other)
        ))),
    }
}

fn opt_int(args: &Args, name: &str, default: i64) -> Result<i64, Answer> {
    match args.get(name) {
        None | Some(Json::Null) => Ok(default),
        Some(Json::Number(n)) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                    .map(|f| f as i64)
            })
            .ok_or_else(|| fail(format!("argument `{name}` must be an integer"))),
        Some(Json::String(s)) => s
            .trim()
            .parse()
            .map_err(|_| fail(format!("argument `{name}` must be an integer"))),
        Some(other) => Err(fail(format!(
            "argument `{name}` must be an integer, found {}",
            kind_of(other)
        ))),
    }
}

fn kind_of(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// The source argument of a compiler tool, within the size limit.
fn source(args: &Args, name: &str) -> Result<String, Answer> {
    let code = req_str(args, name)?;
    if code.len() > MAX_INPUT_BYTES {
        return Err(fail(format!(
            "input too large: `{name}` is {} bytes; the limit is {MAX_INPUT_BYTES} bytes (100 KB)",
            code.len()
        )));
    }
    Ok(code)
}

/// `(line, col)` of byte `offset` in `text`, both from 1.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let file = lang::span::SourceFile::new("snippet.svc", text);
    file.line_col(u32::try_from(offset).unwrap_or(u32::MAX))
}

fn diag_json(text: &str, d: &lang::diag::Diagnostic) -> Json {
    let (line, col) = line_col(text, d.span.start as usize);
    json!({"line": line, "col": col, "message": d.message, "code": d.code.as_str()})
}

/// A host for checking snippets: no module but the snippet can be read.
struct CheckHost(lang::host::MemoryHost);

impl lang::host::Host for CheckHost {
    fn load(
        &mut self,
        id: lang::host::AnchorId,
    ) -> Result<Option<lang::host::StoredAnchor>, lang::host::HostError> {
        self.0.load(id)
    }
    fn commit(&mut self, c: lang::host::CommitSet) -> Result<(), lang::host::HostError> {
        self.0.commit(c)
    }
    fn user_root(&self) -> lang::host::AnchorId {
        self.0.user_root()
    }
    fn write_stdout(&mut self, _text: &str) {}
    fn read_module(&mut self, _path: &std::path::Path) -> Option<String> {
        None
    }
}

fn validate(code: &str, filename: &str) -> Json {
    let parsed = lang::parser::parse(code);
    let mut diags = parsed.diagnostics;
    if !diags.iter().any(lang::diag::Diagnostic::is_error) {
        let mut host = CheckHost(lang::host::MemoryHost::new());
        diags.extend(lang::checker::check_module(
            &parsed.module,
            std::path::Path::new(filename),
            &mut host,
        ));
    }
    diags.sort_by_key(|d| (d.span.start, d.severity));
    let errors: Vec<Json> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| diag_json(code, d))
        .collect();
    let warnings: Vec<Json> = diags
        .iter()
        .filter(|d| !d.is_error())
        .map(|d| diag_json(code, d))
        .collect();
    json!({"valid": errors.is_empty(), "errors": errors, "warnings": warnings})
}

fn check_syntax(code: &str) -> Json {
    let parsed = lang::parser::parse(code);
    let errors: Vec<Json> = parsed
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| diag_json(code, d))
        .collect();
    json!({"valid": errors.is_empty(), "errors": errors})
}

fn tool_error(e: &lang::tools::ToolError) -> Json {
    json!({"error": e.message, "line": e.line, "col": e.col})
}

fn run_json(run: &lang::embed::SnippetRun) -> Json {
    let mut out = json!({
        "stdout": run.stdout,
        "stderr": run.error.clone().unwrap_or_default(),
        "exit_code": if run.error.is_some() { 1 } else { 0 },
    });
    if let Some(e) = &run.error {
        out["error"] = json!(e);
    }
    if !run.reports.is_empty() {
        out["reports"] = json!(run.reports);
    }
    out
}

fn snippet_limits(timeout: Duration) -> lang::Limits {
    lang::Limits {
        timeout: Some(timeout),
        max_string_bytes: 16 << 20,
        max_collection_items: 1_000_000,
        ..lang::Limits::default()
    }
}

impl Tools {
    pub fn new(config: McpConfig) -> Tools {
        Tools {
            config,
            permits: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_OPERATIONS)),
        }
    }

    /// Run `work` on its own thread (with the interpreter's stack) within `limit`.
    async fn bounded<F>(&self, limit: Duration, work: F) -> Answer
    where
        F: FnOnce() -> Answer + Send + 'static,
    {
        let start = tokio::time::Instant::now();
        let Ok(Ok(permit)) =
            tokio::time::timeout(limit, self.permits.clone().acquire_owned()).await
        else {
            return fail(format!(
                "timed out after {} s waiting for a free worker",
                limit.as_secs()
            ));
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("svc-mcp-tool".into())
            .stack_size(lang::driver::INTERPRETER_STACK_BYTES)
            .spawn(move || {
                let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
                    .unwrap_or_else(|_| fail("internal error: the operation failed unexpectedly"));
                let _ = tx.send(answer);
                drop(permit);
            });
        if let Err(e) = spawned {
            return fail(format!("cannot start a worker thread: {e}"));
        }
        // The interpreter stops itself at its own time limit; this is the backstop for
        // work that has none (a grace second on top).
        let left = (limit + Duration::from_secs(1)).saturating_sub(start.elapsed());
        match tokio::time::timeout(left, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => fail("internal error: the operation ended without an answer"),
            Err(_) => fail(format!("timed out after {} s", limit.as_secs())),
        }
    }

    pub async fn call(&self, name: &str, args: &Args) -> Answer {
        if !catalog::all_tools().iter().any(|t| t.name == name)
            || !catalog::tool_enabled(&self.config, name)
        {
            return fail(format!("unknown tool `{name}`"));
        }
        match self.dispatch(name, args).await {
            Ok(a) | Err(a) => a,
        }
    }

    async fn dispatch(&self, name: &str, args: &Args) -> Result<Answer, Answer> {
        let limit = COMPILER_TIMEOUT;
        Ok(match name {
            "validate_svc" => {
                let code = source(args, "code")?;
                let filename = opt_str(args, "filename")?
                    .filter(|f| !f.trim().is_empty())
                    .unwrap_or_else(|| "snippet.svc".into());
                self.bounded(limit, move || ok(validate(&code, &filename)))
                    .await
            }
            "check_syntax" => {
                let code = source(args, "code")?;
                self.bounded(limit, move || ok(check_syntax(&code))).await
            }
            "lint_svc" => {
                let code = source(args, "code")?;
                let auto_fix = opt_bool(args, "auto_fix", false)?;
                self.bounded(limit, move || {
                    let r = lang::tools::lint_source(&code, auto_fix);
                    let violations: Vec<Json> = r
                        .violations
                        .iter()
                        .map(|v| json!({"line": v.line, "col": v.col, "message": v.message, "severity": v.severity, "code": v.code}))
                        .collect();
                    ok(json!({"violations": violations, "fixed_code": r.fixed_code, "changed": r.changed}))
                })
                .await
            }
            "format_svc" => {
                let code = source(args, "code")?;
                self.bounded(limit, move || match lang::tools::format_source(&code) {
                    Ok(formatted) => {
                        let changed = formatted != code;
                        ok(json!({"formatted": formatted, "changed": changed}))
                    }
                    Err(e) => Answer {
                        value: tool_error(&e),
                        is_error: true,
                    },
                })
                .await
            }
            "py_to_svc" => {
                let code = source(args, "python_code")?;
                self.bounded(limit, move || match crate::py2svc::py_to_svc(&code) {
                    Ok((svc_code, warnings)) => {
                        ok(json!({"svc_code": svc_code, "warnings": warnings}))
                    }
                    Err(warnings) => ok(json!({"svc_code": "", "warnings": warnings})),
                })
                .await
            }
            "svc_to_py" => {
                let code = source(args, "code")?;
                self.bounded(
                    limit,
                    move || match lang::tools::svc_to_python_with_warnings(&code) {
                        Ok((python_code, warnings)) => {
                            ok(json!({"python_code": python_code, "warnings": warnings}))
                        }
                        Err(warnings) => ok(json!({"python_code": "", "warnings": warnings})),
                    },
                )
                .await
            }
            "svc_to_js" => {
                let code = source(args, "code")?;
                self.bounded(limit, move || {
                    match lang::tools::svc_to_js_with_warnings(&code) {
                        Ok((js_code, warnings)) => {
                            ok(json!({"js_code": js_code, "warnings": warnings}))
                        }
                        Err(warnings) => ok(json!({"js_code": "", "warnings": warnings})),
                    }
                })
                .await
            }
            "get_ast" => {
                let code = source(args, "code")?;
                let format = opt_str(args, "format")?.unwrap_or_else(|| "tree".into());
                if format != "tree" && format != "json" {
                    return Err(fail(format!(
                        "argument `format` must be `tree` or `json`, found `{format}`"
                    )));
                }
                self.bounded(limit, move || {
                    let result = if format == "json" {
                        lang::tools::ast_json(&code)
                    } else {
                        lang::tools::ast_tree(&code).map(Json::String)
                    };
                    match result {
                        Ok(ast) => ok(json!({"format": format, "ast": ast})),
                        Err(e) => Answer {
                            value: tool_error(&e),
                            is_error: true,
                        },
                    }
                })
                .await
            }
            "run_svc" => {
                let code = source(args, "code")?;
                let entrypoint = opt_str(args, "entrypoint")?;
                let secs = opt_int(args, "timeout", 10)?;
                if secs < 1 {
                    return Err(fail("argument `timeout` must be at least 1 second"));
                }
                let t = Duration::from_secs(secs.unsigned_abs()).min(COMPILER_TIMEOUT);
                self.bounded(t, move || {
                    let run = lang::embed::run_snippet(
                        "snippet.svc",
                        &code,
                        entrypoint.as_deref(),
                        &snippet_limits(t),
                    );
                    ok(run_json(&run))
                })
                .await
            }
            "graph_visualize" => {
                let code = source(args, "code")?;
                let format = opt_str(args, "format")?.unwrap_or_else(|| "dot".into());
                if format != "dot" && format != "json" {
                    return Err(fail(format!(
                        "argument `format` must be `dot` or `json`, found `{format}`"
                    )));
                }
                let depth = opt_int(args, "depth", -1)?;
                let bfs = opt_bool(args, "bfs", true)?;
                let clamp = |n: i64| usize::try_from(n.clamp(1, 10_000)).unwrap_or(1);
                let q = super::graph::GraphQuery {
                    depth: u64::try_from(depth).ok(),
                    bfs,
                    node_limit: clamp(opt_int(args, "node_limit", 512)?),
                    edge_limit: usize::try_from(opt_int(args, "edge_limit", 512)?.clamp(0, 10_000))
                        .unwrap_or(0),
                };
                self.bounded(limit, move || {
                    let run = lang::embed::run_snippet(
                        "snippet.svc",
                        &code,
                        None,
                        &snippet_limits(COMPILER_TIMEOUT),
                    );
                    let graph = super::graph::render(&run.anchors, run.root, &q, format == "dot");
                    let mut out =
                        json!({"graph": graph, "format": format, "program_output": run.stdout});
                    if let Some(e) = run.error {
                        out["error"] = json!(e);
                    }
                    ok(out)
                })
                .await
            }
            "explain_error" => {
                let msg = req_str(args, "error_message")?;
                if msg.len() > MAX_INPUT_BYTES {
                    return Err(fail("input too large: the limit is 100 KB"));
                }
                let e: content::Explanation = content::explain(&msg);
                ok(
                    json!({"title": e.title, "explanation": e.explanation, "suggestion": e.suggestion, "example": e.example, "docs_uri": e.docs_uri}),
                )
            }
            "list_examples" => {
                let category = opt_str(args, "category")?;
                let list: Vec<Json> = content::examples()
                    .iter()
                    .filter(|e| category.as_deref().is_none_or(|c| c.is_empty() || c == e.category))
                    .map(|e| json!({"category": e.category, "description": e.description, "uri": catalog::example_uri(e.category), "files": e.files.iter().map(|f| f.path).collect::<Vec<_>>()}))
                    .collect();
                ok(json!({"total": list.len(), "examples": list}))
            }
            "get_example" => {
                let name = req_str(args, "name")?;
                let want = name.trim().trim_start_matches("svc://examples/");
                match content::examples().iter().find(|e| e.category == want) {
                    Some(e) => ok(json!({
                        "category": e.category,
                        "description": e.description,
                        "files": e.files.iter().map(|f| json!({"path": f.path, "source": f.source})).collect::<Vec<_>>(),
                    })),
                    None => {
                        let known: Vec<&str> =
                            content::examples().iter().map(|e| e.category).collect();
                        fail(format!(
                            "unknown example `{name}`; known: {}",
                            known.join(", ")
                        ))
                    }
                }
            }
            "search_docs" => {
                let query = req_str(args, "query")?;
                let limit = opt_int(args, "limit", 5)?.clamp(1, 50);
                ok(super::search::search(
                    &self.config,
                    &query,
                    usize::try_from(limit).unwrap_or(5),
                ))
            }
            "understand_svc_and_platform" => {
                ok(json!({"knowledge_map": super::search::knowledge_map(&self.config)}))
            }
            "get_resource" => {
                let uri = req_str(args, "uri")?;
                match catalog::resources(&self.config)
                    .into_iter()
                    .find(|r| r.uri == uri)
                {
                    Some(r) => ok(json!({"uri": uri, "content": r.body})),
                    None => Answer {
                        value: json!({"uri": uri, "error": format!("unknown resource `{uri}`")}),
                        is_error: true,
                    },
                }
            }
            "list_commands" => ok(super::commands::list_commands()),
            "get_command" => {
                let name = req_str(args, "name")?;
                let v = super::commands::get_command(&name);
                let is_error = v.get("error").is_some();
                Answer { value: v, is_error }
            }
            "execute_command" => {
                let command = req_str(args, "command")?;
                let list = match args.get("args") {
                    None | Some(Json::Null) => Vec::new(),
                    Some(Json::Array(items)) => {
                        let mut out = Vec::new();
                        for i in items {
                            match i {
                                Json::String(s) => out.push(s.clone()),
                                other => {
                                    return Err(fail(format!(
                                        "argument `args` must be a list of strings, found {}",
                                        kind_of(other)
                                    )));
                                }
                            }
                        }
                        out
                    }
                    Some(other) => {
                        return Err(fail(format!(
                            "argument `args` must be a list of strings, found {}",
                            kind_of(other)
                        )));
                    }
                };
                let secs = opt_int(args, "timeout", 30)?.clamp(1, 300);
                let v = super::commands::execute(
                    &command,
                    &list,
                    Duration::from_secs(secs.unsigned_abs()),
                    &self.config.project_root,
                )
                .await;
                ok(v)
            }
            other => fail(format!("unknown tool `{other}`")),
        })
    }
}
