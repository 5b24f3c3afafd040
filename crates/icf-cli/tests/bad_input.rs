//! `icf dump` on broken inputs: every one must be a clean, located error.
//!
//! Each test takes a valid x86-64 object built from `fixtures/c/calls.c`,
//! copies it into its own scratch directory, breaks one thing (a header byte,
//! a relocation, an archive member header...) and runs the real `icf` binary
//! on it. A clean error means:
//!
//! - exit status 1, never a panic (exit code 101, "panicked" on stderr) or a
//!   signal, and nothing on stdout;
//! - stderr starts with `icf: error: ` and names the file (and the archive
//!   member, section and offset where they apply) with a message that says
//!   what is wrong;
//! - the input file is byte-for-byte unchanged.
//!
//! The cached fixture object is never modified; only the copies are.

use object::LittleEndian as LE;
use object::elf;
use object::read::elf::{FileHeader as _, SectionHeader as _};
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

// ---------------------------------------------------------------------------
// Helpers

/// Runs the built `icf` binary with `args`.
fn run_icf<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icf"))
        .args(args)
        .output()
        .expect("running the icf binary")
}

/// Asserts that `output` is a clean failure: exit status 1 without a panic,
/// nothing on stdout, and stderr starting with `icf: error: ` and containing
/// each of `expected`.
fn assert_clean_error(output: &Output, expected: &[&str]) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let shown = format!(
        "status: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    let code = output.status.code();
    assert!(code.is_some(), "icf was killed by a signal\n{shown}");
    assert!(
        code != Some(101) && !stderr.contains("panicked"),
        "icf panicked\n{shown}"
    );
    assert_eq!(code, Some(1), "expected exit status 1\n{shown}");
    assert!(stdout.is_empty(), "expected no output on stdout\n{shown}");
    assert!(
        stderr.starts_with("icf: error: "),
        "stderr does not start with `icf: error: `\n{shown}"
    );
    for want in expected {
        assert!(stderr.contains(want), "stderr lacks {want:?}\n{shown}");
    }
}

/// Runs `icf dump path`, asserts a clean error naming `path` and containing
/// each of `expected`, and that `path` was not modified. Returns stderr.
fn assert_dump_fails(path: &Path, expected: &[&str]) -> String {
    let before = fs::read(path).ok();
    let output = run_icf(&[OsStr::new("dump"), path.as_os_str()]);
    assert_clean_error(&output, expected);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        stderr.contains(&path.display().to_string()),
        "stderr does not name {}\nstderr:\n{stderr}",
        path.display()
    );
    assert!(
        fs::read(path).ok() == before,
        "icf modified its input {}",
        path.display()
    );
    stderr
}

/// A directory of its own for one test, removed when dropped.
#[derive(Debug)]
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("icf-bad-input-{test}-{}", std::process::id()));
        // A leftover from an earlier run with the same process id.
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("creating the scratch directory");
        Scratch { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes `bytes` to `name` in the scratch directory and returns its path.
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path(name);
        fs::write(&path, bytes).expect("writing a scratch file");
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The path of the cached, valid x86-64 object built from `fixtures/c/calls.c`.
/// Never write to it.
fn valid_object_path() -> PathBuf {
    icf_fixtures::object(
        Path::new("c/calls.c"),
        &icf_fixtures::Build::new(icf_fixtures::Compiler::Gcc),
    )
}

/// The bytes of the valid object, to copy and break.
fn valid_object() -> Vec<u8> {
    fs::read(valid_object_path()).expect("reading the fixture object")
}

/// Overwrites `bytes[offset..offset + value.len()]` with `value`.
fn patch(bytes: &mut [u8], offset: usize, value: &[u8]) {
    bytes[offset..offset + value.len()].copy_from_slice(value);
}

/// The first `SHT_RELA` section of an object, and the section it applies to.
#[derive(Debug)]
struct RelaSection {
    index: usize,
    name: String,
    /// File offset of the first relocation entry (`Elf64_Rela`: `r_offset`, `r_info`, `r_addend`).
    file_offset: usize,
    target_index: usize,
    target_name: String,
}

fn first_rela_section(data: &[u8]) -> RelaSection {
    rela_section_where(data, |_| true)
}

/// The first non-empty `SHT_RELA` section whose name `wanted` accepts.
fn rela_section_where(data: &[u8], wanted: impl Fn(&str) -> bool) -> RelaSection {
    let header = elf::FileHeader64::<LE>::parse(data).expect("parsing the fixture's ELF header");
    let table = header
        .sections(LE, data)
        .expect("parsing the fixture's section headers");
    let name_of = |section: &elf::SectionHeader64<LE>| {
        let name = table
            .section_name(LE, section)
            .expect("reading a fixture section name");
        String::from_utf8_lossy(name).into_owned()
    };
    let (index, rela) = table
        .iter()
        .enumerate()
        .find(|(_, section)| {
            section.sh_type(LE) == elf::SHT_RELA
                && section.sh_size(LE) > 0
                && wanted(&name_of(section))
        })
        .expect("the fixture has such a relocation section");
    let target_index = rela.sh_info(LE) as usize;
    let target = table
        .section(object::SectionIndex(target_index))
        .expect("the relocation section's target exists");
    RelaSection {
        index,
        name: name_of(rela),
        file_offset: usize::try_from(rela.sh_offset(LE)).expect("offset fits in usize"),
        target_index,
        target_name: name_of(target),
    }
}

/// The headers of a System V / GNU archive: (file offset, name field trimmed).
fn archive_member_headers(data: &[u8]) -> Vec<(usize, String)> {
    assert!(data.starts_with(b"!<arch>\n"), "not an archive");
    let mut headers = Vec::new();
    let mut offset = 8;
    while offset + 60 <= data.len() {
        let header = &data[offset..offset + 60];
        let name = String::from_utf8_lossy(&header[..16]).trim_end().to_owned();
        let size: usize = std::str::from_utf8(&header[48..58])
            .expect("archive size field is ASCII")
            .trim()
            .parse()
            .expect("archive size field is a number");
        headers.push((offset, name));
        offset = (offset + 60 + size + 1) & !1;
    }
    headers
}

/// Runs `ar rcs archive members...` in `dir`, so member names have no directory part.
fn make_archive(dir: &Path, archive: &str, members: &[&str]) -> PathBuf {
    let output = Command::new("ar")
        .current_dir(dir)
        .arg("rcs")
        .arg(archive)
        .args(members)
        .output()
        .expect("running ar (binutils)");
    assert!(
        output.status.success(),
        "ar rcs {archive} {members:?} failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    dir.join(archive)
}

/// Offset of e_machine in the ELF header.
const E_MACHINE: usize = 18;
const EM_ARM: u16 = 40;

// ---------------------------------------------------------------------------
// Positive control: the unbroken object dumps.

#[test]
fn valid_object_dumps() {
    let scratch = Scratch::new("valid_object_dumps");
    let path = scratch.write("calls.o", &valid_object());
    let output = run_icf(&[OsStr::new("dump"), path.as_os_str()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "status {}\nstderr:\n{stderr}",
        output.status
    );
    assert!(
        stdout.contains("function "),
        "no function in the dump:\n{stdout}"
    );
    assert_eq!(
        fs::read(&path).expect("rereading the object"),
        valid_object(),
        "icf modified its input"
    );
}

// ---------------------------------------------------------------------------
// Plain objects

#[test]
fn truncated_header() {
    let scratch = Scratch::new("truncated_header");
    let path = scratch.write("truncated.o", &valid_object()[..40]);
    let location = format!("{}: offset 0x0: ", path.display());
    assert_dump_fails(&path, &[&location, "truncated", "40 bytes"]);
}

#[test]
fn cut_in_half() {
    // The section header table is at the end of the object, so cutting the
    // file in half cuts the table off: the error is about the table.
    let scratch = Scratch::new("cut_in_half");
    let data = valid_object();
    let path = scratch.write("half.o", &data[..data.len() / 2]);
    let location = format!("{}: ", path.display());
    assert_dump_fails(&path, &[&location, "section header table"]);
}

#[test]
fn section_data_outside_file() {
    // The section header table is intact but one section's data is said to
    // lie past the end of the file.
    let scratch = Scratch::new("section_data_outside_file");
    let mut data = valid_object();
    let rela = first_rela_section(&data);
    let header = elf::FileHeader64::<LE>::parse(&*data).expect("parsing the fixture's ELF header");
    let shoff = usize::try_from(header.e_shoff(LE)).expect("offset fits in usize");
    let shentsize = usize::from(header.e_shentsize(LE));
    // sh_offset is at +0x18 in Elf64_Shdr.
    let sh_offset = shoff + rela.target_index * shentsize + 0x18;
    patch(&mut data, sh_offset, &0x7fff_0000u64.to_le_bytes());
    let path = scratch.write("outside.o", &data);
    let location = format!(
        "{}: section {} '{}': ",
        path.display(),
        rela.target_index,
        rela.target_name
    );
    assert_dump_fails(&path, &[&location, "0x7fff0000", "outside the file"]);
}

#[test]
fn wrong_magic() {
    let scratch = Scratch::new("wrong_magic");
    let mut data = valid_object();
    patch(&mut data, 0, b"XELF");
    let path = scratch.write("magic.o", &data);
    let location = format!("{}: ", path.display());
    assert_dump_fails(
        &path,
        &[&location, "not an ELF object or an archive (unknown magic)"],
    );
}

#[test]
fn big_endian() {
    let scratch = Scratch::new("big_endian");
    let mut data = valid_object();
    data[5] = elf::ELFDATA2MSB.0; // EI_DATA
    let path = scratch.write("big.o", &data);
    let location = format!("{}: offset 0x5: ", path.display());
    assert_dump_fails(&path, &[&location, "big-endian ELF is not supported"]);
}

#[test]
fn elf32() {
    let scratch = Scratch::new("elf32");
    let mut data = valid_object();
    data[4] = elf::ELFCLASS32.0; // EI_CLASS
    let path = scratch.write("elf32.o", &data);
    let location = format!("{}: offset 0x4: ", path.display());
    assert_dump_fails(&path, &[&location, "32-bit ELF is not supported"]);
}

#[test]
fn unsupported_machine() {
    let scratch = Scratch::new("unsupported_machine");
    let mut data = valid_object();
    patch(&mut data, E_MACHINE, &EM_ARM.to_le_bytes());
    let path = scratch.write("arm.o", &data);
    let location = format!("{}: offset 0x12: ", path.display());
    assert_dump_fails(&path, &[&location, "unsupported machine 40"]);
}

#[test]
fn relocation_past_end_of_section() {
    let scratch = Scratch::new("relocation_past_end_of_section");
    let mut data = valid_object();
    let rela = first_rela_section(&data);
    // r_offset of the first entry.
    patch(&mut data, rela.file_offset, &0x7fff_0000u64.to_le_bytes());
    let path = scratch.write("reloc.o", &data);
    let location = format!(
        "{}: section {} '{}': offset 0x0: ",
        path.display(),
        rela.index,
        rela.name
    );
    let message = format!(
        "relocation 0 at offset 0x7fff0000 points past the end of section {} '{}'",
        rela.target_index, rela.target_name
    );
    assert_dump_fails(&path, &[&location, &message]);
}

#[test]
fn relocation_symbol_out_of_range() {
    let scratch = Scratch::new("relocation_symbol_out_of_range");
    let mut data = valid_object();
    let rela = first_rela_section(&data);
    // r_info is at +8; its symbol index is the high 32 bits, at +12.
    patch(
        &mut data,
        rela.file_offset + 12,
        &0x00ff_ffffu32.to_le_bytes(),
    );
    let path = scratch.write("symbol.o", &data);
    let location = format!(
        "{}: section {} '{}': offset 0x0: ",
        path.display(),
        rela.index,
        rela.name
    );
    assert_dump_fails(
        &path,
        &[
            &location,
            "relocation 0: symbol index 16777215 is out of range",
        ],
    );
}

/// The index of the section named `name` and the file offset of its header.
fn section_header(data: &[u8], name: &str) -> (usize, usize) {
    let header = elf::FileHeader64::<LE>::parse(data).expect("parsing the fixture's ELF header");
    let table = header
        .sections(LE, data)
        .expect("parsing the fixture's section headers");
    let index = table
        .iter()
        .position(|section| table.section_name(LE, section).ok() == Some(name.as_bytes()))
        .unwrap_or_else(|| panic!("the fixture has a section {name}"));
    let shoff = usize::try_from(header.e_shoff(LE)).expect("offset fits in usize");
    (index, shoff + index * usize::from(header.e_shentsize(LE)))
}

/// Offsets in `Elf64_Shdr`.
const SH_TYPE: usize = 0x04;
const SH_LINK: usize = 0x28;
const SH_ADDRALIGN: usize = 0x30;
const SHT_LLVM_ADDRSIG: u32 = 0x6fff_4c03;

#[test]
fn relocation_addend_absurdly_large() {
    let scratch = Scratch::new("relocation_addend_absurdly_large");
    let mut data = valid_object();
    let rela = first_rela_section(&data);
    // r_addend is at +16.
    patch(&mut data, rela.file_offset + 16, &i64::MAX.to_le_bytes());
    let path = scratch.write("addend.o", &data);
    let location = format!(
        "{}: section {} '{}': offset 0x0: ",
        path.display(),
        rela.index,
        rela.name
    );
    assert_dump_fails(
        &path,
        &[
            &location,
            "relocation 0: addend 0x7fffffffffffffff is absurdly large",
        ],
    );
}

#[test]
fn section_alignment_not_a_power_of_two() {
    let scratch = Scratch::new("section_alignment_not_a_power_of_two");
    for (align, file) in [(u64::MAX, "max.o"), (1 << 63, "huge.o"), (24, "odd.o")] {
        let mut data = valid_object();
        let (index, header) = section_header(&data, ".text");
        patch(&mut data, header + SH_ADDRALIGN, &align.to_le_bytes());
        let path = scratch.write(file, &data);
        let location = format!("{}: section {index} '.text': ", path.display());
        let message = format!("sh_addralign {align:#x} (section header field at file offset");
        assert_dump_fails(&path, &[&location, &message, "is not 0 or a power of two"]);
    }
}

#[test]
fn two_address_significance_tables() {
    let scratch = Scratch::new("two_address_significance_tables");
    let mut data = valid_object();
    let (first, first_header) = section_header(&data, ".comment");
    let (second, second_header) = section_header(&data, ".note.GNU-stack");
    patch(
        &mut data,
        first_header + SH_TYPE,
        &SHT_LLVM_ADDRSIG.to_le_bytes(),
    );
    patch(
        &mut data,
        second_header + SH_TYPE,
        &SHT_LLVM_ADDRSIG.to_le_bytes(),
    );
    let path = scratch.write("addrsig.o", &data);
    let location = format!("{}: section {second} '.note.GNU-stack': ", path.display());
    let message = format!("a second address-significance table (the first is section {first})");
    assert_dump_fails(&path, &[&location, &message]);
}

#[test]
fn address_significance_table_not_linked_to_the_symbol_table() {
    let scratch = Scratch::new("address_significance_table_not_linked");
    let mut data = valid_object();
    let (index, header) = section_header(&data, ".comment");
    patch(&mut data, header + SH_TYPE, &SHT_LLVM_ADDRSIG.to_le_bytes());
    patch(&mut data, header + SH_LINK, &0xfff1u32.to_le_bytes());
    let path = scratch.write("addrsig.o", &data);
    let location = format!("{}: section {index} '.comment': ", path.display());
    assert_dump_fails(
        &path,
        &[
            &location,
            "address-significance table links to section 65521, not the symbol table",
        ],
    );
}

#[test]
fn symbol_value_absurdly_large() {
    let scratch = Scratch::new("symbol_value_absurdly_large");
    let mut data = valid_object();
    let (symtab, header) = section_header(&data, ".symtab");
    let at = |field: usize| {
        u64::from_le_bytes(
            data[header + field..header + field + 8]
                .try_into()
                .expect("eight bytes"),
        )
    };
    let (symtab_offset, symtab_size) = (at(0x18) as usize, at(0x20) as usize);
    // The first symbol defined in a section (`Elf64_Sym`: 24 bytes, st_shndx at +6, st_value at +8).
    let entry = (1..symtab_size / 24)
        .find(|n| {
            let at = symtab_offset + n * 24 + 6;
            let shndx = u16::from_le_bytes([data[at], data[at + 1]]);
            shndx != 0 && shndx < 0xff00
        })
        .expect("the fixture defines a symbol in a section");
    patch(
        &mut data,
        symtab_offset + entry * 24 + 8,
        &(1u64 << 62).to_le_bytes(),
    );
    let path = scratch.write("symbol.o", &data);
    let location = format!(
        "{}: section {symtab} '.symtab': offset {:#x}: ",
        path.display(),
        entry * 24
    );
    assert_dump_fails(
        &path,
        &[
            &location,
            &format!("symbol {entry} "),
            "value 0x4000000000000000 is no offset in a section",
        ],
    );
}

#[test]
fn nonexistent_file() {
    let scratch = Scratch::new("nonexistent_file");
    let path = scratch.path("missing.o");
    let location = format!("{}: ", path.display());
    assert_dump_fails(&path, &[&location, "cannot open"]);
    assert!(!path.exists(), "icf created its missing input");
}

// ---------------------------------------------------------------------------
// Archives

/// Builds `archive.a` from two copies of the valid object, `first.o` and
/// `second.o` (after the symbol table `ar rcs` writes), then overwrites the
/// 10-byte size field (at +48) of `member`'s header with garbage. Returns the
/// archive's path and the file offset of the broken header.
fn archive_with_broken_header(scratch: &Scratch, member: &str) -> (PathBuf, usize) {
    let object = valid_object();
    scratch.write("first.o", &object);
    scratch.write("second.o", &object);
    let archive = make_archive(&scratch.dir, "archive.a", &["first.o", "second.o"]);
    let mut data = fs::read(&archive).expect("reading the archive");
    let (header, _) = archive_member_headers(&data)
        .into_iter()
        .find(|(_, name)| name.strip_suffix('/') == Some(member))
        .expect("the archive has the member");
    patch(&mut data, header + 48, b"abcdefghij");
    fs::write(&archive, &data).expect("writing the broken archive");
    (archive, header)
}

#[test]
fn archive_bad_member_header() {
    let scratch = Scratch::new("archive_bad_member_header");
    let (archive, header) = archive_with_broken_header(&scratch, "second.o");
    let location = format!("{}: offset {header:#x}: ", archive.display());
    assert_dump_fails(&archive, &[&location, "bad archive member header"]);
}

#[test]
fn archive_bad_first_member_header() {
    // The first member after the symbol table: `object` reads its header
    // while parsing the archive, before icf iterates over the members.
    let scratch = Scratch::new("archive_bad_first_member_header");
    let (archive, header) = archive_with_broken_header(&scratch, "first.o");
    let location = format!("{}: offset {header:#x}: ", archive.display());
    assert_dump_fails(&archive, &[&location, "bad archive member header"]);
}

#[test]
fn archive_member_is_broken_object() {
    let scratch = Scratch::new("archive_member_is_broken_object");
    let mut object = valid_object();
    scratch.write("good.o", &object);
    patch(&mut object, E_MACHINE, &EM_ARM.to_le_bytes());
    scratch.write("member.o", &object);
    let archive = make_archive(&scratch.dir, "archive.a", &["good.o", "member.o"]);
    let location = format!("{}(member.o): offset 0x12: ", archive.display());
    assert_dump_fails(&archive, &[&location, "unsupported machine 40"]);
}

/// A broken relocation of debug information: the reader leaves those
/// unread (nothing analyses them), so `icf dump` and `icf report` succeed,
/// and the error comes, located, when a fold rewrites the object (`icf
/// link --strict` fails with it; without `--strict` the plain link runs
/// and reports its own error).
#[test]
fn a_broken_debug_relocation_fails_the_rewrite_that_reads_it() {
    let scratch = Scratch::new("broken_debug_relocation");
    let source = scratch.write(
        "twins.c",
        b"int twin_a(int x) { return x * 7 + 3; }\n\
          int twin_b(int x) { return x * 7 + 3; }\n\
          int main(void) { return twin_a(1) - twin_b(1); }\n",
    );
    let object = scratch.path("twins.o");
    let status = Command::new("gcc")
        .args(["-O2", "-g", "-ffunction-sections", "-c"])
        .arg(&source)
        .arg("-o")
        .arg(&object)
        .status()
        .expect("running gcc");
    assert!(status.success());
    let mut data = fs::read(&object).expect("reading the object");
    let rela = rela_section_where(&data, |name| name == ".rela.debug_info");
    patch(
        &mut data,
        rela.file_offset + 12,
        &0x00ff_ffffu32.to_le_bytes(),
    );
    let path = scratch.write("broken.o", &data);
    for command in ["dump", "report"] {
        let output = run_icf(&[OsStr::new(command), path.as_os_str()]);
        assert!(
            output.status.success(),
            "icf {command}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let out_dir = scratch.path("folded");
    let output = run_icf(&[
        OsStr::new("fold"),
        OsStr::new("--no-cache"),
        OsStr::new("--out-dir"),
        out_dir.as_os_str(),
        path.as_os_str(),
    ]);
    let location = format!(
        "section {} '.rela.debug_info': offset 0x0: relocation 0: symbol index 16777215 is out of range",
        rela.index
    );
    assert_clean_error(&output, &[&path.display().to_string(), &location]);
    let binary = scratch.path("app");
    let link = |strict: bool| {
        let mut args = vec![OsStr::new("link"), OsStr::new("--no-cache")];
        if strict {
            args.push(OsStr::new("--strict"));
        }
        args.extend([OsStr::new("--"), OsStr::new("gcc"), path.as_os_str()]);
        args.extend([OsStr::new("-o"), binary.as_os_str()]);
        run_icf(&args)
    };
    // The linker refuses the object too: without --strict the plain
    // command runs, and its own error is the one reported.
    let plain = link(false);
    let stderr = String::from_utf8_lossy(&plain.stderr);
    assert!(
        !plain.status.success() && !stderr.contains("panicked"),
        "{stderr}"
    );
    assert!(stderr.contains("bad reloc symbol index"), "{stderr}");
    assert_clean_error(&link(true), &[&location]);
}
