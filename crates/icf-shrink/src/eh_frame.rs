//! `.eh_frame` and `.eh_frame_hdr` after compaction.
//!
//! Where the exception tables have a segment of their own (GNU ld, lld,
//! mold), the FDEs of removed functions (aliases and thunks) are dropped,
//! with the exception tables in `.gcc_except_table` only they name, and
//! `.eh_frame_hdr` loses their rows: [`region`] lays that out before
//! anything is patched, and the sections after them in the segment move
//! down. Where they share `.text`'s segment (gold), `.eh_frame` keeps its
//! layout and moves with the tail: a removed function's FDE keeps its
//! place but describes no code any more (its range becomes 0), so an
//! unwinder never finds it. Either way each FDE's function field is
//! written again for the function's new address, its CIE pointer where
//! the distance to its CIE changed, LSDA and personality pointers where
//! their place or target moved, and `.eh_frame_hdr`'s sorted table is
//! rebuilt from the FDEs that still describe code.

use crate::data_fold::DataFolds;
use crate::layout::{Fate, Layout, Region};
use crate::patch::{Encoding, OMIT, Patches};
use crate::shape::Shape;
use anyhow::{Context, bail};
use icf_object::linked_elf::{Elf, SymbolInfo};
use object::elf as E;
use std::collections::HashMap;

/// One FDE as it will be in the output.
#[derive(Copy, Clone, Debug)]
struct KeptFde {
    /// Its new address.
    address: u64,
    /// The new address of its function.
    function: u64,
}

/// What a CIE says about the FDEs that use it.
#[derive(Copy, Clone, Debug)]
struct Cie {
    function: u8,
    lsda: u8,
    augmented: bool,
    /// The personality pointer: its section offset and encoding.
    personality: Option<(usize, Encoding)>,
}

/// One entry of `.eh_frame`, `at..end` in the section.
#[derive(Copy, Clone, Debug)]
struct Entry {
    at: usize,
    end: usize,
    kind: EntryKind,
}

#[derive(Copy, Clone, Debug)]
enum EntryKind {
    /// A zero length word (the terminator).
    Terminator,
    Cie(Cie),
    Fde {
        cie_at: usize,
        cie: Cie,
        /// The address of the function it describes, and its range.
        function: u64,
        range: u64,
        /// The address of its exception table (LSDA), when it has one.
        lsda: Option<u64>,
    },
}

/// The unsigned LEB128 at `*at` of `bytes` (gimli reads it); `*at` moves past it.
fn uleb(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut cursor = crate::dwarf::Cursor {
        bytes,
        at: *at as u64,
    };
    let value = cursor.uleb().ok()?;
    *at = cursor.at as usize;
    Some(value)
}

/// Every entry of `.eh_frame` (its `bytes`, loaded at `base`).
fn entries(bytes: &[u8], base: u64) -> anyhow::Result<Vec<Entry>> {
    let located = |at: usize, what: &str| anyhow::anyhow!(".eh_frame+{at:#x}: {what}");
    let mut cies: HashMap<usize, Cie> = HashMap::new();
    let mut entries = Vec::new();
    let mut at = 0usize;
    while at + 4 <= bytes.len() {
        let length = u32::from_le_bytes(bytes[at..at + 4].try_into()?) as usize;
        if length == 0 {
            entries.push(Entry {
                at,
                end: at + 4,
                kind: EntryKind::Terminator,
            });
            at += 4;
            continue;
        }
        if length == 0xffff_ffff {
            return Err(located(at, "64-bit entries are not read"));
        }
        let end = at + 4 + length;
        if end > bytes.len() || length < 4 {
            return Err(located(at, "entry runs past the section"));
        }
        let id_at = at + 4;
        let id = u32::from_le_bytes(bytes[id_at..id_at + 4].try_into()?) as usize;
        let kind = if id == 0 {
            let cie = read_cie(bytes, at, end)?;
            cies.insert(at, cie);
            EntryKind::Cie(cie)
        } else {
            let cie_at = id_at
                .checked_sub(id)
                .ok_or_else(|| located(at, "CIE pointer before the section"))?;
            let cie = *cies
                .get(&cie_at)
                .ok_or_else(|| located(at, "FDE whose CIE is not an earlier entry"))?;
            let function = Encoding::of(cie.function)
                .ok_or_else(|| located(at, "unsupported function pointer encoding"))?;
            let function_at = id_at + 4;
            let value = bytes
                .get(function_at..end)
                .and_then(|b| function.read(b))
                .ok_or_else(|| located(function_at, "function runs past the entry"))?;
            let range_encoding = Encoding {
                pc_relative: false,
                ..function
            };
            let range_at = function_at + function.size;
            let range = bytes
                .get(range_at..end)
                .and_then(|b| range_encoding.read(b))
                .ok_or_else(|| located(range_at, "range runs past the entry"))?;
            let lsda = if cie.augmented && cie.lsda != OMIT {
                let mut lsda_at = range_at + function.size;
                uleb(bytes, &mut lsda_at).ok_or_else(|| located(at, "bad augmentation length"))?;
                let encoding = Encoding::of(cie.lsda)
                    .ok_or_else(|| located(at, "unsupported LSDA pointer encoding"))?;
                let value = bytes
                    .get(lsda_at..end)
                    .and_then(|b| encoding.read(b))
                    .ok_or_else(|| located(lsda_at, "LSDA pointer runs past the entry"))?;
                // A null pointer (whatever the encoding) is no table.
                (value != 0).then(|| encoding.target(base + lsda_at as u64, value))
            } else {
                None
            };
            EntryKind::Fde {
                cie_at,
                cie,
                function: function.target(base + function_at as u64, value),
                range: range as u64,
                lsda,
            }
        };
        entries.push(Entry { at, end, kind });
        at = end;
    }
    Ok(entries)
}

/// Writes the pointer field at section offset `at` again (section at
/// `base`), when its place or its target moves.
fn repoint(
    bytes: &[u8],
    at: usize,
    encoding: Encoding,
    base: u64,
    layout: &Layout,
    patches: &mut Patches,
) -> anyhow::Result<u64> {
    let place = base + at as u64;
    let value = bytes
        .get(at..)
        .and_then(|b| encoding.read(b))
        .with_context(|| format!(".eh_frame+{at:#x}: field runs past the section"))?;
    let target = encoding.target(place, value);
    let (new_place, new_target) = (layout.map(place), layout.map(target));
    if new_place != place || new_target != target {
        let field = encoding.encode(new_place, new_target).with_context(|| {
            format!(".eh_frame+{at:#x}: {new_target:#x} does not fit the field")
        })?;
        patches.put(new_place, field);
    }
    Ok(target)
}

/// Whether an FDE describes code the layout removes (an alias's or a
/// thunk's old body): nothing unwinds through it any more.
fn describes_removed_code(entry: &Entry, layout: &Layout) -> bool {
    matches!(entry.kind, EntryKind::Fde { function, range, .. }
        if range != 0 && layout.is_removed_function(function))
}

/// The exception tables to compact in their own segment (see
/// [`Region`]): from `.eh_frame` (or `.eh_frame_hdr` just before it) to
/// the end of the `PT_LOAD` holding them, when that segment is not
/// `.text`'s (there they move with the tail, and a removed function's
/// FDE stays, covering nothing), holds only sections with bytes there and
/// no segment but `PT_GNU_EH_FRAME` starts in it, and something leaves
/// it: an FDE of removed code, a folded constant, or an exception table
/// equal to another. Removed code's FDEs are dropped, `.eh_frame_hdr`
/// loses their rows, the exception tables only they name and those equal
/// to an earlier one leave `.gcc_except_table` (an FDE naming one of the
/// latter names the earlier instead: [`Region::redirects`]), and
/// everything after moves down, each section keeping its alignment (on
/// AArch64, data other than exception tables its page offset).
pub fn region(
    elf: &Elf<'_>,
    shape: &Shape,
    symbols: &[SymbolInfo],
    layout: &Layout,
    folds: Option<&DataFolds>,
) -> anyhow::Result<Option<Region>> {
    let Some(index) = elf.section_named(".eh_frame") else {
        return Ok(None);
    };
    let eh = &elf.sections[index];
    let Some(segment) = elf.segments.iter().position(|p| {
        p.p_type == E::PT_LOAD.0 && p.vaddr <= eh.addr && eh.addr + eh.size <= p.vaddr + p.filesz
    }) else {
        return Ok(None);
    };
    let load = &elf.segments[segment];
    let end = load.vaddr + load.filesz;
    if segment == shape.segment || load.filesz != load.memsz || load.flags & E::PF_W.0 != 0 {
        return Ok(None);
    }
    let in_file = |address: u64| load.offset + (address - load.vaddr);
    let header = elf
        .section_named(".eh_frame_hdr")
        .filter(|&i| (load.vaddr..end).contains(&elf.sections[i].addr));
    let mut start = header
        .map(|i| &elf.sections[i])
        .filter(|h| h.addr < eh.addr)
        .map_or(eh.addr, |h| h.addr);
    // Constants folded in a section before the exception tables (GNU ld
    // puts `.rodata` first in their segment): the region starts there
    // when only sections of plain bytes lie between.
    let folds = folds.filter(|folds| {
        let rodata = &elf.sections[folds.section];
        if rodata.addr >= start {
            return rodata.addr < end;
        }
        let before = rodata.addr >= load.vaddr
            && elf.sections.iter().all(|s| {
                !(s.is_alloc() && s.size > 0 && (rodata.addr..start).contains(&s.addr))
                    || s.sh_type == E::SHT_PROGBITS.0
            });
        if before {
            start = rodata.addr;
        }
        before
    });
    let mut sections: Vec<usize> = (0..elf.sections.len())
        .filter(|&i| {
            let s = &elf.sections[i];
            s.is_alloc() && s.size > 0 && (start..end).contains(&s.addr)
        })
        .collect();
    sections.sort_by_key(|&i| elf.sections[i].addr);
    let unusual = sections.iter().any(|&i| {
        let s = &elf.sections[i];
        !s.has_bytes() || s.offset != in_file(s.addr) || s.addr + s.size > end
    }) || elf.segments.iter().any(|p| {
        p.p_type != E::PT_LOAD.0
            && p.p_type != E::PT_GNU_EH_FRAME.0
            && p.memsz > 0
            && p.vaddr < end
            && p.vaddr + p.memsz > start
    });
    if unusual {
        return Ok(None);
    }
    let all = entries(elf.bytes(index), eh.addr)?;
    let removed: Vec<&Entry> = all
        .iter()
        .filter(|entry| describes_removed_code(entry, layout))
        .collect();
    let tables = elf
        .section_named(".gcc_except_table")
        .filter(|i| sections.contains(i));
    let dropped = match tables {
        Some(tables) => dropped_exception_tables(elf, shape, symbols, &all, layout, tables, index)?,
        None => DroppedTables::default(),
    };
    if removed.is_empty() && folds.is_none() && dropped.shared.is_empty() {
        return Ok(None);
    }
    let listed = all
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::Fde { range, .. } if range != 0))
        .count()
        - removed.len();
    // Both kinds leave the section alike, in address order.
    let mut dead_tables: Vec<(u64, u64)> = dropped.dead.clone();
    dead_tables.extend(dropped.shared.iter().map(|&(start, end, _)| (start, end)));
    dead_tables.sort_unstable();
    let mut runs: Vec<(u64, u64, u64)> = Vec::new();
    let mut keep = |old: u64, old_end: u64, new: u64| {
        match runs.last_mut() {
            Some(last) if last.1 == old && last.2 + (last.1 - last.0) == new => last.1 = old_end,
            _ => runs.push((old, old_end, new)),
        }
        new + (old_end - old)
    };
    // AArch64 code reaches data through `adrp` pages that a hand-written
    // routine may share between addresses: data other than the exception
    // tables (which only they and the unwinder name) moves by whole pages.
    let page = if elf.machine == E::EM_AARCH64.0 {
        4096
    } else {
        1
    };
    let exception_table =
        |name: &str| matches!(name, ".eh_frame" | ".eh_frame_hdr" | ".gcc_except_table");
    let mut cursor = start;
    for &i in &sections {
        let section = &elf.sections[i];
        let modulus = if exception_table(&section.name) {
            section.align.max(1)
        } else {
            section.align.max(page)
        };
        // The first place at or after the cursor congruent to where it was.
        let at = cursor + (section.addr - cursor) % modulus;
        cursor = if Some(i) == header {
            let bytes = elf.bytes(i);
            let pointer = bytes
                .get(1)
                .and_then(|&byte| Encoding::of(byte))
                .context(".eh_frame_hdr: unsupported pointer encoding")?;
            let size = (8 + pointer.size + 8 * listed) as u64;
            if size > section.size {
                bail!(".eh_frame_hdr: lists fewer FDEs than .eh_frame holds");
            }
            keep(section.addr, section.addr + size, at)
        } else if i == index {
            let mut at = at;
            let mut from = section.addr;
            for entry in &removed {
                let entry_start = section.addr + entry.at as u64;
                at = keep(from, entry_start, at);
                from = section.addr + entry.end as u64;
            }
            keep(from, section.addr + section.size, at)
        } else if Some(i) == tables {
            // Each table after a dropped one keeps its offset modulo the
            // section's alignment (its type table stays aligned): padding
            // goes in before each run kept, not after each table dropped
            // (several dropped in a row would add it again and again).
            let align = section.align.max(1);
            let mut at = at;
            let mut from = section.addr;
            for &(start, end) in &dead_tables {
                if from < start {
                    at += (from - at) % align;
                    at = keep(from, start, at);
                }
                from = end;
            }
            at += (from - at) % align;
            keep(from, section.addr + section.size, at)
        } else if let Some(folds) = folds.filter(|folds| folds.section == i) {
            // Each run of kept bytes after a removed constant keeps its
            // address modulo the largest alignment of what it holds.
            let section_end = section.addr + section.size;
            let mut at = at;
            let mut from = section.addr;
            for (next, &(start, end, _)) in folds.removed.iter().enumerate() {
                at = keep(from, start, at);
                from = end;
                let run_end = folds.removed.get(next + 1).map_or(section_end, |r| r.0);
                at += (from - at) % folds.run_align(from, run_end);
            }
            keep(from, section_end, at)
        } else {
            keep(section.addr, section.addr + section.size, at)
        };
    }
    runs.retain(|run| run.0 < run.1);
    let end_starts_next = elf
        .sections
        .iter()
        .any(|s| s.is_alloc() && s.size > 0 && s.addr == end);
    Ok(Some(Region {
        segment,
        start,
        end,
        end_starts_next,
        runs,
        new_end: cursor,
        redirects: {
            let mut redirects = folds.map(|folds| folds.removed.clone()).unwrap_or_default();
            redirects.extend(dropped.shared.iter().copied());
            redirects.sort_unstable();
            redirects
        },
        shared_exception_tables: dropped.shared.len(),
        anchors: folds.map(|folds| folds.anchors.clone()).unwrap_or_default(),
    }))
}

/// Marks a relocated field naming an undefined symbol, by index, in a
/// [`TableKey`].
const UNDEFINED: u64 = 1 << 63;

/// What makes two exception tables equal: their bytes with the fields
/// kept relocations write zeroed, and those fields (offset, type, the
/// place each names).
type TableKey = (Vec<u8>, Vec<(u64, u32, Named)>);

/// What a relocated field of an exception table names: a place (and 0),
/// or [`UNDEFINED`] with a symbol's index (and the addend).
type Named = (u64, i64);

/// The exception tables (LSDAs) of `.gcc_except_table` that leave it.
#[derive(Clone, Debug, Default)]
struct DroppedTables {
    /// Those only FDEs of removed code name: sorted `[start, end)`.
    dead: Vec<(u64, u64)>,
    /// Those equal to an earlier live one (`start, end, its start`),
    /// sorted: their FDEs name that one instead, as after `icf link`,
    /// which folds them as read-only data.
    shared: Vec<(u64, u64, u64)>,
}

/// The exception tables (LSDAs) in `.gcc_except_table` (section
/// `tables`) that leave it: those only FDEs of removed code name, and
/// those equal to an earlier live table ([`DroppedTables`]). Each runs
/// to the next table any FDE names (or the section's end), so the
/// alignment padding after it goes with it. None at all when anything
/// but `.eh_frame` (section `eh_frame`) may name a place in
/// `.gcc_except_table`: a kept relocation of another section naming a
/// symbol there, a dynamic relocation's addend or place there, or an
/// exported symbol there.
///
/// Two tables are equal when their bytes are, but for the fields a kept
/// relocation writes (the PC-relative entries of a type table), which
/// must be at the same offsets and name the same places. A call-site
/// table counts from its function's start (`LPStart` omitted, which is
/// required), so equal bytes mean the same landing pads in each function.
fn dropped_exception_tables(
    elf: &Elf<'_>,
    shape: &Shape,
    symbols: &[SymbolInfo],
    all: &[Entry],
    layout: &Layout,
    tables: usize,
    eh_frame: usize,
) -> anyhow::Result<DroppedTables> {
    let section = &elf.sections[tables];
    let inside = |address: u64| section.contains(address);
    for &(relocations, target) in &shape.kept {
        if target == eh_frame || target == tables {
            continue;
        }
        let named_there = elf.relas(relocations)?.iter().any(|rela| {
            symbols
                .get(rela.sym as usize)
                .is_some_and(|symbol| usize::from(symbol.shndx) == tables)
        });
        if named_there {
            return Ok(DroppedTables::default());
        }
    }
    for (index, dynamic) in elf.sections.iter().enumerate() {
        let table = dynamic.sh_type == E::SHT_RELA.0 && dynamic.is_alloc();
        if table
            && elf
                .relas(index)?
                .iter()
                .any(|rela| inside(rela.offset) || inside(rela.addend as u64))
        {
            return Ok(DroppedTables::default());
        }
        let exported = dynamic.sh_type == E::SHT_DYNSYM.0
            && elf
                .symbols(index)?
                .iter()
                .any(|symbol| symbol.value != 0 && inside(symbol.value));
        if exported {
            return Ok(DroppedTables::default());
        }
    }
    let mut named: Vec<(u64, bool)> = all
        .iter()
        .filter_map(|entry| match entry.kind {
            EntryKind::Fde {
                lsda: Some(lsda), ..
            } => Some((lsda, describes_removed_code(entry, layout))),
            _ => None,
        })
        .filter(|&(lsda, _)| inside(lsda))
        .collect();
    named.sort_unstable();
    let starts: Vec<u64> = {
        let mut starts: Vec<u64> = named.iter().map(|&(lsda, _)| lsda).collect();
        starts.dedup();
        starts
    };
    let end_of_section = section.addr + section.size;
    let range = |i: usize| {
        (
            starts[i],
            starts.get(i + 1).copied().unwrap_or(end_of_section),
        )
    };
    // Every FDE naming it describes removed code.
    let is_dead = |start: u64| {
        named
            .iter()
            .filter(|&&(lsda, _)| lsda == start)
            .all(|&(_, removed)| removed)
    };
    let dead = (0..starts.len())
        .filter(|&i| is_dead(starts[i]))
        .map(range)
        .collect();
    // The kept relocations of the tables: (place, type, what it names).
    let mut relocated: Vec<(u64, u32, Named)> = Vec::new();
    for &(relocations, target) in &shape.kept {
        if target != tables {
            continue;
        }
        for rela in elf.relas(relocations)? {
            // What it names: a place, or an undefined symbol (another
            // module's) by its index, which no address equals, and its
            // addend.
            let named = match symbols.get(rela.sym as usize) {
                Some(symbol) if symbol.kind == E::STT_SECTION.0 => (
                    elf.sections
                        .get(usize::from(symbol.shndx))
                        .map_or(0, |s| s.addr)
                        .wrapping_add(rela.addend as u64),
                    0,
                ),
                Some(symbol) if symbol.shndx != E::SHN_UNDEF.0 => {
                    (symbol.value.wrapping_add(rela.addend as u64), 0)
                }
                _ => (UNDEFINED | u64::from(rela.sym), rela.addend),
            };
            relocated.push((rela.offset, rela.r_type, named));
        }
    }
    relocated.sort_unstable();
    let bytes = elf.bytes(tables);
    let mut first_of: HashMap<TableKey, u64> = HashMap::new();
    let mut shared = Vec::new();
    for i in (0..starts.len()).filter(|&i| !is_dead(starts[i])) {
        let (start, end) = range(i);
        let Some(content) =
            bytes.get((start - section.addr) as usize..(end - section.addr) as usize)
        else {
            continue;
        };
        // `LPStart` must be omitted: the call sites count from the function.
        if content.first() != Some(&OMIT) {
            continue;
        }
        let mut content = content.to_vec();
        let from = relocated.partition_point(|r| r.0 < start);
        let fields: Vec<(u64, u32, Named)> = relocated[from..]
            .iter()
            .take_while(|r| r.0 < end)
            .map(|&(place, r_type, named)| (place - start, r_type, named))
            .collect();
        // A field a relocation writes compares by what it names.
        for &(offset, _, _) in &fields {
            let at = offset as usize;
            let field_end = (at + 4).min(content.len());
            if let Some(field) = content.get_mut(at..field_end) {
                field.fill(0);
            }
        }
        match first_of.entry((content, fields)) {
            std::collections::hash_map::Entry::Occupied(first) => {
                shared.push((start, end, *first.get()));
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(start);
            }
        }
    }
    Ok(DroppedTables { dead, shared })
}

/// Patches `.eh_frame` (section `index`) and rebuilds `.eh_frame_hdr`.
/// Returns how many FDEs no longer describe code (dropped, or left in
/// place covering nothing).
pub fn patch(elf: &Elf<'_>, layout: &Layout, patches: &mut Patches) -> anyhow::Result<usize> {
    let Some(index) = elf.section_named(".eh_frame") else {
        return Ok(0);
    };
    let bytes = elf.bytes(index);
    let base = elf.sections[index].addr;
    let located = |at: usize, what: &str| anyhow::anyhow!(".eh_frame+{at:#x}: {what}");
    let mut kept = Vec::new();
    let mut dropped = 0;
    for entry in entries(bytes, base)? {
        let at = entry.at;
        if !layout.is_carried(base + at as u64) {
            dropped += 1;
            continue;
        }
        let (cie_at, cie, range) = match entry.kind {
            EntryKind::Terminator => continue,
            EntryKind::Cie(cie) => {
                if let Some((personality_at, encoding)) = cie.personality {
                    repoint(bytes, personality_at, encoding, base, layout, patches)?;
                }
                continue;
            }
            EntryKind::Fde {
                cie_at, cie, range, ..
            } => (cie_at, cie, range),
        };
        let id_at = at + 4;
        // The CIE pointer counts back from its own place to the CIE.
        let (id_place, cie_place) = (
            layout.map(base + id_at as u64),
            layout.map(base + cie_at as u64),
        );
        if id_place - cie_place != (id_at - cie_at) as u64 {
            let distance =
                u32::try_from(id_place - cie_place).map_err(|_| located(at, "CIE out of reach"))?;
            patches.put(id_place, distance.to_le_bytes());
        }
        let function = Encoding::of(cie.function)
            .ok_or_else(|| located(at, "unsupported function pointer encoding"))?;
        let function_at = id_at + 4;
        let range_at = function_at + function.size;
        let target = repoint(bytes, function_at, function, base, layout, patches)?;
        let removed = layout.is_removed_function(target);
        if removed && range != 0 {
            patches.put(layout.map(base + range_at as u64), vec![0; function.size]);
            dropped += 1;
        } else if range != 0 {
            kept.push(KeptFde {
                address: layout.map(base + at as u64),
                function: layout.map(target),
            });
        }
        if cie.augmented && cie.lsda != OMIT {
            let mut lsda_at = range_at + function.size;
            uleb(bytes, &mut lsda_at).ok_or_else(|| located(at, "bad augmentation length"))?;
            let lsda = Encoding::of(cie.lsda)
                .ok_or_else(|| located(at, "unsupported LSDA pointer encoding"))?;
            repoint(bytes, lsda_at, lsda, base, layout, patches)?;
        }
    }
    rebuild_header(elf, layout, base, &mut kept, patches)?;
    Ok(dropped)
}

fn read_cie(bytes: &[u8], at: usize, end: usize) -> anyhow::Result<Cie> {
    let bad = || anyhow::anyhow!(".eh_frame+{at:#x}: bad CIE");
    let entry = bytes.get(..end).ok_or_else(bad)?;
    let version = *entry.get(at + 8).ok_or_else(bad)?;
    let mut cursor = at + 9;
    let rest = entry.get(cursor..).ok_or_else(bad)?;
    let nul = rest.iter().position(|&b| b == 0).ok_or_else(bad)?;
    let augmentation = rest[..nul].to_vec();
    cursor += nul + 1;
    if version == 4 {
        cursor += 2;
    }
    uleb(entry, &mut cursor).ok_or_else(bad)?; // code alignment
    uleb(entry, &mut cursor).ok_or_else(bad)?; // data alignment (SLEB128, same length)
    if version == 1 {
        cursor += 1;
    } else {
        uleb(entry, &mut cursor).ok_or_else(bad)?;
    }
    let mut cie = Cie {
        function: 0,
        lsda: OMIT,
        augmented: augmentation.first() == Some(&b'z'),
        personality: None,
    };
    if !cie.augmented {
        return Ok(cie);
    }
    uleb(entry, &mut cursor).ok_or_else(bad)?;
    for &letter in augmentation.get(1..).unwrap_or_default() {
        match letter {
            b'P' => {
                let byte = *entry.get(cursor).ok_or_else(bad)?;
                cursor += 1;
                let encoding = Encoding::of(byte & 0x7f).ok_or_else(|| {
                    anyhow::anyhow!(".eh_frame+{at:#x}: unsupported personality encoding {byte:#x}")
                })?;
                cie.personality = Some((cursor, encoding));
                cursor += encoding.size;
            }
            b'L' => {
                cie.lsda = *entry.get(cursor).ok_or_else(bad)?;
                cursor += 1;
            }
            b'R' => {
                cie.function = *entry.get(cursor).ok_or_else(bad)?;
                cursor += 1;
            }
            b'S' | b'B' | b'G' => {}
            other => bail!(
                ".eh_frame+{at:#x}: unknown augmentation {:?}",
                char::from(other)
            ),
        }
    }
    Ok(cie)
}

/// `.eh_frame_hdr`: version 1, then the encodings of the `.eh_frame`
/// pointer, the count and the table, which must be the one linkers write
/// (`datarel | sdata4`: each function and FDE address from the header's
/// start).
fn rebuild_header(
    elf: &Elf<'_>,
    layout: &Layout,
    eh_frame: u64,
    kept: &mut [KeptFde],
    patches: &mut Patches,
) -> anyhow::Result<()> {
    let Some(index) = elf.section_named(".eh_frame_hdr") else {
        return Ok(());
    };
    let bytes = elf.bytes(index);
    let address = elf.sections[index].addr;
    let bad = |what: &str| anyhow::anyhow!(".eh_frame_hdr: {what}");
    let &[1, pointer_encoding, count_encoding, table_encoding, ..] = bytes else {
        return Err(bad("not version 1"));
    };
    if table_encoding != 0x3b || count_encoding != 0x03 {
        return Err(bad("a table encoding linkers do not write"));
    }
    let pointer =
        Encoding::of(pointer_encoding).ok_or_else(|| bad("unsupported pointer encoding"))?;
    let new_address = layout.map(address);
    let mut out = vec![1, pointer_encoding, count_encoding, table_encoding];
    out.extend(
        pointer
            .encode(new_address + 4, layout.map(eh_frame))
            .ok_or_else(|| bad(".eh_frame out of reach"))?,
    );
    let count_at = 4 + pointer.size;
    let old_count = bytes
        .get(count_at..count_at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| bad("truncated"))?;
    if (old_count as usize) < kept.len() {
        return Err(bad("lists fewer FDEs than .eh_frame holds"));
    }
    kept.sort_by_key(|fde| fde.function);
    out.extend((kept.len() as u32).to_le_bytes());
    for fde in kept.iter() {
        for value in [fde.function, fde.address] {
            let relative = value.wrapping_sub(new_address) as i64;
            let relative = i32::try_from(relative).map_err(|_| bad("an entry out of reach"))?;
            out.extend(relative.to_le_bytes());
        }
    }
    // Compacted with `.eh_frame`, the table is as long as its rows (the
    // region was laid out so); in place, the rows left over are zero.
    let compacted = layout
        .region
        .as_ref()
        .is_some_and(|region| (region.start..region.end).contains(&address));
    if !compacted {
        out.resize(bytes.len(), 0);
    }
    patches.put(new_address, out);
    Ok(())
}

impl Layout {
    /// Whether `address` starts (or lies in) a function whose body is gone:
    /// an alias or a thunk.
    pub fn is_removed_function(&self, address: u64) -> bool {
        self.fate_at(address)
            .is_some_and(|fate| matches!(fate, Fate::Alias(_) | Fate::Thunk(_)))
    }
}
