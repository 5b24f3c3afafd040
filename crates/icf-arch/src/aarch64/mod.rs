//! AArch64: the lifter (yaxpeax-arm, `lift.rs`), the ELF relocation table
//! (`elf_reloc.rs`) and the instruction fields both mask, branches, thunks
//! and the property note.

mod elf_reloc;
mod lift;
mod linked;
mod macho_reloc;
mod relocate;

use crate::architecture::{Architecture, Thunk};
use crate::linked::{DynamicReloc, LinkedReference};
use crate::macho_reloc::{
    CompactUnwind, HIGH_BIT_POINTER, MachOFixup, MachOMeaning, MachOPrefix, SUBTRACTOR_MARKER,
};
use crate::reloc::{RelocInfo, abs};
use icf_ir::print::Syntax;
use icf_ir::{Arch, CodeInput, Function};
use object::elf;

/// AArch64 (A64 instructions, little-endian).
#[derive(Debug)]
pub struct Aarch64;

/// Fields of A64 instruction words, as bit masks of the word.
pub mod fields {
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

/// `bti c`, then `b imm26`.
static THUNK: Thunk = Thunk {
    landing_pad: &[0x5f, 0x24, 0x03, 0xd5],
    jump: &0x1400_0000u32.to_le_bytes(),
    field: 0,
    r_type: elf::R_AARCH64_JUMP26.0,
    addend: 0,
    // Instructions are 4 bytes.
    min_align: 4,
};

impl Architecture for Aarch64 {
    fn arch(&self) -> Arch {
        Arch::Aarch64
    }

    fn elf_machine(&self) -> u16 {
        elf::EM_AARCH64.0
    }

    fn elf_reloc(&self, r_type: u32) -> Option<RelocInfo> {
        if r_type == SUBTRACTOR_MARKER {
            return abs(0);
        }
        if r_type == HIGH_BIT_POINTER {
            return abs(8);
        }
        elf_reloc::info(r_type)
    }

    fn macho_cpu_type(&self) -> u32 {
        object::macho::CPU_TYPE_ARM64.0
    }

    fn macho_reloc(&self, fixup: &MachOFixup) -> Result<MachOMeaning, String> {
        macho_reloc::meaning(fixup)
    }

    fn macho_prefix(&self, r_type: u8) -> Option<MachOPrefix> {
        match object::macho::RelocationType(r_type) {
            object::macho::ARM64_RELOC_ADDEND => Some(MachOPrefix::Addend),
            object::macho::ARM64_RELOC_SUBTRACTOR => Some(MachOPrefix::Subtractor),
            _ => None,
        }
    }

    /// `ARM64_RELOC_BRANCH26` (its addend would need an `ADDEND` entry).
    fn macho_branch(&self, elf_type: u32, addend: i64) -> Option<u8> {
        let branch = [elf::R_AARCH64_JUMP26.0, elf::R_AARCH64_CALL26.0].contains(&elf_type);
        (branch && addend == 0).then_some(object::macho::ARM64_RELOC_BRANCH26.0)
    }

    /// `UNWIND_ARM64_MODE_FRAMELESS` with no stack; `UNWIND_ARM64_MODE_DWARF`.
    fn compact_unwind(&self) -> CompactUnwind {
        CompactUnwind {
            frameless: 0x0200_0000,
            dwarf_mode: 0x0300_0000,
        }
    }

    fn pc_relative_data(&self, size: u8) -> Option<u32> {
        macho_reloc::pc_relative_data(size)
    }

    fn absolute_data(&self, size: u8) -> Option<u32> {
        match size {
            4 => Some(elf::R_AARCH64_ABS32.0),
            8 => Some(elf::R_AARCH64_ABS64.0),
            _ => None,
        }
    }

    fn dynamic_reloc(&self, r_type: u32) -> Option<DynamicReloc> {
        match elf::RelocationType(r_type) {
            elf::R_AARCH64_RELATIVE => Some(DynamicReloc::Relative),
            elf::R_AARCH64_IRELATIVE => Some(DynamicReloc::IRelative),
            elf::R_AARCH64_ABS64 | elf::R_AARCH64_GLOB_DAT => Some(DynamicReloc::Symbol),
            _ => None,
        }
    }

    fn is_direct_branch(&self, r_type: u32) -> bool {
        r_type == elf::R_AARCH64_CALL26.0 || r_type == elf::R_AARCH64_JUMP26.0
    }

    /// PC-relative values count from the instruction, which is the field.
    fn code_field_end(&self, _field_size: u8) -> i64 {
        0
    }

    /// `GNU_PROPERTY_AARCH64_FEATURE_1_AND` (BTI = 1, PAC = 2).
    fn gnu_feature_1_and(&self) -> u32 {
        0xc000_0000
    }

    fn thunk(&self) -> &'static Thunk {
        &THUNK
    }

    fn lift(&self, input: &CodeInput<'_>) -> Function {
        lift::lift(input)
    }

    fn linked_references(
        &self,
        code: &[u8],
        address: u64,
        out: &mut Vec<LinkedReference>,
    ) -> crate::LinkedScan {
        linked::references(code, address, out);
        crate::LinkedScan {
            // Fixed-size words: the last is read from the end, no decode.
            runs_off_the_end: relocate::runs_off_the_end(code),
            // No sketch.
            shape: None,
            marks: None,
        }
    }

    fn count_instructions(&self, code: &[u8], _address: u64) -> usize {
        lift::count_instructions(code)
    }

    fn kept_reloc(&self, r_type: u32) -> crate::relocate::KeptReloc {
        relocate::kept(r_type)
    }

    fn writes_absolute_address(&self, r_type: u32) -> bool {
        matches!(
            relocate::kept(r_type),
            crate::relocate::KeptReloc::Address { .. }
        ) || (elf::R_AARCH64_MOVW_UABS_G0.0..=elf::R_AARCH64_MOVW_UABS_G3.0).contains(&r_type)
    }

    fn always_relocated(&self, r_type: u32) -> bool {
        matches!(
            elf::RelocationType(r_type),
            elf::R_AARCH64_ADR_PREL_PG_HI21
                | elf::R_AARCH64_ADR_PREL_PG_HI21_NC
                | elf::R_AARCH64_ADR_GOT_PAGE
                | elf::R_AARCH64_ADD_ABS_LO12_NC
                | elf::R_AARCH64_LDST8_ABS_LO12_NC
                | elf::R_AARCH64_LDST16_ABS_LO12_NC
                | elf::R_AARCH64_LDST32_ABS_LO12_NC
                | elf::R_AARCH64_LDST64_ABS_LO12_NC
                | elf::R_AARCH64_LDST128_ABS_LO12_NC
                | elf::R_AARCH64_LD64_GOT_LO12_NC
        ) || self.writes_absolute_address(r_type)
    }

    fn write_reloc(
        &self,
        r_type: u32,
        field: &mut [u8],
        place: u64,
        value: u64,
    ) -> Result<(), String> {
        relocate::write(r_type, field, place, value)
    }

    fn unrelax_address(
        &self,
        kept: [u32; 2],
        code: &[u8],
        new_place: u64,
        target: u64,
    ) -> Option<[[u8; 4]; 2]> {
        relocate::unrelax_address(kept, code, new_place, target)
    }

    fn loads_got_slot(&self, r_type: u32, code: &[u8]) -> bool {
        relocate::loads_got_slot(r_type, code)
    }

    fn page_end_hazards(&self, code: &[u8], address: u64) -> Vec<crate::PageEndHazard> {
        relocate::page_end_hazards(code, address)
    }

    fn is_padding(&self, bytes: &[u8]) -> bool {
        relocate::is_padding(bytes)
    }

    fn code_fill(&self) -> &'static [u8] {
        relocate::FILL
    }

    fn syntax(&self) -> &'static dyn Syntax {
        &lift::Aarch64Syntax
    }
}
