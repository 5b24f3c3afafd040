//! What the dynamic loader reads: `RELATIVE` and `IRELATIVE` addends (and
//! the bytes at their places), RELR places, GOT entries (a non-PIE
//! executable's hold addresses no relocation names), and `.dynamic`'s
//! pointers.

use crate::layout::Layout;
use crate::patch::Patches;
use crate::pin::PinKind;
use anyhow::bail;
use icf_arch::{Architecture, DynamicReloc};
use icf_object::linked_elf::{Elf, get_u64};
use object::elf as E;

/// `SHT_RELR`.
const SHT_RELR: u32 = 19;
/// `.dynamic` tags whose value is an address.
const POINTER_TAGS: &[u64] = &[
    3,
    4,
    5,
    6,
    7,
    12,
    13,
    17,
    23,
    25,
    26,
    32,
    36,
    0x6fff_fef5,
    0x6fff_fff0,
    0x6fff_fffc,
    0x6fff_fffe,
];

pub(crate) fn patch(
    elf: &Elf<'_>,
    layout: &Layout,
    arch: &dyn Architecture,
    patches: &mut Patches,
) -> anyhow::Result<()> {
    // What the place of an address relocation holds: its address (GNU ld
    // writes it, lld leaves zero in RELA).
    let repoint_content = |place: u64, old: u64, patches: &mut Patches| -> anyhow::Result<()> {
        if elf.read_u64(place) == Some(old) && layout.moves(old) {
            patches.put(layout.map(place), layout.map(old).to_le_bytes());
        }
        Ok(())
    };
    for (index, section) in elf.sections.iter().enumerate() {
        if !section.is_alloc() {
            continue;
        }
        if section.sh_type == E::SHT_RELA.0 {
            for (number, rela) in elf.relas(index)?.iter().enumerate() {
                if layout.moves(rela.offset) {
                    // A text relocation: the code it patches keeps its place.
                    patches
                        .pins
                        .keep(layout, &[rela.offset], PinKind::TextRelocation, || {
                            anyhow::anyhow!(
                                "{}: dynamic relocation {number} patches code that moves ({:#x})",
                                section.name,
                                rela.offset
                            )
                        })?;
                    continue;
                }
                if let Some(DynamicReloc::Relative | DynamicReloc::IRelative) =
                    arch.dynamic_reloc(rela.r_type)
                {
                    let old = rela.addend as u64;
                    if layout.moves(old) {
                        let field = section.addr + number as u64 * 24 + 16;
                        patches.put(layout.map(field), layout.map(old).to_le_bytes());
                    }
                    repoint_content(rela.offset, old, patches)?;
                }
            }
        } else if section.sh_type == SHT_RELR {
            let bytes = elf.bytes(index);
            let mut next = 0u64;
            for at in (0..bytes.len()).step_by(8) {
                let Some(entry) = get_u64(bytes, at) else {
                    bail!("{}: truncated", section.name);
                };
                let places: Vec<u64> = if entry & 1 == 0 {
                    next = entry + 8;
                    vec![entry]
                } else {
                    let base = next;
                    next += 63 * 8;
                    (1..64)
                        .filter(|bit| entry >> bit & 1 == 1)
                        .map(|bit| base + (bit - 1) * 8)
                        .collect()
                };
                for place in places {
                    if layout.moves(place) {
                        patches
                            .pins
                            .keep(layout, &[place], PinKind::TextRelocation, || {
                                anyhow::anyhow!(
                                    "{}: a RELR place in code that moves ({place:#x})",
                                    section.name
                                )
                            })?;
                        continue;
                    }
                    if let Some(old) = elf.read_u64(place) {
                        repoint_content(place, old, patches)?;
                    }
                }
            }
        } else if section.name == ".got" || section.name == ".got.plt" {
            let bytes = elf.bytes(index);
            for at in (0..bytes.len()).step_by(8) {
                if let Some(old) = get_u64(bytes, at) {
                    repoint_content(section.addr + at as u64, old, patches)?;
                }
            }
        } else if section.sh_type == E::SHT_DYNAMIC.0 {
            let bytes = elf.bytes(index);
            for at in (0..bytes.len()).step_by(16) {
                let (Some(tag), Some(value)) = (get_u64(bytes, at), get_u64(bytes, at + 8)) else {
                    break;
                };
                if POINTER_TAGS.contains(&tag) && layout.moves(value) {
                    let field = section.addr + at as u64 + 8;
                    patches.put(layout.map(field), layout.map(value).to_le_bytes());
                }
            }
        }
    }
    Ok(())
}
