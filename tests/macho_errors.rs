//! Bad Mach-O input gets located errors, as ELF does: a truncated load
//! command table, a segment whose `nsects` its command cannot hold, a
//! relocation past its section, a relocation naming a symbol past the
//! symbol table. Each is made by changing one field of a real object
//! (`fixtures/macho/relocs-{x86_64,arm64}.s` built by clang-19) and read
//! through icf's loader, which must refuse it with the file, the section
//! and/or the file offset of the bad field in its message.
//!
//! Assumption: clang-19 writes these objects with one `LC_SEGMENT_64`
//! first (at offset 0x20), `__text` as its first section, and relocations
//! in `__text`, the first naming a symbol (`r_extern`); the test checks
//! that before changing anything.

use icf_fixtures::{Arch, Build, Compiler};
use std::path::{Path, PathBuf};

/// The relocation fixture for `arch` (`x86_64` or `arm64`), built for macOS.
fn fixture(arch: &str) -> Vec<u8> {
    let build = Build {
        compiler: Compiler::Clang,
        // Only picks gcc's cross compiler; `--target` says it all.
        arch: Arch::X86_64,
        function_sections: false,
        extra_flags: vec![format!("--target={arch}-apple-macos11")],
    };
    let path = icf_fixtures::object(Path::new(&format!("macho/relocs-{arch}.s")), &build);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(data[at..at + 4].try_into().expect("four bytes"))
}

fn put_u32(data: &mut [u8], at: usize, value: u32) {
    data[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Where the fields the tests change are.
struct Places {
    /// `cmdsize` and `nsects` of the first `LC_SEGMENT_64`, at 0x20.
    segment_cmdsize: usize,
    nsects: usize,
    /// `__text`'s header fields.
    text_size: u64,
    text_reloff: usize,
    text_nreloc: u32,
    /// `LC_SYMTAB`'s `nsyms`.
    nsyms: u32,
}

fn places(data: &[u8]) -> Places {
    assert_eq!(u32_at(data, 0x20), 0x19, "LC_SEGMENT_64 first");
    let header = 0x20 + 72;
    assert_eq!(&data[header..header + 6], b"__text");
    let sizeofcmds = u32_at(data, 20) as usize;
    let mut at = 0x20;
    let mut nsyms = None;
    while at < 32 + sizeofcmds {
        if u32_at(data, at) == 0x2 {
            nsyms = Some(u32_at(data, at + 12));
        }
        at += u32_at(data, at + 4) as usize;
    }
    let places = Places {
        segment_cmdsize: 0x24,
        nsects: 0x20 + 64,
        text_size: u64::from_le_bytes(data[header + 40..header + 48].try_into().expect("8 bytes")),
        text_reloff: u32_at(data, header + 56) as usize,
        text_nreloc: u32_at(data, header + 60),
        nsyms: nsyms.expect("an LC_SYMTAB"),
    };
    assert!(places.text_nreloc > 0, "relocations in __text");
    let word1 = u32_at(data, places.text_reloff + 4);
    assert!(
        word1 & (1 << 27) != 0,
        "the first __text relocation is external"
    );
    places
}

/// Writes `data` as `name` in a directory of the test's and loads it as
/// icf does; returns the error's text.
fn load_error(test: &str, name: &str, data: &[u8]) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("icf-macho-errors-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("creating the scratch directory");
    let path = dir.join(name);
    std::fs::write(&path, data).expect("writing the object");
    let result = icf::Inputs::open(std::slice::from_ref(&path))
        .and_then(|inputs| icf::Program::load(&inputs, icf::Options::default()).map(drop));
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(()) => panic!("{name}: accepted"),
        Err(error) => (path, format!("{error:#}")),
    }
}

/// Asserts that `message` names `path` and then contains every one of `parts`.
fn assert_located(path: &Path, message: &str, parts: &[&str]) {
    let file = path.display().to_string();
    let after = message
        .split_once(&file)
        .map(|(_, after)| after)
        .unwrap_or_else(|| panic!("the error names no file: {message}"));
    for part in parts {
        assert!(after.contains(part), "{part:?} missing from {message:?}");
    }
}

const ARCHES: [&str; 2] = ["x86_64", "arm64"];

#[test]
fn truncated_load_commands_are_located() {
    for arch in ARCHES {
        let data = fixture(arch);
        // The file ends inside the load commands.
        let cut = &data[..0x20 + 40];
        let (path, message) = load_error("truncated", &format!("cut-{arch}.o"), cut);
        assert_located(&path, &message, &["offset 0x20: ", "load commands"]);

        // The second command's size runs past `sizeofcmds`.
        let mut long = data.clone();
        let second = 0x20 + u32_at(&data, places(&data).segment_cmdsize) as usize;
        let sizeofcmds = u32_at(&data, 20);
        put_u32(&mut long, second + 4, sizeofcmds);
        let (path, message) = load_error("truncated", &format!("cmdsize-{arch}.o"), &long);
        assert_located(
            &path,
            &message,
            &[&format!("offset {second:#x}: "), "load command"],
        );
    }
}

#[test]
fn bad_nsects_is_located() {
    for arch in ARCHES {
        let mut data = fixture(arch);
        let at = places(&data).nsects;
        let nsects = u32_at(&data, at);
        put_u32(&mut data, at, nsects + 1);
        let (path, message) = load_error("nsects", &format!("nsects-{arch}.o"), &data);
        assert_located(
            &path,
            &message,
            &[
                "offset 0x20: ",
                &format!("LC_SEGMENT_64 says {} sections", nsects + 1),
            ],
        );
    }
}

#[test]
fn a_relocation_past_its_section_is_located() {
    for arch in ARCHES {
        let mut data = fixture(arch);
        let places = places(&data);
        // The last relocation's field starts at the section's end.
        let entry = places.text_reloff + (places.text_nreloc as usize - 1) * 8;
        put_u32(&mut data, entry, places.text_size as u32);
        let (path, message) = load_error("past", &format!("past-{arch}.o"), &data);
        assert_located(
            &path,
            &message,
            &[
                "section 1 '__text': ",
                &format!("offset {entry:#x}: "),
                "past the section's end",
            ],
        );
    }
}

#[test]
fn a_relocation_naming_a_symbol_past_the_table_is_located() {
    for arch in ARCHES {
        let mut data = fixture(arch);
        let places = places(&data);
        let entry = places.text_reloff;
        let word1 = u32_at(&data, entry + 4);
        put_u32(&mut data, entry + 4, (word1 & 0xff00_0000) | places.nsyms);
        let (path, message) = load_error("symbol", &format!("symbol-{arch}.o"), &data);
        assert_located(
            &path,
            &message,
            &[
                "section 1 '__text': ",
                &format!("offset {entry:#x}: "),
                &format!("names symbol {}", places.nsyms),
            ],
        );
    }
}
