//! What a lifter needs to know about one function's code: its bytes, the
//! relocations inside them, the offsets other code or data jump to, and the
//! target that names its own section (for places the assembler resolved
//! without a relocation). Built by whoever reads the container format (ELF,
//! Mach-O, a linked image); consumed by the architecture's lifter.
//!
//! Targets are whole sections or names: a reference to a defined,
//! non-preemptible symbol is its section plus the symbol's offset, so `f` and
//! `.text.f+0` are the same reference.

use crate::{Arch, TargetId};

/// A relocation inside the function's bytes, with its target already normalized
/// by the reader (a defined, non-preemptible symbol becomes its section plus offset).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct CodeReloc {
    /// Offset of the relocated field from the function's first byte.
    pub offset: u32,
    /// Size of the relocated field in bytes.
    pub size: u8,
    /// The bits of the little-endian field the relocation writes (all of
    /// them for data; the immediate of an AArch64 instruction).
    pub mask: u64,
    /// The container's relocation type, as the file states it.
    pub r_type: u32,
    /// Whether the value is relative to the patched place (`S + A - P`).
    pub pc_relative: bool,
    pub target: TargetId,
    /// For a section target, the symbol's offset in the section plus the
    /// relocation's addend; otherwise the relocation's addend.
    pub addend: i64,
    /// The relocation's own addend, without the symbol's offset: a GOT
    /// reference with an addend other than the instruction's own distance
    /// names a slot next to the symbol's.
    pub own_addend: i64,
}

/// Clears the bits `mask` of the little-endian `size`-byte field at
/// `bytes[at..]`: what a relocation writes there is compared as a
/// reference, the rest of the field as bytes. A field that does not fit is
/// left alone.
pub fn clear_field(bytes: &mut [u8], at: usize, size: u8, mask: u64) {
    let Some(field) = bytes.get_mut(at..at + usize::from(size)) else {
        return;
    };
    for (index, byte) in field.iter_mut().enumerate() {
        *byte &= !((mask >> (8 * index)) as u8);
    }
}

/// One function's code, ready to lift.
#[derive(Copy, Clone)]
pub struct CodeInput<'a> {
    pub arch: Arch,
    pub bytes: &'a [u8],
    /// Offset of `bytes[0]` in its section (the address the code is decoded at).
    pub section_offset: u64,
    /// Size of the whole section, so PC-relative targets can be checked against it.
    pub section_size: u64,
    /// Relocations sorted by offset.
    pub relocs: &'a [CodeReloc],
    /// Offsets into the function that something outside it jumps to (jump-table
    /// entries, other symbols); each starts a block.
    pub entry_points: &'a [u32],
    /// The target naming the function's own section.
    pub own_section: TargetId,
    /// Offsets where data starts inside the function (AArch64 `$d` mapping
    /// symbols, Mach-O `LC_DATA_IN_CODE`): such bytes must not be read as
    /// instructions.
    pub data_in_code: &'a [u32],
    /// Offsets where instructions start again after data, when the reader
    /// knows (Mach-O gives each data run's length); data with no resume
    /// after it runs to the function's end.
    pub code_resumes: &'a [u32],
}

impl std::fmt::Debug for CodeInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeInput")
            .field("arch", &self.arch)
            .field("len", &self.bytes.len())
            .field("section_offset", &self.section_offset)
            .field("relocs", &self.relocs.len())
            .finish()
    }
}
