//! What the reader must know about each relocation type to check and mask the
//! bytes it patches: the size of the field, the bits of it the linker
//! writes, and whether the value is PC-relative. This is the one place that
//! knows relocation fields: the lifters mask exactly [`RelocInfo::mask`]
//! (an AArch64 instruction relocation writes an immediate, not the opcode
//! bits around it). Types not listed are rejected, as a linker would reject
//! them.

use icf_ir::Arch;
use object::elf;

/// Size, field and addressing of one relocation type.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct RelocInfo {
    /// Bytes the relocation patches (0 for marker relocations such as `R_X86_64_TLSDESC_CALL`).
    pub size: u8,
    /// The bits of the little-endian `size`-byte field the linker writes:
    /// every bit for data, the immediate for an AArch64 instruction.
    pub mask: u64,
    /// The value depends on the place it is written to (`S + A - P`).
    pub pc_relative: bool,
}

impl RelocInfo {
    /// Clears the bits the relocation writes in the field at `bytes[at..]`,
    /// so that what remains is what the object itself says. A field that
    /// does not fit is left alone (the reader checked every relocation).
    pub fn clear_field(&self, bytes: &mut [u8], at: usize) {
        icf_ir::clear_field(bytes, at, self.size, self.mask);
    }
}

/// Every bit of a `size`-byte field.
const fn whole(size: u8) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * size as u32)) - 1
    }
}

const fn abs(size: u8) -> Option<RelocInfo> {
    Some(RelocInfo {
        size,
        mask: whole(size),
        pc_relative: false,
    })
}

const fn pc(size: u8) -> Option<RelocInfo> {
    Some(RelocInfo {
        size,
        mask: whole(size),
        pc_relative: true,
    })
}

/// An AArch64 instruction relocation writing the bits `field` of the word.
const fn instruction(field: u32, pc_relative: bool) -> Option<RelocInfo> {
    Some(RelocInfo {
        size: 4,
        mask: field as u64,
        pc_relative,
    })
}

/// Fields of A64 instruction words, as bit masks of the word.
pub mod a64 {
    /// `b`, `bl`: imm26.
    pub const IMM26: u32 = 0x03ff_ffff;
    /// `b.cond`, `cbz`, `ldr` (literal): imm19.
    pub const IMM19: u32 = 0x00ff_ffe0;
    /// `tbz`, `tbnz`: imm14.
    pub const IMM14: u32 = 0x0007_ffe0;
    /// `adr`/`adrp`: immlo in bits 29..31, immhi in 5..24.
    pub const IMM21: u32 = 0x60ff_ffe0;
    /// `add`, `ldr`, `str` (unsigned offset): imm12.
    pub const IMM12: u32 = 0x003f_fc00;
    /// `movz`, `movk`: imm16.
    pub const IMM16: u32 = 0x001f_ffe0;
    /// A signed MOVW group: the linker turns the instruction into `movz`
    /// or `movn` by the value's sign, rewriting bits 29..31 too.
    pub const IMM16_AND_OPC: u32 = 0x601f_ffe0;
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
    use a64::*;
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
