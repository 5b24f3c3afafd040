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
    for (start, _, lsda) in exception_tables(image) {
        call_site_pads(image, lsda, start, &mut pads);
    }
    pads
}

/// Every FDE of `.eh_frame` (Mach-O: `__TEXT,__eh_frame`) that covers
/// code and names an exception table: (the start and end of the code it
/// describes, the table's address), sorted. An FDE that covers nothing (a
/// function `icf shrink` removed keeps its FDE, emptied) has no call site
/// the unwinder can be in.
pub(crate) fn exception_tables(image: &Image) -> Vec<(u64, u64, u64)> {
    let mut tables = Vec::new();
    let named = |names: [&str; 2]| {
        image
            .sections
            .iter()
            .find(|s| names.contains(&s.name.as_str()))
    };
    let Some(section) = named([".eh_frame", "__TEXT,__eh_frame"]) else {
        return tables;
    };
    let Some(data) = image.bytes(section.address, section.size) else {
        return tables;
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
        let lsda = match fde.lsda() {
            Some(Pointer::Direct(address)) => Some(address),
            Some(Pointer::Indirect(slot)) => image.read_pointer(slot),
            None => None,
        };
        if let Some(lsda) = lsda
            && fde.len() > 0
        {
            let start = fde.initial_address();
            tables.push((start, start.wrapping_add(fde.len()), lsda));
        }
    }
    tables.sort_unstable();
    tables
}

/// What the unwinder does in a function, read from its exception table
/// (`LSDA`) so that two images compare: for each call site, where it is
/// and its landing pad, as offsets from the function's start, and what
/// the pad handles. Equal code with different handlers behaves
/// differently when something throws (a folded table that catches
/// another type), which no instruction shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Handlers {
    pub call_sites: Vec<CallSite>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallSite {
    pub start: u64,
    pub length: u64,
    /// The landing pad's offset from the function's start; `None` where
    /// the unwinder goes on to the caller.
    pub pad: Option<u64>,
    pub actions: Vec<Action>,
}

/// One record of a call site's action chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Cleanup,
    Catch(TypeName),
    /// An exception specification: the types it lets through.
    Filter(Vec<TypeName>),
}

/// A type a handler names, as images compare: by the symbol of its
/// `type_info` (or the name the loader binds its slot to), else by
/// address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TypeName {
    /// A null entry: catches everything.
    All,
    Named(String),
    Address(u64),
    Unreadable,
}

/// How many action records a chain may have before it is taken for a
/// loop.
const MAX_ACTIONS: usize = 256;

/// The handlers of the function starting at `function` in `image`: `None`
/// when no FDE with an exception table covers it, `Err` when its table
/// cannot be read.
pub(crate) fn handlers(image: &Image, function: u64) -> Option<Result<Handlers, String>> {
    let tables = &image.exception_tables;
    let at = tables.partition_point(|&(start, _, _)| start <= function);
    let &(start, end, lsda) = tables.get(at.checked_sub(1)?)?;
    if function >= end {
        return None;
    }
    Some(
        read_handlers(image, lsda, start, function)
            .ok_or_else(|| format!("the exception table at {lsda:#x} cannot be read")),
    )
}

fn read_handlers(image: &Image, lsda: u64, fde_start: u64, function: u64) -> Option<Handlers> {
    let bytes = image.bytes_to_section_end(lsda)?;
    let mut reader = Reader { bytes, at: 0 };
    let lp_start_encoding = reader.u8()?;
    let lp_start = if lp_start_encoding == DW_EH_PE_OMIT {
        fde_start
    } else if lp_start_encoding & 0x70 == 0 {
        reader.encoded(lp_start_encoding)?
    } else {
        return None;
    };
    let ttype_encoding = reader.u8()?;
    let ttype_base = if ttype_encoding == DW_EH_PE_OMIT {
        None
    } else {
        let offset = reader.uleb128()?;
        Some(reader.at.checked_add(offset as usize)?)
    };
    let call_site_encoding = reader.u8()?;
    let table_len = reader.uleb128()?;
    let end = reader.at.checked_add(table_len as usize)?;
    let actions_at = end;
    let mut call_sites = Vec::new();
    while reader.at < end {
        let start = reader.encoded(call_site_encoding)?;
        let length = reader.encoded(call_site_encoding)?;
        let pad = reader.encoded(call_site_encoding)?;
        let action = reader.uleb128()?;
        let actions = if action == 0 {
            Vec::new()
        } else {
            let first = actions_at.checked_add(action as usize - 1)?;
            read_actions(image, lsda, bytes, first, ttype_encoding, ttype_base)?
        };
        call_sites.push(CallSite {
            start: fde_start.wrapping_add(start).wrapping_sub(function),
            length,
            pad: (pad != 0).then(|| lp_start.wrapping_add(pad).wrapping_sub(function)),
            actions,
        });
    }
    Some(Handlers { call_sites })
}

/// The action chain starting at offset `first` of the LSDA (at `lsda`).
fn read_actions(
    image: &Image,
    lsda: u64,
    bytes: &[u8],
    first: usize,
    ttype_encoding: u8,
    ttype_base: Option<usize>,
) -> Option<Vec<Action>> {
    let type_name = |index: u64| -> Option<TypeName> {
        let base = ttype_base?;
        let size = match ttype_encoding & 0x0f {
            0x00 | 0x04 | 0x0c => 8,
            0x02 | 0x0a => 2,
            0x03 | 0x0b => 4,
            _ => return None,
        };
        let at = base.checked_sub(usize::try_from(index).ok()?.checked_mul(size)?)?;
        let mut reader = Reader { bytes, at };
        let value = reader.encoded(ttype_encoding)?;
        if value == 0 {
            return Some(TypeName::All);
        }
        let place = lsda.wrapping_add(at as u64);
        let mut address = match ttype_encoding & 0x70 {
            0x00 => value,
            0x10 => place.wrapping_add(value),
            _ => return None,
        };
        if ttype_encoding & 0x80 != 0 {
            match image.dynamic.get(&address) {
                Some(crate::image::Slot::Named(name, 0)) => {
                    return Some(TypeName::Named(name.split('@').next()?.to_owned()));
                }
                _ => address = image.read_pointer(address)?,
            }
        }
        let (containing, _) = image.symbols_around(address);
        Some(
            containing
                .iter()
                .map(|&id| image.symbol(id))
                .find(|symbol| symbol.address == address)
                .map_or(TypeName::Address(address), |symbol| {
                    TypeName::Named(symbol.name.clone())
                }),
        )
    };
    let mut actions = Vec::new();
    let mut reader = Reader { bytes, at: first };
    for _ in 0..MAX_ACTIONS {
        let filter = reader.sleb128()? as i64;
        let next_at = reader.at;
        let next = reader.sleb128()? as i64;
        actions.push(match filter {
            0 => Action::Cleanup,
            f if f > 0 => Action::Catch(type_name(f as u64).unwrap_or(TypeName::Unreadable)),
            f => {
                let mut list = Reader {
                    bytes,
                    at: ttype_base?.checked_add(usize::try_from(-(f + 1)).ok()?)?,
                };
                let mut types = Vec::new();
                for _ in 0..MAX_ACTIONS {
                    let index = list.uleb128()?;
                    if index == 0 {
                        break;
                    }
                    types.push(type_name(index).unwrap_or(TypeName::Unreadable));
                }
                Action::Filter(types)
            }
        });
        if next == 0 {
            return Some(actions);
        }
        reader.at = usize::try_from(next_at as i64 + next).ok()?;
    }
    None
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
