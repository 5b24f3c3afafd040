//! The text form of the IR: one block header per block, one instruction per
//! line, operands symbolic. It is what `icf dump` prints and what snapshot
//! tests hold, so it must stay stable and readable by a person comparing two
//! functions side by side.

use crate::{
    Disp, Function, Inst, Mem, OpaqueReason, Opcode, Operand, Ref, RefKind, Reg, TargetId, Use,
};
use std::fmt::Write;

/// Names for the architecture-specific numbers of the IR.
pub trait Syntax {
    /// The mnemonic, with prefixes the `flags` stand for (`lock add`, `rep stosb`).
    fn opcode(&self, op: Opcode, flags: u32) -> String;
    fn reg(&self, reg: Reg) -> String;
    fn ref_kind(&self, kind: RefKind) -> String;
    /// The width keyword of a memory access of lifter-numbered `size` (`qword`), if any.
    fn mem_size(&self, size: u16) -> &'static str;
}

/// Names for reference targets; the IR only holds their numbers.
pub trait TargetNames {
    /// The place `addend` bytes into `target`, as a person would name it (`foo`, `.rodata+0x10`).
    fn describe(&self, target: TargetId, addend: i64) -> String;
}

impl<F: Fn(TargetId, i64) -> String> TargetNames for F {
    fn describe(&self, target: TargetId, addend: i64) -> String {
        self(target, addend)
    }
}

/// `name+0x10`, `name-4` or `name`.
pub fn with_addend(name: &str, addend: i64) -> String {
    let mut out = name.to_string();
    if addend != 0 {
        out.push(if addend < 0 { '-' } else { '+' });
        print_number(addend.checked_abs().unwrap_or(addend), &mut out);
    }
    out
}

/// Appends the text form of `f` to `out`.
pub fn print_function(
    f: &Function,
    syntax: &dyn Syntax,
    names: &dyn TargetNames,
    out: &mut String,
) {
    for (index, block) in f.blocks.iter().enumerate() {
        let _ = write!(out, "bb{index}:");
        if !block.succs.is_empty() {
            out.push_str(" ->");
            for succ in &block.succs {
                let _ = write!(out, " bb{}", succ.0);
            }
        }
        if !block.reached {
            out.push_str(" (not reached from the entry)");
        }
        out.push('\n');
        for inst in f.block_insts(block) {
            let _ = write!(out, "  {:04x}  ", inst.at);
            print_inst(f, inst, syntax, names, out);
            out.push('\n');
        }
    }
    if let Some(r) = f.fall_through {
        out.push_str("falls through to ");
        print_ref(f.ref_(r), syntax, names, out);
        out.push('\n');
    }
}

/// Appends one instruction, without its address or a newline.
pub fn print_inst(
    f: &Function,
    inst: &Inst,
    syntax: &dyn Syntax,
    names: &dyn TargetNames,
    out: &mut String,
) {
    let operands = f.inst_operands(inst);
    if inst.op == Opcode::OPAQUE {
        print_opaque(f, operands, syntax, names, out);
        return;
    }
    out.push_str(&syntax.opcode(inst.op, inst.flags));
    for (index, operand) in operands.iter().enumerate() {
        out.push_str(if index == 0 { " " } else { ", " });
        print_operand(f, *operand, syntax, names, out);
    }
}

fn print_opaque(
    f: &Function,
    operands: &[Operand],
    syntax: &dyn Syntax,
    names: &dyn TargetNames,
    out: &mut String,
) {
    out.push_str(".opaque");
    let mut operands = operands.iter();
    if let Some(Operand::Opaque(id)) = operands.next() {
        let run = f.opaque_run(*id);
        let _ = write!(out, " ({}) ", describe_reason(&run.reason));
        for (index, byte) in run.bytes.iter().enumerate() {
            if index > 0 {
                out.push(' ');
            }
            let _ = write!(out, "{byte:02x}");
        }
    }
    // The rest alternates: offset of a relocated field, then its reference.
    while let (Some(&offset), Some(Operand::Ref(r))) = (operands.next(), operands.next())
        && let Some(offset) = f.imm_value(offset)
    {
        let _ = write!(out, "; +{offset:#x}: ");
        print_ref(f.ref_(*r), syntax, names, out);
    }
}

/// A short description of why bytes are opaque, for dumps and reports.
pub fn describe_reason(reason: &OpaqueReason) -> String {
    match reason {
        OpaqueReason::UnknownInstruction { at } => format!("unknown instruction at {at:#x}"),
        OpaqueReason::TargetInsideInstruction { target } => {
            format!("jump into an instruction at {target:#x}")
        }
        OpaqueReason::RelocationOutsideOperand { at } => {
            format!("relocation outside an operand at {at:#x}")
        }
        OpaqueReason::DataInCode { target } => format!("reference to data in code at {target:#x}"),
        OpaqueReason::TargetOutsideSection { target } => {
            format!("unrelocated reference outside the section to {target:#x}")
        }
        OpaqueReason::Truncated { at } => format!("instruction at {at:#x} runs past the end"),
        OpaqueReason::Data => "data".to_string(),
    }
}

fn print_operand(
    f: &Function,
    operand: Operand,
    syntax: &dyn Syntax,
    names: &dyn TargetNames,
    out: &mut String,
) {
    match operand {
        Operand::Reg(reg) => out.push_str(&syntax.reg(reg)),
        Operand::Imm(_) | Operand::Imm64(_) => {
            print_number(f.imm_value(operand).unwrap_or_default(), out);
        }
        Operand::Mem(id) => print_mem(f, f.mem(id), syntax, names, out),
        Operand::Block(block) => {
            let _ = write!(out, "bb{}", block.0);
        }
        Operand::Ref(id) => print_ref(f.ref_(id), syntax, names, out),
        Operand::Opaque(id) => {
            let _ = write!(out, "<{} opaque bytes>", f.opaque_run(id).bytes.len());
        }
    }
}

fn print_number(value: i64, out: &mut String) {
    if (-9..=9).contains(&value) {
        let _ = write!(out, "{value}");
    } else if value < 0 {
        let _ = write!(out, "-{:#x}", value.unsigned_abs());
    } else {
        let _ = write!(out, "{value:#x}");
    }
}

fn print_mem(
    f: &Function,
    mem: &Mem,
    syntax: &dyn Syntax,
    names: &dyn TargetNames,
    out: &mut String,
) {
    let size = syntax.mem_size(mem.size);
    if !size.is_empty() {
        let _ = write!(out, "{size} ");
    }
    if !mem.seg.is_none() {
        let _ = write!(out, "{}:", syntax.reg(mem.seg));
    }
    out.push('[');
    let mut first = true;
    if !mem.base.is_none() {
        out.push_str(&syntax.reg(mem.base));
        first = false;
    }
    if !mem.index.is_none() {
        if !first {
            out.push_str(" + ");
        }
        let _ = write!(out, "{}*{}", syntax.reg(mem.index), mem.scale);
        first = false;
    }
    match mem.disp {
        Disp::Imm(0) if !first => {}
        Disp::Imm(value) => {
            if !first {
                out.push_str(if value < 0 { " - " } else { " + " });
                print_number(value.checked_abs().unwrap_or(value), out);
            } else {
                print_number(value, out);
            }
        }
        Disp::Block(block) => {
            if !first {
                out.push_str(" + ");
            }
            let _ = write!(out, "bb{}", block.0);
        }
        Disp::Ref(id) => {
            if !first {
                out.push_str(" + ");
            }
            print_ref(f.ref_(id), syntax, names, out);
        }
    }
    out.push(']');
}

fn print_ref(r: &Ref, syntax: &dyn Syntax, names: &dyn TargetNames, out: &mut String) {
    out.push_str(&names.describe(r.target, r.addend));
    let use_ = match r.use_ {
        Use::Call => "call",
        Use::Jump => "jump",
        Use::Access => "access",
        Use::Address => "address",
    };
    let kind = if r.kind == crate::RefKind::POSITION {
        "position".to_string()
    } else {
        syntax.ref_kind(r.kind)
    };
    let _ = write!(out, " <{kind} {use_}>");
}
