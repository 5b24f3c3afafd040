//! The edits to the output's allocated bytes, each at its new address, and
//! the pointer encodings of `.eh_frame` read and written again.

use crate::pin::Pins;
use anyhow::bail;
use std::collections::BTreeMap;

/// The kept relocation sections written again: (section index, bytes).
pub(crate) type Rewritten = Vec<(usize, Vec<u8>)>;

/// Bytes to write at new addresses; two writes to one place must agree.
#[derive(Debug, Default)]
pub struct Patches {
    pub writes: BTreeMap<u64, Vec<u8>>,
    /// Edits to sections no segment loads: (section index, offset, bytes).
    pub unloaded: Vec<(usize, u64, Vec<u8>)>,
    /// What no edit can make right in this layout: the functions to keep
    /// in place in the next.
    pub pins: Pins,
}

impl Patches {
    /// Writes `bytes` at `address` over whatever was planned there: a
    /// field written from its kept relocation over what decoding guessed.
    pub fn replace(&mut self, address: u64, bytes: Vec<u8>) {
        self.writes.insert(address, bytes);
    }

    pub fn put(&mut self, address: u64, bytes: Vec<u8>) -> anyhow::Result<()> {
        if let Some(earlier) = self.writes.get(&address) {
            if *earlier != bytes {
                bail!(
                    "two different values for the field at {address:#x} ({earlier:02x?} and {bytes:02x?})"
                );
            }
            return Ok(());
        }
        self.writes.insert(address, bytes);
        Ok(())
    }
}

/// A DWARF exception-header pointer encoding (`DW_EH_PE_*`) icf reads and writes.
#[derive(Copy, Clone, Debug)]
pub struct Encoding {
    pub size: usize,
    pub signed: bool,
    /// Relative to the field's own place (`DW_EH_PE_pcrel`).
    pub pc_relative: bool,
}

/// `DW_EH_PE_omit`.
pub const OMIT: u8 = 0xff;

impl Encoding {
    /// `None` for encodings linkers do not write in these fields
    /// (LEB128, `datarel`, `textrel`, `funcrel`, `aligned`).
    pub fn of(byte: u8) -> Option<Encoding> {
        let (size, signed) = match byte & 0x0f {
            0x00 => (8, false),
            0x02 => (2, false),
            0x03 => (4, false),
            0x04 => (8, false),
            0x0a => (2, true),
            0x0b => (4, true),
            0x0c => (8, true),
            _ => return None,
        };
        let pc_relative = match byte & 0x70 {
            0x00 => false,
            0x10 => true,
            _ => return None,
        };
        Some(Encoding {
            size,
            signed,
            pc_relative,
        })
    }

    /// The value of the field `bytes` (exactly `size` long).
    pub fn read(&self, bytes: &[u8]) -> Option<i64> {
        let mut word = [0u8; 8];
        word.get_mut(..self.size)?
            .copy_from_slice(bytes.get(..self.size)?);
        let raw = u64::from_le_bytes(word);
        let shift = 64 - 8 * self.size as u32;
        Some(if self.signed && shift > 0 {
            ((raw << shift) as i64) >> shift
        } else {
            raw as i64
        })
    }

    /// The address a field at `place` holding `value` names.
    pub fn target(&self, place: u64, value: i64) -> u64 {
        if self.pc_relative {
            place.wrapping_add(value as u64)
        } else {
            value as u64
        }
    }

    /// The bytes of a field at `place` naming `target`, or `None` when it
    /// does not fit.
    pub fn encode(&self, place: u64, target: u64) -> Option<Vec<u8>> {
        let value = if self.pc_relative {
            target.wrapping_sub(place) as i64
        } else {
            target as i64
        };
        let fits = match (self.size, self.signed) {
            (8, _) => true,
            (size, true) => {
                let limit = 1i64 << (8 * size - 1);
                (-limit..limit).contains(&value)
            }
            (size, false) => (0..1i64 << (8 * size)).contains(&value),
        };
        fits.then(|| value.to_le_bytes()[..self.size].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pc_relative_signed_words_round_trip() {
        let encoding = Encoding::of(0x1b).expect("pcrel sdata4");
        let bytes = encoding.encode(0x2000, 0x1000).expect("fits");
        let value = encoding.read(&bytes).expect("reads");
        assert_eq!(value, -0x1000);
        assert_eq!(encoding.target(0x2000, value), 0x1000);
        assert!(Encoding::of(0x01).is_none(), "uleb128");
        let mut patches = Patches::default();
        patches.put(8, vec![1]).expect("first");
        patches.put(8, vec![1]).expect("the same again");
        assert!(patches.put(8, vec![2]).is_err());
    }
}
