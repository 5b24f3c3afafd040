//! Where things are in the image `icf shrink` moves code in, checked:
//! `.text`, the segment holding it and what follows it there, the symbol
//! table, the kept relocations.

use anyhow::{Context, bail};
use icf_object::linked_elf::{self as elf, Elf};
use object::elf as E;

/// The largest section alignment a new layout keeps (a page of the
/// largest kind).
const MAX_ALIGN: u64 = 1 << 21;

/// The page an AArch64 `adrp` gives, whatever page size the system uses.
const ADRP_PAGE: u64 = 4096;

/// Where things are in the image: `.text`, the segment holding it, the
/// symbol table, the kept relocations.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    pub text: usize,
    pub text_start: u64,
    pub text_end: u64,
    /// The `PT_LOAD` holding `.text`.
    pub segment: usize,
    /// The sections after `.text` in that segment, as addresses.
    pub tail_start: u64,
    pub tail_end: u64,
    pub tail_align: u64,
    pub symtab: usize,
    /// `SHT_RELA` sections a `-q` link kept, with the section each patches.
    pub kept: Vec<(usize, usize)>,
}

impl Shape {
    pub(crate) fn of(elf: &Elf<'_>) -> anyhow::Result<Shape> {
        if elf.e_type != E::ET_EXEC.0 && elf.e_type != E::ET_DYN.0 {
            bail!("not a linked executable or shared library");
        }
        if elf.machine == E::EM_AARCH64.0 && elf.section_named(".note.gnu.gold-version").is_some() {
            bail!(
                "linked by gold for AArch64, whose --emit-relocs output puts the relocations of some \
                 functions at the offset they have in their input section instead of in .text \
                 (a `bl`'s CALL26 lands on another function's `adrp`): icf does not move code by \
                 relocations it cannot trust. Link with GNU ld, lld or mold"
            );
        }
        for (index, section) in elf.sections.iter().enumerate() {
            if section.align_field > MAX_ALIGN || !section.align.is_power_of_two() {
                bail!(
                    "section {} ({index}): alignment {:#x} is no power of two up to {MAX_ALIGN:#x}",
                    section.name,
                    section.align_field
                );
            }
        }
        let text = elf
            .sections
            .iter()
            .position(|s| s.name == ".text" && s.is_executable() && s.is_alloc())
            .context("no executable .text section")?;
        let symtab = elf
            .sections
            .iter()
            .position(|s| s.sh_type == E::SHT_SYMTAB.0)
            .context("no .symtab: icf shrink needs the symbols a link writes (do not strip IN; strip OUT)")?;
        // Relocations kept for allocated sections, and for sections no
        // segment loads but tools read addresses from (`.note.stapsdt`'s
        // probes); DWARF's are dropped with it.
        let kept: Vec<(usize, usize)> = elf
            .sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.sh_type == E::SHT_RELA.0 && !s.is_alloc())
            .filter_map(|(index, s)| {
                let target = s.info as usize;
                elf.sections
                    .get(target)
                    .filter(|t| t.is_alloc() || (t.has_bytes() && !elf::is_debug(t)))
                    .map(|_| (index, target))
            })
            .collect();
        if !kept.iter().any(|&(_, target)| target == text) {
            bail!(
                "no relocations kept for .text: icf shrink moves code and needs every reference to it. \
                 Link with -Wl,-q (--emit-relocs); `icf report` estimates what folding would save without them, \
                 and `icf link` folds at link time"
            );
        }
        let t = &elf.sections[text];
        let (text_start, text_end) = (t.addr, t.addr + t.size);
        let segment = elf
            .segments
            .iter()
            .position(|p| {
                p.p_type == E::PT_LOAD.0 && p.vaddr <= text_start && text_end <= p.vaddr + p.filesz
            })
            .context("no PT_LOAD segment holds .text")?;
        let load = &elf.segments[segment];
        let segment_end = load.vaddr + load.memsz;
        if load.memsz != load.filesz {
            bail!("the segment holding .text has bytes not in the file");
        }
        let in_file = |address: u64| load.offset + (address - load.vaddr);
        if load.offset.saturating_add(load.filesz) > elf.data.len() as u64
            || t.offset != in_file(text_start)
        {
            bail!("the segment holding .text and .text's own file offset disagree");
        }
        let tail: Vec<&elf::SectionInfo> = elf
            .sections
            .iter()
            .filter(|s| s.is_alloc() && s.addr >= text_end && s.addr < segment_end && s.size > 0)
            .collect();
        if tail
            .iter()
            .any(|s| s.addr + s.size > segment_end || s.offset != in_file(s.addr))
        {
            bail!("a section after .text and the segment holding it disagree on where it is");
        }
        if tail.iter().any(|s| !s.has_bytes()) {
            bail!("the segment holding .text ends in a section without bytes");
        }
        let tail_start = tail.iter().map(|s| s.addr).min().unwrap_or(segment_end);
        let mut tail_align = tail.iter().map(|s| s.align).max().unwrap_or(1);
        for p in &elf.segments {
            if p.p_type != E::PT_LOAD.0 && p.vaddr >= text_end && p.vaddr < segment_end {
                tail_align = tail_align.max(p.align);
            }
        }
        // AArch64 code reaches what follows `.text` through `adrp`, which
        // gives a 4 KiB page the code completes with an address's low 12
        // bits. A pair the kept relocations name is written again wherever
        // the tail goes; a page kept past its pair (in a register across
        // a call, which a return may hand back) is a value of its own,
        // which points at the same place in the data only if the data
        // moves by whole pages. GNU ld puts `.rodata` there; a whole-page
        // move costs less than a page of the saving, and `icf verify`
        // (which reads such a page as an address into the data) proves it.
        if elf.machine == E::EM_AARCH64.0 && !tail.is_empty() {
            tail_align = tail_align.max(ADRP_PAGE);
        }
        Ok(Shape {
            text,
            text_start,
            text_end,
            segment,
            tail_start,
            tail_end: segment_end,
            tail_align,
            symtab,
            kept,
        })
    }
}
