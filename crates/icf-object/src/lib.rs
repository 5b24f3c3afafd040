//! icf-object: the containers icf reads and writes, as one borrowed,
//! checked model.
//!
//! Inputs are memory-mapped ([`InputFile`]) and split into objects
//! ([`list_objects`]: files and archive members); each is parsed once into
//! an [`Object`] whose slices borrow from the mapping. All validation of
//! indices and offsets read from a file happens here: later phases index
//! the model without checks, and ask its predicates rather than a format's
//! fields.
//!
//! Formats, a directory each: `elf/` reads 64-bit little-endian ELF
//! relocatable objects (RELA and CREL relocations) for x86-64 and AArch64,
//! writes them back with a fold's [`Edits`], and reads linked executables
//! and shared libraries into the same model ([`Object::parse_image`]);
//! `macho/` reads and writes `MH_OBJECT` files for x86_64 and arm64.
//! Anything else is an [`Error`] naming the file, member, section and
//! offset.

mod edits;
mod eh_frame;
mod elf;
mod error;
mod functions;
mod image_info;
mod input;
mod lsda;
mod macho;
mod macho_layout;
mod model;
mod object;
mod per_section;

pub use edits::{Destination, Edits, NewContents, NewReloc, NewSymbol, SymbolRef};
pub use eh_frame::{Fde, UnwindKind};
/// The headers of a linked ELF image, as `icf shrink` writes them back.
pub use elf::linked as linked_elf;
pub use error::{Error, Location, Result};
pub use functions::{DataAnchors, FunctionExtent};
pub use image_info::{CodeShape, DecodedPiece, Image, ImageKind, PointerSource};
pub use input::{
    FileKind, FileStamp, InputFile, InputObjects, ObjectSource, PendingRelease, SkippedMember,
    is_linked_image, list_objects,
};
pub use macho_layout::{Atom, DataInCode, MachOLayout, MachOSection};
pub use model::{
    Binding, ComdatGroup, GroupIndex, MAX_PLACE_MAGNITUDE, Reloc, RelocIndex, SHT_LLVM_ADDRSIG,
    Section, SectionIndex, Symbol, SymbolIndex, SymbolKind, SymbolPlace, Visibility,
    is_c_identifier, plain_name,
};
pub use object::{Format, Object};
pub use per_section::PerSection;

/// Writes `object` back with `edits`: a complete file of its format (ELF:
/// `elf/write.rs`; Mach-O: `macho/write.rs`, which moves no contents).
pub fn rewrite(object: &Object<'_>, edits: &Edits) -> Result<Vec<u8>> {
    match object.format {
        Format::Elf => elf::write::rewrite_elf(object, edits),
        Format::MachO => macho::write::rewrite_macho(object, edits),
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
        Format::Elf => elf::write::rewrite_elf_into(object, edits, out),
        Format::MachO => {
            let bytes = macho::write::rewrite_macho(object, edits)?;
            out.write_all(&bytes)
                .map_err(|e| Error::new(format!("writing the rewritten object: {e}")))
        }
    }
}
