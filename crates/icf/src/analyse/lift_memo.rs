//! Keys made once for identical copies. A C++ program carries the same
//! inline function and template instance in every object that uses it
//! (one COMDAT group per copy); on opt_lite two thirds of the functions
//! whose shape another shares are such copies. A function's key is a
//! function of its lifter input alone ([`CodeInput`]): its bytes, where it
//! sits in its section, its relocations with their resolved targets, the
//! places something enters it. Two copies whose inputs are equal get the
//! same key, so the second is cloned rather than decoded and lifted again
//! (a key is its code's fingerprint and its references: a clone costs
//! memory only for the references).
//!
//! One part of the input differs between copies by construction: the
//! target naming the function's own section. Where the lift refers to it
//! (a fall-through off the function's end, a position reference), the key
//! depends on it; such a function is lifted every time. Whether it does
//! is itself a function of the rest of the input, so every copy agrees.

use icf_fold::body::Body;
use icf_ir::{CodeInput, Function};
use rustc_hash::FxHashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The lift input's fingerprint: every part of it but `own_section`, and
/// whether the key keeps the layout because something enters the function.
fn fingerprint(input: &CodeInput<'_>) -> u128 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut word = |value: u64| hasher.update(&value.to_le_bytes());
    word(input.arch as u64);
    word(input.section_offset);
    word(input.section_size);
    word(input.bytes.len() as u64);
    word(input.relocs.len() as u64);
    for r in input.relocs {
        word(u64::from(r.offset) | u64::from(r.size) << 32 | u64::from(r.pc_relative) << 40);
        word(r.mask);
        word(u64::from(r.r_type) | u64::from(r.target.0) << 32);
        word(r.addend as u64);
        word(r.own_addend as u64);
    }
    for list in [input.entry_points, input.data_in_code, input.code_resumes] {
        word(list.len() as u64);
        for &offset in list {
            word(u64::from(offset));
        }
    }
    hasher.update(input.bytes);
    hasher.digest128()
}

/// What the memo did: functions lifted, and keys cloned from an identical
/// copy's. Two threads may lift the same input at once, so the split can
/// vary by a few between runs; the keys cannot.
#[derive(Clone, Copy, Debug, Default)]
pub struct LiftCounts {
    pub lifted: usize,
    pub cloned: usize,
}

/// Shards of the memo, so that threads rarely wait on one another.
const SHARDS: usize = 16;

/// What sketching an input gave, for its copies.
#[derive(Clone)]
enum Sketched {
    /// The shape, and the body alone ([`Body::alone`]) of the first copy.
    Shape(u64, Body),
    /// No sketch: the function is lifted.
    Unsketched,
    /// The sketch refers to the function's own section.
    OwnSection,
}

/// The keys made so far, by fingerprint (`None` for an input whose lift
/// refers to its own section), and the sketches.
#[derive(Default)]
pub(crate) struct LiftMemo {
    /// Off for a linked image: its functions each sit at their own place in
    /// one section, so no two inputs are equal and the memo would only
    /// hold every key a second time.
    off: bool,
    shards: [Mutex<FxHashMap<u128, Option<Body>>>; SHARDS],
    sketches: [Mutex<FxHashMap<u128, Sketched>>; SHARDS],
    /// Keys cloned rather than lifted, and functions lifted.
    cloned: AtomicUsize,
    lifted: AtomicUsize,
}

impl LiftMemo {
    /// A memo that lifts and sketches every input (see `off`).
    pub(crate) fn off() -> LiftMemo {
        LiftMemo {
            off: true,
            ..LiftMemo::default()
        }
    }

    /// The key of the function `input` describes: cloned from an identical
    /// input's if one was lifted, else `make` of its lift, where `make`
    /// narrows the lifted function's references and reduces it to its key.
    pub(crate) fn key(&self, input: &CodeInput<'_>, make: impl FnOnce(Function) -> Body) -> Body {
        if self.off {
            self.lifted.fetch_add(1, Ordering::Relaxed);
            return make(icf_arch::lift(input));
        }
        let fingerprint = fingerprint(input);
        let shard = &self.shards[(fingerprint as usize) % SHARDS];
        // The lock is let go before any lifting: the lookup's answer is
        // taken out of the map.
        let known: Option<Option<Body>> = lock(shard).get(&fingerprint).cloned();
        if let Some(Some(body)) = known {
            self.cloned.fetch_add(1, Ordering::Relaxed);
            return body;
        }
        self.lifted.fetch_add(1, Ordering::Relaxed);
        let function = icf_arch::lift(input);
        let own_section = input.own_section;
        let shareable = function.refs.iter().all(|r| r.target != own_section);
        let body = make(function);
        if known.is_none() {
            lock(shard).insert(fingerprint, shareable.then(|| body.clone()));
        }
        body
    }

    /// The sketch of the function `input` describes, as candidate `id`:
    /// its shape and body alone, or `None` where it has none (see
    /// [`icf_arch::sketch`]). A copy's comes from the first copy's, the
    /// body made `id`'s; else `make` gives them from what `sketch` gives
    /// (the references narrowed, the body alone made).
    pub(crate) fn sketch(
        &self,
        input: &CodeInput<'_>,
        id: u32,
        sketch: impl FnOnce(&CodeInput<'_>) -> Option<icf_arch::Sketch>,
        make: impl FnOnce(icf_arch::Sketch) -> (u64, Body),
    ) -> Option<(u64, Body)> {
        if self.off {
            return sketch(input).map(make);
        }
        let fingerprint = fingerprint(input);
        let shard = &self.sketches[(fingerprint as usize) % SHARDS];
        let known = lock(shard).get(&fingerprint).cloned();
        match known {
            Some(Sketched::Shape(shape, body)) => return Some((shape, body.alone_as(id))),
            Some(Sketched::Unsketched) => return None,
            Some(Sketched::OwnSection) | None => {}
        }
        let Some(sketch) = sketch(input) else {
            lock(shard).insert(fingerprint, Sketched::Unsketched);
            return None;
        };
        let own_section = input.own_section;
        let shareable = sketch.function.refs.iter().all(|r| r.target != own_section);
        let (shape, body) = make(sketch);
        if known.is_none() {
            let entry = match shareable {
                true => Sketched::Shape(shape, body.clone()),
                false => Sketched::OwnSection,
            };
            lock(shard).insert(fingerprint, entry);
        }
        Some((shape, body))
    }

    /// Drops the sketches, once every function is sketched: their memory
    /// serves the lifts that follow.
    pub(crate) fn forget_sketches(&self) {
        for shard in &self.sketches {
            *lock(shard) = FxHashMap::default();
        }
    }

    /// How many functions were lifted, and how many keys cloned instead.
    pub(crate) fn counts(&self) -> LiftCounts {
        LiftCounts {
            lifted: self.lifted.load(Ordering::Relaxed),
            cloned: self.cloned.load(Ordering::Relaxed),
        }
    }
}

/// A shard, even if a thread panicked holding it: the map is only ever
/// inserted into whole entries.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::LiftMemo;
    use icf_fold::body::Body;
    use icf_ir::{Arch, CodeInput, CodeReloc, TargetId};

    fn input<'a>(bytes: &'a [u8], relocs: &'a [CodeReloc], own_section: u32) -> CodeInput<'a> {
        CodeInput {
            arch: Arch::X86_64,
            bytes,
            section_offset: 0,
            section_size: 64,
            relocs,
            entry_points: &[],
            own_section: TargetId(own_section),
            data_in_code: &[],
            code_resumes: &[],
        }
    }

    fn key(memo: &LiftMemo, input: &CodeInput<'_>) -> Body {
        memo.key(input, |f| Body::of(&f))
    }

    #[test]
    fn a_copy_gets_the_key_its_own_lift_would_give() {
        let memo = LiftMemo::default();
        // push rbp; call f; pop rbp; ret, in two sections.
        let code = [0x55, 0xe8, 0, 0, 0, 0, 0x5d, 0xc3];
        let call = CodeReloc {
            offset: 2,
            size: 4,
            mask: u64::MAX,
            r_type: 4, // R_X86_64_PLT32
            pc_relative: true,
            target: TargetId(7),
            addend: -4,
            own_addend: -4,
        };
        let calls = [call];
        let first = key(&memo, &input(&code, &calls, 1));
        let copy = input(&code, &calls, 2);
        assert_eq!(key(&memo, &copy), Body::of(&icf_arch::lift(&copy)));
        assert_eq!(key(&memo, &copy), first);
        assert_eq!((memo.counts().lifted, memo.counts().cloned), (1, 2));

        // Another target or other bytes: another key, lifted.
        let other = CodeReloc {
            target: TargetId(8),
            ..call
        };
        assert_ne!(key(&memo, &input(&code, &[other], 3)), first);
        let mut changed = code;
        changed[0] = 0x53; // push rbx
        assert_ne!(key(&memo, &input(&changed, &calls, 4)), first);
        assert_eq!(memo.counts().lifted, 3);
    }

    #[test]
    fn a_function_whose_key_names_its_own_section_is_lifted_each_time() {
        let memo = LiftMemo::default();
        // push rbp, then on into the rest of the section: the key's
        // fall-through names the section the function sits in.
        let code = [0x55];
        for section in [1, 2] {
            let body = key(&memo, &input(&code, &[], section));
            assert!(
                body.refs().iter().any(|r| r.target == TargetId(section)),
                "the fall-through names section {section}: {:?}",
                body.refs()
            );
        }
        assert_eq!((memo.counts().lifted, memo.counts().cloned), (2, 0));
    }
}
