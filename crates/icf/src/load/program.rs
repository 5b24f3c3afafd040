//! Loading: input files, the objects inside them, the shared target table,
//! and the function pieces of every object.

use crate::load::comdat_groups::ComdatGroups;
pub use crate::load::objects::{
    FunctionId, FunctionInfo, LoadedObject, ObjectId, SectionSymbols, SymbolRef,
};
use crate::load::resolution::{self, Definitions};
use crate::load::targets::TargetTable;
pub use crate::options::{Exports, GcRoots, Options};
use icf_object::{InputFile, Object, PendingRelease, PerSection, SkippedMember, SymbolKind};
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};

/// The input files, memory-mapped. Everything else borrows from them.
#[derive(Debug)]
pub struct Inputs {
    pub files: Vec<InputFile>,
}

impl Inputs {
    pub fn open(paths: &[PathBuf]) -> anyhow::Result<Inputs> {
        let files = paths
            .iter()
            .map(InputFile::open)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Inputs { files })
    }

    /// Drops the pages of every input from the resident set (see
    /// [`InputFile::release_resident_pages`]).
    pub fn release_resident_pages(&self) {
        for file in &self.files {
            file.release_resident_pages();
        }
    }
}

/// Every object of the inputs, ready to lift.
#[derive(Debug)]
pub struct Program<'data> {
    pub inputs: &'data Inputs,
    pub options: Options,
    pub objects: Vec<LoadedObject<'data>>,
    pub targets: TargetTable<'data>,
    pub functions: Vec<FunctionInfo>,
    /// Archive members that are not ELF objects, per input file.
    pub skipped: Vec<(usize, SkippedMember)>,
    /// The definition each global name resolves to in the link.
    pub definitions: Definitions<'data>,
    /// Definitions that another loaded object refers to by name.
    pub needed: rustc_hash::FxHashSet<(ObjectId, icf_object::SymbolIndex)>,
    /// The loaded objects' COMDAT groups, numbered by signature.
    pub comdat_groups: ComdatGroups,
}

impl<'data> Program<'data> {
    pub fn load(inputs: &'data Inputs, mut options: Options) -> anyhow::Result<Program<'data>> {
        let mut sources = Vec::new();
        let mut skipped = Vec::new();
        for (file_index, file) in inputs.files.iter().enumerate() {
            let listed = icf_object::list_objects(&file.path, file.data())?;
            sources.extend(
                listed
                    .objects
                    .into_iter()
                    .map(|source| (file_index, source)),
            );
            skipped.extend(
                listed
                    .skipped
                    .into_iter()
                    .map(|member| (file_index, member)),
            );
        }
        // Parsing and everything derived from one object alone, in parallel.
        let parsed: Vec<(LoadedObject<'data>, Vec<icf_object::FunctionExtent>)> = sources
            .into_par_iter()
            .map_init(
                || PendingRelease::new(&inputs.files),
                |released, (file, source)| {
                    let path = &inputs.files[file].path;
                    let parsed = if options.linked_image && options.keep_decoded_code {
                        Object::parse_image_keeping_code(source.data)
                    } else if options.linked_image {
                        Object::parse_image(source.data)
                    } else {
                        Object::parse(source.data)
                    };
                    let elf = parsed.map_err(|e| {
                        let e = e.with_file(path);
                        match &source.member {
                            Some(member) => e.with_member(member.clone()),
                            None => e,
                        }
                    })?;
                    let anchors = elf.data_anchors();
                    let extents = elf.functions();
                    let object = LoadedObject {
                        file,
                        loaded: source.member.is_none() || options.whole_archive.contains(&file),
                        member: source.member,
                        code_references: elf.code_references(&anchors),
                        data_in_code: elf.data_in_code(),
                        code_resumes: elf.code_resumes(),
                        anchors,
                        section_symbols: section_symbols(&elf),
                        section_symbol: section_symbol_of(&elf),
                        symbol_refs: Vec::new(),
                        object: elf,
                    };
                    // What later steps read again (names, relocations) faults
                    // back in; the rest of the object need not stay resident.
                    released.add(file, source.data);
                    Ok((object, extents))
                },
            )
            .collect::<Result<_, icf_object::Error>>()?;
        let mut objects = Vec::with_capacity(parsed.len());
        let mut functions = Vec::new();
        for (index, (object, extents)) in parsed.into_iter().enumerate() {
            let id = ObjectId(index as u32);
            functions.extend(
                extents
                    .into_iter()
                    .map(|extent| FunctionInfo { object: id, extent }),
            );
            objects.push(object);
        }
        functions.shrink_to_fit();
        if options.linked_image {
            options = image_options(options, &objects)?;
        }
        if options.ordered_archives {
            resolve_archive_members_in_order(&mut objects);
        } else {
            resolve_archive_members(&mut objects, options.strong_members_first);
        }

        // References are normalized once the link's definitions are known.
        let (definitions, comdat_groups) =
            rayon::join(|| Definitions::of(&objects), || ComdatGroups::of(&objects));
        let needed = needed_definitions(&objects, &definitions);
        let mut targets =
            TargetTable::with_sections(objects.iter().map(|o| o.object.sections.len()));
        // Resolving is per object and in parallel; interning names is not.
        let resolved: Vec<Vec<(crate::load::targets::Target<'data>, i64)>> = (0..objects.len())
            .into_par_iter()
            .map(|index| {
                let id = ObjectId(index as u32);
                resolution::symbol_refs(id, &objects, &definitions, &options)
            })
            .collect();
        for (index, symbols) in resolved.into_iter().enumerate() {
            // A new list: collecting in place would keep the wider one's allocation.
            let mut symbol_refs = Vec::with_capacity(symbols.len());
            symbol_refs.extend(symbols.into_iter().map(|(target, base)| SymbolRef {
                target: targets.intern(target),
                base,
            }));
            objects[index].symbol_refs = symbol_refs;
        }
        Ok(Program {
            inputs,
            options,
            objects,
            targets,
            functions,
            skipped,
            definitions,
            needed,
            comdat_groups,
        })
    }

    /// Whether the program is one linked image (`icf report BINARY`).
    pub fn image(&self) -> Option<&icf_object::Image<'data>> {
        match self.objects.as_slice() {
            [object] => object.object.image.as_deref(),
            _ => None,
        }
    }

    pub fn object(&self, id: ObjectId) -> &LoadedObject<'data> {
        &self.objects[id.index()]
    }

    pub fn function(&self, id: FunctionId) -> &FunctionInfo {
        &self.functions[id.0 as usize]
    }

    /// Drops the pages of one object's bytes from the resident set (see
    /// [`InputFile::release_resident_range`]), gathered with its neighbours
    /// in `released` (see [`PendingRelease`]).
    pub fn release_object_pages_later(&self, released: &mut PendingRelease<'_>, id: ObjectId) {
        let object = self.object(id);
        released.add(object.file, object.object.data);
    }

    /// A gatherer of pages to release, for [`Program::release_object_pages_later`].
    pub fn pending_release(&self) -> PendingRelease<'_> {
        PendingRelease::new(&self.inputs.files)
    }

    /// `file` or `file(member)`, for messages.
    pub fn object_name(&self, id: ObjectId) -> String {
        let object = self.object(id);
        let path = self.file_path(object.file).display();
        match &object.member {
            Some(member) => format!("{path}({member})"),
            None => path.to_string(),
        }
    }

    pub fn file_path(&self, file: usize) -> &Path {
        &self.inputs.files[file].path
    }
}

/// Named symbols of each section, sorted by value, larger extents first.
fn section_symbols(elf: &Object<'_>) -> SectionSymbols {
    let mut pairs = Vec::new();
    for (index, symbol) in elf.symbols.iter().enumerate() {
        if let Some(section) = symbol.section()
            && !symbol.name.is_empty()
            // AArch64 mapping symbols ($x, $d) mark code and data, they name nothing.
            && !symbol.name.starts_with(b"$")
            && !matches!(symbol.kind, SymbolKind::Section | SymbolKind::File)
        {
            let index = icf_object::SymbolIndex(index as u32);
            pairs.push((section, (symbol.value, symbol.size, index)));
        }
    }
    pairs.sort_unstable_by_key(|&(section, (value, size, index))| {
        (section, value, std::cmp::Reverse(size), index)
    });
    PerSection::new(elf.sections.len(), pairs)
}

/// The `STT_SECTION` symbol of each section.
fn section_symbol_of(elf: &Object<'_>) -> Vec<Option<icf_object::SymbolIndex>> {
    let mut result = vec![None; elf.sections.len()];
    for (index, symbol) in elf.symbols.iter().enumerate() {
        if symbol.kind == SymbolKind::Section
            && let Some(section) = symbol.section()
        {
            result[section.index()].get_or_insert(icf_object::SymbolIndex(index as u32));
        }
    }
    result
}

/// Marks the archive members a link loads: those that define a symbol that a
/// loaded object references and no loaded object defines, repeated until
/// nothing changes. This is lld's rule (every archive is searched whatever
/// its position); GNU ld, which does not go back to earlier archives, loads
/// at most these.
fn resolve_archive_members<'data>(objects: &mut [LoadedObject<'data>], strong_first: bool) {
    use icf_object::{Binding, SymbolPlace};
    if objects.iter().all(|object| object.loaded) {
        return;
    }
    // The members a name may pull in: the first that defines it, and the
    // first that defines it strongly.
    let provides = |symbol: &icf_object::Symbol<'_>| {
        symbol.binding != Binding::Local
            && symbol.is_defined()
            && symbol.place != SymbolPlace::Common
    };
    let count =
        |object: &LoadedObject<'_>| object.object.symbols.iter().filter(|s| provides(s)).count();
    let (lazy, loaded) = objects
        .par_iter()
        .map(|object| {
            if object.loaded {
                (0, count(object))
            } else {
                (count(object), 0)
            }
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let mut providers: HashMap<&[u8], Providers> =
        HashMap::with_capacity_and_hasher(lazy, Default::default());
    for (index, object) in objects.iter().enumerate() {
        if object.loaded {
            continue;
        }
        for symbol in object.object.symbols.iter().filter(|s| provides(s)) {
            let strong = (symbol.binding != Binding::Weak).then_some(index);
            providers
                .entry(symbol.name)
                .and_modify(|p| p.first_strong = p.first_strong.or(strong))
                .or_insert(Providers {
                    first: index,
                    first_strong: strong,
                });
        }
    }
    // The member a name pulls in. lld: the first that defines it. mold
    // ranks every definition at once, the objects on the command line
    // first, then archive members defining it strongly, then weakly: a
    // member that defines a name weakly (or comes later) cannot keep the
    // one that defines it strongly out, whatever order they are pulled in.
    let owner = |name: &[u8]| -> Option<usize> {
        let providers = providers.get(name)?;
        Some(match strong_first {
            true => providers.first_strong.unwrap_or(providers.first),
            false => providers.first,
        })
    };
    let mut defined: rustc_hash::FxHashSet<&'data [u8]> =
        rustc_hash::FxHashSet::with_capacity_and_hasher(loaded, Default::default());
    let mut wanted: Vec<&'data [u8]> = Vec::new();
    let references = |object: &LoadedObject<'data>, wanted: &mut Vec<&'data [u8]>| {
        for symbol in &object.object.symbols {
            if symbol.binding != Binding::Local
                && !symbol.name.is_empty()
                && !symbol.is_defined()
                && symbol.binding != Binding::Weak
            {
                wanted.push(symbol.name);
            }
        }
    };
    let definitions = |object: &LoadedObject<'data>,
                       defined: &mut rustc_hash::FxHashSet<&'data [u8]>| {
        for symbol in &object.object.symbols {
            if symbol.binding != Binding::Local && !symbol.name.is_empty() && symbol.is_defined() {
                defined.insert(symbol.name);
            }
        }
    };
    for object in objects.iter().filter(|object| object.loaded) {
        definitions(object, &mut defined);
        references(object, &mut wanted);
    }
    while !wanted.is_empty() {
        let mut next = Vec::new();
        for name in std::mem::take(&mut wanted) {
            if defined.contains(name) {
                continue;
            }
            let Some(member) = owner(name).filter(|&m| !objects[m].loaded) else {
                continue;
            };
            objects[member].loaded = true;
            // lld: a loaded member's definitions count at once, so a name it
            // defines pulls in no other member later in the same round.
            // mold: only the objects on the command line keep a member out.
            if !strong_first {
                definitions(&objects[member], &mut defined);
            }
            references(&objects[member], &mut next);
        }
        wanted = next;
    }
}

/// The archive members that define one name (see `resolve_archive_members`).
struct Providers {
    /// The first, in command-line order.
    first: usize,
    /// The first that defines it strongly.
    first_strong: Option<usize>,
}

/// GNU ld's rule: inputs in command-line order, each archive searched (and
/// searched again while that loads something) only when the command line
/// reaches it, for symbols undefined so far. Groups are not rescanned, so
/// this never marks a member the real link would leave out.
fn resolve_archive_members_in_order<'data>(objects: &mut [LoadedObject<'data>]) {
    use icf_object::{Binding, SymbolPlace};
    if objects.iter().all(|object| object.loaded) {
        return;
    }
    let mut defined: rustc_hash::FxHashSet<&'data [u8]> = rustc_hash::FxHashSet::default();
    let mut undefined: rustc_hash::FxHashSet<&'data [u8]> = rustc_hash::FxHashSet::default();
    let mut processed = vec![false; objects.len()];
    // The objects of one input file are consecutive.
    let mut files: Vec<Vec<usize>> = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        match files.last_mut() {
            Some(members) if objects[members[0]].file == object.file => members.push(index),
            _ => files.push(vec![index]),
        }
    }
    for members in files {
        loop {
            let mut progress = false;
            for &member in &members {
                if processed[member] {
                    continue;
                }
                let object = &objects[member];
                let wanted = object.loaded
                    || object.object.symbols.iter().any(|s| {
                        s.binding != Binding::Local
                            && s.is_defined()
                            && s.place != SymbolPlace::Common
                            && undefined.contains(s.name)
                    });
                if !wanted {
                    continue;
                }
                processed[member] = true;
                objects[member].loaded = true;
                for symbol in objects[member].object.symbols.iter() {
                    if symbol.binding == Binding::Local || symbol.name.is_empty() {
                        continue;
                    }
                    if symbol.is_defined() && symbol.place != SymbolPlace::Common {
                        defined.insert(symbol.name);
                        undefined.remove(symbol.name);
                    } else if symbol.binding != Binding::Weak && !defined.contains(symbol.name) {
                        undefined.insert(symbol.name);
                    }
                }
                progress = true;
            }
            if !progress {
                break;
            }
        }
    }
}

/// The definitions that some other loaded object references by name and
/// that no other loaded object defines: the names that keep an archive
/// member in the link.
fn needed_definitions(
    objects: &[LoadedObject<'_>],
    definitions: &Definitions<'_>,
) -> rustc_hash::FxHashSet<(ObjectId, icf_object::SymbolIndex)> {
    // A name defined by two loaded objects (a weak definition and a strong
    // override, say) keeps neither in the link: without one, the other
    // serves, and a linker that pulled an archive member in for other
    // names need not pull it in for this one (mold ranks a command line's
    // weak definition above a member's strong one): only a sole winner
    // counts.
    let per_object: Vec<Vec<(ObjectId, icf_object::SymbolIndex)>> = objects
        .par_iter()
        .enumerate()
        .filter(|(_, object)| object.loaded)
        .map(|(index, object)| {
            object
                .object
                .symbols
                .iter()
                .filter(|symbol| {
                    symbol.place == icf_object::SymbolPlace::Undefined
                        && symbol.binding != icf_object::Binding::Local
                        && !symbol.name.is_empty()
                })
                .filter_map(|symbol| definitions.sole_winner(symbol.name))
                .filter(|(owner, _)| owner.index() != index)
                .collect()
        })
        .collect();
    let mut needed = rustc_hash::FxHashSet::with_capacity_and_hasher(
        per_object.iter().map(Vec::len).sum(),
        Default::default(),
    );
    needed.extend(per_object.into_iter().flatten());
    needed
}

/// A linked image says itself what a link command would: whether it is a
/// shared library (its exported functions may be interposed) and which
/// symbols it exports.
fn image_options(mut options: Options, objects: &[LoadedObject<'_>]) -> anyhow::Result<Options> {
    let [object] = objects else {
        anyhow::bail!(
            "a linked executable or shared library is reported on alone, without other inputs"
        );
    };
    let Some(image) = object.object.image.as_deref() else {
        anyhow::bail!("not a linked executable or shared library");
    };
    options.shared = image.kind == icf_object::ImageKind::SharedLibrary;
    options.exports.patterns = image
        .exports
        .iter()
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect();
    Ok(options)
}
