//! Writing OUT: each `PT_LOAD` in file order, the one holding `.text`
//! with the new `.text` and the rest of it moved down, the one holding the
//! exception tables compacted when they are (`Layout::region`), every
//! segment after one that got shorter moved down in the file by whole
//! multiples of the largest alignment (their addresses kept, but the code
//! segment's where it closes up behind the exception tables' segment:
//! [`code_shift`]); then the
//! sections no segment loads, packed, and the section header table. Every
//! patch lands at its new address; symbol values follow the map.

use crate::layout::{Fate, Layout};
use crate::patch::Patches;
use crate::shape::Shape;
use anyhow::{Context, bail};
use icf_object::linked_elf::{Elf, SectionInfo, Segment, SymbolInfo};
use object::elf as E;

/// OUT's bytes, and the sections it carries empty.
#[derive(Debug)]
pub struct Written {
    pub bytes: Vec<u8>,
    pub emptied: Vec<(String, u64)>,
    /// Symbols dropped as written only for the kept relocations.
    pub link_only_symbols: usize,
}

/// Sections that describe the old layout and are not written again:
/// the relocations of DWARF, and DWARF itself unless `keep_debug` (it was
/// rewritten, `dwarf.rs`; kept relocations of allocated sections are
/// written again, `kept.rs`).
fn is_emptied(elf: &Elf<'_>, section: &SectionInfo, keep_debug: bool) -> bool {
    let debug = icf_object::linked_elf::is_debug;
    if section.is_alloc() {
        return false;
    }
    if debug(section) {
        return !keep_debug;
    }
    (section.sh_type == E::SHT_RELA.0 || section.sh_type == E::SHT_REL.0)
        && elf
            .sections
            .get(section.info as usize)
            .is_some_and(|target| target.is_alloc() || debug(target))
}

/// The sections no segment loads that OUT carries with new bytes, and
/// whether it keeps the DWARF (rewritten) or carries it empty.
pub(crate) struct Rewritten<'a> {
    pub sections: &'a crate::patch::Rewritten,
    pub keep_debug: bool,
    /// OUT drops the relocations the link kept: `.symtab` drops the
    /// symbols written only for them too (`symbols::drop_link_only`).
    pub drop_link_only_symbols: bool,
}

pub(crate) fn write(
    elf: &Elf<'_>,
    shape: &Shape,
    layout: &Layout,
    patches: &mut Patches,
    symbols: &[SymbolInfo],
    rewritten: &Rewritten<'_>,
    fill_bytes: &[u8],
) -> anyhow::Result<Written> {
    let files = FileLayout::new(elf, shape, layout)?;
    let (mut sections, emptied) = section_headers(elf, shape, layout, &files, rewritten)?;
    let segments = program_headers(elf, layout, &files, &sections);
    let mut out: Vec<u8> = Vec::with_capacity(elf.data.len());
    write_loaded(&mut out, elf, shape, layout, &files, fill_bytes)?;
    // Patches, by new address.
    for (address, bytes) in patches.writes.settle()? {
        let offset = file_offset(&segments, address, bytes.len() as u64)
            .with_context(|| format!("a patch at {address:#x} lands in no segment"))?
            as usize;
        out.get_mut(offset..offset + bytes.len())
            .with_context(|| format!("a patch at {address:#x} lands past the file's end"))?
            .copy_from_slice(bytes);
    }
    let tables = symbol_tables(
        &mut out,
        elf,
        shape,
        layout,
        symbols,
        rewritten,
        &mut sections,
    )?;
    write_unloaded(&mut out, elf, &mut sections, rewritten, patches, &tables)?;
    write_headers(&mut out, elf, layout, &sections, &segments)?;
    Ok(Written {
        bytes: out,
        emptied,
        link_only_symbols: tables.link_only_symbols,
    })
}

/// The bytes of IN at file offsets `start..end`.
fn file_bytes<'data>(elf: &Elf<'data>, start: u64, end: u64) -> anyhow::Result<&'data [u8]> {
    elf.data
        .get(start as usize..end as usize)
        .with_context(|| format!("file bytes {start:#x}..{end:#x} past the end"))
}

/// Sections emptied in OUT: (name, old size).
type Emptied = Vec<(String, u64)>;

/// OUT's section headers (offsets of the unloaded sections still to
/// settle), and the sections emptied.
fn section_headers(
    elf: &Elf<'_>,
    shape: &Shape,
    layout: &Layout,
    files: &FileLayout,
    rewritten: &Rewritten<'_>,
) -> anyhow::Result<(Vec<SectionInfo>, Emptied)> {
    let text = &elf.sections[shape.text];
    let region_section = |address: u64| {
        layout
            .region
            .as_ref()
            .is_some_and(|r| (r.start..r.end).contains(&address))
    };
    let mut sections = elf.sections.clone();
    let mut emptied = Vec::new();
    for (index, section) in sections.iter_mut().enumerate() {
        if section.is_alloc() {
            let old = section.addr;
            let old_end = section.addr + section.size;
            if index == shape.text {
                section.addr = layout.new_section_address(text.addr);
                section.size = layout.new_text_end - section.addr;
            } else if section.size > 0 && region_section(section.addr) {
                let region = layout.region.as_ref().context("no region")?;
                section.size = region.new_size(section.addr, old_end);
                section.addr = layout.map(section.addr);
            } else if section.size > 0 {
                section.addr = layout.new_section_address(section.addr);
            }
            if let Some(offset) = files.offset_of(elf, section.addr, old) {
                section.offset = offset;
            }
        }
        if let Some((_, bytes)) = rewritten.sections.iter().find(|(i, _)| *i == index) {
            section.size = bytes.len() as u64;
        } else if is_emptied(elf, &elf.sections[index], rewritten.keep_debug) && section.size > 0 {
            emptied.push((section.name.clone(), section.size));
            section.size = 0;
        }
    }
    Ok((sections, emptied))
}

/// OUT's program headers.
fn program_headers(
    elf: &Elf<'_>,
    layout: &Layout,
    files: &FileLayout,
    sections: &[SectionInfo],
) -> Vec<Segment> {
    let mut segments: Vec<Segment> = elf.segments.clone();
    for (index, segment) in segments.iter_mut().enumerate() {
        if segment.p_type == E::PT_LOAD.0 {
            let freed = files.freed[index];
            segment.filesz -= freed;
            segment.memsz -= freed;
            segment.offset = files.new_offset[index];
            let moved = segment.vaddr - files.new_vaddr[index];
            segment.vaddr -= moved;
            segment.paddr = segment.paddr.wrapping_sub(moved);
        } else if segment.filesz + segment.memsz > 0 {
            let old = segment.vaddr;
            let new = layout.new_section_address(old);
            if segment.p_type == E::PT_GNU_EH_FRAME.0
                && let Some(header) = elf.section_named(".eh_frame_hdr")
                && elf.sections[header].addr == old
            {
                segment.filesz = sections[header].size;
                segment.memsz = sections[header].size;
            }
            segment.vaddr = new;
            segment.paddr = segment.paddr.wrapping_add(new.wrapping_sub(old));
            if let Some(offset) = files.offset_of(elf, new, old) {
                segment.offset = offset;
            }
        }
    }
    segments
}

/// The allocated bytes into `out`: each `PT_LOAD`'s, in file order (the
/// text segment laid out again, the region compacted), then any past the
/// last segment.
fn write_loaded(
    out: &mut Vec<u8>,
    elf: &Elf<'_>,
    shape: &Shape,
    layout: &Layout,
    files: &FileLayout,
    fill_bytes: &[u8],
) -> anyhow::Result<()> {
    let get = |start: u64, end: u64| file_bytes(elf, start, end);
    let text = &elf.sections[shape.text];
    let text_offset = text.offset;
    let headers_end = elf.phoff + 56 * elf.segments.len() as u64;
    if text_offset < headers_end.max(64) {
        bail!(".text at file offset {text_offset:#x} overlaps the ELF and program headers");
    }
    let first = files.order.first().map_or(0, |&i| elf.segments[i].offset);
    out.extend_from_slice(get(0, first)?);
    // Gaps in code hold the architecture's filler, so a decoder running
    // past a function that does not return meets no bogus instruction.
    let fill = |out: &mut Vec<u8>, end: u64| fill_to(out, end, fill_bytes);
    for &index in &files.order {
        let load = &elf.segments[index];
        let new_offset = files.new_offset[index];
        if (out.len() as u64) > new_offset {
            bail!("internal: segment {index} would overlap the one before it in the file");
        }
        out.resize(new_offset as usize, 0);
        let load_end = load.offset + load.filesz;
        if index == shape.segment {
            write_text_segment(out, elf, shape, layout, new_offset, &fill)?;
        } else if let Some(region) = layout.region.as_ref().filter(|r| r.segment == index) {
            let region_offset = load.offset + (region.start - load.vaddr);
            out.extend_from_slice(get(load.offset, region_offset)?);
            let base = out.len() as u64;
            out.resize((base + region.new_end - region.start) as usize, 0);
            for &(old, old_end, new) in &region.runs {
                let from = load.offset + (old - load.vaddr);
                let to = (base + (new - region.start)) as usize;
                out[to..to + (old_end - old) as usize]
                    .copy_from_slice(get(from, from + (old_end - old))?);
            }
        } else {
            out.extend_from_slice(get(load.offset, load_end)?);
        }
    }
    // Allocated bytes past the last segment (none a linker writes, kept
    // as they were).
    if let Some(&last) = files.order.last() {
        let load = &elf.segments[last];
        let load_end = load.offset + load.filesz;
        if files.alloc_end > load_end {
            let shift = load.offset - files.new_offset[last];
            out.resize((load_end - shift - files.freed[last]) as usize, 0);
            out.extend_from_slice(get(load_end, files.alloc_end)?);
        }
    }
    Ok(())
}

/// Extends `out` to `end` bytes with `pattern` repeated from where it
/// ends now (the last copy cut short). Filling all of a new `.text` one
/// copy of a one-byte `int3` at a time took 15 ms on opt_lite.
fn fill_to(out: &mut Vec<u8>, end: u64, pattern: &[u8]) {
    let Some(gap) = (end as usize).checked_sub(out.len()).filter(|&gap| gap > 0) else {
        return;
    };
    let start = out.len();
    if let [byte] = pattern {
        out.resize(start + gap, *byte);
        return;
    }
    out.resize(start + gap, 0);
    if pattern.is_empty() {
        return;
    }
    for chunk in out[start..].chunks_mut(pattern.len()) {
        chunk.copy_from_slice(&pattern[..chunk.len()]);
    }
}

/// The symbol tables as OUT holds them: `.dynsym` written in place (it is
/// allocated), `.symtab` (and its strings, when link-only symbols go)
/// returned for [`write_unloaded`].
struct SymbolTables {
    symtab: Option<(usize, Vec<u8>)>,
    strtab: Option<(usize, Vec<u8>)>,
    link_only_symbols: usize,
}

/// Every symbol's new value and size; `.dynsym` written into `out`,
/// `.symtab` returned (pruned of link-only symbols when asked, its header
/// in `sections` updated).
fn symbol_tables(
    out: &mut [u8],
    elf: &Elf<'_>,
    shape: &Shape,
    layout: &Layout,
    symbols: &[SymbolInfo],
    rewritten: &Rewritten<'_>,
    sections: &mut [SectionInfo],
) -> anyhow::Result<SymbolTables> {
    let mut symtab_bytes = None;
    let mut strtab_bytes: Option<(usize, Vec<u8>)> = None;
    let mut link_only_symbols = 0;
    for (index, section) in elf.sections.iter().enumerate() {
        if section.sh_type != E::SHT_SYMTAB.0 && section.sh_type != E::SHT_DYNSYM.0 {
            continue;
        }
        let table = if index == shape.symtab {
            symbols.to_vec()
        } else {
            elf.symbols(index)?
        };
        let mut bytes = elf.bytes(index).to_vec();
        for (number, symbol) in table.iter().enumerate() {
            let Some(new) = crate::symbols::new_symbol(elf, layout, symbol) else {
                continue;
            };
            let at = number * 24;
            bytes[at + 8..at + 16].copy_from_slice(&new.0.to_le_bytes());
            bytes[at + 16..at + 24].copy_from_slice(&new.1.to_le_bytes());
        }
        if section.is_alloc() {
            let offset = sections[index].offset as usize;
            out.get_mut(offset..offset + bytes.len())
                .with_context(|| format!("{} lies past the loaded bytes", section.name))?
                .copy_from_slice(&bytes);
        } else if rewritten.drop_link_only_symbols
            && index == shape.symtab
            && let Some(pruned) = crate::symbols::drop_link_only(elf, index, &bytes)
        {
            sections[index].size = pruned.symtab.len() as u64;
            sections[index].info = pruned.first_global;
            if let Some((strtab, strings)) = pruned.strtab {
                sections[strtab].size = strings.len() as u64;
                strtab_bytes = Some((strtab, strings));
            }
            link_only_symbols = pruned.dropped;
            symtab_bytes = Some((index, pruned.symtab));
        } else {
            symtab_bytes = Some((index, bytes));
        }
    }
    Ok(SymbolTables {
        symtab: symtab_bytes,
        strtab: strtab_bytes,
        link_only_symbols,
    })
}

/// The sections no segment loads, in file order, packed after the
/// loaded bytes: rewritten ones, the symbol tables, the rest copied (with
/// the patches of unloaded sections).
fn write_unloaded(
    out: &mut Vec<u8>,
    elf: &Elf<'_>,
    sections: &mut [SectionInfo],
    rewritten: &Rewritten<'_>,
    patches: &Patches,
    tables: &SymbolTables,
) -> anyhow::Result<()> {
    let (symtab_bytes, strtab_bytes) = (&tables.symtab, &tables.strtab);
    let mut order: Vec<usize> = (0..sections.len())
        .filter(|&i| !elf.sections[i].is_alloc() && elf.sections[i].has_bytes() && i != 0)
        .collect();
    order.sort_by_key(|&i| elf.sections[i].offset);
    for index in order {
        let align = sections[index].align.max(1) as usize;
        out.resize(out.len().next_multiple_of(align), 0);
        sections[index].offset = out.len() as u64;
        if sections[index].size == 0 {
            continue;
        }
        if let Some((_, bytes)) = rewritten.sections.iter().find(|(i, _)| *i == index) {
            out.extend_from_slice(bytes);
            continue;
        }
        match (&symtab_bytes, &strtab_bytes) {
            (Some((symtab, bytes)), _) if *symtab == index => out.extend_from_slice(bytes),
            (_, Some((strtab, bytes))) if *strtab == index => out.extend_from_slice(bytes),
            _ => {
                let old = &elf.sections[index];
                let start = out.len();
                out.extend_from_slice(file_bytes(elf, old.offset, old.offset + old.size)?);
                for (_, offset, bytes) in patches.unloaded.iter().filter(|(i, _, _)| *i == index) {
                    let at = start + *offset as usize;
                    out[at..at + bytes.len()].copy_from_slice(bytes);
                }
            }
        }
    }
    Ok(())
}

/// The section header table at OUT's end, the entry point, and the
/// program headers in place.
fn write_headers(
    out: &mut Vec<u8>,
    elf: &Elf<'_>,
    layout: &Layout,
    sections: &[SectionInfo],
    segments: &[Segment],
) -> anyhow::Result<()> {
    out.resize(out.len().next_multiple_of(8), 0);
    let shoff = out.len() as u64;
    for section in sections {
        out.extend_from_slice(&section_header(section));
    }
    let entry = layout.map(elf.entry);
    out[24..32].copy_from_slice(&entry.to_le_bytes());
    out[40..48].copy_from_slice(&shoff.to_le_bytes());
    if elf.shoff == 0 {
        bail!("no section header table");
    }
    for (index, segment) in segments.iter().enumerate() {
        let at = elf.phoff as usize + index * 56;
        out[at..at + 56].copy_from_slice(&program_header(segment));
    }
    Ok(())
}

/// How far the segment holding `.text` can move down in addresses so that
/// it closes up in the file behind the segment before it, which the
/// exception tables' region made shorter (`Layout::region`). A segment's
/// file offset must stay congruent to its address modulo its alignment
/// (64 KiB for lld's and mold's AArch64 links): kept at its address, it
/// could only move down in the file by whole multiples of that, and up
/// to 64 KiB of the region's saving stayed in the file as a gap (AArch64
/// opt_lite: 36 KB). Moved by a multiple of a page and of every
/// alignment in it, nothing in it changes its place in its page (an
/// `adrp`'s low half, an erratum's page-end rule) or its alignment; it
/// still starts in a page of its own after the one before it. 0 where
/// it cannot move: `.text` does not start it, a piece of it must keep its
/// address (`pin.rs`), the region is not the segment right before it,
/// or that segment ends where it starts (mold's layout, where the
/// address there is the next segment's).
pub(crate) fn code_shift(elf: &Elf<'_>, shape: &Shape, layout: &Layout) -> anyhow::Result<u64> {
    const PAGE: u64 = 4096;
    let Some(region) = layout.region.as_ref().filter(|r| !r.end_starts_next) else {
        return Ok(0);
    };
    let code = &elf.segments[shape.segment];
    let before = &elf.segments[region.segment];
    let loads_between = elf
        .segments
        .iter()
        .any(|p| p.p_type == E::PT_LOAD.0 && p.offset > before.offset && p.offset < code.offset);
    if layout.shift != 0
        || code.vaddr != shape.text_start
        || before.offset >= code.offset
        || loads_between
        || layout.pieces.iter().any(|piece| piece.pinned)
    {
        return Ok(0);
    }
    let files = FileLayout::new(elf, shape, layout)?;
    let page_align = files.align;
    let unit = elf
        .sections
        .iter()
        .filter(|s| s.is_alloc() && (code.vaddr..code.vaddr + code.memsz).contains(&s.addr))
        .map(|s| s.align.max(1))
        .fold(PAGE, u64::max);
    if page_align <= unit {
        return Ok(0);
    }
    // Where the segment before now ends, in the file and in addresses;
    // the segment starts in a page after that one's last.
    let before_file_end =
        files.new_offset[region.segment] + before.filesz - files.freed[region.segment];
    let floor = region.new_end.next_multiple_of(page_align);
    // Offsets at or after that end, in the segment's residue modulo
    // `unit`, from the lowest: each with the smallest address shift that
    // keeps the offset congruent to the address, until one keeps the
    // segment out of the page of the one before (the shifts repeat after
    // `page_align / unit` of them).
    let residue = code.offset % unit;
    let mut new_offset = before_file_end - before_file_end % unit + residue;
    if new_offset < before_file_end {
        new_offset += unit;
    }
    for _ in 0..page_align / unit {
        if new_offset >= code.offset {
            break;
        }
        let shift = (code.offset - new_offset) % page_align;
        if code.vaddr - shift >= floor {
            return Ok(shift);
        }
        new_offset += unit;
    }
    Ok(0)
}

/// Where each `PT_LOAD` goes in OUT's file: the segments after one that got
/// shorter move down by whole multiples of the largest alignment, so that
/// each keeps its offset congruent to its address (the segment holding
/// `.text` at its new address, `Layout::shift`).
struct FileLayout {
    /// `PT_LOAD`s by file offset.
    order: Vec<usize>,
    /// Per segment: its new file offset (`PT_LOAD`s only), its new
    /// address, and how many bytes shorter it is.
    new_offset: Vec<u64>,
    new_vaddr: Vec<u64>,
    freed: Vec<u64>,
    /// The largest alignment of a `PT_LOAD`: every offset stays
    /// congruent to its address modulo it.
    align: u64,
    /// Where the allocated bytes end in IN.
    alloc_end: u64,
}

impl FileLayout {
    fn new(elf: &Elf<'_>, shape: &Shape, layout: &Layout) -> anyhow::Result<FileLayout> {
        let mut order: Vec<usize> = (0..elf.segments.len())
            .filter(|&i| elf.segments[i].p_type == E::PT_LOAD.0)
            .collect();
        order.sort_by_key(|&i| elf.segments[i].offset);
        let mut freed = vec![0; elf.segments.len()];
        freed[shape.segment] = layout.tail_delta - layout.shift;
        let mut new_vaddr: Vec<u64> = elf.segments.iter().map(|p| p.vaddr).collect();
        new_vaddr[shape.segment] -= layout.shift;
        if let Some(region) = &layout.region {
            freed[region.segment] += region.freed();
        }
        let align = order
            .iter()
            .map(|&i| elf.segments[i].align)
            .max()
            .unwrap_or(1)
            .max(1);
        // Each as far down as its congruence to its new address allows
        // without reaching into the one before it as that one now ends
        // (never further up than it was).
        let mut new_offset: Vec<u64> = elf.segments.iter().map(|p| p.offset).collect();
        let (mut previous_end, mut new_previous_end) = (0, 0);
        for &i in &order {
            let load = &elf.segments[i];
            if load.offset < previous_end {
                bail!("segments {i} and the one before it overlap in the file");
            }
            previous_end = load.offset + load.filesz;
            if new_previous_end > 0 {
                let moved = load.vaddr - new_vaddr[i];
                let wanted = (load.offset % align + align - moved % align) % align;
                let lowest = new_previous_end - new_previous_end % align + wanted;
                let lowest = if lowest < new_previous_end {
                    lowest + align
                } else {
                    lowest
                };
                if lowest > load.offset {
                    bail!("internal: segment {i} would move up in the file");
                }
                new_offset[i] = lowest;
            }
            new_previous_end = new_offset[i] + load.filesz - freed[i];
        }
        let alloc_end = order
            .iter()
            .map(|&i| elf.segments[i].offset + elf.segments[i].filesz)
            .chain(
                elf.sections
                    .iter()
                    .filter(|s| s.is_alloc() && s.has_bytes())
                    .map(|s| s.offset + s.size),
            )
            .max()
            .unwrap_or(0);
        Ok(FileLayout {
            order,
            new_offset,
            new_vaddr,
            freed,
            align,
            alloc_end,
        })
    }

    /// The new file offset of new address `address`, which was at `old`:
    /// in the `PT_LOAD` that held `old` (or ended there: an empty section
    /// at a segment's end).
    fn offset_of(&self, elf: &Elf<'_>, address: u64, old: u64) -> Option<u64> {
        let holding = |within: &dyn Fn(&Segment) -> bool| {
            self.order
                .iter()
                .map(|&i| (i, &elf.segments[i]))
                .find(|(_, p)| within(p))
                .map(|(i, _)| self.new_offset[i] + (address - self.new_vaddr[i]))
        };
        holding(&|p| p.vaddr <= old && old < p.vaddr + p.memsz)
            .or_else(|| holding(&|p| old == p.vaddr + p.memsz))
    }
}

/// The segment holding `.text`, written at `new_offset`: what precedes
/// `.text` as it was, the kept pieces at their new places, then the tail.
fn write_text_segment(
    out: &mut Vec<u8>,
    elf: &Elf<'_>,
    shape: &Shape,
    layout: &Layout,
    new_offset: u64,
    fill: &dyn Fn(&mut Vec<u8>, u64),
) -> anyhow::Result<()> {
    let get = |start: u64, end: u64| file_bytes(elf, start, end);
    let load = &elf.segments[shape.segment];
    let text = &elf.sections[shape.text];
    let segment_file_end = load.offset + load.filesz;
    // Where `.text` starts in the old file and in OUT, and its new
    // address (what precedes it in the segment moves with it).
    let old_text = text.offset;
    let text_offset = new_offset + (text.addr - load.vaddr);
    let new_text = text.addr - layout.shift;
    out.extend_from_slice(get(load.offset, old_text)?);
    fill(out, text_offset + layout.new_text_end - new_text);
    for (index, piece) in layout.pieces.iter().enumerate() {
        if piece.fate != Fate::Keep {
            continue;
        }
        // The piece, and as much of the padding that followed it as fits
        // before what comes next: the bytes after a function that does not
        // return stay what they were.
        let next = layout.pieces[index + 1..]
            .iter()
            .find(|p| matches!(p.fate, Fate::Keep | Fate::Thunk(_)))
            .map_or(layout.new_text_end, |p| p.new_start);
        let padding = layout
            .pieces
            .get(index + 1)
            .filter(|p| p.fate == Fate::Padding)
            .map_or(0, |p| p.end - p.start);
        let size = piece.end - piece.start;
        let carried = size + padding.min(next - (piece.new_start + size));
        let from = old_text + (piece.start - text.addr);
        let to = (text_offset + (piece.new_start - new_text)) as usize;
        out[to..to + carried as usize].copy_from_slice(get(from, from + carried)?);
    }
    let tail_file_start = if layout.tail_start < layout.tail_end {
        load.offset + (layout.tail_start - load.vaddr)
    } else {
        segment_file_end
    };
    fill(
        out,
        new_offset + (tail_file_start - load.offset) - (layout.tail_delta - layout.shift),
    );
    out.extend_from_slice(get(tail_file_start, segment_file_end)?);
    Ok(())
}

fn file_offset(segments: &[Segment], address: u64, size: u64) -> Option<u64> {
    segments
        .iter()
        .filter(|p| p.p_type == E::PT_LOAD.0)
        .find(|p| p.vaddr <= address && address + size <= p.vaddr + p.filesz)
        .map(|p| p.offset + (address - p.vaddr))
}

fn section_header(s: &SectionInfo) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend(s.name_offset.to_le_bytes());
    out.extend(s.sh_type.to_le_bytes());
    out.extend(s.flags.to_le_bytes());
    out.extend(s.addr.to_le_bytes());
    out.extend(s.offset.to_le_bytes());
    out.extend(s.size.to_le_bytes());
    out.extend(s.link.to_le_bytes());
    out.extend(s.info.to_le_bytes());
    out.extend(s.align_field.to_le_bytes());
    out.extend(s.entsize.to_le_bytes());
    out
}

fn program_header(p: &Segment) -> Vec<u8> {
    let mut out = Vec::with_capacity(56);
    out.extend(p.p_type.to_le_bytes());
    out.extend(p.flags.to_le_bytes());
    out.extend(p.offset.to_le_bytes());
    out.extend(p.vaddr.to_le_bytes());
    out.extend(p.paddr.to_le_bytes());
    out.extend(p.filesz.to_le_bytes());
    out.extend(p.memsz.to_le_bytes());
    out.extend(p.align_field.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::fill_to;

    #[test]
    fn a_fill_repeats_its_pattern_from_where_the_bytes_end_and_cuts_the_last_copy() {
        for pattern in [&[0xcc][..], &[0x1f, 0x20, 0x03, 0xd5][..]] {
            for (already, end) in [(0, 0), (3, 3), (0, 1), (1, 4), (2, 7), (5, 4102), (9, 4)] {
                let mut out = vec![7u8; already];
                fill_to(&mut out, end, pattern);
                let mut expected = vec![7u8; already];
                while expected.len() < end as usize {
                    let gap = end as usize - expected.len();
                    expected.extend_from_slice(&pattern[..gap.min(pattern.len())]);
                }
                assert_eq!(out, expected, "{pattern:02x?} from {already} to {end}");
            }
        }
    }
}
