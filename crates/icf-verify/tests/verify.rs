//! `icf_verify::verify` on real linked programs: tiny x86-64 and AArch64
//! assembly and C programs built at test time (gcc, clang-19, lld-19, the
//! aarch64 cross gcc), a PLAIN link, and FOLDED links made by hand (the
//! same source with a duplicate turned into an alias or a thunk) or by lld's
//! own `--icf=all`. Correct folds must verify; wrong folds, made on purpose,
//! must be caught with the right kind of difference. Main assumption: the
//! toolchains named above are installed (they are on the test machine and
//! in CI through `cargo xtask test`).

use icf_verify::{DifferenceKind, Mode, Outcome, VerifyOptions, verify};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh directory for one test's files.
fn work_dir(test: &str) -> PathBuf {
    // Under cargo's scratch directory for integration tests, by a fixed
    // name: a rerun replaces the last run's files instead of adding more.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("icf-verify-tests")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the test directory");
    dir
}

/// Runs `program args`, panicking with its stderr when it fails.
fn run(program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Writes `source` as `name` in `dir` and links it with `compiler` and
/// `flags` into `name` without extension.
fn link(dir: &Path, compiler: &str, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let source_path = dir.join(name);
    std::fs::write(&source_path, source).expect("writing the source");
    let output = dir.join(
        source_path
            .file_stem()
            .expect("the source has a name")
            .to_string_lossy()
            .as_ref(),
    );
    let mut args = vec![
        source_path.to_str().expect("utf-8 path"),
        "-o",
        output.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(flags);
    run(compiler, &args);
    output
}

fn check(plain: &Path, folded: &Path, mode: Mode) -> Outcome {
    let options = VerifyOptions {
        mode,
        ..VerifyOptions::default()
    };
    let outcome = verify(plain, folded, &options).expect("both inputs are valid");
    eprintln!("{outcome}");
    outcome
}

fn assert_passes(plain: &Path, folded: &Path, mode: Mode) -> Outcome {
    let outcome = check(plain, folded, mode);
    assert!(outcome.passed(), "expected a pass:\n{outcome}");
    outcome
}

fn assert_caught(plain: &Path, folded: &Path, mode: Mode, kind: DifferenceKind, function: &str) {
    let outcome = check(plain, folded, mode);
    let difference = outcome
        .difference
        .unwrap_or_else(|| panic!("the wrong fold was not caught ({})", outcome.stats));
    assert_eq!(difference.kind, kind, "{difference}");
    assert_eq!(difference.function, function, "{difference}");
    assert!(!difference.path.is_empty(), "{difference}");
}

/// An x86-64 program in AT&T syntax: `body` plus a `main` calling `calls`.
fn x86_program(body: &str, calls: &[&str]) -> String {
    let mut main = String::from(
        ".text\n.globl main\n.type main,@function\nmain:\n  push %rbx\n  xor %ebx, %ebx\n",
    );
    for callee in calls {
        main.push_str(&format!("  call {callee}\n  add %eax, %ebx\n"));
    }
    main.push_str("  mov %ebx, %eax\n  pop %rbx\n  ret\n.size main, .-main\n");
    format!("{body}\n{main}\n.section .note.GNU-stack,\"\",@progbits\n")
}

/// A function `name` with `body`, sized.
fn function(name: &str, body: &str) -> String {
    format!(".text\n.type {name},@function\n{name}:\n{body}\n.size {name}, .-{name}\n")
}

/// `name` as an alias of `target` (what icf writes for a folded member).
fn alias(name: &str, target: &str, size: u32) -> String {
    format!(".type {name},@function\n.set {name}, {target}\n.size {name}, {size}\n")
}

/// PLAIN, a correct FOLDED and a wrong FOLDED x86-64 executable from
/// three assembly sources.
fn x86_triple(test: &str, sources: [&str; 3], flags: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
    let dir = work_dir(test);
    (
        link(&dir, "gcc", "plain.s", sources[0], flags),
        link(&dir, "gcc", "good.s", sources[1], flags),
        link(&dir, "gcc", "wrong.s", sources[2], flags),
    )
}

/// PLAIN and FOLDED x86-64 executables from two assembly sources.
fn x86_pair(test: &str, plain: &str, folded: &str, flags: &[&str]) -> (PathBuf, PathBuf) {
    let dir = work_dir(test);
    (
        link(&dir, "gcc", "plain.s", plain, flags),
        link(&dir, "gcc", "folded.s", folded, flags),
    )
}

#[test]
fn an_alias_and_a_thunk_of_a_twin_verify() {
    let twins = function("f0", "  mov $7, %eax\n  ret")
        + &function("g0", "  lea f0(%rip), %rax\n  call f0\n  ret");
    let plain = x86_program(
        &(twins.clone() + &function("f1", "  mov $7, %eax\n  ret")),
        &["f0", "f1", "g0"],
    );
    let aliased = x86_program(
        &(twins.clone() + &alias("f1", "f0", 6)),
        &["f0", "f1", "g0"],
    );
    let thunk = x86_program(&(twins + &function("f1", "  jmp f0")), &["f0", "f1", "g0"]);
    let dir = work_dir("alias_and_thunk");
    let plain = link(&dir, "gcc", "plain.s", &plain, &[]);
    let aliased = link(&dir, "gcc", "aliased.s", &aliased, &[]);
    let thunk = link(&dir, "gcc", "thunk.s", &thunk, &["-Wl,-q"]);
    let outcome = assert_passes(&plain, &aliased, Mode::Safe);
    assert_eq!(outcome.stats.aliases_followed, 1);
    let outcome = assert_passes(&plain, &thunk, Mode::Safe);
    assert_eq!(outcome.stats.thunks_followed, 1);
}

#[test]
fn a_twin_returning_another_object_of_equal_content_is_caught() {
    let data = ".section .rodata\n.globl tab_a, tab_b\n.type tab_a,@object\ntab_a: .long 1, 2, 3, 4\n.size tab_a, 16\n.type tab_b,@object\ntab_b: .long 1, 2, 3, 4\n.size tab_b, 16\n";
    let get_a = function("get_a", "  lea tab_a(%rip), %rax\n  ret");
    let get_b = function("get_b", "  lea tab_b(%rip), %rax\n  ret");
    let plain = x86_program(&format!("{data}{get_a}{get_b}"), &["get_a", "get_b"]);
    let folded = x86_program(
        &format!("{data}{get_a}{}", alias("get_b", "get_a", 8)),
        &["get_a", "get_b"],
    );
    let (plain, folded) = x86_pair("other_object", &plain, &folded, &[]);
    assert_caught(
        &plain,
        &folded,
        Mode::All,
        DifferenceKind::SignificantAddressesMerged,
        "get_b",
    );
}

#[test]
fn a_one_past_the_end_pointer_into_another_array_is_caught() {
    let data = ".section .rodata\n.globl tab_a, tab_b\n.type tab_a,@object\ntab_a: .long 1, 2, 3, 4\n.size tab_a, 16\n.type tab_b,@object\ntab_b: .long 1, 2, 3, 4\n.size tab_b, 16\n.long 0\n";
    let end_a = function("end_a", "  lea tab_a+16(%rip), %rax\n  ret");
    let end_b = function("end_b", "  lea tab_b+16(%rip), %rax\n  ret");
    let begin_b = function("begin_b", "  lea tab_b(%rip), %rax\n  ret");
    let calls = ["end_a", "end_b", "begin_b"];
    let plain = x86_program(&format!("{data}{end_a}{end_b}{begin_b}"), &calls);
    let folded = x86_program(
        &format!("{data}{end_a}{}{begin_b}", alias("end_b", "end_a", 8)),
        &calls,
    );
    for (test, flags) in [("past_end", &[][..]), ("past_end_q", &["-Wl,-q"][..])] {
        let (plain, folded) = x86_pair(test, &plain, &folded, flags);
        assert_caught(
            &plain,
            &folded,
            Mode::All,
            DifferenceKind::SignificantAddressesMerged,
            "end_b",
        );
    }
}

#[test]
fn a_fall_through_into_a_different_successor_is_caught() {
    let first = function("p1", "  mov $1, %eax") + &function("q1", "  ret");
    let second = function("p2", "  mov $1, %eax") + &function("q2", "  add $41, %eax\n  ret");
    let calls = ["p1", "p2", "q2"];
    let plain = x86_program(&format!("{first}{second}"), &calls);
    // p2 folded onto p1: its fall-through now reaches q1, not q2.
    let folded = x86_program(
        &format!(
            "{first}{}{}",
            alias("p2", "p1", 5),
            function("q2", "  add $41, %eax\n  ret")
        ),
        &calls,
    );
    let (plain, folded) = x86_pair("fall_through", &plain, &folded, &[]);
    assert_caught(
        &plain,
        &folded,
        Mode::Safe,
        DifferenceKind::InstructionsDiffer,
        "p2",
    );
}

#[test]
fn a_call_ending_a_function_may_run_on_through_nop_padding() {
    // p ends with a call that might return (through a register: no
    // callee to ask) and so runs on into q. FOLDED puts `nop`s between
    // them, as icf shrink does where q needs its alignment: the same
    // successor. Traps there are not: running on would stop.
    let p = function("p", "  call *%rdx");
    let q = function("q", "  mov $1, %eax\n  ret");
    let calls = ["p", "q"];
    let (plain, good, wrong) = x86_triple(
        "nop_padding",
        [
            &x86_program(&format!("{p}{q}"), &calls),
            &x86_program(&format!("{p}  nop\n  xchg %ax, %ax\n{q}"), &calls),
            &x86_program(&format!("{p}  int3\n  int3\n{q}"), &calls),
        ],
        &[],
    );
    assert_passes(&plain, &good, Mode::Safe);
    assert_caught(
        &plain,
        &wrong,
        Mode::Safe,
        DifferenceKind::TargetsDiffer,
        "p",
    );
}

#[test]
fn a_call_to_a_local_label_with_a_different_callee_is_caught() {
    let c1 = function("c1", "  call .Lh1\n  ret") + ".Lh1:\n  mov $1, %eax\n  ret\n";
    let c2 = function("c2", "  call .Lh2\n  ret") + ".Lh2:\n  mov $2, %eax\n  ret\n";
    let plain = x86_program(&format!("{c1}{c2}"), &["c1", "c2"]);
    let folded = x86_program(&format!("{c1}{}", alias("c2", "c1", 6)), &["c1", "c2"]);
    let (plain, folded) = x86_pair("local_label", &plain, &folded, &[]);
    assert_caught(
        &plain,
        &folded,
        Mode::Safe,
        DifferenceKind::InstructionsDiffer,
        "c2",
    );
}

#[test]
fn notrack_is_part_of_the_instruction() {
    let j1 = function("j1", "  notrack jmp *%rdi");
    let j2 = function("j2", "  jmp *%rdi");
    let plain = x86_program(&format!("{j1}{j2}"), &[]);
    let folded = x86_program(&format!("{j1}{}", alias("j2", "j1", 3)), &[]);
    let (plain, folded) = x86_pair("notrack", &plain, &folded, &[]);
    assert_caught(
        &plain,
        &folded,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "j2",
    );
}

#[test]
fn merging_address_taken_functions_is_caught_in_safe_mode_only() {
    let twins = function("m0", "  mov $5, %eax\n  ret");
    let m1 = function("m1", "  mov $5, %eax\n  ret");
    let compare = function(
        "same",
        "  lea m0(%rip), %rax\n  lea m1(%rip), %rcx\n  cmp %rax, %rcx\n  sete %al\n  movzbl %al, %eax\n  ret",
    );
    let calls = ["m0", "m1", "same"];
    let plain = x86_program(&format!("{twins}{m1}{compare}"), &calls);
    let folded = x86_program(&format!("{twins}{}{compare}", alias("m1", "m0", 6)), &calls);
    let (plain, folded) = x86_pair("address_taken", &plain, &folded, &[]);
    assert_caught(
        &plain,
        &folded,
        Mode::Safe,
        DifferenceKind::SignificantAddressesMerged,
        "same",
    );
    assert_passes(&plain, &folded, Mode::All);
}

/// A function `name` dispatching on %edi through a PIC jump table at `table`
/// whose entries are relative to `base`, into `targets`' labels.
fn switch(name: &str, table: &str, labels: [&str; 2], entries: [&str; 2]) -> String {
    function(
        name,
        &format!(
            "  lea {table}(%rip), %rdx\n  movslq (%rdx,%rdi,4), %rax\n  add %rdx, %rax\n  jmp *%rax\n{}:\n  mov $1, %eax\n  ret\n{}:\n  mov $2, %eax\n  ret",
            labels[0], labels[1]
        ),
    ) + &format!(
        ".section .rodata\n.p2align 2\n{table}:\n  .long {}-{table}\n  .long {}-{table}\n",
        entries[0], entries[1]
    )
}

#[test]
fn jump_tables_must_land_in_their_own_copy() {
    let s1 = switch("s1", ".Lt1", [".La1", ".Lb1"], [".La1", ".Lb1"]);
    let s2 = switch("s2", ".Lt2", [".La2", ".Lb2"], [".La2", ".Lb2"]);
    // The same code, but its table points into s1.
    let s2_wrong = switch("s2", ".Lt2", [".La2", ".Lb2"], [".La1", ".Lb1"]);
    let calls = ["s1", "s2"];
    let plain = x86_program(&format!("{s1}{s2}"), &calls);
    let good = x86_program(&format!("{s1}{}", alias("s2", "s1", 28)), &calls);
    let wrong = x86_program(&format!("{s1}{s2_wrong}"), &calls);
    let (plain, good, wrong) = x86_triple("jump_table", [&plain, &good, &wrong], &[]);
    assert_passes(&plain, &good, Mode::Safe);
    // FOLDED's s2 never reaches its own cases: they are data there, code
    // in PLAIN.
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "s2",
    );
}

#[test]
fn aarch64_load_and_store_through_adrp_differ() {
    let source = |second: &str| {
        format!(
            ".data\n.globl var\n.type var,%object\nvar: .word 0\n.size var, 4\n\
             .text\n.type r1,%function\nr1:\n  adrp x1, var\n  ldr w0, [x1, :lo12:var]\n  ret\n.size r1, .-r1\n\
             {second}\
             .globl main\n.type main,%function\nmain:\n  stp x29, x30, [sp, -16]!\n  bl r1\n  bl r2\n  ldp x29, x30, [sp], 16\n  ret\n.size main, .-main\n\
             .section .note.GNU-stack,\"\",%progbits\n"
        )
    };
    let plain = source(
        ".type r2,%function\nr2:\n  adrp x1, var\n  str w0, [x1, :lo12:var]\n  ret\n.size r2, .-r2\n",
    );
    let folded = source(".type r2,%function\n.set r2, r1\n.size r2, 12\n");
    let dir = work_dir("aarch64_ldr_str");
    let plain = link(&dir, "aarch64-linux-gnu-gcc", "plain.s", &plain, &[]);
    let folded = link(&dir, "aarch64-linux-gnu-gcc", "folded.s", &folded, &[]);
    assert_caught(
        &plain,
        &folded,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "r2",
    );
}

/// AArch64 code reading unnamed read-only data, as GNU ld lays out
/// strings and constants in one `.rodata`: a string `greet`, a string no
/// code reads, a table (of non-text bytes) and an 8-byte constant after
/// `align` bytes of alignment.
fn unnamed_rodata(greet: &str, unread: &str, align: u32) -> String {
    let getter = |name: &str, label: &str, load: &str| {
        format!(
            ".globl {name}\n.type {name},%function\n{name}:\n  adrp x0, {label}\n  {load}\n  ret\n.size {name}, .-{name}\n"
        )
    };
    format!(
        ".section .rodata\n.Lgreet: .asciz \"{greet}\"\n.Lunread: .asciz \"{unread}\"\n\
         .Ltable: .byte 1, 2, 3\n.balign {align}\n.Lnumber: .quad 42\n.text\n{}{}{}\
         .globl main\n.type main,%function\nmain:\n  stp x29, x30, [sp, -16]!\n  bl greet\n  bl table\n  bl number\n  ldp x29, x30, [sp], 16\n  ret\n.size main, .-main\n\
         .section .note.GNU-stack,\"\",%progbits\n",
        getter("greet", ".Lgreet", "add x0, x0, :lo12:.Lgreet"),
        getter("table", ".Ltable", "add x0, x0, :lo12:.Ltable"),
        getter("number", ".Lnumber", "ldr x0, [x0, :lo12:.Lnumber]"),
    )
}

#[test]
fn unnamed_aarch64_data_ends_at_the_next_referenced_place_or_a_strings_nul() {
    // FOLDED lays the same data out with more padding: what the code
    // reads is equal. (Another string after "hello" would not be: in a
    // section without the strings flag, GNU ld's `.rodata`, an array
    // of text may be read past its first NUL, up to the next referenced
    // place, so verify compares that far.)
    let dir = work_dir("aarch64_unnamed_rodata");
    let build = |name: &str, greet: &str, unread: &str, align: u32| {
        let source = unnamed_rodata(greet, unread, align);
        link(
            &dir,
            "aarch64-linux-gnu-gcc",
            name,
            &source,
            &["-fuse-ld=bfd"],
        )
    };
    let plain = build("plain.s", "hello", "unused", 8);
    let folded = build("folded.s", "hello", "unused", 16);
    assert_passes(&plain, &folded, Mode::Safe);
    let other = build("other.s", "hello", "unused!!", 16);
    assert_caught(
        &plain,
        &other,
        Mode::Safe,
        DifferenceKind::DataDiffers,
        "greet",
    );
    // A different string is caught.
    let wrong = build("wrong.s", "hellp", "unused", 8);
    assert_caught(
        &plain,
        &wrong,
        Mode::Safe,
        DifferenceKind::DataDiffers,
        "greet",
    );
}

/// A C program with identical functions, recursion, a switch and a
/// function-pointer table, linked plain and with lld's `--icf=all`.
const C_PROGRAM: &str = r#"
#include <stdio.h>
__attribute__((noinline)) int sq1(int x) { return x * x + 3; }
__attribute__((noinline)) int sq2(int x) { return x * x + 3; }
__attribute__((noinline)) int fact1(int n) { return n <= 1 ? 1 : n * fact1(n - 1); }
__attribute__((noinline)) int fact2(int n) { return n <= 1 ? 1 : n * fact2(n - 1); }
__attribute__((noinline)) int pick1(int x) {
    switch (x) { case 0: return 11; case 1: return 22; case 2: return 37; case 3: return 41; case 4: return 55; case 5: return 7; default: return 0; }
}
__attribute__((noinline)) int pick2(int x) {
    switch (x) { case 0: return 11; case 1: return 22; case 2: return 37; case 3: return 41; case 4: return 55; case 5: return 7; default: return 0; }
}
static const char *const names[] = {"zero", "one", "two"};
int (*const ops[])(int) = {sq1, fact2};
int main(int argc, char **argv) {
    (void)argv;
    printf("%d %d %d %d %d %d %s %d\n", sq1(argc), sq2(argc), fact1(argc + 3), fact2(argc + 2),
           pick1(argc), pick2(argc + 1), names[argc % 3], ops[argc % 2](argc));
    return 0;
}
"#;

fn lld_folds_verify(test: &str, compiler: &str, extra: &[&str]) {
    let dir = work_dir(test);
    let mut flags = vec![
        "-O2",
        "-ffunction-sections",
        "-fuse-ld=lld",
        "-B/usr/lib/llvm-19/bin/",
        "-Wl,-q",
    ];
    flags.extend_from_slice(extra);
    let plain = link(&dir, compiler, "plain.c", C_PROGRAM, &flags);
    flags.push("-Wl,--icf=all");
    let folded = link(&dir, compiler, "folded.c", C_PROGRAM, &flags);
    let outcome = assert_passes(&plain, &folded, Mode::All);
    assert!(
        outcome.stats.aliases_followed >= 3,
        "lld folded sq, fact and pick: {}",
        outcome.stats
    );
}

#[test]
fn lld_icf_all_verifies_on_x86_64() {
    lld_folds_verify("lld_x86_64", "gcc", &["-fPIC"]);
    lld_folds_verify("lld_x86_64_clang", "clang-19", &["-fno-pic", "-no-pie"]);
}

#[test]
fn lld_icf_all_verifies_on_aarch64() {
    lld_folds_verify("lld_aarch64", "aarch64-linux-gnu-gcc", &[]);
}

#[test]
fn bad_input_is_an_error_naming_the_file() {
    let dir = work_dir("bad_input");
    let not_elf = dir.join("not-elf");
    std::fs::write(&not_elf, b"hello").expect("writing");
    let error = verify(&not_elf, &not_elf, &VerifyOptions::default())
        .expect_err("a text file is not an image");
    assert_eq!(error.path, not_elf);
    assert!(error.to_string().contains("not-elf"), "{error}");
    let missing = dir.join("missing");
    assert!(verify(&missing, &not_elf, &VerifyOptions::default()).is_err());
}

#[test]
fn an_imm8_and_an_imm32_adding_the_same_value_verify() {
    // `add $-1, %eax` as `83 c0 ff` and as `05 ff ff ff ff`: one instruction.
    let imm8 = function("t8", "  mov %edi, %eax\n  .byte 0x83, 0xc0, 0xff\n  ret");
    let imm32 = function(
        "t32",
        "  mov %edi, %eax\n  .byte 0x05, 0xff, 0xff, 0xff, 0xff\n  ret",
    );
    let calls = ["t8", "t32"];
    let plain = x86_program(&format!("{imm8}{imm32}"), &calls);
    let folded = x86_program(&format!("{imm8}{}", alias("t32", "t8", 6)), &calls);
    let (plain, folded) = x86_pair("imm8_imm32", &plain, &folded, &["-Wl,-q"]);
    assert_passes(&plain, &folded, Mode::Safe);
    // A different value is still a different instruction.
    let other = function(
        "t32",
        "  mov %edi, %eax\n  .byte 0x05, 0xfe, 0xff, 0xff, 0xff\n  ret",
    );
    let plain = x86_program(&format!("{imm8}{other}"), &calls);
    let dir = work_dir("imm8_imm32_other");
    let plain = link(&dir, "gcc", "plain.s", &plain, &[]);
    assert_caught(
        &plain,
        &folded,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "t32",
    );
}

#[test]
fn the_linkers_own_tables_are_not_compared_as_data() {
    // gold gives `_DYNAMIC` a size; folding moves what its entries point to.
    let body = function("f0", "  mov $7, %eax\n  ret")
        + &function("f1", "  mov $7, %eax\n  ret")
        + ".section .fini_array,\"aw\"\n.quad f0\n";
    let plain = x86_program(&body, &["f0", "f1"]);
    let folded = x86_program(
        &(function("f0", "  mov $7, %eax\n  ret")
            + &alias("f1", "f0", 6)
            + ".section .fini_array,\"aw\"\n.quad f0\n"),
        &["f0", "f1"],
    );
    let flags = ["-fuse-ld=gold", "-pie", "-Wl,-q"];
    let (plain, folded) = x86_pair("linker_tables", &plain, &folded, &flags);
    assert_passes(&plain, &folded, Mode::All);
}

#[test]
fn pointers_in_a_position_dependent_executable_without_q_are_found_by_value() {
    let twins = function("p0", "  mov $3, %eax\n  ret") + &function("p1", "  mov $3, %eax\n  ret");
    let table =
        ".data\n.globl ptrs\n.type ptrs,@object\n.p2align 3\nptrs: .quad p0, p1\n.size ptrs, 16\n";
    let calls = ["p0", "p1"];
    let plain = x86_program(&format!("{twins}{table}"), &calls);
    let folded = x86_program(
        &format!(
            "{}{}{table}",
            function("p0", "  mov $3, %eax\n  ret"),
            alias("p1", "p0", 6)
        ),
        &calls,
    );
    // `puts` gives the executable dynamic relocations, none of them for `ptrs`.
    let call_puts = function("say", "  lea ptrs(%rip), %rdi\n  jmp puts@PLT");
    let plain = plain + &call_puts;
    let folded = folded + &call_puts;
    let (plain, folded) = x86_pair("non_pie_pointers", &plain, &folded, &["-no-pie"]);
    // (Before, the differing word was compared as bytes: a false difference.)
    assert_passes(&plain, &folded, Mode::All);
}

/// A function embedding data in its code, as `significance_of_weak_override.c`'s
/// `f10_1` does: `lea` of the data, a jump over it. Decoded linearly, the
/// bytes `71 80` are a `jno` 128 bytes back, into whatever precedes.
fn data_in_code(name: &str, data: &str) -> String {
    function(
        name,
        &format!(
            "  lea 1f(%rip), %rax\n  jmp 2f\n1:\n  {data}\n2:\n  movslq (%rax), %rax\n  add %rdi, %rax\n  ret"
        ),
    )
}

#[test]
fn data_in_code_is_compared_as_data_not_as_a_bogus_branch() {
    let pad = function("pad", &"  nop\n".repeat(200)) + "  ret\n";
    let data = ".byte 0x71, 0x80, 0, 0";
    let d1 = data_in_code("d1", data);
    let calls = ["pad", "d1", "d2"];
    let plain = x86_program(&format!("{pad}{d1}{}", data_in_code("d2", data)), &calls);
    let good = x86_program(&format!("{pad}{d1}{}", alias("d2", "d1", 20)), &calls);
    let other = data_in_code("d2", ".byte 0x71, 0x81, 0, 0");
    let wrong = x86_program(&format!("{pad}{d1}{other}"), &calls);
    let dir = work_dir("data_in_code");
    for flags in [&[][..], &["-Wl,-q"][..]] {
        let plain = link(&dir, "gcc", "plain.s", &plain, flags);
        let good = link(&dir, "gcc", "good.s", &good, flags);
        let wrong = link(&dir, "gcc", "wrong.s", &wrong, flags);
        assert_passes(&plain, &good, Mode::Safe);
        assert_caught(
            &plain,
            &wrong,
            Mode::All,
            DifferenceKind::InstructionsDiffer,
            "d2",
        );
    }
}

/// A switch whose cases, reached only through its table, jump to `cases`.
fn switch_to(name: &str, cases: [&str; 2]) -> String {
    function(
        name,
        &format!(
            "  lea .Lt_{name}(%rip), %rdx\n  movslq (%rdx,%rdi,4), %rax\n  add %rdx, %rax\n  jmp *%rax\n.La_{name}:\n  jmp {}\n.Lb_{name}:\n  jmp {}",
            cases[0], cases[1]
        ),
    ) + &format!(
        ".section .rodata\n.p2align 2\n.Lt_{name}:\n  .long .La_{name}-.Lt_{name}\n  .long .Lb_{name}-.Lt_{name}\n"
    )
}

#[test]
fn code_reached_only_through_a_jump_table_is_compared_as_code() {
    let cases = function("h1", "  mov $1, %eax\n  ret") + &function("h2", "  mov $2, %eax\n  ret");
    let t1 = switch_to("t1", ["h1", "h2"]);
    let calls = ["t1", "t2"];
    let plain = x86_program(
        &format!("{cases}{t1}{}", switch_to("t2", ["h1", "h2"])),
        &calls,
    );
    // The cases' `jmp rel8` bytes differ between t2 and t1: only decoding
    // them (through the table) proves the alias.
    let good = x86_program(&format!("{cases}{t1}{}", alias("t2", "t1", 20)), &calls);
    let wrong = x86_program(
        &format!("{cases}{t1}{}", switch_to("t2", ["h1", "h1"])),
        &calls,
    );
    let (plain, good, wrong) = x86_triple("jump_table_only_code", [&plain, &good, &wrong], &[]);
    assert_passes(&plain, &good, Mode::Safe);
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "t2",
    );
}

/// `name` returning the `%rdi`-th of two strings through a table of
/// offsets in `.rodata` (entries relocated against `.rodata.names`).
fn names(name: &str, strings: [&str; 2]) -> String {
    function(
        name,
        &format!(
            "  lea .Lt_{name}(%rip), %rdx\n  movslq (%rdx,%rdi,4), %rax\n  add %rdx, %rax\n  ret"
        ),
    ) + &format!(
        ".section .rodata\n.p2align 2\n.Lt_{name}:\n  .long .L0_{name}-.Lt_{name}\n  .long .L1_{name}-.Lt_{name}\n\
         .section .rodata.names,\"a\"\n.L0_{name}: .asciz \"{}\"\n.L1_{name}: .asciz \"{}\"\n",
        strings[0], strings[1]
    )
}

#[test]
fn tables_of_offsets_to_data_compare_by_what_the_entries_name() {
    let n1 = names("n1", ["zero", "one"]);
    let calls = ["n1", "n2"];
    let plain = x86_program(&format!("{n1}{}", names("n2", ["zero", "one"])), &calls);
    // Folded, n2's table is n1's: the entries' bytes differ from PLAIN's
    // (the table and the strings move apart), what they name does not.
    let good = x86_program(&format!("{n1}{}", alias("n2", "n1", 15)), &calls);
    let wrong = x86_program(&format!("{n1}{}", names("n2", ["zerO", "one"])), &calls);
    let flags = ["-Wl,-q"];
    let dir = work_dir("offset_tables");
    let plain = link(&dir, "gcc", "plain.s", &plain, &flags);
    let good = link(&dir, "gcc", "good.s", &good, &flags);
    let wrong = link(&dir, "gcc", "wrong.s", &wrong, &flags);
    assert_passes(&plain, &good, Mode::Safe);
    assert_caught(&plain, &wrong, Mode::All, DifferenceKind::DataDiffers, "n2");
}

/// `name` returning the last byte of the `%rdi`-th of two strings, read as
/// rustc reads the names of a `Debug` enum: a table of lengths and a table
/// of offsets from its own start, in `.rodata` after the strings (`pad`
/// first, which moves the strings and the tables apart). `between` goes
/// between forming the table's address and loading its entry.
fn rust_names(name: &str, pad: &str, strings: [&str; 2], between: &str) -> String {
    function(
        name,
        "  mov %edi, %ecx\n  lea .Ll_{name}(%rip), %rdx\n  mov (%rdx,%rcx,8), %rdx\n\
         lea .Lt_{name}(%rip), %rdi\n{between}\n  movslq (%rdi,%rcx,4), %rsi\n  add %rdi, %rsi\n\
         mov %rdx, %rdi\n  movzbl -1(%rsi,%rdi), %eax\n  ret"
            .replace("{name}", name)
            .replace("{between}", between)
            .as_str(),
    ) + &format!(
        ".section .rodata\n.Ls_{name}: .ascii \"{pad}{0}{1}\"\n.p2align 2\n\
         .Lt_{name}: .long .Ls_{name}+{2}-.Lt_{name}, .Ls_{name}+{3}-.Lt_{name}\n\
         .p2align 3\n.Ll_{name}: .quad {4}, {5}\n",
        strings[0],
        strings[1],
        pad.len(),
        pad.len() + strings[0].len(),
        strings[0].len(),
        strings[1].len(),
    )
}

#[test]
fn tables_of_offsets_read_by_their_code_compare_without_q() {
    // Without kept relocations, the table is recognized by the code that
    // reads it: the entries' bytes differ (n2's strings lie at other
    // distances from its table), the strings they name do not.
    // (Rust functions, in an image rustc built: their strings carry no
    // NUL.) Straight-line code, and a branch between forming the table's
    // address and loading from it (which only the data flow of
    // `x86_escape::reads_only_offsets` follows).
    offset_tables_compare("offset_tables_without_q", "");
    offset_tables_compare(
        "offset_tables_across_a_branch",
        "  test %ecx, %ecx\n  js 1f\n1:",
    );
}

fn offset_tables_compare(test: &str, between: &str) {
    let (n1, n2) = (
        "_ZN1t2n117h0123456789abcdefE",
        "_ZN1t2n217h0123456789abcdefE",
    );
    let calls = [n1, n2];
    // (n2's data comes first: nothing says where n1's table of lengths
    // ends, so it is compared up to the section's end, in both images.)
    let n1_code = rust_names(n1, "", ["Alpha", "Beta"], between);
    let plain = x86_program(
        &format!(
            "{}{n1_code}",
            rust_names(n2, "xyz", ["Alpha", "Beta"], between)
        ),
        &calls,
    );
    let wrong_plain = x86_program(
        &format!(
            "{}{n1_code}",
            rust_names(n2, "xyz", ["Alpha", "Bet!"], between)
        ),
        &calls,
    );
    // n1's size: 36 bytes, and 4 for the branch (`test`, `js`).
    let size = if between.is_empty() { 36 } else { 40 };
    let folded = x86_program(&format!("{n1_code}{}", alias(n2, n1, size)), &calls);
    let (plain, wrong_plain, folded) = (
        plain + RUSTC_IDENT,
        wrong_plain + RUSTC_IDENT,
        folded + RUSTC_IDENT,
    );
    let dir = work_dir(test);
    let plain = link(&dir, "gcc", "plain.s", &plain, &[]);
    let wrong_plain = link(&dir, "gcc", "wrong_plain.s", &wrong_plain, &[]);
    let folded = link(&dir, "gcc", "folded.s", &folded, &[]);
    assert_passes(&plain, &folded, Mode::Safe);
    assert_passes(&plain, &folded, Mode::All);
    // Folded onto n1, a PLAIN n2 whose second name differs is caught.
    assert_caught(
        &wrong_plain,
        &folded,
        Mode::All,
        DifferenceKind::DataDiffers,
        n2,
    );
}

/// A vague-linkage (weak, C++-mangled) function.
fn weak_function(name: &str, body: &str) -> String {
    format!(".weak {name}\n{}", function(name, body))
}

#[test]
fn thunks_between_vague_linkage_functions_are_assumed_only_when_asked() {
    // mix<3> (as -O0 would write it) becomes a thunk to mix<1> (as -O2 would).
    let one = weak_function("_Z3mixILi1EEll", "  lea (%rdi,%rsi), %rax\n  ret");
    let three_o0 = "  mov %rdi, %rax\n  add %rsi, %rax\n  ret";
    let calls = ["_Z3mixILi1EEll", "_Z3mixILi3EEll"];
    let plain = x86_program(
        &format!("{one}{}", weak_function("_Z3mixILi3EEll", three_o0)),
        &calls,
    );
    let thunk = weak_function("_Z3mixILi3EEll", "  jmp _Z3mixILi1EEll");
    let folded = x86_program(&format!("{one}{thunk}"), &calls);
    // The same thunk from a strong definition: not vague linkage.
    let strong = function("_Z3mixILi3EEll", "  jmp _Z3mixILi1EEll");
    let strong_plain = x86_program(
        &format!("{one}{}", function("_Z3mixILi3EEll", three_o0)),
        &calls,
    );
    let strong_folded = x86_program(&format!("{one}{strong}"), &calls);
    let dir = work_dir("assume_odr");
    let plain = link(&dir, "gcc", "plain.s", &plain, &[]);
    let folded = link(&dir, "gcc", "folded.s", &folded, &[]);
    let strong_plain = link(&dir, "gcc", "strong_plain.s", &strong_plain, &[]);
    let strong_folded = link(&dir, "gcc", "strong_folded.s", &strong_folded, &[]);
    let odr = VerifyOptions {
        mode: Mode::Safe,
        assume_odr: true,
        plain_map: None,
        folded_map: None,
    };
    let outcome = verify(&plain, &folded, &odr).expect("valid inputs");
    assert!(outcome.passed(), "{outcome}");
    assert_eq!(outcome.stats.thunks_assumed_by_odr, 1, "{}", outcome.stats);
    assert!(
        outcome
            .to_string()
            .contains("1 thunks assumed by the one-definition rule"),
        "{outcome}"
    );
    // Without the option the bodies are compared, and differ.
    assert_caught(
        &plain,
        &folded,
        Mode::Safe,
        DifferenceKind::InstructionsDiffer,
        "_Z3mixILi3EEll",
    );
    let outcome = verify(&strong_plain, &strong_folded, &odr).expect("valid inputs");
    let difference = outcome.difference.expect("a strong thunk is not assumed");
    assert_eq!(difference.kind, DifferenceKind::InstructionsDiffer);
    assert_eq!(difference.function, "_Z3mixILi3EEll");
}

/// What rustc writes into every object it makes: its version, in
/// `.comment`, where verify reads that an image holds Rust code.
const RUSTC_IDENT: &str = ".ident \"rustc version 1.95.0 (59807616e 2026-04-14)\"\n";

#[test]
fn rust_functions_have_no_address_identity_in_safe_mode() {
    // rustc's functions are `unnamed_addr`: merging two whose addresses
    // are compared is a correct fold, in safe mode too (legacy and v0).
    // rustc made the image: its `.comment` says so.
    for (m0, m1) in [
        (
            "_ZN4test2m017h0123456789abcdefE",
            "_ZN4test2m117hfedcba9876543210E",
        ),
        ("_RNvCs1_4test2m0", "_RNvCs1_4test2m1"),
    ] {
        let twins = function(m0, "  mov $5, %eax\n  ret");
        let compare = function(
            "same",
            &format!(
                "  lea {m0}(%rip), %rax\n  lea {m1}(%rip), %rcx\n  cmp %rax, %rcx\n  sete %al\n  movzbl %al, %eax\n  ret"
            ),
        );
        let calls = [m0, m1, "same"];
        let right = function(m1, "  mov $5, %eax\n  ret");
        let wrong = function(m1, "  mov $6, %eax\n  ret");
        let plain = x86_program(&format!("{RUSTC_IDENT}{twins}{right}{compare}"), &calls);
        let folded = x86_program(
            &format!("{RUSTC_IDENT}{twins}{}{compare}", alias(m1, m0, 6)),
            &calls,
        );
        let (plain, folded) = x86_pair(&format!("rust_{}", &m0[..3]), &plain, &folded, &[]);
        assert_passes(&plain, &folded, Mode::Safe);
        // Without rustc's mark the names are C's assembler names, and the
        // two functions' addresses are theirs (the comparison sees them
        // merged).
        let c_plain = x86_program(&format!("{twins}{right}{compare}"), &calls);
        let c_folded = x86_program(&format!("{twins}{}{compare}", alias(m1, m0, 6)), &calls);
        let (c_plain, c_folded) = x86_pair(&format!("c_{}", &m0[..3]), &c_plain, &c_folded, &[]);
        assert_caught(
            &c_plain,
            &c_folded,
            Mode::Safe,
            DifferenceKind::SignificantAddressesMerged,
            "same",
        );
        // A Rust function of other code is still not the same function.
        let wrong = x86_program(&format!("{RUSTC_IDENT}{twins}{wrong}{compare}"), &calls);
        let dir = work_dir(&format!("rust_wrong_{}", &m0[..3]));
        let wrong = link(&dir, "gcc", "wrong.s", &wrong, &[]);
        assert_caught(
            &wrong,
            &folded,
            Mode::Safe,
            DifferenceKind::InstructionsDiffer,
            m1,
        );
    }
}

/// A Rust function reading the 5-byte string at `.Ls1` of a mergeable
/// strings section laid out as `strings`, with `.Ls2` and `.Ls3` pointed
/// to from data (after a string of its own, so that `.Ls1` is not one past
/// the end of `_IO_stdin_used`).
fn rust_strings(strings: &str) -> String {
    let reader = function(
        "_ZN4test4name17h0123456789abcdefE",
        // Returns the `&str` (pointer and length): what reads it is unknown.
        "  lea .Ls1(%rip), %rax\n  mov $5, %edx\n  ret",
    );
    let data = format!(
        ".section .rodata.str1.1,\"aMS\",@progbits,1\n.asciz \"-\"\n{strings}\n\
         .section .data.rel.ro,\"aw\"\n.globl names\n.type names,@object\n\
         names: .quad .Ls2, .Ls3\n.size names, 16\n"
    );
    x86_program(
        &format!("{RUSTC_IDENT}{reader}{data}"),
        &["_ZN4test4name17h0123456789abcdefE"],
    )
}

#[test]
fn a_rust_string_without_a_nul_ends_where_other_data_is_pointed_to() {
    let plain =
        rust_strings(".Ls1: .ascii \"hello\"\n.Ls2: .asciz \"world\"\n.Ls3: .asciz \"abc\"");
    // The same strings, laid out otherwise: `hello` is followed by `abc`.
    let folded =
        rust_strings(".Ls1: .ascii \"hello\"\n.Ls3: .asciz \"abc\"\n.Ls2: .asciz \"world\"");
    let wrong =
        rust_strings(".Ls1: .ascii \"hellx\"\n.Ls3: .asciz \"abc\"\n.Ls2: .asciz \"world\"");
    let (plain, folded) = x86_pair("rust_strings", &plain, &folded, &[]);
    assert_passes(&plain, &folded, Mode::All);
    let wrong = link(
        &work_dir("rust_strings_wrong"),
        "gcc",
        "wrong.s",
        &wrong,
        &[],
    );
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::DataDiffers,
        "_ZN4test4name17h0123456789abcdefE",
    );
}

/// A Rust program whose `MSG`, a `&str` in `.data.rel.ro`, points to
/// `message` (its length 5), followed by `tail`, bytes no code names.
fn rust_static_str(message: &str, tail: &str) -> String {
    let getter = function(
        "_ZN4test3msg17h0123456789abcdefE",
        "  lea MSG(%rip), %rax\n  ret",
    );
    x86_program(
        &format!(
            "{RUSTC_IDENT}{getter}.section .rodata,\"a\"\n.Lmsg: .ascii \"{message}\"\n\
             .ascii \"{tail}\"\n.section .data.rel.ro,\"aw\"\n.p2align 3\n.globl MSG\n\
             .type MSG,@object\nMSG: .quad .Lmsg, 5\n.size MSG, 16\n"
        ),
        &["_ZN4test3msg17h0123456789abcdefE"],
    )
}

#[test]
fn a_str_in_the_data_of_a_pie_is_compared_as_far_as_its_length() {
    // A position-independent image marks every pointer it stores with a
    // dynamic relocation (`RELATIVE`, or packed in `.relr.dyn`): the word
    // after the pointer has none, so it is the length, and the bytes
    // after the 5 of the message are no part of it.
    for (test, flags) in [
        ("pie_str", &["-pie"][..]),
        ("pie_str_relr", &["-pie", "-Wl,-z,pack-relative-relocs"][..]),
    ] {
        let (plain, folded) = x86_pair(
            test,
            &rust_static_str("hello", "AAAA"),
            &rust_static_str("hello", "BBBB"),
            flags,
        );
        assert_passes(&plain, &folded, Mode::All);
        let wrong = link(
            &work_dir(&format!("{test}_wrong")),
            "gcc",
            "wrong.s",
            &rust_static_str("hellx", "AAAA"),
            flags,
        );
        assert_caught(
            &plain,
            &wrong,
            Mode::All,
            DifferenceKind::DataDiffers,
            "MSG",
        );
    }
}

/// A Rust function passing `.Lmsg` (and `len`) to `core::panicking::panic`,
/// followed by `tail`, bytes no code names.
fn panic_message(message: &str, len: u32, tail: &str) -> String {
    let panic = function("_ZN4core9panicking5panic17h0123456789abcdefE", "  ud2");
    let caller = function(
        "_ZN4test5check17h0123456789abcdefE",
        &format!(
            "  test %edi, %edi\n  jne 1f\n  xor %eax, %eax\n  ret\n1:\n  \
             lea .Lmsg(%rip), %rdi\n  mov ${len}, %esi\n  \
             call _ZN4core9panicking5panic17h0123456789abcdefE"
        ),
    );
    x86_program(
        &format!(
            "{RUSTC_IDENT}{panic}{caller}.section .rodata,\"a\"\n\
             .Lmsg: .ascii \"{message}\"\n.ascii \"{tail}\"\n"
        ),
        &["_ZN4test5check17h0123456789abcdefE"],
    )
}

#[test]
fn a_panic_message_is_compared_as_far_as_its_length() {
    // The bytes after the 5 the callee reads differ (another constant
    // follows the message in FOLDED): only the message counts.
    let plain = panic_message("hello", 5, "AAAA");
    let folded = panic_message("hello", 5, "BBBB");
    let (plain, folded) = x86_pair("panic_message", &plain, &folded, &[]);
    assert_passes(&plain, &folded, Mode::All);
    // Within those 5, a difference is one.
    let wrong = panic_message("hellx", 5, "AAAA");
    let wrong = link(
        &work_dir("panic_message_wrong"),
        "gcc",
        "wrong.s",
        &wrong,
        &[],
    );
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::DataDiffers,
        "_ZN4test5check17h0123456789abcdefE",
    );
    // A length of 7 reads into the bytes that differ.
    let (plain, longer) = x86_pair(
        "panic_message_longer",
        &panic_message("hello", 7, "AAAA"),
        &panic_message("hello", 7, "BBBB"),
        &[],
    );
    assert_caught(
        &plain,
        &longer,
        Mode::All,
        DifferenceKind::DataDiffers,
        "_ZN4test5check17h0123456789abcdefE",
    );
}

/// `f` dispatches on `%rdi` through `.LT1` to `.Le` or `.Lf`; `.Lf` on
/// `%rsi` through `.LT3` to `.Lb`; `.Lb` on `%rdx` through `.LT2`, the
/// table right after `.LT1`, to `.Lx` (which takes the address of `D`) or
/// `.Ly`. No range check bounds any. The walk reads `.LT1` before it
/// reads `.LT3`, so before it reaches the `lea` naming `.LT2`: read on,
/// `.LT1`'s fourth entry (`.LT2`'s second) lands 3 bytes into `.Lx`'s
/// `lea`, in its displacement. `pad` goes before `D` in `.data`.
fn two_tables(pad: &str) -> String {
    let dispatch = |table: &str, index: &str| {
        format!(
            "  lea {table}(%rip), %rcx\n  movslq (%rcx,{index},4), %rax\n  add %rcx, %rax\n  jmp *%rax\n"
        )
    };
    let f = function(
        "f",
        &format!(
            "{}.Le:\n  mov $3, %eax\n  ret\n  int3\n  int3\n.Lf:\n{}.Lb:\n{}\
             .Lx:\n  lea D(%rip), %rax\n  ret\n  int3\n  int3\n  int3\n.Ly:\n  mov $1, %eax\n  ret",
            dispatch(".LT1", "%rdi"),
            dispatch(".LT3", "%rsi"),
            dispatch(".LT2", "%rdx"),
        ),
    );
    let main = ".text\n.globl main\n.type main,@function\nmain:\n  xor %edi, %edi\n  \
                xor %esi, %esi\n  xor %edx, %edx\n  call f\n  xor %eax, %eax\n  ret\n\
                .size main, .-main\n";
    format!(
        "{f}{main}.section .rodata\n.p2align 2\n.LT3: .long .Lb-.LT3\n\
         .LT1: .long .Le-.LT1, .Lf-.LT1\n.LT2: .long .Lx-.LT2, .Ly-.LT2\n.data\n{pad}\
         .globl D\n.type D,@object\nD: .quad 7\n.size D, 8\n\
         .section .note.GNU-stack,\"\",@progbits\n"
    )
}

#[test]
fn a_table_ends_where_the_next_one_its_function_names_starts() {
    // Read on, `.LT1` would send a jump into `.Lx`'s displacement, which
    // differs (D moved): the code would differ there. The linear decode
    // of `f` names `.LT2`, which ends `.LT1`.
    let (plain, folded) = x86_pair("two_tables", &two_tables(""), &two_tables(".quad 0\n"), &[]);
    assert_passes(&plain, &folded, Mode::All);
}

#[test]
fn code_that_differs_before_a_branch_target_is_reported_as_differing_code() {
    // FOLDED's middle decodes to more instructions: the forward branch's
    // target has another index, but what differs is the instruction.
    let program = |middle: &str| {
        x86_program(
            &function(
                "f",
                &format!(
                    "  mov %rdi, %rdx\n  cmp $7, %rdi\n  ja 1f\n{middle}\n1:\n  mov %rdx, %rax\n  ret"
                ),
            ),
            &["f"],
        )
    };
    let plain = program("  add $0x1352, %rdx");
    let folded = program("  sub $4, %rdx\n  nop\n  nop\n  nop");
    let (plain, folded) = x86_pair("differs_before_target", &plain, &folded, &[]);
    assert_caught(
        &plain,
        &folded,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "f",
    );
    let same = program("  add $0x1352, %rdx");
    let same = link(
        &work_dir("differs_before_target_same"),
        "gcc",
        "same.s",
        &same,
        &[],
    );
    assert_passes(&plain, &same, Mode::All);
}

/// Two equal tables and a function `lookup_<t>` per table reading through
/// `body` (with `TABLE` standing for the table the function reads); in
/// FOLDED, `tab_b` is `tab_a` and `lookup_b` reads `tab_a`.
fn tables(body: &str, folded: bool) -> String {
    let mut data = String::from(
        ".section .rodata\n.globl tab_a\n.type tab_a,@object\n\
         tab_a: .long 1, 2, 3, 4, 5, 6, 7, 8\n.size tab_a, 32\n",
    );
    if folded {
        data.push_str(".globl tab_b\n.type tab_b,@object\n.set tab_b, tab_a\n.size tab_b, 32\n");
    } else {
        data.push_str(
            ".globl tab_b\n.type tab_b,@object\ntab_b: .long 1, 2, 3, 4, 5, 6, 7, 8\n.size tab_b, 32\n",
        );
    }
    data.push_str(".bss\n.globl out\nout: .quad 0\n");
    let b_table = if folded { "tab_a" } else { "tab_b" };
    let code = function("lookup_a", &body.replace("TABLE", "tab_a"))
        + &function("lookup_b", &body.replace("TABLE", b_table));
    x86_program(&format!("{data}{code}"), &["lookup_a", "lookup_b"])
}

#[test]
fn a_table_whose_address_is_only_loaded_through_has_no_identity() {
    // clang: `lea table(%rip),%rax; mov (%rax,%rdi,4),%eax`; the address
    // is overwritten before it could escape.
    let load = "  and $7, %edi\n  lea TABLE(%rip), %rax\n  mov (%rax,%rdi,4), %eax\n  ret";
    let (plain, folded) = x86_pair("load_only", &tables(load, false), &tables(load, true), &[]);
    assert_passes(&plain, &folded, Mode::Safe);
    // Copied to another register and only loaded through: still local.
    let copied = "  and $7, %edi\n  lea TABLE(%rip), %rcx\n  mov %rcx, %rsi\n  mov (%rsi,%rdi,4), %eax\n  mov (%rcx), %ecx\n  xor %esi, %esi\n  ret";
    let (plain, folded) = x86_pair(
        "load_copied",
        &tables(copied, false),
        &tables(copied, true),
        &[],
    );
    assert_passes(&plain, &folded, Mode::Safe);
    // The address escapes: stored, returned, compared, passed to a call.
    for (name, body) in [
        (
            "stored",
            "  lea TABLE(%rip), %rax\n  mov %rax, out(%rip)\n  mov (%rax), %eax\n  ret",
        ),
        (
            "returned",
            "  lea TABLE(%rip), %rax\n  mov (%rax), %ecx\n  ret",
        ),
        (
            "compared",
            "  lea TABLE(%rip), %rcx\n  cmp %rcx, %rdi\n  sete %al\n  movzbl %al, %eax\n  ret",
        ),
        (
            "argument",
            "  push %rbx\n  lea TABLE(%rip), %rdi\n  call lookup_c\n  pop %rbx\n  ret",
        ),
        (
            "copied",
            "  lea TABLE(%rip), %rcx\n  mov %rcx, %rax\n  mov (%rcx), %ecx\n  ret",
        ),
    ] {
        let extra = function("lookup_c", "  mov (%rdi), %eax\n  ret");
        let plain = tables(body, false) + &extra;
        let folded = tables(body, true) + &extra;
        let (plain, folded) = x86_pair(&format!("escapes_{name}"), &plain, &folded, &[]);
        assert_caught(
            &plain,
            &folded,
            Mode::Safe,
            DifferenceKind::SignificantAddressesMerged,
            "lookup_b",
        );
    }
}

/// `get` returns a constant in `.data.rel.ro` (a pointer to `target`)
/// that has no symbol, after or before a named `pad`.
fn relro_constant(pad_first: bool, target: &str) -> String {
    let pad = ".globl pad\n.type pad,@object\npad: .quad 1\n.size pad, 8\n";
    let constant = format!(".Lc: .quad {target}\n");
    let (first, second) = if pad_first {
        (pad.to_string(), constant)
    } else {
        (constant, pad.to_string())
    };
    let data = format!(".section .data.rel.ro,\"aw\"\n.p2align 3\n{first}{second}");
    let code = function("get", "  lea .Lc(%rip), %rax\n  mov (%rax), %rax\n  ret")
        + &function("one", "  mov $1, %eax\n  ret")
        + &function("two", "  mov $2, %eax\n  ret");
    x86_program(&format!("{data}{code}"), &["get", "one", "two"])
}

#[test]
fn unnamed_relro_constants_compare_by_content_not_offset() {
    // `.data.rel.ro` is read-only once relocated: a constant there without
    // a name is the compiler's (rustc's vtables and tables), compared like
    // unnamed read-only data wherever the link put it.
    let plain = relro_constant(true, "one");
    let folded = relro_constant(false, "one");
    let (plain, folded) = x86_pair("relro", &plain, &folded, &[]);
    assert_passes(&plain, &folded, Mode::Safe);
    let wrong = relro_constant(false, "two");
    let wrong = link(&work_dir("relro_wrong"), "gcc", "wrong.s", &wrong, &[]);
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "get",
    );
}

/// Links the assembly `units` (name, source) and `main`, in that order,
/// with gcc and `linker_flags`, into `dir/name`.
fn link_units(
    dir: &Path,
    name: &str,
    units: &[(&str, String)],
    main: &str,
    linker_flags: &[&str],
) -> PathBuf {
    let mut args = Vec::new();
    for (unit, source) in units
        .iter()
        .map(|(unit, source)| (*unit, source.as_str()))
        .chain([("main", main)])
    {
        let path = dir.join(format!("{name}_{unit}.s"));
        std::fs::write(&path, source).expect("writing a unit");
        args.push(path.to_string_lossy().into_owned());
    }
    let output = dir.join(name);
    args.extend(linker_flags.iter().map(|flag| flag.to_string()));
    args.extend(["-o".into(), output.to_string_lossy().into_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run("gcc", &args);
    output
}

const LLD: [&str; 2] = ["-fuse-ld=lld", "-B/usr/lib/llvm-19/bin/"];

/// A unit `file` with a local `helper` returning `value` and a global
/// `call_{file}` calling `callee` (the unit's own `helper` unless folded).
fn unit(file: &str, value: u32, callee: &str, extra: &str) -> String {
    format!(
        ".file \"{file}.c\"\n{}{}{extra}.section .note.GNU-stack,\"\",@progbits\n",
        function("helper", &format!("  mov ${value}, %eax\n  ret")),
        format!(".globl call_{file}\n")
            + &function(&format!("call_{file}"), &format!("  call {callee}\n  ret")),
    )
}

#[test]
fn a_local_whose_unit_lost_every_local_is_not_another_units_namesake() {
    // Units b, a, c each have a local `helper`; a's is b's twin, c's is
    // not. Folded, a's `helper` is gone and with it a's only local, so no
    // FOLDED symbol is known to be a's: a's `helper` has no counterpart,
    // and must not be paired with the next `helper` by position (c's).
    let kept = ".globl __icf_helper\n.hidden __icf_helper\n".to_string()
        + &alias("__icf_helper", "helper", 6);
    let c_helper =
        ".globl __c_helper\n.hidden __c_helper\n".to_string() + &alias("__c_helper", "helper", 6);
    let main = x86_program("", &["call_a", "call_b", "call_c"]);
    let dir = work_dir("lost_unit");
    let build = |name: &str, [b, a, c]: [String; 3]| {
        let units = [("b", b), ("a", a), ("c", c)];
        link_units(&dir, name, &units, &main, &["-fuse-ld=bfd"])
    };
    let plain = build(
        "plain",
        [
            unit("b", 7, "helper", ""),
            unit("a", 7, "helper", ""),
            unit("c", 8, "helper", ""),
        ],
    );
    let a_folded = ".file \"a.c\"\n.globl call_a\n".to_string()
        + &function("call_a", "  call __icf_helper\n  ret")
        + ".section .note.GNU-stack,\"\",@progbits\n";
    let folded = build(
        "folded",
        [
            unit("b", 7, "helper", &kept),
            a_folded,
            unit("c", 8, "helper", &c_helper),
        ],
    );
    assert_passes(&plain, &folded, Mode::Safe);
    // Folded into c's `helper` instead, it is caught where it is called.
    let a_wrong = ".file \"a.c\"\n.globl call_a\n".to_string()
        + &function("call_a", "  call __c_helper\n  ret")
        + ".section .note.GNU-stack,\"\",@progbits\n";
    let wrong = build(
        "wrong",
        [
            unit("b", 7, "helper", &kept),
            a_wrong,
            unit("c", 8, "helper", &c_helper),
        ],
    );
    assert_caught(
        &plain,
        &wrong,
        Mode::Safe,
        DifferenceKind::InstructionsDiffer,
        "call_a",
    );
}

/// Twin arrays `arr1` and `arr2` (or `arr2` an alias of `arr1`), and right
/// after them the unnamed jump table of `sw`, whose entries are `cases`.
fn array_then_jump_table(folded_arrays: bool, cases: [&str; 2]) -> String {
    let arr2 = if folded_arrays {
        ".globl arr2\n.type arr2,@object\n.set arr2, arr1\n.size arr2, 16\n".to_string()
    } else {
        ".globl arr2\n.type arr2,@object\narr2: .long 1, 2, 3, 4\n.size arr2, 16\n".to_string()
    };
    let data = format!(
        ".section .rodata\n.p2align 4\n.globl arr1\n.type arr1,@object\narr1: .long 1, 2, 3, 4\n.size arr1, 16\n\
         {arr2}.Lt: .long {}-.Lt, {}-.Lt\n",
        cases[0], cases[1]
    );
    let code = function("get1", "  lea arr1(%rip), %rax\n  ret")
        + &function(
            "load2",
            "  lea arr2(%rip), %rax\n  mov 4(%rax), %eax\n  ret",
        )
        + &function(
            "sw",
            "  and $1, %edi\n  lea .Lt(%rip), %rdx\n  movslq (%rdx,%rdi,4), %rax\n  add %rdx, %rax\n  jmp *%rax\n\
             .Lc0: mov $10, %eax\n  ret\n.Lc1: mov $11, %eax\n  ret",
        );
    x86_program(&format!("{data}{code}"), &["get1", "load2", "sw"])
}

#[test]
fn a_jump_table_right_after_an_array_is_compared_as_the_table() {
    // The table's address is also one past the end of an array. Folded,
    // arr2 (only loaded from) is arr1 (whose address is observed): the
    // table's base is no observed end of arr2, so this fold is correct.
    let plain = array_then_jump_table(false, [".Lc0", ".Lc1"]);
    let folded = array_then_jump_table(true, [".Lc0", ".Lc1"]);
    let (plain, folded) = x86_pair("table_after_array", &plain, &folded, &[]);
    assert_passes(&plain, &folded, Mode::Safe);
    // Entries swapped: the array's end still matches, the table does not.
    let wrong = array_then_jump_table(false, [".Lc1", ".Lc0"]);
    let wrong = link(
        &work_dir("table_after_array_wrong"),
        "gcc",
        "wrong.s",
        &wrong,
        &[],
    );
    assert_caught(&plain, &wrong, Mode::All, DifferenceKind::DataDiffers, "sw");
}

/// Twin arrays `dup1` and `dup2` (or `dup2` an alias of `dup1`, which
/// moves what follows), then `tab`, then functions with `body`.
fn moved_table(folded: bool, body: &str) -> String {
    let dup2 = if folded {
        ".globl dup2\n.type dup2,@object\n.set dup2, dup1\n.size dup2, 16\n".to_string()
    } else {
        ".globl dup2\n.type dup2,@object\ndup2: .long 5, 6, 7, 8\n.size dup2, 16\n".to_string()
    };
    let data = format!(
        ".section .rodata\n.p2align 4\n.globl dup1\n.type dup1,@object\ndup1: .long 5, 6, 7, 8\n.size dup1, 16\n\
         {dup2}.globl tab\n.type tab,@object\ntab: .byte 1, 2, 3, 4\n.size tab, 4\n"
    );
    let code = function("get", body)
        + &function(
            "dup",
            "  lea dup1(%rip), %rax\n  mov (%rax), %eax\n  lea dup2(%rip), %rcx\n  add (%rcx), %eax\n  ret",
        );
    x86_program(&format!("{data}{code}"), &["get", "dup"])
}

#[test]
fn an_indexed_absolute_displacement_is_an_address() {
    // -fno-pic code indexes an array by its absolute address; the fold of
    // dup2 moves the array, so the displacement's value changes.
    let flags = ["-no-pie"];
    let (plain, folded) = x86_pair(
        "indexed_absolute",
        &moved_table(false, "  movsbl tab(%rdi), %eax\n  ret"),
        &moved_table(true, "  movsbl tab(%rdi), %eax\n  ret"),
        &flags,
    );
    assert_passes(&plain, &folded, Mode::All);
    let wrong = moved_table(true, "  movsbl tab+1(%rdi), %eax\n  ret");
    let wrong = link(
        &work_dir("indexed_absolute_wrong"),
        "gcc",
        "wrong.s",
        &wrong,
        &flags,
    );
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::TargetsDiffer,
        "get",
    );
}

#[test]
fn a_got_load_the_linker_relaxed_to_an_immediate_is_an_address() {
    // lld rewrites `sub tab@GOTPCREL(%rip), %rax` in a position-dependent
    // executable to `sub $tab, %rax`, keeping the GOTPCRELX relocation.
    let flags = [
        "-no-pie",
        "-fuse-ld=lld",
        "-B/usr/lib/llvm-19/bin/",
        "-Wl,-q",
    ];
    let body = "  mov %rdi, %rax\n  sub tab@GOTPCREL(%rip), %rax\n  ret";
    let (plain, folded) = x86_pair(
        "relaxed_got",
        &moved_table(false, body),
        &moved_table(true, body),
        &flags,
    );
    let outcome = assert_passes(&plain, &folded, Mode::All);
    assert_eq!(outcome.stats.aliases_followed, 0, "{}", outcome.stats);
    let wrong = moved_table(
        true,
        "  mov %rdi, %rax\n  sub dup1@GOTPCREL(%rip), %rax\n  ret",
    );
    let wrong = link(
        &work_dir("relaxed_got_wrong"),
        "gcc",
        "wrong.s",
        &wrong,
        &flags,
    );
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::TargetsDiffer,
        "get",
    );
}

#[test]
fn an_immediate_in_position_independent_code_is_a_number() {
    // In a PIE, 0x1140 is also an address in .text (main+4), another place once
    // the twins before it are folded: still only a number.
    let twins = function("t1", "  mov $3, %eax\n  ret") + &function("t2", "  mov $3, %eax\n  ret");
    let number = |value: &str| function("num", &format!("  imul ${value}, %edi, %eax\n  ret"));
    let calls = ["t1", "t2", "num"];
    let plain = x86_program(&format!("{twins}{}", number("0x1140")), &calls);
    let folded_twins = function("t1", "  mov $3, %eax\n  ret") + &alias("t2", "t1", 6);
    let folded = x86_program(&format!("{folded_twins}{}", number("0x1140")), &calls);
    let (plain, folded) = x86_pair("pie_number", &plain, &folded, &["-pie"]);
    assert_passes(&plain, &folded, Mode::All);
    let wrong = x86_program(&format!("{folded_twins}{}", number("0x1141")), &calls);
    let wrong = link(
        &work_dir("pie_number_wrong"),
        "gcc",
        "wrong.s",
        &wrong,
        &["-pie"],
    );
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "num",
    );
}

#[test]
fn the_end_of_a_section_is_that_sections_end() {
    // `__stop_hot` bounds the section `hot`, which the fold shrinks.
    let hot = |folded: bool| {
        let second = if folded {
            alias("h2", "h1", 6)
        } else {
            ".section hot,\"ax\",@progbits\n".to_string() + &function("h2", "  mov $4, %eax\n  ret")
        };
        format!(
            ".section hot,\"ax\",@progbits\n.type h1,@function\nh1:\n  mov $4, %eax\n  ret\n.size h1, .-h1\n{second}\
             .text\n.globl in_hot\n.type in_hot,@function\nin_hot:\n  lea __stop_hot(%rip), %rax\n  cmp %rax, %rdi\n  setb %al\n  movzbl %al, %eax\n  ret\n.size in_hot, .-in_hot\n"
        )
    };
    let calls = ["h1", "h2", "in_hot"];
    let (plain, folded) = x86_pair(
        "section_end",
        &x86_program(&hot(false), &calls),
        &x86_program(&hot(true), &calls),
        &[],
    );
    assert_passes(&plain, &folded, Mode::All);
}

#[test]
fn an_unexported_global_the_folded_link_dropped_is_checked_where_used() {
    // Folded, every call of g2 goes to its twin g1 and the link (with
    // --gc-sections) dropped g2: nothing can name it any more.
    let g1 = ".globl g1\n".to_string() + &function("g1", "  mov $7, %eax\n  ret");
    let g2 = ".globl g2\n".to_string() + &function("g2", "  mov $7, %eax\n  ret");
    let plain = x86_program(&format!("{g1}{g2}"), &["g1", "g2"]);
    let folded = x86_program(&g1, &["g1", "g1"]);
    let (plain_exe, folded_exe) = x86_pair("dropped_global", &plain, &folded, &[]);
    let outcome = assert_passes(&plain_exe, &folded_exe, Mode::Safe);
    assert_eq!(
        outcome.stats.unexported_without_symbol, 1,
        "{}",
        outcome.stats
    );
    // Exported (-rdynamic), another module may name g2: it must be there.
    let flags = ["-rdynamic"];
    let (plain_exe, folded_exe) = x86_pair("dropped_export", &plain, &folded, &flags);
    let outcome = check(&plain_exe, &folded_exe, Mode::Safe);
    let difference = outcome
        .difference
        .expect("a missing export is a difference");
    assert_eq!(difference.kind, DifferenceKind::MissingInFolded);
    assert_eq!(difference.function, "g2");
}

#[test]
fn namesakes_without_a_file_pair_only_when_none_was_removed() {
    // The same three units without `STT_FILE`, linked by lld (which names
    // no file for them): their `helper`s all fall under the previous
    // file's name. Folded, a's is gone; which of three it was is unknown,
    // so none is paired by position, and each is checked where used.
    let no_file = |source: String| source.lines().skip(1).collect::<Vec<_>>().join("\n") + "\n";
    let kept = ".globl __icf_helper\n.hidden __icf_helper\n".to_string()
        + &alias("__icf_helper", "helper", 6);
    let main = x86_program("", &["call_a", "call_b", "call_c"]);
    let dir = work_dir("no_file_namesakes");
    let build = |name: &str, [b, a, c]: [String; 3]| {
        let units = [("b", no_file(b)), ("a", no_file(a)), ("c", no_file(c))];
        link_units(&dir, name, &units, &main, &LLD)
    };
    let plain = build(
        "plain",
        [
            unit("b", 7, "helper", ""),
            unit("a", 7, "helper", ""),
            unit("c", 8, "helper", ""),
        ],
    );
    let a_folded = ".file \"a.c\"\n.globl call_a\n".to_string()
        + &function("call_a", "  call __icf_helper\n  ret")
        + ".section .note.GNU-stack,\"\",@progbits\n";
    let folded = build(
        "folded",
        [
            unit("b", 7, "helper", &kept),
            a_folded,
            unit("c", 8, "helper", ""),
        ],
    );
    let outcome = assert_passes(&plain, &folded, Mode::Safe);
    assert_eq!(outcome.stats.locals_without_symbol, 3, "{}", outcome.stats);
}

#[test]
fn namesake_writable_locals_without_a_file_bind_one_to_one() {
    // Two units, each with a local `counter` that its `bump_*` increments,
    // without `STT_FILE`, linked by lld in one order and then the other:
    // which `counter` is which follows from the code, one to one.
    let unit = |name: &str, target: &str, extra: &str| {
        format!(
            ".data\n.p2align 2\n.type counter,@object\ncounter: .long 0\n.size counter, 4\n{extra}\
             .text\n.globl bump_{name}\n.type bump_{name},@function\nbump_{name}:\n  addl $1, {target}(%rip)\n  mov {target}(%rip), %eax\n  ret\n.size bump_{name}, .-bump_{name}\n\
             .section .note.GNU-stack,\"\",@progbits\n"
        )
    };
    let main = x86_program("", &["bump_a", "bump_b", "bump_a"]);
    let dir = work_dir("writable_namesakes");
    let build = |name: &str, units: &[(&str, String)]| link_units(&dir, name, units, &main, &LLD);
    let plain = build(
        "plain",
        &[
            ("a", unit("a", "counter", "")),
            ("b", unit("b", "counter", "")),
        ],
    );
    let swapped = build(
        "swapped",
        &[
            ("b", unit("b", "counter", "")),
            ("a", unit("a", "counter", "")),
        ],
    );
    assert_passes(&plain, &swapped, Mode::Safe);
    // bump_b increments a's counter: two counters became one.
    let shared = ".globl other_counter\n.hidden other_counter\n.set other_counter, counter\n";
    let wrong = build(
        "wrong",
        &[
            ("a", unit("a", "counter", shared)),
            ("b", unit("b", "other_counter", "")),
        ],
    );
    let outcome = check(&plain, &wrong, Mode::Safe);
    let difference = outcome.difference.expect("two counters made one");
    assert_eq!(
        difference.kind,
        DifferenceKind::SignificantAddressesMerged,
        "{difference}"
    );
}

/// `f` loops over `ca2n` (in FOLDED merged into its twin `ca2`, whose
/// address `p` returns), leaving the table's address in `rdx` at its
/// return (clang -O1).
const RDX_AT_RETURN: &str = r#"
#include <stdio.h>
const int ca2[4] = {811, -781, -851, 810};
#ifdef FOLDED
#define ca2n ca2
#else
const int ca2n[4] = {811, -781, -851, 810};
#endif
__attribute__((noinline)) long f(long a, long b) {
  long x = a;
  for (int i = 0; i < (int)(b & 7); i++) x += ca2n[i & 3] * 55;
  for (int i = 0; i < (int)(b & 7); i++) x += ca2n[(i + 1) & 3] * 3;
  return x;
}
__attribute__((noinline)) const int *p(void) { return &ca2[3]; }
/* Last in .rodata in both links: printf's format string starts where it
   ends, not where ca2n (folded into ca2) ends. */
const int tail[1] = {5};
int main(int argc, char **argv) {
  (void)argv;
  printf("%ld %ld\n", f(argc, argc + 6), (long)(p() - ca2));
  return 0;
}
"#;

#[test]
fn a_dwarf_prototype_returning_one_register_leaves_no_result_in_rdx() {
    let dir = work_dir("rdx_at_return");
    let build = |name: &str, extra: &[&str]| {
        let mut flags = vec!["-O1", "-fPIE", "-pie", "-fdata-sections"];
        flags.extend_from_slice(extra);
        link(&dir, "clang-19", name, RDX_AT_RETURN, &flags)
    };
    // With `-g`, `f` returns a `long`: `rdx` is dead at its return.
    let plain = build("plain_g.c", &["-g"]);
    let folded = build("folded_g.c", &["-g", "-DFOLDED"]);
    assert_passes(&plain, &folded, Mode::Safe);
    // One image's prototype is enough: the code is the same in both, so
    // what PLAIN's scan proves unobserved is unobserved in FOLDED too.
    let folded_bare = build("folded_bare.c", &["-DFOLDED"]);
    assert_passes(&plain, &folded_bare, Mode::Safe);
    // Without, `rdx` may be the second half of a 16-byte result.
    let plain = build("plain.c", &[]);
    let folded = build("folded.c", &["-DFOLDED"]);
    assert_caught(
        &plain,
        &folded,
        Mode::Safe,
        DifferenceKind::SignificantAddressesMerged,
        "f",
    );
}

#[test]
fn an_absolute_address_loaded_only_to_read_through_is_not_observed() {
    // Position-dependent code takes `tab2`'s address as an immediate
    // (`mov $tab2, %ecx`, or a GOT load GNU ld relaxed to one) only to read
    // through it: FOLDED reading the equal `tab1` instead is no merge of
    // observed addresses, though `p` returns `tab1`'s.
    let data = ".section .rodata\n.globl tab1\n.type tab1,@object\ntab1: .long 5, 6\n.size tab1, 8\n\
                .globl tab2\n.type tab2,@object\ntab2: .long 5, 6\n.size tab2, 8\n";
    let reader = |name: &str, table: &str| {
        format!(".globl {name}\n")
            + &function(
                name,
                &format!("  mov ${table}, %ecx\n  mov 4(%rcx), %eax\n  ret"),
            )
    };
    let getter = ".globl p\n".to_string() + &function("p", "  mov $tab1, %eax\n  ret");
    let program = |second: &str| {
        x86_program(
            &format!(
                "{data}{}{}{getter}",
                reader("r1", "tab1"),
                reader("r2", second)
            ),
            &["r1", "r2", "p"],
        )
    };
    let (plain, folded) = x86_pair(
        "absolute_read_only",
        &program("tab2"),
        &program("tab1"),
        &["-no-pie"],
    );
    assert_passes(&plain, &folded, Mode::Safe);
}

/// `s` dispatching on `%edi` below 2 through `.Lt_s`; what follows the
/// table in `.rodata` is `after`, which nothing reached references.
fn guarded_switch(after: &str, second_case: &str) -> String {
    function(
        "s",
        "  cmp $1, %edi\n  ja .Ld_s\n  lea .Lt_s(%rip), %rdx\n  movslq (%rdx,%rdi,4), %rax\n  add %rdx, %rax\n  jmp *%rax\n.La_s:\n  mov $1, %eax\n  ret\n.Lb_s:\n  mov $2, %eax\n  ret\n.Ld_s:\n  xor %eax, %eax\n  ret",
    ) + &format!(
        ".section .rodata\n.p2align 2\n.Lt_s:\n  .long .La_s-.Lt_s\n  .long {second_case}-.Lt_s\n{after}\n"
    )
}

#[test]
fn a_jump_table_ends_where_its_range_check_says() {
    // PLAIN's table is followed by what reads as a third entry landing in
    // `s` (a table of a weak copy the link did not keep reads so); FOLDED's
    // by other bytes. `cmp $1; ja` says the table has two entries.
    let plain = x86_program(&guarded_switch("  .long .Ld_s-.Lt_s", ".Lb_s"), &["s"]);
    let folded = x86_program(&guarded_switch("  .long 0x7fff0000", ".Lb_s"), &["s"]);
    let wrong = x86_program(&guarded_switch("  .long 0x7fff0000", ".La_s"), &["s"]);
    let (plain, folded, wrong) = x86_triple("range_checked_table", [&plain, &folded, &wrong], &[]);
    assert_passes(&plain, &folded, Mode::All);
    // FOLDED's second case is never reached: data there, code in PLAIN.
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "s",
    );
}

/// `s` dispatching on `%edi` below 3 through a table whose entries name
/// `cases` (`.Lend_s` is the function's end: an unreachable case), followed
/// in `.rodata` by `after`.
fn switch_with_unreachable_case(cases: [&str; 3], after: &str) -> String {
    function(
        "s",
        "  cmp $2, %edi\n  ja .Ld_s\n  lea .Lt_s(%rip), %rdx\n  movslq (%rdx,%rdi,4), %rax\n  add %rdx, %rax\n  jmp *%rax\n.La_s:\n  mov $1, %eax\n  ret\n.Lb_s:\n  mov $2, %eax\n  ret\n.Ld_s:\n  xor %eax, %eax\n  ret\n.Lend_s:",
    ) + &format!(
        ".section .rodata\n.p2align 2\n.Lt_s:\n  .long {}-.Lt_s\n  .long {}-.Lt_s\n  .long {}-.Lt_s\n{after}\n",
        cases[0], cases[1], cases[2]
    )
}

#[test]
fn a_jump_table_entry_at_the_function_s_end_is_an_unreachable_case() {
    // `cmp $2; ja` sizes the table at three entries; the second is a case
    // the compiler knows unreachable (it jumps to where `s` ends). The third
    // is still compared: FOLDED's wrong one sends it to the first case.
    let cases = [".La_s", ".Lend_s", ".Lb_s"];
    let plain = x86_program(
        &switch_with_unreachable_case(cases, "  .long .Ld_s-.Lt_s"),
        &["s"],
    );
    let good = x86_program(
        &switch_with_unreachable_case(cases, "  .long 0x7fff0000"),
        &["s"],
    );
    let wrong_cases = [".La_s", ".Lend_s", ".La_s"];
    let wrong = x86_program(
        &switch_with_unreachable_case(wrong_cases, "  .long 0x7fff0000"),
        &["s"],
    );
    let (plain, good, wrong) = x86_triple("unreachable_case", [&plain, &good, &wrong], &[]);
    assert_passes(&plain, &good, Mode::All);
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "s",
    );
}

#[test]
fn a_jump_table_entry_into_the_cold_part_is_a_jump_there() {
    // GCC moves rare cases to `s.cold` in `.text.unlikely`: the entry lands
    // outside `s`, and the entries after it still count. FOLDED's wrong
    // table sends that case to another cold part.
    let cold = |name: &str, value: u32| {
        ".section .text.unlikely,\"ax\",@progbits\n".to_string()
            + &function(name, &format!("  mov ${value}, %eax\n  ret"))
    };
    let parts = cold("s.cold", 7) + &cold("t.cold", 8);
    let program = |cases: [&str; 3], after: &str| {
        x86_program(
            &format!("{parts}{}", switch_with_unreachable_case(cases, after)),
            &["s", "t.cold"],
        )
    };
    let plain = program([".La_s", "s.cold", ".Lb_s"], "  .long .Ld_s-.Lt_s");
    let good = program([".La_s", "s.cold", ".Lb_s"], "  .long 0x7fff0000");
    let wrong = program([".La_s", "t.cold", ".Lb_s"], "  .long 0x7fff0000");
    let (plain, good, wrong) = x86_triple("cold_case", [&plain, &good, &wrong], &[]);
    assert_passes(&plain, &good, Mode::All);
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "s",
    );
}

/// `name` dispatching on `%edi & 3` through a table `.Lt_{name}` of two
/// entries (the caller promises an index below 2, as a pointer's tag bits
/// do), and the table, to be placed in `.rodata`.
fn masked_switch(name: &str) -> (String, String) {
    let code = function(
        name,
        &format!(
            "  mov %edi, %edx\n  and $3, %edx\n  lea .Lt_{name}(%rip), %rsi\n  movslq (%rsi,%rdx,4), %rdx\n  add %rsi, %rdx\n  jmp *%rdx\n.La_{name}:\n  mov $1, %eax\n  ret\n.Lb_{name}:\n  mov $2, %eax\n  ret"
        ),
    );
    let table = format!(
        ".p2align 2\n.Lt_{name}:\n  .long .La_{name}-.Lt_{name}\n  .long .Lb_{name}-.Lt_{name}\n"
    );
    (code, table)
}

#[test]
fn a_mask_only_bounds_a_jump_table_that_ends_where_the_next_one_starts() {
    // `and $3` lets `s` select four entries, but its table has two: `t`'s
    // follows in PLAIN, other bytes in FOLDED.
    let (s, s_table) = masked_switch("s");
    let (t, t_table) = masked_switch("t");
    let program =
        |rodata: &str| x86_program(&format!("{s}{t}.section .rodata\n{rodata}"), &["s", "t"]);
    let (plain, folded) = x86_pair(
        "masked_table",
        &program(&format!("{s_table}{t_table}")),
        &program(&format!(
            "{t_table}{s_table}  .long 0x7fff0000, 0x7fff0000\n"
        )),
        &[],
    );
    assert_passes(&plain, &folded, Mode::All);
}

/// `name` dispatching on `%edi` through an absolute table `.Lt_{name}` (in
/// `.rodata`, right where `place` puts it) to cases returning `values`.
fn absolute_switch(name: &str, values: [u32; 2]) -> (String, String) {
    let code = function(
        name,
        &format!(
            "  cmp $1, %edi\n  ja .Ld_{name}\n  mov %edi, %edi\n  jmp *.Lt_{name}(,%rdi,8)\n.La_{name}:\n  mov ${}, %eax\n  ret\n.Lb_{name}:\n  mov ${}, %eax\n  ret\n.Ld_{name}:\n  xor %eax, %eax\n  ret",
            values[0], values[1]
        ),
    );
    let table = format!(".p2align 3\n.Lt_{name}:\n  .quad .La_{name}\n  .quad .Lb_{name}\n");
    (code, table)
}

#[test]
fn an_address_ending_an_array_and_starting_another_function_s_jump_table() {
    // `end` forms one past `tab`, which PLAIN follows with `s`'s jump
    // table and FOLDED (another layout) with `t`'s. Reading the word
    // before it, `end` reads `tab` in both: the fold is proved.
    let (s, s_table) = absolute_switch("s", [1, 2]);
    let (t, t_table) = absolute_switch("t", [3, 4]);
    let array = ".globl tab\n.type tab,@object\ntab: .quad 7, 8\n.size tab, 16\n";
    let calls = ["s", "t", "end"];
    let build = |test: &str, body: &str| {
        let end = function("end", body);
        let plain = x86_program(
            &format!("{s}{t}{end}.section .rodata\n{array}{s_table}{t_table}"),
            &calls,
        );
        let folded = x86_program(
            &format!("{s}{t}{end}.section .rodata\n{s_table}{array}{t_table}"),
            &calls,
        );
        x86_pair(test, &plain, &folded, &["-no-pie"])
    };
    let (plain, folded) = build(
        "array_end_before_a_table",
        "  mov $tab+16, %eax\n  mov -8(%rax), %rax\n  ret",
    );
    assert_passes(&plain, &folded, Mode::All);
    // Returned, the address may be read on either side (another
    // function's table is data to this code): both must correspond, and
    // the tables do not. Verify cannot prove this correct fold.
    let (plain, folded) = build("array_end_returned", "  mov $tab+16, %eax\n  ret");
    assert_caught(
        &plain,
        &folded,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "end",
    );
}

#[test]
fn a_rip_relative_load_compares_only_the_bytes_it_reads() {
    // `d` adds the double at `.Lc`; the quad after it is nobody's, and
    // differs between the images.
    let program = |value: &str, after: &str| {
        x86_program(
            &(function(
                "d",
                "  cvtsi2sd %edi, %xmm0\n  addsd .Lc(%rip), %xmm0\n  cvttsd2si %xmm0, %eax\n  ret",
            ) + &format!(
                ".section .rodata\n.p2align 3\n.Lc: .double {value}\n  .quad {after}\n"
            )),
            &["d"],
        )
    };
    let dir = work_dir("rip_relative_width");
    let plain = link(&dir, "gcc", "plain.s", &program("1.5", "0x30"), &[]);
    let folded = link(&dir, "gcc", "folded.s", &program("1.5", "0x80"), &[]);
    let wrong = link(&dir, "gcc", "wrong.s", &program("2.5", "0x30"), &[]);
    assert_passes(&plain, &folded, Mode::All);
    assert_caught(&plain, &wrong, Mode::All, DifferenceKind::DataDiffers, "d");
}

#[test]
fn a_load_from_a_fixed_got_slot_is_the_lea_a_linker_relaxes_it_to() {
    // PLAIN keeps its GOT load (`R_X86_64_GOTPCREL`, which lld does not
    // relax); FOLDED has the `lea` a relaxing linker writes once a fold
    // changes the symbol.
    let callee = |name: &str, value: u32| function(name, &format!("  mov ${value}, %eax\n  ret"));
    let program = |load: &str| {
        x86_program(
            &format!(
                "{}{}{}",
                callee("f1", 1),
                callee("f2", 2),
                function("g", &format!("  {load}\n  call *%rax\n  ret"))
            ),
            &["g"],
        )
    };
    let dir = work_dir("got_load_or_lea");
    for flags in [&["-no-pie"][..], &["-pie", "-fPIE"][..]] {
        let mut plain_flags = vec![
            "-Wa,-mrelax-relocations=no",
            "-fuse-ld=lld",
            "-B/usr/lib/llvm-19/bin/",
        ];
        plain_flags.extend_from_slice(flags);
        let plain = link(
            &dir,
            "gcc",
            "plain.s",
            &program("mov f1@GOTPCREL(%rip), %rax"),
            &plain_flags,
        );
        let folded = link(
            &dir,
            "gcc",
            "folded.s",
            &program("lea f1(%rip), %rax"),
            flags,
        );
        let wrong = link(
            &dir,
            "gcc",
            "wrong.s",
            &program("lea f2(%rip), %rax"),
            flags,
        );
        assert_passes(&plain, &folded, Mode::All);
        assert_caught(
            &plain,
            &wrong,
            Mode::All,
            DifferenceKind::InstructionsDiffer,
            "main",
        );
    }
}

#[test]
fn a_got_slot_an_executable_binds_by_name_holds_its_own_definition() {
    // With `-rdynamic`, GNU ld binds the GOT slot of an exported function
    // by name (`R_AARCH64_GLOB_DAT`); FOLDED names the kept copy's alias.
    // An executable's own definition wins the lookup: the slots agree.
    let source = |name: &str| {
        format!(
            ".text\n.globl f1, f2, f3\n.type f1,%function\nf1:\n  mov w0, 1\n  ret\n.size f1, .-f1\n\
             .type f2,%function\n.set f2, f1\n.size f2, 8\n\
             .type f3,%function\nf3:\n  mov w0, 3\n  ret\n.size f3, .-f3\n\
             .type g,%function\ng:\n  adrp x0, :got:{name}\n  ldr x0, [x0, :got_lo12:{name}]\n  br x0\n.size g, .-g\n\
             .globl main\n.type main,%function\nmain:\n  stp x29, x30, [sp, -16]!\n  bl g\n  ldp x29, x30, [sp], 16\n  ret\n.size main, .-main\n\
             .section .note.GNU-stack,\"\",%progbits\n"
        )
    };
    let dir = work_dir("aarch64_named_got");
    let flags = ["-no-pie", "-rdynamic"];
    let cross =
        |name: &str, source: &str| link(&dir, "aarch64-linux-gnu-gcc", name, source, &flags);
    let plain = cross("plain.s", &source("f1"));
    let folded = cross("folded.s", &source("f2"));
    let wrong = cross("wrong.s", &source("f3"));
    assert_passes(&plain, &folded, Mode::All);
    assert_caught(
        &plain,
        &wrong,
        Mode::All,
        DifferenceKind::InstructionsDiffer,
        "g",
    );
}

#[test]
fn an_adr_replacing_an_adrp_for_the_cortex_a53_erratum_is_a_page() {
    // In FOLDED, `f` starts a page: its `adrp` sits in the page's last
    // word with a store after it, the sequence erratum 843419 needs, and
    // GNU ld (which fixes it by default on Debian) writes an `adr` of the
    // page instead. In PLAIN a 4-byte `pad` before `f` moves the `adrp` to
    // the next page's first word, where it stays.
    let f = ".type f,%function\nf:\n  .rept 1022\n  nop\n  .endr\n  sub sp, sp, 16\n  adrp x2, tab\n  str x0, [sp, 8]\n  ldr x0, [x2, :lo12:tab]\n  add sp, sp, 16\n  ret\n.size f, .-f\n";
    let pad = ".type pad,%function\npad:\n  ret\n.size pad, .-pad\n";
    let source = |text: &str| {
        format!(
            ".data\n.p2align 12\n.globl tab\n.type tab,%object\ntab: .quad 5\n.size tab, 8\n\
             .text\n.p2align 12\n{text}\
             .globl main\n.type main,%function\nmain:\n  stp x29, x30, [sp, -16]!\n  bl pad\n  bl f\n  ldp x29, x30, [sp], 16\n  ret\n.size main, .-main\n\
             .section .note.GNU-stack,\"\",%progbits\n"
        )
    };
    let dir = work_dir("aarch64_erratum_adr");
    let flags = ["-no-pie", "-Wl,--fix-cortex-a53-843419"];
    let cross =
        |name: &str, source: &str| link(&dir, "aarch64-linux-gnu-gcc", name, source, &flags);
    let plain = cross("plain.s", &source(&format!("{pad}{f}")));
    let folded = cross("folded.s", &source(&format!("{f}{pad}")));
    assert_passes(&plain, &folded, Mode::All);
}

#[test]
fn a_function_returning_in_memory_reads_one_more_argument_register() {
    // `make` returns 32 bytes through the pointer its caller passes in
    // %rdi, so its one parameter `p` comes in %rsi: passing `tab_b` there
    // lets its address out, and FOLDED, which passes `tab_a`, merges two
    // observed addresses. (Counting only the parameters DWARF lists, %rsi
    // would be unread and the address unobserved.)
    let source = |passed: &str| {
        format!(
            "struct big {{ long a[4]; }};\n\
             const int tab_a[4] = {{1, 2, 3, 4}};\n\
             const int tab_b[4] = {{1, 2, 3, 4}};\n\
             __attribute__((noipa)) struct big make(const int *p) {{\n\
               struct big r = {{{{p == tab_a, p[1], 0, 0}}}};\n\
               return r;\n\
             }}\n\
             __attribute__((noipa)) const int *get_a(void) {{ return tab_a; }}\n\
             int main(void) {{ return (int)make({passed}).a[0] + *get_a(); }}\n"
        )
    };
    let dir = work_dir("memory_return_arguments");
    let flags = ["-O2", "-g", "-fno-pie", "-no-pie"];
    let plain = link(&dir, "gcc", "plain.c", &source("tab_b"), &flags);
    let folded = link(&dir, "gcc", "folded.c", &source("tab_a"), &flags);
    assert_caught(
        &plain,
        &folded,
        Mode::Safe,
        DifferenceKind::SignificantAddressesMerged,
        "get_a",
    );
}

#[test]
fn an_aarch64_argument_register_the_callee_does_not_read_keeps_no_address() {
    // `user` loads through x7 and calls `called`. `callee`'s DWARF
    // prototype reads x0 only: the address in x7 dies at the call,
    // unobserved, so FOLDED may read `tab_a`'s equal bytes instead of
    // `tab_b`'s. `callee8` reads x7 as its eighth parameter: there the
    // address is observed, and merging it with `tab_a`'s is caught. (Equal
    // pads before the tables make what ends where each starts alike.)
    let source = |table: &str, called: &str| {
        format!(
            "const int pad_a[4] = {{9, 9, 9, 9}};\n\
             const int tab_a[4] = {{1, 2, 3, 4}};\n\
             const int pad_b[4] = {{9, 9, 9, 9}};\n\
             const int tab_b[4] = {{1, 2, 3, 4}};\n\
             __attribute__((noipa)) int callee(int x) {{ return x + 1; }}\n\
             __attribute__((noipa)) int callee8(int a, int b, int c, int d, int e, int f, int g,\n\
                                                const int *h) {{ return a + (h == tab_a); }}\n\
             __attribute__((noipa)) const int *get_a(void) {{ return tab_a; }}\n\
             int user(void);\n\
             __asm__(\".text\\n.globl user\\n.type user,%function\\nuser:\\n\
               stp x29, x30, [sp, -16]!\\n  adrp x7, {table}\\n  add x7, x7, :lo12:{table}\\n\
               ldr w0, [x7]\\n  bl {called}\\n  ldp x29, x30, [sp], 16\\n  ret\\n.size user, .-user\\n\");\n\
             int main(void) {{ return user() + *get_a(); }}\n"
        )
    };
    let dir = work_dir("aarch64_unread_argument");
    // (Source order in .rodata, pads before their tables.)
    let flags = ["-O2", "-g", "-no-pie", "-fno-toplevel-reorder"];
    let compiler = "aarch64-linux-gnu-gcc";
    let plain = link(
        &dir,
        compiler,
        "plain.c",
        &source("tab_b", "callee"),
        &flags,
    );
    let folded = link(
        &dir,
        compiler,
        "folded.c",
        &source("tab_a", "callee"),
        &flags,
    );
    assert_passes(&plain, &folded, Mode::Safe);
    let plain = link(
        &dir,
        compiler,
        "plain8.c",
        &source("tab_b", "callee8"),
        &flags,
    );
    let folded = link(
        &dir,
        compiler,
        "folded8.c",
        &source("tab_a", "callee8"),
        &flags,
    );
    assert_caught(
        &plain,
        &folded,
        Mode::Safe,
        DifferenceKind::SignificantAddressesMerged,
        "callee8",
    );
}

#[test]
fn an_aarch64_address_in_x18_dies_at_a_return() {
    // On Linux x18 is a temporary (clang uses it): `user` loads `tab_b`'s
    // address from the GOT into it, reads through it and returns, so the
    // address is never observed and FOLDED may read `tab_a`'s equal bytes.
    let source = |table: &str| {
        format!(
            "const int tab_a[4] = {{1, 2, 3, 4}};\n\
             const int tab_b[4] = {{1, 2, 3, 4}};\n\
             __attribute__((noipa)) const int *get_a(void) {{ return tab_a; }}\n\
             int user(void);\n\
             __asm__(\".text\\n.globl user\\n.type user,%function\\nuser:\\n\
               adrp x18, :got:{table}\\n  ldr x18, [x18, :got_lo12:{table}]\\n\
               ldr w0, [x18, 4]\\n  ret\\n.size user, .-user\\n\");\n\
             int main(void) {{ return user() + *get_a(); }}\n"
        )
    };
    let dir = work_dir("aarch64_x18");
    let flags = ["-O2", "-no-pie"];
    let compiler = "aarch64-linux-gnu-gcc";
    let plain = link(&dir, compiler, "plain.c", &source("tab_b"), &flags);
    let folded = link(&dir, compiler, "folded.c", &source("tab_a"), &flags);
    assert_passes(&plain, &folded, Mode::Safe);
}

/// The exit status of `binary` (an AArch64 one under qemu-aarch64).
fn exit_status(binary: &Path, aarch64: bool) -> i32 {
    let target = if aarch64 {
        icf_fixtures::Arch::Aarch64
    } else {
        icf_fixtures::Arch::X86_64
    };
    let mut command = icf_fixtures::run_command(target, binary);
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("running {}: {e}", binary.display()));
    status.code().expect("the program exits, not killed")
}

/// A program reading `.rodata` (`data`, sized global arrays) through an
/// address at an object boundary: `reader1` and `reader2` form `address`
/// (its `{}` replaced by their number) and load the word `offset` bytes
/// from it, through a register, so no access width is known at the
/// address; `reader2` is an alias of `reader1` when `fold`. `main` exits
/// with `10 * reader1() + reader2()`.
fn boundary_program(aarch64: bool, data: &str, address: &str, offset: i32, fold: bool) -> String {
    let reader = |n: &str| {
        let address = address.replace("{}", n);
        let name = format!("reader{n}");
        if aarch64 {
            format!(
                ".text\n.globl {name}\n.type {name},%function\n{name}:\n  adrp x1, {address}\n  add x1, x1, :lo12:{address}\n  ldur w0, [x1, {offset}]\n  ret\n.L{name}_end:\n.size {name}, .-{name}\n"
            )
        } else {
            function(
                &name,
                &format!(
                    "  lea {address}(%rip), %rax\n  mov {offset}(%rax), %eax\n  ret\n.L{name}_end:"
                ),
            )
        }
    };
    let (kind, main) = if aarch64 {
        (
            "%",
            "  stp x29, x30, [sp, -32]!\n  str x19, [sp, 16]\n  bl reader1\n  mov w19, w0\n  bl reader2\n  mov w1, 10\n  madd w0, w19, w1, w0\n  ldr x19, [sp, 16]\n  ldp x29, x30, [sp], 32\n  ret",
        )
    } else {
        (
            "@",
            "  push %rbx\n  call reader1\n  mov %eax, %ebx\n  call reader2\n  imul $10, %ebx, %ebx\n  add %ebx, %eax\n  pop %rbx\n  ret",
        )
    };
    let second = if fold {
        format!(
            ".globl reader2\n.type reader2,{kind}function\n.set reader2, reader1\n.size reader2, .Lreader1_end-reader1\n"
        )
    } else {
        reader("2")
    };
    format!(
        ".section .rodata\n.p2align 4\n{}{}{second}.text\n.globl main\n.type main,{kind}function\nmain:\n{main}\n.size main, .-main\n\
         .section .note.GNU-stack,\"\",{kind}progbits\n",
        data.replace('@', kind),
        reader("1"),
    )
}

/// A sized global array `name` of four words.
fn array(name: &str, values: &str) -> String {
    format!(".globl {name}\n.type {name},@object\n{name}: .long {values}\n.size {name}, 16\n")
}

/// One case of an address at a boundary of objects: PLAIN's data, the
/// FOLDED data (`reader2` folded onto `reader1`), the address the readers
/// form and the offset they load at.
struct Boundary<'a> {
    plain: String,
    folded: String,
    address: &'a str,
    offset: i32,
}

/// Links `case` for x86-64 (and AArch64 when `aarch64_too`), with and
/// without `-q`, runs PLAIN and FOLDED, and asks verify in both modes:
/// FOLDED must be rejected (on the path through `reader2`) exactly when it
/// behaves differently.
fn assert_boundary_case(test: &str, case: &Boundary<'_>, wrong: bool, aarch64_too: bool) {
    for aarch64 in [false, true] {
        if aarch64 && !aarch64_too {
            continue;
        }
        let compiler = if aarch64 {
            "aarch64-linux-gnu-gcc"
        } else {
            "gcc"
        };
        for q in [false, true] {
            let arch = if aarch64 { "aarch64" } else { "x86_64" };
            let dir = work_dir(&format!("{test}_{arch}{}", if q { "_q" } else { "" }));
            let mut flags = vec!["-no-pie", "-fuse-ld=bfd"];
            if q {
                flags.push("-Wl,-q");
            }
            let source = |data: &str, fold: bool| {
                boundary_program(aarch64, data, case.address, case.offset, fold)
            };
            let plain = link(
                &dir,
                compiler,
                "plain.s",
                &source(&case.plain, false),
                &flags,
            );
            let folded = link(
                &dir,
                compiler,
                "folded.s",
                &source(&case.folded, true),
                &flags,
            );
            let (before, after) = (exit_status(&plain, aarch64), exit_status(&folded, aarch64));
            assert_eq!(
                before != after,
                wrong,
                "{test} {arch}: PLAIN exits {before}, FOLDED {after}"
            );
            for mode in [Mode::Safe, Mode::All] {
                let outcome = check(&plain, &folded, mode);
                match outcome.difference {
                    Some(difference) if wrong => {
                        assert!(difference.to_string().contains("reader2"), "{difference}")
                    }
                    None if !wrong => {}
                    _ => panic!(
                        "{test} {arch} (-q: {q}, {mode:?}): expected {}:\n{outcome}",
                        if wrong { "a rejection" } else { "a pass" }
                    ),
                }
            }
        }
    }
}

#[test]
fn an_end_read_as_the_start_of_equal_bytes_is_caught() {
    // reader{n} reads the last word of A{n} through one past its end. In
    // PLAIN, A2's end is B1's start; in FOLDED, A1's end is X's start, and
    // X holds B1's bytes (and A2's, so reader1 still verifies). Reading
    // both addresses as starts would prove the pair; the code reads the
    // words before them, 4 and 8 (M2-1's one-past-the-end case, which
    // milestone 1's icf folded and verify passed).
    let case = Boundary {
        plain: array("A1", "1, 2, 3, 4") + &array("A2", "5, 6, 7, 8") + &array("B1", "5, 6, 7, 8"),
        folded: array("A1", "1, 2, 3, 4")
            + &array("X", "5, 6, 7, 8")
            + &array("A2", "5, 6, 7, 8")
            + &array("B1", "5, 6, 7, 8"),
        address: "A{}+16",
        offset: -4,
    };
    assert_boundary_case("end_as_start", &case, true, true);
}

#[test]
fn a_start_read_as_the_end_of_equal_bytes_is_caught() {
    // The mirror: reader{n} reads the first word of Q{n}, which starts
    // where P{n} ends; P1 and P2 are equal, Q1 and Q2 are not.
    let data = array("P1", "1, 2, 3, 4")
        + &array("Q1", "9, 9, 9, 9")
        + &array("P2", "1, 2, 3, 4")
        + &array("Q2", "5, 6, 7, 8");
    let case = Boundary {
        plain: data.clone(),
        folded: data,
        address: "Q{}",
        offset: 0,
    };
    assert_boundary_case("start_as_end", &case, true, true);
}

#[test]
fn a_boundary_with_equal_bytes_on_both_sides_verifies() {
    // Both readings agree: the fold is correct whichever side is read.
    // (x86-64 only: on AArch64 verify counts an `adrp`+`add` address as
    // observed, so merging A2 into A1 is rejected there for that reason.)
    let data = array("A1", "1, 2, 3, 4")
        + &array("B1", "9, 9, 9, 9")
        + &array("A2", "1, 2, 3, 4")
        + &array("B2", "9, 9, 9, 9");
    for (test, address, offset) in [("boundary_end", "A{}+16", -4), ("boundary_start", "B{}", 0)] {
        let case = Boundary {
            plain: data.clone(),
            folded: data.clone(),
            address,
            offset,
        };
        assert_boundary_case(test, &case, false, false);
    }
}

/// A function that takes the address of bytes it embeds and never reads
/// it (gcc -Os drops the read): only its DWARF prototype (one register
/// returned) says that `rdx` is dead at the return, so the bytes are data
/// and not code entered there. A copy of the same program without its
/// DWARF (as a post-link shrinker may write) proves equal: FOLDED's
/// prototypes are PLAIN's, carried over by symbol.
#[test]
fn a_folded_image_without_dwarf_is_proved_with_the_prototypes_of_plain() {
    let source = r#"
#include <stdio.h>
__attribute__((noinline)) long embeds(long a, long b) {
  long v;
  __asm__ volatile("lea 1f(%%rip), %0\n\tjmp 2f\n1:\t.long 3\n2:" : "=r"(v));
  return (long)*(const int *)v * 0 + a - b;
}
int main(int argc, char **argv) {
  (void)argv;
  printf("%ld\n", embeds(argc, 2));
  return 0;
}
"#;
    let dir = work_dir("folded_without_dwarf");
    let plain = link(&dir, "gcc", "plain.c", source, &["-Os", "-g"]);
    let stripped = dir.join("stripped");
    run(
        "objcopy",
        &[
            "--strip-debug",
            plain.to_str().expect("utf-8 path"),
            stripped.to_str().expect("utf-8 path"),
        ],
    );
    assert_passes(&plain, &stripped, Mode::Safe);
    assert_passes(&plain, &stripped, Mode::All);
}

/// Two units, each with a local array and a function returning its
/// address, linked in both orders with `-q` and a map: in PLAIN
/// (`a.o b.o`) `b`'s array starts where `a`'s ends, so `b`'s reference is
/// also one past `a`'s array; in FOLDED (`b.o a.o`, nothing folded) it is
/// not. The reference is a section-symbol relocation of `b.o`, which
/// cannot name `a.o`'s array: with PLAIN's map the start is the only
/// reading and the link verifies; without it both readings must hold, and
/// the end does not.
#[test]
fn a_link_map_says_which_file_s_object_a_section_symbol_names() {
    let dir = work_dir("link_map_sides");
    let unit = |name: &str, index: u32| {
        let source = format!(
            "static int {name}_array[4] = {{ {index}, 2, 3, 4 }};\n\
             int *{name}_address(void) {{ return {name}_array; }}\n\
             int {name}_first(void) {{ return {name}_array[0]; }}\n"
        );
        let path = dir.join(format!("{name}.c"));
        std::fs::write(&path, source).expect("writing a unit");
        let object = dir.join(format!("{name}.o"));
        run(
            "gcc",
            &[
                "-O2",
                "-fdata-sections",
                "-ffunction-sections",
                "-c",
                path.to_str().expect("utf-8"),
                "-o",
                object.to_str().expect("utf-8"),
            ],
        );
        object
    };
    let (a, b) = (unit("a", 1), unit("b", 5));
    let main = dir.join("main.c");
    std::fs::write(
        &main,
        "#include <stdio.h>\n\
         int *a_address(void); int *b_address(void);\n\
         int a_first(void); int b_first(void);\n\
         int main(void) { printf(\"%d %d %d\\n\", a_first(), b_first(), *b_address() + *a_address()); return 0; }\n",
    )
    .expect("writing main");
    let linked = |name: &str, order: [&PathBuf; 2]| {
        let output = dir.join(name);
        let map = dir.join(format!("{name}.map"));
        run(
            "gcc",
            &[
                "-O2",
                LLD[0],
                LLD[1],
                "-Wl,-q",
                &format!("-Wl,-Map={}", map.display()),
                main.to_str().expect("utf-8"),
                order[0].to_str().expect("utf-8"),
                order[1].to_str().expect("utf-8"),
                "-o",
                output.to_str().expect("utf-8"),
            ],
        );
        (output, map)
    };
    let (plain, plain_map) = linked("plain", [&a, &b]);
    let (folded, folded_map) = linked("folded", [&b, &a]);
    let without = verify(
        &plain,
        &folded,
        &VerifyOptions {
            mode: Mode::Safe,
            ..VerifyOptions::default()
        },
    )
    .expect("valid inputs");
    assert!(
        !without.passed() && without.to_string().contains("b_address"),
        "without a map, the end of a_array must also be checked:\n{without}"
    );
    let with = verify(
        &plain,
        &folded,
        &VerifyOptions {
            mode: Mode::Safe,
            plain_map: Some(plain_map.clone()),
            ..VerifyOptions::default()
        },
    )
    .expect("valid inputs");
    assert!(with.passed(), "{with}");
    // Both maps: the locals are named by their files too.
    let both = verify(
        &plain,
        &folded,
        &VerifyOptions {
            mode: Mode::Safe,
            plain_map: Some(plain_map),
            folded_map: Some(folded_map),
            ..VerifyOptions::default()
        },
    )
    .expect("valid inputs");
    assert!(both.passed(), "{both}");
}

/// Compiles `sources` (name, text) in `dir` to objects with `flags`, then
/// links each named object list with main.c by GNU ld with `-q` and a
/// map: (image, map) per link.
fn objects_and_links(
    dir: &Path,
    sources: &[(&str, &str)],
    flags: &[&str],
    main: &str,
    links: &[(&str, &[&str])],
) -> Vec<(PathBuf, PathBuf)> {
    for (name, text) in sources {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("writing a source");
        let object = path.with_extension("o");
        let mut args = flags.to_vec();
        args.extend(["-c", path.to_str().expect("utf-8"), "-o"]);
        args.push(object.to_str().expect("utf-8"));
        run("gcc", &args);
    }
    let main_path = dir.join("main.c");
    std::fs::write(&main_path, main).expect("writing main");
    links
        .iter()
        .map(|(name, objects)| {
            let output = dir.join(name);
            let map = dir.join(format!("{name}.map"));
            let map_flag = format!("-Wl,-Map={}", map.display());
            let mut args = vec![
                "-O2",
                "-Wl,-q",
                &map_flag,
                main_path.to_str().expect("utf-8"),
            ];
            let objects: Vec<String> = objects
                .iter()
                .map(|o| dir.join(o).display().to_string())
                .collect();
            args.extend(objects.iter().map(String::as_str));
            args.extend(["-o", output.to_str().expect("utf-8")]);
            run("gcc", &args);
            (output, map)
        })
        .collect()
}

/// FOLDED proves against PLAIN with PLAIN's map while `dir/p.o`, the
/// input object the map names, is there; moved away, the map alone cannot
/// settle the boundary, both readings must hold, and the failure names
/// one of `functions`.
fn settled_by_its_object(dir: &Path, plain: &Path, folded: &Path, map: &Path, functions: &[&str]) {
    let settled = verify(plain, folded, &with_plain_map(map)).expect("valid inputs");
    assert!(settled.passed(), "{settled}");
    std::fs::rename(dir.join("p.o"), dir.join("p.o.moved")).expect("moving p.o");
    let unsettled = verify(plain, folded, &with_plain_map(map)).expect("valid inputs");
    let said = unsettled.to_string();
    assert!(
        !unsettled.passed() && functions.iter().any(|f| said.contains(f)),
        "without p.o both readings must hold:\n{unsettled}"
    );
}

/// FOLDED proves against PLAIN with both links' maps, and not without
/// them (the failure naming `function`, when not empty).
fn proved_only_with_maps(plain: &Path, folded: &Path, maps: (PathBuf, PathBuf), function: &str) {
    let options = VerifyOptions {
        mode: Mode::Safe,
        plain_map: Some(maps.0),
        folded_map: Some(maps.1),
        ..VerifyOptions::default()
    };
    let settled = verify(plain, folded, &options).expect("valid inputs");
    assert!(settled.passed(), "{settled}");
    let unsettled = verify(plain, folded, &VerifyOptions::default()).expect("valid inputs");
    assert!(
        !unsettled.passed() && unsettled.to_string().contains(function),
        "without the maps it must not prove:\n{unsettled}"
    );
}

fn with_plain_map(map: &Path) -> VerifyOptions {
    VerifyOptions {
        mode: Mode::Safe,
        plain_map: Some(map.to_path_buf()),
        ..VerifyOptions::default()
    }
}

/// One object holds two static arrays side by side, so the map cannot
/// say which of them a section-symbol field at their boundary names; the
/// object's own relocation can: `y_start` names y's section at 0,
/// `x_end` x's section at its size. FOLDED's object defines them in the
/// other order, so each reading of the boundary fails the other field.
#[test]
fn an_input_object_says_which_section_a_boundary_field_names() {
    let dir = work_dir("input_object_sides");
    let plain_source = "static const int x[4] = { 1, 2, 3, 4 };\n\
             static const int y[4] = { 5, 6, 7, 8 };\n\
             static const int z[4] = { 9, 10, 11, 12 };\n\
             const int *use_z(void) { return z; }\n\
             const int *y_start(void) { return y; }\n\
             const int *x_end(void) { return x + 4; }\n";
    // Defined x, y, z in PLAIN's object; y's section comes first in
    // FOLDED's (the definitions' order, kept by -fno-toplevel-reorder).
    let folded_source = plain_source
        .replace("static const int x[4] = { 1, 2, 3, 4 };\n", "")
        .replace(
            "static const int z[4]",
            "static const int x[4] = { 1, 2, 3, 4 };\nstatic const int z[4]",
        );
    let links = objects_and_links(
        &dir,
        &[("p.c", plain_source), ("f.c", &folded_source)],
        &[
            "-O2",
            "-fdata-sections",
            "-ffunction-sections",
            "-fno-toplevel-reorder",
        ],
        "#include <stdio.h>\n\
         const int *y_start(void); const int *x_end(void);\n\
         int main(void) { printf(\"%d %d\\n\", *y_start(), x_end()[-1]); return 0; }\n",
        &[("plain", &["p.o"]), ("folded", &["f.o"])],
    );
    let [(plain, plain_map), (folded, _)] = &links[..] else {
        panic!("two links");
    };
    settled_by_its_object(&dir, plain, folded, plain_map, &["y_start", "x_end"]);
}

/// GNU ld merges `.rodata.str1.1` into `.rodata` and drops its strings
/// flag, so text read up to a NUL might be an array read past it; the
/// code's own relocation (with PLAIN's map and object) names a string of
/// a mergeable-strings section, which ends at its NUL. Here FOLDED lays
/// the same string out one byte later, so the unread constant after it
/// starts at another distance (LLVM's opt_lite for AArch64, GNU ld:
/// `SampleProfileReaderGCC::readHeader`'s "gcda").
#[test]
fn a_string_a_relocation_names_in_merged_strings_ends_at_its_nul() {
    let dir = work_dir("merged_string_nul");
    let unit = |before: &str| {
        format!(
            ".section .rodata.str1.1,\"aMS\",@progbits,1\n\
             .Lbefore: .asciz \"{before}\"\n.Lgreet: .asciz \"greet\"\n\
             .section .rodata\n.balign 8\n.quad 0x4c4c4c4c4c4c4c4c\n\
             .text\n.globl greet\n.type greet, @function\n\
             greet:\n  leaq .Lgreet(%rip), %rax\n  ret\n.size greet, .-greet\n\
             .section .note.GNU-stack,\"\",@progbits\n"
        )
    };
    let links = objects_and_links(
        &dir,
        &[("p.s", &unit("x")), ("f.s", &unit("xy"))],
        &[],
        "#include <stdio.h>\n\
         const char *greet(void);\n\
         int main(void) { puts(greet()); return 0; }\n",
        &[("plain", &["p.o"]), ("folded", &["f.o"])],
    );
    let [(plain, plain_map), (folded, folded_map)] = &links[..] else {
        panic!("two links");
    };
    proved_only_with_maps(
        plain,
        folded,
        (plain_map.clone(), folded_map.clone()),
        "greet",
    );
}

/// A reference to an unnamed constant in a mergeable section is resolved
/// by the linker to the piece holding it, placed on its own: the bytes
/// before it (here a named constant that differs) are no part of it.
/// (x and w stay in the images: nothing but `-q` keeps the section.)
#[test]
fn a_piece_of_a_mergeable_section_is_read_from_its_start() {
    let dir = work_dir("input_object_merge");
    // A named constant before the piece, of other names and contents.
    let unit = |name: &str, value: &str| {
        format!(
            ".section .rodata.cst8,\"aM\",@progbits,8\n\
             .type {name}, @object\n.size {name}, 8\n{name}: .quad {value}\n\
             .Lb: .quad 0x2222\n\
             .text\n.globl get_b\n.type get_b, @function\n\
             get_b: lea .Lb(%rip), %rax\n ret\n.size get_b, .-get_b\n"
        )
    };
    let links = objects_and_links(
        &dir,
        &[("p.s", &unit("x", "0x1111")), ("f.s", &unit("w", "0x3333"))],
        &[],
        "#include <stdio.h>\n\
         long *get_b(void);\n\
         int main(void) { printf(\"%ld\\n\", *get_b()); return 0; }\n",
        &[("plain", &["p.o"]), ("folded", &["f.o"])],
    );
    let [(plain, plain_map), (folded, _)] = &links[..] else {
        panic!("two links");
    };
    settled_by_its_object(&dir, plain, folded, plain_map, &["get_b"]);
}

/// Assembles `units` (name, assembly) in `dir/name/` (the same file names
/// in every link, as `icf link` hands the linker its rewritten copies) and
/// links them with `main` by gcc and `flags`, writing a map: the image
/// and its map.
fn assembled_link(
    dir: &Path,
    name: &str,
    units: &[(&str, String)],
    main: &Path,
    flags: &[&str],
) -> (PathBuf, PathBuf) {
    let sub = dir.join(name);
    std::fs::create_dir_all(&sub).expect("a directory per link");
    let mut objects = Vec::new();
    for (file, text) in units {
        let source = sub.join(format!("{file}.s"));
        std::fs::write(&source, text).expect("writing a unit");
        let object = sub.join(format!("{file}.o"));
        run(
            "gcc",
            &[
                "-c",
                source.to_str().expect("utf-8"),
                "-o",
                object.to_str().expect("utf-8"),
            ],
        );
        objects.push(object.display().to_string());
    }
    let output = sub.join("a.out");
    let map = dir.join(format!("{name}.map"));
    let map_flag = format!("-Wl,-Map={}", map.display());
    let mut args: Vec<&str> = flags.to_vec();
    args.extend([map_flag.as_str(), main.to_str().expect("utf-8")]);
    args.extend(objects.iter().map(String::as_str));
    args.extend(["-o", output.to_str().expect("utf-8")]);
    run("gcc", &args);
    (output, map)
}

/// A zero-sized object (here `nop`, as Rust's unit statics are) holds no
/// byte: a pointer to it reads nothing, whatever follows it in either
/// image. The image keeps no symbol for it; without `-q` only the input
/// object (its relocation names the empty section) and both maps (the
/// same file's empty section at each target) say what the address is.
#[test]
fn a_zero_sized_object_is_only_its_address() {
    let dir = work_dir("input_object_empty");
    // What follows nop: of other names and contents in each link.
    let unit = |after: &str, value: &str| {
        format!(
            ".section .rodata.nop,\"a\"\n.type nop, @object\n.size nop, 0\nnop:\n\
             .section .rodata.after,\"a\"\n.type {after}, @object\n.size {after}, 8\n\
             {after}: .quad {value}\n\
             .text\n.globl get_nop\n.type get_nop, @function\n\
             get_nop: lea nop(%rip), %rax\n ret\n.size get_nop, .-get_nop\n"
        )
    };
    let main = dir.join("main.c");
    std::fs::write(
        &main,
        "#include <stdio.h>\nconst void *get_nop(void);\n\
         int main(void) { printf(\"%d\\n\", get_nop() != 0); return 0; }\n",
    )
    .expect("writing main");
    // The same file name in both links, as `icf link` hands the linker
    // its rewritten copies of the inputs.
    let link = |name: &str, after: &str, value: &str| {
        assembled_link(&dir, name, &[("u", unit(after, value))], &main, &[])
    };
    let (plain, plain_map) = link("plain", "x", "0x1111");
    let (folded, folded_map) = link("folded", "w", "0x3333");
    proved_only_with_maps(&plain, &folded, (plain_map, folded_map), "get_nop");
}

/// An inline function of hidden visibility (`-fvisibility-inlines-hidden`,
/// as Debian builds LLVM) is local in the image, so only its input
/// object's COMDAT group says it is one function in every unit. Each
/// link keeps another unit's copy, which names that unit's internal
/// constant: with `--assume-odr` (and the map to find the objects) that
/// is the same entity, as for a weak inline function.
#[test]
fn a_hidden_inline_function_is_vague_linkage_by_its_comdat_group() {
    let dir = work_dir("input_object_comdat");
    let header = "static const int k = 7;\n\
                  __attribute__((visibility(\"hidden\"), noinline)) inline const int *f() { return &k; }\n";
    std::fs::write(dir.join("h.h"), header).expect("writing h.h");
    for unit in ["a", "b"] {
        let source = dir.join(format!("{unit}.cpp"));
        std::fs::write(
            &source,
            format!(
                "#include \"h.h\"\nconst int *g{unit}() {{ return &k; }}\n\
                 const int *f{unit}() {{ return f(); }}\n"
            ),
        )
        .expect("writing a unit");
        let object = dir.join(format!("{unit}.o"));
        run(
            "g++",
            &[
                "-O2",
                "-ffunction-sections",
                "-fdata-sections",
                "-c",
                source.to_str().expect("utf-8"),
                "-o",
                object.to_str().expect("utf-8"),
            ],
        );
    }
    let main = dir.join("main.cpp");
    std::fs::write(
        &main,
        "#include <cstdio>\nconst int *ga(); const int *gb(); const int *fa();\n\
         int main() { std::printf(\"%d %d %d\\n\", *ga(), *gb(), *fa()); }\n",
    )
    .expect("writing main");
    let link = |name: &str, order: [&str; 2]| {
        let output = dir.join(name);
        let map = dir.join(format!("{name}.map"));
        let objects = order.map(|unit| dir.join(format!("{unit}.o")).display().to_string());
        run(
            "g++",
            &[
                "-Wl,-q",
                &format!("-Wl,-Map={}", map.display()),
                main.to_str().expect("utf-8"),
                &objects[0],
                &objects[1],
                "-o",
                output.to_str().expect("utf-8"),
            ],
        );
        (output, map)
    };
    let (plain, plain_map) = link("plain", ["a", "b"]);
    let (folded, folded_map) = link("folded", ["b", "a"]);
    let options = |assume_odr: bool, maps: bool| VerifyOptions {
        mode: Mode::Safe,
        assume_odr,
        plain_map: maps.then(|| plain_map.clone()),
        folded_map: maps.then(|| folded_map.clone()),
    };
    let proved = verify(&plain, &folded, &options(true, true)).expect("valid inputs");
    assert!(proved.passed(), "{proved}");
    for (assume_odr, maps) in [(false, true), (true, false)] {
        let outcome = verify(&plain, &folded, &options(assume_odr, maps)).expect("valid inputs");
        assert!(
            !outcome.passed(),
            "k of one unit stands for k of the other only by the rule and with the map \
             (assume_odr {assume_odr}, maps {maps}):\n{outcome}"
        );
    }
}

/// LLVM gives a function whose body is unreachable (`llvm_unreachable` in
/// a release build) an empty section: calling it runs into whatever the
/// linker placed next, which no program can depend on. A pointer to it,
/// from its own object and from another (then through its global name),
/// is its address only, once both maps and the objects say it is that
/// empty section in each image.
#[test]
fn an_empty_function_is_only_its_address() {
    let dir = work_dir("input_object_empty_function");
    let unit = |after: &str, body: &str| {
        format!(
            ".section .text.e,\"ax\",@progbits\n.globl e\n.type e, @function\ne:\n.size e, 0\n\
             .section .text.{after},\"ax\",@progbits\n.globl {after}\n.type {after}, @function\n\
             {after}: {body}\n.size {after}, .-{after}\n\
             .section .data.rel.ro.own,\"aw\"\n.globl own\nown: .quad e\n"
        )
    };
    let table = ".section .data.rel.ro.tab,\"aw\"\n.globl tab\ntab: .quad e\n";
    let main = dir.join("main.c");
    std::fs::write(
        &main,
        "#include <stdio.h>\nextern void *tab[], *own[];\n\
         int main(void) { printf(\"%d\\n\", tab[0] == own[0]); return 0; }\n",
    )
    .expect("writing main");
    let link = |name: &str, after: &str, body: &str| {
        let units = [("u", unit(after, body)), ("v", table.to_owned())];
        assembled_link(&dir, name, &units, &main, &["-no-pie", "-Wl,-q"])
    };
    let (plain, plain_map) = link("plain", "after_p", "ret");
    let (folded, folded_map) = link("folded", "after_f", "mov $1, %eax\n ret");
    proved_only_with_maps(&plain, &folded, (plain_map, folded_map), "");
}
