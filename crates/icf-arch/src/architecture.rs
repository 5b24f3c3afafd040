//! The [`Architecture`] trait: what the rest of icf asks of an instruction
//! set, and the [`Thunk`] encoding it answers with. One implementation per
//! architecture, in `x86_64/` and `aarch64/`.

use crate::linked::{DynamicReloc, LinkedReference};
use crate::macho_reloc::{CompactUnwind, MachOFixup, MachOMeaning, MachOPrefix};
use crate::reloc::RelocInfo;
use crate::relocate::{KeptReloc, PageEndHazard};
use icf_ir::print::Syntax;
use icf_ir::{Arch, CodeInput, Function};

/// What icf knows about one architecture.
pub trait Architecture: Sync {
    /// The architecture this describes.
    fn arch(&self) -> Arch;
    /// Its ELF `e_machine`.
    fn elf_machine(&self) -> u16;
    /// Size, field and addressing of ELF relocation type `r_type`, `None`
    /// when icf does not know the type (the reader rejects it).
    fn elf_reloc(&self, r_type: u32) -> Option<RelocInfo>;
    /// Its Mach-O `cputype`.
    fn macho_cpu_type(&self) -> u32;
    /// What a Mach-O relocation entry means in the model's terms (its ELF
    /// type, the addend the object states), or why icf cannot read it.
    fn macho_reloc(&self, fixup: &MachOFixup) -> Result<MachOMeaning, String>;
    /// Whether Mach-O relocation type `r_type` qualifies the next entry
    /// (`ARM64_RELOC_ADDEND`, `*_RELOC_SUBTRACTOR`) rather than fixing a
    /// field itself.
    fn macho_prefix(&self, r_type: u8) -> Option<MachOPrefix>;
    /// The Mach-O relocation type that writes a thunk's jump given as ELF
    /// type `elf_type` with `addend`, its field holding zero; `None` when
    /// Mach-O cannot say it that way.
    fn macho_branch(&self, elf_type: u32, addend: i64) -> Option<u8>;
    /// Compact unwind encodings.
    fn compact_unwind(&self) -> CompactUnwind;
    /// The ELF type of a PC-relative data field of `size` bytes (4 or 8):
    /// what a Mach-O difference `A - B` becomes when `B` is the field's own
    /// place.
    fn pc_relative_data(&self, size: u8) -> Option<u32>;
    /// The ELF type of an absolute data field of `size` bytes (4 or 8).
    fn absolute_data(&self, size: u8) -> Option<u32>;
    /// What dynamic relocation type `r_type` stores, when it stores an
    /// address a linked image's data points to (not a PLT slot, not TLS).
    fn dynamic_reloc(&self, r_type: u32) -> Option<DynamicReloc>;
    /// Whether ELF relocation type `r_type` only ever patches a direct call
    /// or jump.
    fn is_direct_branch(&self, r_type: u32) -> bool;
    /// How far past its field a PC-relative reference from code points when
    /// its addend is zero: where the processor takes the PC from.
    fn code_field_end(&self, field_size: u8) -> i64;
    /// The `pr_type` of `.note.gnu.property`'s feature bits
    /// (`GNU_PROPERTY_*_FEATURE_1_AND`), whose bit 0 is IBT or BTI.
    fn gnu_feature_1_and(&self) -> u32;
    /// How a thunk jumps to the function it stands in for.
    fn thunk(&self) -> &'static Thunk;
    /// Lifts one function.
    fn lift(&self, input: &CodeInput<'_>) -> Function;
    /// The function's references and the hash of its operations, without
    /// its key (see [`crate::lifting::Sketch`]); `None` where the lifter would
    /// compare it byte by byte, or the architecture has no sketch.
    fn sketch(&self, _input: &CodeInput<'_>) -> Option<crate::lifting::Sketch> {
        None
    }
    /// [`Architecture::sketch`], decoding only the instructions `marks`
    /// names where they say enough (see [`crate::SketchMarks`]); `shape`
    /// and `marks` come from a decode of exactly `input.bytes`.
    fn sketch_marked(
        &self,
        input: &CodeInput<'_>,
        _shape: u64,
        _marks: &crate::SketchMarks,
    ) -> Option<crate::lifting::Sketch> {
        self.sketch(input)
    }
    /// Appends to `out` the references in `code`, linked at `address`,
    /// that an assembler would have written as relocations (see
    /// [`crate::linked`]). Returns what the same decode tells of `code`
    /// besides: whether it runs off its end, its sketch's shape and where
    /// a sketch must decode ([`crate::LinkedScan`]).
    fn linked_references(
        &self,
        code: &[u8],
        address: u64,
        out: &mut Vec<LinkedReference>,
    ) -> crate::LinkedScan;
    /// The targets of the direct calls in `code`, linked at `address` and
    /// decoded linearly from its first byte: where a disassembler finds
    /// the functions of a stripped image that no symbol and no unwind
    /// entry names. Empty where code cannot be told from data without
    /// mapping symbols (AArch64's literal pools, which a stripped image
    /// has lost).
    fn linked_call_targets(&self, _code: &[u8], _address: u64) -> Vec<u64> {
        Vec::new()
    }
    /// How much of `code`, linked at `address`, comes before the padding
    /// that ends it (`nop`s and traps after its last instruction), decoded
    /// linearly: the extent of a function found by
    /// [`Architecture::linked_call_targets`], which runs to the next one.
    fn linked_code_before_padding(&self, code: &[u8], _address: u64) -> usize {
        code.len()
    }
    /// How many instructions `code`, linked at `address`, decodes to, and
    /// nothing else: what any reading of linked code pays at least (the
    /// decode floor of `cargo xtask bench`).
    fn count_instructions(&self, code: &[u8], address: u64) -> usize;
    /// What a relocation of type `r_type` that a link kept
    /// (`--emit-relocs`) says about its field (see [`crate::relocate`]).
    fn kept_reloc(&self, r_type: u32) -> KeptReloc;
    /// Whether a relocation of type `r_type` writes its `S + A` as a value,
    /// whole or 16 bits at a time (a data word, an absolute immediate, the
    /// `movz`/`movk` of AArch64's large code model): code holding one takes
    /// the address it names.
    fn writes_absolute_address(&self, r_type: u32) -> bool;
    /// Whether an assembler leaves a relocation for every field of type
    /// `r_type`, even one naming its own section (AArch64's `adrp` and
    /// `:lo12:` operands and `movw` pieces, whose values depend on where
    /// the linker puts things): in a linked image that kept its
    /// relocations, a decoded field of this type without one is no field
    /// (the decoder paired a register across paths) unless the linker
    /// wrote the code.
    fn always_relocated(&self, r_type: u32) -> bool;
    /// Writes into `field` (the bytes at `place`, the instruction word on
    /// AArch64) what a linker writes for relocation `r_type` when `S + A`
    /// is `value`, or says why it cannot (the value does not fit, the type
    /// is not one icf writes).
    fn write_reloc(
        &self,
        r_type: u32,
        field: &mut [u8],
        place: u64,
        value: u64,
    ) -> Result<(), String>;
    /// Undoes a linker's relaxation of an address computed by two
    /// instructions into one (lld writes AArch64's `adrp` + `add`, and
    /// `adrp` + `ldr` of the GOT slot of a symbol no one can preempt, as
    /// `nop; adr` when the address is near), so that the code reaches an
    /// address that moved beyond the short form's range. `kept` are the
    /// types of the relocations the link kept on the pair's two words
    /// (`--emit-relocs` keeps the unrelaxed pair's), `code` the bytes
    /// from the first word on: the pair and the words after it, which the
    /// erratum check of a page reads. Gives the pair written for `target`
    /// with its first word at `new_place`; `None` when the code is no such
    /// relaxation or the pair cannot reach `target`.
    fn unrelax_address(
        &self,
        kept: [u32; 2],
        code: &[u8],
        new_place: u64,
        target: u64,
    ) -> Option<[[u8; 4]; 2]>;
    /// Whether the instruction at the start of `code`, which holds a kept
    /// relocation of type `r_type`, still loads an address from its GOT
    /// slot (an AArch64 `ldr` of `:got_lo12:`, which the linker did not
    /// relax into computing the address): its field is then the slot's,
    /// which stays where it is while the GOT does.
    fn loads_got_slot(&self, r_type: u32, code: &[u8]) -> bool;
    /// The instructions of `code`, loaded at `address`, that a CPU erratum
    /// keeps out of a page's last words (see [`PageEndHazard`]), in
    /// address order; none where no erratum needs it.
    fn page_end_hazards(&self, code: &[u8], address: u64) -> Vec<PageEndHazard>;
    /// Whether `bytes` are only the padding an assembler or linker puts
    /// between functions (`nop`s, traps, zeros).
    fn is_padding(&self, bytes: &[u8]) -> bool;
    /// The bytes that fill gaps between functions (`int3`, `nop`).
    fn code_fill(&self) -> &'static [u8];
    /// Names of opcodes, registers and relocation kinds, for printing.
    fn syntax(&self) -> &'static dyn Syntax;
}

/// A jump standing in for a function: an optional landing pad (when the
/// object is built for IBT or BTI, an indirect call must land on one),
/// then one direct jump whose target field a relocation fills.
#[derive(Debug)]
pub struct Thunk {
    /// `endbr64` or `bti c`.
    pub landing_pad: &'static [u8],
    /// The jump, its target field zero.
    pub jump: &'static [u8],
    /// Where the target field starts in `jump`.
    pub field: u64,
    /// The ELF relocation type that fills the field.
    pub r_type: u32,
    /// The relocation's addend.
    pub addend: i64,
    /// The alignment a jump target needs at least: a function address the
    /// thunk stands in for keeps it.
    pub min_align: u64,
}

impl Thunk {
    /// The thunk's size in bytes, with or without its landing pad.
    pub fn size(&self, landing_pad: bool) -> u64 {
        let pad = if landing_pad {
            self.landing_pad.len()
        } else {
            0
        };
        (pad + self.jump.len()) as u64
    }

    /// The thunk's bytes, with or without its landing pad, and where in
    /// them the target field starts.
    pub fn bytes(&self, landing_pad: bool) -> (Vec<u8>, u64) {
        let pad: &[u8] = if landing_pad { self.landing_pad } else { &[] };
        let bytes = [pad, self.jump].concat();
        (bytes, pad.len() as u64 + self.field)
    }
}
