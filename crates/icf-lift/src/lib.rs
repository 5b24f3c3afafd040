//! icf-lift: machine code to the normalized IR of `icf-ir`.
//!
//! One lifter per architecture, in `<arch>.rs`, behind [`lift`] and
//! [`syntax`]. The architecture-neutral part, finding blocks and ordering them
//! by the walk, is [`cfg`]. A lifter never fails: whatever it cannot lift
//! exactly is kept as an opaque run compared byte-exactly, with the reason.
//!
//! Main assumption: the caller hands over one function's bytes and the
//! relocations inside them (a [`CodeInput`]); names and symbols are not the
//! lifter's business.

mod aarch64;
mod cfg;
mod opaque;
mod x86_64;

use icf_ir::print::Syntax;
use icf_ir::{Arch, CodeInput, Function};

/// Lifts one function.
pub fn lift(input: &CodeInput<'_>) -> Function {
    match input.arch {
        Arch::X86_64 => x86_64::lift(input),
        Arch::Aarch64 => aarch64::lift(input),
    }
}

/// Names of opcodes, registers and relocation kinds, for printing.
pub fn syntax(arch: Arch) -> &'static dyn Syntax {
    match arch {
        Arch::X86_64 => &x86_64::X86Syntax,
        Arch::Aarch64 => &aarch64::Aarch64Syntax,
    }
}
