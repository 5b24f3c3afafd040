//! yaxpeax-arm against capstone, on real AArch64 code: every word of the
//! code of the cross toolchain's static glibc and libstdc++ is decoded by
//! both, and wherever both decode, they must agree on the operands the
//! lifter depends on: the general-purpose and SIMD registers named, the
//! target of a PC-relative operand, and the base and offset of a memory
//! operand. Data in code (between `$d` and `$x` mapping symbols) is skipped.
//!
//! The one known disagreement is yaxpeax-arm 0.5.0's `msr <sysreg>, xN`,
//! which reads the wrong register field (`d51bd053` is `msr tpidr_el0, x19`,
//! yaxpeax says `x3`). The lifter compares the instruction word itself, so
//! only the printed register is wrong; the test tolerates `msr` and nothing
//! else.
//!
//! Aliases print differently (`mov x0, x1` is `orr x0, xzr, x1`), so
//! register 31 (`sp`, `xzr`) is left out of the comparison; everything else
//! is compared as sets.

use capstone::arch::arm64::{ArchMode, Arm64OperandType};
use capstone::arch::{BuildsCapstone, DetailsArchInsn};
use capstone::{Capstone, RegId};
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection, ObjectSymbol, SectionKind};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::{self, InstDecoder};

/// What both decoders must agree on.
#[derive(Default, PartialEq, Eq, Debug)]
struct Operands {
    gprs: BTreeSet<u16>,
    vregs: BTreeSet<u16>,
    /// The address a PC-relative operand computes.
    target: Option<u64>,
    /// Base register and offset of a `[base, #offset]` operand without writeback.
    memory: Option<(u16, i64)>,
}

fn yaxpeax_operands(instr: &a64::Instruction, address: u64) -> Operands {
    let mut ops = Operands::default();
    let gpr = |n: u16, ops: &mut Operands| {
        if n != 31 {
            ops.gprs.insert(n);
        }
    };
    for operand in &instr.operands {
        // `ret` names x30 explicitly; capstone leaves the default implicit.
        if instr.opcode == a64::Opcode::RET
            && *operand == a64::Operand::Register(a64::SizeCode::X, 30)
        {
            continue;
        }
        match *operand {
            a64::Operand::Register(_, n)
            | a64::Operand::RegisterOrSP(_, n)
            | a64::Operand::RegShift(_, _, _, n) => gpr(n, &mut ops),
            a64::Operand::RegisterPair(_, n) => {
                gpr(n, &mut ops);
                gpr(n + 1, &mut ops);
            }
            a64::Operand::SIMDRegister(_, n)
            | a64::Operand::SIMDRegisterElements(_, n, _)
            | a64::Operand::SIMDRegisterElementsLane(_, n, _, _)
            | a64::Operand::SIMDRegisterElementsMultipleLane(_, n, _, _, _) => {
                ops.vregs.insert(n);
            }
            a64::Operand::SIMDRegisterGroup(_, n, _, count)
            | a64::Operand::SIMDRegisterGroupLane(n, _, count, _) => {
                for k in 0..u16::from(count) {
                    ops.vregs.insert((n + k) % 32);
                }
            }
            a64::Operand::RegRegOffset(base, index, ..) => {
                gpr(base, &mut ops);
                gpr(index, &mut ops);
            }
            a64::Operand::RegPreIndex(base, offset, writeback) => {
                gpr(base, &mut ops);
                if !writeback {
                    ops.memory = Some((base, i64::from(offset)));
                }
            }
            a64::Operand::RegPostIndex(base, _) => gpr(base, &mut ops),
            a64::Operand::RegPostIndexReg(base, index) => {
                gpr(base, &mut ops);
                gpr(index, &mut ops);
            }
            a64::Operand::PCOffset(offset) => {
                let base = if instr.opcode == a64::Opcode::ADRP {
                    address & !0xfff
                } else {
                    address
                };
                ops.target = Some(base.wrapping_add(offset as u64));
            }
            _ => {}
        }
    }
    ops
}

/// A capstone register name as (general-purpose?, number); `None` for the
/// rest (`sp`, `xzr`, SVE, system registers).
fn register_number(name: &str) -> Option<(bool, u16)> {
    match name {
        "fp" => return Some((true, 29)),
        "lr" => return Some((true, 30)),
        "sp" | "wsp" | "xzr" | "wzr" => return Some((true, 31)),
        _ => {}
    }
    let (class, number) = name.split_at(1);
    let number: u16 = number.parse().ok()?;
    match class {
        "x" | "w" => Some((true, number)),
        "v" | "q" | "d" | "s" | "h" | "b" => Some((false, number)),
        _ => None,
    }
}

fn capstone_operands(cs: &Capstone, insn: &capstone::Insn<'_>) -> Option<(Operands, Vec<i64>)> {
    let detail = cs.insn_detail(insn).ok()?;
    let arch = detail.arch_detail();
    let arm64 = arch.arm64()?;
    let mut ops = Operands::default();
    let mut immediates = Vec::new();
    let add_reg = |reg: RegId, ops: &mut Operands| {
        if let Some((gpr, n)) = cs.reg_name(reg).as_deref().and_then(register_number)
            && n != 31
        {
            if gpr {
                ops.gprs.insert(n);
            } else {
                ops.vregs.insert(n);
            }
        }
    };
    let memory_operands = arm64
        .operands()
        .filter(|o| matches!(o.op_type, Arm64OperandType::Mem(_)))
        .count();
    for operand in arm64.operands() {
        match operand.op_type {
            Arm64OperandType::Reg(reg) => add_reg(reg, &mut ops),
            Arm64OperandType::Imm(value) => immediates.push(value),
            Arm64OperandType::Mem(mem) => {
                add_reg(mem.base(), &mut ops);
                add_reg(mem.index(), &mut ops);
                if memory_operands == 1
                    && !arm64.writeback()
                    && mem.index().0 == 0
                    && let Some((true, base)) =
                        cs.reg_name(mem.base()).as_deref().and_then(register_number)
                {
                    ops.memory = Some((base, i64::from(mem.disp())));
                }
            }
            _ => {}
        }
    }
    Some((ops, immediates))
}

fn archive(compiler: &str, name: &str) -> PathBuf {
    let output = Command::new(compiler)
        .arg(format!("-print-file-name={name}"))
        .output()
        .unwrap_or_else(|e| panic!("{compiler} is missing ({e}); `cargo xtask test` installs it"));
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    assert!(path.is_absolute(), "{compiler} does not know {name}");
    path
}

/// Code ranges of an object section: everything outside `$d` .. `$x` runs.
fn code_ranges(file: &object::File<'_>, section: &object::Section<'_, '_>) -> Vec<(u64, u64)> {
    let mut marks: Vec<(u64, bool)> = file
        .symbols()
        .filter(|s| s.section_index() == Some(section.index()))
        .filter_map(|s| match s.name() {
            Ok(name) if name == "$x" || name.starts_with("$x.") => Some((s.address(), true)),
            Ok(name) if name == "$d" || name.starts_with("$d.") => Some((s.address(), false)),
            _ => None,
        })
        .collect();
    marks.sort_unstable();
    let size = section.size();
    let mut ranges = Vec::new();
    let mut start = Some(0);
    for (at, code) in marks {
        match (code, start) {
            (false, Some(s)) => {
                ranges.push((s, at));
                start = None;
            }
            (true, None) => start = Some(at),
            _ => {}
        }
    }
    if let Some(s) = start {
        ranges.push((s, size));
    }
    ranges
}

#[test]
fn yaxpeax_and_capstone_agree_on_glibc_and_libstdcxx() {
    let cs = Capstone::new()
        .arm64()
        .mode(ArchMode::Arm)
        .detail(true)
        .build()
        .expect("capstone for AArch64");
    let decoder = InstDecoder::default();
    let mut compared = 0usize;
    let mut only_one = 0usize;
    let mut differing = 0usize;
    let mut known = 0usize;
    let mut disagreements = Vec::new();
    for path in [
        archive("aarch64-linux-gnu-gcc", "libc.a"),
        archive("aarch64-linux-gnu-g++", "libstdc++.a"),
    ] {
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let archive = ArchiveFile::parse(&*data).expect("an archive");
        for member in archive.members() {
            let member = member.expect("archive member");
            let Ok(bytes) = member.data(&*data) else {
                continue;
            };
            let Ok(file) = object::File::parse(bytes) else {
                continue;
            };
            for section in file.sections().filter(|s| s.kind() == SectionKind::Text) {
                let code = section.data().expect("section data");
                for (start, end) in code_ranges(&file, &section) {
                    let mut at = start;
                    while at + 4 <= end.min(code.len() as u64) {
                        let word = &code[at as usize..at as usize + 4];
                        at += 4;
                        let address = 0x10_0000 + at - 4;
                        let ours = decoder.decode(&mut U8Reader::new(word));
                        let theirs = cs.disasm_count(word, address, 1).ok();
                        let theirs = theirs.as_ref().and_then(|i| i.iter().next());
                        let (Ok(ours), Some(theirs)) = (ours, theirs) else {
                            only_one += 1;
                            continue;
                        };
                        let Some((mut expected, immediates)) = capstone_operands(&cs, theirs)
                        else {
                            continue;
                        };
                        let got = yaxpeax_operands(&ours, address);
                        // Capstone gives a PC-relative target as a plain immediate.
                        if let Some(target) = got.target
                            && immediates.contains(&(target as i64))
                        {
                            expected.target = Some(target);
                        }
                        if got.memory.is_none() {
                            expected.memory = None;
                        }
                        compared += 1;
                        if got != expected && ours.opcode == a64::Opcode::MSR {
                            known += 1;
                            continue;
                        }
                        if got != expected {
                            differing += 1;
                        }
                        if got != expected && disagreements.len() < 40 {
                            disagreements.push(format!(
                                "{:08x}: yaxpeax `{ours}` {got:?} / capstone `{} {}` {expected:?}",
                                u32::from_le_bytes([word[0], word[1], word[2], word[3]]),
                                theirs.mnemonic().unwrap_or("?"),
                                theirs.op_str().unwrap_or(""),
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(compared > 200_000, "only {compared} instructions compared");
    assert!(
        disagreements.is_empty(),
        "{compared} compared, {only_one} decoded by one side only, {known} known `msr` \
         differences, {differing} others differ:\n{}",
        disagreements.join("\n")
    );
}
