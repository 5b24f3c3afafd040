//! AArch64 Mach-O relocations (`ARM64_RELOC_*`) as the ELF types with the
//! same field and meaning. An instruction relocation's addend comes from
//! an `ARM64_RELOC_ADDEND` just before it (the instruction's immediate is
//! not read, as lld does not); a data relocation's addend is the field.
//! `PAGEOFF12` scales its offset by the access size of the instruction it
//! patches, so its ELF type is read off that instruction, as ELF spells
//! the scale in the type (`LDST32_ABS_LO12_NC`...).

use crate::macho_reloc::{HIGH_BIT_POINTER, MachOFixup, MachOMeaning, MachOTranslation};
use object::{elf, macho};

pub(crate) fn meaning(fixup: &MachOFixup) -> Result<MachOMeaning, String> {
    let r_type = macho::RelocationType(fixup.r_type);
    let explicit = fixup.explicit_addend.unwrap_or(0);
    let instruction = |elf_type: elf::RelocationType| -> Result<MachOMeaning, String> {
        if fixup.length != 2 {
            return Err(format!(
                "{} must patch a 4-byte instruction (r_length {})",
                name(r_type),
                fixup.length
            ));
        }
        if !fixup.is_extern {
            return Err(format!(
                "{} names a section, not a symbol: AArch64 instruction relocations are external",
                name(r_type)
            ));
        }
        Ok(MachOMeaning::Fixup(MachOTranslation {
            elf_type: elf_type.0,
            stored: explicit,
            pc_offset: 0,
            locate_bias: 0,
        }))
    };
    if fixup.explicit_addend.is_some()
        && !matches!(
            r_type,
            macho::ARM64_RELOC_BRANCH26 | macho::ARM64_RELOC_PAGE21 | macho::ARM64_RELOC_PAGEOFF12
        )
    {
        return Err(format!(
            "ARM64_RELOC_ADDEND before {}: only BRANCH26, PAGE21 and PAGEOFF12 take one",
            name(r_type)
        ));
    }
    match r_type {
        macho::ARM64_RELOC_UNSIGNED => {
            let elf_type = match (fixup.pc_relative, fixup.length) {
                (false, 3) => elf::R_AARCH64_ABS64,
                (false, 2) => elf::R_AARCH64_ABS32,
                _ => {
                    return Err(format!(
                        "ARM64_RELOC_UNSIGNED must be an absolute 4- or 8-byte field (r_pcrel {}, r_length {})",
                        fixup.pc_relative, fixup.length
                    ));
                }
            };
            let stored = fixup.signed_field();
            // Non-unique RTTI's name pointer: the target plus bit 63.
            if fixup.length == 3 && stored < 0 && (stored & i64::MAX) < (1 << 32) {
                return Ok(MachOMeaning::Fixup(MachOTranslation {
                    elf_type: HIGH_BIT_POINTER,
                    stored: stored & i64::MAX,
                    pc_offset: 0,
                    locate_bias: 0,
                }));
            }
            Ok(MachOMeaning::Fixup(MachOTranslation {
                elf_type: elf_type.0,
                stored,
                pc_offset: 0,
                locate_bias: 0,
            }))
        }
        macho::ARM64_RELOC_SUBTRACTOR if !fixup.pc_relative && fixup.length >= 2 => {
            Ok(MachOMeaning::Subtractor)
        }
        macho::ARM64_RELOC_ADDEND => {
            // A 24-bit signed number in r_symbolnum.
            let value = i64::from(((fixup.symbol_number << 8) as i32) >> 8);
            Ok(MachOMeaning::Addend(value))
        }
        macho::ARM64_RELOC_BRANCH26 => {
            // `bl` is 0b100101 in the top six bits, `b` 0b000101.
            match fixup.word >> 26 {
                0b10_0101 => instruction(elf::R_AARCH64_CALL26),
                0b00_0101 => instruction(elf::R_AARCH64_JUMP26),
                _ => Err(format!(
                    "ARM64_RELOC_BRANCH26 on {:#010x}, which is not b or bl",
                    fixup.word
                )),
            }
        }
        macho::ARM64_RELOC_PAGE21 => instruction(elf::R_AARCH64_ADR_PREL_PG_HI21),
        macho::ARM64_RELOC_PAGEOFF12 => instruction(page_offset_type(fixup.word)?),
        macho::ARM64_RELOC_GOT_LOAD_PAGE21 => instruction(elf::R_AARCH64_ADR_GOT_PAGE),
        macho::ARM64_RELOC_GOT_LOAD_PAGEOFF12 => instruction(elf::R_AARCH64_LD64_GOT_LO12_NC),
        // The page of the variable's descriptor and the load of its
        // address: an initial-exec TLS access has the same shape.
        macho::ARM64_RELOC_TLVP_LOAD_PAGE21 => {
            instruction(elf::R_AARCH64_TLSIE_ADR_GOTTPREL_PAGE21)
        }
        macho::ARM64_RELOC_TLVP_LOAD_PAGEOFF12 => {
            instruction(elf::R_AARCH64_TLSIE_LD64_GOTTPREL_LO12_NC)
        }
        // `.long _sym@GOT - .` (exception tables, personalities). Only
        // UNSIGNED and SUBTRACTOR keep an addend in the field: what the
        // assembler leaves in this one is not read (lld does not either).
        macho::ARM64_RELOC_POINTER_TO_GOT if fixup.pc_relative && fixup.length == 2 => {
            Ok(MachOMeaning::Fixup(MachOTranslation {
                elf_type: elf::R_AARCH64_GOTPCREL32.0,
                stored: 0,
                pc_offset: 0,
                locate_bias: 0,
            }))
        }
        _ => Err(format!(
            "unsupported arm64 Mach-O relocation {} (r_pcrel {}, r_length {})",
            name(r_type),
            fixup.pc_relative,
            fixup.length
        )),
    }
}

/// The ELF type for the low 12 bits of an address in instruction `word`:
/// `add` (immediate), or a load or store (unsigned offset) of its size.
fn page_offset_type(word: u32) -> Result<elf::RelocationType, String> {
    // ADD (immediate), 32 or 64 bits: sf 0 0 1 0 0 0 1 0 sh.
    if word & 0x7f80_0000 == 0x1100_0000 {
        return Ok(elf::R_AARCH64_ADD_ABS_LO12_NC);
    }
    // Load/store register (unsigned immediate): size 1 1 1 V 0 1 opc.
    if word & 0x3b00_0000 == 0x3900_0000 {
        let size = word >> 30;
        let vector = word & (1 << 26) != 0;
        let opc_high = word & (1 << 23) != 0;
        return Ok(match (size, vector && opc_high) {
            (0, true) => elf::R_AARCH64_LDST128_ABS_LO12_NC,
            (0, false) => elf::R_AARCH64_LDST8_ABS_LO12_NC,
            (1, _) => elf::R_AARCH64_LDST16_ABS_LO12_NC,
            (2, _) => elf::R_AARCH64_LDST32_ABS_LO12_NC,
            _ => elf::R_AARCH64_LDST64_ABS_LO12_NC,
        });
    }
    Err(format!(
        "ARM64_RELOC_PAGEOFF12 on {word:#010x}, which is neither add nor a load or store with an unsigned offset"
    ))
}

fn name(r_type: macho::RelocationType) -> String {
    macho::NAMES_ARM64_RELOC
        .name(r_type)
        .map_or_else(|| format!("type {}", r_type.0), str::to_owned)
}

/// The ELF type of a PC-relative data field of `size` bytes.
pub(crate) fn pc_relative_data(size: u8) -> Option<u32> {
    match size {
        4 => Some(elf::R_AARCH64_PREL32.0),
        8 => Some(elf::R_AARCH64_PREL64.0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_offsets_take_the_type_of_their_access_size() {
        // add x0, x0, #0; ldrb w8, [x8]; ldrh; ldr w; ldr x; ldr q0; str x.
        let cases = [
            (0x9100_0000, elf::R_AARCH64_ADD_ABS_LO12_NC),
            (0x3940_0108, elf::R_AARCH64_LDST8_ABS_LO12_NC),
            (0x7940_0108, elf::R_AARCH64_LDST16_ABS_LO12_NC),
            (0xb940_0108, elf::R_AARCH64_LDST32_ABS_LO12_NC),
            (0xf940_0108, elf::R_AARCH64_LDST64_ABS_LO12_NC),
            (0x3dc0_0100, elf::R_AARCH64_LDST128_ABS_LO12_NC),
            (0xf900_0108, elf::R_AARCH64_LDST64_ABS_LO12_NC),
            (0x3d40_0100, elf::R_AARCH64_LDST8_ABS_LO12_NC),
        ];
        for (word, expected) in cases {
            assert_eq!(page_offset_type(word), Ok(expected), "{word:#010x}");
        }
        // A branch is neither.
        assert!(page_offset_type(0x9400_0000).is_err());
    }
}
