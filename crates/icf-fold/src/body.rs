//! The comparator's key of a function, kept instead of its IR.
//!
//! [`crate::compare`] is a lexicographic order on values computed from one
//! side alone, except for reference targets, which compare by the class of
//! the candidate they name. A [`Body`] is exactly that key, serialized: every
//! value [`crate::compare`] looks at, in its order, as self-delimiting
//! LEB128 numbers (its *code*), with the reference targets lifted out
//! into [`Body::refs`] in the order the walk meets them. Two functions
//! compare `Equal` exactly when their codes are equal byte for byte and
//! their targets pairwise name the same class (or the same non-candidate);
//! a property test checks this against the comparator.
//!
//! A body keeps its code only as the code's XXH3-128 fingerprint
//! ([`Body::code`]): the partition asks of two codes only whether they
//! are equal, and a program holds every candidate's key at once. The
//! code takes about ten bytes per instruction (a million synthetic
//! functions held 470 MB of it, a third of `icf fold`'s peak memory); the
//! fingerprint takes sixteen bytes per function and compares as two
//! words. Equal fingerprints are taken for equal codes, the same 128-bit
//! equality identical copies of a function already share their keys by
//! (`lift_memo.rs` in `icf`): among a million keys, the chance that two
//! different codes collide is about 10^-27. The IR itself is lifted again
//! on demand where a person asks why two functions differ
//! ([`crate::compare::first_difference`]), and `icf verify` proves every
//! output against its input without any key.

use crate::hash::Mixer;
use crate::leb128::{Reader, Writer};
use icf_ir::{Arch, Disp, Function, Operand, Ref, TargetId, Use};
use std::cell::RefCell;

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
    /// A body [`Body::alone`] made: no key, equal to no other body.
    pub alone: bool,
    /// The code's fingerprint (see the module documentation); for a body
    /// alone, its candidate's number.
    code: u128,
    /// Whether `layout` holds one (see [`Body::layout`]).
    has_layout: bool,
    /// The fingerprint of every instruction's offset and length in walk
    /// order, compared only for layout-sensitive candidates and made only
    /// for them.
    layout: u128,
    refs: Box<[BodyRef]>,
}

/// The fingerprint of a serialized code or layout.
fn fingerprint(bytes: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(bytes)
}

thread_local! {
    /// The code and layout being serialized, reused from one body to the
    /// next on each thread: only their fingerprints are kept.
    static SCRATCH: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
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

    /// The body of candidate `id`, which no other candidate can equal (the
    /// analysis knows it from a hash of its operations no other shares,
    /// without lifting it): its references, which the analyses besides the
    /// comparator read, and no key. It compares equal to itself only.
    pub fn alone(f: &Function, id: u32) -> Body {
        // In whatever order the references come: nothing pairs them with
        // another body's.
        let refs = f
            .refs
            .iter()
            .map(|r| BodyRef {
                target: r.target,
                use_: r.use_,
                interior: r.addend != 0,
            })
            .collect();
        Body::alone_with(f.arch, f.size, refs, id)
    }

    /// A body alone read back (the cache stores them), made candidate
    /// `id`'s: the number it was stored with was another link's. A body
    /// that is not alone comes back as it was.
    pub fn alone_as(self, id: u32) -> Body {
        match self.alone {
            true => Body::alone_with(self.arch, self.size, self.refs, id),
            false => self,
        }
    }

    fn alone_with(arch: Arch, size: u32, refs: Box<[BodyRef]>, id: u32) -> Body {
        let mut structure = Mixer::new(arch);
        structure.add(u64::from(id));
        Body {
            arch,
            size,
            structural_hash: structure.finish(),
            has_opaque: false,
            alone: true,
            code: u128::from(id),
            has_layout: false,
            layout: 0,
            refs,
        }
    }

    fn encode(f: &Function, with_layout: bool) -> Body {
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => {
                let (code, layout) = &mut *scratch;
                Body::encode_with(f, with_layout, code, layout)
            }
            // Not reached (nothing encodes while encoding); fresh buffers
            // would do as well.
            Err(_) => Body::encode_with(f, with_layout, &mut Vec::new(), &mut Vec::new()),
        })
    }

    /// [`Body::encode`], serializing into `code_bytes` and `layout_bytes`
    /// (cleared first, and left holding the serialization).
    fn encode_with(
        f: &Function,
        with_layout: bool,
        code_bytes: &mut Vec<u8>,
        layout_bytes: &mut Vec<u8>,
    ) -> Body {
        code_bytes.clear();
        layout_bytes.clear();
        let mut code = Writer {
            bytes: std::mem::take(code_bytes),
        };
        let mut layout = Writer {
            bytes: std::mem::take(layout_bytes),
        };
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
        let body = Body {
            arch: f.arch,
            size: f.size,
            structural_hash: structure.finish(),
            has_opaque: f.has_opaque(),
            alone: false,
            code: fingerprint(&code.bytes),
            has_layout: with_layout,
            layout: if with_layout {
                fingerprint(&layout.bytes)
            } else {
                0
            },
            refs: refs.into_boxed_slice(),
        };
        *code_bytes = code.bytes;
        *layout_bytes = layout.bytes;
        body
    }

    /// The fingerprint of the serialized key, reference targets left out
    /// (see the module documentation).
    pub fn code(&self) -> u128 {
        self.code
    }

    /// The fingerprint of the instructions' offsets and lengths, when made
    /// [`Body::with_layout`].
    pub fn layout(&self) -> Option<u128> {
        self.has_layout.then_some(self.layout)
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

/// Stored bodies ([`Body::write_to`], [`Body::read_from`]): a link that
/// finds an object's bodies in icf's cache reads them instead of lifting.
impl Body {
    /// Appends the body to `out`, naming each reference target by the
    /// number `target` gives it (the caller's own table of targets).
    pub fn write_to(&self, out: &mut Vec<u8>, mut target: impl FnMut(TargetId) -> u32) {
        let mut w = Writer {
            bytes: std::mem::take(out),
        };
        w.unsigned(u64::from(self.arch.number()));
        w.unsigned(u64::from(self.size));
        w.bytes
            .extend_from_slice(&self.structural_hash.to_le_bytes());
        w.unsigned(
            u64::from(self.has_opaque)
                | u64::from(self.alone) << 1
                | u64::from(self.has_layout) << 2,
        );
        w.bytes.extend_from_slice(&self.code.to_le_bytes());
        if self.has_layout {
            w.bytes.extend_from_slice(&self.layout.to_le_bytes());
        }
        w.unsigned(self.refs.len() as u64);
        for r in self.refs.iter() {
            w.unsigned(u64::from(target(r.target)));
            w.unsigned(r.use_ as u64 * 2 + u64::from(r.interior));
        }
        *out = w.bytes;
    }

    /// Reads a body [`Body::write_to`] wrote from the front of `input`,
    /// advancing it; each stored target number goes through `target`.
    /// `None` when the bytes are not such a body or `target` refuses a
    /// number.
    pub fn read_from(
        input: &mut &[u8],
        mut target: impl FnMut(u32) -> Option<TargetId>,
    ) -> Option<Body> {
        let mut r = Reader(input);
        let arch = Arch::from_number(r.unsigned()?)?;
        let size = u32::try_from(r.unsigned()?).ok()?;
        let structural_hash = u64::from_le_bytes(r.bytes(8)?.try_into().ok()?);
        let (has_opaque, alone, has_layout) = match r.unsigned()? {
            flags @ 0..=7 => (flags & 1 == 1, flags & 2 == 2, flags & 4 == 4),
            _ => return None,
        };
        let code = u128::from_le_bytes(r.bytes(16)?.try_into().ok()?);
        let layout = match has_layout {
            true => u128::from_le_bytes(r.bytes(16)?.try_into().ok()?),
            false => 0,
        };
        let count = usize::try_from(r.unsigned()?).ok()?;
        // Each reference takes at least two bytes: a bad count fails here,
        // before it allocates.
        if count > r.0.len() / 2 {
            return None;
        }
        let mut refs = Vec::with_capacity(count);
        for _ in 0..count {
            let id = target(u32::try_from(r.unsigned()?).ok()?)?;
            let packed = r.unsigned()?;
            let use_ = match packed / 2 {
                0 => Use::Call,
                1 => Use::Jump,
                2 => Use::Access,
                3 => Use::Address,
                _ => return None,
            };
            refs.push(BodyRef {
                target: id,
                use_,
                interior: packed % 2 == 1,
            });
        }
        *input = r.0;
        Some(Body {
            arch,
            size,
            structural_hash,
            has_opaque,
            alone,
            code,
            has_layout,
            layout,
            refs: refs.into_boxed_slice(),
        })
    }
}

/// The structural hash of `f`: its architecture, block count, then per
/// block in walk order the successors, whether the walk reached it, the
/// instruction count and the opcodes. [`Body::of`] computes it on the walk
/// that serializes the comparator key.
pub fn structural_hash(f: &Function) -> u64 {
    Body::of(f).structural_hash
}
