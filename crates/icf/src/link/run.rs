//! `icf link -- <command>`: fold the inputs of a real link command, then run
//! it on the rewritten copies.
//!
//! A link never breaks because of icf: when folding fails on inputs the
//! linker accepts (an object format icf does not handle, an internal error,
//! a panic), when icf cannot read the command or make room for its copies,
//! or when the linker rejects the folded inputs but accepts the originals,
//! the original command runs unchanged and the caller gets a warning, unless
//! `strict` asks for the error. Inputs are never modified: rewritten copies
//! live in a temporary directory that is removed after the link.

use crate::analyse::analysis::Analysis;
use crate::analyse::key_cache::PendingWrites;
use crate::link::link_command::{LinkCommand, LinkerFlavor};
use crate::link::linker::{LinkOutcome, Verifier, VerifyFn, milliseconds, relink_plainly, run};
use crate::link::memo::{LinkMemo, Replaced};
use crate::load::program::{Inputs, Options, Program};
use crate::options::PlanOptions;
use crate::report::savings::Report;
use anyhow::Context;
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the user asked of `icf link`.
#[derive(Clone, Debug, Default)]
pub struct LinkOptions {
    pub plan: PlanOptions,
    /// Write the JSON report here.
    pub report: Option<PathBuf>,
    /// Return the report in the outcome (for `--print-icf-sections`).
    pub want_report: bool,
    /// Fail instead of falling back to the plain link.
    pub strict: bool,
    /// Say on stderr how long each phase took.
    pub verbose: bool,
    /// Where to keep comparator keys between links; the plan's own
    /// `cache` setting is replaced by what this resolves to for the
    /// link's output.
    pub cache: crate::options::CacheChoice,
    /// Prove the folded output against a plain link of the same command
    /// (`icf link --verify`): given (plain output, folded output), whether
    /// the folded one is proved. When it is not, the plain output takes
    /// the folded one's place (an error with `strict`, else a warning).
    pub verify: Option<Verifier>,
    /// Fold the linked image instead of the inputs when they hold LTO code
    /// (or always, `--after-link`): see `link/after_link.rs`.
    pub after_link: Option<crate::link::after_link::AfterLink>,
}

/// Folds the inputs of `command` and runs it.
pub fn link(command: &[String], options: &LinkOptions) -> anyhow::Result<LinkOutcome> {
    let (program, args) = command.split_first().context("the link command is empty")?;
    // Reading the command (a response file icf cannot open, say) and making
    // room for the rewritten copies are icf's steps too: when they fail, the
    // command runs as it was, and reports its own errors.
    let setup = LinkCommand::parse(command).and_then(|parsed| {
        // Beside the cache, the rewritten copies can be hard-linked into
        // it and out of it (one file system).
        let cache = options.cache.resolve(parsed.output.as_deref());
        let workspace = cache
            .as_ref()
            .and_then(|cache| {
                let links = cache.dir.join("links");
                remove_abandoned_workspaces(&links);
                TempDir::new_in(&links).ok()
            })
            .map_or_else(|| TempDir::new_in(&std::env::temp_dir()), Ok)?;
        Ok((parsed, workspace, cache))
    });
    let (parsed, workspace, cache) = match setup {
        Ok(setup) => setup,
        Err(error) if !options.strict => return plain_link(program, args, error),
        Err(error) => return Err(error),
    };
    if parsed.relocatable || parsed.inputs.is_empty() {
        let status = run(&parsed.program, &parsed.args)?;
        return Ok(LinkOutcome {
            status,
            fallback: None,
            report: None,
        });
    }
    // `icf shrink` reads ELF images only: a Mach-O link keeps the usual path
    // (which says why its LTO inputs cannot fold).
    if let Some(after) = &options.after_link
        && parsed.format == crate::link::link_command::LinkFormat::Elf
    {
        let why = if after.always {
            Some("--after-link".to_string())
        } else {
            crate::link::after_link::lto_input(&parsed)
        };
        if let Some(why) = why {
            if options.verbose {
                eprintln!("icf: folding the linked image: {why}");
            }
            let settings = crate::link::after_link::Settings {
                strict: options.strict,
                verbose: options.verbose,
                verify: options.verify.as_ref().map(|v| v.0.as_ref()),
                report: options.report.as_deref(),
                want_report: options.want_report,
                keep_unique: options
                    .plan
                    .keep_unique
                    .iter()
                    .chain(&parsed.keep_unique)
                    .cloned()
                    .collect(),
            };
            return crate::link::after_link::link(&parsed, &settings, after);
        }
    }
    // With `--verify`, both links write a map (unless the command writes
    // its own), so that verify knows each section's input file and object.
    let maps = (options.verify.is_some()
        && parsed.format == crate::link::link_command::LinkFormat::Elf
        && !parsed.writes_map())
    .then(|| parsed.output.as_deref().map(verify_maps))
    .flatten();
    let _remove_maps = MapFiles(maps.clone());
    match without_panics(|| fold_inputs(&parsed, options, cache, workspace.path())) {
        Ok((args, report, _cache_writes)) => {
            let args = match &maps {
                Some((_, folded_map)) => parsed.with_map(args, folded_map),
                None => args,
            };
            // The cache's entries are written while the linker runs
            // (`_cache_writes` waits for them when dropped).
            // The linker's messages are held back until it is clear whether
            // the folded link stands: a failure that the plain link does not
            // share is icf's, and must not break the build.
            let started = std::time::Instant::now();
            let folded = Command::new(&parsed.program)
                .args(&args)
                .stderr(std::process::Stdio::piped())
                .output()
                .with_context(|| format!("running {}", parsed.program))?;
            if options.verbose {
                eprintln!("icf: time: link {}", milliseconds(started.elapsed()));
            }
            if folded.status.success()
                && let (Some(verifier), Some(output)) = (&options.verify, &parsed.output)
            {
                std::io::Write::write_all(&mut std::io::stderr(), &folded.stderr)?;
                return verified(
                    &parsed,
                    output,
                    verifier.0.as_ref(),
                    maps.as_ref(),
                    options.strict,
                    report,
                );
            }
            if folded.status.success() || options.strict {
                std::io::Write::write_all(&mut std::io::stderr(), &folded.stderr)?;
                return Ok(LinkOutcome {
                    status: folded.status,
                    fallback: None,
                    report,
                });
            }
            relink_plainly(&parsed, "the folded link", &folded)
        }
        Err(error) if !options.strict => plain_link(&parsed.program, &parsed.args, error),
        Err(error) => Err(error),
    }
}

/// The maps `icf link --verify` has the plain and the folded link write,
/// beside `output` (removed once verified; see [`MapFiles`]).
fn verify_maps(output: &Path) -> (PathBuf, PathBuf) {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = std::process::id();
    (
        output.with_file_name(format!(".{name}.icf-plain.{id}.map")),
        output.with_file_name(format!(".{name}.icf-folded.{id}.map")),
    )
}

/// Removes the maps of [`verify_maps`] when dropped: they are icf's, not
/// the build's.
struct MapFiles(Option<(PathBuf, PathBuf)>);

impl Drop for MapFiles {
    fn drop(&mut self) {
        if let Some((plain, folded)) = &self.0 {
            let _ = std::fs::remove_file(plain);
            let _ = std::fs::remove_file(folded);
        }
    }
}

/// `icf link --verify` after a folded link to `output` succeeded: links
/// the command unchanged into a file beside `output` and proves `output`
/// against it. Proved, the plain file goes; not (or when the plain link
/// cannot be made or the proof cannot run), it takes `output`'s place,
/// and the outcome says why: a fallback, or with `strict` an error.
fn verified(
    parsed: &LinkCommand,
    output: &Path,
    verifier: &VerifyFn,
    maps: Option<&(PathBuf, PathBuf)>,
    strict: bool,
    report: Option<Report>,
) -> anyhow::Result<LinkOutcome> {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let plain = output.with_file_name(format!(".{name}.icf-plain.{}", std::process::id()));
    let args = parsed
        .with_output(&plain)
        .with_context(|| "--verify: icf cannot tell where the link command writes its output")?;
    let args = match maps {
        Some((plain_map, _)) => parsed.with_map(args, plain_map),
        None => args,
    };
    let status = run(&parsed.program, &args)?;
    let proved = if status.success() {
        let maps = maps.map(|(plain, folded)| (plain.as_path(), folded.as_path()));
        verifier(&plain, output, maps).map_err(|e| e.context("--verify"))
    } else {
        Err(anyhow::anyhow!(
            "--verify: the plain link to compare with failed ({status})"
        ))
    };
    let why = match proved {
        Ok(true) => {
            let _ = std::fs::remove_file(&plain);
            return Ok(LinkOutcome {
                status,
                fallback: None,
                report,
            });
        }
        Ok(false) => format!(
            "{} does not verify against the plain link",
            output.display()
        ),
        Err(error) => format!("{error:#}"),
    };
    if status.success() {
        std::fs::rename(&plain, output)
            .with_context(|| format!("replacing {} with the plain link", output.display()))?;
    } else {
        let _ = std::fs::remove_file(&plain);
    }
    if strict {
        anyhow::bail!("{why}");
    }
    Ok(LinkOutcome {
        status,
        fallback: Some(why),
        report: None,
    })
}

/// Runs the command unchanged because folding failed with `error`.
fn plain_link(program: &str, args: &[String], error: anyhow::Error) -> anyhow::Result<LinkOutcome> {
    let status = run(program, args)?;
    Ok(LinkOutcome {
        status,
        fallback: Some(format!("{error:#}")),
        report: None,
    })
}

/// `fold`'s result, with a panic inside it (a bug in icf, on this thread or
/// a worker's) turned into an error, so that it falls back to the plain
/// link like any other failure instead of breaking the build. The panic's
/// own message has already gone to stderr, where it says where icf failed.
fn without_panics<T>(fold: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(fold)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        Err(anyhow::anyhow!("internal error in icf: {message}"))
    })
}

/// Folds (keeping keys and rewritten files in `cache`), writes the changed
/// inputs under `dir`, and returns the command's arguments with those
/// inputs replaced.
fn fold_inputs(
    parsed: &LinkCommand,
    options: &LinkOptions,
    cache: Option<crate::options::CacheSettings>,
    dir: &Path,
) -> anyhow::Result<(Vec<String>, Option<Report>, Option<PendingWrites>)> {
    let started = std::time::Instant::now();
    // The same archive may be named twice (`-lgcc ... -lgcc`): fold it once.
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut file_of_input: Vec<usize> = Vec::new();
    for input in &parsed.inputs {
        let index = match paths.iter().position(|p| p == &input.path) {
            Some(index) => index,
            None => {
                paths.push(input.path.clone());
                paths.len() - 1
            }
        };
        file_of_input.push(index);
    }
    let whole_archive: Vec<usize> = parsed
        .inputs
        .iter()
        .zip(&file_of_input)
        .filter(|(input, _)| input.whole_archive)
        .map(|(_, &file)| file)
        .collect();
    // The link command's own --keep-unique and data-address choice count as icf's.
    let mut plan_options = options.plan.clone();
    plan_options
        .keep_unique
        .extend(parsed.keep_unique.iter().cloned());
    plan_options.ignore_data_address_equality |= parsed.ignore_data_address_equality;
    plan_options.cache = cache;
    // Unchanged inputs relinked: the rewritten files the last link of them
    // kept, and nothing else to do.
    let memo = LinkMemo::for_link(
        parsed,
        &plan_options,
        plan_options.cache.as_ref(),
        options.report.is_some() || options.want_report,
        &paths,
    );
    if let Some(replayed) = memo.as_ref().and_then(|memo| memo.replay(dir)) {
        if options.verbose {
            eprintln!(
                "icf: cache: the inputs are unchanged since a link kept its result: {} rewritten files linked from the cache ({})",
                replayed.len(),
                milliseconds(started.elapsed())
            );
        }
        let replaced: HashMap<&Path, &Path> = replayed
            .iter()
            .map(|(input, output)| (input.as_path(), output.as_path()))
            .collect();
        let arguments = parsed.with_replaced_inputs(
            |input| replaced.get(input.path.as_path()).map(|p| p.to_path_buf()),
            dir,
        )?;
        return Ok((arguments, None, None));
    }
    let inputs = Inputs::open(&paths)?;
    let program_options = Options {
        shared: parsed.shared,
        linked_image: false,
        keep_decoded_code: false,
        ordered_archives: parsed.linker == LinkerFlavor::Ordered,
        strong_members_first: parsed.linker == LinkerFlavor::Mold,
        whole_archive,
        gc_sections: parsed.gc_sections.then(|| parsed.gc_roots.clone()),
        exports: exports_of(parsed),
        linker_scripts: (!parsed.scripts.is_empty()).then(|| scripts_of(parsed)),
    };
    let program = Program::load(&inputs, program_options)?;
    let load = started.elapsed();
    let mut analysis = Analysis::run(&program, &plan_options);
    analysis.plant(&plan_options.plants)?;
    let cache_writes = analysis.cache_writes.take();
    let plan = &analysis.plan;
    if parsed.format == crate::link::link_command::LinkFormat::MachO {
        tell_what_dead_strip_removes(parsed, plan, options.verbose);
    }
    let written = std::time::Instant::now();
    let wants_report = options.report.is_some() || options.want_report;
    if !wants_report {
        analysis.keep_what_the_edits_read();
    }
    let plan = &analysis.plan;
    let edits = analysis.object_edits(plan);
    let (outputs, reused) = crate::write::write_outputs_cached(
        &program,
        &edits,
        dir,
        crate::write::OutputKind::LinkInputs,
        plan_options.cache.as_ref(),
    )?;
    if options.verbose {
        let t = &analysis.timings;
        eprintln!(
            "icf: time: load {}, lift {} (places {}, keys {}), partition {}, plan {}, fold and write {}",
            milliseconds(load),
            milliseconds(t.lift),
            milliseconds(t.places),
            milliseconds(t.keys),
            milliseconds(t.partition),
            milliseconds(t.plan),
            milliseconds(written.elapsed())
        );
        eprintln!(
            "icf: keys: {} functions lifted, {} keys cloned from identical copies",
            analysis.lifts.lifted, analysis.lifts.cloned
        );
        if let Some(cache) = &analysis.cache {
            eprintln!(
                "icf: cache: {} of {} runs' keys read from {} ({} candidates read, {} lifted; {} entries written, {} KiB; {} of {} objects hashed, {})",
                cache.hits,
                cache.runs,
                cache.dir.display(),
                cache.candidates_read,
                cache.candidates_lifted,
                cache.written,
                cache.bytes_written / 1024,
                cache.objects_hashed,
                cache.objects,
                milliseconds(cache.hashing),
            );
            eprintln!(
                "icf: cache: {} rewritten files linked from the cache, {} written to it",
                reused.reused, reused.written
            );
        }
    }
    let replaced: HashMap<&Path, &Path> = outputs
        .iter()
        .filter(|o| o.changed)
        .map(|o| (o.input.as_path(), o.output.as_path()))
        .collect();
    if let Some(memo) = &memo {
        // Kept only when every rewritten file is in the cache.
        let kept: Option<Vec<Replaced>> = outputs
            .iter()
            .filter(|o| o.changed)
            .map(|o| {
                Some(Replaced {
                    input: o.input.clone(),
                    name: o.output.file_name()?.to_os_string(),
                    key: o.cached?,
                })
            })
            .collect();
        if let Some(kept) = kept {
            memo.record(&kept);
        }
    }
    // Naming every member and finding near-duplicates costs more than the
    // fold itself on large links: only when someone reads the report.
    let report = wants_report.then(|| analysis.report(plan, load));
    if let (Some(path), Some(report)) = (&options.report, &report) {
        crate::write::write_atomically(path, (report.to_json() + "\n").as_bytes())?;
    }
    let arguments = parsed.with_replaced_inputs(
        |input| replaced.get(input.path.as_path()).map(|p| p.to_path_buf()),
        dir,
    )?;
    Ok((arguments, report, cache_writes))
}

/// On Mach-O a folded copy stays in its object as an atom nothing refers
/// to (see `icf_object`'s `macho/write.rs`): `-dead_strip` removes it.
/// Without the flag the saving stays in the file, which deserves a warning;
/// with it, `--verbose` says what it will remove.
fn tell_what_dead_strip_removes(
    parsed: &LinkCommand,
    plan: &crate::analyse::analysis::Plan,
    verbose: bool,
) {
    let (aliases, thunks) = plan.aliases_and_thunks();
    if aliases + thunks == 0 {
        return;
    }
    let saved = plan.saved();
    if !parsed.gc_sections {
        let copies = aliases + thunks;
        let (noun, verb) = if copies == 1 {
            ("copy", "stays")
        } else {
            ("copies", "stay")
        };
        eprintln!(
            "icf: warning: the link has no -dead_strip: the {copies} folded {noun} ({saved} bytes) {verb} in the output; add -dead_strip (-Wl,-dead_strip) to drop them"
        );
    } else if verbose {
        eprintln!(
            "icf: -dead_strip removes {aliases} folded copies and the bodies behind {thunks} thunks: {saved} bytes"
        );
    }
}

/// What the link exports: its options, and the names its dynamic lists and
/// version scripts give. A list icf cannot read or understand exports
/// everything, as far as folding is concerned.
fn exports_of(parsed: &LinkCommand) -> crate::load::program::Exports {
    let mut exports = parsed.exports.clone();
    for list in &parsed.export_lists {
        match std::fs::read_to_string(list)
            .ok()
            .and_then(|text| crate::linker_script::exported_names(&text))
        {
            Some(names) => exports.patterns.extend(names),
            None => exports.all = true,
        }
    }
    exports
}

/// The output sections the command's linker scripts name, or why icf
/// cannot tell.
fn scripts_of(parsed: &LinkCommand) -> Result<crate::linker_script::ScriptMap, String> {
    let mut scripts = Vec::new();
    for path in &parsed.scripts {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the linker script {}: {e}", path.display()))?;
        scripts.push((path.display().to_string(), text));
    }
    crate::linker_script::ScriptMap::parse_all(&scripts)
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

/// A workspace this old belongs to a link that was killed: a link's
/// workspace lives only while the link runs.
const ABANDONED_WORKSPACE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Removes the workspaces in `links` (a cache's) that killed links left.
fn remove_abandoned_workspaces(links: &Path) {
    let Ok(entries) = std::fs::read_dir(links) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let abandoned = entry.file_name().to_string_lossy().starts_with("icf-link-")
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > ABANDONED_WORKSPACE);
        if abandoned {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl TempDir {
    /// A new directory in `parent`.
    fn new_in(parent: &Path) -> anyhow::Result<TempDir> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = parent.join(format!("icf-link-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::without_panics;

    #[test]
    fn a_panic_while_folding_is_an_error_not_a_crash() {
        let result: anyhow::Result<()> = without_panics(|| {
            // As a bug deep in a parallel phase would: on a rayon worker.
            use rayon::prelude::*;
            (0..64).into_par_iter().for_each(|i| {
                if i == 63 {
                    panic!("index out of bounds");
                }
            });
            Ok(())
        });
        let error = result.expect_err("the panic becomes an error");
        assert!(
            format!("{error:#}").contains("internal error in icf: index out of bounds"),
            "{error:#}"
        );
        assert_eq!(without_panics(|| Ok(7)).expect("no panic, no error"), 7);
    }
}
