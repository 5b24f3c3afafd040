//! `icf link` on LTO builds, whose inputs hold no machine code: it links
//! with `--emit-relocs` added and folds the linked image (`icf shrink`),
//! then drops the relocations the command did not ask for.
//!
//! `fixtures/lto/shapes_*.cpp` (template instances over types of one
//! layout, reached through pointers, and exceptions) is compiled with LTO
//! by each toolchain: clang-19 ThinLTO and full LTO linked by lld, g++
//! `-flto` linked by GNU ld, gold and mold, g++ for AArch64 by GNU ld (run
//! under `qemu-aarch64`). For each, in mode safe and all:
//!
//! 1. `icf link --strict --mode M -- LINK` succeeds without a warning;
//! 2. its output prints what the plain LTO link's prints;
//! 3. `icf verify --mode M PLAIN OUT` proves it;
//! 4. its `.text` is no larger than the plain link's, strictly smaller for
//!    clang's ThinLTO (whose code generation keeps the twins apart), and in
//!    mode all no larger than a peer's `--icf=all` on the same objects
//!    (lld for clang, gold for g++);
//! 5. it keeps no relocations the command did not ask for (`.rela.text`
//!    empty), nor the symbols a link writes only for them (section
//!    symbols and `.L` labels the plain link does not have), and keeps
//!    them when the command asks (`-Wl,-q`);
//! 6. `--report` writes a JSON report naming the output, which says
//!    functions fold exactly when `.text` got smaller.
//!
//! Also a Rust program built with `-C linker-plugin-lto` and linked through
//! `icf-cc` by the `rust-lld` rustc ships (its LLVM reads rustc's bitcode),
//! alone and with C compiled by clang-19 to ThinLTO bitcode beside it: it
//! runs as the plain build, verifies, and its `.text` is smaller. And
//! `--after-link` (with `--verify`) on objects compiled without
//! `-ffunction-sections` folds more than the usual path can.

use icf_fixtures::Arch;
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MODES: [&str; 2] = ["safe", "all"];
const SOURCES: [&str; 3] = [
    "lto/shapes_a.cpp",
    "lto/shapes_b.cpp",
    "lto/shapes_main.cpp",
];

/// One LTO toolchain.
struct Toolchain {
    name: &'static str,
    arch: Arch,
    /// The compiler and its flags (`-c SOURCE -o OBJECT` follow).
    compile: &'static [&'static str],
    /// The link command's program and flags (objects and `-o OUT` follow).
    link: &'static [&'static str],
    /// A peer's link with `--icf=all` on the same objects.
    peer: Option<&'static [&'static str]>,
    /// Its code generation keeps the twins apart: icf must fold some.
    must_fold: bool,
}

const TOOLCHAINS: [Toolchain; 6] = [
    Toolchain {
        name: "clang-thinlto-lld",
        arch: Arch::X86_64,
        compile: &["clang++-19", "-O2", "-flto=thin"],
        link: &["clang++-19", "-flto=thin", "-fuse-ld=lld"],
        peer: Some(&["clang++-19", "-flto=thin", "-fuse-ld=lld", "-Wl,--icf=all"]),
        must_fold: true,
    },
    Toolchain {
        name: "clang-fulllto-lld",
        arch: Arch::X86_64,
        compile: &["clang++-19", "-O2", "-flto"],
        link: &["clang++-19", "-flto", "-fuse-ld=lld"],
        peer: Some(&["clang++-19", "-flto", "-fuse-ld=lld", "-Wl,--icf=all"]),
        must_fold: false,
    },
    Toolchain {
        name: "gcc-lto-bfd",
        arch: Arch::X86_64,
        compile: &["g++", "-O2", "-flto"],
        link: &["g++", "-O2", "-flto", "-fuse-ld=bfd"],
        peer: Some(&["g++", "-O2", "-flto", "-fuse-ld=gold", "-Wl,--icf=all"]),
        must_fold: false,
    },
    Toolchain {
        name: "gcc-lto-gold",
        arch: Arch::X86_64,
        compile: &["g++", "-O2", "-flto"],
        link: &["g++", "-O2", "-flto", "-fuse-ld=gold"],
        peer: Some(&["g++", "-O2", "-flto", "-fuse-ld=gold", "-Wl,--icf=all"]),
        must_fold: false,
    },
    Toolchain {
        name: "gcc-lto-mold",
        arch: Arch::X86_64,
        compile: &["g++", "-O2", "-flto"],
        link: &["g++", "-O2", "-flto", "-fuse-ld=mold"],
        peer: Some(&["g++", "-O2", "-flto", "-fuse-ld=gold", "-Wl,--icf=all"]),
        must_fold: false,
    },
    Toolchain {
        name: "gcc-lto-bfd-aarch64",
        arch: Arch::Aarch64,
        compile: &["aarch64-linux-gnu-g++", "-O2", "-flto"],
        link: &["aarch64-linux-gnu-g++", "-O2", "-flto"],
        peer: None,
        must_fold: false,
    },
];

fn scratch(name: &str) -> PathBuf {
    let dir = icf_fixtures::source_dir().join("../target/lto").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

fn succeed(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn command(words: &[&str]) -> Command {
    let (program, args) = words.split_first().expect("a program");
    let mut command = Command::new(program);
    command.args(args);
    command
}

fn icf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_icf"))
}

/// A section's size in `binary`, 0 when it has none.
fn section_size(binary: &Path, name: &str) -> u64 {
    let data = std::fs::read(binary).unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let file = object::File::parse(&*data).unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    file.section_by_name(name).map_or(0, |s| s.size())
}

/// The section symbols and `.L` labels of `binary`'s `.symtab`: what a
/// link writes for the relocations it keeps.
fn relocation_symbols(binary: &Path) -> std::collections::BTreeSet<String> {
    let data = std::fs::read(binary).unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let file = object::File::parse(&*data).unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    file.symbols()
        .filter_map(|symbol| {
            let name = symbol.name().unwrap_or_default();
            let section = symbol.kind() == object::SymbolKind::Section;
            (symbol.is_local() && (section || name.starts_with(".L"))).then(|| {
                let place = symbol
                    .section_index()
                    .and_then(|index| file.section_by_index(index).ok())
                    .and_then(|section| section.name().ok().map(str::to_owned))
                    .unwrap_or_default();
                format!("{name} in {place}")
            })
        })
        .collect()
}

fn run(arch: Arch, binary: &Path) -> String {
    let output = succeed(&mut icf_fixtures::run_command(arch, binary));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn verify(mode: &str, plain: &Path, folded: &Path) {
    let output = icf()
        .args(["verify", "--mode", mode])
        .args([plain, folded])
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

fn check(toolchain: &Toolchain) {
    let dir = scratch(toolchain.name);
    let objects: Vec<PathBuf> = SOURCES
        .iter()
        .map(|source| {
            let object = dir.join(
                Path::new(source)
                    .with_extension("o")
                    .file_name()
                    .expect("a file name"),
            );
            succeed(
                command(toolchain.compile)
                    .arg("-c")
                    .arg(icf_fixtures::source_dir().join(source))
                    .arg("-o")
                    .arg(&object),
            );
            object
        })
        .collect();
    let link = |extra: &[&str], output: &Path| -> Vec<String> {
        toolchain
            .link
            .iter()
            .map(|word| word.to_string())
            .chain(objects.iter().map(|o| o.display().to_string()))
            .chain(extra.iter().map(|word| word.to_string()))
            .chain(["-o".to_string(), output.display().to_string()])
            .collect()
    };
    let plain = dir.join("plain");
    let words = link(&[], &plain);
    succeed(&mut command(
        &words.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let expected = run(toolchain.arch, &plain);
    assert!(
        !expected.is_empty(),
        "{}: the plain build prints nothing",
        toolchain.name
    );
    let peer_text = toolchain.peer.map(|peer| {
        let path = dir.join("peer");
        succeed(command(peer).args(&objects).arg("-o").arg(&path));
        assert_eq!(
            run(toolchain.arch, &path),
            expected,
            "{}: the peer's build",
            toolchain.name
        );
        section_size(&path, ".text")
    });
    let plain_text = section_size(&plain, ".text");
    let plain_symbols = relocation_symbols(&plain);
    for mode in MODES {
        let context = format!("{} {mode}", toolchain.name);
        let output = dir.join(format!("icf-{mode}"));
        let report = dir.join(format!("report-{mode}.json"));
        let linked = succeed(
            icf()
                .args(["link", "--strict", "--mode", mode, "--report"])
                .arg(&report)
                .arg("--")
                .args(link(&[], &output)),
        );
        let json: serde_json::Value = serde_json::from_slice(
            &std::fs::read(&report).unwrap_or_else(|e| panic!("{context}: the report: {e}")),
        )
        .unwrap_or_else(|e| panic!("{context}: the report is no JSON: {e}"));
        assert_eq!(
            json["inputs"],
            serde_json::json!([output.display().to_string()]),
            "{context}: the report names the output"
        );
        let folded = json["totals"]["aliases"].as_u64().unwrap_or(0)
            + json["totals"]["thunks"].as_u64().unwrap_or(0);
        let stderr = String::from_utf8_lossy(&linked.stderr);
        assert!(!stderr.contains("warning"), "{context}: {stderr}");
        assert_eq!(
            run(toolchain.arch, &output),
            expected,
            "{context}: OUT prints otherwise"
        );
        verify(mode, &plain, &output);
        let text = section_size(&output, ".text");
        assert!(
            text <= plain_text,
            "{context}: .text {text} > the plain link's {plain_text}"
        );
        if toolchain.must_fold {
            assert!(
                text < plain_text,
                "{context}: nothing folded ({text} bytes of .text)"
            );
        }
        assert_eq!(
            folded > 0,
            text < plain_text,
            "{context}: the report says {folded} functions fold, and .text went {plain_text} -> {text}"
        );
        if let Some(peer_text) = peer_text
            && mode == "all"
        {
            assert!(
                text <= peer_text,
                "{context}: .text {text} > the peer's --icf=all {peer_text}"
            );
        }
        assert_eq!(
            section_size(&output, ".rela.text"),
            0,
            "{context}: OUT keeps relocations the command did not ask for"
        );
        let extra: Vec<String> = relocation_symbols(&output)
            .difference(&plain_symbols)
            .cloned()
            .collect();
        assert!(
            extra.is_empty(),
            "{context}: OUT keeps symbols written only for the relocations it dropped: {extra:?}"
        );
        eprintln!("{context}: .text plain {plain_text}, peer {peer_text:?}, icf {text}");
    }
    // Asked for, the relocations stay (rewritten for the folded image).
    let kept = dir.join("icf-q");
    succeed(
        icf()
            .args(["link", "--strict", "--"])
            .args(link(&["-Wl,-q"], &kept)),
    );
    assert!(
        section_size(&kept, ".rela.text") > 0,
        "{}: -Wl,-q asked for the relocations, and OUT has none",
        toolchain.name
    );
    assert!(
        relocation_symbols(&kept).len() > plain_symbols.len(),
        "{}: -Wl,-q asked for the relocations, and OUT dropped their symbols",
        toolchain.name
    );
    assert_eq!(
        run(toolchain.arch, &kept),
        expected,
        "{}: -q",
        toolchain.name
    );
}

#[test]
fn clang_thinlto_with_lld() {
    check(&TOOLCHAINS[0]);
}

#[test]
fn clang_full_lto_with_lld() {
    check(&TOOLCHAINS[1]);
}

#[test]
fn gcc_lto_with_gnu_ld() {
    check(&TOOLCHAINS[2]);
}

#[test]
fn gcc_lto_with_gold() {
    check(&TOOLCHAINS[3]);
}

#[test]
fn gcc_lto_with_mold() {
    check(&TOOLCHAINS[4]);
}

#[test]
fn gcc_lto_for_aarch64_with_gnu_ld() {
    check(&TOOLCHAINS[5]);
}

/// rustc's `-C linker-plugin-lto` through `icf-cc`, linked by the
/// `rust-lld` rustc ships (rustc's default linker here).
#[test]
fn rust_linker_plugin_lto_through_icf_cc() {
    let _ = rust_linker_plugin_lto("rust-linker-plugin-lto", "shrink/backtrace.rs", &[]);
}

/// The same with C beside the Rust: `twins.c` compiled by clang-19 to
/// ThinLTO bitcode (rustc's newer LLVM reads it) and linked into the
/// program, so code generation covers both languages in one link.
#[test]
fn rust_and_c_linker_plugin_lto_through_icf_cc() {
    // Its own directory: the build's is made afresh.
    let object = scratch("rust-and-c-bitcode").join("twins.o");
    succeed(
        command(&["clang-19", "-O2", "-flto=thin", "-c"])
            .arg(icf_fixtures::source_dir().join("lto/twins.c"))
            .arg("-o")
            .arg(&object),
    );
    let (plain, folded) = rust_linker_plugin_lto(
        "rust-and-c-linker-plugin-lto",
        "lto/mixed.rs",
        &[format!("link-arg={}", object.display())],
    );
    // The C twins, generated apart in the link, fold after it.
    let address = |binary: &Path, name: &str| {
        let data = std::fs::read(binary).expect("the program");
        let file = object::File::parse(&*data).expect("an ELF file");
        file.symbols()
            .find(|symbol| symbol.name() == Ok(name))
            .map(|symbol| symbol.address())
            .unwrap_or_else(|| panic!("{}: no {name}", binary.display()))
    };
    assert_ne!(address(&plain, "sum_a"), address(&plain, "sum_b"));
    assert_eq!(address(&folded, "sum_a"), address(&folded, "sum_b"));
}

/// Builds `source` with `-C linker-plugin-lto` (and `codegen`, each a `-C`
/// option) plainly and through `icf-cc` in mode all: both run alike, the
/// folded one verifies, has a smaller `.text` and no relocations. Returns
/// the plain program and the folded one.
fn rust_linker_plugin_lto(name: &str, source: &str, codegen: &[String]) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let source = icf_fixtures::source_dir().join(source);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let build = |output: &Path, linker: Option<&str>| {
        let mut command = Command::new(&rustc);
        command
            .args([
                "--edition",
                "2021",
                "-C",
                "opt-level=2",
                "-C",
                "codegen-units=4",
            ])
            .args(["-C", "linker-plugin-lto"])
            .args(codegen.iter().flat_map(|option| ["-C", option.as_str()]))
            .arg(&source)
            .arg("-o")
            .arg(output);
        if let Some(linker) = linker {
            command.arg("-C").arg(format!("linker={linker}"));
            command.env("ICF_STRICT", "1").env("ICF_MODE", "all");
        }
        succeed(&mut command)
    };
    let plain = dir.join("plain");
    build(&plain, None);
    let folded = dir.join("icf");
    let output = build(&folded, Some(env!("CARGO_BIN_EXE_icf-cc")));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("warning: linking without folding"),
        "{name}: {stderr}"
    );
    // A program may panic on purpose: compare what it prints and its status.
    let run = |binary: &Path| {
        let output = Command::new(binary).output().expect("running the program");
        (output.status.code(), output.stdout)
    };
    assert_eq!(run(&folded), run(&plain), "{name}");
    verify("all", &plain, &folded);
    let (before, after) = (
        section_size(&plain, ".text"),
        section_size(&folded, ".text"),
    );
    assert!(
        after < before,
        "{name}: .text {after} is not smaller than the plain build's {before}"
    );
    assert_eq!(section_size(&folded, ".rela.text"), 0, "{name}");
    (plain, folded)
}

/// `--after-link` takes the same path for a build whose inputs hold
/// machine code: objects compiled without `-ffunction-sections` (CMake's
/// default), where the usual path can fold nothing of a unit's one
/// `.text`, fold after the link; `--verify` proves the output against the
/// image it was folded from, and leaves it the relocations the proof reads.
#[test]
fn after_link_folds_objects_without_function_sections() {
    let dir = scratch("after-link");
    let object = dir.join("identical.o");
    succeed(
        Command::new("gcc")
            .args(["-O2", "-c"])
            .arg(icf_fixtures::source_dir().join("c/identical.c"))
            .arg("-o")
            .arg(&object),
    );
    let link = |output: &Path| -> Vec<String> {
        vec![
            "gcc".to_string(),
            object.display().to_string(),
            "-o".to_string(),
            output.display().to_string(),
        ]
    };
    let plain = dir.join("plain");
    let words = link(&plain);
    succeed(&mut command(
        &words.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let (usual, after) = (dir.join("usual"), dir.join("after"));
    succeed(icf().args(["link", "--strict", "--"]).args(link(&usual)));
    let linked = succeed(
        icf()
            .args(["link", "--strict", "--verify", "--after-link", "--"])
            .args(link(&after)),
    );
    let stderr = String::from_utf8_lossy(&linked.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
    let expected = run(Arch::X86_64, &plain);
    assert_eq!(run(Arch::X86_64, &after), expected);
    verify("safe", &plain, &after);
    let (plain_text, usual_text, after_text) = (
        section_size(&plain, ".text"),
        section_size(&usual, ".text"),
        section_size(&after, ".text"),
    );
    assert!(
        after_text < usual_text && usual_text <= plain_text,
        ".text: plain {plain_text}, icf link {usual_text}, icf link --after-link {after_text}"
    );
    // The proof needed the relocations on both sides: the output keeps them.
    assert!(section_size(&after, ".rela.text") > 0);
}
