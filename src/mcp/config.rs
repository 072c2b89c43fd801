//! `[mcp]` in `svc.toml`: the tool server's settings (spec, Limits table). Read from the
//! `svc.toml` of the directory `svc mcp` starts in; flags on the command line win.

use anyhow::{anyhow, bail};
use std::path::{Path, PathBuf};

/// The three transports of the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    Stdio,
    Sse,
    StreamableHttp,
}

impl Transport {
    pub fn parse(s: &str) -> Option<Transport> {
        match s {
            "stdio" => Some(Transport::Stdio),
            "sse" => Some(Transport::Sse),
            "streamable-http" => Some(Transport::StreamableHttp),
            _ => None,
        }
    }
}

/// The resolved `[mcp]` section.
#[derive(Clone, Debug, PartialEq)]
pub struct McpConfig {
    pub transport: Transport,
    pub port: u16,
    pub host: String,
    pub expose_grammar: bool,
    pub expose_docs: bool,
    pub expose_examples: bool,
    pub expose_pitfalls: bool,
    pub enable_validate: bool,
    pub enable_format: bool,
    pub enable_py2svc: bool,
    pub enable_ast: bool,
    /// Working directory of `execute_command` (relative paths are taken from where
    /// `svc mcp` started).
    pub project_root: PathBuf,
}

impl Default for McpConfig {
    fn default() -> McpConfig {
        McpConfig {
            transport: Transport::Stdio,
            port: 3001,
            host: "127.0.0.1".into(),
            expose_grammar: true,
            expose_docs: true,
            expose_examples: true,
            expose_pitfalls: true,
            enable_validate: true,
            enable_format: true,
            enable_py2svc: true,
            enable_ast: false,
            project_root: PathBuf::from("."),
        }
    }
}

impl McpConfig {
    /// Defaults overlaid with `<dir>/svc.toml`'s `[mcp]` table, if the file exists.
    pub fn load(dir: &Path) -> anyhow::Result<McpConfig> {
        let file = dir.join(crate::config::CONFIG_FILE);
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(McpConfig::default()),
            Err(e) => bail!("cannot read {}: {e}", file.display()),
        };
        McpConfig::from_toml(&file, &text)
    }

    pub fn from_toml(file: &Path, text: &str) -> anyhow::Result<McpConfig> {
        let table: toml::Table = toml::from_str(text)
            .map_err(|e| anyhow!("{}: {}", file.display(), e.to_string().trim_end()))?;
        let mut c = McpConfig::default();
        let Some(section) = table.get("mcp") else {
            return Ok(c);
        };
        let section = section
            .as_table()
            .ok_or_else(|| anyhow!("{}: `mcp` must be a table", file.display()))?;
        for (key, value) in section {
            let bad = |want: &str| {
                anyhow!(
                    "{}: [mcp] {key} must be {want}, found {}",
                    file.display(),
                    value.type_str()
                )
            };
            let flag = || value.as_bool().ok_or_else(|| bad("a boolean"));
            match key.as_str() {
                "transport" => {
                    let s = value.as_str().ok_or_else(|| bad("a string"))?;
                    c.transport = Transport::parse(s).ok_or_else(|| {
                        anyhow!(
                            "{}: [mcp] transport must be one of stdio, sse, streamable-http, found `{s}`",
                            file.display()
                        )
                    })?;
                }
                "port" => {
                    let n = value.as_integer().ok_or_else(|| bad("an integer"))?;
                    c.port = u16::try_from(n)
                        .ok()
                        .filter(|p| *p > 0)
                        .ok_or_else(|| bad("a port number (1-65535)"))?;
                }
                "host" => {
                    let s = value.as_str().ok_or_else(|| bad("a string"))?;
                    if s.trim().is_empty() {
                        return Err(bad("a non-empty string"));
                    }
                    c.host = s.trim().to_string();
                }
                "expose_grammar" => c.expose_grammar = flag()?,
                "expose_docs" => c.expose_docs = flag()?,
                "expose_examples" => c.expose_examples = flag()?,
                "expose_pitfalls" => c.expose_pitfalls = flag()?,
                "enable_validate" => c.enable_validate = flag()?,
                "enable_format" => c.enable_format = flag()?,
                "enable_py2svc" => c.enable_py2svc = flag()?,
                "enable_ast" => c.enable_ast = flag()?,
                "project_root" => {
                    let s = value.as_str().ok_or_else(|| bad("a string"))?;
                    c.project_root = PathBuf::from(s);
                }
                other => eprintln!(
                    "warning: {}: unknown key [mcp] {other} (ignored)",
                    file.display()
                ),
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_overlay_defaults() {
        let c = McpConfig::from_toml(
            Path::new("svc.toml"),
            "[mcp]\ntransport = \"sse\"\nport = 4000\nenable_ast = true\nexpose_docs = false\n",
        )
        .expect("valid");
        assert_eq!(c.transport, Transport::Sse);
        assert_eq!(c.port, 4000);
        assert!(c.enable_ast && !c.expose_docs && c.expose_grammar);
        assert!(McpConfig::from_toml(Path::new("svc.toml"), "[mcp]\nport = 0\n").is_err());
        assert!(McpConfig::from_toml(Path::new("svc.toml"), "[mcp]\ntransport = \"x\"\n").is_err());
    }
}
