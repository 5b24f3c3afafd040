//! Phase 3 of the analysis: the comparator's keys. Each candidate is lifted
//! (or, where no other can equal it, only sketched: see `entry`; identical
//! copies once between them: see `lift_memo`), its references narrowed,
//! and its IR reduced to its key (`icf-fold`'s [`Body`]) and dropped; with
//! the keys come the attributes, each data
//! candidate's owner (a jump table's function), and the references through
//! which an address may escape.

use crate::analyse::attributes::attributes;
use crate::analyse::candidates::{CandidateInfo, map_pieces_by_object, map_runs_by_object};
use crate::analyse::data_uses::DataReference;
use crate::analyse::entry::{Entry, settle, shared_shapes};
use crate::analyse::key_cache::{CacheStats, KeyCache, PendingWrites, RunEntries};
use crate::analyse::lift_memo::{LiftCounts, LiftMemo};
use crate::analyse::narrow::Narrower;
use crate::load::program::Program;
use crate::options::CacheSettings;
use icf_fold::body::Body;
use icf_fold::{Attrs, CandidateId};
use icf_ir::{TargetId, Use};
use rayon::prelude::*;

/// For each read-only data candidate that only one code candidate refers
/// to and whose every reference points into that code candidate, the code
/// candidate: a jump table belongs to its function. Its entries do not take
/// the function's address, and lead into the function whichever copy of
/// the table the function runs with (the function's layout is compared,
/// since they land inside it).
fn owners(
    candidates: &[CandidateInfo],
    bodies: &[Body],
    target_candidate: &[Option<CandidateId>],
    data_references: &[DataReference],
) -> Vec<Option<CandidateId>> {
    let candidate_of = |target: TargetId| target_candidate.get(target.index()).copied().flatten();
    // The one candidate referring to each candidate: None for nobody yet,
    // Some(Ok(c)) for c alone, Some(Err(())) for several.
    let mut referrer: Vec<Option<Result<CandidateId, ()>>> = vec![None; candidates.len()];
    for (index, body) in bodies.iter().enumerate() {
        let from = CandidateId(index as u32);
        for r in body.refs() {
            if let Some(to) = candidate_of(r.target) {
                let slot = &mut referrer[to.index()];
                *slot = match *slot {
                    None => Some(Ok(from)),
                    Some(Ok(one)) if one == from => Some(Ok(one)),
                    _ => Some(Err(())),
                };
            }
        }
    }
    for reference in data_references {
        referrer[reference.candidate.index()] = Some(Err(()));
    }
    candidates
        .iter()
        .zip(bodies)
        .zip(&referrer)
        .map(|((info, body), referrer)| {
            let Some(Ok(user)) = *referrer else {
                return None;
            };
            if info.is_code() || !candidates[user.index()].is_code() || body.refs().is_empty() {
                return None;
            }
            body.refs()
                .iter()
                .all(|r| candidate_of(r.target) == Some(user))
                .then_some(user)
        })
        .collect()
}

/// Every candidate's key and attributes, and what they say.
pub(crate) struct Keys {
    /// The comparator's key of each candidate, in candidate order.
    pub bodies: Vec<Body>,
    /// What must be equal besides the body.
    pub attrs: Vec<Attrs>,
    /// Output-section class names, indexed by [`Attrs::section_class`].
    pub section_classes: Vec<String>,
    /// For a jump table, the one function it belongs to (see [`owners`]).
    pub owner: Vec<Option<CandidateId>>,
    /// (candidate, target) for every reference through which an address
    /// may escape.
    pub escaping_references: Vec<(CandidateId, TargetId)>,
    /// Code candidates compared partly byte by byte.
    pub opaque_functions: usize,
    /// What the cache did, when there is one.
    pub cache: Option<CacheStats>,
    pub cache_writes: Option<PendingWrites>,
    /// How long the keys took (lifted or read), attributes aside.
    pub keys_time: std::time::Duration,
    /// Functions lifted, and keys cloned from identical copies.
    pub lifts: LiftCounts,
}

/// What the image reader found of a candidate's code
/// (`icf_object::Image::code_shapes`), for exactly its bytes.
#[derive(Clone, Copy)]
enum ReaderShape<'i> {
    /// A shape another candidate's is the same as. The reader's shape is
    /// the sketch's of the same bytes, so whatever shares a candidate's
    /// sketch shares this one: lifting these at once, with it as their
    /// shape, leaves the second pass lifting what it lifted before.
    Crowded(u64),
    /// A shape of its own among the reader's, and where a sketch must
    /// decode: the candidate is sketched from its marks
    /// (`icf_arch::sketch_marked`).
    Marked(u64, &'i icf_arch::SketchMarks),
    /// Nothing the sketch can use: sketched whole.
    Unread,
}

/// What the image reader found of each candidate's code; empty for
/// objects.
fn reader_shapes<'i>(
    program: &'i Program<'_>,
    candidates: &[CandidateInfo],
) -> Vec<ReaderShape<'i>> {
    let Some(shapes) = program.image().map(|image| &image.code_shapes) else {
        return Vec::new();
    };
    let of = |candidate: &CandidateInfo| {
        if !candidate.is_code() {
            return None;
        }
        let at = shapes
            .binary_search_by_key(&(candidate.section, candidate.start), |piece| {
                (piece.section, piece.start)
            })
            .ok()?;
        Some(&shapes[at]).filter(|piece| piece.end == candidate.end)
    };
    let found: Vec<Option<&icf_object::CodeShape>> = candidates.par_iter().map(of).collect();
    let mut count: rustc_hash::FxHashMap<u64, u32> = rustc_hash::FxHashMap::default();
    for piece in found.iter().flatten() {
        *count.entry(piece.shape).or_default() += 1;
    }
    found
        .into_iter()
        .map(|piece| match piece {
            Some(piece) if count[&piece.shape] > 1 => ReaderShape::Crowded(piece.shape),
            Some(icf_object::CodeShape {
                shape,
                marks: Some(marks),
                ..
            }) => ReaderShape::Marked(*shape, marks),
            _ => ReaderShape::Unread,
        })
        .collect()
}

/// Candidates lifted together on one thread, without a cache (see
/// [`map_pieces_by_object`]).
const LIFT_PIECE: usize = 256;

/// Lifts every candidate, one object at a time per thread, and keeps only
/// its key.
pub(crate) fn make(
    program: &Program<'_>,
    candidates: &[CandidateInfo],
    narrower: &Narrower<'_, '_>,
    target_candidate: &[Option<CandidateId>],
    data_references: &[DataReference],
    cache: Option<&CacheSettings>,
) -> Keys {
    // Each function's IR lives only until its key is made. A key keeps
    // the layout exactly when it is known already to matter: the code
    // computes its own addresses, or something enters it past its start.
    //
    // Objects are lifted one at a time per thread, and each gives back
    // its input pages when done: the inputs need not all be resident
    // alongside the keys.
    let started = std::time::Instant::now();
    program.inputs.release_resident_pages();
    let linked_image = program.objects.iter().any(|o| o.object.image.is_some());
    let memo = match linked_image {
        true => LiftMemo::off(),
        false => LiftMemo::default(),
    };
    let lift = |candidate: &CandidateInfo| {
        narrower.key(candidate, &memo, |function, entered| {
            let body = if function.layout_sensitive || entered {
                Body::with_layout(&function)
            } else {
                Body::of(&function)
            };
            icf_arch::recycle(function);
            body
        })
    };
    // The cache serves relinks of objects. A linked image is one run,
    // which the cache would lift on one thread to store it whole: on
    // opt_lite `icf report` took 1.27 s so (0.68 s reading the keys back)
    // against 0.57 s lifting only what can fold, in parallel.
    let cache = cache.filter(|_| !linked_image).and_then(|settings| {
        KeyCache::open(
            settings,
            program,
            candidates,
            narrower.places,
            narrower.targets,
        )
    });
    // Two passes (see `Entry`): every function is sketched where it can
    // be (the rest lifted), then those whose shape another shares are
    // lifted. The cache stores and reads whole runs; without it, a long
    // run (a linked image's) goes in parallel pieces.
    //
    // A linked image's reader found most functions' shapes as it decoded
    // them: one whose shape another candidate shares is lifted at once,
    // its sketch skipped (the second pass would lift it anyway); the
    // others are sketched from what the reader marked.
    let read = reader_shapes(program, candidates);
    let first = |index: usize| {
        let marks = match read.get(index) {
            Some(&ReaderShape::Crowded(shape)) => {
                return Entry::Lifted {
                    body: lift(&candidates[index]),
                    shape: Some(shape),
                };
            }
            Some(&ReaderShape::Marked(shape, marks)) => Some((shape, marks)),
            Some(ReaderShape::Unread) | None => None,
        };
        match narrower.sketch_alone(&candidates[index], &memo, index as u32, marks) {
            Some((shape, body)) => Entry::Sketched { body, shape },
            None => Entry::Lifted {
                body: lift(&candidates[index]),
                shape: None,
            },
        }
    };
    let mut bodies: Vec<Body> = match &cache {
        Some(cache) => {
            let runs: Vec<RunEntries> =
                map_runs_by_object(program, candidates, |run| vec![cache.entries(run, first)]);
            let shared = shared_shapes(runs.iter().flat_map(RunEntries::entries));
            memo.forget_sketches();
            // The sketches' memory goes back before the second pass lifts.
            crate::memory::return_freed_memory();
            let second = |index: usize, entry| settle(entry, &shared, || lift(&candidates[index]));
            // Each object's pages go back once its runs are settled, as
            // after the first pass: the lifts read its code again.
            runs.into_par_iter()
                .map_init(
                    || program.pending_release(),
                    |released, run| {
                        let object = candidates[run.start()].object;
                        let bodies = cache.settle(run, second);
                        program.release_object_pages_later(released, object);
                        bodies
                    },
                )
                .flatten_iter()
                .collect()
        }
        None => {
            let entries: Vec<Entry> =
                map_pieces_by_object(program, candidates, LIFT_PIECE, |run| {
                    run.map(&first).collect()
                });
            let shared = shared_shapes(&entries);
            memo.forget_sketches();
            // The sketches' memory goes back before the second pass lifts.
            crate::memory::return_freed_memory();
            entries
                .into_par_iter()
                .enumerate()
                .map(|(index, entry)| {
                    settle(entry, &shared, || lift(&candidates[index]))
                        .0
                        .into_body()
                })
                .collect()
        }
    };
    let (cache, cache_writes) = cache.map(KeyCache::finish).unzip();
    let keys_time = started.elapsed();
    let lifts = memo.counts();
    drop(memo);
    let mut section_classes = Vec::new();
    let attrs = attributes(program, candidates, narrower, &bodies, &mut section_classes);
    // Whether a jump from another candidate lands inside is known only
    // now; such candidates are few.
    bodies
        .par_iter_mut()
        .zip(candidates)
        .zip(&attrs)
        .filter(|((body, _), attrs)| {
            attrs.layout_sensitive && body.layout().is_none() && !body.alone
        })
        .for_each(|((body, candidate), _)| {
            *body = Body::with_layout(&narrower.lift(candidate));
        });
    let owner = owners(candidates, &bodies, target_candidate, data_references);
    let candidate_of = |target: TargetId| target_candidate.get(target.index()).copied().flatten();
    let escaping_references = bodies
        .iter()
        .zip(candidates)
        .enumerate()
        .flat_map(|(index, (body, info))| {
            let owner = owner[index];
            body.refs()
                .iter()
                .filter(|r| r.use_ == Use::Address || !info.is_code())
                // A jump table's entries do not let its function's address escape.
                .filter(move |r| owner.is_none() || candidate_of(r.target) != owner)
                .map(move |r| (CandidateId(index as u32), r.target))
        })
        .collect();
    let opaque_functions = bodies
        .iter()
        .zip(candidates)
        .filter(|(body, info)| body.has_opaque && info.is_code())
        .count();
    Keys {
        bodies,
        attrs,
        section_classes,
        owner,
        escaping_references,
        opaque_functions,
        cache,
        cache_writes,
        keys_time,
        lifts,
    }
}
