//! lld's ELF ICF regression tests (lld/test/ELF/icf*.s and friends) as a
//! checklist for icf; `docs/lld-icf-tests.md` says what each one checks and
//! what icf must do. Two kinds of tests live here, all on our own sources in
//! `fixtures/lld_cases/`:
//!
//! - `checklist_*`: assemble an input with clang-19 and read icf's fold
//!   decisions (`icf report --print-icf-sections`, safe and all mode), asserting
//!   the pairs lld folds or keeps apart where icf must agree.
//! - `runs_*`: programs where a wrong fold changes behaviour. Each is built by
//!   real compilers, linked plainly and through `icf link --strict` in safe and
//!   all mode by lld and GNU ld, run (AArch64 under qemu-aarch64), and the
//!   folded program's output must equal the plain one's.
//!
//! The `icf` binary is the workspace's own build (`target/<profile>/icf`, next
//! to this test's directory; `cargo test --workspace` builds it, or set
//! `ICF_BIN`). Main assumption: the toolchains of `cargo xtask install-deps`
//! are on `PATH`.

use icf_fixtures::{Arch, Build, Compiler, Linker, command_words};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const LINKERS: [Linker; 2] = [Linker::Lld, Linker::Bfd];
const MODES: [&str; 2] = ["safe", "all"];

/// Output lines that state address identity: mode all may change them.
const ADDRESS_LINE: &str = "addr:";

/// The `icf` executable of this workspace's build.
fn icf_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("ICF_BIN") {
        return PathBuf::from(path);
    }
    // target/<profile>/deps/lld_cases-<hash> -> target/<profile>/icf
    let exe = std::env::current_exe().expect("the test's own path");
    let binary = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps")
        .join("icf");
    assert!(
        binary.is_file(),
        "{} is missing: build it with `cargo build -p icf-cli` (or set ICF_BIN)",
        binary.display()
    );
    binary
}

fn fixture(name: &str) -> PathBuf {
    icf_fixtures::source_dir().join("lld_cases").join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = icf_fixtures::source_dir()
        .join("../target/lld-cases")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

fn text(path: &Path) -> String {
    path.to_str().expect("UTF-8 path").to_owned()
}

/// Runs `argv`; the error carries the command and its stderr.
fn run_command(argv: &[String]) -> Result<String, String> {
    let output = Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .map_err(|e| format!("running {argv:?}: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "{argv:?} exited with {}:\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// The C driver of `compiler` for `arch`.
fn c_driver(arch: Arch, compiler: Compiler) -> Vec<String> {
    command_words(&Build::bare(compiler, arch).driver_command(false))
}

/// Compiles one fixture (C with `cc` at -O2 plus `flags`; assembly with clang-19) into `dir`.
fn compile(dir: &Path, arch: Arch, cc: Compiler, flags: &[&str], name: &str) -> PathBuf {
    let source = fixture(name);
    let file = Path::new(name).file_name().expect("a file name");
    let output = dir.join(format!("{}.o", file.to_str().expect("UTF-8 name")));
    let mut argv = if name.ends_with(".s") {
        c_driver(arch, Compiler::Clang)
    } else {
        let mut argv = c_driver(arch, cc);
        argv.push("-O2".into());
        argv.extend(flags.iter().map(|f| f.to_string()));
        argv
    };
    argv.extend(["-c".into(), text(&source), "-o".into(), text(&output)]);
    run_command(&argv).unwrap_or_else(|e| panic!("{e}"));
    output
}

/// The link command: the C driver (gcc's for AArch64) with `linker`.
fn link_command(
    arch: Arch,
    cc: Compiler,
    linker: Linker,
    inputs: &[String],
    output: &Path,
) -> Vec<String> {
    let compiler = if arch == Arch::Aarch64 {
        Compiler::Gcc
    } else {
        cc
    };
    let mut argv = command_words(&Build::bare(compiler, arch).link_command(false, linker));
    argv.extend(inputs.iter().cloned());
    argv.extend(["-o".into(), text(output)]);
    argv
}

/// `icf link --strict --mode MODE [--report REPORT] -- COMMAND`.
fn icf_link(mode: &str, report: Option<&Path>, command: &[String]) -> Vec<String> {
    let mut argv = vec![
        text(&icf_binary()),
        "link".into(),
        "--strict".into(),
        "--mode".into(),
        mode.into(),
    ];
    if let Some(report) = report {
        argv.extend(["--report".into(), text(report)]);
    }
    argv.push("--".into());
    argv.extend(command.iter().cloned());
    argv
}

fn run_binary(arch: Arch, binary: &Path, env: &[(&str, &str)]) -> Result<String, String> {
    let mut command = icf_fixtures::run_command(arch, binary);
    for (key, value) in env {
        command.env(key, value);
    }
    let argv = command_words(&command);
    let output = command
        .output()
        .map_err(|e| format!("running {argv:?}: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "{} exited with {}: {}",
            binary.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// What mode all must preserve: everything but address identity.
fn without_address_lines(output: &str) -> String {
    output
        .lines()
        .filter(|l| !l.starts_with(ADDRESS_LINE))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A program of fixtures: C sources built by `cc` with `flags`, assembly by clang-19.
struct Program<'a> {
    name: &'a str,
    arch: Arch,
    cc: Compiler,
    flags: &'a [&'a str],
    sources: &'a [&'a str],
    /// Further link inputs among the fixtures (linker scripts).
    link_inputs: &'a [&'a str],
    /// Flags of the link command.
    link_flags: &'a [&'a str],
    /// Whether icf must find something to fold in mode all (the program has
    /// twins lld folds too), so that an unchanged output means something.
    must_fold: bool,
}

/// `totals.saved_bytes` of an `icf link --report` file.
fn saved_bytes(report: &Path) -> u64 {
    let json = std::fs::read_to_string(report).expect("read the report");
    let key = "\"saved_bytes\":";
    let at = json.find(key).expect("saved_bytes in the report") + key.len();
    json[at..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a number of bytes")
}

/// Builds `program`, links it plainly and through icf (safe, all) with every
/// linker, runs each and returns every difference from the plain output.
fn folded_runs_differ(program: &Program) -> Vec<String> {
    let dir = scratch(program.name);
    let mut inputs: Vec<String> = program
        .sources
        .iter()
        .map(|s| text(&compile(&dir, program.arch, program.cc, program.flags, s)))
        .collect();
    inputs.extend(program.link_inputs.iter().map(|s| text(&fixture(s))));
    inputs.extend(program.link_flags.iter().map(|s| s.to_string()));
    let mut failures = Vec::new();
    for linker in LINKERS {
        let plain = dir.join(format!("plain-{linker:?}"));
        run_command(&link_command(
            program.arch,
            program.cc,
            linker,
            &inputs,
            &plain,
        ))
        .unwrap_or_else(|e| panic!("plain link: {e}"));
        let expected = run_binary(program.arch, &plain, &[]).unwrap_or_else(|e| panic!("{e}"));
        for mode in MODES {
            let folded = dir.join(format!("folded-{linker:?}-{mode}"));
            let command = link_command(program.arch, program.cc, linker, &inputs, &folded);
            let what = format!(
                "{} ({:?}, {linker:?}, mode {mode})",
                program.name, program.cc
            );
            let report = dir.join(format!("report-{linker:?}-{mode}.json"));
            if let Err(e) = run_command(&icf_link(mode, Some(&report), &command)) {
                failures.push(format!("{what}: icf link failed: {e}"));
                continue;
            }
            if program.must_fold && mode == "all" && saved_bytes(&report) == 0 {
                failures.push(format!("{what}: icf folded nothing"));
            }
            match run_binary(program.arch, &folded, &[]) {
                Err(e) => failures.push(format!("{what}: {e}")),
                Ok(got) => {
                    let (want, got) = if mode == "all" {
                        (
                            without_address_lines(&expected),
                            without_address_lines(&got),
                        )
                    } else {
                        (expected.clone(), got)
                    };
                    if want != got {
                        failures.push(format!(
                            "{what}: folded output differs\n  plain:  {want:?}\n  folded: {got:?}"
                        ));
                    }
                }
            }
        }
    }
    failures
}

fn assert_no_failures(failures: &[String]) {
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------
// Fold decisions on the checklist inputs (fixtures/lld_cases/checklist/).

/// The groups of `icf report --print-icf-sections`: each a list of
/// `file.o:(section)` names, the kept one first.
fn fold_groups(objects: &[&str], mode: &str, extra: &[&str]) -> Vec<Vec<String>> {
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let dir = scratch(&format!("checklist-{}-{mode}-{run}", objects[0]));
    let paths: Vec<String> = objects
        .iter()
        .map(|o| {
            let object = compile(
                &dir,
                Arch::X86_64,
                Compiler::Clang,
                &[],
                &format!("checklist/{o}.s"),
            );
            // Short names in the report: objects side by side in `dir`.
            let short = dir.join(format!("{o}.o"));
            std::fs::rename(&object, &short).expect("rename object");
            text(&short)
        })
        .collect();
    let mut argv = vec![
        text(&icf_binary()),
        "report".into(),
        "--print-icf-sections".into(),
        "--mode".into(),
        mode.into(),
    ];
    argv.extend(extra.iter().map(|s| s.to_string()));
    argv.extend(paths);
    let out = run_command(&argv).unwrap_or_else(|e| panic!("{e}"));
    let mut groups: Vec<Vec<String>> = Vec::new();
    for line in out.lines() {
        let name = |prefix: &str| {
            let rest = line.trim_start().strip_prefix(prefix)?;
            let file = Path::new(rest.split(":(").next()?).file_name()?;
            let section = rest.split(":(").nth(1)?;
            Some(format!("{}:({section}", file.to_str()?))
        };
        if let Some(kept) = name("selected section ") {
            groups.push(vec![kept]);
        } else if let Some(removed) = name("removing identical section ")
            && let Some(group) = groups.last_mut()
        {
            group.push(removed);
        }
    }
    groups
}

/// What lld decides for one input, and icf must decide too.
struct Decisions<'a> {
    objects: &'a [&'a str],
    modes: &'a [&'a str],
    extra: &'a [&'a str],
    /// Pairs of `file.o:(section)` that must share a group.
    together: &'a [(&'a str, &'a str)],
    /// Sections that must be in no group.
    apart: &'a [&'a str],
}

fn check_decisions(d: &Decisions) {
    let mut failures = Vec::new();
    for mode in d.modes {
        let groups = fold_groups(d.objects, mode, d.extra);
        let group_of = |s: &str| groups.iter().position(|g| g.iter().any(|m| m == s));
        for (a, b) in d.together {
            if group_of(a).is_none() || group_of(a) != group_of(b) {
                failures.push(format!(
                    "mode {mode}: {a} and {b} must fold; groups {groups:?}"
                ));
            }
        }
        for s in d.apart {
            if let Some(g) = group_of(s) {
                failures.push(format!(
                    "mode {mode}: {s} must not fold, but is in {:?}",
                    groups[g]
                ));
            }
        }
    }
    assert_no_failures(&failures);
}

/// icf1, icf4-icf7, icf-comdat, icf-different-output-sections, icf-c-identifier.
#[test]
fn checklist_section_kinds_decide_what_folds() {
    check_decisions(&Decisions {
        objects: &["basic"],
        modes: &MODES,
        extra: &[],
        together: &[
            ("basic.o:(.text.alpha)", "basic.o:(.text.beta)"),
            ("basic.o:(.text.al_lo)", "basic.o:(.text.al_hi)"),
            ("basic.o:(.text.cd_plain)", "basic.o:(.text.cd_grp)"),
        ],
        apart: &[
            "basic.o:(.text.gamma)",
            "basic.o:(.text.wx_a)",
            "basic.o:(.init)",
            "basic.o:(.fini)",
            "basic.o:(.sec_one)",
            "basic.o:(.sec_two)",
            "basic.o:(cid_sec)",
        ],
    });
}

/// icf2, icf3: a mutually recursive pair in two objects folds; a near miss does not.
#[test]
fn checklist_mutual_recursion_across_objects_folds() {
    check_decisions(&Decisions {
        objects: &["mutual_a", "mutual_b"],
        modes: &MODES,
        extra: &[],
        together: &[("mutual_a.o:(.text.ping)", "mutual_b.o:(.text.pong)")],
        apart: &["mutual_a.o:(.text.near)"],
    });
}

/// icf10-icf17, icf-non-mergeable, linkerscript/icf: other targets, addends,
/// undefined names, merge and .eh_frame sections keep twins apart.
#[test]
fn checklist_relocation_differences_keep_twins_apart() {
    let apart: Vec<String> = [
        "ad1", "ad2", "ud_def", "ud_und", "str_ref", "reg_ref", "sx_a", "sx_b", "eh_a", "eh_b",
        "wd1", "wd2", "scr_a", "scr_b",
    ]
    .iter()
    .map(|f| format!("relocs.o:(.text.{f})"))
    .collect();
    let apart: Vec<&str> = apart.iter().map(String::as_str).collect();
    check_decisions(&Decisions {
        objects: &["relocs"],
        modes: &MODES,
        extra: &[],
        together: &[],
        apart: &apart,
    });
}

/// icf-absolute: loads of absolute symbols with one value fold.
#[test]
fn checklist_absolute_symbols_with_one_value_fold() {
    check_decisions(&Decisions {
        objects: &["absolute_main", "absolute_eq"],
        modes: &MODES,
        extra: &[],
        together: &[(
            "absolute_main.o:(.text.abs_f1)",
            "absolute_main.o:(.text.abs_f2)",
        )],
        apart: &[],
    });
}

/// icf-absolute2: absolute symbols with two values keep their loaders apart.
#[test]
fn checklist_absolute_symbols_with_two_values_stay_apart() {
    check_decisions(&Decisions {
        objects: &["absolute_main", "absolute_ne"],
        modes: &MODES,
        extra: &[],
        together: &[],
        apart: &[
            "absolute_main.o:(.text.abs_f1)",
            "absolute_main.o:(.text.abs_f2)",
        ],
    });
}

/// icf-safe, safe mode: what the table names keeps its address (code may
/// become a thunk, data stays); the rest folds, also without a table.
#[test]
fn checklist_addrsig_safe_mode() {
    check_decisions(&Decisions {
        objects: &["sig", "nosig"],
        modes: &["safe"],
        extra: &[],
        together: &[
            ("sig.o:(.text.sg_f3)", "sig.o:(.text.sg_f4)"),
            ("sig.o:(.rodata.sg_g3)", "sig.o:(.rodata.sg_g4)"),
            ("nosig.o:(.text.ns_1)", "nosig.o:(.text.ns_2)"),
        ],
        apart: &[
            "sig.o:(.rodata.sg_g1)",
            "sig.o:(.rodata.sg_g2)",
            "sig.o:(.rodata.sg_l1)",
            "sig.o:(.rodata.sg_l2)",
            "sig.o:(.rodata.sg_h1)",
            "sig.o:(.rodata.sg_h2)",
        ],
    });
}

/// icf-safe, mode all: lld folds code the table names, never such read-only
/// data (that takes --ignore-data-address-equality).
#[test]
fn checklist_addrsig_rodata_stays_apart_in_mode_all() {
    check_decisions(&Decisions {
        objects: &["sig", "nosig"],
        modes: &["all"],
        extra: &[],
        together: &[
            ("sig.o:(.text.sg_f1)", "sig.o:(.text.sg_f2)"),
            ("sig.o:(.rodata.sg_g3)", "sig.o:(.rodata.sg_g4)"),
        ],
        apart: &[
            "sig.o:(.rodata.sg_g1)",
            "sig.o:(.rodata.sg_g2)",
            "sig.o:(.rodata.sg_l1)",
            "sig.o:(.rodata.sg_l2)",
            "sig.o:(.rodata.sg_h1)",
            "sig.o:(.rodata.sg_h2)",
        ],
    });
}

/// icf-safe with -shared: exported twins keep their addresses in safe mode.
#[test]
fn checklist_exported_twins_stay_apart_in_shared_safe_mode() {
    check_decisions(&Decisions {
        objects: &["sig", "nosig"],
        modes: &["safe"],
        extra: &["--shared"],
        together: &[],
        apart: &[
            "nosig.o:(.text.ns_1)",
            "nosig.o:(.text.ns_2)",
            "sig.o:(.rodata.sg_g3)",
            "sig.o:(.rodata.sg_g4)",
        ],
    });
}

/// icf-preemptible, executable: every level folds.
#[test]
fn checklist_preemptible_names_fold_in_an_executable() {
    check_decisions(&Decisions {
        objects: &["preempt"],
        modes: &MODES,
        extra: &[],
        together: &[
            ("preempt.o:(.text.pf1)", "preempt.o:(.text.pf2)"),
            ("preempt.o:(.text.pg1)", "preempt.o:(.text.pg2)"),
            ("preempt.o:(.text.pg1)", "preempt.o:(.text.pg3)"),
            ("preempt.o:(.text.ph1)", "preempt.o:(.text.ph2)"),
            ("preempt.o:(.text.ph1)", "preempt.o:(.text.ph3)"),
        ],
        apart: &[],
    });
}

/// icf-preemptible, -shared: callers of different preemptible names never fold.
#[test]
fn checklist_callers_of_preemptible_names_stay_apart_in_a_shared_library() {
    check_decisions(&Decisions {
        objects: &["preempt"],
        modes: &MODES,
        extra: &["--shared"],
        together: &[],
        apart: &[
            "preempt.o:(.text.pg2)",
            "preempt.o:(.text.ph1)",
            "preempt.o:(.text.ph2)",
            "preempt.o:(.text.ph3)",
        ],
    });
}

/// icf-addend: `x+4` and `y` name one place and fold; `x+4@GOTPCREL` and
/// `y@GOTPCREL` name different GOT slots and must not.
#[test]
fn checklist_addend_of_a_got_reference_is_not_an_offset_into_the_symbol() {
    check_decisions(&Decisions {
        objects: &["addend"],
        modes: &MODES,
        extra: &[],
        together: &[("addend.o:(.text.ad_f1)", "addend.o:(.text.ad_f2)")],
        apart: &["addend.o:(.text.gp_f1)", "addend.o:(.text.gp_f2)"],
    });
}

/// icf-merge, icf-merge-sec, icf-merge2, icf14: an equal string in two merge
/// sections is one target; other strings and constants of other sizes are not.
#[test]
fn checklist_merge_section_references() {
    check_decisions(&Decisions {
        objects: &["strings_a", "strings_b"],
        modes: &MODES,
        extra: &[],
        together: &[("strings_a.o:(.text.ms_1)", "strings_b.o:(.text.ms_2)")],
        apart: &[
            "strings_a.o:(.text.ms_3)",
            "strings_a.o:(.text.ms_4)",
            "strings_b.o:(.text.ms_5)",
        ],
    });
}

/// icf-keep-unique: a named global stays; its twins fold.
#[test]
fn checklist_keep_unique() {
    check_decisions(&Decisions {
        objects: &["misc"],
        modes: &MODES,
        extra: &["--keep-unique", "ku2"],
        together: &[("misc.o:(.text.ku1)", "misc.o:(.text.ku3)")],
        apart: &["misc.o:(.text.ku2)"],
    });
}

/// icf-link-order, icf-relro, icf-ineligible: SHF_LINK_ORDER and writable
/// sections never fold; references to aliases of one section are one target.
#[test]
fn checklist_ineligible_sections_and_their_aliases() {
    check_decisions(&Decisions {
        objects: &["misc"],
        modes: &MODES,
        extra: &[],
        together: &[
            ("misc.o:(.text.in1)", "misc.o:(.text.in2)"),
            ("misc.o:(.text.in1)", "misc.o:(.text.in3)"),
        ],
        apart: &[
            "misc.o:(.meta)",
            "misc.o:(.data.rel.ro)",
            "misc.o:(.data.rel.ro.rr1)",
            "misc.o:(.data.dd)",
        ],
    });
}

/// icf-eh-frame: twins fold with the same LSDA or none, never with other LSDAs.
#[test]
fn checklist_lsda_decides_like_code() {
    check_decisions(&Decisions {
        objects: &["lsda"],
        modes: &MODES,
        extra: &[],
        together: &[
            ("lsda.o:(.text.lc)", "lsda.o:(.text.ld)"),
            ("lsda.o:(.text.le)", "lsda.o:(.text.lf)"),
        ],
        apart: &[
            "lsda.o:(.text.la)",
            "lsda.o:(.text.lb)",
            "lsda.o:(.text.lg)",
            "lsda.o:(.text.lh)",
        ],
    });
}

// ---------------------------------------------------------------------------
// Programs a wrong fold would break.

/// icf-addend (non-trivial): `pair_lo+4@GOTPCREL` is not `pair_hi@GOTPCREL`.
#[test]
fn runs_gotpcrel_with_addend_unchanged() {
    assert_no_failures(&folded_runs_differ(&Program {
        name: "gotpcrel_addend",
        arch: Arch::X86_64,
        cc: Compiler::Gcc,
        flags: &[],
        sources: &["gotpcrel_addend.s", "gotpcrel_addend_main.c"],
        link_inputs: &[],
        link_flags: &[],
        must_fold: false,
    }));
}

/// icf-addend (trivial): `first_lo+4` and `second_lo+4` are one place only if
/// their sections fold.
#[test]
fn runs_symbol_plus_addend_into_unfolded_sections_unchanged() {
    assert_no_failures(&folded_runs_differ(&Program {
        name: "addend_pair",
        arch: Arch::X86_64,
        cc: Compiler::Gcc,
        flags: &[],
        sources: &["addend_pair.s", "addend_pair_main.c"],
        link_inputs: &[],
        link_flags: &[],
        must_fold: false,
    }));
}

/// icf9 / icf-safe (rodata), gcc with data sections (no address-significance
/// table): the functions returning two compared tables must not fold.
#[test]
fn runs_compared_rodata_tables_gcc_unchanged() {
    assert_no_failures(&folded_runs_differ(&Program {
        name: "rodata_twins_gcc",
        arch: Arch::X86_64,
        cc: Compiler::Gcc,
        flags: &["-ffunction-sections", "-fdata-sections"],
        sources: &["rodata_twins.c"],
        link_inputs: &[],
        link_flags: &[],
        must_fold: false,
    }));
}

/// The same with clang (its `.llvm_addrsig` names both tables).
#[test]
fn runs_compared_rodata_tables_clang_unchanged() {
    assert_no_failures(&folded_runs_differ(&Program {
        name: "rodata_twins_clang",
        arch: Arch::X86_64,
        cc: Compiler::Clang,
        flags: &["-ffunction-sections", "-fdata-sections"],
        sources: &["rodata_twins.c"],
        link_inputs: &[],
        link_flags: &[],
        must_fold: false,
    }));
}

/// icf-safe (text): compared function addresses stay distinct in safe mode.
#[test]
fn runs_compared_function_addresses_unchanged() {
    let mut failures = Vec::new();
    for (cc, name) in [
        (Compiler::Gcc, "fn_addresses_gcc"),
        (Compiler::Clang, "fn_addresses_clang"),
    ] {
        failures.extend(folded_runs_differ(&Program {
            name,
            arch: Arch::X86_64,
            cc,
            flags: &["-ffunction-sections"],
            sources: &["fn_addresses.c"],
            link_inputs: &[],
            link_flags: &[],
            must_fold: true,
        }));
    }
    assert_no_failures(&failures);
}

/// icf-absolute, icf-absolute2: loaders of absolute symbols.
#[test]
fn runs_absolute_symbol_loaders_unchanged() {
    let mut failures = Vec::new();
    for (values, name) in [
        ("abs_equal.s", "abs_equal"),
        ("abs_unequal.s", "abs_unequal"),
    ] {
        failures.extend(folded_runs_differ(&Program {
            name,
            arch: Arch::X86_64,
            cc: Compiler::Gcc,
            flags: &[],
            sources: &["abs_values.s", values, "abs_values_main.c"],
            link_inputs: &[],
            // `movl $abs_x` is an absolute 32-bit relocation: no PIE.
            link_flags: &["-no-pie"],
            must_fold: name == "abs_equal",
        }));
    }
    assert_no_failures(&failures);
}

/// icf-c-identifier: a section measured through __start_/__stop_ keeps both twins.
#[test]
fn runs_c_identifier_section_size_unchanged() {
    let mut failures = Vec::new();
    for (cc, name) in [
        (Compiler::Gcc, "hooks_gcc"),
        (Compiler::Clang, "hooks_clang"),
    ] {
        failures.extend(folded_runs_differ(&Program {
            name,
            arch: Arch::X86_64,
            cc,
            flags: &[],
            sources: &["hooks_section.c"],
            link_inputs: &[],
            link_flags: &[],
            must_fold: false,
        }));
    }
    assert_no_failures(&failures);
}

/// icf7: the copy that stays keeps the strictest alignment of its class.
#[test]
fn runs_alignment_of_folded_twins_kept() {
    assert_no_failures(&folded_runs_differ(&Program {
        name: "align_twins",
        arch: Arch::X86_64,
        cc: Compiler::Gcc,
        flags: &[],
        sources: &["align_twins.s", "align_twins_main.c"],
        link_inputs: &[],
        link_flags: &[],
        must_fold: true,
    }));
}

/// linkerscript/icf: jumps to names a linker script defines stay apart, and a
/// script among the inputs does not stop icf link.
#[test]
fn runs_jumps_to_script_defined_names_unchanged() {
    assert_no_failures(&folded_runs_differ(&Program {
        name: "script_symbols",
        arch: Arch::X86_64,
        cc: Compiler::Gcc,
        flags: &[],
        sources: &["script_symbols.s", "script_symbols_main.c"],
        link_inputs: &["script_symbols.ld"],
        link_flags: &[],
        must_fold: false,
    }));
}

/// icf-many-sections: an object with more sections than SHN_LORESERVE is
/// read, folded, written and linked.
#[test]
fn runs_object_with_extended_section_indices_unchanged() {
    assert_no_failures(&folded_runs_differ(&Program {
        name: "many_sections",
        arch: Arch::X86_64,
        cc: Compiler::Gcc,
        flags: &[],
        sources: &["many_sections.s", "many_sections_main.c"],
        link_inputs: &[],
        link_flags: &[],
        must_fold: true,
    }));
}

/// aarch64-adrp-ldr-icf: an adrp/ldr GOT pair split across two functions.
#[test]
fn runs_aarch64_got_pair_split_across_functions_unchanged() {
    assert_no_failures(&folded_runs_differ(&Program {
        name: "got_split_aarch64",
        arch: Arch::Aarch64,
        cc: Compiler::Gcc,
        flags: &[],
        sources: &["got_split_aarch64.s", "got_split_aarch64_main.c"],
        link_inputs: &[],
        link_flags: &[],
        must_fold: false,
    }));
}

/// icf-preemptible: a shared library folded by icf, whose callers of two twin
/// names must still reach the executable's own definition of one of them.
#[test]
fn runs_shared_library_callers_of_preemptible_twins_unchanged() {
    let dir = scratch("preempt_shared");
    let library = compile(
        &dir,
        Arch::X86_64,
        Compiler::Gcc,
        &["-fPIC"],
        "preempt_lib.c",
    );
    let main = compile(&dir, Arch::X86_64, Compiler::Gcc, &[], "preempt_main.c");
    let mut failures = Vec::new();
    for linker in LINKERS {
        let mut outputs = Vec::new();
        for mode in ["plain", "safe", "all"] {
            let lib_dir = dir.join(format!("{linker:?}-{mode}"));
            std::fs::create_dir_all(&lib_dir).expect("create library dir");
            let so = lib_dir.join("libpreempt.so");
            let mut command = link_command(
                Arch::X86_64,
                Compiler::Gcc,
                linker,
                &["-shared".into(), text(&library)],
                &so,
            );
            if mode != "plain" {
                command = icf_link(mode, None, &command);
            }
            if let Err(e) = run_command(&command) {
                failures.push(format!("{linker:?} {mode}: {e}"));
                continue;
            }
            let exe = lib_dir.join("app");
            let exe_command = link_command(
                Arch::X86_64,
                Compiler::Gcc,
                linker,
                &[
                    text(&main),
                    format!("-L{}", lib_dir.display()),
                    "-lpreempt".into(),
                ],
                &exe,
            );
            run_command(&exe_command).unwrap_or_else(|e| panic!("{e}"));
            let lib_path = text(&lib_dir);
            match run_binary(Arch::X86_64, &exe, &[("LD_LIBRARY_PATH", &lib_path)]) {
                Ok(out) => outputs.push((mode, out)),
                Err(e) => failures.push(format!("{linker:?} {mode}: {e}")),
            }
        }
        if let Some((_, plain)) = outputs.iter().find(|(m, _)| *m == "plain") {
            assert_eq!(plain, "via_one 12 via_two 1007\n", "the plain program");
            for (mode, out) in &outputs {
                if out != plain {
                    failures.push(format!(
                        "{linker:?} mode {mode}: folded library changes the program\n  plain:  {plain:?}\n  folded: {out:?}"
                    ));
                }
            }
        }
    }
    assert_no_failures(&failures);
}
