//! One Mach-O relocatable object (`MH_OBJECT`, 64-bit little-endian,
//! x86_64 or arm64) read into the same model as ELF.
//!
//! - **Atoms are sections.** With `MH_SUBSECTIONS_VIA_SYMBOLS` a linker
//!   splits each section at its symbols, and each piece (an atom) is kept,
//!   dropped by `-dead_strip` and placed on its own: what an ELF section is
//!   under `-ffunction-sections`. So each atom becomes a model section, and
//!   symbol values are offsets in their atom. Symbols that do not start an
//!   atom: `N_ALT_ENTRY` ones (a second entry of the atom before it),
//!   assembler temporaries (`L...`, `ltmpN`). Literal sections (`__cstring`,
//!   `__literal4/8/16`), which the linker splits by content, and the
//!   sections it reads itself (`__compact_unwind`, `__eh_frame`,
//!   `__llvm_addrsig`, debug sections) stay whole. Without the header flag
//!   each section is one atom.
//! - **Relocations speak ELF.** Each Mach-O relocation is read as the
//!   architecture's ELF type with the same field and meaning
//!   ([`icf_arch::Architecture::macho_reloc`]), with an explicit addend:
//!   implicit addends are read from the field, `ARM64_RELOC_ADDEND` pairs
//!   are merged, and a local relocation (which names a section and stores
//!   an address in the object) names the atom that address falls in,
//!   through a section symbol the reader adds for each atom. A difference
//!   `A - B` (`SUBTRACTOR` + `UNSIGNED`) whose `B` is in the field's own
//!   atom is PC-relative data, as in ELF; any other is the
//!   [`icf_arch::SUBTRACTOR_MARKER`] naming `B` and an absolute relocation
//!   naming `A` at the same offset.
//! - **Section kinds speak ELF too**: code is `SHF_EXECINSTR`, zero-fill is
//!   `SHT_NOBITS`, literal sections are `SHF_MERGE` (`SHF_STRINGS` for C
//!   strings), `__mod_init_func` is an init array, anything outside the
//!   `__TEXT` segment is writable, `S_ATTR_NO_DEAD_STRIP` is `SHF_GNU_RETAIN`,
//!   and the sections the linker consumes are not `SHF_ALLOC`.
//! - **Unwind information** is `__compact_unwind`, one record per function,
//!   read as [`Fde`]s of kind [`UnwindKind::CompactUnwind`]. `__eh_frame`
//!   is not read: a function whose record defers to it (DWARF mode) never
//!   folds.
//!
//! Everything read is checked here, as for ELF: section ranges against the
//! file, symbol values against their sections, relocation fields against
//! their atoms, symbol and section numbers against their tables.

use crate::eh_frame::{Fde, UnwindKind};
use crate::error::{Error, Result};
use crate::macho_layout::{Atom, DataInCode, MachOLayout, MachOSection, read_uleb128};
use crate::model::{
    Binding, Reloc, RelocIndex, Section, SectionIndex, Symbol, SymbolIndex, SymbolKind,
    SymbolPlace, Visibility,
};
use crate::object::{Format, Object};
use icf_arch::{Architecture, MachOFixup, MachOMeaning, MachOTranslation, SUBTRACTOR_MARKER};
use object::LittleEndian as LE;
use object::elf;
use object::macho;
use object::read::macho::{MachHeader, Nlist, Section as _, Segment as _};

/// The largest magnitude accepted for addresses, sizes and addends, as
/// for ELF.
use crate::model::MAX_PLACE_MAGNITUDE;

/// `n_desc` bits.
const N_WEAK_REF: u16 = 0x0040;
const N_WEAK_DEF: u16 = 0x0080;
const N_NO_DEAD_STRIP: u16 = 0x0020;
const N_ALT_ENTRY: u16 = 0x0200;

/// An `nlist_64` entry, with its name.
struct RawSymbol<'data> {
    name: &'data [u8],
    n_type: u8,
    n_sect: u8,
    n_desc: u16,
    n_value: u64,
}

impl RawSymbol<'_> {
    fn is_stab(&self) -> bool {
        self.n_type & macho::N_STAB != 0
    }

    fn type_bits(&self) -> u8 {
        self.n_type & 0x0e
    }

    /// Defined in a section (`N_SECT`).
    fn section(&self) -> Option<usize> {
        (!self.is_stab() && self.type_bits() == 0x0e && self.n_sect > 0)
            .then(|| usize::from(self.n_sect) - 1)
    }

    /// An assembler temporary, which starts no atom and names no function.
    fn is_temporary(&self) -> bool {
        self.name.starts_with(b"L") || self.name.starts_with(b"ltmp")
    }

    /// Whether it starts an atom of a section split at symbols.
    fn starts_atom(&self) -> bool {
        self.n_desc & N_ALT_ENTRY == 0 && !self.is_temporary()
    }
}

impl<'data> Object<'data> {
    /// Parses Mach-O `data`. Errors carry the section and offset; the caller
    /// adds the file name.
    pub(crate) fn parse_macho(data: &'data [u8]) -> Result<Object<'data>> {
        let header = macho::MachHeader64::<LE>::parse(data, 0)
            .map_err(|e| Error::new(format!("bad Mach-O header: {e}")).at_offset(0))?;
        let filetype = header.filetype(LE);
        if filetype != macho::MH_OBJECT {
            return Err(Error::new(format!(
                "not a relocatable Mach-O object (filetype {filetype}): only MH_OBJECT files and archives of them can be folded"
            ))
            .at_offset(12));
        }
        let cpu_type = header.cputype(LE);
        let architecture = icf_arch::from_macho_cpu_type(cpu_type.0).ok_or_else(|| {
            Error::new(format!(
                "Mach-O cputype {:#x}: icf folds x86_64 and arm64 objects only",
                cpu_type.0
            ))
            .at_offset(4)
        })?;
        let subsections_via_symbols = header.flags(LE).0 & 0x2000 != 0;
        let commands = read_load_commands(header, data)?;
        let raw_symbols = read_symbols(data, commands.symtab)?;
        let mut reader = Reader {
            data,
            architecture,
            sections: commands.sections,
            names: commands.names,
            raw_symbols,
            subsections_via_symbols,
            model_sections: vec![null_section()],
            atoms: vec![Atom {
                section: u32::MAX,
                start: 0,
            }],
            first_atom: Vec::new(),
        };
        reader.split_atoms()?;
        let symbols = reader.model_symbols()?;
        let nlist_count = reader.raw_symbols.len() as u32;
        let mut object = Object::new(Format::MachO, architecture.arch(), data, Vec::new());
        object.symbols = symbols;
        let reloc_origins = reader.read_relocations(&mut object.symbols, nlist_count)?;
        let data_in_code = reader.place_data_in_code(commands.data_in_code)?;
        let mut alternate_entries: Vec<SectionIndex> = reader
            .raw_symbols
            .iter()
            .zip(&object.symbols[1..])
            .filter(|(raw, _)| raw.section().is_some() && raw.n_desc & N_ALT_ENTRY != 0)
            .filter_map(|(_, symbol)| symbol.section())
            .collect();
        alternate_entries.sort_unstable();
        alternate_entries.dedup();
        object.sections = std::mem::take(&mut reader.model_sections);
        object.macho = Some(Box::new(MachOLayout {
            sections: std::mem::take(&mut reader.sections),
            atoms: std::mem::take(&mut reader.atoms),
            nlist_count,
            reloc_origins,
            data_in_code,
            subsections_via_symbols,
            alternate_entries,
        }));
        object.read_addrsig_macho()?;
        object.read_compact_unwind()?;
        Ok(object)
    }

    /// `__llvm_addrsig`: ULEB128 indices into the symbol table.
    fn read_addrsig_macho(&mut self) -> Result<()> {
        let Some(index) = self
            .sections
            .iter()
            .position(|s| s.name == b"__llvm_addrsig")
        else {
            return Ok(());
        };
        let nlist_count = self.macho.as_ref().map_or(0, |m| m.nlist_count);
        let section = &self.sections[index];
        let mut reader = section.data;
        let mut significant = Vec::new();
        while !reader.is_empty() {
            let at = (section.data.len() - reader.len()) as u64;
            let value = read_uleb128(&mut reader).ok_or_else(|| {
                Error::new("truncated ULEB128 symbol index")
                    .with_section(index as u32, "__llvm_addrsig")
                    .at_offset(at)
            })?;
            if value >= u64::from(nlist_count) {
                return Err(Error::new(format!(
                    "symbol index {value} is past the symbol table ({nlist_count} entries)"
                ))
                .with_section(index as u32, "__llvm_addrsig")
                .at_offset(at));
            }
            significant.push(SymbolIndex(value as u32 + 1));
        }
        self.addrsig = Some(significant);
        Ok(())
    }

    /// `__compact_unwind`'s records, as unwind entries.
    fn read_compact_unwind(&mut self) -> Result<()> {
        let Some(index) = self
            .sections
            .iter()
            .position(|s| s.name == b"__compact_unwind")
        else {
            return Ok(());
        };
        let section = &self.sections[index];
        let located = |message: String, at: u64| {
            Error::new(message)
                .with_section(index as u32, "__compact_unwind")
                .at_offset(at)
        };
        if section.data.len() % 32 != 0 {
            return Err(located(
                format!(
                    "{:#x} bytes, not a whole number of 32-byte records",
                    section.data.len()
                ),
                0,
            ));
        }
        let dwarf_mode = icf_arch::of(self.arch).compact_unwind().dwarf_mode;
        let reloc_at = |offset: u64| {
            section
                .relocs
                .iter()
                .position(|r| r.offset == offset)
                .map(|i| RelocIndex(i as u32))
        };
        let mut records = Vec::with_capacity(section.data.len() / 32);
        for (number, record) in section.data.chunks_exact(32).enumerate() {
            let offset = number as u64 * 32;
            let u32_at = |at: usize| {
                u32::from_le_bytes([record[at], record[at + 1], record[at + 2], record[at + 3]])
            };
            let encoding = u32_at(12);
            let Some(pc_begin) = reloc_at(offset) else {
                return Err(located(
                    "a compact unwind record without a relocation naming its function".into(),
                    offset,
                ));
            };
            records.push(Fde {
                offset,
                size: 32,
                cie_offset: offset,
                cie_size: 0,
                pc_begin: Some(pc_begin),
                pc_range: u64::from(u32_at(8)),
                lsda: reloc_at(offset + 24),
                kind: UnwindKind::CompactUnwind {
                    encoding,
                    personality: reloc_at(offset + 16),
                    dwarf: encoding & 0x0f00_0000 == dwarf_mode,
                },
            });
        }
        self.eh_frame = Some((SectionIndex(index as u32), records));
        Ok(())
    }
}

/// What the load commands say.
struct LoadCommands<'data> {
    sections: Vec<MachOSection>,
    /// Each section's name, borrowed from its header.
    names: Vec<&'data [u8]>,
    symtab: Option<(u32, u32, u32, u32)>,
    /// `LC_DATA_IN_CODE`'s entries: address, length, kind, and the
    /// entry's file offset.
    data_in_code: Vec<(u32, u16, u16, u64)>,
}

fn read_load_commands<'data>(
    header: &macho::MachHeader64<LE>,
    data: &'data [u8],
) -> Result<LoadCommands<'data>> {
    let mut commands = header.load_commands(LE, data, 0).map_err(|e| {
        Error::new(format!(
            "bad load commands ({} commands, {} bytes): {e}",
            header.ncmds(LE),
            header.sizeofcmds(LE)
        ))
        .at_offset(32)
    })?;
    let mut result = LoadCommands {
        sections: Vec::new(),
        names: Vec::new(),
        symtab: None,
        data_in_code: Vec::new(),
    };
    let header_size = size_of::<macho::MachHeader64<LE>>() as u64;
    let mut command_offset = header_size;
    loop {
        let command = commands
            .next()
            .map_err(|e| Error::new(format!("bad load command: {e}")).at_offset(command_offset))?;
        let Some(command) = command else { break };
        let located = |message: String| Error::new(message).at_offset(command_offset);
        match command.cmd() {
            macho::LC_SEGMENT_64 => {
                let (_, section_data) = command
                    .segment_64()
                    .map_err(|e| located(format!("bad LC_SEGMENT_64: {e}")))?
                    .ok_or_else(|| located("bad LC_SEGMENT_64".into()))?;
                let segment = command
                    .data::<macho::SegmentCommand64<LE>>()
                    .map_err(|e| located(format!("bad LC_SEGMENT_64: {e}")))?;
                let headers = segment.sections(LE, section_data).map_err(|e| {
                    located(format!(
                        "LC_SEGMENT_64 says {} sections, more than its {} bytes hold: {e}",
                        segment.nsects.get(LE),
                        command.cmdsize()
                    ))
                })?;
                let first_header = command_offset + size_of::<macho::SegmentCommand64<LE>>() as u64;
                for (number, section) in headers.iter().enumerate() {
                    let sectname: &'data [u8; 16] = section.sectname();
                    let end = sectname.iter().position(|&b| b == 0).unwrap_or(16);
                    result.names.push(&sectname[..end]);
                    result.sections.push(MachOSection {
                        segname: *section.segname(),
                        sectname: *section.sectname(),
                        addr: section.addr(LE),
                        size: section.size(LE),
                        offset: section.offset(LE),
                        align: section.align(LE),
                        reloff: section.reloff(LE),
                        nreloc: section.nreloc(LE),
                        flags: section.flags(LE).0,
                        header_offset: first_header
                            + number as u64 * size_of::<macho::Section64<LE>>() as u64,
                    });
                }
            }
            macho::LC_SYMTAB => {
                let symtab = command
                    .data::<macho::SymtabCommand<LE>>()
                    .map_err(|e| located(format!("bad LC_SYMTAB: {e}")))?;
                result.symtab = Some((
                    symtab.symoff.get(LE),
                    symtab.nsyms.get(LE),
                    symtab.stroff.get(LE),
                    symtab.strsize.get(LE),
                ));
            }
            macho::LC_DATA_IN_CODE => {
                let linkedit = command
                    .data::<macho::LinkeditDataCommand<LE>>()
                    .map_err(|e| located(format!("bad LC_DATA_IN_CODE: {e}")))?;
                let (offset, size) = (linkedit.dataoff.get(LE), linkedit.datasize.get(LE));
                let table = data
                    .get(offset as usize..(offset as usize).saturating_add(size as usize))
                    .ok_or_else(|| {
                        located(format!(
                            "LC_DATA_IN_CODE's table {offset:#x}..+{size:#x} lies outside the file"
                        ))
                    })?;
                for (number, entry) in table.chunks_exact(8).enumerate() {
                    result.data_in_code.push((
                        u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]),
                        u16::from_le_bytes([entry[4], entry[5]]),
                        u16::from_le_bytes([entry[6], entry[7]]),
                        u64::from(offset) + number as u64 * 8,
                    ));
                }
            }
            macho::LC_LINKER_OPTIMIZATION_HINT => {
                // Not read, but the writer carries the hints over, dropping
                // those naming edited bytes: each must decode.
                let linkedit = command
                    .data::<macho::LinkeditDataCommand<LE>>()
                    .map_err(|e| located(format!("bad LC_LINKER_OPTIMIZATION_HINT: {e}")))?;
                let (offset, size) = (linkedit.dataoff.get(LE), linkedit.datasize.get(LE));
                let table = data
                    .get(offset as usize..(offset as usize).saturating_add(size as usize))
                    .ok_or_else(|| {
                        located(format!(
                            "LC_LINKER_OPTIMIZATION_HINT's table {offset:#x}..+{size:#x} lies outside the file"
                        ))
                    })?;
                check_hints(table).map_err(|at| {
                    Error::new("a truncated optimization hint")
                        .at_offset(u64::from(offset) + at as u64)
                })?;
            }
            _ => {}
        }
        command_offset += u64::from(command.cmdsize());
    }
    if result.sections.len() > 255 {
        return Err(Error::new(format!(
            "{} sections: a Mach-O symbol can name at most 255",
            result.sections.len()
        )));
    }
    for (number, section) in result.sections.iter().enumerate() {
        let located = |message: String| {
            Error::new(message)
                .with_section(number as u32 + 1, String::from_utf8_lossy(section.name()))
                .at_offset(section.header_offset)
        };
        if section.size >= MAX_PLACE_MAGNITUDE || section.addr >= MAX_PLACE_MAGNITUDE {
            return Err(located(format!(
                "address {:#x} or size {:#x} is absurdly large",
                section.addr, section.size
            )));
        }
        if section.align > 31 {
            return Err(located(format!(
                "alignment 2^{} is too large",
                section.align
            )));
        }
        if !section.is_zero_fill() {
            let end = u64::from(section.offset) + section.size;
            if end > data.len() as u64 {
                return Err(located(format!(
                    "contents {:#x}..{end:#x} lie outside the file ({:#x} bytes)",
                    section.offset,
                    data.len()
                )));
            }
        }
    }
    Ok(result)
}

fn read_symbols<'data>(
    data: &'data [u8],
    symtab: Option<(u32, u32, u32, u32)>,
) -> Result<Vec<RawSymbol<'data>>> {
    let Some((symoff, nsyms, stroff, strsize)) = symtab else {
        return Ok(Vec::new());
    };
    let entry_size = size_of::<macho::Nlist64<LE>>();
    let table = data
        .get(symoff as usize..)
        .and_then(|rest| rest.get(..(nsyms as usize).checked_mul(entry_size)?))
        .ok_or_else(|| {
            Error::new(format!(
                "the symbol table ({nsyms} entries at {symoff:#x}) lies outside the file"
            ))
            .at_offset(u64::from(symoff))
        })?;
    let strings = data
        .get(stroff as usize..(stroff as usize).saturating_add(strsize as usize))
        .ok_or_else(|| {
            Error::new(format!(
                "the string table ({strsize:#x} bytes at {stroff:#x}) lies outside the file"
            ))
            .at_offset(u64::from(stroff))
        })?;
    let nlists: &[macho::Nlist64<LE>] = object::pod::slice_from_bytes(table, nsyms as usize)
        .map(|(slice, _)| slice)
        .map_err(|()| Error::new("misaligned symbol table").at_offset(u64::from(symoff)))?;
    nlists
        .iter()
        .enumerate()
        .map(|(index, nlist)| {
            let at = u64::from(symoff) + (index * entry_size) as u64;
            let strx = nlist.n_strx.get(LE) as usize;
            let name = strings
                .get(strx..)
                .map(|rest| &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())])
                .ok_or_else(|| {
                    Error::new(format!(
                        "symbol {index}'s name offset {strx:#x} is past the string table ({strsize:#x} bytes)"
                    ))
                    .at_offset(at)
                })?;
            Ok(RawSymbol {
                name,
                n_type: nlist.n_type().0,
                n_sect: nlist.n_sect(),
                n_desc: nlist.n_desc(LE).0,
                n_value: nlist.n_value(LE),
            })
        })
        .collect()
}

fn null_section<'data>() -> Section<'data> {
    Section {
        name: b"",
        sh_type: 0,
        flags: 0,
        align: 0,
        size: 0,
        link: 0,
        info: 0,
        entsize: 0,
        data: &[],
        relocs: Vec::new(),
        reloc_section: None,
        relocs_deferred: false,
        group: None,
        name_is_plain: true,
    }
}

struct Reader<'data> {
    data: &'data [u8],
    architecture: &'static dyn Architecture,
    sections: Vec<MachOSection>,
    names: Vec<&'data [u8]>,
    raw_symbols: Vec<RawSymbol<'data>>,
    subsections_via_symbols: bool,
    model_sections: Vec<Section<'data>>,
    atoms: Vec<Atom>,
    /// For each file section, the model index of its first atom (its atoms
    /// are consecutive).
    first_atom: Vec<u32>,
}

impl<'data> Reader<'data> {
    /// Splits each file section into atoms, each a model section.
    fn split_atoms(&mut self) -> Result<()> {
        let mut starts: Vec<Vec<u64>> = vec![Vec::new(); self.sections.len()];
        for (index, symbol) in self.raw_symbols.iter().enumerate() {
            let Some(number) = symbol.section() else {
                continue;
            };
            let section = self.sections.get(number).ok_or_else(|| {
                Error::new(format!(
                    "symbol {index} ({}) is in section {}, but there are only {}",
                    String::from_utf8_lossy(symbol.name),
                    number + 1,
                    self.sections.len()
                ))
            })?;
            let offset = symbol.n_value.wrapping_sub(section.addr);
            if symbol.n_value < section.addr || offset > section.size {
                return Err(Error::new(format!(
                    "symbol {index} ({}) at {:#x} lies outside its section {:#x}..{:#x}",
                    String::from_utf8_lossy(symbol.name),
                    symbol.n_value,
                    section.addr,
                    section.addr + section.size
                ))
                .with_section(number as u32 + 1, String::from_utf8_lossy(section.name())));
            }
            if symbol.starts_atom() && offset < section.size {
                starts[number].push(offset);
            }
        }
        for (number, section) in self.sections.iter().enumerate() {
            self.first_atom.push(self.model_sections.len() as u32);
            let splits = self.subsections_via_symbols
                && section.literal_size().is_none()
                && !section.is_linker_input();
            let mut offsets = if splits {
                std::mem::take(&mut starts[number])
            } else {
                Vec::new()
            };
            offsets.push(0);
            offsets.sort_unstable();
            offsets.dedup();
            let contents: &'data [u8] = if section.is_zero_fill() {
                &[]
            } else {
                &self.data
                    [section.offset as usize..(u64::from(section.offset) + section.size) as usize]
            };
            let (sh_type, flags, entsize) = model_kind(section);
            for (at, &start) in offsets.iter().enumerate() {
                let end = offsets.get(at + 1).copied().unwrap_or(section.size);
                let section_align = 1u64 << section.align;
                // An atom inside the section is aligned as far as its offset allows.
                let align = if start == 0 {
                    section_align
                } else {
                    section_align.min(1 << start.trailing_zeros())
                };
                let bytes = contents
                    .get(start as usize..end as usize)
                    .unwrap_or_default();
                self.model_sections.push(Section {
                    name: self.names[number],
                    sh_type,
                    flags,
                    align,
                    size: end - start,
                    link: 0,
                    info: 0,
                    entsize,
                    data: bytes,
                    relocs: Vec::new(),
                    reloc_section: None,
                    relocs_deferred: false,
                    group: None,
                    name_is_plain: crate::model::plain_name(self.names[number]),
                });
                self.atoms.push(Atom {
                    section: number as u32,
                    start,
                });
            }
        }
        // `N_NO_DEAD_STRIP` keeps the atom a symbol starts.
        for symbol in &self.raw_symbols {
            if symbol.n_desc & N_NO_DEAD_STRIP != 0
                && let Some(number) = symbol.section()
            {
                let (atom, _) = self.atom_at(number, symbol.n_value - self.sections[number].addr);
                self.model_sections[atom.index()].flags |= elf::SHF_GNU_RETAIN.0;
            }
        }
        Ok(())
    }

    /// The atom of file section `number` holding section offset `offset`,
    /// and the offset in it. The section's end belongs to its last atom.
    fn atom_at(&self, number: usize, offset: u64) -> (SectionIndex, u64) {
        let first = self.first_atom[number] as usize;
        let end = self
            .first_atom
            .get(number + 1)
            .map_or(self.atoms.len(), |&e| e as usize);
        let atoms = &self.atoms[first..end];
        let at = atoms.partition_point(|a| a.start <= offset).max(1) - 1;
        (SectionIndex((first + at) as u32), offset - atoms[at].start)
    }

    /// The model's symbols: the null symbol, the symbol table's entries, and
    /// a section symbol for each atom.
    fn model_symbols(&self) -> Result<Vec<Symbol<'data>>> {
        let mut symbols = Vec::with_capacity(1 + self.raw_symbols.len() + self.atoms.len());
        symbols.push(Symbol {
            name: b"",
            binding: Binding::Local,
            kind: SymbolKind::NoType,
            visibility: Visibility::Default,
            other: 0,
            place: SymbolPlace::Undefined,
            value: 0,
            size: 0,
        });
        for raw in &self.raw_symbols {
            symbols.push(self.model_symbol(raw));
        }
        for (index, atom) in self.atoms.iter().enumerate().skip(1) {
            symbols.push(Symbol {
                name: b"",
                binding: Binding::Local,
                kind: SymbolKind::Section,
                visibility: Visibility::Default,
                other: 0,
                place: SymbolPlace::Section(SectionIndex(index as u32)),
                value: 0,
                size: 0,
            });
            let _ = atom;
        }
        Ok(symbols)
    }

    fn model_symbol(&self, raw: &RawSymbol<'data>) -> Symbol<'data> {
        let external = raw.n_type & 0x01 != 0;
        let private_external = raw.n_type & 0x10 != 0;
        let binding = if raw.is_stab() || !external {
            Binding::Local
        } else if raw.n_desc & (N_WEAK_DEF | N_WEAK_REF) != 0 {
            Binding::Weak
        } else {
            Binding::Global
        };
        let visibility = if external && private_external {
            Visibility::Hidden
        } else {
            Visibility::Default
        };
        let mut symbol = Symbol {
            name: raw.name,
            binding,
            kind: SymbolKind::NoType,
            visibility,
            // The weak bits of n_desc, which a copy carries over
            // (`Symbol::flags`): N_WEAK_DEF, and N_WEAK_REF, which on a
            // definition says the linker may hide it (`.weak_def_can_be_hidden`).
            other: (raw.n_desc & (N_WEAK_DEF | N_WEAK_REF)) as u8,
            place: SymbolPlace::Undefined,
            value: 0,
            size: 0,
        };
        if raw.is_stab() {
            symbol.kind = SymbolKind::Other(raw.n_type);
            symbol.place = SymbolPlace::Absolute;
            return symbol;
        }
        match raw.type_bits() {
            0x0 if external && raw.n_value != 0 => {
                symbol.kind = SymbolKind::Common;
                symbol.place = SymbolPlace::Common;
                symbol.size = raw.n_value;
                symbol.value = 1 << ((raw.n_desc >> 8) & 0xf);
            }
            0x2 => {
                symbol.place = SymbolPlace::Absolute;
                symbol.value = raw.n_value;
            }
            0x0e => {
                if let Some(number) = raw.section() {
                    let section = &self.sections[number];
                    let (atom, value) = self.atom_at(number, raw.n_value - section.addr);
                    let atom_size = self.model_sections[atom.index()].size;
                    symbol.place = SymbolPlace::Section(atom);
                    symbol.value = value;
                    symbol.size = atom_size - value;
                    symbol.kind = if raw.is_temporary() {
                        SymbolKind::NoType
                    } else if section.is_code() {
                        SymbolKind::Func
                    } else {
                        SymbolKind::Object
                    };
                }
            }
            // N_INDR, N_PBUD and the rest: resolved by the linker by name.
            _ => {}
        }
        symbol
    }

    /// Reads every section's relocations into its atoms; returns where each
    /// model relocation came from.
    fn read_relocations(
        &mut self,
        symbols: &mut [Symbol<'data>],
        nlist_count: u32,
    ) -> Result<Vec<Vec<u32>>> {
        let mut origins: Vec<Vec<u32>> = vec![Vec::new(); self.model_sections.len()];
        for number in 0..self.sections.len() {
            let section = self.sections[number].clone();
            if section.nreloc == 0 {
                continue;
            }
            self.read_section_relocations(number, &section, symbols, nlist_count, &mut origins)?;
        }
        // Entries come in any order (assemblers write them last to first);
        // the model wants them by offset, a marker before its pair.
        for (section, origins) in self.model_sections.iter_mut().zip(&mut origins) {
            let mut order: Vec<usize> = (0..section.relocs.len()).collect();
            order.sort_by_key(|&i| (section.relocs[i].offset, section.relocs[i].size, i));
            section.relocs = order.iter().map(|&i| section.relocs[i]).collect();
            *origins = order.iter().map(|&i| origins[i]).collect();
        }
        Ok(origins)
    }

    /// Reads the relocations of file section `number` into its atoms,
    /// noting in `origins` the entry each model relocation came from: an
    /// `ADDEND` or `SUBTRACTOR` entry applies to the next.
    fn read_section_relocations(
        &mut self,
        number: usize,
        section: &MachOSection,
        symbols: &mut [Symbol<'data>],
        nlist_count: u32,
        origins: &mut [Vec<u32>],
    ) -> Result<()> {
        let name = String::from_utf8_lossy(section.name()).into_owned();
        let located = |message: String, at: u64| {
            Error::new(message)
                .with_section(number as u32 + 1, name.clone())
                .at_offset(at)
        };
        let table_size = u64::from(section.nreloc) * 8;
        let raw = self
            .data
            .get(section.reloff as usize..)
            .and_then(|rest| rest.get(..table_size as usize))
            .ok_or_else(|| {
                located(
                    format!(
                        "the relocation table ({} entries at {:#x}) lies outside the file",
                        section.nreloc, section.reloff
                    ),
                    u64::from(section.reloff),
                )
            })?;
        let mut addend: Option<i64> = None;
        let mut subtrahend: Option<SymbolIndex> = None;
        for (entry, bytes) in raw.chunks_exact(8).enumerate() {
            let at = u64::from(section.reloff) + entry as u64 * 8;
            let word0 = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let word1 = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
            if word0 & 0x8000_0000 != 0 {
                return Err(located("a scattered relocation (32-bit only)".into(), at));
            }
            let address = u64::from(word0);
            let length = ((word1 >> 25) & 0x3) as u8;
            let size = 1u64 << length;
            if address + size > section.size {
                return Err(located(
                    format!(
                        "relocation field {address:#x}..+{size} lies past the section's end ({:#x})",
                        section.size
                    ),
                    at,
                ));
            }
            let contents: &[u8] = if section.is_zero_fill() {
                &[]
            } else {
                &self.data[section.offset as usize..]
            };
            let field_bytes = contents.get(address as usize..(address + size) as usize);
            let mut field = [0u8; 8];
            if let Some(bytes) = field_bytes {
                field[..bytes.len()].copy_from_slice(bytes);
            }
            let fixup = MachOFixup {
                r_type: (word1 >> 28) as u8,
                pc_relative: (word1 >> 24) & 1 != 0,
                length,
                is_extern: (word1 >> 27) & 1 != 0,
                explicit_addend: addend.take(),
                field: u64::from_le_bytes(field),
                word: u32::from_le_bytes([field[0], field[1], field[2], field[3]]),
                symbol_number: word1 & 0x00ff_ffff,
            };
            let meaning = self
                .architecture
                .macho_reloc(&fixup)
                .map_err(|message| located(message, at))?;
            let translation = match meaning {
                MachOMeaning::Addend(value) => {
                    addend = Some(value);
                    continue;
                }
                MachOMeaning::Subtractor => {
                    if !fixup.is_extern {
                        return Err(located(
                            "a SUBTRACTOR naming a section: icf reads only external subtrahends"
                                .into(),
                            at,
                        ));
                    }
                    subtrahend = Some(
                        symbol_of(fixup.symbol_number, nlist_count).map_err(|m| located(m, at))?,
                    );
                    continue;
                }
                MachOMeaning::Fixup(translation) => translation,
            };
            let (atom, offset) = self.atom_at(number, address);
            let atom_size = self.model_sections[atom.index()].size;
            if offset + size > atom_size {
                return Err(located(
                    format!("relocation field {address:#x}..+{size} runs across two atoms"),
                    at,
                ));
            }
            let info = self
                .architecture
                .elf_reloc(translation.elf_type)
                .ok_or_else(|| located(format!("no model type {}", translation.elf_type), at))?;
            // The target and the addend.
            let field_place = section.addr + address;
            let (symbol, mut model_addend) = self
                .target_of(&fixup, &translation, field_place, nlist_count)
                .map_err(|message| located(message, at))?;
            let mut model_type = translation.elf_type;
            let mut pc_relative = info.pc_relative;
            if let Some(subtrahend) = subtrahend.take() {
                let same_atom = symbols[subtrahend.index()].section() == Some(atom);
                match self.architecture.pc_relative_data(size as u8) {
                    Some(pc_type) if same_atom => {
                        // A - B + stored, B in this atom: A + stored + (P - B) - P.
                        let b = symbols[subtrahend.index()].value as i64;
                        model_addend =
                            model_addend.checked_add(offset as i64 - b).ok_or_else(|| {
                                located(
                                    format!(
                                        "addend {model_addend:#x} minus its subtrahend overflows"
                                    ),
                                    at,
                                )
                            })?;
                        model_type = pc_type;
                        pc_relative = true;
                    }
                    _ => {
                        self.model_sections[atom.index()].relocs.push(Reloc {
                            offset,
                            r_type: SUBTRACTOR_MARKER,
                            symbol: subtrahend,
                            addend: 0,
                            size: 0,
                            pc_relative: false,
                        });
                        origins[atom.index()].push(entry as u32 - 1);
                    }
                }
            }
            if model_addend.unsigned_abs() >= MAX_PLACE_MAGNITUDE {
                return Err(located(
                    format!("addend {model_addend:#x} is absurdly large"),
                    at,
                ));
            }
            self.model_sections[atom.index()].relocs.push(Reloc {
                offset,
                r_type: model_type,
                symbol,
                addend: model_addend,
                size: info.size,
                pc_relative,
            });
            origins[atom.index()].push(entry as u32);
        }
        if addend.is_some() || subtrahend.is_some() {
            return Err(located(
                "the relocation table ends with an ADDEND or SUBTRACTOR and nothing it applies to"
                    .into(),
                u64::from(section.reloff) + table_size,
            ));
        }
        Ok(())
    }

    /// What a fixup at `field_place` refers to, as a model symbol and
    /// addend: an external symbol, or (a local relocation) the atom of
    /// its section holding the address it locates, with the addend from
    /// that atom's start.
    fn target_of(
        &self,
        fixup: &MachOFixup,
        translation: &MachOTranslation,
        field_place: u64,
        nlist_count: u32,
    ) -> std::result::Result<(SymbolIndex, i64), String> {
        if fixup.is_extern {
            let symbol = symbol_of(fixup.symbol_number, nlist_count)?;
            let addend = if fixup.pc_relative {
                translation.stored - translation.pc_offset
            } else {
                translation.stored
            };
            Ok((symbol, addend))
        } else {
            let ordinal = fixup.symbol_number as usize;
            let target_section = ordinal
                .checked_sub(1)
                .filter(|&n| n < self.sections.len())
                .ok_or_else(|| {
                    format!(
                        "local relocation names section {ordinal}, but there are {}",
                        self.sections.len()
                    )
                })?;
            let (locate, base) = if fixup.pc_relative {
                let base = (field_place as i64).wrapping_add(translation.stored);
                (
                    base.wrapping_add(translation.pc_offset + translation.locate_bias),
                    base,
                )
            } else {
                (translation.stored, translation.stored)
            };
            let target = &self.sections[target_section];
            let offset_in_target = (locate as u64).wrapping_sub(target.addr);
            if locate < 0 || (locate as u64) < target.addr || offset_in_target > target.size {
                return Err(format!(
                    "local relocation refers to {locate:#x}, outside its section {}",
                    String::from_utf8_lossy(target.name())
                ));
            }
            let (target_atom, _) = self.atom_at(target_section, offset_in_target);
            let atom_address = target.addr + self.atoms[target_atom.index()].start;
            Ok((
                SymbolIndex(nlist_count + target_atom.0),
                base.wrapping_sub(atom_address as i64),
            ))
        }
    }

    /// Places `LC_DATA_IN_CODE` entries (object addresses) in their atoms.
    fn place_data_in_code(&self, entries: Vec<(u32, u16, u16, u64)>) -> Result<Vec<DataInCode>> {
        entries
            .into_iter()
            .map(|(address, length, kind, at)| {
                let address = u64::from(address);
                let number = self
                    .sections
                    .iter()
                    .position(|s| s.is_code() && s.addr <= address && address < s.addr + s.size)
                    .ok_or_else(|| {
                        Error::new(format!(
                            "LC_DATA_IN_CODE entry at {address:#x} lies in no code section"
                        ))
                        .at_offset(at)
                    })?;
                let (section, offset) = self.atom_at(number, address - self.sections[number].addr);
                Ok(DataInCode {
                    section,
                    offset,
                    length,
                    kind,
                })
            })
            .collect()
    }
}

/// The model symbol of `r_symbolnum` in an external relocation.
fn symbol_of(symbol_number: u32, nlist_count: u32) -> std::result::Result<SymbolIndex, String> {
    if symbol_number >= nlist_count {
        return Err(format!(
            "relocation names symbol {symbol_number}, but the symbol table has {nlist_count}"
        ));
    }
    Ok(SymbolIndex(symbol_number + 1))
}

/// The model's section type, flags and element size for a Mach-O section.
fn model_kind(section: &MachOSection) -> (u32, u64, u64) {
    let mut flags = 0u64;
    if !section.is_linker_input() {
        flags |= elf::SHF_ALLOC.0;
    }
    let mut sh_type = elf::SHT_PROGBITS.0;
    let mut entsize = 0;
    if section.is_code() {
        flags |= elf::SHF_EXECINSTR.0;
    } else if section.segment() != b"__TEXT" && !section.is_linker_input() {
        flags |= elf::SHF_WRITE.0;
    }
    if section.is_zero_fill() {
        sh_type = elf::SHT_NOBITS.0;
    }
    if let Some(size) = section.literal_size() {
        flags |= elf::SHF_MERGE.0;
        entsize = size;
        if size == 1 {
            flags |= elf::SHF_STRINGS.0;
        }
    }
    match section.section_type() {
        0x9 => sh_type = elf::SHT_INIT_ARRAY.0, // S_MOD_INIT_FUNC_POINTERS
        0xa => sh_type = elf::SHT_FINI_ARRAY.0, // S_MOD_TERM_FUNC_POINTERS
        0x11 | 0x12 => flags |= elf::SHF_TLS.0, // thread-local data and zero-fill
        _ => {}
    }
    if section.name() == b"__llvm_addrsig" {
        sh_type = crate::model::SHT_LLVM_ADDRSIG;
    }
    if section.flags & 0x1000_0000 != 0 {
        // S_ATTR_NO_DEAD_STRIP
        flags |= elf::SHF_GNU_RETAIN.0;
    }
    (sh_type, flags, entsize)
}

/// Checks that `LC_LINKER_OPTIMIZATION_HINT`'s table decodes as the
/// writer reads it: hints (kind, count, that many addresses, each ULEB128)
/// up to the end or a kind of 0. Returns the offset of a truncated number.
fn check_hints(table: &[u8]) -> std::result::Result<(), usize> {
    let mut rest = table;
    let at = |rest: &[u8]| table.len() - rest.len();
    while !rest.is_empty() {
        let start = at(rest);
        let kind = read_uleb128(&mut rest).ok_or(start)?;
        if kind == 0 {
            break;
        }
        let start = at(rest);
        let count = read_uleb128(&mut rest).ok_or(start)?;
        for _ in 0..count {
            let start = at(rest);
            read_uleb128(&mut rest).ok_or(start)?;
        }
    }
    Ok(())
}
