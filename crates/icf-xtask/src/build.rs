//! The steps of `cargo xtask icf`: find the package and profile that built
//! the binary, build it again through icf in `target/icf` (this very
//! executable acting as the linker), put the folded binary beside the
//! original, and report the sizes.

use crate::sizes::{SizeReport, measure};
use anyhow::{Context, bail};
use clap::Parser;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set in the environment of the nested build: this executable is the linker.
const LINK_MODE: &str = "ICF_XTASK_LINK";
/// The binary whose link is reported (the others, build scripts, just fold).
const REPORTED_BIN: &str = "ICF_XTASK_BIN";
const REPORT_PATH: &str = "ICF_XTASK_REPORT";
const MODE: &str = "ICF_XTASK_MODE";

/// `cargo xtask icf` options.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "cargo xtask icf",
    about = "Build a binary through icf and report what folding saves"
)]
pub struct IcfArgs {
    /// The binary, as cargo builds it: `target/release/<bin>`, `target/<triple>/<profile>/<bin>`.
    pub binary: PathBuf,
    /// `safe` keeps significant addresses unique; `all` folds everything identical.
    #[arg(long, default_value = "safe", value_parser = ["safe", "all"])]
    pub mode: String,
    /// Replace the binary instead of writing `<bin>.icf` beside it.
    #[arg(long)]
    pub in_place: bool,
    /// An earlier JSON report to compare with.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// How many groups the report lists.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
}

/// `cargo xtask icf ARGS...` (the arguments after `icf`).
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let args =
        IcfArgs::try_parse_from(std::iter::once("icf".to_string()).chain(args.iter().cloned()))?;
    run_args(&args).map(|_| ())
}

/// When cargo runs this executable as the linker of the folded build, fold
/// and link, then exit with the linker's status. Call it first in `main`.
pub fn link_if_invoked_as_linker() {
    if std::env::var_os(LINK_MODE).is_none() {
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let reported = std::env::var(REPORTED_BIN)
        .ok()
        .is_some_and(|bin| links_binary(&args, &bin));
    let mode = match std::env::var(MODE).as_deref() {
        Ok("all") => icf::Mode::All,
        _ => icf::Mode::Safe,
    };
    let options = icf::LinkOptions {
        plan: icf::PlanOptions {
            mode,
            ..icf::PlanOptions::default()
        },
        report: if reported {
            std::env::var_os(REPORT_PATH).map(PathBuf::from)
        } else {
            None
        },
        // The reported binary must fold: an error is better than a silent plain link.
        strict: reported,
        want_report: false,
        verbose: false,
        cache: icf::CacheChoice::Default,
        verify: None,
        // rustc's own LTO (`lto = true`) hands the linker machine code;
        // only `-C linker-plugin-lto` would need the fold after the link.
        after_link: None,
    };
    let mut command = vec![std::env::var("ICF_CC").unwrap_or_else(|_| "cc".to_string())];
    command.extend(args);
    let code = match icf::link(&command, &options) {
        Ok(outcome) => {
            if let Some(reason) = outcome.fallback {
                eprintln!("icf: warning: linking without folding: {reason}");
            }
            outcome.status.code().unwrap_or(1)
        }
        Err(error) => {
            eprintln!("icf: error: {error:#}");
            1
        }
    };
    std::process::exit(code);
}

/// Whether a link command writes cargo's `deps/<bin>-<hash>` for `bin`.
fn links_binary(args: &[String], bin: &str) -> bool {
    let output = args
        .iter()
        .position(|a| a == "-o")
        .and_then(|i| args.get(i + 1));
    output
        .and_then(|o| Path::new(o).file_name())
        .is_some_and(|name| {
            let name = name.to_string_lossy();
            let stem = bin.replace('-', "_");
            name.strip_prefix(&stem)
                .or_else(|| name.strip_prefix(bin))
                .is_some_and(|rest| rest.starts_with('-'))
        })
}

/// Where cargo put a binary: workspace, package, profile, target triple.
#[derive(Debug)]
struct Located {
    target_dir: PathBuf,
    package: String,
    bin: String,
    profile: String,
    profile_dir: String,
    triple: Option<String>,
}

/// Runs the whole command and returns the report it wrote.
pub fn run_args(args: &IcfArgs) -> anyhow::Result<icf::Report> {
    let located = locate(&args.binary)?;
    let progress = Progress::new();
    let original = located.binary_path(&located.target_dir);
    if !original.exists() {
        progress.step(&format!(
            "building {} ({} profile)",
            located.bin, located.profile
        ));
        let mut build = cargo_build(&located);
        run_quietly(&mut build, &progress)?;
    }
    let icf_target = located.target_dir.join("icf");
    std::fs::create_dir_all(&icf_target)?;
    let report_path = icf_target.join(format!("{}.report.json", located.bin));
    let _ = std::fs::remove_file(&report_path);
    progress.step(&format!(
        "building {} through icf in {}",
        located.bin,
        icf_target.display()
    ));
    let linker = std::env::current_exe().context("finding the xtask executable")?;
    let mut rustflags = std::env::var("RUSTFLAGS").unwrap_or_default();
    if !rustflags.is_empty() {
        rustflags.push(' ');
    }
    rustflags.push_str(&format!("-C linker={}", linker.display()));
    let mut build = cargo_build(&located);
    build
        .arg("--target-dir")
        .arg(&icf_target)
        .env("RUSTFLAGS", rustflags)
        .env(LINK_MODE, "1")
        .env(REPORTED_BIN, &located.bin)
        .env(REPORT_PATH, &report_path)
        .env(MODE, &args.mode);
    run_quietly(&mut build, &progress)?;
    // cargo relinks only when something changed; without a fresh report, relink.
    if !report_path.exists() {
        let deps = icf_target.join(located.relative_dir()).join(&located.bin);
        let _ = std::fs::remove_file(&deps);
        let stamp_dir = icf_target.join(located.relative_dir()).join(".fingerprint");
        if let Ok(entries) = std::fs::read_dir(&stamp_dir) {
            for entry in entries.flatten() {
                if entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{}-", located.package))
                {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        run_quietly(&mut build, &progress)?;
    }
    let folded = located.binary_path(&icf_target);
    progress.step("measuring");
    let scratch = icf_target.join("scratch");
    std::fs::create_dir_all(&scratch)?;
    let before = measure(&original, &scratch)?;
    let after = measure(&folded, &scratch)?;
    let destination = if args.in_place {
        original.clone()
    } else {
        original.with_file_name(format!("{}.icf", located.bin))
    };
    let bytes = std::fs::read(&folded).with_context(|| format!("reading {}", folded.display()))?;
    icf::write_atomically(&destination, &bytes)?;
    set_executable(&destination)?;
    progress.finish();

    let text = std::fs::read_to_string(&report_path)
        .with_context(|| format!("reading {} (did the link fold?)", report_path.display()))?;
    let mut report = icf::Report::from_json(&text)?;
    report.binary = Some(icf::BinarySizes {
        path: destination.display().to_string(),
        file_before: before.file,
        file_after: after.file,
        stripped_before: before.stripped,
        stripped_after: after.stripped,
        text_before: before.text,
        text_after: after.text,
    });
    let json_path = destination.with_file_name(format!("{}.icf.json", located.bin));
    icf::write_atomically(&json_path, (report.to_json() + "\n").as_bytes())?;
    let baseline = match &args.baseline {
        Some(path) => Some(icf::Report::from_json(
            &std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?,
        )?),
        None => None,
    };
    println!("{}", size_table(&before, &after, &destination));
    let text = report.to_text(&icf::TextOptions {
        groups_shown: args.top,
        objects: false,
    });
    println!("{text}");
    if let Some(baseline) = &baseline {
        let growth = report.folded_size() as i64 - baseline.folded_size() as i64;
        println!("against the baseline: folded .text {growth:+} bytes");
    }
    println!("report: {}", json_path.display());
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY") {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&summary)?;
        writeln!(file, "{}", report.to_markdown(baseline.as_ref(), args.top))?;
    }
    Ok(report)
}

fn size_table(before: &SizeReport, after: &SizeReport, destination: &Path) -> String {
    let row = |label: &str, b: u64, a: u64| {
        let change = a as i64 - b as i64;
        let percent = if b == 0 {
            0.0
        } else {
            100.0 * change as f64 / b as f64
        };
        format!("{label:<10} {b:>12} {a:>12} {change:>+10} {percent:>+7.2}%\n")
    };
    let mut out = format!(
        "{}\n{:<10} {:>12} {:>12} {:>10} {:>8}\n",
        destination.display(),
        "",
        "before",
        "after",
        "change",
        ""
    );
    out.push_str(&row("file", before.file, after.file));
    out.push_str(&row("stripped", before.stripped, after.stripped));
    out.push_str(&row(".text", before.text, after.text));
    out
}

impl Located {
    /// `<profile_dir>` or `<triple>/<profile_dir>`.
    fn relative_dir(&self) -> PathBuf {
        match &self.triple {
            Some(triple) => Path::new(triple).join(&self.profile_dir),
            None => PathBuf::from(&self.profile_dir),
        }
    }

    fn binary_path(&self, target_dir: &Path) -> PathBuf {
        target_dir.join(self.relative_dir()).join(&self.bin)
    }
}

fn cargo_build(located: &Located) -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.args([
        "build",
        "--profile",
        &located.profile,
        "-p",
        &located.package,
        "--bin",
        &located.bin,
    ]);
    if let Some(triple) = &located.triple {
        command.args(["--target", triple]);
    }
    command
}

/// Finds the package and profile of a binary path with `cargo metadata`.
fn locate(binary: &Path) -> anyhow::Result<Located> {
    let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("running cargo metadata")?;
    anyhow::ensure!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("reading cargo metadata")?;
    let target_dir = PathBuf::from(
        metadata["target_directory"]
            .as_str()
            .context("no target_directory")?,
    );
    let absolute = if binary.is_absolute() {
        binary.to_path_buf()
    } else {
        std::env::current_dir()?.join(binary)
    };
    let relative = absolute.strip_prefix(&target_dir).with_context(|| {
        format!(
            "{} is not inside the target directory {}",
            binary.display(),
            target_dir.display()
        )
    })?;
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let (triple, profile_dir, bin) = match parts.as_slice() {
        [profile, bin] => (None, profile.clone(), bin.clone()),
        [triple, profile, bin] => (Some(triple.clone()), profile.clone(), bin.clone()),
        _ => bail!(
            "{} is not target/<profile>/<bin> or target/<triple>/<profile>/<bin>",
            binary.display()
        ),
    };
    let profile = if profile_dir == "debug" {
        "dev".to_string()
    } else {
        profile_dir.clone()
    };
    let packages = metadata["packages"]
        .as_array()
        .context("no packages in cargo metadata")?;
    let package = packages
        .iter()
        .find(|package| {
            package["targets"].as_array().is_some_and(|targets| {
                targets.iter().any(|t| {
                    t["name"].as_str() == Some(bin.as_str())
                        && t["kind"]
                            .as_array()
                            .is_some_and(|k| k.iter().any(|k| k == "bin"))
                })
            })
        })
        .and_then(|package| package["name"].as_str())
        .with_context(|| format!("no package of this workspace has a binary named {bin}"))?;
    Ok(Located {
        target_dir,
        package: package.to_string(),
        bin,
        profile,
        profile_dir,
        triple,
    })
}

/// Runs a cargo command; its output shows only when it fails (or without a terminal, as it comes).
fn run_quietly(command: &mut Command, progress: &Progress) -> anyhow::Result<()> {
    if progress.bar.is_none() {
        let status = command.status().context("running cargo")?;
        anyhow::ensure!(status.success(), "cargo build failed ({status})");
        return Ok(());
    }
    let output = command.output().context("running cargo")?;
    if !output.status.success() {
        progress.finish();
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        bail!("cargo build failed ({})", output.status);
    }
    Ok(())
}

fn set_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = std::fs::metadata(path)?.permissions();
    permissions.set_mode(permissions.mode() | 0o755);
    std::fs::set_permissions(path, permissions)?;
    Ok(())
}

/// A spinner on stderr when it is a terminal; plain step lines otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new() -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        Progress { bar }
    }

    fn step(&self, message: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(message.to_string()),
            None => eprintln!("icf: {message}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_the_final_link_of_a_binary() {
        let args = |o: &str| vec!["a.o".to_string(), "-o".to_string(), o.to_string()];
        assert!(links_binary(&args("/t/release/deps/icf-0a1b2c"), "icf"));
        assert!(links_binary(
            &args("/t/release/deps/my_tool-0a1b"),
            "my-tool"
        ));
        assert!(!links_binary(
            &args("/t/release/build/icf-0a1b/build_script_build-0a1b"),
            "icf"
        ));
        assert!(!links_binary(&args("/t/release/deps/icf_cc-0a1b"), "icf"));
    }
}
