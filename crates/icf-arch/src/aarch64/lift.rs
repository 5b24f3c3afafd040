//! AArch64: decode with yaxpeax-arm, keep the encoding, lift what is relative.
//!
//! Every A64 instruction is one 32-bit word, and almost no operation has two
//! encodings a compiler would choose between, so the word itself is the
//! exact, complete description of an instruction: the IR keeps it in
//! [`Inst::flags`](icf_ir::Inst) with every field that depends on where the
//! code sits masked to zero. What is masked becomes an operand:
//!
//! - a field a relocation patches becomes a [`Ref`] (its type is part of the
//!   opcode, since the linker writes different bits for `LDST64_ABS_LO12_NC`
//!   and `LDST32_ABS_LO12_NC`);
//! - an `adrp` and the `add`/`ldr`/`str` that complete its address share one
//!   [`Ref`], whose use is what the pair does with the address: `add` takes
//!   it, a load or store only accesses it, a GOT load yields it;
//! - a branch (`b`, `bl`, `b.cond`, `cbz`, `tbz`) or an `adr` resolved by the
//!   assembler becomes a block of the function, or a reference to its own
//!   section when the target lies outside the function.
//!
//! The opcode is the decoder's operation (`ldr`, `b.cond`...) plus the
//! relocation type, so the structural hash groups functions equal up to
//! registers and constants, for the near-duplicate report.
//!
//! What cannot be lifted is handled soundly. An `adr` to the function's own
//! code (a jump-table base) makes the layout matter; data in code (a `$d`
//! mapping symbol, or a literal load from the function's own bytes), a
//! relocation that is not an instruction field, or a branch into nowhere
//! makes the whole function opaque; an `adrp` without a
//! relocation depends on its own address, so it refers to its own place and
//! equals nothing else. A word the decoder does not know (new extensions) is
//! still compared exactly, marked opaque. Even in an opaque function, a
//! branch the assembler resolved to a place outside the function is kept as
//! a reference: equal bytes there would name different targets.

use super::fields::{IMM14, IMM19, IMM21, IMM26};
use crate::cfg::{self, Decoded, Flow};
use crate::opaque;
use icf_ir::print::Syntax;
use icf_ir::{
    Block, CodeInput, CodeReloc, Function, OpaqueReason, OpaqueRun, Opcode, Operand, Ref, RefId,
    RefKind, Reg, TargetId, Use,
};
use object::elf;
use smallvec::SmallVec;
use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::{self, InstDecoder};

/// Opcode layout: the decoder's operation in bits 0..16, the relocation type in 16..32.
const RELOC_SHIFT: u32 = 16;
/// The operation of a word the decoder does not know.
const UNKNOWN_OPERATION: u32 = 0xffff;

pub(crate) fn lift(input: &CodeInput<'_>) -> Function {
    match try_lift(input) {
        Ok(function) => function,
        Err(reason) => whole_function(input, reason),
    }
}

/// What a word does with the program counter.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum PcRelative {
    /// `b`: an unconditional jump.
    Jump,
    /// `bl`: a call.
    Call,
    /// `b.cond`, `bc.cond`, `cbz`, `cbnz`, `tbz`, `tbnz`.
    Branch,
    /// `adr`: the address of a byte.
    Adr,
    /// `adrp`: the address of a 4 KiB page.
    Adrp,
    /// `ldr`/`ldrsw`/`prfm` (literal): a load from a PC-relative address.
    Literal,
}

/// The PC-relative class of `word`, the offset it encodes, and the bits of
/// the offset field.
pub(super) fn pc_relative(word: u32) -> Option<(PcRelative, i64, u32)> {
    let field = |shift: u32, bits: u32| -> i64 {
        let raw = (word >> shift) & ((1 << bits) - 1);
        // Sign-extend a `bits`-wide field.
        i64::from((raw << (32 - bits)) as i32 >> (32 - bits))
    };
    let adr_immediate = || (field(5, 19) << 2) | i64::from((word >> 29) & 3);
    match word {
        w if w & 0xfc00_0000 == 0x1400_0000 => Some((PcRelative::Jump, field(0, 26) << 2, IMM26)),
        w if w & 0xfc00_0000 == 0x9400_0000 => Some((PcRelative::Call, field(0, 26) << 2, IMM26)),
        w if w & 0xff00_0000 == 0x5400_0000 => Some((PcRelative::Branch, field(5, 19) << 2, IMM19)),
        w if w & 0x7e00_0000 == 0x3400_0000 => Some((PcRelative::Branch, field(5, 19) << 2, IMM19)),
        w if w & 0x7e00_0000 == 0x3600_0000 => Some((PcRelative::Branch, field(5, 14) << 2, IMM14)),
        w if w & 0x9f00_0000 == 0x1000_0000 => Some((PcRelative::Adr, adr_immediate(), IMM21)),
        w if w & 0x9f00_0000 == 0x9000_0000 => {
            Some((PcRelative::Adrp, adr_immediate() << 12, IMM21))
        }
        w if w & 0x3b00_0000 == 0x1800_0000 => {
            Some((PcRelative::Literal, field(5, 19) << 2, IMM19))
        }
        _ => None,
    }
}

/// How control leaves a word that is not PC-relative.
fn register_flow(word: u32) -> Flow {
    // Unconditional branch (register): `br`, `blr`, `ret`, `eret` and their
    // pointer-authenticating forms; opc in bits 21..25.
    if word & 0xfe00_0000 == 0xd600_0000 {
        let opc = (word >> 21) & 0xf;
        return if opc & 0b0111 == 0b0001 {
            Flow::Call // `blr`: a call returns
        } else {
            Flow::Stop
        };
    }
    // `brk`, `hlt` and `udf` trap.
    if word & 0xffe0_001f == 0xd420_0000 || word & 0xffe0_001f == 0xd440_0000 {
        return Flow::Stop;
    }
    if word & 0xffff_0000 == 0 {
        return Flow::Stop;
    }
    Flow::Next
}

/// Which half of an address pair a relocation is: the page (`adrp`) or the
/// low 12 bits (`add`, `ldr`, `str`), of the symbol or of its GOT slot.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Pair {
    Page,
    Low,
    GotPage,
    GotLow,
}

fn pair_half(r_type: u32) -> Option<Pair> {
    match elf::RelocationType(r_type) {
        elf::R_AARCH64_ADR_PREL_PG_HI21 | elf::R_AARCH64_ADR_PREL_PG_HI21_NC => Some(Pair::Page),
        elf::R_AARCH64_ADD_ABS_LO12_NC
        | elf::R_AARCH64_LDST8_ABS_LO12_NC
        | elf::R_AARCH64_LDST16_ABS_LO12_NC
        | elf::R_AARCH64_LDST32_ABS_LO12_NC
        | elf::R_AARCH64_LDST64_ABS_LO12_NC
        | elf::R_AARCH64_LDST128_ABS_LO12_NC => Some(Pair::Low),
        elf::R_AARCH64_ADR_GOT_PAGE => Some(Pair::GotPage),
        elf::R_AARCH64_LD64_GOT_LO12_NC => Some(Pair::GotLow),
        _ => None,
    }
}

/// One pair: `adrp` and the instructions completing its address share a reference.
#[derive(Copy, Clone, Debug)]
struct PairRef {
    target: TargetId,
    addend: i64,
    got: bool,
    use_: Use,
    id: Option<RefId>,
    /// Which halves the function holds: 1 the page, 2 the low 12 bits.
    halves: u8,
}

/// One word of the function and what the first pass learned about it.
#[derive(Copy, Clone, Debug)]
struct Word {
    word: u32,
    at: u32,
    /// The relocation patching the word, as an index into the input's.
    reloc: Option<usize>,
    /// A marker relocation (`R_AARCH64_TLSDESC_CALL`) riding on the word.
    marker: Option<usize>,
}

fn try_lift(input: &CodeInput<'_>) -> Result<Function, OpaqueReason> {
    let size = input.bytes.len() as u32;
    if let Some(&target) = input.data_in_code.first() {
        return Err(OpaqueReason::DataInCode { target });
    }
    if size % 4 != 0 {
        return Err(OpaqueReason::Truncated { at: size & !3 });
    }
    let mut words: Vec<Word> = input
        .bytes
        .chunks_exact(4)
        .enumerate()
        .map(|(index, bytes)| Word {
            word: u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            at: index as u32 * 4,
            reloc: None,
            marker: None,
        })
        .collect();
    for (index, reloc) in input.relocs.iter().enumerate() {
        let slot = words
            .get_mut((reloc.offset / 4) as usize)
            .filter(|_| reloc.offset % 4 == 0);
        let Some(word) = slot else {
            return Err(OpaqueReason::RelocationOutsideOperand { at: reloc.offset });
        };
        // A relocation writing all 32 bits is data in code (`.word sym`).
        let instruction_field = reloc.size == 4 && reloc.mask != u64::from(u32::MAX);
        match reloc.size {
            0 if word.marker.is_none() => word.marker = Some(index),
            4 if instruction_field && word.reloc.is_none() => word.reloc = Some(index),
            // Data in code (`.xword sym`), or two relocations on one word.
            _ => return Err(OpaqueReason::RelocationOutsideOperand { at: reloc.offset }),
        }
    }

    // Blocks: branches resolved by the assembler, and `adr` targets inside the function.
    let mut decoded = Vec::with_capacity(words.len());
    let mut entry_points: Vec<u32> = input
        .entry_points
        .iter()
        .copied()
        .filter(|&e| e > 0 && e < size)
        .collect();
    let mut layout_sensitive = false;
    for word in &words {
        let relative = pc_relative(word.word);
        let inside = |offset: i64| -> Option<u32> {
            let target = i64::from(word.at) + offset;
            (0..i64::from(size))
                .contains(&target)
                .then_some(target as u32)
        };
        let (flow, target) = match relative {
            Some((class, offset, _)) if word.reloc.is_none() => {
                let target = inside(offset);
                match class {
                    PcRelative::Jump => (Flow::Jump, target),
                    PcRelative::Branch => (Flow::Branch, target),
                    PcRelative::Call => (Flow::Call, None),
                    PcRelative::Adr => {
                        if let Some(target) = target {
                            // A jump-table base: the code computes its own addresses.
                            entry_points.push(target);
                            layout_sensitive = true;
                        }
                        (Flow::Next, None)
                    }
                    PcRelative::Literal => {
                        if let Some(target) = target {
                            return Err(OpaqueReason::DataInCode { target });
                        }
                        (Flow::Next, None)
                    }
                    PcRelative::Adrp => (Flow::Next, None),
                }
            }
            Some((PcRelative::Jump, _, _)) => (Flow::Jump, None),
            Some((PcRelative::Branch, _, _)) => (Flow::Branch, None),
            Some((PcRelative::Call, _, _)) => (Flow::Call, None),
            Some(_) => (Flow::Next, None),
            None => (register_flow(word.word), None),
        };
        decoded.push(Decoded {
            at: word.at,
            len: 4,
            flow,
            target,
        });
    }
    entry_points.sort_unstable();
    entry_points.dedup();
    let layout = cfg::layout(&decoded, &entry_points)?;

    let mut pairs = pair_uses(input, &words);
    let decoder = InstDecoder::default();
    // Exact sizes: most words have no operand at all.
    let mut f = crate::lifting::spare_function(input.arch, size);
    f.insts.reserve_exact(words.len());
    f.blocks.reserve_exact(layout.blocks.len());
    let operands = words
        .iter()
        .filter(|w| w.reloc.is_some() || w.marker.is_some() || pc_relative(w.word).is_some())
        .count();
    f.operands.reserve_exact(operands);
    f.refs.reserve_exact(operands);
    for laid in &layout.blocks {
        let first = f.insts.len() as u32;
        for word in &words[laid.insts.clone()] {
            let decoded = decode(&decoder, word.word);
            if decoded
                .as_ref()
                .is_some_and(|i| has_pc_offset(i) && pc_relative(word.word).is_none())
            {
                // A PC-relative form this lifter does not classify: compare offsets.
                layout_sensitive = true;
            }
            lift_word(&mut f, input, &layout, &mut pairs, word, decoded.as_ref())?;
        }
        f.blocks.push(Block {
            insts: first..f.insts.len() as u32,
            succs: laid.succs.clone(),
            reached: laid.reached,
        });
    }
    f.layout_sensitive = layout_sensitive;
    let last = decoded.last().map(|d: &Decoded| d.flow);
    crate::lifting::fall_through(&mut f, input, last, RefKind(elf::R_AARCH64_JUMP26.0));
    Ok(f)
}

/// How many of `code`'s words decode (see
/// [`crate::Architecture::count_instructions`]).
pub(super) fn count_instructions(code: &[u8]) -> usize {
    let decoder = InstDecoder::default();
    code.chunks_exact(4)
        .filter(|word| {
            decode(
                &decoder,
                u32::from_le_bytes([word[0], word[1], word[2], word[3]]),
            )
            .is_some()
        })
        .count()
}

fn decode(decoder: &InstDecoder, word: u32) -> Option<a64::Instruction> {
    let bytes = word.to_le_bytes();
    let mut reader = U8Reader::new(&bytes);
    decoder.decode(&mut reader).ok()
}

fn has_pc_offset(instr: &a64::Instruction) -> bool {
    instr
        .operands
        .iter()
        .any(|o| matches!(o, a64::Operand::PCOffset(_)))
}

/// The address pairs of the function, each with the use its instructions
/// make of the address: an `add` completing it takes the address, a load or
/// store only accesses it, a GOT slot yields it, and an `adrp` that nothing
/// completes lets it escape.
fn pair_uses(input: &CodeInput<'_>, words: &[Word]) -> Vec<PairRef> {
    let mut pairs: Vec<PairRef> = Vec::new();
    let mut completed: Vec<Option<Use>> = Vec::new();
    for word in words {
        let Some(reloc) = word.reloc.map(|i| &input.relocs[i]) else {
            continue;
        };
        let Some(half) = pair_half(reloc.r_type) else {
            continue;
        };
        let got = matches!(half, Pair::GotPage | Pair::GotLow);
        let index = match pairs
            .iter()
            .position(|p| p.target == reloc.target && p.addend == reloc.addend && p.got == got)
        {
            Some(index) => index,
            None => {
                pairs.push(PairRef {
                    target: reloc.target,
                    addend: reloc.addend,
                    got,
                    use_: Use::Address,
                    id: None,
                    halves: 0,
                });
                completed.push(None);
                pairs.len() - 1
            }
        };
        pairs[index].halves |= match half {
            Pair::Page | Pair::GotPage => 1,
            Pair::Low | Pair::GotLow => 2,
        };
        let use_ = match half {
            Pair::Page | Pair::GotPage => continue,
            Pair::Low if !is_add_immediate(word.word) => Use::Access,
            Pair::Low | Pair::GotLow => Use::Address,
        };
        completed[index] = completed[index].max(Some(use_));
    }
    for (pair, use_) in pairs.iter_mut().zip(completed) {
        pair.use_ = use_.unwrap_or(Use::Address);
    }
    pairs
}

/// `add` (immediate), 32 or 64 bits.
fn is_add_immediate(word: u32) -> bool {
    word & 0x7f80_0000 == 0x1100_0000
}

/// Lifts one word into `f`.
fn lift_word(
    f: &mut Function,
    input: &CodeInput<'_>,
    layout: &cfg::Layout,
    pairs: &mut [PairRef],
    word: &Word,
    decoded: Option<&a64::Instruction>,
) -> Result<(), OpaqueReason> {
    let mut operands: SmallVec<[Operand; 2]> = SmallVec::new();
    let mut masked = word.word;
    let mut reloc_type = 0;
    if let Some(reloc) = word.reloc.map(|i| &input.relocs[i]) {
        masked &= !(reloc.mask as u32);
        reloc_type = reloc.r_type;
        operands.push(Operand::Ref(reloc_ref(f, input, pairs, reloc, word)));
    } else if let Some((class, offset, field)) = pc_relative(word.word) {
        masked &= !field;
        operands.push(resolved_target(f, input, layout, word, class, offset)?);
    }
    if let Some(marker) = word.marker.map(|i| &input.relocs[i]) {
        operands.push(crate::lifting::marker_operand(f, marker));
    }
    let operation = match decoded {
        Some(instr) => u32::from(operation_number(&instr.opcode)),
        None => {
            // Compared exactly all the same (the word is the flags); marked
            // so that statistics count it.
            let run = f.push_opaque(OpaqueRun {
                bytes: word.word.to_le_bytes().into(),
                reason: OpaqueReason::UnknownInstruction { at: word.at },
            });
            operands.push(Operand::Opaque(run));
            UNKNOWN_OPERATION
        }
    };
    f.push_inst(
        Opcode(operation | (reloc_type << RELOC_SHIFT)),
        masked,
        &operands,
        word.at,
        4,
    );
    Ok(())
}

/// The decoder's operation number: `Opcode` is `repr(u16)`, so its tag comes first.
fn operation_number(opcode: &a64::Opcode) -> u16 {
    // SAFETY: `a64::Opcode` is `#[repr(u16)]`; for such an enum, with or
    // without fields, the layout starts with the `u16` discriminant
    // (RFC 2195, "primitive representation"), so reading it is defined.
    unsafe { *(opcode as *const a64::Opcode).cast::<u16>() }
}

/// The reference a relocated word makes: one shared by an address pair, or its own.
fn reloc_ref(
    f: &mut Function,
    input: &CodeInput<'_>,
    pairs: &mut [PairRef],
    reloc: &CodeReloc,
    word: &Word,
) -> RefId {
    let at = word.at;
    let word = word.word;
    // What the linker writes into a GOT reference with an addend is a slot
    // next to the symbol's, which depends on how it lays out the GOT; half
    // an address pair (its other half in another function) makes an address
    // only with that other half. Either names this very place.
    let got_addend = pair_half(reloc.r_type)
        .is_some_and(|half| matches!(half, Pair::GotPage | Pair::GotLow))
        && reloc.own_addend != 0;
    let lone = pair_half(reloc.r_type).is_some_and(|half| {
        let got = matches!(half, Pair::GotPage | Pair::GotLow);
        pairs.iter().any(|p| {
            p.target == reloc.target && p.addend == reloc.addend && p.got == got && p.halves != 3
        })
    });
    if got_addend || lone {
        return f.push_ref(Ref {
            target: input.own_section,
            addend: input.section_offset as i64 + i64::from(at),
            kind: RefKind::POSITION,
            use_: Use::Address,
        });
    }
    if let Some(half) = pair_half(reloc.r_type) {
        let got = matches!(half, Pair::GotPage | Pair::GotLow);
        if let Some(pair) = pairs
            .iter_mut()
            .find(|p| p.target == reloc.target && p.addend == reloc.addend && p.got == got)
        {
            if let Some(id) = pair.id {
                return id;
            }
            let kind = if got {
                elf::R_AARCH64_ADR_GOT_PAGE
            } else {
                elf::R_AARCH64_ADR_PREL_PG_HI21
            };
            let id = f.push_ref(Ref {
                target: reloc.target,
                addend: reloc.addend,
                kind: RefKind(kind.0),
                use_: pair.use_,
            });
            pair.id = Some(id);
            return id;
        }
    }
    let r_type = elf::RelocationType(reloc.r_type);
    let (kind, use_) = match r_type {
        // `b` and `bl` differ in the word; the linker treats both relocations alike.
        elf::R_AARCH64_CALL26 | elf::R_AARCH64_JUMP26 => (
            elf::R_AARCH64_CALL26,
            if word & 0x8000_0000 != 0 {
                Use::Call
            } else {
                Use::Jump
            },
        ),
        elf::R_AARCH64_CONDBR19 | elf::R_AARCH64_TSTBR14 => (r_type, Use::Jump),
        elf::R_AARCH64_LD_PREL_LO19 => (r_type, Use::Access),
        elf::R_AARCH64_TLSDESC_ADR_PAGE21
        | elf::R_AARCH64_TLSIE_ADR_GOTTPREL_PAGE21
        | elf::R_AARCH64_TLSGD_ADR_PAGE21
        | elf::R_AARCH64_TLSLD_ADR_PAGE21
        | elf::R_AARCH64_TLSDESC_LD64_LO12
        | elf::R_AARCH64_TLSDESC_ADD_LO12
        | elf::R_AARCH64_TLSIE_LD64_GOTTPREL_LO12_NC
        | elf::R_AARCH64_TLSGD_ADD_LO12_NC
        | elf::R_AARCH64_TLSLD_ADD_LO12_NC => (r_type, Use::Access),
        // The other thread-local relocations (512..=573 in the ELF ABI for
        // AArch64) compute offsets in the TLS block; no address escapes.
        other if (512..=573).contains(&other.0) => (other, Use::Access),
        // `adr`, a GOT literal load, MOVW and anything else materializes the address.
        other => (other, Use::Address),
    };
    f.push_ref(Ref {
        target: reloc.target,
        addend: reloc.addend,
        kind: RefKind(kind.0),
        use_,
    })
}

/// A PC-relative field the assembler resolved: a block of this function, or
/// a place of its own section.
fn resolved_target(
    f: &mut Function,
    input: &CodeInput<'_>,
    layout: &cfg::Layout,
    word: &Word,
    class: PcRelative,
    offset: i64,
) -> Result<Operand, OpaqueReason> {
    let size = input.bytes.len() as i64;
    let target = i64::from(word.at) + offset;
    let (kind, use_) = match class {
        PcRelative::Jump | PcRelative::Branch => (elf::R_AARCH64_JUMP26, Use::Jump),
        PcRelative::Call => (elf::R_AARCH64_CALL26, Use::Call),
        PcRelative::Adr => (elf::R_AARCH64_ADR_PREL_LO21, Use::Address),
        PcRelative::Literal => (elf::R_AARCH64_LD_PREL_LO19, Use::Access),
        PcRelative::Adrp => {
            // The page depends on where this very instruction is linked: it
            // refers to its own place, and so equals no other instruction.
            let r = f.push_ref(Ref {
                target: input.own_section,
                addend: input.section_offset as i64 + i64::from(word.at),
                kind: RefKind::POSITION,
                use_: Use::Address,
            });
            return Ok(Operand::Ref(r));
        }
    };
    if (0..size).contains(&target) && class != PcRelative::Call {
        return layout.block_at(target as u32).map(Operand::Block).ok_or(
            OpaqueReason::TargetInsideInstruction {
                target: target as u32,
            },
        );
    }
    let in_section = input.section_offset as i64 + target;
    if in_section < 0 || in_section as u64 >= input.section_size {
        return Err(OpaqueReason::TargetOutsideSection {
            target: in_section as u64,
        });
    }
    let r = f.push_ref(Ref {
        target: input.own_section,
        addend: in_section,
        kind: RefKind(kind.0),
        use_,
    });
    Ok(Operand::Ref(r))
}

/// The sound fallback: the bytes compared exactly, plus a reference for
/// every branch the assembler resolved to a place outside the function
/// (equal bytes there name different targets), every `adrp` without a
/// relocation (its page depends on its own address), and what follows the
/// last word when control can run off it.
fn whole_function(input: &CodeInput<'_>, reason: OpaqueReason) -> Function {
    let size = input.bytes.len();
    let mut extra = Vec::new();
    let relocated = |at: u32| input.relocs.iter().any(|r| r.offset == at && r.size != 0);
    let mut last = None;
    for (index, bytes) in input.bytes.chunks_exact(4).enumerate() {
        let at = index as u32 * 4;
        let word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let Some((class, offset, _)) = pc_relative(word) else {
            last = Some(register_flow(word));
            continue;
        };
        last = Some(match class {
            PcRelative::Jump => Flow::Jump,
            PcRelative::Branch => Flow::Branch,
            PcRelative::Call => Flow::Call,
            _ => Flow::Next,
        });
        if relocated(at) {
            continue;
        }
        let target = i64::from(at) + offset;
        if class == PcRelative::Adrp {
            extra.push((
                at,
                Ref {
                    target: input.own_section,
                    addend: input.section_offset as i64 + i64::from(at),
                    kind: RefKind::POSITION,
                    use_: Use::Address,
                },
            ));
        } else if !(0..size as i64).contains(&target) {
            extra.push((
                at,
                Ref {
                    target: input.own_section,
                    addend: input.section_offset as i64 + target,
                    kind: RefKind(elf::R_AARCH64_JUMP26.0),
                    use_: Use::Address,
                },
            ));
        }
    }
    // Bytes past the last whole word leave the end unknown: assume the worst.
    if size % 4 != 0 {
        last = Some(Flow::Next);
    }
    let mut f = opaque::whole_function_with(&super::Aarch64, input, reason, &extra);
    crate::lifting::fall_through(&mut f, input, last, RefKind(elf::R_AARCH64_JUMP26.0));
    f
}

/// Names for AArch64 IR: the decoder's disassembly of the masked word.
pub(crate) struct Aarch64Syntax;

impl Syntax for Aarch64Syntax {
    fn opcode(&self, op: Opcode, flags: u32) -> String {
        let decoder = InstDecoder::default();
        let mut text = match decode(&decoder, flags) {
            Some(instr) => {
                // The PC-relative operand is the IR's block or reference, printed after.
                let mut text = instr.opcode.to_string();
                let shown: Vec<String> = instr
                    .operands
                    .iter()
                    .filter(|o| !matches!(o, a64::Operand::Nothing | a64::Operand::PCOffset(_)))
                    .map(ToString::to_string)
                    .collect();
                if !shown.is_empty() {
                    text.push(' ');
                    text.push_str(&shown.join(", "));
                }
                text
            }
            None => format!(".inst {flags:#010x}"),
        };
        // Before the block or reference the IR prints next: `cbz x0, bb3`,
        // `adrp x8, :adr_prel_pg_hi21: table`.
        let r_type = op.0 >> RELOC_SHIFT;
        let has_operands = text.contains(' ');
        if r_type != 0 {
            let kind = self.ref_kind(RefKind(r_type)).to_lowercase();
            text.push_str(if has_operands { ", :" } else { " :" });
            text.push_str(&kind);
            text.push(':');
        } else if has_operands && pc_relative(flags).is_some() {
            text.push(',');
        }
        text
    }

    fn reg(&self, reg: Reg) -> String {
        format!("r{}", reg.0)
    }

    fn ref_kind(&self, kind: RefKind) -> String {
        elf::machine_names(elf::EM_AARCH64)
            .r
            .name(elf::RelocationType(kind.0))
            .map_or_else(
                || format!("reloc{}", kind.0),
                |n| n.trim_start_matches("R_AARCH64_").to_string(),
            )
    }

    fn mem_size(&self, _size: u16) -> &'static str {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use icf_ir::{Arch, BlockId, TargetId};

    fn words(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn lift_words(code: &[u32], relocs: &[CodeReloc]) -> Function {
        let bytes = words(code);
        lift(&CodeInput {
            arch: Arch::Aarch64,
            bytes: &bytes,
            section_offset: 0x100,
            section_size: 0x1000,
            relocs,
            entry_points: &[],
            own_section: TargetId(0),
            data_in_code: &[],
            code_resumes: &[],
        })
    }

    fn reloc(offset: u32, r_type: elf::RelocationType, target: u32) -> CodeReloc {
        let info =
            super::super::elf_reloc::info(r_type.0).expect("a relocation type the reader knows");
        CodeReloc {
            offset,
            size: info.size,
            mask: info.mask,
            r_type: r_type.0,
            pc_relative: false,
            target: TargetId(target),
            addend: 0,
            own_addend: 0,
        }
    }

    const RET: u32 = 0xd65f_03c0;
    const ADRP_X0: u32 = 0x9000_0000;
    const ADD_X0_X0: u32 = 0x9100_0000;
    const LDR_X0_X0: u32 = 0xf940_0000;
    const BL: u32 = 0x9400_0000;

    #[test]
    fn an_adrp_pair_is_one_reference_with_the_use_of_its_completion() {
        let loaded = lift_words(
            &[ADRP_X0, LDR_X0_X0, RET],
            &[
                reloc(0, elf::R_AARCH64_ADR_PREL_PG_HI21, 5),
                reloc(4, elf::R_AARCH64_LDST64_ABS_LO12_NC, 5),
            ],
        );
        assert!(!loaded.has_opaque());
        assert_eq!(loaded.refs.len(), 1, "{:?}", loaded.refs);
        assert_eq!(loaded.refs[0].use_, Use::Access);
        let taken = lift_words(
            &[ADRP_X0, ADD_X0_X0, RET],
            &[
                reloc(0, elf::R_AARCH64_ADR_PREL_PG_HI21, 5),
                reloc(4, elf::R_AARCH64_ADD_ABS_LO12_NC, 5),
            ],
        );
        assert_eq!(taken.refs.len(), 1);
        assert_eq!(taken.refs[0].use_, Use::Address);
        // Through the GOT the address itself is loaded.
        let got = lift_words(
            &[ADRP_X0, LDR_X0_X0, RET],
            &[
                reloc(0, elf::R_AARCH64_ADR_GOT_PAGE, 5),
                reloc(4, elf::R_AARCH64_LD64_GOT_LO12_NC, 5),
            ],
        );
        assert_eq!(got.refs.len(), 1);
        assert_eq!(got.refs[0].use_, Use::Address);
    }

    #[test]
    fn calls_and_tail_calls_through_relocations() {
        let b = 0x1400_0000;
        let f = lift_words(
            &[BL, b],
            &[
                reloc(0, elf::R_AARCH64_CALL26, 3),
                reloc(4, elf::R_AARCH64_JUMP26, 4),
            ],
        );
        let uses: Vec<(u32, Use, u32)> = f
            .refs
            .iter()
            .map(|r| (r.target.0, r.use_, r.kind.0))
            .collect();
        let call26 = elf::R_AARCH64_CALL26.0;
        assert_eq!(uses, vec![(3, Use::Call, call26), (4, Use::Jump, call26)]);
        // Tail call: the block ends, nothing follows.
        assert_eq!(f.blocks.len(), 1);
    }

    #[test]
    fn branches_inside_the_function_are_blocks() {
        // cbz x0, +8 ; ret ; ret
        let f = lift_words(&[0xb400_0040, RET, RET], &[]);
        assert!(!f.has_opaque());
        assert_eq!(f.blocks.len(), 3);
        // The walk visits the fall-through first: the target is the third block.
        assert_eq!(f.inst_operands(&f.insts[0]), &[Operand::Block(BlockId(2))]);
        // The offset field is masked: the block operand carries it.
        assert_eq!(f.insts[0].flags, 0xb400_0000);
    }

    #[test]
    fn an_adr_to_own_code_makes_the_layout_matter() {
        // adr x0, +8 ; br x0 ; ret
        let f = lift_words(&[0x1000_0040, 0xd61f_0000, RET], &[]);
        assert!(f.layout_sensitive);
        assert!(!f.has_opaque());
        assert_eq!(f.inst_operands(&f.insts[0]), &[Operand::Block(BlockId(1))]);
    }

    #[test]
    fn a_literal_load_from_own_bytes_is_data_in_code() {
        // ldr x0, +8 ; ret ; .word 42
        let f = lift_words(&[0x5800_0040, RET, 42], &[]);
        assert_eq!(f.opaque[0].reason, OpaqueReason::DataInCode { target: 8 });
        assert_eq!(f.coverage(), vec![0..12]);
    }

    #[test]
    fn resolved_branches_out_of_the_function_name_their_place_even_when_opaque() {
        // bl -0x100 (section offset 0) ; .xword (data in code) ; ret
        let data = [BL | 0x03ff_ffc0, 0, 0, RET];
        let mut xword = reloc(4, elf::R_AARCH64_ABS64, 9);
        xword.size = 8;
        let f = lift_words(&data, &[xword]);
        assert!(f.has_opaque());
        let places: Vec<(u32, i64)> = f.refs.iter().map(|r| (r.target.0, r.addend)).collect();
        assert_eq!(places, vec![(9, 0), (0, 0)]);
    }

    #[test]
    fn a_data_mapping_symbol_makes_the_function_opaque() {
        let bytes = words(&[RET, 0x1400_0001]);
        let f = lift(&CodeInput {
            arch: Arch::Aarch64,
            bytes: &bytes,
            section_offset: 0,
            section_size: 8,
            relocs: &[],
            entry_points: &[],
            own_section: TargetId(0),
            data_in_code: &[4],
            code_resumes: &[],
        });
        assert_eq!(f.opaque[0].reason, OpaqueReason::DataInCode { target: 4 });
    }

    #[test]
    fn an_adrp_without_relocation_equals_only_itself() {
        let f = lift_words(&[ADRP_X0, RET], &[]);
        assert_eq!(f.refs[0].target, TargetId(0));
        assert_eq!(f.refs[0].addend, 0x100);
    }

    #[test]
    fn a_word_the_decoder_does_not_know_is_compared_exactly() {
        let f = lift_words(&[0x0000_0001 | 0x0400_0000, RET], &[]);
        assert!(f.has_opaque());
        assert_eq!(f.insts.len(), 2);
        assert_eq!(f.insts[0].flags, 0x0400_0001);
    }

    #[test]
    fn the_operation_number_is_the_opcode_tag() {
        // `b.eq` and `b.ne` are one operation; the condition is in the word.
        let eq = operation_number(&a64::Opcode::Bcc(0));
        assert_eq!(eq, operation_number(&a64::Opcode::Bcc(1)));
        assert_ne!(eq, operation_number(&a64::Opcode::ADD));
        assert_ne!(
            operation_number(&a64::Opcode::ADD),
            operation_number(&a64::Opcode::SUB)
        );
        assert_eq!(operation_number(&a64::Opcode::Invalid), 0);
    }

    #[test]
    fn printing_shows_the_disassembly_and_the_reference() {
        let f = lift_words(
            &[ADRP_X0, ADD_X0_X0, 0xb400_0040, RET, RET],
            &[
                reloc(0, elf::R_AARCH64_ADR_PREL_PG_HI21, 5),
                reloc(4, elf::R_AARCH64_ADD_ABS_LO12_NC, 5),
            ],
        );
        let mut out = String::new();
        icf_ir::print::print_function(
            &f,
            &Aarch64Syntax,
            &|t: TargetId, a: i64| icf_ir::print::with_addend(&format!("t{}", t.0), a),
            &mut out,
        );
        assert!(
            out.contains("adrp x0, :adr_prel_pg_hi21: t5 <ADR_PREL_PG_HI21 address>"),
            "{out}"
        );
        assert!(out.contains("cbz x0, bb"), "{out}");
    }
}
