//! `svc mcp`: the tool-protocol server (MCP) for AI clients writing svc code.
//!
//! Layout: `config` (`[mcp]`), `catalog` (tools, prompts, resources and the switches),
//! `tools` (the 19 tools), `commands` (CLI introspection), `graph` (graph_visualize),
//! `search` (search_docs, knowledge map), `handler` (rmcp's `ServerHandler`), `gate`
//! (the JSON-RPC envelope in front of rmcp; the stdio transport), `http` (SSE and
//! streamable HTTP). `content` holds the bundled documents and examples.

pub mod catalog;
pub mod commands;
pub mod config;
pub mod content;
pub mod gate;
pub mod graph;
pub mod handler;
pub mod http;
pub mod search;
pub mod tools;

use config::{McpConfig, Transport};
use std::process::ExitCode;
use std::sync::Arc;

/// Command-line overrides of `[mcp]`.
pub struct Overrides {
    pub transport: Option<Transport>,
    pub port: Option<u16>,
    pub host: Option<String>,
}

/// `svc mcp --inspect`: every resource, tool and prompt, as text.
pub fn inspect_text(config: &McpConfig) -> String {
    let mut out = String::new();
    let resources = catalog::resources(config);
    out.push_str(&format!("Resources ({}):\n", resources.len()));
    for r in &resources {
        out.push_str(&format!("  {}  {}\n", r.uri, r.title));
    }
    let tools = catalog::tools(config);
    out.push_str(&format!("\nTools ({}):\n", tools.len()));
    for t in &tools {
        out.push_str(&format!("  {}  {}\n", t.name, t.description));
    }
    let prompts = catalog::prompts();
    out.push_str(&format!("\nPrompts ({}):\n", prompts.len()));
    for p in &prompts {
        let args: Vec<String> = p
            .args
            .iter()
            .map(|a| {
                if a.required {
                    a.name.to_string()
                } else {
                    format!("{}?", a.name)
                }
            })
            .collect();
        out.push_str(&format!(
            "  {}({})  {}\n",
            p.name,
            args.join(", "),
            p.description
        ));
    }
    out
}

pub fn run(overrides: Overrides, inspect: bool) -> anyhow::Result<ExitCode> {
    let mut config = McpConfig::load(std::path::Path::new("."))?;
    if let Some(t) = overrides.transport {
        config.transport = t;
    }
    if let Some(p) = overrides.port {
        config.port = p;
    }
    if let Some(h) = overrides.host {
        config.host = h;
    }
    if inspect {
        print!("{}", inspect_text(&config));
        return Ok(ExitCode::SUCCESS);
    }
    let transport = config.transport;
    let (host, port) = (config.host.clone(), config.port);
    let handler = handler::Handler {
        tools: Arc::new(tools::Tools::new(config)),
    };
    match transport {
        Transport::Stdio => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            rt.block_on(gate::serve_stdio(handler))?;
            // Worker threads of abandoned operations must not keep the process alive.
            rt.shutdown_timeout(std::time::Duration::from_millis(100));
        }
        Transport::Sse => http::serve(handler, true, &host, port)?,
        Transport::StreamableHttp => http::serve(handler, false, &host, port)?,
    }
    Ok(ExitCode::SUCCESS)
}
