//! The sound fallback: a whole function compared byte-exactly, relocated
//! bytes zeroed and each relocation kept as a reference at its offset. Equal
//! bytes plus equal relocations always means equal behaviour.

use crate::architecture::Architecture;
use icf_ir::{
    Arch, Block, CodeInput, Function, OpaqueReason, OpaqueRun, Opcode, Operand, Ref, RefKind, Use,
};
use smallvec::SmallVec;

/// A field of an opaque run that the link writes: where it is, the bits
/// written, and the reference it holds.
#[derive(Copy, Clone, Debug)]
pub struct OpaqueField {
    /// Offset of the field in the run.
    pub offset: u32,
    /// Bytes of the field (0 for a place that matters without a
    /// relocation, such as a branch the assembler resolved).
    pub size: u8,
    /// The bits of the field the link writes.
    pub mask: u64,
    /// What the field refers to.
    pub reference: Ref,
}

/// `bytes` as one opaque run of `reason`: each field's written bits
/// cleared, so what remains is what the object says, and its reference
/// kept at its offset. Code that cannot be lifted exactly and read-only
/// data both compare this way.
pub fn opaque_run(
    arch: Arch,
    bytes: &[u8],
    fields: impl IntoIterator<Item = OpaqueField>,
    reason: OpaqueReason,
) -> Function {
    let size = bytes.len() as u32;
    let mut f = Function::new(arch, size);
    let mut bytes = bytes.to_vec();
    let mut operands = vec![Operand::Opaque(icf_ir::OpaqueId(0))];
    for field in fields {
        // Only the bits the relocation writes: an AArch64 `ldr` and `str`
        // share their relocated immediate and differ in the rest.
        icf_ir::clear_field(&mut bytes, field.offset as usize, field.size, field.mask);
        let r = f.push_ref(field.reference);
        operands.push(f.imm(i64::from(field.offset)));
        operands.push(Operand::Ref(r));
    }
    let run = f.push_opaque(OpaqueRun {
        bytes: bytes.into_boxed_slice(),
        reason,
    });
    debug_assert_eq!(operands[0], Operand::Opaque(run));
    f.push_inst(Opcode::OPAQUE, 0, &operands, 0, size);
    f.blocks.push(Block {
        insts: 0..1,
        succs: SmallVec::new(),
        reached: true,
    });
    f
}

/// `input` as one opaque run, with `extra` references at the given offsets
/// for places that matter without a relocation (branches the assembler resolved).
pub(crate) fn whole_function_with(
    architecture: &dyn Architecture,
    input: &CodeInput<'_>,
    reason: OpaqueReason,
    extra: &[(u32, Ref)],
) -> Function {
    let relocated = input.relocs.iter().map(|reloc| {
        // Without instruction boundaries a PC-relative field in code is
        // taken to end where the architecture counts from (an x86-64
        // field its instruction, the common case), so the addend names the
        // place it reaches. How the code uses the address is unknown:
        // assume the worst.
        let rebase = if reloc.pc_relative {
            architecture.code_field_end(reloc.size)
        } else {
            0
        };
        OpaqueField {
            offset: reloc.offset,
            size: reloc.size,
            mask: reloc.mask,
            reference: Ref {
                target: reloc.target,
                // Modulo 2^64 like the linker's S + A - P (see
                // `x86_64/lift.rs`, `push_reloc_ref`): an absolute symbol's
                // value is any address.
                addend: reloc.addend.wrapping_add(rebase),
                kind: RefKind(reloc.r_type),
                use_: Use::Address,
            },
        }
    });
    let resolved = extra.iter().map(|&(offset, reference)| OpaqueField {
        offset,
        size: 0,
        mask: 0,
        reference,
    });
    opaque_run(input.arch, input.bytes, relocated.chain(resolved), reason)
}
