//! Landing pads: code the unwinder enters, found through `.eh_frame` (each
//! FDE's LSDA; Mach-O's `__eh_frame` likewise, and the LSDA index of its
//! `__unwind_info`) and the LSDA's call-site table (`.gcc_except_table`). No
//! branch reaches a landing pad, so the reachability walk needs them as
//! entries. Main assumption: LSDAs in the GCC format (an omitted or
//! absolute `@LPStart`, call-site fields in a DWARF pointer encoding);
//! anything unreadable yields no landing pads for that FDE, which only
//! leaves its pads to be compared as data.

use gimli::{BaseAddresses, CieOrFde, EhFrame, Pointer, UnwindSection};

use crate::image::Image;

/// Every landing pad of `image`, unsorted: from `.eh_frame` (Mach-O:
/// `__TEXT,__eh_frame`) and Mach-O's `__TEXT,__unwind_info`.
pub(crate) fn landing_pads(image: &Image) -> Vec<u64> {
    let mut pads = Vec::new();
    unwind_info_pads(image, &mut pads);
    let named = |names: [&str; 2]| {
        image
            .sections
            .iter()
            .find(|s| names.contains(&s.name.as_str()))
    };
    let Some(section) = named([".eh_frame", "__TEXT,__eh_frame"]) else {
        return pads;
    };
    let Some(data) = image.bytes(section.address, section.size) else {
        return pads;
    };
    let mut bases = BaseAddresses::default().set_eh_frame(section.address);
    if let Some(text) = named([".text", "__TEXT,__text"]) {
        bases = bases.set_text(text.address);
    }
    if let Some(got) = named([".got", "__DATA_CONST,__got"]) {
        bases = bases.set_got(got.address);
    }
    let eh_frame = EhFrame::new(data, gimli::LittleEndian);
    let mut entries = eh_frame.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) =
            partial.parse(|section, bases, offset| section.cie_from_offset(bases, offset))
        else {
            continue;
        };
        // An FDE that covers nothing (a function `icf shrink` removed keeps
        // its FDE, emptied) has no call site the unwinder can be in.
        if fde.len() == 0 {
            continue;
        }
        let lsda = match fde.lsda() {
            Some(Pointer::Direct(address)) => address,
            Some(Pointer::Indirect(slot)) => match image.read_pointer(slot) {
                Some(address) => address,
                None => continue,
            },
            None => continue,
        };
        call_site_pads(image, lsda, fde.initial_address(), &mut pads);
    }
    pads
}

/// The landing pads of the LSDAs Mach-O's `__TEXT,__unwind_info` lists:
/// its LSDA index, (function, LSDA) pairs of 32-bit offsets from the
/// Mach header ([`Image::image_base`]), runs from the first first-level
/// index entry's LSDA offset to the last (sentinel) entry's.
fn unwind_info_pads(image: &Image, pads: &mut Vec<u64>) {
    let Some(section) = image
        .sections
        .iter()
        .find(|s| s.name == "__TEXT,__unwind_info")
    else {
        return;
    };
    let Some(data) = image.bytes(section.address, section.size) else {
        return;
    };
    let word = |at: usize| -> Option<u32> {
        let bytes = data.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes(bytes.try_into().ok()?))
    };
    let (Some(1), Some(index_at), Some(index_count)) = (word(0), word(20), word(24)) else {
        return;
    };
    let Some(last) = index_count.checked_sub(1) else {
        return;
    };
    let entry = |i: u32| (index_at as usize).checked_add(i as usize * 12);
    let (Some(first), Some(sentinel)) = (
        entry(0).and_then(|at| word(at + 8)),
        entry(last).and_then(|at| word(at + 8)),
    ) else {
        return;
    };
    for at in (first as usize..sentinel as usize).step_by(8) {
        let (Some(function), Some(lsda)) = (word(at), word(at + 4)) else {
            return;
        };
        let base = image.image_base;
        call_site_pads(
            image,
            base.wrapping_add(u64::from(lsda)),
            base.wrapping_add(u64::from(function)),
            pads,
        );
    }
}

/// The landing pads of the LSDA at `lsda` of a function starting at `start`.
fn call_site_pads(image: &Image, lsda: u64, start: u64, pads: &mut Vec<u64>) {
    let Some(bytes) = image.bytes_to_section_end(lsda) else {
        return;
    };
    let mut reader = Reader { bytes, at: 0 };
    let Some(lp_start_encoding) = reader.u8() else {
        return;
    };
    let lp_start = if lp_start_encoding == DW_EH_PE_OMIT {
        start
    } else if lp_start_encoding & 0x70 == 0 {
        match reader.encoded(lp_start_encoding) {
            Some(value) => value,
            None => return,
        }
    } else {
        return;
    };
    let Some(ttype_encoding) = reader.u8() else {
        return;
    };
    if ttype_encoding != DW_EH_PE_OMIT && reader.uleb128().is_none() {
        return;
    }
    let Some(call_site_encoding) = reader.u8() else {
        return;
    };
    let Some(table_len) = reader.uleb128() else {
        return;
    };
    let Some(end) = reader.at.checked_add(table_len as usize) else {
        return;
    };
    while reader.at < end {
        let (Some(_), Some(_), Some(pad), Some(_)) = (
            reader.encoded(call_site_encoding),
            reader.encoded(call_site_encoding),
            reader.encoded(call_site_encoding),
            reader.uleb128(),
        ) else {
            return;
        };
        if pad != 0 {
            pads.push(lp_start.wrapping_add(pad));
        }
    }
}

const DW_EH_PE_OMIT: u8 = 0xff;

/// A cursor over an LSDA.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(slice)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn uleb128(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    fn sleb128(&mut self) -> Option<u64> {
        let mut value = 0i64;
        let mut shift = 0;
        loop {
            let byte = self.u8()?;
            if shift < 64 {
                value |= i64::from(byte & 0x7f) << shift;
            }
            shift += 7;
            if byte & 0x80 == 0 {
                if shift < 64 && byte & 0x40 != 0 {
                    value |= -1i64 << shift;
                }
                return Some(value as u64);
            }
        }
    }

    /// A value in DWARF pointer encoding `encoding`, its format only (the
    /// call-site fields are offsets, whatever their application bits say).
    fn encoded(&mut self, encoding: u8) -> Option<u64> {
        let fixed = |reader: &mut Self, n: usize| {
            let b = reader.take(n)?;
            let mut word = [0u8; 8];
            word[..n].copy_from_slice(b);
            Some(u64::from_le_bytes(word))
        };
        let sign = |value: u64, bits: u32| ((value << (64 - bits)) as i64 >> (64 - bits)) as u64;
        match encoding & 0x0f {
            0x00 => fixed(self, 8),
            0x01 => self.uleb128(),
            0x02 => fixed(self, 2),
            0x03 => fixed(self, 4),
            0x04 => fixed(self, 8),
            0x09 => self.sleb128(),
            0x0a => fixed(self, 2).map(|v| sign(v, 16)),
            0x0b => fixed(self, 4).map(|v| sign(v, 32)),
            0x0c => fixed(self, 8),
            _ => None,
        }
    }
}
