//! `cargo xtask mutants`: each fold rule switched off, one at a time, must
//! be caught by CI. A mutant is a patch in `fixtures/mutants/` that breaks
//! one rule ARCHITECTURE.md lists (see `docs/mutants.md`, which records
//! what caught each). For every mutant the runner applies the patch to a
//! scratch worktree of HEAD (`target/mutants/tree`), builds icf, and runs
//! CI's catchers from the cheapest on, stopping at the first that fails:
//! the planner's and analysis' unit tests, the soundness tests, the
//! `icf link` tests, the fold and lld-derived tests, the end-to-end
//! tests, then the fuzz campaign's CI seeds (generated programs, planted
//! folds, a 60 s limit on every icf command). A mutant no catcher sees is
//! reported, and the run fails: the rule needs the program that breaks
//! without it, or is harmless and should go.
//!
//! A patch that no longer applies fails the run too: the rule moved, and
//! the mutant must follow it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::corpus::workspace_root;
use crate::process::{cargo, display};

#[derive(Debug, Args)]
pub struct MutantsArgs {
    /// Run only the mutants whose file name contains this text.
    #[arg(long)]
    only: Option<String>,
    /// Run every catcher instead of stopping at the first that fails.
    #[arg(long)]
    all_catchers: bool,
}

/// One catcher: a name for the table and the command, run in the tree.
struct Catcher {
    name: &'static str,
    command: fn(&Path, &Path) -> Command,
}

/// `tree`: the mutated worktree; `icf`: the mutant's built icf.
const CATCHERS: [Catcher; 6] = [
    Catcher {
        name: "unit tests",
        command: |_, _| test_command(&["-p", "icf-fold", "-p", "icf", "--lib"]),
    },
    Catcher {
        name: "soundness tests",
        command: |_, _| test_command(&["-p", "icf-cli", "--test", "soundness"]),
    },
    Catcher {
        name: "link tests",
        command: |_, _| test_command(&["-p", "icf-cli", "--test", "link"]),
    },
    Catcher {
        name: "fold and lld tests",
        command: |_, _| test_command(&["-p", "icf-tests", "--test", "fold", "--test", "lld_cases"]),
    },
    Catcher {
        name: "e2e tests",
        command: |_, _| test_command(&["-p", "icf-tests", "--test", "e2e"]),
    },
    Catcher {
        name: "fuzz --ci",
        command: |tree, icf| {
            let mut command = cargo();
            command
                .args([
                    "run",
                    "--release",
                    "-p",
                    "xtask",
                    "--",
                    "fuzz",
                    "--ci",
                    "--icf",
                ])
                .arg(icf)
                .arg("--dir")
                .arg(tree.join("target/mutant-fuzz"));
            command
        },
    },
];

fn test_command(args: &[&str]) -> Command {
    let mut command = cargo();
    command.args(["test", "--release"]).args(args);
    command
}

/// What one mutant's run found.
struct Verdict {
    mutant: String,
    caught_by: Vec<String>,
    seconds: u64,
}

pub fn run(args: &MutantsArgs) -> Result<()> {
    let root = workspace_root()?;
    let mut patches: Vec<PathBuf> = std::fs::read_dir(root.join("fixtures/mutants"))
        .context("reading fixtures/mutants")?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "patch"))
        .filter(|path| {
            args.only.as_deref().is_none_or(|only| {
                path.file_name()
                    .is_some_and(|name| name.to_string_lossy().contains(only))
            })
        })
        .collect();
    patches.sort();
    if patches.is_empty() {
        bail!("no mutant matches");
    }
    let tree = root.join("target/mutants/tree");
    prepare_tree(&root, &tree)?;
    let mut verdicts = Vec::new();
    for patch in &patches {
        let mutant = patch
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        eprintln!("==> mutant {mutant}");
        let started = Instant::now();
        reset_tree(&tree)?;
        let applied = git(&tree).arg("apply").arg(patch).status()?;
        if !applied.success() {
            bail!(
                "{} no longer applies to HEAD: the rule moved; update the mutant",
                patch.display()
            );
        }
        let mut build = cargo();
        build
            .args(["build", "--release", "-p", "icf-cli", "-p", "xtask"])
            .current_dir(&tree)
            .env("CARGO_TARGET_DIR", tree.join("target"));
        if !build.status()?.success() {
            bail!("{mutant} does not build");
        }
        let icf = tree.join("target/release/icf");
        let mut caught_by = Vec::new();
        for catcher in &CATCHERS {
            let mut command = (catcher.command)(&tree, &icf);
            command
                .current_dir(&tree)
                .env("CARGO_TARGET_DIR", tree.join("target"));
            eprintln!("  {}: {}", catcher.name, display(&command));
            let output = command
                .output()
                .with_context(|| format!("running {}", display(&command)))?;
            if !output.status.success() {
                let failed = failed_tests(&output.stdout);
                caught_by.push(if failed.is_empty() {
                    catcher.name.to_string()
                } else {
                    format!("{} ({})", catcher.name, failed.join(", "))
                });
                if !args.all_catchers {
                    break;
                }
            }
        }
        let verdict = Verdict {
            mutant,
            caught_by,
            seconds: started.elapsed().as_secs(),
        };
        eprintln!(
            "  {} in {} s",
            match verdict.caught_by.first() {
                Some(by) => format!("caught by {by}"),
                None => "NOT CAUGHT".to_string(),
            },
            verdict.seconds
        );
        verdicts.push(verdict);
    }
    reset_tree(&tree)?;
    println!("| mutant | caught by | seconds |");
    println!("|---|---|---|");
    for verdict in &verdicts {
        println!(
            "| {} | {} | {} |",
            verdict.mutant,
            if verdict.caught_by.is_empty() {
                "**nothing**".to_string()
            } else {
                verdict.caught_by.join("; ")
            },
            verdict.seconds
        );
    }
    let missed: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.caught_by.is_empty())
        .map(|v| v.mutant.as_str())
        .collect();
    if !missed.is_empty() {
        bail!("no catcher saw {}", missed.join(", "));
    }
    Ok(())
}

/// The names of the tests a `cargo test` run reports as failed.
fn failed_tests(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| {
            line.strip_prefix("test ")
                .and_then(|rest| rest.strip_suffix(" ... FAILED"))
        })
        .map(str::to_string)
        .collect()
}

fn git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command.current_dir(dir);
    command
}

/// A detached worktree of HEAD at `tree` (made once, then moved to HEAD).
fn prepare_tree(root: &Path, tree: &Path) -> Result<()> {
    if !tree.join(".git").exists() {
        std::fs::create_dir_all(tree.parent().context("the tree has a parent")?)?;
        let status = git(root)
            .args(["worktree", "add", "--detach"])
            .arg(tree)
            .arg("HEAD")
            .status()?;
        if !status.success() {
            bail!("git worktree add {} failed", tree.display());
        }
    }
    let head = git(root).args(["rev-parse", "HEAD"]).output()?;
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    reset_tree(tree)?;
    if !git(tree)
        .args(["checkout", "--quiet", "--detach", &head])
        .status()?
        .success()
    {
        bail!("moving {} to HEAD failed", tree.display());
    }
    Ok(())
}

/// Undoes any mutant applied in `tree`.
fn reset_tree(tree: &Path) -> Result<()> {
    if !git(tree)
        .args(["checkout", "--quiet", "--", "."])
        .status()?
        .success()
    {
        bail!("resetting {} failed", tree.display());
    }
    Ok(())
}
