//! Functions that never return (`abort`, `__stack_chk_fail`, `__cxa_throw`,
//! C++'s `std::__throw_*`, Rust's panics), known by name: the places code
//! calls them at, their own symbols and the PLT entries that bind them.
//! What follows a call to one is not the call's continuation but another
//! block, reached along other paths, so the x86-64 walk (`reach.rs`) does
//! not decode past it and the AArch64 page analysis (`aarch64_flow.rs`)
//! does not carry the caller's registers into it.
//!
//! A name is trusted only where the runtime provides the function: a PLT
//! entry binding a name the image does not define. A definition in the
//! image (a program's own `err`, or a statically linked C library's `exit`,
//! `abort`, `__stack_chk_fail`) counts only when its code is proved never
//! to return (but for `_Unwind_Resume`, trusted as the unwinder's): no
//! path from its entry (or its landing pads) reaches a
//! return, an indirect jump, an undecodable instruction, the end of its
//! function or a jump out of it, except through a call or jump to another
//! function proved the same way (glibc's `exit` ends with a call of
//! `__run_exit_handlers`, itself never returning), or to a trusted PLT
//! entry; other calls are taken to return. Any other callee is proved the
//! same way when a check asks about it (`call_never_returns`, once per
//! image and callee): a program's own `die` ending in a call of `exit`.
//! The proofs are co-inductive: a set of functions each of whose paths
//! ends in a trap, a loop or a call
//! of one of the set never returns. A call of an unknown callee (through a
//! register, or a slot no one fixed) as a function's last instruction ends
//! its path: a compiler lets nothing follow a call only when the callee is
//! `noreturn` (LLVM's `report_bad_alloc_error` ends calling its handler).
//! Main assumptions: a function the
//! image does not define, of one of these names, is the one the C, C++ or
//! Rust runtime defines; a callee returns, if at all, where its call would
//! (the calling convention: none pops its return address to leave its
//! caller's caller).

use std::collections::{BTreeSet, HashSet};

use iced_x86::{Decoder, DecoderOptions, FlowControl, Mnemonic, OpKind};
use yaxpeax_arm::armv8::a64::{Opcode, Operand};

use crate::decode;
use crate::image::{Arch, Image, SectionRole, Slot, SymbolKind};

/// C and POSIX functions, and the C++ ABI's, that never return.
const NAMES: [&str; 30] = [
    "abort",
    "exit",
    "_exit",
    "_Exit",
    "quick_exit",
    "__stack_chk_fail",
    "__assert_fail",
    "__assert_perror_fail",
    "__fortify_fail",
    "__chk_fail",
    "__libc_fatal",
    "longjmp",
    "_longjmp",
    "siglongjmp",
    "__longjmp_chk",
    "pthread_exit",
    "err",
    "errx",
    "verr",
    "verrx",
    "__cxa_throw",
    "__cxa_rethrow",
    "__cxa_bad_cast",
    "__cxa_bad_typeid",
    "__cxa_pure_virtual",
    "__cxa_deleted_virtual",
    "__cxa_throw_bad_array_new_length",
    "__cxa_call_unexpected",
    "_Unwind_Resume",
    "_ZSt9terminatev",
];

/// Functions that never return and that each program defines for itself,
/// hidden (so local in a linked image): clang's landing pad for
/// `noexcept`, `__cxa_begin_catch` then `std::terminate`. The name is
/// reserved to the implementation.
const HIDDEN_NAMES: [&str; 1] = ["__clang_call_terminate"];

/// Functions that never return whose definition no proof can show it:
/// the unwinder's `_Unwind_Resume` (libgcc's, LLVM's libunwind) leaves
/// through a return into the landing pad it installs. A name reserved to
/// the implementation, trusted even where the image defines it (a
/// statically linked C++ program).
const TRUSTED_DEFINITIONS: [&str; 1] = ["_Unwind_Resume"];

/// Mangled prefixes of functions that never return: C++'s
/// `std::__throw_*`, LLVM's fatal errors, Rust's panics and
/// `handle_alloc_error`.
const PREFIXES: [&str; 6] = [
    "_ZN4llvm18report_fatal_error",
    "_ZN4llvm25llvm_unreachable_internal",
    "_ZN4core9panicking",
    "_ZN4core6option13unwrap_failed",
    "_ZN4core6result13unwrap_failed",
    "_ZN5alloc5alloc18handle_alloc_error",
];

/// The same Rust functions by path, for symbols in Rust's v0 mangling
/// (`_RNvNtCs…_4core9panicking9panic_fmt`), which a crate's hash and
/// instantiating crate break up: compared demangled, without the hash.
const RUST_PATHS: [&str; 4] = [
    "core::panicking::",
    "core::option::unwrap_failed",
    "core::result::unwrap_failed",
    "alloc::alloc::handle_alloc_error",
];

/// Whether the function named `name` never returns.
pub(crate) fn never_returns(name: &str) -> bool {
    let name = name.split('@').next().unwrap_or(name);
    NAMES.contains(&name)
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || is_std_throw(name)
        || (name.starts_with("_R") && {
            let path = format!("{:#}", rustc_demangle::demangle(name));
            RUST_PATHS.iter().any(|prefix| path.starts_with(prefix))
        })
}

/// `std::__throw_*` (`_ZSt` + length + `__throw_`).
fn is_std_throw(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("_ZSt") else {
        return false;
    };
    rest.trim_start_matches(|c: char| c.is_ascii_digit())
        .starts_with("__throw_")
}

/// The places in `image` a call goes to a function that never returns
/// (its symbol, when its code is proved never to return, or a PLT entry
/// binding its name, when the image does not define it), sorted.
pub(crate) fn noreturn_entries(image: &Image) -> Vec<u64> {
    let mut named = Vec::new();
    let mut trusted = Vec::new();
    for s in &image.symbols {
        // A program's own static function may take one of these names.
        if s.kind != SymbolKind::Function
            || !((s.global && never_returns(&s.name)) || HIDDEN_NAMES.contains(&s.name.as_str()))
        {
            continue;
        }
        if TRUSTED_DEFINITIONS.contains(&base_name(&s.name)) {
            trusted.push(s.address);
        } else {
            named.push(s.address);
        }
    }
    let defined = defined_functions(image);
    for (entry, slot) in decode::plt_entries(image) {
        if let Slot::Named(name, _) = slot
            && trusted_by_name(&defined, name)
        {
            trusted.push(entry);
        }
    }
    trusted.sort_unstable();
    trusted.dedup();
    let slots = named_noreturn_slots(image);
    let mut entries = Prover::new(image, &trusted, &slots).prove(&named);
    entries.extend(trusted);
    entries.sort_unstable();
    entries.dedup();
    entries
}

/// Whether the function at `target` never returns, by the same proofs,
/// taking [`Image::noreturn_entries`] for known.
pub(crate) fn proves(image: &Image, target: u64) -> bool {
    !Prover::new(image, &image.noreturn_entries, &image.noreturn_slots)
        .prove(&[target])
        .is_empty()
}

/// Whether a call of `target` never comes back: one of
/// [`Image::noreturn_entries`], or a function whose code the same proofs
/// show never returns (a program's own `exit_with_usage` ending in a call
/// of `exit`, Rust's `slice_index_fail`: no list of names keeps up with
/// them), proved once per image ([`Image::proved_noreturn`]).
pub(crate) fn call_never_returns(image: &Image, target: u64) -> bool {
    if image.noreturn_entries.binary_search(&target).is_ok() {
        return true;
    }
    let known = image
        .proved_noreturn
        .lock()
        .ok()
        .and_then(|proved| proved.get(&target).copied());
    known.unwrap_or_else(|| {
        let proved = proves(image, target);
        if let Ok(mut cache) = image.proved_noreturn.lock() {
            cache.insert(target, proved);
        }
        proved
    })
}

/// The GOT slots in `image` a call through goes to a function that never
/// returns: a slot holding one of `entries` (see [`noreturn_entries`]), or
/// bound by name to one the image does not define (as its PLT entries
/// are trusted), sorted.
pub(crate) fn noreturn_slots(image: &Image, entries: &[u64]) -> Vec<u64> {
    let mut slots = named_noreturn_slots(image);
    // A slot the link fixed (`RELATIVE`, or a word of a static GOT).
    for section in image.sections.iter().filter(|s| s.role == SectionRole::Got) {
        for slot in (section.address..section.address + section.size).step_by(8) {
            if image
                .got_constant(slot)
                .is_some_and(|a| entries.binary_search(&a).is_ok())
            {
                slots.push(slot);
            }
        }
    }
    slots.sort_unstable();
    slots.dedup();
    slots
}

/// The GOT slots bound by name to a function that never returns and that
/// the image does not define (trusted as its PLT entries are), sorted.
fn named_noreturn_slots(image: &Image) -> Vec<u64> {
    let defined = defined_functions(image);
    let mut slots: Vec<u64> = image
        .dynamic
        .iter()
        .filter(|(_, slot)| match slot {
            Slot::Named(name, _) => trusted_by_name(&defined, name),
            Slot::Address(_) => false,
        })
        .map(|(&address, _)| address)
        .collect();
    slots.sort_unstable();
    slots
}

/// The names of the functions `image` defines, without versions.
fn defined_functions(image: &Image) -> HashSet<&str> {
    image
        .symbols
        .iter()
        .filter(|s| s.kind == SymbolKind::Function)
        .map(|s| base_name(&s.name))
        .collect()
}

/// Whether a PLT entry or GOT slot binding `name` reaches a function that
/// never returns by its name alone: the runtime's, which the image does
/// not define (or the unwinder's, wherever it is).
fn trusted_by_name(defined: &HashSet<&str>, name: &str) -> bool {
    never_returns(name)
        && (!defined.contains(base_name(name)) || TRUSTED_DEFINITIONS.contains(&base_name(name)))
}

/// A name without its symbol version (`exit@GLIBC_2.2.5`).
fn base_name(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

/// How far the proofs of one image may decode before giving up (then
/// nothing is proved).
const PROOF_BUDGET: usize = 1 << 20;
/// How many functions a proof may take in besides the named ones.
const MAX_FUNCTIONS: usize = 4096;

/// How one instruction passes control on, for the proofs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Returns to its caller, or may: a return, an indirect jump, an
    /// instruction that does not decode.
    Returns,
    /// Nothing runs after it (`ud2`, `hlt`, `brk`, `udf`: a signal
    /// handler returning runs the trap again).
    Stops,
    /// Goes on at this address.
    Next(u64),
    /// Jumps there.
    Jump(u64),
    /// Jumps to the first, or goes on at the second.
    Branch(u64, u64),
    /// Calls the first; goes on at the second when the call returns.
    Call(u64, u64),
    /// Calls what a register or memory holds; goes on here if it returns.
    IndirectCall(u64),
}

/// The proofs of one image that functions never return.
struct Prover<'a> {
    image: &'a Image,
    /// PLT entries trusted by name, sorted.
    trusted: &'a [u64],
    /// GOT slots a call through never returns from, sorted.
    trusted_slots: &'a [u64],
    /// The functions taken never to return while the proofs run.
    assumed: BTreeSet<u64>,
    /// The functions some path of which returns.
    rejected: HashSet<u64>,
    budget: usize,
}

impl<'a> Prover<'a> {
    fn new(image: &'a Image, trusted: &'a [u64], trusted_slots: &'a [u64]) -> Self {
        Prover {
            image,
            trusted,
            trusted_slots,
            assumed: BTreeSet::new(),
            rejected: HashSet::new(),
            budget: PROOF_BUDGET,
        }
    }

    /// Those of `named` that never return, sorted: the greatest set of
    /// functions (the named ones and those their proofs need) whose every
    /// path ends without returning, given that none of the set returns.
    fn prove(mut self, named: &[u64]) -> Vec<u64> {
        self.assumed.extend(named.iter().copied());
        loop {
            let mut changed = false;
            let members: Vec<u64> = self.assumed.iter().copied().collect();
            for entry in members {
                if !self.assumed.contains(&entry) {
                    continue;
                }
                let Some(needed) = self.paths_end(entry) else {
                    if self.budget == 0 {
                        return Vec::new();
                    }
                    self.assumed.remove(&entry);
                    self.rejected.insert(entry);
                    changed = true;
                    continue;
                };
                for function in needed {
                    if self.assumed.contains(&function) {
                        continue;
                    }
                    if self.rejected.contains(&function) || self.assumed.len() >= MAX_FUNCTIONS {
                        self.assumed.remove(&entry);
                        self.rejected.insert(entry);
                    } else {
                        self.assumed.insert(function);
                    }
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        named
            .iter()
            .copied()
            .filter(|e| self.assumed.contains(e))
            .collect()
    }

    /// Whether a call or jump to `target` never comes back, as far as the
    /// proofs have got.
    fn stops_at(&self, target: u64) -> bool {
        self.trusted.binary_search(&target).is_ok() || self.assumed.contains(&target)
    }

    /// The extent of the function holding `address` (its largest symbol).
    fn function_extent(&self, address: u64) -> Option<(u64, u64)> {
        let (containing, _) = self.image.symbols_around(address);
        containing
            .iter()
            .map(|&id| self.image.symbol(id))
            .filter(|s| s.kind == SymbolKind::Function && s.size > 0)
            .map(|s| (s.address, s.end()))
            .max_by_key(|&(start, end)| (end - start, std::cmp::Reverse(start)))
    }

    /// Follows every path from `entry` (and from its function's landing
    /// pads) through its function: `None` when one may return, else the
    /// functions not yet taken never to return that the paths end in
    /// (a call as the function's last instruction, a jump out of it).
    fn paths_end(&mut self, entry: u64) -> Option<Vec<u64>> {
        let image = self.image;
        let (start, end) = self.function_extent(entry)?;
        let pads = image.landing_pads.partition_point(|&a| a < start)
            ..image.landing_pads.partition_point(|&a| a < end);
        let mut work = vec![entry];
        work.extend(image.landing_pads.get(pads).unwrap_or_default());
        let mut seen = HashSet::new();
        let mut needed = Vec::new();
        while let Some(address) = work.pop() {
            if !seen.insert(address) {
                continue;
            }
            self.budget = self.budget.checked_sub(1)?;
            // Where control goes from here: on in the function, to a
            // function that never returns, or to one the proof needs.
            let leave = |target: u64, work: &mut Vec<u64>, needed: &mut Vec<u64>| {
                if (start..end).contains(&target) {
                    work.push(target);
                    return Some(());
                }
                if self.stops_at(target) {
                    return Some(());
                }
                self.function_extent(target)?;
                needed.push(target);
                Some(())
            };
            match step(image, address, self.trusted_slots) {
                Step::Returns => return None,
                Step::Stops => {}
                Step::Next(next) => {
                    (next < end).then_some(())?;
                    work.push(next);
                }
                Step::Jump(target) => leave(target, &mut work, &mut needed)?,
                Step::Branch(target, next) => {
                    leave(target, &mut work, &mut needed)?;
                    (next < end).then_some(())?;
                    work.push(next);
                }
                // A call of an unknown callee as the function's last
                // instruction: the compiler let nothing follow it, as it
                // does only after a `noreturn` callee (LLVM's
                // `report_bad_alloc_error` ends calling its handler).
                Step::IndirectCall(next) => {
                    if next < end {
                        work.push(next);
                    }
                }
                Step::Call(target, next) => {
                    if self.stops_at(target) {
                        continue;
                    }
                    // A call into the function's own code runs it on this
                    // path (its return may leave the function's caller).
                    if (start..end).contains(&target) {
                        work.push(target);
                    }
                    if next < end {
                        work.push(next);
                    } else {
                        // The function ends with the call: it returns
                        // unless the callee never does.
                        (!(start..end).contains(&target)).then_some(())?;
                        leave(target, &mut work, &mut needed)?;
                    }
                }
            }
        }
        Some(needed)
    }
}

/// How the instruction at `address` passes control on.
fn step(image: &Image, address: u64, trusted_slots: &[u64]) -> Step {
    match image.arch {
        Arch::X86_64 => x86_step(image, address, trusted_slots),
        Arch::Aarch64 => aarch64_step(image, address),
    }
}

fn x86_step(image: &Image, address: u64, trusted_slots: &[u64]) -> Step {
    let Some(bytes) = image
        .bytes(address, 15)
        .or_else(|| image.bytes_to_section_end(address))
    else {
        return Step::Returns;
    };
    // A call or jump through a GOT slot the link fixed (`call
    // *f@GOTPCREL(%rip)`, rustc's calls in a PIE), or one a program's own
    // definition fills, goes where the slot points.
    let mut decoder = Decoder::with_ip(64, bytes, address, DecoderOptions::NONE);
    let instruction = decoder.decode();
    if instruction.is_ip_rel_memory_operand()
        && matches!(
            instruction.flow_control(),
            FlowControl::IndirectCall | FlowControl::IndirectBranch
        )
        && trusted_slots
            .binary_search(&instruction.ip_rel_memory_address())
            .is_ok()
    {
        // `call *abort@GOTPCREL(%rip)`: the runtime's, by name.
        return Step::Stops;
    }
    if instruction.is_ip_rel_memory_operand()
        && let Some(target) = image.got_callee(instruction.ip_rel_memory_address())
    {
        match instruction.flow_control() {
            FlowControl::IndirectCall => return Step::Call(target, instruction.next_ip()),
            FlowControl::IndirectBranch => return Step::Jump(target),
            _ => {}
        }
    }
    x86_step_in(bytes, address)
}

/// How the instruction at the start of `bytes`, loaded at `address`,
/// passes control on.
fn x86_step_in(bytes: &[u8], address: u64) -> Step {
    let mut decoder = Decoder::with_ip(64, bytes, address, DecoderOptions::NONE);
    let instruction = decoder.decode();
    if instruction.is_invalid() {
        return Step::Returns;
    }
    let next = instruction.next_ip();
    let target = matches!(
        instruction.op0_kind(),
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
    )
    .then(|| instruction.near_branch_target());
    match (instruction.mnemonic(), instruction.flow_control(), target) {
        (Mnemonic::Ud0 | Mnemonic::Ud1 | Mnemonic::Ud2 | Mnemonic::Hlt, _, _) => Step::Stops,
        (_, FlowControl::Return, _) => Step::Returns,
        (
            Mnemonic::Iret
            | Mnemonic::Iretd
            | Mnemonic::Iretq
            | Mnemonic::Sysret
            | Mnemonic::Sysretq
            | Mnemonic::Sysexit
            | Mnemonic::Sysexitq,
            _,
            _,
        ) => Step::Returns,
        (_, FlowControl::UnconditionalBranch, Some(target)) => Step::Jump(target),
        (_, FlowControl::UnconditionalBranch | FlowControl::IndirectBranch, _) => Step::Returns,
        (_, FlowControl::ConditionalBranch | FlowControl::XbeginXabortXend, Some(target)) => {
            Step::Branch(target, next)
        }
        (_, FlowControl::Call, Some(target)) => Step::Call(target, next),
        (_, FlowControl::IndirectCall, _) => Step::IndirectCall(next),
        // Indirect and far calls, interrupts (`int3` goes on after a
        // handler returns), system calls: taken to go on.
        _ => Step::Next(next),
    }
}

fn aarch64_step(image: &Image, address: u64) -> Step {
    // The word alone, without the page analysis of its function (which
    // asks these proofs about the calls it meets).
    let Some(instruction) = crate::aarch64::word_at(image, address) else {
        return Step::Returns;
    };
    let next = address.saturating_add(4);
    let branch = instruction
        .operands
        .iter()
        .find_map(|operand| match operand {
            Operand::PCOffset(delta) => Some(address.wrapping_add(*delta as u64)),
            _ => None,
        });
    match (instruction.opcode, branch) {
        (
            Opcode::RET
            | Opcode::RETAA
            | Opcode::RETAB
            | Opcode::ERET
            | Opcode::ERETAA
            | Opcode::ERETAB
            | Opcode::RETAASPPC
            | Opcode::RETABSPPC
            | Opcode::RETAASPPCR
            | Opcode::RETABSPPCR,
            _,
        ) => Step::Returns,
        (Opcode::BRK | Opcode::UDF | Opcode::HLT, _) => Step::Stops,
        (Opcode::B, Some(target)) => Step::Jump(target),
        (Opcode::BL, Some(target)) => Step::Call(target, next),
        (
            Opcode::B
            | Opcode::BL
            | Opcode::BR
            | Opcode::BRAA
            | Opcode::BRAAZ
            | Opcode::BRAB
            | Opcode::BRABZ,
            _,
        ) => Step::Returns,
        (
            Opcode::Bcc(_) | Opcode::CBZ | Opcode::CBNZ | Opcode::TBZ | Opcode::TBNZ,
            Some(target),
        ) => Step::Branch(target, next),
        (Opcode::Bcc(_) | Opcode::CBZ | Opcode::CBNZ | Opcode::TBZ | Opcode::TBNZ, None) => {
            Step::Returns
        }
        (Opcode::BLR | Opcode::BLRAA | Opcode::BLRAAZ | Opcode::BLRAB | Opcode::BLRABZ, _) => {
            Step::IndirectCall(next)
        }
        // The rest go on.
        _ => Step::Next(next),
    }
}

#[cfg(test)]
mod tests {
    use super::{Step, never_returns, x86_step_in};

    #[test]
    fn only_returns_and_what_may_return_end_a_proof() {
        let step = |bytes: &[u8]| x86_step_in(bytes, 0x1000);
        assert_eq!(step(&[0xc3]), Step::Returns); // ret
        assert_eq!(step(&[0xff, 0xe0]), Step::Returns); // jmp *%rax
        assert_eq!(step(&[0x48, 0xcf]), Step::Returns); // iretq
        assert_eq!(step(&[0x0f, 0x0b]), Step::Stops); // ud2
        assert_eq!(step(&[0xf4]), Step::Stops); // hlt
        // int3 goes on where a SIGTRAP handler returns.
        assert_eq!(step(&[0xcc]), Step::Next(0x1001));
        // call 0x2000; jmp 0x1000; je 0x1000
        assert_eq!(
            step(&[0xe8, 0xfb, 0x0f, 0x00, 0x00]),
            Step::Call(0x2000, 0x1005)
        );
        assert_eq!(step(&[0xeb, 0xfe]), Step::Jump(0x1000));
        assert_eq!(step(&[0x74, 0xfe]), Step::Branch(0x1000, 0x1002));
        // call *%rax may come back; syscall goes on.
        assert_eq!(step(&[0xff, 0xd0]), Step::IndirectCall(0x1002));
        assert_eq!(step(&[0x0f, 0x05]), Step::Next(0x1002));
    }

    #[test]
    fn runtime_functions_that_never_return_are_known_by_name() {
        for name in [
            "abort",
            "__stack_chk_fail@GLIBC_2.17",
            "_ZSt20__throw_length_errorPKc",
            "_ZN4llvm18report_fatal_errorEPKcb",
            "_ZN4core9panicking5panic17h0123456789abcdefE",
            // v0 mangling: core::panicking::panic_in_cleanup
            "_RNvNtCsgEmfK2I1SDS_4core9panicking16panic_in_cleanup",
        ] {
            assert!(never_returns(name), "{name}");
        }
        for name in [
            "malloc",
            "_ZSt4endlIcSt11char_traitsIcEERSt13basic_ostreamIT_T0_ES6_",
            "exit_group_helper",
            // core::fmt::write
            "_RNvNtCsgEmfK2I1SDS_4core3fmt5write",
        ] {
            assert!(!never_returns(name), "{name}");
        }
    }
}
