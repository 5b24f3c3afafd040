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
mod image;
mod image_info;
mod input;
mod lsda;
mod macho;
mod macho_layout;
mod macho_write;
mod model;
mod object;
mod per_section;
mod rewrite;

pub use eh_frame::{Fde, UnwindKind};
pub use elf::is_relocation_section;
pub use error::{Error, Location, Result};
pub use functions::{DataAnchors, FunctionExtent};
pub use image_info::{DecodedPiece, Image, ImageKind, PointerSource};
pub use input::{
    FileKind, InputFile, InputObjects, ObjectSource, SkippedMember, is_linked_image, list_objects,
};
pub use macho_layout::{Atom, DataInCode, MachOLayout, MachOSection};
pub use model::{
    Binding, ComdatGroup, GroupIndex, MAX_PLACE_MAGNITUDE, Reloc, RelocIndex, SHT_LLVM_ADDRSIG,
    Section, SectionIndex, Symbol, SymbolIndex, SymbolKind, SymbolPlace, Visibility,
};
pub use object::{Format, Object};
pub use per_section::PerSection;
pub use rewrite::{Destination, Edits, NewContents, NewReloc, NewSymbol, SymbolRef};

/// Writes `object` back with `edits`: a complete file of its format (ELF:
/// `rewrite.rs`; Mach-O: `macho_write.rs`, which moves no contents).
pub fn rewrite(object: &Object<'_>, edits: &Edits) -> Result<Vec<u8>> {
    match object.format {
        Format::Elf => rewrite::rewrite_elf(object, edits),
        Format::MachO => macho_write::rewrite_macho(object, edits),
    }
}

/// [`rewrite`] written into `out`: an ELF object streams (unchanged
/// sections as single writes of the input's slices), a Mach-O one is built
/// in memory first.
pub fn rewrite_into(
    object: &Object<'_>,
    edits: &Edits,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    match object.format {
        Format::Elf => rewrite::rewrite_elf_into(object, edits, out),
        Format::MachO => {
            let bytes = macho_write::rewrite_macho(object, edits)?;
            out.write_all(&bytes)
                .map_err(|e| Error::new(format!("writing the rewritten object: {e}")))
        }
    }
}
