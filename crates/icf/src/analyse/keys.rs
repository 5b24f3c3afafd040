//! Phase 3 of the analysis: the comparator's keys. Each candidate is lifted,
//! its references narrowed, and its IR reduced to its key (`icf-fold`'s
//! [`Body`]) and dropped; with the keys come the attributes, each data
//! candidate's owner (a jump table's function), and the references through
//! which an address may escape.

use crate::analyse::attributes::attributes;
use crate::analyse::candidates::{CandidateInfo, Origin, map_pieces_by_object, map_runs_by_object};
use crate::analyse::data_uses::DataReference;
use crate::analyse::key_cache::{CacheStats, KeyCache, PendingWrites};
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

/// The functions no other candidate can equal, each with its body alone
/// ([`Body::alone`]): sketched ([`icf_arch::Sketch`]) with a shape no other
/// sketch has. Equal keys have equal shapes, and a function the
/// architecture cannot sketch (or the lifter would compare byte by byte)
/// has no shape and is lifted, so a shape of its own rules out every
/// fold. Most functions of a program are alone: lifting the rest only
/// costs what a decode costs for them.
fn alone(
    program: &Program<'_>,
    candidates: &[CandidateInfo],
    narrower: &Narrower<'_, '_>,
) -> Vec<Option<Body>> {
    let sketched: Vec<Option<(u64, Body)>> =
        map_pieces_by_object(program, candidates, LIFT_PIECE, |run| {
            run.map(|index| {
                let (shape, function) = narrower.sketch(&candidates[index])?;
                let body = Body::alone(&function, index as u32);
                icf_arch::recycle(function);
                Some((shape, body))
            })
            .collect()
        });
    let mut shared: rustc_hash::FxHashMap<u64, bool> = rustc_hash::FxHashMap::default();
    for (shape, _) in sketched.iter().flatten() {
        shared
            .entry(*shape)
            .and_modify(|shared| *shared = true)
            .or_insert(false);
    }
    sketched
        .into_iter()
        .map(|sketch| {
            sketch
                .filter(|(shape, _)| !shared[shape])
                .map(|(_, body)| body)
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
    let lift = |candidate: &CandidateInfo| {
        let function = narrower.lift(candidate);
        let entered = match candidate.origin {
            Origin::Function(index) => !program.entry_points(program.function(index)).is_empty(),
            Origin::Data => false,
        };
        let body = if function.layout_sensitive || entered {
            Body::with_layout(&function)
        } else {
            Body::of(&function)
        };
        icf_arch::recycle(function);
        body
    };
    // The cache serves relinks of objects. A linked image is one run,
    // which the cache would lift on one thread to store it whole: on
    // opt_lite `icf report` took 1.27 s so (0.68 s reading the keys back)
    // against 0.57 s lifting only what can fold, in parallel.
    let linked_image = program.objects.iter().any(|o| o.object.image.is_some());
    let cache = cache.filter(|_| !linked_image).and_then(|settings| {
        KeyCache::open(
            settings,
            program,
            candidates,
            narrower.places,
            narrower.targets,
        )
    });
    // The cache stores whole runs; without it, a long run (a linked
    // image's) is lifted in parallel pieces, and only the functions whose
    // shape another shares are lifted (see `alone`).
    let mut bodies: Vec<Body> = match &cache {
        Some(cache) => map_runs_by_object(program, candidates, |run| cache.bodies(run, lift)),
        None => {
            let alone = alone(program, candidates, narrower);
            let lifted: Vec<Option<Body>> =
                map_pieces_by_object(program, candidates, LIFT_PIECE, |run| {
                    run.map(|index| match &alone[index] {
                        Some(_) => None,
                        None => Some(lift(&candidates[index])),
                    })
                    .collect()
                });
            lifted
                .into_iter()
                .zip(alone)
                .filter_map(|(lifted, alone)| lifted.or(alone))
                .collect()
        }
    };
    let (cache, cache_writes) = cache.map(KeyCache::finish).unzip();
    let keys_time = started.elapsed();
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
    }
}
