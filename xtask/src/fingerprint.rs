//! `cargo xtask fingerprint`: what icf writes, reduced to hashes, so a
//! change that must not change any output (a restructuring, a cache, a
//! faster path) can prove it did not.
//!
//! For every case and both modes it runs `icf fold --out-dir DIR --report
//! FILE` and records an FNV-1a hash of each rewritten file and of the JSON
//! report without its timings. The cases are the real corpora (ripgrep and
//! opt_lite for x86-64 and AArch64: every object and archive of the
//! recorded link, LLVM's included, in its order; built on first use as for
//! `cargo xtask bench`) and every fixture
//! object and archive the tests have built under `target/fixtures/`, each
//! on its own. `--save FILE` writes the fingerprints; `--check FILE`
//! compares with saved ones and fails on any difference, naming the case,
//! mode and file.
//!
//! The fingerprinted runs never use icf's cache (`ICF_CACHE=0`).
//! `--cache-check` runs each case twice more with a cache that starts
//! empty for the whole check (so the first run of a case mostly writes
//! entries and the second reads them; later cases may read entries of
//! objects an earlier case shared) and fails unless every output of both
//! equals the uncached run's: the cache must never change what icf writes.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::bench;
use crate::corpus;
use crate::peer;
use crate::process::{capture, fnv1a};

#[derive(Debug, clap::Args)]
pub struct FingerprintArgs {
    /// Write the fingerprints to this file.
    #[arg(long)]
    save: Option<PathBuf>,
    /// Compare with fingerprints saved earlier; fail on any difference.
    #[arg(long)]
    check: Option<PathBuf>,
    /// Leave out the real corpora (only the fixtures: seconds, not minutes).
    #[arg(long)]
    fixtures_only: bool,
    /// Also fold every case with icf's cache, cold then warm, and fail
    /// unless both give the uncached outputs.
    #[arg(long)]
    cache_check: bool,
    /// The icf binary to run (default: `cargo build --release -p icf-cli`).
    #[arg(long)]
    icf: Option<PathBuf>,
}

/// case -> mode -> file name -> hash (`report.json` for the report).
type Fingerprints = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

const MODES: [&str; 2] = ["safe", "all"];

pub fn run(args: &FingerprintArgs) -> Result<()> {
    ensure!(
        args.save.is_some() || args.check.is_some() || args.cache_check,
        "say where the fingerprints go (--save FILE), what to compare with (--check FILE), \
         or ask for --cache-check"
    );
    let icf = match &args.icf {
        Some(path) => path.clone(),
        None => peer::build_icf()?,
    };
    let root = corpus::workspace_root()?;
    let scratch = root.join("target/fingerprint");
    let mut cases: Vec<(String, Vec<PathBuf>)> = fixture_cases(&root.join("target/fixtures"))?;
    ensure!(
        !cases.is_empty(),
        "no fixtures under target/fixtures: run `cargo test --workspace` once to build them"
    );
    if !args.fixtures_only {
        for (name, corpus) in bench::real_corpora()? {
            // Every object and archive of the link, its own and the
            // system's (opt_lite's LLVM archives), in command-line order.
            let inputs = corpus
                .args
                .iter()
                .map(PathBuf::from)
                .filter(|arg| is_fold_input(arg) && arg.is_file())
                .collect();
            cases.push((name, inputs));
        }
    }
    let mut fingerprints = Fingerprints::new();
    let cache = scratch.join("cache");
    let _ = fs::remove_dir_all(&cache);
    let mut cache_differences = Vec::new();
    for (name, inputs) in &cases {
        for mode in MODES {
            let files = fold_case(&icf, &scratch, inputs, mode, None)?;
            eprintln!("{name} {mode}: {} outputs", files.len());
            if args.cache_check {
                for run in ["cold", "warm"] {
                    let cached = fold_case(&icf, &scratch, inputs, mode, Some(&cache))?;
                    if cached != files {
                        cache_differences.push(format!(
                            "{name} {mode}: the {run} cache changed the outputs: {:?}",
                            compare(&single(name, mode, &files), &single(name, mode, &cached))
                        ));
                    }
                }
            }
            fingerprints
                .entry(name.clone())
                .or_default()
                .insert(mode.into(), files);
        }
    }
    if args.cache_check {
        if !cache_differences.is_empty() {
            for difference in &cache_differences {
                println!("{difference}");
            }
            bail!(
                "{} case(s) folded differently with the cache",
                cache_differences.len()
            );
        }
        println!(
            "{} cases in both modes: the cold and the warm cache give the uncached outputs",
            cases.len()
        );
    }
    if let Some(path) = &args.save {
        let text = serde_json::to_string_pretty(&fingerprints)?;
        fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        println!(
            "{} cases fingerprinted into {}",
            cases.len(),
            path.display()
        );
    }
    if let Some(path) = &args.check {
        let text =
            fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let saved: Fingerprints =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let differences = compare(&saved, &fingerprints);
        if !differences.is_empty() {
            for difference in &differences {
                println!("{difference}");
            }
            bail!(
                "{} difference(s) from {}",
                differences.len(),
                path.display()
            );
        }
        println!(
            "{} cases in both modes: every output and report is the same as in {}",
            cases.len(),
            path.display()
        );
    }
    Ok(())
}

/// `icf fold` of `inputs` in `mode`: each output's hash (`report.json`
/// for the report), or the error when icf refuses the case. With `cache`,
/// icf keeps its keys there; without, it runs uncached.
fn fold_case(
    icf: &Path,
    scratch: &Path,
    inputs: &[PathBuf],
    mode: &str,
    cache: Option<&Path>,
) -> Result<BTreeMap<String, String>> {
    let out = scratch.join("out");
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let report = scratch.join("report.json");
    let mut fold = Command::new(icf);
    fold.args(["fold", "--mode", mode, "--out-dir"])
        .arg(&out)
        .arg("--report")
        .arg(&report)
        .args(inputs);
    match cache {
        Some(dir) => fold.env("ICF_CACHE_DIR", dir).env_remove("ICF_CACHE"),
        None => fold.env("ICF_CACHE", "0"),
    };
    let output = capture(&mut fold)?;
    let mut files = BTreeMap::new();
    if output.status.success() {
        for entry in fs::read_dir(&out).with_context(|| format!("listing {}", out.display()))? {
            let path = entry?.path();
            let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let file = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.insert(file, format!("{:016x}", fnv1a(&bytes)));
        }
        files.insert("report.json".into(), report_hash(&report)?);
    } else {
        // A case icf refuses is fingerprinted by its error.
        files.insert(
            "error".into(),
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        );
    }
    Ok(files)
}

/// One case's fingerprints in one mode, as [`compare`] takes them.
fn single(name: &str, mode: &str, files: &BTreeMap<String, String>) -> Fingerprints {
    let mut fingerprints = Fingerprints::new();
    fingerprints
        .entry(name.to_string())
        .or_default()
        .insert(mode.to_string(), files.clone());
    fingerprints
}

/// Every fixture object and archive on its own, by file name, sorted.
fn fixture_cases(dir: &Path) -> Result<Vec<(String, Vec<PathBuf>)>> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut cases = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if is_fold_input(&path)
            && let Some(name) = path.file_name()
        {
            cases.push((format!("fixture {}", name.to_string_lossy()), vec![path]));
        }
    }
    cases.sort();
    Ok(cases)
}

/// An object, archive or rlib, by its name.
fn is_fold_input(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "o" || e == "a" || e == "rlib")
}

/// The report's hash without what changes from run to run (timings).
fn report_hash(path: &Path) -> Result<String> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut report: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if let Some(object) = report.as_object_mut() {
        object.remove("timings_ms");
    }
    let canonical = serde_json::to_string(&report)?;
    Ok(format!("{:016x}", fnv1a(canonical.as_bytes())))
}

/// Every case, mode and file whose fingerprint differs or exists on one side only.
fn compare(saved: &Fingerprints, now: &Fingerprints) -> Vec<String> {
    let mut differences = Vec::new();
    let cases: std::collections::BTreeSet<&String> = saved.keys().chain(now.keys()).collect();
    for case in cases {
        let (Some(before), Some(after)) = (saved.get(case), now.get(case)) else {
            differences.push(format!("{case}: only in one of the two runs"));
            continue;
        };
        for mode in MODES {
            let empty = BTreeMap::new();
            let before = before.get(mode).unwrap_or(&empty);
            let after = after.get(mode).unwrap_or(&empty);
            let files: std::collections::BTreeSet<&String> =
                before.keys().chain(after.keys()).collect();
            for file in files {
                if before.get(file) != after.get(file) {
                    differences.push(format!(
                        "{case} ({mode}): {file}: {} before, {} now",
                        before.get(file).map_or("absent", String::as_str),
                        after.get(file).map_or("absent", String::as_str)
                    ));
                }
            }
        }
    }
    differences
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprints(entries: &[(&str, &str, &str, &str)]) -> Fingerprints {
        let mut all = Fingerprints::new();
        for (case, mode, file, hash) in entries {
            all.entry((*case).into())
                .or_default()
                .entry((*mode).into())
                .or_default()
                .insert((*file).into(), (*hash).into());
        }
        all
    }

    #[test]
    fn a_changed_missing_or_new_output_is_a_difference() {
        let before = fingerprints(&[
            ("a.o", "safe", "a.o", "1"),
            ("a.o", "safe", "report.json", "2"),
            ("a.o", "all", "a.o", "3"),
        ]);
        assert!(compare(&before, &before).is_empty());
        let after = fingerprints(&[
            ("a.o", "safe", "a.o", "1"),
            ("a.o", "safe", "report.json", "9"),
            ("a.o", "all", "b.o", "3"),
            ("b.o", "safe", "b.o", "4"),
        ]);
        let differences = compare(&before, &after);
        assert_eq!(differences.len(), 4, "{differences:#?}");
        assert!(differences[0].contains("a.o (safe): report.json: 2 before, 9 now"));
        assert!(
            differences
                .iter()
                .any(|d| d.contains("a.o (all): a.o: 3 before, absent now"))
        );
        assert!(
            differences
                .iter()
                .any(|d| d.contains("a.o (all): b.o: absent before, 3 now"))
        );
        assert!(
            differences
                .iter()
                .any(|d| d.starts_with("b.o: only in one"))
        );
    }
}
