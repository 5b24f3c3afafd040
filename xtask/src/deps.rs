//! Installing the system tools that the tests build and run fixtures with:
//! compilers, linkers, cross toolchains and qemu from Debian packages, and the
//! rustfmt and clippy rustup components.
//!
//! Assumes a Debian-like system (apt-get, Debian package names). Every check is
//! a `PATH` lookup, a `--version` probe or a `pkg-config --exists`, so when
//! everything is present this is instant and never touches the network or
//! needs privileges.

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::{cargo, display, find_program, run, succeeds_quietly};

/// Programs the fixtures and end-to-end tests invoke by name.
const REQUIRED_TOOLS: &[&str] = &[
    "gcc",
    "g++",
    "clang-19",
    "clang++-19",
    "ld.lld-19",
    // icf-emu links the Mach-O test programs.
    "ld64.lld-19",
    // The Mach-O tests make archives and read images with LLVM's tools.
    "llvm-ar-19",
    "llvm-nm-19",
    "llvm-objdump-19",
    // `icf report` on a stripped binary: icf-cli's report_binary test strips
    // x86-64 and AArch64 programs alike.
    "llvm-strip-19",
    // The peer check compares `icf shrink` with BOLT's ICF.
    "llvm-bolt-19",
    "mold",
    "ld.bfd",
    "ld.gold",
    "aarch64-linux-gnu-gcc",
    "aarch64-linux-gnu-g++",
    "qemu-aarch64",
    // `cargo xtask bench`: the LLVM corpora and peak RSS.
    "llvm-config-14",
    "time",
    "curl",
    // `cargo xtask bench`'s LTO corpus: a CPython extension module, built
    // against Debian's python3 and tested with its pytest.
    "python3-config",
    "pytest-3",
    // The unicorn-engine crate finds libunicorn through pkg-config.
    "pkg-config",
];

/// Libraries that crates link (found with `pkg-config --exists`): unicorn,
/// the CPU emulator icf-emu runs Mach-O programs in. Without it the
/// unicorn-engine crate would try to build its bundled QEMU with cmake.
const REQUIRED_LIBRARIES: &[&str] = &["unicorn"];

/// Debian packages providing `REQUIRED_TOOLS` and `REQUIRED_LIBRARIES`, plus
/// the AArch64 libc headers and libraries the cross compilers need to link
/// programs (`time` is `/usr/bin/time`, which `cargo xtask bench` measures
/// peak RSS with).
const DEBIAN_PACKAGES: &[&str] = &[
    "gcc",
    "g++",
    "clang-19",
    "lld-19",
    "mold",
    "binutils",
    "gcc-aarch64-linux-gnu",
    "g++-aarch64-linux-gnu",
    "libc6-dev-arm64-cross",
    "qemu-user",
    "llvm-14-dev",
    "llvm-19",
    "bolt-19",
    "time",
    "curl",
    "pkg-config",
    "libunicorn-dev",
    "python3-dev",
    "python3-pytest",
    // The LTO corpus's tests of dates read time zones through pytz.
    "python3-tz",
];

/// Rustup components that `cargo xtask test` runs, with the cargo subcommand
/// whose `--version` probes for each.
const RUSTUP_COMPONENTS: &[(&str, &str)] = &[("rustfmt", "fmt"), ("clippy", "clippy")];

/// Installs whatever is missing; does nothing when everything is present.
pub fn install() -> Result<()> {
    install_system_tools()?;
    install_rustup_components()
}

fn install_system_tools() -> Result<()> {
    let missing: Vec<&str> = REQUIRED_TOOLS
        .iter()
        .copied()
        .filter(|tool| find_program(tool).is_none())
        .chain(
            REQUIRED_LIBRARIES
                .iter()
                .copied()
                .filter(|library| !library_present(library)),
        )
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!(
        "==> installing system packages (missing: {})",
        missing.join(", ")
    );
    if find_program("apt-get").is_none() {
        bail!(
            "missing tools {} and apt-get is not available: install the equivalents of the \
             Debian packages {} by hand",
            missing.join(", "),
            DEBIAN_PACKAGES.join(" ")
        );
    }
    let mut update = apt_get()?;
    update.arg("update");
    run(&mut update)?;
    let mut install = apt_get()?;
    install
        .args(["install", "-y", "--no-install-recommends"])
        .args(DEBIAN_PACKAGES);
    run(&mut install)?;

    let still_missing: Vec<&str> = missing
        .into_iter()
        .filter(|name| {
            if REQUIRED_LIBRARIES.contains(name) {
                !library_present(name)
            } else {
                find_program(name).is_none()
            }
        })
        .collect();
    if !still_missing.is_empty() {
        bail!(
            "after installing packages these tools (on PATH) or libraries (for pkg-config) are \
             still missing: {}",
            still_missing.join(", ")
        );
    }
    Ok(())
}

/// Whether pkg-config knows `library` (false when pkg-config itself is missing).
fn library_present(library: &str) -> bool {
    succeeds_quietly(Command::new("pkg-config").args(["--exists", library]))
}

/// An `apt-get` command, prefixed with `sudo` when we are not root and sudo exists.
fn apt_get() -> Result<Command> {
    let mut command = if is_root()? || find_program("sudo").is_none() {
        Command::new("apt-get")
    } else {
        let mut sudo = Command::new("sudo");
        // `sudo` resets the environment by default; pass the variable on its command line.
        sudo.args(["DEBIAN_FRONTEND=noninteractive", "apt-get"]);
        sudo
    };
    command.env("DEBIAN_FRONTEND", "noninteractive");
    Ok(command)
}

fn is_root() -> Result<bool> {
    let mut id = Command::new("id");
    id.arg("-u");
    let output = id
        .output()
        .with_context(|| format!("could not run `{}`", display(&id)))?;
    if !output.status.success() {
        bail!("`{}` failed ({})", display(&id), output.status);
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim() == "0")
}

fn install_rustup_components() -> Result<()> {
    for &(component, subcommand) in RUSTUP_COMPONENTS {
        let mut probe = cargo();
        probe.args([subcommand, "--version"]);
        if succeeds_quietly(&mut probe) {
            continue;
        }
        eprintln!("==> installing rustup component {component}");
        run(Command::new("rustup").args(["component", "add", component]))
            .context("is rustup installed?")?;
    }
    Ok(())
}
