//! `cargo xtask fuzz-parse`: structured mutation of real objects and
//! archives through icf's whole pipeline for a time budget, on stable Rust.
//!
//! Seeds are built from the fixture sources (gcc and clang-19, x86-64 and
//! AArch64, C and C++, CREL, archives; Mach-O objects and archives for
//! x86_64 and arm64 macOS, `--formats macho` for those alone); see
//! `crates/icf-fuzz`. Each distinct
//! finding (panic, hang, error that names no input, unreadable output) is
//! saved as `crash-<hash>.bin` with a replayable `crash-<hash>.case` in the
//! output directory, and the command fails when there is any. Assumption:
//! it runs inside the workspace with the test toolchain installed
//! (`cargo xtask install-deps`).

use crate::corpus;
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `cargo xtask fuzz-parse`.
#[derive(Debug, clap::Args)]
pub struct FuzzParseArgs {
    /// How long to mutate and run inputs (after the seeds are built).
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Run exactly this many inputs instead of a time budget (replays a campaign).
    #[arg(long)]
    executions: Option<u64>,
    /// Campaign seed: the same seed runs the same inputs in the same order.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where findings are saved (default: target/fuzz-parse/findings).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A case running longer than this many seconds is a hang.
    #[arg(long, default_value_t = 5)]
    time_limit: u64,
    /// Which seeds: `all`, `elf` or `macho`.
    #[arg(long, default_value = "all", value_parser = ["all", "elf", "macho"])]
    formats: String,
    /// Run these `.case` files (from findings or tests/fuzz_regressions) instead of a campaign.
    #[arg(long, num_args = 1..)]
    replay: Vec<PathBuf>,
}

pub fn run(args: &FuzzParseArgs) -> Result<()> {
    let root = corpus::workspace_root()?.join("target/fuzz-parse");
    if !args.replay.is_empty() {
        return replay(&args.replay, &root, Duration::from_secs(args.time_limit));
    }
    let findings_dir = args.out.clone().unwrap_or_else(|| root.join("findings"));
    let work_dir = root.join(format!("work-{}", std::process::id()));
    eprintln!("fuzz-parse: building seeds (cached under target/fixtures)");
    let seeds: Vec<icf_fuzz::Seed> = icf_fuzz::build_seeds(&root.join("seeds"))
        .into_iter()
        .filter(|seed| match args.formats.as_str() {
            "elf" => !seed.kind.is_macho(),
            "macho" => seed.kind.is_macho(),
            _ => true,
        })
        .collect();
    eprintln!(
        "fuzz-parse: {} seeds; running {} with campaign seed {}",
        seeds.len(),
        match args.executions {
            Some(count) => format!("{count} inputs"),
            None => format!("for {} s", args.seconds),
        },
        args.seed
    );
    let campaign = icf_fuzz::Campaign {
        seed: args.seed,
        budget: match args.executions {
            Some(count) => icf_fuzz::Budget::Executions(count),
            None => icf_fuzz::Budget::Time(Duration::from_secs(args.seconds)),
        },
        work_dir: work_dir.clone(),
        findings_dir: Some(findings_dir.clone()),
        time_limit: Duration::from_secs(args.time_limit),
    };
    let report = icf_fuzz::campaign::run(&campaign, &seeds)
        .with_context(|| format!("running the campaign in {}", work_dir.display()))?;
    print!("{}", report.summary());
    if !report.stopped_by_hang {
        // A hung case's thread may still write there; leave it then.
        let _ = std::fs::remove_dir_all(&work_dir);
    }
    if !report.findings.is_empty() {
        bail!(
            "{} distinct findings, saved in {}; keep each as a regression under tests/fuzz_regressions/",
            report.findings.len(),
            findings_dir.display()
        );
    }
    Ok(())
}

/// Runs each case once and prints its outcome; fails if any is a finding.
fn replay(cases: &[PathBuf], root: &std::path::Path, time_limit: Duration) -> Result<()> {
    let work_dir = root.join(format!("replay-{}", std::process::id()));
    let mut findings = 0;
    for path in cases {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let case = icf_fuzz::Case::from_text(&text)
            .map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
        let outcome = icf_fuzz::run_case(&case, &work_dir, time_limit).with_context(|| {
            format!(
                "writing {}'s files under {}",
                path.display(),
                work_dir.display()
            )
        })?;
        match outcome {
            icf_fuzz::Outcome::Accepted => println!("{}: accepted", path.display()),
            icf_fuzz::Outcome::Rejected(message) => {
                println!("{}: rejected: {message}", path.display())
            }
            icf_fuzz::Outcome::Finding(finding) => {
                findings += 1;
                println!(
                    "{}: {}\n{}",
                    path.display(),
                    finding.summary(),
                    finding.stack
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work_dir);
    if findings > 0 {
        bail!("{findings} of {} cases are findings", cases.len());
    }
    Ok(())
}
