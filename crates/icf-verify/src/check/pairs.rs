//! One pair of functions compared, PLAIN against FOLDED: decoded,
//! matched instruction by instruction (with their exception handlers),
//! and the targets each pair of instructions reaches, for
//! [`super::targets`] to match. Pure: the pairs of a wave run in parallel.

use super::*;

/// Whether `offset` lies in a run of bytes no path reaches that holds no
/// field a kept relocation writes: data both images hold alike at the
/// same offset once the instructions compared equal (x86-64 data a
/// function embeds and reads, `movl .Ldata(%rip), %eax`).
pub(super) fn in_plain_data(code: &[Decoded], offset: u64) -> bool {
    let Ok(offset) = u32::try_from(offset) else {
        return false;
    };
    let at = code.partition_point(|d| d.offset <= offset);
    at.checked_sub(1)
        .map(|i| &code[i])
        .is_some_and(|d| match &d.key {
            Key::Data { data, relocations } => {
                relocations.is_empty() && u64::from(offset - d.offset) < data.len() as u64
            }
            _ => false,
        })
}

pub(super) fn offset_index(offsets: &[u32], offset: u64) -> Option<usize> {
    let offset = u32::try_from(offset).ok()?;
    offsets.binary_search(&offset).ok()
}

/// Whether two references are used alike: the same way, or as an observed
/// address, an access, or a dereferenced pointer load, which the escape
/// scans tell apart and which one image's scan may know less about than
/// the other's (see `compare_code`).
pub(super) fn same_use(a: Use, b: Use) -> bool {
    let data = |u: Use| matches!(u, Use::Address | Use::Access | Use::Deref);
    a == b || (data(a) && data(b))
}

/// Decodes and compares one pair; pure, so pairs run in parallel.
pub(super) fn compare_pair(
    plain: &Image,
    folded: &Image,
    task: &PairTask,
    assume_odr: bool,
) -> PairResult {
    let p = task.plain;
    let mut f = code_extent(folded, task.folded_start);
    let mut followed_thunk = false;
    let plain_is_thunk = decode::thunk_target(plain, p.start, p.end).is_some();
    if assume_odr
        && !plain_is_thunk
        && let Some(target) = decode::thunk_target(folded, f.start, f.end)
        && plain.vague_linkage_function_at(p.start)
        && folded.vague_linkage_function_at(f.start)
        && folded.vague_linkage_function_at(target)
    {
        return PairResult {
            folded: f,
            followed_thunk: true,
            assumed_by_odr: true,
            outcome: Ok(Vec::new()),
            plain_offsets: Vec::new(),
            folded_offsets: Vec::new(),
        };
    }
    if !plain_is_thunk {
        for _ in 0..8 {
            match decode::thunk_target(folded, f.start, f.end) {
                Some(target) => {
                    f = code_extent(folded, target);
                    followed_thunk = true;
                }
                None => break,
            }
        }
    }
    let mut result = PairResult {
        folded: f,
        followed_thunk,
        assumed_by_odr: false,
        outcome: Ok(Vec::new()),
        plain_offsets: Vec::new(),
        folded_offsets: Vec::new(),
    };
    let no_code = |site_p: u64, site_f: u64, which: &str| LocalDifference {
        plain_site: site_p,
        folded_site: site_f,
        code: false,
        kind: DifferenceKind::InstructionsDiffer,
        detail: format!("{which} has no code bytes there"),
    };
    let Some(mut plain_code) = decode::decode_function(plain, p.start, p.end) else {
        result.outcome = Err(no_code(p.start, f.start, "PLAIN"));
        return result;
    };
    let Some(mut folded_code) = decode::decode_function(folded, f.start, f.end) else {
        result.outcome = Err(no_code(p.start, f.start, "FOLDED"));
        return result;
    };
    if plain.arch == image::Arch::Aarch64 {
        aarch64::relocated_words(
            plain,
            folded,
            (p.start, f.start),
            &mut plain_code,
            &mut folded_code,
        );
    }
    result.plain_offsets = plain_code.iter().map(|d| d.offset).collect();
    result.folded_offsets = folded_code.iter().map(|d| d.offset).collect();
    result.outcome = compare_code(
        plain,
        folded,
        task,
        p,
        f,
        &plain_code,
        &folded_code,
        &result,
    );
    if result.outcome.is_ok()
        && let Err(difference) = compare_handlers(plain, folded, p.start, f.start)
    {
        result.outcome = Err(difference);
    }
    result
}

/// Whether the exception tables of two functions whose code is equal say
/// the same: call sites and landing pads at the same offsets, and the
/// same actions, catching the same types (`eh::Handlers`). A fold or a
/// shrink that gives a function another's table (one that catches
/// another type) changes what it does when something throws.
pub(super) fn compare_handlers(
    plain: &Image,
    folded: &Image,
    plain_start: u64,
    folded_start: u64,
) -> Result<(), LocalDifference> {
    let differ = |detail: String| LocalDifference {
        plain_site: plain_start,
        folded_site: folded_start,
        code: true,
        kind: DifferenceKind::HandlersDiffer,
        detail,
    };
    match (
        crate::eh::handlers(plain, plain_start),
        crate::eh::handlers(folded, folded_start),
    ) {
        (None, None) => Ok(()),
        (Some(Ok(p)), Some(Ok(f))) if p == f => Ok(()),
        (Some(Ok(p)), Some(Ok(f))) => {
            let first = p
                .call_sites
                .iter()
                .zip(&f.call_sites)
                .find(|(a, b)| a != b)
                .map_or_else(
                    || {
                        format!(
                            "{} call sites in PLAIN, {} in FOLDED",
                            p.call_sites.len(),
                            f.call_sites.len()
                        )
                    },
                    |(a, b)| format!("call site {a:?} in PLAIN, {b:?} in FOLDED"),
                );
            Err(differ(format!("the exception tables differ: {first}")))
        }
        (Some(Err(why)), _) | (_, Some(Err(why))) => Err(differ(why)),
        (Some(_), None) => Err(differ("FOLDED has no exception table".to_string())),
        (None, Some(_)) => Err(differ("PLAIN has no exception table".to_string())),
    }
}

/// Whether `longer` is `shorter` and one `nop` after the jump that ends
/// it: how lld and GNU ld relax `jmp *f@GOTPCREL(%rip)` (`jmp f; nop`),
/// where the other copy jumped to `f` directly. Nothing runs the `nop`
/// (a jump to it would have no counterpart, and is checked as a target).
pub(super) fn only_a_nop_after_a_jump(shorter: &[Decoded], longer: &[Decoded]) -> bool {
    let mnemonic = |d: Option<&Decoded>| match d.map(|d| &d.key) {
        Some(Key::X86(key)) => Some(key.mnemonic),
        _ => None,
    };
    // The `nop` decoded, or left as bytes no path reaches.
    let nop = |d: Option<&Decoded>| match d.map(|d| &d.key) {
        Some(Key::X86(key)) => key.mnemonic == iced_x86::Mnemonic::Nop,
        Some(Key::Data { data, relocations }) => data == &[0x90] && relocations.is_empty(),
        _ => false,
    };
    longer.len() == shorter.len() + 1
        && mnemonic(shorter.last()) == Some(iced_x86::Mnemonic::Jmp)
        && mnemonic(longer.get(shorter.len().wrapping_sub(1))) == Some(iced_x86::Mnemonic::Jmp)
        && nop(longer.last())
}

#[allow(clippy::too_many_arguments)]
pub(super) fn compare_code(
    plain: &Image,
    folded: &Image,
    task: &PairTask,
    p: Extent,
    f: Extent,
    plain_code: &[Decoded],
    folded_code: &[Decoded],
    offsets: &PairResult,
) -> Result<Vec<TargetCheck>, LocalDifference> {
    let mut checks = Vec::new();
    let differ = |a: u64, b: u64, kind: DifferenceKind, detail: String| LocalDifference {
        plain_site: a,
        folded_site: b,
        code: true,
        kind,
        detail,
    };
    for (left, right) in plain_code.iter().zip(folded_code) {
        let (a, b) = (
            p.start + u64::from(left.offset),
            f.start + u64::from(right.offset),
        );
        let same_shape = left.key == right.key
            && left.refs.len() == right.refs.len()
            && left
                .refs
                .iter()
                .zip(&right.refs)
                .all(|(x, y)| same_use(x.use_, y.use_));
        if !same_shape {
            let detail = match (&left.key, &right.key) {
                (Key::Data { .. }, _) | (_, Key::Data { .. }) => {
                    "data in code (bytes no path reaches) differs"
                }
                (Key::Bytes(_), _) | (_, Key::Bytes(_)) => "undecodable bytes differ",
                _ => "the instructions differ",
            };
            return Err(differ(
                a,
                b,
                DifferenceKind::InstructionsDiffer,
                detail.to_string(),
            ));
        }
    }
    if plain_code.len() != folded_code.len()
        && !only_a_nop_after_a_jump(plain_code, folded_code)
        && !only_a_nop_after_a_jump(folded_code, plain_code)
    {
        let n = plain_code.len().min(folded_code.len());
        let at = |code: &[Decoded], start: u64, end: u64| {
            code.get(n).map_or(end, |d| start + u64::from(d.offset))
        };
        return Err(differ(
            at(plain_code, p.start, p.end),
            at(folded_code, f.start, f.end),
            DifferenceKind::CodeLengthDiffers,
            format!(
                "PLAIN has {} instructions, FOLDED {}",
                plain_code.len(),
                folded_code.len()
            ),
        ));
    }
    // Every in-function target is checked after the instructions all
    // compared equal: a target's index among differently decoded code says
    // less than the first instruction that differs.
    for (left, right) in plain_code.iter().zip(folded_code) {
        let (a, b) = (
            p.start + u64::from(left.offset),
            f.start + u64::from(right.offset),
        );
        for (x, y) in left.refs.iter().zip(&right.refs) {
            let inside = p.contains(x.address) && f.contains(y.address);
            let own_start_observed =
                x.address == p.start && matches!(x.use_, Use::Address | Use::Access | Use::Deref);
            if inside && !own_start_observed {
                let i = offset_index(&offsets.plain_offsets, x.address - p.start);
                let j = offset_index(&offsets.folded_offsets, y.address - f.start);
                // The same place of data in code (a Mach-O jump table in
                // `__text`, which `lea` addresses), compared as bytes with
                // the rest of the function's data runs.
                let same_offset = x.address - p.start == y.address - f.start;
                let same_data = same_offset
                    && ((plain.in_data_in_code(x.address) && folded.in_data_in_code(y.address))
                        || in_plain_data(plain_code, x.address - p.start));
                if (i.is_none() || i != j) && !same_data {
                    return Err(differ(
                        a,
                        b,
                        DifferenceKind::TargetsDiffer,
                        format!(
                            "{} in PLAIN and {} in FOLDED are not the same instruction",
                            plain.describe(x.address),
                            folded.describe(y.address)
                        ),
                    ));
                }
                continue;
            }
            // The two images' escape scans may disagree (a jump table one
            // could not bound, a callee without a DWARF prototype). PLAIN's
            // decides: its facts describe what the code must do, and
            // FOLDED's code stands in for it; FOLDED's facts are those of
            // whatever was folded there (the kept copy's prototype says
            // nothing of what this function's callers read).
            let use_ = x.use_;
            checks.push(TargetCheck {
                plain_target: x.address,
                folded_target: y.address,
                use_,
                plain_field: x.field,
                folded_field: y.field,
                plain_site: a,
                folded_site: b,
                // The keys are equal: so are the operands' sizes, and the
                // lengths the code passes its callees.
                width: if use_ == Use::Access { x.width } else { 0 },
                reach: if matches!(use_, Use::Access | Use::Deref) {
                    x.reach
                } else {
                    Reach::Unknown
                },
                functions: Some((p, f)),
                via: task.via,
                root: task.root,
            });
        }
    }
    // Code that runs off its end continues in what follows it, which must
    // correspond as a jump target would. So does a call there whose
    // callee PLAIN does not show never returns: compilers end a function
    // with a call only to a `noreturn` callee, but a callee that returns
    // runs on into whatever follows (fixtures t11b, t23). `nop` padding
    // on the way is no place of its own (a new layout may add some where
    // a function needs its alignment).
    if let (Some(left), Some(right)) = (plain_code.last(), folded_code.last())
        && (code::falls_through(left) || (is_call(left) && !never_returns_from(plain, left)))
    {
        checks.push(TargetCheck {
            plain_target: plain.past_nop_padding(p.end),
            folded_target: folded.past_nop_padding(f.end),
            use_: Use::Jump,
            plain_field: 0,
            folded_field: 0,
            plain_site: p.start + u64::from(left.offset),
            folded_site: f.start + u64::from(right.offset),
            width: 0,
            reach: Reach::Unknown,
            functions: Some((p, f)),
            via: task.via,
            root: task.root,
        });
    }
    Ok(checks)
}

/// Whether `decoded` is a call (`call`, `bl`, `blr`).
pub(super) fn is_call(decoded: &Decoded) -> bool {
    match &decoded.key {
        Key::X86(key) => key.mnemonic == iced_x86::Mnemonic::Call,
        Key::Aarch64(key) => crate::aarch64_flow::is_call(key.0.opcode),
        Key::Bytes(_) | Key::Data { .. } => false,
    }
}

/// Whether the call `decoded` goes to a function that never returns:
/// one of [`Image::noreturn_entries`], directly or through one of
/// [`Image::noreturn_slots`], or one whose code a proof shows never
/// returns (Rust's `slice_index_fail` and the like, which no list of
/// names keeps up with; see `noreturn.rs`), directly or through a GOT
/// slot ([`Image::got_callee`]).
pub(super) fn never_returns_from(image: &Image, decoded: &Decoded) -> bool {
    decoded
        .refs
        .iter()
        .filter(|r| r.use_ == crate::code::Use::Call)
        .any(|r| {
            if image.noreturn_slots.binary_search(&r.address).is_ok() {
                return true;
            }
            let target = image.got_callee(r.address).unwrap_or(r.address);
            crate::noreturn::call_never_returns(image, target)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::Mnemonic;

    fn x86(offset: u32, mnemonic: Mnemonic) -> Decoded {
        Decoded {
            offset,
            key: Key::X86(code::X86Key {
                mnemonic,
                encoding: iced_x86::EncodingKind::Legacy,
                prefixes: 0,
                evex: 0,
                operands: [code::Operand::None; 5],
            }),
            refs: Vec::new(),
        }
    }

    fn data(offset: u32, bytes: &[u8], relocations: Vec<(u32, u32)>) -> Decoded {
        Decoded {
            offset,
            key: Key::Data {
                data: bytes.to_vec(),
                relocations,
            },
            refs: Vec::new(),
        }
    }

    #[test]
    fn a_relaxed_got_jump_is_the_direct_jump_and_one_nop() {
        let direct = [x86(0, Mnemonic::Mov), x86(3, Mnemonic::Jmp)];
        let relaxed = [direct[0].clone(), direct[1].clone(), x86(8, Mnemonic::Nop)];
        assert!(only_a_nop_after_a_jump(&direct, &relaxed));
        // The `nop` no path reaches, left as bytes.
        let undecoded = [
            direct[0].clone(),
            direct[1].clone(),
            data(8, &[0x90], vec![]),
        ];
        assert!(only_a_nop_after_a_jump(&direct, &undecoded));
        // Anything else after the jump, a call for the jump, or two more.
        let int3 = [direct[0].clone(), direct[1].clone(), x86(8, Mnemonic::Int3)];
        assert!(!only_a_nop_after_a_jump(&direct, &int3));
        let call = [x86(0, Mnemonic::Mov), x86(3, Mnemonic::Call)];
        let call_nop = [call[0].clone(), call[1].clone(), x86(8, Mnemonic::Nop)];
        assert!(!only_a_nop_after_a_jump(&call, &call_nop));
        let two = [
            relaxed[0].clone(),
            relaxed[1].clone(),
            x86(8, Mnemonic::Nop),
            x86(9, Mnemonic::Nop),
        ];
        assert!(!only_a_nop_after_a_jump(&direct, &two));
    }

    #[test]
    fn embedded_data_compares_as_bytes_only_without_relocated_fields() {
        let code = [
            x86(0, Mnemonic::Ret),
            data(1, &[1, 2, 3, 4], vec![]),
            data(5, &[0; 8], vec![(0, 1)]),
        ];
        assert!(!in_plain_data(&code, 0), "an instruction");
        assert!(in_plain_data(&code, 1) && in_plain_data(&code, 4));
        assert!(!in_plain_data(&code, 5), "a run holding a relocated field");
        assert!(!in_plain_data(&code, 13), "past the last run");
        assert!(!in_plain_data(&code, u64::MAX));
    }

    #[test]
    fn address_uses_a_scan_may_tell_apart_compare_alike() {
        assert!(same_use(Use::Address, Use::Access));
        assert!(same_use(Use::Deref, Use::Address));
        assert!(same_use(Use::Call, Use::Call));
        assert!(!same_use(Use::Call, Use::Address));
        assert_eq!(offset_index(&[0, 4, 8], 8), Some(2));
        assert_eq!(offset_index(&[0, 4, 8], 6), None);
        assert_eq!(offset_index(&[0], u64::MAX), None);
    }
}
