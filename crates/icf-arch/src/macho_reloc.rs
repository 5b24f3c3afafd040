//! Mach-O relocations read in the model's terms. icf's object model speaks
//! one relocation vocabulary, the architecture's ELF types (`S + A - P`
//! with an explicit addend); a Mach-O reader asks [`Architecture::macho_reloc`]
//! what each Mach-O relocation means in it. Each architecture's answer
//! lives in `<arch>/macho_reloc.rs`; the arithmetic that turns the answer
//! into a symbol and an addend (external relocations name a symbol, local
//! ones an address in the object) is the reader's, in `icf-object`.
//!
//! Two Mach-O relocations are not fixups of their own: `ARM64_RELOC_ADDEND`
//! gives the next one its addend, and `*_RELOC_SUBTRACTOR` names what the
//! next one (an `UNSIGNED` at the same place) subtracts. A difference the
//! reader cannot express as PC-relative becomes two model relocations at
//! one place: [`SUBTRACTOR_MARKER`] naming the subtrahend (a field of no
//! bytes, like ELF's marker relocations), then the absolute one naming the
//! minuend.
//!
//! [`Architecture::macho_reloc`]: crate::Architecture::macho_reloc

/// The model relocation type of a subtrahend: a field of no bytes naming
/// what the absolute relocation at the same place subtracts. Outside every
/// ELF relocation number space, known to each architecture's table.
pub const SUBTRACTOR_MARKER: u32 = 0x4d4f_5355;

/// The model relocation type of a 64-bit pointer with bit 63 set on top of
/// its target (Apple arm64's non-unique RTTI: a type's name pointer is
/// `_ZTS... + (1 << 63)` when the type may have several names, so
/// `type_info::operator==` compares strings). The bit is not part of the
/// addend, which the model bounds; the type keeps it, so such a pointer
/// equals only another with the bit. An absolute 8-byte field to each
/// architecture's table.
pub const HIGH_BIT_POINTER: u32 = 0x4d4f_4842;

/// One Mach-O relocation entry, as the file states it.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct MachOFixup {
    pub r_type: u8,
    pub pc_relative: bool,
    /// `r_length`: the field is `1 << length` bytes.
    pub length: u8,
    /// `r_extern`: the relocation names a symbol, not a section.
    pub is_extern: bool,
    /// The addend an `ARM64_RELOC_ADDEND` just before it gave, if any.
    pub explicit_addend: Option<i64>,
    /// The field's bytes as a little-endian number (zero-extended), what an
    /// implicit addend is read from.
    pub field: u64,
    /// The instruction word at the field (the field's low 4 bytes):
    /// AArch64 picks the model type by the instruction it patches.
    pub word: u32,
    /// `r_symbolnum`: `ARM64_RELOC_ADDEND` keeps its addend there.
    pub symbol_number: u32,
}

impl MachOFixup {
    /// The field's size in bytes.
    pub fn size(&self) -> u8 {
        1 << self.length
    }

    /// The field read as a signed number of its size.
    pub fn signed_field(&self) -> i64 {
        match self.length {
            0 => self.field as u8 as i8 as i64,
            1 => self.field as u16 as i16 as i64,
            2 => self.field as u32 as i32 as i64,
            _ => self.field as i64,
        }
    }
}

/// What one Mach-O relocation entry is.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum MachOMeaning {
    /// `ARM64_RELOC_ADDEND`: the next relocation's addend.
    Addend(i64),
    /// `*_RELOC_SUBTRACTOR`: the next relocation, an absolute one of the
    /// same size at the same place, has this one's target subtracted.
    Subtractor,
    /// A fixup of its own.
    Fixup(MachOTranslation),
}

/// A Mach-O fixup in the model's terms.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct MachOTranslation {
    /// The architecture's ELF relocation type with the same field and meaning.
    pub elf_type: u32,
    /// The addend the object states, in the field (implicit) or in an
    /// `ARM64_RELOC_ADDEND`.
    pub stored: i64,
    /// For a PC-relative fixup, how far past the field's start the value
    /// counts from (x86-64: 4, the field's end). The model addend of an
    /// external fixup is `stored - pc_offset`.
    pub pc_offset: i64,
    /// For a local PC-relative fixup, what the linker adds besides the
    /// field's end to find the place it refers to (x86-64 `SIGNED_1/2/4`:
    /// the immediate after the field).
    pub locate_bias: i64,
}

/// A Mach-O relocation entry that is not a fixup of its own but qualifies
/// the next one.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum MachOPrefix {
    /// `ARM64_RELOC_ADDEND`: its symbol number is the next entry's addend.
    Addend,
    /// `*_RELOC_SUBTRACTOR`: names what the next entry subtracts.
    Subtractor,
}

/// What a compact unwind encoding's mode bits say, per architecture.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct CompactUnwind {
    /// The encoding of a function that saves nothing and keeps only the
    /// return address (x86_64: on the stack; arm64: in the link register):
    /// what a thunk, one jump, needs.
    pub frameless: u32,
    /// The mode bits (`0x0f00_0000`) that defer to an FDE in `__eh_frame`.
    pub dwarf_mode: u32,
}
