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
    if args.serves() {
        give_every_thread_an_interpreter_stack();
    }
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

/// `svc start` lets its HTTP threads host quick runs themselves (`actors::runtime`,
/// `inline.rs`), so those threads need an interpreter's stack too. actix makes them with
/// the process's default thread stack size, which only the `RUST_MIN_STACK` variable
/// sets, and only when present at start (the environment cannot be changed safely once
/// running). So when it is absent, the process executes itself again with it set, once,
/// keeping its pid, arguments and the rest of its environment. Stacks are reserved, not
/// touched: resident memory grows only by what a thread uses. Anything that goes wrong
/// here leaves the process as it is: the HTTP threads then find their stack too small
/// and send every call to the run pool.
fn give_every_thread_an_interpreter_stack() {
    use std::os::unix::process::CommandExt as _;
    if std::env::var_os("RUST_MIN_STACK").is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
    let error = std::process::Command::new(&exe)
        .arg0(arg0)
        .args(args)
        .env(
            "RUST_MIN_STACK",
            lang::driver::INTERPRETER_STACK_BYTES.to_string(),
        )
        .exec();
    // Only reached when the exec failed.
    eprintln!(
        "warning: svc start could not raise the thread stack size ({error}); every call runs on the run pool"
    );
}
