//! placeholder
pub fn svc_to_python(_src: &str) -> Result<String, Vec<String>> { Err(vec![]) }
