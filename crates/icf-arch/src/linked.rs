//! References in linked code: what an assembler would have written as
//! relocations, recovered from code whose fields the linker already filled.
//!
//! A linked image (an executable or a shared library) keeps no relocations
//! for its code (unless linked with `--emit-relocs`). To compare its
//! functions as icf compares an object's, the image reader
//! (`icf-object`'s `elf/image.rs`) asks each architecture for the fields that
//! hold an address relative to where the code sits, and turns each into a
//! relocation of the type an assembler uses for that instruction. The
//! lifter then masks those fields and compares what they point to, exactly
//! as it does in an object.
//!
//! Main assumption: `code` is decoded linearly from `address` (x86-64:
//! from a function's first byte; AArch64: word by word). What looks like an
//! address in an immediate is reported separately ([`LinkedUse::Absolute`]):
//! whether it is one only the reader can tell (a non-PIE image puts
//! addresses in immediates without saying so).

/// What a reference in linked code does with the address it names.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum LinkedUse {
    /// A direct branch or call (`call`, `jmp`, `jcc`; `b`, `bl`, `b.cond`,
    /// `cbz`, `tbz`): a target inside the decoded code is one of its blocks.
    Branch,
    /// An address the code computes from its own place (a RIP-relative
    /// operand; `adr`, `adrp` and what completes it, a literal load).
    PcRelative,
    /// An immediate or displacement whose value may be an absolute address.
    Absolute,
}

/// What a decode of one piece of linked code tells besides its references
/// ([`crate::Architecture::linked_references`]).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct LinkedScan {
    /// Whether running the code (one function, from its first byte) may
    /// go on past its last byte: its last instruction is no unconditional
    /// jump, return, trap or call (a compiler ends a function with a call
    /// only to a function that never returns, as the lifter assumes).
    pub runs_off_the_end: bool,
    /// The shape a sketch of the same bytes has ([`crate::Sketch::shape`])
    /// where the architecture sketches and the code decodes whole: two
    /// functions a sketch would find of one shape have one here.
    pub shape: Option<u64>,
    /// Where a sketch of the same bytes must decode
    /// ([`crate::SketchMarks`]), found where the architecture sketches and
    /// the decode saw nothing else that matters to a sketch: the
    /// instructions that name a place outside the code. The reader adds
    /// those that hold the relocations it makes
    /// ([`crate::SketchMarks::add`]).
    pub marks: Option<crate::SketchMarks>,
}

/// One field of linked code that names an address.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct LinkedReference {
    /// Offset of the relocated place from the first byte of the decoded
    /// code: the field on x86-64, the instruction word on AArch64.
    pub offset: u64,
    /// The ELF relocation type an assembler writes there.
    pub r_type: u32,
    /// Offset of the instruction that holds the field, counted like
    /// `offset` (on AArch64, `offset` itself).
    pub instruction: u32,
    /// The address the field names (a branch's destination, an operand's
    /// address, an `adrp` page completed by its low bits).
    pub target: u64,
    /// What the relocation's `S + A` is, minus `target`: x86-64's
    /// PC-relative fields count from the end of the instruction, so an
    /// assembler writes `target - (end - field)`; zero elsewhere.
    pub bias: i64,
    pub use_: LinkedUse,
    /// When the address is the base of a jump table the code indexes:
    /// how its entries are laid out.
    pub table: Option<TableShape>,
}

/// The entries of a jump table, as the dispatch that reads them says.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum TableShape {
    /// 32-bit distances from the table's start (`movslq (T,%idx,4)`, then
    /// `add T`): position-independent code. `entries` comes from the bound
    /// the dispatch checks on its index register (`cmp $N`), when it does.
    Relative32 { entries: Option<u32> },
    /// 64-bit addresses (`jmp *T(,%idx,8)`): a non-PIE executable.
    Absolute64 { entries: Option<u32> },
    /// Entries of `entry_size` bytes, each a distance between two places
    /// of the function (AArch64: `ldrb` from the table, then added to an
    /// `adr` of the function's own code): the same bytes in every copy of
    /// the function, so compared as bytes. `entries` comes from the bound
    /// the dispatch checks on its index register (`cmp w, #N`), when it
    /// does.
    InFunction {
        entry_size: u8,
        entries: Option<u32>,
    },
}

/// What a dynamic relocation of a linked image stores, as far as icf's
/// image reader cares: a pointer to a place in the image, or to a symbol.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum DynamicReloc {
    /// `R_*_RELATIVE`: the load address plus the addend, a place in the image.
    Relative,
    /// `R_*_IRELATIVE`: what the resolver at the addend returns.
    IRelative,
    /// `R_*_64`, `R_*_GLOB_DAT`: the symbol's address plus the addend.
    Symbol,
}
