//! Moving linked code: what a relocation an image kept (`--emit-relocs`)
//! says about its field, and writing a field again as a linker would.
//!
//! `icf shrink` moves functions inside a linked image. Every field that
//! names an address (a branch, a PC-relative operand, a pointer in data)
//! must then be written again for the new place and the new target. The
//! fields themselves are found by decoding (`crate::linked`) and by the
//! relocations the link kept; this module says what each kept relocation
//! type means ([`KeptReloc`]) and writes a field of a given type with a
//! given `S + A` at a given place (`Architecture::write_reloc`), checking
//! that the value fits.

/// What a relocation type kept in a linked image says about its field.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum KeptReloc {
    /// The field holds `S + A` whole, `size` bytes: an absolute address.
    Address { size: u8 },
    /// The field counts from its own place (a branch, a PC-relative operand
    /// or pointer, a GOT entry's distance). In code, decoding finds it.
    PcRelative,
    /// An instruction field whose `S + A` is exactly the address the
    /// instruction computes, or 16 bits of it (AArch64 branches, `adr`,
    /// `adrp` and the low 12 bits completing it, literal loads, the
    /// `movz`/`movk` of the large code model; not through the GOT): it can
    /// be written again from the relocation alone, whatever decoding
    /// paired.
    Instruction,
    /// An AArch64 `adrp`'s page (not through the GOT): an `Instruction`
    /// field whose linker may also have written it as an `adr` of the page
    /// (GNU ld's Cortex-A53 erratum 843419 workaround) or relaxed it into
    /// an `adr` of the whole address (the next word then a `nop`).
    Page,
    /// An AArch64 `adrp`'s page of a GOT entry: decoding says which (the
    /// linker may have relaxed the load into the address itself), and GNU
    /// ld may have written it as an `adr` of the page too.
    GotPage,
    /// A PC-relative GOT load the linker may have relaxed into an
    /// immediate holding the symbol's address (x86-64 `GOTPCRELX`:
    /// `mov foo@GOTPCREL(%rip), %reg` becomes `mov $foo, %reg` in a
    /// non-PIE executable).
    RelaxableGotLoad,
    /// The low 12 bits of an address an AArch64 `adrp` completes (`add`,
    /// load or store): decoding pairs it with its `adrp`.
    Low12,
    /// The offset of the symbol's GOT slot from the GOT or its page
    /// (AArch64 `:gotpage_lo15:`, as static glibc loads through the GOT;
    /// x86-64 `GOT32`/`GOT64`): it holds while the GOT stays where it is,
    /// whatever the symbol, since the slot's content is the GOT's.
    GotOffset,
    /// Anything else: thread-local offsets, GOT-relative offsets, sizes,
    /// markers, the `movw` pieces of other than an absolute address. Its field does not change when code moves
    /// unless what it names moves, which the caller refuses.
    Other,
}

/// Bits `low..low + width` of `word` replaced by `value`.
pub(crate) fn with_bits(word: u32, low: u32, width: u32, value: u32) -> u32 {
    let mask = ((1u64 << width) - 1) as u32;
    (word & !(mask << low)) | ((value & mask) << low)
}

/// Whether `value` fits a signed field of `bits` bits.
pub(crate) fn fits_signed(value: i64, bits: u32) -> bool {
    let limit = 1i64 << (bits - 1);
    (-limit..limit).contains(&value)
}

/// Writes `value` as a little-endian field of `size` bytes at the start of
/// `field`, signed or not, or says why it does not fit.
pub(crate) fn write_data(
    field: &mut [u8],
    size: usize,
    value: i64,
    signed: bool,
) -> Result<(), String> {
    let fits = match (size, signed) {
        (8, _) => true,
        (_, true) => fits_signed(value, 8 * size as u32),
        (_, false) => (0..1i64 << (8 * size)).contains(&value),
    };
    if !fits {
        return Err(format!("{value:#x} does not fit {size} bytes"));
    }
    let bytes = value.to_le_bytes();
    let Some(place) = field.get_mut(..size) else {
        return Err(format!("the field needs {size} bytes"));
    };
    place.copy_from_slice(&bytes[..size]);
    Ok(())
}

/// An instruction a CPU erratum forbids in the last words of a 4 KiB page
/// when the code after it completes the erratum's pattern: AArch64's
/// `adrp` under Cortex-A53 erratum 843419 (followed, within three words,
/// by a load or store based on the register it writes). Linkers keep such
/// an `adrp` out of a page's last two words or patch it; what lays code
/// out anew must do the same ([`Architecture::page_end_hazards`]).
///
/// [`Architecture::page_end_hazards`]: crate::Architecture::page_end_hazards
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageEndHazard {
    /// Its address.
    pub address: u64,
    /// Whether the words after it complete the pattern. An instruction
    /// that is not may still be where its words run into the next piece
    /// of code ([`PAGE_END_HAZARD_REACH`]): what lands there decides.
    pub exposed: bool,
}

/// The page offset from which an exposed [`PageEndHazard`] may not lie
/// (a page's last two words).
pub const PAGE_END_HAZARD_START: u64 = 0xff8;

/// How many bytes after a [`PageEndHazard`] can complete its pattern.
pub const PAGE_END_HAZARD_REACH: u64 = 12;
