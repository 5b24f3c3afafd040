//! What a Mach-O image's load commands and symbol table say, as the image
//! reader (`read.rs`) and the fixup reader (`fixups.rs`) both
//! read them, and how their errors are located.

use crate::error::Error;
use crate::image::Section;
use object::LittleEndian as LE;
use object::macho;
use std::path::Path;

/// An error in `path` at file offset `at`.
pub(crate) fn located(path: &Path, at: u64, message: impl std::fmt::Display) -> Error {
    Error::new(path, format!("at offset {at:#x}: {message}"))
}

/// A segment as its load command gives it.
#[derive(Clone, Debug)]
pub(crate) struct Segment {
    pub name: String,
    pub vmaddr: u64,
    pub vmsize: u64,
    pub fileoff: u64,
    pub filesize: u64,
}

impl Segment {
    /// The address of file offset `offset`, if the segment maps it.
    pub(crate) fn address_of_offset(&self, offset: u64) -> Option<u64> {
        let within = offset.checked_sub(self.fileoff)?;
        (within < self.filesize).then(|| self.vmaddr.wrapping_add(within))
    }
}

/// What the load commands say, checked against the file.
pub(crate) struct LoadCommands {
    pub segments: Vec<Segment>,
    /// Every section, in load-command order (`n_sect` counts from 1).
    pub sections: Vec<Section>,
    pub symtab: Option<(macho::SymtabCommand<LE>, u64)>,
    pub dyld_info: Option<(macho::DyldInfoCommand<LE>, u64)>,
    pub chained_fixups: Option<(macho::LinkeditDataCommand<LE>, u64)>,
    pub exports_trie: Option<(macho::LinkeditDataCommand<LE>, u64)>,
    pub function_starts: Option<(macho::LinkeditDataCommand<LE>, u64)>,
    pub data_in_code: Option<(macho::LinkeditDataCommand<LE>, u64)>,
    /// `LC_MAIN`'s entry offset, with the command's offset.
    pub entry_offset: Option<(u64, u64)>,
}

impl LoadCommands {
    /// The segment named `name`.
    pub fn segment(&self, name: &str) -> Option<&Segment> {
        self.segments.iter().find(|s| s.name == name)
    }
}

/// One defined (`N_SECT`) symbol of the symbol table.
pub(crate) struct RawSymbol {
    /// The name without its leading `_`.
    pub name: String,
    pub n_type: u8,
    pub n_desc: u16,
    pub address: u64,
    /// Index into [`LoadCommands::sections`].
    pub section: usize,
}

/// The name a symbol of the table is known by: without the one leading
/// `_` the compilers add on Darwin.
pub(crate) fn language_name(raw: &[u8]) -> String {
    let raw = raw.strip_prefix(b"_").unwrap_or(raw);
    String::from_utf8_lossy(raw).into_owned()
}
