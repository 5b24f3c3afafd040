//! icf-arch: everything icf knows about one instruction set, behind one
//! trait.
//!
//! [`Architecture`] is what the rest of icf asks of an architecture: its
//! ELF machine number, its relocation types (field size, the bits written,
//! addressing), which of them are direct branches, how a thunk jumps, and
//! how its machine code lifts into the normalized IR of `icf-ir`. There is
//! one implementation per architecture, each in a directory of its own
//! (`x86_64/`, `aarch64/`): the lifter (`lift.rs`), the relocation table
//! (`elf_reloc.rs`) and the trait's implementation (`mod.rs`). An
//! AArch64-only change goes to `aarch64/`, and nowhere else.
//!
//! The architecture-neutral parts of lifting are [`cfg`] (finding blocks
//! and ordering them by the walk) and `opaque` (the byte-exact fallback). A
//! lifter never fails: whatever it cannot lift exactly is kept as an opaque
//! run compared byte-exactly, with the reason.
//!
//! Main assumption: the caller hands over one function's bytes and the
//! relocations inside them (a [`CodeInput`]); names and symbols are not the
//! lifter's business.

mod aarch64;
mod cfg;
mod opaque;
mod reloc;
mod x86_64;

pub use aarch64::Aarch64;
pub use aarch64::fields as a64_fields;
pub use opaque::{OpaqueField, opaque_run};
pub use reloc::RelocInfo;
pub use x86_64::X86_64;

use icf_ir::print::Syntax;
use icf_ir::{Arch, CodeInput, CodeReloc, Function, Operand, Ref, RefKind, Use};

/// What icf knows about one architecture.
pub trait Architecture: Sync {
    /// The architecture this describes.
    fn arch(&self) -> Arch;
    /// Its ELF `e_machine`.
    fn elf_machine(&self) -> u16;
    /// Size, field and addressing of ELF relocation type `r_type`, `None`
    /// when icf does not know the type (the reader rejects it).
    fn elf_reloc(&self, r_type: u32) -> Option<RelocInfo>;
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

/// Lifts one function.
pub fn lift(input: &CodeInput<'_>) -> Function {
    of(input.arch).lift(input)
}

/// Names of opcodes, registers and relocation kinds, for printing.
pub fn syntax(arch: Arch) -> &'static dyn Syntax {
    of(arch).syntax()
}

thread_local! {
    /// A function whose buffers the next lift on this thread reuses.
    static SPARE: std::cell::RefCell<Option<Function>> = const { std::cell::RefCell::new(None) };
}

/// Hands a function that is no longer needed back to the lifter, which
/// reuses its buffers for the next function lifted on this thread: a
/// program lifts tens of thousands of functions and keeps none of them.
pub fn recycle(function: Function) {
    SPARE.with(|spare| *spare.borrow_mut() = Some(function));
}

/// An empty function, reusing the buffers of the last one recycled.
fn spare_function(arch: Arch, size: u32) -> Function {
    match SPARE.with(|spare| spare.borrow_mut().take()) {
        Some(mut function) => {
            function.reset(arch, size);
            function
        }
        None => Function::new(arch, size),
    }
}

/// A marker relocation (`R_X86_64_TLSDESC_CALL`, `R_AARCH64_TLSDESC_CALL`):
/// it patches nothing, and rides along on its instruction as a reference.
fn marker_operand(f: &mut Function, reloc: &CodeReloc) -> Operand {
    Operand::Ref(f.push_ref(Ref {
        target: reloc.target,
        addend: reloc.addend,
        kind: RefKind(reloc.r_type),
        use_: Use::Access,
    }))
}

/// Records where control goes when it runs off the function's last
/// instruction `last` (in address order): the place right after the
/// function, as a jump of kind `kind`. Inside its section that is the next
/// piece, compared like any jump target. Past the end of the section it is
/// whatever the link puts there: a reference to that very place, equal to
/// nothing else, unless the last instruction is a call, which at a
/// section's end is taken not to return (`call abort`).
fn fall_through(f: &mut Function, input: &CodeInput<'_>, last: Option<cfg::Flow>, kind: RefKind) {
    let Some(flow) = last else {
        return;
    };
    if matches!(flow, cfg::Flow::Jump | cfg::Flow::Stop) {
        return;
    }
    let end = input.section_offset + input.bytes.len() as u64;
    let kind = if end < input.section_size {
        kind
    } else if flow == cfg::Flow::Call {
        return;
    } else {
        RefKind::POSITION
    };
    let r = f.push_ref(Ref {
        target: input.own_section,
        addend: end as i64,
        kind,
        use_: Use::Jump,
    });
    f.fall_through = Some(r);
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
}
