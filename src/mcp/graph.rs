//! `graph_visualize`: the in-memory graph a snippet left behind, walked from root
//! (iteratively, bounded by depth and the node and edge limits) and rendered as DOT or
//! JSON. Root is always present, even when the program built nothing.

use lang::host::{AnchorId, StoredAnchor, format_id};
use serde_json::{Value as Json, json};
use std::collections::{HashMap, HashSet, VecDeque};

pub struct GraphQuery {
    /// Hops from root; `None` = unlimited.
    pub depth: Option<u64>,
    pub bfs: bool,
    pub node_limit: usize,
    pub edge_limit: usize,
}

struct Walked<'a> {
    nodes: Vec<(AnchorId, Option<&'a StoredAnchor>)>,
    edges: Vec<&'a StoredAnchor>,
    truncated: bool,
}

fn walk<'a>(
    anchors: &'a HashMap<AnchorId, StoredAnchor>,
    root: AnchorId,
    q: &GraphQuery,
) -> Walked<'a> {
    let mut out = Walked {
        nodes: vec![(root, anchors.get(&root))],
        edges: Vec::new(),
        truncated: false,
    };
    let mut seen: HashSet<AnchorId> = HashSet::from([root]);
    let mut frontier: VecDeque<(AnchorId, u64)> = VecDeque::from([(root, 0)]);
    while let Some((id, d)) = if q.bfs {
        frontier.pop_front()
    } else {
        frontier.pop_back()
    } {
        if q.depth.is_some_and(|max| d >= max) {
            continue;
        }
        let Some(edge_ids) = anchors.get(&id).and_then(|n| n.edges.as_ref()) else {
            continue;
        };
        for eid in edge_ids {
            let Some(edge) = anchors.get(eid) else {
                continue;
            };
            let Some(ends) = edge.ends else { continue };
            let other = if ends.source == id {
                ends.target
            } else if ends.undirected && ends.target == id {
                ends.source
            } else {
                continue; // incoming edge: shown from its source
            };
            let new_node = !seen.contains(&other);
            if new_node && out.nodes.len() >= q.node_limit {
                out.truncated = true;
                continue;
            }
            if out.edges.len() >= q.edge_limit {
                out.truncated = true;
                break;
            }
            if !out.edges.iter().any(|e| e.id == edge.id) {
                out.edges.push(edge);
            }
            if new_node {
                seen.insert(other);
                out.nodes.push((other, anchors.get(&other)));
                frontier.push_back((other, d + 1));
            }
        }
    }
    out
}

fn type_of(a: Option<&StoredAnchor>) -> String {
    a.map(|a| a.arch_type.to_string())
        .unwrap_or_else(|| "Root".into())
}

fn fields_of(a: Option<&StoredAnchor>) -> Json {
    a.and_then(|a| serde_json::from_str(&a.fields).ok())
        .unwrap_or_else(|| json!({}))
}

fn label(a: Option<&StoredAnchor>) -> String {
    let ty = type_of(a);
    let fields = fields_of(a);
    let mut parts = Vec::new();
    if let Some(map) = fields.as_object() {
        for (k, v) in map.iter().take(4) {
            let mut s = v.to_string();
            if s.len() > 24 {
                let mut end = 24;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                s.truncate(end);
                s.push('…');
            }
            parts.push(format!("{k}={s}"));
        }
    }
    if parts.is_empty() {
        ty
    } else {
        format!("{ty}({})", parts.join(", "))
    }
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The graph as `format` (`dot` text or a JSON object).
pub fn render(
    anchors: &HashMap<AnchorId, StoredAnchor>,
    root: AnchorId,
    q: &GraphQuery,
    dot: bool,
) -> Json {
    let w = walk(anchors, root, q);
    if dot {
        let mut s = String::from("digraph svc {\n    node [shape=box, style=rounded];\n");
        for (id, a) in &w.nodes {
            s.push_str(&format!(
                "    \"{}\" [label=\"{}\"];\n",
                format_id(*id),
                dot_escape(&label(*a))
            ));
        }
        for e in &w.edges {
            if let Some(ends) = e.ends {
                let arrow = if ends.undirected { ", dir=none" } else { "" };
                let lbl = if e.arch_type.as_ref() == "GenericEdge" {
                    String::new()
                } else {
                    e.arch_type.to_string()
                };
                s.push_str(&format!(
                    "    \"{}\" -> \"{}\" [label=\"{}\"{arrow}];\n",
                    format_id(ends.source),
                    format_id(ends.target),
                    dot_escape(&lbl)
                ));
            }
        }
        s.push_str("}\n");
        Json::String(s)
    } else {
        let nodes: Vec<Json> = w
            .nodes
            .iter()
            .map(|(id, a)| json!({"id": format_id(*id), "type": type_of(*a), "label": label(*a), "fields": fields_of(*a), "root": *id == root}))
            .collect();
        let edges: Vec<Json> = w
            .edges
            .iter()
            .filter_map(|e| {
                let ends = e.ends?;
                Some(json!({"id": format_id(e.id), "type": e.arch_type.to_string(), "source": format_id(ends.source), "target": format_id(ends.target), "undirected": ends.undirected, "fields": fields_of(Some(e))}))
            })
            .collect();
        json!({"nodes": nodes, "edges": edges, "truncated": w.truncated})
    }
}
