//! Phase 4 of the analysis: whose address is significant, and why. A
//! significant address must stay unique in safe mode (and, for named
//! read-only data, in every mode unless `--ignore-data-address-equality`).
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

use crate::analyse::candidates::CandidateInfo;
use crate::analyse::data_uses::{DataReference, VtableEntry, VtableName};
use crate::load::program::{LoadedObject, ObjectId, Program};
use crate::load::targets::{ExtendedTargets, Target};
use icf_fold::CandidateId;
use icf_ir::TargetId;
use icf_object::{Binding, SectionIndex, SymbolIndex, SymbolKind, Visibility};
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Why a candidate's address is significant.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Significance {
    /// Listed in its object's `.llvm_addrsig`, or named there by another object.
    AddrsigTable,
    /// An instruction of candidate `by` takes its address (not a call or a jump).
    AddressTaken { by: CandidateId },
    /// The read-only data candidate `by` refers to it (a pointer table, a vtable).
    ReferencedFromCandidate { by: CandidateId },
    /// Other data refers to it (`.init_array`, writable data): section
    /// `section` of `object`, named only when described.
    ReferencedFromData {
        object: ObjectId,
        section: SectionIndex,
    },
    /// Exported to the dynamic symbol table (`-shared`, `--export-dynamic`,
    /// a dynamic list or version script).
    Exported,
    /// In a linked image, code takes its address where no relocation shows
    /// it: an immediate of a non-PIE executable, or code no symbol covers
    /// (see `icf_object::Image::taken_addresses`).
    TakenInImage,
}

/// What address significance is decided from: the candidates and every
/// use the phases before found of them.
pub(crate) struct Uses<'a, 'p, 'data> {
    pub program: &'p Program<'data>,
    pub candidates: &'a [CandidateInfo],
    pub targets: &'a ExtendedTargets<'p, 'data>,
    /// See [`crate::Analysis::escaping_references`].
    pub escaping_references: &'a [(CandidateId, TargetId)],
    /// See [`crate::Analysis::data_references`].
    pub data_references: &'a [DataReference],
    /// See [`crate::Analysis::vtable_entries`].
    pub vtable_entries: &'a [VtableEntry<'data>],
}

impl Uses<'_, '_, '_> {
    /// Why each candidate's address is significant, `None` where it is not.
    pub(crate) fn significance(&self) -> Vec<Option<Significance>> {
        let program = self.program;
        let has_table = |object: ObjectId| program.object(object).object.addrsig.is_some();

        // Names some object's table marks: they are significant wherever they are defined.
        let mut table_names: HashSet<&[u8]> = HashSet::default();
        let mut table_symbols: HashSet<(ObjectId, SymbolIndex)> = HashSet::default();
        for (index, object) in program.objects.iter().enumerate() {
            for &symbol in object.object.addrsig.iter().flatten() {
                table_symbols.insert((ObjectId(index as u32), symbol));
                let sym = object.object.symbol(symbol);
                if sym.binding != Binding::Local {
                    table_names.insert(sym.name);
                }
            }
        }

        let virtual_functions = self.virtual_functions();
        // The names that compared were read from the inputs' string tables:
        // their pages leave the resident set before the verdicts read more
        // (the keys make this the heap's peak).
        program.inputs.release_resident_pages();
        // rustc marks every function `unnamed_addr` (Rust does not promise
        // that two functions have different addresses): only its exports
        // count, as for clang's functions missing from its table.
        let rustc_objects: Vec<bool> = program
            .objects
            .iter()
            .map(|object| made_by_rustc(&object.object))
            .collect();
        // Uses inferred from objects without a table, by candidate and by name.
        let mut inferred: HashMap<CandidateId, Significance> = HashMap::default();
        let mut inferred_names: HashMap<&[u8], Significance> = HashMap::default();
        for &(by, target) in self.escaping_references {
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
        for &DataReference {
            candidate,
            object,
            section,
        } in self.data_references
        {
            if !has_table(object) {
                inferred
                    .entry(candidate)
                    .or_insert(Significance::ReferencedFromData { object, section });
            }
        }

        let exports = program.options.exports.index();
        let significance = |(index, info): (usize, &CandidateInfo)| {
            let elf = &program.object(info.object).object;
            let symbols = symbols_of(self.program, info);
            // Data without a name of its own is the compiler's (a string,
            // a jump or lookup table, a Rust constant): no language gives
            // it an address to compare.
            if !info.is_code() && !symbols.iter().any(|&s| names_an_object(elf.symbol(s))) {
                return None;
            }
            // A name is read only where a lookup by name can answer: names
            // lie in the inputs' string tables, whose pages (45 MiB of a
            // cold LLVM link) would otherwise come back into the resident
            // set at its peak.
            let in_table = symbols.iter().any(|&s| {
                table_symbols.contains(&(info.object, s))
                    || (!table_names.is_empty()
                        && elf.symbol(s).binding != Binding::Local
                        && table_names.contains(elf.symbol(s).name))
            });
            let by_name = || {
                symbols.iter().find_map(|&s| {
                    let symbol = elf.symbol(s);
                    (symbol.binding != Binding::Local && !inferred_names.is_empty())
                        .then(|| inferred_names.get(symbol.name))
                        .flatten()
                })
            };
            // Exported to the dynamic symbol table: `dlsym` may compare it.
            let exported = || {
                symbols.iter().any(|&s| {
                    let symbol = elf.symbol(s);
                    symbol.binding != Binding::Local
                        && symbol.visibility == Visibility::Default
                        && (program.options.shared
                            || (!program.options.exports.is_empty()
                                && exports.exports(symbol.name)))
                })
            };
            if in_table {
                Some(Significance::AddrsigTable)
            } else if virtual_functions[index]
                || (info.is_code() && rustc_objects[info.object.index()])
            {
                exported().then_some(Significance::Exported)
            } else if let Some(why) = inferred.get(&CandidateId(index as u32)) {
                Some(why.clone())
            } else if let Some(why) = by_name() {
                Some(why.clone())
            } else if exported() {
                Some(Significance::Exported)
            } else if elf
                .image
                .as_ref()
                .is_some_and(|image| image.is_taken(image.address(info.section, info.start)))
            {
                Some(Significance::TakenInImage)
            } else {
                None
            }
        };
        // The verdicts read names: they leave the resident set as they go.
        crate::memory::map_releasing_inputs(program.inputs, self.candidates, |index, info| {
            significance((index, info))
        })
    }

    /// The code candidates that are virtual functions and nothing else:
    /// every name at their start is one a vtable points to them through (an
    /// entry through the section symbol counts for a function with one
    /// name). A function that also answers to a name no vtable uses (gcc's
    /// `-fipa-icf` makes such aliases) may have that name's address compared.
    /// Indexed by candidate.
    fn virtual_functions(&self) -> Vec<bool> {
        let mut entries: Vec<&VtableEntry<'_>> = self
            .vtable_entries
            .iter()
            .filter(|entry| self.candidates[entry.candidate.index()].is_code())
            .collect();
        entries.par_sort_unstable_by_key(|entry| entry.candidate);
        let by_candidate: Vec<&[&VtableEntry<'_>]> = entries
            .chunk_by(|a, b| a.candidate == b.candidate)
            .collect();
        let only_virtual: Vec<CandidateId> = by_candidate
            .into_par_iter()
            .filter_map(|through| {
                let candidate = through.first()?.candidate;
                let info = &self.candidates[candidate.index()];
                let elf = &self.program.object(info.object).object;
                let reached = |name: &VtableName<'_>| through.iter().any(|e| e.through == *name);
                let mut names = symbols_of(self.program, info)
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
                    .peekable();
                let first = names.next()?;
                let virtual_ = if names.peek().is_none() && reached(&VtableName::Section) {
                    true
                } else {
                    reached(&first) && names.all(|name| reached(&name))
                };
                virtual_.then_some(candidate)
            })
            .collect();
        let mut virtual_functions = vec![false; self.candidates.len()];
        for candidate in only_virtual {
            virtual_functions[candidate.index()] = true;
        }
        virtual_functions
    }
}

/// The symbols that name a candidate (see [`candidate_symbols`]).
pub(crate) fn symbols_of(program: &Program<'_>, info: &CandidateInfo) -> Vec<SymbolIndex> {
    candidate_symbols(
        program.object(info.object),
        info.section,
        info.start,
        info.end,
        info.is_code(),
    )
}

/// The symbols that name a candidate: those at its start (code) or anywhere
/// in it (data), plus the section symbol for a whole section.
pub(crate) fn candidate_symbols(
    object: &LoadedObject<'_>,
    section: SectionIndex,
    start: u64,
    end: u64,
    code: bool,
) -> Vec<SymbolIndex> {
    // Sorted by value: the symbols at `start` (code), or in `[start, end)`.
    let all = object.section_symbols.get(section);
    let from = all.partition_point(|&(value, _, _)| value < start);
    let to = if code {
        all.partition_point(|&(value, _, _)| value <= start)
    } else {
        all.partition_point(|&(value, _, _)| value < end)
    };
    let mut symbols: Vec<SymbolIndex> = all[from..to.max(from)]
        .iter()
        .map(|&(_, _, index)| index)
        .collect();
    if start == 0 && end == object.object.section(section).size {
        symbols.extend(object.section_symbol[section.index()]);
    }
    symbols
}

/// Whether rustc made the object: its `.comment` names rustc's version.
fn made_by_rustc(elf: &icf_object::Object<'_>) -> bool {
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
