//! Which sections a `--gc-sections` link keeps, as far as icf can tell: the
//! sections reachable through relocations from the linker's roots. Code the
//! link drops is not worth lifting, comparing or rewriting.
//!
//! Roots, as lld and GNU ld take them: the entry and `-u` symbols, `main`
//! (the C runtime's start files, which icf does not see, call it), every
//! exported symbol in a `-shared` or `--export-dynamic` link, sections the
//! default linker scripts keep (`.init_array`, `.ctors`, `.init`, notes...),
//! `SHF_GNU_RETAIN` sections, and sections named like C identifiers (reached
//! through `__start_`/`__stop_` symbols). A live function keeps its
//! exception table and personality (through its FDE) and its
//! `SHF_LINK_ORDER` dependants. A live section of a COMDAT group lives in
//! every loaded instance of the group: the link discards all but one, but
//! folding needs to know them all.
//!
//! Main assumption: this is a guess, and a guess may err both ways. A root
//! icf misses (a symbol a shared library references, say) makes live code
//! look dead. That only costs folds, because the analysis treats every
//! reference from code it did not lift as an address use (see
//! `data_uses::references_from_data`), so no address that code may compare
//! gets folded away.

use crate::load::program::{GcRoots, LoadedObject, ObjectId, Program};
use crate::load::targets::Target;
use icf_object::{Binding, Object, Reloc, SectionIndex, SymbolPlace, Visibility};
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Per loaded object, per section: whether the link may keep it. Objects
/// the link does not load have every section dead.
pub fn live_sections(program: &Program<'_>, roots: &GcRoots) -> Vec<Vec<bool>> {
    live_sections_folded(program, roots, &HashMap::default())
}

/// A folded section and where its references go instead of its own
/// relocations: the kept copy it became an alias or a thunk of.
pub type Folded = HashMap<(ObjectId, SectionIndex), (ObjectId, SectionIndex)>;

/// [`live_sections`] in the link of the folded objects: a section of
/// `folded` reached keeps only its kept copy alive (an alias is the kept
/// copy; a thunk jumps there), not what its own body referred to.
pub fn live_sections_folded(
    program: &Program<'_>,
    roots: &GcRoots,
    folded: &Folded,
) -> Vec<Vec<bool>> {
    let dependants = dependants(program);
    let marking = Marking::new(program);
    let mut work = marking.mark_named_roots(program, roots);
    let export_all = program.options.shared || roots.export_dynamic;
    work.extend(marking.mark_kept_and_exported(program, export_all));
    marking.follow(program, &dependants, folded, work);
    marking
        .live
        .into_iter()
        .map(|flags| flags.into_iter().map(AtomicBool::into_inner).collect())
        .collect()
}

/// Per object, per section: the sections that live only with it.
type Dependants = Vec<Vec<Vec<SectionIndex>>>;

/// A section of an object.
type Place = (ObjectId, SectionIndex);

/// The sections found live so far. The walk goes one level at a time,
/// each level's sections followed in parallel: a section is followed by
/// whichever thread marks it first, and the sections live at the end are
/// the same in any order (the closure of the roots).
#[derive(Debug)]
struct Marking {
    /// Per object, per section: whether it is live.
    live: Vec<Vec<AtomicBool>>,
}

impl Marking {
    /// Every section of `program` dead.
    fn new(program: &Program<'_>) -> Marking {
        Marking {
            live: program
                .objects
                .iter()
                .map(|o| {
                    (0..o.object.sections.len())
                        .map(|_| AtomicBool::new(false))
                        .collect()
                })
                .collect(),
        }
    }

    /// Marks `section` of `object` live; says whether this call did (the
    /// caller then follows it).
    fn mark(&self, (object, section): Place) -> bool {
        self.live[object.index()]
            .get(section.index())
            .is_some_and(|flag| {
                !flag.load(Ordering::Relaxed) && !flag.swap(true, Ordering::Relaxed)
            })
    }

    /// Marks the sections that define the roots named by symbol: the entry
    /// and `-u` symbols, `main` (`_main`, ld64's default entry, on Mach-O),
    /// `_init` and `_fini`, as the link resolves them. Gives those it marked.
    fn mark_named_roots(&self, program: &Program<'_>, roots: &GcRoots) -> Vec<Place> {
        let root_names: Vec<&[u8]> = roots
            .symbols
            .iter()
            .map(|s| s.as_bytes())
            .chain([&b"main"[..], b"_main", b"_init", b"_fini"])
            .collect();
        let mut marked = Vec::new();
        for &name in &root_names {
            if let Some((object, symbol)) = program.definitions.winner(name)
                && let Some(section) = program.object(object).object.symbol(symbol).section()
                && self.mark((object, section))
            {
                marked.push((object, section));
            }
        }
        marked
    }

    /// Marks, in each loaded object, the sections a linker keeps whatever
    /// refers to them ([`is_root_section`]) and, when `export_all`, those
    /// that define a default-visibility global. Gives those it marked.
    fn mark_kept_and_exported(&self, program: &Program<'_>, export_all: bool) -> Vec<Place> {
        program
            .objects
            .par_iter()
            .enumerate()
            .filter(|(_, object)| object.loaded)
            .flat_map_iter(|(index, object)| {
                let id = ObjectId(index as u32);
                let mut marked = Vec::new();
                let mut mark = |section: SectionIndex| {
                    if self.mark((id, section)) {
                        marked.push((id, section));
                    }
                };
                for (section_index, section) in object.object.sections.iter().enumerate() {
                    let delimited = object
                        .object
                        .may_be_delimited(SectionIndex(section_index as u32));
                    if is_root_section(section, delimited) {
                        mark(SectionIndex(section_index as u32));
                    }
                }
                if export_all {
                    for symbol in &object.object.symbols {
                        if symbol.binding != Binding::Local
                            && symbol.visibility == Visibility::Default
                            && let Some(section) = symbol.section()
                        {
                            mark(section);
                        }
                    }
                }
                marked
            })
            .collect()
    }

    /// Follows each live section until none is left: its dependants, its
    /// siblings in the other instances of its COMDAT group and the targets
    /// of its relocations live too. `level` holds the sections marked and
    /// not yet followed.
    fn follow(
        &self,
        program: &Program<'_>,
        dependants: &Dependants,
        folded: &Folded,
        mut level: Vec<Place>,
    ) {
        // A (signature, section name) is spread to every instance once: each
        // instance it reaches would otherwise spread it again to all the others.
        let spread: Mutex<HashSet<(u32, u128)>> = Mutex::default();
        while !level.is_empty() {
            level = level
                .par_iter()
                .flat_map_iter(|&(object, section)| {
                    let mut marked = Vec::new();
                    let mut mark = |place: Place| {
                        if self.mark(place) {
                            marked.push(place);
                        }
                    };
                    if let Some(&kept) = folded.get(&(object, section)) {
                        mark(kept);
                        return marked;
                    }
                    for &dependant in &dependants[object.index()][section.index()] {
                        mark((object, dependant));
                    }
                    spread_to_instances(program, &spread, object, section, &mut mark);
                    // The targets of its relocations. A section the program
                    // does not load (debug information) keeps nothing alive
                    // (linkers point its references to dropped sections at a
                    // tombstone), and the reader leaves its relocations
                    // unread (`relocs_deferred`).
                    let loaded = program.object(object);
                    for reloc in &loaded.object.section(section).relocs {
                        if let Some(target) = relocation_target(program, loaded, reloc) {
                            mark(target);
                        }
                    }
                    marked
                })
                .collect();
        }
    }
}

/// Marks the sections named as `section` in every other loaded instance
/// of its COMDAT group: the link keeps one instance, but which one matters
/// to folding (see `analyse/comdat.rs`). Once per signature and
/// section name (`spread`).
fn spread_to_instances(
    program: &Program<'_>,
    spread: &Mutex<HashSet<(u32, u128)>>,
    object: ObjectId,
    section: SectionIndex,
    mark: &mut impl FnMut(Place),
) {
    let loaded = program.object(object);
    let name = loaded.object.section_name_fingerprint(section);
    let groups = &program.comdat_groups;
    if let Some(signature) = groups.of_section(loaded, object, section)
        && spread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((signature, name))
    {
        for &(other, other_group) in groups.instances(signature) {
            let other_elf = &program.object(other).object;
            let sibling = other_elf.group(other_group).member_named(name);
            if let Some(sibling) = sibling {
                mark((other, sibling));
            }
        }
    }
}

/// The section a relocation of `loaded` reaches. Loading resolved every
/// symbol; only names it left to the dynamic linker (an ifunc, an
/// interposable export) are looked up.
fn relocation_target(
    program: &Program<'_>,
    loaded: &LoadedObject<'_>,
    reloc: &Reloc,
) -> Option<(ObjectId, SectionIndex)> {
    let resolved = loaded
        .symbol_refs
        .get(reloc.symbol.index())
        .map(|r| program.targets.get(r.target));
    match resolved {
        Some(Target::Section { object, section }) => Some((object, section)),
        Some(Target::Symbol { name }) => program.definitions.winner(name).and_then(|(o, s)| {
            let defined = program.object(o).object.symbol(s);
            match defined.place {
                SymbolPlace::Section(section) => Some((o, section)),
                _ => None,
            }
        }),
        _ => None,
    }
}

/// Sections that live only with another one, per loaded object: its
/// `SHF_LINK_ORDER` dependants, and the LSDA and personality an FDE gives
/// a function.
fn dependants(program: &Program<'_>) -> Dependants {
    program
        .objects
        .par_iter()
        .map(|object| {
            let mut dependants = vec![Vec::new(); object.object.sections.len()];
            if object.loaded {
                add_link_order_dependants(&object.object, &mut dependants);
                add_unwind_dependants(&object.object, &mut dependants);
            }
            dependants
        })
        .collect()
}

/// Adds each `SHF_LINK_ORDER` section of `elf` to the dependants of the
/// section it links to.
fn add_link_order_dependants(elf: &Object<'_>, dependants: &mut [Vec<SectionIndex>]) {
    for (section_index, section) in elf.sections.iter().enumerate() {
        if let Some(linked) = section.linked_section()
            && let Some(list) = dependants.get_mut(linked.index())
        {
            list.push(SectionIndex(section_index as u32));
        }
    }
}

/// Adds to each function of `elf` with an FDE the sections its unwind
/// information refers to: its LSDA and its CIE's personality.
fn add_unwind_dependants(elf: &Object<'_>, dependants: &mut [Vec<SectionIndex>]) {
    let Some((eh_frame, fdes)) = &elf.eh_frame else {
        return;
    };
    let relocs = &elf.section(*eh_frame).relocs;
    for fde in fdes {
        let Some(function) = fde
            .pc_begin
            .and_then(|r| elf.symbol(relocs[r.index()].symbol).section())
        else {
            continue;
        };
        // Relocations are sorted by offset: the CIE's are one run.
        let cie_start = relocs.partition_point(|r| r.offset < fde.cie_offset);
        let cie_relocs = relocs[cie_start..]
            .iter()
            .take_while(|r| r.offset < fde.cie_offset + fde.cie_size);
        for reloc in fde
            .lsda
            .map(|r| &relocs[r.index()])
            .into_iter()
            .chain(cie_relocs)
        {
            if let Some(section) = elf.symbol(reloc.symbol).section()
                && let Some(list) = dependants.get_mut(function.index())
            {
                list.push(section);
            }
        }
    }
}

/// Sections a linker keeps whatever refers to them.
fn is_root_section(section: &icf_object::Section<'_>, may_be_delimited: bool) -> bool {
    if !section.is_alloc() {
        return false;
    }
    if section.is_note() || section.is_init_or_fini_array() || section.is_retained() {
        return true;
    }
    let name = section.name;
    const KEPT: [&[u8]; 9] = [
        b".init_array",
        b".fini_array",
        b".preinit_array",
        b".ctors",
        b".dtors",
        b".init",
        b".fini",
        b".jcr",
        b".note",
    ];
    if KEPT.iter().any(|kept| {
        name == *kept || (name.starts_with(kept) && name.get(kept.len()) == Some(&b'.'))
    }) {
        return true;
    }
    // Reached through __start_NAME / __stop_NAME.
    may_be_delimited
}
