//! The hash function of the structural hash and of code bytes. The
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

/// A hash of `bytes` (a body's code), eight bytes at a time.
pub fn bytes_hash(bytes: &[u8]) -> u64 {
    let mut mixer = Mixer(bytes.len() as u64);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        mixer.add(u64::from_le_bytes(word));
    }
    let mut tail = [0; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mixer.add(u64::from_le_bytes(tail));
    mixer.0
}
