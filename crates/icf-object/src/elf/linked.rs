//! The headers of a linked ELF image as the file holds them: sections,
//! segments, symbols and relocation entries, each field read and checked
//! against the file's size and the address space, nothing interpreted.
//!
//! Both readers of linked images start here: `image.rs`, which turns an
//! image into the object model (`icf report BINARY`, and the analysis of
//! `icf shrink`), and `icf shrink`, which writes these headers back with
//! the code moved. What they share is what a header says; what it means
//! for the model or for a new layout is each one's own.

use crate::error::{Error, Result};
use object::LittleEndian as LE;
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};

/// One section header, its fields read.
#[derive(Clone, Debug)]
pub struct SectionInfo {
    pub name: String,
    pub name_offset: u32,
    pub entsize: u64,
    /// `sh_addralign` as written (0 or a power of two).
    pub align_field: u64,
    pub sh_type: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub align: u64,
}

impl SectionInfo {
    pub fn is_alloc(&self) -> bool {
        self.flags & elf::SHF_ALLOC.0 != 0
    }

    pub fn is_executable(&self) -> bool {
        self.flags & elf::SHF_EXECINSTR.0 != 0
    }

    /// Whether its bytes are in the file.
    pub fn has_bytes(&self) -> bool {
        self.sh_type != elf::SHT_NOBITS.0 && self.sh_type != elf::SHT_NULL.0
    }

    pub fn contains(&self, address: u64) -> bool {
        (self.addr..self.addr + self.size).contains(&address)
    }
}

/// See `Elf::by_address`.
fn by_address(sections: &[SectionInfo]) -> Option<Vec<(u64, u64, usize)>> {
    let mut by_address: Vec<(u64, u64, usize)> = sections
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_alloc() && s.has_bytes() && s.size > 0)
        .map(|(index, s)| (s.addr, s.addr + s.size, index))
        .collect();
    by_address.sort_unstable();
    by_address
        .windows(2)
        .all(|pair| pair[0].1 <= pair[1].0)
        .then_some(by_address)
}

/// Whether `section` is DWARF (`.debug_*`, `.zdebug_*`).
pub fn is_debug(section: &SectionInfo) -> bool {
    section.name.starts_with(".debug_") || section.name.starts_with(".zdebug_")
}

/// One program header.
#[derive(Clone, Debug)]
pub struct Segment {
    pub p_type: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub paddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub align: u64,
    /// `p_align` as written.
    pub align_field: u64,
}

/// One symbol of `.symtab` or `.dynsym`.
#[derive(Copy, Clone, Debug)]
pub struct SymbolInfo {
    pub value: u64,
    pub size: u64,
    pub kind: u8,
    pub shndx: u16,
}

/// A linked image's headers.
#[derive(Debug)]
pub struct Elf<'data> {
    pub data: &'data [u8],
    pub machine: u16,
    pub e_type: u16,
    pub entry: u64,
    pub shoff: u64,
    pub phoff: u64,
    pub sections: Vec<SectionInfo>,
    pub segments: Vec<Segment>,
    /// The allocated sections with bytes, by address: (start, end,
    /// index), sorted, none overlapping; `None` where some overlap (then
    /// [`Elf::section_at`] looks through the headers in order).
    by_address: Option<Vec<(u64, u64, usize)>>,
}

impl<'data> Elf<'data> {
    pub fn parse(data: &'data [u8]) -> Result<Elf<'data>> {
        let header = elf::FileHeader64::<LE>::parse(data).map_err(|e| Error::new(e.to_string()))?;
        if !header.is_little_endian() {
            return Err(Error::new("only little-endian images are read"));
        }
        let table = header
            .sections(LE, data)
            .map_err(|e| Error::new(format!("bad section header table: {e}")).at_offset(0x28))?;
        let mut sections = Vec::new();
        for (index, section) in table.iter().enumerate() {
            let name = table
                .section_name(LE, section)
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .map_err(|e| Error::new(format!("section {index}: bad name: {e}")))?;
            let info = SectionInfo {
                name,
                name_offset: section.sh_name(LE),
                entsize: section.sh_entsize(LE),
                align_field: section.sh_addralign(LE),
                sh_type: section.sh_type(LE).0,
                flags: section.sh_flags(LE).0,
                addr: section.sh_addr(LE),
                offset: section.sh_offset(LE),
                size: section.sh_size(LE),
                link: section.sh_link(LE),
                info: section.sh_info(LE),
                align: section.sh_addralign(LE).max(1),
            };
            if info.has_bytes()
                && info
                    .offset
                    .checked_add(info.size)
                    .is_none_or(|end| end > data.len() as u64)
            {
                return Err(Error::new(format!(
                    "section {} ({index}): offset {:#x} and size {:#x} run past the end of the file",
                    info.name, info.offset, info.size
                )));
            }
            if info.is_alloc() && info.addr.checked_add(info.size).is_none() {
                return Err(Error::new(format!(
                    "section {} ({index}): address {:#x} and size {:#x} run past the address space",
                    info.name, info.addr, info.size
                )));
            }
            sections.push(info);
        }
        let segments = header
            .program_headers(LE, data)
            .map_err(|e| Error::new(format!("bad program header table: {e}")).at_offset(0x20))?
            .iter()
            .map(|p| Segment {
                p_type: p.p_type(LE).0,
                flags: p.p_flags(LE).0,
                offset: p.p_offset(LE),
                vaddr: p.p_vaddr(LE),
                paddr: p.p_paddr(LE),
                filesz: p.p_filesz(LE),
                memsz: p.p_memsz(LE),
                align: p.p_align(LE).max(1),
                align_field: p.p_align(LE),
            })
            .collect::<Vec<Segment>>();
        for (index, p) in segments.iter().enumerate() {
            if p.vaddr.checked_add(p.memsz).is_none() || p.offset.checked_add(p.filesz).is_none() {
                return Err(Error::new(format!(
                    "program header {index}: its extent runs past the address space or the file"
                )));
            }
        }
        let by_address = by_address(&sections);
        Ok(Elf {
            data,
            machine: header.e_machine(LE).0,
            e_type: header.e_type(LE).0,
            entry: header.e_entry(LE),
            shoff: header.e_shoff(LE),
            phoff: header.e_phoff(LE),
            sections,
            segments,
            by_address,
        })
    }

    /// The bytes of section `index` (empty for `SHT_NOBITS`).
    pub fn bytes(&self, index: usize) -> &'data [u8] {
        let section = &self.sections[index];
        if !section.has_bytes() {
            return &[];
        }
        &self.data[section.offset as usize..(section.offset + section.size) as usize]
    }

    pub fn section_named(&self, name: &str) -> Option<usize> {
        self.sections.iter().position(|s| s.name == name)
    }

    /// The allocated section (with bytes) holding `address`.
    pub fn section_at(&self, address: u64) -> Option<usize> {
        let Some(by_address) = &self.by_address else {
            return self
                .sections
                .iter()
                .position(|s| s.is_alloc() && s.has_bytes() && s.contains(address));
        };
        let after = by_address.partition_point(|&(start, _, _)| start <= address);
        let &(_, end, index) = by_address.get(after.checked_sub(1)?)?;
        (address < end).then_some(index)
    }

    /// The bytes at `address`, `size` of them, from the allocated section holding it.
    pub fn read(&self, address: u64, size: usize) -> Option<&'data [u8]> {
        let index = self.section_at(address)?;
        let section = &self.sections[index];
        let start = (section.offset + address - section.addr) as usize;
        let end = start.checked_add(size)?;
        if end as u64 > section.offset + section.size {
            return None;
        }
        self.data.get(start..end)
    }

    pub fn read_u64(&self, address: u64) -> Option<u64> {
        let bytes = self.read(address, 8)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }

    /// The symbols of symbol table section `index`.
    pub fn symbols(&self, index: usize) -> Result<Vec<SymbolInfo>> {
        let syms: &[elf::Sym64<LE>] = object::slice_from_all_bytes(self.bytes(index))
            .map_err(|()| Error::new(format!("{}: bad symbol table", self.sections[index].name)))?;
        Ok(syms
            .iter()
            .map(|s| SymbolInfo {
                value: s.st_value.get(LE),
                size: s.st_size.get(LE),
                kind: s.st_info.0 & 0xf,
                shndx: s.st_shndx.get(LE).0,
            })
            .collect())
    }

    /// The entries of `SHT_RELA` section `index`.
    pub fn relas(&self, index: usize) -> Result<Vec<Rela>> {
        Ok(self.raw_relas(index)?.iter().map(Rela::of).collect())
    }

    /// The entries of `SHT_RELA` section `index` as the file holds them
    /// (read with [`Rela::of`]): no copy of a million relocations.
    pub fn raw_relas(&self, index: usize) -> Result<&'data [elf::Rela64<LE>]> {
        object::slice_from_all_bytes(self.bytes(index)).map_err(|()| {
            Error::new(format!(
                "{}: bad relocation section",
                self.sections[index].name
            ))
        })
    }
}

impl Rela {
    pub fn of(raw: &elf::Rela64<LE>) -> Rela {
        Rela {
            offset: raw.r_offset.get(LE),
            sym: raw.r_sym(LE, false),
            r_type: raw.r_type(LE, false).0,
            addend: raw.r_addend.get(LE),
        }
    }
}

/// One `Elf64_Rela`.
#[derive(Copy, Clone, Debug)]
pub struct Rela {
    pub offset: u64,
    pub sym: u32,
    pub r_type: u32,
    pub addend: i64,
}

/// The little-endian `u64` at `bytes[at..]`.
pub fn get_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}
