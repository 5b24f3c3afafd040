//! Phase 3 of the analysis, beside the keys: what must be equal besides a
//! candidate's body, interned as numbers for `icf-fold`: its kind, the
//! output section the link puts it in, its unwind description (CIE and FDE
//! contents, with its personality and LSDA as references) and whether its
//! layout matters.

use crate::analyse::candidates::{CandidateInfo, map_by_object};
use crate::analyse::narrow::{Narrower, Reach};
use crate::load::program::{ObjectId, Program};
use icf_fold::body::Body;
use icf_fold::{Attrs, Kind};
use icf_ir::{Ref, RefKind, Use};
use icf_object::{Object, SectionIndex};
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::borrow::Cow;

/// Interns what must be equal besides the body: kind, output-section class,
/// unwind description with its personality and LSDA, layout sensitivity.
/// Each candidate's description is made in parallel; numbering them is not.
pub(crate) fn attributes(
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
            let elf = &object.object;
            let Some((eh_frame, fdes)) = &elf.eh_frame else {
                return Vec::new();
            };
            let mut described: Vec<_> = fdes
                .iter()
                .filter_map(|fde| {
                    let reloc = elf.section(*eh_frame).reloc(fde.pc_begin?);
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
            let (eh_frame, _) = object.object.eh_frame.as_ref()?;
            Some(Box::new(unwind_description(
                &object.object,
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
            let section_class = *class_ids.entry(class).or_insert_with_key(|class| {
                section_classes.push(String::from_utf8_lossy(class).into_owned());
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

/// The CIE and FDE bytes of an unwind description, as compared
/// ([`icf_object::Fde::description`]), by their XXH3-128 fingerprint (as
/// identical function copies share a key by theirs, `lift_memo.rs`): the
/// bytes live only while they are hashed, on the thread that reads them,
/// and numbering the descriptions compares 16 bytes each.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
struct UnwindKey(u128);

impl UnwindKey {
    fn of(cie: &[u8], fde: &[u8]) -> UnwindKey {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for part in [cie, fde] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        UnwindKey(hasher.digest128())
    }
}

/// The unwind description of a function: the CIE and FDE bytes compared
/// ([`icf_object::Fde::description`]), and the references they hold
/// (personality in the CIE, LSDA in the FDE) narrowed like operands.
fn unwind_description(
    elf: &Object<'_>,
    eh_frame: SectionIndex,
    fde: &icf_object::Fde,
    narrower: &Narrower<'_, '_>,
    object: ObjectId,
) -> (UnwindKey, SmallVec<[Ref; 2]>) {
    let section = elf.section(eh_frame);
    let loaded = narrower.program.object(object);
    let refs = fde
        .references(section)
        .map(|index| {
            let reloc = section.reloc(index);
            let symbol = loaded.symbol_refs[reloc.symbol.index()];
            let addend = symbol.base.wrapping_add(reloc.addend);
            let (target, addend) = narrower.narrow(symbol.target, addend, addend, Reach::Unwind);
            Ref {
                target,
                addend,
                kind: RefKind(reloc.r_type),
                use_: Use::Access,
            }
        })
        .collect();
    let (cie, fde) = fde.description(section);
    (UnwindKey::of(&cie, &fde), refs)
}

/// The output section the link puts a candidate's input section in: where
/// the command's linker scripts say, else by the linker's default rules
/// ([`output_section_class`]). When icf cannot read the scripts, each
/// input section is a class of its own, so nothing folds across sections.
fn placed_class<'a>(program: &'a Program<'_>, candidate: &CandidateInfo) -> Cow<'a, [u8]> {
    let object = program.object(candidate.object);
    let name = object.object.section(candidate.section).name;
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
        .object
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
