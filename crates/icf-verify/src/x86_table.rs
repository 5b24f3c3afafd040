//! x86-64: how many entries a jump table has, read from the range check
//! the compiler puts before the indexed load that reads it.
//!
//! Without a bound, a table is taken to run until the next thing known to
//! start (a symbol, a label, another referenced table), which overruns it
//! when what follows is known to nothing: the table of a weak function's
//! copy the link did not keep, whose code no path reaches. Read relative to
//! the wrong table, its entries land at arbitrary places, sometimes inside
//! the function, and the verifier then compares or decodes what no jump
//! ever reaches.
//!
//! The shapes recognized are the ones GCC and Clang emit:
//!
//! ```text
//! cmp $N,%eax ; ja default     and $M,%ecx           cmp $N,%edi ; ja default
//! lea T(%rip),%rdx             lea T(%rip),%rdx     mov %edi,%edi
//! movslq (%rdx,%rax,4),%rax    movslq (%rdx,%rcx,4) jmp *T(,%rdi,8)
//! ```
//!
//! giving N+1 (`ja`), N (`jae`) or at most M+1 entries (see [`TableSize`]),
//! when the entry loaded goes
//! straight to an indirect jump (`add %rdx,%rax ; jmp *%rax`): an indexed
//! load that does not reads an array. Main assumption: the check
//! and the load are one straight-line run that nothing jumps into; the
//! walk (`reach.rs`) drops a bound when a branch or a table entry lands
//! inside the run. Anything else gives no bound, and the table is bounded
//! as before.

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess,
    OpKind, Register,
};

use crate::image::{Image, TableSize};

/// How many instructions may lie between a table's address and its load.
const LOAD_DISTANCE: usize = 3;
/// How many instructions the range check may lie before the table's address.
pub(crate) const CHECK_DISTANCE: usize = 10;
/// Larger bounds are not a compiler's jump table: no bound.
const MAX_ENTRIES: u64 = 1 << 16;

/// A jump table's size, as the code before its load guarantees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TableBound {
    pub size: TableSize,
    /// The run from the range check (exclusive) to the load (inclusive):
    /// a jump into it would bypass the check.
    pub guarded: (u64, u64),
}

/// The instruction at `address`, if it decodes.
pub(crate) fn decode_at(image: &Image, address: u64) -> Option<Instruction> {
    let bytes = image.bytes_to_section_end(address)?;
    let bytes = &bytes[..bytes.len().min(15)];
    let mut decoder = Decoder::with_ip(64, bytes, address, DecoderOptions::NONE);
    let instruction = decoder.decode();
    (!instruction.is_invalid()).then_some(instruction)
}

/// Whether `instruction` writes `register`, or any part of it.
pub(crate) fn writes(
    factory: &mut InstructionInfoFactory,
    instruction: &Instruction,
    register: Register,
) -> bool {
    factory
        .info(instruction)
        .used_registers()
        .iter()
        .any(|used| {
            used.register().full_register() == register
                && matches!(
                    used.access(),
                    OpAccess::Write
                        | OpAccess::ReadWrite
                        | OpAccess::CondWrite
                        | OpAccess::ReadCondWrite
                )
        })
}

/// `mov %e?x,%e?x`: zero-extends a 32-bit index, keeping its bound.
fn zero_extends(instruction: &Instruction, register: Register) -> bool {
    instruction.mnemonic() == Mnemonic::Mov
        && instruction.op_count() == 2
        && instruction.op0_kind() == OpKind::Register
        && instruction.op1_kind() == OpKind::Register
        && instruction.op0_register() == instruction.op1_register()
        && instruction.op0_register().is_gpr32()
        && instruction.op0_register().full_register() == register
}

/// A small non-negative immediate second operand, if `instruction` has one.
fn small_immediate(instruction: &Instruction) -> Option<u64> {
    if instruction.op_count() != 2 {
        return None;
    }
    match instruction.op1_kind() {
        OpKind::Immediate8
        | OpKind::Immediate16
        | OpKind::Immediate32
        | OpKind::Immediate8to16
        | OpKind::Immediate8to32
        | OpKind::Immediate8to64
        | OpKind::Immediate32to64 => {
            let value = instruction.immediate(1) as i64;
            (0..MAX_ENTRIES as i64)
                .contains(&value)
                .then_some(value as u64)
        }
        _ => None,
    }
}

/// The register `instruction` applies an immediate to, by its full name,
/// when it is a whole 32- or 64-bit register (`and $7,%cl` leaves the rest
/// of `%rcx` unbounded).
fn immediate_target(instruction: &Instruction) -> Option<Register> {
    let register = instruction.op0_register();
    (instruction.op_count() == 2
        && instruction.op0_kind() == OpKind::Register
        && (register.is_gpr32() || register.is_gpr64()))
    .then(|| register.full_register())
}

/// Whether the entry `load` reads goes straight to an indirect jump: the
/// load is the jump (`jmp *T(,%rax,8)`), or its register is jumped through,
/// after adding the table's address (`base`) to it when the entries are
/// offsets. An indexed load that does not is reading an array, not a jump
/// table.
fn dispatches(image: &Image, load: &Instruction, base: Option<Register>) -> bool {
    let indirect_jump = |i: &Instruction, register: Register| {
        i.mnemonic() == Mnemonic::Jmp
            && i.op0_kind() == OpKind::Register
            && i.op0_register().full_register() == register
    };
    if load.mnemonic() == Mnemonic::Jmp {
        return load.op0_kind() == OpKind::Memory;
    }
    if !matches!(load.mnemonic(), Mnemonic::Mov | Mnemonic::Movsxd)
        || load.op0_kind() != OpKind::Register
    {
        return false;
    }
    let entry = load.op0_register().full_register();
    let Some(next) = decode_at(image, load.next_ip()) else {
        return false;
    };
    match base {
        None => indirect_jump(&next, entry),
        Some(base) => {
            let adds_base = next.mnemonic() == Mnemonic::Add
                && next.op_count() == 2
                && next.op0_kind() == OpKind::Register
                && next.op1_kind() == OpKind::Register
                && ((next.op0_register().full_register() == entry
                    && next.op1_register().full_register() == base)
                    || (next.op0_register().full_register() == base
                        && next.op1_register().full_register() == entry));
            if !adds_base {
                return false;
            }
            let sum = next.op0_register().full_register();
            decode_at(image, next.next_ip()).is_some_and(|jump| indirect_jump(&jump, sum))
        }
    }
}

/// The indexed load of the table at `table`, starting the search at the
/// instruction at `at` (which references the table): its address, its
/// index register, and whether the entries are offsets from the table
/// (else addresses).
fn indexed_load(
    image: &Image,
    factory: &mut InstructionInfoFactory,
    at: u64,
    table: u64,
) -> Option<(u64, Register, bool)> {
    let first = decode_at(image, at)?;
    // `jmp *T(,%rax,8)`, `mov T(,%rax,8),%rax`: the reference is the load.
    let absolute_index = |i: &Instruction| {
        (0..i.op_count()).any(|n| i.op_kind(n) == OpKind::Memory)
            && i.memory_base() == Register::None
            && i.memory_index() != Register::None
            && matches!(i.memory_index_scale(), 4 | 8)
            && i.memory_displacement64() == table
    };
    if absolute_index(&first) && dispatches(image, &first, None) {
        return Some((at, first.memory_index().full_register(), false));
    }
    // `lea T(%rip),%rdx` or `mov $T,%edx`, then a load based on it.
    let base = match first.mnemonic() {
        Mnemonic::Lea
            if first.is_ip_rel_memory_operand() && first.ip_rel_memory_address() == table =>
        {
            first.op0_register().full_register()
        }
        Mnemonic::Mov
            if first.op0_kind() == OpKind::Register
                && small_immediate(&first).is_none()
                && matches!(
                    first.op1_kind(),
                    OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64
                )
                && first.immediate(1) == table =>
        {
            first.op0_register().full_register()
        }
        _ => return None,
    };
    let mut address = first.next_ip();
    let mut between = Vec::new();
    for _ in 0..LOAD_DISTANCE {
        let instruction = decode_at(image, address)?;
        if instruction.flow_control() != FlowControl::Next {
            return None;
        }
        let is_load = (0..instruction.op_count()).any(|n| instruction.op_kind(n) == OpKind::Memory)
            && instruction.memory_base().full_register() == base
            && instruction.memory_index() != Register::None
            && matches!(instruction.memory_index_scale(), 4 | 8)
            && instruction.memory_displacement64() == 0;
        if is_load {
            let index = instruction.memory_index().full_register();
            // Between the table's address and the load, the index may only
            // be zero-extended.
            if between
                .iter()
                .any(|w| writes(factory, w, index) && !zero_extends(w, index))
            {
                return None;
            }
            return dispatches(image, &instruction, Some(base)).then_some((address, index, true));
        }
        if writes(factory, &instruction, base) {
            return None;
        }
        between.push(instruction);
        address = instruction.next_ip();
    }
    None
}

/// The bound of the table at `table` referenced by the instruction at
/// `at`; `before` lists the reached instruction starts of the function
/// before `at`, in address order.
pub(crate) fn table_bound(
    image: &Image,
    at: u64,
    table: u64,
    before: &[u64],
) -> Option<TableBound> {
    let mut factory = InstructionInfoFactory::new();
    let (load, index, relative) = indexed_load(image, &mut factory, at, table)?;
    // Instructions between the reference and the load may not write the
    // index (checked by `indexed_load` unless they zero-extend it).
    let mut pending_branch: Option<Mnemonic> = None;
    let mut expected_next = at;
    for &address in before.iter().rev().take(CHECK_DISTANCE) {
        let instruction = decode_at(image, address)?;
        // A straight-line run: each instruction ends where the next starts.
        if instruction.next_ip() != expected_next {
            return None;
        }
        expected_next = address;
        if let Some(branch) = pending_branch {
            // The instruction right before `ja`/`jae` must be the check.
            if instruction.mnemonic() != Mnemonic::Cmp
                || immediate_target(&instruction) != Some(index)
            {
                return None;
            }
            let limit = small_immediate(&instruction)?;
            let entries = if branch == Mnemonic::Ja {
                limit + 1
            } else {
                limit
            };
            return Some(TableBound {
                size: TableSize {
                    entries,
                    exact: true,
                    relative,
                },
                guarded: (address, load),
            });
        }
        match instruction.flow_control() {
            FlowControl::Next => {}
            FlowControl::ConditionalBranch => {
                if matches!(instruction.mnemonic(), Mnemonic::Ja | Mnemonic::Jae) {
                    pending_branch = Some(instruction.mnemonic());
                }
                continue;
            }
            _ => return None,
        }
        if !writes(&mut factory, &instruction, index) {
            continue;
        }
        if zero_extends(&instruction, index) {
            continue;
        }
        if instruction.mnemonic() == Mnemonic::And && immediate_target(&instruction) == Some(index)
        {
            let mask = small_immediate(&instruction)?;
            return Some(TableBound {
                size: TableSize {
                    entries: mask + 1,
                    exact: false,
                    relative,
                },
                guarded: (address, load),
            });
        }
        return None;
    }
    None
}

/// Whether the instruction at `at`, which forms `table`'s address in a
/// register (`lea T(%rip),%rdi`), starts the one shape of code that reads
/// the table as 4-byte offsets from its own start and nothing else:
///
/// ```text
/// lea T(%rip),%rdi ; movslq (%rdi,%rcx,4),%rsi ; add %rdi,%rsi ; mov %rax,%rdi
/// ```
///
/// the load of an entry indexed from the register, the entry added back to
/// it, and the register overwritten (or the sum written over it) before
/// anything else reads it (rustc's tables of variant names for `Debug`).
/// Each step comes within [`LOAD_DISTANCE`] straight-line instructions of
/// the last, and nothing in between reads the table's address or writes
/// the entry. Anything else is not recognized, and the table is compared
/// as bytes.
pub(crate) fn reads_offsets_from(image: &Image, at: u64, table: u64) -> bool {
    let Some(first) = decode_at(image, at) else {
        return false;
    };
    if first.mnemonic() != Mnemonic::Lea
        || !first.is_ip_rel_memory_operand()
        || first.ip_rel_memory_address() != table
    {
        return false;
    }
    let base = first.op0_register().full_register();
    let mut factory = InstructionInfoFactory::new();
    let mut address = first.next_ip();
    let mut entry: Option<Register> = None;
    let mut added = false;
    let mut distance = 0;
    while distance < LOAD_DISTANCE {
        let Some(instruction) = decode_at(image, address) else {
            return false;
        };
        if instruction.flow_control() != FlowControl::Next {
            return false;
        }
        address = instruction.next_ip();
        distance += 1;
        let (reads_base, writes_base) = access(&mut factory, &instruction, base);
        match entry {
            None if instruction.mnemonic() == Mnemonic::Movsxd
                && instruction.op0_kind() == OpKind::Register
                && instruction.op1_kind() == OpKind::Memory
                && instruction.memory_base().full_register() == base
                && instruction.memory_index() != Register::None
                && instruction.memory_index().full_register() != base
                && instruction.memory_index_scale() == 4
                && instruction.memory_displacement64() == 0
                && instruction.op0_register().full_register() != base =>
            {
                entry = Some(instruction.op0_register().full_register());
                distance = 0;
            }
            Some(loaded) if !added && adds(&instruction, base, loaded) => {
                // The sum written over the table's address ends it.
                if instruction.op0_register().full_register() == base {
                    return true;
                }
                added = true;
                distance = 0;
            }
            Some(_) if added && writes_base && !reads_base => return true,
            Some(loaded) if !added && access(&mut factory, &instruction, loaded).1 => {
                return false;
            }
            _ if reads_base || writes_base => return false,
            _ => {}
        }
    }
    false
}

/// Whether `instruction` reads `register` (an operand or an address) and
/// whether it writes all of it; a write of 8 or 16 bits keeps the rest, so
/// it counts as a read too.
fn access(
    factory: &mut InstructionInfoFactory,
    instruction: &Instruction,
    register: Register,
) -> (bool, bool) {
    let (mut read, mut write) = (false, false);
    for used in factory.info(instruction).used_registers() {
        if used.register().full_register() != register {
            continue;
        }
        let whole = used.register().is_gpr32() || used.register().is_gpr64();
        match used.access() {
            OpAccess::Read | OpAccess::CondRead => read = true,
            OpAccess::Write if whole => write = true,
            OpAccess::Write | OpAccess::CondWrite => (read, write) = (true, true),
            OpAccess::ReadWrite | OpAccess::ReadCondWrite => (read, write) = (true, true),
            _ => {}
        }
    }
    (read, write)
}

/// `add %a,%b` or `add %b,%a` (64-bit), or `lea (%a,%b),%c`.
fn adds(instruction: &Instruction, a: Register, b: Register) -> bool {
    let pair = |x: Register, y: Register| {
        let (x, y) = (x.full_register(), y.full_register());
        (x == a && y == b) || (x == b && y == a)
    };
    match instruction.mnemonic() {
        Mnemonic::Add => {
            instruction.op_count() == 2
                && instruction.op0_kind() == OpKind::Register
                && instruction.op1_kind() == OpKind::Register
                && instruction.op0_register().is_gpr64()
                && pair(instruction.op0_register(), instruction.op1_register())
        }
        Mnemonic::Lea => {
            instruction.op1_kind() == OpKind::Memory
                && instruction.memory_index_scale() == 1
                && instruction.memory_displacement64() == 0
                && pair(instruction.memory_base(), instruction.memory_index())
        }
        _ => false,
    }
}

/// Whether a dispatch of the table at `table` (of `size`, when a range
/// check says) stays in the function spanning `[start, end)`: every entry
/// of a table of exact size lands in it, or at its end (a case the
/// compiler knows unreachable). One that lands elsewhere (GCC's `f.cold`)
/// leaves the function, as a jump out of it does. A table of no exact
/// size was read only up to its first entry outside the function.
pub(crate) fn stays_in(
    image: &Image,
    table: u64,
    size: Option<TableSize>,
    start: u64,
    end: u64,
) -> bool {
    let Some(size) = size.filter(|s| s.exact) else {
        return true;
    };
    (0..size.entries).all(|i| {
        let target = if size.relative {
            image
                .read_u32(table.wrapping_add(4 * i))
                .map(|v| table.wrapping_add(v as i32 as i64 as u64))
        } else {
            image.read_pointer(table.wrapping_add(8 * i))
        };
        target.is_some_and(|t| (start..=end).contains(&t))
    })
}

/// What the dispatch analysis knows a register holds on every path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    Unknown,
    /// The address of the jump table at this address.
    Table(u64),
    /// A 4-byte entry of that table, sign-extended (`movslq (%b,%i,4)`).
    Entry(u64),
    /// The table's address plus one of its entries, or an 8-byte entry of
    /// a table of addresses: where the table sends a jump.
    Case(u64),
}

/// General registers by number.
type State = [Held; 16];

/// The indirect jumps among `instructions` (one function's reached
/// instructions in address order, `None` for bytes no path reaches) that
/// dispatch a jump table, by their addresses, sorted: those whose target,
/// on every path through the function, is an entry of a table `is_table`
/// accepts (one the reachability walk read for this function, whose
/// entries all land in it: see [`stays_in`]):
///
/// ```text
/// jmp *T(,%i,8)      mov T(,%i,8),%r       lea T(%rip),%b (or mov $T,%b)
///                    jmp *%r               movslq (%b,%i,4),%e
///                                          add %b,%e (or lea (%b,%e),%r)
///                                          jmp *%e
/// ```
///
/// A forward analysis over the function's paths says what each register
/// holds: a table's address (`lea`/`mov $` of it), an entry loaded
/// through it, their sum, kept by copies and across calls in callee-saved
/// registers, lost by any other write and where paths with different
/// values meet (so a table's address set up before a loop still holds at
/// a dispatch inside it). Paths start with nothing known at `entries` (the
/// function's start, its other symbols, its landing pads), go both ways
/// at conditional branches, and from every indirect jump into every place
/// the function's tables send one (`jump_targets`, sorted). Any other
/// indirect jump may go anywhere: an indirect tail call, which may read
/// every argument register (see `x86_escape.rs`). Main assumption: other
/// functions enter this one only at `entries` (as the rest of the escape
/// scan assumes), and a callee keeps the callee-saved registers.
pub(crate) fn dispatch_jumps(
    instructions: &[Option<Instruction>],
    is_table: impl Fn(u64) -> bool,
    entries: &[u64],
    jump_targets: &[u64],
) -> Vec<u64> {
    let mut by_ip: Vec<(u64, usize)> = instructions
        .iter()
        .enumerate()
        .filter_map(|(i, x)| x.map(|x| (x.ip(), i)))
        .collect();
    by_ip.sort_unstable();
    let index_of = |ip: u64| {
        by_ip
            .binary_search_by_key(&ip, |&(ip, _)| ip)
            .ok()
            .map(|found| by_ip[found].1)
    };
    let mut states: Vec<Option<State>> = vec![None; instructions.len()];
    let mut work: Vec<usize> = Vec::new();
    let flow_into =
        |states: &mut Vec<Option<State>>, work: &mut Vec<usize>, index: usize, state: &State| {
            let merged = match &states[index] {
                None => *state,
                Some(known) => {
                    let mut merged = *known;
                    for (m, s) in merged.iter_mut().zip(state) {
                        if m != s {
                            *m = Held::Unknown;
                        }
                    }
                    if merged == *known {
                        return;
                    }
                    merged
                }
            };
            states[index] = Some(merged);
            work.push(index);
        };
    for &entry in entries {
        if let Some(index) = index_of(entry) {
            flow_into(&mut states, &mut work, index, &[Held::Unknown; 16]);
        }
    }
    let mut factory = InstructionInfoFactory::new();
    let mut steps = 0usize;
    while let Some(index) = work.pop() {
        steps += 1;
        // A budget far above any function's need: past it, no dispatch.
        if steps > 64 * instructions.len() + 1024 {
            return Vec::new();
        }
        let (Some(instruction), Some(before)) = (&instructions[index], states[index]) else {
            continue;
        };
        let after = transfer(&mut factory, instruction, &before, &is_table);
        let mut successors = Vec::new();
        match instruction.flow_control() {
            FlowControl::UnconditionalBranch => {
                successors.extend(near_target(instruction).and_then(&index_of));
            }
            FlowControl::ConditionalBranch => {
                successors.extend(near_target(instruction).and_then(&index_of));
                successors.extend(index_of(instruction.next_ip()));
            }
            FlowControl::IndirectBranch => {
                successors.extend(jump_targets.iter().filter_map(|&t| index_of(t)));
            }
            FlowControl::Return => {}
            // Calls, interrupts and the rest may go on with the next one.
            _ => successors.extend(index_of(instruction.next_ip())),
        }
        for successor in successors {
            flow_into(&mut states, &mut work, successor, &after);
        }
    }
    let mut found = Vec::new();
    for (index, jump) in instructions.iter().enumerate() {
        let Some(jump) = jump else {
            continue;
        };
        if jump.mnemonic() != Mnemonic::Jmp {
            continue;
        }
        let dispatch = match jump.op0_kind() {
            OpKind::Memory => absolute_entry(jump).is_some_and(&is_table),
            OpKind::Register => states[index]
                .is_some_and(|state| matches!(held(&state, jump.op0_register()), Held::Case(_))),
            _ => false,
        };
        if dispatch {
            found.push(jump.ip());
        }
    }
    found.sort_unstable();
    found
}

fn near_target(instruction: &Instruction) -> Option<u64> {
    matches!(
        instruction.op0_kind(),
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
    )
    .then(|| instruction.near_branch_target())
}

/// What a 64-bit general register holds; anything else holds nothing known.
fn held(state: &State, register: Register) -> Held {
    if register.is_gpr64() {
        state[register.number() & 15]
    } else {
        Held::Unknown
    }
}

/// `T(,%i,8)` with no base: the table `T` an instruction reads an 8-byte
/// entry of.
fn absolute_entry(instruction: &Instruction) -> Option<u64> {
    ((0..instruction.op_count()).any(|n| instruction.op_kind(n) == OpKind::Memory)
        && instruction.memory_base() == Register::None
        && instruction.memory_index() != Register::None
        && instruction.memory_index_scale() == 8
        && !instruction.is_ip_rel_memory_operand())
    .then(|| instruction.memory_displacement64())
}

/// The registers a call may change (System V): all but the callee-saved.
const CALL_CLOBBERED: [Register; 9] = [
    Register::RAX,
    Register::RCX,
    Register::RDX,
    Register::RSI,
    Register::RDI,
    Register::R8,
    Register::R9,
    Register::R10,
    Register::R11,
];

/// The state after `instruction` runs in `before`.
fn transfer(
    factory: &mut InstructionInfoFactory,
    instruction: &Instruction,
    before: &State,
    is_table: &impl Fn(u64) -> bool,
) -> State {
    let mut after = *before;
    let destination = (instruction.op_count() > 0 && instruction.op0_kind() == OpKind::Register)
        .then(|| instruction.op0_register());
    // What the instruction puts in its destination, when it is one of the
    // shapes the analysis follows.
    let value = match (instruction.mnemonic(), destination) {
        (Mnemonic::Lea, Some(d)) if d.is_gpr64() && instruction.is_ip_rel_memory_operand() => {
            let table = instruction.ip_rel_memory_address();
            Some(if is_table(table) {
                Held::Table(table)
            } else {
                Held::Unknown
            })
        }
        (Mnemonic::Lea, Some(d))
            if d.is_gpr64()
                && instruction.memory_index_scale() == 1
                && instruction.memory_displacement64() == 0 =>
        {
            Some(sum(
                held(before, instruction.memory_base()),
                held(before, instruction.memory_index()),
            ))
        }
        (Mnemonic::Mov, Some(d))
            if (d.is_gpr64() || d.is_gpr32())
                && matches!(
                    instruction.op1_kind(),
                    OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64
                ) =>
        {
            let table = instruction.immediate(1);
            Some(if is_table(table) {
                Held::Table(table)
            } else {
                Held::Unknown
            })
        }
        (Mnemonic::Mov, Some(d)) if d.is_gpr64() && instruction.op1_kind() == OpKind::Register => {
            Some(held(before, instruction.op1_register()))
        }
        (Mnemonic::Mov, Some(d)) if d.is_gpr64() && instruction.op1_kind() == OpKind::Memory => {
            Some(match absolute_entry(instruction) {
                Some(table) if is_table(table) => Held::Case(table),
                _ => Held::Unknown,
            })
        }
        (Mnemonic::Movsxd, Some(d))
            if d.is_gpr64()
                && instruction.op1_kind() == OpKind::Memory
                && instruction.memory_index() != Register::None
                && instruction.memory_index_scale() == 4
                && instruction.memory_displacement64() == 0 =>
        {
            Some(match held(before, instruction.memory_base()) {
                Held::Table(table) => Held::Entry(table),
                _ => Held::Unknown,
            })
        }
        (Mnemonic::Add, Some(d))
            if d.is_gpr64()
                && instruction.op1_kind() == OpKind::Register
                && instruction.op1_register().is_gpr64() =>
        {
            Some(sum(
                held(before, d),
                held(before, instruction.op1_register()),
            ))
        }
        _ => None,
    };
    // Every register the instruction writes holds nothing known, then the
    // destination what the shape says.
    for used in factory.info(instruction).used_registers() {
        if matches!(
            used.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        ) && used.register().is_gpr()
        {
            after[used.register().full_register().number() & 15] = Held::Unknown;
        }
    }
    if matches!(
        instruction.flow_control(),
        FlowControl::Call | FlowControl::IndirectCall
    ) {
        for register in CALL_CLOBBERED {
            after[register.number() & 15] = Held::Unknown;
        }
    }
    if let (Some(value), Some(d)) = (value, destination) {
        after[d.full_register().number() & 15] = value;
    }
    after
}

/// What `a + b` holds: a table's address plus one of its entries is where
/// it sends a jump.
fn sum(a: Held, b: Held) -> Held {
    match (a, b) {
        (Held::Table(t), Held::Entry(u)) | (Held::Entry(u), Held::Table(t)) if t == u => {
            Held::Case(t)
        }
        _ => Held::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::dispatch_jumps;
    use iced_x86::{Decoder, DecoderOptions};

    /// The dispatches in `hex` (machine code at 0x1000), whose tables are
    /// at 0x1100 (4-byte offsets) and 0x2000 (addresses).
    fn dispatches(hex: &str, entries: &[u64], jump_targets: &[u64]) -> Vec<u64> {
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        let decoder = Decoder::with_ip(64, &bytes, 0x1000, DecoderOptions::NONE);
        let instructions: Vec<_> = decoder.into_iter().map(Some).collect();
        let is_table = |t: u64| t == 0x1100 || t == 0x2000;
        dispatch_jumps(&instructions, is_table, entries, jump_targets)
    }

    #[test]
    fn a_table_address_set_up_before_a_loop_still_dispatches_in_it() {
        // lea T(%rip),%rdx; 1: movslq (%rdx,%rdi,4),%rax; add %rdx,%rax;
        // 0x100e: jmp *%rax; 0x1010: inc %edi; jmp 1b
        let code = "488d15f9000000486304ba4801d0ffe0ffc7ebf3";
        assert_eq!(dispatches(code, &[0x1000], &[0x1010]), vec![0x100e]);
        // Entered at the loop with anything in %rdx, it goes anywhere.
        assert_eq!(
            dispatches(code, &[0x1000, 0x1007], &[0x1010]),
            Vec::<u64>::new()
        );
    }

    #[test]
    fn only_jumps_to_what_a_table_entry_computes_dispatch() {
        // 0x1000: lea T(%rip),%rdx; movslq (%rdx,%rdi,4),%rax; add %rdx,%rax;
        //   0x100e: jmp *%rax (a dispatch)
        // 0x1010: mov hook(%rip),%rax; lea A(%rip),%rdi; 0x101e: jmp *%rax
        //   (a tail call)
        // 0x1020: lea T(%rip),%rdx; call; movslq (%rdx,%rdi,4),%rax;
        //   add %rdx,%rax; 0x1033: jmp *%rax (the call may change %rdx)
        // 0x1035: lea T(%rip),%rbx; call; movslq (%rbx,%rdi,4),%rax;
        //   lea (%rax,%rbx),%rcx; 0x1049: jmp *%rcx (%rbx is kept)
        // 0x104b: jmp *T2(,%rdi,8); 0x1052: mov T2(,%rdi,8),%rax;
        //   0x105a: jmp *%rax
        let code = "488d15f9000000486304ba4801d0ffe0488b05e9010000488d3de2020000ffe0\
                    488d15d9000000e8f4ffffff486304ba4801d0ffe0488d1dc4000000e8f4ffffff\
                    486304bb488d0c18ffe1ff24fd00200000488b04fd00200000ffe0";
        assert_eq!(
            dispatches(code, &[0x1000, 0x1020, 0x1035, 0x104b, 0x1052], &[0x1010]),
            vec![0x100e, 0x1049, 0x104b, 0x105a]
        );
    }
}
