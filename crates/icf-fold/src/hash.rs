//! The hash function of the structural hash. The
//! structural hash of identical-function-merging.tex (the block structure,
//! successors in walk order, and the opcode sequence, no operands) is mixed
//! on the key's walk ([`crate::body::structural_hash`]): `compare(F, G) ==
//! Equal` implies `hash(F) == hash(G)`; equal hashes with a different
//! comparison are the near-duplicates ("the same modulo constants and call
//! targets").

use icf_ir::Arch;

/// FxHash's mixing step: fast, and the same on every machine and every run.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Mixer(u64);

impl Mixer {
    /// A structural hash in the making, for a function of `arch`.
    pub(crate) fn new(arch: Arch) -> Mixer {
        Mixer(arch as u64)
    }

    pub(crate) fn add(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    pub(crate) fn finish(self) -> u64 {
        self.0
    }
}
