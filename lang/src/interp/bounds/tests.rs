//! Tests of the size and time bounds of single operations, through whole svc programs
//! run with explicit `Limits`.

use crate::driver::Limits;
use std::time::{Duration, Instant};

/// Run `body` inside `with entry { ... }` under `limits`; stdout, followed by the error
/// text if the run failed.
fn run_with(body: &str, limits: Limits) -> String {
    crate::interp::builtins::tests::run_program(&format!("with entry {{\n{body}\n}}\n"), limits)
}

fn run(body: &str) -> String {
    run_with(body, Limits::default())
}

/// Small limits so growth tests stay cheap: 100 items, 1000 bytes.
fn small() -> Limits {
    Limits {
        max_collection_items: 100,
        max_string_bytes: 1000,
        ..Limits::default()
    }
}

/// `expr` evaluated under `limits`, printing the exception it raises as `Type: message`.
fn raised(expr: &str, limits: Limits) -> String {
    run_with(
        &format!(
            "try {{ {expr}; print(\"no error\"); }} except Exception as e {{ print(type(e).__name__ + \": \" + str(e)); }}"
        ),
        limits,
    )
}

#[test]
fn repetition_is_refused_before_allocating() {
    let cases = [
        (
            "x = (0,) * 10**15",
            "MemoryError: result would have 1000000000000000 items (limit 10000000)",
        ),
        (
            "x = 10**15 * [1, 2, 3]",
            "MemoryError: result would have 3000000000000000 items (limit 10000000)",
        ),
        (
            "x = \"ab\" * 10**9",
            "MemoryError: string would have 2000000000 bytes (limit 67108864)",
        ),
        (
            "x = [0, 0]; x *= 10**8",
            "MemoryError: result would have 200000000 items (limit 10000000)",
        ),
        (
            "x = (0,) * 10**30",
            "OverflowError: cannot fit 'int' into an index-sized integer",
        ),
        // Overflow-safe: 10**18 * 3 items saturates instead of wrapping to a small count.
        (
            "x = (1, 2, 3) * 6148914691236517206",
            "MemoryError: result would have 18446744073709551615 items (limit 10000000)",
        ),
    ];
    for (expr, want) in cases {
        assert_eq!(
            raised(expr, Limits::default()),
            format!("{want}\n"),
            "{expr}"
        );
    }
    assert_eq!(
        run("print([] * 10**30, \"\" * 10**30, (1,) * -5, len(\"ab\" * 1000))"),
        "[]  () 2000\n"
    );
}

#[test]
fn growth_past_the_item_limit_is_a_memory_error() {
    let cases = [
        "xs = []; for i in range(200) { xs.append(i); }",
        "xs = list(range(60)); xs.extend(range(60))",
        "xs = list(range(100)); xs.insert(0, 1)",
        "xs = list(range(60)); xs += xs",
        "xs = list(range(60)); ys = xs + xs",
        "xs = list(range(60)); xs[0:0] = xs",
        "d = {}; for i in range(200) { d[i] = i; }",
        "d = {}; for i in range(200) { d.setdefault(i, 0); }",
        "s = set(); for i in range(200) { s.add(i); }",
        "s = set(range(60)); s.update(range(60, 120))",
        "s = set(range(60)) | set(range(60, 120))",
        "d = dict.fromkeys(range(101))",
        "xs = list(range(101))",
        "xs = [i for i in range(1000)]",
        "xs = {i for i in range(1000)}",
        "xs = {i: i for i in range(1000)}",
        "xs = [(a, b) for a in range(20) for b in range(20)]",
        "xs = list(\"x\" * 500)",
        "xs = (\"a \" * 400).split()",
        "xs = (\"a,\" * 400).split(\",\")",
        "xs = list(range(1000)[::2])",
    ];
    for expr in cases {
        let got = raised(expr, small());
        assert!(
            got.starts_with("MemoryError: result would have ") && got.ends_with("(limit 100)\n"),
            "{expr}: {got}"
        );
    }
    // At the limit, and updates of existing keys, are fine.
    let ok = "xs = list(range(100)); d = dict.fromkeys(range(100)); d[5] = 1; \
              s = set(range(100)); s.add(5); s.update(range(50)); \
              ys = [i for i in range(10**5) if i < 100]; \
              print(len(xs), len(d), len(s), len(ys))";
    assert_eq!(run_with(ok, small()), "100 100 100 100\n");
}

#[test]
fn string_building_is_bounded() {
    let cases = [
        "x = \"ab\".ljust(2000)",
        "x = \"ab\".center(2000, \"*\")",
        "x = \"ab\".zfill(2000)",
        "x = \"\\t\\t\".expandtabs(600)",
        "x = \"-\".join([\"x\" * 600, \"y\" * 600])",
        "x = (\"a\" * 100).replace(\"a\", \"bbbbbbbbbbbb\")",
        "x = \"ab\".replace(\"\", \"x\" * 400)",
        "x = \"x\" * 600 + \"y\" * 600",
        "x = f\"{1:>2000}\"",
        "x = f\"{1.5:.2000f}\"",
        "x = f\"{'a' * 600}{'b' * 600}\"",
        "x = format(7, \"*^2000\")",
        "x = \"{:>600}{:>600}\".format(1, 2)",
        "x = \"%2000d\" % 1",
        "x = \"%*d\" % (2000, 1)",
        "x = \"%.2000f\" % 1.5",
        "x = \"%s%s\" % (\"a\" * 600, \"b\" * 600)",
        "x = bin(2 ** 5000)",
    ];
    for expr in cases {
        let got = raised(expr, small());
        assert!(
            got.starts_with("MemoryError: string would have ") && got.ends_with("(limit 1000)\n"),
            "{expr}: {got}"
        );
    }
    // A precision truncates strings: no bound applies.
    assert_eq!(
        run_with(
            "print(\"%.5000s|\" % \"abc\", f\"{'abc':.5000}|\", \"ab\".ljust(10, \"é\"))",
            small()
        ),
        "abc| abc| abéééééééé\n"
    );
    // The default bound is 64 MiB; CPython's "Too many decimal digits" stays beyond
    // sys.maxsize.
    assert_eq!(
        raised("x = f\"{1:>1000000000}\"", Limits::default()),
        "MemoryError: string would have 1000000000 bytes (limit 67108864)\n"
    );
    assert_eq!(
        raised("x = \"%1000000000d\" % 1", Limits::default()),
        "MemoryError: string would have 1000000000 bytes (limit 67108864)\n"
    );
    assert_eq!(
        raised("x = f\"{1:>99999999999999999999}\"", Limits::default()),
        "ValueError: Too many decimal digits in format string\n"
    );
}

#[test]
fn huge_int_results_are_refused_quickly() {
    let start = Instant::now();
    assert_eq!(
        raised("x = 2 ** (10**10)", Limits::default()),
        "MemoryError: integer would have 10000000000 bits (limit 4000000)\n"
    );
    assert_eq!(
        raised("x = 3 ** (10**100)", Limits::default())
            .lines()
            .next(),
        Some("MemoryError: integer would have 18446744073709551615 bits (limit 4000000)")
    );
    assert_eq!(
        raised("x = 1 << (10**10)", Limits::default()),
        "MemoryError: integer would have 10000000001 bits (limit 4000000)\n"
    );
    assert_eq!(
        raised("x = 2 ** 3000000; y = x * x", Limits::default()),
        "MemoryError: integer would have 6000002 bits (limit 4000000)\n"
    );
    // The bit limit follows max_string_bytes when that is smaller.
    assert_eq!(
        raised("x = 2 ** 10000", small()),
        "MemoryError: integer would have 10000 bits (limit 8000)\n"
    );
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_eq!(
        run(
            "print(1 ** 10**30, (-1) ** (10**30 + 1), 0 ** 10**30, 0 << 10**30, len(str(2 ** 1000)))"
        ),
        "1 -1 0 0 302\n"
    );
}

#[test]
fn ranges_stay_lazy_where_they_can() {
    assert_eq!(
        run(
            "print(sum(range(10**12)), sum(range(10, 0, -3), 5), min(range(5, 10**15, 7)), max(range(10, -10**15, -3)));\n\
             print(len(range(10**15)), range(10**15)[-1], 10**14 in range(10**15));\n\
             print([x for x in range(10**6) if x % 250000 == 0]);\n\
             for i in range(9223372036854775800, 9223372036854775807, 5) { print(i); }"
        ),
        "499999999999500000000000 27 5 10\n\
         1000000000000000 999999999999999 True\n\
         [0, 250000, 500000, 750000]\n\
         9223372036854775800\n9223372036854775805\n"
    );
    assert_eq!(
        raised("x = list(range(10**12))", Limits::default()),
        "MemoryError: result would have 1000000000000 items (limit 10000000)\n"
    );
}

/// A run with a 300 ms budget that must end with the uncatchable time limit, soon.
fn assert_times_out(body: &str) {
    let limits = Limits {
        timeout: Some(Duration::from_millis(300)),
        ..Limits::default()
    };
    let start = Instant::now();
    let got = run_with(
        &format!("try {{ {body} }} except Exception as e {{ print(\"swallowed\"); }}"),
        limits,
    );
    assert!(
        got.starts_with("<error>") && got.contains("time budget exceeded"),
        "{body}: {got}"
    );
    assert!(start.elapsed() < Duration::from_secs(30), "{body}");
}

#[test]
fn the_time_budget_applies_inside_loops_and_builtins() {
    assert_times_out("while True {}");
    assert_times_out("for i in range(10**15) {}");
    assert_times_out("x = [i for i in range(10**15) if i < 0];");
    assert_times_out("x = [0 for a in range(10**5) for b in range(10**5) if b < 0];");
    assert_times_out("xs = list(range(10**6)); for i in range(100) { x = sorted(xs, key=str); }");
    assert_times_out("xs = list(range(10**6)); for i in range(1000) { x = list(map(str, xs)); }");
}

#[test]
fn normal_programs_are_unaffected() {
    assert_eq!(
        run(
            "xs = [i * i for i in range(1000)]; d = {i: str(i) for i in range(100)};\n\
             s = \"-\".join([str(x) for x in xs[:5]]);\n\
             print(len(xs), len(d), s, f\"{3.14159:>10.2f}|{'ab':^6}|\", \"%5d|%-4s|\" % (42, \"x\"));\n\
             print(2 ** 100, (7,) * 3, \"ab\" * 3, sum(xs), max(xs), sorted(d)[-1]);"
        ),
        "1000 100 0-1-4-9-16       3.14|  ab  |    42|x   |\n\
         1267650600228229401496703205376 (7, 7, 7) ababab 332833500 998001 99\n"
    );
}
