//! `ast_tree` and `ast_json`: the parsed tree as an indented text tree and as JSON.
//!
//! Both come from the generic tree (`tree::TNode`), so they name the same node kinds.
//! Output is bounded: at most [`MAX_DUMP_NODES`] nodes are shown (the rest are counted in
//! a final `… N more nodes` line or a `truncated` field), and the tree depth is bounded
//! by `tree::MAX_TREE_DEPTH`. Input with syntax errors is still dumped (the parser
//! recovers), with the errors listed first, so a client can see what was understood.

use super::tree::{TNode, module_tree};
use super::{ToolError, line_col};
use serde_json::{Value, json};

/// Most nodes one dump shows.
pub const MAX_DUMP_NODES: usize = 5000;

fn parse_tree(src: &str) -> Result<(TNode, Vec<String>), ToolError> {
    let parsed = crate::parser::parse(src);
    let errors = parsed
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            let (l, c) = line_col(src, d.span.start);
            format!("{l}:{c}: error[{}]: {}", d.code.as_str(), d.message)
        })
        .collect();
    let tree = module_tree(&parsed.module).map_err(|e| e.locate(src))?;
    Ok((tree, errors))
}

/// The syntax tree as indented text: `Kind label  [line:col-line:col]` per node.
pub fn ast_tree(src: &str) -> Result<String, ToolError> {
    super::on_big_stack(|| ast_tree_on_stack(src))
}

fn ast_tree_on_stack(src: &str) -> Result<String, ToolError> {
    let (tree, errors) = parse_tree(src)?;
    let file = crate::span::SourceFile::new("", src);
    let mut out = String::new();
    for e in &errors {
        out.push_str("# ");
        out.push_str(e);
        out.push('\n');
    }
    let mut stack = vec![(&tree, 0usize)];
    let mut shown = 0usize;
    let mut total = 0usize;
    tree.each(|_| total += 1);
    while let Some((n, depth)) = stack.pop() {
        if shown == MAX_DUMP_NODES {
            out.push_str(&format!("… {} more nodes\n", total - shown));
            break;
        }
        shown += 1;
        for _ in 0..depth {
            out.push_str("  ");
        }
        if let Some(r) = n.role {
            out.push_str(r);
            out.push_str(": ");
        }
        out.push_str(n.kind);
        if let Some(l) = &n.label {
            out.push(' ');
            out.push_str(l);
        }
        let (l1, c1) = file.line_col(n.span.start);
        let (l2, c2) = file.line_col(n.span.end);
        out.push_str(&format!("  [{l1}:{c1}-{l2}:{c2}]\n"));
        for c in n.children.iter().rev() {
            stack.push((c, depth + 1));
        }
    }
    Ok(out)
}

/// The syntax tree as JSON: `{"kind", "label"?, "role"?, "span": {start, end, line, col,
/// end_line, end_col}, "children": [...]}` under `{"ast": ..., "errors": [...],
/// "node_count", "truncated"}`.
pub fn ast_json(src: &str) -> Result<Value, ToolError> {
    super::on_big_stack(|| ast_json_on_stack(src))
}

fn ast_json_on_stack(src: &str) -> Result<Value, ToolError> {
    let (tree, errors) = parse_tree(src)?;
    let file = crate::span::SourceFile::new("", src);
    let mut total = 0usize;
    tree.each(|_| total += 1);
    // Build bottom-up without recursion: visit in pre-order, then fold in reverse.
    let mut order: Vec<(&TNode, Option<usize>)> = Vec::new();
    let mut stack: Vec<(&TNode, Option<usize>)> = vec![(&tree, None)];
    while let Some((n, parent)) = stack.pop() {
        if order.len() == MAX_DUMP_NODES {
            break;
        }
        let me = order.len();
        order.push((n, parent));
        for c in n.children.iter().rev() {
            stack.push((c, Some(me)));
        }
    }
    let mut built: Vec<Option<Value>> = vec![None; order.len()];
    let mut kids: Vec<Vec<Value>> = vec![Vec::new(); order.len()];
    for idx in (0..order.len()).rev() {
        let (n, parent) = order[idx];
        let (l1, c1) = file.line_col(n.span.start);
        let (l2, c2) = file.line_col(n.span.end);
        let mut obj = serde_json::Map::new();
        obj.insert("kind".into(), json!(n.kind));
        if let Some(l) = &n.label {
            obj.insert("label".into(), json!(l));
        }
        if let Some(r) = n.role {
            obj.insert("role".into(), json!(r));
        }
        obj.insert(
            "span".into(),
            json!({"start": n.span.start, "end": n.span.end, "line": l1, "col": c1, "end_line": l2, "end_col": c2}),
        );
        let mut ch = std::mem::take(&mut kids[idx]);
        ch.reverse();
        obj.insert("children".into(), Value::Array(ch));
        let v = Value::Object(obj);
        match parent {
            Some(p) => kids[p].push(v),
            None => built[idx] = Some(v),
        }
    }
    Ok(json!({
        "ast": built.first().cloned().flatten().unwrap_or(Value::Null),
        "errors": errors,
        "node_count": total,
        "truncated": total > order.len(),
    }))
}
