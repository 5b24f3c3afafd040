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

fn decode_at(image: &Image, address: u64) -> Option<Instruction> {
    let bytes = image.bytes_to_section_end(address)?;
    let bytes = &bytes[..bytes.len().min(15)];
    let mut decoder = Decoder::with_ip(64, bytes, address, DecoderOptions::NONE);
    let instruction = decoder.decode();
    (!instruction.is_invalid()).then_some(instruction)
}

fn writes(
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

/// The indirect jumps among `instructions` (one function's reached
/// instructions in address order, `None` for bytes no path reaches) that
/// dispatch a jump table, by their addresses, sorted: those where the code
/// leaves no doubt that the jump goes to an entry of a table `is_table`
/// accepts (one the reachability walk read for this function):
///
/// ```text
/// jmp *T(,%i,8)      mov T(,%i,8),%r       lea T(%rip),%b (or mov $T,%b)
///                    jmp *%r               ... (nothing writes %b)
///                                          movslq (%b,%i,4),%e
///                                          add %b,%e (or lea (%b,%e),%r)
///                                          jmp *%e
/// ```
///
/// each a straight-line run that no branch, jump table entry or landing
/// pad (`entered`) enters after its first instruction. Any other indirect
/// jump may go anywhere: an indirect tail call, which may read every
/// argument register (see `x86_escape.rs`).
pub(crate) fn dispatch_jumps(
    instructions: &[Option<Instruction>],
    is_table: impl Fn(u64) -> bool,
    entered: impl Fn(u64) -> bool,
) -> Vec<u64> {
    let mut factory = InstructionInfoFactory::new();
    let mut found = Vec::new();
    for (at, jump) in instructions.iter().enumerate() {
        let Some(jump) = jump else {
            continue;
        };
        if jump.mnemonic() != Mnemonic::Jmp {
            continue;
        }
        let dispatch = match jump.op0_kind() {
            OpKind::Memory => absolute_entry(jump).is_some_and(&is_table),
            OpKind::Register => {
                let target = jump.op0_register().full_register();
                register_dispatch(instructions, at, target, &is_table, &entered, &mut factory)
            }
            _ => false,
        };
        if dispatch {
            found.push(jump.ip());
        }
    }
    found.sort_unstable();
    found
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

/// The instruction before `instructions[at]` if it ends where that one
/// starts and nothing enters the latter: the run goes on backwards.
fn straight_before<'a>(
    instructions: &'a [Option<Instruction>],
    at: usize,
    entered: &impl Fn(u64) -> bool,
) -> Option<(usize, &'a Instruction)> {
    let current = instructions.get(at)?.as_ref()?;
    let previous = at.checked_sub(1)?;
    let instruction = instructions[previous].as_ref()?;
    (instruction.next_ip() == current.ip()
        && instruction.flow_control() == FlowControl::Next
        && !entered(current.ip()))
    .then_some((previous, instruction))
}

/// Whether the jump through `target` at `instructions[at]` ends one of the
/// register shapes of [`dispatch_jumps`].
fn register_dispatch(
    instructions: &[Option<Instruction>],
    at: usize,
    target: Register,
    is_table: &impl Fn(u64) -> bool,
    entered: &impl Fn(u64) -> bool,
    factory: &mut InstructionInfoFactory,
) -> bool {
    let Some((sum_at, sum)) = straight_before(instructions, at, entered) else {
        return false;
    };
    // `mov T(,%i,8),%r ; jmp *%r`
    if sum.mnemonic() == Mnemonic::Mov
        && sum.op_count() == 2
        && sum.op0_kind() == OpKind::Register
        && sum.op0_register() == target
        && target.is_gpr64()
    {
        return absolute_entry(sum).is_some_and(is_table);
    }
    // The sum of the table's address and an entry, in `target`.
    let (first, second) = match sum.mnemonic() {
        Mnemonic::Add
            if sum.op_count() == 2
                && sum.op0_kind() == OpKind::Register
                && sum.op1_kind() == OpKind::Register
                && sum.op0_register() == target
                && target.is_gpr64()
                && sum.op1_register().is_gpr64() =>
        {
            (target, sum.op1_register())
        }
        Mnemonic::Lea
            if sum.op1_kind() == OpKind::Memory
                && sum.op0_register() == target
                && target.is_gpr64()
                && sum.memory_index_scale() == 1
                && sum.memory_displacement64() == 0
                && sum.memory_base().is_gpr64()
                && sum.memory_index().is_gpr64() =>
        {
            (sum.memory_base(), sum.memory_index())
        }
        _ => return false,
    };
    let Some((load_at, load)) = straight_before(instructions, sum_at, entered) else {
        return false;
    };
    // `movslq (%b,%i,4),%e`, the entry in one register and the table's
    // address in the other.
    let is_load = load.mnemonic() == Mnemonic::Movsxd
        && load.op_count() == 2
        && load.op0_kind() == OpKind::Register
        && load.op1_kind() == OpKind::Memory
        && load.memory_index_scale() == 4
        && load.memory_displacement64() == 0
        && load.memory_index() != Register::None;
    if !is_load {
        return false;
    }
    let entry = load.op0_register().full_register();
    let base = load.memory_base().full_register();
    if !base.is_gpr64()
        || base == entry
        || !((first == entry && second == base) || (first == base && second == entry))
    {
        return false;
    }
    // The last write of the base before the load puts the table's address
    // there.
    let mut cursor = load_at;
    for _ in 0..=LOAD_DISTANCE {
        let Some((previous_at, previous)) = straight_before(instructions, cursor, entered) else {
            return false;
        };
        if writes(factory, previous, base) {
            let table = match previous.mnemonic() {
                Mnemonic::Lea if previous.is_ip_rel_memory_operand() => {
                    previous.ip_rel_memory_address()
                }
                Mnemonic::Mov
                    if previous.op_count() == 2
                        && matches!(
                            previous.op1_kind(),
                            OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64
                        ) =>
                {
                    previous.immediate(1)
                }
                _ => return false,
            };
            return previous.op0_kind() == OpKind::Register
                && previous.op0_register().full_register() == base
                && (previous.op0_register().is_gpr64() || previous.op0_register().is_gpr32())
                && is_table(table);
        }
        cursor = previous_at;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::dispatch_jumps;
    use iced_x86::{Decoder, DecoderOptions};

    /// 0x1000: lea T(%rip),%rdx (T = 0x1007); mov %edi,%edi;
    /// movslq (%rdx,%rdi,4),%rax; 0x100d: add %rdx,%rax; 0x1010: jmp *%rax;
    /// 0x1012: lea A(%rip),%rdi; 0x1019: jmp *%rax;
    /// 0x101b: jmp *0x2000(,%rdi,8);
    /// 0x1022: mov 0x2000(,%rdi,8),%rax; 0x102a: jmp *%rax
    const CODE: &str =
        "488d150000000089ff486304ba4801d0ffe0488d3d00000000ffe0ff24fd00200000488b04fd00200000ffe0";

    fn dispatches(is_table: impl Fn(u64) -> bool, entered: impl Fn(u64) -> bool) -> Vec<u64> {
        let bytes: Vec<u8> = (0..CODE.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&CODE[i..i + 2], 16).expect("hex"))
            .collect();
        let decoder = Decoder::with_ip(64, &bytes, 0x1000, DecoderOptions::NONE);
        let instructions: Vec<_> = decoder.into_iter().map(Some).collect();
        dispatch_jumps(&instructions, is_table, entered)
    }

    #[test]
    fn only_the_jumps_a_table_load_computes_dispatch() {
        let tables = |t: u64| t == 0x1007 || t == 0x2000;
        // The jump after `lea A(%rip),%rdi` is a tail call.
        assert_eq!(dispatches(tables, |_| false), vec![0x1010, 0x101b, 0x102a]);
        // A branch into the run may bring anything to the jump.
        assert_eq!(dispatches(tables, |a| a == 0x100d), vec![0x101b, 0x102a]);
        // Nor is a load from what is no table of the function a dispatch.
        assert_eq!(dispatches(|t| t == 0x1007, |_| false), vec![0x1010]);
    }
}
