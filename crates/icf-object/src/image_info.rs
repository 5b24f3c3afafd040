//! What a linked image (`icf report BINARY`) is beyond the object model it
//! is read into (`elf/image.rs`): its kind, where its sections sit, what it
//! exports and where its pointers were learned. Kept apart from the reader
//! so that [`crate::Object`] can hold it without depending on the reader.

use crate::model::SectionIndex;

/// What kind of linked image a file is.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ImageKind {
    /// `ET_EXEC`: linked at a fixed address.
    Executable,
    /// `ET_DYN` with an interpreter or `DF_1_PIE`.
    PositionIndependentExecutable,
    /// `ET_DYN` otherwise: its exported functions may be interposed.
    SharedLibrary,
}

/// Where the reader learned which pointers the image's data holds.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum PointerSource {
    /// The relocations `--emit-relocs` (`-Wl,-q`) kept.
    KeptRelocations,
    /// The dynamic relocations of a PIE or shared library.
    DynamicRelocations,
    /// Aligned words of data whose value is a function's address (a
    /// non-PIE executable says nothing about its pointers).
    ScannedWords,
}

/// What the reader knows of the image beyond the model.
#[derive(Clone, Debug)]
pub struct Image<'data> {
    pub kind: ImageKind,
    /// Names of the defined symbols of `.dynsym`: their addresses may be
    /// compared through `dlsym` or the dynamic symbol table.
    pub exports: Vec<&'data [u8]>,
    pub pointers: PointerSource,
    /// Whether function boundaries came from `.eh_frame` (no `.symtab`).
    pub stripped: bool,
    /// Functions `.eh_frame` describes that no symbol names.
    pub unnamed_functions: usize,
    /// The virtual address of each section, by [`SectionIndex`].
    pub addresses: Vec<u64>,
    /// Addresses of named places (functions, named data) that code takes
    /// where no relocation shows it, sorted: a non-PIE executable's
    /// immediates equal to one (compared by value, since a number can
    /// equal an address by chance), and what code no symbol covers refers
    /// to (it is no candidate, so its references are not otherwise seen).
    pub taken_addresses: Vec<u64>,
    /// Where a sized piece of data ends and something refers to that very
    /// address, sorted: the reference may mean one past the piece as well
    /// as what follows it, so the two must not be split there.
    pub joined: Vec<u64>,
    /// Every piece of code as the reader decoded it, in the order of
    /// [`crate::Object::functions`], when the caller asked to keep them
    /// ([`crate::Object::parse_image_keeping_code`]): `icf shrink`
    /// patches the same fields and need not decode the code again.
    pub decoded_code: Vec<DecodedPiece>,
    /// Each piece of code whose decode gave a shape
    /// (`icf_arch::LinkedScan::shape`), sorted by section and start: the
    /// analysis lifts a function whose shape another shares at once,
    /// without sketching it first, and sketches the others from their
    /// marks.
    pub code_shapes: Vec<CodeShape>,
}

/// What the reader's decode of one piece of code tells a sketch of it.
#[derive(Clone, Debug)]
pub struct CodeShape {
    pub section: SectionIndex,
    /// Section offsets `start..end`.
    pub start: u64,
    pub end: u64,
    /// The shape a sketch of the piece has (`icf_arch::Sketch::shape`).
    pub shape: u64,
    /// Where a sketch of the piece must decode, when the decode found it
    /// (`icf_arch::LinkedScan::marks`).
    pub marks: Option<icf_arch::SketchMarks>,
}

/// One piece of code of a linked image and what decoding found in it.
#[derive(Clone, Debug)]
pub struct DecodedPiece {
    pub section: SectionIndex,
    /// Section offsets `start..end`.
    pub start: u64,
    pub end: u64,
    /// Every branch and PC-relative field found; `None` where the piece's
    /// bytes could not be read.
    pub references: Option<Vec<icf_arch::LinkedReference>>,
    /// Whether the piece's code runs off its end
    /// (`icf_arch::LinkedScan::runs_off_the_end`).
    pub runs_off_the_end: bool,
}

impl Image<'_> {
    /// The address of `offset` in section `section`.
    pub fn address(&self, section: SectionIndex, offset: u64) -> u64 {
        self.addresses
            .get(section.index())
            .map_or(offset, |base| base.wrapping_add(offset))
    }

    /// Whether code takes `address` where no relocation shows it (see
    /// [`Image::taken_addresses`]).
    pub fn is_taken(&self, address: u64) -> bool {
        self.taken_addresses.binary_search(&address).is_ok()
    }

    /// Whether data must not be split at `address` (see [`Image::joined`]).
    pub fn is_joined(&self, address: u64) -> bool {
        self.joined.binary_search(&address).is_ok()
    }
}
