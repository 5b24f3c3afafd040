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
//! from a completed address, and a `br` follows within a few words (a load
//! without one reads a lookup table); its entries are distances inside the
//! function. Its size comes from a range check on the very register that
//! indexes it: `cmp w, #N` then `b.hi`/`b.hs` (in range on the
//! fall-through) or `b.ls`/`b.lo` (on the taken edge), carried through
//! `mov` copies and forgotten where the register is written, at calls, and
//! where paths join unless every edge into the join carries it; otherwise
//! the size is unknown.

use super::lift::{PcRelative, pc_relative};
use crate::linked::{LinkedReference, LinkedUse, TableShape};
use object::elf;
use std::collections::HashMap;

/// Registers x0..x30 (31 is the stack pointer or zero register).
const REGISTERS: usize = 31;

/// How many words after a table's load its `br` may come.
const DISPATCH_WINDOW: usize = 4;

pub(super) fn references(code: &[u8], address: u64, out: &mut Vec<LinkedReference>) {
    // Per register, the page its `adrp` set and that `adrp`'s index in `out`.
    let mut pages: [Option<(u64, usize, bool)>; REGISTERS] = [None; REGISTERS];
    // Per register, the `add` (its index in `out`) that left a whole address there.
    let mut addresses: [Option<usize>; REGISTERS] = [None; REGISTERS];
    // Per register, how many entries a range check allows it to index
    // (`cmp w0, #15` then `b.hi`: 16 on the fall-through).
    let mut bounds: [Option<u32>; REGISTERS] = [None; REGISTERS];
    // What every forward branch seen so far to a target carries there:
    // the bounds all of them agree on, by target.
    let mut carried: HashMap<u64, [Option<u32>; REGISTERS]> = HashMap::new();
    // Branch targets in address order, walked once as the words arrive.
    let targets = branch_targets(code, address);
    let mut next_target = 0;
    let mut previous_stops = false;
    // The `cmp w, #N` just decoded: register and N.
    let mut compared: Option<(usize, u32)> = None;
    // A table load waiting for its `br`: the `add`'s index in `out`, entry
    // size, entries, the load's word index.
    let mut dispatch: Option<(usize, u8, Option<u32>, usize)> = None;
    for (index, chunk) in code.chunks_exact(4).enumerate() {
        let word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        let offset = index as u64 * 4;
        let pc = address.wrapping_add(offset);
        let destination = (word & 0x1f) as usize;
        // Where paths join, a bound holds if every edge into the join
        // carries it: all of them forward (a backward one is not seen yet),
        // the fall-through counting unless the word before stops.
        while targets
            .get(next_target)
            .is_some_and(|&(target, _)| target < pc)
        {
            next_target += 1;
        }
        if let Some(&(_, backward)) = targets
            .get(next_target)
            .filter(|&&(target, _)| target == pc)
        {
            let branched = carried.remove(&pc);
            let fell = (!previous_stops).then_some(bounds);
            bounds = match (branched, fell) {
                _ if backward => [None; REGISTERS],
                (Some(branched), Some(fell)) => agreed(branched, &fell),
                (Some(edge), None) | (None, Some(edge)) => edge,
                (None, None) => [None; REGISTERS],
            };
        }
        previous_stops = stops(word);
        let range_check = compared.take();
        if let Some((entry_size, base, index_register)) = table_load(word)
            && let Some(add) = addresses.get(base).copied().flatten()
        {
            let entries = bounds.get(index_register).copied().flatten();
            dispatch = Some((add, entry_size, entries, index));
        }
        // A table's load is a dispatch only if an indirect branch (`br`)
        // follows within a few words; otherwise it reads a lookup table,
        // data like any other.
        if let Some((add, entry_size, entries, at)) = dispatch {
            if word & 0xffff_fc1f == 0xd61f_0000 {
                out[add].table = Some(TableShape::InFunction {
                    entry_size,
                    entries,
                });
                dispatch = None;
            } else if index - at >= DISPATCH_WINDOW {
                dispatch = None;
            }
        }
        let copied_bound = register_copy(word).and_then(|from| bounds.get(from).copied().flatten());
        if let Some(address) = addresses.get_mut(destination) {
            *address = None;
        }
        if let Some(bound) = bounds.get_mut(destination) {
            *bound = copied_bound;
        }
        compared = compare_immediate(word);
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
                        instruction: offset as u32,
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
                instruction: offset as u32,
                target,
                bias: 0,
                use_,
                table: None,
            });
            if matches!(class, PcRelative::Branch | PcRelative::Jump) {
                // `b.hi`/`b.hs` after `cmp r, #N`: r is in range on the
                // fall-through; `b.ls`/`b.lo`: on the taken edge.
                let (taken, falls) = match (range_check, word & 0xff00_0010, word & 0xf) {
                    (Some((r, n)), 0x5400_0000, condition) => {
                        let with = |entries: u32| {
                            let mut bounded = bounds;
                            bounded[r] = Some(entries);
                            bounded
                        };
                        match condition {
                            0x8 => (bounds, with(n + 1)),
                            0x2 => (bounds, with(n)),
                            0x9 => (with(n + 1), bounds),
                            0x3 => (with(n), bounds),
                            _ => (bounds, bounds),
                        }
                    }
                    _ => (bounds, bounds),
                };
                if target > pc {
                    carried
                        .entry(target)
                        .and_modify(|carried| *carried = agreed(*carried, &taken))
                        .or_insert(taken);
                }
                bounds = falls;
            }
            if class == PcRelative::Call {
                forget_call_clobbered(&mut pages);
                forget_call_clobbered(&mut bounds);
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
                instruction: offset as u32,
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
            forget_call_clobbered(&mut bounds);
        } else {
            forget(&mut pages, destination);
        }
    }
}

/// The bounds two edges into a join agree on.
fn agreed(
    mut one: [Option<u32>; REGISTERS],
    other: &[Option<u32>; REGISTERS],
) -> [Option<u32>; REGISTERS] {
    for (bound, theirs) in one.iter_mut().zip(other) {
        if bound != theirs {
            *bound = None;
        }
    }
    one
}

fn forget(pages: &mut [Option<(u64, usize, bool)>; REGISTERS], register: usize) {
    if let Some(page) = pages.get_mut(register) {
        *page = None;
    }
}

/// x0..x18 and the link register x30 do not survive a call.
fn forget_call_clobbered<T>(known: &mut [Option<T>; REGISTERS]) {
    for register in (0..=18).chain([30]) {
        known[register] = None;
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

/// The targets of the branches in `code` (at `address`) that land in it,
/// and whether a backward branch reaches each, in address order.
fn branch_targets(code: &[u8], address: u64) -> Vec<(u64, bool)> {
    let end = address.wrapping_add(code.len() as u64);
    let mut targets: Vec<(u64, bool)> = Vec::new();
    for (index, chunk) in code.chunks_exact(4).enumerate() {
        let word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        let pc = address.wrapping_add(index as u64 * 4);
        let Some((class, displacement, _)) = pc_relative(word) else {
            continue;
        };
        if !matches!(class, PcRelative::Branch | PcRelative::Jump) {
            continue;
        }
        let target = pc.wrapping_add(displacement as u64);
        if !(address..end).contains(&target) {
            continue;
        }
        targets.push((target, target <= pc));
    }
    targets.sort_unstable();
    // One entry per target: backward if any branch to it is.
    targets.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        kept.1 |= same && later.1;
        same
    });
    targets
}

/// `cmp w, #imm` or `cmp x, #imm` (`subs zr, r, #imm`, unshifted): the
/// register compared and the bound a table's dispatch checks.
fn compare_immediate(word: u32) -> Option<(usize, u32)> {
    let register = ((word >> 5) & 0x1f) as usize;
    (word & 0x7fc0_001f == 0x7100_001f && register < REGISTERS)
        .then_some((register, (word >> 10) & 0xfff))
}

/// Whether control never goes on to the next word: `b`, `br`, `ret`.
fn stops(word: u32) -> bool {
    word & 0xfc00_0000 == 0x1400_0000
        || (word & 0xfe00_0000 == 0xd600_0000 && (word >> 21) & 0xf != 1)
}

/// `mov wd, ws` / `mov xd, xs` (`orr d, zr, s`): the register copied.
fn register_copy(word: u32) -> Option<usize> {
    (word & 0x7fe0_ffe0 == 0x2a00_03e0).then_some(((word >> 16) & 0x1f) as usize)
}

/// A load with a register offset (`ldrb`, `ldrh`, `ldr w`/`x`), as a
/// table dispatch reads its entry: entry size, base register, index
/// register.
fn table_load(word: u32) -> Option<(u8, usize, usize)> {
    let loads = word & 0x3fe0_0c00 == 0x3860_0800;
    loads.then(|| {
        (
            1u8 << (word >> 30),
            ((word >> 5) & 0x1f) as usize,
            ((word >> 16) & 0x1f) as usize,
        )
    })
}

/// A store (unsigned offset, or any load/store-pair or register form is
/// not one): its bits 0..5 name the register stored, which it does not write.
fn is_store(word: u32) -> bool {
    word & 0x3b00_0000 == 0x3900_0000 && (word >> 22) & 3 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table the `add` completing an `adrp` was found to address.
    fn table_of_add(found: &[LinkedReference]) -> Option<TableShape> {
        found
            .iter()
            .find(|r| r.r_type == elf::R_AARCH64_ADD_ABS_LO12_NC.0)
            .expect("the add's reference")
            .table
    }

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
        // cmp w0, #15; b.ls L; ret; L: adrp x3, +1 page; add x3, x3, #0xb54;
        // ldrb w3, [x3, w0, uxtw]; br x3
        let adrp = 0x9000_0000 | (1 << 29) | 3;
        let words = [
            0x7100_3c1f,
            0x5400_0049, // b.ls +8
            0xd65f_03c0, // ret
            adrp,
            0x912d_5063,
            0x3860_4863,
            0xd61f_0060, // br x3
        ];
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
                entries: Some(16)
            })
        );
        // Without the bound there is no telling its size.
        let unbounded = refs(&words[3..], 0x400c);
        assert_eq!(
            table_of_add(&unbounded),
            Some(TableShape::InFunction {
                entry_size: 1,
                entries: None
            })
        );
    }

    #[test]
    fn a_bound_holds_at_a_join_only_where_every_edge_into_it_carries_it() {
        // cmp w0, #15; b.hi far; cbz w1, L; (nop | mov w0, w2);
        // L: adrp x3, +1 page; add x3, x3, #0xb54; ldrb w3, [x3, w0, uxtw]; br x3
        let adrp = 0x9000_0000 | (1 << 29) | 3;
        let dispatch = |between: u32| {
            let words = [
                0x7100_3c1f,
                0x5400_2008, // b.hi +0x400, out of the code
                0x3400_0041, // cbz w1, +8 (to L)
                between,
                adrp,
                0x912d_5063,
                0x3860_4863,
                0xd61f_0060,
            ];
            table_of_add(&refs(&words, 0x4000))
        };
        // The branch and the fall-through both carry w0 < 16.
        assert_eq!(
            dispatch(0xd503_201f),
            Some(TableShape::InFunction {
                entry_size: 1,
                entries: Some(16)
            })
        );
        // The fall-through overwrote w0: the join knows nothing.
        assert_eq!(
            dispatch(0x2a02_03e0),
            Some(TableShape::InFunction {
                entry_size: 1,
                entries: None
            })
        );
        // The branch left before the check: mov w0, w2; cbz w1, L;
        // cmp w0, #15; b.hi far; L: ... knows nothing either.
        let words = [
            0x2a02_03e0,
            0x3400_0061, // cbz w1, +12 (to L)
            0x7100_3c1f,
            0x5400_2008,
            adrp,
            0x912d_5063,
            0x3860_4863,
            0xd61f_0060,
        ];
        assert_eq!(
            table_of_add(&refs(&words, 0x4000)),
            Some(TableShape::InFunction {
                entry_size: 1,
                entries: None
            })
        );
    }

    #[test]
    fn a_compare_of_another_register_bounds_no_table() {
        // cmp w1, #2; adrp x3, +1 page; add x3, x3, #0xb54;
        // ldrb w3, [x3, w0, uxtw]: w1 is compared, w0 indexes.
        let adrp = 0x9000_0000 | (1 << 29) | 3;
        let found = refs(
            &[0x7100_083f, adrp, 0x912d_5063, 0x3860_4863, 0xd61f_0060],
            0x4000,
        );
        assert_eq!(
            table_of_add(&found),
            Some(TableShape::InFunction {
                entry_size: 1,
                entries: None
            })
        );
        // mov w8, w0 after cmp w0, #15; b.hi carries the bound to w8.
        let found = refs(
            &[
                0x7100_3c1f,
                0x5400_0208, // b.hi past the code
                0x2a00_03e8,
                adrp,
                0x912d_5063,
                0x3868_6863,
                0xd61f_0060,
            ],
            0x4000,
        );
        assert_eq!(
            table_of_add(&found),
            Some(TableShape::InFunction {
                entry_size: 1,
                entries: Some(16)
            })
        );
    }

    #[test]
    fn a_load_no_branch_follows_reads_a_lookup_table() {
        // adrp x1, +1 page; add x1, x1, #0xb54; ldr w0, [x1, w0, sxtw #2]; ret
        let adrp = 0x9000_0000 | (1 << 29) | 1;
        let found = refs(&[adrp, 0x912d_5021, 0xb860_d820, 0xd65f_03c0], 0x4000);
        assert!(found.iter().all(|r| r.table.is_none()), "{found:?}");
    }

    #[test]
    fn an_equality_test_bounds_no_table() {
        // cmp w0, #1; b.ne (past the code); ...: w0 == 1 says nothing of a range.
        let adrp = 0x9000_0000 | (1 << 29) | 3;
        let words = [
            0x7100_041f,
            0x5400_0201, // b.ne
            adrp,
            0x912d_5063,
            0x3860_4863,
            0xd61f_0060,
        ];
        let found = refs(&words, 0x4000);
        assert!(
            found.iter().any(|r| r.table
                == Some(TableShape::InFunction {
                    entry_size: 1,
                    entries: None
                })),
            "{found:?}"
        );
    }
}
