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
    /// Say more on stderr (skipped archive members, timings).
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
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
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("icf: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Dump {
            function,
            stats,
            shared,
            inputs,
        } => {
            let files = icf::Inputs::open(&inputs)?;
            let program = icf::Program::load(&files, icf::Options { shared })?;
            if cli.verbose {
                for (file, skipped) in &program.skipped {
                    eprintln!(
                        "icf: skipped {}({}): {}",
                        program.file_path(*file).display(),
                        skipped.member,
                        skipped.reason
                    );
                }
            }
            let text = if stats {
                render_stats(&icf::lift_stats(&program))
            } else {
                icf::dump(&program, &icf::DumpOptions { function })?
            };
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(text.as_bytes()) {
                // `icf dump | head` is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context("writing to stdout"),
            }
        }
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
