//! ELF: relocatable objects read into the model (`read`), written back
//! with a fold's edits (`write`), and linked images read into the same
//! model (`image`).

pub(crate) mod image;
pub(crate) mod read;
pub(crate) mod write;
