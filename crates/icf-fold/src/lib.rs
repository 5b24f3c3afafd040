//! icf-fold: which candidates are identical.
//!
//! A candidate is a lifted function or a read-only data piece (an IR function
//! holding one opaque run) with its [`Attrs`]. [`hash`] buckets candidates by
//! structure, [`compare`] is the total order of docs/design.md (MergeFunctions'
//! comparator on machine code), and [`partition`] refines buckets to the
//! coarsest stable partition, so recursive and mutually recursive functions
//! fold too.
//!
//! Architecture invariant: this crate never sees bytes of a file or a file
//! format; only IR, interned attribute numbers and target ids.

pub mod body;
pub mod compare;
pub mod hash;
pub mod leb128;
pub mod partition;
pub mod plan;

use icf_ir::{Function, Ref};

/// Index of a candidate in the slice handed to [`partition::refine`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct CandidateId(pub u32);

impl CandidateId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A class of candidates found equal; its id is the smallest member's index,
/// so ids do not depend on thread count or on the order work was done in.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct ClassId(pub u32);

/// Whether a candidate is code or data.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Kind {
    Code,
    Data,
}

/// What must be equal besides the body (MergeFunctions' attributes, section,
/// calling convention). Strings and bytes are interned by the caller into numbers.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Attrs {
    pub kind: Kind,
    /// The output section the candidate lands in (`.text`, `.text.unlikely`, a custom name...).
    pub section_class: u32,
    /// The unwind description (CIE and FDE instructions), `None` without an FDE.
    pub unwind: Option<u32>,
    /// Something refers to places inside the candidate: its instruction
    /// offsets must match too, or those references would land elsewhere.
    pub layout_sensitive: bool,
    /// The personality routine and the LSDA, compared like operands.
    pub refs: Box<[Ref]>,
}

/// A candidate as the comparator sees it.
#[derive(Copy, Clone, Debug)]
pub struct Candidate<'a> {
    pub function: &'a Function,
    pub attrs: &'a Attrs,
}

/// A candidate as the partition sees it: its comparator key and attributes.
#[derive(Copy, Clone, Debug)]
pub struct KeyedCandidate<'a> {
    pub body: &'a body::Body,
    pub attrs: &'a Attrs,
}
