//! What the reader must know about each relocation type to check and mask the
//! bytes it patches: the size of the field and whether it is PC-relative.
//! Types not listed are rejected, as a linker would reject them.

use icf_ir::Arch;
use object::elf;

/// Size and addressing of one relocation type.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct RelocInfo {
    /// Bytes the relocation patches (0 for marker relocations such as `R_X86_64_TLSDESC_CALL`).
    pub size: u8,
    /// The value depends on the place it is written to (`S + A - P`).
    pub pc_relative: bool,
}

const fn abs(size: u8) -> Option<RelocInfo> {
    Some(RelocInfo {
        size,
        pc_relative: false,
    })
}

const fn pc(size: u8) -> Option<RelocInfo> {
    Some(RelocInfo {
        size,
        pc_relative: true,
    })
}

/// Size and addressing of relocation type `r_type` on `arch`, `None` when unknown.
pub fn info(arch: Arch, r_type: u32) -> Option<RelocInfo> {
    let r_type = elf::RelocationType(r_type);
    match arch {
        Arch::X86_64 => x86_64(r_type),
        Arch::Aarch64 => aarch64(r_type),
    }
}

fn x86_64(r_type: elf::RelocationType) -> Option<RelocInfo> {
    match r_type {
        elf::R_X86_64_NONE | elf::R_X86_64_TLSDESC_CALL => abs(0),
        elf::R_X86_64_8 => abs(1),
        elf::R_X86_64_PC8 => pc(1),
        elf::R_X86_64_16 => abs(2),
        elf::R_X86_64_PC16 => pc(2),
        elf::R_X86_64_32
        | elf::R_X86_64_32S
        | elf::R_X86_64_GOT32
        | elf::R_X86_64_DTPOFF32
        | elf::R_X86_64_TPOFF32
        | elf::R_X86_64_SIZE32 => abs(4),
        elf::R_X86_64_PC32
        | elf::R_X86_64_PLT32
        | elf::R_X86_64_GOTPCREL
        | elf::R_X86_64_GOTPCRELX
        | elf::R_X86_64_REX_GOTPCRELX
        | elf::R_X86_64_GOTPC32
        | elf::R_X86_64_TLSGD
        | elf::R_X86_64_TLSLD
        | elf::R_X86_64_GOTTPOFF
        | elf::R_X86_64_GOTPC32_TLSDESC
        | elf::R_X86_64_CODE_4_GOTPCRELX
        | elf::R_X86_64_CODE_4_GOTTPOFF
        | elf::R_X86_64_CODE_4_GOTPC32_TLSDESC => pc(4),
        elf::R_X86_64_64
        | elf::R_X86_64_DTPMOD64
        | elf::R_X86_64_DTPOFF64
        | elf::R_X86_64_TPOFF64
        | elf::R_X86_64_GOTOFF64
        | elf::R_X86_64_GOT64
        | elf::R_X86_64_PLTOFF64
        | elf::R_X86_64_SIZE64 => abs(8),
        elf::R_X86_64_PC64
        | elf::R_X86_64_GOTPCREL64
        | elf::R_X86_64_GOTPC64
        | elf::R_X86_64_GOTPLT64 => pc(8),
        _ => None,
    }
}

fn aarch64(r_type: elf::RelocationType) -> Option<RelocInfo> {
    match r_type {
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
        // Instruction fields relative to the instruction: the whole 4-byte word is patched.
        elf::R_AARCH64_LD_PREL_LO19
        | elf::R_AARCH64_ADR_PREL_LO21
        | elf::R_AARCH64_ADR_PREL_PG_HI21
        | elf::R_AARCH64_ADR_PREL_PG_HI21_NC
        | elf::R_AARCH64_TSTBR14
        | elf::R_AARCH64_CONDBR19
        | elf::R_AARCH64_JUMP26
        | elf::R_AARCH64_CALL26
        | elf::R_AARCH64_MOVW_PREL_G0
        | elf::R_AARCH64_MOVW_PREL_G0_NC
        | elf::R_AARCH64_MOVW_PREL_G1
        | elf::R_AARCH64_MOVW_PREL_G1_NC
        | elf::R_AARCH64_MOVW_PREL_G2
        | elf::R_AARCH64_MOVW_PREL_G2_NC
        | elf::R_AARCH64_MOVW_PREL_G3
        | elf::R_AARCH64_GOT_LD_PREL19
        | elf::R_AARCH64_ADR_GOT_PAGE
        | elf::R_AARCH64_TLSGD_ADR_PREL21
        | elf::R_AARCH64_TLSGD_ADR_PAGE21
        | elf::R_AARCH64_TLSLD_ADR_PREL21
        | elf::R_AARCH64_TLSLD_ADR_PAGE21
        | elf::R_AARCH64_TLSLD_LD_PREL19
        | elf::R_AARCH64_TLSIE_ADR_GOTTPREL_PAGE21
        | elf::R_AARCH64_TLSIE_LD_GOTTPREL_PREL19
        | elf::R_AARCH64_TLSDESC_LD_PREL19
        | elf::R_AARCH64_TLSDESC_ADR_PREL21
        | elf::R_AARCH64_TLSDESC_ADR_PAGE21 => pc(4),
        // The other static instruction relocations: low 12 bits, MOVW
        // groups, GOT and TLS offsets (263..=313 and 512..=573 in the ELF ABI
        // for AArch64, with the data relocations above taken out).
        elf::RelocationType(263..=313 | 512..=573) => abs(4),
        _ => None,
    }
}
