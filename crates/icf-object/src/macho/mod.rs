//! Mach-O: relocatable objects read into the model (`read`) and written
//! back with a fold's edits (`write`). What the model keeps of a Mach-O
//! file's layout for the writer is `crate::macho_layout`, beside the
//! model it belongs to. Linked Mach-O images are read by `icf-verify`
//! alone.

pub(crate) mod read;
pub(crate) mod write;
