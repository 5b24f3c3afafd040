//! `cargo xtask peer-check`: what icf folds on the ripgrep corpus against what
//! lld-19 and gold fold with `--icf=all` in the very same link, the `.text`
//! each linker saves (and `icf link` in front of lld saves), and how long
//! `icf report` takes.
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
//! lld `--icf=all` folds code only; with `--ignore-data-address-equality` it
//! folds read-only data too, as icf's mode `all` does, so that link is
//! compared as well.
//!
//! icf's JSON report says, for every section in a class of identical pieces,
//! the class and what happens to it (`kept`, `alias`, `thunk`, `keep` and
//! why); that explains each of lld's removals icf does not match.
//!
//! The `rg` that `icf link` produces must print what the plain lld link's
//! `rg` prints for a set of searches (`SEARCHES`), or the check fails.
//!
//! The gate (`--min-coverage`): of the sections lld removes, the percentage
//! whose fold icf makes too: the section becomes an alias in the class that
//! holds lld's kept copy (or icf keeps it and aliases lld's copy to it).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

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

/// Runs the check; fails when icf matches less than `min_coverage` percent of lld's removals.
pub fn run(min_coverage: f64) -> Result<()> {
    let corpus = corpus::ripgrep_corpus()?;
    let icf = build_icf()?;
    let scratch = corpus.dir.join("peer");
    fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let inputs_prefix = format!("{}/", corpus.dir.join("inputs").display());
    let short = |section: &str| section.replace(&inputs_prefix, "");

    eprintln!("==> replaying the ripgrep link with lld-19, gold, GNU ld and mold");
    let links = link_all(&corpus, &scratch)?;
    let live = parse_lld_map(&links.lld_map)?;
    let lld_folds = parse_lld_folds(&links.lld_all_messages);
    let lld_data_folds = parse_lld_folds(&links.lld_data_messages);
    let gold_folds = parse_gold_folds(&links.gold_all_messages);

    eprintln!(
        "==> {} report --mode all on {} inputs",
        icf.display(),
        corpus.inputs.len()
    );
    let mut report = Command::new(&icf);
    report
        .args(["report", "--mode", "all", "--print-icf-sections"])
        .args(&corpus.inputs);
    let printed = capture(&mut report)?;
    let icf_folds = parse_lld_folds(&String::from_utf8_lossy(&printed.stdout));
    let (timing, json) = time_icf(&icf, &corpus)?;
    let placements = icf_placements(&json)?;

    println!(
        "peer check: ripgrep 15.2.0, {} inputs in {inputs_prefix}",
        corpus.inputs.len()
    );
    println!("\nsections removed with --icf=all (the same objects, the same link)");
    println!("  lld-19  {:>6}", lld_folds.len());
    println!(
        "  lld-19  {:>6}  with --ignore-data-address-equality (read-only data folds too)",
        lld_data_folds.len()
    );
    println!("  gold    {:>6}", gold_folds.len());
    let icf_live = icf_folds
        .iter()
        .filter(|fold| live.contains_key(&fold.removed))
        .count();
    println!(
        "  icf     {:>6}  ({icf_live} of them live in the lld link; the rest is code and data the link drops)",
        icf_folds.len()
    );

    let lld = compare(&lld_folds, &placements, &live, &inputs_prefix);
    let gold = compare(&gold_folds, &placements, &live, &inputs_prefix);
    let lld_data = compare(&lld_data_folds, &placements, &live, &inputs_prefix);
    lld.print("lld --icf=all", LISTED, &short);
    gold.print("gold --icf=all", LISTED, &short);
    lld_data.print("lld --icf=all --ignore-data-address-equality", 0, &short);
    write_misses(&scratch.join("lld-misses.txt"), &lld.misses)?;
    write_misses(&scratch.join("gold-misses.txt"), &gold.misses)?;
    write_misses(&scratch.join("lld-data-misses.txt"), &lld_data.misses)?;

    let extra = icf_only(&icf_folds, &lld_folds, &live);
    print_icf_only(&extra, &gold_folds, &lld_data_folds, &live, &short);
    let extra: Vec<(&Fold, String)> = extra.into_iter().map(|f| (f, String::new())).collect();
    write_misses(&scratch.join("icf-extra.txt"), &extra)?;
    println!(
        "\nfull lists (removed, tab, kept, tab, why): {}/{{lld-misses,gold-misses,lld-data-misses,icf-extra}}.txt",
        scratch.display()
    );
    println!(
        "why two functions differ: {} explain --mode all SYMBOL SYMBOL $(grep /inputs/ {})",
        icf.display(),
        corpus.dir.join("link-args.txt").display()
    );

    let mut text_sizes = links.text_sizes;
    let mut folded = Vec::new();
    for linker in [Linker::Lld, Linker::Bfd] {
        for mode in ["safe", "all"] {
            text_sizes.push(icf_link(&corpus, &scratch, &icf, mode, linker)?);
        }
        let name = linker.name();
        folded.push((
            linker,
            scratch.join(format!("icf-safe-{name}")),
            scratch.join(name),
        ));
    }
    print_text_sizes(&text_sizes);
    crate::shrink_check::run(&corpus, &scratch, &icf, &folded)?;
    println!(
        "\nicf report --mode all: {:.1} ms wall (fastest of {TIMED_RUNS}); \
         load {:.1} ms, lift {:.1} ms, partition {:.1} ms, plan {:.1} ms",
        timing.wall.as_secs_f64() * 1e3,
        timing.load,
        timing.lift,
        timing.partition,
        timing.plan
    );

    let coverage = lld.matched_percent();
    if coverage < min_coverage {
        bail!("icf makes {coverage:.2}% of lld's folds, below --min-coverage {min_coverage}%");
    }
    Ok(())
}

/// Builds the release `icf` of this workspace and returns its path.
pub(crate) fn build_icf() -> Result<PathBuf> {
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

/// What the replayed links produced.
#[derive(Debug)]
struct Links {
    /// The `.text` of every link, in link order.
    text_sizes: Vec<TextSize>,
    /// The map file of the plain lld link.
    lld_map: String,
    /// What `--print-icf-sections` printed, for lld `--icf=all`, lld
    /// `--icf=all --ignore-data-address-equality` and gold `--icf=all`.
    lld_all_messages: String,
    lld_data_messages: String,
    gold_all_messages: String,
}

/// The `.text` size of one link; `baseline` names the plain link it saves against.
#[derive(Debug)]
struct TextSize {
    label: String,
    bytes: u64,
    baseline: Option<&'static str>,
}

/// One replayed link: the linker, the ICF flags (`-Wl,` added; empty for the
/// plain link) and whether to keep what it prints.
struct LinkRun {
    linker: Linker,
    icf_flags: &'static [&'static str],
    keep_messages: Option<fn(&mut Links) -> &mut String>,
}

const ICF_ALL: &[&str] = &["--icf=all"];
const ICF_ALL_DATA: &[&str] = &["--icf=all", "--ignore-data-address-equality"];
const ICF_SAFE: &[&str] = &["--icf=safe"];

fn link_all(corpus: &Corpus, scratch: &Path) -> Result<Links> {
    let plain = |linker| LinkRun {
        linker,
        icf_flags: &[],
        keep_messages: None,
    };
    let with = |linker, icf_flags, keep_messages| LinkRun {
        linker,
        icf_flags,
        keep_messages,
    };
    let mut runs = vec![
        plain(Linker::Lld),
        with(Linker::Lld, ICF_SAFE, None),
        with(Linker::Lld, ICF_ALL, Some(|l| &mut l.lld_all_messages)),
        with(
            Linker::Lld,
            ICF_ALL_DATA,
            Some(|l| &mut l.lld_data_messages),
        ),
        plain(Linker::Gold),
        with(Linker::Gold, ICF_SAFE, None),
        with(Linker::Gold, ICF_ALL, Some(|l| &mut l.gold_all_messages)),
        plain(Linker::Bfd),
    ];
    if find_program("mold").is_some() {
        runs.push(plain(Linker::Mold));
        runs.push(with(Linker::Mold, ICF_ALL, None));
    }
    let map = scratch.join("lld.map");
    let mut links = Links {
        text_sizes: Vec::new(),
        lld_map: String::new(),
        lld_all_messages: String::new(),
        lld_data_messages: String::new(),
        gold_all_messages: String::new(),
    };
    for run in runs {
        let name = run.linker.name();
        let label = [name]
            .iter()
            .chain(run.icf_flags)
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        let file = label.replace(" --", "-").replace('=', "-");
        let mut extra: Vec<String> = run.icf_flags.iter().map(|f| format!("-Wl,{f}")).collect();
        if run.keep_messages.is_some() {
            extra.push("-Wl,--print-icf-sections".into());
        }
        if run.linker == Linker::Lld && run.icf_flags.is_empty() {
            extra.push(format!("-Wl,-Map={}", map.display()));
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let output = scratch.join(file);
        let mut command = corpus.link_command(run.linker, &output, &extra)?;
        let result = capture(&mut command).with_context(|| format!("linking with {label}"))?;
        if let Some(field) = run.keep_messages {
            let messages = field(&mut links);
            messages.push_str(&String::from_utf8_lossy(&result.stdout));
            messages.push_str(&String::from_utf8_lossy(&result.stderr));
        }
        links.text_sizes.push(TextSize {
            label,
            bytes: text_size(&output)?,
            baseline: (!run.icf_flags.is_empty()).then_some(name),
        });
    }
    links.lld_map =
        fs::read_to_string(&map).with_context(|| format!("reading {}", map.display()))?;
    Ok(links)
}

/// `icf link --mode MODE` around the plain link with `linker`: icf folds the
/// inputs and the linker links the result, which must search exactly like the
/// plain link for every one of `SEARCHES`, and pass `icf verify` against the
/// plain link (both linked again with `-q` for it: the relocations tell
/// addresses from numbers; `-q` changes no `.text`).
fn icf_link(
    corpus: &Corpus,
    scratch: &Path,
    icf: &Path,
    mode: &str,
    linker: Linker,
) -> Result<TextSize> {
    let name = linker.name();
    let label = format!("icf link --mode {mode}, then {name}");
    let output = scratch.join(format!("icf-{mode}-{name}"));
    let link = corpus.link_command(linker, &output, &[])?;
    capture(&mut icf_link_command(icf, &[], mode, &link))
        .with_context(|| format!("linking with {label}"))?;
    // ripgrep is Rust: no one-definition rule to assume. Both links must
    // verify, with `-q` and without (then the input objects the maps name
    // say what each field meant), and search like their plain links.
    for kept_relocations in [true, false] {
        let summary = verify_link(corpus, scratch, icf, mode, linker, false, kept_relocations)?;
        println!("{summary}");
    }
    // `icf link --verify` proves its own output (the plain link beside it
    // and both maps are its own) or, with --strict, fails.
    let proved = scratch.join(format!("icf-{mode}-{name}-verified"));
    let link = corpus.link_command(linker, &proved, &[])?;
    capture(&mut icf_link_command(icf, &["--verify"], mode, &link))
        .with_context(|| format!("icf link --strict --verify --mode {mode} with {name}"))?;
    println!("icf link --strict --verify --mode {mode} ({name}): proved");
    let plain = scratch.join(name);
    for search in SEARCHES {
        let (expected, actual) = (run_search(&plain, search)?, run_search(&output, search)?);
        if expected != actual {
            bail!(
                "{} searches differently from {} (`rg {}`)",
                output.display(),
                plain.display(),
                search.join(" ")
            );
        }
    }
    Ok(TextSize {
        label,
        bytes: text_size(&output)?,
        baseline: Some(name),
    })
}

/// `icf link --strict FLAGS --mode MODE -- LINK`, with `link`'s environment.
pub(crate) fn icf_link_command(icf: &Path, flags: &[&str], mode: &str, link: &Command) -> Command {
    let mut command = Command::new(icf);
    command
        .args(["link", "--strict"])
        .args(flags)
        .args(["--mode", mode, "--"])
        .arg(link.get_program())
        .args(link.get_args());
    for (key, value) in link.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command
}

/// Links the corpus plainly and through `icf link --mode MODE`, both with
/// `-q` or both without, each with its map, and proves the folded binary
/// against the plain one with `icf verify`: its summary, or an error with
/// the first difference.
pub(crate) fn verify_link(
    corpus: &Corpus,
    scratch: &Path,
    icf: &Path,
    mode: &str,
    linker: Linker,
    assume_odr: bool,
    kept_relocations: bool,
) -> Result<String> {
    let name = linker.name();
    let (suffix, q): (&str, &[&str]) = match kept_relocations {
        true => ("-q", &["-Wl,-q"]),
        false => ("-maps", &[]),
    };
    let plain = scratch.join(format!("{name}{suffix}"));
    // PLAIN's map tells verify which input file each section came from.
    let plain_map = scratch.join(format!("{name}{suffix}.map"));
    let link_with_map = |output: &Path, map: &Path| {
        let map_flag = format!("-Wl,-Map={}", map.display());
        let mut extra = q.to_vec();
        extra.push(&map_flag);
        corpus.link_command(linker, output, &extra)
    };
    if !plain.exists() || !plain_map.exists() {
        capture(&mut link_with_map(&plain, &plain_map)?)
            .with_context(|| format!("linking with {name}{suffix}"))?;
    }
    let folded = scratch.join(format!("icf-{mode}-{name}{suffix}"));
    let folded_map = scratch.join(format!("icf-{mode}-{name}{suffix}.map"));
    let link = link_with_map(&folded, &folded_map)?;
    capture(&mut icf_link_command(icf, &[], mode, &link))
        .with_context(|| format!("icf link --mode {mode}{suffix} with {name}"))?;
    let started = Instant::now();
    let mut verify = Command::new(icf);
    verify.args(["verify", "--mode", mode]);
    if assume_odr {
        verify.arg("--assume-odr");
    }
    verify.arg("--plain-map").arg(&plain_map);
    verify.arg("--folded-map").arg(&folded_map);
    verify.arg(&plain).arg(&folded);
    let output = verify
        .output()
        .with_context(|| format!("running {}", display(&verify)))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "icf verify: {} does not verify against {}:\n{stdout}{}",
            folded.display(),
            plain.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(format!(
        "icf verify --mode {mode} ({name}{suffix}): {} ({:.1} s)",
        stdout.trim(),
        started.elapsed().as_secs_f64()
    ))
}

/// Searches whose output does not depend on timing or thread count: regex
/// engines, directory walking, ignore rules, sorting, printing, errors.
pub(crate) const SEARCHES: &[&[&str]] = &[
    &[
        "--no-config",
        "--sort=path",
        "--line-number",
        "--ignore-case",
        r"struct\s+\w*(max|size)\w*",
        "/usr/include",
    ],
    &[
        "--no-config",
        "-j1",
        "--sort=path",
        "--count",
        "-w",
        "include",
        "/usr/include/linux",
    ],
    &[
        "--no-config",
        "--files",
        "--sort=path",
        "/usr/include/x86_64-linux-gnu",
    ],
    &[
        "--no-config",
        "--sort=path",
        "-F",
        "-x",
        "#endif",
        "-l",
        "/usr/include/sys",
    ],
    &[
        "--no-config",
        "-P",
        r"(?<=#define )__\w+",
        "-o",
        "/usr/include/stdio.h",
    ],
    &[
        "--no-config",
        "--sort=path",
        "-C2",
        "-m3",
        "-e",
        "pthread_create",
        "-e",
        "pthread_join",
        "/usr/include",
    ],
    &[
        "--no-config",
        "-U",
        "--multiline-dotall",
        r"typedef struct\s*\{.*?\} FILE",
        "/usr/include/stdio.h",
    ],
    &[
        "--no-config",
        "--sort=path",
        "-r",
        "$2:$1",
        r"(\w+)_(t)\b",
        "-o",
        "/usr/include/stdint.h",
    ],
    &["--no-config", "--type-list"],
    &[
        "--no-config",
        "no-such-text-anywhere-xyzzy",
        "/usr/include/stdio.h",
    ],
    &["--no-config", "--no-such-flag"],
];

/// What `rg` at `binary` prints for `search`: exit code, stdout and stderr.
pub(crate) fn run_search(
    binary: &Path,
    search: &[&str],
) -> Result<(Option<i32>, Vec<u8>, Vec<u8>)> {
    let mut command = Command::new(binary);
    command.args(search);
    let output = command
        .output()
        .with_context(|| format!("could not start `{}`", display(&command)))?;
    Ok((output.status.code(), output.stdout, output.stderr))
}

/// The size of the `.text` section of a linked file, from `size -A -d`.
pub(crate) fn text_size(path: &Path) -> Result<u64> {
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
    const START: &str = "ICF folding section '";
    text.lines()
        .filter_map(|line| {
            let rest = &line[line.find(START)? + START.len()..];
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
/// Lines are `VMA LMA SIZE ALIGN` in hex, then the name, indented by one
/// space for an output section, nine for an input section and seventeen for
/// a symbol.
fn parse_lld_map(text: &str) -> Result<HashMap<String, u64>> {
    let mut sections = HashMap::new();
    for line in text.lines().skip(1) {
        let mut rest = line;
        let mut numbers = [0u64; 4];
        for number in &mut numbers {
            rest = rest.trim_start();
            let end = rest.find(' ').unwrap_or(rest.len());
            *number = u64::from_str_radix(&rest[..end], 16)
                .with_context(|| format!("unexpected lld map line `{line}`"))?;
            rest = &rest[end..];
        }
        let name = rest.trim_start();
        if rest.len() - name.len() == 9 {
            sections.insert(name.to_owned(), numbers[2]);
        }
    }
    if sections.is_empty() {
        bail!("the lld map file lists no input sections");
    }
    Ok(sections)
}

/// Where icf's plan puts a section: its class and what happens to it.
#[derive(Debug)]
struct Placement {
    class: usize,
    /// `kept`, `alias`, `thunk` or `keep`.
    action: String,
    reason: Option<String>,
}

/// Every section of icf's JSON report that is in a class, by `FILE:(SECTION)`.
/// A section split into several pieces is placed by its first piece.
fn icf_placements(report: &Value) -> Result<HashMap<String, Placement>> {
    let groups = report["groups"]
        .as_array()
        .context("`icf report --format json` has no groups")?;
    let mut placements = HashMap::new();
    for (class, group) in groups.iter().enumerate() {
        let members = group["members"]
            .as_array()
            .context("an icf report group has no members")?;
        for member in members {
            let field = |name: &str| {
                member[name]
                    .as_str()
                    .with_context(|| format!("an icf report member has no {name}"))
            };
            let key = format!("{}:({})", field("object")?, field("section")?);
            placements.entry(key).or_insert(Placement {
                class,
                action: field("action")?.to_owned(),
                reason: member["reason"].as_str().map(str::to_owned),
            });
        }
    }
    Ok(placements)
}

/// How a peer's removals compare with icf's plan.
#[derive(Debug)]
struct Comparison<'a> {
    /// Removals of sections from files outside the corpus (crt objects, libc).
    outside: usize,
    /// Removals of empty sections (size 0 in the plain link).
    empty: usize,
    /// The rest: what icf is measured against.
    compared: usize,
    /// Compared removals that icf removes too, into any class.
    removed: usize,
    /// Compared removals where icf folds the pair without a thunk: the removed
    /// section becomes an alias in the class of the peer's kept copy, or
    /// icf keeps it and removes the peer's kept copy instead.
    matched: usize,
    /// Compared removals that icf turns into a thunk to the class of the
    /// peer's kept copy instead (a jump remains; counted among the misses).
    thunked: usize,
    /// The compared removals icf does not match, each with why.
    misses: Vec<(&'a Fold, String)>,
}

fn compare<'a>(
    peer: &'a [Fold],
    placements: &HashMap<String, Placement>,
    live: &HashMap<String, u64>,
    inputs_prefix: &str,
) -> Comparison<'a> {
    let mut comparison = Comparison {
        outside: 0,
        empty: 0,
        compared: 0,
        removed: 0,
        matched: 0,
        thunked: 0,
        misses: Vec::new(),
    };
    for fold in peer {
        if !fold.removed.starts_with(inputs_prefix) {
            comparison.outside += 1;
            continue;
        }
        if live.get(&fold.removed) == Some(&0) {
            comparison.empty += 1;
            continue;
        }
        comparison.compared += 1;
        let removed = placements.get(&fold.removed);
        let kept = placements.get(&fold.kept);
        let aliased = removed.is_some_and(|r| r.action == "alias");
        comparison.removed += usize::from(aliased);
        match (removed, kept) {
            (Some(r), Some(k)) if r.class == k.class => {
                // The same fold with the other copy kept counts too.
                if aliased || r.action == "kept" && k.action == "alias" {
                    comparison.matched += 1;
                } else {
                    comparison.thunked += usize::from(r.action == "thunk");
                    let why = match r.action.as_str() {
                        "kept" => {
                            format!("same class, icf keeps it and the other is a {}", k.action)
                        }
                        action => match &r.reason {
                            Some(reason) => format!("same class, {action}: {reason}"),
                            None => format!("same class, {action} (no reason given)"),
                        },
                    };
                    comparison.misses.push((fold, why));
                }
            }
            (Some(_), Some(_)) => comparison
                .misses
                .push((fold, "icf puts the two in different classes".into())),
            (None, _) | (_, None) => comparison
                .misses
                .push((fold, "icf finds nothing identical to one of the two".into())),
        }
    }
    comparison
}

impl Comparison<'_> {
    fn matched_percent(&self) -> f64 {
        percent(self.matched, self.compared)
    }

    /// Prints the counts, the misses by reason and the first `listed` misses.
    fn print(&self, peer: &str, listed: usize, short: &dyn Fn(&str) -> String) {
        println!(
            "\nicf against {peer}: {} removals compared ({} from files outside the corpus and {} of empty sections left out)",
            self.compared, self.outside, self.empty
        );
        println!(
            "  icf removes the section too:          {:>6}  {:>6.2}%",
            self.removed,
            percent(self.removed, self.compared)
        );
        println!(
            "  icf folds the pair (no thunk):         {:>6}  {:>6.2}%",
            self.matched,
            self.matched_percent()
        );
        println!(
            "  icf makes it a thunk to that copy:      {:>6}  {:>6.2}%",
            self.thunked,
            percent(self.thunked, self.compared)
        );
        if self.misses.is_empty() {
            return;
        }
        println!("  why icf does not match the other {}:", self.misses.len());
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        for (_, why) in &self.misses {
            *kinds.entry(why_kind(why)).or_default() += 1;
        }
        let mut kinds: Vec<(String, usize)> = kinds.into_iter().collect();
        kinds.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
        for (kind, count) in kinds {
            println!("    {count:>6}  {kind}");
        }
        if listed == 0 {
            return;
        }
        println!(
            "  {peer} removes, icf does not match (first {} of {}):",
            listed.min(self.misses.len()),
            self.misses.len()
        );
        for (fold, why) in self.misses.iter().take(listed) {
            println!(
                "    {}\n      kept: {}\n      why:  {why}",
                short(&fold.removed),
                short(&fold.kept)
            );
        }
    }
}

/// A miss's reason without the names in it, to count reasons by kind:
/// `address taken in f` and `referenced from data in .rodata.x` lose the place.
fn why_kind(why: &str) -> String {
    let Some((action, reason)) = why.split_once(": ") else {
        return why.to_owned();
    };
    match reason.split_once(" in ") {
        Some((head, _)) if !head.contains('(') => format!("{action}: {head}"),
        _ => why.to_owned(),
    }
}

/// icf's removals that lld does not make, among the sections live in the lld
/// link, largest first.
fn icf_only<'a>(icf: &'a [Fold], lld: &[Fold], live: &HashMap<String, u64>) -> Vec<&'a Fold> {
    let lld_removed: HashSet<&str> = lld.iter().map(|f| f.removed.as_str()).collect();
    let mut extra: Vec<&Fold> = icf
        .iter()
        .filter(|fold| live.contains_key(&fold.removed) && !lld_removed.contains(&*fold.removed))
        .collect();
    extra.sort_by_key(|fold| std::cmp::Reverse(live[&fold.removed]));
    extra
}

fn print_icf_only(
    extra: &[&Fold],
    gold: &[Fold],
    lld_data: &[Fold],
    live: &HashMap<String, u64>,
    short: &dyn Fn(&str) -> String,
) {
    let gold_removed: HashSet<&str> = gold.iter().map(|f| f.removed.as_str()).collect();
    let lld_data_removed: HashSet<&str> = lld_data.iter().map(|f| f.removed.as_str()).collect();
    let bytes: u64 = extra.iter().map(|fold| live[&fold.removed]).sum();
    let code = extra
        .iter()
        .filter(|fold| fold.removed.contains(":(.text"))
        .count();
    let by_gold = extra
        .iter()
        .filter(|fold| gold_removed.contains(&*fold.removed))
        .count();
    let by_lld_data = extra
        .iter()
        .filter(|fold| lld_data_removed.contains(&*fold.removed))
        .count();
    println!(
        "\nicf removes, lld --icf=all does not, live in the lld link: {} sections ({code} code), \
         {bytes} bytes;\n  gold --icf=all removes {by_gold} of them, lld with \
         --ignore-data-address-equality {by_lld_data}. First {}, largest first:",
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
}

fn print_text_sizes(sizes: &[TextSize]) {
    println!(
        "\n.text size                                          bytes   saved against the same linker without ICF"
    );
    for size in sizes {
        let base = size
            .baseline
            .and_then(|linker| sizes.iter().find(|other| other.label == linker));
        match base {
            Some(base) => {
                let saved =
                    100.0 * (base.bytes as f64 - size.bytes as f64) / base.bytes.max(1) as f64;
                println!("  {:<46} {:>10}   {saved:.2}%", size.label, size.bytes);
            }
            None => println!("  {:<46} {:>10}", size.label, size.bytes),
        }
    }
}

/// Writes `folds` one per line: the removed section, the kept one and why
/// icf does not match the fold, separated by tabs.
fn write_misses(path: &Path, folds: &[(&Fold, String)]) -> Result<()> {
    let text: String = folds
        .iter()
        .map(|(fold, why)| format!("{}\t{}\t{why}\n", fold.removed, fold.kept))
        .collect();
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn percent(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// The wall time of the fastest of `TIMED_RUNS` runs of
/// `icf report --mode all --format json`, and the phase times (milliseconds)
/// that run reported.
#[derive(Debug)]
struct Timing {
    wall: Duration,
    load: f64,
    lift: f64,
    partition: f64,
    plan: f64,
}

/// Times icf; also returns the JSON report of the fastest run.
fn time_icf(icf: &Path, corpus: &Corpus) -> Result<(Timing, Value)> {
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
    let report: Value =
        serde_json::from_slice(&json).context("parsing `icf report --format json`")?;
    let phase = |name: &str| -> Result<f64> {
        report["timings_ms"][name]
            .as_f64()
            .with_context(|| format!("`icf report --format json` has no timings_ms.{name}"))
    };
    let timing = Timing {
        wall,
        load: phase("load")?,
        lift: phase("lift")?,
        partition: phase("partition")?,
        plan: phase("plan")?,
    };
    Ok((timing, report))
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
    fn parses_input_sections_of_an_lld_map() -> Result<()> {
        let map = "             VMA              LMA     Size Align Out     In      Symbol\n\
                   \x20         200200           200200       2a    16 .text\n\
                   \x20         200200           200200       2a    16         a.o:(.text.f)\n\
                   \x20         200200           200200        0     1                 f\n";
        let sections = parse_lld_map(map)?;
        assert_eq!(sections.len(), 1);
        assert_eq!(sections.get("a.o:(.text.f)"), Some(&0x2a));
        Ok(())
    }

    #[test]
    fn counts_reasons_without_places() {
        assert_eq!(
            why_kind("same class, thunk: address taken in f"),
            "same class, thunk: address taken"
        );
        assert_eq!(
            why_kind(
                "same class, keep: keeps its own symbols (COMDAT group or global in another object)"
            ),
            "same class, keep: keeps its own symbols (COMDAT group or global in another object)"
        );
    }
}
