//! AArch64: what kept relocations say (see `crate::relocate`), writing an
//! instruction's or a datum's field again, and the padding between
//! functions.

use crate::relocate::{KeptReloc, fits_signed, with_bits, write_data};
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
        | elf::R_AARCH64_ADR_PREL_PG_HI21
        | elf::R_AARCH64_ADR_PREL_PG_HI21_NC
        | elf::R_AARCH64_ADD_ABS_LO12_NC
        | elf::R_AARCH64_LDST8_ABS_LO12_NC
        | elf::R_AARCH64_LDST16_ABS_LO12_NC
        | elf::R_AARCH64_LDST32_ABS_LO12_NC
        | elf::R_AARCH64_LDST64_ABS_LO12_NC
        | elf::R_AARCH64_LDST128_ABS_LO12_NC => KeptReloc::Instruction,
        elf::R_AARCH64_ADR_GOT_PAGE
        | elf::R_AARCH64_GOT_LD_PREL19
        | elf::R_AARCH64_PREL64
        | elf::R_AARCH64_PREL32
        | elf::R_AARCH64_PREL16
        | elf::R_AARCH64_PLT32 => KeptReloc::PcRelative,
        elf::R_AARCH64_LD64_GOT_LO12_NC => KeptReloc::Low12,
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
        elf::R_AARCH64_ADR_PREL_PG_HI21
        | elf::R_AARCH64_ADR_PREL_PG_HI21_NC
        | elf::R_AARCH64_ADR_GOT_PAGE => w & 0x9f00_0000 == 0x9000_0000,
        elf::R_AARCH64_ADD_ABS_LO12_NC => add_immediate,
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
            let pages = ((value & !0xfff).wrapping_sub(place & !0xfff) as i64) >> 12;
            adr_immediate(patched_word(kind, field)?, pages)?
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
        _ => return Err(format!("icf does not write relocation type {r_type}")),
    };
    field[..4].copy_from_slice(&new.to_le_bytes());
    Ok(())
}

/// What fills the gaps between functions: `nop`.
pub(super) const FILL: &[u8] = &[0x1f, 0x20, 0x03, 0xd5];

/// `nop`, zero words, and lld's trap filler.
pub(super) fn is_padding(bytes: &[u8]) -> bool {
    bytes.len() % 4 == 0
        && bytes.chunks_exact(4).all(|w| {
            let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            w == 0xd503_201f || w == 0 || w == 0xd4d4_d4d4
        })
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
        // adrp x0, 0x12000 from 0x10ffc (two pages on); adrp x0, 0x10000 from 0x11000 (one page back)
        assert_eq!(
            written(
                elf::R_AARCH64_ADR_PREL_PG_HI21,
                0x9000_0000,
                0x10ffc,
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
    fn what_does_not_fit_is_refused() {
        let mut field = 0x5400_0001u32.to_le_bytes();
        assert!(write(elf::R_AARCH64_CONDBR19.0, &mut field, 0, 0x20_0000).is_err());
        let mut field = 0xf940_0021u32.to_le_bytes();
        assert!(write(elf::R_AARCH64_LDST64_ABS_LO12_NC.0, &mut field, 0, 0x12344).is_err());
    }
}
