//! `cargo xtask icf target/<profile>/<bin>`: build a cargo binary through
//! icf, write the folded binary beside it and report what folding saved.
//!
//! Any workspace gets the same command from its own xtask in a few lines:
//!
//! ```no_run
//! fn main() -> anyhow::Result<()> {
//!     // When cargo runs this binary as the linker, it links and exits here.
//!     icf_xtask::link_if_invoked_as_linker();
//!     let args: Vec<String> = std::env::args().skip(1).collect();
//!     match args.first().map(String::as_str) {
//!         Some("icf") => icf_xtask::run(&args[1..]),
//!         _ => anyhow::bail!("usage: cargo xtask icf target/release/<bin>"),
//!     }
//! }
//! ```
//!
//! The folded build uses a separate target directory (`target/icf`), so the
//! user's own build is never disturbed; cargo's cache makes rebuilds quick.
//! The xtask binary itself is the linker (`-C linker=<xtask>`): no other
//! program has to be installed.

mod build;
mod sizes;

pub use build::{IcfArgs, link_if_invoked_as_linker, run, run_args};
pub use sizes::{SizeReport, measure};
