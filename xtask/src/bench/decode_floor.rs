//! The decode floor of a linked program: reading its file, then decoding
//! each function of its `.text` (cut at its function symbols) once, on
//! every core, and nothing else (`icf_arch::Architecture::count_instructions`).
//! `icf shrink` and `icf report BINARY` find the references in linked code
//! by decoding it, so neither can read the image in less; the bench prints
//! the floor beside their times, against the plain lld link.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use object::read::elf::{ElfFile64, FileHeader};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use rayon::prelude::*;

/// What one program's decode floor read, and its fastest round.
#[derive(Debug, Clone, Copy)]
pub(super) struct DecodeFloor {
    pub(super) wall: Duration,
    pub(super) functions: usize,
    pub(super) instructions: usize,
}

/// The floor of the linked program at `path`, the fastest of `runs` rounds.
pub(super) fn measure(path: &Path, runs: u32) -> Result<DecodeFloor> {
    let mut best: Option<DecodeFloor> = None;
    for _ in 0..runs.max(1) {
        let round = once(path)?;
        if best.is_none_or(|best| round.wall < best.wall) {
            best = Some(round);
        }
    }
    best.context("no round ran")
}

fn once(path: &Path) -> Result<DecodeFloor> {
    let started = Instant::now();
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let elf = ElfFile64::<object::Endianness>::parse(&*data)
        .with_context(|| format!("{}: not a 64-bit ELF file", path.display()))?;
    let machine = elf.elf_header().e_machine(elf.endian());
    let Some(arch) = icf_arch::from_elf_machine(machine.0) else {
        bail!(
            "{}: no architecture icf knows (e_machine {})",
            path.display(),
            machine.0
        );
    };
    let text = elf
        .section_by_name(".text")
        .with_context(|| format!("{}: no .text", path.display()))?;
    let (start, code) = (text.address(), text.data()?);
    let end = start + code.len() as u64;
    let mut cuts: Vec<u64> = elf
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && (start..end).contains(&s.address()))
        .map(|s| s.address() - start)
        .chain([0, code.len() as u64])
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let instructions = cuts
        .par_windows(2)
        .map(|cut| {
            let (from, to) = (cut[0] as usize, cut[1] as usize);
            arch.count_instructions(&code[from..to], start + cut[0])
        })
        .sum();
    Ok(DecodeFloor {
        wall: started.elapsed(),
        functions: cuts.len() - 1,
        instructions,
    })
}
