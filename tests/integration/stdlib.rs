//! The built-in standard-library modules through `svc run`: `time.sleep` counts against
//! the run's time limit, and a `.svc` module beside the importer wins over a built-in one.

use crate::{TempDir, stderr, stdout, svc_in};
use std::time::{Duration, Instant};

#[test]
fn sleep_past_the_time_limit_stops_the_run() {
    let dir = TempDir::new("stdlib-sleep");
    dir.write(
        "main.svc",
        "import time;\nwith entry {\n    print(\"before\");\n    time.sleep(3600);\n    print(\"after\");\n}\n",
    );
    let start = Instant::now();
    let out = svc_in(
        dir.path(),
        &["run", "--no-store", "--timeout", "1", "main.svc"],
    );
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), "before\n");
    assert!(
        stderr(&out).contains("time budget exceeded"),
        "{}",
        stderr(&out)
    );
    // The sleep ends at the deadline, not after the hour it asked for.
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn a_local_module_wins_over_a_builtin_one() {
    let dir = TempDir::new("stdlib-local");
    dir.write(
        "json.svc",
        "def dumps(x: any) -> str {\n    return \"local\";\n}\n",
    );
    dir.write(
        "main.svc",
        "import json;\nimport from math { sqrt }\nwith entry {\n    print(json.dumps(1), sqrt(4));\n}\n",
    );
    let out = svc_in(dir.path(), &["run", "--no-store", "main.svc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "local 2.0\n");
}
