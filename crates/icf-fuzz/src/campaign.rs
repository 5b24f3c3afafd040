//! A campaign: mutate seeds for a number of executions or a time budget,
//! judge every case, count outcomes, and keep one reproduction per distinct
//! finding (`crash-<hash>.bin` with `crash-<hash>.case`, the note and a
//! replayable copy).
//!
//! Assumption: execution `i` of a campaign seeded with `s` depends only on
//! `(s, i)` and the seeds' bytes, so a finding replays from its note even
//! when the campaign stopped on a time budget. A hang ends the campaign:
//! its thread keeps running and would skew every later time limit.

use crate::case::InputKind;
use crate::case::{Case, RunOptions};
use crate::mutate::{Mutable, mutate};
use crate::oracle::{Finding, Outcome, run_case};
use crate::rng::SplitMix64;
use crate::seeds::Seed;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// When a campaign stops.
#[derive(Copy, Clone, Debug)]
pub enum Budget {
    Executions(u64),
    Time(Duration),
}

/// How to run a campaign.
#[derive(Clone, Debug)]
pub struct Campaign {
    pub seed: u64,
    pub budget: Budget,
    /// Scratch files of the case being run (`in/`, `out/`, `current.txt`).
    pub work_dir: PathBuf,
    /// Where reproductions of findings go; none keeps them only in the report.
    pub findings_dir: Option<PathBuf>,
    /// A case running longer than this is a hang.
    pub time_limit: Duration,
}

/// One distinct finding and how often it came up.
#[derive(Clone, Debug)]
pub struct FindingRecord {
    pub finding: Finding,
    pub count: u64,
    /// The first case that hit it, with its notes.
    pub case: Case,
    /// `crash-<hash>.bin`, when a findings directory was given.
    pub saved: Option<PathBuf>,
}

/// What a campaign did.
#[derive(Clone, Debug, Default)]
pub struct CampaignReport {
    pub executions: u64,
    pub accepted: u64,
    pub rejected: u64,
    pub executions_per_kind: Vec<(InputKind, u64)>,
    pub findings: Vec<FindingRecord>,
    pub elapsed: Duration,
    pub stopped_by_hang: bool,
}

impl CampaignReport {
    pub fn executions_per_second(&self) -> f64 {
        self.executions as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// A few lines for people: counts, rate, one line per finding.
    pub fn summary(&self) -> String {
        let mut text = format!(
            "{} inputs run in {:.1} s ({:.1} execs/s): {} accepted, {} rejected with a located error, {} distinct findings\n",
            self.executions,
            self.elapsed.as_secs_f64(),
            self.executions_per_second(),
            self.accepted,
            self.rejected,
            self.findings.len()
        );
        let per_target: Vec<String> = self
            .executions_per_kind
            .iter()
            .map(|(kind, count)| format!("{} {count}", kind.name()))
            .collect();
        text.push_str(&format!("per format: {}\n", per_target.join(", ")));
        if self.stopped_by_hang {
            text.push_str("stopped early: a case hung\n");
        }
        for (number, record) in self.findings.iter().enumerate() {
            text.push_str(&format!(
                "finding {}: {} (x{})\n",
                number + 1,
                record.finding.summary(),
                record.count
            ));
            for note in &record.case.notes {
                text.push_str(&format!("    {note}\n"));
            }
            if let Some(saved) = &record.saved {
                text.push_str(&format!("    saved: {}\n", saved.display()));
            }
        }
        text
    }
}

/// The case of execution `index`: a mutated seed and run options.
pub fn case_for_execution(
    campaign_seed: u64,
    index: u64,
    seeds: &[Seed],
    mutables: &[Mutable],
) -> Case {
    let mut rng = SplitMix64::for_execution(campaign_seed, index);
    let chosen = rng.below(seeds.len());
    let donors: Vec<&[u8]> = mutables.iter().map(|m| m.bytes.as_slice()).collect();
    let (seed, mutable) = (&seeds[chosen], &mutables[chosen]);
    let (bytes, changes) = mutate(&mut rng, mutable, &donors);
    let options = RunOptions {
        fold_all: rng.chance(1, 2),
        shared: rng.chance(1, 4),
        gc_sections: rng.chance(1, 4),
    };
    let mut files = seed.files.clone();
    if let Some(first) = files.first_mut() {
        first.bytes = bytes;
    }
    let mut notes = vec![
        format!("seed: {}", seed.label),
        format!("campaign seed {campaign_seed}, execution {index}"),
    ];
    notes.extend(
        changes
            .into_iter()
            .map(|change| format!("mutation: {change}")),
    );
    Case {
        kind: seed.kind,
        options,
        files,
        notes,
    }
}

/// Prepares each seed's first file for mutation.
pub fn prepare(seeds: &[Seed]) -> Vec<Mutable> {
    seeds
        .iter()
        .map(|seed| {
            Mutable::new(
                seed.files
                    .first()
                    .map(|f| f.bytes.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// Runs `campaign` over `seeds` (at least one).
pub fn run(campaign: &Campaign, seeds: &[Seed]) -> std::io::Result<CampaignReport> {
    if seeds.is_empty() {
        return Err(std::io::Error::other("a campaign needs at least one seed"));
    }
    let mutables = prepare(seeds);
    std::fs::create_dir_all(&campaign.work_dir)?;
    if let Some(dir) = &campaign.findings_dir {
        std::fs::create_dir_all(dir)?;
    }
    let started = Instant::now();
    let mut report = CampaignReport::default();
    for index in 0.. {
        let done = match campaign.budget {
            Budget::Executions(count) => index >= count,
            Budget::Time(limit) => started.elapsed() >= limit,
        };
        if done {
            break;
        }
        let case = case_for_execution(campaign.seed, index, seeds, &mutables);
        // If the process dies (stack overflow, allocation failure), this
        // names the case whose files are left in `in/`.
        std::fs::write(campaign.work_dir.join("current.txt"), case.notes.join("\n"))?;
        let outcome = run_case(&case, &campaign.work_dir, campaign.time_limit)?;
        report.executions += 1;
        match report
            .executions_per_kind
            .iter_mut()
            .find(|(t, _)| *t == case.kind)
        {
            Some((_, count)) => *count += 1,
            None => report.executions_per_kind.push((case.kind, 1)),
        }
        match outcome {
            Outcome::Accepted => report.accepted += 1,
            Outcome::Rejected(_) => report.rejected += 1,
            Outcome::Finding(finding) => {
                let hang = finding.is_hang();
                record(&mut report, finding, case, campaign.findings_dir.as_deref())?;
                if hang {
                    report.stopped_by_hang = true;
                    break;
                }
            }
        }
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

fn record(
    report: &mut CampaignReport,
    finding: Finding,
    mut case: Case,
    dir: Option<&Path>,
) -> std::io::Result<()> {
    let key = finding.key();
    if let Some(known) = report.findings.iter_mut().find(|r| r.finding.key() == key) {
        known.count += 1;
        return Ok(());
    }
    case.notes.push(format!("finding: {}", finding.summary()));
    if !finding.stack.is_empty() {
        case.notes.push(format!(
            "stack (icf frames, innermost first):\n{}",
            finding.stack
        ));
    }
    let saved = match dir {
        Some(dir) => Some(save(dir, &case)?),
        None => None,
    };
    report.findings.push(FindingRecord {
        finding,
        count: 1,
        case,
        saved,
    });
    Ok(())
}

/// Writes `crash-<hash>.bin` (the mutated file) and `crash-<hash>.case`.
pub fn save(dir: &Path, case: &Case) -> std::io::Result<PathBuf> {
    let bytes = case
        .files
        .first()
        .map(|f| f.bytes.as_slice())
        .unwrap_or_default();
    let stem = format!("crash-{:016x}", icf::fnv1a(bytes.iter().copied()));
    let binary = dir.join(format!("{stem}.bin"));
    std::fs::write(&binary, bytes)?;
    std::fs::write(dir.join(format!("{stem}.case")), case.to_text())?;
    Ok(binary)
}
