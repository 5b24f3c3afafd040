//! Seeds: real objects built from the fixture sources by gcc and clang-19
//! for x86-64 and AArch64 (C, C++ with exceptions and templates, with and
//! without `-ffunction-sections`), a CREL object, a multi-object program,
//! and `ar` archives (one with a long-name table) and a thin archive.
//!
//! Assumption: the compilers and binutils the tests need are installed
//! (`cargo xtask install-deps`); a seed that cannot be built is a broken
//! environment and panics with the command, like every fixture.

use crate::case::CaseFile;
use crate::case::Target;
use icf_fixtures::{Build, Compiler, Target as Arch};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A valid case to mutate: its first file is the one the mutator changes.
#[derive(Clone, Debug)]
pub struct Seed {
    /// `calls.c gcc-O2-fs`, `libseeds.a (x86-64)`...
    pub label: String,
    pub target: Target,
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
        target: spec.arch,
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

/// Builds (or finds in the fixture cache) every seed; archives are written
/// under `work_dir`. Objects compile two at a time.
pub fn build_seeds(work_dir: &Path) -> Vec<Seed> {
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
            target: if spec.crel {
                Target::CrelObject
            } else {
                Target::Object
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
        target: Target::Object,
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

/// A program linked by gcc from `e2e/cross_*.c`, twice: the copy to
/// mutate and the original to verify it against.
fn linked_seed(dir: &Path, arch: Arch) -> Seed {
    std::fs::create_dir_all(dir)
        .unwrap_or_else(|error| panic!("creating {}: {error}", dir.display()));
    let build = Build {
        target: arch,
        ..Build::new(Gcc)
    };
    let objects: Vec<PathBuf> = ["e2e/cross_a.c", "e2e/cross_b.c", "e2e/cross_main.c"]
        .into_iter()
        .map(|source| icf_fixtures::object(Path::new(source), &build))
        .collect();
    let program = dir.join("cross");
    let output = Command::new(build.driver(false))
        .args(&objects)
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
            "cross linked by {} ({})",
            build.driver(false),
            arch_name(arch)
        ),
        target: Target::LinkedBinary,
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
        target: if thin {
            Target::ThinArchive
        } else {
            Target::Archive
        },
        files,
    }
}
