//! The x86-64 ELF relocation types icf reads: the size of each one's field
//! and whether it is PC-relative (x86-64 fields are whole: every bit of
//! them is written). Types not listed are rejected, as a linker would
//! reject them.

use crate::reloc::{RelocInfo, abs, pc};
use object::elf;

/// Size and addressing of relocation type `r_type`, `None` when unknown.
pub(crate) fn info(r_type: u32) -> Option<RelocInfo> {
    match elf::RelocationType(r_type) {
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
