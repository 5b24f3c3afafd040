//! From a loaded program to classes of identical candidates.
//!
//! Candidates are every function piece and every read-only data section
//! (`-fdata-sections` pieces, jump tables, constant pools, exception tables).
//! Each is lifted (data as one opaque run), its references are narrowed from
//! "section + offset" to the candidate holding that place (or, in a mergeable
//! section, to the element's content), its attributes are interned, and
//! `icf-fold` refines them into classes.

use crate::plan::{Plan, PlanOptions, Significance};
use crate::program::{ObjectId, Program};
use crate::targets::{ExtendedTargets, Target};
use icf_fold::body::Body;
use icf_fold::partition::Partition;
use icf_fold::{Attrs, CandidateId, KeyedCandidate, Kind};
use icf_ir::{
    Block, Function, OpaqueReason, OpaqueRun, Opcode, Operand, Ref, RefKind, TargetId, Use,
};
use icf_object::{ElfObject, PerSection, Section, SectionIndex};
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::time::{Duration, Instant};

/// Where a candidate comes from.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Origin {
    /// Index into [`Program::functions`].
    Function(usize),
    /// A whole read-only data section.
    Data,
}

/// One candidate: a place in an object.
#[derive(Clone, Debug)]
pub struct CandidateInfo {
    pub origin: Origin,
    pub object: ObjectId,
    pub section: SectionIndex,
    pub start: u64,
    pub end: u64,
}

impl CandidateInfo {
    pub fn size(&self) -> u64 {
        self.end - self.start
    }

    pub fn is_code(&self) -> bool {
        matches!(self.origin, Origin::Function(_))
    }
}

/// Time spent per phase.
#[derive(Clone, Debug, Default)]
pub struct Timings {
    pub load: Duration,
    pub lift: Duration,
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
    /// The references through which a candidate may let an address escape,
    /// as (candidate, target): every reference a code candidate takes the
    /// address with ([`Use::Address`]), every reference of a data candidate.
    pub escaping_references: Vec<(CandidateId, TargetId)>,
    /// Code candidates compared partly byte by byte.
    pub opaque_functions: usize,
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
    /// References to candidates from sections that are not candidates
    /// (writable data, `.init_array`, vtables): (candidate, referring object,
    /// section).
    pub data_references: Vec<DataReference>,
    /// Every vtable entry (in any data section) that points to a candidate.
    pub vtable_entries: Vec<VtableEntry<'data>>,
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
}

/// A reference to a candidate from a section that is not one: (candidate,
/// referring object, referring section).
pub type DataReference = (CandidateId, ObjectId, SectionIndex);

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

/// For each read-only data candidate that only one code candidate refers
/// to and whose every reference points into that code candidate, the code
/// candidate: a jump table belongs to its function. Its entries do not take
/// the function's address, and lead into the function whichever copy of
/// the table the function runs with (the function's layout is compared,
/// since they land inside it).
fn owners(
    candidates: &[CandidateInfo],
    bodies: &[Body],
    target_candidate: &[Option<CandidateId>],
    data_references: &[DataReference],
) -> Vec<Option<CandidateId>> {
    let candidate_of = |target: TargetId| target_candidate.get(target.index()).copied().flatten();
    // The one candidate referring to each candidate: None for nobody yet,
    // Some(Ok(c)) for c alone, Some(Err(())) for several.
    let mut referrer: Vec<Option<Result<CandidateId, ()>>> = vec![None; candidates.len()];
    for (index, body) in bodies.iter().enumerate() {
        let from = CandidateId(index as u32);
        for r in body.refs() {
            if let Some(to) = candidate_of(r.target) {
                let slot = &mut referrer[to.index()];
                *slot = match *slot {
                    None => Some(Ok(from)),
                    Some(Ok(one)) if one == from => Some(Ok(one)),
                    _ => Some(Err(())),
                };
            }
        }
    }
    for &(to, _, _) in data_references {
        referrer[to.index()] = Some(Err(()));
    }
    candidates
        .iter()
        .zip(bodies)
        .zip(&referrer)
        .map(|((info, body), referrer)| {
            let Some(Ok(user)) = *referrer else {
                return None;
            };
            if info.is_code() || !candidates[user.index()].is_code() || body.refs().is_empty() {
                return None;
            }
            body.refs()
                .iter()
                .all(|r| candidate_of(r.target) == Some(user))
                .then_some(user)
        })
        .collect()
}

/// A candidate's place in its section: (start, end, candidate).
type Piece = (u64, u64, CandidateId);

/// The places of every section that references can be narrowed to, per
/// object and section (a section per function is common).
#[derive(Clone, Debug, Default)]
struct Places {
    /// Candidates of each object per section, sorted.
    pieces: Vec<PerSection<Piece>>,
    /// Elements of mergeable sections: (start, constant) per section, sorted.
    constants: Vec<PerSection<(u64, TargetId)>>,
    /// The target naming each candidate.
    candidate_targets: Vec<TargetId>,
}

impl Places {
    /// The places of `candidates` and of every mergeable section's
    /// elements, each named by a target interned in `targets`.
    fn new<'data>(
        program: &Program<'data>,
        candidates: &[CandidateInfo],
        targets: &mut ExtendedTargets<'_, 'data>,
    ) -> Places {
        let mut pieces: Vec<Vec<(SectionIndex, Piece)>> = vec![Vec::new(); program.objects.len()];
        let mut candidate_targets = Vec::with_capacity(candidates.len());
        for (index, candidate) in candidates.iter().enumerate() {
            candidate_targets.push(targets.intern(Target::Candidate(index as u32)));
            pieces[candidate.object.index()].push((
                candidate.section,
                (candidate.start, candidate.end, CandidateId(index as u32)),
            ));
        }
        let sections = |object: usize| program.objects[object].elf.sections.len();
        let pieces = pieces
            .into_iter()
            .enumerate()
            .map(|(object, mut list)| {
                list.sort_unstable();
                PerSection::new(sections(object), list)
            })
            .collect();
        let mut constants = Vec::with_capacity(program.objects.len());
        for (index, object) in program.objects.iter().enumerate() {
            let mut list = Vec::new();
            for (section_index, section) in object.elf.sections.iter().enumerate() {
                if let Some(elements) = merge_elements(section, targets) {
                    let section = SectionIndex(section_index as u32);
                    list.extend(elements.into_iter().map(|element| (section, element)));
                }
            }
            constants.push(PerSection::new(sections(index), list));
        }
        Places {
            pieces,
            constants,
            candidate_targets,
        }
    }

    fn pieces(&self, object: ObjectId, section: SectionIndex) -> &[Piece] {
        self.pieces
            .get(object.index())
            .map_or(&[], |lists| lists.get(section))
    }

    fn constants(&self, object: ObjectId, section: SectionIndex) -> &[(u64, TargetId)] {
        self.constants
            .get(object.index())
            .map_or(&[], |lists| lists.get(section))
    }
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
    /// [`Analysis::need`]), the reference is *pinned*: it compares by the
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
            .map(|roots| crate::live::live_sections(program, roots));
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

        // Each function's IR lives only until its key is made. A key keeps
        // the layout exactly when it is known already to matter: the code
        // computes its own addresses, or something enters it past its start.
        //
        // Objects are lifted one at a time per thread, and each gives back
        // its input pages when done: the inputs need not all be resident
        // alongside the keys.
        program.inputs.release_resident_pages();
        let mut bodies: Vec<Body> = map_by_object(program, &candidates, |_, candidate| {
            let function = narrower.lift(candidate);
            let entered = match candidate.origin {
                Origin::Function(index) => {
                    !program.entry_points(&program.functions[index]).is_empty()
                }
                Origin::Data => false,
            };
            let body = if function.layout_sensitive || entered {
                Body::with_layout(&function)
            } else {
                Body::of(&function)
            };
            icf_arch::recycle(function);
            body
        });
        let lift_time = started.elapsed();

        let started = Instant::now();
        let mut section_classes = Vec::new();
        let attrs = attributes(
            program,
            &candidates,
            &narrower,
            &bodies,
            &mut section_classes,
        );
        // Whether a jump from another candidate lands inside is known only
        // now; such candidates are few.
        bodies
            .par_iter_mut()
            .zip(&candidates)
            .zip(&attrs)
            .filter(|((body, _), attrs)| attrs.layout_sensitive && body.layout().is_none())
            .for_each(|((body, candidate), _)| {
                *body = Body::with_layout(&narrower.lift(candidate));
            });
        let owner = owners(&candidates, &bodies, &target_candidate, &data_references);
        let candidate_of =
            |target: TargetId| target_candidate.get(target.index()).copied().flatten();
        let escaping_references = bodies
            .iter()
            .zip(&candidates)
            .enumerate()
            .flat_map(|(index, (body, info))| {
                let owner = owner[index];
                body.refs()
                    .iter()
                    .filter(|r| r.use_ == Use::Address || !info.is_code())
                    // A jump table's entries do not let its function's address escape.
                    .filter(move |r| owner.is_none() || candidate_of(r.target) != owner)
                    .map(move |r| (CandidateId(index as u32), r.target))
            })
            .collect();
        let opaque_functions = bodies
            .iter()
            .zip(&candidates)
            .filter(|(body, info)| body.has_opaque && info.is_code())
            .count();
        let count = candidates.len();
        let mut analysis = Analysis {
            program,
            candidates,
            escaping_references,
            opaque_functions,
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
            data_references,
            vtable_entries,
            owner,
            options: options.clone(),
            significance: Vec::new(),
            keep_unique: Vec::new(),
            apart: vec![false; count],
            plan: Plan::empty(options.mode),
            timings: Timings {
                lift: lift_time,
                ..Timings::default()
            },
        };
        analysis.significance = analysis.significance();
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
    /// very address (see [`Analysis::need`]).
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
            Origin::Function(index) => self.program.function_name(&self.program.functions[index]),
            Origin::Data => self.data_symbol(id).map_or_else(
                || self.data_place(id),
                |symbol| crate::demangle(self.program.object(info.object).elf.symbol(symbol).name),
            ),
        }
    }

    /// The candidate's raw (mangled) name; for data the symbol at its start, or `section+offset`.
    pub fn raw_name(&self, id: CandidateId) -> String {
        let info = &self.candidates[id.index()];
        match info.origin {
            Origin::Function(index) => self
                .program
                .function_raw_name(&self.program.functions[index]),
            Origin::Data => self.data_symbol(id).map_or_else(
                || self.data_place(id),
                |symbol| {
                    self.program
                        .object(info.object)
                        .elf
                        .symbol(symbol)
                        .name_lossy()
                },
            ),
        }
    }

    /// The section a candidate lives in.
    pub(crate) fn section_of(&self, info: &CandidateInfo) -> &icf_object::Section<'data> {
        self.program.object(info.object).elf.section(info.section)
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

/// `f` of every candidate, in order, computed one object at a time per
/// thread; each object's input pages are given back once its run of
/// candidates is done (candidates come in runs by object: functions, then
/// data), so the inputs need not all be resident at once.
fn map_by_object<T: Send>(
    program: &Program<'_>,
    candidates: &[CandidateInfo],
    f: impl Fn(usize, &CandidateInfo) -> T + Sync,
) -> Vec<T> {
    let runs: Vec<std::ops::Range<usize>> = candidates
        .chunk_by(|a, b| a.object == b.object)
        .scan(0, |start, run| {
            let range = *start..*start + run.len();
            *start = range.end;
            Some(range)
        })
        .collect();
    runs.into_par_iter()
        .flat_map_iter(|run| {
            let object = candidates[run.start].object;
            let mapped: Vec<T> = run.map(|index| f(index, &candidates[index])).collect();
            program.release_object_pages(object);
            mapped
        })
        .collect()
}

/// Every function piece of the loaded objects, then every read-only data
/// piece, each in object order, in the sections `live` says the link keeps
/// (all, without `--gc-sections`).
fn collect_candidates(program: &Program<'_>, live: Option<&[Vec<bool>]>) -> Vec<CandidateInfo> {
    let kept = |object: ObjectId, section: SectionIndex| {
        live.is_none_or(|live| live[object.index()][section.index()])
    };
    let mut candidates: Vec<CandidateInfo> = program
        .functions
        .iter()
        .enumerate()
        .filter(|(_, f)| program.object(f.object).loaded && kept(f.object, f.extent.section))
        .map(|(index, f)| CandidateInfo {
            origin: Origin::Function(index),
            object: f.object,
            section: f.extent.section,
            start: f.extent.start,
            end: f.extent.end,
        })
        .collect();
    for (index, object) in program.objects.iter().enumerate() {
        if !object.loaded {
            continue;
        }
        let splits = data_split_points(&object.elf);
        for (section_index, section) in object.elf.sections.iter().enumerate() {
            let section_index = SectionIndex(section_index as u32);
            if !is_read_only_data(section) || !kept(ObjectId(index as u32), section_index) {
                continue;
            }
            let mut points: Vec<u64> = splits.get(&section_index).cloned().unwrap_or_default();
            points.extend([0, section.size]);
            points.retain(|&p| p <= section.size);
            points.sort_unstable();
            points.dedup();
            for piece in points.windows(2) {
                candidates.push(CandidateInfo {
                    origin: Origin::Data,
                    object: ObjectId(index as u32),
                    section: section_index,
                    start: piece[0],
                    end: piece[1],
                });
            }
        }
    }
    candidates.shrink_to_fit();
    candidates
}

/// Where read-only data sections split into pieces: at the start and end of
/// every symbol (a table, a constant), and at every LSDA an FDE names, so
/// that data sharing one section (no `-fdata-sections`, one
/// `.gcc_except_table` for all functions) still compares piece by piece.
fn data_split_points(elf: &ElfObject<'_>) -> HashMap<SectionIndex, Vec<u64>> {
    let mut points: HashMap<SectionIndex, Vec<u64>> = HashMap::default();
    for symbol in &elf.symbols {
        if let Some(section) = symbol.section()
            && !matches!(
                symbol.kind,
                icf_object::SymbolKind::Section | icf_object::SymbolKind::File
            )
        {
            let entry = points.entry(section).or_default();
            entry.push(symbol.value);
            if symbol.size > 0 {
                entry.push(symbol.value.saturating_add(symbol.size));
            }
        }
    }
    if let Some((eh_frame, fdes)) = &elf.eh_frame {
        for lsda in fdes.iter().filter_map(|fde| fde.lsda) {
            let reloc = &elf.section(*eh_frame).relocs[lsda];
            let symbol = elf.symbol(reloc.symbol);
            if let Some(section) = symbol.section() {
                let place = symbol.value as i64 + reloc.addend;
                if let Ok(place) = u64::try_from(place) {
                    points.entry(section).or_default().push(place);
                }
            }
        }
    }
    points
}

/// Read-only data a fold can share: allocated, not writable, not code, not
/// mergeable (the linker merges those by content itself), not thread-local,
/// and not `.eh_frame` (unwind entries are attributes of functions).
fn is_read_only_data(section: &Section<'_>) -> bool {
    use object::elf;
    section.sh_type == elf::SHT_PROGBITS.0
        && section.is_alloc()
        && !section.is_writable()
        && !section.is_executable()
        && section.flags & (elf::SHF_MERGE.0 | elf::SHF_TLS.0) == 0
        && section.size > 0
        && section.name != b".eh_frame"
}

/// The elements of a mergeable section, each interned as a constant target by content.
fn merge_elements<'data>(
    section: &Section<'data>,
    targets: &mut ExtendedTargets<'_, 'data>,
) -> Option<Vec<(u64, TargetId)>> {
    use object::elf;
    let entsize_field = u32::try_from(section.entsize).ok()?;
    if section.flags & elf::SHF_MERGE.0 == 0 || entsize_field == 0 || section.data.is_empty() {
        return None;
    }
    let entsize = entsize_field as usize;
    let strings = section.flags & elf::SHF_STRINGS.0 != 0;
    let mut elements = Vec::new();
    let mut start = 0;
    while start < section.data.len() {
        let end = if strings {
            // A string ends with an entsize-wide zero, aligned to entsize.
            let mut end = start;
            loop {
                let chunk = section.data.get(end..end + entsize);
                end += entsize;
                if chunk.is_none_or(|c| c.iter().all(|&b| b == 0)) {
                    break;
                }
            }
            end.min(section.data.len())
        } else {
            (start + entsize).min(section.data.len())
        };
        let content = &section.data[start..end];
        let target = targets.intern(Target::Constant {
            entsize: entsize_field,
            strings,
            content,
        });
        elements.push((start as u64, target));
        start = end;
    }
    Some(elements)
}

/// Rewrites "section + offset" references to the candidate or constant at that place.
struct Narrower<'a, 'data> {
    program: &'a Program<'data>,
    targets: &'a ExtendedTargets<'a, 'data>,
    places: &'a Places,
}

/// What a reference does with the place it names, as far as narrowing it
/// to a candidate is concerned.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Reach {
    /// A call or a jump: the code at the place runs, and the place belongs
    /// to the piece that starts or continues there.
    Branch,
    /// An address taken or accessed: pointer arithmetic may lead from it
    /// anywhere in the section, so where several pieces share the section
    /// it names none of them.
    Data,
    /// An FDE's LSDA or personality: read by the unwinder, from the place on.
    Unwind,
}

impl Reach {
    /// How a code reference with use `use_` reaches its place.
    fn of(use_: Use) -> Reach {
        match use_ {
            Use::Call | Use::Jump => Reach::Branch,
            Use::Access | Use::Address => Reach::Data,
        }
    }
}

impl Narrower<'_, '_> {
    /// `target + addend` where `place` is the byte referred to, as the
    /// candidate (or mergeable constant) it names.
    ///
    /// A section that is one candidate names it at every place, its end
    /// included (a pointer one past an array is the array's). Where several
    /// pieces share a section, only a branch (to the piece that starts or
    /// continues at the place) and an unwind reference (to the piece that
    /// starts there) have one owner: an address could be one piece's end as
    /// well as the next one's start, and pointer arithmetic from it can
    /// reach any neighbour, so it stays "section + offset", equal only to
    /// the same place. Such pieces cannot be merged anyway (they share
    /// their section).
    fn narrow(&self, target: TargetId, addend: i64, place: i64, reach: Reach) -> (TargetId, i64) {
        let Target::Section { object, section } = self.targets.get(target) else {
            return (target, addend);
        };
        let pieces = self.places.pieces(object, section);
        let named = |(start, _, candidate): Piece| {
            let id = self.places.candidate_targets[candidate.index()];
            (id, addend - start as i64)
        };
        match pieces {
            [] => {}
            &[piece @ (start, end, _)] => {
                if u64::try_from(place).is_ok_and(|place| (start..=end).contains(&place)) {
                    return named(piece);
                }
                return (target, addend);
            }
            _ => {
                let Ok(offset) = u64::try_from(place) else {
                    return (target, addend);
                };
                let at = pieces.partition_point(|&(start, _, _)| start <= offset);
                let piece = at.checked_sub(1).map(|i| pieces[i]);
                let owner = match reach {
                    // A jump-table entry's addend is its target plus its
                    // distance from the table: both must lie in the piece.
                    Reach::Branch => piece.filter(|&(start, end, _)| {
                        offset < end
                            && u64::try_from(addend).is_ok_and(|a| (start..end).contains(&a))
                    }),
                    Reach::Unwind => piece.filter(|&(start, _, _)| start == offset),
                    Reach::Data => None,
                };
                return owner.map_or((target, addend), named);
            }
        }
        let constants = self.places.constants(object, section);
        if let Ok(offset) = u64::try_from(addend)
            && let Some(i) = constants
                .partition_point(|&(start, _)| start <= offset)
                .checked_sub(1)
        {
            let (start, constant) = constants[i];
            return (constant, addend - start as i64);
        }
        (target, addend)
    }

    /// The candidate's IR with its references narrowed.
    fn lift(&self, candidate: &CandidateInfo) -> Function {
        match candidate.origin {
            Origin::Function(index) => {
                self.narrow_function(self.program.lift(&self.program.functions[index]))
            }
            Origin::Data => self.lift_data(candidate),
        }
    }

    fn narrow_function(&self, mut function: Function) -> Function {
        for r in &mut function.refs {
            // A reference to the code's own place equals only itself.
            if r.kind == RefKind::POSITION {
                continue;
            }
            // The lifter rebased PC-relative addends: the addend is the place.
            let (target, addend) = self.narrow(r.target, r.addend, r.addend, Reach::of(r.use_));
            r.target = target;
            r.addend = addend;
        }
        function
    }

    /// A read-only data section as one opaque run: relocated bytes zeroed,
    /// each relocation an offset and a reference.
    fn lift_data(&self, candidate: &CandidateInfo) -> Function {
        let object = self.program.object(candidate.object);
        let elf = &object.elf;
        let section = elf.section(candidate.section);
        let (start, end) = (candidate.start, candidate.end);
        let size = (end - start) as u32;
        let mut f = Function::new(elf.arch, size);
        let mut bytes = section
            .data
            .get(start as usize..end as usize)
            .unwrap_or_default()
            .to_vec();
        let mut operands = vec![Operand::Opaque(icf_ir::OpaqueId(0))];
        let first = section.relocs.partition_point(|r| r.offset < start);
        for reloc in section.relocs[first..]
            .iter()
            .take_while(|r| r.offset < end)
        {
            let start = (reloc.offset - candidate.start) as usize;
            if let Some(info) = icf_arch::of(elf.arch).elf_reloc(reloc.r_type) {
                info.clear_field(&mut bytes, start);
            }
            let symbol = object.symbol_refs[reloc.symbol.index()];
            let addend = symbol.base.wrapping_add(reloc.addend);
            let place = resolved_place(object, candidate.section, reloc, addend);
            let (target, addend) = self.narrow(symbol.target, addend, place, Reach::Data);
            let r = f.push_ref(Ref {
                target,
                addend,
                kind: RefKind(reloc.r_type),
                use_: Use::Address,
            });
            operands.push(f.imm((reloc.offset - candidate.start) as i64));
            operands.push(Operand::Ref(r));
        }
        f.push_opaque(OpaqueRun {
            bytes: bytes.into_boxed_slice(),
            reason: OpaqueReason::Data,
        });
        f.push_inst(Opcode::OPAQUE, 0, &operands, 0, size);
        f.blocks.push(Block {
            insts: 0..1,
            succs: SmallVec::new(),
            reached: true,
        });
        f
    }
}

/// Every reference to a candidate from an allocated section that is neither
/// code nor a candidate: function pointers in writable data, `.init_array`,
/// vtables in `.data.rel.ro`. Exception tables and `.eh_frame` hold no
/// addresses a program can observe. Also, from every data section, each
/// vtable entry's candidate with the name the entry uses (see
/// [`VtableEntry`]).
fn references_from_data<'data>(
    program: &Program<'data>,
    narrower: &Narrower<'_, '_>,
    live: Option<&[Vec<bool>]>,
) -> (Vec<DataReference>, Vec<VtableEntry<'data>>) {
    let mut references = Vec::new();
    let mut vtable_entries = Vec::new();
    for (index, object) in program.objects.iter().enumerate() {
        let id = ObjectId(index as u32);
        for (section_index, section) in object.elf.sections.iter().enumerate() {
            let from = SectionIndex(section_index as u32);
            // Code and read-only data the link is taken to drop are not
            // candidates: if it keeps them after all, any reference they
            // hold but a direct branch may take an address.
            let dropped = live.is_some_and(|live| !live[index][from.index()]);
            if !section.is_alloc()
                || (section.is_executable() && !dropped)
                || section.name == b".eh_frame"
                || section.name.starts_with(b".gcc_except_table")
            {
                continue;
            }
            let other_data = !is_read_only_data(section) || dropped;
            let symbols = object.section_symbols.get(from);
            for reloc in &section.relocs {
                let in_vtable = in_vtable(&object.elf, symbols, reloc.offset);
                if (!other_data && !in_vtable)
                    || (section.is_executable()
                        && icf_arch::of(object.elf.arch).is_direct_branch(reloc.r_type))
                {
                    continue;
                }
                let symbol = object.symbol_refs[reloc.symbol.index()];
                // Past the field, whichever object defines the symbol.
                let addend = symbol
                    .base
                    .wrapping_add(reloc.addend)
                    .wrapping_add(object.elf.field_end(from, reloc));
                let place = resolved_place(object, from, reloc, addend);
                let (target, _) = narrower.narrow(symbol.target, addend, place, Reach::Data);
                let Some(candidate) = narrower.targets_candidate(target) else {
                    continue;
                };
                if other_data {
                    references.push((candidate, id, from));
                }
                if in_vtable {
                    let named = object.elf.symbol(reloc.symbol);
                    let through = if named.kind == icf_object::SymbolKind::Section {
                        VtableName::Section
                    } else if named.binding == icf_object::Binding::Local {
                        VtableName::Local(id, named.name)
                    } else {
                        VtableName::Global(named.name)
                    };
                    vtable_entries.push((candidate, through));
                }
            }
        }
    }
    (references, vtable_entries)
}

/// The place a relocation of section `from` refers to, in the definition
/// the link resolves its symbol to (whose offset `addend` includes): the
/// object's own definition of a weak symbol another object overrides is
/// not where the reference lands. [`ElfObject::reloc_place`] says how far
/// the place is from the symbol plus addend (a jump-table entry's distance
/// from its table, an x86-64 field's distance to its instruction's end).
fn resolved_place(
    object: &crate::program::LoadedObject<'_>,
    from: SectionIndex,
    reloc: &icf_object::Reloc,
    addend: i64,
) -> i64 {
    let elf = &object.elf;
    let local = (elf.symbol(reloc.symbol).value as i64).wrapping_add(reloc.addend);
    let symbol_base = object.symbol_refs[reloc.symbol.index()].base;
    let own = symbol_base.wrapping_add(reloc.addend);
    match elf.reloc_place(&object.anchors, from, reloc) {
        Some((_, place)) => own.wrapping_add(place.wrapping_sub(local)),
        None => addend,
    }
}

/// A vtable entry: the candidate it points to, and how it names it.
pub type VtableEntry<'data> = (CandidateId, VtableName<'data>);

/// The symbol a vtable entry goes through.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum VtableName<'data> {
    Global(&'data [u8]),
    /// A local symbol, of the object holding the vtable.
    Local(ObjectId, &'data [u8]),
    /// The section symbol: the entry names no function.
    Section,
}

/// Whether a C++ vtable (`_ZTV`, or a construction vtable `_ZTC`) holds
/// offset `offset` of a section whose named symbols are `symbols` (sorted by
/// value). A function a vtable points to is virtual, and C++ gives no way to
/// compare a virtual function's address (a pointer to a virtual member holds
/// its vtable slot; a speculative devirtualization that compares a vtable
/// slot with it runs the same code either way): clang marks virtual
/// functions `unnamed_addr`, which keeps them out of `.llvm_addrsig`
/// whatever their uses.
pub(crate) fn in_vtable(
    elf: &icf_object::ElfObject<'_>,
    symbols: &[(u64, u64, icf_object::SymbolIndex)],
    offset: u64,
) -> bool {
    let after = symbols.partition_point(|&(value, _, _)| value <= offset);
    symbols[..after].iter().rev().any(|&(value, size, index)| {
        offset < value + size && is_vtable_name(elf.symbol(index).name)
    })
}

/// An Itanium C++ ABI vtable or construction vtable name.
pub(crate) fn is_vtable_name(name: &[u8]) -> bool {
    name.starts_with(b"_ZTV") || name.starts_with(b"_ZTC")
}

/// Interns what must be equal besides the body: kind, output-section class,
/// unwind description with its personality and LSDA, layout sensitivity.
/// Each candidate's description is made in parallel; numbering them is not.
fn attributes(
    program: &Program<'_>,
    candidates: &[CandidateInfo],
    narrower: &Narrower<'_, '_>,
    bodies: &[Body],
    section_classes: &mut Vec<String>,
) -> Vec<Attrs> {
    // The FDE describing each code piece: per object, (section, start, FDE) sorted.
    let fdes: Vec<Vec<(SectionIndex, u64, icf_object::Fde)>> = program
        .objects
        .par_iter()
        .map(|object| {
            let elf = &object.elf;
            let Some((eh_frame, fdes)) = &elf.eh_frame else {
                return Vec::new();
            };
            let mut described: Vec<_> = fdes
                .iter()
                .filter_map(|fde| {
                    let reloc = &elf.section(*eh_frame).relocs[fde.pc_begin?];
                    let symbol = elf.symbol(reloc.symbol);
                    let start = (symbol.value as i64 + reloc.addend) as u64;
                    Some((symbol.section()?, start, *fde))
                })
                .collect();
            // Of two FDEs for one place, the later describes it.
            described.reverse();
            described.sort_by_key(|&(section, start, _)| (section, start));
            described.dedup_by_key(|&mut (section, start, _)| (section, start));
            described
        })
        .collect();
    let fde_of = |candidate: &CandidateInfo| {
        let list = &fdes[candidate.object.index()];
        let key = (candidate.section, candidate.start);
        let at = list.partition_point(|&(section, start, _)| (section, start) < key);
        list.get(at)
            .filter(|&&(section, start, _)| (section, start) == key)
            .map(|&(_, _, fde)| fde)
    };

    // Places something outside a code candidate jumps into make its layout matter.
    let mut interior_referenced = vec![false; candidates.len()];
    for (index, body) in bodies.iter().enumerate() {
        for r in body.refs() {
            if let Some(target) = narrower.targets_candidate(r.target)
                && target.index() != index
                && r.interior
                && candidates[target.index()].is_code()
            {
                interior_referenced[target.index()] = true;
            }
        }
    }

    // Boxed: most candidates have no unwind description, and this list
    // holds one entry per candidate.
    type Unwind = Box<(UnwindKey, SmallVec<[Ref; 2]>)>;
    // Unwind descriptions read each object's `.eh_frame` and LSDAs: one
    // object at a time, as when lifting.
    let describe = |index: usize, candidate: &CandidateInfo| {
        let object = program.object(candidate.object);
        let class = placed_class(program, candidate);
        if !candidate.is_code() {
            return (class, false, None);
        }
        // A key with its layout is one whose layout was known to matter
        // when it was lifted (see `Analysis::run`).
        let layout_sensitive = interior_referenced[index] || bodies[index].layout().is_some();
        let unwind = fde_of(candidate).and_then(|fde| {
            let (eh_frame, _) = object.elf.eh_frame.as_ref()?;
            Some(Box::new(unwind_description(
                &object.elf,
                *eh_frame,
                &fde,
                narrower,
                candidate.object,
            )))
        });
        (class, layout_sensitive, unwind)
    };
    let described: Vec<(Cow<'_, [u8]>, bool, Option<Unwind>)> =
        map_by_object(program, candidates, describe);

    let mut class_ids: HashMap<Cow<'_, [u8]>, u32> = HashMap::default();
    let mut unwind_ids: HashMap<UnwindKey, u32> = HashMap::default();
    candidates
        .iter()
        .zip(described)
        .map(|(candidate, (class, layout_sensitive, unwind))| {
            let next = class_ids.len() as u32;
            let name = String::from_utf8_lossy(&class).into_owned();
            let section_class = *class_ids.entry(class).or_insert_with(|| {
                section_classes.push(name);
                next
            });
            let mut attrs = Attrs {
                kind: if candidate.is_code() {
                    Kind::Code
                } else {
                    Kind::Data
                },
                section_class,
                unwind: None,
                layout_sensitive,
                refs: Box::default(),
            };
            if let Some((key, refs)) = unwind.map(|unwind| *unwind) {
                let next = unwind_ids.len() as u32;
                attrs.unwind = Some(*unwind_ids.entry(key).or_insert(next));
                attrs.refs = refs.into_boxed_slice();
            }
            attrs
        })
        .collect()
}

impl Narrower<'_, '_> {
    fn targets_candidate(&self, target: TargetId) -> Option<CandidateId> {
        match self.targets.get(target) {
            Target::Candidate(index) => Some(CandidateId(index)),
            _ => None,
        }
    }
}

/// The CIE and FDE bytes of an unwind description, relocated fields zeroed.
type UnwindKey = (Vec<u8>, Vec<u8>);

/// The CIE and FDE bytes with relocated fields zeroed, and the references
/// they hold (personality in the CIE, LSDA in the FDE) narrowed like operands.
fn unwind_description(
    elf: &ElfObject<'_>,
    eh_frame: SectionIndex,
    fde: &icf_object::Fde,
    narrower: &Narrower<'_, '_>,
    object: ObjectId,
) -> (UnwindKey, SmallVec<[Ref; 2]>) {
    let section = elf.section(eh_frame);
    let loaded = narrower.program.object(object);
    let bytes_of = |start: u64, size: u64| -> Vec<u8> {
        let mut bytes = section
            .data
            .get(start as usize..(start + size) as usize)
            .unwrap_or_default()
            .to_vec();
        let first = section.relocs.partition_point(|r| r.offset < start);
        for reloc in section.relocs[first..]
            .iter()
            .take_while(|r| r.offset < start + size)
        {
            let at = (reloc.offset - start) as usize;
            if let Some(field) = bytes.get_mut(at..at + usize::from(reloc.size)) {
                field.fill(0);
            }
        }
        bytes
    };
    let mut cie = bytes_of(fde.cie_offset, fde.cie_size);
    let mut fde_bytes = bytes_of(fde.offset, fde.size);
    // The CIE pointer is a distance within this object's section, and the
    // address range (after the relocated start) is the body's size, which the
    // body comparison covers: neither is part of the description.
    if let Some(pointer) = fde_bytes.get_mut(4..8) {
        pointer.fill(0);
    }
    if let Some(pc_begin) = fde.pc_begin {
        let field = usize::from(section.relocs[pc_begin].size);
        let range_start = (section.relocs[pc_begin].offset - fde.offset) as usize + field;
        if let Some(range) = fde_bytes.get_mut(range_start..range_start + field) {
            range.fill(0);
        }
    }
    // Entries are padded with DW_CFA_nop (0) to the address size, so the
    // padding, and the length that counts it, depend on where the entry sits
    // in its section. CFA instructions delimit themselves: two valid
    // sequences that differ only in trailing zeros differ only in nops.
    for entry in [&mut cie, &mut fde_bytes] {
        if let Some(length) = entry.get_mut(0..4) {
            length.fill(0);
        }
        let end = entry
            .iter()
            .rposition(|&b| b != 0)
            .map_or(0, |last| last + 1);
        entry.truncate(end);
    }
    let mut refs = SmallVec::new();
    let mut push_ref = |index: usize| {
        let reloc = &section.relocs[index];
        let symbol = loaded.symbol_refs[reloc.symbol.index()];
        let addend = symbol.base.wrapping_add(reloc.addend);
        let (target, addend) = narrower.narrow(symbol.target, addend, addend, Reach::Unwind);
        refs.push(Ref {
            target,
            addend,
            kind: RefKind(reloc.r_type),
            use_: Use::Access,
        });
    };
    let cie_first = section
        .relocs
        .partition_point(|r| r.offset < fde.cie_offset);
    let cie_end = fde.cie_offset + fde.cie_size;
    for index in cie_first..section.relocs.len() {
        if section.relocs[index].offset >= cie_end {
            break;
        }
        push_ref(index);
    }
    if let Some(lsda) = fde.lsda {
        push_ref(lsda);
    }
    ((cie, fde_bytes), refs)
}

/// The output section the link puts a candidate's input section in: where
/// the command's linker scripts say, else by the linker's default rules
/// ([`output_section_class`]). When icf cannot read the scripts, each
/// input section is a class of its own, so nothing folds across sections.
fn placed_class<'a>(program: &'a Program<'_>, candidate: &CandidateInfo) -> Cow<'a, [u8]> {
    let object = program.object(candidate.object);
    let name = object.elf.section(candidate.section).name;
    match &program.options.linker_scripts {
        None => Cow::Borrowed(output_section_class(name)),
        Some(Ok(map)) => {
            let file = program.object_name(candidate.object);
            match map.placement(&file, &String::from_utf8_lossy(name)) {
                crate::linker_script::Placement::Output(output) => Cow::Borrowed(output.as_bytes()),
                crate::linker_script::Placement::Default => {
                    Cow::Borrowed(output_section_class(name))
                }
                crate::linker_script::Placement::Orphan => Cow::Borrowed(name),
                crate::linker_script::Placement::Unknown => own_class(program, candidate),
            }
        }
        Some(Err(_)) => own_class(program, candidate),
    }
}

/// A class of the candidate's input section alone.
fn own_class<'a>(program: &'a Program<'_>, candidate: &CandidateInfo) -> Cow<'a, [u8]> {
    let name = program
        .object(candidate.object)
        .elf
        .section(candidate.section)
        .name;
    Cow::Owned(
        format!(
            "{} of {}",
            String::from_utf8_lossy(name),
            program.object_name(candidate.object)
        )
        .into_bytes(),
    )
}

/// The output section a linker places an input section in: `.text.foo` in
/// `.text`, `.text.unlikely.foo` in `.text.unlikely`, `.rodata.foo` in
/// `.rodata`; any other name is its own class.
pub fn output_section_class(name: &[u8]) -> &[u8] {
    const PREFIXES: &[&[u8]] = &[
        b".text.unlikely",
        b".text.hot",
        b".text.startup",
        b".text.exit",
        b".text.split",
        b".text",
        b".rodata",
        b".gcc_except_table",
        b".data.rel.ro",
    ];
    for prefix in PREFIXES {
        if name == *prefix
            || name
                .strip_prefix(*prefix)
                .is_some_and(|rest| rest.starts_with(b"."))
        {
            return prefix;
        }
    }
    name
}
