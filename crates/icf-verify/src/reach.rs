//! Which bytes of x86-64 code are instructions: a recursive descent over
//! the whole image from every place something enters code, following
//! direct branches, calls and fall-through. Bytes no path reaches (data a
//! function embeds: `lea 1f(%rip),%rax; jmp 2f; 1: .long -49; 2: movslq
//! (%rax),%rax`) are not decoded, so they never become a bogus branch whose
//! target lands in another function. Main assumption: code is entered
//! only at its symbols (functions and labels), the ELF entry point,
//! landing pads (`eh.rs`), addresses that kept (`-q`) or dynamic
//! relocations store, direct branch targets of reached code, the entries
//! of jump tables a reached function reads (4-byte offsets from the table
//! or 8-byte addresses, each landing in the function and not inside one of
//! its instructions) when the function holds an indirect jump, and the
//! code addresses reached instructions form (`lea 1f(%rip)`, `mov $1f`)
//! unless the escape scan shows the address only loaded or stored through
//! on every path (then what it points to is data): code reached through
//! an address built arithmetically (`lea 1f(%rip),%r9; add %rcx,%r9; jmp
//! *%r9`, glibc's `__memmove_ssse3`) is entered only at `1f`.

use std::collections::{HashMap, HashSet};

use iced_x86::{Instruction, Mnemonic, OpKind};

use crate::code::Use;
use crate::image::{Image, JumpTable, SymbolKind, TableSize, is_absolute_address};
use crate::x86;
use crate::x86_escape::{Body, Scan, address_reach};
use crate::x86_table::{self, TableBound};

/// Reads entry `i` of a table: its place, width and the address it names.
type EntryReader<'a> = dyn Fn(u64) -> Option<(u64, u64, u64)> + 'a;

/// Instruction starts and covered bytes of one executable section.
struct SectionMap {
    start: u64,
    end: u64,
    starts: Vec<u64>,
    covered: Vec<u64>,
}

impl SectionMap {
    fn bit(&self, address: u64) -> (usize, u64) {
        let i = (address - self.start) as usize;
        (i / 64, 1u64 << (i % 64))
    }

    fn is_start(&self, address: u64) -> bool {
        let (word, mask) = self.bit(address);
        self.starts[word] & mask != 0
    }

    fn is_covered(&self, address: u64) -> bool {
        let (word, mask) = self.bit(address);
        self.covered[word] & mask != 0
    }
}

/// The walk's state over every executable section of one image.
struct Walk<'a> {
    image: &'a Image,
    sections: Vec<SectionMap>,
    work: Vec<u64>,
    /// (instruction, read-only data it references): candidate jump tables.
    tables: Vec<(u64, u64)>,
    /// The tables' addresses, sorted (rebuilt when `tables` grows).
    table_starts: Vec<u64>,
    indirect_jumps: Vec<u64>,
    /// Where the entries of the tables read so far send their jumps.
    jump_targets: Vec<u64>,
    /// Where the direct jumps and conditional branches of reached code go.
    branch_targets: Vec<u64>,
    /// Code addresses reached instructions use other than by a branch or
    /// call (`lea 1f(%rip)`).
    code_references: Vec<u64>,
    /// (instruction, code address) for each code address a reached
    /// instruction forms as a value (`lea 1f(%rip)`, `mov $1f`) that is
    /// not an entry yet (see [`Walk::enter_computed`]).
    computed: Vec<(u64, u64)>,
    /// The range check found for each (instruction, table) examined.
    bounds: HashMap<(u64, u64), Option<TableBound>>,
    /// The tables read so far: (table, the function reading it, its
    /// bound from the range check before the load, if one was found).
    read_tables: Vec<(u64, u64, Option<TableBound>)>,
    /// For each function a table is read in, by its start: the places in
    /// data its RIP-relative operands name, decoded linearly, sorted (see
    /// [`Walk::next_named_by_function`]).
    named_by_function: HashMap<u64, Vec<u64>>,
}

impl Walk<'_> {
    fn section(&self, address: u64) -> Option<usize> {
        let i = self.sections.partition_point(|s| s.start <= address);
        let index = i.checked_sub(1)?;
        (address < self.sections[index].end).then_some(index)
    }

    /// Decodes from `address` along fall-through until a reached
    /// instruction, an instruction that does not continue, or the section's end.
    fn visit(&mut self, mut address: u64) {
        // Fall-through stops at the end of the function it starts in (its
        // largest symbol: an alias may be shorter): past
        // it is padding or the next function (an entry of its own), and a
        // call that never returns (`_Unwind_Resume`, `abort`) would
        // otherwise run the walk through padding into the next function's
        // instructions at the wrong boundary.
        let function_end = self
            .image
            .symbols_around(address)
            .0
            .iter()
            .map(|&id| self.image.symbol(id))
            .filter(|s| s.kind == SymbolKind::Function)
            .map(|s| s.end())
            .max()
            .unwrap_or(u64::MAX);
        while let Some(index) = self.section(address)
            && address < function_end
            && !self.image.in_data_in_code(address)
        {
            if self.sections[index].is_start(address) {
                return;
            }
            let end = self.sections[index].end;
            let Some(bytes) = self.image.bytes(address, (end - address).min(15)) else {
                return;
            };
            let flow = x86::flow(self.image, bytes, address);
            let section = &mut self.sections[index];
            let (word, mask) = section.bit(address);
            section.starts[word] |= mask;
            for byte in address..(address + flow.len).min(end) {
                let (word, mask) = section.bit(byte);
                section.covered[word] |= mask;
            }
            if flow.invalid {
                return;
            }
            for reference in &flow.refs {
                let target = reference.address;
                if self.image.is_code(target) {
                    if matches!(reference.use_, Use::Call | Use::Jump) {
                        self.work.push(target);
                    }
                    if reference.use_ == Use::Jump {
                        self.branch_targets.push(target);
                    } else if reference.use_ != Use::Call {
                        self.code_references.push(target);
                        if reference.use_ == Use::Address {
                            self.computed.push((address, target));
                        }
                    }
                } else if self.image.is_mapped(target) {
                    self.tables.push((address, target));
                }
            }
            if flow.indirect_jump {
                self.indirect_jumps.push(address);
            }
            // A call to a function that never returns (`abort`, `_Exit`)
            // does not continue: on Mach-O, whose functions run to the next
            // symbol, what follows is padding and then another function.
            let calls_noreturn = flow.refs.iter().any(|r| {
                r.use_ == Use::Call
                    && self
                        .image
                        .noreturn_entries
                        .binary_search(&r.address)
                        .is_ok()
            });
            if !flow.continues || calls_noreturn {
                return;
            }
            address += flow.len;
        }
    }

    fn drain(&mut self) {
        while let Some(address) = self.work.pop() {
            self.visit(address);
        }
    }

    /// The extent of the function holding `address` (its largest symbol).
    fn function_extent(&self, address: u64) -> Option<(u64, u64)> {
        let (containing, _) = self.image.symbols_around(address);
        containing
            .iter()
            .map(|&id| self.image.symbol(id))
            .filter(|s| s.kind == SymbolKind::Function)
            .map(|s| (s.address, s.end()))
            .max_by_key(|&(start, end)| (end - start, std::cmp::Reverse(start)))
    }

    /// Follows the entries of the jump tables reached functions read, each
    /// entry's code decoded before the next entry is read (so an entry past
    /// the table's end lands inside a decoded instruction and ends it).
    /// Tables whose dispatch and range check were recognized
    /// (`x86_table.rs`) come first and are read to their bound; only when
    /// none is left is one other candidate read, which ends at the next
    /// table a reached instruction references, at the next data label, and
    /// (with `-q`) at the first entry without a kept relocation: by then
    /// the recognized tables' code is decoded, so an array the function
    /// indexes, taken for a table, stops at its first entry that lands
    /// inside an instruction. True when a table was read.
    fn scan_tables(&mut self, scanned: &mut HashSet<(u64, u64)>) -> bool {
        self.indirect_jumps.sort_unstable();
        self.indirect_jumps.dedup();
        let mut unbounded = Vec::new();
        let mut read = false;
        let mut next = 0;
        while next < self.tables.len() {
            let (instruction, table) = self.tables[next];
            next += 1;
            let Some((start, end)) = self.function_extent(instruction) else {
                continue;
            };
            let i = self.indirect_jumps.partition_point(|&a| a < start);
            if self.indirect_jumps.get(i).is_none_or(|&a| a >= end)
                || scanned.contains(&(instruction, table))
            {
                continue;
            }
            let bound = match self.bounds.get(&(instruction, table)) {
                Some(&bound) => bound,
                None => {
                    let before = self.starts_before(instruction, start);
                    let bound = x86_table::table_bound(self.image, instruction, table, &before);
                    self.bounds.insert((instruction, table), bound);
                    bound
                }
            };
            match bound {
                Some(bound) => {
                    scanned.insert((instruction, table));
                    self.read_table(table, (start, end), Some(bound));
                    read = true;
                }
                None => unbounded.push((instruction, table, start, end)),
            }
        }
        if read {
            return true;
        }
        let known = self.tables.len();
        for (instruction, table, start, end) in unbounded {
            scanned.insert((instruction, table));
            self.read_table(table, (start, end), None);
            read = true;
            // New references first go through the recognized tables.
            if self.tables.len() > known {
                break;
            }
        }
        read
    }

    /// Reads the entries of the table at `table` of the function spanning
    /// `function`, decoding the code each sends the jump to.
    fn read_table(&mut self, table: u64, function: (u64, u64), bound: Option<TableBound>) {
        let image = self.image;
        let (start, end) = function;
        let relative = |i: u64| {
            let place = table + 4 * i;
            image
                .read_u32(place)
                .map(|v| (place, 4, table.wrapping_add(v as i32 as i64 as u64)))
        };
        let absolute = |i: u64| {
            let place = table + 8 * i;
            image.read_pointer(place).map(|v| (place, 8, v))
        };
        // The load says how wide the entries are, when it was recognized.
        let readers: Vec<&EntryReader> = match bound.map(|b| b.size.relative) {
            Some(true) => vec![&relative],
            Some(false) => vec![&absolute],
            None => vec![&relative, &absolute],
        };
        let exact = bound.is_some_and(|b| b.size.exact);
        let mut read_any = false;
        for entry in readers {
            for i in 0.. {
                let Some((place, width, target)) = entry(i) else {
                    break;
                };
                // An exact range check sizes the table; otherwise it ends
                // where something else is known to start, and within a
                // mask's bound.
                let mut known_end = || {
                    place + width
                        > self
                            .next_table(table)
                            .min(image.next_label(table))
                            .min(self.next_named_by_function(table, function))
                };
                let past_end = match bound.map(|b| b.size) {
                    Some(TableSize {
                        entries,
                        exact: true,
                        ..
                    }) => i >= entries,
                    Some(TableSize { entries, .. }) => i >= entries || known_end(),
                    None => known_end(),
                };
                if past_end {
                    break;
                }
                // In a table of known size, an entry at the function's end
                // is a case the compiler knows unreachable
                // (`__builtin_unreachable`), one elsewhere a jump to
                // another part of it (GCC's `f.cold`, entered at its own
                // symbol): the other entries still count.
                if exact && !(start..end).contains(&target) {
                    continue;
                }
                if !(start..end).contains(&target)
                    || (image.has_emitted_relocs() && !image.emitted.contains_key(&place))
                {
                    break;
                }
                let Some(index) = self.section(target) else {
                    break;
                };
                read_any = true;
                self.jump_targets.push(target);
                let section = &self.sections[index];
                if section.is_start(target) {
                    continue;
                }
                if section.is_covered(target) {
                    break;
                }
                self.work.push(target);
                self.drain();
            }
        }
        if read_any {
            self.read_tables.push((table, start, bound));
        }
    }

    /// The reached instruction starts of the function starting at
    /// `function_start` that come before `address`, the nearest
    /// [`x86_table::CHECK_DISTANCE`] of them, in address order.
    fn starts_before(&self, address: u64, function_start: u64) -> Vec<u64> {
        let mut starts = Vec::new();
        let Some(index) = self.section(address) else {
            return starts;
        };
        let section = &self.sections[index];
        let lowest = function_start.max(section.start);
        let mut at = address;
        while at > lowest && starts.len() < x86_table::CHECK_DISTANCE {
            at -= 1;
            if section.is_start(at) {
                starts.push(at);
            }
        }
        starts.reverse();
        starts
    }

    /// Enters the code addresses reached instructions form as values
    /// (`lea 1f(%rip),%rax; jmp *%rax`) that no path reached yet, unless
    /// the address only ever serves to read memory: data a function embeds
    /// (`lea 1f(%rip),%rax; jmp 2f; 1: .long 41073; 2: movslq (%rax),%rax`),
    /// which stays data, compared as bytes. The escape scan of the
    /// instruction forming it (`x86_escape.rs`) tells: one that lets the
    /// address escape (stored, passed, jumped or called through, anything
    /// the scan cannot follow) makes it an entry, as does any other
    /// instruction forming it (`push $1f`). True when one was entered.
    /// (Those judged data are judged again after the walk enters more
    /// code: a new path may let the address out.)
    fn enter_computed(&mut self) -> bool {
        let mut pending = std::mem::take(&mut self.computed);
        pending.sort_unstable();
        pending.dedup();
        let mut entered = false;
        for (site, target) in pending {
            let Some(index) = self.section(target) else {
                continue;
            };
            if self.sections[index].is_start(target) {
                continue;
            }
            if self.only_dereferenced(site) {
                self.computed.push((site, target));
            } else {
                self.work.push(target);
                entered = true;
            }
        }
        entered
    }

    /// Whether the `lea` or `mov $` at `site` forms an address that its
    /// function, on every path, only loads or stores through (see
    /// [`x86_escape::address_reach`]), with what the walk knows so far of
    /// the function: its reached instructions and jump tables.
    fn only_dereferenced(&self, site: u64) -> bool {
        let image = self.image;
        let Some(instruction) = x86_table::decode_at(image, site) else {
            return false;
        };
        let forms_value = instruction.op_count() == 2
            && instruction.op0_kind() == OpKind::Register
            && match instruction.mnemonic() {
                Mnemonic::Lea => instruction.is_ip_rel_memory_operand(),
                Mnemonic::Mov => matches!(
                    instruction.op1_kind(),
                    OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64
                ),
                _ => false,
            };
        if !forms_value {
            return false;
        }
        let (Some((start, end)), Some(index)) = (self.function_extent(site), self.section(site))
        else {
            return false;
        };
        let section = &self.sections[index];
        let instructions: Vec<Option<Instruction>> = (start.max(section.start)
            ..end.min(section.end))
            .filter(|&a| section.is_start(a))
            .map(|a| x86_table::decode_at(image, a))
            .collect();
        let Some(at) = instructions
            .iter()
            .position(|i| i.is_some_and(|i| i.ip() == site))
        else {
            return false;
        };
        let mut jump_targets: Vec<u64> = self
            .jump_targets
            .iter()
            .copied()
            .filter(|t| (start..end).contains(t))
            .collect();
        jump_targets.sort_unstable();
        jump_targets.dedup();
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
        entries.extend(
            image
                .landing_pads
                .iter()
                .copied()
                .filter(|a| (start..end).contains(a)),
        );
        let is_table = |table: u64| {
            let mine: Vec<_> = self
                .read_tables
                .iter()
                .filter(|&&(t, function, _)| t == table && (start..end).contains(&function))
                .collect();
            !mine.is_empty()
                && mine.iter().all(|&&(_, _, bound)| {
                    x86_table::stays_in(image, table, bound.map(|b| b.size), start, end)
                })
        };
        let dispatches =
            x86_table::dispatch_jumps(&instructions, is_table, &entries, &jump_targets);
        let body = Body {
            instructions: &instructions,
            jump_targets: &jump_targets,
            dispatches: &dispatches,
            single_register_return: image.single_register_returns.binary_search(&start).is_ok(),
            argument_registers: &image.argument_registers,
            forward_readers: &image.forward_readers,
        };
        address_reach(&Scan::new(&body), at).is_some()
    }

    /// The first place in data after `table` that a RIP-relative operand
    /// of the function spanning `function` names, decoding it linearly: the
    /// walk reaches a function's instructions in no particular order, so
    /// the next table of a function with many (a large `switch` lowered to
    /// one table per level) may not be known yet when a table is read, and
    /// its entries would be read as this one's. A linear decode that goes
    /// wrong (data in code) only adds bounds: a table read short leaves
    /// cases unreached, compared as data, never skipped.
    fn next_named_by_function(&mut self, table: u64, function: (u64, u64)) -> u64 {
        let image = self.image;
        let named = self.named_by_function.entry(function.0).or_insert_with(|| {
            let Some(bytes) = image.bytes(function.0, function.1.saturating_sub(function.0)) else {
                return Vec::new();
            };
            let mut named: Vec<u64> =
                iced_x86::Decoder::with_ip(64, bytes, function.0, iced_x86::DecoderOptions::NONE)
                    .into_iter()
                    .filter(|i| i.is_ip_rel_memory_operand())
                    .map(|i| i.ip_rel_memory_address())
                    .filter(|&a| !image.is_code(a))
                    .collect();
            named.sort_unstable();
            named.dedup();
            named
        });
        let i = named.partition_point(|&t| t <= table);
        named.get(i).copied().unwrap_or(u64::MAX)
    }

    /// The first table a reached instruction references after `table`.
    fn next_table(&mut self, table: u64) -> u64 {
        if self.table_starts.len() != self.tables.len() {
            self.table_starts = self.tables.iter().map(|&(_, t)| t).collect();
            self.table_starts.sort_unstable();
        }
        let i = self.table_starts.partition_point(|&t| t <= table);
        self.table_starts.get(i).copied().unwrap_or(u64::MAX)
    }
}

/// What the walk found: the start of every instruction some path reaches,
/// every non-code address a reached instruction references (where tables
/// and constants start), and every place a jump table entry sends an
/// indirect jump, all sorted.
pub(crate) struct Reached {
    pub instruction_starts: Vec<u64>,
    /// Code addresses reached instructions use other than by a branch or
    /// call, sorted.
    pub code_references: Vec<u64>,
    pub referenced_data: Vec<u64>,
    pub jump_targets: Vec<u64>,
    pub jump_tables: Vec<JumpTable>,
}

/// Walks `image`'s code from every entry.
/// The places the entries of the table of offsets at `table` name: entry
/// by entry while the table runs short of the next referenced place
/// (`referenced`, sorted) and of the lowest place an entry names past it,
/// and each names a place in the table's section outside the table.
fn offset_entries(image: &Image, table: u64, referenced: &[u64]) -> Vec<u64> {
    let Some(section) = image.section_at(table) else {
        return Vec::new();
    };
    let next = referenced.partition_point(|&a| a <= table);
    let mut limit = referenced.get(next).copied().unwrap_or(u64::MAX);
    let mut named = Vec::new();
    let mut at = table;
    while at.saturating_add(4) <= limit {
        let Some(entry) = image.read_u32(at) else {
            break;
        };
        let target = table.wrapping_add(entry as i32 as i64 as u64);
        if image.section_at(target) != Some(section) || (table..at + 4).contains(&target) {
            break;
        }
        if target > table {
            limit = limit.min(target);
        }
        named.push(target);
        at += 4;
    }
    named
}

/// Sections of entries the linker writes (PLTs): nothing but code.
const STUB_SECTIONS: &[&str] = &[".plt", ".iplt", ".plt.sec", ".plt.got"];

/// Every instruction of the linker's PLT sections, decoded linearly: each
/// entry's lazy-binding half (`push $n; jmp`) is entered through its GOT
/// slot, whose content no relocation names (and in lld's static `.iplt`
/// it is never entered, but is code still, compared as code).
fn stub_instructions(image: &Image) -> Vec<u64> {
    let mut starts = Vec::new();
    if image.arch != crate::image::Arch::X86_64 {
        return starts;
    }
    for section in image
        .sections
        .iter()
        .filter(|s| s.alloc && s.executable && STUB_SECTIONS.contains(&s.name.as_str()))
    {
        let Some(bytes) = image.bytes(section.address, section.size) else {
            continue;
        };
        let mut decoder =
            iced_x86::Decoder::with_ip(64, bytes, section.address, iced_x86::DecoderOptions::NONE);
        while decoder.can_decode() {
            let instruction = decoder.decode();
            if instruction.is_invalid() {
                break;
            }
            starts.push(instruction.ip());
        }
    }
    starts
}

pub(crate) fn reach(image: &Image) -> Reached {
    let mut sections: Vec<SectionMap> = image
        .sections
        .iter()
        .filter(|s| s.alloc && s.executable && s.file_range.is_some() && s.size > 0)
        .map(|s| {
            let words = s.size.div_ceil(64) as usize;
            SectionMap {
                start: s.address,
                end: s.address.saturating_add(s.size),
                starts: vec![0; words],
                covered: vec![0; words],
            }
        })
        .collect();
    sections.sort_by_key(|s| s.start);
    let mut work = image.code_entries.clone();
    work.extend(&image.landing_pads);
    work.extend(
        image
            .emitted
            .values()
            .filter(|r| is_absolute_address(image.arch, r.r_type))
            .map(|r| r.value),
    );
    work.extend(image.dynamic.values().filter_map(|slot| match slot {
        crate::image::Slot::Address(a) => Some(*a),
        crate::image::Slot::Named(..) => None,
    }));
    work.extend(stub_instructions(image));
    work.retain(|&a| image.is_code(a));
    work.sort_unstable();
    work.dedup();
    work.reverse();
    let mut walk = Walk {
        image,
        sections,
        work,
        tables: Vec::new(),
        table_starts: Vec::new(),
        named_by_function: HashMap::new(),
        indirect_jumps: Vec::new(),
        jump_targets: Vec::new(),
        branch_targets: Vec::new(),
        code_references: Vec::new(),
        computed: Vec::new(),
        bounds: HashMap::new(),
        read_tables: Vec::new(),
    };
    let mut scanned = HashSet::new();
    loop {
        walk.drain();
        if walk.scan_tables(&mut scanned) {
            continue;
        }
        // Code only a computed address reaches, once everything else the
        // function does is known.
        if !walk.enter_computed() {
            break;
        }
    }
    let mut starts = Vec::new();
    for section in &walk.sections {
        for (word_index, &word) in section.starts.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let bit = bits.trailing_zeros() as u64;
                starts.push(section.start + word_index as u64 * 64 + bit);
                bits &= bits - 1;
            }
        }
    }
    let mut referenced_data: Vec<u64> = walk.tables.iter().map(|&(_, t)| t).collect();
    referenced_data.sort_unstable();
    referenced_data.dedup();
    // What the entries of a table of offsets name (rustc's variant names)
    // starts a piece as what code references does.
    let named: Vec<u64> = walk
        .tables
        .iter()
        .filter(|&&(at, table)| x86_table::reads_offsets_from(image, at, table))
        .flat_map(|&(_, table)| offset_entries(image, table, &referenced_data))
        .collect();
    referenced_data.extend(named);
    referenced_data.sort_unstable();
    referenced_data.dedup();
    let mut jump_targets = walk.jump_targets;
    jump_targets.sort_unstable();
    jump_targets.dedup();
    let mut entered = walk.branch_targets;
    entered.extend(&jump_targets);
    entered.sort_unstable();
    entered.dedup();
    // A bound holds only if nothing jumps past its range check.
    let bypassed = |bound: &TableBound| {
        let (check, load) = bound.guarded;
        let i = entered.partition_point(|&a| a <= check);
        entered.get(i).is_some_and(|&a| a <= load)
    };
    let mut jump_tables: Vec<JumpTable> = walk
        .read_tables
        .into_iter()
        .map(|(table, function, bound)| JumpTable {
            table,
            function,
            size: bound.filter(|b| !bypassed(b)).map(|b| b.size),
        })
        .collect();
    jump_tables.sort_unstable_by_key(|t| (t.table, t.function, t.size));
    jump_tables.dedup();
    let mut code_references = walk.code_references;
    code_references.sort_unstable();
    code_references.dedup();
    Reached {
        instruction_starts: starts,
        code_references,
        referenced_data,
        jump_targets,
        jump_tables,
    }
}
