//! Where a Mach-O function's code ends. Mach-O symbols have no sizes, so
//! a function's extent first runs to the next symbol (`macho/read.rs`),
//! with whatever follows its code: alignment padding (zeros from the
//! linker, nops from the assembler), which a fold lays out anew, and on
//! x86-64 what is left of the body icf turned into a thunk (a `jmp` over
//! the body's first bytes, the rest of the old instructions behind it up
//! to where the dead-stripped remainder began). Once the x86-64 walk
//! knows which bytes are instructions, a function ends after its last
//! reached instruction or data-in-code run when no reached instruction
//! uses an address in the bytes after it (`lea 1f(%rip)` would): no path
//! runs them and nothing the decoder sees reads them. On AArch64, whose
//! words are decoded linearly, trailing zero words and `nop`s are dropped
//! (a function's last instruction never falls through, and a branch to a
//! trailing `nop` would run into the next function).
//!
//! Main assumption, as for the walk itself: code is not read as data
//! through addresses the decoder cannot see.

use crate::image::{Arch, Image, SymbolId, SymbolKind};
use crate::x86;

/// Shortens every function of `image` to its code. `code_references`
/// (x86-64): the code addresses reached instructions use other than by a
/// branch, sorted.
pub(crate) fn trim_function_ends(image: &mut Image, code_references: &[u64]) {
    let sizes: Vec<(SymbolId, u64)> = (0..image.symbols.len() as u32)
        .map(SymbolId)
        .filter(|&id| image.symbol(id).kind == SymbolKind::Function)
        .filter_map(|id| {
            let s = image.symbol(id);
            let end = match image.arch {
                Arch::X86_64 => x86_code_end(image, s.address, s.end(), code_references),
                Arch::Aarch64 => aarch64_code_end(image, s.address, s.end()),
            };
            (end < s.end()).then(|| (id, end - s.address))
        })
        .collect();
    image.set_symbol_sizes(&sizes);
}

/// Where the code of `[start, end)` ends: after its last reached
/// instruction or data-in-code run, when nothing uses an address after
/// it; else `end`.
fn x86_code_end(image: &Image, start: u64, end: u64, code_references: &[u64]) -> u64 {
    let Some(&last) = image.instruction_starts_in(start, end).last() else {
        return end;
    };
    let Some(bytes) = image.bytes(last, (end - last).min(15)) else {
        return end;
    };
    let mut tail = last.saturating_add(x86::flow(image, bytes, last).len);
    for &(from, to) in &image.data_in_code {
        if from < end && to > tail {
            tail = to.min(end);
        }
    }
    let i = code_references.partition_point(|&a| a < tail);
    let used = code_references.get(i).is_some_and(|&a| a < end);
    if tail < end && !used { tail } else { end }
}

/// Where the code of `[start, end)` ends once trailing zero words and
/// `nop`s are dropped (at least one word is kept).
fn aarch64_code_end(image: &Image, start: u64, end: u64) -> u64 {
    const NOP: u32 = 0xd503_201f;
    let mut code_end = end;
    while code_end >= start.saturating_add(8) {
        match image.read_u32(code_end - 4) {
            Some(0 | NOP) => code_end -= 4,
            _ => break,
        }
    }
    code_end
}
