//! The sound fallback: a whole function compared byte-exactly, relocated
//! bytes zeroed and each relocation kept as a reference at its offset. Equal
//! bytes plus equal relocations always means equal behaviour.

use icf_ir::{
    Block, CodeInput, Function, OpaqueReason, OpaqueRun, Opcode, Operand, Ref, RefKind, Use,
};
use smallvec::SmallVec;

/// `input` as one opaque run, with `extra` references at the given offsets
/// for places that matter without a relocation (branches the assembler resolved).
pub(crate) fn whole_function_with(
    input: &CodeInput<'_>,
    reason: OpaqueReason,
    extra: &[(u32, Ref)],
) -> Function {
    let size = input.bytes.len() as u32;
    let mut f = Function::new(input.arch, size);
    let mut bytes = input.bytes.to_vec();
    let mut operands = Vec::with_capacity(1 + 2 * input.relocs.len());
    for reloc in input.relocs {
        // Only the bits the relocation writes: an AArch64 `ldr` and `str`
        // share their relocated immediate and differ in the rest.
        icf_ir::clear_field(&mut bytes, reloc.offset as usize, reloc.size, reloc.mask);
        // Without instruction boundaries an x86-64 PC-relative field is taken to
        // end its instruction, the common case, so the addend names the place it
        // reaches (an AArch64 field is a whole instruction: P is the place).
        // How the code uses the address is unknown: assume the worst.
        let rebase = if reloc.pc_relative && input.arch == icf_ir::Arch::X86_64 {
            i64::from(reloc.size)
        } else {
            0
        };
        let r = f.push_ref(Ref {
            target: reloc.target,
            // Modulo 2^64 like the linker's S + A - P (see `x86_64/lift.rs`,
            // `push_reloc_ref`): an absolute symbol's value is any address.
            addend: reloc.addend.wrapping_add(rebase),
            kind: RefKind(reloc.r_type),
            use_: Use::Address,
        });
        operands.push(f.imm(i64::from(reloc.offset)));
        operands.push(Operand::Ref(r));
    }
    for &(offset, r) in extra {
        let r = f.push_ref(r);
        operands.push(f.imm(i64::from(offset)));
        operands.push(Operand::Ref(r));
    }
    let run = f.push_opaque(OpaqueRun {
        bytes: bytes.into_boxed_slice(),
        reason,
    });
    operands.insert(0, Operand::Opaque(run));
    f.push_inst(Opcode::OPAQUE, 0, &operands, 0, size);
    f.blocks.push(Block {
        insts: 0..1,
        succs: SmallVec::new(),
        reached: true,
    });
    f
}
