//! What both lifters share: buffers reused from one function to the next,
//! marker relocations riding on their instruction, where control goes
//! when it runs off a function's end, and the sketch of a function (its
//! references and the shape of its operations) that spares lifting the
//! functions nothing else can equal.

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

/// A function's references and a hash of its operations, read without
/// lifting it to its key ([`crate::Architecture::sketch`]). The analysis lifts
/// only functions whose shape another shares: a function with a shape of
/// its own cannot fold, and its references are all the analysis needs of
/// it (which addresses it takes, which places it jumps into).
#[derive(Debug)]
pub struct Sketch {
    /// Equal for any two functions whose keys are equal.
    pub shape: u64,
    /// The function as [`crate::lift`] gives it, its references only: `refs` (the
    /// same references, maybe in another order) and `fall_through`.
    pub function: Function,
}

/// Where a sketch of a function must decode, found by a decode of the
/// same bytes that came before ([`crate::LinkedScan::marks`]): the
/// instructions that may name a place outside the function or hold a
/// relocation, and the last one (whether control runs off the end). That
/// decode gives marks only where it saw nothing else that could stop or
/// change a sketch: every instruction decodes, every branch landing inside
/// the function lands on an instruction's first byte, and the last
/// instruction is no `nop` (no padding to walk). The analysis sketches an
/// image's functions from the reader's marks ([`crate::sketch_marked`])
/// rather than decoding them whole a second time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SketchMarks {
    /// Offsets of the marked instructions from the function's first byte,
    /// ascending.
    pub marked: Box<[u32]>,
    /// Offset of the last instruction.
    pub last: u32,
}

impl SketchMarks {
    /// Marks the instructions at `offsets` (ascending) too: those that
    /// hold the relocations a reader made of the references it kept.
    pub fn add(&mut self, offsets: &[u32]) {
        if offsets.is_empty() {
            return;
        }
        let mut marked = Vec::with_capacity(self.marked.len() + offsets.len());
        let (mut old, mut new) = (self.marked.iter().peekable(), offsets.iter().peekable());
        loop {
            let next = match (old.peek(), new.peek()) {
                (Some(&&a), Some(&&b)) if a <= b => old.next(),
                (Some(_), Some(_)) | (None, Some(_)) => new.next(),
                (Some(_), None) => old.next(),
                (None, None) => break,
            };
            if let Some(&offset) = next
                && marked.last() != Some(&offset)
            {
                marked.push(offset);
            }
        }
        self.marked = marked.into();
    }
}

/// A hash of a function's operations that does not depend on their order
/// (the key walks blocks in the order control reaches them, not in address
/// order) nor on padding: a function's operations as a multiset, and how
/// many. Two functions with equal keys hold the same operations, so their
/// shapes are equal; the converse need not hold.
#[derive(Default)]
pub(crate) struct Shape {
    sum: u64,
    count: u64,
}

impl Shape {
    pub(crate) fn add(&mut self, operation: u64) {
        self.sum = self.sum.wrapping_add(mix(operation));
        self.count += 1;
    }

    pub(crate) fn finish(&self) -> u64 {
        mix(self.sum ^ mix(self.count))
    }
}

/// SplitMix64's finalizer: every input bit moves every output bit.
fn mix(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How many blocks at the end of the walk order `layout` gives are
/// padding the key leaves out: blocks that nothing reaches, nothing
/// branches to, that hold only instructions the lifter merges into a `nop`
/// without operands (`padding`, by index into `decoded`) and that end the
/// function's bytes: alignment padding after a function's last
/// instruction. A Mach-O atom holds its padding (an ELF section under
/// `-ffunction-sections` does not), and two copies of one function differ
/// in it by where they sit. Where there are any, the instruction before
/// the padding cannot run into it, or the walk would have reached it.
/// The lifter and the sketch both ask this, so they agree.
pub(crate) fn trailing_padding(
    layout: &cfg::Layout,
    decoded: &[cfg::Decoded],
    padding: impl Fn(usize) -> bool,
    size: u32,
) -> usize {
    // Only what ends the function's bytes: an unreached block of nops in
    // the middle (alignment before a loop head) stays, and so does the
    // fall-through of whatever ends the function.
    let mut end = size;
    let mut count = layout.blocks.len();
    while let Some(last) = count.checked_sub(1) {
        let block = &layout.blocks[last];
        let insts = block.insts.clone();
        let is_padding = !block.reached
            && insts
                .clone()
                .last()
                .is_some_and(|i| decoded[i].at + decoded[i].len == end)
            && insts.clone().all(&padding);
        let targeted = layout.blocks[..count]
            .iter()
            .any(|b| b.succs.iter().any(|s| s.0 as usize == last));
        if !is_padding || targeted {
            break;
        }
        end = insts.clone().next().map_or(end, |i| decoded[i].at);
        count = last;
    }
    layout.blocks.len() - count
}
