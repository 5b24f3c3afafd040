//! x86-64 references in linked code (see `crate::linked`): rel32 branches,
//! RIP-relative operands, and 32- and 64-bit immediates and absolute
//! displacements that may be addresses.
//!
//! Jump tables are recognized by the dispatch compilers emit: in
//! position-independent code `lea T(%rip), %r` followed (within a few
//! instructions) by `movslq (%r,%idx,4), ...`, whose entries are distances
//! from `T`; in a non-PIE executable a load or jump from `T(,%idx,8)`,
//! whose entries are addresses. The table's size comes from a range check
//! on the register that indexes it (`cmp $N` then `ja`, see
//! [`RangeChecks`]); otherwise it is unknown.

use super::relocate::EndWatch;
use crate::SketchMarks;
use crate::linked::{LinkedReference, LinkedScan, LinkedUse, TableShape};
use iced_x86::{
    ConstantOffsets, Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind, Register,
};
use object::elf;
use std::cell::RefCell;
use std::collections::HashMap;

/// How many instructions after its `lea` a table's `movslq` may come.
const DISPATCH_WINDOW: usize = 6;

/// Code up to this size is decoded once into a buffer of its thread, read
/// again only where it indexes a jump table (the range checks need every
/// branch target first); larger code (a stripped image's `.text`, one
/// range) is decoded twice rather than held whole.
const DECODE_ONCE: usize = 64 * 1024;

/// An instruction as decoded, with where its displacement and immediates
/// lie.
type Decoded = (Instruction, ConstantOffsets);

thread_local! {
    /// The instructions of the code being read and what its scan marks,
    /// kept between calls.
    static DECODED: RefCell<(Vec<Decoded>, Marking)> = const {
        RefCell::new((
            Vec::new(),
            Marking {
                marked: Vec::new(),
                inside: Vec::new(),
            },
        ))
    };
}

/// What one decode of a piece tells besides its references, watched as
/// every instruction (invalid ones too) goes by.
struct Watch {
    end: EndWatch,
    /// The sketch's shape: its operations, `nop`s aside (see `lift::sketch`).
    shape: crate::lifting::Shape,
    /// An instruction did not decode: the lifter gives up, no sketch.
    invalid: bool,
}

impl Watch {
    fn new(code: &[u8], address: u64) -> Watch {
        Watch {
            end: EndWatch::new(code, address),
            shape: crate::lifting::Shape::default(),
            invalid: false,
        }
    }

    fn see(&mut self, instr: &Instruction) {
        self.end.see(instr);
        self.invalid |= instr.is_invalid();
        let mnemonic = instr.mnemonic();
        if mnemonic != Mnemonic::Nop {
            self.shape.add(mnemonic as u64);
        }
    }

    fn finish(&self, marks: Option<SketchMarks>) -> LinkedScan {
        LinkedScan {
            runs_off_the_end: self.end.runs_off(),
            shape: (!self.invalid).then(|| self.shape.finish()),
            marks: marks.filter(|_| !self.invalid),
        }
    }
}

/// The valid instructions of `code` loaded at `address`, in order;
/// `watch` sees every instruction go by.
fn decode<'a>(
    code: &'a [u8],
    address: u64,
    mut watch: Option<&'a mut Watch>,
) -> impl Iterator<Item = Decoded> + 'a {
    let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    std::iter::from_fn(move || {
        while decoder.can_decode() {
            decoder.decode_out(&mut instr);
            if let Some(watch) = watch.as_deref_mut() {
                watch.see(&instr);
            }
            if !instr.is_invalid() {
                return Some((instr, decoder.get_constant_offsets(&instr)));
            }
        }
        None
    })
}

/// The targets of the `call rel32`s in `code`, linked at `address`,
/// decoded linearly (see `Architecture::linked_call_targets`).
pub(super) fn call_targets(code: &[u8], address: u64) -> Vec<u64> {
    let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    let mut targets = Vec::new();
    while decoder.can_decode() {
        decoder.decode_out(&mut instr);
        if instr.flow_control() == FlowControl::Call && instr.op0_kind() == OpKind::NearBranch64 {
            targets.push(instr.near_branch_target());
        }
    }
    targets
}

/// The length of `code`, linked at `address`, without the `nop`s and
/// `int3`s that end it; all of it where an instruction does not decode.
pub(super) fn before_padding(code: &[u8], address: u64) -> usize {
    let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    let mut end = 0;
    while decoder.can_decode() {
        decoder.decode_out(&mut instr);
        if instr.is_invalid() {
            return code.len();
        }
        if !matches!(instr.mnemonic(), Mnemonic::Nop | Mnemonic::Int3) {
            end = (instr.next_ip() - address) as usize;
        }
    }
    end
}

/// The references in `code`, linked at `address`, appended to `out`;
/// returns what the same decode tells besides (see [`LinkedScan`]).
pub(super) fn references(code: &[u8], address: u64, out: &mut Vec<LinkedReference>) -> LinkedScan {
    let mut watch = Watch::new(code, address);
    if code.len() > DECODE_ONCE {
        let mut checks =
            RangeChecks::new(decode(code, address, Some(&mut watch)).map(|(instr, _)| instr));
        let _ = scan(
            decode(code, address, None),
            code.len(),
            address,
            out,
            Some(&mut checks),
            None,
        );
        return watch.finish(None);
    }
    let marks = DECODED.with_borrow_mut(|(decoded, marking)| {
        decoded.clear();
        decoded.extend(decode(code, address, Some(&mut watch)));
        let found = out.len();
        marking.clear();
        let whole = scan(
            decoded.iter().copied(),
            code.len(),
            address,
            out,
            None,
            Some(marking),
        );
        if whole.is_none() {
            out.truncate(found);
            marking.clear();
            let mut checks = RangeChecks::new(decoded.iter().map(|&(instr, _)| instr));
            let _ = scan(
                decoded.iter().copied(),
                code.len(),
                address,
                out,
                Some(&mut checks),
                Some(marking),
            );
        }
        marking.finish(decoded, address)
    });
    watch.finish(marks)
}

/// What a scan of code decoded whole gathers for a sketch's marks (see
/// [`SketchMarks`]).
struct Marking {
    /// The offsets of the instructions a sketch must decode: each that
    /// branches out of the code or reads an operand counted from `rip`.
    marked: Vec<u32>,
    /// Where branches inside the code land.
    inside: Vec<u64>,
}

impl Marking {
    /// After `instr`, at offset `start`; `leaves` when it is a direct
    /// branch out of the code. Marks whatever names a place outside as
    /// `lift::names_a_place_outside` tells (a branch operand is always an
    /// instruction's first, an operand counted from `rip` always a memory
    /// operand); the instructions holding relocations are the reader's to
    /// add ([`SketchMarks::add`]).
    fn see(&mut self, instr: &Instruction, start: u64, leaves: bool) {
        let branch = match instr.op0_kind() {
            OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => true,
            OpKind::FarBranch16 | OpKind::FarBranch32 => {
                self.marked.push(start as u32);
                return;
            }
            _ => false,
        };
        if branch && !leaves {
            self.inside.push(instr.near_branch_target());
        }
        if (branch && leaves) || instr.memory_base() == Register::RIP {
            self.marked.push(start as u32);
        }
    }

    /// The marks, unless a branch lands inside an instruction of
    /// `decoded` (the code, at `address`) or the code ends in a `nop`.
    fn finish(&mut self, decoded: &[Decoded], address: u64) -> Option<SketchMarks> {
        let (last, _) = decoded.last()?;
        if last.mnemonic() == Mnemonic::Nop {
            return None;
        }
        self.inside.sort_unstable();
        self.inside.dedup();
        let mut starts = decoded.iter().map(|(instr, _)| instr.ip()).peekable();
        for &target in &self.inside {
            while starts.next_if(|&start| start < target).is_some() {}
            starts.next_if_eq(&target)?;
        }
        Some(SketchMarks {
            marked: self.marked.as_slice().into(),
            last: (last.ip() - address) as u32,
        })
    }

    fn clear(&mut self) {
        self.marked.clear();
        self.inside.clear();
    }
}

/// One pass over `code`: the references, with the sizes `checks` gives
/// the jump tables. Without `checks`, `None` (and part of the references)
/// at the first jump table: what the pass found up to there is all it
/// finds wherever no table is indexed, as the checks only size tables.
fn scan(
    instructions: impl Iterator<Item = Decoded>,
    len: usize,
    address: u64,
    out: &mut Vec<LinkedReference>,
    mut checks: Option<&mut RangeChecks>,
    mut marking: Option<&mut Marking>,
) -> Option<()> {
    // The last RIP-relative `lea`s: destination register, index in `out`,
    // instruction count when seen.
    let mut leas: Vec<(Register, usize, usize)> = Vec::new();
    let mut count = 0usize;
    for (instr, offsets) in instructions {
        count += 1;
        if let Some(checks) = checks.as_deref_mut() {
            checks.arrive(instr.ip());
        }
        leas.retain(|&(_, _, seen)| count - seen <= DISPATCH_WINDOW);
        if let Some(table) = relative_table_base(&instr, &leas) {
            out[table].table = Some(TableShape::Relative32 {
                entries: checks.as_deref()?.entries(instr.memory_index()),
            });
        }
        // The operands are looked at last: most instructions have no
        // index scaled by 8.
        let absolute_table = instr.memory_index_scale() == 8
            && instr.memory_base() == Register::None
            && (0..instr.op_count()).any(|i| instr.op_kind(i) == OpKind::Memory);
        let absolute_entries = match absolute_table {
            true => Some(checks.as_deref()?.entries(instr.memory_index())),
            false => None,
        };
        if let Some(checks) = checks.as_deref_mut() {
            checks.leave(&instr);
        }
        let start = instr.ip() - address;
        let end = instr.next_ip();
        // A PC-relative field counts from the end of its instruction.
        let bias = |field: u64| -> i64 { -((end - (address + field)) as i64) };
        let is_branch = matches!(instr.op0_kind(), OpKind::NearBranch64) && instr.op_count() == 1;
        // A rel32 branch; or a short one out of the decoded code (a tail
        // call to the function the assembler placed next): a field a linker
        // never wrote, but one that names another place all the same.
        let target = instr.near_branch_target();
        let leaves = target < address || target - address >= len as u64;
        let branch_type = match offsets.immediate_size() {
            4 => Some(elf::R_X86_64_PLT32),
            1 if leaves => Some(elf::R_X86_64_PC8),
            _ => None,
        };
        if let Some(r_type) = branch_type.filter(|_| is_branch) {
            let field = start + offsets.immediate_offset() as u64;
            out.push(LinkedReference {
                offset: field,
                r_type: r_type.0,
                instruction: start as u32,
                target,
                bias: bias(field),
                use_: LinkedUse::Branch,
                table: None,
            });
        } else {
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
                        instruction: start as u32,
                        target: instr.ip_rel_memory_address(),
                        bias: bias(field),
                        use_: LinkedUse::PcRelative,
                        table: None,
                    });
                } else {
                    // `mov table(,%rax,8), %rdx`: maybe a sign-extended absolute address.
                    let mut reference = absolute(
                        field,
                        start,
                        elf::R_X86_64_32S.0,
                        instr.memory_displacement64(),
                    );
                    if let Some(entries) = absolute_entries {
                        reference.table = Some(TableShape::Absolute64 { entries });
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
                    out.push(absolute(field, start, r_type, value));
                }
            }
        }
        if let Some(marking) = marking.as_deref_mut() {
            marking.see(&instr, start, leaves);
        }
    }
    Some(())
}

/// A field at `offset`, in the instruction at `instruction`, holding
/// `value`.
fn absolute(offset: u64, instruction: u64, r_type: u32, value: u64) -> LinkedReference {
    LinkedReference {
        offset,
        r_type,
        instruction: instruction as u32,
        target: value,
        bias: 0,
        use_: LinkedUse::Absolute,
        table: None,
    }
}

/// Which registers a range check bounds, at each instruction of a linear
/// decode: the bound `cmp $N, %r` puts on `%r` holds past a `ja`/`jae`
/// (the fall-through) or at the target of a `jbe`/`jb`, and through
/// register copies; it is forgotten where `%r` is written, at a call for
/// the registers a call clobbers, and where paths join, unless every edge
/// into the join (all of them forward, so all seen) carries it.
struct RangeChecks {
    /// Registers (full width) bounded here, with the number of entries.
    bounds: Vec<(Register, u32)>,
    /// The `cmp $N, %r` just decoded.
    compared: Option<(Register, u64)>,
    /// What every forward branch seen so far to a target carries there
    /// (the bounds all of them agree on), by target.
    carried: HashMap<u64, Vec<(Register, u32)>>,
    /// Branch targets, and whether a backward branch reaches them (then
    /// nothing is known there), sorted: the instructions arrive in address
    /// order, so `next_target` walks them once.
    targets: Vec<(u64, bool)>,
    next_target: usize,
    /// The last instruction does not go on to the next.
    stopped: bool,
}

impl RangeChecks {
    /// The checks of the code `instructions` are, in address order.
    fn new(instructions: impl Iterator<Item = Instruction>) -> RangeChecks {
        let mut targets: Vec<(u64, bool)> = instructions
            .filter(|instr| {
                matches!(instr.op0_kind(), OpKind::NearBranch64) && instr.op_count() == 1
            })
            .map(|instr| {
                let target = instr.near_branch_target();
                (target, target <= instr.ip())
            })
            .collect();
        targets.sort_unstable();
        // One entry per target: backward if any branch to it is.
        targets.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            kept.1 |= same && later.1;
            same
        });
        RangeChecks {
            bounds: Vec::new(),
            compared: None,
            carried: HashMap::new(),
            targets,
            next_target: 0,
            stopped: false,
        }
    }

    /// Before the instruction at `ip`: where paths join, keep only what
    /// every edge into it carries.
    fn arrive(&mut self, ip: u64) {
        while self
            .targets
            .get(self.next_target)
            .is_some_and(|&(target, _)| target < ip)
        {
            self.next_target += 1;
        }
        let Some(&(_, backward)) = self
            .targets
            .get(self.next_target)
            .filter(|&&(target, _)| target == ip)
        else {
            return;
        };
        let branched = self.carried.remove(&ip);
        let fell = (!self.stopped).then(|| std::mem::take(&mut self.bounds));
        self.bounds = match (branched, fell) {
            _ if backward => Vec::new(),
            (Some(mut bounds), Some(fell)) => {
                bounds.retain(|bound| fell.contains(bound));
                bounds
            }
            (Some(bounds), None) | (None, Some(bounds)) => bounds,
            (None, None) => Vec::new(),
        };
    }

    /// How many entries a table indexed by `index` has, if a range check
    /// says.
    fn entries(&self, index: Register) -> Option<u32> {
        let index = index.full_register();
        self.bounds
            .iter()
            .find(|&&(register, _)| register == index)
            .map(|&(_, entries)| entries)
    }

    fn forget(&mut self, register: Register) {
        let register = register.full_register();
        self.bounds.retain(|&(r, _)| r != register);
    }

    /// After `instr`.
    fn leave(&mut self, instr: &Instruction) {
        let compared = self.compared.take();
        self.stopped = false;
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
                self.compared = Some((register(0), instr.immediate(1)));
            }
            Mnemonic::Cmp | Mnemonic::Test => {}
            Mnemonic::Ja | Mnemonic::Jae | Mnemonic::Jbe | Mnemonic::Jb
                if instr.op0_kind() == OpKind::NearBranch64 =>
            {
                // `ja`/`jbe`: at most N; `jae`/`jb`: below N.
                let bounded = compared.and_then(|(r, n)| {
                    let entries = match instr.mnemonic() {
                        Mnemonic::Ja | Mnemonic::Jbe => n.checked_add(1)?,
                        _ => n,
                    };
                    Some((r, u32::try_from(entries).ok()?))
                });
                let with = |mut bounds: Vec<(Register, u32)>| {
                    if let Some((r, entries)) = bounded {
                        bounds.retain(|&(b, _)| b != r);
                        bounds.push((r, entries));
                    }
                    bounds
                };
                let (taken, falls) = match instr.mnemonic() {
                    Mnemonic::Ja | Mnemonic::Jae => {
                        (self.bounds.clone(), with(self.bounds.clone()))
                    }
                    _ => (with(self.bounds.clone()), self.bounds.clone()),
                };
                self.carry(instr.near_branch_target(), instr.ip(), taken);
                self.bounds = falls;
            }
            _ if matches!(instr.op0_kind(), OpKind::NearBranch64) => {
                let target = instr.near_branch_target();
                self.carry(target, instr.ip(), self.bounds.clone());
                if instr.flow_control() == FlowControl::UnconditionalBranch {
                    self.stopped = true;
                }
                if instr.flow_control() == FlowControl::Call {
                    self.forget_call_clobbered();
                }
            }
            _ if matches!(
                instr.flow_control(),
                FlowControl::Return | FlowControl::IndirectBranch | FlowControl::Exception
            ) =>
            {
                self.stopped = true;
            }
            _ if matches!(
                instr.flow_control(),
                FlowControl::IndirectCall | FlowControl::Call
            ) =>
            {
                self.forget_call_clobbered();
            }
            Mnemonic::Mov
                if instr.op0_kind() == OpKind::Register && instr.op1_kind() == OpKind::Register =>
            {
                let carried = self.entries(instr.op1_register());
                self.forget(instr.op0_register());
                if let Some(entries) = carried {
                    self.bounds.push((register(0), entries));
                }
            }
            _ if instr.op0_kind() == OpKind::Register => self.forget(instr.op0_register()),
            _ => {}
        }
    }

    fn carry(&mut self, target: u64, from: u64, bounds: Vec<(Register, u32)>) {
        if target <= from {
            return;
        }
        match self.carried.entry(target) {
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(bounds);
            }
            std::collections::hash_map::Entry::Occupied(mut entry) => {
                entry.get_mut().retain(|bound| bounds.contains(bound));
            }
        }
    }

    /// The System V ABI's caller-saved registers do not survive a call.
    fn forget_call_clobbered(&mut self) {
        for register in [
            Register::RAX,
            Register::RCX,
            Register::RDX,
            Register::RSI,
            Register::RDI,
            Register::R8,
            Register::R9,
            Register::R10,
            Register::R11,
        ] {
            self.forget(register);
        }
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
    fn the_scan_tells_whether_code_runs_off_its_end_as_a_decode_for_it_alone_does() {
        let endings: [&[u8]; 11] = [
            &[0x48, 0x89, 0xf8, 0xc3],             // mov; ret
            &[0xeb, 0xfe],                         // jmp .
            &[0x0f, 0x0b],                         // ud2
            &[0xe8, 0, 0, 0, 0],                   // call
            &[0x74, 0x02],                         // je
            &[0x83, 0xc7, 0x01],                   // add $1, %edi
            &[0xe9, 0, 0, 0, 0, 0x90, 0x90],       // jmp; nop; nop
            &[0x74, 0x02, 0x90],                   // je; nop
            &[0xc3, 0x90, 0, 0, 0, 0],             // ret; nop; zeros
            &[0xc3, 0x48, 0x89],                   // ret; a `mov` cut short
            &[0x48, 0x8d, 0x05, 0, 0, 0, 0, 0xf4], // lea; hlt
        ];
        for ending in endings {
            // Short code is decoded once; code past `DECODE_ONCE` twice,
            // the end watched in the first.
            for lead in [0, DECODE_ONCE] {
                let mut code = [0x83, 0xc7, 0x01].repeat(lead / 3 + 1);
                code.truncate(lead / 3 * 3);
                code.extend_from_slice(ending);
                let mut out = Vec::new();
                assert_eq!(
                    references(&code, 0x40_1000, &mut out).runs_off_the_end,
                    super::super::relocate::runs_off_the_end(&code),
                    "{ending:02x?} after {lead} bytes"
                );
            }
        }
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
    fn a_short_branch_out_of_the_code_names_its_target() {
        // jmp .+0x12 (rel8, past the end): a tail call to the next function
        let found = refs(&[0xeb, 0x10], 0x1000);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].r_type, elf::R_X86_64_PC8.0);
        assert_eq!(found[0].target, 0x1012);
        assert_eq!(found[0].bias, -1);
        assert_eq!(found[0].use_, LinkedUse::Branch);
    }

    #[test]
    fn short_branches_inside_the_code_are_not_fields_a_relocation_can_name() {
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
        // cmp $0xf, %edi; ja (past the code); mov %edi, %eax;
        // lea 0x100(%rip), %rcx; movslq (%rcx,%rax,4), %rax
        let code = [
            0x83, 0xff, 0x0f, // cmp $0xf,%edi
            0x77, 0x20, // ja
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

    #[test]
    fn one_decode_finds_what_two_find() {
        // Without a table the code is decoded once; with one, the pass
        // stops there and the code is decoded again with its range checks
        // (what it had found is not kept twice).
        let call_then_table = [
            0xe8, 0xfb, 0x0f, 0x00, 0x00, // call 0x2000
            0x83, 0xff, 0x0f, // cmp $0xf,%edi
            0x77, 0x20, // ja (past the code)
            0x48, 0x8d, 0x0d, 0x00, 0x01, 0x00, 0x00, // lea 0x100(%rip),%rcx
            0x48, 0x63, 0x04, 0xb9, // movslq (%rcx,%rdi,4),%rax
            0xff, 0x24, 0xc5, 0x00, 0x20, 0x40, 0x00, // jmp *0x402000(,%rax,8)
        ];
        let no_table = [
            0xe8, 0xfb, 0x0f, 0x00, 0x00, // call 0x2000
            0x48, 0x8d, 0x3d, 0xf4, 0x1f, 0x00, 0x00, // lea 0x3000(%rip),%rdi
            0xbf, 0x00, 0x10, 0x40, 0x00, // mov $0x401000,%edi
        ];
        for code in [&call_then_table[..], &no_table[..]] {
            let mut twice = Vec::new();
            let mut checks = RangeChecks::new(decode(code, 0x1000, None).map(|(instr, _)| instr));
            let decoded = decode(code, 0x1000, None);
            assert!(
                scan(
                    decoded,
                    code.len(),
                    0x1000,
                    &mut twice,
                    Some(&mut checks),
                    None
                )
                .is_some()
            );
            assert_eq!(refs(code, 0x1000), twice);
        }
        let tables = refs(&call_then_table, 0x1000);
        assert_eq!(tables.iter().filter(|r| r.table.is_some()).count(), 2);
        // The call, the `ja` out of the code, the `lea` and the `jmp`.
        assert_eq!(tables.len(), 4, "{tables:?}");
    }

    #[test]
    fn only_a_range_check_bounds_a_table() {
        // cmp $1, %eax; jne L; test %esi,%esi; jne (past); L: lea T(%rip), %rdx;
        // movslq (%rdx,%rax,4), %rax: an equality test bounds nothing.
        let code = [
            0x83, 0xf8, 0x01, // cmp $1,%eax
            0x75, 0x04, // jne L
            0x85, 0xf6, // test %esi,%esi
            0x75, 0x40, // jne past the code
            0x48, 0x8d, 0x15, 0x00, 0x01, 0x00, 0x00, // L: lea 0x100(%rip),%rdx
            0x48, 0x63, 0x04, 0x82, // movslq (%rdx,%rax,4),%rax
        ];
        let found = refs(&code, 0x1000);
        let table = found.iter().find_map(|r| r.table);
        assert_eq!(table, Some(TableShape::Relative32 { entries: None }));
        // A bound on one path into a join, not on the other, is no bound:
        // cmp $0xf,%eax; ja L; xor %eax,%eax... here `jbe L` carries it, the
        // fall-through (unbounded, since `jbe` bounds the taken edge) joins.
        let code = [
            0x83, 0xf8, 0x0f, // cmp $0xf,%eax
            0x76, 0x02, // jbe L (bounded there)
            0xff, 0xc0, // inc %eax (falls into L unbounded)
            0x48, 0x8d, 0x15, 0x00, 0x01, 0x00, 0x00, // L: lea 0x100(%rip),%rdx
            0x48, 0x63, 0x04, 0x82, // movslq (%rdx,%rax,4),%rax
        ];
        let found = refs(&code, 0x1000);
        let table = found.iter().find_map(|r| r.table);
        assert_eq!(table, Some(TableShape::Relative32 { entries: None }));
    }
}
