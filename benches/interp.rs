//! Interpreter benches: each program in `benches/programs/` runs through `lang::run_file`
//! on an in-memory host (no store, no echo). Run with `cargo bench --bench interp`;
//! `benches/jac_ratio.sh` compares the same programs against the real `jac`.

use criterion::{Criterion, criterion_group, criterion_main};
use lang::host::MemoryHost;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// (bench name, program file): (a) graph build + walk, (b) calls, (c) strings, (d) lists.
const PROGRAMS: [(&str, &str); 4] = [
    ("graph_walk_100k", "graph_walk.svc"),
    ("fib_25", "fib.svc"),
    ("strings", "strings.svc"),
    ("lists", "lists.svc"),
];

fn program(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/programs")
        .join(file)
}

/// Run one program on a fresh in-memory graph; returns the size of its output.
fn run(path: &Path) -> usize {
    let mut host = MemoryHost::new();
    let outcome = lang::run_file(path, &mut host, &lang::RunOptions::default());
    if let Some(error) = outcome.error {
        panic!("{} failed:\n{error}", path.display());
    }
    host.stdout.len()
}

fn interp(c: &mut Criterion) {
    let mut group = c.benchmark_group("interp");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    for (name, file) in PROGRAMS {
        let path = program(file);
        // Fail before timing anything if the program does not run at all.
        run(&path);
        group.bench_function(name, |b| b.iter(|| black_box(run(black_box(&path)))));
    }
    group.finish();
}

criterion_group!(benches, interp);
criterion_main!(benches);
