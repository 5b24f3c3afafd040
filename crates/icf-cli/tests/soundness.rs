//! Wrong-code regressions: programs on which a fold once changed behaviour
//! (issue M2-1), built by gcc and clang-19, linked plainly and through
//! `icf link --strict` in safe and all mode with several linkers, RUN, and
//! their outputs compared. The sources live in `fixtures/soundness/`.
//!
//! Every folded program must also pass `icf verify` against the plain one.
//!
//! Lines starting with `fnaddr ` (or `fnptr `, as `cargo xtask fuzz`
//! writes them) compare function addresses, which mode
//! `all` may merge: they are compared in safe mode only. Every other line,
//! data addresses included, must match in both modes. AArch64 programs run
//! under `qemu-aarch64`.

use icf_fixtures::{Arch, Build, Compiler, Linker, run_command};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MODES: [&str; 2] = ["safe", "all"];
const BOTH: &[Compiler] = &[Compiler::Gcc, Compiler::Clang];

/// One object of a program built from several parts of a source: the
/// source (under `fixtures/`), its own compiler flags (`-DPART_X`), and the
/// static archive it goes in, if any.
struct Unit<'a> {
    source: &'a str,
    flags: &'a [&'a str],
    archive: Option<&'a str>,
}

/// One unit of `source`, compiled with `flags`, in `archive` if any.
fn unit<'a>(source: &'a str, flags: &'a [&'a str], archive: Option<&'a str>) -> Unit<'a> {
    Unit {
        source,
        flags,
        archive,
    }
}

/// One program and the matrix it is built with.
struct Case<'a> {
    name: &'a str,
    arch: Arch,
    /// Files under `fixtures/soundness/`, each built with `cflags`.
    sources: &'a [&'a str],
    /// Objects built part by part, in link order, after `sources`.
    units: &'a [Unit<'a>],
    /// Compiler flags besides `-O2 -g0`.
    cflags: &'a [&'a str],
    compilers: &'a [Compiler],
    linkers: &'a [Linker],
    /// Link flags; `@DIR@` stands for `fixtures/soundness`.
    link_args: &'a [&'a str],
    /// Pairs of functions the folded link must share a body for (mode
    /// `all`, first compiler): the case exercises a fold, not only its absence.
    folds: &'a [(&'a str, &'a str)],
    /// Pairs of functions that must keep bodies of their own in every mode.
    apart: &'a [(&'a str, &'a str)],
}

impl Case<'_> {
    fn x86(name: &'static str, sources: &'static [&'static str]) -> Case<'static> {
        Case {
            name,
            arch: Arch::X86_64,
            sources,
            units: &[],
            cflags: &["-ffunction-sections"],
            compilers: BOTH,
            linkers: &Linker::ALL,
            link_args: &[],
            folds: &[],
            apart: &[],
        }
    }

    fn aarch64(name: &'static str, sources: &'static [&'static str]) -> Case<'static> {
        Case {
            arch: Arch::Aarch64,
            linkers: &[Linker::Bfd, Linker::Lld],
            ..Case::x86(name, sources)
        }
    }
}

fn source_dir() -> PathBuf {
    icf_fixtures::source_dir().join("soundness")
}

/// Seconds an icf command may run: a hang (a partition made again without
/// end, say) fails its case instead of stalling the test run.
const ICF_TIME_LIMIT: &str = "60";

/// The icf binary under test, run with [`ICF_TIME_LIMIT`] (`timeout` exits
/// with status 124 when it stops it).
fn icf_command() -> Command {
    let mut command = Command::new("timeout");
    command
        .args(["--kill-after=10", ICF_TIME_LIMIT])
        .arg(env!("CARGO_BIN_EXE_icf"));
    command
}

fn output_of(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"))
}

fn succeeded(command: &mut Command) -> Result<Output, String> {
    let output = output_of(command);
    if output.status.success() {
        Ok(output)
    } else {
        Err(format!(
            "{command:?} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// Runs a program: its output followed by its exit status (some
/// programs exit with a checksum), or why it died.
fn run(arch: Arch, binary: &Path) -> Result<String, String> {
    let mut command = run_command(arch, binary);
    let output = output_of(&mut command);
    match output.status.code() {
        Some(code) => Ok(format!(
            "{}exit {code}\n",
            String::from_utf8_lossy(&output.stdout)
        )),
        None => Err(format!(
            "{command:?} died ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )),
    }
}

/// The lines of `output` that must not change in `mode`.
fn compared(output: &str, mode: &str) -> String {
    output
        .lines()
        .filter(|line| {
            mode == "safe" || !(line.starts_with("fnaddr ") || line.starts_with("fnptr "))
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// The pairs of functions an `icf link --report` JSON report folds
/// together (the kept copy with each alias or thunk).
fn folded_pairs(report: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(report)
        .unwrap_or_else(|e| panic!("reading {}: {e}", report.display()));
    let json: serde_json::Value = serde_json::from_str(&text).expect("a JSON report");
    let mut pairs = Vec::new();
    for group in json["groups"].as_array().into_iter().flatten() {
        let members: Vec<(&str, &str)> = group["members"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                (
                    m["symbol"].as_str().unwrap_or_default(),
                    m["action"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        let kept = members.iter().find(|(_, action)| *action == "kept");
        for (name, action) in &members {
            if let Some((kept, _)) = kept
                && matches!(*action, "alias" | "thunk")
            {
                pairs.push((kept.to_string(), name.to_string()));
            }
        }
    }
    pairs
}

/// Whether `pairs` fold `a` and `b` together.
fn together(pairs: &[(String, String)], a: &str, b: &str) -> bool {
    pairs
        .iter()
        .any(|(x, y)| (x == a && y == b) || (x == b && y == a))
}

/// Builds, folds, links, runs and compares every combination of `case`;
/// fails with every combination that went wrong.
fn check(case: &Case<'_>) {
    let dir = icf_fixtures::source_dir()
        .join("../target/soundness")
        .join(case.name);
    let _ = std::fs::remove_dir_all(&dir);
    let mut failures = Vec::new();
    let mut combinations = 0;
    for &compiler in case.compilers {
        let build = dir.join(format!("{compiler:?}").to_lowercase());
        std::fs::create_dir_all(&build).expect("create scratch dir");
        let mut objects = Vec::new();
        for source in case.sources {
            let object = build.join(format!("{source}.o"));
            let compiled = succeeded(
                Build::bare(compiler, case.arch)
                    .driver_command(false)
                    .args(["-c", "-O2", "-g0"])
                    .args(case.cflags)
                    .arg(source_dir().join(source))
                    .arg("-o")
                    .arg(&object),
            );
            if let Err(e) = compiled {
                panic!("{}: {e}", case.name);
            }
            objects.push(object);
        }
        let mut archives: Vec<(&str, Vec<PathBuf>)> = Vec::new();
        for (index, unit) in case.units.iter().enumerate() {
            let object = build.join(format!("unit{index}.o"));
            let compiled = succeeded(
                Build::bare(compiler, case.arch)
                    .driver_command(false)
                    .args(["-c", "-g0"])
                    .args(unit.flags)
                    .arg(icf_fixtures::source_dir().join(unit.source))
                    .arg("-o")
                    .arg(&object),
            );
            if let Err(e) = compiled {
                panic!("{}: {e}", case.name);
            }
            match unit.archive {
                None => objects.push(object),
                Some(name) => match archives.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, members)) => members.push(object),
                    None => archives.push((name, vec![object])),
                },
            }
        }
        for (name, members) in &archives {
            let archive = build.join(name);
            let _ = std::fs::remove_file(&archive);
            if let Err(e) = succeeded(Command::new("ar").arg("rcs").arg(&archive).args(members)) {
                panic!("{}: {e}", case.name);
            }
            objects.push(archive);
        }
        // Relocations kept in the output (`-q`) let `icf verify` tell
        // addresses from numbers.
        let link_args: Vec<String> = case
            .link_args
            .iter()
            .map(|a| a.replace("@DIR@", &source_dir().display().to_string()))
            .chain(["-Wl,-q".to_string()])
            .collect();
        for &linker in case.linkers {
            let plain = build.join(format!("plain-{linker:?}"));
            let mut command = Build::bare(compiler, case.arch).link_command(false, linker);
            command
                .args(&objects)
                .args(&link_args)
                .arg("-o")
                .arg(&plain);
            if let Err(e) = succeeded(&mut command) {
                panic!("{}: the plain link fails: {e}", case.name);
            }
            let expected = run(case.arch, &plain)
                .unwrap_or_else(|e| panic!("{}: the plain program fails: {e}", case.name));
            for mode in MODES {
                combinations += 1;
                let context = format!("{} ({compiler:?}, {linker:?}, {mode})", case.name);
                let folded = build.join(format!("folded-{linker:?}-{mode}"));
                let mut command = Build::bare(compiler, case.arch).link_command(false, linker);
                command
                    .args(&objects)
                    .args(&link_args)
                    .arg("-o")
                    .arg(&folded);
                let program = command.get_program().to_owned();
                let arguments: Vec<_> = command.get_args().map(ToOwned::to_owned).collect();
                let report = build.join(format!("report-{linker:?}-{mode}.json"));
                let mut icf = icf_command();
                icf.args(["link", "--strict", "--mode", mode, "--report"])
                    .arg(&report)
                    .arg("--")
                    .arg(program)
                    .args(arguments);
                if let Err(e) = succeeded(&mut icf) {
                    failures.push(format!("{context}: icf link fails: {e}"));
                    continue;
                }
                let pairs = folded_pairs(&report);
                for (a, b) in case.apart {
                    if together(&pairs, a, b) {
                        failures.push(format!("{context}: {a} and {b} were folded"));
                    }
                }
                if mode == "all" && compiler == case.compilers[0] {
                    for (a, b) in case.folds {
                        if !together(&pairs, a, b) {
                            failures.push(format!("{context}: {a} and {b} did not fold"));
                        }
                    }
                }
                let mut verify = icf_command();
                verify
                    .args(["verify", "--mode", mode])
                    .arg(&plain)
                    .arg(&folded);
                if let Err(e) = succeeded(&mut verify) {
                    failures.push(format!("{context}: icf verify fails: {e}"));
                }
                match run(case.arch, &folded) {
                    Err(e) => failures.push(format!("{context}: the folded program fails: {e}")),
                    Ok(actual) if compared(&actual, mode) != compared(&expected, mode) => {
                        failures.push(format!(
                            "{context}: the folded program behaves differently\n\
                             --- plain\n{expected}--- folded\n{actual}"
                        ));
                    }
                    Ok(_) => {}
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {combinations} builds of {} went wrong:\n\n{}",
        failures.len(),
        case.name,
        failures.join("\n\n")
    );
}

#[test]
fn tables_sharing_a_section_keep_their_getters_apart() {
    let apart = &[("get_a", "get_b")];
    let source = &["shared_section_tables.c"];
    check(&Case {
        apart,
        ..Case::x86("shared_section_tables", source)
    });
    check(&Case {
        apart,
        ..Case::aarch64("shared_section_tables_aarch64", source)
    });
}

#[test]
fn references_to_symbols_sharing_a_section_keep_their_referrers_apart() {
    // Absolute words in read-only data: not in a position-independent executable.
    check(&Case {
        link_args: &["-no-pie"],
        apart: &[("f0", "f1"), ("d0", "d1")],
        ..Case::x86(
            "same_section_symbols",
            &["same_section_symbols.s", "same_section_symbols_main.c"],
        )
    });
    check(&Case {
        apart: &[("f0", "f1"), ("f1", "f2"), ("f0", "f2")],
        ..Case::aarch64(
            "same_section_symbols_aarch64",
            &[
                "same_section_symbols_aarch64.s",
                "same_section_symbols_aarch64_main.c",
            ],
        )
    });
}

#[test]
fn a_pointer_one_past_an_array_belongs_to_that_array() {
    let apart = &[("end1", "end2")];
    check(&Case {
        apart,
        ..Case::x86("one_past_the_end", &["one_past_the_end.c"])
    });
    check(&Case {
        apart,
        ..Case::aarch64("one_past_the_end_aarch64", &["one_past_the_end.c"])
    });
}

#[test]
fn code_falling_through_into_the_next_symbol_compares_what_follows() {
    check(&Case {
        apart: &[("c1", "c2")],
        ..Case::x86("fall_through", &["fall_through.s", "fall_through_main.c"])
    });
}

#[test]
fn opaque_functions_keep_the_calls_the_assembler_resolved() {
    check(&Case {
        apart: &[("c1", "c2"), ("f1", "f2")],
        ..Case::x86(
            "opaque_local_calls",
            &["opaque_local_calls.s", "opaque_local_calls_main.c"],
        )
    });
}

#[test]
fn opaque_aarch64_functions_mask_only_relocated_fields() {
    check(&Case {
        apart: &[("f1", "f2")],
        ..Case::aarch64(
            "opaque_load_store_aarch64",
            &[
                "opaque_load_store_aarch64.s",
                "opaque_load_store_aarch64_main.c",
            ],
        )
    });
}

#[test]
fn thunks_keep_their_function_s_alignment() {
    let folds = &[("twin_a", "twin_b")];
    check(&Case {
        folds,
        ..Case::x86("aligned_thunk", &["aligned_thunk.c"])
    });
    check(&Case {
        folds,
        ..Case::aarch64("aligned_thunk_aarch64", &["aligned_thunk.c"])
    });
}

#[test]
fn a_function_entered_past_its_start_keeps_its_body_where_it_cannot_be_an_alias() {
    // In safe mode e2 cannot share e1's address and a thunk would have
    // nothing at e2_inner: it must keep its body (the program would jump
    // past the thunk otherwise). In mode all it is an alias.
    let folds = &[("e1", "e2")];
    check(&Case {
        folds,
        ..Case::x86(
            "entered_inside",
            &["entered_inside.s", "entered_inside_main.c"],
        )
    });
    check(&Case {
        folds,
        ..Case::aarch64(
            "entered_inside_aarch64",
            &["entered_inside_aarch64.s", "entered_inside_main.c"],
        )
    });
}

#[test]
fn a_jump_into_a_function_s_interior_makes_its_layout_matter() {
    let apart = &[("f1", "f2"), ("c1", "c2")];
    check(&Case {
        apart,
        ..Case::x86(
            "interior_jumps",
            &["interior_jumps.s", "interior_jumps_main.c"],
        )
    });
    check(&Case {
        apart,
        ..Case::aarch64(
            "interior_jumps_aarch64",
            &["interior_jumps_aarch64.s", "interior_jumps_main.c"],
        )
    });
}

#[test]
fn a_jump_from_another_object_into_a_function_s_interior_makes_its_layout_matter() {
    // As above, but c1 and c2 jump by symbol and offset from another
    // object: only the references icf reads from that object say that f1's
    // and f2's layouts matter (`attributes.rs`, `interior_referenced`).
    let apart = &[("f1", "f2"), ("c1", "c2")];
    check(&Case {
        apart,
        ..Case::x86(
            "interior_jumps_elsewhere",
            &[
                "interior_jumps_targets.s",
                "interior_jumps_callers.s",
                "interior_jumps_main.c",
            ],
        )
    });
    check(&Case {
        apart,
        ..Case::aarch64(
            "interior_jumps_elsewhere_aarch64",
            &[
                "interior_jumps_targets_aarch64.s",
                "interior_jumps_callers_aarch64.s",
                "interior_jumps_main.c",
            ],
        )
    });
}

#[test]
fn twins_the_plan_keeps_apart_keep_their_address_takers_apart_in_mode_all() {
    // In mode all, take_a and take_b (returning twin_a's and twin_b's
    // addresses) compare equal only if the plan merges the twins. twin_b's
    // section is retained, so it keeps its body: the audit must pin it and
    // partition again (`Analysis::run`). Without the audit, take_b becomes
    // an alias of take_a and returns twin_a's address.
    let source = "soundness/audit_kept_apart.c";
    let units = [
        unit(source, &["-O2", "-ffunction-sections", "-DPART_MAIN"], None),
        unit(source, &["-O2", "-ffunction-sections", "-DPART_A"], None),
        unit(source, &["-O2", "-ffunction-sections", "-DPART_B"], None),
    ];
    let apart = &[("take_a", "take_b")];
    check(&Case {
        units: &units,
        apart,
        ..Case::x86("audit_kept_apart", &[])
    });
    check(&Case {
        units: &units,
        apart,
        ..Case::aarch64("audit_kept_apart_aarch64", &[])
    });
}

#[test]
fn exported_twins_keep_distinct_addresses() {
    let exported = |name, link_args| Case {
        link_args,
        folds: &[("twin_a", "twin_b")],
        ..Case::x86(name, &["exported.c"])
    };
    check(&exported("export_dynamic", &["-Wl,--export-dynamic"]));
    check(&exported(
        "export_dynamic_symbol",
        &[
            "-Wl,--export-dynamic-symbol=twin_a",
            "-Wl,--export-dynamic-symbol=twin_b",
        ],
    ));
    check(&exported(
        "dynamic_list",
        &["-Wl,--dynamic-list=@DIR@/exported.list"],
    ));
}

#[test]
fn addresses_taken_by_code_the_gc_roots_miss_stay_significant() {
    // `observe` is reached only through the dynamic symbol table: the link
    // keeps it, icf's --gc-sections roots miss it. The addresses it takes
    // must still keep twin_a and twin_b apart in safe mode. (gold fails
    // with an internal error on --gc-sections with -q.)
    let link_args = &["-Wl,--gc-sections", "-Wl,--export-dynamic-symbol=observe"];
    check(&Case {
        link_args,
        linkers: &[Linker::Bfd, Linker::Lld, Linker::Mold],
        ..Case::x86("gc_root_missed", &["gc_root_missed.c"])
    });
    check(&Case {
        link_args,
        ..Case::aarch64("gc_root_missed_aarch64", &["gc_root_missed.c"])
    });
}

#[test]
fn the_link_command_s_keep_unique_is_honoured() {
    check(&Case {
        linkers: &[Linker::Gold, Linker::Lld],
        link_args: &["-Wl,--keep-unique=twin_b"],
        apart: &[("twin_a", "twin_b")],
        ..Case::x86("keep_unique", &["keep_unique.c"])
    });
}

#[test]
fn twins_in_different_output_sections_of_a_linker_script_stay_apart() {
    check(&Case {
        linkers: &[Linker::Bfd, Linker::Lld],
        link_args: &["-Wl,-T,@DIR@/linker_script.ld"],
        apart: &[("twin_a", "twin_b")],
        ..Case::x86("linker_script", &["linker_script.c"])
    });
}

#[test]
fn an_input_section_no_rule_surely_places_is_a_class_of_its_own() {
    // The script's pattern `*unit1.o` names the archive member holding
    // twin_b but not its archive: icf cannot say where it goes, so twin_b
    // folds with nothing (GNU ld and lld put it in .twins_b).
    let source = "soundness/linker_script_member.c";
    check(&Case {
        linkers: &[Linker::Bfd, Linker::Lld],
        link_args: &["-Wl,-T,@DIR@/linker_script_member.ld"],
        units: &[
            unit(source, &["-O2", "-ffunction-sections", "-DPART_MAIN"], None),
            unit(
                source,
                &["-O2", "-ffunction-sections", "-DPART_MEMBER"],
                Some("libtw.a"),
            ),
        ],
        apart: &[("twin_a", "twin_b")],
        ..Case::x86("linker_script_member", &[])
    });
}

#[test]
fn objects_with_crel_relocations_fold() {
    check(&Case {
        compilers: &[Compiler::Clang],
        linkers: &[Linker::Lld],
        cflags: &[
            "-ffunction-sections",
            "-Wa,--crel,--allow-experimental-crel",
        ],
        folds: &[("name_a", "name_b"), ("twice_a", "twice_b")],
        ..Case::x86("crel", &["crel.c"])
    });
}

#[test]
fn read_only_data_keeps_its_address_in_mode_all() {
    check(&Case {
        cflags: &["-ffunction-sections", "-fdata-sections"],
        apart: &[("table_a", "table_b")],
        ..Case::x86("data_identity", &["data_identity.c"])
    });
}

#[test]
fn read_only_tables_of_function_pointers_keep_their_functions_addresses() {
    // Only a jump table's entries into its own function need nothing of
    // their target: a `.rodata` table of pointers to significant functions
    // compares them by identity, so its readers stay apart in safe mode.
    let cflags = &["-ffunction-sections", "-fdata-sections", "-fno-pic"];
    let link_args = &["-no-pie"];
    let source = &["rodata_function_tables.c"];
    check(&Case {
        cflags,
        link_args,
        ..Case::x86("rodata_function_tables", source)
    });
    // (With GNU ld, icf verify cannot prove the correct fold of the tables
    // and their getters in mode all on AArch64: "different offsets or
    // sizes of read-only data".)
    check(&Case {
        cflags,
        link_args,
        linkers: &[Linker::Lld],
        ..Case::aarch64("rodata_function_tables_aarch64", source)
    });
}

#[test]
fn a_jump_table_folds_with_its_function_or_not_at_all() {
    let no_pic = |name, sources| Case {
        cflags: &["-ffunction-sections", "-fdata-sections", "-fno-pic"],
        link_args: &["-no-pie"],
        ..Case::x86(name, sources)
    };
    check(&Case {
        folds: &[("switch_a", "switch_b")],
        ..no_pic("jump_tables_no_pic", &["jump_tables.c"])
    });
    check(&no_pic(
        "jump_tables_override",
        &["jump_tables.c", "jump_tables_override.c"],
    ));
    check(&Case {
        compilers: &[Compiler::Clang],
        cflags: &["-ffunction-sections", "-fno-unique-section-names"],
        folds: &[("switch_a", "switch_b")],
        ..Case::x86("jump_tables_clang_unique", &["jump_tables.c"])
    });
}

#[test]
fn prefixes_and_immediates_compare_by_meaning() {
    check(&Case {
        folds: &[("t_imm8", "t_imm32")],
        apart: &[("t_notrack", "t_tracked")],
        ..Case::x86("encodings", &["encodings.s", "encodings_main.c"])
    });
    check(&Case {
        apart: &[("page1", "page2")],
        ..Case::aarch64(
            "adrp_pages_aarch64",
            &["adrp_pages_aarch64.s", "adrp_pages_aarch64_main.c"],
        )
    });
}

#[test]
fn a_name_resolves_to_the_archive_member_the_linker_picks() {
    let source = "soundness/archive_member_choice.c";
    check(&Case {
        units: &[
            unit(source, &["-O2", "-ffunction-sections", "-DPART_MAIN"], None),
            unit(
                source,
                &["-O2", "-ffunction-sections", "-DPART_WEAK"],
                Some("libpick.a"),
            ),
            unit(
                source,
                &["-O2", "-ffunction-sections", "-DPART_STRONG"],
                Some("libpick.a"),
            ),
        ],
        ..Case::x86("archive_member_choice", &[])
    });
}

/// Wrong-code classes `cargo xtask fuzz` found (`fixtures/fuzz_found/`),
/// built part by part as the generator built them.
#[test]
fn programs_the_generator_found() {
    // A weak definition in an extracted archive member, and a strong one in
    // a member no linker extracts: the weak one is what runs.
    let source = "fuzz_found/weak_resolved_to_unextracted_member.c";
    check(&Case {
        compilers: &[Compiler::Gcc],
        linkers: &[Linker::Bfd, Linker::Lld, Linker::Mold],
        link_args: &["-pie", "-rdynamic"],
        units: &[
            unit(
                source,
                &[
                    "-O3",
                    "-fPIE",
                    "-ffunction-sections",
                    "-fdata-sections",
                    "-DPART_MAIN",
                ],
                None,
            ),
            unit(
                source,
                &[
                    "-O3",
                    "-fPIE",
                    "-ffunction-sections",
                    "-fdata-sections",
                    "-DPART_U2",
                ],
                None,
            ),
            unit(
                source,
                &[
                    "-O3",
                    "-fPIE",
                    "-ffunction-sections",
                    "-fdata-sections",
                    "-DPART_AR1",
                ],
                Some("libfz.a"),
            ),
            unit(
                source,
                &[
                    "-O3",
                    "-fPIE",
                    "-ffunction-sections",
                    "-fdata-sections",
                    "-DPART_UNUSED",
                ],
                Some("libfz.a"),
            ),
        ],
        ..Case::x86("weak_resolved_to_unextracted_member", &[])
    });
    // A weak definition whose twin lives in an archive member, while a
    // member the link skips defines the same name: the name stays defined
    // where it was, or mold loads the skipped member and runs its code.
    let source = "fuzz_found/weak_moved_into_an_archive_twin.c";
    check(&Case {
        cflags: &[],
        link_args: &["-pie"],
        units: &[
            unit(
                source,
                &["-Os", "-fPIC", "-ffunction-sections", "-DPART_MAIN"],
                None,
            ),
            unit(
                source,
                &["-Os", "-fPIC", "-ffunction-sections", "-DPART_WEAK"],
                None,
            ),
            unit(
                source,
                &["-Os", "-fPIC", "-ffunction-sections", "-DPART_KEPT"],
                Some("libtwin.a"),
            ),
            unit(
                source,
                &["-Os", "-fPIC", "-ffunction-sections", "-DPART_SKIPPED"],
                Some("libtwin.a"),
            ),
        ],
        ..Case::x86("weak_moved_into_an_archive_twin", &[])
    });
    // A function whose jump table shares `.rodata` with an array that
    // stays keeps its body: the table cannot go with it.
    let source = "fuzz_found/jump_table_sharing_rodata_with_an_array.c";
    check(&Case {
        compilers: &[Compiler::Gcc],
        cflags: &[],
        link_args: &["-no-pie"],
        units: &[
            unit(
                source,
                &["-O2", "-fno-pic", "-ffunction-sections", "-DPART_MAIN"],
                None,
            ),
            unit(
                source,
                &[
                    "-O2",
                    "-fno-pic",
                    "-ffunction-sections",
                    "-fdata-sections",
                    "-DPART_B",
                ],
                None,
            ),
            unit(
                source,
                &["-O2", "-fno-pic", "-ffunction-sections", "-DPART_A"],
                Some("libpick.a"),
            ),
        ],
        ..Case::x86("jump_table_sharing_rodata_with_an_array", &[])
    });
    // A strong definition overriding a weak one keeps the address
    // significance the weak one's references give it.
    let source = "fuzz_found/significance_of_weak_override.c";
    check(&Case {
        compilers: &[Compiler::Gcc],
        linkers: &[Linker::Gold, Linker::Lld],
        link_args: &["-pie", "-Wl,--keep-unique=f15_0"],
        units: &[
            unit(
                source,
                &["-O3", "-fPIE", "-fdata-sections", "-DPART_MAIN"],
                None,
            ),
            unit(
                source,
                &[
                    "-O3",
                    "-fPIE",
                    "-ffunction-sections",
                    "-fdata-sections",
                    "-DPART_U1",
                ],
                None,
            ),
            unit(
                source,
                &[
                    "-O3",
                    "-fPIE",
                    "-ffunction-sections",
                    "-fdata-sections",
                    "-DPART_U2",
                ],
                None,
            ),
        ],
        ..Case::x86("significance_of_weak_override", &[])
    });
}
