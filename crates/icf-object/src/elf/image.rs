//! A linked ELF image (an executable, position-independent or not, or a
//! shared library; x86-64 or AArch64) read into the model of a relocatable
//! object, so that the analysis that folds objects reports on a binary
//! unchanged (`icf report BINARY`).
//!
//! An object says with relocations what each field of its code and data
//! refers to; a linked image has filled those fields in and (unless linked
//! with `--emit-relocs`) kept no relocations. This reader puts them back:
//!
//! - **Headers** are read and checked by `linked.rs`, as `icf shrink`
//!   reads them; the symbol tables as a relocatable object's.
//! - **Sections** are the image's own, each symbol's value made an offset
//!   in its section again. Every allocated section gets a section symbol,
//!   which the relocations below name: a place in the image is a section
//!   plus an offset, as in an object. Linked sections are no longer merged
//!   by content (their `SHF_MERGE` flag is dropped): addresses are final,
//!   so a constant is its address.
//! - **Functions** are the function symbols of `.symtab`; without one
//!   (a stripped image), those of `.dynsym`, one unnamed function per
//!   `.eh_frame` FDE that no symbol starts, and one per target of a direct
//!   call from code that neither covers (where the architecture can tell
//!   code from data: x86-64), found as a disassembler finds them.
//! - **Code**: each function piece is decoded
//!   ([`icf_arch::Architecture::linked_references`]) and every field that
//!   names an address outside the piece becomes the relocation an
//!   assembler writes there (a call, a RIP-relative operand, an `adrp`
//!   with its completion). A branch inside the piece stays unrelocated,
//!   as in an object: it is one of the function's blocks. An immediate or
//!   displacement of a non-PIE executable stays compared by value (a
//!   number may equal an address by chance); when it equals a named
//!   place, that place counts as taken ([`Image::taken_addresses`]), as
//!   does what code no symbol covers refers to.
//! - **Data**: which pointers data holds comes from the relocations
//!   `--emit-relocs` kept ([`PointerSource::KeptRelocations`]); else, in
//!   a PIE or shared library, from the dynamic relocations
//!   ([`PointerSource::DynamicRelocations`]: `R_*_RELATIVE` names a place,
//!   `R_*_64`/`R_*_GLOB_DAT` a symbol; RELR too); else (a non-PIE
//!   executable) from every aligned word of data whose value is the start
//!   of a function or named data ([`PointerSource::ScannedWords`]). The
//!   choice is per section: with `-q`, what the linker made (the GOT) has
//!   no kept relocations and falls back to the others. The scan misses
//!   unaligned pointers and literal pools in code.
//! - **Unwind**: each FDE's function and LSDA fields get relocations, so
//!   `.eh_frame` links functions to their unwind entries and exception
//!   tables as in an object; so do the PC-relative entries of each LSDA's
//!   type table ([`crate::lsda`]), which name the types a function catches
//!   by their distance from the entry.
//! - **Jump tables** are found from the dispatch that reads them
//!   ([`icf_arch::TableShape`]); each becomes a piece of read-only data of
//!   its own (an unnamed symbol over it), and an entry that holds a
//!   distance from the table or an address gets the relocation an
//!   assembler writes for it, so a table compares by what it jumps to, as
//!   in an object. The entries are exactly those the dispatch's bound
//!   allows; without one the piece runs to the next symbol or table and
//!   what is past the entries that lead to code compares as bytes.
//! - **Ends of arrays**: where a relocation names the exact end of a named
//!   piece of data, it may mean one past it as well as what follows, so
//!   the two stay one piece ([`Image::joined`]).
//! - **Padding**: bytes of code no symbol covers are no candidate, nor is
//!   data no symbol starts.
//!
//! Main assumption: a function's code is decoded linearly from its first
//! byte. A table whose dispatch is not recognized stays inside whatever
//! piece of read-only data holds it, and a function using it compares
//! unequal to its copies (a fold the report misses, never one it invents).

use crate::elf::linked;
use crate::elf::read::{check_ident, read_sections};
use crate::error::{Error, Result};
use crate::image_info::{Image, ImageKind, PointerSource};
use crate::lsda;
use crate::model::Visibility;
use crate::model::{Binding, Reloc, SectionIndex, Symbol, SymbolIndex, SymbolKind, SymbolPlace};
use crate::object::{Format, Object};
use icf_arch::{Architecture, DynamicReloc, LinkedReference, LinkedScan, LinkedUse, TableShape};
use object::LittleEndian as LE;
use object::elf;
use object::read::elf::{Dyn, FileHeader, Sym};
use rayon::prelude::*;
use rustc_hash::FxHashSet as HashSet;

/// Pieces of code decoded together in parallel, what they found kept
/// until they are read.
const DECODE_BATCH: usize = 4096;

impl<'data> Object<'data> {
    /// Parses `data`, a linked ELF image, into the model with the
    /// relocations its code and data would have had in an object. Errors
    /// carry the section and offset; the caller adds the file name.
    pub fn parse_image(data: &'data [u8]) -> Result<Object<'data>> {
        Self::parse_image_with(data, false)
    }

    /// [`Object::parse_image`], keeping what decoding found in each piece
    /// of code ([`Image::decoded_code`]).
    pub fn parse_image_keeping_code(data: &'data [u8]) -> Result<Object<'data>> {
        Self::parse_image_with(data, true)
    }

    fn parse_image_with(data: &'data [u8], keep_code: bool) -> Result<Object<'data>> {
        let arch = check_ident(data)?;
        let header = elf::FileHeader64::<LE>::parse(data)
            .map_err(|e| Error::new(e.to_string()).at_offset(0))?;
        let e_type = header.e_type(LE);
        if e_type != elf::ET_EXEC && e_type != elf::ET_DYN {
            return Err(Error::new(format!(
                "not a linked executable or shared library (e_type {}): pass objects and archives to `icf report` without the binary",
                e_type.0
            )));
        }
        let table = header
            .sections(LE, data)
            .map_err(|e| Error::new(format!("bad section header table: {e}")).at_offset(0x28))?;
        if table.is_empty() {
            return Err(Error::new(
                "the image has no section headers: icf finds code and data by its sections",
            ));
        }
        let mut sections = read_sections(data, header, &table)?;
        // The headers as the file holds them, checked as `icf shrink`
        // checks them (each allocated section within the address space,
        // each segment too): what the reader below walks.
        let headers = linked::Elf::parse(data)?;
        for section in sections.iter_mut().filter(|s| s.is_alloc()) {
            section.flags &= !(elf::SHF_MERGE.0 | elf::SHF_STRINGS.0 | elf::SHF_GROUP.0);
        }
        let addresses = headers.sections.iter().map(|s| s.addr).collect();
        let mut object = Object::new(Format::Elf, arch, data, sections);
        let stripped = !object
            .sections
            .iter()
            .any(|s| s.sh_type == elf::SHT_SYMTAB.0);
        let symbol_table = if stripped {
            elf::SHT_DYNSYM
        } else {
            elf::SHT_SYMTAB
        };
        object.read_symbols(&table, symbol_table, true)?;
        if object.symbols.is_empty() {
            // Entry 0 is the null symbol, as in a symbol table.
            object.symbols.push(Symbol {
                place: SymbolPlace::Undefined,
                ..local_symbol(SymbolKind::NoType, SectionIndex(0), 0, 0)
            });
        }
        let mut reader = Reader {
            arch: icf_arch::of(arch),
            kind: image_kind(&headers),
            object,
            headers,
            addresses,
            section_symbols: Vec::new(),
            places: Vec::new(),
            fdes: Vec::new(),
            function_starts: HashSet::default(),
            named_starts: HashSet::default(),
            taken: Vec::new(),
            decoded_code: keep_code.then(Vec::new),
            code_shapes: Vec::new(),
        };
        reader.places = reader.occupied_places();
        reader.fdes = reader.read_fdes()?;
        reader.place_symbols();
        reader.add_section_symbols();
        let mut unnamed_functions = reader.add_unwound_functions();
        if stripped {
            unnamed_functions += reader.add_called_functions();
        }
        reader.named_starts = reader.named_starts();
        let tables = reader.relocate_code();
        reader.take_addresses_kept_in_code()?;
        let pointers = reader.relocate_data(&table)?;
        reader.relocate_jump_tables(&tables);
        let table_bases: HashSet<u64> = tables.iter().map(|t| t.base).collect();
        reader.relocate_eh_frame()?;
        let exports = dynamic_exports(data, &table)?;
        let Reader {
            kind,
            mut object,
            addresses,
            mut taken,
            decoded_code,
            mut code_shapes,
            ..
        } = reader;
        code_shapes.sort_unstable_by_key(|piece| (piece.section, piece.start, piece.end));
        taken.sort_unstable();
        taken.dedup();
        for section in &mut object.sections {
            section.relocs.sort_by_key(|r| r.offset);
            section.relocs.dedup_by_key(|r| r.offset);
        }
        let joined = joined_ends(&object, &addresses, &table_bases);
        object.read_eh_frame()?;
        object.feature_1_and = object.read_feature_1_and();
        object.image = Some(Box::new(Image {
            kind,
            exports,
            pointers,
            stripped,
            unnamed_functions,
            addresses,
            taken_addresses: taken,
            joined,
            decoded_code: decoded_code.unwrap_or_default(),
            code_shapes,
        }));
        Ok(object)
    }
}

/// Code of a section that no function symbol covers.
struct CodeRange {
    section: SectionIndex,
    start: u64,
    end: u64,
}

/// The image being read: the model so far, and where its sections sit.
struct Reader<'data> {
    arch: &'static dyn Architecture,
    kind: ImageKind,
    object: Object<'data>,
    /// The image's headers, read as the file holds them.
    headers: linked::Elf<'data>,
    /// Each section's address, by index.
    addresses: Vec<u64>,
    /// The section symbol of each allocated section, by [`SectionIndex`].
    section_symbols: Vec<Option<SymbolIndex>>,
    /// The allocated, non-empty sections that occupy addresses, as (start,
    /// end, index) sorted by start: `.tbss` takes none (its addresses are
    /// those of the sections after it).
    places: Vec<(u64, u64, SectionIndex)>,
    /// The entries of `.eh_frame`, read once.
    fdes: Vec<LinkedFde>,
    /// The address of every function's first byte.
    function_starts: HashSet<u64>,
    /// The address of every named place's first byte (functions, named
    /// data), filled once symbols are placed.
    named_starts: HashSet<u64>,
    /// See [`Image::taken_addresses`].
    taken: Vec<u64>,
    /// See [`Image::decoded_code`]; `None` when not kept.
    decoded_code: Option<Vec<crate::DecodedPiece>>,
    /// See [`Image::code_shapes`].
    code_shapes: Vec<crate::CodeShape>,
}

impl<'data> Reader<'data> {
    /// Symbol values are addresses in an image and offsets in an object.
    /// A symbol outside every allocated section (`_end` aside, which ends
    /// one) or thread-local (its value is an offset in the TLS block) is
    /// absolute.
    fn place_symbols(&mut self) {
        for symbol in self.object.symbols.iter_mut().skip(1) {
            let SymbolPlace::Section(index) = symbol.place else {
                continue;
            };
            let section = &self.object.sections[index.index()];
            let base = self.addresses[index.index()];
            let offset = symbol.value.wrapping_sub(base);
            if symbol.kind == SymbolKind::Tls
                || !section.is_alloc()
                || symbol.value < base
                || offset > section.size
            {
                symbol.place = SymbolPlace::Absolute;
                continue;
            }
            symbol.value = offset;
            if symbol.kind == SymbolKind::Func {
                self.function_starts.insert(base + offset);
            }
        }
    }

    fn add_section_symbols(&mut self) {
        self.section_symbols = vec![None; self.object.sections.len()];
        for (index, section) in self.object.sections.iter().enumerate().skip(1) {
            if !section.is_alloc() {
                continue;
            }
            self.section_symbols[index] = Some(SymbolIndex(self.object.symbols.len() as u32));
            self.object.symbols.push(local_symbol(
                SymbolKind::Section,
                SectionIndex(index as u32),
                0,
                0,
            ));
        }
    }

    fn occupied_places(&self) -> Vec<(u64, u64, SectionIndex)> {
        let mut places: Vec<(u64, u64, SectionIndex)> = self
            .object
            .sections
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, s)| {
                s.is_alloc()
                    && s.size > 0
                    && !(s.is_thread_local() && s.sh_type == elf::SHT_NOBITS.0)
            })
            .map(|(index, s)| {
                let base = self.addresses[index];
                (
                    base,
                    base.saturating_add(s.size),
                    SectionIndex(index as u32),
                )
            })
            .collect();
        places.sort_unstable();
        places
    }

    /// The section holding `address`, or else one that ends there, with
    /// the offset in it.
    fn section_at(&self, address: u64) -> Option<(SectionIndex, u64)> {
        let after = self
            .places
            .partition_point(|&(start, _, _)| start <= address);
        let (start, end, index) = *self.places.get(after.checked_sub(1)?)?;
        (address <= end).then_some((index, address - start))
    }

    /// A relocation of type `r_type` at `offset` naming `address + bias`,
    /// against the section holding `address`.
    fn reloc_to(&self, offset: u64, r_type: u32, address: u64, bias: i64) -> Option<Reloc> {
        let (section, place) = self.section_at(address)?;
        let symbol = self.section_symbols[section.index()]?;
        let info = self.arch.elf_reloc(r_type)?;
        Some(Reloc {
            offset,
            r_type,
            symbol,
            addend: (place as i64).wrapping_add(bias),
            size: info.size,
            pc_relative: info.pc_relative,
        })
    }

    /// The functions `.eh_frame` describes that no function symbol starts
    /// (all of them without `.symtab`; with one, code a local symbol was
    /// dropped from, `--discard-all`) get an unnamed local function
    /// symbol each.
    fn add_unwound_functions(&mut self) -> usize {
        let mut added = 0;
        for fde in &self.fdes {
            if self.function_starts.contains(&fde.function) {
                continue;
            }
            let Some((section, offset)) = self.section_at(fde.function) else {
                continue;
            };
            if !self.object.sections[section.index()].is_executable() {
                continue;
            }
            let mut symbol = local_symbol(SymbolKind::Func, section, offset, fde.function_size);
            symbol.binding = Binding::Local;
            self.object.symbols.push(symbol);
            self.function_starts.insert(fde.function);
            added += 1;
        }
        added
    }

    /// In a stripped image, the code that no symbol and no FDE covers (a
    /// program built without unwind tables: Debian's mold, 95% of its
    /// `.text`) is decoded linearly, and each direct call from there into
    /// such code starts an unnamed local function, which runs to the next
    /// start, as a disassembler finds functions. A function only ever
    /// reached by a jump or a pointer stays part of the one before it: a
    /// piece holding both compares equal only to a piece holding the same
    /// two.
    fn add_called_functions(&mut self) -> usize {
        let uncovered = self.uncovered_code();
        let reader = &*self;
        let mut targets: Vec<u64> = uncovered
            .par_iter()
            .flat_map_iter(|piece| {
                let section = &reader.object.sections[piece.section.index()];
                let code = section
                    .data
                    .get(piece.start as usize..piece.end as usize)
                    .unwrap_or_default();
                let address = reader.addresses[piece.section.index()] + piece.start;
                reader.arch.linked_call_targets(code, address)
            })
            .collect();
        targets.sort_unstable();
        targets.dedup();
        // Each new start in the piece of uncovered code that holds it,
        // in order: a function runs to the next start or the piece's end.
        let mut starts: Vec<(usize, SectionIndex, u64, u64)> = Vec::new();
        for target in targets {
            let Some((section, offset)) = self.section_at(target) else {
                continue;
            };
            let at =
                uncovered.partition_point(|piece| (piece.section, piece.end) <= (section, offset));
            let inside = uncovered
                .get(at)
                .is_some_and(|piece| piece.section == section && piece.start <= offset);
            if inside && !self.function_starts.contains(&target) {
                starts.push((at, section, offset, target));
            }
        }
        let reader = &*self;
        let symbols: Vec<Symbol> = starts
            .par_iter()
            .enumerate()
            .map(|(index, &(at, section, offset, address))| {
                let end = match starts.get(index + 1) {
                    Some(&(next_at, _, next, _)) if next_at == at => next,
                    _ => uncovered[at].end,
                };
                let code = reader.object.sections[section.index()]
                    .data
                    .get(offset as usize..end as usize)
                    .unwrap_or_default();
                // Without the padding after it: a copy elsewhere has other
                // padding, and it is not the function's to save.
                let size = reader.arch.linked_code_before_padding(code, address);
                let mut symbol = local_symbol(SymbolKind::Func, section, offset, size as u64);
                symbol.binding = Binding::Local;
                symbol
            })
            .collect();
        let added = symbols.len();
        for (symbol, &(.., address)) in symbols.into_iter().zip(&starts) {
            self.function_starts.insert(address);
            self.object.symbols.push(symbol);
        }
        added
    }

    /// The code no function symbol's extent covers, as (section, start,
    /// end) pieces sorted by section and start.
    fn uncovered_code(&self) -> Vec<CodeRange> {
        let mut covered: Vec<(SectionIndex, u64, u64)> = self
            .object
            .symbols
            .iter()
            .filter(|s| matches!(s.kind, SymbolKind::Func | SymbolKind::Ifunc) && s.size > 0)
            .filter_map(|s| Some((s.section()?, s.value, s.value.saturating_add(s.size))))
            .collect();
        covered.sort_unstable();
        let mut uncovered = Vec::new();
        for (index, section) in self.object.sections.iter().enumerate() {
            if !section.is_executable() || section.size == 0 {
                continue;
            }
            let section_index = SectionIndex(index as u32);
            let first = covered.partition_point(|&(s, _, _)| s < section_index);
            let mut position = 0;
            for &(_, start, end) in covered[first..]
                .iter()
                .take_while(|&&(s, _, _)| s == section_index)
            {
                if start > position {
                    uncovered.push(CodeRange {
                        section: section_index,
                        start: position,
                        end: start.min(section.size),
                    });
                }
                position = position.max(end);
            }
            if position < section.size {
                uncovered.push(CodeRange {
                    section: section_index,
                    start: position,
                    end: section.size,
                });
            }
        }
        uncovered
    }

    fn named_starts(&self) -> HashSet<u64> {
        self.object
            .symbols
            .iter()
            .filter(|s| !s.name.is_empty() || s.kind == SymbolKind::Func)
            .filter(|s| s.kind != SymbolKind::Section && s.kind != SymbolKind::File)
            .filter_map(|s| Some(self.addresses[s.section()?.index()].wrapping_add(s.value)))
            .collect()
    }

    /// Relocations for every field of code that names a place outside its
    /// function piece; gives the jump tables the code indexes.
    fn relocate_code(&mut self) -> Vec<JumpTable> {
        let pieces = self.object.functions();
        let keep_code = self.decoded_code.is_some();
        let mut found = CodeFound {
            keep_code,
            ..CodeFound::default()
        };
        // Each piece is decoded and read on its own, a batch of pieces in
        // parallel; what a batch gave is gathered, in order, while the
        // next one is decoded.
        let reader = &*self;
        let mut last: Option<(&[crate::FunctionExtent], Vec<PieceRead>)> = None;
        for batch in pieces.chunks(DECODE_BATCH).map(Some).chain([None]) {
            let (read, ()) = rayon::join(
                || {
                    batch.map(|batch| {
                        batch
                            .par_iter()
                            .map(|piece| reader.read_piece(piece, keep_code))
                            .collect::<Vec<_>>()
                    })
                },
                || {
                    if let Some((pieces, read)) = last.take() {
                        found.gather(pieces, read);
                    }
                },
            );
            last = batch.zip(read);
        }
        self.code_shapes.append(&mut found.code_shapes);
        self.taken.append(&mut found.taken);
        if let Some(kept) = &mut self.decoded_code {
            kept.append(&mut found.decoded);
        }
        for (section, reloc) in found.relocs {
            self.object.sections[section.index()].relocs.push(reloc);
        }
        found.tables
    }

    /// Decodes and reads one piece of code, keeping what the decode found
    /// when `keep_code`.
    fn read_piece(&self, piece: &crate::FunctionExtent, keep_code: bool) -> PieceRead {
        let section = &self.object.sections[piece.section.index()];
        let Some(code) = section.data.get(piece.start as usize..piece.end as usize) else {
            return PieceRead::default();
        };
        let start = self.addresses[piece.section.index()].wrapping_add(piece.start);
        let mut found = Vec::new();
        let mut scan = self.arch.linked_references(code, start, &mut found);
        let fields = self.piece_fields(piece, &found);
        if let Some(marks) = &mut scan.marks {
            marks.add(&fields.relocated);
        }
        PieceRead {
            references: keep_code.then_some(found),
            scan,
            fields,
        }
    }

    /// What the references `found` in `piece` give: its relocations, the
    /// addresses it takes and the jump tables it indexes.
    fn piece_fields(
        &self,
        piece: &crate::functions::FunctionExtent,
        found: &[LinkedReference],
    ) -> PieceFields {
        let mut fields = PieceFields::default();
        let base = self.addresses[piece.section.index()];
        let (start, end) = (base.wrapping_add(piece.start), base.wrapping_add(piece.end));
        let covered = !piece.symbols.is_empty();
        for reference in found {
            if (start..end).contains(&reference.target) {
                continue;
            }
            let takes_address = reference.use_ != LinkedUse::Branch
                && self.named_starts.contains(&reference.target);
            if takes_address && (!covered || reference.use_ == LinkedUse::Absolute) {
                fields.taken.push(reference.target);
            }
            if !self.keeps(reference) {
                continue;
            }
            if let Some(reloc) = self.reloc_to(
                piece.start + reference.offset,
                reference.r_type,
                reference.target,
                reference.bias,
            ) {
                fields.relocs.push(reloc);
                if fields.relocated.last() != Some(&reference.instruction) {
                    fields.relocated.push(reference.instruction);
                }
            }
            if let Some(shape) = reference.table {
                fields.tables.push(JumpTable {
                    base: reference.target,
                    shape,
                    function: start..end,
                });
            }
        }
        fields
    }

    /// The addresses kept relocations (`-q`) write whole into code: a
    /// literal pool's words (AArch64 `-mcmodel=large`: `ldr x0, =f`), the
    /// `movz`/`movk` pieces of an address (clang's `-mcmodel=large`), an
    /// absolute immediate. Each takes the address of what it names (see
    /// [`Image::taken_addresses`]): decoding alone reads a pool as
    /// instructions, or not at all where no function symbol covers it (a
    /// pool after a function's last instruction, outside its size).
    fn take_addresses_kept_in_code(&mut self) -> Result<()> {
        for index in self.kept_relocation_sections() {
            let target = self.headers.sections[index].info as usize;
            if target == 0
                || !self
                    .object
                    .sections
                    .get(target)
                    .is_some_and(|s| s.is_alloc() && s.is_executable())
            {
                continue;
            }
            for rela in self.rela_entries(index)? {
                if !self.arch.writes_absolute_address(rela.r_type) {
                    continue;
                }
                let Some(symbol) = self.object.symbols.get(rela.sym as usize) else {
                    continue;
                };
                let base = match symbol.place {
                    SymbolPlace::Section(section) => self.addresses[section.index()],
                    SymbolPlace::Absolute => 0,
                    _ => continue,
                };
                let address = base
                    .wrapping_add(symbol.value)
                    .wrapping_add(rela.addend as u64);
                if self.named_starts.contains(&address) {
                    self.taken.push(address);
                }
            }
        }
        Ok(())
    }

    /// Each jump table becomes a piece of read-only data of its own (an
    /// unnamed symbol over its entries), and each entry gets the
    /// relocation an assembler writes for it: `.long case - table` (a
    /// PC-relative field whose addend carries the entry's distance from
    /// the table) or `.quad case`. The entries are those from the table's
    /// start that land in the function, up to the next symbol or table in
    /// the section.
    fn relocate_jump_tables(&mut self, tables: &[JumpTable]) {
        let mut bounds: Vec<u64> = tables.iter().map(|t| t.base).collect();
        bounds.extend(
            self.object
                .symbols
                .iter()
                .filter(|s| s.kind != SymbolKind::Section)
                .filter_map(|s| Some(self.addresses[s.section()?.index()].wrapping_add(s.value))),
        );
        bounds.sort_unstable();
        bounds.dedup();
        let mut symbols = Vec::new();
        let mut relocs = Vec::new();
        let mut seen = HashSet::default();
        for table in tables {
            if !seen.insert(table.base) {
                continue;
            }
            let Some((section, at)) = self.section_at(table.base) else {
                continue;
            };
            let data = &self.object.sections[section.index()];
            if data.is_executable() || data.sh_type == elf::SHT_NOBITS.0 {
                continue;
            }
            let next_bound = bounds
                .get(bounds.partition_point(|&b| b <= table.base))
                .map_or(u64::MAX, |&b| b - table.base);
            // The table's piece runs to the next symbol or table: entries
            // past the ones recognized are compared as bytes.
            let limit = (data.size - at).min(next_bound);
            let relative = matches!(table.shape, TableShape::Relative32 { .. });
            let (size, field_type, bounded) = match table.shape {
                TableShape::Relative32 { entries } => (4, self.arch.pc_relative_data(4), entries),
                TableShape::Absolute64 { entries } => (8, self.arch.absolute_data(8), entries),
                TableShape::InFunction {
                    entry_size,
                    entries,
                } => {
                    // Distances inside the function: compared as bytes.
                    let size = entries.map_or(limit, |entries| {
                        (u64::from(entry_size) * u64::from(entries)).min(limit)
                    });
                    if size > 0 {
                        symbols.push(local_symbol(SymbolKind::Object, section, at, size));
                    }
                    continue;
                }
            };
            let Some(r_type) = field_type else {
                continue;
            };
            let first = data
                .data
                .get(at as usize..(at + size) as usize)
                .map(|field| {
                    if relative {
                        table.base.wrapping_add(i64::from(i32::from_le_bytes([
                            field[0], field[1], field[2], field[3],
                        ])) as u64)
                    } else {
                        u64::from_le_bytes(field.try_into().unwrap_or([0; 8]))
                    }
                });
            if !first.is_some_and(|target| table.function.contains(&target)) {
                continue;
            }
            // With the bound the dispatch checks, exactly that many entries;
            // without, as many as lead to code, the rest up to the next
            // symbol or table compared as bytes.
            let wanted = bounded.map(u64::from).filter(|&n| n * size <= limit);
            let mut entries = 0;
            let mut table_relocs = Vec::new();
            while (entries + 1) * size <= wanted.map_or(limit, |n| n * size) {
                let place = at + entries * size;
                let Some(field) = data.data.get(place as usize..(place + size) as usize) else {
                    break;
                };
                let (target, bias) = if relative {
                    let distance = i32::from_le_bytes([field[0], field[1], field[2], field[3]]);
                    // `.long case - table`: the addend carries the entry's distance from the table.
                    (
                        table.base.wrapping_add(i64::from(distance) as u64),
                        (entries * size) as i64,
                    )
                } else {
                    (u64::from_le_bytes(field.try_into().unwrap_or([0; 8])), 0)
                };
                // Entries lead to code: the function's own, or its cold part.
                let to_code = self
                    .section_at(target)
                    .is_some_and(|(code, _)| self.object.sections[code.index()].is_executable());
                let Some(reloc) = to_code
                    .then(|| self.reloc_to(place, r_type, target, bias))
                    .flatten()
                else {
                    break;
                };
                table_relocs.push((section, reloc));
                entries += 1;
            }
            let extent = match wanted {
                Some(n) if n == entries => n * size,
                _ => limit,
            };
            relocs.extend(table_relocs);
            symbols.push(local_symbol(SymbolKind::Object, section, at, extent));
        }
        self.object.symbols.extend(symbols);
        for (section, reloc) in relocs {
            self.object.sections[section.index()].relocs.push(reloc);
        }
    }

    /// Whether a reference found in code becomes a relocation. A number
    /// in an immediate or displacement may equal an address by chance, so
    /// it stays compared by value (its address, when it is one, counts in
    /// [`Image::taken_addresses`]), unless a jump table's dispatch shows
    /// it is the table's address (a non-PIE executable).
    fn keeps(&self, reference: &LinkedReference) -> bool {
        reference.use_ != LinkedUse::Absolute
            || (self.kind == ImageKind::Executable
                && reference.table.is_some()
                && self.section_at(reference.target).is_some())
    }

    /// The pointers in data, from the best source the image has: for each
    /// data section, the relocations `-q` kept for it; for a section
    /// without any (what the linker made: the GOT), the dynamic
    /// relocations of a PIE or shared library, else a scan.
    fn relocate_data(
        &mut self,
        table: &object::read::elf::SectionTable<'data, elf::FileHeader64<LE>>,
    ) -> Result<PointerSource> {
        let kept = self.relocate_data_from_kept()?;
        let dynamic = self.kind != ImageKind::Executable || self.has_relative_relocations()?;
        if dynamic {
            self.relocate_data_from_dynamic(table, &kept)?;
        } else {
            self.relocate_data_by_scanning(&kept);
        }
        Ok(if kept.iter().any(|&k| k) {
            PointerSource::KeptRelocations
        } else if dynamic {
            PointerSource::DynamicRelocations
        } else {
            PointerSource::ScannedWords
        })
    }

    /// Data sections whose pointers the reader records: allocated, not
    /// code, not `.eh_frame` (see [`Reader::relocate_eh_frame`]).
    fn is_pointer_data(&self, index: usize) -> bool {
        let section = &self.object.sections[index];
        section.is_alloc()
            && !section.is_executable()
            && section.name != b".eh_frame"
            && section.sh_type != elf::SHT_NOBITS.0
    }

    /// The relocations `--emit-relocs` kept for allocated data: which
    /// sections had some, by index.
    fn relocate_data_from_kept(&mut self) -> Result<Vec<bool>> {
        let mut kept = vec![false; self.object.sections.len()];
        let symbol_count = self.object.symbols.len();
        for index in self.kept_relocation_sections() {
            let target = self.headers.sections[index].info as usize;
            if target == 0 || target >= self.object.sections.len() || !self.is_pointer_data(target)
            {
                continue;
            }
            kept[target] = true;
            let base = self.addresses[target];
            let relocs = self.rela_entries(index)?;
            for rela in relocs {
                let Some(info) = self.arch.elf_reloc(rela.r_type) else {
                    continue;
                };
                let symbol = rela.sym as usize;
                if symbol >= symbol_count || info.size == 0 {
                    continue;
                }
                let reloc = Reloc {
                    offset: rela.offset.wrapping_sub(base),
                    r_type: rela.r_type,
                    symbol: SymbolIndex(symbol as u32),
                    addend: rela.addend,
                    size: info.size,
                    pc_relative: info.pc_relative,
                };
                if reloc.offset < self.object.sections[target].size {
                    self.object.sections[target].relocs.push(reloc);
                }
            }
        }
        Ok(kept)
    }

    fn has_relative_relocations(&self) -> Result<bool> {
        for (index, section) in self.headers.sections.iter().enumerate() {
            if section.sh_type == elf::SHT_RELR.0 && section.size > 0 {
                return Ok(true);
            }
            if section.sh_type == elf::SHT_RELA.0
                && section.is_alloc()
                && self
                    .rela_entries(index)?
                    .iter()
                    .any(|r| self.arch.dynamic_reloc(r.r_type) == Some(DynamicReloc::Relative))
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Pointers from `.rela.dyn`: a relative relocation names a place in
    /// the image, a symbol relocation a defined symbol's place or, for an
    /// import, the symbol by name.
    fn relocate_data_from_dynamic(
        &mut self,
        table: &object::read::elf::SectionTable<'data, elf::FileHeader64<LE>>,
        kept: &[bool],
    ) -> Result<()> {
        let Some(absolute) = self.arch.absolute_data(8) else {
            return Ok(());
        };
        let mut imports: rustc_hash::FxHashMap<u32, SymbolIndex> = Default::default();
        for index in 0..self.headers.sections.len() {
            let section = &self.headers.sections[index];
            if section.sh_type == elf::SHT_RELR.0 {
                self.relocate_relr(index, kept, absolute)?;
                continue;
            }
            if section.sh_type != elf::SHT_RELA.0 || !section.is_alloc() {
                continue;
            }
            let dynsym = table
                .symbols(LE, self.object.data, elf::SHT_DYNSYM)
                .map_err(|e| {
                    self.object.section_error(
                        SectionIndex(index as u32),
                        format!("bad dynamic symbol table for these relocations: {e}"),
                    )
                })?;
            for rela in self.rela_entries(index)? {
                let Some((section, offset)) = self.section_at(rela.offset) else {
                    continue;
                };
                if !self.is_pointer_data(section.index()) || kept[section.index()] {
                    continue;
                }
                let reloc = match self.arch.dynamic_reloc(rela.r_type) {
                    Some(DynamicReloc::Relative | DynamicReloc::IRelative) => {
                        self.reloc_to(offset, absolute, rela.addend as u64, 0)
                    }
                    Some(DynamicReloc::Symbol) => {
                        let Ok(sym) = dynsym.symbol(object::SymbolIndex(rela.sym as usize)) else {
                            continue;
                        };
                        if sym.st_shndx(LE) != elf::SHN_UNDEF {
                            let address = sym.st_value(LE).wrapping_add(rela.addend as u64);
                            self.reloc_to(offset, absolute, address, 0)
                        } else {
                            let Ok(name) = dynsym.symbol_name(LE, sym) else {
                                continue;
                            };
                            let symbol = *imports.entry(rela.sym).or_insert_with(|| {
                                self.object.symbols.push(Symbol {
                                    name,
                                    binding: Binding::Global,
                                    kind: SymbolKind::NoType,
                                    visibility: Visibility::Default,
                                    other: 0,
                                    place: SymbolPlace::Undefined,
                                    value: 0,
                                    size: 0,
                                });
                                SymbolIndex(self.object.symbols.len() as u32 - 1)
                            });
                            Some(Reloc {
                                offset,
                                r_type: absolute,
                                symbol,
                                addend: rela.addend,
                                size: 8,
                                pc_relative: false,
                            })
                        }
                    }
                    None => None,
                };
                if let Some(reloc) = reloc {
                    self.object.sections[section.index()].relocs.push(reloc);
                }
            }
        }
        Ok(())
    }

    /// `SHT_RELR` (`-z pack-relative-relocs`): relative relocations as a
    /// list of addresses and bitmaps, each word's addend the value in place.
    fn relocate_relr(&mut self, index: usize, kept: &[bool], absolute: u32) -> Result<()> {
        let bytes = self.headers.bytes(index);
        let entries: &[object::U64<LE>] = object::pod::slice_from_bytes(bytes, bytes.len() / 8)
            .map(|(entries, _)| entries)
            .map_err(|()| {
                self.object
                    .section_error(SectionIndex(index as u32), "bad SHT_RELR section")
            })?;
        let mut places = Vec::new();
        let mut next = 0u64;
        for entry in entries.iter().map(|e| e.get(LE)) {
            if entry & 1 == 0 {
                places.push(entry);
                next = entry.wrapping_add(8);
            } else {
                // Bit n (from 1) says the word n - 1 after `next` is relocated.
                for bit in 1..64u64 {
                    if entry >> bit & 1 != 0 {
                        places.push(next.wrapping_add((bit - 1) * 8));
                    }
                }
                next = next.wrapping_add(63 * 8);
            }
        }
        for place in places {
            let Some((section, offset)) = self.section_at(place) else {
                continue;
            };
            if !self.is_pointer_data(section.index()) || kept[section.index()] {
                continue;
            }
            let data = self.object.sections[section.index()].data;
            let Some(word) = data.get(offset as usize..offset as usize + 8) else {
                continue;
            };
            let value = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
            if let Some(reloc) = self.reloc_to(offset, absolute, value, 0) {
                self.object.sections[section.index()].relocs.push(reloc);
            }
        }
        Ok(())
    }

    /// A non-PIE executable: every aligned 8-byte word of data whose value
    /// is the first byte of a named place (a function, named data) is
    /// taken for a pointer to it.
    fn relocate_data_by_scanning(&mut self, kept: &[bool]) {
        let Some(absolute) = self.arch.absolute_data(8) else {
            return;
        };
        let mut relocs = Vec::new();
        for (index, &has_kept) in kept.iter().enumerate().skip(1) {
            if !self.is_pointer_data(index) || has_kept {
                continue;
            }
            let section = &self.object.sections[index];
            let base = self.addresses[index];
            // Words aligned in memory: the section's start may not be.
            let skip = (8 - (base % 8) as usize) % 8;
            let Some(words) = section.data.get(skip..) else {
                continue;
            };
            for (n, word) in words.chunks_exact(8).enumerate() {
                let value = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
                if !self.named_starts.contains(&value) {
                    continue;
                }
                let offset = (skip + n * 8) as u64;
                if let Some(reloc) = self.reloc_to(offset, absolute, value, 0) {
                    relocs.push((index, reloc));
                }
            }
        }
        for (index, reloc) in relocs {
            self.object.sections[index].relocs.push(reloc);
        }
    }

    /// Relocations on each FDE's function and LSDA fields, as an object's
    /// `.eh_frame` has them.
    fn relocate_eh_frame(&mut self) -> Result<()> {
        let Some(eh_frame) = self.eh_frame_index() else {
            return Ok(());
        };
        let mut relocs = Vec::new();
        let mut lsdas = HashSet::default();
        for fde in &self.fdes {
            let Some(function_type) = self.pointer_reloc(fde.function_encoding) else {
                continue;
            };
            let Some(function) = self.reloc_to(fde.function_field, function_type, fde.function, 0)
            else {
                continue;
            };
            relocs.push(function);
            if let Some((field, encoding, lsda)) = fde.lsda
                && let Some(lsda_type) = self.pointer_reloc(encoding)
                && let Some(reloc) = self.reloc_to(field, lsda_type, lsda, 0)
            {
                relocs.push(reloc);
                lsdas.insert(lsda);
            }
        }
        self.object.sections[eh_frame.index()].relocs.extend(relocs);
        for lsda in lsdas {
            self.relocate_lsda_types(lsda);
        }
        Ok(())
    }

    /// Relocations on the PC-relative entries of the type table of the
    /// LSDA at `address` (see [`crate::lsda`]): each names the place its
    /// value points to (a `type_info`, or the slot holding its address).
    /// Absolute entries need none: a position-independent image has
    /// dynamic relocations for them, and in another their values are the
    /// addresses themselves.
    fn relocate_lsda_types(&mut self, address: u64) {
        let Some((section, offset)) = self.section_at(address) else {
            return;
        };
        let data = self.object.sections[section.index()].data;
        let Some(table) = data.get(offset as usize..).and_then(lsda::type_table) else {
            return;
        };
        if table.encoding & 0x70 != gimli::DW_EH_PE_pcrel.0 {
            return;
        }
        let Some(r_type) = self.arch.pc_relative_data(table.entry_size) else {
            return;
        };
        let base = self.addresses[section.index()];
        let mut relocs = Vec::new();
        for entry in table.entries {
            let field = offset + entry;
            let Some(bytes) =
                data.get(field as usize..(field + u64::from(table.entry_size)) as usize)
            else {
                continue;
            };
            let value = match *bytes {
                [a, b, c, d] => i64::from(i32::from_le_bytes([a, b, c, d])),
                [a, b, c, d, e, f, g, h] => i64::from_le_bytes([a, b, c, d, e, f, g, h]),
                _ => continue,
            };
            // Zero is a catch-all (`catch (...)`): no type.
            if value == 0 {
                continue;
            }
            let target = base.wrapping_add(field).wrapping_add(value as u64);
            if let Some(reloc) = self.reloc_to(field, r_type, target, 0) {
                relocs.push(reloc);
            }
        }
        self.object.sections[section.index()].relocs.extend(relocs);
    }

    fn eh_frame_index(&self) -> Option<SectionIndex> {
        self.object
            .sections
            .iter()
            .position(|s| s.name == b".eh_frame" && s.is_alloc() && !s.data.is_empty())
            .map(|index| SectionIndex(index as u32))
    }

    /// The relocation type an assembler writes for an `.eh_frame` pointer
    /// of `encoding` (PC-relative or absolute, 4 or 8 bytes).
    fn pointer_reloc(&self, encoding: gimli::DwEhPe) -> Option<u32> {
        let size = pointer_size(encoding)?;
        match encoding.application() {
            gimli::DW_EH_PE_pcrel => self.arch.pc_relative_data(size),
            gimli::DW_EH_PE_absptr => self.arch.absolute_data(size),
            _ => None,
        }
    }

    /// Every FDE of `.eh_frame` with its function's address and where its
    /// pointer fields lie.
    fn read_fdes(&self) -> Result<Vec<LinkedFde>> {
        use gimli::UnwindSection;
        let Some(index) = self.eh_frame_index() else {
            return Ok(Vec::new());
        };
        let section = &self.object.sections[index.index()];
        let section_address = self.addresses[index.index()];
        let eh_frame = gimli::EhFrame::new(section.data, gimli::LittleEndian);
        let bases = gimli::BaseAddresses::default().set_eh_frame(section_address);
        let mut entries = eh_frame.entries(&bases);
        let mut fdes = Vec::new();
        let located = |e: gimli::Error, offset: u64| {
            self.object
                .section_error(index, format!("bad .eh_frame entry: {e}"))
                .at_offset(offset)
        };
        loop {
            let entry = match entries.next() {
                Ok(Some(entry)) => entry,
                Ok(None) => break,
                Err(e) => return Err(located(e, 0)),
            };
            let gimli::CieOrFde::Fde(partial) = entry else {
                continue;
            };
            let offset = partial.offset() as u64;
            let fde = partial
                .parse(|section, bases, offset| section.cie_from_offset(bases, offset))
                .map_err(|e| located(e, offset))?;
            let cie = fde.cie();
            // length, CIE pointer; 64-bit entries (a 12-byte length) are not written by linkers.
            let function_field = offset + 8;
            let function_encoding = cie.fde_address_encoding().unwrap_or(gimli::DW_EH_PE_absptr);
            let Some(field_size) = pointer_size(function_encoding) else {
                continue;
            };
            let lsda = match (fde.lsda(), cie.lsda_encoding()) {
                (Some(gimli::Pointer::Direct(address)), Some(encoding)) => {
                    // After the function and its size, the augmentation
                    // data's length (ULEB128), then the LSDA pointer.
                    let length_at = function_field + 2 * u64::from(field_size);
                    let length_size = section
                        .data
                        .get(length_at as usize..)
                        .and_then(|rest| rest.iter().position(|b| b & 0x80 == 0))
                        .map(|last| last as u64 + 1);
                    length_size.map(|size| (length_at + size, encoding, address))
                }
                _ => None,
            };
            fdes.push(LinkedFde {
                function: fde.initial_address(),
                function_size: fde.len(),
                function_field,
                function_encoding,
                lsda,
            });
        }
        Ok(fdes)
    }

    /// The relocation sections `--emit-relocs` kept: `SHT_RELA` and not
    /// allocated (the dynamic ones are).
    fn kept_relocation_sections(&self) -> Vec<usize> {
        (self.headers.sections.iter().enumerate())
            .filter(|(_, s)| s.sh_type == elf::SHT_RELA.0 && !s.is_alloc())
            .map(|(index, _)| index)
            .collect()
    }

    /// The entries of relocation section `index`, checked.
    fn rela_entries(&self, index: usize) -> Result<Vec<linked::Rela>> {
        let relas = self.headers.raw_relas(index).map_err(|_| {
            self.object
                .section_error(SectionIndex(index as u32), "bad relocation section")
        })?;
        Ok(relas.iter().map(linked::Rela::of).collect())
    }
}

/// The ends of sized pieces of data that a relocation names exactly (see
/// [`Image::joined`]), sorted. A jump table's start is no such end: its
/// dispatch shows it is the table's; nor is a jump table's end.
fn joined_ends(object: &Object<'_>, addresses: &[u64], table_bases: &HashSet<u64>) -> Vec<u64> {
    let address_of =
        |section: SectionIndex, offset: u64| addresses[section.index()].wrapping_add(offset);
    let ends: HashSet<u64> = object
        .symbols
        .iter()
        // Named data only: the unnamed pieces are the reader's jump
        // tables, which code only indexes.
        .filter(|s| s.size > 0 && s.kind != SymbolKind::Section && !s.name.is_empty())
        .filter_map(|s| {
            let section = s.section()?;
            let data = object.section(section);
            (data.is_alloc() && !data.is_executable())
                .then(|| address_of(section, s.value.wrapping_add(s.size)))
        })
        .filter(|end| !table_bases.contains(end))
        .collect();
    let mut joined: Vec<u64> = Vec::new();
    for (index, section) in object.sections.iter().enumerate() {
        let from = SectionIndex(index as u32);
        for reloc in &section.relocs {
            let Some(target_section) = object.symbol(reloc.symbol).section() else {
                continue;
            };
            let place = object
                .symbol(reloc.symbol)
                .value
                .wrapping_add(reloc.addend as u64)
                .wrapping_add(object.field_end(from, reloc) as u64);
            let target = address_of(target_section, place);
            if ends.contains(&target) {
                joined.push(target);
            }
        }
    }
    joined.sort_unstable();
    joined.dedup();
    joined
}

/// What decoding one piece of code gave (see [`Reader::read_piece`]).
#[derive(Default)]
struct PieceRead {
    /// The references found, when kept; `None` where the piece's bytes
    /// could not be read.
    references: Option<Vec<LinkedReference>>,
    scan: LinkedScan,
    fields: PieceFields,
}

/// What the pieces of code read so far gave, gathered in their order.
#[derive(Default)]
struct CodeFound {
    /// Whether `decoded` is kept.
    keep_code: bool,
    relocs: Vec<(SectionIndex, Reloc)>,
    tables: Vec<JumpTable>,
    code_shapes: Vec<crate::CodeShape>,
    taken: Vec<u64>,
    decoded: Vec<crate::DecodedPiece>,
}

impl CodeFound {
    /// Adds what reading `pieces` gave (`read`, in the same order).
    fn gather(&mut self, pieces: &[crate::FunctionExtent], read: Vec<PieceRead>) {
        for (piece, read) in pieces.iter().zip(read) {
            let PieceRead {
                references,
                scan,
                fields,
            } = read;
            if let Some(shape) = scan.shape {
                self.code_shapes.push(crate::CodeShape {
                    section: piece.section,
                    start: piece.start,
                    end: piece.end,
                    shape,
                    marks: scan.marks,
                });
            }
            self.taken.extend(fields.taken);
            self.relocs
                .extend(fields.relocs.into_iter().map(|r| (piece.section, r)));
            self.tables.extend(fields.tables);
            if self.keep_code {
                self.decoded.push(crate::DecodedPiece {
                    section: piece.section,
                    start: piece.start,
                    end: piece.end,
                    references,
                    runs_off_the_end: scan.runs_off_the_end,
                });
            }
        }
    }
}

/// What one function piece's references give (see
/// [`Reader::piece_fields`]).
#[derive(Default)]
struct PieceFields {
    relocs: Vec<Reloc>,
    /// The offsets of the instructions that hold `relocs`, ascending (see
    /// `icf_arch::SketchMarks::add`).
    relocated: Vec<u32>,
    taken: Vec<u64>,
    tables: Vec<JumpTable>,
}

/// A jump table the code of `function` indexes from `base`.
struct JumpTable {
    base: u64,
    shape: TableShape,
    function: std::ops::Range<u64>,
}

/// An FDE of a linked image: its function, and where its pointer fields
/// lie in `.eh_frame`.
struct LinkedFde {
    function: u64,
    function_size: u64,
    function_field: u64,
    function_encoding: gimli::DwEhPe,
    /// The LSDA pointer's field, encoding and value.
    lsda: Option<(u64, gimli::DwEhPe, u64)>,
}

/// The size of an `.eh_frame` pointer of `encoding`: the formats linkers
/// write (4 or 8 bytes, signed or not).
fn pointer_size(encoding: gimli::DwEhPe) -> Option<u8> {
    match encoding.format() {
        gimli::DW_EH_PE_sdata4 | gimli::DW_EH_PE_udata4 => Some(4),
        gimli::DW_EH_PE_sdata8 | gimli::DW_EH_PE_udata8 | gimli::DW_EH_PE_absptr => Some(8),
        _ => None,
    }
}

fn local_symbol<'data>(
    kind: SymbolKind,
    section: SectionIndex,
    value: u64,
    size: u64,
) -> Symbol<'data> {
    Symbol {
        name: b"",
        binding: Binding::Local,
        kind,
        visibility: Visibility::Default,
        other: 0,
        place: SymbolPlace::Section(section),
        value,
        size,
    }
}

/// An `ET_DYN` marked `DF_1_PIE`, or with an interpreter and no
/// `DT_SONAME`, is a position-independent executable; another is a shared
/// library.
fn image_kind(headers: &linked::Elf<'_>) -> ImageKind {
    if headers.e_type == elf::ET_EXEC.0 {
        return ImageKind::Executable;
    }
    let interpreted = headers
        .segments
        .iter()
        .any(|s| s.p_type == elf::PT_INTERP.0);
    let dynamic: Vec<&elf::Dyn64<LE>> = (0..headers.sections.len())
        .filter(|&index| headers.sections[index].sh_type == elf::SHT_DYNAMIC.0)
        .filter_map(|index| {
            let bytes = headers.bytes(index);
            let count = bytes.len() / std::mem::size_of::<elf::Dyn64<LE>>();
            object::pod::slice_from_bytes::<elf::Dyn64<LE>>(bytes, count).ok()
        })
        .flat_map(|(entries, _)| entries)
        .collect();
    let marked_pie = dynamic
        .iter()
        .any(|d| d.d_tag(LE) == elf::DT_FLAGS_1 && d.d_val(LE) & elf::DF_1_PIE.0 != 0);
    // glibc's libc.so.6 has an interpreter too (it runs as a program), and
    // a name to be loaded by.
    let named = dynamic.iter().any(|d| d.d_tag(LE) == elf::DT_SONAME);
    if marked_pie || (interpreted && !named) {
        ImageKind::PositionIndependentExecutable
    } else {
        ImageKind::SharedLibrary
    }
}

/// The names of the defined global symbols of `.dynsym`.
fn dynamic_exports<'data>(
    data: &'data [u8],
    table: &object::read::elf::SectionTable<'data, elf::FileHeader64<LE>>,
) -> Result<Vec<&'data [u8]>> {
    let dynsym = table
        .symbols(LE, data, elf::SHT_DYNSYM)
        .map_err(|e| Error::new(format!("bad dynamic symbol table: {e}")))?;
    Ok(dynsym
        .iter()
        .filter(|sym| sym.st_shndx(LE) != elf::SHN_UNDEF && sym.st_bind() != elf::STB_LOCAL)
        .filter_map(|sym| dynsym.symbol_name(LE, sym).ok())
        .filter(|name| !name.is_empty())
        .collect())
}
