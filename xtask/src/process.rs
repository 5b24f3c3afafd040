//! Running child processes: locating programs on `PATH`, and running a command
//! to completion with an error that names the exact command line on failure.
//!
//! `run` lets children inherit stdout and stderr, so their output reaches the
//! user as it is produced; `capture` keeps both for the caller to parse.

use std::env;
use std::ffi::OsString;
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};

/// The `cargo` that invoked us, so nested runs use the same toolchain.
pub fn cargo() -> Command {
    Command::new(env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo")))
}

pub use icf_fixtures::find_program;

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

pub use icf_fixtures::shell_quote;

/// `command` as one shell line to paste, its environment changes first
/// (removed variables are left out), every word quoted as `shell_quote` does.
pub fn shell_line(command: &Command) -> String {
    let mut words: Vec<String> = command
        .get_envs()
        .filter_map(|(key, value)| {
            Some(format!(
                "{}={}",
                key.to_string_lossy(),
                shell_quote(&value?.to_string_lossy())
            ))
        })
        .collect();
    words.push(shell_quote(&command.get_program().to_string_lossy()));
    words.extend(
        command
            .get_args()
            .map(|arg| shell_quote(&arg.to_string_lossy())),
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

/// 64-bit FNV-1a of `bytes` (icf's own, [`icf::fnv1a`]).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    icf::fnv1a(bytes.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn shell_lines_quote_only_what_needs_it() {
        let mut command = Command::new("/usr/bin/ld.lld");
        command
            .args(["-o", "a b", "it's", "", "x=y:z,+@%", "é"])
            .env("RUSTFLAGS", "-C x")
            .env_remove("FOO");
        assert_eq!(
            shell_line(&command),
            r"RUSTFLAGS='-C x' /usr/bin/ld.lld -o 'a b' 'it'\''s' '' x=y:z,+@% 'é'"
        );
    }
}
