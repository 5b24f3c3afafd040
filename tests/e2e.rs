//! End to end: fixture programs built by gcc and clang-19 (with and without
//! `-ffunction-sections`), for x86-64 and AArch64, folded by icf in safe and
//! all mode, linked by GNU ld, gold, lld-19 and mold, and RUN (AArch64
//! programs under `qemu-aarch64 -L /usr/aarch64-linux-gnu`); the output must
//! match the unfolded build's (in mode all, but for lines starting with
//! `fnaddr `, which compare function addresses), and `icf verify` must prove
//! the folded binary against the plain one (both linked with `-q`). Then the
//! linked binary is checked: an alias shares the kept copy's address, a
//! thunk jumps to it, and pairs that must not fold keep different bodies.

use icf_fixtures::{Arch, Build, Compiler, Linker, run_command};
use icf_tests::{aarch64_builds, x86_builds};
use object::{Object, ObjectSection, ObjectSymbol};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const MODES: [icf::Mode; 2] = [icf::Mode::Safe, icf::Mode::All];

/// Every build of the matrix: both compilers, with and without function sections, both targets.
fn all_builds() -> Vec<Build> {
    let mut builds = x86_builds();
    builds.extend(aarch64_builds());
    builds
}

fn link(
    build: &Build,
    cxx: bool,
    linker: Linker,
    inputs: &[PathBuf],
    output: &Path,
    extra: &[&str],
) {
    // Relocations kept in the output let `icf verify` tell addresses from numbers.
    let mut command = build.link_command(cxx, linker);
    command
        .args(inputs)
        .args(extra)
        .arg("-Wl,-q")
        .arg("-o")
        .arg(output);
    let result = command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    assert!(
        result.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
}

/// Runs `binary`, built for `arch`, with `args`; its output.
fn run(arch: Arch, binary: &Path, args: &[&str]) -> String {
    let result = run_command(arch, binary)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", binary.display()));
    assert!(
        result.status.success(),
        "{} exited with {}:\n{}",
        binary.display(),
        result.status,
        String::from_utf8_lossy(&result.stderr)
    );
    String::from_utf8_lossy(&result.stdout).into_owned()
}

/// The lines of a program's output that must not change in `mode`: all of
/// them, but in mode all those comparing function addresses (`fnaddr `).
fn compared(output: &str, mode: icf::Mode) -> String {
    output
        .lines()
        .filter(|line| mode == icf::Mode::Safe || !line.starts_with("fnaddr "))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// Proves `folded` against `plain` with `icf verify`; `assume_odr` only
/// for the case whose folds are right by the one-definition rule alone.
fn verify(plain: &Path, folded: &Path, mode: icf::Mode, assume_odr: bool, context: &str) {
    let options = icf_verify::VerifyOptions {
        mode: match mode {
            icf::Mode::Safe => icf_verify::Mode::Safe,
            icf::Mode::All => icf_verify::Mode::All,
        },
        assume_odr,
        ..icf_verify::VerifyOptions::default()
    };
    let outcome = icf_verify::verify(plain, folded, &options)
        .unwrap_or_else(|e| panic!("{context}: icf verify: {e}"));
    assert!(outcome.passed(), "{context}: icf verify:\n{outcome}");
}

/// Folds `objects` into `dir`; returns the outputs and the bytes saved.
fn fold(objects: &[PathBuf], mode: icf::Mode, shared: bool, dir: &Path) -> (Vec<PathBuf>, u64) {
    let inputs = icf::Inputs::open(objects).unwrap_or_else(|e| panic!("{e:#}"));
    let options = icf::Options {
        shared,
        ..icf::Options::default()
    };
    let program = icf::Program::load(&inputs, options).unwrap_or_else(|e| panic!("{e:#}"));
    let analysis = icf::Analysis::run(
        &program,
        &icf::PlanOptions {
            mode,
            ..icf::PlanOptions::default()
        },
    );
    let plan = &analysis.plan;
    let edits = analysis.object_edits(plan);
    let outputs = icf::write_outputs(&program, &edits, dir, icf::OutputKind::Copies)
        .unwrap_or_else(|e| panic!("{e:#}"));
    (
        outputs.into_iter().map(|o| o.output).collect(),
        plan.saved(),
    )
}

/// AArch64 `bti c`, the landing pad a thunk starts with under BTI.
const BTI_C: u32 = 0xd503_245f;
/// x86-64 `endbr64`, the landing pad a thunk starts with under IBT.
const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];

/// Symbols and code of a linked binary.
struct Binary {
    data: Vec<u8>,
    symbols: HashMap<String, Vec<u64>>,
}

impl Binary {
    fn read(path: &Path) -> Binary {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut symbols: HashMap<String, Vec<u64>> = HashMap::new();
        {
            let file =
                object::File::parse(&*data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for symbol in file.symbols() {
                if let Ok(name) = symbol.name()
                    && symbol.is_definition()
                {
                    symbols
                        .entry(name.to_string())
                        .or_default()
                        .push(symbol.address());
                }
            }
        }
        Binary { data, symbols }
    }

    fn address(&self, name: &str) -> u64 {
        match self.symbols.get(name).map(Vec::as_slice) {
            Some([one]) => *one,
            other => panic!("symbol {name}: {other:?}"),
        }
    }

    /// Where the code at `address` goes: itself, or the target of the jump a thunk holds.
    fn destination(&self, address: u64) -> u64 {
        let file = object::File::parse(&*self.data).expect("parsed before");
        for section in file.sections() {
            let (start, size) = (section.address(), section.size());
            if address < start || address >= start + size {
                continue;
            }
            let Ok(bytes) = section.data() else {
                return address;
            };
            let mut at = (address - start) as usize;
            let mut place = address;
            if file.architecture() == object::Architecture::Aarch64 {
                let word = |at: usize| {
                    bytes
                        .get(at..at + 4)
                        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                };
                if word(at) == Some(BTI_C) {
                    at += 4;
                    place += 4;
                }
                // `b <target>`: imm26 words from the branch.
                if let Some(b) = word(at).filter(|w| w & 0xfc00_0000 == 0x1400_0000) {
                    let offset = i64::from(((b & 0x03ff_ffff) << 6) as i32 >> 6) * 4;
                    return (place as i64 + offset) as u64;
                }
                return address;
            }
            if bytes.get(at..at + 4) == Some(&ENDBR64[..]) {
                at += 4;
                place += 4;
            }
            if bytes.get(at) == Some(&0xe9)
                && let Some(rel) = bytes.get(at + 1..at + 5)
            {
                let rel = i32::from_le_bytes([rel[0], rel[1], rel[2], rel[3]]);
                return (place as i64 + 5 + i64::from(rel)) as u64;
            }
        }
        address
    }

    /// Whether the code at `address` starts with `bytes`.
    fn starts_with(&self, address: u64, bytes: &[u8]) -> bool {
        let file = object::File::parse(&*self.data).expect("parsed before");
        file.sections().any(|section| {
            let start = section.address();
            address >= start
                && address < start + section.size()
                && section
                    .data()
                    .is_ok_and(|data| data[(address - start) as usize..].starts_with(bytes))
        })
    }

    /// `a` and `b` run the same body: one address, or a thunk to the other.
    fn same_body(&self, a: &str, b: &str) -> bool {
        let (x, y) = (self.address(a), self.address(b));
        x == y || self.destination(x) == y || self.destination(y) == x
    }
}

/// A program to build, fold, link and run, and what to check in the binary.
struct Case {
    name: &'static str,
    sources: &'static [&'static str],
    cxx: bool,
    /// Must folding save something (with function sections)?
    folds: bool,
    check: fn(&Binary, icf::Mode, &Build),
}

fn check_case(case: &Case) {
    check_case_with(case, &all_builds());
}

fn check_case_with(case: &Case, builds: &[Build]) {
    check_case_objects(case, builds, |build| {
        case.sources
            .iter()
            .map(|s| icf_fixtures::object(Path::new(s), build))
            .collect()
    });
}

/// Runs `case` on the objects `compile` builds for each build.
fn check_case_objects(case: &Case, builds: &[Build], compile: impl Fn(&Build) -> Vec<PathBuf>) {
    for build in builds {
        let build = build.clone();
        let objects = compile(&build);
        for mode in MODES {
            let dir = icf_fixtures::source_dir()
                .join("../target/e2e")
                .join(case.name)
                .join(build.label())
                .join(format!("{mode:?}").to_lowercase());
            let _ = std::fs::remove_dir_all(&dir);
            let (folded, saved) = fold(&objects, mode, false, &dir.join("objects"));
            if case.folds && build.function_sections {
                assert!(
                    saved > 0,
                    "{} ({}, {mode:?}): nothing folded",
                    case.name,
                    build.label()
                );
            }
            for linker in Linker::ALL {
                let plain_binary = dir.join(format!("plain-{linker:?}"));
                let folded_binary = dir.join(format!("folded-{linker:?}"));
                link(&build, case.cxx, linker, &objects, &plain_binary, &[]);
                link(&build, case.cxx, linker, &folded, &folded_binary, &[]);
                let context = format!("{} ({}, {mode:?}, {linker:?})", case.name, build.label());
                let (expected, actual) = (
                    run(build.arch, &plain_binary, &[]),
                    run(build.arch, &folded_binary, &[]),
                );
                assert_eq!(
                    compared(&expected, mode),
                    compared(&actual, mode),
                    "{context}: the folded program behaves differently"
                );
                // COMDAT instances that differ between units fold through
                // the kept function's identity: right by the
                // one-definition rule, which verify must be told to trust.
                let assume_odr = case.name == "odr";
                verify(&plain_binary, &folded_binary, mode, assume_odr, &context);
                (case.check)(&Binary::read(&folded_binary), mode, &build);
            }
        }
    }
}

#[test]
fn identical_functions_and_recursion() {
    check_case(&Case {
        name: "identical",
        sources: &["c/identical.c"],
        cxx: false,
        folds: true,
        check: |binary, mode, build| {
            if build.function_sections {
                for (a, b) in [
                    ("add0", "add1"),
                    ("fact0", "fact1"),
                    ("ping0", "ping1"),
                    ("pong0", "pong1"),
                ] {
                    assert!(
                        binary.same_body(a, b),
                        "{a} and {b} should share a body ({})",
                        build.label()
                    );
                }
            }
            // main compares the addresses of sub0 and sub1.
            let distinct = binary.address("sub0") != binary.address("sub1");
            assert!(
                distinct || mode == icf::Mode::All,
                "safe mode merged address-taken sub0 and sub1"
            );
            assert!(!binary.same_body("add0", "add_plus_one"));
        },
    });
}

#[test]
fn callees_tables_and_jump_tables() {
    check_case(&Case {
        name: "fold_cases",
        sources: &["c/fold_cases.c"],
        cxx: false,
        folds: true,
        check: |binary, _, build| {
            assert!(!binary.same_body("caller_a", "caller_c"));
            assert!(!binary.same_body("lookup_a", "lookup_c"));
            if build.function_sections {
                for (a, b) in [("caller_a", "caller_b"), ("switch_a", "switch_b")] {
                    assert!(binary.same_body(a, b), "{a} and {b} ({})", build.label());
                }
                // Position-independent code takes the tables' addresses:
                // clang's address-significance table says they do not
                // matter; without one (gcc) the named tables' do, and the
                // plan keeps both, so their readers stay apart.
                assert_eq!(
                    binary.same_body("lookup_a", "lookup_b"),
                    build.compiler == Compiler::Clang,
                    "lookup_a and lookup_b ({})",
                    build.label()
                );
            }
        },
    });
}

#[test]
fn across_objects() {
    check_case(&Case {
        name: "cross",
        sources: &["e2e/cross_a.c", "e2e/cross_b.c", "e2e/cross_main.c"],
        cxx: false,
        folds: true,
        check: |binary, mode, build| {
            if build.function_sections {
                assert!(binary.same_body("scale_a", "scale_b"), "{}", build.label());
                assert!(
                    binary.same_body("compare_me_a", "compare_me_b"),
                    "{}",
                    build.label()
                );
            }
            if mode == icf::Mode::Safe {
                assert_ne!(
                    binary.address("compare_me_a"),
                    binary.address("compare_me_b")
                );
            }
        },
    });
}

#[test]
fn weak_definition_overridden() {
    check_case(&Case {
        name: "weak",
        sources: &["e2e/weak_default.c", "e2e/weak_strong.c"],
        cxx: false,
        folds: false,
        check: |binary, _, _| assert!(!binary.same_body("hook", "plus_hundred")),
    });
}

#[test]
fn comdat_inline_functions_in_several_units() {
    check_case(&Case {
        name: "comdat",
        sources: &[
            "e2e/comdat_a.cpp",
            "e2e/comdat_b.cpp",
            "e2e/comdat_main.cpp",
        ],
        cxx: true,
        folds: true,
        check: |binary, _, build| {
            // Two template instances, each alone in its COMDAT group in
            // every unit: the groups move, and both names reach one body.
            assert_eq!(
                binary.address("_ZN11AccumulatorIlE3addEl"),
                binary.address("_ZN11AccumulatorImE3addEm"),
                "{}",
                build.label()
            );
        },
    });
}

#[test]
fn comdat_instances_that_differ_between_units_fold_through_their_name() {
    let case = Case {
        name: "odr",
        sources: &[
            "e2e/odr_other.cpp",
            "e2e/odr_fast.cpp",
            "e2e/odr_slow.cpp",
            "e2e/odr_main.cpp",
        ],
        cxx: true,
        folds: true,
        check: |binary, _, build| {
            // Every unit's mix<2> and mix<3> jump to the name mix<1>. The
            // link keeps the first instance of each: mix<3> from
            // odr_other.cpp, which had no reference to mix<1> before, the
            // others from odr_fast.cpp.
            let one = binary.address("_Z3mixILi1EEll");
            for name in ["_Z3mixILi2EEll", "_Z3mixILi3EEll"] {
                let address = binary.address(name);
                assert_ne!(address, one, "{}", build.label());
                assert_eq!(
                    binary.destination(address),
                    one,
                    "{}: {name} is not a thunk to mix<1>",
                    build.label()
                );
            }
        },
    };
    // The slow units are built at -O0: their instances differ from the fast unit's.
    check_case_objects(&case, &all_builds(), |build| {
        let slow = Build {
            extra_flags: [build.extra_flags.as_slice(), &["-O0".to_string()]].concat(),
            ..build.clone()
        };
        case.sources
            .iter()
            .map(|source| {
                let slow_unit = source.ends_with("slow.cpp") || source.ends_with("other.cpp");
                icf_fixtures::object(Path::new(source), if slow_unit { &slow } else { build })
            })
            .collect()
    });
}

#[test]
fn virtual_functions_fold_in_safe_mode_compared_addresses_stay() {
    check_case(&Case {
        name: "virtual",
        sources: &["e2e/virtual_main.cpp", "e2e/virtual_tile.cpp"],
        cxx: true,
        folds: true,
        check: |binary, mode, build| {
            if build.function_sections {
                // Only vtables point to them: one body, one address.
                assert_eq!(
                    binary.address("_ZNK6Square4areaEl"),
                    binary.address("_ZNK4Tile4areaEl"),
                    "{}",
                    build.label()
                );
                assert!(binary.same_body("_Z7scale_al", "_Z7scale_bl"));
            }
            if mode == icf::Mode::Safe {
                assert_ne!(
                    binary.address("_Z7scale_al"),
                    binary.address("_Z7scale_bl"),
                    "{}: safe mode merged compared addresses",
                    build.label()
                );
            }
        },
    });
}

#[test]
fn exceptions_through_folded_functions() {
    check_case(&Case {
        name: "exceptions",
        sources: &["e2e/exceptions_main.cpp"],
        cxx: true,
        folds: true,
        check: |binary, _, build| {
            assert!(!binary.same_body("_Z7catch_ai", "_Z11catch_otheri"));
            if build.function_sections {
                assert!(
                    binary.same_body("_Z6pass_ai", "_Z6pass_bi"),
                    "{}",
                    build.label()
                );
            }
        },
    });
}

#[test]
fn thread_local_storage() {
    check_case(&Case {
        name: "tls",
        sources: &["e2e/tls_main.c"],
        cxx: false,
        folds: true,
        check: |binary, _, build| {
            assert!(!binary.same_body("bump_a0", "bump_b"));
            if build.function_sections {
                assert!(binary.same_body("bump_a0", "bump_a1"));
            }
        },
    });
}

#[test]
fn over_aligned_function() {
    check_case(&Case {
        name: "aligned",
        sources: &["e2e/aligned_main.c"],
        cxx: false,
        folds: true,
        check: |binary, _, build| {
            assert_eq!(
                binary.address("aligned_twin") % 256,
                0,
                "aligned_twin lost its alignment ({})",
                build.label()
            );
            if build.function_sections {
                assert!(binary.same_body("plain_twin", "aligned_twin"));
            }
        },
    });
}

#[test]
fn identical_constructors_both_run() {
    check_case(&Case {
        name: "ctors",
        sources: &["e2e/ctors_main.c"],
        cxx: false,
        folds: false,
        check: |_, _, _| {},
    });
}

#[test]
fn variadic_functions() {
    check_case(&Case {
        name: "varargs",
        sources: &["e2e/varargs_main.c"],
        cxx: false,
        folds: true,
        check: |binary, _, build| {
            assert!(!binary.same_body("sum_a", "product"));
            if build.function_sections {
                assert!(binary.same_body("sum_a", "sum_b"));
            }
        },
    });
}

#[test]
fn exported_functions_of_a_shared_library_stay_distinct() {
    for build in all_builds() {
        let build = Build {
            extra_flags: vec!["-fPIC".to_string()],
            ..build
        };
        let library = icf_fixtures::object(Path::new("e2e/shlib.c"), &build);
        let main = icf_fixtures::object(Path::new("e2e/shlib_main.c"), &build);
        for mode in MODES {
            let dir = icf_fixtures::source_dir()
                .join("../target/e2e/shlib")
                .join(build.label())
                .join(format!("{mode:?}").to_lowercase());
            let _ = std::fs::remove_dir_all(&dir);
            let (folded, _) = fold(
                std::slice::from_ref(&library),
                mode,
                true,
                &dir.join("objects"),
            );
            for linker in Linker::ALL {
                let plain_lib = dir.join(format!("libplain-{linker:?}.so"));
                let folded_lib = dir.join(format!("libfolded-{linker:?}.so"));
                let program = dir.join(format!("main-{linker:?}"));
                link(
                    &build,
                    false,
                    linker,
                    std::slice::from_ref(&library),
                    &plain_lib,
                    &["-shared"],
                );
                link(&build, false, linker, &folded, &folded_lib, &["-shared"]);
                link(
                    &build,
                    false,
                    linker,
                    std::slice::from_ref(&main),
                    &program,
                    &["-ldl"],
                );
                let expected = run(build.arch, &program, &[plain_lib.to_str().expect("utf-8")]);
                let actual = run(build.arch, &program, &[folded_lib.to_str().expect("utf-8")]);
                let context = format!("shlib ({}, {mode:?}, {linker:?})", build.label());
                assert_eq!(
                    compared(&expected, mode),
                    compared(&actual, mode),
                    "{context}"
                );
                if mode == icf::Mode::Safe {
                    assert!(actual.ends_with("distinct 1\n"), "{context}: {actual}");
                }
                verify(&plain_lib, &folded_lib, mode, false, &context);
            }
        }
    }
}

/// AArch64 builds with function sections and `-mbranch-protection=standard` (BTI and PAC).
fn bti_builds() -> Vec<Build> {
    aarch64_builds()
        .into_iter()
        .filter(|b| b.function_sections)
        .map(|b| Build {
            extra_flags: vec!["-mbranch-protection=standard".to_string()],
            ..b
        })
        .collect()
}

#[test]
fn thunks_start_with_a_landing_pad_under_ibt_and_bti() {
    let mut builds: Vec<Build> = x86_builds()
        .into_iter()
        .filter(|b| b.function_sections)
        .map(|b| Build {
            extra_flags: vec!["-fcf-protection=full".to_string()],
            ..b
        })
        .collect();
    builds.extend(bti_builds());
    check_case_with(
        &Case {
            name: "landing-pads",
            sources: &["e2e/cross_a.c", "e2e/cross_b.c", "e2e/cross_main.c"],
            cxx: false,
            folds: true,
            check: |binary, mode, build| {
                if mode != icf::Mode::Safe {
                    return;
                }
                // compare_me_b's address is taken: it is a thunk, reached by
                // an indirect call, so it must start with `endbr64` (IBT) or
                // `bti c` (BTI).
                let thunk = binary.address("compare_me_b");
                let kept = binary.address("compare_me_a");
                assert_ne!(thunk, kept);
                assert_eq!(binary.destination(thunk), kept, "{}", build.label());
                let pad = match build.arch {
                    Arch::X86_64 => ENDBR64.to_vec(),
                    Arch::Aarch64 => BTI_C.to_le_bytes().to_vec(),
                };
                assert!(
                    binary.starts_with(thunk, &pad),
                    "thunk without a landing pad ({})",
                    build.label()
                );
            },
        },
        &builds,
    );
}

#[test]
fn rewritten_objects_keep_their_bti_and_pac_property_notes() {
    for build in bti_builds() {
        let objects: Vec<PathBuf> = ["e2e/cross_a.c", "e2e/cross_b.c"]
            .iter()
            .map(|s| icf_fixtures::object(Path::new(s), &build))
            .collect();
        let dir = icf_fixtures::source_dir()
            .join("../target/e2e/bti-notes")
            .join(build.label());
        let _ = std::fs::remove_dir_all(&dir);
        let (folded, saved) = fold(&objects, icf::Mode::Safe, false, &dir);
        assert!(saved > 0, "{}: nothing folded", build.label());
        for (input, output) in objects.iter().zip(&folded) {
            let note = |path: &Path| {
                let data =
                    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let file = object::File::parse(&*data).expect("an object");
                let section = file
                    .section_by_name(".note.gnu.property")
                    .unwrap_or_else(|| panic!("{}: no .note.gnu.property", path.display()));
                section.data().expect("note data").to_vec()
            };
            let (before, after) = (note(input), note(output));
            // GNU_PROPERTY_AARCH64_FEATURE_1_AND with BTI (bit 0) and PAC (bit 1).
            let and = 0xc000_0000u32.to_le_bytes();
            let at = before
                .windows(4)
                .position(|w| w == and)
                .expect("the feature property");
            assert_eq!(before[at + 8] & 3, 3, "{}: BTI and PAC", build.label());
            assert_eq!(before, after, "{}: the note changed", build.label());
        }
    }
}

#[test]
fn thunks_keep_their_function_s_alignment_and_a_jump_s_size() {
    for build in all_builds().into_iter().filter(|b| b.function_sections) {
        let objects: Vec<PathBuf> = ["e2e/cross_a.c", "e2e/cross_b.c", "e2e/cross_main.c"]
            .iter()
            .map(|s| icf_fixtures::object(Path::new(s), &build))
            .collect();
        let dir = icf_fixtures::source_dir()
            .join("../target/e2e/thunk-align")
            .join(build.label());
        let _ = std::fs::remove_dir_all(&dir);
        let (folded, _) = fold(&objects, icf::Mode::Safe, false, &dir);
        // compare_me_b's address is taken: it becomes a thunk.
        let align_of = |path: &Path| {
            let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let file = object::File::parse(&*data).expect("an object");
            let symbol = file
                .symbols()
                .find(|s| s.name() == Ok("compare_me_b") && s.is_definition())
                .expect("compare_me_b defined");
            let section = file
                .section_by_index(symbol.section_index().expect("in a section"))
                .expect("its section");
            (section.align(), section.size(), symbol.size())
        };
        let (before, _, _) = align_of(&objects[1]);
        let (after, size, symbol_size) = align_of(&folded[1]);
        let thunk_size = match build.arch {
            Arch::X86_64 => 5,
            Arch::Aarch64 => 4,
        };
        assert_eq!(size, thunk_size, "{}: not a thunk", build.label());
        assert_eq!(
            symbol_size,
            thunk_size,
            "{}: the symbol still covers the old body",
            build.label()
        );
        // A program may look at the low bits of the address the thunk stands for.
        assert_eq!(after, before, "{}", build.label());
    }
}
