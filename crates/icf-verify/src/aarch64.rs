//! AArch64: decodes 4-byte words with yaxpeax-arm and reduces each to its
//! comparison key, the decoded instruction with pc-relative offsets (and the
//! low 12 bits completing an `adrp`) zeroed, targets set apart. An `adrp`'s
//! register is tracked linearly through the function: the `add` (immediate)
//! or load/store based on it forms one address, page plus offset. Main
//! assumption: the code between a function's start and end is instructions
//! (a word no decoder knows is compared as bytes).

use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Instruction, Opcode, Operand};

use crate::code::{Decoded, Key, Reference, Use};
use crate::image::Image;

/// What must be equal between two AArch64 instructions, targets apart.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct A64Key(Instruction);

impl A64Key {
    pub(crate) fn falls_through(&self) -> bool {
        !matches!(
            self.0.opcode,
            Opcode::B
                | Opcode::BR
                | Opcode::RET
                | Opcode::BL
                | Opcode::BLR
                | Opcode::BRK
                | Opcode::UDF
                | Opcode::ERET
                | Opcode::RETAA
                | Opcode::RETAB
                | Opcode::BRAA
                | Opcode::BRAAZ
                | Opcode::BRAB
                | Opcode::BRABZ
        )
    }
}

fn decode_word(decoder: &InstDecoder, word: [u8; 4]) -> Option<Instruction> {
    let mut reader = U8Reader::new(&word);
    decoder.decode(&mut reader).ok()
}

/// An `adrp` whose register may still be completed by an `add`/load/store.
struct OpenPage {
    register: u16,
    page: u64,
    /// Index of the `adrp` in the output, and whether anything completed it.
    index: usize,
    completed: bool,
}

/// Decodes `bytes` loaded at `start`.
pub(crate) fn decode(bytes: &[u8], start: u64) -> Vec<Decoded> {
    let decoder = InstDecoder::default();
    let mut out: Vec<Decoded> = Vec::with_capacity(bytes.len() / 4);
    let mut open: Vec<OpenPage> = Vec::new();
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let offset = (i * 4) as u32;
        let pc = start + u64::from(offset);
        let Ok(word) = <[u8; 4]>::try_from(chunk) else {
            out.push(Decoded {
                offset,
                key: Key::Bytes(chunk.to_vec()),
                refs: Vec::new(),
            });
            continue;
        };
        let Some(mut instr) = decode_word(&decoder, word) else {
            out.push(Decoded {
                offset,
                key: Key::Bytes(word.to_vec()),
                refs: Vec::new(),
            });
            continue;
        };
        let mut refs = Vec::new();
        // A pc-relative operand: branch, adr, literal load, or adrp.
        if let Some(position) = instr
            .operands
            .iter()
            .position(|o| matches!(o, Operand::PCOffset(_)))
            && let Operand::PCOffset(delta) = instr.operands[position]
        {
            instr.operands[position] = Operand::PCOffset(0);
            if instr.opcode == Opcode::ADRP {
                let page = (pc & !0xfff).wrapping_add(delta as u64);
                if let Some(register) = destination(&instr) {
                    open.retain(|p| p.register != register);
                    open.push(OpenPage {
                        register,
                        page,
                        index: out.len(),
                        completed: false,
                    });
                }
            } else {
                let use_ = match instr.opcode {
                    Opcode::BL => Use::Call,
                    Opcode::B
                    | Opcode::Bcc(_)
                    | Opcode::CBZ
                    | Opcode::CBNZ
                    | Opcode::TBZ
                    | Opcode::TBNZ => Use::Jump,
                    Opcode::ADR => Use::Address,
                    _ => Use::Access,
                };
                refs.push(Reference {
                    address: pc.wrapping_add(delta as u64),
                    use_,
                    field: pc,
                });
            }
        } else if let Some(page) = complete_page(&mut instr, &mut open) {
            refs.push(page);
        } else if let Some(register) = destination(&instr)
            && !reads_first_operand(instr.opcode)
        {
            open.retain(|p| p.register != register);
        }
        out.push(Decoded {
            offset,
            key: Key::Aarch64(A64Key(instr)),
            refs,
        });
    }
    // An `adrp` nothing completed lets the page itself escape.
    for page in open {
        if !page.completed {
            let field = start + u64::from(out[page.index].offset);
            out[page.index].refs.push(Reference {
                address: page.page,
                use_: Use::Address,
                field,
            });
        }
    }
    out
}

/// If `instr` completes an open `adrp` (`add xd, xn, #lo12` or a load/store
/// `[xn, #lo12]`), zeroes the low part and returns the full address.
fn complete_page(instr: &mut Instruction, open: &mut Vec<OpenPage>) -> Option<Reference> {
    let (base, operand_index, low, use_) = match (instr.opcode, instr.operands) {
        (Opcode::ADD, [_, Operand::RegisterOrSP(_, n), Operand::Immediate(low), _]) => {
            (n, 2, i64::from(low), Use::Address)
        }
        (_, operands) => operands.iter().enumerate().find_map(|(i, o)| match o {
            Operand::RegPreIndex(n, low, false) => Some((*n, i, i64::from(*low), Use::Access)),
            _ => None,
        })?,
    };
    let page_index = open.iter().position(|p| p.register == base)?;
    let page = &mut open[page_index];
    page.completed = true;
    let address = page.page.wrapping_add(low as u64);
    instr.operands[operand_index] = match instr.operands[operand_index] {
        Operand::Immediate(_) => Operand::Immediate(0),
        Operand::RegPreIndex(n, _, w) => Operand::RegPreIndex(n, 0, w),
        other => other,
    };
    // The `add` or load writing its own base ends the page's life.
    if destination(instr) == Some(base) && !reads_first_operand(instr.opcode) {
        open.remove(page_index);
    }
    Some(Reference {
        address,
        use_,
        field: 0,
    })
}

/// The general register an instruction writes first, if any.
fn destination(instr: &Instruction) -> Option<u16> {
    match instr.operands[0] {
        Operand::Register(_, r) | Operand::RegisterOrSP(_, r) => Some(r),
        _ => None,
    }
}

/// Instructions whose first register operand is read, not written
/// (stores, register-testing branches).
fn reads_first_operand(opcode: Opcode) -> bool {
    matches!(
        opcode,
        Opcode::STR
            | Opcode::STRB
            | Opcode::STRH
            | Opcode::STRW
            | Opcode::STP
            | Opcode::STNP
            | Opcode::STUR
            | Opcode::STURB
            | Opcode::STURH
            | Opcode::STLR
            | Opcode::STLRB
            | Opcode::STLRH
            | Opcode::STLUR
            | Opcode::STLURB
            | Opcode::STLURH
            | Opcode::STTR
            | Opcode::STTRB
            | Opcode::STTRH
            | Opcode::CBZ
            | Opcode::CBNZ
            | Opcode::TBZ
            | Opcode::TBNZ
    )
}

const BTI_MASK: u32 = 0xffff_ff3f;
const BTI: u32 = 0xd503_241f;

/// `b` (after an optional `bti`) filling `[start, end)`: its target.
pub(crate) fn thunk_target(image: &Image, start: u64, end: u64) -> Option<u64> {
    let mut at = start;
    let mut word = image.read_u32(at)?;
    if word & BTI_MASK == BTI {
        at += 4;
        word = image.read_u32(at)?;
    }
    if word & 0xfc00_0000 != 0x1400_0000 || at + 4 < end {
        return None;
    }
    // imm26, sign-extended, times 4.
    let delta = (((word & 0x03ff_ffff) << 6) as i32 >> 4) as i64;
    Some(at.wrapping_add(delta as u64))
}

/// The instruction at `address` as yaxpeax-arm prints it.
pub(crate) fn disassemble(image: &Image, address: u64) -> Option<String> {
    let word = image.read_u32(address)?;
    Some(
        match decode_word(&InstDecoder::default(), word.to_le_bytes()) {
            Some(instr) => instr.to_string(),
            None => format!(".word {word:#010x}"),
        },
    )
}
