//! The MCP server proper, on rmcp's `ServerHandler`: tools, prompts and resources from
//! the catalogue. rmcp answers `initialize`, `ping` and the protocol's bookkeeping.

use super::catalog;
use super::tools::Tools;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value as Json, json};
use std::sync::Arc;

#[derive(Clone)]
pub struct Handler {
    pub tools: Arc<Tools>,
}

fn decode<T: serde::de::DeserializeOwned>(v: Json) -> Result<T, ErrorData> {
    serde_json::from_value(v)
        .map_err(|e| ErrorData::internal_error(format!("cannot build the answer: {e}"), None))
}

/// `tools/list` entries as JSON.
pub fn tool_list(tools: &Tools) -> Vec<Json> {
    catalog::tools(&tools.config)
        .into_iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.schema}))
        .collect()
}

pub fn prompt_list() -> Vec<Json> {
    catalog::prompts()
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "description": p.description,
                "arguments": p.args.iter().map(|a| json!({"name": a.name, "description": a.description, "required": a.required})).collect::<Vec<_>>(),
            })
        })
        .collect()
}

pub fn resource_list(tools: &Tools) -> Vec<Json> {
    catalog::resources(&tools.config)
        .iter()
        .map(|r| json!({"uri": r.uri, "name": r.name, "title": r.title, "description": r.description, "mimeType": "text/markdown"}))
        .collect()
}

/// The text of prompt `name` with `args`, or why not.
pub fn render_prompt(name: &str, args: &Map<String, Json>) -> Result<(String, String), String> {
    let prompts = catalog::prompts();
    let Some(p) = prompts.iter().find(|p| p.name == name) else {
        return Err(format!("unknown prompt `{name}`"));
    };
    let mut task = p.task.to_string();
    for a in &p.args {
        let value = match args.get(a.name) {
            Some(Json::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Json::Bool(b)) => b.to_string(),
            Some(Json::Number(n)) => n.to_string(),
            _ if a.required => {
                return Err(format!(
                    "prompt `{name}`: missing required argument `{}`",
                    a.name
                ));
            }
            _ => "true".to_string(), // has_impl, the only optional argument, defaults to true
        };
        if value.len() > super::tools::MAX_INPUT_BYTES {
            return Err(format!(
                "prompt `{name}`: argument `{}` is larger than 100 KB",
                a.name
            ));
        }
        task = task.replace(&format!("{{{}}}", a.name), &value);
    }
    let mut text = format!(
        "You are writing code in the svc language (`.svc` files, Jac syntax: braces and \
         semicolons). Follow the pitfalls guide and the reference below, then check your \
         answer with the `validate_svc` tool.\n\n## Task\n\n{task}\n"
    );
    let mut refs = vec!["svc://guide/pitfalls"];
    refs.extend(p.references.iter().copied());
    for uri in refs {
        if let Some(body) = catalog::doc_body(uri) {
            text.push_str(&format!("\n---\n\n## Reference: {uri}\n\n{body}\n"));
        }
    }
    Ok((p.description.to_string(), text))
}

impl ServerHandler for Handler {
    /// The protocol versions with the `initialize` handshake (up to 2025-11-25). rmcp
    /// 3.11 also speaks 2026-07-28, but its results there lack the `resultType` member
    /// that version's clients (the Python SDK 2.x among them) require; a client probing
    /// `server/discover` then falls back to the handshake.
    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        std::borrow::Cow::Borrowed(rmcp::model::ProtocolVersion::known_up_to(
            &rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("svc", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Tools, prompts and documentation for the svc language. Start with \
             understand_svc_and_platform, read svc://guide/pitfalls, and check code with \
             validate_svc before running it with run_svc.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        decode(json!({"tools": tool_list(&self.tools)}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let req = serde_json::to_value(&request).unwrap_or(Json::Null);
        let name = req
            .get("name")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string();
        if !catalog::tools(&self.tools.config)
            .iter()
            .any(|t| t.name == name)
        {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`"),
                None,
            ));
        }
        let args = match req.get("arguments") {
            Some(Json::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let answer = self.tools.call(&name, &args).await;
        let text = serde_json::to_string_pretty(&answer.value).unwrap_or_default();
        let result: rmcp::model::CallToolResult = decode(json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": answer.value,
            "isError": answer.is_error,
        }))?;
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        decode(json!({"prompts": prompt_list()}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let req = serde_json::to_value(&request).unwrap_or(Json::Null);
        let name = req.get("name").and_then(Json::as_str).unwrap_or_default();
        let args = match req.get("arguments") {
            Some(Json::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let (description, text) =
            render_prompt(name, &args).map_err(|e| ErrorData::invalid_params(e, None))?;
        let result: rmcp::model::GetPromptResult = decode(json!({
            "description": description,
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        }))?;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        decode(json!({"resources": resource_list(&self.tools)}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let req = serde_json::to_value(&request).unwrap_or(Json::Null);
        let uri = req.get("uri").and_then(Json::as_str).unwrap_or_default();
        let Some(r) = catalog::resources(&self.tools.config)
            .into_iter()
            .find(|r| r.uri == uri)
        else {
            return Err(ErrorData::resource_not_found(
                format!("unknown resource `{uri}`"),
                Some(json!({"uri": uri})),
            ));
        };
        let result: rmcp::model::ReadResourceResult = decode(json!({
            "contents": [{"uri": r.uri, "mimeType": "text/markdown", "text": r.body}],
        }))?;
        Ok(result.into())
    }
}
