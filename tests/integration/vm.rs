//! The compiled execution core (`lang/src/interp/vm`): limits hit inside compiled code
//! end the run exactly as on the tree-walker (`svc run --no-vm`). The fixture suite
//! runs both ways in `fixtures::`.

use crate::{TempDir, stderr, stdout, svc_in};
use std::time::{Duration, Instant};

/// `svc run --no-store [EXTRA...] prog.svc` with and without `--no-vm`: (stdout,
/// stderr, exit code) of each.
fn both_ways(program: &str, extra: &[&str]) -> [(String, String, Option<i32>); 2] {
    let dir = TempDir::new("vm");
    dir.write("prog.svc", program);
    let run = |no_vm: bool| {
        let mut args = vec!["run", "--no-store"];
        if no_vm {
            args.push("--no-vm");
        }
        args.extend_from_slice(extra);
        args.push("prog.svc");
        let out = svc_in(dir.path(), &args);
        (stdout(&out), stderr(&out), out.status.code())
    };
    [run(false), run(true)]
}

const COUNTING: &str = r#"
def step(i: int) -> int {
    if i % 2 == 0 {
        return i // 2;
    }
    return 3 * i + 1;
}

def walk(n: int) -> int {
    count = 0;
    while n != 1 {
        n = step(n);
        count += 1;
        print(count, n);
    }
    return count;
}

with entry {
    print("steps", walk(27));
}
"#;

#[test]
fn operation_budget_ends_compiled_code_at_the_same_statement() {
    for budget in ["1", "7", "40", "333", "500"] {
        let [vm, tree] = both_ways(COUNTING, &["--max-ops", budget]);
        assert_eq!(vm.2, Some(1), "budget {budget}: {vm:?}");
        assert!(
            vm.1.contains("operation budget exceeded"),
            "budget {budget}: {}",
            vm.1
        );
        assert_eq!(vm, tree, "budget {budget}");
    }
    let [vm, tree] = both_ways(COUNTING, &["--max-ops", "100000"]);
    assert_eq!(vm.2, Some(0));
    assert!(vm.0.ends_with("steps 111\n"), "{}", vm.0);
    assert_eq!(vm, tree);
}

#[test]
fn depth_limit_in_compiled_recursion_is_the_same_recursion_error() {
    let program = r#"
glob reached = 0;

def down(n: int) -> int {
    reached = n;
    return down(n + 1) + 1;
}

with entry {
    try {
        down(0);
    } except RecursionError as e {
        print("caught", e, reached);
    }
    down(0);
}
"#;
    for depth in ["5", "64", "400"] {
        let [vm, tree] = both_ways(program, &["--max-depth", depth]);
        assert_eq!(vm.2, Some(1), "{vm:?}");
        assert!(
            vm.1.contains("maximum recursion depth exceeded"),
            "{}",
            vm.1
        );
        assert_eq!(vm, tree, "depth {depth}");
    }
}

#[test]
fn time_budget_stops_a_compiled_endless_loop() {
    let program = r#"
def spin() -> int {
    n = 0;
    while True {
        n += 1;
    }
    return n;
}

with entry {
    print("before");
    spin();
}
"#;
    ends_on_the_time_budget(program);
}

/// A `for` over a range and a comprehension over one take their ints on a path of
/// their own (written in place, sixth step); both still poll the time budget.
#[test]
fn time_budget_stops_compiled_range_loops() {
    let looping = r#"
def spin() -> int {
    n = 0;
    for i in range(1000000000000000) {
        n += i % 2;
    }
    return n;
}

with entry {
    print("before");
    spin();
}
"#;
    ends_on_the_time_budget(looping);
    let comprehending = r#"
def none_of() -> list {
    return [i for i in range(1000000000000000) if i < 0];
}

with entry {
    print("before");
    none_of();
}
"#;
    ends_on_the_time_budget(comprehending);
}

const COMPREHENDING: &str = r#"
def double(v: int) -> int {
    return v * 2;
}

def table(n: int) -> dict {
    return {k: [double(j) for j in range(k)] for k in range(n) if k % 2 == 0};
}

with entry {
    print(table(6));
    print(len(table(40)));
}
"#;

/// Each operation budget and the call depth end `program` with the same output, error
/// and status on both cores.
fn limits_agree(program: &str, budgets: &[&str], depth: &str) {
    for budget in budgets {
        let [vm, tree] = both_ways(program, &["--max-ops", budget]);
        assert_eq!(vm.2, Some(1), "budget {budget}: {vm:?}");
        assert!(vm.1.contains("operation budget exceeded"), "{}", vm.1);
        assert_eq!(vm, tree, "budget {budget}");
    }
    let [vm, tree] = both_ways(program, &["--max-depth", depth]);
    assert_eq!(vm.2, Some(1), "{vm:?}");
    assert!(
        vm.1.contains("maximum recursion depth exceeded"),
        "{}",
        vm.1
    );
    assert_eq!(vm, tree);
}

#[test]
fn limits_end_a_comprehension_in_a_compiled_def_as_on_the_tree_walker() {
    limits_agree(COMPREHENDING, &["3", "20", "57", "400"], "1");
}

/// A comprehension over `enumerate(...)` (pairs bound without tuples) calling a
/// compiled def per item.
const ENUMERATING: &str = r#"
def scale(i: int) -> int {
    return i;
}

def weight(i: int, x: int) -> int {
    w = scale(i) * x;
    return w;
}

def table(n: int) -> dict {
    xs = [k * 3 for k in range(n)];
    return {i: weight(i, x) for (i, x) in enumerate(xs) if x % 2 == 0};
}

with entry {
    print(table(6));
    print(len(table(40)));
}
"#;

#[test]
fn limits_end_an_enumerate_comprehension_as_on_the_tree_walker() {
    limits_agree(ENUMERATING, &["3", "9", "30", "61"], "2");
    let [vm, tree] = both_ways(ENUMERATING, &[]);
    assert_eq!(vm.0, "{0: 0, 2: 12, 4: 48}\n20\n");
    assert_eq!(vm, tree);
}

#[test]
fn time_budget_stops_an_endless_comprehension_in_a_compiled_def() {
    let program = r#"
def none_kept() -> list {
    return [i for i in range(1000000000000000) if i < 0];
}

with entry {
    print("before");
    none_kept();
}
"#;
    ends_on_the_time_budget(program);
}

/// `program` prints `before`, then runs until `--timeout 0.3` ends it (exit 1, the
/// budget error), soon.
fn ends_on_the_time_budget(program: &str) {
    let dir = TempDir::new("vm");
    dir.write("prog.svc", program);
    let start = Instant::now();
    let out = svc_in(
        dir.path(),
        &["run", "--no-store", "--timeout", "0.3", "prog.svc"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "before\n");
    assert!(
        stderr(&out).contains("time budget exceeded"),
        "{}",
        stderr(&out)
    );
    assert!(start.elapsed() < Duration::from_secs(20));
}

/// A walk whose abilities, f-strings and tuple targets are all compiled (issue 11,
/// third step): every budget ends it at the same statement as the tree-walker.
const WALKING: &str = r#"
node Cell {
    has n: int;
}

walker Sum {
    has total: int = 0, path: list = [];

    can start with Root entry {
        visit [-->];
    }

    can cell with Cell entry {
        (a, b) = (here.n, here.n * 2);
        self.total += a + b;
        self.path.append(f"{here.n:02d}");
        if here.n % 3 == 0 {
            report f"three {here.n}";
        }
        visit [-->] else {
            print(f"end at {here.n}, total {self.total}");
        }
    }
}

def chain(n: int) -> None {
    prev = root;
    for i in range(n) {
        cell = Cell(n=i);
        prev ++> cell;
        prev = cell;
    }
}

with entry {
    chain(12);
    w = root spawn Sum();
    print(w.total, w.path);
}
"#;

#[test]
fn limits_end_compiled_walker_abilities_as_on_the_tree_walker() {
    for budget in ["2", "9", "30", "61", "95"] {
        let [vm, tree] = both_ways(WALKING, &["--max-ops", budget]);
        assert_eq!(vm.2, Some(1), "budget {budget}: {vm:?}");
        assert!(vm.1.contains("operation budget exceeded"), "{}", vm.1);
        assert_eq!(vm, tree, "budget {budget}");
    }
    let [vm, tree] = both_ways(WALKING, &["--max-ops", "100000"]);
    assert_eq!(vm.2, Some(0), "{vm:?}");
    assert!(vm.0.ends_with("'09', '10', '11']\n"), "{}", vm.0);
    assert_eq!(vm, tree);
    let [vm, tree] = both_ways(WALKING, &["--max-depth", "0"]);
    assert_eq!(vm.2, Some(1), "{vm:?}");
    assert!(
        vm.1.contains("maximum recursion depth exceeded"),
        "{}",
        vm.1
    );
    assert_eq!(vm, tree);
}

/// `return name;`, `return a op b;` (fused, ninth step), calls that charge the
/// callee's first tick and jumps that charge the tick of the statement they land on.
const RETURNING: &str = r#"
glob g = 5;

def fib(n: int) -> int {
    if n < 2 {
        return n;
    }
    return fib(n - 1) + fib(n - 2);
}

def maybe(flag: bool) -> int {
    if flag {
        x = 7;
        return x;
    }
    return g;
}

obj Acc {
    has total: int = 0;

    def plus(k: int) -> int {
        self.total += k;
        return self.total + k;
    }
}

def run(n: int) -> int {
    a = Acc();
    s = 0;
    while n > 0 {
        n = n - 1;
        if n % 3 == 0 {
            continue;
        }
        s = s + a.plus(maybe(n % 2 == 0)) + fib(n % 5);
    }
    return s;
}

with entry {
    print(run(7));
    print(fib(7));
}
"#;

/// Every operation budget from 1 up to the whole run ends `RETURNING` at the same
/// point, with the same output and error, on both cores.
#[test]
fn every_budget_ends_fused_calls_and_returns_as_on_the_tree_walker() {
    let mut finished = false;
    for budget in 1..400 {
        let b = budget.to_string();
        let [vm, tree] = both_ways(RETURNING, &["--max-ops", &b]);
        assert_eq!(vm, tree, "budget {budget}");
        if vm.2 == Some(0) {
            assert_eq!(vm.0, "89\n13\n", "budget {budget}");
            finished = true;
            break;
        }
        assert!(vm.1.contains("operation budget exceeded"), "{}", vm.1);
    }
    assert!(finished, "the program needs fewer than 400 operations");
}

/// A commit that fails part-way (an unstorable field after storable anchors), caught,
/// then a later commit after the field is fixed (ninth step: the `--no-store` commit
/// marks slots clean in its one pass and gives them their state back when a check
/// fails): the same output stored and not, on both cores.
const RECOMMITTING: &str = r#"
node Box {
    has v: any = None;
}

walker Noop {
    can start with Root entry {
        disengage;
    }
}

with entry {
    a = Box(v=1);
    root ++> a;
    w = Box(v=print);
    root ++> w;
    b = Box(v=2);
    root ++> b;
    try {
        root spawn Noop();
    } except Exception as e {
        print("failed:", e);
    }
    w.v = 3;
    a.v = [a.v];
    root spawn Noop();
    print("after", len([root -->]), [x.v for x in [root -->]]);
}
"#;

#[test]
fn a_failed_no_store_commit_leaves_the_graph_as_a_failed_stored_commit_does() {
    let expected = "failed: cannot persist a value of type 'builtin_function_or_method'\n\
                    after 3 [[1], 3, 2]\n";
    let stored = run_fresh(RECOMMITTING, &[]);
    assert_eq!(stored.0, expected, "{stored:?}");
    assert_eq!(stored.2, Some(0));
    let [vm, tree] = both_ways(RECOMMITTING, &[]);
    assert_eq!(vm, stored);
    assert_eq!(tree, stored);
}

/// `svc run ARGS... prog.svc` in a fresh directory: (stdout, stderr, exit code).
fn run_fresh(program: &str, args: &[&str]) -> (String, String, Option<i32>) {
    let dir = TempDir::new("vm");
    dir.write("prog.svc", program);
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.push("prog.svc");
    let out = svc_in(dir.path(), &all);
    (stdout(&out), stderr(&out), out.status.code())
}

/// Nodes whose fields a store can hold (scalars, strings, containers, anchors) and
/// one it cannot (a builtin in a list, a function, a value nested too deep), committed
/// by a spawn and at the end.
const STORING: &str = r#"
node Box {
    has v: object = None;
}

walker Noop {
    can start with Root entry {
        disengage;
    }
}

def deep(n: int) -> list {
    x = [];
    for i in range(n) {
        x = [x];
    }
    return x;
}

def fill() -> int {
    for v in [1, 2.5, "s", True, None, [1, "a"], {"k": (1, 2)}, {3}, 10 ** 30] {
        root ++> Box(v=v);
    }
    a = Box();
    root ++> a;
    a ++> Box(v=a);
    return len([root -->]);
}

with entry {
    print("plain", fill());
    root spawn Noop();
    print("spawned");
    w = Box(v=BAD);
    root ++> w;
    root spawn Noop();
    print("after");
}
"#;

/// A `--no-store` run checks each changed anchor's fields without making their stored
/// form when they are plainly storable (issue 11, eighth step); what cannot be stored
/// still fails at the same commit with the same error as a stored run, on both cores.
#[test]
fn no_store_runs_refuse_unstorable_fields_as_stored_runs_do() {
    let cases = [
        ("None", None),
        (
            "[1, print]",
            Some("cannot persist a value of type 'builtin_function_or_method'"),
        ),
        ("deep", Some("cannot persist a value of type 'function'")),
        (
            "{\"k\": [deep]}",
            Some("cannot persist a value of type 'function'"),
        ),
        ("deep(150)", Some("nested more than 100 levels deep")),
        ("deep(90)", None),
    ];
    for (bad, message) in cases {
        let program = STORING.replace("BAD", bad);
        let stored = run_fresh(&program, &[]);
        match message {
            Some(m) => {
                assert_eq!(stored.2, Some(1), "{bad}: {stored:?}");
                assert!(stored.1.contains(m), "{bad}: {}", stored.1);
                assert_eq!(stored.0, "plain 10\nspawned\n", "{bad}");
            }
            None => {
                assert_eq!(stored.2, Some(0), "{bad}: {stored:?}");
                assert_eq!(stored.0, "plain 10\nspawned\nafter\n", "{bad}");
            }
        }
        for extra in [
            &["--no-store"][..],
            &["--no-store", "--no-vm"],
            &["--no-vm"],
        ] {
            assert_eq!(run_fresh(&program, extra), stored, "{bad} {extra:?}");
        }
    }
}
