//! After the link: `icf shrink --map` on each real corpus's plain lld link
//! made with `-Wl,-q` and its map (IN), in both modes, against that corpus's plain lld link
//! (no `-q`) and `icf link --mode safe` in front of lld on the same
//! objects. opt_lite is measured twice: as the corpus builds it (its own
//! object compiled by clang++-19) and with that object compiled by g++
//! (`Prepared::gcc_build`); ripgrep once (rustc).
//!
//! Per build and mode: one untimed `icf shrink --report` (what it kept in
//! place, by kind), then `runs` timed rounds under GNU time (fastest wall,
//! largest peak RSS); OUT's `.text` and stripped size; OUT must behave as IN
//! (the corpus's check) and `icf verify --mode M --plain-map MAP IN OUT`
//! must prove it. A
//! shrink that fails, refuses, behaves otherwise or does not verify breaks
//! the bench. For the g++ build, whose links the corpus rows do not make,
//! the plain lld link is timed in the same rounds and `icf link --mode
//! safe` runs once, untimed, for its saving.
//!
//! Targets (issue M3-1; PASS/FAIL lines): `icf shrink` within
//! `SHRINK_TIME_LIMIT` of the plain lld link and at or below its peak RSS;
//! in mode safe, a stripped saving at least `SAVING_SHARE_PERCENT` of
//! `icf link --mode safe`'s; and `icf report` on the plain lld binary
//! (`estimate.rs`) within `REPORT_TIME_LIMIT` of the plain link.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use super::decode_floor::{self, DecodeFloor};
use super::estimate::{Estimate, Outcome};
use super::format::{ms, thousands};
use super::measure::{Behaviour, CorpusResult, Row, observe, stripped_size, timed};
use super::prepare::Prepared;
use super::targets::{Note, Target};
use crate::corpus::{Corpus, Linker};
use crate::peer;
use crate::process::{capture, display};

/// `icf shrink` may take this many times the plain lld link (M3-1).
const SHRINK_TIME_LIMIT: f64 = 1.0;
/// `icf report` on the plain binary may take this many times the plain
/// lld link (M3-1).
const REPORT_TIME_LIMIT: f64 = 0.5;
/// Mode safe's stripped saving, in percent of `icf link --mode safe`'s.
const SAVING_SHARE_PERCENT: f64 = 98.0;
/// The modes shrink runs in.
const MODES: [&str; 2] = ["safe", "all"];

/// What a build's shrink is measured against: the plain lld link of the
/// same objects (fastest wall, peak RSS in KiB; none when it failed) and
/// the stripped bytes `icf link --mode safe` in front of lld saved against
/// it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Reference {
    pub(super) plain: Option<(Duration, u64)>,
    pub(super) icf_link_saved: Option<i64>,
}

/// One build of a corpus, shrunk after its link.
#[derive(Debug)]
pub(super) struct Build {
    /// What compiled the program's own code.
    pub(super) compiler: &'static str,
    pub(super) reference: Reference,
    /// IN's `.text` and stripped bytes.
    pub(super) input: (u64, u64),
    pub(super) shrinks: Vec<Shrink>,
    /// IN's decode floor (`decode_floor.rs`), when measured.
    pub(super) decode_floor: Option<DecodeFloor>,
    /// Why IN could not be linked.
    pub(super) failure: Option<String>,
}

/// Where and how often a corpus's shrinks run.
struct Bench<'a> {
    icf: &'a Path,
    runs: u32,
    /// `post-link/` under the corpus's scratch directory.
    dir: PathBuf,
    rss_file: &'a Path,
}

/// `icf shrink --mode MODE IN -o OUT`.
#[derive(Debug)]
pub(super) struct Shrink {
    pub(super) mode: &'static str,
    pub(super) walls: Vec<Duration>,
    pub(super) rss_kib: u64,
    /// OUT's `.text` and stripped bytes.
    pub(super) output: (u64, u64),
    /// Functions kept whole and in place, by kind (the report's
    /// `kept_in_place`).
    pub(super) kept_in_place: BTreeMap<String, u64>,
    /// OUT against IN.
    pub(super) behaviour: Behaviour,
    /// `icf verify`'s summary line.
    pub(super) verified: Option<String>,
    /// Why the shrink or its proof failed.
    pub(super) failure: Option<String>,
}

impl Shrink {
    fn best(&self) -> Option<Duration> {
        self.walls.iter().min().copied()
    }
}

impl Build {
    /// Stripped bytes the shrink in `mode` saved against IN.
    pub(super) fn saved(&self, shrink: &Shrink) -> i64 {
        self.input.1 as i64 - shrink.output.1 as i64
    }
}

/// Every build of `prepared` shrunk after its lld link; `rows` are the
/// corpus's measured links (the plain lld link and `icf safe + lld`).
pub(super) fn measure(
    prepared: &Prepared,
    icf: &Path,
    runs: u32,
    rows: &[Row],
    rss_file: &Path,
) -> Result<Vec<Build>> {
    let bench = Bench {
        icf,
        runs,
        dir: prepared.scratch.join("post-link"),
        rss_file,
    };
    let _ = fs::remove_dir_all(&bench.dir);
    fs::create_dir_all(&bench.dir).with_context(|| format!("creating {}", bench.dir.display()))?;
    let row = |label: &str| rows.iter().find(|r| r.variant.label == label && r.ok());
    let own_compiler = if prepared.name == "ripgrep" {
        "rustc"
    } else {
        "clang++-19"
    };
    let own = Reference {
        plain: row("lld").and_then(|r| Some((r.best()?, r.rss_kib))),
        icf_link_saved: row("lld")
            .zip(row("icf safe + lld"))
            .map(|(plain, folded)| plain.stripped as i64 - folded.stripped as i64),
    };
    let mut builds = vec![shrink_build(
        prepared,
        &prepared.corpus,
        own_compiler,
        own,
        &bench,
    )?];
    if let Some(gcc) = &prepared.gcc_build {
        let reference = plain_and_icf_link(gcc, &bench)?;
        builds.push(shrink_build(prepared, gcc, "g++", reference, &bench)?);
    }
    Ok(builds)
}

/// The plain lld link of `corpus` timed over `runs` rounds, and the
/// stripped bytes `icf link --mode safe` in front of lld saves against it.
fn plain_and_icf_link(corpus: &Corpus, bench: &Bench<'_>) -> Result<Reference> {
    let (icf, runs, dir, rss_file) = (bench.icf, bench.runs, &bench.dir, bench.rss_file);
    let plain = dir.join("gcc-lld");
    let link = corpus.link_command(Linker::Lld, &plain, &[])?;
    let mut best: Option<(Duration, u64)> = None;
    for round in 0..runs {
        eprintln!(
            "    round {}/{runs}: plain lld link of the g++ build",
            round + 1
        );
        let Ok((wall, rss)) = timed(&link, rss_file) else {
            return Ok(Reference::default());
        };
        best = Some(best.map_or((wall, rss), |(w, r)| (w.min(wall), r.max(rss))));
    }
    let folded = dir.join("gcc-icf-safe-lld");
    let inner = corpus.link_command(Linker::Lld, &folded, &[])?;
    eprintln!("    icf link --mode safe: the g++ build");
    let saved = match capture(&mut peer::icf_link_command(icf, &[], "safe", &inner)) {
        Ok(_) => Some(
            stripped_size(&plain, &dir.join("stripped.tmp"))? as i64
                - stripped_size(&folded, &dir.join("stripped.tmp"))? as i64,
        ),
        Err(_) => None,
    };
    Ok(Reference {
        plain: best,
        icf_link_saved: saved,
    })
}

/// IN (`corpus` linked by lld with `-q`) shrunk in every mode, timed,
/// measured, run and proved.
fn shrink_build(
    prepared: &Prepared,
    corpus: &Corpus,
    compiler: &'static str,
    reference: Reference,
    bench: &Bench<'_>,
) -> Result<Build> {
    let (icf, runs, dir, rss_file) = (bench.icf, bench.runs, &bench.dir, bench.rss_file);
    // File names: `clang-lld-q`, `gcc-shrunk-safe`, `rustc-…`.
    let tag = match compiler {
        "clang++-19" => "clang",
        "g++" => "gcc",
        other => other,
    };
    let input = dir.join(format!("{tag}-lld-q"));
    let mut build = Build {
        compiler,
        reference,
        input: (0, 0),
        shrinks: Vec::new(),
        decode_floor: None,
        failure: None,
    };
    eprintln!("    lld -q link of the {compiler} build");
    // With its map, the shrink folds anonymous constants too (`--map`)
    // and verify reads IN by it (`--plain-map`).
    let map = dir.join(format!("{tag}-lld-q.map"));
    let map_flag = format!("-Wl,-Map={}", map.display());
    if let Err(error) =
        capture(&mut corpus.link_command(Linker::Lld, &input, &["-Wl,-q", &map_flag])?)
    {
        build.failure = Some(format!("{error:#}"));
        return Ok(build);
    }
    let stripped_tmp = dir.join("stripped.tmp");
    build.input = (
        peer::text_size(&input)?,
        stripped_size(&input, &stripped_tmp)?,
    );
    build.decode_floor = Some(decode_floor::measure(&input, runs)?);
    let expected = observe(&prepared.check, &input)?;
    for mode in MODES {
        let output = dir.join(format!("{tag}-shrunk-{mode}"));
        let report = dir.join(format!("{tag}-shrunk-{mode}.json"));
        let shrink = |with_report: bool| {
            let mut command = Command::new(icf);
            command
                .args(["shrink", "--mode", mode])
                .arg("--map")
                .arg(&map)
                .arg(&input)
                .arg("-o")
                .arg(&output);
            if with_report {
                command.arg("--report").arg(&report);
            }
            command
        };
        let mut result = Shrink {
            mode,
            walls: Vec::new(),
            rss_kib: 0,
            output: (0, 0),
            kept_in_place: BTreeMap::new(),
            behaviour: Behaviour::Same,
            verified: None,
            failure: None,
        };
        eprintln!("    icf shrink --mode {mode}: the {compiler} build");
        if let Err(error) = capture(&mut shrink(true)) {
            result.failure = Some(format!("{error:#}"));
            build.shrinks.push(result);
            continue;
        }
        result.kept_in_place = kept_in_place(&report)?;
        for _ in 0..runs {
            let (wall, rss) = timed(&shrink(false), rss_file)?;
            result.walls.push(wall);
            result.rss_kib = result.rss_kib.max(rss);
        }
        result.output = (
            peer::text_size(&output)?,
            stripped_size(&output, &stripped_tmp)?,
        );
        let actual = observe(&prepared.check, &output)?;
        if let Some(((name, _), _)) = expected
            .iter()
            .zip(&actual)
            .find(|((_, want), (_, got))| want != got)
        {
            result.behaviour = Behaviour::Differs(format!(
                "`{name}` differs between {} and {}",
                input.display(),
                output.display()
            ));
        }
        match verify(icf, mode, prepared, &input, &output, &map) {
            Ok(summary) => result.verified = Some(summary),
            Err(error) => result.failure = Some(format!("{error:#}")),
        }
        build.shrinks.push(result);
    }
    Ok(build)
}

/// The report's `kept_in_place` counts (none kept: empty).
fn kept_in_place(report: &Path) -> Result<BTreeMap<String, u64>> {
    let text = fs::read(report).with_context(|| format!("reading {}", report.display()))?;
    let json: Value =
        serde_json::from_slice(&text).with_context(|| format!("parsing {}", report.display()))?;
    Ok(json["kept_in_place"]
        .as_object()
        .map(|kinds| {
            kinds
                .iter()
                .map(|(kind, count)| (kind.clone(), count.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default())
}

/// `icf verify --mode MODE --plain-map MAP IN OUT` (opt_lite with
/// `--assume-odr`: C++ inline functions are one function in every unit):
/// its summary line.
fn verify(
    icf: &Path,
    mode: &str,
    prepared: &Prepared,
    input: &Path,
    output: &Path,
    map: &Path,
) -> Result<String> {
    let mut verify = Command::new(icf);
    verify
        .args(["verify", "--mode", mode])
        .arg("--plain-map")
        .arg(map);
    if prepared.name.starts_with("llvm") {
        verify.arg("--assume-odr");
    }
    verify.arg(input).arg(output);
    eprintln!("    {}", display(&verify));
    let output = capture(&mut verify)?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// What broke in the post-link rows: a failed link or shrink, a
/// difference in behaviour, a proof that failed.
pub(super) fn broken(result: &CorpusResult) -> Vec<String> {
    let mut broken = Vec::new();
    for build in &result.post_link {
        let name = format!(
            "{} / icf shrink of the {} build",
            result.name, build.compiler
        );
        if let Some(failure) = &build.failure {
            broken.push(format!("{name}: lld -q: {failure}"));
        }
        for shrink in &build.shrinks {
            if let Some(failure) = &shrink.failure {
                broken.push(format!("{name}, mode {}: {failure}", shrink.mode));
            }
            if let Behaviour::Differs(why) = &shrink.behaviour {
                broken.push(format!("{name}, mode {}: {why}", shrink.mode));
            }
        }
    }
    broken
}

/// The M3-1 targets of the module header, per build and mode.
pub(super) fn targets(result: &CorpusResult) -> Vec<Target> {
    let mut targets = Vec::new();
    let target = |name: &'static str, pass: bool, detail: String| Target {
        corpus: result.name.clone(),
        name,
        pass,
        detail,
    };
    for build in &result.post_link {
        let label = |mode: &str| format!("icf shrink --mode {mode} ({} build)", build.compiler);
        for shrink in &build.shrinks {
            let Some(wall) = shrink.best() else {
                continue;
            };
            let Some((plain, plain_rss)) = build.reference.plain else {
                targets.push(target(
                    "icf shrink time vs plain lld",
                    false,
                    format!("{}: the plain lld link failed", label(shrink.mode)),
                ));
                continue;
            };
            let ratio = wall.as_secs_f64() / plain.as_secs_f64();
            targets.push(target(
                "icf shrink time vs plain lld",
                ratio <= SHRINK_TIME_LIMIT,
                format!(
                    "{} {} vs plain lld {}: {ratio:.2}x (limit {SHRINK_TIME_LIMIT}x)",
                    label(shrink.mode),
                    ms(wall),
                    ms(plain)
                ),
            ));
            targets.push(target(
                "icf shrink peak RSS vs plain lld",
                shrink.rss_kib <= plain_rss,
                format!(
                    "{} {:.1} MiB vs plain lld {:.1} MiB",
                    label(shrink.mode),
                    shrink.rss_kib as f64 / 1024.0,
                    plain_rss as f64 / 1024.0
                ),
            ));
            if shrink.mode != "safe" {
                continue;
            }
            let saved = build.saved(shrink);
            let (pass, detail) = match build.reference.icf_link_saved {
                Some(link) if link > 0 => {
                    let share = 100.0 * saved as f64 / link as f64;
                    (
                        share >= SAVING_SHARE_PERCENT,
                        format!(
                            "{} saves {} stripped bytes, icf link --mode safe + lld {}: {share:.1}% \
                             (target {SAVING_SHARE_PERCENT}%)",
                            label(shrink.mode),
                            thousands(saved.max(0) as u64),
                            thousands(link as u64)
                        ),
                    )
                }
                _ => (
                    false,
                    "icf link --mode safe + lld saved nothing or failed".into(),
                ),
            };
            targets.push(target(
                "icf shrink saving vs icf link --mode safe",
                pass,
                detail,
            ));
        }
    }
    targets.extend(report_time(result));
    targets
}

/// `icf report` on the plain lld binary against the plain lld link.
fn report_time(result: &CorpusResult) -> Vec<Target> {
    let plain = result.row("lld").and_then(Row::best);
    result
        .estimates
        .iter()
        .filter(|estimate| estimate.linker == Linker::Lld)
        .filter_map(|estimate: &Estimate| {
            let Outcome::Measured(measured) = &estimate.outcome else {
                return None;
            };
            let plain = plain?;
            let ratio = measured.wall.as_secs_f64() / plain.as_secs_f64();
            Some(Target {
                corpus: result.name.clone(),
                name: "icf report time vs plain lld",
                pass: ratio <= REPORT_TIME_LIMIT,
                detail: format!(
                    "icf report --mode {} on the plain lld binary {} vs plain lld {}: {ratio:.2}x \
                     (limit {REPORT_TIME_LIMIT}x)",
                    estimate.mode,
                    ms(measured.wall),
                    ms(plain)
                ),
            })
        })
        .collect()
}

/// The post-link table of results.md (nothing for a corpus without one).
pub(super) fn write_table(md: &mut String, builds: &[Build]) {
    use std::fmt::Write as _;
    if builds.is_empty() {
        return;
    }
    md.push_str(
        "\nAfter the link: `icf shrink --mode M --map MAP IN -o OUT`, IN the plain lld link with `-Wl,-q` and its map \
         (time and RSS against the plain lld link without `-q`; saving in stripped bytes, \
         against `icf link --mode safe` + lld's on the same objects).\n\n\
         | objects by | mode | shrink ms | ÷ plain lld | peak RSS MiB | .text IN → OUT | stripped saved | ÷ icf link safe | kept in place | icf verify |\n\
         |---|---|---:|---:|---:|---|---:|---:|---|---|\n",
    );
    for build in builds {
        if let Some(failure) = &build.failure {
            let _ = writeln!(
                md,
                "| {} | | lld -q failed: `{}` | | | | | | | |",
                build.compiler,
                super::measure::first_error(failure).replace('|', "\\|")
            );
            continue;
        }
        for shrink in &build.shrinks {
            if let Some(failure) = &shrink.failure
                && shrink.walls.is_empty()
            {
                let _ = writeln!(
                    md,
                    "| {} | {} | failed: `{}` | | | | | | | |",
                    build.compiler,
                    shrink.mode,
                    super::measure::first_error(failure).replace('|', "\\|")
                );
                continue;
            }
            let wall = shrink.best().map_or(String::new(), ms);
            let ratio = shrink
                .best()
                .zip(build.reference.plain)
                .map_or(String::new(), |(wall, (plain, _))| {
                    format!("{:.2}x", wall.as_secs_f64() / plain.as_secs_f64())
                });
            let saved = build.saved(shrink);
            let share = build
                .reference
                .icf_link_saved
                .filter(|&link| link > 0)
                .map_or(String::new(), |link| {
                    format!("{:.1}%", 100.0 * saved as f64 / link as f64)
                });
            let kept = if shrink.kept_in_place.is_empty() {
                "0".to_owned()
            } else {
                shrink
                    .kept_in_place
                    .iter()
                    .map(|(kind, count)| format!("{kind} {count}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let proof = match (&shrink.verified, &shrink.failure, &shrink.behaviour) {
                (_, _, Behaviour::Differs(_)) => "behaves otherwise".to_owned(),
                (_, Some(_), _) => "FAILED".to_owned(),
                (Some(_), None, _) => "proved".to_owned(),
                (None, None, _) => String::new(),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {wall} | {ratio} | {:.1} | {} → {} | {} | {share} | {kept} | {proof} |",
                build.compiler,
                shrink.mode,
                shrink.rss_kib as f64 / 1024.0,
                thousands(build.input.0),
                thousands(shrink.output.0),
                thousands(saved.max(0) as u64),
            );
        }
    }
    for build in builds {
        let Some(floor) = build.decode_floor else {
            continue;
        };
        let ratio = build.reference.plain.map_or(String::new(), |(plain, _)| {
            format!(
                " ({:.2}x the plain lld link)",
                floor.wall.as_secs_f64() / plain.as_secs_f64()
            )
        });
        let _ = writeln!(
            md,
            "\nDecode floor of the {} build's IN (not a shrink): reading it and decoding its `.text` once on every core, {} instructions in {} functions: {} ms{ratio}. `icf shrink` and `icf report` cannot read the image in less.",
            build.compiler,
            thousands(floor.instructions as u64),
            thousands(floor.functions as u64),
            ms(floor.wall),
        );
    }
}

/// The INFO lines of `result`'s decode floors: per build, the floor
/// against the plain lld link, and what the shrink and report targets
/// leave beyond it.
pub(super) fn decode_floor_notes(result: &CorpusResult) -> Vec<Note> {
    result
        .post_link
        .iter()
        .filter_map(|build| {
            let floor = build.decode_floor?.wall.as_secs_f64();
            let (plain, _) = build.reference.plain?;
            let plain = plain.as_secs_f64();
            Some(Note {
                corpus: result.name.clone(),
                name: "decode floor",
                detail: format!(
                    "{} build: read IN + decode its .text once = {:.0} ms = {:.2}x plain lld ({:.0} ms); \
                     the shrink target ({SHRINK_TIME_LIMIT}x) leaves icf {:.0} ms beyond it, the report target ({REPORT_TIME_LIMIT}x) {:.0} ms",
                    build.compiler,
                    floor * 1e3,
                    floor / plain,
                    plain * 1e3,
                    (SHRINK_TIME_LIMIT * plain - floor) * 1e3,
                    (REPORT_TIME_LIMIT * plain - floor) * 1e3,
                ),
            })
        })
        .collect()
}

/// The post-link rows of results.json.
pub(super) fn json(builds: &[Build]) -> Value {
    builds
        .iter()
        .map(|build| {
            serde_json::json!({
                "objects_compiled_by": build.compiler,
                "plain_lld_wall_ms_best": build.reference.plain.map(|(wall, _)| wall.as_secs_f64() * 1e3),
                "plain_lld_peak_rss_kib": build.reference.plain.map(|(_, rss)| rss),
                "icf_link_safe_stripped_saved": build.reference.icf_link_saved,
                "input_text": build.input.0,
                "input_stripped": build.input.1,
                "decode_floor": build.decode_floor.map(|floor| serde_json::json!({
                    "wall_ms_best": floor.wall.as_secs_f64() * 1e3,
                    "functions": floor.functions,
                    "instructions": floor.instructions,
                })),
                "error": build.failure,
                "shrinks": build.shrinks.iter().map(|shrink| serde_json::json!({
                    "mode": shrink.mode,
                    "wall_ms_best": shrink.best().map(|wall| wall.as_secs_f64() * 1e3),
                    "peak_rss_kib": shrink.rss_kib,
                    "output_text": shrink.output.0,
                    "output_stripped": shrink.output.1,
                    "stripped_saved": build.saved(shrink),
                    "kept_in_place": shrink.kept_in_place,
                    "behaviour": match &shrink.behaviour {
                        Behaviour::Differs(why) => serde_json::json!({"differs": why}),
                        _ => serde_json::json!("same"),
                    },
                    "verified": shrink.verified,
                    "error": shrink.failure,
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shrink(mode: &'static str, wall_ms: u64, stripped: u64) -> Shrink {
        Shrink {
            mode,
            walls: vec![Duration::from_millis(wall_ms)],
            rss_kib: 90 * 1024,
            output: (900, stripped),
            kept_in_place: BTreeMap::from([("data-in-code".to_owned(), 2)]),
            behaviour: Behaviour::Same,
            verified: Some("verified: ...".into()),
            failure: None,
        }
    }

    fn result(builds: Vec<Build>) -> CorpusResult {
        CorpusResult {
            name: "llvm".into(),
            description: String::new(),
            rows: Vec::new(),
            synthetic: None,
            fold_rss_kib: Vec::new(),
            fold_error: None,
            io_floor: None,
            estimates: Vec::new(),
            post_link: builds,
        }
    }

    fn build(shrinks: Vec<Shrink>) -> Build {
        Build {
            compiler: "g++",
            reference: Reference {
                plain: Some((Duration::from_millis(1000), 100 * 1024)),
                icf_link_saved: Some(1000),
            },
            input: (1000, 10_000),
            shrinks,
            decode_floor: None,
            failure: None,
        }
    }

    #[test]
    fn each_shrink_is_held_to_the_plain_link_and_safe_to_icf_link_s_saving() {
        let result = result(vec![build(vec![
            shrink("safe", 900, 9_010),
            shrink("all", 1100, 8_000),
        ])]);
        let lines: Vec<String> = targets(&result).iter().map(Target::line).collect();
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert!(lines[0].starts_with("PASS llvm: icf shrink time vs plain lld:"));
        assert!(lines[0].contains("0.90x"));
        assert!(lines[1].starts_with("PASS llvm: icf shrink peak RSS"));
        // 990 of icf link's 1,000 bytes: 99%.
        assert!(
            lines[2].starts_with("PASS llvm: icf shrink saving"),
            "{}",
            lines[2]
        );
        assert!(lines[2].contains("99.0%"));
        assert!(
            lines[3].starts_with("FAIL llvm: icf shrink time"),
            "{}",
            lines[3]
        );
        assert!(lines[4].starts_with("PASS"));
        let under = result_with_saving(9_030);
        assert!(under[2].starts_with("FAIL"), "{}", under[2]);
    }

    fn result_with_saving(stripped: u64) -> Vec<String> {
        let result = result(vec![build(vec![shrink("safe", 900, stripped)])]);
        targets(&result).iter().map(Target::line).collect()
    }

    #[test]
    fn the_decode_floor_is_set_against_the_plain_link_and_both_targets() {
        let floor = DecodeFloor {
            wall: Duration::from_millis(300),
            functions: 10,
            instructions: 1000,
        };
        let mut measured = build(vec![shrink("safe", 900, 9_010)]);
        measured.decode_floor = Some(floor);
        let notes = decode_floor_notes(&result(vec![measured, build(Vec::new())]));
        // The build without a floor has no line.
        assert_eq!(notes.len(), 1, "{notes:?}");
        let line = notes[0].line();
        assert!(
            line.contains("= 300 ms = 0.30x plain lld (1000 ms)"),
            "{line}"
        );
        assert!(line.contains("leaves icf 700 ms beyond it"), "{line}");
        assert!(line.contains("the report target (0.5x) 200 ms"), "{line}");
        let mut md = String::new();
        write_table(
            &mut md,
            &[Build {
                decode_floor: Some(floor),
                ..build(Vec::new())
            }],
        );
        assert!(
            md.contains("1,000 instructions in 10 functions: 300 ms (0.30x the plain lld link)"),
            "{md}"
        );
    }

    #[test]
    fn a_failed_or_different_shrink_breaks_the_bench_and_shows_in_the_table() {
        let mut failed = shrink("safe", 900, 9_000);
        failed.failure = Some("icf verify: does not verify".into());
        let mut differs = shrink("all", 900, 9_000);
        differs.behaviour = Behaviour::Differs("`opt_lite` differs".into());
        let result = result(vec![build(vec![failed, differs])]);
        assert_eq!(broken(&result).len(), 2);
        let mut md = String::new();
        write_table(&mut md, &result.post_link);
        assert!(md.contains("| g++ | safe | 900 | 0.90x | 90.0 | 1,000 → 900 | 1,000 | 100.0% | data-in-code 2 | FAILED |"), "{md}");
        assert!(md.contains("| behaves otherwise |"), "{md}");
    }
}
