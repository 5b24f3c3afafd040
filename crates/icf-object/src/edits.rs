//! The edits a fold makes to one object, whatever its format: which
//! sections go (and where their bytes live on), which get new contents or
//! a larger alignment, which symbols are added or kept alive. Each
//! format's writer (`elf/write.rs`, `macho/write.rs`) carries them out.

use crate::model::{Binding, SectionIndex, SymbolIndex, SymbolKind, Visibility};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::hash::{Hash, Hasher};

/// Where the bytes of a removed section live on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Destination {
    /// Another section of this object, at `start`, `size` bytes long.
    Local {
        section: SectionIndex,
        start: u64,
        size: u64,
    },
    /// A kept copy in another object, reached through a new (undefined) symbol.
    External { symbol: usize, size: u64 },
}

/// A symbol a relocation can name.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SymbolRef {
    Existing(SymbolIndex),
    /// An index into [`Edits::new_symbols`].
    New(usize),
}

/// A relocation of new section contents.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NewReloc {
    pub offset: u64,
    pub r_type: u32,
    pub symbol: SymbolRef,
    pub addend: i64,
}

/// New contents for a section that stays: a thunk to the kept copy.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NewContents {
    pub bytes: Vec<u8>,
    pub relocs: Vec<NewReloc>,
    /// The alignment the new contents need; the section's becomes the
    /// smaller of this and its own (a jump needs less than a function body).
    pub align: u64,
}

/// A symbol the edits add: a hidden alias of a kept copy, a reference to
/// one in another object, or a global symbol moved here with the body it names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NewSymbol {
    pub name: Vec<u8>,
    /// `None` for an undefined reference to another object's symbol.
    pub definition: Option<(SectionIndex, u64)>,
    pub size: u64,
    pub binding: Binding,
    pub kind: SymbolKind,
    pub visibility: Visibility,
    /// The format's other flags, carried over from the symbol this one
    /// copies ([`Symbol::flags`](crate::Symbol::flags)), else 0.
    pub flags: u8,
}

/// Everything to change in one object.
#[derive(Clone, Debug, Default)]
pub struct Edits {
    pub moved: HashMap<SectionIndex, Destination>,
    pub replaced: HashMap<SectionIndex, NewContents>,
    pub align: HashMap<SectionIndex, u64>,
    pub new_symbols: Vec<NewSymbol>,
    /// Symbols whose definitions the link must keep though the folded
    /// objects may no longer refer to them: exported symbols of a Mach-O
    /// executable the plain link kept alive only through references a fold
    /// removed (ld64 exports every global but roots none of them under
    /// `-dead_strip`). The Mach-O writer marks them `N_NO_DEAD_STRIP`; on
    /// ELF an exported symbol is a root of the link, so the list is empty.
    pub keep_alive: HashSet<SymbolIndex>,
}

impl Edits {
    /// The edits as bytes that are equal exactly when the edits are: what
    /// names a rewritten file in icf's cache, with the input's bytes.
    pub fn digest(&self) -> Vec<u8> {
        let mut moved: Vec<_> = self.moved.iter().collect();
        moved.sort_by_key(|(section, _)| **section);
        let mut replaced: Vec<_> = self.replaced.iter().collect();
        replaced.sort_by_key(|(section, _)| **section);
        let mut align: Vec<_> = self.align.iter().collect();
        align.sort_by_key(|(section, _)| **section);
        let mut keep_alive: Vec<_> = self.keep_alive.iter().collect();
        keep_alive.sort();
        // What `Hash` feeds a hasher, kept whole: every value's fields in
        // order, each list and byte string after its length, each enum
        // after its variant, so equal streams are equal edits.
        let mut stream = Stream(Vec::new());
        (moved, replaced, align, &self.new_symbols, keep_alive).hash(&mut stream);
        stream.0
    }

    pub fn is_empty(&self) -> bool {
        self.moved.is_empty()
            && self.replaced.is_empty()
            && self.align.is_empty()
            && self.new_symbols.is_empty()
            && self.keep_alive.is_empty()
    }
}

/// A [`Hasher`] that keeps what it is fed (see [`Edits::digest`]).
struct Stream(Vec<u8>);

impl Hasher for Stream {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    fn finish(&self) -> u64 {
        0
    }
}
