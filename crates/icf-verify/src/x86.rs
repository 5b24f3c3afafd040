//! x86-64: decodes with iced-x86 and reduces each instruction to its
//! comparison key (mnemonic, encoding class, legacy prefixes, EVEX fields,
//! operands) with targets set apart: near branches, RIP-relative memory,
//! and absolute immediates or displacements that are addresses. Main
//! assumption: an immediate or base-less displacement is an address exactly
//! when a kept relocation (`-q`) says so, or, in an image without kept
//! relocations, when it is at least 4 bytes wide and points into an
//! allocated section.

use iced_x86::{
    ConstantOffsets, Decoder, DecoderOptions, EncodingKind, Formatter, GasFormatter, Instruction,
    MemorySize, Mnemonic, OpKind, Register,
};

use crate::code::{Decoded, Key, Reference, Use};
use crate::image::Image;

/// One operand with any target replaced by a placeholder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operand {
    None,
    Register(Register),
    Immediate(u64),
    /// A branch target, address immediate: the n-th reference.
    Target,
    Memory {
        segment: Register,
        base: Register,
        index: Register,
        scale: u32,
        /// The displacement, or `None` when it is a target.
        displacement: Option<u64>,
        size: MemorySize,
    },
    /// String-instruction memory, far branches and the like: the kind says it all.
    Other(OpKind, u64),
}

/// What must be equal between two x86-64 instructions, targets apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct X86Key {
    mnemonic: Mnemonic,
    encoding: EncodingKind,
    /// Legacy prefix bytes present (bit per prefix: lock, rep, repne,
    /// segment overrides incl. `notrack`, operand and address size).
    prefixes: u16,
    /// EVEX masking, broadcast, rounding and exception suppression.
    evex: u32,
    operands: [Operand; 5],
}

impl X86Key {
    pub(crate) fn falls_through(&self) -> bool {
        !matches!(
            self.mnemonic,
            Mnemonic::Ret
                | Mnemonic::Retf
                | Mnemonic::Jmp
                | Mnemonic::Call
                | Mnemonic::Ud0
                | Mnemonic::Ud1
                | Mnemonic::Ud2
                | Mnemonic::Hlt
                | Mnemonic::Int3
                | Mnemonic::Iret
                | Mnemonic::Iretd
                | Mnemonic::Iretq
        )
    }
}

const ABSOLUTE_RELOCS: [u32; 3] = [1, 10, 11]; // R_X86_64_64, _32, _32S

fn prefix_bits(bytes: &[u8]) -> u16 {
    let mut bits = 0u16;
    for &b in bytes {
        let bit = match b {
            0xf0 => 0,
            0xf2 => 1,
            0xf3 => 2,
            0x2e => 3,
            0x36 => 4,
            0x3e => 5,
            0x26 => 6,
            0x64 => 7,
            0x65 => 8,
            0x66 => 9,
            0x67 => 10,
            _ => break,
        };
        bits |= 1 << bit;
    }
    bits
}

/// Decodes `bytes` loaded at `ip`.
pub(crate) fn decode(image: &Image, bytes: &[u8], ip: u64) -> Vec<Decoded> {
    let mut decoder = Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE);
    let mut out = Vec::with_capacity(bytes.len() / 4);
    let mut instr = Instruction::default();
    let kept_relocs = image.has_emitted_relocs();
    while decoder.can_decode() {
        let position = decoder.position();
        decoder.decode_out(&mut instr);
        let len = instr.len();
        let raw = &bytes[position..position + len];
        if instr.is_invalid() {
            out.push(Decoded {
                offset: position as u32,
                key: Key::Bytes(raw.to_vec()),
                refs: Vec::new(),
            });
            continue;
        }
        let offsets = decoder.get_constant_offsets(&instr);
        let (key, refs) = normalize(image, &instr, raw, &offsets, kept_relocs);
        out.push(Decoded {
            offset: position as u32,
            key: Key::X86(key),
            refs,
        });
    }
    out
}

fn normalize(
    image: &Image,
    instr: &Instruction,
    raw: &[u8],
    offsets: &ConstantOffsets,
    kept_relocs: bool,
) -> (X86Key, Vec<Reference>) {
    let ip = instr.ip();
    let mut refs = Vec::new();
    let mut operands = [Operand::None; 5];
    let is_lea = instr.mnemonic() == Mnemonic::Lea;
    let immediate_field = ip + offsets.immediate_offset() as u64;
    let displacement_field = ip + offsets.displacement_offset() as u64;
    // An absolute address in a field: a kept relocation says so, or (without
    // any) a wide value pointing into the image.
    let is_address = |field: u64, field_size: usize, value: u64| -> bool {
        if kept_relocs {
            image
                .emitted
                .get(&field)
                .is_some_and(|r| ABSOLUTE_RELOCS.contains(&r.r_type))
        } else {
            field_size >= 4 && value >= 0x1000 && image.is_mapped(value)
        }
    };
    for (i, slot) in operands
        .iter_mut()
        .enumerate()
        .take(instr.op_count() as usize)
    {
        let i = i as u32;
        *slot = match instr.op_kind(i) {
            OpKind::Register => Operand::Register(instr.op_register(i)),
            OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => {
                let use_ = if instr.mnemonic() == Mnemonic::Call {
                    Use::Call
                } else {
                    Use::Jump
                };
                refs.push(Reference {
                    address: instr.near_branch_target(),
                    use_,
                    field: immediate_field_or_end(instr, offsets),
                });
                Operand::Target
            }
            kind @ (OpKind::Immediate8
            | OpKind::Immediate8_2nd
            | OpKind::Immediate16
            | OpKind::Immediate32
            | OpKind::Immediate64
            | OpKind::Immediate8to16
            | OpKind::Immediate8to32
            | OpKind::Immediate8to64
            | OpKind::Immediate32to64) => {
                let value = instr.immediate(i);
                let first_immediate = kind != OpKind::Immediate8_2nd;
                if first_immediate && is_address(immediate_field, offsets.immediate_size(), value) {
                    refs.push(Reference {
                        address: value,
                        use_: Use::Address,
                        field: immediate_field,
                    });
                    Operand::Target
                } else {
                    Operand::Immediate(value & immediate_mask(kind))
                }
            }
            OpKind::Memory => {
                let base = instr.memory_base();
                let index = instr.memory_index();
                let use_ = if is_lea { Use::Address } else { Use::Access };
                let displacement = if instr.is_ip_rel_memory_operand() {
                    refs.push(Reference {
                        address: instr.ip_rel_memory_address(),
                        use_,
                        field: displacement_field,
                    });
                    None
                } else {
                    let value = instr.memory_displacement64();
                    if base == Register::None
                        && offsets.has_displacement()
                        && is_address(displacement_field, offsets.displacement_size(), value)
                    {
                        refs.push(Reference {
                            address: value,
                            use_,
                            field: displacement_field,
                        });
                        None
                    } else {
                        Some(value)
                    }
                };
                Operand::Memory {
                    segment: instr.memory_segment(),
                    base: if instr.is_ip_rel_memory_operand() {
                        Register::None
                    } else {
                        base
                    },
                    index,
                    scale: instr.memory_index_scale(),
                    displacement,
                    size: instr.memory_size(),
                }
            }
            OpKind::FarBranch16 | OpKind::FarBranch32 => Operand::Other(
                instr.op_kind(i),
                u64::from(instr.far_branch_selector()) << 32 | u64::from(instr.far_branch32()),
            ),
            other => Operand::Other(other, 0),
        };
    }
    let evex = u32::from(instr.op_mask() as u8)
        | u32::from(instr.zeroing_masking()) << 8
        | u32::from(instr.is_broadcast()) << 9
        | u32::from(instr.suppress_all_exceptions()) << 10
        | (instr.rounding_control() as u32) << 11;
    let key = X86Key {
        mnemonic: instr.mnemonic(),
        encoding: instr.encoding(),
        prefixes: prefix_bits(raw),
        evex,
        operands,
    };
    (key, refs)
}

/// The bits of an immediate the instruction uses: iced sign-extends
/// `Immediate8to16`/`8to32` to 64 bits but zero-extends `Immediate16`/`32`,
/// so `83 /0 ib` and `81 /0 id` (or `05 id`) adding the same value would
/// otherwise compare unequal. Values are compared at the operand's width.
fn immediate_mask(kind: OpKind) -> u64 {
    match kind {
        OpKind::Immediate8 | OpKind::Immediate8_2nd => 0xff,
        OpKind::Immediate16 | OpKind::Immediate8to16 => 0xffff,
        OpKind::Immediate32 | OpKind::Immediate8to32 => 0xffff_ffff,
        _ => u64::MAX,
    }
}

/// The field of a branch's displacement: its immediate offset, or the last
/// bytes of the instruction.
fn immediate_field_or_end(instr: &Instruction, offsets: &ConstantOffsets) -> u64 {
    if offsets.has_immediate() {
        instr.ip() + offsets.immediate_offset() as u64
    } else {
        // Branch displacements are the instruction's last 1 or 4 bytes.
        let size = if instr.len() >= 5 { 4 } else { 1 };
        instr.next_ip() - size
    }
}

/// `jmp rel` (after an optional `endbr64`) filling `[start, end)`: its target.
pub(crate) fn thunk_target(image: &Image, start: u64, end: u64) -> Option<u64> {
    let bytes = image.bytes(start, end.checked_sub(start)?.min(32))?;
    let mut decoder = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE);
    let mut instr = decoder.decode();
    if instr.mnemonic() == Mnemonic::Endbr64 {
        instr = decoder.decode();
    }
    let is_jump = instr.mnemonic() == Mnemonic::Jmp
        && matches!(
            instr.op0_kind(),
            OpKind::NearBranch64 | OpKind::NearBranch32
        )
        && prefix_bits(&bytes[(instr.ip() - start) as usize..]) == 0;
    (is_jump && instr.next_ip() >= end).then(|| instr.near_branch_target())
}

/// The instruction at `address` in AT&T syntax.
pub(crate) fn disassemble(image: &Image, address: u64) -> Option<String> {
    let bytes = image
        .bytes(address, 15)
        .or_else(|| image.bytes_to_section_end(address))?;
    let mut decoder = Decoder::with_ip(64, bytes, address, DecoderOptions::NONE);
    let instr = decoder.decode();
    let mut text = String::new();
    let mut formatter = GasFormatter::new();
    formatter.format(&instr, &mut text);
    Some(text)
}
