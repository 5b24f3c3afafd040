//! `icf verify` on linked Mach-O executables (x86_64 and arm64, as
//! ld64.lld-19 writes them with dyld info opcodes and with chained
//! fixups): the folds `icf link` makes are proved, a wrong fold (a
//! function made an alias of one that is not identical, with ld64's
//! `-alias`) is caught and named, and bad images give errors that name
//! the file and the offset. The fold fixtures' own pairs are verified in
//! `macho.rs`; here a program calls functions of another module through
//! stubs (`-undefined dynamic_lookup`) and holds a pointer one binds.

use icf_emu::build::{self, Platform};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Twins that call through stubs, one that calls another import with the
/// same code, one that adds another constant, and a pointer in data the
/// loader binds to an import. `-DWRONG_C` / `-DWRONG_D` rename `call_c` /
/// `call_d`'s definition, so a link can make `call_c` / `call_d` an alias
/// of `call_a` instead (a wrong fold).
const PROGRAM: &str = r#"
extern int ext_value(int);
extern int ext_other(int);
extern void ext_fail(void) __attribute__((noreturn));
int call_c(int x);
int call_d(int x);
int (*volatile ext_pointer)(int) = ext_value;
__attribute__((noinline)) int call_a(int x) { return ext_value(x) + 1; }
__attribute__((noinline)) int call_a_twin(int x) { return ext_value(x) + 1; }
#ifdef WRONG_C
#define call_c call_c_unused
#endif
__attribute__((noinline)) int call_c(int x) { return ext_other(x) + 1; }
#ifdef WRONG_D
#define call_d call_d_unused
#endif
__attribute__((noinline)) int call_d(int x) { return ext_value(x) + 3; }
#undef call_c
#undef call_d
__attribute__((noinline)) int check(int x) { if (x < 0) ext_fail(); return x; }
int main(void) {
    return check(call_a(1) + call_a_twin(2) + call_c(3) + call_d(4) + ext_pointer(5));
}
"#;

/// How the image's fixups are encoded.
const FIXUPS: [(&str, &[&str]); 2] = [("opcodes", &[]), ("chained", &["-fixup_chains"])];

fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"))
}

/// Compiles `PROGRAM` for `platform` into `dir` with `defines`.
fn compile(dir: &Path, platform: Platform, name: &str, defines: &[&str]) -> PathBuf {
    let source = dir.join(format!("{name}.c"));
    std::fs::write(&source, PROGRAM)
        .unwrap_or_else(|e| panic!("writing {}: {e}", source.display()));
    let mut flags = vec!["-O2"];
    flags.extend_from_slice(defines);
    build::compile(&source, platform, dir, &flags)
}

/// Links `object` into `output` with `-dead_strip`, imports left to the
/// loader, and `extra`; through `icf link --mode mode` when given.
fn link(platform: Platform, object: &Path, output: &Path, mode: Option<&str>, extra: &[&str]) {
    let mut args = vec!["-dead_strip", "-undefined", "dynamic_lookup"];
    args.extend_from_slice(extra);
    let plain = build::link_command(platform, &[object.to_owned()], output, &args);
    let mut command = match mode {
        None => plain,
        Some(mode) => {
            let mut command = Command::new(env!("CARGO_BIN_EXE_icf"));
            command.args(["link", "--strict", "--mode", mode, "--"]);
            command.arg(plain.get_program()).args(plain.get_args());
            command
        }
    };
    let result = run(&mut command);
    assert!(
        result.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
}

/// `icf verify [--mode all] plain folded`.
fn verify(plain: &Path, folded: &Path, mode: &str) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_icf"))
        .args(["verify", "--mode", mode])
        .arg(plain)
        .arg(folded))
}

#[test]
fn icf_verify_proves_macho_folds_through_stubs_and_binds() {
    for platform in [Platform::MachoArm64, Platform::MachoX86_64] {
        let dir = build::scratch_dir(&format!("macho-verify-{}", platform.label()));
        let object = compile(&dir, platform, "imports", &[]);
        for (encoding, extra) in FIXUPS {
            let plain = dir.join(format!("plain-{encoding}"));
            link(platform, &object, &plain, None, extra);
            for mode in ["safe", "all"] {
                let folded = dir.join(format!("folded-{mode}-{encoding}"));
                link(platform, &object, &folded, Some(mode), extra);
                let output = verify(&plain, &folded, mode);
                let stdout = String::from_utf8_lossy(&output.stdout);
                assert!(
                    output.status.success(),
                    "{} {encoding} {mode}: {stdout}{}",
                    platform.label(),
                    String::from_utf8_lossy(&output.stderr)
                );
                // call_a_twin is a thunk (safe) or an alias (all) of call_a.
                let followed = match mode {
                    "safe" => "1 thunks followed",
                    _ => "1 aliases",
                };
                assert!(
                    stdout.contains(followed),
                    "{} {encoding} {mode}: {stdout}",
                    platform.label()
                );
            }
        }
    }
}

/// Twins with cleanups: each has an LSDA, listed in `__unwind_info`,
/// whose landing pads the walk enters code at.
const CLEANUPS: &str = r#"
extern void may_throw(int);
extern void release(int *);
static void cleanup(int *p) { release(p); }
__attribute__((noinline)) int guarded(int x) {
    int v __attribute__((cleanup(cleanup))) = x; may_throw(x); return v + 1;
}
__attribute__((noinline)) int guarded_twin(int x) {
    int v __attribute__((cleanup(cleanup))) = x; may_throw(x); return v + 1;
}
int main(void) { return guarded(1) + guarded_twin(2); }
"#;

#[test]
fn icf_verify_reads_macho_unwind_info_with_landing_pads() {
    for platform in [Platform::MachoArm64, Platform::MachoX86_64] {
        let dir = build::scratch_dir(&format!("macho-verify-eh-{}", platform.label()));
        let source = dir.join("cleanups.c");
        std::fs::write(&source, CLEANUPS).expect("writing the source");
        let object = build::compile(&source, platform, &dir, &["-O2", "-fexceptions"]);
        let plain = dir.join("plain");
        link(platform, &object, &plain, None, &[]);
        for mode in ["safe", "all"] {
            let folded = dir.join(format!("folded-{mode}"));
            link(platform, &object, &folded, Some(mode), &[]);
            let output = verify(&plain, &folded, mode);
            assert!(
                output.status.success(),
                "{} {mode}: {}{}",
                platform.label(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

#[test]
fn icf_verify_names_the_function_a_wrong_macho_fold_broke() {
    // (define, function made an alias of call_a, what tells them apart)
    let wrong = [
        (
            "-DWRONG_C",
            "call_c",
            "entries binding different symbols (ext_other vs ext_value)",
        ),
        ("-DWRONG_D", "call_d", "instructions differ"),
    ];
    for platform in [Platform::MachoArm64, Platform::MachoX86_64] {
        let dir = build::scratch_dir(&format!("macho-verify-wrong-{}", platform.label()));
        let object = compile(&dir, platform, "imports", &[]);
        for (encoding, extra) in FIXUPS {
            let plain = dir.join(format!("plain-{encoding}"));
            link(platform, &object, &plain, None, extra);
            for (define, function, why) in wrong {
                let name = format!("wrong-{function}");
                let wrong_object = compile(&dir, platform, &name, &[define]);
                let folded = dir.join(format!("{name}-{encoding}"));
                let mut args = extra.to_vec();
                args.extend(["-alias", "_call_a"]);
                let alias = format!("_{function}");
                args.push(&alias);
                link(platform, &wrong_object, &folded, None, &args);
                for mode in ["safe", "all"] {
                    let output = verify(&plain, &folded, mode);
                    let stdout = String::from_utf8_lossy(&output.stdout);
                    let context = format!(
                        "{} {encoding} {function} {mode}: {stdout}",
                        platform.label()
                    );
                    assert_eq!(output.status.code(), Some(1), "{context}");
                    assert!(
                        stdout.starts_with(&format!("{function} differs:")),
                        "{context}"
                    );
                    assert!(stdout.contains(why), "{context}");
                }
            }
        }
    }
}

#[test]
fn bad_macho_images_give_errors_that_name_the_file_and_offset() {
    for platform in [Platform::MachoArm64, Platform::MachoX86_64] {
        let dir = build::scratch_dir(&format!("macho-verify-bad-{}", platform.label()));
        let object = compile(&dir, platform, "imports", &[]);
        let plain = dir.join("plain");
        link(platform, &object, &plain, None, &[]);
        let data = std::fs::read(&plain).expect("the plain image");
        let options = icf_verify::VerifyOptions::default();
        let bad = dir.join("bad");
        let check = |bytes: &[u8], must_fail: bool| {
            std::fs::write(&bad, bytes).expect("writing the bad image");
            match icf_verify::verify(&plain, &bad, &options) {
                Err(error) => {
                    assert_eq!(error.path, bad, "{error}");
                    assert!(error.message.starts_with("at offset 0x"), "{error}");
                }
                Ok(outcome) => assert!(!must_fail, "{} bytes: {outcome:?}", bytes.len()),
            }
        };
        // The header, the load commands, the segments' contents, the
        // symbol table: each cut short.
        for len in [8, 40, 200, data.len() / 2] {
            check(&data[..len], true);
        }
        // Every other length: an error or an outcome, never a panic.
        for len in (4..data.len()).step_by(97) {
            check(&data[..len], false);
        }
        // Every byte of the header (past the magic) and load commands, and a stride through
        // the rest, set to 0xff: an error or an outcome, never a panic.
        let commands_end =
            32 + u32::from_le_bytes(data[20..24].try_into().expect("4 bytes")) as usize;
        for at in (4..commands_end).chain((commands_end..data.len()).step_by(61)) {
            let mut flipped = data.clone();
            flipped[at] = 0xff;
            std::fs::write(&bad, &flipped).expect("writing the bad image");
            if let Err(error) = icf_verify::verify(&plain, &bad, &options) {
                assert!(
                    error.message.starts_with("at offset 0x"),
                    "byte {at:#x}: {error}"
                );
            }
        }
        // A symbol naming a section that does not exist.
        let mut renumbered = data.clone();
        let at = first_symbol_offset(&data);
        renumbered[at + 5] = 0x7f;
        std::fs::write(&bad, &renumbered).expect("writing the bad image");
        let error = icf_verify::verify(&plain, &bad, &options).expect_err("a bad n_sect");
        assert!(
            error
                .message
                .starts_with(&format!("at offset {at:#x}: symbol "))
                && error
                    .message
                    .contains("names section 127, which does not exist"),
            "{error}"
        );
    }
}

/// The file offset of the first defined symbol of a Mach-O image's
/// `LC_SYMTAB` (its `n_type` has `N_SECT`).
fn first_symbol_offset(data: &[u8]) -> usize {
    let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"));
    let ncmds = u32_at(16);
    let mut at = 32;
    for _ in 0..ncmds {
        let (cmd, size) = (u32_at(at), u32_at(at + 4) as usize);
        if cmd == 2 {
            let (symoff, nsyms) = (u32_at(at + 8) as usize, u32_at(at + 12) as usize);
            return (0..nsyms)
                .map(|i| symoff + i * 16)
                .find(|&entry| data[entry + 4] & 0x0e == 0x0e)
                .expect("a defined symbol");
        }
        at += size;
    }
    panic!("no LC_SYMTAB")
}
