//! Read-only data folds after the link (`icf shrink --map FILE`): the
//! compiler's anonymous constants in `.rodata` (rustc's `.Lanon.*`,
//! clang's `.L__const.*` and switch tables, gcc's `.LC*` in a section of
//! their own) that hold the same bytes become one, as `icf link` folds
//! them before the link.
//!
//! The image alone cannot do this: a `-q` link writes a reference to a
//! local constant as one to `.rodata` plus an offset, so neither where one
//! constant ends nor which constant a field meant survives. The link's map
//! gives each input section's place, file and alignment; the objects it
//! names say what each section is (no symbol in it: nothing with a name
//! whose address a program could compare; no relocation: its bytes are
//! all it is; not mergeable: the linker did not share its pieces) and
//! which section each field's relocation names (`icf_linkmap`).
//!
//! A constant is removed (its addresses become its kept copy's) only where
//! every field pointing into or at the end of it is known to name it and
//! to lie inside it or at its start. A field that names one section and
//! points into another (`table - 4` for 1-based indexing, one past an
//! array's end that is the next one's start), or whose section the files
//! cannot tell, holds every constant it may touch: those keep their bytes.
//! The sections after a removed constant close up; each run of kept bytes
//! keeps its address modulo the largest alignment of what it holds
//! (`eh_frame::region` lays them out). x86-64 only: AArch64 code reaches
//! data through `adrp` pages a routine may share, so its data moves by
//! whole pages.

use crate::code::{DecodedTargets, TargetCursor};
use crate::shape::Shape;
use anyhow::bail;
use icf_arch::{Architecture, KeptReloc};
use icf_linkmap::{InputObjects, InputSections, SectionFacts, Span};
use icf_object::linked_elf::{Elf, SymbolInfo};
use object::elf as E;
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The constants folded in one output section, and what its runs of kept
/// bytes need.
#[derive(Clone, Debug, Default)]
pub(crate) struct DataFolds {
    /// The section folded in (`.rodata`).
    pub section: usize,
    /// Removed constants: (start, end, the kept copy's start), sorted.
    pub removed: Vec<(u64, u64, u64)>,
    /// PC-relative fields in data, by place: the place each moves with
    /// (its symbol, its section, or in `.rodata` the input section it
    /// names; see `Layout::map_named`).
    pub anchors: HashMap<u64, u64>,
    /// What holds bytes in the section: (start, end, alignment), sorted.
    content: Vec<(u64, u64, u64)>,
    /// Whether bytes no input section covers are padding (the map lists
    /// every piece of content with its alignment: lld's and mold's).
    gaps_are_padding: bool,
    section_align: u64,
}

impl DataFolds {
    /// The alignment the kept bytes `from..to` need: the largest of what
    /// they hold (the section's where the map does not say).
    pub(crate) fn run_align(&self, from: u64, to: u64) -> u64 {
        let first = self.content.partition_point(|&(_, end, _)| end <= from);
        let mut align = 1;
        let mut covered = from;
        for &(start, end, need) in self.content[first..].iter().take_while(|c| c.0 < to) {
            if start > covered && !self.gaps_are_padding {
                return self.section_align;
            }
            align = align.max(need);
            covered = covered.max(end);
        }
        if covered < to && !self.gaps_are_padding {
            return self.section_align;
        }
        align
    }

    /// Bytes the removed constants held.
    pub(crate) fn removed_bytes(&self) -> u64 {
        self.removed
            .iter()
            .map(|&(start, end, _)| end - start)
            .sum()
    }
}

/// One constant that may be removed.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    start: u64,
    end: u64,
    align: u64,
}

/// What [`plan`] needs that the code does not tell: the link map read,
/// what the objects it names say of `.rodata`'s input sections, and the
/// places in it that symbols and dynamic relocations mark. Made beside
/// the image reader (it reads the map and the objects, the reader the
/// image): on opt_lite it takes about 60 ms.
pub(crate) struct Prepared {
    /// `.rodata`'s index, and its addresses.
    section: usize,
    start: u64,
    end: u64,
    sections: InputSections,
    objects: InputObjects,
    pieces: Pieces,
    loose: LooseReferences,
    candidates: Vec<Option<Candidate>>,
}

/// [`Prepared`] for the image with the link map at `map`, whose input
/// sections `read_map` read; `None` where the image is not one this can
/// fold (not x86-64, no `.rodata`).
pub(crate) fn prepare(
    elf: &Elf<'_>,
    shape: &Shape,
    symbols: &[SymbolInfo],
    map: &Path,
    sections: InputSections,
) -> anyhow::Result<Option<Prepared>> {
    let Some(section) = foldable_section(elf, shape) else {
        return Ok(None);
    };
    let rodata = &elf.sections[section];
    let (start, end) = (rodata.addr, rodata.addr + rodata.size);
    let objects = InputObjects::new(map, &sections);
    let pieces = Pieces::of(&sections, &objects, start, end, rodata.align.max(1));
    let loose = LooseReferences::of(elf, symbols, start, end)?;
    let candidates = pieces.candidates(&loose.marked);
    Ok(Some(Prepared {
        section,
        start,
        end,
        sections,
        objects,
        pieces,
        loose,
        candidates,
    }))
}

/// Plans the folds of `.rodata`'s anonymous constants from what
/// [`prepare`] read. `code_targets`: the address each decoded code field
/// names, by its place. `None` where nothing folds.
pub(crate) fn plan(
    elf: &Elf<'_>,
    shape: &Shape,
    symbols: &[SymbolInfo],
    arch: &dyn Architecture,
    code_targets: &DecodedTargets<'_>,
    prepared: Prepared,
) -> anyhow::Result<Option<DataFolds>> {
    let Prepared {
        section,
        start,
        end,
        sections,
        objects,
        pieces,
        loose,
        candidates,
    } = prepared;
    let rodata = &elf.sections[section];
    let fields = Fields {
        elf,
        symbols,
        arch,
        sections: &sections,
        objects: &objects,
        spans: &pieces.spans,
        section,
        start,
        end,
    };
    let Some(Uses { held, anchors }) = fields.uses(shape, code_targets, &loose.targets)? else {
        return Ok(None);
    };
    let removed = equal_constants(elf, &candidates, &held);
    if removed.is_empty() {
        return Ok(None);
    }
    Ok(Some(DataFolds {
        section,
        removed,
        anchors,
        content: pieces.content,
        gaps_are_padding: pieces.gaps_are_padding,
        section_align: rodata.align.max(1),
    }))
}

/// `.rodata`, when it is a section this can fold in: x86-64, loaded, with
/// bytes, in a read-only segment of its own that holds the exception
/// tables too, which compacts (`eh_frame::region`). Elsewhere (gold puts
/// `.rodata` in `.text`'s segment) nothing can fold, and the objects are
/// not worth reading.
fn foldable_section(elf: &Elf<'_>, shape: &Shape) -> Option<usize> {
    if elf.machine != E::EM_X86_64.0 {
        return None;
    }
    let section = elf.section_named(".rodata")?;
    let rodata = &elf.sections[section];
    if !rodata.is_alloc() || !rodata.has_bytes() || rodata.size == 0 {
        return None;
    }
    let segment_of = |address: u64| {
        elf.segments.iter().position(|p| {
            p.p_type == E::PT_LOAD.0 && p.vaddr <= address && address < p.vaddr + p.filesz
        })
    };
    let eh_frame = elf.section_named(".eh_frame").map(|i| elf.sections[i].addr);
    let segment = segment_of(rodata.addr)?;
    let own_read_only = segment != shape.segment
        && Some(segment) == eh_frame.and_then(segment_of)
        && elf.segments[segment].flags & (E::PF_W.0 | E::PF_X.0) == 0;
    own_read_only.then_some(section)
}

/// The link map at `map`, parsed; its text (as large as the image) goes
/// once parsed.
/// Refuses a map that does not describe `elf` (the map of another link,
/// or of this program linked again: `InputSections::mismatch`). Its
/// alignments and constants would otherwise be another image's.
pub(crate) fn check_map_describes(
    elf: &Elf<'_>,
    shape: &Shape,
    symbols: &[SymbolInfo],
    sections: &InputSections,
    map: &Path,
) -> anyhow::Result<()> {
    let (start, end) = (shape.text_start, shape.text_end);
    let functions = symbols
        .iter()
        .filter(|s| {
            s.kind == E::STT_FUNC.0
                && s.size > 0
                && usize::from(s.shndx) == shape.text
                && (start..end).contains(&s.value)
        })
        .map(|s| (s.value, s.size));
    let text = (elf.sections[shape.text].name.as_str(), start, end);
    match sections.mismatch(text, functions) {
        Some(why) => bail!("the link map {}: {why}", map.display()),
        None => Ok(()),
    }
}

pub(crate) fn read_map(map: &Path) -> anyhow::Result<InputSections> {
    let text = std::fs::read_to_string(map)
        .map_err(|e| anyhow::anyhow!("reading the link map {}: {e}", map.display()))?;
    InputSections::parse(&text).map_err(|why| anyhow::anyhow!("{}: {why}", map.display()))
}

/// The input sections the map places in `.rodata`, with what their
/// objects say of them.
struct Pieces {
    /// The input sections with bytes, by address, but mergeable ones: a
    /// mergeable section's pieces went wherever the linker merged them
    /// (GNU ld lists each such section at a place it may not hold, over
    /// other sections): no place is its own, and where its bytes are in
    /// GNU ld's layout, only the gaps between the others can say.
    spans: Vec<Span>,
    /// What each span's object says of it, when it can be read.
    facts: Vec<Option<SectionFacts>>,
    /// Sections the linker made there.
    made: Vec<Span>,
    /// See [`DataFolds::content`].
    content: Vec<(u64, u64, u64)>,
    /// See [`DataFolds::gaps_are_padding`].
    gaps_are_padding: bool,
}

impl Pieces {
    /// The pieces of `start..end`; `section_align` stands for an
    /// alignment neither the map nor the object gives.
    fn of(
        sections: &InputSections,
        objects: &InputObjects,
        start: u64,
        end: u64,
        section_align: u64,
    ) -> Pieces {
        let listed = sections.spans_between(start, end);
        let made = sections.made_between(start, end);
        // Each object is read once, by whichever thread first asks.
        let listed_facts: Vec<_> = listed
            .par_iter()
            .map(|&span| objects.facts(sections, span))
            .collect();
        let gaps_are_padding = listed.iter().chain(made).all(|span| span.align > 0);
        let (spans, facts): (Vec<Span>, Vec<_>) = listed
            .iter()
            .zip(listed_facts)
            .filter(|(_, facts)| !facts.is_some_and(|facts| facts.merge))
            .map(|(span, facts)| (*span, facts))
            .unzip();
        let mut content: Vec<(u64, u64, u64)> = spans
            .iter()
            .zip(&facts)
            .map(|(span, facts)| {
                let align = match (span.align, facts) {
                    (0, Some(facts)) => facts.align.max(1),
                    (0, None) => section_align,
                    (align, _) => align,
                };
                (span.start, span.end, align)
            })
            .chain(made.iter().map(|span| {
                let align = if span.align == 0 {
                    section_align
                } else {
                    span.align
                };
                (span.start, span.end, align)
            }))
            .collect();
        content.sort_unstable();
        Pieces {
            spans,
            facts,
            made: made.to_vec(),
            content,
            gaps_are_padding,
        }
    }

    /// For each span, the constant it is when it may be removed: alone at
    /// its place (no other span or made section overlaps it), anonymous
    /// (no symbol, no relocation, not mergeable), aligned as its object
    /// says, and holding no place in `marked` (sorted).
    fn candidates(&self, marked: &[u64]) -> Vec<Option<Candidate>> {
        let spans = &self.spans;
        let marked_in = |span: &Span| {
            let at = marked.partition_point(|&m| m < span.start);
            marked.get(at).is_some_and(|&m| m < span.end)
        };
        spans
            .iter()
            .enumerate()
            .map(|(i, span)| {
                let facts = self.facts[i]?;
                let alone = i.checked_sub(1).is_none_or(|p| spans[p].end <= span.start)
                    && spans.get(i + 1).is_none_or(|n| n.start >= span.end)
                    && !self
                        .made
                        .iter()
                        .any(|m| m.start < span.end && span.start < m.end);
                let anonymous = !facts.merge && !facts.relocated && !facts.named;
                (alone && anonymous && facts.align > 0 && !marked_in(span)).then_some(Candidate {
                    start: span.start,
                    end: span.end,
                    align: facts.align,
                })
            })
            .collect()
    }
}

/// What refers to `.rodata` without a kept relocation.
struct LooseReferences {
    /// Places in the section that keep what holds them: symbols and the
    /// places of dynamic relocations, sorted.
    marked: Vec<u64>,
    /// (place, target) of dynamic relocations and GOT slots.
    targets: Vec<(u64, u64)>,
}

impl LooseReferences {
    fn of(
        elf: &Elf<'_>,
        symbols: &[SymbolInfo],
        start: u64,
        end: u64,
    ) -> anyhow::Result<LooseReferences> {
        let mut marked: Vec<u64> = symbols
            .iter()
            .filter(|s| s.kind != E::STT_SECTION.0 && s.kind != E::STT_FILE.0)
            .map(|s| s.value)
            .filter(|&value| (start..end).contains(&value))
            .collect();
        let mut targets: Vec<(u64, u64)> = Vec::new();
        for (index, dynamic) in elf.sections.iter().enumerate() {
            if dynamic.sh_type == E::SHT_RELA.0 && dynamic.is_alloc() {
                for rela in elf.relas(index)? {
                    marked.push(rela.offset);
                    targets.push((rela.offset, rela.addend as u64));
                }
            }
        }
        // What the GOT holds (a non-PIE image's absolute addresses).
        for got in [".got", ".got.plt"] {
            if let Some(index) = elf.section_named(got) {
                let slots = elf.bytes(index).chunks_exact(8).enumerate();
                targets.extend(slots.filter_map(|(i, word)| {
                    let value = u64::from_le_bytes(word.try_into().ok()?);
                    Some((elf.sections[index].addr + 8 * i as u64, value))
                }));
            }
        }
        marked.sort_unstable();
        Ok(LooseReferences { marked, targets })
    }
}

/// The fields of the image that may name `.rodata`, read against its
/// spans (indices into [`Pieces::spans`]).
struct Fields<'a, 'data> {
    elf: &'a Elf<'data>,
    symbols: &'a [SymbolInfo],
    arch: &'a dyn Architecture,
    sections: &'a InputSections,
    objects: &'a InputObjects,
    spans: &'a [Span],
    /// `.rodata`'s index, and its addresses.
    section: usize,
    start: u64,
    end: u64,
}

impl Fields<'_, '_> {
    /// The span holding `address`.
    fn index_at(&self, address: u64) -> Option<usize> {
        let after = self.spans.partition_point(|span| span.start <= address);
        after
            .checked_sub(1)
            .filter(|&i| address < self.spans[i].end)
    }

    /// The span ending at `address`.
    fn index_ending_at(&self, address: u64) -> Option<usize> {
        let after = self.spans.partition_point(|span| span.start < address);
        after
            .checked_sub(1)
            .filter(|&i| self.spans[i].end == address)
    }

    /// `span`'s index.
    fn index_of(&self, span: Span) -> Option<usize> {
        let spans = self.spans;
        let at = spans.partition_point(|s| (s.start, s.end) < (span.start, span.end));
        spans.get(at).filter(|s| **s == span).map(|_| at)
    }

    /// Holds what a field pointing at `target` may touch, unless it points
    /// into the span it names (`named`): the span it points into, the one
    /// ending there, and the one it names.
    fn hold_around(&self, target: u64, named: Option<usize>, held: &mut HashSet<usize>) {
        let inside = self.index_at(target);
        if named.is_some() && named == inside {
            return;
        }
        held.extend(inside);
        held.extend(self.index_ending_at(target));
        held.extend(named);
    }

    /// Fields naming `.rodata`: the spans that keep their bytes, and the
    /// anchors of PC-relative fields in data. One whose target decoding or
    /// its relocation gives exactly (code; an address in data) must point
    /// into the section its relocation names, or at its start: every
    /// constant it may otherwise touch keeps its bytes. A PC-relative
    /// field in data (an entry of LLVM's relative lookup tables: `.long
    /// str - table`) counts from a place only the code knows: it moves
    /// with the section it names (its anchor), which must be known.
    /// `None` when one's place cannot be told: nothing folds.
    fn uses(
        &self,
        shape: &Shape,
        code_targets: &DecodedTargets<'_>,
        loose_targets: &[(u64, u64)],
    ) -> anyhow::Result<Option<Uses>> {
        let (elf, start, end) = (self.elf, self.start, self.end);
        let mut held: HashSet<usize> = HashSet::new();
        let mut anchors: HashMap<u64, u64> = HashMap::new();
        let mut kept_places: Vec<u64> = Vec::new();
        for &(relocations, patched) in &shape.kept {
            let patched_section = &elf.sections[patched];
            if !patched_section.is_alloc() {
                continue;
            }
            let code = patched_section.is_executable();
            // Each field is read on its own: batches in parallel, merged
            // in order as one pass would make them.
            let relas = elf.relas(relocations)?;
            let parts: Vec<Option<UsesPart>> = relas
                .par_chunks(USES_BATCH)
                .map(|batch| {
                    let mut part = UsesPart::default();
                    let mut cursor = code_targets.cursor();
                    for rela in batch {
                        self.use_of(rela, code, &mut cursor, &mut part)?;
                    }
                    Some(part)
                })
                .collect();
            for part in parts {
                let Some(part) = part else {
                    return Ok(None);
                };
                held.extend(part.held);
                anchors.extend(part.anchors);
                kept_places.extend(part.kept_places);
            }
        }
        // Dynamic relocations at places no kept relocation describes (the
        // GOT's), and what the GOT holds: their constants are unknown.
        kept_places.sort_unstable();
        for &(place, target) in loose_targets {
            if kept_places.binary_search(&place).is_err() && (start..=end).contains(&target) {
                self.hold_around(target, None, &mut held);
            }
        }
        Ok(Some(Uses { held, anchors }))
    }

    /// What one kept relocation `rela` (of code, if `code`) says, added to
    /// `part`; `None` where it names a place no span can be found for
    /// (nothing can fold).
    fn use_of(
        &self,
        rela: &icf_object::linked_elf::Rela,
        code: bool,
        cursor: &mut TargetCursor<'_, '_>,
        part: &mut UsesPart,
    ) -> Option<()> {
        let (elf, symbols, arch) = (self.elf, self.symbols, self.arch);
        let (sections, objects) = (self.sections, self.objects);
        let (section, start, end) = (self.section, self.start, self.end);
        part.kept_places.push(rela.offset);
        let Some(symbol) = symbols.get(rela.sym as usize) else {
            return Some(());
        };
        if rela.sym == 0 || symbol.shndx == E::SHN_UNDEF.0 || symbol.kind == E::STT_TLS.0 {
            return Some(());
        }
        let section_symbol = symbol.kind == E::STT_SECTION.0;
        let base = if section_symbol {
            elf.sections
                .get(usize::from(symbol.shndx))
                .map_or(0, |s| s.addr)
        } else {
            symbol.value
        };
        let meaning = base.wrapping_add(rela.addend as u64);
        let names_rodata = if section_symbol {
            usize::from(symbol.shndx) == section
        } else {
            (start..end).contains(&symbol.value)
        };
        let kind = arch.kept_reloc(rela.r_type);
        // A PC-relative field in data naming a symbol, or a section
        // other than the folded one, of data: it moves with that
        // place (drops in `.rodata` move what follows apart).
        if !code && kind == KeptReloc::PcRelative && (!section_symbol || !names_rodata) {
            let holding = elf.section_at(base).map(|i| &elf.sections[i]);
            let data = holding.is_some_and(|s| {
                !s.is_executable()
                    && !matches!(
                        s.name.as_str(),
                        ".eh_frame" | ".eh_frame_hdr" | ".gcc_except_table"
                    )
            });
            if data {
                part.anchors.insert(rela.offset, base);
            }
            return Some(());
        }
        let decoded = cursor.at(rela.offset);
        let exact_target = match decoded {
            Some(target) if code => Some(target),
            // An absolute address, in data or in code (a non-PIE
            // `mov $c, %edi`), is `S + A` itself.
            _ if matches!(kind, KeptReloc::Address { .. }) => Some(meaning),
            _ => None,
        };
        if !names_rodata && !exact_target.is_some_and(|t| (start..=end).contains(&t)) {
            return Some(());
        }
        let named = if section_symbol {
            objects
                .names(sections, rela.offset)
                .and_then(|span| self.index_of(span))
        } else {
            self.index_at(symbol.value)
        };
        match exact_target {
            // A symbol's own place (a string after a constant, the
            // next object's start) means what starts there; so does a
            // place in merged strings or constants (see below: an
            // assembler names one through the section symbol only
            // exactly).
            Some(target) if !section_symbol && target == symbol.value => {}
            Some(_)
                if section_symbol
                    && named.is_none()
                    && objects.names_merged(sections, rela.offset).is_some() => {}
            Some(target) => self.hold_around(target, named, &mut part.held),
            None if !code && kind == KeptReloc::PcRelative => {
                if let Some(named) = named {
                    part.anchors.insert(rela.offset, self.spans[named].start);
                    return Some(());
                }
                // Assemblers write a reference into a mergeable
                // section through its section symbol only where it
                // names its place exactly (the linker finds the piece
                // by `S + A`; for any other addend they keep the
                // local symbol): `S + A` is the target, in merged
                // bytes, which move as one.
                if objects.names_merged(sections, rela.offset).is_some() {
                    self.hold_around(meaning, None, &mut part.held);
                    return Some(());
                }
                // Its target is unknown (the object could not be
                // read): it lies at or before `S + A`, by less than
                // the field's offset in its table's section. Nothing
                // from there to the field moves apart, so `S + A`
                // moves with both.
                let holding = sections.span_at(rela.offset)?;
                let lowest = meaning.saturating_sub(rela.offset - holding.start);
                let from = lowest.min(rela.offset);
                let to = meaning.max(rela.offset + 4);
                let first = self.spans.partition_point(|span| span.end <= from);
                part.held
                    .extend((first..self.spans.len()).take_while(|&i| self.spans[i].start <= to));
            }
            // A field decoding did not find: its bias is unknown, so
            // every place it may name is touched.
            None => {
                for bias in 0..=8 {
                    self.hold_around(meaning.wrapping_add(bias), None, &mut part.held);
                }
            }
        }
        Some(())
    }
}

/// What one batch of fields says (see [`Fields::uses`]).
#[derive(Default)]
struct UsesPart {
    held: HashSet<usize>,
    anchors: HashMap<u64, u64>,
    kept_places: Vec<u64>,
}

/// Kept relocations read together on one thread.
const USES_BATCH: usize = 8192;

/// What the fields naming `.rodata` say (see [`Fields::uses`]).
struct Uses {
    /// Spans that keep their bytes.
    held: HashSet<usize>,
    /// See [`DataFolds::anchors`].
    anchors: HashMap<u64, u64>,
}

/// Equal constants: the first keeps its bytes, the others not held go.
/// (start, end, the kept copy's start) of each removed one, by address.
fn equal_constants(
    elf: &Elf<'_>,
    candidates: &[Option<Candidate>],
    held: &HashSet<usize>,
) -> Vec<(u64, u64, u64)> {
    let mut groups: HashMap<(u64, &[u8]), u64> = HashMap::new();
    let mut removed = Vec::new();
    for (i, candidate) in candidates.iter().enumerate() {
        let Some(candidate) = candidate else {
            continue;
        };
        let Some(bytes) = elf.read(candidate.start, (candidate.end - candidate.start) as usize)
        else {
            continue;
        };
        match groups.get(&(candidate.align, bytes)) {
            Some(&kept) if !held.contains(&i) => {
                removed.push((candidate.start, candidate.end, kept));
            }
            Some(_) => {}
            None => {
                groups.insert((candidate.align, bytes), candidate.start);
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folds(content: Vec<(u64, u64, u64)>, gaps_are_padding: bool) -> DataFolds {
        DataFolds {
            content,
            gaps_are_padding,
            section_align: 64,
            ..DataFolds::default()
        }
    }

    #[test]
    fn a_run_needs_the_largest_alignment_of_what_it_holds() {
        let lld = folds(vec![(0, 3, 1), (4, 8, 4), (16, 48, 16)], true);
        assert_eq!(lld.run_align(0, 3), 1);
        assert_eq!(lld.run_align(0, 8), 4);
        assert_eq!(lld.run_align(4, 64), 16);
        assert_eq!(lld.run_align(48, 64), 1, "padding alone");
    }

    #[test]
    fn where_the_map_may_hide_content_a_run_keeps_the_section_s_alignment() {
        let gnu = folds(vec![(0, 3, 1), (4, 8, 4)], false);
        assert_eq!(gnu.run_align(0, 3), 1);
        assert_eq!(gnu.run_align(0, 8), 64, "a gap at 3");
        assert_eq!(gnu.run_align(4, 12), 64, "past the last section");
    }
}
