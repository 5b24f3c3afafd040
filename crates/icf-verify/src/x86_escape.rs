//! x86-64: whether the address a RIP-relative `lea` puts in a register is
//! observed, or only used to reach the data behind it. Clang's
//! `.llvm_addrsig` leaves out a table the code only loads from, and icf
//! may merge it with its twin; the merge is invisible exactly when no path
//! from the `lea` lets the address itself out.
//!
//! The scan follows every path through the decoded function (both ways at
//! a conditional branch, loops until the set of registers holding the
//! address repeats) and tracks the registers holding the address or a
//! pointer derived from it. Main assumption: code reached from the `lea`
//! is in the decoded function; anything it cannot follow (an indirect
//! branch, a jump out of the function, data, a budget of steps) counts as
//! an escape.

use iced_x86::{
    FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register,
};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use crate::code::Reach;
use crate::code::Reader;
use crate::x86_table;

/// Instructions visited over all paths before the scan gives up.
const STEP_BUDGET: usize = 2048;

/// Registers a call may read as arguments (System V), and so observe.
const ARGUMENTS: [Register; 6] = [
    Register::RDI,
    Register::RSI,
    Register::RDX,
    Register::RCX,
    Register::R8,
    Register::R9,
];

/// Registers a call clobbers that are not arguments.
const CLOBBERED: [Register; 3] = [Register::RAX, Register::R10, Register::R11];

/// One function's decoded instructions and what is known of it.
pub(crate) struct Body<'a> {
    /// In address order; `None` where the bytes do not decode.
    pub instructions: &'a [Option<Instruction>],
    /// Where the function's jump tables send its dispatch.
    pub jump_targets: &'a [u64],
    /// The indirect jumps that dispatch those tables, sorted
    /// (`x86_table::dispatch_jumps`): every other one is an indirect tail
    /// call.
    pub dispatches: &'a [u64],
    /// Its DWARF prototype returns nothing in `rdx` (`dwarf.rs`).
    pub single_register_return: bool,
    /// (entry address, argument registers read) of the functions whose
    /// DWARF prototype says, sorted (`Image::argument_registers`).
    pub argument_registers: &'a [(u64, u8)],
    /// (entry, GOT slot or PLT entry; what it reads) of the callees that
    /// read what their pointer arguments point to only forward
    /// (`Image::forward_readers`).
    pub forward_readers: &'a [(u64, Reader)],
}

/// A [`Body`] indexed by address once, for every scan of its `lea`s.
pub(crate) struct Scan<'a> {
    body: &'a Body<'a>,
    /// (address, index into the instructions), sorted by address.
    by_ip: Vec<(u64, usize)>,
    /// Where the function's branches and jump tables land, sorted: a
    /// straight-line run of instructions ends there.
    entered: Vec<u64>,
}

impl<'a> Scan<'a> {
    pub(crate) fn new(body: &'a Body<'a>) -> Self {
        let mut by_ip: Vec<(u64, usize)> = body
            .instructions
            .iter()
            .enumerate()
            .filter_map(|(i, instruction)| instruction.map(|x| (x.ip(), i)))
            .collect();
        by_ip.sort_unstable();
        let mut entered: Vec<u64> = body
            .instructions
            .iter()
            .flatten()
            .filter(|i| is_near_branch(i))
            .map(|i| i.near_branch_target())
            .chain(body.jump_targets.iter().copied())
            .collect();
        entered.sort_unstable();
        Scan {
            body,
            by_ip,
            entered,
        }
    }

    /// The instructions that certainly ran, in reverse order, just before
    /// the one at `at` on every path reaching it: the straight-line run
    /// ending there (no branch lands inside it, none leaves it, no call),
    /// at most `limit` long.
    fn run_before(&self, at: usize, limit: usize) -> impl Iterator<Item = &'a Instruction> + '_ {
        let instructions = self.body.instructions;
        let mut start = instructions.get(at).copied().flatten().map(|i| i.ip());
        instructions[..at.min(instructions.len())]
            .iter()
            .rev()
            .take(limit)
            .map_while(move |instruction| {
                let instruction = instruction.as_ref()?;
                let next = start?;
                if instruction.next_ip() != next
                    || instruction.flow_control() != FlowControl::Next
                    || self.entered.binary_search(&next).is_ok()
                {
                    return None;
                }
                start = Some(instruction.ip());
                Some(instruction)
            })
    }

    /// The index of the instruction starting at `ip`, if one does.
    fn index_of(&self, ip: u64) -> Option<usize> {
        self.by_ip
            .binary_search_by_key(&ip, |&(ip, _)| ip)
            .ok()
            .map(|found| self.by_ip[found].1)
    }
}

/// The offsets, from the address, a register may hold: a derived pointer
/// is the address plus something in `lo..=hi` (`i64::MIN`/`i64::MAX`
/// stand for no bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    lo: i64,
    hi: i64,
}

impl Span {
    const EXACT_ZERO: Span = Span { lo: 0, hi: 0 };
    const ANY: Span = Span {
        lo: i64::MIN,
        hi: i64::MAX,
    };

    fn plus(self, delta: i64) -> Span {
        let bound = |b: i64| match b {
            i64::MIN | i64::MAX => b,
            _ => b.saturating_add(delta),
        };
        Span {
            lo: bound(self.lo),
            hi: bound(self.hi),
        }
    }

    fn contains(self, other: Span) -> bool {
        self.lo <= other.lo && other.hi <= self.hi
    }

    /// `self` grown to hold `other`, each bound that moved going to no
    /// bound at all, so that a loop stepping a pointer reaches a fixed point.
    fn widened(self, other: Span) -> Span {
        Span {
            lo: if other.lo < self.lo {
                i64::MIN
            } else {
                self.lo
            },
            hi: if other.hi > self.hi {
                i64::MAX
            } else {
                self.hi
            },
        }
    }
}

/// The general registers known to hold a value below 2^63 since the scan
/// began: last written as 32-bit registers, which zero-extends (`and
/// $3,%edi`, `movzbl`); one bit per register number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct NonNegative(u16);

impl NonNegative {
    fn bit(register: Register) -> u16 {
        1 << (register.full_register().number() & 15)
    }

    fn holds(self, register: Register) -> bool {
        register.full_register().is_gpr64() && self.0 & Self::bit(register) != 0
    }

    fn set(&mut self, register: Register, non_negative: bool) {
        if non_negative {
            self.0 |= Self::bit(register);
        } else {
            self.0 &= !Self::bit(register);
        }
    }

    /// Whether every register `other` knows non-negative, this knows too.
    fn includes(self, other: NonNegative) -> bool {
        self.0 & other.0 == other.0
    }

    fn and(self, other: NonNegative) -> NonNegative {
        NonNegative(self.0 & other.0)
    }
}

/// Where the accesses seen so far fall relative to the address.
#[derive(Clone, Copy, Debug)]
struct Accesses {
    /// Every access reads at or after the address.
    forward: bool,
    /// Every access reads before it.
    backward: bool,
    /// How many bytes from the address the accesses reach at most, while
    /// every one is forward at bounded offsets of a known size.
    extent: Option<u64>,
}

impl Accesses {
    /// An access of `size` bytes (0: unknown) at offsets `at` from the
    /// address; `None` when an index register offsets it by an unknown
    /// amount.
    fn add(&mut self, at: Option<Span>, size: u64) {
        match at {
            Some(at) => {
                self.forward &= at.lo != i64::MIN && at.lo >= 0;
                self.backward &= at.hi != i64::MAX && at.hi.saturating_add(size.max(1) as i64) <= 0;
                let end = (at.lo >= 0 && at.hi != i64::MAX && size > 0)
                    .then(|| (at.hi as u64).saturating_add(size));
                self.extent = self.extent.zip(end).map(|(a, b)| a.max(b));
            }
            None => (self.forward, self.backward, self.extent) = (false, false, None),
        }
    }

    fn result(self) -> Accessed {
        let reach = match (self.forward, self.backward) {
            // No access at all reads nothing on either side.
            (true, _) => Reach::Forward,
            (false, true) => Reach::Backward,
            (false, false) => Reach::Unknown,
        };
        Accessed {
            reach,
            extent: match self.extent {
                Some(extent) if reach == Reach::Forward => extent,
                _ => 0,
            },
        }
    }
}

/// What the code reads through an address that does not escape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Accessed {
    /// Which side of the address.
    pub reach: Reach,
    /// With [`Reach::Forward`]: at most this many bytes from the address,
    /// when every access is at a bounded offset of a known size (a
    /// callee's included, by the length its caller passes); 0 when not
    /// known (or nothing is read).
    pub extent: u64,
}

/// Whether the address that the `lea` at `at` of the scanned [`Body`]
/// writes to its destination escapes on some path (then `None`), and if
/// not, which side of it the accesses through it read, and how far.
///
/// The address does not escape on a path while every read of a register
/// holding it is the base or index of a memory operand (not of a `lea`),
/// a copy (`mov` between 64-bit registers), or a derivation (`lea` with it
/// as base, `add` or `sub` of something else to it, `add` of it to a
/// register), whose destination then holds a derived pointer. The path
/// ends when no register holds it (overwritten by a 32- or 64-bit write),
/// at a call when none holds it in an argument register the callee may
/// read (all six, unless a DWARF prototype of a direct callee says fewer;
/// the clobbered ones drop, the callee-saved ones stay), or at a `ret` when neither
/// `rax` nor `rdx` holds it (`rdx` only counts where the function may
/// return a 9- to 16-byte value: no DWARF prototype says otherwise). A
/// jump table's dispatch, recognized by the code that computes it
/// ([`Body::dispatches`]), goes on at every jump table target. Anything
/// else escapes: any other read (a store of the register, a comparison, a
/// subtraction from another pointer, a push), any other indirect branch
/// while a register holds the address (an indirect tail call, which may
/// read them all), a jump out of the function, data, an instruction the
/// scan cannot decode, or the step budget.
///
/// For the side, the scan keeps, for each register
/// holding the address or a pointer derived from it, the interval of
/// offsets it may hold (exact through copies and constant derivations,
/// widened to no bound where a loop steps it), and an access through a
/// register adds its displacement. An index register (its sign unknown:
/// `end[-i]` is `neg`, then an indexed load) makes the reach unknown. A
/// callee among the [`Body::forward_readers`] reads forward, as many bytes
/// as the length argument the straight-line run before the call sets to a
/// constant ([`constant_before`]), else an unknown number.
pub(crate) fn address_reach(scan: &Scan, at: usize) -> Option<Accessed> {
    let Body {
        instructions,
        jump_targets,
        dispatches,
        single_register_return,
        argument_registers,
        forward_readers,
    } = *scan.body;
    let index_of = |ip: u64| scan.index_of(ip);
    // The `lea` (or pointer load) writing the register.
    let Some(Some(lea)) = instructions.get(at) else {
        return None;
    };
    let mut factory = InstructionInfoFactory::new();
    let mut accesses = Accesses {
        forward: true,
        backward: true,
        extent: Some(0),
    };
    // (instruction, registers holding the address) -> the offsets each of
    // those registers held there so far, and the registers known
    // non-negative on every path there.
    type State = (usize, Vec<Register>);
    let mut seen: HashMap<State, (Vec<Span>, NonNegative)> = HashMap::new();
    let mut work = vec![(
        lea.next_ip(),
        vec![(lea.op0_register().full_register(), Span::EXACT_ZERO)],
        non_negative_before(scan, at, &mut factory),
    )];
    let mut steps = 0;
    while let Some((ip, held, non_negative)) = work.pop() {
        let index = index_of(ip)?;
        let registers: Vec<Register> = held.iter().map(|&(r, _)| r).collect();
        let spans: Vec<Span> = held.iter().map(|&(_, s)| s).collect();
        let (held, mut non_negative) = match seen.entry((index, registers)) {
            Entry::Occupied(mut known) => {
                let (known_spans, known_non_negative) = known.get();
                if known_spans.iter().zip(&spans).all(|(k, s)| k.contains(*s))
                    && non_negative.includes(*known_non_negative)
                {
                    continue;
                }
                let widened: Vec<Span> = known_spans
                    .iter()
                    .zip(&spans)
                    .map(|(k, s)| k.widened(*s))
                    .collect();
                let joined = known_non_negative.and(non_negative);
                known.insert((widened.clone(), joined));
                (held.iter().map(|&(r, _)| r).zip(widened).collect(), joined)
            }
            Entry::Vacant(slot) => {
                slot.insert((spans, non_negative));
                (held, non_negative)
            }
        };
        steps += 1;
        if steps > STEP_BUDGET {
            return None;
        }
        let Some(instruction) = &instructions[index] else {
            return None;
        };
        let mut after = step(
            &mut factory,
            instruction,
            held,
            &mut non_negative,
            &mut accesses,
        )?;
        after.sort_unstable_by_key(|&(r, _)| r);
        after.dedup_by_key(|&mut (r, _)| r);
        let holds = |after: &[(Register, Span)], r: Register| after.iter().any(|&(h, _)| h == r);
        let successors = match instruction.flow_control() {
            FlowControl::Next => vec![instruction.next_ip()],
            FlowControl::ConditionalBranch if is_near_branch(instruction) => {
                vec![instruction.next_ip(), instruction.near_branch_target()]
            }
            FlowControl::UnconditionalBranch if is_near_branch(instruction) => {
                vec![instruction.near_branch_target()]
            }
            FlowControl::Return => {
                if holds(&after, Register::RAX)
                    || (holds(&after, Register::RDX) && !single_register_return)
                {
                    return None;
                }
                continue;
            }
            // A jump table's dispatch shows the address to no one: where
            // it lands is compared as code. The paths go on at every place
            // the function's jump tables send it, with the registers still
            // holding the address; the jump's own register then holds
            // where it landed, a code address, no longer the table's.
            FlowControl::IndirectBranch
                if !jump_targets.is_empty()
                    && dispatches.binary_search(&instruction.ip()).is_ok() =>
            {
                if instruction.op0_kind() == OpKind::Register {
                    let landed = instruction.op0_register().full_register();
                    after.retain(|&(r, _)| r != landed);
                }
                jump_targets.to_vec()
            }
            // Any other indirect jump is a tail call to code the scan does
            // not know, which may read every register (falls to escape
            // below unless nothing holds the address any more).
            FlowControl::IndirectBranch if after.is_empty() => continue,
            // An indirect call reads every argument register (its callee
            // unknown) unless it goes through a GOT slot holding a callee
            // known to read a `&str` within its bounds.
            FlowControl::Call | FlowControl::IndirectCall => {
                // A direct call of a function whose prototype says reads
                // only its parameters' registers; it clobbers the rest.
                let read = match is_near_branch(instruction)
                    .then(|| instruction.near_branch_target())
                    .and_then(|target| {
                        argument_registers
                            .binary_search_by_key(&target, |&(address, _)| address)
                            .ok()
                    }) {
                    Some(found) => usize::from(argument_registers[found].1).min(ARGUMENTS.len()),
                    None => ARGUMENTS.len(),
                };
                // A `&str` the callee reads within its bounds: as many
                // bytes forward as the constant length says.
                let read_forward = forward_read_arguments(instruction, forward_readers);
                for &(r, span) in &after {
                    if let Some(&(_, length)) = read_forward.iter().find(|&&(p, _)| p == r) {
                        let bytes = length
                            .and_then(|length| constant_before(scan, index, length, &mut factory));
                        // An unknown length (0: an empty slice reads
                        // nothing, but bounds nothing either) is forward.
                        accesses.add(Some(span), bytes.unwrap_or(0));
                    } else if ARGUMENTS[..read].contains(&r) {
                        return None;
                    }
                }
                // Every argument register is caller-saved.
                after.retain(|(r, _)| !CLOBBERED.contains(r) && !ARGUMENTS.contains(r));
                vec![instruction.next_ip()]
            }
            // A trap ends the path: the program stops with a signal, and
            // nothing after it reads the address (a panic's `ud2`).
            _ if matches!(
                instruction.mnemonic(),
                Mnemonic::Ud0 | Mnemonic::Ud1 | Mnemonic::Ud2
            ) =>
            {
                continue;
            }
            _ => return None,
        };
        if after.is_empty() {
            continue;
        }
        for successor in successors {
            work.push((successor, after.clone(), non_negative));
        }
    }
    Some(accesses.result())
}

/// What a register holds in [`reads_only_offsets`]'s scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum TableValue {
    /// The table's address.
    Table,
    /// An entry loaded from it (sign-extended).
    Entry,
}

/// Whether the address the `lea` at `at` writes is a table of 4-byte
/// offsets from its own start that the code only reads entries of and
/// adds back (rustc's tables of a `Debug` enum's variant names, when the
/// load sits in a loop or behind branches that the straight-line
/// recognizer `x86_table::reads_offsets_from` does not follow). On every
/// path from the `lea`, as [`address_reach`] follows them, the registers
/// holding the table are read only as copies and as the base of
/// `movslq (T,%idx,4)` (no displacement, an index holding neither), whose
/// destination then holds an entry; an entry is read only as a copy or
/// added to the table (`add`, or `lea (T,E)`), the sum, an address the
/// table names, followed no further. Some path loads an entry. Anything
/// else (any other read, a call or return that may see one of them, an
/// indirect jump, the step budget) says no: then the table's bytes may
/// be seen as they are.
pub(crate) fn reads_only_offsets(scan: &Scan, at: usize) -> bool {
    let instructions = scan.body.instructions;
    let Some(Some(lea)) = instructions.get(at) else {
        return false;
    };
    let mut factory = InstructionInfoFactory::new();
    let mut seen: HashSet<(usize, Vec<(Register, TableValue)>)> = HashSet::new();
    let mut work = vec![(
        lea.next_ip(),
        vec![(lea.op0_register().full_register(), TableValue::Table)],
    )];
    let mut loaded = false;
    let mut steps = 0;
    while let Some((ip, mut held)) = work.pop() {
        let Some(index) = scan.index_of(ip) else {
            return false;
        };
        held.sort_unstable_by_key(|&(r, _)| r);
        if !seen.insert((index, held.clone())) {
            continue;
        }
        steps += 1;
        if steps > STEP_BUDGET {
            return false;
        }
        let Some(instruction) = &instructions[index] else {
            return false;
        };
        let Some(after) = table_step(&mut factory, instruction, held, &mut loaded) else {
            return false;
        };
        let holds = |r: Register| after.iter().any(|&(h, _)| h == r);
        let successors = match instruction.flow_control() {
            FlowControl::Next => vec![instruction.next_ip()],
            FlowControl::ConditionalBranch if is_near_branch(instruction) => {
                vec![instruction.next_ip(), instruction.near_branch_target()]
            }
            FlowControl::UnconditionalBranch if is_near_branch(instruction) => {
                vec![instruction.near_branch_target()]
            }
            FlowControl::Return if holds(Register::RAX) || holds(Register::RDX) => return false,
            FlowControl::Return => continue,
            FlowControl::Call | FlowControl::IndirectCall => {
                if ARGUMENTS.iter().any(|&r| holds(r)) {
                    return false;
                }
                vec![instruction.next_ip()]
            }
            _ if after.is_empty() => continue,
            _ => return false,
        };
        let after: Vec<(Register, TableValue)> = match instruction.flow_control() {
            // Every argument register and the others a call clobbers.
            FlowControl::Call | FlowControl::IndirectCall => after
                .into_iter()
                .filter(|(r, _)| !CLOBBERED.contains(r))
                .collect(),
            _ => after,
        };
        if after.is_empty() {
            continue;
        }
        for successor in successors {
            work.push((successor, after.clone()));
        }
    }
    loaded
}

/// The registers holding the table or an entry after `instruction` (see
/// [`reads_only_offsets`]), `None` if it uses one otherwise; `loaded`
/// records an entry's load.
fn table_step(
    factory: &mut InstructionInfoFactory,
    instruction: &Instruction,
    mut held: Vec<(Register, TableValue)>,
    loaded: &mut bool,
) -> Option<Vec<(Register, TableValue)>> {
    let value_of = |r: Register| {
        held.iter()
            .find(|&&(h, _)| h == r.full_register())
            .map(|&(_, v)| v)
    };
    let register = |i: u32| {
        (instruction.op_count() > i && instruction.op_kind(i) == OpKind::Register)
            .then(|| instruction.op_register(i))
            .filter(|r| r.is_gpr64())
    };
    let sum_of_entry_and_table = |a: Option<TableValue>, b: Option<TableValue>| matches!((a, b), (Some(x), Some(y)) if x != y);
    // (destination, what it holds from now on: `None` for a sum).
    let defined: Option<(Register, Option<TableValue>)> = match instruction.mnemonic() {
        Mnemonic::Movsxd
            if register(0).is_some()
                && instruction.op1_kind() == OpKind::Memory
                && value_of(instruction.memory_base()) == Some(TableValue::Table)
                && instruction.memory_index() != Register::None
                && value_of(instruction.memory_index()).is_none()
                && instruction.memory_index_scale() == 4
                && instruction.memory_displacement64() == 0 =>
        {
            *loaded = true;
            register(0).map(|d| (d, Some(TableValue::Entry)))
        }
        Mnemonic::Mov => register(0)
            .zip(register(1).and_then(value_of))
            .map(|(d, v)| (d, Some(v))),
        Mnemonic::Add
            if sum_of_entry_and_table(
                register(0).and_then(value_of),
                register(1).and_then(value_of),
            ) =>
        {
            register(0).map(|d| (d, None))
        }
        Mnemonic::Lea
            if instruction.memory_index_scale() == 1
                && instruction.memory_displacement64() == 0
                && instruction.memory_segment() == Register::DS
                && sum_of_entry_and_table(
                    value_of(instruction.memory_base()),
                    value_of(instruction.memory_index()),
                ) =>
        {
            register(0).map(|d| (d, None))
        }
        _ => None,
    };
    let info = factory.info(instruction);
    let mut written = Vec::new();
    for used in info.used_registers() {
        let full = used.register().full_register();
        let reads = matches!(
            used.access(),
            OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        );
        if reads && value_of(full).is_some() && defined.is_none() {
            return None;
        }
        if matches!(
            used.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        ) {
            // A conditional or partial write may leave the old value
            // beside a new one: a use the scan cannot follow.
            if value_of(full).is_some()
                && defined.is_none()
                && (!matches!(used.access(), OpAccess::Write)
                    || !(used.register().is_gpr64() || used.register().is_gpr32()))
            {
                return None;
            }
            written.push(full);
        }
    }
    held.retain(|(r, _)| !written.contains(r));
    if let Some((destination, Some(value))) = defined {
        held.push((destination.full_register(), value));
    }
    Some(held)
}

/// The argument registers the call `call` passes to a callee known to
/// read what each points to only at and after it (`bounded_readers.rs`),
/// each with the argument register holding how many bytes it reads there,
/// if one does.
fn forward_read_arguments(
    call: &Instruction,
    forward_readers: &[(u64, Reader)],
) -> Vec<(Register, Option<Register>)> {
    let callee = if is_near_branch(call) {
        call.near_branch_target()
    } else if call.op0_kind() == OpKind::Memory && call.is_ip_rel_memory_operand() {
        call.ip_rel_memory_address()
    } else {
        return Vec::new();
    };
    let Ok(found) = forward_readers.binary_search_by_key(&callee, |&(address, _)| address) else {
        return Vec::new();
    };
    let reader = forward_readers[found].1;
    (0..ARGUMENTS.len())
        .filter(|&i| reader.pointers & (1 << i) != 0)
        .map(|i| {
            let length = reader
                .length_argument(i)
                .and_then(|n| ARGUMENTS.get(n).copied());
            (ARGUMENTS[i], length)
        })
        .collect()
}

/// How many straight-line instructions before a call are searched for
/// the write of its length argument.
const LENGTH_LOOK_BACK: usize = 16;

/// The value `register` certainly holds when the instruction at `at`
/// runs: its last write in the straight-line run before it
/// ([`Scan::run_before`]) is a move of a constant (`mov $0x3a,%esi`) or
/// zeroes it (`xor %esi,%esi`).
fn constant_before(
    scan: &Scan,
    at: usize,
    register: Register,
    factory: &mut InstructionInfoFactory,
) -> Option<u64> {
    for instruction in scan.run_before(at, LENGTH_LOOK_BACK) {
        let writes = x86_table::writes(factory, instruction, register);
        if !writes {
            continue;
        }
        let destination = (instruction.op_count() > 0
            && instruction.op0_kind() == OpKind::Register)
            .then(|| instruction.op0_register())
            .filter(|r| r.full_register() == register)?;
        return match (instruction.mnemonic(), instruction.op1_kind()) {
            (Mnemonic::Mov, OpKind::Immediate32) if destination.is_gpr32() => {
                Some(u64::from(instruction.immediate32()))
            }
            (Mnemonic::Mov, OpKind::Immediate32to64 | OpKind::Immediate64)
                if destination.is_gpr64() =>
            {
                Some(instruction.immediate(1))
            }
            (Mnemonic::Xor, OpKind::Register)
                if destination.is_gpr32() && instruction.op1_register() == destination =>
            {
                Some(0)
            }
            _ => None,
        };
    }
    None
}

fn is_cmov(mnemonic: Mnemonic) -> bool {
    matches!(
        mnemonic,
        Mnemonic::Cmova
            | Mnemonic::Cmovae
            | Mnemonic::Cmovb
            | Mnemonic::Cmovbe
            | Mnemonic::Cmove
            | Mnemonic::Cmovg
            | Mnemonic::Cmovge
            | Mnemonic::Cmovl
            | Mnemonic::Cmovle
            | Mnemonic::Cmovne
            | Mnemonic::Cmovno
            | Mnemonic::Cmovnp
            | Mnemonic::Cmovns
            | Mnemonic::Cmovo
            | Mnemonic::Cmovp
            | Mnemonic::Cmovs
    )
}

fn is_near_branch(instruction: &Instruction) -> bool {
    matches!(
        instruction.op0_kind(),
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
    )
}

/// The registers holding the address after `instruction` (with the
/// offsets each may hold), or `None` if the instruction lets it escape
/// (its flow aside, which the caller judges); its accesses through them go
/// to `accesses`.
fn step(
    factory: &mut InstructionInfoFactory,
    instruction: &Instruction,
    mut held: Vec<(Register, Span)>,
    non_negative: &mut NonNegative,
    accesses: &mut Accesses,
) -> Option<Vec<(Register, Span)>> {
    let mnemonic = instruction.mnemonic();
    let span_of = |r: Register| {
        held.iter()
            .find(|&&(h, _)| h == r.full_register())
            .map(|&(_, s)| s)
    };
    let holds = |r: Register| span_of(r).is_some();
    let operand_register =
        |i: u32| (instruction.op_kind(i) == OpKind::Register).then(|| instruction.op_register(i));
    let gpr64_destination = operand_register(0).filter(|r| r.is_gpr64());
    let immediate = || match instruction.op_kind(1) {
        OpKind::Immediate8to64
        | OpKind::Immediate32to64
        | OpKind::Immediate8to32
        | OpKind::Immediate32
        | OpKind::Immediate8 => Some(instruction.immediate(1) as i64),
        _ => None,
    };
    // A derived pointer: the destination holds it from now on (at these
    // offsets), and the reads this instruction makes of held registers
    // are accounted for.
    let derived: Option<(Register, Span)> = match mnemonic {
        // A copy, or a conditional one (`cmovne %rax,%rsi`: the
        // destination may hold it from now on).
        mnemonic if mnemonic == Mnemonic::Mov || is_cmov(mnemonic) => operand_register(1)
            .filter(|&r| r.is_gpr64())
            .and_then(span_of)
            .and_then(|span| gpr64_destination.map(|d| (d, span))),
        Mnemonic::Lea => {
            let base = instruction.memory_base();
            let index = instruction.memory_index();
            let displacement = instruction.memory_displacement64() as i64;
            match (span_of(base), span_of(index), gpr64_destination) {
                (Some(span), None, Some(d)) if base.is_gpr64() => {
                    Some((d, indexed(span.plus(displacement), index, *non_negative)))
                }
                // The address as an unscaled index: the base is the offset.
                (None, Some(span), Some(d))
                    if instruction.memory_index_scale() == 1 && base.is_gpr64() =>
                {
                    Some((d, indexed(span.plus(displacement), base, *non_negative)))
                }
                _ => None,
            }
        }
        // held += something else (an offset), or other += held.
        Mnemonic::Add => gpr64_destination
            .filter(|&d| {
                let source_held = operand_register(1).is_some_and(holds);
                !(holds(d) && source_held)
                    && (holds(d) || source_held)
                    && instruction.op_kind(1) != OpKind::Memory
            })
            .map(|d| match (span_of(d), immediate()) {
                (Some(span), Some(delta)) => (d, span.plus(delta)),
                _ => (d, Span::ANY),
            }),
        // held -= an offset (not a pointer difference: the source is not held).
        Mnemonic::Sub => gpr64_destination
            .filter(|&d| {
                holds(d)
                    && !operand_register(1).is_some_and(holds)
                    && instruction.op_kind(1) != OpKind::Memory
            })
            .map(|d| match (span_of(d), immediate()) {
                (Some(span), Some(delta)) if delta != i64::MIN => (d, span.plus(-delta)),
                _ => (d, Span::ANY),
            }),
        _ => None,
    };
    let memory = mnemonic != Mnemonic::Lea
        && (0..instruction.op_count()).any(|i| instruction.op_kind(i) == OpKind::Memory);
    let base = instruction.memory_base().full_register();
    let index = instruction.memory_index().full_register();
    if memory && (holds(base) || holds(index)) {
        let displacement = instruction.memory_displacement64() as i64;
        let at = match (span_of(base), span_of(index)) {
            // A register bit offset reaches any byte, on either side.
            _ if accesses_beyond_operand(instruction) => None,
            (Some(span), None) => Some(indexed(span.plus(displacement), index, *non_negative)),
            // The address as an unscaled index (`cmpb $0xf9,(%rdi,%r12)`
            // with r12 holding it): the base register is the offset.
            (None, Some(span)) if instruction.memory_index_scale() == 1 && base.is_gpr64() => {
                Some(indexed(span.plus(displacement), base, *non_negative))
            }
            _ => None,
        };
        accesses.add(at, instruction.memory_size().size() as u64);
    }
    let info = factory.info(instruction);
    // iced reports one use of a register that is both the base of a memory
    // operand and an explicit operand (`mov %r8, (%r8)` stores the
    // address): with a memory operand, a held explicit register operand is
    // a read, unless it is a destination only written (`mov (%r8), %r8`,
    // `imul $3, 12(%r9), %r9d`).
    if memory
        && (0..instruction.op_count()).any(|i| {
            operand_register(i)
                .is_some_and(|r| holds(r) && !(i == 0 && info.op0_access() == OpAccess::Write))
        })
    {
        return None;
    }
    // A jump through a register: the caller follows the jump.
    let jump = instruction.flow_control() == FlowControl::IndirectBranch
        && instruction.op0_kind() == OpKind::Register;
    let mut written = Vec::new();
    for used in info.used_registers() {
        let full = used.register().full_register();
        let reads = matches!(
            used.access(),
            OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        );
        if reads
            && holds(full)
            && derived.is_none()
            && !jump
            && !(memory && (full == base || full == index))
        {
            return None;
        }
        if matches!(
            used.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        ) && (used.register().is_gpr64() || used.register().is_gpr32())
        {
            written.push(full);
        }
    }
    // A conditional write may leave the old value: it still holds it.
    let conditional: Vec<Register> = info
        .used_registers()
        .iter()
        .filter(|u| matches!(u.access(), OpAccess::CondWrite | OpAccess::ReadCondWrite))
        .map(|u| u.register().full_register())
        .collect();
    held.retain(|(r, _)| !written.contains(r) || conditional.contains(r));
    // A 32-bit destination is zero-extended, even by a `cmov` not taken
    // (iced names the 64-bit register it writes, so the operand says).
    let destination32 = operand_register(0)
        .filter(|r| r.is_gpr32())
        .map(Register::full_register);
    for used in info.used_registers() {
        let writes = matches!(
            used.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        );
        if writes && used.register().is_gpr() {
            let full = used.register().full_register();
            non_negative.set(full, destination32 == Some(full));
        }
    }
    if let Some((destination, span)) = derived {
        let destination = destination.full_register();
        // A conditional write keeps the old offsets beside the new ones.
        match held.iter_mut().find(|(r, _)| *r == destination) {
            Some((_, old)) => {
                *old = Span {
                    lo: old.lo.min(span.lo),
                    hi: old.hi.max(span.hi),
                }
            }
            None => held.push((destination, span)),
        }
    }
    Some(held)
}

/// Whether `register` holds a value below 2^63 when the instruction at
/// `at` of the scanned body runs (see [`non_negative_before`]).
pub(crate) fn non_negative_at(scan: &Scan, at: usize, register: Register) -> bool {
    let mut factory = InstructionInfoFactory::new();
    non_negative_before(scan, at, &mut factory).holds(register)
}

/// How many straight-line instructions before the `lea` are searched for
/// the last write of an index register.
const LOOK_BACK: usize = 8;

/// The registers known non-negative when the instruction at `at` runs:
/// those whose last write in the straight-line run before it (no branch
/// target inside, at most [`LOOK_BACK`] instructions) is a 32-bit
/// destination (`and $7,%edi` before `lea T(%rip),%rax`).
fn non_negative_before(
    scan: &Scan,
    at: usize,
    factory: &mut InstructionInfoFactory,
) -> NonNegative {
    let mut known = NonNegative::default();
    let mut decided = 0u16;
    for instruction in scan.run_before(at, LOOK_BACK) {
        let destination32 = (instruction.op_count() > 0
            && instruction.op0_kind() == OpKind::Register)
            .then(|| instruction.op0_register())
            .filter(|r| r.is_gpr32())
            .map(Register::full_register);
        for used in factory.info(instruction).used_registers() {
            let writes = matches!(
                used.access(),
                OpAccess::Write
                    | OpAccess::CondWrite
                    | OpAccess::ReadWrite
                    | OpAccess::ReadCondWrite
            );
            let full = used.register().full_register();
            if !writes || !used.register().is_gpr() || decided & NonNegative::bit(full) != 0 {
                continue;
            }
            decided |= NonNegative::bit(full);
            known.set(full, destination32 == Some(full));
        }
    }
    known
}

/// The offsets `at` plus an index register (any scale): bounded below
/// when the index is known non-negative, unknown otherwise.
fn indexed(at: Span, index: Register, non_negative: NonNegative) -> Span {
    if index == Register::None {
        at
    } else if non_negative.holds(index) {
        Span {
            lo: at.lo,
            hi: i64::MAX,
        }
    } else {
        Span::ANY
    }
}

/// Whether `instr` may access memory outside its memory operand's bytes:
/// `bt`, `bts`, `btr` and `btc` with a register bit offset address the bit
/// string at the operand, the offset (signed, any size) selecting a byte
/// anywhere before or after it. (An immediate offset is taken modulo the
/// operand's width.)
pub(crate) fn accesses_beyond_operand(instr: &Instruction) -> bool {
    matches!(
        instr.mnemonic(),
        Mnemonic::Bt | Mnemonic::Bts | Mnemonic::Btr | Mnemonic::Btc
    ) && instr.op_count() == 2
        && instr.op0_kind() == OpKind::Memory
        && instr.op1_kind() == OpKind::Register
}

#[cfg(test)]
mod tests {
    use super::{Accessed, Body, Scan, address_reach, reads_only_offsets};
    use crate::code::Reach;
    use crate::code::{Length, Reader};
    use iced_x86::{Decoder, DecoderOptions};

    /// Whether the `lea` at the start of `hex` (machine code at 0x1000)
    /// lets its address escape.
    fn escapes(hex: &str) -> bool {
        escapes_with_jump_targets(hex, &[])
    }

    fn escapes_with_jump_targets(hex: &str, jump_targets: &[u64]) -> bool {
        escapes_in(hex, jump_targets, false)
    }

    fn escapes_in(hex: &str, jump_targets: &[u64], single_register_return: bool) -> bool {
        escapes_with(hex, jump_targets, single_register_return, &[])
    }

    fn escapes_with(
        hex: &str,
        jump_targets: &[u64],
        single_register_return: bool,
        argument_registers: &[(u64, u8)],
    ) -> bool {
        escapes_dispatching(
            hex,
            jump_targets,
            None,
            single_register_return,
            argument_registers,
        )
    }

    /// `dispatches`: the jumps recognized as a jump table's dispatch;
    /// `None` takes every `jmp` for one.
    fn escapes_dispatching(
        hex: &str,
        jump_targets: &[u64],
        dispatches: Option<&[u64]>,
        single_register_return: bool,
        argument_registers: &[(u64, u8)],
    ) -> bool {
        let instructions = decoded(hex);
        let dispatches: Vec<u64> = match dispatches {
            Some(dispatches) => dispatches.to_vec(),
            None => instructions
                .iter()
                .flatten()
                .filter(|i| i.mnemonic() == iced_x86::Mnemonic::Jmp)
                .map(|i| i.ip())
                .collect(),
        };
        let body = Body {
            instructions: &instructions,
            jump_targets,
            dispatches: &dispatches,
            single_register_return,
            argument_registers,
            forward_readers: &[],
        };
        address_reach(&Scan::new(&body), 0).is_none()
    }

    /// Which side of the address the `lea` at the start of `hex` forms
    /// the code reads, `None` if it escapes.
    fn reach(hex: &str) -> Option<Reach> {
        reach_with(hex, &[])
    }

    /// [`reach`], with Rust callees that read a `&str` within its bounds
    /// (entry, pointer registers).
    fn reach_with(hex: &str, str_readers: &[(u64, u8)]) -> Option<Reach> {
        let readers: Vec<(u64, Reader)> = str_readers
            .iter()
            .map(|&(entry, pointers)| {
                let length = Length::AfterEach;
                (entry, Reader { pointers, length })
            })
            .collect();
        accessed(hex, &readers).map(|accessed| accessed.reach)
    }

    /// How far forward the code reads through the address the `lea` at
    /// the start of `hex` forms (0: not known), `None` if it escapes.
    fn extent(hex: &str, readers: &[(u64, Reader)]) -> Option<u64> {
        accessed(hex, readers).map(|accessed| accessed.extent)
    }

    /// Whether the `lea` at the start of `hex` forms a table of offsets
    /// the code only adds back ([`reads_only_offsets`]).
    fn offsets_only(hex: &str) -> bool {
        scanned(hex, &[], |scan| reads_only_offsets(scan, 0))
    }

    /// The instructions of `hex`, machine code at 0x1000.
    fn decoded(hex: &str) -> Vec<Option<iced_x86::Instruction>> {
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        Decoder::with_ip(64, &bytes, 0x1000, DecoderOptions::NONE)
            .into_iter()
            .map(Some)
            .collect()
    }

    /// `scan` of the code of `hex` (no jump tables, one register
    /// returned), with the callees that read forward `forward_readers`.
    fn scanned<T>(
        hex: &str,
        forward_readers: &[(u64, Reader)],
        scan: impl FnOnce(&Scan) -> T,
    ) -> T {
        let instructions = decoded(hex);
        let body = Body {
            instructions: &instructions,
            jump_targets: &[],
            dispatches: &[],
            single_register_return: true,
            argument_registers: &[],
            forward_readers,
        };
        scan(&Scan::new(&body))
    }

    #[test]
    fn a_table_of_offsets_is_known_by_the_sums_its_code_forms() {
        // lea T,%rdi; 1: test %eax,%eax; je 2f; movslq (%rdi,%rax,4),%rcx;
        // add %rdi,%rcx; mov %rcx,(%rsi); dec %eax; jmp 1b; 2: ret
        assert!(offsets_only(
            "488d3d0001000085c0740e48630c874801f948890effc8ebeec3"
        ));
        // ... test %eax,%eax; je 3f; movslq (%rdi,%rax,4),%rcx;
        // lea (%rcx,%rdi),%rax; 3: ret (the sum returned)
        assert!(offsets_only("488d3d0001000085c0740848630c87488d0439c3"));
        // The table's address stored: mov %rdi,(%rsi).
        assert!(!offsets_only("488d3d0001000048630c8748893ec3"));
        // An entry read as a number: cmp $3,%rcx.
        assert!(!offsets_only("488d3d0001000048630c874883f903c3"));
        // The table passed to an unknown callee: call *%rax.
        assert!(!offsets_only("488d3d00010000ffd048630c874801cf4889f8c3"));
        // No entry loaded: lea T,%rdi; ret.
        assert!(!offsets_only("488d3d00010000c3"));
    }

    fn accessed(hex: &str, forward_readers: &[(u64, Reader)]) -> Option<Accessed> {
        scanned(hex, forward_readers, |scan| address_reach(scan, 0))
    }

    #[test]
    fn a_str_passed_to_a_reader_of_its_bounds_is_read_forward() {
        // lea s,%rdi; lea loc,%rdx; mov $0x28,%esi; call *0x100(%rip)
        // (the GOT slot at 0x1119); ud2
        let call = "488d3d00000000488d1500000000be28000000ff15000100000f0b";
        assert_eq!(reach_with(call, &[(0x1119, 1)]), Some(Reach::Forward));
        // Any other callee may read before the pointer.
        assert_eq!(reach_with(call, &[(0x2000, 1)]), None);
        // The pointer in an argument register the callee does not read
        // forward (the reader takes it in rsi).
        assert_eq!(reach_with(call, &[(0x1119, 2)]), None);
        // lea t,%rcx; call *%rcx: called, not read as a string.
        assert_eq!(reach("488d0d00000000ffd10f0b"), None);
    }

    #[test]
    fn a_constant_length_bounds_what_a_reader_reads() {
        let str_reader = |pointers| Reader {
            pointers,
            length: Length::AfterEach,
        };
        // lea s,%rdi; lea loc,%rdx; mov $0x28,%esi; call *0x100(%rip); ud2
        let call = "488d3d00000000488d1500000000be28000000ff15000100000f0b";
        assert_eq!(extent(call, &[(0x1119, str_reader(1))]), Some(0x28));
        // lea s,%rdi; jmp +5 (over mov $0x28,%esi); call *0x100(%rip):
        // a branch lands on the call, so no straight-line run before it
        // sets the length: forward, how far unknown.
        let entered = "488d3d00000000eb05be28000000ff15000100000f0b";
        assert_eq!(extent(entered, &[(0x1114, str_reader(1))]), Some(0));
        assert_eq!(
            accessed(entered, &[(0x1114, str_reader(1))]).map(|a| a.reach),
            Some(Reach::Forward)
        );
        // A length not set to a constant: mov %rcx,%rsi.
        let variable = "488d3d000000004889ceff15000100000f0b";
        assert_eq!(extent(variable, &[(0x1110, str_reader(1))]), Some(0));
        // memcmp(s, p, 16): lea s,%rdi; mov $16,%edx; call *0x100(%rip)
        let memcmp = Reader {
            pointers: 3,
            length: Length::Argument(2),
        };
        let compare = "488d3d00000000ba10000000ff15000100000f0b";
        assert_eq!(extent(compare, &[(0x1112, memcmp)]), Some(16));
        // strlen(s) reads up to a NUL: no bound.
        let strlen = Reader {
            pointers: 1,
            length: Length::Unbounded,
        };
        assert_eq!(extent(compare, &[(0x1112, strlen)]), Some(0));
        // Accesses of known sizes at known offsets: lea t,%rcx;
        // mov 4(%rcx),%eax; ret reads bytes 4..8.
        assert_eq!(extent("488d0d000000008b4104c3", &[]), Some(8));
        // One before the address: no forward extent.
        assert_eq!(extent("488d0d000000008b41fcc3", &[]), Some(0));
    }

    #[test]
    fn the_side_an_address_is_read_on() {
        // lea t,%rcx; mov 4(%rcx),%eax; ret
        assert_eq!(reach("488d0d000000008b4104c3"), Some(Reach::Forward));
        // lea t,%rcx; mov -4(%rcx),%eax; ret (one past an array's end)
        assert_eq!(reach("488d0d000000008b41fcc3"), Some(Reach::Backward));
        // lea t,%rcx; mov -2(%rcx),%eax; ret: a 4-byte read across it
        assert_eq!(reach("488d0d000000008b41fec3"), Some(Reach::Unknown));
        // lea t,%rcx; neg %rdi; mov (%rcx,%rdi,4),%eax; ret (end[-i])
        assert_eq!(reach("488d0d0000000048f7df8b04b9c3"), Some(Reach::Unknown));
        // lea t+16,%rcx; lea -16(%rcx),%rdx; mov 8(%rdx),%eax; ret: -8
        assert_eq!(
            reach("488d0d00000000488d51f08b4208c3"),
            Some(Reach::Backward)
        );
        // lea t,%rcx; add $8,%rcx; sub $4,%rcx; mov (%rcx),%eax; ret: +4
        assert_eq!(
            reach("488d0d000000004883c1084883e9048b01c3"),
            Some(Reach::Forward)
        );
    }

    #[test]
    fn a_register_bit_offset_reads_on_either_side() {
        // lea t,%rcx; bt %edi,(%rcx); ret: the bit string starts at t,
        // and %edi (signed) picks any byte before or after it.
        assert_eq!(reach("488d0d000000000fa339c3"), Some(Reach::Unknown));
        // lea t,%rcx; btl $3,(%rcx); ret: an immediate offset stays in
        // the operand.
        assert_eq!(reach("488d0d000000000fba2103c3"), Some(Reach::Forward));
    }

    #[test]
    fn an_index_written_as_32_bits_is_not_negative() {
        // lea t,%rdx; mov %ecx,%edi; and $3,%edi; movslq (%rdx,%rdi,4),%rax; ret
        assert_eq!(
            reach("488d150000000089cf83e703486304bac3"),
            Some(Reach::Forward)
        );
        // An index the scan never saw written may be negative.
        // lea t,%rdx; movslq (%rdx,%rdi,4),%rax; ret
        assert_eq!(
            reach("488d15000000004863 04bac3".replace(' ', "").as_str()),
            Some(Reach::Unknown)
        );
    }

    #[test]
    fn an_address_as_the_unscaled_index_is_offset_by_the_base() {
        // lea t,%r12; movzbl (%rdi),%edi; cmpb $0xf9,(%rdi,%r12); ret:
        // a byte-indexed table (rustc's), the base register the offset.
        assert_eq!(
            reach("4c8d25000000000fb63f42803c27f9c3"),
            Some(Reach::Forward)
        );
        // The same with %rdi's sign unknown.
        assert_eq!(reach("4c8d250000000042803c27f9c3"), Some(Reach::Unknown));
        // lea t,%r12; movzbl (%rdi),%edi; lea (%rdi,%r12),%rax;
        // movzbl (%rax),%eax; ret: derived the same way.
        assert_eq!(
            reach("4c8d25000000000fb63f4a8d04270fb600c3"),
            Some(Reach::Forward)
        );
    }

    #[test]
    fn a_trap_ends_the_path() {
        // lea t,%rcx; mov 4(%rcx),%eax; ud2 (a panic's end): nothing
        // after it reads the address.
        assert_eq!(reach("488d0d000000008b41040f0b"), Some(Reach::Forward));
    }

    #[test]
    fn a_loop_stepping_a_pointer_widens_its_offsets() {
        // lea t,%rcx; 1: mov (%rcx),%eax; add $4,%rcx; dec %edi; jne 1b; ret
        // (forward from 0, stepping up: still forward)
        assert_eq!(
            reach("488d0d000000008b014883c104ffcf75f6c3"),
            Some(Reach::Forward)
        );
        // The same stepping down from the address: reads at 0, -4, ...
        // lea t,%rcx; 1: mov (%rcx),%eax; sub $4,%rcx; dec %edi; jne 1b; ret
        assert_eq!(
            reach("488d0d000000008b014883e904ffcf75f6c3"),
            Some(Reach::Unknown)
        );
    }

    #[test]
    fn a_call_reads_only_the_argument_registers_its_prototype_names() {
        // lea t(%rip),%rdx; call 0x2000; ret: rdx is the third argument,
        // unless the callee's DWARF prototype takes two.
        let code = "488d1500000000e8f40f0000c3";
        assert!(escapes_with(code, &[], true, &[]));
        assert!(escapes_with(code, &[], true, &[(0x2000, 3)]));
        assert!(!escapes_with(code, &[], true, &[(0x2000, 2)]));
    }

    #[test]
    fn an_address_left_in_rdx_escapes_unless_one_register_returns() {
        // lea t(%rip),%rdx; ret: a second return value, unless the DWARF
        // prototype returns no more than 8 bytes.
        assert!(escapes_in("488d1500000000c3", &[], false));
        assert!(!escapes_in("488d1500000000c3", &[], true));
        // In rax it is the return value either way.
        assert!(escapes_in("488d0500000000c3", &[], true));
    }

    #[test]
    fn loads_through_the_address_in_a_loop_do_not_let_it_escape() {
        // lea t,%r8; xor %eax,%eax; xor %ecx,%ecx
        // 1: add (%r8,%rcx,4),%eax; inc %rcx; cmp $4,%rcx; jne 1b; ret
        assert!(!escapes(
            "4c8d050000000031c031c94103048848ffc14883f90475f3c3"
        ));
    }

    #[test]
    fn a_store_of_the_address_lets_it_escape() {
        assert!(escapes("4c8d05000000004c8907c3")); // mov %r8,(%rdi)
        assert!(escapes("4c8d05000000004d8900c3")); // mov %r8,(%r8)
    }

    #[test]
    fn a_comparison_on_one_path_of_a_branch_lets_it_escape() {
        // test %edi,%edi; je 1f; mov (%rax),%eax; ret; 1: cmp %rax,%rsi; sete %al; ret
        assert!(escapes("488d050000000085ff74038b00c34839c60f94c0c3"));
    }

    #[test]
    fn calls_keep_callee_saved_registers_and_observe_arguments() {
        // lea t,%rbx; call f; mov (%rbx),%eax; ret
        assert!(!escapes("488d1d00000000e8000000008b03c3"));
        // lea t,%rdi; call f; ret
        assert!(escapes("488d3d00000000e800000000c3"));
        // lea t,%r10; mov (%r10),%eax; call f; ret
        assert!(!escapes("4c8d1500000000418b02e800000000c3"));
        // lea t,%rdi; jmp f (a tail call passing it)
        assert!(escapes("488d3d00000000e900000000"));
    }

    #[test]
    fn derived_pointers_are_followed() {
        // lea 8(%r8),%r9; add $4,%r9; mov (%r9),%eax; ret
        assert!(!escapes("4c8d05000000004d8d48084983c104418b01c3"));
        // add $16,%r8; cmp %r8,%rsi; sete %al; ret
        assert!(escapes("4c8d05000000004983c0104c39c60f94c0c3"));
        // sub %r8,%rsi; mov %rsi,%rax; ret (a pointer difference)
        assert!(escapes("4c8d05000000004c29c64889f0c3"));
    }

    #[test]
    fn an_overwritten_or_returned_address() {
        // mov (%r8),%eax; xor %r8d,%r8d; mov %r8,(%rdi); ret
        assert!(!escapes("4c8d0500000000418b004531c04c8907c3"));
        // mov (%rax),%rax; ret
        assert!(!escapes("488d0500000000488b00c3"));
        // imul $-45,0xc(%r9),%r9d; ret
        assert!(!escapes("4c8d0d00000000456b490cd3c3"));
        // ret with the address in %rax
        assert!(escapes("488d0500000000c3"));
    }

    #[test]
    fn a_jump_table_dispatch_goes_on_at_the_tables_targets() {
        // lea t,%rdx; movslq (%rdx,%rax,4),%rax; add %rdx,%rax; jmp *%rax
        // 0x1010: mov $1,%eax; ret
        // 0x1016: mov %rdx,(%rdi); ret (stores the table's address)
        // 0x101a: add $4,%rax; ret (%rax is where the jump landed)
        let code = "488d1500000000486304824801d0ffe0b801000000c3488917c34883c004c3";
        assert!(!escapes_in(code, &[0x1010, 0x101a], true));
        assert!(escapes_in(code, &[0x1010, 0x1016], true));
        // The table's address left in rdx is a second result where the
        // function may return a pair.
        assert!(escapes_with_jump_targets(code, &[0x1010, 0x101a]));
        // Without known targets the jump goes anywhere.
        assert!(escapes(code));
    }

    #[test]
    fn an_indirect_jump_that_is_no_dispatch_is_a_tail_call() {
        // lea t,%rdi; jmp *%rax; 0x1009: ret. In a function with jump
        // tables, but the jump is not their dispatch: a tail call passing
        // the address.
        let code = "488d3d00000000ffe0c3";
        assert!(escapes_dispatching(code, &[0x1009], Some(&[]), true, &[]));
        assert!(!escapes_dispatching(
            code,
            &[0x1009],
            Some(&[0x1007]),
            true,
            &[]
        ));
    }

    #[test]
    fn past_a_dispatch_rdx_is_still_a_second_result() {
        // lea t,%rdx; lea T,%rcx; movslq (%rcx,%rdi,4),%rax; add %rcx,%rax;
        // jmp *%rax; 0x1017: mov $1,%eax; ret. A function returning a
        // pair returns the address in rdx.
        let code = "488d1500000000488d0d00000000486304b94801c8ffe0b801000000c3";
        assert!(escapes_in(code, &[0x1017], false));
        assert!(!escapes_in(code, &[0x1017], true));
    }
}
