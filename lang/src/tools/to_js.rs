//! placeholder
pub fn svc_to_js(_src: &str) -> Result<String, Vec<String>> { Err(vec![]) }
