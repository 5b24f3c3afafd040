//! x86-64 references in linked code (see `crate::linked`): rel32 branches,
//! RIP-relative operands, and 32- and 64-bit immediates and absolute
//! displacements that may be addresses.
//!
//! Jump tables are recognized by the dispatch compilers emit: in
//! position-independent code `lea T(%rip), %r` followed (within a few
//! instructions) by `movslq (%r,%idx,4), ...`, whose entries are distances
//! from `T`; in a non-PIE executable a load or jump from `T(,%idx,8)`,
//! whose entries are addresses. The table's size is N + 1 when a
//! `cmp $N` bounded the register that indexes it (directly or through
//! register copies, and not written since); otherwise it is unknown.

use crate::linked::{LinkedReference, LinkedUse, TableShape};
use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};
use object::elf;

/// How many instructions after its `lea` a table's `movslq` may come.
const DISPATCH_WINDOW: usize = 6;

pub(super) fn references(code: &[u8], address: u64, out: &mut Vec<LinkedReference>) {
    let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    // The last RIP-relative `lea`s: destination register, index in `out`,
    // instruction count when seen.
    let mut leas: Vec<(Register, usize, usize)> = Vec::new();
    // Registers (full width) a `cmp $N` bounded, with N.
    let mut bounds: Vec<(Register, u32)> = Vec::new();
    let mut count = 0usize;
    while decoder.can_decode() {
        decoder.decode_out(&mut instr);
        if instr.is_invalid() {
            continue;
        }
        count += 1;
        leas.retain(|&(_, _, seen)| count - seen <= DISPATCH_WINDOW);
        if let Some(table) = relative_table_base(&instr, &leas) {
            out[table].table = Some(TableShape::Relative32 {
                entries: bound_of(&bounds, instr.memory_index()),
            });
        }
        track_bounds(&instr, &mut bounds);
        let offsets = decoder.get_constant_offsets(&instr);
        let start = instr.ip() - address;
        let end = instr.next_ip();
        // A PC-relative field counts from the end of its instruction.
        let bias = |field: u64| -> i64 { -((end - (address + field)) as i64) };
        let is_branch = matches!(instr.op0_kind(), OpKind::NearBranch64) && instr.op_count() == 1;
        if is_branch && offsets.immediate_size() == 4 {
            let field = start + offsets.immediate_offset() as u64;
            out.push(LinkedReference {
                offset: field,
                r_type: elf::R_X86_64_PLT32.0,
                target: instr.near_branch_target(),
                bias: bias(field),
                use_: LinkedUse::Branch,
                table: None,
            });
            continue;
        }
        if offsets.displacement_size() == 4 {
            let field = start + offsets.displacement_offset() as u64;
            if instr.is_ip_rel_memory_operand() {
                if instr.mnemonic() == Mnemonic::Lea {
                    leas.retain(|&(register, _, _)| register != instr.op0_register());
                    leas.push((instr.op0_register(), out.len(), count));
                }
                out.push(LinkedReference {
                    offset: field,
                    r_type: elf::R_X86_64_PC32.0,
                    target: instr.ip_rel_memory_address(),
                    bias: bias(field),
                    use_: LinkedUse::PcRelative,
                    table: None,
                });
            } else {
                // `mov table(,%rax,8), %rdx`: maybe a sign-extended absolute address.
                let mut reference =
                    absolute(field, elf::R_X86_64_32S.0, instr.memory_displacement64());
                if instr.memory_base() == Register::None && instr.memory_index_scale() == 8 {
                    reference.table = Some(TableShape::Absolute64 {
                        entries: bound_of(&bounds, instr.memory_index()),
                    });
                }
                out.push(reference);
            }
        }
        if offsets.has_immediate() && !is_branch {
            let field = start + offsets.immediate_offset() as u64;
            let immediate = (0..instr.op_count()).find_map(|i| match instr.op_kind(i) {
                OpKind::Immediate32 => Some((elf::R_X86_64_32.0, instr.immediate32() as u64)),
                OpKind::Immediate32to64 => {
                    Some((elf::R_X86_64_32S.0, instr.immediate32to64() as u64))
                }
                OpKind::Immediate64 => Some((elf::R_X86_64_64.0, instr.immediate64())),
                _ => None,
            });
            if let Some((r_type, value)) = immediate {
                out.push(absolute(field, r_type, value));
            }
        }
    }
}

fn absolute(offset: u64, r_type: u32, value: u64) -> LinkedReference {
    LinkedReference {
        offset,
        r_type,
        target: value,
        bias: 0,
        use_: LinkedUse::Absolute,
        table: None,
    }
}

/// How many entries the bound on `index` allows, if one does.
fn bound_of(bounds: &[(Register, u32)], index: Register) -> Option<u32> {
    let index = index.full_register();
    bounds
        .iter()
        .find(|&&(register, _)| register == index)
        .and_then(|&(_, limit)| limit.checked_add(1))
}

/// Follows what `cmp $N, %r` says of `%r` through copies (`mov %r, %s`),
/// and forgets it where `%r` is written otherwise. Only the first operand
/// counts as written: an instruction writing elsewhere (`xchg`, `div`)
/// keeps a stale bound, which at worst sizes a table wrongly; the image
/// reader then checks every entry leads to code.
fn track_bounds(instr: &Instruction, bounds: &mut Vec<(Register, u32)>) {
    let register = |i: u32| instr.op_register(i).full_register();
    match instr.mnemonic() {
        Mnemonic::Cmp
            if instr.op0_kind() == OpKind::Register
                && matches!(
                    instr.op1_kind(),
                    OpKind::Immediate8to32
                        | OpKind::Immediate32
                        | OpKind::Immediate8to64
                        | OpKind::Immediate32to64
                        | OpKind::Immediate8
                ) =>
        {
            let limit = instr.immediate(1);
            let target = register(0);
            bounds.retain(|&(r, _)| r != target);
            if let Ok(limit) = u32::try_from(limit) {
                bounds.push((target, limit));
            }
        }
        Mnemonic::Cmp | Mnemonic::Test => {}
        Mnemonic::Mov
            if instr.op0_kind() == OpKind::Register && instr.op1_kind() == OpKind::Register =>
        {
            let (to, from) = (register(0), register(1));
            let carried = bounds.iter().find(|&&(r, _)| r == from).map(|&(_, n)| n);
            bounds.retain(|&(r, _)| r != to);
            if let Some(limit) = carried {
                bounds.push((to, limit));
            }
        }
        _ if instr.op0_kind() == OpKind::Register => {
            let written = register(0);
            bounds.retain(|&(r, _)| r != written);
        }
        _ => {}
    }
}

/// The `lea` (its index in the references) whose register `instr` reads
/// 32-bit entries from as a table: `movslq (%r,%idx,4), %dst`.
fn relative_table_base(instr: &Instruction, leas: &[(Register, usize, usize)]) -> Option<usize> {
    if instr.mnemonic() != Mnemonic::Movsxd
        || instr.op1_kind() != OpKind::Memory
        || instr.memory_index_scale() != 4
        || instr.memory_displacement64() != 0
        || instr.memory_index() == Register::None
    {
        return None;
    }
    let base = instr.memory_base();
    leas.iter()
        .rev()
        .find(|&&(register, _, _)| register == base)
        .map(|&(_, index, _)| index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(code: &[u8], address: u64) -> Vec<LinkedReference> {
        let mut out = Vec::new();
        references(code, address, &mut out);
        out
    }

    #[test]
    fn calls_and_rip_relative_operands_are_pc_relative_fields() {
        // call 0x2000; lea 0x3000(%rip), %rdi  (at 0x1000)
        let code = [
            0xe8, 0xfb, 0x0f, 0x00, 0x00, // call 0x2000
            0x48, 0x8d, 0x3d, 0xf4, 0x1f, 0x00, 0x00, // lea 0x3000(%rip),%rdi
        ];
        let found = refs(&code, 0x1000);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].offset, 1);
        assert_eq!(found[0].target, 0x2000);
        assert_eq!(found[0].bias, -4);
        assert_eq!(found[0].use_, LinkedUse::Branch);
        assert_eq!(found[1].offset, 8);
        assert_eq!(found[1].target, 0x3000);
        assert_eq!(found[1].r_type, elf::R_X86_64_PC32.0);
        assert_eq!(found[1].bias, -4);
    }

    #[test]
    fn short_branches_are_not_fields_a_relocation_can_name() {
        // jmp .+2 (rel8), mov $0x401000, %edi
        let code = [0xeb, 0x00, 0xbf, 0x00, 0x10, 0x40, 0x00];
        let found = refs(&code, 0x1000);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].use_, LinkedUse::Absolute);
        assert_eq!(found[0].target, 0x40_1000);
        assert_eq!(found[0].r_type, elf::R_X86_64_32.0);
        assert_eq!(found[0].offset, 3);
    }

    #[test]
    fn a_lea_whose_register_a_movslq_indexes_is_a_jump_table() {
        // lea 0x100(%rip), %rdx; movslq (%rdx,%rax,4), %rax; add %rdx, %rax; jmp *%rax
        let code = [
            0x48, 0x8d, 0x15, 0x00, 0x01, 0x00, 0x00, // lea
            0x48, 0x63, 0x04, 0x82, // movslq (%rdx,%rax,4),%rax
            0x48, 0x01, 0xd0, // add %rdx,%rax
            0xff, 0xe0, // jmp *%rax
        ];
        let found = refs(&code, 0x1000);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].target, 0x1107);
        assert_eq!(
            found[0].table,
            Some(TableShape::Relative32 { entries: None })
        );
        // The same lea loaded from, not indexed, is no table.
        let plain = refs(&code[..7], 0x1000);
        assert_eq!(plain[0].table, None);
    }

    #[test]
    fn an_absolute_table_is_indexed_by_eight() {
        // jmp *0x402000(,%rax,8)
        let code = [0xff, 0x24, 0xc5, 0x00, 0x20, 0x40, 0x00];
        let found = refs(&code, 0x1000);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].target, 0x40_2000);
        assert_eq!(
            found[0].table,
            Some(TableShape::Absolute64 { entries: None })
        );
    }

    #[test]
    fn a_compare_of_the_index_register_sizes_the_table() {
        // cmp $0xf, %edi; ja +0; mov %edi, %eax; lea 0x100(%rip), %rcx;
        // movslq (%rcx,%rax,4), %rax
        let code = [
            0x83, 0xff, 0x0f, // cmp $0xf,%edi
            0x77, 0x00, // ja
            0x89, 0xf8, // mov %edi,%eax
            0x48, 0x8d, 0x0d, 0x00, 0x01, 0x00, 0x00, // lea 0x100(%rip),%rcx
            0x48, 0x63, 0x04, 0x81, // movslq (%rcx,%rax,4),%rax
        ];
        let found = refs(&code, 0x1000);
        let table = found.iter().find_map(|r| r.table);
        assert_eq!(table, Some(TableShape::Relative32 { entries: Some(16) }));
        // The same, bounding another register: unknown size.
        let mut other = code;
        other[1] = 0xfe; // cmp $0xf,%esi
        let found = refs(&other, 0x1000);
        let table = found.iter().find_map(|r| r.table);
        assert_eq!(table, Some(TableShape::Relative32 { entries: None }));
    }
}
