//! `.debug_info` and the lists it names: every DIE's address attributes
//! (`DW_AT_low_pc`/`DW_AT_high_pc` as a range, other addresses as
//! points), and the range and location lists of DWARF 4
//! (`.debug_ranges`, `.debug_loc`) and 5 (`.debug_rnglists`,
//! `.debug_loclists`), whose entries are rewritten in place.

use super::{Cursor, Rewrite, Role};
use anyhow::{Context, bail};
use gimli::{AttributeValue, EndianSlice, LittleEndian};
use std::collections::HashMap;

type Slice<'data> = EndianSlice<'data, LittleEndian>;

/// A `DW_AT_stmt_list` field: where it is, and the line program it names.
pub(super) struct StmtList {
    pub offset: u64,
    pub size: u64,
    pub value: u64,
}

/// Where an address is held: in `.debug_info` itself, or in a
/// `.debug_addr` entry an index names.
#[derive(Copy, Clone, Debug)]
enum Place {
    Info { offset: u64, size: u64 },
    Addr { offset: u64, size: u64 },
}

#[derive(Copy, Clone, Debug)]
struct Address {
    value: u64,
    place: Place,
}

/// `DW_AT_high_pc`: an address, or a length from `DW_AT_low_pc` (in a
/// field of `size` bytes, a LEB128 when `leb`; 0 bytes for
/// `DW_FORM_implicit_const`).
#[derive(Copy, Clone, Debug)]
enum High {
    Address(Address),
    Length {
        value: u64,
        offset: u64,
        size: u64,
        leb: bool,
    },
}

/// What one DIE says about where code is.
#[derive(Default)]
struct Die {
    low: Option<Address>,
    high: Option<High>,
    has_ranges: bool,
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
enum ListKind {
    Ranges,
    Locations,
}

/// How a list is read: its unit's version, address size, base address
/// and `.debug_addr` base.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
struct ListContext {
    version: u16,
    address_size: u64,
    base: u64,
    addr_base: u64,
}

/// What of `.debug_info` names line programs, which may move.
#[derive(Default)]
pub(super) struct LineReferences {
    /// `DW_AT_stmt_list` fields.
    pub stmt_lists: Vec<StmtList>,
    /// The `.debug_macro` units units name (`DW_AT_macros`,
    /// `DW_AT_GNU_macros`), whose headers may name a line program.
    pub macro_units: Vec<u64>,
}

/// Rewrites the addresses of `.debug_info` and of the lists it names;
/// returns what names line programs, which follow them.
pub(super) fn rewrite(rewrite: &mut Rewrite<'_, '_>) -> anyhow::Result<LineReferences> {
    let Some(info) = rewrite.section(".debug_info") else {
        return Ok(LineReferences::default());
    };
    let elf = rewrite.elf;
    let load = |id: gimli::SectionId| -> Result<Slice<'_>, gimli::Error> {
        let bytes = elf
            .section_named(id.name())
            .map_or(&[][..], |i| elf.bytes(i));
        Ok(EndianSlice::new(bytes, LittleEndian))
    };
    let dwarf = gimli::Dwarf::load(load)?;
    let mut references = LineReferences::default();
    let mut lists: HashMap<(ListKind, u64), ListContext> = HashMap::new();
    let mut units = dwarf.units();
    while let Some(header) = units.next()? {
        let unit_offset = header.offset().0 as u64;
        let at_unit = |e: gimli::Error| anyhow::anyhow!(".debug_info+{unit_offset:#x}: {e}");
        match header.type_() {
            gimli::UnitType::Compilation
            | gimli::UnitType::Partial
            | gimli::UnitType::Type { .. } => {}
            _ => bail!(".debug_info+{unit_offset:#x}: a split or skeleton unit (split DWARF)"),
        }
        let unit = dwarf.unit(header).map_err(at_unit)?;
        if unit.dwo_id.is_some() {
            bail!(".debug_info+{unit_offset:#x}: a skeleton unit (split DWARF)");
        }
        let encoding = unit.encoding();
        let context = ListContext {
            version: encoding.version,
            address_size: u64::from(encoding.address_size),
            base: unit.low_pc,
            addr_base: unit.addr_base.0 as u64,
        };
        let addr_place = |index: u64| Place::Addr {
            offset: context.addr_base + index * context.address_size,
            size: context.address_size,
        };
        let mut entries = unit.entries_raw(None).map_err(at_unit)?;
        while !entries.is_empty() {
            let Some(abbreviation) = entries.read_abbreviation().map_err(at_unit)? else {
                continue;
            };
            let mut die = Die::default();
            for spec in abbreviation.attributes() {
                let at = entries.next_offset().0 as u64;
                let attribute = entries.read_attribute(*spec).map_err(at_unit)?;
                let size = entries.next_offset().0 as u64 - at;
                let offset = unit_offset + at;
                let name = attribute.name();
                let address = match attribute.value() {
                    AttributeValue::Addr(value) => Some(Address {
                        value,
                        place: Place::Info { offset, size },
                    }),
                    AttributeValue::DebugAddrIndex(index) => Some(Address {
                        value: dwarf.address(&unit, index).map_err(at_unit)?,
                        place: addr_place(index.0 as u64),
                    }),
                    AttributeValue::Udata(value) if name == gimli::DW_AT_high_pc => {
                        let form = attribute.form();
                        if form == gimli::DW_FORM_sdata {
                            bail!(".debug_info+{offset:#x}: DW_AT_high_pc as DW_FORM_sdata");
                        }
                        die.high = Some(High::Length {
                            value,
                            offset,
                            size,
                            leb: form == gimli::DW_FORM_udata,
                        });
                        None
                    }
                    AttributeValue::RangeListsRef(raw) => {
                        let list = dwarf.ranges_offset_from_raw(&unit, raw).0 as u64;
                        note_list(&mut lists, ListKind::Ranges, list, context)?;
                        die.has_ranges = true;
                        None
                    }
                    AttributeValue::DebugRngListsIndex(index) => {
                        let list = dwarf.ranges_offset(&unit, index).map_err(at_unit)?.0 as u64;
                        note_list(&mut lists, ListKind::Ranges, list, context)?;
                        die.has_ranges = true;
                        None
                    }
                    AttributeValue::LocationListsRef(list) => {
                        note_list(&mut lists, ListKind::Locations, list.0 as u64, context)?;
                        None
                    }
                    AttributeValue::DebugLocListsIndex(index) => {
                        let list = dwarf.locations_offset(&unit, index).map_err(at_unit)?.0 as u64;
                        note_list(&mut lists, ListKind::Locations, list, context)?;
                        None
                    }
                    AttributeValue::DebugMacroRef(unit) => {
                        references.macro_units.push(unit.0 as u64);
                        None
                    }
                    AttributeValue::SecOffset(unit) if name == gimli::DW_AT_GNU_macros => {
                        references.macro_units.push(unit as u64);
                        None
                    }
                    AttributeValue::DebugLineRef(line) if name == gimli::DW_AT_stmt_list => {
                        references.stmt_lists.push(StmtList {
                            offset,
                            size,
                            value: line.0 as u64,
                        });
                        None
                    }
                    _ => None,
                };
                let Some(address) = address else {
                    continue;
                };
                if name == gimli::DW_AT_low_pc {
                    die.low = Some(address);
                } else if name == gimli::DW_AT_high_pc {
                    die.high = Some(High::Address(address));
                } else if rewrite.map.in_moving_region(address.value) {
                    put(rewrite, info, address, Role::Point)?;
                }
            }
            place_die(rewrite, info, &die)?;
        }
    }
    let mut lists: Vec<_> = lists.into_iter().collect();
    lists.sort_unstable_by_key(|&((kind, offset), _)| (kind == ListKind::Locations, offset));
    for ((kind, offset), context) in lists {
        let section = match (kind, context.version >= 5) {
            (ListKind::Ranges, false) => ".debug_ranges",
            (ListKind::Ranges, true) => ".debug_rnglists",
            (ListKind::Locations, false) => ".debug_loc",
            (ListKind::Locations, true) => ".debug_loclists",
        };
        let index = rewrite
            .section(section)
            .with_context(|| format!("a list at {section}+{offset:#x}, and no {section}"))?;
        let list = List {
            index,
            name: section,
            locations: kind == ListKind::Locations,
            context,
        };
        let result = if context.version >= 5 {
            list.rewrite_v5(rewrite, offset)
        } else {
            list.rewrite_v4(rewrite, offset)
        };
        result.map_err(|e| e.context(format!("the list at {section}+{offset:#x}")))?;
    }
    references.macro_units.sort_unstable();
    references.macro_units.dedup();
    Ok(references)
}

/// Records that a DIE names a list, read with `context`.
fn note_list(
    lists: &mut HashMap<(ListKind, u64), ListContext>,
    kind: ListKind,
    offset: u64,
    context: ListContext,
) -> anyhow::Result<()> {
    match lists.insert((kind, offset), context) {
        Some(other) if other != context => {
            bail!("the {kind:?} list at {offset:#x} is read by units with different bases")
        }
        _ => Ok(()),
    }
}

/// Writes an address held at `address.place` for `role`.
fn put(
    rewrite: &mut Rewrite<'_, '_>,
    info: usize,
    address: Address,
    role: Role,
) -> anyhow::Result<u64> {
    match address.place {
        Place::Info { offset, size } => {
            let new = rewrite.map.map(role, address.value);
            rewrite.write(info, offset, size, new)?;
            Ok(new)
        }
        Place::Addr { offset, size } => rewrite.addr_entry(offset, size, address.value, role),
    }
}

/// A DIE's own range (`DW_AT_low_pc` with `DW_AT_high_pc`) keeps the
/// bytes of it still there; a `DW_AT_low_pc` alone is a base (with
/// `DW_AT_ranges`) or a point.
fn place_die(rewrite: &mut Rewrite<'_, '_>, info: usize, die: &Die) -> anyhow::Result<()> {
    let Some(low) = die.low else {
        return Ok(());
    };
    if !rewrite.map.in_moving_region(low.value) {
        return Ok(());
    }
    let Some(high) = die.high else {
        let role = if die.has_ranges {
            Role::Start
        } else {
            Role::Point
        };
        put(rewrite, info, low, role)?;
        return Ok(());
    };
    let end = match high {
        High::Address(address) => address.value,
        High::Length { value, .. } => low.value.saturating_add(value),
    };
    let (start, stop) = rewrite.map.range(low.value, end);
    let written = put(rewrite, info, low, Role::Start)?;
    debug_assert_eq!(written, start);
    match high {
        High::Address(address) => {
            put(rewrite, info, address, Role::End)?;
        }
        High::Length {
            value,
            offset,
            size,
            leb,
        } => {
            let length = stop - start;
            if length != value {
                if size == 0 {
                    bail!(
                        ".debug_info+{offset:#x}: DW_AT_high_pc is an implicit constant and the \
                         range it ends changes length"
                    );
                }
                if leb {
                    rewrite.write_uleb(info, offset, size, length)?;
                } else {
                    rewrite.write(info, offset, size, length)?;
                }
            }
        }
    }
    Ok(())
}

/// A list to rewrite.
struct List {
    index: usize,
    name: &'static str,
    locations: bool,
    context: ListContext,
}

/// A list's current base address, before and after.
#[derive(Copy, Clone)]
struct Base {
    old: u64,
    new: u64,
}

impl List {
    fn base(&self, rewrite: &Rewrite<'_, '_>, old: u64) -> Base {
        let new = if rewrite.map.in_moving_region(old) {
            rewrite.map.start(old)
        } else {
            old
        };
        Base { old, new }
    }

    /// The range `start..end` after compaction (unchanged outside where
    /// code moves).
    fn range(rewrite: &Rewrite<'_, '_>, start: u64, end: u64) -> (u64, u64) {
        if rewrite.map.in_moving_region(start) {
            rewrite.map.range(start, end)
        } else {
            (start, end)
        }
    }

    /// Offsets of a range from `base`.
    fn offsets(&self, base: Base, range: (u64, u64)) -> anyhow::Result<(u64, u64)> {
        match (range.0.checked_sub(base.new), range.1.checked_sub(base.new)) {
            (Some(start), Some(end)) => Ok((start, end)),
            _ => bail!(
                "{}: the range {:#x}..{:#x} starts before its base {:#x}",
                self.name,
                range.0,
                range.1,
                base.new
            ),
        }
    }

    /// `.debug_ranges`/`.debug_loc`: pairs of addresses (offsets from the
    /// base unless the base is 0), base selection entries (`-1`, base),
    /// `(0, 0)` at the end; a location's pair is followed by its
    /// expression.
    fn rewrite_v4(&self, rewrite: &mut Rewrite<'_, '_>, offset: u64) -> anyhow::Result<()> {
        let size = self.context.address_size;
        let largest = if size == 8 {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        };
        let mut cursor = Cursor {
            bytes: rewrite.original(self.index),
            at: offset,
        };
        let mut base = self.base(rewrite, self.context.base);
        loop {
            let (begin_at, begin) = cursor.field(size)?;
            let (end_at, end) = cursor.field(size)?;
            if begin == 0 && end == 0 {
                return Ok(());
            }
            if begin == largest {
                base = self.base(rewrite, end);
                rewrite.write(self.index, end_at, size, base.new)?;
                continue;
            }
            let range = Self::range(
                rewrite,
                base.old.wrapping_add(begin),
                base.old.wrapping_add(end),
            );
            let (mut start, mut stop) = self.offsets(base, range)?;
            if start == 0 && stop == 0 {
                // Empty, and not the end of the list.
                (start, stop) = (1, 1);
            }
            rewrite.write(self.index, begin_at, size, start)?;
            rewrite.write(self.index, end_at, size, stop)?;
            if self.locations {
                let length = cursor.fixed(2)?;
                cursor.skip(length);
            }
        }
    }

    /// `.debug_rnglists`/`.debug_loclists`: entries of a kind byte and
    /// operands; a location's entry is followed by its expression.
    fn rewrite_v5(&self, rewrite: &mut Rewrite<'_, '_>, offset: u64) -> anyhow::Result<()> {
        let size = self.context.address_size;
        let addr = rewrite.section(".debug_addr");
        let mut cursor = Cursor {
            bytes: rewrite.original(self.index),
            at: offset,
        };
        let mut base = self.base(rewrite, self.context.base);
        // The .debug_addr entry an index names: (offset, address).
        let entry = |rewrite: &Rewrite<'_, '_>, index: u64| -> anyhow::Result<(u64, u64)> {
            let at = self.context.addr_base + index * size;
            let bytes = addr.map_or(&[][..], |i| rewrite.original(i));
            let value = Cursor { bytes, at }
                .fixed(size)
                .with_context(|| format!(".debug_addr entry {index}"))?;
            Ok((at, value))
        };
        loop {
            let (kind_at, kind) = cursor.field(1)?;
            // The kinds common to both lists are numbered alike up to 4;
            // loclists insert DW_LLE_default_location (5) before the rest.
            let kind = match (self.locations, kind) {
                (true, 5) => Kind::Default,
                (true, 9) => Kind::ViewPair,
                (true, 6..=8) => Kind::from(kind - 1),
                (_, _) => Kind::from(kind),
            };
            let with_expression = match kind {
                Kind::End => return Ok(()),
                Kind::BaseAddressx => {
                    let index = cursor.uleb()?;
                    let (at, old) = entry(rewrite, index)?;
                    base = self.base(rewrite, old);
                    if rewrite.map.in_moving_region(old) {
                        rewrite.addr_entry(at, size, old, Role::Start)?;
                    }
                    false
                }
                Kind::StartxEndx => {
                    let first = cursor.uleb()?;
                    let last = cursor.uleb()?;
                    let ((start_at, start), (end_at, end)) =
                        (entry(rewrite, first)?, entry(rewrite, last)?);
                    if rewrite.map.in_moving_region(start) {
                        rewrite.addr_entry(start_at, size, start, Role::Start)?;
                        rewrite.addr_entry(end_at, size, end, Role::End)?;
                    }
                    true
                }
                Kind::StartxLength => {
                    let index = cursor.uleb()?;
                    let length = cursor.uleb_field()?;
                    let (at, start) = entry(rewrite, index)?;
                    if rewrite.map.in_moving_region(start) {
                        let (new_start, new_end) =
                            rewrite.map.range(start, start.saturating_add(length.2));
                        rewrite.addr_entry(at, size, start, Role::Start)?;
                        rewrite.rewrite_uleb(self.index, length, new_end - new_start)?;
                    }
                    true
                }
                Kind::OffsetPair => {
                    let (first, second) = (cursor.uleb_field()?, cursor.uleb_field()?);
                    let range = Self::range(
                        rewrite,
                        base.old.wrapping_add(first.2),
                        base.old.wrapping_add(second.2),
                    );
                    let (start, stop) = self.offsets(base, range)?;
                    rewrite.rewrite_uleb(self.index, first, start)?;
                    rewrite.rewrite_uleb(self.index, second, stop)?;
                    true
                }
                Kind::Default => true,
                Kind::ViewPair => {
                    cursor.uleb()?;
                    cursor.uleb()?;
                    false
                }
                Kind::BaseAddress => {
                    let (at, old) = cursor.field(size)?;
                    base = self.base(rewrite, old);
                    rewrite.write(self.index, at, size, base.new)?;
                    false
                }
                Kind::StartEnd => {
                    let (start_at, start) = cursor.field(size)?;
                    let (end_at, end) = cursor.field(size)?;
                    let (new_start, new_end) = Self::range(rewrite, start, end);
                    rewrite.write(self.index, start_at, size, new_start)?;
                    rewrite.write(self.index, end_at, size, new_end)?;
                    true
                }
                Kind::StartLength => {
                    let (start_at, start) = cursor.field(size)?;
                    let length = cursor.uleb_field()?;
                    let (new_start, new_end) =
                        Self::range(rewrite, start, start.saturating_add(length.2));
                    rewrite.write(self.index, start_at, size, new_start)?;
                    rewrite.rewrite_uleb(self.index, length, new_end - new_start)?;
                    true
                }
                Kind::Unknown(kind) => {
                    bail!(
                        "{}+{kind_at:#x}: an entry of unknown kind {kind}",
                        self.name
                    )
                }
            };
            if self.locations && with_expression {
                let length = cursor.uleb()?;
                cursor.skip(length);
            }
        }
    }
}

/// The kinds of entry of `.debug_rnglists` (`DW_RLE_*`), which
/// `.debug_loclists` (`DW_LLE_*`) shares but for its default location
/// and GNU view pairs.
#[derive(Copy, Clone, Debug)]
enum Kind {
    End,
    BaseAddressx,
    StartxEndx,
    StartxLength,
    OffsetPair,
    BaseAddress,
    StartEnd,
    StartLength,
    Default,
    ViewPair,
    Unknown(u64),
}

impl From<u64> for Kind {
    fn from(kind: u64) -> Kind {
        match kind {
            0 => Kind::End,
            1 => Kind::BaseAddressx,
            2 => Kind::StartxEndx,
            3 => Kind::StartxLength,
            4 => Kind::OffsetPair,
            5 => Kind::BaseAddress,
            6 => Kind::StartEnd,
            7 => Kind::StartLength,
            other => Kind::Unknown(other),
        }
    }
}
