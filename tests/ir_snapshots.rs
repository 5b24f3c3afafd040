//! IR snapshots of representative functions, as `icf dump` prints them: a
//! loop, a switch with a jump table, direct and indirect calls, RIP-relative
//! data, TLS, tail calls, varargs and C++ exceptions, from gcc and clang-19,
//! for x86-64 and AArch64.
//! Regenerate with `UPDATE_EXPECT=1 cargo test -p icf-tests --test ir_snapshots`.

use expect_test::expect_file;
use icf_fixtures::{Arch, Build, Compiler};
use icf_tests::dump_functions;
use std::path::Path;

const CASES: &[(&str, &[&str])] = &[
    ("c/loop.c", &["sum_array"]),
    ("c/switch.c", &["dispatch"]),
    ("c/calls.c", &["call_direct", "call_through_pointer"]),
    ("c/rip_data.c", &["bump_counter", "lookup_square"]),
    ("c/tls.c", &["bump_tls_global", "read_tls_extern"]),
    ("c/tailcall.c", &["tail_to_external", "tail_conditional"]),
    ("c/varargs.c", &["sum_ints"]),
    ("cpp/exceptions.cpp", &["_Z10catch_int0i"]),
];

fn snapshot(build: Build) -> String {
    let mut out = String::new();
    for (source, functions) in CASES {
        let object = icf_fixtures::object(Path::new(source), &build);
        let label = format!("{source} ({})", build.label());
        out.push_str(&dump_functions(&object, &label, functions));
    }
    out
}

#[test]
fn gcc_ir() {
    expect_file!["snapshots/gcc-O2-fs.ir"].assert_eq(&snapshot(Build::new(Compiler::Gcc)));
}

#[test]
fn clang_ir() {
    expect_file!["snapshots/clang-O2-fs.ir"].assert_eq(&snapshot(Build::new(Compiler::Clang)));
}

#[test]
fn gcc_aarch64_ir() {
    expect_file!["snapshots/gcc-O2-fs-aarch64.ir"].assert_eq(&snapshot(Build {
        arch: Arch::Aarch64,
        ..Build::new(Compiler::Gcc)
    }));
}

#[test]
fn clang_aarch64_ir() {
    expect_file!["snapshots/clang-O2-fs-aarch64.ir"].assert_eq(&snapshot(Build {
        arch: Arch::Aarch64,
        ..Build::new(Compiler::Clang)
    }));
}
