//! The AArch64 ELF relocation types icf reads: the size of each one's
//! field, the bits of it the linker writes (an instruction relocation writes
//! an immediate, not the opcode bits around it) and whether it is
//! PC-relative. Types not listed are rejected, as a linker would reject
//! them.

use super::fields::*;
use crate::reloc::{RelocInfo, abs, instruction, pc};
use object::elf;

/// Size and addressing of relocation type `r_type`, `None` when unknown.
pub(crate) fn info(r_type: u32) -> Option<RelocInfo> {
    match elf::RelocationType(r_type) {
        // Markers on an instruction another relocation may also patch.
        elf::R_AARCH64_NONE
        | elf::R_AARCH64_TLSDESC_CALL
        | elf::R_AARCH64_TLSDESC_LDR
        | elf::R_AARCH64_TLSDESC_ADD => abs(0),
        elf::R_AARCH64_ABS64 | elf::R_AARCH64_GOTREL64 => abs(8),
        elf::R_AARCH64_ABS32 | elf::R_AARCH64_GOTREL32 => abs(4),
        elf::R_AARCH64_ABS16 => abs(2),
        elf::R_AARCH64_PREL64 => pc(8),
        elf::R_AARCH64_PREL32 | elf::R_AARCH64_PLT32 | elf::R_AARCH64_GOTPCREL32 => pc(4),
        elf::R_AARCH64_PREL16 => pc(2),
        // Instruction fields relative to the instruction.
        elf::R_AARCH64_CALL26 | elf::R_AARCH64_JUMP26 => instruction(IMM26, true),
        elf::R_AARCH64_CONDBR19
        | elf::R_AARCH64_LD_PREL_LO19
        | elf::R_AARCH64_GOT_LD_PREL19
        | elf::R_AARCH64_TLSLD_LD_PREL19
        | elf::R_AARCH64_TLSIE_LD_GOTTPREL_PREL19
        | elf::R_AARCH64_TLSDESC_LD_PREL19 => instruction(IMM19, true),
        elf::R_AARCH64_TSTBR14 => instruction(IMM14, true),
        elf::R_AARCH64_ADR_PREL_LO21
        | elf::R_AARCH64_ADR_PREL_PG_HI21
        | elf::R_AARCH64_ADR_PREL_PG_HI21_NC
        | elf::R_AARCH64_ADR_GOT_PAGE
        | elf::R_AARCH64_TLSGD_ADR_PREL21
        | elf::R_AARCH64_TLSGD_ADR_PAGE21
        | elf::R_AARCH64_TLSLD_ADR_PREL21
        | elf::R_AARCH64_TLSLD_ADR_PAGE21
        | elf::R_AARCH64_TLSIE_ADR_GOTTPREL_PAGE21
        | elf::R_AARCH64_TLSDESC_ADR_PREL21
        | elf::R_AARCH64_TLSDESC_ADR_PAGE21 => instruction(IMM21, true),
        elf::R_AARCH64_MOVW_PREL_G0
        | elf::R_AARCH64_MOVW_PREL_G1
        | elf::R_AARCH64_MOVW_PREL_G2
        | elf::R_AARCH64_MOVW_PREL_G3 => instruction(IMM16_AND_OPC, true),
        elf::R_AARCH64_MOVW_PREL_G0_NC
        | elf::R_AARCH64_MOVW_PREL_G1_NC
        | elf::R_AARCH64_MOVW_PREL_G2_NC => instruction(IMM16, true),
        elf::R_AARCH64_MOVW_SABS_G0
        | elf::R_AARCH64_MOVW_SABS_G1
        | elf::R_AARCH64_MOVW_SABS_G2
        | elf::R_AARCH64_TLSLE_MOVW_TPREL_G0
        | elf::R_AARCH64_TLSLE_MOVW_TPREL_G1
        | elf::R_AARCH64_TLSLE_MOVW_TPREL_G2 => instruction(IMM16_AND_OPC, false),
        elf::RelocationType(263..=269 | 300..=306)
        | elf::R_AARCH64_TLSGD_MOVW_G1
        | elf::R_AARCH64_TLSGD_MOVW_G0_NC
        | elf::R_AARCH64_TLSLD_MOVW_G1
        | elf::R_AARCH64_TLSLD_MOVW_G0_NC
        | elf::RelocationType(523..=527)
        | elf::R_AARCH64_TLSIE_MOVW_GOTTPREL_G1
        | elf::R_AARCH64_TLSIE_MOVW_GOTTPREL_G0_NC
        | elf::R_AARCH64_TLSLE_MOVW_TPREL_G1_NC
        | elf::R_AARCH64_TLSLE_MOVW_TPREL_G0_NC
        | elf::R_AARCH64_TLSDESC_OFF_G1
        | elf::R_AARCH64_TLSDESC_OFF_G0_NC => instruction(IMM16, false),
        // Low 12 bits of an address or offset, in `add` or a load or store.
        elf::R_AARCH64_ADD_ABS_LO12_NC
        | elf::R_AARCH64_LDST8_ABS_LO12_NC
        | elf::R_AARCH64_LDST16_ABS_LO12_NC
        | elf::R_AARCH64_LDST32_ABS_LO12_NC
        | elf::R_AARCH64_LDST64_ABS_LO12_NC
        | elf::R_AARCH64_LDST128_ABS_LO12_NC
        | elf::R_AARCH64_LD64_GOTOFF_LO15
        | elf::R_AARCH64_LD64_GOT_LO12_NC
        | elf::R_AARCH64_LD64_GOTPAGE_LO15
        | elf::R_AARCH64_TLSGD_ADD_LO12_NC
        | elf::R_AARCH64_TLSLD_ADD_LO12_NC
        | elf::RelocationType(528..=538)
        | elf::R_AARCH64_TLSIE_LD64_GOTTPREL_LO12_NC
        | elf::RelocationType(549..=559)
        | elf::R_AARCH64_TLSDESC_LD64_LO12
        | elf::R_AARCH64_TLSDESC_ADD_LO12
        | elf::RelocationType(570..=573) => instruction(IMM12, false),
        // The other static instruction relocations (263..=313 in the ELF
        // ABI for AArch64): their field is not known here, so the whole
        // word counts as patched.
        elf::RelocationType(263..=313) => abs(4),
        _ => None,
    }
}
