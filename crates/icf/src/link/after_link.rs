//! `icf link` on builds whose inputs hold no machine code: LTO (LLVM
//! bitcode, GCC's LTO bytecode) or any build with `--after-link`. The
//! command links as it is, with `--emit-relocs` added, into a file beside
//! its output; `icf shrink` (given by the caller, as `icf-verify` is for
//! `--verify`) folds that image into the output, and the relocations
//! the link kept are dropped unless the command asked for them.
//!
//! Everything `icf link` promises holds here too: the output is written
//! atomically (the shrink writes it whole, then renames); when the shrink
//! fails, or the link fails only with `--emit-relocs`, the command runs
//! unchanged and the caller gets a warning (an error with `--strict`).
//! `--report` describes the folds of the linked image, as `icf report`
//! does for a binary.

use crate::link::link_command::LinkCommand;
use crate::link::linker::{LinkOutcome, VerifyFn, milliseconds, relink_plainly, run};
use anyhow::Context;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::Command;

/// Folds a linked image kept with `--emit-relocs` (IN, first) into OUT
/// (second), as `request` says.
pub type ShrinkFn =
    dyn Fn(&Path, &Path, &ShrinkRequest) -> anyhow::Result<PostLinked> + Send + Sync;

/// What the link command asks of the fold after it.
#[derive(Clone, Debug, Default)]
pub struct ShrinkRequest {
    /// OUT keeps the relocations (the command asked for `-q`).
    pub keep_relocations: bool,
    /// Symbols that keep their own body: `icf link`'s and the command's
    /// `--keep-unique`.
    pub keep_unique: Vec<String>,
    /// Make the report of what folds (`--report`, `--print-icf-sections`).
    pub want_report: bool,
}

/// See [`ShrinkFn`]: `icf-shrink`'s shrink, which `icf` itself does not
/// depend on.
#[derive(Clone)]
pub struct AfterLink {
    pub shrink: std::sync::Arc<ShrinkFn>,
    /// Fold after the link whatever the inputs (`--after-link`), not only
    /// when they hold LTO code.
    pub always: bool,
}

impl std::fmt::Debug for AfterLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AfterLink {{ always: {} }}", self.always)
    }
}

/// What folding the linked image did.
#[derive(Clone, Debug, Default)]
pub struct PostLinked {
    /// Functions folded into another.
    pub folded: usize,
    /// One line: what the shrink saved.
    pub summary: String,
    /// What folds, when [`ShrinkRequest::want_report`] asked.
    pub report: Option<crate::report::savings::Report>,
}

/// Why the link must be folded after it is made: the first input holding
/// LTO code, and what it holds; `None` when every input holds machine code.
pub(crate) fn lto_input(parsed: &LinkCommand) -> Option<String> {
    parsed.inputs.iter().find_map(|input| {
        holds_lto(&input.path).map(|what| format!("{}: {what}", input.path.display()))
    })
}

/// How many object members of an archive are looked at: an LTO build's
/// archives hold nothing else, and reading every member of every archive
/// would double what a link reads.
const MEMBERS_LOOKED_AT: usize = 4;

/// What LTO code `path` holds (an object, or the first object members of
/// an archive), if any.
fn holds_lto(path: &Path) -> Option<&'static str> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut magic = [0u8; 8];
    file.read_exact(&mut magic).ok()?;
    if &magic != b"!<arch>\n" {
        return object_holds_lto(&mut file, 0);
    }
    // ar members: a 60-byte header (name, ..., size at 48, ten digits),
    // the data, padded to an even offset.
    let mut at = 8u64;
    let mut looked_at = 0;
    while looked_at < MEMBERS_LOOKED_AT {
        let mut header = [0u8; 60];
        file.seek(SeekFrom::Start(at)).ok()?;
        file.read_exact(&mut header).ok()?;
        let size: u64 = std::str::from_utf8(&header[48..58])
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let name = &header[..16];
        let data = at + 60;
        // The symbol table (`/`, `/SYM64/`) and long names (`//`) are not objects.
        if !name.starts_with(b"/ ") && !name.starts_with(b"//") && !name.starts_with(b"/SYM64/") {
            let mut member_magic = [0u8; 4];
            file.seek(SeekFrom::Start(data)).ok()?;
            if file.read_exact(&mut member_magic).is_ok()
                && (member_magic == *b"\x7fELF" || member_magic == *b"BC\xc0\xde")
            {
                if let Some(what) = object_holds_lto(&mut file, data) {
                    return Some(what);
                }
                looked_at += 1;
            }
        }
        at = data + size + size % 2;
    }
    None
}

/// What LTO code the object at `start` of `file` holds: LLVM bitcode, or
/// an ELF relocatable object with GCC's `.gnu.lto_*` sections or clang's
/// fat-LTO `.llvm.lto` section.
fn object_holds_lto(file: &mut std::fs::File, start: u64) -> Option<&'static str> {
    let mut header = [0u8; 64];
    file.seek(SeekFrom::Start(start)).ok()?;
    let read = file.read(&mut header).ok()?;
    let header = &header[..read];
    if header.starts_with(b"BC\xc0\xde") || header.starts_with(&[0xde, 0xc0, 0x17, 0x0b]) {
        return Some("LLVM bitcode");
    }
    // A little-endian ELF64 relocatable object.
    if !(header.len() == 64 && header.starts_with(b"\x7fELF\x02\x01") && header[16] == 1) {
        return None;
    }
    let u16_at = |at: usize| u16::from_le_bytes([header[at], header[at + 1]]);
    let shoff = u64::from_le_bytes(header[40..48].try_into().ok()?);
    let (shentsize, shnum, shstrndx) = (u16_at(58), u16_at(60), u16_at(62));
    if shentsize != 64 || shnum == 0 || shstrndx >= shnum || shnum > 60_000 {
        return None;
    }
    let mut table = vec![0u8; usize::from(shnum) * 64];
    file.seek(SeekFrom::Start(start + shoff)).ok()?;
    file.read_exact(&mut table).ok()?;
    let field = |index: usize, at: usize| -> u64 {
        let at = index * 64 + at;
        u64::from_le_bytes(table[at..at + 8].try_into().unwrap_or_default())
    };
    let (names_offset, names_size) = (
        field(usize::from(shstrndx), 24),
        field(usize::from(shstrndx), 32),
    );
    if names_size > 16 << 20 {
        return None;
    }
    let mut names = vec![0u8; names_size as usize];
    file.seek(SeekFrom::Start(start + names_offset)).ok()?;
    file.read_exact(&mut names).ok()?;
    let has = |prefix: &[u8]| {
        (0..usize::from(shnum)).any(|index| {
            let at = (u64::from_le_bytes(
                table[index * 64..index * 64 + 8]
                    .try_into()
                    .unwrap_or_default(),
            ) & 0xffff_ffff) as usize;
            names.get(at..).is_some_and(|name| name.starts_with(prefix))
        })
    };
    if has(b".gnu.lto_") {
        Some("GCC LTO bytecode")
    } else if has(b".llvm.lto") {
        Some("LLVM bitcode (fat LTO object)")
    } else {
        None
    }
}

/// What of `icf link`'s options this path takes.
pub(crate) struct Settings<'a> {
    pub strict: bool,
    pub verbose: bool,
    pub verify: Option<&'a VerifyFn>,
    pub report: Option<&'a Path>,
    pub want_report: bool,
    /// `icf link`'s and the command's `--keep-unique`.
    pub keep_unique: Vec<String>,
}

/// Links `parsed` with its relocations kept into a file beside its
/// output, and folds that into the output (see the module's header).
pub(crate) fn link(
    parsed: &LinkCommand,
    options: &Settings<'_>,
    after: &AfterLink,
) -> anyhow::Result<LinkOutcome> {
    let fall_back = |why: String| -> anyhow::Result<LinkOutcome> {
        if options.strict {
            anyhow::bail!("{why}");
        }
        let status = run(&parsed.program, &parsed.args)?;
        Ok(LinkOutcome {
            status,
            fallback: Some(why),
            report: None,
        })
    };
    let Some(output) = parsed.output.clone() else {
        return fall_back("icf cannot tell where the link command writes its output".to_string());
    };
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let linked = output.with_file_name(format!(".{name}.icf-linked.{}", std::process::id()));
    let Some(args) = parsed.with_output_and_relocations(&linked) else {
        return fall_back("icf cannot tell where the link command writes its output".to_string());
    };
    let started = std::time::Instant::now();
    let link = Command::new(&parsed.program)
        .args(&args)
        .stderr(std::process::Stdio::piped())
        .output()
        .with_context(|| format!("running {}", parsed.program))?;
    if options.verbose {
        eprintln!(
            "icf: time: link with --emit-relocs {}",
            milliseconds(started.elapsed())
        );
    }
    // The linker's messages are held back until it is clear whether the
    // link with --emit-relocs stands: a failure the plain link does not
    // share is icf's, and must not break the build.
    if !link.status.success() {
        let _ = std::fs::remove_file(&linked);
        if options.strict {
            std::io::Write::write_all(&mut std::io::stderr(), &link.stderr)?;
            return Ok(LinkOutcome {
                status: link.status,
                fallback: None,
                report: None,
            });
        }
        return relink_plainly(parsed, "the link with --emit-relocs", &link);
    }
    std::io::Write::write_all(&mut std::io::stderr(), &link.stderr)?;
    let started = std::time::Instant::now();
    let request = ShrinkRequest {
        // `--verify` proves the output against the image it was folded
        // from, which has its relocations: the proof needs them on both
        // sides (without them some folds cannot be proved), so the output
        // keeps them.
        keep_relocations: parsed.emit_relocs || options.verify.is_some(),
        keep_unique: options.keep_unique.clone(),
        want_report: options.report.is_some() || options.want_report,
    };
    let mut shrunk = (after.shrink)(&linked, &output, &request);
    if let Ok(PostLinked {
        report: Some(report),
        ..
    }) = &mut shrunk
    {
        report.rename_input(&linked.display().to_string(), &output.display().to_string());
    }
    if options.verbose {
        eprintln!(
            "icf: time: shrink after the link {}",
            milliseconds(started.elapsed())
        );
    }
    let proved = match (&shrunk, &options.verify) {
        (Ok(_), Some(verifier)) => {
            verifier(&linked, &output, None).map_err(|e| e.context("--verify"))
        }
        _ => Ok(true),
    };
    let _ = std::fs::remove_file(&linked);
    match (shrunk, proved) {
        (Ok(shrunk), Ok(true)) => {
            if let (Some(path), Some(report)) = (options.report, &shrunk.report) {
                crate::write::write_atomically(path, (report.to_json() + "\n").as_bytes())?;
            }
            if shrunk.folded == 0 {
                eprintln!(
                    "icf: note: {}: nothing to fold after the link ({})",
                    output.display(),
                    shrunk.summary
                );
            } else if options.verbose {
                eprintln!("icf: {}", shrunk.summary);
            }
            Ok(LinkOutcome {
                status: link.status,
                fallback: None,
                report: shrunk.report,
            })
        }
        (Err(error), _) => fall_back(format!("folding the linked image failed: {error:#}")),
        (Ok(_), Ok(false)) => fall_back(format!(
            "{} does not verify against the link it was folded from",
            output.display()
        )),
        (Ok(_), Err(error)) => fall_back(format!("{error:#}")),
    }
}
