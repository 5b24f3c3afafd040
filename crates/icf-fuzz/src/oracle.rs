//! The oracle: runs one case through the code that reads its format, in
//! process, and judges the outcome. Fine is `Ok`, or an error whose text
//! names the input file (for Mach-O, and a section or offset in it); a
//! finding is a panic, a run past the time limit, an error that names no
//! input file, or (for the link pipeline) outputs that icf itself cannot
//! read back (for Mach-O, also outputs `object` cannot read where it reads
//! the input).
//!
//! Assumption: one case runs at a time per process (a lock serializes them),
//! so the panic hook's last report belongs to the case being judged. A hung
//! case cannot be stopped: its thread is left running and the caller should
//! stop the campaign (see [`Finding::is_hang`]). A stack overflow or an
//! allocation failure aborts the process; the campaign writes each case to
//! `current.case` before running it so that such an input is not lost.

use crate::case::{Case, InputKind, RunOptions};
use std::backtrace::Backtrace;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

/// `icf shrink MUTATED`, `icf verify ORIGINAL MUTATED`, then `icf report
/// MUTATED`: the first input is the mutated image, the second the
/// unmutated one. A difference found is a fine outcome; only errors,
/// panics and hangs are judged.
impl InputKind {
    /// Runs the code that reads this format on `inputs`, writing anything
    /// it writes under `out_dir`.
    fn run(self, inputs: &[PathBuf], out_dir: &Path, options: RunOptions) -> anyhow::Result<()> {
        match self {
            InputKind::Object
            | InputKind::CrelObject
            | InputKind::Archive
            | InputKind::ThinArchive => link_pipeline(inputs, out_dir, options).map(drop),
            InputKind::LinkedBinary => {
                let shrunk = shrink_image(inputs, out_dir, options);
                verify_against_original(inputs, options)?;
                shrunk
            }
            InputKind::MachOObject | InputKind::MachOArchive => {
                let outputs = link_pipeline(inputs, out_dir, options)?;
                read_back_with_object(inputs, &outputs)
            }
        }
    }
}

fn verify_against_original(inputs: &[PathBuf], options: RunOptions) -> anyhow::Result<()> {
    let [mutated, original] = inputs else {
        anyhow::bail!("a linked-binary case has two inputs, got {}", inputs.len());
    };
    let verify_options = icf_verify::VerifyOptions {
        mode: if options.fold_all {
            icf_verify::Mode::All
        } else {
            icf_verify::Mode::Safe
        },
        ..icf_verify::VerifyOptions::default()
    };
    // Each reader runs whatever the other says of the input.
    let report = report_on_image(mutated, options);
    // Both orders: the mutated image as the folded one, then as the plain one.
    icf_verify::verify(original, mutated, &verify_options)?;
    icf_verify::verify(mutated, original, &verify_options)?;
    report
}

/// `icf shrink MUTATED -o OUT`: a refusal is fine (most mutated images
/// are refused), so only panics, hangs and errors naming no input count.
fn shrink_image(inputs: &[PathBuf], out_dir: &Path, options: RunOptions) -> anyhow::Result<()> {
    let Some(mutated) = inputs.first() else {
        anyhow::bail!("a linked-binary case has no input");
    };
    let shrink_options = icf_shrink::ShrinkOptions {
        mode: if options.fold_all {
            icf::Mode::All
        } else {
            icf::Mode::Safe
        },
        ..icf_shrink::ShrinkOptions::default()
    };
    std::fs::create_dir_all(out_dir)?;
    icf_shrink::shrink(mutated, &out_dir.join("shrunk"), &shrink_options).map(drop)
}

/// What the case asks of the plan: safe mode, or mode all.
fn plan_options(options: RunOptions) -> icf::PlanOptions {
    icf::PlanOptions {
        mode: if options.fold_all {
            icf::Mode::All
        } else {
            icf::Mode::Safe
        },
        ..icf::PlanOptions::default()
    }
}

/// `icf report BINARY`: the mutated image read as a linked image
/// (`icf_object::Object::parse_image`), analysed and reported on.
fn report_on_image(image: &Path, options: RunOptions) -> anyhow::Result<()> {
    let opened = icf::Inputs::open(&[image.to_path_buf()])?;
    let program = icf::Program::load(
        &opened,
        icf::Options {
            linked_image: true,
            ..icf::Options::default()
        },
    )?;
    let plan_options = plan_options(options);
    let analysis = icf::Analysis::run(&program, &plan_options);
    let report = analysis.report(&analysis.plan, Duration::ZERO);
    drop(report.to_json());
    Ok(())
}

/// `icf fold`: open, load, analyze, plan, edit, write copies; then load
/// the copies again, which must succeed when the inputs did. Returns the
/// copies, in input order.
fn link_pipeline(
    inputs: &[PathBuf],
    out_dir: &Path,
    options: RunOptions,
) -> anyhow::Result<Vec<PathBuf>> {
    let opened = icf::Inputs::open(inputs)?;
    let program = icf::Program::load(
        &opened,
        icf::Options {
            shared: options.shared,
            gc_sections: options.gc_sections.then(|| icf::GcRoots {
                export_dynamic: false,
                symbols: vec!["main".to_owned()],
            }),
            ..icf::Options::default()
        },
    )?;
    let plan_options = plan_options(options);
    let analysis = icf::Analysis::run(&program, &plan_options);
    let edits = analysis.object_edits(&analysis.plan);
    let written = icf::write_outputs(&program, &edits, out_dir, icf::OutputKind::Copies)?;
    let outputs: Vec<PathBuf> = written.into_iter().map(|file| file.output).collect();
    let reread = icf::Inputs::open(&outputs)
        .and_then(|opened| icf::Program::load(&opened, icf::Options::default()).map(drop));
    reread.map_err(|error| OutputUnreadable(format!("{error:#}")))?;
    Ok(outputs)
}

/// Each output must read with `object` (sections with their contents and
/// relocations, symbols) wherever its input does: a written Mach-O file
/// that another reader refuses would fail the link after icf.
fn read_back_with_object(inputs: &[PathBuf], outputs: &[PathBuf]) -> anyhow::Result<()> {
    for (input, output) in inputs.iter().zip(outputs) {
        let read = |path: &Path| -> Result<(), String> {
            let data = std::fs::read(path).map_err(|e| e.to_string())?;
            read_with_object(&data)
        };
        if read(input).is_ok()
            && let Err(error) = read(output)
        {
            return Err(OutputUnreadable(format!(
                "{} (from {}), read by object: {error}",
                output.display(),
                input.display()
            ))
            .into());
        }
    }
    Ok(())
}

/// Reads `data`, an object or an archive of objects, through `object`.
fn read_with_object(data: &[u8]) -> Result<(), String> {
    use object::read::archive::ArchiveFile;
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
    if let Ok(archive) = ArchiveFile::parse(data) {
        for member in archive.members() {
            let member = member.map_err(|e| e.to_string())?;
            let bytes = member.data(data).map_err(|e| e.to_string())?;
            read_with_object(bytes)
                .map_err(|e| format!("member {}: {e}", String::from_utf8_lossy(member.name())))?;
        }
        return Ok(());
    }
    let file = object::File::parse(data).map_err(|e| e.to_string())?;
    for section in file.sections() {
        section
            .data()
            .map_err(|e| format!("section {:?}: {e}", section.name()))?;
        for (_, relocation) in section.relocations() {
            let _ = relocation.target();
        }
    }
    for symbol in file.symbols() {
        symbol
            .name()
            .map_err(|e| format!("symbol {}: {e}", symbol.index().0))?;
    }
    Ok(())
}

/// icf accepted the inputs but cannot read what it wrote.
#[derive(Debug)]
struct OutputUnreadable(String);

impl std::fmt::Display for OutputUnreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "icf cannot read its own output: {}", self.0)
    }
}

impl std::error::Error for OutputUnreadable {}

/// What went wrong, when something did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FindingKind {
    Panic,
    Hang,
    /// An error whose text names no input file (for Mach-O: or no place
    /// in it, a section or an offset).
    UnlocatedError,
    /// Accepted inputs whose outputs icf rejects.
    OutputUnreadable,
}

/// A panic, hang or unlocated error, with what identifies it.
#[derive(Clone, Debug)]
pub struct Finding {
    pub kind: FindingKind,
    /// The panic message or the error text.
    pub message: String,
    /// `file:line:column` of the panic; empty for other kinds.
    pub location: String,
    /// icf's frames of the panic's stack, innermost first; empty for other kinds.
    pub stack: String,
}

impl Finding {
    /// What makes two findings the same bug: the panic's location, or the
    /// error text with its numbers and paths left out.
    pub fn key(&self) -> String {
        match self.kind {
            // A panic inside std or a dependency is told apart by icf's
            // innermost frame: two different bugs may both overflow a `Vec`.
            FindingKind::Panic if !self.location.starts_with("crates/") => format!(
                "panic at {} from {}",
                self.location,
                self.stack.lines().next().unwrap_or_default()
            ),
            FindingKind::Panic => format!("panic at {}", self.location),
            FindingKind::Hang => "hang".to_owned(),
            FindingKind::UnlocatedError | FindingKind::OutputUnreadable => format!(
                "{:?}: {}",
                self.kind,
                self.message
                    .split(": ")
                    .last()
                    .unwrap_or_default()
                    .chars()
                    .filter(|c| !c.is_ascii_digit())
                    .collect::<String>()
            ),
        }
    }

    pub fn is_hang(&self) -> bool {
        self.kind == FindingKind::Hang
    }

    /// One line for notes and reports.
    pub fn summary(&self) -> String {
        match self.kind {
            FindingKind::Panic => format!("panic at {}: {}", self.location, self.message),
            FindingKind::Hang => format!("hang: {}", self.message),
            FindingKind::UnlocatedError => format!("unlocated error: {}", self.message),
            FindingKind::OutputUnreadable => format!("output unreadable: {}", self.message),
        }
    }
}

/// The judged outcome of one case.
#[derive(Clone, Debug)]
pub enum Outcome {
    Accepted,
    /// A clean, located error (its text).
    Rejected(String),
    Finding(Finding),
}

/// Writes `case` under `scratch`, runs its input kind's oracle on a worker
/// thread with `time_limit`, and judges the outcome.
pub fn run_case(case: &Case, scratch: &Path, time_limit: Duration) -> std::io::Result<Outcome> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _serial = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let in_dir = scratch.join("in");
    let out_dir = scratch.join("out");
    std::fs::create_dir_all(&in_dir)?;
    let inputs = case.write_files(&in_dir)?;
    install_panic_recorder();
    take_panic_report();

    let kind = case.kind;
    let options = case.options;
    let thread_inputs = inputs.clone();
    let (sender, receiver) = mpsc::channel();
    CAPTURING.fetch_add(1, Ordering::SeqCst);
    let spawned = std::thread::Builder::new()
        .name("icf-fuzz-case".to_owned())
        .spawn(move || {
            let result = panic::catch_unwind(AssertUnwindSafe(|| {
                kind.run(&thread_inputs, &out_dir, options)
            }));
            // The receiver is gone only after a timeout; nothing to tell then.
            let _ = sender.send(result);
        });
    let received = match spawned {
        Ok(_) => receiver.recv_timeout(time_limit),
        Err(error) => {
            CAPTURING.fetch_sub(1, Ordering::SeqCst);
            return Err(error);
        }
    };
    CAPTURING.fetch_sub(1, Ordering::SeqCst);
    let outcome = match received {
        Err(_) => Outcome::Finding(Finding {
            kind: FindingKind::Hang,
            message: format!("no result after {time_limit:?}"),
            location: String::new(),
            stack: String::new(),
        }),
        Ok(Ok(Ok(()))) => Outcome::Accepted,
        Ok(Ok(Err(error))) => judge_error(&error, &inputs, kind),
        Ok(Err(payload)) => {
            let report = take_panic_report();
            let message = report
                .as_ref()
                .map(|r| r.message.clone())
                .unwrap_or_else(|| payload_text(payload.as_ref()));
            let (location, stack) = report
                .map(|r| (r.location, icf_frames(&r.backtrace)))
                .unwrap_or_default();
            Outcome::Finding(Finding {
                kind: FindingKind::Panic,
                message,
                location,
                stack,
            })
        }
    };
    Ok(outcome)
}

/// Fine is an error naming an input file; for Mach-O it must also say
/// where in it (a section or an offset), as ELF's reader always has.
fn judge_error(error: &anyhow::Error, inputs: &[PathBuf], kind: InputKind) -> Outcome {
    let text = format!("{error:#}");
    if let Some(unreadable) = error.downcast_ref::<OutputUnreadable>() {
        return Outcome::Finding(Finding {
            kind: FindingKind::OutputUnreadable,
            message: unreadable.0.clone(),
            location: String::new(),
            stack: String::new(),
        });
    }
    let names_an_input = inputs.iter().any(|input| {
        // A file that no longer starts like a Mach-O object or an archive
        // is refused as a whole: its name is place enough.
        let needs_place = kind.is_macho() && still_macho_or_archive(input);
        let name = input.display().to_string();
        text.match_indices(&name).any(|(at, _)| {
            let after = &text[at + name.len()..];
            !needs_place || after.contains("section ") || after.contains("offset 0x")
        })
    });
    if names_an_input {
        Outcome::Rejected(text)
    } else {
        Outcome::Finding(Finding {
            kind: FindingKind::UnlocatedError,
            message: text,
            location: String::new(),
            stack: String::new(),
        })
    }
}

/// Whether `path` starts with `MH_MAGIC_64` (little-endian) or an archive's magic.
fn still_macho_or_archive(path: &Path) -> bool {
    use std::io::Read as _;
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut magic))
        .is_ok_and(|()| magic.starts_with(&[0xcf, 0xfa, 0xed, 0xfe]) || &magic == b"!<arch>\n")
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(a panic payload that is not text)".to_owned()
    }
}

/// The frames of a backtrace that are icf's own code (not std, not the
/// fuzzer, not rayon), innermost first, at most twelve, one per line.
pub fn icf_frames(backtrace: &Backtrace) -> String {
    let text = backtrace.to_string();
    let mut frames: Vec<String> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let function = line.trim_start();
        let Some((_, name)) = function.split_once(": ") else {
            continue;
        };
        let at = lines
            .peek()
            .map(|next| next.trim_start())
            .filter(|next| next.starts_with("at "))
            .map(|next| next.trim_start_matches("at ").to_owned());
        let ours = name.starts_with("icf") && !name.starts_with("icf_fuzz");
        if ours {
            frames.push(format!("{name} ({})", at.unwrap_or_default()));
        }
        if frames.len() == 12 {
            break;
        }
    }
    frames.join("\n")
}

/// What the panic hook saw.
struct PanicReport {
    message: String,
    location: String,
    backtrace: Backtrace,
}

/// Cases being run; while any is, panics are recorded instead of printed.
static CAPTURING: AtomicUsize = AtomicUsize::new(0);
static LAST_PANIC: Mutex<Option<PanicReport>> = Mutex::new(None);

fn take_panic_report() -> Option<PanicReport> {
    LAST_PANIC
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take()
}

/// Chains a hook in front of the current one: during a case it records the
/// panic (message, location, unresolved backtrace) silently; otherwise it
/// hands over to the previous hook, so test failures still print.
fn install_panic_recorder() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CAPTURING.load(Ordering::SeqCst) == 0 {
                previous(info);
                return;
            }
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(non-text payload)".to_owned());
            let location = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            let mut last = LAST_PANIC
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            // The first panic of a case is the cause; later ones are echoes.
            if last.is_none() {
                *last = Some(PanicReport {
                    message,
                    location,
                    backtrace: Backtrace::force_capture(),
                });
            }
        }));
    });
}
