//! Seeds: real objects built from the fixture sources by gcc and clang-19
//! for x86-64 and AArch64 (C, C++ with exceptions and templates, with and
//! without `-ffunction-sections`), a CREL object, a multi-object program,
//! and `ar` archives (one with a long-name table) and a thin archive; then
//! Mach-O objects built by clang-19 for x86_64 and arm64 macOS (C, the
//! relocation assembly of `fixtures/macho`, C++ with exceptions and
//! vtables), a program of three Mach-O objects per architecture, and a
//! Darwin-format archive of Mach-O objects per architecture (`llvm-ar-19`).
//! ELF seeds come first, in the same order as before Mach-O was added, so
//! an ELF-only campaign runs the same inputs.
//!
//! Assumption: the compilers and binutils the tests need are installed
//! (`cargo xtask install-deps`); a seed that cannot be built is a broken
//! environment and panics with the command, like every fixture.

use crate::case::CaseFile;
use crate::case::InputKind;
use icf_fixtures::{Arch, Build, Compiler};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A valid case to mutate: its first file is the one the mutator changes.
#[derive(Clone, Debug)]
pub struct Seed {
    /// `calls.c gcc-O2-fs`, `libseeds.a (x86-64)`...
    pub label: String,
    pub kind: InputKind,
    pub files: Vec<CaseFile>,
}

/// One fixture object to build: source and build.
struct ObjectSpec {
    source: &'static str,
    compiler: Compiler,
    arch: Arch,
    function_sections: bool,
    crel: bool,
}

const fn spec(
    source: &'static str,
    compiler: Compiler,
    arch: Arch,
    function_sections: bool,
) -> ObjectSpec {
    ObjectSpec {
        source,
        compiler,
        arch,
        function_sections,
        crel: false,
    }
}

const fn crel(source: &'static str, arch: Arch) -> ObjectSpec {
    ObjectSpec {
        source,
        compiler: Compiler::Clang,
        arch,
        function_sections: true,
        crel: true,
    }
}

use Arch::{Aarch64, X86_64};
use Compiler::{Clang, Gcc};

/// The single-object seeds.
const OBJECTS: [ObjectSpec; 19] = [
    spec("c/calls.c", Gcc, X86_64, true),
    spec("c/switch.c", Gcc, X86_64, true),
    spec("c/tls.c", Gcc, X86_64, true),
    spec("cpp/exceptions.cpp", Gcc, X86_64, true),
    spec("c/fold_cases.c", Gcc, X86_64, false),
    spec("cpp/templates.cpp", Gcc, X86_64, false),
    spec("asm/multi.s", Gcc, X86_64, false),
    spec("c/identical.c", Clang, X86_64, true),
    spec("cpp/templates.cpp", Clang, X86_64, true),
    spec("cpp/exceptions.cpp", Clang, X86_64, true),
    spec("c/switch.c", Clang, X86_64, false),
    spec("c/calls.c", Gcc, Aarch64, true),
    spec("cpp/exceptions.cpp", Gcc, Aarch64, true),
    spec("c/switch.c", Gcc, Aarch64, false),
    spec("cpp/templates.cpp", Clang, Aarch64, true),
    spec("c/identical.c", Clang, Aarch64, true),
    crel("c/calls.c", X86_64),
    crel("cpp/exceptions.cpp", X86_64),
    crel("c/switch.c", Aarch64),
];

fn build_of(spec: &ObjectSpec) -> Build {
    Build {
        compiler: spec.compiler,
        arch: spec.arch,
        function_sections: spec.function_sections,
        extra_flags: if spec.crel {
            vec!["-Wa,--crel,--allow-experimental-crel".to_owned()]
        } else {
            Vec::new()
        },
    }
}

fn arch_name(arch: Arch) -> &'static str {
    match arch {
        X86_64 => "x86-64",
        Aarch64 => "aarch64",
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|error| panic!("reading seed {}: {error}", path.display()))
}

fn file_name(source: &str) -> String {
    let stem = Path::new(source)
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("seed");
    format!("{stem}.o")
}

/// Builds (or finds in the fixture cache) every seed, ELF then Mach-O;
/// archives are written under `work_dir`. Objects compile two at a time.
pub fn build_seeds(work_dir: &Path) -> Vec<Seed> {
    let mut seeds = build_elf_seeds(work_dir);
    seeds.extend(build_macho_seeds(work_dir));
    seeds
}

/// The ELF seeds (targets other than [`InputKind::is_macho`]).
pub fn build_elf_seeds(work_dir: &Path) -> Vec<Seed> {
    let objects: Vec<PathBuf> = std::thread::scope(|scope| {
        let halves: Vec<_> = [0, 1]
            .map(|half| {
                scope.spawn(move || {
                    OBJECTS
                        .iter()
                        .enumerate()
                        .filter(|(index, _)| index % 2 == half)
                        .map(|(index, spec)| {
                            (
                                index,
                                icf_fixtures::object(Path::new(spec.source), &build_of(spec)),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .into_iter()
            .collect();
        let mut built: Vec<(usize, PathBuf)> = halves
            .into_iter()
            .flat_map(|half| {
                half.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        built.sort();
        built.into_iter().map(|(_, path)| path).collect()
    });

    let mut seeds: Vec<Seed> = OBJECTS
        .iter()
        .zip(&objects)
        .map(|(spec, path)| Seed {
            label: format!("{} {}", spec.source, build_of(spec).label()),
            kind: if spec.crel {
                InputKind::CrelObject
            } else {
                InputKind::Object
            },
            files: vec![CaseFile {
                name: file_name(spec.source),
                bytes: read(path),
                is_input: true,
            }],
        })
        .collect();

    // Three objects of one program: references resolve across objects.
    let cross = |source: &str| icf_fixtures::object(Path::new(source), &Build::new(Gcc));
    seeds.push(Seed {
        label: "e2e/cross_{a,b,main}.c gcc-O2-fs (cross_a.o mutated)".to_owned(),
        kind: InputKind::Object,
        files: ["e2e/cross_a.c", "e2e/cross_b.c", "e2e/cross_main.c"]
            .into_iter()
            .map(|source| CaseFile {
                name: file_name(source),
                bytes: read(&cross(source)),
                is_input: true,
            })
            .collect(),
    });

    for arch in [X86_64, Aarch64] {
        seeds.push(linked_seed(
            &work_dir.join(format!("linked-{}", arch_name(arch))),
            arch,
            false,
        ));
        // With the relocations kept: what `icf shrink` moves code by.
        seeds.push(linked_seed(
            &work_dir.join(format!("linked-q-{}", arch_name(arch))),
            arch,
            true,
        ));
    }

    for arch in [X86_64, Aarch64] {
        let members: Vec<(String, Vec<u8>)> = OBJECTS
            .iter()
            .zip(&objects)
            .filter(|(spec, _)| spec.arch == arch && !spec.crel)
            .take(4)
            .enumerate()
            .map(|(position, (spec, path))| {
                // The first name is longer than 15 bytes, so `ar` writes a long-name table.
                let name = if position == 0 {
                    format!("a_member_with_a_long_name_{}", file_name(spec.source))
                } else {
                    format!("{position}_{}", file_name(spec.source))
                };
                (name, read(path))
            })
            .collect();
        let dir = work_dir.join(format!("seeds-{}", arch_name(arch)));
        seeds.push(archive_seed(&dir, &members, false, arch));
        if arch == X86_64 {
            seeds.push(archive_seed(&dir, &members, true, arch));
        }
    }
    seeds
}

/// A Mach-O seed source and what it needs beyond `--target`.
struct MachOSpec {
    /// `{arch}` stands for `x86_64` or `arm64`.
    source: &'static str,
    freestanding: bool,
}

const fn macho(source: &'static str) -> MachOSpec {
    MachOSpec {
        source,
        freestanding: false,
    }
}

/// The single-object Mach-O seeds, built for both architectures. The
/// sources include no system header (there is no Darwin SDK here).
const MACHO_OBJECTS: [MachOSpec; 11] = [
    macho("c/calls.c"),
    macho("c/switch.c"),
    macho("c/tls.c"),
    macho("c/rip_data.c"),
    macho("c/tailcall.c"),
    macho("c/tiny_twins.c"),
    MachOSpec {
        source: "emu/fold_a.c",
        freestanding: true,
    },
    MachOSpec {
        source: "emu/fold_b.c",
        freestanding: true,
    },
    macho("macho/relocs-{arch}.s"),
    macho("e2e/virtual_tile.cpp"),
    macho("macho/unwind.cpp"),
];

/// `x86_64` or `arm64`, Mach-O's names.
fn macho_arch_name(arch: Arch) -> &'static str {
    match arch {
        X86_64 => "x86_64",
        Aarch64 => "arm64",
    }
}

/// Compiles `source` for `arch` macOS with clang-19 (cached like every fixture).
fn macho_object(source: &str, freestanding: bool, arch: Arch) -> PathBuf {
    let source = source.replace("{arch}", macho_arch_name(arch));
    let mut extra_flags = vec![format!("--target={}-apple-macos11", macho_arch_name(arch))];
    if freestanding {
        extra_flags.extend(
            [
                "-ffreestanding",
                "-fno-builtin",
                "-fno-stack-protector",
                "-I",
            ]
            .map(String::from),
        );
        extra_flags.push(icf_fixtures::source_dir().join("emu").display().to_string());
    }
    if source.ends_with(".cpp") {
        extra_flags.push("-nostdinc++".to_owned());
    }
    // The fixture builder's architecture only picks gcc's cross compiler and adds
    // `--target` for clang on AArch64: the flag above says it all.
    let build = Build {
        compiler: Clang,
        arch: X86_64,
        function_sections: false,
        extra_flags,
    };
    icf_fixtures::object(Path::new(&source), &build)
}

/// The Mach-O seeds: objects, a three-object program and an archive per architecture.
pub fn build_macho_seeds(work_dir: &Path) -> Vec<Seed> {
    let mut seeds = Vec::new();
    for arch in [X86_64, Aarch64] {
        let name = macho_arch_name(arch);
        let objects: Vec<(String, PathBuf)> = MACHO_OBJECTS
            .iter()
            .map(|spec| {
                (
                    spec.source.replace("{arch}", name),
                    macho_object(spec.source, spec.freestanding, arch),
                )
            })
            .collect();
        for (source, path) in &objects {
            seeds.push(Seed {
                label: format!("{source} clang-19 -O2 {name}-apple-macos11"),
                kind: InputKind::MachOObject,
                files: vec![CaseFile {
                    name: file_name(source),
                    bytes: read(path),
                    is_input: true,
                }],
            });
        }
        // Three objects of one program: folds across objects move symbols
        // to another object's kept copy.
        seeds.push(Seed {
            label: format!(
                "emu/{{fold_a,fold_b,rt}}.c clang-19 -O2 {name}-apple-macos11 (fold_a.o mutated)"
            ),
            kind: InputKind::MachOObject,
            files: ["emu/fold_a.c", "emu/fold_b.c", "emu/rt.c"]
                .into_iter()
                .map(|source| CaseFile {
                    name: file_name(source),
                    bytes: read(&macho_object(source, true, arch)),
                    is_input: true,
                })
                .collect(),
        });
        let members: Vec<(String, Vec<u8>)> = objects
            .iter()
            .filter(|(source, _)| {
                ["emu/fold_a.c", "c/switch.c", "macho/unwind.cpp", "c/tls.c"]
                    .contains(&source.as_str())
            })
            .enumerate()
            .map(|(position, (source, path))| {
                // Names past 15 bytes are stored BSD-style (`#1/N`) before the member.
                let name = if position == 0 {
                    format!("a_member_with_a_long_name_{}", file_name(source))
                } else {
                    format!("{position}_{}", file_name(source))
                };
                (name, read(path))
            })
            .collect();
        seeds.push(darwin_archive_seed(
            &work_dir.join(format!("seeds-macho-{name}")),
            &members,
            name,
        ));
    }
    seeds
}

/// A Darwin-format archive of `members` built by `llvm-ar-19`.
fn darwin_archive_seed(dir: &Path, members: &[(String, Vec<u8>)], arch: &str) -> Seed {
    // A leftover from an earlier run would be appended to, not replaced.
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)
        .unwrap_or_else(|error| panic!("creating {}: {error}", dir.display()));
    for (name, bytes) in members {
        std::fs::write(dir.join(name), bytes)
            .unwrap_or_else(|error| panic!("writing {name}: {error}"));
    }
    let archive = "libmacho.a";
    let output = Command::new("llvm-ar-19")
        .current_dir(dir)
        .args(["--format=darwin", "rcs", archive])
        .args(members.iter().map(|(name, _)| name))
        .output()
        .unwrap_or_else(|error| panic!("running llvm-ar-19: {error}"));
    assert!(
        output.status.success(),
        "llvm-ar-19 --format=darwin rcs {archive} failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Seed {
        label: format!("{archive} ({} Mach-O members, {arch})", members.len()),
        kind: InputKind::MachOArchive,
        files: vec![CaseFile {
            name: archive.to_owned(),
            bytes: read(&dir.join(archive)),
            is_input: true,
        }],
    }
}

/// A program linked by gcc from `e2e/cross_*.c` (with `-Wl,-q` when
/// `kept_relocations`), twice: the copy to mutate and the original to
/// verify it against.
fn linked_seed(dir: &Path, arch: Arch, kept_relocations: bool) -> Seed {
    std::fs::create_dir_all(dir)
        .unwrap_or_else(|error| panic!("creating {}: {error}", dir.display()));
    let build = Build {
        arch,
        ..Build::new(Gcc)
    };
    let objects: Vec<PathBuf> = ["e2e/cross_a.c", "e2e/cross_b.c", "e2e/cross_main.c"]
        .into_iter()
        .map(|source| icf_fixtures::object(Path::new(source), &build))
        .collect();
    let program = dir.join("cross");
    let output = Command::new(build.driver(false))
        .args(&objects)
        .args(kept_relocations.then_some("-Wl,-q"))
        .arg("-o")
        .arg(&program)
        .output()
        .unwrap_or_else(|error| panic!("running {}: {error}", build.driver(false)));
    assert!(
        output.status.success(),
        "linking {} failed: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = read(&program);
    Seed {
        label: format!(
            "cross linked by {}{} ({})",
            build.driver(false),
            if kept_relocations { " -Wl,-q" } else { "" },
            arch_name(arch)
        ),
        kind: InputKind::LinkedBinary,
        files: vec![
            CaseFile {
                name: "mutated".to_owned(),
                bytes: bytes.clone(),
                is_input: true,
            },
            CaseFile {
                name: "original".to_owned(),
                bytes,
                is_input: true,
            },
        ],
    }
}

/// An archive of `members` built by `ar` (thin with `T`), in its own directory.
fn archive_seed(dir: &Path, members: &[(String, Vec<u8>)], thin: bool, arch: Arch) -> Seed {
    let dir = dir.join(if thin { "thin" } else { "plain" });
    // A leftover from an earlier run would be appended to, not replaced.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|error| panic!("creating {}: {error}", dir.display()));
    for (name, bytes) in members {
        std::fs::write(dir.join(name), bytes)
            .unwrap_or_else(|error| panic!("writing {name}: {error}"));
    }
    let archive = if thin { "libthin.a" } else { "libseeds.a" };
    let flags = if thin { "rcsT" } else { "rcs" };
    let output = Command::new("ar")
        .current_dir(&dir)
        .arg(flags)
        .arg(archive)
        .args(members.iter().map(|(name, _)| name))
        .output()
        .unwrap_or_else(|error| panic!("running ar (binutils): {error}"));
    assert!(
        output.status.success(),
        "ar {flags} {archive} failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut files = vec![CaseFile {
        name: archive.to_owned(),
        bytes: read(&dir.join(archive)),
        is_input: true,
    }];
    if thin {
        files.extend(members.iter().map(|(name, bytes)| CaseFile {
            name: name.clone(),
            bytes: bytes.clone(),
            is_input: false,
        }));
    }
    Seed {
        label: format!("{archive} ({} members, {})", members.len(), arch_name(arch)),
        kind: if thin {
            InputKind::ThinArchive
        } else {
            InputKind::Archive
        },
        files,
    }
}
