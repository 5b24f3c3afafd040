//! Writes a Mach-O object back with fold edits applied, without moving a
//! single byte of its contents.
//!
//! `object`'s Mach-O builder cannot carry an object through (it fails on
//! `LC_LINKER_OPTION`, reads `ARM64_RELOC_ADDEND`'s addend as a section
//! number, and its writer drops data-in-code and optimization hints), so
//! this keeps the header, the load commands and every section's bytes as
//! they are, and writes anew only what follows them: the relocation tables,
//! `LC_DATA_IN_CODE`'s table, the optimization hints, the symbol and string
//! tables, with the offsets and counts in the load commands that point at
//! them.
//!
//! Edits (see [`Edits`]), atom by atom:
//! - **Moved** (a duplicate of a copy kept elsewhere): its symbols are
//!   defined again at the kept copy (same object, so they become aliases:
//!   two symbols at one address make one atom), or, for a copy in another
//!   object, its globals become undefined (the kept object defines them)
//!   and references to its locals go to the kept copy's symbol. The body
//!   stays where it is under a new local label (`icf.folded.N`), an atom
//!   nothing refers to, which `-dead_strip` removes.
//! - **Replaced** (a thunk, where the address must stay unique): the jump
//!   is written over the atom's first bytes, its relocations there are
//!   replaced by the jump's, the rest becomes a dead atom of its own
//!   (`icf.rest.N`), and its compact unwind record says frameless, covers
//!   only the jump, and names no personality or LSDA.
//! - **Kept alive**: a symbol of [`Edits::keep_alive`] gets `N_NO_DEAD_STRIP`.
//! - Optimization hints that name an address in an edited atom are dropped
//!   (a hint is advice about instruction sequences that are gone).
//! - Alignment edits are not needed: an atom keeps its place, so it keeps
//!   its alignment.

use crate::edits::{Destination, Edits, NewContents, SymbolRef};
use crate::error::{Error, Result};
use crate::macho_layout::{MachOLayout, read_uleb128};
use crate::model::{Binding, SectionIndex, SymbolIndex, SymbolPlace, Visibility};
use crate::object::Object;
use object::LittleEndian as LE;
use object::macho;
use object::read::macho::MachHeader;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// `n_type` and `n_desc` bits.
const N_EXT: u8 = 0x01;
const N_PEXT: u8 = 0x10;
const N_SECT: u8 = 0x0e;
const N_WEAK_DEF: u16 = 0x0080;
const N_WEAK_REF: u16 = 0x0040;
const N_ALT_ENTRY: u16 = 0x0200;
const N_NO_DEAD_STRIP: u16 = 0x0020;

/// Which run of the symbol table a symbol belongs to (`LC_DYSYMTAB`).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Run {
    Local,
    Defined,
    Undefined,
}

/// One symbol of the output.
#[derive(Clone, Debug)]
struct OutSymbol {
    name: Vec<u8>,
    n_type: u8,
    n_sect: u8,
    n_desc: u16,
    n_value: u64,
    run: Run,
}

/// Where the load commands the writer updates are.
#[derive(Default)]
struct Commands {
    symtab: Option<u64>,
    dysymtab: Option<u64>,
    data_in_code: Option<u64>,
    hints: Option<(u64, u32, u32)>,
}

/// Rewrites Mach-O `object` with `edits`; the result is a complete file.
pub(crate) fn rewrite_macho(object: &Object<'_>, edits: &Edits) -> Result<Vec<u8>> {
    let layout = object
        .macho
        .as_deref()
        .ok_or_else(|| Error::new("a Mach-O object without its layout"))?;
    Writer::new(object, layout, edits)?.write()
}

struct Writer<'a, 'data> {
    object: &'a Object<'data>,
    layout: &'a MachOLayout,
    edits: &'a Edits,
    commands: Commands,
    /// The output symbols, in no particular order yet.
    symbols: Vec<OutSymbol>,
    /// Output position (in `symbols`) of each model symbol that has one.
    of_model: HashMap<u32, usize>,
    /// Output position of each new symbol of the edits.
    of_new: Vec<usize>,
    /// Where each replaced atom's dead rest starts (offset in the atom).
    rest_at: HashMap<SectionIndex, u64>,
    /// File offset of the input's symbol table (`LC_SYMTAB`'s `symoff`).
    symoff: u32,
}

impl<'a, 'data> Writer<'a, 'data> {
    fn new(
        object: &'a Object<'data>,
        layout: &'a MachOLayout,
        edits: &'a Edits,
    ) -> Result<Writer<'a, 'data>> {
        let commands = read_commands(object.data)?;
        let symoff = commands.symtab.map_or(0, |at| get_u32(object.data, at + 8));
        let mut writer = Writer {
            object,
            layout,
            edits,
            symoff,
            commands,
            symbols: Vec::new(),
            of_model: HashMap::default(),
            of_new: Vec::new(),
            rest_at: HashMap::default(),
        };
        writer.plan_symbols()?;
        Ok(writer)
    }

    /// The file address of model section (atom) `section`.
    fn atom_address(&self, section: SectionIndex) -> u64 {
        let atom = self.layout.atoms[section.index()];
        self.layout.sections[atom.section as usize].addr + atom.start
    }

    /// The `n_sect` (ordinal) of model section `section`.
    fn ordinal(&self, section: SectionIndex) -> u8 {
        (self.layout.atoms[section.index()].section + 1) as u8
    }

    /// The `nlist_64` entry behind model symbol `index` (1-based), as the
    /// file has it: type, section number, desc and value.
    fn raw_entry(&self, index: u32) -> Option<(u8, u8, u16, u64)> {
        let at = self.symoff as usize + (index as usize - 1) * 16;
        let entry = self.object.data.get(at..at + 16)?;
        let value = u64::from_le_bytes(entry[8..16].try_into().ok()?);
        Some((
            entry[4],
            entry[5],
            u16::from_le_bytes([entry[6], entry[7]]),
            value,
        ))
    }

    fn plan_symbols(&mut self) -> Result<()> {
        let object = self.object;
        let nlist_count = self.layout.nlist_count;
        let mut folded_labels = 0usize;
        // The symbol table's own entries.
        for index in 1..=nlist_count {
            let symbol = object.symbol(SymbolIndex(index));
            let (n_type, n_sect, n_desc, n_value) = self
                .raw_entry(index)
                .ok_or_else(|| Error::new("the symbol table moved under the writer"))?;
            let mut out = OutSymbol {
                name: symbol.name.to_vec(),
                n_type,
                n_sect,
                n_desc,
                n_value,
                run: run_of(n_type),
            };
            if let SymbolPlace::Section(section) = symbol.place
                && let Some(destination) = self.edits.moved.get(&section)
            {
                match destination {
                    Destination::Local {
                        section: kept,
                        start,
                        ..
                    } => {
                        let offset = start + symbol.value;
                        out.n_sect = self.ordinal(*kept);
                        out.n_value = self.atom_address(*kept) + offset;
                        if offset > 0 {
                            // Inside the kept atom: an entry, not a new atom.
                            out.n_desc |= N_ALT_ENTRY;
                        }
                    }
                    Destination::External { .. } if symbol.binding == Binding::Local => {
                        // References go to the kept copy (see `target_of`).
                        continue;
                    }
                    Destination::External { .. } => {
                        out.n_type = N_EXT;
                        out.n_sect = 0;
                        out.n_desc = 0;
                        out.n_value = 0;
                        out.run = Run::Undefined;
                    }
                }
            }
            if self.edits.keep_alive.contains(&SymbolIndex(index)) {
                out.n_desc |= N_NO_DEAD_STRIP;
            }
            self.of_model.insert(index, self.symbols.len());
            self.symbols.push(out);
        }
        // The bodies of moved atoms, under labels of their own.
        let mut moved: Vec<SectionIndex> = self.edits.moved.keys().copied().collect();
        moved.sort_unstable();
        for section in moved {
            self.symbols.push(OutSymbol {
                name: format!("icf.folded.{folded_labels}").into_bytes(),
                n_type: N_SECT,
                n_sect: self.ordinal(section),
                n_desc: 0,
                n_value: self.atom_address(section),
                run: Run::Local,
            });
            folded_labels += 1;
        }
        // The rest of each thunk's atom, split off.
        let mut replaced: Vec<SectionIndex> = self.edits.replaced.keys().copied().collect();
        replaced.sort_unstable();
        for section in replaced {
            let contents = &self.edits.replaced[&section];
            // Right after the jump: the old instructions behind it belong to
            // the dead atom, not to the thunk.
            let rest = contents.bytes.len() as u64;
            self.rest_at.insert(section, rest);
            if rest < object.section(section).size {
                self.symbols.push(OutSymbol {
                    name: format!("icf.rest.{}", self.rest_at.len() - 1).into_bytes(),
                    n_type: N_SECT,
                    n_sect: self.ordinal(section),
                    n_desc: 0,
                    n_value: self.atom_address(section) + rest,
                    run: Run::Local,
                });
            }
        }
        // The edits' new symbols.
        for symbol in &self.edits.new_symbols {
            let out = match symbol.definition {
                Some((section, value)) => {
                    let mut n_type = N_SECT;
                    let mut n_desc = 0;
                    let mut run = Run::Local;
                    if symbol.binding != Binding::Local {
                        n_type |= N_EXT;
                        run = Run::Defined;
                        if symbol.visibility != Visibility::Default {
                            n_type |= N_PEXT;
                        }
                        if symbol.binding == Binding::Weak {
                            n_desc |= N_WEAK_DEF;
                        }
                    }
                    if value > 0 {
                        n_desc |= N_ALT_ENTRY;
                    }
                    // The copied symbol's weak bits: a definition the linker
                    // may hide (N_WEAK_REF) stays one.
                    if symbol.binding == Binding::Weak {
                        n_desc |= u16::from(symbol.flags) & (N_WEAK_DEF | N_WEAK_REF);
                    }
                    OutSymbol {
                        name: symbol.name.clone(),
                        n_type,
                        n_sect: self.ordinal(section),
                        n_desc,
                        n_value: self.atom_address(section) + value,
                        run,
                    }
                }
                None => OutSymbol {
                    name: symbol.name.clone(),
                    n_type: N_EXT,
                    n_sect: 0,
                    n_desc: 0,
                    n_value: 0,
                    run: Run::Undefined,
                },
            };
            self.of_new.push(self.symbols.len());
            self.symbols.push(out);
        }
        Ok(())
    }

    /// A symbol (output position) standing for model symbol `symbol`, or
    /// for the atom a section symbol names: an existing symbol at the
    /// atom's start, else a new local label there.
    fn output_symbol(&mut self, symbol: SymbolIndex) -> Result<usize> {
        if let Some(&position) = self.of_model.get(&symbol.0) {
            return Ok(position);
        }
        let model = self.object.symbol(symbol);
        if symbol.0 > self.layout.nlist_count
            && let SymbolPlace::Section(section) = model.place
        {
            if let Some(destination) = self.edits.moved.get(&section) {
                return match destination {
                    Destination::External { symbol, .. } => Ok(self.of_new[*symbol]),
                    Destination::Local {
                        section: kept,
                        start,
                        ..
                    } => {
                        let kept_symbol = self.layout.atom_symbol(*kept);
                        if *start != 0 {
                            return Err(Error::new(
                                "a reference into a folded copy kept inside a larger atom",
                            ));
                        }
                        self.output_symbol(kept_symbol)
                    }
                };
            }
            let address = self.atom_address(section);
            let ordinal = self.ordinal(section);
            if let Some(position) = self.symbols.iter().position(|s| {
                s.n_type & N_SECT == N_SECT && s.n_sect == ordinal && s.n_value == address
            }) {
                self.of_model.insert(symbol.0, position);
                return Ok(position);
            }
            let position = self.symbols.len();
            self.symbols.push(OutSymbol {
                name: format!("icf.target.{position}").into_bytes(),
                n_type: N_SECT,
                n_sect: ordinal,
                n_desc: 0,
                n_value: address,
                run: Run::Local,
            });
            self.of_model.insert(symbol.0, position);
            return Ok(position);
        }
        // A local symbol of a copy moved to another object: its references
        // go to the kept copy, through the edits' new symbol.
        if let SymbolPlace::Section(section) = model.place
            && let Some(Destination::External { symbol: new, .. }) = self.edits.moved.get(&section)
        {
            if model.value != 0 {
                return Err(Error::new(format!(
                    "a reference to {}, inside a copy folded into another object",
                    model.name_lossy()
                )));
            }
            return Ok(self.of_new[*new]);
        }
        Err(Error::new(format!(
            "symbol {} has no place in the output",
            model.name_lossy()
        )))
    }

    fn write(mut self) -> Result<Vec<u8>> {
        let data = self.object.data;
        let layout = self.layout;
        // Everything up to the end of the last section's bytes stays.
        let header_end = {
            let header = macho::MachHeader64::<LE>::parse(data, 0)
                .map_err(|e| Error::new(format!("bad Mach-O header: {e}")))?;
            32 + u64::from(header.sizeofcmds(LE))
        };
        let contents_end = layout
            .sections
            .iter()
            .filter(|s| s.section_type_is_filled())
            .map(|s| u64::from(s.offset) + s.size)
            .max()
            .unwrap_or(0)
            .max(header_end);
        let mut out = data
            .get(..contents_end as usize)
            .ok_or_else(|| Error::new("section contents lie past the file's end"))?
            .to_vec();
        self.write_thunks(&mut out)?;
        let relocations = self.relocation_tables()?;
        self.rewrite_unwind_records(&mut out)?;
        pad8(&mut out);
        // Relocation tables, section by section.
        for (number, table) in relocations.iter().enumerate() {
            let header = layout.sections[number].header_offset as usize;
            let reloff = if table.is_empty() {
                0
            } else {
                out.len() as u32
            };
            put_u32(&mut out, header + 56, reloff);
            put_u32(&mut out, header + 60, (table.len() / 8) as u32);
            out.extend_from_slice(table);
        }
        // Data in code: the same entries, addresses unchanged.
        if let Some(command) = self.commands.data_in_code {
            let at = out.len() as u32;
            let (dataoff, datasize) = (get_u32(data, command + 8), get_u32(data, command + 12));
            let table = data
                .get(dataoff as usize..(dataoff as usize).saturating_add(datasize as usize))
                .ok_or_else(|| Error::new("LC_DATA_IN_CODE's table lies outside the file"))?;
            out.extend_from_slice(table);
            put_u32(&mut out, command as usize + 8, at);
        }
        // Optimization hints, without those naming edited bytes.
        if let Some((command, dataoff, datasize)) = self.commands.hints {
            let hints = data
                .get(dataoff as usize..(dataoff as usize).saturating_add(datasize as usize))
                .ok_or_else(|| Error::new("LC_LINKER_OPTIMIZATION_HINT lies outside the file"))?;
            let kept = self.kept_hints(hints)?;
            let at = out.len() as u32;
            out.extend_from_slice(&kept);
            pad8(&mut out);
            put_u32(&mut out, command as usize + 8, at);
            let size = out.len() as u32 - at;
            put_u32(&mut out, command as usize + 12, size);
        }
        pad8(&mut out);
        self.write_symbol_table(&mut out)?;
        Ok(out)
    }

    /// Writes each thunk's bytes over its atom's first bytes.
    fn write_thunks(&self, out: &mut [u8]) -> Result<()> {
        for (&section, contents) in &self.edits.replaced {
            let atom = self.layout.atoms[section.index()];
            let file_section = &self.layout.sections[atom.section as usize];
            if contents.bytes.len() as u64 > self.object.section(section).size {
                return Err(Error::new("a thunk larger than the function it replaces"));
            }
            let at = (u64::from(file_section.offset) + atom.start) as usize;
            out.get_mut(at..at + contents.bytes.len())
                .ok_or_else(|| Error::new("a thunk outside the file"))?
                .copy_from_slice(&contents.bytes);
        }
        Ok(())
    }

    /// The relocation table of each file section, in its output form.
    fn relocation_tables(&mut self) -> Result<Vec<Vec<u8>>> {
        let layout = self.layout;
        let data = self.object.data;
        let architecture = icf_arch::of(self.object.arch);
        let mut tables = vec![Vec::new(); layout.sections.len()];
        let unwind_records = self.thunk_unwind_records();
        for (index, section) in self.object.sections.iter().enumerate().skip(1) {
            let model = SectionIndex(index as u32);
            let atom = layout.atoms[index];
            let file_section = &layout.sections[atom.section as usize];
            let raw = |entry: u32| -> Result<[u8; 8]> {
                let at = file_section.reloff as usize + entry as usize * 8;
                data.get(at..at + 8)
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| Error::new("a relocation entry outside the file"))
            };
            let rest = self.rest_at.get(&model).copied();
            // The personality and LSDA fields of a thunk's unwind record are cleared.
            let cleared: Vec<u64> = unwind_records
                .iter()
                .filter(|(table, _, _)| *table == model)
                .map(|&(_, record, _)| record)
                .collect();
            let mut emitted: HashSet<u32> = HashSet::default();
            let mut entries: Vec<[u8; 8]> = Vec::new();
            if let Some(contents) = self.edits.replaced.get(&model) {
                for reloc in &contents.relocs {
                    let symbol = match reloc.symbol {
                        SymbolRef::Existing(symbol) => self.output_symbol(symbol)?,
                        SymbolRef::New(new) => self.of_new[new],
                    };
                    entries.extend(thunk_relocation(
                        architecture,
                        atom.start + reloc.offset,
                        reloc.r_type,
                        reloc.addend,
                        symbol,
                    )?);
                }
            }
            for (number, reloc) in section.relocs.iter().enumerate() {
                if rest.is_some_and(|rest| reloc.offset < rest) {
                    continue;
                }
                if cleared
                    .iter()
                    .any(|&record| (record + 16..record + 32).contains(&reloc.offset))
                {
                    continue;
                }
                let origin = layout.reloc_origins[index][number];
                let fixup = raw(origin)?;
                let word1 = u32::from_le_bytes([fixup[4], fixup[5], fixup[6], fixup[7]]);
                // An ADDEND or SUBTRACTOR before the fixup goes with it.
                if let Some(before) = origin.checked_sub(1)
                    && !emitted.contains(&before)
                {
                    let pair = raw(before)?;
                    let pair_word1 = u32::from_le_bytes([pair[4], pair[5], pair[6], pair[7]]);
                    let same_place = pair[..4] == fixup[..4];
                    let is_pair = architecture
                        .macho_prefix((pair_word1 >> 28) as u8)
                        .is_some();
                    if is_pair && same_place && reloc.r_type != icf_arch::SUBTRACTOR_MARKER {
                        entries.push(self.remapped(pair, reloc_symbol_for(pair_word1))?);
                        emitted.insert(before);
                    }
                }
                if emitted.insert(origin) {
                    let symbol = if word1 & (1 << 27) != 0 {
                        Some(reloc.symbol)
                    } else {
                        // A local relocation: it must not point into a folded copy.
                        let target = self.object.symbol(reloc.symbol);
                        // Sections the linker does not place (debug information,
                        // compact unwind) may keep describing the dead body.
                        if let Some(target) = target.section()
                            && self.edits.moved.contains_key(&target)
                            && section.is_alloc()
                        {
                            return Err(Error::new(format!(
                                "a local relocation at {:#x} points into a folded copy",
                                atom.start + reloc.offset
                            ))
                            .with_section(atom.section + 1, section.name_lossy())
                            .at_offset(u64::from(file_section.reloff) + u64::from(origin) * 8));
                        }
                        None
                    };
                    entries.push(self.remapped(fixup, symbol)?);
                }
            }
            let table = &mut tables[atom.section as usize];
            for entry in entries {
                table.extend_from_slice(&entry);
            }
        }
        Ok(tables)
    }

    /// `entry` with its symbol number pointing at the output symbol for
    /// model symbol `symbol` (external entries); local ones stay.
    fn remapped(&mut self, mut entry: [u8; 8], symbol: Option<SymbolIndex>) -> Result<[u8; 8]> {
        let word1 = u32::from_le_bytes([entry[4], entry[5], entry[6], entry[7]]);
        let is_extern = word1 & (1 << 27) != 0;
        if !is_extern {
            return Ok(entry);
        }
        let model = match symbol {
            Some(symbol) => symbol,
            None => SymbolIndex((word1 & 0x00ff_ffff) + 1),
        };
        let position = self.output_symbol(model)?;
        let word1 = (word1 & 0xff00_0000) | position as u32;
        entry[4..8].copy_from_slice(&word1.to_le_bytes());
        Ok(entry)
    }

    /// The compact unwind records of the functions replaced by thunks: the
    /// table's model section, and each record's offset in it with the
    /// function's new contents.
    fn thunk_unwind_records(&self) -> Vec<(SectionIndex, u64, &'a NewContents)> {
        let Some((table, records)) = &self.object.eh_frame else {
            return Vec::new();
        };
        let section = self.object.section(*table);
        if section.name != b"__compact_unwind" {
            return Vec::new();
        }
        records
            .iter()
            .filter_map(|record| {
                let reloc = section.reloc(record.pc_begin?);
                let function = self.object.symbol(reloc.symbol).section()?;
                let contents = self.edits.replaced.get(&function)?;
                Some((*table, record.offset, contents))
            })
            .collect()
    }

    /// Each thunk's compact unwind record: frameless, covering the jump,
    /// without personality or LSDA (whose relocations
    /// [`Writer::relocation_tables`] drops).
    fn rewrite_unwind_records(&self, out: &mut [u8]) -> Result<()> {
        for (table, record, contents) in self.thunk_unwind_records() {
            let atom = self.layout.atoms[table.index()];
            let file_section = &self.layout.sections[atom.section as usize];
            let at = (u64::from(file_section.offset) + atom.start + record) as usize;
            let frameless = icf_arch::of(self.object.arch).compact_unwind().frameless;
            put_u32(out, at + 8, contents.bytes.len() as u32);
            put_u32(out, at + 12, frameless);
            out.get_mut(at + 16..at + 32)
                .ok_or_else(|| Error::new("a compact unwind record outside the file"))?
                .fill(0);
        }
        Ok(())
    }

    /// The optimization hints that name no address in an edited atom.
    fn kept_hints(&self, hints: &[u8]) -> Result<Vec<u8>> {
        let edited: Vec<(u64, u64)> = self
            .edits
            .moved
            .keys()
            .chain(self.edits.replaced.keys())
            .map(|&section| {
                let start = self.atom_address(section);
                (start, start + self.object.section(section).size)
            })
            .collect();
        let mut kept = Vec::new();
        let mut rest = hints;
        while !rest.is_empty() {
            let entry_start = rest;
            let Some(kind) = read_uleb128(&mut rest) else {
                break;
            };
            if kind == 0 {
                break;
            }
            let count = read_uleb128(&mut rest)
                .ok_or_else(|| Error::new("a truncated optimization hint"))?;
            let mut touches = false;
            for _ in 0..count {
                let address = read_uleb128(&mut rest)
                    .ok_or_else(|| Error::new("a truncated optimization hint"))?;
                touches |= edited.iter().any(|&(s, e)| (s..e).contains(&address));
            }
            if !touches {
                let length = entry_start.len() - rest.len();
                kept.extend_from_slice(&entry_start[..length]);
            }
        }
        Ok(kept)
    }

    /// Writes the symbol and string tables and points `LC_SYMTAB` and
    /// `LC_DYSYMTAB` at them.
    fn write_symbol_table(&self, out: &mut Vec<u8>) -> Result<()> {
        let mut order: Vec<usize> = (0..self.symbols.len()).collect();
        order.sort_by_key(|&position| self.symbols[position].run);
        let mut new_index = vec![0u32; self.symbols.len()];
        for (index, &position) in order.iter().enumerate() {
            new_index[position] = index as u32;
        }
        let mut strings = vec![b' ', 0];
        let symoff = out.len() as u32;
        for &position in &order {
            let symbol = &self.symbols[position];
            let strx = if symbol.name.is_empty() {
                0
            } else {
                let at = strings.len() as u32;
                strings.extend_from_slice(&symbol.name);
                strings.push(0);
                at
            };
            out.extend_from_slice(&strx.to_le_bytes());
            out.push(symbol.n_type);
            out.push(symbol.n_sect);
            out.extend_from_slice(&symbol.n_desc.to_le_bytes());
            out.extend_from_slice(&symbol.n_value.to_le_bytes());
        }
        while strings.len() % 8 != 0 {
            strings.push(0);
        }
        let stroff = out.len() as u32;
        out.extend_from_slice(&strings);
        let symtab = self
            .commands
            .symtab
            .ok_or_else(|| Error::new("no LC_SYMTAB to point at the symbol table"))?
            as usize;
        put_u32(out, symtab + 8, symoff);
        put_u32(out, symtab + 12, order.len() as u32);
        put_u32(out, symtab + 16, stroff);
        put_u32(out, symtab + 20, strings.len() as u32);
        // The relocation entries name symbols by their new index.
        self.renumber_relocations(out, &new_index)?;
        if let Some(dysymtab) = self.commands.dysymtab {
            let count = |run: Run| self.symbols.iter().filter(|s| s.run == run).count() as u32;
            let (locals, defined, undefined) = (
                count(Run::Local),
                count(Run::Defined),
                count(Run::Undefined),
            );
            let at = dysymtab as usize;
            put_u32(out, at + 8, 0);
            put_u32(out, at + 12, locals);
            put_u32(out, at + 16, locals);
            put_u32(out, at + 20, defined);
            put_u32(out, at + 24, locals + defined);
            put_u32(out, at + 28, undefined);
        }
        Ok(())
    }

    /// Rewrites each external relocation's symbol number from an output
    /// position to the symbol's index in the written table.
    fn renumber_relocations(&self, out: &mut [u8], new_index: &[u32]) -> Result<()> {
        for section in &self.layout.sections {
            let reloff = get_u32(out, section.header_offset + 56) as usize;
            let nreloc = get_u32(out, section.header_offset + 60) as usize;
            for entry in 0..nreloc {
                let at = reloff + entry * 8 + 4;
                let word1 = get_u32(out, at as u64);
                let is_addend = icf_arch::of(self.object.arch).macho_prefix((word1 >> 28) as u8)
                    == Some(icf_arch::MachOPrefix::Addend);
                if word1 & (1 << 27) == 0 || is_addend {
                    continue;
                }
                let position = (word1 & 0x00ff_ffff) as usize;
                let index = *new_index
                    .get(position)
                    .ok_or_else(|| Error::new("a relocation names a symbol the writer lost"))?;
                put_u32(out, at, (word1 & 0xff00_0000) | index);
            }
        }
        Ok(())
    }
}

impl crate::macho_layout::MachOSection {
    /// Whether the section has bytes in the file (not zero-fill).
    fn section_type_is_filled(&self) -> bool {
        !matches!(self.flags & macho::SECTION_TYPE, 0x1 | 0xc | 0x12)
    }
}

/// The model symbol an ADDEND or SUBTRACTOR entry names (`None` keeps the
/// entry's own number).
fn reloc_symbol_for(_word1: u32) -> Option<SymbolIndex> {
    None
}

/// The Mach-O entry of a thunk's jump: model type `r_type` at atom
/// offset `offset` to output symbol `symbol`.
fn thunk_relocation(
    architecture: &dyn icf_arch::Architecture,
    offset: u64,
    r_type: u32,
    addend: i64,
    symbol: usize,
) -> Result<Vec<[u8; 8]>> {
    let macho_type = architecture.macho_branch(r_type, addend).ok_or_else(|| {
        Error::new(format!(
            "a thunk relocation of type {r_type} with addend {addend}, which the Mach-O writer does not write"
        ))
    })?;
    // PC-relative, 4 bytes, external.
    let word1 = (symbol as u32 & 0x00ff_ffff)
        | (1 << 24)
        | (2 << 25)
        | (1 << 27)
        | (u32::from(macho_type) << 28);
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&(offset as u32).to_le_bytes());
    bytes[4..].copy_from_slice(&word1.to_le_bytes());
    Ok(vec![bytes])
}

fn run_of(n_type: u8) -> Run {
    if n_type & 0xe0 != 0 || n_type & N_EXT == 0 {
        Run::Local
    } else if n_type & 0x0e == 0 {
        Run::Undefined
    } else {
        Run::Defined
    }
}

fn read_commands(data: &[u8]) -> Result<Commands> {
    let header = macho::MachHeader64::<LE>::parse(data, 0)
        .map_err(|e| Error::new(format!("bad Mach-O header: {e}")))?;
    let mut commands = header
        .load_commands(LE, data, 0)
        .map_err(|e| Error::new(format!("bad load commands: {e}")))?;
    let mut result = Commands::default();
    let mut offset = 32u64;
    while let Some(command) = commands
        .next()
        .map_err(|e| Error::new(format!("bad load command: {e}")).at_offset(offset))?
    {
        match command.cmd() {
            macho::LC_SYMTAB => result.symtab = Some(offset),
            macho::LC_DYSYMTAB => {
                result.dysymtab = Some(offset);
                // Tables objects never have: the writer would lose them.
                for field in [32u64, 40, 48, 56, 64, 72] {
                    if get_u32(data, offset + field + 4) != 0 {
                        return Err(Error::new(
                            "LC_DYSYMTAB with a table of contents, module, reference, indirect or external-relocation table: not a plain object",
                        )
                        .at_offset(offset));
                    }
                }
            }
            macho::LC_DATA_IN_CODE => result.data_in_code = Some(offset),
            macho::LC_LINKER_OPTIMIZATION_HINT => {
                result.hints = Some((
                    offset,
                    get_u32(data, offset + 8),
                    get_u32(data, offset + 12),
                ));
            }
            macho::LC_SEGMENT_64
            | macho::LC_BUILD_VERSION
            | macho::LC_VERSION_MIN_MACOSX
            | macho::LC_VERSION_MIN_IPHONEOS
            | macho::LC_VERSION_MIN_TVOS
            | macho::LC_VERSION_MIN_WATCHOS
            | macho::LC_LINKER_OPTION => {}
            other => {
                return Err(Error::new(format!(
                    "load command {other:#x}, which the Mach-O writer does not carry over"
                ))
                .at_offset(offset));
            }
        }
        offset += u64::from(command.cmdsize());
    }
    Ok(result)
}

fn get_u32(data: &[u8], at: u64) -> u32 {
    data.get(at as usize..at as usize + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn put_u32(data: &mut [u8], at: usize, value: u32) {
    if let Some(field) = data.get_mut(at..at + 4) {
        field.copy_from_slice(&value.to_le_bytes());
    }
}

fn pad8(out: &mut Vec<u8>) {
    while out.len() % 8 != 0 {
        out.push(0);
    }
}
