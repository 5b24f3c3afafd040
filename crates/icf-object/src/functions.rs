//! Where the functions of an object are, and which places inside them other
//! sections jump to.
//!
//! Under `-ffunction-sections` a function is its whole section. A section that
//! holds several functions (gcc without `-ffunction-sections`, hand-written
//! assembly) is split at the extents of its function symbols; a symbol inside
//! another function's extent is a second entry point of that function, not a
//! split. Bytes no symbol covers (alignment padding, unnamed code) form
//! pieces of their own, so every byte of executable code belongs to exactly
//! one piece.

use crate::model::{Binding, Reloc, SectionIndex, SymbolIndex, SymbolKind, SymbolPlace};
use crate::object::Object;
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;

/// A contiguous piece of an executable section lifted as one function.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FunctionExtent {
    pub section: SectionIndex,
    /// Section offsets `start..end`.
    pub start: u64,
    pub end: u64,
    /// Symbols at `start`; empty for a piece that no symbol names. Rarely
    /// more than two, and a program holds one extent per function.
    pub symbols: SmallVec<[SymbolIndex; 2]>,
    /// Symbols strictly inside the extent, with their section offsets.
    pub inner_symbols: Vec<(u64, SymbolIndex)>,
    /// Whether the extent is the whole section.
    pub whole_section: bool,
}

impl FunctionExtent {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

impl<'data> Object<'data> {
    /// Every executable section's pieces, in section and address order.
    pub fn functions(&self) -> Vec<FunctionExtent> {
        let mut by_section: HashMap<SectionIndex, Vec<(u64, u64, SymbolIndex)>> =
            HashMap::default();
        for (index, symbol) in self.symbols.iter().enumerate() {
            let SymbolPlace::Section(section) = symbol.place else {
                continue;
            };
            let names_code = match symbol.kind {
                SymbolKind::Func | SymbolKind::Ifunc => true,
                // Assembly labels without `.type`: only exported ones are entry points.
                SymbolKind::NoType => symbol.binding != Binding::Local && !symbol.name.is_empty(),
                _ => false,
            };
            if names_code && self.section(section).is_executable() {
                by_section.entry(section).or_default().push((
                    symbol.value,
                    symbol.size,
                    SymbolIndex(index as u32),
                ));
            }
        }

        let mut functions = Vec::new();
        for (index, section) in self.sections.iter().enumerate() {
            if !section.is_executable() || section.size == 0 {
                continue;
            }
            let section_index = SectionIndex(index as u32);
            let mut symbols = by_section.remove(&section_index).unwrap_or_default();
            symbols.retain(|&(value, _, _)| value < section.size);
            symbols.sort_by_key(|&(value, size, index)| (value, std::cmp::Reverse(size), index));
            split_section(section_index, section.size, &symbols, &mut functions);
        }
        functions
    }

    /// Where data starts inside executable sections: the AArch64 ELF ABI's
    /// `$d` mapping symbols (a literal pool, a table) and Mach-O's
    /// `LC_DATA_IN_CODE` entries (x86_64 jump tables), sorted per section.
    pub fn data_in_code(&self) -> HashMap<SectionIndex, Vec<u64>> {
        let mut marks: HashMap<SectionIndex, Vec<u64>> = HashMap::default();
        for symbol in &self.symbols {
            let is_data_mark = symbol.name == b"$d" || symbol.name.starts_with(b"$d.");
            if let (true, SymbolPlace::Section(section)) = (is_data_mark, symbol.place)
                && self.section(section).is_executable()
            {
                marks.entry(section).or_default().push(symbol.value);
            }
        }
        if let Some(layout) = &self.macho {
            for entry in &layout.data_in_code {
                marks.entry(entry.section).or_default().push(entry.offset);
            }
        }
        for offsets in marks.values_mut() {
            offsets.sort_unstable();
            offsets.dedup();
        }
        marks
    }

    /// Where instructions start again after data inside executable
    /// sections: the end of each Mach-O `LC_DATA_IN_CODE` run that ends
    /// before its atom does, sorted per section. (ELF's `$x` symbols are
    /// not read: the AArch64 lifter compares any function holding data
    /// byte-exactly from its first data on.)
    pub fn code_resumes(&self) -> HashMap<SectionIndex, Vec<u64>> {
        let mut resumes: HashMap<SectionIndex, Vec<u64>> = HashMap::default();
        if let Some(layout) = &self.macho {
            for entry in &layout.data_in_code {
                let end = entry.offset + u64::from(entry.length);
                if end < self.section(entry.section).size {
                    resumes.entry(entry.section).or_default().push(end);
                }
            }
        }
        for offsets in resumes.values_mut() {
            offsets.sort_unstable();
            offsets.dedup();
        }
        resumes
    }

    /// Section offsets inside executable sections that something else refers
    /// to: jump-table entries, code addresses stored in data, and jumps from
    /// other sections (a `.cold` part returning into its function). Each is a
    /// block leader for the lifter, and makes the function's layout matter.
    pub fn code_references(&self, anchors: &DataAnchors) -> HashMap<SectionIndex, Vec<u64>> {
        let mut result: HashMap<SectionIndex, Vec<u64>> = HashMap::default();
        for (index, section) in self.sections.iter().enumerate() {
            if !section.is_alloc() || section.name == b".eh_frame" || section.relocs.is_empty() {
                continue;
            }
            let from = SectionIndex(index as u32);
            for reloc in &section.relocs {
                let Some((target, place)) = self.reloc_place(anchors, from, reloc) else {
                    continue;
                };
                if target != from
                    && self.section(target).is_executable()
                    && place > 0
                    && (place as u64) < self.section(target).size
                {
                    result.entry(target).or_default().push(place as u64);
                }
            }
        }
        for offsets in result.values_mut() {
            offsets.sort_unstable();
            offsets.dedup();
        }
        result
    }

    /// The place a relocation of section `from` refers to: its target section
    /// and the offset there, `None` when it names no section.
    ///
    /// Absolute relocations refer to symbol + addend. An x86-64 PC-relative
    /// field in code ends its instruction (true for branches and for most
    /// RIP-relative operands), so the place is 4 bytes further. A PC-relative
    /// entry in read-only data that points at code is a jump-table entry,
    /// `.long .Ltarget - .Ltable`: its addend carries the entry's distance
    /// from the table start, the nearest anchor at or before it.
    pub fn reloc_place(
        &self,
        anchors: &DataAnchors,
        from: SectionIndex,
        reloc: &Reloc,
    ) -> Option<(SectionIndex, i64)> {
        let symbol = self.symbol(reloc.symbol);
        let target = symbol.section()?;
        // The reader bounds section symbol values, addends and section sizes
        // (`model::MAX_PLACE_MAGNITUDE`): no sum below can overflow.
        let base = symbol.value as i64 + reloc.addend;
        if !reloc.pc_relative {
            return Some((target, base));
        }
        let source = self.section(from);
        if source.is_executable() {
            return Some((target, base + self.field_end(from, reloc)));
        }
        let self_relative =
            source.name == b".eh_frame" || source.name.starts_with(b".gcc_except_table");
        if self_relative || !self.section(target).is_executable() {
            return Some((target, base));
        }
        let anchors = anchors.0.get(&from)?;
        let table = anchors[..anchors.partition_point(|&a| a <= reloc.offset)].last()?;
        Some((target, base - (reloc.offset - table) as i64))
    }

    /// How far past its field a PC-relative reference in section `from`
    /// points when its addend is zero: in code, where the architecture
    /// counts from (an x86-64 field is taken to end its instruction);
    /// anywhere else the place is the field itself.
    pub fn field_end(&self, from: SectionIndex, reloc: &Reloc) -> i64 {
        if reloc.pc_relative && self.section(from).is_executable() {
            icf_arch::of(self.arch).code_field_end(reloc.size)
        } else {
            0
        }
    }

    /// For each data section, the sorted offsets that something names:
    /// symbols defined there and the targets of relocations pointing at it.
    /// A jump table starts at one of them.
    pub fn data_anchors(&self) -> DataAnchors {
        let mut anchors: HashMap<SectionIndex, Vec<u64>> = HashMap::default();
        // Only allocated data can hold a jump table; debug sections are most
        // of the relocations of an object and never matter here, nor does code.
        let holds_tables = |section: SectionIndex| {
            let section = self.section(section);
            section.is_alloc() && !section.is_executable()
        };
        for symbol in &self.symbols {
            if let Some(section) = symbol.section()
                && holds_tables(section)
            {
                anchors.entry(section).or_default().push(symbol.value);
            }
        }
        for section in self.sections.iter().filter(|s| s.is_alloc()) {
            for reloc in &section.relocs {
                let symbol = self.symbol(reloc.symbol);
                let Some(target) = symbol.section().filter(|&s| holds_tables(s)) else {
                    continue;
                };
                // A PC-relative displacement at the end of an instruction: the place is 4 bytes further.
                let adjust = if reloc.pc_relative {
                    i64::from(reloc.size)
                } else {
                    0
                };
                // Bounded by the reader (`model::MAX_PLACE_MAGNITUDE`): no overflow.
                let offset = symbol.value as i64 + reloc.addend + adjust;
                if offset >= 0 {
                    anchors.entry(target).or_default().push(offset as u64);
                }
            }
        }
        for offsets in anchors.values_mut() {
            offsets.sort_unstable();
            offsets.dedup();
        }
        DataAnchors(anchors)
    }
}

/// Offsets in each section that symbols or relocations name; see [`Object::data_anchors`].
#[derive(Clone, Debug, Default)]
pub struct DataAnchors(HashMap<SectionIndex, Vec<u64>>);

/// Splits one executable section of `size` bytes at `symbols` (sorted by
/// value, larger extents first) and appends the pieces.
fn split_section(
    section: SectionIndex,
    size: u64,
    symbols: &[(u64, u64, SymbolIndex)],
    out: &mut Vec<FunctionExtent>,
) {
    let piece = |start: u64, end: u64| FunctionExtent {
        section,
        start,
        end,
        symbols: SmallVec::new(),
        inner_symbols: Vec::new(),
        whole_section: start == 0 && end == size,
    };
    // All symbols at offset 0 and no other start: the section is one function.
    if symbols.iter().all(|&(value, _, _)| value == 0) {
        let mut whole = piece(0, size);
        whole.symbols = symbols.iter().map(|&(_, _, index)| index).collect();
        out.push(whole);
        return;
    }

    let mut position = 0;
    let mut i = 0;
    while i < symbols.len() {
        let (start, _, _) = symbols[i];
        if start > position {
            out.push(piece(position, start));
        }
        // Every symbol at this start names the same piece; the largest size decides its end.
        let mut current = piece(start, size);
        let mut declared_end = start;
        while i < symbols.len() && symbols[i].0 == start {
            current.symbols.push(symbols[i].2);
            declared_end = declared_end.max(start.saturating_add(symbols[i].1));
            i += 1;
        }
        // Symbols inside the declared extent are inner entry points.
        while i < symbols.len() && symbols[i].0 < declared_end {
            current.inner_symbols.push((symbols[i].0, symbols[i].2));
            i += 1;
        }
        let next_start = symbols.get(i).map_or(size, |s| s.0);
        current.end = if declared_end > start {
            declared_end.min(next_start)
        } else {
            next_start
        };
        current.whole_section = current.start == 0 && current.end == size;
        position = current.end;
        out.push(current);
    }
    if position < size {
        out.push(piece(position, size));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extents(size: u64, symbols: &[(u64, u64)]) -> Vec<(u64, u64, usize, usize)> {
        let symbols: Vec<_> = symbols
            .iter()
            .enumerate()
            .map(|(i, &(v, s))| (v, s, SymbolIndex(i as u32 + 1)))
            .collect();
        let mut out = Vec::new();
        split_section(SectionIndex(1), size, &symbols, &mut out);
        out.iter()
            .map(|f| (f.start, f.end, f.symbols.len(), f.inner_symbols.len()))
            .collect()
    }

    #[test]
    fn one_function_per_section_covers_padding() {
        assert_eq!(extents(32, &[(0, 20)]), vec![(0, 32, 1, 0)]);
        assert_eq!(extents(32, &[]), vec![(0, 32, 0, 0)]);
    }

    #[test]
    fn splits_at_symbols_and_keeps_gaps_as_pieces() {
        assert_eq!(
            extents(64, &[(0, 10), (16, 20), (48, 0)]),
            vec![
                (0, 10, 1, 0),
                (10, 16, 0, 0),
                (16, 36, 1, 0),
                (36, 48, 0, 0),
                (48, 64, 1, 0)
            ]
        );
    }

    #[test]
    fn nested_symbols_are_entry_points() {
        assert_eq!(extents(40, &[(0, 40), (8, 0), (8, 4)]), vec![(0, 40, 1, 2)]);
    }

    #[test]
    fn leading_unnamed_code_is_a_piece() {
        assert_eq!(extents(20, &[(4, 16)]), vec![(0, 4, 0, 0), (4, 20, 1, 0)]);
    }
}
