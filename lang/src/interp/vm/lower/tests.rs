//! Which def bodies the lowering takes: the subset grows construct by construct, and a
//! body it cannot take exactly must stay on the tree-walker.

use super::{Code, lower_def};
use crate::ast::{self, Item};
use crate::interp::vm::Op;

/// Every module-level def of `source`, with its compiled code (`None`: not lowered).
fn lowered(source: &str) -> Vec<(String, Option<Code>)> {
    let parsed = crate::parser::parse(source);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    parsed
        .module
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Ability(a) => Some(a),
            _ => None,
        })
        .map(|a: &ast::Ability| {
            let params = a
                .signature
                .as_ref()
                .map(|s| s.params.iter().map(|p| p.name.name.clone()).collect())
                .unwrap_or_default();
            let name = a
                .name
                .as_ref()
                .map(|n| n.name.to_string())
                .unwrap_or_default();
            let body = a.body.as_deref().unwrap_or_default();
            (name, lower_def(params, body))
        })
        .collect()
}

fn compiled(source: &str) -> Vec<(String, bool)> {
    lowered(source)
        .into_iter()
        .map(|(n, c)| (n, c.is_some()))
        .collect()
}

#[test]
fn comprehensions_in_defs_are_lowered_with_their_targets_in_slots() {
    let code = lowered(
        "def f(n: int) -> list {\n    i = 5;\n    return [i * k for (i, k) in zip(range(n), range(n)) if k != i];\n}\n",
    );
    let Some(code) = &code[0].1 else {
        panic!("not lowered");
    };
    // `n`, the local `i`, then the comprehension's own `i` and `k`.
    let names: Vec<&str> = code.local_names.iter().map(|n| &**n).collect();
    assert_eq!(names, ["n", "i", "i", "k"]);
    assert_eq!(code.slot_lists, [vec![2, 3]]);
    assert!(code.ops.iter().any(|op| matches!(op, Op::UnpackLocals(0))));
    // Inside, `i` reads the comprehension's slot; nothing is looked up by name but
    // the builtins.
    assert!(code.ops.iter().any(|op| matches!(op, Op::LoadLocal(2))));
    let globals: Vec<&str> = code.names.iter().map(|n| &**n).collect();
    assert_eq!(globals, ["zip", "range"]);
}

#[test]
fn enumerate_in_a_comprehension_binds_its_pairs_without_tuples() {
    let code = lowered(
        "def f(xs: list) -> dict {\n    return {i: x for (i, x) in enumerate(xs) if x};\n}\n\
         def g(xs: list) -> list {\n    return [p for p in enumerate(xs)];\n}\n\
         def h(xs: list) -> list {\n    return [i for (i, x) in enumerate(xs, 1)];\n}\n",
    );
    let Some(f) = &code[0].1 else {
        panic!("not lowered");
    };
    // The builtin check jumps over the plain call straight to the pair iterator.
    let fast = f
        .ops
        .iter()
        .position(|op| matches!(op, Op::EnumerateFast(_)));
    let Some(fast) = fast else {
        panic!("no EnumerateFast: {:?}", f.ops);
    };
    assert!(matches!(f.ops[fast + 1], Op::Call(1)));
    assert!(matches!(f.ops[fast], Op::EnumerateFast(t) if t as usize == fast + 2));
    assert!(matches!(f.ops[fast + 2], Op::GetIterEnumerate(false)));
    assert!(matches!(f.ops[fast + 3], Op::ForIterPair(_, 0)));
    assert_eq!(f.slot_lists, [vec![1, 2]]);
    assert!(!f.ops.iter().any(|op| matches!(op, Op::UnpackLocals(_))));
    // A one-name target (the tuple is the value) or a start argument: the plain path.
    for c in [&code[1].1, &code[2].1] {
        let Some(c) = c else {
            panic!("not lowered");
        };
        assert!(!c.ops.iter().any(|op| matches!(
            op,
            Op::EnumerateFast(_) | Op::GetIterEnumerate(_) | Op::ForIterPair(..)
        )));
    }
}

#[test]
fn what_comprehensions_in_defs_leave_to_the_tree_walker() {
    let got = compiled(
        "def dict_and_set(xs: list) -> list {\n    return [{x: 1 for x in xs}, {x for x in xs}];\n}\n\
         def nested(n: int) -> list {\n    return [[a + b for b in range(a)] for a in range(n)];\n}\n\
         def target_gone(xs: list) -> int {\n    ys = [q for q in xs];\n    return q;\n}\n\
         def read_before_bound(y: list) -> list {\n    return [y for w in y for y in y];\n}\n\
         def own_iterable(x: list) -> list {\n    return [x for x in x];\n}\n\
         def nested_target(xs: list) -> list {\n    return [a for (a, (b, c)) in xs];\n}\n\
         def attr_target(xs: list) -> list {\n    return [1 for self.a in xs];\n}\n",
    );
    assert_eq!(
        got,
        [
            ("dict_and_set".to_string(), true),
            ("nested".to_string(), true),
            ("target_gone".to_string(), true),
            ("read_before_bound".to_string(), false),
            ("own_iterable".to_string(), false),
            ("nested_target".to_string(), false),
            ("attr_target".to_string(), false),
        ]
    );
}

#[test]
fn fstrings_tuple_targets_raise_and_walker_statements_are_lowered() {
    let got = compiled(
        "def fmt(x: float, w: int) -> str {\n    return f\"{x!r:>{w}} {x=} {w}\";\n}\n\
         def swap(a: int, b: int) -> tuple {\n    (a, b) = (b, a);\n    for (k, v) in [(a, b)] {\n        a = k + v;\n    }\n    return (a, b);\n}\n\
         def fail(x: int) -> None {\n    assert x > 0, \"positive\";\n    raise ValueError(\"no\") from None;\n}\n\
         def again() -> None {\n    raise;\n}\n\
         def walk(n: int) -> None {\n    report n;\n    visit :0: [-->[?n > 1]] else {\n        disengage;\n    }\n    visit [edge here ->:E:->];\n    root ++> here;\n    skip;\n}\n",
    );
    let all: Vec<bool> = got.iter().map(|(_, ok)| *ok).collect();
    assert_eq!(all, [true; 5], "{got:?}");
    let code = lowered(
        "def swap(a: int, b: int) -> tuple {\n    (a, b) = (b, a);\n    return (a, b);\n}\n",
    )
    .remove(0)
    .1
    .expect("lowered");
    assert!(code.ops.iter().any(|op| matches!(op, Op::UnpackStore(0))));
    assert_eq!(code.slot_lists, [vec![0, 1]]);
}

#[test]
fn what_walker_statements_leave_to_the_tree_walker() {
    let got = compiled(
        "def filter_reads_local(limit: int) -> list {\n    return [-->[?n > limit]];\n}\n\
         def edge_type_reads_local(t: any) -> list {\n    return [->:t:->];\n}\n\
         def typed_connect_reads_local(a: any, b: any, w: int) -> any {\n    return a +>: E(w=w) :+> b;\n}\n\
         def typed_connect_static(a: any, b: any) -> any {\n    return a +>: E(w=1) :+> b;\n}\n\
         def nested_tuple_target(xs: list) -> None {\n    for (a, (b, c)) in xs {\n        print(a);\n    }\n}\n\
         def starred_target(xs: list) -> None {\n    (a, *b) = xs;\n}\n",
    );
    assert_eq!(
        got,
        [
            ("filter_reads_local".to_string(), false),
            ("edge_type_reads_local".to_string(), false),
            ("typed_connect_reads_local".to_string(), false),
            ("typed_connect_static".to_string(), true),
            ("nested_tuple_target".to_string(), false),
            ("starred_target".to_string(), false),
        ]
    );
}

#[test]
fn single_comparisons_in_conditions_compare_and_jump_in_one_instruction() {
    let code = lowered(
        "def f(n: int, m: int) -> int {\n    k = m;\n    if n < 2 {\n        return n - 1;\n    }\n    while k != m {\n        k = k + 1;\n    }\n    if k >= 3 {\n        return 2;\n    }\n    if 0 < n < m {\n        return 1;\n    }\n    return 0;\n}\n",
    )
    .remove(0)
    .1
    .expect("lowered");
    let count = |f: fn(&Op) -> bool| code.ops.iter().filter(|op| f(op)).count();
    // A parameter (always bound) is read by the fused instruction itself.
    assert_eq!(
        count(|op| matches!(op, Op::LocalCompareConstJump(0, ast::CmpOp::Lt, _, _))),
        1
    );
    assert_eq!(
        count(|op| matches!(op, Op::LocalBinaryConst(0, ast::BinOp::Sub, _))),
        1
    );
    // A local that may be unbound is loaded first.
    assert_eq!(
        count(|op| matches!(op, Op::CompareConstJump(ast::CmpOp::GtE, _, _))),
        1
    );
    assert_eq!(
        count(|op| matches!(op, Op::BinaryConst(ast::BinOp::Add, _))),
        1
    );
    assert_eq!(
        count(|op| matches!(op, Op::CompareJump(ast::CmpOp::NotEq, _))),
        1
    );
    // A chain keeps its links and its truth test.
    assert_eq!(count(|op| matches!(op, Op::CompareChain(..))), 1);
    assert_eq!(count(|op| matches!(op, Op::JumpIfFalse(_))), 1);
}

#[test]
fn a_one_name_comprehension_target_is_bound_by_the_loop_and_read_fused() {
    let code = lowered(
        "def f(n: int) -> list {\n    x = 1;\n    return [x * 3 for x in range(n) if x % 2 == 0] + [x + 1];\n}\n",
    )
    .remove(0)
    .1
    .expect("lowered");
    // `n`, the local `x`, then the comprehension's own `x`.
    let count = |f: fn(&Op) -> bool| code.ops.iter().filter(|op| f(op)).count();
    assert_eq!(count(|op| matches!(op, Op::ForIterLocal(_, 2))), 1);
    assert_eq!(count(|op| matches!(op, Op::ForIter(_))), 0);
    assert_eq!(count(|op| matches!(op, Op::DefineLocal(_))), 0);
    // The target (bound wherever it is read) is read by the fused instructions.
    assert_eq!(
        count(|op| matches!(op, Op::LocalBinaryConst(2, ast::BinOp::Mod, _))),
        1
    );
    assert_eq!(
        count(|op| matches!(op, Op::LocalBinaryConst(2, ast::BinOp::Mul, _))),
        1
    );
    // The function's own `x` may be unbound where it is read: loaded first.
    assert_eq!(count(|op| matches!(op, Op::LoadLocal(1))), 1);
    assert_eq!(count(|op| matches!(op, Op::LocalBinaryConst(1, _, _))), 0);
}

#[test]
fn self_attribute_reads_are_a_fused_load_before_their_get_attr() {
    let code = lowered(
        "def f(k: int) -> int {\n    return self.x + self.y * k;\n}\n\
         def g(o: object) -> int {\n    return o.x;\n}\n",
    );
    let Some(f) = &code[0].1 else {
        panic!("not lowered");
    };
    // Each `SelfAttr` is followed by the `GetAttr` of the same name and site, which it
    // skips when it reads the field itself (and which runs after it otherwise).
    let pairs: Vec<(u32, u32)> = f
        .ops
        .windows(2)
        .filter_map(|w| match (w[0], w[1]) {
            (Op::SelfAttr(n, s), Op::GetAttr(n2, s2)) if (n, s) == (n2, s2) => Some((n, s)),
            _ => None,
        })
        .collect();
    assert_eq!(pairs, [(0, 0), (1, 1)], "{:?}", f.ops);
    assert!(!f.ops.iter().any(|op| matches!(op, Op::LoadSelf)));
    let Some(g) = &code[1].1 else {
        panic!("not lowered");
    };
    assert!(!g.ops.iter().any(|op| matches!(op, Op::SelfAttr(..))));
}

#[test]
fn dict_comprehensions_stage_their_pairs_and_other_displays_do_not() {
    let code = lowered(
        "def f(n: int) -> dict {\n    return {i: {j: j for j in range(i)} for i in range(n)};\n}\n\
         def g(n: int) -> list {\n    return [{1: n}, {i for i in range(n)}, [i for i in range(n)]];\n}\n",
    );
    let Some(f) = &code[0].1 else {
        panic!("not lowered");
    };
    // Each dict comprehension: `NewDict`, `DictStage` ... `DictPut` ... `DictUnstage`,
    // nested ones inside.
    let marks: Vec<&str> = f
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::NewDict => Some("new"),
            Op::DictStage => Some("stage"),
            Op::DictPut => Some("put"),
            Op::DictUnstage => Some("unstage"),
            _ => None,
        })
        .collect();
    assert_eq!(
        marks,
        [
            "new", "stage", "new", "stage", "put", "unstage", "put", "unstage"
        ]
    );
    let Some(g) = &code[1].1 else {
        panic!("not lowered");
    };
    assert!(
        !g.ops
            .iter()
            .any(|op| matches!(op, Op::DictStage | Op::DictUnstage))
    );
}

#[test]
fn self_attribute_stores_are_a_fused_load_before_their_set_attr() {
    let code = lowered(
        "def f(k: int) {\n    self.x = k;\n    self.y += k;\n}\n\
         def g(o: object, k: int) {\n    o.x = k;\n    o.y += k;\n}\n",
    );
    let Some(f) = &code[0].1 else {
        panic!("not lowered");
    };
    // `self.x = k`: the fused store, then the `SetAttr` it skips when it stores the
    // field itself. `self.y += k`: a fused read and a fused store, `self` kept on no
    // stack in between.
    let stores = f
        .ops
        .windows(2)
        .filter(|w| {
            matches!((w[0], w[1]), (Op::SelfSetAttr(n, s), Op::SetAttr(n2, s2)) if (n, s) == (n2, s2))
        })
        .count();
    assert_eq!(stores, 2, "{:?}", f.ops);
    assert!(
        !f.ops
            .iter()
            .any(|op| matches!(op, Op::LoadSelf | Op::Dup | Op::SetAttrTop(..))),
        "{:?}",
        f.ops
    );
    let Some(g) = &code[1].1 else {
        panic!("not lowered");
    };
    assert!(
        !g.ops
            .iter()
            .any(|op| matches!(op, Op::SelfAttr(..) | Op::SelfSetAttr(..)))
    );
}

#[test]
fn a_one_argument_call_of_a_parameter_op_a_literal_is_fused_before_its_call() {
    let code = lowered(
        "def f(n: int) -> int {\n    return g(n - 1) + g(n) + h(n - 1, 2) + g(n * 2 + 1);\n}\n",
    )
    .remove(0)
    .1
    .expect("lowered");
    let count = |f: fn(&Op) -> bool| code.ops.iter().filter(|op| f(op)).count();
    // Only `g(n - 1)`: the plain `Call(1)` stays right after the fused instruction.
    assert_eq!(
        count(|op| matches!(op, Op::CallLocalBinaryConst(0, ast::BinOp::Sub, _))),
        1
    );
    let at = code
        .ops
        .iter()
        .position(|op| matches!(op, Op::CallLocalBinaryConst(..)));
    let Some(at) = at else {
        panic!("not fused: {:?}", code.ops);
    };
    assert!(matches!(code.ops[at + 1], Op::Call(1)));
    // `h(n - 1, 2)` keeps its `LocalBinaryConst`; `n * 2 + 1` is not one operation.
    assert_eq!(count(|op| matches!(op, Op::LocalBinaryConst(..))), 2);
}
