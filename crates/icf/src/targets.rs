//! What a reference points at, shared by all objects of a program.
//!
//! A relocation through a defined symbol that nothing can replace becomes its
//! section plus the symbol's offset: `f` and `.text.f+0` are one target. A
//! symbol the linker or the dynamic loader may replace (undefined, weak,
//! common, an ifunc, a global in a COMDAT group, or an exported global in a
//! `-shared` link) is a target by name: two references to `memcpy` in two
//! objects are the same target, whatever each object defines today. Local
//! symbols of different objects are always different targets.

use crate::program::{ObjectId, Options};
use icf_ir::TargetId;
use icf_object::{Binding, ElfObject, SectionIndex, Symbol, SymbolKind, SymbolPlace, Visibility};
use std::collections::HashMap;

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
    /// An element of a mergeable section (`SHF_MERGE`), by content: the linker
    /// merges equal ones, so equal content is the same target.
    Constant {
        entsize: u64,
        strings: bool,
        content: &'data [u8],
    },
}

/// Interned targets: one [`TargetId`] per distinct [`Target`].
#[derive(Clone, Debug, Default)]
pub struct TargetTable<'data> {
    targets: Vec<Target<'data>>,
    ids: HashMap<Target<'data>, TargetId>,
}

impl<'data> TargetTable<'data> {
    pub fn intern(&mut self, target: Target<'data>) -> TargetId {
        *self.ids.entry(target).or_insert_with(|| {
            self.targets.push(target);
            TargetId(self.targets.len() as u32 - 1)
        })
    }

    pub fn get(&self, id: TargetId) -> Target<'data> {
        self.targets[id.index()]
    }

    /// The id of `target` if any reference names it.
    pub fn find(&self, target: &Target<'data>) -> Option<TargetId> {
        self.ids.get(target).copied()
    }

    pub fn len(&self) -> usize {
        self.targets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }
}

/// How a relocation through one symbol is normalized.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct SymbolRef {
    pub target: TargetId,
    /// Added to the relocation's addend: the symbol's offset in its section, or its absolute value.
    pub base: i64,
}

/// The normalized reference for every symbol of `object`, indexed by symbol index.
pub fn symbol_refs<'data>(
    id: ObjectId,
    object: &ElfObject<'data>,
    options: &Options,
    table: &mut TargetTable<'data>,
) -> Vec<SymbolRef> {
    object
        .symbols
        .iter()
        .map(|symbol| {
            if is_replaceable(object, symbol, options) {
                return SymbolRef {
                    target: table.intern(Target::Symbol { name: symbol.name }),
                    base: 0,
                };
            }
            match symbol.place {
                SymbolPlace::Section(section) => SymbolRef {
                    target: table.intern(Target::Section {
                        object: id,
                        section,
                    }),
                    base: symbol.value as i64,
                },
                SymbolPlace::Absolute => SymbolRef {
                    target: table.intern(Target::Absolute),
                    base: symbol.value as i64,
                },
                // The null symbol: the addend is the whole value.
                SymbolPlace::Undefined | SymbolPlace::Common => SymbolRef {
                    target: table.intern(Target::Absolute),
                    base: 0,
                },
            }
        })
        .collect()
}

/// Whether the link or the dynamic loader may bind references to `symbol` to
/// a definition other than the one this object holds.
fn is_replaceable(object: &ElfObject<'_>, symbol: &Symbol<'_>, options: &Options) -> bool {
    if symbol.name.is_empty() || symbol.kind == SymbolKind::Section {
        return false;
    }
    match symbol.place {
        SymbolPlace::Undefined | SymbolPlace::Common => return true,
        SymbolPlace::Absolute => return false,
        SymbolPlace::Section(section) => {
            if symbol.binding == Binding::Local {
                return false;
            }
            if symbol.binding == Binding::Weak || symbol.kind == SymbolKind::Ifunc {
                return true;
            }
            // Another object's copy of the group may be the one the linker keeps.
            if let Some(group) = object.section(section).group
                && object.groups[group as usize].is_comdat
            {
                return true;
            }
        }
    }
    options.shared && matches!(symbol.visibility, Visibility::Default)
}
