//! Tests of the builtins through whole svc programs (parsed, checked and run with a
//! `MemoryHost`). Expected outputs were produced by running the same lines with CPython
//! 3.12 (see the tables below).

use crate::driver::{RunOptions, run_source};
use crate::host::MemoryHost;
use std::path::Path;

/// Run an svc program under `limits` (on a thread with the interpreter's stack size);
/// stdout, followed by the error text if it failed. Shared by the `bounds` tests.
pub(crate) fn run_program(src: &str, limits: crate::driver::Limits) -> String {
    let src = src.to_string();
    let job = move || {
        let mut host = MemoryHost::new();
        let out = run_source(
            Path::new("builtins_test.svc"),
            src,
            &mut host,
            &RunOptions {
                limits,
                ..RunOptions::default()
            },
        );
        match out.error {
            None => host.stdout,
            Some(e) => format!("{}<error>\n{e}", host.stdout),
        }
    };
    std::thread::Builder::new()
        .stack_size(crate::driver::INTERPRETER_STACK_BYTES)
        .spawn(job)
        .expect("spawn interpreter thread")
        .join()
        .unwrap_or_else(|_| "<panic>".to_string())
}

/// `run_program` with the default limits.
fn run(src: &str) -> String {
    run_program(src, crate::driver::Limits::default())
}

fn check_all(cases: impl Iterator<Item = (String, String, String)>) {
    let mut failures = Vec::new();
    for (name, src, want) in cases {
        let got = run(&src);
        if got != want {
            failures.push(format!("--- {name}\n{src}\n--- want\n{want}--- got\n{got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn programs_match_cpython() {
    check_all(PROGRAMS.iter().map(|(name, body, want)| {
        (
            name.to_string(),
            format!("with entry {{\n{body}\n}}\n"),
            want.to_string(),
        )
    }));
}

#[test]
fn error_messages_match_cpython() {
    check_all(ERRORS.iter().map(|(expr, want)| {
        let src = format!(
            "with entry {{\n    try {{\n        {expr};\n    }} except Exception as e {{\n        print(type(e).__name__ + \": \" + str(e));\n    }}\n}}\n"
        );
        (expr.to_string(), src, format!("{want}\n"))
    }));
}

#[test]
fn lambdas_as_keys_and_stable_sort() {
    let src = r#"
with entry {
    people = [("bo", 3), ("al", 1), ("cy", 3), ("di", 2)];
    print(sorted(people, key=lambda (p: tuple) -> int { p[1]; }));
    print(sorted(people, key=lambda (p: tuple) -> int { p[1]; }, reverse=True));
    people.sort(key=lambda (p: tuple) -> str { p[0]; }, reverse=True);
    print(people);
    print(max(people, key=lambda (p: tuple) -> int { p[1]; }), min(people, key=lambda (p: tuple) -> int { p[1]; }));
    print(list(map(lambda (x: int) -> int { x * 2; }, [1, 2])), list(filter(lambda (x: int) -> bool { x > 1; }, [1, 2, 3])));
}
"#;
    let want = "[('al', 1), ('di', 2), ('bo', 3), ('cy', 3)]\n\
                [('bo', 3), ('cy', 3), ('di', 2), ('al', 1)]\n\
                [('di', 2), ('cy', 3), ('bo', 3), ('al', 1)]\n\
                ('cy', 3) ('al', 1)\n\
                [2, 4] [2, 3]\n";
    assert_eq!(run(src), want);
}

#[test]
fn unbound_builtin_methods() {
    let src = "with entry {\n    print(sorted([\"b\", \"C\", \"a\"], key=str.lower), list(map(str.upper, [\"x\", \"y\"])));\n    print(dict.fromkeys([1, 2], 0));\n}\n";
    assert_eq!(run(src), "['a', 'b', 'C'] ['X', 'Y']\n{1: 0, 2: 0}\n");
}

#[test]
fn key_errors_propagate_from_sort() {
    let src = r#"
with entry {
    xs = [3, 1, 2];
    try {
        xs.sort(key=lambda (x: int) -> int { 1 // (x - 1); });
    } except ZeroDivisionError as e {
        print("caught", e, xs);
    }
}
"#;
    assert_eq!(
        run(src),
        "caught integer division or modulo by zero [3, 1, 2]\n"
    );
}

#[test]
fn archetypes_with_builtins() {
    let src = r#"
obj Pt {
    has x: int, y: int = 0;
    def __len__() -> int { return 2; }
}
with entry {
    p = Pt(x=1);
    print(len(p), isinstance(p, Pt), isinstance(p, (int, Pt)), hasattr(p, "x"), getattr(p, "y"), hasattr(p, "z"));
    setattr(p, "y", 5);
    print(p.y, "{0.x}-{0.y}".format(p), type(p).__name__, callable(Pt), callable(p));
    pts = [Pt(x=3), Pt(x=1), Pt(x=2)];
    print([q.x for q in sorted(pts, key=lambda (q: Pt) -> int { q.x; })], max(pts, key=lambda (q: Pt) -> int { q.x; }).x);
    try { sorted(pts); } except TypeError as e { print(e); }
}
"#;
    let want = "2 True True True 0 False\n\
                5 1-5 Pt True False\n\
                [1, 2, 3] 3\n\
                '<' not supported between instances of 'Pt' and 'Pt'\n";
    assert_eq!(run(src), want);
}

#[test]
fn merge_sort_path_is_stable() {
    // Mixed int/float keys take the general (merge sort) path.
    let src = r#"
with entry {
    xs = [(i % 4) + (0.5 if i % 3 == 0 else 0) for i in range(30)];
    idx = sorted(range(30), key=lambda (i: int) -> float { xs[i]; });
    print(idx);
    print(sorted(range(30), key=lambda (i: int) -> float { xs[i]; }, reverse=True));
    print(sorted(xs) == sorted(xs, key=lambda (x: float) -> float { x; }), sorted(xs, reverse=True)[:5]);
}
"#;
    let xs: Vec<f64> = (0..30)
        .map(|i| f64::from(i % 4) + if i % 3 == 0 { 0.5 } else { 0.0 })
        .collect();
    let mut asc: Vec<usize> = (0..30).collect();
    asc.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut desc: Vec<usize> = (0..30).collect();
    desc.sort_by(|&a, &b| xs[b].total_cmp(&xs[a]));
    let fmt = |v: &[usize]| {
        format!(
            "[{}]",
            v.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let want = format!(
        "{}\n{}\nTrue [3.5, 3.5, 3.5, 3, 3]\n",
        fmt(&asc),
        fmt(&desc)
    );
    assert_eq!(run(src), want);
}

/// (name, body of `with entry { ... }`, expected stdout) — expectations from CPython 3.12.
const PROGRAMS: &[(&str, &str, &str)] = &[
    (
        "print_basic",
        "    print(1, \"a\", 2.5, None, True);\n    print(\"x\", \"y\", sep=\"-\", end=\"!\\n\");\n    print();\n    print([1, \"a\"], (1,), {\"k\": [2]}, {3});",
        "1 a 2.5 None True\nx-y!\n\n[1, 'a'] (1,) {'k': [2]} {3}\n",
    ),
    (
        "len_range",
        "    print(len(\"héllo\"), len([1, 2]), len({\"a\": 1}), len(range(0, 10, 3)), len(range(5, 0)));\n    print(list(range(5)), list(range(10, 0, -3)));",
        "5 2 1 4 0\n[0, 1, 2, 3, 4] [10, 7, 4, 1]\n",
    ),
    (
        "abs_round",
        "    print(abs(-3), abs(-2.5), abs(True));\n    print(round(2.5), round(3.5), round(-0.5), round(2.675, 2), round(1.25, 1), round(15, -1), round(25, -1), round(7.0));\n    print(round(0.1 + 0.2, 2), round(1234.5678, -2), round(-7, 0));",
        "3 2.5 1\n2 4 0 2.67 1.2 20 20 7\n0.3 1200.0 -7\n",
    ),
    (
        "min_max",
        "    print(min(3, 1, 2), max([4, 9, 2]), min(\"bca\"), max([], default=0));\n    print(max([\"aa\", \"b\", \"ccc\"], key=len), min([(2, \"b\"), (1, \"z\"), (1, \"a\")]));\n    print(max(1, 2.5), min([3, 1.0, 1]));",
        "1 9 a 0\nccc (1, 'a')\n2.5 1.0\n",
    ),
    (
        "sum",
        "    print(sum([1, 2, 3]), sum([0.1] * 10), sum([1, 0.1, 0.2]), sum([[1], [2]], []));\n    print(sum(range(101)), sum([1.5, 2], 10), sum([0.1] * 3));",
        "6 1.0 1.3 [1, 2]\n5050 13.5 0.30000000000000004\n",
    ),
    (
        "sorted",
        "    xs = [3, 1, 2];\n    print(sorted(xs), sorted(xs, reverse=True), xs);\n    print(sorted([\"b\", \"A\", \"c\"]), sorted([(1, \"b\"), (0, \"z\"), (1, \"a\")]));\n    print(sorted(\"hello\"), sorted({3: 1, 1: 2}));\n    print(sorted([1.5, 1, True, 0.5]));\n    ws = [\"bb\", \"a\", \"ccc\", \"dd\", \"e\"];\n    print(sorted(ws, key=len), sorted(ws, key=len, reverse=True));",
        "[1, 2, 3] [3, 2, 1] [3, 1, 2]\n['A', 'b', 'c'] [(0, 'z'), (1, 'a'), (1, 'b')]\n['e', 'h', 'l', 'l', 'o'] [1, 3]\n[0.5, 1, True, 1.5]\n['a', 'e', 'bb', 'dd', 'ccc'] ['ccc', 'bb', 'dd', 'a', 'e']\n",
    ),
    (
        "iter_tools",
        "    print(list(reversed([1, 2, 3])), list(reversed(\"ab\")), list(reversed(range(3))));\n    print(list(enumerate(\"ab\")), list(enumerate([\"x\"], start=5)));\n    print(list(zip([1, 2, 3], \"ab\")), list(zip()));\n    print(list(map(str, [1, 2])), list(filter(None, [0, 1, \"\", \"a\"])));\n    print(any([]), all([]), any([0, 3]), all([1, 0]));",
        "[3, 2, 1] ['b', 'a'] [2, 1, 0]\n[(0, 'a'), (1, 'b')] [(5, 'x')]\n[(1, 'a'), (2, 'b')] []\n['1', '2'] [1, 'a']\nFalse True True False\n",
    ),
    (
        "iter_next",
        "    it = iter([1, 2]);\n    print(next(it), next(it), next(it, \"done\"));",
        "1 2 done\n",
    ),
    (
        "types",
        "    print(isinstance(True, int), isinstance(1, float), isinstance(\"a\", (int, str)), isinstance(1.0, int | float));\n    print(type(1).__name__, type(\"a\").__name__, type([]).__name__, type(None).__name__, type(1.5) == float);\n    print(issubclass(bool, int), callable(len), callable(3));",
        "True False True True\nint str list NoneType True\nTrue True False\n",
    ),
    (
        "attrs",
        "    print(hasattr(\"a\", \"upper\"), hasattr(1, \"nope\"), getattr([], \"nope\", 7));",
        "True False 7\n",
    ),
    (
        "hash_id",
        "    print(hash(1), hash(-1), hash(1.5), hash((1, 2)), hash(True), hash(2**64));\n    print(hash(\"a\") == hash(\"a\"), id([]) != 0);",
        "1 -2 1152921504606846977 -3550055125485641917 1 8\nTrue True\n",
    ),
    (
        "chars",
        "    print(ord(\"a\"), ord(\"é\"), chr(97), chr(0x1F600) == \"\\U0001F600\");\n    print(bin(10), hex(255), oct(8), bin(-5), hex(0));",
        "97 233 a True\n0b1010 0xff 0o10 -0b101 0x0\n",
    ),
    (
        "divmod_pow",
        "    print(divmod(7, 2), divmod(-7, 2), divmod(7.5, 2), pow(2, 10), pow(3, 4, 5), pow(2, -1), pow(3, -1, 7));",
        "(3, 1) (-4, 1) (3.0, 1.5) 1024 1 0.5 5\n",
    ),
    (
        "format_fn",
        "    print(format(3.14159, \".2f\"), format(42, \"05d\"), format(\"ab\", \">4\"), format(1234567, \",\"), format(True), format(0.5, \"%\"));\n    print(repr(\"it's\"), repr(1.0), ascii(\"é\"));",
        "3.14 00042   ab 1,234,567 True 50.000000%\n\"it's\" 1.0 '\\xe9'\n",
    ),
    (
        "ctor_int_float",
        "    print(int(\"42\"), int(\" -7 \"), int(3.9), int(-3.9), int(\"ff\", 16), int(\"0x1f\", 0), int(\"1_000\"), int(True), int());\n    print(float(\"1.5\"), float(\" 2 \"), float(3), float(\"inf\"), float(\"-1e-3\"), float());",
        "42 -7 3 -3 255 31 1000 1 0\n1.5 2.0 3.0 inf -0.001 0.0\n",
    ),
    (
        "ctor_containers",
        "    print(str(12), str([1, \"a\"]), bool([]), bool(\"x\"), list(\"ab\"), tuple([1]), set([1, 1, 2]));\n    print(dict([(\"a\", 1)], b=2), dict(a=1), list({\"x\": 1}), list(range(3)), tuple());",
        "12 [1, 'a'] False True ['a', 'b'] (1,) {1, 2}\n{'a': 1, 'b': 2} {'a': 1} ['x'] [0, 1, 2] ()\n",
    ),
    (
        "str_split",
        "    print(\"a b  c\".split(), \" a b \".split(None, 1), \"a,b,,c\".split(\",\"), \"a,b,c\".split(\",\", 1), \"\".split(), \"\".split(\",\"));\n    print(\"a b c\".rsplit(None, 1), \"a,b,c\".rsplit(\",\", 1), \"l1\\nl2\\r\\nl3\\n\".splitlines(), \"a\\nb\".splitlines(True));",
        "['a', 'b', 'c'] ['a', 'b '] ['a', 'b', '', 'c'] ['a', 'b,c'] [] ['']\n['a b', 'c'] ['a,b', 'c'] ['l1', 'l2', 'l3'] ['a\\n', 'b']\n",
    ),
    (
        "str_join_strip",
        "    print(\", \".join([\"a\", \"b\"]), \"-\".join(\"xyz\"), \"\".join([]), \"|\".join((\"p\", \"q\")));\n    print(\"  hi  \".strip() + \"|\", \"xxhixx\".strip(\"x\"), \"  hi\".lstrip(), \"hi  \".rstrip() + \"|\", \"abcba\".strip(\"ab\"));",
        "a, b x-y-z  p|q\nhi| hi hi hi| c\n",
    ),
    (
        "str_case",
        "    print(\"Hello\".lower(), \"Hello\".upper(), \"hello world\".title(), \"they're\".title(), \"hELLO wORLD\".capitalize(), \"Hello\".swapcase(), \"Straße\".casefold());",
        "hello HELLO Hello World They'Re Hello world hELLO strasse\n",
    ),
    (
        "str_search",
        "    s = \"hello world\";\n    print(s.find(\"o\"), s.rfind(\"o\"), s.find(\"z\"), s.find(\"o\", 5), s.find(\"o\", 5, 7), s.index(\"w\"), s.rindex(\"l\"), s.count(\"l\"), s.count(\"\"));\n    print(s.startswith(\"he\"), s.endswith(\"ld\"), s.startswith((\"x\", \"hel\")), s.startswith(\"wor\", 6), \"héllo\".find(\"l\"));",
        "4 7 -1 7 -1 6 9 3 12\nTrue True True True 2\n",
    ),
    (
        "str_replace_pad",
        "    print(\"aaa\".replace(\"a\", \"b\"), \"aaa\".replace(\"a\", \"b\", 2), \"abc\".replace(\"\", \"-\"));\n    print(\"ab\".center(6, \"*\"), \"abc\".center(6), \"ab\".ljust(4) + \"|\", \"ab\".rjust(4), \"42\".zfill(5), \"-42\".zfill(6));\n    print(\"a=b=c\".partition(\"=\"), \"a=b=c\".rpartition(\"=\"), \"abc\".partition(\"x\"));\n    print(\"a\\tb\".expandtabs(4), \"test_x\".removeprefix(\"test_\"), \"x.py\".removesuffix(\".py\"));",
        "bbb bba -a-b-c-\n**ab**  abc   ab  |   ab 00042 -00042\n('a', '=', 'b=c') ('a=b', '=', 'c') ('abc', '', '')\na   b x x\n",
    ),
    (
        "str_predicates",
        "    print(\"123\".isdigit(), \"12a\".isdigit(), \"\".isdigit(), \"abc\".isalpha(), \"ab1\".isalnum(), \" \\t\".isspace(), \"ABC1\".isupper(), \"abc\".islower(), \"Hello World\".istitle(), \"١٢\".isdecimal(), \"½\".isnumeric(), \"x_1\".isidentifier());",
        "True False False True True True True True True True True True\n",
    ),
    (
        "str_format",
        "    print(\"{} + {} = {}\".format(1, 2, 3), \"{0}{1}{0}\".format(\"a\", \"b\"), \"{name}!\".format(name=\"hi\"));\n    print(\"{:>5}|{:<5}|{:^5}|\".format(\"a\", \"b\", \"c\"), \"{:.2f}\".format(3.14159), \"{0!r} {0!s}\".format(\"q\"), \"{{}} {}\".format(1));\n    print(\"{0[1]} {0[0]}\".format([5, 6]), \"{d[k]}\".format(d={\"k\": 9}), \"{:{w}}|\".format(\"x\", w=4), \"{:,}\".format(1234567));",
        "1 + 2 = 3 aba hi!\n    a|b    |  c  | 3.14 'q' q {} 1\n6 5 9 x   | 1,234,567\n",
    ),
    (
        "list_methods",
        "    xs = [1, 2];\n    xs.append(3);\n    xs.extend([4, 5]);\n    xs.insert(0, 0);\n    xs.insert(-1, 9);\n    xs.insert(100, 7);\n    print(xs);\n    print(xs.pop(), xs.pop(0), xs.pop(-3), xs);\n    xs.remove(9);\n    print(xs, xs.index(3), xs.count(2), [1, 2, 1].count(1), [1, 2, 3, 2].index(2, 2));\n    ys = xs.copy();\n    ys.reverse();\n    xs.clear();\n    print(xs, ys);\n    zs = [\"bb\", \"a\", \"ccc\"];\n    zs.sort(key=len, reverse=True);\n    print(zs);\n    zs.sort();\n    print(zs);",
        "[0, 1, 2, 3, 4, 9, 5, 7]\n7 0 4 [1, 2, 3, 9, 5]\n[1, 2, 3, 5] 2 1 2 3\n[] [5, 3, 2, 1]\n['ccc', 'bb', 'a']\n['a', 'bb', 'ccc']\n",
    ),
    (
        "dict_methods",
        "    d = {\"a\": 1, \"b\": 2};\n    print(d.get(\"a\"), d.get(\"z\"), d.get(\"z\", 0), list(d.keys()), list(d.values()), list(d.items()));\n    print(d.setdefault(\"c\", 3), d.setdefault(\"a\", 9), d.pop(\"b\"), d.pop(\"zz\", \"dflt\"), d);\n    d.update({\"x\": 1}, y=2);\n    d.update([(\"z\", 0)]);\n    print(d, d.popitem(), len(d), \"a\" in d.keys());\n    e = d.copy();\n    d.clear();\n    print(d, e);\n    for k, v in e.items() { print(k, v); }",
        "1 None 0 ['a', 'b'] [1, 2] [('a', 1), ('b', 2)]\n3 1 2 dflt {'a': 1, 'c': 3}\n{'a': 1, 'c': 3, 'x': 1, 'y': 2} ('z', 0) 4 True\n{} {'a': 1, 'c': 3, 'x': 1, 'y': 2}\na 1\nc 3\nx 1\ny 2\n",
    ),
    (
        "set_methods",
        "    s = {1, 2};\n    s.add(3);\n    s.add(1);\n    s.discard(7);\n    s.remove(2);\n    print(s, s.union([5]), s.intersection({1, 5}), s.difference([1]), s.symmetric_difference({3, 4}));\n    print(s.issubset({1, 3, 9}), s.issuperset([1]), s.isdisjoint([8]), len(s.copy()));\n    s.update([10, 11]);\n    print(sorted(s), s.pop() in {1, 3, 10, 11});\n    s.clear();\n    print(s);",
        "{1, 3} {1, 3, 5} {1} {3} {1, 4}\nTrue True True 2\n[1, 3, 10, 11] True\nset()\n",
    ),
    (
        "tuple_num_methods",
        "    t = (1, 2, 1);\n    print(t.count(1), t.index(2), (255).bit_length(), (2.0).is_integer(), (2.5).is_integer(), range(0, 10, 2).index(4));",
        "2 1 8 True False 2\n",
    ),
    (
        "more_numbers",
        "    print(sum([1, 2**63]), sum([0.1, 0.2, 0.3]), sum([1e100, 1.0, -1e100]), sum([1, 2.5, 10**20]), sum([True, True]), sum([], 0.0));\n    print(round(-2.5), round(0.5), round(1.5), round(2.5, 0), round(-0.0), round(1e20), round(123.456, -1), round(-1.5));\n    print(max(\"abc\", \"abd\"), min([3.5, 2, 2.0]), max([2, 2.0]), min([\"b\", \"a\"], key=None), sorted([3, 1], key=None));\n    print(hash(0.0) == hash(-0.0), hash(2.0) == hash(2), divmod(-7.5, 2), pow(-2, 3), abs(-2**70));",
        "9223372036854775809 0.6 1.0 1e+20 2 0.0\n-2 0 2 2.0 0 100000000000000000000 120.0 -2\nabd 2 2 a [1, 3]\nTrue True (-4.0, 0.5) -8 1180591620717411303424\n",
    ),
    (
        "more_strings",
        "    print(\"{:>8.3f}|{:08.2f}|{:x}|{!r:>6}|{:<3d}|\".format(3.14159, -3.5, 255, \"a\", 7));\n    print(\"a,b,c\".split(\",\", maxsplit=1), [1, 2, 1, 3].index(1, -2), \"abc\".find(\"c\", -1), \"a b\".split(\" \", -1));\n    print(int(\"  12  \"), int(\"0b101\", 0), int(\"-0o17\", 0), float(\"1e3\"), float(\" -inf \"), str(1.0), str(-0.0), str(1e16));\n    print(\"%\", \"x\".join([\"1\"]), \"\".join([\"a\"]) is not None, \"ab\".startswith(\"\"), \"\".endswith(\"\"), \"ab\".find(\"\", 5));",
        "   3.142|-0003.50|ff|   'a'|7  |\n['a', 'b,c'] 2 2 ['a', 'b']\n12 5 -15 1000.0 -inf 1.0 -0.0 1e+16\n% 1 True True True -1\n",
    ),
];

/// (expression, `TypeName: message` CPython 3.12 raises).
const ERRORS: &[(&str, &str)] = &[
    ("len(5)", "TypeError: object of type 'int' has no len()"),
    (
        "int(\"x\")",
        "ValueError: invalid literal for int() with base 10: 'x'",
    ),
    (
        "int(\"12.5\")",
        "ValueError: invalid literal for int() with base 10: '12.5'",
    ),
    (
        "float(\"abc\")",
        "ValueError: could not convert string to float: 'abc'",
    ),
    ("min([])", "ValueError: min() iterable argument is empty"),
    (
        "max([], key=len)",
        "ValueError: max() iterable argument is empty",
    ),
    (
        "chr(1114112)",
        "ValueError: chr() arg not in range(0x110000)",
    ),
    (
        "ord(\"ab\")",
        "TypeError: ord() expected a character, but string of length 2 found",
    ),
    (
        "ord(5)",
        "TypeError: ord() expected string of length 1, but int found",
    ),
    ("[].pop()", "IndexError: pop from empty list"),
    ("[1].pop(5)", "IndexError: pop index out of range"),
    ("[1].remove(2)", "ValueError: list.remove(x): x not in list"),
    ("[1, 2].index(5)", "ValueError: 5 is not in list"),
    ("[\"a\"].index(\"b\")", "ValueError: 'b' is not in list"),
    ("{\"a\": 1}.pop(\"b\")", "KeyError: 'b'"),
    ("{1}.remove(2)", "KeyError: 2"),
    ("set().pop()", "KeyError: 'pop from an empty set'"),
    ("{}.popitem()", "KeyError: 'popitem(): dictionary is empty'"),
    ("\"abc\".index(\"z\")", "ValueError: substring not found"),
    ("\"a\".split(\"\")", "ValueError: empty separator"),
    (
        "\"{} {1}\".format(1, 2)",
        "ValueError: cannot switch from automatic field numbering to manual field specification",
    ),
    (
        "\"{2}\".format(1)",
        "IndexError: Replacement index 2 out of range for positional args tuple",
    ),
    (
        "\"}\".format()",
        "ValueError: Single '}' encountered in format string",
    ),
    ("\"{x}\".format()", "KeyError: 'x'"),
    (
        "\", \".join([1, 2])",
        "TypeError: sequence item 0: expected str instance, int found",
    ),
    (
        "\"a\".center(5, \"xy\")",
        "TypeError: The fill character must be exactly one character long",
    ),
    (
        "sorted([1, \"a\"])",
        "TypeError: '<' not supported between instances of 'str' and 'int'",
    ),
    (
        "max(1, \"a\")",
        "TypeError: '>' not supported between instances of 'str' and 'int'",
    ),
    (
        "min(1, \"a\")",
        "TypeError: '<' not supported between instances of 'str' and 'int'",
    ),
    (
        "sum([\"a\", \"b\"], \"\")",
        "TypeError: sum() can't sum strings [use ''.join(seq) instead]",
    ),
    (
        "divmod(1, 0)",
        "ZeroDivisionError: integer division or modulo by zero",
    ),
    ("divmod(1.0, 0)", "ZeroDivisionError: float divmod()"),
    ("pow(2, 3, 0)", "ValueError: pow() 3rd argument cannot be 0"),
    (
        "range(1, 2, 0)",
        "ValueError: range() arg 3 must not be zero",
    ),
    (
        "range(1.5)",
        "TypeError: 'float' object cannot be interpreted as an integer",
    ),
    ("abs(\"x\")", "TypeError: bad operand type for abs(): 'str'"),
    (
        "round(\"x\")",
        "TypeError: type str doesn't define __round__ method",
    ),
    ("hash([1])", "TypeError: unhashable type: 'list'"),
    ("next(iter([]))", "StopIteration: "),
    ("next([1])", "TypeError: 'list' object is not an iterator"),
    (
        "isinstance(1, 5)",
        "TypeError: isinstance() arg 2 must be a type, a tuple of types, or a union",
    ),
    (
        "list(zip([1], [1, 2], strict=True))",
        "ValueError: zip() argument 2 is longer than argument 1",
    ),
    (
        "int([1])",
        "TypeError: int() argument must be a string, a bytes-like object or a real number, not 'list'",
    ),
    (
        "float([1])",
        "TypeError: float() argument must be a string or a real number, not 'list'",
    ),
    (
        "dict([(1, 2, 3)])",
        "ValueError: dictionary update sequence element #0 has length 3; 2 is required",
    ),
    (
        "dict([1])",
        "TypeError: cannot convert dictionary update sequence element #0 to a sequence",
    ),
    ("tuple(5)", "TypeError: 'int' object is not iterable"),
    ("list(5)", "TypeError: 'int' object is not iterable"),
    (
        "\"abc\".startswith(5)",
        "TypeError: startswith first arg must be str or a tuple of str, not int",
    ),
    (
        "\"x\".replace(1, \"y\")",
        "TypeError: replace() argument 1 must be str, not int",
    ),
    (
        "getattr(1, \"nope\")",
        "AttributeError: 'int' object has no attribute 'nope'",
    ),
    (
        "(1).nope()",
        "AttributeError: 'int' object has no attribute 'nope'",
    ),
    ("[1, 2, 3].index(1, 1)", "ValueError: 1 is not in list"),
];
