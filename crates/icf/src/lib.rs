//! icf: the pipeline as a library, a directory per phase: `load/` (the
//! input files into one [`Program`]: objects, the reference targets they
//! share, function pieces), `analyse/` (candidates, keys, significance,
//! partition and plan: [`Analysis::run`]), `report/` (what folds and why
//! not), `write/` (the plan as rewritten objects) and `link/` (`icf
//! link`: read the link command, run the phases above over its inputs,
//! run the real linker on the rewritten copies: [`link()`]).
//!
//! [`Inputs`] owns the memory-mapped files; a [`Program`] borrows them.
//! Lifting is parallel and deterministic: results come back in input
//! order whatever the thread count.
//!
//! This crate returns values and errors with context (`reading
//! libfoo.a(bar.o): section 12 '.text': ...`); `icf-cli` renders them and
//! exits. The one exception is `icf link`, which runs inside a build: its
//! warnings (a plain relink after an internal failure, `-v` timings, what
//! a fold after the link did) go to stderr as it goes, as a linker's do.

mod analyse;
mod link;
mod linker_script;
mod load;
pub mod memory;
mod names;
mod options;
mod report;
mod write;

pub use analyse::analysis::{Analysis, Plan, Timings};
pub use analyse::attributes::output_section_class;
pub use analyse::candidates::{CandidateInfo, Origin};
pub use analyse::data_uses::{DataReference, VtableEntry, VtableName};
pub use analyse::key_cache::{CacheStats, PendingWrites};
pub use analyse::significance::Significance;
pub use icf_fold::plan::Mode;
pub use icf_fold::{CandidateId, ClassId};
pub use icf_object::is_linked_image;
pub use link::after_link::{AfterLink, PostLinked, ShrinkFn, ShrinkRequest};
pub use link::link_command::{LinkCommand, LinkInput, LinkerFlavor};
pub use link::linker::{LinkOutcome, Verifier, VerifyFn};
pub use link::run::{LinkOptions, link};
pub use linker_script::{Placement, ScriptMap};
pub use load::live::live_sections;
pub use load::objects::SymbolRef;
pub use load::program::{
    Exports, FunctionId, FunctionInfo, GcRoots, Inputs, LoadedObject, ObjectId, Options, Program,
};
pub use load::targets::{ExtendedTargets, Target, TargetTable};
pub use names::{demangle, fnv1a};
pub use options::{CacheChoice, CacheSettings, PlanOptions, PlantKind, PlantedFold};
pub use report::dump::{DumpOptions, LiftStats, dump, lift_stats};
pub use report::savings::{
    BinarySizes, Group, IMAGE_ESTIMATE, Member, NearDuplicate, REPORT_VERSION, Report, TextOptions,
    Totals,
};
pub use write::{
    FoldedFile, OutputCacheStats, OutputKind, write_atomically, write_outputs, write_outputs_cached,
};
