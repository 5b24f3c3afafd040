//! The edits to the output's allocated bytes, each at its new address, and
//! the pointer encodings of `.eh_frame` read and written again.

use crate::pin::Pins;
use anyhow::bail;
use rayon::slice::ParallelSliceMut;

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
/// address, when the output is written ([`Writes::settle`]).
#[derive(Debug, Default)]
pub struct Writes {
    /// The writes made here.
    made: Vec<Write>,
    /// The writes of every `Writes` appended ([`Writes::append`]), each
    /// kept as it came rather than copied onto the end of `made`: a
    /// vector grown to a million entries doubles at the next push.
    appended: Vec<Vec<Write>>,
    /// The bytes of every write, one after another.
    bytes: Vec<u8>,
    /// A write did not fit [`Write`]'s fields (more than 4 GiB of bytes
    /// written, or one write of 2 GiB): settling fails.
    overflowed: bool,
}

/// One write: its bytes are `Writes::bytes[at..at + len]`. Sixteen bytes,
/// as there are a million of them at shrink's peak of memory.
#[derive(Debug, Clone, Copy)]
struct Write {
    address: u64,
    at: u32,
    /// The length, and in its top bit whether the write is made over
    /// whatever was planned at `address` ([`Writes::replace`]).
    len_and_replaces: u32,
}

const REPLACES: u32 = 1 << 31;

impl Write {
    fn range(&self) -> std::ops::Range<usize> {
        let at = self.at as usize;
        at..at + (self.len_and_replaces & !REPLACES) as usize
    }

    fn replaces(&self) -> bool {
        self.len_and_replaces & REPLACES != 0
    }
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

    /// Every write of `other`, as if made after this one's, kept as a
    /// run of its own (not copied): for a large `other`.
    pub fn append(&mut self, other: Writes) {
        for mut run in self.rebased(other) {
            run.shrink_to_fit();
            self.appended.push(run);
        }
    }

    /// Every write of `other`, as if made after this one's, copied onto
    /// this one's: for a small `other` (one piece of code's).
    pub fn extend(&mut self, other: Writes) {
        for run in self.rebased(other) {
            self.made.extend(run);
        }
    }

    /// `other`'s bytes moved onto the end of these, and its writes, each
    /// run as it was, pointing at them there.
    fn rebased(&mut self, other: Writes) -> Vec<Vec<Write>> {
        let Ok(base) = u32::try_from(self.bytes.len()) else {
            self.overflowed = true;
            return Vec::new();
        };
        self.overflowed |= other.overflowed;
        self.bytes.extend_from_slice(&other.bytes);
        let mut runs = other.appended;
        runs.insert(0, other.made);
        for write in runs.iter_mut().flatten() {
            match write.at.checked_add(base) {
                Some(at) => write.at = at,
                None => self.overflowed = true,
            }
        }
        runs
    }

    fn record(&mut self, address: u64, bytes: &[u8], replaces: bool) {
        let (Ok(at), Ok(len)) = (u32::try_from(self.bytes.len()), u32::try_from(bytes.len()))
        else {
            self.overflowed = true;
            return;
        };
        if len & REPLACES != 0 {
            self.overflowed = true;
            return;
        }
        self.made.push(Write {
            address,
            at,
            len_and_replaces: len | if replaces { REPLACES } else { 0 },
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
        if self.overflowed {
            bail!("the patches to the output exceed 4 GiB, or one of them 2 GiB");
        }
        let appended = std::mem::take(&mut self.appended);
        self.made.reserve_exact(appended.iter().map(Vec::len).sum());
        for made in appended {
            self.made.extend(made);
        }
        // The keys are distinct (`at` is): any sort gives the one order.
        self.made
            .par_sort_unstable_by_key(|write| (write.address, write.at));
        let bytes = &self.bytes;
        let value = move |write: &Write| &bytes[write.range()];
        // From the last replacing write at an address on (or all of them).
        let from = |writes: &[Write]| writes.iter().rposition(Write::replaces).unwrap_or(0);
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

    fn settled(writes: &mut Writes) -> anyhow::Result<Vec<(u64, Vec<u8>)>> {
        Ok(writes
            .settle()?
            .map(|(address, bytes)| (address, bytes.to_vec()))
            .collect())
    }

    #[test]
    fn appended_and_extended_writes_settle_as_if_made_in_order() {
        let mut writes = Writes::default();
        writes.put(8, [1]);
        let mut later = Writes::default();
        later.replace(8, [2]);
        later.put(16, [3, 3]);
        let mut run = Writes::default();
        run.put(24, [4]);
        later.append(run);
        writes.append(later);
        let mut small = Writes::default();
        small.put(16, [3, 3]);
        small.put(8, [2]);
        writes.extend(small);
        writes.put(4, [9]);
        assert_eq!(
            settled(&mut writes).expect("agree"),
            vec![(4, vec![9]), (8, vec![2]), (16, vec![3, 3]), (24, vec![4])]
        );
        let mut disagreeing = Writes::default();
        disagreeing.put(24, [5]);
        writes.append(disagreeing);
        assert!(
            settled(&mut writes).is_err(),
            "an appended write is checked against the others at its place"
        );
    }
}
