//! The built-in standard-library modules through `svc run`: `time.sleep` counts against
//! the run's time limit, a `.svc` module beside the importer wins over a built-in one,
//! and `datetime`/`UUID` values in node fields survive the store.

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

const EVENTS: &str = r#"import from datetime { datetime, timedelta, date, timezone }
import uuid;
node Event {
    has when: datetime | None = None;
    has aware: datetime | None = None;
    has named: datetime | None = None;
    has day: date | None = None;
    has span: timedelta | None = None;
    has zone: timezone | None = None;
    has uid: any = None;
    has nested: list = [];
}
with entry {
    found = [root-->[?:Event]];
    if found {
        e = found[0];
        print(repr(e.when), repr(e.aware));
        print(repr(e.named));
        print(repr(e.day), repr(e.span), repr(e.zone), repr(e.uid));
        print(e.nested, e.when + e.span, e.named.tzname());
    } else {
        root ++> Event(
            when=datetime(2024, 5, 6, 7, 8, 9, 10),
            aware=datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc, fold=1),
            named=datetime(2024, 1, 2, 3, 4, 5, 0, timezone(timedelta(hours=-5, minutes=-30), "XST")),
            day=date(2020, 1, 2),
            span=timedelta(days=-1, seconds=5, microseconds=7),
            zone=timezone(timedelta(hours=2)),
            uid=uuid.UUID("12345678-1234-5678-1234-567812345678"),
            nested=[date(2021, 3, 4), {"k": timedelta(0)}]
        );
        print("stored");
    }
}
"#;

#[test]
fn datetime_values_in_node_fields_survive_the_store() {
    let dir = TempDir::new("stdlib-stored");
    dir.write("main.svc", EVENTS);
    let first = svc_in(dir.path(), &["run", "main.svc"]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(stdout(&first), "stored\n");
    let second = svc_in(dir.path(), &["run", "main.svc"]);
    assert!(second.status.success(), "{}", stderr(&second));
    // CPython's repr of each value as it was stored (they came back as None before).
    assert_eq!(
        stdout(&second),
        "datetime.datetime(2024, 5, 6, 7, 8, 9, 10) \
         datetime.datetime(2024, 1, 2, 3, 4, 5, fold=1, tzinfo=datetime.timezone.utc)\n\
         datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone(\
         datetime.timedelta(days=-1, seconds=66600), 'XST'))\n\
         datetime.date(2020, 1, 2) datetime.timedelta(days=-1, seconds=5, microseconds=7) \
         datetime.timezone(datetime.timedelta(seconds=7200)) \
         UUID('12345678-1234-5678-1234-567812345678')\n\
         [datetime.date(2021, 3, 4), {'k': datetime.timedelta(0)}] 2024-05-05 07:08:14.000017 XST\n"
    );
}

/// Run `program` twice in one fresh directory (the store kept between the runs): the
/// first run must print `stored`; the second run's output is returned.
fn second_run_after_storing(tag: &str, program: &str) -> String {
    let dir = TempDir::new(tag);
    dir.write("main.svc", program);
    let first = svc_in(dir.path(), &["run", "main.svc"]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(stdout(&first), "stored\n");
    let second = svc_in(dir.path(), &["run", "main.svc"]);
    assert!(second.status.success(), "{}", stderr(&second));
    stdout(&second)
}

#[test]
fn datetime_time_values_in_node_fields_survive_the_store() {
    let out = second_run_after_storing(
        "stdlib-stored-time",
        "import from datetime { time, timezone, timedelta }\n\
         node N { has t: any = None, u: any = None; }\n\
         with entry {\n\
             ns = [root -->];\n\
             if ns { print(repr(ns[0].t), repr(ns[0].u)); }\n\
             else { root ++> N(t=time(1, 2, 3, 4, fold=1), \
         u=time(5, tzinfo=timezone(timedelta(hours=-3), \"X\"))); print(\"stored\"); }\n\
         }\n",
    );
    assert_eq!(
        out,
        "datetime.time(1, 2, 3, 4, fold=1) datetime.time(5, 0, tzinfo=datetime.timezone(\
         datetime.timedelta(days=-1, seconds=75600), 'X'))\n"
    );
}

/// `date.isocalendar()` kept in a node field comes back as the same named tuple (it was
/// stored as an archetype object no class reads back, so it came back `None`).
#[test]
fn isocalendar_values_in_node_fields_survive_the_store() {
    let out = second_run_after_storing(
        "stdlib-stored-isocalendar",
        "import from datetime { date }\n\
         node N { has c: any = None; }\n\
         with entry {\n\
             ns = [root -->];\n\
             if ns { c = ns[0].c; print(repr(c), c.week, c == (2024, 27, 4)); }\n\
             else { root ++> N(c=date(2024, 7, 4).isocalendar()); print(\"stored\"); }\n\
         }\n",
    );
    assert_eq!(
        out,
        "datetime.IsoCalendarDate(year=2024, week=27, weekday=4) 27 True\n"
    );
}
