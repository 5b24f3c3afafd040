//! The structural hash of identical-function-merging.tex: the block
//! structure (successors in walk order) and the opcode sequence, no operands.
//! `compare(F, G) == Equal` implies `hash(F) == hash(G)`; equal hashes with a
//! different comparison are the near-duplicates ("the same modulo constants
//! and call targets").

use icf_ir::Function;

/// FxHash's mixing step: fast, and the same on every machine and every run.
#[derive(Copy, Clone, Debug)]
struct Mixer(u64);

impl Mixer {
    fn add(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// The structural hash of `f`.
pub fn structural_hash(f: &Function) -> u64 {
    let mut mixer = Mixer(f.arch as u64);
    mixer.add(f.blocks.len() as u64);
    for block in &f.blocks {
        mixer.add(block.succs.len() as u64);
        for succ in &block.succs {
            mixer.add(u64::from(succ.0));
        }
        mixer.add(u64::from(block.reached));
        let insts = f.block_insts(block);
        mixer.add(insts.len() as u64);
        for inst in insts {
            mixer.add(u64::from(inst.op.0));
        }
    }
    mixer.0
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
