//! The `icf` command. This crate is the only one that prints or exits: it
//! parses arguments, calls the `icf` library and renders results and errors.

use anyhow::Context;
use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "icf",
    version,
    about = "Identical code folding for ELF objects and archives"
)]
struct Cli {
    /// Say more on stderr (skipped archive members; phase timings of `icf link`).
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

/// How to fold, shared by the commands that plan.
#[derive(clap::Args, Debug)]
struct FoldArgs {
    /// `safe` keeps significant addresses unique (thunks); `all` folds everything identical.
    #[arg(long, value_enum, default_value_t = ModeArg::Safe)]
    mode: ModeArg,
    /// Treat the inputs as parts of a `-shared` link (exported symbols are significant and may be interposed).
    #[arg(long)]
    shared: bool,
    /// Never fold this symbol (mangled or demangled name); repeatable.
    #[arg(long = "keep-unique", value_name = "SYMBOL")]
    keep_unique: Vec<String>,
    /// Let read-only data share an address with its twins even where the
    /// address is taken (lld's flag); otherwise data keeps its address in every mode.
    #[arg(long)]
    ignore_data_address_equality: bool,
    /// Lift every object instead of reading keys kept from earlier runs.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
    /// Keep comparator keys here (default: `ICF_CACHE_DIR`, else cargo's
    /// target directory above a link's output, else `~/.cache/icf`).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<std::path::PathBuf>,
    /// Testing only: after planning, make this wrong fold on purpose
    /// (KIND is merge, alias, thunk, unaligned-thunk or table; see
    /// `crates/icf/src/analyse/plant.rs`), so that `icf verify` can be checked to
    /// reject it. `cargo xtask fuzz` uses it; repeatable.
    #[arg(long = "plant-fold", value_name = "KIND:KEPT=MEMBER", hide = true)]
    plant_fold: Vec<icf::PlantedFold>,
}

impl FoldArgs {
    fn cache(&self) -> icf::CacheChoice {
        match (&self.cache_dir, self.no_cache) {
            (_, true) => icf::CacheChoice::Off,
            (Some(dir), false) => icf::CacheChoice::Dir(dir.clone()),
            (None, false) => icf::CacheChoice::Default,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ModeArg {
    Safe,
    All,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Format {
    Text,
    Json,
    /// GitHub-flavoured markdown, for `$GITHUB_STEP_SUMMARY` and PR comments.
    Markdown,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Report what folds in objects and archives, and what it saves.
    Report {
        #[command(flatten)]
        fold: FoldArgs,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Print lld's `--print-icf-sections` lines instead of the report.
        #[arg(long)]
        print_icf_sections: bool,
        /// How many groups the text report lists.
        #[arg(long, default_value_t = 30)]
        top: usize,
        /// List under each name in the text report the objects (archive members) it comes from.
        #[arg(long)]
        objects: bool,
        /// An earlier JSON report: markdown shows the difference.
        #[arg(long, value_name = "OLD.json")]
        baseline: Option<PathBuf>,
        /// Exit non-zero when the folded size grew by more than BYTES against --baseline.
        #[arg(long, value_name = "BYTES", requires = "baseline")]
        fail_if_larger: Option<u64>,
        /// Objects and archives to analyze, or one JSON report to render again.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
    /// Fold objects and archives: write each input, rewritten, under --out-dir.
    Fold {
        #[command(flatten)]
        fold: FoldArgs,
        /// Where the outputs go; each keeps its input's file name (a repeated name gets `<position>-` in front).
        #[arg(long, value_name = "DIR")]
        out_dir: PathBuf,
        /// Also write the JSON report here.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
    /// Fold the inputs of a link command, then run it: `icf link -- cc main.o libfoo.a -o app`.
    Link {
        #[command(flatten)]
        fold: FoldArgs,
        /// Write the JSON report here.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// Print lld's `--print-icf-sections` lines.
        #[arg(long)]
        print_icf_sections: bool,
        /// Fail when folding fails instead of running the plain link.
        #[arg(long)]
        strict: bool,
        /// Also link the command unchanged beside the output and prove the
        /// folded output against it (`icf verify`); when the proof fails,
        /// the plain output takes its place (an error with `--strict`).
        #[arg(long)]
        verify: bool,
        /// Fold the linked image (`icf shrink` on a link with
        /// `--emit-relocs` added) instead of the inputs, as icf does by
        /// itself when they hold LTO code (LLVM bitcode, GCC's LTO objects).
        #[arg(long)]
        after_link: bool,
        /// The real link command.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Explain why two functions do or do not fold.
    Explain {
        #[command(flatten)]
        fold: FoldArgs,
        /// The first function (mangled or demangled name; NAME@OBJECT picks one of several copies).
        left: String,
        /// The second function.
        right: String,
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
    /// Fold the identical functions of a linked executable or shared
    /// library kept with `-Wl,-q` (`--emit-relocs`), and compact its code:
    /// OUT is smaller on disk and behaves as IN does.
    Shrink {
        /// `safe` keeps significant addresses unique (thunks); `all` folds everything identical.
        #[arg(long, value_enum, default_value_t = ModeArg::Safe)]
        mode: ModeArg,
        /// Never fold this symbol (mangled or demangled name); repeatable.
        #[arg(long = "keep-unique", value_name = "SYMBOL")]
        keep_unique: Vec<String>,
        /// Prove the shrunk image against IN (`icf verify`) before writing
        /// OUT; when the proof fails, write nothing and fail.
        #[arg(long)]
        verify: bool,
        /// Write the JSON report of what folds (and what keeps its place) here.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// IN's link map (`-Wl,-Map=FILE`, as lld, mold, GNU ld or gold
        /// write it): with it (and the input objects it names, still in
        /// place), the compiler's anonymous read-only constants that hold
        /// the same bytes fold too, as `icf link` folds them (x86-64).
        #[arg(long, value_name = "FILE")]
        map: Option<PathBuf>,
        /// Testing only: make this wrong fold on purpose (see `icf link`).
        #[arg(long = "plant-fold", value_name = "KIND:KEPT=MEMBER", hide = true)]
        plant_fold: Vec<icf::PlantedFold>,
        /// The image to shrink (never modified).
        input: PathBuf,
        /// Where to write the shrunk image (atomically).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Prove that FOLDED (linked with folding) does what PLAIN (linked without) does, or print the first difference.
    Verify {
        /// `safe`: observed function addresses must stay distinct; `all`: only data addresses must.
        #[arg(long, value_enum, default_value_t = ModeArg::Safe)]
        mode: ModeArg,
        /// Accept a thunk between vague-linkage C++ functions (weak, `_Z`,
        /// or in a COMDAT group of the input object `--plain-map` names)
        /// without comparing bodies: folds of COMDAT instances that differ
        /// between units are right by the one-definition rule only.
        #[arg(long)]
        assume_odr: bool,
        /// PLAIN's link map (`-Wl,-Map=FILE`, as lld, mold, GNU ld or gold
        /// write it): which input file each input section came from, so an
        /// address that ends one file's section and starts another's is
        /// read as the one the code's own file can name; where both are
        /// one file's, the input object the map names (when it is still
        /// there) says which section its relocation named.
        #[arg(long, value_name = "FILE")]
        plain_map: Option<PathBuf>,
        /// FOLDED's link map: with `--plain-map`, local symbols pair by the
        /// input file their sections came from (objects without `STT_FILE`
        /// symbols name no file for them otherwise).
        #[arg(long, value_name = "FILE", requires = "plain_map")]
        folded_map: Option<PathBuf>,
        /// The executable or shared library linked without folding.
        plain: PathBuf,
        /// The same link with folding.
        folded: PathBuf,
    },
    /// Print the normalized IR of the functions in objects and archives.
    Dump {
        /// Only this function (mangled or demangled name).
        #[arg(long)]
        function: Option<String>,
        /// Print a summary instead of the IR: functions, bytes, opaque code, lifting speed.
        #[arg(long)]
        stats: bool,
        /// Treat the inputs as parts of a `-shared` link (exported symbols may be interposed).
        #[arg(long)]
        shared: bool,
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Link {
        fold,
        report,
        print_icf_sections,
        strict,
        verify,
        after_link,
        command,
    } = &cli.command
    {
        let plan = plan_options(fold);
        let plan_mode = plan.mode;
        let mode = match plan.mode {
            icf::Mode::Safe => icf_verify::Mode::Safe,
            icf::Mode::All => icf_verify::Mode::All,
        };
        let options = icf::LinkOptions {
            plan,
            cache: fold.cache(),
            report: report.clone(),
            want_report: *print_icf_sections,
            strict: *strict,
            verbose: cli.verbose,
            verify: verify.then(|| {
                icf::Verifier(std::sync::Arc::new(
                    move |plain: &std::path::Path,
                          folded: &std::path::Path,
                          maps: Option<(&std::path::Path, &std::path::Path)>| {
                        let options = icf_verify::VerifyOptions {
                            mode,
                            plain_map: maps.map(|(plain, _)| plain.to_path_buf()),
                            folded_map: maps.map(|(_, folded)| folded.to_path_buf()),
                            ..icf_verify::VerifyOptions::default()
                        };
                        let outcome = icf_verify::verify(plain, folded, &options)?;
                        // The first difference says why the plain link
                        // takes the output's place.
                        anyhow::ensure!(
                            outcome.passed(),
                            "{} does not verify against the plain link: {outcome}",
                            folded.display()
                        );
                        Ok(true)
                    },
                ))
            }),
            after_link: Some(icf_shrink::after_link(plan_mode, *after_link)),
        };
        return run_link(command, &options, *print_icf_sections);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("icf: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Verifies FOLDED against PLAIN: a summary, or the first difference and an error.
fn run_verify(
    plain: &std::path::Path,
    folded: &std::path::Path,
    mode: ModeArg,
    assume_odr: bool,
    maps: (Option<PathBuf>, Option<PathBuf>),
) -> anyhow::Result<()> {
    let options = icf_verify::VerifyOptions {
        mode: match mode {
            ModeArg::Safe => icf_verify::Mode::Safe,
            ModeArg::All => icf_verify::Mode::All,
        },
        assume_odr,
        plain_map: maps.0,
        folded_map: maps.1,
    };
    let outcome = icf_verify::verify(plain, folded, &options)?;
    write_stdout(&outcome.to_string())?;
    anyhow::ensure!(
        outcome.passed(),
        "{} does not verify against {}",
        folded.display(),
        plain.display()
    );
    Ok(())
}

/// `icf shrink --verify`: shrinks `input` into a file beside `output`,
/// proves it against `input`, and only then renames it to `output` (so
/// `output` is untouched when the proof fails, as when the shrink does).
fn shrink_verified(
    input: &std::path::Path,
    output: &std::path::Path,
    options: &icf_shrink::ShrinkOptions,
    mode: ModeArg,
) -> anyhow::Result<icf_shrink::Shrunk> {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let unproved = output.with_file_name(format!(".{name}.icf-unproved.{}", std::process::id()));
    let result = (|| {
        let shrunk = icf_shrink::shrink(input, &unproved, options)?;
        let verify = icf_verify::VerifyOptions {
            mode: match mode {
                ModeArg::Safe => icf_verify::Mode::Safe,
                ModeArg::All => icf_verify::Mode::All,
            },
            plain_map: options.map.clone(),
            ..icf_verify::VerifyOptions::default()
        };
        let outcome = icf_verify::verify(input, &unproved, &verify)?;
        anyhow::ensure!(
            outcome.passed(),
            "{} not written: the shrunk image does not verify against {}:\n{}",
            output.display(),
            input.display(),
            outcome.to_string().trim_end()
        );
        std::fs::rename(&unproved, output)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", output.display()))?;
        Ok(shrunk)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&unproved);
    }
    result
}

/// Runs a folded link and exits with the linker's status.
fn run_link(command: &[String], options: &icf::LinkOptions, print_icf_sections: bool) -> ExitCode {
    match icf::link(command, options) {
        Ok(outcome) => {
            if let Some(reason) = &outcome.fallback {
                eprintln!("icf: warning: linking without folding: {reason}");
            }
            if print_icf_sections && let Some(report) = &outcome.report {
                let _ = write_stdout(&report.to_icf_sections());
            }
            exit_code(outcome.status)
        }
        Err(error) => {
            eprintln!("icf: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The linker's exit status as ours; a linker killed by a signal is a failure.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Report {
            fold,
            format,
            print_icf_sections,
            top,
            objects,
            baseline,
            fail_if_larger,
            inputs,
        } => {
            let report = match inputs.as_slice() {
                [json] if json.extension().is_some_and(|e| e == "json") => read_report(json)?,
                _ => {
                    let started = std::time::Instant::now();
                    let files = icf::Inputs::open(&inputs)?;
                    let program = load_as(&files, &fold, cli.verbose, Reading::ObjectsOrImage)?;
                    let load = started.elapsed();
                    let analysing = std::time::Instant::now();
                    let analysis = analyze(&program, &fold);
                    let analysed = analysing.elapsed();
                    let reporting = std::time::Instant::now();
                    let plan = &analysis.plan;
                    let report = analysis.report(plan, load);
                    if cli.verbose {
                        let t = &analysis.timings;
                        eprintln!(
                            "icf: report phases: load {} ms, analysis {} ms (places {}, keys {}, partition {}, plan {}), report {} ms",
                            load.as_millis(),
                            analysed.as_millis(),
                            t.places.as_millis(),
                            t.keys.as_millis(),
                            t.partition.as_millis(),
                            t.plan.as_millis(),
                            reporting.elapsed().as_millis()
                        );
                    }
                    report
                }
            };
            let baseline = baseline.as_deref().map(read_report).transpose()?;
            let text = if print_icf_sections {
                report.to_icf_sections()
            } else {
                match format {
                    Format::Text => report.to_text(&icf::TextOptions {
                        groups_shown: top,
                        objects,
                    }),
                    Format::Json => report.to_json() + "\n",
                    Format::Markdown => report.to_markdown(baseline.as_ref(), top.min(20)),
                }
            };
            write_stdout(&text)?;
            if let (Some(limit), Some(baseline)) = (fail_if_larger, &baseline) {
                let growth = report.folded_size() as i64 - baseline.folded_size() as i64;
                if growth > limit as i64 {
                    anyhow::bail!(
                        "the folded size grew by {growth} bytes against the baseline, more than {limit}"
                    );
                }
            }
            Ok(())
        }
        Command::Fold {
            fold,
            out_dir,
            report,
            inputs,
        } => {
            let started = std::time::Instant::now();
            let files = icf::Inputs::open(&inputs)?;
            let program = load(&files, &fold, cli.verbose)?;
            let load = started.elapsed();
            let mut analysis = analyze(&program, &fold);
            analysis.plant(&fold.plant_fold)?;
            if report.is_none() {
                analysis.keep_what_the_edits_read();
            }
            let plan = &analysis.plan;
            let edits = analysis.object_edits(plan);
            let outputs = icf::write_outputs(&program, &edits, &out_dir, icf::OutputKind::Copies)?;
            // The report names every member: only when it is asked for.
            if let Some(path) = report {
                let summary = analysis.report(plan, load);
                icf::write_atomically(&path, (summary.to_json() + "\n").as_bytes())?;
            }
            let changed = outputs.iter().filter(|o| o.changed).count();
            let (aliases, thunks) = plan.aliases_and_thunks();
            eprintln!(
                "icf: folded {aliases} aliases and {thunks} thunks, {} bytes saved; {changed} of {} files rewritten into {}",
                plan.saved(),
                outputs.len(),
                out_dir.display()
            );
            Ok(())
        }
        Command::Explain {
            fold,
            left,
            right,
            inputs,
        } => {
            let files = icf::Inputs::open(&inputs)?;
            let program = load_as(&files, &fold, cli.verbose, Reading::ObjectsOrImage)?;
            let analysis = analyze(&program, &fold);
            let find = |name: &str| -> anyhow::Result<icf::CandidateId> {
                let found = analysis.find(name);
                match found.as_slice() {
                    [] => anyhow::bail!("no function named '{name}' in the inputs"),
                    [one] => Ok(*one),
                    [first, ..] => {
                        eprintln!(
                            "icf: warning: {} candidates are named '{name}' (tell them apart with NAME@OBJECT); explaining the first, in {}",
                            found.len(),
                            program.object_name(analysis.candidates[first.index()].object)
                        );
                        Ok(*first)
                    }
                }
            };
            let (l, r) = (find(&left)?, find(&right)?);
            write_stdout(&analysis.explain(l, r))
        }
        // Handled in main: it exits with the linker's status.
        Command::Link { .. } => Ok(()),
        Command::Shrink {
            mode,
            keep_unique,
            verify,
            report,
            map,
            plant_fold,
            input,
            output,
        } => {
            let options = icf_shrink::ShrinkOptions {
                mode: match mode {
                    ModeArg::Safe => icf::Mode::Safe,
                    ModeArg::All => icf::Mode::All,
                },
                keep_unique,
                drop_kept_relocations: false,
                want_report: report.is_some(),
                map,
                plants: plant_fold,
            };
            let shrunk = if verify {
                shrink_verified(&input, &output, &options, mode)?
            } else {
                icf_shrink::shrink(&input, &output, &options)?
            };
            if let Some(note) = shrunk.emptied_note() {
                eprintln!("icf: warning: {note}");
            }
            if cli.verbose {
                let phases: Vec<String> = shrunk
                    .phases
                    .iter()
                    .map(|(phase, took)| format!("{phase} {} ms", took.as_millis()))
                    .collect();
                eprintln!("icf: shrink phases: {}", phases.join(", "));
            }
            if let (Some(path), Some(report)) = (&report, &shrunk.report) {
                icf::write_atomically(path, report.to_json().as_bytes())?;
            }
            write_stdout(&format!("{}\n", shrunk.summary(&input)))
        }
        Command::Verify {
            mode,
            assume_odr,
            plain_map,
            folded_map,
            plain,
            folded,
        } => run_verify(&plain, &folded, mode, assume_odr, (plain_map, folded_map)),
        Command::Dump {
            function,
            stats,
            shared,
            inputs,
        } => {
            let files = icf::Inputs::open(&inputs)?;
            let program = icf::Program::load(
                &files,
                icf::Options {
                    shared,
                    ..icf::Options::default()
                },
            )?;
            log_skipped(cli.verbose, &program);
            let text = if stats {
                render_stats(&icf::lift_stats(&program))
            } else {
                icf::dump(&program, &icf::DumpOptions { function })?
            };
            write_stdout(&text)
        }
    }
}

/// Loads the inputs as one link: `-shared` if asked, skipped members said with --verbose.
fn load<'data>(
    files: &'data icf::Inputs,
    fold: &FoldArgs,
    verbose: bool,
) -> anyhow::Result<icf::Program<'data>> {
    load_as(files, fold, verbose, Reading::ObjectsOnly)
}

/// Whether a command reads linked images as well as objects.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Reading {
    ObjectsOnly,
    ObjectsOrImage,
}

fn load_as<'data>(
    files: &'data icf::Inputs,
    fold: &FoldArgs,
    verbose: bool,
    reading: Reading,
) -> anyhow::Result<icf::Program<'data>> {
    let first_image = files.files.iter().find(|f| icf::is_linked_image(f.data()));
    let linked_image = reading == Reading::ObjectsOrImage && first_image.is_some();
    if let Some(image) = first_image.filter(|_| linked_image && files.files.len() > 1) {
        anyhow::bail!(
            "{} is a linked executable or shared library, which is read alone: pass it without other inputs",
            image.path.display()
        );
    }
    let options = icf::Options {
        shared: fold.shared,
        linked_image,
        ..icf::Options::default()
    };
    let program = icf::Program::load(files, options)?;
    log_skipped(verbose, &program);
    Ok(program)
}

/// Partitions the program and plans the fold as the user asked.
fn analyze<'p, 'data>(
    program: &'p icf::Program<'data>,
    fold: &FoldArgs,
) -> icf::Analysis<'p, 'data> {
    icf::Analysis::run(program, &plan_options(fold))
}

fn read_report(path: &std::path::Path) -> anyhow::Result<icf::Report> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    icf::Report::from_json(&text)
        .with_context(|| format!("{} is not an icf JSON report", path.display()))
}

fn plan_options(fold: &FoldArgs) -> icf::PlanOptions {
    icf::PlanOptions {
        mode: match fold.mode {
            ModeArg::Safe => icf::Mode::Safe,
            ModeArg::All => icf::Mode::All,
        },
        keep_unique: fold.keep_unique.clone(),
        ignore_data_address_equality: fold.ignore_data_address_equality,
        only_code_in: None,
        keep_places: Vec::new(),
        cache: fold.cache().resolve(None),
        plants: fold.plant_fold.clone(),
    }
}

fn log_skipped(verbose: bool, program: &icf::Program<'_>) {
    if verbose {
        for (file, skipped) in &program.skipped {
            eprintln!(
                "icf: skipped {}({}): {}",
                program.file_path(*file).display(),
                skipped.member,
                skipped.reason
            );
        }
    }
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()) {
        // `icf report | head` is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

fn render_stats(stats: &icf::LiftStats) -> String {
    let seconds = stats.lift_time.as_secs_f64().max(1e-9);
    let mut out = format!(
        "objects        {}\nfunctions      {}\ncode bytes     {}\ninstructions   {}\nblocks         {}\n",
        stats.objects, stats.functions, stats.code_bytes, stats.instructions, stats.blocks
    );
    let opaque: usize = stats.opaque.values().sum();
    out.push_str(&format!(
        "opaque         {opaque} functions, {} bytes ({:.2}% of code)\n",
        stats.opaque_bytes,
        100.0 * stats.opaque_bytes as f64 / stats.code_bytes.max(1) as f64
    ));
    for (reason, count) in &stats.opaque {
        out.push_str(&format!("  {reason:<40} {count}\n"));
    }
    out.push_str(&format!(
        "lift time      {:.1} ms ({:.1} MB/s, {:.0} functions/s)\n",
        seconds * 1e3,
        stats.code_bytes as f64 / seconds / 1e6,
        stats.functions as f64 / seconds
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every subcommand says in one line what it does, and that line is
    /// its own (a doc comment left above the wrong variant once gave
    /// `shrink` the description of `verify`, and `verify` none).
    #[test]
    fn every_subcommand_has_its_own_description() {
        let cli = Cli::command();
        let about = |name: &str| {
            let command = cli.find_subcommand(name).expect("the subcommand exists");
            command
                .get_about()
                .map(|about| about.to_string())
                .unwrap_or_default()
        };
        for command in cli.get_subcommands() {
            let name = command.get_name();
            if name != "help" {
                assert!(!about(name).is_empty(), "`icf {name}` has no description");
            }
        }
        assert!(
            about("verify").starts_with("Prove that FOLDED"),
            "{}",
            about("verify")
        );
        assert!(
            about("shrink").starts_with("Fold the identical functions"),
            "{}",
            about("shrink")
        );
    }
}
