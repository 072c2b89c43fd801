//! What the server offers: the tools (with their input schemas), the prompts and the
//! resources, filtered by the `[mcp]` switches. `--inspect`, `tools/list`,
//! `prompts/list` and `resources/list` all read this one catalogue.

use super::config::McpConfig;
use super::content::{self, DocKind};
use serde_json::{Value as Json, json};

/// One tool: name, description and JSON schema of its arguments.
pub struct ToolDef {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: Json,
}

fn code_schema(extra: Json) -> Json {
    let mut props =
        json!({"code": {"type": "string", "description": "svc source code (at most 100 KB)"}});
    if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    json!({"type": "object", "properties": props, "required": ["code"]})
}

fn schema(props: Json, required: &[&str]) -> Json {
    json!({"type": "object", "properties": props, "required": required})
}

/// Every tool the server knows, in a fixed order (before the switches).
pub fn all_tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "validate_svc",
            description: "Parse and fully type-check svc code. Returns {valid, errors: [{line, col, message}], warnings}.",
            schema: code_schema(
                json!({"filename": {"type": "string", "description": "name used in messages", "default": "snippet.svc"}}),
            ),
        },
        ToolDef {
            name: "check_syntax",
            description: "Parse svc code without type-checking. Returns {valid, errors: [{line, col, message}]}.",
            schema: code_schema(json!({})),
        },
        ToolDef {
            name: "lint_svc",
            description: "Lint svc code. Returns {violations: [{line, col, message, severity}], fixed_code, changed}.",
            schema: code_schema(
                json!({"auto_fix": {"type": "boolean", "default": false, "description": "also return the fixed code"}}),
            ),
        },
        ToolDef {
            name: "format_svc",
            description: "Format svc code in the canonical style. Returns {formatted, changed}.",
            schema: code_schema(json!({})),
        },
        ToolDef {
            name: "py_to_svc",
            description: "Translate Python code to svc. Returns {svc_code, warnings}.",
            schema: schema(
                json!({"python_code": {"type": "string", "description": "Python source (at most 100 KB)"}}),
                &["python_code"],
            ),
        },
        ToolDef {
            name: "svc_to_py",
            description: "Translate svc code to Python. Returns {python_code, warnings}; on failure python_code is empty.",
            schema: code_schema(json!({})),
        },
        ToolDef {
            name: "svc_to_js",
            description: "Translate svc code to JavaScript (ES6 classes and functions). Returns {js_code, warnings}.",
            schema: code_schema(json!({})),
        },
        ToolDef {
            name: "explain_error",
            description: "Explain an svc diagnostic (a code such as E0001 or the message text). Returns {title, explanation, suggestion, example, docs_uri}.",
            schema: schema(
                json!({"error_message": {"type": "string"}}),
                &["error_message"],
            ),
        },
        ToolDef {
            name: "list_examples",
            description: "List the bundled example apps. Returns {examples: [{category, description, files}], total}.",
            schema: schema(
                json!({"category": {"type": "string", "description": "only this category"}}),
                &[],
            ),
        },
        ToolDef {
            name: "get_example",
            description: "All source files of one example category. Returns {category, description, files: [{path, source}]}.",
            schema: schema(
                json!({"name": {"type": "string", "description": "example category"}}),
                &["name"],
            ),
        },
        ToolDef {
            name: "search_docs",
            description: "Search the svc documentation. Returns {results: [{uri, title, description, snippet, score}]} ranked by score.",
            schema: schema(
                json!({"query": {"type": "string"}, "limit": {"type": "integer", "default": 5, "minimum": 1, "maximum": 50}}),
                &["query"],
            ),
        },
        ToolDef {
            name: "get_ast",
            description: "The syntax tree of svc code. Returns {format, ast} (tree: indented text; json: a JSON tree).",
            schema: code_schema(
                json!({"format": {"type": "string", "enum": ["tree", "json"], "default": "tree"}}),
            ),
        },
        ToolDef {
            name: "run_svc",
            description: "Run svc code in memory (no files, no store). Returns {stdout, stderr, exit_code, error?}.",
            schema: code_schema(json!({
                "entrypoint": {"type": "string", "description": "walker (spawned on root) or function (called without arguments) to run after the module"},
                "timeout": {"type": "integer", "default": 10, "minimum": 1, "maximum": 10, "description": "seconds"}
            })),
        },
        ToolDef {
            name: "graph_visualize",
            description: "Run svc code on an in-memory graph and render the graph from root. Returns {graph, program_output, error?}.",
            schema: code_schema(json!({
                "format": {"type": "string", "enum": ["dot", "json"], "default": "dot"},
                "depth": {"type": "integer", "default": -1, "description": "hops from root; -1 = unlimited"},
                "bfs": {"type": "boolean", "default": true, "description": "breadth-first (else depth-first) order"},
                "edge_limit": {"type": "integer", "default": 512},
                "node_limit": {"type": "integer", "default": 512}
            })),
        },
        ToolDef {
            name: "understand_svc_and_platform",
            description: "Start here: a Markdown knowledge map of every resource URI by topic. Returns {knowledge_map}.",
            schema: schema(json!({}), &[]),
        },
        ToolDef {
            name: "get_resource",
            description: "Read one svc:// resource. Returns {uri, content}, or {uri, error} for an unknown URI.",
            schema: schema(json!({"uri": {"type": "string"}}), &["uri"]),
        },
        ToolDef {
            name: "list_commands",
            description: "The svc command-line commands. Returns {commands: [{name, help, group}], groups, total}.",
            schema: schema(json!({}), &[]),
        },
        ToolDef {
            name: "get_command",
            description: "One svc command with its arguments. Returns {name, help, group, source, args: [...]}, or {error}.",
            schema: schema(
                json!({"name": {"type": "string", "description": "command, e.g. `run` or `db inspect`"}}),
                &["name"],
            ),
        },
        ToolDef {
            name: "execute_command",
            description: "Run an svc command as a child process. Returns {success, exit_code, stdout, stderr, command}; exit 2 = usage error.",
            schema: schema(
                json!({
                    "command": {"type": "string", "description": "command, e.g. `check` or `db inspect`"},
                    "args": {"type": "array", "items": {"type": "string"}, "default": []},
                    "timeout": {"type": "integer", "default": 30, "minimum": 1, "maximum": 300}
                }),
                &["command"],
            ),
        },
    ]
}

/// Whether the switches of `config` keep tool `name`.
pub fn tool_enabled(config: &McpConfig, name: &str) -> bool {
    match name {
        "validate_svc" | "check_syntax" => config.enable_validate,
        "format_svc" => config.enable_format,
        "py_to_svc" => config.enable_py2svc,
        "get_ast" => config.enable_ast,
        "search_docs" => config.expose_docs,
        "list_examples" | "get_example" => config.expose_examples,
        _ => true,
    }
}

pub fn tools(config: &McpConfig) -> Vec<ToolDef> {
    all_tools()
        .into_iter()
        .filter(|t| tool_enabled(config, t.name))
        .collect()
}

/// One readable resource.
#[derive(Clone)]
pub struct Resource {
    pub uri: String,
    pub name: String,
    pub title: String,
    pub description: String,
    pub topic: String,
    /// Markdown.
    pub body: String,
}

/// The URI of example category `category`.
pub fn example_uri(category: &str) -> String {
    format!("svc://examples/{category}")
}

fn example_body(ex: &content::Example) -> String {
    let mut out = format!("# Example: {}\n\n{}\n", ex.category, ex.description);
    for f in ex.files {
        out.push_str(&format!(
            "\n## {}\n\n```svc\n{}\n```\n",
            f.path,
            f.source.trim_end()
        ));
    }
    out
}

/// Every resource the switches expose, grammar first, then guides and documents, then
/// examples.
pub fn resources(config: &McpConfig) -> Vec<Resource> {
    let mut out = Vec::new();
    if config.expose_grammar {
        out.push(Resource {
            uri: "svc://grammar/spec".into(),
            name: "grammar-spec".into(),
            title: "svc grammar (EBNF)".into(),
            description: "The full grammar of the svc language, in EBNF".into(),
            topic: "Grammar".into(),
            body: lang::tools::grammar_spec(),
        });
        out.push(Resource {
            uri: "svc://grammar/tokens".into(),
            name: "grammar-tokens".into(),
            title: "svc tokens".into(),
            description: "The token kinds of the svc lexer".into(),
            topic: "Grammar".into(),
            body: lang::tools::grammar_tokens(),
        });
    }
    for d in content::docs() {
        let shown = match d.kind {
            DocKind::Pitfalls => config.expose_pitfalls,
            DocKind::Guide | DocKind::Patterns | DocKind::Doc => config.expose_docs,
        };
        if shown {
            out.push(Resource {
                uri: d.uri.into(),
                name: d.uri.trim_start_matches("svc://").replace('/', "-"),
                title: d.title.into(),
                description: d.description.into(),
                topic: d.topic.into(),
                body: d.body.into(),
            });
        }
    }
    if config.expose_examples {
        for ex in content::examples() {
            out.push(Resource {
                uri: example_uri(ex.category),
                name: format!("examples-{}", ex.category),
                title: format!("Example: {}", ex.category),
                description: ex.description.into(),
                topic: "Examples".into(),
                body: example_body(ex),
            });
        }
    }
    out
}

/// A doc body by URI whatever the switches say (prompts load the pitfalls guide and
/// references even when they are not listed as resources).
pub fn doc_body(uri: &str) -> Option<String> {
    if uri == "svc://grammar/spec" {
        return Some(lang::tools::grammar_spec());
    }
    content::docs()
        .iter()
        .find(|d| d.uri == uri)
        .map(|d| d.body.to_string())
}

/// One prompt argument: name, description, required.
pub struct PromptArg {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
}

pub struct PromptDef {
    pub name: &'static str,
    pub description: &'static str,
    pub args: Vec<PromptArg>,
    /// Reference documents loaded after the pitfalls guide.
    pub references: &'static [&'static str],
    /// The task, with `{arg}` placeholders.
    pub task: &'static str,
}

fn arg(name: &'static str, description: &'static str, required: bool) -> PromptArg {
    PromptArg {
        name,
        description,
        required,
    }
}

pub fn prompts() -> Vec<PromptDef> {
    vec![
        PromptDef {
            name: "write_module",
            description: "Write a new svc module",
            args: vec![
                arg("name", "module name", true),
                arg("purpose", "what the module does", true),
                arg(
                    "has_impl",
                    "split declarations and implementations (true/false, default true)",
                    false,
                ),
            ],
            references: &[
                "svc://guide/patterns",
                "svc://docs/code-organization",
                "svc://docs/functions-objects",
            ],
            task: "Write an svc module named `{name}` whose purpose is: {purpose}.\nSplit declarations from implementations (`impl` blocks): {has_impl}.",
        },
        PromptDef {
            name: "write_impl",
            description: "Write the implementations for svc declarations",
            args: vec![arg("declarations", "the declarations to implement", true)],
            references: &["svc://guide/patterns", "svc://docs/functions-objects"],
            task: "Write `impl` blocks implementing these svc declarations:\n\n```svc\n{declarations}\n```",
        },
        PromptDef {
            name: "write_walker",
            description: "Write an svc walker",
            args: vec![
                arg("name", "walker name", true),
                arg("purpose", "what the walker does", true),
                arg("node_types", "node types it visits", true),
            ],
            references: &[
                "svc://guide/patterns",
                "svc://docs/osp",
                "svc://docs/walker-responses",
            ],
            task: "Write an svc walker named `{name}` that visits nodes of type {node_types}. Purpose: {purpose}.",
        },
        PromptDef {
            name: "write_node",
            description: "Write an svc node archetype",
            args: vec![
                arg("name", "node name", true),
                arg("fields", "its fields", true),
            ],
            references: &["svc://guide/patterns", "svc://docs/osp"],
            task: "Write an svc node archetype named `{name}` with these fields: {fields}.",
        },
        PromptDef {
            name: "write_test",
            description: "Write svc tests for a module",
            args: vec![
                arg("module_name", "module under test", true),
                arg("functions_to_test", "functions to cover", true),
            ],
            references: &["svc://docs/testing"],
            task: "Write svc `test` blocks for module `{module_name}` covering: {functions_to_test}.",
        },
        PromptDef {
            name: "write_ability",
            description: "Write an svc ability or function",
            args: vec![
                arg("name", "ability name", true),
                arg("signature", "its signature", true),
                arg("purpose", "what it does", true),
            ],
            references: &["svc://docs/functions-objects", "svc://docs/osp"],
            task: "Write an svc ability named `{name}` with signature `{signature}`. Purpose: {purpose}.",
        },
        PromptDef {
            name: "debug_error",
            description: "Diagnose and fix an svc error",
            args: vec![
                arg("error_output", "the error as printed", true),
                arg("code", "the code that produced it", true),
            ],
            references: &["svc://docs/debugging"],
            task: "This svc code fails:\n\n```svc\n{code}\n```\n\nwith this output:\n\n```\n{error_output}\n```\n\nExplain the cause and give the fixed code.",
        },
        PromptDef {
            name: "fix_type_error",
            description: "Fix an svc type-check error",
            args: vec![
                arg("error_output", "the checker's message", true),
                arg("code", "the code", true),
            ],
            references: &["svc://docs/primitives", "svc://docs/functions-objects"],
            task: "`svc check` reports this type error:\n\n```\n{error_output}\n```\n\nfor this code:\n\n```svc\n{code}\n```\n\nFix the code so it type-checks, changing as little as possible.",
        },
        PromptDef {
            name: "migrate_python",
            description: "Translate Python code to idiomatic svc",
            args: vec![arg("python_code", "the Python code", true)],
            references: &["svc://docs/python-integration", "svc://guide/patterns"],
            task: "Translate this Python code to idiomatic svc (use `obj` for classes, `def` for functions, braces and semicolons):\n\n```python\n{python_code}\n```",
        },
    ]
}
