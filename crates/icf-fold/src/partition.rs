//! Optimistic partition refinement to the coarsest stable partition.
//!
//! MergeFunctions keeps a tree of unique functions and gives up on recursion;
//! here every candidate starts in the class of all candidates with the same
//! structural hash and attributes, and each round sorts every class with the
//! comparator, references comparing by the class their target had in the
//! previous round, and splits it into runs of equals. When no class splits,
//! the partition is stable: two candidates share a class exactly when they are
//! equal assuming their callees are, so self-recursive (fact0/fact1) and
//! mutually recursive (ping/pong) functions fold, as in lld and mold.
//!
//! Classes are independent within a round and sorted in parallel; a class's
//! id is its smallest member's index and rounds update ids only after every
//! class is sorted, so the result does not depend on the thread count.

use crate::compare::{TargetClasses, compare_bodies};
use crate::{CandidateId, ClassId, KeyedCandidate};
use icf_ir::TargetId;
use rayon::prelude::*;
use std::cmp::Ordering;

/// The stable partition.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Partition {
    /// The class of each candidate.
    pub class_of: Vec<ClassId>,
    /// The structural hash of each candidate.
    pub hashes: Vec<u64>,
    /// Refinement rounds until nothing split.
    pub rounds: u32,
}

impl Partition {
    /// Members of every class with more than one member, smallest index first,
    /// classes ordered by id.
    pub fn groups(&self) -> Vec<Vec<CandidateId>> {
        let mut members: Vec<Vec<CandidateId>> = vec![Vec::new(); self.class_of.len()];
        for (index, class) in self.class_of.iter().enumerate() {
            members[class.0 as usize].push(CandidateId(index as u32));
        }
        members.into_iter().filter(|m| m.len() > 1).collect()
    }
}

/// Classes of reference targets during a round.
#[derive(Copy, Clone, Debug)]
pub struct ClassMap<'a> {
    /// The candidate each target id names, if any.
    pub target_candidate: &'a [Option<CandidateId>],
    pub class_of: &'a [ClassId],
}

impl TargetClasses for ClassMap<'_> {
    fn class_of(&self, target: TargetId) -> Option<ClassId> {
        let candidate = (*self.target_candidate.get(target.index())?)?;
        Some(self.class_of[candidate.index()])
    }
}

/// Refines `candidates` to the coarsest stable partition. `target_candidate`
/// says which candidate each target id names.
pub fn refine(
    candidates: &[KeyedCandidate<'_>],
    target_candidate: &[Option<CandidateId>],
) -> Partition {
    // Equal keys mean equal codes: buckets by the code's fingerprint are
    // as sound as by structure, and far smaller (the first round compares
    // every bucket's members whole). Both are read from the keys, not
    // copied out.
    let key = |i: usize| {
        let (c, attrs) = (&candidates[i], candidates[i].attrs);
        (
            c.body.structural_hash,
            c.body.code() as u64,
            attrs.kind,
            c.body.arch,
            attrs.section_class,
            attrs.unwind,
            attrs.layout_sensitive,
            // A body alone starts (and stays) in a class of its own.
            c.body.alone.then_some(i),
        )
    };
    let mut order: Vec<u32> = (0..candidates.len() as u32).collect();
    order.par_sort_unstable_by(|&a, &b| key(a as usize).cmp(&key(b as usize)).then(a.cmp(&b)));

    let mut class_of: Vec<ClassId> = (0..candidates.len() as u32).map(ClassId).collect();
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for run in order.chunk_by(|&a, &b| key(a as usize) == key(b as usize)) {
        if run.len() > 1 {
            let first = ClassId(run[0]);
            for &member in run {
                class_of[member as usize] = first;
            }
            groups.push(run.to_vec());
        }
    }
    drop(order);

    // The candidates each member of a class refers to: a class needs
    // sorting again only when a member refers to a candidate whose class
    // just split. A candidate alone in its class never splits, so only
    // members are listed.
    let references = References::of(&groups, candidates, target_candidate);
    // Classes known not to split this round: none of their members refers
    // to a candidate that split in the last one.
    let mut stable = vec![false; groups.len()];
    let mut rounds = 0;
    loop {
        rounds += 1;
        let map = ClassMap {
            target_candidate,
            class_of: &class_of,
        };
        // A class that does not split comes back as it was, not copied.
        let split: Vec<Vec<Vec<u32>>> = std::mem::take(&mut groups)
            .into_par_iter()
            .zip(stable)
            .map(|(group, stable)| {
                if stable {
                    vec![group]
                } else {
                    split_class(group, candidates, &map)
                }
            })
            .collect();
        let mut split_members = vec![false; candidates.len()];
        let mut changed = false;
        for parts in split {
            if parts.len() > 1 {
                changed = true;
                for member in parts.iter().flatten() {
                    split_members[*member as usize] = true;
                }
            }
            for part in parts {
                let id = ClassId(part[0]);
                for &member in &part {
                    class_of[member as usize] = id;
                }
                if part.len() > 1 {
                    groups.push(part);
                }
            }
        }
        if !changed {
            break;
        }
        stable = groups
            .iter()
            .map(|group| {
                !group.iter().any(|&m| {
                    references
                        .of_member(m)
                        .iter()
                        .any(|&r| split_members[r as usize])
                })
            })
            .collect();
    }
    Partition {
        class_of,
        hashes: candidates.iter().map(|c| c.body.structural_hash).collect(),
        rounds,
    }
}

/// For each candidate in a class of two or more, the candidates it refers
/// to, flat: a few bytes per candidate rather than a list each.
struct References {
    /// Per candidate, where its list lies in `flat`; empty for a candidate
    /// alone in its class.
    spans: Vec<std::ops::Range<u32>>,
    flat: Vec<u32>,
}

impl References {
    fn of(
        groups: &[Vec<u32>],
        candidates: &[KeyedCandidate<'_>],
        target_candidate: &[Option<CandidateId>],
    ) -> References {
        let lists: Vec<Vec<Vec<u32>>> = groups
            .par_iter()
            .map(|group| {
                group
                    .iter()
                    .map(|&m| referenced_candidates(&candidates[m as usize], target_candidate))
                    .collect()
            })
            .collect();
        let mut references = References {
            spans: vec![0..0; candidates.len()],
            flat: Vec::new(),
        };
        for (group, lists) in groups.iter().zip(lists) {
            for (&member, list) in group.iter().zip(lists) {
                let start = references.flat.len() as u32;
                references.flat.extend_from_slice(&list);
                references.spans[member as usize] = start..references.flat.len() as u32;
            }
        }
        references
    }

    /// The candidates `member`, a member of a class, refers to.
    fn of_member(&self, member: u32) -> &[u32] {
        let span = &self.spans[member as usize];
        &self.flat[span.start as usize..span.end as usize]
    }
}

/// The candidates `candidate` refers to (operands and unwind references), deduplicated.
fn referenced_candidates(
    candidate: &KeyedCandidate<'_>,
    target_candidate: &[Option<CandidateId>],
) -> Vec<u32> {
    let targets = (candidate.body.refs().iter().map(|r| r.target))
        .chain(candidate.attrs.refs.iter().map(|r| r.target));
    let mut found: Vec<u32> = targets
        .filter_map(|target| target_candidate.get(target.index()).copied().flatten())
        .map(|c| c.0)
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// Sorts one class and cuts it into runs of equal candidates, each run in index order.
fn split_class(
    group: Vec<u32>,
    candidates: &[KeyedCandidate<'_>],
    map: &ClassMap<'_>,
) -> Vec<Vec<u32>> {
    let mut sorted = group;
    let cmp =
        |a: &u32, b: &u32| compare_bodies(candidates[*a as usize], candidates[*b as usize], map);
    sorted.sort_by(|a, b| cmp(a, b).then(a.cmp(b)));
    sorted
        .chunk_by(|a, b| cmp(a, b) == Ordering::Equal)
        .map(<[u32]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Body;
    use crate::{Attrs, Kind};
    use icf_ir::{Arch, Function, Opcode, Operand, Ref, RefKind, Use};
    use smallvec::SmallVec;

    fn attrs() -> Attrs {
        Attrs {
            kind: Kind::Code,
            section_class: 0,
            unwind: None,
            layout_sensitive: false,
            refs: Box::default(),
        }
    }

    /// A one-block function: `op`, then a call to each target.
    fn function(op: u32, calls: &[u32]) -> Function {
        let mut f = Function::new(Arch::X86_64, 0);
        f.push_inst(Opcode(op), 0, &[], 0, 1);
        for (i, &target) in calls.iter().enumerate() {
            let r = f.push_ref(Ref {
                target: TargetId(target),
                addend: 0,
                kind: RefKind(2),
                use_: Use::Call,
            });
            f.push_inst(Opcode(100), 0, &[Operand::Ref(r)], 1 + i as u32, 1);
        }
        f.blocks.push(icf_ir::Block {
            insts: 0..f.insts.len() as u32,
            succs: SmallVec::new(),
            reached: true,
        });
        f.size = f.insts.len() as u32;
        f
    }

    /// Candidate i is target i.
    fn classes(functions: &[Function]) -> Vec<ClassId> {
        let bodies: Vec<Body> = functions.iter().map(Body::of).collect();
        classes_of(&bodies)
    }

    /// The classes of `bodies`, with equal attributes; candidate i is
    /// target i.
    fn classes_of(bodies: &[Body]) -> Vec<ClassId> {
        let attrs = attrs();
        let candidates: Vec<KeyedCandidate<'_>> = bodies
            .iter()
            .map(|body| KeyedCandidate {
                body,
                attrs: &attrs,
            })
            .collect();
        let targets: Vec<Option<CandidateId>> = (0..bodies.len() as u32)
            .map(|i| Some(CandidateId(i)))
            .collect();
        refine(&candidates, &targets).class_of
    }

    /// A body alone (`Body::alone`) is in a class of its own, even where
    /// another body holds its very code bytes or another alone body the
    /// same references; stored and read back, it is still alone.
    #[test]
    fn a_body_alone_shares_no_class() {
        let leaf = function(1, &[]);
        let alone = Body::alone(&leaf, 0);
        let mut stored = Vec::new();
        alone.write_to(&mut stored, |target| target.0);
        let read = |bytes: &[u8]| {
            Body::read_from(&mut &bytes[..], |n| Some(TargetId(n))).expect("a stored body reads")
        };
        assert_eq!(read(&stored), alone);
        // The same bytes with the flags cleared (they follow the arch, the
        // size and the 8-byte hash): a body that is not alone, with the
        // code of one that is.
        let mut forged = stored.clone();
        assert_eq!(forged[10], 2);
        forged[10] = 0;
        let forged = read(&forged);
        assert!(!forged.alone);
        assert_eq!(forged.code(), alone.code());
        let bodies = [alone, Body::alone(&leaf, 1), Body::of(&leaf), forged];
        let class_of = classes_of(&bodies);
        assert_ne!(
            class_of[0], class_of[1],
            "two alone with the same references"
        );
        assert_ne!(class_of[0], class_of[2]);
        assert_ne!(
            class_of[0], class_of[3],
            "alone and not, with the same code"
        );
    }

    #[test]
    fn self_recursion_folds() {
        // fact0 calls fact0, fact1 calls fact1.
        let c = classes(&[function(1, &[0]), function(1, &[1])]);
        assert_eq!(c[0], c[1]);
    }

    #[test]
    fn mutual_recursion_folds_pairwise() {
        // ping0 <-> pong0, ping1 <-> pong1; ping and pong differ in their first op.
        let c = classes(&[
            function(1, &[1]),
            function(2, &[0]),
            function(1, &[3]),
            function(2, &[2]),
        ]);
        assert_eq!(c[0], c[2]);
        assert_eq!(c[1], c[3]);
        assert_ne!(c[0], c[1]);
    }

    #[test]
    fn callers_fold_exactly_when_callees_fold() {
        // 0, 1 identical leaves; 2 a different leaf; 3 calls 0, 4 calls 1, 5 calls 2.
        let c = classes(&[
            function(1, &[]),
            function(1, &[]),
            function(9, &[]),
            function(5, &[0]),
            function(5, &[1]),
            function(5, &[2]),
        ]);
        assert_eq!(c[3], c[4]);
        assert_ne!(c[3], c[5]);
        // A chain: a difference deep in the callees propagates up through rounds.
        let chain = classes(&[
            function(1, &[]),
            function(9, &[]),
            function(5, &[0]),
            function(5, &[1]),
            function(6, &[2]),
            function(6, &[3]),
        ]);
        assert_ne!(chain[4], chain[5]);
    }

    #[test]
    fn class_ids_are_smallest_members() {
        let c = classes(&[
            function(7, &[]),
            function(1, &[]),
            function(7, &[]),
            function(1, &[]),
        ]);
        assert_eq!(c, vec![ClassId(0), ClassId(1), ClassId(0), ClassId(1)]);
    }
}
