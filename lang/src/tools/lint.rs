//! The linter: compiler diagnostics (severity `error`, or `warning` for the checker's
//! warnings) plus style and correctness rules with `L` codes (severity `warning`).
//!
//! Rules ([`LINT_RULES`]):
//! - `L001` unused variable: a local assigned in a function, ability or entry block and
//!   never read (names starting with `_` and loop variables are exempt).
//! - `L002` unused import: a name brought in by `import` that the module never uses.
//! - `L003` shadowing: a parameter or local that hides a builtin (`list`, `print`) or a
//!   module-level declaration.
//! - `L004` unreachable code: statements after `return`, `raise`, `break`, `continue` or
//!   `disengage` in the same block.
//! - `L005` missing `;`: a trailing expression statement before `}` without its `;`
//!   (accepted by the parser, fixable).
//! - `L006` comparison with `None` by `==`/`!=`: use `is` / `is not`.
//! - `L007` not formatted: the code differs from `svc format`'s output (fixable).
//!
//! `auto_fix` inserts the missing `;` and runs the formatter; it never touches code with
//! syntax errors.

use super::tree::{TNode, module_tree};
use super::{LintReport, LintViolation, format_source, line_col};
use crate::ast::Module;
use crate::span::Span;
use std::collections::{HashMap, HashSet};

/// `(code, summary, fixable)` of every lint rule.
pub const LINT_RULES: &[(&str, &str, bool)] = &[
    ("L001", "unused variable", false),
    ("L002", "unused import", false),
    (
        "L003",
        "name shadows a builtin or a module-level declaration",
        false,
    ),
    ("L004", "unreachable code", false),
    ("L005", "missing `;` after a trailing expression", true),
    ("L006", "comparison with None by `==`/`!=`", false),
    ("L007", "code is not in `svc format` layout", true),
];

/// Most violations one report lists.
const MAX_VIOLATIONS: usize = 1000;

struct Finder<'a> {
    src: &'a str,
    out: Vec<(u32, LintViolation)>,
}

impl Finder<'_> {
    fn push(&mut self, offset: u32, code: &str, severity: &str, message: String) {
        let (line, col) = line_col(self.src, offset);
        self.out.push((
            offset,
            LintViolation {
                line,
                col,
                message,
                severity: severity.to_string(),
                code: code.to_string(),
            },
        ));
    }
}

/// Lint `src`; with `auto_fix`, also return the fixed code.
pub fn lint_source(src: &str, auto_fix: bool) -> LintReport {
    super::on_big_stack(|| lint_source_on_stack(src, auto_fix))
}

fn lint_source_on_stack(src: &str, auto_fix: bool) -> LintReport {
    let mut f = Finder {
        src,
        out: Vec::new(),
    };
    let parsed = crate::parser::parse(src);
    let has_errors = parsed.diagnostics.iter().any(|d| d.is_error());
    for d in &parsed.diagnostics {
        let sev = if d.is_error() { "error" } else { "warning" };
        f.push(d.span.start, d.code.as_str(), sev, d.message.clone());
    }
    let tree = match module_tree(&parsed.module) {
        Ok(t) => t,
        Err(e) => {
            f.push(0, "E0001", "error", e.message);
            return finish(f, None);
        }
    };
    if !has_errors {
        let mut host = crate::host::MemoryHost::new();
        let diags = crate::checker::check_module(
            &parsed.module,
            std::path::Path::new("snippet.svc"),
            &mut host,
        );
        for d in &diags {
            let sev = if d.is_error() { "error" } else { "warning" };
            f.push(d.span.start, d.code.as_str(), sev, d.message.clone());
        }
        rules(&mut f, &parsed.module, &tree);
    }
    let mut semis = Vec::new();
    if !has_errors {
        missing_semicolons(src, &tree, &mut semis);
        for &off in &semis {
            f.push(
                off,
                "L005",
                "warning",
                "missing `;` after the trailing expression".into(),
            );
        }
    }
    let formatted = if has_errors {
        None
    } else {
        format_source(src).ok()
    };
    if let Some(fm) = &formatted
        && fm != src
        && semis.is_empty()
    {
        f.push(
            0,
            "L007",
            "warning",
            "the code is not in `svc format` layout".into(),
        );
    }
    let fixed = if auto_fix && !has_errors {
        let mut text = src.to_string();
        for &off in semis.iter().rev() {
            text.insert(off as usize, ';');
        }
        format_source(&text).ok().or(Some(text))
    } else {
        None
    };
    finish(f, fixed.map(|t| (t.clone(), t != src)))
}

fn finish(mut f: Finder<'_>, fixed: Option<(String, bool)>) -> LintReport {
    f.out.sort_by_key(|(off, v)| (*off, v.code.clone()));
    f.out
        .dedup_by(|a, b| a.0 == b.0 && a.1.code == b.1.code && a.1.message == b.1.message);
    f.out.truncate(MAX_VIOLATIONS);
    let (fixed_code, changed) = match fixed {
        Some((t, c)) => (Some(t), c),
        None => (None, false),
    };
    LintReport {
        violations: f.out.into_iter().map(|(_, v)| v).collect(),
        fixed_code,
        changed,
    }
}

/// Offsets where a `;` is missing after a block's last expression statement.
fn missing_semicolons(src: &str, tree: &TNode, out: &mut Vec<u32>) {
    let lexed = crate::lexer::lex(src);
    tree.each(|n| {
        if n.kind != "Block" {
            return;
        }
        let Some(last) = n.children.last() else {
            return;
        };
        if last.kind != "ExprStmt" {
            return;
        }
        let end = last.span.end;
        let k = lexed.tokens.partition_point(|t| t.span.end <= end);
        let last_tok = k.checked_sub(1).and_then(|i| lexed.tokens.get(i));
        let next = lexed.tokens.get(k);
        if last_tok.is_some_and(|t| t.kind != crate::lexer::TokenKind::Semi)
            && next.is_some_and(|t| t.kind == crate::lexer::TokenKind::RBrace)
        {
            out.push(end);
        }
    });
    out.sort_unstable();
    out.dedup();
}

fn is_builtin(name: &str) -> bool {
    crate::names::BUILTIN_FUNCTIONS.contains(&name) || crate::names::BUILTIN_TYPES.contains(&name)
}

fn rules(f: &mut Finder<'_>, _module: &Module, tree: &TNode) {
    // Module-level declarations and every name read anywhere.
    let mut top_level: HashSet<String> = HashSet::new();
    for it in &tree.children {
        match it.kind {
            "Archetype" | "Enum" | "Ability" => {
                if let Some(l) = &it.label
                    && let Some(name) = l.rsplit(' ').next()
                {
                    top_level.insert(name.trim_start_matches(":").to_string());
                }
            }
            "Glob" => {
                for v in &it.children {
                    if let Some(l) = &v.label {
                        top_level.insert(l.clone());
                    }
                }
            }
            _ => {}
        }
    }
    let mut reads: HashMap<String, u32> = HashMap::new();
    collect_reads(tree, &mut reads);

    // L002 unused imports.
    for it in &tree.children {
        if it.kind != "Import" {
            continue;
        }
        let mut bound: Vec<&TNode> = Vec::new();
        let kids = &it.children;
        for (i, c) in kids.iter().enumerate() {
            let alias = kids.get(i + 1).filter(|n| n.role == Some("alias"));
            match c.role {
                Some("item") => bound.push(alias.unwrap_or(c)),
                Some("module") => {
                    if let Some(a) = alias {
                        bound.push(a);
                    }
                }
                _ => {}
            }
        }
        for b in bound {
            let Some(name) = &b.label else { continue };
            if !reads.contains_key(name.as_str()) {
                f.push(
                    b.span.start,
                    "L002",
                    "warning",
                    format!("`{name}` is imported but never used"),
                );
            }
        }
    }

    // Per function: L001 unused variables and L003 shadowing. A name counts as used when
    // the top-level item holding the function reads it (closures rebind outer names).
    for item in &tree.children {
        let mut item_reads: HashMap<String, u32> = HashMap::new();
        collect_reads(item, &mut item_reads);
        item.each(|n| {
            if !matches!(
                n.kind,
                "Ability" | "Lambda" | "EntryBlock" | "Impl" | "TestBlock"
            ) {
                return;
            }
            let module_level_block = n.kind == "EntryBlock";
            let mut assigned: Vec<(&str, Span)> = Vec::new();
            for c in &n.children {
                if c.kind == "Param"
                    && let Some(l) = &c.label
                {
                    let name = l.trim_start_matches('*');
                    if name != "self" && (is_builtin(name) || top_level.contains(name)) {
                        f.push(
                            c.span.start,
                            "L003",
                            "warning",
                            format!("parameter `{name}` shadows {}", what(name)),
                        );
                    }
                }
            }
            if let Some(body) = n.children.iter().find(|c| c.kind == "Block") {
                own_assignments(body, &mut assigned);
            }
            let mut seen = HashSet::new();
            for (name, span) in assigned {
                if !seen.insert(name) {
                    continue;
                }
                if top_level.contains(name) {
                    // Assignment rebinds the module-level name (Jac has no `global`).
                    continue;
                }
                if is_builtin(name) {
                    f.push(
                        span.start,
                        "L003",
                        "warning",
                        format!("local `{name}` shadows {}", what(name)),
                    );
                }
                if name.starts_with('_') {
                    continue;
                }
                let used = if module_level_block {
                    reads.contains_key(name)
                } else {
                    item_reads.contains_key(name)
                };
                if !used {
                    f.push(
                        span.start,
                        "L001",
                        "warning",
                        format!("`{name}` is assigned but never used"),
                    );
                }
            }
        });
    }

    // L004 unreachable code, L006 `== None`.
    tree.each(|n| {
        if n.kind == "Block" {
            let mut stop = false;
            for c in &n.children {
                if stop && c.kind != "Empty" {
                    f.push(
                        c.span.start,
                        "L004",
                        "warning",
                        "unreachable code: nothing after the previous statement runs".into(),
                    );
                    break;
                }
                if matches!(
                    c.kind,
                    "Return" | "Raise" | "Break" | "Continue" | "Disengage"
                ) {
                    stop = true;
                }
            }
        }
        if n.kind == "Compare"
            && let Some(l) = &n.label
            && (l == "==" || l == "!=")
            && n.children
                .iter()
                .any(|c| c.kind == "Constant" && c.label.as_deref() == Some("None"))
        {
            let better = if l == "==" { "is" } else { "is not" };
            f.push(
                n.span.start,
                "L006",
                "warning",
                format!("compare with None using `{better}`, not `{l}`"),
            );
        }
    });
}

fn what(name: &str) -> &'static str {
    if is_builtin(name) {
        "a builtin"
    } else {
        "a module-level declaration"
    }
}

/// Names read (not only assigned) under `n`: every `Name` node that is not an assignment
/// target, plus names inside compound targets' subscripts and attributes.
fn collect_reads(n: &TNode, reads: &mut HashMap<String, u32>) {
    let mut stack = vec![(n, false)];
    while let Some((node, in_target)) = stack.pop() {
        if node.kind == "Name"
            && !in_target
            && let Some(l) = &node.label
        {
            *reads.entry(l.clone()).or_default() += 1;
        }
        for c in &node.children {
            let target = match (node.kind, c.role) {
                ("Assign" | "For" | "Declare", Some("target")) => {
                    c.kind == "Name" || c.kind == "Tuple" || c.kind == "List"
                }
                ("Comprehension", Some("target")) => true,
                ("Tuple" | "List", _) if in_target => true,
                ("Import", _) | ("Archetype", _) | ("Enum", _) | ("HasDecl", _) => false,
                _ => false,
            };
            // Import names, parameters and declarations are not reads.
            if matches!(node.kind, "Import" | "GlobVar" | "HasVar" | "EnumMember")
                && c.kind == "Name"
            {
                continue;
            }
            stack.push((c, target));
        }
    }
}

/// Names a block assigns directly (not in nested functions): `x = ...`, `x: T = ...`,
/// for targets, tuple targets.
fn own_assignments<'t>(block: &'t TNode, out: &mut Vec<(&'t str, Span)>) {
    let mut stack = vec![block];
    while let Some(n) = stack.pop() {
        for c in n.children.iter().rev() {
            match c.kind {
                "Ability" | "Lambda" | "Archetype" | "Enum" | "Impl" => continue,
                _ => {}
            }
            if n.kind == "For" && c.role == Some("target") {
                // Unused loop variables are an accepted idiom (`for i in range(n)`).
                continue;
            }
            if matches!(n.kind, "Assign" | "Declare") && c.role == Some("target") {
                names_in_target(c, out);
                continue;
            }
            stack.push(c);
        }
    }
    out.sort_by_key(|(_, s)| s.start);
}

fn names_in_target<'t>(t: &'t TNode, out: &mut Vec<(&'t str, Span)>) {
    let mut stack = vec![t];
    while let Some(n) = stack.pop() {
        match n.kind {
            "Name" => {
                if let Some(l) = &n.label {
                    out.push((l.as_str(), n.span));
                }
            }
            "Tuple" | "List" | "Starred" => stack.extend(n.children.iter()),
            _ => {}
        }
    }
}
