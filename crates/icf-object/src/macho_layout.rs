//! What a Mach-O object keeps besides the model: its sections as the file
//! has them, where each atom (model section) lies in them, and what the
//! writer (`macho/write.rs`) carries over. Filled by `macho/read.rs`.

use crate::model::{SectionIndex, SymbolIndex};
use object::macho;

/// One section of the Mach-O file, as its header says.
#[derive(Clone, Debug)]
pub struct MachOSection {
    pub segname: [u8; 16],
    pub sectname: [u8; 16],
    pub addr: u64,
    pub size: u64,
    /// File offset of the contents.
    pub offset: u32,
    /// Alignment as a power of two.
    pub align: u32,
    pub reloff: u32,
    pub nreloc: u32,
    pub flags: u32,
    /// File offset of this section's header.
    pub header_offset: u64,
}

impl MachOSection {
    pub(crate) fn name(&self) -> &[u8] {
        trim(&self.sectname)
    }

    pub(crate) fn segment(&self) -> &[u8] {
        trim(&self.segname)
    }

    pub(crate) fn section_type(&self) -> u32 {
        self.flags & macho::SECTION_TYPE
    }

    pub(crate) fn is_zero_fill(&self) -> bool {
        matches!(
            self.section_type(),
            0x1 | 0xc | 0x12 // S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL
        )
    }

    pub(crate) fn is_code(&self) -> bool {
        self.flags & (0x8000_0000 | 0x400) != 0 // S_ATTR_PURE_INSTRUCTIONS, S_ATTR_SOME_INSTRUCTIONS
    }

    pub(crate) fn is_debug(&self) -> bool {
        self.flags & 0x0200_0000 != 0 || self.segment() == b"__DWARF" // S_ATTR_DEBUG
    }

    /// A section the linker reads itself rather than placing as it is:
    /// unwind tables (it builds `__unwind_info` and its own `__eh_frame`),
    /// the address-significance table, debug information.
    pub(crate) fn is_linker_input(&self) -> bool {
        (self.segment() == b"__LD" && self.name() == b"__compact_unwind")
            || self.name() == b"__eh_frame"
            || self.name() == b"__llvm_addrsig"
            || self.is_debug()
    }

    /// A literal section: the linker splits it by content and merges equal
    /// elements.
    pub(crate) fn literal_size(&self) -> Option<u64> {
        match self.section_type() {
            0x2 => Some(1), // S_CSTRING_LITERALS
            0x3 => Some(4),
            0x4 => Some(8),
            0xe => Some(16),
            _ => None,
        }
    }
}

/// Where one model section (an atom) lies in the Mach-O file.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Atom {
    /// The file section, as an index into [`MachOLayout::sections`]
    /// (its ordinal minus one).
    pub section: u32,
    /// Offset of the atom in that section.
    pub start: u64,
}

/// One `LC_DATA_IN_CODE` entry, placed in its atom.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DataInCode {
    pub section: SectionIndex,
    pub offset: u64,
    pub length: u16,
    pub kind: u16,
}

/// What a Mach-O object keeps besides the model.
#[derive(Clone, Debug)]
pub struct MachOLayout {
    /// The file's sections in load-command order.
    pub sections: Vec<MachOSection>,
    /// For each model section (entry 0 stands for the null section).
    pub atoms: Vec<Atom>,
    /// Model symbols `1..=nlist_count` are the symbol table's entries in
    /// order; those after are the section symbols of atoms, one per model
    /// section, in section order.
    pub nlist_count: u32,
    /// For each model section, for each of its relocations in order: the
    /// index, in its file section's relocation table, of the entry it was
    /// read from (the fixup; an `ADDEND` or `SUBTRACTOR` before it is the
    /// entry before).
    pub reloc_origins: Vec<Vec<u32>>,
    pub data_in_code: Vec<DataInCode>,
    pub subsections_via_symbols: bool,
    /// Model sections (atoms) an `N_ALT_ENTRY` symbol enters past their
    /// start, sorted: such an atom is never folded (its second entry is
    /// how assembly shares a tail, which the linker must keep in one piece
    /// with its first).
    pub alternate_entries: Vec<SectionIndex>,
}

impl MachOLayout {
    /// The section symbol the reader added for model section `section`.
    pub fn atom_symbol(&self, section: SectionIndex) -> SymbolIndex {
        SymbolIndex(self.nlist_count + section.0)
    }
}

pub(crate) fn trim(name: &[u8; 16]) -> &[u8] {
    let end = name.iter().position(|&b| b == 0).unwrap_or(16);
    &name[..end]
}

/// A ULEB128 number from the front of `bytes`, which it advances; `None`
/// when the bytes end first or the number does not fit 64 bits.
pub(crate) fn read_uleb128(bytes: &mut &[u8]) -> Option<u64> {
    let mut reader = gimli::EndianSlice::new(bytes, gimli::LittleEndian);
    let value = gimli::leb128::read::unsigned(&mut reader).ok()?;
    *bytes = reader.slice();
    Some(value)
}
