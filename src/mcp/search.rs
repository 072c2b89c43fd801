//! `search_docs` (ranked with scores) and the knowledge map of
//! `understand_svc_and_platform`, over the resources the switches expose.

use super::catalog::{self, Resource};
use super::config::McpConfig;
use serde_json::{Value as Json, json};

fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    out.dedup();
    out.truncate(32);
    out
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count().min(50)
}

/// Score of `r` for `terms`: title hits weigh 5, URI 4, description 3, body 1 (capped),
/// plus 2 per term present at all; divided by the number of terms so scores of
/// different queries are comparable.
fn score(r: &Resource, terms: &[String]) -> f64 {
    let title = r.title.to_lowercase();
    let uri = r.uri.to_lowercase();
    let desc = r.description.to_lowercase();
    let body = r.body.to_lowercase();
    let mut total = 0.0;
    for t in terms {
        let hits = 5 * count(&title, t) + 4 * count(&uri, t) + 3 * count(&desc, t);
        let body_hits = count(&body, t);
        if hits + body_hits > 0 {
            total += 2.0 + hits as f64 + (body_hits as f64).sqrt();
        }
    }
    if terms.is_empty() {
        0.0
    } else {
        total / terms.len() as f64
    }
}

fn snippet(body: &str, terms: &[String]) -> String {
    let lower = body.to_lowercase();
    let at = terms
        .iter()
        .filter_map(|t| lower.find(t.as_str()))
        .min()
        .unwrap_or(0);
    // `lower` may differ in length from `body` for some scripts: map back safely.
    let at = if lower.len() == body.len() { at } else { 0 };
    let mut start = at.saturating_sub(80);
    while start > 0 && !body.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + 160).min(body.len());
    while end < body.len() && !body.is_char_boundary(end) {
        end += 1;
    }
    let text: String = body[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let pre = if start > 0 { "…" } else { "" };
    let post = if end < body.len() { "…" } else { "" };
    format!("{pre}{text}{post}")
}

pub fn search(config: &McpConfig, query: &str, limit: usize) -> Json {
    let terms = terms(query);
    let mut scored: Vec<(f64, Resource)> = catalog::resources(config)
        .into_iter()
        .filter(|r| !r.uri.starts_with("svc://grammar/"))
        .map(|r| (score(&r, &terms), r))
        .filter(|(s, _)| *s > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.uri.cmp(&b.1.uri)));
    let results: Vec<Json> = scored
        .iter()
        .take(limit)
        .map(|(s, r)| {
            json!({
                "uri": r.uri,
                "title": r.title,
                "description": r.description,
                "snippet": snippet(&r.body, &terms),
                "score": (s * 1000.0).round() / 1000.0,
            })
        })
        .collect();
    json!({"query": query, "total": results.len(), "results": results})
}

/// Markdown: every exposed resource URI, grouped by topic in first-seen order.
pub fn knowledge_map(config: &McpConfig) -> String {
    let resources = catalog::resources(config);
    let mut topics: Vec<&str> = Vec::new();
    for r in &resources {
        if !topics.contains(&r.topic.as_str()) {
            topics.push(&r.topic);
        }
    }
    let mut out = String::from(
        "# svc knowledge map\n\nsvc runs applications written in the svc language (`.svc` files): \
         nodes, edges and walkers on a persistent graph, served as HTTP endpoints. Read \
         `svc://guide/pitfalls` before writing code; check code with `validate_svc` and run \
         it with `run_svc`. Read any URI below with `get_resource`.\n",
    );
    for t in topics {
        out.push_str(&format!("\n## {t}\n\n"));
        for r in resources.iter().filter(|r| r.topic == t) {
            out.push_str(&format!("- `{}`: {} — {}\n", r.uri, r.title, r.description));
        }
    }
    out
}
