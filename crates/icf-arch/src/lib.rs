//! icf-arch: everything icf knows about one instruction set, behind one
//! trait.
//!
//! [`Architecture`] is what the rest of icf asks of an architecture: its
//! ELF machine number, its relocation types (field size, the bits written,
//! addressing), which of them are direct branches, how a thunk jumps, and
//! how its machine code lifts into the normalized IR of `icf-ir`. There is
//! one implementation per architecture, each in a directory of its own
//! (`x86_64/`, `aarch64/`): the lifter (`lift.rs`), the relocation table
//! (`elf_reloc.rs`), how its Mach-O relocations read as those ELF types
//! (`macho_reloc.rs`) and the trait's implementation (`mod.rs`). An
//! AArch64-only change goes to `aarch64/`, and nowhere else.
//!
//! The architecture-neutral parts of lifting are `cfg.rs` (finding blocks
//! and ordering them by the walk) and `opaque.rs` (the byte-exact fallback). A
//! lifter never fails: whatever it cannot lift exactly is kept as an opaque
//! run compared byte-exactly, with the reason.
//!
//! Main assumption: the caller hands over one function's bytes and the
//! relocations inside them (a [`CodeInput`]); names and symbols are not the
//! lifter's business. For linked code, which keeps no relocations,
//! `linked.rs` and each directory's `linked.rs` find the fields an
//! assembler would have relocated.

mod aarch64;
mod architecture;
mod cfg;
mod lifting;
mod linked;
mod macho_reloc;
mod opaque;
mod reloc;
mod relocate;
mod x86_64;

pub use aarch64::Aarch64;
pub use architecture::{Architecture, Thunk};
pub use lifting::{Sketch, SketchMarks, recycle};
pub use linked::{DynamicReloc, LinkedReference, LinkedScan, LinkedUse, TableShape};
pub use macho_reloc::{
    CompactUnwind, HIGH_BIT_POINTER, MachOFixup, MachOMeaning, MachOPrefix, MachOTranslation,
    SUBTRACTOR_MARKER,
};
pub use opaque::{OpaqueField, opaque_run};
pub use reloc::RelocInfo;
pub use relocate::{KeptReloc, PAGE_END_HAZARD_REACH, PAGE_END_HAZARD_START, PageEndHazard};
pub use x86_64::X86_64;

use icf_ir::print::Syntax;
use icf_ir::{Arch, CodeInput, Function};

/// The architecture `arch`.
pub fn of(arch: Arch) -> &'static dyn Architecture {
    match arch {
        Arch::X86_64 => &X86_64,
        Arch::Aarch64 => &Aarch64,
    }
}

/// The architecture whose ELF `e_machine` is `machine`, if icf knows it.
pub fn from_elf_machine(machine: u16) -> Option<&'static dyn Architecture> {
    [of(Arch::X86_64), of(Arch::Aarch64)]
        .into_iter()
        .find(|a| a.elf_machine() == machine)
}

/// The architecture whose Mach-O `cputype` is `cpu_type`, if icf knows it.
pub fn from_macho_cpu_type(cpu_type: u32) -> Option<&'static dyn Architecture> {
    [of(Arch::X86_64), of(Arch::Aarch64)]
        .into_iter()
        .find(|a| a.macho_cpu_type() == cpu_type)
}

/// Sketches one function, where the architecture can (see [`Sketch`]).
pub fn sketch(input: &CodeInput<'_>) -> Option<Sketch> {
    of(input.arch).sketch(input)
}

/// What [`sketch`] gives, decoding only the instructions `marks` names
/// where they say enough (see [`SketchMarks`]): `marks` and `shape` come
/// from a decode of exactly `input.bytes`.
pub fn sketch_marked(input: &CodeInput<'_>, shape: u64, marks: &SketchMarks) -> Option<Sketch> {
    of(input.arch).sketch_marked(input, shape, marks)
}

/// Lifts one function.
pub fn lift(input: &CodeInput<'_>) -> Function {
    of(input.arch).lift(input)
}

/// Names of opcodes, registers and relocation kinds, for printing.
pub fn syntax(arch: Arch) -> &'static dyn Syntax {
    of(arch).syntax()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thunk_is_a_direct_jump_whose_field_its_relocation_writes() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let architecture = of(arch);
            assert_eq!(architecture.arch(), arch);
            assert_eq!(
                from_elf_machine(architecture.elf_machine()).map(|a| a.arch()),
                Some(arch)
            );
            let thunk = architecture.thunk();
            assert!(architecture.is_direct_branch(thunk.r_type));
            let info = architecture
                .elf_reloc(thunk.r_type)
                .expect("the thunk's relocation is in the table");
            let field = thunk.field as usize..thunk.field as usize + usize::from(info.size);
            let mut template = [0u8; 8];
            template[..field.len()].copy_from_slice(&thunk.jump[field]);
            assert_eq!(u64::from_le_bytes(template) & info.mask, 0, "{arch:?}");
            let (bytes, at) = thunk.bytes(true);
            assert_eq!(bytes.len() as u64, thunk.size(true));
            assert_eq!(at, thunk.landing_pad.len() as u64 + thunk.field);
            assert_eq!(thunk.size(false), thunk.jump.len() as u64);
            assert!(thunk.min_align.is_power_of_two());
        }
    }

    #[test]
    fn counting_instructions_decodes_and_skips_what_does_not_decode() {
        // call 0x2000; lea 0x3000(%rip), %rdi; ret
        let x86 = [
            0xe8, 0xfb, 0x0f, 0x00, 0x00, 0x48, 0x8d, 0x3d, 0xf4, 0x1f, 0x00, 0x00, 0xc3,
        ];
        assert_eq!(of(Arch::X86_64).count_instructions(&x86, 0x1000), 3);
        // nop; a word no AArch64 instruction encodes; ret
        let words: [u32; 3] = [0xd503_201f, 0xffff_ffff, 0xd65f_03c0];
        let aarch64: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(of(Arch::Aarch64).count_instructions(&aarch64, 0x1000), 2);
    }
}
