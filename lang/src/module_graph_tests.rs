//! The crate's module graph points down only: every top-level module imports only
//! modules listed before it in [`LAYERS`], so there is no cycle and no module imports one
//! that drives it (issue 11, ARCHITECTURE.md "Code map"). Read from the source text:
//! `crate::m` paths anywhere, and `super::m` paths that climb to the crate root. Test
//! code (files named `tests` or `*_tests`, and everything after a `#[cfg(test)]`) may
//! drive the crate from any level and is not counted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Lowest first. A module may import only modules before it.
const LAYERS: &[&str] = &[
    "span", "host", "diag", "limits", "names", "ids", "endpoint", "pyfmt", "ast", "lexer",
    "parser", "checker", "interp", "load", "driver", "serve", "testrun", "embed", "tools",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read lang/src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// `(importing module, imported module) -> a file where it happens`.
fn edges() -> BTreeMap<(String, String), String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src");
        let mut parts: Vec<String> = rel
            .with_extension("")
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
            parts.pop();
        }
        let Some(top) = parts.first().cloned() else {
            continue; // lib.rs: the root declares every module
        };
        if parts.iter().any(|p| p == "tests" || p.ends_with("_tests")) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read source");
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or_default();
            let mut rest = code;
            while let Some(i) = rest.find("crate::") {
                let name = ident(&rest[i + 7..]);
                if !name.is_empty() && name != top {
                    edges
                        .entry((top.clone(), name.to_string()))
                        .or_insert_with(|| rel.display().to_string());
                }
                rest = &rest[i + 7..];
            }
            // `super::` climbing to the root: as many as the file's depth.
            let climb = "super::".repeat(parts.len());
            let mut rest = code;
            while let Some(i) = rest.find(&climb) {
                let after = &rest[i + climb.len()..];
                let name = ident(after);
                if !after.starts_with("super::") && !name.is_empty() && name != top {
                    edges
                        .entry((top.clone(), name.to_string()))
                        .or_insert_with(|| rel.display().to_string());
                }
                rest = after;
            }
        }
    }
    edges
}

#[test]
fn every_import_points_to_a_lower_layer() {
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let edges = edges();
    assert!(
        edges.keys().any(|(a, b)| a == "interp" && b == "ast"),
        "the scan found no imports at all: {edges:?}"
    );
    let mut wrong = Vec::new();
    for ((from, to), file) in &edges {
        match (rank(from), rank(to)) {
            (Some(a), Some(b)) if b < a => {}
            (None, _) => wrong.push(format!("{from} (in {file}) is not in LAYERS")),
            (_, None) => {} // an item of the crate root (a macro or re-export), not a module
            _ => wrong.push(format!(
                "{from} imports {to} ({file}), which is not below it"
            )),
        }
    }
    assert!(wrong.is_empty(), "module graph:\n{}", wrong.join("\n"));
}
