//! Decoded instructions in the form the verifier compares: an
//! architecture-specific key holding everything that must be equal (mnemonic,
//! operands, prefixes) with every pc-relative or absolute target replaced by
//! a placeholder, and the list of those targets with the use the instruction
//! makes of them. Main assumption: two instructions are equal exactly when
//! their keys are equal and their targets correspond, so encodings that only
//! differ in size (rel8/rel32, imm8/imm32) compare equal.
//!
//! The keys of both architectures are defined here, their behaviour in
//! `x86.rs` and `aarch64.rs`; `decode.rs` picks the decoder by architecture.
//! So is what a callee known to read its pointer arguments only forward
//! reads ([`Reader`]), which `bounded_readers.rs` finds and the escape
//! scans use.

use iced_x86::{EncodingKind, MemorySize, Mnemonic, OpKind, Register};
use yaxpeax_arm::armv8::a64::Instruction;

/// How an instruction uses a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// A direct call.
    Call,
    /// A direct jump or conditional branch.
    Jump,
    /// The address itself becomes a value (`lea`, `adr`, `adrp`+`add`, an
    /// absolute immediate): the target's address is observable.
    Address,
    /// A load or store through the address (or an indirect jump through it).
    Access,
    /// A load of a pointer (from a GOT slot, say) that the code then only
    /// loads and stores through: an access of the slot, and of whatever the
    /// pointer points to, whose address is not observed either.
    Deref,
    /// A pointer in a C++ vtable (`_ZTV*`, `_ZTC*`): an observed address
    /// when it points to data (typeinfo), not when it points to code, since
    /// C++ gives no way to compare a virtual function's address (a pointer
    /// to a virtual member holds its slot, not the function).
    VtableSlot,
}

/// Which bytes around a referenced address the code reads through it: what
/// tells one past the end of one object from the start of the next, when
/// no relocation says which the code names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Not known: the address escapes, or some access through it has an
    /// offset of unknown sign (an index register).
    #[default]
    Unknown,
    /// Only bytes at or after the address.
    Forward,
    /// Only bytes before the address.
    Backward,
    /// A table of 4-byte offsets from the address, whose entries the code
    /// only adds back to it (`x86_escape::reads_only_offsets`): what it
    /// reads there are the addresses the entries name.
    Offsets,
}

/// What a callee known to read its pointer arguments only forward reads
/// (`bounded_readers.rs`): the argument registers (System V order, a bit
/// each) holding pointers it reads forward from, and where the number of
/// bytes it reads through each is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reader {
    pub pointers: u8,
    pub length: Length,
}

/// Where a [`Reader`]'s callers pass how many bytes it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Length {
    /// A Rust slice (`&str`, `&[u8]`): each pointer's length is the
    /// argument after it.
    AfterEach,
    /// One count for every pointer, in this argument (`memcmp(a, b, n)`):
    /// the callee reads at most that many bytes through each.
    Argument(u8),
    /// Up to a NUL (`strlen`): no argument bounds it.
    Unbounded,
}

impl Reader {
    /// Which argument holds how many bytes the callee reads through the
    /// pointer in argument `pointer`, if one does.
    pub(crate) fn length_argument(&self, pointer: usize) -> Option<usize> {
        match self.length {
            Length::AfterEach => Some(pointer + 1),
            Length::Argument(n) => Some(usize::from(n)),
            Length::Unbounded => None,
        }
    }
}

/// One target of an instruction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reference {
    pub address: u64,
    pub use_: Use,
    /// The address of the instruction field holding it (for the relocation a
    /// `-q` link kept there), 0 when unknown.
    pub field: u64,
    /// For an [`Use::Access`]: the code reads or writes at most this many
    /// bytes from the address, and none before it; 0 when unknown. Exact
    /// for a pc-relative operand no register can offset (x86-64 `addsd
    /// .LC0(%rip),%xmm0`); for an x86-64 `lea` whose address does not
    /// escape, the farthest byte its accesses reach
    /// (`x86_escape::Accessed::extent`).
    pub width: u64,
    /// For an [`Use::Access`] or [`Use::Deref`]: which side of the address
    /// the accesses through it read.
    pub reach: Reach,
}

/// What must be equal between two instructions, targets apart.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Key {
    X86(X86Key),
    Aarch64(A64Key),
    /// Bytes no decoder understood: compared exactly.
    Bytes(Vec<u8>),
    /// Bytes inside code that no path reaches (x86-64): data, compared
    /// exactly except the fields kept relocations write (offset in the run
    /// and relocation type), which are targets.
    Data {
        data: Vec<u8>,
        relocations: Vec<(u32, u32)>,
    },
}

/// One decoded instruction of a function.
#[derive(Clone, Debug)]
pub(crate) struct Decoded {
    /// Offset from the start of the decoded range.
    pub offset: u32,
    pub key: Key,
    pub refs: Vec<Reference>,
}

/// Whether execution can continue after `last`, the last instruction of a
/// range, into whatever follows it, but for a call (see [`is_call`]: the
/// caller decides whether its callee returns).
pub(crate) fn falls_through(last: &Decoded) -> bool {
    match &last.key {
        Key::X86(key) => key.falls_through(),
        Key::Aarch64(key) => key.falls_through(),
        Key::Bytes(_) | Key::Data { .. } => false,
    }
}

/// One operand with any target replaced by a placeholder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operand {
    None,
    Register(Register),
    Immediate(u64),
    /// A branch target, address immediate: the n-th reference.
    Target,
    Memory {
        segment: Register,
        base: Register,
        index: Register,
        scale: u32,
        /// The displacement, or `None` when it is a target.
        displacement: Option<u64>,
        size: MemorySize,
    },
    /// String-instruction memory, far branches and the like: the kind says it all.
    Other(OpKind, u64),
}

/// What must be equal between two x86-64 instructions, targets apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct X86Key {
    pub mnemonic: Mnemonic,
    pub encoding: EncodingKind,
    /// Legacy prefix bytes present (bit per prefix: lock, rep, repne,
    /// segment overrides incl. `notrack`, operand and address size).
    pub prefixes: u16,
    /// EVEX masking, broadcast, rounding and exception suppression.
    pub evex: u32,
    pub operands: [Operand; 5],
}

/// What must be equal between two AArch64 instructions, targets apart.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct A64Key(pub Instruction);
