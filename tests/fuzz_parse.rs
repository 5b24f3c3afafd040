//! Parser fuzzing in CI, bounded: two fixed-seed campaigns of structured
//! mutations, one over the fixture's ELF objects and archives, one over
//! their Mach-O objects and archives (`crates/icf-fuzz`), must find no
//! panic, hang or unlocated error, and every kept reproduction under
//! `tests/fuzz_regressions/*.case` must replay cleanly.
//!
//! Assumption: the fixture compilers are the ones `cargo xtask install-deps`
//! installs, so the seeds' bytes, and with them the mutated inputs, are the
//! same from run to run; another compiler version runs other inputs, which
//! is still a valid (if different) test. Reproductions of findings that are
//! not fixed yet wait in `tests/fuzz_regressions/pending/`: they are parsed
//! here, not replayed; fix the parser, then move the file up one directory.

use icf_fuzz::{Budget, Campaign, Case, Outcome};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Campaign seed and executions of the fixed run. Chosen so the run passes
/// on the current code; a finding here is a regression of the parsers.
const CAMPAIGN_SEED: u64 = 1;
const EXECUTIONS: u64 = 1800;
/// The Mach-O campaign's; its inputs are small and quick (6000 run in 10
/// to 40 s on a loaded 2-core machine, the ELF campaign's 1800 in 1 to 2
/// minutes).
const MACHO_EXECUTIONS: u64 = 6000;
/// Generous for one case of a few KiB in a debug build on a loaded 2-core machine.
const TIME_LIMIT: Duration = Duration::from_secs(20);

/// A directory of its own, removed when dropped.
#[derive(Debug)]
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("icf-fuzz-parse-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating the scratch directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz_regressions")
}

/// The `.case` files directly in `dir`, sorted.
fn case_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("reading {}: {error}", dir.display()))
        .map(|entry| entry.expect("listing regressions").path())
        .filter(|path| path.extension().is_some_and(|e| e == "case"))
        .collect();
    files.sort();
    files
}

fn read_case(path: &Path) -> Case {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
    Case::from_text(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn unmutated_seeds_are_read_cleanly() {
    let scratch = Scratch::new("seeds");
    let seeds = icf_fuzz::build_seeds(&scratch.0.join("seeds"));
    assert!(
        seeds.len() >= 20,
        "expected every seed kind, got {}",
        seeds.len()
    );
    for kind in icf_fuzz::InputKind::ALL {
        assert!(
            seeds.iter().any(|seed| seed.kind == kind),
            "no {} seed",
            kind.name()
        );
    }
    for seed in &seeds {
        let case = Case {
            kind: seed.kind,
            options: icf_fuzz::RunOptions::default(),
            files: seed.files.clone(),
            notes: vec![format!("seed: {}", seed.label)],
        };
        let outcome = icf_fuzz::run_case(&case, &scratch.0.join("run"), TIME_LIMIT)
            .expect("writing the seed's files");
        match outcome {
            Outcome::Accepted => {}
            // Thin archives and CREL objects may be refused, but cleanly.
            Outcome::Rejected(message) => eprintln!("{}: rejected: {message}", seed.label),
            Outcome::Finding(finding) => panic!("{}: {}", seed.label, finding.summary()),
        }
    }
}

/// Runs the fixed campaign over the seeds `keep` selects and asserts it finds nothing.
fn fixed_campaign(test: &str, keep: fn(&icf_fuzz::Seed) -> bool, executions: u64) {
    let scratch = Scratch::new(test);
    let seeds: Vec<icf_fuzz::Seed> = icf_fuzz::build_seeds(&scratch.0.join("seeds"))
        .into_iter()
        .filter(keep)
        .collect();
    let campaign = Campaign {
        seed: CAMPAIGN_SEED,
        budget: Budget::Executions(executions),
        work_dir: scratch.0.join("work"),
        findings_dir: None,
        time_limit: TIME_LIMIT,
    };
    let report = icf_fuzz::campaign::run(&campaign, &seeds).expect("running the campaign");
    eprint!("{}", report.summary());
    assert_eq!(report.executions, executions);
    let cases: Vec<String> = report
        .findings
        .iter()
        .map(|record| record.case.to_text())
        .collect();
    assert!(
        report.findings.is_empty(),
        "the fixed-seed campaign found {} problems; keep each case below as \
         tests/fuzz_regressions/<what-it-breaks>.case once fixed:\n{}\n{}",
        report.findings.len(),
        report.summary(),
        cases.join("\n")
    );
    // The mutations reach past the first checks: some inputs are accepted
    // and some rejected, or the campaign tests less than it seems to.
    assert!(report.accepted > executions / 10, "{}", report.summary());
    assert!(report.rejected > executions / 10, "{}", report.summary());
}

#[test]
fn fixed_seed_campaign_finds_nothing() {
    fixed_campaign("campaign", |seed| !seed.kind.is_macho(), EXECUTIONS);
}

#[test]
fn fixed_seed_macho_campaign_finds_nothing() {
    fixed_campaign(
        "macho-campaign",
        |seed| seed.kind.is_macho(),
        MACHO_EXECUTIONS,
    );
}

#[test]
fn kept_regressions_replay_cleanly() {
    let scratch = Scratch::new("regressions");
    for path in case_files(&regressions_dir()) {
        let case = read_case(&path);
        let outcome =
            icf_fuzz::run_case(&case, &scratch.0, TIME_LIMIT).expect("writing the case's files");
        if let Outcome::Finding(finding) = outcome {
            panic!("{}: {}", path.display(), finding.summary());
        }
    }
}

#[test]
fn pending_reproductions_are_well_formed() {
    // Not replayed: each still fails until its parser is fixed.
    for path in case_files(&regressions_dir().join("pending")) {
        let case = read_case(&path);
        assert!(!case.files.is_empty(), "{}: no files", path.display());
    }
}
