//! `cargo xtask test`: everything CI checks, in order, stopping at the first
//! failure: tools, formatting, clippy with warnings denied, then the tests.
//!
//! Each step prints a one-line header to stderr so a failing log shows which
//! step broke before the step's own output.

use anyhow::Result;

use crate::deps;
use crate::process::{cargo, display, run};

/// Runs every step; `cargo_test_args` are forwarded to `cargo test --workspace`.
pub fn run_all(cargo_test_args: &[String]) -> Result<()> {
    eprintln!("==> ensuring system tools and rustup components");
    deps::install()?;

    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    run_step(&mut fmt)?;

    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    run_step(&mut clippy)?;

    let mut test = cargo();
    test.args(["test", "--workspace"]).args(cargo_test_args);
    run_step(&mut test)
}

fn run_step(command: &mut std::process::Command) -> Result<()> {
    eprintln!("==> {}", display(command));
    run(command)
}
