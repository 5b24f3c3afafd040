//! LEB128 numbers, unsigned and zigzag-signed: the comparator key's
//! encoding ([`crate::body`]) and that of the entries icf keeps in its
//! cache. They are self-delimiting, so equal byte strings mean equal number
//! sequences.

/// Appends numbers to [`Writer::bytes`].
#[derive(Default, Debug)]
pub struct Writer {
    pub bytes: Vec<u8>,
}

impl Writer {
    pub fn unsigned(&mut self, mut value: u64) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                self.bytes.push(byte);
                return;
            }
            self.bytes.push(byte | 0x80);
        }
    }

    pub fn signed(&mut self, value: i64) {
        self.unsigned(((value << 1) ^ (value >> 63)) as u64);
    }

    /// A byte string, its length first.
    pub fn counted(&mut self, bytes: &[u8]) {
        self.unsigned(bytes.len() as u64);
        self.bytes.extend_from_slice(bytes);
    }
}

/// Reads what [`Writer`] wrote from the front of a slice, failing rather
/// than reading past its end or beyond 64 bits.
#[derive(Debug)]
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn unsigned(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.0.split_first()?;
            self.0 = rest;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                return None;
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    pub fn signed(&mut self) -> Option<i64> {
        let value = self.unsigned()?;
        Some(((value >> 1) as i64) ^ -((value & 1) as i64))
    }

    pub fn bytes(&mut self, length: usize) -> Option<&'a [u8]> {
        let (bytes, rest) = self.0.split_at_checked(length)?;
        self.0 = rest;
        Some(bytes)
    }

    /// A byte string [`Writer::counted`] wrote.
    pub fn counted(&mut self) -> Option<&'a [u8]> {
        let length = usize::try_from(self.unsigned()?).ok()?;
        self.bytes(length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_self_delimiting() {
        let encode = |values: &[i64]| {
            let mut w = Writer::default();
            for &v in values {
                w.signed(v);
            }
            w.bytes
        };
        assert_ne!(encode(&[1, 0]), encode(&[128]));
        assert_ne!(encode(&[-1]), encode(&[1]));
        assert_eq!(encode(&[i64::MIN, i64::MAX]).len(), 20);
        let mut w = Writer::default();
        w.unsigned(300);
        assert_eq!(w.bytes, [0xac, 0x02]);
    }

    #[test]
    fn numbers_read_back_and_overlong_ones_are_refused() {
        let values = [0, 1, -1, 63, -64, 300, i64::MIN, i64::MAX];
        let mut w = Writer::default();
        for v in values {
            w.signed(v);
        }
        w.unsigned(u64::MAX);
        w.counted(b"abc");
        let mut r = Reader(&w.bytes);
        for v in values {
            assert_eq!(r.signed(), Some(v));
        }
        assert_eq!(r.unsigned(), Some(u64::MAX));
        assert_eq!(r.counted(), Some(&b"abc"[..]));
        assert_eq!(r.unsigned(), None);
        // Eleven bytes, or a tenth byte carrying more than bit 63.
        assert_eq!(Reader(&[0x80; 10]).unsigned(), None);
        assert_eq!(
            Reader(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]).unsigned(),
            None
        );
        assert_eq!(Reader(&[0x05]).counted(), None);
    }
}
