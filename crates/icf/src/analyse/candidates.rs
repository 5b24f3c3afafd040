//! Phase 1 of the analysis: the candidates. Every function piece, then every
//! read-only data piece (`-fdata-sections` pieces, jump tables, constant
//! pools, exception tables), each a place in an object, in the sections a
//! `--gc-sections` link keeps; and the places of every section references
//! narrow to ([`Places`]): the candidates, and the elements of mergeable
//! sections, each named by a target.

use crate::load::program::{FunctionId, ObjectId, Program};
use crate::load::targets::{ExtendedTargets, Target, target_hash};
use icf_fold::CandidateId;
use icf_ir::TargetId;
use icf_object::{Object, PerSection, Section, SectionIndex};
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where a candidate comes from.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Origin {
    /// A function piece.
    Function(FunctionId),
    /// A whole read-only data section.
    Data,
}

/// One candidate: a place in an object.
#[derive(Clone, Debug)]
pub struct CandidateInfo {
    pub origin: Origin,
    pub object: ObjectId,
    pub section: SectionIndex,
    pub start: u64,
    pub end: u64,
}

impl CandidateInfo {
    pub fn size(&self) -> u64 {
        self.end - self.start
    }

    pub fn is_code(&self) -> bool {
        matches!(self.origin, Origin::Function(_))
    }
}

/// A candidate's place in its section.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct Piece {
    pub start: u64,
    pub end: u64,
    pub candidate: CandidateId,
}

/// The places of every section that references can be narrowed to, per
/// object and section (a section per function is common).
#[derive(Clone, Debug, Default)]
pub(crate) struct Places {
    /// Candidates of each object per section, sorted.
    pieces: Vec<PerSection<Piece>>,
    /// Elements of mergeable sections: (start, constant) per section, sorted.
    constants: Vec<PerSection<(u64, TargetId)>>,
    /// The target naming each candidate.
    pub(crate) candidate_targets: Vec<TargetId>,
}

impl Places {
    /// The places of `candidates` and of every mergeable section's
    /// elements, each named by a target interned in `targets`.
    pub(crate) fn new<'data>(
        program: &Program<'data>,
        candidates: &[CandidateInfo],
        targets: &mut ExtendedTargets<'_, 'data>,
    ) -> Places {
        let mut pieces: Vec<Vec<(SectionIndex, Piece)>> = vec![Vec::new(); program.objects.len()];
        let mut candidate_targets = Vec::with_capacity(candidates.len());
        for (index, candidate) in candidates.iter().enumerate() {
            candidate_targets.push(targets.intern(Target::Candidate(index as u32)));
            pieces[candidate.object.index()].push((
                candidate.section,
                Piece {
                    start: candidate.start,
                    end: candidate.end,
                    candidate: CandidateId(index as u32),
                },
            ));
        }
        let sections = |object: usize| program.objects[object].object.sections.len();
        let pieces = pieces
            .into_iter()
            .enumerate()
            .map(|(object, mut list)| {
                list.sort_unstable();
                PerSection::new(sections(object), list)
            })
            .collect();
        // Splitting mergeable sections into elements and hashing them is
        // per object, in parallel; interning them is one table, in order.
        let elements: Vec<Vec<(SectionIndex, u64, Target<'data>, u64)>> = program
            .objects
            .par_iter()
            .map(|object| {
                // An archive member the link does not load is nobody's
                // definition: only its own references reach its constants.
                if !object.loaded {
                    return Vec::new();
                }
                let mut list = Vec::new();
                for (index, section) in object.object.sections.iter().enumerate() {
                    let section_index = SectionIndex(index as u32);
                    for_each_element(section, |start, target| {
                        list.push((section_index, start, target, target_hash(&target)));
                    });
                }
                list
            })
            .collect();
        targets.reserve(elements.iter().map(Vec::len).sum());
        let constants = elements
            .into_iter()
            .enumerate()
            .map(|(index, list)| {
                let list = list
                    .into_iter()
                    .map(|(section, start, target, hash)| {
                        (section, (start, targets.intern_hashed(target, hash)))
                    })
                    .collect();
                PerSection::new(sections(index), list)
            })
            .collect();
        Places {
            pieces,
            constants,
            candidate_targets,
        }
    }

    pub(crate) fn pieces(&self, object: ObjectId, section: SectionIndex) -> &[Piece] {
        self.pieces
            .get(object.index())
            .map_or(&[], |lists| lists.get(section))
    }

    pub(crate) fn constants(&self, object: ObjectId, section: SectionIndex) -> &[(u64, TargetId)] {
        self.constants
            .get(object.index())
            .map_or(&[], |lists| lists.get(section))
    }
}

/// `f` of every candidate, in order, computed one object at a time per
/// thread (a large object, a linked image above all, in pieces of
/// [`MAP_PIECE`] candidates, in parallel too); each object's input pages
/// are given back once its run of candidates is done (candidates come in
/// runs by object: functions, then data), so the inputs need not all be
/// resident at once.
pub(crate) fn map_by_object<T: Send>(
    program: &Program<'_>,
    candidates: &[CandidateInfo],
    f: impl Fn(usize, &CandidateInfo) -> T + Sync,
) -> Vec<T> {
    map_pieces_by_object(program, candidates, MAP_PIECE, |run| {
        run.map(|index| f(index, &candidates[index])).collect()
    })
}

/// Candidates [`map_by_object`] hands one thread at a time.
const MAP_PIECE: usize = 1024;

/// [`map_by_object`] with `f` given each run of one object's candidates
/// (their indices) and returning a value per candidate of the run.
pub(crate) fn map_runs_by_object<T: Send>(
    program: &Program<'_>,
    candidates: &[CandidateInfo],
    f: impl Fn(std::ops::Range<usize>) -> Vec<T> + Sync,
) -> Vec<T> {
    map_pieces_by_object(program, candidates, usize::MAX, f)
}

/// [`map_runs_by_object`] with each run split into pieces of at most
/// `most` candidates, which run in parallel too (a linked image is one
/// object); an object's pages are released once every piece of its run is
/// done.
pub(crate) fn map_pieces_by_object<T: Send>(
    program: &Program<'_>,
    candidates: &[CandidateInfo],
    most: usize,
    f: impl Fn(std::ops::Range<usize>) -> Vec<T> + Sync,
) -> Vec<T> {
    let runs = object_runs(candidates);
    let left: Vec<AtomicUsize> = runs
        .iter()
        .map(|run| AtomicUsize::new(run.len().div_ceil(most)))
        .collect();
    let pieces: Vec<(usize, std::ops::Range<usize>)> = runs
        .iter()
        .enumerate()
        .flat_map(|(index, run)| {
            run.clone()
                .step_by(most)
                .map(move |start| (index, start..start.saturating_add(most).min(run.end)))
        })
        .collect();
    pieces
        .into_par_iter()
        .map_init(
            || program.pending_release(),
            |released, (run, piece)| {
                let object = candidates[piece.start].object;
                let mapped = f(piece);
                if left[run].fetch_sub(1, Ordering::AcqRel) == 1 {
                    program.release_object_pages_later(released, object);
                }
                mapped
            },
        )
        .flatten_iter()
        .collect()
}

/// The runs of `candidates`: consecutive candidates of one object (its
/// functions, or its read-only data), as index ranges.
pub(crate) fn object_runs(candidates: &[CandidateInfo]) -> Vec<std::ops::Range<usize>> {
    let mut start = 0;
    candidates
        .chunk_by(|a, b| a.object == b.object)
        .map(|run| {
            let range = start..start + run.len();
            start = range.end;
            range
        })
        .collect()
}

/// Every function piece of the loaded objects, then every read-only data
/// piece, each in object order, in the sections `live` says the link keeps
/// (all, without `--gc-sections`).
pub(crate) fn collect_candidates(
    program: &Program<'_>,
    live: Option<&[Vec<bool>]>,
) -> Vec<CandidateInfo> {
    let kept = |object: ObjectId, section: SectionIndex| {
        live.is_none_or(|live| live[object.index()][section.index()])
    };
    let mut candidates: Vec<CandidateInfo> = program
        .functions
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            let object = program.object(f.object);
            // In a linked image, bytes no symbol covers are the padding
            // between functions (or linker stubs): nothing a link of the
            // inputs would fold.
            let padding = object.object.image.is_some() && f.extent.symbols.is_empty();
            object.loaded && kept(f.object, f.extent.section) && !padding
        })
        .map(|(index, f)| CandidateInfo {
            origin: Origin::Function(FunctionId(index as u32)),
            object: f.object,
            section: f.extent.section,
            start: f.extent.start,
            end: f.extent.end,
        })
        .collect();
    for (index, object) in program.objects.iter().enumerate() {
        if !object.loaded {
            continue;
        }
        let splits = data_split_points(&object.object);
        // In a linked image, data between one symbol's end and the next
        // symbol is alignment padding or what no symbol names (merged
        // strings, anonymous constants): a place an address one past an
        // array reaches, not a piece to fold.
        let starts = object
            .object
            .image
            .is_some()
            .then(|| piece_starts(&object.object));
        for (section_index, section) in object.object.sections.iter().enumerate() {
            let section_index = SectionIndex(section_index as u32);
            if !section.is_read_only_data() || !kept(ObjectId(index as u32), section_index) {
                continue;
            }
            let mut points: Vec<u64> = splits.get(&section_index).cloned().unwrap_or_default();
            if let Some(image) = &object.object.image {
                points.retain(|&point| !image.is_joined(image.address(section_index, point)));
            }
            points.extend([0, section.size]);
            points.retain(|&p| p <= section.size);
            points.sort_unstable();
            points.dedup();
            for piece in points.windows(2) {
                if starts
                    .as_ref()
                    .is_some_and(|starts| !starts.contains(&(section_index, piece[0])))
                {
                    continue;
                }
                candidates.push(CandidateInfo {
                    origin: Origin::Data,
                    object: ObjectId(index as u32),
                    section: section_index,
                    start: piece[0],
                    end: piece[1],
                });
            }
        }
    }
    candidates.shrink_to_fit();
    candidates
}

/// Where read-only data sections split into pieces: at the start and end of
/// every symbol (a table, a constant), and at every LSDA an FDE names, so
/// that data sharing one section (no `-fdata-sections`, one
/// `.gcc_except_table` for all functions) still compares piece by piece.
fn data_split_points(elf: &Object<'_>) -> HashMap<SectionIndex, Vec<u64>> {
    data_places(elf, true)
}

/// Where symbols and LSDAs start, per section, and with `ends` where
/// sized symbols end.
fn data_places(elf: &Object<'_>, ends: bool) -> HashMap<SectionIndex, Vec<u64>> {
    let mut points: HashMap<SectionIndex, Vec<u64>> = HashMap::default();
    for symbol in &elf.symbols {
        if let Some(section) = symbol.section()
            && !matches!(
                symbol.kind,
                icf_object::SymbolKind::Section | icf_object::SymbolKind::File
            )
        {
            let entry = points.entry(section).or_default();
            entry.push(symbol.value);
            if ends && symbol.size > 0 {
                entry.push(symbol.value.saturating_add(symbol.size));
            }
        }
    }
    if let Some((eh_frame, fdes)) = &elf.eh_frame {
        for lsda in fdes.iter().filter_map(|fde| fde.lsda) {
            let reloc = elf.section(*eh_frame).reloc(lsda);
            let symbol = elf.symbol(reloc.symbol);
            if let Some(section) = symbol.section() {
                let place = symbol.value as i64 + reloc.addend;
                if let Ok(place) = u64::try_from(place) {
                    points.entry(section).or_default().push(place);
                }
            }
        }
    }
    points
}

/// Where a symbol or an LSDA starts, per section.
fn piece_starts(elf: &Object<'_>) -> rustc_hash::FxHashSet<(SectionIndex, u64)> {
    let mut starts = rustc_hash::FxHashSet::default();
    for (section, points) in data_places(elf, false) {
        starts.extend(points.into_iter().map(|point| (section, point)));
    }
    starts
}

/// Calls `f` with the start and the constant target (by content) of each
/// element of `section`, if it is mergeable.
fn for_each_element<'data>(section: &Section<'data>, mut f: impl FnMut(u64, Target<'data>)) {
    let Ok(entsize_field) = u32::try_from(section.entry_size()) else {
        return;
    };
    if !section.is_mergeable() || entsize_field == 0 || section.data.is_empty() {
        return;
    }
    let entsize = entsize_field as usize;
    let strings = section.holds_strings();
    let mut start = 0;
    while start < section.data.len() {
        let end = if strings && entsize == 1 {
            // A byte string ends with its first zero byte.
            section.data[start..]
                .iter()
                .position(|&b| b == 0)
                .map_or(section.data.len(), |at| start + at + 1)
        } else if strings {
            // A string ends with an entsize-wide zero, aligned to entsize.
            let mut end = start;
            loop {
                let chunk = section.data.get(end..end + entsize);
                end += entsize;
                if chunk.is_none_or(|c| c.iter().all(|&b| b == 0)) {
                    break;
                }
            }
            end.min(section.data.len())
        } else {
            (start + entsize).min(section.data.len())
        };
        f(
            start as u64,
            Target::Constant {
                entsize: entsize_field,
                strings,
                content: &section.data[start..end],
            },
        );
        start = end;
    }
}
