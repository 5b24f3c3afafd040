//! `.eh_frame` and `.eh_frame_hdr` after compaction.
//!
//! `.eh_frame` keeps its layout: every entry stays where it is (or moves
//! with its section), so CIE pointers need nothing. Each FDE's function
//! field is written again for the function's new address; the FDE of a
//! removed function (an alias or a thunk) keeps its place but describes
//! no code any more (its range becomes 0), so an unwinder never finds it.
//! LSDA and personality pointers are written again where their place or
//! target moved. `.eh_frame_hdr`'s sorted table is rebuilt from the FDEs
//! that still describe code.

use crate::elf::Elf;
use crate::layout::{Fate, Layout};
use crate::patch::{Encoding, OMIT, Patches};
use anyhow::{Context, bail};
use std::collections::HashMap;

/// One FDE as it will be in the output.
#[derive(Copy, Clone, Debug)]
struct KeptFde {
    /// Its new address.
    address: u64,
    /// The new address of its function.
    function: u64,
}

/// What a CIE says about the FDEs that use it.
#[derive(Copy, Clone, Debug)]
struct Cie {
    function: u8,
    lsda: u8,
    augmented: bool,
}

/// The unsigned LEB128 at `*at` of `bytes` (gimli reads it); `*at` moves past it.
fn uleb(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut cursor = crate::dwarf::Cursor {
        bytes,
        at: *at as u64,
    };
    let value = cursor.uleb().ok()?;
    *at = cursor.at as usize;
    Some(value)
}

/// Writes the pointer field at section offset `at` again (section at
/// `base`), when its place or its target moves.
fn repoint(
    bytes: &[u8],
    at: usize,
    encoding: Encoding,
    base: u64,
    layout: &Layout,
    patches: &mut Patches,
) -> anyhow::Result<u64> {
    let place = base + at as u64;
    let value = bytes
        .get(at..)
        .and_then(|b| encoding.read(b))
        .with_context(|| format!(".eh_frame+{at:#x}: field runs past the section"))?;
    let target = encoding.target(place, value);
    let (new_place, new_target) = (layout.map(place), layout.map(target));
    if new_place != place || new_target != target {
        let field = encoding.encode(new_place, new_target).with_context(|| {
            format!(".eh_frame+{at:#x}: {new_target:#x} does not fit the field")
        })?;
        patches.put(new_place, field)?;
    }
    Ok(target)
}

/// Patches `.eh_frame` (section `index`) and rebuilds `.eh_frame_hdr`.
/// Returns how many FDEs no longer describe code.
pub fn patch(elf: &Elf<'_>, layout: &Layout, patches: &mut Patches) -> anyhow::Result<usize> {
    let Some(index) = elf.section_named(".eh_frame") else {
        return Ok(0);
    };
    let bytes = elf.bytes(index);
    let base = elf.sections[index].addr;
    let located = |at: usize, what: &str| anyhow::anyhow!(".eh_frame+{at:#x}: {what}");
    let mut cies: HashMap<usize, Cie> = HashMap::new();
    let mut kept = Vec::new();
    let mut dropped = 0;
    let mut at = 0usize;
    while at + 4 <= bytes.len() {
        let length = u32::from_le_bytes(bytes[at..at + 4].try_into()?) as usize;
        if length == 0 {
            at += 4;
            continue;
        }
        if length == 0xffff_ffff {
            return Err(located(at, "64-bit entries are not read"));
        }
        let end = at + 4 + length;
        if end > bytes.len() {
            return Err(located(at, "entry runs past the section"));
        }
        let id_at = at + 4;
        let id = u32::from_le_bytes(bytes[id_at..id_at + 4].try_into()?) as usize;
        if id == 0 {
            let cie = read_cie(bytes, at, end, base, layout, patches)?;
            cies.insert(at, cie);
        } else {
            let cie_at = id_at
                .checked_sub(id)
                .ok_or_else(|| located(at, "CIE pointer before the section"))?;
            let cie = *cies
                .get(&cie_at)
                .ok_or_else(|| located(at, "FDE whose CIE is not an earlier entry"))?;
            let function = Encoding::of(cie.function)
                .ok_or_else(|| located(at, "unsupported function pointer encoding"))?;
            let function_at = id_at + 4;
            let range_at = function_at + function.size;
            let target = repoint(bytes, function_at, function, base, layout, patches)?;
            let range_encoding = Encoding {
                pc_relative: false,
                ..function
            };
            let range = bytes
                .get(range_at..)
                .and_then(|b| range_encoding.read(b))
                .ok_or_else(|| located(range_at, "range runs past the entry"))?;
            let removed = layout.is_removed_function(target);
            if removed && range != 0 {
                patches.put(layout.map(base + range_at as u64), vec![0; function.size])?;
                dropped += 1;
            } else if range != 0 {
                kept.push(KeptFde {
                    address: layout.map(base + at as u64),
                    function: layout.map(target),
                });
            }
            if cie.augmented && cie.lsda != OMIT {
                let mut lsda_at = range_at + function.size;
                uleb(bytes, &mut lsda_at).ok_or_else(|| located(at, "bad augmentation length"))?;
                let lsda = Encoding::of(cie.lsda)
                    .ok_or_else(|| located(at, "unsupported LSDA pointer encoding"))?;
                repoint(bytes, lsda_at, lsda, base, layout, patches)?;
            }
        }
        at = end;
    }
    rebuild_header(elf, layout, base, &mut kept, patches)?;
    Ok(dropped)
}

fn read_cie(
    bytes: &[u8],
    at: usize,
    end: usize,
    base: u64,
    layout: &Layout,
    patches: &mut Patches,
) -> anyhow::Result<Cie> {
    let bad = || anyhow::anyhow!(".eh_frame+{at:#x}: bad CIE");
    let entry = bytes.get(..end).ok_or_else(bad)?;
    let version = *entry.get(at + 8).ok_or_else(bad)?;
    let mut cursor = at + 9;
    let rest = entry.get(cursor..).ok_or_else(bad)?;
    let nul = rest.iter().position(|&b| b == 0).ok_or_else(bad)?;
    let augmentation = rest[..nul].to_vec();
    cursor += nul + 1;
    if version == 4 {
        cursor += 2;
    }
    uleb(entry, &mut cursor).ok_or_else(bad)?; // code alignment
    uleb(entry, &mut cursor).ok_or_else(bad)?; // data alignment (SLEB128, same length)
    if version == 1 {
        cursor += 1;
    } else {
        uleb(entry, &mut cursor).ok_or_else(bad)?;
    }
    let mut cie = Cie {
        function: 0,
        lsda: OMIT,
        augmented: augmentation.first() == Some(&b'z'),
    };
    if !cie.augmented {
        return Ok(cie);
    }
    uleb(entry, &mut cursor).ok_or_else(bad)?;
    for &letter in augmentation.get(1..).unwrap_or_default() {
        match letter {
            b'P' => {
                let byte = *entry.get(cursor).ok_or_else(bad)?;
                cursor += 1;
                let encoding = Encoding::of(byte & 0x7f).ok_or_else(|| {
                    anyhow::anyhow!(".eh_frame+{at:#x}: unsupported personality encoding {byte:#x}")
                })?;
                repoint(bytes, cursor, encoding, base, layout, patches)?;
                cursor += encoding.size;
            }
            b'L' => {
                cie.lsda = *entry.get(cursor).ok_or_else(bad)?;
                cursor += 1;
            }
            b'R' => {
                cie.function = *entry.get(cursor).ok_or_else(bad)?;
                cursor += 1;
            }
            b'S' | b'B' | b'G' => {}
            other => bail!(
                ".eh_frame+{at:#x}: unknown augmentation {:?}",
                char::from(other)
            ),
        }
    }
    Ok(cie)
}

/// `.eh_frame_hdr`: version 1, then the encodings of the `.eh_frame`
/// pointer, the count and the table, which must be the one linkers write
/// (`datarel | sdata4`: each function and FDE address from the header's
/// start).
fn rebuild_header(
    elf: &Elf<'_>,
    layout: &Layout,
    eh_frame: u64,
    kept: &mut [KeptFde],
    patches: &mut Patches,
) -> anyhow::Result<()> {
    let Some(index) = elf.section_named(".eh_frame_hdr") else {
        return Ok(());
    };
    let bytes = elf.bytes(index);
    let address = elf.sections[index].addr;
    let bad = |what: &str| anyhow::anyhow!(".eh_frame_hdr: {what}");
    let &[1, pointer_encoding, count_encoding, table_encoding, ..] = bytes else {
        return Err(bad("not version 1"));
    };
    if table_encoding != 0x3b || count_encoding != 0x03 {
        return Err(bad("a table encoding linkers do not write"));
    }
    let pointer =
        Encoding::of(pointer_encoding).ok_or_else(|| bad("unsupported pointer encoding"))?;
    let new_address = layout.map(address);
    let mut out = vec![1, pointer_encoding, count_encoding, table_encoding];
    out.extend(
        pointer
            .encode(new_address + 4, layout.map(eh_frame))
            .ok_or_else(|| bad(".eh_frame out of reach"))?,
    );
    let count_at = 4 + pointer.size;
    let old_count = bytes
        .get(count_at..count_at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| bad("truncated"))?;
    if (old_count as usize) < kept.len() {
        return Err(bad("lists fewer FDEs than .eh_frame holds"));
    }
    kept.sort_by_key(|fde| fde.function);
    out.extend((kept.len() as u32).to_le_bytes());
    for fde in kept.iter() {
        for value in [fde.function, fde.address] {
            let relative = value.wrapping_sub(new_address) as i64;
            let relative = i32::try_from(relative).map_err(|_| bad("an entry out of reach"))?;
            out.extend(relative.to_le_bytes());
        }
    }
    out.resize(bytes.len(), 0);
    patches.put(new_address, out)
}

impl Layout {
    /// Whether `address` starts (or lies in) a function whose body is gone:
    /// an alias or a thunk.
    pub fn is_removed_function(&self, address: u64) -> bool {
        self.fate_at(address)
            .is_some_and(|fate| matches!(fate, Fate::Alias(_) | Fate::Thunk(_)))
    }
}
