//! The co-inductive check: every PLAIN function against the code its symbol
//! names in FOLDED (after a thunk), every target of every instruction against
//! its counterpart, every data object against its namesake, and the
//! addresses the program can observe against merging. Main assumption: a
//! pair of functions is assumed equal while it is being checked (a
//! bisimulation, so recursion verifies); since every obligation must hold,
//! the first failing one is the answer and no assumption is ever retracted.
//!
//! Work proceeds in waves: the pairs of a wave are decoded and compared in
//! parallel (pure), then their targets are matched in order on one thread,
//! which makes the pairs of the next wave. The first difference is thus the
//! same on any number of threads.

use rayon::prelude::*;

use icf_linkmap::Named;
use std::collections::{HashMap, HashSet};

use crate::code::{self, Decoded, Key, Reach, Use};
use crate::decode;
use crate::image::{self, Image, SectionRole, Symbol, SymbolId, SymbolKind};
use crate::x86_table;
use crate::{Difference, DifferenceKind, Location, Mode, Site, Stats, VerifyOptions};
use crate::{aarch64, aarch64_flow};

/// A range of code: a function's extent, or an unnamed run of code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Extent {
    start: u64,
    end: u64,
}

impl Extent {
    fn contains(&self, address: u64) -> bool {
        (self.start..self.end).contains(&address)
    }
}

/// The code to compare at `address`: the largest function starting there,
/// else from `address` to the end of the function holding it, else to the
/// next symbol or the section's end.
fn code_extent(image: &Image, address: u64) -> Extent {
    if let Some(id) = image.function_starting_at(address) {
        return Extent {
            start: address,
            end: image.symbol(id).end(),
        };
    }
    let (containing, _) = image.symbols_around(address);
    if let Some(&id) = containing.first() {
        return Extent {
            start: address,
            end: image.symbol(id).end(),
        };
    }
    Extent {
        start: address,
        end: image.next_symbol_start(address),
    }
}

/// Index of a step in the path that led to a pair: where its caller is.
type StepId = usize;

#[derive(Clone, Copy, Debug)]
struct Step {
    plain_site: u64,
    folded_site: u64,
    code: bool,
    parent: Option<StepId>,
}

/// One pair of code ranges to prove equal.
#[derive(Clone, Copy, Debug)]
struct PairTask {
    plain: Extent,
    folded_start: u64,
    via: Option<StepId>,
    root: usize,
}

/// A target of PLAIN's instruction (or data word) against FOLDED's.
#[derive(Clone, Copy, Debug)]
struct TargetCheck {
    plain_target: u64,
    folded_target: u64,
    use_: Use,
    plain_field: u64,
    folded_field: u64,
    plain_site: u64,
    folded_site: u64,
    /// How many bytes from the target an access reads at most, none before
    /// it (see [`Reference::width`](crate::code::Reference::width)); 0 when
    /// unknown.
    width: u64,
    /// Which side of the target the code reads through it (see
    /// [`Reference::reach`](crate::code::Reference::reach)).
    reach: Reach,
    /// The functions holding the sites (for jump tables), if code.
    functions: Option<(Extent, Extent)>,
    via: Option<StepId>,
    root: usize,
}

/// A difference found while comparing one pair, before its path is known.
#[derive(Debug)]
struct LocalDifference {
    plain_site: u64,
    folded_site: u64,
    code: bool,
    kind: DifferenceKind,
    detail: String,
}

struct PairResult {
    folded: Extent,
    followed_thunk: bool,
    /// FOLDED's code is a thunk between vague-linkage functions, accepted
    /// by the one-definition rule without comparing bodies.
    assumed_by_odr: bool,
    outcome: Result<Vec<TargetCheck>, LocalDifference>,
    plain_offsets: Vec<u32>,
    folded_offsets: Vec<u32>,
}

enum PairState {
    Pending,
    Done {
        folded_start: u64,
        plain_offsets: Vec<u32>,
        folded_offsets: Vec<u32>,
    },
}

/// A reference into a pair's interior (a jump table entry, a branch into the
/// middle): both offsets must be the same instruction of the pair.
#[derive(Clone, Copy, Debug)]
struct InteriorCheck {
    key: (u64, u64),
    plain_offset: u64,
    folded_offset: u64,
    check: TargetCheck,
}

/// What a target address is in one image.
#[derive(Clone, Debug, PartialEq)]
enum Place {
    Symbol(SymbolId, u64),
    Plt(String),
    GotNamed(String, i64),
    GotAddress(u64),
    Section(usize, u64),
    /// One past the end of an allocated section (a `__stop_` bound, or the
    /// end of a section a linker script names).
    SectionEnd(usize),
    Outside(u64),
}

/// Which side of an address that ends one object and starts another the
/// code reads (see `Checker::side_of_boundary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// The object ending there: one past its end.
    End,
    /// What starts there.
    Start,
}

/// A failure with the pair or data object that led to it.
struct Failure {
    local: LocalDifference,
    via: Option<StepId>,
    root: usize,
}

/// The roots: PLAIN's functions (then data objects), by position.
struct Root {
    name: String,
}

pub(crate) struct Checker<'a> {
    plain: &'a Image,
    folded: &'a Image,
    mode: Mode,
    assume_odr: bool,
    pairs: HashMap<(u64, u64), PairState>,
    /// Data pairs compared so far, with how many bytes.
    data_done: HashMap<(u64, u64), u64>,
    /// Address uses seen: PLAIN identity -> FOLDED identity, and back.
    plain_to_folded: HashMap<u64, (u64, usize)>,
    folded_to_plain: HashMap<u64, (u64, usize)>,
    steps: Vec<Step>,
    roots: Vec<Root>,
    next_wave: Vec<PairTask>,
    interior: Vec<InteriorCheck>,
    queue: Vec<TargetCheck>,
    stats: Stats,
    /// rustc made code of PLAIN (a function of it is Rust's).
    plain_is_rust: bool,
}

impl<'a> Checker<'a> {
    pub fn new(plain: &'a Image, folded: &'a Image, options: &VerifyOptions) -> Self {
        Checker {
            plain,
            folded,
            mode: options.mode,
            assume_odr: options.assume_odr,
            pairs: HashMap::new(),
            data_done: HashMap::new(),
            plain_to_folded: HashMap::new(),
            folded_to_plain: HashMap::new(),
            steps: Vec::new(),
            roots: Vec::new(),
            next_wave: Vec::new(),
            interior: Vec::new(),
            queue: Vec::new(),
            stats: Stats::default(),
            plain_is_rust: plain.symbols.iter().any(|s| s.rustc_function),
        }
    }

    /// Runs the whole check: the statistics, and the first difference if any.
    pub fn run(mut self) -> (Stats, Option<Difference>) {
        match self.run_inner() {
            Ok(()) => (self.stats, None),
            Err(failure) => {
                let difference = self.render(failure);
                (self.stats, Some(difference))
            }
        }
    }

    fn run_inner(&mut self) -> Result<(), Failure> {
        let mut wave = Vec::new();
        let mut folded_starts: HashMap<u64, HashSet<u64>> = HashMap::new();
        for (index, symbol) in self.plain.symbols.iter().enumerate() {
            if symbol.kind != SymbolKind::Function || symbol.size == 0 {
                continue;
            }
            let counterpart = self.folded.counterpart(self.plain, SymbolId(index as u32));
            if counterpart.is_none() && symbol.file.is_some() {
                // A local function folded into another unit's copy loses its
                // symbol: nothing outside its unit could name it, and every
                // use inside (calls, jumps, address uses, pointers in data)
                // is a reference of code or data that is checked in turn.
                self.stats.locals_without_symbol += 1;
                continue;
            }
            if counterpart.is_none() && !self.plain.exports(&symbol.name) {
                // Likewise a function the link does not export: once the
                // fold sent every use to its twin, `--gc-sections` drops it.
                self.stats.unexported_without_symbol += 1;
                continue;
            }
            let root = self.roots.len();
            self.roots.push(Root {
                name: symbol.name.clone(),
            });
            self.stats.functions_checked += 1;
            let Some(counterpart) = counterpart else {
                return Err(Failure {
                    local: LocalDifference {
                        plain_site: symbol.address,
                        folded_site: 0,
                        code: true,
                        kind: DifferenceKind::MissingInFolded,
                        detail: format!("FOLDED has no function {}", symbol.name),
                    },
                    via: None,
                    root,
                });
            };
            let folded_start = self.folded.symbol(counterpart).address;
            folded_starts
                .entry(folded_start)
                .or_default()
                .insert(symbol.address);
            let task = PairTask {
                plain: Extent {
                    start: symbol.address,
                    end: symbol.end(),
                },
                folded_start,
                via: None,
                root,
            };
            if self.pairs.contains_key(&(symbol.address, folded_start)) {
                continue;
            }
            self.pairs
                .insert((symbol.address, folded_start), PairState::Pending);
            wave.push(task);
        }
        self.stats.aliases_followed = folded_starts
            .values()
            .filter(|plain_starts| plain_starts.len() > 1)
            .map(|plain_starts| plain_starts.len() - 1)
            .sum();

        let mut first = true;
        while !wave.is_empty() {
            let results: Vec<PairResult> = wave
                .par_iter()
                .map(|task| compare_pair(self.plain, self.folded, task, self.assume_odr))
                .collect();
            for (task, result) in wave.iter().zip(results) {
                self.finish_pair(task, result)?;
                self.drain_queue()?;
            }
            if first {
                first = false;
                self.check_data_roots()?;
                self.check_exported()?;
                self.drain_queue()?;
            }
            self.check_interiors()?;
            wave = std::mem::take(&mut self.next_wave);
        }
        self.check_interiors()?;
        // Every pair has been compared by now; an interior reference still
        // open names a pair that never was, which must not pass silently.
        match self.interior.first() {
            None => Ok(()),
            Some(item) => Err(self.fail(
                &item.check,
                DifferenceKind::TargetsDiffer,
                format!(
                    "{} in PLAIN and {} in FOLDED could not be matched to compared code",
                    self.plain.describe(item.key.0 + item.plain_offset),
                    self.folded.describe(item.key.1 + item.folded_offset)
                ),
            )),
        }
    }

    fn finish_pair(&mut self, task: &PairTask, result: PairResult) -> Result<(), Failure> {
        let checks = match result.outcome {
            Ok(checks) => checks,
            Err(local) => {
                return Err(Failure {
                    local,
                    via: task.via,
                    root: task.root,
                });
            }
        };
        if result.assumed_by_odr {
            self.stats.thunks_assumed_by_odr += 1;
        } else if result.followed_thunk && task.via.is_none() {
            self.stats.thunks_followed += 1;
        }
        self.stats.pairs_proved_equal += 1;
        if result.folded.start != task.folded_start {
            // Jump tables name the followed code: the pair is known by it too.
            self.pairs.insert(
                (task.plain.start, result.folded.start),
                PairState::Done {
                    folded_start: result.folded.start,
                    plain_offsets: result.plain_offsets.clone(),
                    folded_offsets: result.folded_offsets.clone(),
                },
            );
        }
        self.pairs.insert(
            (task.plain.start, task.folded_start),
            PairState::Done {
                folded_start: result.folded.start,
                plain_offsets: result.plain_offsets,
                folded_offsets: result.folded_offsets,
            },
        );
        for check in checks {
            self.check_target(&check)?;
        }
        Ok(())
    }

    fn drain_queue(&mut self) -> Result<(), Failure> {
        while let Some(check) = self.queue.pop() {
            self.check_target(&check)?;
        }
        Ok(())
    }

    fn fail(&self, check: &TargetCheck, kind: DifferenceKind, detail: String) -> Failure {
        Failure {
            local: LocalDifference {
                plain_site: check.plain_site,
                folded_site: check.folded_site,
                code: check.functions.is_some(),
                kind,
                detail,
            },
            via: check.via,
            root: check.root,
        }
    }

    fn step(&mut self, check: &TargetCheck) -> StepId {
        self.steps.push(Step {
            plain_site: check.plain_site,
            folded_site: check.folded_site,
            code: check.functions.is_some(),
            parent: check.via,
        });
        self.steps.len() - 1
    }

    /// Does FOLDED's target stand for PLAIN's? An address one past the end
    /// of a data object is two things at once: that end (its identity, and
    /// what lies before it: a loop's bound) and the start of what follows
    /// (what lies after it: a string, or a jump table placed right after an
    /// array). A kept relocation naming the object settles it: the end.
    /// So does a jump table of another function starting there (no code
    /// but its own reads a function's jump table). Otherwise the start is
    /// tried first, then the end, unless the start is the function's own
    /// jump table, which the code certainly reads.
    fn check_target(&mut self, check: &TargetCheck) -> Result<(), Failure> {
        if self.same_empty_object(check) {
            // Nothing to read or run there; its identity is all it has.
            let function = self.plain.is_code(check.plain_target);
            return self.record(check, check.plain_target, check.folded_target, function);
        }
        let (ends, starts): (Vec<Place>, Vec<Place>) = classify(
            self.plain,
            self.folded,
            check.plain_target,
            check.plain_field,
        )
        .into_iter()
        .partition(|place| {
            matches!(*place, Place::Symbol(id, offset) if self.plain.symbol(id).ends_at_offset(offset))
        });
        if ends.is_empty() || starts.is_empty() {
            return self.check_places(check, if starts.is_empty() { &ends } else { &starts });
        }
        match self.side_of_boundary(check, &ends) {
            Some(Side::End) => self.check_places(check, &ends),
            Some(Side::Start) => self.check_places(check, &starts),
            // The code may read either way from the address: the bytes
            // before it and after it must both correspond. A choice of one
            // reading, made to prove more, is how a fold whose code reads
            // one side was once proved by the bytes of the other.
            None => match (
                self.check_places(check, &ends),
                self.check_places(check, &starts),
            ) {
                (Ok(()), Ok(())) => Ok(()),
                // Of two failures, a merged address is the more telling.
                (Err(end), Err(start))
                    if start.local.kind == DifferenceKind::SignificantAddressesMerged
                        && end.local.kind != DifferenceKind::SignificantAddressesMerged =>
                {
                    Err(start)
                }
                (Err(failure), _) | (_, Err(failure)) => Err(failure),
            },
        }
    }

    /// With both link maps and PLAIN's input objects: whether the field
    /// names a zero-sized object in both images, the same input section of
    /// the same file at each target. Its address is all the code can use:
    /// no byte before or after it is the object's. In data, Rust's unit
    /// statics (`log`'s `NOP`; the image keeps no symbol for one); in code,
    /// LLVM's empty body of an unreachable function (`llvm_unreachable` in
    /// a release build), which runs into whatever the linker placed next,
    /// so nothing the program does can depend on what that is.
    fn same_empty_object(&self, check: &TargetCheck) -> bool {
        let (Some(objects), Some(plain_map), Some(folded_map)) = (
            &self.plain.input_objects,
            &self.plain.input_sections,
            &self.folded.input_sections,
        ) else {
            return false;
        };

        objects
            .empty_named_at(plain_map, check.plain_field, check.plain_target)
            .is_some_and(|(file, name)| folded_map.empty_at(check.folded_target, file, &name))
    }

    /// With PLAIN's link map, for a field a section-symbol relocation
    /// names: an assembler writes such a relocation against a section of
    /// its own object, so where the target ends an input section of
    /// another file than the code's and starts one of the code's file, the
    /// field means what starts there (and the end, the other way round).
    fn side_by_file(&self, check: &TargetCheck) -> Option<Side> {
        let sections = self.plain.input_sections.as_ref()?;
        let own = sections.file_at(check.plain_field)?;
        let ending = sections.file_ending_at(check.plain_target)?;
        let starting = sections.file_starting_at(check.plain_target)?;
        match (ending == own, starting == own) {
            (false, true) => Some(Side::Start),
            (true, false) => Some(Side::End),
            _ => None,
        }
    }

    /// Which side of an address that ends one data object (`ends`) and
    /// starts another place the code reaches from it, when something says
    /// so for certain; `None` when the code may read either side.
    ///
    /// - A kept relocation (`-q`) naming the object that ends there, or the
    ///   one that starts there: the compiler named that object, and code
    ///   reaches only the object it names. One naming a section symbol (as
    ///   anchors and local labels are written) names no global object, so
    ///   where only globals end there it means what starts there. With
    ///   PLAIN's link map, one naming a section symbol means the side that
    ///   lies in an input section of the code's own file
    ///   ([`Checker::side_by_file`]).
    /// - A call or jump, a jump table of the site's own function, or an
    ///   access of a known width at the address itself: the code reads
    ///   forward, what starts there.
    /// - An address that does not escape and whose every access, through
    ///   it and the pointers derived from it, reads at known offsets on one
    ///   side of it ([`Reach`], from the escape scans).
    fn side_of_boundary(&self, check: &TargetCheck, ends: &[Place]) -> Option<Side> {
        let reloc = self.plain.emitted.get(&check.plain_field);
        // A section symbol names no global object: the compiler would
        // have named the global whose end it meant. A symbol ThinLTO
        // promoted (`<name>.llvm.<n>`) was a hidden global in its object,
        // whichever binding the linker gave it in the image (lld makes
        // hidden symbols local).
        let was_global = |id: SymbolId| {
            let symbol = self.plain.symbol(id);
            symbol.file.is_none() || promoted_by_thinlto(&symbol.name)
        };
        if reloc.is_some_and(|r| r.section_symbol)
            && ends
                .iter()
                .all(|place| matches!(*place, Place::Symbol(id, _) if was_global(id)))
        {
            return Some(Side::Start);
        }
        if reloc.is_some_and(|r| r.section_symbol)
            && let Some(side) = self.side_by_file(check)
        {
            return Some(side);
        }
        // The input object the map names says which section its
        // relocation named, with or without a kept one (which may name a
        // label of no size, or no symbol).
        if let (Some(objects), Some(sections)) =
            (&self.plain.input_objects, &self.plain.input_sections)
            && let Some(named) = objects.named_at(sections, check.plain_field, check.plain_target)
        {
            return Some(match named {
                Named::Ending => Side::End,
                Named::Starting => Side::Start,
            });
        }
        if let Some(id) = reloc.and_then(|reloc| reloc.symbol) {
            let symbol = self.plain.symbol(id);
            if ends.contains(&Place::Symbol(id, symbol.size)) {
                return Some(Side::End);
            }
            if (symbol.address..symbol.end()).contains(&check.plain_target) {
                return Some(Side::Start);
            }
        }
        if self.fat_pointer_length(check).is_some() {
            return Some(Side::Start);
        }
        let forward_access = check.use_ == Use::Access && check.width > 0;
        if matches!(check.use_, Use::Call | Use::Jump)
            || forward_access
            || check.reach == Reach::Forward
        {
            return Some(Side::Start);
        }
        if check.reach == Reach::Backward {
            return Some(Side::End);
        }
        // Another function's jump table starting there says nothing of
        // what this code reads: an index of unknown sign may read either.
        let own_table = self
            .plain
            .jump_table_at(check.plain_target)
            .iter()
            .any(|t| {
                check
                    .functions
                    .is_some_and(|(function, _)| t.function == function.start)
            });
        if own_table || self.is_jump_table(check) {
            return Some(Side::Start);
        }
        None
    }

    /// With [`VerifyOptions::assume_odr`]: whether `ps` and `fs` are one
    /// unit's and another's internal constant of the same name (libstdc++'s
    /// `std::piecewise_construct` before C++17), referenced from a
    /// vague-linkage C++ function (an inline function: a strong one has one
    /// definition, and the rule says nothing of its constants). An
    /// inline function that names it is one function in every unit, by the
    /// one-definition rule, whichever unit's copy the linker keeps: PLAIN's
    /// and FOLDED's links may keep different ones, so the constant they name
    /// is the same entity, its address no identity of its own.
    fn odr_namesakes(&self, check: &TargetCheck, ps: &Symbol, fs: &Symbol) -> bool {
        self.assume_odr
            && ps.name == fs.name
            && ps.file.is_some()
            && fs.file.is_some()
            && check
                .functions
                .is_some_and(|(function, _)| self.plain.vague_linkage_function_at(function.start))
    }

    /// Whether PLAIN's target is a jump table of the function holding the
    /// site: its first entry (an offset from the table, or an address)
    /// sends an indirect jump somewhere in that function.
    fn is_jump_table(&self, check: &TargetCheck) -> bool {
        let Some((function, _)) = check.functions else {
            return false;
        };
        let table = check.plain_target;
        let relative = self
            .plain
            .read_u32(table)
            .map(|v| table.wrapping_add(v as i32 as i64 as u64));
        let absolute = self.plain.read_u64(table);
        let targets = self.plain.jump_targets_in(function.start, function.end);
        [relative, absolute]
            .into_iter()
            .flatten()
            .any(|target| targets.binary_search(&target).is_ok())
    }

    /// Whether FOLDED's target stands for one of `plain_places`, PLAIN's
    /// interpretations of its target.
    fn check_places(&mut self, check: &TargetCheck, plain_places: &[Place]) -> Result<(), Failure> {
        // Several symbols holding the target (one object overlapping
        // another, `A` and `A_hi = A + 8`) are several extents the code may
        // read: each must correspond, not just one.
        let holding: Vec<Place> = plain_places
            .iter()
            .filter(|place| {
                matches!(**place, Place::Symbol(id, offset) if !self.plain.symbol(id).ends_at_offset(offset))
            })
            .cloned()
            .collect();
        if holding.len() > 1 {
            for place in holding {
                self.check_places(check, std::slice::from_ref(&place))?;
            }
            return Ok(());
        }
        // The same symbol at the same offset.
        for place in plain_places {
            if let Place::Symbol(id, offset) = *place
                && let Some(counterpart) = self.folded.counterpart(self.plain, id)
                && self.folded.symbol(counterpart).address.wrapping_add(offset)
                    == check.folded_target
            {
                let plain_symbol = self.plain.symbol(id);
                if !plain_symbol.is_anonymous_constant() && !plain_symbol.is_rust_function() {
                    self.record(
                        check,
                        plain_symbol.address,
                        self.folded.symbol(counterpart).address,
                        plain_symbol.kind == SymbolKind::Function,
                    )?;
                }
                return Ok(());
            }
        }
        let folded_places = classify(
            self.folded,
            self.plain,
            check.folded_target,
            check.folded_field,
        );
        let mut first_reason: Option<(DifferenceKind, String)> = None;
        for plain_place in plain_places {
            for folded_place in &folded_places {
                match self.places_correspond(check, plain_place, folded_place)? {
                    None => return Ok(()),
                    Some(reason) => {
                        first_reason.get_or_insert(reason);
                    }
                }
            }
        }
        let (kind, why) = first_reason.unwrap_or((
            DifferenceKind::TargetsDiffer,
            "no interpretation of the targets matches".to_string(),
        ));
        Err(self.fail(
            check,
            kind,
            format!(
                "{} in PLAIN vs {} in FOLDED: {why}",
                self.plain.describe(check.plain_target),
                self.folded.describe(check.folded_target)
            ),
        ))
    }

    /// `Ok(None)` when the two places correspond (obligations queued),
    /// `Ok(Some(reason))` when they do not, `Err` for a failure that no
    /// other interpretation can excuse (a significant address merged).
    fn places_correspond(
        &mut self,
        check: &TargetCheck,
        plain_place: &Place,
        folded_place: &Place,
    ) -> Result<Option<(DifferenceKind, String)>, Failure> {
        let differ = |why: &str| Ok(Some((DifferenceKind::TargetsDiffer, why.to_string())));
        match (plain_place, folded_place) {
            (Place::Symbol(p, p_offset), Place::Symbol(f, f_offset)) => {
                let (ps, fs) = (self.plain.symbol(*p), self.folded.symbol(*f));
                let p_code = self.plain.sections[ps.section].executable;
                let f_code = self.folded.sections[fs.section].executable;
                match (p_code, f_code) {
                    (true, true) => {
                        self.obligation(check, ps.address, fs.address, *p_offset, *f_offset);
                        // A Rust function has no address identity (see
                        // `Symbol::is_rust_function`).
                        if !ps.is_rust_function() {
                            self.record(check, ps.address, fs.address, true)?;
                        }
                        Ok(None)
                    }
                    (false, false) => {
                        if self.plain.sections[ps.section].writable
                            || self.folded.sections[fs.section].writable
                        {
                            // The same object: a namesake local of the same
                            // size and initial contents, which PLAIN's could
                            // not be paired with by name (several in one
                            // file), bound one to one from here on.
                            let namesake = self.folded.counterpart(self.plain, *p).is_none()
                                && ps.name == fs.name
                                && ps.size == fs.size
                                && p_offset == f_offset
                                && ps.file.is_some()
                                && fs.file.is_some()
                                && self.plain.sections[ps.section].writable
                                && self.folded.sections[fs.section].writable;
                            if !namesake {
                                return differ("writable data must be the same object");
                            }
                            if let Some(reason) =
                                self.compare_data(check, ps.address, fs.address, ps.size)
                            {
                                return Ok(Some((DifferenceKind::DataDiffers, reason)));
                            }
                            self.bind(check, ps.address, fs.address)?;
                            return Ok(None);
                        }
                        if p_offset != f_offset || ps.size != fs.size {
                            return differ("different offsets or sizes of read-only data");
                        }
                        if let Some(reason) =
                            self.compare_data(check, ps.address, fs.address, ps.size)
                        {
                            return Ok(Some((DifferenceKind::DataDiffers, reason)));
                        }
                        // A compiler's anonymous constant has no address
                        // identity (see `Symbol::is_anonymous_constant`).
                        if !ps.is_anonymous_constant() && !self.odr_namesakes(check, ps, fs) {
                            self.record(check, ps.address, fs.address, false)?;
                        }
                        Ok(None)
                    }
                    _ => differ("code against data"),
                }
            }
            (Place::Plt(a), Place::Plt(b)) if a == b => Ok(None),
            (Place::Plt(a), Place::Plt(b)) => Ok(Some((
                DifferenceKind::TargetsDiffer,
                format!("entries binding different symbols ({a} vs {b})"),
            ))),
            (Place::GotNamed(a, x), Place::GotNamed(b, y)) if a == b && x == y => Ok(None),
            (Place::GotNamed(a, x), Place::GotNamed(b, y)) => Ok(Some((
                DifferenceKind::TargetsDiffer,
                format!(
                    "slots bound to different symbols ({} vs {})",
                    image::plus(a, *x as u64),
                    image::plus(b, *y as u64)
                ),
            ))),
            (Place::GotAddress(a), Place::GotAddress(b)) => {
                // The slot holds an address: it is a pointer like any other,
                // except that a call or jump through it only runs it.
                let use_ = match check.use_ {
                    Use::Call | Use::Jump => check.use_,
                    Use::Deref => Use::Access,
                    _ => Use::Address,
                };
                // The code's field stays: a relocation a `-q` link kept
                // there (`foo@GOTPCREL`, `:got_lo12:foo`) names the
                // symbol whose address the slot holds.
                self.queue.push(TargetCheck {
                    plain_target: *a,
                    folded_target: *b,
                    use_,
                    width: 0,
                    // What a dereferenced pointer's accesses read (the
                    // scan followed the loaded pointer).
                    reach: if check.use_ == Use::Deref {
                        check.reach
                    } else {
                        Reach::Unknown
                    },
                    ..*check
                });
                Ok(None)
            }
            (Place::Section(p, p_offset), Place::Section(f, f_offset)) => {
                let (ps, fs) = (&self.plain.sections[*p], &self.folded.sections[*f]);
                if ps.name != fs.name {
                    return differ("different sections");
                }
                if ps.executable {
                    // Unnamed code: compare it as a function of its own.
                    self.obligation(check, check.plain_target, check.folded_target, 0, 0);
                    // A PLAIN local FOLDED no longer names is compared as
                    // unnamed code: still a Rust function without identity.
                    if !in_rust_function(self.plain, check.plain_target) {
                        self.record(check, check.plain_target, check.folded_target, true)?;
                    }
                    return Ok(None);
                }
                if ps.writable {
                    if p_offset != f_offset {
                        return differ("writable data at another offset of its section");
                    }
                    self.record(check, check.plain_target, check.folded_target, false)?;
                    return Ok(None);
                }
                if let Some(reason) = self.compare_unnamed_data(check, access_limit(check)) {
                    return Ok(Some((DifferenceKind::DataDiffers, reason)));
                }
                // Read-only data without a name is the compiler's (string
                // literals, jump tables, constant pools): the language does
                // not promise distinct addresses for it, and linkers merge
                // it (`SHF_MERGE`), so its address is not recorded.
                Ok(None)
            }
            // Unnamed read-only data (no address identity) kept as a named
            // object's copy: PLAIN's piece, compared as unnamed data. (One
            // past the object's end is no place in it: that is the section
            // place FOLDED offers as well.)
            (Place::Section(p, _), Place::Symbol(f, f_offset))
                if *f_offset < self.folded.symbol(*f).size
                    && !self.plain.sections[*p].executable
                    && !self.plain.sections[*p].writable
                    && self.plain.sections[*p].name
                        == self.folded.sections[self.folded.symbol(*f).section].name
                    && !self.folded.sections[self.folded.symbol(*f).section].writable =>
            {
                match self.compare_unnamed_data(check, access_limit(check)) {
                    Some(reason) => Ok(Some((DifferenceKind::DataDiffers, reason))),
                    None => Ok(None),
                }
            }
            // The fold changes a section's size, not which section ends;
            // code may read back from the end (`__stop_foo[-1]`), so the
            // last piece of a data section, from the last symbol holding
            // its last byte (else from its start), must be the same.
            (Place::SectionEnd(p), Place::SectionEnd(f))
                if self.plain.sections[*p].name == self.folded.sections[*f].name =>
            {
                let (ps, fs) = (&self.plain.sections[*p], &self.folded.sections[*f]);
                if ps.executable {
                    return Ok(None);
                }
                let (plain_end, folded_end) = (ps.address + ps.size, fs.address + fs.size);
                let last = self
                    .plain
                    .symbols_around(plain_end - 1)
                    .0
                    .iter()
                    .map(|&id| self.plain.symbol(id).address)
                    .max()
                    .unwrap_or(ps.address)
                    .max(ps.address);
                let len = plain_end - last;
                let Some(folded_start) = folded_end
                    .checked_sub(len)
                    .filter(|&start| start >= fs.address)
                else {
                    return differ("the section's last piece is longer than FOLDED's section");
                };
                match self.compare_data(check, last, folded_start, len) {
                    Some(reason) => Ok(Some((DifferenceKind::DataDiffers, reason))),
                    None => Ok(None),
                }
            }
            (Place::Outside(a), Place::Outside(b)) if a == b => Ok(None),
            _ => differ("they are different kinds of places"),
        }
    }

    /// Queues the pair (`plain_start`, `folded_start`) unless known, and the
    /// check that interior offsets land on the same instruction.
    fn obligation(
        &mut self,
        check: &TargetCheck,
        plain_start: u64,
        folded_start: u64,
        plain_offset: u64,
        folded_offset: u64,
    ) {
        let key = (plain_start, folded_start);
        if let std::collections::hash_map::Entry::Vacant(entry) = self.pairs.entry(key) {
            entry.insert(PairState::Pending);
            let via = Some(self.step(check));
            self.next_wave.push(PairTask {
                plain: code_extent(self.plain, plain_start),
                folded_start,
                via,
                root: check.root,
            });
        }
        if plain_offset != 0 || folded_offset != 0 {
            self.interior.push(InteriorCheck {
                key,
                plain_offset,
                folded_offset,
                check: *check,
            });
        }
    }

    fn check_interiors(&mut self) -> Result<(), Failure> {
        let pending = std::mem::take(&mut self.interior);
        for item in pending {
            match self.pairs.get(&item.key) {
                Some(PairState::Done {
                    folded_start,
                    plain_offsets,
                    folded_offsets,
                }) => {
                    let plain_index = offset_index(plain_offsets, item.plain_offset);
                    let folded_index = item
                        .key
                        .1
                        .checked_add(item.folded_offset)
                        .and_then(|a| a.checked_sub(*folded_start))
                        .and_then(|o| offset_index(folded_offsets, o));
                    if plain_index.is_none() || plain_index != folded_index {
                        return Err(self.fail(
                            &item.check,
                            DifferenceKind::TargetsDiffer,
                            format!(
                                "{} in PLAIN and {} in FOLDED are not the same instruction of equal code",
                                self.plain.describe(item.key.0 + item.plain_offset),
                                self.folded.describe(item.key.1 + item.folded_offset)
                            ),
                        ));
                    }
                }
                _ => self.interior.push(item),
            }
        }
        Ok(())
    }

    /// Records that PLAIN's address `plain` is FOLDED's `folded` when the
    /// check observes the address, and fails when that merges two addresses
    /// PLAIN keeps apart or splits one.
    fn record(
        &mut self,
        check: &TargetCheck,
        plain: u64,
        folded: u64,
        function: bool,
    ) -> Result<(), Failure> {
        let observed = match check.use_ {
            Use::Address => !(function && self.mode == Mode::All),
            Use::VtableSlot => !function,
            Use::Call | Use::Jump | Use::Access | Use::Deref => false,
        };
        // A program may rely on the alignment a function is declared
        // with (`aligned(N)`), and see it in any address it takes, in
        // every mode (mode all gives up distinct addresses, not that).
        if function
            && check.use_ == Use::Address
            && let Ok(found) = self
                .plain
                .declared_alignments
                .binary_search_by_key(&plain, |&(address, _)| address)
        {
            let alignment = self.plain.declared_alignments[found].1;
            if folded % alignment != 0 {
                return Err(self.fail(
                    check,
                    DifferenceKind::AlignmentLost,
                    format!(
                        "{} is declared aligned to {alignment} and its address is observed, but {} is not",
                        self.plain.describe(plain),
                        self.folded.describe(folded)
                    ),
                ));
            }
        }
        if !observed {
            return Ok(());
        }
        self.bind(check, plain, folded)
    }

    /// Binds PLAIN's address `plain` to FOLDED's `folded` for good, and
    /// fails when that merges two addresses PLAIN keeps apart or splits one.
    fn bind(&mut self, check: &TargetCheck, plain: u64, folded: u64) -> Result<(), Failure> {
        let site = check.root;
        if let Some(&(other_plain, other_site)) = self.folded_to_plain.get(&folded)
            && other_plain != plain
        {
            return Err(self.fail(
                check,
                DifferenceKind::SignificantAddressesMerged,
                format!(
                    "{} and {} have distinct addresses in PLAIN that are observed, but both are {} in FOLDED (the first observed from {})",
                    self.plain.describe(other_plain),
                    self.plain.describe(plain),
                    self.folded.describe(folded),
                    self.roots
                        .get(other_site)
                        .map_or("another root", |root| root.name.as_str())
                ),
            ));
        }
        if let Some(&(other_folded, _)) = self.plain_to_folded.get(&plain)
            && other_folded != folded
        {
            return Err(self.fail(
                check,
                DifferenceKind::SignificantAddressesMerged,
                format!(
                    "the address of {} is observed as {} and as {} in FOLDED",
                    self.plain.describe(plain),
                    self.folded.describe(other_folded),
                    self.folded.describe(folded)
                ),
            ));
        }
        self.plain_to_folded.insert(plain, (folded, site));
        self.folded_to_plain.insert(folded, (plain, site));
        Ok(())
    }

    /// Every PLAIN data object against its namesake: same size, same bytes,
    /// pointers corresponding; objects in sections the linker synthesizes
    /// are not the program's data and are skipped.
    fn check_data_roots(&mut self) -> Result<(), Failure> {
        for (index, symbol) in self.plain.symbols.iter().enumerate() {
            // Only data the program defines: the linker's own tables
            // (`_DYNAMIC`, `_GLOBAL_OFFSET_TABLE_`) differ with what it links.
            if symbol.kind != SymbolKind::Object || self.plain.sections[symbol.section].synthesized
            {
                continue;
            }
            let root = self.roots.len();
            self.roots.push(Root {
                name: symbol.name.clone(),
            });
            let check = TargetCheck {
                plain_target: symbol.address,
                folded_target: 0,
                use_: Use::Access,
                plain_field: 0,
                folded_field: 0,
                plain_site: symbol.address,
                folded_site: 0,
                width: 0,
                reach: Reach::Unknown,
                functions: None,
                via: None,
                root,
            };
            let Some(counterpart) = self.folded.counterpart(self.plain, SymbolId(index as u32))
            else {
                if symbol.file.is_some() {
                    // A local object the fold left without its symbol (its
                    // unit's uses were folded away or now name another copy):
                    // every use of it is checked where it is made.
                    self.stats.locals_without_symbol += 1;
                    continue;
                }
                if !self.plain.exports(&symbol.name) {
                    // An object the link does not export, which
                    // `--gc-sections` dropped once no use was left.
                    self.stats.unexported_without_symbol += 1;
                    continue;
                }
                return Err(self.fail(
                    &check,
                    DifferenceKind::MissingInFolded,
                    format!("FOLDED has no object {}", symbol.name),
                ));
            };
            let folded_symbol = self.folded.symbol(counterpart);
            let check = TargetCheck {
                folded_target: folded_symbol.address,
                folded_site: folded_symbol.address,
                ..check
            };
            self.stats.data_objects_checked += 1;
            if folded_symbol.size != symbol.size {
                return Err(self.fail(
                    &check,
                    DifferenceKind::DataDiffers,
                    format!(
                        "{} has {} bytes in PLAIN, {} in FOLDED",
                        symbol.name, symbol.size, folded_symbol.size
                    ),
                ));
            }
            let (plain_address, folded_address, size) =
                (symbol.address, folded_symbol.address, symbol.size);
            if let Some(reason) = self.compare_data(&check, plain_address, folded_address, size) {
                return Err(self.fail(&check, DifferenceKind::DataDiffers, reason));
            }
        }
        Ok(())
    }

    /// Functions a shared object or `--export-dynamic` exports: their
    /// addresses are observable from outside, as if taken.
    fn check_exported(&mut self) -> Result<(), Failure> {
        let names: HashSet<&str> = self
            .plain
            .exported_functions
            .iter()
            .map(String::as_str)
            .collect();
        let root = self.roots.len();
        self.roots.push(Root {
            name: "(exported functions)".to_string(),
        });
        for (index, symbol) in self.plain.symbols.iter().enumerate() {
            if symbol.kind != SymbolKind::Function
                || symbol.file.is_some()
                || !names.contains(symbol.name.as_str())
                || symbol.is_rust_function()
            {
                continue;
            }
            let Some(counterpart) = self.folded.counterpart(self.plain, SymbolId(index as u32))
            else {
                continue;
            };
            let folded_address = self.folded.symbol(counterpart).address;
            let check = TargetCheck {
                plain_target: symbol.address,
                folded_target: folded_address,
                use_: Use::Address,
                plain_field: 0,
                folded_field: 0,
                plain_site: symbol.address,
                folded_site: folded_address,
                width: 0,
                reach: Reach::Unknown,
                functions: None,
                via: None,
                root,
            };
            self.record(&check, symbol.address, folded_address, true)?;
        }
        Ok(())
    }

    /// Compares `size` bytes of data at `plain` and `folded`; pointers found
    /// (by relocation, or by value in images without any) are queued as
    /// address checks. `Some(reason)` when the bytes differ.
    fn compare_data(
        &mut self,
        check: &TargetCheck,
        plain: u64,
        folded: u64,
        size: u64,
    ) -> Option<String> {
        match self.data_done.get(&(plain, folded)) {
            Some(&done) if done >= size => return None,
            _ => {}
        }
        self.data_done.insert((plain, folded), size);
        let plain_bytes = self.plain.bytes(plain, size);
        let folded_bytes = self.folded.bytes(folded, size);
        let (plain_bytes, folded_bytes) = match (plain_bytes, folded_bytes) {
            (Some(p), Some(f)) => (p, f),
            (None, None) => return None, // both without contents (.bss)
            _ => {
                self.data_done.remove(&(plain, folded));
                return Some("only one of them has contents".to_string());
            }
        };
        let by_value = self.plain.pointers_unmarked() && self.folded.pointers_unmarked();
        // Offsets of the pointer slots either image knows of.
        let mut slots: Vec<u64> = self
            .plain
            .pointer_places_in(plain, size)
            .iter()
            .map(|a| a - plain)
            .chain(
                self.folded
                    .pointer_places_in(folded, size)
                    .iter()
                    .map(|a| a - folded),
            )
            .collect();
        slots.sort_unstable();
        slots.dedup();
        let mut pointers = Vec::new();
        let mut offset = 0u64;
        let mut failure = None;
        for slot in slots.into_iter().chain([size]) {
            if slot < offset {
                continue;
            }
            if let Some(reason) = self.compare_bytes(
                plain,
                folded,
                plain_bytes,
                folded_bytes,
                offset..slot,
                by_value,
                &mut pointers,
            ) {
                failure = Some(reason);
                break;
            }
            if slot == size {
                break;
            }
            let (p_at, f_at) = (plain + slot, folded + slot);
            let raw = |image: &Image, at: u64| image.read_u64(at).map(Pointer::Address);
            let p = pointer_slot(self.plain, p_at).or_else(|| raw(self.plain, p_at));
            let f = pointer_slot(self.folded, f_at).or_else(|| raw(self.folded, f_at));
            match (p, f) {
                (Some(Pointer::Address(a)), Some(Pointer::Address(b))) => {
                    pointers.push((a, b, p_at, f_at));
                }
                (Some(Pointer::Named(a, x)), Some(Pointer::Named(b, y))) if a == b && x == y => {}
                _ => {
                    failure = Some(format!(
                        "the pointer at {} differs from the one at {}",
                        self.plain.describe(p_at),
                        self.folded.describe(f_at)
                    ));
                    break;
                }
            }
            offset = slot + 8;
        }
        if failure.is_some() {
            self.data_done.remove(&(plain, folded));
            return failure;
        }
        for (a, b, p_at, f_at) in pointers {
            let via = Some(self.step(check));
            let use_ = if self.plain.in_vtable(p_at) {
                Use::VtableSlot
            } else {
                Use::Address
            };
            self.queue.push(TargetCheck {
                plain_target: a,
                folded_target: b,
                use_,
                plain_field: p_at,
                folded_field: f_at,
                plain_site: p_at,
                folded_site: f_at,
                width: 0,
                reach: Reach::Unknown,
                functions: None,
                via,
                root: check.root,
            });
        }
        None
    }

    /// Compares the bytes of `range` (offsets from `plain` and `folded`);
    /// in images where no relocation marks pointers into the image (no `-q`,
    /// and no dynamic relocations or a position-dependent executable),
    /// differing aligned 8-byte words that point into both images are taken
    /// for pointers.
    #[allow(clippy::too_many_arguments)]
    fn compare_bytes(
        &self,
        plain: u64,
        folded: u64,
        plain_bytes: &[u8],
        folded_bytes: &[u8],
        range: std::ops::Range<u64>,
        by_value: bool,
        pointers: &mut Vec<(u64, u64, u64, u64)>,
    ) -> Option<String> {
        let (from, to) = (range.start as usize, range.end as usize);
        let (left, right) = (plain_bytes.get(from..to)?, folded_bytes.get(from..to)?);
        if left == right {
            return None;
        }
        let mut i = 0;
        while i < left.len() {
            let at = (from + i) as u64;
            if by_value && (plain + at) % 8 == 0 && i + 8 <= left.len() {
                let word = |bytes: &[u8]| {
                    u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default())
                };
                let (a, b) = (word(left), word(right));
                if a != b && self.plain.is_mapped(a) && self.folded.is_mapped(b) {
                    pointers.push((a, b, plain + at, folded + at));
                    i += 8;
                    continue;
                }
            }
            if left[i] != right[i] {
                return Some(format!(
                    "byte {:#04x} at {} vs {:#04x} at {}",
                    left[i],
                    self.plain.describe(plain + at),
                    right[i],
                    self.folded.describe(folded + at)
                ));
            }
            i += 1;
        }
        None
    }

    /// Read-only data no symbol covers: a jump table of the referencing
    /// functions (4-byte offsets from the table, or 8-byte addresses, each
    /// landing on the same instruction of both), a merge constant, or else
    /// the bytes up to the first known bound of either image: the next
    /// symbol, label, place reached code references, place a pointer
    /// (kept or dynamic relocation) points to, or relocated offset. A NUL
    /// ends the piece sooner only in a mergeable-strings section and when
    /// the referencing code is not Rust (C reads a string to its NUL; Rust's
    /// `&str` carries its length, so its bytes have no NUL and a NUL further
    /// on belongs to other data); without any bound, at most 256 bytes.
    fn compare_unnamed_data(&mut self, check: &TargetCheck, limit: u64) -> Option<String> {
        let (p, f) = (check.plain_target, check.folded_target);
        if let Some((plain_fn, folded_fn)) = check.functions
            && let Some(reason) = self.compare_jump_table(check, plain_fn, folded_fn)
        {
            return reason;
        }
        if let Some(reason) = self.compare_offset_table(check) {
            return reason;
        }
        if let Some(reason) = self.compare_offsets_read_by_code(check) {
            return reason;
        }
        let section = &self.plain.sections[self.plain.section_at(p)?];
        let bytes = self.plain.bytes_to_section_end(p)?;
        // An access of a known width reads at most its bytes.
        if limit != u64::MAX {
            return self.compare_data(check, p, f, limit.min(bytes.len() as u64));
        }
        // So does a Rust fat pointer in data, within its length.
        if let Some(len) = self.fat_pointer_length(check) {
            return self.compare_data(check, p, f, len.min(bytes.len() as u64));
        }
        // So does an AArch64 table indexed under an exact range check.
        if let Some(len) = self.aarch64_table_length(check) {
            return self.compare_data(check, p, f, len.min(bytes.len() as u64));
        }
        // Otherwise what the code reads is unknown: the piece, up to the
        // next symbol, label, referenced place or relocated offset of
        // either image, or the end of PLAIN's object holding it.
        let object_end = self
            .plain
            .symbols_around(p)
            .0
            .iter()
            .map(|&id| self.plain.symbol(id))
            .filter(|s| s.kind == SymbolKind::Object && s.size > 0)
            .map(|s| s.end())
            .min()
            .unwrap_or(u64::MAX);
        let end = |image: &Image, at: u64| image.data_end(at).min(image.next_offset_place(at));
        let plain_end = end(self.plain, p).min(object_end);
        // FOLDED's layout bounds the piece too (its kept copy may end
        // sooner than PLAIN's next known place): a choice that proves more
        // on non-text data, where no finer extent is known (see the
        // known cases of tests/false_passes.rs).
        let to_bound = (plain_end - p)
            .min(end(self.folded, f).saturating_sub(f))
            .min(bytes.len() as u64);
        // Rust code passes a string's length with its address (`&str`): its
        // bytes need no NUL and are packed back to back, so the piece is
        // what the known bounds say. C code reads a string up to its NUL.
        let c_string = check
            .functions
            .is_none_or(|(plain_fn, _)| !in_rust_function(self.plain, plain_fn.start));
        let through_nul = bytes
            .iter()
            .position(|&b| b == 0)
            .map_or(bytes.len(), |n| n + 1) as u64;
        // A C string holds its NUL in its own object: bytes without one up
        // to PLAIN's next symbol or label are no C string (Rust's strings
        // carry none, packed back to back, even in a section the linker
        // marks as strings), whatever code reads them.
        let nul_in_object = {
            let object = self
                .plain
                .next_symbol_start(p)
                .min(self.plain.next_label(p));
            through_nul <= object.saturating_sub(p)
        };
        // A pointer in the data of a Rust image: the linker may mark a
        // whole `.rodata` as strings while rustc's strings in it have no
        // NUL; it is read like a pointer in data to text below.
        let rust_data_pointer = self.plain_is_rust && check.functions.is_none();
        // lld marks an output section mergeable strings when one input is,
        // and puts merged strings in a section of its own (`<internal>`):
        // where PLAIN's map and objects say the place lies in an input
        // section that is not mergeable, it holds no such string.
        let strings = section.strings && !self.in_unmerged_input_section(p);
        let len = if strings && c_string && nul_in_object && !rust_data_pointer {
            // A mergeable-strings section holds strings that end at their
            // NUL: the linker merges them by it, and a suffix of one may be
            // another string (so a referenced place inside is no bound).
            // (lld marks a whole `.rodata` mergeable strings when its
            // inputs are.)
            through_nul
        } else if c_string && is_text(bytes) && check.functions.is_some() {
            // GNU ld merges `.rodata.str*` into `.rodata` and drops the
            // string flags: what C code reads as text up to a NUL may be a
            // string whose suffix something else references, or an array
            // read past its first zero: both are compared.
            through_nul.max(to_bound)
        } else if c_string && (is_text(bytes) || rust_data_pointer) {
            // A pointer in data to text: a C string (read to its NUL) or a
            // Rust `&str` (its length beside it), whose bytes run on into
            // the next string with no NUL between: up to the first of
            // both. (Which code reads through the pointer, and how far,
            // nothing here says.)
            through_nul.min(to_bound)
        } else if section.merge_entry_size > 0 && !section.strings {
            section.merge_entry_size.max(to_bound)
        } else {
            to_bound
        };
        self.compare_data(check, p, f, len)
    }

    /// Whether PLAIN's map places `address` in an input section its object
    /// says is not mergeable (with `--plain-map` and the object at hand).
    fn in_unmerged_input_section(&self, address: u64) -> bool {
        let (Some(map), Some(objects)) = (&self.plain.input_sections, &self.plain.input_objects)
        else {
            return false;
        };
        map.span_at(address)
            .and_then(|span| objects.facts(map, span))
            .is_some_and(|facts| !facts.merge)
    }

    /// The length of a Rust fat pointer (`&str`, `&[u8]`) in data whose
    /// pointer is the word at the site: in an image rustc made code of,
    /// with kept relocations, a relocated pointer word followed by a word
    /// no relocation writes, the same non-zero number in both images. Its
    /// code reads `[p, p + len)` and nothing before `p` (Rust's references
    /// reach only their own bytes): an assumption about the layout rustc
    /// gives a reference to a slice, not proved from the code that loads
    /// it (see docs/design.md, "Where a fact is ambiguous").
    fn fat_pointer_length(&self, check: &TargetCheck) -> Option<u64> {
        if check.functions.is_some() || !self.plain_is_rust {
            return None;
        }
        let (p, f) = (check.plain_site, check.folded_site);
        let pointer = |image: &Image, at: u64| {
            image.relocated_word(at, 8) == Some(true)
                && image.relocated_word(at + 8, 8) == Some(false)
        };
        if !pointer(self.plain, p) || !pointer(self.folded, f) {
            return None;
        }
        let len = self.plain.read_u64(p + 8)?;
        (len > 0 && self.folded.read_u64(f + 8) == Some(len)).then_some(len)
    }

    /// AArch64: how many bytes of the table the code at PLAIN's site reads,
    /// when an exact range check bounds its index
    /// (`aarch64_flow::table_length`).
    fn aarch64_table_length(&self, check: &TargetCheck) -> Option<u64> {
        let (function, _) = check.functions?;
        if self.plain.arch != image::Arch::Aarch64 {
            return None;
        }
        let raw = aarch64::raw_words(
            self.plain
                .bytes(function.start, function.end - function.start)?,
        );
        let at = usize::try_from(check.plain_site.checked_sub(function.start)? / 4).ok()?;
        aarch64_flow::table_length(&raw, function.start, at)
    }

    /// A table of 4-byte offsets from its own start that a `-q` link kept
    /// relocations for (`R_X86_64_PC32`, `R_AARCH64_PREL32`), such as
    /// rustc's tables of string offsets for `Debug`: entry by entry, the
    /// table's address plus the entry is the address the code forms, so
    /// those addresses are compared as targets rather than the entries'
    /// bytes (which change whenever the table and its targets move apart).
    /// The table runs while PLAIN's entries carry such relocations, up to
    /// the next symbol, label or referenced place of either image (as all
    /// unnamed data does;
    /// a table that runs into the next one stops at the `__icf.*` name icf
    /// gives a kept copy); FOLDED's entries must carry them too. `Some(None)`: the entries correspond (checks
    /// queued); `Some(Some(_))`: they do not; `None`: no such table.
    fn compare_offset_table(&mut self, check: &TargetCheck) -> Option<Option<String>> {
        let (p, f) = (check.plain_target, check.folded_target);
        let arch = self.plain.arch;
        let relative = |image: &Image, at: u64| {
            image
                .emitted
                .get(&at)
                .is_some_and(|r| image::is_relative_offset(arch, r.r_type))
        };
        if !relative(self.plain, p) {
            return None;
        }
        let (plain_end, folded_end) = (self.plain.data_end(p), self.folded.data_end(f));
        let mut entries = Vec::new();
        let mut i = 0u64;
        while p + 4 * i + 4 <= plain_end
            && f + 4 * i + 4 <= folded_end
            && relative(self.plain, p + 4 * i)
        {
            let (p_at, f_at) = (p + 4 * i, f + 4 * i);
            let target = |image: &Image, table: u64, at: u64| {
                image
                    .read_u32(at)
                    .map(|v| table.wrapping_add(v as i32 as i64 as u64))
            };
            match (target(self.plain, p, p_at), target(self.folded, f, f_at)) {
                (Some(a), Some(b)) if relative(self.folded, f_at) => {
                    entries.push((a, b, p_at, f_at));
                }
                _ => {
                    return Some(Some(format!(
                        "entry {i} of the table of offsets at {} has no counterpart at {}",
                        self.plain.describe(p_at),
                        self.folded.describe(f_at)
                    )));
                }
            }
            i += 1;
        }
        // What follows the relocated entries up to the piece's end is data
        // the same code may read (a length beside an offset): bytes, up to
        // the nearer end of either image's piece, as for any unnamed data
        // (alignment padding before the next table may differ).
        let rest = plain_end
            .saturating_sub(p + 4 * i)
            .min(folded_end.saturating_sub(f + 4 * i));
        if rest > 0
            && let Some(reason) = self.compare_data(check, p + 4 * i, f + 4 * i, rest)
        {
            return Some(Some(reason));
        }
        self.queue_words(check, entries, Use::Address, check.functions);
        Some(None)
    }

    /// A table of 4-byte offsets from its own start in images without kept
    /// relocations, recognized by the code that reads it: PLAIN's code
    /// forms the table's address and, on every path, only loads entries
    /// and adds them back ([`Reach::Offsets`], from
    /// `x86_escape::reads_only_offsets`), or both sites do so in straight
    /// line (`x86_table::reads_offsets_from`). Entry by entry, the addresses
    /// they form must correspond, as with kept relocations
    /// (`compare_offset_table`). Nothing says where such a table ends, so
    /// it runs while both images' entries name mapped places, up to the
    /// next symbol, label or referenced place of either image and short of
    /// the lowest place an entry names past the table (a table never holds
    /// what it points to); what is left up to the usual bound of unnamed
    /// data is compared as bytes, so an entry the bound cut off is never
    /// skipped. `None`: not such a table.
    fn compare_offsets_read_by_code(&mut self, check: &TargetCheck) -> Option<Option<String>> {
        let (p, f) = (check.plain_target, check.folded_target);
        if self.plain.arch != image::Arch::X86_64
            || check.functions.is_none()
            || self.plain.has_emitted_relocs()
            || self.folded.has_emitted_relocs()
            || !(check.reach == Reach::Offsets
                || x86_table::reads_offsets_from(self.plain, check.plain_site, p)
                    && x86_table::reads_offsets_from(self.folded, check.folded_site, f))
        {
            return None;
        }
        let (plain_end, folded_end) = (self.plain.data_end(p), self.folded.data_end(f));
        let (mut plain_limit, mut folded_limit) = (plain_end, folded_end);
        let target = |image: &Image, table: u64, at: u64| {
            image
                .read_u32(at)
                .map(|v| table.wrapping_add(v as i32 as i64 as u64))
                .filter(|&a| image.section_at(a).is_some())
        };
        let mut entries = Vec::new();
        let mut n = 0u64;
        loop {
            let (p_at, f_at) = (p + 4 * n, f + 4 * n);
            if p_at + 4 > plain_limit || f_at + 4 > folded_limit {
                break;
            }
            let (Some(a), Some(b)) = (target(self.plain, p, p_at), target(self.folded, f, f_at))
            else {
                break;
            };
            if (p..p_at + 4).contains(&a) || (f..f_at + 4).contains(&b) {
                break;
            }
            if a > p {
                plain_limit = plain_limit.min(a);
            }
            if b > f {
                folded_limit = folded_limit.min(b);
            }
            entries.push((a, b, p_at, f_at));
            n += 1;
        }
        if entries.is_empty() {
            return None;
        }
        let rest = (plain_end - p)
            .min(folded_end.saturating_sub(f))
            .min(256)
            .saturating_sub(4 * n);
        if rest > 0
            && let Some(reason) = self.compare_data(check, p + 4 * n, f + 4 * n, rest)
        {
            return Some(Some(reason));
        }
        self.queue_words(check, entries, Use::Address, check.functions);
        Some(None)
    }

    /// Queues the targets that words of data reached from `check` name:
    /// (PLAIN target, FOLDED target, PLAIN place, FOLDED place), each used
    /// as `use_` by `functions` (the code reading the words' targets, for
    /// a table of offsets the code adds back: a Rust function's strings
    /// carry no NUL).
    fn queue_words(
        &mut self,
        check: &TargetCheck,
        words: Vec<(u64, u64, u64, u64)>,
        use_: Use,
        functions: Option<(Extent, Extent)>,
    ) {
        if words.is_empty() {
            return;
        }
        let via = Some(self.step(check));
        for (a, b, p_at, f_at) in words {
            self.queue.push(TargetCheck {
                plain_target: a,
                folded_target: b,
                use_,
                plain_field: p_at,
                folded_field: f_at,
                plain_site: p_at,
                folded_site: f_at,
                width: 0,
                reach: Reach::Unknown,
                functions,
                via,
                root: check.root,
            });
        }
    }

    /// `Some(None)`: a jump table whose entries correspond; `Some(Some(_))`: a
    /// jump table whose entries do not; `None`: not a jump table.
    fn compare_jump_table(
        &mut self,
        check: &TargetCheck,
        plain_fn: Extent,
        folded_fn: Extent,
    ) -> Option<Option<String>> {
        let (p, f) = (check.plain_target, check.folded_target);
        let relative = |image: &Image, table: u64, i: u64| {
            image
                .read_u32(table + 4 * i)
                .map(|v| table.wrapping_add(v as i32 as i64 as u64))
        };
        let absolute = |image: &Image, table: u64, i: u64| image.read_u64(table + 8 * i);
        let entry_of: [(&EntryReader, u64); 2] = [(&relative, 4), (&absolute, 8)];
        // The referencing pair was compared just before its targets are:
        // its instruction offsets say where the table ends (the first entry
        // that is not an instruction of the plain function).
        let Some(PairState::Done {
            plain_offsets,
            folded_offsets,
            ..
        }) = self.pairs.get(&(plain_fn.start, folded_fn.start))
        else {
            return None;
        };
        let instruction = |offsets: &[u32], extent: Extent, address: u64| {
            extent
                .contains(address)
                .then(|| offset_index(offsets, address - extent.start))
                .flatten()
        };
        // An exact range check before the function's load says how many
        // entries there are; otherwise the table ends where other data
        // starts (the next place code references: another table; a symbol
        // or label), and within a mask's bound.
        let size = self.plain.jump_table_size(p);
        let exact = size.filter(|s| s.exact).map(|s| s.entries);
        let at_most = size.map_or(u64::MAX, |s| s.entries);
        let entry_of = match size.map(|s| s.relative) {
            Some(true) => &entry_of[..1],
            Some(false) => &entry_of[1..],
            None => &entry_of[..],
        };
        for &(entry, width) in entry_of {
            let mut count = 0u64;
            let mut outside = Vec::new();
            let table_end = self.plain.data_end(p);
            loop {
                // With kept relocations, also at its first word no
                // relocation writes: what follows is other data, however
                // its bytes read.
                let at = p + width * count;
                let past_end = match exact {
                    Some(entries) => count >= entries,
                    None => {
                        count >= at_most
                            || at >= table_end
                            || self.plain.relocated_word(at, width) == Some(false)
                    }
                };
                if past_end {
                    break;
                }
                let plain_target = entry(self.plain, p, count);
                let folded_target = entry(self.folded, f, count);
                // A case outside the function (GCC's `f.cold` part; a tail
                // jump to another function; the function's end, where a
                // case the compiler knows unreachable goes) is a jump
                // there, in both: whatever runs there must correspond.
                // Without a known size, the first entry leaving the
                // function ends the table: what follows a table is often
                // another one, whose entries, read from here, land in code
                // too (an assumption: a case jumping out of the function
                // in such a table ends what is compared).
                if exact.is_some()
                    && let (Some(a), Some(b)) = (plain_target, folded_target)
                    && !plain_fn.contains(a)
                    && !folded_fn.contains(b)
                {
                    outside.push((a, b, p + width * count, f + width * count));
                    count += 1;
                    continue;
                }
                let a = plain_target.and_then(|a| instruction(plain_offsets, plain_fn, a));
                let b = folded_target.and_then(|b| instruction(folded_offsets, folded_fn, b));
                match (a, b) {
                    (Some(i), Some(j)) if i == j => {}
                    (None, _) if exact.is_none() || count == 0 => break,
                    // A first entry that does not land alike may just mean
                    // this is no table, unless PLAIN's function jumps there.
                    _ if count == 0 && !self.is_jump_table(check) => break,
                    _ => {
                        return Some(Some(format!(
                            "jump table entry {count} at {} vs {} does not land in the same function",
                            self.plain.describe(p + width * count),
                            self.folded.describe(f + width * count)
                        )));
                    }
                }
                count += 1;
            }
            if count > 0 {
                self.queue_words(check, outside, Use::Jump, None);
                return Some(None);
            }
        }
        None
    }

    fn render(&self, failure: Failure) -> Difference {
        let mut path = Vec::new();
        let mut step = failure.via;
        while let Some(id) = step {
            let s = self.steps[id];
            path.push(self.site(s.plain_site, s.folded_site, s.code));
            step = s.parent;
        }
        path.reverse();
        path.push(self.site(
            failure.local.plain_site,
            failure.local.folded_site,
            failure.local.code,
        ));
        Difference {
            function: self
                .roots
                .get(failure.root)
                .map(|r| r.name.clone())
                .unwrap_or_default(),
            kind: failure.local.kind,
            detail: failure.local.detail,
            path,
        }
    }

    fn site(&self, plain: u64, folded: u64, code: bool) -> Site {
        let location = |image: &Image, address: u64| Location {
            address,
            place: image.describe(address),
            instruction: code.then(|| decode::disassemble(image, address)),
        };
        Site {
            plain: location(self.plain, plain),
            folded: location(self.folded, folded),
        }
    }
}

/// Reads entry `i` of the jump table at `table` as the address it jumps to.
type EntryReader = dyn Fn(&Image, u64, u64) -> Option<u64>;

/// A word the loader or the link fills with an address.
enum Pointer {
    Address(u64),
    Named(String, i64),
}

fn pointer_slot(image: &Image, at: u64) -> Option<Pointer> {
    if let Some(slot) = image.dynamic.get(&at) {
        return Some(match slot {
            image::Slot::Address(a) => Pointer::Address(*a),
            image::Slot::Named(name, addend) => Pointer::Named(name.clone(), *addend),
        });
    }
    let reloc = image.emitted.get(&at)?;
    image::is_absolute_pointer(image.arch, reloc.r_type).then_some(Pointer::Address(reloc.value))
}

/// Whether `name` is a local symbol ThinLTO promoted to a hidden global
/// so that other modules can reach it: `<name>.llvm.<digits>`.
fn promoted_by_thinlto(name: &str) -> bool {
    name.rsplit_once(".llvm.").is_some_and(|(base, digits)| {
        !base.is_empty() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Whether `offset` lies in a run of bytes no path reaches that holds no
/// field a kept relocation writes: data both images hold alike at the
/// same offset once the instructions compared equal (x86-64 data a
/// function embeds and reads, `movl .Ldata(%rip), %eax`).
fn in_plain_data(code: &[Decoded], offset: u64) -> bool {
    let Ok(offset) = u32::try_from(offset) else {
        return false;
    };
    let at = code.partition_point(|d| d.offset <= offset);
    at.checked_sub(1)
        .map(|i| &code[i])
        .is_some_and(|d| match &d.key {
            Key::Data { data, relocations } => {
                relocations.is_empty() && u64::from(offset - d.offset) < data.len() as u64
            }
            _ => false,
        })
}

fn offset_index(offsets: &[u32], offset: u64) -> Option<usize> {
    let offset = u32::try_from(offset).ok()?;
    offsets.binary_search(&offset).ok()
}

/// What `address` is in `image`, best interpretation first: the symbol a
/// kept relocation names, the symbols containing it, those ending at it;
/// a PLT entry; a GOT slot; a place in a section; a number. The place in
/// its section is also offered when no symbol containing it exists in
/// `other` (a symbol the fold added, like icf's `__icf.*` names for a kept
/// copy of read-only data, or one it removed): such a name says nothing
/// about what the place is.
fn classify(image: &Image, other: &Image, address: u64, field: u64) -> Vec<Place> {
    let mut places = Vec::new();
    let section = image.section_at(address);
    if let Some(index) = section {
        let role = image.sections[index].role;
        if let SectionRole::Plt { .. } = role {
            if let Some(place) = plt_entry(image, index, address) {
                places.push(place);
                return places;
            }
        } else if matches!(role, SectionRole::Got | SectionRole::LazyGot) {
            match image.dynamic.get(&address) {
                Some(image::Slot::Named(name, addend)) => {
                    places.push(Place::GotNamed(name.clone(), *addend))
                }
                Some(image::Slot::Address(a)) => places.push(Place::GotAddress(*a)),
                None => match image.read_u64(address) {
                    Some(value) => places.push(Place::GotAddress(value)),
                    None => places.push(Place::Section(index, 0)),
                },
            }
            return places;
        }
    }
    let (containing, ending) = image.symbols_around(address);
    if let Some(reloc) = image.emitted.get(&field)
        && let Some(id) = reloc.symbol
    {
        let s = image.symbol(id);
        if (s.address..=s.end()).contains(&address) {
            places.push(Place::Symbol(id, address - s.address));
        }
    }
    let has_known_container = containing
        .iter()
        .any(|&id| other.counterpart(image, id).is_some());
    // One past the end is a place of data only: past a function's end is
    // the next code, whatever that is.
    let data_ending = ending
        .into_iter()
        .filter(|id| image.symbol(*id).kind == SymbolKind::Object);
    for id in containing {
        let place = Place::Symbol(id, address - image.symbol(id).address);
        if !places.contains(&place) {
            places.push(place);
        }
    }
    // What starts here comes before what ends here: reading on from the
    // address reads what starts there.
    if !has_known_container {
        match section {
            Some(index) => places.push(Place::Section(
                index,
                address - image.sections[index].address,
            )),
            None => places.push(Place::Outside(address)),
        }
    }
    places.extend(
        image
            .sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.alloc && s.size > 0 && s.address.saturating_add(s.size) == address)
            .map(|(index, _)| Place::SectionEnd(index)),
    );
    for id in data_ending {
        let place = Place::Symbol(id, address - image.symbol(id).address);
        if !places.contains(&place) {
            places.push(place);
        }
    }
    places
}

/// How far an unnamed piece of data may be compared for `check`: the bytes
/// its accesses read when that is known (at most, none before it), else
/// without a limit.
fn access_limit(check: &TargetCheck) -> u64 {
    if check.use_ == Use::Access && check.width > 0 {
        check.width
    } else {
        u64::MAX
    }
}

/// Whether `address` starts or lies in a Rust function of `image` (see
/// `Symbol::is_rust_function`).
fn in_rust_function(image: &Image, address: u64) -> bool {
    image
        .symbols_around(address)
        .0
        .iter()
        .any(|&id| image.symbol(id).is_rust_function())
}

/// The symbol a PLT entry jumps to (see [`decode::plt_slot`]).
fn plt_entry(image: &Image, section: usize, address: u64) -> Option<Place> {
    match decode::plt_slot(image, section, address)? {
        image::Slot::Named(name, _) => Some(Place::Plt(name.clone())),
        image::Slot::Address(a) => Some(Place::GotAddress(*a)),
    }
}

/// Whether `bytes` start with text ended by a NUL: printable ASCII,
/// whitespace or UTF-8 bytes, at least one.
fn is_text(bytes: &[u8]) -> bool {
    let Some(nul) = bytes.iter().position(|&b| b == 0) else {
        return false;
    };
    nul > 0
        && bytes[..nul]
            .iter()
            .all(|&b| matches!(b, b'\t' | b'\n' | b'\r' | 0x20..=0x7e | 0x80..))
}

/// Whether two references are used alike: the same way, or as an observed
/// address, an access, or a dereferenced pointer load, which the escape
/// scans tell apart and which one image's scan may know less about than
/// the other's (see `compare_code`).
fn same_use(a: Use, b: Use) -> bool {
    let data = |u: Use| matches!(u, Use::Address | Use::Access | Use::Deref);
    a == b || (data(a) && data(b))
}

/// Decodes and compares one pair; pure, so pairs run in parallel.
fn compare_pair(plain: &Image, folded: &Image, task: &PairTask, assume_odr: bool) -> PairResult {
    let p = task.plain;
    let mut f = code_extent(folded, task.folded_start);
    let mut followed_thunk = false;
    let plain_is_thunk = decode::thunk_target(plain, p.start, p.end).is_some();
    if assume_odr
        && !plain_is_thunk
        && let Some(target) = decode::thunk_target(folded, f.start, f.end)
        && plain.vague_linkage_function_at(p.start)
        && folded.vague_linkage_function_at(f.start)
        && folded.vague_linkage_function_at(target)
    {
        return PairResult {
            folded: f,
            followed_thunk: true,
            assumed_by_odr: true,
            outcome: Ok(Vec::new()),
            plain_offsets: Vec::new(),
            folded_offsets: Vec::new(),
        };
    }
    if !plain_is_thunk {
        for _ in 0..8 {
            match decode::thunk_target(folded, f.start, f.end) {
                Some(target) => {
                    f = code_extent(folded, target);
                    followed_thunk = true;
                }
                None => break,
            }
        }
    }
    let mut result = PairResult {
        folded: f,
        followed_thunk,
        assumed_by_odr: false,
        outcome: Ok(Vec::new()),
        plain_offsets: Vec::new(),
        folded_offsets: Vec::new(),
    };
    let no_code = |site_p: u64, site_f: u64, which: &str| LocalDifference {
        plain_site: site_p,
        folded_site: site_f,
        code: false,
        kind: DifferenceKind::InstructionsDiffer,
        detail: format!("{which} has no code bytes there"),
    };
    let Some(mut plain_code) = decode::decode_function(plain, p.start, p.end) else {
        result.outcome = Err(no_code(p.start, f.start, "PLAIN"));
        return result;
    };
    let Some(mut folded_code) = decode::decode_function(folded, f.start, f.end) else {
        result.outcome = Err(no_code(p.start, f.start, "FOLDED"));
        return result;
    };
    if plain.arch == image::Arch::Aarch64 {
        aarch64::relocated_words(
            plain,
            folded,
            (p.start, f.start),
            &mut plain_code,
            &mut folded_code,
        );
    }
    result.plain_offsets = plain_code.iter().map(|d| d.offset).collect();
    result.folded_offsets = folded_code.iter().map(|d| d.offset).collect();
    result.outcome = compare_code(
        plain,
        folded,
        task,
        p,
        f,
        &plain_code,
        &folded_code,
        &result,
    );
    if result.outcome.is_ok()
        && let Err(difference) = compare_handlers(plain, folded, p.start, f.start)
    {
        result.outcome = Err(difference);
    }
    result
}

/// Whether the exception tables of two functions whose code is equal say
/// the same: call sites and landing pads at the same offsets, and the
/// same actions, catching the same types (`eh::Handlers`). A fold or a
/// shrink that gives a function another's table (one that catches
/// another type) changes what it does when something throws.
fn compare_handlers(
    plain: &Image,
    folded: &Image,
    plain_start: u64,
    folded_start: u64,
) -> Result<(), LocalDifference> {
    let differ = |detail: String| LocalDifference {
        plain_site: plain_start,
        folded_site: folded_start,
        code: true,
        kind: DifferenceKind::HandlersDiffer,
        detail,
    };
    match (
        crate::eh::handlers(plain, plain_start),
        crate::eh::handlers(folded, folded_start),
    ) {
        (None, None) => Ok(()),
        (Some(Ok(p)), Some(Ok(f))) if p == f => Ok(()),
        (Some(Ok(p)), Some(Ok(f))) => {
            let first = p
                .call_sites
                .iter()
                .zip(&f.call_sites)
                .find(|(a, b)| a != b)
                .map_or_else(
                    || {
                        format!(
                            "{} call sites in PLAIN, {} in FOLDED",
                            p.call_sites.len(),
                            f.call_sites.len()
                        )
                    },
                    |(a, b)| format!("call site {a:?} in PLAIN, {b:?} in FOLDED"),
                );
            Err(differ(format!("the exception tables differ: {first}")))
        }
        (Some(Err(why)), _) | (_, Some(Err(why))) => Err(differ(why)),
        (Some(_), None) => Err(differ("FOLDED has no exception table".to_string())),
        (None, Some(_)) => Err(differ("PLAIN has no exception table".to_string())),
    }
}

/// Whether `longer` is `shorter` and one `nop` after the jump that ends
/// it: how lld and GNU ld relax `jmp *f@GOTPCREL(%rip)` (`jmp f; nop`),
/// where the other copy jumped to `f` directly. Nothing runs the `nop`
/// (a jump to it would have no counterpart, and is checked as a target).
fn only_a_nop_after_a_jump(shorter: &[Decoded], longer: &[Decoded]) -> bool {
    let mnemonic = |d: Option<&Decoded>| match d.map(|d| &d.key) {
        Some(Key::X86(key)) => Some(key.mnemonic),
        _ => None,
    };
    // The `nop` decoded, or left as bytes no path reaches.
    let nop = |d: Option<&Decoded>| match d.map(|d| &d.key) {
        Some(Key::X86(key)) => key.mnemonic == iced_x86::Mnemonic::Nop,
        Some(Key::Data { data, relocations }) => data == &[0x90] && relocations.is_empty(),
        _ => false,
    };
    longer.len() == shorter.len() + 1
        && mnemonic(shorter.last()) == Some(iced_x86::Mnemonic::Jmp)
        && mnemonic(longer.get(shorter.len().wrapping_sub(1))) == Some(iced_x86::Mnemonic::Jmp)
        && nop(longer.last())
}

#[allow(clippy::too_many_arguments)]
fn compare_code(
    plain: &Image,
    folded: &Image,
    task: &PairTask,
    p: Extent,
    f: Extent,
    plain_code: &[Decoded],
    folded_code: &[Decoded],
    offsets: &PairResult,
) -> Result<Vec<TargetCheck>, LocalDifference> {
    let mut checks = Vec::new();
    let differ = |a: u64, b: u64, kind: DifferenceKind, detail: String| LocalDifference {
        plain_site: a,
        folded_site: b,
        code: true,
        kind,
        detail,
    };
    for (left, right) in plain_code.iter().zip(folded_code) {
        let (a, b) = (
            p.start + u64::from(left.offset),
            f.start + u64::from(right.offset),
        );
        let same_shape = left.key == right.key
            && left.refs.len() == right.refs.len()
            && left
                .refs
                .iter()
                .zip(&right.refs)
                .all(|(x, y)| same_use(x.use_, y.use_));
        if !same_shape {
            let detail = match (&left.key, &right.key) {
                (Key::Data { .. }, _) | (_, Key::Data { .. }) => {
                    "data in code (bytes no path reaches) differs"
                }
                (Key::Bytes(_), _) | (_, Key::Bytes(_)) => "undecodable bytes differ",
                _ => "the instructions differ",
            };
            return Err(differ(
                a,
                b,
                DifferenceKind::InstructionsDiffer,
                detail.to_string(),
            ));
        }
    }
    if plain_code.len() != folded_code.len()
        && !only_a_nop_after_a_jump(plain_code, folded_code)
        && !only_a_nop_after_a_jump(folded_code, plain_code)
    {
        let n = plain_code.len().min(folded_code.len());
        let at = |code: &[Decoded], start: u64, end: u64| {
            code.get(n).map_or(end, |d| start + u64::from(d.offset))
        };
        return Err(differ(
            at(plain_code, p.start, p.end),
            at(folded_code, f.start, f.end),
            DifferenceKind::CodeLengthDiffers,
            format!(
                "PLAIN has {} instructions, FOLDED {}",
                plain_code.len(),
                folded_code.len()
            ),
        ));
    }
    // Every in-function target is checked after the instructions all
    // compared equal: a target's index among differently decoded code says
    // less than the first instruction that differs.
    for (left, right) in plain_code.iter().zip(folded_code) {
        let (a, b) = (
            p.start + u64::from(left.offset),
            f.start + u64::from(right.offset),
        );
        for (x, y) in left.refs.iter().zip(&right.refs) {
            let inside = p.contains(x.address) && f.contains(y.address);
            let own_start_observed =
                x.address == p.start && matches!(x.use_, Use::Address | Use::Access | Use::Deref);
            if inside && !own_start_observed {
                let i = offset_index(&offsets.plain_offsets, x.address - p.start);
                let j = offset_index(&offsets.folded_offsets, y.address - f.start);
                // The same place of data in code (a Mach-O jump table in
                // `__text`, which `lea` addresses), compared as bytes with
                // the rest of the function's data runs.
                let same_offset = x.address - p.start == y.address - f.start;
                let same_data = same_offset
                    && ((plain.in_data_in_code(x.address) && folded.in_data_in_code(y.address))
                        || in_plain_data(plain_code, x.address - p.start));
                if (i.is_none() || i != j) && !same_data {
                    return Err(differ(
                        a,
                        b,
                        DifferenceKind::TargetsDiffer,
                        format!(
                            "{} in PLAIN and {} in FOLDED are not the same instruction",
                            plain.describe(x.address),
                            folded.describe(y.address)
                        ),
                    ));
                }
                continue;
            }
            // The two images' escape scans may disagree (a jump table one
            // could not bound, a callee without a DWARF prototype). PLAIN's
            // decides: its facts describe what the code must do, and
            // FOLDED's code stands in for it; FOLDED's facts are those of
            // whatever was folded there (the kept copy's prototype says
            // nothing of what this function's callers read).
            let use_ = x.use_;
            checks.push(TargetCheck {
                plain_target: x.address,
                folded_target: y.address,
                use_,
                plain_field: x.field,
                folded_field: y.field,
                plain_site: a,
                folded_site: b,
                // The keys are equal: so are the operands' sizes, and the
                // lengths the code passes its callees.
                width: if use_ == Use::Access { x.width } else { 0 },
                reach: if matches!(use_, Use::Access | Use::Deref) {
                    x.reach
                } else {
                    Reach::Unknown
                },
                functions: Some((p, f)),
                via: task.via,
                root: task.root,
            });
        }
    }
    // Code that runs off its end continues in what follows it, which must
    // correspond as a jump target would. So does a call there whose
    // callee PLAIN does not show never returns: compilers end a function
    // with a call only to a `noreturn` callee, but a callee that returns
    // runs on into whatever follows (fixtures t11b, t23).
    if let (Some(left), Some(right)) = (plain_code.last(), folded_code.last())
        && (code::falls_through(left) || (is_call(left) && !never_returns_from(plain, left)))
    {
        checks.push(TargetCheck {
            plain_target: p.end,
            folded_target: f.end,
            use_: Use::Jump,
            plain_field: 0,
            folded_field: 0,
            plain_site: p.start + u64::from(left.offset),
            folded_site: f.start + u64::from(right.offset),
            width: 0,
            reach: Reach::Unknown,
            functions: Some((p, f)),
            via: task.via,
            root: task.root,
        });
    }
    Ok(checks)
}

/// Whether `decoded` is a call (`call`, `bl`, `blr`).
fn is_call(decoded: &Decoded) -> bool {
    match &decoded.key {
        Key::X86(key) => key.mnemonic == iced_x86::Mnemonic::Call,
        Key::Aarch64(key) => crate::aarch64_flow::is_call(key.0.opcode),
        Key::Bytes(_) | Key::Data { .. } => false,
    }
}

/// Whether the call `decoded` goes to a function that never returns:
/// one of [`Image::noreturn_entries`], directly or through one of
/// [`Image::noreturn_slots`], or one whose code a proof shows never
/// returns (Rust's `slice_index_fail` and the like, which no list of
/// names keeps up with; see `noreturn.rs`), directly or through a GOT
/// slot ([`Image::got_callee`]).
fn never_returns_from(image: &Image, decoded: &Decoded) -> bool {
    decoded
        .refs
        .iter()
        .filter(|r| r.use_ == crate::code::Use::Call)
        .any(|r| {
            if image.noreturn_slots.binary_search(&r.address).is_ok() {
                return true;
            }
            let target = image.got_callee(r.address).unwrap_or(r.address);
            if image.noreturn_entries.binary_search(&target).is_ok() {
                return true;
            }
            let known = image
                .proved_noreturn
                .lock()
                .ok()
                .and_then(|proved| proved.get(&target).copied());
            known.unwrap_or_else(|| {
                let proved = crate::noreturn::proves(image, target);
                if let Ok(mut cache) = image.proved_noreturn.lock() {
                    cache.insert(target, proved);
                }
                proved
            })
        })
}
