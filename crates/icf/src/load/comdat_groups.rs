//! The COMDAT groups of the loaded objects, numbered by signature: the link
//! keeps one instance of each signature, and icf cannot always tell which,
//! so the liveness walk, the plan and the edits all ask "which other
//! instances does this group have". The answer is made once, when the
//! link's archive members are resolved, and each question is then two
//! index lookups rather than a hash of the (often long, mangled) signature.

use crate::load::objects::{LoadedObject, ObjectId};
use icf_object::{GroupIndex, SectionIndex};
use rustc_hash::FxHashMap as HashMap;

/// Every loaded instance of each COMDAT group signature.
#[derive(Debug, Default)]
pub struct ComdatGroups {
    /// Instances (object, group) by signature id, in object order. Ids are
    /// numbered in order of first appearance.
    instances: Vec<Vec<(ObjectId, GroupIndex)>>,
    /// Per object, per group: its signature id, [`NOT_COMDAT`] for a group
    /// that is not a COMDAT group or an object the link does not load.
    ids: Vec<Box<[u32]>>,
}

/// The id of a group that has none (see [`ComdatGroups::ids`]).
const NOT_COMDAT: u32 = u32::MAX;

impl ComdatGroups {
    /// Numbers the COMDAT groups of the loaded `objects` by signature.
    pub fn of(objects: &[LoadedObject<'_>]) -> ComdatGroups {
        let mut by_name: HashMap<&[u8], u32> = HashMap::default();
        let mut instances: Vec<Vec<(ObjectId, GroupIndex)>> = Vec::new();
        let ids = objects
            .iter()
            .enumerate()
            .map(|(index, object)| {
                let elf = &object.object;
                elf.groups
                    .iter()
                    .enumerate()
                    .map(|(group_index, group)| {
                        if !object.loaded || !group.is_comdat {
                            return NOT_COMDAT;
                        }
                        let next = instances.len() as u32;
                        let id = *by_name
                            .entry(elf.symbol(group.signature).name)
                            .or_insert(next);
                        if id == next {
                            instances.push(Vec::new());
                        }
                        instances[id as usize]
                            .push((ObjectId(index as u32), GroupIndex(group_index as u32)));
                        id
                    })
                    .collect()
            })
            .collect();
        ComdatGroups { instances, ids }
    }

    /// The signature id of group `group` of `object`, when it is a COMDAT
    /// group of a loaded object.
    pub fn signature_id(&self, object: ObjectId, group: GroupIndex) -> Option<u32> {
        let id = *self.ids.get(object.index())?.get(group.index())?;
        (id != NOT_COMDAT).then_some(id)
    }

    /// The signature id of the COMDAT group `section` of `object` belongs
    /// to, if any.
    pub fn of_section(
        &self,
        object: &LoadedObject<'_>,
        id: ObjectId,
        section: SectionIndex,
    ) -> Option<u32> {
        let group = object.object.section(section).group?;
        self.signature_id(id, group)
    }

    /// Every loaded instance of signature `id`, in object order.
    pub fn instances(&self, id: u32) -> &[(ObjectId, GroupIndex)] {
        self.instances.get(id as usize).map_or(&[], Vec::as_slice)
    }
}
