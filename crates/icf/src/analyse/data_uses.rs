//! Phase 2 of the analysis, beside the candidates' own references: what
//! refers to a candidate from sections that are not candidates (writable
//! data, `.init_array`, vtables), and which vtable entries point to which
//! candidate through which name. Both feed address significance.

use crate::analyse::narrow::{Narrower, Reach, resolved_place};
use crate::load::program::{ObjectId, Program};
use icf_fold::CandidateId;
use icf_object::SectionIndex;
use rayon::prelude::*;

/// A reference to a candidate from a section that is not one.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct DataReference {
    /// The candidate referred to.
    pub candidate: CandidateId,
    /// The referring object and section.
    pub object: ObjectId,
    pub section: SectionIndex,
}

/// Every reference to a candidate from an allocated section that is neither
/// code nor a candidate: function pointers in writable data, `.init_array`,
/// vtables in `.data.rel.ro`. Exception tables and `.eh_frame` hold no
/// addresses a program can observe. Also, from every data section, each
/// vtable entry's candidate with the name the entry uses (see
/// [`VtableEntry`]).
pub(crate) fn references_from_data<'data>(
    program: &Program<'data>,
    narrower: &Narrower<'_, '_>,
    live: Option<&[Vec<bool>]>,
) -> (Vec<DataReference>, Vec<VtableEntry<'data>>) {
    // Per object in parallel, then in object order: the same lists as one
    // loop would make.
    let per_object: Vec<(Vec<DataReference>, Vec<VtableEntry<'data>>)> = program
        .objects
        .par_iter()
        .enumerate()
        .map(|(index, object)| object_references(narrower, live, index, object))
        .collect();
    let mut references = Vec::new();
    let mut vtable_entries = Vec::new();
    for (object_references, object_vtable_entries) in per_object {
        references.extend(object_references);
        vtable_entries.extend(object_vtable_entries);
    }
    (references, vtable_entries)
}

/// [`references_from_data`] of object `index`.
fn object_references<'data>(
    narrower: &Narrower<'_, '_>,
    live: Option<&[Vec<bool>]>,
    index: usize,
    object: &crate::load::program::LoadedObject<'data>,
) -> (Vec<DataReference>, Vec<VtableEntry<'data>>) {
    let mut references = Vec::new();
    let mut vtable_entries = Vec::new();
    let id = ObjectId(index as u32);
    for (section_index, section) in object.object.sections.iter().enumerate() {
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
        let other_data = !section.is_read_only_data() || dropped;
        let vtables = VtableSpans::of(&object.object, object.section_symbols.get(from));
        for reloc in &section.relocs {
            let in_vtable = vtables.contains(reloc.offset);
            if (!other_data && !in_vtable)
                || (section.is_executable()
                    && icf_arch::of(object.object.arch).is_direct_branch(reloc.r_type))
            {
                continue;
            }
            let symbol = object.symbol_refs[reloc.symbol.index()];
            // Past the field, whichever object defines the symbol.
            let addend = symbol
                .base
                .wrapping_add(reloc.addend)
                .wrapping_add(object.object.field_end(from, reloc));
            let place = resolved_place(object, from, reloc, addend);
            let (target, _) = narrower.narrow(symbol.target, addend, place, Reach::Data);
            let Some(candidate) = narrower.targets_candidate(target) else {
                continue;
            };
            if other_data {
                references.push(DataReference {
                    candidate,
                    object: id,
                    section: from,
                });
            }
            if in_vtable {
                let named = object.object.symbol(reloc.symbol);
                let through = if named.kind == icf_object::SymbolKind::Section {
                    VtableName::Section
                } else if named.binding == icf_object::Binding::Local {
                    VtableName::Local(id, named.name)
                } else {
                    VtableName::Global(named.name)
                };
                vtable_entries.push(VtableEntry { candidate, through });
            }
        }
    }
    (references, vtable_entries)
}

/// A vtable entry that points to a candidate.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct VtableEntry<'data> {
    /// The candidate it points to.
    pub candidate: CandidateId,
    /// How it names it.
    pub through: VtableName<'data>,
}

/// The symbol a vtable entry goes through.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum VtableName<'data> {
    Global(&'data [u8]),
    /// A local symbol, of the object holding the vtable.
    Local(ObjectId, &'data [u8]),
    /// The section symbol: the entry names no function.
    Section,
}

/// Where a section's C++ vtables (`_ZTV`, and construction vtables `_ZTC`)
/// lie, to tell whether one holds a reference. A function a vtable points
/// to is virtual, and C++ gives no way to
/// compare a virtual function's address (a pointer to a virtual member holds
/// its vtable slot; a speculative devirtualization that compares a vtable
/// slot with it runs the same code either way): clang marks virtual
/// functions `unnamed_addr`, which keeps them out of `.llvm_addrsig`
/// whatever their uses.
pub(crate) struct VtableSpans(Vec<(u64, u64)>);

impl VtableSpans {
    /// The vtables among a section's `symbols` (sorted by value): each
    /// start, with the farthest end of the vtables starting at or before
    /// it, so that one binary search answers (a linked image holds every
    /// vtable of a program in one section).
    pub(crate) fn of(
        elf: &icf_object::Object<'_>,
        symbols: &[(u64, u64, icf_object::SymbolIndex)],
    ) -> VtableSpans {
        let mut reach = 0;
        VtableSpans(
            symbols
                .iter()
                .filter(|&&(_, _, index)| is_vtable_name(elf.symbol(index).name))
                .map(|&(value, size, _)| {
                    reach = reach.max(value.saturating_add(size));
                    (value, reach)
                })
                .collect(),
        )
    }

    /// Whether `offset` lies in one of the vtables.
    pub(crate) fn contains(&self, offset: u64) -> bool {
        let after = self.0.partition_point(|&(value, _)| value <= offset);
        after > 0 && offset < self.0[after - 1].1
    }
}

/// An Itanium C++ ABI vtable or construction vtable name.
pub(crate) fn is_vtable_name(name: &[u8]) -> bool {
    name.starts_with(b"_ZTV") || name.starts_with(b"_ZTC")
}
