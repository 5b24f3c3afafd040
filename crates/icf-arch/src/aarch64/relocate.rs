//! AArch64: what kept relocations say (see `crate::relocate`), writing an
//! instruction's or a datum's field again, and the padding between
//! functions.

use crate::relocate::{
    KeptReloc, PAGE_END_HAZARD_REACH, PAGE_END_HAZARD_START, PageEndHazard, fits_signed, with_bits,
    write_data,
};
use object::elf;

pub(super) fn kept(r_type: u32) -> KeptReloc {
    match elf::RelocationType(r_type) {
        elf::R_AARCH64_ABS64 => KeptReloc::Address { size: 8 },
        elf::R_AARCH64_ABS32 => KeptReloc::Address { size: 4 },
        elf::R_AARCH64_ABS16 => KeptReloc::Address { size: 2 },
        elf::R_AARCH64_CALL26
        | elf::R_AARCH64_JUMP26
        | elf::R_AARCH64_CONDBR19
        | elf::R_AARCH64_TSTBR14
        | elf::R_AARCH64_LD_PREL_LO19
        | elf::R_AARCH64_ADR_PREL_LO21
        | elf::R_AARCH64_ADD_ABS_LO12_NC
        | elf::R_AARCH64_LDST8_ABS_LO12_NC
        | elf::R_AARCH64_LDST16_ABS_LO12_NC
        | elf::R_AARCH64_LDST32_ABS_LO12_NC
        | elf::R_AARCH64_LDST64_ABS_LO12_NC
        | elf::R_AARCH64_LDST128_ABS_LO12_NC
        | elf::R_AARCH64_MOVW_UABS_G0
        | elf::R_AARCH64_MOVW_UABS_G0_NC
        | elf::R_AARCH64_MOVW_UABS_G1
        | elf::R_AARCH64_MOVW_UABS_G1_NC
        | elf::R_AARCH64_MOVW_UABS_G2
        | elf::R_AARCH64_MOVW_UABS_G2_NC
        | elf::R_AARCH64_MOVW_UABS_G3 => KeptReloc::Instruction,
        elf::R_AARCH64_ADR_PREL_PG_HI21 | elf::R_AARCH64_ADR_PREL_PG_HI21_NC => KeptReloc::Page,
        elf::R_AARCH64_ADR_GOT_PAGE => KeptReloc::GotPage,
        elf::R_AARCH64_GOT_LD_PREL19
        | elf::R_AARCH64_PREL64
        | elf::R_AARCH64_PREL32
        | elf::R_AARCH64_PREL16
        | elf::R_AARCH64_PLT32 => KeptReloc::PcRelative,
        elf::R_AARCH64_LD64_GOT_LO12_NC => KeptReloc::Low12,
        elf::R_AARCH64_LD64_GOTPAGE_LO15 | elf::R_AARCH64_LD64_GOTOFF_LO15 => KeptReloc::GotOffset,
        _ => KeptReloc::Other,
    }
}

fn word(field: &[u8]) -> Result<u32, String> {
    match field.get(..4) {
        Some(&[a, b, c, d]) => Ok(u32::from_le_bytes([a, b, c, d])),
        _ => Err("an instruction needs 4 bytes".to_string()),
    }
}

/// The instruction word in `field`, when it is one relocation `r_type`
/// patches (a linker may have relaxed it into another, or a `nop`).
fn patched_word(r_type: elf::RelocationType, field: &[u8]) -> Result<u32, String> {
    let w = word(field)?;
    let add_immediate = w & 0x7f80_0000 == 0x1100_0000;
    let load_store = w & 0x3b00_0000 == 0x3900_0000;
    let fits = match r_type {
        elf::R_AARCH64_CALL26 | elf::R_AARCH64_JUMP26 => w & 0x7c00_0000 == 0x1400_0000,
        // `b.cond`, `cbz`/`cbnz`.
        elf::R_AARCH64_CONDBR19 => w & 0xff00_0010 == 0x5400_0000 || w & 0x7e00_0000 == 0x3400_0000,
        elf::R_AARCH64_TSTBR14 => w & 0x7e00_0000 == 0x3600_0000,
        elf::R_AARCH64_LD_PREL_LO19 | elf::R_AARCH64_GOT_LD_PREL19 => {
            w & 0x3b00_0000 == 0x1800_0000
        }
        elf::R_AARCH64_ADR_PREL_LO21 => w & 0x9f00_0000 == 0x1000_0000,
        // `adrp`, or GNU ld's `adr` of the page at a page's end.
        elf::R_AARCH64_ADR_PREL_PG_HI21
        | elf::R_AARCH64_ADR_PREL_PG_HI21_NC
        | elf::R_AARCH64_ADR_GOT_PAGE => w & 0x1f00_0000 == 0x1000_0000,
        elf::R_AARCH64_ADD_ABS_LO12_NC => add_immediate,
        // `movz`, `movk` (or `movn`): a move of a wide immediate.
        elf::R_AARCH64_MOVW_UABS_G0
        | elf::R_AARCH64_MOVW_UABS_G0_NC
        | elf::R_AARCH64_MOVW_UABS_G1
        | elf::R_AARCH64_MOVW_UABS_G1_NC
        | elf::R_AARCH64_MOVW_UABS_G2
        | elf::R_AARCH64_MOVW_UABS_G2_NC
        | elf::R_AARCH64_MOVW_UABS_G3 => w & 0x1f80_0000 == 0x1280_0000,
        // A GOT load the linker relaxed into the `add` of the address.
        elf::R_AARCH64_LD64_GOT_LO12_NC => load_store || add_immediate,
        _ => load_store,
    };
    if fits {
        Ok(w)
    } else {
        Err(format!(
            "{w:#010x} is not an instruction relocation type {} patches",
            r_type.0
        ))
    }
}

/// A branch or literal displacement of `bits` bits (in words) at `low`.
fn displacement(w: u32, delta: i64, low: u32, bits: u32) -> Result<u32, String> {
    if delta & 3 != 0 {
        return Err(format!("{delta:#x} is not a whole number of instructions"));
    }
    if !fits_signed(delta >> 2, bits) {
        return Err(format!("{delta:#x} is out of the instruction's reach"));
    }
    Ok(with_bits(w, low, bits, (delta >> 2) as u32))
}

/// `adr`/`adrp`'s 21-bit immediate, split in immlo and immhi.
fn adr_immediate(w: u32, value: i64) -> Result<u32, String> {
    if !fits_signed(value, 21) {
        return Err(format!("{value:#x} is out of adr/adrp's reach"));
    }
    let value = value as u32;
    Ok(with_bits(with_bits(w, 29, 2, value & 3), 5, 19, value >> 2))
}

pub(super) fn write(r_type: u32, field: &mut [u8], place: u64, value: u64) -> Result<(), String> {
    let delta = value.wrapping_sub(place) as i64;
    let low12 = |w: u32, shift: u32| -> Result<u32, String> {
        let bits = (value & 0xfff) as u32;
        if bits & ((1 << shift) - 1) != 0 {
            return Err(format!(
                "{value:#x} is not aligned to the access's {} bytes",
                1 << shift
            ));
        }
        Ok(with_bits(w, 10, 12, bits >> shift))
    };
    let new = match elf::RelocationType(r_type) {
        elf::R_AARCH64_ABS64 | elf::R_AARCH64_PREL64 => {
            let v = if r_type == elf::R_AARCH64_ABS64.0 {
                value as i64
            } else {
                delta
            };
            return write_data(field, 8, v, true);
        }
        elf::R_AARCH64_ABS32 => return write_data(field, 4, value as i64, false),
        elf::R_AARCH64_PREL32 | elf::R_AARCH64_PLT32 => return write_data(field, 4, delta, true),
        kind @ (elf::R_AARCH64_CALL26 | elf::R_AARCH64_JUMP26) => {
            displacement(patched_word(kind, field)?, delta, 0, 26)?
        }
        kind @ (elf::R_AARCH64_CONDBR19
        | elf::R_AARCH64_LD_PREL_LO19
        | elf::R_AARCH64_GOT_LD_PREL19) => displacement(patched_word(kind, field)?, delta, 5, 19)?,
        kind @ elf::R_AARCH64_TSTBR14 => displacement(patched_word(kind, field)?, delta, 5, 14)?,
        kind @ elf::R_AARCH64_ADR_PREL_LO21 => adr_immediate(patched_word(kind, field)?, delta)?,
        kind @ (elf::R_AARCH64_ADR_PREL_PG_HI21
        | elf::R_AARCH64_ADR_PREL_PG_HI21_NC
        | elf::R_AARCH64_ADR_GOT_PAGE) => {
            let w = patched_word(kind, field)?;
            // The words after it, when the caller gives them: the erratum
            // needs a load or store based on the register the `adrp` writes
            // among the next three.
            let register = w & 0x1f;
            let exposed = field.len() < 8
                || words(&field[4..])
                    .take(3)
                    .any(|next| accesses_memory_through(next, register));
            if place & 0xfff >= ERRATUM_843419_START && exposed {
                // Cortex-A53 erratum 843419: an `adrp` in a page's last two
                // words may compute a wrong address. As GNU ld does, the
                // same page by `adr`, which the erratum does not touch.
                let page = (value & !0xfff).wrapping_sub(place) as i64;
                adr_immediate(w & 0x7fff_ffff, page).map_err(|_| {
                    format!("an adrp at {place:#x} (a page's last two words, Cortex-A53 erratum 843419) whose page {value:#x} is beyond adr's reach")
                })?
            } else {
                let pages = ((value & !0xfff).wrapping_sub(place & !0xfff) as i64) >> 12;
                adr_immediate(w | 0x8000_0000, pages)?
            }
        }
        kind @ (elf::R_AARCH64_ADD_ABS_LO12_NC | elf::R_AARCH64_LDST8_ABS_LO12_NC) => {
            low12(patched_word(kind, field)?, 0)?
        }
        kind @ elf::R_AARCH64_LDST16_ABS_LO12_NC => low12(patched_word(kind, field)?, 1)?,
        kind @ elf::R_AARCH64_LDST32_ABS_LO12_NC => low12(patched_word(kind, field)?, 2)?,
        kind @ elf::R_AARCH64_LDST64_ABS_LO12_NC => low12(patched_word(kind, field)?, 3)?,
        kind @ elf::R_AARCH64_LD64_GOT_LO12_NC => {
            let w = patched_word(kind, field)?;
            // Relaxed into an `add`: the low bits unscaled.
            low12(w, if w & 0x7f80_0000 == 0x1100_0000 { 0 } else { 3 })?
        }
        kind @ elf::R_AARCH64_LDST128_ABS_LO12_NC => low12(patched_word(kind, field)?, 4)?,
        // The 16 bits of the address from bit 16 * n (`movz`/`movk`, the
        // large code model's way to build an address); all but the `_NC`
        // forms and G3 check that the bits above fit.
        kind @ (elf::R_AARCH64_MOVW_UABS_G0
        | elf::R_AARCH64_MOVW_UABS_G0_NC
        | elf::R_AARCH64_MOVW_UABS_G1
        | elf::R_AARCH64_MOVW_UABS_G1_NC
        | elf::R_AARCH64_MOVW_UABS_G2
        | elf::R_AARCH64_MOVW_UABS_G2_NC
        | elf::R_AARCH64_MOVW_UABS_G3) => {
            let (shift, checked) = match kind {
                elf::R_AARCH64_MOVW_UABS_G0 => (0, true),
                elf::R_AARCH64_MOVW_UABS_G0_NC => (0, false),
                elf::R_AARCH64_MOVW_UABS_G1 => (16, true),
                elf::R_AARCH64_MOVW_UABS_G1_NC => (16, false),
                elf::R_AARCH64_MOVW_UABS_G2 => (32, true),
                elf::R_AARCH64_MOVW_UABS_G2_NC => (32, false),
                _ => (48, false),
            };
            if checked && value >> (shift + 16) != 0 {
                return Err(format!(
                    "{value:#x} does not fit the {} bits of relocation type {}",
                    shift + 16,
                    kind.0
                ));
            }
            with_bits(
                patched_word(kind, field)?,
                5,
                16,
                ((value >> shift) & 0xffff) as u32,
            )
        }
        _ => return Err(format!("icf does not write relocation type {r_type}")),
    };
    field[..4].copy_from_slice(&new.to_le_bytes());
    Ok(())
}

/// Where in a page an `adrp` is exposed to Cortex-A53 erratum 843419.
const ERRATUM_843419_START: u64 = PAGE_END_HAZARD_START;

/// `nop`.
const NOP: u32 = 0xd503_201f;

/// What fills the gaps between functions: `nop`.
pub(super) const FILL: &[u8] = &NOP.to_le_bytes();

/// `nop`, zero words, and lld's trap filler.
pub(super) fn is_padding(bytes: &[u8]) -> bool {
    bytes.len() % 4 == 0
        && bytes.chunks_exact(4).all(|w| {
            let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            w == 0xd503_201f || w == 0 || w == 0xd4d4_d4d4
        })
}

/// Whether the last word of `code` lets control go on past it: it is no
/// `b`, `bl`, `br`, `blr`, `ret`, `brk`, `hlt` or `udf`.
pub(super) fn runs_off_the_end(code: &[u8]) -> bool {
    // Trailing `nop`s are padding it runs through: what matters is the
    // last instruction before them.
    let Some(w) = code
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .rfind(|&w| w != NOP)
    else {
        return false;
    };
    let stops = w & 0x7c00_0000 == 0x1400_0000 // b, bl
        || w & 0xfffffc1f == 0xd61f_0000 // br
        || w & 0xfffffc1f == 0xd63f_0000 // blr
        || w & 0xfffffc1f == 0xd65f_0000 // ret
        || w & 0xffe0_001f == 0xd420_0000 // brk
        || w & 0xffe0_001f == 0xd440_0000 // hlt
        || w >> 16 == 0; // udf
    !stops
}

/// The little-endian words of `code` (a last partial word aside).
fn words(code: &[u8]) -> impl Iterator<Item = u32> + '_ {
    code.chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
}

/// Whether `w` is an `adrp`.
fn is_adrp(w: u32) -> bool {
    w & 0x9f00_0000 == 0x9000_0000
}

/// Whether `w` is a load or store based on register `register`.
fn accesses_memory_through(w: u32, register: u32) -> bool {
    w & 0x3b00_0000 == 0x3900_0000 && (w >> 5) & 0x1f == register
}

/// lld's `nop; adr` for `adrp` + `add` (or `adrp` + `ldr` of a GOT slot)
/// written back as `adrp` + `add` of `target`, the `adrp` at `new_place`
/// (see `Architecture::unrelax_address`).
pub(super) fn unrelax_address(
    kept: [u32; 2],
    code: &[u8],
    new_place: u64,
    target: u64,
) -> Option<[[u8; 4]; 2]> {
    let (page_type, low_type) = (
        elf::R_AARCH64_ADR_PREL_PG_HI21,
        elf::R_AARCH64_ADD_ABS_LO12_NC,
    );
    // The relocations the link kept are the unrelaxed pair's: of the
    // address, or of its GOT slot (a symbol no one can preempt, whose
    // address lld computes in place of loading it).
    let pages = [page_type.0, elf::R_AARCH64_ADR_GOT_PAGE.0];
    let lows = [low_type.0, elf::R_AARCH64_LD64_GOT_LO12_NC.0];
    if !pages.contains(&kept[0]) || !lows.contains(&kept[1]) {
        return None;
    }
    let mut pair = words(code);
    let (first, adr) = (pair.next()?, pair.next()?);
    // `adr` (not `adrp`): bit 31 clear, bits 28-24 `10000`.
    if first != NOP || adr & 0x9f00_0000 != 0x1000_0000 {
        return None;
    }
    let register = adr & 0x1f;
    let mut page = (0x9000_0000 | register).to_le_bytes().to_vec();
    // The words after it, for the erratum 843419 check of a page: the
    // `add`, then what followed the `adr`.
    page.extend((0x9100_0000 | register << 5 | register).to_le_bytes());
    page.extend(code.get(8..).unwrap_or_default());
    let mut low = page[4..].to_vec();
    write(page_type.0, &mut page, new_place, target).ok()?;
    write(low_type.0, &mut low, new_place + 4, target).ok()?;
    Some([page[..4].try_into().ok()?, low[..4].try_into().ok()?])
}

/// Whether `code` starts with the `ldr` of a GOT slot's `:got_lo12:`
/// that a kept `R_AARCH64_LD64_GOT_LO12_NC` names (not relaxed into an
/// `add` of the address).
pub(super) fn loads_got_slot(r_type: u32, code: &[u8]) -> bool {
    r_type == elf::R_AARCH64_LD64_GOT_LO12_NC.0
        && words(code)
            .next()
            .is_some_and(|w| w & 0xffc0_0000 == 0xf940_0000)
}

/// The `adrp`s of `code`, loaded at `address`: each exposed to Cortex-A53
/// erratum 843419 when a load or store based on the register it writes
/// follows among the next three words. A `nop` before an `adr` counts as
/// the `adrp` it may become: lld relaxes `adrp` + `add` (or + `ldr` of a
/// GOT slot) into `nop` + `adr`, which [`unrelax_address`] writes back
/// as `adrp` + `add` where the code moves out of the `adr`'s reach, and
/// that `adrp` must not land in a page's last words either (a `nop` + `adr`
/// that was never a pair costs at most an alignment step).
pub(super) fn page_end_hazards(code: &[u8], address: u64) -> Vec<PageEndHazard> {
    let words: Vec<u32> = words(code).collect();
    let reach = (PAGE_END_HAZARD_REACH / 4) as usize;
    words
        .iter()
        .enumerate()
        .filter_map(|(i, &w)| {
            let (register, after) = if is_adrp(w) {
                (w & 0x1f, &words[i + 1..])
            } else if let Some(&adr) = words.get(i + 1)
                && w == NOP
                && adr & 0x9f00_0000 == 0x1000_0000
            {
                // After the `adrp`, the `add` of its low half (no access),
                // then what followed the `adr`.
                (adr & 0x1f, &words[i + 2..])
            } else {
                return None;
            };
            let skipped = usize::from(!is_adrp(w));
            Some(PageEndHazard {
                address: address + 4 * i as u64,
                exposed: after
                    .iter()
                    .take(reach - skipped)
                    .any(|&next| accesses_memory_through(next, register)),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(r_type: object::elf::RelocationType, w: u32, place: u64, value: u64) -> u32 {
        let mut field = w.to_le_bytes();
        write(r_type.0, &mut field, place, value).expect("fits");
        u32::from_le_bytes(field)
    }

    #[test]
    fn branches_and_pages_are_written_as_the_linker_writes_them() {
        // bl .+0x100 at 0x1000 → bl .-0x40 at 0x1040 (target 0x1000)
        assert_eq!(
            written(elf::R_AARCH64_CALL26, 0x9400_0040, 0x1040, 0x1000),
            0x97ff_fff0
        );
        // b.ne .+8
        assert_eq!(
            written(elf::R_AARCH64_CONDBR19, 0x5400_0001, 0x2000, 0x2008),
            0x5400_0041
        );
        // adrp x0, 0x12000 from 0x10ff0 (two pages on); adrp x0, 0x10000 from 0x11000 (one page back)
        assert_eq!(
            written(
                elf::R_AARCH64_ADR_PREL_PG_HI21,
                0x9000_0000,
                0x10ff0,
                0x12345
            ),
            0xd000_0000
        );
        assert_eq!(
            written(
                elf::R_AARCH64_ADR_PREL_PG_HI21,
                0x9000_0000,
                0x11000,
                0x10000
            ),
            0xf0ff_ffe0
        );
        // add x0, x0, #:lo12:0x12345
        assert_eq!(
            written(elf::R_AARCH64_ADD_ABS_LO12_NC, 0x9100_0000, 0, 0x12345),
            0x910d_1400
        );
        // ldr x1, [x1, #:lo12:0x12348] scales by 8
        assert_eq!(
            written(elf::R_AARCH64_LDST64_ABS_LO12_NC, 0xf940_0021, 0, 0x12348),
            0xf941_a421
        );
    }

    #[test]
    fn an_adrp_moved_to_a_page_s_last_two_words_becomes_an_adr() {
        // adrp x1 at 0x10ff8 for the page 0x12000: adr x1, .+0x1008.
        assert_eq!(
            written(
                elf::R_AARCH64_ADR_PREL_PG_HI21,
                0x9000_0001,
                0x10ff8,
                0x12345
            ),
            0x1000_8041
        );
        let mut field = 0x9000_0001u32.to_le_bytes();
        assert!(
            write(
                elf::R_AARCH64_ADR_PREL_PG_HI21.0,
                &mut field,
                0x10ffc,
                0x4000_0000
            )
            .is_err()
        );
    }

    #[test]
    fn an_adrp_at_a_page_s_end_stays_unless_a_load_based_on_it_follows() {
        let words = |words: &[u32]| {
            words
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect::<Vec<u8>>()
        };
        let first = |field: &[u8]| u32::from_le_bytes([field[0], field[1], field[2], field[3]]);
        // add x1, x1, #lo12; ldr x0, [x0]; ret: no load based on x1.
        let mut field = words(&[0x9000_0001, 0x9100_0021, 0xf940_0000, 0xd65f_03c0]);
        write(
            elf::R_AARCH64_ADR_PREL_PG_HI21.0,
            &mut field,
            0x10ff8,
            0x12345,
        )
        .expect("fits");
        assert_eq!(first(&field), 0xd000_0001, "adrp x1, two pages on");
        // ldr x2, [x1, #8]: exposed, so an adr.
        let mut field = words(&[0x9000_0001, 0xf940_0422]);
        write(
            elf::R_AARCH64_ADR_PREL_PG_HI21.0,
            &mut field,
            0x10ff8,
            0x12345,
        )
        .expect("fits");
        assert_eq!(first(&field), 0x1000_8041);
    }

    #[test]
    fn an_adr_of_a_page_moved_off_a_page_s_end_is_an_adrp_again() {
        // adr x1 (GNU ld's erratum form) moved to 0x11000, page 0x12000.
        assert_eq!(
            written(
                elf::R_AARCH64_ADR_PREL_PG_HI21,
                0x1000_8041,
                0x11000,
                0x12345
            ),
            0xb000_0001
        );
    }

    #[test]
    fn a_function_ending_in_an_add_or_a_conditional_branch_runs_off_its_end() {
        assert!(!runs_off_the_end(&0xd65f_03c0u32.to_le_bytes())); // ret
        assert!(!runs_off_the_end(&0x17ff_ffffu32.to_le_bytes())); // b .-4
        assert!(!runs_off_the_end(&0x9400_0000u32.to_le_bytes())); // bl (of a function that never returns)
        assert!(runs_off_the_end(&0x5400_0001u32.to_le_bytes())); // b.ne
        assert!(runs_off_the_end(&0x9118_3c00u32.to_le_bytes())); // add
    }

    #[test]
    fn an_instruction_of_another_kind_is_not_written() {
        // A `nop` where the linker relaxed an `adrp` away; an `adr` where an `add` was.
        let mut field = 0xd503_201fu32.to_le_bytes();
        assert!(write(elf::R_AARCH64_ADR_PREL_PG_HI21.0, &mut field, 0, 0x1000).is_err());
        let mut field = 0x1000_0000u32.to_le_bytes();
        assert!(write(elf::R_AARCH64_ADD_ABS_LO12_NC.0, &mut field, 0, 0x1000).is_err());
        // A GOT load relaxed into `add x0, x0, #lo12`: unscaled.
        assert_eq!(
            written(elf::R_AARCH64_LD64_GOT_LO12_NC, 0x9100_0000, 0, 0x12344),
            0x910d_1000
        );
    }

    #[test]
    fn movz_and_movk_get_sixteen_bits_of_the_address_each() {
        // movz x0, #0, lsl #48; movk x0, #0, lsl #32; movk x0, #0, lsl #16;
        // movk x0, #0 building 0x1234_5678_9abc (clang's -mcmodel=large).
        let value = 0x1234_5678_9abc;
        assert_eq!(
            written(elf::R_AARCH64_MOVW_UABS_G3, 0xd2e0_0000, 0, value),
            0xd2e0_0000
        );
        assert_eq!(
            written(elf::R_AARCH64_MOVW_UABS_G2_NC, 0xf2c0_0000, 0, value),
            0xf2c2_4680
        );
        assert_eq!(
            written(elf::R_AARCH64_MOVW_UABS_G1_NC, 0xf2a0_0000, 0, value),
            0xf2aa_cf00
        );
        assert_eq!(
            written(elf::R_AARCH64_MOVW_UABS_G0_NC, 0xf280_0000, 0, value),
            0xf293_5780
        );
        // G1 checks that nothing lies above its 32 bits; a `nop` is no move.
        let mut field = 0xf2a0_0000u32.to_le_bytes();
        assert!(write(elf::R_AARCH64_MOVW_UABS_G1.0, &mut field, 0, 1 << 32).is_err());
        let mut field = NOP.to_le_bytes();
        assert!(write(elf::R_AARCH64_MOVW_UABS_G0_NC.0, &mut field, 0, 1).is_err());
    }

    #[test]
    fn what_does_not_fit_is_refused() {
        let mut field = 0x5400_0001u32.to_le_bytes();
        assert!(write(elf::R_AARCH64_CONDBR19.0, &mut field, 0, 0x20_0000).is_err());
        let mut field = 0xf940_0021u32.to_le_bytes();
        assert!(write(elf::R_AARCH64_LDST64_ABS_LO12_NC.0, &mut field, 0, 0x12344).is_err());
    }

    fn bytes(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn an_adrp_followed_by_a_memory_access_through_its_register_is_exposed() {
        // adrp x9; ldr x0, [x9]: exposed. adrp x9; ldr x0, [x8]: not.
        let code = |second: u32| bytes(&[0x9000_0009, second, NOP, NOP]);
        let hazards = page_end_hazards(&code(0xf940_0120), 0x1000);
        assert_eq!(
            hazards,
            vec![PageEndHazard {
                address: 0x1000,
                exposed: true
            }]
        );
        assert!(!page_end_hazards(&code(0xf940_0100), 0x1000)[0].exposed);
        // Three words on is too far.
        let far = bytes(&[0x9000_0009, NOP, NOP, NOP, 0xf940_0120]);
        assert!(!page_end_hazards(&far, 0x1000)[0].exposed);
        assert!(page_end_hazards(&bytes(&[NOP, 0xf940_0120]), 0x1000).is_empty());
    }

    #[test]
    fn a_relaxed_adr_is_the_adrp_it_may_become() {
        // nop; adr x9; ldr x0, [x9]: the `adrp` the `nop` becomes when the
        // pair is written back is exposed (its `add` is the second word).
        let (adr_x9, load_x9) = (0x1000_0009, 0xf940_0120);
        assert_eq!(
            page_end_hazards(&bytes(&[NOP, adr_x9, load_x9]), 0x1000),
            vec![PageEndHazard {
                address: 0x1000,
                exposed: true
            }]
        );
        // Three words after the `adrp`, counting its `add`, is too far.
        let far = bytes(&[NOP, adr_x9, NOP, NOP, load_x9]);
        assert!(!page_end_hazards(&far, 0x1000)[0].exposed);
        // A `nop` before anything else is no pair.
        assert!(page_end_hazards(&bytes(&[NOP, load_x9]), 0x1000).is_empty());
    }

    #[test]
    fn a_relaxed_adr_is_written_back_as_adrp_and_add() {
        let (page, add, got_page, got_low) = (
            elf::R_AARCH64_ADR_PREL_PG_HI21.0,
            elf::R_AARCH64_ADD_ABS_LO12_NC.0,
            elf::R_AARCH64_ADR_GOT_PAGE.0,
            elf::R_AARCH64_LD64_GOT_LO12_NC.0,
        );
        // nop; adr x3, . + 0x20 (at 0x1004), then ret.
        let code = bytes(&[NOP, 0x1000_0103, 0xd65f_03c0]);
        // Moved to 0x10_0000 and naming 0x5_4321: adrp x3, 0x5_4000 from
        // 0x10_0000's page is -0xac pages; add x3, x3, #0x321.
        let [adrp, low] = unrelax_address([page, add], &code, 0x10_0000, 0x5_4321).expect("a pair");
        assert_eq!(
            u32::from_le_bytes(adrp),
            written(
                elf::R_AARCH64_ADR_PREL_PG_HI21,
                0x9000_0003,
                0x10_0000,
                0x5_4321
            )
        );
        assert_eq!(
            u32::from_le_bytes(low),
            0x9100_0000 | 0x321 << 10 | 3 << 5 | 3
        );
        // The GOT pair lld relaxed the same way.
        assert!(unrelax_address([got_page, got_low], &code, 0x10_0000, 0x5_4321).is_some());
        // Other relocations, no `nop` first, or an `adrp` (not relaxed): none.
        assert!(unrelax_address([add, add], &code, 0x10_0000, 0x5_4321).is_none());
        assert!(
            unrelax_address(
                [page, add],
                &bytes(&[0xd65f_03c0, 0x1000_0103]),
                0x10_0000,
                0
            )
            .is_none()
        );
        assert!(unrelax_address([page, add], &bytes(&[NOP, 0x9000_0003]), 0x10_0000, 0).is_none());
    }

    #[test]
    fn only_an_unrelaxed_got_load_loads_the_slot() {
        let got_low = elf::R_AARCH64_LD64_GOT_LO12_NC.0;
        // ldr x0, [x0, #:got_lo12:sym]
        assert!(loads_got_slot(got_low, &bytes(&[0xf940_0000])));
        // Relaxed into add x0, x0, #:lo12:sym.
        assert!(!loads_got_slot(got_low, &bytes(&[0x9100_0000])));
        assert!(!loads_got_slot(
            elf::R_AARCH64_ADD_ABS_LO12_NC.0,
            &bytes(&[0xf940_0000])
        ));
        assert!(!loads_got_slot(got_low, &[0xf9]));
    }
}
