//! Phase 2 of the analysis: references narrowed. A relocation names a
//! section and an offset; the [`Narrower`] rewrites it to the candidate holding that
//! place (or, in a mergeable section, to the element's content), where the
//! owner is unambiguous. It also lifts a candidate: code through `icf-arch`,
//! read-only data as one opaque run.

use crate::analyse::candidates::{CandidateInfo, Origin, Piece, Places};
use crate::analyse::lift_memo::LiftMemo;
use crate::load::program::Program;
use crate::load::targets::{ExtendedTargets, Target};
use icf_arch::OpaqueField;
use icf_fold::CandidateId;
use icf_fold::body::Body;
use icf_ir::{Function, OpaqueReason, Ref, RefKind, TargetId, Use};
use icf_object::SectionIndex;

/// Rewrites "section + offset" references to the candidate or constant at that place.
pub(crate) struct Narrower<'a, 'data> {
    pub(crate) program: &'a Program<'data>,
    pub(crate) targets: &'a ExtendedTargets<'a, 'data>,
    pub(crate) places: &'a Places,
}

/// What a reference does with the place it names, as far as narrowing it
/// to a candidate is concerned.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Reach {
    /// A call or a jump: the code at the place runs, and the place belongs
    /// to the piece that starts or continues there.
    Branch,
    /// An address taken or accessed: pointer arithmetic may lead from it
    /// anywhere in the section, so where several pieces share the section
    /// it names none of them.
    Data,
    /// An FDE's LSDA or personality: read by the unwinder, from the place
    /// on; it belongs to the piece holding it.
    Unwind,
}

impl Reach {
    /// How a code reference with use `use_` reaches its place.
    pub(crate) fn of(use_: Use) -> Reach {
        match use_ {
            Use::Call | Use::Jump => Reach::Branch,
            Use::Access | Use::Address => Reach::Data,
        }
    }
}

impl Narrower<'_, '_> {
    /// `target + addend` where `place` is the byte referred to, as the
    /// candidate (or mergeable constant) it names.
    ///
    /// A section that is one candidate names it at every place, its end
    /// included (a pointer one past an array is the array's). Where several
    /// pieces share a section, only a branch and an unwind reference (to
    /// the piece that starts or continues at the place) have one owner: an
    /// address could be one piece's end as well as the next one's start,
    /// and pointer arithmetic from it can reach any neighbour, so it stays
    /// "section + offset", equal only to the same place. Such pieces cannot be merged anyway (they share
    /// their section).
    pub(crate) fn narrow(
        &self,
        target: TargetId,
        addend: i64,
        place: i64,
        reach: Reach,
    ) -> (TargetId, i64) {
        let Target::Section { object, section } = self.targets.get(target) else {
            return (target, addend);
        };
        let pieces = self.places.pieces(object, section);
        let named = |piece: Piece| {
            let id = self.places.candidate_targets[piece.candidate.index()];
            (id, addend - piece.start as i64)
        };
        match pieces {
            [] => {}
            &[piece] => {
                if u64::try_from(place)
                    .is_ok_and(|place| (piece.start..=piece.end).contains(&place))
                {
                    return named(piece);
                }
                return (target, addend);
            }
            _ => {
                let Ok(offset) = u64::try_from(place) else {
                    return (target, addend);
                };
                let at = pieces.partition_point(|piece| piece.start <= offset);
                let piece = at.checked_sub(1).map(|i| pieces[i]);
                let owner = match reach {
                    // A call or jump from code lands where its addend says
                    // (`place` is the addend), the unwinder reads an LSDA
                    // from where the FDE says: the piece holding the place,
                    // at that offset (equal pieces hold equal bytes there).
                    Reach::Branch | Reach::Unwind => piece.filter(|piece| offset < piece.end),
                    // A linked image is read as if each piece had been a
                    // section of its own (see `icf_object::Image`): an
                    // address names the piece holding it.
                    Reach::Data if self.program.object(object).object.image.is_some() => {
                        // (One past the end of a piece is no ambiguity
                        // left: the image reader joins a piece with what
                        // follows where code refers to its end; see
                        // `icf_object::Image::joined`.)
                        piece.filter(|piece| offset < piece.end)
                    }
                    Reach::Data => None,
                };
                return owner.map_or((target, addend), named);
            }
        }
        let constants = self.places.constants(object, section);
        if let Ok(offset) = u64::try_from(addend)
            && let Some(i) = constants
                .partition_point(|&(start, _)| start <= offset)
                .checked_sub(1)
        {
            let (start, constant) = constants[i];
            return (constant, addend - start as i64);
        }
        (target, addend)
    }

    /// The candidate's IR with its references narrowed.
    pub(crate) fn lift(&self, candidate: &CandidateInfo) -> Function {
        match candidate.origin {
            Origin::Function(index) => {
                self.narrow_function(self.program.lift(self.program.function(index)))
            }
            Origin::Data => self.lift_data(candidate),
        }
    }

    /// `make` of the candidate lifted with its references narrowed, as
    /// [`Narrower::lift`], and of whether something enters it past its
    /// start; for a function through `memo`: an identical copy's key is
    /// cloned (see [`LiftMemo`]).
    pub(crate) fn key(
        &self,
        candidate: &CandidateInfo,
        memo: &LiftMemo,
        make: impl FnOnce(Function, bool) -> Body,
    ) -> Body {
        match candidate.origin {
            Origin::Function(index) => {
                self.program
                    .with_input(self.program.function(index), |input| {
                        let entered = !input.entry_points.is_empty();
                        memo.key(input, |f| make(self.narrow_function(f), entered))
                    })
            }
            Origin::Data => make(self.lift_data(candidate), false),
        }
    }

    /// The candidate's sketch ([`icf_arch::sketch`]; from `marks`, the
    /// shape and marks the image reader found, where it found them) through
    /// `memo` (an identical copy's sketch is reused), with the body alone
    /// of candidate `id` made from it.
    pub(crate) fn sketch_alone(
        &self,
        candidate: &CandidateInfo,
        memo: &LiftMemo,
        id: u32,
        marks: Option<(u64, &icf_arch::SketchMarks)>,
    ) -> Option<(u64, Body)> {
        let Origin::Function(index) = candidate.origin else {
            return None;
        };
        let sketch = |input: &icf_ir::CodeInput<'_>| match marks {
            Some((shape, marks)) => icf_arch::sketch_marked(input, shape, marks),
            None => icf_arch::sketch(input),
        };
        self.program
            .with_input(self.program.function(index), |input| {
                memo.sketch(input, id, sketch, |sketch| {
                    let function = self.narrow_function(sketch.function);
                    let body = Body::alone(&function, id);
                    icf_arch::recycle(function);
                    (sketch.shape, body)
                })
            })
    }

    fn narrow_function(&self, mut function: Function) -> Function {
        for r in &mut function.refs {
            // A reference to the code's own place equals only itself.
            if r.kind == RefKind::POSITION {
                continue;
            }
            // The lifter rebased PC-relative addends: the addend is the place.
            let (target, addend) = self.narrow(r.target, r.addend, r.addend, Reach::of(r.use_));
            r.target = target;
            r.addend = addend;
        }
        function
    }

    /// A read-only data section as one opaque run: relocated bytes zeroed,
    /// each relocation an offset and a reference.
    fn lift_data(&self, candidate: &CandidateInfo) -> Function {
        let object = self.program.object(candidate.object);
        let elf = &object.object;
        let architecture = icf_arch::of(elf.arch);
        let section = elf.section(candidate.section);
        let (start, end) = (candidate.start, candidate.end);
        let bytes = section
            .data
            .get(start as usize..end as usize)
            .unwrap_or_default();
        let first = section.relocs.partition_point(|r| r.offset < start);
        let fields = section.relocs[first..]
            .iter()
            .take_while(|r| r.offset < end)
            .map(|reloc| {
                // The reader accepted only relocation types the table knows.
                let (size, mask) = architecture
                    .elf_reloc(reloc.r_type)
                    .map_or((0, 0), |info| (info.size, info.mask));
                let symbol = object.symbol_refs[reloc.symbol.index()];
                let addend = symbol.base.wrapping_add(reloc.addend);
                let place = resolved_place(object, candidate.section, reloc, addend);
                let (target, addend) = self.narrow(symbol.target, addend, place, Reach::Data);
                OpaqueField {
                    offset: (reloc.offset - start) as u32,
                    size,
                    mask,
                    reference: Ref {
                        target,
                        addend,
                        kind: RefKind(reloc.r_type),
                        use_: Use::Address,
                    },
                }
            });
        icf_arch::opaque_run(elf.arch, bytes, fields, OpaqueReason::Data)
    }
}

impl Narrower<'_, '_> {
    pub(crate) fn targets_candidate(&self, target: TargetId) -> Option<CandidateId> {
        match self.targets.get(target) {
            Target::Candidate(index) => Some(CandidateId(index)),
            _ => None,
        }
    }
}

/// The place a relocation of section `from` refers to, in the definition
/// the link resolves its symbol to (whose offset `addend` includes): the
/// object's own definition of a weak symbol another object overrides is
/// not where the reference lands. [`icf_object::Object::reloc_place`] says how far
/// the place is from the symbol plus addend (a jump-table entry's distance
/// from its table, an x86-64 field's distance to its instruction's end).
pub(crate) fn resolved_place(
    object: &crate::load::program::LoadedObject<'_>,
    from: SectionIndex,
    reloc: &icf_object::Reloc,
    addend: i64,
) -> i64 {
    let elf = &object.object;
    let local = (elf.symbol(reloc.symbol).value as i64).wrapping_add(reloc.addend);
    let symbol_base = object.symbol_refs[reloc.symbol.index()].base;
    let own = symbol_base.wrapping_add(reloc.addend);
    match elf.reloc_place(&object.anchors, from, reloc) {
        Some((_, place)) => own.wrapping_add(place.wrapping_sub(local)),
        None => addend,
    }
}
