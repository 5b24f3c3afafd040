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

mod cfg;
mod opaque;
mod x86_64;

use icf_ir::print::Syntax;
use icf_ir::{Arch, CodeInput, Function, OpaqueReason};

/// Lifts one function.
pub fn lift(input: &CodeInput<'_>) -> Function {
    match input.arch {
        Arch::X86_64 => x86_64::lift(input),
        // The AArch64 decoder arrives with milestone M1-6; until then its code
        // is compared byte-exactly, which is sound but folds less.
        Arch::Aarch64 => opaque::whole_function(input, OpaqueReason::NotLifted),
    }
}

/// Names of opcodes, registers and relocation kinds, for printing.
pub fn syntax(arch: Arch) -> &'static dyn Syntax {
    match arch {
        Arch::X86_64 => &x86_64::X86Syntax,
        Arch::Aarch64 => &opaque::RawSyntax,
    }
}
