//! `cargo xtask fuzz`: differential testing of icf with generated programs.
//!
//! Each seed gives one random multi-file C program (`icf_fuzz::programs`), built
//! with random compiler flags and linked by a random linker, once plain and
//! once through `icf link --strict` per mode (`icf_fuzz::programs::run`); the folded programs
//! must behave exactly like the plain one. Each program also gets one wrong
//! fold planted on purpose (`icf_fuzz::programs::plant`): `icf verify` must reject it
//! whenever it changes what the program does. Programs run on `--jobs`
//! worker threads; each prints one line, and the end shows a summary per
//! arch and linker and the planted folds per kind. Every icf command has a
//! time limit (`icf_fuzz::programs::run::ICF_TIME_LIMIT`): one that hangs is an `icf-timeout`
//! finding. Any finding makes the command fail, and leaves a reproduction
//! in `target/fuzz/repro-<seed>/`;
//! `--ci` also fails when some kind of planted fold was never planted.
//!
//! Main assumption: a seed fully decides program, flags and linker (the arch
//! too under `--arch both`), so `--seed S --count 1` replays any line. This
//! module holds the options, workers, budget and summary; what happens to
//! one program is `icf-fuzz`'s.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use crate::corpus;
use crate::process::{self, cargo};
use icf_fuzz::programs::plant;
use icf_fuzz::programs::run::{self, FindingKind, Mode, Outcome, Tools};
use icf_fuzz::programs::{Arch, Linker};

/// Seeds `0..CI_SEEDS` are what `--ci` runs (about three minutes on two cores;
/// a program takes about 1.5 s of one core).
const CI_SEEDS: u64 = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ArchChoice {
    #[value(name = "x86_64")]
    X86_64,
    Aarch64,
    Both,
}

/// `cargo xtask fuzz` options.
#[derive(Debug, clap::Args)]
pub struct FuzzArgs {
    /// Stop starting new programs after this many seconds (default 60 unless --count).
    #[arg(long)]
    seconds: Option<u64>,
    /// First seed; the next programs take the following seeds (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Run exactly this many programs (seeds SEED..SEED+COUNT).
    #[arg(long)]
    count: Option<u64>,
    /// Which architecture the programs target.
    #[arg(long, value_enum, default_value_t = ArchChoice::Both)]
    arch: ArchChoice,
    /// Programs built and run at the same time.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Continue after a finding (otherwise no new program starts after the first).
    #[arg(long)]
    keep_going: bool,
    /// The icf binary to test (default: `cargo build --release -p icf-cli`).
    #[arg(long)]
    icf: Option<PathBuf>,
    /// CI: seeds 0..200 over both arches (about three minutes on two cores), keep going.
    #[arg(long)]
    ci: bool,
    /// Keep the work directories of programs without findings (target/fuzz/work/).
    #[arg(long)]
    keep_work: bool,
    /// Where the work directories and reproductions go (default
    /// target/fuzz; another directory lets two campaigns run at once).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Pairs `icf verify` rejects only for merging addresses it counts as
    /// observed, and which behave alike, are listed but do not fail the
    /// run: verify takes an address left in a dead ABI register (an
    /// argument register at a call; `rdx` at a return where no DWARF
    /// prototype says the function returns one register) as observed, and
    /// so may reject a correct fold (none of the 200 CI seeds, which CI
    /// runs without this flag). Every other finding (a program behaving
    /// differently, crashing, icf failing, any other difference verify
    /// reports) still fails it.
    #[arg(long)]
    unproved_ok: bool,
}

/// The CI run (`--ci`): the fixed seeds over both architectures, with the
/// release icf that `cargo xtask test` built.
pub fn run_ci(icf: PathBuf) -> Result<()> {
    run(&FuzzArgs {
        seconds: None,
        seed: None,
        count: None,
        arch: ArchChoice::Both,
        jobs: 2,
        keep_going: true,
        icf: Some(icf),
        ci: true,
        keep_work: false,
        dir: None,
        unproved_ok: false,
    })
}

/// Runs the fuzzer; fails when any program showed a finding.
pub fn run(args: &FuzzArgs) -> Result<()> {
    let (first_seed, count, seconds, keep_going) = if args.ci {
        (0, Some(CI_SEEDS), None, true)
    } else {
        let seed = args.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|elapsed| elapsed.as_secs() % 1_000_000 * 1000)
                .unwrap_or(0)
        });
        let seconds = match (args.seconds, args.count) {
            (None, None) => Some(60),
            (seconds, _) => seconds,
        };
        (seed, args.count, seconds, args.keep_going)
    };
    check_tools(args.arch)?;
    let icf = match &args.icf {
        Some(path) => path
            .canonicalize()
            .with_context(|| format!("--icf {}", path.display()))?,
        None => build_icf()?,
    };
    if !process::succeeds_quietly(std::process::Command::new(&icf).args(["verify", "--help"])) {
        bail!(
            "{} has no `verify` command: every folded program must be verified",
            icf.display()
        );
    }
    eprintln!(
        "fuzz: icf {}, first seed {first_seed}, {} job(s){}",
        icf.display(),
        args.jobs,
        match (count, seconds) {
            (Some(count), _) => format!(", {count} program(s)"),
            (None, Some(seconds)) => format!(", {seconds} s"),
            (None, None) => String::new(),
        }
    );
    let tools = Tools { icf };
    let root = match &args.dir {
        Some(dir) => {
            std::path::absolute(dir).with_context(|| format!("--dir {}", dir.display()))?
        }
        None => corpus::workspace_root()?.join("target/fuzz"),
    };
    let work = root.join("work");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;

    let started = Instant::now();
    let deadline = seconds.map(|seconds| started + Duration::from_secs(seconds));
    let next = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (sender, receiver) = mpsc::channel::<Result<Outcome>>();
    let mut workers = Vec::new();
    for _ in 0..args.jobs.max(1) {
        let next = Arc::clone(&next);
        let stop = Arc::clone(&stop);
        let sender = sender.clone();
        let tools = tools.clone();
        let work = work.clone();
        let root = root.clone();
        let arch_choice = args.arch;
        let keep_work = args.keep_work;
        workers.push(std::thread::spawn(move || {
            loop {
                if stop.load(Ordering::SeqCst) || deadline.is_some_and(|d| Instant::now() >= d) {
                    return;
                }
                let index = next.fetch_add(1, Ordering::SeqCst);
                if count.is_some_and(|count| index >= count) {
                    return;
                }
                let seed = first_seed + index;
                let arch = match arch_choice {
                    ArchChoice::X86_64 => Arch::X86_64,
                    ArchChoice::Aarch64 => Arch::Aarch64,
                    ArchChoice::Both => icf_fuzz::programs::arch_for_seed(seed),
                };
                let program = icf_fuzz::programs::generate(seed, arch);
                let outcome = run::run_program(&program, &tools, &work, &root, keep_work);
                if sender.send(outcome).is_err() {
                    return;
                }
            }
        }));
    }
    drop(sender);

    let mut summary = Summary::default();
    let mut errors = Vec::new();
    for outcome in receiver {
        match outcome {
            Ok(outcome) => {
                print_outcome(&outcome);
                if !outcome.findings.is_empty() && !keep_going {
                    stop.store(true, Ordering::SeqCst);
                }
                summary.add(outcome);
            }
            Err(error) => {
                eprintln!("fuzz: error: {error:#}");
                errors.push(error);
                stop.store(true, Ordering::SeqCst);
            }
        }
    }
    for worker in workers {
        if worker.join().is_err() {
            bail!("a fuzz worker panicked");
        }
    }
    summary.print(started.elapsed());
    if let Some(error) = errors.into_iter().next() {
        return Err(error);
    }
    let unplanted: Vec<&str> = plant::Kind::ALL
        .iter()
        .filter(|kind| {
            summary
                .plants
                .get(kind)
                .is_none_or(|counts| counts.planted == 0)
        })
        .map(|kind| kind.name())
        .collect();
    if args.ci && !unplanted.is_empty() {
        bail!(
            "no wrong fold of kind {} was planted: the CI seeds must plant every kind",
            unplanted.join(", ")
        );
    }
    let behaviour = summary.findings - summary.unproved - summary.shrink_unproved;
    if summary.shrink_unproved > 0 {
        println!(
            "fuzz: {} shrunk binar(ies) behaved as the plain ones but icf verify could not prove them (listed above)",
            summary.shrink_unproved
        );
    }
    if behaviour > 0 || (summary.unproved > 0 && !args.unproved_ok) {
        bail!(
            "{} program(s) with findings; reproductions in {}",
            summary.programs_with_findings.len(),
            root.display()
        );
    }
    if summary.unproved > 0 {
        println!(
            "fuzz: every program behaved alike; {} pair(s) icf verify could not prove are listed above (--unproved-ok)",
            summary.unproved
        );
    }
    if summary.invalid > 0 {
        bail!(
            "{} program(s) the generator got wrong (see target/fuzz/repro-*)",
            summary.invalid
        );
    }
    Ok(())
}

fn print_outcome(outcome: &Outcome) {
    let folds = |slot: usize| match outcome.folds[slot] {
        Some(folds) => format!("{} ({}a+{}t)", folds.total(), folds.aliases, folds.thunks),
        None => "-".to_string(),
    };
    let verdict = if let Some(invalid) = &outcome.invalid {
        format!("INVALID {}", invalid.lines().next().unwrap_or(""))
    } else if outcome.findings.is_empty() {
        "ok".to_string()
    } else {
        let kinds: Vec<String> = outcome
            .findings
            .iter()
            .map(|finding| format!("{}[{}]", finding.kind.name(), finding.mode.name()))
            .collect();
        format!("FINDING {}", kinds.join(" "))
    };
    let plant = outcome
        .plant
        .as_ref()
        .map(|planted| format!(" | {}", planted.describe()))
        .unwrap_or_default();
    println!(
        "seed {} {} {} | {} | {} fns, folds safe {} all {}{plant} | {:.1}s | {verdict}{}",
        outcome.seed,
        outcome.arch.name(),
        outcome.linker.name(),
        outcome.description,
        outcome.functions,
        folds(0),
        folds(1),
        outcome.seconds,
        outcome
            .repro
            .as_ref()
            .map(|path| format!(" -> {}", path.display()))
            .unwrap_or_default()
    );
    for finding in &outcome.findings {
        for line in finding.detail.lines().take(6) {
            println!("    {line}");
        }
    }
}

/// Counts per arch and linker.
#[derive(Debug, Default)]
struct Bucket {
    programs: u64,
    folds: [u64; 2],
    /// `icf shrink` runs on plain `-q` binaries (both modes): shrunk, refused.
    shrunk: u64,
    refused: u64,
    /// Relinks of unchanged inputs (both modes), and how many of them
    /// replayed the first link's kept result.
    relinks: u64,
    replayed: u64,
    findings: BTreeMap<(FindingKind, Mode), u64>,
    invalid: u64,
    seconds: f64,
}

/// How `icf verify` names the one difference `--unproved-ok` lets pass.
const MERGED_ADDRESSES: &str = "differs: significant addresses merged:";

/// A refusal's message without what varies (paths, offsets), to count
/// refusals by kind.
fn refusal_kind(reason: &str) -> String {
    let text = reason.trim_start_matches("icf: error: ");
    let last = text.rsplit(": ").next().unwrap_or(text);
    let words: Vec<&str> = last
        .split_whitespace()
        .filter(|word| !word.starts_with("0x") && !word.chars().any(|c| c.is_ascii_digit()))
        .take(12)
        .collect();
    words.join(" ")
}

#[derive(Debug, Default)]
struct Summary {
    /// `icf shrink`'s refusals by kind.
    refusals: BTreeMap<String, u64>,
    /// Shrunk binaries that behave as the plain ones but `icf verify`
    /// could not prove.
    shrink_unproved: u64,
    buckets: BTreeMap<(Arch, Linker), Bucket>,
    findings: u64,
    /// Findings that are `icf verify` rejections of pairs that behave
    /// alike, for merging addresses it counts as observed.
    unproved: u64,
    invalid: u64,
    programs_with_findings: Vec<u64>,
    /// The planted wrong folds, per kind.
    plants: BTreeMap<plant::Kind, plant::Counts>,
}

impl Summary {
    fn add(&mut self, outcome: Outcome) {
        let bucket = self
            .buckets
            .entry((outcome.arch, outcome.linker))
            .or_default();
        bucket.programs += 1;
        bucket.seconds += outcome.seconds;
        for slot in 0..2 {
            bucket.folds[slot] += outcome.folds[slot].map_or(0, |folds| folds.total());
        }
        if outcome.invalid.is_some() {
            bucket.invalid += 1;
            self.invalid += 1;
        }
        if let Some(planted) = &outcome.plant {
            self.plants
                .entry(planted.pick.kind)
                .or_default()
                .add(planted);
        }
        for shrink in outcome.shrink.iter().flatten() {
            match shrink {
                Ok(()) => bucket.shrunk += 1,
                Err(reason) => {
                    bucket.refused += 1;
                    *self.refusals.entry(refusal_kind(reason)).or_default() += 1;
                }
            }
        }
        for &replayed in outcome.replays.iter().flatten() {
            bucket.relinks += 1;
            bucket.replayed += u64::from(replayed);
        }
        for finding in &outcome.findings {
            *bucket
                .findings
                .entry((finding.kind, finding.mode))
                .or_default() += 1;
            self.findings += 1;
            if finding.kind == FindingKind::Verify && finding.detail.contains(MERGED_ADDRESSES) {
                self.unproved += 1;
            }
            // What icf verify cannot prove of a shrunk binary that behaves
            // as the plain one is a limit of the proof (an AArch64 byte
            // table whose end it cannot see), reported, not a wrong fold.
            if finding.kind == FindingKind::ShrinkVerify {
                self.shrink_unproved += 1;
            }
        }
        if !outcome.findings.is_empty() {
            self.programs_with_findings.push(outcome.seed);
        }
    }

    fn print(&self, elapsed: Duration) {
        println!("\nfuzz summary ({:.0} s wall):", elapsed.as_secs_f64());
        println!(
            "  {:<8} {:<5} {:>8} {:>10} {:>10} {:>8}  findings",
            "arch", "linker", "programs", "folds/safe", "folds/all", "invalid"
        );
        let mut total = Bucket::default();
        for ((arch, linker), bucket) in &self.buckets {
            print_bucket(arch.name(), linker.name(), bucket);
            total.programs += bucket.programs;
            total.invalid += bucket.invalid;
            total.seconds += bucket.seconds;
            for slot in 0..2 {
                total.folds[slot] += bucket.folds[slot];
            }
            total.shrunk += bucket.shrunk;
            total.refused += bucket.refused;
            total.relinks += bucket.relinks;
            total.replayed += bucket.replayed;
            for (key, count) in &bucket.findings {
                *total.findings.entry(*key).or_default() += count;
            }
        }
        print_bucket("all", "", &total);
        if total.programs > 0 {
            println!(
                "  average folds per program: safe {:.1}, all {:.1}; {:.1} s of work per program",
                total.folds[0] as f64 / total.programs as f64,
                total.folds[1] as f64 / total.programs as f64,
                total.seconds / total.programs as f64
            );
        }
        println!(
            "  icf shrink on the -q programs: {} shrunk, {} refused{}",
            total.shrunk,
            total.refused,
            if self.refusals.is_empty() {
                String::new()
            } else {
                let reasons: Vec<String> = self
                    .refusals
                    .iter()
                    .map(|(reason, count)| format!("{count} x {reason}"))
                    .collect();
                format!(" ({})", reasons.join("; "))
            }
        );
        println!(
            "  icf link of unchanged inputs, twice: {} relinks, {} replayed the first's kept result (the rest kept none: a thin archive), each writing the folded binary unless a cache-diff finding says otherwise",
            total.relinks, total.replayed
        );
        self.print_plants();
        if !self.programs_with_findings.is_empty() {
            let mut seeds = self.programs_with_findings.clone();
            seeds.sort_unstable();
            let shown: Vec<String> = seeds.iter().take(60).map(u64::to_string).collect();
            let more = seeds.len().saturating_sub(shown.len());
            println!(
                "  seeds with findings ({}): {}{}",
                seeds.len(),
                shown.join(" "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            );
        }
    }
}

impl Summary {
    /// The planted wrong folds per kind: `icf verify` must reject every
    /// one that behaves differently.
    fn print_plants(&self) {
        println!("  planted wrong folds (icf verify must reject each that behaves differently):");
        println!(
            "  {:<16} {:>6} {:>7} {:>7} {:>8} {:>8} {:>12} {:>12}",
            "kind",
            "picked",
            "refused",
            "planted",
            "differs",
            "rejected",
            "of them (1)",
            "false passes"
        );
        let mut total = plant::Counts::default();
        for kind in plant::Kind::ALL {
            let counts = self.plants.get(&kind).copied().unwrap_or_default();
            print_counts(kind.name(), &counts);
            total.picked += counts.picked;
            total.refused += counts.refused;
            total.planted += counts.planted;
            total.differs += counts.differs;
            total.rejected += counts.rejected;
            total.regular_unproved += counts.regular_unproved;
            total.false_passes += counts.false_passes;
            total.seconds += counts.seconds;
        }
        print_counts("all", &total);
        println!(
            "  (1) rejections in programs whose regular folded build of that mode had a finding too"
        );
        let work: f64 = self.buckets.values().map(|bucket| bucket.seconds).sum();
        println!(
            "  the planted builds took {:.0} s of work, {:.0}% of the campaign's",
            total.seconds,
            100.0 * total.seconds / work.max(1e-9)
        );
    }
}

fn print_counts(name: &str, counts: &plant::Counts) {
    println!(
        "  {:<16} {:>6} {:>7} {:>7} {:>8} {:>8} {:>12} {:>12}",
        name,
        counts.picked,
        counts.refused,
        counts.planted,
        counts.differs,
        counts.rejected,
        counts.regular_unproved,
        counts.false_passes
    );
}

fn print_bucket(arch: &str, linker: &str, bucket: &Bucket) {
    let findings: Vec<String> = bucket
        .findings
        .iter()
        .map(|((kind, mode), count)| format!("{}[{}] {count}", kind.name(), mode.name()))
        .collect();
    println!(
        "  {:<8} {:<5} {:>8} {:>10} {:>10} {:>8}  {}",
        arch,
        linker,
        bucket.programs,
        bucket.folds[0],
        bucket.folds[1],
        bucket.invalid,
        if findings.is_empty() {
            "none".to_string()
        } else {
            findings.join(", ")
        }
    );
}

/// Fails early, naming the missing program, when a tool the chosen arches need is absent.
fn check_tools(arch: ArchChoice) -> Result<()> {
    let mut needed = vec!["timeout"];
    if arch != ArchChoice::Aarch64 {
        needed.extend([
            "gcc", "clang-19", "ld.bfd", "ld.gold", "ld.lld", "mold", "ar",
        ]);
    }
    if arch != ArchChoice::X86_64 {
        needed.extend([
            "aarch64-linux-gnu-gcc",
            "aarch64-linux-gnu-ar",
            "clang-19",
            "qemu-aarch64",
        ]);
    }
    let missing: Vec<&str> = needed
        .into_iter()
        .filter(|tool| {
            process::find_program(tool).is_none()
                && !PathBuf::from("/usr/lib/llvm-19/bin").join(tool).is_file()
        })
        .collect();
    if !missing.is_empty() {
        bail!(
            "missing tools: {} (`cargo xtask install-deps` installs them)",
            missing.join(", ")
        );
    }
    Ok(())
}

/// Builds `icf` in release mode in the target directory cargo uses and returns its path.
fn build_icf() -> Result<PathBuf> {
    let mut build = cargo();
    build.args(["build", "--release", "--quiet", "-p", "icf-cli"]);
    eprintln!("==> {}", process::display(&build));
    process::run(&mut build)?;
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => corpus::workspace_root()?.join("target"),
    };
    let icf = target.join("release/icf");
    if !icf.is_file() {
        bail!("`cargo build` succeeded but {} is missing", icf.display());
    }
    Ok(icf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use run::Finding;

    fn verify_rejection(detail: &str) -> Outcome {
        Outcome {
            findings: vec![Finding {
                kind: FindingKind::Verify,
                mode: Mode::Safe,
                detail: detail.to_string(),
            }],
            ..Outcome::of(&icf_fuzz::programs::generate(1, Arch::X86_64))
        }
    }

    #[test]
    fn only_merged_addresses_count_as_unproved() {
        let mut summary = Summary::default();
        summary.add(verify_rejection(
            "main differs: significant addresses merged: ca0t and ca0 have distinct addresses",
        ));
        summary.add(verify_rejection(
            "f1 differs: instructions differ: the instructions differ",
        ));
        assert_eq!(summary.findings, 2);
        assert_eq!(summary.unproved, 1);
    }
}
