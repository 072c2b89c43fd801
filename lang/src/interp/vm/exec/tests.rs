//! The compiled core under explicit `Limits` that `svc run` cannot set: each program
//! gives the same output and error on both cores.

use crate::driver::Limits;
use crate::interp::builtins::tests::run_program;

/// `program` under `limits` on the compiled core and on the tree-walker alone: both
/// outputs (stdout, then the error text if the run failed).
fn both_cores(program: &str, limits: Limits) -> (String, String) {
    let vm = run_program(
        program,
        Limits {
            vm: true,
            ..limits.clone()
        },
    );
    let tree = run_program(
        program,
        Limits {
            vm: false,
            ..limits
        },
    );
    (vm, tree)
}

/// 100 items at most in a collection.
fn hundred_items() -> Limits {
    Limits {
        max_collection_items: 100,
        ..Limits::default()
    }
}

#[test]
fn a_staged_dict_comprehension_stops_at_the_item_limit_as_on_the_tree_walker() {
    // Increasing int keys are staged; the 101st distinct key is the `MemoryError`
    // raised at the same place with the same trace.
    for n in ["99", "100", "101", "1000"] {
        let program = format!(
            "def table(n: int) -> dict {{\n    return {{i: i * 2 for i in range(n)}};\n}}\n\
             with entry {{\n    print(len(table({n})));\n}}\n"
        );
        let (vm, tree) = both_cores(&program, hundred_items());
        assert_eq!(vm, tree, "n = {n}");
        if n.len() > 3 || n == "101" {
            assert!(
                vm.contains("result would have 101 items (limit 100)"),
                "n = {n}: {vm}"
            );
        } else {
            assert_eq!(vm, format!("{n}\n"));
        }
    }
}

#[test]
fn a_dict_comprehension_falls_back_past_the_limit_with_repeated_keys() {
    // 150 increasing keys would pass the limit, but they come as 0..99 staged, then
    // repeats of 0..49 (updates, no growth): the staged pairs are inserted when the
    // first repeat comes and the updates are allowed, as on the tree-walker.
    let program = "def table() -> dict {\n    \
                   return {i % 100: i for i in range(150)};\n}\n\
                   with entry {\n    d = table();\n    print(len(d), d[0], d[49], d[50], d[99]);\n}\n";
    let (vm, tree) = both_cores(program, hundred_items());
    assert_eq!(vm, "100 100 149 50 99\n");
    assert_eq!(vm, tree);
    // A new key after the fallback is refused.
    let program = "def table() -> dict {\n    \
                   return {(i % 100 if i < 150 else i): i for i in range(151)};\n}\n\
                   with entry {\n    print(len(table()));\n}\n";
    let (vm, tree) = both_cores(program, hundred_items());
    assert!(
        vm.contains("result would have 101 items (limit 100)"),
        "{vm}"
    );
    assert_eq!(vm, tree);
}
