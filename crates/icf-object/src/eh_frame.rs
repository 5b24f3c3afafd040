//! `.eh_frame` in a relocatable object: which FDE describes which function,
//! and which LSDA (exception table) it names. gimli parses the entries; the
//! function and the LSDA come from the relocations on the FDE's fields, since
//! in an object those fields hold zero until the linker patches them.

use crate::error::{Error, Result};
use crate::model::{RelocIndex, Section};
use gimli::{BaseAddresses, CieOrFde, EhFrame, UnwindSection};

/// One frame description entry.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Fde {
    /// Offset of the entry (its length field) in `.eh_frame`.
    pub offset: u64,
    /// Size of the whole entry, length field included.
    pub size: u64,
    /// Offset and size of the CIE it uses.
    pub cie_offset: u64,
    pub cie_size: u64,
    /// Index, in the section's relocations, of the one that locates the function.
    pub pc_begin: Option<RelocIndex>,
    /// Size of the described code, in bytes.
    pub pc_range: u64,
    /// Index of the relocation that locates the LSDA, when the FDE has one.
    pub lsda: Option<RelocIndex>,
    /// Which table the entry is in, and what it says besides its references.
    pub kind: UnwindKind,
}

/// The table an unwind entry comes from.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum UnwindKind {
    /// An FDE of `.eh_frame`, with its CIE.
    EhFrame,
    /// A 32-byte record of Mach-O's `__compact_unwind`: function, length,
    /// encoding, personality, LSDA. `personality` is the relocation naming
    /// the personality routine; `dwarf` says the encoding defers to an FDE
    /// in `__eh_frame`, which icf does not compare (see [`Fde::description`]).
    CompactUnwind {
        encoding: u32,
        personality: Option<RelocIndex>,
        dwarf: bool,
    },
}

impl Fde {
    /// The CIE's and the FDE's bytes as two functions' unwind descriptions
    /// compare them (`section` is `.eh_frame`): every relocated field
    /// zeroed (what it names is compared as a reference, see
    /// [`Fde::references`]), and nothing that depends on where the entry or
    /// the function sits: the CIE pointer (a distance within this section),
    /// the address range (the body's size, which the body comparison
    /// covers), the length fields and the trailing `DW_CFA_nop` padding
    /// (entries are padded with zeros to the address size; CFA instructions
    /// delimit themselves, so two valid sequences that differ only in
    /// trailing zeros differ only in nops).
    ///
    /// A compact unwind record compares by its encoding; one whose encoding
    /// defers to `__eh_frame` (DWARF mode) carries its own place, so that it
    /// equals no other: icf does not read Mach-O FDEs, so such functions
    /// never fold.
    pub fn description(&self, section: &Section<'_>) -> (Vec<u8>, Vec<u8>) {
        if let UnwindKind::CompactUnwind {
            encoding, dwarf, ..
        } = self.kind
        {
            let mut record = encoding.to_le_bytes().to_vec();
            if dwarf {
                record.extend_from_slice(b"dwarf");
                record.extend_from_slice(&self.offset.to_le_bytes());
            }
            return (Vec::new(), record);
        }
        let bytes_of = |start: u64, size: u64| -> Vec<u8> {
            let mut bytes = section
                .data
                .get(start as usize..(start + size) as usize)
                .unwrap_or_default()
                .to_vec();
            let first = section.relocs.partition_point(|r| r.offset < start);
            for reloc in section.relocs[first..]
                .iter()
                .take_while(|r| r.offset < start + size)
            {
                let at = (reloc.offset - start) as usize;
                icf_ir::clear_field(&mut bytes, at, reloc.size, u64::MAX);
            }
            bytes
        };
        let mut cie = bytes_of(self.cie_offset, self.cie_size);
        let mut fde = bytes_of(self.offset, self.size);
        if let Some(pointer) = fde.get_mut(4..8) {
            pointer.fill(0);
        }
        if let Some(pc_begin) = self.pc_begin {
            let field = usize::from(section.reloc(pc_begin).size);
            let range_start = (section.reloc(pc_begin).offset - self.offset) as usize + field;
            if let Some(range) = fde.get_mut(range_start..range_start + field) {
                range.fill(0);
            }
        }
        for entry in [&mut cie, &mut fde] {
            if let Some(length) = entry.get_mut(0..4) {
                length.fill(0);
            }
            let end = entry
                .iter()
                .rposition(|&b| b != 0)
                .map_or(0, |last| last + 1);
            entry.truncate(end);
        }
        (cie, fde)
    }

    /// The relocations (indices into `section.relocs`) whose targets the
    /// description names: the CIE's (its personality routine), then the
    /// FDE's LSDA.
    pub fn references(&self, section: &Section<'_>) -> impl Iterator<Item = RelocIndex> {
        let personality = match self.kind {
            UnwindKind::CompactUnwind { personality, .. } => personality,
            UnwindKind::EhFrame => None,
        };
        let cie_first = section
            .relocs
            .partition_point(|r| r.offset < self.cie_offset);
        let cie_end = self.cie_offset + self.cie_size;
        let cie_count = section.relocs[cie_first..]
            .iter()
            .take_while(|r| r.offset < cie_end)
            .count();
        (cie_first..cie_first + cie_count)
            .map(|index| RelocIndex(index as u32))
            .chain(personality)
            .chain(self.lsda)
    }
}

/// Parses every FDE of `section`. The caller adds the section to errors.
pub fn parse(section: &Section<'_>) -> Result<Vec<Fde>> {
    let eh_frame = EhFrame::new(section.data, gimli::LittleEndian);
    let bases = BaseAddresses::default().set_eh_frame(0);
    let mut entries = eh_frame.entries(&bases);
    let mut fdes = Vec::new();
    let mut cie_sizes = rustc_hash::FxHashMap::default();
    loop {
        let entry = match entries.next() {
            Ok(Some(entry)) => entry,
            Ok(None) => break,
            Err(e) => return Err(Error::new(format!("bad .eh_frame entry: {e}"))),
        };
        match entry {
            CieOrFde::Cie(cie) => {
                cie_sizes.insert(
                    cie.offset() as u64,
                    entry_size(section.data, cie.offset() as u64, cie.entry_len() as u64),
                );
            }
            CieOrFde::Fde(partial) => {
                let offset = partial.offset() as u64;
                let fde = partial
                    .parse(|section, bases, offset| section.cie_from_offset(bases, offset))
                    .map_err(|e| Error::new(format!("bad FDE: {e}")).at_offset(offset))?;
                let size = entry_size(section.data, offset, fde.entry_len() as u64);
                let cie_offset = fde.cie().offset() as u64;
                let cie_size = match cie_sizes.get(&cie_offset) {
                    Some(size) => *size,
                    None => entry_size(section.data, cie_offset, fde.cie().entry_len() as u64),
                };
                // The relocations inside the entry, in field order: the function, then the LSDA.
                let first = section.relocs.partition_point(|r| r.offset < offset);
                let last = section.relocs.partition_point(|r| r.offset < offset + size);
                let inside = first..last;
                let pc_begin = (!inside.is_empty()).then_some(RelocIndex(inside.start as u32));
                let lsda = if fde.lsda().is_some() && inside.len() >= 2 {
                    Some(RelocIndex(inside.start as u32 + 1))
                } else {
                    None
                };
                fdes.push(Fde {
                    offset,
                    size,
                    cie_offset,
                    cie_size,
                    pc_begin,
                    pc_range: fde.len(),
                    lsda,
                    kind: UnwindKind::EhFrame,
                });
            }
        }
    }
    Ok(fdes)
}

/// The size of an entry whose length field says `entry_len`, length field included.
fn entry_size(data: &[u8], offset: u64, entry_len: u64) -> u64 {
    let is_64 = data.get(offset as usize..offset as usize + 4) == Some(&[0xff; 4][..]);
    entry_len + if is_64 { 12 } else { 4 }
}

/// The framing of one `.eh_frame` entry, for rewriting: where it is, and for
/// an FDE where its CIE is and where the CIE pointer field sits.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Entry {
    pub offset: u64,
    /// Size with the length field.
    pub size: u64,
    /// For an FDE: the offset of its CIE.
    pub cie_offset: Option<u64>,
    /// Offset of the CIE pointer (or CIE id) field within the entry.
    pub cie_pointer_at: u64,
}

/// Every entry of `.eh_frame` in order, up to a zero terminator.
pub fn entries(data: &[u8]) -> Result<Vec<Entry>> {
    let mut entries = Vec::new();
    let mut offset = 0usize;
    let read_u32 = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
    };
    while offset + 4 <= data.len() {
        let length = read_u32(offset)
            .ok_or_else(|| Error::new("truncated .eh_frame entry").at_offset(offset as u64))?;
        if length == 0 {
            break;
        }
        let (header, length) = if length == u32::MAX {
            let long = data
                .get(offset + 4..offset + 12)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
                .ok_or_else(|| Error::new("truncated .eh_frame entry").at_offset(offset as u64))?;
            (12usize, long as usize)
        } else {
            (4usize, length as usize)
        };
        let size = header
            .checked_add(length)
            .filter(|&s| offset + s <= data.len())
            .ok_or_else(|| {
                Error::new("an .eh_frame entry runs past the end of the section")
                    .at_offset(offset as u64)
            })?;
        if header == 12 {
            return Err(
                Error::new("64-bit .eh_frame entries are not supported").at_offset(offset as u64)
            );
        }
        let id_at = offset + header;
        let id = read_u32(id_at)
            .ok_or_else(|| Error::new("truncated .eh_frame entry").at_offset(offset as u64))?;
        let cie_offset = if id == 0 {
            None
        } else {
            let cie = (id_at as u64).checked_sub(u64::from(id)).ok_or_else(|| {
                Error::new("an FDE's CIE pointer points before the section")
                    .at_offset(offset as u64)
            })?;
            Some(cie)
        };
        entries.push(Entry {
            offset: offset as u64,
            size: size as u64,
            cie_offset,
            cie_pointer_at: header as u64,
        });
        offset += size;
    }
    Ok(entries)
}
