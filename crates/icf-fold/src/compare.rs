//! The total order on candidates: LLVM MergeFunctions' `FunctionComparator`,
//! carried over to machine code. One `cmp_*` per aspect, in a fixed order;
//! the first that is not equal decides.
//!
//! | step here | LLVM MergeFunctions (`llvm/lib/Transforms/Utils/FunctionComparator.cpp`) |
//! |---|---|
//! | [`cmp_attrs`]: kind, arch, output-section class, unwind description, layout sensitivity, personality and LSDA | `compare()` step 1: attributes, GC, section, var-args, calling convention |
//! | [`cmp_walk`]: block count, then block by block in walk order | `compare()`: the CFG-ordered walk from the entry, successors in terminator order |
//! | [`cmp_block`]: successors, then instructions pairwise, a shorter block is less | `compare(const BasicBlock*, const BasicBlock*)`, steps 3-4 |
//! | [`cmp_inst`]: opcode, flags, operand count, operands, layout | `cmpOperation` (opcode, operand count, subclass optional data), then operands |
//! | [`cmp_operand`]: registers and immediates as numbers | `cmpConstants` / `cmpNumbers` |
//! | memory operand size | `cmpType` |
//! | `Block` operands by serial number | `cmpValues` association of basic blocks |
//! | [`cmp_ref`]: target by the class of the candidate it names, then addend, kind, use | `cmpValues` on globals, and the Deferred re-check of callers |
//!
//! Machine code differs from LLVM IR in one respect the table hides: blocks
//! the walk does not reach are not dropped. The lifter orders them after the
//! walked ones, so they are compared like the rest.
//!
//! Every step compares a value computed from one side alone (given the class
//! of each target), so the order is a lexicographic order on per-candidate
//! keys: reflexive, antisymmetric, transitive and total.

use crate::{Attrs, Candidate, ClassId, KeyedCandidate};
use icf_ir::{Block, Disp, Function, Inst, Mem, Operand, Ref, TargetId};
use std::cmp::Ordering;

/// The class of the candidate a reference target names.
pub trait TargetClasses {
    /// `None` when the target is not a candidate (a symbol resolved by name, writable data...).
    fn class_of(&self, target: TargetId) -> Option<ClassId>;
}

/// Where two candidates first differ.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Step {
    Kind,
    Arch,
    SectionClass,
    Unwind,
    LayoutSensitivity,
    /// The personality routine or LSDA (`index` into [`crate::Attrs::refs`]).
    UnwindRef {
        index: u32,
    },
    BlockCount,
    Successors {
        block: u32,
    },
    Reached {
        block: u32,
    },
    Opcode {
        block: u32,
        inst: u32,
    },
    Flags {
        block: u32,
        inst: u32,
    },
    OperandCount {
        block: u32,
        inst: u32,
    },
    Operand {
        block: u32,
        inst: u32,
        operand: u32,
    },
    /// Instruction offsets, compared only for layout-sensitive candidates.
    Layout {
        block: u32,
        inst: u32,
    },
    /// One block ends before the other.
    BlockLength {
        block: u32,
    },
    /// What runs after the last instruction.
    FallThrough,
}

/// The first difference between two candidates.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Difference {
    pub ordering: Ordering,
    pub step: Step,
    /// When two references differ by target: the left and right targets.
    pub targets: Option<(TargetId, TargetId)>,
}

type Outcome = Result<(), Difference>;

fn differ(ordering: Ordering, step: impl FnOnce() -> Step) -> Outcome {
    match ordering {
        Ordering::Equal => Ok(()),
        ordering => Err(Difference {
            ordering,
            step: step(),
            targets: None,
        }),
    }
}

/// Compares two candidates; `Equal` means they may fold.
pub fn compare(left: Candidate<'_>, right: Candidate<'_>, classes: &dyn TargetClasses) -> Ordering {
    match first_difference(left, right, classes) {
        None => Ordering::Equal,
        Some(difference) => difference.ordering,
    }
}

/// The first step at which `left` and `right` differ, `None` when they are equal.
pub fn first_difference(
    left: Candidate<'_>,
    right: Candidate<'_>,
    classes: &dyn TargetClasses,
) -> Option<Difference> {
    cmp_attrs(
        (left.function.arch, left.attrs),
        (right.function.arch, right.attrs),
        classes,
    )
    .and_then(|()| cmp_walk(left, right, classes))
    .err()
}

/// Compares the keys of two candidates ([`crate::body`]): a total order on
/// the values [`compare`] looks at, `Equal` exactly when [`compare`] says
/// `Equal`, at the cost of comparing two code fingerprints and a pass
/// over the references. Unequal candidates may come in another order than
/// under [`compare`] (fingerprints, not values; targets last): the
/// partition depends only on which candidates are equal and on candidate
/// indices.
pub fn compare_bodies(
    left: KeyedCandidate<'_>,
    right: KeyedCandidate<'_>,
    classes: &dyn TargetClasses,
) -> Ordering {
    let attrs = cmp_attrs(
        (left.body.arch, left.attrs),
        (right.body.arch, right.attrs),
        classes,
    );
    if let Err(difference) = attrs {
        return difference.ordering;
    }
    let (l, r) = (left.body, right.body);
    // A body alone equals no other: its code is its candidate's number.
    l.alone
        .cmp(&r.alone)
        .then_with(|| l.code().cmp(&r.code()))
        .then_with(|| {
            if left.attrs.layout_sensitive {
                l.layout().cmp(&r.layout())
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| {
            let key = |target| target_key(target, classes);
            l.refs()
                .iter()
                .map(|r| key(r.target))
                .cmp(r.refs().iter().map(|r| key(r.target)))
        })
}

fn cmp_attrs(
    (left_arch, l): (icf_ir::Arch, &Attrs),
    (right_arch, r): (icf_ir::Arch, &Attrs),
    classes: &dyn TargetClasses,
) -> Outcome {
    differ(l.kind.cmp(&r.kind), || Step::Kind)?;
    differ(left_arch.cmp(&right_arch), || Step::Arch)?;
    differ(l.section_class.cmp(&r.section_class), || Step::SectionClass)?;
    differ(l.unwind.cmp(&r.unwind), || Step::Unwind)?;
    differ(l.layout_sensitive.cmp(&r.layout_sensitive), || {
        Step::LayoutSensitivity
    })?;
    differ(l.refs.len().cmp(&r.refs.len()), || Step::UnwindRef {
        index: 0,
    })?;
    for (index, (lr, rr)) in l.refs.iter().zip(&r.refs).enumerate() {
        cmp_ref(lr, rr, classes, || Step::UnwindRef {
            index: index as u32,
        })?;
    }
    Ok(())
}

fn cmp_walk(left: Candidate<'_>, right: Candidate<'_>, classes: &dyn TargetClasses) -> Outcome {
    let (l, r) = (left.function, right.function);
    differ(l.blocks.len().cmp(&r.blocks.len()), || Step::BlockCount)?;
    let layout = left.attrs.layout_sensitive;
    for (index, (lb, rb)) in l.blocks.iter().zip(&r.blocks).enumerate() {
        cmp_block(l, lb, r, rb, index as u32, layout, classes)?;
    }
    // What runs after the last instruction (a piece falling into the next).
    match (l.fall_through, r.fall_through) {
        (Some(lr), Some(rr)) => cmp_ref(l.ref_(lr), r.ref_(rr), classes, || Step::FallThrough),
        (lr, rr) => differ(lr.is_some().cmp(&rr.is_some()), || Step::FallThrough),
    }
}

fn cmp_block(
    l: &Function,
    lb: &Block,
    r: &Function,
    rb: &Block,
    block: u32,
    layout: bool,
    classes: &dyn TargetClasses,
) -> Outcome {
    // Successors are blocks, associated by serial number (their walk position).
    differ(lb.succs.as_slice().cmp(rb.succs.as_slice()), || {
        Step::Successors { block }
    })?;
    differ(lb.reached.cmp(&rb.reached), || Step::Reached { block })?;
    let (li, ri) = (l.block_insts(lb), r.block_insts(rb));
    for (index, (linst, rinst)) in li.iter().zip(ri).enumerate() {
        cmp_inst(l, linst, r, rinst, block, index as u32, layout, classes)?;
    }
    differ(li.len().cmp(&ri.len()), || Step::BlockLength { block })
}

#[allow(clippy::too_many_arguments)] // Both sides and the position, as in FunctionComparator.
fn cmp_inst(
    l: &Function,
    li: &Inst,
    r: &Function,
    ri: &Inst,
    block: u32,
    inst: u32,
    layout: bool,
    classes: &dyn TargetClasses,
) -> Outcome {
    differ(li.op.cmp(&ri.op), || Step::Opcode { block, inst })?;
    differ(li.flags.cmp(&ri.flags), || Step::Flags { block, inst })?;
    let (lo, ro) = (l.inst_operands(li), r.inst_operands(ri));
    differ(lo.len().cmp(&ro.len()), || Step::OperandCount {
        block,
        inst,
    })?;
    for (index, (lop, rop)) in lo.iter().zip(ro).enumerate() {
        cmp_operand(l, *lop, r, *rop, classes, || Step::Operand {
            block,
            inst,
            operand: index as u32,
        })?;
    }
    if layout {
        differ((li.at, li.len).cmp(&(ri.at, ri.len)), || Step::Layout {
            block,
            inst,
        })?;
    }
    Ok(())
}

fn operand_rank(operand: &Operand) -> u8 {
    match operand {
        Operand::Reg(_) => 0,
        Operand::Imm(_) | Operand::Imm64(_) => 1,
        Operand::Mem(_) => 2,
        Operand::Block(_) => 3,
        Operand::Ref(_) => 4,
        Operand::Opaque(_) => 5,
    }
}

fn cmp_operand(
    l: &Function,
    lo: Operand,
    r: &Function,
    ro: Operand,
    classes: &dyn TargetClasses,
    step: impl Fn() -> Step + Copy,
) -> Outcome {
    differ(operand_rank(&lo).cmp(&operand_rank(&ro)), step)?;
    match (lo, ro) {
        (Operand::Reg(a), Operand::Reg(b)) => differ(a.cmp(&b), step),
        (Operand::Imm(_) | Operand::Imm64(_), _) => {
            differ(l.imm_value(lo).cmp(&r.imm_value(ro)), step)
        }
        (Operand::Block(a), Operand::Block(b)) => differ(a.cmp(&b), step),
        (Operand::Mem(a), Operand::Mem(b)) => cmp_mem(l, l.mem(a), r, r.mem(b), classes, step),
        (Operand::Ref(a), Operand::Ref(b)) => cmp_ref(l.ref_(a), r.ref_(b), classes, step),
        (Operand::Opaque(a), Operand::Opaque(b)) => {
            let (a, b) = (&l.opaque_run(a).bytes, &r.opaque_run(b).bytes);
            differ(a.len().cmp(&b.len()).then_with(|| a.cmp(b)), step)
        }
        // Equal ranks mean equal variants.
        _ => Ok(()),
    }
}

fn cmp_mem(
    l: &Function,
    lm: &Mem,
    r: &Function,
    rm: &Mem,
    classes: &dyn TargetClasses,
    step: impl Fn() -> Step + Copy,
) -> Outcome {
    let registers =
        (lm.base, lm.index, lm.scale, lm.seg).cmp(&(rm.base, rm.index, rm.scale, rm.seg));
    differ(registers, step)?;
    // The accessed size and type: cmpType.
    differ(lm.size.cmp(&rm.size), step)?;
    let rank = |disp: &Disp| match disp {
        Disp::Imm(_) => 0,
        Disp::Block(_) => 1,
        Disp::Ref(_) => 2,
    };
    differ(rank(&lm.disp).cmp(&rank(&rm.disp)), step)?;
    match (lm.disp, rm.disp) {
        (Disp::Imm(a), Disp::Imm(b)) => differ(a.cmp(&b), step),
        (Disp::Block(a), Disp::Block(b)) => differ(a.cmp(&b), step),
        (Disp::Ref(a), Disp::Ref(b)) => cmp_ref(l.ref_(a), r.ref_(b), classes, step),
        _ => Ok(()),
    }
}

/// References compare by the class of their target when it is a candidate,
/// by target id otherwise (ids are interned: the same name is the same id),
/// candidates first; then addend, relocation kind and use.
fn cmp_ref(l: &Ref, r: &Ref, classes: &dyn TargetClasses, step: impl FnOnce() -> Step) -> Outcome {
    let target_order = target_key(l.target, classes).cmp(&target_key(r.target, classes));
    let ordering = target_order
        .then(l.addend.cmp(&r.addend))
        .then(l.kind.cmp(&r.kind))
        .then(l.use_.cmp(&r.use_));
    match ordering {
        Ordering::Equal => Ok(()),
        ordering => Err(Difference {
            ordering,
            step: step(),
            targets: (target_order != Ordering::Equal).then_some((l.target, r.target)),
        }),
    }
}

/// What a reference target compares by: the class of the candidate it
/// names, or else the target itself (ids are interned: the same name is the
/// same id), candidates first.
fn target_key(target: TargetId, classes: &dyn TargetClasses) -> (bool, u32) {
    match classes.class_of(target) {
        Some(class) => (false, class.0),
        None => (true, target.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Body;
    use crate::body::structural_hash;
    use crate::{Attrs, Kind};
    use icf_ir::{Arch, BlockId, Opcode, RefKind, Reg, Use};
    use proptest::prelude::*;

    /// Targets 0..4 are candidates in classes `target % 2`; the rest are not.
    struct TwoClasses;

    impl TargetClasses for TwoClasses {
        fn class_of(&self, target: TargetId) -> Option<ClassId> {
            (target.0 < 4).then_some(ClassId(target.0 % 2))
        }
    }

    #[derive(Clone, Debug)]
    enum OperandSpec {
        Reg(u16),
        Imm(i64),
        Block(u32),
        /// Target, addend, use.
        Ref(u32, i64, Use),
        Mem(u16, i64),
        /// A memory operand whose displacement is a block of the function.
        MemBlock(u16, u32),
        /// A memory operand whose displacement is a reference: target, addend.
        MemRef(u16, u32, i64),
        Opaque(Vec<u8>),
    }

    type BlockSpec = (Vec<u32>, Vec<(u32, u32, Vec<OperandSpec>)>);

    /// A function: its blocks, whether it is data, its attribute references
    /// (personality, LSDA) and where it falls through to, as (target, addend).
    #[derive(Clone, Debug)]
    struct FunctionSpec {
        blocks: Vec<BlockSpec>,
        data: bool,
        attr_refs: Vec<(u32, i64)>,
        fall_through: Option<(u32, i64)>,
    }

    fn build(spec: &FunctionSpec) -> (Function, Attrs) {
        let mut f = Function::new(Arch::X86_64, 0);
        let count = spec.blocks.len() as u32;
        let reference = |target: u32, addend: i64, use_: Use| Ref {
            target: TargetId(target),
            addend,
            kind: RefKind(2),
            use_,
        };
        let mut at = 0;
        for (succs, insts) in &spec.blocks {
            let first = f.insts.len() as u32;
            for (op, flags, operands) in insts {
                let ops: Vec<Operand> = operands
                    .iter()
                    .map(|operand| match operand {
                        OperandSpec::Reg(r) => Operand::Reg(Reg(*r)),
                        OperandSpec::Imm(v) => f.imm(*v),
                        OperandSpec::Block(b) => Operand::Block(BlockId(b % count)),
                        OperandSpec::Ref(t, a, use_) => {
                            Operand::Ref(f.push_ref(reference(*t, *a, *use_)))
                        }
                        OperandSpec::Mem(base, disp) => Operand::Mem(f.push_mem(Mem {
                            base: Reg(*base),
                            index: Reg::NONE,
                            scale: 1,
                            seg: Reg::NONE,
                            size: 4,
                            disp: Disp::Imm(*disp),
                        })),
                        OperandSpec::MemBlock(base, block) => Operand::Mem(f.push_mem(Mem {
                            base: Reg(*base),
                            index: Reg::NONE,
                            scale: 1,
                            seg: Reg::NONE,
                            size: 8,
                            disp: Disp::Block(BlockId(block % count)),
                        })),
                        OperandSpec::MemRef(base, t, a) => {
                            let r = f.push_ref(reference(*t, *a, Use::Access));
                            Operand::Mem(f.push_mem(Mem {
                                base: Reg(*base),
                                index: Reg::NONE,
                                scale: 1,
                                seg: Reg::NONE,
                                size: 8,
                                disp: Disp::Ref(r),
                            }))
                        }
                        OperandSpec::Opaque(bytes) => {
                            Operand::Opaque(f.push_opaque(icf_ir::OpaqueRun {
                                bytes: bytes.clone().into_boxed_slice(),
                                reason: icf_ir::OpaqueReason::Data,
                            }))
                        }
                    })
                    .collect();
                f.push_inst(Opcode(*op), *flags, &ops, at, 1);
                at += 1;
            }
            f.blocks.push(icf_ir::Block {
                insts: first..f.insts.len() as u32,
                succs: succs.iter().map(|s| BlockId(s % count)).collect(),
                reached: true,
            });
        }
        f.size = at;
        if let Some((target, addend)) = spec.fall_through {
            f.fall_through = Some(f.push_ref(reference(target, addend, Use::Jump)));
        }
        let attrs = Attrs {
            kind: if spec.data { Kind::Data } else { Kind::Code },
            section_class: 0,
            unwind: None,
            layout_sensitive: false,
            refs: spec
                .attr_refs
                .iter()
                .map(|&(t, a)| reference(t, a, Use::Access))
                .collect(),
        };
        (f, attrs)
    }

    fn operand() -> impl Strategy<Value = OperandSpec> {
        let use_ = prop_oneof![
            Just(Use::Call),
            Just(Use::Jump),
            Just(Use::Access),
            Just(Use::Address)
        ];
        prop_oneof![
            (0u16..3).prop_map(OperandSpec::Reg),
            // Both forms: inline, and wider than 32 bits.
            prop_oneof![-2i64..2, (1i64 << 40)..(1i64 << 40) + 2].prop_map(OperandSpec::Imm),
            (0u32..3).prop_map(OperandSpec::Block),
            (0u32..6, -1i64..1, use_).prop_map(|(t, a, u)| OperandSpec::Ref(t, a, u)),
            (0u16..2, 0i64..2).prop_map(|(b, d)| OperandSpec::Mem(b, d)),
            (0u16..2, 0u32..3).prop_map(|(b, k)| OperandSpec::MemBlock(b, k)),
            (0u16..2, 0u32..6, -1i64..1).prop_map(|(b, t, a)| OperandSpec::MemRef(b, t, a)),
            prop::collection::vec(0u8..3, 0..3).prop_map(OperandSpec::Opaque),
        ]
    }

    fn function() -> impl Strategy<Value = FunctionSpec> {
        let inst = (0u32..3, 0u32..2, prop::collection::vec(operand(), 0..3));
        let block = (
            prop::collection::vec(0u32..3, 0..3),
            prop::collection::vec(inst, 1..4),
        );
        let target = (0u32..6, -1i64..1);
        (
            prop::collection::vec(block, 1..4),
            prop::bool::weighted(0.1),
            prop::collection::vec(target.clone(), 0..2),
            prop::option::weighted(0.3, target),
        )
            .prop_map(|(blocks, data, attr_refs, fall_through)| FunctionSpec {
                blocks,
                data,
                attr_refs,
                fall_through,
            })
    }

    /// `spec` with every candidate target replaced by the other candidate
    /// of its class (0 <-> 2, 1 <-> 3 under [`TwoClasses`]): an equal
    /// function by construction, whose references name other targets.
    fn with_twin_targets(spec: &FunctionSpec) -> FunctionSpec {
        let twin = |t: u32| if t < 4 { t ^ 2 } else { t };
        let mut spec = spec.clone();
        for (_, insts) in &mut spec.blocks {
            for (_, _, operands) in insts {
                for operand in operands {
                    match operand {
                        OperandSpec::Ref(t, _, _) | OperandSpec::MemRef(_, t, _) => *t = twin(*t),
                        _ => {}
                    }
                }
            }
        }
        for (t, _) in &mut spec.attr_refs {
            *t = twin(*t);
        }
        if let Some((t, _)) = &mut spec.fall_through {
            *t = twin(*t);
        }
        spec
    }

    fn cmp(a: &(Function, Attrs), b: &(Function, Attrs)) -> Ordering {
        compare(
            Candidate {
                function: &a.0,
                attrs: &a.1,
            },
            Candidate {
                function: &b.0,
                attrs: &b.1,
            },
            &TwoClasses,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn reflexive_and_hash_consistent(a in function(), b in function()) {
            let (a, b) = (build(&a), build(&b));
            prop_assert_eq!(cmp(&a, &a), Ordering::Equal);
            if cmp(&a, &b) == Ordering::Equal {
                prop_assert_eq!(structural_hash(&a.0), structural_hash(&b.0));
            }
        }

        /// Equal pairs built on purpose, not found by chance: the same
        /// function with every reference naming another member of its
        /// target's class, and shifted instruction offsets. They compare
        /// equal by the walk and by the keys, and hash alike.
        #[test]
        fn constructed_equal_pairs_are_equal_and_hash_alike(a in function(), shift in 0u32..3) {
            let twin = with_twin_targets(&a);
            let (a, mut b) = (build(&a), build(&twin));
            for inst in &mut b.0.insts {
                inst.at += shift;
            }
            prop_assert_eq!(cmp(&a, &b), Ordering::Equal);
            prop_assert_eq!(structural_hash(&a.0), structural_hash(&b.0));
            let (ka, kb) = (Body::of(&a.0), Body::of(&b.0));
            prop_assert_eq!(ka.structural_hash, kb.structural_hash);
            prop_assert_eq!(ka.code(), kb.code());
            let left = KeyedCandidate { body: &ka, attrs: &a.1 };
            let right = KeyedCandidate { body: &kb, attrs: &b.1 };
            prop_assert_eq!(compare_bodies(left, right, &TwoClasses), Ordering::Equal);
        }

        /// A body written for icf's cache reads back equal, with its
        /// targets renumbered both ways; a truncated one never reads.
        #[test]
        fn stored_bodies_read_back_equal(a in function(), layout in any::<bool>()) {
            let (f, _) = build(&a);
            let body = if layout { Body::with_layout(&f) } else { Body::of(&f) };
            let mut bytes = vec![0xee];
            body.write_to(&mut bytes, |t| t.0 + 5);
            body.write_to(&mut bytes, |t| t.0 + 5);
            let mut input = &bytes[1..];
            for _ in 0..2 {
                let read = Body::read_from(&mut input, |n| n.checked_sub(5).map(TargetId));
                prop_assert_eq!(read.as_ref(), Some(&body));
            }
            prop_assert!(input.is_empty());
            let one = (bytes.len() - 1) / 2;
            for length in 0..one {
                let mut short = &bytes[1..1 + length];
                prop_assert_eq!(Body::read_from(&mut short, |n| Some(TargetId(n))), None);
            }
            if !body.refs().is_empty() {
                let mut input = &bytes[1..];
                prop_assert_eq!(Body::read_from(&mut input, |_| None), None);
            }
        }

        /// `b` is `a` with at most one operand replaced, so that equal and
        /// nearly equal pairs are common.
        #[test]
        fn keys_order_like_the_walk(
            a in function(),
            edit in prop::option::of((any::<prop::sample::Index>(), any::<prop::sample::Index>(), operand())),
            layout_sensitive in any::<bool>(),
            shift in 0u32..2,
        ) {
            let mut b = a.clone();
            if let Some((block, inst, new)) = edit {
                let block_index = block.index(b.blocks.len());
                let block = &mut b.blocks[block_index].1;
                let inst_index = inst.index(block.len());
                let operands = &mut block[inst_index].2;
                match operands.len() {
                    0 => operands.push(new),
                    n => operands[n - 1] = new,
                }
            }
            let (mut a, mut b) = (build(&a), build(&b));
            for inst in &mut b.0.insts {
                inst.at += shift;
            }
            a.1.layout_sensitive = layout_sensitive;
            b.1.layout_sensitive = layout_sensitive;
            let (ka, kb) = (Body::with_layout(&a.0), Body::with_layout(&b.0));
            let left = KeyedCandidate { body: &ka, attrs: &a.1 };
            let right = KeyedCandidate { body: &kb, attrs: &b.1 };
            let by_key = compare_bodies(left, right, &TwoClasses);
            prop_assert_eq!(by_key == Ordering::Equal, cmp(&a, &b) == Ordering::Equal);
            prop_assert_eq!(by_key, compare_bodies(right, left, &TwoClasses).reverse());
            prop_assert_eq!(compare_bodies(left, left, &TwoClasses), Ordering::Equal);
        }

        #[test]
        fn antisymmetric_and_total(a in function(), b in function()) {
            let (a, b) = (build(&a), build(&b));
            prop_assert_eq!(cmp(&a, &b), cmp(&b, &a).reverse());
        }

        #[test]
        fn transitive(a in function(), b in function(), c in function()) {
            let mut all = [build(&a), build(&b), build(&c)];
            all.sort_by(cmp);
            prop_assert_ne!(cmp(&all[0], &all[1]), Ordering::Greater);
            prop_assert_ne!(cmp(&all[1], &all[2]), Ordering::Greater);
            prop_assert_ne!(cmp(&all[0], &all[2]), Ordering::Greater);
        }
    }

    #[test]
    fn references_compare_by_class() {
        let call = |target| FunctionSpec {
            blocks: vec![(
                vec![],
                vec![(1, 0, vec![OperandSpec::Ref(target, 0, Use::Call)])],
            )],
            data: false,
            attr_refs: Vec::new(),
            fall_through: None,
        };
        // Targets 0 and 2 are in class 0; 1 is in class 1; 5 is no candidate.
        let (f0, f2, f1, f5) = (
            build(&call(0)),
            build(&call(2)),
            build(&call(1)),
            build(&call(5)),
        );
        assert_eq!(cmp(&f0, &f2), Ordering::Equal);
        assert_ne!(cmp(&f0, &f1), Ordering::Equal);
        assert_eq!(cmp(&f0, &f5), Ordering::Less);
        let difference = first_difference(
            Candidate {
                function: &f0.0,
                attrs: &f0.1,
            },
            Candidate {
                function: &f1.0,
                attrs: &f1.1,
            },
            &TwoClasses,
        )
        .expect("different");
        assert_eq!(
            difference.step,
            Step::Operand {
                block: 0,
                inst: 0,
                operand: 0
            }
        );
        assert_eq!(difference.targets, Some((TargetId(0), TargetId(1))));
    }
}
