//! AArch64: decodes 4-byte words with yaxpeax-arm and reduces each to its
//! comparison key, the decoded instruction with pc-relative offsets (and the
//! low 12 bits completing an `adrp`) zeroed, targets set apart. An `adrp`'s
//! register is tracked along every path through the function (a
//! must-analysis: a page holds where every path that reaches brings it):
//! the `add` (immediate) or load/store based on it forms one address, page
//! plus offset; a register copy (`mov xd, xs`) carries the page along.
//! Main
//! assumption: the code between a function's start and end is instructions
//! (a word no decoder knows is compared as bytes).

use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Instruction, Opcode, Operand, ShiftStyle, SizeCode};

use crate::aarch64_flow::{
    Held, Surroundings, destination, ends_path, holdings_at_entry, is_call, reads_first_operand,
    register_copy,
};
use crate::code::{A64Key, Decoded, Key, Reach, Reference, Use};
use crate::image::{Image, SymbolKind};
use rayon::prelude::*;

impl A64Key {
    pub(crate) fn falls_through(&self) -> bool {
        !(ends_path(self.0.opcode) || is_call(self.0.opcode))
    }
}

fn decode_word(decoder: &InstDecoder, word: [u8; 4]) -> Option<Instruction> {
    let mut reader = U8Reader::new(&word);
    decoder.decode(&mut reader).ok()
}

/// `bytes` (loaded at a word boundary) decoded word by word as they are,
/// PC-relative fields included; `None` where a word does not decode.
pub(crate) fn raw_words(bytes: &[u8]) -> Vec<Option<Instruction>> {
    let decoder = InstDecoder::default();
    bytes
        .chunks_exact(4)
        .map(|c| decode_word(&decoder, [c[0], c[1], c[2], c[3]]))
        .collect()
}

/// An `adrp` whose register may still be completed by an `add`/load/store.
struct OpenPage {
    register: u16,
    page: u64,
    /// Index of the `adrp` in the output, and whether anything completed it.
    index: usize,
    completed: bool,
}

/// Decodes `bytes` of `image` loaded at `start`: a branch to an erratum
/// 843419 patch (which the linker writes where an `adrp` sits at a page's
/// last two words, so folding moves it) is the instruction it displaced.
pub(crate) fn decode_in(image: &Image, bytes: &[u8], start: u64) -> Vec<Decoded> {
    decode_patched(bytes, start, |target| displaced(image, target), image)
}

/// The word an erratum 843419 patch of `image` at `target` displaced, if
/// a patch starts there.
fn displaced(image: &Image, target: u64) -> Option<u32> {
    image
        .erratum_patches
        .binary_search(&target)
        .is_ok()
        .then(|| image.read_u32(target))
        .flatten()
}

/// `word` at `pc` as it runs: a `b` to a place `patch` knows is the word
/// `patch` returns.
fn as_run(word: u32, pc: u64, patch: impl Fn(u64) -> Option<u32>) -> u32 {
    if word & 0xfc00_0000 != 0x1400_0000 {
        return word;
    }
    // imm26, sign-extended, times 4.
    let delta = (((word & 0x03ff_ffff) << 6) as i32 >> 4) as i64;
    patch(pc.wrapping_add(delta as u64)).unwrap_or(word)
}

/// The instruction at `address` of `image` as it runs: a branch to an
/// erratum 843419 patch is the instruction it displaced (as in
/// [`decode_in`]); `None` where no word decodes.
pub(crate) fn word_at(image: &Image, address: u64) -> Option<Instruction> {
    let word = as_run(image.read_u32(address)?, address, |target| {
        displaced(image, target)
    });
    decode_word(&InstDecoder::default(), word.to_le_bytes())
}

/// Decodes `bytes` loaded at `start`, a `b` to a place `patch` knows read
/// as the word it returns; `around` holds the jump tables and landing pads.
fn decode_patched(
    bytes: &[u8],
    start: u64,
    patch: impl Fn(u64) -> Option<u32>,
    around: &dyn Surroundings,
) -> Vec<Decoded> {
    let decoder = InstDecoder::default();
    let mut out: Vec<Decoded> = Vec::with_capacity(bytes.len() / 4);
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .enumerate()
        .map(|(i, c)| {
            let word = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            as_run(word, start + 4 * i as u64, &patch)
        })
        .collect();
    let raw: Vec<Option<Instruction>> = words
        .iter()
        .map(|w| decode_word(&decoder, w.to_le_bytes()))
        .collect();
    let pages = page_definitions(&decoder, &words, &raw, start, around);
    let holdings = holdings_at_entry(&raw, &pages, start, around);
    let entry = &holdings.entry;
    let mut completed = vec![false; raw.len()];
    let mut escaped = vec![false; raw.len()];
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
        let Some(mut instr) = raw.get(i).copied().flatten() else {
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
            if pages[i].is_some() {
                instr.opcode = Opcode::ADRP;
            } else {
                let use_ = match instr.opcode {
                    Opcode::BL => Use::Call,
                    Opcode::B
                    | Opcode::Bcc(_)
                    | Opcode::BCcc(_)
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
                    width: 0,
                    // A literal load reads at its address.
                    reach: if use_ == Use::Access {
                        Reach::Forward
                    } else {
                        Reach::Unknown
                    },
                });
            }
        } else {
            let mut open: Vec<OpenPage> = entry[i]
                .iter()
                .filter_map(|holding| match holding.held {
                    Held::Page(page) => Some(OpenPage {
                        register: holding.register,
                        page,
                        index: holding.origin,
                        completed: false,
                    }),
                    _ => None,
                })
                .collect();
            let completion = complete_page(&mut instr, &mut open);
            if let Some((reference, adrp)) = completion {
                // The completing instruction's field: a `-q` link keeps
                // the relocation naming the symbol there (`:lo12:sym`).
                refs.push(Reference {
                    field: pc,
                    ..reference
                });
                completed[adrp] = true;
            }
            // A page read any other way (a base with a register offset,
            // an operand, an argument or result) is a value of its own. A
            // copy is not such a read: the copy's uses are checked.
            let copy_source = register_copy(&instr).map(|(_, from)| from);
            for holding in &entry[i] {
                if matches!(holding.held, Held::Page(_))
                    && completion.is_none_or(|(_, done)| done != holding.origin)
                    && copy_source != Some(holding.register)
                    && reads_page_register(&instr, holding.register)
                {
                    escaped[holding.origin] = true;
                }
            }
        }
        out.push(Decoded {
            offset,
            key: Key::Aarch64(A64Key(instr)),
            refs,
        });
    }
    // A page a path may still bring where the analysis lost it (a call
    // may have kept it, or paths that meet bring something else), read
    // there: the read may be of the page.
    for &origin in &holdings.lost_pages {
        if let Some(escapes) = escaped.get_mut(origin) {
            *escapes = true;
        }
    }
    fuse_address_pairs(&mut out, start);
    local_data_addresses(&mut out, start, around);
    // An `adrp` nothing completed and something read lets the page itself
    // escape.
    for (index, page) in pages.iter().enumerate() {
        if let Some((_, page)) = page
            && !completed[index]
            && escaped[index]
            && let Some(decoded) = out.get_mut(index)
        {
            decoded.refs.push(Reference {
                address: *page,
                use_: Use::Address,
                field: start + u64::from(decoded.offset),
                width: 0,
                reach: Reach::Unknown,
            });
        }
    }
    out
}

/// For each word, the (register, page) it opens: an `adrp`, or GNU ld's
/// Cortex-A53 erratum 843419 fix, an `adr` of a data page with no `nop`
/// beside it (a relaxed `adrp`+`add` is not one) that the next word
/// completes, or that sits where the erratum's sequence starts (a page's
/// last two words) and that a word two or three on completes.
fn page_definitions(
    decoder: &InstDecoder,
    words: &[u32],
    raw: &[Option<Instruction>],
    start: u64,
    around: &dyn Surroundings,
) -> Vec<Option<(u16, u64)>> {
    raw.iter()
        .enumerate()
        .map(|(i, instr)| {
            let instr = instr.as_ref()?;
            let Operand::PCOffset(delta) = instr.operands[1] else {
                return None;
            };
            let pc = start + (i as u64) * 4;
            let register = destination(instr)?;
            match instr.opcode {
                Opcode::ADRP => Some((register, (pc & !0xfff).wrapping_add(delta as u64))),
                Opcode::ADR => {
                    let target = pc.wrapping_add(delta as u64);
                    let completed_at = |at: usize| {
                        words
                            .get(at)
                            .is_some_and(|&word| completes(decoder, word, Some(register)))
                    };
                    // The erratum's sequence: the `adrp` in one of a page's
                    // last two words, a load or store, maybe one more
                    // instruction, then the access through the page.
                    let erratum_sequence = pc & 0xfff >= 0xff8
                        && words.get(i + 1).is_some_and(|&next| next != NOP)
                        && (completed_at(i + 2) || completed_at(i + 3));
                    // A data page: an `adr` of a label in code (a table
                    // of the function's own) is itself, wherever it sits.
                    let relaxed = target & 0xfff == 0
                        && !around.is_code(target)
                        && words.get(i.wrapping_sub(1)) != Some(&NOP)
                        && (words.get(i + 1).is_some_and(|&next| next != NOP)
                            && completed_at(i + 1)
                            || erratum_sequence);
                    relaxed.then_some((register, target))
                }
                _ => None,
            }
        })
        .collect()
}

/// Whether `instr` reads `register` (holding a page) other than as the
/// destination it writes: as any operand, or as an argument or result at a
/// call or return (x0-x8).
fn reads_page_register(instr: &Instruction, register: u16) -> bool {
    let passes = match instr.opcode {
        Opcode::BL | Opcode::BLR | Opcode::RET | Opcode::B | Opcode::BR => register <= 8,
        _ => false,
    };
    passes
        || instr
            .operands
            .iter()
            .enumerate()
            .any(|(index, operand)| match *operand {
                Operand::Register(_, r) | Operand::RegisterOrSP(_, r) => {
                    r == register && (index != 0 || reads_first_operand(instr.opcode))
                }
                Operand::RegPreIndex(r, _, _)
                | Operand::RegPostIndex(r, _)
                | Operand::RegPostIndexReg(r, _)
                | Operand::RegShift(_, _, _, r) => r == register,
                Operand::RegRegOffset(base, index_register, ..) => {
                    base == register || index_register == register
                }
                _ => false,
            })
}

/// Puts the three forms of one address materialization in one form:
/// `adrp xd, page; add xd, xd, #lo` (as compiled), `nop; adr xd, target`
/// (lld's relaxation when the target is near) and `adr xd, target; nop`
/// (GNU ld's) all become `nop; adr xd, target`, the reference on the `adr`.
/// The linkers relax only adjacent pairs, and the fold moves code, so
/// PLAIN and FOLDED may hold different forms of the same code. Not when a
/// direct branch lands between the two: then they are not one step.
fn fuse_address_pairs(out: &mut [Decoded], start: u64) {
    let decoder = InstDecoder::default();
    let (Some(nop), Some(adr_x0)) = (
        decode_word(&decoder, NOP.to_le_bytes()),
        decode_word(&decoder, ADR_X0.to_le_bytes()),
    ) else {
        return;
    };
    let landing: std::collections::HashSet<u64> = out
        .iter()
        .flat_map(|d| d.refs.iter())
        .filter(|r| matches!(r.use_, Use::Jump | Use::Call))
        .map(|r| r.address)
        .collect();
    let adr = |register: u16| {
        let mut instr = adr_x0;
        instr.operands[0] = Operand::Register(SizeCode::X, register);
        instr
    };
    // Pairs are read left to right, each word in one pair at most: in
    // lld's `nop; adr x4; nop; adr x3` the `adr x4; nop` in the middle is
    // no GNU ld pair.
    let mut paired_until = 0; // words before this one are in a pair
    for i in 1..out.len() {
        if i - 1 < paired_until || landing.contains(&(start + u64::from(out[i].offset))) {
            continue;
        }
        let (Key::Aarch64(A64Key(first)), Key::Aarch64(A64Key(second))) =
            (&out[i - 1].key, &out[i].key)
        else {
            continue;
        };
        if *first == nop && second.opcode == Opcode::ADR {
            // Already `nop; adr`: lld's relaxed pair.
            paired_until = i + 1;
            continue;
        }
        let register = match (first.opcode, second.opcode) {
            (Opcode::ADRP, Opcode::ADD) => match (first.operands[0], second.operands) {
                (
                    Operand::Register(_, page),
                    [
                        Operand::RegisterOrSP(_, d),
                        Operand::RegisterOrSP(_, n),
                        Operand::Immediate(0),
                        Operand::Nothing,
                    ],
                ) if page == d && d == n && out[i].refs.len() == 1 => d,
                _ => continue,
            },
            (Opcode::ADR, _) if *second == nop => match first.operands[0] {
                Operand::Register(_, d) => {
                    let refs = std::mem::take(&mut out[i - 1].refs);
                    out[i].refs = refs;
                    d
                }
                _ => continue,
            },
            _ => continue,
        };
        out[i - 1].key = Key::Aarch64(A64Key(nop));
        out[i].key = Key::Aarch64(A64Key(adr(register)));
        paired_until = i + 1;
    }
}

const NOP: u32 = 0xd503_201f;
const ADR_X0: u32 = 0x1000_0000;

/// An `adrp` + `add` (or an `adr`, which lld relaxes the pair to) of an
/// address that does not escape only accesses the data there: the
/// reference becomes [`Use::Access`], as on x86-64 (clang's `.llvm_addrsig`
/// leaves out a table the code only loads from). A 64-bit load completing
/// a page (a GOT slot's pointer, say) whose loaded pointer does not escape
/// becomes [`Use::Deref`]. See [`escapes`].
fn local_data_addresses(out: &mut [Decoded], start: u64, around: &dyn Surroundings) {
    for at in 0..out.len() {
        let Key::Aarch64(A64Key(instr)) = &out[at].key else {
            continue;
        };
        let (from, to) = match instr.opcode {
            Opcode::ADD | Opcode::ADR => (Use::Address, Use::Access),
            Opcode::LDR if matches!(instr.operands[0], Operand::Register(SizeCode::X, _)) => {
                (Use::Access, Use::Deref)
            }
            _ => continue,
        };
        let Some(register) = destination(instr) else {
            continue;
        };
        if !out[at].refs.iter().any(|r| r.use_ == from) {
            continue;
        }
        let Some(reach) = address_reach(out, start, at, register, around) else {
            continue;
        };
        for reference in &mut out[at].refs {
            if reference.use_ == from {
                reference.use_ = to;
                reference.reach = reach;
            }
        }
    }
}

/// Whether the address that `out[at]` (decoded at `start`) writes to
/// `register` escapes on some path through the function: both ways at a
/// conditional branch, loops until an instruction repeats. It does not
/// escape while it is only the base of loads and stores (never the value
/// stored, no write-back) until an instruction overwrites it without
/// reading it (a call whose callee returns an integer or pointer in x0 by
/// its DWARF prototype overwrites x0), or at a return in x2-x18 (x0 and x1
/// carry results; x1 none when the prototype returns one register at most).
/// A call keeps it going in a callee-saved register (x19-x28), and in a
/// temporary (x9-x18: on Linux x16-x18 are temporaries too, which clang
/// uses) or an argument register beyond those the callee's prototype reads:
/// the callee may leave it alone, and gcc's `-fipa-ra` reads it after the
/// call where it knows the callee does. Anything else escapes: any other
/// read of the register, any other register at a call or return (x8 carries
/// the address of a result returned in memory), an indirect branch, a
/// branch out of the function, a word that does not decode, or more than
/// 1024 steps. `None` then; else which side of the address the loads and
/// stores based on the register read: an immediate offset says, a register
/// offset only when it is a zero-extended 32-bit index (`uxtw`), which is
/// never negative.
fn address_reach(
    out: &[Decoded],
    start: u64,
    at: usize,
    register: u16,
    around: &dyn Surroundings,
) -> Option<Reach> {
    let index_of = |address: u64| {
        let offset = address.checked_sub(start)?;
        let index = usize::try_from(offset / 4).ok()?;
        (offset % 4 == 0 && index < out.len()).then_some(index)
    };
    let mut seen = std::collections::HashSet::new();
    let (mut forward, mut backward) = (true, true);
    let mut work = vec![at + 1];
    while let Some(index) = work.pop() {
        if !seen.insert(index) {
            continue;
        }
        if seen.len() > 1024 {
            return None;
        }
        let Some(Key::Aarch64(A64Key(instr))) = out.get(index).map(|d| &d.key) else {
            return None;
        };
        if let Some((lo, hi, size)) = access(instr, register) {
            forward &= lo >= 0;
            backward &= hi.saturating_add(size) <= 0;
        }
        match step(instr, register) {
            Step::Escapes => return None,
            Step::Gone => continue,
            Step::Held => {}
        }
        let target = || {
            out[index]
                .refs
                .iter()
                .find(|r| r.use_ == Use::Jump)
                .and_then(|r| index_of(r.address))
        };
        match instr.opcode {
            Opcode::B => match target() {
                Some(to) => work.push(to),
                None => return None,
            },
            Opcode::Bcc(_)
            | Opcode::BCcc(_)
            | Opcode::CBZ
            | Opcode::CBNZ
            | Opcode::TBZ
            | Opcode::TBNZ => match target() {
                Some(to) => work.extend([index + 1, to]),
                None => return None,
            },
            _ if is_call(instr.opcode) => {
                let callee = (instr.opcode == Opcode::BL)
                    .then(|| out[index].refs.iter().find(|r| r.use_ == Use::Call))
                    .flatten()
                    .map(|r| r.address);
                let unread_argument = register < 8
                    && callee
                        .and_then(|callee| around.arguments_read(callee))
                        .is_some_and(|read| register >= u16::from(read));
                // The callee's result in x0, where its prototype says; it
                // reads its arguments first, so x0 passed to it escapes
                // even though it comes back overwritten.
                let overwritten = register == 0
                    && unread_argument
                    && callee.is_some_and(|callee| around.returns_in_x0(callee));
                match register {
                    _ if overwritten => {}
                    // A callee keeps x19-x28; it may keep a temporary too
                    // (gcc's -fipa-ra relies on it where it knows the
                    // callee's code), and what code after the call then
                    // reads there is the address.
                    9..=28 => work.push(index + 1),
                    _ if unread_argument => work.push(index + 1),
                    _ => return None,
                }
            }
            Opcode::RET => {
                let result =
                    register == 0 || (register == 1 && !around.returns_one_register(start));
                if result || !(0..=18).contains(&register) {
                    return None;
                }
            }
            // A trap ends the path: the program stops with a signal, and
            // nothing after it reads the address.
            Opcode::BRK | Opcode::UDF => {}
            _ if !A64Key(*instr).falls_through() => return None,
            _ => work.push(index + 1),
        }
    }
    Some(match (forward, backward) {
        // No access at all reads nothing on either side.
        (true, _) => Reach::Forward,
        (false, true) => Reach::Backward,
        (false, false) => Reach::Unknown,
    })
}

/// The offsets from `register` a load or store based on it reads (lowest,
/// highest, bytes): an immediate offset exactly; a zero-extended 32-bit
/// index (`uxtw`, `uxtb`, `uxth`) from 0 up; any other register offset
/// anywhere. `None` when `instr` accesses nothing through `register`.
fn access(instr: &Instruction, register: u16) -> Option<(i64, i64, i64)> {
    let size = access_size(instr);
    instr.operands.iter().find_map(|operand| match *operand {
        Operand::RegPreIndex(base, offset, false) if base == register => {
            Some((i64::from(offset), i64::from(offset), size))
        }
        Operand::RegRegOffset(
            base,
            _,
            SizeCode::W,
            ShiftStyle::UXTW | ShiftStyle::UXTB | ShiftStyle::UXTH,
            _,
        ) if base == register => Some((0, i64::MAX, size)),
        Operand::RegRegOffset(base, ..) if base == register => Some((i64::MIN, i64::MAX, size)),
        _ => None,
    })
}

/// How many bytes a load or store transfers, at most: from its first
/// register's size for the general forms, else 32 (a pair of vectors).
fn access_size(instr: &Instruction) -> i64 {
    let general = match instr.operands[0] {
        Operand::Register(SizeCode::W, _) => Some(4),
        Operand::Register(SizeCode::X, _) => Some(8),
        _ => None,
    };
    match (instr.opcode, general) {
        (
            Opcode::LDRB
            | Opcode::STRB
            | Opcode::LDRSB
            | Opcode::LDURB
            | Opcode::STURB
            | Opcode::LDURSB,
            _,
        ) => 1,
        (
            Opcode::LDRH
            | Opcode::STRH
            | Opcode::LDRSH
            | Opcode::LDURH
            | Opcode::STURH
            | Opcode::LDURSH,
            _,
        ) => 2,
        (Opcode::LDP | Opcode::STP | Opcode::LDNP | Opcode::STNP | Opcode::LDPSW, Some(n)) => 2 * n,
        (
            Opcode::LDR
            | Opcode::STR
            | Opcode::LDUR
            | Opcode::STUR
            | Opcode::LDRSW
            | Opcode::LDURSW,
            Some(n),
        ) => n,
        _ => 32,
    }
}

/// What one instruction does to an address held in a register.
enum Step {
    /// It reads the address other than as a load or store base.
    Escapes,
    /// It overwrites the register: the address is gone.
    Gone,
    /// The register still holds it (unused, or used as a base).
    Held,
}

fn step(instr: &Instruction, register: u16) -> Step {
    let mut read = false;
    let mut written = false;
    for (index, operand) in instr.operands.iter().enumerate() {
        match *operand {
            Operand::RegPreIndex(base, _, writeback) if base == register => read |= writeback,
            Operand::RegRegOffset(_, index_register, ..) => read |= index_register == register,
            // The base is written back: the address moves on.
            Operand::RegPostIndex(base, _) | Operand::RegPostIndexReg(base, _)
                if base == register =>
            {
                read = true;
            }
            Operand::Register(_, r) | Operand::RegisterOrSP(_, r) if r == register => {
                // `movk` and `bfm` keep the rest of the register.
                let merges = matches!(instr.opcode, Opcode::MOVK | Opcode::BFM);
                if index == 0 && !reads_first_operand(instr.opcode) && !merges {
                    written = true;
                } else {
                    read = true;
                }
            }
            Operand::RegShift(_, _, _, r) if r == register => read = true,
            _ => {}
        }
    }
    if read {
        Step::Escapes
    } else if written {
        // Overwritten, or loaded into itself (`ldr x0, [x0]`).
        Step::Gone
    } else {
        Step::Held
    }
}

/// If `instr` completes an open `adrp` (`add xd, xn, #lo12` or a load/store
/// `[xn, #lo12]`), zeroes the low part and returns the full address.
fn complete_page(instr: &mut Instruction, open: &mut Vec<OpenPage>) -> Option<(Reference, usize)> {
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
    let adrp = page.index;
    let address = page.page.wrapping_add(low as u64);
    instr.operands[operand_index] = match instr.operands[operand_index] {
        Operand::Immediate(_) => Operand::Immediate(0),
        Operand::RegPreIndex(n, _, w) => Operand::RegPreIndex(n, 0, w),
        other => other,
    };
    // The `add` or load writing its own base ends the page's life; writing
    // another register ends the life of any page that register held.
    if let Some(written) = destination(instr)
        && !reads_first_operand(instr.opcode)
    {
        open.retain(|p| p.register != written);
    }
    Some((
        Reference {
            address,
            use_,
            field: 0,
            width: 0,
            // A load or store completing the page reads at the address.
            reach: if use_ == Use::Access {
                Reach::Forward
            } else {
                Reach::Unknown
            },
        },
        adrp,
    ))
}

/// Whether `word` completes a page held in `register`: an `add` (immediate)
/// or a load or store with it as base and an immediate offset.
fn completes(decoder: &InstDecoder, word: u32, register: Option<u16>) -> bool {
    let (Some(register), Some(instr)) = (register, decode_word(decoder, word.to_le_bytes())) else {
        return false;
    };
    match (instr.opcode, instr.operands) {
        (Opcode::ADD, [_, Operand::RegisterOrSP(_, n), Operand::Immediate(_), _]) => n == register,
        (_, operands) => operands
            .iter()
            .any(|o| matches!(o, Operand::RegPreIndex(n, _, false) if *n == register)),
    }
}

/// Every data address the code of `image`'s functions references (an
/// `adr`, an `adrp` and what completes it, a literal load), sorted: where a
/// piece of unnamed data (a string, a constant) starts, as `reach.rs` finds
/// on x86-64. GNU ld merges `.rodata.str*` into `.rodata` without its
/// string flags, so this, not a NUL, is where such a string ends.
pub(crate) fn referenced_data(image: &Image) -> Vec<u64> {
    let mut functions: Vec<(u64, u64)> = image
        .symbols
        .iter()
        .filter(|s| s.kind == SymbolKind::Function && s.size > 0 && image.is_code(s.address))
        .map(|s| (s.address, s.size))
        .collect();
    functions.sort_unstable();
    functions.dedup();
    let mut referenced: Vec<u64> = functions
        .par_iter()
        .flat_map_iter(|&(start, size)| {
            let decoded = image
                .bytes(start, size)
                .map(|bytes| decode_in(image, bytes, start))
                .unwrap_or_default();
            decoded
                .into_iter()
                .flat_map(|d| d.refs)
                .filter(|r| !matches!(r.use_, Use::Call | Use::Jump) && !image.is_code(r.address))
                .map(|r| r.address)
        })
        .collect();
    referenced.sort_unstable();
    referenced.dedup();
    referenced
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

/// The addresses PLAIN's kept relocations (`-q`) write into the code of
/// the function at `plain_start` whole (`R_AARCH64_ABS64`/`ABS32`: a
/// literal pool's words, as `gcc -mcmodel=large` places after a
/// function's code) or 16 bits at a time (`R_AARCH64_MOVW_UABS_G*`: the
/// `movz`/`movk` of clang's `-mcmodel=large`). In both decodings, each
/// word so written becomes an item of data (the bits the relocation
/// writes zeroed), and the first of each address's words holds it as a
/// target: PLAIN's `S + A` against the address FOLDED's words at the same
/// offsets hold. They would otherwise be compared as bytes or immediates,
/// which differ wherever the fold moved what they name. FOLDED needs no
/// relocations of its own (a shrunk image keeps none): PLAIN's say which
/// words hold addresses, and its code, compared item by item, reads them
/// alike.
pub(crate) fn relocated_words(
    plain: &Image,
    folded: &Image,
    (plain_start, folded_start): (u64, u64),
    plain_code: &mut Vec<Decoded>,
    folded_code: &mut Vec<Decoded>,
) {
    if !plain.has_emitted_relocs() {
        return;
    }
    let length = |code: &[Decoded]| code.last().map_or(0, |d| d.offset + 4);
    let length = length(plain_code).min(length(folded_code));
    // (offset, size, r_type, PLAIN's S + A).
    let mut whole = Vec::new();
    // The `movz`/`movk` words building each address, by its `S + A`.
    let mut pieces: Vec<(u64, Vec<MoveWide>)> = Vec::new();
    // The `adrp`s (offsets) and `add :lo12:`s (offsets) of each address.
    let mut pages: Vec<(u64, Vec<u32>, Vec<u32>)> = Vec::new();
    let mut offset = 0u32;
    while offset < length {
        let Some(reloc) = plain.emitted.get(&(plain_start + u64::from(offset))) else {
            offset += 4;
            continue;
        };
        match reloc.r_type {
            // R_AARCH64_ABS64, R_AARCH64_ABS32.
            257 | 258 => {
                let size = if reloc.r_type == 257 { 8 } else { 4 };
                if offset + size > length {
                    return;
                }
                whole.push((offset, size, reloc.r_type, reloc.value));
                offset += size;
                continue;
            }
            // R_AARCH64_ADR_PREL_PG_HI21 (275), _NC (276), ADD_ABS_LO12_NC (277).
            275..=277 => {
                let at = match pages
                    .iter_mut()
                    .position(|(value, _, _)| *value == reloc.value)
                {
                    Some(at) => at,
                    None => {
                        pages.push((reloc.value, Vec::new(), Vec::new()));
                        pages.len() - 1
                    }
                };
                if reloc.r_type == 277 {
                    pages[at].2.push(offset);
                } else {
                    pages[at].1.push(offset);
                }
            }
            // R_AARCH64_MOVW_UABS_G0 (263) ..= G3 (269): G0, G0_NC, G1, ...
            263..=269 => {
                let shift = (reloc.r_type - 263) / 2 * 16;
                match pieces.iter_mut().find(|(value, _)| *value == reloc.value) {
                    Some((_, words)) => words.push((offset, reloc.r_type, shift)),
                    None => pieces.push((reloc.value, vec![(offset, reloc.r_type, shift)])),
                }
            }
            _ => {}
        }
        offset += 4;
    }
    unpaired_low_halves(
        plain,
        folded,
        (plain_start, folded_start),
        &pages,
        plain_code,
        folded_code,
    );
    for (offset, size, r_type, value) in whole {
        let read = |image: &Image, start: u64| match size {
            8 => image.read_u64(start + u64::from(offset)),
            _ => image.read_u32(start + u64::from(offset)).map(u64::from),
        };
        let Some(folded_value) = read(folded, folded_start) else {
            return;
        };
        let item = |value: u64, start: u64| Decoded {
            offset,
            key: Key::Data {
                data: vec![0; size as usize],
                relocations: vec![(0, r_type)],
            },
            refs: vec![address_at(value, start + u64::from(offset))],
        };
        replace_words(plain_code, offset, size, item(value, plain_start));
        replace_words(folded_code, offset, size, item(folded_value, folded_start));
    }
    for (value, words) in pieces {
        // Two sequences building the same address: each piece must be read
        // with its own sequence, which grouping by `S + A` cannot tell
        // apart (an OR of both would hide one that differs). They stay
        // compared as instructions.
        let mut shifts: Vec<u32> = words.iter().map(|&(_, _, shift)| shift).collect();
        shifts.sort_unstable();
        if shifts.windows(2).any(|pair| pair[0] == pair[1]) {
            continue;
        }
        // The address the words build, from their immediates.
        let built = |image: &Image, start: u64| {
            words.iter().try_fold(0u64, |sum, &(offset, _, shift)| {
                let word = image.read_u32(start + u64::from(offset))?;
                Some(sum | (u64::from(word >> 5 & 0xffff) << shift))
            })
        };
        // A group whose words do not build its `S + A` (a piece missing,
        // or one written otherwise) stays compared as instructions.
        let (Some(plain_value), Some(folded_value)) =
            (built(plain, plain_start), built(folded, folded_start))
        else {
            continue;
        };
        if plain_value != value {
            continue;
        }
        for (i, &(offset, r_type, _)) in words.iter().enumerate() {
            let item = |image: &Image, start: u64, value: u64| {
                let word = image.read_u32(start + u64::from(offset))? & !(0xffff << 5);
                Some(Decoded {
                    offset,
                    key: Key::Data {
                        data: word.to_le_bytes().to_vec(),
                        relocations: vec![(0, r_type)],
                    },
                    refs: if i == 0 {
                        vec![address_at(value, start + u64::from(offset))]
                    } else {
                        Vec::new()
                    },
                })
            };
            let (Some(p), Some(f)) = (
                item(plain, plain_start, value),
                item(folded, folded_start, folded_value),
            ) else {
                return;
            };
            replace_words(plain_code, offset, 4, p);
            replace_words(folded_code, offset, 4, f);
        }
    }
}

/// The `add :lo12:`s of `pages` (by `S + A`: `adrp` offsets, `add`
/// offsets) that the decoding did not pair with an `adrp` (its register
/// went through the stack, as static glibc's code spills it): each
/// completes the page of the address's nearest `adrp` before it (else
/// after it), in PLAIN as its relocation says, in FOLDED as the words at
/// the same offsets hold; the `add` becomes data whose field is that
/// address. One the decoding paired keeps its own target.
fn unpaired_low_halves(
    plain: &Image,
    folded: &Image,
    (plain_start, folded_start): (u64, u64),
    pages: &[(u64, Vec<u32>, Vec<u32>)],
    plain_code: &mut Vec<Decoded>,
    folded_code: &mut Vec<Decoded>,
) {
    // The address an `adrp` at `offset` and an `add` at `low` compute.
    let address = |image: &Image, start: u64, page_at: u32, low: u32| {
        let adrp = image.read_u32(start + u64::from(page_at))?;
        let add = image.read_u32(start + u64::from(low))?;
        let is_adrp = adrp & 0x9f00_0000 == 0x9000_0000;
        let is_add = add & 0x7fc0_0000 == 0x1100_0000;
        if !is_adrp || !is_add {
            return None;
        }
        let pages = (((adrp >> 5 & 0x7_ffff) << 2 | adrp >> 29 & 3) << 11) as i32 >> 11;
        let page =
            ((start + u64::from(page_at)) & !0xfff).wrapping_add((i64::from(pages) << 12) as u64);
        Some(page + u64::from(add >> 10 & 0xfff))
    };
    for (value, adrps, lows) in pages {
        // The `adrp`s: what they compute is compared as the address their
        // `add` completes (a page of data that moved by other than whole
        // pages is another page, though the address corresponds).
        // A low half the decoding paired with its `adrp` keeps its own use
        // (a load through it is an access, not an observed address), and so
        // do the `adrp`s of an address one of whose low halves it paired.
        let paired: Vec<bool> = lows
            .iter()
            .map(|&low| {
                plain_code
                    .iter()
                    .find(|d| d.offset == low)
                    .is_none_or(|d| !d.refs.is_empty())
            })
            .collect();
        let any_paired = paired.contains(&true);
        if let Some(&low) = lows.first().filter(|_| !any_paired) {
            for &page_at in adrps {
                if address(plain, plain_start, page_at, low) != Some(*value) {
                    continue;
                }
                let Some(folded_value) = address(folded, folded_start, page_at, low) else {
                    continue;
                };
                as_address(
                    (plain, folded),
                    (plain_start, folded_start),
                    (page_at, 0x60ff_ffe0, 275),
                    (*value, folded_value),
                    (plain_code, folded_code),
                );
            }
        }
        for (&low, &paired) in lows.iter().zip(&paired) {
            let Some(&page_at) = adrps
                .iter()
                .filter(|&&at| at < low)
                .max()
                .or_else(|| adrps.iter().min())
            else {
                continue;
            };
            if paired || address(plain, plain_start, page_at, low) != Some(*value) {
                continue;
            }
            let Some(folded_value) = address(folded, folded_start, page_at, low) else {
                continue;
            };
            as_address(
                (plain, folded),
                (plain_start, folded_start),
                (low, 0xfff << 10, 277),
                (*value, folded_value),
                (plain_code, folded_code),
            );
        }
    }
}

/// Replaces the word at `offset` of both decodings by data (the word
/// without the bits `field` masks, which relocation `r_type` writes)
/// whose target is the address it helps compute: `values` in PLAIN and
/// FOLDED.
fn as_address(
    (plain, folded): (&Image, &Image),
    (plain_start, folded_start): (u64, u64),
    (offset, field, r_type): (u32, u32, u32),
    (plain_value, folded_value): (u64, u64),
    (plain_code, folded_code): (&mut Vec<Decoded>, &mut Vec<Decoded>),
) {
    let item = |image: &Image, start: u64, value: u64| {
        let word = image.read_u32(start + u64::from(offset))? & !field;
        Some(Decoded {
            offset,
            key: Key::Data {
                data: word.to_le_bytes().to_vec(),
                relocations: vec![(0, r_type)],
            },
            refs: vec![address_at(value, start + u64::from(offset))],
        })
    };
    if let (Some(p), Some(f)) = (
        item(plain, plain_start, plain_value),
        item(folded, folded_start, folded_value),
    ) {
        replace_words(plain_code, offset, 4, p);
        replace_words(folded_code, offset, 4, f);
    }
}

/// A `movz`/`movk` word a kept relocation writes 16 bits of an address
/// into: (offset in the function, relocation type, bit of the address
/// its immediate starts at).
type MoveWide = (u32, u32, u32);

/// An address the code holds, written at `field`.
fn address_at(address: u64, field: u64) -> Reference {
    Reference {
        address,
        use_: Use::Address,
        field,
        width: 0,
        reach: Reach::Unknown,
    }
}

/// `code` with the items in `[offset, offset + size)` replaced by `item`.
fn replace_words(code: &mut Vec<Decoded>, offset: u32, size: u32, item: Decoded) {
    let first = code.partition_point(|d| d.offset < offset);
    let last = code.partition_point(|d| d.offset < offset + size);
    code.splice(first..last, [item]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aarch64_clobbers::CALLER_SAVED;

    /// Memory around a function under test: (address, bytes) pieces,
    /// landing pads and functions that never return.
    #[derive(Default)]
    struct Memory {
        pieces: Vec<(u64, Vec<u8>)>,
        pads: Vec<u64>,
        noreturn: Vec<u64>,
        integer_returns: Vec<u64>,
        code: Option<std::ops::Range<u64>>,
        /// (entry, registers a call to it may write); any other callee
        /// may write every caller-saved register.
        clobbers: Vec<(u64, u32)>,
        /// (entry, argument registers it reads).
        arguments: Vec<(u64, u8)>,
    }

    impl Surroundings for Memory {
        fn bytes(&self, address: u64, len: u64) -> Option<&[u8]> {
            self.pieces.iter().find_map(|(at, bytes)| {
                let from = usize::try_from(address.checked_sub(*at)?).ok()?;
                bytes.get(from..from + usize::try_from(len).ok()?)
            })
        }

        fn is_landing_pad(&self, address: u64) -> bool {
            self.pads.contains(&address)
        }

        fn never_returns(&self, target: u64) -> bool {
            self.noreturn.contains(&target)
        }

        fn returns_in_x0(&self, entry: u64) -> bool {
            self.integer_returns.contains(&entry)
        }

        fn is_code(&self, address: u64) -> bool {
            self.code
                .as_ref()
                .is_some_and(|range| range.contains(&address))
        }

        fn call_clobbers(&self, entry: u64) -> u32 {
            self.clobbers
                .iter()
                .find(|&&(at, _)| at == entry)
                .map_or(CALLER_SAVED, |&(_, mask)| mask)
        }

        fn arguments_read(&self, entry: u64) -> Option<u8> {
            self.arguments
                .iter()
                .find(|&&(at, _)| at == entry)
                .map(|&(_, read)| read)
        }
    }

    #[test]
    fn only_an_adr_of_a_data_page_where_the_erratum_strikes_opens_a_page() {
        // At a page's last-but-one word: adr x2, .+8; str x0, [sp, #8];
        // ldr x0, [x2, #8]; ret. GNU ld writes this for an adrp of a data
        // page (erratum 843419); an adr of a label in code is itself.
        let words: [u32; 4] = [0x1000_0042, 0xf900_07e0, 0xf940_0440, 0xd65f_03c0];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let opcode = |around: &Memory| {
            let decoded = decode_patched(&bytes, 0x10ff8, |_| None, around);
            match &decoded[0].key {
                Key::Aarch64(A64Key(instr)) => instr.opcode,
                other => panic!("not an instruction: {other:?}"),
            }
        };
        assert_eq!(opcode(&Memory::default()), Opcode::ADRP);
        let code = Memory {
            code: Some(0x10000..0x12000),
            ..Memory::default()
        };
        assert_eq!(opcode(&code), Opcode::ADR);
    }

    #[test]
    fn a_call_returning_a_pointer_leaves_no_page_in_x0() {
        // adrp x0, page; add x27, x0, #0x10; bl callee; ldr w2, [x0, #8];
        // ret; nop; callee: ret. gcc keeps a page across a call in a
        // register the callee does not touch (-fipa-ra), but a callee that
        // returns a pointer writes x0: the ldr reads through its result.
        let words = [
            0x9000_0000,
            0x9100_401b,
            0x9400_0004,
            0xb940_0802,
            0xd65f_03c0,
            0xd503_201f,
            0xd65f_03c0,
        ];
        let untouched = Memory {
            clobbers: vec![(0x10018, 0)],
            ..Memory::default()
        };
        let kept_across = shape_in(&words, &untouched);
        assert_eq!(kept_across[3].1, vec![0x10008], "{kept_across:?}");
        let around = Memory {
            integer_returns: vec![0x10018],
            clobbers: vec![(0x10018, 0)],
            ..Memory::default()
        };
        let overwritten = shape_in(&words, &around);
        assert!(overwritten[3].1.is_empty(), "{overwritten:?}");
    }

    #[test]
    fn a_call_keeps_a_page_in_a_temporary_only_if_the_callee_never_writes_it() {
        // adrp x9, page; bl callee; ldr w0, [x9, #8]; ret;
        // callee: mov x9, #1; ret
        let words = [
            0x9000_0009,
            0x9400_0003,
            0xb940_0920,
            0xd65f_03c0,
            0xd280_0029,
            0xd65f_03c0,
        ];
        let kept = Memory {
            clobbers: vec![(0x10010, 0)],
            ..Memory::default()
        };
        assert_eq!(shape_in(&words, &kept)[2].1, vec![0x10008]);
        // The callee writes x9 (on some path): the load reads x9 as the
        // callee left it, or the page if it did not write it; the page
        // is then a value of its own, compared as an address.
        for around in [
            Memory {
                clobbers: vec![(0x10010, 1 << 9)],
                ..Memory::default()
            },
            Memory::default(),
        ] {
            let decoded = shape_in(&words, &around);
            assert!(decoded[2].1.is_empty(), "{decoded:?}");
            assert_eq!(decoded[0].1, vec![0x10000], "{decoded:?}");
        }
    }

    #[test]
    fn a_page_a_call_may_keep_is_a_value_only_where_read_after_it() {
        // adrp x9, page; bl callee (which may write x9); then what reads
        // or writes x9; ret; callee: ret
        let with = |after: u32| {
            let words = [0x9000_0009, 0x9400_0003, after, 0xd65f_03c0, 0xd65f_03c0];
            shape_in(&words, &Memory::default())[0].1.clone()
        };
        // mov x9, #1: the page is dead after the call.
        assert!(with(0xd280_0029).is_empty());
        // ccmp x9, #0, #0, ne: read, as the callee may have left it.
        assert_eq!(with(0xfa40_1920), vec![0x10000]);
    }

    #[test]
    fn a_page_paths_disagree_on_is_a_value_where_read_after_they_meet() {
        // cbz x0, 3f; adrp x9, page; b 4f; 3: mov x9, x1; 4: then what
        // reads or writes x9; ret. Where the paths meet x9 is the page or
        // x1: a load through it may read either.
        let with = |after: u32| {
            let words = [
                0xb400_0060,
                0x9000_0009,
                0x1400_0002,
                0xaa01_03e9,
                after,
                0xd65f_03c0,
            ];
            shape_in(&words, &Memory::default())
        };
        // ldr w0, [x9, #8]: no page completes it, and the page escapes.
        let read = with(0xb940_0920);
        assert!(read[4].1.is_empty(), "{read:?}");
        assert_eq!(read[1].1, vec![0x10000], "{read:?}");
        // mov x9, #1: nothing reads it.
        let overwritten = with(0xd280_0029);
        assert!(overwritten[1].1.is_empty(), "{overwritten:?}");
    }

    /// `cbz x0, 1f; adrp x22, page; b 2f; 1: adrp x22, page;
    /// 2: add x0, x22, #0x10; cbz x1, 3f; mov x22, x1; 3: cbnz x2, 4f;
    /// ldp x21, x22, [sp, #0x20]; ret`, then `4:` follows.
    const TWO_PAGES_JOINED: [u32; 10] = [
        0xb400_0060,
        0x9000_0016,
        0x1400_0002,
        0x9000_0016,
        0x9100_42c0,
        0xb400_0041,
        0xaa01_03f6,
        0xb500_0062,
        0xa942_5bf5,
        0xd65f_03c0,
    ];

    #[test]
    fn a_page_two_paths_open_and_a_load_pair_then_overwrites_stays_one_address() {
        // cbz x0, 1f; adrp x22, page; b 2f; 1: adrp x22, page;
        // 2: add x0, x22, #0x10; cbz x1, 3f; mov x22, x1;
        // 3: cbnz x2, 4f; ldp x21, x22, [sp, #0x20]; ret; 4: bl callee
        // (the last word: the callee never returns); callee: ret.
        // Where the paths meet at 3 x22 is the page or x1, but no path
        // reads it there: the load pair writes it and the call never
        // comes back. The `add` is then the one address both `adrp`s
        // open, and neither page is a value of its own (lld's opt_lite,
        // `_nc_get_screensize`).
        let words: Vec<u32> = TWO_PAGES_JOINED
            .iter()
            .copied()
            .chain([0x9400_0001])
            .collect();
        let never_returns = Memory {
            noreturn: vec![0x1002c],
            ..Memory::default()
        };
        let shape = shape_in(&words, &never_returns);
        assert_eq!(shape[4].1, vec![0x10010], "{shape:?}");
        assert!(shape[1].1.is_empty(), "{shape:?}");
        assert!(shape[3].1.is_empty(), "{shape:?}");
        // A callee that may return runs on into what follows the
        // function, which may read x22: the page is then a value.
        let shape = shape_in(&words, &Memory::default());
        assert_eq!(shape[4].1, vec![0x10010], "{shape:?}");
        assert_eq!(shape[3].1, vec![0x10000], "{shape:?}");
    }

    #[test]
    fn a_read_after_a_call_that_never_returns_is_no_read_on_the_calls_path() {
        // cbz x3, 5f; cbz x0, 1f; adrp x22, page; b 2f; 1: adrp x22, page;
        // 2: add x0, x22, #0x10; cbz x1, 3f; mov x22, x1; 3: cbnz x2, 4f;
        // ldp x21, x22, [sp, #0x20]; ret; 4: bl callee (never returns);
        // 5: cmp w22, #0; ret; callee: ret. The read at 5 is reached by
        // the branch at the start, never from the call: x22 is dead where
        // the paths meet at 3, so the page there is no value (LLVM's
        // opt_lite, `_nc_setupterm` and `exit_terminfo`).
        let words: Vec<u32> = [0xb400_0183]
            .into_iter()
            .chain(TWO_PAGES_JOINED)
            .chain([0x9400_0003, 0x7100_02df, 0xd65f_03c0])
            .collect();
        let never_returns = Memory {
            noreturn: vec![0x10038],
            ..Memory::default()
        };
        let shape = shape_in(&words, &never_returns);
        assert_eq!(shape[5].1, vec![0x10010], "{shape:?}");
        assert!(shape[2].1.is_empty() && shape[4].1.is_empty(), "{shape:?}");
        // A callee that may return reaches the read with the page or x1.
        let shape = shape_in(&words, &Memory::default());
        assert_eq!(shape[4].1, vec![0x10000], "{shape:?}");
    }

    #[test]
    fn code_after_a_call_taken_never_to_return_holds_what_the_call_leaves() {
        // adrp x19, page; bl callee; ldr w0, [x19, #8]; ret; callee: ret.
        // If the callee does return after all, x19 still holds the page.
        let words = [
            0x9000_0013,
            0x9400_0003,
            0xb940_0a60,
            0xd65f_03c0,
            0xd65f_03c0,
        ];
        let noreturn = Memory {
            noreturn: vec![0x10010],
            ..Memory::default()
        };
        assert_eq!(shape_in(&words, &noreturn)[2].1, vec![0x10008]);
    }

    #[test]
    fn an_address_a_call_may_keep_in_a_temporary_escapes_where_read_after_it() {
        // adrp x3, page; add x3, x3, #0x10; bl callee (reads no
        // argument); then cmp x3, x2 (gcc's -fipa-ra kept x3) or
        // mov x3, #0; ret; callee: ret
        let with = |after: u32| {
            let words = [
                0x9000_0003,
                0x9100_4063,
                0x9400_0003,
                after,
                0xd65f_03c0,
                0xd65f_03c0,
            ];
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let around = Memory {
                arguments: vec![(0x10014, 0)],
                ..Memory::default()
            };
            decode_patched(&bytes, 0x10000, |_| None, &around)
                .iter()
                .flat_map(|d| d.refs.iter().map(|r| r.use_))
                .collect::<Vec<Use>>()
        };
        assert!(with(0xeb02_007f).contains(&Use::Address));
        assert!(with(0xd280_0003).contains(&Use::Access));
    }

    /// Decodes `bytes` loaded at `start`, with nothing around.
    fn decode(bytes: &[u8], start: u64) -> Vec<Decoded> {
        decode_patched(bytes, start, |_| None, &Memory::default())
    }

    /// The keys and reference targets of `words` decoded at 0x10000 with
    /// `around`.
    fn shape_in(words: &[u32], around: &Memory) -> Vec<(Key, Vec<u64>)> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        decode_patched(&bytes, 0x10000, |_| None, around)
            .into_iter()
            .map(|d| (d.key, d.refs.iter().map(|r| r.address).collect()))
            .collect()
    }

    fn uses(words: &[u32]) -> Vec<Use> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        decode(&bytes, 0x10000)
            .iter()
            .flat_map(|d| d.refs.iter().map(|r| r.use_))
            .collect()
    }

    #[test]
    fn a_table_only_loaded_from_is_accessed_not_observed() {
        // adrp x9, page; add x9, x9, #0x10; ldr w0, [x9, w8, uxtw #2]; ret
        let loaded = uses(&[0x9000_0009, 0x9100_4129, 0xb868_5920, 0xd65f_03c0]);
        assert!(loaded.contains(&Use::Access), "{loaded:?}");
        assert!(!loaded.contains(&Use::Address), "{loaded:?}");
    }

    fn reaches(words: &[u32]) -> Vec<Reach> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        decode(&bytes, 0x10000)
            .iter()
            .flat_map(|d| d.refs.iter().map(|r| r.reach))
            .collect()
    }

    #[test]
    fn the_side_of_an_address_its_loads_read() {
        // adrp x9, page; add x9, x9, #0x10; then a load; ret
        let with = |load: u32| reaches(&[0x9000_0009, 0x9100_4129, load, 0xd65f_03c0]);
        // ldr w0, [x9, w8, uxtw #2]: a zero-extended index
        assert_eq!(with(0xb868_5920), vec![Reach::Forward]);
        // ldur w0, [x9, #-4]: the word before (one past an array's end)
        assert_eq!(with(0xb85f_c120), vec![Reach::Backward]);
        // ldr w0, [x9, x8, lsl #2]: a 64-bit index, of either sign
        assert_eq!(with(0xb868_7920), vec![Reach::Unknown]);
        // A trap ends the path (brk #1, udf #0 where the ret was).
        for trap in [0xd420_0020, 0x0000_0000] {
            let trapped = reaches(&[0x9000_0009, 0x9100_4129, 0xb868_5920, trap]);
            assert_eq!(trapped, vec![Reach::Forward]);
        }
    }

    #[test]
    fn an_address_moved_into_the_result_register_escapes() {
        // adr x9, .+0x100; mov x0, x9; ret
        let returned = uses(&[0x1000_0809, 0xaa09_03e0, 0xd65f_03c0]);
        assert_eq!(returned, vec![Use::Address]);
        // adrp x9, page; add x9, x9, #0x10; ret: the address is dead at
        // the return, but the same pair with x0 is the result.
        let dead = uses(&[0x9000_0009, 0x9100_4129, 0xd65f_03c0]);
        // adrp x9, page; add x9, x9, #0x10; movk x9, #1, lsl #48; ret
        // keeps the low bits: the movk reads the address.
        let kept = uses(&[0x9000_0009, 0x9100_4129, 0xf2e0_0029, 0xd65f_03c0]);
        assert!(kept.contains(&Use::Address), "{kept:?}");
        assert!(!dead.contains(&Use::Address), "{dead:?}");
        // adrp x0, page; add x0, x0, #0x10; ret
        let result = uses(&[0x9000_0000, 0x9100_4000, 0xd65f_03c0]);
        assert!(result.contains(&Use::Address), "{result:?}");
    }

    #[test]
    fn a_pointer_passed_to_a_callee_escapes_though_the_callee_overwrites_it() {
        // adrp x0, page; ldr x0, [x0, #8]; bl callee; ret; callee: ret.
        // The callee reads x0 (its one argument) and returns an int there:
        // the pointer loaded from the slot is observed (an aligned(64)
        // function's address tested by the callee, say), not dereferenced.
        let words: [u32; 5] = [
            0x9000_0000,
            0xf940_0400,
            0x9400_0002,
            0xd65f_03c0,
            0xd65f_03c0,
        ];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let uses_with = |arguments: u8| {
            let around = Memory {
                integer_returns: vec![0x10010],
                arguments: vec![(0x10010, arguments)],
                ..Memory::default()
            };
            decode_patched(&bytes, 0x10000, |_| None, &around)
                .iter()
                .flat_map(|d| d.refs.iter().map(|r| r.use_))
                .filter(|&u| u != Use::Call)
                .collect::<Vec<_>>()
        };
        assert_eq!(uses_with(1), vec![Use::Access]);
        // A callee that reads no argument only overwrites x0.
        assert_eq!(uses_with(0), vec![Use::Deref]);
    }

    /// The keys and reference targets of `words` decoded at 0x10000.
    fn shape(words: &[u32]) -> Vec<(Key, Vec<u64>)> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        decode(&bytes, 0x10000)
            .into_iter()
            .map(|d| (d.key, d.refs.iter().map(|r| r.address).collect()))
            .collect()
    }

    #[test]
    fn the_linkers_relaxed_forms_of_an_address_are_one_form() {
        // adrp x9, page; add x9, x9, #0x10; ret (the address is 0x10010)
        let compiled = shape(&[0x9000_0009, 0x9100_4129, 0xd65f_03c0]);
        // nop; adr x9, .+0xc; ret (lld)
        let lld = shape(&[0xd503_201f, 0x1000_0069, 0xd65f_03c0]);
        // adr x9, .+0x10; nop; ret (GNU ld)
        let bfd = shape(&[0x1000_0089, 0xd503_201f, 0xd65f_03c0]);
        assert_eq!(compiled, lld);
        assert_eq!(compiled, bfd);
        assert_eq!(compiled[1].1, vec![0x10010]);
        // Another register, or another address, is another instruction.
        let other = shape(&[0x9000_000a, 0x9100_414a, 0xd65f_03c0]);
        assert_ne!(compiled[1].0, other[1].0);
        let elsewhere = shape(&[0xd503_201f, 0x1000_0089, 0xd65f_03c0]);
        assert_ne!(compiled[1].1, elsewhere[1].1);
    }

    #[test]
    fn lld_pairs_side_by_side_are_not_read_as_a_gnu_ld_pair() {
        // nop; adr x4, .+0x100; nop; adr x3, .+0x14; ret (lld relaxed both)
        // against nop; adr x4, .+0x100; adrp x3, page; add x3, x3, #0x20;
        // ret (the second pair out of range): the `adr x4; nop` in the
        // middle of the first is no GNU ld `adr; nop`.
        let both = shape(&[
            0xd503_201f,
            0x1000_0804,
            0xd503_201f,
            0x1000_00a3,
            0xd65f_03c0,
        ]);
        let one = shape(&[
            0xd503_201f,
            0x1000_0804,
            0x9000_0003,
            0x9100_8063,
            0xd65f_03c0,
        ]);
        assert_eq!(both, one);
        assert_eq!(both[3].1, vec![0x10020]);
    }

    #[test]
    fn a_branch_between_the_two_keeps_them_apart() {
        // adrp x9, page; add x9, x9, #0x10; ret; b .-8 (lands on the add)
        let split = shape(&[0x9000_0009, 0x9100_4129, 0xd65f_03c0, 0x17ff_fffe]);
        let fused = shape(&[0xd503_201f, 0x1000_0069, 0xd65f_03c0, 0x17ff_fffe]);
        assert_ne!(split[1].0, fused[1].0);
    }

    #[test]
    fn a_register_overwritten_by_another_pages_add_no_longer_holds_its_page() {
        // adrp x25, page; adrp x0, page; add x25, x0, #0x4e0;
        // add x24, x25, #0x50; ret: the last add offsets an address, it
        // completes no page.
        let targets: Vec<u64> = shape(&[
            0x9000_0019,
            0x9000_0000,
            0x9113_8019,
            0x9101_4338,
            0xd65f_03c0,
        ])
        .into_iter()
        .flat_map(|(_, targets)| targets)
        .collect();
        assert_eq!(targets, vec![0x104e0]);
    }

    #[test]
    fn an_adr_of_a_page_boundary_is_that_pages_adrp() {
        // adrp x5, page(0x20000); ldr x5, [x5, #0xf88]; ret
        let adrp = shape(&[0x9000_0085, 0xf947_c4a5, 0xd65f_03c0]);
        // adr x5, 0x20000 (from 0x10000: +0x10000); ldr x5, [x5, #0xf88]; ret
        let adr = shape(&[0x1008_0005, 0xf947_c4a5, 0xd65f_03c0]);
        assert_eq!(adrp, adr);
        assert_eq!(adrp[1].1, vec![0x20f88]);
        // nop; adr x5, 0x20000; ldr ...: lld's relaxed adrp+add, whose
        // target only happens to be a page boundary, stays an address.
        let relaxed = shape(&[0xd503_201f, 0x1007_ffe5, 0xf947_c4a5, 0xd65f_03c0]);
        assert_eq!(relaxed[1].1, vec![0x20000]);
    }

    #[test]
    fn a_pointer_loaded_and_only_loaded_through_in_a_loop_is_dereferenced() {
        // adrp x9, page; ldr x9, [x9, #0xfd0] (a GOT slot, say);
        // 1: ldr w12, [x9, w12, uxtw #2]; subs w8, w8, #1; b.ne 1b; ret
        let body = [
            0x9000_0009,
            0xf947_e929,
            0xb86c_592c,
            0x7100_0508,
            0x54ff_ffc1,
        ];
        let dereferenced = uses(&[&body[..], &[0xd65f_03c0]].concat());
        assert_eq!(dereferenced, vec![Use::Deref, Use::Jump]);
        // ... then mov x0, x9; ret: the pointer is the result.
        let returned = uses(&[&body[..], &[0xaa09_03e0, 0xd65f_03c0]].concat());
        assert_eq!(returned, vec![Use::Access, Use::Jump]);
    }
    #[test]
    fn a_branch_to_an_erratum_patch_is_the_instruction_it_displaced() {
        // adrp x9, page(0x20000); ldr x9, [x9, #0xfd0]; ret
        let plain = shape(&[0x9000_0089, 0xf947_e929, 0xd65f_03c0]);
        // adrp x9, page; b 0x18000 (the patch: ldr x9, [x9, #0xfd0]; b back); ret
        let bytes: Vec<u8> = [0x9000_0089u32, 0x1400_1fff, 0xd65f_03c0]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let patch = |target| (target == 0x18000).then_some(0xf947_e929);
        let patched: Vec<(Key, Vec<u64>)> =
            decode_patched(&bytes, 0x10000, patch, &Memory::default())
                .into_iter()
                .map(|d| (d.key, d.refs.iter().map(|r| r.address).collect()))
                .collect();
        assert_eq!(plain, patched);
        assert_eq!(plain[1].1, vec![0x20fd0]);
    }

    #[test]
    fn a_page_is_held_along_paths_not_in_address_order() {
        // cbnz w0, 3f; add x9, x8, #0x10; b 6f
        // 3: adrp x9, page(0x20000); ldr q0, [x9, #0x9b0]; ret
        // 6: strb w10, [x9, #8]; ret
        // The strb is reached only with x9 = x8 + 0x10: no page there.
        let decoded = shape(&[
            0x3500_0060,
            0x9100_4109,
            0x1400_0004,
            0x9000_0089,
            0x3dc2_6d20,
            0xd65f_03c0,
            0x3900_212a,
            0xd65f_03c0,
        ]);
        assert_eq!(decoded[4].1, vec![0x209b0]);
        assert!(decoded[6].1.is_empty(), "{:?}", decoded[6]);
    }

    /// Two dispatches: a jump table (at 0x30010, its cases at words 13
    /// and 15) while x23 holds page 0x20000, and a `br x11` after x23 was
    /// overwritten.
    const TWO_DISPATCHES: [u32; 18] = [
        0x9000_0097, // adrp x23, page(0x20000)
        0x9000_011a, // adrp x26, page(0x30000)
        0x9100_435a, // add x26, x26, #0x10
        0xb500_00e1, // cbnz x1, 2f
        0x7100_051f, // cmp w8, #1
        0x5400_0188, // b.hi 3f
        0x1000_00e9, // adr x9, 4f
        0x3868_6b4a, // ldrb w10, [x26, x8]
        0x8b0a_0929, // add x9, x9, x10, lsl #2
        0xd61f_0120, // br x9
        0xaa00_03f7, // 2: mov x23, x0
        0x1000_00cb, // adr x11, 3f
        0xd61f_0160, // br x11
        0xf944_82f8, // 4: ldr x24, [x23, #0x900]
        0xd65f_03c0, // ret
        0xf944_86f8, // ldr x24, [x23, #0x908]
        0xd65f_03c0, // ret
        0xd65f_03c0, // 3: ret
    ];

    #[test]
    fn a_jump_tables_cases_hold_the_pages_held_at_its_dispatch() {
        let table = Memory {
            pieces: vec![(0x30010, vec![0, 2])],
            ..Memory::default()
        };
        let decoded = shape_in(&TWO_DISPATCHES, &table);
        assert_eq!(decoded[13].1, vec![0x20900]);
        assert_eq!(decoded[15].1, vec![0x20908]);
        // An entry outside the function: no table, and the cases start
        // with what both dispatches agree on, which x23 is not.
        let outside = Memory {
            pieces: vec![(0x30010, vec![0, 200])],
            ..Memory::default()
        };
        let decoded = shape_in(&TWO_DISPATCHES, &outside);
        assert!(decoded[13].1.is_empty(), "{:?}", decoded[13]);
        // Unreadable: likewise.
        let decoded = shape_in(&TWO_DISPATCHES, &Memory::default());
        assert!(decoded[13].1.is_empty(), "{:?}", decoded[13]);
    }

    #[test]
    fn a_jump_table_of_unknown_length_goes_no_lower_than_its_base() {
        // Two dispatches on unbounded byte entries (an enum's switch with
        // no default): the cases of the first (word 9) lie before the
        // base of the second (word 17), where x23 no longer holds a page.
        let words = [
            0x9000_0097, // adrp x23, page(0x20000)
            0x9000_011a, // adrp x26, page(0x30000)
            0x9100_435a, // add x26, x26, #0x10
            0xb500_0101, // cbnz x1, 2f
            0x3940_0008, // ldrb w8, [x0]
            0x1000_0089, // adr x9, 1f
            0x3868_6b4a, // ldrb w10, [x26, x8]
            0x8b0a_0929, // add x9, x9, x10, lsl #2
            0xd61f_0120, // br x9
            0xf944_82f8, // 1: ldr x24, [x23, #0x900]
            0xd65f_03c0, // ret
            0xaa00_03f7, // 2: mov x23, x0
            0x3940_0008, // ldrb w8, [x0]
            0x1000_0089, // adr x9, 3f
            0x3868_6b4a, // ldrb w10, [x26, x8]
            0x8b0a_0929, // add x9, x9, x10, lsl #2
            0xd61f_0120, // br x9
            0xd65f_03c0, // 3: ret
        ];
        let decoded = shape_in(&words, &Memory::default());
        assert_eq!(decoded[9].1, vec![0x20900]);
    }

    #[test]
    fn nothing_falls_through_a_call_that_never_returns() {
        let words = [
            0x9000_0094, // adrp x20, page(0x20000)
            0xb500_0060, // cbnz x0, 1f
            0x9109_4294, // add x20, x20, #0x250
            0x9400_1ffd, // bl __stack_chk_fail (0x18000)
            0x9109_4281, // 1: add x1, x20, #0x250
            0xd65f_03c0, // ret
        ];
        let noreturn = Memory {
            noreturn: vec![0x18000],
            ..Memory::default()
        };
        assert_eq!(shape_in(&words, &noreturn)[4].1, vec![0x20250]);
        // A call that returns brings x20 = page + 0x250 there too.
        let decoded = shape_in(&words, &Memory::default());
        assert!(decoded[4].1.is_empty(), "{:?}", decoded[4]);
    }

    #[test]
    fn a_landing_pad_holds_the_pages_held_at_every_call() {
        let words = [
            0x9000_0097, // adrp x23, page(0x20000)
            0xb500_0061, // cbnz x1, 1f
            0x97ff_fffe, // bl 0
            0xd65f_03c0, // ret
            0xaa00_03f7, // 1: mov x23, x0
            0xd61f_02e0, // br x23
            0xf944_82f8, // pad: ldr x24, [x23, #0x900]
            0xd65f_03c0, // ret
        ];
        let pad = Memory {
            pads: vec![0x10018],
            ..Memory::default()
        };
        assert_eq!(shape_in(&words, &pad)[6].1, vec![0x20900]);
        // Not known as a pad, it may be where the `br` goes.
        let decoded = shape_in(&words, &Memory::default());
        assert!(decoded[6].1.is_empty(), "{:?}", decoded[6]);
    }

    #[test]
    fn a_copy_of_a_page_register_holds_the_page() {
        // adrp x27, page(0x20000); mov x21, x27; bl 0; mov x27, x0;
        // mov x27, x21; ldrb w8, [x27, #0x908]; ret
        let decoded = shape(&[
            0x9000_009b,
            0xaa1b_03f5,
            0x9400_0000,
            0xaa00_03fb,
            0xaa15_03fb,
            0x3964_2368,
            0xd65f_03c0,
        ]);
        assert_eq!(decoded[5].1, vec![0x20908]);
        // The copy itself is no use of the page.
        assert!(decoded[1].1.is_empty(), "{:?}", decoded[1]);
        assert!(decoded[0].1.is_empty(), "{:?}", decoded[0]);
    }
}
