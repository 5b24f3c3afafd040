//! Symbol resolution as the link does it: which definition each global
//! name resolves to (strong before weak, first on the command line, the
//! first COMDAT group), and the target each symbol of each object names.

use crate::load::objects::{LoadedObject, ObjectId};
use crate::load::targets::Target;
use crate::options::Options;
use icf_object::{Binding, Symbol, SymbolIndex, SymbolKind, SymbolPlace, Visibility};
use rustc_hash::FxHashMap as HashMap;

/// The definition each global name resolves to in the link: among the
/// objects the link loads, a strong definition before a weak one, the first
/// on the command line before later ones (the first COMDAT group wins).
#[derive(Clone, Debug, Default)]
pub struct Definitions<'data> {
    /// The winning definition of each name, and how many loaded objects
    /// define the name (not as a common symbol).
    winners: HashMap<&'data [u8], Winner>,
    /// Names with a common symbol somewhere: the linker merges those itself.
    common: rustc_hash::FxHashSet<&'data [u8]>,
    /// Names an archive member the link does not load defines: a link that
    /// finds such a name undefined may load that member for it.
    lazy: rustc_hash::FxHashSet<&'data [u8]>,
    /// Per object, a bit per symbol: the symbol is the definition its name
    /// resolves to and no archive member the link skips defines the name
    /// ([`Definitions::wins_unchallenged`]), told once while the names are
    /// read so that the plan asks it of every alias without reading them
    /// again.
    unchallenged: Vec<Box<[u64]>>,
}

/// The definition a name resolves to, and how many loaded objects define it.
#[derive(Copy, Clone, Debug)]
struct Winner {
    definition: (ObjectId, SymbolIndex),
    definers: u32,
}

impl<'data> Definitions<'data> {
    pub fn of(objects: &[LoadedObject<'data>]) -> Definitions<'data> {
        use rayon::prelude::*;
        // Sized once: growing tables of a million names rehashes each name
        // several times.
        let (loaded, lazy) = objects
            .par_iter()
            .map(|object| {
                let defined = object
                    .object
                    .symbols
                    .iter()
                    .filter(|s| s.binding != Binding::Local && s.is_defined())
                    .count();
                if object.loaded {
                    (defined, 0)
                } else {
                    (0, defined)
                }
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let mut definitions = Definitions {
            winners: HashMap::with_capacity_and_hasher(loaded, Default::default()),
            common: Default::default(),
            lazy: rustc_hash::FxHashSet::with_capacity_and_hasher(lazy, Default::default()),
            unchallenged: Vec::new(),
        };
        for (index, object) in objects.iter().enumerate() {
            if !object.loaded {
                definitions.lazy.extend(
                    object
                        .object
                        .symbols
                        .iter()
                        .filter(|s| s.binding != Binding::Local && s.is_defined())
                        .map(|s| s.name),
                );
                continue;
            }
            for (symbol_index, symbol) in object.object.symbols.iter().enumerate() {
                if symbol.binding == Binding::Local
                    || symbol.name.is_empty()
                    || !symbol.is_defined()
                {
                    continue;
                }
                if symbol.place == SymbolPlace::Common {
                    definitions.common.insert(symbol.name);
                    continue;
                }
                let candidate = (ObjectId(index as u32), SymbolIndex(symbol_index as u32));
                let weak = symbol.binding == Binding::Weak;
                definitions
                    .winners
                    .entry(symbol.name)
                    .and_modify(|winner| {
                        winner.definers += 1;
                        let (object, symbol) = winner.definition;
                        let winner_weak =
                            objects[object.index()].object.symbol(symbol).binding == Binding::Weak;
                        if winner_weak && !weak {
                            winner.definition = candidate;
                        }
                    })
                    .or_insert(Winner {
                        definition: candidate,
                        definers: 1,
                    });
            }
        }
        definitions.unchallenged = definitions.unchallenged_definitions(objects);
        definitions
    }

    /// [`Definitions::unchallenged`], from the names' winners.
    fn unchallenged_definitions(&self, objects: &[LoadedObject<'data>]) -> Vec<Box<[u64]>> {
        let mut bits: Vec<Box<[u64]>> = objects
            .iter()
            .map(|o| vec![0; o.object.symbols.len().div_ceil(64)].into_boxed_slice())
            .collect();
        for (name, winner) in &self.winners {
            if self.common.contains(name) || self.lazy.contains(name) {
                continue;
            }
            let (object, symbol) = winner.definition;
            bits[object.index()][symbol.index() / 64] |= 1 << (symbol.index() % 64);
        }
        bits
    }

    /// Whether symbol `symbol` of `object` is the definition its name
    /// resolves to ([`Definitions::winner`]) and no archive member the link
    /// skips defines the name ([`Definitions::defined_lazily`]), told
    /// without reading the name.
    pub fn wins_unchallenged(&self, object: ObjectId, symbol: SymbolIndex) -> bool {
        self.unchallenged
            .get(object.index())
            .and_then(|bits| bits.get(symbol.index() / 64))
            .is_some_and(|word| word & (1 << (symbol.index() % 64)) != 0)
    }

    /// Whether an archive member the link does not load defines `name`.
    pub fn defined_lazily(&self, name: &[u8]) -> bool {
        self.lazy.contains(name)
    }

    /// The definition `name` resolves to, if a loaded object defines it.
    pub fn winner(&self, name: &[u8]) -> Option<(ObjectId, SymbolIndex)> {
        if self.common.contains(name) {
            return None;
        }
        self.winners.get(name).map(|w| w.definition)
    }

    /// [`Definitions::winner`], when exactly one loaded object defines
    /// `name` (not as a common symbol).
    pub fn sole_winner(&self, name: &[u8]) -> Option<(ObjectId, SymbolIndex)> {
        if self.common.contains(name) {
            return None;
        }
        self.winners
            .get(name)
            .filter(|w| w.definers == 1)
            .map(|w| w.definition)
    }
}

/// What every symbol of object `id` refers to, as (target, value added to
/// the addend), indexed by symbol index; independent of other objects' results.
pub fn symbol_refs<'data>(
    id: ObjectId,
    objects: &[LoadedObject<'data>],
    definitions: &Definitions<'data>,
    options: &Options,
) -> Vec<(Target<'data>, i64)> {
    let object = &objects[id.index()].object;
    object
        .symbols
        .iter()
        .map(|symbol| {
            let (owner, definition) = match resolve(id, objects, definitions, symbol, options) {
                Resolved::ByName => return (Target::Symbol { name: symbol.name }, 0),
                Resolved::To(owner, definition) => (owner, definition),
            };
            match definition.place {
                SymbolPlace::Section(section) => (
                    Target::Section {
                        object: owner,
                        section,
                    },
                    definition.value as i64,
                ),
                SymbolPlace::Absolute => (Target::Absolute, definition.value as i64),
                // The null symbol: the addend is the whole value.
                SymbolPlace::Undefined | SymbolPlace::Common => (Target::Absolute, 0),
            }
        })
        .collect()
}

enum Resolved<'a, 'data> {
    /// Compared by name: resolved outside what icf sees, or replaceable at load time.
    ByName,
    /// The definition every reference through the symbol reaches, and its object.
    To(ObjectId, &'a Symbol<'data>),
}

/// What a reference through `symbol` (of object `id`) reaches in the link.
fn resolve<'a, 'data>(
    id: ObjectId,
    objects: &'a [LoadedObject<'data>],
    definitions: &Definitions<'data>,
    symbol: &'a Symbol<'data>,
    options: &Options,
) -> Resolved<'a, 'data> {
    if symbol.binding == Binding::Local
        || symbol.name.is_empty()
        || symbol.kind == SymbolKind::Section
    {
        return Resolved::To(id, symbol);
    }
    let Some((owner, index)) = definitions.winner(symbol.name) else {
        return Resolved::ByName;
    };
    let definition = objects[owner.index()].object.symbol(index);
    // An ifunc's value is its resolver; an exported symbol of a shared object
    // may be interposed by the executable.
    let interposable = options.shared && matches!(definition.visibility, Visibility::Default);
    if definition.kind == SymbolKind::Ifunc || interposable {
        return Resolved::ByName;
    }
    Resolved::To(owner, definition)
}
