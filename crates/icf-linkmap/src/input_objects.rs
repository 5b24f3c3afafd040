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
/// An LLVM-size link reads hundreds of objects of thousands of sections
/// each, so each object's facts sit in a few flat buffers rather than a
/// few allocations per section.
struct Sections {
    sections: Vec<ObjectSectionInfo>,
    /// Every section's name, one after another (see [`Sections::name`]).
    names: String,
    /// Every loaded section's relocations, section after section, each
    /// section's by offset: (offset, what the relocation there names).
    relocations: Vec<(u64, Option<RelocSymbol>)>,
    /// Section indices ordered by name, then size (see [`Sections::unique`]).
    by_name: Vec<u32>,
    /// The names of the undefined symbols its relocations name.
    undefined: Vec<String>,
    /// Global symbols it defines in an empty section, and that section.
    empty_definitions: HashMap<String, usize>,
}

#[derive(Default)]
struct ObjectSectionInfo {
    /// Its name's range in [`Sections::names`].
    name: std::ops::Range<u32>,
    size: u64,
    align: u64,
    /// A symbol other than the section's own lies in it: it holds
    /// something with a name (a function, a C object, a Rust static).
    named: bool,
    /// `SHF_MERGE`: the linker places each of its pieces on its own.
    merge: bool,
    /// `SHF_STRINGS` too: each piece is a string ending at its first NUL.
    strings: bool,
    /// A member of a COMDAT group (an inline function's or template's).
    comdat: bool,
    /// Its range in [`Sections::relocations`].
    relocations: std::ops::Range<u32>,
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
        let named_section = named_target.section;
        let named = object.sections.get(named_section)?;
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
            .named(holding.file, object.name(named_section))
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
                if object.sections.get(named.section)?.size != 0 {
                    return None;
                }
                let key = map.file_key(holding.file);
                let name = object.name(named.section);
                map.empty_at(target, key, name)
                    .then(|| (key, name.to_owned()))
            }
            // Another object's symbol: the one whose empty section at the
            // target defines it (a global name is one definition).
            RelocSymbol::Elsewhere(name) => {
                let name = object.undefined.get(name as usize)?;
                map.empty_spans_at(target).find_map(|span| {
                    let definer = self.object(map, span.file)?;
                    let section = *definer.empty_definitions.get(name)?;
                    let section_name = map.section_name(span.name);
                    (definer.name(section) == section_name)
                        .then(|| (map.file_key(span.file), section_name.to_owned()))
                })
            }
        }
    }

    /// What the object says of the input section `span`, when it can be
    /// read as the map describes it.
    pub fn facts(&self, map: &InputSections, span: Span) -> Option<SectionFacts> {
        let object = self.object(map, span.file)?;
        let section = object
            .sections
            .get(object.unique(map.section_name(span.name), size(span))?)?;
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
        let (file, object, named) = self.named_section(map, field)?;
        let name = object.name(named);
        let named = object.sections.get(named)?;
        // A mergeable section's pieces go wherever the linker merged them
        // (GNU ld's map still lists the section, at a place it may not
        // hold): see `names_merged`.
        if named.merge {
            return None;
        }
        let mut placed = map
            .named(file, name)
            .filter(|span| size(*span) == named.size);
        let span = placed.next()?;
        placed.next().is_none().then_some(span)
    }

    /// Where the relocation at `field` names a place in a mergeable
    /// section (whose pieces the linker merged with other objects' into
    /// a section of its own, `<internal>` in lld's map): that section's
    /// name.
    pub fn names_merged(&self, map: &InputSections, field: u64) -> Option<&str> {
        let (_, object, named) = self.named_section(map, field)?;
        object
            .sections
            .get(named)?
            .merge
            .then(|| object.name(named))
    }

    /// Whether the relocation at `field` names a string in a section of
    /// mergeable strings (`.rodata.str1.1`): a piece that ends at its first
    /// NUL wherever the linker put it, though the output section no longer
    /// says so (GNU ld merges such sections into `.rodata`).
    pub fn names_merged_string(&self, map: &InputSections, field: u64) -> bool {
        self.named_section(map, field)
            .and_then(|(_, object, named)| object.sections.get(named))
            .is_some_and(|section| section.strings)
    }

    /// The file holding `field`, its object, and the index of the
    /// section of it the relocation there names.
    fn named_section(&self, map: &InputSections, field: u64) -> Option<(u32, &Sections, usize)> {
        let (holding, object, named) = self.relocation_at(map, field)?;
        let Some(RelocSymbol::Here(named)) = named else {
            return None;
        };
        Some((holding.file, object, named.section))
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
        let relocations = object.relocations(section);
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
                Some(object.sections.get(section)?.comdat)
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
        let mut sections: Vec<ObjectSectionInfo> = Vec::new();
        let mut names = String::new();
        let mut relocations: Vec<(u64, Option<RelocSymbol>)> = Vec::new();
        for section in file.sections() {
            let index = section.index().0;
            if sections.len() <= index {
                sections.resize_with(index + 1, ObjectSectionInfo::default);
            }
            let (elf, sh_flags) = match section.flags() {
                SectionFlags::Elf { sh_flags, .. } => (true, sh_flags.0),
                _ => (false, 0),
            };
            // Only a loaded section's fields are asked about: debug
            // sections' relocations, most of an object's, are not read.
            let loaded = !elf || sh_flags & object::elf::SHF_ALLOC.0 != 0;
            let first = relocations.len();
            if loaded {
                relocations.extend(
                    section
                        .relocations()
                        .map(|(offset, relocation)| (offset, named(relocation.target()))),
                );
            }
            let mine = &mut relocations[first..];
            mine.sort_by_key(|&(offset, _)| offset);
            // Two relocations at one offset (a pair): the field is not one
            // symbol's.
            let mut kept = first;
            for at in first..relocations.len() {
                let (offset, named) = relocations[at];
                if kept > first && relocations[kept - 1].0 == offset {
                    if relocations[kept - 1].1 != named {
                        relocations[kept - 1].1 = None;
                    }
                } else {
                    relocations[kept] = (offset, named);
                    kept += 1;
                }
            }
            relocations.truncate(kept);
            let name_start = names.len();
            names.push_str(section.name().unwrap_or_default());
            sections[index] = ObjectSectionInfo {
                name: u32::try_from(name_start).ok()?..u32::try_from(names.len()).ok()?,
                size: section.size(),
                align: section.align(),
                named: false,
                merge: sh_flags & object::elf::SHF_MERGE.0 != 0,
                strings: sh_flags & object::elf::SHF_MERGE.0 != 0
                    && sh_flags & object::elf::SHF_STRINGS.0 != 0,
                comdat: false,
                relocations: u32::try_from(first).ok()?..u32::try_from(kept).ok()?,
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
        let mut empty_definitions = HashMap::new();
        for symbol in file.symbols() {
            if matches!(symbol.kind(), SymbolKind::Section | SymbolKind::File) {
                continue;
            }
            let SymbolSection::Section(index) = symbol.section() else {
                continue;
            };
            let Some(section) = sections.get_mut(index.0) else {
                continue;
            };
            section.named = true;
            if section.size == 0
                && symbol.is_global()
                && symbol.is_definition()
                && let Ok(name) = symbol.name()
            {
                empty_definitions.insert(name.to_owned(), index.0);
            }
        }
        let mut by_name: Vec<u32> = (0..u32::try_from(sections.len()).ok()?).collect();
        let name_of = |index: u32| {
            let range = &sections[index as usize].name;
            &names[range.start as usize..range.end as usize]
        };
        by_name.sort_unstable_by(|&a, &b| {
            name_of(a)
                .cmp(name_of(b))
                .then(sections[a as usize].size.cmp(&sections[b as usize].size))
        });
        Some(Sections {
            sections,
            names,
            relocations,
            by_name,
            undefined,
            empty_definitions,
        })
    }

    /// Section `index`'s name (empty for an index it does not have).
    fn name(&self, index: usize) -> &str {
        self.sections
            .get(index)
            .and_then(|section| {
                self.names
                    .get(section.name.start as usize..section.name.end as usize)
            })
            .unwrap_or_default()
    }

    /// Section `index`'s relocations, by offset.
    fn relocations(&self, index: usize) -> &[(u64, Option<RelocSymbol>)] {
        self.sections
            .get(index)
            .and_then(|section| {
                self.relocations
                    .get(section.relocations.start as usize..section.relocations.end as usize)
            })
            .unwrap_or_default()
    }

    /// The one section of this name and size.
    fn unique(&self, name: &str, size: u64) -> Option<usize> {
        let key = |&index: &u32| {
            (
                self.name(index as usize),
                self.sections[index as usize].size,
            )
        };
        let first = self
            .by_name
            .partition_point(|index| key(index) < (name, size));
        let found = *self.by_name.get(first)?;
        let unique = key(&found) == (name, size)
            && self
                .by_name
                .get(first + 1)
                .is_none_or(|next| key(next) != (name, size));
        unique.then_some(found as usize)
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
