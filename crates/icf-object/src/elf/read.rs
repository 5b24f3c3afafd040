//! One ELF relocatable object (`ET_REL`, 64-bit little-endian, x86-64 or
//! AArch64) as a borrowed model: sections, symbols, relocations attached to
//! the section they patch, COMDAT groups, the `.llvm_addrsig` table and the
//! `.eh_frame` links. Every index and offset read from the file is checked
//! here, once, so later phases can index without fear of bad input.

use crate::eh_frame;
use crate::error::{Error, Result};
use crate::model::{
    Binding, ComdatGroup, GroupIndex, Reloc, Section, SectionIndex, Symbol, SymbolIndex,
    SymbolKind, SymbolPlace, Visibility,
};
use crate::model::{MAX_PLACE_MAGNITUDE, SHT_LLVM_ADDRSIG};
use crate::object::{Format, Object};
use icf_ir::Arch;
use object::LittleEndian as LE;
use object::elf;
use object::read::elf::{FileHeader, Rela, SectionHeader, Sym};

/// The largest `sh_addralign` accepted: lld refuses more than `u32::MAX`
/// ("sh_addralign is too large"), and the writer pads every section to its
/// alignment.
pub const MAX_SECTION_ALIGN: u64 = 1 << 31;

impl<'data> Object<'data> {
    /// Parses ELF `data`. Errors carry the section and offset; the caller adds the file name.
    pub(crate) fn parse_elf(data: &'data [u8]) -> Result<Object<'data>> {
        let arch = check_ident(data)?;
        let header = elf::FileHeader64::<LE>::parse(data)
            .map_err(|e| Error::new(e.to_string()).at_offset(0))?;
        let e_type = header.e_type(LE);
        if e_type != elf::ET_REL {
            return Err(Error::new(format!(
                "not a relocatable object (e_type {}): only ET_REL objects and archives of them can be folded",
                e_type.0
            )));
        }
        let table = header
            .sections(LE, data)
            .map_err(|e| {
                let table_offset = header.e_shoff(LE);
                Error::new(format!(
                    "bad section header table ({} entries at {table_offset:#x}, file of {:#x} bytes): {e}",
                    header.e_shnum(LE),
                    data.len()
                ))
                .at_offset(0x28)
            })?;
        let sections = read_sections(data, header, &table)?;

        let mut object = Object::new(Format::Elf, arch, data, sections);
        object.read_symbols(&table, elf::SHT_SYMTAB, false)?;
        object.read_relocations(&table)?;
        object.read_groups()?;
        object.read_addrsig()?;
        object.read_eh_frame()?;
        object.feature_1_and = object.read_feature_1_and();
        Ok(object)
    }

    /// Reads the symbol table of type `sh_type` (`SHT_SYMTAB`; a linked
    /// image without one has `SHT_DYNSYM`), if the file has one. In a
    /// linked image (`values_are_addresses`) symbol values are addresses.
    pub(crate) fn read_symbols(
        &mut self,
        table: &object::read::elf::SectionTable<'data, elf::FileHeader64<LE>>,
        sh_type: elf::SectionType,
        values_are_addresses: bool,
    ) -> Result<()> {
        let Some(symtab_index) = self.sections.iter().position(|s| s.sh_type == sh_type.0) else {
            return Ok(());
        };
        let symtab_index = SectionIndex(symtab_index as u32);
        let symtab = table
            .symbols(LE, self.data, sh_type)
            .map_err(|e| self.section_error(symtab_index, format!("bad symbol table: {e}")))?;
        let section_count = self.sections.len();
        let mut symbols = Vec::with_capacity(symtab.len());
        for (index, sym) in symtab.iter().enumerate() {
            let entry_offset = (index * size_of::<elf::Sym64<LE>>()) as u64;
            let located = |message: String| {
                self.section_error(symtab_index, message)
                    .at_offset(entry_offset)
            };
            let name = symtab.symbol_name(LE, sym).map_err(|_| {
                located(format!(
                    "symbol {index}: name offset {:#x} is outside the string table",
                    sym.st_name(LE)
                ))
            })?;
            let shndx = sym.st_shndx(LE);
            let place = if shndx == elf::SHN_UNDEF {
                SymbolPlace::Undefined
            } else if shndx == elf::SHN_ABS {
                SymbolPlace::Absolute
            } else if shndx == elf::SHN_COMMON {
                SymbolPlace::Common
            } else {
                let section = symtab
                    .symbol_section(LE, sym, object::SymbolIndex(index))
                    .map_err(|e| located(format!("symbol {index}: {e}")))?;
                match section {
                    Some(section) if section.0 < section_count && section.0 != 0 => {
                        SymbolPlace::Section(SectionIndex(section.0 as u32))
                    }
                    Some(section) => {
                        return Err(located(format!(
                            "symbol {index} '{}' is defined in section {} which does not exist ({section_count} sections)",
                            String::from_utf8_lossy(name),
                            section.0
                        )));
                    }
                    None => SymbolPlace::Undefined,
                }
            };
            // A value in a section is an offset there; see MAX_PLACE_MAGNITUDE.
            // (In a linked image it is an address, which the image reader
            // makes an offset and checks.)
            if matches!(place, SymbolPlace::Section(_))
                && sym.st_value(LE) >= MAX_PLACE_MAGNITUDE
                && !values_are_addresses
            {
                return Err(located(format!(
                    "symbol {index} '{}': value {:#x} is no offset in a section \
                     ({MAX_PLACE_MAGNITUDE:#x} or more)",
                    String::from_utf8_lossy(name),
                    sym.st_value(LE)
                )));
            }
            symbols.push(Symbol {
                name,
                binding: match sym.st_bind() {
                    elf::STB_LOCAL => Binding::Local,
                    elf::STB_GLOBAL => Binding::Global,
                    elf::STB_WEAK => Binding::Weak,
                    elf::STB_GNU_UNIQUE => Binding::Unique,
                    other => Binding::Other(other.0),
                },
                kind: match sym.st_type() {
                    elf::STT_NOTYPE => SymbolKind::NoType,
                    elf::STT_OBJECT => SymbolKind::Object,
                    elf::STT_FUNC => SymbolKind::Func,
                    elf::STT_SECTION => SymbolKind::Section,
                    elf::STT_FILE => SymbolKind::File,
                    elf::STT_COMMON => SymbolKind::Common,
                    elf::STT_TLS => SymbolKind::Tls,
                    elf::STT_GNU_IFUNC => SymbolKind::Ifunc,
                    other => SymbolKind::Other(other.0),
                },
                visibility: match sym.st_visibility() {
                    elf::STV_INTERNAL => Visibility::Internal,
                    elf::STV_HIDDEN => Visibility::Hidden,
                    elf::STV_PROTECTED => Visibility::Protected,
                    _ => Visibility::Default,
                },
                other: sym.st_other.0,
                place,
                value: sym.st_value(LE),
                size: sym.st_size(LE),
            });
        }
        self.symbols = symbols;
        self.symtab = Some(symtab_index);
        Ok(())
    }

    fn read_relocations(
        &mut self,
        table: &object::read::elf::SectionTable<'data, elf::FileHeader64<LE>>,
    ) -> Result<()> {
        for (rela_index, header) in table.iter().enumerate() {
            let rela_index = SectionIndex(rela_index as u32);
            let sh_type = header.sh_type(LE);
            if sh_type == elf::SHT_REL {
                return Err(self.section_error(
                    rela_index,
                    "SHT_REL relocations without addends are not used on x86-64 or AArch64",
                ));
            }
            if !crate::model::is_relocation_section(sh_type.0) {
                continue;
            }
            let target = SectionIndex(header.sh_info(LE));
            if target.index() == 0 || target.index() >= self.sections.len() {
                return Err(self.section_error(
                    rela_index,
                    format!(
                        "relocations apply to section {} which does not exist",
                        target.0
                    ),
                ));
            }
            if Some(SectionIndex(header.sh_link(LE))) != self.symtab {
                return Err(self.section_error(
                    rela_index,
                    "relocation section does not refer to the symbol table",
                ));
            }
            let section = &self.sections[target.index()];
            if section.reloc_section.is_some() {
                return Err(self.section_error(
                    rela_index,
                    format!("section {} has two relocation sections", target.0),
                ));
            }
            // A section the program does not load (debug information) is
            // never analysed: its relocations are read if the object is
            // rewritten ([`Object::relocations`]).
            let deferred = !section.is_alloc();
            let relocs = if deferred {
                Vec::new()
            } else {
                self.parse_relocations(rela_index, header, target)?
            };
            let section = &mut self.sections[target.index()];
            section.relocs = relocs;
            section.reloc_section = Some(rela_index);
            section.relocs_deferred = deferred;
        }
        Ok(())
    }

    /// The relocations of section `rela_index` (whose header is `header`),
    /// which patch `target`, checked and sorted by offset.
    fn parse_relocations(
        &self,
        rela_index: SectionIndex,
        header: &elf::SectionHeader64<LE>,
        target: SectionIndex,
    ) -> Result<Vec<Reloc>> {
        let sh_type = header.sh_type(LE);
        // Both forms as (r_offset, r_sym, r_type, r_addend, entry offset):
        // CREL (compact relocations) entries have no fixed size.
        let entries: Vec<(u64, u32, u32, i64, Option<u64>)> = if sh_type == elf::SHT_CREL {
            let (crels, _) = header
                .crel(LE, self.data)
                .map_err(|e| {
                    self.section_error(rela_index, format!("bad CREL relocation section: {e}"))
                })?
                .ok_or_else(|| self.section_error(rela_index, "bad CREL relocation section"))?;
            if !crels.is_rela() {
                return Err(self.section_error(
                    rela_index,
                    "CREL relocations without addends are not used on x86-64 or AArch64",
                ));
            }
            crels
                .enumerate()
                .map(|(n, crel)| {
                    crel.map(|c| (c.r_offset, c.r_sym, c.r_type.0, c.r_addend, None))
                        .map_err(|e| {
                            self.section_error(
                                rela_index,
                                format!("relocation {n}: bad CREL entry: {e}"),
                            )
                        })
                })
                .collect::<Result<_>>()?
        } else {
            let (relas, _) = header
                .rela(LE, self.data)
                .map_err(|e| {
                    self.section_error(rela_index, format!("bad relocation section: {e}"))
                })?
                .ok_or_else(|| self.section_error(rela_index, "bad relocation section"))?;
            relas
                .iter()
                .enumerate()
                .map(|(n, rela)| {
                    (
                        rela.r_offset(LE),
                        rela.r_sym(LE, false),
                        rela.r_type(LE, false).0,
                        rela.r_addend(LE),
                        Some((n * size_of::<elf::Rela64<LE>>()) as u64),
                    )
                })
                .collect()
        };
        let target_size = self.sections[target.index()].size;
        let mut relocs = Vec::with_capacity(entries.len());
        for (n, (offset, symbol, r_type, addend, entry_offset)) in entries.into_iter().enumerate() {
            let located = |error: Error| match entry_offset {
                Some(at) => error.at_offset(at),
                None => error,
            };
            if symbol as usize >= self.symbols.len().max(1) {
                return Err(located(self.section_error(
                    rela_index,
                    format!(
                        "relocation {n}: symbol index {symbol} is out of range ({} symbols)",
                        self.symbols.len()
                    ),
                )));
            }
            // See MAX_PLACE_MAGNITUDE: later phases add addends unchecked.
            if addend.unsigned_abs() >= MAX_PLACE_MAGNITUDE {
                return Err(located(self.section_error(
                    rela_index,
                    format!(
                        "relocation {n}: addend {addend:#x} is absurdly large \
                         (magnitude {MAX_PLACE_MAGNITUDE:#x} or more)"
                    ),
                )));
            }
            let info = icf_arch::of(self.arch).elf_reloc(r_type).ok_or_else(|| {
                located(self.section_error(
                    rela_index,
                    format!("relocation {n}: unsupported relocation type {r_type}"),
                ))
            })?;
            if offset
                .checked_add(u64::from(info.size))
                .is_none_or(|end| end > target_size)
            {
                return Err(located(self.section_error(
                    rela_index,
                    format!(
                        "relocation {n} at offset {offset:#x} points past the end of section {} '{}' ({target_size:#x} bytes)",
                        target.0,
                        self.sections[target.index()].name_lossy()
                    ),
                )));
            }
            relocs.push(Reloc {
                offset,
                r_type,
                symbol: SymbolIndex(symbol),
                addend,
                size: info.size,
                pc_relative: info.pc_relative,
            });
        }
        relocs.sort_by_key(|r| r.offset);
        Ok(relocs)
    }

    /// The relocations [`Object::parse`] left unread for `target` (see
    /// [`Section::relocs_deferred`]), read and checked now.
    pub(crate) fn deferred_elf_relocations(&self, target: SectionIndex) -> Result<Vec<Reloc>> {
        let Some(rela_index) = self.section(target).reloc_section else {
            return Ok(Vec::new());
        };
        let header = elf::FileHeader64::<LE>::parse(self.data)
            .map_err(|e| Error::new(format!("bad ELF header: {e}")))?;
        let table = header
            .sections(LE, self.data)
            .map_err(|e| Error::new(format!("bad section headers: {e}")))?;
        let rela = table
            .section(object::SectionIndex(rela_index.index()))
            .map_err(|e| self.section_error(rela_index, format!("bad section header: {e}")))?;
        self.parse_relocations(rela_index, rela, target)
    }

    fn read_groups(&mut self) -> Result<()> {
        for index in 0..self.sections.len() {
            let section = &self.sections[index];
            if section.sh_type != elf::SHT_GROUP.0 {
                continue;
            }
            let group_index = SectionIndex(index as u32);
            let words: Vec<u32> = section
                .data
                .chunks_exact(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect();
            let Some((&flags, member_words)) = words.split_first() else {
                return Err(self.section_error(group_index, "empty group section"));
            };
            let signature = SymbolIndex(section.info);
            if signature.index() >= self.symbols.len() {
                return Err(self.section_error(
                    group_index,
                    format!("group signature symbol {} is out of range", signature.0),
                ));
            }
            let mut members = Vec::with_capacity(member_words.len());
            for (n, &member) in member_words.iter().enumerate() {
                if member == 0 || member as usize >= self.sections.len() {
                    return Err(self
                        .section_error(
                            group_index,
                            format!("group member {member} is not a section"),
                        )
                        .at_offset(4 * (n as u64 + 1)));
                }
                members.push(SectionIndex(member));
            }
            let member_names = members
                .iter()
                .map(|m| crate::model::name_fingerprint(self.sections[m.index()].name))
                .collect();
            let group_number = GroupIndex(self.groups.len() as u32);
            for member in &members {
                self.sections[member.index()].group = Some(group_number);
            }
            self.groups.push(ComdatGroup {
                section: group_index,
                signature,
                is_comdat: flags & elf::GRP_COMDAT.0 != 0,
                members,
                member_names,
            });
        }
        Ok(())
    }

    fn read_addrsig(&mut self) -> Result<()> {
        let mut tables = (0..self.sections.len())
            .filter(|&index| self.sections[index].sh_type == SHT_LLVM_ADDRSIG);
        let Some(index) = tables.next() else {
            return Ok(());
        };
        // One table per object, as LLVM writes it: a second one would be
        // copied unchanged into the output, naming symbols by stale indices.
        if let Some(second) = tables.next() {
            return Err(self.section_error(
                SectionIndex(second as u32),
                format!("a second address-significance table (the first is section {index})"),
            ));
        }
        let section = &self.sections[index];
        // A tool that rewrote the symbol table without knowing the table
        // (objcopy, `ld -r`) zeroes `sh_link`: then the table says nothing, as
        // lld also decides, and stays stale in the output. Any other link
        // must be the symbol table.
        if section.link == 0 {
            return Ok(());
        }
        if Some(SectionIndex(section.link)) != self.symtab {
            return Err(self.section_error(
                SectionIndex(index as u32),
                format!(
                    "address-significance table links to section {}, not the symbol table",
                    section.link
                ),
            ));
        }
        let mut symbols = Vec::new();
        let mut reader = gimli::EndianSlice::new(section.data, gimli::LittleEndian);
        while !gimli::Reader::is_empty(&reader) {
            let at = section.data.len() - gimli::Reader::len(&reader);
            let value = gimli::Reader::read_uleb128(&mut reader).map_err(|e| {
                self.section_error(
                    SectionIndex(index as u32),
                    format!("bad address-significance entry: {e}"),
                )
                .at_offset(at as u64)
            })?;
            if value as usize >= self.symbols.len() {
                return Err(self
                    .section_error(
                        SectionIndex(index as u32),
                        format!("address-significant symbol {value} is out of range"),
                    )
                    .at_offset(at as u64));
            }
            symbols.push(SymbolIndex(value as u32));
        }
        self.addrsig = Some(symbols);
        Ok(())
    }

    pub(crate) fn read_eh_frame(&mut self) -> Result<()> {
        let Some(index) = self
            .sections
            .iter()
            .position(|s| s.name == b".eh_frame" && !s.data.is_empty())
        else {
            return Ok(());
        };
        let index = SectionIndex(index as u32);
        let fdes = eh_frame::parse(&self.sections[index.index()]).map_err(|e| {
            let name = self.sections[index.index()].name_lossy();
            e.with_section(index.0, name)
        })?;
        self.eh_frame = Some((index, fdes));
        Ok(())
    }
}

impl Object<'_> {
    /// The feature bits of `.note.gnu.property` (see
    /// [`Object::feature_1_and`]), 0 when absent or unreadable.
    pub(crate) fn read_feature_1_and(&self) -> u32 {
        let wanted = icf_arch::of(self.arch).gnu_feature_1_and();
        let Some(section) = self
            .sections
            .iter()
            .find(|s| s.name == b".note.gnu.property")
        else {
            return 0;
        };
        let data = section.data;
        let u32_at = |at: usize| {
            data.get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let mut note = 0;
        while let (Some(namesz), Some(descsz), Some(kind)) =
            (u32_at(note), u32_at(note + 4), u32_at(note + 8))
        {
            let name_end = note + 12 + (namesz as usize).next_multiple_of(4);
            let desc_end = name_end + (descsz as usize).next_multiple_of(8);
            if kind == 5 && data.get(note + 12..note + 16) == Some(b"GNU\0") {
                let mut property = name_end;
                while property + 8 <= (name_end + descsz as usize).min(data.len()) {
                    let (Some(pr_type), Some(pr_size)) = (u32_at(property), u32_at(property + 4))
                    else {
                        break;
                    };
                    if pr_type == wanted && pr_size >= 4 {
                        return u32_at(property + 8).unwrap_or(0);
                    }
                    property += 8 + (pr_size as usize).next_multiple_of(8);
                }
            }
            if desc_end <= note {
                break;
            }
            note = desc_end;
        }
        0
    }
}

/// Checks the identification bytes, so each unsupported kind of file gets its own message.
/// Every section header of the file with its contents, each checked: its
/// name, where its bytes lie, its alignment and size. Relocations are not
/// attached yet.
pub(crate) fn read_sections<'data>(
    data: &'data [u8],
    header: &elf::FileHeader64<LE>,
    table: &object::read::elf::SectionTable<'data, elf::FileHeader64<LE>>,
) -> Result<Vec<Section<'data>>> {
    let header_table_offset = header.e_shoff(LE);
    let mut sections = Vec::with_capacity(table.len());
    for (index, header) in table.iter().enumerate() {
        let name = table
            .section_name(LE, header)
            .map_err(|e| Error::new(e.to_string()).with_section(index as u32, "?"))?;
        let section_data = header.data(LE, data).map_err(|_| {
            Error::new(format!(
                "section data {:#x}..+{:#x} lies outside the file ({:#x} bytes)",
                header.sh_offset(LE),
                header.sh_size(LE),
                data.len()
            ))
            .with_section(index as u32, String::from_utf8_lossy(name))
        })?;
        // Header fields are outside the section's data: the message says
        // where the field is in the file.
        let field_at = |field: u64| {
            let entry = size_of::<elf::SectionHeader64<LE>>() as u64;
            header_table_offset
                .saturating_add(index as u64 * entry)
                .saturating_add(field)
        };
        let align = header.sh_addralign(LE);
        if align > MAX_SECTION_ALIGN || (align != 0 && !align.is_power_of_two()) {
            return Err(Error::new(format!(
                "sh_addralign {align:#x} (section header field at file offset {:#x}) \
                 is not 0 or a power of two up to {MAX_SECTION_ALIGN:#x}",
                field_at(0x30)
            ))
            .with_section(index as u32, String::from_utf8_lossy(name)));
        }
        let size = header.sh_size(LE);
        if size >= MAX_PLACE_MAGNITUDE {
            return Err(Error::new(format!(
                "sh_size {size:#x} (section header field at file offset {:#x}) \
                 is absurdly large: {MAX_PLACE_MAGNITUDE:#x} or more",
                field_at(0x20)
            ))
            .with_section(index as u32, String::from_utf8_lossy(name)));
        }
        sections.push(Section {
            name,
            sh_type: header.sh_type(LE).0,
            flags: header.sh_flags(LE).0,
            align,
            size,
            link: header.sh_link(LE),
            info: header.sh_info(LE),
            entsize: header.sh_entsize(LE),
            data: section_data,
            relocs: Vec::new(),
            reloc_section: None,
            relocs_deferred: false,
            group: None,
            name_is_plain: crate::model::plain_name(name),
        });
    }
    Ok(sections)
}

pub(crate) fn check_ident(data: &[u8]) -> Result<Arch> {
    if data.len() < 4 || data[..4] != elf::ELFMAG {
        return Err(Error::new("not an ELF file (bad magic)").at_offset(0));
    }
    if data.len() < size_of::<elf::FileHeader64<LE>>() {
        return Err(Error::new(format!(
            "truncated ELF header: the file has {} bytes",
            data.len()
        ))
        .at_offset(0));
    }
    match elf::FileClass(data[4]) {
        elf::ELFCLASS64 => {}
        elf::ELFCLASS32 => {
            return Err(
                Error::new("32-bit ELF is not supported (only x86-64 and AArch64)").at_offset(4),
            );
        }
        other => return Err(Error::new(format!("bad ELF class {}", other.0)).at_offset(4)),
    }
    match elf::DataEncoding(data[5]) {
        elf::ELFDATA2LSB => {}
        elf::ELFDATA2MSB => {
            return Err(
                Error::new("big-endian ELF is not supported (only x86-64 and AArch64)")
                    .at_offset(5),
            );
        }
        other => return Err(Error::new(format!("bad ELF data encoding {}", other.0)).at_offset(5)),
    }
    let machine = u16::from_le_bytes([data[18], data[19]]);
    match icf_arch::from_elf_machine(machine) {
        Some(architecture) => Ok(architecture.arch()),
        None => Err(Error::new(format!(
            "unsupported machine {machine} (icf folds x86-64 and AArch64)"
        ))
        .at_offset(18)),
    }
}
