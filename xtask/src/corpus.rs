//! `cargo xtask corpus NAME`: real-world link inputs, recorded once and cached
//! under `target/corpus/NAME/`, so benchmarks and peer checks can replay the
//! exact final link with any linker.
//!
//! The only corpus today is ripgrep 15.2.0 from crates.io, built with
//! `cargo install` and `-C linker=shim.sh`. rustc runs the shim for every link
//! of the build (build scripts too); the shim records only the link whose
//! output is `.../deps/rg-<hash>` (the `rg` binary, before cargo copies it
//! out), then links exactly as asked with `cc`. Recording means copying every
//! object and archive argument (`*.o`, `*.rlib`, `*.a`) into `inputs/` (rustc's
//! `symbols.o` lives in a temporary directory) and writing the command, input
//! paths rewritten, one argument per line, to `link-args.txt`; the first line
//! is the compiler driver. The shim writes into `staging/` and renames at the
//! end, so a half-recorded link never looks complete.
//!
//! Assumes a Linux host whose rustc links with a `cc`-style driver (rustc's
//! default on x86_64 Linux), and a bash for the shim.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

use crate::process::{cargo, display, run, shell_quote};

/// The ripgrep release the corpus is built from; `--locked` pins its dependencies.
const RIPGREP_VERSION: &str = "15.2.0";

/// One recorded final link.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// `target/corpus/NAME`: holds `link-args.txt`, `inputs/` and scratch outputs.
    pub dir: PathBuf,
    /// The compiler driver rustc ran (`cc`).
    pub driver: String,
    /// Every argument after the driver, input paths pointing into `dir/inputs/`.
    pub args: Vec<String>,
    /// The object and archive inputs, in command-line order.
    pub inputs: Vec<PathBuf>,
    /// Index in `args` of the output path (the argument after `-o`).
    pub output_arg_index: usize,
}

/// The linkers a corpus replays its link with: the one list of them
/// (`icf-fixtures`), whose `name` is what `-fuse-ld=` takes.
pub use icf_fixtures::Linker;

/// `cargo xtask corpus NAME`: builds the corpus unless cached and prints its directory.
pub fn run_task(name: &str) -> Result<()> {
    let corpus = match name {
        "ripgrep" => ripgrep_corpus()?,
        other => bail!("unknown corpus `{other}` (known: ripgrep)"),
    };
    eprintln!(
        "corpus {name}: {} inputs, link command in {}",
        corpus.inputs.len(),
        corpus.dir.join("link-args.txt").display()
    );
    println!("{}", corpus.dir.display());
    Ok(())
}

/// The ripgrep corpus, built on first use (about a minute on 2 cores) and cached after.
pub fn ripgrep_corpus() -> Result<Corpus> {
    let dir = corpus_root()?.join("ripgrep");
    if let Some(corpus) = Corpus::load_if_complete(&dir)? {
        return Ok(corpus);
    }
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let shim = dir.join("shim.sh");
    write_shim(&shim, &dir, "rg")?;

    // The dependencies stay compiled between attempts; dropping ripgrep's own
    // fingerprints makes cargo rebuild and so relink `rg` through the shim.
    let build = dir.join("build");
    forget_package(&build.join("release/.fingerprint"), "ripgrep")?;

    let mut flags = OsString::from("-Csave-temps\x1f-Clinker=");
    flags.push(&shim);
    let mut install = cargo();
    install
        .args(["install", &format!("ripgrep@{RIPGREP_VERSION}")])
        .args(["--locked", "--force", "--root"])
        .arg(dir.join("root"))
        .arg("--target-dir")
        .arg(&build)
        .current_dir(&dir)
        // The encoded form wins over RUSTFLAGS and survives spaces in paths.
        .env("CARGO_ENCODED_RUSTFLAGS", flags)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR");
    eprintln!("==> {}", display(&install));
    run(&mut install)?;

    Corpus::load_if_complete(&dir)?.with_context(|| {
        format!(
            "the build finished but the `rg` link was not recorded in {}; was {} used as the linker?",
            dir.display(),
            shim.display()
        )
    })
}

/// `target/corpus/` of this workspace, absolute.
pub fn corpus_root() -> Result<PathBuf> {
    Ok(workspace_root()?.join("target/corpus"))
}

/// The workspace root: the parent of xtask's manifest directory.
pub fn workspace_root() -> Result<PathBuf> {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = xtask.join("..");
    root.canonicalize()
        .with_context(|| format!("resolving the workspace root {}", root.display()))
}

impl Corpus {
    /// Reads `dir/link-args.txt`; `None` when it or any input it names is missing.
    pub fn load_if_complete(dir: &Path) -> Result<Option<Corpus>> {
        let path = dir.join("link-args.txt");
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(error).with_context(|| format!("reading {}", path.display()));
            }
        };
        let corpus = Corpus::parse(dir, &text).with_context(|| format!("in {}", path.display()))?;
        Ok(corpus
            .inputs
            .iter()
            .all(|input| input.is_file())
            .then_some(corpus))
    }

    fn parse(dir: &Path, text: &str) -> Result<Corpus> {
        let mut lines = text.lines().map(str::to_owned);
        let driver = lines.next().context("empty link command")?;
        let args: Vec<String> = lines.collect();
        let inputs_dir = dir.join("inputs");
        let inputs = args
            .iter()
            .map(PathBuf::from)
            .filter(|arg| arg.starts_with(&inputs_dir))
            .collect::<Vec<_>>();
        ensure!(
            !inputs.is_empty(),
            "no inputs under {}",
            inputs_dir.display()
        );
        let output_arg_index = args
            .iter()
            .position(|arg| arg == "-o")
            .map(|at| at + 1)
            .filter(|&at| at < args.len())
            .context("no `-o OUTPUT` in the link command")?;
        Ok(Corpus {
            dir: dir.to_owned(),
            driver,
            args,
            inputs,
            output_arg_index,
        })
    }

    /// The recorded link, writing `output` and linking with `linker`.
    ///
    /// rustc's own linker choice (`-fuse-ld=...` and the `-B.../gcc-ld`
    /// directory of its bundled rust-lld) is dropped and replaced by
    /// `icf-fixtures`' choice of `linker` ([`Linker::driver_flags`]);
    /// `extra` (e.g. `-Wl,--icf=all`) goes last.
    pub fn link_command(&self, linker: Linker, output: &Path, extra: &[&str]) -> Result<Command> {
        let mut command = Command::new(&self.driver);
        for (index, arg) in self.args.iter().enumerate() {
            if index == self.output_arg_index {
                command.arg(output);
            } else if !(arg.starts_with("-fuse-ld=")
                || arg.starts_with("-B") && arg.trim_end_matches('/').ends_with("gcc-ld"))
            {
                command.arg(arg);
            }
        }
        command.args(linker.driver_flags(&self.driver));
        command.args(extra);
        Ok(command)
    }
}

/// Removes cargo's fingerprint directories of `package` (named `PACKAGE-HASH`).
pub(crate) fn forget_package(fingerprints: &Path, package: &str) -> Result<()> {
    let entries = match fs::read_dir(fingerprints) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(error).with_context(|| format!("listing {}", fingerprints.display()));
        }
    };
    let prefix = format!("{package}-");
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", fingerprints.display()))?;
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let path = entry.path();
            fs::remove_dir_all(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

/// Writes the recording linker shim (see the module header) as an executable.
fn write_shim(path: &Path, corpus_dir: &Path, binary: &str) -> Result<()> {
    let dir = corpus_dir
        .to_str()
        .with_context(|| format!("{} is not UTF-8", corpus_dir.display()))?;
    let text = SHIM
        .replace("@CORPUS_DIR@", &shell_quote(dir))
        .replace("@BINARY@", &shell_quote(binary));
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", path.display()))
}

const SHIM: &str = r#"#!/usr/bin/env bash
# Written by `cargo xtask corpus` (xtask/src/corpus.rs); rewritten on every build.
#
# rustc runs this as its linker. For the link whose output is
# .../deps/BINARY-<hash>, it copies every object and archive argument into
# inputs/, writes the command (inputs rewritten, one argument per line, the
# driver first) to link-args.txt, then links as asked. Other links (build
# scripts) only pass through to cc.
set -euo pipefail

corpus_dir=@CORPUS_DIR@
binary=@BINARY@

# A long command line reaches us as a response file (@FILE, one argument per
# line); expand it so the recording holds the real arguments.
args=()
for arg in "$@"; do
  if [[ $arg == @* && -f ${arg:1} ]]; then
    mapfile -t expanded < "${arg:1}"
    args+=("${expanded[@]}")
  else
    args+=("$arg")
  fi
done

output=
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
  if [[ ${args[i]} == -o ]]; then output=${args[i + 1]}; fi
done

if [[ $output =~ /deps/${binary}-[0-9a-f]+$ ]]; then
  staging=$corpus_dir/staging
  rm -rf "$staging"
  mkdir -p "$staging/inputs"
  declare -A taken=()
  recorded=(cc)
  previous=
  for ((i = 0; i < ${#args[@]}; i++)); do
    arg=${args[i]}
    if [[ $previous != -o && $arg != -* && $arg =~ \.(o|rlib|a)$ && -f $arg ]]; then
      name=${arg##*/}
      if [[ -n ${taken[$name]:-} ]]; then name=$i-$name; fi
      taken[$name]=1
      cp "$arg" "$staging/inputs/$name"
      arg=$corpus_dir/inputs/$name
    fi
    recorded+=("$arg")
    previous=${args[i]}
  done
  printf '%s\n' "${recorded[@]}" > "$staging/link-args.txt"
  rm -rf "$corpus_dir/inputs" "$corpus_dir/link-args.txt"
  mv "$staging/inputs" "$corpus_dir/inputs"
  mv "$staging/link-args.txt" "$corpus_dir/link-args.txt"
  rmdir "$staging"
fi

exec cc "$@"
"#;
