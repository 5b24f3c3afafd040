//! The fold plan: per class, which copy is kept, and for every other member
//! whether it becomes an alias of the kept body, a thunk that jumps to it, or
//! stays as it is.
//!
//! Rules (docs/design.md, "The plan"): the kept copy is chosen by a key the
//! caller computes (not interposable, not in a COMDAT group, strongest
//! binding, first on the command line). A member that must stay
//! (`--keep-unique`, an ifunc, an ineligible section) keeps its body. The
//! members sharing the kept body are the kept copy, every member whose
//! address is not significant, and at most one significant member: one
//! observable address is fine. Every other significant member becomes a
//! thunk where a thunk is possible and saves bytes, and keeps its body
//! otherwise. In mode `all`, significance is ignored.
//!
//! A class may hold only instances of COMDAT groups whose instances differ
//! between translation units (different inlining, different compilers): the
//! link keeps one instance per group, icf cannot say which, so no member's
//! body is sure to be in the output. Such a class is still folded through
//! the function's identity (its group signature and section name): every
//! instance of an inline function is equivalent under the one-definition
//! rule (the linker relies on it when it keeps any one), so a thunk that
//! jumps to whichever instance of the kept copy's function the link keeps
//! reaches an equivalent body. The kept copy is the member with the smallest
//! identity, in every class alike: a thunk always jumps to a smaller
//! identity than its own, so chains of thunks through differing instances
//! end at a body and never loop.

use crate::{CandidateId, ClassId};

/// A function's identity across the instances of its COMDAT group, as a
/// number: the caller numbers identities in an order it keeps the same in
/// every run (icf: by group signature, then section name), and equal
/// identities are one function under the one-definition rule. The planner
/// only compares them.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Identity(pub u32);

/// Whether address significance restricts folding.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum Mode {
    /// Keep every significant address unique (aliases for the rest, thunks for significant code).
    #[default]
    Safe,
    /// Fold everything equal, as `--icf=all`.
    All,
}

/// Why a member keeps its own body.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum KeepReason {
    /// Named by `--keep-unique`.
    KeepUnique,
    /// Its section may not be folded (writable, `SHF_LINK_ORDER`, retained, `.init`, `__start_` target...).
    Ineligible(String),
    /// Its address is significant and another significant member already shares the body.
    SignificantAddress,
    /// It must keep its own symbols (a COMDAT group member, or a global
    /// symbol that cannot move to the kept copy's object).
    OwnSymbols,
    /// The kept copy lives in an archive member the link might not load.
    KeptCopyMayNotLoad,
    /// No member can be the kept copy: each is a COMDAT group instance the
    /// link may discard, whose other instances are not all identical.
    NoSafeKeptCopy,
    /// Another instance of the kept copy's COMDAT group: whichever instance
    /// the link keeps serves the others.
    InstanceOfKeptGroup,
    /// In a class folded through the kept function's identity (see the
    /// module header): a thunk to whichever instance of it the link keeps.
    ThroughIdentity,
    /// A jump table, which folds with its function or not at all: its
    /// function keeps its own body.
    TableOfUnfoldedFunction,
    /// A wrong fold made on purpose: only icf's hidden testing option
    /// `--plant-fold` plans it, to check that `icf verify` rejects it. A
    /// thunk planted `keep_alignment: false` is aligned only as a jump
    /// needs, not as its function was.
    Planted { keep_alignment: bool },
}

/// What happens to one member.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Action {
    /// The copy everyone else folds into.
    Kept,
    /// Its symbols become aliases of the kept body; its bytes are gone.
    Alias,
    /// Its body becomes a jump to the kept copy, for the reason given (its
    /// address must stay unique, or its symbols must stay where they are).
    Thunk(KeepReason),
    Keep(KeepReason),
}

/// What the planner needs to know about one member of a class.
#[derive(Clone, Debug)]
pub struct MemberFacts {
    pub candidate: CandidateId,
    /// Bytes of the body.
    pub size: u64,
    /// Its address is observable and must stay its own in the mode planned.
    pub significant: bool,
    /// A reason it must keep its body whatever the mode.
    pub must_keep: Option<KeepReason>,
    /// Size of a thunk to the kept copy, `None` where none is possible (data).
    pub thunk_size: Option<u64>,
    /// Lower is preferred as the kept copy; must be unique within a class.
    pub preference: (u8, u8, u8, u32),
    /// The object it lives in.
    pub object: u32,
    /// Its object is part of the link whatever else is folded (not an archive member it might skip).
    pub loaded: bool,
    /// It is in a COMDAT group: its group and symbols stay, so it can only become a thunk.
    pub pinned_in_comdat: bool,
    /// It defines a global symbol, which cannot move to another object.
    pub global_symbols: bool,
    /// Its COMDAT group has instances in several objects (an id per
    /// signature): the link keeps one of them, not necessarily this one.
    pub floating_group: Option<u32>,
    /// It may be the kept copy: not floating, or every instance of its group
    /// is in this class, so whichever the link keeps is the same body.
    pub kept_eligible: bool,
    /// The identity of a function in a floating COMDAT group, the same in
    /// every instance (group signature and section name): any instance the
    /// link keeps is equivalent to this body under the one-definition rule.
    /// `None` where some loaded instance lacks the section, or for data.
    pub identity: Option<Identity>,
}

/// One member's fate.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Decision {
    pub candidate: CandidateId,
    pub action: Action,
    /// Bytes this decision saves.
    pub saved: u64,
}

/// The plan for one class.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ClassPlan {
    pub class: ClassId,
    pub kept: CandidateId,
    /// Every member, the kept copy first, then in preference order.
    pub decisions: Vec<Decision>,
    /// When the kept copy floats with a COMDAT group whose instances differ,
    /// its identity: thunks jump to whichever instance of it the link keeps
    /// (see the module header). `None` when the kept body is sure to be
    /// linked and members reach it directly.
    pub identity: Option<Identity>,
}

impl ClassPlan {
    pub fn saved(&self) -> u64 {
        self.decisions.iter().map(|d| d.saved).sum()
    }
}

/// Plans one class. `members` must hold at least one member; each member's
/// `significant` says whether its address must stay its own in the mode
/// being planned (in mode `all`, a function's never must).
pub fn plan_class(class: ClassId, members: &[MemberFacts]) -> ClassPlan {
    let mut order: Vec<&MemberFacts> = members.iter().collect();
    // Only a member that may fold can be the kept copy, one the link surely
    // loads is better; otherwise the preference decides.
    order.sort_by(|a, b| {
        let key = |m: &MemberFacts| {
            (
                m.must_keep.is_some(),
                !m.kept_eligible,
                m.floating_group.is_some(),
                !m.loaded,
            )
        };
        (key(a), &a.preference).cmp(&(key(b), &b.preference))
    });
    let kept = order[0];
    if !kept.kept_eligible {
        return plan_through_name(class, &order);
    }
    let mut decisions = Vec::with_capacity(order.len());
    decisions.push(Decision {
        candidate: kept.candidate,
        action: Action::Kept,
        saved: 0,
    });
    let mut significant_shares = kept.significant;
    let thunk_or = |member: &MemberFacts, reason: KeepReason| match member.thunk_size {
        Some(thunk) if thunk < member.size => Action::Thunk(reason),
        _ => Action::Keep(reason),
    };
    for member in &order[1..] {
        // A floating kept copy may be discarded with its group: nothing can
        // move into it, even from its own object; members reach it by an
        // alias every instance of its group defines.
        let elsewhere = member.object != kept.object || kept.floating_group.is_some();
        let action = if let Some(reason) = &member.must_keep {
            Action::Keep(reason.clone())
        } else if member.floating_group.is_some() && member.floating_group == kept.floating_group {
            Action::Keep(KeepReason::InstanceOfKeptGroup)
        } else if elsewhere && !kept.loaded {
            Action::Keep(KeepReason::KeptCopyMayNotLoad)
        } else if member.pinned_in_comdat || (elsewhere && member.global_symbols) {
            thunk_or(member, KeepReason::OwnSymbols)
        } else if !member.significant {
            Action::Alias
        } else if !significant_shares {
            significant_shares = true;
            Action::Alias
        } else {
            thunk_or(member, KeepReason::SignificantAddress)
        };
        decisions.push(Decision::new(member, action));
    }
    ClassPlan {
        class,
        kept: kept.candidate,
        decisions,
        identity: None,
    }
}

impl Decision {
    /// `member`'s fate, with the bytes it saves.
    fn new(member: &MemberFacts, action: Action) -> Decision {
        let saved = match action {
            Action::Alias => member.size,
            Action::Thunk(_) => member.size - member.thunk_size.unwrap_or(member.size),
            Action::Kept | Action::Keep(_) => 0,
        };
        Decision {
            candidate: member.candidate,
            action,
            saved,
        }
    }
}

/// Plans a class where no member's body is sure to be linked (see the
/// module header): the member with the smallest identity is kept, and every
/// other member that may fold becomes a thunk to that function. Instances
/// of the kept copy's group, and members with its identity, stay as they
/// are: the jump could land on themselves.
fn plan_through_name(class: ClassId, order: &[&MemberFacts]) -> ClassPlan {
    let kept = order
        .iter()
        .filter(|m| m.must_keep.is_none())
        .filter_map(|m| Some((m.identity?, *m)))
        .min_by(|(a, x), (b, y)| (a, &x.preference).cmp(&(b, &y.preference)));
    let Some((key, kept)) = kept else {
        let decisions = order
            .iter()
            .map(|m| Decision {
                candidate: m.candidate,
                action: Action::Keep(m.must_keep.clone().unwrap_or(KeepReason::NoSafeKeptCopy)),
                saved: 0,
            })
            .collect();
        return ClassPlan {
            class,
            kept: order[0].candidate,
            decisions,
            identity: None,
        };
    };
    let mut decisions = vec![Decision {
        candidate: kept.candidate,
        action: Action::Kept,
        saved: 0,
    }];
    for member in order.iter().filter(|m| m.candidate != kept.candidate) {
        let action = if let Some(reason) = &member.must_keep {
            Action::Keep(reason.clone())
        } else if member.floating_group == kept.floating_group || member.identity == Some(key) {
            Action::Keep(KeepReason::InstanceOfKeptGroup)
        } else {
            match member.thunk_size {
                Some(thunk) if thunk < member.size => Action::Thunk(KeepReason::ThroughIdentity),
                _ => Action::Keep(KeepReason::OwnSymbols),
            }
        };
        decisions.push(Decision::new(member, action));
    }
    ClassPlan {
        class,
        kept: kept.candidate,
        decisions,
        identity: Some(key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32-byte member of object 0 with nothing special about it.
    fn member(index: u32) -> MemberFacts {
        MemberFacts {
            candidate: CandidateId(index),
            size: 32,
            significant: false,
            must_keep: None,
            thunk_size: Some(5),
            preference: (0, 0, 0, index),
            object: 0,
            loaded: true,
            pinned_in_comdat: false,
            global_symbols: false,
            floating_group: None,
            kept_eligible: true,
            identity: None,
        }
    }

    fn significant_member(index: u32, significant: bool) -> MemberFacts {
        MemberFacts {
            significant,
            ..member(index)
        }
    }

    fn actions(plan: &ClassPlan) -> Vec<Action> {
        plan.decisions.iter().map(|d| d.action.clone()).collect()
    }

    const SIGNIFICANT: Action = Action::Thunk(KeepReason::SignificantAddress);
    const OWN: Action = Action::Thunk(KeepReason::OwnSymbols);
    const IDENTITY: Action = Action::Thunk(KeepReason::ThroughIdentity);

    #[test]
    fn one_significant_address_shares_the_body_the_others_get_thunks() {
        let members = [
            significant_member(0, true),
            significant_member(1, true),
            significant_member(2, false),
            significant_member(3, true),
        ];
        let plan = plan_class(ClassId(0), &members);
        assert_eq!(plan.kept, CandidateId(0));
        assert_eq!(
            actions(&plan),
            vec![Action::Kept, SIGNIFICANT, Action::Alias, SIGNIFICANT]
        );
        assert_eq!(plan.saved(), 27 + 32 + 27);
        // Mode all: no function's address is significant.
        let relaxed: Vec<MemberFacts> = members
            .iter()
            .map(|m| MemberFacts {
                significant: false,
                ..m.clone()
            })
            .collect();
        let all = plan_class(ClassId(0), &relaxed);
        assert_eq!(all.saved(), 3 * 32);
    }

    #[test]
    fn an_insignificant_kept_copy_leaves_room_for_one_significant_alias() {
        let members = [
            significant_member(0, false),
            significant_member(1, true),
            significant_member(2, true),
        ];
        let plan = plan_class(ClassId(0), &members);
        assert_eq!(
            actions(&plan),
            vec![Action::Kept, Action::Alias, SIGNIFICANT]
        );
    }

    #[test]
    fn no_thunk_where_it_saves_nothing_or_for_data() {
        let small = [
            significant_member(0, true),
            MemberFacts {
                size: 5,
                ..significant_member(1, true)
            },
        ];
        let plan = plan_class(ClassId(0), &small);
        assert_eq!(
            actions(&plan)[1],
            Action::Keep(KeepReason::SignificantAddress)
        );
        let data = [
            significant_member(0, true),
            MemberFacts {
                thunk_size: None,
                ..significant_member(1, true)
            },
        ];
        let plan = plan_class(ClassId(0), &data);
        assert_eq!(
            actions(&plan)[1],
            Action::Keep(KeepReason::SignificantAddress)
        );
    }

    #[test]
    fn members_that_must_keep_are_never_kept_copies_unless_alone() {
        let members = [
            MemberFacts {
                must_keep: Some(KeepReason::KeepUnique),
                ..member(0)
            },
            member(1),
        ];
        let plan = plan_class(ClassId(0), &members);
        assert_eq!(plan.kept, CandidateId(1));
        assert_eq!(
            actions(&plan),
            vec![Action::Kept, Action::Keep(KeepReason::KeepUnique)]
        );
    }

    #[test]
    fn comdat_members_and_globals_elsewhere_become_thunks() {
        let members = [
            member(0),
            MemberFacts {
                pinned_in_comdat: true,
                ..member(1)
            },
            MemberFacts {
                object: 1,
                global_symbols: true,
                ..member(2)
            },
            MemberFacts {
                object: 1,
                ..member(3)
            },
        ];
        let plan = plan_class(ClassId(0), &members);
        assert_eq!(actions(&plan), vec![Action::Kept, OWN, OWN, Action::Alias]);
    }

    #[test]
    fn a_kept_copy_that_may_not_load_only_serves_its_own_object() {
        let members = [
            MemberFacts {
                loaded: false,
                ..member(0)
            },
            MemberFacts {
                loaded: false,
                ..member(1)
            },
            MemberFacts {
                loaded: false,
                object: 1,
                ..member(2)
            },
        ];
        let plan = plan_class(ClassId(0), &members);
        assert_eq!(
            actions(&plan),
            vec![
                Action::Kept,
                Action::Alias,
                Action::Keep(KeepReason::KeptCopyMayNotLoad)
            ]
        );
    }

    /// A member in COMDAT group instance `group`, defining a global symbol.
    fn instance(index: u32, object: u32, group: u32) -> MemberFacts {
        MemberFacts {
            object,
            pinned_in_comdat: true,
            global_symbols: true,
            floating_group: Some(group),
            ..member(index)
        }
    }

    #[test]
    fn a_floating_kept_copy_is_reached_by_thunks_and_its_instances_stay() {
        // 0 and 2 are instances of one group; 1 belongs to another group with several instances.
        let members = [instance(0, 0, 7), instance(1, 0, 8), instance(2, 1, 7)];
        let plan = plan_class(ClassId(0), &members);
        assert_eq!(plan.kept, CandidateId(0));
        assert_eq!(
            actions(&plan),
            vec![
                Action::Kept,
                OWN,
                Action::Keep(KeepReason::InstanceOfKeptGroup)
            ]
        );
    }

    /// An instance of floating group `group` whose instances differ, with
    /// identity `name` (identities are numbered in name order).
    fn differing_instance(index: u32, object: u32, group: u32, name: &str) -> MemberFacts {
        MemberFacts {
            kept_eligible: false,
            identity: Some(identity(name)),
            ..instance(index, object, group)
        }
    }

    /// The identity of a one-letter name, numbered in name order.
    fn identity(name: &str) -> Identity {
        Identity(u32::from(name.as_bytes()[0]))
    }

    #[test]
    fn differing_instances_fold_through_the_smallest_identity() {
        let members = [
            differing_instance(0, 0, 7, "g"),
            differing_instance(1, 0, 8, "f"),
            // Another instance of f's group, identical here: it stays.
            differing_instance(2, 1, 8, "f"),
            MemberFacts {
                must_keep: Some(KeepReason::KeepUnique),
                ..differing_instance(3, 1, 9, "a")
            },
            differing_instance(4, 2, 10, "h"),
        ];
        let plan = plan_class(ClassId(0), &members);
        assert_eq!(plan.kept, CandidateId(1));
        assert_eq!(plan.identity, Some(identity("f")));
        let by_candidate = |c: u32| {
            plan.decisions
                .iter()
                .find(|d| d.candidate == CandidateId(c))
                .map(|d| d.action.clone())
        };
        assert_eq!(by_candidate(0), Some(IDENTITY));
        assert_eq!(
            by_candidate(2),
            Some(Action::Keep(KeepReason::InstanceOfKeptGroup))
        );
        assert_eq!(by_candidate(3), Some(Action::Keep(KeepReason::KeepUnique)));
        assert_eq!(by_candidate(4), Some(IDENTITY));
        assert_eq!(plan.saved(), 2 * 27);
    }

    #[test]
    fn thunks_through_identities_always_jump_to_a_smaller_one() {
        // f, g and h have differing instances in three units; each unit's
        // instances of two of them are identical. Whatever instance the link
        // keeps of each, following thunks must end at a body.
        let units = [("f", "g"), ("g", "h"), ("h", "f")];
        let group = |name: &str| u32::from(name.as_bytes()[0]);
        let mut thunks = 0;
        for (unit, (a, b)) in units.into_iter().enumerate() {
            let members = [
                differing_instance(0, unit as u32, group(a), a),
                differing_instance(1, unit as u32, group(b), b),
            ];
            let plan = plan_class(ClassId(0), &members);
            let to = plan.identity.expect("folds through an identity");
            for decision in &plan.decisions {
                if let Action::Thunk(_) = decision.action {
                    let from = members[decision.candidate.index()].identity;
                    assert!(Some(to) < from, "unit {unit}: {from:?} jumps to {to:?}");
                    thunks += 1;
                }
            }
        }
        assert_eq!(thunks, 3);
    }

    #[test]
    fn a_class_without_an_eligible_kept_copy_folds_nothing() {
        let members = [
            MemberFacts {
                kept_eligible: false,
                ..instance(0, 0, 7)
            },
            MemberFacts {
                kept_eligible: false,
                ..instance(1, 1, 8)
            },
        ];
        let plan = plan_class(ClassId(0), &members);
        assert!(
            plan.decisions
                .iter()
                .all(|d| d.action == Action::Keep(KeepReason::NoSafeKeptCopy))
        );
    }
}
