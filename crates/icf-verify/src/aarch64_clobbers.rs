//! AArch64: which caller-saved registers (x0-x18 and x30) a call to each
//! function of an image may write: those its own code writes, and those
//! of every function it calls or branches to, to a fixpoint. gcc's
//! `-fipa-ra` keeps a value in a caller-saved register across a call to a
//! function of the same unit whose code it knows leaves that register
//! alone; the analysis of paths (`aarch64_flow.rs`) keeps what such a
//! register holds across a call only where this proves it of the callee.
//!
//! Main assumption: a function's code lies inside its symbol's extent,
//! and an indirect branch of it stays in its own code only where it
//! dispatches on a table (`add xT, xB, xE`; `br xT`, where `xB` is an
//! `adr` of the function's own code or an `adrp`+`add`). Any other
//! indirect branch or call, a branch or call into code that is no
//! function (a PLT entry, a veneer without a symbol), a word that does not
//! decode and a system call may write every caller-saved register. Every
//! callee keeps x19-x28 (AAPCS64).

use rayon::prelude::*;
use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Instruction, Opcode, Operand};

use crate::image::{Image, SymbolKind};

/// The registers a call may write (AAPCS64), as a mask of x0-x30: x0-x18
/// and the link register.
pub(crate) const CALLER_SAVED: u32 = ((1 << 19) - 1) | (1 << 30);

/// `register` as a bit of a mask of x0-x30 (none for sp or the zero
/// register, 31).
pub(crate) fn bit(register: u16) -> u32 {
    if register < 31 { 1 << register } else { 0 }
}

/// (entry, the registers a call to it may write), sorted by entry, for
/// every function of `image` with a size in code.
pub(crate) fn call_clobbers(image: &Image) -> Vec<(u64, u32)> {
    let mut functions: Vec<(u64, u64)> = image
        .symbols
        .iter()
        .filter(|s| s.kind == SymbolKind::Function && s.size > 0 && image.is_code(s.address))
        .map(|s| (s.address, s.address.saturating_add(s.size)))
        .collect();
    // Symbols of one entry (aliases) with different sizes: the largest.
    functions.sort_unstable_by_key(|&(start, end)| (start, std::cmp::Reverse(end)));
    functions.dedup_by_key(|&mut (start, _)| start);
    let own: Vec<Own> = functions
        .par_iter()
        .map(|&(start, end)| own_writes(image, start, end))
        .collect();
    // Where a branch or call lands: the functions whose code holds it.
    let holders = |target: u64| -> Option<Vec<usize>> {
        let after = functions.partition_point(|&(start, _)| start <= target);
        let holding: Vec<usize> = (after.saturating_sub(8)..after)
            .filter(|&f| functions[f].1 > target)
            .collect();
        (!holding.is_empty()).then_some(holding)
    };
    let mut writes: Vec<u32> = own.iter().map(|o| o.writes).collect();
    let mut callees: Vec<Vec<usize>> = vec![Vec::new(); functions.len()];
    for (f, facts) in own.iter().enumerate() {
        for &target in &facts.targets {
            match holders(target) {
                Some(found) => callees[f].extend(found.into_iter().filter(|&g| g != f)),
                None => writes[f] = CALLER_SAVED,
            }
        }
        callees[f].sort_unstable();
        callees[f].dedup();
    }
    // Each function writes what its callees write: propagate to callers
    // until nothing changes (each mask only grows, 20 bits at most).
    let mut callers: Vec<Vec<usize>> = vec![Vec::new(); functions.len()];
    for (f, list) in callees.iter().enumerate() {
        for &g in list {
            callers[g].push(f);
        }
    }
    let mut work: Vec<usize> = (0..functions.len()).collect();
    while let Some(g) = work.pop() {
        for &f in &callers[g] {
            let grown = writes[f] | writes[g];
            if grown != writes[f] {
                writes[f] = grown;
                work.push(f);
            }
        }
    }
    functions
        .iter()
        .zip(writes)
        .map(|(&(start, _), mask)| (start, mask & CALLER_SAVED))
        .collect()
}

/// What one function's own code says of the registers it writes.
struct Own {
    /// The caller-saved registers its instructions may write.
    writes: u32,
    /// Where its calls and its branches out of it go.
    targets: Vec<u64>,
}

/// The registers the code of `[start, end)` may write itself, and where
/// it calls or branches out of itself.
fn own_writes(image: &Image, start: u64, end: u64) -> Own {
    let everything = Own {
        writes: CALLER_SAVED,
        targets: Vec::new(),
    };
    let Some(bytes) = image.bytes(start, end - start) else {
        return everything;
    };
    let decoder = InstDecoder::default();
    let raw: Vec<Option<Instruction>> = bytes
        .chunks(4)
        .map(|word| {
            let mut reader = U8Reader::new(word);
            (word.len() == 4)
                .then(|| decoder.decode(&mut reader).ok())
                .flatten()
        })
        .collect();
    let mut own = Own {
        writes: 0,
        targets: Vec::new(),
    };
    for (i, instr) in raw.iter().enumerate() {
        let Some(instr) = instr else {
            return everything;
        };
        let pc = start + 4 * i as u64;
        own.writes |= writes(instr);
        let target = instr.operands.iter().find_map(|o| match *o {
            Operand::PCOffset(delta) => Some(pc.wrapping_add(delta as u64)),
            _ => None,
        });
        match instr.opcode {
            Opcode::BL => own.targets.extend(target),
            Opcode::B
            | Opcode::Bcc(_)
            | Opcode::BCcc(_)
            | Opcode::CBZ
            | Opcode::CBNZ
            | Opcode::TBZ
            | Opcode::TBNZ => {
                if let Some(target) = target
                    && !(start..end).contains(&target)
                {
                    // GNU ld's erratum 843419 patch: the instruction it
                    // displaced, then a branch back.
                    let patched = image
                        .erratum_patches
                        .binary_search(&target)
                        .is_ok()
                        .then(|| image.bytes(target, 4))
                        .flatten()
                        .and_then(|word| decoder.decode(&mut U8Reader::new(word)).ok());
                    match patched {
                        Some(displaced) => own.writes |= writes(&displaced),
                        None => own.targets.push(target),
                    }
                }
            }
            Opcode::BR | Opcode::BRAA | Opcode::BRAAZ | Opcode::BRAB | Opcode::BRABZ
                if !dispatches_in_place(&raw, i, start, end) =>
            {
                return everything;
            }
            Opcode::BLR | Opcode::BLRAA | Opcode::BLRAAZ | Opcode::BLRAB | Opcode::BLRABZ => {
                return everything;
            }
            _ => {}
        }
    }
    own
}

/// The general registers `instr` may write, as a mask of x0-x30: its
/// first two register operands (a destination, a load pair's second
/// register, an atomic's loaded value; both registers of a pair), a
/// written-back base, `sysl`'s register, the link register for a call,
/// and what pointer authentication and system calls write without naming
/// it. More than it
/// writes (a store's value register) is no error here.
pub(crate) fn writes(instr: &Instruction) -> u32 {
    let mut mask = 0;
    for (index, operand) in instr.operands.iter().enumerate() {
        match *operand {
            Operand::Register(_, r) | Operand::RegisterOrSP(_, r) if index < 2 => mask |= bit(r),
            Operand::RegisterPair(_, r) => mask |= bit(r) | bit(r + 1),
            Operand::RegPreIndex(base, _, true)
            | Operand::RegPostIndex(base, _)
            | Operand::RegPostIndexReg(base, _) => mask |= bit(base),
            _ => {}
        }
    }
    match instr.opcode {
        Opcode::BL
        | Opcode::BLR
        | Opcode::BLRAA
        | Opcode::BLRAAZ
        | Opcode::BLRAB
        | Opcode::BLRABZ
        | Opcode::PACIASP
        | Opcode::PACIBSP
        | Opcode::PACIAZ
        | Opcode::PACIBZ
        | Opcode::AUTIASP
        | Opcode::AUTIBSP
        | Opcode::AUTIAZ
        | Opcode::AUTIBZ
        | Opcode::XPACLRI => mask |= bit(30),
        Opcode::PACIA1716
        | Opcode::PACIB1716
        | Opcode::AUTIA1716
        | Opcode::AUTIB1716
        | Opcode::PACIA171615
        | Opcode::PACIB171615
        | Opcode::AUTIA171615
        | Opcode::AUTIB171615 => mask |= bit(15) | bit(16) | bit(17),
        Opcode::SVC | Opcode::HVC | Opcode::SMC => mask |= CALLER_SAVED,
        // `sysl` names the register it writes last.
        Opcode::SYSL(_) => {
            if let Operand::Register(_, r) = instr.operands[2] {
                mask |= bit(r);
            }
        }
        _ => {}
    }
    mask
}

/// Whether the indirect branch at word `at` of the function `[start,
/// end)` dispatches on a table: `add xT, xB, xE, ...; br xT`, where `xB`
/// was last written by an `adr` of the function's own code, or by an
/// `add` of an immediate to a page (`adrp`): the table's own address.
fn dispatches_in_place(raw: &[Option<Instruction>], at: usize, start: u64, end: u64) -> bool {
    let Some(Operand::Register(_, target)) = raw[at].as_ref().map(|b| b.operands[0]) else {
        return false;
    };
    let Some(add) = last_writer(raw, at, target) else {
        return false;
    };
    let (Some(Opcode::ADD), Some(Operand::Register(_, base) | Operand::RegisterOrSP(_, base))) = (
        raw[add].as_ref().map(|a| a.opcode),
        raw[add].as_ref().map(|a| a.operands[1]),
    ) else {
        return false;
    };
    if !matches!(
        raw[add].as_ref().map(|a| a.operands[2]),
        Some(Operand::RegShift(..))
    ) {
        return false;
    }
    let Some(made) = last_writer(raw, add, base) else {
        return false;
    };
    let Some(instr) = raw[made].as_ref() else {
        return false;
    };
    match (instr.opcode, instr.operands[1], instr.operands[2]) {
        (Opcode::ADR, Operand::PCOffset(delta), _) => {
            let pc = start + 4 * made as u64;
            (start..end).contains(&pc.wrapping_add(delta as u64))
        }
        (
            Opcode::ADD,
            Operand::Register(_, page) | Operand::RegisterOrSP(_, page),
            Operand::Immediate(_),
        ) => last_writer(raw, made, page)
            .and_then(|k| raw[k].as_ref())
            .is_some_and(|p| p.opcode == Opcode::ADRP),
        _ => false,
    }
}

/// The word last writing `register` before word `at`, within 16 words
/// and no call or end of a path back.
fn last_writer(raw: &[Option<Instruction>], at: usize, register: u16) -> Option<usize> {
    for k in (at.saturating_sub(16)..at).rev() {
        let instr = raw[k].as_ref()?;
        if ends_path(instr.opcode) || matches!(instr.opcode, Opcode::BL | Opcode::BLR) {
            return None;
        }
        if writes(instr) & bit(register) != 0 {
            return Some(k);
        }
    }
    None
}

/// A branch to a register's address (`br`, or with pointer
/// authentication): a jump table's dispatch or a tail call.
pub(crate) fn is_register_branch(opcode: Opcode) -> bool {
    matches!(
        opcode,
        Opcode::BR | Opcode::BRAA | Opcode::BRAAZ | Opcode::BRAB | Opcode::BRABZ
    )
}

/// An unconditional branch, return or trap: nothing falls through it.
pub(crate) fn ends_path(opcode: Opcode) -> bool {
    is_register_branch(opcode)
        || matches!(
            opcode,
            Opcode::B
                | Opcode::RET
                | Opcode::RETAA
                | Opcode::RETAB
                | Opcode::ERET
                | Opcode::BRK
                | Opcode::UDF
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(words: &[u32]) -> Vec<Option<Instruction>> {
        let decoder = InstDecoder::default();
        words
            .iter()
            .map(|w| decoder.decode(&mut U8Reader::new(&w.to_le_bytes())).ok())
            .collect()
    }

    #[test]
    fn what_an_instruction_writes() {
        let one = |word: u32| writes(decoded(&[word])[0].as_ref().expect("decodes"));
        // adrp x1, page; add x1, x1, #0x10
        assert_eq!(one(0x9000_0001), bit(1));
        assert_eq!(one(0x9100_4021), bit(1));
        // ldp x2, x3, [sp], #16: both, and sp (not counted)
        assert_eq!(one(0xa8c1_0fe2), bit(2) | bit(3));
        // ldadd w1, w2, [x3]: w2 is loaded (w1 counts too)
        assert_eq!(one(0xb821_0062) & bit(2), bit(2));
        // bl: the link register
        assert_eq!(one(0x9400_0000), bit(30));
        // svc #0: anything a system call may
        assert_eq!(one(0xd400_0001), CALLER_SAVED);
    }

    #[test]
    fn a_table_dispatch_stays_in_its_function() {
        // adr x9, .+0x10; ldrb w10, [x26, x8]; add x9, x9, x10, lsl #2;
        // br x9
        let dispatch = decoded(&[0x1000_0089, 0x3868_6b4a, 0x8b0a_0929, 0xd61f_0120]);
        assert!(dispatches_in_place(&dispatch, 3, 0x10000, 0x10020));
        // The adr names code outside the function.
        assert!(!dispatches_in_place(&dispatch, 3, 0x10000, 0x10008));
        // ldr x9, [x0]; br x9: a tail call through a pointer.
        let pointer = decoded(&[0xf940_0009, 0xd61f_0120]);
        assert!(!dispatches_in_place(&pointer, 1, 0x10000, 0x10008));
    }
}
