//! Where the meaningful fields of a Mach-O relocatable object are: the
//! header (`ncmds`, `sizeofcmds`, `flags`), every load command's `cmd` and
//! `cmdsize`, segments and their section headers, `LC_SYMTAB`,
//! `LC_DYSYMTAB`, the `LC_DATA_IN_CODE` and `LC_LINKER_OPTIMIZATION_HINT`
//! tables, each section's relocation entries (`r_address`, `r_symbolnum`
//! and the byte of `r_pcrel`, `r_length`, `r_extern`, `r_type`), the
//! `nlist_64` entries, the string table, `__compact_unwind` records,
//! `__llvm_addrsig` and `__eh_frame`.
//!
//! Assumption: as for ELF (`layout.rs`), seeds are valid 64-bit
//! little-endian objects as clang writes them; the layout is read from the
//! unmutated seed and anything that does not fit is skipped.

use crate::layout::{Encoding, Layout, Role, eh_frame, field_adder, read_le, uleb_fields};

/// `MH_MAGIC_64`, little-endian.
pub(crate) const MAGIC: [u8; 4] = [0xcf, 0xfa, 0xed, 0xfe];

const LC_SYMTAB: u64 = 0x2;
const LC_DYSYMTAB: u64 = 0xb;
const LC_SEGMENT_64: u64 = 0x19;
const LC_DATA_IN_CODE: u64 = 0x29;
const LC_LINKER_OPTIMIZATION_HINT: u64 = 0x2e;

const HEADER_FIELDS: [(usize, u8, &str, Role); 8] = [
    (0, 4, "magic", Role::Other),
    (4, 4, "cputype", Role::Other),
    (8, 4, "cpusubtype", Role::Other),
    (12, 4, "filetype", Role::Other),
    (16, 4, "ncmds", Role::Count),
    (20, 4, "sizeofcmds", Role::Size),
    (24, 4, "flags", Role::Flags),
    (28, 4, "reserved", Role::Other),
];

const SEGMENT_FIELDS: [(usize, Encoding, &str, Role); 9] = [
    (8, Encoding::Bytes(16), "segname", Role::Text),
    (24, Encoding::Little(8), "vmaddr", Role::Offset),
    (32, Encoding::Little(8), "vmsize", Role::Size),
    (40, Encoding::Little(8), "fileoff", Role::Offset),
    (48, Encoding::Little(8), "filesize", Role::Size),
    (56, Encoding::Little(4), "maxprot", Role::Other),
    (60, Encoding::Little(4), "initprot", Role::Other),
    (64, Encoding::Little(4), "nsects", Role::Count),
    (68, Encoding::Little(4), "flags", Role::Flags),
];

const SECTION_FIELDS: [(usize, Encoding, &str, Role); 13] = [
    (0, Encoding::Bytes(16), "sectname", Role::Text),
    (16, Encoding::Bytes(16), "segname", Role::Text),
    (32, Encoding::Little(8), "addr", Role::Offset),
    (40, Encoding::Little(8), "size", Role::Size),
    (48, Encoding::Little(4), "offset", Role::Offset),
    (52, Encoding::Little(4), "align", Role::Other),
    (56, Encoding::Little(4), "reloff", Role::Offset),
    (60, Encoding::Little(4), "nreloc", Role::Count),
    (64, Encoding::Little(4), "flags", Role::Flags),
    (
        64,
        Encoding::Little(1),
        "flags (section type)",
        Role::SectionType,
    ),
    (68, Encoding::Little(4), "reserved1", Role::Other),
    (72, Encoding::Little(4), "reserved2", Role::Other),
    (76, Encoding::Little(4), "reserved3", Role::Other),
];

const DYSYMTAB_FIELDS: [(&str, Role); 18] = [
    ("ilocalsym", Role::SymbolIndex),
    ("nlocalsym", Role::Count),
    ("iextdefsym", Role::SymbolIndex),
    ("nextdefsym", Role::Count),
    ("iundefsym", Role::SymbolIndex),
    ("nundefsym", Role::Count),
    ("tocoff", Role::Offset),
    ("ntoc", Role::Count),
    ("modtaboff", Role::Offset),
    ("nmodtab", Role::Count),
    ("extrefsymoff", Role::Offset),
    ("nextrefsyms", Role::Count),
    ("indirectsymoff", Role::Offset),
    ("nindirectsyms", Role::Count),
    ("extreloff", Role::Offset),
    ("nextrel", Role::Count),
    ("locreloff", Role::Offset),
    ("nlocrel", Role::Count),
];

const NLIST_FIELDS: [(usize, u8, &str, Role); 5] = [
    (0, 4, "n_strx", Role::StringOffset),
    (4, 1, "n_type", Role::SymbolInfo),
    (5, 1, "n_sect", Role::SectionIndex),
    (6, 2, "n_desc", Role::Flags),
    (8, 8, "n_value", Role::Offset),
];

const COMPACT_UNWIND_FIELDS: [(usize, u8, &str, Role); 5] = [
    (0, 8, "function", Role::Offset),
    (8, 4, "length", Role::Size),
    (12, 4, "encoding", Role::Flags),
    (16, 8, "personality", Role::Offset),
    (24, 8, "lsda", Role::Offset),
];

/// One section header as read from the seed.
struct Section {
    name: String,
    segment: String,
    size: usize,
    offset: usize,
    reloff: usize,
    nreloc: usize,
    zero_fill: bool,
}

/// Adds the fields of the Mach-O object at `base` (the whole file, or an
/// archive member's data); `prefix` names the member in descriptions.
pub(crate) fn macho_object(layout: &mut Layout, file: &[u8], base: usize, prefix: &str) {
    let Some(data) = file.get(base..) else {
        return;
    };
    if !data.starts_with(&MAGIC) {
        return;
    }
    if layout.macho_cputype == 0 {
        layout.macho_cputype = read_le(data, 4, 4).unwrap_or(0) as u32;
    }
    let field = field_adder(base, prefix);
    for (offset, width, name, role) in HEADER_FIELDS {
        field(
            layout,
            offset,
            Encoding::Little(width),
            role,
            name.to_owned(),
        );
    }
    let (Some(ncmds), Some(sizeofcmds)) = (read_le(data, 16, 4), read_le(data, 20, 4)) else {
        return;
    };
    let commands_end = 32 + sizeofcmds as usize;
    layout.limits.extend([ncmds, sizeofcmds]);
    layout.boundaries.extend([base + 32, base + commands_end]);

    let commands = load_commands(layout, data, base, &field, ncmds, commands_end);
    layout.limits.push(commands.sections.len() as u64);
    section_contents(layout, data, base, &field, &commands.sections);
    if let Some(symtab) = commands.symtab {
        symbol_table(layout, data, base, &field, symtab);
    }
    linkedit_tables(layout, data, base, &field, &commands.linkedit_tables);
}

/// What the load commands say of the rest of the file.
struct LoadCommands {
    sections: Vec<Section>,
    /// `LC_SYMTAB`'s symoff, nsyms, stroff and strsize.
    symtab: Option<(usize, usize, usize, usize)>,
    /// `LC_DATA_IN_CODE` and `LC_LINKER_OPTIMIZATION_HINT`: (cmd,
    /// dataoff, datasize).
    linkedit_tables: Vec<(u64, usize, usize)>,
}

/// The fields of the `ncmds` load commands ending at `commands_end`:
/// segments and their section headers, the symbol tables' commands, the
/// `__LINKEDIT` tables'.
fn load_commands(
    layout: &mut Layout,
    data: &[u8],
    base: usize,
    field: &dyn Fn(&mut Layout, usize, Encoding, Role, String),
    ncmds: u64,
    commands_end: usize,
) -> LoadCommands {
    let mut sections: Vec<Section> = Vec::new();
    let mut symtab = None;
    let mut linkedit_tables = Vec::new();
    let mut at = 32usize;
    for command in 0..ncmds {
        let (Some(cmd), Some(cmdsize)) = (read_le(data, at, 4), read_le(data, at + 4, 4)) else {
            break;
        };
        let cmdsize = cmdsize as usize;
        if cmdsize < 8 || at + cmdsize > commands_end.min(data.len()) {
            break;
        }
        let what = format!("load command {command} ({cmd:#x}) ");
        field(
            layout,
            at,
            Encoding::Little(4),
            Role::Other,
            format!("{what}cmd"),
        );
        field(
            layout,
            at + 4,
            Encoding::Little(4),
            Role::Size,
            format!("{what}cmdsize"),
        );
        layout.boundaries.extend([base + at, base + at + cmdsize]);
        layout.limits.push(cmdsize as u64);
        match cmd {
            LC_SEGMENT_64 => {
                for (offset, encoding, name, role) in SEGMENT_FIELDS {
                    field(layout, at + offset, encoding, role, format!("{what}{name}"));
                }
                let nsects = read_le(data, at + 64, 4).unwrap_or(0) as usize;
                layout.limits.push(nsects as u64);
                for number in 0..nsects.min((cmdsize.saturating_sub(72)) / 80) {
                    let header = at + 72 + number * 80;
                    let name_at = |offset: usize| {
                        let bytes = data.get(header + offset..header + offset + 16)?;
                        let end = bytes.iter().position(|&b| b == 0).unwrap_or(16);
                        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
                    };
                    let name = name_at(0).unwrap_or_default();
                    let section_what = format!("section {} '{name}' ", sections.len() + 1);
                    for (offset, encoding, field_name, role) in SECTION_FIELDS {
                        field(
                            layout,
                            header + offset,
                            encoding,
                            role,
                            format!("{section_what}{field_name}"),
                        );
                    }
                    layout.boundaries.push(base + header);
                    let flags = read_le(data, header + 64, 4).unwrap_or(0);
                    sections.push(Section {
                        name,
                        segment: name_at(16).unwrap_or_default(),
                        size: read_le(data, header + 40, 8).unwrap_or(0) as usize,
                        offset: read_le(data, header + 48, 4).unwrap_or(0) as usize,
                        reloff: read_le(data, header + 56, 4).unwrap_or(0) as usize,
                        nreloc: read_le(data, header + 60, 4).unwrap_or(0) as usize,
                        zero_fill: matches!(flags & 0xff, 0x1 | 0xc | 0x12),
                    });
                }
            }
            LC_SYMTAB => {
                for (offset, name, role) in [
                    (8, "symoff", Role::Offset),
                    (12, "nsyms", Role::Count),
                    (16, "stroff", Role::Offset),
                    (20, "strsize", Role::Size),
                ] {
                    field(
                        layout,
                        at + offset,
                        Encoding::Little(4),
                        role,
                        format!("{what}{name}"),
                    );
                }
                symtab = Some((
                    read_le(data, at + 8, 4).unwrap_or(0) as usize,
                    read_le(data, at + 12, 4).unwrap_or(0) as usize,
                    read_le(data, at + 16, 4).unwrap_or(0) as usize,
                    read_le(data, at + 20, 4).unwrap_or(0) as usize,
                ));
            }
            LC_DYSYMTAB => {
                for (number, (name, role)) in DYSYMTAB_FIELDS.into_iter().enumerate() {
                    field(
                        layout,
                        at + 8 + number * 4,
                        Encoding::Little(4),
                        role,
                        format!("{what}{name}"),
                    );
                }
            }
            LC_DATA_IN_CODE | LC_LINKER_OPTIMIZATION_HINT => {
                for (offset, name, role) in
                    [(8, "dataoff", Role::Offset), (12, "datasize", Role::Size)]
                {
                    field(
                        layout,
                        at + offset,
                        Encoding::Little(4),
                        role,
                        format!("{what}{name}"),
                    );
                }
                linkedit_tables.push((
                    cmd,
                    read_le(data, at + 8, 4).unwrap_or(0) as usize,
                    read_le(data, at + 12, 4).unwrap_or(0) as usize,
                ));
            }
            _ => {}
        }
        at += cmdsize;
    }
    LoadCommands {
        sections,
        symtab,
        linkedit_tables,
    }
}

/// The fields of the sections' contents (`__compact_unwind` records,
/// `__llvm_addrsig`, `__eh_frame`, `__cstring`) and of their relocations.
fn section_contents(
    layout: &mut Layout,
    data: &[u8],
    base: usize,
    field: &dyn Fn(&mut Layout, usize, Encoding, Role, String),
    sections: &[Section],
) {
    for (number, section) in sections.iter().enumerate() {
        let what = format!("section {} '{}' ", number + 1, section.name);
        layout.limits.push(section.size as u64);
        if !section.zero_fill
            && let Some(bytes) =
                data.get(section.offset..section.offset.saturating_add(section.size))
        {
            let start = section.offset;
            layout
                .boundaries
                .extend([base + start, base + start + bytes.len()]);
            if section.segment == "__LD" && section.name == "__compact_unwind" {
                for record in 0..bytes.len() / 32 {
                    for (offset, width, name, role) in COMPACT_UNWIND_FIELDS {
                        field(
                            layout,
                            start + record * 32 + offset,
                            Encoding::Little(width),
                            role,
                            format!("{what}record {record} {name}"),
                        );
                    }
                }
            } else if section.name == "__llvm_addrsig" {
                uleb_fields(layout, base + start, bytes, &what, |_| Role::SymbolIndex);
            } else if section.name == "__eh_frame" {
                eh_frame(layout, base, start, bytes, &what);
            } else if section.name == "__cstring" {
                field(
                    layout,
                    start,
                    Encoding::Bytes(bytes.len() as u32),
                    Role::Text,
                    format!("{what}strings"),
                );
            }
        }
        if section.nreloc > 0
            && data
                .get(section.reloff..section.reloff.saturating_add(section.nreloc * 8))
                .is_some()
        {
            layout.boundaries.extend([
                base + section.reloff,
                base + section.reloff + section.nreloc * 8,
            ]);
            layout.limits.push(section.nreloc as u64);
            for entry in 0..section.nreloc {
                let at = section.reloff + entry * 8;
                let reloc_what = format!("{what}relocation {entry} ");
                for (offset, width, name, role) in [
                    (0, 4, "r_address", Role::Offset),
                    (4, 3, "r_symbolnum", Role::SymbolIndex),
                    (
                        7,
                        1,
                        "r_pcrel/r_length/r_extern/r_type",
                        Role::RelocationType,
                    ),
                ] {
                    field(
                        layout,
                        at + offset,
                        Encoding::Little(width),
                        role,
                        format!("{reloc_what}{name}"),
                    );
                }
            }
        }
    }
}

/// The fields of the symbol table and its strings.
fn symbol_table(
    layout: &mut Layout,
    data: &[u8],
    base: usize,
    field: &dyn Fn(&mut Layout, usize, Encoding, Role, String),
    (symoff, nsyms, stroff, strsize): (usize, usize, usize, usize),
) {
    layout.limits.extend([nsyms as u64, strsize as u64]);
    if data
        .get(symoff..symoff.saturating_add(nsyms * 16))
        .is_some()
    {
        layout
            .boundaries
            .extend([base + symoff, base + symoff + nsyms * 16]);
        for symbol in 0..nsyms {
            for (offset, width, name, role) in NLIST_FIELDS {
                field(
                    layout,
                    symoff + symbol * 16 + offset,
                    Encoding::Little(width),
                    role,
                    format!("symbol {symbol} {name}"),
                );
            }
        }
    }
    if data.get(stroff..stroff.saturating_add(strsize)).is_some() && strsize > 0 {
        layout
            .boundaries
            .extend([base + stroff, base + stroff + strsize]);
        field(
            layout,
            stroff,
            Encoding::Bytes(strsize as u32),
            Role::Text,
            "string table".to_owned(),
        );
    }
}

/// The fields of the data-in-code entries and the optimization hints.
fn linkedit_tables(
    layout: &mut Layout,
    data: &[u8],
    base: usize,
    field: &dyn Fn(&mut Layout, usize, Encoding, Role, String),
    tables: &[(u64, usize, usize)],
) {
    for &(cmd, dataoff, datasize) in tables {
        let Some(bytes) = data.get(dataoff..dataoff.saturating_add(datasize)) else {
            continue;
        };
        layout
            .boundaries
            .extend([base + dataoff, base + dataoff + datasize]);
        if cmd == LC_DATA_IN_CODE {
            for entry in 0..datasize / 8 {
                for (offset, width, name, role) in [
                    (0, 4, "offset", Role::Offset),
                    (4, 2, "length", Role::Size),
                    (6, 2, "kind", Role::Other),
                ] {
                    field(
                        layout,
                        dataoff + entry * 8 + offset,
                        Encoding::Little(width),
                        role,
                        format!("data in code {entry} {name}"),
                    );
                }
            }
        } else {
            // Each hint: kind, count, then count addresses.
            let mut next = Hint::Kind;
            uleb_fields(
                layout,
                base + dataoff,
                bytes,
                "optimization hints ",
                |value| {
                    let (role, after) = match next {
                        Hint::Kind => (Role::Other, Hint::Count),
                        Hint::Count if value == 0 => (Role::Count, Hint::Kind),
                        Hint::Count => (Role::Count, Hint::Addresses(value)),
                        Hint::Addresses(1) => (Role::Offset, Hint::Kind),
                        Hint::Addresses(left) => (Role::Offset, Hint::Addresses(left - 1)),
                    };
                    next = after;
                    role
                },
            );
        }
    }
}

/// Which number of an optimization hint comes next.
#[derive(Copy, Clone)]
enum Hint {
    Kind,
    Count,
    Addresses(u64),
}
