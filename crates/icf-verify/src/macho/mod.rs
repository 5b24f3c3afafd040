//! Mach-O: a linked executable or dylib read into the image model
//! (`read`), with what its load commands and symbol table say
//! (`commands`) and what dyld writes before it runs (`fixups`).

pub(crate) mod commands;
pub(crate) mod fixups;
pub(crate) mod read;
