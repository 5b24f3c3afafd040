//! icf: the pipeline as a library, from input files to lifted functions.
//!
//! [`Inputs`] owns the memory-mapped files; a [`Program`] borrows them and
//! holds every parsed object, the table of reference targets shared by all
//! objects, and the function pieces to lift. Lifting is parallel and
//! deterministic: results come back in input order whatever the thread count.
//!
//! Only `icf-cli` prints or exits; this crate returns values and errors with
//! context (`reading libfoo.a(bar.o): section 12 '.text': ...`).

mod after_link;
mod analysis;
mod attributes;
mod candidates;
mod comdat;
mod data_uses;
mod dump;
mod explain;
mod fold;
mod key_cache;
mod keys;
mod lift;
mod link;
mod link_command;
mod linker;
mod linker_script;
mod live;
mod member_facts;
pub mod memory;
mod names;
mod narrow;
mod objects;
mod options;
mod plant;
mod program;
mod report;
mod resolution;
mod significance;
mod targets;

pub use after_link::{AfterLink, PostLinked, ShrinkFn, ShrinkRequest};
pub use analysis::{Analysis, Plan, Timings};
pub use attributes::output_section_class;
pub use candidates::{CandidateInfo, Origin};
pub use data_uses::{DataReference, VtableEntry, VtableName};
pub use dump::{DumpOptions, LiftStats, dump, lift_stats};
pub use fold::{
    FoldedFile, OutputCacheStats, OutputKind, write_atomically, write_outputs, write_outputs_cached,
};
pub use icf_fold::plan::Mode;
pub use icf_fold::{CandidateId, ClassId};
pub use icf_object::is_linked_image;
pub use key_cache::{CacheStats, PendingWrites};
pub use link::{LinkOptions, link};
pub use link_command::{LinkCommand, LinkInput, LinkerFlavor};
pub use linker::{LinkOutcome, Verifier, VerifyFn};
pub use linker_script::{Placement, ScriptMap};
pub use live::live_sections;
pub use names::{demangle, fnv1a};
pub use objects::SymbolRef;
pub use options::{CacheChoice, CacheSettings, PlanOptions, PlantKind, PlantedFold};
pub use program::{
    Exports, FunctionId, FunctionInfo, GcRoots, Inputs, LoadedObject, ObjectId, Options, Program,
};
pub use report::{
    BinarySizes, Group, IMAGE_ESTIMATE, Member, NearDuplicate, REPORT_VERSION, Report, TextOptions,
    Totals,
};
pub use significance::Significance;
pub use targets::{ExtendedTargets, Target, TargetTable};
