//! From a fold plan to rewritten files.
//!
//! Each class with something to fold gets one hidden global alias on the
//! kept copy (`__icf.<hash>`), which nothing can interpose: aliases and
//! thunks in other objects reach the kept body through it, never through a
//! symbol the linker or loader could replace. A member in the kept copy's own
//! object moves its symbols onto the kept section; a member elsewhere (local
//! symbols only, the planner sees to that) is reached through an undefined
//! reference to the alias. Objects without edits are copied unchanged;
//! archives are rewritten only when a member changed. Outputs are written to
//! a temporary name and renamed, so a failure never leaves half a file;
//! their unchanged bytes go from input to output in the kernel (`output.rs`).

mod output;

use crate::analyse::analysis::Analysis;
use crate::analyse::analysis::Plan;
use crate::analyse::candidates::CandidateInfo;
use crate::analyse::comdat::ComdatInstances;
use crate::load::program::{ObjectId, Program};
use anyhow::Context;
use icf_fold::CandidateId;
use icf_fold::plan::{Action, ClassPlan, KeepReason};
use icf_ir::Arch;
use icf_object::{
    Binding, Destination, Edits, NewContents, NewReloc, NewSymbol, SectionIndex, SymbolKind,
    SymbolRef, Visibility,
};
use output::OutputFile;
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// One written output.
#[derive(Clone, Debug)]
pub struct FoldedFile {
    pub input: PathBuf,
    pub output: PathBuf,
    /// Whether any byte differs from the input.
    pub changed: bool,
    /// Where icf's cache keeps the output, when it does.
    pub cached: Option<icf_cache::Key>,
}

impl Analysis<'_, '_> {
    /// The edits `plan` makes to each object.
    pub fn object_edits(&self, plan: &Plan) -> HashMap<ObjectId, Edits> {
        let mut edits = EditsBuilder::default();
        let groups = self.comdat_instances();
        // The edits name the symbols they move and make, which lie all over
        // the inputs' string tables: their pages go back as the classes are
        // edited (in input order, as classes are numbered by their first
        // member), not all kept until the files are written.
        let folding: Vec<&ClassPlan> = plan.classes.iter().filter(|c| folds_anything(c)).collect();
        crate::memory::for_each_releasing_inputs(
            self.program.inputs,
            &folding,
            |class| match class.identity {
                Some(identity) => {
                    let name = &plan.identity_names[identity.0 as usize];
                    self.fold_through_identity(class, name, &groups, &mut edits);
                }
                None => self.fold_onto_kept_copy(class, &groups, &mut edits),
            },
        );
        let mut edits = edits.edits;
        self.keep_exports_alive(plan, &mut edits);
        edits
    }

    /// Marks the exported symbols a `-dead_strip` link of the folded Mach-O
    /// objects would drop though the plain link keeps them
    /// ([`icf_object::Edits::keep_alive`]). ld64 exports every global of an
    /// executable but roots none of them: one the plain link keeps only
    /// because a function that folds away calls it (`leaf_b`, called by
    /// `caller_b` alone, where `caller_b` becomes `caller_a`) would leave
    /// the export trie, which another image can see. ELF links root what
    /// they export, so nothing is marked there.
    fn keep_exports_alive(&self, plan: &Plan, edits: &mut HashMap<ObjectId, Edits>) {
        let program = self.program;
        let (Some(live), Some(roots)) = (&self.live, &program.options.gc_sections) else {
            return;
        };
        let macho = program
            .objects
            .iter()
            .any(|o| o.object.format == icf_object::Format::MachO);
        if !macho || program.options.exports.is_empty() {
            return;
        }
        // Where each folded section's references go, and which of them keep
        // no symbols of their own (aliases: their symbols move to the kept
        // copy; a thunk keeps its symbols and lives only if reached).
        let mut folded: crate::load::live::Folded = HashMap::default();
        let mut aliased: HashSet<(ObjectId, SectionIndex)> = HashSet::default();
        for class in &plan.classes {
            let kept = &self.candidates[class.kept.index()];
            for decision in &class.decisions {
                if matches!(decision.action, Action::Alias | Action::Thunk(_)) {
                    let member = &self.candidates[decision.candidate.index()];
                    let place = (member.object, member.section);
                    folded.insert(place, (kept.object, kept.section));
                    if decision.action == Action::Alias {
                        aliased.insert(place);
                    }
                }
            }
        }
        if folded.is_empty() {
            return;
        }
        let after = crate::load::live::live_sections_folded(program, roots, &folded);
        let exports = program.options.exports.index();
        for (index, object) in program.objects.iter().enumerate() {
            if object.object.format != icf_object::Format::MachO {
                continue;
            }
            let id = ObjectId(index as u32);
            for (symbol_index, symbol) in object.object.symbols.iter().enumerate() {
                let Some(section) = symbol.section() else {
                    continue;
                };
                let exported = symbol.binding != Binding::Local
                    && symbol.visibility == Visibility::Default
                    && exports.exports(symbol.name);
                if !exported || !live[index].get(section.index()).copied().unwrap_or(false) {
                    continue;
                }
                let (object_after, section_after) = match folded.get(&(id, section)) {
                    Some(&kept) if aliased.contains(&(id, section)) => kept,
                    _ => (id, section),
                };
                if !after[object_after.index()][section_after.index()] {
                    edits
                        .entry(id)
                        .or_default()
                        .keep_alive
                        .insert(icf_object::SymbolIndex(symbol_index as u32));
                }
            }
        }
    }

    /// Edits for a class folded onto its kept copy: the kept copy's hidden
    /// alias, each aliased member moved onto the kept copy or (from another
    /// object) to the alias, each thunk member's body replaced by a jump to
    /// the alias, and the kept copy aligned as the most aligned member.
    fn fold_onto_kept_copy(
        &self,
        class: &ClassPlan,
        groups: &ComdatInstances,
        edits: &mut EditsBuilder,
    ) {
        let kept = &self.candidates[class.kept.index()];
        let alias = self.alias_name(class.kept);
        let floating = groups.floating(self, class.kept).is_some();
        let kind = if kept.is_code() {
            SymbolKind::Func
        } else {
            SymbolKind::Object
        };
        let defined_in = self.alias_definitions(class.kept, groups, floating);
        edits.define_alias(&alias, &defined_in, kept.size(), kind);
        let kept_elf = &self.program.object(kept.object).object;
        // The kept copy takes the largest alignment of its class.
        let mut align = kept_elf.section(kept.section).align;
        let mut defined = self.names_defined_with_kept_copy(class, floating);
        for decision in &class.decisions {
            let member = &self.candidates[decision.candidate.index()];
            let elf = &self.program.object(member.object).object;
            match decision.action {
                Action::Alias => {
                    align = align.max(elf.section(member.section).align);
                    let destination = if member.object == kept.object && !floating {
                        Destination::Local {
                            section: kept.section,
                            start: kept.start,
                            size: kept.size(),
                        }
                    } else {
                        self.move_global_symbols(decision.candidate, kept, &mut defined, edits);
                        Destination::External {
                            symbol: edits.alias_symbol(member.object, &alias),
                            size: kept.size(),
                        }
                    };
                    edits
                        .of(member.object)
                        .moved
                        .insert(member.section, destination);
                }
                Action::Thunk(ref reason) => {
                    self.replace_with_thunk(decision.candidate, &alias, reason, edits)
                }
                Action::Kept | Action::Keep(_) => {}
            }
        }
        self.raise_kept_alignment(kept, align, edits);
    }

    /// Where the alias of `kept` is defined, per object: on the kept copy,
    /// and when it floats with a COMDAT group of several instances, on each
    /// of them (the planner made sure they are all in this class):
    /// whichever the link keeps defines it, and the discarded ones take
    /// their definition along.
    fn alias_definitions(
        &self,
        kept: CandidateId,
        groups: &ComdatInstances,
        floating: bool,
    ) -> HashMap<ObjectId, (SectionIndex, u64)> {
        let info = &self.candidates[kept.index()];
        let mut defined_in: HashMap<ObjectId, (SectionIndex, u64)> = HashMap::default();
        defined_in.insert(info.object, (info.section, info.start));
        if floating && let Some((_, instances)) = groups.instances_of(self, kept) {
            for &(object, group) in instances {
                if let Some(other) = groups.instance_section(self, info, (object, group)) {
                    let other = &self.candidates[other.index()];
                    defined_in
                        .entry(object)
                        .or_insert((other.section, other.start));
                }
            }
        }
        defined_in
    }

    /// Global names the kept copy's object defines for `class` to begin
    /// with: aliased members there keep theirs on the kept section (none
    /// when the kept copy floats). Names moved in from elsewhere join them
    /// (see [`Analysis::move_global_symbols`]).
    fn names_defined_with_kept_copy(&self, class: &ClassPlan, floating: bool) -> HashSet<&[u8]> {
        let kept = &self.candidates[class.kept.index()];
        let kept_elf = &self.program.object(kept.object).object;
        let mut defined: HashSet<&[u8]> = HashSet::default();
        for decision in &class.decisions {
            let member = &self.candidates[decision.candidate.index()];
            if decision.action == Action::Alias && member.object == kept.object && !floating {
                defined.extend(
                    self.global_symbols(decision.candidate)
                        .into_iter()
                        .map(|s| kept_elf.symbol(s).name),
                );
            }
        }
        defined
    }

    /// Defines the global names of `member`, aliased from another object,
    /// on the kept copy in its object: global symbols move with the body
    /// (the planner checked they may). Each name is defined once (`defined`
    /// holds those defined there): every instance of a COMDAT group brings
    /// the same ones.
    fn move_global_symbols<'s>(
        &'s self,
        member: CandidateId,
        kept: &CandidateInfo,
        defined: &mut HashSet<&'s [u8]>,
        edits: &mut EditsBuilder,
    ) {
        let info = &self.candidates[member.index()];
        let elf = &self.program.object(info.object).object;
        let from_group = elf.section(info.section).group.is_some();
        for index in self.global_symbols(member) {
            let symbol = elf.symbol(index);
            if !defined.insert(symbol.name) {
                continue;
            }
            let offset = symbol.value.saturating_sub(info.start);
            let size = if offset == 0 {
                kept.size()
            } else {
                symbol.size
            };
            edits.of(kept.object).new_symbols.push(NewSymbol {
                name: symbol.name.to_vec(),
                definition: Some((kept.section, kept.start + offset)),
                size,
                // A name a COMDAT group defined stays weak: an
                // instance left as a thunk may define it too.
                binding: if from_group {
                    Binding::Weak
                } else {
                    symbol.binding
                },
                kind: symbol.kind,
                visibility: symbol.visibility,
                flags: symbol.flags(),
            });
        }
    }

    /// Replaces the body of `member` (a whole section) with a thunk that
    /// jumps to `alias`, aligned as the function was unless `reason` is a
    /// thunk planted without its alignment (`--plant-fold`).
    fn replace_with_thunk(
        &self,
        member: CandidateId,
        alias: &str,
        reason: &KeepReason,
        edits: &mut EditsBuilder,
    ) {
        let info = &self.candidates[member.index()];
        let elf = &self.program.object(info.object).object;
        let symbol = SymbolRef::New(edits.alias_symbol(info.object, alias));
        let align = match reason {
            KeepReason::Planted {
                keep_alignment: false,
            } => 1,
            _ => elf.section(info.section).align,
        };
        let thunk = thunk(elf.arch, elf.feature_1_and & 1 != 0, symbol, align);
        edits.of(info.object).replaced.insert(info.section, thunk);
    }

    /// Raises the alignment of the kept copy's section to `align`, its
    /// class's largest, where the copy is the whole section and `align` is
    /// more than the section's.
    fn raise_kept_alignment(&self, kept: &CandidateInfo, align: u64, edits: &mut EditsBuilder) {
        let section = self
            .program
            .object(kept.object)
            .object
            .section(kept.section);
        let whole_section = kept.start == 0 && kept.end == section.size;
        if whole_section && align > section.align {
            edits.of(kept.object).align.insert(kept.section, align);
        }
    }

    /// Edits for a class whose kept copy floats with a COMDAT group whose
    /// instances differ (see `icf_fold::plan`): every loaded instance of the
    /// kept copy's function gets a hidden alias named after its identity,
    /// and thunks jump to it, so they reach whichever instance the link
    /// keeps. The name is new: only loaded objects define it, so it can make
    /// the link load nothing, and a wrong guess fails the link loudly.
    fn fold_through_identity(
        &self,
        class: &ClassPlan,
        key: &[u8],
        groups: &ComdatInstances,
        edits: &mut EditsBuilder,
    ) {
        let kept = &self.candidates[class.kept.index()];
        let alias = format!(
            "__icf.odr.{:016x}",
            crate::names::fnv1a(key.iter().copied())
        );
        let instances = groups
            .instances_of(self, class.kept)
            .map_or(&[][..], |(_, instances)| instances);
        for &instance in instances {
            let Some(section) = groups.instance_section_index(self, kept, instance) else {
                continue;
            };
            let object = instance.0;
            edits.alias_symbol_or_insert_with(object, &alias, || {
                let size = self.program.object(object).object.section(section).size;
                hidden_alias(&alias, Some((section, 0)), size, SymbolKind::Func)
            });
        }
        for decision in &class.decisions {
            if let Action::Thunk(reason) = &decision.action {
                self.replace_with_thunk(decision.candidate, &alias, reason, edits);
            }
        }
    }

    /// The hidden alias of a kept copy: unique in the link, the same in every run.
    fn alias_name(&self, kept: CandidateId) -> String {
        let info = &self.candidates[kept.index()];
        let name = self.program.object_name(info.object);
        let hash = crate::names::fnv1a(
            name.bytes()
                .chain(info.section.0.to_le_bytes())
                .chain(info.start.to_le_bytes()),
        );
        format!("__icf.{hash:016x}")
    }
}

/// Whether `class` folds any member away (as an alias or a thunk).
fn folds_anything(class: &ClassPlan) -> bool {
    class
        .decisions
        .iter()
        .any(|d| matches!(d.action, Action::Alias | Action::Thunk(_)))
}

/// The edits of every object while they are made, and the new symbol
/// through which each object reaches each alias it uses.
#[derive(Debug, Default)]
struct EditsBuilder {
    edits: HashMap<ObjectId, Edits>,
    /// Per object, the new symbol index of each alias name it uses.
    alias_in: HashMap<(ObjectId, String), usize>,
}

impl EditsBuilder {
    /// The edits of `object` (none at first).
    fn of(&mut self, object: ObjectId) -> &mut Edits {
        self.edits.entry(object).or_default()
    }

    /// Defines `alias` in each object of `places`, where it says, as the
    /// symbol through which that object reaches it.
    fn define_alias(
        &mut self,
        alias: &str,
        places: &HashMap<ObjectId, (SectionIndex, u64)>,
        size: u64,
        kind: SymbolKind,
    ) {
        for (&object, &definition) in places {
            let symbol = hidden_alias(alias, Some(definition), size, kind);
            let index = push_new_symbol(&mut self.edits, object, symbol);
            self.alias_in.insert((object, alias.to_owned()), index);
        }
    }

    /// The new symbol through which `object` reaches `alias`: the one it
    /// has, else an undefined reference, added now.
    fn alias_symbol(&mut self, object: ObjectId, alias: &str) -> usize {
        self.alias_symbol_or_insert_with(object, alias, || {
            hidden_alias(alias, None, 0, SymbolKind::NoType)
        })
    }

    /// The new symbol through which `object` reaches `alias`: the one it
    /// has, else `make()`, added now.
    fn alias_symbol_or_insert_with(
        &mut self,
        object: ObjectId,
        alias: &str,
        make: impl FnOnce() -> NewSymbol,
    ) -> usize {
        let edits = &mut self.edits;
        *self
            .alias_in
            .entry((object, alias.to_owned()))
            .or_insert_with(|| push_new_symbol(edits, object, make()))
    }
}

/// Adds `symbol` to the new symbols of `object` and returns its index there.
fn push_new_symbol(
    edits: &mut HashMap<ObjectId, Edits>,
    object: ObjectId,
    symbol: NewSymbol,
) -> usize {
    let object_edits = edits.entry(object).or_default();
    object_edits.new_symbols.push(symbol);
    object_edits.new_symbols.len() - 1
}

/// A hidden global symbol named `alias`: defined at `definition`, or
/// without one an undefined reference.
fn hidden_alias(
    alias: &str,
    definition: Option<(SectionIndex, u64)>,
    size: u64,
    kind: SymbolKind,
) -> NewSymbol {
    NewSymbol {
        name: alias.as_bytes().to_vec(),
        definition,
        size,
        binding: Binding::Global,
        kind,
        visibility: Visibility::Hidden,
        flags: 0,
    }
}

/// A jump to `symbol` (after the architecture's landing pad when the object
/// is built for IBT or BTI), aligned as its function was (`align`): a
/// program may look at a function address's low bits (a declared
/// `aligned(256)`, tagged pointers), so the thunk that stands in for the
/// function's address keeps them as they were, whatever that costs in
/// padding, and at least what a jump target needs.
fn thunk(arch: Arch, branch_protection: bool, symbol: SymbolRef, align: u64) -> NewContents {
    let thunk = icf_arch::of(arch).thunk();
    let (bytes, offset) = thunk.bytes(branch_protection);
    NewContents {
        bytes,
        relocs: vec![NewReloc {
            offset,
            r_type: thunk.r_type,
            symbol,
            addend: thunk.addend,
        }],
        align: align.max(thunk.min_align),
    }
}

/// What [`write_outputs`] writes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum OutputKind {
    /// A copy of every input, rewritten where it has edits, each archive
    /// with all its members: `icf fold`, whose outputs stand in for the
    /// inputs anywhere.
    Copies,
    /// Only the inputs with edits, for one link: an archive outside
    /// `--whole-archive` leaves out the ELF members that define no global
    /// symbol, which no link can extract (`lib.rmeta` in an rlib: a third
    /// of what ripgrep's link would otherwise write again).
    LinkInputs,
}

/// Writes the inputs, rewritten where `edits` say, under `out_dir`, as
/// `kind` says. Outputs keep their input's file name; a later input with a
/// name already taken is written as `<position>-<name>`.
pub fn write_outputs(
    program: &Program<'_>,
    edits: &HashMap<ObjectId, Edits>,
    out_dir: &Path,
    kind: OutputKind,
) -> anyhow::Result<Vec<FoldedFile>> {
    write_outputs_cached(program, edits, out_dir, kind, None).map(|(files, _)| files)
}

/// How many rewritten files came from icf's cache, and how many were written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputCacheStats {
    pub reused: u64,
    pub written: u64,
}

/// [`write_outputs`], keeping rewritten files in icf's cache: a file whose
/// input bytes and edits an earlier run met (the same build of icf, the
/// same kind of output) is hard-linked from the cache instead of written,
/// once its bytes match their checksum; a file written is stored.
pub fn write_outputs_cached(
    program: &Program<'_>,
    edits: &HashMap<ObjectId, Edits>,
    out_dir: &Path,
    kind: OutputKind,
    cache: Option<&crate::options::CacheSettings>,
) -> anyhow::Result<(Vec<FoldedFile>, OutputCacheStats)> {
    let store =
        cache.and_then(|settings| icf_cache::Store::open(&settings.dir, settings.limit).ok());
    let reused = AtomicU64::new(0);
    let stored = AtomicU64::new(0);
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut taken: rustc_hash::FxHashSet<std::ffi::OsString> = rustc_hash::FxHashSet::default();
    let mut names = Vec::with_capacity(program.inputs.files.len());
    for (position, file) in program.inputs.files.iter().enumerate() {
        let name = file
            .path
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_else(|| format!("input{position}").into());
        let name = if taken.insert(name.clone()) {
            name
        } else {
            let mut unique = std::ffi::OsString::from(format!("{position}-"));
            unique.push(&name);
            taken.insert(unique.clone());
            unique
        };
        names.push(name);
    }
    // Files are independent: each is built in memory and renamed into place.
    // Once written, an input's pages leave the resident set, so the peak
    // holds the files being written rather than all of them; so do the
    // pages the plan and the edits read (names, relocations: 51 MiB of a
    // cold AArch64 LLVM link's 212 MiB peak), before any file is written.
    program.inputs.release_resident_pages();
    names
        .into_par_iter()
        .enumerate()
        .map(|(position, name)| {
            let cached = store.as_ref().map(|store| (store, &reused, &stored));
            let written = write_output(program, edits, out_dir, kind, position, name, cached);
            program.inputs.files[position].release_resident_pages();
            written
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .map(|files| {
            let stats = OutputCacheStats {
                reused: reused.into_inner(),
                written: stored.into_inner(),
            };
            // Stored files count towards the cache's limit like entries.
            if let Some(store) = &store
                && stats.written > 0
            {
                let _ = store.evict();
            }
            (files, stats)
        })
}

/// The name of a rewritten file in icf's cache: this build, the input's
/// bytes, the kind of output, whether the link takes the whole archive,
/// and each object's edits (the rewrite reads nothing else).
fn output_key(
    program: &Program<'_>,
    position: usize,
    objects: &[(ObjectId, &crate::load::program::LoadedObject<'_>)],
    edits: &HashMap<ObjectId, Edits>,
    kind: OutputKind,
) -> icf_cache::Key {
    let mut key = icf_cache::KeyHasher::new("icf rewritten file 1");
    key.bytes(env!("ICF_BUILD_ID").as_bytes())
        .u128(icf_cache::content_hash(
            program.inputs.files[position].data(),
        ))
        .u64(u64::from(kind == OutputKind::LinkInputs))
        .u64(u64::from(program.options.whole_archive.contains(&position)))
        .u64(objects.len() as u64);
    for (id, _) in objects {
        match edits.get(id) {
            Some(edits) if !edits.is_empty() => key.u64(1).bytes(&edits.digest()),
            _ => key.u64(0),
        };
    }
    key.finish()
}

/// Writes input `position` as `out_dir/name` (see [`write_outputs`]).
fn write_output(
    program: &Program<'_>,
    edits: &HashMap<ObjectId, Edits>,
    out_dir: &Path,
    kind: OutputKind,
    position: usize,
    name: std::ffi::OsString,
    cache: Option<(&icf_cache::Store, &AtomicU64, &AtomicU64)>,
) -> anyhow::Result<FoldedFile> {
    let file = &program.inputs.files[position];
    let output = out_dir.join(name);
    let objects: Vec<(ObjectId, &crate::load::program::LoadedObject<'_>)> = program
        .objects
        .iter()
        .enumerate()
        .filter(|(_, o)| o.file == position)
        .map(|(i, o)| (ObjectId(i as u32), o))
        .collect();
    let changed_objects: Vec<&(ObjectId, _)> = objects
        .iter()
        .filter(|(id, _)| edits.get(id).is_some_and(|e| !e.is_empty()))
        .collect();
    let changed = !changed_objects.is_empty();
    if !changed && kind == OutputKind::LinkInputs {
        return Ok(FoldedFile {
            input: file.path.clone(),
            output: file.path.clone(),
            changed,
            cached: None,
        });
    }
    let key = cache
        .filter(|_| changed)
        .map(|_| output_key(program, position, &objects, edits, kind));
    if let (Some((store, reused, _)), Some(key)) = (cache, &key)
        && store.get_file(key, &output)
    {
        reused.fetch_add(1, Ordering::Relaxed);
        return Ok(FoldedFile {
            input: file.path.clone(),
            output,
            changed,
            cached: Some(*key),
        });
    }
    if changed_objects.is_empty() {
        // The whole file as it was: the kernel copies it (see `output`).
        write_atomically_with(&output, Some(file), |out| {
            std::io::Write::write_all(out, file.data()).map_err(anyhow::Error::from)
        })?;
    } else if objects.len() == 1 && objects[0].1.member.is_none() {
        // Streamed: the object is never whole in memory, and its unchanged
        // sections go from the input file to the output in the kernel.
        let (id, object) = objects[0];
        write_atomically_with(&output, Some(file), |out| {
            icf_object::rewrite_into(&object.object, &edits[&id], out)
                .with_context(|| format!("rewriting {}", program.object_name(id)))
        })?;
    } else {
        // Archives stream to the file: unchanged members go from the input
        // file to the output in the kernel (see `output`), never through a
        // copy of the whole archive.
        write_atomically_with(&output, Some(file), |out| {
            rewrite_archive(program, position, &objects, edits, kind, out)
        })?;
    }
    // Storing is best effort: a cache that cannot take the file costs the
    // next link a rewrite, nothing more.
    let mut cached = None;
    if let (Some((store, _, stored)), Some(key)) = (cache, key)
        && store.put_file(&key, &output).is_ok()
    {
        stored.fetch_add(1, Ordering::Relaxed);
        cached = Some(key);
    }
    Ok(FoldedFile {
        input: file.path.clone(),
        output,
        changed,
        cached,
    })
}

/// A GNU archive with the changed members rewritten and every other member
/// as it was, less those a link cannot extract when `kind` allows. `objects`
/// are the file's members (see [`write_output`]).
fn rewrite_archive(
    program: &Program<'_>,
    file: usize,
    objects: &[(ObjectId, &crate::load::program::LoadedObject<'_>)],
    edits: &HashMap<ObjectId, Edits>,
    kind: OutputKind,
    out: &mut (impl std::io::Write + std::io::Seek),
) -> anyhow::Result<()> {
    use ar_archive_writer::{
        ArchiveKind, DEFAULT_OBJECT_READER, NewArchiveMember, write_archive_to_stream,
    };
    use object::read::archive::ArchiveFile;
    let input = &program.inputs.files[file];
    let data = input.data();
    let archive =
        ArchiveFile::parse(data).with_context(|| format!("reading {}", input.path.display()))?;
    // Keyed by where the member's data starts: names may repeat in an archive.
    let start_of = |object: &crate::load::program::LoadedObject<'_>| {
        object.object.data.as_ptr() as usize - data.as_ptr() as usize
    };
    let changed: Vec<(usize, ObjectId)> = objects
        .iter()
        .filter(|(id, object)| {
            object.member.is_some() && edits.get(id).is_some_and(|e| !e.is_empty())
        })
        .map(|&(id, object)| (start_of(object), id))
        .collect();
    // A member is extracted only for a global symbol it defines; inside
    // `--whole-archive` every member is linked.
    let never_extracted: rustc_hash::FxHashSet<usize> =
        if kind == OutputKind::LinkInputs && !program.options.whole_archive.contains(&file) {
            objects
                .iter()
                .filter(|(_, object)| {
                    object.member.is_some()
                        && !object.object.symbols.iter().any(|symbol| {
                            symbol.binding != icf_object::Binding::Local && symbol.is_defined()
                        })
                })
                .map(|&(_, object)| start_of(object))
                .collect()
        } else {
            rustc_hash::FxHashSet::default()
        };
    // Members icf does not read (rustc's `lib.rmeta`, listed as skipped by
    // name) are left out by the same rule when they parse as an object that
    // defines no global symbol: that is what keeps them out of the archive's
    // index, so no link extracts them. Anything else, a member that is not an
    // object at all or one that does not parse, is kept as it was.
    let leave_out_skipped =
        kind == OutputKind::LinkInputs && !program.options.whole_archive.contains(&file);
    let loaded: rustc_hash::FxHashSet<usize> = objects
        .iter()
        .map(|&(_, object)| start_of(object))
        .collect();
    let rewritten: HashMap<usize, Vec<u8>> = changed
        .par_iter()
        .map(|&(start, id)| {
            let bytes = icf_object::rewrite(&program.object(id).object, &edits[&id])
                .with_context(|| format!("rewriting {}", program.object_name(id)))?;
            Ok((start, bytes))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut members = Vec::new();
    for member in archive.members() {
        let member = member.with_context(|| format!("reading {}", input.path.display()))?;
        let name = String::from_utf8_lossy(member.name()).into_owned();
        let original = member
            .data(data)
            .with_context(|| format!("reading {}({name})", input.path.display()))?;
        let start = original.as_ptr() as usize - data.as_ptr() as usize;
        if never_extracted.contains(&start)
            || (leave_out_skipped && !loaded.contains(&start) && defines_no_global_symbol(original))
        {
            continue;
        }
        // Unchanged members are written straight from the mapped input.
        let bytes: &[u8] = rewritten.get(&start).map_or(original, Vec::as_slice);
        members.push(NewArchiveMember::new(bytes, &DEFAULT_OBJECT_READER, name));
    }
    write_archive_to_stream(out, &members, ArchiveKind::Gnu, false, None)
        .with_context(|| format!("writing the archive for {}", input.path.display()))?;
    Ok(())
}

/// Whether `member` parses as an object whose symbol table defines no global
/// symbol: the question an archive index asks of a member (a global or weak
/// symbol that is defined, other than a file or section symbol), so such a
/// member has no index entry and no link outside `--whole-archive` extracts
/// it. `false` for anything that does not parse.
fn defines_no_global_symbol(member: &[u8]) -> bool {
    use object::{Object, ObjectSymbol};
    let Ok(file) = object::File::parse(member) else {
        return false;
    };
    !file.symbols().any(|symbol| {
        symbol.is_global()
            && !symbol.is_undefined()
            && !matches!(
                symbol.kind(),
                object::SymbolKind::File | object::SymbolKind::Section
            )
    })
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_atomically_with(path, None, |out| {
        std::io::Write::write_all(out, bytes).map_err(anyhow::Error::from)
    })
}

/// Streams `write`'s output to a temporary file beside `path`, then renames
/// it over `path`; on failure the temporary file is removed. Slices of
/// `source`'s mapping that `write` writes are copied from its file by the
/// kernel ([`OutputFile`]).
fn write_atomically_with(
    path: &Path,
    source: Option<&icf_object::InputFile>,
    write: impl FnOnce(&mut OutputFile<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = parent.join(format!(".{name}.icf-tmp-{}", std::process::id()));
    let written = std::fs::File::create(&temporary)
        .map_err(anyhow::Error::from)
        .and_then(|file| {
            let mut out = OutputFile::new(file, source);
            write(&mut out)?;
            out.into_file()?;
            Ok(())
        })
        .with_context(|| format!("writing {}", temporary.display()));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    std::fs::rename(&temporary, path)
        .with_context(|| format!("renaming {} to {}", temporary.display(), path.display()))
}
