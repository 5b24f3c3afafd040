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
//!    thunk's replaced by a jump to its kept copy. With the link map, the
//!    constants `data_fold` removes are planned first, and the plan sees
//!    code reading a removed constant as reading its kept copy.
//! 2. **Lay out** `.text` again ([`layout`]): kept functions close up,
//!    each at the alignment its input section asked for (with the link
//!    map) or that of its address; the sections after `.text` in its
//!    segment move down together; where the exception tables have a
//!    segment of their own, removed functions' FDEs and exception tables
//!    leave it
//!    ([`eh_frame::region`]); later segments move down in the file by
//!    whole pages and keep their addresses, so nothing in them moves
//!    (`.text`'s own segment, when it follows the exception tables', moves
//!    down by whole pages to close up behind them: `write::code_shift`).
//!    Functions a field names in a way no new layout can be written for
//!    keep their place ([`pin`]), and the plan and layout are made again.
//! 3. **Patch** every field that names a place that moved, or sits in a
//!    place that moved: branches and PC-relative operands found by
//!    decoding all code (checked against the kept relocations, which must
//!    all be accounted for), absolute addresses and jump table entries the
//!    kept relocations name, dynamic relocations (`RELATIVE`,
//!    `IRELATIVE`, RELR), GOT entries, `.eh_frame` ([`eh_frame`]) and
//!    `.eh_frame_hdr`, `.dynamic`, the entry point and symbol values.
//! 4. **Rewrite the DWARF** ([`dwarf`]): every address it holds into
//!    code that moved, so that kept code symbolizes as before.
//! 5. **Write** OUT atomically. The kept relocations of the DWARF
//!    describe the old layout: OUT carries them empty, and says so (and
//!    carries the DWARF empty too, saying why, when it could not be
//!    rewritten).

mod code;
mod data_fold;
mod dwarf;
mod dynamic;
mod eh_frame;
mod kept;
mod layout;
mod patch;
mod pin;
mod shape;
mod symbols;
mod write;

use anyhow::{Context, bail};
use code::{Relocated, field_size, patch_code};
use icf_arch::Architecture;
use icf_object::linked_elf::{self as elf, Elf};
use layout::{Alignments, Fate, Layout, Piece};
use patch::Patches;
pub use pin::PinKind;
use shape::Shape;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// What `icf shrink` is asked.
#[derive(Clone, Debug, Default)]
pub struct ShrinkOptions {
    pub mode: icf::Mode,
    /// Symbols that keep their own body.
    pub keep_unique: Vec<String>,
    /// OUT carries the relocations the link kept empty instead of
    /// rewritten (`icf link` adds `--emit-relocs` for itself only).
    pub drop_kept_relocations: bool,
    /// Make the report of what folds (`icf link --report` after the link).
    pub want_report: bool,
    /// The link's map (`-Map`): with it, the compiler's anonymous
    /// read-only constants that hold the same bytes fold too
    /// (`data_fold`).
    pub map: Option<std::path::PathBuf>,
    /// Testing only: wrong folds made on purpose after planning (see
    /// `icf::PlantedFold`), so that `icf verify` and `--verify` can be
    /// checked to reject them.
    pub plants: Vec<icf::PlantedFold>,
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
    /// Functions kept whole and in place instead of refusing the image
    /// (see [`PinKind`]), counted by kind name.
    pub kept_in_place: BTreeMap<String, usize>,
    /// FDEs that no longer describe code.
    pub dropped_fdes: usize,
    /// Exception tables (LSDAs) dropped as copies of others: their FDEs
    /// name the copy kept, as `icf link` folds them.
    pub shared_exception_tables: usize,
    /// Read-only constants removed as copies of others (`--map`), and
    /// the bytes they held.
    pub folded_constants: usize,
    pub folded_constant_bytes: u64,
    /// Sections OUT carries empty (kept relocations, DWARF), with their sizes.
    pub emptied: Vec<(String, u64)>,
    /// Symbols OUT drops with the kept relocations, as written only for
    /// them ([`ShrinkOptions::drop_kept_relocations`]).
    pub link_only_symbols: usize,
    /// Why OUT carries the DWARF empty, when IN had some and it could not
    /// be rewritten.
    pub debug_dropped: Option<String>,
    /// What folds, when [`ShrinkOptions::want_report`] asked.
    pub report: Option<icf::Report>,
    /// Wall time of each phase, in order: reading IN, finding the
    /// constants to fold (`--map`), the analysis (lifting and comparing,
    /// every round), laying out and patching (every round), the DWARF,
    /// writing OUT.
    pub phases: Vec<(&'static str, std::time::Duration)>,
}

impl Shrunk {
    /// What OUT carries empty, in one sentence, when it does: DWARF by
    /// name (a debugger loses it), kept relocations as a count.
    pub fn emptied_note(&self) -> Option<String> {
        let (debug, relocations): (Vec<_>, Vec<_>) = self
            .emptied
            .iter()
            .partition(|(name, _)| name.starts_with(".debug_") || name.starts_with(".zdebug_"));
        let mut parts = Vec::new();
        if !debug.is_empty() {
            let bytes: u64 = debug.iter().map(|(_, size)| size).sum();
            let why = self.debug_dropped.as_deref().map_or(String::new(), |why| {
                format!(", which icf could not rewrite: {why}")
            });
            parts.push(format!(
                "its DWARF ({} sections, {bytes} bytes{why})",
                debug.len()
            ));
        }
        if !relocations.is_empty() {
            let symbols = match self.link_only_symbols {
                0 => String::new(),
                n => format!("; the {n} symbols written only for them dropped"),
            };
            parts.push(format!(
                "the relocations the link kept ({} sections{symbols})",
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

    /// One line: `shrunk IN: file A -> B bytes (-C), .text D -> E (-F); N
    /// aliases, M thunks`, then the functions kept in place by kind.
    pub fn summary(&self, input: &Path) -> String {
        let in_place = if self.kept_in_place.is_empty() {
            String::new()
        } else {
            let total: usize = self.kept_in_place.values().sum();
            format!(
                "; {total} kept in place ({})",
                pin::listed(&self.kept_in_place)
            )
        };
        let constants = if self.folded_constants == 0 {
            String::new()
        } else {
            format!(
                "; {} read-only constants folded (-{} bytes)",
                self.folded_constants, self.folded_constant_bytes
            )
        };
        let tables = if self.shared_exception_tables == 0 {
            String::new()
        } else {
            format!("; {} exception tables shared", self.shared_exception_tables)
        };
        format!(
            "shrunk {}: file {} -> {} bytes (-{}), .text {} -> {} bytes (-{}); {} aliases, {} thunks{constants}{tables}{in_place}",
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

/// `icf link`'s fold after the link (LTO inputs, `--after-link`, see
/// `icf::AfterLink`): this shrink of the image linked with
/// `--emit-relocs`, in `mode`; a warning on stderr when its DWARF could
/// not be kept.
pub fn after_link(mode: icf::Mode, always: bool) -> icf::AfterLink {
    icf::AfterLink {
        shrink: std::sync::Arc::new(
            move |input: &Path, output: &Path, request: &icf::ShrinkRequest| {
                let options = ShrinkOptions {
                    mode,
                    keep_unique: request.keep_unique.clone(),
                    drop_kept_relocations: !request.keep_relocations,
                    want_report: request.want_report,
                    map: None,
                    plants: Vec::new(),
                };
                let shrunk = shrink(input, output, &options)?;
                if let Some(why) = &shrunk.debug_dropped {
                    eprintln!(
                        "icf: warning: {}: its DWARF is left empty: {why}",
                        output.display()
                    );
                }
                Ok(icf::PostLinked {
                    folded: shrunk.aliases + shrunk.thunks,
                    summary: shrunk.summary(output),
                    report: shrunk.report,
                })
            },
        ),
        always,
    }
}

/// Folds and compacts `input` into `output`.
pub fn shrink(input: &Path, output: &Path, options: &ShrinkOptions) -> anyhow::Result<Shrunk> {
    let inputs = icf::Inputs::open(&[input.to_path_buf()])?;
    let data = inputs.files[0].data();
    let named = |e: anyhow::Error| e.context(format!("{}", input.display()));
    let loading = std::time::Instant::now();
    let elf = Elf::parse(data).map_err(|e| named(e.into()))?;
    let shape = Shape::of(&elf).map_err(named)?;
    let symbols = elf.symbols(shape.symtab).map_err(|e| named(e.into()))?;
    // The link map and the objects it names are read beside the image.
    let (loaded, constants) = rayon::join(
        || {
            icf::Program::load(
                &inputs,
                icf::Options {
                    linked_image: true,
                    keep_decoded_code: true,
                    ..icf::Options::default()
                },
            )
        },
        || -> anyhow::Result<(Alignments, Option<data_fold::Prepared>)> {
            let text_align = elf.sections[shape.text].align;
            let Some(map) = options.map.as_ref() else {
                return Ok((Alignments::inferred(text_align), None));
            };
            let sections = data_fold::read_map(map)?;
            data_fold::check_map_describes(&elf, &shape, &symbols, &sections, map)?;
            let alignments = Alignments::from_map(
                text_align,
                sections.spans_between(shape.text_start, shape.text_end),
            );
            let prepared = data_fold::prepare(&elf, &shape, &symbols, map, sections)?;
            Ok((alignments, prepared))
        },
    );
    let mut program = loaded?;
    let (alignments, constants) = constants.map_err(named)?;
    // What the image reader decoded, handed on rather than decoded again.
    let decoded_code = program
        .objects
        .first_mut()
        .and_then(|object| object.object.image.as_mut())
        .map(|image| std::mem::take(&mut image.decoded_code))
        .unwrap_or_default();
    let object = &program.object(icf::ObjectId(0)).object;
    let arch = icf_arch::of(object.arch);
    // A short jump cannot reach a copy elsewhere: the function it reaches
    // keeps its body, and the plan is made again without folding it.
    // What code runs on into (it falls through its last instruction) keeps
    // its body and its place right after it.
    let disassembly = code::Disassembly::of(&elf, object, arch, decoded_code);
    let code = TextCode::of(&shape, &disassembly, arch, &elf);
    let mut keep_places = code.run_on_into(&shape);
    let relocated = Relocated::of(&elf, &shape).map_err(named)?;
    let load = loading.elapsed();
    let folding_constants = std::time::Instant::now();
    let folds = match constants {
        Some(prepared) => {
            let code_targets = disassembly.targets();
            data_fold::plan(&elf, &shape, &symbols, arch, &code_targets, prepared).map_err(named)?
        }
        None => None,
    };
    if let Some(folds) = &folds {
        redirect_to_kept_constants(&mut program, &elf, &disassembly, folds);
    }
    let object = &program.object(icf::ObjectId(0)).object;
    let constants_time = folding_constants.elapsed();
    let planning = std::time::Instant::now();
    // Functions kept whole and in place (`pin.rs`): each round plans, lays
    // out and patches; one that finds fields needing more pins starts again.
    // What the layout keeps clear of pages' last words (AArch64's `adrp`s).
    let hazards = elf
        .read(
            shape.text_start,
            (shape.text_end - shape.text_start) as usize,
        )
        .map(|text| icf_arch::of(object.arch).page_end_hazards(text, shape.text_start))
        .unwrap_or_default();
    let mut pinned: BTreeMap<u64, PinKind> = BTreeMap::new();
    // Of the planning: the analyses (one per round), the rest laying out
    // and patching.
    let mut analysis_time = std::time::Duration::ZERO;
    let Settled {
        layout,
        mut patches,
        rewritten,
        counts,
        report,
    } = Rounds {
        program: &program,
        elf: &elf,
        shape: &shape,
        code: &code,
        disassembly: &disassembly,
        symbols: &symbols,
        relocated: &relocated,
        folds: folds.as_ref(),
        hazards: &hazards,
        alignments: &alignments,
        options,
        load,
    }
    .settle(&mut keep_places, &mut pinned, &mut analysis_time)
    .map_err(named)?;
    // The image model and the decoded code served the plan and the
    // patches: the heap they hold goes back before OUT is written.
    drop((code, disassembly, program));
    icf::memory::return_freed_memory();
    let mut rewritten = rewritten;
    if options.drop_kept_relocations {
        for (_, bytes) in &mut rewritten {
            bytes.clear();
        }
    }
    let dropped_fdes = eh_frame::patch(&elf, &layout, &mut patches).map_err(named)?;
    let plan_time = planning.elapsed();
    let debugging = std::time::Instant::now();
    let (mut rewritten, mut debug_dropped) = (rewritten, None);
    match dwarf::rewrite(&elf, &layout, &symbols) {
        Ok(debug) => rewritten.extend(debug),
        Err(why) => debug_dropped = Some(format!("{why:#}")),
    }
    let debug_time = debugging.elapsed();
    let writing = std::time::Instant::now();
    let written = write::write(
        &elf,
        &shape,
        &layout,
        &mut patches,
        &symbols,
        &write::Rewritten {
            sections: &rewritten,
            keep_debug: debug_dropped.is_none(),
            drop_link_only_symbols: options.drop_kept_relocations,
        },
        arch.code_fill(),
    )
    .map_err(named)?;
    icf::write_atomically(output, &written.bytes)?;
    let permissions = std::fs::metadata(input)
        .with_context(|| format!("reading {}", input.display()))?
        .permissions();
    std::fs::set_permissions(output, permissions)
        .with_context(|| format!("setting the mode of {}", output.display()))?;
    let write_time = writing.elapsed();
    let kept_in_place = pin::count(&pinned);
    // The folds the region carried out (none where it could not start at
    // the folded section).
    let (folded_constants, folded_constant_bytes) = match (&folds, &layout.region) {
        (Some(folds), Some(region)) if !region.redirects.is_empty() => {
            (folds.removed.len(), folds.removed_bytes())
        }
        _ => (0, 0),
    };
    let shared_exception_tables = layout
        .region
        .as_ref()
        .map_or(0, |region| region.shared_exception_tables);
    let mut report = report;
    if let Some(report) = &mut report {
        note_what_was_done(
            report,
            &kept_in_place,
            (folded_constants, folded_constant_bytes),
            shared_exception_tables,
        );
    }
    Ok(Shrunk {
        file_before: data.len() as u64,
        file_after: written.bytes.len() as u64,
        text_before: shape.text_end - shape.text_start,
        text_after: layout.new_text_end - layout.new_section_address(shape.text_start),
        aliases: counts.0,
        thunks: counts.1,
        kept_in_place,
        dropped_fdes,
        shared_exception_tables,
        folded_constants,
        folded_constant_bytes,
        emptied: written.emptied,
        link_only_symbols: written.link_only_symbols,
        debug_dropped,
        report,
        phases: vec![
            ("read", load),
            ("constants", constants_time),
            ("analysis", analysis_time),
            ("layout and patch", plan_time.saturating_sub(analysis_time)),
            ("DWARF", debug_time),
            ("write", write_time),
        ],
    })
}

/// The notes of a report of folds made: the analysis's first note reads
/// for `icf report BINARY`, which estimates; then what was kept in place,
/// the constants folded (count, bytes) and the exception tables shared.
fn note_what_was_done(
    report: &mut icf::Report,
    kept_in_place: &BTreeMap<String, usize>,
    (folded_constants, folded_constant_bytes): (usize, u64),
    shared_exception_tables: usize,
) {
    for note in &mut report.notes {
        *note = note.replace(
            icf::IMAGE_ESTIMATE,
            ", folded after its link by `icf shrink`",
        );
    }
    if let Some(note) = pin::note(kept_in_place) {
        report.notes.push(note);
        report.kept_in_place = kept_in_place.clone();
    }
    if folded_constants > 0 {
        report.notes.push(format!(
            "{folded_constants} anonymous read-only constants folded into copies of theirs \
             ({folded_constant_bytes} bytes of .rodata), read through the link map"
        ));
    }
    if shared_exception_tables > 0 {
        report.notes.push(format!(
            "{shared_exception_tables} exception tables equal to others shared: their FDEs \
             name one copy"
        ));
    }
}

/// What one round of planning reads: the image, its decoded code and the
/// constants folded, fixed for every round.
struct Rounds<'a, 'data> {
    program: &'a icf::Program<'data>,
    elf: &'a Elf<'data>,
    shape: &'a Shape,
    code: &'a TextCode,
    disassembly: &'a code::Disassembly,
    symbols: &'a [elf::SymbolInfo],
    relocated: &'a Relocated,
    folds: Option<&'a data_fold::DataFolds>,
    hazards: &'a [icf_arch::PageEndHazard],
    alignments: &'a Alignments,
    options: &'a ShrinkOptions,
    load: std::time::Duration,
}

/// The plan laid out and patched, with nothing more to keep in place.
struct Settled {
    layout: Layout,
    patches: Patches,
    rewritten: Vec<(usize, Vec<u8>)>,
    counts: (usize, usize),
    report: Option<icf::Report>,
}

impl Rounds<'_, '_> {
    /// Plans, lays out and patches until no round finds more to keep in
    /// place (`pin.rs`): a function whose fields need it keeps its body
    /// and its place (`pinned`), a copy folded into the code right after
    /// what runs into it keeps its body where it would lose its alignment
    /// (`keep_places`), and the plan is made again.
    fn settle(
        &self,
        keep_places: &mut Vec<(u32, u64)>,
        pinned: &mut BTreeMap<u64, PinKind>,
        analysis_time: &mut std::time::Duration,
    ) -> anyhow::Result<Settled> {
        let (elf, shape, symbols) = (self.elf, self.shape, self.symbols);
        let (disassembly, relocated, hazards) = (self.disassembly, self.relocated, self.hazards);
        let object = &self.program.object(icf::ObjectId(0)).object;
        let arch = icf_arch::of(object.arch);
        let mut rounds = 0;
        // Whether the segment holding `.text` may move (`write::code_shift`).
        let mut shift_allowed = true;
        loop {
            keep_places.extend(
                pinned
                    .keys()
                    .map(|&start| (shape.text as u32, start - shape.text_start)),
            );
            keep_places.sort_unstable();
            keep_places.dedup();
            let ((pieces, counts, data_aliases), report) = plan(
                self.program,
                self.elf,
                self.shape,
                self.code,
                self.options,
                keep_places,
                pinned,
                self.load,
                analysis_time,
            )?;
            let mut layout = Layout::new(
                pieces,
                shape.text_start,
                shape.text_end,
                self.alignments,
                shape.tail_start,
                shape.tail_end,
                shape.tail_align,
                hazards,
            )?;
            layout.data_aliases = data_aliases;
            layout.region = eh_frame::region(elf, shape, symbols, &layout, self.folds)?;
            if shift_allowed {
                let shift = write::code_shift(elf, shape, &layout)?;
                layout.shift_code_down(shift);
            }
            // A copy that must stay right after the code running into it, where
            // a function folded into it would lose its alignment: that function
            // keeps its body, and the plan is made again.
            let misaligned = layout.misaligned_aliases(self.alignments);
            if let Some(&(alias, at)) = misaligned.first() {
                rounds += 1;
                if rounds > MAX_PIN_ROUNDS {
                    bail!(
                        "the function at {alias:#x} folds into a copy that must stay right after \
                         the code running into it, at {at:#x}, which does not keep its alignment"
                    );
                }
                keep_places.extend(
                    misaligned
                        .iter()
                        .map(|&(alias, _)| (shape.text as u32, alias - shape.text_start)),
                );
                continue;
            }
            let mut patches = Patches::default();
            write_thunks(&layout, arch, &mut patches)?;
            let decoded = patch_code(
                self.elf,
                object,
                disassembly,
                &layout,
                arch,
                relocated,
                &mut patches,
            )?;
            let rewritten = kept::patch(
                self.elf,
                self.shape,
                symbols,
                &layout,
                arch,
                &decoded,
                &mut patches,
            )?;
            dynamic::patch(elf, &layout, arch, &mut patches)?;
            let wanted = std::mem::take(&mut patches.pins.wanted);
            // A field the segment's move put out of reach: the segment
            // stays instead, and no function keeps its place for it.
            if !wanted.is_empty() && layout.shift > 0 {
                shift_allowed = false;
                continue;
            }
            if wanted.is_empty() {
                return Ok(Settled {
                    layout,
                    patches,
                    rewritten,
                    counts,
                    report,
                });
            }
            rounds += 1;
            if rounds > MAX_PIN_ROUNDS {
                bail!("functions to keep in place still found after {MAX_PIN_ROUNDS} rounds");
            }
            for (start, kind) in wanted {
                pinned.entry(start).or_insert(kind);
            }
        }
    }
}

/// Points every code reference into a constant `folds` removes at the
/// same byte of its kept copy, in the model the plan compares: functions
/// that differ only in which copy of a constant they read then fold, as
/// `icf link` folds them (the layout carries the same redirect out).
/// Where the layout cannot carry the folds out (no region compacts
/// `.rodata`), the copies stay and each folded function reads the kept
/// copy's bytes, equal by construction; an anonymous constant has no
/// address a program may compare.
fn redirect_to_kept_constants(
    program: &mut icf::Program<'_>,
    elf: &Elf<'_>,
    disassembly: &code::Disassembly,
    folds: &data_fold::DataFolds,
) {
    let kept_copy = |target: u64| {
        let after = folds
            .removed
            .partition_point(|&(start, _, _)| start <= target);
        let &(start, end, kept) = folds.removed.get(after.checked_sub(1)?)?;
        (target < end).then(|| kept.wrapping_sub(start) as i64)
    };
    let Some(object) = program.objects.first_mut() else {
        return;
    };
    for (extent, found) in disassembly.extents.iter().zip(&disassembly.references) {
        let Some((start, found)) = found else {
            continue;
        };
        let index = extent.section.index();
        let (Some(section), Some(model)) = (
            elf.sections.get(index),
            object.object.sections.get_mut(index),
        ) else {
            continue;
        };
        for reference in found {
            let Some(delta) = kept_copy(reference.target) else {
                continue;
            };
            let offset = start + reference.offset - section.addr;
            let at = model.relocs.partition_point(|r| r.offset < offset);
            if let Some(reloc) = model.relocs.get_mut(at).filter(|r| r.offset == offset) {
                reloc.addend = reloc.addend.wrapping_add(delta);
            }
        }
    }
}

/// The pieces of `.text` as decoding finds them, once for every round of
/// planning: the function extents, which of them must follow the piece
/// before (see [`TextCode::of`]), and every short jump's place and target.
struct TextCode {
    extents: Vec<icf_object::FunctionExtent>,
    joined: Vec<bool>,
    /// (place, target) of each short jump (`jmp rel8`), by place.
    short_jumps: Vec<(u64, u64)>,
}

impl TextCode {
    /// For each piece of `.text` (in address order): whether the code
    /// before it reaches it by running off its end (falling through, or
    /// through padding), or a short jump (`jmp rel8`, whose reach another
    /// placement could break) spans from before it to it or from it back
    /// over it. Such a piece stays right after the piece before it, and
    /// keeps its body.
    fn of(
        shape: &Shape,
        disassembly: &code::Disassembly,
        arch: &dyn Architecture,
        elf: &Elf<'_>,
    ) -> TextCode {
        let ((extents, decoded), runs_off): ((Vec<_>, Vec<_>), Vec<bool>) = disassembly
            .extents
            .iter()
            .zip(&disassembly.references)
            .zip(&disassembly.runs_off)
            .filter(|((f, _), _)| f.section.index() == shape.text)
            .map(|((f, references), &runs_off)| ((f.clone(), references.as_ref()), runs_off))
            .unzip();
        let mut joined = vec![false; extents.len()];
        let mut short_jumps = Vec::new();
        // How far the code so far reaches on: past its end, or to this address.
        let mut runs_on = false;
        let mut reach_to = 0u64;
        for (index, (f, decoded)) in extents.iter().zip(decoded).enumerate() {
            if code::extent_code(elf, f).is_none() {
                continue;
            }
            joined[index] = runs_on || f.start <= reach_to && index > 0;
            // Filler no symbol names.
            let Some((start, found)) = decoded else {
                continue;
            };
            runs_on = runs_off[index];
            for reference in found {
                if field_size(arch, reference.r_type) != 1 {
                    continue;
                }
                short_jumps.push((start + reference.offset, reference.target));
                let target = reference.target.wrapping_sub(shape.text_start);
                if target >= f.end {
                    reach_to = reach_to.max(target);
                } else {
                    // Backward: everything from the piece it reaches on.
                    let first = extents.partition_point(|e| e.start <= target);
                    for later in joined.iter_mut().take(index + 1).skip(first) {
                        *later = true;
                    }
                }
            }
        }
        TextCode {
            extents,
            joined,
            short_jumps,
        }
    }

    /// The pieces of `.text` that must follow the code before them, as
    /// (section index, offset): what `PlanOptions::keep_places` takes.
    fn run_on_into(&self, shape: &Shape) -> Vec<(u32, u64)> {
        self.joined
            .iter()
            .zip(&self.extents)
            .filter(|&(&joined, _)| joined)
            .map(|(_, f)| (shape.text as u32, f.start))
            .collect()
    }
}

/// How many times the shrink plans again to keep more functions in place
/// (or unfolded, where a kept copy could not be aligned for them) before
/// it gives up.
const MAX_PIN_ROUNDS: usize = 8;

/// The plan for `.text` (see [`pieces`]): made again, with the functions
/// only short jumps reach kept (`keep_places` grows), until no short jump
/// from kept code reaches a removed function; `pinned` pieces keep their
/// place.
#[allow(clippy::too_many_arguments)]
fn plan(
    program: &icf::Program<'_>,
    elf: &Elf<'_>,
    shape: &Shape,
    code: &TextCode,
    options: &ShrinkOptions,
    keep_places: &mut Vec<(u32, u64)>,
    pinned: &BTreeMap<u64, PinKind>,
    load: std::time::Duration,
    analysis_time: &mut std::time::Duration,
) -> anyhow::Result<(Planned, Option<icf::Report>)> {
    let object = &program.object(icf::ObjectId(0)).object;
    let arch = icf_arch::of(object.arch);
    loop {
        let analysing = std::time::Instant::now();
        let mut analysis = icf::Analysis::run(
            program,
            &icf::PlanOptions {
                mode: options.mode,
                keep_unique: options.keep_unique.clone(),
                only_code_in: Some(".text".to_string()),
                keep_places: keep_places.clone(),
                cache: None,
                ..icf::PlanOptions::default()
            },
        );
        *analysis_time += analysing.elapsed();
        analysis.plant(&options.plants)?;
        let (mut pieces, counts, data_aliases) = pieces(elf, shape, code, &analysis, arch)?;
        for piece in &mut pieces {
            if pinned.contains_key(&piece.start) {
                piece.pinned = true;
                if piece.fate == Fate::Padding {
                    piece.fate = Fate::Keep;
                }
            }
        }
        let reached: Vec<(u32, u64)> = short_jumps_into_removed(shape, code, &pieces)
            .into_iter()
            .filter(|place| !keep_places.contains(place))
            .collect();
        if reached.is_empty() {
            let report = options
                .want_report
                .then(|| analysis.report(&analysis.plan, load));
            return Ok(((pieces, counts, data_aliases), report));
        }
        if keep_places.len() > MAX_SHORT_JUMP_TARGETS {
            bail!("too many functions only short jumps reach");
        }
        keep_places.extend(reached);
    }
}

/// How many functions reached by short jumps icf keeps unfolded before it
/// gives up planning again.
const MAX_SHORT_JUMP_TARGETS: usize = 10_000;

/// The functions of `.text` a short jump (x86-64 `jmp rel8`, a tail call
/// the assembler resolved) from a kept piece reaches, where the plan removes
/// them: as (section index, offset), what `PlanOptions::keep_places` takes.
fn short_jumps_into_removed(shape: &Shape, code: &TextCode, pieces: &[Piece]) -> Vec<(u32, u64)> {
    let piece_at = |address: u64| {
        let at = pieces.partition_point(|p| p.start <= address);
        at.checked_sub(1)
            .map(|i| &pieces[i])
            .filter(|piece| address < piece.end)
    };
    let mut reached: Vec<(u32, u64)> = code
        .short_jumps
        .iter()
        .filter(|&&(place, _)| piece_at(place).is_some_and(|p| p.fate == Fate::Keep))
        .filter_map(|&(_, target)| piece_at(target))
        .filter(|target| matches!(target.fate, Fate::Alias(_)))
        .map(|target| (shape.text as u32, target.start - shape.text_start))
        .collect();
    reached.sort_unstable();
    reached.dedup();
    reached
}

/// The pieces of `.text` with their fates, the numbers of aliases and
/// thunks, and the folded jump tables (see [`Layout::data_aliases`]).
type Planned = (Vec<Piece>, (usize, usize), Vec<(u64, u64, u64)>);

/// The pieces of `.text` and their fates from the plan; the numbers of
/// aliases and thunks; the jump tables folded with their functions.
fn pieces(
    elf: &Elf<'_>,
    shape: &Shape,
    code: &TextCode,
    analysis: &icf::Analysis<'_, '_>,
    arch: &dyn Architecture,
) -> anyhow::Result<Planned> {
    let text = icf_object::SectionIndex(shape.text as u32);
    let bytes = elf.bytes(shape.text);
    let mut pieces: Vec<Piece> = Vec::with_capacity(code.extents.len());
    for (f, &joined) in code.extents.iter().zip(&code.joined) {
        let code = &bytes[f.start as usize..f.end as usize];
        let padding = f.symbols.is_empty() && arch.is_padding(code);
        pieces.push(Piece {
            start: shape.text_start + f.start,
            end: shape.text_start + f.end,
            // Padding the code before runs (or jumps) through stays.
            fate: if padding && !joined {
                Fate::Padding
            } else {
                Fate::Keep
            },
            new_start: 0,
            thunk_size: 0,
            align: 1,
            joined,
            pinned: false,
        });
    }
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
        patches.put(piece.new_start, bytes);
    }
    Ok(())
}
