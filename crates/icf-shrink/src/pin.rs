//! Functions kept whole and in place: what `icf shrink` does, instead of
//! refusing the image, where a field names code in a way icf cannot write
//! again for a new layout (bytes that may be data in code, a relocation
//! type it does not rewrite, a PC-relative field in data counting from a
//! place nothing names, a text relocation).
//!
//! Such a field stays right when neither its place nor what it names
//! moves: the functions of `.text` holding them keep their bodies and
//! their addresses (the code before them closes up and leaves a gap; the
//! code after them closes up behind them). Finding a field that needs this
//! happens while patching; the shrink then plans and lays out again with
//! those functions pinned, until a round finds none (`lib.rs`).

use crate::layout::Layout;
use std::collections::BTreeMap;

/// Why a function keeps its place.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PinKind {
    /// Bytes in code decode as a reference into another function's
    /// middle with no relocation kept: data in code or an instruction,
    /// nothing tells.
    DataInCode,
    /// A field whose new distance its instruction cannot encode.
    OutOfReach,
    /// A kept relocation in code that decoding did not find, or found
    /// naming another place.
    UndecodedField,
    /// A PC-relative field in data names code through a section symbol,
    /// counting from a place no code names (not a jump table icf reads).
    UnknownBase,
    /// A kept relocation of a type icf does not write again (GOT and
    /// thread-local offsets, `movw` pieces) names code.
    UnwrittenRelocation,
    /// A dynamic relocation patches code (a text relocation).
    TextRelocation,
}

impl PinKind {
    /// The name reports and JSON use.
    pub fn name(self) -> &'static str {
        match self {
            PinKind::DataInCode => "data-in-code",
            PinKind::OutOfReach => "out-of-reach",
            PinKind::UndecodedField => "undecoded-field",
            PinKind::UnknownBase => "unknown-base",
            PinKind::UnwrittenRelocation => "unwritten-relocation",
            PinKind::TextRelocation => "text-relocation",
        }
    }
}

/// The functions one round of patching asks to keep in place, by start.
#[derive(Debug, Default)]
pub(crate) struct Pins {
    pub wanted: BTreeMap<u64, PinKind>,
}

impl Pins {
    /// Asks that nothing at `addresses` move, for `kind`: the functions of
    /// `.text` holding them keep their place in the next round. Fails with
    /// `refusal` where that cannot help: an address outside `.text` that
    /// moves (the sections after `.text` move as one), or every function
    /// holding one already kept in place (the field is wrong for another
    /// reason).
    pub fn keep(
        &mut self,
        layout: &Layout,
        addresses: &[u64],
        kind: PinKind,
        refusal: impl FnOnce() -> anyhow::Error,
    ) -> anyhow::Result<()> {
        let mut new = Vec::new();
        for &address in addresses {
            match layout.piece_index_at(address) {
                Some(index) => {
                    let piece = &layout.pieces[index];
                    if !piece.pinned {
                        new.push(piece.start);
                    }
                }
                None if layout.moves(address) => return Err(refusal()),
                None => {}
            }
        }
        if new.is_empty() {
            return Err(refusal());
        }
        for start in new {
            self.wanted.entry(start).or_insert(kind);
        }
        Ok(())
    }

    /// What `other` asks, as if asked after this: a function asked for
    /// twice keeps the first kind.
    pub fn append(&mut self, other: Pins) {
        for (start, kind) in other.wanted {
            self.wanted.entry(start).or_insert(kind);
        }
    }
}

/// Functions kept in place, counted by why.
pub fn count(pinned: &BTreeMap<u64, PinKind>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for kind in pinned.values() {
        *counts.entry(kind.name().to_string()).or_insert(0) += 1;
    }
    counts
}

/// The report's note on functions kept in place, when there are any.
pub fn note(counts: &BTreeMap<String, usize>) -> Option<String> {
    let total: usize = counts.values().sum();
    (total > 0).then(|| {
        format!(
            "{total} functions keep their body and their address ({}): fields name them, or sit \
             in them, in ways icf cannot write again for a new layout",
            listed(counts)
        )
    })
}

/// `kind count, kind count`.
pub fn listed(counts: &BTreeMap<String, usize>) -> String {
    let kinds: Vec<String> = counts
        .iter()
        .map(|(kind, count)| format!("{kind} {count}"))
        .collect();
    kinds.join(", ")
}
