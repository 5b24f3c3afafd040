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
    let analysis = icf::Analysis::run(
        &program,
        &icf::PlanOptions {
            mode: options.mode,
            keep_unique: options.keep_unique.clone(),
            only_code_in: Some(".text".to_string()),
            cache: None,
            ..icf::PlanOptions::default()
        },
    );
    let object = &program.object(icf::ObjectId(0)).elf;
    let arch = icf_arch::of(object.arch);
    let (pieces, counts) = pieces(&elf, &shape, object, &analysis, arch)?;
    let layout = Layout::new(
        pieces,
        shape.text_start,
        shape.text_end,
        shape.tail_start,
        shape.tail_end,
        shape.tail_align,
        arch.thunk().min_align,
    );
    let mut patches = Patches::default();
    let symbols = elf.symbols(shape.symtab).map_err(named)?;
    write_thunks(&layout, arch, &mut patches)?;
    let decoded = patch_code(&elf, object, &layout, arch, &mut patches).map_err(named)?;
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
    let written =
        write::write(&elf, &shape, &layout, &patches, &symbols, &rewritten).map_err(named)?;
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
                "linked by gold for AArch64, whose --emit-relocs output puts the relocations of some                  functions at the offset they have in their input section instead of in .text                  (a `bl`'s CALL26 lands on another function's `adrp`): icf does not move code by                  relocations it cannot trust. Link with GNU ld, lld or mold"
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
        let kept: Vec<(usize, usize)> = elf
            .sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.sh_type == E::SHT_RELA.0 && !s.is_alloc())
            .filter_map(|(index, s)| {
                let target = s.info as usize;
                elf.sections
                    .get(target)
                    .filter(|t| t.is_alloc())
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
        let tail: Vec<&elf::SectionInfo> = elf
            .sections
            .iter()
            .filter(|s| s.is_alloc() && s.addr >= text_end && s.addr < segment_end && s.size > 0)
            .collect();
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

/// The pieces of `.text` and their fates from the plan; the numbers of
/// aliases and thunks.
fn pieces(
    elf: &Elf<'_>,
    shape: &Shape,
    object: &icf_object::Object<'_>,
    analysis: &icf::Analysis<'_, '_>,
    arch: &dyn Architecture,
) -> anyhow::Result<(Vec<Piece>, (usize, usize))> {
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
    Ok((pieces, (aliases, thunks)))
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
fn patch_code(
    elf: &Elf<'_>,
    object: &icf_object::Object<'_>,
    layout: &Layout,
    arch: &dyn Architecture,
    patches: &mut Patches,
) -> anyhow::Result<Decoded> {
    let data_in_code = data_marks(elf, object);
    let mut found = Vec::new();
    let mut decoded = Decoded::default();
    let tables = &mut decoded.tables;
    for extent in object.functions() {
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
            if let Some(shape) = reference.table
                && let icf_arch::TableShape::Relative32 { entries } = shape
            {
                tables.push(Table {
                    base: reference.target,
                    entries,
                });
            }
            if reference.use_ == LinkedUse::Absolute {
                continue;
            }
            // A place in data the code computes: a table may start there.
            if reference.use_ == LinkedUse::PcRelative
                && reference.table.is_none()
                && elf
                    .section_at(reference.target)
                    .is_some_and(|i| !elf.sections[i].is_executable())
            {
                tables.push(Table {
                    base: reference.target,
                    entries: None,
                });
            }
            let place = start + reference.offset;
            // AArch64 data in code (`$d`) is no instruction.
            if marks.is_some_and(|m| is_data(m, extent.start + reference.offset)) {
                continue;
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
