//! `icf report BINARY` checked against reality: on each real corpus, the
//! estimate it gives on the plain lld and GNU ld outputs (`--mode safe` and
//! `all`) beside the `.text` the cold `icf link --mode` of the same run
//! saved in front of the same linker (both `totals.saved_code_bytes`).
//! The report is timed like a link: under GNU time, once per round, the
//! fastest wall time and the largest peak RSS counting; its JSON is kept
//! as `reports/estimate-MODE-LINKER.json`.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use super::measure::{Cache, Kind, Row, timed_output};
use crate::corpus::Linker;

/// The plain links `icf report` reads.
const LINKERS: [Linker; 2] = [Linker::Lld, Linker::Bfd];
/// The modes it estimates, each against the `icf link` of the same mode.
const MODES: [&str; 2] = ["safe", "all"];
/// How far above the actual saving an estimate may go, in percent of it.
pub(super) const OVER_ESTIMATE_PERCENT: u64 = 1;

/// `icf report --mode MODE` on one plain link, beside `icf link --mode MODE`
/// in front of the same linker.
#[derive(Debug, Clone)]
pub(super) struct Estimate {
    /// The linker whose plain output the report read.
    pub(super) linker: Linker,
    pub(super) mode: &'static str,
    pub(super) outcome: Outcome,
    /// `totals.saved_code_bytes` of the cold `icf MODE + LINKER` link's
    /// report; none when that link failed.
    pub(super) actual: Option<u64>,
}

/// What the report on the plain binary gave.
#[derive(Debug, Clone)]
pub(super) enum Outcome {
    /// The plain link failed: no binary to read.
    NoBinary,
    /// `icf report` failed or gave no estimate (the full error).
    Failed(String),
    Measured(Measured),
}

/// A report that ran in every round.
#[derive(Debug, Clone)]
pub(super) struct Measured {
    /// Its `totals.saved_code_bytes`, the same in every round.
    pub(super) saved_code_bytes: u64,
    /// Fastest wall time over the rounds.
    pub(super) wall: Duration,
    /// Peak RSS over the rounds, KiB.
    pub(super) rss_kib: u64,
    /// The report's `image`: how it read the binary.
    pub(super) image: Value,
}

impl Estimate {
    /// The estimate, when the report ran.
    pub(super) fn estimated(&self) -> Option<u64> {
        match &self.outcome {
            Outcome::Measured(measured) => Some(measured.saved_code_bytes),
            Outcome::NoBinary | Outcome::Failed(_) => None,
        }
    }

    /// The estimate divided by the actual saving (none without both, or
    /// when nothing was saved).
    pub(super) fn ratio(&self) -> Option<f64> {
        let (estimated, actual) = self.estimated().zip(self.actual)?;
        (actual > 0).then(|| estimated as f64 / actual as f64)
    }

    /// Whether the estimate stays within `OVER_ESTIMATE_PERCENT` above the
    /// actual saving (none without both).
    pub(super) fn within_actual(&self) -> Option<bool> {
        let (estimated, actual) = self.estimated().zip(self.actual)?;
        Some(
            u128::from(estimated) * 100
                <= u128::from(actual) * u128::from(100 + OVER_ESTIMATE_PERCENT),
        )
    }
}

/// `icf report` on the plain lld and GNU ld outputs in `out`, each mode
/// `runs` times, against the cold `icf link` rows' reports (`rows` measured).
/// A report's failure is recorded in its estimate.
pub(super) fn estimates(
    icf: &Path,
    rows: &[Row],
    out: &Path,
    reports: &Path,
    rss_file: &Path,
    runs: u32,
) -> Vec<Estimate> {
    let mut estimates = Vec::new();
    for linker in LINKERS {
        let plain = rows.iter().find(|row| {
            row.ok() && row.variant.linker == linker && row.variant.kind == Kind::Peer(None)
        });
        for mode in MODES {
            let actual = rows
                .iter()
                .find(|row| {
                    row.ok()
                        && row.variant.linker == linker
                        && row.variant.kind == Kind::Icf(mode, Cache::Cold)
                })
                .and_then(|row| saved_code_bytes(row.report.as_ref()?));
            let outcome = match plain {
                None => Outcome::NoBinary,
                Some(plain) => {
                    let binary = out.join(&plain.variant.file);
                    let kept = reports.join(format!("estimate-{mode}-{}.json", linker.name()));
                    eprintln!(
                        "    icf report --mode {mode}: the plain {} binary",
                        linker.name()
                    );
                    match report(icf, &binary, mode, runs, rss_file, &kept) {
                        Ok(measured) => Outcome::Measured(measured),
                        Err(error) => {
                            let text = format!("{error:#}");
                            eprintln!("    FAILED: {}", super::measure::first_error(&text));
                            Outcome::Failed(text)
                        }
                    }
                }
            };
            estimates.push(Estimate {
                linker,
                mode,
                outcome,
                actual,
            });
        }
    }
    estimates
}

/// `totals.saved_code_bytes` of an icf JSON report.
fn saved_code_bytes(report: &Value) -> Option<u64> {
    report["totals"]["saved_code_bytes"].as_u64()
}

/// Runs `icf report --format json --mode MODE BINARY` `runs` times (no
/// cache: each is a first report), keeps the last JSON in `kept`.
fn report(
    icf: &Path,
    binary: &Path,
    mode: &str,
    runs: u32,
    rss_file: &Path,
    kept: &Path,
) -> Result<Measured> {
    let mut command = Command::new(icf);
    command
        .args(["report", "--format", "json", "--no-cache", "--mode", mode])
        .arg(binary);
    let mut measured: Option<Measured> = None;
    for _ in 0..runs {
        let (wall, rss_kib, output) = timed_output(&command, rss_file)?;
        let json: Value =
            serde_json::from_slice(&output.stdout).context("icf report printed no JSON")?;
        let saved = saved_code_bytes(&json).context("no totals.saved_code_bytes in the report")?;
        if let Some(earlier) = &measured {
            ensure!(
                earlier.saved_code_bytes == saved,
                "the estimate differs between rounds: {} then {saved}",
                earlier.saved_code_bytes
            );
        }
        fs::write(kept, &output.stdout).with_context(|| format!("writing {}", kept.display()))?;
        measured = Some(Measured {
            saved_code_bytes: saved,
            wall: measured.as_ref().map_or(wall, |m| m.wall.min(wall)),
            rss_kib: measured
                .as_ref()
                .map_or(rss_kib, |m| m.rss_kib.max(rss_kib)),
            image: json["image"].clone(),
        });
    }
    measured.context("no round ran")
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// An estimate of `estimated` bytes (none: the report failed) against
    /// `actual`.
    pub(in super::super) fn estimate(
        linker: Linker,
        mode: &'static str,
        estimated: Option<u64>,
        actual: Option<u64>,
    ) -> Estimate {
        Estimate {
            linker,
            mode,
            outcome: match estimated {
                Some(saved_code_bytes) => Outcome::Measured(Measured {
                    saved_code_bytes,
                    wall: Duration::from_millis(190),
                    rss_kib: 64 * 1024,
                    image: Value::Null,
                }),
                None => Outcome::Failed("`icf report` failed (exit status: 1):\nerror: bad".into()),
            },
            actual,
        }
    }

    #[test]
    fn an_estimate_may_exceed_the_saving_by_one_percent() {
        let check = |estimated, actual| {
            estimate(Linker::Lld, "safe", Some(estimated), Some(actual)).within_actual()
        };
        assert_eq!(check(170_895, 214_144), Some(true));
        assert_eq!(check(1_099_956, 1_099_172), Some(true));
        assert_eq!(check(10_100, 10_000), Some(true));
        assert_eq!(check(10_101, 10_000), Some(false));
        assert_eq!(check(0, 0), Some(true));
        assert_eq!(check(1, 0), Some(false));
        let failed = estimate(Linker::Lld, "safe", None, Some(10));
        assert_eq!(failed.within_actual(), None);
        let unlinked = estimate(Linker::Lld, "safe", Some(10), None);
        assert_eq!(unlinked.within_actual(), None);
    }

    #[test]
    fn the_ratio_needs_a_saving() {
        let ratio = estimate(Linker::Bfd, "all", Some(170_895), Some(214_144)).ratio();
        assert!(
            ratio.is_some_and(|r| (r - 0.798_038).abs() < 1e-6),
            "{ratio:?}"
        );
        assert_eq!(estimate(Linker::Bfd, "all", Some(0), Some(0)).ratio(), None);
        assert_eq!(estimate(Linker::Bfd, "all", None, Some(5)).ratio(), None);
    }
}
