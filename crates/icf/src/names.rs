//! Names for people: demangled symbols, and places named by the nearest
//! symbol (`foo+0x10`) rather than by section offsets.

use crate::load::program::{FunctionInfo, Program};
use crate::load::targets::Target;
use icf_ir::TargetId;
use icf_ir::print::with_addend;
use icf_object::SymbolIndex;

/// Demangles Rust (legacy and v0) and Itanium C++ names; anything else is returned as is.
pub fn demangle(name: &[u8]) -> String {
    let text = String::from_utf8_lossy(name);
    if let Ok(demangled) = rustc_demangle::try_demangle(&text) {
        return format!("{demangled:#}");
    }
    if text.starts_with("_Z")
        && let Ok(symbol) = cpp_demangle::Symbol::new(name)
        && let Ok(demangled) = symbol.demangle()
    {
        return demangled;
    }
    text.into_owned()
}

impl Program<'_> {
    /// The symbol that names a function piece best: a global before a local,
    /// a function before a label; `None` for a piece no symbol names (the
    /// unnamed symbols a stripped image's reader makes from `.eh_frame`
    /// name nothing).
    pub fn function_symbol(&self, function: &FunctionInfo) -> Option<SymbolIndex> {
        let elf = &self.object(function.object).object;
        function
            .extent
            .symbols
            .iter()
            .copied()
            .filter(|&index| !elf.symbol(index).name.is_empty())
            .min_by_key(|&index| {
                let symbol = elf.symbol(index);
                (
                    symbol.binding == icf_object::Binding::Local,
                    symbol.kind != icf_object::SymbolKind::Func,
                    index,
                )
            })
    }

    /// The raw (mangled) name of a function piece, or `section+offset`.
    pub fn function_raw_name(&self, function: &FunctionInfo) -> String {
        let elf = &self.object(function.object).object;
        match self.function_symbol(function) {
            Some(symbol) => elf.symbol(symbol).name_lossy(),
            None => self.unnamed_function(function),
        }
    }

    /// A piece no symbol names: `section+offset` in an object; in a linked
    /// image, by its address as disassemblers do (`sub_401000`).
    fn unnamed_function(&self, function: &FunctionInfo) -> String {
        let elf = &self.object(function.object).object;
        let extent = &function.extent;
        match &elf.image {
            Some(image) => format!("sub_{:x}", image.address(extent.section, extent.start)),
            None => with_addend(
                &elf.section(extent.section).name_lossy(),
                extent.start as i64,
            ),
        }
    }

    /// The demangled name of a function piece, or `section+offset`.
    pub fn function_name(&self, function: &FunctionInfo) -> String {
        let elf = &self.object(function.object).object;
        match self.function_symbol(function) {
            Some(symbol) => demangle(elf.symbol(symbol).name),
            None => self.unnamed_function(function),
        }
    }

    /// The place `addend` bytes into `target`, named by the symbol at or before it.
    pub fn describe_target(&self, target: TargetId, addend: i64) -> String {
        self.describe(self.targets.get(target), addend)
    }

    /// Like [`Program::describe_target`], for a target that may not be in the program's table.
    pub fn describe(&self, target: Target<'_>, addend: i64) -> String {
        match target {
            Target::Symbol { name } => with_addend(&demangle(name), addend),
            Target::Candidate(index) | Target::Pinned(index) => {
                with_addend(&format!("candidate{index}"), addend)
            }
            Target::Constant {
                strings: true,
                content,
                ..
            } => {
                let text = String::from_utf8_lossy(content.strip_suffix(b"\0").unwrap_or(content));
                with_addend(&format!("{text:?}"), addend)
            }
            Target::Constant { content, .. } => {
                let hex: String = content.iter().map(|b| format!("{b:02x}")).collect();
                with_addend(&format!("const:{hex}"), addend)
            }
            Target::Absolute => format!("{addend:#x}"),
            Target::Section { object, section } => {
                let loaded = self.object(object);
                let symbols = loaded.section_symbols.get(section);
                let place = addend.max(0) as u64;
                // The last symbol starting at or before the place.
                let at = symbols.partition_point(|&(value, _, _)| value <= place);
                match at.checked_sub(1).map(|i| symbols[i]) {
                    Some((value, _, index)) if addend >= 0 => with_addend(
                        &demangle(loaded.object.symbol(index).name),
                        addend - value as i64,
                    ),
                    _ => with_addend(&loaded.object.section(section).name_lossy(), addend),
                }
            }
        }
    }
}

/// 64-bit FNV-1a: a stable hash, the same in every run and on every
/// machine, for the names icf makes (`__icf.*` symbols) and for the names
/// its tools give files (fuzzing findings, fingerprints, cache stamps).
pub fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
    })
}
