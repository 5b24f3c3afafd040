//! `icf link` and `icf-cc` as a build uses them: archives found through
//! `-L`/`-l`, response files, the linker's exit status passed through, the
//! plain link (with a warning) when folding cannot handle an input, and
//! `--strict` turning that into an error. Every linked program is RUN.

use icf_fixtures::{Build, Compiler, Linker};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(name: &str) -> PathBuf {
    let dir = icf_fixtures::source_dir()
        .join("../target/cli-link")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

fn icf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icf"))
        .args(args)
        .output()
        .expect("run icf")
}

/// Fails the test with the command's stderr unless it succeeded.
fn assert_succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn run(binary: &Path) -> String {
    let output = Command::new(binary).output().expect("run linked program");
    assert!(output.status.success(), "{} failed", binary.display());
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `ar rcs DIR/NAME PARTS...`.
fn archive(dir: &Path, name: &str, parts: &[String]) -> PathBuf {
    let archive = dir.join(name);
    let status = Command::new("ar")
        .arg("rcs")
        .arg(&archive)
        .args(parts)
        .status()
        .expect("run ar");
    assert!(status.success(), "ar failed");
    archive
}

fn objects(sources: &[&str], build: &Build) -> Vec<String> {
    sources
        .iter()
        .map(|s| {
            icf_fixtures::object(Path::new(s), build)
                .display()
                .to_string()
        })
        .collect()
}

#[test]
fn folds_archives_found_through_library_flags() {
    let dir = scratch("archive");
    let build = Build::new(Compiler::Gcc);
    let parts = objects(&["e2e/cross_a.c", "e2e/cross_b.c"], &build);
    let main = objects(&["e2e/cross_main.c"], &build).remove(0);
    let archive = archive(&dir, "libcross.a", &parts);
    let before = std::fs::read(&archive).expect("read archive");

    let plain = dir.join("plain");
    let folded = dir.join("folded");
    let dir_arg = format!("-L{}", dir.display());
    let status = Command::new("gcc")
        .args([&main, &dir_arg, "-lcross", "-o"])
        .arg(&plain)
        .status()
        .expect("gcc");
    assert!(status.success());
    let report = dir.join("report.json");
    let output = icf(&[
        "link",
        "--strict",
        "--report",
        report.to_str().expect("utf-8"),
        "--",
        "gcc",
        &main,
        &dir_arg,
        "-lcross",
        "-o",
        folded.to_str().expect("utf-8"),
    ]);
    assert_succeeded(&output);
    assert_eq!(run(&plain), run(&folded));
    assert_eq!(
        std::fs::read(&archive).expect("read archive"),
        before,
        "the input archive was modified"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
    assert!(
        report["totals"]["saved_bytes"].as_u64().expect("saved") > 0,
        "{report}"
    );
}

#[test]
fn response_files_and_the_linkers_exit_status() {
    let dir = scratch("response");
    let build = Build::new(Compiler::Clang);
    let inputs = objects(&["c/fold_cases.c"], &build);
    let response = dir.join("args.rsp");
    let out = dir.join("app");
    std::fs::write(
        &response,
        format!("'{}' -o '{}'\n", inputs[0], out.display()),
    )
    .expect("write response file");
    let output = icf(&[
        "link",
        "--strict",
        "--",
        "clang-19",
        &format!("@{}", response.display()),
    ]);
    assert_succeeded(&output);
    assert!(run(&out).starts_with("fold_cases "));
    // An undefined symbol: the linker fails, and icf link fails with it.
    let broken = icf(&[
        "link",
        "--",
        "gcc",
        &objects(&["e2e/cross_main.c"], &build)[0],
        "-o",
    ]);
    assert!(!broken.status.success());
}

#[test]
fn verbose_links_say_how_long_each_phase_took() {
    let dir = scratch("verbose");
    let build = Build::new(Compiler::Gcc);
    let inputs = objects(&["c/fold_cases.c"], &build);
    let out = dir.join("app");
    let out = out.to_str().expect("utf-8 path");
    let quiet = icf(&["link", "--strict", "--", "gcc", &inputs[0], "-o", out]);
    assert!(quiet.status.success());
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("icf: time:"));
    // Without the cache: a relink of unchanged inputs would replay the
    // quiet link's result instead of folding (see `cache.rs`).
    let verbose = icf(&[
        "-v",
        "link",
        "--strict",
        "--no-cache",
        "--",
        "gcc",
        &inputs[0],
        "-o",
        out,
    ]);
    let stderr = String::from_utf8_lossy(&verbose.stderr);
    assert!(verbose.status.success(), "{stderr}");
    let phases = "icf: time: load ";
    let line = stderr
        .lines()
        .find(|l| l.starts_with(phases))
        .unwrap_or_else(|| panic!("no phase timings in {stderr}"));
    for phase in ["lift", "partition", "plan", "fold and write"] {
        assert!(
            line.contains(&format!(", {phase} ")),
            "{phase} missing: {line}"
        );
    }
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("icf: time: link ") && l.ends_with(" ms"))
    );
    assert!(run(Path::new(out)).starts_with("fold_cases "));
}

#[test]
fn an_lto_link_icf_cannot_fold_links_plainly_unless_strict() {
    let dir = scratch("fallback");
    // clang's -flto objects are LLVM bitcode: icf folds the image linked
    // with --emit-relocs, which lld refuses together with `-s`.
    let source = icf_fixtures::source_dir().join("c/fold_cases.c");
    let bitcode = dir.join("lto.o");
    let status = Command::new("clang-19")
        .args(["-O2", "-flto", "-c"])
        .arg(&source)
        .arg("-o")
        .arg(&bitcode)
        .status()
        .expect("clang");
    assert!(status.success());
    let app = dir.join("app");
    let command = [
        "--",
        "clang-19",
        "-flto",
        "-fuse-ld=lld",
        "-Wl,-s",
        bitcode.to_str().expect("utf-8"),
        "-o",
        app.to_str().expect("utf-8"),
    ];
    let output = icf(&[&["link"][..], &command[..]].concat());
    assert_succeeded(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("icf: warning: linking without folding")
            && stderr.contains("--emit-relocs")
            && stderr.lines().all(|line| line.starts_with("icf: ")),
        "{stderr}"
    );
    assert!(run(&app).starts_with("fold_cases "));
    // Nothing is left beside the output.
    let left = left_behind(&dir, "icf-linked");
    assert!(left.is_empty(), "{left:?}");
    let strict = icf(&[&["link", "--strict"][..], &command[..]].concat());
    assert_eq!(strict.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&strict.stderr).contains("--emit-relocs"));
}

/// The names in `dir` that contain `marker` (files icf writes beside an
/// output and must not leave behind).
fn left_behind(dir: &Path, marker: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("list the scratch directory")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(marker))
        .collect()
}

/// Two exported twins compiled for macOS (x86_64) under `dir`, and the
/// `ld64.lld-19` command linking them into `dir/libtwins.dylib` with
/// `extra` flags (after `--`, as `icf link` takes it); and the library's path.
fn mach_o_twins(dir: &Path, extra: &[&str]) -> (Vec<String>, PathBuf) {
    mach_o_twins_compiled(dir, &[], extra)
}

/// [`mach_o_twins`], compiled with `cflags` too.
fn mach_o_twins_compiled(dir: &Path, cflags: &[&str], extra: &[&str]) -> (Vec<String>, PathBuf) {
    let source = dir.join("twins.c");
    std::fs::write(
        &source,
        "int f(int x) { return x * 3; }\nint g(int x) { return x * 3; }\n",
    )
    .expect("write source");
    let object = dir.join("twins.o");
    let status = Command::new("clang-19")
        .args(["--target=x86_64-apple-macos11", "-O2", "-c"])
        .args(cflags)
        .arg(&source)
        .arg("-o")
        .arg(&object)
        .status()
        .expect("clang");
    assert!(status.success());
    let library = dir.join("libtwins.dylib");
    let mut command: Vec<String> = [
        "--",
        "ld64.lld-19",
        "-arch",
        "x86_64",
        "-platform_version",
        "macos",
        "11.0",
        "11.0",
        "-dylib",
        "-undefined",
        "dynamic_lookup",
    ]
    .iter()
    .chain(extra)
    .map(|word| word.to_string())
    .collect();
    command.extend([
        object.display().to_string(),
        "-o".to_string(),
        library.display().to_string(),
    ]);
    (command, library)
}

#[test]
/// A Mach-O dylib link folds (it used to be refused by name): both twins
/// are exported, so safe mode keeps their addresses apart with a thunk, and
/// without -dead_strip icf says the folded body stays in the file.
fn a_mach_o_dylib_link_folds_and_warns_without_dead_strip() {
    let dir = scratch("mach-o");
    let (command, library) = mach_o_twins(&dir, &[]);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let output = icf(&[&["link", "--strict"][..], &command[..]].concat());
    assert_succeeded(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "icf: warning: the link has no -dead_strip: the 1 folded copy (4 bytes) stays"
        ),
        "{stderr}"
    );
    let nm = Command::new("llvm-objdump-19")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&library)
        .output()
        .expect("llvm-objdump-19");
    let disassembly = String::from_utf8_lossy(&nm.stdout);
    // One twin is now a jump to the other.
    assert!(disassembly.contains("jmp"), "{disassembly}");
}

#[test]
fn relocatable_links_pass_through() {
    let dir = scratch("relocatable");
    let inputs = objects(
        &["e2e/cross_a.c", "e2e/cross_b.c"],
        &Build::new(Compiler::Gcc),
    );
    let out = dir.join("combined.o");
    let output = icf(&[
        "link",
        "--strict",
        "--",
        "ld",
        "-r",
        &inputs[0],
        &inputs[1],
        "-o",
        out.to_str().expect("utf-8"),
    ]);
    assert_succeeded(&output);
    assert!(out.is_file());
}

#[test]
fn comdat_instances_the_linker_discards_are_never_kept() {
    // The archive lists instance_frame.o first; the link loads instance_split.o
    // first (main needs it) and keeps its COMDAT instances, discarding frame's.
    for compiler in [Compiler::Gcc, Compiler::Clang] {
        let dir = scratch(&format!("instances-{compiler:?}"));
        let build = Build::new(compiler);
        let parts = objects(
            &["e2e/instance_frame.cpp", "e2e/instance_split.cpp"],
            &build,
        );
        let main = objects(&["e2e/instance_main.cpp"], &build).remove(0);
        let archive = archive(&dir, "libinstances.a", &parts);
        let driver = if compiler == Compiler::Gcc {
            "g++"
        } else {
            "clang++-19"
        };
        let plain = dir.join("plain");
        let status = Command::new(driver)
            .arg(&main)
            .arg(&archive)
            .arg("-o")
            .arg(&plain)
            .status()
            .expect("link plainly");
        assert!(status.success());
        let expected = run(&plain);
        for choice in Linker::ALL {
            let linker = choice.name();
            let [use_linker, lld_dir] = choice.driver_flags(driver);
            for mode in ["safe", "all"] {
                let folded = dir.join(format!("folded-{linker}-{mode}"));
                let output = icf(&[
                    "link",
                    "--strict",
                    "--mode",
                    mode,
                    "--",
                    driver,
                    &use_linker,
                    &lld_dir,
                    &main,
                    archive.to_str().expect("utf-8"),
                    "-o",
                    folded.to_str().expect("utf-8"),
                ]);
                assert!(
                    output.status.success(),
                    "{compiler:?} {linker} {mode}: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
                assert_eq!(run(&folded), expected, "{compiler:?} {linker} {mode}");
            }
        }
    }
}

/// The C or C++ driver of `compiler`.
#[test]
fn with_verify_a_fold_that_does_not_prove_links_plainly() {
    // `c/identical.c` compares sub0's and sub1's addresses: in mode safe,
    // making sub1 an alias of sub0 is a wrong fold (planted on purpose).
    let dir = scratch("verify");
    let inputs = objects(&["c/identical.c"], &Build::new(Compiler::Gcc));
    let link = |name: &str, extra: &[&str]| {
        let out = dir.join(name);
        let mut args = vec!["link"];
        args.extend(extra);
        args.extend(["--", "gcc", "-fuse-ld=bfd"]);
        args.extend(inputs.iter().map(String::as_str));
        args.extend(["-o", out.to_str().expect("utf-8")]);
        (icf(&args), out)
    };
    let (plain_link, plain) = link(
        "plain",
        &[
            "--mode",
            "safe",
            "--keep-unique",
            "sub0",
            "--keep-unique",
            "sub1",
        ],
    );
    assert_succeeded(&plain_link);
    let expected = run(&plain);
    assert!(expected.contains("fnaddr same-address 0"), "{expected}");
    // The planted fold without --verify: written, and it behaves otherwise.
    let (output, wrong) = link("wrong", &["--plant-fold", "alias:sub0=sub1"]);
    assert_succeeded(&output);
    assert_ne!(run(&wrong), expected, "the planted fold changes nothing");
    // With --verify: the plain link takes its place, with a warning.
    let (output, fell_back) = link(
        "fell-back",
        &["--verify", "--plant-fold", "alias:sub0=sub1"],
    );
    assert_succeeded(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("icf: warning: linking without folding")
            && stderr.contains("does not verify"),
        "{stderr}"
    );
    assert_eq!(run(&fell_back), expected);
    // With --strict too: an error, and still no wrong output.
    let (output, strict) = link(
        "strict",
        &["--verify", "--strict", "--plant-fold", "alias:sub0=sub1"],
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(run(&strict), expected);
    // A correct fold proves and stays; no plain copy is left beside it.
    let (output, proved) = link("proved", &["--verify"]);
    assert_succeeded(&output);
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(run(&proved), expected);
    // Nor the two links' maps it had written for verify.
    for kind in ["icf-plain", "icf-folded"] {
        let left = left_behind(&dir, kind);
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

fn driver(compiler: Compiler, cxx: bool) -> &'static str {
    match (compiler, cxx) {
        (Compiler::Gcc, false) => "gcc",
        (Compiler::Gcc, true) => "g++",
        (Compiler::Clang, false) => "clang-19",
        (Compiler::Clang, true) => "clang++-19",
    }
}

/// Links `args` with `driver` and each of GNU ld, gold, lld and mold, once
/// plainly and once through `icf link --strict --report`, runs both and
/// checks they print the same. Returns, per linker, its name, the plain
/// program's output, the folded program and the report.
fn link_with_every_linker(
    dir: &Path,
    driver: &str,
    args: &[String],
) -> Vec<(&'static str, String, PathBuf, String)> {
    let mut linked = Vec::new();
    for choice in Linker::ALL {
        let linker = choice.name();
        let use_linker = choice.driver_flags(driver);
        let plain = dir.join(format!("plain-{linker}"));
        let status = Command::new(driver)
            .args(&use_linker)
            .args(args)
            .arg("-o")
            .arg(&plain)
            .status()
            .expect("link plainly");
        assert!(status.success(), "{driver} {linker}: the plain link failed");
        let expected = run(&plain);
        let folded = dir.join(format!("folded-{linker}"));
        let report = dir.join(format!("report-{linker}.json"));
        let mut command = vec!["link", "--strict", "--report"];
        command.push(report.to_str().expect("utf-8"));
        command.extend(["--", driver]);
        command.extend(use_linker.iter().map(String::as_str));
        command.extend(args.iter().map(String::as_str));
        command.extend(["-o", folded.to_str().expect("utf-8")]);
        let output = icf(&command);
        assert!(
            output.status.success(),
            "{driver} {linker}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(run(&folded), expected, "{driver} {linker}");
        let report = std::fs::read_to_string(&report).expect("read the report");
        linked.push((linker, expected, folded, report));
    }
    linked
}

#[test]
fn comdat_instances_that_differ_fold_through_archives_without_loading_more() {
    // libodr.a: odr_other.o (-O0, linked first: its mix<3> is kept),
    // odr_fast.o (-O2), odr_slow.o (-O0) and odr_unused.o (-O0, never
    // needed). mix<2> and mix<3> become thunks to mix<1>'s hidden alias; only
    // loaded members define it, so odr_unused.o must stay out of the link.
    for compiler in [Compiler::Gcc, Compiler::Clang] {
        let dir = scratch(&format!("odr-{compiler:?}"));
        let fast = Build::new(compiler);
        let slow = Build {
            extra_flags: vec!["-O0".to_string()],
            ..Build::new(compiler)
        };
        let mut parts = objects(&["e2e/odr_other.cpp"], &slow);
        parts.extend(objects(&["e2e/odr_fast.cpp"], &fast));
        parts.extend(objects(&["e2e/odr_slow.cpp", "e2e/odr_unused.cpp"], &slow));
        let main = objects(&["e2e/odr_main.cpp"], &fast).remove(0);
        let archive = archive(&dir, "libodr.a", &parts);
        let args = [main, archive.display().to_string()];
        for (linker, _, folded, report) in
            link_with_every_linker(&dir, driver(compiler, true), &args)
        {
            assert!(
                report.contains("whichever instance of the kept function"),
                "{compiler:?} {linker}: no thunk through an identity"
            );
            let symbols = Command::new("nm").arg(&folded).output().expect("nm");
            assert!(
                !String::from_utf8_lossy(&symbols.stdout).contains("_Z6unusedl"),
                "{compiler:?} {linker}: the link loaded odr_unused.o"
            );
        }
    }
}

#[test]
fn gc_sections_links_fold_what_the_link_keeps_and_skip_the_rest() {
    for compiler in [Compiler::Gcc, Compiler::Clang] {
        let dir = scratch(&format!("gc-{compiler:?}"));
        let mut args = objects(&["e2e/gc_main.c"], &Build::new(compiler));
        args.push("-Wl,--gc-sections".to_string());
        for (linker, _, _, report) in link_with_every_linker(&dir, driver(compiler, false), &args) {
            for folded_pair in ["live_a", "live_b", "ctor_a", "ctor_b"] {
                assert!(
                    report.contains(&format!("\"{folded_pair}\"")),
                    "{compiler:?} {linker}: {folded_pair} did not fold"
                );
            }
            assert!(
                !report.contains("dead_a"),
                "{compiler:?} {linker}: the dropped dead_a was lifted"
            );
        }
    }
}

#[test]
fn code_taken_for_dead_still_keeps_the_addresses_it_compares() {
    for compiler in [Compiler::Gcc, Compiler::Clang] {
        let dir = scratch(&format!("gc-dlsym-{compiler:?}"));
        let mut args = objects(&["e2e/gc_dlsym.c", "e2e/gc_twins.c"], &Build::new(compiler));
        args.extend(
            [
                "-Wl,--gc-sections",
                "-Wl,--export-dynamic-symbol=same_twins",
                "-ldl",
            ]
            .map(String::from),
        );
        for (linker, expected, _, _) in link_with_every_linker(&dir, driver(compiler, false), &args)
        {
            // The folded output equals this: twin_a and twin_b stay apart.
            assert!(
                expected.ends_with(" 0\n"),
                "{compiler:?} {linker}: same_twins is not reached: {expected}"
            );
        }
    }
}

#[test]
fn archive_members_sharing_a_name_are_each_rewritten_as_themselves() {
    let dir = scratch("duplicate-members");
    let build = Build::new(Compiler::Gcc);
    let parts = objects(&["e2e/cross_a.c", "e2e/cross_b.c"], &build);
    let main = objects(&["e2e/cross_main.c"], &build).remove(0);
    // `ar q` appends: both members are called part.o.
    let archive = dir.join("libdup.a");
    for (index, part) in parts.iter().enumerate() {
        let sub = dir.join(format!("d{index}"));
        std::fs::create_dir_all(&sub).expect("create dir");
        std::fs::copy(part, sub.join("part.o")).expect("copy object");
        let status = Command::new("ar")
            .arg("q")
            .arg(&archive)
            .arg(sub.join("part.o"))
            .status()
            .expect("run ar");
        assert!(status.success(), "ar failed");
    }
    let plain = dir.join("plain");
    let folded = dir.join("folded");
    let link = |output: &Path| {
        vec![
            "gcc".to_string(),
            main.clone(),
            archive.display().to_string(),
            "-o".to_string(),
            output.display().to_string(),
        ]
    };
    let status = Command::new("gcc")
        .args(&link(&plain)[1..])
        .status()
        .expect("gcc");
    assert!(status.success());
    let report = dir.join("report.json");
    let mut args = vec![
        "link".to_string(),
        "--strict".to_string(),
        "--report".to_string(),
        report.display().to_string(),
        "--".to_string(),
    ];
    args.extend(link(&folded));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = icf(&args);
    assert_succeeded(&output);
    assert_eq!(run(&plain), run(&folded));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
    assert!(
        report["totals"]["saved_bytes"].as_u64().expect("saved") > 0,
        "{report}"
    );
}

/// The members of every archive a link command names, as `ar t` lists them,
/// recorded by a driver script that then runs gcc.
fn recording_driver(dir: &Path) -> (PathBuf, PathBuf) {
    let log = dir.join("members.log");
    let driver = dir.join("recording-cc");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.a) echo \"$(ar t \"$a\" | tr '\\n' ' ')\" >> '{}';; esac; done\nexec gcc \"$@\"\n",
        log.display()
    );
    std::fs::write(&driver, script).expect("write the driver script");
    let status = Command::new("chmod")
        .arg("+x")
        .arg(&driver)
        .status()
        .expect("chmod");
    assert!(status.success());
    (driver, log)
}

#[test]
fn link_inputs_leave_out_members_no_link_can_extract() {
    let dir = scratch("unextractable");
    let build = Build::new(Compiler::Gcc);
    let parts = objects(&["e2e/cross_a.c", "e2e/cross_b.c"], &build);
    let main = objects(&["e2e/cross_main.c"], &build).remove(0);
    // An object that defines no global symbol (as rustc's lib.rmeta), and a
    // member that is not an object at all.
    let source = dir.join("meta.c");
    std::fs::write(&source, "static int meta(int x) { return x * 3; }\n").expect("write");
    let meta = dir.join("meta.o");
    let status = Command::new("gcc")
        .args(["-c", "-o"])
        .arg(&meta)
        .arg(&source)
        .status()
        .expect("gcc");
    assert!(status.success());
    // rustc's metadata member, which icf skips by its name without reading
    // it: an object too, defining no global symbol.
    let rmeta = dir.join("lib.rmeta");
    std::fs::copy(&meta, &rmeta).expect("copy");
    // GNU ld rejects a member that is not an object inside --whole-archive.
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "not an object\n").expect("write");
    let mut members = parts.clone();
    members.push(meta.display().to_string());
    members.push(rmeta.display().to_string());
    let whole = archive(&dir, "libwhole.a", &members);
    members.push(notes.display().to_string());
    let lazy = archive(&dir, "libcross.a", &members);
    let (driver, log) = recording_driver(&dir);

    let plain = dir.join("plain");
    let status = Command::new("gcc")
        .arg(&main)
        .arg(&lazy)
        .arg("-o")
        .arg(&plain)
        .status()
        .expect("gcc");
    assert!(status.success());
    let expected = run(&plain);
    for whole_archive in [false, true] {
        let archive = if whole_archive { &whole } else { &lazy };
        let _ = std::fs::remove_file(&log);
        let folded = dir.join(format!("folded-{whole_archive}"));
        let mut command = vec![
            "link".to_string(),
            "--strict".to_string(),
            "--".to_string(),
            driver.display().to_string(),
            main.clone(),
        ];
        if whole_archive {
            command.push("-Wl,--whole-archive".to_string());
        }
        command.push(archive.display().to_string());
        if whole_archive {
            command.push("-Wl,--no-whole-archive".to_string());
        }
        command.extend(["-o".to_string(), folded.display().to_string()]);
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        let output = icf(&args);
        assert_succeeded(&output);
        assert_eq!(run(&folded), expected, "whole archive: {whole_archive}");
        let listed = std::fs::read_to_string(&log).expect("the driver saw an archive");
        assert!(
            listed.contains("cross_a-") && listed.contains("cross_b-"),
            "{listed}"
        );
        assert_eq!(
            listed.contains("notes.txt"),
            !whole_archive,
            "non-objects are kept: {listed}"
        );
        assert_eq!(
            listed.contains("meta.o"),
            whole_archive,
            "meta.o is left out exactly outside --whole-archive: {listed}"
        );
        assert_eq!(
            listed.contains("lib.rmeta"),
            whole_archive,
            "lib.rmeta is left out exactly outside --whole-archive: {listed}"
        );
    }

    // `icf fold` writes copies that stand in anywhere: every member stays.
    let out_dir = dir.join("fold");
    let output = icf(&[
        "fold",
        "--out-dir",
        out_dir.to_str().expect("utf-8"),
        &main,
        lazy.to_str().expect("utf-8"),
    ]);
    assert_succeeded(&output);
    let listed = Command::new("ar")
        .arg("t")
        .arg(out_dir.join("libcross.a"))
        .output()
        .expect("ar t");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("meta.o") && listed.contains("lib.rmeta") && listed.contains("notes.txt"),
        "{listed}"
    );
}

#[test]
fn failures_before_folding_run_the_command_as_it_was() {
    let dir = scratch("setup");
    let build = Build::new(Compiler::Gcc);
    let main = objects(&["c/fold_cases.c"], &build).remove(0);
    let app = dir.join("app");
    // No room for the rewritten copies: without a cache they go to
    // TMPDIR, which names a file.
    let not_a_directory = dir.join("tmpfile");
    std::fs::write(&not_a_directory, "").expect("write");
    let command = ["--", "gcc", &main, "-o", app.to_str().expect("utf-8")];
    let no_room = |strict: bool| {
        let mut args = vec!["link", "--no-cache"];
        if strict {
            args.push("--strict");
        }
        args.extend(command);
        Command::new(env!("CARGO_BIN_EXE_icf"))
            .args(&args)
            .env("TMPDIR", &not_a_directory)
            .output()
            .expect("run icf")
    };
    let output = no_room(false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("icf: warning: linking without folding: creating"),
        "{stderr}"
    );
    assert!(run(&app).starts_with("fold_cases "));
    let strict = no_room(true);
    assert_eq!(strict.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&strict.stderr).contains("icf: error: creating"));

    // A cache directory icf cannot make: it folds without the cache, its
    // copies in TMPDIR.
    let uncached = Command::new(env!("CARGO_BIN_EXE_icf"))
        .args(["link", "--strict"])
        .args(command)
        .env("ICF_CACHE_DIR", &not_a_directory)
        .output()
        .expect("run icf");
    assert!(
        uncached.status.success(),
        "{}",
        String::from_utf8_lossy(&uncached.stderr)
    );
    assert!(run(&app).starts_with("fold_cases "));

    // A response file icf cannot read: the driver gets it as it was and
    // says what is wrong with it, with its own exit status.
    let missing = dir.join("missing.rsp");
    let argument = format!("@{}", missing.display());
    let output = icf(&["link", "--", "gcc", &argument, "-o", "app2"]);
    let plain = Command::new("gcc")
        .args([&argument, "-o", "app2"])
        .output()
        .expect("gcc");
    assert!(!plain.status.success());
    assert_eq!(output.status.code(), plain.status.code());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("missing.rsp") && !stderr.contains("icf: error"),
        "{stderr}"
    );
}

/// A Mach-O link of LLVM bitcode (`-flto`, in the wrapper Darwin's clang
/// writes): `icf link` says why nothing folds, an error with `--strict`
/// and a warning before the plain link without it (ld64.lld links the
/// bitcode itself).
#[test]
fn a_mach_o_link_of_bitcode_says_why_nothing_folds() {
    let dir = scratch("mach-o-bitcode");
    let (command, library) = mach_o_twins_compiled(&dir, &["-flto"], &[]);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let strict = icf(&[&["link", "--strict"][..], &command[..]].concat());
    assert_eq!(strict.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert!(
        stderr.contains("twins.o: LLVM bitcode (LTO) cannot be folded"),
        "{stderr}"
    );
    let plain = icf(&[&["link"][..], &command[..]].concat());
    assert_succeeded(&plain);
    let stderr = String::from_utf8_lossy(&plain.stderr);
    assert!(
        stderr.contains("warning: linking without folding: ") && stderr.contains("LLVM bitcode"),
        "{stderr}"
    );
    assert!(library.exists());
}

/// `--after-link` on a Mach-O link keeps the usual path (`icf shrink`
/// reads ELF images only): the inputs fold, and the link is not made
/// with `--emit-relocs` (which ld64.lld does not take) first.
#[test]
fn after_link_on_a_mach_o_link_folds_the_inputs() {
    let dir = scratch("mach-o-after-link");
    let (command, library) = mach_o_twins(&dir, &["-dead_strip"]);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let output = icf(&[&["link", "--strict", "--after-link"][..], &command[..]].concat());
    assert_succeeded(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("emit-relocs"), "{stderr}");
    let disassembly = Command::new("llvm-objdump-19")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&library)
        .output()
        .expect("llvm-objdump-19");
    // One twin is now a jump to the other.
    assert!(
        String::from_utf8_lossy(&disassembly.stdout).contains("jmp"),
        "{}",
        String::from_utf8_lossy(&disassembly.stdout)
    );
}
