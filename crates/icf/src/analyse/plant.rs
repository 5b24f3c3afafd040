//! Wrong folds made on purpose, to test `icf verify`: the hidden testing
//! option `--plant-fold KIND:KEPT=MEMBER` of `icf link` and `icf fold`
//! (repeatable). After the analysis has planned the right folds, each
//! planted fold changes the plan so that MEMBER runs KEPT's code (or jumps
//! through KEPT's jump table) whatever the comparator and the safety rules
//! say, and the edits are then made by the same code as every real fold
//! (`write/mod.rs`, `icf_object`'s writers). `cargo xtask fuzz` plants one per
//! generated program (`crates/icf-fuzz/src/programs/plant.rs`) and requires `icf verify`
//! to reject every planted fold that changes what the program does. No
//! other caller sets it, and without it the plan is untouched.
//!
//! The kinds, each a bug icf could have:
//!
//! - `merge`: the classes of KEPT and MEMBER become one class, planned by
//!   the usual rules (significant addresses get thunks in safe mode), as if
//!   the comparator had found the two equal: near-duplicates, or a
//!   reference narrowed to the wrong object.
//! - `alias`: MEMBER becomes an alias of KEPT's body even where its address
//!   is significant or `--keep-unique` names it (a thunk instead only where
//!   its global symbols cannot move to KEPT's object).
//! - `thunk` and `unaligned-thunk`: MEMBER's body becomes a jump to KEPT's,
//!   aligned as MEMBER was, or only as a jump needs.
//! - `table`: MEMBER keeps its body, but its jump table becomes an alias of
//!   KEPT's (the one read-only data candidate each owns).
//!
//! KEPT and MEMBER name functions as `icf explain` does (mangled or
//! demangled, `NAME@OBJECT`); a name several loaded objects define is the
//! definition the link resolves it to. "KEPT's body" is the body KEPT runs
//! in the plan: its class's kept copy when KEPT itself folds.
//!
//! Main assumption: taking a member out of its class (it then keeps its
//! body) is sound in safe mode, where no fold relies on another class
//! merging addresses; `alias`, the thunks and `table` do that with MEMBER
//! (and with its whole class when MEMBER was the class's kept copy), so
//! the planted fold is the only wrong one in safe mode. In mode `all` a
//! fold of another class may rely on MEMBER's address merging with its
//! twins; `merge` takes nothing apart and is right for either mode.

use crate::analyse::analysis::Analysis;
use crate::options::{PlantKind, PlantedFold};
use anyhow::{Context, bail};
use icf_fold::CandidateId;
use icf_fold::plan::{Action, ClassPlan, Decision, KeepReason};

impl Analysis<'_, '_> {
    /// Changes the plan by every planted fold in turn (see the module
    /// header); fails naming the plant that cannot be made.
    pub fn plant(&mut self, plants: &[PlantedFold]) -> anyhow::Result<()> {
        for plant in plants {
            self.plant_one(plant)
                .with_context(|| format!("--plant-fold {plant}"))?;
        }
        Ok(())
    }

    fn plant_one(&mut self, plant: &PlantedFold) -> anyhow::Result<()> {
        let kept = self.planted_function(&plant.kept)?;
        let member = self.planted_function(&plant.member)?;
        if kept == member {
            bail!("{} and {} are one function", plant.kept, plant.member);
        }
        match plant.kind {
            PlantKind::Merge => self.merge_classes(kept, member)?,
            PlantKind::Table => {
                let kept_table = self.table_of(kept, &plant.kept)?;
                let member_table = self.table_of(member, &plant.member)?;
                // The function keeps its own body: it runs with the other's table.
                self.take_out_of_its_class(member);
                self.tables_follow();
                self.fold_into(kept_table, member_table, None)?;
                return Ok(());
            }
            PlantKind::Alias => {
                self.take_out_of_its_class(member);
                self.fold_into(kept, member, None)?;
            }
            PlantKind::Thunk | PlantKind::UnalignedThunk => {
                if !self.may_become_thunk(member) {
                    bail!(
                        "{} cannot be a thunk (something enters it past its start)",
                        plant.member
                    );
                }
                self.take_out_of_its_class(member);
                let keep_alignment = plant.kind == PlantKind::Thunk;
                self.fold_into(kept, member, Some(KeepReason::Planted { keep_alignment }))?;
            }
        }
        self.tables_follow();
        Ok(())
    }

    /// The one function candidate `name` names: of several, the definition
    /// the link resolves the name to.
    fn planted_function(&self, name: &str) -> anyhow::Result<CandidateId> {
        let found: Vec<CandidateId> = self
            .find(name)
            .into_iter()
            .filter(|&c| self.candidates[c.index()].is_code())
            .collect();
        if let [one] = found.as_slice() {
            return Ok(*one);
        }
        if found.is_empty() {
            bail!("no function named {name} in the inputs");
        }
        let winner = self.program.definitions.winner(name.as_bytes());
        found
            .iter()
            .copied()
            .find(|&c| {
                winner.is_some_and(|(object, symbol)| {
                    self.candidates[c.index()].object == object
                        && self.global_symbols(c).contains(&symbol)
                })
            })
            .with_context(|| {
                format!(
                    "{} functions are named {name} and the link resolves the name to none of them",
                    found.len()
                )
            })
    }

    /// The jump table `function` owns (see [`Analysis::owner`]).
    fn table_of(&self, function: CandidateId, name: &str) -> anyhow::Result<CandidateId> {
        let tables: Vec<CandidateId> = (0..self.owner.len())
            .filter(|&table| self.owner[table] == Some(function))
            .map(|table| CandidateId(table as u32))
            .collect();
        match tables.as_slice() {
            [one] => Ok(*one),
            [] => bail!("{name} owns no jump table icf knows of"),
            _ => bail!("{name} owns {} jump tables", tables.len()),
        }
    }

    /// Where `candidate` is in the plan: (class index, decision index).
    fn place_in_plan(&self, candidate: CandidateId) -> Option<(usize, usize)> {
        self.plan
            .classes
            .iter()
            .enumerate()
            .find_map(|(index, class)| {
                class
                    .decisions
                    .iter()
                    .position(|d| d.candidate == candidate)
                    .map(|decision| (index, decision))
            })
    }

    /// Takes `candidate` out of its class: it keeps its body. When it was
    /// the class's kept copy, the whole class is dropped.
    fn take_out_of_its_class(&mut self, candidate: CandidateId) {
        let Some((class, decision)) = self.place_in_plan(candidate) else {
            return;
        };
        if self.plan.classes[class].kept == candidate {
            self.plan.classes.remove(class);
        } else {
            self.plan.classes[class].decisions.remove(decision);
        }
    }

    /// The candidate whose body `candidate` runs in the plan: its class's
    /// kept copy when it is an alias or a thunk, else itself.
    fn body_of(&self, candidate: CandidateId) -> CandidateId {
        match self.place_in_plan(candidate) {
            Some((class, decision)) => {
                let class = &self.plan.classes[class];
                match class.decisions[decision].action {
                    Action::Alias | Action::Thunk(_) => class.kept,
                    Action::Kept | Action::Keep(_) => candidate,
                }
            }
            None => candidate,
        }
    }

    /// Folds `member` (out of every class) into the body `kept` runs: as
    /// a thunk for `reason` when given, else as the planner's rules for
    /// linkable edits allow (an alias, or a thunk where its global symbols
    /// must stay in its object).
    fn fold_into(
        &mut self,
        kept: CandidateId,
        member: CandidateId,
        thunk: Option<KeepReason>,
    ) -> anyhow::Result<()> {
        let kept = self.body_of(kept);
        if kept == member {
            bail!("{} already runs its own body there", self.name(member));
        }
        let pair = self.plan_planted(&[kept, member], false);
        let Some(decision) = pair.decisions.iter().find(|d| d.candidate == member) else {
            bail!("the planner left {} out", self.name(member));
        };
        if pair.kept != kept {
            bail!("{} cannot be a kept copy", self.name(kept));
        }
        let action = match (&decision.action, thunk) {
            (Action::Keep(reason), _) => bail!(
                "{} must keep its body: {}",
                self.name(member),
                self.keep_reason_text(reason)
            ),
            (_, Some(reason)) => Action::Thunk(reason),
            (action, None) => action.clone(),
        };
        let decision = Decision {
            candidate: member,
            action,
            saved: 0,
        };
        match self.place_in_plan(kept) {
            Some((class, _)) if self.plan.classes[class].kept == kept => {
                self.plan.classes[class].decisions.push(decision);
            }
            place => {
                // Kept apart in its class, or alone: a class of its own.
                if place.is_some() {
                    self.take_out_of_its_class(kept);
                }
                self.plan.classes.push(ClassPlan {
                    class: icf_fold::ClassId(kept.0),
                    kept,
                    decisions: vec![
                        Decision {
                            candidate: kept,
                            action: Action::Kept,
                            saved: 0,
                        },
                        decision,
                    ],
                    identity: None,
                });
            }
        }
        Ok(())
    }

    /// Makes the classes of `kept` and `member` one, planned by the usual rules.
    fn merge_classes(&mut self, kept: CandidateId, member: CandidateId) -> anyhow::Result<()> {
        let class_of = |analysis: &Self, c: CandidateId| analysis.place_in_plan(c).map(|(k, _)| k);
        let (left, right) = (class_of(self, kept), class_of(self, member));
        if left.is_some() && left == right {
            bail!(
                "{} and {} are already one class",
                self.name(kept),
                self.name(member)
            );
        }
        let members_of = |analysis: &Self, class: Option<usize>, alone: CandidateId| match class {
            Some(class) => analysis.plan.classes[class]
                .decisions
                .iter()
                .map(|d| d.candidate)
                .collect(),
            None => vec![alone],
        };
        let mut members: Vec<CandidateId> = members_of(self, left, kept);
        members.extend(members_of(self, right, member));
        members.sort_unstable();
        let merged = self.plan_planted(&members, true);
        let folds_member = merged
            .decisions
            .iter()
            .any(|d| d.candidate == member && !matches!(d.action, Action::Keep(_)));
        let folds_kept = merged
            .decisions
            .iter()
            .any(|d| d.candidate == kept && !matches!(d.action, Action::Keep(_)));
        if !(folds_member && folds_kept) {
            bail!(
                "the merged class would not fold {} with {}",
                self.name(member),
                self.name(kept)
            );
        }
        let mut gone: Vec<usize> = left.into_iter().chain(right).collect();
        gone.sort_unstable();
        for class in gone.into_iter().rev() {
            self.plan.classes.remove(class);
        }
        self.plan.classes.push(merged);
        Ok(())
    }

    /// Jump tables follow their functions again after the plan changed.
    fn tables_follow(&mut self) {
        let mut classes = std::mem::take(&mut self.plan.classes);
        self.tables_follow_their_functions(&mut classes);
        self.plan.classes = classes;
    }

    fn keep_reason_text(&self, reason: &KeepReason) -> String {
        match reason {
            KeepReason::Ineligible(why) => why.clone(),
            other => format!("{other:?}"),
        }
    }
}
