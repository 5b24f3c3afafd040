//! AArch64 references in linked code (see `crate::linked`): branches,
//! `adr`, literal loads, and each `adrp` with the `add`, load or store that
//! completes its address.
//!
//! An `adrp` names a page; the address is only whole with the low 12 bits
//! an `add` or a load/store adds to the register the `adrp` wrote. The
//! pairing follows registers linearly: an `adrp` sets its register's page,
//! a completing instruction reading that register pairs with it, and any
//! other write of the register (every instruction is taken to write its
//! bits 0..5, which over-approximates; a call clobbers x0-x18 and x30)
//! forgets it. An `adrp` takes the address of its first completion, as an
//! assembler's `adrp x0, sym` names `sym`. A wrong pairing can only lose a
//! fold: both halves of each pair are masked and compared as references
//! computed from the bits they replace.
//!
//! A jump table is read by a register-offset load (`ldrb`, `ldrh`, `ldr w`)
//! from a completed address, a few instructions after a `cmp w, #N` that
//! bounds its index: N + 1 entries, each a distance inside the function.

use super::lift::{PcRelative, pc_relative};
use crate::linked::{LinkedReference, LinkedUse, TableShape};
use object::elf;

/// Registers x0..x30 (31 is the stack pointer or zero register).
const REGISTERS: usize = 31;

/// How many words before a table's load its bounding `cmp` may come.
const BOUND_WINDOW: usize = 8;

pub(super) fn references(code: &[u8], address: u64, out: &mut Vec<LinkedReference>) {
    // Per register, the page its `adrp` set and that `adrp`'s index in `out`.
    let mut pages: [Option<(u64, usize, bool)>; REGISTERS] = [None; REGISTERS];
    // Per register, the `add` (its index in `out`) that left a whole address there.
    let mut addresses: [Option<usize>; REGISTERS] = [None; REGISTERS];
    // The last `cmp w, #N`: N and the word's index.
    let mut bound: Option<(u32, usize)> = None;
    for (index, chunk) in code.chunks_exact(4).enumerate() {
        let word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        let offset = index as u64 * 4;
        let pc = address.wrapping_add(offset);
        let destination = (word & 0x1f) as usize;
        if let Some(limit) = compare_immediate(word) {
            bound = Some((limit, index));
        }
        if let Some((entry_size, base)) = table_load(word)
            && let Some(add) = addresses.get(base).copied().flatten()
            && let Some((limit, at)) = bound
            && index - at <= BOUND_WINDOW
        {
            out[add].table = Some(TableShape::InFunction {
                entry_size,
                entries: limit + 1,
            });
        }
        if let Some(address) = addresses.get_mut(destination) {
            *address = None;
        }
        if let Some((class, displacement, _)) = pc_relative(word) {
            let target = pc.wrapping_add(displacement as u64);
            let (r_type, use_) = match class {
                PcRelative::Jump => (elf::R_AARCH64_JUMP26, LinkedUse::Branch),
                PcRelative::Call => (elf::R_AARCH64_CALL26, LinkedUse::Branch),
                PcRelative::Branch if word & 0x7e00_0000 == 0x3600_0000 => {
                    (elf::R_AARCH64_TSTBR14, LinkedUse::Branch)
                }
                PcRelative::Branch => (elf::R_AARCH64_CONDBR19, LinkedUse::Branch),
                PcRelative::Adr => (elf::R_AARCH64_ADR_PREL_LO21, LinkedUse::PcRelative),
                PcRelative::Literal => (elf::R_AARCH64_LD_PREL_LO19, LinkedUse::PcRelative),
                PcRelative::Adrp => {
                    let page = (pc & !0xfff).wrapping_add(displacement as u64);
                    if destination < REGISTERS {
                        pages[destination] = Some((page, out.len(), false));
                    }
                    out.push(LinkedReference {
                        offset,
                        r_type: elf::R_AARCH64_ADR_PREL_PG_HI21.0,
                        target: page,
                        bias: 0,
                        use_: LinkedUse::PcRelative,
                        table: None,
                    });
                    continue;
                }
            };
            out.push(LinkedReference {
                offset,
                r_type: r_type.0,
                target,
                bias: 0,
                use_,
                table: None,
            });
            if class == PcRelative::Call {
                forget_call_clobbered(&mut pages);
            } else if class != PcRelative::Jump && class != PcRelative::Branch {
                forget(&mut pages, destination);
            }
            continue;
        }
        if let Some((r_type, base, low)) = completion(word)
            && let Some((page, adrp, completed)) = pages.get(base).copied().flatten()
        {
            let target = page.wrapping_add(low);
            if !completed {
                out[adrp].target = target;
                pages[base] = Some((page, adrp, true));
            }
            if r_type == elf::R_AARCH64_ADD_ABS_LO12_NC && destination < REGISTERS {
                addresses[destination] = Some(out.len());
            }
            out.push(LinkedReference {
                offset,
                r_type: r_type.0,
                target,
                bias: 0,
                use_: LinkedUse::PcRelative,
                table: None,
            });
        }
        if is_store(word) {
            continue;
        }
        if word & 0xfe00_0000 == 0xd600_0000 && (word >> 21) & 0xf == 1 {
            // `blr`
            forget_call_clobbered(&mut pages);
        } else {
            forget(&mut pages, destination);
        }
    }
}

fn forget(pages: &mut [Option<(u64, usize, bool)>; REGISTERS], register: usize) {
    if let Some(page) = pages.get_mut(register) {
        *page = None;
    }
}

/// x0..x18 and the link register x30 do not survive a call.
fn forget_call_clobbered(pages: &mut [Option<(u64, usize, bool)>; REGISTERS]) {
    for register in (0..=18).chain([30]) {
        pages[register] = None;
    }
}

/// An instruction that adds the low 12 bits of an address to the page in
/// a register: `add` (immediate, 64-bit, unshifted), or a load or store
/// with an unsigned offset, which scales its immediate by the access size.
/// Gives the relocation an assembler writes there, the base register and
/// the low bits.
fn completion(word: u32) -> Option<(elf::RelocationType, usize, u64)> {
    let base = ((word >> 5) & 0x1f) as usize;
    let imm12 = u64::from((word >> 10) & 0xfff);
    if word & 0xffc0_0000 == 0x9100_0000 {
        return Some((elf::R_AARCH64_ADD_ABS_LO12_NC, base, imm12));
    }
    if word & 0x3b00_0000 == 0x3900_0000 {
        let size = word >> 30;
        let vector = word & (1 << 26) != 0;
        let opc = (word >> 22) & 3;
        // A vector access with opc bit 1 set and size 0 is 128 bits.
        let scale = if vector && size == 0 && opc & 2 != 0 {
            4
        } else {
            size
        };
        let r_type = match scale {
            0 => elf::R_AARCH64_LDST8_ABS_LO12_NC,
            1 => elf::R_AARCH64_LDST16_ABS_LO12_NC,
            2 => elf::R_AARCH64_LDST32_ABS_LO12_NC,
            3 => elf::R_AARCH64_LDST64_ABS_LO12_NC,
            _ => elf::R_AARCH64_LDST128_ABS_LO12_NC,
        };
        return Some((r_type, base, imm12 << scale));
    }
    None
}

/// `cmp w, #imm` (`subs wzr, w, #imm`, unshifted): the bound a table's
/// dispatch checks.
fn compare_immediate(word: u32) -> Option<u32> {
    (word & 0xffc0_001f == 0x7100_001f).then_some((word >> 10) & 0xfff)
}

/// A load with a register offset (`ldrb`, `ldrh`, `ldr w`/`x`: size and
/// base register), as a table dispatch reads its entry.
fn table_load(word: u32) -> Option<(u8, usize)> {
    let loads = word & 0x3fe0_0c00 == 0x3860_0800;
    loads.then(|| (1u8 << (word >> 30), ((word >> 5) & 0x1f) as usize))
}

/// A store (unsigned offset, or any load/store-pair or register form is
/// not one): its bits 0..5 name the register stored, which it does not write.
fn is_store(word: u32) -> bool {
    word & 0x3b00_0000 == 0x3900_0000 && (word >> 22) & 3 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(words: &[u32], address: u64) -> Vec<LinkedReference> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut out = Vec::new();
        references(&bytes, address, &mut out);
        out
    }

    #[test]
    fn an_adrp_takes_the_address_its_completion_gives() {
        // adrp x0, 0x12000 (from 0x10000: +2 pages); add x0, x0, #0x34;
        // ldr x1, [x0, #8]; bl 0x10100
        let adrp = 0x9000_0000 | (2 << 29); // immlo 2: two pages on
        let found = refs(&[adrp, 0x9100_d000, 0xf940_0401, 0x9400_003d], 0x10000);
        assert_eq!(found[0].r_type, elf::R_AARCH64_ADR_PREL_PG_HI21.0);
        assert_eq!(found[0].target, 0x12034);
        assert_eq!(found[1].r_type, elf::R_AARCH64_ADD_ABS_LO12_NC.0);
        assert_eq!(found[1].target, 0x12034);
        // The add wrote x0 (the full address): the load is no completion.
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[2].r_type, elf::R_AARCH64_CALL26.0);
        assert_eq!(found[2].target, 0x10100);
        assert_eq!(found[2].use_, LinkedUse::Branch);
    }

    #[test]
    fn a_load_scales_its_low_bits_by_the_access_size() {
        // adrp x8, +1 page; ldr x0, [x8, #16] (imm12 = 2, 8-byte access)
        let adrp = 0x9000_0000 | (1 << 29) | 8;
        let found = refs(&[adrp, 0xf940_0900], 0x4000);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[1].r_type, elf::R_AARCH64_LDST64_ABS_LO12_NC.0);
        assert_eq!(found[0].target, 0x5010);
        assert_eq!(found[1].target, 0x5010);
    }

    #[test]
    fn a_call_forgets_the_pages_of_clobbered_registers() {
        // adrp x1, +1 page; bl +8; add x1, x1, #4
        let adrp = 0x9000_0000 | (1 << 29) | 1;
        let found = refs(&[adrp, 0x9400_0002, 0x9100_1021], 0x4000);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].target, 0x5000);
    }

    #[test]
    fn a_bounded_register_offset_load_reads_a_table() {
        // cmp w0, #15; b.ls +8; adrp x3, +1 page; add x3, x3, #0xb54;
        // ldrb w3, [x3, w0, uxtw]
        let adrp = 0x9000_0000 | (1 << 29) | 3;
        let words = [0x7100_3c1f, 0x5400_0049, adrp, 0x912d_5063, 0x3860_4863];
        let found = refs(&words, 0x4000);
        let add = found
            .iter()
            .find(|r| r.r_type == elf::R_AARCH64_ADD_ABS_LO12_NC.0)
            .expect("the add's reference");
        assert_eq!(add.target, 0x5b54);
        assert_eq!(
            add.table,
            Some(TableShape::InFunction {
                entry_size: 1,
                entries: 16
            })
        );
        // Without the bound there is no telling its size: no table.
        let unbounded = refs(&words[2..], 0x4008);
        assert!(unbounded.iter().all(|r| r.table.is_none()), "{unbounded:?}");
    }
}
