//! The edits to the output's allocated bytes, each at its new address, and
//! the pointer encodings of `.eh_frame` read and written again.

use crate::pin::Pins;
use anyhow::bail;

/// The kept relocation sections written again: (section index, bytes).
pub(crate) type Rewritten = Vec<(usize, Vec<u8>)>;

/// Bytes to write at new addresses; two writes to one place must agree.
#[derive(Debug, Default)]
pub struct Patches {
    pub writes: Writes,
    /// Edits to sections no segment loads: (section index, offset, bytes).
    pub unloaded: Vec<(usize, u64, Vec<u8>)>,
    /// What no edit can make right in this layout: the functions to keep
    /// in place in the next.
    pub pins: Pins,
}

impl Patches {
    /// See [`Writes::replace`].
    pub fn replace(&mut self, address: u64, bytes: impl AsRef<[u8]>) {
        self.writes.replace(address, bytes);
    }

    /// See [`Writes::put`].
    pub fn put(&mut self, address: u64, bytes: impl AsRef<[u8]>) {
        self.writes.put(address, bytes);
    }

    /// Everything `other` plans, as if planned after this.
    pub(crate) fn append(&mut self, other: Patches) {
        self.writes.append(other.writes);
        self.unloaded.extend(other.unloaded);
        self.pins.append(other.pins);
    }
}

/// Writes at new addresses, recorded in the order made (a million of them
/// in an LLVM-size program, most four bytes long) and settled once, by
/// address, when the output is written ([`Writes::settled`]).
#[derive(Debug, Default)]
pub struct Writes {
    made: Vec<Write>,
    /// The bytes of every write, one after another.
    bytes: Vec<u8>,
}

/// One write: its bytes are `Writes::bytes[at..at + len]`.
#[derive(Debug, Clone, Copy)]
struct Write {
    address: u64,
    at: usize,
    len: usize,
    /// Made over whatever was planned at `address` ([`Writes::replace`]).
    replaces: bool,
}

impl Writes {
    /// Writes `bytes` at `address` over whatever was planned there: a
    /// field written from its kept relocation over what decoding guessed.
    pub fn replace(&mut self, address: u64, bytes: impl AsRef<[u8]>) {
        self.record(address, bytes.as_ref(), true);
    }

    /// Writes `bytes` at `address`; a different value planned there too
    /// is an error when the writes are settled.
    pub fn put(&mut self, address: u64, bytes: impl AsRef<[u8]>) {
        self.record(address, bytes.as_ref(), false);
    }

    /// Every write of `other`, as if made after this one's.
    pub fn append(&mut self, other: Writes) {
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.made.extend(other.made.into_iter().map(|write| Write {
            at: base + write.at,
            ..write
        }));
    }

    fn record(&mut self, address: u64, bytes: &[u8], replaces: bool) {
        self.made.push(Write {
            address,
            at: self.bytes.len(),
            len: bytes.len(),
            replaces,
        });
        self.bytes.extend_from_slice(bytes);
    }

    /// The bytes to write, one run per address in address order: at each
    /// address the last replacing write, or else the value every write
    /// there agrees on. Two different values put at one place (and not
    /// replaced after) are an error. Sorts the writes in place.
    pub fn settle(&mut self) -> anyhow::Result<impl Iterator<Item = (u64, &[u8])>> {
        // By address, then in the order made (`at` grows with each write):
        // no copy of a million writes, and no merge sort's buffer.
        self.made
            .sort_unstable_by_key(|write| (write.address, write.at));
        let bytes = &self.bytes;
        let value = move |write: &Write| &bytes[write.at..write.at + write.len];
        // From the last replacing write at an address on (or all of them).
        let from = |writes: &[Write]| writes.iter().rposition(|write| write.replaces).unwrap_or(0);
        for writes in self.made.chunk_by(|a, b| a.address == b.address) {
            let kept = value(&writes[from(writes)]);
            if let Some(other) = writes[from(writes)..]
                .iter()
                .find(|write| value(write) != kept)
            {
                bail!(
                    "two different values for the field at {:#x} ({kept:02x?} and {:02x?})",
                    other.address,
                    value(other)
                );
            }
        }
        Ok(self
            .made
            .chunk_by(|a, b| a.address == b.address)
            .map(move |writes| {
                let write = &writes[from(writes)];
                (write.address, value(write))
            }))
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
        let mut patches = Writes::default();
        patches.put(8, [1]);
        patches.put(8, [1]);
        let settled = |patches: &mut Writes| -> anyhow::Result<Vec<(u64, Vec<u8>)>> {
            Ok(patches
                .settle()?
                .map(|(address, bytes)| (address, bytes.to_vec()))
                .collect())
        };
        assert_eq!(settled(&mut patches).expect("agree"), vec![(8, vec![1])]);
        patches.put(8, [2]);
        assert!(settled(&mut patches).is_err(), "two values at one place");
        patches.replace(8, [3]);
        patches.put(4, [4, 4]);
        assert_eq!(
            settled(&mut patches).expect("replaced"),
            vec![(4, vec![4, 4]), (8, vec![3])]
        );
        patches.put(8, [5]);
        assert!(
            settled(&mut patches).is_err(),
            "a put after a replace must agree with it"
        );
    }
}
