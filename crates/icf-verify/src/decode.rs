//! Decoding by architecture: the code of an image as [`Decoded`]
//! instructions (`x86.rs`, `aarch64.rs`), a thunk's target, a PLT entry's
//! slot, and an instruction disassembled for a report.

use crate::code::{Decoded, Use};
use crate::image::{Arch, Image, SectionRole, Slot};
use crate::{aarch64, x86};

/// Decodes `[start, end)` of `image` linearly; `None` when the range has no
/// file bytes.
pub(crate) fn decode(image: &Image, start: u64, end: u64) -> Option<Vec<Decoded>> {
    let bytes = image.bytes(start, end.checked_sub(start)?)?;
    Some(match image.arch {
        Arch::X86_64 => x86::decode(image, bytes, start),
        Arch::Aarch64 => aarch64::decode_in(image, bytes, start),
    })
}

/// Every PLT entry of `image` with what its GOT slot holds once the loader
/// fills it (see [`plt_slot`]).
pub(crate) fn plt_entries(image: &Image) -> Vec<(u64, &Slot)> {
    let mut entries = Vec::new();
    for (index, section) in image.sections.iter().enumerate() {
        let SectionRole::Plt { entry_size } = section.role else {
            continue;
        };
        if !section.executable || entry_size == 0 {
            continue;
        }
        let end = section.address.saturating_add(section.size);
        for entry in (section.address..end).step_by(entry_size as usize) {
            if let Some(slot) = plt_slot(image, index, entry) {
                entries.push((entry, slot));
            }
        }
    }
    entries
}

/// What the PLT entry holding `address` (in section `section`) jumps to:
/// the GOT slot its indirect jump reads, as its dynamic relocation fills
/// it.
pub(crate) fn plt_slot(image: &Image, section: usize, address: u64) -> Option<&Slot> {
    let s = &image.sections[section];
    let SectionRole::Plt { entry_size } = s.role else {
        return None;
    };
    let entry_size = entry_size.max(1);
    let entry = s.address + address.checked_sub(s.address)? / entry_size * entry_size;
    let end = (entry + entry_size).min(s.address.saturating_add(s.size));
    let decoded = decode(image, entry, end)?;
    let slot = decoded
        .iter()
        .flat_map(|d| d.refs.iter())
        .find(|r| matches!(r.use_, Use::Access | Use::Deref | Use::Jump))?
        .address;
    image.dynamic.get(&slot)
}

/// Decodes `[start, end)` of `image` as the checker compares it: by
/// reachability on x86-64 (unreached bytes are data), linearly on AArch64.
pub(crate) fn decode_function(image: &Image, start: u64, end: u64) -> Option<Vec<Decoded>> {
    let bytes = image.bytes(start, end.checked_sub(start)?)?;
    Some(match image.arch {
        Arch::X86_64 => x86::decode_reachable(image, bytes, start),
        Arch::Aarch64 => aarch64::decode_in(image, bytes, start),
    })
}

/// If the code at `start` (up to `end`) is a lone direct jump, optionally
/// after a landing pad (`endbr64`, `bti c`), the jump's target: the shape
/// of an icf thunk.
pub(crate) fn thunk_target(image: &Image, start: u64, end: u64) -> Option<u64> {
    match image.arch {
        Arch::X86_64 => x86::thunk_target(image, start, end),
        Arch::Aarch64 => aarch64::thunk_target(image, start, end),
    }
}

/// The instruction at `address`, disassembled, with its targets named.
pub(crate) fn disassemble(image: &Image, address: u64) -> String {
    let text = match image.arch {
        Arch::X86_64 => x86::disassemble(image, address),
        Arch::Aarch64 => aarch64::disassemble(image, address),
    };
    let Some(text) = text else {
        return format!("<no code at {address:#x}>");
    };
    let targets: Vec<String> = decode_one(image, address)
        .map(|d| d.refs.iter().map(|r| image.describe(r.address)).collect())
        .unwrap_or_default();
    if targets.is_empty() {
        text
    } else {
        format!("{text}  <{}>", targets.join(", "))
    }
}

fn decode_one(image: &Image, address: u64) -> Option<Decoded> {
    let len = match image.arch {
        Arch::X86_64 => 15,
        Arch::Aarch64 => 4,
    };
    let bytes = image
        .bytes(address, len)
        .or_else(|| image.bytes_to_section_end(address))?;
    let decoded = match image.arch {
        Arch::X86_64 => x86::decode(image, bytes, address),
        Arch::Aarch64 => aarch64::decode_in(image, bytes, address),
    };
    decoded.into_iter().next()
}

/// Naming places needs the decoder: a stub is named by the symbol it binds.
impl Image {
    /// A name for `address`: `symbol+offset`, `section+offset` or the number.
    pub fn describe(&self, address: u64) -> String {
        let (containing, _) = self.symbols_around(address);
        if let Some(&id) = containing.first() {
            let s = self.symbol(id);
            return crate::image::plus(&s.name, address - s.address);
        }
        if let Some(section) = self.section_at(address) {
            let s = &self.sections[section];
            if let Some(Slot::Named(name, _)) = plt_slot(self, section, address) {
                return format!(
                    "{} ({name})",
                    crate::image::plus(&s.name, address - s.address)
                );
            }
            return crate::image::plus(&s.name, address - s.address);
        }
        format!("{address:#x}")
    }
}
