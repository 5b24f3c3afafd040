//! Decoded instructions in the form the verifier compares: an
//! architecture-specific key holding everything that must be equal (mnemonic,
//! operands, prefixes) with every pc-relative or absolute target replaced by
//! a placeholder, and the list of those targets with the use the instruction
//! makes of them. Main assumption: two instructions are equal exactly when
//! their keys are equal and their targets correspond, so encodings that only
//! differ in size (rel8/rel32, imm8/imm32) compare equal.

use crate::image::{Arch, Image, Slot};
use crate::{aarch64, x86};

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

/// One target of an instruction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reference {
    pub address: u64,
    pub use_: Use,
    /// The address of the instruction field holding it (for the relocation a
    /// `-q` link kept there), 0 when unknown.
    pub field: u64,
    /// For an [`Use::Access`] through a pc-relative operand that no register
    /// can offset (x86-64 `addsd .LC0(%rip),%xmm0`): how many bytes it reads
    /// or writes, exactly; 0 when unknown or not such an access.
    pub width: u64,
}

/// What must be equal between two instructions, targets apart.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Key {
    X86(x86::X86Key),
    Aarch64(aarch64::A64Key),
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
/// range, into whatever follows it. A call there is taken not to return
/// (compilers end a function with a call only to a `noreturn` callee).
pub(crate) fn falls_through(last: &Decoded) -> bool {
    match &last.key {
        Key::X86(key) => key.falls_through(),
        Key::Aarch64(key) => key.falls_through(),
        Key::Bytes(_) | Key::Data { .. } => false,
    }
}

/// Decodes `[start, end)` of `image` linearly; `None` when the range has no
/// file bytes.
pub(crate) fn decode(image: &Image, start: u64, end: u64) -> Option<Vec<Decoded>> {
    let bytes = image.bytes(start, end.checked_sub(start)?)?;
    Some(match image.arch {
        Arch::X86_64 => x86::decode(image, bytes, start),
        Arch::Aarch64 => aarch64::decode_in(image, bytes, start),
    })
}

/// What the PLT entry holding `address` (in section `section`) jumps to:
/// the GOT slot its indirect jump reads, as its dynamic relocation fills
/// it.
pub(crate) fn plt_slot(image: &Image, section: usize, address: u64) -> Option<&Slot> {
    let s = &image.sections[section];
    let entry = s.address + (address - s.address) / 16 * 16;
    let end = (entry + 16).min(s.address + s.size);
    let decoded = decode(image, entry, end)?;
    let slot = decoded
        .iter()
        .flat_map(|d| d.refs.iter())
        .find(|r| matches!(r.use_, Use::Access | Use::Deref | Use::Jump))?
        .address;
    image.dynamic.get(&slot)
}

/// Decodes `[start, end)` of `image` as the checker compares it: by
/// reachability on x86-64 (unreached bytes are data), linearly on AArch64.
pub(crate) fn decode_function(image: &Image, start: u64, end: u64) -> Option<Vec<Decoded>> {
    let bytes = image.bytes(start, end.checked_sub(start)?)?;
    Some(match image.arch {
        Arch::X86_64 => x86::decode_reachable(image, bytes, start),
        Arch::Aarch64 => aarch64::decode_in(image, bytes, start),
    })
}

/// If the code at `start` (up to `end`) is a lone direct jump, optionally
/// after a landing pad (`endbr64`, `bti c`), the jump's target: the shape
/// of an icf thunk.
pub(crate) fn thunk_target(image: &Image, start: u64, end: u64) -> Option<u64> {
    match image.arch {
        Arch::X86_64 => x86::thunk_target(image, start, end),
        Arch::Aarch64 => aarch64::thunk_target(image, start, end),
    }
}

/// The instruction at `address`, disassembled, with its targets named.
pub(crate) fn disassemble(image: &Image, address: u64) -> String {
    let text = match image.arch {
        Arch::X86_64 => x86::disassemble(image, address),
        Arch::Aarch64 => aarch64::disassemble(image, address),
    };
    let Some(text) = text else {
        return format!("<no code at {address:#x}>");
    };
    let targets: Vec<String> = decode_one(image, address)
        .map(|d| d.refs.iter().map(|r| image.describe(r.address)).collect())
        .unwrap_or_default();
    if targets.is_empty() {
        text
    } else {
        format!("{text}  <{}>", targets.join(", "))
    }
}

fn decode_one(image: &Image, address: u64) -> Option<Decoded> {
    let len = match image.arch {
        Arch::X86_64 => 15,
        Arch::Aarch64 => 4,
    };
    let bytes = image
        .bytes(address, len)
        .or_else(|| image.bytes_to_section_end(address))?;
    let decoded = match image.arch {
        Arch::X86_64 => x86::decode(image, bytes, address),
        Arch::Aarch64 => aarch64::decode_in(image, bytes, address),
    };
    decoded.into_iter().next()
}
