//! Function prototypes from DWARF (programs built with `-g`): which
//! functions return their value in one register at most, so that what
//! their code leaves in `rdx` at a return is no second return value (the
//! x86-64 escape scan, `x86_escape.rs`, otherwise takes the widest
//! convention: a 9- to 16-byte value comes back in `rax:rdx`). Main
//! assumption: the DWARF describes the code it is linked with (the same
//! compilation); a function it does not describe, or whose return type it
//! names no size for, keeps the widest convention.

use gimli::{
    AttributeValue, DebuggingInformationEntry, Dwarf, EndianSlice, LittleEndian, Reader, SectionId,
    Unit, UnitOffset, constants,
};

use crate::image::Image;

type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// What `image`'s DWARF says of its functions' calling conventions.
#[derive(Default)]
pub(crate) struct Prototypes {
    /// Entry addresses of the functions whose return value has no more
    /// than 8 bytes, more than 16 (returned in memory) or none, sorted.
    pub single_register_returns: Vec<u64>,
    /// (entry address, how many argument registers it may read), sorted,
    /// for functions with a fixed list of parameters of at most 8 bytes
    /// each, declared in the source as compiled (not a compiler's clone,
    /// whose parameters may differ from what the DWARF names).
    pub argument_registers: Vec<(u64, u8)>,
    /// Entry addresses of the functions that return an integer, pointer or
    /// enumeration of at most 8 bytes: in the first integer register,
    /// which a call to them therefore writes, sorted.
    pub integer_returns: Vec<u64>,
    /// (entry address, bytes) of the functions declared with an alignment
    /// (`DW_AT_alignment`: GCC writes it for `aligned(N)`; clang does not),
    /// sorted.
    pub declared_alignments: Vec<(u64, u64)>,
}

/// The prototypes `image`'s DWARF gives (none without `.debug_info`).
pub(crate) fn prototypes(image: &Image) -> Prototypes {
    let mut found = Prototypes::default();
    if image.section_contents(".debug_info").is_none() {
        return found;
    }
    let load = |id: SectionId| -> Result<Slice<'_>, gimli::Error> {
        Ok(EndianSlice::new(
            image.section_contents(id.name()).unwrap_or(&[]),
            LittleEndian,
        ))
    };
    let Ok(dwarf) = Dwarf::load(load) else {
        return found;
    };
    let mut headers = dwarf.units();
    while let Ok(Some(header)) = headers.next() {
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        let mut entries = unit.entries();
        while let Ok(Some(entry)) = entries.next_dfs() {
            if entry.tag() != constants::DW_TAG_subprogram {
                continue;
            }
            let Some(low_pc) = entry
                .attr_value(constants::DW_AT_low_pc)
                .and_then(|value| dwarf.attr_address(&unit, value).ok().flatten())
            else {
                continue;
            };
            // A function the linker dropped keeps its DWARF at address 0
            // (or a tombstone).
            if low_pc == 0 || low_pc == u64::MAX || low_pc == u64::MAX - 1 {
                continue;
            }
            if let Some(size) = return_size(&unit, entry)
                && !(9..=16).contains(&size)
            {
                found.single_register_returns.push(low_pc);
            }
            if returns_integer(&unit, entry) {
                found.integer_returns.push(low_pc);
            }
            if let Some(alignment) = entry
                .attr_value(constants::DW_AT_alignment)
                .and_then(|value| value.udata_value())
                .filter(|a| a.is_power_of_two())
            {
                found.declared_alignments.push((low_pc, alignment));
            }
            // A value returned in memory comes back through a pointer the
            // caller passes: in the first argument register on x86-64
            // (the parameters move up one), in x8 on AArch64 (counted
            // here too, to stay on the side of reading more).
            let hidden_result_pointer = returns_in_memory(&unit, entry);
            if let Some(count) = argument_registers(&unit, entry)
                .and_then(|count| count.checked_add(u8::from(hidden_result_pointer)))
            {
                found.argument_registers.push((low_pc, count));
            }
        }
    }
    found.single_register_returns.sort_unstable();
    found.single_register_returns.dedup();
    found.integer_returns.sort_unstable();
    found.integer_returns.dedup();
    found.argument_registers.sort_unstable();
    found.declared_alignments.sort_unstable();
    found.declared_alignments.dedup();
    // An address two prototypes claim says nothing.
    let claimed_twice: Vec<u64> = found
        .argument_registers
        .windows(2)
        .filter(|pair| pair[0].0 == pair[1].0)
        .map(|pair| pair[0].0)
        .collect();
    found
        .argument_registers
        .retain(|(address, _)| !claimed_twice.contains(address));
    found
}

/// FOLDED's prototypes, carried over from PLAIN's (`plain_prototypes`) by
/// symbol: each PLAIN function's facts hold at its counterpart's address
/// in FOLDED (the same function, or its thunk, which jumps to identical
/// code). FOLDED's own DWARF is not read: a post-link shrinker may leave it
/// empty or stale, and the proof's assumptions should all come from one
/// image. Where several PLAIN functions land on one FOLDED address (an
/// alias), a fact holds only when every one of them has it; the argument
/// registers read are the most any of them reads (unknown if one is).
pub(crate) fn carried_over(
    plain_prototypes: &Prototypes,
    plain: &Image,
    folded: &Image,
) -> Prototypes {
    use std::collections::BTreeMap;
    #[derive(Clone, Copy)]
    struct Facts {
        single_register_return: bool,
        integer_return: bool,
        arguments: Option<u8>,
        alignment: Option<u64>,
    }
    let has = |list: &[u64], address: u64| list.binary_search(&address).is_ok();
    let keyed = |list: &[(u64, u64)], address: u64| {
        let i = list.partition_point(|&(at, _)| at < address);
        list.get(i)
            .filter(|&&(at, _)| at == address)
            .map(|&(_, v)| v)
    };
    let mut at: BTreeMap<u64, Facts> = BTreeMap::new();
    for (index, symbol) in plain.symbols.iter().enumerate() {
        if symbol.kind != crate::image::SymbolKind::Function {
            continue;
        }
        let Some(counterpart) = u32::try_from(index)
            .ok()
            .and_then(|index| folded.counterpart(plain, crate::image::SymbolId(index)))
        else {
            continue;
        };
        let a = symbol.address;
        let i = plain_prototypes
            .argument_registers
            .partition_point(|&(entry, _)| entry < a);
        let facts = Facts {
            single_register_return: has(&plain_prototypes.single_register_returns, a),
            integer_return: has(&plain_prototypes.integer_returns, a),
            arguments: plain_prototypes
                .argument_registers
                .get(i)
                .filter(|&&(entry, _)| entry == a)
                .map(|&(_, count)| count),
            alignment: keyed(&plain_prototypes.declared_alignments, a),
        };
        at.entry(folded.symbol(counterpart).address)
            .and_modify(|known| {
                known.single_register_return &= facts.single_register_return;
                known.integer_return &= facts.integer_return;
                known.arguments = known.arguments.zip(facts.arguments).map(|(x, y)| x.max(y));
                known.alignment = known.alignment.max(facts.alignment);
            })
            .or_insert(facts);
    }
    let mut carried = Prototypes::default();
    for (&address, facts) in &at {
        if facts.single_register_return {
            carried.single_register_returns.push(address);
        }
        if facts.integer_return {
            carried.integer_returns.push(address);
        }
        if let Some(count) = facts.arguments {
            carried.argument_registers.push((address, count));
        }
        if let Some(alignment) = facts.alignment {
            carried.declared_alignments.push((address, alignment));
        }
    }
    carried
}

/// How many argument registers the function `entry` reads: one per
/// parameter, each of at most 8 bytes; `None` for a variadic function, a
/// larger parameter, or a definition that refers to another DIE (an
/// out-of-line or cloned instance, whose parameters the compiler may have
/// changed).
fn argument_registers<R: Reader>(
    unit: &Unit<R>,
    entry: &DebuggingInformationEntry<R>,
) -> Option<u8> {
    if entry.attr_value(constants::DW_AT_abstract_origin).is_some()
        || entry.attr_value(constants::DW_AT_specification).is_some()
    {
        return None;
    }
    let mut tree = unit.entries_tree(Some(entry.offset())).ok()?;
    let root = tree.root().ok()?;
    let mut children = root.children();
    let mut count = 0u8;
    while let Ok(Some(child)) = children.next() {
        let child = child.entry();
        match child.tag() {
            constants::DW_TAG_formal_parameter => {
                let size = type_size(unit, local(child.attr_value(constants::DW_AT_type)?)?)?;
                if size == 0 || size > 8 {
                    return None;
                }
                count = count.checked_add(1)?;
            }
            constants::DW_TAG_unspecified_parameters => return None,
            _ => {}
        }
    }
    Some(count)
}

/// The byte size of what the function `entry` returns (0 for `void`), if
/// the DWARF says.
fn return_size<R: Reader>(unit: &Unit<R>, entry: &DebuggingInformationEntry<R>) -> Option<u64> {
    match return_type(unit, entry)? {
        Some(offset) => type_size(unit, offset),
        None => Some(0),
    }
}

/// Whether the function `entry` may return its value in memory, through a
/// pointer its caller passes: a value of more than 16 bytes, a structure,
/// class or union of any size (C++ returns one that is not trivially
/// copyable that way), or a return type the DWARF does not make known.
fn returns_in_memory<R: Reader>(unit: &Unit<R>, entry: &DebuggingInformationEntry<R>) -> bool {
    let Some(returned) = return_type(unit, entry) else {
        return true;
    };
    let Some(offset) = returned else {
        return false;
    };
    type_size(unit, offset).is_none_or(|size| size > 16) || is_composite(unit, offset)
}

/// The type the function `entry` returns (`Some(None)` for `void`): its
/// `DW_AT_type`, or its declaration's (`DW_AT_specification`,
/// `DW_AT_abstract_origin`) in the same unit.
fn return_type<R: Reader>(
    unit: &Unit<R>,
    entry: &DebuggingInformationEntry<R>,
) -> Option<Option<UnitOffset<R::Offset>>> {
    let mut entry = entry.clone();
    for _ in 0..8 {
        if let Some(value) = entry.attr_value(constants::DW_AT_type) {
            return Some(Some(local(value)?));
        }
        let origin = [
            constants::DW_AT_specification,
            constants::DW_AT_abstract_origin,
        ]
        .into_iter()
        .find_map(|name| entry.attr_value(name));
        match origin {
            Some(value) => entry = unit.entry(local(value)?).ok()?,
            None => return Some(None),
        }
    }
    None
}

/// Whether the function `entry` returns an integer, pointer or enumeration
/// of at most 8 bytes (not a floating-point value, which comes back in a
/// vector register, nor a structure).
fn returns_integer<R: Reader>(unit: &Unit<R>, entry: &DebuggingInformationEntry<R>) -> bool {
    let Some(Some(offset)) = return_type(unit, entry) else {
        return false;
    };
    let Some(returned) = underlying(unit, offset) else {
        return false;
    };
    let small = byte_size(&returned).is_none_or(|size| size <= 8);
    match returned.tag() {
        constants::DW_TAG_pointer_type
        | constants::DW_TAG_reference_type
        | constants::DW_TAG_rvalue_reference_type => small,
        constants::DW_TAG_enumeration_type => small && byte_size(&returned).is_some(),
        constants::DW_TAG_base_type => {
            let integer = matches!(
                returned.attr_value(constants::DW_AT_encoding),
                Some(AttributeValue::Encoding(
                    constants::DW_ATE_signed
                        | constants::DW_ATE_unsigned
                        | constants::DW_ATE_signed_char
                        | constants::DW_ATE_unsigned_char
                        | constants::DW_ATE_boolean
                ))
            );
            integer && small && byte_size(&returned).is_some()
        }
        _ => false,
    }
}

/// Whether the type at `offset` is, through typedefs and qualifiers, a
/// structure, class or union (`true` when the chain cannot be followed).
fn is_composite<R: Reader>(unit: &Unit<R>, offset: UnitOffset<R::Offset>) -> bool {
    underlying(unit, offset).is_none_or(|entry| {
        matches!(
            entry.tag(),
            constants::DW_TAG_structure_type
                | constants::DW_TAG_class_type
                | constants::DW_TAG_union_type
        )
    })
}

/// The size of the type at `offset`, through typedefs and qualifiers.
fn type_size<R: Reader>(unit: &Unit<R>, offset: UnitOffset<R::Offset>) -> Option<u64> {
    let entry = underlying(unit, offset)?;
    match entry.tag() {
        constants::DW_TAG_pointer_type
        | constants::DW_TAG_reference_type
        | constants::DW_TAG_rvalue_reference_type => Some(byte_size(&entry).unwrap_or(8)),
        constants::DW_TAG_base_type
        | constants::DW_TAG_enumeration_type
        | constants::DW_TAG_structure_type
        | constants::DW_TAG_class_type
        | constants::DW_TAG_union_type => byte_size(&entry),
        _ => None,
    }
}

/// The type at `offset` with typedefs and qualifiers looked through.
fn underlying<R: Reader>(
    unit: &Unit<R>,
    mut offset: UnitOffset<R::Offset>,
) -> Option<DebuggingInformationEntry<R>> {
    for _ in 0..32 {
        let entry = unit.entry(offset).ok()?;
        match entry.tag() {
            constants::DW_TAG_typedef
            | constants::DW_TAG_const_type
            | constants::DW_TAG_volatile_type
            | constants::DW_TAG_restrict_type
            | constants::DW_TAG_atomic_type => {
                offset = local(entry.attr_value(constants::DW_AT_type)?)?;
            }
            _ => return Some(entry),
        }
    }
    None
}

fn byte_size<R: Reader>(entry: &DebuggingInformationEntry<R>) -> Option<u64> {
    entry.attr_value(constants::DW_AT_byte_size)?.udata_value()
}

/// A reference inside the unit.
fn local<R: Reader>(value: AttributeValue<R>) -> Option<UnitOffset<R::Offset>> {
    match value {
        AttributeValue::UnitRef(offset) => Some(offset),
        _ => None,
    }
}
