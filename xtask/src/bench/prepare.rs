//! Preparing the corpora: ripgrep's recorded link, opt_lite against LLVM 14
//! for x86-64 and for AArch64 (with its arm64 sysroot from the Debian pool),
//! and the synthetic corpora; each built once, cached under `target/bench/`
//! (ripgrep under `target/corpus/`), and described in one line.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::format::{human_bytes, mib};
use super::{BenchArgs, CorpusChoice, check_tools};
use crate::corpus::{self, Corpus};
use crate::peer;
use crate::process::{capture, display, fnv1a};
use crate::synthetic;

/// The LLVM program and its input, kept as files beside the xtask sources.
const OPT_LITE_CPP: &str = include_str!("../../bench/llvm/opt_lite.cpp");
const SAMPLE_LL: &str = include_str!("../../bench/llvm/sample.ll");
/// The LLVM libraries opt_lite links (`llvm-config-14 --libs` components).
const LLVM_COMPONENTS: &[&str] = &["core", "irreader", "passes"];

/// A corpus ready to link.
#[derive(Debug)]
pub(super) struct Prepared {
    /// `ripgrep`, `llvm`, `synthetic-N`.
    pub(super) name: String,
    pub(super) description: String,
    pub(super) corpus: Corpus,
    pub(super) check: Check,
    /// Where the linked outputs, reports and diffs go.
    pub(super) scratch: PathBuf,
    /// Synthetic corpora: the generator's figures.
    pub(super) synthetic: Option<SyntheticInfo>,
    /// opt_lite: the same link with its own object compiled by g++ instead
    /// of clang++-19 (for `icf shrink` after the link, `post_link.rs`).
    pub(super) gcc_build: Option<Corpus>,
}

#[derive(Debug, Clone)]
pub(super) struct SyntheticInfo {
    pub(super) functions: usize,
    pub(super) objects: usize,
    pub(super) code_bytes: u64,
    pub(super) copies: usize,
    /// The inputs icf folds (every object and `main.o`).
    pub(super) inputs: Vec<PathBuf>,
}

/// The corpora `--corpus` chooses, in the order they are measured, built on
/// first use.
pub(super) fn chosen_corpora(args: &BenchArgs, root: &Path) -> Result<Vec<Prepared>> {
    let wanted = |choice| args.corpus == choice || args.corpus == CorpusChoice::All;
    let mut corpora = Vec::new();
    if wanted(CorpusChoice::Ripgrep) {
        corpora.push(ripgrep(root)?);
    }
    if wanted(CorpusChoice::Llvm) {
        corpora.push(llvm(root, Machine::X86_64)?);
    }
    if wanted(CorpusChoice::LlvmAarch64) {
        corpora.push(llvm(root, Machine::Aarch64)?);
    }
    if wanted(CorpusChoice::Synthetic) {
        // Ascending, so the scaling rows compare each size with the next smaller one.
        let mut sizes = args.sizes.clone();
        sizes.sort_unstable();
        sizes.dedup();
        for size in sizes {
            corpora.push(synthetic_corpus(root, size, args.seed)?);
        }
    }
    Ok(corpora)
}

/// The real-world corpora (ripgrep, opt_lite for x86-64 and AArch64), built
/// on first use, by name: what `cargo xtask fingerprint` folds.
pub(crate) fn real_corpora() -> Result<Vec<(String, Corpus)>> {
    check_tools()?;
    let root = corpus::workspace_root()?.join("target/bench");
    fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    Ok([
        ripgrep(&root)?,
        llvm(&root, Machine::X86_64)?,
        llvm(&root, Machine::Aarch64)?,
    ]
    .into_iter()
    .map(|prepared| (prepared.name, prepared.corpus))
    .collect())
}

/// How a linked binary's behaviour is observed.
#[derive(Debug, Clone)]
pub(super) enum Check {
    /// `peer::SEARCHES`.
    Ripgrep,
    /// One run with these arguments; the exit status and both outputs count.
    Run(Vec<OsString>),
}

fn ripgrep(root: &Path) -> Result<Prepared> {
    let corpus = corpus::ripgrep_corpus()?;
    let bytes = total_size(&corpus.inputs)?;
    Ok(Prepared {
        name: "ripgrep".into(),
        description: format!(
            "ripgrep 15.2.0 (Rust; {} objects and rlibs, {}; behaviour: {} searches)",
            corpus.inputs.len(),
            mib(bytes),
            peer::SEARCHES.len()
        ),
        corpus,
        check: Check::Ripgrep,
        scratch: root.join("ripgrep"),
        synthetic: None,
        gcc_build: None,
    })
}

/// Output of `llvm-config-14 ARGS`, split into words.
fn llvm_config(args: &[&str]) -> Result<Vec<String>> {
    let mut command = Command::new("llvm-config-14");
    command.args(args);
    let output = capture(&mut command)?;
    Ok(String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect())
}

/// The machine a corpus is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Machine {
    X86_64,
    /// Built by the cross toolchain, run under `qemu-aarch64`.
    Aarch64,
}

/// The Debian packages the AArch64 LLVM corpus takes its archives from, with
/// their directory in the pool. Their versions are the host's own packages'.
const ARM64_PACKAGES: &[(&str, &str)] = &[
    ("llvm-14-dev", "l/llvm-toolchain-14"),
    ("zlib1g-dev", "z/zlib"),
    ("libncurses-dev", "n/ncurses"),
];

/// `dir/sysroot`: the arm64 builds of `ARM64_PACKAGES`, downloaded from
/// deb.debian.org and unpacked once (no foreign architecture is added to
/// the system).
fn arm64_sysroot(dir: &Path) -> Result<PathBuf> {
    let sysroot = dir.join("sysroot");
    let complete = sysroot.join(".complete");
    if complete.is_file() {
        return Ok(sysroot);
    }
    let debs = dir.join("debs");
    fs::create_dir_all(&debs).with_context(|| format!("creating {}", debs.display()))?;
    for (package, pool) in ARM64_PACKAGES {
        let mut query = Command::new("dpkg-query");
        query.args(["-W", "-f=${Version}", package]);
        let output = capture(&mut query).with_context(|| format!("{package} is not installed"))?;
        let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        // The pool's file names carry no epoch (`1:14.0.6-12` is `14.0.6-12`).
        let version = version.split_once(':').map_or(version.as_str(), |(_, v)| v);
        let file = format!("{package}_{version}_arm64.deb");
        let url = format!("http://deb.debian.org/debian/pool/main/{pool}/{file}");
        let deb = debs.join(&file);
        if !deb.is_file() {
            eprintln!("==> downloading {url}");
            let partial = debs.join(format!("{file}.partial"));
            let mut curl = Command::new("curl");
            curl.args(["-fsSL", "--retry", "3", "-o"])
                .arg(&partial)
                .arg(&url);
            capture(&mut curl).with_context(|| format!("downloading {url}"))?;
            fs::rename(&partial, &deb)
                .with_context(|| format!("renaming {}", partial.display()))?;
        }
        let mut unpack = Command::new("dpkg-deb");
        unpack.arg("-x").arg(&deb).arg(&sysroot);
        capture(&mut unpack).with_context(|| format!("unpacking {}", deb.display()))?;
    }
    fs::write(&complete, "").with_context(|| format!("writing {}", complete.display()))?;
    Ok(sysroot)
}

/// opt_lite against LLVM 14 for `machine`, compiled once (rebuilt when its
/// source or flags change). The AArch64 build uses the same headers (they
/// do not depend on the machine) and Debian's arm64 archives.
fn llvm(root: &Path, machine: Machine) -> Result<Prepared> {
    let name = match machine {
        Machine::X86_64 => "llvm",
        Machine::Aarch64 => "llvm-aarch64",
    };
    let dir = root.join(name);
    let inputs = dir.join("inputs");
    fs::create_dir_all(&inputs).with_context(|| format!("creating {}", inputs.display()))?;
    let source = dir.join("opt_lite.cpp");
    let sample = dir.join("sample.ll");
    write_if_changed(&source, OPT_LITE_CPP)?;
    write_if_changed(&sample, SAMPLE_LL)?;

    let libraries = llvm_libraries(machine, &dir)?;
    let object = inputs.join("opt_lite.o");
    let mut compile = opt_lite_compile(machine, &source, &object)?;
    let link_text = libraries.link_text(&object, &dir.join("opt_lite"));
    compile_unless_cached(&dir, &mut compile, &object, &link_text)?;

    let corpus = Corpus::load_if_complete(&dir)?
        .with_context(|| format!("{} is incomplete", dir.display()))?;
    let gcc_build = gcc_build(machine, &dir, &source, &object, &corpus)?;
    let archive_paths: Vec<PathBuf> = libraries.archives.iter().map(PathBuf::from).collect();
    let language = match machine {
        Machine::X86_64 => "C++",
        Machine::Aarch64 => "C++ for AArch64, run under qemu-aarch64",
    };
    Ok(Prepared {
        name: name.into(),
        description: format!(
            "opt_lite on LLVM 14 ({language}; opt_lite.o, {}, and {} static archives, {}; \
             behaviour: opt_lite -O2 on sample.ll)",
            human_bytes(fs::metadata(&object).map(|m| m.len()).unwrap_or(0)),
            archive_paths.len(),
            mib(total_size(&archive_paths)?)
        ),
        corpus,
        check: Check::Run(vec![sample.into_os_string()]),
        scratch: dir,
        synthetic: None,
        gcc_build: Some(gcc_build),
    })
}

/// `corpus` with its own object (`object`) compiled from `source` by the
/// GNU C++ compiler for `machine` instead (once, into
/// `inputs/opt_lite-gcc.o`; again when the source or the command change).
fn gcc_build(
    machine: Machine,
    dir: &Path,
    source: &Path,
    object: &Path,
    corpus: &Corpus,
) -> Result<Corpus> {
    let gcc_object = dir.join("inputs/opt_lite-gcc.o");
    let mut compile = Command::new(match machine {
        Machine::X86_64 => "g++",
        Machine::Aarch64 => "aarch64-linux-gnu-g++",
    });
    compile
        .args(llvm_config(&["--cxxflags"])?)
        .args(["-O2", "-ffunction-sections", "-fdata-sections", "-c"])
        .arg(source)
        .arg("-o")
        .arg(&gcc_object);
    let stamped = [OPT_LITE_CPP, &display(&compile)].concat();
    let stamp = format!("{:016x}", fnv1a(stamped.as_bytes()));
    let stamp_path = dir.join("stamp-gcc.txt");
    let cached = fs::read_to_string(&stamp_path).is_ok_and(|old| old.trim() == stamp)
        && gcc_object.is_file();
    if !cached {
        eprintln!("==> {}", display(&compile));
        capture(&mut compile).context("compiling opt_lite with g++")?;
        fs::write(&stamp_path, &stamp)
            .with_context(|| format!("writing {}", stamp_path.display()))?;
    }
    let mut built = corpus.clone();
    let (from, to) = (
        object.display().to_string(),
        gcc_object.display().to_string(),
    );
    for arg in &mut built.args {
        if *arg == from {
            arg.clone_from(&to);
        }
    }
    for input in &mut built.inputs {
        if input.as_path() == object {
            input.clone_from(&gcc_object);
        }
    }
    Ok(built)
}

/// What opt_lite links against on one machine, after its own object.
#[derive(Debug)]
struct LlvmLibraries {
    /// The compiler driver that links.
    driver: &'static str,
    /// LLVM's static archives, as paths.
    archives: Vec<String>,
    /// The system libraries LLVM needs, as driver arguments.
    system_libs: Vec<String>,
}

impl LlvmLibraries {
    /// The corpus's `link-args.txt`: the link of `object` into `output`, one
    /// argument a line.
    fn link_text(&self, object: &Path, output: &Path) -> String {
        let mut link_args = vec![
            self.driver.to_owned(),
            object.display().to_string(),
            "-Wl,--gc-sections".into(),
            "-o".into(),
            output.display().to_string(),
        ];
        link_args.extend(self.archives.iter().cloned());
        link_args.extend(self.system_libs.iter().cloned());
        link_args.join("\n") + "\n"
    }
}

/// The libraries of `machine`: the host's for x86-64; for AArch64 the same
/// archives in the arm64 sysroot under `dir`.
fn llvm_libraries(machine: Machine, dir: &Path) -> Result<LlvmLibraries> {
    let host_archives = llvm_config(&[&["--link-static", "--libfiles"], LLVM_COMPONENTS].concat())?;
    Ok(match machine {
        Machine::X86_64 => LlvmLibraries {
            driver: "g++",
            archives: host_archives,
            system_libs: llvm_config(&["--link-static", "--system-libs"])?,
        },
        Machine::Aarch64 => {
            let sysroot = arm64_sysroot(dir)?;
            let archives = host_archives
                .iter()
                .map(|path| {
                    let relative = path.trim_start_matches('/');
                    sysroot.join(relative).display().to_string()
                })
                .collect();
            // opt_lite needs only zlib and terminfo of LLVM's system
            // libraries, as archives (the unpacked `.so` links point at
            // runtime packages that are not there).
            let libs = vec![
                format!("-L{}", sysroot.join("usr/lib/aarch64-linux-gnu").display()),
                "-l:libz.a".into(),
                "-l:libtinfo.a".into(),
                "-lpthread".into(),
            ];
            LlvmLibraries {
                driver: "aarch64-linux-gnu-g++",
                archives,
                system_libs: libs,
            }
        }
    })
}

/// The clang++-19 command compiling `source` into `object` for `machine`.
fn opt_lite_compile(machine: Machine, source: &Path, object: &Path) -> Result<Command> {
    let mut compile = Command::new("clang++-19");
    if machine == Machine::Aarch64 {
        compile.arg("--target=aarch64-linux-gnu");
    }
    compile
        .args(llvm_config(&["--cxxflags"])?)
        .args(["-O2", "-ffunction-sections", "-fdata-sections", "-c"])
        .arg(source)
        .arg("-o")
        .arg(object);
    Ok(compile)
}

/// Runs `compile` and writes `link_text` to `dir/link-args.txt`, unless
/// `dir/stamp.txt` shows both were done with the same source, compile
/// command and link arguments.
fn compile_unless_cached(
    dir: &Path,
    compile: &mut Command,
    object: &Path,
    link_text: &str,
) -> Result<()> {
    let stamped = [OPT_LITE_CPP, &display(compile), link_text].concat();
    let stamp = format!("{:016x}", fnv1a(stamped.as_bytes()));
    let stamp_path = dir.join("stamp.txt");
    let cached = fs::read_to_string(&stamp_path).is_ok_and(|old| old.trim() == stamp)
        && object.is_file()
        && dir.join("link-args.txt").is_file();
    if !cached {
        eprintln!("==> {}", display(compile));
        capture(compile).context("compiling opt_lite against LLVM 14")?;
        let args_path = dir.join("link-args.txt");
        fs::write(&args_path, link_text)
            .with_context(|| format!("writing {}", args_path.display()))?;
        fs::write(&stamp_path, &stamp)
            .with_context(|| format!("writing {}", stamp_path.display()))?;
    }
    Ok(())
}

/// `N` generated functions (`synthetic.rs`), generated and compiled once per size and seed.
fn synthetic_corpus(root: &Path, size: usize, seed: u64) -> Result<Prepared> {
    let dir = root.join("synthetic").join(format!("n{size}-seed{seed}"));
    let stamp = format!(
        "generator {} functions {size} seed {seed} per-object {}",
        synthetic::GENERATOR_VERSION,
        synthetic::FUNCTIONS_PER_OBJECT
    );
    let info_path = dir.join("generated.json");
    let cached: Option<Value> = fs::read(&info_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .filter(|info| info["stamp"] == stamp.as_str());
    let info = match cached {
        Some(info) => info,
        None => generate_synthetic(&dir, &info_path, size, seed, &stamp)?,
    };
    let corpus = Corpus::load_if_complete(&dir)?
        .with_context(|| format!("{} is incomplete", dir.display()))?;
    let number = |key: &str| {
        info[key]
            .as_u64()
            .with_context(|| format!("{} has no {key}", info_path.display()))
    };
    let synthetic = SyntheticInfo {
        functions: size,
        objects: usize::try_from(number("objects")?)?,
        code_bytes: number("code_bytes")?,
        copies: usize::try_from(number("copies")?)?,
        inputs: corpus.inputs.clone(),
    };
    Ok(Prepared {
        name: format!("synthetic-{size}"),
        description: format!(
            "{size} generated functions in {} objects ({}), {} of code, {} exact copies, {} \
             self-recursive, {} mutually recursive pairs (behaviour: the checksum main prints)",
            synthetic.objects,
            mib(total_size(&synthetic.inputs)?),
            human_bytes(synthetic.code_bytes),
            synthetic.copies,
            number("self_recursive")?,
            number("mutual_pairs")?
        ),
        corpus,
        check: Check::Run(Vec::new()),
        scratch: dir,
        synthetic: Some(synthetic),
        gcc_build: None,
    })
}

/// Generates the synthetic corpus of `size` functions into `dir` (emptied
/// first), compiles its `main.c` and writes its `link-args.txt`; the
/// generator's figures, with `stamp`, go to `info_path` too.
fn generate_synthetic(
    dir: &Path,
    info_path: &Path,
    size: usize,
    seed: u64,
    stamp: &str,
) -> Result<Value> {
    let inputs = dir.join("inputs");
    let _ = fs::remove_dir_all(dir);
    eprintln!(
        "==> generating {size} synthetic functions in {}",
        dir.display()
    );
    let began = Instant::now();
    let generated = synthetic::generate(&inputs, size, seed)?;
    let main_o = inputs.join("main.o");
    let mut compile = Command::new("cc");
    compile
        .args(["-O2", "-c"])
        .arg(&generated.main_c)
        .arg("-o")
        .arg(&main_o);
    capture(&mut compile).context("compiling the synthetic main.c")?;
    let mut link_args = vec!["cc".to_owned(), main_o.display().to_string()];
    link_args.extend(generated.objects.iter().map(|o| o.display().to_string()));
    link_args.extend(["-o".to_owned(), dir.join("synthetic").display().to_string()]);
    let args_path = dir.join("link-args.txt");
    fs::write(&args_path, link_args.join("\n") + "\n")
        .with_context(|| format!("writing {}", args_path.display()))?;
    let info = json!({
        "stamp": stamp,
        "functions": generated.functions,
        "objects": generated.objects.len(),
        "code_bytes": generated.code_bytes,
        "copies": generated.copies,
        "self_recursive": generated.self_recursive,
        "mutual_pairs": generated.mutual_pairs,
        "generate_seconds": began.elapsed().as_secs_f64(),
    });
    let text = serde_json::to_string_pretty(&info).context("rendering generated.json")?;
    fs::write(info_path, text).with_context(|| format!("writing {}", info_path.display()))?;
    Ok(info)
}

/// Writes `text` to `path` unless it already holds exactly that.
fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The summed sizes of the files at `paths`.
fn total_size(paths: &[PathBuf]) -> Result<u64> {
    paths
        .iter()
        .map(|path| {
            fs::metadata(path)
                .map(|meta| meta.len())
                .with_context(|| format!("reading {}", path.display()))
        })
        .sum()
}
