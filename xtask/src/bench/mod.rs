//! `cargo xtask bench`: icf against lld-19, gold, mold and GNU ld on real
//! code, every figure measured in one run on the same objects.
//!
//! Corpora (inputs built once and cached):
//!
//! - `ripgrep`: ripgrep 15.2's recorded final link (`corpus.rs`, cached in
//!   `target/corpus/ripgrep/`); behaviour: the searches of `peer.rs`.
//! - `llvm`: `opt_lite` (`xtask/bench/llvm/opt_lite.cpp`, written to
//!   `target/bench/llvm/`), a small `opt -O2 -S` on LLVM 14's new pass
//!   manager, compiled by clang++-19 with `-O2 -ffunction-sections
//!   -fdata-sections` and linked by `g++ -Wl,--gc-sections` statically
//!   against Debian's llvm-14-dev archives (core, irreader, passes: most of
//!   LLVM's transforms); behaviour: the optimized IR it prints for
//!   `xtask/bench/llvm/sample.ll`.
//! - `llvm-aarch64`: the same program built for AArch64: clang++-19
//!   `--target=aarch64-linux-gnu`, linked by `aarch64-linux-gnu-g++` against
//!   Debian's arm64 llvm-14-dev archives (downloaded once from the Debian
//!   pool into `target/bench/llvm-aarch64/sysroot/`, the host package's
//!   version), run under `qemu-aarch64`.
//! - `synthetic`: generated objects of N functions (`synthetic.rs`, cached in
//!   `target/bench/synthetic/nN-seedS/`), linked by `cc` without
//!   `--gc-sections` so every function stays; behaviour: the checksum `main`
//!   prints. One corpus per size (`--sizes`, default 10k to 80k).
//! - `lto`: python-rapidjson 1.25 from PyPI built with ThinLTO, measured
//!   on its own (`lto.rs`): the plain LTO link, lld `--icf=all` and `icf
//!   link` in both modes, each output run under the package's own tests.
//!
//! Each corpus is linked with lld (`--icf=none|safe|all`), gold (the same),
//! mold (none, `--icf=all`; `--no-fork` so its time and memory are its own),
//! GNU ld, and `icf link --mode safe|all` in front of lld and of GNU ld.
//! Those `icf link` rows start from an empty cache every run (a first link,
//! which also fills it; the previous run's cache is moved aside, not
//! deleted, until every corpus is measured: `set_aside.rs`; and what
//! earlier links left to write back is written before each timed command,
//! untimed); the `warm` rows in front of lld relink the same
//! inputs with the cache filled by one untimed link. Links run round-robin, `--runs` rounds (default 3), and the fastest wall
//! time counts; the peak RSS (`/usr/bin/time -f %M`: the largest single
//! process of the link: driver, linker or icf) is the largest over the rounds.
//! Every output is then measured (`.text` from `size -A`, `strip -o` file
//! size) and run: it must behave exactly like the plain lld link.
//!
//! The timed `icf link` runs write no report (naming every member costs
//! time a user without `--report` does not spend); one more, untimed, run
//! with `--report` gives icf's own phases (`timings_ms`: load, lift,
//! partition, plan) and its fold counts. icf's overhead is its wall time
//! minus the plain link with the same linker. On the synthetic corpora, icf's own peak RSS is measured
//! once more without any linker: `icf fold` on the same inputs (the link
//! folds every input there too).
//!
//! `icf report` is checked against reality on the real corpora
//! (`estimate.rs`): `icf report --format json --mode safe|all` on the plain
//! lld and GNU ld outputs estimates what `icf link` would save; its
//! `totals.saved_code_bytes` is set beside that of the cold `icf link
//! --mode` report in front of the same linker, same run, with the report's
//! wall time and peak RSS (`--no-cache`, once per round, the fastest
//! counting). An estimate above the actual saving means folds the link
//! would not make; one below is expected where a binary cannot say what
//! the objects did (`crates/icf-object/src/elf/image.rs`: unrecognized jump
//! tables, constants around an array's end, `.llvm_addrsig`).
//!
//! After the link (`post_link.rs`): on each real corpus, `icf shrink` in
//! both modes on the plain lld link made with `-Wl,-q` (opt_lite also with
//! its own object compiled by g++), timed and measured like a link, run,
//! proved by `icf verify`, against the plain lld link's time and peak RSS
//! and `icf link --mode safe`'s stripped saving (issue M3-1's targets).
//!
//! The *I/O floor* (`floor.rs`) is not a link: reading every input of the
//! link once (each argument of the recorded command that names a file, but
//! the output) plus writing fresh copies of the files the cold `icf safe +
//! lld` link of the same round rewrote (`std::fs::copy` on the same file
//! system), timed once after each round of links, the fastest counting. A
//! tool that rewrites a link's inputs in front of an unmodified linker must
//! read them and write what it hands the linker before the linker starts,
//! so it cannot link in less than the plain link plus this floor; an INFO
//! line beside the targets says what the cold target leaves for icf's own
//! analysis. Its counterpart after the link, the *decode floor*
//! (`decode_floor.rs`), reads a plain `-q` binary and decodes each function
//! of its `.text` once on every core: `icf shrink` and `icf report` find
//! references by decoding, so neither reads the image in less.
//!
//! Targets (PASS/FAIL lines, never the exit status; see `targets`): safe mode
//! saves at least the best peer's `--icf=all` on every corpus; `icf link` in
//! front of lld within M3-2's limits of the plain lld link: cold 1.8x on
//! ripgrep and 2.5x on llvm, relinking the same inputs 1.2x and 1.3x, after
//! the program's own objects changed 1.3x and 1.5x; on
//! the synthetic corpora, icf link time grows at most 1.1x as fast as the
//! function count (2.2 for a doubling), and icf's peak RSS stays under twice
//! the input's code bytes plus `RSS_FIXED_OVERHEAD_MIB` (M1's target) and at
//! or below the plain lld link's (M3-2's); on the real
//! corpora, per plain binary, `icf report`'s estimate exceeds the `icf link`
//! saving by at most 1% in either mode (an INFO line gives the ratios).
//!
//! Results: `target/bench/results.md` (printed too) and
//! `target/bench/results.json`. The command fails only when something
//! breaks: a link fails (its command and output go to the corpus
//! directory's `failures/`), a binary behaves unlike the plain one (both
//! outputs and the binary go to its `diff/`), or `icf fold` or `icf report`
//! on a plain binary fails.
//!
//! How long a run takes and what it measured are in the results it writes
//! (`results.md` records the time taken), not here. One million synthetic
//! functions (`--corpus synthetic --sizes 1000000`) need about 4 GiB of
//! disk.
//!
//! This file holds the flags, `run` (the phases in order) and the tool
//! check; each phase has its own file: `prepare` (building and caching the
//! corpora), `measure` (the links, their sizes, behaviour and `icf verify`),
//! `lto` (the LTO corpus, prepared, measured and rendered),
//! `estimate` (`icf report` on the plain binaries), `post_link` (`icf
//! shrink` after the link), `floor` (the I/O floor), `decode_floor` (its
//! counterpart after the link), `targets` (the PASS/FAIL lines and the INFO lines), `render`
//! (results.md, results.json,
//! the environment they record) and `format` (numbers).

mod decode_floor;
mod estimate;
mod floor;
mod format;
mod lto;
mod measure;
mod post_link;
mod prepare;
mod render;
mod set_aside;
mod targets;

use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};

use crate::corpus;
use crate::peer;
use crate::process::find_program;
use measure::{Behaviour, CorpusResult, measure};
pub(crate) use prepare::real_corpora;
use render::{Environment, icf_revision, load_average};
use set_aside::SetAside;
use targets::{notes, targets};

/// GNU time (Debian package `time`), for the peak RSS of a process tree.
const GNU_TIME: &str = "/usr/bin/time";
/// The largest synthetic corpus `--sizes` accepts.
const MAX_SYNTHETIC: usize = 1_000_000;

/// `cargo xtask bench` flags.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Which corpora to benchmark.
    #[arg(long, value_enum, default_value_t = CorpusChoice::All)]
    corpus: CorpusChoice,
    /// Synthetic corpus sizes in functions, comma-separated, 1000 to 1000000 each
    /// (1000000 takes about 10 minutes, 5 GiB of memory and 4 GiB of disk).
    #[arg(long, value_delimiter = ',', default_values_t = [10_000, 20_000, 40_000, 80_000])]
    sizes: Vec<usize>,
    /// Timed rounds of every link; the fastest counts.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Seed of the synthetic generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CorpusChoice {
    Ripgrep,
    Llvm,
    LlvmAarch64,
    Synthetic,
    /// python-rapidjson from PyPI, built with ThinLTO (`lto.rs`).
    Lto,
    All,
}

/// Runs the benchmark; see the module header. The phases, in order: check
/// the flags and tools, build icf, prepare the chosen corpora, measure each,
/// evaluate the targets, write and print the results, and fail if a link
/// broke.
pub fn run(args: &BenchArgs) -> Result<()> {
    let started = Instant::now();
    for &size in &args.sizes {
        ensure!(
            (1000..=MAX_SYNTHETIC).contains(&size),
            "--sizes {size}: a synthetic corpus has 1000 to {MAX_SYNTHETIC} functions"
        );
    }
    check_tools()?;
    let root = corpus::workspace_root()?.join("target/bench");
    fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    let icf = peer::build_icf()?;
    let load_before = load_average();

    let corpora = prepare::chosen_corpora(args, &root)?;

    // Deleted once every corpus is measured (`set_aside.rs`: on ext4
    // without a journal, files deleted just before a link slow down every
    // file it creates).
    let set_aside = SetAside::new(&root);
    let mut results = Vec::new();
    for prepared in &corpora {
        eprintln!("==> bench {}: {}", prepared.name, prepared.description);
        results.push(measure(prepared, &icf, args.runs, &set_aside)?);
    }
    set_aside.delete()?;
    let lto = if matches!(args.corpus, CorpusChoice::Lto | CorpusChoice::All) {
        eprintln!("==> bench lto");
        Some(lto::measure(&root, &icf, args.runs)?)
    } else {
        None
    };

    let mut targets = targets(&results);
    targets.extend(lto.iter().flat_map(lto::targets));
    let notes = notes(&results);
    let elapsed = started.elapsed();
    let environment = Environment {
        icf_revision: icf_revision(),
        load_before,
        load_after: load_average(),
        runs: args.runs,
        elapsed,
    };
    render::write_and_print(
        &root,
        &results,
        lto.as_ref(),
        &targets,
        &notes,
        &environment,
    )?;

    fail_on_broken_links(&results, lto.as_ref())
}

/// Fails, naming every one, if a link failed, a binary behaves unlike the
/// plain link, or `icf fold` or `icf report` on a plain binary failed.
fn fail_on_broken_links(results: &[CorpusResult], lto: Option<&lto::LtoResult>) -> Result<()> {
    let mut broken: Vec<String> = results
        .iter()
        .flat_map(|result| {
            result.rows.iter().filter_map(move |row| {
                let problem = match (&row.failure, &row.behaviour) {
                    (Some(failure), _) => failure.describe(),
                    (None, Behaviour::Differs(why)) => why.clone(),
                    (None, Behaviour::Same | Behaviour::Reference) => return None,
                };
                Some(format!(
                    "{} / {}: {problem}",
                    result.name, row.variant.label
                ))
            })
        })
        .collect();
    broken.extend(results.iter().filter_map(|result| {
        let error = result.fold_error.as_ref()?;
        Some(format!("{} / icf fold: {error}", result.name))
    }));
    broken.extend(results.iter().flat_map(post_link::broken));
    broken.extend(lto.iter().flat_map(|lto| {
        lto.links.iter().filter_map(|link| {
            let failure = link.failure.as_ref()?;
            Some(format!("lto / {}: {failure}", link.label))
        })
    }));
    broken.extend(results.iter().flat_map(|result| {
        result.estimates.iter().filter_map(move |estimate| {
            let estimate::Outcome::Failed(error) = &estimate.outcome else {
                return None;
            };
            Some(format!(
                "{} / icf report --mode {} on the plain {} binary: {error}",
                result.name,
                estimate.mode,
                estimate.linker.name()
            ))
        })
    }));
    if !broken.is_empty() {
        bail!(
            "{} link(s) failed or behave unlike the plain link:\n  {}",
            broken.len(),
            broken.join("\n  ")
        );
    }
    Ok(())
}

/// Fails early, naming the Debian package, when a tool the bench runs is missing.
fn check_tools() -> Result<()> {
    let tools = [
        ("cc", "gcc"),
        ("g++", "g++"),
        ("clang++-19", "clang-19"),
        ("ld.lld-19", "lld-19"),
        ("ld.gold", "binutils"),
        ("ld.bfd", "binutils"),
        ("mold", "mold"),
        ("strip", "binutils"),
        ("size", "binutils"),
        ("llvm-config-14", "llvm-14-dev"),
        ("aarch64-linux-gnu-g++", "g++-aarch64-linux-gnu"),
        ("aarch64-linux-gnu-strip", "binutils-aarch64-linux-gnu"),
        ("qemu-aarch64", "qemu-user"),
        ("curl", "curl"),
    ];
    let mut missing: Vec<String> = tools
        .iter()
        .filter(|(tool, _)| find_program(tool).is_none())
        .map(|(tool, package)| format!("{tool} ({package})"))
        .collect();
    if !Path::new(GNU_TIME).is_file() {
        missing.push(format!("{GNU_TIME} (time)"));
    }
    ensure!(
        missing.is_empty(),
        "missing tools: {}; `cargo xtask install-deps` installs them",
        missing.join(", ")
    );
    Ok(())
}
