//! The invariants every lifted function must hold, checked in tests and fuzzing.

use crate::{Disp, Function, Operand};

impl Function {
    /// Checks that the function is well formed: instructions tile `0..size`
    /// exactly once, blocks partition the instructions, and every index
    /// (block, memory operand, reference, opaque run) is in range.
    pub fn check(&self) -> Result<(), String> {
        let mut position = 0;
        for range in self.coverage() {
            if range.start != position {
                return Err(format!(
                    "bytes {position:#x}..{:#x} are covered {}",
                    range.start,
                    if range.start > position {
                        "by nothing"
                    } else {
                        "twice"
                    }
                ));
            }
            position = range.end;
        }
        if position != self.size {
            return Err(format!(
                "instructions end at {position:#x}, the function at {:#x}",
                self.size
            ));
        }
        let mut next_inst = 0;
        for (index, block) in self.blocks.iter().enumerate() {
            if block.insts.start != next_inst || block.insts.end < block.insts.start {
                return Err(format!(
                    "block {index} holds instructions {:?}, expected to start at {next_inst}",
                    block.insts
                ));
            }
            if block.insts.is_empty() {
                return Err(format!("block {index} is empty"));
            }
            next_inst = block.insts.end;
            if let Some(succ) = block.succs.iter().find(|s| s.index() >= self.blocks.len()) {
                return Err(format!(
                    "block {index} has successor bb{} of {} blocks",
                    succ.0,
                    self.blocks.len()
                ));
            }
        }
        if next_inst as usize != self.insts.len() {
            return Err(format!(
                "blocks hold {next_inst} of {} instructions",
                self.insts.len()
            ));
        }
        if self.blocks.first().is_some_and(|entry| !entry.reached) {
            return Err("the entry block is not reached".to_string());
        }
        let reached_then_not = self
            .blocks
            .windows(2)
            .any(|pair| !pair[0].reached && pair[1].reached);
        if reached_then_not {
            return Err("a reached block follows an unreached one".to_string());
        }
        if self
            .fall_through
            .is_some_and(|r| r.index() >= self.refs.len())
        {
            return Err(format!(
                "falls through to reference {:?} of {}",
                self.fall_through,
                self.refs.len()
            ));
        }
        for inst in &self.insts {
            if inst.operands.end as usize > self.operands.len()
                || inst.operands.start > inst.operands.end
            {
                return Err(format!(
                    "instruction at {:#x} has operands {:?} of {}",
                    inst.at,
                    inst.operands,
                    self.operands.len()
                ));
            }
            for operand in self.inst_operands(inst) {
                let in_range = match *operand {
                    Operand::Reg(_) | Operand::Imm(_) => true,
                    // Canonical: a value that fits 32 bits is an `Imm`.
                    Operand::Imm64(imm) => self
                        .imms
                        .get(imm.index())
                        .is_some_and(|&value| i32::try_from(value).is_err()),
                    Operand::Block(block) => block.index() < self.blocks.len(),
                    Operand::Ref(r) => r.index() < self.refs.len(),
                    Operand::Opaque(run) => run.index() < self.opaque.len(),
                    Operand::Mem(mem) => {
                        mem.index() < self.mems.len()
                            && match self.mems[mem.index()].disp {
                                Disp::Imm(_) => true,
                                Disp::Block(block) => block.index() < self.blocks.len(),
                                Disp::Ref(r) => r.index() < self.refs.len(),
                            }
                    }
                };
                if !in_range {
                    return Err(format!(
                        "instruction at {:#x} has an operand out of range: {operand:?}",
                        inst.at
                    ));
                }
            }
        }
        Ok(())
    }
}
