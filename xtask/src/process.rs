//! Running child processes: locating programs on `PATH`, and running a command
//! to completion with an error that names the exact command line on failure.
//!
//! `run` lets children inherit stdout and stderr, so their output reaches the
//! user as it is produced; `capture` keeps both for the caller to parse.

use std::env;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};

/// The `cargo` that invoked us, so nested runs use the same toolchain.
pub fn cargo() -> Command {
    Command::new(env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo")))
}

/// Finds `name` the way a shell's `command -v` does: the first executable
/// regular file called `name` in a `PATH` directory.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// Renders a command roughly as a shell would show it, for headers and errors.
pub fn display(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(
        command
            .get_args()
            .map(|arg| arg.to_string_lossy().into_owned()),
    );
    words.join(" ")
}

/// Runs `command` with inherited stdio and fails unless it exits successfully.
pub fn run(command: &mut Command) -> Result<()> {
    let shown = display(command);
    let status = command
        .status()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }
    Ok(())
}

/// Runs `command` with stdout and stderr captured and fails unless it exits
/// successfully; the error carries the tail of its stderr.
pub fn capture(command: &mut Command) -> Result<Output> {
    let shown = display(command);
    let output = command
        .output()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        bail!("`{shown}` failed ({}):\n{tail}", output.status);
    }
    Ok(output)
}

/// Runs `command` with its output captured and reports only whether it exited
/// successfully; a command that cannot even start counts as a failure.
pub fn succeeds_quietly(command: &mut Command) -> bool {
    command.output().is_ok_and(|output| output.status.success())
}

/// FNV-1a (64 bits): a stable fingerprint of bytes, the same on every run
/// and machine (cache stamps, output fingerprints).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
