//! The type table of an LSDA (a function's exception table in
//! `.gcc_except_table`): where its entries lie and how they are encoded,
//! for the image reader to give each entry the relocation an assembler
//! writes there.
//!
//! An object's LSDA names the `std::type_info` of each type it catches
//! with a relocation; a linked image has filled the field in. With a
//! PC-relative encoding (what gcc and clang write in position-independent
//! code, and on AArch64 always) two identical LSDAs at different places
//! then hold different bytes although they name the same type.
//!
//! Layout (the Itanium C++ ABI's, as libgcc's `__gcc_personality_v0` and
//! libstdc++'s `__gxx_personality_v0` read it): the `@LPStart` encoding
//! and pointer, the `@TType` encoding and the ULEB128 offset from after it
//! to the type table's base, the call-site encoding, the ULEB128 length of
//! the call-site table and its records (start, length, landing pad, action
//! as ULEB128), then the action table. Entry `n` of the type table (a
//! positive filter `n` in an action record) lies `n` entries before the
//! base; a negative filter `-k` names the exception specification at
//! `base + k - 1`, a list of ULEB128 type indices ending with 0. The table
//! has no length: its extent is the largest index any action record
//! names.
//!
//! Anything malformed gives no entries: the image's LSDA is then compared
//! byte for byte, which can only miss a fold.

/// `DW_EH_PE_omit`: no value.
const OMIT: u8 = 0xff;

/// The type table of one LSDA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TypeTable {
    /// The `@TType` encoding (`DW_EH_PE_*`).
    pub encoding: u8,
    /// The offset of each entry from the LSDA's first byte, entry 1 first.
    pub entries: Vec<u64>,
    /// The size of an entry.
    pub entry_size: u8,
}

/// Reads the type table of the LSDA at the start of `lsda` (which may run
/// on past its end: the rest of the section).
pub(crate) fn type_table(lsda: &[u8]) -> Option<TypeTable> {
    let mut cursor = Cursor { data: lsda, at: 0 };
    let lp_start = cursor.byte()?;
    if lp_start != OMIT {
        cursor.skip_encoded(lp_start)?;
    }
    let encoding = cursor.byte()?;
    if encoding == OMIT {
        return None;
    }
    let entry_size = fixed_size(encoding)?;
    let to_base = cursor.uleb128()?;
    let base = cursor.at.checked_add(usize::try_from(to_base).ok()?)?;
    // The call-site table, then the action table: its records, pairs of
    // SLEB128 (a filter, the distance to the next record), run up to the
    // type table's first entry, with alignment padding (zero records) in
    // between. Every record is read, not only those the call sites name:
    // the LSDA of a function's `.cold` part shares the action and type
    // tables of the whole function although its own call sites may name
    // no action.
    // The call-site encoding.
    cursor.byte()?;
    let call_sites_length = usize::try_from(cursor.uleb128()?).ok()?;
    cursor.at = cursor.at.checked_add(call_sites_length)?;
    if cursor.at > lsda.len() || base > lsda.len() {
        return None;
    }
    let size = usize::from(entry_size);
    let mut largest = 0usize;
    while cursor.at < base.checked_sub(largest.checked_mul(size)?)? {
        let filter = cursor.sleb128()?;
        cursor.sleb128()?;
        let index = if filter >= 0 {
            usize::try_from(filter).ok()?
        } else {
            let spec = base.checked_add(usize::try_from(filter.unsigned_abs() - 1).ok()?)?;
            largest_in_specification(lsda, spec)?
        };
        largest = largest.max(index);
    }
    let entries = (1..=largest).map(|n| (base - n * size) as u64).collect();
    Some(TypeTable {
        encoding,
        entries,
        entry_size,
    })
}

/// The largest type index of the exception specification at `at`: a list
/// of ULEB128 indices ending with 0.
fn largest_in_specification(lsda: &[u8], at: usize) -> Option<usize> {
    let mut list = Cursor { data: lsda, at };
    let mut largest = 0;
    loop {
        match list.uleb128()? {
            0 => return Some(largest),
            index => largest = largest.max(usize::try_from(index).ok()?),
        }
    }
}

/// The size of a value of `encoding` that has a fixed size.
fn fixed_size(encoding: u8) -> Option<u8> {
    match encoding & 0x0f {
        0x00 => Some(8), // absptr (64-bit targets)
        0x02 | 0x0a => Some(2),
        0x03 | 0x0b => Some(4),
        0x04 | 0x0c => Some(8),
        _ => None,
    }
}

struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let byte = *self.data.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    fn uleb128(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    fn sleb128(&mut self) -> Option<i64> {
        let mut value = 0i64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= i64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                if shift + 7 < 64 && byte & 0x40 != 0 {
                    value |= -1i64 << (shift + 7);
                }
                return Some(value);
            }
        }
        None
    }

    /// Steps over a value of `encoding`.
    fn skip_encoded(&mut self, encoding: u8) -> Option<()> {
        match encoding & 0x0f {
            0x01 => self.uleb128().map(drop),
            0x09 => self.sleb128().map(drop),
            _ => {
                let size = usize::from(fixed_size(encoding)?);
                self.at = self.at.checked_add(size)?;
                (self.at <= self.data.len()).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catch_clause_names_one_entry_below_the_base() {
        // gcc's LSDA for `try { ... } catch (int)` in PIC code: no
        // @LPStart; @TType indirect|pcrel|sdata4, base 13 bytes on; one
        // ULEB128 call site (start 4, length 5, landing pad 14, action 1);
        // action 1: filter 1, no next; two bytes of alignment; the entry.
        let lsda = [
            0xff, 0x9b, 0x0d, 0x01, 0x04, 0x04, 0x05, 0x0e, 0x01, 0x01, 0x00, 0x00, 0x84, 0x1d,
            0x00, 0x00,
        ];
        assert_eq!(
            type_table(&lsda),
            Some(TypeTable {
                encoding: 0x9b,
                entries: vec![12],
                entry_size: 4,
            })
        );
    }

    #[test]
    fn chained_actions_and_exception_specifications_name_their_types() {
        // Call site with action 1: filter 2, next -> filter -1 (the
        // specification at the base: types 3 and 1, then 0).
        let mut lsda = vec![0xff, 0x1b, 0x00, 0x01, 0x04, 0x00, 0x01, 0x02, 0x01];
        // Actions at offset 9: (2, +1) then (-1, 0).
        lsda.extend([0x02, 0x01, 0x7f, 0x00]);
        // Three entries of 4 bytes, then the base and the specification.
        lsda.extend([0u8; 12]);
        let base = lsda.len();
        lsda.extend([0x03, 0x01, 0x00]);
        lsda[2] = (base - 3) as u8;
        let table = type_table(&lsda).expect("a type table");
        assert_eq!(table.entry_size, 4);
        assert_eq!(
            table.entries,
            vec![base as u64 - 4, base as u64 - 8, base as u64 - 12]
        );
    }

    #[test]
    fn a_cold_part_s_lsda_names_the_types_of_its_action_table() {
        // gcc's LSDA for the `.cold` part of the function above: its one
        // call site has no action, but the action and type tables are the
        // whole function's.
        let lsda = [
            0xff, 0x9b, 0x0d, 0x01, 0x04, 0x21, 0x05, 0x00, 0x00, 0x01, 0x00, 0x00, 0x74, 0x1d,
            0x00, 0x00,
        ];
        let table = type_table(&lsda).expect("a type table");
        assert_eq!(table.entries, vec![12]);
    }

    #[test]
    fn cleanups_only_and_broken_tables_name_nothing() {
        // No type table at all.
        assert_eq!(type_table(&[0xff, 0xff, 0x01, 0x00]), None);
        // A call site table running past the end.
        assert_eq!(type_table(&[0xff, 0x9b, 0x08, 0x01, 0x40, 0x01]), None);
        // A type table base past the end.
        assert_eq!(
            type_table(&[0xff, 0x9b, 0x40, 0x01, 0x00, 0x01, 0x00]),
            None
        );
        // A filter naming more entries than lie below the base.
        assert_eq!(
            type_table(&[0xff, 0x9b, 0x04, 0x01, 0x00, 0x3f, 0x00, 0x00]),
            None
        );
    }
}
