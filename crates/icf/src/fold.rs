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
//! a temporary name and renamed, so a failure never leaves half a file.

use crate::analysis::Analysis;
use crate::member_facts::Plan;
use crate::program::{ObjectId, Program};
use anyhow::Context;
use icf_fold::CandidateId;
use icf_fold::plan::Action;
use icf_ir::Arch;
use icf_object::{
    Binding, Destination, Edits, NewContents, NewReloc, NewSymbol, SymbolKind, SymbolRef,
};
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::path::{Path, PathBuf};

/// One written output.
#[derive(Clone, Debug)]
pub struct FoldedFile {
    pub input: PathBuf,
    pub output: PathBuf,
    /// Whether any byte differs from the input.
    pub changed: bool,
}

impl Analysis<'_, '_> {
    /// The edits `plan` makes to each object.
    pub fn object_edits(&self, plan: &Plan) -> HashMap<ObjectId, Edits> {
        let mut edits: HashMap<ObjectId, Edits> = HashMap::default();
        // Per object, the new symbol index of each alias name it uses.
        let mut alias_in: HashMap<(ObjectId, String), usize> = HashMap::default();
        let groups = self.comdat_instances();
        for class in &plan.classes {
            if !class
                .decisions
                .iter()
                .any(|d| matches!(d.action, Action::Alias | Action::Thunk(_)))
            {
                continue;
            }
            if let Some(identity) = class.identity {
                let name = &plan.identity_names[identity.0 as usize];
                self.fold_through_identity(class, name, &groups, &mut edits, &mut alias_in);
                continue;
            }
            let kept = &self.candidates[class.kept.index()];
            let alias = self.alias_name(class.kept);
            // Where the alias is defined: on the kept copy, and when its COMDAT
            // group has several instances, on each of them (the planner made
            // sure they are all in this class): whichever the link keeps
            // defines it, and the discarded ones take their definition along.
            let floating = groups.floating(self, class.kept).is_some();
            let mut defined_in: HashMap<ObjectId, (icf_object::SectionIndex, u64)> =
                HashMap::default();
            defined_in.insert(kept.object, (kept.section, kept.start));
            if floating && let Some((_, instances)) = groups.instances_of(self, class.kept) {
                for &(object, group) in instances {
                    if let Some(other) = groups.instance_section(self, kept, (object, group)) {
                        let other = &self.candidates[other.index()];
                        defined_in
                            .entry(object)
                            .or_insert((other.section, other.start));
                    }
                }
            }
            for &object in defined_in.keys() {
                let definition = defined_in[&object];
                let object_edits = edits.entry(object).or_default();
                object_edits.new_symbols.push(NewSymbol {
                    name: alias.clone().into_bytes(),
                    definition: Some(definition),
                    size: kept.size(),
                    binding: Binding::Global,
                    kind: if kept.is_code() {
                        SymbolKind::Func
                    } else {
                        SymbolKind::Object
                    },
                    other: object::elf::STV_HIDDEN.0,
                });
                alias_in.insert((object, alias.clone()), object_edits.new_symbols.len() - 1);
            }
            let mut alias_symbol =
                |object: ObjectId, edits: &mut HashMap<ObjectId, Edits>| -> usize {
                    *alias_in.entry((object, alias.clone())).or_insert_with(|| {
                        let definition: Option<(icf_object::SectionIndex, u64)> = None;
                        let object_edits = edits.entry(object).or_default();
                        object_edits.new_symbols.push(NewSymbol {
                            name: alias.clone().into_bytes(),
                            definition,
                            size: if definition.is_some() { kept.size() } else { 0 },
                            binding: Binding::Global,
                            kind: match (definition, kept.is_code()) {
                                (None, _) => SymbolKind::NoType,
                                (Some(_), true) => SymbolKind::Func,
                                (Some(_), false) => SymbolKind::Object,
                            },
                            other: object::elf::STV_HIDDEN.0,
                        });
                        object_edits.new_symbols.len() - 1
                    })
                };
            // The kept copy takes the largest alignment of its class.
            let kept_elf = &self.program.object(kept.object).elf;
            let whole_section = kept.start == 0 && kept.end == kept_elf.section(kept.section).size;
            let mut align = kept_elf.section(kept.section).align;
            // Global names the kept copy's object defines for this class:
            // members there keep theirs on the kept section; each name moved
            // from elsewhere (every instance of a COMDAT group brings the
            // same ones) is defined once.
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
            for decision in &class.decisions {
                let member = &self.candidates[decision.candidate.index()];
                let elf = &self.program.object(member.object).elf;
                match decision.action {
                    Action::Alias => {
                        align = align.max(elf.section(member.section).align);
                        let destination =
                            if member.object == kept.object && !floating {
                                Destination::Local {
                                    section: kept.section,
                                    start: kept.start,
                                    size: kept.size(),
                                }
                            } else {
                                // Global symbols move with the body (the planner checked they may).
                                let from_group = elf.section(member.section).group.is_some();
                                for index in self.global_symbols(decision.candidate) {
                                    let symbol = elf.symbol(index);
                                    if !defined.insert(symbol.name) {
                                        continue;
                                    }
                                    let offset = symbol.value.saturating_sub(member.start);
                                    let size = if offset == 0 {
                                        kept.size()
                                    } else {
                                        symbol.size
                                    };
                                    edits.entry(kept.object).or_default().new_symbols.push(
                                        NewSymbol {
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
                                            other: symbol.other,
                                        },
                                    );
                                }
                                let symbol = alias_symbol(member.object, &mut edits);
                                Destination::External {
                                    symbol,
                                    size: kept.size(),
                                }
                            };
                        edits
                            .entry(member.object)
                            .or_default()
                            .moved
                            .insert(member.section, destination);
                    }
                    Action::Thunk(_) => {
                        let symbol = SymbolRef::New(alias_symbol(member.object, &mut edits));
                        let thunk = thunk(
                            elf.arch,
                            elf.feature_1_and() & 1 != 0,
                            symbol,
                            elf.section(member.section).align,
                        );
                        edits
                            .entry(member.object)
                            .or_default()
                            .replaced
                            .insert(member.section, thunk);
                    }
                    Action::Kept | Action::Keep(_) => {}
                }
            }
            if whole_section && align > kept_elf.section(kept.section).align {
                edits
                    .entry(kept.object)
                    .or_default()
                    .align
                    .insert(kept.section, align);
            }
        }
        edits
    }

    /// Edits for a class whose kept copy floats with a COMDAT group whose
    /// instances differ (see `icf_fold::plan`): every loaded instance of the
    /// kept copy's function gets a hidden alias named after its identity,
    /// and thunks jump to it, so they reach whichever instance the link
    /// keeps. The name is new: only loaded objects define it, so it can make
    /// the link load nothing, and a wrong guess fails the link loudly.
    fn fold_through_identity(
        &self,
        class: &icf_fold::plan::ClassPlan,
        key: &[u8],
        groups: &crate::comdat::ComdatInstances<'_>,
        edits: &mut HashMap<ObjectId, Edits>,
        alias_in: &mut HashMap<(ObjectId, String), usize>,
    ) {
        let kept = &self.candidates[class.kept.index()];
        let alias = format!("__icf.odr.{:016x}", fnv1a(key.iter().copied()));
        let instances = groups
            .instances_of(self, class.kept)
            .map_or(&[][..], |(_, instances)| instances);
        for &instance in instances {
            let Some(section) = groups.instance_section_index(self, kept, instance) else {
                continue;
            };
            let object = instance.0;
            alias_in.entry((object, alias.clone())).or_insert_with(|| {
                let size = self.program.object(object).elf.section(section).size;
                let object_edits = edits.entry(object).or_default();
                object_edits.new_symbols.push(NewSymbol {
                    name: alias.clone().into_bytes(),
                    definition: Some((section, 0)),
                    size,
                    binding: Binding::Global,
                    kind: SymbolKind::Func,
                    other: object::elf::STV_HIDDEN.0,
                });
                object_edits.new_symbols.len() - 1
            });
        }
        for decision in &class.decisions {
            if !matches!(decision.action, Action::Thunk(_)) {
                continue;
            }
            let member = &self.candidates[decision.candidate.index()];
            let elf = &self.program.object(member.object).elf;
            let symbol = *alias_in
                .entry((member.object, alias.clone()))
                .or_insert_with(|| {
                    let object_edits = edits.entry(member.object).or_default();
                    object_edits.new_symbols.push(NewSymbol {
                        name: alias.clone().into_bytes(),
                        definition: None,
                        size: 0,
                        binding: Binding::Global,
                        kind: SymbolKind::NoType,
                        other: object::elf::STV_HIDDEN.0,
                    });
                    object_edits.new_symbols.len() - 1
                });
            let thunk = thunk(
                elf.arch,
                elf.feature_1_and() & 1 != 0,
                SymbolRef::New(symbol),
                elf.section(member.section).align,
            );
            edits
                .entry(member.object)
                .or_default()
                .replaced
                .insert(member.section, thunk);
        }
    }

    /// The hidden alias of a kept copy: unique in the link, the same in every run.
    fn alias_name(&self, kept: CandidateId) -> String {
        let info = &self.candidates[kept.index()];
        let name = self.program.object_name(info.object);
        let hash = fnv1a(
            name.bytes()
                .chain(info.section.0.to_le_bytes())
                .chain(info.start.to_le_bytes()),
        );
        format!("__icf.{hash:016x}")
    }
}

/// 64-bit FNV-1a: a stable hash for symbol names, the same in every run.
fn fnv1a(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
    })
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
    // holds the files being written rather than all of them.
    names
        .into_par_iter()
        .enumerate()
        .map(|(position, name)| {
            let written = write_output(program, edits, out_dir, kind, position, name);
            program.inputs.files[position].release_resident_pages();
            written
        })
        .collect()
}

/// Writes input `position` as `out_dir/name` (see [`write_outputs`]).
fn write_output(
    program: &Program<'_>,
    edits: &HashMap<ObjectId, Edits>,
    out_dir: &Path,
    kind: OutputKind,
    position: usize,
    name: std::ffi::OsString,
) -> anyhow::Result<FoldedFile> {
    let file = &program.inputs.files[position];
    let output = out_dir.join(name);
    let objects: Vec<(ObjectId, &crate::program::LoadedObject<'_>)> = program
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
        });
    }
    if changed_objects.is_empty() {
        write_atomically(&output, file.data())?;
    } else if objects.len() == 1 && objects[0].1.member.is_none() {
        let (id, object) = objects[0];
        let bytes = icf_object::rewrite(&object.elf, &edits[&id])
            .with_context(|| format!("rewriting {}", program.object_name(id)))?;
        write_atomically(&output, &bytes)?;
    } else {
        // Archives stream to the file: unchanged members go straight from
        // the mapped input, never through a copy of the whole archive.
        write_atomically_with(&output, |out| {
            rewrite_archive(program, position, &objects, edits, kind, out)
        })?;
    }
    Ok(FoldedFile {
        input: file.path.clone(),
        output,
        changed,
    })
}

/// A GNU archive with the changed members rewritten and every other member
/// as it was, less those a link cannot extract when `kind` allows. `objects`
/// are the file's members (see [`write_output`]).
fn rewrite_archive(
    program: &Program<'_>,
    file: usize,
    objects: &[(ObjectId, &crate::program::LoadedObject<'_>)],
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
    let start_of = |object: &crate::program::LoadedObject<'_>| {
        object.elf.data.as_ptr() as usize - data.as_ptr() as usize
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
                        && !object.elf.symbols.iter().any(|symbol| {
                            symbol.binding != icf_object::Binding::Local && symbol.is_defined()
                        })
                })
                .map(|&(_, object)| start_of(object))
                .collect()
        } else {
            rustc_hash::FxHashSet::default()
        };
    let rewritten: HashMap<usize, Vec<u8>> = changed
        .par_iter()
        .map(|&(start, id)| {
            let bytes = icf_object::rewrite(&program.object(id).elf, &edits[&id])
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
        if never_extracted.contains(&start) {
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

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_atomically_with(path, |out| {
        std::io::Write::write_all(out, bytes).map_err(anyhow::Error::from)
    })
}

/// Streams `write`'s output to a temporary file beside `path`, then renames
/// it over `path`; on failure the temporary file is removed.
pub fn write_atomically_with(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> anyhow::Result<()>,
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
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            write(&mut out)?;
            out.into_inner().map_err(|e| e.into_error())?;
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
