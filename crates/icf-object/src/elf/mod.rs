//! ELF: relocatable objects read into the model (`read`), written back
//! with a fold's edits (`write`), and linked images: their headers as the
//! file holds them (`linked`), read into the same model (`image`).

pub(crate) mod image;
pub mod linked;
pub(crate) mod read;
pub(crate) mod tables;
pub(crate) mod write;
