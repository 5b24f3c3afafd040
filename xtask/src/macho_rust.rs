//! `cargo xtask macho-rust [--target aarch64-apple-darwin|x86_64-apple-darwin]`:
//! real Rust code as Mach-O. ripgrep 15.2.0 is built for an Apple target
//! (rustup's std for it), its final link is recorded, and replayed four
//! ways with `ld64.lld-19 -dead_strip`: plain, lld's `--icf=all`, and
//! `icf link --strict` in safe and all mode. Prints the `__text` sizes.
//! Nothing runs: the program needs dyld and libSystem.
//!
//! There is no macOS SDK here. rustc links with `-C linker-flavor=ld64.lld`
//! (ld64's own arguments, `-syslibroot $SDKROOT`) through a recording shim
//! that, like `cargo xtask corpus`'s, copies the inputs of the `rg` link
//! into `target/corpus/ripgrep-TARGET/inputs/` and writes the command to
//! `link-args.txt`, then links against stub libraries (TAPI stubs for
//! `-lSystem -lc -lm -liconv` exporting only `dyld_stub_binder`) with
//! `-undefined dynamic_lookup`. The replays link against a `libSystem.tbd`
//! that exports exactly what that first link left undefined, so they need
//! no `dynamic_lookup`.
//!
//! The replays are rustc's own command (no `-e`: ld64's default entry
//! `_main`) on the inputs as built, debug information included.
//!
//! About 2 minutes on 2 cores the first time (the build), a few seconds
//! after (the links).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use clap::Args;
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};

use crate::corpus::{self, Corpus};
use crate::process::{self, cargo, display};

const RIPGREP_VERSION: &str = "15.2.0";
const LD64: &str = "ld64.lld-19";
/// The libraries rustc asks for on Apple targets.
const LIBRARIES: [&str; 4] = ["System", "c", "m", "iconv"];

#[derive(Debug, Args)]
pub struct MachoRustArgs {
    /// The Apple target to build ripgrep for.
    #[arg(long, default_value = "aarch64-apple-darwin", value_parser = ["aarch64-apple-darwin", "x86_64-apple-darwin"])]
    target: String,
}

pub fn run(args: &MachoRustArgs) -> Result<()> {
    ensure!(
        process::find_program(LD64).is_some(),
        "{LD64} is missing (`cargo xtask install-deps`)"
    );
    let icf = crate::peer::build_icf()?;
    let started = Instant::now();
    let corpus = recorded_link(&args.target)?;
    eprintln!("recorded in {:.1} s", started.elapsed().as_secs_f64());
    let dir = &corpus.dir;

    let started = Instant::now();
    let sdk = write_full_sdk(dir)?;
    let inputs = dir.join("inputs");
    let scratch = dir.join("links");
    fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let link = |output: &str, inputs: &Path, extra: &[&str], icf_mode: Option<&str>| {
        let mut command = replay(&corpus, &scratch.join(output), inputs, &sdk, extra)?;
        if let Some(mode) = icf_mode {
            let mut wrapped = Command::new(&icf);
            wrapped.args(["link", "--strict", "--mode", mode, "--"]);
            wrapped.arg(command.get_program()).args(command.get_args());
            command = wrapped;
        }
        let output_text = Command::output(&mut command)
            .with_context(|| format!("running `{}`", display(&command)))?;
        Ok::<_, anyhow::Error>((command, output_text))
    };
    let mut rows = Vec::new();
    for (name, extra, mode) in [
        ("plain", vec![], None),
        ("lld --icf=all", vec!["--icf=all"], None),
        ("icf link --mode safe", vec![], Some("safe")),
        ("icf link --mode all", vec![], Some("all")),
    ] {
        let file = name.replace([' ', '='], "_").replace("--", "");
        let (command, output) = link(&file, &inputs, &extra, mode)?;
        if !output.status.success() {
            bail!(
                "`{}` failed:\n{}",
                display(&command),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        rows.push((name, text_size(&scratch.join(&file))?));
    }

    let mut report = Command::new(&icf);
    report.args(["report", "--mode", "all"]);
    report.args(input_paths(&corpus, &inputs)?);
    let report = process::capture(&mut report)?;
    let summary: Vec<String> = String::from_utf8_lossy(&report.stdout)
        .lines()
        .take(3)
        .map(str::to_owned)
        .collect();

    println!(
        "ripgrep {RIPGREP_VERSION} for {}, `ld64.lld-19 -dead_strip`:",
        args.target
    );
    let plain = rows[0].1;
    println!("| link | __text bytes | saved |");
    println!("|---|---:|---:|");
    for (name, size) in &rows {
        println!(
            "| {name} | {size} | {:.2}% |",
            100.0 * (plain as f64 - *size as f64) / plain as f64
        );
    }
    println!("icf report --mode all on the same inputs:");
    for line in summary {
        println!("  {line}");
    }
    println!(
        "replays took {:.1} s: {} with its inputs from {}, `-syslibroot {}` \
         (lld: `--icf=all` added; icf: run by `{} link --strict --mode MODE --`)",
        started.elapsed().as_secs_f64(),
        dir.join("link-args.txt").display(),
        inputs.display(),
        sdk.display(),
        icf.display()
    );
    Ok(())
}

/// `target/corpus/ripgrep-TARGET`, built and recorded unless it already is.
fn recorded_link(target: &str) -> Result<Corpus> {
    let dir = corpus::corpus_root()?.join(format!("ripgrep-{target}"));
    let binary = dir.join("root/bin/rg");
    if let Some(corpus) = Corpus::load_if_complete(&dir)?
        && binary.is_file()
    {
        return Ok(corpus);
    }
    let mut rustup = Command::new("rustup");
    rustup.args(["target", "add", target]);
    eprintln!("==> {}", display(&rustup));
    process::run(&mut rustup).context("the Apple target's std could not be installed")?;

    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let stub_sdk = dir.join("sdk-stub");
    write_sdk(&stub_sdk, &[])?;
    let shim = dir.join("shim.sh");
    let quoted = |path: &Path| -> Result<String> {
        let text = path
            .to_str()
            .with_context(|| format!("{} is not UTF-8", path.display()))?;
        Ok(process::shell_quote(text))
    };
    fs::write(&shim, SHIM.replace("@CORPUS_DIR@", &quoted(&dir)?))
        .with_context(|| format!("writing {}", shim.display()))?;
    fs::set_permissions(&shim, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", shim.display()))?;

    let build = dir.join("build");
    corpus::forget_package(&build.join(target).join("release/.fingerprint"), "ripgrep")?;
    let env_target = target.to_uppercase().replace('-', "_");
    let mut install = cargo();
    install
        .args(["install", &format!("ripgrep@{RIPGREP_VERSION}")])
        .args(["--locked", "--force", "--target", target, "--root"])
        .arg(dir.join("root"))
        .arg("--target-dir")
        .arg(&build)
        .current_dir(&dir)
        .env(format!("CARGO_TARGET_{env_target}_LINKER"), &shim)
        .env(
            format!("CARGO_TARGET_{env_target}_RUSTFLAGS"),
            "-Clinker-flavor=ld64.lld",
        )
        .env("SDKROOT", &stub_sdk)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR");
    eprintln!("==> {}", process::shell_line(&install));
    process::run(&mut install)?;
    let corpus = Corpus::load_if_complete(&dir)?
        .with_context(|| format!("the `rg` link was not recorded in {}", dir.display()))?;
    ensure!(binary.is_file(), "{} is missing", binary.display());
    Ok(corpus)
}

/// A `-syslibroot` directory whose `usr/lib` holds a TAPI stub for each of
/// [`LIBRARIES`]; libSystem exports `dyld_stub_binder` and `exports`.
fn write_sdk(dir: &Path, exports: &[String]) -> Result<PathBuf> {
    let lib = dir.join("usr/lib");
    fs::create_dir_all(&lib).with_context(|| format!("creating {}", lib.display()))?;
    for name in LIBRARIES {
        let mut symbols = vec!["dyld_stub_binder".to_owned()];
        if name == "System" {
            symbols.extend(exports.iter().cloned());
        }
        let install_name = if name == "System" {
            "libSystem.B".to_owned()
        } else {
            format!("lib{name}")
        };
        let text = format!(
            "--- !tapi-tbd\ntbd-version:     4\ntargets:         [ x86_64-macos, arm64-macos ]\n\
             install-name:    '/usr/lib/{install_name}.dylib'\ncurrent-version: 1311\nexports:\n\
             \x20 - targets:         [ x86_64-macos, arm64-macos ]\n\
             \x20   symbols:         [ {} ]\n...\n",
            symbols.join(", ")
        );
        let path = lib.join(format!("lib{name}.tbd"));
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(dir.to_owned())
}

/// The SDK the replays link against: libSystem exports every symbol the
/// recorded link (`-undefined dynamic_lookup`) left undefined.
fn write_full_sdk(dir: &Path) -> Result<PathBuf> {
    let binary = dir.join("root/bin/rg");
    let data = fs::read(&binary).with_context(|| format!("reading {}", binary.display()))?;
    let file =
        object::File::parse(&*data).with_context(|| format!("parsing {}", binary.display()))?;
    let mut imports: Vec<String> = file
        .symbols()
        .filter(|symbol| symbol.is_undefined())
        .filter_map(|symbol| symbol.name().ok().map(str::to_owned))
        .collect();
    imports.sort();
    imports.dedup();
    ensure!(
        imports.iter().any(|name| name == "_write"),
        "{} imports no _write: not the program expected",
        binary.display()
    );
    write_sdk(&dir.join("sdk"), &imports)
}

/// The inputs of the recorded link, under `dir` instead of `inputs/`.
fn input_paths(corpus: &Corpus, dir: &Path) -> Result<Vec<PathBuf>> {
    corpus
        .inputs
        .iter()
        .map(|input| {
            let name = input.file_name().context("an input without a name")?;
            Ok(dir.join(name))
        })
        .collect()
}

/// The recorded link writing `output`, its inputs taken from `inputs`, its
/// `-syslibroot` `sdk`, with `extra` appended.
fn replay(
    corpus: &Corpus,
    output: &Path,
    inputs: &Path,
    sdk: &Path,
    extra: &[&str],
) -> Result<Command> {
    let mut command = Command::new(&corpus.driver);
    let inputs_dir = corpus.dir.join("inputs");
    let mut previous = "";
    for (index, arg) in corpus.args.iter().enumerate() {
        if index == corpus.output_arg_index {
            command.arg(output);
        } else if previous == "-syslibroot" {
            command.arg(sdk);
        } else if let Ok(name) = Path::new(arg).strip_prefix(&inputs_dir) {
            command.arg(inputs.join(name));
        } else {
            command.arg(arg);
        }
        previous = arg;
    }
    command.args(extra);
    Ok(command)
}

/// The size of a linked Mach-O program's `__text`.
fn text_size(path: &Path) -> Result<u64> {
    let data = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let file =
        object::File::parse(&*data).with_context(|| format!("parsing {}", path.display()))?;
    file.sections()
        .find(|section| section.name() == Ok("__text"))
        .map(|section| section.size())
        .with_context(|| format!("{} has no __text", path.display()))
}

const SHIM: &str = r#"#!/usr/bin/env bash
# Written by `cargo xtask macho-rust` (xtask/src/macho_rust.rs).
#
# rustc runs this as its linker, with ld64's arguments (-C
# linker-flavor=ld64.lld, so the first two are `-flavor darwin`). For the
# link whose output is .../deps/rg-<hash>, it copies every object and
# archive argument into inputs/ and writes the command (inputs rewritten,
# one argument per line, ld64.lld-19 first) to link-args.txt. Every link
# then runs against the stub SDK, leaving undefined symbols to dyld.
set -euo pipefail

corpus_dir=@CORPUS_DIR@

args=()
for arg in "$@"; do
  if [[ $arg == @* && -f ${arg:1} ]]; then
    mapfile -t expanded < "${arg:1}"
    args+=("${expanded[@]}")
  else
    args+=("$arg")
  fi
done
if [[ ${args[0]:-} == -flavor ]]; then args=("${args[@]:2}"); fi

output=
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
  if [[ ${args[i]} == -o ]]; then output=${args[i + 1]}; fi
done

if [[ $output =~ /deps/rg-[0-9a-f]+$ ]]; then
  staging=$corpus_dir/staging
  rm -rf "$staging"
  mkdir -p "$staging/inputs"
  declare -A taken=()
  recorded=(ld64.lld-19)
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
  rm -rf "$corpus_dir/inputs" "$corpus_dir/link-args.txt" "$corpus_dir/stripped"
  mv "$staging/inputs" "$corpus_dir/inputs"
  mv "$staging/link-args.txt" "$corpus_dir/link-args.txt"
  rmdir "$staging"
fi

exec ld64.lld-19 "${args[@]}" -undefined dynamic_lookup
"#;
