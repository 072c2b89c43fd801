//! `serve::graph_view`: the part of the graph a caller may read, from a start anchor,
//! breadth-first, as JSON for the server's graph endpoints (`/graph/data`, `/traverse`).
//!
//! Every hop goes through `hop`, which asks the one access decision (`Interp::may`) for
//! each edge and far node, so a caller never sees an anchor it may not read. The walk is
//! iterative (one frontier per level) and bounded by depth, node and edge counts and the
//! call's time budget.

use super::value::{FxHashMap, Handle, Value};
use super::{Ctx, R};
use crate::ast::{self, EdgeDir};
use crate::endpoint::{CallError, CallOutcome, GraphQuery, GraphShape};
use crate::host::format_id;
use serde_json::{Map, Value as Json, json};

/// Labels longer than this (characters) are cut with `…`.
const MAX_LABEL_CHARS: usize = 80;

/// What the walk collected: nodes in visit order, edges `(edge, source, target)`.
struct Collected {
    nodes: Vec<Handle>,
    edges: Vec<(Handle, Handle, Handle)>,
    truncated: bool,
}

impl super::Interp<'_> {
    /// `serve::graph_view`.
    pub fn serve_graph(&mut self, q: &GraphQuery) -> Result<CallOutcome, CallError> {
        let collected = match self.graph_walk(q) {
            Ok(Some(c)) => c,
            Ok(None) => {
                let id = q.source.map_or_else(|| "root".to_string(), format_id);
                return Err(CallError::NotFound(format!(
                    "node or edge '{id}' not found"
                )));
            }
            Err(e) => return Err(self.call_error(e)),
        };
        let result = match q.shape {
            GraphShape::Data => self.graph_data_json(&collected),
            GraphShape::Traverse => self.traverse_json(&collected, q.detailed),
        };
        match result {
            Ok(result) => Ok(CallOutcome {
                result,
                reports: Vec::new(),
            }),
            Err(e) => Err(self.call_error(e)),
        }
    }

    /// The readable anchors reachable from the query's source; `None` when the source
    /// does not exist or may not be read.
    fn graph_walk(&mut self, q: &GraphQuery) -> R<Option<Collected>> {
        let start = match q.source {
            None => self.root_handle()?,
            Some(id) => match self.handle_of(id)? {
                Some(h) if self.can_read(h)? => h,
                _ => return Ok(None),
            },
        };
        let mut out = Collected {
            nodes: Vec::new(),
            edges: Vec::new(),
            truncated: false,
        };
        let mut seen: FxHashMap<Handle, ()> = FxHashMap::default();
        let mut frontier = Vec::new();
        // An edge as the source: the edge and its readable ends, then on from its target.
        if let Some(ends) = self.graph.slot(start).ends() {
            let (Some(s), Some(t)) = (
                self.handle_of(ends.source())?,
                self.handle_of(ends.target())?,
            ) else {
                return Ok(None);
            };
            for n in [s, t] {
                if self.can_read(n)? && seen.insert(n, ()).is_none() {
                    out.nodes.push(n);
                }
            }
            out.edges.push((start, s, t));
            if seen.contains_key(&t) {
                frontier.push(t);
            }
        } else {
            seen.insert(start, ());
            out.nodes.push(start);
            frontier.push(start);
        }
        let op = ast::EdgeOp {
            dir: EdgeDir::Out,
            edge_type: None,
            conds: vec![],
            span: crate::span::Span::DUMMY,
        };
        let ctx = Ctx {
            scope: self.builtins.clone(),
            this: None,
            here: None,
            visitor: None,
            class: None,
            file: 0,
        };
        let mut level: u32 = 0;
        let mut seen_edges: FxHashMap<Handle, ()> = FxHashMap::default();
        for &(e, _, _) in &out.edges {
            seen_edges.insert(e, ());
        }
        while !frontier.is_empty() && q.depth.is_none_or(|d| level < d) {
            let mut next = Vec::new();
            for &n in &frontier {
                self.check_deadline()?;
                for (e, m) in self.hop(&[n], &op, None, &ctx)? {
                    self.poll()?;
                    if !self.type_allowed(e, q.edge_types.as_deref())
                        || !self.type_allowed(m, q.node_types.as_deref())
                    {
                        continue;
                    }
                    if seen_edges.contains_key(&e) {
                        continue;
                    }
                    if let std::collections::hash_map::Entry::Vacant(slot) = seen.entry(m) {
                        if out.nodes.len() >= q.max_nodes {
                            out.truncated = true;
                            continue;
                        }
                        slot.insert(());
                        out.nodes.push(m);
                        next.push(m);
                    }
                    if out.edges.len() >= q.max_edges {
                        out.truncated = true;
                        continue;
                    }
                    seen_edges.insert(e, ());
                    out.edges.push((e, n, m));
                }
            }
            frontier = next;
            level += 1;
        }
        Ok(Some(out))
    }

    fn type_allowed(&self, h: Handle, types: Option<&[String]>) -> bool {
        let Some(types) = types else {
            return true;
        };
        let class = &self.graph.slot(h).class;
        types.iter().any(|t| **t == *class.name)
            || class
                .mro
                .iter()
                .any(|c| types.iter().any(|t| **t == *c.name))
    }

    fn anchor_id(&self, h: Handle) -> String {
        format_id(self.graph.id_of(h))
    }

    fn type_name(&self, h: Handle) -> String {
        self.graph.slot(h).class.name.to_string()
    }

    /// `repr` of an anchor, cut to `MAX_LABEL_CHARS`.
    fn label(&mut self, h: Handle) -> R<String> {
        let text = self.repr(&Value::Anchor(h))?;
        if text.chars().count() <= MAX_LABEL_CHARS {
            return Ok(text);
        }
        let mut cut: String = text.chars().take(MAX_LABEL_CHARS - 1).collect();
        cut.push('…');
        Ok(cut)
    }

    /// The public `has` fields of a readable anchor, as the wire encoder writes them.
    fn context(&mut self, h: Handle) -> R<Json> {
        let wire = self.to_wire(&Value::Anchor(h))?;
        let mut fields = Map::new();
        if let Json::Object(map) = wire {
            for (k, v) in map {
                if !k.starts_with("_svc_") {
                    fields.insert(k, v);
                }
            }
        }
        Ok(Json::Object(fields))
    }

    /// decisions.md: `{"version": "1.0", "nodes": [{id, label, type}], "edges": [{id,
    /// from, to, label}]}`, plus `truncated` when a bound cut the walk short.
    fn graph_data_json(&mut self, c: &Collected) -> R<Json> {
        let mut nodes = Vec::with_capacity(c.nodes.len());
        for &n in &c.nodes {
            nodes.push(json!({
                "id": self.anchor_id(n),
                "label": self.label(n)?,
                "type": self.type_name(n),
            }));
        }
        let mut edges = Vec::with_capacity(c.edges.len());
        for &(e, s, t) in &c.edges {
            edges.push(json!({
                "id": self.anchor_id(e),
                "from": self.anchor_id(s),
                "to": self.anchor_id(t),
                "label": self.type_name(e),
            }));
        }
        Ok(json!({
            "version": "1.0",
            "nodes": nodes,
            "edges": edges,
            "truncated": c.truncated,
        }))
    }

    /// decisions.md: `{nodes: [{id, type, edges, context?}], edges: [{id, type, source,
    /// target, context?}]}`; a node's `edges` lists the ids of the returned edges that
    /// start or end at it.
    fn traverse_json(&mut self, c: &Collected, detailed: bool) -> R<Json> {
        let mut touching: FxHashMap<Handle, Vec<String>> = FxHashMap::default();
        for &(e, s, t) in &c.edges {
            let id = self.anchor_id(e);
            touching.entry(s).or_default().push(id.clone());
            if t != s {
                touching.entry(t).or_default().push(id);
            }
        }
        let mut nodes = Vec::with_capacity(c.nodes.len());
        for &n in &c.nodes {
            let mut node = Map::new();
            node.insert("id".into(), json!(self.anchor_id(n)));
            node.insert("type".into(), json!(self.type_name(n)));
            node.insert(
                "edges".into(),
                json!(touching.remove(&n).unwrap_or_default()),
            );
            if detailed {
                node.insert("context".into(), self.context(n)?);
            }
            nodes.push(Json::Object(node));
        }
        let mut edges = Vec::with_capacity(c.edges.len());
        for &(e, s, t) in &c.edges {
            let mut edge = Map::new();
            edge.insert("id".into(), json!(self.anchor_id(e)));
            edge.insert("type".into(), json!(self.type_name(e)));
            edge.insert("source".into(), json!(self.anchor_id(s)));
            edge.insert("target".into(), json!(self.anchor_id(t)));
            if detailed {
                edge.insert("context".into(), self.context(e)?);
            }
            edges.push(Json::Object(edge));
        }
        Ok(json!({"nodes": nodes, "edges": edges, "truncated": c.truncated}))
    }
}
