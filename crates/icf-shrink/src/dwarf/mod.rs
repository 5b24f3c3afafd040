//! Debug information kept through compaction: every address DWARF holds
//! into code that moved is rewritten, so that each kept instruction
//! symbolizes to the function, file and line it did before.
//!
//! What moves is described by [`Layout`]: kept functions move down whole,
//! removed ones vanish (their addresses become the kept copy's), thunks
//! shrink to a jump. DWARF says where code is in two ways, and each is
//! rewritten its own way:
//! - **Absolute addresses** (`DW_FORM_addr`, `.debug_addr` entries, the
//!   words of `.debug_ranges`/`.debug_loc`, `DW_LNE_set_address`, list
//!   entries' addresses): mapped by the role the structure gives them
//!   ([`Role`]): a range's start, a range's end, or a point.
//! - **Relative ones** (`DW_AT_high_pc` as a length, `DW_RLE_offset_pair`
//!   from a base, `*_length` entries, `.debug_aranges` lengths,
//!   `.debug_frame` FDEs' ranges, the
//!   address advances of a line program): recomputed from the mapped ends
//!   and written in the same number of bytes (a LEB128 keeps its width,
//!   with continuation bits), so no section changes size but
//!   `.debug_line`, whose programs are encoded again when their rows move
//!   apart ([`line`]); `DW_AT_stmt_list` follows them.
//!
//! A range keeps exactly the bytes it covered that are still there
//! ([`AddressMap::range`]): a removed function's own range becomes empty,
//! a compilation unit's range closes up over what was removed from it.
//! A removed function's line rows are dropped (a sequence of its own is
//! given the tombstone address, `-1`, which gimli and LLVM skip): a
//! debugger setting a breakpoint on its lines stops nowhere, where lld
//! (which points them at the kept copy) stops in the kept copy; in
//! exchange no address of OUT has two line rows, and every kept function
//! symbolizes to its own file and line. Points (a label, a call site's
//! return address) in removed code become 0, as lld writes for folded
//! sections.
//!
//! The kept relocations of the DWARF sections (`-q`) name every
//! absolute address there; those the structure did not account for
//! (`DW_OP_addr` in an expression) are mapped as points, and one in a
//! section icf does not rewrite is an error. Any error leaves the DWARF
//! out of OUT (its sections empty, as before debug info was kept), and
//! `icf shrink` says why.

mod info;
mod line;

use crate::layout::{Fate, Layout};
use crate::patch::Rewritten;
use anyhow::{Context, bail};
use icf_object::linked_elf::{Elf, SymbolInfo};
use std::collections::HashMap;

/// How an address is used, which decides where it goes when the code at
/// it is removed or the bytes before it are.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    /// The first address of a range.
    Start,
    /// One past the last address of a range.
    End,
    /// One instruction: a label, a return address.
    Point,
}

/// Where the addresses of the segment holding `.text` go, for DWARF.
pub(crate) struct AddressMap<'a> {
    layout: &'a Layout,
}

/// The address a point in removed code is given.
const REMOVED_POINT: u64 = 0;

impl<'a> AddressMap<'a> {
    pub(crate) fn new(layout: &'a Layout) -> AddressMap<'a> {
        AddressMap { layout }
    }

    fn piece(&self, address: u64) -> Option<&crate::layout::Piece> {
        self.layout
            .piece_index_at(address)
            .map(|i| &self.layout.pieces[i])
    }

    /// Whether `address` lies where things move: `.text` up to the end
    /// of its segment, the end included, and the exception tables'
    /// region with what follows them (`Layout::region`).
    pub(crate) fn in_moving_region(&self, address: u64) -> bool {
        let end = self.layout.tail_end.max(self.layout.text_end);
        (self.layout.text_start..=end).contains(&address)
            || self
                .layout
                .region
                .as_ref()
                .is_some_and(|region| (region.start..region.end).contains(&address))
    }

    /// Outside `.text`: the tail moves down; the gap after `.text` (and
    /// `.text`'s end, where no tail starts) closes onto `.text`'s new end.
    fn outside_text(&self, address: u64) -> u64 {
        let layout = self.layout;
        if layout.tail_start < layout.tail_end
            && (layout.tail_start..=layout.tail_end).contains(&address)
        {
            return address - layout.tail_delta;
        }
        if (layout.text_end..layout.tail_start.max(layout.text_end + 1)).contains(&address) {
            return layout.new_text_end;
        }
        layout.map(address)
    }

    /// Where a range starting at `address` starts: the first byte still
    /// there at or after it.
    pub(crate) fn start(&self, address: u64) -> u64 {
        match self.piece(address) {
            Some(piece) => match piece.fate {
                Fate::Keep => piece.new_start + (address - piece.start),
                Fate::Thunk(_) if address == piece.start => piece.new_start,
                Fate::Thunk(_) => piece.new_start + piece.thunk_size,
                Fate::Alias(_) | Fate::Padding => piece.new_start,
            },
            None => self.outside_text(address),
        }
    }

    /// Where a range ending at `address` (exclusive) ends: one past the
    /// last byte still there before it.
    pub(crate) fn end(&self, address: u64) -> u64 {
        let Some(last) = address.checked_sub(1) else {
            return address;
        };
        match self.piece(last) {
            Some(piece) => match piece.fate {
                Fate::Keep => piece.new_start + (address - piece.start),
                Fate::Thunk(_) => piece.new_start + piece.thunk_size,
                Fate::Alias(_) | Fate::Padding => piece.new_start,
            },
            None if (self.layout.text_end..self.layout.tail_start).contains(&last) => {
                self.layout.new_text_end
            }
            None if self.in_moving_region(last) => self.outside_text(last) + 1,
            None => address,
        }
    }

    /// Where one instruction's address goes: [`REMOVED_POINT`] when it
    /// was removed.
    pub(crate) fn point(&self, address: u64) -> u64 {
        match self.piece(address).map(|piece| (piece.fate, piece.start)) {
            Some((Fate::Alias(_), _)) => REMOVED_POINT,
            Some((Fate::Thunk(_), start)) if address != start => REMOVED_POINT,
            _ => self.start(address),
        }
    }

    /// Where `address` goes in `role`.
    pub(crate) fn map(&self, role: Role, address: u64) -> u64 {
        match role {
            Role::Start => self.start(address),
            Role::End => self.end(address),
            Role::Point => self.point(address),
        }
    }

    /// The range `start..end` after compaction: the bytes of it still
    /// there (empty, at the first byte after it, when none is).
    pub(crate) fn range(&self, start: u64, end: u64) -> (u64, u64) {
        let new_start = self.start(start);
        let new_end = if end > start {
            self.end(end).max(new_start)
        } else {
            new_start
        };
        (new_start, new_end)
    }

    /// Whether `start..end` moves as one block: every byte of it is
    /// still there and at the same distance from the others.
    pub(crate) fn rigid(&self, start: u64, end: u64) -> bool {
        if end <= start {
            return self.piece(start).is_none_or(|p| p.fate == Fate::Keep);
        }
        let layout = self.layout;
        let (first, last) = (layout.piece_index_at(start), layout.piece_index_at(end - 1));
        match (first, last) {
            (Some(first), Some(last)) => (first..=last).all(|i| {
                let piece = &layout.pieces[i];
                piece.fate == Fate::Keep
                    && (i == last || {
                        let next = &layout.pieces[i + 1];
                        next.new_start - piece.new_start == next.start - piece.start
                    })
            }),
            (None, None) => {
                let in_text = |a: u64| (layout.text_start..layout.text_end).contains(&a);
                // Both outside .text: the same side of it, and not across the gap.
                !in_text(start)
                    && (end <= layout.text_start
                        || start >= layout.tail_start && end <= layout.tail_end
                        || start >= layout.tail_end.max(layout.text_end))
                    && layout
                        .region
                        .as_ref()
                        .is_none_or(|region| region.rigid(start, end))
            }
            _ => false,
        }
    }

    /// Whether all of `start..end` lies in one removed function (or a
    /// thunk's old body).
    pub(crate) fn removed(&self, start: u64, end: u64) -> bool {
        let layout = self.layout;
        match (
            layout.piece_index_at(start),
            layout.piece_index_at(end.max(start + 1) - 1),
        ) {
            (Some(first), Some(last)) => {
                first == last
                    && matches!(layout.pieces[first].fate, Fate::Alias(_) | Fate::Thunk(_))
            }
            _ => false,
        }
    }
}

/// The DWARF sections icf reads and rewrites, by name.
pub(crate) const ADDRESS_SECTIONS: [&str; 9] = [
    ".debug_frame",
    ".debug_info",
    ".debug_addr",
    ".debug_ranges",
    ".debug_rnglists",
    ".debug_loc",
    ".debug_loclists",
    ".debug_line",
    ".debug_aranges",
];

/// The DWARF sections being rewritten: a copy of each, the fields written
/// so far, and the map.
pub(crate) struct Rewrite<'a, 'data> {
    elf: &'a Elf<'data>,
    map: AddressMap<'a>,
    /// Copies of the sections written, by section index.
    copies: Vec<Option<Vec<u8>>>,
    /// The offsets of the fields written, a bit per byte of each section
    /// (`None` for a section read whole, `.debug_line`): the kept
    /// relocations that name them are accounted for.
    written: Vec<Option<Vec<u64>>>,
    /// `.debug_addr` entries by offset, with the role given them and the
    /// address written.
    addr_entries: HashMap<u64, AddrEntry>,
}

impl<'a, 'data> Rewrite<'a, 'data> {
    fn section(&self, name: &str) -> Option<usize> {
        self.elf.section_named(name)
    }

    /// The bytes of `index` as IN has them.
    fn original(&self, index: usize) -> &'data [u8] {
        self.elf.bytes(index)
    }

    /// The copy of section `index` being written.
    fn copy(&mut self, index: usize) -> &mut Vec<u8> {
        let elf = self.elf;
        self.copies[index].get_or_insert_with(|| elf.bytes(index).to_vec())
    }

    /// Records that the field at `offset` of section `index` was written.
    fn mark(&mut self, index: usize, offset: u64) {
        let size = self.elf.sections[index].size;
        if let Some(bits) = self.written[index]
            .get_or_insert_with(|| vec![0; size.div_ceil(64) as usize])
            .get_mut((offset / 64) as usize)
        {
            *bits |= 1 << (offset % 64);
        }
    }

    /// Whether the field at `offset` of section `index` was written.
    fn is_written(&self, index: usize, offset: u64) -> bool {
        self.written[index]
            .as_ref()
            .and_then(|bits| bits.get((offset / 64) as usize))
            .is_some_and(|bits| bits & (1 << (offset % 64)) != 0)
    }

    /// Writes `value` into the `size`-byte little-endian field at
    /// `offset` of section `index`.
    fn write(&mut self, index: usize, offset: u64, size: u64, value: u64) -> anyhow::Result<()> {
        if size < 8 && value >> (8 * size) != 0 {
            bail!(
                "{}+{offset:#x}: {value:#x} does not fit the field's {size} bytes",
                self.elf.sections[index].name
            );
        }
        let bytes = value.to_le_bytes();
        let name = &self.elf.sections[index].name;
        let field = self
            .copy(index)
            .get_mut(offset as usize..(offset + size) as usize)
            .with_context(|| format!("{name}+{offset:#x}: a field past the section's end"))?;
        field.copy_from_slice(&bytes[..size as usize]);
        self.mark(index, offset);
        Ok(())
    }

    /// Writes `value` as an unsigned LEB128 of exactly `size` bytes at
    /// `offset` (continuation bits pad it), for a value whose encoding
    /// must keep its place.
    fn write_uleb(
        &mut self,
        index: usize,
        offset: u64,
        size: u64,
        value: u64,
    ) -> anyhow::Result<()> {
        let name = &self.elf.sections[index].name;
        if size == 0 || size < 10 && value >> (7 * size) != 0 {
            bail!("{name}+{offset:#x}: {value:#x} does not fit the LEB128's {size} bytes");
        }
        let field = self
            .copy(index)
            .get_mut(offset as usize..(offset + size) as usize)
            .with_context(|| format!("{name}+{offset:#x}: a LEB128 past the section's end"))?;
        encode_uleb_fixed(field, value);
        self.mark(index, offset);
        Ok(())
    }

    /// Writes `new` over the LEB128 `field` (offset, size, value) of
    /// section `index` when it differs, in the same bytes.
    fn rewrite_uleb(
        &mut self,
        index: usize,
        field: (u64, u64, u64),
        new: u64,
    ) -> anyhow::Result<()> {
        let (offset, size, old) = field;
        if new == old {
            return Ok(());
        }
        self.write_uleb(index, offset, size, new)
    }

    /// Gives the `.debug_addr` entry at `offset` (holding `address`) its
    /// role. A compiler names one place once, so an entry can be a range's
    /// start and a point (a subprogram's start and an inlined call's entry);
    /// the two differ only in removed code, where the range decides (a
    /// point there matters to no symbolizer). An entry that starts one range
    /// and ends another where those differ is an error.
    fn addr_entry(
        &mut self,
        offset: u64,
        size: u64,
        address: u64,
        role: Role,
    ) -> anyhow::Result<u64> {
        let new = self.map.map(role, address);
        match self.addr_entries.get(&offset) {
            Some(other) if other.new == new || role == Role::Point => Ok(other.new),
            Some(other) if other.role != Role::Point => bail!(
                ".debug_addr+{offset:#x}: {address:#x} is used as {:?} and as {role:?}, \
                 which move it to different places",
                other.role
            ),
            _ => {
                self.addr_entries
                    .insert(offset, AddrEntry { role, new, size });
                Ok(new)
            }
        }
    }
}

/// A `.debug_addr` entry's role and new address.
#[derive(Copy, Clone, Debug)]
struct AddrEntry {
    role: Role,
    new: u64,
    size: u64,
}

/// Reads little-endian fields and LEB128s of a section from `at` on.
pub(crate) struct Cursor<'data> {
    pub bytes: &'data [u8],
    pub at: u64,
}

impl Cursor<'_> {
    /// The `size`-byte little-endian field here.
    pub(crate) fn fixed(&mut self, size: u64) -> anyhow::Result<u64> {
        let at = self.at;
        let field = self
            .bytes
            .get(at as usize..at.saturating_add(size) as usize)
            .with_context(|| format!("+{at:#x}: past the section's end"))?;
        let mut word = [0u8; 8];
        word[..size as usize].copy_from_slice(field);
        self.at += size;
        Ok(u64::from_le_bytes(word))
    }

    /// As [`Cursor::fixed`], with where the field is: (offset, value).
    pub(crate) fn field(&mut self, size: u64) -> anyhow::Result<(u64, u64)> {
        let at = self.at;
        Ok((at, self.fixed(size)?))
    }

    pub(crate) fn uleb(&mut self) -> anyhow::Result<u64> {
        Ok(self.uleb_field()?.2)
    }

    /// An unsigned LEB128 and where it is: (offset, size, value).
    pub(crate) fn uleb_field(&mut self) -> anyhow::Result<(u64, u64, u64)> {
        let at = self.at;
        let (value, size) = self.leb(|r| gimli::leb128::read::unsigned(r))?;
        Ok((at, size, value))
    }

    pub(crate) fn sleb(&mut self) -> anyhow::Result<i64> {
        Ok(self.leb(|r| gimli::leb128::read::signed(r))?.0)
    }

    /// A LEB128 read by gimli's `read`, and its size.
    fn leb<T>(
        &mut self,
        read: impl FnOnce(&mut gimli::EndianSlice<'_, gimli::LittleEndian>) -> gimli::Result<T>,
    ) -> anyhow::Result<(T, u64)> {
        let at = self.at;
        let rest = self.bytes.get(at as usize..).unwrap_or_default();
        let mut reader = gimli::EndianSlice::new(rest, gimli::LittleEndian);
        let value = read(&mut reader).map_err(|e| anyhow::anyhow!("+{at:#x}: {e}"))?;
        let size = (rest.len() - reader.len()) as u64;
        self.at += size;
        Ok((value, size))
    }

    pub(crate) fn skip(&mut self, size: u64) {
        self.at += size;
    }
}

/// The `size`-byte little-endian field at `at` of `bytes` (of section `name`).
fn read_field(bytes: &[u8], name: &str, at: u64, size: u64) -> anyhow::Result<u64> {
    Cursor { bytes, at }
        .fixed(size)
        .with_context(|| name.to_string())
}

/// Encodes `value` in all of `field` as an unsigned LEB128.
fn encode_uleb_fixed(field: &mut [u8], value: u64) {
    let mut rest = value;
    let last = field.len() - 1;
    for (i, byte) in field.iter_mut().enumerate() {
        *byte = (rest & 0x7f) as u8 | if i < last { 0x80 } else { 0 };
        rest = rest.checked_shr(7).unwrap_or(0);
    }
}

/// The DWARF of `elf` rewritten for `layout`: the sections with new
/// bytes. An error means it cannot be kept (see the module's header).
pub(crate) fn rewrite(
    elf: &Elf<'_>,
    layout: &Layout,
    symbols: &[SymbolInfo],
) -> anyhow::Result<Rewritten> {
    let debug: Vec<usize> = (0..elf.sections.len())
        .filter(|&i| icf_object::linked_elf::is_debug(&elf.sections[i]) && elf.sections[i].size > 0)
        .collect();
    if debug.is_empty() {
        return Ok(Vec::new());
    }
    for &index in &debug {
        let section = &elf.sections[index];
        if section.flags & object::elf::SHF_COMPRESSED.0 != 0 || section.name.starts_with(".zdebug")
        {
            bail!(
                "{} is compressed, and icf does not rewrite compressed DWARF",
                section.name
            );
        }
    }
    for name in [".debug_types", ".gdb_index"] {
        if elf.section_named(name).is_some() {
            bail!("icf does not rewrite {name}");
        }
    }
    let mut rewrite = Rewrite {
        elf,
        map: AddressMap::new(layout),
        copies: vec![None; elf.sections.len()],
        written: vec![None; elf.sections.len()],
        addr_entries: HashMap::new(),
    };
    // The line programs are read and encoded again on their own, beside
    // the rest: only their offsets tie them to `.debug_info`.
    let line_section = rewrite.section(".debug_line");
    let (programs, references) = rayon::join(
        || {
            line_section.map(|index| {
                line::rewrite(elf.bytes(index), &AddressMap::new(layout))
                    .map_err(|e| e.context(".debug_line"))
            })
        },
        || -> anyhow::Result<info::LineReferences> {
            let references = info::rewrite(&mut rewrite)?;
            aranges(&mut rewrite)?;
            debug_frame(&mut rewrite)?;
            Ok(references)
        },
    );
    let references = references?;
    let mut line_index = None;
    if let (Some(index), Some(programs)) = (line_section, programs) {
        let programs = programs?;
        if programs.bytes != rewrite.original(index) {
            if let Some(info) = rewrite.section(".debug_info") {
                for field in &references.stmt_lists {
                    let new = programs.new_offset(field.value).with_context(|| {
                        format!(
                            ".debug_info+{:#x}: DW_AT_stmt_list {:#x} is no line program's start",
                            field.offset, field.value
                        )
                    })?;
                    if new != field.value {
                        rewrite.write(info, field.offset, field.size, new)?;
                    }
                }
            }
            if programs.moved()
                && let Some(macro_index) = rewrite.section(".debug_macro")
            {
                for &unit in &references.macro_units {
                    macro_line_offset(&mut rewrite, macro_index, unit, &programs)?;
                }
            }
            rewrite.copies[index] = Some(programs.bytes);
        }
        // Every address of .debug_line was read as a row's.
        line_index = Some(index);
    }
    if let Some(addr) = rewrite.section(".debug_addr") {
        let entries: Vec<(u64, AddrEntry)> = rewrite
            .addr_entries
            .iter()
            .map(|(&offset, &entry)| (offset, entry))
            .collect();
        for (offset, entry) in entries {
            rewrite.write(addr, offset, entry.size, entry.new)?;
        }
    }
    relocated_points(&mut rewrite, symbols, line_index)?;
    Ok(rewrite
        .copies
        .into_iter()
        .enumerate()
        .filter_map(|(index, bytes)| Some((index, bytes?)))
        .filter(|(index, bytes)| bytes.as_slice() != elf.bytes(*index))
        .collect())
}

/// The line program a `.debug_macro` unit's header names (when its flags
/// say it names one), moved with it.
fn macro_line_offset(
    rewrite: &mut Rewrite<'_, '_>,
    index: usize,
    unit: u64,
    programs: &line::Programs,
) -> anyhow::Result<()> {
    let bytes = rewrite.original(index);
    let at = |offset: u64, size: u64| read_field(bytes, ".debug_macro", offset, size);
    let flags = at(unit + 2, 1)?;
    if flags & 2 == 0 {
        return Ok(());
    }
    let size = if flags & 1 != 0 { 8 } else { 4 };
    let old = at(unit + 3, size)?;
    let new = programs.new_offset(old).with_context(|| {
        format!(".debug_macro+{unit:#x}: names {old:#x}, which is no line program's start")
    })?;
    rewrite.write(index, unit + 3, size, new)
}

/// `.debug_frame` (what `-fno-asynchronous-unwind-tables` builds describe
/// their frames by): each FDE's (initial location, address range) keeps
/// the bytes of its range still there; a removed function's FDE covers
/// nothing. Its instructions advance from the initial location, within a
/// function that moves whole.
fn debug_frame(rewrite: &mut Rewrite<'_, '_>) -> anyhow::Result<()> {
    let Some(index) = rewrite.section(".debug_frame") else {
        return Ok(());
    };
    let bytes = rewrite.original(index);
    let read = |at: u64, size: u64| read_field(bytes, ".debug_frame", at, size);
    // The address size each CIE gives its FDEs (DWARF 4's CIE says it;
    // earlier ones use the ELF class's).
    let mut address_sizes: HashMap<u64, u64> = HashMap::new();
    let mut at = 0u64;
    while at < bytes.len() as u64 {
        let length = read(at, 4)?;
        if length >= 0xffff_fff0 {
            bail!(".debug_frame+{at:#x}: 64-bit DWARF is not read");
        }
        let end = at + 4 + length;
        if length == 0 {
            at = end;
            continue;
        }
        let id = read(at + 4, 4)?;
        if id == 0xffff_ffff {
            let version = read(at + 8, 1)?;
            let augmentation = read(at + 9, 1)?;
            if augmentation != 0 {
                bail!(".debug_frame+{at:#x}: a CIE with an augmentation");
            }
            let size = if version >= 4 { read(at + 10, 1)? } else { 8 };
            address_sizes.insert(at, size);
        } else {
            let size = *address_sizes
                .get(&id)
                .with_context(|| format!(".debug_frame+{at:#x}: an FDE of no CIE before it"))?;
            let (start_at, range_at) = (at + 8, at + 8 + size);
            let (start, range) = (read(start_at, size)?, read(range_at, size)?);
            if rewrite.map.in_moving_region(start) {
                let (new_start, new_end) = rewrite.map.range(start, start.saturating_add(range));
                rewrite.write(index, start_at, size, new_start)?;
                rewrite.write(index, range_at, size, new_end - new_start)?;
            }
        }
        at = end;
    }
    Ok(())
}

/// `.debug_aranges`: each (address, length) keeps the bytes of its range
/// still there.
fn aranges(rewrite: &mut Rewrite<'_, '_>) -> anyhow::Result<()> {
    let Some(index) = rewrite.section(".debug_aranges") else {
        return Ok(());
    };
    let bytes = rewrite.original(index);
    let read = |at: u64, size: u64| read_field(bytes, ".debug_aranges", at, size);
    let mut set = 0u64;
    while set < bytes.len() as u64 {
        let length = read(set, 4)?;
        if length >= 0xffff_fff0 {
            bail!(".debug_aranges+{set:#x}: 64-bit DWARF is not read");
        }
        let end = set + 4 + length;
        let address_size = read(set + 10, 1)?;
        if address_size != 8 && address_size != 4 {
            bail!(".debug_aranges+{set:#x}: address size {address_size}");
        }
        let mut at = (set + 12).next_multiple_of(2 * address_size);
        while at + 2 * address_size <= end {
            let (address, size) = (
                read(at, address_size)?,
                read(at + address_size, address_size)?,
            );
            if address == 0 && size == 0 {
                break;
            }
            if rewrite.map.in_moving_region(address) {
                let (start, stop) = rewrite.map.range(address, address.saturating_add(size));
                rewrite.write(index, at, address_size, start)?;
                rewrite.write(index, at + address_size, address_size, stop - start)?;
            }
            at += 2 * address_size;
        }
        set = end;
    }
    Ok(())
}

/// The fields of DWARF sections a kept relocation names as addresses
/// that no structure accounted for (`DW_OP_addr` in an expression): each
/// is mapped as a point. One in a section icf does not rewrite is an
/// error.
/// `.debug_line` (`line`), whose addresses were all read as rows', is
/// skipped.
fn relocated_points(
    rewrite: &mut Rewrite<'_, '_>,
    symbols: &[SymbolInfo],
    line: Option<usize>,
) -> anyhow::Result<()> {
    let elf = rewrite.elf;
    let Some(arch) = icf_arch::from_elf_machine(elf.machine) else {
        return Ok(());
    };
    for (rela_index, rela_section) in elf.sections.iter().enumerate() {
        if rela_section.sh_type != object::elf::SHT_RELA.0 {
            continue;
        }
        let target = rela_section.info as usize;
        let Some(section) = elf.sections.get(target) else {
            continue;
        };
        if !icf_object::linked_elf::is_debug(section) || Some(target) == line {
            continue;
        }
        let known = ADDRESS_SECTIONS.contains(&section.name.as_str());
        for rela in elf.relas(rela_index)? {
            let Some(size) = address_size(arch, rela.r_type) else {
                continue;
            };
            // A field naming another DWARF section holds an offset.
            let symbol = symbols.get(rela.sym as usize);
            if symbol.is_some_and(|s| {
                (1..object::elf::SHN_LORESERVE).contains(&s.shndx)
                    && elf
                        .sections
                        .get(s.shndx as usize)
                        .is_some_and(|s| !s.is_alloc())
            }) {
                continue;
            }
            if rewrite.is_written(target, rela.offset) {
                continue;
            }
            let Some(field) = elf
                .bytes(target)
                .get(rela.offset as usize..(rela.offset + size) as usize)
            else {
                bail!(
                    "{}+{:#x}: a relocation past the section's end",
                    section.name,
                    rela.offset
                );
            };
            let mut word = [0u8; 8];
            word[..size as usize].copy_from_slice(field);
            let value = u64::from_le_bytes(word);
            if !rewrite.map.in_moving_region(value) {
                continue;
            }
            if !known {
                bail!(
                    "{}+{:#x}: an address into code that moves ({value:#x}), in a section icf \
                     does not rewrite",
                    section.name,
                    rela.offset
                );
            }
            let new = rewrite.map.point(value);
            rewrite.write(target, rela.offset, size, new)?;
        }
    }
    Ok(())
}

/// The size of the address a relocation of `r_type` writes whole (8 or 4
/// bytes: `arch`'s absolute address relocations), for the relocations
/// DWARF holds addresses by; `None` for the others (offsets into TLS
/// blocks, narrower fields).
fn address_size(arch: &dyn icf_arch::Architecture, r_type: u32) -> Option<u64> {
    match arch.kept_reloc(r_type) {
        icf_arch::KeptReloc::Address {
            size: size @ (4 | 8),
        } => Some(u64::from(size)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::piece;

    /// f 0x1000..0x1010 kept, g 0x1010..0x1020 removed into f, h
    /// 0x1020..0x1030 kept, t 0x1030..0x1040 a thunk to f, k
    /// 0x1040..0x1050 kept; .text's alignment 1; a tail 0x1050..0x1060.
    fn layout() -> Layout {
        Layout::new(
            vec![
                piece(0x1000, 0x1010, Fate::Keep),
                piece(0x1010, 0x1020, Fate::Alias(0)),
                piece(0x1020, 0x1030, Fate::Keep),
                piece(0x1030, 0x1040, Fate::Thunk(0)),
                piece(0x1040, 0x1050, Fate::Keep),
            ],
            0x1000,
            0x1050,
            &crate::layout::Alignments::inferred(1),
            0x1050,
            0x1060,
            1,
            &[],
        )
        .expect("laid out")
    }

    #[test]
    fn a_range_keeps_the_bytes_of_it_still_there() {
        let layout = layout();
        let map = AddressMap::new(&layout);
        // h moves down by g's 16 bytes; k by g's and t's 11 saved.
        assert_eq!(map.range(0x1020, 0x1030), (0x1010, 0x1020));
        assert_eq!(map.range(0x1040, 0x1050), (0x1025, 0x1035));
        // g's own range is empty, where h now starts.
        assert_eq!(map.range(0x1010, 0x1020), (0x1010, 0x1010));
        // t's is its thunk.
        assert_eq!(map.range(0x1030, 0x1040), (0x1020, 0x1025));
        // A unit's range over all of them closes up.
        assert_eq!(map.range(0x1000, 0x1050), (0x1000, 0x1035));
        // The tail moves down as one.
        assert_eq!(map.range(0x1050, 0x1060), (0x1035, 0x1045));
        // An empty range at .text's end, where no tail starts, stays at its end.
        let mut no_tail = layout.clone();
        (no_tail.tail_start, no_tail.tail_end, no_tail.tail_delta) = (0x1050, 0x1050, 0);
        let map = AddressMap::new(&no_tail);
        assert_eq!(map.range(0x1050, 0x1050), (0x1035, 0x1035));
        assert_eq!(map.end(0x1050), 0x1035);
        // Ends that are also starts: f's end is g's start.
        assert_eq!(map.end(0x1010), 0x1010);
        assert_eq!(map.start(0x1010), 0x1010);
        assert_eq!(map.end(0x1040), 0x1025);
        assert_eq!(map.start(0x1040), 0x1025);
    }

    #[test]
    fn a_range_ends_where_its_last_byte_went_not_where_the_next_one_starts() {
        // a 0x1000..0x1010 kept; b 0x1010..0x1018 removed into a; c
        // 0x1018..0x1020 kept, moves down 8; d 0x1020..0x1030 kept, aligned
        // to 32 (.text's alignment), stays: a gap opens between c and d.
        let layout = Layout::new(
            vec![
                piece(0x1000, 0x1010, Fate::Keep),
                piece(0x1010, 0x1018, Fate::Alias(0)),
                piece(0x1018, 0x1020, Fate::Keep),
                piece(0x1020, 0x1030, Fate::Keep),
            ],
            0x1000,
            0x1030,
            &crate::layout::Alignments::inferred(32),
            0x1030,
            0x1030,
            1,
            &[],
        )
        .expect("laid out");
        let map = AddressMap::new(&layout);
        assert_eq!(map.start(0x1020), 0x1020, "d stays");
        assert_eq!(map.end(0x1020), 0x1018, "c ends where its last byte went");
        assert_eq!(map.range(0x1018, 0x1020), (0x1010, 0x1018));
        assert!(!map.rigid(0x1018, 0x1030), "c and d move apart");
    }

    #[test]
    fn a_point_in_removed_code_is_given_the_removed_address() {
        let layout = layout();
        let map = AddressMap::new(&layout);
        assert_eq!(map.point(0x1004), 0x1004);
        assert_eq!(map.point(0x1014), REMOVED_POINT);
        assert_eq!(map.point(0x1030), 0x1020);
        assert_eq!(map.point(0x1034), REMOVED_POINT);
        assert_eq!(map.point(0x1044), 0x1029);
    }

    #[test]
    fn only_what_moves_as_one_block_is_rigid() {
        let layout = layout();
        let map = AddressMap::new(&layout);
        assert!(map.rigid(0x1000, 0x1010));
        assert!(map.rigid(0x1020, 0x1030));
        assert!(!map.rigid(0x1000, 0x1030), "g between f and h is removed");
        assert!(!map.rigid(0x1010, 0x1020), "g is removed");
        assert!(map.rigid(0x1050, 0x1060), "the tail");
        assert!(map.rigid(0x400, 0x800), "before .text");
        assert!(map.removed(0x1010, 0x1020));
        assert!(map.removed(0x1030, 0x1040));
        assert!(!map.removed(0x1000, 0x1010));
    }

    #[test]
    fn a_leb128_keeps_its_width() {
        let mut field = [0u8; 3];
        encode_uleb_fixed(&mut field, 5);
        assert_eq!(field, [0x85, 0x80, 0x00]);
        let mut reader = gimli::EndianSlice::new(&field, gimli::LittleEndian);
        assert_eq!(gimli::Reader::read_uleb128(&mut reader).ok(), Some(5));
    }
}
