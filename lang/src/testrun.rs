//! `test "name" { }` blocks: `svc test FILE` loads the module once (its `with entry`
//! blocks run, `with entry:__main__` does not, as when imported), then runs each test
//! block in file order on a fresh interpreter run (its own empty graph, its own
//! operation and time budget). Module globals are shared, as in Jac. `svc run` never
//! runs test blocks.

use crate::ast::{Item, Module};
use crate::driver::RunOptions;
use crate::host::Host;
use crate::interp::{Ctx, Interp};
use std::path::Path;

/// The result of one test block.
#[derive(Clone, Debug)]
pub struct TestResult {
    pub name: String,
    /// `None` when it passed; else the rendered error (message, excerpt, frames).
    pub failure: Option<String>,
}

/// The result of `test_file`.
#[derive(Clone, Debug, Default)]
pub struct TestOutcome {
    /// Set when the module could not be loaded (parse/check errors, an error while
    /// loading): no test ran.
    pub error: Option<String>,
    pub results: Vec<TestResult>,
}

impl TestOutcome {
    pub fn failed(&self) -> usize {
        self.results.iter().filter(|r| r.failure.is_some()).count()
    }
}

/// The test blocks of a module, with the names shown for them (an unnamed test is
/// `test_N`, N counting from 1 in file order).
fn test_blocks(module: &Module) -> Vec<(String, &crate::ast::TestBlock)> {
    let mut out = Vec::new();
    for item in &module.items {
        if let Item::Test(t) = item {
            let name = t
                .name
                .clone()
                .unwrap_or_else(|| format!("test_{}", out.len() + 1));
            out.push((name, t));
        }
    }
    out
}

/// Parse, check and load `path`, then run its test blocks; `on_result` sees each
/// result as it is known (so a runner can print progress while tests still run).
pub fn test_file(
    path: &Path,
    host: &mut dyn Host,
    options: &RunOptions,
    on_result: &mut dyn FnMut(&TestResult),
) -> TestOutcome {
    let checked = match crate::load::read(path, host)
        .and_then(|file| crate::load::for_run(path, file, host))
    {
        Ok(c) => c,
        Err(rendered) => {
            return TestOutcome {
                error: Some(rendered),
                results: Vec::new(),
            };
        }
    };
    let crate::load::Checked { file, module } = checked;
    let (program, fid, annexes) = {
        let mut it = Interp::new(host, options.limits.clone());
        let fid = it.add_file(file);
        let loaded = it
            .run_entry_module(path, &module, fid, false)
            .and_then(|()| it.parse_annexes(path, crate::interp::annex::TEST_SUFFIX));
        match loaded {
            Ok(annexes) => (it.program(), fid, annexes),
            Err(e) => {
                return TestOutcome {
                    error: Some(it.render_error(e)),
                    results: Vec::new(),
                };
            }
        }
    };
    // The module's own tests, then those of its tests annexes (`mod.test.svc`, ...).
    let mut blocks: Vec<(String, &crate::ast::TestBlock, u32)> = test_blocks(&module)
        .into_iter()
        .map(|(n, b)| (n, b, fid))
        .collect();
    for annex in &annexes {
        for (n, b) in test_blocks(&annex.module) {
            blocks.push((n, b, annex.file));
        }
    }
    let mut results = Vec::new();
    for (name, block, fid) in blocks {
        let mut it = Interp::with_program(host, options.limits.clone(), &program);
        let Some(module) = it.main_module.clone() else {
            break;
        };
        let ctx = Ctx {
            scope: crate::interp::value::Scope::new_ref(Some(module.scope.clone())),
            this: None,
            here: None,
            visitor: None,
            class: None,
            file: fid,
        };
        let failure = match it.exec_block(&block.body, &ctx) {
            Ok(_) => None,
            Err(e) => {
                // Name the exception type (`AssertionError: ...`), as a test runner does.
                let kind = match &e {
                    crate::interp::Interrupt::Exc(x) => Some(it.class_of(&x.value).name.clone()),
                    _ => None,
                };
                let rendered = it.render_error_from(e, &format!("test {name:?}"));
                Some(match kind {
                    Some(k) => {
                        let body = rendered.trim_start_matches("✖ ");
                        format!("{k}: {}", body.strip_prefix("Error: ").unwrap_or(body))
                    }
                    None => rendered,
                })
            }
        };
        let result = TestResult { name, failure };
        on_result(&result);
        results.push(result);
    }
    TestOutcome {
        error: None,
        results,
    }
}
