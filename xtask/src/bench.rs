//! `cargo xtask bench`: icf against lld-19, gold, mold and GNU ld on real
//! code, every figure measured in one run on the same objects.
//!
//! Corpora (inputs built once and cached):
//!
//! - `ripgrep`: ripgrep 15.2's recorded final link (`corpus.rs`, cached in
//!   `target/corpus/ripgrep/`); behaviour: the searches of `peer.rs`.
//! - `llvm`: `opt_lite` (`xtask/bench/llvm/opt_lite.cpp`, written to
//!   `target/bench/llvm/`), a small `opt -O2 -S` on LLVM 14's new pass
//!   manager, compiled by clang++-19 with `-O2 -ffunction-sections
//!   -fdata-sections` and linked by `g++ -Wl,--gc-sections` statically
//!   against Debian's llvm-14-dev archives (core, irreader, passes: most of
//!   LLVM's transforms); behaviour: the optimized IR it prints for
//!   `xtask/bench/llvm/sample.ll`.
//! - `llvm-aarch64`: the same program built for AArch64: clang++-19
//!   `--target=aarch64-linux-gnu`, linked by `aarch64-linux-gnu-g++` against
//!   Debian's arm64 llvm-14-dev archives (downloaded once from the Debian
//!   pool into `target/bench/llvm-aarch64/sysroot/`, the host package's
//!   version), run under `qemu-aarch64`.
//! - `synthetic`: generated objects of N functions (`synthetic.rs`, cached in
//!   `target/bench/synthetic/nN-seedS/`), linked by `cc` without
//!   `--gc-sections` so every function stays; behaviour: the checksum `main`
//!   prints. One corpus per size (`--sizes`, default 10k to 80k).
//!
//! Each corpus is linked with lld (`--icf=none|safe|all`), gold (the same),
//! mold (none, `--icf=all`; `--no-fork` so its time and memory are its own),
//! GNU ld, and `icf link --mode safe|all` in front of lld and of GNU ld.
//! Links run round-robin, `--runs` rounds (default 3), and the fastest wall
//! time counts; the peak RSS (`/usr/bin/time -f %M`: the largest single
//! process of the link: driver, linker or icf) is the largest over the rounds.
//! Every output is then measured (`.text` from `size -A`, `strip -o` file
//! size) and run: it must behave exactly like the plain lld link.
//!
//! The timed `icf link` runs write no report (naming every member costs
//! time a user without `--report` does not spend); one more, untimed, run
//! with `--report` gives icf's own phases (`timings_ms`: load, lift,
//! partition, plan) and its fold counts. icf's overhead is its wall time
//! minus the plain link with the same linker. On the synthetic corpora, icf's own peak RSS is measured
//! once more without any linker: `icf fold` on the same inputs (the link
//! folds every input there too).
//!
//! Targets (PASS/FAIL lines, never the exit status; see `targets`): safe mode
//! saves at least the best peer's `--icf=all` on every corpus; `icf link` in
//! front of lld within 1.25x of the plain lld link on ripgrep and llvm; on
//! the synthetic corpora, icf link time grows at most 1.1x as fast as the
//! function count (2.2 for a doubling), and icf's peak RSS stays under twice
//! the input's code bytes plus `RSS_FIXED_OVERHEAD_MIB`.
//!
//! Results: `target/bench/results.md` (printed too) and
//! `target/bench/results.json`. The command fails only when something
//! breaks: a link fails (its command and output go to the corpus
//! directory's `failures/`), or a binary behaves unlike the plain one (both
//! outputs and the binary go to its `diff/`).
//!
//! Time taken on 2 cores: `--corpus all` with the default sizes about 2
//! minutes once the corpora are cached (building ripgrep takes about a
//! minute more the first time, opt_lite about 10 s). One million synthetic
//! functions (`--corpus synthetic --sizes 1000000`) take about 10 minutes:
//! 11 s to generate 1000 objects (384 MiB), then 13 links of about 150 MiB
//! of `.text` three times (lld 1.9 s, GNU ld 16 s, gold --icf 13 s, icf
//! link 9 s at 1.3 GiB peak RSS); its directory needs about 4 GiB of disk.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::corpus::{self, Corpus, Linker};
use crate::peer;
use crate::process::{capture, display, find_program, fnv1a, shell_line};
use crate::synthetic;

/// GNU time (Debian package `time`), for the peak RSS of a process tree.
const GNU_TIME: &str = "/usr/bin/time";
/// The fixed part of the synthetic RSS target: icf's peak RSS must stay under
/// twice the input's code bytes plus this many MiB (the binary, thread
/// stacks, allocator arenas, tables that do not grow with the input).
const RSS_FIXED_OVERHEAD_MIB: u64 = 100;
/// `icf link` in front of lld may take this much longer than plain lld (ripgrep, llvm).
const LINK_TIME_LIMIT: f64 = 1.25;
/// On the synthetic corpora, time(b)/time(a) may be at most this times b/a.
const SCALING_SLACK: f64 = 1.1;
/// The largest synthetic corpus `--sizes` accepts.
const MAX_SYNTHETIC: usize = 1_000_000;

/// The LLVM program and its input, kept as files beside the xtask sources.
const OPT_LITE_CPP: &str = include_str!("../bench/llvm/opt_lite.cpp");
const SAMPLE_LL: &str = include_str!("../bench/llvm/sample.ll");
/// The LLVM libraries opt_lite links (`llvm-config-14 --libs` components).
const LLVM_COMPONENTS: &[&str] = &["core", "irreader", "passes"];

/// `cargo xtask bench` flags.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Which corpora to benchmark.
    #[arg(long, value_enum, default_value_t = CorpusChoice::All)]
    corpus: CorpusChoice,
    /// Synthetic corpus sizes in functions, comma-separated, 1000 to 1000000 each
    /// (1000000 takes about 10 minutes, 5 GiB of memory and 4 GiB of disk).
    #[arg(long, value_delimiter = ',', default_values_t = [10_000, 20_000, 40_000, 80_000])]
    sizes: Vec<usize>,
    /// Timed rounds of every link; the fastest counts.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Seed of the synthetic generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CorpusChoice {
    Ripgrep,
    Llvm,
    LlvmAarch64,
    Synthetic,
    All,
}

/// Runs the benchmark; see the module header.
pub fn run(args: &BenchArgs) -> Result<()> {
    let started = Instant::now();
    for &size in &args.sizes {
        ensure!(
            (1000..=MAX_SYNTHETIC).contains(&size),
            "--sizes {size}: a synthetic corpus has 1000 to {MAX_SYNTHETIC} functions"
        );
    }
    check_tools()?;
    let root = corpus::workspace_root()?.join("target/bench");
    fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    let icf = peer::build_icf()?;
    let load_before = load_average();

    let wanted = |choice| args.corpus == choice || args.corpus == CorpusChoice::All;
    let mut corpora = Vec::new();
    if wanted(CorpusChoice::Ripgrep) {
        corpora.push(ripgrep(&root)?);
    }
    if wanted(CorpusChoice::Llvm) {
        corpora.push(llvm(&root, Machine::X86_64)?);
    }
    if wanted(CorpusChoice::LlvmAarch64) {
        corpora.push(llvm(&root, Machine::Aarch64)?);
    }
    if wanted(CorpusChoice::Synthetic) {
        // Ascending, so the scaling rows compare each size with the next smaller one.
        let mut sizes = args.sizes.clone();
        sizes.sort_unstable();
        sizes.dedup();
        for size in sizes {
            corpora.push(synthetic_corpus(&root, size, args.seed)?);
        }
    }

    let mut results = Vec::new();
    for prepared in &corpora {
        eprintln!("==> bench {}: {}", prepared.name, prepared.description);
        results.push(measure(prepared, &icf, args.runs)?);
    }

    let targets = targets(&results);
    let elapsed = started.elapsed();
    let environment = Environment {
        icf_revision: icf_revision(),
        load_before,
        load_after: load_average(),
        runs: args.runs,
        elapsed,
    };
    let markdown = render_markdown(&results, &targets, &environment);
    let json = render_json(&results, &targets, &environment);
    let md_path = root.join("results.md");
    let json_path = root.join("results.json");
    fs::write(&md_path, &markdown).with_context(|| format!("writing {}", md_path.display()))?;
    let json_text = serde_json::to_string_pretty(&json).context("rendering results.json")? + "\n";
    fs::write(&json_path, json_text).with_context(|| format!("writing {}", json_path.display()))?;

    println!("{markdown}");
    for target in &targets {
        println!("{}", target.line());
    }
    println!(
        "\nbench took {:.1} s; results in {} and {}",
        elapsed.as_secs_f64(),
        md_path.display(),
        json_path.display()
    );

    let mut broken: Vec<String> = results
        .iter()
        .flat_map(|result| {
            result.rows.iter().filter_map(move |row| {
                let problem = match (&row.failure, &row.behaviour) {
                    (Some(failure), _) => failure.describe(),
                    (None, Behaviour::Differs(why)) => why.clone(),
                    (None, Behaviour::Same | Behaviour::Reference) => return None,
                };
                Some(format!(
                    "{} / {}: {problem}",
                    result.name, row.variant.label
                ))
            })
        })
        .collect();
    broken.extend(results.iter().filter_map(|result| {
        let error = result.fold_error.as_ref()?;
        Some(format!("{} / icf fold: {error}", result.name))
    }));
    if !broken.is_empty() {
        bail!(
            "{} link(s) failed or behave unlike the plain link:\n  {}",
            broken.len(),
            broken.join("\n  ")
        );
    }
    Ok(())
}

/// Fails early, naming the Debian package, when a tool the bench runs is missing.
fn check_tools() -> Result<()> {
    let tools = [
        ("cc", "gcc"),
        ("g++", "g++"),
        ("clang++-19", "clang-19"),
        ("ld.lld-19", "lld-19"),
        ("ld.gold", "binutils"),
        ("ld.bfd", "binutils"),
        ("mold", "mold"),
        ("strip", "binutils"),
        ("size", "binutils"),
        ("llvm-config-14", "llvm-14-dev"),
        ("aarch64-linux-gnu-g++", "g++-aarch64-linux-gnu"),
        ("aarch64-linux-gnu-strip", "binutils-aarch64-linux-gnu"),
        ("qemu-aarch64", "qemu-user"),
        ("curl", "curl"),
    ];
    let mut missing: Vec<String> = tools
        .iter()
        .filter(|(tool, _)| find_program(tool).is_none())
        .map(|(tool, package)| format!("{tool} ({package})"))
        .collect();
    if !Path::new(GNU_TIME).is_file() {
        missing.push(format!("{GNU_TIME} (time)"));
    }
    ensure!(
        missing.is_empty(),
        "missing tools: {}; `cargo xtask install-deps` installs them",
        missing.join(", ")
    );
    Ok(())
}

/// A corpus ready to link.
#[derive(Debug)]
struct Prepared {
    /// `ripgrep`, `llvm`, `synthetic-N`.
    name: String,
    description: String,
    corpus: Corpus,
    check: Check,
    /// Where the linked outputs, reports and diffs go.
    scratch: PathBuf,
    /// Synthetic corpora: the generator's figures.
    synthetic: Option<SyntheticInfo>,
}

#[derive(Debug, Clone)]
struct SyntheticInfo {
    functions: usize,
    objects: usize,
    code_bytes: u64,
    copies: usize,
    /// The inputs icf folds (every object and `main.o`).
    inputs: Vec<PathBuf>,
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
enum Check {
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

    let host_archives = llvm_config(&[&["--link-static", "--libfiles"], LLVM_COMPONENTS].concat())?;
    let (driver, archives, system_libs) = match machine {
        Machine::X86_64 => (
            "g++",
            host_archives,
            llvm_config(&["--link-static", "--system-libs"])?,
        ),
        Machine::Aarch64 => {
            let sysroot = arm64_sysroot(&dir)?;
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
            ("aarch64-linux-gnu-g++", archives, libs)
        }
    };

    let object = inputs.join("opt_lite.o");
    let mut compile = Command::new("clang++-19");
    if machine == Machine::Aarch64 {
        compile.arg("--target=aarch64-linux-gnu");
    }
    compile
        .args(llvm_config(&["--cxxflags"])?)
        .args(["-O2", "-ffunction-sections", "-fdata-sections", "-c"])
        .arg(&source)
        .arg("-o")
        .arg(&object);
    let mut link_args = vec![
        driver.to_owned(),
        object.display().to_string(),
        "-Wl,--gc-sections".into(),
        "-o".into(),
        dir.join("opt_lite").display().to_string(),
    ];
    link_args.extend(archives.iter().cloned());
    link_args.extend(system_libs);
    let link_text = link_args.join("\n") + "\n";

    let stamp = format!(
        "{:016x}",
        fnv1a(
            [OPT_LITE_CPP, &display(&compile), &link_text]
                .concat()
                .as_bytes()
        )
    );
    let stamp_path = dir.join("stamp.txt");
    let cached = fs::read_to_string(&stamp_path).is_ok_and(|old| old.trim() == stamp)
        && object.is_file()
        && dir.join("link-args.txt").is_file();
    if !cached {
        eprintln!("==> {}", display(&compile));
        capture(&mut compile).context("compiling opt_lite against LLVM 14")?;
        let args_path = dir.join("link-args.txt");
        fs::write(&args_path, &link_text)
            .with_context(|| format!("writing {}", args_path.display()))?;
        fs::write(&stamp_path, &stamp)
            .with_context(|| format!("writing {}", stamp_path.display()))?;
    }
    let corpus = Corpus::load_if_complete(&dir)?
        .with_context(|| format!("{} is incomplete", dir.display()))?;
    let archive_paths: Vec<PathBuf> = archives.iter().map(PathBuf::from).collect();
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
    })
}

/// `N` generated functions (`synthetic.rs`), generated and compiled once per size and seed.
fn synthetic_corpus(root: &Path, size: usize, seed: u64) -> Result<Prepared> {
    let dir = root.join("synthetic").join(format!("n{size}-seed{seed}"));
    let inputs = dir.join("inputs");
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
        None => {
            let _ = fs::remove_dir_all(&dir);
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
            fs::write(&info_path, text)
                .with_context(|| format!("writing {}", info_path.display()))?;
            info
        }
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
    })
}

/// One way of linking a corpus.
#[derive(Debug, Clone)]
struct Variant {
    /// `lld --icf=all`, `icf safe + lld`, ...
    label: String,
    /// File name of its output.
    file: String,
    linker: Linker,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The linker alone, with this `--icf=` value (None: no ICF flag).
    Peer(Option<&'static str>),
    /// `icf link --mode MODE` in front of the plain link.
    Icf(&'static str),
}

/// Every link of a corpus; the first (plain lld) is the reference.
fn variants() -> Vec<Variant> {
    let peer = |linker: Linker, icf: Option<&'static str>| {
        let name = linker.name();
        let (label, file) = match icf {
            Some(icf) => (format!("{name} --icf={icf}"), format!("{name}-icf-{icf}")),
            None => (name.to_owned(), name.to_owned()),
        };
        Variant {
            label,
            file,
            linker,
            kind: Kind::Peer(icf),
        }
    };
    let icf = |mode: &'static str, linker: Linker| Variant {
        label: format!("icf {mode} + {}", linker.name()),
        file: format!("icf-{mode}-{}", linker.name()),
        linker,
        kind: Kind::Icf(mode),
    };
    vec![
        peer(Linker::Lld, None),
        peer(Linker::Lld, Some("safe")),
        peer(Linker::Lld, Some("all")),
        peer(Linker::Gold, None),
        peer(Linker::Gold, Some("safe")),
        peer(Linker::Gold, Some("all")),
        peer(Linker::Mold, None),
        peer(Linker::Mold, Some("all")),
        peer(Linker::Bfd, None),
        icf("safe", Linker::Lld),
        icf("all", Linker::Lld),
        icf("safe", Linker::Bfd),
        icf("all", Linker::Bfd),
    ]
}

impl Variant {
    /// The command producing `output`; `report` is where `icf link` writes its JSON.
    fn command(
        &self,
        corpus: &Corpus,
        icf: &Path,
        output: &Path,
        report: Option<&Path>,
    ) -> Result<Command> {
        let mut extra = Vec::new();
        if self.linker == Linker::Mold {
            // mold forks and exits before its worker finishes unmapping; this
            // keeps the whole link in the process `time` waits for.
            extra.push("-Wl,--no-fork".to_owned());
        }
        if let Kind::Peer(Some(icf)) = self.kind {
            extra.push(format!("-Wl,--icf={icf}"));
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let link = corpus.link_command(self.linker, output, &extra)?;
        let Kind::Icf(mode) = self.kind else {
            return Ok(link);
        };
        let mut command = Command::new(icf);
        command.args(["link", "--strict", "--mode", mode]);
        if let Some(report) = report {
            command.arg("--report").arg(report);
        }
        command
            .arg("--")
            .arg(link.get_program())
            .args(link.get_args());
        copy_env(&link, &mut command);
        Ok(command)
    }

    fn plain_label(&self) -> &'static str {
        self.linker.name()
    }
}

fn copy_env(from: &Command, to: &mut Command) {
    for (key, value) in from.get_envs() {
        match value {
            Some(value) => to.env(key, value),
            None => to.env_remove(key),
        };
    }
}

/// What one link produced and cost.
#[derive(Debug)]
struct Row {
    variant: Variant,
    /// Why the link failed (its other figures are then absent).
    failure: Option<Failure>,
    /// Wall time of every round, in order.
    walls: Vec<Duration>,
    /// Peak RSS over the rounds, KiB.
    rss_kib: u64,
    text: u64,
    stripped: u64,
    behaviour: Behaviour,
    /// `icf link --report` of the untimed reporting run.
    report: Option<Value>,
}

/// A failed link: the linker's first error and the file with the command and its output.
#[derive(Debug, Clone)]
struct Failure {
    summary: String,
    log: PathBuf,
}

impl Failure {
    fn describe(&self) -> String {
        format!(
            "{} (command and output: {})",
            self.summary,
            self.log.display()
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Behaviour {
    /// The plain lld link every other output is compared with.
    Reference,
    Same,
    Differs(String),
}

impl Row {
    fn best(&self) -> Option<Duration> {
        self.walls.iter().min().copied()
    }

    fn ok(&self) -> bool {
        self.failure.is_none()
    }
}

/// Every figure of one corpus.
#[derive(Debug)]
struct CorpusResult {
    name: String,
    description: String,
    rows: Vec<Row>,
    synthetic: Option<SyntheticInfo>,
    /// Synthetic corpora: peak RSS (KiB) of `icf fold` alone, by mode.
    fold_rss_kib: Vec<(&'static str, u64)>,
    /// Why `icf fold` failed, if it did.
    fold_error: Option<String>,
}

impl CorpusResult {
    fn row(&self, label: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|row| row.variant.label == label && row.ok())
    }

    /// `.text` saved by `row` against the same linker's plain link, percent.
    fn saved_percent(&self, row: &Row) -> Option<f64> {
        if row.variant.kind == Kind::Peer(None) || !row.ok() {
            return None;
        }
        let plain = self.row(row.variant.plain_label())?;
        Some(100.0 * (plain.text as f64 - row.text as f64) / plain.text.max(1) as f64)
    }

    /// The peer `--icf=all` link saving the most `.text`, and its saving.
    fn best_peer_all(&self) -> Option<(&Row, f64)> {
        self.rows
            .iter()
            .filter(|row| row.variant.kind == Kind::Peer(Some("all")))
            .filter_map(|row| Some((row, self.saved_percent(row)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The smallest stripped file among the peers' links.
    fn best_peer_stripped(&self) -> Option<u64> {
        self.rows
            .iter()
            .filter(|row| matches!(row.variant.kind, Kind::Peer(_)) && row.ok())
            .map(|row| row.stripped)
            .min()
    }
}

/// Links, measures and runs every variant of one corpus.
fn measure(prepared: &Prepared, icf: &Path, runs: u32) -> Result<CorpusResult> {
    let out = prepared.scratch.join("out");
    let reports = prepared.scratch.join("reports");
    let failures = prepared.scratch.join("failures");
    let _ = fs::remove_dir_all(&failures);
    let _ = fs::remove_dir_all(&reports);
    for dir in [&out, &reports, &failures] {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let rss_file = prepared.scratch.join("rss.txt");
    let variants = variants();
    let mut rows: Vec<Row> = variants
        .iter()
        .map(|variant| Row {
            variant: variant.clone(),
            failure: None,
            walls: Vec::new(),
            rss_kib: 0,
            text: 0,
            stripped: 0,
            behaviour: Behaviour::Same,
            report: None,
        })
        .collect();

    // Round-robin, so a burst of load elsewhere hits one round of every link
    // rather than every round of one.
    for round in 0..runs {
        for row in &mut rows {
            if !row.ok() {
                continue;
            }
            let variant = &row.variant;
            eprintln!("    round {}/{runs}: {}", round + 1, variant.label);
            let output = out.join(&variant.file);
            // Timed as people run it: without `--report`, whose names cost time.
            let command = variant.command(&prepared.corpus, icf, &output, None)?;
            match timed(&command, &rss_file) {
                Ok((wall, rss)) => {
                    row.walls.push(wall);
                    row.rss_kib = row.rss_kib.max(rss);
                }
                Err(error) => {
                    let text = format!("{error:#}");
                    let log = failures.join(format!("{}.txt", variant.file));
                    let reproduce = format!(
                        "# reproduce from {}:\n{}\n\n{text}\n",
                        prepared.scratch.display(),
                        shell_line(&command)
                    );
                    fs::write(&log, reproduce)
                        .with_context(|| format!("writing {}", log.display()))?;
                    eprintln!("    FAILED: {}", first_error(&text));
                    row.failure = Some(Failure {
                        summary: first_error(&text),
                        log,
                    });
                }
            }
        }
    }

    // One more, untimed, icf link per icf row for its report: phases,
    // aliases, thunks. It writes the same output as the timed rounds.
    for row in &mut rows {
        if !row.ok() || !matches!(row.variant.kind, Kind::Icf(_)) {
            continue;
        }
        let output = out.join(&row.variant.file);
        let report = reports.join(format!("{}.json", row.variant.file));
        let mut command = row
            .variant
            .command(&prepared.corpus, icf, &output, Some(&report))?;
        eprintln!("    report: {}", row.variant.label);
        capture(&mut command)
            .with_context(|| format!("{}: icf link --report", row.variant.label))?;
    }

    for row in &mut rows {
        if !row.ok() {
            continue;
        }
        let output = out.join(&row.variant.file);
        row.text = peer::text_size(&output)?;
        row.stripped = stripped_size(&output, &prepared.scratch.join("stripped.tmp"))?;
        if let Kind::Icf(_) = row.variant.kind {
            let path = reports.join(format!("{}.json", row.variant.file));
            let text = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            row.report = Some(
                serde_json::from_slice(&text)
                    .with_context(|| format!("parsing {}", path.display()))?,
            );
        }
    }
    check_behaviour(prepared, &out, &mut rows)?;
    verify_folds(prepared, icf, &mut rows);

    let mut fold_rss_kib = Vec::new();
    let mut fold_error = None;
    if let Some(info) = &prepared.synthetic {
        for mode in ["safe", "all"] {
            let folded = prepared.scratch.join(format!("fold-{mode}"));
            let _ = fs::remove_dir_all(&folded);
            let mut fold = Command::new(icf);
            fold.args(["fold", "--mode", mode, "--out-dir"])
                .arg(&folded)
                .args(&info.inputs);
            eprintln!("    icf fold --mode {mode} (peak RSS of icf alone)");
            match timed(&fold, &rss_file) {
                Ok((_, rss)) => fold_rss_kib.push((mode, rss)),
                Err(error) => {
                    let text = format!("{error:#}");
                    eprintln!("    FAILED: {}", first_error(&text));
                    fold_error = Some(text);
                }
            }
            let _ = fs::remove_dir_all(&folded);
        }
    }

    Ok(CorpusResult {
        name: prepared.name.clone(),
        description: prepared.description.clone(),
        rows,
        synthetic: prepared.synthetic.clone(),
        fold_rss_kib,
        fold_error,
    })
}

/// The first line of a failed command's output that says what went wrong.
fn first_error(text: &str) -> String {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    lines
        .find(|line| line.contains("error") || line.contains("undefined reference"))
        .unwrap_or(header)
        .trim()
        .to_owned()
}

/// Runs `command` under GNU time: its wall time and peak RSS (KiB).
fn timed(command: &Command, rss_file: &Path) -> Result<(Duration, u64)> {
    let mut wrapped = Command::new(GNU_TIME);
    wrapped
        .args(["-f", "%M", "-o"])
        .arg(rss_file)
        .arg(command.get_program())
        .args(command.get_args());
    copy_env(command, &mut wrapped);
    let started = Instant::now();
    capture(&mut wrapped)?;
    let wall = started.elapsed();
    let text =
        fs::read_to_string(rss_file).with_context(|| format!("reading {}", rss_file.display()))?;
    let rss = text
        .lines()
        .last()
        .and_then(|line| line.trim().parse().ok())
        .with_context(|| format!("no peak RSS in {}: `{text}`", rss_file.display()))?;
    Ok((wall, rss))
}

/// Whether `binary` is an AArch64 ELF file (`e_machine` is `EM_AARCH64`).
fn is_aarch64(binary: &Path) -> bool {
    let mut header = [0u8; 20];
    fs::File::open(binary)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut header))
        .is_ok_and(|()| {
            header.starts_with(b"\x7fELF") && u16::from_le_bytes([header[18], header[19]]) == 183
        })
}

/// Size of `binary` after `strip -o` (the cross toolchain's strip for AArch64).
fn stripped_size(binary: &Path, scratch: &Path) -> Result<u64> {
    let strip = if is_aarch64(binary) {
        "aarch64-linux-gnu-strip"
    } else {
        "strip"
    };
    let mut strip = Command::new(strip);
    strip.arg("-o").arg(scratch).arg(binary);
    capture(&mut strip)?;
    let size = fs::metadata(scratch)
        .with_context(|| format!("reading {}", scratch.display()))?
        .len();
    fs::remove_file(scratch).with_context(|| format!("removing {}", scratch.display()))?;
    Ok(size)
}

/// What one run of a binary printed: exit status, stdout, stderr.
type Observation = (Option<i32>, Vec<u8>, Vec<u8>);

/// Every observation of `binary` for `check`, with a name for each.
fn observe(check: &Check, binary: &Path) -> Result<Vec<(String, Observation)>> {
    match check {
        Check::Ripgrep => peer::SEARCHES
            .iter()
            .map(|search| {
                Ok((
                    format!("rg {}", search.join(" ")),
                    peer::run_search(binary, search)?,
                ))
            })
            .collect(),
        Check::Run(args) => {
            let mut command = if is_aarch64(binary) {
                let mut qemu = Command::new("qemu-aarch64");
                qemu.args(["-L", "/usr/aarch64-linux-gnu"]).arg(binary);
                qemu
            } else {
                Command::new(binary)
            };
            command.args(args);
            let output = command
                .output()
                .with_context(|| format!("could not start `{}`", display(&command)))?;
            Ok(vec![(
                display(&command),
                (output.status.code(), output.stdout, output.stderr),
            )])
        }
    }
}

/// Proves each `icf link` output that behaves like the plain link with
/// `icf verify` (both linked again with `-q`, untimed): a failure is a
/// difference in behaviour.
fn verify_folds(prepared: &Prepared, icf: &Path, rows: &mut [Row]) {
    for row in rows.iter_mut() {
        let Kind::Icf(mode) = row.variant.kind else {
            continue;
        };
        if !row.ok() || matches!(row.behaviour, Behaviour::Differs(_)) {
            continue;
        }
        eprintln!("    icf verify: {}", row.variant.label);
        // opt_lite is C++ (LLVM's libraries): inline functions are one
        // function in every unit, whichever copy a link keeps.
        let assume_odr = prepared.name.starts_with("llvm");
        match peer::verify_link(
            &prepared.corpus,
            &prepared.scratch,
            icf,
            mode,
            row.variant.linker,
            assume_odr,
        ) {
            Ok(summary) => eprintln!("    {summary}"),
            Err(error) => {
                row.behaviour = Behaviour::Differs(format!("{error:#}"));
            }
        }
    }
}

/// Compares every output with the plain lld link's; differences are kept
/// under `scratch/diff/` and recorded in the rows.
fn check_behaviour(prepared: &Prepared, out: &Path, rows: &mut [Row]) -> Result<()> {
    let Some(reference) = rows.iter().position(|row| row.ok()) else {
        return Ok(());
    };
    rows[reference].behaviour = Behaviour::Reference;
    let reference_binary = out.join(&rows[reference].variant.file);
    let expected = observe(&prepared.check, &reference_binary)?;
    if let Check::Run(_) = prepared.check {
        let (name, (status, _, stderr)) = &expected[0];
        ensure!(
            *status == Some(0),
            "the plain link's `{name}` exits with {status:?}: {}",
            String::from_utf8_lossy(stderr)
        );
    }
    let diff_dir = prepared.scratch.join("diff");
    let _ = fs::remove_dir_all(&diff_dir);
    for (index, row) in rows.iter_mut().enumerate() {
        if index == reference || !row.ok() {
            continue;
        }
        eprintln!("    behaviour: {}", row.variant.label);
        let binary = out.join(&row.variant.file);
        let actual = observe(&prepared.check, &binary)?;
        let differing = expected
            .iter()
            .zip(&actual)
            .find(|((_, want), (_, got))| want != got);
        if let Some(((name, want), (_, got))) = differing {
            fs::create_dir_all(&diff_dir)
                .with_context(|| format!("creating {}", diff_dir.display()))?;
            // Keep the binary too: the next bench overwrites `out/`.
            let kept = diff_dir.join(&row.variant.file);
            fs::copy(&binary, &kept).with_context(|| format!("copying {}", binary.display()))?;
            for (suffix, observation) in [("expected", want), ("actual", got)] {
                let base = diff_dir.join(format!("{}.{suffix}", row.variant.file));
                let status = format!("{:?}\n", observation.0);
                for (ext, bytes) in [
                    ("status", status.as_bytes()),
                    ("stdout", &observation.1[..]),
                    ("stderr", &observation.2[..]),
                ] {
                    let path = base.with_extension(format!("{suffix}.{ext}"));
                    fs::write(&path, bytes)
                        .with_context(|| format!("writing {}", path.display()))?;
                }
            }
            row.behaviour = Behaviour::Differs(format!(
                "`{name}` differs from the plain lld link (exit {:?} vs {:?}); outputs and the \
                 binary kept in {}",
                got.0,
                want.0,
                diff_dir.display()
            ));
        }
    }
    Ok(())
}

/// One PASS/FAIL line.
#[derive(Debug)]
struct Target {
    corpus: String,
    name: &'static str,
    pass: bool,
    detail: String,
}

impl Target {
    fn line(&self) -> String {
        format!(
            "{} {}: {}: {}",
            if self.pass { "PASS" } else { "FAIL" },
            self.corpus,
            self.name,
            self.detail
        )
    }
}

/// Evaluates the targets of the module header on what was measured.
fn targets(results: &[CorpusResult]) -> Vec<Target> {
    let mut targets = Vec::new();
    for result in results {
        // Safe mode saves at least the best peer's --icf=all.
        let best = result.best_peer_all();
        for linker in ["lld", "bfd"] {
            let label = format!("icf safe + {linker}");
            let saved = result.row(&label).and_then(|row| result.saved_percent(row));
            let (pass, detail) = match (saved, best) {
                (Some(saved), Some((peer, best))) => (
                    saved >= best,
                    format!(
                        "{label} saves {saved:.2}% of .text, best peer {} {best:.2}%",
                        peer.variant.label
                    ),
                ),
                (None, _) => (false, format!("{label} did not link")),
                (_, None) => (false, "no peer --icf=all link succeeded".into()),
            };
            targets.push(Target {
                corpus: result.name.clone(),
                name: "safe saves >= best peer --icf=all",
                pass,
                detail,
            });
        }
        // icf link within LINK_TIME_LIMIT of plain lld (real corpora).
        if result.synthetic.is_none() {
            for mode in ["safe", "all"] {
                let label = format!("icf {mode} + lld");
                let times = result
                    .row(&label)
                    .and_then(Row::best)
                    .zip(result.row("lld").and_then(Row::best));
                let (pass, detail) = match times {
                    Some((icf, lld)) => {
                        let ratio = icf.as_secs_f64() / lld.as_secs_f64();
                        (
                            ratio <= LINK_TIME_LIMIT,
                            format!(
                                "{label} {} vs plain lld {}: {ratio:.2}x (limit {LINK_TIME_LIMIT}x)",
                                ms(icf),
                                ms(lld)
                            ),
                        )
                    }
                    None if result.row(&label).is_none() => {
                        (false, format!("{label} did not link"))
                    }
                    None => (false, "the plain lld link failed".into()),
                };
                targets.push(Target {
                    corpus: result.name.clone(),
                    name: "icf link time <= 1.25x plain lld",
                    pass,
                    detail,
                });
            }
        }
        // icf's own peak RSS on synthetic corpora.
        if let Some(info) = &result.synthetic {
            let limit_kib = 2 * info.code_bytes / 1024 + RSS_FIXED_OVERHEAD_MIB * 1024;
            let peak = result.fold_rss_kib.iter().map(|&(_, rss)| rss).max();
            let (pass, detail) = match peak {
                Some(peak) => (
                    peak <= limit_kib,
                    format!(
                        "icf fold peak RSS {} (safe/all: {}) vs limit 2 x {} code + {RSS_FIXED_OVERHEAD_MIB} MiB = {}",
                        mib(peak * 1024),
                        result
                            .fold_rss_kib
                            .iter()
                            .map(|&(_, rss)| mib(rss * 1024))
                            .collect::<Vec<_>>()
                            .join(" / "),
                        human_bytes(info.code_bytes),
                        mib(limit_kib * 1024)
                    ),
                ),
                None => (
                    false,
                    match &result.fold_error {
                        Some(error) => format!("icf fold failed: {}", first_error(error)),
                        None => "icf fold was not measured".into(),
                    },
                ),
            };
            targets.push(Target {
                corpus: result.name.clone(),
                name: "icf peak RSS <= 2 x code + 100 MiB",
                pass,
                detail,
            });
        }
    }
    // Scaling: consecutive synthetic sizes.
    let synthetic: Vec<&CorpusResult> = results.iter().filter(|r| r.synthetic.is_some()).collect();
    for pair in synthetic.windows(2) {
        let (small, large) = (pair[0], pair[1]);
        let (Some(a), Some(b)) = (&small.synthetic, &large.synthetic) else {
            continue;
        };
        let growth = b.functions as f64 / a.functions as f64;
        let limit = SCALING_SLACK * growth;
        for mode in ["safe", "all"] {
            let label = format!("icf {mode} + lld");
            let times = small
                .row(&label)
                .and_then(Row::best)
                .zip(large.row(&label).and_then(Row::best));
            let (pass, detail) = match times {
                Some((t_small, t_large)) => {
                    let ratio = t_large.as_secs_f64() / t_small.as_secs_f64();
                    (
                        ratio <= limit,
                        format!(
                            "{label}: {} functions {}, {} functions {}: {ratio:.2}x for {growth:.2}x the functions (limit {limit:.2}x)",
                            a.functions,
                            ms(t_small),
                            b.functions,
                            ms(t_large)
                        ),
                    )
                }
                None => (false, format!("{label} failed at one of the sizes")),
            };
            targets.push(Target {
                corpus: format!("{}..{}", small.name, b.functions),
                name: "icf link time scales linearly",
                pass,
                detail,
            });
        }
    }
    targets
}

/// Where and under what conditions the bench ran.
#[derive(Debug)]
struct Environment {
    icf_revision: String,
    load_before: String,
    load_after: String,
    runs: u32,
    elapsed: Duration,
}

/// `git describe`-like: the commit, and whether crates/ has uncommitted changes.
fn icf_revision() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    match git(&["status", "--porcelain", "--", "crates"]) {
        Some(changes) if !changes.is_empty() => {
            format!("{commit} + uncommitted changes in crates/")
        }
        _ => commit,
    }
}

/// `/proc/loadavg`'s three averages.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".into())
}

fn render_markdown(
    results: &[CorpusResult],
    targets: &[Target],
    environment: &Environment,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "## icf benchmark\n");
    let _ = writeln!(
        md,
        "icf {}; {} cores; best of {} rounds (round-robin); load average {} before, {} after; \
         took {:.0} s.\n",
        environment.icf_revision,
        std::thread::available_parallelism().map_or(0, usize::from),
        environment.runs,
        environment.load_before,
        environment.load_after,
        environment.elapsed.as_secs_f64()
    );
    let _ = writeln!(
        md,
        "*saved*: `.text` saved against the same linker without ICF; *÷ best*: that saving \
         divided by the best peer `--icf=all` saving (for `.text`) or the file size divided by \
         the smallest stripped peer output; *÷ lld*: against the plain lld link. Peak RSS is the \
         largest single process of the link (driver, linker or icf). icf's *overhead* is its \
         link's wall time minus the plain link with the same linker; the *rest* of it is what \
         its four phases leave out (resolving archives, folding, writing the rewritten copies).\n"
    );
    for result in results {
        let _ = writeln!(md, "### {}\n\n{}\n", result.name, result.description);
        let best = result.best_peer_all();
        let best_stripped = result.best_peer_stripped();
        let lld = result.row("lld");
        md.push_str(
            "| link | .text bytes | saved | ÷ best | stripped bytes | ÷ best | wall ms | ÷ lld | peak RSS MiB | ÷ lld | behaviour |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
        );
        for row in &result.rows {
            if let Some(failure) = &row.failure {
                let _ = writeln!(
                    md,
                    "| {} | link failed | | | | | | | | | `{}` |",
                    row.variant.label,
                    failure.summary.replace('|', "\\|").replace('`', "'")
                );
                continue;
            }
            let saved = result.saved_percent(row);
            let saved_text = saved.map_or(String::new(), |s| format!("{s:.2}%"));
            let versus_best = match (saved, best) {
                (Some(s), Some((_, b))) if b > 0.0 => format!("{:.2}", s / b),
                _ => String::new(),
            };
            let stripped_ratio = best_stripped.map_or(String::new(), |b| {
                format!("{:.3}", row.stripped as f64 / b as f64)
            });
            let best_wall = row.best();
            let time_ratio = match (best_wall, lld.and_then(Row::best)) {
                (Some(t), Some(l)) => format!("{:.2}", t.as_secs_f64() / l.as_secs_f64()),
                _ => String::new(),
            };
            let rss_ratio = lld.map_or(String::new(), |l| {
                format!("{:.2}", row.rss_kib as f64 / l.rss_kib.max(1) as f64)
            });
            let behaviour = match &row.behaviour {
                Behaviour::Reference => "reference".to_owned(),
                Behaviour::Same => "same".to_owned(),
                Behaviour::Differs(why) => format!("**DIFFERS**: {}", why.replace('|', "\\|")),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {saved_text} | {versus_best} | {} | {stripped_ratio} | {} | {time_ratio} | {:.1} | {rss_ratio} | {behaviour} |",
                row.variant.label,
                thousands(row.text),
                thousands(row.stripped),
                best_wall.map_or(String::new(), ms),
                row.rss_kib as f64 / 1024.0,
            );
        }
        if let Some((peer, saving)) = best {
            let _ = writeln!(
                md,
                "\nBest peer `--icf=all`: {} ({saving:.2}% of .text).",
                peer.variant.label
            );
        }

        md.push_str(
            "\n| icf | load ms | lift ms | partition ms | plan ms | icf link ms | plain link ms | overhead ms | overhead ÷ plain | rest of overhead ms | functions | code bytes | aliases | thunks | saved bytes |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for row in result.rows.iter().filter(|row| row.report.is_some()) {
            let Some(report) = &row.report else { continue };
            let phase = |name: &str| report["timings_ms"][name].as_f64().unwrap_or(f64::NAN);
            let total = |name: &str| report["totals"][name].as_u64().unwrap_or(0);
            let plain = result.row(row.variant.plain_label()).and_then(Row::best);
            let phases = ["load", "lift", "partition", "plan"]
                .map(phase)
                .iter()
                .sum::<f64>();
            // What the phases leave out: archive resolution, folding, writing the copies.
            let (overhead, ratio, rest) = match (row.best(), plain) {
                (Some(t), Some(p)) => {
                    let overhead = t.as_secs_f64() - p.as_secs_f64();
                    (
                        format!("{:.0}", overhead * 1e3),
                        format!("{:.2}", overhead / p.as_secs_f64()),
                        format!("{:.0}", overhead * 1e3 - phases),
                    )
                }
                _ => (String::new(), String::new(), String::new()),
            };
            let _ = writeln!(
                md,
                "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} | {overhead} | {ratio} | {rest} | {} | {} | {} | {} | {} |",
                row.variant.label,
                phase("load"),
                phase("lift"),
                phase("partition"),
                phase("plan"),
                row.best().map_or(String::new(), ms),
                plain.map_or(String::new(), ms),
                thousands(total("functions")),
                thousands(total("code_bytes")),
                thousands(total("aliases")),
                thousands(total("thunks")),
                thousands(total("saved_bytes")),
            );
        }
        if !result.fold_rss_kib.is_empty() {
            let _ = writeln!(
                md,
                "\nicf alone (`icf fold`, no linker), peak RSS: {}.",
                result
                    .fold_rss_kib
                    .iter()
                    .map(|&(mode, rss)| format!("{mode} {}", mib(rss * 1024)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        md.push('\n');
    }

    let synthetic: Vec<&CorpusResult> = results.iter().filter(|r| r.synthetic.is_some()).collect();
    if !synthetic.is_empty() {
        md.push_str(
            "### synthetic scaling\n\n\
             | functions | code bytes | plain lld ms | icf safe + lld ms | × previous | icf all + lld ms | × previous | icf fold RSS MiB (safe / all) | RSS limit MiB |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        let mut previous: Option<&CorpusResult> = None;
        for result in &synthetic {
            let Some(info) = &result.synthetic else {
                continue;
            };
            let time = |r: &CorpusResult, label: &str| r.row(label).and_then(Row::best);
            let growth =
                |label: &str| match (previous.and_then(|p| time(p, label)), time(result, label)) {
                    (Some(a), Some(b)) => format!("{:.2}", b.as_secs_f64() / a.as_secs_f64()),
                    _ => String::new(),
                };
            let fold = result
                .fold_rss_kib
                .iter()
                .map(|&(_, rss)| format!("{:.0}", rss as f64 / 1024.0))
                .collect::<Vec<_>>()
                .join(" / ");
            let limit =
                (2 * info.code_bytes) as f64 / (1 << 20) as f64 + RSS_FIXED_OVERHEAD_MIB as f64;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {fold} | {limit:.0} |",
                thousands(info.functions as u64),
                thousands(info.code_bytes),
                time(result, "lld").map_or(String::new(), ms),
                time(result, "icf safe + lld").map_or(String::new(), ms),
                growth("icf safe + lld"),
                time(result, "icf all + lld").map_or(String::new(), ms),
                growth("icf all + lld"),
            );
            previous = Some(result);
        }
        md.push('\n');
    }

    md.push_str("### targets\n\n");
    for target in targets {
        let _ = writeln!(md, "- {}", target.line());
    }
    md
}

fn render_json(results: &[CorpusResult], targets: &[Target], environment: &Environment) -> Value {
    let corpora: Vec<Value> = results
        .iter()
        .map(|result| {
            let best = result.best_peer_all();
            let best_stripped = result.best_peer_stripped();
            let lld = result.row("lld");
            let rows: Vec<Value> = result
                .rows
                .iter()
                .map(|row| {
                    let saved = result.saved_percent(row);
                    let ratio = |a: f64, b: Option<f64>| b.filter(|b| *b > 0.0).map(|b| a / b);
                    let best_ms = row.best().map(|t| t.as_secs_f64() * 1e3);
                    let lld_ms = lld.and_then(Row::best).map(|t| t.as_secs_f64() * 1e3);
                    let plain_ms = result
                        .row(row.variant.plain_label())
                        .and_then(Row::best)
                        .map(|t| t.as_secs_f64() * 1e3);
                    json!({
                        "variant": row.variant.label,
                        "linker": row.variant.linker.name(),
                        "icf": match row.variant.kind {
                            Kind::Peer(flag) => json!({"tool": "linker", "flag": flag}),
                            Kind::Icf(mode) => json!({"tool": "icf link", "mode": mode}),
                        },
                        "failure": row.failure.as_ref().map(|f| json!({"error": f.summary, "log": f.log})),
                        "text_bytes": row.ok().then_some(row.text),
                        "text_saved_percent": saved,
                        "text_saved_vs_best_peer_all": saved.and_then(|s| ratio(s, best.map(|b| b.1))),
                        "stripped_bytes": row.ok().then_some(row.stripped),
                        "stripped_vs_best_peer": best_stripped.filter(|_| row.ok()).map(|b| row.stripped as f64 / b as f64),
                        "wall_ms_best": best_ms,
                        "wall_ms_rounds": row.walls.iter().map(|t| t.as_secs_f64() * 1e3).collect::<Vec<_>>(),
                        "wall_vs_plain_lld": best_ms.and_then(|t| ratio(t, lld_ms)),
                        "overhead_ms_vs_plain_same_linker": match row.variant.kind {
                            Kind::Icf(_) => best_ms.zip(plain_ms).map(|(t, p)| t - p),
                            Kind::Peer(_) => None,
                        },
                        "peak_rss_kib": row.ok().then_some(row.rss_kib),
                        "peak_rss_vs_plain_lld": lld.filter(|_| row.ok()).map(|l| row.rss_kib as f64 / l.rss_kib.max(1) as f64),
                        "behaviour": match &row.behaviour {
                            Behaviour::Reference => json!("reference"),
                            Behaviour::Same => json!("same"),
                            Behaviour::Differs(why) => json!({"differs": why}),
                        },
                        "icf_timings_ms": row.report.as_ref().map(|r| r["timings_ms"].clone()),
                        "icf_totals": row.report.as_ref().map(|r| r["totals"].clone()),
                    })
                })
                .collect();
            json!({
                "name": result.name,
                "description": result.description,
                "best_peer_icf_all": best.map(|(row, saved)| json!({"variant": row.variant.label, "text_saved_percent": saved})),
                "synthetic": result.synthetic.as_ref().map(|info| json!({
                    "functions": info.functions,
                    "objects": info.objects,
                    "code_bytes": info.code_bytes,
                    "copies": info.copies,
                    "icf_fold_peak_rss_kib": result.fold_rss_kib.iter().map(|&(mode, rss)| (mode.to_owned(), json!(rss))).collect::<serde_json::Map<_, _>>(),
                })),
                "links": rows,
            })
        })
        .collect();
    json!({
        "icf_revision": environment.icf_revision,
        "finished_unix": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "cores": std::thread::available_parallelism().map_or(0, usize::from),
        "rounds": environment.runs,
        "load_average_before": environment.load_before,
        "load_average_after": environment.load_after,
        "elapsed_seconds": environment.elapsed.as_secs_f64(),
        "rss_fixed_overhead_mib": RSS_FIXED_OVERHEAD_MIB,
        "corpora": corpora,
        "targets": targets.iter().map(|t| json!({
            "corpus": t.corpus,
            "target": t.name,
            "pass": t.pass,
            "detail": t.detail,
        })).collect::<Vec<_>>(),
    })
}

/// Writes `text` to `path` unless it already holds exactly that.
fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

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

fn ms(duration: Duration) -> String {
    format!("{:.0}", duration.as_secs_f64() * 1e3)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

fn human_bytes(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        mib(bytes)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// `1234567` as `1,234,567`.
fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
