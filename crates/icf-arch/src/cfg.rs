//! Blocks and the order they are compared in, for any architecture.
//!
//! Leaders are the entry, the targets of branches inside the function, the
//! offsets something outside jumps to, and every instruction after a
//! terminator. Blocks are ordered by the walk of docs/design.md (MergeFunctions'
//! worklist: pop a block, push its unvisited successors in terminator order),
//! and the blocks the walk does not reach follow in address order: at machine
//! level nothing may silently drop out of a comparison.

use icf_ir::{BlockId, OpaqueReason};
use smallvec::SmallVec;
use std::ops::Range;

/// How control leaves an instruction.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Flow {
    /// Execution continues with the next instruction.
    Next,
    /// A call: execution continues with the next instruction when it
    /// returns (a call at the very end of a section is taken not to).
    Call,
    /// Always goes to the target, inside the function or outside it.
    Jump,
    /// Goes to the target or falls through.
    Branch,
    /// Leaves the function or stops: return, indirect jump, trap.
    Stop,
}

/// What the block builder needs to know about one decoded instruction.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Decoded {
    pub at: u32,
    pub len: u32,
    pub flow: Flow,
    /// A branch target inside the function, as a function offset.
    pub target: Option<u32>,
}

/// One block of the layout.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct LaidBlock {
    /// Indices into the decoded instructions.
    pub insts: Range<usize>,
    pub succs: SmallVec<[BlockId; 2]>,
    pub reached: bool,
}

/// Blocks in walk order, and where each starts.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub(crate) struct Layout {
    pub blocks: Vec<LaidBlock>,
    /// Function offset of each block's first instruction, sorted, with its id.
    starts: Vec<(u32, BlockId)>,
}

impl Layout {
    /// The block starting at function offset `at`.
    pub fn block_at(&self, at: u32) -> Option<BlockId> {
        self.starts
            .binary_search_by_key(&at, |&(start, _)| start)
            .ok()
            .map(|i| self.starts[i].1)
    }
}

/// What [`layout`] checks before it builds any block: every branch target
/// inside the function and every entry point starts an instruction.
pub(crate) fn check_targets(decoded: &[Decoded], entry_points: &[u32]) -> Result<(), OpaqueReason> {
    if decoded.is_empty() {
        return Ok(());
    }
    let starts = |offset: u32| decoded.binary_search_by_key(&offset, |d| d.at).is_ok();
    let targets = decoded.iter().filter_map(|d| d.target);
    match targets
        .chain(entry_points.iter().copied())
        .find(|&t| !starts(t))
    {
        Some(target) => Err(OpaqueReason::TargetInsideInstruction { target }),
        None => Ok(()),
    }
}

/// Splits `decoded` (in address order, contiguous) into blocks and orders them.
pub(crate) fn layout(decoded: &[Decoded], entry_points: &[u32]) -> Result<Layout, OpaqueReason> {
    if decoded.is_empty() {
        return Ok(Layout {
            blocks: Vec::new(),
            starts: Vec::new(),
        });
    }
    check_targets(decoded, entry_points)?;
    // Every target and entry point starts an instruction (checked above).
    let index_of = |offset: u32| decoded.binary_search_by_key(&offset, |d| d.at).ok();
    let mut is_leader = vec![false; decoded.len()];
    is_leader[0] = true;
    for (i, d) in decoded.iter().enumerate() {
        if let Some(t) = d.target.and_then(index_of) {
            is_leader[t] = true;
        }
        if !matches!(d.flow, Flow::Next | Flow::Call) && i + 1 < decoded.len() {
            is_leader[i + 1] = true;
        }
    }
    for t in entry_points.iter().filter_map(|&entry| index_of(entry)) {
        is_leader[t] = true;
    }

    // Blocks in address order.
    let leaders: Vec<usize> = (0..decoded.len()).filter(|&i| is_leader[i]).collect();
    let ranges: Vec<Range<usize>> = leaders
        .iter()
        .enumerate()
        .map(|(k, &start)| start..leaders.get(k + 1).copied().unwrap_or(decoded.len()))
        .collect();
    let block_of_inst = |inst: usize| leaders.partition_point(|&l| l <= inst) - 1;
    let succs_by_address: Vec<SmallVec<[usize; 2]>> = ranges
        .iter()
        .enumerate()
        .map(|(k, range)| {
            let last = &decoded[range.end - 1];
            let target = last.target.and_then(index_of).map(block_of_inst);
            let fall_through = (k + 1 < ranges.len()).then_some(k + 1);
            let mut succs = SmallVec::new();
            match last.flow {
                Flow::Jump => succs.extend(target),
                Flow::Branch => {
                    succs.extend(target);
                    succs.extend(fall_through);
                }
                Flow::Stop => {}
                Flow::Next | Flow::Call => succs.extend(fall_through),
            }
            succs
        })
        .collect();

    // The walk, then the rest in address order.
    let mut order = Vec::with_capacity(ranges.len());
    let mut visited = vec![false; ranges.len()];
    let mut stack = vec![0usize];
    visited[0] = true;
    while let Some(block) = stack.pop() {
        order.push(block);
        for &succ in &succs_by_address[block] {
            if !visited[succ] {
                visited[succ] = true;
                stack.push(succ);
            }
        }
    }
    let reached_count = order.len();
    order.extend((0..ranges.len()).filter(|&b| !visited[b]));

    let mut id_of = vec![BlockId(0); ranges.len()];
    for (position, &block) in order.iter().enumerate() {
        id_of[block] = BlockId(position as u32);
    }
    let blocks = order
        .iter()
        .enumerate()
        .map(|(position, &block)| LaidBlock {
            insts: ranges[block].clone(),
            succs: succs_by_address[block].iter().map(|&s| id_of[s]).collect(),
            reached: position < reached_count,
        })
        .collect();
    let starts = ranges
        .iter()
        .enumerate()
        .map(|(k, range)| (decoded[range.start].at, id_of[k]))
        .collect();
    Ok(Layout { blocks, starts })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(at: u32, flow: Flow, target: Option<u32>) -> Decoded {
        Decoded {
            at,
            len: 1,
            flow,
            target,
        }
    }

    #[test]
    fn walk_order_follows_terminators_then_unreached_in_address_order() {
        // 0: branch to 3 | 1: next | 2: stop | 3: jump to 1 | 4: stop (unreached)
        let decoded = [
            inst(0, Flow::Branch, Some(3)),
            inst(1, Flow::Next, None),
            inst(2, Flow::Stop, None),
            inst(3, Flow::Jump, Some(1)),
            inst(4, Flow::Stop, None),
        ];
        let layout = layout(&decoded, &[]).expect("layout");
        let starts: Vec<u32> = layout
            .blocks
            .iter()
            .map(|b| decoded[b.insts.start].at)
            .collect();
        // Entry, then pop order: succs of 0 are [3, 1]; 1 is pushed last, so popped first.
        assert_eq!(starts, vec![0, 1, 3, 4]);
        assert_eq!(layout.blocks[0].succs.as_slice(), &[BlockId(2), BlockId(1)]);
        assert!(!layout.blocks[3].reached);
        assert_eq!(layout.block_at(3), Some(BlockId(2)));
    }

    #[test]
    fn a_target_inside_an_instruction_is_opaque() {
        let decoded = [Decoded {
            at: 0,
            len: 2,
            flow: Flow::Jump,
            target: Some(1),
        }];
        assert_eq!(
            layout(&decoded, &[]),
            Err(OpaqueReason::TargetInsideInstruction { target: 1 })
        );
    }

    #[test]
    fn entry_points_start_blocks() {
        let decoded = [
            inst(0, Flow::Next, None),
            inst(1, Flow::Next, None),
            inst(2, Flow::Stop, None),
        ];
        let layout = layout(&decoded, &[2]).expect("layout");
        assert_eq!(layout.blocks.len(), 2);
        assert_eq!(layout.blocks[0].succs.as_slice(), &[BlockId(1)]);
    }
}
