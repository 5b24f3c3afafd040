//! `cargo xtask peer-check`: what icf folds on the ripgrep corpus against what
//! lld-19 and gold fold with `--icf=all` in the very same link, the `.text`
//! each linker saves, and how long `icf report` takes.
//!
//! Every link is the recorded rustc link (`corpus.rs`) replayed with another
//! `-fuse-ld=`. Sections are named the way lld's `--print-icf-sections` names
//! them, `FILE:(SECTION)` or `ARCHIVE(MEMBER):(SECTION)` with the paths as
//! given on the command line; `icf report --print-icf-sections` prints the
//! same, and gold's `ICF folding section` messages are rewritten to it.
//!
//! lld folds only what survives `--gc-sections`, while icf sees every section
//! of every input. The map file of the plain lld link says which sections are
//! live and how big, so lld's removals of empty sections and of sections from
//! files outside the corpus (crt objects, libc) are left out of the comparison,
//! and icf's extra removals are split into live and dead code.
//!
//! The gate (`--min-coverage`): of the sections lld removes, the percentage
//! icf folds into the same copy as lld does (whichever copy icf keeps).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::corpus::{self, Corpus, Linker};
use crate::process::{self, capture, cargo, display, find_program};

/// How many sections each list shows.
const LISTED: usize = 30;
/// How many times `icf report` is timed; the fastest run is reported.
const TIMED_RUNS: usize = 3;

/// One fold: the section `removed` is replaced by the section `kept`.
#[derive(Debug, Clone)]
struct Fold {
    kept: String,
    removed: String,
}

/// One replayed link: its `.text` size and everything it printed.
#[derive(Debug)]
struct LinkResult {
    label: String,
    text_size: u64,
    messages: String,
}

/// Runs the check; fails when icf folds less than `min_coverage` percent of lld's removals.
pub fn run(min_coverage: f64) -> Result<()> {
    let corpus = corpus::ripgrep_corpus()?;
    let icf = build_icf()?;
    let scratch = corpus.dir.join("peer");
    fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let display_prefix = format!("{}/", corpus.dir.join("inputs").display());

    eprintln!("==> replaying the ripgrep link with lld-19, gold, GNU ld and mold");
    let map = scratch.join("lld.map");
    let map_flag = format!("-Wl,-Map={}", map.display());
    let all = ["-Wl,--icf=all", "-Wl,--print-icf-sections"];
    let mut links = vec![
        link(&corpus, &scratch, Linker::Lld, "", &[&map_flag])?,
        link(&corpus, &scratch, Linker::Lld, "safe", &["-Wl,--icf=safe"])?,
        link(&corpus, &scratch, Linker::Lld, "all", &all)?,
        link(&corpus, &scratch, Linker::Gold, "", &[])?,
        link(&corpus, &scratch, Linker::Gold, "safe", &["-Wl,--icf=safe"])?,
        link(&corpus, &scratch, Linker::Gold, "all", &all)?,
    ];
    links.push(link(&corpus, &scratch, Linker::Bfd, "", &[])?);
    if find_program("mold").is_some() {
        links.push(link(&corpus, &scratch, Linker::Mold, "", &[])?);
        links.push(link(
            &corpus,
            &scratch,
            Linker::Mold,
            "all",
            &["-Wl,--icf=all"],
        )?);
    }
    let live = parse_lld_map(
        &fs::read_to_string(&map).with_context(|| format!("reading {}", map.display()))?,
    );
    let lld_folds = parse_lld_folds(&links[2].messages);
    let gold_folds = parse_gold_folds(&links[5].messages);

    eprintln!(
        "==> icf report --mode all on {} inputs",
        corpus.inputs.len()
    );
    let mut report = Command::new(&icf);
    report
        .args(["report", "--mode", "all", "--print-icf-sections"])
        .args(&corpus.inputs);
    let icf_output = capture(&mut report)?;
    let icf_folds = IcfFolds::new(parse_lld_folds(&String::from_utf8_lossy(
        &icf_output.stdout,
    )));
    let timing = time_icf(&icf, &corpus)?;

    let lld = compare(&lld_folds, &icf_folds, &live, &display_prefix);
    let gold = compare(&gold_folds, &icf_folds, &live, &display_prefix);
    write_folds(&scratch.join("lld-misses.txt"), &lld.misses)?;
    write_folds(&scratch.join("gold-misses.txt"), &gold.misses)?;
    let short = |section: &str| section.replace(&display_prefix, "").to_string();

    println!(
        "peer check: ripgrep 15.2.0, {} inputs in {}",
        corpus.inputs.len(),
        corpus.dir.join("inputs").display()
    );
    println!("\nsections removed with --icf=all (all modes: the same objects, the same link)");
    println!("  lld-19  {:>6}", lld_folds.len());
    println!("  gold    {:>6}", gold_folds.len());
    let icf_live = icf_folds
        .folds
        .iter()
        .filter(|fold| live.contains_key(&fold.removed))
        .count();
    println!(
        "  icf     {:>6}  ({icf_live} of them live in the lld link; the rest is code the link drops)",
        icf_folds.folds.len()
    );
    lld.print("lld", &short);
    gold.print("gold", &short);

    let lld_removed: HashSet<&str> = lld_folds.iter().map(|f| f.removed.as_str()).collect();
    let gold_removed: HashSet<&str> = gold_folds.iter().map(|f| f.removed.as_str()).collect();
    let extra: Vec<&Fold> = icf_folds
        .folds
        .iter()
        .filter(|fold| live.contains_key(&fold.removed) && !lld_removed.contains(&*fold.removed))
        .collect();
    let extra_bytes: u64 = extra.iter().map(|fold| live[&fold.removed]).sum();
    let extra_gold = extra
        .iter()
        .filter(|fold| gold_removed.contains(&*fold.removed))
        .count();
    write_folds(&scratch.join("icf-extra.txt"), &extra)?;
    println!(
        "\nicf removes, lld does not, live in the link: {} sections, {extra_bytes} bytes \
         ({extra_gold} of them gold removes too); first {}:",
        extra.len(),
        LISTED.min(extra.len())
    );
    for fold in extra.iter().take(LISTED) {
        println!(
            "  {:>6}  {}\n          kept: {}",
            live[&fold.removed],
            short(&fold.removed),
            short(&fold.kept)
        );
    }

    println!("\n.text size                 bytes   saved against the same linker without ICF");
    for result in &links {
        let base = links
            .iter()
            .find(|l| l.label == result.label.split(' ').next().unwrap_or_default())
            .map_or(result.text_size, |l| l.text_size);
        let saved = 100.0 * (base as f64 - result.text_size as f64) / base.max(1) as f64;
        if result.label.contains(' ') {
            println!(
                "  {:<20} {:>10}   {saved:.2}%",
                result.label, result.text_size
            );
        } else {
            println!("  {:<20} {:>10}", result.label, result.text_size);
        }
    }

    println!(
        "\nicf report --mode all: {:.1} ms wall (fastest of {TIMED_RUNS}); \
         load {:.1} ms, lift {:.1} ms, partition {:.1} ms, plan {:.1} ms",
        timing.wall.as_secs_f64() * 1e3,
        timing.load,
        timing.lift,
        timing.partition,
        timing.plan
    );

    println!(
        "\nfull lists (removed, tab, kept): {}/{{lld-misses,gold-misses,icf-extra}}.txt",
        scratch.display()
    );

    let coverage = lld.folded_percent();
    if coverage < min_coverage {
        bail!(
            "icf folds {coverage:.2}% of the sections lld removes, below --min-coverage {min_coverage}%"
        );
    }
    Ok(())
}

/// Builds the release `icf` of this workspace and returns its path.
fn build_icf() -> Result<PathBuf> {
    let mut build = cargo();
    build.args(["build", "--release", "--quiet", "-p", "icf-cli"]);
    eprintln!("==> {}", display(&build));
    process::run(&mut build)?;
    let icf = corpus::workspace_root()?.join("target/release/icf");
    if !icf.is_file() {
        bail!("`cargo build` succeeded but {} is missing", icf.display());
    }
    Ok(icf)
}

/// Replays the corpus link with `linker` and `extra` flags into
/// `scratch/LINKER[-MODE]`; `mode` only labels the result.
fn link(
    corpus: &Corpus,
    scratch: &Path,
    linker: Linker,
    mode: &str,
    extra: &[&str],
) -> Result<LinkResult> {
    let (label, file) = if mode.is_empty() {
        (linker.name().to_string(), linker.name().to_string())
    } else {
        (
            format!("{} --icf={mode}", linker.name()),
            format!("{}-icf-{mode}", linker.name()),
        )
    };
    let output = scratch.join(file);
    let mut command = corpus.link_command(linker, &output, extra)?;
    let result = capture(&mut command).with_context(|| format!("linking with {label}"))?;
    let mut messages = String::from_utf8_lossy(&result.stdout).into_owned();
    messages.push_str(&String::from_utf8_lossy(&result.stderr));
    Ok(LinkResult {
        label,
        text_size: text_size(&output)?,
        messages,
    })
}

/// Writes `folds` one per line: the removed section, a tab, the kept one.
fn write_folds(path: &Path, folds: &[&Fold]) -> Result<()> {
    let text: String = folds
        .iter()
        .map(|fold| format!("{}\t{}\n", fold.removed, fold.kept))
        .collect();
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The size of the `.text` section of a linked file, from `size -A -d`.
fn text_size(path: &Path) -> Result<u64> {
    let mut size = Command::new("size");
    size.args(["-A", "-d"]).arg(path);
    let output = capture(&mut size)?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(".text"))
                .then(|| words.next()?.parse().ok())
                .flatten()
        })
        .with_context(|| format!("no .text in `size -A -d {}`", path.display()))
}

/// lld's (and icf's) `--print-icf-sections` lines: a `selected section X`
/// line, then one `  removing identical section Y` line per section folded into X.
fn parse_lld_folds(text: &str) -> Vec<Fold> {
    let mut folds = Vec::new();
    let mut kept: Option<&str> = None;
    for line in text.lines() {
        if let Some(section) = line.strip_prefix("selected section ") {
            kept = Some(section);
        } else if let (Some(section), Some(kept)) =
            (line.strip_prefix("  removing identical section "), kept)
        {
            folds.push(Fold {
                kept: kept.to_owned(),
                removed: section.to_owned(),
            });
        }
    }
    folds
}

/// gold's `--print-icf-sections` messages, in lld's naming:
/// `ld.gold: ICF folding section 'S' in file 'F' into 'T' in file 'G'`.
fn parse_gold_folds(text: &str) -> Vec<Fold> {
    text.lines()
        .filter_map(|line| {
            let rest = &line[line.find("ICF folding section '")? + "ICF folding section '".len()..];
            let (section, rest) = rest.split_once("' in file '")?;
            let (file, rest) = rest.split_once("' into '")?;
            let (kept_section, rest) = rest.split_once("' in file '")?;
            let kept_file = rest.strip_suffix('\'')?;
            Some(Fold {
                kept: format!("{kept_file}:({kept_section})"),
                removed: format!("{file}:({section})"),
            })
        })
        .collect()
}

/// The input sections of an lld map file (`-Map`), with their sizes.
///
/// Lines are `VMA LMA SIZE ALIGN` then the name, indented by one space for
/// an output section, nine for an input section and seventeen for a symbol.
fn parse_lld_map(text: &str) -> HashMap<String, u64> {
    let mut sections = HashMap::new();
    for line in text.lines().skip(1) {
        let mut rest = line;
        let mut numbers = [0u64; 4];
        let mut ok = true;
        for number in &mut numbers {
            rest = rest.trim_start();
            let end = rest.find(' ').unwrap_or(rest.len());
            match u64::from_str_radix(&rest[..end], 16) {
                Ok(value) => *number = value,
                Err(_) => ok = false,
            }
            rest = &rest[end..];
        }
        let name = rest.trim_start();
        if ok && rest.len() - name.len() == 9 {
            sections.insert(name.to_owned(), numbers[2]);
        }
    }
    sections
}

/// icf's folds, and which copy each folded section ends up as.
#[derive(Debug)]
struct IcfFolds {
    folds: Vec<Fold>,
    removed: HashSet<String>,
    copy_of: HashMap<String, String>,
}

impl IcfFolds {
    fn new(folds: Vec<Fold>) -> IcfFolds {
        let removed = folds.iter().map(|f| f.removed.clone()).collect();
        let copy_of = folds
            .iter()
            .map(|f| (f.removed.clone(), f.kept.clone()))
            .collect();
        IcfFolds {
            folds,
            removed,
            copy_of,
        }
    }

    /// The section that stands for `section` after icf: its kept copy, or itself.
    fn copy<'a>(&'a self, section: &'a str) -> &'a str {
        self.copy_of.get(section).map_or(section, String::as_str)
    }
}

/// How a peer's removals compare with icf's.
#[derive(Debug)]
struct Comparison<'a> {
    /// Removals of sections from files outside the corpus (crt objects, libc).
    outside: usize,
    /// Removals of empty sections (size 0 in the plain link).
    empty: usize,
    /// The rest: what icf is measured against.
    compared: usize,
    /// Compared removals that icf removes as well.
    also_removed: usize,
    /// Compared removals that icf folds into the same copy as the peer.
    folded: usize,
    /// Compared removals that icf does not fold into the peer's copy.
    misses: Vec<&'a Fold>,
}

fn compare<'a>(
    peer: &'a [Fold],
    icf: &IcfFolds,
    live: &HashMap<String, u64>,
    inputs_prefix: &str,
) -> Comparison<'a> {
    let mut comparison = Comparison {
        outside: 0,
        empty: 0,
        compared: 0,
        also_removed: 0,
        folded: 0,
        misses: Vec::new(),
    };
    for fold in peer {
        if !fold.removed.starts_with(inputs_prefix) {
            comparison.outside += 1;
        } else if live.get(&fold.removed) == Some(&0) {
            comparison.empty += 1;
        } else {
            comparison.compared += 1;
            comparison.also_removed += usize::from(icf.removed.contains(&fold.removed));
            if icf.copy(&fold.removed) == icf.copy(&fold.kept) {
                comparison.folded += 1;
            } else {
                comparison.misses.push(fold);
            }
        }
    }
    comparison
}

impl Comparison<'_> {
    fn folded_percent(&self) -> f64 {
        100.0 * self.folded as f64 / self.compared.max(1) as f64
    }

    fn print(&self, peer: &str, short: &dyn Fn(&str) -> String) {
        println!(
            "\nicf against {peer}: {} removals compared ({} outside the corpus inputs, {} of empty sections left out)",
            self.compared, self.outside, self.empty
        );
        println!(
            "  icf removes the same section: {:>6}  {:.2}%",
            self.also_removed,
            100.0 * self.also_removed as f64 / self.compared.max(1) as f64
        );
        println!(
            "  icf folds it with {peer}'s copy: {:>5}  {:.2}%",
            self.folded,
            self.folded_percent()
        );
        if self.misses.is_empty() {
            return;
        }
        println!(
            "  {peer} removes, icf does not fold (first {} of {}):",
            LISTED.min(self.misses.len()),
            self.misses.len()
        );
        for fold in self.misses.iter().take(LISTED) {
            println!(
                "    {}\n      kept: {}",
                short(&fold.removed),
                short(&fold.kept)
            );
        }
    }
}

/// The fastest of `TIMED_RUNS` runs of `icf report --mode all --format json`
/// and the phase times (milliseconds) that run reported.
#[derive(Debug)]
struct Timing {
    wall: Duration,
    load: f64,
    lift: f64,
    partition: f64,
    plan: f64,
}

fn time_icf(icf: &Path, corpus: &Corpus) -> Result<Timing> {
    let mut best: Option<(Duration, Vec<u8>)> = None;
    for _ in 0..TIMED_RUNS {
        let mut report = Command::new(icf);
        report
            .args(["report", "--mode", "all", "--format", "json"])
            .args(&corpus.inputs);
        let started = Instant::now();
        let output = capture(&mut report)?;
        let wall = started.elapsed();
        if best.as_ref().is_none_or(|(fastest, _)| wall < *fastest) {
            best = Some((wall, output.stdout));
        }
    }
    let (wall, json) = best.context("no timed runs")?;
    let report: serde_json::Value =
        serde_json::from_slice(&json).context("parsing `icf report --format json`")?;
    let phase = |name: &str| -> Result<f64> {
        report["timings_ms"][name]
            .as_f64()
            .with_context(|| format!("`icf report --format json` has no timings_ms.{name}"))
    };
    Ok(Timing {
        wall,
        load: phase("load")?,
        lift: phase("lift")?,
        partition: phase("partition")?,
        plan: phase("plan")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lld_and_gold_folds_alike() {
        let lld = parse_lld_folds(
            "selected section a.o:(.text.f1)\n  removing identical section /x/libc3.a(c.o):(.text.f3)\n",
        );
        let gold = parse_gold_folds(
            "/usr/bin/ld.gold: ICF folding section '.text.f3' in file '/x/libc3.a(c.o)' into '.text.f1' in file 'a.o'\n",
        );
        assert_eq!(lld.len(), 1);
        assert_eq!(gold.len(), 1);
        assert_eq!(lld[0].kept, gold[0].kept);
        assert_eq!(lld[0].removed, gold[0].removed);
    }

    #[test]
    fn parses_input_sections_of_an_lld_map() {
        let map = "             VMA              LMA     Size Align Out     In      Symbol\n\
                   \x20         200200           200200       2a    16 .text\n\
                   \x20         200200           200200       2a    16         a.o:(.text.f)\n\
                   \x20         200200           200200        0     1                 f\n";
        let sections = parse_lld_map(map);
        assert_eq!(sections.len(), 1);
        assert_eq!(sections.get("a.o:(.text.f)"), Some(&0x2a));
    }
}
