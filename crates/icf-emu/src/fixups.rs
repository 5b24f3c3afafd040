//! Pointer fixups, for an image loaded at its preferred address.
//!
//! - Classic dyld info (`LC_DYLD_INFO_ONLY`, what `ld64.lld-19` writes for
//!   macOS 11): the file already holds every rebased pointer's final value,
//!   so at slide 0 there is nothing to do. The bind and lazy-bind opcode
//!   streams are scanned only to refuse imports, naming the first symbol.
//!   Weak binds are ignored: in an executable they name its own weak
//!   definitions, which the pointers already hold.
//! - Chained fixups (`LC_DYLD_CHAINED_FIXUPS`, lld's default from macOS 13 or
//!   with `-fixup_chains`): each pointer slot holds an encoded rebase target
//!   and the distance to the next slot, so every chain is walked (with the
//!   `object` crate's decoder) and each slot rewritten with its address.
//!   Formats `DYLD_CHAINED_PTR_64` (what lld writes) and
//!   `DYLD_CHAINED_PTR_64_OFFSET` are supported; a bind is an import.

use object::Endianness;
use object::macho;
use object::read::macho::Fixup;

use crate::Error;
use crate::segment::LoadedSegment;

/// Refuses the image if its dyld info binds any symbol.
pub(crate) fn check_dyld_info_binds(
    info: &macho::DyldInfoCommand<Endianness>,
    endian: Endianness,
    data: &[u8],
) -> Result<(), Error> {
    let streams = [
        (
            "bind",
            info.bind_off.get(endian),
            info.bind_size.get(endian),
        ),
        (
            "lazy bind",
            info.lazy_bind_off.get(endian),
            info.lazy_bind_size.get(endian),
        ),
    ];
    let mut bound = Vec::new();
    for (what, offset, size) in streams {
        let bytes = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(size).ok())
            .and_then(|(start, size)| data.get(start..start.checked_add(size)?))
            .ok_or_else(|| {
                Error::Malformed(format!(
                    "{what} opcodes at {offset:#x}+{size:#x} are past the end of the file"
                ))
            })?;
        bound_symbols(bytes, what, &mut bound)?;
    }
    // `dyld_stub_binder` is bound only for the lazy binds' sake: name the
    // symbol the program itself imports.
    match bound.iter().find(|symbol| *symbol != "dyld_stub_binder") {
        Some(symbol) => Err(Error::Import {
            symbol: symbol.clone(),
        }),
        None => match bound.into_iter().next() {
            Some(symbol) => Err(Error::Import { symbol }),
            None => Ok(()),
        },
    }
}

// The bind opcodes (upper nibble; the lower one is an immediate operand).
const DONE: u8 = 0x00;
const SET_DYLIB_ORDINAL_IMM: u8 = 0x10;
const SET_DYLIB_ORDINAL_ULEB: u8 = 0x20;
const SET_DYLIB_SPECIAL_IMM: u8 = 0x30;
const SET_SYMBOL_TRAILING_FLAGS_IMM: u8 = 0x40;
const SET_TYPE_IMM: u8 = 0x50;
const SET_ADDEND_SLEB: u8 = 0x60;
const SET_SEGMENT_AND_OFFSET_ULEB: u8 = 0x70;
const ADD_ADDR_ULEB: u8 = 0x80;
const DO_BIND: u8 = 0x90;
const DO_BIND_ADD_ADDR_ULEB: u8 = 0xa0;
const DO_BIND_ADD_ADDR_IMM_SCALED: u8 = 0xb0;
const DO_BIND_ULEB_TIMES_SKIPPING_ULEB: u8 = 0xc0;
const THREADED: u8 = 0xd0;

/// Appends the symbols the opcodes bind, in order, to `bound`. The whole
/// stream is read: lazy binds end each entry with `DONE`.
fn bound_symbols(bytes: &[u8], what: &str, bound: &mut Vec<String>) -> Result<(), Error> {
    let mut at = 0usize;
    let mut symbol: Option<String> = None;
    let truncated = |at: usize| Error::Malformed(format!("{what} opcodes truncated at {at:#x}"));
    while let Some(&byte) = bytes.get(at) {
        at += 1;
        match byte & 0xf0 {
            DONE | SET_DYLIB_ORDINAL_IMM | SET_DYLIB_SPECIAL_IMM | SET_TYPE_IMM => {}
            SET_DYLIB_ORDINAL_ULEB
            | SET_ADDEND_SLEB
            | SET_SEGMENT_AND_OFFSET_ULEB
            | ADD_ADDR_ULEB => {
                at = skip_leb(bytes, at).ok_or_else(|| truncated(at))?;
            }
            SET_SYMBOL_TRAILING_FLAGS_IMM => {
                let rest = bytes.get(at..).ok_or_else(|| truncated(at))?;
                let len = rest
                    .iter()
                    .position(|&c| c == 0)
                    .ok_or_else(|| truncated(at))?;
                symbol = Some(String::from_utf8_lossy(&rest[..len]).into_owned());
                at += len + 1;
            }
            DO_BIND
            | DO_BIND_ADD_ADDR_ULEB
            | DO_BIND_ADD_ADDR_IMM_SCALED
            | DO_BIND_ULEB_TIMES_SKIPPING_ULEB
            | THREADED => {
                bound.push(
                    symbol
                        .clone()
                        .unwrap_or_else(|| "<bind without a symbol>".to_owned()),
                );
                match byte & 0xf0 {
                    DO_BIND_ADD_ADDR_ULEB => {
                        at = skip_leb(bytes, at).ok_or_else(|| truncated(at))?;
                    }
                    DO_BIND_ULEB_TIMES_SKIPPING_ULEB => {
                        at = skip_leb(bytes, at).ok_or_else(|| truncated(at))?;
                        at = skip_leb(bytes, at).ok_or_else(|| truncated(at))?;
                    }
                    THREADED if byte & 0x0f == 0 => {
                        // THREADED_SET_BIND_ORDINAL_TABLE_SIZE_ULEB
                        at = skip_leb(bytes, at).ok_or_else(|| truncated(at))?;
                    }
                    _ => {}
                }
            }
            _ => {
                return Err(Error::Malformed(format!(
                    "{what} opcode {byte:#04x} at {:#x} is unknown",
                    at - 1
                )));
            }
        }
    }
    Ok(())
}

/// The offset just past the (U or S)LEB128 number at `at`.
fn skip_leb(bytes: &[u8], at: usize) -> Option<usize> {
    let len = bytes.get(at..)?.iter().position(|&b| b & 0x80 == 0)?;
    Some(at + len + 1)
}

/// Walks every chain and writes each rebased pointer's address into the
/// loaded segment; a bind is an [`Error::Import`] naming the symbol.
pub(crate) fn apply_chained_fixups(
    command: &macho::LinkeditDataCommand<Endianness>,
    endian: Endianness,
    data: &[u8],
    base: u64,
    segments: &mut [LoadedSegment<'_>],
) -> Result<(), Error> {
    let malformed = |error: object::Error| Error::Malformed(format!("chained fixups: {error}"));
    let fixups = command.chained_fixups(endian, data).map_err(malformed)?;
    let header = fixups.header();
    let version = header.fixups_version.get(endian);
    if version != 0 {
        return Err(Error::Unsupported(format!(
            "chained fixups version {version}"
        )));
    }
    let mut chains = fixups.segments(endian).map_err(malformed)?;
    while let Some(chain) = chains.next().map_err(malformed)? {
        let index = chain.index() as usize;
        let starts = chain.header();
        let format = starts.pointer_format.get(endian);
        if format != macho::DYLD_CHAINED_PTR_64 && format != macho::DYLD_CHAINED_PTR_64_OFFSET {
            return Err(Error::Unsupported(format!(
                "chained pointer format {} (only DYLD_CHAINED_PTR_64 and DYLD_CHAINED_PTR_64_OFFSET)",
                format.0
            )));
        }
        let loaded = segments
            .iter_mut()
            .find(|loaded| loaded.index == index)
            .ok_or_else(|| {
                Error::Malformed(format!(
                    "chained fixups for segment {index}, which maps nothing"
                ))
            })?;
        let segment_offset = starts.segment_offset.get(endian);
        if base.checked_add(segment_offset) != Some(loaded.segment.vmaddr) {
            return Err(Error::Malformed(format!(
                "chained fixups place segment {} at image offset {segment_offset:#x}, but it is at {:#x}",
                loaded.segment.name, loaded.segment.vmaddr
            )));
        }
        let mut slots = chain.fixups(endian, base, loaded.file_bytes);
        while let Some((offset, fixup)) = slots.next().map_err(malformed)? {
            let value = match fixup {
                Fixup::Rebase(rebase) if rebase.auth.is_none() => {
                    // The low 56 bits are the target's offset in the image,
                    // the top 8 bits (`high8`) go back on unchanged.
                    let high8 = rebase.target_offset & 0xff00_0000_0000_0000;
                    base.wrapping_add(rebase.target_offset & !0xff00_0000_0000_0000) | high8
                }
                Fixup::Bind(bind) => {
                    return Err(Error::Import {
                        symbol: import_name(&fixups, endian, bind.ordinal)?,
                    });
                }
                other => {
                    return Err(Error::Unsupported(format!(
                        "chained fixup {other:?} in segment {}",
                        loaded.segment.name
                    )));
                }
            };
            let slot = usize::try_from(offset)
                .ok()
                .and_then(|start| loaded.segment.data.get_mut(start..start.checked_add(8)?))
                .ok_or_else(|| {
                    Error::Malformed(format!(
                        "chained fixup at offset {offset:#x} is past the end of segment {}",
                        loaded.segment.name
                    ))
                })?;
            slot.copy_from_slice(&value.to_le_bytes());
        }
    }
    Ok(())
}

fn import_name(
    fixups: &object::read::macho::DyldChainedFixups<'_, Endianness>,
    endian: Endianness,
    ordinal: u32,
) -> Result<String, Error> {
    let malformed = |error: object::Error| Error::Malformed(format!("chained fixups: {error}"));
    let mut imports = fixups.imports(endian).map_err(malformed)?;
    let mut index = 0u32;
    while let Some(import) = imports.next().map_err(malformed)? {
        if index == ordinal {
            return Ok(String::from_utf8_lossy(import.name).into_owned());
        }
        index += 1;
    }
    Err(Error::Malformed(format!(
        "chained bind to import {ordinal}, past the {index} imports"
    )))
}
