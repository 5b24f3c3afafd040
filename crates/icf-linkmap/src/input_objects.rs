//! PLAIN's input objects, found through its link map: which input section
//! a field's relocation named, where the image alone cannot say.
//!
//! An assembler writes a reference to a local symbol as one to its section
//! (`.rodata.a + 16`), and a linker keeping relocations (`-q`) writes that
//! again against the output section (`.rodata + 0x44b3c`): where one input
//! section ends and another starts at the target, the image no longer says
//! whether the code pointed one past the end of the first (and may read
//! backward: `end[-i]`) or at the start of the second. The object the map
//! names still does: its relocation's symbol lies in one of the two input
//! sections. Reading it settles the side for certain, and it works without
//! `-q` too.
//!
//! An object is read only when a question needs it, and once. Anything
//! missing or unlike the map (a file moved since the link, a thin archive,
//! two sections of one name and size) answers nothing, so the caller keeps
//! asking for both sides.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use object::read::archive::ArchiveFile;
use object::{
    Object, ObjectComdat, ObjectSection, ObjectSymbol, RelocationTarget, SectionFlags, SymbolKind,
    SymbolSection,
};

use crate::link_map::{InputSections, Span};

/// Which input section at a boundary a field's relocation named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    /// The section ending at the address: the field points one past it.
    Ending,
    /// The section starting there.
    Starting,
}

/// What an object says of one of its sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionFacts {
    /// Its alignment (`sh_addralign`).
    pub align: u64,
    /// `SHF_MERGE`: the linker merges its pieces with other objects'.
    pub merge: bool,
    /// It has relocations: its bytes are not all its content.
    pub relocated: bool,
    /// A symbol other than its own section symbol lies in it.
    pub named: bool,
}

/// The input objects of one link map, read on demand.
pub struct InputObjects {
    /// The map's directory: relative paths in it are tried from there too.
    base: PathBuf,
    /// By the map's file id: the object's sections, once read (`None`:
    /// not readable as the map describes it).
    objects: Vec<OnceLock<Option<Sections>>>,
    /// Archives read so far, by path: their bytes and member ranges.
    archives: Mutex<HashMap<String, Option<Arc<Archive>>>>,
}

struct Archive {
    data: memmap2::Mmap,
    /// Each member's range in `data` (`None`: several of that name).
    members: HashMap<String, Option<(u64, u64)>>,
}

impl std::fmt::Debug for InputObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputObjects")
            .field("base", &self.base)
            .field("files", &self.objects.len())
            .finish()
    }
}

/// What one object says: per section, its name, size and relocations.
struct Sections {
    sections: Vec<ObjectSectionInfo>,
    /// The names of the undefined symbols its relocations name.
    undefined: Vec<String>,
    /// Global symbols it defines in an empty section, and that section.
    empty_definitions: HashMap<String, usize>,
    /// Section indices by name.
    by_name: HashMap<String, Vec<usize>>,
}

struct ObjectSectionInfo {
    name: String,
    size: u64,
    align: u64,
    /// A symbol other than the section's own lies in it: it holds
    /// something with a name (a function, a C object, a Rust static).
    named: bool,
    /// `SHF_MERGE`: the linker places each of its pieces on its own.
    merge: bool,
    /// A member of a COMDAT group (an inline function's or template's).
    comdat: bool,
    /// (offset, what the relocation there names), by offset.
    relocations: Vec<(u64, Option<RelocSymbol>)>,
}

/// What a relocation names: the section its symbol lies in, and whether
/// the symbol is an object with a size (rather than the section's own
/// symbol or a label, which name a place, not an extent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Target {
    section: usize,
    sized_object: bool,
}

/// A relocation's symbol: defined in the object, or another's (an index
/// into [`Sections::undefined`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RelocSymbol {
    Here(Target),
    Elsewhere(u32),
}

impl InputObjects {
    pub fn new(map: &Path, sections: &InputSections) -> InputObjects {
        InputObjects {
            base: map.parent().map(Path::to_path_buf).unwrap_or_default(),
            objects: (0..sections.file_count())
                .map(|_| OnceLock::new())
                .collect(),
            archives: Mutex::new(HashMap::new()),
        }
    }

    /// Which of the input sections ending and starting at `target` the
    /// relocation at `field` named, by its object; `None` when the object
    /// cannot say (see the module's header).
    pub fn named_at(&self, map: &InputSections, field: u64, target: u64) -> Option<Named> {
        let (holding, object, named) = self.relocation_at(map, field)?;
        let Some(RelocSymbol::Here(named_target)) = named else {
            return None;
        };
        let named = &object.sections[named_target.section];
        // In a mergeable section the linker resolves a reference to a
        // place (the section's symbol plus an offset, or a label: how
        // assemblers write one to an unnamed constant or string) to the
        // piece holding it (at a boundary, the piece starting there), and
        // places every piece on its own: what lies before it is no part of
        // what the code named, in PLAIN's link as in any other. (A sized
        // object plus its size, one past its end, is left to the map.)
        if named.merge && !named_target.sized_object {
            return Some(Named::Starting);
        }
        // Where that section lies: the one of its name and size in the
        // same file (the map lists no section index).
        let mut placed = map
            .named(holding.file, &named.name)
            .filter(|span| size(*span) == named.size);
        let span = placed.next()?;
        if placed.next().is_some() {
            return None;
        }
        // A zero-sized object (Rust's unit statics: `log`'s `NOP`) holds
        // no byte to read on either side: what ends there is all it is.
        if span.end == target {
            Some(Named::Ending)
        } else if span.start == target {
            Some(Named::Starting)
        } else {
            None
        }
    }

    /// Where the relocation at `field` names an empty input section (a
    /// zero-sized object) lying at `target`: its file's key and its name.
    pub fn empty_named_at<'m>(
        &self,
        map: &'m InputSections,
        field: u64,
        target: u64,
    ) -> Option<(&'m str, String)> {
        let (holding, object, named) = self.relocation_at(map, field)?;
        match named? {
            RelocSymbol::Here(named) => {
                let named = &object.sections[named.section];
                if named.size != 0 {
                    return None;
                }
                let key = map.file_key(holding.file);
                map.empty_at(target, key, &named.name)
                    .then(|| (key, named.name.clone()))
            }
            // Another object's symbol: the one whose empty section at the
            // target defines it (a global name is one definition).
            RelocSymbol::Elsewhere(name) => {
                let name = object.undefined.get(name as usize)?;
                map.empty_spans_at(target).find_map(|span| {
                    let definer = self.object(map, span.file)?;
                    let section = *definer.empty_definitions.get(name)?;
                    let section_name = map.section_name(span.name);
                    (definer.sections.get(section)?.name == section_name)
                        .then(|| (map.file_key(span.file), section_name.to_owned()))
                })
            }
        }
    }

    /// What the object says of the input section `span`, when it can be
    /// read as the map describes it.
    pub fn facts(&self, map: &InputSections, span: Span) -> Option<SectionFacts> {
        let object = self.object(map, span.file)?;
        let section = &object.sections[object.unique(map.section_name(span.name), size(span))?];
        Some(SectionFacts {
            align: section.align,
            merge: section.merge,
            relocated: !section.relocations.is_empty(),
            named: section.named,
        })
    }

    /// The input section the relocation at `field` names, by its object:
    /// one of the same file, where the symbol the relocation names lies
    /// (its own section symbol, or a label or object in it). `None` where
    /// the object cannot say, names another object's symbol, or names a
    /// mergeable section.
    pub fn names(&self, map: &InputSections, field: u64) -> Option<Span> {
        let (file, named) = self.named_section(map, field)?;
        // A mergeable section's pieces go wherever the linker merged them
        // (GNU ld's map still lists the section, at a place it may not
        // hold): see `names_merged`.
        if named.merge {
            return None;
        }
        let mut placed = map
            .named(file, &named.name)
            .filter(|span| size(*span) == named.size);
        let span = placed.next()?;
        placed.next().is_none().then_some(span)
    }

    /// Where the relocation at `field` names a place in a mergeable
    /// section (whose pieces the linker merged with other objects' into
    /// a section of its own, `<internal>` in lld's map): that section's
    /// name.
    pub fn names_merged(&self, map: &InputSections, field: u64) -> Option<&str> {
        let (_, named) = self.named_section(map, field)?;
        named.merge.then_some(named.name.as_str())
    }

    /// The file holding `field` and the section of it the relocation
    /// there names.
    fn named_section(&self, map: &InputSections, field: u64) -> Option<(u32, &ObjectSectionInfo)> {
        let (holding, object, named) = self.relocation_at(map, field)?;
        let Some(RelocSymbol::Here(named)) = named else {
            return None;
        };
        Some((holding.file, object.sections.get(named.section)?))
    }

    /// The relocation at `field`, by its object: the input section
    /// holding the field, that object, and what the relocation names.
    fn relocation_at(
        &self,
        map: &InputSections,
        field: u64,
    ) -> Option<(Span, &Sections, Option<RelocSymbol>)> {
        let holding = map.span_at(field)?;
        let object = self.object(map, holding.file)?;
        let section = object.unique(map.section_name(holding.name), size(holding))?;
        let relocations = &object.sections[section].relocations;
        let offset = field - holding.start;
        let at = relocations
            .binary_search_by_key(&offset, |&(o, _)| o)
            .ok()?;
        Some((holding, object, relocations[at].1))
    }

    /// Whether the input section holding `address` is in a COMDAT group
    /// of its object.
    pub fn in_comdat_group(&self, map: &InputSections, address: u64) -> bool {
        let Some(holding) = map.span_at(address) else {
            return false;
        };
        self.object(map, holding.file)
            .and_then(|object| {
                let section = object.unique(map.section_name(holding.name), size(holding))?;
                Some(object.sections[section].comdat)
            })
            .unwrap_or(false)
    }

    fn object(&self, map: &InputSections, file: u32) -> Option<&Sections> {
        self.objects
            .get(file as usize)?
            .get_or_init(|| self.read(map.file_name(file)))
            .as_ref()
    }

    /// Reads `name` as the map writes it: `path` or `archive(member)`.
    fn read(&self, name: &str) -> Option<Sections> {
        match name.strip_suffix(')').and_then(|n| n.split_once('(')) {
            Some((archive, member)) => {
                let archive = self.archive(archive)?;
                let (offset, size) = (*archive.members.get(member)?)?;
                let start = usize::try_from(offset).ok()?;
                let end = start.checked_add(usize::try_from(size).ok()?)?;
                let sections = Sections::parse(archive.data.get(start..end)?);
                // What was read is kept as `Sections`: the member's pages
                // need not stay resident (an LLVM-size link's archives run
                // to hundreds of megabytes).
                // SAFETY: the mapping is read-only and no slice of it
                // outlives this call (`Sections` owns its data); dropped
                // pages fault back in from the file if read again.
                let _ = unsafe {
                    archive.data.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        start,
                        end - start,
                    )
                };
                sections
            }
            None => Sections::parse(&map_file(&self.path(name)?)?),
        }
    }

    fn archive(&self, path: &str) -> Option<Arc<Archive>> {
        let mut archives = self.archives.lock().ok()?;
        archives
            .entry(path.to_owned())
            .or_insert_with(|| {
                let data = map_file(&self.path(path)?)?;
                let members = {
                    let archive = ArchiveFile::parse(&*data).ok()?;
                    // A thin archive's members live in other files.
                    if archive.is_thin() {
                        return None;
                    }
                    let mut members = HashMap::new();
                    for member in archive.members() {
                        let member = member.ok()?;
                        let name = String::from_utf8_lossy(member.name()).into_owned();
                        // Two members of one name: the map cannot say which.
                        let range = match members.contains_key(&name) {
                            true => None,
                            false => Some(member.file_range()),
                        };
                        members.insert(name, range);
                    }
                    members
                };
                // The member headers read, every page they lie on need
                // not stay resident either (see `read`).
                // SAFETY: as in `read`: nothing borrows the mapping now.
                let _ = unsafe {
                    data.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, data.len())
                };
                Some(Arc::new(Archive { data, members }))
            })
            .clone()
    }

    /// `name` as it exists: from the working directory, else from the map's.
    fn path(&self, name: &str) -> Option<PathBuf> {
        let path = Path::new(name);
        if path.exists() {
            return Some(path.to_path_buf());
        }
        let beside = self.base.join(path);
        beside.exists().then_some(beside)
    }
}

impl Sections {
    fn parse(data: &[u8]) -> Option<Sections> {
        let file = object::File::parse(data).ok()?;
        if file.kind() != object::ObjectKind::Relocatable {
            return None;
        }
        let mut undefined: Vec<String> = Vec::new();
        let mut undefined_ids: HashMap<usize, u32> = HashMap::new();
        let mut named = |target: RelocationTarget| match target {
            RelocationTarget::Section(index) => Some(RelocSymbol::Here(Target {
                section: index.0,
                sized_object: false,
            })),
            RelocationTarget::Symbol(index) => {
                let symbol = file.symbol_by_index(index).ok()?;
                match symbol.section() {
                    SymbolSection::Section(section) => Some(RelocSymbol::Here(Target {
                        section: section.0,
                        sized_object: symbol.kind() != SymbolKind::Section && symbol.size() > 0,
                    })),
                    SymbolSection::Undefined => {
                        let id = *undefined_ids.entry(index.0).or_insert_with(|| {
                            undefined.push(symbol.name().unwrap_or_default().to_owned());
                            (undefined.len() - 1) as u32
                        });
                        Some(RelocSymbol::Elsewhere(id))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let mut sections = Vec::new();
        for section in file.sections() {
            let index = section.index().0;
            if sections.len() <= index {
                sections.resize_with(index + 1, || ObjectSectionInfo {
                    name: String::new(),
                    size: 0,
                    align: 0,
                    named: false,
                    merge: false,
                    comdat: false,
                    relocations: Vec::new(),
                });
            }
            // Only a loaded section's fields are asked about: debug
            // sections' relocations, most of an object's, are not read.
            let loaded = match section.flags() {
                SectionFlags::Elf { sh_flags, .. } => sh_flags.0 & object::elf::SHF_ALLOC.0 != 0,
                _ => true,
            };
            let mut relocations: Vec<(u64, Option<RelocSymbol>)> = match loaded {
                true => section
                    .relocations()
                    .map(|(offset, relocation)| (offset, named(relocation.target())))
                    .collect(),
                false => Vec::new(),
            };
            relocations.sort_unstable_by_key(|&(offset, _)| offset);
            // Two relocations at one offset (a pair): the field is not one
            // symbol's.
            let mut unique = Vec::with_capacity(relocations.len());
            for (offset, named) in relocations {
                match unique.last_mut() {
                    Some((last, last_named)) if *last == offset => {
                        if *last_named != named {
                            *last_named = None;
                        }
                    }
                    _ => unique.push((offset, named)),
                }
            }
            let merge = match section.flags() {
                SectionFlags::Elf { sh_flags, .. } => sh_flags.0 & object::elf::SHF_MERGE.0 != 0,
                _ => false,
            };
            sections[index] = ObjectSectionInfo {
                name: section.name().unwrap_or_default().to_owned(),
                size: section.size(),
                align: section.align(),
                named: false,
                merge,
                comdat: false,
                relocations: unique,
            };
        }
        for comdat in file.comdats() {
            if comdat.kind() != object::ComdatKind::Any {
                continue;
            }
            for index in comdat.sections() {
                if let Some(section) = sections.get_mut(index.0) {
                    section.comdat = true;
                }
            }
        }
        for symbol in file.symbols() {
            if matches!(symbol.kind(), SymbolKind::Section | SymbolKind::File) {
                continue;
            }
            if let SymbolSection::Section(index) = symbol.section()
                && let Some(section) = sections.get_mut(index.0)
            {
                section.named = true;
            }
        }
        let empty_definitions = file
            .symbols()
            .filter(|symbol| symbol.is_global() && symbol.is_definition())
            .filter_map(|symbol| {
                let SymbolSection::Section(index) = symbol.section() else {
                    return None;
                };
                let empty = sections.get(index.0).is_some_and(|s| s.size == 0);
                let name = symbol.name().ok()?;
                empty.then(|| (name.to_owned(), index.0))
            })
            .collect();
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (index, section) in sections.iter().enumerate() {
            by_name.entry(section.name.clone()).or_default().push(index);
        }
        Some(Sections {
            sections,
            undefined,
            empty_definitions,
            by_name,
        })
    }

    /// The one section of this name and size.
    fn unique(&self, name: &str, size: u64) -> Option<usize> {
        let mut found = self
            .by_name
            .get(name)?
            .iter()
            .copied()
            .filter(|&index| self.sections[index].size == size);
        let first = found.next()?;
        found.next().is_none().then_some(first)
    }
}

/// `path`'s bytes, mapped (read only, and only where asked).
fn map_file(path: &Path) -> Option<memmap2::Mmap> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: the link's inputs are not written while icf reads them; a
    // file changed under the map reads as other bytes, which the reader
    // checks as it would any input (and which answers nothing here).
    unsafe { memmap2::Mmap::map(&file) }.ok()
}

fn size(span: Span) -> u64 {
    span.end - span.start
}
