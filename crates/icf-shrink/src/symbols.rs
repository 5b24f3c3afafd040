//! Symbol values after compaction: what `.symtab` and `.dynsym` say in
//! OUT, and what the kept relocations count from.

use crate::layout::{Fate, Layout};
use icf_object::linked_elf::{Elf, SymbolInfo};
use object::elf as E;

/// A symbol's new value and size, `None` when it does not change.
pub(crate) fn new_symbol(
    elf: &Elf<'_>,
    layout: &Layout,
    symbol: &SymbolInfo,
) -> Option<(u64, u64)> {
    let index = usize::from(symbol.shndx);
    // An undefined function's value in a non-PIE executable is its PLT
    // entry, the address every module uses for it: it moves with the PLT.
    if symbol.shndx == E::SHN_UNDEF.0 {
        return (symbol.value != 0 && symbol.kind != E::STT_TLS.0 && layout.moves(symbol.value))
            .then(|| (layout.map(symbol.value), symbol.size));
    }
    if symbol.shndx >= E::SHN_LORESERVE {
        return None;
    }
    let section = elf.sections.get(index)?;
    if !section.is_alloc() || symbol.kind == E::STT_TLS.0 {
        return None;
    }
    if symbol.kind == E::STT_SECTION.0 {
        return Some((layout.new_section_address(section.addr), symbol.size));
    }
    if !section.is_executable()
        && let Some(value) = layout.data_symbol(symbol.value)
    {
        return Some((value, symbol.size));
    }
    let mut size = symbol.size;
    let starts_piece = layout.piece_start(symbol.value) == Some(symbol.value);
    match layout.fate_at(symbol.value) {
        Some(Fate::Thunk(_)) if starts_piece => {
            size = layout.thunk_size_at(symbol.value).unwrap_or(size);
        }
        // An alias names its kept copy, and no more of it: a removed
        // function can be longer (a `nop` after its last jump, where the
        // linker relaxed a GOT jump) and must not reach past the copy.
        Some(Fate::Alias(kept)) if starts_piece => {
            let copy = &layout.pieces[kept];
            size = size.min(copy.end - copy.start);
        }
        _ => {}
    }
    // One marking its section's end (`__stop_`, `_etext`) follows the
    // section's content, whatever starts there.
    if symbol.value == section.addr + section.size && size == 0 {
        return Some((layout.map_end_of(symbol.value), size));
    }
    Some((layout.map(symbol.value), size))
}

/// `.symtab` without the symbols a link writes only for the relocations
/// `--emit-relocs` keeps, for an OUT that drops those relocations (`icf
/// link` after an LTO link): what the same command links without them.
pub(crate) struct LinkOnlyDropped {
    pub symtab: Vec<u8>,
    /// The index of the first global symbol (`.symtab`'s `sh_info`).
    pub first_global: u32,
    /// `.strtab` (its index and bytes) holding only the names kept, where
    /// nothing else reads it.
    pub strtab: Option<(usize, Vec<u8>)>,
    pub dropped: usize,
}

/// Which local symbols a link writes only for kept relocations:
/// - lld, GNU ld and gold write no section symbols and no `.L` labels
///   (the assembler's temporary names, which reach the link only where a
///   relocation in a mergeable section names them) unless they keep
///   relocations: with `-q` they write a section symbol per output section
///   and every `.L` label a relocation names;
/// - mold writes both in every link, and with `-q` one section symbol more
///   per relocation section.
///
/// `None` where the table cannot be pruned safely: no string table, a
/// `.symtab_shndx` beside it, or a local after the first global.
pub(crate) fn drop_link_only(
    elf: &Elf<'_>,
    symtab: usize,
    bytes: &[u8],
) -> Option<LinkOnlyDropped> {
    const SIZE: usize = 24;
    let section = elf.sections.get(symtab)?;
    let strtab = section.link as usize;
    let names = elf.bytes(strtab);
    if elf.sections.get(strtab)?.sh_type != E::SHT_STRTAB.0
        || elf
            .sections
            .iter()
            .any(|s| s.sh_type == E::SHT_SYMTAB_SHNDX.0)
        || bytes.len() % SIZE != 0
    {
        return None;
    }
    let mold = elf
        .section_named(".comment")
        .is_some_and(|i| elf.bytes(i).windows(5).any(|w| w == b"mold "));
    let name_at = |offset: usize| -> Option<&[u8]> {
        let rest = names.get(offset..)?;
        Some(&rest[..rest.iter().position(|&b| b == 0)?])
    };
    let first_global = section.info as usize;
    let mut kept: Vec<&[u8]> = Vec::new();
    let mut new_first_global = 0;
    for (index, entry) in bytes.chunks_exact(SIZE).enumerate() {
        let name = u32::from_le_bytes(entry[0..4].try_into().ok()?) as usize;
        let (binding, kind) = (entry[4] >> 4, entry[4] & 0xf);
        let shndx = u16::from_le_bytes(entry[6..8].try_into().ok()?);
        let local = binding == E::STB_LOCAL.0;
        if local != (index < first_global) {
            return None;
        }
        let link_only = index > 0
            && local
            && if mold {
                kind == E::STT_SECTION.0
                    && elf
                        .sections
                        .get(usize::from(shndx))
                        .is_some_and(|s| s.sh_type == E::SHT_RELA.0 || s.sh_type == E::SHT_REL.0)
            } else {
                kind == E::STT_SECTION.0 || name_at(name)?.starts_with(b".L")
            };
        if link_only {
            continue;
        }
        if index == first_global {
            new_first_global = kept.len();
        }
        kept.push(entry);
    }
    if first_global >= bytes.len() / SIZE {
        new_first_global = kept.len();
    }
    let dropped = bytes.len() / SIZE - kept.len();
    // A string table of the kept names only, where no other section (the
    // section names) reads it.
    let shared = elf
        .sections
        .iter()
        .enumerate()
        .any(|(i, s)| i != symtab && s.link as usize == strtab)
        || usize::from(u16::from_le_bytes(elf.data.get(62..64)?.try_into().ok()?)) == strtab;
    let mut strings = vec![0u8];
    let mut offsets: std::collections::HashMap<&[u8], u32> = std::collections::HashMap::new();
    let mut symtab_bytes = Vec::with_capacity(kept.len() * SIZE);
    for entry in kept {
        let mut entry = entry.to_vec();
        if !shared {
            let name = name_at(u32::from_le_bytes(entry[0..4].try_into().ok()?) as usize)?;
            let offset = if name.is_empty() {
                0
            } else {
                *offsets.entry(name).or_insert_with(|| {
                    let at = strings.len() as u32;
                    strings.extend_from_slice(name);
                    strings.push(0);
                    at
                })
            };
            entry[0..4].copy_from_slice(&offset.to_le_bytes());
        }
        symtab_bytes.extend_from_slice(&entry);
    }
    Some(LinkOnlyDropped {
        symtab: symtab_bytes,
        first_global: u32::try_from(new_first_global).ok()?,
        strtab: (!shared).then_some((strtab, strings)),
        dropped,
    })
}
