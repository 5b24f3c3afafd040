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
use icf_object::{Binding, GroupIndex, Object, Reloc, SectionIndex, SymbolPlace, Visibility};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

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
    let mut marking = Marking::new(program);
    marking.mark_named_roots(program, roots);
    let export_all = program.options.shared || roots.export_dynamic;
    marking.mark_kept_and_exported(program, export_all);
    let dependants = dependants(program);
    let instances = comdat_group_instances(program);
    marking.follow(program, &dependants, &instances, folded);
    marking.live
}

/// Per object, per section: the sections that live only with it.
type Dependants = Vec<Vec<Vec<SectionIndex>>>;

/// Every loaded instance of each COMDAT group, by signature: the object and
/// the group's index in it.
type GroupInstances<'p> = HashMap<&'p [u8], Vec<(ObjectId, GroupIndex)>>;

/// The sections found live so far, and those of them still to follow.
#[derive(Debug)]
struct Marking {
    /// Per object, per section: whether it is live.
    live: Vec<Vec<bool>>,
    /// Live sections whose dependants, COMDAT siblings and relocation
    /// targets are still to mark.
    work: Vec<(ObjectId, SectionIndex)>,
}

impl Marking {
    /// Every section of `program` dead, nothing to follow.
    fn new(program: &Program<'_>) -> Marking {
        Marking {
            live: program
                .objects
                .iter()
                .map(|o| vec![false; o.object.sections.len()])
                .collect(),
            work: Vec::new(),
        }
    }

    /// Marks `section` of `object` live and to follow, unless it already is.
    fn mark(&mut self, object: ObjectId, section: SectionIndex) {
        if let Some(flag) = self.live[object.index()].get_mut(section.index())
            && !*flag
        {
            *flag = true;
            self.work.push((object, section));
        }
    }

    /// Marks the sections that define the roots named by symbol: the entry
    /// and `-u` symbols, `main` (`_main`, ld64's default entry, on Mach-O),
    /// `_init` and `_fini`, as the link resolves them.
    fn mark_named_roots(&mut self, program: &Program<'_>, roots: &GcRoots) {
        let root_names: Vec<&[u8]> = roots
            .symbols
            .iter()
            .map(|s| s.as_bytes())
            .chain([&b"main"[..], b"_main", b"_init", b"_fini"])
            .collect();
        for &name in &root_names {
            if let Some((object, symbol)) = program.definitions.winner(name)
                && let Some(section) = program.object(object).object.symbol(symbol).section()
            {
                self.mark(object, section);
            }
        }
    }

    /// Marks, in each loaded object, the sections a linker keeps whatever
    /// refers to them ([`is_root_section`]) and, when `export_all`, those
    /// that define a default-visibility global.
    fn mark_kept_and_exported(&mut self, program: &Program<'_>, export_all: bool) {
        for (index, object) in program.objects.iter().enumerate() {
            if !object.loaded {
                continue;
            }
            let id = ObjectId(index as u32);
            for (section_index, section) in object.object.sections.iter().enumerate() {
                let delimited = object
                    .object
                    .may_be_delimited(SectionIndex(section_index as u32));
                if is_root_section(section, delimited) {
                    self.mark(id, SectionIndex(section_index as u32));
                }
            }
            if export_all {
                for symbol in &object.object.symbols {
                    if symbol.binding != Binding::Local
                        && symbol.visibility == Visibility::Default
                        && let Some(section) = symbol.section()
                    {
                        self.mark(id, section);
                    }
                }
            }
        }
    }

    /// Follows each live section until none is left: its dependants, its
    /// siblings in the other instances of its COMDAT group and the targets
    /// of its relocations live too.
    fn follow<'p>(
        &mut self,
        program: &'p Program<'_>,
        dependants: &Dependants,
        instances: &GroupInstances<'p>,
        folded: &Folded,
    ) {
        // A (signature, section name) is spread to every instance once: each
        // instance it reaches would otherwise spread it again to all the others.
        let mut spread: HashSet<(&[u8], &[u8])> = HashSet::default();
        while let Some((object, section)) = self.work.pop() {
            if let Some(&(kept_object, kept)) = folded.get(&(object, section)) {
                self.mark(kept_object, kept);
                continue;
            }
            for &dependant in &dependants[object.index()][section.index()] {
                self.mark(object, dependant);
            }
            self.spread_to_instances(program, instances, &mut spread, object, section);
            self.mark_relocation_targets(program, object, section);
        }
    }

    /// Marks the sections named as `section` in every other loaded instance
    /// of its COMDAT group: the link keeps one instance, but which one
    /// matters to folding (see `plan::ComdatInstances`). Once per signature
    /// and section name (`spread`).
    fn spread_to_instances<'p>(
        &mut self,
        program: &'p Program<'_>,
        instances: &GroupInstances<'p>,
        spread: &mut HashSet<(&'p [u8], &'p [u8])>,
        object: ObjectId,
        section: SectionIndex,
    ) {
        let elf = &program.object(object).object;
        let this = elf.section(section);
        if let Some(group) = this.group.map(|g| elf.group(g))
            && group.is_comdat
            && let signature = elf.symbol(group.signature).name
            && spread.insert((signature, this.name))
        {
            for &(other, other_group) in instances.get(signature).into_iter().flatten() {
                let other_elf = &program.object(other).object;
                let sibling = other_elf
                    .group(other_group)
                    .members
                    .iter()
                    .copied()
                    .find(|&m| other_elf.section(m).name == this.name);
                if let Some(sibling) = sibling {
                    self.mark(other, sibling);
                }
            }
        }
    }

    /// Marks the section each relocation of `section` reaches. A section
    /// the program does not load (debug information) keeps nothing alive
    /// (linkers point its references to dropped sections at a tombstone),
    /// and the reader leaves its relocations unread (`relocs_deferred`).
    fn mark_relocation_targets(
        &mut self,
        program: &Program<'_>,
        object: ObjectId,
        section: SectionIndex,
    ) {
        let loaded = program.object(object);
        for reloc in &loaded.object.section(section).relocs {
            if let Some((o, s)) = relocation_target(program, loaded, reloc) {
                self.mark(o, s);
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
    let mut dependants: Dependants = program
        .objects
        .iter()
        .map(|o| vec![Vec::new(); o.object.sections.len()])
        .collect();
    for (index, object) in program.objects.iter().enumerate() {
        if !object.loaded {
            continue;
        }
        add_link_order_dependants(&object.object, &mut dependants[index]);
        add_unwind_dependants(&object.object, &mut dependants[index]);
    }
    dependants
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

/// Every loaded instance of each COMDAT group, by signature: the link keeps
/// one, but which one matters to folding (see `plan::ComdatInstances`), so
/// a section lives in all instances as soon as it lives in one.
fn comdat_group_instances<'p>(program: &'p Program<'_>) -> GroupInstances<'p> {
    let mut instances: GroupInstances<'p> = HashMap::default();
    for (index, object) in program.objects.iter().enumerate() {
        if !object.loaded {
            continue;
        }
        for (group_index, group) in object.object.groups.iter().enumerate() {
            if group.is_comdat {
                let name = object.object.symbol(group.signature).name;
                instances
                    .entry(name)
                    .or_default()
                    .push((ObjectId(index as u32), GroupIndex(group_index as u32)));
            }
        }
    }
    instances
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
