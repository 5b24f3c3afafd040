//! The relocations a `-q` link kept: each one accounted for. In code, a
//! PC-relative one must be a field decoding found (and patched); an
//! absolute one is written here. In data, absolute addresses and jump
//! table entries are written here. A field icf cannot account for, whose
//! place or target moves, is an error: OUT would be wrong.

use crate::elf::{Elf, SymbolInfo};
use crate::layout::Layout;
use crate::patch::Patches;
use crate::{Decoded, Shape};
use anyhow::{Context, bail};
use icf_arch::{Architecture, KeptReloc};
use object::elf as E;

/// What a kept relocation's symbol is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Symbol {
    /// Defined at an address (a section symbol: its section's address).
    At(u64, bool),
    /// Thread-local, undefined, or otherwise not an address in the image.
    Elsewhere,
}

fn symbol(elf: &Elf<'_>, symbols: &[SymbolInfo], index: u32) -> Symbol {
    let Some(s) = symbols.get(index as usize) else {
        return Symbol::Elsewhere;
    };
    if index == 0 || s.shndx == E::SHN_UNDEF.0 || s.kind == E::STT_TLS.0 {
        return Symbol::Elsewhere;
    }
    if s.kind == E::STT_SECTION.0 {
        return elf
            .sections
            .get(usize::from(s.shndx))
            .map_or(Symbol::Elsewhere, |section| Symbol::At(section.addr, true));
    }
    Symbol::At(s.value, false)
}

/// Sections a linker writes itself, which code reaches through a symbol.
const LINKER_MADE: &[&str] = &[".got", ".got.plt", ".plt", ".plt.sec", ".plt.got", ".iplt"];

pub(crate) fn patch(
    elf: &Elf<'_>,
    shape: &Shape,
    symbols: &[SymbolInfo],
    layout: &Layout,
    arch: &dyn Architecture,
    decoded: &Decoded,
    patches: &mut Patches,
) -> anyhow::Result<()> {
    // What the linker made: a reference the relocation names through a
    // symbol may reach it through a GOT entry or a PLT entry instead.
    let made: Vec<(u64, u64)> = elf
        .sections
        .iter()
        .filter(|s| LINKER_MADE.contains(&s.name.as_str()))
        .map(|s| (s.addr, s.addr + s.size))
        .collect();
    let linker_made = |address: u64| made.iter().any(|&(start, end)| (start..end).contains(&address));
    for &(relocations, target) in &shape.kept {
        let section = &elf.sections[target];
        if section.name == ".eh_frame" {
            continue;
        }
        let code = section.is_executable();
        for rela in elf.relas(relocations)? {
            let place = rela.offset;
            if !section.contains(place) {
                bail!(
                    "{}: relocation at {place:#x} outside {}",
                    elf.sections[relocations].name,
                    section.name
                );
            }
            if !layout.is_carried(place) {
                continue;
            }
            let at = || format!("{}+{:#x}", section.name, place - section.addr);
            let name = || object::elf::RelocationType(rela.r_type);
            let (address, section_symbol) = match symbol(elf, symbols, rela.sym) {
                Symbol::At(address, section_symbol) => (address, section_symbol),
                Symbol::Elsewhere => continue,
            };
            let target_address = address.wrapping_add(rela.addend as u64);
            let moves = layout.moves(place) || layout.moves(target_address);
            match arch.kept_reloc(rela.r_type) {
                KeptReloc::Address { size } => {
                    if !moves {
                        continue;
                    }
                    let mut field = elf
                        .read(place, usize::from(size))
                        .with_context(|| format!("{}: field past the section", at()))?
                        .to_vec();
                    arch.write_reloc(rela.r_type, &mut field, layout.map(place), layout.map(target_address))
                        .map_err(|e| anyhow::anyhow!("{}: {e}", at()))?;
                    patches.put(layout.map(place), field)?;
                }
                KeptReloc::PcRelative | KeptReloc::Low12 if code => {
                    match decoded.fields.get(&place) {
                        Some(&(named, bias))
                            if named.wrapping_add(bias as u64) == target_address
                                || linker_made(named) => {}
                        Some(&(named, _)) if !layout.moves(named) && !layout.moves(target_address) => {}
                        Some(&(named, _)) => bail!(
                            "{}: the {:?} relocation names {target_address:#x}, the decoded instruction {named:#x}",
                            at(),
                            name()
                        ),
                        None if !moves => {}
                        None => bail!(
                            "{}: the {:?} relocation's field was not found by decoding the code",
                            at(),
                            name()
                        ),
                    }
                }
                KeptReloc::PcRelative => {
                    if let Some(entry) = table_entry(elf, decoded, place)? {
                        let (base, case) = entry;
                        if layout.moves(base) || layout.moves(case) {
                            let mut field = elf.read(place, 4).context("entry")?.to_vec();
                            arch.write_reloc(rela.r_type, &mut field, layout.map(base), layout.map(case))
                                .map_err(|e| anyhow::anyhow!("{}: {e}", at()))?;
                            patches.put(layout.map(place), field)?;
                        }
                        continue;
                    }
                    if !moves {
                        continue;
                    }
                    if section_symbol && layout.moves(target_address) && !layout.is_outside_text(target_address) {
                        bail!(
                            "{}: a PC-relative {:?} field in data names code through a section symbol, \
                             and no jump table read by the code holds it: icf cannot tell where it counts from",
                            at(),
                            name()
                        );
                    }
                    let size = field_size(arch, rela.r_type);
                    let mut field = elf.read(place, size).context("field")?.to_vec();
                    arch.write_reloc(rela.r_type, &mut field, layout.map(place), layout.map(target_address))
                        .map_err(|e| anyhow::anyhow!("{}: {e}", at()))?;
                    patches.put(layout.map(place), field)?;
                }
                KeptReloc::RelaxableGotLoad => {
                    if decoded.fields.contains_key(&place) || !moves {
                        continue;
                    }
                    // Relaxed to an immediate: the field holds the symbol's address.
                    let field = elf.read(place, 4).context("field")?;
                    let value = u32::from_le_bytes([field[0], field[1], field[2], field[3]]);
                    if u64::from(value) != address || section_symbol {
                        bail!("{}: a {:?} field neither decoded nor relaxed to its symbol's address", at(), name());
                    }
                    let absolute = arch.absolute_data(4).context("no 4-byte absolute type")?;
                    let mut field = field.to_vec();
                    arch.write_reloc(absolute, &mut field, layout.map(place), layout.map(address))
                        .map_err(|e| anyhow::anyhow!("{}: {e}", at()))?;
                    patches.put(layout.map(place), field)?;
                }
                KeptReloc::Low12 | KeptReloc::Other => {
                    if layout.moves(target_address) {
                        bail!("{}: a {:?} relocation names code that moves; icf cannot write it again", at(), name());
                    }
                }
            }
        }
    }
    Ok(())
}

fn field_size(arch: &dyn Architecture, r_type: u32) -> usize {
    arch.elf_reloc(r_type).map_or(4, |info| usize::from(info.size))
}

/// When `place` is an entry of a jump table the code reads, the table's
/// base and the case the entry leads to.
fn table_entry(elf: &Elf<'_>, decoded: &Decoded, place: u64) -> anyhow::Result<Option<(u64, u64)>> {
    let after = decoded.tables.partition_point(|t| t.base <= place);
    let Some(table) = after.checked_sub(1).map(|i| decoded.tables[i]) else {
        return Ok(None);
    };
    if table.entries.is_some_and(|n| place >= table.base + 4 * u64::from(n)) {
        return Ok(None);
    }
    let Some(bytes) = elf.read(place, 4) else {
        return Ok(None);
    };
    let value = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let case = table.base.wrapping_add(value as i64 as u64);
    let in_code = elf
        .section_at(case)
        .is_some_and(|index| elf.sections[index].is_executable());
    Ok(in_code.then_some((table.base, case)))
}
