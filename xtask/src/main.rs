//! `cargo xtask`: the one entry point for CI and people.
//!
//! This file only parses the command line and dispatches; each task lives in
//! its own module. Tasks shell out to `cargo`, `apt-get` and `rustup` and assume
//! they run from somewhere inside the workspace (cargo's alias guarantees it).

mod bench;
mod corpus;
mod deps;
mod fingerprint;
mod fuzz;
mod fuzz_parse;
mod macho_rust;
mod mutants;
mod peer;
mod process;
mod shrink_check;
mod synthetic;
mod test;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Developer and CI tasks for the icf workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Install missing tools, then run rustfmt, clippy and the tests, stopping at the first failure.
    Test {
        /// Extra arguments forwarded to `cargo test --workspace`.
        #[arg(last = true)]
        cargo_test_args: Vec<String>,
    },
    /// Install the compilers, linkers and emulators that the tests build fixtures with.
    InstallDeps,
    /// Build (once; cached under target/corpus/NAME) a real-world link to replay, and print its directory.
    Corpus {
        /// Which corpus: `ripgrep` (ripgrep 15.2.0 from crates.io).
        name: String,
    },
    /// Build a binary through icf, write `<bin>.icf` beside it and print the size report.
    #[command(disable_help_flag = true)]
    Icf {
        /// `target/<profile>/<bin> [--mode safe|all] [--in-place] [--baseline FILE]`
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Compare what icf folds on the ripgrep corpus with lld's and gold's --icf=all.
    PeerCheck {
        /// Fail unless icf folds at least this percentage of the sections lld's --icf=all removes.
        #[arg(long, default_value_t = 99.0)]
        min_coverage: f64,
    },
    /// Benchmark icf against lld, gold, mold and GNU ld on real and generated code
    /// (results in target/bench/results.{md,json}).
    Bench(bench::BenchArgs),
    /// Mutate real objects and archives and run them through icf for N seconds;
    /// fails on any panic, hang or unlocated error (saved under target/fuzz-parse/findings).
    FuzzParse(fuzz_parse::FuzzParseArgs),
    /// Differential fuzzing: generated C programs linked plain and through icf must behave alike.
    Fuzz(fuzz::FuzzArgs),
    /// Build ripgrep for an Apple target (aarch64-apple-darwin by default) and print the
    /// `__text` sizes of its link by ld64.lld-19: plain, --icf=all, icf safe and all.
    MachoRust(macho_rust::MachoRustArgs),
    /// Hash what `icf fold` writes (outputs and reports, both modes) for the fixtures and the
    /// real corpora, to save, or to check that a change left every output the same.
    Fingerprint(fingerprint::FingerprintArgs),
    /// Switch each fold rule off in turn (patches in fixtures/mutants/) and
    /// require CI's tests or fuzz seeds to catch it; prints the table.
    Mutants(mutants::MutantsArgs),
}

fn main() -> ExitCode {
    // The folded builds of `cargo xtask icf` use this executable as their linker.
    icf_xtask::link_if_invoked_as_linker();
    let cli = Cli::parse();
    let result = match cli.task {
        Task::Test { cargo_test_args } => test::run_all(&cargo_test_args),
        Task::InstallDeps => deps::install(),
        Task::Corpus { name } => corpus::run_task(&name),
        Task::PeerCheck { min_coverage } => peer::run(min_coverage),
        Task::Icf { args } => icf_xtask::run(&args),
        Task::Bench(args) => bench::run(&args),
        Task::Fuzz(args) => fuzz::run(&args),
        Task::FuzzParse(args) => fuzz_parse::run(&args),
        Task::Fingerprint(args) => fingerprint::run(&args),
        Task::MachoRust(args) => macho_rust::run(&args),
        Task::Mutants(args) => mutants::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
