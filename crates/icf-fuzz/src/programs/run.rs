//! Building, linking, running and comparing one generated program: compile
//! every file, archive the archive members, link once plain and once through
//! `icf link --strict` per mode, run all three, compare exit status and
//! transcript, run `icf verify` on each pair, plant one wrong fold that
//! verify must reject (`plant.rs`), and on a finding turn the work
//! directory into a self-contained reproduction.
//!
//! Main assumption: every step is one external command run in the program's
//! directory, so the same list of steps both drives the run here and becomes
//! the reproduction's `build.sh`; a behaviour seen here is what the script
//! shows. Every icf command runs under `timeout` ([`ICF_TIME_LIMIT`]), in
//! the script too: a hang is an `icf-timeout` finding within a minute.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use anyhow::{Context, Result};

use super::plant::{self, Planted};
use super::{Arch, Compiler, FUNCTION_ADDRESS_PREFIX, Linker, Pic, Program};
use icf_fixtures::shell_quote;

/// Which `--mode` a folded build used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    Safe,
    All,
}

impl Mode {
    pub const BOTH: [Mode; 2] = [Mode::Safe, Mode::All];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Safe => "safe",
            Mode::All => "all",
        }
    }
}

/// What kind of wrong behaviour a folded build showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FindingKind {
    /// `icf link --strict` exited non-zero (or the link it ran failed).
    IcfFailed,
    /// The folded program died of a signal or exited with another status.
    Crash,
    /// The folded program ran past the time limit.
    Timeout,
    /// Same exit status, different transcript.
    OutputDiff,
    /// `icf verify` rejected a pair whose outputs match.
    Verify,
    /// The link with icf's cache (cold for safe mode, warm for all: the
    /// same objects) wrote another binary than the link without it, or a
    /// relink of the unchanged inputs (one that replays the kept result)
    /// another binary than the folded link.
    CacheDiff,
    /// `icf shrink` on the plain `-q` binary failed other than by refusing
    /// it (a panic, an error not naming the input).
    ShrinkFailed,
    /// The shrunk binary ended otherwise or printed otherwise than the plain one.
    ShrinkDiff,
    /// `icf verify PLAIN SHRUNK` rejected a shrunk binary whose output matches.
    ShrinkVerify,
    /// A wrong fold planted on purpose (`plant.rs`) changed what the
    /// program does, and `icf verify` passed it.
    VerifyFalsePass,
    /// `icf verify` of a planted build died (a panic, a signal) instead of
    /// answering.
    VerifyCrashed,
    /// An icf command (link, verify, shrink, a planted link) ran past
    /// [`ICF_TIME_LIMIT`] and was stopped.
    IcfTimeout,
}

impl FindingKind {
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::IcfFailed => "icf-failed",
            FindingKind::Crash => "crash",
            FindingKind::Timeout => "timeout",
            FindingKind::OutputDiff => "output-diff",
            FindingKind::Verify => "verify",
            FindingKind::CacheDiff => "cache-diff",
            FindingKind::ShrinkFailed => "shrink-failed",
            FindingKind::ShrinkDiff => "shrink-diff",
            FindingKind::ShrinkVerify => "shrink-verify",
            FindingKind::VerifyFalsePass => "verify-false-pass",
            FindingKind::VerifyCrashed => "verify-crashed",
            FindingKind::IcfTimeout => "icf-timeout",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Finding {
    pub kind: FindingKind,
    pub mode: Mode,
    /// A few lines saying what differed.
    pub detail: String,
}

/// Functions a folded build folded, from the JSON report's totals.
#[derive(Debug, Clone, Copy, Default)]
pub struct Folds {
    pub aliases: u64,
    pub thunks: u64,
}

impl Folds {
    pub fn total(self) -> u64 {
        self.aliases + self.thunks
    }
}

/// Everything one program's run established.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub seed: u64,
    pub arch: Arch,
    pub linker: Linker,
    /// Compiler, flags and link options on one line.
    pub description: String,
    pub functions: usize,
    /// Per mode, in [`Mode::BOTH`] order; `None` when icf wrote no report.
    pub folds: [Option<Folds>; 2],
    pub findings: Vec<Finding>,
    /// Set when the plain build itself failed: a generator bug, not an icf one.
    pub invalid: Option<String>,
    /// Per mode, what `icf shrink` did with the plain `-q` binary: `None`
    /// when not run (no `-q`, or a linker script), else whether it shrank
    /// it (`Ok`) or refused it, with the reason.
    pub shrink: [Option<Result<(), String>>; 2],
    /// The wrong fold planted on purpose, and what came of it.
    pub plant: Option<Planted>,
    /// Per mode, the relink of unchanged inputs (`link/memo.rs`): `None`
    /// when not tried (the folded link failed), else whether the second
    /// link replayed the first's kept result (a thin archive keeps none).
    /// Either way both must write the folded link's binary.
    pub replays: [Option<bool>; 2],
    pub seconds: f64,
    pub repro: Option<PathBuf>,
}

impl Outcome {
    /// The outcome of `program` before anything ran: no folds, no
    /// findings, nothing shrunk or planted.
    pub fn of(program: &Program) -> Outcome {
        Outcome {
            seed: program.seed,
            arch: program.config.arch,
            linker: program.config.linker,
            description: describe(program),
            functions: program.functions,
            folds: [None, None],
            findings: Vec::new(),
            invalid: None,
            shrink: [None, None],
            plant: None,
            replays: [None, None],
            seconds: 0.0,
            repro: None,
        }
    }
}

/// The tools a run uses.
#[derive(Debug, Clone)]
pub struct Tools {
    pub icf: PathBuf,
}

/// A placeholder word in a step's arguments, replaced by the icf binary.
pub(super) const ICF: &str = "@ICF@";

/// Seconds an icf command may run (under `timeout`) before it is stopped
/// and reported as an `icf-timeout` finding. A program's icf commands take
/// about a second; the limit only has to tell a hang from a slow machine.
pub const ICF_TIME_LIMIT: &str = "60";

/// The exit status `timeout` gives a command it stopped at its limit.
const TIMED_OUT: i32 = 124;

/// One command of a build, run in the program's directory.
#[derive(Debug, Clone)]
pub(super) struct Step {
    pub(super) args: Vec<String>,
}

impl Step {
    /// Whether the step runs icf (under the time limit).
    fn is_icf(&self) -> bool {
        self.args.first().is_some_and(|arg| arg == ICF)
    }

    /// The words run: an icf command behind `timeout` (`TERM` at the
    /// limit, to the whole process group, so a linker icf started stops
    /// too; `KILL` ten seconds later).
    fn words(&self) -> Vec<&str> {
        let mut words = Vec::with_capacity(self.args.len() + 3);
        if self.is_icf() {
            words.extend(["timeout", "--kill-after=10", ICF_TIME_LIMIT]);
        }
        words.extend(self.args.iter().map(String::as_str));
        words
    }

    fn command(&self, dir: &Path, tools: &Tools) -> Command {
        let icf = tools.icf.display().to_string();
        let words: Vec<&str> = self
            .words()
            .into_iter()
            .map(|word| if word == ICF { icf.as_str() } else { word })
            .collect();
        let mut command = Command::new(words[0]);
        command.args(&words[1..]).current_dir(dir);
        command
    }

    /// The step as a line of `sh`, with icf as `"$ICF"`.
    pub(super) fn shell(&self) -> String {
        self.words()
            .into_iter()
            .map(|word| {
                if word == ICF {
                    "\"$ICF\"".to_string()
                } else {
                    shell_quote(word)
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The commands that build and run one program.
#[derive(Debug)]
pub(super) struct Plan {
    compile: Vec<Step>,
    archive: Option<Step>,
    /// The link command without `-o OUTPUT`.
    pub(super) link: Vec<String>,
    /// The command that runs a binary, without the binary.
    runner: Vec<String>,
    /// The link's `--keep-unique` symbols.
    keep_unique: Vec<String>,
    /// The plain link keeps its relocations (`-q`) and writes its map
    /// (`plain.map`), which `icf shrink --map` and the shrunk binaries'
    /// `icf verify --plain-map` read.
    mapped: bool,
}

impl Plan {
    fn new(program: &Program) -> Plan {
        let config = &program.config;
        let toolchain = icf_fixtures::Build::bare(config.compiler, config.arch);
        let driver = icf_fixtures::command_words(&toolchain.driver_command(false));
        let pic = match config.pic {
            Pic::None => "-fno-pic",
            Pic::Pie => "-fPIE",
            Pic::SharedCodePie | Pic::SharedCodeNoPie => "-fPIC",
        };
        let mut compile = Vec::new();
        let mut objects = Vec::new();
        let mut members = Vec::new();
        for file in &program.files {
            let object = file.name.replace(".c", ".o");
            let mut args = driver.clone();
            args.extend([
                config.opt.to_string(),
                "-w".into(),
                "-I.".into(),
                pic.into(),
            ]);
            args.extend(config.extra_cflags.iter().cloned());
            if file.function_sections {
                args.push("-ffunction-sections".into());
            }
            if file.data_sections {
                args.push("-fdata-sections".into());
            }
            args.extend(["-c".into(), file.name.clone(), "-o".into(), object.clone()]);
            compile.push(Step { args });
            if file.in_archive {
                members.push(object);
            } else {
                objects.push(object);
            }
        }
        let archive = (!members.is_empty()).then(|| {
            let ar = match config.arch {
                Arch::X86_64 => "ar",
                Arch::Aarch64 => "aarch64-linux-gnu-ar",
            };
            let mut args = vec![ar.to_string(), "rcs".into(), "libfz.a".into()];
            args.extend(members.iter().cloned());
            Step { args }
        });
        let mut link = icf_fixtures::command_words(&toolchain.link_command(false, config.linker));
        if config.keep_relocs {
            link.push("-Wl,-q".into());
        }
        link.push(
            match config.pic {
                Pic::None | Pic::SharedCodeNoPie => "-no-pie",
                Pic::Pie | Pic::SharedCodePie => "-pie",
            }
            .into(),
        );
        if config.gc_sections {
            link.push("-Wl,--gc-sections".into());
        }
        if config.export_dynamic {
            link.push("-rdynamic".into());
        }
        if program.linker_script.is_some() {
            link.push("-Wl,-T,fz.ld".into());
        }
        for symbol in &config.keep_unique {
            link.push(format!("-Wl,--keep-unique={symbol}"));
        }
        link.extend(objects);
        if archive.is_some() {
            link.push("libfz.a".into());
        }
        let limit = match config.arch {
            Arch::X86_64 => "10",
            Arch::Aarch64 => "30",
        };
        let runner: Vec<String> = ["timeout", limit]
            .iter()
            .chain(icf_fixtures::runner(toolchain.arch))
            .map(|word| word.to_string())
            .collect();
        Plan {
            compile,
            archive,
            link,
            runner,
            keep_unique: config.keep_unique.clone(),
            mapped: config.keep_relocs,
        }
    }

    fn plain_link(&self) -> Step {
        let mut args = self.link.clone();
        if self.mapped {
            args.push("-Wl,-Map=plain.map".into());
        }
        args.extend(["-o".into(), "plain".into()]);
        Step { args }
    }

    /// `icf link` with its cache in `cache/` (the safe link fills it, the
    /// all link reads it).
    fn folded_link(&self, mode: Mode) -> Step {
        self.icf_link(
            &["--cache-dir", "cache"],
            mode,
            &["--report", &format!("{}.json", mode.name())],
            &format!("folded-{}", mode.name()),
        )
    }

    /// The same link with a cache of its own, saying (`-v`) whether it
    /// replayed a kept result: run twice, the second replays the first.
    fn relink(&self, mode: Mode) -> Step {
        self.icf_link(
            &["--cache-dir", "relink-cache"],
            mode,
            &["-v"],
            &format!("relinked-{}", mode.name()),
        )
    }

    /// The same link without the cache, whose binary must be the same.
    fn uncached_link(&self, mode: Mode) -> Step {
        self.icf_link(
            &["--no-cache"],
            mode,
            &[],
            &format!("uncached-{}", mode.name()),
        )
    }

    /// `icf link --strict CACHE --mode MODE EXTRA -- LINK -o OUTPUT`.
    pub(super) fn icf_link(
        &self,
        cache: &[&str],
        mode: Mode,
        extra: &[&str],
        output: &str,
    ) -> Step {
        let mut args = vec![ICF.to_string(), "link".into(), "--strict".into()];
        args.extend(cache.iter().map(|word| word.to_string()));
        args.extend(["--mode".into(), mode.name().into()]);
        args.extend(extra.iter().map(|word| word.to_string()));
        args.push("--".into());
        args.extend(self.link.iter().cloned());
        args.extend(["-o".into(), output.into()]);
        Step { args }
    }

    pub(super) fn run(&self, binary: &str) -> Step {
        let mut args = self.runner.clone();
        args.push(format!("./{binary}"));
        Step { args }
    }

    /// `icf shrink` of the plain binary (linked with `-q`), told the
    /// link's `--keep-unique` symbols (a binary does not record them).
    fn shrink(&self, mode: Mode) -> Step {
        let mut args = vec![
            ICF.to_string(),
            "shrink".into(),
            "--mode".into(),
            mode.name().into(),
        ];
        for symbol in &self.keep_unique {
            args.extend(["--keep-unique".into(), symbol.clone()]);
        }
        if self.mapped {
            args.extend(["--map".into(), "plain.map".into()]);
        }
        args.extend([
            "plain".into(),
            "-o".into(),
            format!("shrunk-{}", mode.name()),
        ]);
        Step { args }
    }

    /// `icf verify` of a shrunk binary, with the plain link's map.
    fn verify_shrunk(&self, mode: Mode, binary: &str) -> Step {
        let mut step = self.verify_binary(mode, binary);
        if self.mapped {
            step.args
                .splice(2..2, ["--plain-map".to_string(), "plain.map".to_string()]);
        }
        step
    }

    fn verify(&self, mode: Mode) -> Step {
        self.verify_binary(mode, &format!("folded-{}", mode.name()))
    }

    pub(super) fn verify_binary(&self, mode: Mode, binary: &str) -> Step {
        let mut args = vec![
            ICF.to_string(),
            "verify".into(),
            "plain".into(),
            binary.to_string(),
        ];
        if mode == Mode::All {
            args.extend(["--mode".into(), "all".into()]);
        }
        Step { args }
    }
}

/// One line naming the compiler, flags and link options of `program`.
pub fn describe(program: &Program) -> String {
    let config = &program.config;
    let mut words = vec![
        match config.compiler {
            Compiler::Gcc => "gcc",
            Compiler::Clang => "clang-19",
        }
        .to_string(),
        config.opt.to_string(),
        match config.pic {
            Pic::None => "-fno-pic/-no-pie",
            Pic::Pie => "-fPIE/-pie",
            Pic::SharedCodePie => "-fPIC/-pie",
            Pic::SharedCodeNoPie => "-fPIC/-no-pie",
        }
        .to_string(),
    ];
    words.extend(config.extra_cflags.iter().cloned());
    let count =
        |f: fn(&super::SourceFile) -> bool| program.files.iter().filter(|file| f(file)).count();
    words.push(format!(
        "ffs={}/{} fds={}/{}",
        count(|file| file.function_sections),
        program.files.len(),
        count(|file| file.data_sections),
        program.files.len()
    ));
    if config.gc_sections {
        words.push("--gc-sections".into());
    }
    if config.export_dynamic {
        words.push("-rdynamic".into());
    }
    if config.linker_script {
        words.push("-T".into());
    }
    if !config.keep_unique.is_empty() {
        words.push(format!("--keep-unique x{}", config.keep_unique.len()));
    }
    if program.files.iter().any(|file| file.in_archive) {
        words.push("archive".into());
    }
    words.join(" ")
}

/// What a run of a binary produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Run {
    /// `exit N`, `signal N` or `timeout`.
    pub(super) status: String,
    pub(super) stdout: String,
}

pub(super) fn execute(step: &Step, dir: &Path, tools: &Tools) -> Result<Output> {
    step.command(dir, tools)
        .output()
        .with_context(|| format!("could not start `{}`", step.shell()))
}

/// Whether `output` is that of an icf `step` stopped at [`ICF_TIME_LIMIT`];
/// if so, records an `icf-timeout` finding in `mode` naming the command.
pub(super) fn timed_out(step: &Step, output: &Output, mode: Mode, outcome: &mut Outcome) -> bool {
    if !step.is_icf() || output.status.code() != Some(TIMED_OUT) {
        return false;
    }
    outcome.findings.push(Finding {
        kind: FindingKind::IcfTimeout,
        mode,
        detail: format!(
            "`{}` ran past {ICF_TIME_LIMIT} s and was stopped\n{}",
            step.shell(),
            tail(&output.stderr, 6)
        ),
    });
    true
}

/// What `icf verify` printed when it rejected a pair: the end of both streams.
pub(super) fn verify_detail(output: &Output) -> String {
    let mut detail = tail(&output.stdout, 8);
    detail.push('\n');
    detail.push_str(&tail(&output.stderr, 8));
    detail
}

pub(super) fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

pub(super) fn run_binary(step: &Step, dir: &Path, tools: &Tools) -> Result<Run> {
    use std::os::unix::process::ExitStatusExt;
    let output = execute(step, dir, tools)?;
    let status = match (output.status.code(), output.status.signal()) {
        (Some(124), _) => "timeout".to_string(),
        (Some(code), _) if code > 128 && step.args.iter().any(|arg| arg == "qemu-aarch64") => {
            // qemu re-raises the guest's signal; `timeout` reports 128+N.
            format!("signal {}", code - 128)
        }
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "unknown".to_string(),
    };
    Ok(Run {
        status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
    })
}

/// The transcript as compared in `mode`: in mode all, lines comparing
/// addresses of distinct functions do not count.
pub(super) fn comparable(stdout: &str, mode: Mode) -> Vec<&str> {
    stdout
        .lines()
        .filter(|line| mode == Mode::Safe || !line.starts_with(FUNCTION_ADDRESS_PREFIX))
        .collect()
}

/// The first differing lines of two transcripts, for the report.
pub(super) fn first_differences(plain: &[&str], folded: &[&str]) -> String {
    let mut out = String::new();
    let mut shown = 0;
    for index in 0..plain.len().max(folded.len()) {
        let left = plain.get(index).copied().unwrap_or("<end>");
        let right = folded.get(index).copied().unwrap_or("<end>");
        if left != right {
            let _ = writeln!(
                out,
                "  line {}: plain `{left}`, folded `{right}`",
                index + 1
            );
            shown += 1;
            if shown == 5 {
                break;
            }
        }
    }
    out
}

fn read_folds(path: &Path) -> Option<Folds> {
    let text = fs::read_to_string(path).ok()?;
    let report: serde_json::Value = serde_json::from_str(&text).ok()?;
    let totals = report.get("totals")?;
    Some(Folds {
        aliases: totals.get("aliases")?.as_u64()?,
        thunks: totals.get("thunks")?.as_u64()?,
    })
}

/// Writes, builds, links, runs and compares `program` in `work/<seed>`;
/// on a finding the directory becomes `repro_root/repro-<seed>`, otherwise
/// it is removed (unless `keep`).
pub fn run_program(
    program: &Program,
    tools: &Tools,
    work: &Path,
    repro_root: &Path,
    keep: bool,
) -> Result<Outcome> {
    let started = Instant::now();
    let dir = work.join(program.seed.to_string());
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::write(dir.join("fz.h"), &program.header).context("writing fz.h")?;
    if let Some(script) = &program.linker_script {
        fs::write(dir.join("fz.ld"), script).context("writing fz.ld")?;
    }
    for file in &program.files {
        fs::write(dir.join(&file.name), &file.text)
            .with_context(|| format!("writing {}", file.name))?;
    }
    let plan = Plan::new(program);
    let mut outcome = Outcome::of(program);
    let checked = check(program, &plan, tools, &dir, &mut outcome);
    outcome.seconds = started.elapsed().as_secs_f64();
    checked?;
    if !outcome.findings.is_empty() || outcome.invalid.is_some() {
        write_reproduction(program, &plan, &dir, &outcome)?;
        let target = repro_root.join(format!("repro-{}", program.seed));
        if target.exists() {
            fs::remove_dir_all(&target)
                .with_context(|| format!("removing {}", target.display()))?;
        }
        fs::rename(&dir, &target)
            .with_context(|| format!("moving {} to {}", dir.display(), target.display()))?;
        outcome.repro = Some(target);
    } else if !keep {
        fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok(outcome)
}

fn check(
    program: &Program,
    plan: &Plan,
    tools: &Tools,
    dir: &Path,
    outcome: &mut Outcome,
) -> Result<()> {
    let _ = program;
    let mut plain_steps = plan.compile.clone();
    plain_steps.extend(plan.archive.clone());
    plain_steps.push(plan.plain_link());
    for step in &plain_steps {
        let output = execute(step, dir, tools)?;
        if !output.status.success() {
            outcome.invalid = Some(format!(
                "`{}` failed:\n{}",
                step.shell(),
                tail(&output.stderr, 10)
            ));
            return Ok(());
        }
    }
    // The relinks below trust the inputs by their times only once these
    // are older than the memo's racy window.
    let inputs_written = Instant::now();
    let plain = run_binary(&plan.run("plain"), dir, tools)?;
    fs::write(dir.join("plain.out"), &plain.stdout).context("writing plain.out")?;
    if plain.status.starts_with("signal") || plain.status == "timeout" {
        outcome.invalid = Some(format!("the plain program ended with {}", plain.status));
        return Ok(());
    }
    for (slot, mode) in Mode::BOTH.into_iter().enumerate() {
        let link = plan.folded_link(mode);
        let output = execute(&link, dir, tools)?;
        outcome.folds[slot] = read_folds(&dir.join(format!("{}.json", mode.name())));
        if timed_out(&link, &output, mode, outcome) {
            continue;
        }
        if !output.status.success() {
            outcome.findings.push(Finding {
                kind: FindingKind::IcfFailed,
                mode,
                detail: format!(
                    "`icf link` {}:\n{}",
                    output.status,
                    tail(&output.stderr, 12)
                ),
            });
            continue;
        }
        let binary = format!("folded-{}", mode.name());
        let uncached = execute(&plan.uncached_link(mode), dir, tools)?;
        let read = |name: &str| fs::read(dir.join(name)).ok();
        if !timed_out(&plan.uncached_link(mode), &uncached, mode, outcome)
            && (!uncached.status.success()
                || read(&binary) != read(&format!("uncached-{}", mode.name())))
        {
            outcome.findings.push(Finding {
                kind: FindingKind::CacheDiff,
                mode,
                detail: format!(
                    "`{}` ({}) wrote another binary than the cached link\n{}",
                    plan.uncached_link(mode).shell(),
                    uncached.status,
                    tail(&uncached.stderr, 8)
                ),
            });
        }
        let folded = run_binary(&plan.run(&binary), dir, tools)?;
        fs::write(dir.join(format!("{binary}.out")), &folded.stdout)
            .with_context(|| format!("writing {binary}.out"))?;
        let plain_lines = comparable(&plain.stdout, mode);
        let folded_lines = comparable(&folded.stdout, mode);
        let mut same = true;
        if folded.status != plain.status {
            same = false;
            let kind = if folded.status == "timeout" {
                FindingKind::Timeout
            } else {
                FindingKind::Crash
            };
            outcome.findings.push(Finding {
                kind,
                mode,
                detail: format!(
                    "plain: {}, folded: {} (transcripts: {} and {} lines)\n{}",
                    plain.status,
                    folded.status,
                    plain_lines.len(),
                    folded_lines.len(),
                    first_differences(&plain_lines, &folded_lines)
                ),
            });
        } else if plain_lines != folded_lines {
            same = false;
            outcome.findings.push(Finding {
                kind: FindingKind::OutputDiff,
                mode,
                detail: first_differences(&plain_lines, &folded_lines),
            });
        }
        if same {
            let output = execute(&plan.verify(mode), dir, tools)?;
            if !timed_out(&plan.verify(mode), &output, mode, outcome) && !output.status.success() {
                outcome.findings.push(Finding {
                    kind: FindingKind::Verify,
                    mode,
                    detail: verify_detail(&output),
                });
            }
        }
    }
    plant::check(program, plan, tools, dir, &plain, outcome)?;
    if program.config.keep_relocs && program.linker_script.is_none() {
        for (slot, mode) in Mode::BOTH.into_iter().enumerate() {
            check_shrink(plan, tools, dir, mode, &plain, outcome, slot)?;
        }
    }
    std::thread::sleep(RACY_WINDOW.saturating_sub(inputs_written.elapsed()));
    for (slot, mode) in Mode::BOTH.into_iter().enumerate() {
        if dir.join(format!("folded-{}", mode.name())).exists() {
            check_relink(plan, tools, dir, mode, outcome, slot)?;
        }
    }
    Ok(())
}

/// Longer than `icf link`'s racy window (`link/memo.rs`): inputs written
/// this long ago are trusted by their times.
const RACY_WINDOW: std::time::Duration = std::time::Duration::from_millis(2100);

/// Links the unchanged inputs twice with a cache of their own: the second
/// link should replay the first's kept result, and both must write the
/// folded link's binary (a difference is a `cache-diff` finding).
fn check_relink(
    plan: &Plan,
    tools: &Tools,
    dir: &Path,
    mode: Mode,
    outcome: &mut Outcome,
    slot: usize,
) -> Result<()> {
    let step = plan.relink(mode);
    let binary = format!("relinked-{}", mode.name());
    let read = |name: &str| fs::read(dir.join(name)).ok();
    let folded = read(&format!("folded-{}", mode.name()));
    let mut replayed = false;
    for round in ["first", "second"] {
        let output = execute(&step, dir, tools)?;
        if timed_out(&step, &output, mode, outcome) {
            return Ok(());
        }
        let written = if output.status.success() {
            read(&binary)
        } else {
            None
        };
        if written.is_none() || written != folded {
            outcome.findings.push(Finding {
                kind: FindingKind::CacheDiff,
                mode,
                detail: format!(
                    "`{}` ({}, {} link of unchanged inputs) wrote another binary than the folded link\n{}",
                    step.shell(),
                    output.status,
                    round,
                    tail(&output.stderr, 8)
                ),
            });
            return Ok(());
        }
        // The second link writes its output anew, not over the first's.
        fs::remove_file(dir.join(&binary)).with_context(|| format!("removing {binary}"))?;
        replayed = String::from_utf8_lossy(&output.stderr).contains(REPLAYED);
    }
    outcome.replays[slot] = Some(replayed);
    Ok(())
}

/// What `icf -v link` says when it replays a kept result.
const REPLAYED: &str = "the inputs are unchanged since a link kept its result";

/// `icf shrink` of the plain `-q` binary in `mode`: a clean refusal (exit
/// status 1) is recorded, not a finding; a shrunk binary must run as the
/// plain one and pass `icf verify` against it.
fn check_shrink(
    plan: &Plan,
    tools: &Tools,
    dir: &Path,
    mode: Mode,
    plain: &Run,
    outcome: &mut Outcome,
    slot: usize,
) -> Result<()> {
    let output = execute(&plan.shrink(mode), dir, tools)?;
    if timed_out(&plan.shrink(mode), &output, mode, outcome) {
        return Ok(());
    }
    match output.status.code() {
        Some(0) => outcome.shrink[slot] = Some(Ok(())),
        Some(1) => {
            let reason = String::from_utf8_lossy(&output.stderr)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            outcome.shrink[slot] = Some(Err(reason));
            return Ok(());
        }
        _ => {
            outcome.findings.push(Finding {
                kind: FindingKind::ShrinkFailed,
                mode,
                detail: format!(
                    "`icf shrink` {}:\n{}",
                    output.status,
                    tail(&output.stderr, 12)
                ),
            });
            return Ok(());
        }
    }
    let binary = format!("shrunk-{}", mode.name());
    let shrunk = run_binary(&plan.run(&binary), dir, tools)?;
    fs::write(dir.join(format!("{binary}.out")), &shrunk.stdout)
        .with_context(|| format!("writing {binary}.out"))?;
    let (plain_lines, shrunk_lines) = (
        comparable(&plain.stdout, mode),
        comparable(&shrunk.stdout, mode),
    );
    if shrunk.status != plain.status || plain_lines != shrunk_lines {
        outcome.findings.push(Finding {
            kind: FindingKind::ShrinkDiff,
            mode,
            detail: format!(
                "plain: {}, shrunk: {}\n{}",
                plain.status,
                shrunk.status,
                first_differences(&plain_lines, &shrunk_lines)
            ),
        });
        return Ok(());
    }
    let verify = plan.verify_shrunk(mode, &binary);
    let output = execute(&verify, dir, tools)?;
    if !timed_out(&verify, &output, mode, outcome) && !output.status.success() {
        outcome.findings.push(Finding {
            kind: FindingKind::ShrinkVerify,
            mode,
            detail: verify_detail(&output),
        });
    }
    Ok(())
}

/// `build.sh` and `README.md` of a reproduction directory.
fn write_reproduction(program: &Program, plan: &Plan, dir: &Path, outcome: &Outcome) -> Result<()> {
    let mut script = String::new();
    let _ = writeln!(script, "#!/bin/bash");
    let _ = writeln!(
        script,
        "# Reproduces `cargo xtask fuzz --seed {} --count 1 --arch {}`: builds the program,\n\
         # links it plain and through icf in both modes, runs all three and diffs\n\
         # (and, for a -q link, shrinks the plain binary in both modes the same way;\n\
         # then links, runs and verifies the program with its planted wrong fold).\n\
         # Usage: ICF=/path/to/icf bash build.sh",
        program.seed,
        program.config.arch.name()
    );
    let _ = writeln!(
        script,
        "set -u\ncd \"$(dirname \"$0\")\"\nICF=\"${{ICF:-icf}}\""
    );
    let _ = writeln!(script, "die() {{ echo \"build.sh: $*\" >&2; exit 2; }}");
    for step in plan.compile.iter().chain(plan.archive.iter()) {
        let _ = writeln!(script, "{} || die 'build failed'", step.shell());
    }
    let _ = writeln!(
        script,
        "{} || die 'plain link failed'",
        plan.plain_link().shell()
    );
    let _ = writeln!(
        script,
        "{} > plain.out; echo \"exit $?\" >> plain.out",
        plan.run("plain").shell()
    );
    let mut status = String::from("status=0\n");
    for mode in Mode::BOTH {
        let name = mode.name();
        let _ = writeln!(
            script,
            "if {}; then\n  {} > folded-{name}.out; echo \"exit $?\" >> folded-{name}.out\nelse\n  echo \"icf link --mode {name} FAILED\"; echo 'icf failed' > folded-{name}.out\nfi",
            plan.folded_link(mode).shell(),
            plan.run(&format!("folded-{name}")).shell()
        );
        let filter = match mode {
            Mode::Safe => "cat".to_string(),
            Mode::All => format!("grep -v '^{}'", FUNCTION_ADDRESS_PREFIX),
        };
        let _ = writeln!(
            status,
            "if {filter} plain.out | diff - folded-{name}.out.cmp > {name}.diff; then echo '{name}: same output'; else echo '{name}: OUTPUT DIFFERS (see {name}.diff)'; status=1; fi"
        );
        let _ = writeln!(script, "{filter} folded-{name}.out > folded-{name}.out.cmp");
        {
            let _ = writeln!(
                status,
                "{} || {{ echo '{name}: icf verify failed'; status=1; }}",
                plan.verify(mode).shell()
            );
        }
    }
    if program.config.keep_relocs && program.linker_script.is_none() {
        for mode in Mode::BOTH {
            let name = mode.name();
            let filter = match mode {
                Mode::Safe => "cat".to_string(),
                Mode::All => format!("grep -v '^{}'", FUNCTION_ADDRESS_PREFIX),
            };
            let _ = writeln!(
                status,
                "if {}; then\n  {} > shrunk-{name}.out; echo \"exit $?\" >> shrunk-{name}.out\n  \
                 {filter} shrunk-{name}.out | diff <({filter} plain.out) - > shrunk-{name}.diff \
                 && echo 'shrink {name}: same output' || {{ echo 'shrink {name}: OUTPUT DIFFERS'; status=1; }}\n  \
                 {} || {{ echo 'shrink {name}: icf verify failed'; status=1; }}\nelse\n  \
                 echo 'icf shrink --mode {name} refused or failed'\nfi",
                plan.shrink(mode).shell(),
                plan.run(&format!("shrunk-{name}")).shell(),
                plan.verify_shrunk(mode, &format!("shrunk-{name}")).shell()
            );
        }
    }
    if let Some(planted) = &outcome.plant {
        status.push_str(&plant::script(planted, plan));
    }
    script.push_str(&status);
    script.push_str("exit $status\n");
    let script_path = dir.join("build.sh");
    fs::write(&script_path, script).context("writing build.sh")?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(&script_path, fs::Permissions::from_mode(0o755));
    }
    let mut readme = String::new();
    let _ = writeln!(readme, "# fuzz seed {}\n", program.seed);
    let _ = writeln!(
        readme,
        "Generated by `cargo xtask fuzz --seed {} --count 1 --arch {}`.\n",
        program.seed,
        program.config.arch.name()
    );
    let _ = writeln!(
        readme,
        "- arch: {}\n- linker: {}\n- build: {}\n- families: {}, functions: {}\n",
        program.config.arch.name(),
        program.config.linker.name(),
        outcome.description,
        program.families,
        program.functions
    );
    let _ = writeln!(
        readme,
        "Run `ICF=/path/to/icf bash build.sh`: it compiles, links `plain`, links\n\
         `folded-safe` and `folded-all` through `icf link --strict`, runs them and diffs\n\
         the transcripts (`{}` lines, comparing function addresses, are dropped for mode all).\n",
        FUNCTION_ADDRESS_PREFIX.trim_end()
    );
    if let Some(invalid) = &outcome.invalid {
        let _ = writeln!(
            readme,
            "## The plain build failed (a generator bug)\n\n```\n{invalid}\n```\n"
        );
    }
    for finding in &outcome.findings {
        let _ = writeln!(
            readme,
            "## {} in mode {}\n\n```\n{}\n```\n",
            finding.kind.name(),
            finding.mode.name(),
            finding.detail.trim_end()
        );
    }
    if let Some(planted) = &outcome.plant {
        readme.push_str(&plant::readme(planted));
    }
    fs::write(dir.join("README.md"), readme).context("writing README.md")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn outcome() -> Outcome {
        Outcome::of(&super::super::generate(1, Arch::X86_64))
    }

    fn exited(code: i32) -> Output {
        Output {
            status: std::process::ExitStatus::from_raw(code << 8),
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }

    #[test]
    fn icf_commands_run_under_a_time_limit() {
        let icf = Step {
            args: vec![ICF.into(), "shrink".into(), "plain".into()],
        };
        assert_eq!(
            icf.shell(),
            format!("timeout --kill-after=10 {ICF_TIME_LIMIT} \"$ICF\" shrink plain")
        );
        let tools = Tools {
            icf: PathBuf::from("/bin/icf"),
        };
        let command = icf.command(Path::new("."), &tools);
        assert_eq!(command.get_program(), "timeout");
        assert!(command.get_args().any(|arg| arg == "/bin/icf"));
        let compile = Step {
            args: vec!["gcc".into(), "-c".into(), "a.c".into()],
        };
        assert_eq!(compile.shell(), "gcc -c a.c");
    }

    #[test]
    fn an_icf_command_stopped_at_the_limit_is_a_finding() {
        let icf = Step {
            args: vec![ICF.into(), "verify".into()],
        };
        let mut found = outcome();
        assert!(!timed_out(&icf, &exited(1), Mode::Safe, &mut found));
        assert!(found.findings.is_empty());
        assert!(timed_out(&icf, &exited(TIMED_OUT), Mode::All, &mut found));
        assert_eq!(found.findings.len(), 1);
        assert_eq!(found.findings[0].kind, FindingKind::IcfTimeout);
        assert_eq!(found.findings[0].mode, Mode::All);
        // A program the runner stopped is the program's timeout, not icf's.
        let run = Step {
            args: vec!["timeout".into(), "10".into(), "./plain".into()],
        };
        assert!(!timed_out(&run, &exited(TIMED_OUT), Mode::Safe, &mut found));
        assert_eq!(found.findings.len(), 1);
    }
}
