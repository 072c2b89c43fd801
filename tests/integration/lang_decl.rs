//! The later declaration rows of the language through the CLI: annex files in every
//! layout (`svc run`), `svc test` (test blocks, the tests annex, summary, exit code),
//! and the module names classes show (`__main__`, a dotted import path).

use crate::{TempDir, stderr, stdout, svc_in};

const SHOP: &str = "obj Cart {\n    has items: list = [];\n    def add(x: str);\n    def total -> int;\n    def describe -> str;\n}\nwalker Checkout {\n    can start with Root entry;\n}\ndef tax(x: int) -> int;\nwith entry {\n    c = Cart();\n    c.add(\"a\");\n    c.add(\"bb\");\n    print(c.total(), c.describe(), tax(10));\n    root spawn Checkout();\n}\n";

/// `shop.svc` with its bodies spread over every annex layout.
fn shop_with_annexes(dir: &TempDir) {
    dir.write("shop.svc", SHOP);
    dir.write(
        "shop.impl.svc",
        "impl Cart.add(x: str) { self.items.append(x); }\n",
    );
    dir.write(
        "shop.extra.impl.svc",
        "impl Cart.total -> int { return sum([len(i) for i in self.items]); }\n",
    );
    std::fs::create_dir_all(dir.path().join("shop.impl")).expect("mkdir");
    dir.write(
        "shop.impl/walkers.impl.svc",
        "impl Checkout.start with Root entry { print(\"checkout at root\"); }\n",
    );
    std::fs::create_dir_all(dir.path().join("impl")).expect("mkdir");
    dir.write(
        "impl/shop.impl.svc",
        "impl Cart.describe -> str { return f\"Cart of {len(self.items)}\"; }\nimpl tax(x: int) -> int { return x // 10; }\n",
    );
}

#[test]
fn annex_files_in_every_layout_give_the_bodies() {
    let dir = TempDir::new("annex");
    shop_with_annexes(&dir);
    let out = svc_in(dir.path(), &["run", "--no-store", "shop.svc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "3 Cart of 2 1\ncheckout at root\n");
}

#[test]
fn an_annex_gives_the_body_of_a_bodiless_archetype() {
    let dir = TempDir::new("annex_arch_body");
    dir.write(
        "veh.svc",
        "obj Vehicle;\nnode Garage;\nwith entry {\n    v = Vehicle();\n    print(v, v.describe());\n    g = Garage(slots=3);\n    print(g, g.free());\n}\n",
    );
    dir.write(
        "veh.impl.svc",
        "impl Vehicle {\n    has name: str = \"Car\", wheels: int = 4;\n    def describe -> str { return f\"{self.name} on {self.wheels} wheels\"; }\n}\nimpl Garage {\n    has slots: int = 1;\n    def free -> int { return self.slots - 1; }\n}\n",
    );
    // jaclang 0.16.7 prints the same.
    let out = svc_in(dir.path(), &["run", "--no-store", "veh.svc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Vehicle(name='Car', wheels=4) Car on 4 wheels\nGarage(slots=3) 2\n"
    );
    // The checker reads the main file only: a bodiless archetype's members are open.
    let checked = svc_in(dir.path(), &["check", "veh.svc"]);
    assert!(checked.status.success(), "{}", stdout(&checked));
}

#[test]
fn an_annex_of_another_module_is_not_loaded() {
    let dir = TempDir::new("annex_other");
    dir.write("shop.svc", SHOP);
    dir.write(
        "shopping.impl.svc",
        "impl Cart.add(x: str) { print(\"wrong\"); }\n",
    );
    let out = svc_in(dir.path(), &["run", "--no-store", "shop.svc"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("'add' has no body"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn svc_test_runs_tests_and_reports_failures() {
    let dir = TempDir::new("svc_test");
    dir.write(
        "calc.svc",
        "def add(a: int, b: int) -> int { return a + b; }\nnode Item {}\ntest \"adds\" { assert add(1, 2) == 3; }\ntest \"fails\" { assert add(1, 2) == 4, \"bad sum\"; }\ntest \"fresh graph\" { root ++> Item(); assert len([root -->]) == 1; }\ntest \"fresh graph again\" { root ++> Item(); assert len([root -->]) == 1; }\nwith entry:__main__ { print(\"main only\"); }\n",
    );
    dir.write(
        "calc.test.svc",
        "test \"from annex\" { assert add(2, 2) == 4; }\n",
    );
    let out = svc_in(dir.path(), &["test", "calc.svc"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("PASS adds\n"), "{text}");
    assert!(text.contains("FAIL fails\n"), "{text}");
    assert!(text.contains("AssertionError: bad sum"), "{text}");
    // The outermost frame of a failure is the test block, not `<module>`.
    assert!(text.contains("at test \"fails\" calc.svc:4\n"), "{text}");
    assert!(!text.contains("<module>"), "{text}");
    assert!(text.contains("PASS fresh graph again\n"), "{text}");
    assert!(text.contains("PASS from annex\n"), "{text}");
    assert!(text.ends_with("4 passed, 1 failed\n"), "{text}");
    assert!(!text.contains("main only"), "{text}");
    // `svc run` never runs test blocks.
    let run = svc_in(dir.path(), &["run", "--no-store", "calc.svc"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(stdout(&run), "main only\n");
}

#[test]
fn svc_test_exits_0_when_all_pass() {
    let dir = TempDir::new("svc_test_ok");
    dir.write("ok.svc", "test \"one\" { assert 1 + 1 == 2; }\n");
    let out = svc_in(dir.path(), &["test", "ok.svc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "PASS one\n1 passed, 0 failed\n");
}

#[test]
fn classes_show_main_and_the_dotted_import_path() {
    let dir = TempDir::new("module-names");
    std::fs::create_dir_all(dir.path().join("pkg")).expect("mkdir");
    dir.write("pkg/inner.svc", "obj Deep {\n    has z: int = 0;\n}\n");
    dir.write(
        "main.svc",
        "import from pkg.inner { Deep }\nobj Mine {}\nwith entry {\n    print(Deep, Mine, Deep.__module__);\n}\n",
    );
    let out = svc_in(dir.path(), &["run", "--no-store", "main.svc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // jaclang 0.16.7 prints the same line.
    assert_eq!(
        stdout(&out),
        "<class 'pkg.inner.Deep'> <class '__main__.Mine'> pkg.inner\n"
    );
}
