//! COMDAT groups in the plan: every loaded instance of each group
//! signature (the link keeps one per signature, and icf cannot always tell
//! which), whether a member may leave its group, whether a group's global
//! symbols may move with it, and the identity a class of differing
//! instances folds through.

use crate::analyse::analysis::Analysis;
use crate::analyse::candidates::CandidateInfo;
use crate::analyse::significance::Significance;
use crate::load::program::ObjectId;
use icf_fold::plan::{Identity, MemberFacts, Mode};
use icf_fold::{CandidateId, ClassId};
use icf_object::{Binding, GroupIndex, SectionIndex};
use rustc_hash::FxHashMap as HashMap;

impl<'data> Analysis<'_, 'data> {
    /// Whether a COMDAT member may leave its group: the group holds nothing
    /// but its section (and that section's relocations), in every loaded
    /// instance, every instance is in its class, and (in safe mode) no
    /// instance's address is significant. Then every instance can be
    /// dropped, group and all, and its symbols defined on the kept copy:
    /// whichever instance the link would have kept, the name now reaches the
    /// same body.
    pub(crate) fn group_may_move(
        &self,
        candidate: CandidateId,
        groups: &ComdatInstances,
        significance: &[Option<Significance>],
        mode: Mode,
    ) -> bool {
        let info = &self.candidates[candidate.index()];
        let elf = &self.program.object(info.object).object;
        let section = elf.section(info.section);
        if !info.is_code() || info.start != 0 || info.end != section.size {
            return false;
        }
        let Some((_, instances)) = groups.instances_of(self, candidate) else {
            return false;
        };
        if !groups.kept_eligible(self, candidate) {
            return false;
        }
        groups.remembered(Question::GroupMayMove, self, candidate, || {
            self.every_instance_may_leave(info, instances, groups, significance, mode)
        })
    }

    /// The per-instance part of [`Analysis::group_may_move`].
    pub(crate) fn every_instance_may_leave(
        &self,
        info: &CandidateInfo,
        instances: &[(ObjectId, GroupIndex)],
        groups: &ComdatInstances,
        significance: &[Option<Significance>],
        mode: Mode,
    ) -> bool {
        instances.iter().all(|&(object, group)| {
            let Some(other) = groups.instance_section(self, info, (object, group)) else {
                return false;
            };
            let other_info = &self.candidates[other.index()];
            let other_elf = &self.program.object(object).object;
            let sole_member = other_elf
                .section(other_info.section)
                .group
                .map(|g| other_elf.group(g))
                .is_some_and(|group| {
                    group.members.iter().all(|&m| {
                        let member = other_elf.section(m);
                        m == other_info.section
                            || member.patched_section() == Some(other_info.section)
                    })
                });
            sole_member && (mode == Mode::All || significance[other.index()].is_none())
        })
    }

    /// Whether the global symbols of every instance of a moving COMDAT group
    /// may move to the kept copy's object: the link resolves each name to
    /// one of the instances, and every archive member holding an instance
    /// stays in the link without it. Spends `anchors` only when all may.
    pub(crate) fn group_globals_can_move(
        &self,
        candidate: CandidateId,
        instances: &[(ObjectId, GroupIndex)],
        kept_object: ObjectId,
        anchors: &mut HashMap<ObjectId, usize>,
    ) -> bool {
        let info = &self.candidates[candidate.index()];
        let in_instance = |object: ObjectId| instances.iter().any(|&(o, _)| o == object);
        let object = self.program.object(info.object);
        let winners = self.global_symbols(candidate).iter().all(|&s| {
            let name = object.object.symbol(s).name;
            self.program
                .definitions
                .winner(name)
                .is_some_and(|(winner, _)| in_instance(winner))
        });
        if !winners {
            return false;
        }
        let mut spent: Vec<(ObjectId, usize)> = Vec::new();
        for &(object, group) in instances {
            if object == kept_object {
                continue;
            }
            let Some(&remaining) = anchors.get(&object) else {
                continue;
            };
            let loaded = self.program.object(object);
            let needed = loaded
                .object
                .group(group)
                .members
                .iter()
                .flat_map(|&m| loaded.section_symbols.get(m))
                .filter(|&&(_, _, symbol)| {
                    loaded.object.symbol(symbol).binding != Binding::Local
                        && self.program.needed.contains(&(object, symbol))
                })
                .count();
            if remaining <= needed {
                return false;
            }
            spent.push((object, needed));
        }
        for (object, needed) in spent {
            if let Some(remaining) = anchors.get_mut(&object) {
                *remaining -= needed;
            }
        }
        true
    }

    /// The name of a function's identity in a floating COMDAT group (see
    /// `icf_fold::plan`): its group's signature and its section's name, the
    /// same in every instance. Only for a whole-section code member, and only
    /// when every loaded instance of the group holds that section, where a
    /// jump to it can land.
    pub(crate) fn identity_name(
        &self,
        candidate: CandidateId,
        groups: &ComdatInstances,
    ) -> Option<Vec<u8>> {
        let info = &self.candidates[candidate.index()];
        let elf = &self.program.object(info.object).object;
        let section = elf.section(info.section);
        if !info.is_code() || info.start != 0 || info.end != section.size {
            return None;
        }
        let (_, instances) = groups.instances_of(self, candidate)?;
        let every_instance_has_it = instances.len() > 1
            && groups.remembered(Question::EveryInstanceHasIt, self, candidate, || {
                instances.iter().all(|&instance| {
                    groups
                        .instance_section_index(self, info, instance)
                        .is_some()
                })
            });
        if !every_instance_has_it {
            return None;
        }
        let signature = elf.symbol(elf.group(section.group?).signature).name;
        Some([signature, b"\0", section.name].concat())
    }

    pub(crate) fn in_comdat(&self, candidate: CandidateId) -> bool {
        let info = &self.candidates[candidate.index()];
        let elf = &self.program.object(info.object).object;
        elf.section(info.section)
            .group
            .is_some_and(|g| elf.group(g).is_comdat)
    }
}

/// The names of the identities classes fold through, numbered in byte
/// order: the planner compares [`Identity`] numbers, and the smallest
/// identity of a class is the smallest name, in every run and every class
/// alike.
#[derive(Debug, Default)]
pub(crate) struct IdentityNames {
    /// (class, member, name) of every member that has one.
    pub(crate) named: Vec<(usize, usize, Vec<u8>)>,
}

impl IdentityNames {
    /// Numbers the names and gives each member its [`Identity`]; returns
    /// the names by number.
    pub(crate) fn number(self, classes: &mut [(ClassId, Vec<MemberFacts>)]) -> Vec<Vec<u8>> {
        let mut names: Vec<Vec<u8>> = self.named.iter().map(|(_, _, n)| n.clone()).collect();
        names.sort_unstable();
        names.dedup();
        for (class, member, name) in self.named {
            if let Ok(number) = names.binary_search(&name) {
                classes[class].1[member].identity = Some(Identity(number as u32));
            }
        }
        names
    }
}

/// What the plan asks of the COMDAT groups beyond their instances
/// (`Program::comdat_groups`): the candidate each grouped section is, and
/// the answers that hold for every instance of a group's section alike.
#[derive(Debug, Default)]
pub(crate) struct ComdatInstances {
    /// Whole-section candidates of grouped sections, by (object, section).
    grouped: HashMap<(ObjectId, SectionIndex), CandidateId>,
    /// Answers that hold for every instance of a group's section alike, by
    /// question, signature id and section name: asking once per group
    /// rather than once per instance keeps planning linear. Shared by the
    /// threads that gather members' facts; two may answer one question
    /// at once, alike.
    answers: std::sync::Mutex<HashMap<AnswerKey, bool>>,
}

/// A question, a signature id and a section name.
type AnswerKey = (Question, u32, u128);

/// A question about all instances of one section of a COMDAT group.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Question {
    /// Every instance is in one class (see [`ComdatInstances::kept_eligible`]).
    AllInOneClass,
    /// The group may move whole (see `Analysis::group_may_move`).
    GroupMayMove,
    /// Every instance holds the section (see `Analysis::identity_name`).
    EveryInstanceHasIt,
}

impl<'data> ComdatInstances {
    /// The signature id of a candidate's group when the group has several instances.
    pub(crate) fn floating(
        &self,
        analysis: &Analysis<'_, '_>,
        candidate: CandidateId,
    ) -> Option<u32> {
        let (id, instances) = self.instances_of(analysis, candidate)?;
        (instances.len() > 1).then_some(id)
    }

    /// Whether a candidate may be kept: its group has one instance, or every
    /// instance holds a same-named section in the candidate's class.
    pub(crate) fn kept_eligible(
        &self,
        analysis: &Analysis<'_, 'data>,
        candidate: CandidateId,
    ) -> bool {
        let Some((_, instances)) = self.instances_of(analysis, candidate) else {
            return true;
        };
        // Instances in two classes answer no for both: one answer per group.
        self.remembered(Question::AllInOneClass, analysis, candidate, || {
            let info = &analysis.candidates[candidate.index()];
            let class = analysis.partition.class_of[candidate.index()];
            instances.iter().all(|&(object, group)| {
                self.instance_section(analysis, info, (object, group))
                    .is_some_and(|other| analysis.partition.class_of[other.index()] == class)
            })
        })
    }

    /// `answer()`, asked once for all instances of `candidate`'s section of
    /// its group (the answer must be the same for each of them).
    pub(crate) fn remembered(
        &self,
        question: Question,
        analysis: &Analysis<'_, 'data>,
        candidate: CandidateId,
        answer: impl FnOnce() -> bool,
    ) -> bool {
        let Some((id, _)) = self.instances_of(analysis, candidate) else {
            return answer();
        };
        let info = &analysis.candidates[candidate.index()];
        let name = analysis
            .program
            .object(info.object)
            .object
            .section_name_fingerprint(info.section);
        let key = (question, id, name);
        let asked = self.answers.lock().ok().and_then(|a| a.get(&key).copied());
        if let Some(known) = asked {
            return known;
        }
        let known = answer();
        if let Ok(mut answers) = self.answers.lock() {
            answers.insert(key, known);
        }
        known
    }

    /// The candidate holding `info`'s section in another instance of its
    /// group: the same-named member of group `group` of `object`.
    pub(crate) fn instance_section(
        &self,
        analysis: &Analysis<'_, '_>,
        info: &CandidateInfo,
        instance: (ObjectId, GroupIndex),
    ) -> Option<CandidateId> {
        let section = self.instance_section_index(analysis, info, instance)?;
        self.grouped.get(&(instance.0, section)).copied()
    }

    /// The section named like `info`'s in group `group` of `object`.
    pub(crate) fn instance_section_index(
        &self,
        analysis: &Analysis<'_, '_>,
        info: &CandidateInfo,
        (object, group): (ObjectId, GroupIndex),
    ) -> Option<SectionIndex> {
        let name = analysis
            .program
            .object(info.object)
            .object
            .section_name_fingerprint(info.section);
        analysis
            .program
            .object(object)
            .object
            .group(group)
            .member_named(name)
    }

    /// Whether a candidate is outside a COMDAT group, or in the first loaded
    /// instance of its group (the one linkers keep, bar archive order).
    pub(crate) fn first_instance(
        &self,
        analysis: &Analysis<'_, '_>,
        candidate: CandidateId,
    ) -> bool {
        self.instances_of(analysis, candidate)
            .is_none_or(|(_, instances)| {
                instances.first().map(|&(object, _)| object)
                    == Some(analysis.candidates[candidate.index()].object)
            })
    }

    /// The signature id of a candidate's COMDAT group and every loaded
    /// instance of it, when it is in one.
    pub(crate) fn instances_of<'a>(
        &self,
        analysis: &'a Analysis<'_, '_>,
        candidate: CandidateId,
    ) -> Option<(u32, &'a [(ObjectId, GroupIndex)])> {
        let info = &analysis.candidates[candidate.index()];
        let groups = &analysis.program.comdat_groups;
        let id = groups.of_section(
            analysis.program.object(info.object),
            info.object,
            info.section,
        )?;
        Some((id, groups.instances(id)))
    }
}

impl<'data> Analysis<'_, 'data> {
    pub(crate) fn comdat_instances(&self) -> ComdatInstances {
        let mut grouped = HashMap::default();
        for (index, info) in self.candidates.iter().enumerate() {
            let section = self
                .program
                .object(info.object)
                .object
                .section(info.section);
            if info.start == 0 && section.group.is_some() {
                grouped.insert((info.object, info.section), CandidateId(index as u32));
            }
        }
        ComdatInstances {
            grouped,
            answers: std::sync::Mutex::default(),
        }
    }
}
