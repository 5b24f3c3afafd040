//! The facts the fold plan needs about each candidate, from the objects:
//! whose address is significant and why, who must keep its body, which copy
//! to prefer as the kept one, and how big a thunk would be. `icf-fold`'s
//! planner then decides per class.
//!
//! Address significance (safe mode): an object's `.llvm_addrsig` table, where
//! it has one, says which of its symbols (defined or not) have their address
//! taken. An object without a table (gcc, rustc) does not make everything
//! significant (lld's choice, which folds nothing for those objects): the
//! lifter's uses tell instead. A reference that is not a direct call or jump
//! (an `Address` use), and any reference from data (function-pointer tables,
//! `.init_array`, vtables), makes its target significant, except that a
//! virtual function's address cannot be compared in C++: clang keeps
//! virtual functions out of its tables whatever uses them, and so does the
//! inference for a function every name of which a vtable points through.
//! Nor is a function rustc made: rustc marks every function `unnamed_addr`
//! (Rust does not promise distinct functions distinct addresses), as clang
//! would by leaving it out of its table. Read-only data counts only where
//! it has a name of its own (a C object, a Rust `static`): compilers give
//! their anonymous constants no address to compare. In a `-shared` link,
//! and for what `--export-dynamic`, a dynamic list or a version script
//! exports, every exported function is significant: `dlsym` may compare it.

use crate::analysis::Analysis;
use crate::candidates::Origin;
use crate::program::{LoadedObject, ObjectId};
use crate::targets::Target;
use icf_fold::plan::{Action, ClassPlan, Identity, KeepReason, MemberFacts, Mode, plan_class};
use icf_fold::{CandidateId, ClassId};
use icf_object::{Binding, SectionIndex, SymbolIndex, SymbolKind, Visibility};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// What the user asked of the plan.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    pub mode: Mode,
    /// Symbols (mangled or demangled) that must keep their own body.
    pub keep_unique: Vec<String>,
    /// Read-only data may share an address with its twins even where the
    /// address is significant (lld's `--ignore-data-address-equality`);
    /// otherwise data keeps its address in every mode.
    pub ignore_data_address_equality: bool,
}

/// Why a candidate's address is significant.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Significance {
    /// Listed in its object's `.llvm_addrsig`, or named there by another object.
    AddrsigTable,
    /// An instruction of candidate `by` takes its address (not a call or a jump).
    AddressTaken { by: CandidateId },
    /// The read-only data candidate `by` refers to it (a pointer table, a vtable).
    ReferencedFromCandidate { by: CandidateId },
    /// Other data refers to it (`.init_array`, writable data).
    ReferencedFromData { section: String },
    /// Exported to the dynamic symbol table (`-shared`, `--export-dynamic`,
    /// a dynamic list or version script).
    Exported,
}

impl Analysis<'_, '_> {
    /// Why a candidate's address is significant, in words. Names are
    /// demangled only here: computing significance names nothing.
    pub fn describe_significance(&self, why: &Significance) -> String {
        match why {
            Significance::AddrsigTable => "address-significant (.llvm_addrsig)".to_string(),
            Significance::AddressTaken { by } => format!("address taken in {}", self.name(*by)),
            Significance::ReferencedFromCandidate { by } => {
                format!("referenced from data in {}", self.name(*by))
            }
            Significance::ReferencedFromData { section } => {
                format!("referenced from data in {section}")
            }
            Significance::Exported => "exported to the dynamic symbol table".to_string(),
        }
    }
}

/// The plan for every class with more than one member.
#[derive(Clone, Debug)]
pub struct Plan {
    pub mode: Mode,
    pub classes: Vec<ClassPlan>,
    /// Per candidate, why its address is significant (safe mode facts, also computed in mode all).
    pub significance: Vec<Option<Significance>>,
    /// The name of each [`Identity`] a class folds through: a COMDAT
    /// group's signature and a section name (see [`IdentityNames`]).
    pub identity_names: Vec<Vec<u8>>,
}

impl Plan {
    /// A plan that folds nothing.
    pub fn empty(mode: Mode) -> Plan {
        Plan {
            mode,
            classes: Vec::new(),
            significance: Vec::new(),
            identity_names: Vec::new(),
        }
    }

    pub fn saved(&self) -> u64 {
        self.classes.iter().map(ClassPlan::saved).sum()
    }

    /// How many members become aliases, and how many thunks.
    pub fn aliases_and_thunks(&self) -> (usize, usize) {
        let decisions = self.classes.iter().flat_map(|c| &c.decisions);
        decisions.fold((0, 0), |(aliases, thunks), d| match d.action {
            Action::Alias => (aliases + 1, thunks),
            Action::Thunk(_) => (aliases, thunks + 1),
            Action::Kept | Action::Keep(_) => (aliases, thunks),
        })
    }
}

impl<'data> Analysis<'_, 'data> {
    /// Decides keep / alias / thunk for every member of every class of the
    /// current partition, with `significance` from [`Analysis::significance`].
    pub(crate) fn plan_classes(&self, significance: Vec<Option<Significance>>) -> Plan {
        let options = &self.options;
        let keep_unique: HashSet<&str> = options.keep_unique.iter().map(String::as_str).collect();
        let entered = self.entered();
        let mut anchors = self.load_anchors();
        let groups = self.comdat_instances();
        // A function whose jump table may not fold (it shares its section
        // with data that stays) keeps its body: its table folds with it or
        // not at all.
        let table_stays: HashSet<CandidateId> = self
            .owner
            .iter()
            .enumerate()
            .filter_map(|(table, owner)| {
                let owner = (*owner)?;
                let info = &self.candidates[table];
                let section = self.program.object(info.object).elf.section(info.section);
                section_ineligibility(section, info.start, info.end).map(|_| owner)
            })
            .collect();
        // Every class's member facts first: identities are numbered across
        // all classes before any class is planned.
        let mut class_facts: Vec<(ClassId, Vec<MemberFacts>)> = Vec::new();
        let mut identities = IdentityNames::default();
        for members in self.partition.groups() {
            let facts: Vec<MemberFacts> = members
                .iter()
                .map(|&candidate| {
                    let info = &self.candidates[candidate.index()];
                    MemberFacts {
                        candidate,
                        size: info.size(),
                        significant: self.significant_in_mode(candidate, &significance),
                        must_keep: self.must_keep(candidate, &keep_unique).or_else(|| {
                            table_stays.contains(&candidate).then(|| {
                                KeepReason::Ineligible(
                                    "its jump table shares its section with other data".to_string(),
                                )
                            })
                        }),
                        thunk_size: self.thunk_size(candidate, &entered),
                        preference: self.preference(candidate),
                        object: info.object.0,
                        loaded: self.program.object(info.object).loaded,
                        pinned_in_comdat: self.in_comdat(candidate)
                            && !self.group_may_move(
                                candidate,
                                &groups,
                                &significance,
                                options.mode,
                            ),
                        global_symbols: false,
                        floating_group: groups.floating(self, candidate),
                        kept_eligible: groups.kept_eligible(self, candidate),
                        identity: None,
                    }
                })
                .collect();
            // A class without a member sure to be linked folds through
            // identities (see `icf_fold::plan`).
            if facts.iter().all(|f| !f.kept_eligible) {
                for (member, fact) in facts.iter().enumerate() {
                    if let Some(name) = self.identity_name(fact.candidate, &groups) {
                        identities.named.push((class_facts.len(), member, name));
                    }
                }
            }
            class_facts.push((ClassId(members[0].0), facts));
        }
        let identity_names = identities.number(&mut class_facts);
        let mut classes = Vec::new();
        for (class_id, mut facts) in class_facts {
            // First as if every global symbol could move with its body; then
            // pin the members aliased into another object whose globals cannot.
            let optimistic = plan_class(class_id, &facts);
            let kept_object = self.candidates[optimistic.kept.index()].object;
            // A kept copy the link may discard with its group can take no symbols.
            let kept_floats = groups.floating(self, optimistic.kept).is_some();
            let mut pinned = Vec::new();
            // COMDAT groups moving whole: all instances or none.
            let mut group_verdicts: HashMap<u32, bool> = HashMap::default();
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
                    let Some((id, instances)) = groups.instances_of(self, decision.candidate)
                    else {
                        continue;
                    };
                    !*group_verdicts.entry(id).or_insert_with(|| {
                        self.group_globals_can_move(
                            decision.candidate,
                            instances,
                            kept_object,
                            &mut anchors,
                        )
                    })
                } else {
                    info.object != kept_object
                        && !self.globals_can_move(decision.candidate, &mut anchors)
                };
                if cannot_move {
                    pinned.push(decision.candidate);
                }
            }
            // A group that cannot move pins every instance in the class.
            for fact in &mut facts {
                let group_pinned = groups
                    .instances_of(self, fact.candidate)
                    .is_some_and(|(id, _)| group_verdicts.get(&id) == Some(&false));
                if pinned.contains(&fact.candidate) || group_pinned {
                    fact.global_symbols = true;
                }
            }
            let pinned_any = !pinned.is_empty();
            let mut class = if pinned_any {
                plan_class(class_id, &facts)
            } else {
                optimistic
            };
            // The link keeps one instance of each COMDAT group, the first in
            // link order as a rule: the bytes of the others were never going
            // to be linked, so removing them saves nothing.
            for decision in &mut class.decisions {
                if decision.saved > 0 && !groups.first_instance(self, decision.candidate) {
                    decision.saved = 0;
                }
            }
            classes.push(class);
        }
        self.tables_follow_their_functions(&mut classes);
        Plan {
            mode: options.mode,
            classes,
            significance,
            identity_names,
        }
    }

    /// A jump table folds with its function or not at all
    /// ([`Analysis::owner`]): in a class of tables, the table of the
    /// functions' kept copy is kept, a table whose function became an
    /// alias of that copy becomes an alias of it, and every other table
    /// keeps its body (its function still jumps through it).
    fn tables_follow_their_functions(&self, classes: &mut [ClassPlan]) {
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
                    .entry_points(&self.program.functions[index])
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

    /// Why each candidate's address is significant, `None` where it is not.
    pub fn significance(&self) -> Vec<Option<Significance>> {
        let program = self.program;
        let mut result: Vec<Option<Significance>> = vec![None; self.candidates.len()];
        let has_table = |object: ObjectId| program.object(object).elf.addrsig.is_some();

        // Names some object's table marks: they are significant wherever they are defined.
        let mut table_names: HashSet<&[u8]> = HashSet::default();
        let mut table_symbols: HashSet<(ObjectId, SymbolIndex)> = HashSet::default();
        for (index, object) in program.objects.iter().enumerate() {
            for &symbol in object.elf.addrsig.iter().flatten() {
                table_symbols.insert((ObjectId(index as u32), symbol));
                let sym = object.elf.symbol(symbol);
                if sym.binding != Binding::Local {
                    table_names.insert(sym.name);
                }
            }
        }

        let virtual_functions = self.virtual_functions();
        // rustc marks every function `unnamed_addr` (Rust does not promise
        // that two functions have different addresses): only its exports
        // count, as for clang's functions missing from its table.
        let rustc_objects: Vec<bool> = program
            .objects
            .iter()
            .map(|object| made_by_rustc(&object.elf))
            .collect();
        // Uses inferred from objects without a table, by candidate and by name.
        let mut inferred: HashMap<CandidateId, Significance> = HashMap::default();
        let mut inferred_names: HashMap<&[u8], Significance> = HashMap::default();
        for &(by, target) in &self.escaping_references {
            let info = &self.candidates[by.index()];
            if has_table(info.object) {
                continue;
            }
            let why = || {
                if info.is_code() {
                    Significance::AddressTaken { by }
                } else {
                    Significance::ReferencedFromCandidate { by }
                }
            };
            match self.targets.get(target) {
                Target::Candidate(target) => {
                    inferred.entry(CandidateId(target)).or_insert_with(why);
                }
                Target::Symbol { name } => {
                    inferred_names.entry(name).or_insert_with(why);
                }
                _ => {}
            }
        }
        for &(candidate, object, section) in &self.data_references {
            if !has_table(object) {
                let name = program.object(object).elf.section(section).name_lossy();
                inferred
                    .entry(candidate)
                    .or_insert(Significance::ReferencedFromData { section: name });
            }
        }

        for (index, info) in self.candidates.iter().enumerate() {
            let elf = &program.object(info.object).elf;
            let symbols = self.symbols_of(info);
            // Data without a name of its own is the compiler's (a string,
            // a jump or lookup table, a Rust constant): no language gives
            // it an address to compare.
            if !info.is_code() && !symbols.iter().any(|&s| names_an_object(elf.symbol(s))) {
                continue;
            }
            let in_table = symbols.iter().any(|&s| {
                table_symbols.contains(&(info.object, s))
                    || (elf.symbol(s).binding != Binding::Local
                        && table_names.contains(elf.symbol(s).name))
            });
            let by_name = symbols.iter().find_map(|&s| {
                let symbol = elf.symbol(s);
                (symbol.binding != Binding::Local)
                    .then(|| inferred_names.get(symbol.name))
                    .flatten()
            });
            // Exported to the dynamic symbol table: `dlsym` may compare it.
            let exported = symbols.iter().any(|&s| {
                let symbol = elf.symbol(s);
                symbol.binding != Binding::Local
                    && symbol.visibility == Visibility::Default
                    && (program.options.shared || program.options.exports.exports(symbol.name))
            });
            result[index] = if in_table {
                Some(Significance::AddrsigTable)
            } else if virtual_functions.contains(&CandidateId(index as u32))
                || (info.is_code() && rustc_objects[info.object.index()])
            {
                exported.then_some(Significance::Exported)
            } else if let Some(why) = inferred.get(&CandidateId(index as u32)) {
                Some(why.clone())
            } else if let Some(why) = by_name {
                Some(why.clone())
            } else if exported {
                Some(Significance::Exported)
            } else {
                None
            };
        }
        result
    }

    /// The code candidates that are virtual functions and nothing else:
    /// every name at their start is one a vtable points to them through (an
    /// entry through the section symbol counts for a function with one
    /// name). A function that also answers to a name no vtable uses (gcc's
    /// `-fipa-icf` makes such aliases) may have that name's address compared.
    fn virtual_functions(&self) -> HashSet<CandidateId> {
        use crate::data_uses::VtableName;
        let mut entries: HashMap<CandidateId, HashSet<VtableName<'_>>> = HashMap::default();
        for &(candidate, through) in &self.vtable_entries {
            entries.entry(candidate).or_default().insert(through);
        }
        entries
            .into_iter()
            .filter(|(candidate, through)| {
                let info = &self.candidates[candidate.index()];
                if !info.is_code() {
                    return false;
                }
                let elf = &self.program.object(info.object).elf;
                let names: Vec<VtableName<'_>> = self
                    .symbols_of(info)
                    .into_iter()
                    .map(|s| elf.symbol(s))
                    .filter(|s| {
                        s.kind != SymbolKind::Section
                            && !s.name.is_empty()
                            && !s.name.starts_with(b"$")
                    })
                    .map(|s| {
                        if s.binding == Binding::Local {
                            VtableName::Local(info.object, s.name)
                        } else {
                            VtableName::Global(s.name)
                        }
                    })
                    .collect();
                match names.as_slice() {
                    [] => false,
                    [_] if through.contains(&VtableName::Section) => true,
                    _ => names.iter().all(|name| through.contains(name)),
                }
            })
            .map(|(candidate, _)| candidate)
            .collect()
    }

    /// The symbols that name a candidate (see [`candidate_symbols`]).
    fn symbols_of(&self, info: &crate::candidates::CandidateInfo) -> Vec<SymbolIndex> {
        candidate_symbols(
            self.program.object(info.object),
            info.section,
            info.start,
            info.end,
            info.is_code(),
        )
    }

    /// Why a candidate must keep its own body whatever the mode.
    fn must_keep(&self, candidate: CandidateId, keep_unique: &HashSet<&str>) -> Option<KeepReason> {
        let info = &self.candidates[candidate.index()];
        let elf = &self.program.object(info.object).elf;
        let section = elf.section(info.section);
        let symbols = self.symbols_of(info);
        for &index in &symbols {
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
        section_ineligibility(section, info.start, info.end).map(KeepReason::Ineligible)
    }

    /// Whether a COMDAT member may leave its group: the group holds nothing
    /// but its section (and that section's relocations), in every loaded
    /// instance, every instance is in its class, and (in safe mode) no
    /// instance's address is significant. Then every instance can be
    /// dropped, group and all, and its symbols defined on the kept copy:
    /// whichever instance the link would have kept, the name now reaches the
    /// same body.
    fn group_may_move(
        &self,
        candidate: CandidateId,
        groups: &ComdatInstances<'data>,
        significance: &[Option<Significance>],
        mode: Mode,
    ) -> bool {
        let info = &self.candidates[candidate.index()];
        let elf = &self.program.object(info.object).elf;
        let section = elf.section(info.section);
        if !info.is_code() || info.start != 0 || info.end != section.size {
            return false;
        }
        let Some((_, instances)) = groups.instances_of(self, candidate) else {
            return false;
        };
        if !groups.kept_eligible(self, candidate) {
            return false;
        }
        groups.remembered(Question::GroupMayMove, self, candidate, || {
            self.every_instance_may_leave(info, instances, groups, significance, mode)
        })
    }

    /// The per-instance part of [`Analysis::group_may_move`].
    fn every_instance_may_leave(
        &self,
        info: &crate::candidates::CandidateInfo,
        instances: &[(ObjectId, u32)],
        groups: &ComdatInstances<'_>,
        significance: &[Option<Significance>],
        mode: Mode,
    ) -> bool {
        instances.iter().all(|&(object, group)| {
            let Some(other) = groups.instance_section(self, info, (object, group)) else {
                return false;
            };
            let other_info = &self.candidates[other.index()];
            let other_elf = &self.program.object(object).elf;
            let sole_member = other_elf
                .section(other_info.section)
                .group
                .map(|g| &other_elf.groups[g as usize])
                .is_some_and(|group| {
                    group.members.iter().all(|&m| {
                        let member = other_elf.section(m);
                        m == other_info.section
                            || (icf_object::is_relocation_section(member.sh_type)
                                && member.info == other_info.section.0)
                    })
                });
            sole_member && (mode == Mode::All || significance[other.index()].is_none())
        })
    }

    /// Whether the global symbols of every instance of a moving COMDAT group
    /// may move to the kept copy's object: the link resolves each name to
    /// one of the instances, and every archive member holding an instance
    /// stays in the link without it. Spends `anchors` only when all may.
    fn group_globals_can_move(
        &self,
        candidate: CandidateId,
        instances: &[(ObjectId, u32)],
        kept_object: ObjectId,
        anchors: &mut HashMap<ObjectId, usize>,
    ) -> bool {
        let info = &self.candidates[candidate.index()];
        let in_instance = |object: ObjectId| instances.iter().any(|&(o, _)| o == object);
        let object = self.program.object(info.object);
        let winners = self.global_symbols(candidate).iter().all(|&s| {
            let name = object.elf.symbol(s).name;
            self.program
                .definitions
                .winner(name)
                .is_some_and(|(winner, _)| in_instance(winner))
        });
        if !winners {
            return false;
        }
        let mut spent: Vec<(ObjectId, usize)> = Vec::new();
        for &(object, group) in instances {
            if object == kept_object {
                continue;
            }
            let Some(&remaining) = anchors.get(&object) else {
                continue;
            };
            let loaded = self.program.object(object);
            let needed = loaded.elf.groups[group as usize]
                .members
                .iter()
                .flat_map(|&m| loaded.section_symbols.get(m))
                .filter(|&&(_, _, symbol)| {
                    loaded.elf.symbol(symbol).binding != Binding::Local
                        && self.program.needed.contains(&(object, symbol))
                })
                .count();
            if remaining <= needed {
                return false;
            }
            spent.push((object, needed));
        }
        for (object, needed) in spent {
            if let Some(remaining) = anchors.get_mut(&object) {
                *remaining -= needed;
            }
        }
        true
    }

    /// The name of a function's identity in a floating COMDAT group (see
    /// `icf_fold::plan`): its group's signature and its section's name, the
    /// same in every instance. Only for a whole-section code member, and only
    /// when every loaded instance of the group holds that section, where a
    /// jump to it can land.
    fn identity_name(
        &self,
        candidate: CandidateId,
        groups: &ComdatInstances<'data>,
    ) -> Option<Vec<u8>> {
        let info = &self.candidates[candidate.index()];
        let elf = &self.program.object(info.object).elf;
        let section = elf.section(info.section);
        if !info.is_code() || info.start != 0 || info.end != section.size {
            return None;
        }
        let (_, instances) = groups.instances_of(self, candidate)?;
        let every_instance_has_it = instances.len() > 1
            && groups.remembered(Question::EveryInstanceHasIt, self, candidate, || {
                instances.iter().all(|&instance| {
                    groups
                        .instance_section_index(self, info, instance)
                        .is_some()
                })
            });
        if !every_instance_has_it {
            return None;
        }
        let signature = elf
            .symbol(elf.groups[section.group? as usize].signature)
            .name;
        Some([signature, b"\0", section.name].concat())
    }

    fn in_comdat(&self, candidate: CandidateId) -> bool {
        let info = &self.candidates[candidate.index()];
        let elf = &self.program.object(info.object).elf;
        elf.section(info.section)
            .group
            .is_some_and(|g| elf.groups[g as usize].is_comdat)
    }

    /// The global symbols a candidate defines (they move with its body to another object).
    pub fn global_symbols(&self, candidate: CandidateId) -> Vec<SymbolIndex> {
        let info = &self.candidates[candidate.index()];
        let object = self.program.object(info.object);
        candidate_symbols(object, info.section, info.start, info.end, info.is_code())
            .into_iter()
            .filter(|&s| object.elf.symbol(s).binding != Binding::Local)
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
        let object = self.program.object(info.object);
        let globals = self.global_symbols(candidate);
        if globals.is_empty() {
            return true;
        }
        // Each stays the definition its name resolves to; and no archive
        // member the link skips defines it: once the name is undefined in
        // this object, a linker resolving it before it reaches the kept copy
        // (mold, or a kept copy later on the command line) would load that
        // member instead, and its other definitions would take over too.
        let winners = globals.iter().all(|&s| {
            let symbol = object.elf.symbol(s);
            self.program.definitions.winner(symbol.name) == Some((info.object, s))
                && !self.program.definitions.defined_lazily(symbol.name)
        });
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
        let elf = &self.program.object(info.object).elf;
        // Under IBT or BTI the thunk starts with a landing pad, as `fold.rs`
        // writes it.
        let landing_pad = elf.feature_1_and() & 1 != 0;
        Some(icf_arch::of(elf.arch).thunk().size(landing_pad))
    }

    /// Lower is preferred as the kept copy: not replaceable, not in a COMDAT
    /// group, strongest binding, first on the command line (candidates are
    /// numbered in command-line order, so no two tie).
    fn preference(&self, candidate: CandidateId) -> (u8, u8, u8, u32) {
        let info = &self.candidates[candidate.index()];
        let elf = &self.program.object(info.object).elf;
        let symbols = self.symbols_of(info);
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

    /// The origin of a candidate as a function index, for callers that need the extent.
    pub fn function_index(&self, candidate: CandidateId) -> Option<usize> {
        match self.candidates[candidate.index()].origin {
            Origin::Function(index) => Some(index),
            Origin::Data => None,
        }
    }
}

/// The symbols that name a candidate: those at its start (code) or anywhere
/// in it (data), plus the section symbol for a whole section.
fn candidate_symbols(
    object: &LoadedObject<'_>,
    section: SectionIndex,
    start: u64,
    end: u64,
    code: bool,
) -> Vec<SymbolIndex> {
    let mut symbols: Vec<SymbolIndex> = object
        .section_symbols
        .get(section)
        .iter()
        .filter(|&&(value, _, _)| {
            if code {
                value == start
            } else {
                value >= start && value < end
            }
        })
        .map(|&(_, _, index)| index)
        .collect();
    if start == 0 && end == object.elf.section(section).size {
        symbols.extend(object.section_symbol[section.index()]);
    }
    symbols
}

/// Whether rustc made the object: its `.comment` names rustc's version.
fn made_by_rustc(elf: &icf_object::ElfObject<'_>) -> bool {
    const RUSTC: &[u8] = b"rustc version ";
    elf.sections.iter().any(|section| {
        section.name == b".comment" && section.data.windows(RUSTC.len()).any(|w| w == RUSTC)
    })
}

/// Whether `symbol` names data a program may take the address of: not a
/// section or mapping symbol, not an assembler-local label (`.L`), not a
/// table gcc makes for a switch (`CSWTCH.`).
fn names_an_object(symbol: &icf_object::Symbol<'_>) -> bool {
    symbol.kind != SymbolKind::Section
        && !symbol.name.is_empty()
        && !symbol.name.starts_with(b".L")
        && !symbol.name.starts_with(b"$")
        && !symbol.name.starts_with(b"CSWTCH.")
}

/// Why a section may not be folded, `None` when it may.
fn section_ineligibility(
    section: &icf_object::Section<'_>,
    start: u64,
    end: u64,
) -> Option<String> {
    use object::elf;
    let name = section.name_lossy();
    if section.is_writable() {
        return Some("writable section".to_string());
    }
    if section.flags & elf::SHF_LINK_ORDER.0 != 0 {
        return Some("SHF_LINK_ORDER section".to_string());
    }
    if section.flags & elf::SHF_GNU_RETAIN.0 != 0 {
        return Some("retained section (SHF_GNU_RETAIN)".to_string());
    }
    if [".init", ".fini", ".ctors", ".dtors"]
        .iter()
        .any(|s| name == *s || name.starts_with(&format!("{s}.")))
    {
        return Some(format!("{name} runs by its section"));
    }
    let c_identifier = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if c_identifier {
        return Some(format!(
            "section {name} may be delimited by __start_/__stop_ symbols"
        ));
    }
    if start != 0 || end != section.size {
        return Some("shares its section with other code".to_string());
    }
    None
}

/// The names of the identities classes fold through, numbered in byte
/// order: the planner compares [`Identity`] numbers, and the smallest
/// identity of a class is the smallest name, in every run and every class
/// alike.
#[derive(Debug, Default)]
struct IdentityNames {
    /// (class, member, name) of every member that has one.
    named: Vec<(usize, usize, Vec<u8>)>,
}

impl IdentityNames {
    /// Numbers the names and gives each member its [`Identity`]; returns
    /// the names by number.
    fn number(self, classes: &mut [(ClassId, Vec<MemberFacts>)]) -> Vec<Vec<u8>> {
        let mut names: Vec<Vec<u8>> = self.named.iter().map(|(_, _, n)| n.clone()).collect();
        names.sort_unstable();
        names.dedup();
        for (class, member, name) in self.named {
            if let Ok(number) = names.binary_search(&name) {
                classes[class].1[member].identity = Some(Identity(number as u32));
            }
        }
        names
    }
}

/// Every loaded instance of each COMDAT group signature: the link keeps one
/// instance per signature, and icf cannot always tell which.
#[derive(Debug, Default)]
pub(crate) struct ComdatInstances<'data> {
    /// Signature id by name, in order of first appearance.
    ids: HashMap<&'data [u8], u32>,
    /// Instances (object, group index) by signature id.
    instances: Vec<Vec<(ObjectId, u32)>>,
    /// Whole-section candidates of grouped sections, by (object, section).
    grouped: HashMap<(ObjectId, SectionIndex), CandidateId>,
    /// Answers that hold for every instance of a group's section alike, by
    /// question, signature id and section name: asking once per group
    /// rather than once per instance keeps planning linear.
    answers: std::cell::RefCell<HashMap<AnswerKey<'data>, bool>>,
}

/// A question, a signature id and a section name.
type AnswerKey<'data> = (Question, u32, &'data [u8]);

/// A question about all instances of one section of a COMDAT group.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Question {
    /// Every instance is in one class (see [`ComdatInstances::kept_eligible`]).
    AllInOneClass,
    /// The group may move whole (see `Analysis::group_may_move`).
    GroupMayMove,
    /// Every instance holds the section (see `Analysis::identity_name`).
    EveryInstanceHasIt,
}

impl<'data> ComdatInstances<'data> {
    /// The signature id of a candidate's group when the group has several instances.
    pub(crate) fn floating(
        &self,
        analysis: &Analysis<'_, '_>,
        candidate: CandidateId,
    ) -> Option<u32> {
        let (id, instances) = self.instances_of(analysis, candidate)?;
        (instances.len() > 1).then_some(id)
    }

    /// Whether a candidate may be kept: its group has one instance, or every
    /// instance holds a same-named section in the candidate's class.
    pub(crate) fn kept_eligible(
        &self,
        analysis: &Analysis<'_, 'data>,
        candidate: CandidateId,
    ) -> bool {
        let Some((_, instances)) = self.instances_of(analysis, candidate) else {
            return true;
        };
        // Instances in two classes answer no for both: one answer per group.
        self.remembered(Question::AllInOneClass, analysis, candidate, || {
            let info = &analysis.candidates[candidate.index()];
            let class = analysis.partition.class_of[candidate.index()];
            instances.iter().all(|&(object, group)| {
                self.instance_section(analysis, info, (object, group))
                    .is_some_and(|other| analysis.partition.class_of[other.index()] == class)
            })
        })
    }

    /// `answer()`, asked once for all instances of `candidate`'s section of
    /// its group (the answer must be the same for each of them).
    pub(crate) fn remembered(
        &self,
        question: Question,
        analysis: &Analysis<'_, 'data>,
        candidate: CandidateId,
        answer: impl FnOnce() -> bool,
    ) -> bool {
        let Some((id, _)) = self.instances_of(analysis, candidate) else {
            return answer();
        };
        let name = analysis
            .section_of(&analysis.candidates[candidate.index()])
            .name;
        if let Some(&known) = self.answers.borrow().get(&(question, id, name)) {
            return known;
        }
        let known = answer();
        self.answers
            .borrow_mut()
            .insert((question, id, name), known);
        known
    }

    /// The candidate holding `info`'s section in another instance of its
    /// group: the same-named member of group `group` of `object`.
    pub(crate) fn instance_section(
        &self,
        analysis: &Analysis<'_, '_>,
        info: &crate::candidates::CandidateInfo,
        instance: (ObjectId, u32),
    ) -> Option<CandidateId> {
        let section = self.instance_section_index(analysis, info, instance)?;
        self.grouped.get(&(instance.0, section)).copied()
    }

    /// The section named like `info`'s in group `group` of `object`.
    pub(crate) fn instance_section_index(
        &self,
        analysis: &Analysis<'_, '_>,
        info: &crate::candidates::CandidateInfo,
        (object, group): (ObjectId, u32),
    ) -> Option<SectionIndex> {
        let name = analysis.section_of(info).name;
        let elf = &analysis.program.object(object).elf;
        elf.groups[group as usize]
            .members
            .iter()
            .copied()
            .find(|&m| elf.section(m).name == name)
    }

    /// Whether a candidate is outside a COMDAT group, or in the first loaded
    /// instance of its group (the one linkers keep, bar archive order).
    pub(crate) fn first_instance(
        &self,
        analysis: &Analysis<'_, '_>,
        candidate: CandidateId,
    ) -> bool {
        self.instances_of(analysis, candidate)
            .is_none_or(|(_, instances)| {
                instances.first().map(|&(object, _)| object)
                    == Some(analysis.candidates[candidate.index()].object)
            })
    }

    pub(crate) fn instances_of(
        &self,
        analysis: &Analysis<'_, '_>,
        candidate: CandidateId,
    ) -> Option<(u32, &[(ObjectId, u32)])> {
        let info = &analysis.candidates[candidate.index()];
        let elf = &analysis.program.object(info.object).elf;
        let group = &elf.groups[elf.section(info.section).group? as usize];
        if !group.is_comdat {
            return None;
        }
        let id = *self.ids.get(elf.symbol(group.signature).name)?;
        Some((id, &self.instances[id as usize]))
    }
}

impl<'data> Analysis<'_, 'data> {
    pub(crate) fn comdat_instances(&self) -> ComdatInstances<'data> {
        let mut groups = ComdatInstances::default();
        for (index, object) in self.program.objects.iter().enumerate() {
            if !object.loaded {
                continue;
            }
            for (group_index, group) in object.elf.groups.iter().enumerate() {
                if !group.is_comdat {
                    continue;
                }
                let name = object.elf.symbol(group.signature).name;
                let next = groups.ids.len() as u32;
                let id = *groups.ids.entry(name).or_insert(next);
                if id as usize == groups.instances.len() {
                    groups.instances.push(Vec::new());
                }
                groups.instances[id as usize].push((ObjectId(index as u32), group_index as u32));
            }
        }
        for (index, info) in self.candidates.iter().enumerate() {
            let section = self.program.object(info.object).elf.section(info.section);
            if info.start == 0 && section.group.is_some() {
                groups
                    .grouped
                    .insert((info.object, info.section), CandidateId(index as u32));
            }
        }
        groups
    }
}
