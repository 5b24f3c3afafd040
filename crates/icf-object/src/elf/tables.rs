//! The string tables and the symbol table of a rewritten ELF object, which
//! the rewriter lays out itself rather than through `object`'s writer.
//!
//! The writer's string tables sort every name so that one name can end
//! inside another (suffix sharing): on C++ objects, whose section and
//! symbol names are long mangled names, that sort and the hashing behind
//! it took a third of a rewrite's time. Here names go in the order they
//! come, and the one sharing worth having is kept by construction: a
//! section's name is the tail of its relocation section's (`.rela.text.f`
//! holds `.text.f`). Nothing reads a string table but through the offsets
//! the symbols and section headers hold, so the object links the same.

use object::LittleEndian as LE;
use object::elf;
use object::write::elf::{SectionHeader, Writer};

/// A string table written in the order names are added (see the module header).
#[derive(Debug)]
pub(crate) struct Strings {
    bytes: Vec<u8>,
}

impl Strings {
    /// An empty table: the null byte every ELF string table starts with.
    pub(crate) fn new() -> Strings {
        Strings { bytes: vec![0] }
    }

    /// Adds `name`; returns its offset (0, the empty name, for an empty one).
    pub(crate) fn add(&mut self, name: &[u8]) -> u32 {
        if name.is_empty() {
            return 0;
        }
        let offset = self.bytes.len() as u32;
        self.bytes.extend_from_slice(name);
        self.bytes.push(0);
        offset
    }

    /// Adds a section's name and its relocation section's at once; returns
    /// (section, relocation section) offsets. When the relocation section's
    /// name is the section's with a prefix (`.rela.text.f`), the section's
    /// name is its tail.
    pub(crate) fn add_pair(&mut self, name: &[u8], relocations: &[u8]) -> (u32, u32) {
        let rela = self.add(relocations);
        if !name.is_empty() && relocations.len() > name.len() && relocations.ends_with(name) {
            (rela + (relocations.len() - name.len()) as u32, rela)
        } else {
            (self.add(name), rela)
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// One entry of the symbol table, its name an offset into [`Strings`].
#[derive(Copy, Clone, Debug)]
pub(crate) struct TableSymbol {
    pub(crate) name: u32,
    pub(crate) st_info: u8,
    pub(crate) st_other: u8,
    /// The output index of the section that defines it, if one does.
    pub(crate) section: Option<u32>,
    /// `st_shndx` when no section defines it (`SHN_UNDEF`, `SHN_ABS`,
    /// `SHN_COMMON`).
    pub(crate) special: u16,
    pub(crate) value: u64,
    pub(crate) size: u64,
}

/// Where the symbol table, its extended section indices and its string
/// table go in the output.
#[derive(Debug)]
pub(crate) struct SymbolTables {
    pub(crate) strings: Strings,
    /// Every entry after the null one, in output order.
    pub(crate) symbols: Vec<TableSymbol>,
    pub(crate) num_local: u32,
    pub(crate) symtab_index: u32,
    pub(crate) strtab_index: u32,
    /// `SHT_SYMTAB_SHNDX`'s index, when a defining section's index does
    /// not fit `st_shndx`.
    pub(crate) shndx_index: Option<u32>,
    /// The three tables' names (`.symtab`, `.symtab_shndx` when there is
    /// one, `.strtab`) in the section header string table.
    names: [u32; 3],
    symtab_offset: u64,
    shndx_offset: u64,
    strtab_offset: u64,
}

/// `Elf64_Sym`'s size.
const SYM_SIZE: u64 = 24;

impl SymbolTables {
    /// Reserves the three tables' indices and bytes (the extended indices
    /// only when some section index needs them), after the sections', and
    /// adds their names to `section_names`.
    pub(crate) fn reserve(
        writer: &mut Writer<'_>,
        strings: Strings,
        symbols: Vec<TableSymbol>,
        num_local: u32,
        section_names: &mut Strings,
    ) -> SymbolTables {
        let needs_shndx = symbols.iter().any(|s| {
            s.section
                .is_some_and(|i| i >= u32::from(elf::SHN_LORESERVE))
        });
        let symtab_index = writer.reserve_section_index().0;
        let shndx_index = needs_shndx.then(|| writer.reserve_section_index().0);
        let strtab_index = writer.reserve_section_index().0;
        let count = symbols.len() as u64 + 1;
        let symtab_offset = writer.reserve(count * SYM_SIZE, 8);
        let shndx_offset = if needs_shndx {
            writer.reserve(count * 4, 4)
        } else {
            0
        };
        let strtab_offset = writer.reserve(strings.len(), 1);
        let names = [
            section_names.add(b".symtab"),
            if needs_shndx {
                section_names.add(b".symtab_shndx")
            } else {
                0
            },
            section_names.add(b".strtab"),
        ];
        SymbolTables {
            strings,
            symbols,
            num_local,
            symtab_index,
            strtab_index,
            shndx_index,
            names,
            symtab_offset,
            shndx_offset,
            strtab_offset,
        }
    }

    /// Writes the three tables where [`SymbolTables::reserve`] put them.
    pub(crate) fn write(&self, writer: &mut Writer<'_>) {
        writer.write_align(8);
        debug_assert_eq!(writer.len(), self.symtab_offset);
        writer.write(&[0; SYM_SIZE as usize]);
        for symbol in &self.symbols {
            let st_shndx = match symbol.section {
                Some(index) if index >= u32::from(elf::SHN_LORESERVE) => elf::SHN_XINDEX,
                Some(index) => elf::SymbolSection(index as u16),
                None => elf::SymbolSection(symbol.special),
            };
            let sym = elf::Sym64::<LE> {
                st_name: object::U32::new(LE, symbol.name),
                st_info: elf::SymbolInfo(symbol.st_info),
                st_other: elf::SymbolOther(symbol.st_other),
                st_shndx: object::U16::new(LE, st_shndx),
                st_value: object::U64::new(LE, symbol.value),
                st_size: object::U64::new(LE, symbol.size),
            };
            writer.write(object::pod::bytes_of(&sym));
        }
        if self.shndx_index.is_some() {
            writer.write_align(4);
            debug_assert_eq!(writer.len(), self.shndx_offset);
            writer.write(&0u32.to_le_bytes());
            for symbol in &self.symbols {
                let index = symbol
                    .section
                    .filter(|&i| i >= u32::from(elf::SHN_LORESERVE))
                    .unwrap_or(0);
                writer.write(&index.to_le_bytes());
            }
        }
        debug_assert_eq!(writer.len(), self.strtab_offset);
        writer.write(self.strings.bytes());
    }

    /// Writes the three tables' section headers, in the order their
    /// indices were reserved.
    pub(crate) fn write_headers(&self, writer: &mut Writer<'_>) {
        let names = self.names;
        let count = self.symbols.len() as u64 + 1;
        writer.write_section_header(&SectionHeader {
            sh_name: names[0],
            sh_type: elf::SHT_SYMTAB,
            sh_flags: elf::SectionFlags(0),
            sh_addr: 0,
            sh_offset: self.symtab_offset,
            sh_size: count * SYM_SIZE,
            sh_link: self.strtab_index,
            sh_info: self.num_local,
            sh_addralign: 8,
            sh_entsize: SYM_SIZE,
        });
        if self.shndx_index.is_some() {
            writer.write_section_header(&SectionHeader {
                sh_name: names[1],
                sh_type: elf::SHT_SYMTAB_SHNDX,
                sh_flags: elf::SectionFlags(0),
                sh_addr: 0,
                sh_offset: self.shndx_offset,
                sh_size: count * 4,
                sh_link: self.symtab_index,
                sh_info: 0,
                sh_addralign: 4,
                sh_entsize: 4,
            });
        }
        writer.write_section_header(&string_table_header(
            names[2],
            self.strtab_offset,
            self.strings.len(),
        ));
    }
}

/// The header of a string table of `size` bytes at `offset`.
pub(crate) fn string_table_header(name: u32, offset: u64, size: u64) -> SectionHeader {
    SectionHeader {
        sh_name: name,
        sh_type: elf::SHT_STRTAB,
        sh_flags: elf::SectionFlags(0),
        sh_addr: 0,
        sh_offset: offset,
        sh_size: size,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 1,
        sh_entsize: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_go_in_order_and_a_section_is_the_tail_of_its_relocations() {
        let mut strings = Strings::new();
        assert_eq!(strings.add(b""), 0);
        let f = strings.add(b"f");
        let (text, rela) = strings.add_pair(b".text.g", b".rela.text.g");
        let (other, other_rela) = strings.add_pair(b".data", b".rela.text.h");
        let name_at = |offset: u32| {
            let tail = &strings.bytes()[offset as usize..];
            &tail[..tail
                .iter()
                .position(|&b| b == 0)
                .expect("every name ends in a null byte")]
        };
        assert_eq!(name_at(f), b"f");
        assert_eq!(name_at(text), b".text.g");
        assert_eq!(name_at(rela), b".rela.text.g");
        assert_eq!(text, rela + 5);
        assert_eq!(name_at(other), b".data");
        assert_eq!(name_at(other_rela), b".rela.text.h");
        assert_eq!(strings.bytes()[0], 0);
    }
}
