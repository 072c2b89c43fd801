//! The tool-protocol server (`svc mcp`); placeholder of the docs branch, replaced by the mcp helper's module at merge.
pub mod content;
