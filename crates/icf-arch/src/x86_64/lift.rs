//! x86-64: decode with iced-x86 and normalize encodings away.
//!
//! An instruction becomes its operation (mnemonic, encoding class, and the
//! width its immediate is extended to) plus operands: registers and
//! immediates as numbers, memory operands, branch targets as blocks, and
//! relocations as references with the use the instruction makes of them. So
//! `je rel8` and `je rel32`, or `add eax, imm8` and `add eax, imm32`, lift to
//! the same instruction. Prefixes that change meaning (lock, rep, operand and
//! address size, REX.W) are kept as flags; a run of padding NOPs is one `nop`.
//!
//! Anything whose encoding could carry meaning makes the whole function
//! opaque (compared byte-exactly): an undecodable instruction, a branch into
//! the middle of an instruction, a relocation outside an operand field, a
//! PC-relative operand that points into the function's own bytes (data in
//! code), or one that leaves the section without a relocation.

use crate::cfg::{self, Decoded, Flow};
use crate::opaque;
use iced_x86::{
    ConstantOffsets, Decoder, DecoderError, DecoderOptions, FlowControl, Instruction, MemorySize,
    Mnemonic, OpKind, Register,
};
use icf_ir::print::Syntax;
use icf_ir::{
    Block, CodeInput, CodeReloc, Disp, Function, Mem, OpaqueReason, Opcode, Operand, Ref, RefKind,
    Reg, Use,
};
use object::elf;
use smallvec::SmallVec;

/// Opcode layout: mnemonic in bits 0..16, encoding class in 16..20, immediate width class in 20..24.
const ENCODING_SHIFT: u32 = 16;
const IMMEDIATE_SHIFT: u32 = 20;

/// Flag bits: prefixes that change what an instruction does.
const FLAG_LOCK: u32 = 1 << 0;
const FLAG_REPNE: u32 = 1 << 1;
const FLAG_REP: u32 = 1 << 2;
const FLAG_OPERAND_SIZE: u32 = 1 << 3;
const FLAG_ADDRESS_SIZE: u32 = 1 << 4;
const FLAG_REX_W: u32 = 1 << 5;
const FLAG_ZEROING: u32 = 1 << 6;
const FLAG_BROADCAST: u32 = 1 << 7;
const FLAG_SAE: u32 = 1 << 8;
/// `notrack` (a 3e prefix on an indirect call or jump): under IBT the
/// target need not start with `endbr64`.
const FLAG_NOTRACK: u32 = 1 << 15;
/// EVEX opmask register k0..k7 in bits 9..12, rounding control in 12..15.
const OPMASK_SHIFT: u32 = 9;
const ROUNDING_SHIFT: u32 = 12;

pub(crate) fn lift(input: &CodeInput<'_>) -> Function {
    match try_lift(input) {
        Ok(function) => function,
        Err(reason) => whole_function(input, reason),
    }
}

/// The sound fallback: the bytes compared exactly, plus what equal bytes
/// would not say. Decoded from the start as far as it goes: every direct
/// branch the assembler resolved to a place outside the function (the same
/// displacement names a different target in another section), and what
/// follows the last instruction when control can run off it. Where the
/// decoding stops short of the end, a branch the assembler resolved may lie
/// beyond: unless the function is alone in its section (where any such
/// branch stays inside it), it refers to its own place, so it equals
/// nothing else.
fn whole_function(input: &CodeInput<'_>, reason: OpaqueReason) -> Function {
    let base = input.section_offset;
    let size = input.bytes.len() as u64;
    let mut instr = Instruction::default();
    let mut extra = Vec::new();
    let mut last = None;
    let mut decoded_to_end = true;
    // The runs of instructions: data in code (a Mach-O jump table) is not
    // decoded, and control never runs into it.
    let mut from = 0u64;
    let mut after_data = false;
    'runs: while from < size {
        let data_at = input
            .data_in_code
            .iter()
            .map(|&d| u64::from(d))
            .find(|&d| d >= from)
            .unwrap_or(size);
        let run = &input.bytes[from as usize..data_at as usize];
        let mut decoder = Decoder::with_ip(64, run, base + from, DecoderOptions::NONE);
        while decoder.can_decode() {
            let at = (decoder.ip() - base) as u32;
            decoder.decode_out(&mut instr);
            if instr.is_invalid() {
                decoded_to_end = false;
                break 'runs;
            }
            let end = at + instr.len() as u32;
            // Padding after a data run (a jump table at a function's end)
            // is reached by nothing: it does not fall through.
            if !(after_data && instr.mnemonic() == Mnemonic::Nop) {
                last = Some(flow_of(&instr, true));
                after_data = false;
            }
            let relocated = input
                .relocs
                .iter()
                .any(|r| r.offset >= at && r.offset < end);
            if let Some(target) = branch_operand(&instr)
                && !relocated
                && !(base..base + size).contains(&target)
            {
                let use_ = if instr.flow_control() == FlowControl::Call {
                    Use::Call
                } else {
                    Use::Jump
                };
                extra.push((
                    at,
                    Ref {
                        target: input.own_section,
                        addend: target as i64,
                        kind: RefKind(elf::R_X86_64_PC32.0),
                        use_,
                    },
                ));
            }
        }
        if data_at == size {
            break;
        }
        // Data: instructions resume where the reader says, else never.
        last = None;
        after_data = true;
        match input
            .code_resumes
            .iter()
            .map(|&r| u64::from(r))
            .find(|&r| r > data_at)
        {
            Some(resume) => from = resume,
            None => break,
        }
    }
    let alone = base == 0 && size == input.section_size;
    if !decoded_to_end && !alone {
        extra.push((
            0,
            Ref {
                target: input.own_section,
                addend: base as i64,
                kind: RefKind::POSITION,
                use_: Use::Address,
            },
        ));
    }
    let mut f = opaque::whole_function_with(&super::X86_64, input, reason, &extra);
    if !decoded_to_end {
        last = Some(Flow::Next);
    }
    crate::lifting::fall_through(&mut f, input, last, RefKind(elf::R_X86_64_PC32.0));
    f
}

/// How control leaves `instr`; `direct_target_inside` says whether a
/// direct branch stays in the function (a conditional branch out of it is
/// still a branch).
fn flow_of(instr: &Instruction, direct_target_inside: bool) -> Flow {
    match instr.flow_control() {
        FlowControl::UnconditionalBranch => Flow::Jump,
        FlowControl::ConditionalBranch => Flow::Branch,
        FlowControl::XbeginXabortXend if direct_target_inside => Flow::Branch,
        FlowControl::IndirectBranch | FlowControl::Return | FlowControl::Exception => Flow::Stop,
        FlowControl::Call | FlowControl::IndirectCall => Flow::Call,
        _ => Flow::Next,
    }
}

/// One decoded instruction and where its constants are.
struct Raw {
    instr: Instruction,
    offsets: ConstantOffsets,
    at: u32,
    /// Index range of the relocations inside the instruction.
    relocs: std::ops::Range<usize>,
}

thread_local! {
    /// The sketch's buffers: which instructions are padding, and what the
    /// block builder needs of each.
    static SKETCH_SCRATCH: std::cell::RefCell<(Vec<bool>, Vec<Decoded>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
    /// Decoding buffers, reused from one function to the next on each thread.
    static SCRATCH: std::cell::RefCell<(Vec<Raw>, Vec<Decoded>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

fn try_lift(input: &CodeInput<'_>) -> Result<Function, OpaqueReason> {
    // Data inside the code (a Mach-O jump table in `__text`): not instructions.
    if let Some(&target) = input.data_in_code.first() {
        return Err(OpaqueReason::DataInCode { target });
    }
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let (raws, decoded) = &mut *scratch;
        raws.clear();
        decoded.clear();
        lift_with(input, raws, decoded)
    })
}

/// Decodes the whole function into `raws` (with the relocations inside
/// each instruction) and `decoded` (what the block builder needs).
fn decode_all(
    input: &CodeInput<'_>,
    raws: &mut Vec<Raw>,
    decoded: &mut Vec<Decoded>,
) -> Result<(), OpaqueReason> {
    decode_each(input, |raw, each| {
        decoded.push(each);
        raws.push(raw);
        Ok(())
    })
}

/// Decodes the whole function, handing `each` every instruction in
/// address order.
fn decode_each(
    input: &CodeInput<'_>,
    mut each: impl FnMut(Raw, Decoded) -> Result<(), OpaqueReason>,
) -> Result<(), OpaqueReason> {
    let mut decoder = Decoder::with_ip(64, input.bytes, input.section_offset, DecoderOptions::NONE);
    let mut cursor = RelocCursor::default();
    while decoder.can_decode() {
        let (raw, decoded) = decode_next(&mut decoder, input, &mut cursor)?;
        each(raw, decoded)?;
    }
    Ok(())
}

/// The instruction `decoder` (positioned on one of `input`'s bytes, its
/// IP the byte's section offset) decodes next, as [`decode_each`] hands it
/// on; `cursor` walks the relocations.
#[inline]
fn decode_next(
    decoder: &mut Decoder<'_>,
    input: &CodeInput<'_>,
    cursor: &mut RelocCursor,
) -> Result<(Raw, Decoded), OpaqueReason> {
    let base = input.section_offset;
    let size = input.bytes.len() as u32;
    let at = (decoder.ip() - base) as u32;
    let instr = decoder.decode();
    if instr.is_invalid() {
        return Err(match decoder.last_error() {
            DecoderError::NoMoreBytes => OpaqueReason::Truncated { at },
            _ => OpaqueReason::UnknownInstruction { at },
        });
    }
    let len = instr.len() as u32;
    let relocs = cursor.relocs_in(input.relocs, at, at + len);
    // Where the displacement and immediates sit matters only to match
    // relocations, and most instructions have none.
    let offsets = if relocs.is_empty() {
        ConstantOffsets::default()
    } else {
        decoder.get_constant_offsets(&instr)
    };
    let branch_is_relocated = offsets.has_immediate()
        && input.relocs[relocs.clone()]
            .iter()
            .any(|r| r.offset == at + offsets.immediate_offset() as u32);
    let target = match branch_operand(&instr) {
        Some(_) if branch_is_relocated => None,
        Some(target) if target >= base && target < base + u64::from(size) => {
            Some((target - base) as u32)
        }
        _ => None,
    };
    let flow = flow_of(&instr, target.is_some());
    Ok((
        Raw {
            instr,
            offsets,
            at,
            relocs,
        },
        Decoded {
            at,
            len,
            flow,
            target,
        },
    ))
}

/// The blocks of the decoded function, in walk order.
fn blocks(input: &CodeInput<'_>, decoded: &[Decoded]) -> Result<cfg::Layout, OpaqueReason> {
    cfg::layout(decoded, &entry_points(input))
}

/// The places past its start something outside the function enters.
fn entry_points(input: &CodeInput<'_>) -> Vec<u32> {
    let size = input.bytes.len() as u32;
    input
        .entry_points
        .iter()
        .copied()
        .filter(|&e| e > 0 && e < size)
        .collect()
}

fn lift_with(
    input: &CodeInput<'_>,
    raws: &mut Vec<Raw>,
    decoded: &mut Vec<Decoded>,
) -> Result<Function, OpaqueReason> {
    let size = input.bytes.len() as u32;
    decode_all(input, raws, decoded)?;
    let layout = blocks(input, decoded)?;
    let mut f = crate::lifting::spare_function(input.arch, size);
    f.insts.reserve(raws.len());
    f.operands.reserve(raws.len() * 2);
    f.mems.reserve(raws.len() / 2);
    f.blocks.reserve(layout.blocks.len());
    // Nothing runs past padding nothing reaches (see `trailing_padding`):
    // its blocks are left out.
    let padding = |index: usize| is_padding(&raws[index]);
    let kept =
        layout.blocks.len() - crate::lifting::trailing_padding(&layout, decoded, padding, size);
    for laid in &layout.blocks[..kept] {
        let first = f.insts.len() as u32;
        let mut pending_nop: Option<(u32, u32)> = None;
        for raw in &raws[laid.insts.clone()] {
            if is_padding(raw) {
                pending_nop.get_or_insert((raw.at, 0)).1 += raw.instr.len() as u32;
                continue;
            }
            if let Some((at, len)) = pending_nop.take() {
                f.push_inst(nop_opcode(), 0, &[], at, len);
            }
            lift_inst(&mut f, raw, input, &layout)?;
        }
        if let Some((at, len)) = pending_nop {
            f.push_inst(nop_opcode(), 0, &[], at, len);
        }
        f.blocks.push(Block {
            insts: first..f.insts.len() as u32,
            succs: laid.succs.clone(),
            reached: laid.reached,
        });
    }
    let padded = kept < layout.blocks.len();
    let last = if padded {
        None
    } else {
        decoded.last().map(|d| d.flow)
    };
    crate::lifting::fall_through(&mut f, input, last, RefKind(elf::R_X86_64_PC32.0));
    Ok(f)
}

/// The function's references and the hash of its operations, without its
/// key (see [`crate::lifting::Sketch`]). `None` wherever the lifter would compare
/// the function byte by byte: a sketch stands only for a function the
/// lifter lifts, and its references are the lift's.
pub(crate) fn sketch(input: &CodeInput<'_>) -> Option<crate::lifting::Sketch> {
    if !input.data_in_code.is_empty() {
        return None;
    }
    SKETCH_SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let (padding, decoded) = &mut *scratch;
        padding.clear();
        decoded.clear();
        sketch_with(input, padding, decoded).ok()
    })
}

/// [`lift_with`] without the key: the same decoding and checks, but only
/// the instructions that can name a place outside the function go through
/// [`lift_inst`] (the others give no reference, and fail only where the
/// blocks would), and none is kept. The blocks are laid out only to find
/// padding at the end.
fn sketch_with(
    input: &CodeInput<'_>,
    padding: &mut Vec<bool>,
    decoded: &mut Vec<Decoded>,
) -> Result<crate::lifting::Sketch, OpaqueReason> {
    let size = input.bytes.len() as u32;
    let mut f = crate::lifting::spare_function(input.arch, size);
    let mut shape = crate::lifting::Shape::default();
    // No instruction lifted here branches inside the function: those give
    // no reference.
    let no_blocks = cfg::Layout::default();
    let mut padding_at_end = false;
    decode_each(input, |raw, each| {
        let mnemonic = raw.instr.mnemonic();
        decoded.push(each);
        // Padding, which the key merges into one `nop` or drops; a `nop`
        // carrying a relocation is lifted (but left out of the shape,
        // which may be coarser than the key, never finer).
        padding_at_end = is_padding(&raw);
        padding.push(padding_at_end);
        if padding_at_end {
            return Ok(());
        }
        if mnemonic != Mnemonic::Nop {
            shape.add(mnemonic as u64);
        }
        if !raw.relocs.is_empty() || names_a_place_outside(&raw.instr, each.target) {
            lift_inst(&mut f, &raw, input, &no_blocks)?;
        }
        Ok(())
    })?;
    let padded = if padding_at_end {
        let layout = blocks(input, decoded)?;
        crate::lifting::trailing_padding(&layout, decoded, |index| padding[index], size) > 0
    } else {
        cfg::check_targets(decoded, &entry_points(input))?;
        false
    };
    let last = if padded {
        None
    } else {
        decoded.last().map(|d| d.flow)
    };
    crate::lifting::fall_through(&mut f, input, last, RefKind(elf::R_X86_64_PC32.0));
    Ok(crate::lifting::Sketch {
        shape: shape.finish(),
        function: f,
    })
}

/// [`sketch`] from `marks` (see [`crate::SketchMarks`]): the same sketch,
/// decoding only the marked instructions and the last. A sketch decodes
/// every instruction only to lift those that hold a relocation or name a
/// place outside the function, to check that branches inside land on
/// instructions, and to see how the code ends; a decode of the same bytes
/// that found the marks checked the branches and the end already. Where
/// the marks leave a relocation out, or something enters the function
/// past its first byte (an entry point the decode did not check), the
/// function is sketched whole.
pub(crate) fn sketch_marked(
    input: &CodeInput<'_>,
    shape: u64,
    marks: &crate::SketchMarks,
) -> Option<crate::lifting::Sketch> {
    if !input.data_in_code.is_empty() {
        return None;
    }
    if !entry_points(input).is_empty() {
        return sketch(input);
    }
    let sketched = match sketch_at_marks(input, marks) {
        Some(function) => function
            .ok()
            .map(|function| crate::lifting::Sketch { shape, function }),
        None => sketch(input),
    };
    #[cfg(debug_assertions)]
    {
        let whole = sketch(input);
        assert_eq!(
            sketched.as_ref().map(|s| (s.shape, &s.function)),
            whole.as_ref().map(|s| (s.shape, &s.function)),
            "a sketch from marks differs from the whole sketch"
        );
    }
    sketched
}

/// The function [`sketch_with`] gives (its references), or why it gives
/// none, lifting only the instructions `marks` names; `None` where they
/// do not cover every relocation.
fn sketch_at_marks(
    input: &CodeInput<'_>,
    marks: &crate::SketchMarks,
) -> Option<Result<Function, OpaqueReason>> {
    let base = input.section_offset;
    let size = input.bytes.len() as u32;
    let mut decoder = Decoder::with_ip(64, input.bytes, base, DecoderOptions::NONE);
    let mut cursor = RelocCursor::default();
    let mut decode_at = |at: u32, cursor: &mut RelocCursor| {
        decoder.set_position(at as usize).ok()?;
        decoder.set_ip(base + u64::from(at));
        // The marks come from a decode of these very bytes.
        decode_next(&mut decoder, input, cursor).ok()
    };
    let mut f = crate::lifting::spare_function(input.arch, size);
    let no_blocks = cfg::Layout::default();
    let mut covered = 0;
    let mut failed = None;
    for &at in &marks.marked {
        let (raw, each) = decode_at(at, &mut cursor)?;
        covered += raw.relocs.len();
        let lifts = !raw.relocs.is_empty() || names_a_place_outside(&raw.instr, each.target);
        if lifts && failed.is_none() {
            failed = lift_inst(&mut f, &raw, input, &no_blocks).err();
        }
    }
    if covered != input.relocs.len() {
        crate::lifting::recycle(f);
        return None;
    }
    if let Some(why) = failed {
        crate::lifting::recycle(f);
        return Some(Err(why));
    }
    let (raw, last) = decode_at(marks.last, &mut RelocCursor::default())?;
    if is_padding(&raw) || last.at + last.len != size {
        crate::lifting::recycle(f);
        return None;
    }
    crate::lifting::fall_through(
        &mut f,
        input,
        Some(last.flow),
        RefKind(elf::R_X86_64_PC32.0),
    );
    Some(Ok(f))
}

/// Whether `instr`, without a relocation, still names a place outside the
/// function (or makes [`lift_inst`] give up on it): a branch out of it
/// (`inside` is the target of one into it), or a memory operand counted
/// from `rip`.
fn names_a_place_outside(instr: &Instruction, inside: Option<u32>) -> bool {
    (0..instr.op_count()).any(|i| match instr.op_kind(i) {
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => inside.is_none(),
        OpKind::FarBranch16 | OpKind::FarBranch32 => true,
        OpKind::Memory => instr.memory_base() == Register::RIP,
        _ => false,
    })
}

/// A `nop` without a relocation: the lifter merges a run of them into one
/// `nop` without operands.
fn is_padding(raw: &Raw) -> bool {
    raw.instr.mnemonic() == Mnemonic::Nop && raw.relocs.is_empty()
}

fn nop_opcode() -> Opcode {
    Opcode(Mnemonic::Nop as u32)
}

/// Walks the function's relocations (sorted by offset) along with the
/// instructions, which come in address order: a search per instruction
/// cost a third of the lifter's own time on large functions.
#[derive(Default)]
struct RelocCursor {
    next: usize,
}

impl RelocCursor {
    /// The relocations whose field starts inside `start..end`; `start` must
    /// not decrease from one call to the next.
    fn relocs_in(&mut self, relocs: &[CodeReloc], start: u32, end: u32) -> std::ops::Range<usize> {
        let before = |limit: u32, from: usize| {
            from + relocs[from..]
                .iter()
                .take_while(|r| r.offset < limit)
                .count()
        };
        self.next = before(start, self.next);
        self.next..before(end, self.next)
    }
}

/// The target of a direct branch, as a section offset.
fn branch_operand(instr: &Instruction) -> Option<u64> {
    (0..instr.op_count())
        .any(|i| {
            matches!(
                instr.op_kind(i),
                OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
            )
        })
        .then(|| instr.near_branch_target())
}

/// Lifts one instruction into `f`.
fn lift_inst(
    f: &mut Function,
    raw: &Raw,
    input: &CodeInput<'_>,
    layout: &cfg::Layout,
) -> Result<(), OpaqueReason> {
    let instr = &raw.instr;
    let relocs = &input.relocs[raw.relocs.clone()];
    let mut used = [false; 4];
    if relocs.len() > used.len() {
        return Err(OpaqueReason::RelocationOutsideOperand {
            at: relocs[used.len()].offset,
        });
    }
    let mut take_reloc = |field_offset: usize, field_size: usize| -> Option<CodeReloc> {
        if field_size == 0 {
            return None;
        }
        let place = raw.at + field_offset as u32;
        let index = relocs
            .iter()
            .position(|r| r.offset == place && usize::from(r.size) == field_size)?;
        used[index] = true;
        Some(relocs[index])
    };
    let next_ip = raw.at + instr.len() as u32;
    let ctx = InstContext {
        input,
        layout,
        next_ip,
    };

    let mut operands: SmallVec<[Operand; 4]> = SmallVec::new();
    let mut immediate_class = 0;
    let mut immediates_seen = 0;
    for i in 0..instr.op_count() {
        let operand = match instr.op_kind(i) {
            OpKind::Register => Operand::Reg(reg(instr.op_register(i))),
            OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => {
                let use_ = if matches!(instr.flow_control(), FlowControl::Call) {
                    Use::Call
                } else {
                    Use::Jump
                };
                match take_reloc(raw.offsets.immediate_offset(), raw.offsets.immediate_size()) {
                    Some(reloc) => Operand::Ref(ctx.push_reloc_ref(f, &reloc, use_)),
                    None => ctx.branch_target(f, instr.near_branch_target(), use_)?,
                }
            }
            OpKind::FarBranch16 | OpKind::FarBranch32 => {
                return Err(OpaqueReason::UnknownInstruction { at: raw.at });
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
                if immediates_seen == 0 {
                    immediate_class = immediate_width_class(kind);
                }
                let (offset, size) = if immediates_seen == 0 {
                    (raw.offsets.immediate_offset(), raw.offsets.immediate_size())
                } else {
                    (
                        raw.offsets.immediate_offset2(),
                        raw.offsets.immediate_size2(),
                    )
                };
                immediates_seen += 1;
                match take_reloc(offset, size) {
                    Some(reloc) => Operand::Ref(ctx.push_reloc_ref(f, &reloc, Use::Address)),
                    None => f.imm(immediate_value(instr, i, kind)),
                }
            }
            OpKind::Memory => {
                let reloc = take_reloc(
                    raw.offsets.displacement_offset(),
                    raw.offsets.displacement_size(),
                );
                Operand::Mem(ctx.memory_operand(f, raw, reloc)?)
            }
            kind => Operand::Mem(f.push_mem(implicit_memory(instr, kind))),
        };
        operands.push(operand);
    }
    for (index, reloc) in relocs.iter().enumerate() {
        if used[index] {
            continue;
        }
        if reloc.size == 0 {
            operands.push(crate::lifting::marker_operand(f, reloc));
            continue;
        }
        return Err(OpaqueReason::RelocationOutsideOperand { at: reloc.offset });
    }

    let opcode = (instr.mnemonic() as u32)
        | ((instr.encoding() as u32) << ENCODING_SHIFT)
        | (immediate_class << IMMEDIATE_SHIFT);
    f.push_inst(
        Opcode(opcode),
        flags(instr, input.bytes, raw.at),
        &operands,
        raw.at,
        instr.len() as u32,
    );
    Ok(())
}

/// What operand lifting needs to know about the instruction's place.
struct InstContext<'a, 'input> {
    input: &'a CodeInput<'input>,
    layout: &'a cfg::Layout,
    /// Function offset just past the instruction.
    next_ip: u32,
}

impl InstContext<'_, '_> {
    /// A reference through a relocation. PC-relative addends are rebased to the
    /// end of the instruction, so the addend says "target + n" whatever the
    /// encoding (`cmpl $imm8, x(%rip)` and `cmpl $imm32, x(%rip)` agree).
    fn push_reloc_ref(&self, f: &mut Function, reloc: &CodeReloc, use_: Use) -> icf_ir::RefId {
        let r_type = elf::RelocationType(reloc.r_type);
        // Modulo 2^64, as the linker computes S + A - P: an absolute symbol's
        // value is any address. For a place in a section the reader's bound
        // (`icf_object::elf::MAX_PLACE_MAGNITUDE` on symbol values and
        // addends) keeps the sum exact; the lifter itself never fails.
        let rebase = i64::from(self.next_ip) - i64::from(reloc.offset);
        let addend = if reloc.pc_relative {
            reloc.addend.wrapping_add(rebase)
        } else {
            reloc.addend
        };
        let got = matches!(
            r_type,
            elf::R_X86_64_GOTPCREL
                | elf::R_X86_64_GOTPCRELX
                | elf::R_X86_64_REX_GOTPCRELX
                | elf::R_X86_64_CODE_4_GOTPCRELX
        );
        if got && reloc.own_addend.wrapping_add(rebase) != 0 {
            // `sym+4@GOTPCREL`: the linker writes the address of a slot next
            // to the symbol's, which depends on how it lays out the GOT.
            return f.push_ref(Ref {
                target: self.input.own_section,
                addend: self.input.section_offset as i64 + i64::from(reloc.offset),
                kind: RefKind::POSITION,
                use_,
            });
        }
        let kind = match r_type {
            // On a branch, a PLT entry and the function are reached alike.
            elf::R_X86_64_PLT32 if matches!(use_, Use::Call | Use::Jump) => elf::R_X86_64_PC32,
            // The relaxable forms only allow the linker to rewrite the load.
            elf::R_X86_64_GOTPCRELX
            | elf::R_X86_64_REX_GOTPCRELX
            | elf::R_X86_64_CODE_4_GOTPCRELX => elf::R_X86_64_GOTPCREL,
            other => other,
        };
        f.push_ref(Ref {
            target: reloc.target,
            addend,
            kind: RefKind(kind.0),
            use_,
        })
    }

    /// A branch resolved by the assembler: a block of this function, or
    /// another place of the same section (gas resolves calls to static
    /// functions of the same section).
    fn branch_target(
        &self,
        f: &mut Function,
        target: u64,
        use_: Use,
    ) -> Result<Operand, OpaqueReason> {
        let base = self.input.section_offset;
        let size = self.input.bytes.len() as u64;
        if target >= base && target < base + size {
            let offset = (target - base) as u32;
            return self
                .layout
                .block_at(offset)
                .map(Operand::Block)
                .ok_or(OpaqueReason::TargetInsideInstruction { target: offset });
        }
        let r = self.resolve_in_section(f, target, use_)?;
        Ok(Operand::Ref(r))
    }

    fn resolve_in_section(
        &self,
        f: &mut Function,
        target: u64,
        use_: Use,
    ) -> Result<icf_ir::RefId, OpaqueReason> {
        if target >= self.input.section_size {
            return Err(OpaqueReason::TargetOutsideSection { target });
        }
        Ok(f.push_ref(Ref {
            target: self.input.own_section,
            addend: target as i64,
            kind: RefKind(elf::R_X86_64_PC32.0),
            use_,
        }))
    }

    /// An explicit memory operand; `reloc` patches its displacement.
    fn memory_operand(
        &self,
        f: &mut Function,
        raw: &Raw,
        reloc: Option<CodeReloc>,
    ) -> Result<icf_ir::MemId, OpaqueReason> {
        let instr = &raw.instr;
        let use_ = memory_use(instr);
        let base = instr.memory_base();
        let disp = if let Some(reloc) = reloc {
            // A load from the target's GOT slot yields the target's address:
            // unless it is called or jumped through, the address escapes.
            let through_got = matches!(
                elf::RelocationType(reloc.r_type),
                elf::R_X86_64_GOTPCREL
                    | elf::R_X86_64_GOTPCRELX
                    | elf::R_X86_64_REX_GOTPCRELX
                    | elf::R_X86_64_CODE_4_GOTPCRELX
            );
            let use_ = if through_got && use_ == Use::Access {
                Use::Address
            } else {
                use_
            };
            Disp::Ref(self.push_reloc_ref(f, &reloc, use_))
        } else if base == Register::RIP {
            let target = instr.ip_rel_memory_address();
            let start = self.input.section_offset;
            if target >= start && target < start + self.input.bytes.len() as u64 {
                // Code read as data, or a code address taken inside the function:
                // its bytes carry meaning the normalized form would lose.
                return Err(OpaqueReason::DataInCode {
                    target: (target - start) as u32,
                });
            }
            Disp::Ref(self.resolve_in_section(f, target, use_)?)
        } else {
            Disp::Imm(instr.memory_displacement64() as i64)
        };
        Ok(f.push_mem(Mem {
            base: reg(base),
            index: reg(instr.memory_index()),
            scale: instr.memory_index_scale() as u8,
            seg: segment(instr),
            size: instr.memory_size() as u16,
            disp,
        }))
    }
}

/// How an instruction uses the address in its memory operand.
fn memory_use(instr: &Instruction) -> Use {
    match instr.mnemonic() {
        Mnemonic::Lea => Use::Address,
        _ => match instr.flow_control() {
            // `call *foo@GOTPCREL(%rip)`: the loaded pointer is called.
            FlowControl::IndirectCall => Use::Call,
            FlowControl::IndirectBranch => Use::Jump,
            _ => Use::Access,
        },
    }
}

/// The implicit memory operands of string instructions (`movs`, `stos`, ...).
fn implicit_memory(instr: &Instruction, kind: OpKind) -> Mem {
    let base = match kind {
        OpKind::MemorySegSI => Register::SI,
        OpKind::MemorySegESI => Register::ESI,
        OpKind::MemorySegRSI => Register::RSI,
        OpKind::MemorySegDI | OpKind::MemoryESDI => Register::DI,
        OpKind::MemorySegEDI | OpKind::MemoryESEDI => Register::EDI,
        _ => Register::RDI,
    };
    Mem {
        base: reg(base),
        index: Reg::NONE,
        scale: 1,
        seg: segment(instr),
        size: instr.memory_size() as u16,
        disp: Disp::Imm(0),
    }
}

/// Only FS and GS mean something in 64-bit mode.
fn segment(instr: &Instruction) -> Reg {
    match instr.segment_prefix() {
        segment @ (Register::FS | Register::GS) => reg(segment),
        _ => Reg::NONE,
    }
}

fn reg(register: Register) -> Reg {
    Reg(register as u16)
}

/// An immediate as the signed value of the width it is extended to, so
/// that `add eax, -1` encoded with an 8-bit and with a 32-bit immediate
/// give the same number (iced-x86 hands the first back sign-extended to 64
/// bits, the second zero-extended).
fn immediate_value(instr: &Instruction, operand: u32, kind: OpKind) -> i64 {
    let raw = instr.immediate(operand);
    match immediate_width_class(kind) {
        // An 8-bit immediate is extended to nothing (a shuffle mask, a shift).
        1 => i64::from(raw as u8),
        2 => i64::from(raw as u16 as i16),
        3 => i64::from(raw as u32 as i32),
        _ => raw as i64,
    }
}

/// The width an immediate is extended to: `imm8` sign-extended to 32 bits and
/// `imm32` are the same operand; a 16-bit push is not a 64-bit one.
fn immediate_width_class(kind: OpKind) -> u32 {
    match kind {
        OpKind::Immediate8 | OpKind::Immediate8_2nd => 1,
        OpKind::Immediate16 | OpKind::Immediate8to16 => 2,
        OpKind::Immediate32 | OpKind::Immediate8to32 => 3,
        _ => 4,
    }
}

/// Prefix and EVEX bits that change what the instruction does.
fn flags(instr: &Instruction, bytes: &[u8], at: u32) -> u32 {
    let mut flags = 0;
    let start = at as usize;
    let end = (start + instr.len()).min(bytes.len());
    for &byte in &bytes[start..end] {
        match byte {
            0xf0 => flags |= FLAG_LOCK,
            0xf2 => flags |= FLAG_REPNE,
            0xf3 => flags |= FLAG_REP,
            0x66 => flags |= FLAG_OPERAND_SIZE,
            0x67 => flags |= FLAG_ADDRESS_SIZE,
            0x3e if matches!(
                instr.flow_control(),
                FlowControl::IndirectBranch | FlowControl::IndirectCall
            ) =>
            {
                flags |= FLAG_NOTRACK;
            }
            0x2e | 0x36 | 0x3e | 0x26 | 0x64 | 0x65 => {}
            rex @ 0x40..=0x4f => {
                if rex & 0x08 != 0 {
                    flags |= FLAG_REX_W;
                }
                break;
            }
            _ => break,
        }
    }
    if instr.zeroing_masking() {
        flags |= FLAG_ZEROING;
    }
    if instr.is_broadcast() {
        flags |= FLAG_BROADCAST;
    }
    if instr.suppress_all_exceptions() {
        flags |= FLAG_SAE;
    }
    let mask = instr.op_mask();
    if mask != Register::None {
        flags |= ((mask as u32 - Register::K0 as u32) & 7) << OPMASK_SHIFT;
    }
    flags |= (instr.rounding_control() as u32 & 7) << ROUNDING_SHIFT;
    flags
}

/// Names for x86-64 IR, in Intel syntax order.
pub(crate) struct X86Syntax;

impl Syntax for X86Syntax {
    fn opcode(&self, op: Opcode, flags: u32) -> String {
        let mnemonic = Mnemonic::try_from((op.0 & 0xffff) as usize).map_or_else(
            |_| format!("op{:#x}", op.0),
            |m| format!("{m:?}").to_lowercase(),
        );
        let mut text = String::new();
        for (bit, prefix) in [
            (FLAG_LOCK, "lock "),
            (FLAG_REP, "rep "),
            (FLAG_REPNE, "repne "),
            (FLAG_NOTRACK, "notrack "),
        ] {
            if flags & bit != 0 {
                text.push_str(prefix);
            }
        }
        text.push_str(&mnemonic);
        // Operand-size, address-size and REX.W prefixes are compared but not
        // printed: the registers already show the width in almost every case.
        let extras: Vec<&str> = [
            (FLAG_ZEROING, "z"),
            (FLAG_BROADCAST, "bcst"),
            (FLAG_SAE, "sae"),
        ]
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|&(_, name)| name)
        .collect();
        if !extras.is_empty() {
            text.push('.');
            text.push_str(&extras.join("."));
        }
        let mask = (flags >> OPMASK_SHIFT) & 7;
        if mask != 0 {
            text.push_str(&format!("{{k{mask}}}"));
        }
        text
    }

    fn reg(&self, reg: Reg) -> String {
        Register::try_from(usize::from(reg.0)).map_or_else(
            |_| format!("reg{}", reg.0),
            |r| format!("{r:?}").to_lowercase(),
        )
    }

    fn ref_kind(&self, kind: RefKind) -> String {
        let name = elf::machine_names(elf::EM_X86_64)
            .r
            .name(elf::RelocationType(kind.0));
        name.map_or_else(
            || format!("reloc{}", kind.0),
            |n| n.trim_start_matches("R_X86_64_").to_string(),
        )
    }

    fn mem_size(&self, size: u16) -> &'static str {
        let bytes = MemorySize::try_from(usize::from(size)).map_or(0, |m| m.size());
        match bytes {
            1 => "byte",
            2 => "word",
            4 => "dword",
            6 => "fword",
            8 => "qword",
            10 => "tbyte",
            16 => "xmmword",
            32 => "ymmword",
            64 => "zmmword",
            _ => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use icf_ir::{Arch, TargetId};

    /// `bytes` as a function alone in its section.
    fn input<'a>(bytes: &'a [u8], relocs: &'a [CodeReloc]) -> CodeInput<'a> {
        CodeInput {
            arch: Arch::X86_64,
            bytes,
            section_offset: 0,
            section_size: bytes.len() as u64,
            relocs,
            entry_points: &[],
            own_section: TargetId(0),
            data_in_code: &[],
            code_resumes: &[],
        }
    }

    fn lift_bytes(bytes: &[u8], relocs: &[CodeReloc]) -> Function {
        lift(&input(bytes, relocs))
    }

    #[test]
    fn padding_after_the_last_instruction_is_not_compared_but_padding_inside_is() {
        // `ret` then a 10-byte `nopw` (a Mach-O atom's trailing padding):
        // the same function as a bare `ret`, and nothing falls through.
        let padded = lift_bytes(&[0xc3, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0], &[]);
        let bare = lift_bytes(&[0xc3], &[]);
        assert_eq!(text(&padded), text(&bare));
        assert!(padded.fall_through.is_none());
        // `jmp +1; nop; ret`: the unreached nop sits before the jump's
        // target, not at the end, and stays.
        let inside = lift_bytes(&[0xeb, 0x01, 0x90, 0xc3], &[]);
        assert_eq!(inside.blocks.len(), 3, "{}", text(&inside));
        // `call` then padding: the call is reached and falls through into
        // the padding, which is then reached too and kept.
        let call = lift_bytes(&[0xe8, 0, 0, 0, 0, 0x90], &[]);
        assert!(call.blocks.iter().all(|b| b.reached), "{}", text(&call));
    }

    fn text(f: &Function) -> String {
        let mut out = String::new();
        icf_ir::print::print_function(
            f,
            &X86Syntax,
            &|t: TargetId, a: i64| icf_ir::print::with_addend(&format!("t{}", t.0), a),
            &mut out,
        );
        out
    }

    #[test]
    fn short_and_long_branches_and_immediates_are_equal() {
        // add eax, 1 (imm8) ; je +0 ; ret   vs   add eax, 1 (imm32) ; je rel32 +0 ; ret
        let short = lift_bytes(&[0x83, 0xc0, 0x01, 0x74, 0x00, 0xc3], &[]);
        let long = lift_bytes(&[0x05, 0x01, 0, 0, 0, 0x0f, 0x84, 0, 0, 0, 0, 0xc3], &[]);
        assert!(!short.has_opaque());
        assert!(ir_equal(&short, &long), "{}\n{}", text(&short), text(&long));
    }

    fn sketch_bytes(bytes: &[u8], relocs: &[CodeReloc]) -> Option<crate::lifting::Sketch> {
        sketch(&input(bytes, relocs))
    }

    /// The references of `f` in an order of their own.
    fn sorted_refs(f: &Function) -> Vec<(u32, i64, u32, Use)> {
        let mut refs: Vec<_> = f
            .refs
            .iter()
            .map(|r| (r.target.0, r.addend, r.kind.0, r.use_))
            .collect();
        refs.sort_by_key(|&(target, addend, kind, use_)| (target, addend, kind, use_ as u8));
        refs
    }

    #[test]
    fn the_linked_code_reader_finds_the_sketchs_shape() {
        let codes: [&[u8]; 6] = [
            &[0x83, 0xc0, 0x01, 0x74, 0x00, 0xc3],
            &[0x05, 0x01, 0, 0, 0, 0x0f, 0x84, 0, 0, 0, 0, 0xc3],
            &[
                0x83, 0xc0, 0x01, 0x74, 0x00, 0xc3, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0,
            ],
            &[0xeb, 0x01, 0xc3, 0x31, 0xc0, 0xc3],
            &[0x90, 0xc3, 0xc3],
            &[0x53, 0xb8, 0x01, 0, 0, 0, 0x5b, 0xc3], // push rbx; mov eax, 1; pop rbx; ret
        ];
        for code in codes {
            let sketched = sketch_bytes(code, &[]).map(|s| s.shape);
            assert!(sketched.is_some(), "{code:02x?}");
            let mut out = Vec::new();
            let read = super::super::linked::references(code, 0x40_1000, &mut out);
            assert_eq!(read.shape, sketched, "{code:02x?}");
        }
        // Bytes that do not decode: no sketch, and no shape.
        let mut out = Vec::new();
        let cut = [0xc3, 0x48, 0x8d];
        assert_eq!(sketch_bytes(&cut, &[]).map(|s| s.shape), None);
        assert_eq!(
            super::super::linked::references(&cut, 0, &mut out).shape,
            None
        );
    }

    /// `bytes` at offset 0x10 of a section of 0x100 bytes.
    fn placed_input<'a>(
        bytes: &'a [u8],
        relocs: &'a [CodeReloc],
        entry_points: &'a [u32],
    ) -> CodeInput<'a> {
        CodeInput {
            arch: Arch::X86_64,
            bytes,
            section_offset: 0x10,
            section_size: 0x100,
            relocs,
            entry_points,
            own_section: TargetId(0),
            data_in_code: &[],
            code_resumes: &[],
        }
    }

    /// The relocation of `call f` (`e8` and a 32-bit field) at the
    /// function's start, `f` being target 7.
    fn call_f() -> CodeReloc {
        CodeReloc {
            offset: 1,
            size: 4,
            mask: u64::MAX,
            r_type: elf::R_X86_64_PLT32.0,
            pc_relative: true,
            target: TargetId(7),
            addend: -4,
            own_addend: -4,
        }
    }

    /// The shape and marks the linked-code reader finds in `code`.
    fn read_marks(code: &[u8]) -> (Option<u64>, Option<crate::SketchMarks>) {
        let scan = super::super::linked::references(code, 0x40_1000, &mut Vec::new());
        (scan.shape, scan.marks)
    }

    #[test]
    fn a_sketch_from_the_readers_marks_is_the_whole_sketch() {
        let call = call_f();
        let same = |input: &CodeInput<'_>, marks: &crate::SketchMarks, shape| {
            let marked = sketch_marked(input, shape, marks);
            let whole = sketch(input);
            assert_eq!(
                marked.as_ref().map(|s| (s.shape, &s.function)),
                whole.as_ref().map(|s| (s.shape, &s.function)),
                "{:02x?}",
                input.bytes
            );
            marked.is_some()
        };
        let code = [
            0xe8, 0xf0, 0x0f, 0, 0, // call f, out of the code (relocated)
            0x48, 0x8d, 0x05, 0x10, 0, 0,
            0, // lea rax, [rip+0x10]: the section, past the code
            0x74, 0x00, // je +0: inside
            0xb8, 0x00, 0x10, 0, 0, // mov eax, 0x1000: an immediate that may be an address
            0x83, 0xc0, 0x01, // add eax, 1
            0x50, // push rax, falling off the end
        ];
        let (shape, marks) = read_marks(&code);
        let (shape, mut marks) = (shape.expect("a shape"), marks.expect("marks"));
        // The call and the `lea` name places outside; the push is the last.
        assert_eq!(&marks.marked[..], &[0, 5]);
        assert_eq!(marks.last, 22);
        let called = [call];
        assert!(same(&placed_input(&code, &called, &[]), &marks, shape));
        // The immediate relocated (a non-PIE program's address), which
        // only the reader knows: until it marks the `mov`, the whole
        // function is sketched.
        let immediate = CodeReloc {
            offset: 15,
            r_type: elf::R_X86_64_32.0,
            pc_relative: false,
            addend: 0,
            own_addend: 0,
            ..call
        };
        let relocated = [call, immediate];
        assert!(same(&placed_input(&code, &relocated, &[]), &marks, shape));
        marks.add(&[0, 14]);
        assert_eq!(&marks.marked[..], &[0, 5, 14]);
        let sketched = sketch_marked(&placed_input(&code, &relocated, &[]), shape, &marks);
        // The call, the `lea`, the immediate and the push running on.
        assert_eq!(sketched.expect("sketched").function.refs.len(), 4);
        assert!(same(&placed_input(&code, &relocated, &[]), &marks, shape));
        // A relocation the marks leave out (`add eax, 1` with its byte
        // relocated): the whole function is sketched.
        let byte = CodeReloc {
            offset: 21,
            size: 1,
            r_type: elf::R_X86_64_8.0,
            ..immediate
        };
        let both = [call, byte];
        let sketched = sketch_marked(&placed_input(&code, &both, &[]), shape, &marks);
        assert_eq!(sketched.expect("sketched").function.refs.len(), 4);
        assert!(same(&placed_input(&code, &both, &[]), &marks, shape));
        // Entered past its start (inside the `lea`: no sketch at all, which
        // only a whole decode sees).
        assert!(!same(&placed_input(&code, &called, &[7]), &marks, shape));
        assert!(same(&placed_input(&code, &called, &[12]), &marks, shape));
        // `lea rax, [rip-7]`, its own first byte, with no relocation: the
        // lifter compares the bytes, and neither sketch stands.
        let own = [0x48, 0x8d, 0x05, 0xf9, 0xff, 0xff, 0xff, 0xc3];
        let (shape, marks) = read_marks(&own);
        let (shape, marks) = (shape.expect("a shape"), marks.expect("marks"));
        assert!(!same(&placed_input(&own, &[], &[]), &marks, shape));
        // No marks where a branch lands inside an instruction
        // (`jmp +1` into `mov eax, imm32`) or the code ends in a `nop`.
        assert_eq!(read_marks(&[0xeb, 0x01, 0xb8, 0xc3, 0, 0, 0]).1, None);
        assert_eq!(read_marks(&[0xc3, 0x90]).1, None);
        assert!(read_marks(&[0xc3]).1.is_some());
    }

    #[test]
    fn equal_keys_have_equal_shapes_and_a_sketch_has_the_lifts_references() {
        let shape = |bytes: &[u8]| sketch_bytes(bytes, &[]).expect("sketched").shape;
        // Encodings: `add eax, 1; je +0; ret` with imm8/rel8 and imm32/rel32.
        let short = [0x83, 0xc0, 0x01, 0x74, 0x00, 0xc3];
        let long = [0x05, 0x01, 0, 0, 0, 0x0f, 0x84, 0, 0, 0, 0, 0xc3];
        assert_eq!(shape(&short), shape(&long));
        // Padding: the same with a 10-byte `nopw` after the `ret`.
        let padded = [
            0x83, 0xc0, 0x01, 0x74, 0x00, 0xc3, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0,
        ];
        assert_eq!(shape(&short), shape(&padded));
        // Block order: `jmp +1; ret; xor eax,eax; ret` against the blocks
        // the other way round, which the walk puts in one order.
        assert_eq!(
            shape(&[0xeb, 0x01, 0xc3, 0x31, 0xc0, 0xc3]),
            shape(&[0x31, 0xc0, 0xeb, 0x01, 0xc3, 0xc3])
        );
        // Another operation is another shape; so is one more.
        assert_ne!(shape(&short), shape(&[0x83, 0xe8, 0x01, 0x74, 0x00, 0xc3]));
        assert_ne!(shape(&[0xc3]), shape(&[0x90, 0xc3, 0xc3]));

        // `call rel32` with a relocation, `lea` counted from rip without
        // one, and code that runs off the end: the lift's references.
        let code = [
            0xe8, 0, 0, 0, 0, // call f
            0x48, 0x8d, 0x05, 0x10, 0, 0, 0, // lea rax, [rip+0x10]
            0x74, 0x00, // je +0 (inside: no reference)
            0x50, // push rax, falling off the end
        ];
        let relocs = [call_f()];
        let input = |section_size| CodeInput {
            arch: Arch::X86_64,
            bytes: &code,
            section_offset: 0,
            section_size,
            relocs: &relocs,
            entry_points: &[],
            own_section: TargetId(0),
            data_in_code: &[],
            code_resumes: &[],
        };
        let lifted = lift(&input(0x40));
        let sketched = sketch(&input(0x40)).expect("sketched").function;
        assert_eq!(lifted.refs.len(), 3, "{}", text(&lifted));
        assert_eq!(sorted_refs(&sketched), sorted_refs(&lifted));
        assert_eq!(
            sketched.fall_through.is_some(),
            lifted.fall_through.is_some()
        );
        // Where the lifter compares bytes, nothing is sketched: the `lea`
        // leaves the section without a relocation.
        assert!(lift(&input(code.len() as u64)).has_opaque());
        assert!(sketch(&input(code.len() as u64)).is_none());
        // Nor a branch into an instruction, nor undecodable bytes.
        assert!(sketch_bytes(&[0xeb, 0x01, 0x05, 0, 0, 0, 0, 0xc3], &[]).is_none());
        assert!(sketch_bytes(&[0x0f, 0xff], &[]).is_none());
    }

    #[test]
    fn push_widths_differ() {
        // push imm8 (64-bit push) vs 66 push imm8 (16-bit push)
        let wide = lift_bytes(&[0x6a, 0x01, 0xc3], &[]);
        let narrow = lift_bytes(&[0x66, 0x6a, 0x01, 0xc3], &[]);
        assert!(!ir_equal(&wide, &narrow));
    }

    #[test]
    fn call_relocation_becomes_a_reference_with_rebased_addend() {
        // call rel32 with R_X86_64_PLT32 foo-4
        let relocs = [CodeReloc {
            offset: 1,
            size: 4,
            mask: 0xffff_ffff,
            r_type: elf::R_X86_64_PLT32.0,
            pc_relative: true,
            target: TargetId(7),
            addend: -4,
            own_addend: -4,
        }];
        let f = lift_bytes(&[0xe8, 0, 0, 0, 0, 0xc3], &relocs);
        assert_eq!(
            f.refs,
            vec![Ref {
                target: TargetId(7),
                addend: 0,
                kind: RefKind(elf::R_X86_64_PC32.0),
                use_: Use::Call
            }]
        );
    }

    #[test]
    fn loading_an_address_from_the_got_takes_it() {
        // mov rax, [rip + foo@GOTPCREL]
        let relocs = [CodeReloc {
            offset: 3,
            size: 4,
            mask: 0xffff_ffff,
            r_type: elf::R_X86_64_REX_GOTPCRELX.0,
            pc_relative: true,
            target: TargetId(3),
            addend: -4,
            own_addend: -4,
        }];
        let f = lift_bytes(&[0x48, 0x8b, 0x05, 0, 0, 0, 0, 0xc3], &relocs);
        assert_eq!(f.refs[0].use_, Use::Address);
        assert_eq!(f.refs[0].kind, RefKind(elf::R_X86_64_GOTPCREL.0));
    }

    #[test]
    fn undecodable_bytes_make_the_function_opaque() {
        // `push es` does not exist in 64-bit mode.
        let f = lift_bytes(&[0x0f, 0x0b, 0x06, 0x90, 0xc3], &[]);
        assert!(f.has_opaque());
        assert_eq!(
            f.opaque[0].reason,
            OpaqueReason::UnknownInstruction { at: 2 }
        );
        assert_eq!(f.coverage(), vec![0..5]);
        let truncated = lift_bytes(&[0x90, 0x0f], &[]);
        assert_eq!(
            truncated.opaque[0].reason,
            OpaqueReason::Truncated { at: 1 }
        );
    }

    #[test]
    fn a_relocation_in_the_opcode_bytes_is_opaque() {
        let relocs = [CodeReloc {
            offset: 0,
            size: 4,
            mask: 0xffff_ffff,
            r_type: elf::R_X86_64_32.0,
            pc_relative: false,
            target: TargetId(1),
            addend: 0,
            own_addend: 0,
        }];
        let f = lift_bytes(&[0x90, 0x90, 0x90, 0x90, 0xc3], &relocs);
        assert_eq!(
            f.opaque[0].reason,
            OpaqueReason::RelocationOutsideOperand { at: 0 }
        );
    }

    /// Structural equality without offsets: what the comparator will decide.
    fn ir_equal(a: &Function, b: &Function) -> bool {
        let strip = |f: &Function| {
            let mut text = String::new();
            for block in &f.blocks {
                text.push_str(&format!("{:?}\n", block.succs));
                for inst in f.block_insts(block) {
                    let mut line = format!("{:?} {:#x} ", inst.op, inst.flags);
                    icf_ir::print::print_inst(
                        f,
                        inst,
                        &X86Syntax,
                        &|t: TargetId, a: i64| icf_ir::print::with_addend(&format!("t{}", t.0), a),
                        &mut line,
                    );
                    text.push_str(&line);
                    text.push('\n');
                }
            }
            text
        };
        strip(a) == strip(b)
    }
}
