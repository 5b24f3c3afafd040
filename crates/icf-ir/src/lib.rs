//! The normalized IR that every architecture's lifter produces and the folder compares.
//!
//! A [`Function`] is a list of [`Block`]s in walk order (entry first, then the
//! blocks reachable from it in terminator order, then every block the walk did
//! not reach, in address order). Instructions, operands, memory operands and
//! references live in dense side tables of the function, keyed by newtype
//! indices, so a function is a handful of allocations however large it is.
//!
//! Main assumption: this crate knows no instruction encodings. Opcodes, registers
//! and relocation kinds are numbers whose meaning belongs to the lifter of
//! [`Function::arch`]; printing asks that lifter's [`print::Syntax`] for names.

mod check;
mod input;
pub mod print;

pub use input::{CodeInput, CodeReloc, clear_field};

use smallvec::SmallVec;
use std::ops::Range;

/// The instruction set a function is written in.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Arch {
    X86_64,
    Aarch64,
}

impl Arch {
    /// Every architecture, each at its [`Arch::number`].
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// A number naming the architecture in stored data (icf's cache).
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The architecture [`Arch::number`] gave `number`.
    pub fn from_number(number: u64) -> Option<Arch> {
        Arch::ALL.get(usize::try_from(number).ok()?).copied()
    }
}

macro_rules! index_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
        pub struct $name(pub u32);

        impl $name {
            /// The index as a `usize`, for indexing the side table it belongs to.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

index_type!(
    /// A block of a function, numbered in walk order: the entry is `BlockId(0)`.
    BlockId
);
index_type!(
    /// Anything outside the function a reference can name: a section of some
    /// object, a symbol that may be replaced at link time, an absolute value.
    /// The numbering belongs to whoever built the [`CodeInput`].
    TargetId
);
index_type!(
    /// An instruction of a function, in block order.
    InstId
);
index_type!(
    /// A memory operand in [`Function::mems`].
    MemId
);
index_type!(
    /// A reference in [`Function::refs`].
    RefId
);
index_type!(
    /// A run of bytes that could not be lifted, in [`Function::opaque`].
    OpaqueId
);
index_type!(
    /// An immediate wider than 32 bits, in [`Function::imms`].
    ImmId
);

/// An architectural register, numbered by the lifter. `Reg::NONE` is "absent".
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Reg(pub u16);

impl Reg {
    pub const NONE: Reg = Reg(0);

    pub fn is_none(self) -> bool {
        self == Reg::NONE
    }
}

/// The operation of an instruction, independent of how it was encoded: on
/// x86-64 the mnemonic, encoding class and operand size. `Opcode::OPAQUE` marks
/// a run of bytes compared byte-exactly.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Opcode(pub u32);

impl Opcode {
    pub const OPAQUE: Opcode = Opcode(u32::MAX);
}

/// A relocation type after the lifter merged synonyms (for example x86-64
/// `R_X86_64_PLT32` on a branch is `R_X86_64_PC32`). Its meaning, and its name,
/// belong to the lifter of the function's architecture.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct RefKind(pub u32);

impl RefKind {
    /// A reference to a place of the function's own section made by the
    /// lifter, not by a relocation: it names that very place (an AArch64
    /// `adrp` without a relocation computes a page from its own address).
    /// The analysis never narrows it to a candidate, so it equals only a
    /// reference to the same place.
    pub const POSITION: RefKind = RefKind(u32::MAX);
}

/// How an instruction uses the address a reference produces. This is what makes
/// address significance precise without an `.llvm_addrsig` table: only
/// `Address` lets the address escape.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Use {
    /// The target of a call.
    Call,
    /// The target of a jump (a tail call, or a branch to another section).
    Jump,
    /// A load or store through the address: the address itself does not escape.
    Access,
    /// The address is taken: kept in a register, stored, compared, returned.
    Address,
}

/// A use of something outside the function.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Ref {
    pub target: TargetId,
    pub addend: i64,
    pub kind: RefKind,
    pub use_: Use,
}

/// A memory operand `seg:[base + index * scale + disp]` of `size` bytes.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Mem {
    pub base: Reg,
    pub index: Reg,
    pub scale: u8,
    pub seg: Reg,
    /// The size and type of the accessed object, numbered by the lifter.
    pub size: u16,
    pub disp: Disp,
}

/// The displacement of a memory operand.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Disp {
    /// A plain number (for a PC-relative operand: relative to the instruction's end).
    Imm(i64),
    /// A PC-relative address of a block of this function.
    Block(BlockId),
    /// An address outside the function, through a relocation or resolved by the assembler.
    Ref(RefId),
}

/// One operand of an instruction: eight bytes, since a program holds every
/// function's operands at once. An immediate is [`Operand::Imm`] exactly
/// when its value fits 32 bits; [`Function::imm`] makes the right one.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Operand {
    Reg(Reg),
    /// An immediate that fits 32 bits (sign-extended).
    Imm(i32),
    /// An immediate that does not: its value is in [`Function::imms`].
    Imm64(ImmId),
    Mem(MemId),
    /// A branch target inside this function.
    Block(BlockId),
    /// Anything outside this function.
    Ref(RefId),
    /// Bytes that could not be lifted.
    Opaque(OpaqueId),
}

/// One instruction. `at` and `len` locate it in the function's bytes; they are
/// for people and for checks, never compared.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Inst {
    pub op: Opcode,
    /// Prefixes and modifiers that change the operation's meaning (lock, rep,
    /// masking...); lifter-defined.
    pub flags: u32,
    pub operands: Range<u32>,
    pub at: u32,
    pub len: u32,
}

/// A basic block: a range of [`Function::insts`] and its successors in
/// terminator order (taken target first, then the fall-through).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Block {
    pub insts: Range<u32>,
    pub succs: SmallVec<[BlockId; 2]>,
    /// Whether the walk from the entry reached this block.
    pub reached: bool,
}

/// Why some bytes are compared byte-exactly instead of instruction by instruction.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum OpaqueReason {
    /// The decoder does not know the instruction at this offset.
    UnknownInstruction { at: u32 },
    /// A branch or an outside reference lands inside an instruction.
    TargetInsideInstruction { target: u32 },
    /// A relocation covers bytes that are neither a displacement nor an immediate.
    RelocationOutsideOperand { at: u32 },
    /// A PC-relative operand refers to bytes of this function that start no block (data in code).
    DataInCode { target: u32 },
    /// A PC-relative operand leaves the section without a relocation.
    TargetOutsideSection { target: u64 },
    /// The last instruction runs past the end of the function.
    Truncated { at: u32 },
    /// Read-only data: bytes are all there is to compare.
    Data,
}

/// A run of bytes compared byte-exactly, relocated bytes zeroed.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct OpaqueRun {
    pub bytes: Box<[u8]>,
    pub reason: OpaqueReason,
}

/// A lifted function.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Function {
    pub arch: Arch,
    /// Size in bytes of the code this function was lifted from.
    pub size: u32,
    pub blocks: Vec<Block>,
    pub insts: Vec<Inst>,
    pub operands: Vec<Operand>,
    pub mems: Vec<Mem>,
    pub refs: Vec<Ref>,
    pub opaque: Vec<OpaqueRun>,
    /// Immediates wider than 32 bits.
    pub imms: Vec<i64>,
    /// The code computes addresses of its own instructions (an AArch64 `adr`
    /// to a jump-table base): two copies behave alike only if every
    /// instruction sits at the same offset.
    pub layout_sensitive: bool,
    /// Where control goes when it runs off the last instruction (a piece
    /// that falls into the next symbol of its section): compared like an
    /// operand, since what runs next is part of what the function does.
    pub fall_through: Option<RefId>,
}

impl Function {
    pub fn new(arch: Arch, size: u32) -> Function {
        Function {
            arch,
            size,
            blocks: Vec::new(),
            insts: Vec::new(),
            operands: Vec::new(),
            mems: Vec::new(),
            refs: Vec::new(),
            opaque: Vec::new(),
            imms: Vec::new(),
            layout_sensitive: false,
            fall_through: None,
        }
    }

    /// Empties the function for reuse as `arch` code of `size` bytes,
    /// keeping its buffers' capacity.
    pub fn reset(&mut self, arch: Arch, size: u32) {
        self.arch = arch;
        self.size = size;
        self.blocks.clear();
        self.insts.clear();
        self.operands.clear();
        self.mems.clear();
        self.refs.clear();
        self.opaque.clear();
        self.imms.clear();
        self.layout_sensitive = false;
        self.fall_through = None;
    }

    pub fn block(&self, id: BlockId) -> &Block {
        &self.blocks[id.index()]
    }

    pub fn block_insts(&self, block: &Block) -> &[Inst] {
        &self.insts[block.insts.start as usize..block.insts.end as usize]
    }

    pub fn inst_operands(&self, inst: &Inst) -> &[Operand] {
        &self.operands[inst.operands.start as usize..inst.operands.end as usize]
    }

    pub fn mem(&self, id: MemId) -> &Mem {
        &self.mems[id.index()]
    }

    pub fn ref_(&self, id: RefId) -> &Ref {
        &self.refs[id.index()]
    }

    pub fn opaque_run(&self, id: OpaqueId) -> &OpaqueRun {
        &self.opaque[id.index()]
    }

    /// Whether any part of the function is compared byte-exactly.
    pub fn has_opaque(&self) -> bool {
        !self.opaque.is_empty()
    }

    /// Appends an instruction with its operands to the function; the caller
    /// closes blocks over the instructions it pushed.
    pub fn push_inst(
        &mut self,
        op: Opcode,
        flags: u32,
        operands: &[Operand],
        at: u32,
        len: u32,
    ) -> InstId {
        let start = self.operands.len() as u32;
        self.operands.extend_from_slice(operands);
        let id = InstId(self.insts.len() as u32);
        self.insts.push(Inst {
            op,
            flags,
            operands: start..self.operands.len() as u32,
            at,
            len,
        });
        id
    }

    pub fn push_mem(&mut self, mem: Mem) -> MemId {
        self.mems.push(mem);
        MemId(self.mems.len() as u32 - 1)
    }

    pub fn push_ref(&mut self, r: Ref) -> RefId {
        self.refs.push(r);
        RefId(self.refs.len() as u32 - 1)
    }

    /// The operand for immediate `value`: inline when it fits 32 bits, else
    /// in [`Function::imms`].
    pub fn imm(&mut self, value: i64) -> Operand {
        match i32::try_from(value) {
            Ok(narrow) => Operand::Imm(narrow),
            Err(_) => {
                self.imms.push(value);
                Operand::Imm64(ImmId(self.imms.len() as u32 - 1))
            }
        }
    }

    /// The value of an immediate operand, `None` for any other operand.
    pub fn imm_value(&self, operand: Operand) -> Option<i64> {
        match operand {
            Operand::Imm(value) => Some(i64::from(value)),
            Operand::Imm64(id) => self.imms.get(id.index()).copied(),
            _ => None,
        }
    }

    pub fn push_opaque(&mut self, run: OpaqueRun) -> OpaqueId {
        self.opaque.push(run);
        OpaqueId(self.opaque.len() as u32 - 1)
    }

    /// Byte ranges of all instructions in address order; a well-formed function
    /// covers `0..size` exactly once.
    pub fn coverage(&self) -> Vec<Range<u32>> {
        let mut ranges: Vec<Range<u32>> = self.insts.iter().map(|i| i.at..i.at + i.len).collect();
        ranges.sort_by_key(|r| r.start);
        ranges
    }
}

#[cfg(test)]
mod arch_number_tests {
    use super::Arch;

    #[test]
    fn every_architecture_reads_back_from_its_number() {
        for arch in Arch::ALL {
            assert_eq!(Arch::from_number(u64::from(arch.number())), Some(arch));
        }
        assert_eq!(Arch::from_number(Arch::ALL.len() as u64), None);
    }
}
