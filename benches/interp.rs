//! Interpreter benches: each program in `benches/programs/` and `benches/compute/` runs
//! through `lang::run_file` on an in-memory host (no store, no echo). Run with
//! `cargo bench --bench interp`; `benches/jac_ratio.sh` compares `programs/` against the
//! real `jac`, `benches/vs_python.sh` compares `compute/` against plain CPython 3.12.

use criterion::{Criterion, criterion_group, criterion_main};
use lang::host::MemoryHost;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// (bench name, program file under `benches/`): (a) graph build + walk, (b) calls,
/// (c) strings, (d) lists; then the compute programs `benches/vs_python.sh` runs beside
/// their CPython twins.
const PROGRAMS: [(&str, &str); 10] = [
    ("graph_walk_100k", "programs/graph_walk.svc"),
    ("fib_25", "programs/fib.svc"),
    ("strings", "programs/strings.svc"),
    ("lists", "programs/lists.svc"),
    ("compute_fib_27", "compute/fib.svc"),
    ("compute_loop", "compute/loop.svc"),
    ("compute_strings", "compute/strings.svc"),
    ("compute_comprehension", "compute/comprehension.svc"),
    ("compute_methods", "compute/methods.svc"),
    ("compute_walker_100k", "compute/walker.svc"),
];

fn program(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches")
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
