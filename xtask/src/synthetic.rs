//! The synthetic corpus of `cargo xtask bench`: N generated functions of
//! x86-64 machine code spread over relocatable ELF objects, written directly
//! with `object::write`, plus a C `main` that calls a sample of them and
//! prints a checksum.
//!
//! Shape (all decisions come from one seeded xorshift generator, so a size
//! and a seed always give the same bytes):
//!
//! - `FUNCTIONS_PER_OBJECT` functions per object (`obj_NNNNN.o`), each in its
//!   own `.text.<name>` section (16-byte aligned) with an `STT_FUNC` symbol;
//!   15% are local (`static`), the rest global.
//! - Every function is pure arithmetic on its argument (`u64 f(u64)`, System V
//!   ABI): bodies of 16 to 400 bytes, a leaf form (`rax` only, no frame) and a
//!   framed form (`rbx`, `r12`, `r13` saved; `add`/`imul`/`lea`/`xor`/`rol`
//!   with varying immediates, a conditional branch over one operation, 0-4
//!   calls through `R_X86_64_PLT32` relocations).
//! - Calls only go to deeper levels (`LEVELS` levels, the deepest calls
//!   nothing), so every call tree is finite and small; 5% of the deepest
//!   functions are self-recursive and 3% of them mutually recursive pairs,
//!   recursing on `x >> k` until it reaches zero.
//! - `DUPLICATE_PERCENT` of the functions are exact copies of another
//!   function's body at the same level whose calls go to the same callee or
//!   to a copy of it (a recursive copy calls itself, a copied pair calls its
//!   own partner), so whole call trees are identical.
//! - `main.c` calls `MAIN_CALLS` global functions with fixed arguments, half
//!   directly and half through a table of function pointers (so their
//!   addresses are taken), and prints a checksum of the results: every
//!   correctly linked program prints the same line.
//!
//! No `.eh_frame` and no `.llvm_addrsig` are written: like gcc's and rustc's
//! objects for address significance, without unwind tables.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use object::write::{Object, Relocation, StandardSection, Symbol, SymbolId, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationFlags, SectionKind, SymbolFlags, SymbolKind,
    SymbolScope, elf,
};

/// Bumped whenever the generated code changes, so cached corpora are rebuilt.
pub const GENERATOR_VERSION: u32 = 1;
/// Functions in each generated object.
pub const FUNCTIONS_PER_OBJECT: usize = 1000;
/// Share of functions that are exact copies of another one.
const DUPLICATE_PERCENT: u64 = 25;
/// Share of functions with internal linkage.
const LOCAL_PERCENT: u64 = 15;
/// Call depth: functions at level `LEVELS - 1` call nothing (but may recurse).
const LEVELS: usize = 6;
/// How many functions `main` calls (fewer when there are fewer global functions).
const MAIN_CALLS: usize = 1000;
/// Size range of a function body in bytes.
const MIN_BODY: usize = 16;
const MAX_BODY: usize = 400;

/// What the generator wrote.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The objects, in link order.
    pub objects: Vec<PathBuf>,
    /// The C source of `main`.
    pub main_c: PathBuf,
    pub functions: usize,
    /// Bytes of machine code over all functions (the sum of `.text.*` sizes).
    pub code_bytes: u64,
    /// Functions that are exact copies of another function.
    pub copies: usize,
    pub self_recursive: usize,
    pub mutual_pairs: usize,
}

/// A small, fast, seeded generator (xorshift64*); deterministic everywhere.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Any seed, zero included, gives a non-zero state.
        Rng((seed ^ 0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..bound` (`bound > 0`; the modulo bias is irrelevant here).
    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    /// True with probability `percent`%.
    fn percent(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn imm32(&mut self) -> u32 {
        self.next() as u32
    }

    /// An odd multiplier, so products keep their low bits varied.
    fn odd_imm32(&mut self) -> u32 {
        (self.next() as u32 & 0x7fff_ffff) | 1
    }
}

/// One step of a body. `Call` and `Recurse` name the callee by function index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Add(u32),
    Imul(u32),
    /// `acc = acc + x * 2^scale + disp`.
    Lea {
        scale: u8,
        disp: u32,
    },
    Xor,
    Rol(u8),
    /// Framed only: `r13 = imm; acc += r13` (`mix` false) or `acc *= r13` (`mix` true).
    Const {
        imm: u32,
        mix: bool,
    },
    /// Framed only: skip the next step when bit `bit` of the accumulator is clear.
    SkipIfClear {
        bit: u8,
    },
    /// Framed only: `acc += callee(acc)`.
    Call(usize),
    /// Framed only: `if (x >> shift) != 0 { acc += callee(x >> shift) }`.
    Recurse {
        shift: u8,
        callee: usize,
    },
}

/// A function body: the leaf form works on `rax` alone, the framed form keeps
/// the argument in `rbx` and the accumulator in `r12`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Body {
    framed: bool,
    steps: Vec<Step>,
}

/// Bytes of each encoded step, without the prologue and epilogue.
fn step_len(step: Step, framed: bool) -> usize {
    match (step, framed) {
        (Step::Add(_), false) => 6,
        (Step::Add(_), true) => 7,
        (Step::Imul(_), _) => 7,
        (Step::Lea { .. }, false) => 8,
        (Step::Lea { .. }, true) => 8,
        (Step::Xor, _) => 3,
        (Step::Rol(_), _) => 4,
        (Step::Const { mix: false, .. }, _) => 7 + 3,
        (Step::Const { mix: true, .. }, _) => 7 + 4,
        (Step::SkipIfClear { .. }, _) => 7 + 2,
        (Step::Call(_), _) => 3 + 5 + 3,
        (Step::Recurse { .. }, _) => 3 + 4 + 2 + 5 + 3,
    }
}

/// Leaf: `mov rax, rdi` ... `ret`. Framed: 3 pushes and 2 moves ... `mov rax, r12`, 3 pops, `ret`.
fn frame_len(framed: bool) -> usize {
    if framed { 11 + 9 } else { 3 + 1 }
}

fn body_len(body: &Body) -> usize {
    frame_len(body.framed)
        + body
            .steps
            .iter()
            .map(|&step| step_len(step, body.framed))
            .sum::<usize>()
}

/// Encoded machine code and the `(offset, callee)` of each `call rel32` field.
fn encode(body: &Body) -> (Vec<u8>, Vec<(u64, usize)>) {
    let mut code = Vec::with_capacity(body_len(body));
    let mut calls = Vec::new();
    let mut call = |code: &mut Vec<u8>, callee: usize| {
        code.push(0xe8); // call rel32
        calls.push((code.len() as u64, callee));
        code.extend_from_slice(&[0; 4]);
    };
    if !body.framed {
        code.extend_from_slice(&[0x48, 0x89, 0xf8]); // mov rax, rdi
        for &step in &body.steps {
            match step {
                Step::Add(imm) => {
                    code.extend_from_slice(&[0x48, 0x05]); // add rax, imm32
                    code.extend_from_slice(&imm.to_le_bytes());
                }
                Step::Imul(imm) => {
                    code.extend_from_slice(&[0x48, 0x69, 0xc0]); // imul rax, rax, imm32
                    code.extend_from_slice(&imm.to_le_bytes());
                }
                Step::Lea { scale, disp } => {
                    // lea rax, [rax + rdi*2^scale + disp32]
                    code.extend_from_slice(&[0x48, 0x8d, 0x84, (scale << 6) | 0x38]);
                    code.extend_from_slice(&disp.to_le_bytes());
                }
                Step::Xor => code.extend_from_slice(&[0x48, 0x31, 0xf8]), // xor rax, rdi
                Step::Rol(count) => code.extend_from_slice(&[0x48, 0xc1, 0xc0, count]), // rol rax, imm8
                Step::Const { .. }
                | Step::SkipIfClear { .. }
                | Step::Call(_)
                | Step::Recurse { .. } => unreachable!("leaf bodies are built from leaf steps"),
            }
        }
        code.push(0xc3); // ret
        return (code, calls);
    }
    code.extend_from_slice(&[
        0x53, // push rbx
        0x41, 0x54, // push r12
        0x41, 0x55, // push r13 (rsp is 16-byte aligned from here on)
        0x48, 0x89, 0xfb, // mov rbx, rdi
        0x49, 0x89, 0xfc, // mov r12, rdi
    ]);
    for (index, &step) in body.steps.iter().enumerate() {
        match step {
            Step::Add(imm) => {
                code.extend_from_slice(&[0x49, 0x81, 0xc4]); // add r12, imm32
                code.extend_from_slice(&imm.to_le_bytes());
            }
            Step::Imul(imm) => {
                code.extend_from_slice(&[0x4d, 0x69, 0xe4]); // imul r12, r12, imm32
                code.extend_from_slice(&imm.to_le_bytes());
            }
            Step::Lea { scale, disp } => {
                // lea r12, [r12 + rbx*2^scale + disp32]
                code.extend_from_slice(&[0x4d, 0x8d, 0xa4, (scale << 6) | 0x1c]);
                code.extend_from_slice(&disp.to_le_bytes());
            }
            Step::Xor => code.extend_from_slice(&[0x49, 0x31, 0xdc]), // xor r12, rbx
            Step::Rol(count) => code.extend_from_slice(&[0x49, 0xc1, 0xc4, count]), // rol r12, imm8
            Step::Const { imm, mix } => {
                code.extend_from_slice(&[0x49, 0xc7, 0xc5]); // mov r13, imm32 (sign-extended)
                code.extend_from_slice(&imm.to_le_bytes());
                if mix {
                    code.extend_from_slice(&[0x4d, 0x0f, 0xaf, 0xe5]); // imul r12, r13
                } else {
                    code.extend_from_slice(&[0x4d, 0x01, 0xec]); // add r12, r13
                }
            }
            Step::SkipIfClear { bit } => {
                code.extend_from_slice(&[0x49, 0xf7, 0xc4]); // test r12, imm32
                code.extend_from_slice(&(1u32 << bit).to_le_bytes());
                // The generator never puts a skip last, so there is a next step.
                let skipped = body
                    .steps
                    .get(index + 1)
                    .map_or(0, |&next| step_len(next, true));
                code.extend_from_slice(&[0x74, skipped as u8]); // je over the next step
            }
            Step::Call(callee) => {
                code.extend_from_slice(&[0x4c, 0x89, 0xe7]); // mov rdi, r12
                call(&mut code, callee);
                code.extend_from_slice(&[0x49, 0x01, 0xc4]); // add r12, rax
            }
            Step::Recurse { shift, callee } => {
                code.extend_from_slice(&[0x48, 0x89, 0xdf]); // mov rdi, rbx
                code.extend_from_slice(&[0x48, 0xc1, 0xef, shift]); // shr rdi, imm8 (sets ZF)
                code.extend_from_slice(&[0x74, 5 + 3]); // je over the call and the add
                call(&mut code, callee);
                code.extend_from_slice(&[0x49, 0x01, 0xc4]); // add r12, rax
            }
        }
    }
    code.extend_from_slice(&[
        0x4c, 0x89, 0xe0, // mov rax, r12
        0x41, 0x5d, // pop r13
        0x41, 0x5c, // pop r12
        0x5b, // pop rbx
        0xc3, // ret
    ]);
    (code, calls)
}

/// One generated function.
#[derive(Debug, Clone)]
struct Function {
    object: usize,
    global: bool,
    /// Functions with the same class have identical bodies and call identical callees.
    class: usize,
    body: Body,
}

fn function_name(index: usize) -> String {
    format!("synth_f{index:07}")
}

/// A body size: small functions are the most common, as in real programs.
fn target_size(rng: &mut Rng) -> usize {
    match rng.below(10) {
        0..=3 => MIN_BODY + rng.below(32),
        4..=7 => 48 + rng.below(112),
        _ => 160 + rng.below(MAX_BODY - 160 - 24),
    }
}

/// Non-call arithmetic steps until the body reaches `size` bytes; the calls
/// in `calls` are spread over them.
fn arithmetic_body(rng: &mut Rng, framed: bool, size: usize, calls: &[Step]) -> Body {
    let mut body = Body {
        framed,
        steps: Vec::new(),
    };
    let mut length = frame_len(framed)
        + calls
            .iter()
            .map(|&call| step_len(call, framed))
            .sum::<usize>();
    let mut pending: Vec<Step> = calls.to_vec();
    loop {
        let step = match rng.below(if framed { 8 } else { 5 }) {
            0 => Step::Add(rng.imm32()),
            1 => Step::Imul(rng.odd_imm32()),
            2 => Step::Lea {
                scale: rng.below(4) as u8,
                disp: rng.imm32(),
            },
            3 => Step::Xor,
            4 => Step::Rol(1 + rng.below(63) as u8),
            5 => Step::Const {
                imm: rng.imm32(),
                mix: rng.percent(50),
            },
            // A skip needs a step after it; `Add` keeps the jump short.
            _ => Step::SkipIfClear {
                bit: rng.below(31) as u8,
            },
        };
        if let Step::SkipIfClear { .. } = step {
            body.steps.push(step);
            body.steps.push(Step::Add(rng.imm32()));
            length += step_len(step, framed) + step_len(Step::Add(0), framed);
        } else {
            body.steps.push(step);
            length += step_len(step, framed);
        }
        if !pending.is_empty() && rng.percent(30) {
            body.steps.extend(pending.pop());
        }
        if length >= size.clamp(MIN_BODY, MAX_BODY) && pending.is_empty() {
            break;
        }
        if length + 24 >= MAX_BODY {
            body.steps.append(&mut pending);
            break;
        }
    }
    body
}

/// Generates the corpus's functions (all in memory), see the module header.
struct Generator {
    rng: Rng,
    functions: Vec<Option<Function>>,
    /// Members of each class, by function index.
    classes: Vec<Vec<usize>>,
    /// Original (non-copy, non-pair) functions by level: what copies copy.
    originals: Vec<Vec<usize>>,
    /// Generated mutually recursive pairs.
    pairs: Vec<(usize, usize)>,
    /// Global functions by level: cross-object callees.
    globals: Vec<Vec<usize>>,
    copies: usize,
    self_recursive: usize,
}

impl Generator {
    fn new(count: usize, seed: u64) -> Generator {
        Generator {
            rng: Rng::new(seed),
            functions: vec![None; count],
            classes: Vec::new(),
            originals: vec![Vec::new(); LEVELS],
            pairs: Vec::new(),
            globals: vec![Vec::new(); LEVELS],
            copies: 0,
            self_recursive: 0,
        }
    }

    fn object_of(index: usize) -> usize {
        index / FUNCTIONS_PER_OBJECT
    }

    fn level_of(index: usize) -> usize {
        index % LEVELS
    }

    fn function(&self, index: usize) -> &Function {
        self.functions[index]
            .as_ref()
            .expect("callees are generated before their callers")
    }

    fn callable(&self, callee: usize, from_object: usize) -> bool {
        let function = self.function(callee);
        function.global || function.object == from_object
    }

    fn new_class(&mut self, member: usize) -> usize {
        self.classes.push(vec![member]);
        self.classes.len() - 1
    }

    fn place(&mut self, index: usize, global: bool, class: usize, body: Body) {
        let level = Self::level_of(index);
        if global {
            self.globals[level].push(index);
        }
        self.functions[index] = Some(Function {
            object: Self::object_of(index),
            global,
            class,
            body,
        });
    }

    /// Every function, deepest level first so callees exist before their callers.
    fn run(&mut self) {
        let count = self.functions.len();
        for level in (0..LEVELS).rev() {
            for index in (level..count).step_by(LEVELS) {
                if self.functions[index].is_none() {
                    self.generate(index, level);
                }
            }
        }
    }

    fn generate(&mut self, index: usize, level: usize) {
        let object = Self::object_of(index);
        let leaf_level = level == LEVELS - 1;
        // A mutually recursive pair with the next function of this level.
        let partner = index + LEVELS;
        if leaf_level
            && partner < self.functions.len()
            && self.functions[partner].is_none()
            && self.rng.percent(3)
        {
            self.generate_pair(index, partner);
            return;
        }
        if self.rng.percent(DUPLICATE_PERCENT) && self.try_copy(index, level) {
            return;
        }
        let global = !self.rng.percent(LOCAL_PERCENT);
        let size = target_size(&mut self.rng);
        let body = if leaf_level {
            if self.rng.percent(5) {
                self.self_recursive += 1;
                let shift = 1 + self.rng.below(8) as u8;
                arithmetic_body(
                    &mut self.rng,
                    true,
                    size,
                    &[Step::Recurse {
                        shift,
                        callee: index,
                    }],
                )
            } else {
                arithmetic_body(&mut self.rng, size > 120, size, &[])
            }
        } else {
            let calls: Vec<Step> = (0..self.rng.below(5))
                .filter_map(|_| self.pick_callee(level, object).map(Step::Call))
                .collect();
            let framed = !calls.is_empty() || size > 120;
            arithmetic_body(&mut self.rng, framed, size, &calls)
        };
        let class = self.new_class(index);
        self.place(index, global, class, body);
        // Pair members are never copied alone: their partner would not match.
        self.originals[level].push(index);
    }

    /// A callee at a deeper level: half the time from the caller's own object.
    fn pick_callee(&mut self, level: usize, object: usize) -> Option<usize> {
        let count = self.functions.len();
        for _ in 0..8 {
            let callee_level = level + 1 + self.rng.below(LEVELS - 1 - level);
            let candidate = if self.rng.percent(50) {
                // Same object: any function of that level in it.
                let first = object * FUNCTIONS_PER_OBJECT;
                let last = (first + FUNCTIONS_PER_OBJECT).min(count);
                let start = first + (callee_level + LEVELS - first % LEVELS) % LEVELS;
                let slots = (last.saturating_sub(start)).div_ceil(LEVELS);
                if slots == 0 {
                    continue;
                }
                start + LEVELS * self.rng.below(slots)
            } else {
                let globals = &self.globals[callee_level];
                if globals.is_empty() {
                    continue;
                }
                globals[self.rng.below(globals.len())]
            };
            if candidate < count && self.callable(candidate, object) {
                return Some(candidate);
            }
        }
        None
    }

    /// Makes `index` an exact copy of an original at `level`, calling the same
    /// callees or copies of them; false when no original fits.
    fn try_copy(&mut self, index: usize, level: usize) -> bool {
        let originals = &self.originals[level];
        if originals.is_empty() {
            return false;
        }
        let source = originals[self.rng.below(originals.len())];
        let object = Self::object_of(index);
        let mut body = self.function(source).body.clone();
        for step in &mut body.steps {
            match step {
                Step::Call(callee) => {
                    let class = self.function(*callee).class;
                    let choices: Vec<usize> = self.classes[class]
                        .iter()
                        .copied()
                        .filter(|&member| member != index && self.callable(member, object))
                        .collect();
                    if choices.is_empty() {
                        return false;
                    }
                    *callee = choices[self.rng.below(choices.len())];
                }
                Step::Recurse { callee, .. } => *callee = index,
                _ => {}
            }
        }
        let class = self.function(source).class;
        let global = !self.rng.percent(LOCAL_PERCENT);
        self.classes[class].push(index);
        self.place(index, global, class, body);
        self.copies += 1;
        true
    }

    /// `a` and `b` call each other on `x >> k`; a quarter of the pairs copy an earlier pair.
    fn generate_pair(&mut self, a: usize, b: usize) {
        if !self.pairs.is_empty() && self.rng.percent(DUPLICATE_PERCENT) {
            let (source_a, source_b) = self.pairs[self.rng.below(self.pairs.len())];
            for (index, source, partner) in [(a, source_a, b), (b, source_b, a)] {
                let mut body = self.function(source).body.clone();
                for step in &mut body.steps {
                    if let Step::Recurse { callee, .. } = step {
                        *callee = partner;
                    }
                }
                let class = self.function(source).class;
                self.classes[class].push(index);
                self.place(index, true, class, body);
                self.copies += 1;
            }
        } else {
            for (index, partner) in [(a, b), (b, a)] {
                let size = target_size(&mut self.rng);
                let shift = 1 + self.rng.below(8) as u8;
                let body = arithmetic_body(
                    &mut self.rng,
                    true,
                    size,
                    &[Step::Recurse {
                        shift,
                        callee: partner,
                    }],
                );
                let class = self.new_class(index);
                self.place(index, true, class, body);
            }
        }
        self.pairs.push((a, b));
    }
}

/// Writes the corpus for `count` functions into `dir`: `dir/obj_NNNNN.o` and `dir/main.c`.
pub fn generate(dir: &Path, count: usize, seed: u64) -> Result<Generated> {
    ensure!(
        count >= LEVELS,
        "a synthetic corpus needs at least {LEVELS} functions"
    );
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut generator = Generator::new(count, seed);
    generator.run();
    let functions: Vec<Function> = generator
        .functions
        .iter()
        .map(|function| function.clone().context("a function was not generated"))
        .collect::<Result<_>>()?;

    let mut objects = Vec::new();
    let mut code_bytes = 0;
    for (object, chunk) in functions.chunks(FUNCTIONS_PER_OBJECT).enumerate() {
        let first = object * FUNCTIONS_PER_OBJECT;
        let (bytes, code) = write_object(object, first, chunk, &functions)?;
        let path = dir.join(format!("obj_{object:05}.o"));
        fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        objects.push(path);
        code_bytes += code;
    }

    let main_c = dir.join("main.c");
    fs::write(&main_c, main_source(&functions, seed))
        .with_context(|| format!("writing {}", main_c.display()))?;
    Ok(Generated {
        objects,
        main_c,
        functions: count,
        code_bytes,
        copies: generator.copies,
        self_recursive: generator.self_recursive,
        mutual_pairs: generator.pairs.len(),
    })
}

/// One object holding `chunk` (functions `first..`); returns its bytes and its code size.
fn write_object(
    object: usize,
    first: usize,
    chunk: &[Function],
    all: &[Function],
) -> Result<(Vec<u8>, u64)> {
    let mut elf = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    elf.add_file_symbol(format!("obj_{object:05}.c").into_bytes());
    // An empty .note.GNU-stack: the stack stays non-executable.
    elf.add_section(Vec::new(), b".note.GNU-stack".to_vec(), SectionKind::Other);

    let mut symbols: HashMap<usize, SymbolId> = HashMap::new();
    let mut sections = Vec::with_capacity(chunk.len());
    let mut code_bytes = 0;
    for (offset, function) in chunk.iter().enumerate() {
        let index = first + offset;
        let name = function_name(index);
        let section = elf.add_subsection(StandardSection::Text, name.as_bytes());
        let (code, calls) = encode(&function.body);
        elf.append_section_data(section, &code, 16);
        code_bytes += code.len() as u64;
        let symbol = elf.add_symbol(Symbol {
            name: name.into_bytes(),
            value: 0,
            size: code.len() as u64,
            kind: SymbolKind::Text,
            scope: if function.global {
                SymbolScope::Linkage
            } else {
                SymbolScope::Compilation
            },
            weak: false,
            section: SymbolSection::Section(section),
            flags: SymbolFlags::None,
        });
        symbols.insert(index, symbol);
        sections.push((section, calls));
    }
    for (section, calls) in sections {
        for (offset, callee) in calls {
            let symbol = match symbols.get(&callee) {
                Some(&symbol) => symbol,
                None => {
                    let target = &all[callee];
                    ensure!(
                        target.global,
                        "{} calls the local {} of another object",
                        function_name(first),
                        function_name(callee)
                    );
                    let symbol = elf.add_symbol(Symbol {
                        name: function_name(callee).into_bytes(),
                        value: 0,
                        size: 0,
                        kind: SymbolKind::Text,
                        scope: SymbolScope::Linkage,
                        weak: false,
                        section: SymbolSection::Undefined,
                        flags: SymbolFlags::None,
                    });
                    symbols.insert(callee, symbol);
                    symbol
                }
            };
            elf.add_relocation(
                section,
                Relocation {
                    offset,
                    symbol,
                    addend: -4,
                    flags: RelocationFlags::Elf {
                        r_type: elf::R_X86_64_PLT32,
                    },
                },
            )
            .context("adding a call relocation")?;
        }
    }
    let bytes = elf
        .write()
        .with_context(|| format!("writing object {object}"))?;
    Ok((bytes, code_bytes))
}

/// `main.c`: calls up to `MAIN_CALLS` global functions, half directly and half
/// through a pointer table, and prints a checksum of what they return.
fn main_source(functions: &[Function], seed: u64) -> String {
    let mut rng = Rng::new(seed ^ 0x6d61_696e);
    let globals: Vec<usize> = (0..functions.len())
        .filter(|&index| functions[index].global)
        .collect();
    let mut chosen = Vec::new();
    let mut taken = vec![false; functions.len()];
    let wanted = MAIN_CALLS.min(globals.len());
    while chosen.len() < wanted {
        let index = globals[rng.below(globals.len())];
        if !std::mem::replace(&mut taken[index], true) {
            chosen.push(index);
        }
    }
    let (direct, table) = chosen.split_at(chosen.len() / 2);

    let mut c = String::from(
        "/* Written by `cargo xtask bench` (xtask/src/synthetic.rs). */\n\
         #include <stdint.h>\n#include <stdio.h>\n\n",
    );
    for &index in &chosen {
        let _ = writeln!(c, "uint64_t {}(uint64_t);", function_name(index));
    }
    c.push_str("\nstatic uint64_t (*const table[])(uint64_t) = {\n");
    for &index in table {
        let _ = writeln!(c, "    {},", function_name(index));
    }
    c.push_str(
        "};\n\nint main(void) {\n    uint64_t sum = 0;\n    uint64_t arg = 0x9e3779b97f4a7c15u;\n",
    );
    for &index in direct {
        let _ = writeln!(
            c,
            "    sum = sum * 31 + {}(arg); arg = arg * 6364136223846793005u + 1442695040888963407u;",
            function_name(index)
        );
    }
    c.push_str(
        "    for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++) {\n        \
         sum = sum * 31 + table[i](arg); arg = arg * 6364136223846793005u + 1442695040888963407u;\n    }\n",
    );
    let _ = writeln!(
        c,
        "    printf(\"synthetic {} functions: %016llx\\n\", (unsigned long long)sum);\n    return 0;\n}}",
        functions.len()
    );
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_lengths_match_the_size_model() {
        let mut rng = Rng::new(7);
        for framed in [false, true] {
            for size in [16, 50, 200, 400] {
                let calls = if framed {
                    vec![
                        Step::Call(0),
                        Step::Recurse {
                            shift: 3,
                            callee: 1,
                        },
                    ]
                } else {
                    Vec::new()
                };
                let body = arithmetic_body(&mut rng, framed, size, &calls);
                let (code, relocations) = encode(&body);
                assert_eq!(code.len(), body_len(&body));
                assert_eq!(relocations.len(), calls.len());
                assert!(
                    (MIN_BODY..=MAX_BODY).contains(&code.len()),
                    "{}",
                    code.len()
                );
            }
        }
    }

    #[test]
    fn generation_is_deterministic_and_copies_are_exact() {
        let run = |seed| {
            let mut generator = Generator::new(600, seed);
            generator.run();
            generator
        };
        let (a, b) = (run(1), run(1));
        let bodies = |g: &Generator| -> Vec<Body> {
            g.functions
                .iter()
                .map(|f| {
                    f.as_ref().map(|f| f.body.clone()).unwrap_or(Body {
                        framed: false,
                        steps: Vec::new(),
                    })
                })
                .collect()
        };
        assert_eq!(bodies(&a), bodies(&b));
        assert!(a.copies > 600 * 15 / 100, "{} copies", a.copies);
        for members in &a.classes {
            let first = a.function(members[0]);
            for &member in &members[1..] {
                let other = a.function(member);
                assert_eq!(first.body.framed, other.body.framed);
                assert_eq!(first.body.steps.len(), other.body.steps.len());
                for (x, y) in first.body.steps.iter().zip(&other.body.steps) {
                    match (x, y) {
                        (Step::Call(p), Step::Call(q)) => {
                            assert_eq!(a.function(*p).class, a.function(*q).class);
                        }
                        (Step::Recurse { shift: s, .. }, Step::Recurse { shift: t, .. }) => {
                            assert_eq!(s, t);
                        }
                        _ => assert_eq!(x, y),
                    }
                }
            }
        }
    }
}
