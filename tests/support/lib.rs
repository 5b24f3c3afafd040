//! Shared helpers of the end-to-end tests: which builds to try, loading
//! objects into a program, and IR text that does not depend on where the
//! fixture cache lives.

use icf_fixtures::{Arch, Build, Compiler};
use std::path::{Path, PathBuf};

/// gcc and clang-19, with and without `-ffunction-sections`, for x86-64.
pub fn x86_builds() -> Vec<Build> {
    let mut builds = Vec::new();
    for compiler in [Compiler::Gcc, Compiler::Clang] {
        for function_sections in [true, false] {
            builds.push(Build {
                function_sections,
                ..Build::new(compiler)
            });
        }
    }
    builds
}

/// The same builds for AArch64.
pub fn aarch64_builds() -> Vec<Build> {
    x86_builds()
        .into_iter()
        .map(|build| Build {
            arch: Arch::Aarch64,
            ..build
        })
        .collect()
}

/// Opens and parses `paths`; panics with the error, as a test should.
pub fn open(paths: &[PathBuf]) -> icf::Inputs {
    icf::Inputs::open(paths).unwrap_or_else(|e| panic!("opening {paths:?}: {e:#}"))
}

pub fn load(inputs: &icf::Inputs) -> icf::Program<'_> {
    icf::Program::load(inputs, icf::Options::default()).unwrap_or_else(|e| panic!("loading: {e:#}"))
}

/// The IR of `functions` in `object`, with the object's path replaced by `label`.
pub fn dump_functions(object: &Path, label: &str, functions: &[&str]) -> String {
    let inputs = open(&[object.to_path_buf()]);
    let program = load(&inputs);
    let mut out = String::new();
    for name in functions {
        let options = icf::DumpOptions {
            function: Some(name.to_string()),
        };
        let text =
            icf::dump(&program, &options).unwrap_or_else(|e| panic!("dumping {name}: {e:#}"));
        out.push_str(&text.replace(&object.display().to_string(), label));
    }
    out
}

/// The IR of a function without instruction offsets: what two functions that
/// differ only in encoding must share.
pub fn ir_without_offsets(program: &icf::Program<'_>, function: &icf::FunctionInfo) -> String {
    let lifted = program.lift(function);
    let names = |target, addend| program.describe_target(target, addend);
    let syntax = icf_arch::syntax(lifted.arch);
    let mut out = String::new();
    for block in &lifted.blocks {
        out.push_str(&format!("{:?} {}\n", block.succs.as_slice(), block.reached));
        for inst in lifted.block_insts(block) {
            icf_ir::print::print_inst(&lifted, inst, syntax, &names, &mut out);
            out.push('\n');
        }
    }
    out
}

/// The function piece of `program` named `name`.
pub fn function_named<'p>(program: &'p icf::Program<'_>, name: &str) -> &'p icf::FunctionInfo {
    program
        .functions
        .iter()
        .find(|f| program.function_raw_name(f) == name)
        .unwrap_or_else(|| panic!("no function {name}"))
}
