//! The program generator of `cargo xtask fuzz`: one seed gives one random
//! multi-file C program, its compiler flags and its linker.
//!
//! A program is made of *families* of near-duplicate functions: most members
//! of a family are identical copies (in the same file, other files or a
//! static archive), a few differ from the first by exactly one mutation (a
//! constant, an operator, a comparison, a type, which global or array they
//! touch, a callee, a volatile, a shift, float against double, a string).
//! `main` calls every function on fixed inputs and prints what comes back,
//! so any change of behaviour shows in the transcript.
//!
//! Main assumption: the plain and the folded link use the very same objects,
//! so whatever the compiler makes of a construct (even undefined behaviour
//! such as signed overflow) runs identically in both unless icf changes which
//! code or data a reference reaches. The generator therefore never reads
//! memory whose contents depend on layout (no dereference past an object),
//! never prints a data address, and puts every comparison of function
//! addresses on a line starting with [`FUNCTION_ADDRESS_PREFIX`]: those lines
//! are compared in safe mode only, since `--mode all` may merge function
//! addresses (never data addresses, never `--keep-unique` ones).

pub mod plant;
pub mod run;

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Transcript lines that compare addresses of distinct functions start with
/// this; the runner drops them when it compares a `--mode all` build.
pub const FUNCTION_ADDRESS_PREFIX: &str = "fnptr ";

/// SplitMix64: tiny, deterministic and good enough to pick program shapes.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x1cf0_f022_5eed_0001)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// A number in `low..=high`.
    pub fn range(&mut self, low: i64, high: i64) -> i64 {
        low + (self.next_u64() % (high - low + 1) as u64) as i64
    }

    /// True with `percent` % probability.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The architectures, compilers and linkers a program is built with:
/// the one list of each (`icf-fixtures`).
pub use icf_fixtures::{Arch, Compiler, Linker};

/// How code is generated and linked with respect to position independence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pic {
    /// `-fno-pic`, linked `-no-pie`.
    None,
    /// `-fPIE`, linked `-pie`.
    Pie,
    /// `-fPIC`, linked `-pie`.
    SharedCodePie,
    /// `-fPIC`, linked `-no-pie`.
    SharedCodeNoPie,
}

/// Everything about building one program except its sources.
#[derive(Debug, Clone)]
pub struct BuildConfig {
    pub arch: Arch,
    pub compiler: Compiler,
    pub linker: Linker,
    /// `-O1`, `-O2`, `-O3` or `-Os`.
    pub opt: &'static str,
    pub pic: Pic,
    /// Further compiler flags shared by every file.
    pub extra_cflags: Vec<String>,
    pub gc_sections: bool,
    /// `-Wl,-q`: the link keeps its relocations.
    pub keep_relocs: bool,
    pub export_dynamic: bool,
    /// `-T fz.ld`: a script that puts `.text.fzhot` in an output section of its own (GNU ld and lld).
    pub linker_script: bool,
    /// Symbols passed to the link as `--keep-unique` (gold and lld only).
    pub keep_unique: Vec<String>,
}

/// One C file of a program.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// File name without directory, `*.c`.
    pub name: String,
    pub text: String,
    /// Compiled into the static archive `libfz.a` rather than linked as an object.
    pub in_archive: bool,
    pub function_sections: bool,
    pub data_sections: bool,
}

/// A generated program: sources (the header `fz.h` plus C files) and how to build it.
#[derive(Debug, Clone)]
pub struct Program {
    pub seed: u64,
    pub config: BuildConfig,
    pub header: String,
    pub files: Vec<SourceFile>,
    /// The linker script `fz.ld`, when the config asks for one.
    pub linker_script: Option<String>,
    pub families: usize,
    pub functions: usize,
    /// What the generator knows of the families `plant.rs` picks wrong
    /// folds from (template and pointer families).
    pub family_info: Vec<FamilyInfo>,
    /// C functions the linked files define (not their weak overrides), by
    /// name: whether each has a section of its own.
    pub own_sections: std::collections::BTreeMap<String, bool>,
}

/// What the generator knows of one family, for `plant.rs` to pick wrong
/// folds from. Recording it draws no random number: a seed gives the same
/// program with it as without.
#[derive(Debug, Clone)]
pub struct FamilyInfo {
    pub kind: FamilyKind,
    pub members: Vec<MemberInfo>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FamilyKind {
    /// Rendered from a template; `switch` when it holds a switch dense
    /// enough for a jump table.
    Template { switch: bool },
    /// `const int *p(void)` returning a place in a const array.
    Pointer,
}

/// One member of a family.
#[derive(Debug, Clone)]
pub struct MemberInfo {
    /// The function's own symbol (a `static` one's, not its wrapper's).
    pub name: String,
    /// It has a section of its own (`-ffunction-sections`, not `.text.fzhot`).
    pub own_section: bool,
    /// It differs from the family's first member (a mutation, or another
    /// place for a pointer family).
    pub variant: bool,
    /// Weak, with a strong definition of the name elsewhere: the name may
    /// resolve to other code.
    pub overridden: bool,
    /// Declared `aligned(N)`.
    pub align: Option<u32>,
    /// For a pointer family: the array it points into, the index, and
    /// whether that is one past the array's end.
    pub place: Option<(String, usize, bool)>,
}

/// Picks the arch for `seed` when the user allows both.
pub fn arch_for_seed(seed: u64) -> Arch {
    if Rng::new(seed.wrapping_mul(31).wrapping_add(7)).chance(40) {
        Arch::Aarch64
    } else {
        Arch::X86_64
    }
}

/// The program of `seed` for `arch`.
pub fn generate(seed: u64, arch: Arch) -> Program {
    let mut rng = Rng::new(seed);
    let config = choose_config(&mut rng, arch);
    let mut generator = Generator::new(rng, arch, config);
    generator.build();
    generator.finish(seed)
}

fn choose_config(rng: &mut Rng, arch: Arch) -> BuildConfig {
    let compiler = if rng.chance(50) {
        Compiler::Gcc
    } else {
        Compiler::Clang
    };
    let linker = match arch {
        Arch::X86_64 => *rng.pick(&[Linker::Bfd, Linker::Gold, Linker::Lld, Linker::Mold]),
        Arch::Aarch64 => *rng.pick(&[Linker::Bfd, Linker::Lld]),
    };
    let opt = *rng.pick(&["-O1", "-O2", "-O3", "-Os"]);
    let pic = *rng.pick(&[
        Pic::None,
        Pic::Pie,
        Pic::SharedCodePie,
        Pic::SharedCodeNoPie,
    ]);
    let mut extra_cflags = Vec::new();
    match compiler {
        Compiler::Gcc => {
            if rng.chance(60) {
                // gcc's own ICF would fold copies inside a file before icf sees them.
                extra_cflags.push("-fno-ipa-icf".to_string());
            }
        }
        Compiler::Clang => {
            if rng.chance(20) {
                // Without .llvm_addrsig icf infers address significance.
                extra_cflags.push("-fno-addrsig".to_string());
            }
        }
    }
    if rng.chance(15) {
        extra_cflags.push("-fno-omit-frame-pointer".to_string());
    }
    if rng.chance(12) {
        extra_cflags.push(
            match arch {
                Arch::X86_64 => "-fcf-protection=full",
                Arch::Aarch64 => "-mbranch-protection=standard",
            }
            .to_string(),
        );
    }
    let gc_sections = rng.chance(30);
    let pie = matches!(pic, Pic::Pie | Pic::SharedCodePie);
    // The relocations kept in the output (`-q`) tell `icf verify`
    // addresses from numbers (an immediate that happens to fall in the
    // image); DWARF (which does not change the code) gives it each
    // function's prototype: whether `rdx` at a return is a second return
    // value, which argument registers a call reads. icf's handling of debug
    // sections is exercised with it. gold 1.16 fails with an internal error
    // on -q with --gc-sections, and mold fails an assertion emitting `-q`
    // relocations of debug sections that name dropped ones: there a PIE
    // (whose code holds no absolute addresses) goes without `-q`, other
    // code without DWARF.
    let mold_gc = linker == Linker::Mold && gc_sections;
    let gold_gc = linker == Linker::Gold && gc_sections;
    let keep_relocs = !(gold_gc || (mold_gc && pie));
    if !(mold_gc && keep_relocs) {
        extra_cflags.push("-g".to_string());
    }
    BuildConfig {
        arch,
        compiler,
        linker,
        opt,
        pic,
        extra_cflags,
        gc_sections,
        keep_relocs,
        export_dynamic: rng.chance(20),
        linker_script: matches!(linker, Linker::Bfd | Linker::Lld) && rng.chance(20),
        keep_unique: Vec::new(),
    }
}

/// One hole of a template: the text of the first member and what a mutated
/// member may put there instead.
#[derive(Debug, Clone)]
struct Hole {
    default: String,
    alternatives: Vec<String>,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Hole(usize),
}

/// A function body with holes; a member renders it with at most one hole
/// replaced by one of its alternatives.
#[derive(Debug, Clone, Default)]
struct Template {
    parts: Vec<Part>,
    holes: Vec<Hole>,
}

/// Which hole a member changes, and to which alternative.
type Mutation = Option<(usize, usize)>;

impl Template {
    fn text(&mut self, text: &str) {
        self.parts.push(Part::Text(text.to_string()));
    }

    /// Adds a hole and returns its index (to use the same hole again).
    fn hole(&mut self, default: String, alternatives: Vec<String>) -> usize {
        let alternatives = alternatives
            .into_iter()
            .filter(|alternative| *alternative != default)
            .collect();
        self.holes.push(Hole {
            default,
            alternatives,
        });
        let index = self.holes.len() - 1;
        self.parts.push(Part::Hole(index));
        index
    }

    fn reuse(&mut self, hole: usize) {
        self.parts.push(Part::Hole(hole));
    }

    /// Whether the template holds a switch (see `switch_statement`).
    fn has_switch(&self) -> bool {
        self.parts
            .iter()
            .any(|part| matches!(part, Part::Text(text) if text.contains("switch (")))
    }

    fn render(&self, mutation: Mutation) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Hole(index) => match mutation {
                    Some((hole, alternative)) if hole == *index => {
                        out.push_str(&self.holes[hole].alternatives[alternative]);
                    }
                    _ => out.push_str(&self.holes[*index].default),
                },
            }
        }
        out
    }

    fn random_mutation(&self, rng: &mut Rng) -> Mutation {
        let mutable: Vec<usize> = (0..self.holes.len())
            .filter(|&hole| !self.holes[hole].alternatives.is_empty())
            .collect();
        if mutable.is_empty() {
            return None;
        }
        let hole = *rng.pick(&mutable);
        Some((hole, rng.below(self.holes[hole].alternatives.len())))
    }
}

/// A global array: its name, element count and contents.
#[derive(Debug, Clone)]
struct ArrayDef {
    name: String,
    values: Vec<i32>,
}

/// Global (file-scope, externally visible) const arrays, in groups: a base
/// array, a twin with equal contents in another file, and a neighbour
/// defined right after the base in the same file.
#[derive(Debug, Clone)]
struct ArrayGroup {
    base: ArrayDef,
    twin: ArrayDef,
    neighbour: ArrayDef,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signature {
    /// `long f(long a, long b)`
    Int,
    /// `double f(double v)`
    Float,
    /// `void f(long a)`, prints
    Log,
}

impl Signature {
    fn prefix(self) -> &'static str {
        match self {
            Signature::Int => "f",
            Signature::Float => "d",
            Signature::Log => "l",
        }
    }

    fn declare(self, name: &str) -> String {
        match self {
            Signature::Int => format!("long {name}(long a, long b)"),
            Signature::Float => format!("double {name}(double v)"),
            Signature::Log => format!("void {name}(long a)"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linkage {
    Global,
    /// Called through a global wrapper `w_<name>` in the same file.
    Static,
    Weak,
}

/// One file being generated.
#[derive(Debug, Clone)]
struct Unit {
    name: String,
    in_archive: bool,
    function_sections: bool,
    data_sections: bool,
    /// File-local arrays this file already defines.
    locals_defined: BTreeSet<String>,
    /// Definitions that must come first (file-local arrays).
    prelude: String,
    body: String,
}

/// Local types of integer families; the wide ones come twice as often.
const INT_TYPES: [&str; 13] = [
    "int",
    "int",
    "unsigned",
    "unsigned",
    "long",
    "long",
    "unsigned long",
    "unsigned long",
    "short",
    "unsigned short",
    "signed char",
    "unsigned char",
    "long long",
];
const INT_OPS: [&str; 6] = ["+", "-", "*", "^", "|", "&"];
const COMPARISONS: [&str; 6] = ["<", "<=", ">", ">=", "==", "!="];
const INT_INPUTS: [(i64, i64); 7] = [
    (0, 0),
    (1, 2),
    (-5, 3),
    (1000, 7),
    (123_456_789, -42),
    (-77_777, 100_000),
    (42, -1),
];
const FLOAT_INPUTS: [&str; 4] = ["0.5", "-3.25", "1000.0", "7.125"];
/// Number of file-local `static const int laN[4]` arrays any file may define.
const LOCAL_ARRAYS: usize = 3;

struct Generator {
    rng: Rng,
    arch: Arch,
    config: BuildConfig,
    units: Vec<Unit>,
    /// Index of the archive member that nothing references (never extracted), if any.
    unreferenced_unit: Option<usize>,
    header: String,
    /// Statements of `main` before the checksums.
    main_body: String,
    /// Functions `long (long, long)` with external names, callable from any file.
    callees: Vec<String>,
    const_arrays: Vec<ArrayGroup>,
    local_arrays: Vec<ArrayDef>,
    mutable_arrays: Vec<ArrayGroup>,
    globals: Vec<String>,
    families: usize,
    functions: usize,
    keep_unique: Vec<String>,
    family_info: Vec<FamilyInfo>,
    own_sections: std::collections::BTreeMap<String, bool>,
}

impl Generator {
    fn new(mut rng: Rng, arch: Arch, config: BuildConfig) -> Generator {
        let mut units = Vec::new();
        let others = rng.range(2, 4) as usize;
        // 0: all files on, 1: all off, 2: per file. Without function
        // sections most functions share `.text`, and fewer of them fold.
        let weighted_mode = |rng: &mut Rng| match rng.below(100) {
            0..=59 => 0,
            60..=74 => 1,
            _ => 2,
        };
        let sections_mode = weighted_mode(&mut rng);
        let data_mode = rng.below(3);
        let flag = |rng: &mut Rng, mode: usize| match mode {
            0 => true,
            1 => false,
            _ => rng.chance(50),
        };
        for index in 0..=others {
            let function_sections = flag(&mut rng, sections_mode);
            let data_sections = flag(&mut rng, data_mode);
            units.push(Unit {
                name: if index == 0 {
                    "main.c".to_string()
                } else {
                    format!("u{index}.c")
                },
                in_archive: false,
                function_sections,
                data_sections,
                locals_defined: BTreeSet::new(),
                prelude: String::new(),
                body: String::new(),
            });
        }
        let mut unreferenced_unit = None;
        if rng.chance(45) {
            // One or two files become archive members the link extracts
            // (main calls into them), plus one member it never extracts.
            let members = rng.range(1, 2) as usize;
            for unit in units.iter_mut().skip(1).take(members) {
                unit.in_archive = true;
                unit.name = unit.name.replace('u', "ar");
            }
            let function_sections = flag(&mut rng, sections_mode);
            let data_sections = flag(&mut rng, data_mode);
            units.push(Unit {
                name: "ar_unused.c".to_string(),
                in_archive: true,
                function_sections,
                data_sections,
                locals_defined: BTreeSet::new(),
                prelude: String::new(),
                body: String::new(),
            });
            unreferenced_unit = Some(units.len() - 1);
        }
        Generator {
            rng,
            arch,
            config,
            units,
            unreferenced_unit,
            header: String::new(),
            main_body: String::new(),
            callees: Vec::new(),
            const_arrays: Vec::new(),
            local_arrays: Vec::new(),
            mutable_arrays: Vec::new(),
            globals: Vec::new(),
            families: 0,
            functions: 0,
            keep_unique: Vec::new(),
            family_info: Vec::new(),
            own_sections: Default::default(),
        }
    }

    /// Files the link always loads (main, objects, extracted members).
    fn linked_units(&self) -> Vec<usize> {
        (0..self.units.len())
            .filter(|&unit| Some(unit) != self.unreferenced_unit)
            .collect()
    }

    fn random_linked_unit(&mut self) -> usize {
        let units = self.linked_units();
        *self.rng.pick(&units)
    }

    fn build(&mut self) {
        self.data();
        let families = self.rng.range(12, 22) as usize;
        for family in 0..families {
            let kind = self.rng.below(100);
            match kind {
                0..=44 => {
                    let template = self.int_template();
                    self.template_family(family, Signature::Int, &template);
                }
                45..=54 => {
                    let template = self.float_template();
                    self.template_family(family, Signature::Float, &template);
                }
                55..=61 => {
                    let template = self.log_template();
                    self.template_family(family, Signature::Log, &template);
                }
                62..=70 => self.pointer_family(family),
                71..=76 => self.mutable_pointer_family(family),
                77..=81 => self.function_returning_family(family),
                82..=89 => {
                    let template = self.data_in_code_template();
                    self.template_family(family, Signature::Int, &template);
                }
                _ => self.fall_through_family(family),
            }
            self.families += 1;
        }
    }

    fn random_values(&mut self, count: usize) -> Vec<i32> {
        (0..count)
            .map(|_| self.rng.range(-1000, 1000) as i32)
            .collect()
    }

    /// Defines the arrays and globals the families touch.
    fn data(&mut self) {
        for group in 0..3 {
            let len = 4 + self.rng.below(2) * 4;
            let base_values = self.random_values(len);
            let neighbour_values = if self.rng.chance(50) {
                base_values.clone()
            } else {
                self.random_values(len)
            };
            let arrays = ArrayGroup {
                base: ArrayDef {
                    name: format!("ca{group}"),
                    values: base_values.clone(),
                },
                twin: ArrayDef {
                    name: format!("ca{group}t"),
                    values: base_values,
                },
                neighbour: ArrayDef {
                    name: format!("ca{group}n"),
                    values: neighbour_values,
                },
            };
            self.define_group(&arrays, "const int");
            self.const_arrays.push(arrays);
        }
        for group in 0..2 {
            let values = self.random_values(8);
            let neighbour_values = self.random_values(8);
            let arrays = ArrayGroup {
                base: ArrayDef {
                    name: format!("ma{group}"),
                    values: values.clone(),
                },
                twin: ArrayDef {
                    name: format!("ma{group}t"),
                    values,
                },
                neighbour: ArrayDef {
                    name: format!("ma{group}n"),
                    values: neighbour_values,
                },
            };
            self.define_group(&arrays, "int");
            self.mutable_arrays.push(arrays);
        }
        for local in 0..LOCAL_ARRAYS {
            let values = self.random_values(4);
            self.local_arrays.push(ArrayDef {
                name: format!("la{local}"),
                values,
            });
        }
        for global in 0..5 {
            let name = format!("g{global}");
            let unit = self.random_linked_unit();
            let value = self.rng.range(-50, 50);
            let _ = writeln!(self.units[unit].body, "long {name} = {value};");
            let _ = writeln!(self.header, "extern long {name};");
            self.globals.push(name);
        }
    }

    fn define_group(&mut self, arrays: &ArrayGroup, element: &str) {
        let unit = self.random_linked_unit();
        let other = self.random_linked_unit();
        for (array, unit) in [
            (&arrays.base, unit),
            (&arrays.neighbour, unit),
            (&arrays.twin, other),
        ] {
            let values: Vec<String> = array.values.iter().map(i32::to_string).collect();
            let _ = writeln!(
                self.units[unit].body,
                "{element} {}[{}] = {{{}}};",
                array.name,
                array.values.len(),
                values.join(", ")
            );
            let _ = writeln!(
                self.header,
                "extern {element} {}[{}];",
                array.name,
                array.values.len()
            );
        }
    }

    fn constant(&mut self) -> i64 {
        match self.rng.below(4) {
            0 => self.rng.range(0, 9),
            1 => self.rng.range(-100, 100),
            2 => self.rng.range(1000, 70000),
            _ => 1 << self.rng.range(1, 20),
        }
    }

    fn constant_hole(&mut self, template: &mut Template) {
        let value = self.constant();
        let other = self.constant();
        template.hole(
            value.to_string(),
            vec![(value + 1).to_string(), other.to_string()],
        );
    }

    fn choice_hole(&mut self, template: &mut Template, pool: &[&str]) -> usize {
        let default = self.rng.pick(pool).to_string();
        let alternatives = (0..2).map(|_| self.rng.pick(pool).to_string()).collect();
        template.hole(default, alternatives)
    }

    /// A hole naming an array to read `[index & 3]` from: the default and
    /// its twin (equal contents), neighbour (adjacent), another group or a
    /// file-local array with the same contents as another file's.
    fn const_array_hole(&mut self, template: &mut Template) {
        let group = self.rng.below(self.const_arrays.len());
        let other = self.rng.below(self.const_arrays.len());
        let local = self.rng.below(self.local_arrays.len());
        let arrays = &self.const_arrays[group];
        let mut candidates = vec![
            arrays.base.name.clone(),
            arrays.twin.name.clone(),
            arrays.neighbour.name.clone(),
            self.const_arrays[other].base.name.clone(),
            self.local_arrays[local].name.clone(),
        ];
        let first = self.rng.below(candidates.len());
        let default = candidates.remove(first);
        template.hole(default, candidates);
    }

    fn mutable_array_hole(&mut self, template: &mut Template) {
        let group = self.rng.below(self.mutable_arrays.len());
        let arrays = &self.mutable_arrays[group];
        let mut candidates = vec![
            arrays.base.name.clone(),
            arrays.twin.name.clone(),
            arrays.neighbour.name.clone(),
        ];
        let first = self.rng.below(candidates.len());
        let default = candidates.remove(first);
        template.hole(default, candidates);
    }

    fn string_literal(&mut self) -> String {
        let len = self.rng.range(6, 14) as usize;
        (0..len)
            .map(|_| (b'a' + self.rng.below(26) as u8) as char)
            .collect()
    }

    /// A string literal hole; alternatives differ in one character.
    fn string_hole(&mut self, template: &mut Template) -> usize {
        let text = self.string_literal();
        let mut changed = text.clone().into_bytes();
        let at = self.rng.below(changed.len());
        changed[at] = if changed[at] == b'z' {
            b'a'
        } else {
            changed[at] + 1
        };
        let changed = String::from_utf8_lossy(&changed).into_owned();
        template.hole(format!("\"{text}\""), vec![format!("\"{changed}\"")])
    }

    /// `long f(long a, long b)`: a few statements on a local of a random type.
    fn int_template(&mut self) -> Template {
        let mut t = Template::default();
        t.text("  ");
        self.choice_hole(&mut t, &["", "", "volatile "]);
        let ty = self.choice_hole(&mut t, &INT_TYPES);
        t.text(" x = (");
        t.reuse(ty);
        t.text(")a;\n");
        let statements = self.rng.range(2, 5);
        for _ in 0..statements {
            match self.rng.below(10) {
                0 => {
                    t.text("  x = x ");
                    self.choice_hole(&mut t, &INT_OPS);
                    t.text(" ");
                    self.constant_hole(&mut t);
                    t.text(";\n");
                }
                1 => {
                    t.text("  if (x ");
                    self.choice_hole(&mut t, &COMPARISONS);
                    t.text(" ");
                    self.constant_hole(&mut t);
                    t.text(") x = x ");
                    self.choice_hole(&mut t, &INT_OPS);
                    t.text(" b; else x = x ");
                    self.choice_hole(&mut t, &INT_OPS);
                    t.text(" ");
                    self.constant_hole(&mut t);
                    t.text(";\n");
                }
                2 => {
                    t.text("  x ^= x >> ");
                    self.choice_hole(&mut t, &["1", "2", "3", "4", "5", "7"]);
                    t.text(";\n");
                }
                3 => {
                    t.text("  for (int i = 0; i < (int)(b & 7); i++) x += ");
                    self.const_array_hole(&mut t);
                    t.text("[i & 3] * ");
                    self.constant_hole(&mut t);
                    t.text(";\n");
                }
                4 => {
                    t.text("  ");
                    self.mutable_array_hole(&mut t);
                    t.text("[(unsigned long)a & 7] += (int)x;\n  x += ");
                    self.mutable_array_hole(&mut t);
                    t.text("[((unsigned long)b + 1) & 7];\n");
                }
                5 => {
                    let owned = self.globals.clone();
                    let globals: Vec<&str> = owned.iter().map(String::as_str).collect();
                    t.text("  ");
                    self.choice_hole(&mut t, &globals);
                    t.text(" += (long)x;\n  x = x ");
                    self.choice_hole(&mut t, &INT_OPS);
                    t.text(" (");
                    t.reuse(ty);
                    t.text(")");
                    self.choice_hole(&mut t, &globals);
                    t.text(";\n");
                }
                6 if !self.callees.is_empty() => {
                    let callees = self.callees.clone();
                    let callees: Vec<&str> = callees.iter().map(String::as_str).collect();
                    t.text("  x = (");
                    t.reuse(ty);
                    t.text(")(x + ");
                    self.choice_hole(&mut t, &callees);
                    t.text("((long)x, b));\n");
                }
                7 | 8 => self.switch_statement(&mut t, ty),
                _ => {
                    t.text("  x += (");
                    t.reuse(ty);
                    t.text(")");
                    let literal = self.string_hole(&mut t);
                    t.text("[(unsigned long)b % (sizeof ");
                    t.reuse(literal);
                    t.text(" - 1)];\n");
                }
            }
        }
        t.text("  return (long)x;\n");
        t
    }

    /// A switch dense enough for a jump table, every case a different statement.
    fn switch_statement(&mut self, t: &mut Template, ty: usize) {
        let cases = self.rng.range(5, 11);
        t.text("  switch ((unsigned long)x % ");
        t.text(&(cases + 1).to_string());
        t.text(") {\n");
        for case in 0..cases {
            t.text(&format!("  case {case}: "));
            match self.rng.below(5) {
                0 => {
                    t.text("x = x * ");
                    self.constant_hole(t);
                    t.text(" + (");
                    t.reuse(ty);
                    t.text(")b; break;\n");
                }
                1 => {
                    t.text("x ^= ");
                    self.constant_hole(t);
                    t.text("; break;\n");
                }
                2 => {
                    t.text("x = (");
                    t.reuse(ty);
                    t.text(")(b - ");
                    self.constant_hole(t);
                    t.text("); break;\n");
                }
                3 => {
                    t.text("x += ");
                    self.constant_hole(t);
                    t.text("; x <<= 1; break;\n");
                }
                _ => {
                    t.text("x = x / 3 + ");
                    self.constant_hole(t);
                    t.text("; break;\n");
                }
            }
        }
        t.text("  default: x = x - 1; break;\n  }\n");
    }

    /// `double f(double v)` computing in float or double.
    fn float_template(&mut self) -> Template {
        let mut t = Template::default();
        let float_constant = |rng: &mut Rng| format!("{:.2}", rng.range(-40, 40) as f64 / 4.0);
        let constant = |t: &mut Template, rng: &mut Rng| {
            let value = float_constant(rng);
            let other = float_constant(rng);
            t.hole(value, vec![other]);
        };
        t.text("  ");
        let ty = self.choice_hole(&mut t, &["float", "double"]);
        t.text(" y = (");
        t.reuse(ty);
        t.text(")v * ");
        constant(&mut t, &mut self.rng);
        t.text(";\n  y = y ");
        self.choice_hole(&mut t, &["+", "-", "*"]);
        t.text(" ");
        constant(&mut t, &mut self.rng);
        t.text(";\n  if (y ");
        self.choice_hole(&mut t, &COMPARISONS);
        t.text(" ");
        constant(&mut t, &mut self.rng);
        t.text(") y = y * ");
        constant(&mut t, &mut self.rng);
        t.text("; else y = y - ");
        constant(&mut t, &mut self.rng);
        t.text(";\n  return (double)y + ");
        constant(&mut t, &mut self.rng);
        t.text(";\n");
        t
    }

    /// `void f(long a)` printing a string literal and a number.
    fn log_template(&mut self) -> Template {
        let mut t = Template::default();
        let text = self.string_literal();
        let changed = format!("{}{}", &text[..text.len() - 1], "Q");
        t.text("  printf(\"");
        t.hole(text, vec![changed]);
        t.text(" %ld\\n\", (long)(a ");
        self.choice_hole(&mut t, &INT_OPS);
        t.text(" ");
        self.constant_hole(&mut t);
        t.text("));\n");
        t
    }

    /// `long f(long a, long b)` reading a word placed in its own code by
    /// inline assembly (data in code: the lifter must not skip it).
    fn data_in_code_template(&mut self) -> Template {
        let mut t = Template::default();
        t.text("  long v;\n  __asm__ volatile(\"");
        t.text(match self.arch {
            Arch::X86_64 => "lea 1f(%%rip), %0\\n\\tjmp 2f\\n1:\\t.long ",
            Arch::Aarch64 => "adr %0, 1f\\n\\tb 2f\\n1:\\t.word ",
        });
        self.constant_hole(&mut t);
        t.text("\\n2:\" : \"=r\"(v));\n  return (long)*(const int *)v * ");
        self.constant_hole(&mut t);
        t.text(" + a - b;\n");
        t
    }

    fn member_count(&mut self) -> usize {
        self.rng.range(3, 8) as usize
    }

    /// What member `member` of a family refers to: the family's `default`,
    /// or now and then (never for the first member) one of `alternatives`,
    /// so that most members fold and a few must not.
    fn member_target<T: Clone>(&mut self, member: usize, default: &T, alternatives: &[T]) -> T {
        if member > 0 && self.rng.chance(30) {
            self.rng.pick(alternatives).clone()
        } else {
            default.clone()
        }
    }

    /// Places a definition in `unit`, defining there any file-local array it reads.
    fn place(&mut self, unit: usize, definition: &str) {
        for local in &self.local_arrays {
            if definition.contains(&format!("{}[", local.name))
                && self.units[unit].locals_defined.insert(local.name.clone())
            {
                let values: Vec<String> = local.values.iter().map(i32::to_string).collect();
                let _ = writeln!(
                    self.units[unit].prelude,
                    "static const int {}[{}] = {{{}}};",
                    local.name,
                    local.values.len(),
                    values.join(", ")
                );
            }
        }
        self.units[unit].body.push_str(definition);
        self.functions += 1;
    }

    /// Records that `unit` defines the C function `name` (in `.text.fzhot`
    /// when `hot`), for [`Program::own_sections`].
    fn record_function(&mut self, unit: usize, name: &str, hot: bool) {
        let own = self.units[unit].function_sections && !hot;
        self.own_sections.insert(name.to_string(), own);
    }

    fn int_arguments(&mut self) -> Vec<(i64, i64)> {
        let mut inputs: Vec<(i64, i64)> = INT_INPUTS.to_vec();
        let keep = 3;
        while inputs.len() > keep {
            let drop = self.rng.below(inputs.len());
            inputs.remove(drop);
        }
        inputs
    }

    /// The statements of `main` that call `name` and print what it returns.
    fn call_in_main(&mut self, signature: Signature, name: &str, inputs: &[(i64, i64)]) {
        match signature {
            Signature::Int => {
                for (a, b) in inputs {
                    let _ = writeln!(
                        self.main_body,
                        "  printf(\"{name} {a} {b} -> %ld\\n\", {name}({a}L, {b}L));"
                    );
                }
            }
            Signature::Float => {
                for (index, _) in inputs.iter().enumerate() {
                    let input = FLOAT_INPUTS[index % FLOAT_INPUTS.len()];
                    let _ = writeln!(
                        self.main_body,
                        "  printf(\"{name} {input} -> %.17g\\n\", {name}({input}));"
                    );
                }
            }
            Signature::Log => {
                for (a, _) in inputs.iter().take(2) {
                    let _ = writeln!(self.main_body, "  {name}({a}L);");
                }
            }
        }
    }

    /// A family of functions rendered from one template.
    fn template_family(&mut self, family: usize, signature: Signature, template: &Template) {
        let members = self.member_count();
        let inputs = self.int_arguments();
        let observed = self.rng.chance(25);
        let hot_family = self.config.linker_script && self.rng.chance(35);
        let mut callable = Vec::new();
        let mut infos = Vec::new();
        for member in 0..members {
            let name = format!("{}{family}_{member}", signature.prefix());
            let unit = self.random_linked_unit();
            let mutation = if member > 0 && self.rng.chance(25) {
                template.random_mutation(&mut self.rng)
            } else {
                None
            };
            let linkage = match self.rng.below(100) {
                0..=11 => Linkage::Static,
                12..=23 => Linkage::Weak,
                _ => Linkage::Global,
            };
            let hot = linkage != Linkage::Static && hot_family && self.rng.chance(50);
            let align = if linkage != Linkage::Static && self.rng.chance(12) {
                Some(1u32 << self.rng.range(4, 8))
            } else {
                None
            };
            let mut attributes = String::from("__attribute__((noinline");
            if linkage == Linkage::Weak {
                attributes.push_str(", weak");
            }
            if let Some(align) = align {
                let _ = write!(attributes, ", aligned({align})");
            }
            if hot {
                // The linker script moves this section to another output section.
                attributes.push_str(", section(\".text.fzhot\")");
            }
            attributes.push_str(")) ");
            let storage = if linkage == Linkage::Static {
                "static "
            } else {
                ""
            };
            let body = template.render(mutation);
            let definition = format!(
                "{storage}{attributes}{} {{\n{body}}}\n",
                signature.declare(&name)
            );
            self.place(unit, &definition);
            self.record_function(unit, &name, hot);
            let mut info = MemberInfo {
                name: name.clone(),
                own_section: self.units[unit].function_sections && !hot,
                variant: mutation.is_some(),
                overridden: false,
                align,
                place: None,
            };
            let called = if linkage == Linkage::Static {
                // A global wrapper calls it; the wrappers of equal statics are equal too.
                let wrapper = format!("w_{name}");
                let (arguments, call) = match signature {
                    Signature::Int => ("long a, long b", format!("{name}(a, b)")),
                    Signature::Float => ("double v", format!("{name}(v)")),
                    Signature::Log => ("long a", format!("{name}(a)")),
                };
                let (result, ret) = match signature {
                    Signature::Int => ("long", "return "),
                    Signature::Float => ("double", "return "),
                    Signature::Log => ("void", ""),
                };
                let wrapper_definition = format!(
                    "__attribute__((noinline)) {result} {wrapper}({arguments}) {{ {ret}{call}; }}\n"
                );
                self.place(unit, &wrapper_definition);
                self.record_function(unit, &wrapper, false);
                wrapper
            } else {
                name.clone()
            };
            let _ = writeln!(self.header, "{};", signature.declare(&called));
            if linkage == Linkage::Weak && self.rng.chance(45) {
                // A strong definition elsewhere (perhaps in an archive member
                // the link never extracts) with another body.
                let override_mutation = template.random_mutation(&mut self.rng);
                let body = template.render(override_mutation);
                let target = match self.unreferenced_unit {
                    Some(unused) if self.rng.chance(40) => unused,
                    _ => self.random_linked_unit(),
                };
                if target != unit {
                    // The override declares what main checks of the name
                    // (alignment, output section): whichever definition
                    // the link takes, the check holds by declaration, not
                    // by chance.
                    let mut attributes = String::from("__attribute__((noinline");
                    if let Some(align) = align {
                        let _ = write!(attributes, ", aligned({align})");
                    }
                    if hot {
                        attributes.push_str(", section(\".text.fzhot\")");
                    }
                    let definition =
                        format!("{attributes})) {} {{\n{body}}}\n", signature.declare(&name));
                    self.place(target, &definition);
                    info.overridden = true;
                }
            }
            if hot {
                let _ = writeln!(
                    self.main_body,
                    "  printf(\"hot {name} %d\\n\", fz_between((void *){name}, fzhot_start, fzhot_end));"
                );
            }
            if let Some(align) = align {
                let _ = writeln!(
                    self.main_body,
                    "  printf(\"align {name} {align} %d\\n\", fz_aligned((void *){name}, {align}));"
                );
            }
            if linkage != Linkage::Static && self.config.export_dynamic && self.rng.chance(30) {
                let _ = writeln!(
                    self.main_body,
                    "  printf(\"dlsym {name} %d\\n\", dlsym(RTLD_DEFAULT, \"{name}\") == (void *){name});"
                );
            }
            self.call_in_main(signature, &called, &inputs);
            callable.push((called, linkage));
            infos.push(info);
        }
        self.family_info.push(FamilyInfo {
            kind: FamilyKind::Template {
                switch: template.has_switch(),
            },
            members: infos,
        });
        if let Some(unused) = self.unreferenced_unit
            && self.rng.chance(40)
        {
            let name = format!("u{}{family}", signature.prefix());
            let body = template.render(None);
            let definition = format!(
                "__attribute__((noinline)) {} {{\n{body}}}\n",
                signature.declare(&name)
            );
            self.place(unused, &definition);
        }
        if observed {
            self.observe_addresses(signature, family, &callable);
        }
        if signature == Signature::Int {
            self.callees
                .extend(callable.into_iter().map(|(name, _)| name));
        }
    }

    /// Compares the addresses of a family's members (safe mode only) and
    /// calls them through a table of pointers in data.
    fn observe_addresses(
        &mut self,
        signature: Signature,
        family: usize,
        members: &[(String, Linkage)],
    ) {
        let names: Vec<&str> = members.iter().map(|(name, _)| name.as_str()).collect();
        let pointer_type = match signature {
            Signature::Int => "long (*volatile fpt{family}[])(long, long)",
            Signature::Float => "double (*volatile fpt{family}[])(double)",
            Signature::Log => "void (*volatile fpt{family}[])(long)",
        }
        .replace("{family}", &family.to_string());
        let unit = self.random_linked_unit();
        let _ = writeln!(
            self.units[unit].body,
            "{pointer_type} = {{{}}};",
            names.join(", ")
        );
        let declaration = pointer_type.replace("[]", &format!("[{}]", names.len()));
        let _ = writeln!(self.header, "extern {declaration};");
        // --keep-unique on one of them, where the linker knows the option.
        let keep =
            if matches!(self.config.linker, Linker::Gold | Linker::Lld) && self.rng.chance(30) {
                let chosen = names[self.rng.below(names.len())].to_string();
                self.keep_unique.push(chosen.clone());
                Some(chosen)
            } else {
                None
            };
        for i in 0..names.len() {
            for j in i + 1..names.len() {
                let kept_unique =
                    keep.as_deref() == Some(names[i]) || keep.as_deref() == Some(names[j]);
                let prefix = if kept_unique {
                    "ku "
                } else {
                    FUNCTION_ADDRESS_PREFIX
                };
                let _ = writeln!(
                    self.main_body,
                    "  printf(\"{prefix}{} {} %d\\n\", (void *)fpt{family}[{i}] == (void *)fpt{family}[{j}]);",
                    names[i], names[j]
                );
                if self.config.export_dynamic && j == i + 1 {
                    let _ = writeln!(
                        self.main_body,
                        "  printf(\"{prefix}dlsym {0} {1} %d\\n\", dlsym(RTLD_DEFAULT, \"{0}\") == dlsym(RTLD_DEFAULT, \"{1}\"));",
                        names[i], names[j]
                    );
                }
            }
            let call = match signature {
                Signature::Int => {
                    format!("printf(\"via fpt{family}[{i}] -> %ld\\n\", fpt{family}[{i}](3L, 4L));")
                }
                Signature::Float => {
                    format!("printf(\"via fpt{family}[{i}] -> %.17g\\n\", fpt{family}[{i}](2.5));")
                }
                Signature::Log => format!("fpt{family}[{i}](11L);"),
            };
            let _ = writeln!(self.main_body, "  {call}");
        }
    }

    /// `const int *p(void)` returning a place in a const array, often one
    /// past its end; mutations return the same place of its twin, the start
    /// of its neighbour, or another index.
    fn pointer_family(&mut self, family: usize) {
        let group = self.rng.below(self.const_arrays.len());
        let arrays = self.const_arrays[group].clone();
        let len = arrays.base.values.len();
        let index = if self.rng.chance(50) {
            len
        } else {
            self.rng.below(len)
        };
        let default = (arrays.base.name.clone(), index);
        let alternatives = [
            (arrays.neighbour.name.clone(), 0),
            (arrays.twin.name.clone(), index),
            (arrays.base.name.clone(), (index + 1) % (len + 1)),
        ];
        let members = self.member_count();
        let mut returned = Vec::new();
        let mut infos = Vec::new();
        for member in 0..members {
            let name = format!("p{family}_{member}");
            let (array, index) = self.member_target(member, &default, &alternatives);
            let unit = self.random_linked_unit();
            infos.push(MemberInfo {
                name: name.clone(),
                own_section: self.units[unit].function_sections,
                variant: (array.as_str(), index) != (default.0.as_str(), default.1),
                overridden: false,
                align: None,
                place: Some((array.clone(), index, index == len)),
            });
            let definition = format!(
                "__attribute__((noinline)) const int *{name}(void) {{ return &{array}[{index}]; }}\n"
            );
            self.place(unit, &definition);
            self.record_function(unit, &name, false);
            let _ = writeln!(self.header, "const int *{name}(void);");
            let read = if index == len { -1 } else { 0 };
            let _ = writeln!(
                self.main_body,
                "  {{ const int *p = {name}(); printf(\"pd {name} %ld %d\\n\", (long)(p - {array}), p[{read}]); }}"
            );
            returned.push((name, index < len));
        }
        self.family_info.push(FamilyInfo {
            kind: FamilyKind::Pointer,
            members: infos,
        });
        // Data addresses never merge: compare the in-bounds ones in both modes.
        let inside: Vec<&String> = returned
            .iter()
            .filter(|(_, inside)| *inside)
            .map(|(name, _)| name)
            .collect();
        for pair in inside.windows(2) {
            let _ = writeln!(
                self.main_body,
                "  printf(\"dp {0} {1} %d\\n\", {0}() == {1}());",
                pair[0], pair[1]
            );
        }
    }

    /// `int *m(void)` returning a place in a mutable array that `main` writes through.
    fn mutable_pointer_family(&mut self, family: usize) {
        let group = self.rng.below(self.mutable_arrays.len());
        let arrays = self.mutable_arrays[group].clone();
        let index = self.rng.below(8);
        let default = (arrays.base.name.clone(), index);
        let alternatives = [
            (arrays.neighbour.name.clone(), index),
            (arrays.twin.name.clone(), index),
            (arrays.base.name.clone(), (index + 3) % 8),
        ];
        let members = self.member_count();
        for member in 0..members {
            let name = format!("m{family}_{member}");
            let (array, index) = self.member_target(member, &default, &alternatives);
            let unit = self.random_linked_unit();
            let definition = format!(
                "__attribute__((noinline)) int *{name}(void) {{ return &{array}[{index}]; }}\n"
            );
            self.place(unit, &definition);
            self.record_function(unit, &name, false);
            let _ = writeln!(self.header, "int *{name}(void);");
            let _ = writeln!(
                self.main_body,
                "  {{ int *p = {name}(); *p += {}; printf(\"mp {name} %ld\\n\", (long)(p - {array})); }}",
                member + 1
            );
        }
    }

    /// `fz_fn r(void)` returning the address of a callee; `main` calls it
    /// and checks it is that callee (true in both modes).
    fn function_returning_family(&mut self, family: usize) {
        if self.callees.len() < 2 {
            let template = self.int_template();
            self.template_family(family, Signature::Int, &template);
            return;
        }
        let default = self.rng.pick(&self.callees).clone();
        let other = self.rng.pick(&self.callees).clone();
        let members = self.member_count();
        for member in 0..members {
            let name = format!("r{family}_{member}");
            let callee = if member > 0 && self.rng.chance(30) {
                other.clone()
            } else {
                default.clone()
            };
            let unit = self.random_linked_unit();
            let definition =
                format!("__attribute__((noinline)) fz_fn {name}(void) {{ return {callee}; }}\n");
            self.place(unit, &definition);
            self.record_function(unit, &name, false);
            let _ = writeln!(self.header, "fz_fn {name}(void);");
            let _ = writeln!(
                self.main_body,
                "  {{ fz_fn p = {name}(); printf(\"fr {name} %ld %d\\n\", p(3L, 4L), p == {callee}); }}"
            );
        }
    }

    /// Functions in top-level assembly where a `head` symbol falls through
    /// into the next function without a jump: folding the body away breaks
    /// the head.
    fn fall_through_family(&mut self, family: usize) {
        let constants: [i64; 4] = [
            self.rng.range(1, 4000),
            self.rng.range(1, 60000),
            self.rng.range(1, 60000),
            self.rng.range(1, 4000),
        ];
        let members = self.member_count();
        let inputs = self.int_arguments();
        let section = if self.rng.chance(50) {
            ".text".to_string()
        } else {
            format!(".text.fzasm{family},\\\"ax\\\",%progbits")
        };
        for member in 0..members {
            let name = format!("f{family}_{member}");
            let mut values = constants;
            if member > 0 && self.rng.chance(25) {
                let which = self.rng.below(3);
                values[which] += 1;
            }
            let head = if self.rng.chance(45) {
                Some(format!("fth{family}_{member}"))
            } else {
                None
            };
            let unit = self.random_linked_unit();
            let mut asm = String::new();
            let _ = writeln!(asm, "__asm__(\".pushsection {section}\\n\"");
            let _ = writeln!(asm, "\"  .p2align 4\\n\"");
            if let Some(head) = &head {
                let _ = writeln!(
                    asm,
                    "\"  .globl {head}\\n  .type {head}, %function\\n{head}:\\n\""
                );
                let _ = writeln!(
                    asm,
                    "\"  {}\\n\"",
                    match self.arch {
                        Arch::X86_64 => format!("add ${}, %rdi", values[3]),
                        Arch::Aarch64 => format!("add x0, x0, #{}", values[3]),
                    }
                );
            }
            let _ = writeln!(
                asm,
                "\"  .globl {name}\\n  .type {name}, %function\\n{name}:\\n\""
            );
            let body = match self.arch {
                Arch::X86_64 => format!(
                    "lea {}(%rdi), %rax\\n  imul ${}, %rax, %rax\\n  xor ${}, %rax\\n  add %rsi, %rax\\n  ret",
                    values[0], values[1], values[2]
                ),
                Arch::Aarch64 => format!(
                    "add x0, x0, #{}\\n  mov x9, #{}\\n  mul x0, x0, x9\\n  mov x9, #{}\\n  eor x0, x0, x9\\n  add x0, x0, x1\\n  ret",
                    values[0], values[1], values[2]
                ),
            };
            let _ = writeln!(asm, "\"  {body}\\n\"");
            let _ = writeln!(asm, "\"  .size {name}, .-{name}\\n\"");
            if let Some(head) = &head {
                let _ = writeln!(asm, "\"  .size {head}, {name}-{head}\\n\"");
            }
            let _ = writeln!(asm, "\"  .popsection\\n\");");
            self.place(unit, &asm);
            let _ = writeln!(self.header, "{};", Signature::Int.declare(&name));
            self.call_in_main(Signature::Int, &name, &inputs);
            if let Some(head) = head {
                let _ = writeln!(self.header, "{};", Signature::Int.declare(&head));
                self.call_in_main(Signature::Int, &head, &inputs);
                self.callees.push(head);
            }
            self.callees.push(name);
        }
    }

    fn finish(mut self, seed: u64) -> Program {
        let mut config = self.config.clone();
        config.keep_unique = std::mem::take(&mut self.keep_unique);
        let mut header = String::from(
            "/* Generated by cargo xtask fuzz. */\n#ifndef FZ_H\n#define FZ_H\ntypedef long (*fz_fn)(long, long);\n",
        );
        header.push_str(&self.header);
        header.push_str("#endif\n");
        let mut main_text = String::new();
        let _ = writeln!(main_text, "  long fz_total = 0;");
        for arrays in &self.mutable_arrays {
            for array in [&arrays.base, &arrays.twin, &arrays.neighbour] {
                let _ = writeln!(
                    main_text,
                    "  fz_total += fz_sum({0}, 8); printf(\"sum {0} %ld\\n\", fz_sum({0}, 8));",
                    array.name
                );
            }
        }
        for global in &self.globals {
            let _ = writeln!(
                main_text,
                "  fz_total += {global}; printf(\"global {global} %ld\\n\", {global});"
            );
        }
        let main_function = format!(
            "extern char fzhot_start[], fzhot_end[];\n\
             static __attribute__((noinline)) int fz_between(void *p, char *start, char *end) {{\n  return (char *)p >= start && (char *)p < end;\n}}\n\
             static __attribute__((noinline)) int fz_aligned(void *p, unsigned long align) {{\n  return ((unsigned long)p & (align - 1)) == 0;\n}}\n\
             static __attribute__((noinline)) long fz_sum(const int *p, int n) {{\n  long s = 0;\n  for (int i = 0; i < n; i++) s = s * 31 + p[i];\n  return s;\n}}\n\
             int main(void) {{\n  setvbuf(stdout, NULL, _IOLBF, 0); /* a crash keeps the lines before it */\n{}{}  return (int)(fz_total & 63);\n}}\n",
            self.main_body, main_text
        );
        let mut files = Vec::new();
        for (index, unit) in self.units.iter().enumerate() {
            let mut text = String::from(
                "/* Generated by cargo xtask fuzz. */\n#define _GNU_SOURCE\n#include <stdio.h>\n#include <dlfcn.h>\n#include \"fz.h\"\n",
            );
            text.push_str(&unit.prelude);
            text.push_str(&unit.body);
            if index == 0 {
                text.push_str(&main_function);
            }
            files.push(SourceFile {
                name: unit.name.clone(),
                text,
                in_archive: unit.in_archive,
                function_sections: unit.function_sections,
                data_sections: unit.data_sections,
            });
        }
        Program {
            seed,
            config,
            header,
            files,
            linker_script: self.config.linker_script.then(|| {
                "SECTIONS {\n  .fzhot : { fzhot_start = .; *(.text.fzhot) fzhot_end = .; }\n}\nINSERT AFTER .text;\n"
                    .to_string()
            }),
            families: self.families,
            functions: self.functions,
            family_info: self.family_info,
            own_sections: self.own_sections,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEEDS: std::ops::Range<u64> = 0..200;

    /// The program's texts and configuration, as one string to compare.
    fn rendered(program: &Program) -> String {
        let mut text = format!("{:?}\n{}", program.config, program.header);
        for file in &program.files {
            let _ = write!(
                text,
                "\n// {} {} {} {}\n{}",
                file.name, file.in_archive, file.function_sections, file.data_sections, file.text
            );
        }
        text
    }

    /// Whether the brackets of C `text` balance, string and character
    /// literals and comments aside.
    fn brackets_balance(text: &str) -> bool {
        let mut open = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' | '\'' => {
                    while let Some(d) = chars.next() {
                        if d == '\\' {
                            chars.next();
                        } else if d == c {
                            break;
                        }
                    }
                }
                '/' if chars.peek() == Some(&'*') => {
                    let mut last = ' ';
                    for d in chars.by_ref() {
                        if last == '*' && d == '/' {
                            break;
                        }
                        last = d;
                    }
                }
                '(' | '[' | '{' => open.push(c),
                ')' | ']' | '}' => {
                    let expected = match c {
                        ')' => '(',
                        ']' => '[',
                        _ => '{',
                    };
                    if open.pop() != Some(expected) {
                        return false;
                    }
                }
                _ => {}
            }
        }
        open.is_empty()
    }

    #[test]
    fn a_seed_gives_one_program() {
        for seed in [0, 1, 77, 199] {
            let arch = arch_for_seed(seed);
            assert_eq!(
                rendered(&generate(seed, arch)),
                rendered(&generate(seed, arch)),
                "seed {seed}"
            );
        }
        assert_ne!(
            rendered(&generate(1, Arch::X86_64)),
            rendered(&generate(2, Arch::X86_64))
        );
    }

    #[test]
    fn the_seeds_cover_both_architectures_and_every_linker() {
        let mut seen = BTreeSet::new();
        for seed in SEEDS {
            let arch = arch_for_seed(seed);
            seen.insert((arch.name(), generate(seed, arch).config.linker));
        }
        for linker in [Linker::Bfd, Linker::Gold, Linker::Lld, Linker::Mold] {
            assert!(seen.contains(&("x86_64", linker)), "x86_64 {linker:?}");
        }
        for linker in [Linker::Bfd, Linker::Lld] {
            assert!(seen.contains(&("aarch64", linker)), "aarch64 {linker:?}");
        }
    }

    #[test]
    fn every_configuration_is_one_its_linker_can_build() {
        for seed in SEEDS {
            for arch in [Arch::X86_64, Arch::Aarch64] {
                let config = generate(seed, arch).config;
                let context = format!("seed {seed} {}: {config:?}", arch.name());
                if arch == Arch::Aarch64 {
                    assert!(
                        matches!(config.linker, Linker::Bfd | Linker::Lld),
                        "{context}"
                    );
                }
                if config.linker_script {
                    assert!(
                        matches!(config.linker, Linker::Bfd | Linker::Lld),
                        "{context}"
                    );
                }
                if !config.keep_unique.is_empty() {
                    assert!(
                        matches!(config.linker, Linker::Gold | Linker::Lld),
                        "{context}"
                    );
                }
                // gold fails on `-q` with `--gc-sections`; mold on `-q`
                // with DWARF naming dropped sections.
                if config.gc_sections && config.linker == Linker::Gold {
                    assert!(!config.keep_relocs, "{context}");
                }
                let debug = config.extra_cflags.iter().any(|flag| flag == "-g");
                if config.gc_sections && config.linker == Linker::Mold {
                    assert!(!(debug && config.keep_relocs), "{context}");
                }
            }
        }
    }

    #[test]
    fn every_program_is_whole() {
        for seed in SEEDS {
            let program = generate(seed, arch_for_seed(seed));
            let context = format!("seed {seed}");
            assert!(program.functions > 0 && program.families > 0, "{context}");
            assert!(
                program.files[0].text.contains("int main(void) {"),
                "{context}"
            );
            assert!(brackets_balance(&program.header), "{context}: fz.h");
            for file in &program.files {
                assert!(file.name.ends_with(".c"), "{context}: {}", file.name);
                assert!(brackets_balance(&file.text), "{context}: {}", file.name);
            }
            // What `plant.rs` picks wrong folds from names functions the
            // program defines.
            let defined = |name: &str| {
                program
                    .files
                    .iter()
                    .any(|file| file.text.contains(&format!("{name}(")))
            };
            for member in program.family_info.iter().flat_map(|f| &f.members) {
                assert!(defined(&member.name), "{context}: {}", member.name);
            }
            for name in program.own_sections.keys() {
                assert!(defined(name), "{context}: {name}");
            }
            for name in &program.config.keep_unique {
                assert!(defined(name), "{context}: --keep-unique {name}");
            }
        }
    }
}
