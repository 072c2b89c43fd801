//! PLACEHOLDER (mcp branch): the "tools" helper owns this file; its version replaces this
//! one at merge.

/// Translate Python to svc: `Ok((code, warnings))` or `Err(messages)`.
pub fn py_to_svc(_python: &str) -> Result<(String, Vec<String>), Vec<String>> {
    Err(vec![
        "translation from Python is not available in this build".into(),
    ])
}
