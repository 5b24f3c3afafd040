//! icf-object: the containers icf reads, as a borrowed, checked model.
//!
//! Inputs are memory-mapped ([`InputFile`]) and split into ELF objects
//! ([`list_objects`]); each object is parsed once into an [`Object`] whose
//! slices borrow from the mapping. All validation of indices and offsets read
//! from the file happens here: later phases index the model without checks.
//!
//! Main assumption: 64-bit little-endian ELF relocatable objects (`ET_REL`)
//! for x86-64 and AArch64, with RELA relocations. Anything else is an
//! [`Error`] naming the file, member, section and offset.

mod eh_frame;
mod elf;
mod error;
mod functions;
mod input;
mod macho;
mod macho_write;
mod model;
mod object;
mod per_section;
mod rewrite;

pub use eh_frame::{Fde, UnwindKind};
pub use elf::{SHT_LLVM_ADDRSIG, is_relocation_section};
pub use error::{Error, Location, Result};
pub use functions::{DataAnchors, FunctionExtent};
pub use input::{FileKind, InputFile, InputObjects, ObjectSource, SkippedMember, list_objects};
pub use macho::{Atom, MachOLayout, MachOSection};
pub use model::{
    Binding, ComdatGroup, GroupIndex, Reloc, RelocIndex, Section, SectionIndex, Symbol,
    SymbolIndex, SymbolKind, SymbolPlace, Visibility,
};
pub use object::{Format, Object};
pub use per_section::PerSection;
pub use rewrite::{Destination, Edits, NewContents, NewReloc, NewSymbol, SymbolRef, rewrite};
