//! icf-fuzz: structured mutation fuzzing of every format icf reads, on the
//! stable toolchain (no `cargo fuzz`, no sanitizers).
//!
//! Seeds are real objects and archives built from the fixture sources
//! ([`seeds`]), ELF and Mach-O; [`layout`] finds their meaningful fields, [`mutate`] changes
//! one to four of them (or bytes, lengths, splices), and [`oracle`] runs the
//! result through icf in process and judges it: no panic, no hang, and an
//! error that names the input. [`campaign`] drives it for `cargo xtask
//! fuzz-parse` and for the fixed-seed test in `tests/fuzz_parse.rs`.
//!
//! Beside it, [`programs`] is the differential campaign's (`cargo xtask
//! fuzz`): it generates random multi-file C programs (one seed gives one
//! program, its flags and its linker), and [`programs::run`] builds, folds,
//! links, runs and verifies each, planting one wrong fold verify must
//! reject ([`programs::plant`]). xtask holds only the campaign's options,
//! workers and summary.
//!
//! Assumption: icf's contract is the one in CONTRIBUTING.md (bad input is a
//! located `icf_object::Error`, never a panic); everything else here follows
//! from judging that contract on inputs close to real ones.

pub mod campaign;
pub mod case;
pub mod layout;
mod macho_layout;
pub mod mutate;
pub mod oracle;
pub mod programs;
pub mod rng;
mod seed_layout;
pub mod seeds;

pub use campaign::{Budget, Campaign, CampaignReport, FindingRecord};
pub use case::{Case, CaseFile, InputKind, RunOptions};
pub use oracle::{Finding, FindingKind, Outcome, run_case};
pub use seeds::{Seed, build_seeds};
