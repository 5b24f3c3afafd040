//! Writing OUT: the bytes before `.text` as they were, the new `.text`,
//! the rest of its segment moved down, later segments moved down in the
//! file by whole multiples of their alignment (their addresses kept), then
//! the sections no segment loads, packed, and the section header table.
//! Every patch lands at its new address; symbol values follow the map.

use crate::elf::{Elf, SectionInfo, Segment, SymbolInfo};
use crate::layout::{Fate, Layout};
use crate::patch::Patches;
use crate::shape::Shape;
use anyhow::{Context, bail};
use object::elf as E;

/// OUT's bytes, and the sections it carries empty.
#[derive(Debug)]
pub struct Written {
    pub bytes: Vec<u8>,
    pub emptied: Vec<(String, u64)>,
}

/// Sections that describe the old layout and are not written again:
/// the relocations of DWARF, and DWARF itself unless `keep_debug` (it was
/// rewritten, `dwarf.rs`; kept relocations of allocated sections are
/// written again, `kept.rs`).
fn is_emptied(elf: &Elf<'_>, section: &SectionInfo, keep_debug: bool) -> bool {
    let debug = crate::elf::is_debug;
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
}

pub(crate) fn write(
    elf: &Elf<'_>,
    shape: &Shape,
    layout: &Layout,
    patches: &Patches,
    symbols: &[SymbolInfo],
    rewritten: &Rewritten<'_>,
    fill_bytes: &[u8],
) -> anyhow::Result<Written> {
    let data = elf.data;
    let load = &elf.segments[shape.segment];
    let segment_file_end = load.offset + load.filesz;
    let delta = layout.tail_delta;
    // Later segments move by a whole multiple of the largest alignment among them.
    let later_align = elf
        .segments
        .iter()
        .filter(|p| p.p_type == E::PT_LOAD.0 && p.offset >= segment_file_end)
        .map(|p| p.align)
        .max()
        .unwrap_or(1);
    let shift = delta / later_align * later_align;
    let text = &elf.sections[shape.text];
    let in_tail = |address: u64| (layout.tail_start..layout.tail_end).contains(&address);

    // Section headers.
    let mut sections = elf.sections.clone();
    let mut emptied = Vec::new();
    for (index, section) in sections.iter_mut().enumerate() {
        if index == shape.text {
            section.size = layout.new_text_end - text.addr;
        } else if section.is_alloc() && in_tail(section.addr) && section.size > 0 {
            section.addr -= delta;
            section.offset -= delta;
        } else if section.has_bytes() && section.offset >= segment_file_end && section.is_alloc() {
            section.offset -= shift;
        } else if section.is_alloc() && !section.has_bytes() && section.offset >= segment_file_end {
            section.offset = section.offset.saturating_sub(shift);
        }
        if let Some((_, bytes)) = rewritten.sections.iter().find(|(i, _)| *i == index) {
            section.size = bytes.len() as u64;
        } else if is_emptied(elf, &elf.sections[index], rewritten.keep_debug) && section.size > 0 {
            emptied.push((section.name.clone(), section.size));
            section.size = 0;
        }
    }
    // Program headers.
    let mut segments: Vec<Segment> = elf.segments.clone();
    for (index, segment) in segments.iter_mut().enumerate() {
        if index == shape.segment {
            segment.filesz -= delta;
            segment.memsz -= delta;
        } else if segment.p_type != E::PT_LOAD.0 && in_tail(segment.vaddr) && segment.filesz > 0 {
            segment.vaddr -= delta;
            segment.paddr -= delta;
            segment.offset -= delta;
        } else if segment.offset >= segment_file_end && segment.filesz + segment.memsz > 0 {
            segment.offset -= shift;
        }
    }
    // The allocated bytes.
    let alloc_end = elf
        .segments
        .iter()
        .filter(|p| p.p_type == E::PT_LOAD.0)
        .map(|p| p.offset + p.filesz)
        .max()
        .unwrap_or(0)
        .max(
            elf.sections
                .iter()
                .filter(|s| s.is_alloc() && s.has_bytes())
                .map(|s| s.offset + s.size)
                .max()
                .unwrap_or(0),
        );
    let get = |start: u64, end: u64| {
        data.get(start as usize..end as usize)
            .with_context(|| format!("file bytes {start:#x}..{end:#x} past the end"))
    };
    let text_offset = text.offset;
    let headers_end = elf.phoff + 56 * elf.segments.len() as u64;
    if text_offset < headers_end.max(64) {
        bail!(".text at file offset {text_offset:#x} overlaps the ELF and program headers");
    }
    let mut out: Vec<u8> = Vec::with_capacity(data.len());
    out.extend_from_slice(get(0, text_offset)?);
    // Gaps in code hold the architecture's filler, so a decoder running
    // past a function that does not return meets no bogus instruction.
    let fill = |out: &mut Vec<u8>, end: u64| {
        while (out.len() as u64) < end {
            let gap = (end - out.len() as u64) as usize;
            out.extend_from_slice(&fill_bytes[..gap.min(fill_bytes.len())]);
        }
    };
    fill(&mut out, text_offset + layout.new_text_end - text.addr);
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
        let from = text_offset + (piece.start - text.addr);
        let to = (text_offset + (piece.new_start - text.addr)) as usize;
        out[to..to + carried as usize].copy_from_slice(get(from, from + carried)?);
    }
    let tail_file_start = if layout.tail_start < layout.tail_end {
        load.offset + (layout.tail_start - load.vaddr)
    } else {
        segment_file_end
    };
    fill(&mut out, tail_file_start - delta);
    out.extend_from_slice(get(tail_file_start, segment_file_end)?);
    if alloc_end > segment_file_end {
        out.resize((segment_file_end - shift) as usize, 0);
        out.extend_from_slice(get(segment_file_end, alloc_end)?);
    }
    // Patches, by new address.
    for (&address, bytes) in &patches.writes {
        let offset = file_offset(&segments, address, bytes.len() as u64)
            .with_context(|| format!("a patch at {address:#x} lands in no segment"))?
            as usize;
        out.get_mut(offset..offset + bytes.len())
            .with_context(|| format!("a patch at {address:#x} lands past the file's end"))?
            .copy_from_slice(bytes);
    }
    // Symbol tables: .dynsym in place (allocated), .symtab below.
    let mut symtab_bytes = None;
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
        } else {
            symtab_bytes = Some((index, bytes));
        }
    }
    // The sections no segment loads, in file order, packed.
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
        match &symtab_bytes {
            Some((symtab, bytes)) if *symtab == index => out.extend_from_slice(bytes),
            _ => {
                let old = &elf.sections[index];
                let start = out.len();
                out.extend_from_slice(get(old.offset, old.offset + old.size)?);
                for (_, offset, bytes) in patches.unloaded.iter().filter(|(i, _, _)| *i == index) {
                    let at = start + *offset as usize;
                    out[at..at + bytes.len()].copy_from_slice(bytes);
                }
            }
        }
    }
    // Headers.
    out.resize(out.len().next_multiple_of(8), 0);
    let shoff = out.len() as u64;
    for section in &sections {
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
    Ok(Written {
        bytes: out,
        emptied,
    })
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
