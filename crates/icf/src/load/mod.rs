//! Phase 1, loading: the input files mapped and parsed into one
//! [`program::Program`] (objects, the reference targets they share, their
//! function pieces, which sections a `--gc-sections` link keeps, how the
//! link resolves each name, its COMDAT groups by signature), and each piece
//! lifted on demand.

pub(crate) mod comdat_groups;
pub(crate) mod lift;
pub(crate) mod live;
pub(crate) mod objects;
pub(crate) mod program;
pub(crate) mod resolution;
pub(crate) mod targets;
