//! Running the real linker, and what came of a link: its status, the
//! fallback to the plain command when icf's link did not stand, the
//! report. Shared by `icf link`'s two paths, folding the inputs
//! (`run.rs`) and folding the linked image (`after_link.rs`).

use crate::link::link_command::LinkCommand;
use crate::report::savings::Report;
use anyhow::Context;
use std::path::Path;
use std::process::{Command, ExitStatus};

/// See `LinkOptions::verify`: `icf-verify`'s proof, which `icf` itself
/// does not depend on.
#[derive(Clone)]
pub struct Verifier(pub std::sync::Arc<VerifyFn>);

/// Whether the folded output (second) is proved against the plain one,
/// given the two links' maps (plain, folded) where icf had them written.
pub type VerifyFn =
    dyn Fn(&Path, &Path, Option<(&Path, &Path)>) -> anyhow::Result<bool> + Send + Sync;

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Verifier")
    }
}

/// How a link went.
#[derive(Debug)]
pub struct LinkOutcome {
    pub status: ExitStatus,
    /// Why the plain command ran instead, when it did.
    pub fallback: Option<String>,
    pub report: Option<Report>,
}

/// Runs the command unchanged after a link icf changed (`what`) failed
/// with `failed`; when the plain link fails too, the problem is not icf's
/// and no fallback is reported.
pub(crate) fn relink_plainly(
    parsed: &LinkCommand,
    what: &str,
    failed: &std::process::Output,
) -> anyhow::Result<LinkOutcome> {
    let status = run(&parsed.program, &parsed.args)?;
    let message = String::from_utf8_lossy(&failed.stderr);
    let first_lines: Vec<&str> = message.lines().take(3).collect();
    Ok(LinkOutcome {
        status,
        fallback: status.success().then(|| {
            format!(
                "{what} failed ({}): {}",
                failed.status,
                first_lines.join(" | ")
            )
        }),
        report: None,
    })
}

pub(crate) fn run(program: &str, args: &[String]) -> anyhow::Result<ExitStatus> {
    Command::new(program)
        .args(args)
        .status()
        .with_context(|| format!("running {program}"))
}

/// A duration as `icf -v` prints it.
pub(crate) fn milliseconds(duration: std::time::Duration) -> String {
    format!("{:.0} ms", duration.as_secs_f64() * 1e3)
}
