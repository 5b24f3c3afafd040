//! One linked Mach-O image (`MH_EXECUTE`, also `MH_DYLIB`/`MH_BUNDLE`;
//! 64-bit little-endian, x86_64 or arm64, as ld64 and ld64.lld write them)
//! read into the same [`ImageParts`] as an ELF image, so every check runs
//! unchanged. What Mach-O lacks is mapped to what the checks assume:
//!
//! - **Sections** are named `SEGMENT,section` (`__TEXT,__text`). Code is a
//!   section with `S_ATTR_PURE_INSTRUCTIONS` or `S_ATTR_SOME_INSTRUCTIONS`;
//!   zero-fill sections have no file contents; a section is writable when
//!   its segment's initial protection allows writing, except in
//!   `__DATA_CONST`/`__AUTH_CONST` or a segment flagged `SG_READ_ONLY`
//!   (only dyld writes those, before the program runs: ELF's RELRO);
//!   `S_CSTRING_LITERALS` are C strings and `S_{4,8,16}BYTE_LITERALS`
//!   mergeable constants. `S_SYMBOL_STUBS` (`__stubs`) are PLT entries of
//!   the size the header's `reserved2` gives; non-lazy pointers (`__got`)
//!   a GOT, lazy ones (`__la_symbol_ptr`) a lazily bound GOT. Stubs,
//!   pointer sections, `__stub_helper`, `__unwind_info` and `__eh_frame`
//!   are the linker's own ([`Section::synthesized`]).
//! - **Symbols** have no size and no type. A defined (`N_SECT`) symbol is
//!   a function in a code section and a data object elsewhere; it ends at
//!   the next place that starts something in its section (another
//!   symbol's address, or an `LC_FUNCTION_STARTS` entry in code, so a
//!   stripped local still bounds its neighbour) or at the section's end:
//!   alignment padding belongs to the symbol before it. Aliases (several
//!   names at one address, as a fold makes) share that extent. A symbol
//!   whose address lies outside its section (`__mh_execute_header`) names
//!   no function. Names lose the one leading `_` the C compilers add on
//!   Darwin, so a symbol is known by its language name (`main`, C++'s
//!   `_Z...`, Rust's `_ZN...`) as on ELF and the name-based rules
//!   (functions that never return, vtables, Rust's, vague linkage) apply
//!   as they are; icf's own labels (`__icf.*`, `icf.*`) keep the rest of
//!   their name and exist in FOLDED only. A global is `N_EXT`, weak is
//!   `N_WEAK_DEF`. A linked Mach-O image names no source file for its
//!   locals (stabs aside, which are not read): every local is taken to be
//!   in one unnamed file, so a local pairs with its namesake only where
//!   each image holds the same number of that name, and several locals of
//!   one name are ambiguous and no roots (their uses are still checked).
//! - **What the image exports**: the names of the export trie
//!   (`LC_DYLD_INFO`'s or `LC_DYLD_EXPORTS_TRIE`); without one, every
//!   `N_EXT` symbol that is not `N_PEXT`.
//! - **Entry**: `LC_MAIN`'s entry offset, and every `LC_FUNCTION_STARTS`
//!   entry, are places code is entered.
//! - **Fixups** (`fixups.rs`) are ELF's dynamic relocations: a
//!   rebase is a relative relocation, a bind one by name.
//! - **Data in code** (`LC_DATA_IN_CODE`: x86_64 jump tables clang leaves
//!   in `__text` after their function) is kept as address ranges; the
//!   x86-64 walk never decodes them as instructions.
//! - **No kept relocations**: ld64 has no `-q`, so the checks run on what
//!   the instructions and fixups say, as for an ELF image linked without
//!   `-q`. No DWARF either (it stays in the objects or a `.dSYM`), so no
//!   prototypes narrow the calling convention.
//! - Position independent: the header's `MH_PIE` flag (every pointer into
//!   the image then has a rebase).
//!
//! Everything read from the file is checked here; an error names the file
//! and the offset of what is wrong.

use object::LittleEndian as LE;
use object::macho;
use object::read::macho::{MachHeader, Nlist as _, Section as _, Segment as _};
use std::path::Path;

use crate::error::Error;
use crate::image::{Arch, ImageParts, Section, SectionRole, Symbol, SymbolKind, number_symbols};
use crate::macho::commands::{LoadCommands, RawSymbol, Segment, language_name, located};
use crate::macho::fixups;

/// Whether `data` starts like a Mach-O file (thin 32- or 64-bit, either
/// byte order, or universal): the reader then says what it is.
pub(crate) fn is_macho(data: &[u8]) -> bool {
    const MAGICS: [[u8; 4]; 5] = [
        [0xcf, 0xfa, 0xed, 0xfe],
        [0xfe, 0xed, 0xfa, 0xcf],
        [0xce, 0xfa, 0xed, 0xfe],
        [0xfe, 0xed, 0xfa, 0xce],
        [0xca, 0xfe, 0xba, 0xbe],
    ];
    MAGICS.iter().any(|magic| data.starts_with(magic))
}

const MH_EXECUTE: u32 = 2;
const MH_DYLIB: u32 = 6;
const MH_BUNDLE: u32 = 8;
const MH_PIE: u32 = 0x20_0000;
const CPU_TYPE_X86_64: u32 = 0x0100_0007;
const CPU_TYPE_ARM64: u32 = 0x0100_000c;
const VM_PROT_WRITE: u32 = 2;
const SG_READ_ONLY: u32 = 0x10;
const S_ZEROFILL: u32 = 0x1;
const S_CSTRING_LITERALS: u32 = 0x2;
const S_4BYTE_LITERALS: u32 = 0x3;
const S_8BYTE_LITERALS: u32 = 0x4;
const S_NON_LAZY_SYMBOL_POINTERS: u32 = 0x6;
const S_LAZY_SYMBOL_POINTERS: u32 = 0x7;
const S_SYMBOL_STUBS: u32 = 0x8;
const S_GB_ZEROFILL: u32 = 0xc;
const S_16BYTE_LITERALS: u32 = 0xe;
const S_THREAD_LOCAL_ZEROFILL: u32 = 0x12;
const S_THREAD_LOCAL_VARIABLE_POINTERS: u32 = 0x14;
const S_ATTR_PURE_INSTRUCTIONS: u32 = 0x8000_0000;
const S_ATTR_SOME_INSTRUCTIONS: u32 = 0x0000_0400;
const S_ATTR_DEBUG: u32 = 0x0200_0000;
const N_STAB: u8 = 0xe0;
const N_PEXT: u8 = 0x10;
const N_TYPE: u8 = 0x0e;
const N_EXT: u8 = 0x01;
const N_SECT: u8 = 0x0e;
const N_WEAK_DEF: u16 = 0x0080;

/// Reads the Mach-O image in `data`, the bytes of `path`.
pub(crate) fn read(path: &Path, data: Vec<u8>) -> Result<ImageParts, Error> {
    let header = macho::MachHeader64::<LE>::parse(&*data, 0).map_err(|e| {
        let what = if data.starts_with(&[0xca, 0xfe, 0xba, 0xbe]) {
            "a universal (fat) Mach-O file: verify one architecture (lipo -thin)".to_string()
        } else {
            format!("not a 64-bit little-endian Mach-O file: {e}")
        };
        located(path, 0, what)
    })?;
    let arch = match header.cputype(LE).0 {
        CPU_TYPE_X86_64 => Arch::X86_64,
        CPU_TYPE_ARM64 => Arch::Aarch64,
        other => return Err(located(path, 4, format!("unsupported cputype {other:#x}"))),
    };
    let filetype = header.filetype(LE).0;
    if !matches!(filetype, MH_EXECUTE | MH_DYLIB | MH_BUNDLE) {
        return Err(located(
            path,
            12,
            format!("filetype {filetype}: not a linked executable, dylib or bundle"),
        ));
    }
    let position_independent = header.flags(LE).0 & MH_PIE != 0 || filetype != MH_EXECUTE;
    let commands = read_load_commands(path, header, &data)?;
    let function_starts = function_starts(path, &commands, &data)?;
    let data_in_code = data_in_code(path, &commands, &data)?;
    let raw = read_symbols(path, &commands, &data)?;
    let mut data = data;
    let fixups = fixups::read(path, &commands, &raw.defined, &mut data)?;
    let exported_names = match fixups::exported_names(path, &commands, &data)? {
        Some(names) => names,
        None => raw
            .defined
            .iter()
            .filter(|s| s.n_type & N_EXT != 0 && s.n_type & N_PEXT == 0)
            .map(|s| s.name.clone())
            .collect(),
    };
    let symbols = sized_symbols(&commands.sections, &raw.defined, &function_starts);
    let exported_functions: Vec<String> = symbols
        .iter()
        .filter(|s| s.kind == SymbolKind::Function && s.global)
        .filter(|s| exported_names.contains(&s.name))
        .map(|s| s.name.clone())
        .collect();
    let mut code_entries = Vec::new();
    if let Some((offset, at)) = commands.entry_offset {
        let entry = commands
            .segments
            .iter()
            .find_map(|s| s.address_of_offset(offset))
            .ok_or_else(|| {
                located(
                    path,
                    at,
                    format!("LC_MAIN's entry offset {offset:#x} is in no segment"),
                )
            })?;
        code_entries.push(entry);
    }
    code_entries.extend(raw.code_places.iter().copied());
    code_entries.extend(function_starts.iter().copied());
    let mut labels = raw.data_places;
    labels.sort_unstable();
    labels.dedup();
    let bindings_kept = raw.defined.iter().any(|s| s.n_type & N_EXT != 0);
    let image_base = commands.segment("__TEXT").map_or(0, |s| s.vmaddr);
    Ok(ImageParts {
        arch,
        data,
        sections: commands.sections,
        symbols,
        labels,
        code_entries,
        erratum_patches: Vec::new(),
        bindings_kept,
        relocations: fixups,
        exported_functions,
        exported_names,
        position_independent,
        is_program: filetype == MH_EXECUTE,
        data_in_code,
        sizes_to_next_symbol: true,
        image_base,
    })
}

/// Walks the load commands of `data`: segments and their sections, and the
/// commands the other readers need, each checked against the file.
fn read_load_commands(
    path: &Path,
    header: &macho::MachHeader64<LE>,
    data: &[u8],
) -> Result<LoadCommands, Error> {
    let mut iter = header.load_commands(LE, data, 0).map_err(|e| {
        located(
            path,
            32,
            format!(
                "bad load commands ({} commands, {} bytes): {e}",
                header.ncmds(LE),
                header.sizeofcmds(LE)
            ),
        )
    })?;
    let mut commands = LoadCommands {
        segments: Vec::new(),
        sections: Vec::new(),
        symtab: None,
        dyld_info: None,
        chained_fixups: None,
        exports_trie: None,
        function_starts: None,
        data_in_code: None,
        entry_offset: None,
    };
    let mut at = 32u64;
    loop {
        let command = iter
            .next()
            .map_err(|e| located(path, at, format!("bad load command: {e}")))?;
        let Some(command) = command else { break };
        let bad =
            |what: &str, e: object::read::Error| located(path, at, format!("bad {what}: {e}"));
        match command.cmd() {
            macho::LC_SEGMENT_64 => {
                let (segment, section_data) = command
                    .segment_64()
                    .map_err(|e| bad("LC_SEGMENT_64", e))?
                    .ok_or_else(|| located(path, at, "bad LC_SEGMENT_64"))?;
                read_segment(path, at, data, segment, section_data, &mut commands)?;
            }
            macho::LC_SYMTAB => {
                let symtab = command.symtab().map_err(|e| bad("LC_SYMTAB", e))?;
                commands.symtab = symtab.map(|s| (*s, at));
            }
            macho::LC_DYLD_INFO | macho::LC_DYLD_INFO_ONLY => {
                let info = command.dyld_info().map_err(|e| bad("LC_DYLD_INFO", e))?;
                commands.dyld_info = info.map(|s| (*s, at));
            }
            macho::LC_DYLD_CHAINED_FIXUPS => {
                let fixups = command
                    .data()
                    .map_err(|e| bad("LC_DYLD_CHAINED_FIXUPS", e))?;
                commands.chained_fixups = Some((*fixups, at));
            }
            macho::LC_DYLD_EXPORTS_TRIE => {
                let trie = command.data().map_err(|e| bad("LC_DYLD_EXPORTS_TRIE", e))?;
                commands.exports_trie = Some((*trie, at));
            }
            macho::LC_FUNCTION_STARTS => {
                let starts = command.data().map_err(|e| bad("LC_FUNCTION_STARTS", e))?;
                commands.function_starts = Some((*starts, at));
            }
            macho::LC_DATA_IN_CODE => {
                let entries = command.data().map_err(|e| bad("LC_DATA_IN_CODE", e))?;
                commands.data_in_code = Some((*entries, at));
            }
            macho::LC_MAIN => {
                let main = command
                    .data::<macho::EntryPointCommand<LE>>()
                    .map_err(|e| bad("LC_MAIN", e))?;
                commands.entry_offset = Some((main.entryoff.get(LE), at));
            }
            _ => {}
        }
        at = at.saturating_add(u64::from(command.cmdsize()));
    }
    Ok(commands)
}

/// Adds the segment of the `LC_SEGMENT_64` at offset `at` and its sections.
fn read_segment(
    path: &Path,
    at: u64,
    data: &[u8],
    segment: &macho::SegmentCommand64<LE>,
    section_data: &[u8],
    commands: &mut LoadCommands,
) -> Result<(), Error> {
    let segment_name = c_name(&segment.segname);
    let headers = segment.sections(LE, section_data).map_err(|e| {
        located(
            path,
            at,
            format!(
                "segment {segment_name} says {} sections, more than its command holds: {e}",
                segment.nsects.get(LE)
            ),
        )
    })?;
    let fileoff = segment.fileoff.get(LE);
    let filesize = segment.filesize.get(LE);
    if fileoff
        .checked_add(filesize)
        .is_none_or(|end| end > data.len() as u64)
    {
        return Err(located(
            path,
            at,
            format!(
                "segment {segment_name} ({filesize:#x} bytes at {fileoff:#x}) lies outside the file"
            ),
        ));
    }
    let initprot = segment.initprot.get(LE).0;
    let read_only = segment.flags.get(LE).0 & SG_READ_ONLY != 0
        || matches!(segment_name.as_str(), "__DATA_CONST" | "__AUTH_CONST");
    let writable = initprot & VM_PROT_WRITE != 0 && !read_only;
    commands.segments.push(Segment {
        name: segment_name.clone(),
        vmaddr: segment.vmaddr.get(LE),
        vmsize: segment.vmsize.get(LE),
        fileoff,
        filesize,
    });
    let first_header = at + size_of::<macho::SegmentCommand64<LE>>() as u64;
    for (number, header) in headers.iter().enumerate() {
        let header_at = first_header + (number * size_of::<macho::Section64<LE>>()) as u64;
        let section = read_section(path, header_at, data, header, writable)?;
        commands.sections.push(section);
    }
    Ok(())
}

/// One section of a segment (writable as the segment is), its header at
/// file offset `at`.
fn read_section(
    path: &Path,
    at: u64,
    data: &[u8],
    header: &macho::Section64<LE>,
    writable: bool,
) -> Result<Section, Error> {
    let (segname, sectname) = (c_name(&header.segname), c_name(&header.sectname));
    let name = format!("{segname},{sectname}");
    let flags = header.flags(LE).0;
    let kind = flags & 0xff;
    let size = header.size.get(LE);
    let zero_fill = matches!(kind, S_ZEROFILL | S_GB_ZEROFILL | S_THREAD_LOCAL_ZEROFILL);
    let file_range = if zero_fill || size == 0 {
        None
    } else {
        let start = u64::from(header.offset.get(LE));
        match start.checked_add(size) {
            Some(end) if end <= data.len() as u64 => Some((start as usize, end as usize)),
            _ => {
                return Err(located(
                    path,
                    at,
                    format!("section {name} ({size:#x} bytes at {start:#x}) lies outside the file"),
                ));
            }
        }
    };
    let role = match kind {
        S_SYMBOL_STUBS => SectionRole::Plt {
            entry_size: u64::from(header.reserved2.get(LE)),
        },
        S_NON_LAZY_SYMBOL_POINTERS => SectionRole::Got,
        S_LAZY_SYMBOL_POINTERS => SectionRole::LazyGot,
        _ => SectionRole::Other,
    };
    let synthesized = role != SectionRole::Other
        || kind == S_THREAD_LOCAL_VARIABLE_POINTERS
        || matches!(
            sectname.as_str(),
            "__stub_helper" | "__unwind_info" | "__eh_frame" | "__got" | "__auth_got"
        );
    Ok(Section {
        address: header.addr.get(LE),
        size,
        file_range,
        alloc: segname != "__DWARF" && flags & S_ATTR_DEBUG == 0,
        writable,
        executable: flags & (S_ATTR_PURE_INSTRUCTIONS | S_ATTR_SOME_INSTRUCTIONS) != 0,
        strings: kind == S_CSTRING_LITERALS,
        merge_entry_size: match kind {
            S_4BYTE_LITERALS => 4,
            S_8BYTE_LITERALS => 8,
            S_16BYTE_LITERALS => 16,
            _ => 0,
        },
        synthesized,
        compressed: false,
        role,
        name,
    })
}

/// A NUL-padded 16-byte name.
fn c_name(bytes: &[u8; 16]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(16);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// The addresses `LC_FUNCTION_STARTS` lists (deltas from `__TEXT`), sorted.
fn function_starts(path: &Path, commands: &LoadCommands, data: &[u8]) -> Result<Vec<u64>, Error> {
    let Some((command, at)) = commands.function_starts else {
        return Ok(Vec::new());
    };
    let text = commands.segment("__TEXT").map_or(0, |s| s.vmaddr);
    let mut iter = command
        .function_starts(LE, data, text)
        .map_err(|e| located(path, at, format!("bad LC_FUNCTION_STARTS: {e}")))?;
    let mut starts = Vec::new();
    while let Some(start) = iter.next().map_err(|e| {
        located(
            path,
            u64::from(command.dataoff.get(LE)),
            format!("bad LC_FUNCTION_STARTS: {e}"),
        )
    })? {
        starts.push(start);
    }
    starts.sort_unstable();
    starts.dedup();
    Ok(starts)
}

/// `LC_DATA_IN_CODE`'s runs as (start, end) addresses, sorted.
fn data_in_code(
    path: &Path,
    commands: &LoadCommands,
    data: &[u8],
) -> Result<Vec<(u64, u64)>, Error> {
    let Some((command, at)) = commands.data_in_code else {
        return Ok(Vec::new());
    };
    let bytes = command
        .data(LE, data)
        .map_err(|e| located(path, at, format!("bad LC_DATA_IN_CODE: {e}")))?;
    let entry_size = size_of::<macho::DataInCodeEntry<LE>>();
    let table_at = u64::from(command.dataoff.get(LE));
    let mut runs = Vec::new();
    for (index, entry) in bytes.chunks(entry_size).enumerate() {
        let entry_at = table_at + (index * entry_size) as u64;
        let [o0, o1, o2, o3, l0, l1, _, _] = *entry else {
            return Err(located(path, entry_at, "truncated data-in-code entry"));
        };
        let offset = u64::from(u32::from_le_bytes([o0, o1, o2, o3]));
        let length = u64::from(u16::from_le_bytes([l0, l1]));
        let start = commands
            .segments
            .iter()
            .find_map(|s| s.address_of_offset(offset))
            .ok_or_else(|| {
                located(
                    path,
                    entry_at,
                    format!("data in code at file offset {offset:#x} is in no segment"),
                )
            })?;
        runs.push((start, start.saturating_add(length)));
    }
    runs.sort_unstable();
    Ok(runs)
}

/// The symbol table's defined symbols and the places they mark.
struct RawSymbols {
    /// Defined symbols inside their sections, in table order.
    defined: Vec<RawSymbol>,
    /// Addresses of symbols in code sections.
    code_places: Vec<u64>,
    /// Addresses of symbols in other sections.
    data_places: Vec<u64>,
}

/// Reads `LC_SYMTAB`'s table: its defined symbols, each checked against
/// the sections; an error names the entry's offset.
fn read_symbols(path: &Path, commands: &LoadCommands, data: &[u8]) -> Result<RawSymbols, Error> {
    let mut raw = RawSymbols {
        defined: Vec::new(),
        code_places: Vec::new(),
        data_places: Vec::new(),
    };
    let Some((symtab, at)) = commands.symtab else {
        return Err(located(path, 0, "no LC_SYMTAB: cannot name functions"));
    };
    let (symoff, nsyms) = (
        u64::from(symtab.symoff.get(LE)),
        symtab.nsyms.get(LE) as usize,
    );
    let (stroff, strsize) = (
        symtab.stroff.get(LE) as usize,
        symtab.strsize.get(LE) as usize,
    );
    let entry_size = size_of::<macho::Nlist64<LE>>();
    let table = usize::try_from(symoff)
        .ok()
        .and_then(|start| data.get(start..)?.get(..nsyms.checked_mul(entry_size)?))
        .ok_or_else(|| {
            located(
                path,
                at,
                format!("the symbol table ({nsyms} entries at {symoff:#x}) lies outside the file"),
            )
        })?;
    let strings = data
        .get(stroff..stroff.saturating_add(strsize))
        .ok_or_else(|| {
            located(
                path,
                at,
                format!(
                    "the string table ({strsize:#x} bytes at {stroff:#x}) lies outside the file"
                ),
            )
        })?;
    let nlists: &[macho::Nlist64<LE>] = object::pod::slice_from_bytes(table, nsyms)
        .map(|(slice, _)| slice)
        .map_err(|()| located(path, symoff, "misaligned symbol table"))?;
    for (index, nlist) in nlists.iter().enumerate() {
        let entry_at = symoff + (index * entry_size) as u64;
        let n_type = nlist.n_type().0;
        if n_type & N_STAB != 0 || n_type & N_TYPE != N_SECT {
            continue;
        }
        let strx = nlist.n_strx.get(LE) as usize;
        let name = strings
            .get(strx..)
            .map(|rest| &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())])
            .ok_or_else(|| {
                located(path, entry_at, format!("symbol {index}'s name offset {strx:#x} is past the string table ({strsize:#x} bytes)"))
            })?;
        let n_sect = usize::from(nlist.n_sect());
        let Some(section) = n_sect.checked_sub(1).and_then(|i| commands.sections.get(i)) else {
            return Err(located(
                path,
                entry_at,
                format!(
                    "symbol {} names section {n_sect}, which does not exist ({} sections)",
                    String::from_utf8_lossy(name),
                    commands.sections.len()
                ),
            ));
        };
        let address = nlist.n_value(LE);
        if !(section.address..section.address.saturating_add(section.size)).contains(&address)
            || name.is_empty()
        {
            continue;
        }
        if section.executable {
            raw.code_places.push(address);
        } else if section.alloc {
            raw.data_places.push(address);
        }
        raw.defined.push(RawSymbol {
            name: language_name(name),
            n_type,
            n_desc: nlist.n_desc(LE).0,
            address,
            section: n_sect - 1,
        });
    }
    Ok(raw)
}

/// The symbols as [`Symbol`]s: each extends to the next place that starts
/// something in its section (a symbol, or a function start in code), else
/// to the section's end; numbered among their namesakes.
fn sized_symbols(
    sections: &[Section],
    defined: &[RawSymbol],
    function_starts: &[u64],
) -> Vec<Symbol> {
    let mut bounds: Vec<Vec<u64>> = vec![Vec::new(); sections.len()];
    for s in defined {
        bounds[s.section].push(s.address);
    }
    for (index, section) in sections.iter().enumerate() {
        if section.executable {
            let end = section.address.saturating_add(section.size);
            bounds[index].extend(
                function_starts
                    .iter()
                    .filter(|&&a| (section.address..end).contains(&a)),
            );
        }
        bounds[index].sort_unstable();
        bounds[index].dedup();
    }
    let mut symbols: Vec<Symbol> = defined
        .iter()
        .filter(|s| sections[s.section].alloc)
        .map(|s| {
            let section = &sections[s.section];
            let section_end = section.address.saturating_add(section.size);
            let starts = &bounds[s.section];
            let next = starts.partition_point(|&a| a <= s.address);
            let end = starts
                .get(next)
                .copied()
                .unwrap_or(section_end)
                .min(section_end);
            let global = s.n_type & N_EXT != 0;
            Symbol {
                name: s.name.clone(),
                // One unnamed file for every local: see the module header.
                file: (!global).then(String::new),
                ordinal_in_file: 0,
                ordinal_in_name: 0,
                address: s.address,
                size: end - s.address,
                kind: if section.executable {
                    SymbolKind::Function
                } else {
                    SymbolKind::Object
                },
                section: s.section,
                weak: s.n_desc & N_WEAK_DEF != 0,
                global,
                hidden: false,
                rustc_function: false,
            }
        })
        .collect();
    number_symbols(&mut symbols);
    symbols
}
