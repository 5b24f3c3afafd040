//! From a function piece of an object to the lifter's input, and lifting
//! every piece in parallel.

use crate::load::program::{FunctionInfo, Program};
use icf_ir::{CodeInput, CodeReloc, Function};
use icf_object::SectionIndex;
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

impl Program<'_> {
    /// Lifts one function piece.
    pub fn lift(&self, function: &FunctionInfo) -> Function {
        self.with_input(function, icf_arch::lift)
    }

    /// Sketches one function piece: its references and the hash of its
    /// operations, where its architecture can ([`icf_arch::Sketch`]).
    pub fn sketch(&self, function: &FunctionInfo) -> Option<icf_arch::Sketch> {
        self.with_input(function, icf_arch::sketch)
    }

    /// [`Program::sketch`] from the shape and marks the image reader found
    /// for exactly the function's bytes (`icf_object::CodeShape`), as the
    /// analysis sketches a linked image's functions.
    pub fn sketch_marked(
        &self,
        function: &FunctionInfo,
        shape: u64,
        marks: &icf_arch::SketchMarks,
    ) -> Option<icf_arch::Sketch> {
        self.with_input(function, |input| {
            icf_arch::sketch_marked(input, shape, marks)
        })
    }

    /// `work` on the lifter's input for one function piece.
    pub(crate) fn with_input<R>(
        &self,
        function: &FunctionInfo,
        work: impl FnOnce(&CodeInput<'_>) -> R,
    ) -> R {
        let object = self.object(function.object);
        let extent = &function.extent;
        let section = object.object.section(extent.section);
        let start = extent.start;
        let end = extent.end;
        // Sorted lists, searched: a section without -ffunction-sections
        // holds thousands of functions.
        let first = section.relocs.partition_point(|r| r.offset < start);
        let relocs: Vec<CodeReloc> = section.relocs[first..]
            .iter()
            .take_while(|r| r.offset < end)
            .map(|r| {
                let symbol = object.symbol_refs[r.symbol.index()];
                // The reader accepted only relocation types the table knows.
                let mask = icf_arch::of(object.object.arch)
                    .elf_reloc(r.r_type)
                    .map_or(u64::MAX, |info| info.mask);
                CodeReloc {
                    offset: (r.offset - start) as u32,
                    size: r.size,
                    mask,
                    r_type: r.r_type,
                    pc_relative: r.pc_relative,
                    target: symbol.target,
                    addend: symbol.base.wrapping_add(r.addend),
                    own_addend: r.addend,
                }
            })
            .collect();
        let entry_points = self.entry_points(function);
        let inside = |marks: &HashMap<SectionIndex, Vec<u64>>| -> Vec<u32> {
            marks
                .get(&extent.section)
                .map(|marks| {
                    within(marks, start, end)
                        .iter()
                        .map(|&at| (at - start) as u32)
                        .collect()
                })
                .unwrap_or_default()
        };
        let data_in_code = inside(&object.data_in_code);
        let code_resumes = inside(&object.code_resumes);
        // In a linked image a function ends where its symbol says, as its
        // section would in an object: code never runs on into the next
        // function, and every reference out of it has a relocation.
        let section_size = if object.object.image.is_some() {
            end
        } else {
            section.size
        };
        let input = CodeInput {
            arch: object.object.arch,
            bytes: &section.data[start as usize..end as usize],
            section_offset: start,
            section_size,
            relocs: &relocs,
            entry_points: &entry_points,
            own_section: self.targets.section(function.object, extent.section),
            data_in_code: &data_in_code,
            code_resumes: &code_resumes,
        };
        work(&input)
    }

    /// Offsets inside a function piece that something outside it refers to:
    /// jump-table entries, jumps from other sections, inner symbols.
    pub fn entry_points(&self, function: &FunctionInfo) -> Vec<u32> {
        let object = self.object(function.object);
        let extent = &function.extent;
        let (start, end) = (extent.start, extent.end);
        let mut entry_points: Vec<u32> = object
            .code_references
            .get(&extent.section)
            .map(|offsets| {
                within(offsets, start + 1, end)
                    .iter()
                    .map(|&o| (o - start) as u32)
                    .collect()
            })
            .unwrap_or_default();
        entry_points.extend(
            extent
                .inner_symbols
                .iter()
                .map(|&(offset, _)| (offset - start) as u32),
        );
        entry_points.sort_unstable();
        entry_points.dedup();
        entry_points
    }

    /// Lifts every function piece, in parallel; results in [`Program::functions`] order.
    pub fn lift_all(&self) -> Vec<Function> {
        self.functions
            .par_iter()
            .map(|function| self.lift(function))
            .collect()
    }
}

/// The offsets of sorted `offsets` in `start..end`.
fn within(offsets: &[u64], start: u64, end: u64) -> &[u64] {
    let first = offsets.partition_point(|&o| o < start);
    let last = first + offsets[first..].partition_point(|&o| o < end);
    &offsets[first..last]
}
