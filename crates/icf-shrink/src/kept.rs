//! The relocations a `-q` link kept: each one accounted for, and written
//! again for OUT (so OUT keeps its relocations too, for `icf verify` and
//! for any later tool). In code, a PC-relative one must be a field
//! decoding found (and patched); an absolute one is written here. In
//! data, absolute addresses and jump table entries are written here. A
//! field icf cannot account for, whose place or target moves, is an
//! error: OUT would be wrong.
//!
//! Each relocation means `S + A` (its symbol's address plus its addend):
//! the place it names, plus a bias where the field counts from elsewhere
//! (x86-64 code: the end of the instruction; a jump table entry: from the
//! table's start). In OUT it means that plus however far the named place
//! moved; its addend is that minus the symbol's new address.

use crate::code::{Decoded, field_size, with_context};
use crate::layout::Layout;
use crate::patch::{Patches, Rewritten};
use crate::pin::PinKind;
use crate::shape::Shape;
use anyhow::{Context, bail};
use icf_arch::{Architecture, KeptReloc};
use icf_object::linked_elf::{Elf, SymbolInfo};
use object::elf as E;
use rayon::prelude::*;

/// Sections a linker writes itself, which code reaches through a symbol.
/// Whether the word at `place` is an AArch64 `b` to `target`.
fn is_branch(elf: &Elf<'_>, place: u64, target: u64) -> bool {
    elf.read(place, 4)
        .and_then(|w| w.try_into().ok())
        .map(u32::from_le_bytes)
        .is_some_and(|w| {
            let offset = (((w & 0x03ff_ffff) << 6) as i32 >> 4) as i64;
            w & 0xfc00_0000 == 0x1400_0000 && place.wrapping_add(offset as u64) == target
        })
}

const LINKER_MADE: &[&str] = &[".got", ".got.plt", ".plt", ".plt.sec", ".plt.got", ".iplt"];

/// What a kept relocation's symbol is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Symbol {
    /// Defined at an address: (old address, new address, a section symbol).
    At(u64, u64, bool),
    /// Undefined (defined by another module, or weak and absent), or an
    /// ifunc: what the field holds is what the linker resolved it to.
    Undefined,
    /// Thread-local, or otherwise not an address in the image.
    Elsewhere,
}

fn symbol(elf: &Elf<'_>, layout: &Layout, symbols: &[SymbolInfo], index: u32) -> Symbol {
    let Some(s) = symbols.get(index as usize) else {
        return Symbol::Elsewhere;
    };
    if index == 0 || s.kind == E::STT_TLS.0 {
        return Symbol::Elsewhere;
    }
    // An ifunc's value is its resolver, but a non-PIE executable takes its
    // address as that of its PLT entry: the field says which.
    if s.shndx == E::SHN_UNDEF.0 || s.kind == E::STT_GNU_IFUNC.0 {
        return Symbol::Undefined;
    }
    if s.kind == E::STT_SECTION.0 {
        return elf
            .sections
            .get(usize::from(s.shndx))
            .map_or(Symbol::Elsewhere, |section| {
                Symbol::At(section.addr, layout.new_section_address(section.addr), true)
            });
    }
    match crate::symbols::new_symbol(elf, layout, s) {
        Some((value, _)) => Symbol::At(s.value, value, false),
        None => Symbol::At(s.value, s.value, false),
    }
}

pub(crate) fn patch(
    elf: &Elf<'_>,
    shape: &Shape,
    symbols: &[SymbolInfo],
    layout: &Layout,
    arch: &dyn Architecture,
    decoded: &Decoded,
    patches: &mut Patches,
) -> anyhow::Result<Rewritten> {
    let made: Vec<(u64, u64)> = elf
        .sections
        .iter()
        .filter(|s| LINKER_MADE.contains(&s.name.as_str()))
        .map(|s| (s.addr, s.addr + s.size))
        .collect();
    // Whether a GOT moves: an offset from it then changes.
    let gots: Vec<(u64, u64)> = elf
        .sections
        .iter()
        .filter(|s| s.name == ".got" || s.name == ".got.plt")
        .map(|s| (s.addr, s.addr + s.size))
        .collect();
    let got_moves = gots.iter().any(|&(start, _)| layout.moves(start));
    let mut rewritten = Vec::new();
    for &(relocations, target) in &shape.kept {
        let section = &elf.sections[target];
        if !section.is_alloc() {
            rewritten.push(unloaded(
                elf,
                symbols,
                layout,
                arch,
                relocations,
                target,
                patches,
            )?);
            continue;
        }
        let kept = Kept {
            elf,
            symbols,
            layout,
            arch,
            decoded,
            relocations,
            section,
            eh_frame: section.name == ".eh_frame",
            code: section.is_executable(),
            made: &made,
            gots: &gots,
            got_moves,
        };
        // Each relocation is written on its own: batches of them in
        // parallel, merged in order as one pass would make them.
        let relas = elf.raw_relas(relocations)?;
        let batches: Vec<anyhow::Result<(Patches, Vec<u8>)>> = relas
            .par_chunks(KEPT_BATCH)
            .map(|batch| {
                let mut patches = Patches::default();
                let mut out = Vec::with_capacity(batch.len());
                for rela in batch {
                    kept.write(
                        &icf_object::linked_elf::Rela::of(rela),
                        &mut patches,
                        &mut out,
                    )?;
                }
                Ok((patches, encode(out)))
            })
            .collect();
        let mut out = Vec::with_capacity(relas.len() * RELA_SIZE);
        for batch in batches {
            let (batch_patches, batch_out) = batch?;
            patches.append(batch_patches);
            out.extend_from_slice(&batch_out);
        }
        rewritten.push((relocations, out));
    }
    Ok(rewritten)
}

/// Relocations written again together on one thread.
const KEPT_BATCH: usize = 8192;

/// The bytes of one `Elf64_Rela`.
const RELA_SIZE: usize = 24;

/// A relocation for OUT: (place, symbol, type, addend).
type KeptEntry = (u64, u32, u32, i64);

/// What every kept relocation of one allocated section is written against.
struct Kept<'a, 'data> {
    elf: &'a Elf<'data>,
    symbols: &'a [SymbolInfo],
    layout: &'a Layout,
    arch: &'a dyn Architecture,
    decoded: &'a Decoded,
    /// The relocation section's index.
    relocations: usize,
    /// The section it relocates.
    section: &'a icf_object::linked_elf::SectionInfo,
    eh_frame: bool,
    code: bool,
    /// Sections a linker writes itself (`LINKER_MADE`): (start, end).
    made: &'a [(u64, u64)],
    /// The GOTs: (start, end).
    gots: &'a [(u64, u64)],
    got_moves: bool,
}

impl Kept<'_, '_> {
    /// Whether `address` lies in a section the linker wrote itself.
    fn linker_made(&self, address: u64) -> bool {
        self.made
            .iter()
            .any(|&(start, end)| (start..end).contains(&address))
    }

    /// Whether `page` (page-aligned) holds part of a GOT.
    fn got_page(&self, page: u64) -> bool {
        page & 0xfff == 0
            && self
                .gots
                .iter()
                .any(|&(start, end)| start < page + 0x1000 && page < end)
    }

    /// Writes the field of `rela` (`size` bytes) to name `value`, counted
    /// from `counted_from` where that is not the field's own new place.
    fn rewrite_field(
        &self,
        patches: &mut Patches,
        rela: &icf_object::linked_elf::Rela,
        size: usize,
        value: u64,
        counted_from: Option<u64>,
    ) -> anyhow::Result<()> {
        let field = KeptField {
            r_type: rela.r_type,
            place: rela.offset,
            size,
        };
        rewrite(
            self.elf,
            self.arch,
            self.layout,
            patches,
            field,
            value,
            counted_from,
        )
        .map_err(|e| {
            e.context(format!(
                "{}+{:#x}",
                self.section.name,
                rela.offset - self.section.addr
            ))
        })
    }

    /// Accounts for the relocation `rela`: its field written again in
    /// `patches` where its place or target moves (or its function kept in
    /// place), and the relocation for OUT pushed to `out`.
    fn write(
        &self,
        rela: &icf_object::linked_elf::Rela,
        patches: &mut Patches,
        out: &mut Vec<KeptEntry>,
    ) -> anyhow::Result<()> {
        let (elf, layout, arch) = (self.elf, self.layout, self.arch);
        let place = rela.offset;
        if !self.section.contains(place) {
            bail!(
                "{}: relocation at {place:#x} outside {}",
                elf.sections[self.relocations].name,
                self.section.name
            );
        }
        if !layout.is_carried(place) {
            return Ok(());
        }
        let (old_symbol, new_symbol, section_symbol) =
            match symbol(elf, layout, self.symbols, rela.sym) {
                Symbol::At(old, new, section_symbol) => (old, new, section_symbol),
                Symbol::Undefined => {
                    self.undefined_address(rela, patches)?;
                    out.push((layout.map(place), rela.sym, rela.r_type, rela.addend));
                    return Ok(());
                }
                Symbol::Elsewhere => {
                    out.push((layout.map(place), rela.sym, rela.r_type, rela.addend));
                    return Ok(());
                }
            };
        let meaning = old_symbol.wrapping_add(rela.addend as u64);
        // Where the named place goes, when the relocation names it.
        let mapped = layout.map_named(place, meaning);
        let named = Named {
            old_symbol,
            section_symbol,
            meaning,
            mapped,
            moves: layout.moves(place) || mapped != meaning,
        };
        // What the field means in OUT, when the relocation's addend says
        // it (`None`: the addend stays as it was).
        let new_meaning = match arch.kept_reloc(rela.r_type) {
            _ if self.eh_frame => Some(mapped),
            KeptReloc::Address { size } => {
                if named.moves {
                    let size = usize::from(size);
                    self.rewrite_field(patches, rela, size, layout.map(meaning), None)?;
                }
                Some(mapped)
            }
            kind @ (KeptReloc::Instruction | KeptReloc::Page) if self.code => {
                self.instruction(rela, kind, &named, patches)?
            }
            KeptReloc::PcRelative
            | KeptReloc::GotPage
            | KeptReloc::Low12
            | KeptReloc::RelaxableGotLoad
                if self.code =>
            {
                self.pc_relative_in_code(rela, &named, patches)?
            }
            KeptReloc::PcRelative => self.pc_relative_in_data(rela, &named, patches)?,
            KeptReloc::GotOffset => {
                if self.got_moves {
                    bail!(
                        "{}: a {:?} relocation counts from the GOT, which moves; icf cannot write it again",
                        self.at(place),
                        object::elf::RelocationType(rela.r_type)
                    );
                }
                None
            }
            KeptReloc::RelaxableGotLoad
            | KeptReloc::Low12
            | KeptReloc::Instruction
            | KeptReloc::Page
            | KeptReloc::GotPage
            | KeptReloc::Other => {
                if layout.moves(meaning) {
                    patches.pins.keep(layout, &[meaning], PinKind::UnwrittenRelocation, || {
                        anyhow::anyhow!(
                            "{}: a {:?} relocation names code that moves; icf cannot write it again",
                            self.at(place),
                            object::elf::RelocationType(rela.r_type)
                        )
                    })?;
                }
                None
            }
        };
        let addend = match new_meaning {
            Some(new_meaning) => new_meaning.wrapping_sub(new_symbol) as i64,
            None => rela.addend,
        };
        out.push((layout.map(place), rela.sym, rela.r_type, addend));
        Ok(())
    }

    /// `place` as its section and offset, for messages.
    fn at(&self, place: u64) -> String {
        format!("{}+{:#x}", self.section.name, place - self.section.addr)
    }

    /// A relocation naming another module's symbol: a non-PIE executable
    /// takes another module's function by the address of its PLT entry,
    /// which may move.
    fn undefined_address(
        &self,
        rela: &icf_object::linked_elf::Rela,
        patches: &mut Patches,
    ) -> anyhow::Result<()> {
        let (elf, layout, place) = (self.elf, self.layout, rela.offset);
        if let KeptReloc::Address { size } = self.arch.kept_reloc(rela.r_type)
            && let Some(field) = elf.read(place, usize::from(size))
        {
            let mut word = [0u8; 8];
            word[..field.len()].copy_from_slice(field);
            let value = u64::from_le_bytes(word);
            if value != 0 && (layout.moves(value) || layout.moves(place)) {
                let size = usize::from(size);
                self.rewrite_field(patches, rela, size, layout.map(value), None)?;
            }
        }
        Ok(())
    }

    /// An instruction relocation in code (a branch, an AArch64 `adrp` or
    /// `adr`): what it means in OUT, from what decoding found there or
    /// written again from the relocation.
    fn instruction(
        &self,
        rela: &icf_object::linked_elf::Rela,
        kind: KeptReloc,
        named: &Named,
        patches: &mut Patches,
    ) -> anyhow::Result<Option<u64>> {
        let (elf, layout, arch, decoded) = (self.elf, self.layout, self.arch, self.decoded);
        let (place, meaning) = (rela.offset, named.meaning);
        let at = || self.at(place);
        let name = || object::elf::RelocationType(rela.r_type);
        let mut new_meaning = Some(named.mapped);
        let found = decoded.fields.get(place);
        // An `adr` where the relocation names a page is either
        // the whole address (the linker relaxed `adrp` + `add`,
        // the next word a `nop`) or GNU ld's erratum 843419 form
        // of the page, which only the relocation tells apart when
        // the address is the page.
        let page_by_adr = kind == KeptReloc::Page
            && found.is_some_and(|f| {
                arch.kept_reloc(f.r_type) != KeptReloc::Page
                    && meaning & 0xfff == 0
                    && !elf.read(place + 4, 4).is_some_and(|w| arch.is_padding(w))
            });
        match found {
            Some(f) if f.meaning() == meaning && !page_by_adr => {
                new_meaning = Some(layout.map(f.target).wrapping_add(f.bias as u64));
            }
            // A branch to a PLT entry or a range extension thunk.
            Some(f) if self.linker_made(f.target) => new_meaning = None,
            _ => {
                // What the instruction computes is `S + A`: write
                // it from the relocation, over whatever decoding
                // paired (an `adrp` whose page stays live across a
                // call, a low half before its `adrp`).
                let word = elf.read(place, 4).context("instruction past the section")?;
                let mut field =
                    with_context(elf, place, 4).context("instruction past the section")?;
                match arch.write_reloc(
                    rela.r_type,
                    &mut field,
                    layout.map(place),
                    layout.map(meaning),
                ) {
                    Ok(()) => {
                        patches.replace(layout.map(place), &field[..4]);
                    }
                    // Relaxed by the linker: into a `nop`, or into an
                    // instruction decoding found (`adr`).
                    Err(_) if arch.is_padding(word) || found.is_some() => {}
                    Err(e) => {
                        patches.pins.keep(
                            layout,
                            &[place, meaning],
                            PinKind::OutOfReach,
                            || anyhow::anyhow!("{}: the {:?} relocation: {e}", at(), name()),
                        )?;
                        new_meaning = None;
                    }
                }
            }
        }
        Ok(new_meaning)
    }

    /// A PC-relative, GOT-page or low-12-bits field in code: what it means
    /// in OUT, from what decoding found there; where decoding found
    /// nothing, the linker's relaxations are recognized and anything else
    /// that moves keeps its function in place.
    fn pc_relative_in_code(
        &self,
        rela: &icf_object::linked_elf::Rela,
        named: &Named,
        patches: &mut Patches,
    ) -> anyhow::Result<Option<u64>> {
        let (elf, layout, arch, decoded) = (self.elf, self.layout, self.arch, self.decoded);
        let (place, meaning, moves) = (rela.offset, named.meaning, named.moves);
        let (old_symbol, section_symbol) = (named.old_symbol, named.section_symbol);
        let at = || self.at(place);
        let name = || object::elf::RelocationType(rela.r_type);
        let mut new_meaning = Some(named.mapped);
        // A load of a GOT slot's address bits at `at` (AArch64's `ldr` of
        // `:got_lo12:`): its field is the slot's, which stays where it is
        // when no GOT moves.
        let got_low_bits = |at: u64| {
            !self.got_moves
                && elf
                    .read(at, 4)
                    .is_some_and(|code| arch.loads_got_slot(rela.r_type, code))
        };
        match decoded.fields.get(place).map(|f| (f.target, f.bias)) {
            Some((named, bias)) if named.wrapping_add(bias as u64) == meaning => {
                new_meaning = Some(layout.map(named).wrapping_add(bias as u64));
            }
            // Reached through a GOT or PLT entry: still names its symbol.
            Some((named, _)) if self.linker_made(named) => new_meaning = None,
            Some((named, _)) if !moves && !layout.moves(named) => new_meaning = None,
            // The linker moved the instruction into an erratum
            // 843419 patch and branched there (lld's
            // `__CortexA53843419_*`, which moves with `.text`
            // as a stub): the field is that instruction's.
            Some((named, _)) if got_low_bits(named) && is_branch(elf, place, named) => {
                new_meaning = None
            }
            // Its `adrp`, whose decoding found no low half to
            // pair it with (that went into the patch): the
            // GOT's page, which code patching writes again from
            // the `adrp`'s new place.
            Some((named, _))
                if arch.kept_reloc(rela.r_type) == KeptReloc::GotPage
                    && !self.got_moves
                    && self.got_page(named) =>
            {
                new_meaning = None
            }
            Some((named, _)) => {
                patches.pins.keep(
                    layout,
                    &[place, meaning, named],
                    PinKind::UndecodedField,
                    || {
                        anyhow::anyhow!(
                            "{}: the {:?} relocation names {meaning:#x}, the instruction there \
                         {named:#x}: the relocations the link kept disagree with its code",
                            at(),
                            name()
                        )
                    },
                )?;
                new_meaning = None;
            }
            None => {
                let relaxed_away = elf.read(place, 4).is_some_and(|w| arch.is_padding(w));
                let relaxed_got = arch.kept_reloc(rela.r_type) == KeptReloc::RelaxableGotLoad;
                // `jmp *f@GOTPCREL(%rip)` relaxed to `jmp f; nop`
                // (lld and GNU ld): the field starts a byte before
                // the relocation's place, and decoding found it.
                let relaxed_jump = relaxed_got
                    && !section_symbol
                    && elf
                        .read(place.wrapping_sub(2), 6)
                        .is_some_and(|b| b[0] == 0xe9 && b[5] == 0x90)
                    && decoded
                        .fields
                        .get(place.wrapping_sub(1))
                        .is_some_and(|f| f.target == old_symbol);
                if relaxed_jump || got_low_bits(place) {
                    new_meaning = None;
                } else if relaxed_got && moves {
                    let relaxed = relaxed_got_load(
                        elf,
                        arch,
                        layout,
                        place,
                        old_symbol,
                        section_symbol,
                        patches,
                    );
                    if let Err(e) = relaxed {
                        patches.pins.keep(
                            layout,
                            &[place, old_symbol],
                            PinKind::UndecodedField,
                            || anyhow::anyhow!("{}: {:?}: {e}", at(), name()),
                        )?;
                    }
                    new_meaning = None;
                } else if moves && !relaxed_away {
                    patches.pins.keep(layout, &[place, meaning], PinKind::UndecodedField, || {
                        anyhow::anyhow!(
                            "{}: the {:?} relocation's field was not found by decoding the code",
                            at(),
                            name()
                        )
                    })?;
                    new_meaning = None;
                }
            }
        }
        Ok(new_meaning)
    }

    /// A PC-relative field in data: a jump table's entry counts from its
    /// table; anything else from its own place. One naming code through a
    /// section symbol that no table holds keeps what it names in place.
    fn pc_relative_in_data(
        &self,
        rela: &icf_object::linked_elf::Rela,
        named: &Named,
        patches: &mut Patches,
    ) -> anyhow::Result<Option<u64>> {
        let (elf, layout, arch, decoded) = (self.elf, self.layout, self.arch, self.decoded);
        let (place, meaning, mapped, moves) =
            (rela.offset, named.meaning, named.mapped, named.moves);
        let section_symbol = named.section_symbol;
        let at = || self.at(place);
        let name = || object::elf::RelocationType(rela.r_type);
        let mut new_meaning = Some(mapped);
        // A jump table entry is `.long case - table`: a field
        // relocated through the section symbol of the code.
        let reading = if section_symbol {
            table_entry(elf, decoded, place)
        } else {
            TableEntry::No
        };
        if let TableEntry::Yes(base, case) = reading {
            if layout.moves(base) || layout.moves(case) {
                // `case - table`: the field counts from the table.
                let (from, to) = (layout.map(base), layout.map(case));
                self.rewrite_field(patches, rela, 4, to, Some(from))?;
            }
            let bias = meaning.wrapping_sub(case);
            new_meaning = Some(layout.map(case).wrapping_add(bias));
        } else if moves {
            let unknown_base = match reading {
                TableEntry::Maybe(base, case) => Some(vec![place, meaning, base, case]),
                _ if section_symbol
                    && layout.moves(meaning)
                    && !layout.is_outside_text(meaning) =>
                {
                    Some(vec![place, meaning])
                }
                _ => None,
            };
            if let Some(ends) = unknown_base {
                // Whatever it counts from, nothing it names moves.
                patches.pins.keep(layout, &ends, PinKind::UnknownBase, || {
                    anyhow::anyhow!(
                        "{}: a PC-relative {:?} field in data names code through a section \
                         symbol, and no jump table the code reads holds it: icf cannot tell \
                         where it counts from",
                        at(),
                        name()
                    )
                })?;
                return Ok(None);
            }
            let size = field_size(arch, rela.r_type);
            self.rewrite_field(patches, rela, size, mapped, None)?;
        }
        Ok(new_meaning)
    }
}

/// What a kept relocation names in PLAIN (see [`Kept::write`]).
struct Named {
    /// Its symbol's value.
    old_symbol: u64,
    /// The symbol is a section's.
    section_symbol: bool,
    /// `S + A`.
    meaning: u64,
    /// Where that place goes, when the relocation names it.
    mapped: u64,
    /// Its place or what it names moves.
    moves: bool,
}

/// The kept relocations of a section no segment loads (a probe note):
/// its absolute addresses written again in its bytes (`patches.unloaded`),
/// the relocations with them.
fn unloaded(
    elf: &Elf<'_>,
    symbols: &[SymbolInfo],
    layout: &Layout,
    arch: &dyn Architecture,
    relocations: usize,
    target: usize,
    patches: &mut Patches,
) -> anyhow::Result<(usize, Vec<u8>)> {
    let section = &elf.sections[target];
    let bytes = elf.bytes(target);
    let mut out = Vec::new();
    for rela in elf.relas(relocations)? {
        let offset = rela.offset.wrapping_sub(section.addr);
        let mut addend = rela.addend;
        if let Symbol::At(old, new, _) = symbol(elf, layout, symbols, rela.sym) {
            let meaning = old.wrapping_add(rela.addend as u64);
            let new_meaning = layout.map(meaning);
            match arch.kept_reloc(rela.r_type) {
                KeptReloc::Address { size } if new_meaning != meaning => {
                    let at = offset as usize;
                    let mut field = bytes
                        .get(at..at + usize::from(size))
                        .with_context(|| {
                            format!("{}+{offset:#x}: field past the section", section.name)
                        })?
                        .to_vec();
                    arch.write_reloc(rela.r_type, &mut field, rela.offset, new_meaning)
                        .map_err(|e| anyhow::anyhow!("{}+{offset:#x}: {e}", section.name))?;
                    patches.unloaded.push((target, offset, field));
                }
                KeptReloc::Address { .. } => {}
                _ if new_meaning != meaning => {
                    patches.pins.keep(layout, &[meaning], PinKind::UnwrittenRelocation, || {
                        anyhow::anyhow!(
                            "{}+{offset:#x}: a {:?} relocation names code that moves; icf cannot \
                             write it again",
                            section.name,
                            object::elf::RelocationType(rela.r_type)
                        )
                    })?;
                }
                _ => {}
            }
            addend = new_meaning.wrapping_sub(new) as i64;
        }
        out.push((rela.offset, rela.sym, rela.r_type, addend));
    }
    Ok((relocations, encode(out)))
}

/// `Elf64_Rela` entries as bytes.
fn encode(relocations: Vec<(u64, u32, u32, i64)>) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(relocations.len() * RELA_SIZE);
    for (offset, sym, r_type, addend) in relocations {
        bytes.extend(offset.to_le_bytes());
        bytes.extend(((u64::from(sym) << 32) | u64::from(r_type)).to_le_bytes());
        bytes.extend(addend.to_le_bytes());
    }
    bytes
}

/// A field a kept relocation names: its type, old place and size.
#[derive(Copy, Clone, Debug)]
struct KeptField {
    r_type: u32,
    place: u64,
    size: usize,
}

/// Writes `field` again at its new place, naming `value` as seen from its
/// new place, or from `counted_from` (a jump table entry counts from the
/// table's new start).
fn rewrite(
    elf: &Elf<'_>,
    arch: &dyn Architecture,
    layout: &Layout,
    patches: &mut Patches,
    field: KeptField,
    value: u64,
    counted_from: Option<u64>,
) -> anyhow::Result<()> {
    let new_place = layout.map(field.place);
    let mut bytes = elf
        .read(field.place, field.size)
        .context("field past the section")?
        .to_vec();
    arch.write_reloc(
        field.r_type,
        &mut bytes,
        counted_from.unwrap_or(new_place),
        value,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    patches.put(new_place, bytes);
    Ok(())
}

/// An x86-64 GOT load the linker relaxed into an immediate: the field holds
/// the symbol's address, which moved.
fn relaxed_got_load(
    elf: &Elf<'_>,
    arch: &dyn Architecture,
    layout: &Layout,
    place: u64,
    symbol: u64,
    section_symbol: bool,
    patches: &mut Patches,
) -> anyhow::Result<()> {
    let field = elf.read(place, 4).context("field past the section")?;
    let value = u32::from_le_bytes([field[0], field[1], field[2], field[3]]);
    if u64::from(value) != symbol || section_symbol {
        bail!("a field neither decoded nor relaxed to its symbol's address");
    }
    let absolute = arch.absolute_data(4).context("no 4-byte absolute type")?;
    rewrite(
        elf,
        arch,
        layout,
        patches,
        KeptField {
            r_type: absolute,
            place,
            size: 4,
        },
        layout.map(symbol),
        None,
    )
}

/// How far an entry may lie from its table's start (16,384 entries) when
/// the case it leads to lies outside the code that computes the table's
/// address (GCC's `foo.cold`, split from `foo`).
const MAX_TABLE_BYTES: u64 = 4 << 14;

/// Whether a PC-relative field in data is an entry of a jump table.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum TableEntry {
    /// It is: (the table's base, the case it leads to).
    Yes(u64, u64),
    /// Read from the nearest table before it, it would lead into code,
    /// but farther from the table than [`MAX_TABLE_BYTES`] and out of the
    /// code that reads the table: an entry or a pointer, nothing says.
    /// (The table's base, the case it would lead to.)
    Maybe(u64, u64),
    /// No table the code reads can hold it.
    No,
}

/// Whether `place` is an entry of a jump table the code reads: the table
/// is the nearest place at or before it that the code computes (within
/// its entries, when a dispatch says how many), and the entry leads into
/// the code that computes the table's address, or into other code from at
/// most [`MAX_TABLE_BYTES`] on. (No place the code computes lies between
/// the table and the entry, so another function's table can hold it only
/// if that function's code never names its start.)
fn table_entry(elf: &Elf<'_>, decoded: &Decoded, place: u64) -> TableEntry {
    let after = decoded.tables.partition_point(|t| t.base <= place);
    let Some(base) = after
        .checked_sub(1)
        .and_then(|i| decoded.tables.get(i))
        .map(|t| t.base)
    else {
        return TableEntry::No;
    };
    let tables = &decoded.tables[decoded.tables.partition_point(|t| t.base < base)..after];
    if tables
        .iter()
        .any(|t| t.entries.is_some_and(|n| place >= base + 4 * u64::from(n)))
    {
        return TableEntry::No;
    }
    let Some(bytes) = elf.read(place, 4) else {
        return TableEntry::No;
    };
    let value = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let case = base.wrapping_add(value as i64 as u64);
    let in_code = elf
        .section_at(case)
        .is_some_and(|index| elf.sections[index].is_executable());
    let in_function = tables
        .iter()
        .any(|t| (t.function.0..t.function.1).contains(&case));
    match (in_code, in_function || place - base < MAX_TABLE_BYTES) {
        (true, true) => TableEntry::Yes(base, case),
        (true, false) => TableEntry::Maybe(base, case),
        (false, _) => TableEntry::No,
    }
}
