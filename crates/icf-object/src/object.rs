//! The parsed object every later phase reads: one model ([`crate::model`])
//! whatever the container. [`Object::parse`] picks the reader by the
//! file's magic: `elf/read.rs` for ELF relocatable objects, `macho/read.rs` for
//! Mach-O ones (each atom of a `MH_SUBSECTIONS_VIA_SYMBOLS` object is a
//! model section, as a linker sees it).

use crate::eh_frame::Fde;
use crate::error::{Error, Result};
use crate::image_info::Image;
use crate::macho_layout::MachOLayout;
use crate::model::{ComdatGroup, GroupIndex, Reloc, Section, SectionIndex, Symbol, SymbolIndex};
use icf_ir::Arch;
use std::borrow::Cow;

/// The container an object was read from.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Format {
    Elf,
    MachO,
}

/// A parsed relocatable object.
#[derive(Clone, Debug)]
pub struct Object<'data> {
    pub format: Format,
    pub arch: Arch,
    pub data: &'data [u8],
    /// Indexed by [`SectionIndex`]; entry 0 is the null section.
    pub sections: Vec<Section<'data>>,
    /// Indexed by [`SymbolIndex`]; entry 0 is the null symbol.
    pub symbols: Vec<Symbol<'data>>,
    pub symtab: Option<SectionIndex>,
    pub groups: Vec<ComdatGroup>,
    /// The symbols whose address is significant (`.llvm_addrsig`,
    /// `__llvm_addrsig`), when the object says and the table is still valid.
    pub addrsig: Option<Vec<SymbolIndex>>,
    /// The unwind table and its entries, when present: `.eh_frame`'s FDEs,
    /// or the records of Mach-O's `__compact_unwind`.
    pub eh_frame: Option<(SectionIndex, Vec<Fde>)>,
    /// The `GNU_PROPERTY_*_FEATURE_1_AND` bits of `.note.gnu.property`
    /// (x86-64: IBT = 1, SHSTK = 2; AArch64: BTI = 1, PAC = 2), 0 when
    /// absent. Read once: the planner asks for every thunk it sizes.
    pub feature_1_and: u32,
    /// For a Mach-O object: where each model section lies in the file,
    /// and what the writer carries over.
    pub macho: Option<Box<MachOLayout>>,
    /// For a linked image read by [`Object::parse_image`]: what kind it
    /// is, where its sections sit, and where its pointers were learned.
    pub image: Option<Box<Image<'data>>>,
}

impl<'data> Object<'data> {
    /// Parses `data`, an ELF or Mach-O relocatable object. Errors carry the
    /// section and offset; the caller adds the file name.
    pub fn parse(data: &'data [u8]) -> Result<Object<'data>> {
        if is_macho(data) {
            Object::parse_macho(data)
        } else {
            Object::parse_elf(data)
        }
    }

    /// An object of `format` and `arch` over `data` with `sections`, and
    /// nothing else read yet: each reader fills in the rest.
    pub(crate) fn new(
        format: Format,
        arch: Arch,
        data: &'data [u8],
        sections: Vec<Section<'data>>,
    ) -> Object<'data> {
        Object {
            format,
            arch,
            data,
            sections,
            symbols: Vec::new(),
            symtab: None,
            groups: Vec::new(),
            addrsig: None,
            eh_frame: None,
            feature_1_and: 0,
            macho: None,
            image: None,
        }
    }

    pub fn section(&self, index: SectionIndex) -> &Section<'data> {
        &self.sections[index.index()]
    }

    /// The relocations of section `index`, sorted by offset: those read
    /// with the object, or, for a section whose relocations were left
    /// unread ([`Section::relocs_deferred`]), read and checked now.
    pub fn relocations(&self, index: SectionIndex) -> Result<Cow<'_, [Reloc]>> {
        let section = self.section(index);
        if section.relocs_deferred {
            self.deferred_elf_relocations(index).map(Cow::Owned)
        } else {
            Ok(Cow::Borrowed(&section.relocs))
        }
    }

    pub fn group(&self, index: GroupIndex) -> &ComdatGroup {
        &self.groups[index.index()]
    }

    /// The fingerprint of section `index`'s name (XXH3-128): kept
    /// with its group for a group's member, computed from the name for
    /// any other section.
    pub fn section_name_fingerprint(&self, index: SectionIndex) -> u128 {
        let section = self.section(index);
        section
            .group
            .and_then(|group| {
                let group = self.group(group);
                let at = group.members.iter().position(|&m| m == index)?;
                group.member_names.get(at).copied()
            })
            .unwrap_or_else(|| crate::model::name_fingerprint(section.name))
    }

    pub fn symbol(&self, index: SymbolIndex) -> &Symbol<'data> {
        &self.symbols[index.index()]
    }

    /// Whether section `index` may be reached through `__start_NAME` and
    /// `__stop_NAME` symbols, which ELF linkers define for any section whose
    /// name is a C identifier (so the link keeps it and its contents must
    /// stay in place). Mach-O has no such symbols.
    pub fn may_be_delimited(&self, index: SectionIndex) -> bool {
        let section = self.section(index);
        self.format == Format::Elf
            && !section.name_is_plain
            && crate::model::is_c_identifier(section.name)
    }

    /// Why the format forbids folding section `index`, if it does: a
    /// Mach-O atom with an alternate entry (`N_ALT_ENTRY`).
    pub fn format_ineligibility(&self, index: SectionIndex) -> Option<&'static str> {
        let layout = self.macho.as_ref()?;
        layout
            .alternate_entries
            .binary_search(&index)
            .is_ok()
            .then_some("an atom with an alternate entry point (N_ALT_ENTRY)")
    }

    /// An error located in section `index`.
    pub fn section_error(&self, index: SectionIndex, message: impl Into<String>) -> Error {
        let name = self
            .sections
            .get(index.index())
            .map(Section::name_lossy)
            .unwrap_or_default();
        Error::new(message).with_section(index.0, name)
    }
}

/// Whether `data` starts like a 64-bit little-endian Mach-O file.
pub(crate) fn is_macho(data: &[u8]) -> bool {
    data.starts_with(&[0xcf, 0xfa, 0xed, 0xfe])
}
