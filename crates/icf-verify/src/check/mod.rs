//! The co-inductive check: every PLAIN function against the code its symbol
//! names in FOLDED (after a thunk), every target of every instruction against
//! its counterpart, every data object against its namesake, and the
//! addresses the program can observe against merging. Main assumption: a
//! pair of functions is assumed equal while it is being checked (a
//! bisimulation, so recursion verifies); since every obligation must hold,
//! the first failing one is the answer and no assumption is ever retracted.
//!
//! Work proceeds in waves: the pairs of a wave are decoded and compared in
//! parallel (pure), then their targets are matched in order on one thread,
//! which makes the pairs of the next wave. The first difference is thus the
//! same on any number of threads.

use rayon::prelude::*;

use icf_linkmap::Named;
use std::collections::{HashMap, HashSet};

use crate::code::{self, Decoded, Key, Reach, Use};
use crate::decode;
use crate::image::{self, Image, SectionRole, Symbol, SymbolId, SymbolKind};
use crate::x86_table;
use crate::{Difference, DifferenceKind, Location, Mode, Site, Stats, VerifyOptions};
use crate::{aarch64, aarch64_flow};

mod data;
mod pairs;
mod targets;

use data::*;
use pairs::*;

/// A range of code: a function's extent, or an unnamed run of code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Extent {
    start: u64,
    end: u64,
}

impl Extent {
    fn contains(&self, address: u64) -> bool {
        (self.start..self.end).contains(&address)
    }
}

/// The code to compare at `address`: the largest function starting there,
/// else from `address` to the end of the function holding it, else to the
/// next symbol, entry into code (mold names its range-extension thunks by
/// symbols of no size, right after the literal pool that ends a
/// function's input section) or the section's end. Code that runs on
/// past that end is followed there as a jump would be.
fn code_extent(image: &Image, address: u64) -> Extent {
    if let Some(id) = image.function_starting_at(address) {
        return Extent {
            start: address,
            end: image.symbol(id).end(),
        };
    }
    let (containing, _) = image.symbols_around(address);
    if let Some(&id) = containing.first() {
        return Extent {
            start: address,
            end: image.symbol(id).end(),
        };
    }
    Extent {
        start: address,
        end: image
            .next_symbol_start(address)
            .min(image.next_code_entry(address)),
    }
}

/// Index of a step in the path that led to a pair: where its caller is.
type StepId = usize;

#[derive(Clone, Copy, Debug)]
struct Step {
    plain_site: u64,
    folded_site: u64,
    code: bool,
    parent: Option<StepId>,
}

/// One pair of code ranges to prove equal.
#[derive(Clone, Copy, Debug)]
struct PairTask {
    plain: Extent,
    folded_start: u64,
    via: Option<StepId>,
    root: usize,
}

/// A target of PLAIN's instruction (or data word) against FOLDED's.
#[derive(Clone, Copy, Debug)]
struct TargetCheck {
    plain_target: u64,
    folded_target: u64,
    use_: Use,
    plain_field: u64,
    folded_field: u64,
    plain_site: u64,
    folded_site: u64,
    /// How many bytes from the target an access reads at most, none before
    /// it (see [`Reference::width`](crate::code::Reference::width)); 0 when
    /// unknown.
    width: u64,
    /// Which side of the target the code reads through it (see
    /// [`Reference::reach`](crate::code::Reference::reach)).
    reach: Reach,
    /// The functions holding the sites (for jump tables), if code.
    functions: Option<(Extent, Extent)>,
    via: Option<StepId>,
    root: usize,
}

/// A difference found while comparing one pair, before its path is known.
#[derive(Debug)]
struct LocalDifference {
    plain_site: u64,
    folded_site: u64,
    code: bool,
    kind: DifferenceKind,
    detail: String,
}

struct PairResult {
    folded: Extent,
    followed_thunk: bool,
    /// FOLDED's code is a thunk between vague-linkage functions, accepted
    /// by the one-definition rule without comparing bodies.
    assumed_by_odr: bool,
    outcome: Result<Vec<TargetCheck>, LocalDifference>,
    plain_offsets: Vec<u32>,
    folded_offsets: Vec<u32>,
}

enum PairState {
    Pending,
    Done {
        folded_start: u64,
        plain_offsets: Vec<u32>,
        folded_offsets: Vec<u32>,
    },
}

/// A reference into a pair's interior (a jump table entry, a branch into the
/// middle): both offsets must be the same instruction of the pair.
#[derive(Clone, Copy, Debug)]
struct InteriorCheck {
    key: (u64, u64),
    plain_offset: u64,
    folded_offset: u64,
    check: TargetCheck,
}

/// What a target address is in one image.
#[derive(Clone, Debug, PartialEq)]
enum Place {
    Symbol(SymbolId, u64),
    Plt(String),
    GotNamed(String, i64),
    GotAddress(u64),
    Section(usize, u64),
    /// One past the end of an allocated section (a `__stop_` bound, or the
    /// end of a section a linker script names).
    SectionEnd(usize),
    Outside(u64),
}

/// Which side of an address that ends one object and starts another the
/// code reads (see `Checker::side_of_boundary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// The object ending there: one past its end.
    End,
    /// What starts there.
    Start,
}

/// A failure with the pair or data object that led to it.
struct Failure {
    local: LocalDifference,
    via: Option<StepId>,
    root: usize,
}

/// The roots: PLAIN's functions (then data objects), by position.
struct Root {
    name: String,
}

pub(crate) struct Checker<'a> {
    plain: &'a Image,
    folded: &'a Image,
    mode: Mode,
    assume_odr: bool,
    pairs: HashMap<(u64, u64), PairState>,
    /// Data pairs compared so far, with how many bytes.
    data_done: HashMap<(u64, u64), u64>,
    /// Address uses seen: PLAIN identity -> FOLDED identity, and back.
    plain_to_folded: HashMap<u64, (u64, usize)>,
    folded_to_plain: HashMap<u64, (u64, usize)>,
    steps: Vec<Step>,
    roots: Vec<Root>,
    next_wave: Vec<PairTask>,
    interior: Vec<InteriorCheck>,
    queue: Vec<TargetCheck>,
    stats: Stats,
    /// rustc made code of PLAIN (a function of it is Rust's).
    plain_is_rust: bool,
}

impl<'a> Checker<'a> {
    pub fn new(plain: &'a Image, folded: &'a Image, options: &VerifyOptions) -> Self {
        Checker {
            plain,
            folded,
            mode: options.mode,
            assume_odr: options.assume_odr,
            pairs: HashMap::new(),
            data_done: HashMap::new(),
            plain_to_folded: HashMap::new(),
            folded_to_plain: HashMap::new(),
            steps: Vec::new(),
            roots: Vec::new(),
            next_wave: Vec::new(),
            interior: Vec::new(),
            queue: Vec::new(),
            stats: Stats::default(),
            plain_is_rust: plain.symbols.iter().any(|s| s.rustc_function),
        }
    }

    /// Runs the whole check: the statistics, and the first difference if any.
    pub fn run(mut self) -> (Stats, Option<Difference>) {
        match self.run_inner() {
            Ok(()) => (self.stats, None),
            Err(failure) => {
                let difference = self.render(failure);
                (self.stats, Some(difference))
            }
        }
    }

    fn run_inner(&mut self) -> Result<(), Failure> {
        let mut wave = Vec::new();
        let mut folded_starts: HashMap<u64, HashSet<u64>> = HashMap::new();
        for (index, symbol) in self.plain.symbols.iter().enumerate() {
            if symbol.kind != SymbolKind::Function || symbol.size == 0 {
                continue;
            }
            let counterpart = self.folded.counterpart(self.plain, SymbolId(index as u32));
            if counterpart.is_none() && symbol.file.is_some() {
                // A local function folded into another unit's copy loses its
                // symbol: nothing outside its unit could name it, and every
                // use inside (calls, jumps, address uses, pointers in data)
                // is a reference of code or data that is checked in turn.
                self.stats.locals_without_symbol += 1;
                continue;
            }
            if counterpart.is_none() && !self.plain.exports(&symbol.name) {
                // Likewise a function the link does not export: once the
                // fold sent every use to its twin, `--gc-sections` drops it.
                self.stats.unexported_without_symbol += 1;
                continue;
            }
            let root = self.roots.len();
            self.roots.push(Root {
                name: symbol.name.clone(),
            });
            self.stats.functions_checked += 1;
            let Some(counterpart) = counterpart else {
                return Err(Failure {
                    local: LocalDifference {
                        plain_site: symbol.address,
                        folded_site: 0,
                        code: true,
                        kind: DifferenceKind::MissingInFolded,
                        detail: format!("FOLDED has no function {}", symbol.name),
                    },
                    via: None,
                    root,
                });
            };
            let folded_start = self.folded.symbol(counterpart).address;
            folded_starts
                .entry(folded_start)
                .or_default()
                .insert(symbol.address);
            let task = PairTask {
                plain: Extent {
                    start: symbol.address,
                    end: symbol.end(),
                },
                folded_start,
                via: None,
                root,
            };
            if self.pairs.contains_key(&(symbol.address, folded_start)) {
                continue;
            }
            self.pairs
                .insert((symbol.address, folded_start), PairState::Pending);
            wave.push(task);
        }
        self.stats.aliases_followed = folded_starts
            .values()
            .filter(|plain_starts| plain_starts.len() > 1)
            .map(|plain_starts| plain_starts.len() - 1)
            .sum();

        let mut first = true;
        while !wave.is_empty() {
            let results: Vec<PairResult> = wave
                .par_iter()
                .map(|task| compare_pair(self.plain, self.folded, task, self.assume_odr))
                .collect();
            for (task, result) in wave.iter().zip(results) {
                self.finish_pair(task, result)?;
                self.drain_queue()?;
            }
            if first {
                first = false;
                self.check_data_roots()?;
                self.check_exported()?;
                self.drain_queue()?;
            }
            self.check_interiors()?;
            wave = std::mem::take(&mut self.next_wave);
        }
        self.check_interiors()?;
        // Every pair has been compared by now; an interior reference still
        // open names a pair that never was, which must not pass silently.
        match self.interior.first() {
            None => Ok(()),
            Some(item) => Err(self.fail(
                &item.check,
                DifferenceKind::TargetsDiffer,
                format!(
                    "{} in PLAIN and {} in FOLDED could not be matched to compared code",
                    self.plain.describe(item.key.0 + item.plain_offset),
                    self.folded.describe(item.key.1 + item.folded_offset)
                ),
            )),
        }
    }

    fn finish_pair(&mut self, task: &PairTask, result: PairResult) -> Result<(), Failure> {
        let checks = match result.outcome {
            Ok(checks) => checks,
            Err(local) => {
                return Err(Failure {
                    local,
                    via: task.via,
                    root: task.root,
                });
            }
        };
        if result.assumed_by_odr {
            self.stats.thunks_assumed_by_odr += 1;
        } else if result.followed_thunk && task.via.is_none() {
            self.stats.thunks_followed += 1;
        }
        self.stats.pairs_proved_equal += 1;
        if result.folded.start != task.folded_start {
            // Jump tables name the followed code: the pair is known by it too.
            self.pairs.insert(
                (task.plain.start, result.folded.start),
                PairState::Done {
                    folded_start: result.folded.start,
                    plain_offsets: result.plain_offsets.clone(),
                    folded_offsets: result.folded_offsets.clone(),
                },
            );
        }
        self.pairs.insert(
            (task.plain.start, task.folded_start),
            PairState::Done {
                folded_start: result.folded.start,
                plain_offsets: result.plain_offsets,
                folded_offsets: result.folded_offsets,
            },
        );
        for check in checks {
            self.check_target(&check)?;
        }
        Ok(())
    }

    fn drain_queue(&mut self) -> Result<(), Failure> {
        while let Some(check) = self.queue.pop() {
            self.check_target(&check)?;
        }
        Ok(())
    }

    fn fail(&self, check: &TargetCheck, kind: DifferenceKind, detail: String) -> Failure {
        Failure {
            local: LocalDifference {
                plain_site: check.plain_site,
                folded_site: check.folded_site,
                code: check.functions.is_some(),
                kind,
                detail,
            },
            via: check.via,
            root: check.root,
        }
    }

    fn step(&mut self, check: &TargetCheck) -> StepId {
        self.steps.push(Step {
            plain_site: check.plain_site,
            folded_site: check.folded_site,
            code: check.functions.is_some(),
            parent: check.via,
        });
        self.steps.len() - 1
    }

    fn render(&self, failure: Failure) -> Difference {
        let mut path = Vec::new();
        let mut step = failure.via;
        while let Some(id) = step {
            let s = self.steps[id];
            path.push(self.site(s.plain_site, s.folded_site, s.code));
            step = s.parent;
        }
        path.reverse();
        path.push(self.site(
            failure.local.plain_site,
            failure.local.folded_site,
            failure.local.code,
        ));
        Difference {
            function: self
                .roots
                .get(failure.root)
                .map(|r| r.name.clone())
                .unwrap_or_default(),
            kind: failure.local.kind,
            detail: failure.local.detail,
            path,
        }
    }

    fn site(&self, plain: u64, folded: u64, code: bool) -> Site {
        let location = |image: &Image, address: u64| Location {
            address,
            place: image.describe(address),
            instruction: code.then(|| decode::disassemble(image, address)),
        };
        Site {
            plain: location(self.plain, plain),
            folded: location(self.folded, folded),
        }
    }
}

/// Reads entry `i` of the jump table at `table` as the address it jumps to.
type EntryReader = dyn Fn(&Image, u64, u64) -> Option<u64>;
