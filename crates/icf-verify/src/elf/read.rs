//! A linked ELF image (executable or shared library) read into the image
//! model ([`ImageParts`]): allocated sections, function and object symbols
//! with their identity across two links, the relocations a
//! `-q`/`--emit-relocs` link kept, the dynamic relocations (GOT slots,
//! pointers in data), and the PLT entries with the symbol each binds.
//! Main assumption: a little-endian 64-bit ELF file (x86-64 or AArch64)
//! whose symbols are trustworthy (`.symtab`, else `.dynsym`); everything
//! read from the file is checked here, so later code never panics on it.

use object::elf;
use object::read::elf::{FileHeader, Rela, SectionHeader, Sym};
use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::error::Error;
use crate::image::*;

/// An ELF section's role, by its name.
fn role_of(name: &str) -> SectionRole {
    match name {
        ".got" => SectionRole::Got,
        ".got.plt" => SectionRole::LazyGot,
        ".iplt" => SectionRole::Plt { entry_size: 16 },
        _ if name.starts_with(".plt") => SectionRole::Plt { entry_size: 16 },
        _ => SectionRole::Other,
    }
}

/// Whether a section's contents are made by the linker (dynamic section,
/// GOT, PLT, dynamic relocations, symbol and hash tables, version tables,
/// notes, `.interp`, `.eh_frame_hdr`) rather than copied from the inputs.
/// Such contents legitimately differ between two links whose inputs differ
/// (counts, sizes, addresses), so symbols in them (`_DYNAMIC`,
/// `_GLOBAL_OFFSET_TABLE_`) are not compared as data objects: what the
/// program does with them is checked where its code uses them (PLT entries
/// by the symbol they bind, GOT slots by what the loader writes there).
pub(crate) fn is_synthesized(name: &str, sh_type: u32) -> bool {
    const SHT_STRTAB: u32 = 3;
    const SHT_HASH: u32 = 5;
    const SHT_DYNAMIC: u32 = 6;
    const SHT_NOTE: u32 = 7;
    const SHT_REL: u32 = 9;
    const SHT_RELR: u32 = 19;
    const SHT_GNU_HASH: u32 = 0x6fff_fff6;
    const SHT_GNU_VERDEF: u32 = 0x6fff_fffd;
    const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
    const SHT_GNU_VERSYM: u32 = 0x6fff_ffff;
    let by_type = matches!(
        sh_type,
        SHT_SYMTAB
            | SHT_STRTAB
            | SHT_RELA
            | SHT_HASH
            | SHT_DYNAMIC
            | SHT_NOTE
            | SHT_DYNSYM
            | SHT_REL
            | SHT_RELR
            | SHT_GNU_HASH
            | SHT_GNU_VERDEF
            | SHT_GNU_VERNEED
            | SHT_GNU_VERSYM
    );
    let by_name = matches!(
        name,
        ".dynamic"
            | ".got"
            | ".got.plt"
            | ".igot"
            | ".igot.plt"
            | ".plt"
            | ".plt.got"
            | ".plt.sec"
            | ".iplt"
            | ".interp"
            | ".eh_frame_hdr"
            | ".relro_padding"
    ) || name.starts_with(".rela")
        || name.starts_with(".rel.")
        || name.starts_with(".note");
    by_type || by_name
}

const SHT_RELA: u32 = 4;

const SHT_NOBITS: u32 = 8;

const SHT_SYMTAB: u32 = 2;

const SHT_DYNSYM: u32 = 11;

const SHF_WRITE: u64 = 1;

const SHF_ALLOC: u64 = 2;

const SHF_COMPRESSED: u64 = 0x800;

const SHF_EXECINSTR: u64 = 4;

const SHF_MERGE: u64 = 0x10;

const SHF_STRINGS: u64 = 0x20;

const STT_OBJECT: u8 = 1;

const STT_FUNC: u8 = 2;

const STT_SECTION: u8 = 3;

const STT_FILE: u8 = 4;

const STB_LOCAL: u8 = 0;

const STB_WEAK: u8 = 2;

const STT_NOTYPE: u8 = 0;

const STT_GNU_IFUNC: u8 = 10;

/// Relative relocations: the slot holds the image base plus the addend.
fn is_relative(arch: Arch, r_type: u32) -> bool {
    match arch {
        Arch::X86_64 => r_type == 8,     // R_X86_64_RELATIVE
        Arch::Aarch64 => r_type == 1027, // R_AARCH64_RELATIVE
    }
}

/// Relocations whose slot holds `S + A` (absolute words, GOT entries, PLT slots).
/// `IRELATIVE`: the slot holds what the resolver at the addend returns.
fn is_resolver(arch: Arch, r_type: u32) -> bool {
    match arch {
        Arch::X86_64 => r_type == 37,    // R_X86_64_IRELATIVE
        Arch::Aarch64 => r_type == 1032, // R_AARCH64_IRELATIVE
    }
}

fn is_symbol_word(arch: Arch, r_type: u32) -> bool {
    match arch {
        // R_X86_64_64, GLOB_DAT, JUMP_SLOT
        Arch::X86_64 => matches!(r_type, 1 | 6 | 7),
        // R_AARCH64_ABS64, GLOB_DAT, JUMP_SLOT
        Arch::Aarch64 => matches!(r_type, 257 | 1025 | 1026),
    }
}

/// Reads the ELF image in `data`, the bytes of `path`.
pub(crate) fn read_elf(path: &Path, data: Vec<u8>) -> Result<ImageParts, Error> {
    let file = LinkedFile::read(path, &data)?;
    let sections = read_sections(path, &file)?;
    let tables = SymbolTables::read(path, &file)?;
    let symbol_facts = SymbolFacts::read(path, &file, &sections, tables.naming())?;
    let relocations = Relocations::read(path, &file, &sections, &tables, &symbol_facts)?;
    let exported_names = exported_names(&tables.dynsym, file.endian);
    let exported_functions = exported_functions(&tables.dynsym, file.endian);
    let (arch, position_independent, is_program) =
        (file.arch, file.position_independent, file.is_program);
    Ok(ImageParts {
        arch,
        sections,
        symbols: symbol_facts.symbols,
        labels: symbol_facts.labels,
        code_entries: symbol_facts.code_entries,
        erratum_patches: symbol_facts.erratum_patches,
        bindings_kept: symbol_facts.bindings_kept,
        relocations,
        exported_functions,
        exported_names,
        position_independent,
        is_program,
        data_in_code: Vec::new(),
        sizes_to_next_symbol: false,
        image_base: 0,
        data,
    })
}

/// The ELF file header of a 64-bit image, either byte order.
type Header = elf::FileHeader64<object::Endianness>;

/// An image's section header table.
type SectionTable<'data> = object::read::elf::SectionTable<'data, Header>;

/// One of an image's symbol tables (`.symtab` or `.dynsym`).
type SymbolTable<'data> = object::read::elf::SymbolTable<'data, Header>;

/// One entry of a symbol table.
type ElfSymbol = elf::Sym64<object::Endianness>;

/// One relocation with an addend.
type RelaEntry = elf::Rela64<object::Endianness>;

/// A linked ELF file as far as its header goes: what the file header says
/// about the image, and the section header table, borrowed from the bytes.
struct LinkedFile<'data> {
    data: &'data [u8],
    endian: object::Endianness,
    arch: Arch,
    /// `ET_DYN` (PIE or shared object).
    position_independent: bool,
    /// An executable (a PIE included: it asks for an interpreter) comes
    /// first in the dynamic linker's lookup scope: a name it defines
    /// binds to its own definition, which no library can preempt.
    is_program: bool,
    /// The ELF entry point.
    entry: u64,
    /// The section header table.
    table: SectionTable<'data>,
}

impl<'data> LinkedFile<'data> {
    /// Checks the file header of `data` (64-bit ELF, x86-64 or AArch64, an
    /// executable or shared library) and reads the section header table.
    fn read(path: &Path, data: &'data [u8]) -> Result<LinkedFile<'data>, Error> {
        let bad = |what: &str| Error::new(path, what.to_string());
        let header =
            Header::parse(data).map_err(|e| bad(&format!("not a 64-bit ELF file: {e}")))?;
        let endian = header
            .endian()
            .map_err(|e| bad(&format!("bad ELF header: {e}")))?;
        let arch = match header.e_machine(endian) {
            elf::EM_X86_64 => Arch::X86_64,
            elf::EM_AARCH64 => Arch::Aarch64,
            other => return Err(bad(&format!("unsupported machine {}", other.0))),
        };
        if !matches!(header.e_type(endian), elf::ET_EXEC | elf::ET_DYN) {
            return Err(bad("not a linked executable or shared library"));
        }
        let position_independent = header.e_type(endian) == elf::ET_DYN;
        let is_program = header.e_type(endian) == elf::ET_EXEC
            || header.program_headers(endian, data).is_ok_and(|headers| {
                headers
                    .iter()
                    .any(|h| h.p_type.get(endian) == elf::PT_INTERP)
            });
        let entry = header.e_entry(endian);
        let table = header
            .sections(endian, data)
            .map_err(|e| bad(&format!("bad section headers: {e}")))?;
        Ok(LinkedFile {
            data,
            endian,
            arch,
            position_independent,
            is_program,
            entry,
            table,
        })
    }
}

/// Every section of `file`, in section header order; an error for an
/// allocated section whose contents lie outside the file.
fn read_sections(path: &Path, file: &LinkedFile<'_>) -> Result<Vec<Section>, Error> {
    let mut sections = Vec::with_capacity(file.table.len());
    for header in file.table.iter() {
        sections.push(read_section(path, file, header)?);
    }
    Ok(sections)
}

/// One section of `file` as [`Section`] holds it: its name, addresses,
/// place in the file and what its flags say.
fn read_section(
    path: &Path,
    file: &LinkedFile<'_>,
    header: &elf::SectionHeader64<object::Endianness>,
) -> Result<Section, Error> {
    let endian = file.endian;
    let name = file
        .table
        .section_name(endian, header)
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let flags = header.sh_flags(endian).0;
    let kind = header.sh_type(endian).0;
    let size = header.sh_size(endian);
    let file_range = section_file_range(path, file, header, &name)?;
    let synthesized = is_synthesized(&name, kind);
    let relro_data = name.starts_with(".data.rel.ro");
    let role = role_of(&name);
    Ok(Section {
        name,
        address: header.sh_addr(endian),
        size,
        file_range,
        alloc: flags & SHF_ALLOC != 0,
        writable: flags & SHF_WRITE != 0 && !relro_data,
        executable: flags & SHF_EXECINSTR != 0,
        strings: flags & (SHF_MERGE | SHF_STRINGS) == SHF_MERGE | SHF_STRINGS,
        merge_entry_size: if flags & SHF_MERGE != 0 {
            header.sh_entsize(endian)
        } else {
            0
        },
        synthesized,
        compressed: flags & SHF_COMPRESSED != 0,
        role,
    })
}

/// Where the contents of section `name` lie in the file: `None` for
/// `SHT_NOBITS`, and for an empty or unallocated section whose range is not
/// in the file; an error for an allocated one with contents outside it.
fn section_file_range(
    path: &Path,
    file: &LinkedFile<'_>,
    header: &elf::SectionHeader64<object::Endianness>,
    name: &str,
) -> Result<Option<(usize, usize)>, Error> {
    let endian = file.endian;
    let flags = header.sh_flags(endian).0;
    let size = header.sh_size(endian);
    if header.sh_type(endian).0 == SHT_NOBITS {
        return Ok(None);
    }
    let start = usize::try_from(header.sh_offset(endian)).ok();
    let end = start.and_then(|s| s.checked_add(usize::try_from(size).ok()?));
    match (start, end) {
        (Some(start), Some(end)) if end <= file.data.len() => Ok(Some((start, end))),
        _ if flags & SHF_ALLOC != 0 && size > 0 => Err(Error::new(
            path,
            format!("section {name} lies outside the file"),
        )),
        _ => Ok(None),
    }
}

/// The image's two symbol tables, and which of them names its symbols.
struct SymbolTables<'data> {
    symtab: SymbolTable<'data>,
    dynsym: SymbolTable<'data>,
    /// `.symtab` is empty (a stripped image): `.dynsym` names the symbols,
    /// and no relocation section is read as one a `-q` link kept.
    use_dynsym: bool,
}

impl<'data> SymbolTables<'data> {
    /// Reads `.symtab` and `.dynsym` (either may be empty); an error when
    /// neither holds a symbol.
    fn read(path: &Path, file: &LinkedFile<'data>) -> Result<SymbolTables<'data>, Error> {
        let bad = |what: &str| Error::new(path, what.to_string());
        let symtab = file
            .table
            .symbols(file.endian, file.data, elf::SHT_SYMTAB)
            .map_err(|e| bad(&format!("bad .symtab: {e}")))?;
        let dynsym = file
            .table
            .symbols(file.endian, file.data, elf::SHT_DYNSYM)
            .map_err(|e| bad(&format!("bad .dynsym: {e}")))?;
        let tables = SymbolTables {
            use_dynsym: symtab.symbols().len() <= 1,
            symtab,
            dynsym,
        };
        if tables.naming().symbols().len() <= 1 {
            return Err(bad(
                "has no symbols (.symtab or .dynsym): cannot name functions",
            ));
        }
        Ok(tables)
    }

    /// The table the image's symbols are read from: `.symtab`, else `.dynsym`.
    fn naming(&self) -> &SymbolTable<'data> {
        if self.use_dynsym {
            &self.dynsym
        } else {
            &self.symtab
        }
    }
}

/// What the symbol table says: the image's symbols, and the facts about
/// places (labels, code entries) and ELF symbol indices read along the way.
struct SymbolFacts {
    /// Named functions, and named data objects with a size, each global
    /// once.
    symbols: Vec<Symbol>,
    /// See [`Image::labels`]: sorted, without duplicates.
    labels: Vec<u64>,
    /// The entry point, then the address of every function, `NOTYPE` or
    /// ifunc symbol in an executable section, in table order.
    code_entries: Vec<u64>,
    /// See [`Image::erratum_patches`]: sorted.
    erratum_patches: Vec<u64>,
    /// See [`Image::bindings_kept`].
    bindings_kept: bool,
    /// How many symbols share each (name, file), and each name.
    file_counts: HashMap<(String, Option<String>), u32>,
    name_counts: HashMap<String, u32>,
    /// The symbol each ELF symbol index stands for.
    elf_index_to_symbol: HashMap<u32, SymbolId>,
    /// The address of the section each ELF section symbol stands for.
    section_symbol_address: HashMap<u32, u64>,
}

impl SymbolFacts {
    /// Reads every symbol of `table`, in order, against `sections`; an
    /// error for a symbol in a section that does not exist.
    fn read(
        path: &Path,
        file: &LinkedFile<'_>,
        sections: &[Section],
        table: &SymbolTable<'_>,
    ) -> Result<SymbolFacts, Error> {
        let mut reader = SymbolReader {
            sections,
            endian: file.endian,
            file: None,
            globals_seen: HashMap::new(),
            facts: SymbolFacts {
                symbols: Vec::new(),
                labels: Vec::new(),
                code_entries: vec![file.entry],
                erratum_patches: Vec::new(),
                bindings_kept: false,
                file_counts: HashMap::new(),
                name_counts: HashMap::new(),
                elf_index_to_symbol: HashMap::new(),
                section_symbol_address: HashMap::new(),
            },
        };
        for (index, sym) in table.symbols().iter().enumerate() {
            let name = table
                .symbol_name(file.endian, sym)
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .unwrap_or_default();
            reader.read_symbol(path, index, sym, name)?;
        }
        let mut facts = reader.facts;
        facts.labels.sort_unstable();
        facts.labels.dedup();
        facts.erratum_patches.sort_unstable();
        Ok(facts)
    }

    /// The symbol a kept relocation names through ELF symbol
    /// `symbol_index` (`None` for a section symbol or a symbol the image
    /// does not keep), and the address it stands for.
    fn relocation_symbol(
        &self,
        symtab: &SymbolTable<'_>,
        endian: object::Endianness,
        symbol_index: u32,
    ) -> (Option<SymbolId>, u64) {
        if let Some(&id) = self.elf_index_to_symbol.get(&symbol_index) {
            (Some(id), self.symbols[id.0 as usize].address)
        } else if let Some(&address) = self.section_symbol_address.get(&symbol_index) {
            (None, address)
        } else {
            let base = symtab
                .symbol(object::SymbolIndex(symbol_index as usize))
                .map(|s| s.st_value(endian))
                .unwrap_or(0);
            (None, base)
        }
    }
}

/// Reads a symbol table in order into [`SymbolFacts`], keeping what one
/// symbol tells about the next.
struct SymbolReader<'a> {
    sections: &'a [Section],
    endian: object::Endianness,
    /// The name of the last `STT_FILE` symbol: the file of the locals after it.
    file: Option<String>,
    /// Globals read so far, by (name, value, size): mold may write a global
    /// twice (an alias icf made and the definition it stands for).
    globals_seen: HashMap<(String, u64, u64), SymbolId>,
    facts: SymbolFacts,
}

impl SymbolReader<'_> {
    /// Reads ELF symbol `index`, named `name`: a file name, a section
    /// symbol, a label or code entry, a function or data object.
    fn read_symbol(
        &mut self,
        path: &Path,
        index: usize,
        sym: &ElfSymbol,
        name: String,
    ) -> Result<(), Error> {
        let sections = self.sections;
        let st_type = sym.st_type().0;
        if st_type == STT_FILE {
            self.file = Some(name);
            return Ok(());
        }
        let Some(section) = sym.st_shndx(self.endian).index().map(usize::from) else {
            return Ok(());
        };
        if section >= sections.len() {
            return Err(Error::new(
                path,
                format!("symbol {name} names section {section}, which does not exist"),
            ));
        }
        self.facts.bindings_kept |= sym.st_bind().0 != STB_LOCAL;
        if st_type == STT_SECTION {
            self.facts
                .section_symbol_address
                .insert(index as u32, sections[section].address);
            return Ok(());
        }
        self.note_place(
            &sections[section],
            st_type,
            &name,
            sym.st_value(self.endian),
        );
        let kind = match st_type {
            STT_FUNC => SymbolKind::Function,
            STT_OBJECT => SymbolKind::Object,
            _ => return Ok(()),
        };
        let size = sym.st_size(self.endian);
        if name.is_empty() || (size == 0 && kind == SymbolKind::Object) {
            return Ok(());
        }
        self.add_symbol(index, sym, name, kind, section);
        Ok(())
    }

    /// Notes what a symbol of type `st_type` at `address` in `section`
    /// marks: a data label, or an entry into code (and whether that entry
    /// is a Cortex-A53 erratum patch).
    fn note_place(&mut self, section: &Section, st_type: u8, name: &str, address: u64) {
        if section.alloc && !section.executable {
            self.facts.labels.push(address);
        }
        if section.executable && matches!(st_type, STT_FUNC | STT_NOTYPE | STT_GNU_IFUNC) {
            self.facts.code_entries.push(address);
            if name.starts_with("e843419@") || name.starts_with("__CortexA53843419_") {
                self.facts.erratum_patches.push(address);
            }
        }
    }

    /// Adds a named function or sized data object as the next [`Symbol`],
    /// numbered among those of its (name, file) and its name; a global
    /// already read at the same value with the same size is that symbol.
    fn add_symbol(
        &mut self,
        index: usize,
        sym: &ElfSymbol,
        name: String,
        kind: SymbolKind,
        section: usize,
    ) {
        let endian = self.endian;
        let facts = &mut self.facts;
        let size = sym.st_size(endian);
        let file = (sym.st_bind().0 == STB_LOCAL)
            .then(|| self.file.clone())
            .flatten();
        let global = sym.st_bind().0 != STB_LOCAL;
        let key = (name.clone(), sym.st_value(endian), size);
        if global && let Some(&id) = self.globals_seen.get(&key) {
            facts.elf_index_to_symbol.insert(index as u32, id);
            return;
        }
        let in_file = facts
            .file_counts
            .entry((name.clone(), file.clone()))
            .or_insert(0);
        let in_name = facts.name_counts.entry(name.clone()).or_insert(0);
        let id = SymbolId(facts.symbols.len() as u32);
        facts.elf_index_to_symbol.insert(index as u32, id);
        if global {
            self.globals_seen.insert(key, id);
        }
        facts.symbols.push(Symbol {
            name,
            file,
            ordinal_in_file: *in_file,
            ordinal_in_name: *in_name,
            address: sym.st_value(endian),
            size,
            kind,
            section,
            weak: sym.st_bind().0 == STB_WEAK,
            global,
            hidden: matches!(sym.st_visibility(), elf::STV_HIDDEN | elf::STV_INTERNAL),
            rustc_function: false,
        });
        *in_file += 1;
        *in_name += 1;
    }
}

impl Relocations {
    /// Reads every `SHT_RELA` section of `file`: one linked to `.symtab`
    /// that applies to a section holds kept relocations, one linked to
    /// `.dynsym` (or to nothing) dynamic ones; an error for one that cannot
    /// be read.
    fn read(
        path: &Path,
        file: &LinkedFile<'_>,
        sections: &[Section],
        tables: &SymbolTables<'_>,
        symbols: &SymbolFacts,
    ) -> Result<Relocations, Error> {
        let endian = file.endian;
        let mut relocations = Relocations::default();
        for (section_index, header) in file.table.iter().enumerate() {
            if header.sh_type(endian) == elf::SHT_RELR {
                relocations.read_relr(path, file, sections, section_index, header)?;
                continue;
            }
            if header.sh_type(endian).0 != SHT_RELA {
                continue;
            }
            let Ok(Some((relas, link))) = header.rela(endian, file.data) else {
                return Err(Error::new(
                    path,
                    format!(
                        "relocation section {} cannot be read",
                        sections[section_index].name
                    ),
                ));
            };
            let link_type = file
                .table
                .section(link)
                .map(|s| s.sh_type(endian).0)
                .unwrap_or(0);
            let applies_to = header.sh_info(endian) as usize;
            // A loaded relocation section is the program's own, applied
            // at run time, even linked to `.symtab` (a static program's
            // `IRELATIVE`s, which its start-up code applies).
            let loaded = header.sh_flags(endian).0 & SHF_ALLOC != 0;
            if link_type == SHT_SYMTAB && applies_to != 0 && !tables.use_dynsym && !loaded {
                // Emitted relocations: places are virtual addresses (bfd, gold, lld).
                let Some(target) = sections.get(applies_to) else {
                    continue;
                };
                if !target.alloc {
                    continue;
                }
                relocations.read_emitted(endian, target, relas, symbols, &tables.symtab);
            } else if link_type == SHT_DYNSYM || link.0 == 0 || loaded {
                relocations.read_dynamic(file, &tables.dynsym, relas);
                if loaded {
                    relocations.read_addends(file, header.sh_addr(endian), relas);
                }
            }
        }
        Ok(relocations)
    }

    /// Records the relocations `relas` a `-q` link kept for allocated
    /// section `target`, by place: the type, the symbol named and `S + A`.
    fn read_emitted(
        &mut self,
        endian: object::Endianness,
        target: &Section,
        relas: &[RelaEntry],
        symbols: &SymbolFacts,
        symtab: &SymbolTable<'_>,
    ) {
        let (start, end) = (target.address, target.address.saturating_add(target.size));
        for rela in relas {
            let mut place = rela.r_offset(endian);
            if !(start..end).contains(&place) && place < target.size {
                place += start;
            }
            let symbol_index = rela.r_sym(endian, false);
            let addend = rela.r_addend(endian);
            let (symbol, base) = symbols.relocation_symbol(symtab, endian, symbol_index);
            self.emitted.insert(
                place,
                EmittedReloc {
                    r_type: rela.r_type(endian, false).0,
                    symbol,
                    section_symbol: symbols.section_symbol_address.contains_key(&symbol_index),
                    value: base.wrapping_add(addend as u64),
                },
            );
        }
    }

    /// Records the packed relative relocations of `SHT_RELR` section
    /// `header` (lld's `-z pack-relative-relocs`): the loader adds its base
    /// to the word at each place, which holds the address it names.
    fn read_relr(
        &mut self,
        path: &Path,
        file: &LinkedFile<'_>,
        sections: &[Section],
        section_index: usize,
        header: &elf::SectionHeader64<object::Endianness>,
    ) -> Result<(), Error> {
        let unreadable = || {
            Error::new(
                path,
                format!(
                    "relocation section {} cannot be read",
                    sections[section_index].name
                ),
            )
        };
        let places = header
            .relr(file.endian, file.data)
            .ok()
            .flatten()
            .ok_or_else(unreadable)?;
        for place in places {
            let word = sections
                .iter()
                .filter(|s| s.alloc && (s.address..s.address + s.size).contains(&place))
                .find_map(|s| {
                    let (start, end) = s.file_range?;
                    let at = start + usize::try_from(place - s.address).ok()?;
                    let bytes = file.data.get(at..at.checked_add(8)?.min(end))?;
                    Some(u64::from_le_bytes(bytes.try_into().ok()?))
                })
                .ok_or_else(unreadable)?;
            self.dynamic.insert(place, Slot::Address(word));
        }
        Ok(())
    }

    /// Records the addends of the relative and `IRELATIVE` relocations
    /// `relas`, loaded at `address`, as the addresses they are: a static
    /// program applies its own (glibc's `__rela_iplt_start`), so its code
    /// reads them as data holding code addresses.
    fn read_addends(&mut self, file: &LinkedFile<'_>, address: u64, relas: &[RelaEntry]) {
        let endian = file.endian;
        for (index, rela) in relas.iter().enumerate() {
            let r_type = rela.r_type(endian, false).0;
            if is_relative(file.arch, r_type) || is_resolver(file.arch, r_type) {
                let field = address + 24 * index as u64 + 16;
                self.dynamic
                    .insert(field, Slot::Address(rela.r_addend(endian) as u64));
            }
        }
    }

    /// Records what the dynamic relocations `relas` have the loader write
    /// into each slot; a slot only the run time fills (`IRELATIVE`, TLS)
    /// goes to the runtime slots.
    fn read_dynamic(
        &mut self,
        file: &LinkedFile<'_>,
        dynsym: &SymbolTable<'_>,
        relas: &[RelaEntry],
    ) {
        let endian = file.endian;
        for rela in relas {
            let place = rela.r_offset(endian);
            let r_type = rela.r_type(endian, false).0;
            let addend = rela.r_addend(endian);
            let symbol_index = rela.r_sym(endian, false);
            let slot = if is_relative(file.arch, r_type) {
                Slot::Address(addend as u64)
            } else if is_symbol_word(file.arch, r_type) {
                let Some(slot) = symbol_word_slot(file, dynsym, symbol_index, addend) else {
                    continue;
                };
                slot
            } else {
                self.runtime_slots.insert(place);
                continue;
            };
            self.dynamic.insert(place, slot);
        }
    }
}

/// What a dynamic relocation writing `S + A` through `.dynsym` symbol
/// `symbol_index` puts in its slot: the address, when the symbol is
/// defined here and no other module can preempt it (a local, or any
/// definition of a program); else the name the loader looks up. `None`
/// when there is no such symbol.
fn symbol_word_slot(
    file: &LinkedFile<'_>,
    dynsym: &SymbolTable<'_>,
    symbol_index: u32,
    addend: i64,
) -> Option<Slot> {
    let endian = file.endian;
    let sym = dynsym
        .symbol(object::SymbolIndex(symbol_index as usize))
        .ok()?;
    let name = dynsym
        .symbol_name(endian, sym)
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let defined = sym.st_shndx(endian).index().is_some() && sym.st_type() != elf::STT_GNU_IFUNC;
    Some(
        if defined && (sym.st_bind().0 == STB_LOCAL || file.is_program) {
            Slot::Address(sym.st_value(endian).wrapping_add(addend as u64))
        } else {
            Slot::Named(name, addend)
        },
    )
}

/// Every name `.dynsym` defines (see [`Image::exported_names`]).
fn exported_names(dynsym: &SymbolTable<'_>, endian: object::Endianness) -> HashSet<String> {
    dynsym
        .symbols()
        .iter()
        .filter(|s| s.st_shndx(endian).index().is_some())
        .filter_map(|s| dynsym.symbol_name(endian, s).ok())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect()
}

/// The functions `.dynsym` defines, in table order.
fn exported_functions(dynsym: &SymbolTable<'_>, endian: object::Endianness) -> Vec<String> {
    dynsym
        .symbols()
        .iter()
        .filter(|s| s.st_type().0 == STT_FUNC && s.st_shndx(endian).index().is_some())
        .filter_map(|s| dynsym.symbol_name(endian, s).ok())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect()
}
