//! One loaded object and what the pipeline derived from it, the ids that
//! name objects and function pieces, and what each symbol resolves to.

use icf_ir::TargetId;
use icf_object::{FunctionExtent, Object, PerSection, SectionIndex};
use rustc_hash::FxHashMap as HashMap;

/// Index of an object in [`Program::objects`](crate::Program::objects).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ObjectId(pub u32);

impl ObjectId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a function piece in [`Program::functions`](crate::Program::functions).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct FunctionId(pub u32);

/// Named symbols of each section as (value, size, symbol), sorted by value,
/// larger extents first.
pub type SectionSymbols = PerSection<(u64, u64, icf_object::SymbolIndex)>;

/// One parsed object and what the pipeline derived from it.
#[derive(Debug)]
pub struct LoadedObject<'data> {
    /// Index into [`Inputs::files`](crate::Inputs::files).
    pub file: usize,
    pub member: Option<String>,
    pub object: Object<'data>,
    /// Indexed by symbol index.
    pub symbol_refs: Vec<SymbolRef>,
    /// Offsets in executable sections that data refers to (jump-table entries).
    pub code_references: HashMap<SectionIndex, Vec<u64>>,
    /// Offsets in executable sections where data starts (`$d` mapping symbols).
    pub data_in_code: HashMap<SectionIndex, Vec<u64>>,
    /// Where code starts again after data in code ([`icf_object::Object::code_resumes`]).
    pub code_resumes: HashMap<SectionIndex, Vec<u64>>,
    /// Where jump tables and other referenced places start in each section.
    pub anchors: icf_object::DataAnchors,
    /// Named symbols per section, sorted by value: for naming places.
    pub section_symbols: SectionSymbols,
    /// The `STT_SECTION` symbol of each section, indexed by section index.
    pub section_symbol: Vec<Option<icf_object::SymbolIndex>>,
    /// Whether the link includes this object: a plain object always, an
    /// archive member when it defines a symbol the link needs.
    pub loaded: bool,
}

/// One function piece of one object.
#[derive(Clone, Debug)]
pub struct FunctionInfo {
    pub object: ObjectId,
    pub extent: FunctionExtent,
}

/// How a relocation through one symbol is normalized.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct SymbolRef {
    pub target: TargetId,
    /// Added to the relocation's addend: the symbol's offset in its section, or its absolute value.
    pub base: i64,
}
