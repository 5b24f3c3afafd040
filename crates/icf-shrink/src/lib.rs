//! `icf shrink IN -o OUT`: fold the identical functions of a linked ELF
//! image (executable or shared library, x86-64 or AArch64) and compact its
//! code, so that OUT is smaller on disk and behaves as IN does.
//!
//! The image must keep its relocations (`-Wl,-q`, `--emit-relocs`): they
//! name every absolute address in code and data, which decoding alone
//! cannot tell from a number. Without them, icf refuses.
//!
//! How (ARCHITECTURE.md and docs/design.md, "Shrinking a linked binary"):
//! 1. **Plan** with the analysis `icf report BINARY` runs, limited to the
//!    functions of `.text` and the jump tables only they use
//!    ([`icf::PlanOptions::only_code_in`]): an alias's body is removed, a
//!    thunk's replaced by a jump to its kept copy.
//! 2. **Lay out** `.text` again ([`layout`]): kept functions close up,
//!    each at its inferred alignment; the sections after `.text` in its
//!    segment move down together; later segments move down in the file by
//!    whole pages and keep their addresses, so nothing in them moves.
//! 3. **Patch** every field that names a place that moved, or sits in a
//!    place that moved: branches and PC-relative operands found by
//!    decoding all code (checked against the kept relocations, which must
//!    all be accounted for), absolute addresses and jump table entries the
//!    kept relocations name, dynamic relocations (`RELATIVE`,
//!    `IRELATIVE`, RELR), GOT entries, `.eh_frame` ([`eh_frame`]) and
//!    `.eh_frame_hdr`, `.dynamic`, the entry point and symbol values.
//! 4. **Write** OUT atomically. The kept relocations and DWARF describe
//!    the old layout: OUT carries them empty, and says so.

mod dynamic;
mod eh_frame;
mod elf;
mod kept;
mod layout;
mod patch;
mod write;

use anyhow::{Context, bail};
use elf::Elf;
use icf_arch::{Architecture, LinkedUse};
use layout::{Fate, Layout, Piece};
use object::elf as E;
use patch::Patches;
use std::collections::HashMap;
use std::path::Path;

/// What `icf shrink` is asked.
#[derive(Clone, Debug, Default)]
pub struct ShrinkOptions {
    pub mode: icf::Mode,
    /// Symbols that keep their own body.
    pub keep_unique: Vec<String>,
}

/// What `icf shrink` did.
#[derive(Clone, Debug, Default)]
pub struct Shrunk {
    pub file_before: u64,
    pub file_after: u64,
    pub text_before: u64,
    pub text_after: u64,
    pub aliases: usize,
    pub thunks: usize,
    /// FDEs that no longer describe code.
    pub dropped_fdes: usize,
    /// Sections OUT carries empty (kept relocations, DWARF), with their sizes.
    pub emptied: Vec<(String, u64)>,
}

impl Shrunk {
    /// What OUT carries empty, in one sentence, when it does: DWARF by
    /// name (a debugger loses it), kept relocations as a count.
    pub fn emptied_note(&self) -> Option<String> {
        let (debug, relocations): (Vec<_>, Vec<_>) = self
            .emptied
            .iter()
            .partition(|(name, _)| name.contains("debug"));
        let mut parts = Vec::new();
        if !debug.is_empty() {
            let bytes: u64 = debug.iter().map(|(_, size)| size).sum();
            parts.push(format!(
                "its DWARF ({} sections, {bytes} bytes)",
                debug.len()
            ));
        }
        if !relocations.is_empty() {
            parts.push(format!(
                "the relocations the link kept ({} sections)",
                relocations.len()
            ));
        }
        (!parts.is_empty()).then(|| {
            format!(
                "the output carries {} empty: they describe the code before it moved",
                parts.join(" and ")
            )
        })
    }

    /// One line: `shrunk IN: file A -> B bytes (-C), .text D -> E (-F); N aliases, M thunks`.
    pub fn summary(&self, input: &Path) -> String {
        format!(
            "shrunk {}: file {} -> {} bytes (-{}), .text {} -> {} bytes (-{}); {} aliases, {} thunks",
            input.display(),
            self.file_before,
            self.file_after,
            self.file_before.saturating_sub(self.file_after),
            self.text_before,
            self.text_after,
            self.text_before.saturating_sub(self.text_after),
            self.aliases,
            self.thunks,
        )
    }
}

/// Folds and compacts `input` into `output`.
pub fn shrink(input: &Path, output: &Path, options: &ShrinkOptions) -> anyhow::Result<Shrunk> {
    let inputs = icf::Inputs::open(&[input.to_path_buf()])?;
    let data = inputs.files[0].data();
    let named = |e: anyhow::Error| e.context(format!("{}", input.display()));
    let elf = Elf::parse(data).map_err(named)?;
    let shape = Shape::of(&elf).map_err(named)?;
    let program = icf::Program::load(
        &inputs,
        icf::Options {
            linked_image: true,
            ..icf::Options::default()
        },
    )?;
    let object = &program.object(icf::ObjectId(0)).elf;
    let arch = icf_arch::of(object.arch);
    // A short jump cannot reach a copy elsewhere: the function it reaches
    // keeps its body, and the plan is made again without folding it.
    let mut keep_places = Vec::new();
    let (pieces, counts, data_aliases) = loop {
        let analysis = icf::Analysis::run(
            &program,
            &icf::PlanOptions {
                mode: options.mode,
                keep_unique: options.keep_unique.clone(),
                only_code_in: Some(".text".to_string()),
                keep_places: keep_places.clone(),
                cache: None,
                ..icf::PlanOptions::default()
            },
        );
        let (pieces, counts, data_aliases) = pieces(&elf, &shape, object, &analysis, arch)?;
        let reached: Vec<(u32, u64)> = short_jumps_into_removed(&elf, &shape, &pieces, arch)
            .into_iter()
            .filter(|place| !keep_places.contains(place))
            .collect();
        if reached.is_empty() {
            break (pieces, counts, data_aliases);
        }
        if keep_places.len() > MAX_SHORT_JUMP_TARGETS {
            bail!(
                "{}: too many functions only short jumps reach",
                input.display()
            );
        }
        keep_places.extend(reached);
    };
    let mut layout = Layout::new(
        pieces,
        shape.text_start,
        shape.text_end,
        elf.sections[shape.text].align,
        shape.tail_start,
        shape.tail_end,
        shape.tail_align,
    );
    layout.data_aliases = data_aliases;
    let mut patches = Patches::default();
    let symbols = elf.symbols(shape.symtab).map_err(named)?;
    write_thunks(&layout, arch, &mut patches)?;
    let relocated = Relocated::of(&elf, &shape).map_err(named)?;
    let decoded =
        patch_code(&elf, object, &layout, arch, &relocated, &mut patches).map_err(named)?;
    let rewritten = kept::patch(
        &elf,
        &shape,
        &symbols,
        &layout,
        arch,
        &decoded,
        &mut patches,
    )
    .map_err(named)?;
    let dropped_fdes = eh_frame::patch(&elf, &layout, &mut patches).map_err(named)?;
    dynamic::patch(&elf, &layout, arch, &mut patches).map_err(named)?;
    let written = write::write(
        &elf,
        &shape,
        &layout,
        &patches,
        &symbols,
        &rewritten,
        arch.code_fill(),
    )
    .map_err(named)?;
    icf::write_atomically(output, &written.bytes)?;
    let permissions = std::fs::metadata(input)
        .with_context(|| format!("reading {}", input.display()))?
        .permissions();
    std::fs::set_permissions(output, permissions)
        .with_context(|| format!("setting the mode of {}", output.display()))?;
    Ok(Shrunk {
        file_before: data.len() as u64,
        file_after: written.bytes.len() as u64,
        text_before: shape.text_end - shape.text_start,
        text_after: layout.new_text_end - shape.text_start,
        aliases: counts.0,
        thunks: counts.1,
        dropped_fdes,
        emptied: written.emptied,
    })
}

/// How many functions reached by short jumps icf keeps unfolded before it
/// gives up planning again.
const MAX_SHORT_JUMP_TARGETS: usize = 10_000;

/// The functions of `.text` a short jump (x86-64 `jmp rel8`, a tail call
/// the assembler resolved) from a kept piece reaches, where the plan removes
/// them: as (section index, offset), what `PlanOptions::keep_places` takes.
fn short_jumps_into_removed(
    elf: &Elf<'_>,
    shape: &Shape,
    pieces: &[Piece],
    arch: &dyn Architecture,
) -> Vec<(u32, u64)> {
    let bytes = elf.bytes(shape.text);
    let mut found = Vec::new();
    let mut reached = Vec::new();
    for piece in pieces.iter().filter(|p| p.fate == Fate::Keep) {
        let offset = (piece.start - shape.text_start) as usize;
        let Some(code) = bytes.get(offset..offset + (piece.end - piece.start) as usize) else {
            continue;
        };
        found.clear();
        arch.linked_references(code, piece.start, &mut found);
        for reference in &found {
            if field_size(arch, reference.r_type) != 1 {
                continue;
            }
            let at = pieces.partition_point(|p| p.start <= reference.target);
            if let Some(target) = at.checked_sub(1).map(|i| &pieces[i])
                && matches!(target.fate, Fate::Alias(_))
                && reference.target < target.end
            {
                reached.push((shape.text as u32, target.start - shape.text_start));
            }
        }
    }
    reached.sort_unstable();
    reached.dedup();
    reached
}

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
    fn of(elf: &Elf<'_>) -> anyhow::Result<Shape> {
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

/// The pieces of `.text` with their fates, the numbers of aliases and
/// thunks, and the folded jump tables (see [`Layout::data_aliases`]).
type Planned = (Vec<Piece>, (usize, usize), Vec<(u64, u64, u64)>);

/// The pieces of `.text` and their fates from the plan; the numbers of
/// aliases and thunks; the jump tables folded with their functions.
fn pieces(
    elf: &Elf<'_>,
    shape: &Shape,
    object: &icf_object::Object<'_>,
    analysis: &icf::Analysis<'_, '_>,
    arch: &dyn Architecture,
) -> anyhow::Result<Planned> {
    let text = icf_object::SectionIndex(shape.text as u32);
    let bytes = elf.bytes(shape.text);
    let extents: Vec<_> = object
        .functions()
        .into_iter()
        .filter(|f| f.section == text)
        .collect();
    let mut pieces: Vec<Piece> = extents
        .iter()
        .map(|f| {
            let code = &bytes[f.start as usize..f.end as usize];
            let fate = if f.symbols.is_empty() && arch.is_padding(code) {
                Fate::Padding
            } else {
                Fate::Keep
            };
            Piece {
                start: shape.text_start + f.start,
                end: shape.text_start + f.end,
                fate,
                new_start: 0,
                thunk_size: 0,
                align: 1,
            }
        })
        .collect();
    let index_of: HashMap<u64, usize> = pieces
        .iter()
        .enumerate()
        .map(|(i, p)| (p.start, i))
        .collect();
    let piece_of = |candidate: icf::CandidateId| -> Option<usize> {
        let info = &analysis.candidates[candidate.index()];
        (info.is_code() && info.section == text)
            .then(|| index_of.get(&(shape.text_start + info.start)).copied())
            .flatten()
    };
    let thunk = arch.thunk();
    let (mut aliases, mut thunks) = (0, 0);
    let address_of = |candidate: icf::CandidateId| {
        let info = &analysis.candidates[candidate.index()];
        let base = elf.sections.get(info.section.index()).map_or(0, |s| s.addr);
        (base + info.start, base + info.end)
    };
    for class in &analysis.plan.classes {
        let Some(kept) = piece_of(class.kept) else {
            continue;
        };
        for decision in &class.decisions {
            let Some(member) = piece_of(decision.candidate) else {
                continue;
            };
            match decision.action {
                icf_fold::plan::Action::Alias => {
                    pieces[member].fate = Fate::Alias(kept);
                    aliases += 1;
                }
                icf_fold::plan::Action::Thunk(_) => {
                    let code = &bytes[(pieces[member].start - shape.text_start) as usize..];
                    let pad = code.starts_with(thunk.landing_pad);
                    pieces[member].thunk_size = thunk.size(pad);
                    pieces[member].fate = Fate::Thunk(kept);
                    thunks += 1;
                }
                _ => {}
            }
        }
    }
    // A jump table folds with its function: its bytes stay where they are,
    // unread, and its symbols name the table of the function's kept copy
    // (a member of the same class), as after a link.
    let mut data_aliases = Vec::new();
    for class in &analysis.plan.classes {
        if analysis.candidates[class.kept.index()].is_code() {
            continue;
        }
        let owner_piece =
            |candidate: icf::CandidateId| analysis.owner[candidate.index()].and_then(&piece_of);
        for decision in &class.decisions {
            let Some(owner) = owner_piece(decision.candidate) else {
                continue;
            };
            let (Fate::Alias(kept) | Fate::Thunk(kept)) = pieces[owner].fate else {
                continue;
            };
            let twin = class
                .decisions
                .iter()
                .find(|other| owner_piece(other.candidate) == Some(kept));
            if let Some(twin) = twin {
                let (start, end) = address_of(decision.candidate);
                data_aliases.push((start, end, address_of(twin.candidate).0));
            }
        }
    }
    data_aliases.sort_unstable();
    // A removed function's kept copy must itself stay.
    for piece in &pieces {
        if let Fate::Alias(kept) | Fate::Thunk(kept) = piece.fate
            && pieces[kept].fate != Fate::Keep
        {
            bail!(
                "internal: the kept copy at {:#x} of the function at {:#x} is not kept",
                pieces[kept].start,
                piece.start
            );
        }
    }
    Ok((pieces, (aliases, thunks), data_aliases))
}

/// Each thunk: the landing pad the function started with, then a jump to
/// the kept copy's new address.
fn write_thunks(
    layout: &Layout,
    arch: &dyn Architecture,
    patches: &mut Patches,
) -> anyhow::Result<()> {
    let thunk = arch.thunk();
    for piece in &layout.pieces {
        let Fate::Thunk(kept) = piece.fate else {
            continue;
        };
        let pad = piece.thunk_size > thunk.jump.len() as u64;
        let mut bytes = if pad {
            thunk.landing_pad.to_vec()
        } else {
            Vec::new()
        };
        let jump_at = piece.new_start + bytes.len() as u64;
        let mut jump = thunk.jump.to_vec();
        let field = thunk.field as usize;
        let target = layout.pieces[kept].new_start;
        arch.write_reloc(
            thunk.r_type,
            &mut jump[field..],
            jump_at + thunk.field,
            target.wrapping_add(thunk.addend as u64),
        )
        .map_err(|e| anyhow::anyhow!("thunk at {:#x}: {e}", piece.start))?;
        bytes.extend(jump);
        patches.put(piece.new_start, bytes)?;
    }
    Ok(())
}

/// A jump table's base and its entries' reach, from the code that reads
/// it; or any place in data the code computes the address of, where a
/// table whose dispatch was not recognized may start.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Table {
    pub base: u64,
    pub entries: Option<u32>,
}

/// What decoding the code found.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// Each branch or PC-relative field (x86-64: the field; AArch64: the
    /// instruction word), with the address it names and the bias of its
    /// instruction (what an assembler adds: `S + A` is their sum).
    pub fields: HashMap<u64, (u64, i64)>,
    /// Position-independent jump tables, and places in data the code
    /// computes, by base.
    pub tables: Vec<Table>,
}

/// Every branch and PC-relative operand of every executable section,
/// decoded, written again where its place or target moves. Returns the
/// position-independent jump tables the code reads.
/// Where the kept relocations are: the sections they patch and their places.
#[derive(Debug, Default)]
pub(crate) struct Relocated {
    sections: std::collections::HashSet<usize>,
    places: std::collections::HashSet<u64>,
}

impl Relocated {
    fn of(elf: &Elf<'_>, shape: &Shape) -> anyhow::Result<Relocated> {
        let mut relocated = Relocated::default();
        for &(relocations, target) in &shape.kept {
            relocated.sections.insert(target);
            relocated
                .places
                .extend(elf.relas(relocations)?.iter().map(|r| r.offset));
        }
        Ok(relocated)
    }

    /// Whether a decoded field at `place` in section `section`, naming
    /// `target`, is a field: the link kept a relocation there, or no
    /// relocation was kept for its section (code the linker wrote: PLT
    /// entries), or it names code (an assembler resolves a branch inside
    /// its own section without a relocation). Bytes of data in code that
    /// decode as an instruction name random places, rarely code.
    fn is_field(&self, elf: &Elf<'_>, section: usize, place: u64, target: u64) -> bool {
        !self.sections.contains(&section)
            || self.places.contains(&place)
            || elf
                .section_at(target)
                .is_some_and(|i| elf.sections[i].is_executable())
    }
}

fn patch_code(
    elf: &Elf<'_>,
    object: &icf_object::Object<'_>,
    layout: &Layout,
    arch: &dyn Architecture,
    relocated: &Relocated,
    patches: &mut Patches,
) -> anyhow::Result<Decoded> {
    let data_in_code = data_marks(elf, object);
    let mut found = Vec::new();
    let mut decoded = Decoded::default();
    let tables = &mut decoded.tables;
    let extents = object.functions();
    // Code no symbol covers that is not padding: what the linker wrote into
    // `.text` (GNU ld's erratum 843419 stubs, range extension veneers).
    let mut stubs: Vec<(u64, u64)> = extents
        .iter()
        .filter(|e| e.symbols.is_empty())
        .filter_map(|e| {
            let section = elf.sections.get(e.section.index())?;
            let code = elf
                .bytes(e.section.index())
                .get(e.start as usize..e.end as usize)?;
            (!arch.is_padding(code)).then_some((section.addr + e.start, section.addr + e.end))
        })
        .collect();
    stubs.sort_unstable();
    let in_stub = |address: u64| {
        let after = stubs.partition_point(|&(start, _)| start <= address);
        after > 0 && address < stubs[after - 1].1
    };
    for extent in extents {
        let index = extent.section.index();
        let section = &elf.sections[index];
        let start = section.addr + extent.start;
        let code = &elf.bytes(index)[extent.start as usize..extent.end as usize];
        if extent.symbols.is_empty() && arch.is_padding(code) {
            continue;
        }
        found.clear();
        arch.linked_references(code, start, &mut found);
        let marks = data_in_code.get(&extent.section);
        for reference in &found {
            if reference.use_ == LinkedUse::Absolute {
                continue;
            }
            let place = start + reference.offset;
            // AArch64 data in code (`$d`) is no instruction.
            if marks.is_some_and(|m| is_data(m, extent.start + reference.offset))
                || !relocated.is_field(elf, index, place, reference.target)
            {
                continue;
            }
            if let Some(icf_arch::TableShape::Relative32 { entries }) = reference.table {
                tables.push(Table {
                    base: reference.target,
                    entries,
                });
            } else if reference.use_ == LinkedUse::PcRelative
                && elf
                    .section_at(reference.target)
                    .is_some_and(|i| !elf.sections[i].is_executable())
            {
                // A place in data the code computes: a table may start there.
                tables.push(Table {
                    base: reference.target,
                    entries: None,
                });
            }
            decoded
                .fields
                .insert(place, (reference.target, reference.bias));
            if !layout.is_carried(place) {
                continue;
            }
            let target = reference.target;
            let (new_place, new_target) = (layout.map(place), layout.map(target));
            if new_place == place && new_target == target {
                continue;
            }
            // No relocation backs it: an assembler resolved it inside its
            // section, which is a function's start (a call or tail call, the
            // address of a static function), or the linker wrote it (a stub
            // and the branches to and from it); into another function's
            // middle only hand-written assembly goes, where data in code
            // decodes as instructions too. Moving either way on a guess
            // could break the program: refuse.
            let moved_apart = new_target.wrapping_sub(target) != new_place.wrapping_sub(place);
            if moved_apart
                && relocated.sections.contains(&index)
                && !relocated.places.contains(&place)
                && layout
                    .piece_start(target)
                    .is_some_and(|start| start != target)
                && !in_stub(place)
                && !in_stub(target)
            {
                bail!(
                    "{}+{:#x}: bytes that decode as a reference to the middle of another function \
                     ({target:#x}) with no relocation kept: icf cannot tell whether they are an \
                     instruction or data in code",
                    section.name,
                    place - section.addr
                );
            }
            let size = field_size(arch, reference.r_type);
            let mut field = elf
                .read(place, size)
                .with_context(|| format!("code at {place:#x} runs past its section"))?
                .to_vec();
            arch.write_reloc(
                reference.r_type,
                &mut field,
                new_place,
                new_target.wrapping_add(reference.bias as u64),
            )
            .map_err(|e| {
                anyhow::anyhow!(
                    "{}+{:#x}: cannot point the field at {place:#x} to {new_target:#x} from {new_place:#x}: {e}",
                    section.name,
                    place - section.addr
                )
            })?;
            patches.put(new_place, field)?;
        }
    }
    // A recognized table (its size known) before a mere reference to the same place.
    decoded
        .tables
        .sort_by_key(|t| (t.base, t.entries.is_none()));
    decoded.tables.dedup_by_key(|t| t.base);
    Ok(decoded)
}

fn field_size(arch: &dyn Architecture, r_type: u32) -> usize {
    arch.elf_reloc(r_type)
        .map_or(4, |info| usize::from(info.size))
}

/// AArch64 mapping symbols per executable section: (offset, whether data
/// starts there: `$d`; code again: `$x`), sorted.
fn data_marks(
    elf: &Elf<'_>,
    object: &icf_object::Object<'_>,
) -> HashMap<icf_object::SectionIndex, Vec<(u64, bool)>> {
    let mut marks: HashMap<icf_object::SectionIndex, Vec<(u64, bool)>> = HashMap::new();
    for symbol in &object.symbols {
        let icf_object::SymbolPlace::Section(section) = symbol.place else {
            continue;
        };
        let mark = |letter: &[u8]| {
            symbol.name == letter
                || (symbol.name.starts_with(letter) && symbol.name.get(2) == Some(&b'.'))
        };
        let data = if mark(b"$d") {
            true
        } else if mark(b"$x") {
            false
        } else {
            continue;
        };
        if elf
            .sections
            .get(section.index())
            .is_some_and(|s| s.is_executable())
        {
            marks.entry(section).or_default().push((symbol.value, data));
        }
    }
    for list in marks.values_mut() {
        list.sort_unstable();
    }
    marks
}

/// Whether section offset `offset` lies in data: the last mapping symbol
/// at or before it is `$d`.
fn is_data(marks: &[(u64, bool)], offset: u64) -> bool {
    let after = marks.partition_point(|&(at, _)| at <= offset);
    after > 0 && marks[after - 1].1
}
