//! x86-64: decodes with iced-x86 and reduces each instruction to its
//! comparison key (mnemonic, encoding class, legacy prefixes, EVEX fields,
//! operands) with targets set apart: near branches, RIP-relative memory,
//! and absolute immediates or displacements that are addresses. Main
//! assumption: an immediate or displacement is an address exactly when a
//! kept relocation (`-q`) says so, or, in an image without kept
//! relocations, when the image is position-dependent and the field at
//! least 4 bytes wide and pointing into an allocated section.

use iced_x86::{
    ConstantOffsets, Decoder, DecoderOptions, EncodingKind, Formatter, GasFormatter, Instruction,
    Mnemonic, OpKind, Register,
};

use crate::code::{Decoded, Key, Operand, Reach, Reference, Use, X86Key};
use crate::image::{Image, is_absolute_address, x86_field_size};
use crate::x86_escape::{
    Body, Scan, accesses_beyond_operand, address_reach, non_negative_at, reads_only_offsets,
};
use crate::x86_table;

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

/// `R_X86_64_GOTPCREL`, `_GOTPCRELX`, `_REX_GOTPCRELX`: in an immediate, a
/// load from the GOT the linker relaxed (`mov foo@GOTPCREL(%rip), %r` to
/// `mov $foo, %r`, `sub foo@GOTPCREL(%rip), %r` to `sub $foo, %r`); the
/// immediate is then the symbol's address.
const RELAXED_GOT_RELOCS: [u32; 3] = [9, 41, 42];

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

/// Decodes `bytes` loaded at `ip` linearly, every byte as an instruction
/// (PLT entries, single instructions, images without reachability).
pub(crate) fn decode(image: &Image, bytes: &[u8], ip: u64) -> Vec<Decoded> {
    let mut decoder = Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE);
    let mut out = Vec::with_capacity(bytes.len() / 4);
    let mut instr = Instruction::default();
    let kept_relocs = image.has_emitted_relocs();
    while decoder.can_decode() {
        let (decoded, _) = decode_next(image, &mut decoder, bytes, kept_relocs, &mut instr);
        out.push(decoded);
    }
    out
}

/// Decodes `bytes` loaded at `ip` by reachability: an instruction at every
/// start some path reaches ([`Image::instruction_starts`]), and each run of
/// bytes between them that no path reaches as one item of data, compared
/// as bytes with every field a kept relocation writes set apart as a
/// target. Items are in address order; a start inside an instruction
/// decoded before it (overlapping code) is decoded too.
pub(crate) fn decode_reachable(image: &Image, bytes: &[u8], ip: u64) -> Vec<Decoded> {
    let end = ip + bytes.len() as u64;
    let starts = image.instruction_starts_in(ip, end);
    let mut decoder = Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE);
    let mut out = Vec::with_capacity(starts.len() + 1);
    let mut instr = Instruction::default();
    let kept_relocs = image.has_emitted_relocs();
    let mut instructions = Vec::with_capacity(starts.len() + 1);
    let mut cursor = ip;
    let data_runs = |out: &mut Vec<Decoded>, instructions: &mut Vec<_>, from, to| {
        // A run of data inside code (a jump table) is a run of its own.
        let mut at = from;
        for bound in image.data_in_code_bounds(from, to).into_iter().chain([to]) {
            out.push(data_run(image, bytes, ip, at, bound));
            instructions.push(None);
            at = bound;
        }
    };
    for &start in starts {
        if start > cursor {
            data_runs(&mut out, &mut instructions, cursor, start);
        }
        if decoder.set_position((start - ip) as usize).is_err() {
            break;
        }
        decoder.set_ip(start);
        let (decoded, len) = decode_next(image, &mut decoder, bytes, kept_relocs, &mut instr);
        out.push(decoded);
        instructions.push((!instr.is_invalid()).then_some(instr));
        cursor = cursor.max(start + len as u64);
    }
    if cursor < end {
        data_runs(&mut out, &mut instructions, cursor, end);
    }
    let dispatches = dispatch_jumps(image, &instructions, ip, end);
    let body = Body {
        instructions: &instructions,
        jump_targets: image.jump_targets_in(ip, end),
        dispatches: &dispatches,
        single_register_return: image.single_register_returns.binary_search(&ip).is_ok(),
        argument_registers: &image.argument_registers,
        forward_readers: &image.forward_readers,
    };
    local_data_addresses(image, &mut out, &body);
    out
}

/// The jump table dispatches among `instructions`, the reached
/// instructions of the function spanning `[start, end)` in address order
/// (see [`x86_table::dispatch_jumps`]): jumps whose register holds, on
/// every path from the function's entries (its start, the symbols inside
/// it, its landing pads), a table's address plus an entry of it, of a
/// table the walk read for this function whose entries all land in it
/// ([`x86_table::stays_in`]).
pub(crate) fn dispatch_jumps(
    image: &Image,
    instructions: &[Option<Instruction>],
    start: u64,
    end: u64,
) -> Vec<u64> {
    let jump_targets = image.jump_targets_in(start, end);
    if jump_targets.is_empty() {
        return Vec::new();
    }
    let mut entries = vec![start];
    let mut symbol = start;
    loop {
        let next = image.next_symbol_start(symbol);
        if next <= symbol || next >= end {
            break;
        }
        symbol = next;
        entries.push(symbol);
    }
    let pads = image.landing_pads.partition_point(|&a| a < start)
        ..image.landing_pads.partition_point(|&a| a < end);
    entries.extend(image.landing_pads.get(pads).unwrap_or_default());
    let is_table = |table: u64| {
        let mine: Vec<_> = image
            .jump_table_at(table)
            .iter()
            .filter(|t| (start..end).contains(&t.function))
            .collect();
        !mine.is_empty()
            && mine
                .iter()
                .all(|t| x86_table::stays_in(image, table, t.size, start, end))
    };
    x86_table::dispatch_jumps(instructions, is_table, &entries, jump_targets)
}

/// A `lea` of data (or a `mov $sym, %reg`, its position-dependent form)
/// whose address does not escape only accesses that data:
/// its RIP-relative reference becomes [`Use::Access`], so the address is
/// not observed (clang's `.llvm_addrsig` leaves out a table the code only
/// loads from, and icf merges it with its twin). Likewise a 64-bit load of
/// a pointer (`mov foo@GOTPCREL(%rip), %rax`) that does not escape is only
/// dereferenced: its reference becomes [`Use::Deref`]. See
/// [`address_reach`], which also says which side of the address the
/// accesses through it read.
fn local_data_addresses(image: &Image, out: &mut [Decoded], body: &Body) {
    let scan = Scan::new(body);
    // Only a function that loads 4-byte entries (`movslq (T,%i,4)`) can
    // read a table of offsets: the others skip that scan.
    let loads_offsets = body.instructions.iter().flatten().any(|i| {
        i.mnemonic() == Mnemonic::Movsxd
            && i.op_count() == 2
            && i.op1_kind() == OpKind::Memory
            && i.memory_index_scale() == 4
    });
    for (at, decoded) in out.iter_mut().enumerate() {
        let Some(Some(instruction)) = body.instructions.get(at).copied() else {
            continue;
        };
        // An array indexed at its absolute address (`-fno-pic`:
        // `mov tab(,%rcx,4),%eax`) by an index known non-negative reads
        // forward from the address.
        let memory = instruction.mnemonic() != Mnemonic::Lea
            && (0..instruction.op_count()).any(|i| instruction.op_kind(i) == OpKind::Memory);
        if memory
            && instruction.memory_base() == Register::None
            && instruction.memory_index() != Register::None
            && non_negative_at(&scan, at, instruction.memory_index())
        {
            let table = instruction.memory_displacement64();
            for reference in &mut decoded.refs {
                if reference.address == table && reference.use_ == Use::Access {
                    reference.reach = Reach::Forward;
                }
            }
        }
        if instruction.op_count() != 2 || instruction.op0_kind() != OpKind::Register {
            continue;
        }
        let register = instruction.op0_register();
        let rip_relative = instruction.is_ip_rel_memory_operand() && register.is_gpr64();
        let (from, to, target) = match (instruction.mnemonic(), instruction.op1_kind()) {
            (Mnemonic::Lea, _) if rip_relative => (
                Use::Address,
                Use::Access,
                instruction.ip_rel_memory_address(),
            ),
            (Mnemonic::Mov, _) if rip_relative => {
                let slot = instruction.ip_rel_memory_address();
                match image.got_constant(slot) {
                    // A load from a fixed GOT slot is a `lea` of its
                    // address (see `address_materialized`).
                    Some(address) => (Use::Address, Use::Access, address),
                    None => (Use::Access, Use::Deref, slot),
                }
            }
            // `mov $sym, %reg` is a `lea` of position-dependent code (or a
            // GOT load the linker relaxed to one).
            (
                Mnemonic::Mov,
                OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64,
            ) if register.is_gpr64() || register.is_gpr32() => {
                (Use::Address, Use::Access, instruction.immediate(1))
            }
            _ => continue,
        };
        if image.is_code(target) {
            continue;
        }
        // A table of offsets whose code only adds its entries back: what
        // it reads are the addresses the entries name (their sums may
        // escape; the table's own address does not).
        if from == Use::Address && loads_offsets && reads_only_offsets(&scan, at) {
            for reference in &mut decoded.refs {
                if reference.address == target && reference.use_ == from {
                    reference.use_ = Use::Access;
                    reference.reach = Reach::Offsets;
                }
            }
            continue;
        }
        let Some(accessed) = address_reach(&scan, at) else {
            continue;
        };
        for reference in &mut decoded.refs {
            if reference.address == target && reference.use_ == from {
                reference.use_ = to;
                reference.reach = accessed.reach;
                // How far the accesses through an address reach bounds
                // the data compared there (a pointer loaded from a GOT
                // slot is checked as the slot, read whole).
                if to == Use::Access {
                    reference.width = accessed.extent;
                }
            }
        }
    }
}

/// The bytes `[from, to)` of `bytes` (loaded at `ip`) as data: fields a
/// kept relocation writes are zeroed and become targets, named with their
/// relocation type in the key.
fn data_run(image: &Image, bytes: &[u8], ip: u64, from: u64, to: u64) -> Decoded {
    let mut data = bytes[(from - ip) as usize..(to - ip) as usize].to_vec();
    let mut relocations = Vec::new();
    let mut refs = Vec::new();
    if image.has_emitted_relocs() {
        for at in from..to {
            let Some(reloc) = image.emitted.get(&at) else {
                continue;
            };
            let offset = (at - from) as usize;
            let size = x86_field_size(reloc.r_type) as usize;
            let field_end = (offset + size).min(data.len());
            data[offset..field_end].fill(0);
            relocations.push((offset as u32, reloc.r_type));
            // `S + A` of an absolute field is its address; a pc-relative
            // field (PC32, PLT32, GOTPCREL*) is taken to end its
            // instruction, as in a branch or RIP-relative operand in
            // code no path reaches, so it names `S + A + 4`.
            let (use_, address) = if is_absolute_address(image.arch, reloc.r_type) {
                (Use::Address, reloc.value)
            } else if matches!(reloc.r_type, 2 | 4 | 9 | 41 | 42) {
                (Use::Access, reloc.value.wrapping_add(4))
            } else {
                (Use::Access, reloc.value)
            };
            refs.push(Reference {
                address,
                use_,
                field: at,
                width: 0,
                reach: Reach::Unknown,
            });
        }
    }
    Decoded {
        offset: (from - ip) as u32,
        key: Key::Data { data, relocations },
        refs,
    }
}

/// The instruction at the decoder's position, and its length.
fn decode_next(
    image: &Image,
    decoder: &mut Decoder<'_>,
    bytes: &[u8],
    kept_relocs: bool,
    instr: &mut Instruction,
) -> (Decoded, usize) {
    let position = decoder.position();
    decoder.decode_out(instr);
    let len = instr.len().max(1).min(bytes.len() - position);
    let raw = &bytes[position..position + len];
    if instr.is_invalid() {
        let decoded = Decoded {
            offset: position as u32,
            key: Key::Bytes(raw.to_vec()),
            refs: Vec::new(),
        };
        return (decoded, len);
    }
    let offsets = decoder.get_constant_offsets(instr);
    let (key, refs) = normalize(image, instr, raw, &offsets, kept_relocs);
    let decoded = Decoded {
        offset: position as u32,
        key: Key::X86(key),
        refs,
    };
    (decoded, len)
}

/// Where control goes from one instruction, for the reachability walk.
pub(crate) struct Flow {
    pub len: u64,
    /// Undecodable: the walk stops here.
    pub invalid: bool,
    /// Execution continues with the next instruction (calls included).
    pub continues: bool,
    /// A jump through a register or memory (a jump table's dispatch).
    pub indirect_jump: bool,
    pub refs: Vec<Reference>,
}

/// The instruction at the start of `bytes` (loaded at `ip`) as control flow.
pub(crate) fn flow(image: &Image, bytes: &[u8], ip: u64) -> Flow {
    let mut decoder = Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    let (decoded, len) = decode_next(
        image,
        &mut decoder,
        bytes,
        image.has_emitted_relocs(),
        &mut instr,
    );
    let Key::X86(key) = &decoded.key else {
        return Flow {
            len: len as u64,
            invalid: true,
            continues: false,
            indirect_jump: false,
            refs: Vec::new(),
        };
    };
    Flow {
        len: len as u64,
        invalid: false,
        continues: key.falls_through() || key.mnemonic == Mnemonic::Call,
        indirect_jump: key.mnemonic == Mnemonic::Jmp && key.operands[0] != Operand::Target,
        refs: decoded.refs,
    }
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
    let immediate_field = ip + offsets.immediate_offset() as u64;
    let displacement_field = ip + offsets.displacement_offset() as u64;
    // An absolute address in a field: a kept relocation says so (an
    // absolute one, or in an immediate a relaxed GOT load's), or (without
    // any) a wide value pointing into the image.
    let is_address = |field: u64, field_size: usize, value: u64| -> bool {
        if kept_relocs {
            image.emitted.get(&field).is_some_and(|r| {
                ABSOLUTE_RELOCS.contains(&r.r_type)
                    || (field == immediate_field
                        && offsets.has_immediate()
                        && RELAXED_GOT_RELOCS.contains(&r.r_type))
            })
        } else {
            // A position-independent image has no absolute addresses in
            // its code: a number there is a number.
            !image.position_independent
                && field_size >= 4
                && value >= 0x1000
                && image.is_mapped(value)
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
                    width: 0,
                    reach: Reach::Unknown,
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
                        width: 0,
                        reach: Reach::Unknown,
                    });
                    Operand::Target
                } else {
                    Operand::Immediate(value & immediate_mask(kind))
                }
            }
            OpKind::Memory => {
                let base = instr.memory_base();
                let index = instr.memory_index();
                // A call or jump through memory (a GOT slot, a table of
                // pointers) only runs what the slot holds.
                let use_ = match instr.mnemonic() {
                    Mnemonic::Lea => Use::Address,
                    Mnemonic::Call => Use::Call,
                    Mnemonic::Jmp => Use::Jump,
                    _ => Use::Access,
                };
                let displacement = if instr.is_ip_rel_memory_operand() {
                    // No register offsets a RIP-relative operand: an access
                    // reads or writes exactly the operand's bytes, unless
                    // a register bit offset moves it (`bt %edi, T(%rip)`).
                    let exact = use_ == Use::Access && !accesses_beyond_operand(instr);
                    refs.push(Reference {
                        address: instr.ip_rel_memory_address(),
                        use_,
                        field: displacement_field,
                        width: if exact {
                            instr.memory_size().size() as u64
                        } else {
                            0
                        },
                        reach: if exact {
                            Reach::Forward
                        } else {
                            Reach::Unknown
                        },
                    });
                    None
                } else {
                    let value = instr.memory_displacement64();
                    // With a base register too, a displacement can be an
                    // address (an array's, indexed: `-fno-pic` code).
                    if offsets.has_displacement()
                        && is_address(displacement_field, offsets.displacement_size(), value)
                    {
                        refs.push(Reference {
                            address: value,
                            use_,
                            field: displacement_field,
                            width: 0,
                            reach: Reach::Unknown,
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
    if key.prefixes == 0
        && let Some((register, address)) = address_materialized(image, instr, &refs)
    {
        let field = refs.first().map_or(0, |r| r.field);
        let reference = Reference {
            address,
            use_: Use::Address,
            field,
            width: 0,
            reach: Reach::Unknown,
        };
        return (address_key(register), vec![reference]);
    }
    (key, refs)
}

/// The one key of every way to put an address in a register.
fn address_key(register: Register) -> X86Key {
    let mut operands = [Operand::None; 5];
    operands[0] = Operand::Register(register);
    operands[1] = Operand::Target;
    X86Key {
        mnemonic: Mnemonic::Lea,
        encoding: EncodingKind::Legacy,
        prefixes: 0,
        evex: 0,
        operands,
    }
}

/// `lea sym(%rip),%r64`, `mov $sym,%r` (a 32-bit immediate zero- or
/// sign-extends to the same small address) and a load from a GOT slot the
/// link fixed ([`Image::got_constant`]) all put `sym`'s address in the
/// register, and a linker picks among them by the symbol the instruction
/// binds (it relaxes a GOT load when the symbol is local): after a fold
/// changes that symbol, PLAIN may load from the GOT where FOLDED has a
/// `lea`. The register (by its 64-bit name) and the address.
fn address_materialized(
    image: &Image,
    instr: &Instruction,
    refs: &[Reference],
) -> Option<(Register, u64)> {
    if instr.op_count() != 2 || instr.op0_kind() != OpKind::Register {
        return None;
    }
    let register = instr.op0_register();
    let rip_relative = instr.op1_kind() == OpKind::Memory && instr.is_ip_rel_memory_operand();
    let address = match instr.mnemonic() {
        Mnemonic::Lea if rip_relative && register.is_gpr64() => instr.ip_rel_memory_address(),
        Mnemonic::Mov if rip_relative && register.is_gpr64() => {
            image.got_constant(instr.ip_rel_memory_address())?
        }
        Mnemonic::Mov
            if matches!(
                instr.op1_kind(),
                OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64
            ) && (register.is_gpr32() || register.is_gpr64())
                && refs.len() == 1 =>
        {
            refs[0].address
        }
        _ => return None,
    };
    Some((register.full_register(), address))
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
