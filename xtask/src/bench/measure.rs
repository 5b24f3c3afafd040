//! Measuring one corpus: the links (`variants`), timed round-robin under
//! GNU time (wall time, peak RSS), one untimed `icf link --report` each,
//! `.text` and stripped sizes, behaviour against the plain lld link,
//! `icf verify`, on synthetic corpora `icf fold` alone, on real ones
//! `icf report` on the plain binaries (`estimate.rs`), and the I/O floor
//! (`floor.rs`); and the rows and per-corpus result those fill in.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use super::GNU_TIME;
use super::estimate::{Estimate, estimates};
use super::floor::{FloorRounds, IoFloor};
use super::post_link;
use super::prepare::{Check, Prepared, SyntheticInfo};
use super::set_aside::SetAside;
use crate::corpus::{Corpus, Linker};
use crate::peer;
use crate::process::{capture, display, shell_line};

/// One way of linking a corpus.
#[derive(Debug, Clone)]
pub(super) struct Variant {
    /// `lld --icf=all`, `icf safe + lld`, ...
    pub(super) label: String,
    /// File name of its output.
    pub(super) file: String,
    pub(super) linker: Linker,
    pub(super) kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// The linker alone, with this `--icf=` value (None: no ICF flag).
    Peer(Option<&'static str>),
    /// `icf link --mode MODE` in front of the plain link, with its cache
    /// as it says.
    Icf(&'static str, Cache),
}

/// The state of icf's cache when an `icf link` row is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cache {
    /// Empty before every run: a first link, which also writes the cache.
    Cold,
    /// Filled by an untimed link of the same inputs: a relink.
    Warm,
    /// As an untimed link left it in which every object file on the
    /// command line (the program's own code; archives are its
    /// dependencies) had other bytes at the same path: a relink after a
    /// change to each of the program's units, the most that touching one
    /// source file of ripgrep recompiles. Restored before every run.
    Changed,
}

/// Every link of a corpus; the first (plain lld) is the reference.
fn variants() -> Vec<Variant> {
    let peer = |linker: Linker, icf: Option<&'static str>| {
        let name = linker.name();
        let (label, file) = match icf {
            Some(icf) => (format!("{name} --icf={icf}"), format!("{name}-icf-{icf}")),
            None => (name.to_owned(), name.to_owned()),
        };
        Variant {
            label,
            file,
            linker,
            kind: Kind::Peer(icf),
        }
    };
    let icf = |mode: &'static str, linker: Linker| Variant {
        label: format!("icf {mode} + {}", linker.name()),
        file: format!("icf-{mode}-{}", linker.name()),
        linker,
        kind: Kind::Icf(mode, Cache::Cold),
    };
    let warm = |mode: &'static str, linker: Linker| Variant {
        label: format!("icf {mode} + {}, warm", linker.name()),
        file: format!("icf-{mode}-{}-warm", linker.name()),
        linker,
        kind: Kind::Icf(mode, Cache::Warm),
    };
    let changed = |mode: &'static str, linker: Linker| Variant {
        label: format!("icf {mode} + {}, own objects changed", linker.name()),
        file: format!("icf-{mode}-{}-changed", linker.name()),
        linker,
        kind: Kind::Icf(mode, Cache::Changed),
    };
    vec![
        peer(Linker::Lld, None),
        peer(Linker::Lld, Some("safe")),
        peer(Linker::Lld, Some("all")),
        peer(Linker::Gold, None),
        peer(Linker::Gold, Some("safe")),
        peer(Linker::Gold, Some("all")),
        peer(Linker::Mold, None),
        peer(Linker::Mold, Some("all")),
        peer(Linker::Bfd, None),
        icf("safe", Linker::Lld),
        icf("all", Linker::Lld),
        warm("safe", Linker::Lld),
        warm("all", Linker::Lld),
        changed("safe", Linker::Lld),
        icf("safe", Linker::Bfd),
        icf("all", Linker::Bfd),
    ]
}

impl Variant {
    /// The command producing `output`; `report` is where `icf link` writes
    /// its JSON; an `icf link` keeps its cache under `scratch` (a cold
    /// row's is emptied first, its old one moved to `set_aside`).
    fn command(
        &self,
        corpus: &Corpus,
        icf: &Path,
        (scratch, set_aside): (&Path, &SetAside),
        output: &Path,
        report: Option<&Path>,
    ) -> Result<Command> {
        let mut extra = Vec::new();
        if self.linker == Linker::Mold {
            // mold forks and exits before its worker finishes unmapping; this
            // keeps the whole link in the process `time` waits for.
            extra.push("-Wl,--no-fork".to_owned());
        }
        if let Kind::Peer(Some(icf)) = self.kind {
            extra.push(format!("-Wl,--icf={icf}"));
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let link = corpus.link_command(self.linker, output, &extra)?;
        let Kind::Icf(mode, cache) = self.kind else {
            return Ok(link);
        };
        let cache_dir = cache_dir(scratch, &self.file);
        match cache {
            Cache::Cold => set_aside.remove(&cache_dir)?,
            Cache::Changed => {
                set_aside.remove(&cache_dir)?;
                link_tree(&primed_cache(scratch, &self.file), &cache_dir)?;
            }
            Cache::Warm => {}
        }
        let mut command = Command::new(icf);
        command.args(["link", "--strict", "--mode", mode, "--cache-dir"]);
        command.arg(&cache_dir);
        if let Some(report) = report {
            command.arg("--report").arg(report);
        }
        command
            .arg("--")
            .arg(link.get_program())
            .args(link.get_args());
        copy_env(&link, &mut command);
        Ok(command)
    }

    pub(super) fn plain_label(&self) -> &'static str {
        self.linker.name()
    }

    /// An icf row's mode (`safe` for a peer row).
    fn mode(&self) -> &'static str {
        match self.kind {
            Kind::Icf(mode, _) => mode,
            Kind::Peer(_) => "safe",
        }
    }
}

fn copy_env(from: &Command, to: &mut Command) {
    for (key, value) in from.get_envs() {
        match value {
            Some(value) => to.env(key, value),
            None => to.env_remove(key),
        };
    }
}

/// The cache of the `icf link` row whose output is named `file`.
fn cache_dir(scratch: &Path, file: &str) -> PathBuf {
    scratch.join("cache").join(file)
}

/// Where a changed row's cache is kept as the priming link left it (the
/// cache of a warm row named `FILE-primed`).
fn primed_cache(scratch: &Path, file: &str) -> PathBuf {
    cache_dir(scratch, &format!("{file}-primed"))
}

/// Recreates `from`'s files in `to` as hard links (cache entries are never
/// written in place, so the copy cannot change the original).
fn link_tree(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let Ok(entries) = fs::read_dir(from) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry?.path();
        let target = to.join(path.file_name().unwrap_or_default());
        if path.is_dir() {
            link_tree(&path, &target)?;
        } else {
            fs::hard_link(&path, &target)
                .with_context(|| format!("linking {} to {}", path.display(), target.display()))?;
        }
    }
    Ok(())
}

/// `corpus` with each object file on its command line replaced by a copy
/// in `dir`, holding the original's bytes, or with `changed` eight zero
/// bytes more after its end (which no reader looks at): for the cache,
/// other bytes at the same path.
fn with_own_objects_copied(corpus: &Corpus, dir: &Path, changed: bool) -> Result<Corpus> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut copied = corpus.clone();
    for arg in &mut copied.args {
        let path = Path::new(arg.as_str());
        if path.extension().is_none_or(|e| e != "o") || !path.is_file() {
            continue;
        }
        let Some(name) = path.file_name() else {
            continue;
        };
        let copy = dir.join(name);
        let mut bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        if changed {
            bytes.extend_from_slice(&[0; 8]);
        }
        fs::write(&copy, bytes).with_context(|| format!("writing {}", copy.display()))?;
        *arg = copy.display().to_string();
    }
    Ok(copied)
}

/// The corpus a row links: a changed row's own objects are copies (see
/// [`Cache::Changed`]) with their original bytes.
fn row_corpus(prepared: &Prepared, kind: Kind) -> Result<Corpus> {
    match kind {
        Kind::Icf(_, Cache::Changed) => with_own_objects_copied(
            &prepared.corpus,
            &prepared.scratch.join("changed-objects"),
            false,
        ),
        _ => Ok(prepared.corpus.clone()),
    }
}

/// What one link produced and cost.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) variant: Variant,
    /// Why the link failed (its other figures are then absent).
    pub(super) failure: Option<Failure>,
    /// Wall time of every round, in order.
    pub(super) walls: Vec<Duration>,
    /// Peak RSS over the rounds, KiB.
    pub(super) rss_kib: u64,
    pub(super) text: u64,
    pub(super) stripped: u64,
    pub(super) behaviour: Behaviour,
    /// `icf link --report` of the untimed reporting run.
    pub(super) report: Option<Value>,
}

/// A failed link: the linker's first error and the file with the command and its output.
#[derive(Debug, Clone)]
pub(super) struct Failure {
    pub(super) summary: String,
    pub(super) log: PathBuf,
}

impl Failure {
    pub(super) fn describe(&self) -> String {
        format!(
            "{} (command and output: {})",
            self.summary,
            self.log.display()
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Behaviour {
    /// The plain lld link every other output is compared with.
    Reference,
    Same,
    Differs(String),
}

impl Row {
    /// `variant`, not linked yet.
    fn new(variant: Variant) -> Row {
        Row {
            variant,
            failure: None,
            walls: Vec::new(),
            rss_kib: 0,
            text: 0,
            stripped: 0,
            behaviour: Behaviour::Same,
            report: None,
        }
    }

    pub(super) fn best(&self) -> Option<Duration> {
        self.walls.iter().min().copied()
    }

    pub(super) fn ok(&self) -> bool {
        self.failure.is_none()
    }
}

/// Every figure of one corpus.
#[derive(Debug)]
pub(super) struct CorpusResult {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) rows: Vec<Row>,
    pub(super) synthetic: Option<SyntheticInfo>,
    /// Synthetic corpora: peak RSS (KiB) of `icf fold` alone, by mode.
    pub(super) fold_rss_kib: Vec<(&'static str, u64)>,
    /// Why `icf fold` failed, if it did.
    pub(super) fold_error: Option<String>,
    /// The I/O floor; none when the link whose rewritten files it writes
    /// failed.
    pub(super) io_floor: Option<IoFloor>,
    /// Real corpora: `icf report` on the plain binaries against `icf link`.
    pub(super) estimates: Vec<Estimate>,
    /// Real corpora: `icf shrink` after the link, per build.
    pub(super) post_link: Vec<post_link::Build>,
}

impl CorpusResult {
    pub(super) fn row(&self, label: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|row| row.variant.label == label && row.ok())
    }

    /// `.text` saved by `row` against the same linker's plain link, percent.
    pub(super) fn saved_percent(&self, row: &Row) -> Option<f64> {
        if row.variant.kind == Kind::Peer(None) || !row.ok() {
            return None;
        }
        let plain = self.row(row.variant.plain_label())?;
        Some(100.0 * (plain.text as f64 - row.text as f64) / plain.text.max(1) as f64)
    }

    /// The peer `--icf=all` link saving the most `.text`, and its saving.
    pub(super) fn best_peer_all(&self) -> Option<(&Row, f64)> {
        self.rows
            .iter()
            .filter(|row| row.variant.kind == Kind::Peer(Some("all")))
            .filter_map(|row| Some((row, self.saved_percent(row)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The smallest stripped file among the peers' links.
    pub(super) fn best_peer_stripped(&self) -> Option<u64> {
        self.rows
            .iter()
            .filter(|row| matches!(row.variant.kind, Kind::Peer(_)) && row.ok())
            .map(|row| row.stripped)
            .min()
    }
}

/// Links, measures and runs every variant of one corpus.
/// What the timed links would delete goes to `set_aside`.
pub(super) fn measure(
    prepared: &Prepared,
    icf: &Path,
    runs: u32,
    set_aside: &SetAside,
) -> Result<CorpusResult> {
    let places = Places::fresh(&prepared.scratch)?;
    let mut rows: Vec<Row> = variants().into_iter().map(Row::new).collect();
    let mut floor = floor_rounds(prepared, &rows);
    let scratch = (prepared.scratch.as_path(), set_aside);
    timed_rounds(
        prepared,
        icf,
        runs,
        &places,
        &mut rows,
        floor.as_mut(),
        set_aside,
    )?;
    let io_floor = finish_floor(floor, &rows, set_aside)?;
    write_reports(prepared, icf, scratch, &places, &rows)?;
    measure_outputs(prepared, &places, &mut rows)?;
    let estimates = match prepared.synthetic {
        None => estimates(
            icf,
            &rows,
            &places.out,
            &places.reports,
            &places.rss_file,
            runs,
        ),
        Some(_) => Vec::new(),
    };
    check_behaviour(prepared, &places.out, &mut rows)?;
    verify_folds(prepared, icf, &mut rows);
    let post_link = match prepared.synthetic {
        None => post_link::measure(prepared, icf, runs, &rows, &places.rss_file)?,
        Some(_) => Vec::new(),
    };
    let (fold_rss_kib, fold_error) = match &prepared.synthetic {
        Some(info) => fold_alone(icf, info, scratch, &places.rss_file),
        None => (Vec::new(), None),
    };
    Ok(CorpusResult {
        name: prepared.name.clone(),
        description: prepared.description.clone(),
        rows,
        synthetic: prepared.synthetic.clone(),
        fold_rss_kib,
        fold_error,
        io_floor,
        estimates,
        post_link,
    })
}

/// The mode of the cold `icf link` in front of lld whose rewritten files
/// the I/O floor writes.
const FLOOR_MODE: &str = "safe";

/// The I/O floor (`floor.rs`), measured a round at a time after each
/// round of the timed links: it writes the files the cold `icf FLOOR_MODE
/// + lld` link of that round left in its cache.
fn floor_rounds(prepared: &Prepared, rows: &[Row]) -> Option<FloorRounds> {
    let cold = rows.iter().find(|row| {
        row.variant.linker == Linker::Lld && row.variant.kind == Kind::Icf(FLOOR_MODE, Cache::Cold)
    })?;
    Some(FloorRounds::new(
        &prepared.corpus,
        &cache_dir(&prepared.scratch, &cold.variant.file),
        &cold.variant.label,
        &prepared.scratch.join("floor"),
    ))
}

/// Whether the link whose rewritten files the floor writes has not failed.
fn floor_link_ok(floor: &FloorRounds, rows: &[Row]) -> bool {
    rows.iter()
        .any(|row| row.ok() && row.variant.label == floor.rewritten_by())
}

/// The floor measured, its copies set aside; none when the link whose
/// rewritten files it writes failed.
fn finish_floor(
    floor: Option<FloorRounds>,
    rows: &[Row],
    set_aside: &SetAside,
) -> Result<Option<IoFloor>> {
    let Some(floor) = floor else {
        return Ok(None);
    };
    let linked = floor_link_ok(&floor, rows);
    let floor = floor.finish(set_aside)?;
    Ok(linked.then_some(floor))
}

/// Where the links of one corpus write, under its scratch directory.
#[derive(Debug)]
struct Places {
    /// The linked outputs (`out/`), overwritten by every bench.
    out: PathBuf,
    /// Each icf link's `--report` (`reports/`).
    reports: PathBuf,
    /// Each failed link's command and output (`failures/`).
    failures: PathBuf,
    /// What GNU time writes (`rss.txt`).
    rss_file: PathBuf,
}

impl Places {
    /// The places under `scratch`, with the reports and failures of an
    /// earlier bench removed.
    fn fresh(scratch: &Path) -> Result<Places> {
        let out = scratch.join("out");
        let reports = scratch.join("reports");
        let failures = scratch.join("failures");
        let _ = fs::remove_dir_all(&failures);
        let _ = fs::remove_dir_all(&reports);
        for dir in [&out, &reports, &failures] {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(Places {
            out,
            reports,
            failures,
            rss_file: scratch.join("rss.txt"),
        })
    }
}

/// The timed links: `runs` rounds of every row still linking, each as people
/// run it (no `--report`), each round followed by one of the I/O `floor`
/// while its link succeeds. A failed link is logged under `failures/` and
/// not run again.
fn timed_rounds(
    prepared: &Prepared,
    icf: &Path,
    runs: u32,
    places: &Places,
    rows: &mut [Row],
    mut floor: Option<&mut FloorRounds>,
    set_aside: &SetAside,
) -> Result<()> {
    let scratch = (prepared.scratch.as_path(), set_aside);
    // A warm row's cache is filled by one untimed link first; a changed
    // row's by a link of its copied objects with other bytes, kept aside.
    for row in rows.iter() {
        let output = places.out.join(&row.variant.file);
        let mut command = match row.variant.kind {
            Kind::Icf(_, Cache::Warm) => {
                row.variant
                    .command(&prepared.corpus, icf, scratch, &output, None)?
            }
            Kind::Icf(_, Cache::Changed) => {
                let changed = with_own_objects_copied(
                    &prepared.corpus,
                    &prepared.scratch.join("changed-objects"),
                    true,
                )?;
                // A warm row of its own, whose cache is where the changed
                // row's runs start from (`primed_cache`).
                set_aside.remove(&primed_cache(&prepared.scratch, &row.variant.file))?;
                Variant {
                    kind: Kind::Icf(row.variant.mode(), Cache::Warm),
                    file: format!("{}-primed", row.variant.file),
                    ..row.variant.clone()
                }
                .command(&changed, icf, scratch, &output, None)?
            }
            _ => continue,
        };
        eprintln!("    filling the cache: {}", row.variant.label);
        capture(&mut command)
            .with_context(|| format!("{}: filling the cache", row.variant.label))?;
    }
    // Round-robin, so a burst of load elsewhere hits one round of every link
    // rather than every round of one.
    for round in 0..runs {
        for row in rows.iter_mut() {
            if !row.ok() {
                continue;
            }
            let variant = &row.variant;
            eprintln!("    round {}/{runs}: {}", round + 1, variant.label);
            let output = places.out.join(&variant.file);
            // Timed as people run it: without `--report`, whose names cost time.
            let corpus = row_corpus(prepared, variant.kind)?;
            let command = variant.command(&corpus, icf, scratch, &output, None)?;
            match timed(&command, &places.rss_file) {
                Ok((wall, rss)) => {
                    row.walls.push(wall);
                    row.rss_kib = row.rss_kib.max(rss);
                }
                Err(error) => {
                    let text = format!("{error:#}");
                    let log = places.failures.join(format!("{}.txt", variant.file));
                    let reproduce = format!(
                        "# reproduce from {}:\n{}\n\n{text}\n",
                        prepared.scratch.display(),
                        shell_line(&command)
                    );
                    fs::write(&log, reproduce)
                        .with_context(|| format!("writing {}", log.display()))?;
                    eprintln!("    FAILED: {}", first_error(&text));
                    row.failure = Some(Failure {
                        summary: first_error(&text),
                        log,
                    });
                }
            }
        }
        if let Some(floor) = floor.as_deref_mut().filter(|f| floor_link_ok(f, rows)) {
            eprintln!("    round {}/{runs}: I/O floor", round + 1);
            floor.round(set_aside)?;
        }
    }
    Ok(())
}

/// One more, untimed, icf link per icf row for its report: phases,
/// aliases, thunks. It writes the same output as the timed rounds.
fn write_reports(
    prepared: &Prepared,
    icf: &Path,
    scratch: (&Path, &SetAside),
    places: &Places,
    rows: &[Row],
) -> Result<()> {
    for row in rows {
        if !row.ok() || !matches!(row.variant.kind, Kind::Icf(..)) {
            continue;
        }
        let output = places.out.join(&row.variant.file);
        let report = places.reports.join(format!("{}.json", row.variant.file));
        let corpus = row_corpus(prepared, row.variant.kind)?;
        let mut command = row
            .variant
            .command(&corpus, icf, scratch, &output, Some(&report))?;
        eprintln!("    report: {}", row.variant.label);
        capture(&mut command)
            .with_context(|| format!("{}: icf link --report", row.variant.label))?;
    }
    Ok(())
}

/// Each linked output's `.text` and stripped sizes, and each icf link's report.
fn measure_outputs(prepared: &Prepared, places: &Places, rows: &mut [Row]) -> Result<()> {
    for row in rows.iter_mut() {
        if !row.ok() {
            continue;
        }
        let output = places.out.join(&row.variant.file);
        row.text = peer::text_size(&output)?;
        row.stripped = stripped_size(&output, &prepared.scratch.join("stripped.tmp"))?;
        if let Kind::Icf(..) = row.variant.kind {
            let path = places.reports.join(format!("{}.json", row.variant.file));
            let text = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            row.report = Some(
                serde_json::from_slice(&text)
                    .with_context(|| format!("parsing {}", path.display()))?,
            );
        }
    }
    Ok(())
}

/// icf's own peak RSS (KiB) on a synthetic corpus, by mode: `icf fold` on
/// the same inputs, without any linker; or why it failed.
fn fold_alone(
    icf: &Path,
    info: &SyntheticInfo,
    (scratch, set_aside): (&Path, &SetAside),
    rss_file: &Path,
) -> (Vec<(&'static str, u64)>, Option<String>) {
    let mut fold_rss_kib = Vec::new();
    let mut fold_error = None;
    for mode in ["safe", "all"] {
        let folded = scratch.join(format!("fold-{mode}"));
        let _ = set_aside.remove(&folded);
        let mut fold = Command::new(icf);
        // A first fold: the cache starts empty, as in the timed cold links.
        let cache = scratch.join("cache").join(format!("fold-{mode}"));
        let _ = set_aside.remove(&cache);
        fold.args(["fold", "--mode", mode, "--cache-dir"])
            .arg(&cache)
            .arg("--out-dir")
            .arg(&folded)
            .args(&info.inputs);
        eprintln!("    icf fold --mode {mode} (peak RSS of icf alone)");
        match timed(&fold, rss_file) {
            Ok((_, rss)) => fold_rss_kib.push((mode, rss)),
            Err(error) => {
                let text = format!("{error:#}");
                eprintln!("    FAILED: {}", first_error(&text));
                fold_error = Some(text);
            }
        }
        let _ = set_aside.remove(&folded);
    }
    (fold_rss_kib, fold_error)
}

/// The first line of a failed command's output that says what went wrong.
pub(super) fn first_error(text: &str) -> String {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    lines
        .find(|line| line.contains("error") || line.contains("undefined reference"))
        .unwrap_or(header)
        .trim()
        .to_owned()
}

/// Runs `command` under GNU time: its wall time and peak RSS (KiB).
pub(super) fn timed(command: &Command, rss_file: &Path) -> Result<(Duration, u64)> {
    timed_output(command, rss_file).map(|(wall, rss, _)| (wall, rss))
}

/// Writes back what earlier commands left in the page cache (`sync`),
/// before anything is timed: otherwise the kernel writes back one link's
/// output (hundreds of MiB on the large corpora) on one of the two cores
/// while the next link runs, and each row pays for whichever ran before.
pub(super) fn write_back() -> Result<()> {
    capture(&mut Command::new("sync")).context("writing back before a timed command")?;
    Ok(())
}

/// Runs `command` under GNU time, after [`write_back`]: its wall time, peak
/// RSS (KiB) and output.
pub(super) fn timed_output(command: &Command, rss_file: &Path) -> Result<(Duration, u64, Output)> {
    write_back()?;
    let mut wrapped = Command::new(GNU_TIME);
    wrapped
        .args(["-f", "%M", "-o"])
        .arg(rss_file)
        .arg(command.get_program())
        .args(command.get_args());
    copy_env(command, &mut wrapped);
    let started = Instant::now();
    let output = capture(&mut wrapped)?;
    let wall = started.elapsed();
    let text =
        fs::read_to_string(rss_file).with_context(|| format!("reading {}", rss_file.display()))?;
    let rss = text
        .lines()
        .last()
        .and_then(|line| line.trim().parse().ok())
        .with_context(|| format!("no peak RSS in {}: `{text}`", rss_file.display()))?;
    Ok((wall, rss, output))
}

/// Whether `binary` is an AArch64 ELF file (`e_machine` is `EM_AARCH64`).
fn is_aarch64(binary: &Path) -> bool {
    let mut header = [0u8; 20];
    fs::File::open(binary)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut header))
        .is_ok_and(|()| {
            header.starts_with(b"\x7fELF") && u16::from_le_bytes([header[18], header[19]]) == 183
        })
}

/// Size of `binary` after `strip -o` (the cross toolchain's strip for AArch64).
pub(super) fn stripped_size(binary: &Path, scratch: &Path) -> Result<u64> {
    let strip = if is_aarch64(binary) {
        "aarch64-linux-gnu-strip"
    } else {
        "strip"
    };
    let mut strip = Command::new(strip);
    strip.arg("-o").arg(scratch).arg(binary);
    capture(&mut strip)?;
    let size = fs::metadata(scratch)
        .with_context(|| format!("reading {}", scratch.display()))?
        .len();
    fs::remove_file(scratch).with_context(|| format!("removing {}", scratch.display()))?;
    Ok(size)
}

/// What one run of a binary printed: exit status, stdout, stderr.
type Observation = (Option<i32>, Vec<u8>, Vec<u8>);

/// Every observation of `binary` for `check`, with a name for each.
pub(super) fn observe(check: &Check, binary: &Path) -> Result<Vec<(String, Observation)>> {
    match check {
        Check::Ripgrep => peer::SEARCHES
            .iter()
            .map(|search| {
                Ok((
                    format!("rg {}", search.join(" ")),
                    peer::run_search(binary, search)?,
                ))
            })
            .collect(),
        Check::Run(args) => {
            let target = if is_aarch64(binary) {
                icf_fixtures::Arch::Aarch64
            } else {
                icf_fixtures::Arch::X86_64
            };
            let mut command = icf_fixtures::run_command(target, binary);
            command.args(args);
            let output = command
                .output()
                .with_context(|| format!("could not start `{}`", display(&command)))?;
            Ok(vec![(
                display(&command),
                (output.status.code(), output.stdout, output.stderr),
            )])
        }
    }
}

/// Proves each `icf link` output that behaves like the plain link with
/// `icf verify` (both linked again with `-q`, untimed): a failure is a
/// difference in behaviour.
fn verify_folds(prepared: &Prepared, icf: &Path, rows: &mut [Row]) {
    for row in rows.iter_mut() {
        let Kind::Icf(mode, _) = row.variant.kind else {
            continue;
        };
        if !row.ok() || matches!(row.behaviour, Behaviour::Differs(_)) {
            continue;
        }
        eprintln!("    icf verify: {}", row.variant.label);
        // opt_lite is C++ (LLVM's libraries): inline functions are one
        // function in every unit, whichever copy a link keeps.
        let assume_odr = prepared.name.starts_with("llvm");
        match peer::verify_link(
            &prepared.corpus,
            &prepared.scratch,
            icf,
            mode,
            row.variant.linker,
            assume_odr,
            true,
        ) {
            Ok(summary) => eprintln!("    {summary}"),
            Err(error) => {
                row.behaviour = Behaviour::Differs(format!("{error:#}"));
            }
        }
    }
}

/// Compares every output with the plain lld link's; differences are kept
/// under `scratch/diff/` and recorded in the rows.
fn check_behaviour(prepared: &Prepared, out: &Path, rows: &mut [Row]) -> Result<()> {
    let Some(reference) = rows.iter().position(|row| row.ok()) else {
        return Ok(());
    };
    rows[reference].behaviour = Behaviour::Reference;
    let reference_binary = out.join(&rows[reference].variant.file);
    let expected = observe(&prepared.check, &reference_binary)?;
    if let Check::Run(_) = prepared.check {
        let (name, (status, _, stderr)) = &expected[0];
        ensure!(
            *status == Some(0),
            "the plain link's `{name}` exits with {status:?}: {}",
            String::from_utf8_lossy(stderr)
        );
    }
    let diff_dir = prepared.scratch.join("diff");
    let _ = fs::remove_dir_all(&diff_dir);
    for (index, row) in rows.iter_mut().enumerate() {
        if index == reference || !row.ok() {
            continue;
        }
        eprintln!("    behaviour: {}", row.variant.label);
        let binary = out.join(&row.variant.file);
        let actual = observe(&prepared.check, &binary)?;
        let differing = expected
            .iter()
            .zip(&actual)
            .find(|((_, want), (_, got))| want != got);
        if let Some(((name, want), (_, got))) = differing {
            fs::create_dir_all(&diff_dir)
                .with_context(|| format!("creating {}", diff_dir.display()))?;
            // Keep the binary too: the next bench overwrites `out/`.
            let kept = diff_dir.join(&row.variant.file);
            fs::copy(&binary, &kept).with_context(|| format!("copying {}", binary.display()))?;
            for (suffix, observation) in [("expected", want), ("actual", got)] {
                let base = diff_dir.join(format!("{}.{suffix}", row.variant.file));
                let status = format!("{:?}\n", observation.0);
                for (ext, bytes) in [
                    ("status", status.as_bytes()),
                    ("stdout", &observation.1[..]),
                    ("stderr", &observation.2[..]),
                ] {
                    let path = base.with_extension(format!("{suffix}.{ext}"));
                    fs::write(&path, bytes)
                        .with_context(|| format!("writing {}", path.display()))?;
                }
            }
            row.behaviour = Behaviour::Differs(format!(
                "`{name}` differs from the plain lld link (exit {:?} vs {:?}); outputs and the \
                 binary kept in {}",
                got.0,
                want.0,
                diff_dir.display()
            ));
        }
    }
    Ok(())
}
