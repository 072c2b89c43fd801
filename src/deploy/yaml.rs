//! A small YAML emitter for the deploy manifests: JSON values (`serde_json::Value`) as
//! block-style YAML documents. Strings are always double-quoted with JSON escapes (a
//! valid YAML 1.2 double-quoted scalar), so no value is ever read back as another type
//! (`"yes"`, `"1.0"`, `"null"` stay strings). Keys that are plain identifiers stay
//! unquoted. The manifests are our own fixed-depth structures, so the recursion here is
//! bounded by the builder's nesting, never by data.

use serde_json::Value as Json;

/// A multi-document stream: each document starts with `---`.
pub fn stream(docs: &[Json]) -> String {
    let mut out = String::new();
    for doc in docs {
        out.push_str("---\n");
        document(doc, &mut out);
    }
    out
}

fn document(v: &Json, out: &mut String) {
    match v {
        Json::Object(map) if !map.is_empty() => mapping(map, 0, out),
        Json::Array(items) if !items.is_empty() => sequence(items, 0, out),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn indent(n: usize, out: &mut String) {
    for _ in 0..n {
        out.push(' ');
    }
}

/// A scalar, or `{}` / `[]` for an empty collection.
fn scalar(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => quoted(s),
        Json::Object(_) => "{}".into(),
        Json::Array(_) => "[]".into(),
    }
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    if plain { k.to_string() } else { quoted(k) }
}

fn is_block(v: &Json) -> bool {
    match v {
        Json::Object(m) => !m.is_empty(),
        Json::Array(a) => !a.is_empty(),
        _ => false,
    }
}

fn mapping(map: &serde_json::Map<String, Json>, level: usize, out: &mut String) {
    for (k, v) in map {
        indent(level, out);
        out.push_str(&key(k));
        out.push(':');
        if is_block(v) {
            out.push('\n');
            match v {
                Json::Object(m) => mapping(m, level + 2, out),
                Json::Array(a) => sequence(a, level, out),
                _ => {}
            }
        } else {
            out.push(' ');
            out.push_str(&scalar(v));
            out.push('\n');
        }
    }
}

/// Items at `level`, each `- `; a mapping item's first key sits on the dash line.
fn sequence(items: &[Json], level: usize, out: &mut String) {
    for item in items {
        indent(level, out);
        out.push_str("- ");
        match item {
            Json::Object(m) if !m.is_empty() => {
                let mut first = String::new();
                mapping(m, level + 2, &mut first);
                // Drop the first line's indentation: it follows the dash.
                out.push_str(&first[level + 2..]);
            }
            Json::Array(a) if !a.is_empty() => {
                out.push('\n');
                sequence(a, level + 2, out);
            }
            other => {
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_style_with_quoted_strings() {
        let doc = json!({
            "apiVersion": "v1",
            "metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "a"}},
            "spec": {"ports": [{"port": 80, "name": "http"}], "args": ["x", "y: z"],
                     "empty": {}, "none": [], "flag": true},
        });
        let text = stream(&[doc]);
        assert_eq!(
            text,
            "---\napiVersion: \"v1\"\nmetadata:\n  name: \"a\"\n  labels:\n    \
             app.kubernetes.io/name: \"a\"\nspec:\n  ports:\n  - port: 80\n    name: \"http\"\n  \
             args:\n  - \"x\"\n  - \"y: z\"\n  empty: {}\n  none: []\n  flag: true\n"
        );
    }
}
