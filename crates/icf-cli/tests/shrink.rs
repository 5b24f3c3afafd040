//! `icf shrink` end to end: a linked binary, folded and compacted in place
//! of a relink, must behave as before and be no larger.
//!
//! Fixture programs with identical functions (identical and
//! address-compared twins, callers, lookup and jump tables, tables of
//! function pointers, static twins across objects, C++ vtables, template
//! instances and exceptions), and a shared library of exported and hidden
//! twins, are compiled by gcc and clang-19 for x86-64 and AArch64 (`-O2
//! -ffunction-sections`) and linked with `-Wl,-q` (`--emit-relocs`) by GNU
//! ld, gold, lld-19 and mold, as a PIE and as a non-PIE executable (the
//! library as a shared library, which a small loader `dlopen`s; the
//! literal-pool program as a non-PIE executable of the large code model,
//! `-mcmodel=large`). Every link
//! of the matrix (32 for each executable, 16 for the library) links and
//! runs on Debian, gold and mold for AArch64 included (the cross gcc has no
//! `aarch64-linux-gnu-ld.mold`: it finds mold through `-B`, see
//! [`Build::link_command`]), so no combination is skipped. Each
//! binary IN, checked to be the named linker's work, is run, then for
//! mode safe and mode all (gold's AArch64 links excepted: their kept
//! relocations are misplaced, and the one check is that `icf shrink`
//! refuses them cleanly, see [`refusal`]):
//!
//! 1. `icf shrink --mode M --map IN.map IN -o OUT` succeeds (IN is
//!    linked with `-Wl,-Map=IN.map` too, so that anonymous read-only
//!    constants fold), prints a line starting `shrunk `, and leaves IN as
//!    it was;
//! 2. OUT run prints what IN printed and exits with IN's status (in mode
//!    all but for lines starting `fnaddr `, which compare function
//!    addresses, as in `tests/e2e.rs`); AArch64 binaries run under
//!    `qemu-aarch64` with the cross sysroot;
//! 3. `icf verify --mode M --plain-map IN.map IN OUT` proves OUT against
//!    IN (`verified:`);
//! 4. OUT is no larger than IN on disk, and its `.text` no larger than
//!    IN's;
//! 5. OUT keeps its debug info: every program is compiled with `-g`
//!    (DWARF 5 with macros, `-g3`, for PIEs and the large code model,
//!    DWARF 4 for the rest;
//!    the assembly of the big jump table carries none, so this step is
//!    skipped there),
//!    `icf shrink` says nothing about DWARF left empty, and for every
//!    function of OUT that keeps a body of its own, at one address in
//!    every 64 bytes of it, `llvm-symbolizer-19` gives the same frames
//!    (function, file, line, column, inlined calls) on OUT as on IN.
//!
//! Across each program's matrix at least one OUT has a strictly smaller
//! `.text` than its IN: every program here has functions to fold, so a
//! shrink that never shrinks fails. Each program's output is also the same
//! in every build (nothing it prints depends on the compiler, architecture or
//! linker), so the comparison of step 2 is never between two empty or
//! accidental outputs.
//!
//! Also: a binary linked without `-q` is refused with an error that names
//! it and says `--emit-relocs`, and a truncated binary is an error naming
//! it; both are clean errors (exit status 1, `icf: error: `, no panic,
//! nothing on stdout, the input unchanged).
//!
//! `cargo test -p icf-cli --test shrink -- --nocapture` prints the sizes of
//! every combination.

use icf_fixtures::{Arch, Build, Compiler, Linker};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

const COMPILERS: [Compiler; 2] = [Compiler::Gcc, Compiler::Clang];
const MODES: [&str; 2] = ["safe", "all"];

/// How a binary is linked (always with `-Wl,-q`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Flavour {
    Pie,
    NoPie,
    SharedLibrary,
    /// A position-dependent executable of the large code model: gcc loads
    /// addresses from literal pools in `.text` (AArch64) or writes them
    /// whole into instructions (x86-64 `movabs`).
    LargeCodeModel,
    /// A static executable (`-static`): the C library's code, GOT and
    /// `IRELATIVE` relocations are the program's own.
    Static,
}

impl Flavour {
    /// The code model the objects are compiled with.
    fn code_model(self) -> &'static [&'static str] {
        match self {
            Flavour::Pie => &["-fPIE"],
            Flavour::NoPie => &["-fno-PIE"],
            Flavour::SharedLibrary => &["-fPIC"],
            Flavour::LargeCodeModel => &["-fno-PIE", "-mcmodel=large"],
            Flavour::Static => &["-fno-PIE"],
        }
    }

    /// The DWARF the objects carry: version 5 with macros (`-g3`, whose
    /// `.debug_macro` names line programs) or version 4.
    fn debug_flags(self) -> &'static [&'static str] {
        match self {
            Flavour::Pie | Flavour::LargeCodeModel => &["-gdwarf-5", "-g3"],
            Flavour::NoPie | Flavour::SharedLibrary | Flavour::Static => &["-gdwarf-4"],
        }
    }

    fn link_flags(self) -> &'static [&'static str] {
        match self {
            Flavour::Pie => &["-pie"],
            Flavour::NoPie | Flavour::LargeCodeModel => &["-no-pie"],
            Flavour::SharedLibrary => &["-shared"],
            Flavour::Static => &["-static"],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Flavour::Pie => "pie",
            Flavour::NoPie => "no-pie",
            Flavour::SharedLibrary => "shared",
            Flavour::LargeCodeModel => "large",
            Flavour::Static => "static",
        }
    }
}

/// What a program is linked into, and how it is run.
#[derive(Copy, Clone, Debug)]
enum Shape {
    /// It has `main`, which prints its results.
    Executable,
    /// A shared library, run by `loader` (a source under `fixtures/`
    /// whose `main` `dlopen`s the library named by its argument and prints
    /// what its functions return).
    Library { loader: &'static str },
}

impl Shape {
    fn flavours(self) -> &'static [Flavour] {
        match self {
            Shape::Executable => &[Flavour::Pie, Flavour::NoPie],
            Shape::Library { .. } => &[Flavour::SharedLibrary],
        }
    }
}

/// One fixture program.
struct Program {
    name: &'static str,
    /// Sources under `fixtures/`.
    sources: &'static [&'static str],
    cxx: bool,
    shape: Shape,
    /// Compiled with `-ffunction-sections` (else the assembler resolves
    /// calls between the functions of a unit without relocations).
    function_sections: bool,
    /// The flavours it is built in, when not all its shape's.
    flavours: Option<&'static [Flavour]>,
    /// More compiler flags.
    cflags: &'static [&'static str],
}

/// One build of a program.
#[derive(Copy, Clone, Debug)]
struct Combination {
    compiler: Compiler,
    arch: Arch,
    linker: Linker,
    flavour: Flavour,
}

impl Combination {
    fn build(self) -> Build {
        Build {
            compiler: self.compiler,
            arch: self.arch,
            function_sections: true,
            extra_flags: self
                .flavour
                .code_model()
                .iter()
                .chain(self.flavour.debug_flags())
                .map(|flag| flag.to_string())
                .collect(),
        }
    }

    /// E.g. `gcc-x86_64-bfd-pie`.
    fn label(self) -> String {
        let compiler = match self.compiler {
            Compiler::Gcc => "gcc",
            Compiler::Clang => "clang",
        };
        format!(
            "{compiler}-{}-{}-{}",
            self.arch.name(),
            self.linker.name(),
            self.flavour.name()
        )
    }
}

/// Every build of `program`: both compilers, both targets, every linker,
/// every flavour of its shape.
fn combinations(program: &Program) -> Vec<Combination> {
    let mut all = Vec::new();
    for compiler in COMPILERS {
        for arch in Arch::ALL {
            for linker in Linker::ALL {
                for &flavour in program.flavours.unwrap_or(program.shape.flavours()) {
                    all.push(Combination {
                        compiler,
                        arch,
                        linker,
                        flavour,
                    });
                }
            }
        }
    }
    all
}

/// What a run of a program printed, and its exit status.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Behaviour {
    stdout: String,
    exit: i32,
}

impl Behaviour {
    /// What must not change in `mode`: everything, but in mode all the
    /// lines comparing function addresses (`fnaddr `), which mode all may
    /// merge.
    fn compared(&self, mode: &str) -> Behaviour {
        let stdout = self
            .stdout
            .lines()
            .filter(|line| mode == "safe" || !line.starts_with("fnaddr "))
            .map(|line| format!("{line}\n"))
            .collect();
        Behaviour {
            stdout,
            exit: self.exit,
        }
    }
}

/// How long a fixture program may run (under qemu too) before its run is
/// a failure: a wrong shrink can make a program loop.
const RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Runs `command`: what it printed and its exit status, or why it did
/// not exit (a signal, or still running after [`RUN_LIMIT`], then killed)
/// or could not start.
fn behaviour(command: &mut Command) -> Result<Behaviour, String> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not run {command:?}: {e}"))?;
    // Drained while it runs, so that a full pipe never stops it.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > RUN_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for {command:?}: {e}")),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status.and_then(|status| status.code().ok_or(status).ok()) {
        Some(exit) => Ok(Behaviour {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            exit,
        }),
        None => Err(format!(
            "{command:?} died or did not end within {} s:\nstdout:\n{}\nstderr:\n{}",
            RUN_LIMIT.as_secs(),
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )),
    }
}

/// Runs `command`, which must succeed (a link: the test environment).
fn run_to_success(command: &mut Command, context: &str) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{context}: could not run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{context}: {command:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `icf ARGS`; its output whatever the outcome.
fn icf<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icf"))
        .args(args)
        .output()
        .expect("running the icf binary built for this test")
}

/// `target/shrink/NAME`, empty.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = icf_fixtures::source_dir()
        .join("../target/shrink")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// `icf shrink --mode MODE [--map MAP] INPUT -o OUTPUT`.
fn icf_shrink(mode: &str, input: &Path, output: &Path, map: Option<&Path>) -> Output {
    let mut args = vec!["shrink".as_ref(), "--mode".as_ref(), mode.as_ref()];
    if let Some(map) = map {
        args.extend(["--map".as_ref(), map.as_os_str()]);
    }
    args.extend([input.as_os_str(), "-o".as_ref(), output.as_os_str()]);
    icf(&args)
}

/// `icf verify --mode MODE [--plain-map MAP] PLAIN FOLDED`.
fn icf_verify(mode: &str, plain: &Path, folded: &Path, map: Option<&Path>) -> Output {
    let mut args = vec!["verify".as_ref(), "--mode".as_ref(), mode.as_ref()];
    if let Some(map) = map {
        args.extend(["--plain-map".as_ref(), map.as_os_str()]);
    }
    args.extend([plain.as_os_str(), folded.as_os_str()]);
    icf(&args)
}

/// A linked binary's size on disk and its `.text`'s.
#[derive(Copy, Clone, Debug)]
struct Sizes {
    file: u64,
    text: u64,
}

fn sizes(path: &Path) -> Result<Sizes, String> {
    let data = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let file = object::File::parse(&*data)
        .map_err(|e| format!("{}: not an object file: {e}", path.display()))?;
    let text = file
        .section_by_name(".text")
        .ok_or_else(|| format!("{}: no .text", path.display()))?
        .size();
    Ok(Sizes {
        file: data.len() as u64,
        text,
    })
}

/// Which linker linked `path`: gold leaves a `.note.gnu.gold-version`,
/// lld and mold name themselves in `.comment`, GNU ld does neither.
fn linked_by(path: &Path) -> Linker {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let file = object::File::parse(&*data)
        .unwrap_or_else(|e| panic!("{}: not an object file: {e}", path.display()));
    if file.section_by_name(".note.gnu.gold-version").is_some() {
        return Linker::Gold;
    }
    let comment = file
        .section_by_name(".comment")
        .and_then(|section| section.data().ok())
        .unwrap_or_default();
    // NUL-separated strings: `Linker: Debian LLD 19.1.7`,
    // `mold 1.10.1 (compatible with GNU ld)`, the compilers'.
    let strings: Vec<String> = comment
        .split(|&byte| byte == 0)
        .map(|string| String::from_utf8_lossy(string).into_owned())
        .collect();
    if strings
        .iter()
        .any(|s| s.starts_with("Linker: ") && s.contains("LLD"))
    {
        Linker::Lld
    } else if strings.iter().any(|s| s.starts_with("mold ")) {
        Linker::Mold
    } else {
        Linker::Bfd
    }
}

/// Compiles `sources` for `build` and links them with `linker` and
/// `flags` into `output`.
fn link(build: &Build, cxx: bool, linker: Linker, sources: &[&str], flags: &[&str], output: &Path) {
    let objects: Vec<PathBuf> = sources
        .iter()
        .map(|source| icf_fixtures::object(Path::new(source), build))
        .collect();
    run_to_success(
        build
            .link_command(cxx, linker)
            .args(&objects)
            .args(flags)
            .arg("-o")
            .arg(output),
        &output.display().to_string(),
    );
}

/// A program as it is run: IN or OUT itself, or for a library the loader
/// with the library's path.
struct Runner {
    arch: Arch,
    loader: Option<PathBuf>,
}

impl Runner {
    fn run(&self, binary: &Path) -> Result<Behaviour, String> {
        let mut command = match &self.loader {
            None => icf_fixtures::run_command(self.arch, binary),
            Some(loader) => {
                let mut command = icf_fixtures::run_command(self.arch, loader);
                command.arg(binary);
                command
            }
        };
        behaviour(&mut command)
    }
}

/// One shrink of one binary: a line of the table.
struct Row {
    mode: &'static str,
    input: Sizes,
    output: Option<Sizes>,
    /// What `icf shrink` printed after `shrunk `.
    shrunk: String,
    /// The steps that failed.
    failed: Vec<&'static str>,
}

/// A check that went wrong.
struct Failure {
    /// The program, build and mode.
    context: String,
    /// IN and OUT.
    paths: (PathBuf, PathBuf),
    /// The step of the header that failed.
    step: &'static str,
    /// What failed, in terms of IN, OUT and M (the same wherever the same
    /// thing fails).
    what: String,
    /// The command's or the program's output.
    detail: String,
}

/// What one combination gave.
struct Outcome {
    input: Behaviour,
    rows: Vec<Row>,
    failures: Vec<Failure>,
}

/// Links IN for `combination` and shrinks it in each mode; panics only
/// when the test environment cannot build or run IN.
fn check_combination(program: &Program, combination: Combination) -> Outcome {
    let mut build = Build {
        function_sections: program.function_sections,
        ..combination.build()
    };
    build
        .extra_flags
        .extend(program.cflags.iter().map(|flag| flag.to_string()));
    let label = combination.label();
    let dir = icf_fixtures::source_dir()
        .join("../target/shrink")
        .join(program.name)
        .join(&label);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));

    let input = dir.join(match program.shape {
        Shape::Executable => "in",
        Shape::Library { .. } => "libin.so",
    });
    // With IN's link map, `icf shrink --map` folds anonymous constants
    // too, and `icf verify --plain-map` reads IN by it.
    let map = dir.join("in.map");
    let map_flag = format!("-Wl,-Map={}", map.display());
    let mut flags = combination.flavour.link_flags().to_vec();
    flags.extend(["-Wl,-q", map_flag.as_str()]);
    link(
        &build,
        program.cxx,
        combination.linker,
        program.sources,
        &flags,
        &input,
    );
    let actual_linker = linked_by(&input);
    assert_eq!(
        actual_linker,
        combination.linker,
        "{}: linked by {actual_linker:?}, not the {:?} asked for",
        input.display(),
        combination.linker
    );
    let loader = match program.shape {
        Shape::Executable => None,
        Shape::Library { loader } => {
            // The loader is a plain PIE; only the library is shrunk.
            let loader_build = Build {
                extra_flags: vec!["-fPIE".to_string()],
                ..build.clone()
            };
            let path = dir.join("loader");
            link(
                &loader_build,
                false,
                combination.linker,
                &[loader],
                &["-pie", "-ldl"],
                &path,
            );
            Some(path)
        }
    };
    let runner = Runner {
        arch: combination.arch,
        loader,
    };
    let mut shrinking = Shrinking::of(input, runner, refusal(combination));
    shrinking.map = Some(map);
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for mode in MODES {
        let output = dir.join(match program.shape {
            Shape::Executable => format!("out-{mode}"),
            Shape::Library { .. } => format!("libout-{mode}.so"),
        });
        let context = format!("{} {label} {mode}", program.name);
        let (row, failed) = shrinking.shrink(mode, &output, &context);
        failures.extend(failed);
        rows.push(row);
    }
    Outcome {
        input: shrinking.expected,
        rows,
        failures,
    }
}

/// IN, linked and run.
struct Shrinking {
    input: PathBuf,
    input_bytes: Vec<u8>,
    input_sizes: Sizes,
    runner: Runner,
    /// What IN does.
    expected: Behaviour,
    /// Why `icf shrink` must refuse IN, when it must (see [`refusal`]).
    refused: Option<&'static str>,
    /// IN carries DWARF (assembly fixtures do not): step 5 checks it.
    has_debug_info: bool,
    /// IN's link map, passed to `icf shrink --map` and `icf verify
    /// --plain-map`.
    map: Option<PathBuf>,
}

impl Shrinking {
    /// IN, run by `runner`: it must run and print something, or its
    /// output would prove nothing.
    fn of(input: PathBuf, runner: Runner, refused: Option<&'static str>) -> Shrinking {
        let expected = runner
            .run(&input)
            .unwrap_or_else(|e| panic!("{}: IN does not run: {e}", input.display()));
        assert!(
            !expected.stdout.is_empty(),
            "{}: IN prints nothing (exit {}), so its output proves nothing",
            input.display(),
            expected.exit
        );
        let input_bytes =
            std::fs::read(&input).unwrap_or_else(|e| panic!("reading {}: {e}", input.display()));
        let has_debug_info = object::File::parse(&*input_bytes)
            .is_ok_and(|file| file.section_by_name(".debug_info").is_some());
        Shrinking {
            input_sizes: sizes(&input).unwrap_or_else(|e| panic!("{e}")),
            input_bytes,
            has_debug_info,
            input,
            runner,
            expected,
            refused,
            map: None,
        }
    }
}

/// What `icf shrink`'s error must say for a combination it refuses: gold's
/// `--emit-relocs` output for AArch64 puts some functions' relocations at
/// their input section's offsets instead of in `.text` (in `identical`,
/// `ping1`'s `bl pong1` at 0xb54 is relocated as if at `.text`+0x14, an
/// `adrp` in `main`), so icf must not move code by them.
fn refusal(combination: Combination) -> Option<&'static str> {
    (combination.linker == Linker::Gold && combination.arch == Arch::Aarch64)
        .then_some("linked by gold for AArch64")
}

impl Shrinking {
    /// Steps 1 to 4 in `mode`, shrinking IN to `output`.
    fn shrink(&self, mode: &'static str, output: &Path, context: &str) -> (Row, Vec<Failure>) {
        let input = &self.input;
        let mut failures = Vec::new();
        let mut fail = |step: &'static str, what: String, detail: String| {
            failures.push(Failure {
                context: context.to_string(),
                paths: (input.clone(), output.to_path_buf()),
                step,
                what,
                detail,
            });
        };
        let mut row = Row {
            mode,
            input: self.input_sizes,
            output: None,
            shrunk: String::new(),
            failed: Vec::new(),
        };

        // Step 1: the shrink (over no OUT of an earlier run).
        if let Err(e) = std::fs::remove_file(output)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            panic!("removing {}: {e}", output.display());
        }
        let shrink = icf_shrink(mode, input, output, self.map.as_deref());
        let stdout = String::from_utf8_lossy(&shrink.stdout);
        if let Some(reason) = self.refused {
            let stderr = String::from_utf8_lossy(&shrink.stderr);
            let clean = shrink.status.code() == Some(1)
                && stderr.starts_with("icf: error: ")
                && stderr.contains(reason)
                && stdout.is_empty()
                && !output.exists();
            if !clean {
                fail(
                    STEP_SHRINK,
                    format!("`icf shrink` must refuse IN saying {reason:?}"),
                    format!("{}\nstdout:\n{stdout}\nstderr:\n{stderr}", shrink.status),
                );
            }
            row.shrunk = format!("refused: {reason}");
            row.failed = failures.iter().map(|f| f.step).collect();
            return (row, failures);
        }
        if !shrink.status.success() {
            fail(
                STEP_SHRINK,
                format!("`icf shrink --mode M IN -o OUT` failed ({})", shrink.status),
                String::from_utf8_lossy(&shrink.stderr).into_owned(),
            );
            row.failed = failures.iter().map(|f| f.step).collect();
            return (row, failures);
        }
        match stdout.lines().find_map(|line| line.strip_prefix("shrunk ")) {
            Some(figures) => row.shrunk = figures.to_string(),
            None => fail(
                STEP_SHRINK,
                "`icf shrink` printed no line starting `shrunk `".to_string(),
                stdout.to_string(),
            ),
        }
        match std::fs::read(input) {
            Ok(now) if now == self.input_bytes => {}
            Ok(_) => fail(STEP_SHRINK, "IN was modified".to_string(), String::new()),
            Err(e) => fail(STEP_SHRINK, "IN is gone".to_string(), e.to_string()),
        }
        let stderr = String::from_utf8_lossy(&shrink.stderr);
        if stderr.contains("DWARF") {
            fail(
                STEP_DEBUG,
                "`icf shrink` left OUT's DWARF empty".to_string(),
                stderr.to_string(),
            );
        } else if self.has_debug_info {
            type Check = fn(&Path, &Path) -> Result<(), String>;
            let checks: [(&str, Check); 4] = [
                (
                    "a function's DWARF range in OUT runs outside its function",
                    |_, output| subprograms_within_functions(output),
                ),
                (
                    "a DWARF range or location of kept code did not move with it",
                    ranges_and_locations_move_with_their_code,
                ),
                (
                    "a .debug_frame FDE of kept code did not move with it",
                    frames_move_with_their_code,
                ),
                (
                    "OUT's kept code symbolizes differently from IN's",
                    symbolizes_alike,
                ),
            ];
            if let Some((what, e)) = checks
                .iter()
                .find_map(|(what, check)| check(input, output).err().map(|e| (what, e)))
            {
                fail(STEP_DEBUG, what.to_string(), e);
            }
        }

        if let Err(e) = unwind_tables_list_every_fde(input, output) {
            fail(
                STEP_UNWIND,
                "OUT's .eh_frame_hdr and .eh_frame disagree, or removed code kept its FDE"
                    .to_string(),
                e,
            );
        }
        if let Err(e) = exception_tables_of_removed_code_are_gone(input, output) {
            fail(
                STEP_UNWIND,
                "an exception table of removed code stayed in OUT".to_string(),
                e,
            );
        }

        // Step 2: the same behaviour.
        match self.runner.run(output) {
            Ok(actual) => {
                if actual.compared(mode) != self.expected.compared(mode) {
                    fail(
                        STEP_RUN,
                        "OUT behaves differently from IN".to_string(),
                        format!(
                            "IN (exit {}):\n{}OUT (exit {}):\n{}",
                            self.expected.exit, self.expected.stdout, actual.exit, actual.stdout
                        ),
                    );
                }
            }
            Err(e) => fail(STEP_RUN, "OUT does not run".to_string(), e),
        }

        // Step 3: the proof.
        let verify = icf_verify(mode, input, output, self.map.as_deref());
        let verified = String::from_utf8_lossy(&verify.stdout);
        if !verify.status.success() || !verified.lines().any(|l| l.starts_with("verified:")) {
            fail(
                STEP_VERIFY,
                format!(
                    "`icf verify --mode M IN OUT` does not prove OUT ({})",
                    verify.status
                ),
                format!("{verified}{}", String::from_utf8_lossy(&verify.stderr)),
            );
        }

        // Step 4: no larger.
        match sizes(output) {
            Ok(out) => {
                let input = self.input_sizes;
                if out.file > input.file {
                    fail(
                        STEP_SIZES,
                        "OUT is larger than IN on disk".to_string(),
                        format!("IN {} bytes, OUT {}", input.file, out.file),
                    );
                }
                if out.text > input.text {
                    fail(
                        STEP_SIZES,
                        "OUT's .text is larger than IN's".to_string(),
                        format!("IN {} bytes, OUT {}", input.text, out.text),
                    );
                }
                row.output = Some(out);
            }
            Err(e) => fail(STEP_SIZES, "OUT cannot be read".to_string(), e),
        }
        row.failed = failures.iter().map(|f| f.step).collect();
        row.failed.dedup();
        (row, failures)
    }
}

const STEP_SHRINK: &str = "1 (icf shrink)";
const STEP_RUN: &str = "2 (run OUT)";
const STEP_VERIFY: &str = "3 (icf verify)";
const STEP_SIZES: &str = "4 (sizes)";
const STEP_DEBUG: &str = "5 (debug info)";
const STEP_UNWIND: &str = "6 (unwind tables)";

/// An FDE: its function's address and range, its own address, and its
/// LSDA's address when it names one.
type Fde = (u64, u64, u64, Option<u64>);

/// Every FDE of `.eh_frame` (section `eh`, at `bases`).
fn fdes(
    binary: &Path,
    eh: &object::Section<'_, '_>,
    bases: &gimli::BaseAddresses,
) -> Result<Vec<Fde>, String> {
    use gimli::UnwindSection as _;
    let fail = |e: gimli::Error| format!("{}: {e}", binary.display());
    let frame = gimli::EhFrame::new(eh.data().map_err(|e| e.to_string())?, gimli::LittleEndian);
    let mut fdes = Vec::new();
    let mut entries = frame.entries(bases);
    while let Some(entry) = entries.next().map_err(fail)? {
        if let gimli::CieOrFde::Fde(partial) = entry {
            let fde = partial
                .parse(gimli::EhFrame::cie_from_offset)
                .map_err(fail)?;
            let lsda = match fde.lsda() {
                Some(gimli::Pointer::Direct(lsda)) if lsda != 0 => Some(lsda),
                _ => None,
            };
            fdes.push((
                fde.initial_address(),
                fde.len(),
                eh.address() + fde.offset() as u64,
                lsda,
            ));
        }
    }
    Ok(fdes)
}

/// `.eh_frame`'s FDEs as (address, range, the FDE's own address), and
/// `.eh_frame_hdr`'s rows as (function, FDE address); whether `.eh_frame`
/// lies in the `PT_LOAD` holding `.text`.
type UnwindTables = (Vec<(u64, u64, u64)>, Vec<(u64, u64)>, bool);

/// Each FDE's (function address, LSDA address) where it names an
/// exception table, and `.gcc_except_table`'s `[start, end)` and alignment.
type ExceptionTables = (Vec<(u64, u64)>, Option<(u64, u64, u64)>);

fn exception_tables(binary: &Path) -> Result<ExceptionTables, String> {
    let data = std::fs::read(binary).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
    let table = file
        .section_by_name(".gcc_except_table")
        .map(|s| (s.address(), s.address() + s.size(), s.align()));
    let Some(eh) = file.section_by_name(".eh_frame") else {
        return Ok((Vec::new(), table));
    };
    let mut bases = gimli::BaseAddresses::default().set_eh_frame(eh.address());
    if let Some(text) = file.section_by_name(".text") {
        bases = bases.set_text(text.address());
    }
    let named = fdes(binary, &eh, &bases)?
        .into_iter()
        .filter(|&(_, range, _, _)| range > 0)
        .filter_map(|(function, _, _, lsda)| Some((function, lsda?)))
        .collect();
    Ok((named, table))
}

/// Each exception table an FDE describing code names, by the name of the
/// function the FDE describes: its length up to the next table any FDE
/// names (or the section's end); and the section's alignment.
fn exception_table_lengths(binary: &Path) -> Result<(HashMap<String, u64>, u64), String> {
    let (named, table) = exception_tables(binary)?;
    let Some((_, end, align)) = table else {
        return Ok((HashMap::new(), 1));
    };
    let data = std::fs::read(binary).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
    let mut names: HashMap<u64, String> = HashMap::new();
    for symbol in file.symbols() {
        if symbol.kind() == object::SymbolKind::Text
            && let Ok(name) = symbol.name()
        {
            names
                .entry(symbol.address())
                .or_insert_with(|| name.to_string());
        }
    }
    let mut starts: Vec<u64> = named.iter().map(|&(_, lsda)| lsda).collect();
    starts.sort_unstable();
    starts.dedup();
    let lengths = named
        .iter()
        .filter_map(|&(function, lsda)| {
            let next = starts.get(starts.partition_point(|&s| s <= lsda)).copied();
            Some((names.get(&function)?.clone(), next.unwrap_or(end) - lsda))
        })
        .collect();
    Ok((lengths, align))
}

/// Where the exception tables have a segment of their own, OUT holds no
/// exception table only removed code named: each function of OUT with a
/// table has one as long (up to the next table) as its table in IN, but
/// for the alignment padding after it; a table left behind between two
/// kept ones (4 bytes at least) would lengthen it.
fn exception_tables_of_removed_code_are_gone(input: &Path, output: &Path) -> Result<(), String> {
    let (_, _, with_text) = unwind_tables(input)?;
    if with_text {
        return Ok(());
    }
    let (before, _) = exception_table_lengths(input)?;
    let (after, align) = exception_table_lengths(output)?;
    for (function, length) in &after {
        if let Some(&was) = before.get(function)
            && was.abs_diff(*length) >= align.max(1)
        {
            return Err(format!(
                "{function}'s exception table runs {length} bytes to the next in OUT, {was} in IN"
            ));
        }
    }
    Ok(())
}

fn unwind_tables(binary: &Path) -> Result<UnwindTables, String> {
    use object::{Object as _, ObjectSection as _, ObjectSegment as _};
    let data = std::fs::read(binary).map_err(|e| e.to_string())?;
    let fail = |e: gimli::Error| format!("{}: {e}", binary.display());
    let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
    let (Some(eh), Some(hdr), Some(text)) = (
        file.section_by_name(".eh_frame"),
        file.section_by_name(".eh_frame_hdr"),
        file.section_by_name(".text"),
    ) else {
        return Ok((Vec::new(), Vec::new(), true));
    };
    let bases = gimli::BaseAddresses::default()
        .set_eh_frame(eh.address())
        .set_eh_frame_hdr(hdr.address())
        .set_text(text.address());
    let fdes = fdes(binary, &eh, &bases)?
        .into_iter()
        .map(|(function, range, at, _)| (function, range, at))
        .collect();
    let header =
        gimli::EhFrameHdr::new(hdr.data().map_err(|e| e.to_string())?, gimli::LittleEndian)
            .parse(&bases, 8)
            .map_err(fail)?;
    let mut rows = Vec::new();
    if let Some(table) = header.table() {
        let mut iter = table.iter(&bases);
        while let Some((function, fde)) = iter.next().map_err(fail)? {
            let direct = |pointer: gimli::Pointer| match pointer {
                gimli::Pointer::Direct(address) => Ok(address),
                gimli::Pointer::Indirect(_) => {
                    Err("an indirect pointer in .eh_frame_hdr".to_string())
                }
            };
            rows.push((direct(function)?, direct(fde)?));
        }
    }
    let with_text = file.segments().any(|segment| {
        let (start, end) = (segment.address(), segment.address() + segment.size());
        (start..end).contains(&text.address()) && (start..end).contains(&eh.address())
    });
    Ok((fdes, rows, with_text))
}

/// OUT's `.eh_frame_hdr` lists every FDE of OUT that describes code, at
/// its place and sorted, and nothing else; where the exception tables have
/// a segment of their own, a removed function's FDE is gone rather than
/// left covering nothing (OUT has no more empty FDEs than IN).
fn unwind_tables_list_every_fde(input: &Path, output: &Path) -> Result<(), String> {
    let (before, _, with_text) = unwind_tables(input)?;
    let (after, rows, _) = unwind_tables(output)?;
    let mut expected: Vec<(u64, u64)> = after
        .iter()
        .filter(|&&(_, range, _)| range > 0)
        .map(|&(function, _, fde)| (function, fde))
        .collect();
    expected.sort_unstable();
    if rows != expected {
        return Err(format!(
            "OUT's .eh_frame_hdr lists {} rows, its FDEs describing code are {}; first difference: {:x?}",
            rows.len(),
            expected.len(),
            rows.iter().zip(&expected).find(|(a, b)| a != b)
        ));
    }
    let empty = |fdes: &[(u64, u64, u64)]| fdes.iter().filter(|f| f.1 == 0).count();
    if !with_text && empty(&after) > empty(&before) {
        return Err(format!(
            "OUT has {} FDEs covering nothing, IN {}: removed functions' FDEs were left in place",
            empty(&after),
            empty(&before)
        ));
    }
    Ok(())
}

/// Function symbols of `.symtab` by index: (address, size).
fn function_symbols(path: &Path) -> Result<Vec<Option<(u64, u64)>>, String> {
    let data = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let file = object::File::parse(&*data)
        .map_err(|e| format!("{}: not an object file: {e}", path.display()))?;
    Ok(file
        .symbols()
        .map(|symbol| {
            (symbol.kind() == object::SymbolKind::Text && symbol.is_definition())
                .then(|| (symbol.address(), symbol.size()))
        })
        .collect())
}

/// What `llvm-symbolizer-19` says of each of `addresses` in `binary`: its
/// frames, innermost first, each a function and its file:line:column.
fn symbolize(binary: &Path, addresses: &[u64]) -> Result<Vec<String>, String> {
    use std::io::Write as _;
    let mut child = Command::new("llvm-symbolizer-19")
        .arg(format!("--obj={}", binary.display()))
        .args(["--functions=linkage", "--inlines"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("running llvm-symbolizer-19: {e}"))?;
    let input: String = addresses.iter().map(|a| format!("{a:#x}\n")).collect();
    child
        .stdin
        .take()
        .ok_or("llvm-symbolizer-19 has no stdin")?
        .write_all(input.as_bytes())
        .map_err(|e| format!("writing to llvm-symbolizer-19: {e}"))?;
    let output = child
        .wait_with_output()
        .map_err(|e| format!("llvm-symbolizer-19: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let frames: Vec<String> = text
        .split("\n\n")
        .map(|block| block.trim().to_string())
        .filter(|block| !block.is_empty())
        .collect();
    if frames.len() != addresses.len() {
        return Err(format!(
            "llvm-symbolizer-19 answered {} of {} addresses in {}",
            frames.len(),
            addresses.len(),
            binary.display()
        ));
    }
    Ok(frames)
}

/// The DWARF of `binary`, read from its bytes `data`.
type Dwarf<'data> = gimli::Dwarf<gimli::EndianSlice<'data, gimli::LittleEndian>>;

fn load_dwarf<'data>(file: &object::File<'data>) -> Dwarf<'data> {
    let load = |id: gimli::SectionId| -> Result<_, ()> {
        let bytes = file
            .section_by_name(id.name())
            .and_then(|section| section.data().ok())
            .unwrap_or_default();
        Ok(gimli::EndianSlice::new(bytes, gimli::LittleEndian))
    };
    match gimli::Dwarf::load(load) {
        Ok(dwarf) => dwarf,
        Err(()) => unreachable!("loading never fails"),
    }
}

/// Where the code of IN that OUT keeps went: (start, end, new start) of
/// every function with a body of its own in OUT, sorted.
fn moved_functions(input: &Path, output: &Path) -> Result<Vec<(u64, u64, u64)>, String> {
    let (before, after) = (function_symbols(input)?, function_symbols(output)?);
    let mut at_address: std::collections::HashMap<u64, std::collections::BTreeSet<u64>> =
        std::collections::HashMap::new();
    for (old, new) in before.iter().zip(&after) {
        if let (Some((old, _)), Some((new, _))) = (old, new) {
            at_address.entry(*new).or_default().insert(*old);
        }
    }
    let mut moved: Vec<(u64, u64, u64)> = before
        .iter()
        .zip(&after)
        .filter_map(|pair| match pair {
            (Some((old, size)), Some((new, new_size)))
                if size == new_size && *size > 0 && at_address[new].len() == 1 =>
            {
                Some((*old, old + size, *new))
            }
            _ => None,
        })
        .collect();
    moved.sort_unstable();
    moved.dedup();
    Ok(moved)
}

/// Every DIE's ranges and location list entries that lie in kept code
/// of IN (`moved_functions`) are in OUT, moved as that code moved (the
/// DIEs are at the same offsets: `.debug_info` keeps its layout).
fn ranges_and_locations_move_with_their_code(input: &Path, output: &Path) -> Result<(), String> {
    let moved = moved_functions(input, output)?;
    let mapped = |begin: u64, end: u64| -> Option<(u64, u64)> {
        let after = moved.partition_point(|&(start, _, _)| start <= begin);
        let &(start, stop, new) = moved.get(after.checked_sub(1)?)?;
        (end <= stop && begin < end).then(|| (begin - start + new, end - start + new))
    };
    // Where an address an expression holds went: known in kept code, and
    // outside .text, where each section moves as one (those after it in its
    // segment move down).
    let sections = |path: &Path| -> Result<Vec<(String, u64, u64)>, String> {
        let data = std::fs::read(path).map_err(|e| e.to_string())?;
        let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
        Ok(file
            .sections()
            .filter(|s| s.address() != 0)
            .map(|s| {
                (
                    s.name().unwrap_or_default().to_string(),
                    s.address(),
                    s.size(),
                )
            })
            .collect())
    };
    let (sections_in, sections_out) = (sections(input)?, sections(output)?);
    let point = |address: u64| -> Option<u64> {
        if let Some((new, _)) = mapped(address, address + 1) {
            return Some(new);
        }
        let (name, start, _) = sections_in
            .iter()
            .find(|(_, start, size)| (*start..start + size).contains(&address))?;
        if name == ".text" {
            return None;
        }
        let (_, new_start, _) = sections_out.iter().find(|(other, _, _)| other == name)?;
        Some(address - start + new_start)
    };
    let (data_in, data_out) = (
        std::fs::read(input).map_err(|e| e.to_string())?,
        std::fs::read(output).map_err(|e| e.to_string())?,
    );
    let (file_in, file_out) = (
        object::File::parse(&*data_in).map_err(|e| e.to_string())?,
        object::File::parse(&*data_out).map_err(|e| e.to_string())?,
    );
    let (was, is) = (load_dwarf(&file_in), load_dwarf(&file_out));
    let fail = |e: gimli::Error| format!("reading DWARF: {e}");
    let (mut units_in, mut units_out) = (was.units(), is.units());
    let mut checked = 0usize;
    while let (Some(header_in), Some(header_out)) = (
        units_in.next().map_err(fail)?,
        units_out.next().map_err(fail)?,
    ) {
        let (unit_in, unit_out) = (
            was.unit(header_in).map_err(fail)?,
            is.unit(header_out).map_err(fail)?,
        );
        let (mut entries_in, mut entries_out) = (unit_in.entries(), unit_out.entries());
        while let (Some(entry_in), Some(entry_out)) = (
            entries_in.next_dfs().map_err(fail)?,
            entries_out.next_dfs().map_err(fail)?,
        ) {
            let offset = entry_in.offset().0;
            // Ranges.
            let mut expected = Vec::new();
            let mut ranges = was.die_ranges(&unit_in, entry_in).map_err(fail)?;
            while let Some(range) = ranges.next().map_err(fail)? {
                expected.extend(mapped(range.begin, range.end));
            }
            if !expected.is_empty() {
                let mut actual = std::collections::HashSet::new();
                let mut ranges = is.die_ranges(&unit_out, entry_out).map_err(fail)?;
                while let Some(range) = ranges.next().map_err(fail)? {
                    actual.insert((range.begin, range.end));
                }
                if let Some(missing) = expected.iter().find(|range| !actual.contains(range)) {
                    return Err(format!(
                        "the DIE at unit offset {offset:#x}: OUT lacks the range {:#x}..{:#x}, \
                         where kept code moved; it has {actual:x?}",
                        missing.0, missing.1
                    ));
                }
                checked += expected.len();
            }
            // Location lists.
            for (attribute_in, attribute_out) in entry_in.attrs().iter().zip(entry_out.attrs()) {
                let Some(mut list_in) = was
                    .attr_locations(&unit_in, attribute_in.value())
                    .map_err(fail)?
                else {
                    continue;
                };
                let (mut expected, mut all) = (Vec::new(), Vec::new());
                while let Some(entry) = list_in.next().map_err(fail)? {
                    all.push((entry.range.begin, entry.range.end));
                    if let Some(range) = mapped(entry.range.begin, entry.range.end) {
                        let operations =
                            operations(entry.data, unit_in.encoding(), &point).map_err(fail)?;
                        expected.push((range, operations));
                    }
                }
                let mut actual = Vec::new();
                if let Some(mut list_out) = is
                    .attr_locations(&unit_out, attribute_out.value())
                    .map_err(fail)?
                {
                    while let Some(entry) = list_out.next().map_err(fail)? {
                        let operations = operations(entry.data, unit_out.encoding(), &|a| Some(a))
                            .map_err(fail)?;
                        actual.push(((entry.range.begin, entry.range.end), operations));
                    }
                }
                let found = |(range, operations): &((u64, u64), Vec<Option<String>>)| {
                    actual.iter().any(|(other, theirs)| {
                        other == range && operations_match(operations, theirs)
                    })
                };
                if let Some(missing) = expected.iter().find(|entry| !found(entry)) {
                    return Err(format!(
                        "the DIE at unit offset {offset:#x}: OUT's location list lacks the entry \
                         for {:#x}..{:#x} ({:?}), where kept code moved; IN's list {all:x?}, \
                         OUT's {actual:x?}",
                        missing.0.0, missing.0.1, missing.1,
                    ));
                }
                checked += expected.len();
            }
        }
    }
    if checked == 0 {
        return Err(
            "no range or location of IN lies in code OUT keeps: this proves nothing".to_string(),
        );
    }
    Ok(())
}

/// The FDEs of `binary`'s `.debug_frame`, as (start, end).
fn debug_frames(binary: &Path) -> Result<Vec<(u64, u64)>, String> {
    use gimli::UnwindSection as _;
    let data = std::fs::read(binary).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
    let Some(section) = file.section_by_name(".debug_frame") else {
        return Ok(Vec::new());
    };
    let bytes = section.data().map_err(|e| e.to_string())?;
    let frame = gimli::DebugFrame::new(bytes, gimli::LittleEndian);
    let bases = gimli::BaseAddresses::default();
    let mut entries = frame.entries(&bases);
    let mut fdes = Vec::new();
    let fail = |e: gimli::Error| format!("{}: .debug_frame: {e}", binary.display());
    while let Some(entry) = entries.next().map_err(fail)? {
        if let gimli::CieOrFde::Fde(partial) = entry {
            let fde = partial
                .parse(gimli::DebugFrame::cie_from_offset)
                .map_err(fail)?;
            fdes.push((fde.initial_address(), fde.end_address()));
        }
    }
    Ok(fdes)
}

/// Every FDE of IN's `.debug_frame` describing kept code is in OUT,
/// moved with it; and no FDE of OUT runs past the function it starts in.
fn frames_move_with_their_code(input: &Path, output: &Path) -> Result<(), String> {
    let before = debug_frames(input)?;
    if before.is_empty() {
        return Ok(());
    }
    let after = debug_frames(output)?;
    let moved = moved_functions(input, output)?;
    for &(start, end) in &before {
        let at = moved.partition_point(|&(first, _, _)| first <= start);
        let Some(&(first, last, new)) = at.checked_sub(1).map(|i| &moved[i]) else {
            continue;
        };
        if end > last || start == end {
            continue;
        }
        let expected = (start - first + new, end - first + new);
        if !after.contains(&expected) {
            return Err(format!(
                "IN's FDE {start:#x}..{end:#x} should be {:#x}..{:#x} in OUT, which has {after:x?}",
                expected.0, expected.1
            ));
        }
    }
    let data = std::fs::read(output).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
    let mut functions: Vec<(u64, u64)> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.is_definition() && s.size() > 0)
        .map(|s| (s.address(), s.address() + s.size()))
        .collect();
    functions.sort_unstable();
    for &(start, end) in after.iter().filter(|(start, end)| start < end) {
        let at = functions.partition_point(|&(first, _)| first <= start);
        if let Some(&(first, last)) = at.checked_sub(1).map(|i| &functions[i])
            && start < last
            && end > last
        {
            return Err(format!(
                "OUT's FDE {start:#x}..{end:#x} runs past the function at {first:#x}..{last:#x}"
            ));
        }
    }
    Ok(())
}

/// A location expression's operations as text, each address given by
/// `map`: `None` for an operation whose address cannot be foretold (one
/// in code OUT does not keep as it was), which matches any.
fn operations(
    expression: gimli::Expression<gimli::EndianSlice<'_, gimli::LittleEndian>>,
    encoding: gimli::Encoding,
    map: &dyn Fn(u64) -> Option<u64>,
) -> Result<Vec<Option<String>>, gimli::Error> {
    let mut operations = expression.operations(encoding);
    let mut text = Vec::new();
    while let Some(operation) = operations.next()? {
        text.push(match operation {
            gimli::Operation::Address { address } => {
                map(address).map(|address| format!("addr {address:#x}"))
            }
            other => Some(format!("{other:?}")),
        });
    }
    Ok(text)
}

/// Whether `actual` is what `expected` foretells.
fn operations_match(expected: &[Option<String>], actual: &[Option<String>]) -> bool {
    expected.len() == actual.len()
        && expected
            .iter()
            .zip(actual)
            .all(|(expected, actual)| expected.is_none() || expected == actual)
}

/// Whether every range of every `DW_TAG_subprogram` of `binary` that
/// starts in a function lies within that function (its symbol's
/// extent): a removed function's range must be empty, and a kept one's
/// must not run on over padding or into the next function.
fn subprograms_within_functions(binary: &Path) -> Result<(), String> {
    let data = std::fs::read(binary).map_err(|e| format!("reading {}: {e}", binary.display()))?;
    let file = object::File::parse(&*data).map_err(|e| format!("{}: {e}", binary.display()))?;
    let mut functions: Vec<(u64, u64)> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.is_definition() && s.size() > 0)
        .map(|s| (s.address(), s.address() + s.size()))
        .collect();
    functions.sort_unstable();
    let load =
        |id: gimli::SectionId| -> Result<gimli::EndianSlice<'_, gimli::LittleEndian>, String> {
            let bytes = file
                .section_by_name(id.name())
                .and_then(|section| section.data().ok())
                .unwrap_or_default();
            Ok(gimli::EndianSlice::new(bytes, gimli::LittleEndian))
        };
    let dwarf = gimli::Dwarf::load(load)?;
    let mut units = dwarf.units();
    let fail = |e: gimli::Error| format!("{}: reading DWARF: {e}", binary.display());
    while let Some(header) = units.next().map_err(fail)? {
        let unit = dwarf.unit(header).map_err(fail)?;
        let mut entries = unit.entries();
        while let Some(entry) = entries.next_dfs().map_err(fail)? {
            if entry.tag() != gimli::DW_TAG_subprogram {
                continue;
            }
            let mut ranges = dwarf.die_ranges(&unit, entry).map_err(fail)?;
            while let Some(range) = ranges.next().map_err(fail)? {
                if range.begin >= range.end {
                    continue;
                }
                let after = functions.partition_point(|&(start, _)| start <= range.begin);
                let Some(&(start, end)) = after.checked_sub(1).map(|i| &functions[i]) else {
                    continue;
                };
                if range.begin < end && range.end > end {
                    return Err(format!(
                        "the subprogram at .debug_info+{:#x} covers {:#x}..{:#x}, past the end of \
                         the function at {start:#x}..{end:#x}",
                        entry
                            .offset()
                            .to_debug_info_offset(&unit.header)
                            .map_or(0, |o| o.0),
                        range.begin,
                        range.end
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Whether every function of OUT with a body of its own (no other
/// function of IN moved to its address) symbolizes as it did in IN, at
/// one address in every 64 bytes; and IN names a source line for some.
fn symbolizes_alike(input: &Path, output: &Path) -> Result<(), String> {
    let (before, after) = (function_symbols(input)?, function_symbols(output)?);
    let mut at_address: std::collections::HashMap<u64, std::collections::BTreeSet<u64>> =
        std::collections::HashMap::new();
    for (old, new) in before.iter().zip(&after) {
        if let (Some((old, _)), Some((new, _))) = (old, new) {
            at_address.entry(*new).or_default().insert(*old);
        }
    }
    let mut pairs = Vec::new();
    for (old, new) in before.iter().zip(&after) {
        let (Some((old, size)), Some((new, new_size))) = (old, new) else {
            continue;
        };
        if size != new_size || at_address[new].len() != 1 {
            continue;
        }
        pairs.extend(
            (0..*size)
                .step_by(64)
                .map(|offset| (old + offset, new + offset)),
        );
    }
    pairs.sort_unstable();
    pairs.dedup();
    let (olds, news): (Vec<u64>, Vec<u64>) = pairs.iter().copied().unzip();
    let (was, is) = (symbolize(input, &olds)?, symbolize(output, &news)?);
    let lines = was.iter().filter(|frames| !frames.contains("??:0")).count();
    if lines == 0 {
        return Err(format!(
            "IN names no source line at any of the {} addresses: the check proves nothing",
            olds.len()
        ));
    }
    let differing: Vec<String> = pairs
        .iter()
        .zip(was.iter().zip(&is))
        .filter(|(_, (was, is))| was != is)
        .map(|((old, new), (was, is))| format!("IN {old:#x}:\n{was}\nOUT {new:#x}:\n{is}"))
        .collect();
    match differing.first() {
        None => Ok(()),
        Some(first) => Err(format!(
            "{} of {} addresses differ; the first:\n{first}",
            differing.len(),
            pairs.len()
        )),
    }
}

/// Runs every combination of `program`, as many at a time as there are
/// cores; the outcomes in the order of [`combinations`].
fn run_matrix(program: &Program) -> Vec<(Combination, Outcome)> {
    let all = combinations(program);
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..workers.min(all.len()) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&combination) = all.get(index) else {
                        break;
                    };
                    let outcome = check_combination(program, combination);
                    done.lock()
                        .expect("another worker panicked holding the lock")
                        .push((index, combination, outcome));
                }
            });
        }
    });
    let mut done = done
        .into_inner()
        .expect("a worker panicked holding the lock");
    done.sort_by_key(|(index, _, _)| *index);
    done.into_iter().map(|(_, c, o)| (c, o)).collect()
}

/// The table of sizes, one line per shrink.
fn table(program: &Program, outcomes: &[(Combination, Outcome)]) -> String {
    let mut table = format!(
        "{}: {:<26} {:<4} {:>8} {:>8} {:>7} {:>8}  result\n",
        program.name, "build", "mode", "IN file", "OUT file", "IN text", "OUT text"
    );
    for (combination, outcome) in outcomes {
        for row in &outcome.rows {
            let (file, text) = match row.output {
                Some(out) => (out.file.to_string(), out.text.to_string()),
                None => ("-".to_string(), "-".to_string()),
            };
            let result = if row.failed.is_empty() {
                format!("shrunk {}", row.shrunk)
            } else {
                format!("FAILED step {}", row.failed.join(", step "))
            };
            table.push_str(&format!(
                "{}: {:<26} {:<4} {:>8} {:>8} {:>7} {:>8}  {result}\n",
                program.name,
                combination.label(),
                row.mode,
                row.input.file,
                file,
                row.input.text,
                text,
            ));
        }
    }
    table
}

/// How many kinds of failure the final message shows in full, and how
/// many places of each it names.
const SHOWN_KINDS: usize = 6;
const SHOWN_PLACES: usize = 6;

/// The failures, the same failure (step, what and detail) once with the
/// places it happened.
fn describe(failures: &[&Failure], shrinks: usize) -> String {
    let mut kinds: Vec<Vec<&Failure>> = Vec::new();
    for &failure in failures {
        let same = |kind: &&mut Vec<&Failure>| {
            let first = kind[0];
            (first.step, &first.what, &first.detail)
                == (failure.step, &failure.what, &failure.detail)
        };
        match kinds.iter_mut().find(same) {
            Some(kind) => kind.push(failure),
            None => kinds.push(vec![failure]),
        }
    }
    let mut text = Vec::new();
    for kind in kinds.iter().take(SHOWN_KINDS) {
        let first = kind[0];
        let mut places: Vec<&str> = kind
            .iter()
            .take(SHOWN_PLACES)
            .map(|f| f.context.as_str())
            .collect();
        if kind.len() > SHOWN_PLACES {
            places.push("…");
        }
        text.push(format!(
            "step {}, in {} of {shrinks} shrinks: {}\n{}\n  in: {}\n  first IN: {}\n  first OUT: {}",
            first.step,
            kind.len(),
            first.what,
            first.detail.trim_end(),
            places.join("; "),
            first.paths.0.display(),
            first.paths.1.display(),
        ));
    }
    if kinds.len() > SHOWN_KINDS {
        text.push(format!(
            "… and {} more kinds of failure (`-- --nocapture` prints the table)",
            kinds.len() - SHOWN_KINDS
        ));
    }
    text.join("\n\n")
}

/// Builds and shrinks every combination of `program`; fails with every
/// check that went wrong.
fn check(program: &Program) -> Vec<(Combination, Outcome)> {
    let outcomes = run_matrix(program);
    eprint!("{}", table(program, &outcomes));
    let shrinks = outcomes.len() * MODES.len();

    // Every build prints the same: a change is the shrink's, and no
    // build's output is empty or accidental.
    let (first, first_outcome) = &outcomes[0];
    let differing: Vec<String> = outcomes
        .iter()
        .filter(|(_, outcome)| outcome.input != first_outcome.input)
        .map(|(combination, outcome)| {
            format!(
                "{} (exit {}):\n{}",
                combination.label(),
                outcome.input.exit,
                outcome.input.stdout
            )
        })
        .collect();
    assert!(
        differing.is_empty(),
        "{}: the builds print different things, IN of {} (exit {}):\n{}and\n{}",
        program.name,
        first.label(),
        first_outcome.input.exit,
        first_outcome.input.stdout,
        differing.join("\n")
    );

    let failures: Vec<&Failure> = outcomes
        .iter()
        .flat_map(|(_, outcome)| &outcome.failures)
        .collect();
    assert!(
        failures.is_empty(),
        "{}: {} checks failed:\n\n{}",
        program.name,
        failures.len(),
        describe(&failures, shrinks)
    );

    // Every program has functions to fold: some OUT must be smaller.
    let smaller = outcomes
        .iter()
        .flat_map(|(_, outcome)| &outcome.rows)
        .any(|row| row.output.is_some_and(|out| out.text < row.input.text));
    assert!(
        smaller,
        "{}: no OUT of the {shrinks} shrinks has a smaller .text than its IN",
        program.name
    );
    outcomes
}

#[test]
fn identical_functions_and_address_compared_twins() {
    check(&Program {
        name: "identical",
        sources: &["c/identical.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn anonymous_constants_fold_with_the_link_map() {
    let outcomes = check(&Program {
        name: "constants",
        sources: &[
            "shrink/constants_a.c",
            "shrink/constants_b.c",
            "shrink/constants_main.c",
        ],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
    // clang keeps each unit's initializers in sections of their own: on
    // x86-64 (the only architecture whose data moves by less than a page) the
    // second unit's copies fold into the first's, with every linker but
    // gold (which puts `.rodata` in `.text`'s segment, where nothing but
    // code moves).
    for (combination, outcome) in &outcomes {
        if combination.compiler != Compiler::Clang
            || combination.arch != Arch::X86_64
            || combination.linker == Linker::Gold
        {
            continue;
        }
        for row in &outcome.rows {
            assert!(
                row.shrunk.contains("read-only constants folded"),
                "constants {} {}: no constant folded: {}",
                combination.label(),
                row.mode,
                row.shrunk
            );
            // `after_table` reads its unit's copy of a constant that,
            // after the link, reads as the tail of an unbounded jump
            // table: the two units' copies fold only because the plan
            // sees the removed constant as the kept one (PIE: a non-PIE
            // build takes the constant's address as an immediate,
            // compared by value).
            if combination.flavour == Flavour::Pie {
                let out = icf_fixtures::source_dir()
                    .join("../target/shrink/constants")
                    .join(combination.label())
                    .join(format!("out-{}", row.mode));
                let (a, b) = (
                    function_address(&out, "a_after_table"),
                    function_address(&out, "b_after_table"),
                );
                assert_eq!(
                    a,
                    b,
                    "constants {} {}: a_after_table and b_after_table did not fold",
                    combination.label(),
                    row.mode
                );
            }
        }
    }
}

/// The address `.symtab` gives the function `name` in the image at `path`.
fn function_address(path: &Path, name: &str) -> u64 {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let file =
        object::File::parse(&*data).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    file.symbols()
        .find(|symbol| symbol.name() == Ok(name))
        .map(|symbol| symbol.address())
        .unwrap_or_else(|| panic!("{}: no symbol {name}", path.display()))
}

#[test]
fn equal_exception_tables_are_shared() {
    let outcomes = check(&Program {
        name: "shared_lsda",
        sources: &["shrink/shared_lsda.cpp"],
        cxx: true,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
    // `catch_a2`'s and `clean2`'s tables are `catch_a1`'s and `clean1`'s;
    // `catch_b`'s names another type and stays its own (the program
    // would catch the wrong exception and print otherwise). lld and mold
    // give the exception tables a segment of their own, which compacts;
    // gold puts them in `.text`'s, where they keep their layout (and so
    // does GNU ld's AArch64 layout here).
    let mut shared = 0;
    for (combination, outcome) in &outcomes {
        if !matches!(combination.linker, Linker::Lld | Linker::Mold) {
            continue;
        }
        for row in outcome.rows.iter().filter(|row| row.output.is_some()) {
            assert!(
                row.shrunk.contains("exception tables shared"),
                "shared_lsda {} {}: {}",
                combination.label(),
                row.mode,
                row.shrunk
            );
            shared += 1;
        }
    }
    assert!(shared > 0, "no build shared an exception table");
    // `icf verify` compares what the tables say: OUT with `catch_b`'s FDE
    // pointed at `catch_a1`'s table (catching `A`, where it caught `B`)
    // is rejected, though every instruction is the same.
    let dir = icf_fixtures::source_dir().join("../target/shrink/shared_lsda/clang-x86_64-lld-pie");
    let (input, output) = (dir.join("in"), dir.join("out-safe"));
    let wrong = dir.join("out-wrong-table");
    let bytes = with_exception_table_of(&output, "_Z7catch_bi", "_Z8catch_a1i");
    std::fs::write(&wrong, bytes).expect("writing the wrong output");
    let verified = icf_verify("safe", &input, &wrong, None);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
    assert!(
        !verified.status.success() && said.contains("exception handlers differ"),
        "icf verify accepted an FDE pointed at another type's exception table: {said}"
    );
}

/// The bytes of the image at `path` with the FDE of the function `from`
/// naming the exception table of the function `to` (a PC-relative
/// 4-byte LSDA pointer, as clang and gcc write it on x86-64).
fn with_exception_table_of(path: &Path, from: &str, to: &str) -> Vec<u8> {
    let mut data =
        std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let file = object::File::parse(&*data).expect("an ELF image");
    let address = |name: &str| {
        file.symbols()
            .find(|symbol| symbol.name() == Ok(name))
            .map(|symbol| symbol.address())
            .unwrap_or_else(|| panic!("{}: no {name}", path.display()))
    };
    let (from, to) = (address(from), address(to));
    let eh = file.section_by_name(".eh_frame").expect(".eh_frame");
    let bases = gimli::BaseAddresses::default().set_eh_frame(eh.address());
    let fdes = fdes(path, &eh, &bases).expect("FDEs");
    let lsda_of = |function: u64| {
        fdes.iter()
            .find(|fde| fde.0 == function)
            .and_then(|fde| fde.3)
            .expect("an FDE with an exception table")
    };
    let fde_address = fdes
        .iter()
        .find(|fde| fde.0 == from)
        .map(|fde| fde.2)
        .expect("the FDE");
    // length, CIE pointer, function (4), range (4), augmentation length.
    let place = fde_address + 17;
    let value = (lsda_of(to) as i64 - place as i64) as i32;
    let (file_offset, _) = eh.file_range().expect("in the file");
    let at = (file_offset + (place - eh.address())) as usize;
    drop(file);
    data[at..at + 4].copy_from_slice(&value.to_le_bytes());
    data
}

#[test]
fn callers_lookup_tables_and_jump_tables() {
    check(&Program {
        name: "fold_cases",
        sources: &["c/fold_cases.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn functions_in_constant_and_writable_pointer_tables() {
    check(&Program {
        name: "pointer_table",
        sources: &["report/pointer_table.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn static_twins_across_objects_and_compared_addresses() {
    check(&Program {
        name: "cross",
        sources: &["e2e/cross_a.c", "e2e/cross_b.c", "e2e/cross_main.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn virtual_functions_and_function_pointers_in_data() {
    check(&Program {
        name: "virtual",
        sources: &["e2e/virtual_main.cpp", "e2e/virtual_tile.cpp"],
        cxx: true,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
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
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn functions_with_exception_tables() {
    check(&Program {
        name: "exceptions",
        sources: &["e2e/exceptions_main.cpp"],
        cxx: true,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn standard_containers_in_two_units_without_function_sections() {
    check(&Program {
        name: "containers",
        sources: &[
            "shrink/containers_a.cpp",
            "shrink/containers_b.cpp",
            "shrink/containers_main.cpp",
        ],
        cxx: true,
        shape: Shape::Executable,
        function_sections: false,
        // A PIE only: mold 1.10.1 aborts linking these objects `-q` into a
        // non-PIE executable (`get_output_sym_idx`: `i != -1`), -g or not.
        flavours: Some(&[Flavour::Pie]),
        cflags: &[],
    });
}

#[test]
fn frames_described_by_debug_frame_without_unwind_tables() {
    // Without unwind tables, -g describes frames in .debug_frame, which
    // names every function's code.
    check(&Program {
        name: "debug_frame",
        sources: &["e2e/cross_a.c", "e2e/cross_b.c", "e2e/cross_main.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &["-fno-asynchronous-unwind-tables", "-fno-unwind-tables"],
    });
}

#[test]
fn thunks_to_functions_with_landing_pads() {
    // In mode safe the twins (taken by address) become thunks; each keeps
    // its FDE, emptied, whose LSDA still names landing pads counted from
    // the thunk: `icf verify` once decoded the kept copy from them.
    check(&Program {
        name: "shapes",
        sources: &[
            "lto/shapes_a.cpp",
            "lto/shapes_b.cpp",
            "lto/shapes_main.cpp",
        ],
        cxx: true,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn a_tail_call_through_the_got_relaxed_by_the_linker() {
    check(&Program {
        name: "no_plt",
        sources: &[
            "shrink/no_plt_b.c",
            "shrink/no_plt_a.c",
            "shrink/no_plt_main.c",
        ],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &["-fno-plt"],
    });
}

#[test]
fn a_shared_library_s_exported_and_hidden_twins() {
    check(&Program {
        name: "shlib",
        sources: &["e2e/shlib.c"],
        cxx: false,
        shape: Shape::Library {
            loader: "e2e/shlib_main.c",
        },
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn identical_functions_in_one_section_per_unit() {
    // Without -ffunction-sections the assembler resolves calls between the
    // functions of a unit: fields no kept relocation names.
    check(&Program {
        name: "identical_one_section",
        sources: &["c/identical.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: false,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn a_pointer_to_an_ifunc_keeps_naming_its_plt_entry() {
    check(&Program {
        name: "ifunc_pointer",
        sources: &["shrink/ifunc_pointer.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn a_function_aligned_to_64_keeps_its_alignment() {
    check(&Program {
        name: "aligned",
        sources: &["shrink/aligned.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn a_function_a_short_jump_reaches_keeps_its_body() {
    check(&Program {
        name: "short_jump",
        sources: &["shrink/short_jump.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: false,
        flavours: None,
        cflags: &[],
    });
}

#[test]
fn code_moved_beyond_an_adr_s_reach_of_its_data() {
    // `far` moves down about 1.5 MiB on AArch64; lld relaxed its `adrp` +
    // `add` and its GOT `adrp` + `ldr` to `nop; adr`, written back as
    // `adrp` + `add`. Had `far` kept its place instead, .text would keep
    // its size (the freed code before it left as a gap).
    let outcomes = check(&Program {
        name: "far_data",
        sources: &["shrink/far_data.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: Some(&[Flavour::Pie]),
        // `shared` through the GOT (-fPIE would reach it directly).
        cflags: &["-fPIC"],
    });
    for (combination, outcome) in &outcomes {
        if combination.arch != Arch::Aarch64 || refusal(*combination).is_some() {
            continue;
        }
        for row in &outcome.rows {
            let out = row.output.as_ref().map(|out| out.text);
            assert!(
                out.is_some_and(|out| out + (1 << 20) < row.input.text),
                "{} {}: .text {} -> {out:?}: far did not move beyond adr's reach ({})",
                combination.label(),
                row.mode,
                row.input.text,
                row.shrunk
            );
        }
    }
}

#[test]
fn lld_s_erratum_843419_patch_moves_with_the_code() {
    // lld moved `far`'s load into `__CortexA53843419_*` after the code and
    // branched there; the twins before `far` fold, and the patch, its
    // branches and the GOT fields around it move with `.text` instead of
    // keeping `far` (and so `.text`'s size) in place.
    let dir = fresh_dir("erratum_patch");
    let build = Build {
        compiler: Compiler::Gcc,
        arch: Arch::Aarch64,
        function_sections: true,
        extra_flags: vec!["-fPIC".to_string()],
    };
    let fixtures = icf_fixtures::source_dir().join("shrink");
    let mut objects = Vec::new();
    for source in ["erratum_patch.s", "erratum_patch_main.c"] {
        let object = dir.join(source).with_extension("o");
        let mut compile = std::process::Command::new(build.driver(false));
        compile
            .args(["-O2", "-fPIC", "-ffunction-sections", "-c"])
            .arg(fixtures.join(source))
            .arg("-o")
            .arg(&object);
        run_to_success(&mut compile, source);
        objects.push(object);
    }
    let input = dir.join("in");
    let mut link = build.link_command(false, Linker::Lld);
    link.args(["-pie", "-Wl,--fix-cortex-a53-843419", "-Wl,-q"])
        .args(&objects)
        .arg("-o")
        .arg(&input);
    run_to_success(&mut link, "linking with lld");
    let patched = std::process::Command::new("nm")
        .arg(&input)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("__CortexA53843419_"))
        .unwrap_or(false);
    assert!(
        patched,
        "lld wrote no erratum 843419 patch into {}",
        input.display()
    );
    let expected = behaviour(&mut icf_fixtures::run_command(Arch::Aarch64, &input))
        .unwrap_or_else(|e| panic!("running IN: {e}"));
    for mode in MODES {
        let output = dir.join(format!("out-{mode}"));
        let shrunk = icf_shrink(mode, &input, &output, None);
        let said = String::from_utf8_lossy(&shrunk.stdout).into_owned();
        assert!(
            shrunk.status.success() && !said.contains("kept in place"),
            "{said}{}",
            String::from_utf8_lossy(&shrunk.stderr)
        );
        let (before, after) = (sizes(&input), sizes(&output));
        let (before, after) = (before.expect("IN's sizes"), after.expect("OUT's sizes"));
        assert!(
            after.text + 16 * 1024 <= before.text,
            "{mode}: .text {} -> {}",
            before.text,
            after.text
        );
        let actual = behaviour(&mut icf_fixtures::run_command(Arch::Aarch64, &output))
            .unwrap_or_else(|e| panic!("running OUT: {e}"));
        assert_eq!(actual, expected, "{mode}");
        let verified = icf_verify(mode, &input, &output, None);
        assert!(
            verified.status.success(),
            "{}",
            String::from_utf8_lossy(&verified.stdout)
        );
    }
}

#[test]
fn a_page_kept_past_a_call_still_points_into_its_data() {
    // GNU ld puts `.rodata` after `.text` in one segment; `table_byte`
    // keeps `table`'s page in a register across a call, which a return
    // may hand back. When the twins fold, the data behind `.text` moved
    // by 128 bytes, not a whole page: the page kept pointed elsewhere in
    // `.rodata`, and `icf verify` rejected every GNU ld output.
    let dir = fresh_dir("page_past_call");
    let fixtures = icf_fixtures::source_dir().join("shrink");
    let build = Build {
        compiler: Compiler::Gcc,
        arch: Arch::Aarch64,
        function_sections: false,
        extra_flags: Vec::new(),
    };
    let mut failures = Vec::new();
    // gold's AArch64 `-q` output is refused (`shape.rs`).
    for linker in Linker::ALL.into_iter().filter(|&l| l != Linker::Gold) {
        let input = dir.join(format!("in-{}", linker.name()));
        run_to_success(
            build
                .link_command(false, linker)
                .arg("-O2")
                .arg(fixtures.join("page_past_call.s"))
                .arg(fixtures.join("page_past_call_main.c"))
                .args(["-Wl,-q", "-o"])
                .arg(&input),
            &input.display().to_string(),
        );
        let runner = Runner {
            arch: Arch::Aarch64,
            loader: None,
        };
        let shrinking = Shrinking::of(input.clone(), runner, None);
        for mode in MODES {
            let output = dir.join(format!("out-{}-{mode}", linker.name()));
            let context = format!("page_past_call {} {mode}", linker.name());
            let (row, failed) = shrinking.shrink(mode, &output, &context);
            let why = describe(&failed.iter().collect::<Vec<_>>(), 1);
            failures.extend(failed);
            assert!(
                row.output.is_some_and(|out| out.text < row.input.text),
                "{context}: .text did not shrink: {}\n{why}",
                row.shrunk
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} checks failed:\n\n{}",
        failures.len(),
        describe(&failures.iter().collect::<Vec<_>>(), 16)
    );
}

#[test]
fn literal_pools_take_the_addresses_they_hold() {
    check(&Program {
        name: "literal_pool",
        sources: &["shrink/literal_pool.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: Some(&[Flavour::LargeCodeModel]),
        cflags: &[],
    });
}

#[test]
fn the_code_segment_closes_up_behind_shorter_exception_tables() {
    let mut outcomes = check(&Program {
        name: "many_twins",
        sources: &["shrink/many_twins.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
    let library = check(&Program {
        name: "many_twins_lib",
        sources: &["shrink/many_twins_lib.c"],
        cxx: false,
        shape: Shape::Library {
            loader: "e2e/shlib_main.c",
        },
        function_sections: true,
        flavours: None,
        cflags: &[],
    });
    let library_from = outcomes.len();
    outcomes.extend(library);
    // lld's AArch64 layout (an executable and a shared library): the
    // exception tables' segment, then `.text`'s, each aligned to 64 KiB.
    // With 511 FDEs and `.eh_frame_hdr` rows fewer, `.text`'s segment
    // moves down in addresses by whole pages, and starts in the file
    // within a page of where the segment before now ends (kept at its
    // address, it could move only by 64 KiB).
    let mut checked = 0;
    for (index, (combination, outcome)) in outcomes.iter().enumerate() {
        if combination.arch != Arch::Aarch64 || combination.linker != Linker::Lld {
            continue;
        }
        let (name, input) = if index < library_from {
            ("many_twins", "in")
        } else {
            ("many_twins_lib", "libin.so")
        };
        let dir = icf_fixtures::source_dir()
            .join("../target/shrink")
            .join(name)
            .join(combination.label());
        use object::read::elf::ProgramHeader as _;
        let code_segment = |path: &Path| {
            let data =
                std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            let file = object::read::elf::ElfFile64::<object::LittleEndian>::parse(&*data)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let endian = object::LittleEndian;
            let loads: Vec<(u64, u64, u64, u32)> = file
                .elf_program_headers()
                .iter()
                .filter(|p| p.p_type(endian) == object::elf::PT_LOAD)
                .map(|p| {
                    (
                        p.p_offset(endian),
                        p.p_vaddr(endian),
                        p.p_filesz(endian),
                        p.p_flags(endian).0,
                    )
                })
                .collect();
            let code = loads
                .iter()
                .position(|&(_, _, _, flags)| flags & object::elf::PF_X.0 != 0)
                .unwrap_or_else(|| panic!("{}: no code segment", path.display()));
            let (before_offset, _, before_size, _) = loads[code - 1];
            (loads[code].1, loads[code].0 - (before_offset + before_size))
        };
        let (in_address, _) = code_segment(&dir.join(input));
        for row in &outcome.rows {
            let out = match index < library_from {
                true => format!("out-{}", row.mode),
                false => format!("libout-{}.so", row.mode),
            };
            let (out_address, gap) = code_segment(&dir.join(out));
            assert!(
                out_address < in_address && (in_address - out_address) % 4096 == 0,
                "{name} {} {}: the code segment at {out_address:#x}, was {in_address:#x}",
                combination.label(),
                row.mode
            );
            assert!(
                gap < 4096,
                "{name} {} {}: {gap} bytes between the code segment and the one before",
                combination.label(),
                row.mode
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "many_twins: no AArch64 lld build shrunk");
}

#[test]
fn a_link_map_of_another_link_is_refused() {
    // The same program linked three times: with its map; with its
    // functions in another order (`main` first), so that they straddle the
    // first map's input sections; at another base address, where the first
    // map lists nothing in `.text`. Either map would give the image another
    // image's alignments and constants.
    let dir = fresh_dir("other_map");
    let build = Build::new(Compiler::Gcc);
    let map = dir.join("plain.map");
    let order = dir.join("order.txt");
    std::fs::write(&order, "main\n").expect("writing the symbol order");
    let links = [
        ("plain", format!("-Wl,-Map={}", map.display())),
        (
            "reordered",
            format!("-Wl,--symbol-ordering-file={}", order.display()),
        ),
        ("rebased", "-Wl,--image-base=0x40000000".to_string()),
    ];
    for (name, flag) in &links {
        let flags = ["-Wl,-q", flag.as_str()];
        link(
            &build,
            false,
            Linker::Lld,
            &["shrink/aligned.c"],
            &flags,
            &dir.join(name),
        );
    }
    let out = dir.join("out");
    for (name, why) in [
        ("reordered", "runs past the input section"),
        ("rebased", "lists no input section in .text"),
    ] {
        let shrunk = icf_shrink("safe", &dir.join(name), &out, Some(&map));
        let stderr = String::from_utf8_lossy(&shrunk.stderr);
        assert_eq!(shrunk.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(why), "{name}: {stderr}");
        assert!(
            !out.exists(),
            "{name}: a refused shrink wrote {}",
            out.display()
        );
    }
    // `icf verify --plain-map` refuses it too: it would name other files.
    let verified = icf_verify(
        "safe",
        &dir.join("reordered"),
        &dir.join("plain"),
        Some(&map),
    );
    let stderr = String::from_utf8_lossy(&verified.stderr);
    assert!(!verified.status.success(), "{stderr}");
    assert!(stderr.contains("does not describe this image"), "{stderr}");
    // Its own map is taken.
    let own = icf_shrink("safe", &dir.join("plain"), &out, Some(&map));
    assert!(
        own.status.success(),
        "{}",
        String::from_utf8_lossy(&own.stderr)
    );
}

#[test]
fn a_static_program_and_the_c_library_linked_into_it() {
    check(&Program {
        name: "static_libc",
        sources: &["shrink/static_libc.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: Some(&[Flavour::Static]),
        cflags: &[],
    });
}

/// x86-64 assembly: twins `twin1` and `twin2` before `big`, which
/// dispatches through a table of `entries` offsets (`.long .Lc - .Ltable`
/// in `.rodata`: each a relocation against `.text`, the cases being in
/// another section) by an index only masked (`and`), so that no range
/// check says how many entries it has; `main` prints what each returns.
fn big_table_program(entries: u32) -> String {
    let mut s = String::from(".text\n");
    for twin in ["twin1", "twin2"] {
        s += &format!(
            ".globl {twin}\n.type {twin},@function\n.p2align 4\n{twin}:\n  lea 7(%rdi), %eax\n  \
             imul $3, %eax, %eax\n  ret\n.size {twin}, .-{twin}\n"
        );
    }
    s += &format!(
        ".globl big\n.type big,@function\n.p2align 4\nbig:\n  and ${:#x}, %edi\n  \
         lea .Ltable(%rip), %rdx\n  movslq (%rdx,%rdi,4), %rax\n  add %rdx, %rax\n  jmp *%rax\n\
         .Lc0:\n  lea 1(%rdi), %eax\n  ret\n.Lc1:\n  lea 2(%rdi), %eax\n  ret\n\
         .Lc2:\n  imul $5, %edi, %eax\n  ret\n.Lc3:\n  mov %edi, %eax\n  xor $0x55, %eax\n  ret\n\
         .size big, .-big\n",
        entries - 1
    );
    s += ".globl main\n.type main,@function\nmain:\n  push %rbx\n";
    for (callee, argument) in [
        ("twin1", 1),
        ("twin2", 2),
        ("big", 3),
        ("big", 16_390),
        ("big", 30_001),
    ] {
        s += &format!(
            "  mov ${argument}, %edi\n  call {callee}\n  mov %eax, %esi\n  lea .Lformat(%rip), %rdi\n  \
             xor %eax, %eax\n  call printf@PLT\n"
        );
    }
    s += "  xor %eax, %eax\n  pop %rbx\n  ret\n.size main, .-main\n";
    s += ".section .rodata\n.Lformat: .asciz \"%d\\n\"\n.p2align 2\n.Ltable:\n";
    for k in 0..entries {
        s += &format!("  .long .Lc{}-.Ltable\n", k % 4);
    }
    s + ".section .note.GNU-stack,\"\",@progbits\n"
}

#[test]
fn a_jump_table_of_more_than_16384_entries_without_a_range_check_moves_with_its_code() {
    // 32,768 entries: past the 16,384 an entry may lie from its table when
    // its case leads out of the code that reads the table; these lead into it.
    let dir = fresh_dir("big_table");
    let source = dir.join("big_table.s");
    std::fs::write(&source, big_table_program(1 << 15))
        .unwrap_or_else(|e| panic!("writing {}: {e}", source.display()));
    let build = Build::new(Compiler::Gcc);
    let mut failures = Vec::new();
    let mut shrinks = 0;
    for linker in [Linker::Bfd, Linker::Lld] {
        for flavour in [Flavour::Pie, Flavour::NoPie] {
            let label = format!("{}-{}", linker.name(), flavour.name());
            let input = dir.join(format!("in-{label}"));
            run_to_success(
                build
                    .link_command(false, linker)
                    .arg(&source)
                    .args(flavour.link_flags())
                    .arg("-Wl,-q")
                    .arg("-o")
                    .arg(&input),
                &input.display().to_string(),
            );
            let runner = Runner {
                arch: Arch::X86_64,
                loader: None,
            };
            let shrinking = Shrinking::of(input, runner, None);
            for mode in MODES {
                let output = dir.join(format!("out-{label}-{mode}"));
                let (row, failed) =
                    shrinking.shrink(mode, &output, &format!("big_table {label} {mode}"));
                assert!(
                    row.output.is_none_or(|out| out.text < row.input.text) || !failed.is_empty(),
                    "big_table {label} {mode}: .text did not shrink"
                );
                failures.extend(failed);
                shrinks += 1;
            }
        }
    }
    let failures: Vec<&Failure> = failures.iter().collect();
    assert!(failures.is_empty(), "{}", describe(&failures, shrinks));
}

/// `fixtures/shrink/kept_in_place.s` (x86-64): bytes that may be data in
/// code naming another function's middle, and a text relocation, in
/// functions the fold before them would move. Each linker: the shrink keeps
/// those functions whole and in place instead of refusing, counts them by
/// kind in its summary and its JSON report, and OUT behaves as IN and
/// verifies (steps 1 to 4).
#[test]
fn a_pointer_one_past_a_constant_s_end_keeps_the_constant() {
    // `fixtures/shrink/constant_ends.s`: `.Lm2` folds into `.Lm1`, `.Lk2`
    // (whose end `sum_k2` points at, `.Lk3`'s start) keeps its bytes.
    // The objects are compiled apart (not by the link's driver, whose
    // temporary objects are gone when the shrink reads the map).
    let dir = fresh_dir("constant_ends");
    let mut failures = Vec::new();
    for linker in Linker::ALL {
        for flavour in [Flavour::Pie, Flavour::NoPie] {
            let label = format!("{}-{}", linker.name(), flavour.name());
            let input = dir.join(format!("in-{label}"));
            let map = dir.join(format!("in-{label}.map"));
            let build = Build {
                extra_flags: flavour.code_model().iter().map(|f| f.to_string()).collect(),
                ..Build::new(Compiler::Gcc)
            };
            let map_flag = format!("-Wl,-Map={}", map.display());
            let mut flags = flavour.link_flags().to_vec();
            flags.extend(["-Wl,-q", map_flag.as_str()]);
            link(
                &build,
                false,
                linker,
                &["shrink/constant_ends.s", "shrink/constant_ends_main.c"],
                &flags,
                &input,
            );
            let runner = Runner {
                arch: Arch::X86_64,
                loader: None,
            };
            let mut shrinking = Shrinking::of(input.clone(), runner, None);
            shrinking.map = Some(map);
            for mode in MODES {
                let output = dir.join(format!("out-{label}-{mode}"));
                let context = format!("constant_ends {label} {mode}");
                let (row, failed) = shrinking.shrink(mode, &output, &context);
                let why = describe(&failed.iter().collect::<Vec<_>>(), 1);
                failures.extend(failed);
                // gold puts `.rodata` in `.text`'s segment: nothing folds.
                if linker != Linker::Gold {
                    assert!(
                        row.shrunk
                            .contains("; 1 read-only constants folded (-12 bytes)"),
                        "{context}: {}\n{why}",
                        row.shrunk
                    );
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} checks failed:\n\n{}",
        failures.len(),
        describe(&failures.iter().collect::<Vec<_>>(), 16)
    );
}

#[test]
fn functions_no_new_layout_can_describe_keep_their_place() {
    let dir = fresh_dir("kept_in_place");
    let source = icf_fixtures::source_dir().join("shrink/kept_in_place.s");
    let build = Build::new(Compiler::Gcc);
    let mut failures = Vec::new();
    let mut shrinks = 0;
    for linker in Linker::ALL {
        let input = dir.join(format!("in-{}", linker.name()));
        run_to_success(
            build
                .link_command(false, linker)
                .arg(&source)
                .args(["-pie", "-Wl,-z,notext", "-Wl,-q", "-o"])
                .arg(&input),
            &input.display().to_string(),
        );
        let runner = Runner {
            arch: Arch::X86_64,
            loader: None,
        };
        let shrinking = Shrinking::of(input.clone(), runner, None);
        for mode in MODES {
            let output = dir.join(format!("out-{}-{mode}", linker.name()));
            let context = format!("kept_in_place {} {mode}", linker.name());
            let (row, failed) = shrinking.shrink(mode, &output, &context);
            // What failed, should the shrink itself have failed.
            let why = describe(&failed.iter().collect::<Vec<_>>(), 1);
            failures.extend(failed);
            shrinks += 1;
            assert!(
                row.shrunk
                    .contains("; 3 kept in place (data-in-code 2, text-relocation 1)"),
                "{context}: {}\n{why}",
                row.shrunk
            );
            assert!(
                row.output.is_some_and(|out| out.text < row.input.text),
                "{context}: .text did not shrink: {}\n{why}",
                row.shrunk
            );
        }
        let report = dir.join(format!("report-{}.json", linker.name()));
        let output = dir.join(format!("out-{}-report", linker.name()));
        let shrunk = icf(&[
            "shrink".as_ref(),
            "--report".as_ref(),
            report.as_os_str(),
            input.as_os_str(),
            "-o".as_ref(),
            output.as_os_str(),
        ]);
        assert!(
            shrunk.status.success(),
            "{}",
            String::from_utf8_lossy(&shrunk.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(
            &std::fs::read(&report).unwrap_or_else(|e| panic!("reading {}: {e}", report.display())),
        )
        .expect("the report is JSON");
        assert_eq!(
            json["kept_in_place"],
            serde_json::json!({"data-in-code": 2, "text-relocation": 1}),
            "{}",
            report.display()
        );
    }
    let failures: Vec<&Failure> = failures.iter().collect();
    assert!(failures.is_empty(), "{}", describe(&failures, shrinks));
}

/// A Rust program whose panic unwinds through a chain of functions that
/// move (std's twins before them fold), linked `-q` by the `rust-lld`
/// rustc ships (its default), by GNU ld and by lld-19 (through clang-19):
/// with `RUST_BACKTRACE=1`,
/// OUT's backtrace names the same functions, files and lines as IN's
/// (which std symbolizes from the binary's own DWARF at run time).
#[test]
fn a_rust_panic_backtrace_names_the_same_frames() {
    let dir = fresh_dir("backtrace");
    let source = icf_fixtures::source_dir().join("shrink/backtrace.rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    // (name, the linker `linked_by` must find, rustc's flags)
    let linkers: [(&str, Linker, &[&str]); 3] = [
        ("rust-lld", Linker::Lld, &[]),
        ("bfd", Linker::Bfd, &["-C", "link-arg=-fuse-ld=bfd"]),
        (
            "lld",
            Linker::Lld,
            &["-C", "linker=clang-19", "-C", "link-arg=-fuse-ld=lld"],
        ),
    ];
    // The thread's id differs from run to run.
    let backtrace = |binary: &Path| -> (Option<i32>, String) {
        let output = Command::new(binary)
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", binary.display()));
        let stderr = String::from_utf8_lossy(&output.stderr)
            .lines()
            .map(|line| match (line.find(" ("), line.find(") panicked")) {
                (Some(open), Some(close)) if line.starts_with("thread ") => {
                    format!("{}{}\n", &line[..open], &line[close + 1..])
                }
                _ => format!("{line}\n"),
            })
            .collect();
        (output.status.code(), stderr)
    };
    let address_of = |binary: &Path, name: &str| -> u64 {
        let data = std::fs::read(binary).unwrap_or_else(|e| panic!("{e}"));
        let file = object::File::parse(&*data).unwrap_or_else(|e| panic!("{e}"));
        file.symbols()
            .find(|s| s.name().is_ok_and(|n| n.contains(name)))
            .unwrap_or_else(|| panic!("{}: no symbol {name}", binary.display()))
            .address()
    };
    for (linker, expected_linker, flags) in linkers {
        let input = dir.join(format!("in-{linker}"));
        run_to_success(
            Command::new(&rustc)
                .args([
                    "--edition",
                    "2021",
                    "-C",
                    "opt-level=2",
                    "-C",
                    "debuginfo=2",
                ])
                .args(["-C", "codegen-units=1", "-C", "link-arg=-Wl,-q"])
                .args(flags)
                .arg(&source)
                .arg("-o")
                .arg(&input),
            &input.display().to_string(),
        );
        assert_eq!(linked_by(&input), expected_linker, "{}", input.display());
        let (status, expected) = backtrace(&input);
        assert_eq!(status, Some(101), "IN must panic:\n{expected}");
        assert!(
            expected.contains("backtrace::check\n") && expected.contains("backtrace.rs:"),
            "IN's backtrace names no frame of its own:\n{expected}"
        );
        for mode in MODES {
            let output = dir.join(format!("out-{linker}-{mode}"));
            let shrink = icf_shrink(mode, &input, &output, None);
            let stderr = String::from_utf8_lossy(&shrink.stderr);
            assert!(shrink.status.success(), "{linker} {mode}: {stderr}");
            assert!(!stderr.contains("DWARF"), "{linker} {mode}: {stderr}");
            assert_ne!(
                address_of(&input, "9backtrace5check"),
                address_of(&output, "9backtrace5check"),
                "{linker} {mode}: the chain that panics did not move, so this proves nothing"
            );
            let (status, actual) = backtrace(&output);
            assert_eq!(status, Some(101), "{linker} {mode}");
            assert_eq!(
                actual, expected,
                "{linker} {mode}: OUT's backtrace differs from IN's"
            );
            let verify = icf_verify(mode, &input, &output, None);
            assert!(verify.status.success(), "{linker} {mode}: {verify:?}");
        }
    }
}

#[test]
fn with_verify_a_shrink_that_does_not_prove_writes_nothing() {
    // `c/identical.c` compares sub0's and sub1's addresses: in mode safe,
    // making sub1 an alias of sub0 is wrong (planted on purpose).
    let input = scratch_binary("verify_refuses", "-fno-PIE", &["-no-pie", "-Wl,-q"]);
    let dir = input.parent().expect("a directory").to_path_buf();
    let before =
        std::fs::read(&input).unwrap_or_else(|e| panic!("reading {}: {e}", input.display()));
    let runner = Runner {
        arch: Arch::X86_64,
        loader: None,
    };
    let expected = runner
        .run(&input)
        .unwrap_or_else(|e| panic!("{}: IN does not run: {e}", input.display()));
    let shrink = |output: &Path, extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["shrink".as_ref(), "--mode".as_ref(), "safe".as_ref()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.extend([input.as_os_str(), "-o".as_ref(), output.as_os_str()]);
        icf(&args)
    };
    // Without --verify the planted fold is written, and it behaves otherwise.
    let wrong = dir.join("wrong");
    let written = shrink(&wrong, &["--plant-fold", "alias:sub0=sub1"]);
    assert!(written.status.success(), "{written:?}");
    let behaviour = runner.run(&wrong).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(behaviour, expected, "the planted fold changes nothing");
    // With it, nothing is written, nothing is left behind, IN is untouched.
    let refused = dir.join("refused");
    let output = shrink(&refused, &["--verify", "--plant-fold", "alias:sub0=sub1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("icf: error: ")
            && stderr.contains("not written")
            && stderr.contains("sub"),
        "{stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(!refused.exists(), "{} was written", refused.display());
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("icf-unproved"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(std::fs::read(&input).ok(), Some(before), "IN was modified");
    // A correct shrink proves and is written.
    let proved = dir.join("proved");
    let output = shrink(&proved, &["--verify"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        runner.run(&proved).unwrap_or_else(|e| panic!("{e}")),
        expected
    );
}

#[test]
fn a_probe_note_follows_its_function() {
    let program = Program {
        name: "probe_note",
        sources: &["shrink/probe_note.c"],
        cxx: false,
        shape: Shape::Executable,
        function_sections: true,
        flavours: None,
        cflags: &[],
    };
    check(&program);
    // Every build's note names the same place in `probed` before and after.
    let mut checked = 0;
    for combination in combinations(&program) {
        if refusal(combination).is_some() {
            continue;
        }
        let dir = icf_fixtures::source_dir()
            .join("../target/shrink/probe_note")
            .join(combination.label());
        for mode in MODES {
            let offsets: Vec<u64> = [dir.join("in"), dir.join(format!("out-{mode}"))]
                .iter()
                .map(|path| probe_offset(path))
                .collect();
            assert_eq!(
                offsets[0],
                offsets[1],
                "{}: the probe moved apart from `probed`",
                dir.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "no probe note checked");
}

/// The distance from `probed` to the address of the first SystemTap probe
/// in `.note.stapsdt` (name, type 3, then the probe's address).
fn probe_offset(path: &Path) -> u64 {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let file = object::File::parse(&*bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let note = file
        .section_by_name(".note.stapsdt")
        .and_then(|s| s.data().ok())
        .unwrap_or_else(|| panic!("{}: no .note.stapsdt", path.display()));
    // namesz, descsz, type, "stapsdt\0", then the descriptor.
    let pc = note
        .get(20..28)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .unwrap_or_else(|| panic!("{}: short note", path.display()));
    let probed = file
        .symbols()
        .find(|s| s.name() == Ok("probed"))
        .unwrap_or_else(|| panic!("{}: no symbol probed", path.display()))
        .address();
    pc.wrapping_sub(probed)
}

/// `c/identical.c` built by gcc for x86-64 and linked by GNU ld with
/// `flags` into `NAME/NAME` in a scratch directory of its own.
fn scratch_binary(name: &str, code_model: &str, flags: &[&str]) -> PathBuf {
    let build = Build {
        extra_flags: vec![code_model.to_string()],
        ..Build::new(Compiler::Gcc)
    };
    let dir = icf_fixtures::source_dir()
        .join("../target/shrink/bad-input")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let binary = dir.join(name);
    link(
        &build,
        false,
        Linker::Bfd,
        &["c/identical.c"],
        flags,
        &binary,
    );
    binary
}

/// `icf shrink INPUT -o OUTPUT` fails cleanly: exit status 1 (no panic, no
/// signal), nothing on stdout, stderr an `icf: error: ` naming `input` and
/// saying each of `expected`, and `input` unchanged.
fn assert_shrink_fails(input: &Path, expected: &[&str]) {
    let before =
        std::fs::read(input).unwrap_or_else(|e| panic!("reading {}: {e}", input.display()));
    let output_path = input.with_extension("out");
    let output = icf(&[
        "shrink".as_ref(),
        input.as_os_str(),
        "-o".as_ref(),
        output_path.as_os_str(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let shown = format!(
        "`icf shrink {} -o {}`: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        input.display(),
        output_path.display(),
        output.status
    );
    let code = output.status.code();
    assert!(code.is_some(), "icf was killed by a signal\n{shown}");
    assert!(
        code != Some(101) && !stderr.contains("panicked"),
        "icf panicked\n{shown}"
    );
    assert_eq!(code, Some(1), "expected exit status 1\n{shown}");
    assert!(stdout.is_empty(), "expected nothing on stdout\n{shown}");
    assert!(
        stderr.starts_with("icf: error: "),
        "stderr does not start with `icf: error: `\n{shown}"
    );
    assert!(
        stderr.contains(&input.display().to_string()),
        "the error does not name {}\n{shown}",
        input.display()
    );
    for want in expected {
        assert!(stderr.contains(want), "stderr lacks {want:?}\n{shown}");
    }
    let after = std::fs::read(input).unwrap_or_else(|e| panic!("reading {}: {e}", input.display()));
    assert!(before == after, "{} was modified\n{shown}", input.display());
}

#[test]
fn a_binary_linked_without_kept_relocations_is_refused() {
    // A PIE still has dynamic relocations, a non-PIE executable none, a
    // shared library both kinds: none of them is enough.
    for (name, code_model, flags) in [
        ("no-q-pie", "-fPIE", &["-pie"][..]),
        ("no-q-no-pie", "-fno-PIE", &["-no-pie"][..]),
    ] {
        let binary = scratch_binary(name, code_model, flags);
        assert_shrink_fails(&binary, &["--emit-relocs"]);
    }
    let library = {
        let build = Build {
            extra_flags: vec!["-fPIC".to_string()],
            ..Build::new(Compiler::Gcc)
        };
        let dir = icf_fixtures::source_dir().join("../target/shrink/bad-input/no-q-shared");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        let library = dir.join("libno-q.so");
        link(
            &build,
            false,
            Linker::Bfd,
            &["e2e/shlib.c"],
            &["-shared"],
            &library,
        );
        library
    };
    assert_shrink_fails(&library, &["--emit-relocs"]);
}

#[test]
fn a_truncated_binary_is_an_error_naming_it() {
    let binary = scratch_binary("truncated", "-fPIE", &["-pie", "-Wl,-q"]);
    let data = std::fs::read(&binary).expect("reading the binary just linked");
    // Half the file: the section headers, at the end, are gone.
    std::fs::write(&binary, &data[..data.len() / 2]).expect("truncating the binary");
    assert_shrink_fails(&binary, &[]);
    // Only the ELF header left.
    std::fs::write(&binary, &data[..64]).expect("truncating the binary");
    assert_shrink_fails(&binary, &[]);
}

#[test]
fn a_segment_that_ends_where_the_code_segment_starts() {
    // When the read-only segment ends on a page, mold starts the code
    // segment, its PLT first, at that very address: the end of the region
    // shrink compacts (the exception tables and what follows them) is the
    // PLT's start, which stays. A fuzz finding (seed 5101): the PLT's
    // section header moved down with the region, and the program crashed.
    let dir = fresh_dir("flush_segment");
    let build = Build::bare(Compiler::Clang, Arch::X86_64);
    let compile = |source: &Path, object: &Path| {
        let mut command = build.driver_command(false);
        command
            .args(["-O2", "-fno-pic", "-ffunction-sections", "-c"])
            .arg(source)
            .arg("-o")
            .arg(object);
        run_to_success(&mut command, &source.display().to_string());
    };
    let main = dir.join("main.o");
    compile(
        &icf_fixtures::source_dir().join("shrink/flush_segment.c"),
        &main,
    );
    let (input, map) = (dir.join("in"), dir.join("in.map"));
    // `pad` returns a string of `length` bytes, the last of the segment.
    let link = |length: usize| {
        let source = dir.join("pad.c");
        let text = format!(
            "const char *pad(void) {{ return \"{}\"; }}\n",
            "x".repeat(length)
        );
        std::fs::write(&source, text).expect("writing pad.c");
        let object = dir.join("pad.o");
        compile(&source, &object);
        let mut command = build.link_command(false, Linker::Mold);
        command
            .args(["-no-pie", "-Wl,-q"])
            .arg(format!("-Wl,-Map={}", map.display()))
            .args([&main, &object])
            .arg("-o")
            .arg(&input);
        run_to_success(&mut command, "linking with mold");
    };
    // Where the segment holding `.eh_frame` ends, and where the next
    // segment starts.
    let segments = || {
        let data = std::fs::read(&input).expect("reading IN");
        let file =
            object::read::elf::ElfFile64::<object::LittleEndian>::parse(&*data).expect("IN is ELF");
        use object::read::elf::ProgramHeader;
        let eh_frame = file
            .section_by_name(".eh_frame")
            .expect(".eh_frame")
            .address();
        let loads: Vec<(u64, u64)> = file
            .elf_program_headers()
            .iter()
            .filter(|p| p.p_type(object::LittleEndian) == object::elf::PT_LOAD)
            .map(|p| {
                let start = p.p_vaddr(object::LittleEndian);
                (start, start + p.p_filesz(object::LittleEndian))
            })
            .collect();
        let at = loads
            .iter()
            .position(|&(start, end)| (start..end).contains(&eh_frame))
            .expect("a segment holds .eh_frame");
        let plt = file.section_by_name(".plt").expect(".plt").address();
        (loads[at].1, loads.get(at + 1).map(|load| load.0), plt)
    };
    link(1);
    let (end, _, _) = segments();
    let short = (0x1000 - end % 0x1000) % 0x1000;
    if short != 0 {
        link(1 + short as usize);
    }
    let (end, next, plt) = segments();
    assert!(
        end % 0x1000 == 0 && next == Some(end) && plt == end,
        "mold did not start the code segment, PLT first, where the read-only one ends: \
         {end:#x}, {next:?}, .plt at {plt:#x}"
    );
    let expected = behaviour(&mut icf_fixtures::run_command(Arch::X86_64, &input))
        .unwrap_or_else(|e| panic!("running IN: {e}"));
    for mode in MODES {
        let output = dir.join(format!("out-{mode}"));
        let shrunk = icf_shrink(mode, &input, &output, Some(&map));
        assert!(
            shrunk.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&shrunk.stderr)
        );
        let (before, after) = (sizes(&input), sizes(&output));
        let (before, after) = (before.expect("IN's sizes"), after.expect("OUT's sizes"));
        assert!(after.text < before.text, "{mode}: nothing folded");
        let data = std::fs::read(&output).expect("reading OUT");
        let file = object::File::parse(&*data).expect("OUT is ELF");
        assert_eq!(
            file.section_by_name(".plt").map(|s| s.address()),
            Some(plt),
            "{mode}: the PLT's header moved"
        );
        let actual = behaviour(&mut icf_fixtures::run_command(Arch::X86_64, &output))
            .unwrap_or_else(|e| panic!("{mode}: running OUT: {e}"));
        assert_eq!(actual, expected, "{mode}");
        let verified = icf_verify(mode, &input, &output, Some(&map));
        assert!(
            verified.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&verified.stdout)
        );
    }
}
