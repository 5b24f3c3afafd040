//! `icf report BINARY` against reality: what the report on a linked binary
//! estimates, checked against what folding the binary's own objects would
//! do (`icf report OBJECTS`, the same analysis and plan `icf link` makes).
//!
//! Fixture programs with identical functions (address-taken twins,
//! function-pointer tables, C++ vtables, templates and exceptions, static
//! functions of one name in several objects, an exported pair) are compiled
//! by gcc and clang-19 for x86-64 and AArch64 (`-O2 -ffunction-sections`),
//! linked plainly by the compiler driver in several flavours (PIE, non-PIE,
//! non-PIE with `-Wl,-q`, a shared library where the program is shaped like
//! one, and a stripped PIE), and reported on in safe and all mode. For each
//! binary report:
//!
//! 1. **No invented fold**: every class the binary's report folds lies
//!    inside one class of the objects' report (members matched by symbol
//!    name, aliases of one place such as a destructor's `D1`/`D2` taken for
//!    one name, as often as each name occurs; a stripped binary's unnamed
//!    members, `sub_ADDR`, are named through the unstripped link's symbols
//!    at the same address). Functions the program's objects do not define
//!    (the C runtime's `_start`, `frame_dummy`, …) have nothing to be
//!    checked against and are left out of the classes they are in.
//! 2. **Safe mode agrees on addresses**: a function that the objects' safe
//!    report keeps or turns into a thunk because its address is
//!    significant is no alias in the binary's safe report (counted per
//!    name: of three static `checksum`s, one significant, at most two may
//!    be aliases).
//! 3. **The estimate is close**: the bytes of the program's code the
//!    binary's report saves against those the objects' report saves, within
//!    each program's [`Tolerance`], which says why it is not [`EXACT`].
//!
//! Also: a stripped binary's report saves no more than the unstripped one,
//! and bad binaries are clear errors naming the file.
//!
//! `cargo test -p icf-cli --test report_binary -- --nocapture` prints the
//! figures of every combination.

use icf_fixtures::{Arch, Build, Compiler};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _, SymbolKind};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// How a program is linked.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Flavour {
    Pie,
    NoPie,
    /// Non-PIE with `--emit-relocs`: the image keeps the relocations of
    /// its data (and code), which the reader takes over the scan for words
    /// that look like function addresses.
    NoPieKeptRelocs,
    SharedLibrary,
    /// The PIE with `llvm-strip-19 --strip-all`: function boundaries from
    /// `.eh_frame`, no names.
    StrippedPie,
}

impl Flavour {
    /// The code model the objects are compiled with.
    fn code_model(self) -> &'static str {
        match self {
            Flavour::Pie | Flavour::StrippedPie => "-fPIE",
            Flavour::NoPie | Flavour::NoPieKeptRelocs => "-fno-PIE",
            Flavour::SharedLibrary => "-fPIC",
        }
    }

    fn link_flags(self) -> &'static [&'static str] {
        match self {
            Flavour::Pie | Flavour::StrippedPie => &["-pie"],
            Flavour::NoPie => &["-no-pie"],
            Flavour::NoPieKeptRelocs => &["-no-pie", "-Wl,-q"],
            Flavour::SharedLibrary => &["-shared"],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Flavour::Pie => "pie",
            Flavour::NoPie => "no-pie",
            Flavour::NoPieKeptRelocs => "no-pie-q",
            Flavour::SharedLibrary => "shared",
            Flavour::StrippedPie => "stripped-pie",
        }
    }
}

/// What a program can be linked into.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// It has `main`.
    Executable,
    /// It has no `main` and exports functions.
    Library,
}

impl Shape {
    fn flavours(self) -> &'static [Flavour] {
        match self {
            Shape::Executable => &[
                Flavour::Pie,
                Flavour::NoPie,
                Flavour::NoPieKeptRelocs,
                Flavour::StrippedPie,
            ],
            Shape::Library => &[Flavour::SharedLibrary],
        }
    }
}

/// How far the binary's estimate may stray from the objects' saving, in
/// bytes of code, and why. Each program says it per compiler, architecture and
/// flavour; where nothing differs, [`EXACT`]: the binary's function is
/// its object's section, byte for byte (the linker's padding between
/// functions lies outside every symbol and FDE), so a fold found in both
/// saves the same bytes.
#[derive(Copy, Clone, Debug)]
struct Tolerance {
    /// Functions whose classes the binary may fold less or not at all:
    /// the binary may save less by up to what the objects' classes holding
    /// them save.
    missable: &'static [&'static str],
    /// The binary may save this many bytes more than the objects.
    above: u64,
    why: &'static str,
}

/// The same bytes: every fold of the objects is found in the binary, and
/// none more.
const EXACT: Tolerance = Tolerance {
    missable: &[],
    above: 0,
    why: "the same folds",
};

/// The size of the jump a thunk is (x86-64 `jmp rel32`, AArch64 `b`).
const fn jump(arch: Arch) -> u64 {
    match arch {
        Arch::X86_64 => 5,
        Arch::Aarch64 => 4,
    }
}

/// One fixture program.
struct Program {
    name: &'static str,
    /// Sources under `fixtures/`.
    sources: &'static [&'static str],
    cxx: bool,
    shape: Shape,
    /// How close the estimate must be.
    tolerance: fn(Compiler, Arch, Flavour) -> Tolerance,
}

const COMPILERS: [Compiler; 2] = [Compiler::Gcc, Compiler::Clang];
const MODES: [&str; 2] = ["safe", "all"];

/// One member of a report's class.
#[derive(Clone, Debug)]
struct Member {
    /// The raw symbol name, or `section+offset` for an unnamed function.
    symbol: String,
    action: String,
    reason: Option<String>,
}

impl Member {
    /// Whether the member keeps its own address because the address is
    /// significant (taken, referenced from data, exported, in `.llvm_addrsig`).
    fn keeps_a_significant_address(&self) -> bool {
        matches!(self.action.as_str(), "thunk" | "keep")
            && self.reason.as_deref().is_some_and(|reason| {
                [
                    "address taken",
                    "referenced from data",
                    "address-significant",
                    "address is significant",
                    "exported",
                ]
                .iter()
                .any(|why| reason.starts_with(why))
            })
    }
}

/// A class of identical candidates.
#[derive(Clone, Debug)]
struct Class {
    kind: String,
    /// The bytes the class saves.
    saved: u64,
    members: Vec<Member>,
}

/// What the checks read of a JSON report.
#[derive(Clone, Debug)]
struct Report {
    saved_code_bytes: u64,
    classes: Vec<Class>,
}

impl Report {
    /// Members named by their address (`sub_ADDR`): functions no symbol
    /// names.
    fn unnamed_members(&self) -> Vec<&str> {
        self.classes
            .iter()
            .flat_map(|class| &class.members)
            .map(|member| member.symbol.as_str())
            .filter(|symbol| symbol.starts_with("sub_"))
            .collect()
    }

    fn parse(stdout: &[u8], context: &str) -> Report {
        let json: Value = serde_json::from_slice(stdout)
            .unwrap_or_else(|e| panic!("{context}: the report is not JSON: {e}"));
        let saved_code_bytes = json["totals"]["saved_code_bytes"]
            .as_u64()
            .unwrap_or_else(|| panic!("{context}: no totals.saved_code_bytes"));
        let text = |value: &Value| value.as_str().map(str::to_string);
        let classes = json["groups"]
            .as_array()
            .unwrap_or_else(|| panic!("{context}: no groups"))
            .iter()
            .map(|group| Class {
                kind: text(&group["kind"]).unwrap_or_default(),
                saved: group["saved"].as_u64().unwrap_or_default(),
                members: group["members"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|member| Member {
                        symbol: text(&member["symbol"]).unwrap_or_default(),
                        action: text(&member["action"]).unwrap_or_default(),
                        reason: text(&member["reason"]),
                    })
                    .collect(),
            })
            .collect();
        Report {
            saved_code_bytes,
            classes,
        }
    }

    /// Bytes of code saved by the classes all of whose members satisfy
    /// `named`: the classes of the program's own functions.
    fn saved_code_bytes_where(&self, named: impl Fn(&str) -> bool) -> u64 {
        self.classes
            .iter()
            .filter(|class| class.kind == "code")
            .filter(|class| class.members.iter().all(|m| named(&m.symbol)))
            .map(|class| class.saved)
            .sum()
    }
}

/// `icf ARGS`, which must succeed.
fn icf(args: &[&str], context: &str) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_icf"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{context}: running icf: {e}"));
    assert!(
        output.status.success(),
        "{context}: icf {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `icf report --format json --mode MODE [EXTRA] INPUTS`.
fn report(mode: &str, extra: &[&str], inputs: &[&Path], context: &str) -> Report {
    let mut args = vec!["report", "--format", "json", "--mode", mode];
    args.extend(extra);
    args.extend(inputs.iter().map(|p| p.to_str().expect("utf-8 path")));
    Report::parse(&icf(&args, context).stdout, context)
}

/// Runs `command`, which must succeed.
fn run(command: &mut Command, context: &str) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{context}: running {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{context}: {command:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The compiler driver that links `build`'s objects, plainly (its default
/// linker, GNU ld).
fn link(build: &Build, cxx: bool, objects: &[PathBuf], flags: &[&str], output: &Path) {
    let mut command = build.driver_command(cxx);
    command.args(objects).args(flags).arg("-o").arg(output);
    run(&mut command, &output.display().to_string());
}

/// `llvm-strip-19 --strip-all IN -o OUT` (it reads both targets).
fn strip(input: &Path, output: &Path) {
    icf_fixtures::require_tool("llvm-strip-19");
    run(
        Command::new("llvm-strip-19")
            .arg("--strip-all")
            .arg(input)
            .arg("-o")
            .arg(output),
        &output.display().to_string(),
    );
}

/// The names the program's objects define (functions and data): what
/// the program's own code is, and which names are aliases of one place
/// (a C++ constructor's or destructor's `C1`/`C2`, `D1`/`D2`), which a
/// report may name by either.
struct OwnNames {
    /// Each name's canonical name: the least of the names of its place.
    canonical: HashMap<String, String>,
}

impl OwnNames {
    fn read(objects: &[PathBuf]) -> OwnNames {
        let mut canonical = HashMap::new();
        for path in objects {
            let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let file =
                object::File::parse(&*data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut places: HashMap<(Option<usize>, u64), Vec<String>> = HashMap::new();
            for symbol in file.symbols() {
                if symbol.is_definition()
                    && matches!(symbol.kind(), SymbolKind::Text | SymbolKind::Data)
                    && let Ok(name) = symbol.name()
                    && !name.is_empty()
                {
                    let section = symbol.section_index().map(|index| index.0);
                    places
                        .entry((section, symbol.address()))
                        .or_default()
                        .push(name.to_string());
                }
            }
            for names in places.into_values() {
                let least = names.iter().min().cloned().unwrap_or_default();
                for name in names {
                    canonical.entry(name).or_insert_with(|| least.clone());
                }
            }
        }
        OwnNames { canonical }
    }

    /// Whether the program's objects define `name`.
    fn defines(&self, name: &str) -> bool {
        self.canonical.contains_key(name)
    }

    /// `name`, or the name its place is known by.
    fn canonical<'a>(&'a self, name: &'a str) -> &'a str {
        self.canonical.get(name).map_or(name, String::as_str)
    }
}

/// A linked binary's symbols by address, and its sections by name: what
/// names the unnamed functions of the same link stripped.
struct LinkedSymbols {
    functions: HashMap<u64, String>,
    sections: HashMap<String, u64>,
    /// How many functions of each name the binary has.
    copies: HashMap<String, usize>,
}

impl LinkedSymbols {
    fn read(path: &Path) -> LinkedSymbols {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file =
            object::File::parse(&*data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut functions = HashMap::new();
        for symbol in file.symbols() {
            if symbol.kind() == SymbolKind::Text
                && symbol.is_definition()
                && let Ok(name) = symbol.name()
                && !name.is_empty()
            {
                // A global names an address before a local (as icf names it).
                let global = symbol.is_global();
                functions
                    .entry(symbol.address())
                    .and_modify(|known: &mut (String, bool)| {
                        if global && !known.1 {
                            *known = (name.to_string(), true);
                        }
                    })
                    .or_insert((name.to_string(), global));
            }
        }
        let sections = file
            .sections()
            .filter_map(|s| Some((s.name().ok()?.to_string(), s.address())))
            .collect();
        let functions: HashMap<u64, String> =
            functions.into_iter().map(|(a, (n, _))| (a, n)).collect();
        let mut copies = HashMap::new();
        for name in functions.values() {
            *copies.entry(name.clone()).or_insert(0) += 1;
        }
        LinkedSymbols {
            functions,
            sections,
            copies,
        }
    }

    /// The function at `sub_ADDR` (icf's name for an unnamed function of
    /// a linked image) or `section+offset` (an object's); `None` when
    /// `name` is no such place or nothing is there.
    fn name_of_place(&self, name: &str) -> Option<&str> {
        if let Some(hex) = name.strip_prefix("sub_") {
            let address = u64::from_str_radix(hex, 16).ok()?;
            return self.functions.get(&address).map(String::as_str);
        }
        let (section, offset) = name.rsplit_once('+')?;
        let offset = match offset.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok()?,
            None => offset.parse().ok()?,
        };
        let base = self.sections.get(section)?;
        self.functions.get(&(base + offset)).map(String::as_str)
    }
}

/// One binary and the objects it was linked from, reported on in one mode.
struct Comparison<'a> {
    context: String,
    binary: &'a Report,
    objects: &'a Report,
    own: &'a OwnNames,
    /// The symbols of the link (before stripping, for a stripped binary).
    linked: &'a LinkedSymbols,
}

impl Comparison<'_> {
    /// A binary report's member in the objects' terms: its symbol's
    /// canonical name, or for an unnamed function of a stripped binary
    /// that of the unstripped link's function at the same place.
    fn name<'m>(&'m self, member: &'m Member) -> &'m str {
        let symbol = self
            .linked
            .name_of_place(&member.symbol)
            .unwrap_or(&member.symbol);
        self.own.canonical(symbol)
    }

    /// Check 1: each class of the binary, restricted to the program's own
    /// functions, lies inside one class of the objects' report.
    fn invented_folds(&self) -> Vec<String> {
        let mut failures = Vec::new();
        for (class, names) in self.own_classes() {
            let found = self.objects.classes.iter().any(|o| {
                let held: Vec<&str> = o
                    .members
                    .iter()
                    .map(|m| self.own.canonical(&m.symbol))
                    .collect();
                o.kind == class.kind && holds_all(&held, &names)
            });
            if !found {
                failures.push(format!(
                    "{}: the binary folds {names:?} ({}), which no class of the objects holds",
                    self.context, class.kind
                ));
            }
        }
        failures
    }

    /// The binary's classes with their members of the program's own
    /// (at least two), in the objects' names.
    fn own_classes(&self) -> Vec<(&Class, Vec<&str>)> {
        self.binary
            .classes
            .iter()
            .map(|class| {
                let names: Vec<&str> = class
                    .members
                    .iter()
                    .map(|m| self.name(m))
                    .filter(|name| self.own.defines(name))
                    .collect();
                (class, names)
            })
            .filter(|(_, names)| names.len() >= 2)
            .collect()
    }

    /// How many members of each name the objects' report keeps apart for
    /// their addresses.
    fn significant(&self) -> HashMap<&str, usize> {
        let mut significant: HashMap<&str, usize> = HashMap::new();
        for member in self.objects.classes.iter().flat_map(|c| &c.members) {
            if member.keeps_a_significant_address() {
                *significant
                    .entry(self.own.canonical(&member.symbol))
                    .or_insert(0) += 1;
            }
        }
        significant
    }

    /// Check 2: as many functions of each name as the objects' safe report
    /// keeps apart for their addresses are no alias in the binary's.
    fn significant_addresses_aliased(&self) -> Vec<String> {
        let significant = self.significant();
        let mut aliases: HashMap<&str, usize> = HashMap::new();
        for member in self.binary.classes.iter().flat_map(|c| &c.members) {
            if member.action == "alias" {
                *aliases.entry(self.name(member)).or_insert(0) += 1;
            }
        }
        let mut failures = Vec::new();
        for (name, needed) in significant {
            let aliased = aliases.get(name).copied().unwrap_or(0);
            let copies: usize = self
                .linked
                .copies
                .iter()
                .filter(|(linked, _)| self.own.canonical(linked) == name)
                .map(|(_, count)| count)
                .sum();
            if aliased > 0 && copies.saturating_sub(aliased) < needed {
                failures.push(format!(
                    "{}: {needed} of {name} keep their address in the objects' safe report, but {aliased} of the binary's {copies} are aliases in its",
                    self.context
                ));
            }
        }
        failures
    }

    /// What the objects' report saves on the classes of code holding one
    /// of `functions`.
    fn objects_saving_of(&self, functions: &[&str]) -> u64 {
        self.objects
            .classes
            .iter()
            .filter(|class| class.kind == "code")
            .filter(|class| {
                class
                    .members
                    .iter()
                    .any(|m| functions.contains(&self.own.canonical(&m.symbol)))
            })
            .map(|class| class.saved)
            .sum()
    }

    /// The program's own saving in the binary's report: classes of the C
    /// runtime's functions are no part of the objects'.
    fn binary_saving(&self) -> u64 {
        self.binary.saved_code_bytes_where(|symbol| {
            let symbol = self.linked.name_of_place(symbol).unwrap_or(symbol);
            self.own.defines(symbol)
        })
    }
}

/// Whether `held` has every name of `names` as often as `names` has it.
fn holds_all(held: &[&str], names: &[&str]) -> bool {
    let mut left = held.to_vec();
    names.iter().all(|name| {
        left.iter()
            .position(|m| m == name)
            .map(|at| left.swap_remove(at))
            .is_some()
    })
}

/// The figures of one combination, printed at the end of each test.
struct Figures {
    context: String,
    /// Bytes of code the objects' report saves.
    objects: u64,
    /// Bytes of the program's code the binary's report saves.
    binary: u64,
    /// Bytes of code the binary's report saves, the C runtime's included.
    binary_total: u64,
    /// Classes of the binary compared with the objects' (check 1).
    classes: usize,
    /// Names whose address the objects' safe report keeps (check 2).
    significant: usize,
}

/// Builds, links and reports on every combination of `program`; fails
/// with every check that went wrong.
fn check(program: &Program) {
    let mut failures = Vec::new();
    let mut figures = Vec::new();
    for compiler in COMPILERS {
        for arch in Arch::ALL {
            for &flavour in program.shape.flavours() {
                check_combination(
                    program,
                    compiler,
                    arch,
                    flavour,
                    &mut failures,
                    &mut figures,
                );
            }
        }
    }
    for f in &figures {
        eprintln!(
            "{:<52} objects {:>4}  binary {:>4} (with the C runtime's {:>4}); {} classes, {} significant",
            f.context, f.objects, f.binary, f.binary_total, f.classes, f.significant
        );
    }
    // Each program folds something in every binary, which check 1 compares.
    for f in &figures {
        assert!(f.classes > 0, "{}: no class to compare", f.context);
    }
    assert!(
        failures.is_empty(),
        "{} checks of {} failed:\n\n{}",
        failures.len(),
        program.name,
        failures.join("\n")
    );
}

fn check_combination(
    program: &Program,
    compiler: Compiler,
    arch: Arch,
    flavour: Flavour,
    failures: &mut Vec<String>,
    figures: &mut Vec<Figures>,
) {
    let build = Build {
        compiler,
        arch,
        function_sections: true,
        extra_flags: vec![flavour.code_model().to_string()],
    };
    let label = format!("{}-{}", build.label(), flavour.name());
    let dir = icf_fixtures::source_dir()
        .join("../target/report-binary")
        .join(program.name);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let objects: Vec<PathBuf> = program
        .sources
        .iter()
        .map(|source| icf_fixtures::object(Path::new(source), &build))
        .collect();
    let own = OwnNames::read(&objects);
    let linked = dir.join(&label);
    link(&build, program.cxx, &objects, flavour.link_flags(), &linked);
    let symbols = LinkedSymbols::read(&linked);
    let binary = if flavour == Flavour::StrippedPie {
        let stripped = dir.join(format!("{label}.stripped"));
        strip(&linked, &stripped);
        stripped
    } else {
        linked.clone()
    };
    let shared: &[&str] = if flavour == Flavour::SharedLibrary {
        &["--shared"]
    } else {
        &[]
    };
    let object_paths: Vec<&Path> = objects.iter().map(PathBuf::as_path).collect();
    for mode in MODES {
        let context = format!("{} {label} {mode}", program.name);
        let objects_report = report(mode, shared, &object_paths, &context);
        let binary_report = report(mode, &[], &[&binary], &context);
        let comparison = Comparison {
            context: context.clone(),
            binary: &binary_report,
            objects: &objects_report,
            own: &own,
            linked: &symbols,
        };
        failures.extend(comparison.invented_folds());
        if mode == "safe" {
            failures.extend(comparison.significant_addresses_aliased());
        }
        let saved = comparison.binary_saving();
        let expected = objects_report.saved_code_bytes;
        let tolerance = (program.tolerance)(compiler, arch, flavour);
        let missable = comparison.objects_saving_of(tolerance.missable);
        if saved > expected + tolerance.above || saved + missable < expected {
            failures.push(format!(
                "{context}: the binary's report saves {saved} bytes of the program's code, the objects' {expected}; allowed: {} bytes less (the classes of {:?}), {} more ({})",
                missable, tolerance.missable, tolerance.above, tolerance.why
            ));
        }
        if flavour != Flavour::StrippedPie {
            // With `.symtab`, every function has a name: bytes no symbol
            // covers are padding, and never a candidate.
            let unnamed = binary_report.unnamed_members();
            if !unnamed.is_empty() {
                failures.push(format!("{context}: unnamed members {unnamed:?}"));
            }
        }
        if flavour == Flavour::StrippedPie {
            // Unnamed functions are named by their address (`sub_12c0`).
            let nameless = binary_report
                .classes
                .iter()
                .flat_map(|class| &class.members)
                .filter(|member| member.symbol.is_empty())
                .count();
            if nameless > 0 {
                failures.push(format!("{context}: {nameless} members without a name"));
            }
            let unstripped_report = report(mode, &[], &[&linked], &context);
            if binary_report.saved_code_bytes > unstripped_report.saved_code_bytes {
                failures.push(format!(
                    "{context}: the stripped binary's report saves {} bytes, the unstripped one's {}",
                    binary_report.saved_code_bytes, unstripped_report.saved_code_bytes
                ));
            }
        }
        figures.push(Figures {
            context,
            objects: expected,
            binary: saved,
            binary_total: binary_report.saved_code_bytes,
            classes: comparison.own_classes().len(),
            significant: comparison.significant().len(),
        });
    }
}

#[test]
fn identical_functions_and_address_taken_twins() {
    check(&Program {
        name: "identical",
        sources: &["c/identical.c"],
        cxx: false,
        shape: Shape::Executable,
        tolerance: |_, _, _| EXACT,
    });
}

#[test]
fn callers_lookup_tables_and_jump_tables() {
    check(&Program {
        name: "fold_cases",
        sources: &["c/fold_cases.c"],
        cxx: false,
        shape: Shape::Executable,
        // Measured: the objects save 171 to 343 bytes, and the binary the
        // same with gcc: the image reader finds each jump table from its
        // dispatch (x86-64 `lea`+`movslq` and `jmp *T(,%idx,8)`, AArch64
        // `cmp`+`ldrb`) and makes it a piece with its entries relocated,
        // as in an object. With clang, `.llvm_addrsig` says table_a's and
        // table_b's addresses are not compared, so in the objects the
        // tables fold and lookup_a/lookup_b with them (14 bytes on x86-64
        // PIE, 20 on AArch64); a binary has no such table, its tables'
        // addresses are taken in code and kept apart (data keeps its
        // address in every mode), and the lookups differ.
        // And in a non-PIE executable, `mov table_a(,%rdi,4)` holds the
        // table's address as a number, which the binary's report compares
        // by value (a number may equal an address by chance): the lookups
        // differ there too (11 bytes with gcc).
        tolerance: |compiler, _, flavour| match (compiler, flavour) {
            (Compiler::Clang, _) => Tolerance {
                missable: &["lookup_a", "lookup_b"],
                above: 0,
                why: "clang's address-significance table",
            },
            (_, Flavour::NoPie | Flavour::NoPieKeptRelocs) => Tolerance {
                missable: &["lookup_a", "lookup_b"],
                above: 0,
                why: "non-PIE immediates compared by value",
            },
            _ => EXACT,
        },
    });
}

#[test]
fn functions_in_constant_and_writable_pointer_tables() {
    check(&Program {
        name: "pointer_table",
        sources: &["report/pointer_table.c"],
        cxx: false,
        shape: Shape::Executable,
        tolerance: |_, _, _| EXACT,
    });
}

#[test]
fn static_twins_across_objects_and_compared_addresses() {
    check(&Program {
        name: "cross",
        sources: &["e2e/cross_a.c", "e2e/cross_b.c", "e2e/cross_main.c"],
        cxx: false,
        shape: Shape::Executable,
        tolerance: |_, _, _| EXACT,
    });
}

#[test]
fn virtual_functions_and_function_pointers_in_data() {
    check(&Program {
        name: "virtual",
        sources: &["e2e/virtual_main.cpp", "e2e/virtual_tile.cpp"],
        cxx: true,
        shape: Shape::Executable,
        tolerance: |compiler, arch, flavour| Tolerance {
            // Stripped, no `_ZTV` symbol tells a vtable from other data:
            // the virtual functions it points to are taken for
            // address-taken, thunks instead of aliases (measured: 10 bytes
            // less on x86-64, 8 on AArch64, in safe mode).
            missable: if flavour == Flavour::StrippedPie {
                &[
                    "_ZNK6Square4areaEl",
                    "_ZNK4Tile4areaEl",
                    "_ZN6SquareD0Ev",
                    "_ZN4TileD0Ev",
                ]
            } else {
                &[]
            },
            // gcc's implicit destructors are COMDAT group members, which in
            // the objects keep their own symbols: the deleting destructor
            // is a thunk, and in mode all the complete-object one (a bare
            // `ret`) keeps its body; the linked image has no groups left and
            // makes both aliases. Measured: one jump more in safe mode, up
            // to two (or a jump and a `ret`) in mode all.
            above: if compiler == Compiler::Gcc {
                2 * jump(arch)
            } else {
                0
            },
            why: "COMDAT destructors; vtables unnamed when stripped",
        },
    });
}

#[test]
fn template_instances_in_several_units() {
    check(&Program {
        name: "comdat",
        sources: &[
            "e2e/comdat_a.cpp",
            "e2e/comdat_b.cpp",
            "e2e/comdat_main.cpp",
        ],
        cxx: true,
        shape: Shape::Executable,
        tolerance: |_, _, _| EXACT,
    });
}

#[test]
fn functions_with_exception_tables() {
    check(&Program {
        name: "exceptions",
        sources: &["e2e/exceptions_main.cpp"],
        cxx: true,
        shape: Shape::Executable,
        tolerance: |_, _, _| EXACT,
    });
}

#[test]
fn a_shared_library_s_exported_and_hidden_twins() {
    check(&Program {
        name: "shlib",
        sources: &["e2e/shlib.c"],
        cxx: false,
        shape: Shape::Library,
        tolerance: |_, _, _| EXACT,
    });
}

#[test]
fn a_static_function_of_one_name_in_three_objects() {
    check(&Program {
        name: "shared_name",
        sources: &[
            "report/shared_name_a.c",
            "report/shared_name_b.c",
            "report/shared_name_c.c",
        ],
        cxx: false,
        shape: Shape::Library,
        tolerance: |_, _, _| EXACT,
    });
}

#[test]
fn code_no_symbol_covers_is_no_candidate() {
    // `report/unnamed_code.c`: the same bytes after two functions, no
    // symbol over them. Before pieces without a symbol were left out,
    // they folded (GNU ld leaves such runs between AArch64 functions).
    let build = Build {
        extra_flags: vec!["-fPIE".to_string()],
        ..Build::new(Compiler::Gcc)
    };
    let object = icf_fixtures::object(Path::new("report/unnamed_code.c"), &build);
    let dir = icf_fixtures::source_dir().join("../target/report-binary/unnamed-code");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let binary = dir.join("unnamed_code");
    link(
        &build,
        false,
        std::slice::from_ref(&object),
        &["-pie"],
        &binary,
    );
    let context = binary.display().to_string();
    let report = report("all", &[], &[&binary], &context);
    let unnamed = report.unnamed_members();
    assert!(unnamed.is_empty(), "{context}: unnamed members {unnamed:?}");
}

/// `sources` built by `build` with `-ffunction-sections` and linked with
/// `flags` into `name`, in a scratch directory of its own; its safe report.
fn safe_report_of(build: &Build, sources: &[&str], flags: &[&str], name: &str) -> Report {
    let objects: Vec<PathBuf> = sources
        .iter()
        .map(|source| icf_fixtures::object(Path::new(source), build))
        .collect();
    let dir = icf_fixtures::source_dir().join("../target/report-binary/review");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let binary = dir.join(name);
    link(build, false, &objects, flags, &binary);
    report("safe", &[], &[&binary], &binary.display().to_string())
}

/// Whether `first` and `second` are in one class of `report`.
fn folds_together(report: &Report, first: &str, second: &str) -> bool {
    report.classes.iter().any(|class| {
        let names: Vec<&str> = class.members.iter().map(|m| m.symbol.as_str()).collect();
        names.contains(&first) && names.contains(&second)
    })
}

/// Panics when `second` is an alias in the same class as `first`: their
/// addresses are compared, so one of them must keep its own.
fn assert_kept_apart(report: &Report, first: &str, second: &str, context: &str) {
    for class in &report.classes {
        let names: Vec<&str> = class.members.iter().map(|m| m.symbol.as_str()).collect();
        if names.contains(&first) && names.contains(&second) {
            let aliased: Vec<&str> = class
                .members
                .iter()
                .filter(|m| m.action == "alias")
                .map(|m| m.symbol.as_str())
                .collect();
            assert!(
                !aliased.contains(&first) && !aliased.contains(&second),
                "{context}: {aliased:?} alias although {first} and {second} are compared"
            );
        }
    }
}

#[test]
fn addresses_compared_through_relr_and_the_got_of_a_kept_relocations_link() {
    for arch in [Arch::X86_64, Arch::Aarch64] {
        let build = Build {
            arch,
            function_sections: true,
            extra_flags: vec!["-fPIE".to_string()],
            ..Build::new(Compiler::Gcc)
        };
        let sources = [
            "report/compared_pointers.c",
            "report/compared_pointers_got.c",
        ];
        for (name, flags) in [
            ("relr", &["-pie", "-Wl,-z,pack-relative-relocs"][..]),
            ("kept", &["-pie", "-Wl,-q"][..]),
        ] {
            let name = format!("{name}-{arch:?}");
            let report = safe_report_of(&build, &sources, flags, &name);
            assert_kept_apart(&report, "twin_one", "twin_two", &name);
            assert_kept_apart(&report, "got_one", "got_two", &name);
        }
    }
}

#[test]
fn one_past_an_array_is_no_address_of_what_follows() {
    for (pie, flags) in [("-fPIE", &["-pie"][..]), ("-fno-PIE", &["-no-pie"][..])] {
        let build = Build {
            function_sections: true,
            extra_flags: vec![pie.to_string(), "-fdata-sections".to_string()],
            ..Build::new(Compiler::Gcc)
        };
        let name = format!("one-past-end{pie}");
        let report = safe_report_of(&build, &["report/one_past_end.c"], flags, &name);
        assert!(
            !folds_together(&report, "end_of_first", "end_of_second"),
            "{name}: end_of_first and end_of_second fold"
        );
    }
}

#[test]
fn an_equality_test_before_a_switch_does_not_size_its_table() {
    // F and G differ only in entries 5 and 6 of their tables; F tests
    // `x == 1` before the dispatch, which is no bound on x.
    let build = Build {
        function_sections: true,
        extra_flags: vec!["-fPIE".to_string()],
        ..Build::new(Compiler::Gcc)
    };
    let sources = ["report/equality_switch.s", "report/equality_switch_main.c"];
    for (name, flags) in [
        ("equality-switch-pie", &["-pie"][..]),
        ("equality-switch-no-pie", &["-no-pie"][..]),
    ] {
        let report = safe_report_of(&build, &sources, flags, name);
        assert!(
            !folds_together(&report, "F", "G"),
            "{name}: F and G fold although F(5) != G(5)"
        );
    }
}

/// A PIE of `c/identical.c` (gcc, x86-64) copied to `name` in a scratch
/// directory of its own, with the object it was linked from.
fn scratch_pie(name: &str) -> (PathBuf, PathBuf) {
    let build = Build {
        extra_flags: vec!["-fPIE".to_string()],
        ..Build::new(Compiler::Gcc)
    };
    let object = icf_fixtures::object(Path::new("c/identical.c"), &build);
    let dir = icf_fixtures::source_dir()
        .join("../target/report-binary/bad-input")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let binary = dir.join(name);
    link(
        &build,
        false,
        std::slice::from_ref(&object),
        &["-pie"],
        &binary,
    );
    (binary, object)
}

/// `icf report ARGS` fails cleanly: exit status 1 (no panic), nothing on
/// stdout, and stderr an `icf: error:` naming `named` and saying each of
/// `expected`.
fn assert_report_fails(args: &[&Path], named: &Path, expected: &[&str]) {
    let output = Command::new(env!("CARGO_BIN_EXE_icf"))
        .arg("report")
        .args(args)
        .output()
        .expect("run icf");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let shown = format!("status {}\nstderr:\n{stderr}", output.status);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(output.stdout.is_empty(), "{shown}");
    assert!(stderr.starts_with("icf: error: "), "{shown}");
    assert!(
        stderr.contains(&named.display().to_string()),
        "the error does not name {}\n{shown}",
        named.display()
    );
    for want in expected {
        assert!(stderr.contains(want), "stderr lacks {want:?}\n{shown}");
    }
}

#[test]
fn a_truncated_binary_is_an_error_naming_it() {
    let (binary, _) = scratch_pie("truncated");
    let data = std::fs::read(&binary).expect("read the binary");
    // Half the file: its section headers, at the end, are gone.
    std::fs::write(&binary, &data[..data.len() / 2]).expect("truncate");
    assert_report_fails(&[&binary], &binary, &["bad section header table"]);
    // Only the ELF header left.
    std::fs::write(&binary, &data[..64]).expect("truncate");
    assert_report_fails(&[&binary], &binary, &["section header"]);
}

#[test]
fn a_binary_without_section_headers_is_an_error_naming_it() {
    let (binary, _) = scratch_pie("no-section-headers");
    let mut data = std::fs::read(&binary).expect("read the binary");
    // e_shnum (offset 60) and e_shstrndx (62) of the ELF64 header: zero,
    // as `sstrip` leaves a binary.
    data[60..64].fill(0);
    std::fs::write(&binary, &data).expect("patch");
    assert_report_fails(&[&binary], &binary, &["no section headers"]);
}

#[test]
fn an_object_with_a_binary_is_an_error_naming_the_binary() {
    let (binary, object) = scratch_pie("mixed");
    let expected = ["linked executable or shared library", "read alone"];
    assert_report_fails(&[&object, &binary], &binary, &expected);
    assert_report_fails(&[&binary, &object], &binary, &expected);
}

/// Twins called directly, and a function that differs, in a program
/// without unwind tables (see the test below).
const CALLED_TWINS: &str = r#"
#include <stdio.h>
__attribute__((noinline)) int twin_a(int x) { int s = 0; for (int i = 0; i < x; i++) s += (i * i) ^ x; return s; }
__attribute__((noinline)) int twin_b(int x) { int s = 0; for (int i = 0; i < x; i++) s += (i * i) ^ x; return s; }
__attribute__((noinline)) int other(int x) { int s = 1; for (int i = 0; i < x; i++) s *= i | x; return s; }
int main(int argc, char **argv) {
    (void)argv;
    printf("%d %d %d\n", twin_a(argc + 10), twin_b(argc + 11), other(argc));
    return 0;
}
"#;

/// A stripped x86-64 program built without unwind tables has neither
/// symbols nor FDEs for its functions (Debian's mold: 95% of its `.text`):
/// the reader finds them where code calls them, as a disassembler does,
/// and the report saves what it saves on the same link unstripped. The
/// twins are unnamed `sub_ADDR` members of one class.
#[test]
fn a_stripped_binary_without_unwind_tables_reports_its_called_functions() {
    let dir = icf_fixtures::source_dir().join("../target/report-binary/called-twins");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let source = dir.join("twins.c");
    std::fs::write(&source, CALLED_TWINS).expect("write the source");
    for compiler in COMPILERS {
        let build = Build {
            compiler,
            arch: Arch::X86_64,
            function_sections: true,
            extra_flags: Vec::new(),
        };
        let label = build.label();
        let linked = dir.join(&label);
        let mut command = build.driver_command(false);
        command
            .args([
                "-O2",
                "-fno-asynchronous-unwind-tables",
                "-fno-unwind-tables",
            ])
            .args(if compiler == Compiler::Gcc {
                // gcc folds identical functions itself at -O2.
                &["-fno-ipa-icf"][..]
            } else {
                &[]
            })
            .arg(&source)
            .arg("-o")
            .arg(&linked);
        run(&mut command, &label);
        let stripped = dir.join(format!("{label}.stripped"));
        strip(&linked, &stripped);
        for mode in MODES {
            let context = format!("called twins {label} {mode}");
            let unstripped = report(mode, &[], &[&linked], &context);
            let binary = report(mode, &[], &[&stripped], &context);
            assert!(
                unstripped.saved_code_bytes > 0,
                "{context}: the twins do not fold"
            );
            assert_eq!(
                binary.saved_code_bytes, unstripped.saved_code_bytes,
                "{context}: stripped and unstripped reports differ"
            );
            let twins = binary
                .classes
                .iter()
                .find(|class| class.kind == "code" && class.members.len() == 2)
                .unwrap_or_else(|| panic!("{context}: no class of the two twins"));
            assert!(
                twins.members.iter().all(|m| m.symbol.starts_with("sub_")),
                "{context}: {:?}",
                twins.members.iter().map(|m| &m.symbol).collect::<Vec<_>>()
            );
        }
    }
}
