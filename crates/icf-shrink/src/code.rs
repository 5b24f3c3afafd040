//! The code of every executable section, decoded: each branch and
//! PC-relative field found (`icf-arch`'s `linked_references`), checked
//! against the kept relocations where there are any, and written again
//! where its place or target moves.

use crate::layout::Layout;
use crate::patch::{Patches, Writes};
use crate::pin::PinKind;
use crate::shape::Shape;
use anyhow::Context;
use icf_arch::{Architecture, KeptReloc, LinkedReference, LinkedUse};
use icf_object::FunctionExtent;
use icf_object::linked_elf::Elf;
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet};

/// Every piece of code of the image decoded once, in parallel: what each
/// round of planning and patching reads.
pub(crate) struct Disassembly {
    /// The pieces of code of every executable section (functions, and
    /// runs of code no symbol covers), in address order per section.
    pub extents: Vec<FunctionExtent>,
    /// Per extent: where it starts and every branch and PC-relative field
    /// decoding finds in it, with the absolute values that lie in an
    /// allocated section; `None` for filler no symbol names.
    pub references: Vec<Option<(u64, Vec<LinkedReference>)>>,
    /// Per extent: whether its code runs off its end
    /// (`icf_arch::LinkedScan::runs_off_the_end`, found in the same decode).
    pub runs_off: Vec<bool>,
}

impl Disassembly {
    /// `decoded`: what the image reader found in each piece
    /// (`icf_object::Image::decoded_code`), used where it lists the same
    /// pieces; the rest is decoded here.
    pub(crate) fn of(
        elf: &Elf<'_>,
        object: &icf_object::Object<'_>,
        arch: &dyn Architecture,
        decoded: Vec<icf_object::DecodedPiece>,
    ) -> Disassembly {
        let extents = object.functions();
        // What shrink uses of the references found: the absolute values
        // among them that may be addresses (most are numbers: `mov $5`).
        let empty: Vec<(u64, u64)> = elf
            .sections
            .iter()
            .filter(|s| s.is_alloc() && !s.has_bytes())
            .map(|s| (s.addr, s.addr + s.size))
            .collect();
        let kept = |mut found: Vec<LinkedReference>| {
            found.retain(|reference| {
                reference.use_ != LinkedUse::Absolute
                    || elf.section_at(reference.target).is_some()
                    || empty
                        .iter()
                        .any(|&(start, end)| (start..end).contains(&reference.target))
            });
            found.shrink_to_fit();
            found
        };
        let same_pieces = decoded.len() == extents.len()
            && decoded.iter().zip(&extents).all(|(piece, extent)| {
                (piece.section, piece.start, piece.end)
                    == (extent.section, extent.start, extent.end)
            });
        // Per extent: where it starts, its references, whether it runs
        // off its end.
        let read: Vec<Option<(u64, Vec<LinkedReference>, bool)>> = if same_pieces {
            decoded
                .into_par_iter()
                .zip(&extents)
                .map(|(piece, extent)| {
                    let start = elf.sections.get(extent.section.index())?.addr + extent.start;
                    let code = extent_code(elf, extent)?;
                    if extent.symbols.is_empty() && arch.is_padding(code) {
                        return None;
                    }
                    Some((start, kept(piece.references?), piece.runs_off_the_end))
                })
                .collect()
        } else {
            extents
                .par_iter()
                .map(|extent| {
                    let start = elf.sections.get(extent.section.index())?.addr + extent.start;
                    let code = extent_code(elf, extent)?;
                    if extent.symbols.is_empty() && arch.is_padding(code) {
                        return None;
                    }
                    let mut found = Vec::new();
                    let runs_off = arch
                        .linked_references(code, start, &mut found)
                        .runs_off_the_end;
                    Some((start, kept(found), runs_off))
                })
                .collect()
        };
        let (references, runs_off) = read
            .into_iter()
            .map(|piece| match piece {
                Some((start, found, runs_off)) => (Some((start, found)), runs_off),
                None => (None, false),
            })
            .unzip();
        Disassembly {
            extents,
            references,
            runs_off,
        }
    }

    /// What decoding found each field at a place names, by place.
    pub(crate) fn targets(&self) -> DecodedTargets<'_> {
        let mut starts: Vec<(u64, usize)> = self
            .references
            .iter()
            .enumerate()
            .filter_map(|(index, found)| Some((found.as_ref()?.0, index)))
            .collect();
        starts.sort_unstable();
        DecodedTargets {
            disassembly: self,
            starts,
        }
    }
}

/// See [`Disassembly::targets`]: a lookup, not a copy of every field (a
/// million in an LLVM-size program).
pub(crate) struct DecodedTargets<'a> {
    disassembly: &'a Disassembly,
    /// Where each decoded piece starts, and its index, by address.
    starts: Vec<(u64, usize)>,
}

impl DecodedTargets<'_> {
    /// A lookup of the addresses decoded fields name, for places asked
    /// about mostly in address order (a section's kept relocations): each
    /// looks first in the piece the last one lay in.
    pub(crate) fn cursor(&self) -> TargetCursor<'_, '_> {
        TargetCursor {
            targets: self,
            piece: 0,
        }
    }

    /// The address the field at `place` names, if piece `piece` (by
    /// address) holds it.
    fn in_piece(&self, piece: usize, place: u64) -> Option<u64> {
        let &(start, index) = self.starts.get(piece)?;
        let (_, found) = self.disassembly.references[index].as_ref()?;
        let offset = place - start;
        let at = found
            .binary_search_by_key(&offset, |reference| reference.offset)
            .ok()?;
        Some(found[at].target)
    }
}

/// See [`DecodedTargets::cursor`].
pub(crate) struct TargetCursor<'t, 'd> {
    targets: &'t DecodedTargets<'d>,
    /// The piece (by address) the last place lay in.
    piece: usize,
}

impl TargetCursor<'_, '_> {
    /// The address the field decoding found at `place` names.
    pub(crate) fn at(&mut self, place: u64) -> Option<u64> {
        let starts = &self.targets.starts;
        let holds = |piece: usize| {
            starts.get(piece).is_some_and(|&(start, _)| start <= place)
                && starts.get(piece + 1).is_none_or(|&(next, _)| place < next)
        };
        if !holds(self.piece) {
            let after = starts.partition_point(|&(start, _)| start <= place);
            self.piece = after.checked_sub(1)?;
        }
        self.targets.in_piece(self.piece, place)
    }
}

/// The bytes of `extent`.
pub(crate) fn extent_code<'data>(elf: &Elf<'data>, extent: &FunctionExtent) -> Option<&'data [u8]> {
    elf.bytes(extent.section.index())
        .get(extent.start as usize..extent.end as usize)
}

/// A jump table's base and its entries' reach, from the code that reads
/// it; or any place in data the code computes the address of, where a
/// table whose dispatch was not recognized may start.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Table {
    pub base: u64,
    pub entries: Option<u32>,
    /// The code that computes the base: `[start, end)` of the function
    /// (or unnamed run of code) holding the instruction.
    pub function: (u64, u64),
}

/// One decoded field: the address it names, its instruction's bias (what
/// an assembler adds: `S + A` is their sum) and the relocation type an
/// assembler writes for it.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Field {
    pub target: u64,
    /// A few bytes at most (x86-64: the field's distance from the end of
    /// its instruction): 32 bits keep a field in 16 bytes.
    pub bias: i32,
    pub r_type: u32,
}

impl Field {
    /// The `S + A` of the relocation an assembler writes here.
    pub fn meaning(&self) -> u64 {
        self.target.wrapping_add(self.bias as u64)
    }
}

/// What decoding the code found.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// Each branch or PC-relative field (x86-64: the field; AArch64: the
    /// instruction word), with the address it names and the bias of its
    /// instruction (what an assembler adds: `S + A` is their sum).
    pub fields: Fields,
    /// Position-independent jump tables, and places in data the code
    /// computes, by base.
    pub tables: Vec<Table>,
}

/// Decoded fields by place: a million of them in an LLVM-size program
/// live through the patching, and sorted lists hold them in half the
/// bytes the hash map they replace did. One list a batch of pieces, as
/// found: joining them would hold every field twice at once.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    /// Each sorted by place; batches of pieces come in address order, so
    /// their places rarely overlap.
    runs: Vec<Vec<(u64, Field)>>,
    /// Each run's first and last place, side by side: a lookup searches
    /// only the runs whose span holds its place.
    spans: Vec<(u64, u64)>,
}

impl Fields {
    /// The field decoding found at `place` (of two, the later found).
    pub(crate) fn get(&self, place: u64) -> Option<Field> {
        self.spans
            .iter()
            .zip(&self.runs)
            .rev()
            .filter(|&(&(first, last), _)| (first..=last).contains(&place))
            .find_map(|(_, run)| {
                let at = run.binary_search_by_key(&place, |&(place, _)| place).ok()?;
                Some(run[at].1)
            })
    }

    /// Adds `run`, found after the fields already here.
    fn add(&mut self, mut run: Vec<(u64, Field)>) {
        // Stable, and nearly free: pieces come in address order.
        run.sort_by_key(|&(place, _)| place);
        run.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                *earlier = *later;
            }
            same
        });
        run.shrink_to_fit();
        if let (Some(&(first, _)), Some(&(last, _))) = (run.first(), run.last()) {
            self.spans.push((first, last));
            self.runs.push(run);
        }
    }
}

/// Where the kept relocations are: the sections they patch and their places.
#[derive(Debug, Default)]
pub(crate) struct Relocated {
    sections: FxHashSet<usize>,
    /// The place and type of each kept relocation, by place (the first,
    /// where a place has several): a piece of code looks up its fields in
    /// its own short run of it ([`Relocated::within`]), which a hash of
    /// every place, missing the cache at each field, cost a third of the
    /// patching on LLVM-size code.
    places: Vec<(u64, u32)>,
}

impl Relocated {
    pub(crate) fn of(elf: &Elf<'_>, shape: &Shape) -> anyhow::Result<Relocated> {
        let mut relocated = Relocated::default();
        for &(relocations, target) in &shape.kept {
            relocated.sections.insert(target);
            let relas = elf.relas(relocations)?;
            relocated.places.reserve(relas.len());
            relocated
                .places
                .extend(relas.iter().map(|rela| (rela.offset, rela.r_type)));
        }
        // Stable, so that the first of a place's relocations stays.
        relocated.places.sort_by_key(|&(place, _)| place);
        relocated.places.dedup_by_key(|&mut (place, _)| place);
        Ok(relocated)
    }

    /// The kept relocations from `start` up to `end`.
    fn within(&self, start: u64, end: u64) -> KeptPlaces<'_> {
        let first = self.places.partition_point(|&(place, _)| place < start);
        let count = self.places[first..].partition_point(|&(place, _)| place < end);
        KeptPlaces(&self.places[first..first + count])
    }

    /// The type of the relocation kept at `place`.
    fn at(&self, place: u64) -> Option<u32> {
        KeptPlaces(&self.places).at(place)
    }

    /// Whether a decoded field at `place` in section `section`, naming
    /// `target`, is a field: the link kept a relocation there (`kept`
    /// holds `place`'s), or no relocation was kept for its section (code
    /// the linker wrote: PLT entries), or it names code (an assembler
    /// resolves a branch inside its own section without a relocation).
    /// Bytes of data in code that decode as an instruction name random
    /// places, rarely code.
    fn is_field(
        &self,
        elf: &Elf<'_>,
        kept: KeptPlaces<'_>,
        section: usize,
        place: u64,
        target: u64,
    ) -> bool {
        !self.sections.contains(&section)
            || kept.at(place).is_some()
            || elf
                .section_at(target)
                .is_some_and(|i| elf.sections[i].is_executable())
    }
}

/// A run of [`Relocated`]'s places, sorted.
#[derive(Clone, Copy)]
struct KeptPlaces<'a>(&'a [(u64, u32)]);

impl KeptPlaces<'_> {
    /// The type of the relocation kept at `place`, if the run holds it.
    fn at(self, place: u64) -> Option<u32> {
        let index = self.0.binary_search_by_key(&place, |&(at, _)| at).ok()?;
        Some(self.0[index].1)
    }
}

/// Every branch and PC-relative operand of every executable section,
/// decoded, written again where its place or target moves. Returns what it
/// found: the fields, and the jump tables and places in data the code reads.
pub(crate) fn patch_code(
    elf: &Elf<'_>,
    object: &icf_object::Object<'_>,
    disassembly: &Disassembly,
    layout: &Layout,
    arch: &dyn Architecture,
    relocated: &Relocated,
    patches: &mut Patches,
) -> anyhow::Result<Decoded> {
    let data_in_code = data_marks(elf, object);
    let mut decoded = Decoded::default();
    let tables = &mut decoded.tables;
    let code_of = disassembly.extents.iter().zip(&disassembly.references);
    // Code no symbol covers that is not padding, or only a linker's patch
    // symbol: what the linker wrote into `.text` (GNU ld's and lld's
    // erratum 843419 patches, range extension veneers).
    let linker_patch = |e: &FunctionExtent| {
        !e.symbols.is_empty()
            && e.symbols.iter().all(|&symbol| {
                let name = object.symbol(symbol).name;
                name.starts_with(b"__CortexA53843419_") || name.starts_with(b"e843419@")
            })
    };
    let mut stubs: Vec<(u64, u64)> = code_of
        .clone()
        .filter(|(e, references)| (e.symbols.is_empty() || linker_patch(e)) && references.is_some())
        .filter_map(|(e, _)| {
            let section = elf.sections.get(e.section.index())?;
            Some((section.addr + e.start, section.addr + e.end))
        })
        .collect();
    stubs.sort_unstable();
    let patching = Patching {
        elf,
        layout,
        arch,
        relocated,
        stubs,
    };
    // Each piece is worked out on its own (a batch of them in parallel);
    // what it found and would write is then merged in address order, as
    // one pass would.
    let code: Vec<_> = code_of.collect();
    for batch in code.chunks(PATCH_BATCH) {
        // Pieces merged in parallel runs of `MERGE_RUN`, the runs then
        // in order: one list of fields and one run of writes a run.
        let merged: Vec<Merged> = batch
            .par_chunks(MERGE_RUN)
            .map(|run| {
                let mut merged = Merged::default();
                for &(extent, references) in run {
                    let Some((start, found)) = references.as_ref() else {
                        continue;
                    };
                    let marks = data_in_code.get(&extent.section).map(Vec::as_slice);
                    match patching.work_out(extent, *start, found, marks) {
                        Ok(piece) => {
                            merged.tables.extend(piece.tables);
                            merged.fields.extend(piece.fields);
                            merged.writes.extend(piece.writes);
                            merged.pins.extend(piece.pins);
                        }
                        Err(error) => {
                            merged.error = Some(error);
                            break;
                        }
                    }
                }
                merged
            })
            .collect();
        for run in merged {
            tables.extend(run.tables);
            decoded.fields.add(run.fields);
            patches.writes.append(run.writes);
            for pin in run.pins {
                patches.pins.keep(layout, &pin.addresses, pin.kind, || {
                    anyhow::anyhow!("{}", pin.refusal)
                })?;
            }
            // What the pieces before a failing one found and wanted is
            // kept, as one pass would, then the failure stops the patching.
            if let Some(error) = run.error {
                return Err(error);
            }
        }
    }
    // By base; each function computing a base keeps its own entry (the
    // cases of its table lead into it), a recognized table's size bounding
    // every one.
    decoded
        .tables
        .sort_by_key(|t| (t.base, t.entries.is_none(), t.function));
    decoded
        .tables
        .dedup_by_key(|t| (t.base, t.entries, t.function));
    Ok(decoded)
}

/// Pieces of code patched together in parallel.
const PATCH_BATCH: usize = 4096;

/// Pieces of a batch whose fields and writes one thread merges.
const MERGE_RUN: usize = 512;

/// What a run of pieces found and would write, in order; the failure
/// that stopped it, if one did.
#[derive(Default)]
struct Merged {
    fields: Vec<(u64, Field)>,
    tables: Vec<Table>,
    writes: Writes,
    pins: Vec<PinRequest>,
    error: Option<anyhow::Error>,
}

/// What one piece of code found and would write (see [`patch_code`]).
#[derive(Default)]
struct Worked {
    fields: Vec<(u64, Field)>,
    tables: Vec<Table>,
    writes: Writes,
    pins: Vec<PinRequest>,
}

/// Functions a field needs kept in place, and why, if they cannot be.
struct PinRequest {
    addresses: [u64; 2],
    kind: PinKind,
    refusal: String,
}

/// What every piece of code is patched against.
struct Patching<'a, 'data> {
    elf: &'a Elf<'data>,
    layout: &'a Layout,
    arch: &'a dyn Architecture,
    relocated: &'a Relocated,
    /// Code no symbol covers that is not padding, sorted.
    stubs: Vec<(u64, u64)>,
}

impl Patching<'_, '_> {
    /// An address the linker computed in one instruction at `place` where
    /// the kept relocations are those of two (AArch64: lld's `nop; adr`
    /// for `adrp` + `add`, see [`Architecture::unrelax_address`]), written
    /// back as the two for `target` from `new_place`: the two writes, when
    /// it is one and the word before moves with it. What lets the code
    /// reach data that moved more than an `adr`'s mebibyte away.
    fn unrelaxed(&self, place: u64, new_place: u64, target: u64) -> Option<[(u64, Vec<u8>); 2]> {
        let before = place.checked_sub(4)?;
        let new_before = new_place.checked_sub(4)?;
        let kept = |at: u64| self.relocated.at(at);
        if !self.layout.is_carried(before) || self.layout.map(before) != new_before {
            return None;
        }
        let mut code = self.elf.read(before, 8)?.to_vec();
        code.extend(self.elf.read(place + 4, 8).unwrap_or_default());
        let [first, second] =
            self.arch
                .unrelax_address([kept(before)?, kept(place)?], &code, new_before, target)?;
        Some([(new_before, first.to_vec()), (new_place, second.to_vec())])
    }

    fn in_stub(&self, address: u64) -> bool {
        let after = self.stubs.partition_point(|&(start, _)| start <= address);
        after > 0 && address < self.stubs[after - 1].1
    }

    /// The fields of one piece of code (`extent`, at `start`, its decoded
    /// references `found`; `marks` its section's AArch64 mapping symbols)
    /// and what each needs: written again, or its ends kept in place.
    fn work_out(
        &self,
        extent: &FunctionExtent,
        start: u64,
        found: &[LinkedReference],
        marks: Option<&[(u64, bool)]>,
    ) -> anyhow::Result<Worked> {
        let (elf, layout, arch, relocated) = (self.elf, self.layout, self.arch, self.relocated);
        let in_stub = |address: u64| self.in_stub(address);
        let mut worked = Worked::default();
        let index = extent.section.index();
        let section = &elf.sections[index];
        let code_len = extent.end - extent.start;
        let kept = relocated.within(start, start + code_len);
        for reference in found {
            if reference.use_ == LinkedUse::Absolute {
                continue;
            }
            let place = start + reference.offset;
            // AArch64 data in code (`$d`) is no instruction.
            if marks.is_some_and(|m| is_data(m, extent.start + reference.offset))
                || !relocated.is_field(elf, kept, index, place, reference.target)
            {
                continue;
            }
            // An assembler writes a relocation for every AArch64 `adrp` and
            // `:lo12:` operand: one without is the decoder pairing a
            // register across paths (`str x0, [x22, #8]` after an `adrp
            // x22` on another path), unless the linker wrote it (a stub).
            if arch.always_relocated(reference.r_type)
                && relocated.sections.contains(&index)
                && kept.at(place).is_none()
                && !in_stub(place)
            {
                continue;
            }
            if let Some(icf_arch::TableShape::Relative32 { entries }) = reference.table {
                worked.tables.push(Table {
                    base: reference.target,
                    entries,
                    function: (start, start + code_len),
                });
            } else if reference.use_ == LinkedUse::PcRelative
                && elf
                    .section_at(reference.target)
                    .is_some_and(|i| !elf.sections[i].is_executable())
            {
                // A place in data the code computes: a table may start there.
                worked.tables.push(Table {
                    base: reference.target,
                    entries: None,
                    function: (start, start + code_len),
                });
            }
            // A bias is an instruction's few bytes: one that is not is no
            // field (a kept relocation there is written from itself).
            if let Ok(bias) = i32::try_from(reference.bias) {
                worked.fields.push((
                    place,
                    Field {
                        target: reference.target,
                        bias,
                        r_type: reference.r_type,
                    },
                ));
            }
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
            // could break the program: both functions keep their place.
            let moved_apart = new_target.wrapping_sub(target) != new_place.wrapping_sub(place);
            if moved_apart
                && relocated.sections.contains(&index)
                && kept.at(place).is_none()
                && layout
                    .piece_start(target)
                    .is_some_and(|start| start != target)
                && !in_stub(place)
                && !in_stub(target)
            {
                worked.pins.push(PinRequest {
                    addresses: [place, target],
                    kind: PinKind::DataInCode,
                    refusal: format!(
                        "{}+{:#x}: bytes that decode as a reference to the middle of another function \
                         ({target:#x}) with no relocation kept: icf cannot tell whether they are an \
                         instruction or data in code",
                        section.name,
                        place - section.addr
                    ),
                });
                continue;
            }
            let size = field_size(arch, reference.r_type);
            let mut field = with_context(elf, place, size)
                .with_context(|| format!("code at {place:#x} runs past its section"))?;
            // GNU ld's erratum 843419 form of an `adrp`, an `adr` of a page
            // where the kept relocation names a page: written as a page, an
            // `adrp` again unless it lands in a page's last two words.
            let page_type = kept.at(place).filter(|&kept| {
                matches!(arch.kept_reloc(kept), KeptReloc::Page | KeptReloc::GotPage)
                    && arch.kept_reloc(reference.r_type) == KeptReloc::Instruction
                    && target & 0xfff == 0
            });
            let written = arch.write_reloc(
                page_type.unwrap_or(reference.r_type),
                &mut field,
                new_place,
                new_target.wrapping_add(reference.bias as u64),
            );
            if written.is_err()
                && let Some(pair) = self.unrelaxed(
                    place,
                    new_place,
                    new_target.wrapping_add(reference.bias as u64),
                )
            {
                // The pair the linker relaxed, written back as it was.
                for (at, bytes) in pair {
                    worked.writes.put(at, bytes);
                }
                continue;
            }
            if let Err(e) = written {
                // Out of the instruction's reach: both ends keep their place.
                // An `adrp` reaches any page; it fails only where it lands
                // in a page's last two words (Cortex-A53 erratum 843419)
                // and its page is beyond the `adr` that would replace it:
                // its own function keeping its place is enough.
                let page = arch.kept_reloc(reference.r_type) == KeptReloc::Page;
                worked.pins.push(PinRequest {
                    addresses: [place, if page { place } else { target }],
                    kind: PinKind::OutOfReach,
                    refusal: format!(
                        "{}+{:#x}: cannot point the field at {place:#x} to {new_target:#x} from {new_place:#x}: {e}",
                        section.name,
                        place - section.addr
                    ),
                });
                continue;
            }
            worked.writes.put(new_place, &field[..size]);
        }
        Ok(worked)
    }
}

/// The `size` bytes of the field at `place`, and up to three instruction
/// words after it, which an AArch64 `adrp` moved to a page's end looks at
/// (whether a load or store follows: Cortex-A53 erratum 843419).
pub(crate) fn with_context(elf: &Elf<'_>, place: u64, size: usize) -> Option<FieldBytes> {
    let section = &elf.sections[elf.section_at(place)?];
    let left = section.addr + section.size - place;
    if size as u64 > left || size > FieldBytes::FIELD {
        return None;
    }
    let len = left.min((size + FieldBytes::CONTEXT) as u64) as usize;
    let start = usize::try_from(section.offset + (place - section.addr)).ok()?;
    let mut field = FieldBytes {
        bytes: [0; FieldBytes::FIELD + FieldBytes::CONTEXT],
        len,
    };
    field.bytes[..len].copy_from_slice(elf.data.get(start..start + len)?);
    Some(field)
}

/// A field's bytes and what follows it ([`with_context`]), on the stack.
pub(crate) struct FieldBytes {
    bytes: [u8; FieldBytes::FIELD + FieldBytes::CONTEXT],
    len: usize,
}

impl FieldBytes {
    /// The largest field: a 64-bit address.
    const FIELD: usize = 8;
    /// Three AArch64 instruction words.
    const CONTEXT: usize = 12;
}

impl std::ops::Deref for FieldBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl std::ops::DerefMut for FieldBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[..self.len]
    }
}

pub(crate) fn field_size(arch: &dyn Architecture, r_type: u32) -> usize {
    arch.elf_reloc(r_type)
        .map_or(4, |info| usize::from(info.size))
}

/// AArch64 mapping symbols per executable section: (offset, whether data
/// starts there: `$d`; code again: `$x`), sorted.
fn data_marks(
    elf: &Elf<'_>,
    object: &icf_object::Object<'_>,
) -> HashMap<icf_object::SectionIndex, Vec<(u64, bool)>> {
    let mut marks: HashMap<icf_object::SectionIndex, Vec<(u64, bool)>> = HashMap::default();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn field(target: u64) -> Field {
        Field {
            target,
            bias: -4,
            r_type: 2,
        }
    }

    #[test]
    fn the_field_found_last_at_a_place_stands() {
        let mut fields = Fields::default();
        fields.add(vec![(0x30, field(1)), (0x10, field(2)), (0x30, field(3))]);
        fields.add(vec![(0x40, field(4)), (0x10, field(5))]);
        let target = |place| fields.get(place).map(|f| f.target);
        assert_eq!(target(0x10), Some(5), "a later run wins");
        assert_eq!(target(0x30), Some(3), "within a run, the later found");
        assert_eq!(target(0x40), Some(4));
        assert_eq!(target(0x20), None);
        assert_eq!(fields.get(0x10).map(|f| f.meaning()), Some(1));
    }
}
