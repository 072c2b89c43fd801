//! placeholder
pub fn grammar_spec() -> String { String::new() }
pub fn grammar_tokens() -> String { String::new() }
