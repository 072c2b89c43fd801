//! The svc language: lexer, parser, checker and interpreter.
//!
//! Phases are split as in rhai/ruff: `lexer` → `parser` (never fails: a tree plus
//! diagnostics) → `checker` → `interp`. Nothing here does network I/O; the interpreter
//! reaches storage and output only through [`host::Host`].
//!
//! The interpreter is private: a server or plug-in host uses [`serve`], a command line
//! uses [`driver`] (and [`testrun`], [`tools`]).

pub mod ast;
pub mod checker;
pub mod diag;
pub mod driver;
pub mod embed;
pub mod endpoint;
pub mod host;
pub mod ids;
mod interp;
pub mod lexer;
pub mod limits;
pub mod load;
pub mod names;
pub mod parser;
pub mod pyfmt;
pub mod serve;
pub mod span;
pub mod testrun;
pub mod tools;

#[cfg(test)]
mod module_graph_tests;
pub use driver::{CheckOutcome, Limits, RunOptions, RunOutcome, check_file, run_file};
