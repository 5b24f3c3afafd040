//! Wrong folds made on purpose that an earlier `icf verify` proved
//! (`fixtures/verify_false_passes/`, one directory per case, from the
//! audit of issue 32): every case is built PLAIN and FOLDED, both are run
//! (AArch64 under qemu-aarch64), and FOLDED must behave differently from
//! PLAIN (or the case proves nothing) and be rejected in both modes (or
//! in the one its `mode` names).
//!
//! A case's `case.txt` holds `key = value` lines: `arch` (`x86_64` or
//! `aarch64`), `plain` and `folded` (the compiler command, run in a copy
//! of the case's directory, without `-o`), `verify` (extra options:
//! `--assume-odr`), `mode` (`safe`: the fold is wrong only in safe mode,
//! as merging two functions' observed addresses is, which `--icf=all`
//! allows; verified in that mode only) and `known` (a false pass not
//! fixed yet, and why: the
//! case must still behave differently and still verify, so that the list
//! of open ones stays true). Main assumption: the toolchains of `cargo
//! xtask test` are installed.

use icf_verify::{Mode, VerifyOptions, verify};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/verify_false_passes")
}

/// A fresh copy of `case`'s directory to build in.
fn work_dir(case: &Path) -> PathBuf {
    let name = case.file_name().expect("a case directory");
    // Under cargo's scratch directory for integration tests, by a fixed
    // name: a rerun replaces the last run's files instead of adding more.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("icf-false-passes")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the work directory");
    for entry in std::fs::read_dir(case).expect("reading the case") {
        let path = entry.expect("a directory entry").path();
        std::fs::copy(&path, dir.join(path.file_name().expect("a file name")))
            .expect("copying the case");
    }
    dir
}

fn read_case(case: &Path) -> HashMap<String, String> {
    let text = std::fs::read_to_string(case.join("case.txt")).expect("case.txt");
    text.lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (key, value) = line.split_once('=').expect("key = value");
            (key.trim().to_string(), value.trim().to_string())
        })
        .collect()
}

/// Runs the compiler command `command` in `dir`, writing `output`.
fn build(dir: &Path, command: &str, output: &str) -> PathBuf {
    let mut words = command.split_whitespace();
    let compiler = words.next().expect("a compiler");
    let result = Command::new(compiler)
        .args(words)
        .args(["-o", output])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("running {compiler}: {e}"));
    assert!(
        result.status.success(),
        "{command} in {}:\n{}",
        dir.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    dir.join(output)
}

/// What `binary` prints and its exit status.
fn behaviour(binary: &Path, aarch64: bool) -> (String, Option<i32>) {
    let target = if aarch64 {
        icf_fixtures::Arch::Aarch64
    } else {
        icf_fixtures::Arch::X86_64
    };
    let mut command = icf_fixtures::run_command(target, binary);
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", binary.display()));
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        output.status.code(),
    )
}

#[test]
fn wrong_folds_an_earlier_verify_proved_are_rejected() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("the cases directory")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.join("case.txt").exists())
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no cases in {}", cases_dir().display());
    let mut failures = Vec::new();
    let mut open = Vec::new();
    for case in &cases {
        let name = case
            .file_name()
            .expect("named")
            .to_string_lossy()
            .into_owned();
        let facts = read_case(case);
        let aarch64 = facts.get("arch").map(String::as_str) == Some("aarch64");
        let dir = work_dir(case);
        let plain = build(&dir, &facts["plain"], "plain");
        let folded = build(&dir, &facts["folded"], "folded");
        let (before, after) = (behaviour(&plain, aarch64), behaviour(&folded, aarch64));
        assert_ne!(
            before, after,
            "{name}: FOLDED must behave differently, or the case proves nothing"
        );
        let assume_odr = facts
            .get("verify")
            .is_some_and(|options| options.contains("--assume-odr"));
        let modes: &[Mode] = match facts.get("mode").map(String::as_str) {
            Some("safe") => &[Mode::Safe],
            None => &[Mode::Safe, Mode::All],
            Some(other) => panic!("{name}: unknown mode {other}"),
        };
        let mut verified = Vec::new();
        for &mode in modes {
            let options = VerifyOptions {
                mode,
                assume_odr,
                plain_map: None,
                folded_map: None,
            };
            let outcome = verify(&plain, &folded, &options).expect("both images are valid");
            if outcome.passed() {
                verified.push(format!("{mode:?}: {}", outcome.stats));
            }
        }
        match (facts.get("known"), verified.is_empty()) {
            (None, true) => {}
            (None, false) => failures.push(format!(
                "{name}: the wrong fold verified ({})",
                verified.join("; ")
            )),
            (Some(_), false) => open.push(name),
            (Some(why), true) => failures.push(format!(
                "{name}: rejected now; drop its `known = {why}` line"
            )),
        }
    }
    eprintln!(
        "{} cases, {} known false passes still open: {}",
        cases.len(),
        open.len(),
        open.join(" ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
