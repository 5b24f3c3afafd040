//! x86-64: the lifter (iced-x86, `lift.rs`), the ELF relocation table
//! (`elf_reloc.rs`), branches, thunks and the property note.

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

/// x86-64.
#[derive(Debug)]
pub struct X86_64;

/// `endbr64`, then `jmp rel32`.
static THUNK: Thunk = Thunk {
    landing_pad: &[0xf3, 0x0f, 0x1e, 0xfa],
    jump: &[0xe9, 0, 0, 0, 0],
    field: 1,
    r_type: elf::R_X86_64_PLT32.0,
    // The field is 4 bytes before the place the jump counts from.
    addend: -4,
    // Function addresses stay even: the Itanium C++ ABI marks virtual
    // member-function pointers with bit 0.
    min_align: 2,
};

impl Architecture for X86_64 {
    fn arch(&self) -> Arch {
        Arch::X86_64
    }

    fn elf_machine(&self) -> u16 {
        elf::EM_X86_64.0
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
        object::macho::CPU_TYPE_X86_64.0
    }

    fn macho_reloc(&self, fixup: &MachOFixup) -> Result<MachOMeaning, String> {
        macho_reloc::meaning(fixup)
    }

    fn macho_prefix(&self, r_type: u8) -> Option<MachOPrefix> {
        (object::macho::RelocationType(r_type) == object::macho::X86_64_RELOC_SUBTRACTOR)
            .then_some(MachOPrefix::Subtractor)
    }

    /// `X86_64_RELOC_BRANCH`, whose field holds the ELF addend plus 4.
    fn macho_branch(&self, elf_type: u32, addend: i64) -> Option<u8> {
        (elf_type == elf::R_X86_64_PLT32.0 && addend == -4)
            .then_some(object::macho::X86_64_RELOC_BRANCH.0)
    }

    /// `UNWIND_X86_64_MODE_STACK_IMMD` with one word of stack (the return
    /// address); `UNWIND_X86_64_MODE_DWARF`.
    fn compact_unwind(&self) -> CompactUnwind {
        CompactUnwind {
            frameless: 0x0201_0000,
            dwarf_mode: 0x0400_0000,
        }
    }

    fn pc_relative_data(&self, size: u8) -> Option<u32> {
        macho_reloc::pc_relative_data(size)
    }

    fn absolute_data(&self, size: u8) -> Option<u32> {
        match size {
            4 => Some(elf::R_X86_64_32.0),
            8 => Some(elf::R_X86_64_64.0),
            _ => None,
        }
    }

    fn dynamic_reloc(&self, r_type: u32) -> Option<DynamicReloc> {
        match elf::RelocationType(r_type) {
            elf::R_X86_64_RELATIVE => Some(DynamicReloc::Relative),
            elf::R_X86_64_IRELATIVE => Some(DynamicReloc::IRelative),
            elf::R_X86_64_64 | elf::R_X86_64_GLOB_DAT => Some(DynamicReloc::Symbol),
            _ => None,
        }
    }

    fn is_direct_branch(&self, r_type: u32) -> bool {
        r_type == elf::R_X86_64_PLT32.0
    }

    /// A field in code is taken to end its instruction (true for branches
    /// and most RIP-relative operands).
    fn code_field_end(&self, field_size: u8) -> i64 {
        i64::from(field_size)
    }

    /// `GNU_PROPERTY_X86_FEATURE_1_AND` (IBT = 1, SHSTK = 2).
    fn gnu_feature_1_and(&self) -> u32 {
        0xc000_0002
    }

    fn thunk(&self) -> &'static Thunk {
        &THUNK
    }

    fn lift(&self, input: &CodeInput<'_>) -> Function {
        lift::lift(input)
    }

    fn sketch(&self, input: &CodeInput<'_>) -> Option<crate::lifting::Sketch> {
        lift::sketch(input)
    }

    fn sketch_marked(
        &self,
        input: &CodeInput<'_>,
        shape: u64,
        marks: &crate::SketchMarks,
    ) -> Option<crate::lifting::Sketch> {
        lift::sketch_marked(input, shape, marks)
    }

    fn linked_references(
        &self,
        code: &[u8],
        address: u64,
        out: &mut Vec<LinkedReference>,
    ) -> crate::LinkedScan {
        linked::references(code, address, out)
    }

    fn linked_call_targets(&self, code: &[u8], address: u64) -> Vec<u64> {
        linked::call_targets(code, address)
    }

    fn linked_code_before_padding(&self, code: &[u8], address: u64) -> usize {
        linked::before_padding(code, address)
    }

    fn count_instructions(&self, code: &[u8], address: u64) -> usize {
        let mut decoder =
            iced_x86::Decoder::with_ip(64, code, address, iced_x86::DecoderOptions::NONE);
        let mut instr = iced_x86::Instruction::default();
        let mut count = 0;
        while decoder.can_decode() {
            decoder.decode_out(&mut instr);
            count += usize::from(!instr.is_invalid());
        }
        count
    }

    fn kept_reloc(&self, r_type: u32) -> crate::relocate::KeptReloc {
        relocate::kept(r_type)
    }

    fn writes_absolute_address(&self, r_type: u32) -> bool {
        matches!(
            relocate::kept(r_type),
            crate::relocate::KeptReloc::Address { .. }
        )
    }

    fn always_relocated(&self, r_type: u32) -> bool {
        // An absolute address; a PC-relative field naming its own section
        // the assembler resolves.
        self.writes_absolute_address(r_type)
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

    /// An x86-64 linker's relaxations keep an instruction's length and
    /// its field PC-relative (`GOTPCRELX`: a load becomes an `lea`):
    /// nothing to undo.
    fn unrelax_address(
        &self,
        _kept: [u32; 2],
        _code: &[u8],
        _new_place: u64,
        _target: u64,
    ) -> Option<[[u8; 4]; 2]> {
        None
    }

    /// A kept GOT load's field counts from its own place
    /// ([`crate::KeptReloc::RelaxableGotLoad`]), not from a GOT page.
    fn loads_got_slot(&self, _r_type: u32, _code: &[u8]) -> bool {
        false
    }

    /// No x86-64 erratum constrains where in a page code lies.
    fn page_end_hazards(&self, _code: &[u8], _address: u64) -> Vec<crate::PageEndHazard> {
        Vec::new()
    }

    fn is_padding(&self, bytes: &[u8]) -> bool {
        relocate::is_padding(bytes)
    }

    fn code_fill(&self) -> &'static [u8] {
        relocate::FILL
    }

    fn syntax(&self) -> &'static dyn Syntax {
        &lift::X86Syntax
    }
}
