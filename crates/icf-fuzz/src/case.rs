//! A case: the files of one execution (the mutated input, other inputs,
//! files a thin archive names), how to run it, and its text form, which is
//! both a finding's note and a regression test (`tests/fuzz_regressions/`).
//!
//! Assumption: cases are small (a few objects of a few KiB), so hex text is
//! an acceptable way to keep them in git and read their notes in review.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A format icf reads, with the oracle that reads it.
///
/// To add a format (Mach-O): add a variant, give it its oracle in
/// `InputKind::run` (`oracle.rs`), and seeds in `seeds.rs`; the mutator, the judging and
/// the campaign need no change.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum InputKind {
    /// An ELF relocatable object with RELA relocations.
    Object,
    /// An ELF relocatable object with CREL relocations (`-Wa,--crel`).
    CrelObject,
    /// A System V / GNU archive of objects.
    Archive,
    /// A thin archive: its members are files beside it.
    ThinArchive,
    /// A linked executable, read by `icf verify` (`icf-verify`) against its
    /// unmutated copy.
    LinkedBinary,
    /// A Mach-O relocatable object (`MH_OBJECT`, x86_64 or arm64).
    MachOObject,
    /// An archive of Mach-O objects (`llvm-ar --format=darwin`).
    MachOArchive,
}

impl InputKind {
    pub const ALL: [InputKind; 7] = [
        InputKind::Object,
        InputKind::CrelObject,
        InputKind::Archive,
        InputKind::ThinArchive,
        InputKind::LinkedBinary,
        InputKind::MachOObject,
        InputKind::MachOArchive,
    ];

    pub fn name(self) -> &'static str {
        match self {
            InputKind::Object => "elf-object",
            InputKind::CrelObject => "crel-object",
            InputKind::Archive => "archive",
            InputKind::ThinArchive => "thin-archive",
            InputKind::LinkedBinary => "linked-binary",
            InputKind::MachOObject => "macho-object",
            InputKind::MachOArchive => "macho-archive",
        }
    }

    pub fn from_name(name: &str) -> Option<InputKind> {
        InputKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Whether the format is Mach-O (its seeds and campaign are apart from ELF's).
    pub fn is_macho(self) -> bool {
        matches!(self, InputKind::MachOObject | InputKind::MachOArchive)
    }
}

/// Which link the pipeline assumes; part of a case so a finding replays exactly.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// `--icf=all` rather than safe.
    pub fold_all: bool,
    /// A `-shared` link.
    pub shared: bool,
    /// A `--gc-sections` link rooted at `main`.
    pub gc_sections: bool,
}

/// One file of a case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseFile {
    /// File name, without directories.
    pub name: String,
    pub bytes: Vec<u8>,
    /// Passed to the oracle as an input; otherwise only written beside the
    /// inputs (members of a thin archive).
    pub is_input: bool,
}

/// Everything one execution needs. The first file is the mutated one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub kind: InputKind,
    pub options: RunOptions,
    pub files: Vec<CaseFile>,
    /// Free text kept as `#` lines: seed, mutations, finding.
    pub notes: Vec<String>,
}

impl Case {
    /// Writes every file into `dir` and returns the paths of the inputs, in order.
    pub fn write_files(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        let mut inputs = Vec::new();
        for file in &self.files {
            let path = dir.join(&file.name);
            std::fs::write(&path, &file.bytes)?;
            if file.is_input {
                inputs.push(path);
            }
        }
        Ok(inputs)
    }

    /// The text form: `#` notes, `input` (its kind), `options`, then each file as a
    /// `file input|beside NAME` line followed by its bytes in hex, 32 per line.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for note in &self.notes {
            for line in note.lines() {
                let _ = writeln!(text, "# {line}");
            }
        }
        let _ = writeln!(text, "input {}", self.kind.name());
        let _ = writeln!(
            text,
            "options fold_all={} shared={} gc_sections={}",
            self.options.fold_all, self.options.shared, self.options.gc_sections
        );
        for file in &self.files {
            let kind = if file.is_input { "input" } else { "beside" };
            let _ = writeln!(text, "file {kind} {}", file.name);
            for chunk in file.bytes.chunks(32) {
                for byte in chunk {
                    let _ = write!(text, "{byte:02x}");
                }
                text.push('\n');
            }
        }
        text
    }

    /// Parses [`Case::to_text`]'s form.
    pub fn from_text(text: &str) -> Result<Case, String> {
        let mut kind = None;
        let mut options = RunOptions::default();
        let mut files: Vec<CaseFile> = Vec::new();
        let mut notes = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line_error = |what: &str| format!("line {}: {what}: {line:?}", number + 1);
            if let Some(note) = line.strip_prefix('#') {
                notes.push(note.trim_start().to_owned());
            } else if let Some(name) = line.strip_prefix("input ") {
                kind = Some(
                    InputKind::from_name(name.trim())
                        .ok_or_else(|| line_error("unknown input kind"))?,
                );
            } else if let Some(settings) = line.strip_prefix("options ") {
                for setting in settings.split_whitespace() {
                    let (key, value) = setting
                        .split_once('=')
                        .ok_or_else(|| line_error("expected key=value"))?;
                    let value = value == "true";
                    match key {
                        "fold_all" => options.fold_all = value,
                        "shared" => options.shared = value,
                        "gc_sections" => options.gc_sections = value,
                        _ => return Err(line_error("unknown option")),
                    }
                }
            } else if let Some(rest) = line.strip_prefix("file ") {
                let (kind, name) = rest
                    .split_once(' ')
                    .ok_or_else(|| line_error("expected `file input|beside NAME`"))?;
                if name.contains('/') || name.is_empty() {
                    return Err(line_error("a file name without directories"));
                }
                files.push(CaseFile {
                    name: name.to_owned(),
                    bytes: Vec::new(),
                    is_input: kind == "input",
                });
            } else if !line.trim().is_empty() {
                let file = files
                    .last_mut()
                    .ok_or_else(|| line_error("bytes before any `file` line"))?;
                let hex = line.trim().as_bytes();
                if hex.len() % 2 != 0 {
                    return Err(line_error("odd number of hex digits"));
                }
                for pair in hex.chunks(2) {
                    let digits = std::str::from_utf8(pair).map_err(|_| line_error("not hex"))?;
                    file.bytes
                        .push(u8::from_str_radix(digits, 16).map_err(|_| line_error("not hex"))?);
                }
            }
        }
        Ok(Case {
            kind: kind.ok_or("no `input` line")?,
            options,
            files,
            notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        let case = Case {
            kind: InputKind::ThinArchive,
            options: RunOptions {
                fold_all: true,
                shared: false,
                gc_sections: true,
            },
            files: vec![
                CaseFile {
                    name: "lib.a".to_owned(),
                    bytes: (0..=255).collect(),
                    is_input: true,
                },
                CaseFile {
                    name: "m.o".to_owned(),
                    bytes: vec![],
                    is_input: false,
                },
            ],
            notes: vec!["seed: x".to_owned(), "two\nlines".to_owned()],
        };
        let parsed = Case::from_text(&case.to_text()).expect("parsing what to_text wrote");
        assert_eq!(parsed.files, case.files);
        assert_eq!(parsed.options, case.options);
        assert_eq!(parsed.kind, case.kind);
        assert_eq!(parsed.notes, ["seed: x", "two", "lines"]);
    }
}
