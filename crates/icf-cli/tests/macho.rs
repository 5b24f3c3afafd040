//! Mach-O end to end: fixture programs (`fixtures/emu/fold_*.c`) built for
//! x86_64 and arm64 macOS, and for x86-64 and AArch64 Linux (the same cases
//! on both formats), linked plain
//! and through `icf link` in safe and all mode, and RUN (Mach-O in the
//! unicorn emulator of `icf-emu`, ELF natively or under qemu): every folded
//! program must print what the plain one prints and exit alike, and the
//! folded Mach-O programs must be smaller where folds were found, and
//! `icf verify` must prove each against the plain one. Mode all
//! may give address-taken twins one address (the program's lines saying
//! whether addresses differ are compared in safe mode only).

use icf_emu::Limits;
use icf_emu::build::Platform;
use object::{Object as _, ObjectSection as _};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `__text` (or `.text`) size of a linked program.
fn text_size(path: &Path) -> u64 {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let file = object::File::parse(&*data).expect("a linked program");
    file.sections()
        .filter(|s| matches!(s.name(), Ok("__text" | ".text")))
        .map(|s| s.size())
        .sum()
}

/// `icf verify --mode mode plain folded` proves the fold.
fn assert_verifies(plain: &Path, folded: &Path, mode: &str) {
    let output = Command::new(env!("CARGO_BIN_EXE_icf"))
        .args(["verify", "--mode", mode])
        .arg(plain)
        .arg(folded)
        .output()
        .expect("running icf verify");
    assert!(
        output.status.success(),
        "icf verify --mode {mode} {} {}:\n{}{}",
        plain.display(),
        folded.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Links `objects` for `platform` into `output` with `-dead_strip` and
/// `extra`, through `icf link --mode mode` when given.
fn link(platform: Platform, objects: &[PathBuf], output: &Path, mode: Option<&str>) {
    link_with(platform, objects, output, mode, &[]);
}

fn link_with(
    platform: Platform,
    objects: &[PathBuf],
    output: &Path,
    mode: Option<&str>,
    extra: &[&str],
) {
    // Each format's way of dropping what nothing references.
    let mut args = vec![if platform.macho_arch().is_some() {
        "-dead_strip"
    } else {
        "--gc-sections"
    }];
    args.extend_from_slice(extra);
    let plain = icf_emu::build::link_command(platform, objects, output, &args);
    let mut command = match mode {
        None => plain,
        Some(mode) => {
            let mut command = Command::new(env!("CARGO_BIN_EXE_icf"));
            command.args(["link", "--strict", "--mode", mode, "--"]);
            command.arg(plain.get_program());
            command.args(plain.get_args());
            command
        }
    };
    icf_fixtures::run(&mut command);
}

/// Compiles the fold fixtures and the runtime for `platform` into a scratch
/// directory of `test`'s; returns it and the objects.
fn fold_fixture_objects(test: &str, platform: Platform) -> (PathBuf, Vec<PathBuf>) {
    let dir = icf_emu::build::scratch_dir(&format!("{test}-{}", platform.label()));
    // ELF needs a section per function for a fold to remove a body; a
    // Mach-O atom is one already.
    // With debug information: its relocations name the folded bodies.
    let flags: &[&str] = if platform.macho_arch().is_some() {
        &["-O2", "-g"]
    } else {
        &["-O2", "-ffunction-sections", "-fdata-sections"]
    };
    let mut objects: Vec<PathBuf> = ["fold_a.c", "fold_b.c"]
        .iter()
        .map(|name| icf_emu::build::runtime_dir().join(name))
        .map(|source| icf_emu::build::compile(&source, platform, &dir, flags))
        .collect();
    objects.push(icf_emu::build::runtime_object(platform, &dir));
    (dir, objects)
}

/// The names of the functions in a linked program's `__text` that share
/// an address with another, grouped by address.
fn shared_addresses(path: &Path) -> Vec<Vec<String>> {
    use object::ObjectSymbol as _;
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let file = object::File::parse(&*data).expect("a linked program");
    let text = file
        .sections()
        .find(|s| s.name() == Ok("__text"))
        .map(|s| s.index());
    let mut by_address: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    for symbol in file.symbols() {
        let name = symbol.name().unwrap_or_default();
        if symbol.section_index() == text && !name.starts_with("icf.") && !name.starts_with("ltmp")
        {
            by_address
                .entry(symbol.address())
                .or_default()
                .push(name.to_owned());
        }
    }
    by_address
        .into_values()
        .filter(|names| names.len() > 1)
        .map(|mut names| {
            names.sort();
            names
        })
        .collect()
}

/// The groups `icf report --mode mode` finds in `objects`, by symbol name.
fn report_groups(objects: &[PathBuf], mode: &str) -> Vec<Vec<String>> {
    report_members(objects, mode)
        .into_iter()
        .map(|group| group.into_iter().map(|(name, _)| name).collect())
        .collect()
}

/// Each group's members as (symbol, action) pairs.
fn report_members(objects: &[PathBuf], mode: &str) -> Vec<Vec<(String, String)>> {
    let output = Command::new(env!("CARGO_BIN_EXE_icf"))
        .args(["report", "--format", "json", "--mode", mode])
        .args(objects)
        .output()
        .expect("running icf report");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|group| {
            group["members"]
                .as_array()
                .expect("members")
                .iter()
                .map(|m| {
                    let text = |key: &str| m[key].as_str().expect("a string").to_owned();
                    (text("symbol"), text("action"))
                })
                .collect()
        })
        .collect()
}

/// The oracle: on the same objects, every pair of functions
/// `ld64.lld-19 --icf=all` gives one address, icf's mode all gives one
/// address too, and icf's `__text` is no larger than lld's.
#[test]
fn macho_folds_include_every_fold_lld_finds() {
    for platform in [Platform::MachoArm64, Platform::MachoX86_64] {
        let (dir, objects) = fold_fixture_objects("macho-oracle", platform);
        let by_lld = dir.join("lld-icf");
        link_with(platform, &objects, &by_lld, None, &["--icf=all"]);
        let by_icf = dir.join("icf-all");
        link(platform, &objects, &by_icf, Some("all"));
        let icf_groups = report_groups(&objects, "all");
        let same_in_icf = |a: &str, b: &str| {
            icf_groups
                .iter()
                .any(|g| g.iter().any(|n| n == a) && g.iter().any(|n| n == b))
        };
        let lld_groups = shared_addresses(&by_lld);
        assert!(
            !lld_groups.is_empty(),
            "{}: lld folds something here",
            platform.label()
        );
        for group in &lld_groups {
            for other in &group[1..] {
                assert!(
                    same_in_icf(&group[0], other),
                    "{}: lld folds {} and {other}, icf does not (icf's groups: {icf_groups:?})",
                    platform.label(),
                    group[0]
                );
            }
        }
        let (lld_text, icf_text) = (text_size(&by_lld), text_size(&by_icf));
        assert!(
            icf_text <= lld_text,
            "{}: __text is {icf_text} bytes after icf, {lld_text} after lld --icf=all",
            platform.label()
        );
        eprintln!(
            "{}: __text {icf_text} bytes with icf (mode all), {lld_text} with lld --icf=all; lld's groups {lld_groups:?}, icf's {icf_groups:?}",
            platform.label()
        );
    }
}

#[test]
fn folded_macho_programs_behave_like_plain_ones() {
    // The same programs as ELF, so each case is checked on both formats.
    for platform in [
        Platform::MachoArm64,
        Platform::MachoX86_64,
        Platform::LinuxX86_64,
        Platform::LinuxAarch64,
    ] {
        let (dir, objects) = fold_fixture_objects("macho-fold", platform);
        let plain = dir.join("plain");
        link(platform, &objects, &plain, None);
        let expected = icf_emu::build::run_program(&plain, platform, &Limits::default())
            .unwrap_or_else(|e| panic!("{}: the plain program: {e}", platform.label()));
        assert_eq!(expected.exit_code, 7, "{}", expected.stdout_text());
        assert!(
            expected
                .stdout_text()
                .contains("local addresses differ = 1")
        );
        for mode in ["safe", "all"] {
            let folded = dir.join(format!("folded-{mode}"));
            link(platform, &objects, &folded, Some(mode));
            let got = icf_emu::build::run_program(&folded, platform, &Limits::default())
                .unwrap_or_else(|e| panic!("{} {mode}: the folded program: {e}", platform.label()));
            // Mode all gives address-taken twins one address, as
            // `--icf=all` does: only safe mode keeps them apart.
            let comparable = |text: String| -> String {
                text.lines()
                    .filter(|line| mode == "safe" || !line.contains(" differ"))
                    .map(|line| format!("{line}\n"))
                    .collect()
            };
            assert_eq!(
                comparable(got.stdout_text()),
                comparable(expected.stdout_text()),
                "{} {mode}: the folded program prints otherwise",
                platform.label()
            );
            assert_eq!(
                got.exit_code,
                expected.exit_code,
                "{} {mode}",
                platform.label()
            );
            let (before, after) = (text_size(&plain), text_size(&folded));
            assert!(
                after < before,
                "{} {mode}: __text is {after} bytes folded, {before} plain",
                platform.label()
            );
            assert_verifies(&plain, &folded, mode);
        }
    }
}

/// A static archive of Mach-O objects: its members are folded and the
/// rewritten archive links (ld64.lld-19 needs its symbol index) and runs
/// like the plain program.
#[test]
fn macho_archive_members_fold_and_the_program_runs_alike() {
    for platform in [Platform::MachoArm64, Platform::MachoX86_64] {
        let (dir, objects) = fold_fixture_objects("macho-archive", platform);
        let archive = dir.join("libfoldb.a");
        let status = Command::new("llvm-ar-19")
            .arg("rcs")
            .arg(&archive)
            .arg(&objects[1])
            .status()
            .expect("running llvm-ar-19");
        assert!(status.success());
        let inputs = [objects[0].clone(), objects[2].clone(), archive];
        let plain = dir.join("plain");
        link(platform, &inputs, &plain, None);
        let folded = dir.join("folded");
        link(platform, &inputs, &folded, Some("safe"));
        let run = |path: &Path| {
            icf_emu::build::run_program(path, platform, &Limits::default())
                .unwrap_or_else(|e| panic!("{}: {e}", platform.label()))
        };
        let (expected, got) = (run(&plain), run(&folded));
        assert_eq!(
            got.stdout_text(),
            expected.stdout_text(),
            "{}",
            platform.label()
        );
        assert_eq!(got.exit_code, expected.exit_code);
        assert_verifies(&plain, &folded, "safe");
        assert!(
            text_size(&folded) < text_size(&plain),
            "{}",
            platform.label()
        );
    }
}

/// Without `-dead_strip` the folded copies stay in the output: icf link
/// says so, and with it (`--verbose`) says what it removes.
#[test]
fn a_macho_link_says_what_dead_strip_removes() {
    let platform = Platform::MachoArm64;
    let (dir, objects) = fold_fixture_objects("macho-dead-strip", platform);
    let plain = icf_emu::build::link_command(platform, &objects, &dir.join("out"), &[]);
    let run = |extra: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_icf"))
            .args(["link", "--strict", "--verbose", "--"])
            .arg(plain.get_program())
            .args(plain.get_args())
            .args(extra)
            .output()
            .expect("running icf link");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let without = run(&[]);
    assert!(
        without.contains("warning: the link has no -dead_strip"),
        "{without}"
    );
    let with = run(&["-dead_strip"]);
    assert!(!with.contains("warning"), "{with}");
    assert!(
        with.contains("-dead_strip removes 0 folded copies and the bodies behind 7 thunks"),
        "{with}"
    );
}

/// A clang driver that targets Apple, linking with lld: the same fold
/// through `-Wl,` options, and the program runs like the plain one.
#[test]
fn a_clang_driver_targeting_apple_links_folded_programs() {
    let platform = Platform::MachoArm64;
    let (dir, objects) = fold_fixture_objects("macho-driver", platform);
    let sdk = icf_emu::build::write_sdk(&dir.join("sdk"));
    let link = |output: &Path, through_icf: bool| {
        let mut command = if through_icf {
            let mut command = Command::new(env!("CARGO_BIN_EXE_icf"));
            command.args(["link", "--strict", "--", "clang-19"]);
            command
        } else {
            Command::new("clang-19")
        };
        command
            .args([
                "-target",
                "arm64-apple-macos11",
                "-fuse-ld=lld",
                "-isysroot",
            ])
            .arg(&sdk)
            .args(["-Wl,-dead_strip", "-Wl,-e,_main", "-o"])
            .arg(output)
            .args(&objects);
        let result = command.output().expect("running the link");
        assert!(
            result.status.success(),
            "{}",
            String::from_utf8_lossy(&result.stderr)
        );
    };
    let (plain, folded) = (dir.join("plain"), dir.join("folded"));
    link(&plain, false);
    link(&folded, true);
    let run = |path: &Path| {
        icf_emu::build::run_program(path, platform, &Limits::default()).expect("the program runs")
    };
    assert_eq!(run(&folded).stdout_text(), run(&plain).stdout_text());
    assert_verifies(&plain, &folded, "safe");
    assert!(text_size(&folded) < text_size(&plain));
}

/// Atoms with an alternate entry (`N_ALT_ENTRY`) are never folded, even
/// when identical; the program calling every entry runs alike in both modes.
#[test]
fn atoms_with_an_alternate_entry_never_fold() {
    for platform in [Platform::MachoArm64, Platform::MachoX86_64] {
        let dir = icf_emu::build::scratch_dir(&format!("macho-alt-entry-{}", platform.label()));
        let arch = if platform == Platform::MachoArm64 {
            "arm64"
        } else {
            "x86_64"
        };
        let fixtures = icf_emu::build::runtime_dir();
        let objects = vec![
            icf_emu::build::compile(&fixtures.join("alt_entry.c"), platform, &dir, &["-O2"]),
            icf_emu::build::compile(
                &fixtures.join(format!("alt_entry_{arch}.s")),
                platform,
                &dir,
                &[],
            ),
            icf_emu::build::runtime_object(platform, &dir),
        ];
        // Found identical, and kept apart.
        let groups = report_members(&objects, "all");
        let twins = groups
            .iter()
            .find(|g| g.iter().any(|(name, _)| name == "_twice_plus_one_twin"))
            .unwrap_or_else(|| panic!("{}: the twins are one class: {groups:?}", platform.label()));
        assert!(
            twins
                .iter()
                .all(|(_, action)| action == "kept" || action == "keep"),
            "{}: {twins:?}",
            platform.label()
        );
        let plain = dir.join("plain");
        link(platform, &objects, &plain, None);
        let run = |path: &Path| {
            icf_emu::build::run_program(path, platform, &Limits::default())
                .unwrap_or_else(|e| panic!("{}: {e}", platform.label()))
        };
        let expected = run(&plain);
        assert_eq!(expected.stdout_text(), "21 12 25 14 37\n");
        for mode in ["safe", "all"] {
            let folded = dir.join(format!("folded-{mode}"));
            link(platform, &objects, &folded, Some(mode));
            let got = run(&folded);
            assert_eq!(
                got.stdout_text(),
                expected.stdout_text(),
                "{} {mode}",
                platform.label()
            );
            assert_eq!(
                got.exit_code,
                expected.exit_code,
                "{} {mode}",
                platform.label()
            );
            assert_verifies(&plain, &folded, mode);
        }
    }
}

/// One end-to-end program of `fixtures/` (the ELF suite's `tests/e2e.rs`
/// cases that need no more of libc than `printf`), for Mach-O.
struct E2eCase {
    name: &'static str,
    sources: &'static [&'static str],
    /// Sources built at -O0: their weak (inline, template) instances
    /// differ from the other units'.
    slow: &'static [&'static str],
}

const E2E_CASES: &[E2eCase] = &[
    E2eCase {
        name: "identical",
        sources: &["c/identical.c"],
        slow: &[],
    },
    E2eCase {
        name: "fold_cases",
        sources: &["c/fold_cases.c"],
        slow: &[],
    },
    E2eCase {
        name: "cross",
        sources: &["e2e/cross_a.c", "e2e/cross_b.c", "e2e/cross_main.c"],
        slow: &[],
    },
    E2eCase {
        name: "weak",
        sources: &["e2e/weak_default.c", "e2e/weak_strong.c"],
        slow: &[],
    },
    E2eCase {
        name: "aligned",
        sources: &["e2e/aligned_main.c"],
        slow: &[],
    },
    E2eCase {
        name: "ctors",
        sources: &["e2e/ctors_main.c"],
        slow: &[],
    },
    E2eCase {
        name: "varargs",
        sources: &["e2e/varargs_main.c"],
        slow: &[],
    },
    E2eCase {
        name: "odr",
        sources: &[
            "e2e/odr_other.cpp",
            "e2e/odr_fast.cpp",
            "e2e/odr_slow.cpp",
            "e2e/odr_main.cpp",
        ],
        slow: &["e2e/odr_other.cpp", "e2e/odr_slow.cpp"],
    },
    E2eCase {
        name: "instance",
        sources: &[
            "e2e/instance_main.cpp",
            "e2e/instance_frame.cpp",
            "e2e/instance_split.cpp",
        ],
        slow: &[],
    },
];

/// The ELF end-to-end programs that make sense without a libc, built for
/// both Mach-O architectures against the `printf` of `fixtures/emu`
/// (`include/stdio.h`, `printf.c`): linked plain and through `icf link` in
/// both modes, run under emulation, the same output (`fnaddr` lines, which
/// say whether addresses are distinct, compared in safe mode only).
#[test]
fn the_e2e_programs_behave_alike_folded_on_macho() {
    let fixtures = icf_fixtures::source_dir();
    let include = icf_emu::build::runtime_dir().join("include");
    let include = include.display().to_string();
    let e2e = fixtures.join("e2e").display().to_string();
    let mut folded_somewhere = 0;
    for platform in [Platform::MachoArm64, Platform::MachoX86_64] {
        for case in E2E_CASES {
            let dir = icf_emu::build::scratch_dir(&format!(
                "macho-e2e-{}-{}",
                case.name,
                platform.label()
            ));
            let mut objects: Vec<PathBuf> = case
                .sources
                .iter()
                .map(|source| {
                    let mut flags = vec!["-g", "-I", include.as_str(), "-I", e2e.as_str()];
                    if source.ends_with(".cpp") {
                        // Hosted, so `main` is the C entry point, not a mangled function.
                        flags.extend(["-fno-exceptions", "-fno-rtti", "-nostdinc++", "-fhosted"]);
                    }
                    if case.slow.contains(source) {
                        flags.push("-O0");
                    }
                    icf_emu::build::compile(&fixtures.join(source), platform, &dir, &flags)
                })
                .collect();
            objects.push(icf_emu::build::compile(
                &icf_emu::build::runtime_dir().join("printf.c"),
                platform,
                &dir,
                &[],
            ));
            objects.push(icf_emu::build::runtime_object(platform, &dir));
            let label = format!("{} {}", case.name, platform.label());
            let plain = dir.join("plain");
            link(platform, &objects, &plain, None);
            let run = |path: &Path| {
                icf_emu::build::run_program(path, platform, &Limits::default())
                    .unwrap_or_else(|e| panic!("{label}: {e}"))
            };
            let expected = run(&plain);
            assert!(
                !expected.stdout.is_empty(),
                "{label}: the plain program prints"
            );
            for mode in ["safe", "all"] {
                let folded = dir.join(format!("folded-{mode}"));
                link(platform, &objects, &folded, Some(mode));
                let got = run(&folded);
                // As in tests/e2e.rs: `fnaddr` lines compare addresses.
                let comparable = |text: String| -> String {
                    text.lines()
                        .filter(|line| mode == "safe" || !line.starts_with("fnaddr "))
                        .map(|line| format!("{line}\n"))
                        .collect()
                };
                assert_eq!(
                    comparable(got.stdout_text()),
                    comparable(expected.stdout_text()),
                    "{label} {mode}"
                );
                assert_eq!(got.exit_code, expected.exit_code, "{label} {mode}");
                assert_verifies(&plain, &folded, mode);
                if text_size(&folded) < text_size(&plain) {
                    folded_somewhere += 1;
                }
            }
        }
    }
    assert!(
        folded_somewhere >= E2E_CASES.len(),
        "icf folds in most cases: {folded_somewhere}"
    );
}

/// The flags the C++ program (`fixtures/emu/templates_{a,b}.cpp`) adds to
/// the runtime's: no libc++ exists for Apple targets here, so it carries
/// its own templates and needs no exceptions, RTTI or thread-safe statics.
const CXX_FLAGS: &[&str] = &[
    "-std=c++17",
    "-fno-exceptions",
    "-fno-rtti",
    "-nostdinc++",
    "-fno-threadsafe-statics",
];

/// Compiles the C++ template program's two units and the runtime for
/// `platform` (clang-19 compiles `.cpp` as C++) into a scratch directory.
fn template_objects(test: &str, platform: Platform) -> (PathBuf, Vec<PathBuf>) {
    let dir = icf_emu::build::scratch_dir(&format!("{test}-{}", platform.label()));
    let mut flags = CXX_FLAGS.to_vec();
    if platform.macho_arch().is_none() {
        flags.extend_from_slice(&["-ffunction-sections", "-fdata-sections"]);
    }
    let mut objects: Vec<PathBuf> = ["templates_a.cpp", "templates_b.cpp"]
        .iter()
        .map(|name| icf_emu::build::runtime_dir().join(name))
        .map(|source| icf_emu::build::compile(&source, platform, &dir, &flags))
        .collect();
    objects.push(icf_emu::build::runtime_object(platform, &dir));
    (dir, objects)
}

/// Real code: a C++ program of templates (a vector, a red-black tree map,
/// a sorted-array set, sort/find_if/accumulate/... for int, unsigned,
/// long, unsigned long, enums, pointers and small structs, in two units),
/// a virtual hierarchy and static constructors, built for the four
/// targets, linked plain, with lld's `--icf=all` and through `icf link` in
/// safe and all mode, and run: every link prints what the plain one prints.
/// On Mach-O every fold lld finds, icf finds too, and icf's `__text` is no
/// larger than lld's; on ELF the sizes are printed beside lld's (icf keeps
/// a thunk where a COMDAT function's instances differ between units and
/// lld, knowing which it keeps, folds it).
#[test]
fn folded_cpp_templates_behave_like_plain_ones() {
    let mut sizes = Vec::new();
    for platform in Platform::ALL {
        let (dir, objects) = template_objects("macho-templates", platform);
        let run = |path: &Path, what: &str| {
            icf_emu::build::run_program(path, platform, &Limits::default())
                .unwrap_or_else(|e| panic!("{} {what}: {e}", platform.label()))
        };
        let plain = dir.join("plain");
        link(platform, &objects, &plain, None);
        let expected = run(&plain, "plain");
        let text = expected.stdout_text();
        assert_eq!(expected.exit_code, 0, "{}: {text}", platform.label());
        assert!(
            text.contains("failures = 0"),
            "{}: {text}",
            platform.label()
        );
        assert!(text.contains("registry = 2\nalpha\n"), "{text}");
        assert!(text.contains("live allocations = 0"), "{text}");
        let by_lld = dir.join("lld-icf");
        link_with(platform, &objects, &by_lld, None, &["--icf=all"]);
        assert_eq!(
            run(&by_lld, "lld --icf=all"),
            expected,
            "{}",
            platform.label()
        );
        let mut row = vec![text_size(&plain), text_size(&by_lld)];
        for mode in ["safe", "all"] {
            let folded = dir.join(format!("folded-{mode}"));
            link(platform, &objects, &folded, Some(mode));
            let got = run(&folded, mode);
            // No line depends on an address: all must print the same too.
            assert_eq!(
                got.stdout_text(),
                text,
                "{} {mode}: the folded program prints otherwise",
                platform.label()
            );
            assert_eq!(got, expected, "{} {mode}", platform.label());
            assert_verifies(&plain, &folded, mode);
            let size = text_size(&folded);
            assert!(
                size < row[0],
                "{} {mode}: __text is {size} bytes folded, {} plain",
                platform.label(),
                row[0]
            );
            row.push(size);
        }
        if platform.macho_arch().is_some() {
            let icf_groups = report_groups(&objects, "all");
            let lld_groups = shared_addresses(&by_lld);
            assert!(
                lld_groups.len() >= 10,
                "{}: {lld_groups:?}",
                platform.label()
            );
            for group in &lld_groups {
                for other in &group[1..] {
                    assert!(
                        icf_groups
                            .iter()
                            .any(|g| g.contains(&group[0]) && g.contains(other)),
                        "{}: lld folds {} and {other}, icf does not",
                        platform.label(),
                        group[0]
                    );
                }
            }
            assert!(
                row[3] <= row[1],
                "{}: __text is {} bytes after icf (all), {} after lld --icf=all",
                platform.label(),
                row[3],
                row[1]
            );
        }
        sizes.push((platform.label(), row));
    }
    eprintln!("__text bytes: plain, lld --icf=all, icf safe, icf all");
    for (label, row) in sizes {
        eprintln!("  {label}: {row:?}");
    }
}

/// What a linked Mach-O program exports (`name` or `name [weak_def]`,
/// from its export trie) and the symbols its weak-bind table names.
fn macho_exports_and_weak_binds(path: &Path) -> (Vec<String>, Vec<String>) {
    let output = Command::new("llvm-objdump-19")
        .args(["--macho", "--exports-trie", "--weak-bind"])
        .arg(path)
        .output()
        .expect("running llvm-objdump-19");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let (mut exports, mut weak_binds) = (Vec::new(), Vec::new());
    let mut in_binds = false;
    for line in text.lines() {
        if line.starts_with("Weak bind table:") {
            in_binds = true;
        } else if let Some((address, rest)) = line.trim().split_once(char::is_whitespace) {
            if in_binds && (address == "__DATA" || address == "__DATA_CONST") {
                // segment section address type addend symbol
                let symbol = rest.split_whitespace().last().unwrap_or_default();
                weak_binds.push(symbol.to_owned());
            } else if !in_binds && address.starts_with("0x") {
                exports.push(rest.trim().to_owned());
            }
        }
    }
    exports.sort();
    (exports, weak_binds)
}

/// A folded program exports what the plain one exports and binds nothing
/// more. Template instantiations are `weak_def_can_be_hidden`
/// (`N_WEAK_DEF | N_WEAK_REF`): the linker hides them, calls are direct.
///
/// Fails today: when a duplicate is folded into a copy kept in another
/// object, `macho/write.rs` defines its symbol there with `N_WEAK_DEF` but
/// without `N_WEAK_REF`, so ld64.lld exports it as a weak definition and
/// calls it through a stub and a weak bind (`sort<Money>` below: arm64
/// safe and all, x86_64 all).
#[test]
fn folded_macho_programs_export_and_bind_nothing_new() {
    let mut failures = Vec::new();
    for platform in [Platform::MachoArm64, Platform::MachoX86_64] {
        let (dir, objects) = template_objects("macho-templates-exports", platform);
        let plain = dir.join("plain");
        link(platform, &objects, &plain, None);
        let (exports, weak_binds) = macho_exports_and_weak_binds(&plain);
        assert!(exports.iter().any(|e| e == "_main"), "{exports:?}");
        assert!(weak_binds.is_empty(), "{weak_binds:?}");
        for mode in ["safe", "all"] {
            let folded = dir.join(format!("folded-{mode}"));
            link(platform, &objects, &folded, Some(mode));
            let (got_exports, got_binds) = macho_exports_and_weak_binds(&folded);
            let new: Vec<&String> = got_exports
                .iter()
                .filter(|e| !exports.contains(e))
                .collect();
            if !new.is_empty() || !got_binds.is_empty() {
                failures.push(format!(
                    "{} {mode}: new exports {new:?}, weak binds {got_binds:?}",
                    platform.label()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// ld64's default entry is `_main`: a link without `-e` (rustc's, clang's
/// driver's) keeps what `_main` reaches, and icf must fold there too.
///
/// Fails today: icf's dead-strip roots name the ELF `main` (and `-e`,
/// `-u` symbols), never `_main`, so with `-dead_strip` and no `-e`
/// nothing looks live and `icf link --strict` folds nothing, silently.
#[test]
fn a_macho_link_without_an_entry_option_folds() {
    let platform = Platform::MachoArm64;
    let (dir, objects) = fold_fixture_objects("macho-default-entry", platform);
    let without_entry = |output: &Path, mode: Option<&str>| {
        let with = icf_emu::build::link_command(platform, &objects, output, &["-dead_strip"]);
        let mut args: Vec<&std::ffi::OsStr> = Vec::new();
        let mut skip = false;
        for arg in with.get_args() {
            if std::mem::take(&mut skip) {
                continue;
            }
            if arg == "-e" {
                skip = true;
                continue;
            }
            args.push(arg);
        }
        let mut command = match mode {
            Some(mode) => {
                let mut command = Command::new(env!("CARGO_BIN_EXE_icf"));
                command.args(["link", "--strict", "--mode", mode, "--"]);
                command.arg(with.get_program());
                command
            }
            None => Command::new(with.get_program()),
        };
        command.args(&args);
        let output = command.output().expect("running the link");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let plain = dir.join("plain");
    without_entry(&plain, None);
    let expected = icf_emu::build::run_program(&plain, platform, &Limits::default()).expect("runs");
    let folded = dir.join("folded");
    without_entry(&folded, Some("safe"));
    let got = icf_emu::build::run_program(&folded, platform, &Limits::default()).expect("runs");
    assert_eq!(got, expected);
    let (before, after) = (text_size(&plain), text_size(&folded));
    assert!(
        after < before,
        "__text is {after} bytes folded, {before} plain: nothing folded"
    );
}

/// Objects with debug info (`-g`: every Rust std rlib, most release
/// profiles) fold like those without, and the program runs alike.
///
/// Fails today: `icf link --strict` rejects them, "rewriting fold_a.o: a
/// local relocation in __debug_info at 0x.. points into a folded copy"
/// (without `--strict` it links without folding).
#[test]
fn macho_objects_with_debug_info_fold() {
    for platform in [Platform::MachoArm64, Platform::MachoX86_64] {
        let dir = icf_emu::build::scratch_dir(&format!("macho-debug-info-{}", platform.label()));
        let mut objects: Vec<PathBuf> = ["fold_a.c", "fold_b.c"]
            .iter()
            .map(|name| icf_emu::build::runtime_dir().join(name))
            .map(|source| icf_emu::build::compile(&source, platform, &dir, &["-O2", "-g"]))
            .collect();
        objects.push(icf_emu::build::runtime_object(platform, &dir));
        let plain = dir.join("plain");
        link(platform, &objects, &plain, None);
        let folded = dir.join("folded");
        link(platform, &objects, &folded, Some("safe"));
        let run = |path: &Path| {
            icf_emu::build::run_program(path, platform, &Limits::default())
                .unwrap_or_else(|e| panic!("{}: {e}", platform.label()))
        };
        assert_eq!(run(&folded), run(&plain), "{}", platform.label());
        assert!(
            text_size(&folded) < text_size(&plain),
            "{}",
            platform.label()
        );
    }
}
