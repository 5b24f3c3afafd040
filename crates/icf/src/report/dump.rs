//! `icf dump`: the IR of every function (or the named ones), and the summary
//! `icf dump --stats` prints: how much code lifts, how fast, and what stays opaque.

use crate::load::program::{FunctionInfo, Program};
use crate::names::demangle;
use icf_ir::{Function, OpaqueReason};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Default)]
pub struct DumpOptions {
    /// Only functions with this name: mangled, demangled, or demangled without the Rust hash.
    pub function: Option<String>,
}

/// The text of every selected function's IR.
pub fn dump(program: &Program<'_>, options: &DumpOptions) -> anyhow::Result<String> {
    let selected: Vec<&FunctionInfo> = program
        .functions
        .iter()
        .filter(|f| matches_name(program, f, options.function.as_deref()))
        .collect();
    if let Some(name) = &options.function
        && selected.is_empty()
    {
        anyhow::bail!("no function named '{name}' in the inputs");
    }
    let lifted: Vec<Function> = {
        use rayon::prelude::*;
        selected.par_iter().map(|f| program.lift(f)).collect()
    };
    let mut out = String::new();
    for (info, function) in selected.iter().zip(&lifted) {
        write_header(program, info, &mut out);
        let names = |target, addend| program.describe_target(target, addend);
        icf_ir::print::print_function(function, icf_arch::syntax(function.arch), &names, &mut out);
        out.push('\n');
    }
    Ok(out)
}

fn write_header(program: &Program<'_>, info: &FunctionInfo, out: &mut String) {
    let object = program.object(info.object);
    let section = object.object.section(info.extent.section);
    let name = program.function_name(info);
    let raw = program.function_raw_name(info);
    let _ = write!(out, "function {name}");
    if raw != name {
        let _ = write!(out, " [{raw}]");
    }
    let _ = writeln!(
        out,
        "\n  in {} section {} '{}' {:#x}..{:#x} ({} bytes)",
        program.object_name(info.object),
        info.extent.section.0,
        section.name_lossy(),
        info.extent.start,
        info.extent.end,
        info.extent.len()
    );
}

pub(crate) fn matches_name(
    program: &Program<'_>,
    info: &FunctionInfo,
    wanted: Option<&str>,
) -> bool {
    let Some(wanted) = wanted else { return true };
    let elf = &program.object(info.object).object;
    info.extent.symbols.iter().any(|&index| {
        let raw = elf.symbol(index).name;
        if raw == wanted.as_bytes() {
            return true;
        }
        let text = String::from_utf8_lossy(raw);
        if let Ok(rust) = rustc_demangle::try_demangle(&text)
            && (format!("{rust:#}") == wanted || rust.to_string() == wanted)
        {
            return true;
        }
        demangle(raw) == wanted
    })
}

/// What lifting a program gave.
#[derive(Clone, Debug, Default)]
pub struct LiftStats {
    pub objects: usize,
    pub functions: usize,
    pub code_bytes: u64,
    pub instructions: usize,
    pub blocks: usize,
    /// Functions compared byte-exactly, by reason.
    pub opaque: BTreeMap<&'static str, usize>,
    pub opaque_bytes: u64,
    pub lift_time: Duration,
}

/// Lifts every function and counts.
pub fn lift_stats(program: &Program<'_>) -> LiftStats {
    let started = Instant::now();
    let lifted = program.lift_all();
    let lift_time = started.elapsed();
    let mut stats = LiftStats {
        objects: program.objects.len(),
        functions: lifted.len(),
        lift_time,
        ..Default::default()
    };
    for function in &lifted {
        stats.code_bytes += u64::from(function.size);
        stats.instructions += function.insts.len();
        stats.blocks += function.blocks.len();
        if let Some(run) = function.opaque.first() {
            *stats.opaque.entry(reason_kind(&run.reason)).or_default() += 1;
            stats.opaque_bytes += u64::from(function.size);
        }
    }
    stats
}

fn reason_kind(reason: &OpaqueReason) -> &'static str {
    match reason {
        OpaqueReason::UnknownInstruction { .. } => "unknown instruction",
        OpaqueReason::TargetInsideInstruction { .. } => "jump into an instruction",
        OpaqueReason::RelocationOutsideOperand { .. } => "relocation outside an operand",
        OpaqueReason::DataInCode { .. } => "data in code",
        OpaqueReason::TargetOutsideSection { .. } => "unrelocated reference outside the section",
        OpaqueReason::Truncated { .. } => "truncated instruction",
        OpaqueReason::Data => "data",
    }
}
