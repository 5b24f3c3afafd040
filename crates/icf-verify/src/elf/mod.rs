//! ELF: a linked executable or shared library read into the image model
//! (`read`).

pub(crate) mod read;
