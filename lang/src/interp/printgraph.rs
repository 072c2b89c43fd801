//! `printgraph(nd=root, depth=-1, traverse=False, edge_type=None, bfs=True,
//! edge_limit=512, node_limit=512, file=None, format="dot")`: text of the graph around a
//! node as Graphviz DOT, a Mermaid flowchart or JSON.
//!
//! Semantics (jaclang's): edges are followed in both directions (`traverse=True` follows
//! outgoing edges only); `edge_type` is a list of edge type names to leave out; self
//! loops are skipped; `depth` counts hops from `nd` (-1 = unbounded); `bfs=False` visits
//! depth-first. The walk is iterative (a queue or an explicit stack), touches at most
//! `node_limit` nodes and `edge_limit` edges (both capped at `MAX_LIMIT`), and each node
//! is expanded once. svc has no file system for programs, so `file` is accepted and
//! ignored. DOT colours each node by its distance from `nd` (over the edges drawn) with
//! jaclang's palette, as jaclang does.

use super::*;
use crate::ast::EdgeDir;
use std::collections::VecDeque;
use std::fmt::Write as _;

/// jaclang's DOT fill colours, by a node's distance from the start (the last for 24+).
const DEPTH_COLORS: [&str; 25] = [
    "#FFE9E9", "#F0FFF0", "#F5E5FF", "#FFFFE0", "#D2FEFF", "#E8FFD7", "#FFDEAD", "#FFF0F5",
    "#F5FFFA", "#FFC0CB", "#7FFFD4", "#C0C0C0", "#ADD8E6", "#FFFAF0", "#f4f3f7", "#f5efff",
    "#b5d7fd", "#ffc0cb", "#FFC0CB", "#e1d4c0", "#FCDFFF", "#F0FFFF", "#F0F8FF", "#F8F8FF",
    "#F0FFFF",
];

/// Upper bound of `node_limit` / `edge_limit`, whatever the program asks.
pub const MAX_LIMIT: usize = 100_000;

/// The parsed arguments of one `printgraph` call.
pub(super) struct GraphQuery {
    pub start: Handle,
    pub depth: i64,
    pub outgoing_only: bool,
    pub skip_types: Vec<String>,
    pub bfs: bool,
    pub edge_limit: usize,
    pub node_limit: usize,
    pub format: String,
}

impl Interp<'_> {
    /// Read `printgraph`'s arguments (positional in declaration order, or by keyword).
    pub(super) fn printgraph_call(
        &mut self,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        const NAMES: [&str; 9] = [
            "nd",
            "depth",
            "traverse",
            "edge_type",
            "bfs",
            "edge_limit",
            "node_limit",
            "file",
            "format",
        ];
        if args.len() > NAMES.len() {
            return Err(self.err(
                "TypeError",
                format!(
                    "printgraph() takes at most 9 arguments ({} given)",
                    args.len()
                ),
            ));
        }
        let mut slots: [Option<Value>; 9] = Default::default();
        for (i, a) in args.into_iter().enumerate() {
            slots[i] = Some(a);
        }
        for (k, v) in kwargs {
            let Some(i) = NAMES.iter().position(|n| **n == *k) else {
                return Err(self.err(
                    "TypeError",
                    format!("printgraph() got an unexpected keyword argument '{k}'"),
                ));
            };
            slots[i] = Some(v);
        }
        let [
            nd,
            depth,
            traverse,
            edge_type,
            bfs,
            edge_limit,
            node_limit,
            _file,
            format,
        ] = slots;
        let start = match nd {
            Some(Value::Anchor(h)) => h,
            None | Some(Value::None) => self.root_handle()?,
            Some(other) => {
                let t = self.type_name_of(&other);
                return Err(self.err(
                    "TypeError",
                    format!("printgraph() nd must be a node, not '{t}'"),
                ));
            }
        };
        let int = |v: Option<Value>, d: i64| match v {
            Some(Value::Int(i)) => i,
            Some(Value::Bool(b)) => i64::from(b),
            _ => d,
        };
        let truthy = |v: Option<Value>, d: bool| match v {
            Some(Value::Bool(b)) => b,
            Some(Value::None) => false,
            Some(Value::Int(i)) => i != 0,
            Some(_) => true,
            None => d,
        };
        let mut skip_types = Vec::new();
        match edge_type {
            None | Some(Value::None) => {}
            Some(v) => {
                for t in self.iterate(&v)? {
                    match t {
                        Value::Str(s) => skip_types.push(s.to_string()),
                        Value::Class(c) => skip_types.push(c.name.to_string()),
                        _ => {}
                    }
                }
            }
        }
        let limit = |v: Option<Value>| int(v, 512).clamp(0, MAX_LIMIT as i64) as usize;
        let q = GraphQuery {
            start,
            depth: int(depth, -1),
            outgoing_only: truthy(traverse, false),
            skip_types,
            bfs: truthy(bfs, true),
            edge_limit: limit(edge_limit),
            node_limit: limit(node_limit),
            format: match format {
                Some(Value::Str(s)) => s.to_lowercase(),
                _ => "dot".to_string(),
            },
        };
        // jaclang's `format="json"` ignores every other argument: the whole graph
        // reachable from the root along outgoing edges, the root first.
        let q = if q.format == "json" {
            GraphQuery {
                start: self.root_handle()?,
                depth: -1,
                outgoing_only: true,
                skip_types: Vec::new(),
                bfs: false,
                edge_limit: MAX_LIMIT,
                node_limit: MAX_LIMIT,
                format: q.format,
            }
        } else {
            q
        };
        let text = self.printgraph(&q)?;
        Ok(Value::str(&text))
    }

    /// Edges of `n` in its edge-list order as (edge, source, target, other end).
    fn graph_edges_of(
        &mut self,
        n: Handle,
        q: &GraphQuery,
        ctx: &Ctx,
    ) -> R<Vec<(Handle, Handle, Handle, Handle)>> {
        let op = ast::EdgeOp {
            dir: EdgeDir::Any,
            edge_type: None,
            conds: vec![],
            span: crate::span::Span::DUMMY,
        };
        let nid = self.graph.id_of(n);
        let mut out = Vec::new();
        for (e, m) in self.hop(&[n], &op, None, ctx)? {
            if m == n {
                continue;
            }
            let incoming = self
                .graph
                .slot(e)
                .ends()
                .is_some_and(|ends| ends.target() == nid && ends.source() != nid);
            if q.outgoing_only && incoming {
                continue;
            }
            let name = self.graph.slot(e).class.name.clone();
            if q.skip_types.iter().any(|t| **t == *name) {
                continue;
            }
            let (s, t) = if incoming { (m, n) } else { (n, m) };
            out.push((e, s, t, m));
        }
        Ok(out)
    }

    /// Walk from `q.start`: breadth-first with a queue, or depth-first with an explicit
    /// stack of (node, depth, its edges, next edge) frames. Nodes are numbered in the
    /// order they are expanded; an edge is kept while fewer than `node_limit` nodes have
    /// been expanded and fewer than `edge_limit` edges are kept.
    fn printgraph(&mut self, q: &GraphQuery) -> R<String> {
        let ctx = Ctx {
            scope: self.builtins.clone(),
            this: None,
            here: None,
            visitor: None,
            class: None,
            file: 0,
        };
        let mut order: Vec<Handle> = Vec::new();
        let mut index: FxHashMap<Handle, usize> = FxHashMap::default();
        let mut edges: Vec<(Handle, Handle, Handle)> = Vec::new();
        let mut seen_edges: FxHashMap<Handle, ()> = FxHashMap::default();
        if q.bfs {
            let mut queue: VecDeque<(Handle, i64)> = VecDeque::from([(q.start, 0)]);
            while let Some((n, d)) = queue.pop_front() {
                self.poll()?;
                if index.contains_key(&n) {
                    continue;
                }
                index.insert(n, order.len());
                order.push(n);
                if q.depth >= 0 && d >= q.depth {
                    continue;
                }
                for (e, s, t, m) in self.graph_edges_of(n, q, &ctx)? {
                    if edges.len() >= q.edge_limit || order.len() >= q.node_limit {
                        break;
                    }
                    if seen_edges.insert(e, ()).is_some() {
                        continue;
                    }
                    edges.push((e, s, t));
                    queue.push_back((m, d + 1));
                }
            }
        } else {
            type Frame = (Handle, i64, Vec<(Handle, Handle, Handle, Handle)>, usize);
            let mut stack: Vec<Frame> = Vec::new();
            index.insert(q.start, 0);
            order.push(q.start);
            let first = self.graph_edges_of(q.start, q, &ctx)?;
            stack.push((q.start, 0, first, 0));
            while let Some(top) = stack.last_mut() {
                self.poll()?;
                let (_, d, found, next) = top;
                let d = *d;
                if (q.depth >= 0 && d >= q.depth) || *next >= found.len() {
                    stack.pop();
                    continue;
                }
                let (e, s, t, m) = found[*next];
                *next += 1;
                if edges.len() >= q.edge_limit || order.len() >= q.node_limit {
                    continue;
                }
                if seen_edges.insert(e, ()).is_some() {
                    continue;
                }
                edges.push((e, s, t));
                if let std::collections::hash_map::Entry::Vacant(slot) = index.entry(m) {
                    slot.insert(order.len());
                    order.push(m);
                    let more = self.graph_edges_of(m, q, &ctx)?;
                    stack.push((m, d + 1, more, 0));
                }
            }
        }
        self.render_graph(q, &order, &index, &edges)
    }

    fn render_graph(
        &mut self,
        q: &GraphQuery,
        nodes: &[Handle],
        index: &FxHashMap<Handle, usize>,
        edges: &[(Handle, Handle, Handle)],
    ) -> R<String> {
        let mut node_labels = Vec::with_capacity(nodes.len());
        for &n in nodes {
            node_labels.push(self.repr(&Value::Anchor(n))?);
        }
        let mut edge_labels = Vec::with_capacity(edges.len());
        for &(e, _, _) in edges {
            let generic = &*self.graph.slot(e).class.name == "GenericEdge";
            edge_labels.push(if generic {
                String::new()
            } else {
                self.repr(&Value::Anchor(e))?
            });
        }
        let pos = |h: &Handle| index.get(h).copied().unwrap_or(0);
        let mut out = String::new();
        match q.format.as_str() {
            "json" => {
                // `json.dumps` of jaclang's record: `id` is the node's `id()`, `from`
                // and `to` are its text, the root is labelled `root`.
                let key = |k: &str| HashKey(Value::str(k));
                let mut ns = Vec::with_capacity(nodes.len());
                for (i, (&n, label)) in nodes.iter().zip(&node_labels).enumerate() {
                    let mut d = Dict::default();
                    d.insert(key("id"), Value::Int(builtins::py_id(&Value::Anchor(n))));
                    let label = if i == 0 { "root" } else { label.as_str() };
                    d.insert(key("label"), Value::str(label));
                    ns.push(Value::dict(d));
                }
                let mut es = Vec::with_capacity(edges.len());
                for (&(_, s, t), label) in edges.iter().zip(&edge_labels) {
                    let mut d = Dict::default();
                    for (k, h) in [("from", s), ("to", t)] {
                        let id = builtins::py_id(&Value::Anchor(h));
                        d.insert(key(k), Value::str(&id.to_string()));
                    }
                    if !label.is_empty() {
                        d.insert(key("label"), Value::str(label));
                    }
                    es.push(Value::dict(d));
                }
                let mut record = Dict::default();
                record.insert(key("version"), Value::str("1.0"));
                record.insert(key("nodes"), Value::list(ns));
                record.insert(key("edges"), Value::list(es));
                let text = self.call_stdlib("json.dumps", vec![Value::dict(record)], vec![])?;
                return self.to_str(&text);
            }
            "mermaid" => {
                out.push_str("flowchart LR\n");
                for (&(_, s, t), label) in edges.iter().zip(&edge_labels) {
                    if label.is_empty() {
                        let _ = writeln!(out, "{} -->{}", pos(&s), pos(&t));
                    } else {
                        let _ = writeln!(out, "{} -->|\"{}\"| {}", pos(&s), html(label), pos(&t));
                    }
                }
                for (i, label) in node_labels.iter().enumerate() {
                    let _ = writeln!(out, "{i}[\"{}\"]", html(label));
                }
            }
            _ => {
                // Distances from the start over the drawn edges (either direction),
                // breadth-first: iterative and bounded by the drawn graph.
                let mut adj: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
                for &(_, s, t) in edges {
                    let (a, b) = (pos(&s), pos(&t));
                    if a < nodes.len() && b < nodes.len() {
                        adj[a].push(b);
                        adj[b].push(a);
                    }
                }
                let mut dist: Vec<Option<usize>> = vec![None; nodes.len()];
                let mut queue = VecDeque::new();
                if !nodes.is_empty() {
                    dist[0] = Some(0);
                    queue.push_back(0usize);
                }
                while let Some(a) = queue.pop_front() {
                    let d = dist[a].unwrap_or(0);
                    for &b in &adj[a] {
                        if dist[b].is_none() {
                            dist[b] = Some(d + 1);
                            queue.push_back(b);
                        }
                    }
                }
                out.push_str("digraph {\n");
                out.push_str(
                    "node [style=\"filled\", shape=\"ellipse\", fillcolor=\"invis\", fontcolor=\"black\"];\n",
                );
                for (&(_, s, t), label) in edges.iter().zip(&edge_labels) {
                    let _ = writeln!(
                        out,
                        "{} -> {} [label=\"{}\"];",
                        pos(&s),
                        pos(&t),
                        html(label)
                    );
                }
                for (i, label) in node_labels.iter().enumerate() {
                    let color = DEPTH_COLORS[dist[i].unwrap_or(0).min(DEPTH_COLORS.len() - 1)];
                    let _ = writeln!(out, "{i} [label=\"{}\"fillcolor=\"{color}\"];", html(label));
                }
                out.push('}');
            }
        }
        Ok(out)
    }
}

/// HTML-escape a label (`&`, `<`, `>`, `"`, `'`), so quotes never break the DOT string.
fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}
