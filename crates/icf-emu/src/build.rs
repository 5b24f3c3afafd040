//! Building the freestanding test programs for the four platforms and
//! running them: Mach-O x86_64 and arm64 (run by [`crate::run`] in
//! unicorn), Linux x86-64 and AArch64 (run as `icf-fixtures` runs every
//! Linux program: natively, or under qemu-user on another host).
//!
//! Every program is its sources plus `fixtures/emu/rt.c` (the runtime:
//! system calls, printing, `mem*`, and `_start` on Linux), compiled by
//! clang-19 with `-O2 -ffreestanding -fno-builtin -fno-stack-protector` and
//! linked with no libc:
//!
//! - Mach-O: `ld64.lld-19 -arch {x86_64|arm64} -platform_version macos 11.0
//!   11.0 -syslibroot SDK -lSystem -e _main -o OUT OBJECTS...`, where SDK
//!   holds the `libSystem.tbd` stub [`write_sdk`] writes (no SDK needed).
//!   This gives classic dyld info; add `-fixup_chains` for chained fixups.
//! - ELF: `ld.lld-19 -static -e _start -o OUT OBJECTS...`.
//!
//! Outputs go into a directory the caller names ([`scratch_dir`] gives each
//! test its own); nothing is cached, a program builds in a fraction of a
//! second. Like `icf-fixtures`, a missing tool or a failing build panics
//! with the command line and its stderr.

use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use icf_fixtures::require_tool;

use crate::run::{Limits, run_macho_file};
use crate::{Arch, Error, RunOutput};

pub const CLANG: &str = "clang-19";
pub const LD64: &str = "ld64.lld-19";
pub const LD_ELF: &str = "ld.lld-19";

/// What a program is built for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Platform {
    MachoX86_64,
    MachoArm64,
    LinuxX86_64,
    LinuxAarch64,
}

impl Platform {
    pub const ALL: [Platform; 4] = [
        Platform::MachoX86_64,
        Platform::MachoArm64,
        Platform::LinuxX86_64,
        Platform::LinuxAarch64,
    ];

    /// clang's `-target`.
    pub fn triple(self) -> &'static str {
        match self {
            Platform::MachoX86_64 => "x86_64-apple-macos11",
            Platform::MachoArm64 => "arm64-apple-macos11",
            Platform::LinuxX86_64 => "x86_64-linux-gnu",
            Platform::LinuxAarch64 => "aarch64-linux-gnu",
        }
    }

    /// The Mach-O architecture, `None` for the ELF targets.
    pub fn macho_arch(self) -> Option<Arch> {
        match self {
            Platform::MachoX86_64 => Some(Arch::X86_64),
            Platform::MachoArm64 => Some(Arch::Arm64),
            Platform::LinuxX86_64 | Platform::LinuxAarch64 => None,
        }
    }

    /// A short name for file names and messages.
    pub fn label(self) -> &'static str {
        match self {
            Platform::MachoX86_64 => "macho-x86_64",
            Platform::MachoArm64 => "macho-arm64",
            Platform::LinuxX86_64 => "elf-x86_64",
            Platform::LinuxAarch64 => "elf-aarch64",
        }
    }
}

/// `fixtures/emu/`: `rt.h`, `rt.c` and the harness's own sample programs.
pub fn runtime_dir() -> PathBuf {
    icf_fixtures::source_dir().join("emu")
}

/// A fresh, empty `target/emu/<name>/` in the workspace, for one test's outputs.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = icf_fixtures::source_dir()
        .parent()
        .expect("the fixtures package sits inside the workspace root")
        .join("target/emu")
        .join(name);
    match fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => panic!("removing {}: {error}", dir.display()),
    }
    fs::create_dir_all(&dir).unwrap_or_else(|error| panic!("creating {}: {error}", dir.display()));
    dir
}

/// The compiler flags for `platform`, before `-c SOURCE -o OUTPUT`.
pub fn compile_flags(platform: Platform) -> Vec<String> {
    let mut flags = vec![
        "-target".to_owned(),
        platform.triple().to_owned(),
        "-O2".to_owned(),
        "-ffreestanding".to_owned(),
        "-fno-builtin".to_owned(),
        "-fno-stack-protector".to_owned(),
        "-Wall".to_owned(),
        "-I".to_owned(),
    ];
    flags.push(runtime_dir().display().to_string());
    flags
}

/// `clang-19 FLAGS EXTRA -c SOURCE -o OUTPUT`.
pub fn compile_command(
    source: &Path,
    platform: Platform,
    output: &Path,
    extra_flags: &[&str],
) -> Command {
    let mut command = Command::new(CLANG);
    command
        .args(compile_flags(platform))
        .args(extra_flags)
        .arg("-c")
        .arg(source)
        .arg("-o")
        .arg(output);
    command
}

/// Compiles `source` for `platform` to `out_dir/<stem>.<platform label>.o`.
pub fn compile(source: &Path, platform: Platform, out_dir: &Path, extra_flags: &[&str]) -> PathBuf {
    let stem = source
        .file_stem()
        .and_then(OsStr::to_str)
        .unwrap_or_else(|| panic!("{}: no UTF-8 file name", source.display()));
    let output = out_dir.join(format!("{stem}.{}.o", platform.label()));
    run_tool(&mut compile_command(source, platform, &output, extra_flags));
    output
}

/// The `libSystem.tbd` stub: a TAPI v4 text stub for both architectures.
/// A freestanding program links with no exports at all (lld needs
/// `dyld_stub_binder` only once something is bound lazily); it is exported
/// so that a program that does import something still links, and loading
/// it then reports the import by name.
pub const LIBSYSTEM_TBD: &str = "--- !tapi-tbd
tbd-version:     4
targets:         [ x86_64-macos, arm64-macos ]
install-name:    '/usr/lib/libSystem.B.dylib'
current-version: 1311
exports:
  - targets:         [ x86_64-macos, arm64-macos ]
    symbols:         [ dyld_stub_binder ]
...
";

/// Writes `dir/usr/lib/libSystem.tbd` and returns `dir`, for `-syslibroot`.
/// Safe to call from parallel tests: the file is written under a unique
/// name and renamed into place.
pub fn write_sdk(dir: &Path) -> PathBuf {
    let lib = dir.join("usr/lib");
    fs::create_dir_all(&lib).unwrap_or_else(|error| panic!("creating {}: {error}", lib.display()));
    static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);
    let temp = lib.join(format!(
        "libSystem.tbd.tmp-{}-{}",
        std::process::id(),
        NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
    ));
    fs::write(&temp, LIBSYSTEM_TBD)
        .unwrap_or_else(|error| panic!("writing {}: {error}", temp.display()));
    let tbd = lib.join("libSystem.tbd");
    fs::rename(&temp, &tbd).unwrap_or_else(|error| panic!("writing {}: {error}", tbd.display()));
    dir.to_owned()
}

/// The link command for `platform`; for Mach-O it writes the SDK stub into
/// `sdk/` beside `output`. `extra_args` go after the objects (e.g.
/// `-dead_strip`, `-fixup_chains`, `--icf=all`).
pub fn link_command(
    platform: Platform,
    objects: &[PathBuf],
    output: &Path,
    extra_args: &[&str],
) -> Command {
    let mut command = match platform.macho_arch() {
        Some(arch) => {
            let dir = output.parent().unwrap_or(Path::new("."));
            let sdk = write_sdk(&dir.join("sdk"));
            let mut command = Command::new(LD64);
            command
                .args(["-arch", arch.name()])
                .args(["-platform_version", "macos", "11.0", "11.0"])
                .arg("-syslibroot")
                .arg(sdk)
                .args(["-lSystem", "-e", "_main"]);
            command
        }
        None => {
            let mut command = Command::new(LD_ELF);
            command.args(["-static", "-e", "_start"]);
            command
        }
    };
    command.arg("-o").arg(output).args(objects).args(extra_args);
    command
}

/// Links `objects` for `platform` into `output`.
pub fn link(
    platform: Platform,
    objects: &[PathBuf],
    output: &Path,
    extra_args: &[&str],
) -> PathBuf {
    run_tool(&mut link_command(platform, objects, output, extra_args));
    output.to_owned()
}

/// The runtime's object for `platform`, compiled into `out_dir`.
pub fn runtime_object(platform: Platform, out_dir: &Path) -> PathBuf {
    compile(&runtime_dir().join("rt.c"), platform, out_dir, &[])
}

/// Compiles `sources` (with `cflags` added) and the runtime for `platform`
/// and links them into `out_dir/<first source's stem>.<platform label>` with
/// `link_args`.
pub fn build_program(
    sources: &[PathBuf],
    platform: Platform,
    out_dir: &Path,
    cflags: &[&str],
    link_args: &[&str],
) -> PathBuf {
    let first = sources.first().expect("a program has at least one source");
    let stem = first
        .file_stem()
        .and_then(OsStr::to_str)
        .unwrap_or_else(|| panic!("{}: no UTF-8 file name", first.display()));
    let mut objects: Vec<PathBuf> = sources
        .iter()
        .map(|source| compile(source, platform, out_dir, cflags))
        .collect();
    objects.push(runtime_object(platform, out_dir));
    link(
        platform,
        &objects,
        &out_dir.join(format!("{stem}.{}", platform.label())),
        link_args,
    )
}

/// Runs a program built for `platform`: Mach-O in the emulator, ELF
/// natively or under qemu-user ([`run_elf`]).
pub fn run_program(path: &Path, platform: Platform, limits: &Limits) -> Result<RunOutput, Error> {
    match platform {
        Platform::MachoX86_64 | Platform::MachoArm64 => run_macho_file(path, limits),
        Platform::LinuxX86_64 => run_elf(path, icf_fixtures::Arch::X86_64, limits),
        Platform::LinuxAarch64 => run_elf(path, icf_fixtures::Arch::Aarch64, limits),
    }
}

/// Runs a static Linux executable: natively when it is for the host's
/// architecture, else under qemu-user ([`icf_fixtures::run_command`]).
/// Killed after [`Limits::timeout`] ([`Limits::max_instructions`] does not
/// apply).
pub fn run_elf(path: &Path, arch: icf_fixtures::Arch, limits: &Limits) -> Result<RunOutput, Error> {
    let mut command = icf_fixtures::run_command(arch, path);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|error| Error::Io {
        path: path.to_owned(),
        message: format!("could not run it: {error}"),
    })?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > limits.timeout => {
                // Best effort: the child may have exited in the meantime.
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Limit {
                    pc: None,
                    what: format!(
                        "{} still running after {:?}",
                        path.display(),
                        limits.timeout
                    ),
                });
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(2)),
            Err(error) => {
                return Err(Error::Io {
                    path: path.to_owned(),
                    message: format!("waiting for it: {error}"),
                });
            }
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status.code() {
        Some(code) => Ok(RunOutput {
            exit_code: code,
            stdout,
            stderr,
        }),
        None => {
            use std::os::unix::process::ExitStatusExt;
            Err(Error::Signal {
                signal: status.signal().unwrap_or(0),
                stdout,
                stderr,
            })
        }
    }
}

/// Reads a child's pipe to the end on another thread.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            // A read error ends the capture; what was read so far is kept.
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Runs a build tool, panicking with the command line and its stderr
/// unless it succeeds (warnings are passed on to the test's output).
fn run_tool(command: &mut Command) {
    let program = command.get_program().to_string_lossy().into_owned();
    require_tool(&program);
    let output = icf_fixtures::run(command);
    if !output.stderr.is_empty() {
        eprintln!("{program}: {}", String::from_utf8_lossy(&output.stderr));
    }
}
