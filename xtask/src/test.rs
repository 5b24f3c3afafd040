//! `cargo xtask test`: everything CI checks, in order, stopping at the first
//! failure: tools, formatting, clippy with warnings denied, the tests (the
//! parser fuzzing's fixed campaign among them), icf folding its own build,
//! the program generator's fixed seeds (every program run plain and folded,
//! every pair through `icf verify`), and the ripgrep peer check.
//!
//! Each step prints a one-line header to stderr so a failing log shows which
//! step broke before the step's own output.

use anyhow::Result;
use clap::Parser;

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
    run_step(&mut test)?;

    self_hosted()?;

    // Generated programs, plain against folded in both modes, each pair
    // proved by icf verify (seeds 0..200, x86-64 and AArch64).
    eprintln!("==> cargo xtask fuzz --ci");
    let icf = crate::peer::build_icf()?;
    crate::fuzz::run_ci(icf)?;

    // ripgrep's real link: folded by icf link in both modes, with lld and
    // GNU ld, every folded rg must search like the plain one, and icf must
    // fold what lld --icf=all folds.
    eprintln!("==> cargo xtask peer-check");
    crate::peer::run(99.0)?;

    // What icf does to its own release binary (markdown into $GITHUB_STEP_SUMMARY when set).
    eprintln!("==> cargo xtask icf target/release/icf");
    let root = crate::corpus::workspace_root()?;
    let args = icf_xtask::IcfArgs::try_parse_from([
        "icf",
        &root.join("target/release/icf").display().to_string(),
    ])?;
    icf_xtask::run_args(&args).map(|_| ())
}

/// icf folding its own build: `icf-cc` links every binary and test of
/// icf-cli (`-C linker=icf-cc`, strict, so a fallback to the plain link
/// fails), and the CLI tests then run against the folded `icf`.
fn self_hosted() -> Result<()> {
    let root = crate::corpus::workspace_root()?;
    let mut build = cargo();
    build.args(["build", "--release", "-p", "icf-cli", "--bin", "icf-cc"]);
    run_step(&mut build)?;
    // rustc runs the linker from the target directory: a copy that the
    // folded build cannot overwrite while it links with it.
    let linker = root.join("target/selfhost-linker/icf-cc");
    std::fs::create_dir_all(root.join("target/selfhost-linker"))?;
    std::fs::copy(root.join("target/release/icf-cc"), &linker)?;
    let mut test = cargo();
    test.args(["test", "--release", "-p", "icf-cli", "--target-dir"])
        .arg(root.join("target/selfhost"))
        .env("RUSTFLAGS", format!("-C linker={}", linker.display()))
        .env("ICF_STRICT", "1");
    run_step(&mut test)
}

fn run_step(command: &mut std::process::Command) -> Result<()> {
    eprintln!("==> {}", display(command));
    run(command)
}
