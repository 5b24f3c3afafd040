//! What both lifters share: buffers reused from one function to the next,
//! marker relocations riding on their instruction, and where control goes
//! when it runs off a function's end.

use crate::cfg;
use icf_ir::{Arch, CodeInput, CodeReloc, Function, Operand, Ref, RefKind, Use};

thread_local! {
    /// A function whose buffers the next lift on this thread reuses.
    static SPARE: std::cell::RefCell<Option<Function>> = const { std::cell::RefCell::new(None) };
}

/// Hands a function that is no longer needed back to the lifter, which
/// reuses its buffers for the next function lifted on this thread: a
/// program lifts tens of thousands of functions and keeps none of them.
pub fn recycle(function: Function) {
    SPARE.with(|spare| *spare.borrow_mut() = Some(function));
}

/// An empty function, reusing the buffers of the last one recycled.
pub(crate) fn spare_function(arch: Arch, size: u32) -> Function {
    match SPARE.with(|spare| spare.borrow_mut().take()) {
        Some(mut function) => {
            function.reset(arch, size);
            function
        }
        None => Function::new(arch, size),
    }
}

/// A marker relocation (`R_X86_64_TLSDESC_CALL`, `R_AARCH64_TLSDESC_CALL`):
/// it patches nothing, and rides along on its instruction as a reference.
pub(crate) fn marker_operand(f: &mut Function, reloc: &CodeReloc) -> Operand {
    Operand::Ref(f.push_ref(Ref {
        target: reloc.target,
        addend: reloc.addend,
        kind: RefKind(reloc.r_type),
        use_: Use::Access,
    }))
}

/// Records where control goes when it runs off the function's last
/// instruction `last` (in address order): the place right after the
/// function, as a jump of kind `kind`. Inside its section that is the next
/// piece, compared like any jump target. Past the end of the section it is
/// whatever the link puts there: a reference to that very place, equal to
/// nothing else, unless the last instruction is a call, which at a
/// section's end is taken not to return (`call abort`).
pub(crate) fn fall_through(
    f: &mut Function,
    input: &CodeInput<'_>,
    last: Option<cfg::Flow>,
    kind: RefKind,
) {
    let Some(flow) = last else {
        return;
    };
    if matches!(flow, cfg::Flow::Jump | cfg::Flow::Stop) {
        return;
    }
    let end = input.section_offset + input.bytes.len() as u64;
    let kind = if end < input.section_size {
        kind
    } else if flow == cfg::Flow::Call {
        return;
    } else {
        RefKind::POSITION
    };
    let r = f.push_ref(Ref {
        target: input.own_section,
        addend: end as i64,
        kind,
        use_: Use::Jump,
    });
    f.fall_through = Some(r);
}

/// Drops the blocks at the end of the walk order that nothing reaches,
/// nothing branches to, that hold only `nop` (one opcode for any length)
/// and that end the function's bytes: alignment padding after a
/// function's last instruction. A
/// Mach-O atom holds its padding (an ELF section under
/// `-ffunction-sections` does not), and two copies of one function differ
/// in it by where they sit. Returns whether it dropped any: then the
/// instruction before the padding cannot run into it, or the walk would
/// have reached it.
pub(crate) fn drop_trailing_padding(f: &mut Function, nop: icf_ir::Opcode) -> bool {
    let mut dropped = false;
    // Only what ends the function's bytes: an unreached block of nops in
    // the middle (alignment before a loop head) stays, and so does the
    // fall-through of whatever ends the function.
    let mut end = f.size;
    while let Some(block) = f.blocks.last() {
        let last = f.blocks.len() - 1;
        let insts = &f.insts[block.insts.start as usize..block.insts.end as usize];
        let padding = !block.reached
            && insts.last().is_some_and(|inst| inst.at + inst.len == end)
            && insts
                .iter()
                .all(|inst| inst.op == nop && inst.operands.is_empty());
        let targeted = f
            .blocks
            .iter()
            .any(|b| b.succs.iter().any(|s| s.0 as usize == last));
        if !padding || targeted {
            break;
        }
        end = insts.first().map_or(end, |inst| inst.at);
        let start = block.insts.start as usize;
        f.insts.truncate(start);
        f.blocks.pop();
        dropped = true;
    }
    dropped
}
