//! Test support: runs linked Mach-O programs without macOS, by loading them
//! into the unicorn CPU emulator, and builds the freestanding test programs
//! that run this way (and, from the same source, as Linux ELF programs run
//! natively or under `qemu-aarch64`), so a test can compare what a program
//! prints before and after folding, and on both formats.
//!
//! - [`loader`]: maps an `MH_EXECUTE` image (x86_64 or arm64, as `ld64.lld-19`
//!   links it) at its preferred address and applies its fixups.
//! - [`run`]: runs the image under unicorn with a few Darwin system calls
//!   (`write`, `exit`), a bound on the instructions executed, and faults
//!   turned into errors naming the PC.
//! - [`build`]: compiles and links programs for the four targets with
//!   clang-19, `ld64.lld-19` (against a generated `libSystem.tbd` stub) and
//!   `ld.lld-19`, and runs the ELF builds.
//!
//! Assumptions: the programs are freestanding (no libc, nothing imported
//! from a dylib: an import is an [`Error::Import`]), single-threaded, and use
//! no thread-local variables; they talk to the outside only through the
//! runtime in `fixtures/emu/rt.{h,c}`. The emulator is Debian's
//! `libunicorn` 2.0.1 (package `libunicorn-dev`), linked dynamically through
//! pkg-config; the tools come from `cargo xtask install-deps`.
//!
//! Loading and running return [`Error`]s for anything derived from the
//! input (a malformed image, a fault, a program that does not stop); the
//! build helpers panic with the command line instead, as `icf-fixtures`
//! does, because a program that does not build is a broken test setup.

use std::fmt;
use std::path::PathBuf;

pub mod build;
mod fixups;
pub mod loader;
pub mod run;
mod segment;

pub use build::{Platform, build_program, run_program};
pub use loader::{Image, Segment, load};
pub use run::{Limits, run_image, run_macho, run_macho_file};

/// The two Mach-O architectures the loader and runner handle.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    X86_64,
    Arm64,
}

impl Arch {
    /// The name `ld64.lld-19 -arch` takes.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }
}

/// What a program did: its exit status as the system reports it (the low
/// 8 bits of the value given to `exit` or returned from `main`, so 0..=255
/// on every platform) and everything it wrote to file descriptors 1 and 2.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunOutput {
    pub exit_code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl RunOutput {
    /// Standard output as text (lossy), for messages and comparisons.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Why an image could not be loaded or did not run to completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The file could not be read.
    Io { path: PathBuf, message: String },
    /// The bytes are not a well-formed Mach-O executable.
    Malformed(String),
    /// The image imports `symbol` from a dylib; the test programs must not.
    Import { symbol: String },
    /// The image is well formed but uses something the loader does not
    /// implement (another CPU, pointer authentication, thread-locals, ...).
    Unsupported(String),
    /// The program faulted at `pc`: an access to `address` that is not
    /// mapped or not permitted, an invalid instruction, a trap, an unknown
    /// system call (`address` is then `None`).
    Fault {
        pc: u64,
        address: Option<u64>,
        what: String,
    },
    /// The program did not finish within the [`Limits`]; `pc` is where it
    /// was stopped (`None` for a native process, which is killed).
    Limit { pc: Option<u64>, what: String },
    /// A native or qemu-run ELF program was killed by `signal`.
    Signal {
        signal: i32,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
    /// unicorn itself failed (mapping memory, writing a register, ...).
    Emulator(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, message } => write!(f, "reading {}: {message}", path.display()),
            Error::Malformed(message) => write!(f, "malformed Mach-O image: {message}"),
            Error::Import { symbol } => write!(
                f,
                "the image imports `{symbol}` from a dylib; emulated programs must not import anything"
            ),
            Error::Unsupported(message) => write!(f, "unsupported Mach-O image: {message}"),
            Error::Fault {
                pc,
                address: Some(address),
                what,
            } => write!(f, "fault at pc {pc:#x}: {what} of address {address:#x}"),
            Error::Fault {
                pc,
                address: None,
                what,
            } => write!(f, "fault at pc {pc:#x}: {what}"),
            Error::Limit { pc: Some(pc), what } => write!(f, "stopped at pc {pc:#x}: {what}"),
            Error::Limit { pc: None, what } => write!(f, "stopped: {what}"),
            Error::Signal { signal, .. } => write!(f, "killed by signal {signal}"),
            Error::Emulator(message) => write!(f, "unicorn: {message}"),
        }
    }
}

impl std::error::Error for Error {}
