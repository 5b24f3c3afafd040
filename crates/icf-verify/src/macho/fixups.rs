//! What dyld writes into a Mach-O image before it runs, as the ELF
//! image's dynamic relocations: each rebase is a relative relocation (the
//! slot holds an address in this image: [`Slot::Address`]), each bind a
//! relocation by name ([`Slot::Named`], with the name as
//! `commands::language_name` gives it). Both encodings are read: the
//! dyld info opcodes of `LC_DYLD_INFO(_ONLY)` (rebases, binds and lazy
//! binds; weak binds are not read: they only let another image's
//! definition take over one this image has, whose rebase stays the slot's
//! value in a program), and `LC_DYLD_CHAINED_FIXUPS`, whose chains hold
//! encoded words in place of the pointers. Those words are rewritten in
//! the image's bytes as dyld would write them at the preferred address
//! (a rebase's target, 0 for a bind), so that data compares as it runs,
//! not by chain links that differ with the layout.
//!
//! Main assumption: the image loads at its preferred address (`__TEXT`'s
//! `vmaddr`), which changes nothing, since both images are compared alike.
//! A bind to the image itself (`BIND_SPECIAL_DYLIB_SELF`,
//! `..._MAIN_EXECUTABLE`) naming a global it defines holds that
//! definition's address.

use object::LittleEndian as LE;
use object::read::macho::Fixup;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::error::Error;
use crate::image::{Relocations, Slot};
use crate::macho::commands::{LoadCommands, RawSymbol, Segment, language_name, located};

/// The rebases and binds of the image read from `data` (the bytes of
/// `path`), chained fixups' words rewritten in `data` as dyld writes them.
pub(crate) fn read(
    path: &Path,
    commands: &LoadCommands,
    defined: &[RawSymbol],
    data: &mut [u8],
) -> Result<Relocations, Error> {
    let limit = fixup_limit(&commands.segments);
    let defined_globals: HashMap<&str, u64> = defined
        .iter()
        .filter(|s| s.n_type & 0x01 != 0)
        .map(|s| (s.name.as_str(), s.address))
        .collect();
    let mut relocations = Relocations::default();
    if let Some((info, at)) = commands.dyld_info {
        read_rebases(path, commands, &info, at, limit, data, &mut relocations)?;
        read_binds(
            path,
            commands,
            &info,
            at,
            limit,
            &defined_globals,
            data,
            &mut relocations,
        )?;
    }
    if let Some((command, at)) = commands.chained_fixups {
        read_chained(
            path,
            commands,
            &command,
            at,
            &defined_globals,
            data,
            &mut relocations,
        )?;
    }
    Ok(relocations)
}

/// At most one fixup per pointer-sized word of the segments: more means
/// opcodes that loop (a zero stride), which are rejected.
fn fixup_limit(segments: &[Segment]) -> u64 {
    segments
        .iter()
        .map(|s| s.vmsize / 8)
        .fold(1024u64, u64::saturating_add)
}

/// The address of `offset` in segment `index`, and the file position of
/// the word there (`None` when the segment has no file bytes there).
fn place(segments: &[Segment], index: usize, offset: u64) -> Option<(u64, Option<usize>)> {
    let segment = segments.get(index)?;
    if offset.checked_add(8)? > segment.vmsize.max(segment.filesize) {
        return None;
    }
    let file = (offset.checked_add(8)? <= segment.filesize)
        .then(|| usize::try_from(segment.fileoff.checked_add(offset)?).ok())
        .flatten();
    Some((segment.vmaddr.checked_add(offset)?, file))
}

/// The little-endian word at file position `at`.
fn word(data: &[u8], at: usize) -> Option<u64> {
    let bytes = data.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// `LC_DYLD_INFO`'s rebases: each slot holds the address stored in it.
fn read_rebases(
    path: &Path,
    commands: &LoadCommands,
    info: &object::macho::DyldInfoCommand<LE>,
    at: u64,
    limit: u64,
    data: &[u8],
    relocations: &mut Relocations,
) -> Result<(), Error> {
    let opcodes_at = u64::from(info.rebase_off.get(LE));
    let bad = |message: String| located(path, opcodes_at, format!("rebase opcodes: {message}"));
    let mut rebases = info
        .rebases(LE, data, 8)
        .map_err(|e| located(path, at, format!("bad LC_DYLD_INFO rebase range: {e}")))?;
    let mut count = 0u64;
    while let Some(rebase) = rebases.next().map_err(|e| bad(e.to_string()))? {
        count += 1;
        if count > limit {
            return Err(bad(format!("more than {limit} rebases: the opcodes loop")));
        }
        let index = usize::from(rebase.segment_index);
        let (address, file) =
            place(&commands.segments, index, rebase.segment_offset).ok_or_else(|| {
                bad(format!(
                    "rebase at offset {:#x} of segment {index} lies outside it",
                    rebase.segment_offset
                ))
            })?;
        if let Some(value) = file.and_then(|f| word(data, f)) {
            relocations.dynamic.insert(address, Slot::Address(value));
        }
    }
    Ok(())
}

/// `LC_DYLD_INFO`'s binds and lazy binds: each slot holds the named symbol.
#[allow(clippy::too_many_arguments)]
fn read_binds(
    path: &Path,
    commands: &LoadCommands,
    info: &object::macho::DyldInfoCommand<LE>,
    at: u64,
    limit: u64,
    defined_globals: &HashMap<&str, u64>,
    data: &[u8],
    relocations: &mut Relocations,
) -> Result<(), Error> {
    for lazy in [false, true] {
        let (opcodes_at, what) = if lazy {
            (info.lazy_bind_off.get(LE), "lazy bind")
        } else {
            (info.bind_off.get(LE), "bind")
        };
        let bad = |message: String| {
            located(
                path,
                u64::from(opcodes_at),
                format!("{what} opcodes: {message}"),
            )
        };
        let binds = if lazy {
            info.lazy_binds(LE, data, 8)
        } else {
            info.binds(LE, data, 8)
        };
        let mut binds =
            binds.map_err(|e| located(path, at, format!("bad LC_DYLD_INFO {what} range: {e}")))?;
        let mut count = 0u64;
        while let Some(bind) = binds.next().map_err(|e| bad(e.to_string()))? {
            count += 1;
            if count > limit {
                return Err(bad(format!("more than {limit} binds: the opcodes loop")));
            }
            let index = usize::from(bind.segment_index);
            let (address, _) =
                place(&commands.segments, index, bind.segment_offset).ok_or_else(|| {
                    bad(format!(
                        "bind at offset {:#x} of segment {index} lies outside it",
                        bind.segment_offset
                    ))
                })?;
            let name = language_name(bind.symbol);
            let slot = bound_slot(&name, bind.addend, bind.dylib.0, defined_globals);
            relocations.dynamic.insert(address, slot);
        }
    }
    Ok(())
}

/// `LC_DYLD_CHAINED_FIXUPS`: every chain of every segment, its words
/// rewritten in `data`.
fn read_chained(
    path: &Path,
    commands: &LoadCommands,
    command: &object::macho::LinkeditDataCommand<LE>,
    at: u64,
    defined_globals: &HashMap<&str, u64>,
    data: &mut [u8],
    relocations: &mut Relocations,
) -> Result<(), Error> {
    let table_at = u64::from(command.dataoff.get(LE));
    let bad = |message: String| located(path, table_at, format!("chained fixups: {message}"));
    let preferred = commands.segment("__TEXT").map_or(0, |s| s.vmaddr);
    let mut writes: Vec<(u64, Option<usize>, Slot, u64)> = Vec::new();
    {
        let fixups = command
            .chained_fixups(LE, &*data)
            .map_err(|e| located(path, at, format!("bad LC_DYLD_CHAINED_FIXUPS: {e}")))?;
        let mut imports = Vec::new();
        let mut iter = fixups.imports(LE).map_err(|e| bad(e.to_string()))?;
        while let Some(import) = iter.next().map_err(|e| bad(e.to_string()))? {
            imports.push((language_name(import.name), import.addend, import.dylib.0));
        }
        let mut segments = fixups.segments(LE).map_err(|e| bad(e.to_string()))?;
        while let Some(chains) = segments.next().map_err(|e| bad(e.to_string()))? {
            let index = chains.index() as usize;
            let segment = commands
                .segments
                .get(index)
                .ok_or_else(|| bad(format!("fixups for segment {index}, which does not exist")))?;
            let (start, size) = (segment.fileoff as usize, segment.filesize as usize);
            let segment_data = data
                .get(start..start.saturating_add(size))
                .ok_or_else(|| bad(format!("segment {index} lies outside the file")))?;
            for fixup in chains.fixups(LE, preferred, segment_data) {
                let (offset, fixup) =
                    fixup.map_err(|e| bad(format!("segment {} ({index}): {e}", segment.name)))?;
                let (address, file) = place(&commands.segments, index, offset)
                    .ok_or_else(|| bad(format!("a fixup past the end of segment {index}")))?;
                let (slot, value) = match fixup {
                    Fixup::Rebase(rebase) => {
                        let target = preferred.wrapping_add(rebase.target_offset);
                        (Slot::Address(target), target)
                    }
                    Fixup::Bind(bind) => {
                        let (name, addend, dylib) =
                            imports.get(bind.ordinal as usize).ok_or_else(|| {
                                bad(format!(
                                    "bind to import {}, which does not exist",
                                    bind.ordinal
                                ))
                            })?;
                        let addend = addend.wrapping_add(i64::from(bind.addend));
                        (bound_slot(name, addend, *dylib, defined_globals), 0)
                    }
                    Fixup::KernelCacheRebase(_) | Fixup::SegmentedRebase(_) => {
                        return Err(bad("a kernel-cache or segmented pointer format".into()));
                    }
                };
                writes.push((address, file, slot, value));
            }
        }
    }
    for (address, file, slot, value) in writes {
        if let Some(at) = file
            && let Some(bytes) = data.get_mut(at..at + 8)
        {
            bytes.copy_from_slice(&value.to_le_bytes());
        }
        relocations.dynamic.insert(address, slot);
    }
    Ok(())
}

/// What a bind of `name` + `addend` from library ordinal `dylib` puts in
/// its slot: this image's own definition when it binds to itself.
fn bound_slot(name: &str, addend: i64, dylib: i32, defined_globals: &HashMap<&str, u64>) -> Slot {
    const SELF: i32 = 0;
    const MAIN_EXECUTABLE: i32 = -1;
    match defined_globals.get(name) {
        Some(&address) if matches!(dylib, SELF | MAIN_EXECUTABLE) => {
            Slot::Address(address.wrapping_add(addend as u64))
        }
        _ => Slot::Named(name.to_string(), addend),
    }
}

/// The names the export trie lists (`LC_DYLD_EXPORTS_TRIE`, else
/// `LC_DYLD_INFO`'s), each as `language_name` gives it; `None` when the
/// image has no trie.
pub(crate) fn exported_names(
    path: &Path,
    commands: &LoadCommands,
    data: &[u8],
) -> Result<Option<HashSet<String>>, Error> {
    let (iter, at) = if let Some((command, at)) = commands.exports_trie {
        (command.exports_trie(LE, data), at)
    } else if let Some((info, at)) = commands.dyld_info
        && info.export_size.get(LE) > 0
    {
        (info.exports_trie(LE, data), at)
    } else {
        return Ok(None);
    };
    let mut iter = iter.map_err(|e| located(path, at, format!("bad export trie: {e}")))?;
    let mut names = HashSet::new();
    while let Some(symbol) = iter
        .next()
        .map_err(|e| located(path, at, format!("bad export trie: {e}")))?
    {
        names.insert(language_name(symbol.name()));
    }
    Ok(Some(names))
}
