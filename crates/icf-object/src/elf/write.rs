//! Writes a parsed object back with fold edits applied, keeping every section
//! the edits do not touch byte-for-byte.
//!
//! `object`'s ELF builder rejects `SHT_GROUP` and `SHT_LLVM_ADDRSIG`, i.e.
//! every C++, Rust and clang object, so this drives the low-level
//! `object::write::elf::Writer` (layout, section indices) and regenerates
//! only what an edit changes: the symbol table and string tables (laid out
//! by `tables.rs`), the relocation sections, group member lists,
//! `.llvm_addrsig` and `.eh_frame`.
//!
//! Edits: a section whose body is folded into another copy is removed, with
//! its relocation section, its FDE and any `SHF_LINK_ORDER` section attached
//! to it; its symbols move to the kept copy (same object) or, for local
//! symbols, disappear; every relocation that pointed into it (code, data,
//! `.debug_*`) is retargeted to the same place in the kept copy. A thunk
//! section keeps its symbols and alignment but holds a jump to the kept copy.

use crate::edits::{Destination, Edits, NewContents, NewSymbol, SymbolRef};
use crate::eh_frame;
use crate::elf::tables::{Strings, SymbolTables, TableSymbol, string_table_header};
use crate::error::{Error, Result};
use crate::model::{
    Binding, ComdatGroup, Reloc, SectionIndex, Symbol, SymbolIndex, SymbolKind, SymbolPlace,
    Visibility,
};
use crate::object::Object;
use object::LittleEndian as LE;
use object::elf;
use object::read::elf::FileHeader as _;
use object::write::elf::{FileHeader, Rel, SectionHeader, Writer};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The most a section's data is aligned in the output file. A relocatable
/// object's file offsets need no alignment (`sh_addralign` is for the
/// linker's addresses, and stays as it was); beyond a page, padding the file
/// to it only costs space: a section aligned to 2 GiB, which lld accepts,
/// would make the output 2 GiB.
const MAX_FILE_OFFSET_ALIGN: u64 = 4096;

/// A relocation of the output: offset, output symbol position, type, addend.
type OutReloc = (u64, usize, u32, i64);

/// A section of the output: an input section, or the relocations of one.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
enum Out {
    Section(SectionIndex),
    Relocations(SectionIndex),
}

/// Sections whose bytes or relocations the output changes, by input index.
#[derive(Debug, Default)]
struct ChangedContents {
    /// New bytes: of thunks, `.eh_frame`, group sections and `.llvm_addrsig`.
    data: HashMap<SectionIndex, Vec<u8>>,
    /// New relocations: of thunks and `.eh_frame`. Those of a section that
    /// keeps its contents are retargeted while they are written, not
    /// gathered here first: in a large object they outnumber everything else.
    relocs: HashMap<SectionIndex, Vec<OutReloc>>,
}

/// The output symbol table's order.
#[derive(Debug)]
struct SymbolOrder {
    /// Positions in [`Rewriter::symbols`], in output order (after the null
    /// symbol): locals, then globals.
    order: Vec<usize>,
    /// The index of the first global symbol (the symbol table's `sh_info`).
    num_local: u32,
    /// The output index of each position in [`Rewriter::symbols`].
    out_index: Vec<u32>,
}

/// The output's sections in order, with what the writer reserved for each.
#[derive(Debug)]
struct OutputSections {
    outs: Vec<Out>,
    /// By input section index: the section as the output holds it.
    sections: Vec<Placed>,
    /// By input section index: the relocation section of that section.
    relocations: Vec<Placed>,
}

/// One output section: its index (0 where the output has none), its name
/// (an offset into the section header string table) and where its data
/// starts in the file.
#[derive(Copy, Clone, Debug, Default)]
struct Placed {
    index: u32,
    name: u32,
    offset: u64,
}

impl OutputSections {
    /// The output index of input section `old`; `None` when it is gone.
    fn index(&self, old: SectionIndex) -> Option<u32> {
        self.placed(Out::Section(old)).map(|p| p.index)
    }

    /// What the output holds for `out`, if it holds it.
    fn placed(&self, out: Out) -> Option<&Placed> {
        let placed = match out {
            Out::Section(old) => self.sections.get(old.index()),
            Out::Relocations(target) => self.relocations.get(target.index()),
        }?;
        (placed.index != 0).then_some(placed)
    }

    /// What the output holds for `out`, to fill in while reserving.
    fn placed_mut(&mut self, out: Out) -> Option<&mut Placed> {
        match out {
            Out::Section(old) => self.sections.get_mut(old.index()),
            Out::Relocations(target) => self.relocations.get_mut(target.index()),
        }
    }

    /// The input sections the output keeps, in output order.
    fn kept(&self) -> impl Iterator<Item = SectionIndex> + '_ {
        self.outs.iter().filter_map(|out| match *out {
            Out::Section(old) => Some(old),
            Out::Relocations(_) => None,
        })
    }

    /// The sections whose relocations the output holds, in output order.
    fn relocated(&self) -> impl Iterator<Item = SectionIndex> + '_ {
        self.outs.iter().filter_map(|out| match *out {
            Out::Relocations(target) => Some(target),
            Out::Section(_) => None,
        })
    }
}

/// What happens to one old symbol.
#[derive(Copy, Clone, Debug)]
enum SymbolFate {
    Keep,
    /// Defined again at `value` in `section`.
    Redefine {
        section: SectionIndex,
        value: u64,
        size: u64,
    },
    /// Gone; references go to the destination of its section.
    Drop,
    /// A global whose definition moved to another object with its body: references stay, by name.
    Undefine,
}

/// A symbol of the output, before indices are known.
#[derive(Clone, Debug)]
struct OutSymbol<'a> {
    name: &'a [u8],
    st_info: u8,
    st_other: u8,
    /// Old section index, `None` for SHN_UNDEF/ABS/COMMON given by `special`.
    section: Option<SectionIndex>,
    special: u16,
    value: u64,
    size: u64,
}

impl OutSymbol<'_> {
    fn is_local(&self) -> bool {
        self.st_info >> 4 == elf::STB_LOCAL.0
    }
}

/// Rewrites ELF `object` with `edits`. The result is a complete ELF file.
pub(crate) fn rewrite_elf(object: &Object<'_>, edits: &Edits) -> Result<Vec<u8>> {
    let mut buffer = Vec::with_capacity(object.data.len());
    Rewriter::new(object, edits)?.write(&mut buffer)?;
    Ok(buffer)
}

/// [`rewrite_elf`] streamed into `out`, the same bytes in the same order
/// without holding the file in memory. An unchanged section's bytes reach
/// `out` as one write of the input's own slice, so `out` may tell them
/// apart (icf's output file copies them from the input file).
pub(crate) fn rewrite_elf_into(
    object: &Object<'_>,
    edits: &Edits,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let rewriter = Rewriter::new(object, edits)?;
    let mut buffer = object::write::StreamingBuffer::new(out);
    rewriter.write(&mut buffer)?;
    buffer
        .result()
        .map_err(|e| Error::new(format!("writing the rewritten object: {e}")))
}

struct Rewriter<'a, 'data> {
    object: &'a Object<'data>,
    edits: &'a Edits,
    dropped: SectionSet,
    /// FDE-less sections: removed or turned into thunks.
    unwound: SectionSet,
    fates: Vec<SymbolFate>,
    /// Output symbols: old kept/redefined ones, then new ones, then added section symbols.
    symbols: Vec<OutSymbol<'a>>,
    /// Output position (in `symbols`) of each old symbol.
    old_to_out: Vec<Option<usize>>,
    /// Output position of each new symbol.
    new_to_out: Vec<usize>,
    /// Output position of the section symbol of each section, added where missing.
    section_symbol: HashMap<SectionIndex, usize>,
    /// The relocations the reader left unread ([`Section::relocs_deferred`])
    /// of each section that stays, read once here.
    deferred_relocs: HashMap<SectionIndex, Vec<Reloc>>,
}

/// A set of an object's sections, by index.
#[derive(Debug)]
struct SectionSet {
    member: Vec<bool>,
    len: usize,
}

impl SectionSet {
    fn new(sections: usize) -> SectionSet {
        SectionSet {
            member: vec![false; sections],
            len: 0,
        }
    }

    fn contains(&self, section: &SectionIndex) -> bool {
        self.member.get(section.index()).copied().unwrap_or(false)
    }

    /// Adds `section` (an index past the object's sections is no section).
    fn insert(&mut self, section: SectionIndex) {
        if let Some(member) = self.member.get_mut(section.index())
            && !*member
        {
            *member = true;
            self.len += 1;
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn iter(&self) -> impl Iterator<Item = SectionIndex> + '_ {
        self.member
            .iter()
            .enumerate()
            .filter(|(_, member)| **member)
            .map(|(index, _)| SectionIndex(index as u32))
    }
}

impl Extend<SectionIndex> for SectionSet {
    fn extend<I: IntoIterator<Item = SectionIndex>>(&mut self, sections: I) {
        for section in sections {
            self.insert(section);
        }
    }
}

impl<'a, 'data> Rewriter<'a, 'data> {
    fn new(object: &'a Object<'data>, edits: &'a Edits) -> Result<Rewriter<'a, 'data>> {
        let mut rewriter = Rewriter {
            object,
            edits,
            dropped: SectionSet::new(object.sections.len()),
            unwound: SectionSet::new(object.sections.len()),
            fates: Vec::new(),
            symbols: Vec::new(),
            old_to_out: Vec::new(),
            new_to_out: Vec::new(),
            section_symbol: HashMap::default(),
            deferred_relocs: HashMap::default(),
        };
        rewriter.plan_sections();
        rewriter.plan_symbols()?;
        for (index, section) in object.sections.iter().enumerate() {
            let index = SectionIndex(index as u32);
            if section.relocs_deferred && !rewriter.dropped.contains(&index) {
                let relocs = object.relocations(index)?.into_owned();
                rewriter.deferred_relocs.insert(index, relocs);
            }
        }
        Ok(rewriter)
    }

    /// The input's relocations of `target`.
    fn input_relocs(&self, target: SectionIndex) -> &[Reloc] {
        match self.deferred_relocs.get(&target) {
            Some(relocs) => relocs,
            None => &self.object.section(target).relocs,
        }
    }

    /// Removed sections, their relocation sections, sections linked to them by
    /// `SHF_LINK_ORDER`, and groups left with no member.
    fn plan_sections(&mut self) {
        let object = self.object;
        self.dropped.extend(self.edits.moved.keys().copied());
        loop {
            let before = self.dropped.len();
            for (index, section) in object.sections.iter().enumerate() {
                let index = SectionIndex(index as u32);
                if self.dropped.contains(&index) {
                    continue;
                }
                let link_order = section.flags & elf::SHF_LINK_ORDER.0 != 0;
                if link_order && self.dropped.contains(&SectionIndex(section.link)) {
                    self.dropped.insert(index);
                }
            }
            for (index, section) in object.sections.iter().enumerate() {
                if crate::model::is_relocation_section(section.sh_type)
                    && self.dropped.contains(&SectionIndex(section.info))
                {
                    self.dropped.insert(SectionIndex(index as u32));
                }
            }
            for group in &object.groups {
                if group.members.iter().all(|m| self.dropped.contains(m)) {
                    self.dropped.insert(group.section);
                }
            }
            if self.dropped.len() == before {
                break;
            }
        }
        self.unwound.extend(self.edits.moved.keys().copied());
        self.unwound.extend(self.edits.replaced.keys().copied());
        self.unwound.extend(self.dropped.iter());
    }

    /// The output symbol table: what happens to each old symbol, the output
    /// symbols (the old ones that stay, the new ones, then the section
    /// symbols retargeted references need), and where each old and new
    /// symbol lands in it.
    fn plan_symbols(&mut self) -> Result<()> {
        self.fates = self.symbol_fates()?;
        let defined_new = self.new_global_definitions();
        let now_defined = self.add_old_symbols(&defined_new);
        self.add_new_symbols();
        self.point_references_at_new_definitions(now_defined);
        self.add_destination_section_symbols();
        Ok(())
    }

    /// What happens to each old symbol, in symbol table order.
    fn symbol_fates(&self) -> Result<Vec<SymbolFate>> {
        let object = self.object;
        let mut fates = Vec::with_capacity(object.symbols.len());
        for (index, symbol) in object.symbols.iter().enumerate() {
            fates.push(self.symbol_fate(index, symbol)?);
        }
        Ok(fates)
    }

    /// What happens to old symbol `index`: one in a removed section is
    /// defined again in the section's local destination, dropped (a local),
    /// or left undefined (a global whose body moved to another object); an
    /// error for a global whose section is removed without a local copy.
    /// Every other symbol is kept.
    fn symbol_fate(&self, index: usize, symbol: &Symbol<'_>) -> Result<SymbolFate> {
        let SymbolPlace::Section(section) = symbol.place else {
            return Ok(SymbolFate::Keep);
        };
        if !self.dropped.contains(&section) {
            return Ok(SymbolFate::Keep);
        }
        Ok(match self.edits.moved.get(&section) {
            Some(Destination::Local {
                section,
                start,
                size,
            }) if symbol.kind != SymbolKind::Section => {
                let size = if symbol.value == 0 {
                    *size
                } else {
                    symbol.size
                };
                SymbolFate::Redefine {
                    section: *section,
                    value: start + symbol.value,
                    size,
                }
            }
            _ if symbol.binding == Binding::Local => SymbolFate::Drop,
            Some(Destination::External { .. }) if symbol.kind != SymbolKind::Section => {
                SymbolFate::Undefine
            }
            _ => {
                return Err(Error::new(format!(
                    "symbol {index} '{}' is global but its section is removed without a local copy",
                    symbol.name_lossy()
                )));
            }
        })
    }

    /// The names the edits define anew, not as locals, with the index of
    /// each in [`Edits::new_symbols`]: a new definition of a name the
    /// object only referenced takes the reference's place (one symbol per
    /// name, never an undefined twin).
    fn new_global_definitions(&self) -> HashMap<&'a [u8], usize> {
        let edits = self.edits;
        edits
            .new_symbols
            .iter()
            .enumerate()
            .filter(|(_, new)| new.definition.is_some() && new.binding != Binding::Local)
            .map(|(index, new)| (new.name.as_slice(), index))
            .collect()
    }

    /// Adds an output symbol for each old symbol that stays, in order after
    /// the null symbol, recording where each lands and the first section
    /// symbol of each section. Returns the (old, new) pairs of undefined
    /// references that a new definition in `defined_new` takes the place of.
    fn add_old_symbols(&mut self, defined_new: &HashMap<&[u8], usize>) -> Vec<(usize, usize)> {
        let object = self.object;
        let mut now_defined: Vec<(usize, usize)> = Vec::new();
        self.old_to_out = vec![None; object.symbols.len()];
        for (index, symbol) in object.symbols.iter().enumerate().skip(1) {
            if symbol.place == SymbolPlace::Undefined
                && symbol.binding != Binding::Local
                && let Some(&new) = defined_new.get(symbol.name)
            {
                now_defined.push((index, new));
                continue;
            }
            let fate = self.fates[index];
            let Some((section, value, size)) = self.output_definition(symbol, fate) else {
                continue;
            };
            self.old_to_out[index] = Some(self.symbols.len());
            self.symbols.push(OutSymbol {
                name: symbol.name,
                st_info: raw_st_info(symbol.binding, symbol.kind),
                st_other: symbol.other,
                section,
                special: special_section_index(symbol.place, fate),
                value,
                size,
            });
            if symbol.kind == SymbolKind::Section
                && let Some(section) = section
            {
                self.section_symbol
                    .entry(section)
                    .or_insert(self.symbols.len() - 1);
            }
        }
        now_defined
    }

    /// Where an old symbol with `fate` is defined in the output: (section,
    /// value, size), with no section when it is not defined in one; `None`
    /// when it is dropped.
    fn output_definition(
        &self,
        symbol: &Symbol<'_>,
        fate: SymbolFate,
    ) -> Option<(Option<SectionIndex>, u64, u64)> {
        Some(match fate {
            SymbolFate::Drop => return None,
            // A symbol on replaced contents (a thunk) covers only what is
            // left; one that covered the section from its start covers
            // the new contents whole, even where they are longer.
            SymbolFate::Keep => match symbol.section().and_then(|s| self.edits.replaced.get(&s)) {
                Some(contents) => {
                    let len = contents.bytes.len() as u64;
                    let size = if symbol.value == 0 && symbol.size > 0 {
                        len
                    } else {
                        symbol.size.min(len.saturating_sub(symbol.value))
                    };
                    (symbol.section(), symbol.value, size)
                }
                None => (symbol.section(), symbol.value, symbol.size),
            },
            SymbolFate::Redefine {
                section,
                value,
                size,
            } => (Some(section), value, size),
            SymbolFate::Undefine => (None, 0, 0),
        })
    }

    /// Adds an output symbol for each new symbol, after the old ones,
    /// recording where each lands.
    fn add_new_symbols(&mut self) {
        let edits = self.edits;
        for new in &edits.new_symbols {
            self.new_to_out.push(self.symbols.len());
            let size = self.new_symbol_size(new);
            self.symbols.push(OutSymbol {
                name: &new.name,
                st_info: raw_st_info(new.binding, new.kind),
                st_other: st_visibility(new.visibility) | new.flags,
                section: new.definition.map(|(section, _)| section),
                special: elf::SHN_UNDEF.0,
                value: new.definition.map_or(0, |(_, value)| value),
                size,
            });
        }
    }

    /// The size of new symbol `new` in the output: a new symbol on replaced
    /// contents (an alias of a COMDAT instance that another class made a
    /// thunk) covers only them.
    fn new_symbol_size(&self, new: &NewSymbol) -> u64 {
        match new.definition {
            Some((section, value)) => match self.edits.replaced.get(&section) {
                Some(contents) => new
                    .size
                    .min((contents.bytes.len() as u64).saturating_sub(value)),
                None => new.size,
            },
            None => new.size,
        }
    }

    /// Makes each old reference in `now_defined`, (old, new), land on the
    /// new symbol that defines its name.
    fn point_references_at_new_definitions(&mut self, now_defined: Vec<(usize, usize)>) {
        for (old, new) in now_defined {
            self.old_to_out[old] = Some(self.new_to_out[new]);
        }
    }

    /// Adds a section symbol, after every other output symbol, for each
    /// local destination of a moved section that has none: references
    /// retargeted there name it.
    fn add_destination_section_symbols(&mut self) {
        let mut destinations: Vec<SectionIndex> = self
            .edits
            .moved
            .values()
            .filter_map(|d| match d {
                Destination::Local { section, .. } => Some(*section),
                Destination::External { .. } => None,
            })
            .collect();
        destinations.sort();
        destinations.dedup();
        for section in destinations {
            if !self.section_symbol.contains_key(&section) {
                self.section_symbol.insert(section, self.symbols.len());
                self.symbols.push(OutSymbol {
                    name: b"",
                    st_info: (elf::STB_LOCAL.0 << 4) | elf::STT_SECTION.0,
                    st_other: 0,
                    section: Some(section),
                    special: 0,
                    value: 0,
                    size: 0,
                });
            }
        }
    }

    /// The output symbol and addend for a relocation through old symbol
    /// `symbol`; `clamp` keeps the place inside a destination (debug info).
    fn retarget(&self, symbol: SymbolIndex, addend: i64, clamp: bool) -> Result<(usize, i64)> {
        if let Some(out) = self.old_to_out[symbol.index()] {
            return Ok((out, addend));
        }
        let old = self.object.symbol(symbol);
        let Some(section) = old.section() else {
            return Err(Error::new(format!(
                "relocation through removed symbol '{}'",
                old.name_lossy()
            )));
        };
        let place = old.value as i64 + addend;
        let clamp_to = |size: u64| {
            if clamp {
                place.clamp(0, size as i64)
            } else {
                place
            }
        };
        match self.edits.moved.get(&section) {
            Some(Destination::Local {
                section,
                start,
                size,
            }) => {
                let out = self.section_symbol[section];
                Ok((out, *start as i64 + clamp_to(*size)))
            }
            Some(Destination::External { symbol, size }) => {
                Ok((self.new_to_out[*symbol], clamp_to(*size)))
            }
            None => Err(Error::new(format!(
                "relocation into section {} which is removed with its owner",
                self.object.section(section).name_lossy()
            ))),
        }
    }

    /// The output file, in the writer's two passes: what changes and in
    /// which order, then every part reserved, then every part written, in
    /// the same order, into `buffer`.
    fn write(&self, buffer: &mut dyn object::write::WritableBuffer) -> Result<()> {
        let header = elf::FileHeader64::<LE>::parse(self.object.data)?;
        let mut changed = self.changed_contents()?;
        let symbols = self.symbol_order();
        let outs = self.output_sections(header, &changed);
        let rela_names = self.relocation_section_names(&outs);

        let mut writer = Writer::new(object::Endianness::Little, true, buffer);
        let mut section_names = Strings::new();
        writer.reserve_file_header();
        let mut sections =
            self.reserve_section_indices(&mut writer, outs, &rela_names, &mut section_names);
        self.regenerate_groups_and_addrsig(&sections, &symbols, &mut changed.data);
        self.reserve_section_data(&mut writer, &mut sections, &changed);
        let tables =
            self.reserve_symbol_tables(&mut writer, &sections, &symbols, &mut section_names);
        self.reserve_relocation_sections(&mut writer, &mut sections, &changed);
        let shstrtab = section_names.add(b".shstrtab");
        writer.reserve_shstrtab_section_index();
        let shstrtab_offset = writer.reserve(section_names.len(), 1);
        writer.reserve_section_headers();

        write_file_header(&mut writer, header)?;
        self.write_section_data(&mut writer, &sections, &changed);
        tables.write(&mut writer);
        self.write_relocation_sections(&mut writer, &sections, &changed, &symbols)?;
        debug_assert_eq!(writer.len(), shstrtab_offset);
        writer.write(section_names.bytes());
        self.write_section_headers(&mut writer, &sections, &changed, &symbols, &tables);
        writer.write_section_header(&string_table_header(
            shstrtab,
            shstrtab_offset,
            section_names.len(),
        ));
        Ok(())
    }

    /// The new bytes and relocations of thunks and of `.eh_frame`. Group
    /// and `.llvm_addrsig` contents come once output indices are known
    /// ([`Rewriter::regenerate_groups_and_addrsig`]).
    fn changed_contents(&self) -> Result<ChangedContents> {
        let object = self.object;
        let mut changed = ChangedContents::default();
        for (index, section) in object.sections.iter().enumerate() {
            let index = SectionIndex(index as u32);
            if self.dropped.contains(&index) || crate::model::is_relocation_section(section.sh_type)
            {
                continue;
            }
            if let Some(contents) = self.edits.replaced.get(&index) {
                changed.data.insert(index, contents.bytes.clone());
                changed
                    .relocs
                    .insert(index, self.new_contents_relocations(contents)?);
                continue;
            }
            if Some(index) == object.eh_frame.as_ref().map(|(s, _)| *s) {
                let (bytes, relocs) = self.rewrite_eh_frame(index)?;
                changed.data.insert(index, bytes);
                changed.relocs.insert(index, relocs);
                continue;
            }
        }
        Ok(changed)
    }

    /// The relocations of new contents (a thunk's jump), their symbols as
    /// positions in [`Rewriter::symbols`].
    fn new_contents_relocations(&self, contents: &NewContents) -> Result<Vec<OutReloc>> {
        contents
            .relocs
            .iter()
            .map(|r| {
                let out = match r.symbol {
                    SymbolRef::Existing(s) => self.retarget(s, r.addend, false).map(|(o, _)| o),
                    SymbolRef::New(n) => Ok(self.new_to_out[n]),
                }?;
                Ok((r.offset, out, r.r_type, r.addend))
            })
            .collect()
    }

    /// How many relocations the output gives section `target`: its new ones,
    /// else the input's.
    fn reloc_count(&self, changed: &ChangedContents, target: SectionIndex) -> usize {
        match changed.relocs.get(&target) {
            Some(relocs) => relocs.len(),
            None if self.object.section(target).reloc_section.is_some() => {
                self.input_relocs(target).len()
            }
            None => 0,
        }
    }

    /// Output symbol order: null, locals, globals.
    fn symbol_order(&self) -> SymbolOrder {
        let mut order: Vec<usize> = (0..self.symbols.len())
            .filter(|&i| self.symbols[i].is_local())
            .collect();
        let num_local = order.len() as u32 + 1;
        order.extend((0..self.symbols.len()).filter(|&i| !self.symbols[i].is_local()));
        let mut out_index = vec![0u32; self.symbols.len()];
        for (position, &symbol) in order.iter().enumerate() {
            out_index[symbol] = position as u32 + 1;
        }
        SymbolOrder {
            order,
            num_local,
            out_index,
        }
    }

    /// The output's sections: every kept section in the original order, each
    /// relocation section right after its target (a new one where a thunk
    /// gained relocations). The regenerated tables (symbols, their section
    /// indices, strings, section names) are not among them: the writer adds
    /// them at the end.
    fn output_sections(
        &self,
        header: &elf::FileHeader64<LE>,
        changed: &ChangedContents,
    ) -> Vec<Out> {
        let object = self.object;
        let shstrndx = header.e_shstrndx(LE).0 as usize;
        let symtab = object.symtab;
        let symtab_strtab = symtab.map(|s| object.section(s).link as usize);
        let is_regenerated = |index: usize, sh_type: u32| {
            Some(SectionIndex(index as u32)) == symtab
                || Some(index) == symtab_strtab
                || index == shstrndx
                || sh_type == elf::SHT_SYMTAB_SHNDX.0
        };
        let mut outs: Vec<Out> = Vec::new();
        for (index, section) in object.sections.iter().enumerate().skip(1) {
            let old = SectionIndex(index as u32);
            if self.dropped.contains(&old)
                || is_regenerated(index, section.sh_type)
                || crate::model::is_relocation_section(section.sh_type)
            {
                continue;
            }
            outs.push(Out::Section(old));
            if self.reloc_count(changed, old) > 0 {
                outs.push(Out::Relocations(old));
            }
        }
        outs
    }

    /// The name of each relocation section of `outs`, by target: the
    /// input's where it was `SHT_RELA`, else `.rela` and the target's name
    /// (relocations are written as `SHT_RELA`, CREL ones too).
    fn relocation_section_names(&self, outs: &[Out]) -> HashMap<SectionIndex, Vec<u8>> {
        let object = self.object;
        let rela_name = |target: SectionIndex| -> Vec<u8> {
            match object.section(target).reloc_section {
                Some(rela) if object.section(rela).sh_type == elf::SHT_RELA.0 => {
                    object.section(rela).name.to_vec()
                }
                _ => [&b".rela"[..], object.section(target).name].concat(),
            }
        };
        outs.iter()
            .filter_map(|out| match out {
                Out::Relocations(target) => Some((*target, rela_name(*target))),
                Out::Section(_) => None,
            })
            .collect()
    }

    /// Reserves an index for each output section in order, and adds each
    /// one's name to `names` (a section's with its relocation section's,
    /// see [`Strings::add_pair`]).
    fn reserve_section_indices(
        &self,
        writer: &mut Writer<'_>,
        outs: Vec<Out>,
        rela_names: &HashMap<SectionIndex, Vec<u8>>,
        names: &mut Strings,
    ) -> OutputSections {
        let count = self.object.sections.len();
        let mut sections = OutputSections {
            outs: Vec::new(),
            sections: vec![Placed::default(); count],
            relocations: vec![Placed::default(); count],
        };
        for out in &outs {
            let index = writer.reserve_section_index().0;
            if let Some(placed) = sections.placed_mut(*out) {
                placed.index = index;
            }
        }
        for out in &outs {
            if let Out::Section(old) = *out {
                let name = self.object.section(old).name;
                match rela_names.get(&old) {
                    Some(rela) => {
                        let (section, relocations) = names.add_pair(name, rela);
                        sections.sections[old.index()].name = section;
                        sections.relocations[old.index()].name = relocations;
                    }
                    None => sections.sections[old.index()].name = names.add(name),
                }
            }
        }
        sections.outs = outs;
        sections
    }

    /// The contents of group sections and of `.llvm_addrsig`, into `data`:
    /// both name output section and symbol indices.
    fn regenerate_groups_and_addrsig(
        &self,
        sections: &OutputSections,
        symbols: &SymbolOrder,
        data: &mut HashMap<SectionIndex, Vec<u8>>,
    ) {
        let object = self.object;
        for group in &object.groups {
            if sections.index(group.section).is_some() {
                data.insert(group.section, self.group_contents(group, sections));
            }
        }
        if object.addrsig.is_some() {
            for old in sections.kept() {
                if object.section(old).sh_type == crate::model::SHT_LLVM_ADDRSIG {
                    data.insert(old, self.addrsig_contents(symbols));
                }
            }
        }
    }

    /// A group section's contents: its flags, then the output index of each
    /// member that stays, each followed by its relocation section's.
    fn group_contents(&self, group: &ComdatGroup, sections: &OutputSections) -> Vec<u8> {
        let flags = if group.is_comdat {
            elf::GRP_COMDAT.0
        } else {
            0
        };
        let mut bytes = flags.to_le_bytes().to_vec();
        for member in group.members.iter().filter(|m| !self.dropped.contains(m)) {
            let member_section = self.object.section(*member);
            if crate::model::is_relocation_section(member_section.sh_type) {
                continue;
            }
            for out in [Out::Section(*member), Out::Relocations(*member)] {
                if let Some(placed) = sections.placed(out) {
                    bytes.extend_from_slice(&placed.index.to_le_bytes());
                }
            }
        }
        bytes
    }

    /// `.llvm_addrsig`'s contents: the output index of each
    /// address-significant symbol that stays, as ULEB128.
    fn addrsig_contents(&self, symbols: &SymbolOrder) -> Vec<u8> {
        let mut bytes = Vec::new();
        for symbol in self.object.addrsig.iter().flatten() {
            if let Some(out) = self.old_to_out[symbol.index()] {
                write_uleb128(&mut bytes, u64::from(symbols.out_index[out]));
            }
        }
        bytes
    }

    /// Reserves the data of each kept section, aligned (see
    /// [`Rewriter::file_offset_alignment`]), and records where it starts.
    fn reserve_section_data(
        &self,
        writer: &mut Writer<'_>,
        sections: &mut OutputSections,
        changed: &ChangedContents,
    ) {
        let kept: Vec<SectionIndex> = sections.kept().collect();
        for old in kept {
            let section = self.object.section(old);
            let len = match changed.data.get(&old) {
                Some(bytes) => bytes.len() as u64,
                None if section.sh_type == elf::SHT_NOBITS.0 => 0,
                None => section.data.len() as u64,
            };
            let offset = writer.reserve(len, self.file_offset_alignment(old));
            sections.sections[old.index()].offset = offset;
        }
    }

    /// Reserves the symbol table in output order (each symbol's name in its
    /// string table), `SHT_SYMTAB_SHNDX` where it is needed and the string
    /// table, their names added to `section_names`.
    fn reserve_symbol_tables(
        &self,
        writer: &mut Writer<'_>,
        sections: &OutputSections,
        symbols: &SymbolOrder,
        section_names: &mut Strings,
    ) -> SymbolTables {
        let mut strings = Strings::new();
        let entries = symbols
            .order
            .iter()
            .map(|&symbol| {
                let out = &self.symbols[symbol];
                TableSymbol {
                    name: strings.add(out.name),
                    st_info: out.st_info,
                    st_other: out.st_other,
                    section: out.section.and_then(|s| sections.index(s)),
                    special: out.special,
                    value: out.value,
                    size: out.size,
                }
            })
            .collect();
        SymbolTables::reserve(writer, strings, entries, symbols.num_local, section_names)
    }

    /// Reserves each relocation section of the output and records where it
    /// starts, by target.
    fn reserve_relocation_sections(
        &self,
        writer: &mut Writer<'_>,
        sections: &mut OutputSections,
        changed: &ChangedContents,
    ) {
        let relocated: Vec<SectionIndex> = sections.relocated().collect();
        for target in relocated {
            let offset = writer.reserve_relocations(self.reloc_count(changed, target), true);
            sections.relocations[target.index()].offset = offset;
        }
    }

    /// Writes the data of each kept section, aligned as reserved: its new
    /// contents where it has them, else the input's bytes.
    fn write_section_data(
        &self,
        writer: &mut Writer<'_>,
        sections: &OutputSections,
        changed: &ChangedContents,
    ) {
        for old in sections.kept() {
            let section = self.object.section(old);
            writer.write_align(self.file_offset_alignment(old));
            match changed.data.get(&old) {
                Some(bytes) => writer.write(bytes),
                None if section.sh_type == elf::SHT_NOBITS.0 => {}
                None => writer.write(section.data),
            }
        }
    }

    /// Writes each relocation section of the output: new relocations as
    /// they are, the input's retargeted on the way.
    fn write_relocation_sections(
        &self,
        writer: &mut Writer<'_>,
        sections: &OutputSections,
        changed: &ChangedContents,
        symbols: &SymbolOrder,
    ) -> Result<()> {
        for target in sections.relocated() {
            writer.write_align_relocation();
            match changed.relocs.get(&target) {
                Some(relocs) => {
                    for &reloc in relocs {
                        write_relocation(writer, &symbols.out_index, reloc);
                    }
                }
                None => self.write_retargeted_relocations(writer, target, &symbols.out_index)?,
            }
        }
        Ok(())
    }

    /// Writes the input's relocations of `target`, each through its output
    /// symbol (see [`Rewriter::retarget`]; clamped in sections that are not
    /// loaded, i.e. debug info).
    fn write_retargeted_relocations(
        &self,
        writer: &mut Writer<'_>,
        target: SectionIndex,
        out_index: &[u32],
    ) -> Result<()> {
        let section = self.object.section(target);
        let clamp = !section.is_alloc();
        for r in self.input_relocs(target) {
            let (out, addend) = self.retarget(r.symbol, r.addend, clamp).map_err(|e| {
                self.object
                    .section_error(target, e.message)
                    .at_offset(r.offset)
            })?;
            write_relocation(writer, out_index, (r.offset, out, r.r_type, addend));
        }
        Ok(())
    }

    /// Writes the section headers: the null one, each output section's in
    /// order, then the regenerated tables'.
    fn write_section_headers(
        &self,
        writer: &mut Writer<'_>,
        sections: &OutputSections,
        changed: &ChangedContents,
        symbols: &SymbolOrder,
        tables: &SymbolTables,
    ) {
        writer.write_null_section_header();
        let symtab_index = tables.symtab_index;
        for out in &sections.outs {
            let name = sections.placed(*out).map_or(0, |p| p.name);
            let header = match *out {
                Out::Relocations(target) => {
                    self.relocation_section_header(target, name, symtab_index, sections, changed)
                }
                Out::Section(old) => {
                    self.section_header(old, name, symtab_index, sections, changed, symbols)
                }
            };
            writer.write_section_header(&header);
        }
        tables.write_headers(writer);
    }

    /// The header of the relocation section of `target`: `SHT_RELA`, with
    /// the input's flags where it had one, else `SHF_INFO_LINK` and the
    /// target's `SHF_GROUP`.
    fn relocation_section_header(
        &self,
        target: SectionIndex,
        name: u32,
        symtab: u32,
        sections: &OutputSections,
        changed: &ChangedContents,
    ) -> SectionHeader {
        let object = self.object;
        let flags = match object.section(target).reloc_section {
            Some(rela) => object.section(rela).flags,
            None => elf::SHF_INFO_LINK.0 | (object.section(target).flags & elf::SHF_GROUP.0),
        };
        SectionHeader {
            sh_name: name,
            sh_type: elf::SHT_RELA,
            sh_flags: elf::SectionFlags(flags),
            sh_addr: 0,
            sh_offset: sections.relocations[target.index()].offset,
            sh_size: self.reloc_count(changed, target) as u64 * 24,
            sh_link: symtab,
            sh_info: sections.sections[target.index()].index,
            sh_addralign: 8,
            sh_entsize: 24,
        }
    }

    /// The header of kept section `old`: the input's, with its size, file
    /// offset, links and alignment as they are in the output.
    fn section_header(
        &self,
        old: SectionIndex,
        name: u32,
        symtab: u32,
        sections: &OutputSections,
        changed: &ChangedContents,
        symbols: &SymbolOrder,
    ) -> SectionHeader {
        let section = self.object.section(old);
        let size = match changed.data.get(&old) {
            Some(bytes) => bytes.len() as u64,
            None => section.size,
        };
        let (link, info) =
            self.link_and_info(old, &|s| sections.index(s), symtab, &symbols.out_index);
        SectionHeader {
            sh_name: name,
            sh_type: elf::SectionType(section.sh_type),
            sh_flags: elf::SectionFlags(section.flags),
            sh_addr: 0,
            sh_offset: sections.sections[old.index()].offset,
            sh_size: size,
            sh_link: link,
            sh_info: info,
            sh_addralign: self.alignment(old),
            sh_entsize: section.entsize,
        }
    }

    /// Where in the output file section `section`'s data may start: a
    /// multiple of this (see [`MAX_FILE_OFFSET_ALIGN`]).
    fn file_offset_alignment(&self, section: SectionIndex) -> u64 {
        self.alignment(section).clamp(1, MAX_FILE_OFFSET_ALIGN)
    }

    fn alignment(&self, section: SectionIndex) -> u64 {
        let original = self.object.section(section).align;
        if let Some(contents) = self.edits.replaced.get(&section) {
            return original.min(contents.align.max(1));
        }
        self.edits
            .align
            .get(&section)
            .map_or(original, |&a| a.max(original))
    }

    /// `sh_link` and `sh_info` in the output's numbering.
    fn link_and_info(
        &self,
        old: SectionIndex,
        section_index: &dyn Fn(SectionIndex) -> Option<u32>,
        symtab: u32,
        out_index: &[u32],
    ) -> (u32, u32) {
        let section = self.object.section(old);
        let remap = |index: u32| section_index(SectionIndex(index)).unwrap_or(0);
        match section.sh_type {
            t if t == elf::SHT_GROUP.0 => {
                let signature = self.old_to_out[section.info as usize].map_or(0, |o| out_index[o]);
                (symtab, signature)
            }
            // A stale table (`sh_link` 0, see `Object::read_addrsig`) is
            // copied unchanged and stays stale: linked to the new symbol
            // table, its old indices would name other symbols.
            t if t == crate::model::SHT_LLVM_ADDRSIG && self.object.addrsig.is_some() => {
                (symtab, 0)
            }
            t if t == crate::model::SHT_LLVM_ADDRSIG => (0, 0),
            _ => {
                let link = if section.flags & elf::SHF_LINK_ORDER.0 != 0 || section.link != 0 {
                    remap(section.link)
                } else {
                    0
                };
                let info = if section.flags & elf::SHF_INFO_LINK.0 != 0 {
                    remap(section.info)
                } else {
                    section.info
                };
                (link, info)
            }
        }
    }

    /// `.eh_frame` without the FDEs of removed and thunk sections: entries
    /// are copied in order, CIE pointers recomputed, relocations moved with
    /// their entry.
    fn rewrite_eh_frame(&self, index: SectionIndex) -> Result<(Vec<u8>, Vec<OutReloc>)> {
        let section = self.object.section(index);
        let Some((_, fdes)) = &self.object.eh_frame else {
            return Ok((section.data.to_vec(), Vec::new()));
        };
        let removed: HashSet<u64> = fdes
            .iter()
            .filter(|fde| {
                fde.pc_begin.is_some_and(|r| {
                    let symbol = self.object.symbol(section.reloc(r).symbol);
                    symbol.section().is_some_and(|s| self.unwound.contains(&s))
                })
            })
            .map(|fde| fde.offset)
            .collect();
        let entries = eh_frame::entries(section.data)
            .map_err(|e| self.object.section_error(index, e.message))?;
        let mut bytes = Vec::with_capacity(section.data.len());
        let mut moved_to: HashMap<u64, u64> = HashMap::default();
        let mut relocs = Vec::with_capacity(section.relocs.len());
        for entry in &entries {
            if removed.contains(&entry.offset) {
                continue;
            }
            let new_offset = bytes.len() as u64;
            moved_to.insert(entry.offset, new_offset);
            let mut data =
                section.data[entry.offset as usize..(entry.offset + entry.size) as usize].to_vec();
            if let Some(cie) = entry.cie_offset {
                let new_cie = moved_to.get(&cie).copied().ok_or_else(|| {
                    self.object
                        .section_error(index, "an FDE precedes its CIE")
                        .at_offset(entry.offset)
                })?;
                // The CIE pointer is the distance from the pointer field back to the CIE.
                let field = new_offset + entry.cie_pointer_at;
                let distance = (field - new_cie) as u32;
                data[entry.cie_pointer_at as usize..entry.cie_pointer_at as usize + 4]
                    .copy_from_slice(&distance.to_le_bytes());
            }
            bytes.extend_from_slice(&data);
            let first = section.relocs.partition_point(|r| r.offset < entry.offset);
            for r in section.relocs[first..]
                .iter()
                .take_while(|r| r.offset < entry.offset + entry.size)
            {
                let (out, addend) = self.retarget(r.symbol, r.addend, false)?;
                relocs.push((r.offset - entry.offset + new_offset, out, r.r_type, addend));
            }
        }
        // Trailing bytes after the last entry (a zero terminator) stay.
        if let Some(last) = entries.last() {
            bytes.extend_from_slice(&section.data[(last.offset + last.size) as usize..]);
        }
        Ok((bytes, relocs))
    }
}

/// Writes the output's file header: the input's OS ABI, type, machine and
/// flags.
fn write_file_header(writer: &mut Writer<'_>, header: &elf::FileHeader64<LE>) -> Result<()> {
    writer.write_file_header(&FileHeader {
        os_abi: header.e_ident().os_abi,
        abi_version: header.e_ident().abi_version,
        e_type: header.e_type(LE),
        e_machine: header.e_machine(LE),
        e_entry: 0,
        e_flags: header.e_flags(LE),
    })?;
    Ok(())
}

/// Writes one relocation as `SHT_RELA`, naming its symbol by output index.
fn write_relocation(
    writer: &mut Writer<'_>,
    out_index: &[u32],
    (offset, symbol, r_type, addend): OutReloc,
) {
    writer.write_relocation(
        true,
        &Rel {
            r_offset: offset,
            r_sym: out_index[symbol],
            r_type: elf::RelocationType(r_type),
            r_addend: addend,
        },
    );
}

fn raw_st_info(binding: Binding, kind: SymbolKind) -> u8 {
    let bind = match binding {
        Binding::Local => elf::STB_LOCAL.0,
        Binding::Global => elf::STB_GLOBAL.0,
        Binding::Weak => elf::STB_WEAK.0,
        Binding::Unique => elf::STB_GNU_UNIQUE.0,
        Binding::Other(other) => other,
    };
    let kind = match kind {
        SymbolKind::NoType => elf::STT_NOTYPE.0,
        SymbolKind::Object => elf::STT_OBJECT.0,
        SymbolKind::Func => elf::STT_FUNC.0,
        SymbolKind::Section => elf::STT_SECTION.0,
        SymbolKind::File => elf::STT_FILE.0,
        SymbolKind::Common => elf::STT_COMMON.0,
        SymbolKind::Tls => elf::STT_TLS.0,
        SymbolKind::Ifunc => elf::STT_GNU_IFUNC.0,
        SymbolKind::Other(other) => other,
    };
    (bind << 4) | (kind & 0xf)
}

/// The special section index of an old symbol at `place` with `fate`
/// (`SHN_UNDEF`, `SHN_ABS`, `SHN_COMMON`), 0 for one defined in a section.
fn special_section_index(place: SymbolPlace, fate: SymbolFate) -> u16 {
    match (place, fate) {
        (_, SymbolFate::Undefine) | (SymbolPlace::Undefined, _) => elf::SHN_UNDEF.0,
        (SymbolPlace::Absolute, _) => elf::SHN_ABS.0,
        (SymbolPlace::Common, _) => elf::SHN_COMMON.0,
        (SymbolPlace::Section(_), _) => 0,
    }
}

fn write_uleb128(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
}

/// The `st_other` visibility bits of `visibility`.
fn st_visibility(visibility: Visibility) -> u8 {
    match visibility {
        Visibility::Default => elf::STV_DEFAULT,
        Visibility::Internal => elf::STV_INTERNAL,
        Visibility::Hidden => elf::STV_HIDDEN,
        Visibility::Protected => elf::STV_PROTECTED,
    }
    .0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// An x86-64 object assembled from `source` (GNU as, as installed by
    /// `cargo xtask test`).
    fn assemble(name: &str, source: &str) -> Vec<u8> {
        let dir = std::env::temp_dir().join(format!("icf-rewrite-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("creating a test directory");
        let (s, o) = (dir.join("in.s"), dir.join("in.o"));
        std::fs::write(&s, source).expect("writing the source");
        let status = Command::new("as")
            .arg(&s)
            .arg("-o")
            .arg(&o)
            .status()
            .expect("running as");
        assert!(status.success(), "as failed");
        let bytes = std::fs::read(&o).expect("reading the object");
        let _ = std::fs::remove_dir_all(&dir);
        bytes
    }

    #[test]
    fn a_new_symbol_on_replaced_contents_covers_only_them() {
        let data = assemble(
            "new_on_replaced",
            ".section .text.f,\"ax\",@progbits\n.globl f\n.type f,@function\nf:\n  .fill 32, 1, 0x90\n  ret\n.size f, 33\n",
        );
        let object = Object::parse(&data).expect("a valid object");
        let section = SectionIndex(
            object
                .sections
                .iter()
                .position(|s| s.name == b".text.f")
                .expect("the section") as u32,
        );
        let mut edits = Edits::default();
        edits.replaced.insert(
            section,
            NewContents {
                bytes: vec![0xe9, 0, 0, 0, 0],
                relocs: Vec::new(),
                align: 1,
            },
        );
        edits.new_symbols.push(NewSymbol {
            name: b"alias_of_f".to_vec(),
            definition: Some((section, 0)),
            size: 33,
            binding: Binding::Global,
            kind: SymbolKind::Func,
            visibility: Visibility::Hidden,
            flags: 0,
        });
        let out = rewrite_elf(&object, &edits).expect("rewriting");
        let mut streamed = Vec::new();
        rewrite_elf_into(&object, &edits, &mut streamed).expect("rewriting as a stream");
        assert!(
            streamed == out,
            "streamed and built in memory, the same bytes"
        );
        let out = Object::parse(&out).expect("a valid output");
        let size_of = |name: &[u8]| {
            out.symbols
                .iter()
                .find(|s| s.name == name)
                .map(|s| s.size)
                .expect("the symbol")
        };
        assert_eq!(size_of(b"f"), 5);
        assert_eq!(size_of(b"alias_of_f"), 5);
    }
}
