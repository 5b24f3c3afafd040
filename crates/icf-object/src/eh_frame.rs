//! `.eh_frame` in a relocatable object: which FDE describes which function,
//! and which LSDA (exception table) it names. gimli parses the entries; the
//! function and the LSDA come from the relocations on the FDE's fields, since
//! in an object those fields hold zero until the linker patches them.

use crate::elf::Section;
use crate::error::{Error, Result};
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
    pub pc_begin: Option<usize>,
    /// Size of the described code, in bytes.
    pub pc_range: u64,
    /// Index of the relocation that locates the LSDA, when the FDE has one.
    pub lsda: Option<usize>,
}

/// Parses every FDE of `section`. The caller adds the section to errors.
pub fn parse(section: &Section<'_>) -> Result<Vec<Fde>> {
    let eh_frame = EhFrame::new(section.data, gimli::LittleEndian);
    let bases = BaseAddresses::default().set_eh_frame(0);
    let mut entries = eh_frame.entries(&bases);
    let mut fdes = Vec::new();
    let mut cie_sizes = std::collections::HashMap::new();
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
                let pc_begin = (!inside.is_empty()).then_some(inside.start);
                let lsda = if fde.lsda().is_some() && inside.len() >= 2 {
                    Some(inside.start + 1)
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
