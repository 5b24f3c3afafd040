//! The comparator's key of a function, kept instead of its IR.
//!
//! [`crate::compare`] is a lexicographic order on values computed from one
//! side alone, except for reference targets, which compare by the class of
//! the candidate they name. A [`Body`] is exactly that key, serialized: every
//! value [`crate::compare`] looks at, in its order, as self-delimiting
//! LEB128 numbers in [`Body::code`], with the reference targets lifted out
//! into [`Body::refs`] in the order the walk meets them. Two functions
//! compare `Equal` exactly when their codes are equal byte for byte and
//! their targets pairwise name the same class (or the same non-candidate);
//! a property test checks this against the comparator.
//!
//! A program holds every candidate at once; a body is a few bytes per
//! instruction where the IR takes about forty, and its code compares as one
//! `memcmp`. The IR itself is lifted again on demand where a person asks why
//! two functions differ ([`crate::compare::first_difference`]).

use crate::hash::Mixer;
use icf_ir::{Arch, Disp, Function, Operand, Ref, TargetId, Use};

/// A reference to something outside the function, as the partition and the
/// address-significance analysis need it.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct BodyRef {
    pub target: TargetId,
    pub use_: Use,
    /// The reference points past the target's start (a non-zero addend).
    pub interior: bool,
}

/// A function reduced to its comparator key (see the module documentation).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Body {
    pub arch: Arch,
    /// Size in bytes of the code the function was lifted from.
    pub size: u32,
    /// [`structural_hash`] of the function.
    pub structural_hash: u64,
    /// Part of the function is compared byte-exactly.
    pub has_opaque: bool,
    code: Box<[u8]>,
    /// Offset and length of every instruction in walk order, compared only
    /// for layout-sensitive candidates and kept only for them.
    layout: Option<Box<[u8]>>,
    refs: Box<[BodyRef]>,
}

impl Body {
    /// The key of `f`, without its layout.
    pub fn of(f: &Function) -> Body {
        Body::encode(f, false)
    }

    /// The key of `f` with its layout, for a layout-sensitive candidate.
    pub fn with_layout(f: &Function) -> Body {
        Body::encode(f, true)
    }

    fn encode(f: &Function, with_layout: bool) -> Body {
        // About ten bytes per instruction: one allocation, trimmed at the end.
        let opaque: usize = f.opaque.iter().map(|run| run.bytes.len()).sum();
        let mut code = Writer {
            bytes: Vec::with_capacity(16 + 10 * f.insts.len() + opaque),
        };
        let mut layout = Writer::default();
        let mut refs = Vec::with_capacity(f.refs.len());
        let mut push_ref = |code: &mut Writer, r: &Ref| {
            refs.push(BodyRef {
                target: r.target,
                use_: r.use_,
                interior: r.addend != 0,
            });
            code.signed(r.addend);
            code.unsigned(u64::from(r.kind.0));
            code.unsigned(r.use_ as u64);
        };
        // The structure and opcodes go to the structural hash as well.
        let mut structure = Mixer::new(f.arch);
        let mut both = |code: &mut Writer, value: u64| {
            structure.add(value);
            code.unsigned(value);
        };
        both(&mut code, f.blocks.len() as u64);
        for block in &f.blocks {
            both(&mut code, block.succs.len() as u64);
            for succ in &block.succs {
                both(&mut code, u64::from(succ.0));
            }
            both(&mut code, u64::from(block.reached));
            let insts = f.block_insts(block);
            both(&mut code, insts.len() as u64);
            for inst in insts {
                both(&mut code, u64::from(inst.op.0));
                code.unsigned(u64::from(inst.flags));
                let operands = f.inst_operands(inst);
                code.unsigned(operands.len() as u64);
                for &operand in operands {
                    match operand {
                        Operand::Reg(reg) => {
                            code.unsigned(0);
                            code.unsigned(u64::from(reg.0));
                        }
                        Operand::Imm(_) | Operand::Imm64(_) => {
                            code.unsigned(1);
                            code.signed(f.imm_value(operand).unwrap_or_default());
                        }
                        Operand::Mem(id) => {
                            let mem = f.mem(id);
                            code.unsigned(2);
                            code.unsigned(u64::from(mem.base.0));
                            code.unsigned(u64::from(mem.index.0));
                            code.unsigned(u64::from(mem.scale));
                            code.unsigned(u64::from(mem.seg.0));
                            code.unsigned(u64::from(mem.size));
                            match mem.disp {
                                Disp::Imm(value) => {
                                    code.unsigned(0);
                                    code.signed(value);
                                }
                                Disp::Block(block) => {
                                    code.unsigned(1);
                                    code.unsigned(u64::from(block.0));
                                }
                                Disp::Ref(id) => {
                                    code.unsigned(2);
                                    push_ref(&mut code, f.ref_(id));
                                }
                            }
                        }
                        Operand::Block(block) => {
                            code.unsigned(3);
                            code.unsigned(u64::from(block.0));
                        }
                        Operand::Ref(id) => {
                            code.unsigned(4);
                            push_ref(&mut code, f.ref_(id));
                        }
                        Operand::Opaque(id) => {
                            let bytes = &f.opaque_run(id).bytes;
                            code.unsigned(5);
                            code.unsigned(bytes.len() as u64);
                            code.bytes.extend_from_slice(bytes);
                        }
                    }
                }
                if with_layout {
                    layout.unsigned(u64::from(inst.at));
                    layout.unsigned(u64::from(inst.len));
                }
            }
        }
        // What runs after the last instruction, compared after the walk.
        match f.fall_through {
            None => code.unsigned(0),
            Some(id) => {
                code.unsigned(1);
                push_ref(&mut code, f.ref_(id));
            }
        }
        Body {
            arch: f.arch,
            size: f.size,
            structural_hash: structure.finish(),
            has_opaque: f.has_opaque(),
            code: code.bytes.into_boxed_slice(),
            layout: with_layout.then(|| layout.bytes.into_boxed_slice()),
            refs: refs.into_boxed_slice(),
        }
    }

    /// The serialized key, reference targets left out.
    pub fn code(&self) -> &[u8] {
        &self.code
    }

    /// Instruction offsets and lengths, when made [`Body::with_layout`].
    pub fn layout(&self) -> Option<&[u8]> {
        self.layout.as_deref()
    }

    /// References in walk order, one per reference operand.
    pub fn refs(&self) -> &[BodyRef] {
        &self.refs
    }

    /// Points reference `index` at `target` instead. The analysis uses it to
    /// make a reference compare by its target's identity rather than by the
    /// class of the candidate it names; the code (addends, kinds, uses) is
    /// the same either way.
    pub fn set_ref_target(&mut self, index: usize, target: TargetId) {
        if let Some(r) = self.refs.get_mut(index) {
            r.target = target;
        }
    }
}

/// LEB128 numbers, unsigned and zigzag-signed: self-delimiting, so equal
/// byte strings mean equal number sequences.
#[derive(Default)]
struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    fn unsigned(&mut self, mut value: u64) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                self.bytes.push(byte);
                return;
            }
            self.bytes.push(byte | 0x80);
        }
    }

    fn signed(&mut self, value: i64) {
        self.unsigned(((value << 1) ^ (value >> 63)) as u64);
    }
}

/// The structural hash of `f`: its architecture, block count, then per
/// block in walk order the successors, whether the walk reached it, the
/// instruction count and the opcodes. [`Body::of`] computes it on the walk
/// that serializes the comparator key.
pub fn structural_hash(f: &Function) -> u64 {
    Body::of(f).structural_hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_self_delimiting() {
        let encode = |values: &[i64]| {
            let mut w = Writer::default();
            for &v in values {
                w.signed(v);
            }
            w.bytes
        };
        assert_ne!(encode(&[1, 0]), encode(&[128]));
        assert_ne!(encode(&[-1]), encode(&[1]));
        assert_eq!(encode(&[i64::MIN, i64::MAX]).len(), 20);
        let mut w = Writer::default();
        w.unsigned(300);
        assert_eq!(w.bytes, [0xac, 0x02]);
    }
}
