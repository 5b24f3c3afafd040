//! Rendering the results: `target/bench/results.md` (printed too) and
//! `results.json`, the environment they record (icf's revision, load
//! average, rounds, time taken). Numbers are formatted by `format.rs`.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use super::format::{mib, ms, thousands};
use serde_json::{Value, json};

use super::estimate::{Estimate, Outcome};
use super::floor::IoFloor;
use super::measure::{Behaviour, Cache, CorpusResult, Kind, Row, first_error};
use super::targets::{Note, RSS_FIXED_OVERHEAD_MIB, Target};
use crate::corpus::Linker;

/// Where and under what conditions the bench ran.
#[derive(Debug)]
pub(super) struct Environment {
    pub(super) icf_revision: String,
    pub(super) load_before: String,
    pub(super) load_after: String,
    pub(super) runs: u32,
    pub(super) elapsed: Duration,
}

/// Writes results.md and results.json under `root`, then prints the
/// markdown, the target and INFO lines and where the results are.
pub(super) fn write_and_print(
    root: &Path,
    results: &[CorpusResult],
    lto: Option<&super::lto::LtoResult>,
    targets: &[Target],
    notes: &[Note],
    environment: &Environment,
) -> Result<()> {
    let markdown = render_markdown(results, lto, targets, notes, environment);
    let mut json = render_json(results, targets, notes, environment);
    if let (Some(lto), Some(object)) = (lto, json.as_object_mut()) {
        object.insert("lto".to_owned(), super::lto::to_json(lto));
    }
    let md_path = root.join("results.md");
    let json_path = root.join("results.json");
    fs::write(&md_path, &markdown).with_context(|| format!("writing {}", md_path.display()))?;
    let json_text = serde_json::to_string_pretty(&json).context("rendering results.json")? + "\n";
    fs::write(&json_path, json_text).with_context(|| format!("writing {}", json_path.display()))?;

    println!("{markdown}");
    for target in targets {
        println!("{}", target.line());
    }
    for note in notes {
        println!("{}", note.line());
    }
    println!(
        "\nbench took {:.1} s; results in {} and {}",
        environment.elapsed.as_secs_f64(),
        md_path.display(),
        json_path.display()
    );
    Ok(())
}

/// `git describe`-like: the commit, and whether crates/ has uncommitted changes.
pub(super) fn icf_revision() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    match git(&["status", "--porcelain", "--", "crates"]) {
        Some(changes) if !changes.is_empty() => {
            format!("{commit} + uncommitted changes in crates/")
        }
        _ => commit,
    }
}

/// `/proc/loadavg`'s three averages.
pub(super) fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".into())
}

/// results.md: the environment and a legend, then per corpus its links
/// and icf's phases, then the synthetic scaling, the targets and the INFO
/// lines.
fn render_markdown(
    results: &[CorpusResult],
    lto: Option<&super::lto::LtoResult>,
    targets: &[Target],
    notes: &[Note],
    environment: &Environment,
) -> String {
    let mut md = String::new();
    write_preamble(&mut md, environment);
    for result in results {
        let _ = writeln!(md, "### {}\n\n{}\n", result.name, result.description);
        write_links_table(&mut md, result);
        write_icf_table(&mut md, result);
        write_estimate_table(&mut md, &result.estimates);
        super::post_link::write_table(&mut md, &result.post_link);
        md.push('\n');
    }
    write_scaling_table(&mut md, results);
    if let Some(lto) = lto {
        super::lto::write_table(&mut md, lto);
    }
    md.push_str("### targets\n\n");
    for target in targets {
        let _ = writeln!(md, "- {}", target.line());
    }
    for note in notes {
        let _ = writeln!(md, "- {}", note.line());
    }
    md
}

/// The title, where and how the bench ran, and what the columns mean.
fn write_preamble(md: &mut String, environment: &Environment) {
    let _ = writeln!(md, "## icf benchmark\n");
    let _ = writeln!(
        md,
        "icf {}; {} cores; best of {} rounds (round-robin); load average {} before, {} after; \
         took {:.0} s.\n",
        environment.icf_revision,
        std::thread::available_parallelism().map_or(0, usize::from),
        environment.runs,
        environment.load_before,
        environment.load_after,
        environment.elapsed.as_secs_f64()
    );
    let _ = writeln!(
        md,
        "*saved*: `.text` saved against the same linker without ICF; *÷ best*: that saving \
         divided by the best peer `--icf=all` saving (for `.text`) or the file size divided by \
         the smallest stripped peer output; *÷ lld*: against the plain lld link. Peak RSS is the \
         largest single process of the link (driver, linker or icf). icf's *overhead* is its \
         link's wall time minus the plain link with the same linker; the *rest* of it is what \
         its four phases leave out (resolving archives, folding, writing the rewritten copies). \
         The *I/O floor* is not a link: reading every input of the link once plus writing fresh \
         copies of the files the cold icf link in front of lld rewrote, the I/O any tool \
         rewriting the inputs in front of the linker does before the linker starts.\n"
    );
}

/// Every link of `result`: sizes, time, memory, behaviour; the I/O floor
/// after the cold icf links in front of lld; and the best peer `--icf=all`.
fn write_links_table(md: &mut String, result: &CorpusResult) {
    md.push_str(
        "| link | .text bytes | saved | ÷ best | stripped bytes | ÷ best | wall ms | ÷ lld | peak RSS MiB | ÷ lld | behaviour |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    // The floor bounds the cold icf links in front of lld: it follows them.
    let floor_after = result.rows.iter().rposition(|row| {
        row.variant.linker == Linker::Lld && matches!(row.variant.kind, Kind::Icf(_, Cache::Cold))
    });
    for (index, row) in result.rows.iter().enumerate() {
        write_link_row(md, result, row);
        if Some(index) == floor_after {
            write_floor_row(md, result);
        }
    }
    if let Some((peer, saving)) = result.best_peer_all() {
        let _ = writeln!(
            md,
            "\nBest peer `--icf=all`: {} ({saving:.2}% of .text).",
            peer.variant.label
        );
    }
}

/// One link's row of the links table.
fn write_link_row(md: &mut String, result: &CorpusResult, row: &Row) {
    let best = result.best_peer_all();
    let best_stripped = result.best_peer_stripped();
    let lld = result.row("lld");
    if let Some(failure) = &row.failure {
        let _ = writeln!(
            md,
            "| {} | link failed | | | | | | | | | `{}` |",
            row.variant.label,
            failure.summary.replace('|', "\\|").replace('`', "'")
        );
        return;
    }
    let saved = result.saved_percent(row);
    let saved_text = saved.map_or(String::new(), |s| format!("{s:.2}%"));
    let versus_best = match (saved, best) {
        (Some(s), Some((_, b))) if b > 0.0 => format!("{:.2}", s / b),
        _ => String::new(),
    };
    let stripped_ratio = best_stripped.map_or(String::new(), |b| {
        format!("{:.3}", row.stripped as f64 / b as f64)
    });
    let best_wall = row.best();
    let time_ratio = match (best_wall, lld.and_then(Row::best)) {
        (Some(t), Some(l)) => format!("{:.2}", t.as_secs_f64() / l.as_secs_f64()),
        _ => String::new(),
    };
    let rss_ratio = lld.map_or(String::new(), |l| {
        format!("{:.2}", row.rss_kib as f64 / l.rss_kib.max(1) as f64)
    });
    let behaviour = match &row.behaviour {
        Behaviour::Reference => "reference".to_owned(),
        Behaviour::Same => "same".to_owned(),
        Behaviour::Differs(why) => format!("**DIFFERS**: {}", why.replace('|', "\\|")),
    };
    let _ = writeln!(
        md,
        "| {} | {} | {saved_text} | {versus_best} | {} | {stripped_ratio} | {} | {time_ratio} | {:.1} | {rss_ratio} | {behaviour} |",
        row.variant.label,
        thousands(row.text),
        thousands(row.stripped),
        best_wall.map_or(String::new(), ms),
        row.rss_kib as f64 / 1024.0,
    );
}

/// The I/O floor's row of the links table: its time against plain lld and
/// what it read and wrote.
fn write_floor_row(md: &mut String, result: &CorpusResult) {
    let Some(floor) = &result.io_floor else {
        let _ = writeln!(
            md,
            "| I/O floor | not measured | | | | | | | | | the cold icf link failed |"
        );
        return;
    };
    let best = floor.best();
    let lld = result.row("lld").and_then(Row::best);
    let ratio = match (best, lld) {
        (Some(floor), Some(lld)) => {
            format!("{:.2}", floor.total().as_secs_f64() / lld.as_secs_f64())
        }
        _ => String::new(),
    };
    let _ = writeln!(
        md,
        "| I/O floor | | | | | | {} | {ratio} | | | not a link: {} |",
        best.map_or(String::new(), |b| ms(b.total())),
        describe_floor(floor),
    );
}

/// What the floor read and wrote, and how long each took in its best round.
fn describe_floor(floor: &IoFloor) -> String {
    let (read, write) = floor.best().map_or((String::new(), String::new()), |b| {
        (ms(b.read), ms(b.write))
    });
    format!(
        "read {} inputs ({}) in {read} ms + write {} files {} rewrote ({}) in {write} ms",
        floor.read_files,
        mib(floor.read_bytes),
        floor.written_files,
        floor.rewritten_by,
        mib(floor.written_bytes),
    )
}

/// icf's phases, overhead and fold counts from each icf link's report; and
/// icf's own peak RSS on a synthetic corpus.
fn write_icf_table(md: &mut String, result: &CorpusResult) {
    md.push_str(
        "\n| icf | load ms | lift ms | partition ms | plan ms | icf link ms | plain link ms | overhead ms | overhead ÷ plain | rest of overhead ms | functions | code bytes | aliases | thunks | saved bytes |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in result.rows.iter().filter(|row| row.report.is_some()) {
        let Some(report) = &row.report else { continue };
        let phase = |name: &str| report["timings_ms"][name].as_f64().unwrap_or(f64::NAN);
        let total = |name: &str| report["totals"][name].as_u64().unwrap_or(0);
        let plain = result.row(row.variant.plain_label()).and_then(Row::best);
        let phases = ["load", "lift", "partition", "plan"]
            .map(phase)
            .iter()
            .sum::<f64>();
        // What the phases leave out: archive resolution, folding, writing the copies.
        let (overhead, ratio, rest) = match (row.best(), plain) {
            (Some(t), Some(p)) => {
                let overhead = t.as_secs_f64() - p.as_secs_f64();
                (
                    format!("{:.0}", overhead * 1e3),
                    format!("{:.2}", overhead / p.as_secs_f64()),
                    format!("{:.0}", overhead * 1e3 - phases),
                )
            }
            _ => (String::new(), String::new(), String::new()),
        };
        let _ = writeln!(
            md,
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} | {overhead} | {ratio} | {rest} | {} | {} | {} | {} | {} |",
            row.variant.label,
            phase("load"),
            phase("lift"),
            phase("partition"),
            phase("plan"),
            row.best().map_or(String::new(), ms),
            plain.map_or(String::new(), ms),
            thousands(total("functions")),
            thousands(total("code_bytes")),
            thousands(total("aliases")),
            thousands(total("thunks")),
            thousands(total("saved_bytes")),
        );
    }
    if !result.fold_rss_kib.is_empty() {
        let _ = writeln!(
            md,
            "\nicf alone (`icf fold`, no linker), peak RSS: {}.",
            result
                .fold_rss_kib
                .iter()
                .map(|&(mode, rss)| format!("{mode} {}", mib(rss * 1024)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// `icf report` on the plain binaries against `icf link` (nothing without
/// estimates: the synthetic corpora).
fn write_estimate_table(md: &mut String, estimates: &[Estimate]) {
    if estimates.is_empty() {
        return;
    }
    md.push_str(
        "\nicf report on the plain binary: estimate vs icf link (`totals.saved_code_bytes`: \
         `icf report --mode M` on the plain link's output, `icf link --mode M` on its inputs in \
         front of the same linker).\n\n\
         | plain binary | mode | estimate bytes | icf link bytes | estimate ÷ icf link | report ms | report peak RSS MiB |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for estimate in estimates {
        let actual = estimate.actual.map_or("did not link".to_owned(), thousands);
        let ratio = estimate
            .ratio()
            .map_or(String::new(), |r| format!("{:.2}%", 100.0 * r));
        let (estimated, wall, rss) = match &estimate.outcome {
            Outcome::Measured(m) => (
                thousands(m.saved_code_bytes),
                ms(m.wall),
                format!("{:.1}", m.rss_kib as f64 / 1024.0),
            ),
            Outcome::NoBinary => ("plain link failed".into(), String::new(), String::new()),
            Outcome::Failed(error) => (
                format!(
                    "failed: `{}`",
                    first_error(error).replace('|', "\\|").replace('`', "'")
                ),
                String::new(),
                String::new(),
            ),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {estimated} | {actual} | {ratio} | {wall} | {rss} |",
            estimate.linker.name(),
            estimate.mode,
        );
    }
}

/// The estimates of `icf report` on the plain binaries in results.json.
fn estimates_json(estimates: &[Estimate]) -> Value {
    estimates
        .iter()
        .map(|estimate| {
            let measured = match &estimate.outcome {
                Outcome::Measured(m) => Some(m),
                Outcome::NoBinary | Outcome::Failed(_) => None,
            };
            json!({
                "plain_binary": estimate.linker.name(),
                "mode": estimate.mode,
                "estimate_saved_code_bytes": estimate.estimated(),
                "icf_link_saved_code_bytes": estimate.actual,
                "estimate_vs_icf_link": estimate.ratio(),
                "within_icf_link_plus_1_percent": estimate.within_actual(),
                "report_wall_ms_best": measured.map(|m| m.wall.as_secs_f64() * 1e3),
                "report_peak_rss_kib": measured.map(|m| m.rss_kib),
                "image": measured.map(|m| m.image.clone()),
                "error": match &estimate.outcome {
                    Outcome::Failed(error) => json!(error),
                    Outcome::NoBinary => json!("the plain link failed"),
                    Outcome::Measured(_) => Value::Null,
                },
            })
        })
        .collect()
}

/// How the synthetic corpora's link times and icf's RSS grow with size
/// (nothing without synthetic corpora).
fn write_scaling_table(md: &mut String, results: &[CorpusResult]) {
    let synthetic: Vec<&CorpusResult> = results.iter().filter(|r| r.synthetic.is_some()).collect();
    if !synthetic.is_empty() {
        md.push_str(
            "### synthetic scaling\n\n\
             | functions | code bytes | plain lld ms | icf safe + lld ms | × previous | icf all + lld ms | × previous | icf fold RSS MiB (safe / all) | RSS limit MiB |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        let mut previous: Option<&CorpusResult> = None;
        for result in &synthetic {
            let Some(info) = &result.synthetic else {
                continue;
            };
            let time = |r: &CorpusResult, label: &str| r.row(label).and_then(Row::best);
            let growth =
                |label: &str| match (previous.and_then(|p| time(p, label)), time(result, label)) {
                    (Some(a), Some(b)) => format!("{:.2}", b.as_secs_f64() / a.as_secs_f64()),
                    _ => String::new(),
                };
            let fold = result
                .fold_rss_kib
                .iter()
                .map(|&(_, rss)| format!("{:.0}", rss as f64 / 1024.0))
                .collect::<Vec<_>>()
                .join(" / ");
            let limit =
                (2 * info.code_bytes) as f64 / (1 << 20) as f64 + RSS_FIXED_OVERHEAD_MIB as f64;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {fold} | {limit:.0} |",
                thousands(info.functions as u64),
                thousands(info.code_bytes),
                time(result, "lld").map_or(String::new(), ms),
                time(result, "icf safe + lld").map_or(String::new(), ms),
                growth("icf safe + lld"),
                time(result, "icf all + lld").map_or(String::new(), ms),
                growth("icf all + lld"),
            );
            previous = Some(result);
        }
        md.push('\n');
    }
}

/// results.json: the environment, every figure of every link, and the targets.
fn render_json(
    results: &[CorpusResult],
    targets: &[Target],
    notes: &[Note],
    environment: &Environment,
) -> Value {
    let corpora: Vec<Value> = results
        .iter()
        .map(|result| {
            let best = result.best_peer_all();
            let best_stripped = result.best_peer_stripped();
            let lld = result.row("lld");
            let rows: Vec<Value> = result
                .rows
                .iter()
                .map(|row| {
                    let saved = result.saved_percent(row);
                    let ratio = |a: f64, b: Option<f64>| b.filter(|b| *b > 0.0).map(|b| a / b);
                    let best_ms = row.best().map(|t| t.as_secs_f64() * 1e3);
                    let lld_ms = lld.and_then(Row::best).map(|t| t.as_secs_f64() * 1e3);
                    let plain_ms = result
                        .row(row.variant.plain_label())
                        .and_then(Row::best)
                        .map(|t| t.as_secs_f64() * 1e3);
                    json!({
                        "variant": row.variant.label,
                        "linker": row.variant.linker.name(),
                        "icf": match row.variant.kind {
                            Kind::Peer(flag) => json!({"tool": "linker", "flag": flag}),
                            Kind::Icf(mode, cache) => json!({
                                "tool": "icf link",
                                "mode": mode,
                                "cache": match cache {
                                    Cache::Cold => "cold",
                                    Cache::Warm => "warm",
                                    Cache::Changed => "own objects changed",
                                },
                            }),
                        },
                        "failure": row.failure.as_ref().map(|f| json!({"error": f.summary, "log": f.log})),
                        "text_bytes": row.ok().then_some(row.text),
                        "text_saved_percent": saved,
                        "text_saved_vs_best_peer_all": saved.and_then(|s| ratio(s, best.map(|b| b.1))),
                        "stripped_bytes": row.ok().then_some(row.stripped),
                        "stripped_vs_best_peer": best_stripped.filter(|_| row.ok()).map(|b| row.stripped as f64 / b as f64),
                        "wall_ms_best": best_ms,
                        "wall_ms_rounds": row.walls.iter().map(|t| t.as_secs_f64() * 1e3).collect::<Vec<_>>(),
                        "wall_vs_plain_lld": best_ms.and_then(|t| ratio(t, lld_ms)),
                        "overhead_ms_vs_plain_same_linker": match row.variant.kind {
                            Kind::Icf(..) => best_ms.zip(plain_ms).map(|(t, p)| t - p),
                            Kind::Peer(_) => None,
                        },
                        "peak_rss_kib": row.ok().then_some(row.rss_kib),
                        "peak_rss_vs_plain_lld": lld.filter(|_| row.ok()).map(|l| row.rss_kib as f64 / l.rss_kib.max(1) as f64),
                        "behaviour": match &row.behaviour {
                            Behaviour::Reference => json!("reference"),
                            Behaviour::Same => json!("same"),
                            Behaviour::Differs(why) => json!({"differs": why}),
                        },
                        "icf_timings_ms": row.report.as_ref().map(|r| r["timings_ms"].clone()),
                        "icf_totals": row.report.as_ref().map(|r| r["totals"].clone()),
                    })
                })
                .collect();
            json!({
                "name": result.name,
                "description": result.description,
                "best_peer_icf_all": best.map(|(row, saved)| json!({"variant": row.variant.label, "text_saved_percent": saved})),
                "synthetic": result.synthetic.as_ref().map(|info| json!({
                    "functions": info.functions,
                    "objects": info.objects,
                    "code_bytes": info.code_bytes,
                    "copies": info.copies,
                    "icf_fold_peak_rss_kib": result.fold_rss_kib.iter().map(|&(mode, rss)| (mode.to_owned(), json!(rss))).collect::<serde_json::Map<_, _>>(),
                })),
                "links": rows,
                "io_floor": floor_json(result),
                "report_estimates": estimates_json(&result.estimates),
                "post_link": super::post_link::json(&result.post_link),
            })
        })
        .collect();
    json!({
        "icf_revision": environment.icf_revision,
        "finished_unix": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "cores": std::thread::available_parallelism().map_or(0, usize::from),
        "rounds": environment.runs,
        "load_average_before": environment.load_before,
        "load_average_after": environment.load_after,
        "elapsed_seconds": environment.elapsed.as_secs_f64(),
        "rss_fixed_overhead_mib": RSS_FIXED_OVERHEAD_MIB,
        "corpora": corpora,
        "targets": targets.iter().map(|t| json!({
            "corpus": t.corpus,
            "target": t.name,
            "pass": t.pass,
            "detail": t.detail,
        })).collect::<Vec<_>>(),
        "notes": notes.iter().map(|n| json!({
            "corpus": n.corpus,
            "note": n.name,
            "detail": n.detail,
        })).collect::<Vec<_>>(),
    })
}

/// The I/O floor of `result` in results.json (null when not measured).
fn floor_json(result: &CorpusResult) -> Value {
    let Some(floor) = &result.io_floor else {
        return Value::Null;
    };
    let in_ms = |d: Duration| d.as_secs_f64() * 1e3;
    let best = floor.best();
    let lld_ms = result.row("lld").and_then(Row::best).map(in_ms);
    json!({
        "ms_best": best.map(|b| in_ms(b.total())),
        "read_ms_best": best.map(|b| in_ms(b.read)),
        "write_ms_best": best.map(|b| in_ms(b.write)),
        "vs_plain_lld": best.zip(lld_ms).map(|(b, l)| in_ms(b.total()) / l),
        "rounds": floor.rounds.iter().map(|r| json!({"read_ms": in_ms(r.read), "write_ms": in_ms(r.write)})).collect::<Vec<_>>(),
        "read_files": floor.read_files,
        "read_bytes": floor.read_bytes,
        "written_files": floor.written_files,
        "written_bytes": floor.written_bytes,
        "rewritten_by": floor.rewritten_by,
    })
}

#[cfg(test)]
mod tests {
    use super::super::estimate::tests::estimate;
    use super::*;

    #[test]
    fn the_estimate_table_has_a_row_per_binary_and_mode() {
        let estimates = [
            estimate(Linker::Lld, "safe", Some(170_895), Some(214_144)),
            estimate(Linker::Bfd, "all", None, None),
        ];
        let mut md = String::new();
        write_estimate_table(&mut md, &estimates);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(
            rows,
            [
                "| plain binary | mode | estimate bytes | icf link bytes | estimate ÷ icf link | report ms | report peak RSS MiB |",
                "| lld | safe | 170,895 | 214,144 | 79.80% | 190 | 64.0 |",
                "| bfd | all | failed: `error: bad` | did not link |  |  |  |",
            ]
        );
        let mut none = String::new();
        write_estimate_table(&mut none, &[]);
        assert!(none.is_empty());
    }

    #[test]
    fn the_estimates_go_to_json() {
        let json = estimates_json(&[estimate(
            Linker::Lld,
            "all",
            Some(1_067_808),
            Some(1_069_012),
        )]);
        let first = &json[0];
        assert_eq!(first["plain_binary"], "lld");
        assert_eq!(first["mode"], "all");
        assert_eq!(first["estimate_saved_code_bytes"], 1_067_808);
        assert_eq!(first["icf_link_saved_code_bytes"], 1_069_012);
        assert_eq!(first["within_icf_link_plus_1_percent"], true);
        assert_eq!(first["report_wall_ms_best"], 190.0);
        assert_eq!(first["report_peak_rss_kib"], 65_536);
        assert!(first["error"].is_null());
        let ratio = first["estimate_vs_icf_link"].as_f64().unwrap_or_default();
        assert!((ratio - 0.998_874).abs() < 1e-6, "{ratio}");
    }
}
