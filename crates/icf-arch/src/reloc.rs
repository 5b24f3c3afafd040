//! What a relocation patches, in any architecture: the size of the field,
//! the bits of it the linker writes, and whether the value is PC-relative.
//! Each architecture's table (`<arch>/elf_reloc.rs`) fills it in per type;
//! the object reader checks fields with it and the lifters mask exactly
//! [`RelocInfo::mask`].

/// Size, field and addressing of one relocation type.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct RelocInfo {
    /// Bytes the relocation patches (0 for marker relocations such as `R_X86_64_TLSDESC_CALL`).
    pub size: u8,
    /// The bits of the little-endian `size`-byte field the linker writes:
    /// every bit for data, the immediate for an AArch64 instruction.
    pub mask: u64,
    /// The value depends on the place it is written to (`S + A - P`).
    pub pc_relative: bool,
}

impl RelocInfo {
    /// Clears the bits the relocation writes in the field at `bytes[at..]`,
    /// so that what remains is what the object itself says. A field that
    /// does not fit is left alone (the reader checked every relocation).
    pub fn clear_field(&self, bytes: &mut [u8], at: usize) {
        icf_ir::clear_field(bytes, at, self.size, self.mask);
    }
}

/// Every bit of a `size`-byte field.
const fn whole(size: u8) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * size as u32)) - 1
    }
}

pub(crate) const fn abs(size: u8) -> Option<RelocInfo> {
    Some(RelocInfo {
        size,
        mask: whole(size),
        pc_relative: false,
    })
}

pub(crate) const fn pc(size: u8) -> Option<RelocInfo> {
    Some(RelocInfo {
        size,
        mask: whole(size),
        pc_relative: true,
    })
}

/// An AArch64 instruction relocation writing the bits `field` of the word.
pub(crate) const fn instruction(field: u32, pc_relative: bool) -> Option<RelocInfo> {
    Some(RelocInfo {
        size: 4,
        mask: field as u64,
        pc_relative,
    })
}
