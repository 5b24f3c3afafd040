//! Phase 3 of the analysis, the keys, in two passes: every function is
//! sketched where its architecture can (`icf_arch::Sketch`), the rest
//! lifted; then the sketched functions whose shape another candidate
//! shares are lifted too, and the others keep a body alone. An [`Entry`]
//! is a candidate between the passes, as `keys` makes it and the cache
//! (`key_cache`) stores it.

use icf_fold::body::Body;
use rustc_hash::FxHashSet;

/// A candidate's key after the first pass: lifted, or sketched
/// ([`icf_arch::Sketch`]) with a body alone ([`Body::alone`]) that stands
/// until another candidate turns out to share its shape. Equal keys have
/// equal shapes, and a function the architecture cannot sketch (or the
/// lifter would compare byte by byte) has no shape and is lifted, so a
/// shape of its own rules out every fold. Most functions of a program
/// are alone, and sketching one costs little more than decoding it.
pub(crate) enum Entry {
    /// The key, and the shape where the function has one.
    Lifted { body: Body, shape: Option<u64> },
    /// A body alone, until the shape turns out shared.
    Sketched { body: Body, shape: u64 },
}

impl Entry {
    pub(crate) fn shape(&self) -> Option<u64> {
        match self {
            Entry::Lifted { shape, .. } => *shape,
            Entry::Sketched { shape, .. } => Some(*shape),
        }
    }

    pub(crate) fn body(&self) -> &Body {
        match self {
            Entry::Lifted { body, .. } | Entry::Sketched { body, .. } => body,
        }
    }

    pub(crate) fn into_body(self) -> Body {
        match self {
            Entry::Lifted { body, .. } | Entry::Sketched { body, .. } => body,
        }
    }
}

/// The shapes more than one candidate has.
pub(crate) fn shared_shapes<'e>(entries: impl IntoIterator<Item = &'e Entry>) -> FxHashSet<u64> {
    let mut seen = FxHashSet::default();
    let mut shared = FxHashSet::default();
    for shape in entries.into_iter().filter_map(Entry::shape) {
        if !seen.insert(shape) {
            shared.insert(shape);
        }
    }
    shared
}

/// The second pass: a sketched candidate whose shape another shares is
/// lifted (`lift`); says whether it was.
pub(crate) fn settle(
    entry: Entry,
    shared: &FxHashSet<u64>,
    lift: impl FnOnce() -> Body,
) -> (Entry, bool) {
    match entry {
        Entry::Sketched { shape, .. } if shared.contains(&shape) => (
            Entry::Lifted {
                body: lift(),
                shape: Some(shape),
            },
            true,
        ),
        entry => (entry, false),
    }
}
