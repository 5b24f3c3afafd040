//! AArch64: the paths through one function and what its registers hold
//! along them, for resolving `adrp` pages. A forward must-analysis to a
//! fixpoint: a register holds a page (`adrp`) or a complete address
//! (`adrp` + `add`, `adr`) where every path that reaches brings the same
//! one. Paths follow fall-through and direct branches, the cases of the
//! jump tables the analysis recognises (a `br` of a base plus an entry
//! loaded from a table whose bound a `cmp` checks just before), not past a
//! call of a function that never returns, and enter landing pads with what
//! every call leaves. Code no path reaches (the
//! cases of a dispatch it does not recognise) starts with what every
//! unrecognised `br` leaves, and code after a call of a function that
//! never returns also with what that call would leave if it did.
//!
//! A call keeps what x19-x28 hold (AAPCS64), and what a caller-saved
//! register holds only where the callee provably never writes it
//! (`aarch64_clobbers.rs`: gcc's `-fipa-ra` keeps values there). Any
//! other caller-saved register is clobbered: undefined after the call
//! where no path reads it before writing it (a backward liveness), and
//! unknown where one does (a result, say); a page it held there may still
//! be read, and so is a value of its own (an escape). So is a page one
//! path brings to a word where another brings something else in that
//! register, if some path from there reads it.
//!
//! Main assumption: compiled code never reads a callee-saved register the
//! caller left at entry before writing it (saving it is no read of a
//! value), so such a register is undefined and agrees with any value
//! another path brings; and a callee reads no register but its arguments
//! (x0-x8).

use std::collections::HashMap;

use yaxpeax_arm::armv8::a64::{Instruction, Opcode, Operand, ShiftStyle, SizeCode};

pub(crate) use crate::aarch64_clobbers::ends_path;
use crate::aarch64_clobbers::{CALLER_SAVED, bit, is_register_branch};

/// What the analysis knows a register holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Held {
    /// A value compiled code does not read (see the module's assumption).
    Undefined,
    /// The page an `adrp` opened.
    Page(u64),
    /// A complete address: a page plus an `add`ed offset, or an `adr`.
    Address(u64),
}

/// One register's value where every path agrees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Holding {
    pub register: u16,
    pub held: Held,
    /// The word whose `adrp` opened a page (the first, where several
    /// paths open the same page); `usize::MAX` for anything else.
    pub origin: usize,
}

/// What the analysis needs of the image around a function.
pub(crate) trait Surroundings {
    /// `len` bytes loaded at `address` (a jump table).
    fn bytes(&self, address: u64, len: u64) -> Option<&[u8]>;
    /// Whether the unwinder enters code at `address`.
    fn is_landing_pad(&self, address: u64) -> bool;
    /// Whether a call to `target` never returns (`noreturn.rs`).
    fn never_returns(&self, target: u64) -> bool;
    /// How many argument registers the function at `entry` reads, where
    /// its DWARF prototype says (`dwarf.rs`).
    fn arguments_read(&self, _entry: u64) -> Option<u8> {
        None
    }
    /// Whether the function at `entry` returns one register at most, by
    /// its DWARF prototype (`dwarf.rs`).
    fn returns_one_register(&self, _entry: u64) -> bool {
        false
    }
    /// Whether a call to `entry` writes x0: its DWARF prototype returns an
    /// integer or a pointer (`dwarf.rs`).
    fn returns_in_x0(&self, _entry: u64) -> bool {
        false
    }
    /// Whether `address` is in an executable section.
    fn is_code(&self, _address: u64) -> bool {
        false
    }
    /// The registers a call to the function at `entry` may write (a mask
    /// of x0-x30, `aarch64_clobbers.rs`): every caller-saved one unless
    /// its code is known.
    fn call_clobbers(&self, _entry: u64) -> u32 {
        CALLER_SAVED
    }
}

/// The registers a function keeps for its caller (AAPCS64): x19-x28.
const CALLEE_SAVED: [u16; 10] = [19, 20, 21, 22, 23, 24, 25, 26, 27, 28];

/// Jump tables with more entries are not read.
const MAX_TABLE_ENTRIES: u64 = 4096;

/// How far back from a dispatch its steps are looked for.
const DISPATCH_WINDOW: usize = 16;

/// What the registers of one function hold along its paths.
pub(crate) struct Holdings {
    /// For each word, what its registers hold on every path that reaches
    /// it.
    pub entry: Vec<Vec<Holding>>,
    /// The `adrp`s (by word) whose page a path may still bring to a read
    /// of a register where the analysis no longer knows it: a call that
    /// may write the register may also have kept the page there, or
    /// paths that meet bring something else in it. What is read there
    /// may be the page, which is then a value of its own.
    pub lost_pages: Vec<usize>,
}

/// For each word of the function `raw` (decoded words loaded at `start`;
/// `pages` the page each opens, if any), what its registers hold on every
/// path that reaches it.
pub(crate) fn holdings_at_entry(
    raw: &[Option<Instruction>],
    pages: &[Option<(u16, u64)>],
    start: u64,
    around: &dyn Surroundings,
) -> Holdings {
    if raw.is_empty() {
        return Holdings {
            entry: Vec::new(),
            lost_pages: Vec::new(),
        };
    }
    let entered = branch_targets(raw, start);
    let stops = calls_that_never_return(raw, start, around);
    let live = live_after(raw, start, &stops, &entered, around, &HashMap::new());
    let mut flow = Flow::new(raw, pages, start, &stops, around, HashMap::new(), live);
    flow.run();
    // The tables are read with what holds when every dispatch may go
    // anywhere no direct path goes: that holds on the real paths too.
    let tables: HashMap<usize, Dispatch> = (0..raw.len())
        .filter_map(|i| Some((i, jump_table(raw, &flow.entry, &entered, i, start, around)?)))
        .collect();
    if !tables.is_empty() {
        let live = live_after(raw, start, &stops, &entered, around, &tables);
        flow = Flow::new(raw, pages, start, &stops, around, tables, live);
        flow.run();
    }
    let mut lost_pages = flow.lost_pages;
    lost_pages.sort_unstable();
    lost_pages.dedup();
    Holdings {
        entry: flow
            .entry
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect(),
        lost_pages,
    }
}

/// Where a `br` of a jump table goes, as far as known.
#[derive(Clone, Debug, PartialEq)]
enum Dispatch {
    /// To these words: the table was read.
    Cases(Vec<usize>),
    /// To some of these words, each the start of a block no direct path
    /// reaches: the table's base and entry width are known, not its
    /// length.
    Within(std::ops::Range<usize>),
}

/// Every register in `registers`, undefined.
fn undefined(registers: impl IntoIterator<Item = u16>) -> Vec<Holding> {
    registers
        .into_iter()
        .map(|register| Holding {
            register,
            held: Held::Undefined,
            origin: usize::MAX,
        })
        .collect()
}

/// The state of the analysis over one function.
struct Flow<'a> {
    raw: &'a [Option<Instruction>],
    pages: &'a [Option<(u16, u64)>],
    start: u64,
    /// See [`calls_that_never_return`].
    stops: &'a [bool],
    around: &'a dyn Surroundings,
    /// The recognised jump tables, by dispatch word.
    tables: HashMap<usize, Dispatch>,
    /// What holds on entry to each word, once a path reached it.
    entry: Vec<Option<Vec<Holding>>>,
    /// What holds after every call seen so far: where a landing pad starts.
    called: Option<Vec<Holding>>,
    /// What holds after each `br` (of a table not read) seen so far:
    /// where the code no path reaches that it may go to starts.
    dispatched: HashMap<usize, Vec<Holding>>,
    /// For each word, the registers some path from its end may read
    /// before writing them (see [`live_after`]).
    live: Vec<u32>,
    /// See [`Holdings::lost_pages`].
    lost_pages: Vec<usize>,
    /// For each word, the registers some path from its start may read
    /// before writing them.
    live_before: Vec<u32>,
    /// The words where the unwinder enters.
    pads: Vec<usize>,
    steps: usize,
}

impl<'a> Flow<'a> {
    fn new(
        raw: &'a [Option<Instruction>],
        pages: &'a [Option<(u16, u64)>],
        start: u64,
        stops: &'a [bool],
        around: &'a dyn Surroundings,
        tables: HashMap<usize, Dispatch>,
        (live_before, live): (Vec<u32>, Vec<u32>),
    ) -> Self {
        Flow {
            raw,
            pages,
            start,
            stops,
            around,
            tables,
            entry: vec![None; raw.len()],
            called: None,
            dispatched: HashMap::new(),
            live,
            lost_pages: Vec::new(),
            live_before,
            pads: (0..raw.len())
                .filter(|&i| around.is_landing_pad(start + 4 * i as u64))
                .collect(),
            steps: 0,
        }
    }

    fn over_budget(&self) -> bool {
        self.steps > 1024 * self.raw.len() + 4096
    }

    fn run(&mut self) {
        // At the function's start the callee-saved registers hold the
        // caller's values: undefined, like a call's clobbers.
        self.enter(0, &undefined(CALLEE_SAVED));
        let pads = self.pads.clone();
        let orphans: Vec<usize> = (1..self.raw.len())
            .filter(|&i| self.entry[i].is_none() && !pads.contains(&i) && !self.continues(i - 1))
            .collect();
        loop {
            let before = (self.called.clone(), self.dispatched.clone());
            // Without a call (or a dispatch), nothing is known.
            let called = self.called.clone().unwrap_or_else(|| undefined(0..=30));
            for &pad in &pads {
                self.enter(pad, &called);
            }
            for &orphan in &orphans {
                let live = self.live_before[orphan];
                let mut state = self.dispatched_to(orphan, live);
                // After a call of a function taken never to return: what
                // the call would leave if it did.
                if let Some(returned) = self.after_call(orphan - 1) {
                    state = self.merge_live(&state, &returned, live);
                }
                self.enter(orphan, &state);
            }
            if (&self.called, &self.dispatched) == (&before.0, &before.1) || self.over_budget() {
                break;
            }
        }
    }

    /// Whether execution goes on from word `i` to the next: it decodes,
    /// and is neither an unconditional branch, return or trap nor a call
    /// of a function that never returns.
    fn continues(&self, i: usize) -> bool {
        let Some(instr) = self.raw[i].as_ref() else {
            return false;
        };
        if ends_path(instr.opcode) {
            return false;
        }
        !self.stops[i]
    }

    /// What holds after the call at word `i`, given what holds before it,
    /// if a path reaches it.
    fn after_call(&mut self, i: usize) -> Option<Vec<Holding>> {
        let instr = self.raw[i].as_ref()?;
        if !is_call(instr.opcode) {
            return None;
        }
        let state = self.entry[i].clone()?;
        let after = transfer(instr, i, self.start, &state, self.pages[i]);
        Some(self.across_call(instr, i, &state, after))
    }

    /// `after`, what holds after the call `instr` at word `i` but for
    /// what the callee does, given `before`: a caller-saved register the
    /// callee may write (see [`Surroundings::call_clobbers`]; x0 too when
    /// it returns an integer or pointer there) is undefined where no path
    /// reads it before writing it, and unknown where one does; a page it
    /// held is then noted as kept by the call, since the callee may have
    /// left it there.
    fn across_call(
        &mut self,
        instr: &Instruction,
        i: usize,
        before: &[Holding],
        mut after: Vec<Holding>,
    ) -> Vec<Holding> {
        let target = match (instr.opcode, instr.operands[0]) {
            (Opcode::BL, Operand::PCOffset(delta)) => {
                Some((self.start + 4 * i as u64).wrapping_add(delta as u64))
            }
            _ => None,
        };
        let mut clobbered = bit(30)
            | target.map_or(CALLER_SAVED, |target| {
                self.around.call_clobbers(target)
                    | if self.around.returns_in_x0(target) {
                        bit(0)
                    } else {
                        0
                    }
            });
        clobbered &= CALLER_SAVED;
        let live = self.live[i];
        for register in (0..31).filter(|&r| clobbered & bit(r) != 0) {
            after.retain(|h| h.register != register);
            if live & bit(register) == 0 {
                after.extend(undefined([register]));
            } else if let Some(page) = before
                .iter()
                .find(|h| h.register == register && matches!(h.held, Held::Page(_)))
            {
                self.lost_pages.push(page.origin);
            }
        }
        after.sort_unstable();
        after
    }

    /// What holds where code no path reaches starts at word `orphan`
    /// (where `live` may be read): what every `br` that may go there
    /// leaves.
    fn dispatched_to(&mut self, orphan: usize, live: u32) -> Vec<Holding> {
        let mut states =
            self.dispatched
                .iter()
                .filter(|&(dispatch, _)| match self.tables.get(dispatch) {
                    Some(Dispatch::Within(words)) => words.contains(&orphan),
                    Some(Dispatch::Cases(_)) => false,
                    None => true,
                });
        let Some((_, first)) = states.next() else {
            return undefined(0..=30);
        };
        let mut state = first.clone();
        let others: Vec<Vec<Holding>> = states.map(|(_, other)| other.clone()).collect();
        for other in &others {
            state = self.merge_live(&state, other, live);
        }
        state
    }

    /// What `old` and `new` agree on (see [`merge`]), where the registers
    /// in `live` may be read next: a page either held that the merge
    /// loses in such a register is noted lost (see
    /// [`Holdings::lost_pages`]).
    fn merge_live(&mut self, old: &[Holding], new: &[Holding], live: u32) -> Vec<Holding> {
        let merged = merge(old, new);
        for holding in old.iter().chain(new) {
            if matches!(holding.held, Held::Page(_))
                && live & bit(holding.register) != 0
                && !merged
                    .iter()
                    .any(|h| h.register == holding.register && h.held == holding.held)
            {
                self.lost_pages.push(holding.origin);
            }
        }
        merged
    }

    /// Merges `state` into word `at`'s entry and propagates what changes
    /// to a fixpoint.
    fn enter(&mut self, at: usize, state: &[Holding]) {
        let merged = match self.entry[at].clone() {
            None => state.to_vec(),
            Some(old) => self.merge_live(&old, state, self.live_before[at]),
        };
        if self.entry[at].as_ref() == Some(&merged) {
            return;
        }
        self.entry[at] = Some(merged);
        let mut work = vec![at];
        while let Some(i) = work.pop() {
            self.steps += 1;
            if self.over_budget() {
                break;
            }
            let (Some(state), Some(instr)) = (&self.entry[i], self.raw[i].as_ref()) else {
                continue;
            };
            let mut after = transfer(instr, i, self.start, state, self.pages[i]);
            let call = is_call(instr.opcode);
            if call {
                let before = state.clone();
                after = self.across_call(instr, i, &before, after);
                // Every landing pad starts with what every call leaves.
                let live = self
                    .pads
                    .iter()
                    .fold(0, |live, &pad| live | self.live_before[pad]);
                self.called = Some(match self.called.take() {
                    None => after.clone(),
                    Some(old) => self.merge_live(&old, &after, live),
                });
            }
            let cases: &[usize] = match self.tables.get(&i) {
                Some(Dispatch::Cases(cases)) => cases,
                _ => &[],
            };
            if is_register_branch(instr.opcode) && cases.is_empty() {
                let mut state = self.dispatched.remove(&i);
                merge_into(&mut state, &after);
                self.dispatched.extend(state.map(|state| (i, state)));
            }
            let cases = cases.iter().copied();
            let falls = self.continues(i);
            let next: Vec<usize> = successors(instr, i, self.raw.len(), self.start)
                .into_iter()
                .filter(|&next| falls || next != i + 1)
                .chain(cases)
                .collect();
            for next in next {
                let merged = match self.entry[next].clone() {
                    None => after.clone(),
                    Some(old) => self.merge_live(&old, &after, self.live_before[next]),
                };
                if self.entry[next].as_ref() != Some(&merged) {
                    self.entry[next] = Some(merged);
                    work.push(next);
                }
            }
        }
    }
}

/// Every general register, x0-x30, as a mask.
const ALL: u32 = 0x7fff_ffff;

/// The registers that carry arguments (x0-x7, and x8: the address of a
/// result returned in memory), as a mask.
const ARGUMENTS: u32 = 0x1ff;

/// A call, direct or through a register (with or without pointer
/// authentication).
pub(crate) fn is_call(opcode: Opcode) -> bool {
    matches!(
        opcode,
        Opcode::BL | Opcode::BLR | Opcode::BLRAA | Opcode::BLRAAZ | Opcode::BLRAB | Opcode::BLRABZ
    )
}

/// For each word of the function `raw` (loaded at `start`, its jump
/// tables `tables`, `stops` its calls that never return and `branched_to`
/// the words its direct branches go to), the registers some path from the word's start, and
/// from its end, may read before writing them (masks of x0-x30), at most:
/// a backward liveness, to a fixpoint. Paths go on after every call and
/// from it into every landing pad. After a call of a function taken never
/// to return they go on only where the flow analysis may carry the call's
/// registers (see [`Flow::run`]'s orphans): into a word no branch, table
/// or unwinder enters, not past the function's end. An indirect branch
/// that is no recognised table, a branch out of the function, falling off
/// its end or a word that does not decode may read anything; a load pair
/// writes both its registers; a return reads x0-x8 and what the caller
/// keeps (x19-x30).
fn live_after(
    raw: &[Option<Instruction>],
    start: u64,
    stops: &[bool],
    branched_to: &[bool],
    around: &dyn Surroundings,
    tables: &HashMap<usize, Dispatch>,
) -> (Vec<u32>, Vec<u32>) {
    let len = raw.len();
    let pads: Vec<usize> = (0..len)
        .filter(|&i| around.is_landing_pad(start + 4 * i as u64))
        .collect();
    // The words some path enters other than by falling through.
    let mut entered = branched_to.to_vec();
    for &k in pads
        .iter()
        .chain(tables.values().flat_map(|dispatch| match dispatch {
            Dispatch::Cases(cases) => cases.as_slice(),
            Dispatch::Within(_) => &[],
        }))
    {
        entered[k] = true;
    }
    // What each word does to liveness, worked out once: the words its
    // paths go on to, what else its end may read, what it writes and
    // reads.
    let words: Vec<LiveStep> = (0..len)
        .map(|i| {
            let Some(instr) = raw[i].as_ref() else {
                return LiveStep::anything();
            };
            let never_returns = stops[i];
            let mut next = [None; 2];
            for (slot, k) in successors(instr, i, len, start)
                .into_iter()
                .filter(|&k| !(never_returns && entered[k]))
                .enumerate()
                .take(2)
            {
                next[slot] = Some(k);
            }
            let leaves = instr
                .operands
                .iter()
                .any(|o| matches!(o, Operand::PCOffset(_)))
                && is_branch(instr.opcode)
                && branch_target(instr, i, len, start).is_none();
            let falls_off = i + 1 == len && !ends_path(instr.opcode) && !never_returns;
            let end = if leaves || falls_off {
                LiveEnd::Anything
            } else if is_register_branch(instr.opcode) {
                match tables.get(&i) {
                    Some(Dispatch::Cases(cases)) => LiveEnd::Cases(cases.clone()),
                    _ => LiveEnd::Anything,
                }
            } else if matches!(instr.opcode, Opcode::RET | Opcode::RETAA | Opcode::RETAB) {
                LiveEnd::Also(ARGUMENTS | (ALL & !CALLER_SAVED) | bit(30))
            } else if is_call(instr.opcode) {
                LiveEnd::Cases(pads.clone())
            } else {
                LiveEnd::Also(0)
            };
            LiveStep {
                next,
                end,
                kills: written_registers(instr)
                    .into_iter()
                    .fold(0, |mask, r| mask | bit(r)),
                reads: reads(instr),
            }
        })
        .collect();
    let mut live_in = vec![0u32; len];
    let mut live_out = vec![0u32; len];
    let mut changed = true;
    let mut rounds = 0;
    while changed {
        changed = false;
        rounds += 1;
        for (i, word) in words.iter().enumerate().rev() {
            // After too many rounds (never, in practice: each mask only
            // grows), anything.
            let out = if rounds > 64 {
                ALL
            } else {
                let out = word
                    .next
                    .iter()
                    .flatten()
                    .fold(0, |out, &k| out | live_in[k]);
                match &word.end {
                    LiveEnd::Anything => ALL,
                    LiveEnd::Also(mask) => out | mask,
                    LiveEnd::Cases(words) => words.iter().fold(out, |out, &k| out | live_in[k]),
                }
            };
            let inward = word.reads | (out & !word.kills);
            if (out, inward) != (live_out[i], live_in[i]) {
                live_out[i] = out;
                live_in[i] = inward;
                changed = true;
            }
        }
    }
    (live_in, live_out)
}

/// What one word does to liveness (see [`live_after`]).
struct LiveStep {
    /// The words its paths go on to.
    next: [Option<usize>; 2],
    end: LiveEnd,
    /// The registers it writes, and those it reads.
    kills: u32,
    reads: u32,
}

/// What else the end of a word may read.
enum LiveEnd {
    /// Anything (a word that does not decode, a branch out, falling off).
    Anything,
    /// These registers (a return's).
    Also(u32),
    /// What these words may (a table's cases, a call's landing pads).
    Cases(Vec<usize>),
}

impl LiveStep {
    fn anything() -> LiveStep {
        LiveStep {
            next: [None; 2],
            end: LiveEnd::Anything,
            kills: 0,
            reads: ALL,
        }
    }
}

/// For each word of the function `raw` (loaded at `start`), whether it is
/// a `bl` of a function that never returns (asked once per call: a proof
/// may decode the callee).
fn calls_that_never_return(
    raw: &[Option<Instruction>],
    start: u64,
    around: &dyn Surroundings,
) -> Vec<bool> {
    raw.iter()
        .enumerate()
        .map(
            |(i, instr)| match instr.map(|instr| (instr.opcode, instr.operands[0])) {
                Some((Opcode::BL, Operand::PCOffset(delta))) => {
                    around.never_returns((start + 4 * i as u64).wrapping_add(delta as u64))
                }
                _ => false,
            },
        )
        .collect()
}

/// A direct branch (not a call): its target, if outside the function, is
/// where the path leaves.
fn is_branch(opcode: Opcode) -> bool {
    matches!(
        opcode,
        Opcode::B
            | Opcode::Bcc(_)
            | Opcode::BCcc(_)
            | Opcode::CBZ
            | Opcode::CBNZ
            | Opcode::TBZ
            | Opcode::TBNZ
    )
}

/// The general registers `instr` may read (a mask of x0-x30), at most:
/// every register operand but a first one it only writes (any first one
/// an instruction also reads, or only reads, counts: a store's value, a
/// conditional compare's operand, an atomic's, a pointer to
/// authenticate); what it reads without naming it; at a call, the
/// argument registers too, and at a system call the ones the kernel
/// reads.
fn reads(instr: &Instruction) -> u32 {
    let opcode = instr.opcode;
    let first_read = reads_first_operand(opcode)
        || is_register_branch(opcode)
        || is_call(opcode)
        || matches!(
            opcode,
            Opcode::RET
                | Opcode::RETAA
                | Opcode::RETAB
                | Opcode::MOVK
                | Opcode::BFM
                | Opcode::CCMP
                | Opcode::CCMN
                | Opcode::SYS(_)
                | Opcode::STLLR
                | Opcode::STLLRB
                | Opcode::STLLRH
                | Opcode::STG
                | Opcode::STZG
                | Opcode::ST2G
                | Opcode::STZ2G
                | Opcode::STGM
                | Opcode::STZGM
                | Opcode::LDG
                | Opcode::PACIA
                | Opcode::PACIB
                | Opcode::PACDA
                | Opcode::PACDB
                | Opcode::AUTIA
                | Opcode::AUTIB
                | Opcode::AUTDA
                | Opcode::AUTDB
                | Opcode::PACIZA
                | Opcode::PACIZB
                | Opcode::PACDZA
                | Opcode::PACDZB
                | Opcode::AUTIZA
                | Opcode::AUTIZB
                | Opcode::AUTDZA
                | Opcode::AUTDZB
                | Opcode::XPACI
                | Opcode::XPACD
                | Opcode::SWP(_)
                | Opcode::SWPB(_)
                | Opcode::SWPH(_)
                | Opcode::CAS(_)
                | Opcode::CASB(_)
                | Opcode::CASH(_)
                | Opcode::CASP(_)
                | Opcode::LDADD(_)
                | Opcode::LDADDB(_)
                | Opcode::LDADDH(_)
                | Opcode::LDCLR(_)
                | Opcode::LDCLRB(_)
                | Opcode::LDCLRH(_)
                | Opcode::LDEOR(_)
                | Opcode::LDEORB(_)
                | Opcode::LDEORH(_)
                | Opcode::LDSET(_)
                | Opcode::LDSETB(_)
                | Opcode::LDSETH(_)
                | Opcode::LDSMAX(_)
                | Opcode::LDSMAXB(_)
                | Opcode::LDSMAXH(_)
                | Opcode::LDSMIN(_)
                | Opcode::LDSMINB(_)
                | Opcode::LDSMINH(_)
                | Opcode::LDUMAX(_)
                | Opcode::LDUMAXB(_)
                | Opcode::LDUMAXH(_)
                | Opcode::LDUMIN(_)
                | Opcode::LDUMINB(_)
                | Opcode::LDUMINH(_)
        );
    // A load pair writes its second register too.
    let written_second = loads_a_pair(opcode);
    let mut mask = 0;
    for (index, operand) in instr.operands.iter().enumerate() {
        match *operand {
            Operand::Register(_, r) | Operand::RegisterOrSP(_, r)
                if (index > 1 || (index == 1 && !written_second)) || first_read =>
            {
                mask |= bit(r)
            }
            Operand::RegisterPair(_, r) => mask |= bit(r) | bit(r + 1),
            Operand::RegShift(_, _, _, r)
            | Operand::RegPreIndex(r, ..)
            | Operand::RegPostIndex(r, _) => mask |= bit(r),
            Operand::RegRegOffset(base, index_register, ..)
            | Operand::RegPostIndexReg(base, index_register) => {
                mask |= bit(base) | bit(index_register)
            }
            _ => {}
        }
    }
    if is_call(opcode) || matches!(opcode, Opcode::SVC | Opcode::HVC | Opcode::SMC) {
        mask |= ARGUMENTS;
    }
    // What some instructions read without naming it: `ret` and the
    // pointer authentication of the link register read x30, the `1716`
    // forms x16 and x17 (and x15).
    match opcode {
        Opcode::RET
        | Opcode::RETAA
        | Opcode::RETAB
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
        _ => {}
    }
    mask
}

/// Merges `state` into `into` (nothing yet: `state`).
fn merge_into(into: &mut Option<Vec<Holding>>, state: &[Holding]) {
    *into = Some(match into {
        None => state.to_vec(),
        Some(old) => merge(old, state),
    });
}

/// What holds after `instr`, word `index` of a function loaded at `start`
/// (which opens `page`, if any), given `state` before it.
fn transfer(
    instr: &Instruction,
    index: usize,
    start: u64,
    state: &[Holding],
    page: Option<(u16, u64)>,
) -> Vec<Holding> {
    let held = |register: u16| {
        state
            .iter()
            .find(|h| h.register == register)
            .map(|h| (h.held, h.origin))
    };
    let made = if let Some((register, page)) = page {
        Some((register, Held::Page(page), index))
    } else if let Some((to, from)) = register_copy(instr) {
        // A copy holds what its source holds (compilers move a page into
        // a callee-saved register and back).
        held(from).map(|(value, origin)| (to, value, origin))
    } else {
        match (instr.opcode, instr.operands) {
            (
                Opcode::ADD,
                [
                    Operand::RegisterOrSP(SizeCode::X, to),
                    Operand::RegisterOrSP(SizeCode::X, from),
                    Operand::Immediate(offset),
                    _,
                ],
            ) if to != 31 && from != 31 => match held(from) {
                Some((Held::Page(base) | Held::Address(base), _)) => Some((
                    to,
                    Held::Address(base.wrapping_add(u64::from(offset))),
                    usize::MAX,
                )),
                _ => None,
            },
            (
                Opcode::ADR,
                [
                    Operand::Register(SizeCode::X, to),
                    Operand::PCOffset(delta),
                    ..,
                ],
            ) => {
                let pc = start + 4 * index as u64;
                Some((to, Held::Address(pc.wrapping_add(delta as u64)), usize::MAX))
            }
            _ => None,
        }
    };
    let mut after = state.to_vec();
    for written in written_registers(instr) {
        after.retain(|h| h.register != written);
    }
    // What a call does to the registers is [`Flow::across_call`]'s.
    if let Some((register, held, origin)) = made {
        after.retain(|h| h.register != register);
        after.push(Holding {
            register,
            held,
            origin,
        });
    }
    after.sort_unstable();
    after
}

/// What two paths agree on: a register that holds the same value on both
/// (a page: whichever `adrp` opened it, the first stands for them), or a
/// value on one and undefined on the other.
fn merge(old: &[Holding], new: &[Holding]) -> Vec<Holding> {
    let mut merged: Vec<Holding> = old
        .iter()
        .filter_map(|&mine| {
            let &other = new.iter().find(|h| h.register == mine.register)?;
            if mine.held == Held::Undefined {
                Some(other)
            } else if other.held == Held::Undefined || other.held == mine.held {
                Some(Holding {
                    origin: mine.origin.min(other.origin),
                    ..mine
                })
            } else {
                None
            }
        })
        .collect();
    merged.sort_unstable();
    merged
}

/// The words execution may go to after word `i` of `len`, by falling
/// through or a direct branch.
fn successors(instr: &Instruction, i: usize, len: usize, start: u64) -> Vec<usize> {
    let next = (i + 1 < len).then_some(i + 1);
    let target = || branch_target(instr, i, len, start);
    match instr.opcode {
        Opcode::B => target().into_iter().collect(),
        Opcode::Bcc(_)
        | Opcode::BCcc(_)
        | Opcode::CBZ
        | Opcode::CBNZ
        | Opcode::TBZ
        | Opcode::TBNZ => next.into_iter().chain(target()).collect(),
        _ if ends_path(instr.opcode) => Vec::new(),
        _ => next.into_iter().collect(),
    }
}

/// The word of `len` a direct branch (or any pc-relative operand) at word
/// `i` names, if inside the function.
fn branch_target(instr: &Instruction, i: usize, len: usize, start: u64) -> Option<usize> {
    instr.operands.iter().find_map(|o| match o {
        Operand::PCOffset(delta) => {
            let address = (start + (i as u64) * 4).wrapping_add(*delta as u64);
            let offset = address.checked_sub(start)?;
            (offset % 4 == 0 && offset / 4 < len as u64).then_some((offset / 4) as usize)
        }
        _ => None,
    })
}

/// For each word, whether a direct branch of the function lands on it.
fn branch_targets(raw: &[Option<Instruction>], start: u64) -> Vec<bool> {
    let mut entered = vec![false; raw.len()];
    for (i, instr) in raw.iter().enumerate() {
        let Some(instr) = instr else {
            continue;
        };
        if is_branch(instr.opcode)
            && let Some(target) = branch_target(instr, i, raw.len(), start)
        {
            entered[target] = true;
        }
    }
    entered
}

/// The cases of the jump table dispatched by the `br` at word `i`, if
/// recognised: `add xT, xB, xE, <extend> #s; br xT`, where `xB` holds an
/// address (an `adr` of the cases' base, or the table itself), `xE` an
/// entry loaded (`ldrb`, `ldrh`, `ldrsb`, `ldrsh`, `ldrsw`, `ldr w`) from a
/// table whose address a register holds, at an index a `cmp #n; b.hi`
/// (or `b.hs`) or an `and` with a mask bounds just before, with no other
/// way in between. Every
/// entry must land on a word of the function, or the table is not
/// recognised.
fn jump_table(
    raw: &[Option<Instruction>],
    entry: &[Option<Vec<Holding>>],
    entered: &[bool],
    i: usize,
    start: u64,
    around: &dyn Surroundings,
) -> Option<Dispatch> {
    let dispatch = raw[i].as_ref()?;
    let (Opcode::BR, Operand::Register(SizeCode::X, target)) =
        (dispatch.opcode, dispatch.operands[0])
    else {
        return None;
    };
    let add_at = last_writer(raw, entered, i, target)?;
    let add = raw[add_at].as_ref()?;
    let (
        Opcode::ADD,
        Operand::Register(SizeCode::X, base) | Operand::RegisterOrSP(SizeCode::X, base),
        Operand::RegShift(extend, shift, _, loaded),
    ) = (add.opcode, add.operands[1], add.operands[2])
    else {
        return None;
    };
    let base = address_held(entry[add_at].as_deref()?, base)?;
    let load_at = last_writer(raw, entered, add_at, loaded)?;
    let load = raw[load_at].as_ref()?;
    let (width, signed) = match (load.opcode, load.operands[0]) {
        (Opcode::LDRB, _) => (1, false),
        (Opcode::LDRH, _) => (2, false),
        (Opcode::LDRSB, _) => (1, true),
        (Opcode::LDRSH, _) => (2, true),
        (Opcode::LDRSW, _) => (4, true),
        (Opcode::LDR, Operand::Register(SizeCode::W, _)) => (4, false),
        _ => return None,
    };
    let loaded_is_w = matches!(load.operands[0], Operand::Register(SizeCode::W, _));
    let Operand::RegRegOffset(table, index, _, _, scale) = load.operands[1] else {
        return None;
    };
    if u32::from(scale) != (width as u32).trailing_zeros() && !(width == 1 && scale == 0) {
        return None;
    }
    // The entry as the register holds it once loaded.
    let loaded = |bytes: &[u8]| {
        let mut value = bytes
            .iter()
            .rev()
            .fold(0u64, |value, &byte| (value << 8) | u64::from(byte));
        if signed {
            let unused = 64 - 8 * width as u32;
            value = (((value << unused) as i64) >> unused) as u64;
        }
        if loaded_is_w {
            value &= 0xffff_ffff;
        }
        value
    };
    let len = raw.len() as u64;
    let word = |case: u64| {
        let offset = case.checked_sub(start)?;
        (offset % 4 == 0 && offset / 4 < len).then_some((offset / 4) as usize)
    };
    let read = || -> Option<Vec<usize>> {
        let table = address_held(entry[load_at].as_deref()?, table)?;
        let (count, exact) = bound(raw, entered, load_at, index)?;
        let cases: Vec<usize> = (0..count)
            .map(|k| {
                let bytes = around.bytes(table.wrapping_add(k * width), width)?;
                word(base.wrapping_add(extended(extend, shift, loaded(bytes))?))
            })
            .collect::<Option<_>>()?;
        // A zero extension is no bound where the default cannot happen (a
        // switch over an enum's values): the table may end before it, and
        // what follows would send paths into the middle of blocks. Such a
        // table is read only if every entry starts a block. (Extra paths
        // are sound, only less precise; missing ones are not.)
        let starts_block = |case: usize| {
            case == 0 || entered[case] || raw[case - 1].as_ref().is_none_or(|p| ends_path(p.opcode))
        };
        (exact || cases.iter().all(|&case| starts_block(case))).then_some(cases)
    };
    if let Some(cases) = read() {
        return Some(Dispatch::Cases(cases));
    }
    // Unread, the entries still bound where the cases are: the extremes
    // of what the entry's bits can make (each piece of the value's range
    // between them is monotonic).
    let bits = 8 * width as u32;
    let mut lowest = i128::MAX;
    let mut highest = i128::MIN;
    for raw_value in [
        0,
        (1u64 << (bits - 1)) - 1,
        1u64 << (bits - 1),
        u64::MAX >> (64 - bits),
    ] {
        let bytes = raw_value.to_le_bytes();
        let offset = extended(extend, shift, loaded(&bytes[..width as usize]))? as i64;
        let case = i128::from(base) + i128::from(offset);
        lowest = lowest.min(case);
        highest = highest.max(case);
    }
    // An extension narrower than the entry takes any of its values.
    let narrow = match extend {
        ShiftStyle::UXTB | ShiftStyle::SXTB => 8 < bits,
        ShiftStyle::UXTH | ShiftStyle::SXTH => 16 < bits,
        _ => false,
    };
    if narrow {
        return None;
    }
    // The words from the first at or after `lowest` to the last at or
    // before `highest`, inside the function.
    let first = (((lowest - i128::from(start)).max(0) + 3) / 4).min(len as i128);
    let end = ((highest - i128::from(start)).div_euclid(4) + 1).clamp(first, len as i128);
    Some(Dispatch::Within(
        usize::try_from(first).ok()?..usize::try_from(end).ok()?,
    ))
}

/// `value` extended (or shifted) as an `add`'s register operand does.
fn extended(extend: ShiftStyle, shift: u8, value: u64) -> Option<u64> {
    let value = match extend {
        ShiftStyle::LSL | ShiftStyle::UXTX | ShiftStyle::SXTX => value,
        ShiftStyle::UXTB => value & 0xff,
        ShiftStyle::UXTH => value & 0xffff,
        ShiftStyle::UXTW => value & 0xffff_ffff,
        ShiftStyle::SXTB => value as u8 as i8 as u64,
        ShiftStyle::SXTH => value as u16 as i16 as u64,
        ShiftStyle::SXTW => value as u32 as i32 as u64,
        _ => return None,
    };
    value.checked_shl(u32::from(shift))
}

/// The address `register` holds in `state`, if one.
fn address_held(state: &[Holding], register: u16) -> Option<u64> {
    match state.iter().find(|h| h.register == register)?.held {
        Held::Address(address) => Some(address),
        _ => None,
    }
}

/// The word last writing `register` before word `at`, on the one straight
/// path that reaches `at` (no branch lands in between), within
/// [`DISPATCH_WINDOW`] words.
fn last_writer(
    raw: &[Option<Instruction>],
    entered: &[bool],
    at: usize,
    register: u16,
) -> Option<usize> {
    if entered[at] {
        return None;
    }
    for k in (at.saturating_sub(DISPATCH_WINDOW)..at).rev() {
        let instr = raw[k].as_ref()?;
        if ends_path(instr.opcode) || matches!(instr.opcode, Opcode::BL | Opcode::BLR) {
            return None;
        }
        if written_registers(instr).contains(&register) {
            return Some(k);
        }
        if entered[k] {
            return None;
        }
    }
    None
}

/// How many entries the index in `index` may select at the load at word
/// `at`: a `cmp index, #n` and `b.hi` (n + 1 entries) or `b.hs` (n)
/// before it on the one straight path, `index` unchanged since; or the
/// `and index, x, #mask` that wrote it (mask + 1; not exact for a mask of
/// 0xff or 0xffff, see [`jump_table`]). Whether the count is exact comes
/// with it.
fn bound(
    raw: &[Option<Instruction>],
    entered: &[bool],
    at: usize,
    index: u16,
) -> Option<(u64, bool)> {
    if entered[at] {
        return None;
    }
    for k in (at.saturating_sub(DISPATCH_WINDOW).max(1)..at).rev() {
        let instr = raw[k].as_ref()?;
        if let Opcode::Bcc(condition) = instr.opcode {
            let cmp = raw[k - 1].as_ref()?;
            let compared = match (cmp.opcode, cmp.operands) {
                (
                    Opcode::SUBS,
                    [
                        Operand::Register(_, 31),
                        Operand::Register(_, r) | Operand::RegisterOrSP(_, r),
                        Operand::Immediate(n),
                        _,
                    ],
                ) if r == index && !entered[k] => u64::from(n),
                _ => return None,
            };
            let count = match condition {
                HI => compared + 1,
                HS => compared,
                _ => return None,
            };
            return (count <= MAX_TABLE_ENTRIES).then_some((count, true));
        }
        if ends_path(instr.opcode) || matches!(instr.opcode, Opcode::BL | Opcode::BLR) {
            return None;
        }
        if written_registers(instr).contains(&index) {
            // `and index, x, #mask`: at most mask + 1 entries.
            let mask = match (instr.opcode, instr.operands[2]) {
                (Opcode::AND, Operand::Immediate(mask)) => u64::from(mask),
                (Opcode::AND, Operand::Imm64(mask)) => mask,
                _ => return None,
            };
            // A byte's or halfword's mask is a zero extension, more often
            // than a bound.
            let exact = mask != 0xff && mask != 0xffff;
            return (mask < MAX_TABLE_ENTRIES).then_some((mask + 1, exact));
        }
        if entered[k] {
            return None;
        }
    }
    None
}

/// How many bytes of the table whose address the instruction at word
/// `at` of `raw` (loaded at `start`) completes (`add xT, xT, :lo12:T`) the
/// code may read: an indexed load through `xT` (`ldrb`, `ldrh`, `ldr w`,
/// signed or not) within a few straight-line words, at an index an exact
/// range check bounds (`cmp wI, #n; b.hi`), nothing branching between the
/// check and the load. `None` when not so recognized.
pub(crate) fn table_length(raw: &[Option<Instruction>], start: u64, at: usize) -> Option<u64> {
    let completing = raw.get(at)?.as_ref()?;
    let table = destination(completing)?;
    let entered = branch_targets(raw, start);
    for load_at in at + 1..(at + 4).min(raw.len()) {
        let load = raw[load_at].as_ref()?;
        let width = match (load.opcode, load.operands[0]) {
            (Opcode::LDRB | Opcode::LDRSB, _) => 1,
            (Opcode::LDRH | Opcode::LDRSH, _) => 2,
            (Opcode::LDRSW, _) | (Opcode::LDR, Operand::Register(SizeCode::W, _)) => 4,
            _ => {
                if ends_path(load.opcode) || written_registers(load).contains(&table) {
                    return None;
                }
                continue;
            }
        };
        let Operand::RegRegOffset(base, index, _, _, _) = load.operands[1] else {
            return None;
        };
        if base != table || (at + 1..=load_at).any(|k| entered[k]) {
            return None;
        }
        let (count, exact) = bound(raw, &entered, load_at, index)
            .or_else(|| taken_bound(raw, &entered, start, load_at, index))?;
        return exact.then_some(count * width);
    }
    None
}

/// The bound a `cmp wI, #n; b.ls` (n + 1 entries) or `b.lo` (n) puts on
/// the index at its taken edge, when that edge is the only way into the
/// straight run holding the load at word `at`: the run starts at the
/// branch's target, nothing falls into it, nothing else branches there,
/// and nothing in it writes the index.
fn taken_bound(
    raw: &[Option<Instruction>],
    entered: &[bool],
    start: u64,
    at: usize,
    index: u16,
) -> Option<(u64, bool)> {
    let mut first = at;
    while !entered[first] {
        let previous = raw.get(first.checked_sub(1)?)?.as_ref()?;
        if is_branch(previous.opcode)
            || ends_path(previous.opcode)
            || written_registers(previous).contains(&index)
        {
            return None;
        }
        first -= 1;
    }
    // Nothing falls into the run from the word before it.
    if first > 0 && raw[first - 1].as_ref().is_none_or(|p| !ends_path(p.opcode)) {
        return None;
    }
    let mut sources = raw.iter().enumerate().filter(|(j, instr)| {
        instr.as_ref().is_some_and(|instr| {
            is_branch(instr.opcode) && branch_target(instr, *j, raw.len(), start) == Some(first)
        })
    });
    let (j, branch) = sources.next()?;
    if sources.next().is_some() || j == 0 || entered[j] {
        return None;
    }
    let (Some(branch), Some(cmp)) = (branch.as_ref(), raw[j - 1].as_ref()) else {
        return None;
    };
    let compared = match (cmp.opcode, cmp.operands) {
        (
            Opcode::SUBS,
            [
                Operand::Register(_, 31),
                Operand::Register(SizeCode::W, r) | Operand::RegisterOrSP(SizeCode::W, r),
                Operand::Immediate(n),
                _,
            ],
        ) if r == index => u64::from(n),
        _ => return None,
    };
    let count = match branch.opcode {
        Opcode::Bcc(LS) => compared + 1,
        Opcode::Bcc(LO) => compared,
        _ => return None,
    };
    (count <= MAX_TABLE_ENTRIES).then_some((count, true))
}

/// Condition codes: unsigned lower or same, and lower.
const LS: u8 = 9;
const LO: u8 = 3;

/// Condition codes: unsigned higher, and higher or same.
const HI: u8 = 8;
const HS: u8 = 2;

/// A 64-bit register copy, `mov xd, xs` (an `orr` of the zero register
/// and `xs`): `(d, s)`.
pub(crate) fn register_copy(instr: &Instruction) -> Option<(u16, u16)> {
    if instr.opcode != Opcode::ORR || !matches!(instr.operands[1], Operand::Register(_, 31)) {
        return None;
    }
    let Operand::Register(SizeCode::X, to) = instr.operands[0] else {
        return None;
    };
    let from = match instr.operands[2] {
        Operand::Register(SizeCode::X, from)
        | Operand::RegShift(ShiftStyle::LSL, 0, SizeCode::X, from) => from,
        _ => return None,
    };
    (to != 31 && from != 31).then_some((to, from))
}

/// The general registers `instr` writes: its destination (both of a load
/// pair) and a written-back base.
fn written_registers(instr: &Instruction) -> Vec<u16> {
    let mut written = Vec::new();
    if let Some(register) = destination(instr)
        && !reads_first_operand(instr.opcode)
    {
        written.push(register);
    }
    if loads_a_pair(instr.opcode)
        && let Operand::Register(_, r) = instr.operands[1]
    {
        written.push(r);
    }
    for operand in &instr.operands {
        match *operand {
            Operand::RegPreIndex(base, _, true)
            | Operand::RegPostIndex(base, _)
            | Operand::RegPostIndexReg(base, _) => written.push(base),
            _ => {}
        }
    }
    written
}

/// Whether `opcode` loads two registers (its first two operands).
fn loads_a_pair(opcode: Opcode) -> bool {
    matches!(
        opcode,
        Opcode::LDP | Opcode::LDPSW | Opcode::LDNP | Opcode::LDXP | Opcode::LDAXP
    )
}

/// The general register an instruction writes first, if any.
pub(crate) fn destination(instr: &Instruction) -> Option<u16> {
    match instr.operands[0] {
        Operand::Register(_, r) | Operand::RegisterOrSP(_, r) => Some(r),
        _ => None,
    }
}

/// Instructions whose first register operand is read, not written
/// (stores, register-testing branches).
pub(crate) fn reads_first_operand(opcode: Opcode) -> bool {
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
