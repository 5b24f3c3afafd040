//! Wrong folds planted on purpose, to hunt `icf verify`'s false passes.
//!
//! After a program's folded builds, one more link makes one fold icf must
//! never make, through icf's hidden testing option `--plant-fold
//! KIND:KEPT=MEMBER` (`crates/icf/src/analyse/plant.rs`: the plan is changed after
//! the analysis, and written by icf's own fold machinery), runs the
//! program and runs `icf verify PLAIN PLANTED`. A planted fold that changes
//! the program's exit status or transcript and still verifies is a finding
//! (`verify-false-pass`, kept in `target/fuzz/repro-<seed>/` like the
//! others); one that changes nothing is harmless, whatever verify answers.
//!
//! The kinds, each a rule of icf broken on purpose:
//!
//! - `near-duplicate`: two functions of one near-duplicate group of icf's
//!   report (the same structural hash, different classes) merged, as a
//!   comparator blind to their difference would (`merge`, mode all).
//! - `significant`: a member the safe plan keeps apart for its significant
//!   address (a thunk, or kept; `--keep-unique` included) made an alias of
//!   its class's kept copy (`alias`, mode safe).
//! - `one-past-end`: a function returning one past an array's end merged
//!   with one of its family returning another place (the next array's
//!   start, a twin's end, another index), as narrowing the end pointer to
//!   the next object would (`merge`, mode all).
//! - `jump-table`: a function with a switch jumping through the jump table
//!   of a variant of its family, or of another family's function, half
//!   the time each where both exist (`table`, mode safe). Only x86-64 clang
//!   with `-ffunction-sections` gives a table a section of its own that
//!   relocations tie to its function (gcc puts tables in `.rodata`,
//!   AArch64 tables hold offsets the assembler resolved), which is what icf
//!   knows as the function's table and can move.
//! - `unaligned-thunk`: a member declared `aligned(N)`, whose alignment
//!   `main` prints, made a thunk to a twin aligned only as a jump needs
//!   (`unaligned-thunk`, mode safe). Only in gcc builds with `-g`: a linked
//!   image keeps a function's declared alignment nowhere but in gcc's
//!   `DW_AT_alignment` (clang writes none), so there alone can `icf
//!   verify` tell a lost alignment from a chance one.
//!
//! The kind is the seed's (round robin over the kinds), or when the
//! program offers no pair for it another kind in an order the seed draws;
//! the pair is drawn from what the generator knows of its families
//! ([`FamilyInfo`]) and from icf's JSON reports of the folded builds
//! (near-duplicate groups, members kept apart). A plant icf refuses (the
//! pair cannot be folded by its edits: a section shared with other code, a
//! table icf does not know, a function `--gc-sections` drops) is counted,
//! not a finding.
//!
//! Main assumption: one planted link, run and verify per program keeps the
//! campaign's cost within a third more than without it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::run::{self, Finding, FindingKind, Mode, Outcome, Plan, Run, Step, Tools};
use super::{
    Arch, Compiler, FUNCTION_ADDRESS_PREFIX, FamilyInfo, FamilyKind, MemberInfo, Program, Rng,
};

/// (kept, member) pairs of function names.
type Pairs = Vec<(String, String)>;

/// The binary a planted build writes.
const PLANTED: &str = "planted";

/// What kind of wrong fold a plant is (see the module header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    NearDuplicate,
    Significant,
    OnePastEnd,
    JumpTable,
    UnalignedThunk,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::NearDuplicate,
        Kind::Significant,
        Kind::OnePastEnd,
        Kind::JumpTable,
        Kind::UnalignedThunk,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::NearDuplicate => "near-duplicate",
            Kind::Significant => "significant",
            Kind::OnePastEnd => "one-past-end",
            Kind::JumpTable => "jump-table",
            Kind::UnalignedThunk => "unaligned-thunk",
        }
    }

    /// The KIND of icf's `--plant-fold`.
    fn plant_kind(self) -> &'static str {
        match self {
            Kind::NearDuplicate | Kind::OnePastEnd => "merge",
            Kind::Significant => "alias",
            Kind::JumpTable => "table",
            Kind::UnalignedThunk => "unaligned-thunk",
        }
    }

    /// The mode the planted build is linked and verified in.
    pub fn mode(self) -> Mode {
        match self {
            Kind::NearDuplicate | Kind::OnePastEnd => Mode::All,
            Kind::Significant | Kind::JumpTable | Kind::UnalignedThunk => Mode::Safe,
        }
    }
}

/// The wrong fold chosen for a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub kind: Kind,
    pub kept: String,
    pub member: String,
}

impl Pick {
    /// The value of icf's `--plant-fold`.
    pub fn argument(&self) -> String {
        format!("{}:{}={}", self.kind.plant_kind(), self.kept, self.member)
    }
}

/// What a planted build showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ran {
    /// Its exit status or transcript differs from the plain build's.
    pub differs: bool,
    /// `icf verify PLAIN PLANTED` passed.
    pub verified: bool,
    /// The program's regular folded build of the same mode had a finding
    /// (most often a fold verify cannot prove): a rejection of the planted
    /// build may then not be the plant's.
    pub regular_unproved: bool,
}

/// A planted fold and what came of it: `Err` with icf's reason when the
/// planted link failed (icf refused the plant, or the linker its edits).
#[derive(Debug, Clone)]
pub struct Planted {
    pub pick: Pick,
    pub result: Result<Ran, String>,
    /// Time spent linking, running and verifying it.
    pub seconds: f64,
}

impl Planted {
    /// A few words for the program's line.
    pub fn describe(&self) -> String {
        let result = match &self.result {
            Err(reason) => {
                let last = reason.lines().last().unwrap_or_default();
                let last = last.trim_start_matches("icf: error: ");
                format!("refused ({})", last.chars().take(120).collect::<String>())
            }
            Ok(ran) => format!(
                "{}, {}",
                if ran.differs { "differs" } else { "harmless" },
                if ran.verified { "verified" } else { "rejected" }
            ),
        };
        format!("plant {} {result}", self.pick.kind.name())
    }
}

/// What a program offers to pick pairs from.
#[derive(Debug, Default)]
pub struct Sources<'a> {
    pub arch: Option<Arch>,
    pub clang: bool,
    /// The build records each function's declared alignment in DWARF
    /// (gcc with `-g`: `DW_AT_alignment`), which is all `icf verify` can
    /// know of it in a linked image.
    pub alignment_in_dwarf: bool,
    pub families: &'a [FamilyInfo],
    /// Functions the program defines: whether each has a section of its
    /// own ([`Program::own_sections`]).
    pub own_sections: Option<&'a BTreeMap<String, bool>>,
    /// Near-duplicate groups of icf's report (mode all, else safe): one
    /// function of each class sharing a structural hash.
    pub near_duplicates: Vec<Vec<String>>,
    /// (kept copy, member) of the safe report's code classes, for members
    /// kept apart for their significant address.
    pub kept_apart: Vec<(String, String)>,
}

impl Sources<'_> {
    /// Whether the program defines `name` in a section of its own (what
    /// icf moves when a function folds).
    fn own_section(&self, name: &str) -> bool {
        self.own_sections
            .is_some_and(|sections| sections.get(name) == Some(&true))
    }

    /// Names the plant could resolve to another definition than meant: a
    /// weak function with a strong definition elsewhere.
    fn ambiguous(&self, name: &str) -> bool {
        self.families
            .iter()
            .flat_map(|family| &family.members)
            .any(|member| member.overridden && member.name == name)
    }
}

/// The wrong fold to plant in the program of `seed`, if it offers any:
/// of the seed's kind (round robin), else of another kind in an order the
/// seed draws.
pub fn pick(seed: u64, sources: &Sources<'_>) -> Option<Pick> {
    let mut rng = Rng::new(seed ^ 0x0b1a_57ed_f01d_0000);
    let first = Kind::ALL[(seed % Kind::ALL.len() as u64) as usize];
    let mut others: Vec<Kind> = Kind::ALL.into_iter().filter(|&k| k != first).collect();
    for index in (1..others.len()).rev() {
        others.swap(index, rng.below(index + 1));
    }
    std::iter::once(first)
        .chain(others)
        .find_map(|kind| pick_kind(kind, sources, &mut rng))
}

fn choose<'a, T>(rng: &mut Rng, items: &'a [T]) -> Option<&'a T> {
    (!items.is_empty()).then(|| &items[rng.below(items.len())])
}

/// A (kept, member) pair of `kind` from `sources`.
fn pick_kind(kind: Kind, sources: &Sources<'_>, rng: &mut Rng) -> Option<Pick> {
    let pairs: Vec<(String, String)> = match kind {
        Kind::NearDuplicate => {
            let groups: Vec<Vec<&String>> = sources
                .near_duplicates
                .iter()
                .map(|group| {
                    group
                        .iter()
                        .filter(|name| sources.own_section(name) && !sources.ambiguous(name))
                        .collect()
                })
                .filter(|group: &Vec<&String>| group.len() >= 2)
                .collect();
            let group = choose(rng, &groups)?;
            let kept = rng.below(group.len());
            let member = (kept + 1 + rng.below(group.len() - 1)) % group.len();
            vec![(group[kept].clone(), group[member].clone())]
        }
        Kind::Significant => sources
            .kept_apart
            .iter()
            .filter(|(kept, member)| {
                sources.own_section(member)
                    && !sources.ambiguous(kept)
                    && !sources.ambiguous(member)
            })
            .cloned()
            .collect(),
        Kind::OnePastEnd => one_past_end_pairs(sources.families),
        Kind::JumpTable => {
            if sources.arch != Some(Arch::X86_64) || !sources.clang {
                return None;
            }
            let (within, across) = jump_table_pairs(sources.families);
            match (within.is_empty(), across.is_empty()) {
                (false, false) if rng.below(2) == 0 => within,
                (false, true) => within,
                _ => across,
            }
        }
        Kind::UnalignedThunk if !sources.alignment_in_dwarf => return None,
        Kind::UnalignedThunk => family_pairs(sources.families, |kept, member| {
            member.own_section && member.align.is_some() && !kept.variant && !member.variant
        }),
    };
    let (kept, member) = choose(rng, &pairs)?.clone();
    Some(Pick { kind, kept, member })
}

/// Pairs of members of one template family without a switch (a function
/// with a jump table is entered past its start: no thunk) that `fits`,
/// neither overridden.
fn family_pairs(
    families: &[FamilyInfo],
    fits: impl Fn(&MemberInfo, &MemberInfo) -> bool,
) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for family in families {
        if family.kind != (FamilyKind::Template { switch: false }) {
            continue;
        }
        for kept in family.members.iter().filter(|m| !m.overridden) {
            for member in family.members.iter().filter(|m| !m.overridden) {
                if kept.name != member.name && fits(kept, member) {
                    pairs.push((kept.name.clone(), member.name.clone()));
                }
            }
        }
    }
    pairs
}

/// (kept, member) pairs of functions with a switch, both in sections of
/// their own and neither overridden: of one family where one of them is a
/// variant, and of two families.
fn jump_table_pairs(families: &[FamilyInfo]) -> (Pairs, Pairs) {
    let members: Vec<(usize, &MemberInfo)> = families
        .iter()
        .enumerate()
        .filter(|(_, family)| family.kind == FamilyKind::Template { switch: true })
        .flat_map(|(index, family)| family.members.iter().map(move |member| (index, member)))
        .filter(|(_, member)| member.own_section && !member.overridden)
        .collect();
    let (mut within, mut across) = (Vec::new(), Vec::new());
    for &(kept_family, kept) in &members {
        for &(member_family, member) in &members {
            let pair = (kept.name.clone(), member.name.clone());
            if kept_family != member_family {
                across.push(pair);
            } else if kept.name != member.name && (kept.variant || member.variant) {
                within.push(pair);
            }
        }
    }
    (within, across)
}

/// (kept, member) pairs of pointer families where the member returns one
/// past an array's end and the kept function another place of its family
/// (of another family when its own has none).
fn one_past_end_pairs(families: &[FamilyInfo]) -> Vec<(String, String)> {
    let pointers: Vec<&FamilyInfo> = families
        .iter()
        .filter(|family| family.kind == FamilyKind::Pointer)
        .collect();
    let mut within = Vec::new();
    let mut across = Vec::new();
    for (index, family) in pointers.iter().enumerate() {
        for member in family.members.iter().filter(|m| m.own_section) {
            let Some((_, _, true)) = &member.place else {
                continue;
            };
            for (other_index, other) in pointers.iter().enumerate() {
                for kept in &other.members {
                    if kept.place.is_none() || kept.place == member.place || !kept.own_section {
                        continue;
                    }
                    let pair = (kept.name.clone(), member.name.clone());
                    if other_index == index {
                        within.push(pair);
                    } else {
                        across.push(pair);
                    }
                }
            }
        }
    }
    if within.is_empty() { across } else { within }
}

/// The near-duplicate groups of an icf JSON report.
fn near_duplicates(report: &serde_json::Value) -> Vec<Vec<String>> {
    let Some(groups) = report.get("near_duplicates").and_then(|g| g.as_array()) else {
        return Vec::new();
    };
    groups
        .iter()
        .filter_map(|group| group.get("functions")?.as_array())
        .map(|functions| {
            functions
                .iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .collect()
}

/// (kept copy, member) for every member of a code class the report keeps
/// apart (a thunk or kept) for its significant address or `--keep-unique`.
fn kept_apart(report: &serde_json::Value) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let Some(groups) = report.get("groups").and_then(|g| g.as_array()) else {
        return pairs;
    };
    let text = |value: &serde_json::Value, key: &str| {
        value
            .get(key)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    for group in groups {
        if text(group, "kind") != "code" {
            continue;
        }
        let Some(members) = group.get("members").and_then(|m| m.as_array()) else {
            continue;
        };
        let Some(kept) = members.iter().find(|m| text(m, "action") == "kept") else {
            continue;
        };
        for member in members {
            let action = text(member, "action");
            let reason = text(member, "reason");
            let significant = reason.contains("address")
                || reason.contains("referenced from data")
                || reason.contains("dynamic symbol table")
                || reason == "--keep-unique";
            if (action == "thunk" || action == "keep") && significant {
                pairs.push((text(kept, "name"), text(member, "name")));
            }
        }
    }
    pairs
}

fn read_report(dir: &Path, mode: Mode) -> Option<serde_json::Value> {
    let text = fs::read_to_string(dir.join(format!("{}.json", mode.name()))).ok()?;
    serde_json::from_str(&text).ok()
}

/// The planted link: the folded link of `pick`'s mode with the plant.
fn link_step(plan: &Plan, pick: &Pick) -> Step {
    plan.icf_link(
        &["--cache-dir", "cache"],
        pick.kind.mode(),
        &["--plant-fold", &pick.argument()],
        PLANTED,
    )
}

/// Plants one wrong fold in the program built in `dir` (see the module
/// header), runs and verifies it, and records what came of it in `outcome`.
pub(super) fn check(
    program: &Program,
    plan: &Plan,
    tools: &Tools,
    dir: &Path,
    plain: &Run,
    outcome: &mut Outcome,
) -> Result<()> {
    let safe = read_report(dir, Mode::Safe);
    let all = read_report(dir, Mode::All);
    let sources = Sources {
        arch: Some(program.config.arch),
        clang: program.config.compiler == Compiler::Clang,
        alignment_in_dwarf: program.config.compiler != Compiler::Clang
            && program.config.extra_cflags.iter().any(|flag| flag == "-g"),
        families: &program.family_info,
        own_sections: Some(&program.own_sections),
        near_duplicates: all
            .as_ref()
            .or(safe.as_ref())
            .map(near_duplicates)
            .unwrap_or_default(),
        kept_apart: safe.as_ref().map(kept_apart).unwrap_or_default(),
    };
    let Some(pick) = pick(program.seed, &sources) else {
        return Ok(());
    };
    let started = std::time::Instant::now();
    let mode = pick.kind.mode();
    let regular_unproved = outcome.findings.iter().any(|finding| finding.mode == mode);
    let link = link_step(plan, &pick);
    let output = run::execute(&link, dir, tools)?;
    if run::timed_out(&link, &output, mode, outcome) {
        return Ok(());
    }
    if !output.status.success() {
        let reason = run::tail(&output.stderr, 2);
        outcome.plant = Some(Planted {
            pick,
            result: Err(reason),
            seconds: started.elapsed().as_secs_f64(),
        });
        return Ok(());
    }
    let planted = run::run_binary(&plan.run(PLANTED), dir, tools)?;
    fs::write(dir.join("planted.out"), &planted.stdout).context("writing planted.out")?;
    let plain_lines = run::comparable(&plain.stdout, mode);
    let planted_lines = run::comparable(&planted.stdout, mode);
    let differs = planted.status != plain.status || plain_lines != planted_lines;
    let verify_step = plan.verify_binary(mode, PLANTED);
    let verify = run::execute(&verify_step, dir, tools)?;
    if run::timed_out(&verify_step, &verify, mode, outcome) {
        return Ok(());
    }
    let verified = verify.status.success();
    if differs && verified {
        let mut detail = format!(
            "planted `--plant-fold {}` ({}, mode {}) behaves differently, and icf verify passed it\n\
             plain: {}, planted: {}\n",
            pick.argument(),
            pick.kind.name(),
            mode.name(),
            plain.status,
            planted.status
        );
        detail.push_str(&run::first_differences(&plain_lines, &planted_lines));
        let _ = writeln!(detail, "verify: {}", run::tail(&verify.stdout, 3));
        outcome.findings.push(Finding {
            kind: FindingKind::VerifyFalsePass,
            mode,
            detail,
        });
    }
    if !verified && verify.status.code() != Some(1) {
        outcome.findings.push(Finding {
            kind: FindingKind::VerifyCrashed,
            mode,
            detail: format!(
                "`icf verify plain planted` ({}) {}:\n{}",
                pick.argument(),
                verify.status,
                run::verify_detail(&verify)
            ),
        });
    }
    outcome.plant = Some(Planted {
        pick,
        result: Ok(Ran {
            differs,
            verified,
            regular_unproved,
        }),
        seconds: started.elapsed().as_secs_f64(),
    });
    Ok(())
}

/// The lines of a reproduction's `build.sh` that make, run and verify the
/// planted build (they set `status=1` on a false pass).
pub(super) fn script(planted: &Planted, plan: &Plan) -> String {
    let pick = &planted.pick;
    let mode = pick.kind.mode();
    let filter = match mode {
        Mode::Safe => "cat".to_string(),
        Mode::All => format!("grep -v '^{FUNCTION_ADDRESS_PREFIX}'"),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# The wrong fold planted on purpose (crates/icf-fuzz/src/programs/plant.rs): {}, mode {}.",
        pick.kind.name(),
        mode.name()
    );
    let _ = writeln!(
        out,
        "if {}; then\n  \
         {} > planted.out; echo \"exit $?\" >> planted.out\n  \
         if diff <({filter} plain.out) <({filter} planted.out) > planted.diff; then planted_differs=0; echo 'planted: same output (harmless)'; \
         else planted_differs=1; echo 'planted: OUTPUT DIFFERS (see planted.diff)'; fi\n  \
         if {}; then\n    \
         if [ $planted_differs = 1 ]; then echo 'planted: icf verify PASSED a fold that changes the program (verify-false-pass)'; status=1; \
         else echo 'planted: icf verify passed it'; fi\n  \
         else echo 'planted: icf verify rejected it'; fi\n\
         else\n  echo 'planted: icf link refused the plant'\nfi",
        link_step(plan, pick).shell(),
        plan.run(PLANTED).shell(),
        plan.verify_binary(mode, PLANTED).shell()
    );
    out
}

/// The reproduction README's section on the planted fold.
pub(super) fn readme(planted: &Planted) -> String {
    let pick = &planted.pick;
    let result = match &planted.result {
        Err(reason) => format!("icf refused it:\n\n```\n{}\n```", reason.trim_end()),
        Ok(ran) => format!(
            "the program {}; `icf verify` {} it.",
            if ran.differs {
                "behaves differently (see planted.diff)"
            } else {
                "behaves as the plain one"
            },
            if ran.verified { "passed" } else { "rejected" }
        ),
    };
    format!(
        "## Planted fold\n\n`icf link --plant-fold {}` ({}, mode {}, see crates/icf-fuzz/src/programs/plant.rs): {result}\n",
        pick.argument(),
        pick.kind.name(),
        pick.kind.mode().name()
    )
}

/// Per kind of plant, what the campaign saw.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Programs the kind was picked for.
    pub picked: u64,
    /// Plants icf (or the linker) refused.
    pub refused: u64,
    /// Planted builds that linked and ran.
    pub planted: u64,
    /// Of those, the ones behaving differently from the plain build.
    pub differs: u64,
    /// Of those planted, the ones `icf verify` rejected.
    pub rejected: u64,
    /// Of those rejected, the ones whose program's regular folded build
    /// had a finding too (verify may have rejected another fold).
    pub regular_unproved: u64,
    /// Behaving differently and verified.
    pub false_passes: u64,
    /// Time spent on the planted builds.
    pub seconds: f64,
}

impl Counts {
    pub fn add(&mut self, planted: &Planted) {
        self.picked += 1;
        self.seconds += planted.seconds;
        match planted.result {
            Err(_) => self.refused += 1,
            Ok(ran) => {
                self.planted += 1;
                self.differs += u64::from(ran.differs);
                self.rejected += u64::from(!ran.verified);
                self.regular_unproved += u64::from(!ran.verified && ran.regular_unproved);
                self.false_passes += u64::from(ran.differs && ran.verified);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, place: Option<(&str, usize, bool)>) -> MemberInfo {
        MemberInfo {
            name: name.to_string(),
            own_section: true,
            variant: false,
            overridden: false,
            align: None,
            place: place.map(|(array, index, end)| (array.to_string(), index, end)),
        }
    }

    #[test]
    fn one_past_the_end_pairs_with_another_place_of_its_family() {
        let families = [
            FamilyInfo {
                kind: FamilyKind::Pointer,
                members: vec![
                    member("p0_0", Some(("ca0", 4, true))),
                    member("p0_1", Some(("ca0n", 0, false))),
                    member("p0_2", Some(("ca0", 4, true))),
                ],
            },
            FamilyInfo {
                kind: FamilyKind::Pointer,
                members: vec![member("p1_0", Some(("ca1", 2, false)))],
            },
        ];
        let pairs = one_past_end_pairs(&families);
        assert_eq!(
            pairs,
            vec![
                ("p0_1".to_string(), "p0_0".to_string()),
                ("p0_1".to_string(), "p0_2".to_string())
            ]
        );
        // A family with one place only pairs across families.
        let alone = [families[1].clone(), {
            let mut family = families[0].clone();
            family.members.remove(1);
            family
        }];
        assert!(
            one_past_end_pairs(&alone)
                .iter()
                .all(|(kept, _)| kept == "p1_0")
        );
    }

    #[test]
    fn the_seed_chooses_the_kind_and_a_missing_kind_passes_to_the_next() {
        let families = [FamilyInfo {
            kind: FamilyKind::Template { switch: false },
            members: vec![
                MemberInfo {
                    align: Some(64),
                    ..member("f0_0", None)
                },
                member("f0_1", None),
                MemberInfo {
                    overridden: true,
                    ..member("f0_2", None)
                },
            ],
        }];
        let sections: BTreeMap<String, bool> = ["a", "b", "g", "f0_1", "f0_2"]
            .iter()
            .map(|name| (name.to_string(), true))
            .collect();
        let sources = Sources {
            arch: Some(Arch::X86_64),
            clang: true,
            alignment_in_dwarf: true,
            families: &families,
            own_sections: Some(&sections),
            near_duplicates: vec![
                vec!["f0_2".into(), "g".into()],
                vec!["a".into(), "b".into()],
            ],
            kept_apart: vec![("f0_0".into(), "f0_1".into())],
        };
        // Seed 0 asks for a near-duplicate: the group with an overridden
        // name has one usable name left, so the other group serves.
        let near = pick(0, &sources).expect("a pick");
        assert_eq!(near.kind, Kind::NearDuplicate);
        assert!(near.argument() == "merge:a=b" || near.argument() == "merge:b=a");
        assert_eq!(
            pick(1, &sources).map(|p| p.argument()),
            Some("alias:f0_0=f0_1".into())
        );
        assert_eq!(
            pick(4, &sources).map(|p| p.argument()),
            Some("unaligned-thunk:f0_1=f0_0".into())
        );
        // No pointer family, no switch: another kind the program offers.
        for seed in [2, 3, 7, 8, 12, 13] {
            let kind = pick(seed, &sources).map(|p| p.kind);
            assert!(
                matches!(
                    kind,
                    Some(Kind::NearDuplicate | Kind::Significant | Kind::UnalignedThunk)
                ),
                "seed {seed}: {kind:?}"
            );
        }
        let only_thunks = Sources {
            near_duplicates: Vec::new(),
            kept_apart: Vec::new(),
            ..sources
        };
        assert!(
            (0..10)
                .all(|seed| pick(seed, &only_thunks).map(|p| p.kind) == Some(Kind::UnalignedThunk))
        );
        assert_eq!(pick(0, &Sources::default()), None);
    }

    #[test]
    fn jump_tables_come_from_a_variant_of_the_family_or_another_family() {
        let switch = |members: Vec<MemberInfo>| FamilyInfo {
            kind: FamilyKind::Template { switch: true },
            members,
        };
        let families = [
            switch(vec![
                member("f0_0", None),
                member("f0_1", None),
                MemberInfo {
                    variant: true,
                    ..member("f0_2", None)
                },
            ]),
            switch(vec![MemberInfo {
                own_section: false,
                ..member("f1_0", None)
            }]),
            switch(vec![member("f2_0", None)]),
        ];
        let (within, across) = jump_table_pairs(&families);
        let names = |pairs: &[(String, String)]| -> Vec<String> {
            pairs.iter().map(|(k, m)| format!("{k}={m}")).collect()
        };
        assert_eq!(
            names(&within),
            ["f0_0=f0_2", "f0_1=f0_2", "f0_2=f0_0", "f0_2=f0_1"]
        );
        assert_eq!(across.len(), 6);
        assert!(
            names(&across)
                .iter()
                .all(|pair| pair.contains("f2_0") && !pair.contains("f1_0"))
        );
    }

    #[test]
    fn reports_give_near_duplicates_and_members_kept_apart() {
        let report: serde_json::Value = serde_json::from_str(
            r#"{"groups": [
                 {"kind": "code", "members": [
                   {"name": "f1", "action": "kept"},
                   {"name": "f2", "action": "thunk", "reason": "address taken in main"},
                   {"name": "f3", "action": "alias"},
                   {"name": "f4", "action": "thunk", "reason": "keeps its own symbols (COMDAT group, or a global that cannot move)"},
                   {"name": "f5", "action": "keep", "reason": "--keep-unique"}]},
                 {"kind": "data", "members": [
                   {"name": "ca0", "action": "kept"},
                   {"name": "ca0t", "action": "keep", "reason": "address-significant (.llvm_addrsig)"}]}],
               "near_duplicates": [{"functions": ["f1", "g1"], "size": 8}]}"#,
        )
        .expect("json");
        assert_eq!(
            kept_apart(&report),
            vec![("f1".into(), "f2".into()), ("f1".into(), "f5".into())]
        );
        assert_eq!(
            near_duplicates(&report),
            vec![vec!["f1".to_string(), "g1".to_string()]]
        );
    }
}
