//! From a loaded program to classes of identical candidates and the plan
//! that folds them: the analysis as a list of phases, each a function of
//! what the ones before it made ([`Analysis::run`] calls them in order).
//!
//! 1. `candidates.rs`: every function piece and read-only data piece, and
//!    the places references narrow to ([`Places`]).
//! 2. `narrow.rs`, `data_uses.rs`: references narrowed from "section plus
//!    offset" to the candidate or constant at that place; what refers to
//!    candidates from other data, and through which vtable names.
//! 3. `keys.rs`, `attributes.rs`: each candidate lifted, narrowed and
//!    reduced to its comparator key; its attributes interned; jump tables'
//!    owners; the references through which an address escapes.
//! 4. `significance.rs`: whose address is significant, and why.
//! 5. here: references that need their target's very address pinned, the
//!    partition (`icf-fold`), the plan (`member_facts.rs` gathers each
//!    member's facts, `comdat.rs` those of COMDAT groups, `icf-fold`
//!    decides) and its audit, again until the plan breaks no reference.
//!
//! The result, [`Analysis`], is what reports, explanations and the fold's
//! edits (`write/mod.rs`) read.

use crate::analyse::candidates::{CandidateInfo, Origin, Places, collect_candidates};
use crate::analyse::data_uses::references_from_data;
use crate::analyse::key_cache::{CacheStats, PendingWrites};
use crate::analyse::keys::{self, Keys};
use crate::analyse::lift_memo::LiftCounts;
use crate::analyse::narrow::Narrower;
use crate::analyse::significance::{Significance, Uses};
use crate::load::program::Program;
use crate::load::targets::{ExtendedTargets, Target};
use crate::options::PlanOptions;
use icf_fold::body::Body;
use icf_fold::partition::Partition;
use icf_fold::plan::{Action, ClassPlan, Mode};
use icf_fold::{Attrs, CandidateId, KeyedCandidate};
use icf_ir::{Function, TargetId, Use};
use rustc_hash::FxHashMap as HashMap;
use std::time::{Duration, Instant};

/// Time spent per phase.
#[derive(Clone, Debug, Default)]
pub struct Timings {
    pub load: Duration,
    /// Everything up to the partition: candidates, places, keys, attributes.
    pub lift: Duration,
    /// Of `lift`: finding candidates and the places references narrow to
    /// (liveness, pieces, mergeable elements, references from data).
    pub places: Duration,
    /// Of `lift`: the comparator keys (lifted, or read from the cache).
    pub keys: Duration,
    pub partition: Duration,
    pub plan: Duration,
}

/// Every candidate with its attributes and its class. Candidates are
/// partitioned by their comparator keys, which live only as long as
/// [`Analysis::run`]; the IR is lifted again where a difference is explained
/// ([`Analysis::lift_candidate`]).
#[derive(Debug)]
pub struct Analysis<'p, 'data> {
    pub program: &'p Program<'data>,
    pub candidates: Vec<CandidateInfo>,
    /// Code candidates compared partly byte by byte.
    pub opaque_functions: usize,
    /// Functions lifted for their keys, and keys cloned from identical
    /// copies instead (see `lift_memo`).
    pub lifts: LiftCounts,
    pub attrs: Vec<Attrs>,
    /// The program's targets plus candidate and constant targets.
    pub targets: ExtendedTargets<'p, 'data>,
    /// The candidate each target names, indexed by target id.
    pub target_candidate: Vec<Option<CandidateId>>,
    /// The candidates and constants of each section, for narrowing references.
    places: Places,
    pub partition: Partition,
    /// Output-section class names, indexed by [`Attrs::section_class`].
    pub section_classes: Vec<String>,
    /// For a read-only data candidate that only one function uses and that
    /// points only into that function (its jump table), that function.
    pub owner: Vec<Option<CandidateId>>,
    /// What the plan was asked for.
    pub options: PlanOptions,
    /// Why each candidate's address is significant (see [`Analysis::need`]).
    significance: Vec<Option<Significance>>,
    /// The candidates `--keep-unique` names.
    keep_unique: Vec<bool>,
    /// The candidates the audit found the plan keeps apart from their
    /// class, where references needed their addresses merged.
    apart: Vec<bool>,
    /// The plan for every class: alias, thunk or keep per member.
    pub plan: Plan,
    pub timings: Timings,
    /// Per object, per section, what a `--gc-sections`/`-dead_strip` link
    /// keeps ([`crate::load::live::live_sections`]); `None` without one.
    pub live: Option<Vec<Vec<bool>>>,
    /// What icf's cache of comparator keys did, when there is one.
    pub cache: Option<CacheStats>,
    /// The cache entries still being written; dropping the analysis waits
    /// for them ([`icf link`](crate::link()) keeps them until the link is done).
    pub cache_writes: Option<PendingWrites>,
}

/// The plan for every class with more than one member.
#[derive(Clone, Debug)]
pub struct Plan {
    pub mode: Mode,
    pub classes: Vec<ClassPlan>,
    /// Per candidate, why its address is significant (safe mode facts, also computed in mode all).
    pub significance: Vec<Option<Significance>>,
    /// The name of each [`Identity`](icf_fold::plan::Identity) a class folds through: a COMDAT
    /// group's signature and a section name (see `IdentityNames` in `comdat.rs`).
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

/// How many times the partition is made again for targets the plan keeps
/// apart before every such target is taken for apart at once (one or two
/// rounds are the rule).
const MAX_AUDIT_ROUNDS: u32 = 4;

/// What a reference needs of the candidate it names (see [`Analysis::need`]).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Need {
    /// Any member of the target's class serves.
    Nothing,
    /// The target's address, which the plan must merge with its class.
    SameAddress,
    /// The target itself: compared by identity.
    Identity,
}

impl<'p, 'data> Analysis<'p, 'data> {
    /// Builds, lifts, partitions and plans every candidate of `program`.
    ///
    /// The soundness rule (docs/design.md): two candidates may fold only if
    /// every pair of corresponding references lands on the same address in
    /// the output, or on places that behave alike where the address cannot
    /// be observed. A class is a promise that its members are
    /// interchangeable; where a reference needs its target's very address
    /// and the plan cannot promise to merge the target with its class (see
    /// `Analysis::need`), the reference is *pinned*: it compares by the
    /// target's identity, before refinement. Where the promise depends on
    /// the whole plan (a member of a class may stay apart, or become a
    /// thunk with its own address), the plan is audited: every reference a
    /// fold relies on must land where its counterpart lands, and the
    /// targets that do not are pinned and the partition made again.
    pub fn run(program: &'p Program<'data>, options: &PlanOptions) -> Analysis<'p, 'data> {
        let started = Instant::now();
        let mut targets = ExtendedTargets::new(&program.targets);
        let live = program
            .options
            .gc_sections
            .as_ref()
            .map(|roots| crate::load::live::live_sections(program, roots));
        let candidates = collect_candidates(program, live.as_deref());
        let places = Places::new(program, &candidates, &mut targets);
        let mut target_candidate = vec![None; targets.len()];
        for (index, &target) in places.candidate_targets.iter().enumerate() {
            target_candidate[target.index()] = Some(CandidateId(index as u32));
        }
        let narrower = Narrower {
            program,
            targets: &targets,
            places: &places,
        };
        let (data_references, vtable_entries) =
            references_from_data(program, &narrower, live.as_deref());
        let places_time = started.elapsed();

        let Keys {
            mut bodies,
            attrs,
            section_classes,
            owner,
            escaping_references,
            opaque_functions,
            cache,
            cache_writes,
            keys_time,
            lifts,
        } = keys::make(
            program,
            &candidates,
            &narrower,
            &target_candidate,
            &data_references,
            options.cache.as_ref(),
        );
        let lift_time = started.elapsed();
        // What making the keys freed (the lift memo, the first pass's
        // entries) stays resident otherwise, under the partition's and the
        // plan's allocations: 220 MiB of a million synthetic functions.
        crate::memory::return_freed_memory();

        let started = Instant::now();
        let count = candidates.len();
        let mut analysis = Analysis {
            program,
            candidates,
            opaque_functions,
            lifts,
            attrs: Vec::new(),
            targets,
            target_candidate,
            places,
            partition: Partition {
                class_of: (0..count as u32).map(icf_fold::ClassId).collect(),
                hashes: Vec::new(),
                rounds: 0,
            },
            section_classes,
            owner,
            options: options.clone(),
            significance: Vec::new(),
            keep_unique: Vec::new(),
            apart: vec![false; count],
            live,
            cache,
            cache_writes,
            plan: Plan::empty(options.mode),
            timings: Timings {
                lift: lift_time,
                places: places_time,
                keys: keys_time,
                ..Timings::default()
            },
        };
        analysis.significance = Uses {
            program,
            candidates: &analysis.candidates,
            targets: &analysis.targets,
            escaping_references: &escaping_references,
            data_references: &data_references,
            vtable_entries: &vtable_entries,
        }
        .significance();
        // The references are read only for the verdicts.
        drop((escaping_references, data_references, vtable_entries));
        analysis.keep_unique = analysis.keep_unique_candidates();
        analysis.attrs = attrs;
        let mut plan_time = Duration::ZERO;
        let mut rounds = 0;
        loop {
            rounds += 1;
            let mut attrs = std::mem::take(&mut analysis.attrs);
            analysis.pin_references(&mut bodies, &mut attrs);
            analysis.attrs = attrs;
            let fold_candidates: Vec<KeyedCandidate<'_>> = bodies
                .iter()
                .zip(&analysis.attrs)
                .map(|(body, attrs)| KeyedCandidate { body, attrs })
                .collect();
            // Nothing reads the inputs again until the plan: the partition's
            // peak need not include them.
            program.inputs.release_resident_pages();
            let partition =
                icf_fold::partition::refine(&fold_candidates, &analysis.target_candidate);
            drop(fold_candidates);
            analysis.partition = partition;
            let planned = Instant::now();
            analysis.plan = analysis.plan_classes(analysis.significance.clone());
            let violations = analysis.audit(&bodies);
            plan_time += planned.elapsed();
            if violations.is_empty() {
                break;
            }
            // The last round pinned every reference that needs an address:
            // a plan that still breaks one is icf's own inconsistency. Fail
            // (`icf link` falls back to the plain link, `--strict` reports
            // it) rather than partition again without end.
            assert!(
                rounds <= MAX_AUDIT_ROUNDS,
                "the plan breaks {} reference(s) though every target that needs its address is pinned",
                violations.len()
            );
            if rounds >= MAX_AUDIT_ROUNDS {
                // Every reference that needs its target's address then
                // compares by identity: the next plan breaks none.
                analysis.apart.fill(true);
            } else {
                for candidate in violations {
                    analysis.apart[candidate.index()] = true;
                }
            }
        }
        analysis.timings.partition = started.elapsed() - plan_time;
        analysis.timings.plan = plan_time;
        // The keys were the largest part of the heap; what they held goes
        // back to the system before writing allocates more.
        drop(bodies);
        crate::memory::return_freed_memory();
        analysis
    }

    /// Gives back the memory of what only the analysis and its report
    /// read (the places, the attributes, the targets, the significance
    /// verdicts), once the plan is made and no report will be written: the
    /// edits are made, the rewritten files written and the linker run
    /// without them. On a million synthetic functions they were, with the
    /// references the verdicts are made from (which now go as soon as the
    /// verdicts are made), 130 MiB, which the edits came on top of. What stays: the plan,
    /// the candidates, their classes, the liveness and the counts, which
    /// is all the edits read ([`Analysis::object_edits`]).
    pub fn keep_what_the_edits_read(&mut self) {
        self.attrs = Vec::new();
        self.targets = ExtendedTargets::new(&self.program.targets);
        self.target_candidate = Vec::new();
        self.places = Places::default();
        self.partition.hashes = Vec::new();
        self.owner = Vec::new();
        self.significance = Vec::new();
        self.keep_unique = Vec::new();
        self.apart = Vec::new();
        crate::memory::return_freed_memory();
    }

    /// What a reference of candidate `from` with use `use_` needs of its
    /// target candidate `to`, given each candidate's address significance.
    ///
    /// - A call or jump runs the code there: any member of the class runs
    ///   the same, whether merged, a thunk or kept apart. Likewise a load
    ///   or store reads the same bytes from any member of a read-only data
    ///   class, and a jump table's entries lead into its own function.
    /// - An address that escapes needs nothing of a target whose address is
    ///   not significant; of a significant one it needs the very address.
    ///   In safe mode (and for data unless `--ignore-data-address-equality`)
    ///   no two significant members share an address, so the reference is
    ///   pinned; where significance is relaxed (functions in mode `all`), the
    ///   plan must merge the targets, which the audit checks.
    /// - `--keep-unique` targets are compared by identity, as lld does.
    fn need(&self, from: CandidateId, use_: Use, to: CandidateId) -> Need {
        if self.keep_unique[to.index()] {
            return Need::Identity;
        }
        let from_code = self.candidates[from.index()].is_code();
        let to_code = self.candidates[to.index()].is_code();
        match (from_code, use_, to_code) {
            (true, Use::Call | Use::Jump, true) => return Need::Nothing,
            (true, Use::Access, false) => return Need::Nothing,
            (true, Use::Access, true) => return Need::Identity,
            (false, _, true) if self.owner[from.index()] == Some(to) => return Need::Nothing,
            _ => {}
        }
        if self.significance[to.index()].is_none() {
            return Need::Nothing;
        }
        let relaxed = if to_code {
            self.options.mode == icf_fold::plan::Mode::All
        } else {
            self.options.ignore_data_address_equality
        };
        if relaxed {
            Need::SameAddress
        } else {
            Need::Identity
        }
    }

    /// Whether a reference of `from` with use `use_` to candidate `to`
    /// compares by identity: its [`Need`] is identity, or it needs the same
    /// address as its counterpart and the audit found `to` kept apart.
    fn pinned(&self, from: CandidateId, use_: Use, to: CandidateId) -> bool {
        match self.need(from, use_, to) {
            Need::Nothing => false,
            Need::SameAddress => self.apart[to.index()],
            Need::Identity => true,
        }
    }

    /// Points every reference that must compare by identity (see
    /// [`Analysis::pinned`]) at its target's [`Target::Pinned`].
    fn pin_references(&mut self, bodies: &mut [Body], attrs: &mut [Attrs]) {
        for index in 0..bodies.len() {
            let from = CandidateId(index as u32);
            let changes: Vec<(usize, CandidateId)> = bodies[index]
                .refs()
                .iter()
                .enumerate()
                .filter_map(|(position, r)| Some((position, r.use_, self.candidate_of(r.target)?)))
                .filter(|&(_, use_, to)| self.pinned(from, use_, to))
                .map(|(position, _, to)| (position, to))
                .collect();
            for (position, to) in changes {
                let target = self.targets.intern(Target::Pinned(to.0));
                bodies[index].set_ref_target(position, target);
            }
            // The unwinder reads an LSDA's contents; only --keep-unique pins it.
            let unique: Vec<(usize, CandidateId)> = attrs[index]
                .refs
                .iter()
                .enumerate()
                .filter_map(|(position, r)| Some((position, self.candidate_of(r.target)?)))
                .filter(|&(_, to)| self.keep_unique[to.index()])
                .collect();
            if !unique.is_empty() {
                let mut refs = attrs[index].refs.to_vec();
                for (position, to) in unique {
                    refs[position].target = self.targets.intern(Target::Pinned(to.0));
                }
                attrs[index].refs = refs.into_boxed_slice();
            }
        }
    }

    /// The targets of references the plan would break: for every member
    /// that runs its kept copy's body (an alias or a thunk), each reference
    /// of the kept body that needs the same address as the member's
    /// counterpart must land where it lands. Returns the targets that do
    /// not land on their own class's kept copy.
    fn audit(&self, bodies: &[Body]) -> Vec<CandidateId> {
        let attrs = &self.attrs;
        let mut landing: Vec<CandidateId> =
            (0..self.candidates.len() as u32).map(CandidateId).collect();
        let mut kept_of_class: HashMap<icf_fold::ClassId, CandidateId> = HashMap::default();
        for class in &self.plan.classes {
            kept_of_class.insert(class.class, class.kept);
            for decision in &class.decisions {
                if decision.action == icf_fold::plan::Action::Alias {
                    landing[decision.candidate.index()] = class.kept;
                }
            }
        }
        let settled = |c: CandidateId| {
            kept_of_class
                .get(&self.partition.class_of[c.index()])
                .is_none_or(|&kept| landing[c.index()] == kept)
        };
        let mut violations = Vec::new();
        for class in &self.plan.classes {
            let kept = class.kept;
            for decision in &class.decisions {
                if !matches!(
                    decision.action,
                    icf_fold::plan::Action::Alias | icf_fold::plan::Action::Thunk(_)
                ) {
                    continue;
                }
                let member = decision.candidate;
                let pairs = bodies[kept.index()]
                    .refs()
                    .iter()
                    .map(|r| (r.target, r.use_))
                    .zip(bodies[member.index()].refs().iter().map(|r| r.target))
                    .chain(
                        attrs[kept.index()]
                            .refs
                            .iter()
                            .map(|r| (r.target, r.use_))
                            .zip(attrs[member.index()].refs.iter().map(|r| r.target)),
                    );
                for ((left, use_), right) in pairs {
                    if left == right {
                        continue;
                    }
                    let (Some(l), Some(r)) = (self.candidate_of(left), self.candidate_of(right))
                    else {
                        continue;
                    };
                    let need = self.need(kept, use_, l);
                    if need == Need::SameAddress && landing[l.index()] != landing[r.index()] {
                        violations.extend([l, r].into_iter().filter(|&c| !settled(c)));
                    }
                }
            }
        }
        violations.sort_unstable();
        violations.dedup();
        violations
    }

    /// The IR of a candidate, lifted and narrowed again exactly as
    /// [`Analysis::run`] did before keeping only its key.
    pub fn lift_candidate(&self, id: CandidateId) -> Function {
        let mut function = Narrower {
            program: self.program,
            targets: &self.targets,
            places: &self.places,
        }
        .lift(&self.candidates[id.index()]);
        // The references the partition compared by identity, likewise.
        for r in &mut function.refs {
            if let Some(to) = self.candidate_of(r.target)
                && self.pinned(id, r.use_, to)
                && let Some(pinned) = self.targets.find(&Target::Pinned(to.0))
            {
                r.target = pinned;
            }
        }
        function
    }

    /// The candidate a pinned target names: a reference that needed its
    /// very address (see `Analysis::need`).
    pub fn pinned_candidate(&self, target: TargetId) -> Option<CandidateId> {
        match self.targets.get(target) {
            Target::Pinned(index) => Some(CandidateId(index)),
            _ => None,
        }
    }

    /// Why a reference to `candidate` needed its very address, in words.
    pub fn why_pinned(&self, candidate: CandidateId) -> String {
        if self.keep_unique[candidate.index()] {
            return "named by --keep-unique".to_string();
        }
        if self.apart[candidate.index()] {
            return "the plan keeps it apart from its twins".to_string();
        }
        match &self.significance[candidate.index()] {
            Some(why) => self.describe_significance(why),
            None => "its address is significant".to_string(),
        }
    }

    /// The candidate a target names, if any.
    pub fn candidate_of(&self, target: TargetId) -> Option<CandidateId> {
        self.target_candidate.get(target.index()).copied().flatten()
    }

    /// The classes the partition ended with, for comparing references.
    pub fn class_map(&self) -> icf_fold::partition::ClassMap<'_> {
        icf_fold::partition::ClassMap {
            target_candidate: &self.target_candidate,
            class_of: &self.partition.class_of,
        }
    }

    /// The candidate's name: its function's demangled name; for data the
    /// symbol at its start, or `section+offset`.
    pub fn name(&self, id: CandidateId) -> String {
        let info = &self.candidates[id.index()];
        match info.origin {
            Origin::Function(index) => self.program.function_name(self.program.function(index)),
            Origin::Data => self.data_symbol(id).map_or_else(
                || self.data_place(id),
                |symbol| {
                    crate::demangle(self.program.object(info.object).object.symbol(symbol).name)
                },
            ),
        }
    }

    /// The candidate's raw (mangled) name; for data the symbol at its start, or `section+offset`.
    pub fn raw_name(&self, id: CandidateId) -> String {
        let info = &self.candidates[id.index()];
        match info.origin {
            Origin::Function(index) => self.program.function_raw_name(self.program.function(index)),
            Origin::Data => self.data_symbol(id).map_or_else(
                || self.data_place(id),
                |symbol| {
                    self.program
                        .object(info.object)
                        .object
                        .symbol(symbol)
                        .name_lossy()
                },
            ),
        }
    }

    /// The section a candidate lives in.
    pub(crate) fn section_of(&self, info: &CandidateInfo) -> &icf_object::Section<'data> {
        self.program
            .object(info.object)
            .object
            .section(info.section)
    }

    fn data_place(&self, id: CandidateId) -> String {
        let info = &self.candidates[id.index()];
        let section = self.section_of(info).name_lossy();
        icf_ir::print::with_addend(&section, info.start as i64)
    }

    /// The first named symbol at the start of a data candidate.
    fn data_symbol(&self, id: CandidateId) -> Option<icf_object::SymbolIndex> {
        let info = &self.candidates[id.index()];
        let symbols = self
            .program
            .object(info.object)
            .section_symbols
            .get(info.section);
        let at = symbols.partition_point(|&(value, _, _)| value < info.start);
        symbols
            .get(at)
            .filter(|&&(value, _, _)| value == info.start)
            .map(|&(_, _, index)| index)
    }

    /// A place named for people: `foo+0x10`, `"a string"`, `memcpy`.
    pub fn describe_target(&self, target: TargetId, addend: i64) -> String {
        match self.targets.get(target) {
            Target::Candidate(index) | Target::Pinned(index) => {
                icf_ir::print::with_addend(&self.name(CandidateId(index)), addend)
            }
            other => self.program.describe(other, addend),
        }
    }
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
            Significance::ReferencedFromData { object, section } => {
                let section = self.program.object(*object).object.section(*section);
                format!("referenced from data in {}", section.name_lossy())
            }
            Significance::Exported => "exported to the dynamic symbol table".to_string(),
            Significance::TakenInImage => {
                "its address is in code icf does not compare (an immediate, or code no symbol covers)"
                    .to_string()
            }
        }
    }
}
