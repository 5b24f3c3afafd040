//! Symbol values after compaction: what `.symtab` and `.dynsym` say in
//! OUT, and what the kept relocations count from.

use crate::elf::{Elf, SymbolInfo};
use crate::layout::{Fate, Layout};
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
    Some((layout.map(symbol.value), size))
}
