//! Sizes of a linked binary: the file, the file stripped of symbols and
//! debug information, and its `.text` section.

use anyhow::Context;
use object::{Object, ObjectSection};
use std::path::Path;
use std::process::Command;

/// What one binary weighs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SizeReport {
    pub file: u64,
    pub stripped: u64,
    pub text: u64,
}

/// Measures `binary`; the stripped size comes from `strip` on a copy.
pub fn measure(binary: &Path, scratch: &Path) -> anyhow::Result<SizeReport> {
    let data = std::fs::read(binary).with_context(|| format!("reading {}", binary.display()))?;
    let file =
        object::File::parse(&*data).with_context(|| format!("parsing {}", binary.display()))?;
    let text = file.section_by_name(".text").map_or(0, |s| s.size());
    let stripped_path = scratch.join(format!(
        "{}.stripped",
        binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let status = Command::new("strip")
        .arg("-o")
        .arg(&stripped_path)
        .arg(binary)
        .status()
        .context("running strip (binutils)")?;
    anyhow::ensure!(status.success(), "strip failed on {}", binary.display());
    let stripped = std::fs::metadata(&stripped_path)?.len();
    let _ = std::fs::remove_file(&stripped_path);
    Ok(SizeReport {
        file: data.len() as u64,
        stripped,
        text,
    })
}
