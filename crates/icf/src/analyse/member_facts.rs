//! Phase 5 of the analysis, the plan: for each class of the partition, the
//! facts each member brings from the objects (whose address is significant
//! in this mode, who must keep its body, which copy to prefer as the kept
//! one, how big a thunk would be, whether its global symbols may move to
//! another object), handed to `icf-fold`'s planner, which decides keep,
//! alias or thunk per member. Jump tables then follow their functions.

use crate::analyse::analysis::{Analysis, Plan};
use crate::analyse::candidates::Origin;
use crate::analyse::comdat::{ComdatInstances, IdentityNames};
use crate::analyse::significance::{Significance, candidate_symbols, symbols_of};
use crate::load::program::ObjectId;
use icf_fold::plan::{Action, ClassPlan, KeepReason, MemberFacts, Mode, plan_class};
use icf_fold::{CandidateId, ClassId};
use icf_object::{Binding, SymbolIndex, SymbolKind};
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

impl<'data> Analysis<'_, 'data> {
    /// Decides keep / alias / thunk for every member of every class of the
    /// current partition, with `significance` from [`Analysis::significance`].
    pub(crate) fn plan_classes(&self, significance: Vec<Option<Significance>>) -> Plan {
        let options = &self.options;
        let keep_unique: HashSet<&str> = options.keep_unique.iter().map(String::as_str).collect();
        let entered = self.entered();
        let mut anchors = self.load_anchors();
        let groups = self.comdat_instances();
        let table_stays = self.functions_whose_tables_stay();
        let inputs = FactInputs {
            significance: &significance,
            keep_unique: &keep_unique,
            entered: &entered,
            groups: &groups,
            table_stays: &table_stays,
        };
        // Every class's member facts first: identities are numbered across
        // all classes before any class is planned.
        let (mut class_facts, identities) = self.class_facts(&inputs);
        let identity_names = identities.number(&mut class_facts);
        let mut classes: Vec<ClassPlan> = class_facts
            .into_iter()
            .map(|(class_id, facts)| self.plan_one_class(class_id, facts, &groups, &mut anchors))
            .collect();
        self.tables_follow_their_functions(&mut classes);
        Plan {
            mode: options.mode,
            classes,
            significance,
            identity_names,
        }
    }

    /// The plan of `members` as one class, for a wrong fold planted on
    /// purpose (`--plant-fold`, see `plant.rs`). With `rules` the planner
    /// decides as it would had the comparator found them equal; without,
    /// as if no address were significant and nothing named by
    /// `--keep-unique`, the first member is the kept copy unless it cannot
    /// be one, and only the rules that keep the edits linkable still hold
    /// (a section that cannot move keeps its body, a global symbol that
    /// cannot move to the kept copy's object makes a thunk).
    pub(crate) fn plan_planted(&self, members: &[CandidateId], rules: bool) -> ClassPlan {
        let no_significance = vec![None; self.candidates.len()];
        let keep_unique: HashSet<&str> = if rules {
            self.options
                .keep_unique
                .iter()
                .map(String::as_str)
                .collect()
        } else {
            HashSet::default()
        };
        let entered = self.entered();
        let mut anchors = self.load_anchors();
        let groups = self.comdat_instances();
        let table_stays = if rules {
            self.functions_whose_tables_stay()
        } else {
            HashSet::default()
        };
        let inputs = FactInputs {
            significance: if rules {
                &self.plan.significance
            } else {
                &no_significance
            },
            keep_unique: &keep_unique,
            entered: &entered,
            groups: &groups,
            table_stays: &table_stays,
        };
        let facts: Vec<MemberFacts> = members
            .iter()
            .enumerate()
            .map(|(index, &candidate)| {
                let facts = self.member_facts(candidate, &inputs);
                match (rules, index) {
                    (true, _) => facts,
                    (false, 0) => MemberFacts {
                        must_keep: None,
                        preference: (0, 0, 0, 0),
                        ..facts
                    },
                    (false, _) => MemberFacts {
                        preference: (u8::MAX, u8::MAX, u8::MAX, index as u32),
                        ..facts
                    },
                }
            })
            .collect();
        let class = ClassId(members.iter().map(|c| c.0).min().unwrap_or(0));
        self.plan_one_class(class, facts, &groups, &mut anchors)
    }

    /// Whether `candidate` can become a thunk: code something enters only
    /// at its start (see [`Analysis::entered`]).
    pub(crate) fn may_become_thunk(&self, candidate: CandidateId) -> bool {
        self.thunk_size(candidate, &self.entered()).is_some()
    }

    /// The functions whose jump table may not fold (it shares its section
    /// with data that stays): such a function keeps its body, for its
    /// table folds with it or not at all.
    fn functions_whose_tables_stay(&self) -> HashSet<CandidateId> {
        self.owner
            .iter()
            .enumerate()
            .filter_map(|(table, owner)| {
                let owner = (*owner)?;
                let info = &self.candidates[table];
                let elf = &self.program.object(info.object).object;
                section_ineligibility(elf, info.section, info.start, info.end).map(|_| owner)
            })
            .collect()
    }

    /// The member facts of every class of the partition, in partition
    /// order, and the identity names of the members of each class without
    /// a member sure to be linked, not numbered yet.
    fn class_facts(
        &self,
        inputs: &FactInputs<'_>,
    ) -> (Vec<(ClassId, Vec<MemberFacts>)>, IdentityNames) {
        let mut class_facts: Vec<(ClassId, Vec<MemberFacts>)> = Vec::new();
        let mut identities = IdentityNames::default();
        let groups = self.partition.groups();
        // Each member's facts on their own, in parallel.
        let all_facts: Vec<Vec<MemberFacts>> = groups
            .par_iter()
            .map(|members| {
                members
                    .iter()
                    .map(|&candidate| self.member_facts(candidate, inputs))
                    .collect()
            })
            .collect();
        for (members, facts) in groups.iter().zip(all_facts) {
            // A class without a member sure to be linked folds through
            // identities (see `icf_fold::plan`).
            if facts.iter().all(|f| !f.kept_eligible) {
                for (member, fact) in facts.iter().enumerate() {
                    if let Some(name) = self.identity_name(fact.candidate, inputs.groups) {
                        identities.named.push((class_facts.len(), member, name));
                    }
                }
            }
            class_facts.push((ClassId(members[0].0), facts));
        }
        (class_facts, identities)
    }

    /// What `icf-fold`'s planner needs to know of one member, with its
    /// global symbols not yet pinned and no identity yet.
    fn member_facts(&self, candidate: CandidateId, inputs: &FactInputs<'_>) -> MemberFacts {
        let info = &self.candidates[candidate.index()];
        let groups = inputs.groups;
        let symbols = symbols_of(self.program, info);
        MemberFacts {
            candidate,
            size: info.size(),
            significant: self.significant_in_mode(candidate, inputs.significance),
            must_keep: self
                .must_keep_named(candidate, &symbols, inputs.keep_unique)
                .or_else(|| {
                    inputs.table_stays.contains(&candidate).then(|| {
                        KeepReason::Ineligible(
                            "its jump table shares its section with other data".to_string(),
                        )
                    })
                }),
            thunk_size: self.thunk_size(candidate, inputs.entered),
            preference: self.preference(candidate, &symbols),
            object: info.object.0,
            loaded: self.program.object(info.object).loaded,
            pinned_in_comdat: self.in_comdat(candidate)
                && !self.group_may_move(candidate, groups, inputs.significance, self.options.mode),
            global_symbols: false,
            floating_group: groups.floating(self, candidate),
            kept_eligible: groups.kept_eligible(self, candidate),
            identity: None,
        }
    }

    /// Plans one class: first as if every global symbol could move with its
    /// body; then, if some member aliased into another object has globals
    /// that cannot, again with those members pinned. The link keeps one
    /// instance of each COMDAT group, so removing any other saves nothing.
    fn plan_one_class(
        &self,
        class_id: ClassId,
        mut facts: Vec<MemberFacts>,
        groups: &ComdatInstances,
        anchors: &mut HashMap<ObjectId, usize>,
    ) -> ClassPlan {
        let optimistic = plan_class(class_id, &facts);
        let pins = self.members_to_pin(&optimistic, groups, anchors);
        pins.mark(self, groups, &mut facts);
        let mut class = if pins.any() {
            plan_class(class_id, &facts)
        } else {
            optimistic
        };
        self.zero_savings_of_other_instances(&mut class, groups);
        class
    }

    /// The aliases of `optimistic` whose global symbols cannot move to the
    /// kept copy's object, and the verdict on each COMDAT group moving whole
    /// (all instances or none). Spends `anchors` as aliases move symbols,
    /// in the order of the plan's decisions.
    fn members_to_pin(
        &self,
        optimistic: &ClassPlan,
        groups: &ComdatInstances,
        anchors: &mut HashMap<ObjectId, usize>,
    ) -> Pins {
        let kept_object = self.candidates[optimistic.kept.index()].object;
        // A kept copy the link may discard with its group can take no symbols.
        let kept_floats = groups.floating(self, optimistic.kept).is_some();
        let mut pins = Pins::default();
        for decision in &optimistic.decisions {
            // Only an alias moves symbols (and spends anchors).
            if decision.action != Action::Alias {
                continue;
            }
            let info = &self.candidates[decision.candidate.index()];
            let moving_group = self.in_comdat(decision.candidate);
            let cannot_move = if kept_floats {
                !self.global_symbols(decision.candidate).is_empty()
            } else if moving_group {
                let Some((id, instances)) = groups.instances_of(self, decision.candidate) else {
                    continue;
                };
                !*pins.group_verdicts.entry(id).or_insert_with(|| {
                    self.group_globals_can_move(decision.candidate, instances, kept_object, anchors)
                })
            } else {
                info.object != kept_object && !self.globals_can_move(decision.candidate, anchors)
            };
            if cannot_move {
                pins.members.push(decision.candidate);
            }
        }
        pins
    }

    /// Sets `saved` to 0 for each decision on a COMDAT instance other than
    /// the first: the link keeps one instance of each group, the first in
    /// link order as a rule, so the bytes of the others were never going to
    /// be linked, and removing them saves nothing.
    fn zero_savings_of_other_instances(&self, class: &mut ClassPlan, groups: &ComdatInstances) {
        for decision in &mut class.decisions {
            if decision.saved > 0 && !groups.first_instance(self, decision.candidate) {
                decision.saved = 0;
            }
        }
    }

    /// A jump table folds with its function or not at all
    /// ([`Analysis::owner`]): in a class of tables, the table of the
    /// functions' kept copy is kept, a table whose function became an
    /// alias of that copy becomes an alias of it, and every other table
    /// keeps its body (its function still jumps through it).
    pub(crate) fn tables_follow_their_functions(&self, classes: &mut [ClassPlan]) {
        let mut fate: HashMap<CandidateId, (CandidateId, bool)> = HashMap::default();
        for class in classes.iter() {
            for decision in &class.decisions {
                let aliased = matches!(decision.action, Action::Kept | Action::Alias);
                fate.insert(decision.candidate, (class.kept, aliased));
            }
        }
        // A function alone in its class is its own kept copy.
        let kept_of = |function: CandidateId| fate.get(&function).map_or((function, true), |&f| f);
        for class in classes.iter_mut() {
            if !class
                .decisions
                .iter()
                .any(|d| self.owner[d.candidate.index()].is_some())
            {
                continue;
            }
            let Some(first_owner) = class
                .decisions
                .iter()
                .find_map(|d| self.owner[d.candidate.index()])
            else {
                continue;
            };
            let (kept_function, _) = kept_of(first_owner);
            let kept_table = class
                .decisions
                .iter()
                .map(|d| d.candidate)
                .find(|&c| self.owner[c.index()] == Some(kept_function));
            let sizes: HashMap<CandidateId, u64> = class
                .decisions
                .iter()
                .map(|d| (d.candidate, self.candidates[d.candidate.index()].size()))
                .collect();
            for decision in &mut class.decisions {
                let table = decision.candidate;
                decision.action = match (kept_table, self.owner[table.index()]) {
                    (Some(kept), _) if kept == table => Action::Kept,
                    (Some(_), Some(function)) if kept_of(function) == (kept_function, true) => {
                        Action::Alias
                    }
                    _ => Action::Keep(KeepReason::TableOfUnfoldedFunction),
                };
                decision.saved = if decision.action == Action::Alias {
                    sizes[&table]
                } else {
                    0
                };
            }
            class.kept = kept_table.unwrap_or(class.kept);
            // The kept copy first, as everywhere.
            class.decisions.sort_by_key(|d| d.action != Action::Kept);
        }
    }

    /// Whether a candidate's address must stay its own in this plan's mode:
    /// a function's in safe mode, read-only data's in both modes unless
    /// `--ignore-data-address-equality` (as lld).
    fn significant_in_mode(
        &self,
        candidate: CandidateId,
        significance: &[Option<Significance>],
    ) -> bool {
        let relaxed = if self.candidates[candidate.index()].is_code() {
            self.options.mode == Mode::All
        } else {
            self.options.ignore_data_address_equality
        };
        !relaxed && significance[candidate.index()].is_some()
    }

    /// The candidates that something enters past their start: an inner
    /// symbol, a jump from another section, a jump table's entry. Such a
    /// function cannot become a thunk: those places would land in the jump.
    fn entered(&self) -> Vec<bool> {
        let mut entered: Vec<bool> = self
            .candidates
            .iter()
            .map(|info| match info.origin {
                Origin::Function(index) => !self
                    .program
                    .entry_points(self.program.function(index))
                    .is_empty(),
                Origin::Data => false,
            })
            .collect();
        for (index, attrs) in self.attrs.iter().enumerate() {
            // Made layout-sensitive by a reference from another candidate.
            if attrs.layout_sensitive && self.candidates[index].is_code() {
                entered[index] = true;
            }
        }
        entered
    }

    /// The candidates `--keep-unique` names (mangled or demangled).
    pub(crate) fn keep_unique_candidates(&self) -> Vec<bool> {
        let keep_unique: HashSet<&str> = self
            .options
            .keep_unique
            .iter()
            .map(String::as_str)
            .collect();
        if keep_unique.is_empty() {
            return vec![false; self.candidates.len()];
        }
        (0..self.candidates.len() as u32)
            .map(|index| {
                self.must_keep(CandidateId(index), &keep_unique) == Some(KeepReason::KeepUnique)
            })
            .collect()
    }

    /// Why a candidate must keep its own body whatever the mode.
    fn must_keep(&self, candidate: CandidateId, keep_unique: &HashSet<&str>) -> Option<KeepReason> {
        let symbols = symbols_of(self.program, &self.candidates[candidate.index()]);
        self.must_keep_named(candidate, &symbols, keep_unique)
    }

    /// [`Analysis::must_keep`], given the candidate's symbols.
    fn must_keep_named(
        &self,
        candidate: CandidateId,
        symbols: &[SymbolIndex],
        keep_unique: &HashSet<&str>,
    ) -> Option<KeepReason> {
        let info = &self.candidates[candidate.index()];
        let elf = &self.program.object(info.object).object;
        for &index in symbols {
            let symbol = elf.symbol(index);
            // Demangling is costly: only when some name is asked for.
            if !keep_unique.is_empty()
                && (keep_unique.contains(symbol.name_lossy().as_str())
                    || keep_unique.contains(crate::demangle(symbol.name).as_str()))
            {
                return Some(KeepReason::KeepUnique);
            }
            if symbol.kind == SymbolKind::Ifunc {
                return Some(KeepReason::Ineligible("an ifunc resolver".to_string()));
            }
        }
        if self
            .options
            .keep_places
            .contains(&(info.section.0, info.start))
        {
            return Some(KeepReason::Ineligible(
                "a short jump reaches it from the code before it".to_string(),
            ));
        }
        if let Some(only) = &self.options.only_code_in {
            let outside = match info.origin {
                Origin::Function(_) => elf.sections[info.section.index()].name != only.as_bytes(),
                Origin::Data => self.owner[candidate.index()].is_none(),
            };
            if outside {
                return Some(KeepReason::Ineligible(format!(
                    "only the functions of {only} and their jump tables fold here"
                )));
            }
        }
        section_ineligibility(elf, info.section, info.start, info.end).map(KeepReason::Ineligible)
    }

    /// The global symbols a candidate defines (they move with its body to another object).
    pub fn global_symbols(&self, candidate: CandidateId) -> Vec<SymbolIndex> {
        let info = &self.candidates[candidate.index()];
        let object = self.program.object(info.object);
        candidate_symbols(object, info.section, info.start, info.end, info.is_code())
            .into_iter()
            .filter(|&s| object.object.symbol(s).binding != Binding::Local)
            .collect()
    }

    /// Whether the global symbols of `candidate` may move, with its body, to
    /// another object: each must be the definition the link resolves its name
    /// to, no skipped archive member may define it, and the object must stay
    /// in the link without them. A plain object
    /// or a whole archive always does; an archive member does while another
    /// object still needs one of the symbols it keeps (`anchors` counts those
    /// per member, and is spent here).
    fn globals_can_move(
        &self,
        candidate: CandidateId,
        anchors: &mut HashMap<ObjectId, usize>,
    ) -> bool {
        let info = &self.candidates[candidate.index()];
        let globals = self.global_symbols(candidate);
        if globals.is_empty() {
            return true;
        }
        // Each stays the definition its name resolves to; and no archive
        // member the link skips defines it: once the name is undefined in
        // this object, a linker resolving it before it reaches the kept copy
        // (mold, or a kept copy later on the command line) would load that
        // member instead, and its other definitions would take over too.
        let winners = globals
            .iter()
            .all(|&s| self.program.definitions.wins_unchallenged(info.object, s));
        if !winners {
            return false;
        }
        let Some(remaining) = anchors.get_mut(&info.object) else {
            // Not an archive member: it is linked whatever it defines.
            return true;
        };
        let needed: usize = globals
            .iter()
            .filter(|s| self.program.needed.contains(&(info.object, **s)))
            .count();
        if *remaining <= needed {
            return false;
        }
        *remaining -= needed;
        true
    }

    /// For each archive member (not whole-archive), how many of its symbols other objects need.
    fn load_anchors(&self) -> HashMap<ObjectId, usize> {
        let mut anchors: HashMap<ObjectId, usize> = HashMap::default();
        for (index, object) in self.program.objects.iter().enumerate() {
            let id = ObjectId(index as u32);
            if object.loaded
                && object.member.is_some()
                && !self.program.options.whole_archive.contains(&object.file)
            {
                anchors.insert(id, 0);
            }
        }
        for &(object, _) in &self.program.needed {
            if let Some(count) = anchors.get_mut(&object) {
                *count += 1;
            }
        }
        anchors
    }

    /// The size of a thunk to the kept copy, `None` where there can be
    /// none: for data, and for a function something enters past its start.
    fn thunk_size(&self, candidate: CandidateId, entered: &[bool]) -> Option<u64> {
        let info = &self.candidates[candidate.index()];
        if !info.is_code() || entered[candidate.index()] {
            return None;
        }
        let elf = &self.program.object(info.object).object;
        // Under IBT or BTI the thunk starts with a landing pad, as `write/mod.rs`
        // writes it.
        let landing_pad = elf.feature_1_and & 1 != 0;
        Some(icf_arch::of(elf.arch).thunk().size(landing_pad))
    }

    /// Lower is preferred as the kept copy: not replaceable, not in a COMDAT
    /// group, strongest binding of its `symbols` ([`symbols_of`]), first on
    /// the command line (candidates are numbered in command-line order, so
    /// no two tie).
    fn preference(&self, candidate: CandidateId, symbols: &[SymbolIndex]) -> (u8, u8, u8, u32) {
        let info = &self.candidates[candidate.index()];
        let elf = &self.program.object(info.object).object;
        let best = symbols
            .iter()
            .map(|&s| match elf.symbol(s).binding {
                Binding::Global | Binding::Unique => 0,
                Binding::Weak => 1,
                Binding::Local => 2,
                Binding::Other(_) => 3,
            })
            .min()
            .unwrap_or(3);
        let replaceable = u8::from(
            best == 1
                || symbols
                    .iter()
                    .any(|&s| elf.symbol(s).kind == SymbolKind::Ifunc),
        );
        let in_comdat = u8::from(elf.section(info.section).group.is_some());
        (replaceable, in_comdat, best, candidate.0)
    }
}

/// What every member's facts are read against, gathered once for the plan.
struct FactInputs<'p> {
    significance: &'p [Option<Significance>],
    /// The names `--keep-unique` asks for.
    keep_unique: &'p HashSet<&'p str>,
    /// See [`Analysis::entered`].
    entered: &'p [bool],
    groups: &'p ComdatInstances,
    /// See [`Analysis::functions_whose_tables_stay`].
    table_stays: &'p HashSet<CandidateId>,
}

/// The members of one class whose global symbols cannot move with their
/// bodies, found on its optimistic plan.
#[derive(Debug, Default)]
struct Pins {
    /// Aliases whose global symbols cannot move to the kept copy's object.
    members: Vec<CandidateId>,
    /// Whether each COMDAT group (by signature id) may move whole.
    group_verdicts: HashMap<u32, bool>,
}

impl Pins {
    /// Whether any member is pinned.
    fn any(&self) -> bool {
        !self.members.is_empty()
    }

    /// Marks in `facts` each member pinned, and every instance of a group
    /// that cannot move (it pins every instance in the class), as having
    /// global symbols that stay.
    fn mark(
        &self,
        analysis: &Analysis<'_, '_>,
        groups: &ComdatInstances,
        facts: &mut [MemberFacts],
    ) {
        for fact in facts {
            let group_pinned = groups
                .instances_of(analysis, fact.candidate)
                .is_some_and(|(id, _)| self.group_verdicts.get(&id) == Some(&false));
            if self.members.contains(&fact.candidate) || group_pinned {
                fact.global_symbols = true;
            }
        }
    }
}

/// Why a section may not be folded, `None` when it may.
fn section_ineligibility(
    object: &icf_object::Object<'_>,
    index: icf_object::SectionIndex,
    start: u64,
    end: u64,
) -> Option<String> {
    let section = object.section(index);
    if let Some(reason) = object.format_ineligibility(index) {
        return Some(reason.to_string());
    }
    if section.is_writable() {
        return Some("writable section".to_string());
    }
    if section.follows_its_link() {
        return Some("SHF_LINK_ORDER section".to_string());
    }
    if section.is_retained() {
        return Some("retained section (SHF_GNU_RETAIN)".to_string());
    }
    // Told by the section's name, which the model judged as it read it: a
    // name that is not plain is one the link runs, or a C identifier.
    if !section.name_is_plain {
        if !icf_object::is_c_identifier(section.name) {
            return Some(format!("{} runs by its section", section.name_lossy()));
        }
        if object.may_be_delimited(index) {
            return Some(format!(
                "section {} may be delimited by __start_/__stop_ symbols",
                section.name_lossy()
            ));
        }
    }
    // A linked image has one `.text`: its report estimates what the link
    // would fold had its inputs a section per function (as Rust's and
    // `-ffunction-sections` objects have).
    if object.image.is_none() && (start != 0 || end != section.size) {
        return Some("shares its section with other code".to_string());
    }
    None
}
