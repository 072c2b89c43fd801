//! The `svc` command: parses the command line and hands off to `cli`.

mod cli;
mod config;
mod db;
mod deploy;
mod docs;
mod events;
mod format;
mod identity;
mod mcp;
mod metrics;
mod openapi;
mod py2svc;
mod server;
mod storage;
mod sv;
mod webhook;

use clap::Parser as _;

/// mimalloc instead of glibc's malloc: the server allocates on one thread and frees on
/// another all the time (a request body parsed on an HTTP worker and dropped on a run
/// worker, an event published by one thread and delivered on another), which is where
/// glibc's arenas spend their time (`malloc_consolidate`, heap growth page faults).
/// Measured in ARCHITECTURE.md "Allocator".
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Usage errors print clap's message and exit 2; `--help`/`--version` exit 0.
    let args = cli::Cli::parse();
    // The interpreter recurses on the native stack: give it a thread with room for
    // `Limits::max_depth` svc frames, so deep recursion is a clean RecursionError.
    let worker = std::thread::Builder::new()
        .name("svc-main".into())
        .stack_size(lang::driver::INTERPRETER_STACK_BYTES)
        .spawn(move || cli::dispatch(args));
    let outcome = match worker {
        Ok(handle) => handle
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("internal error: the run panicked"))),
        Err(e) => Err(anyhow::anyhow!("cannot start the interpreter thread: {e}")),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(1)
        }
    }
}
