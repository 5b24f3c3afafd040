//! What a reference points at, shared by all objects of a program: the
//! table of targets, numbered, and the analysis's extension of it.
//!
//! A relocation through a symbol becomes the place the link resolves it to
//! (`resolution.rs` decides which definition that is):
//! the defining section plus the symbol's offset, so `f` and `.text.f+0` are
//! one target, and a reference by name to `f` from another object is that
//! same target. The link's resolution is known because icf sees every object
//! it loads: a strong definition wins over a weak one, the first COMDAT group
//! over later ones. What icf cannot resolve is a target by name: a symbol
//! defined in a shared library (two references to `memcpy` are the same
//! target), a common symbol, an ifunc, and an exported symbol of a `-shared`
//! link, which the executable may interpose. Local symbols of different
//! objects are always different targets.

use crate::load::objects::ObjectId;
use hashbrown::HashTable;
use icf_ir::TargetId;
use icf_object::SectionIndex;
use std::hash::BuildHasher;

/// Something outside a function that a reference names.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Target<'data> {
    /// A section of one object; the reference's addend is the offset in it.
    Section {
        object: ObjectId,
        section: SectionIndex,
    },
    /// Whatever the link resolves this name to.
    Symbol { name: &'data [u8] },
    /// An absolute value, or a relocation without a symbol; the addend is the value.
    Absolute,
    /// A fold candidate (a function piece or a read-only data piece); the
    /// addend is the offset in it. Made by the analysis from `Section` targets.
    Candidate(u32),
    /// A fold candidate named by identity: a reference that must land on
    /// this very candidate, not on whichever member of its class the plan
    /// keeps (see `Analysis::run`). Made by the analysis.
    Pinned(u32),
    /// An element of a mergeable section (`SHF_MERGE`), by content: the linker
    /// merges equal ones, so equal content is the same target.
    Constant {
        entsize: u32,
        strings: bool,
        content: &'data [u8],
    },
}

/// Interned targets: one [`TargetId`] per distinct [`Target`]. The index
/// holds only ids (hashed through the target they name), so each target is
/// stored once. Sections, the most common target, are numbered object by
/// object without hashing (see [`TargetTable::with_sections`]).
#[derive(Clone, Debug, Default)]
pub struct TargetTable<'data> {
    /// The id of `targets[0]`: a table extending another starts after it.
    first: u32,
    targets: Vec<Target<'data>>,
    ids: HashTable<TargetId>,
    /// The id of section 0 of each object, and one past the last object's.
    section_ids: Vec<u32>,
}

/// The hash a [`TargetTable`] files `target` under: callers that intern
/// many targets may compute it in parallel ([`TargetTable::intern_hashed`]).
pub fn target_hash(target: &Target<'_>) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(target)
}

fn hash_of(target: &Target<'_>) -> u64 {
    target_hash(target)
}

impl<'data> TargetTable<'data> {
    /// A table holding a [`Target::Section`] for every section of every
    /// object, `sections[i]` being the section count of object `i`.
    pub fn with_sections(sections: impl IntoIterator<Item = usize>) -> TargetTable<'data> {
        let mut table = TargetTable {
            section_ids: vec![0],
            ..TargetTable::default()
        };
        for (object, count) in sections.into_iter().enumerate() {
            table
                .targets
                .extend((0..count).map(|section| Target::Section {
                    object: ObjectId(object as u32),
                    section: SectionIndex(section as u32),
                }));
            table.section_ids.push(table.targets.len() as u32);
        }
        table
    }

    /// The target naming `section` of `object`, numbered by
    /// [`TargetTable::with_sections`]; panics for a section it was not given.
    pub fn section(&self, object: ObjectId, section: SectionIndex) -> TargetId {
        self.section_id(&Target::Section { object, section })
            .unwrap_or_else(|| {
                panic!(
                    "section {} of object {} is not numbered",
                    section.0, object.0
                )
            })
    }

    /// The id of a section numbered by [`TargetTable::with_sections`].
    fn section_id(&self, target: &Target<'data>) -> Option<TargetId> {
        let Target::Section { object, section } = *target else {
            return None;
        };
        let first = *self.section_ids.get(object.index())?;
        let end = *self.section_ids.get(object.index() + 1)?;
        let id = first.checked_add(section.0)?;
        (id < end).then_some(TargetId(self.first + id))
    }

    pub fn intern(&mut self, target: Target<'data>) -> TargetId {
        let hash = hash_of(&target);
        self.intern_hashed(target, hash)
    }

    /// [`TargetTable::intern`] of a target whose `target_hash` is `hash`.
    pub fn intern_hashed(&mut self, target: Target<'data>, hash: u64) -> TargetId {
        if let Some(id) = self.section_id(&target) {
            return id;
        }
        let (first, targets) = (self.first, &mut self.targets);
        let at = |id: &TargetId| &targets[(id.0 - first) as usize];
        if let Some(&id) = self.ids.find(hash, |id| *at(id) == target) {
            return id;
        }
        let id = TargetId(first + targets.len() as u32);
        targets.push(target);
        let targets = &self.targets;
        self.ids
            .insert_unique(hash, id, |id| hash_of(&targets[(id.0 - first) as usize]));
        id
    }

    pub fn get(&self, id: TargetId) -> Target<'data> {
        self.targets[(id.0 - self.first) as usize]
    }

    /// The id of `target` if any reference names it.
    pub fn find(&self, target: &Target<'data>) -> Option<TargetId> {
        self.find_hashed(target, hash_of(target))
    }

    fn find_hashed(&self, target: &Target<'data>, hash: u64) -> Option<TargetId> {
        if let Some(id) = self.section_id(target) {
            return Some(id);
        }
        self.ids.find(hash, |&id| self.get(id) == *target).copied()
    }

    /// Room for `additional` more targets without rehashing.
    pub fn reserve(&mut self, additional: usize) {
        let (first, targets) = (self.first, &self.targets);
        self.ids
            .reserve(additional, |id| hash_of(&targets[(id.0 - first) as usize]));
        self.targets.reserve(additional);
    }

    /// One past the largest id.
    pub fn len(&self) -> usize {
        self.first as usize + self.targets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table that extends another without copying it: the ids of `base` stay
/// valid, new targets get ids after them.
#[derive(Debug)]
pub struct ExtendedTargets<'b, 'data> {
    base: &'b TargetTable<'data>,
    more: TargetTable<'data>,
}

impl<'b, 'data> ExtendedTargets<'b, 'data> {
    pub fn new(base: &'b TargetTable<'data>) -> ExtendedTargets<'b, 'data> {
        ExtendedTargets {
            base,
            more: TargetTable {
                first: base.len() as u32,
                ..TargetTable::default()
            },
        }
    }

    pub fn intern(&mut self, target: Target<'data>) -> TargetId {
        let hash = hash_of(&target);
        self.intern_hashed(target, hash)
    }

    /// [`ExtendedTargets::intern`] of a target whose `target_hash` is `hash`.
    pub fn intern_hashed(&mut self, target: Target<'data>, hash: u64) -> TargetId {
        match self.base.find_hashed(&target, hash) {
            Some(id) => id,
            None => self.more.intern_hashed(target, hash),
        }
    }

    /// Room for `additional` more targets.
    pub fn reserve(&mut self, additional: usize) {
        self.more.reserve(additional);
    }

    pub fn get(&self, id: TargetId) -> Target<'data> {
        if id.0 < self.more.first {
            self.base.get(id)
        } else {
            self.more.get(id)
        }
    }

    pub fn find(&self, target: &Target<'data>) -> Option<TargetId> {
        self.base.find(target).or_else(|| self.more.find(target))
    }

    /// One past the largest id.
    pub fn len(&self) -> usize {
        self.more.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(object: u32, section: u32) -> Target<'static> {
        Target::Section {
            object: ObjectId(object),
            section: SectionIndex(section),
        }
    }

    #[test]
    fn sections_are_numbered_in_order_and_interned_like_the_rest() {
        let mut table = TargetTable::with_sections([2, 0, 3]);
        assert_eq!(table.len(), 5);
        assert_eq!(table.find(&section(0, 1)), Some(TargetId(1)));
        assert_eq!(table.find(&section(2, 0)), Some(TargetId(2)));
        assert_eq!(table.intern(section(2, 2)), TargetId(4));
        assert_eq!(table.get(TargetId(3)), section(2, 1));
        // Past the numbered sections, a section is interned by value.
        let outside = table.intern(section(1, 0));
        assert_eq!(outside, TargetId(5));
        assert_eq!(table.intern(section(1, 0)), outside);
        let name = table.intern(Target::Symbol { name: b"memcpy" });
        assert_eq!(table.intern(Target::Symbol { name: b"memcpy" }), name);
        assert_eq!(table.get(name), Target::Symbol { name: b"memcpy" });
        assert_eq!(table.len(), 7);
    }

    #[test]
    fn an_extension_keeps_the_base_ids_and_numbers_after_them() {
        let mut base = TargetTable::with_sections([1]);
        let absolute = base.intern(Target::Absolute);
        let mut extended = ExtendedTargets::new(&base);
        assert_eq!(extended.intern(Target::Absolute), absolute);
        assert_eq!(extended.intern(section(0, 0)), TargetId(0));
        let candidate = extended.intern(Target::Candidate(7));
        assert_eq!(candidate, TargetId(2));
        assert_eq!(extended.intern(Target::Candidate(7)), candidate);
        assert_eq!(extended.find(&Target::Candidate(7)), Some(candidate));
        assert_eq!(extended.get(candidate), Target::Candidate(7));
        assert_eq!(extended.get(absolute), Target::Absolute);
        assert_eq!(extended.find(&Target::Candidate(8)), None);
        assert_eq!(extended.len(), 3);
        assert_eq!(base.find(&Target::Candidate(7)), None);
    }
}
