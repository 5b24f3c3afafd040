//! Where the meaningful fields of a seed are: ELF header, section headers,
//! symbols, relocations (RELA and CREL), groups, `.llvm_addrsig`,
//! `.eh_frame` records, string tables, and the member headers, symbol table
//! and long-name table of archives (with the ELF fields of each member).
//!
//! Assumption: seeds are valid little-endian ELF64 objects or archives of
//! them, as compilers write them; the layout is read once from the unmutated
//! seed by offsets, and anything that does not fit is skipped rather than
//! reported, so a layout is never wrong about a field's position, only
//! sometimes incomplete.

use object::elf;

/// How a field's value is stored.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// An unsigned little-endian integer of this many bytes (1 to 8; 3 is
    /// Mach-O's `r_symbolnum`).
    Little(u8),
    /// An unsigned big-endian integer of this many bytes (archive symbol tables).
    Big(u8),
    /// A ULEB128 number occupying this many bytes.
    Uleb(u8),
    /// Space-padded ASCII decimal in this many bytes (archive member headers).
    Decimal(u8),
    /// Raw bytes, mutated byte by byte (names, string tables).
    Bytes(u32),
}

/// What a field means, which decides the interesting values tried on it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// A file or section offset, or an address.
    Offset,
    /// A size or length.
    Size,
    /// A count of entries.
    Count,
    /// A section index (`e_shstrndx`, `sh_link`, `st_shndx`, group entries).
    SectionIndex,
    /// A symbol index (`r_info` symbol, `sh_info` of `.symtab`, `.llvm_addrsig`).
    SymbolIndex,
    /// An offset into a string table.
    StringOffset,
    /// `sh_type`.
    SectionType,
    /// `sh_flags`, `e_flags`, group flags.
    Flags,
    /// A relocation type.
    RelocationType,
    /// `st_info`: binding and type.
    SymbolInfo,
    /// An addend or other signed value.
    Signed,
    /// Bytes of names or strings.
    Text,
    /// Anything else: magic, identification bytes, machine, alignment.
    Other,
}

/// One mutable field of a seed.
#[derive(Clone, Debug)]
pub struct Field {
    /// Offset of the field's first byte in the seed.
    pub offset: usize,
    pub encoding: Encoding,
    pub role: Role,
    /// For the finding's note: `section 5 '.rela.text' relocation 3 r_info.symbol`.
    pub description: String,
}

/// The fields of a seed, and the sizes that make "near the limit" values.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub fields: Vec<Field>,
    /// Boundaries worth truncating at: ends of headers, sections, members.
    pub boundaries: Vec<usize>,
    /// Counts and sizes of the seed (file size, section count, symbol
    /// count...), for values just below, at and above them.
    pub limits: Vec<u64>,
    /// The machine of the (first) ELF object, for relocation types.
    pub machine: u16,
    /// The `cputype` of the (first) Mach-O object; 0 for ELF seeds. Decides
    /// the values tried on flags, section types, symbol types and
    /// relocations.
    pub macho_cputype: u32,
}

/// What adds a field of the object at file offset `base` to a layout:
/// `(layout, offset in the object, encoding, role, what)`, described after
/// `prefix` (the archive member, if any).
pub(crate) fn field_adder(
    base: usize,
    prefix: &str,
) -> impl Fn(&mut Layout, usize, Encoding, Role, String) + '_ {
    move |layout, offset, encoding, role, what| {
        layout.fields.push(Field {
            offset: base + offset,
            encoding,
            role,
            description: format!("{prefix}{what}"),
        });
    }
}

pub(crate) fn read_le(data: &[u8], offset: usize, width: usize) -> Option<u64> {
    let bytes = data.get(offset..offset.checked_add(width)?)?;
    Some(
        bytes
            .iter()
            .rev()
            .fold(0u64, |value, &byte| (value << 8) | u64::from(byte)),
    )
}

pub(crate) fn read_be(data: &[u8], offset: usize, width: usize) -> Option<u64> {
    let bytes = data.get(offset..offset.checked_add(width)?)?;
    Some(
        bytes
            .iter()
            .fold(0u64, |value, &byte| (value << 8) | u64::from(byte)),
    )
}

/// Section header fields of ELF64 (offset, width, name, role).
const SECTION_HEADER_FIELDS: [(usize, u8, &str, Role); 10] = [
    (0, 4, "sh_name", Role::StringOffset),
    (4, 4, "sh_type", Role::SectionType),
    (8, 8, "sh_flags", Role::Flags),
    (16, 8, "sh_addr", Role::Offset),
    (24, 8, "sh_offset", Role::Offset),
    (32, 8, "sh_size", Role::Size),
    (40, 4, "sh_link", Role::SectionIndex),
    (44, 4, "sh_info", Role::SectionIndex),
    (48, 8, "sh_addralign", Role::Other),
    (56, 8, "sh_entsize", Role::Size),
];

const FILE_HEADER_FIELDS: [(usize, u8, &str, Role); 16] = [
    (4, 1, "EI_CLASS", Role::Other),
    (5, 1, "EI_DATA", Role::Other),
    (6, 1, "EI_VERSION", Role::Other),
    (7, 1, "EI_OSABI", Role::Other),
    (16, 2, "e_type", Role::Other),
    (18, 2, "e_machine", Role::Other),
    (20, 4, "e_version", Role::Other),
    (32, 8, "e_phoff", Role::Offset),
    (40, 8, "e_shoff", Role::Offset),
    (48, 4, "e_flags", Role::Flags),
    (52, 2, "e_ehsize", Role::Size),
    (54, 2, "e_phentsize", Role::Size),
    (56, 2, "e_phnum", Role::Count),
    (58, 2, "e_shentsize", Role::Size),
    (60, 2, "e_shnum", Role::Count),
    (62, 2, "e_shstrndx", Role::SectionIndex),
];

/// One section header as read from the seed.
struct Section {
    sh_type: u32,
    offset: usize,
    size: usize,
    name: String,
}

/// Adds the fields of the ELF object at `base` (the whole file, or an
/// archive member's data); `prefix` names the member in descriptions.
pub(crate) fn elf_object(layout: &mut Layout, file: &[u8], base: usize, prefix: &str) {
    let Some(data) = file.get(base..) else {
        return;
    };
    if !data.starts_with(b"\x7fELF") || data.get(4) != Some(&2) || data.get(5) != Some(&1) {
        return;
    }
    let field = field_adder(base, prefix);
    for (offset, width, name, role) in FILE_HEADER_FIELDS {
        field(
            layout,
            offset,
            Encoding::Little(width),
            role,
            name.to_owned(),
        );
    }
    if layout.machine == 0 {
        layout.machine = read_le(data, 18, 2).unwrap_or(0) as u16;
    }
    layout.boundaries.extend([base + 16, base + 64]);

    let (Some(shoff), Some(shentsize), Some(shnum), Some(shstrndx)) = (
        read_le(data, 40, 8),
        read_le(data, 58, 2),
        read_le(data, 60, 2),
        read_le(data, 62, 2),
    ) else {
        return;
    };
    let (shoff, shentsize, shnum) = (shoff as usize, shentsize as usize, shnum as usize);
    if shentsize != 64 || shoff.saturating_add(shnum.saturating_mul(64)) > data.len() {
        return;
    }
    layout.limits.extend([shnum as u64, shoff as u64]);
    layout
        .boundaries
        .extend([base + shoff, base + shoff + shnum * 64]);

    let header_at = |index: usize| shoff + index * 64;
    let sections = section_table(data, shoff, shnum, shstrndx as usize);
    let contents = |section: &Section| -> Option<&[u8]> {
        if section.sh_type == elf::SHT_NOBITS.0 {
            return None;
        }
        data.get(section.offset..section.offset.checked_add(section.size)?)
    };
    for (index, section) in sections.iter().enumerate() {
        let what = format!("section {index} '{}' ", section.name);
        for (offset, width, name, role) in SECTION_HEADER_FIELDS {
            field(
                layout,
                header_at(index) + offset,
                Encoding::Little(width),
                role,
                format!("{what}{name}"),
            );
        }
        let Some(bytes) = contents(section) else {
            continue;
        };
        let start = section.offset;
        layout
            .boundaries
            .extend([base + start, base + start + bytes.len()]);
        layout.limits.push(bytes.len() as u64);
        match section.sh_type {
            SHT_SYMTAB => symbol_fields(layout, &field, start, bytes, &what),
            SHT_RELA | SHT_REL => relocation_fields(layout, &field, section, start, bytes, &what),
            SHT_GROUP => group_fields(layout, &field, start, bytes, &what),
            SHT_STRTAB => {
                field(
                    layout,
                    start,
                    Encoding::Bytes(bytes.len() as u32),
                    Role::Text,
                    format!("{what}strings"),
                );
            }
            _ if section.sh_type == icf_object::SHT_LLVM_ADDRSIG || section.sh_type == SHT_CREL => {
                let role = if section.sh_type == SHT_CREL {
                    Role::Other
                } else {
                    Role::SymbolIndex
                };
                let what = format!("{prefix}{what}");
                uleb_fields(layout, base + start, bytes, &what, |_| role);
            }
            _ if section.name == ".eh_frame" => eh_frame(layout, base, start, bytes, &what),
            _ => {}
        }
    }
}

/// The section headers at `shoff` (`shnum` of them, 64 bytes each), with
/// their names from section `shstrndx`.
fn section_table(data: &[u8], shoff: usize, shnum: usize, shstrndx: usize) -> Vec<Section> {
    let header_at = |index: usize| shoff + index * 64;
    let mut sections: Vec<Section> = (0..shnum)
        .map(|index| {
            let at = header_at(index);
            Section {
                sh_type: read_le(data, at + 4, 4).unwrap_or(0) as u32,
                offset: read_le(data, at + 24, 8).unwrap_or(0) as usize,
                size: read_le(data, at + 32, 8).unwrap_or(0) as usize,
                name: String::new(),
            }
        })
        .collect();
    let names = sections.get(shstrndx).and_then(|section| {
        if section.sh_type == elf::SHT_NOBITS.0 {
            return None;
        }
        data.get(section.offset..section.offset.checked_add(section.size)?)
    });
    if let Some(names) = names {
        for (index, section) in sections.iter_mut().enumerate() {
            let name_offset = read_le(data, header_at(index), 4).unwrap_or(0) as usize;
            if let Some(tail) = names.get(name_offset..) {
                let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
                section.name = String::from_utf8_lossy(&tail[..end]).into_owned();
            }
        }
    }
    sections
}

/// The fields of a symbol table's entries.
fn symbol_fields(
    layout: &mut Layout,
    field: &dyn Fn(&mut Layout, usize, Encoding, Role, String),
    start: usize,
    bytes: &[u8],
    what: &str,
) {
    let count = bytes.len() / 24;
    layout.limits.push(count as u64);
    for symbol in 0..count {
        let at = start + symbol * 24;
        let symbol_what = format!("{what}symbol {symbol} ");
        for (offset, encoding, name, role) in [
            (0, Encoding::Little(4), "st_name", Role::StringOffset),
            (4, Encoding::Little(1), "st_info", Role::SymbolInfo),
            (5, Encoding::Little(1), "st_other", Role::Other),
            (6, Encoding::Little(2), "st_shndx", Role::SectionIndex),
            (8, Encoding::Little(8), "st_value", Role::Offset),
            (16, Encoding::Little(8), "st_size", Role::Size),
        ] {
            field(
                layout,
                at + offset,
                encoding,
                role,
                format!("{symbol_what}{name}"),
            );
        }
    }
}

/// The fields of a `SHT_RELA` or `SHT_REL` section's entries.
fn relocation_fields(
    layout: &mut Layout,
    field: &dyn Fn(&mut Layout, usize, Encoding, Role, String),
    section: &Section,
    start: usize,
    bytes: &[u8],
    what: &str,
) {
    let entry = if section.sh_type == SHT_RELA { 24 } else { 16 };
    for relocation in 0..bytes.len() / entry {
        let at = start + relocation * entry;
        let reloc_what = format!("{what}relocation {relocation} ");
        field(
            layout,
            at,
            Encoding::Little(8),
            Role::Offset,
            format!("{reloc_what}r_offset"),
        );
        field(
            layout,
            at + 8,
            Encoding::Little(4),
            Role::RelocationType,
            format!("{reloc_what}r_info.type"),
        );
        field(
            layout,
            at + 12,
            Encoding::Little(4),
            Role::SymbolIndex,
            format!("{reloc_what}r_info.symbol"),
        );
        if entry == 24 {
            field(
                layout,
                at + 16,
                Encoding::Little(8),
                Role::Signed,
                format!("{reloc_what}r_addend"),
            );
        }
    }
}

/// The flags and member section indices of a `SHT_GROUP`.
fn group_fields(
    layout: &mut Layout,
    field: &dyn Fn(&mut Layout, usize, Encoding, Role, String),
    start: usize,
    bytes: &[u8],
    what: &str,
) {
    for entry in 0..bytes.len() / 4 {
        let role = if entry == 0 {
            Role::Flags
        } else {
            Role::SectionIndex
        };
        field(
            layout,
            start + entry * 4,
            Encoding::Little(4),
            role,
            format!("{what}entry {entry}"),
        );
    }
}

/// A field for each ULEB128 number of `bytes` (at file offset `start`);
/// `role_of` gives each number's role from its value, in order.
pub(crate) fn uleb_fields(
    layout: &mut Layout,
    start: usize,
    bytes: &[u8],
    what: &str,
    mut role_of: impl FnMut(u64) -> Role,
) {
    let mut at = 0;
    let mut number = 0;
    while at < bytes.len() {
        let length = bytes[at..]
            .iter()
            .position(|&b| b & 0x80 == 0)
            .map_or(bytes.len() - at, |p| p + 1);
        let value = bytes[at..at + length]
            .iter()
            .enumerate()
            .fold(0u64, |v, (i, &b)| {
                v | u64::from(b & 0x7f).checked_shl(7 * i as u32).unwrap_or(0)
            });
        layout.fields.push(Field {
            offset: start + at,
            encoding: Encoding::Uleb(length.min(10) as u8),
            role: role_of(value),
            description: format!("{what}ULEB {number}"),
        });
        at += length;
        number += 1;
    }
}

/// `SHT_CREL`: compact relocations (LLVM 19, `-Wa,--crel`).
pub const SHT_CREL: u32 = elf::SHT_CREL.0;
const SHT_SYMTAB: u32 = elf::SHT_SYMTAB.0;
const SHT_RELA: u32 = elf::SHT_RELA.0;
const SHT_REL: u32 = elf::SHT_REL.0;
const SHT_GROUP: u32 = elf::SHT_GROUP.0;
const SHT_STRTAB: u32 = elf::SHT_STRTAB.0;

/// Length and CIE pointer of every `.eh_frame` record.
pub(crate) fn eh_frame(layout: &mut Layout, base: usize, start: usize, bytes: &[u8], what: &str) {
    let mut at = 0;
    let mut record = 0;
    while let Some(length) = read_le(bytes, at, 4) {
        layout.fields.push(Field {
            offset: base + start + at,
            encoding: Encoding::Little(4),
            role: Role::Size,
            description: format!("{what}record {record} length"),
        });
        if length == 0 || length == 0xffff_ffff {
            break;
        }
        layout.fields.push(Field {
            offset: base + start + at + 4,
            encoding: Encoding::Little(4),
            role: Role::Offset,
            description: format!("{what}record {record} CIE pointer"),
        });
        // Augmentation and pointer bytes just after: mutate a few raw.
        layout.fields.push(Field {
            offset: base + start + at + 8,
            encoding: Encoding::Bytes(8),
            role: Role::Other,
            description: format!("{what}record {record} body"),
        });
        at = at.saturating_add(4).saturating_add(length as usize);
        record += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_integers_both_ways() {
        let data = [0x01, 0x02, 0x03, 0x04];
        assert_eq!(read_le(&data, 0, 4), Some(0x0403_0201));
        assert_eq!(read_be(&data, 0, 4), Some(0x0102_0304));
        assert_eq!(read_le(&data, 2, 4), None);
        assert_eq!(read_le(&data, usize::MAX, 4), None);
    }

    #[test]
    fn non_elf_has_no_fields() {
        assert!(Layout::of(b"hello").fields.is_empty());
    }
}
