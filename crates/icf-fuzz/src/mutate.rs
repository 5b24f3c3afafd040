//! Structured mutation: one to four changes to a seed's bytes, most of them
//! to a meaningful field of its [`Layout`] with an interesting value (0, 1,
//! all ones, near the current value, near a count or size of the seed, a
//! value of the field's kind), the rest generic: bit flips, random bytes,
//! truncation, splices from other seeds, insertions and deletions.
//!
//! Assumption: the same generator state and seed give the same bytes and the
//! same description, so a finding's note is enough to understand it and its
//! saved bytes enough to replay it.

use crate::layout::{Encoding, Field, Layout, Role};
use crate::rng::SplitMix64;
use object::elf;

/// A seed prepared for mutation: its bytes, layout and fields grouped by role.
#[derive(Debug)]
pub struct Mutable {
    pub bytes: Vec<u8>,
    pub layout: Layout,
    /// Field indices per role, so rare roles (file header, group flags) are
    /// chosen as often as the thousands of symbol fields.
    by_role: Vec<Vec<usize>>,
}

impl Mutable {
    pub fn new(bytes: Vec<u8>) -> Mutable {
        let layout = Layout::of(&bytes);
        let mut by_role: Vec<(Role, Vec<usize>)> = Vec::new();
        for (index, field) in layout.fields.iter().enumerate() {
            match by_role.iter_mut().find(|(role, _)| *role == field.role) {
                Some((_, fields)) => fields.push(index),
                None => by_role.push((field.role, vec![index])),
            }
        }
        Mutable {
            bytes,
            layout,
            by_role: by_role.into_iter().map(|(_, fields)| fields).collect(),
        }
    }

    fn pick_field(&self, rng: &mut SplitMix64) -> Option<&Field> {
        let index = if rng.chance(1, 2) {
            let group = self.by_role.get(rng.below(self.by_role.len()))?;
            *rng.pick(group)?
        } else {
            rng.below(self.layout.fields.len())
        };
        self.layout.fields.get(index)
    }
}

/// Mutates a copy of `seed` with one to four changes; `donors` are other
/// seeds to splice from. Returns the bytes and what was done, one line per change.
pub fn mutate(rng: &mut SplitMix64, seed: &Mutable, donors: &[&[u8]]) -> (Vec<u8>, Vec<String>) {
    let mut bytes = seed.bytes.clone();
    let changes = match rng.below(8) {
        0..=3 => 1,
        4 | 5 => 2,
        6 => 3,
        _ => 4,
    };
    let descriptions = (0..changes)
        .map(|_| {
            if rng.chance(7, 10) && !seed.layout.fields.is_empty() {
                mutate_field(rng, seed, &mut bytes)
            } else {
                mutate_generic(rng, seed, donors, &mut bytes)
            }
        })
        .collect();
    (bytes, descriptions)
}

fn mutate_field(rng: &mut SplitMix64, seed: &Mutable, bytes: &mut Vec<u8>) -> String {
    let Some(field) = seed.pick_field(rng) else {
        return "no field".to_owned();
    };
    let at = field.offset;
    let current = read_field(bytes, field).unwrap_or(0);
    match field.encoding {
        Encoding::Little(width) | Encoding::Big(width) => {
            let value = interesting_value(rng, field.role, width, current, &seed.layout);
            let mut encoded = value.to_le_bytes()[..usize::from(width)].to_vec();
            if matches!(field.encoding, Encoding::Big(_)) {
                encoded.reverse();
            }
            overwrite(bytes, at, &encoded);
            format!("{} = {value:#x} (was {current:#x})", field.description)
        }
        Encoding::Uleb(length) => {
            let value = interesting_value(rng, field.role, 8, current, &seed.layout);
            let length = usize::from(length);
            let encoded = if rng.chance(1, 8) {
                // Never terminated: every byte says "more follows".
                vec![0x80; length]
            } else {
                uleb(value, length)
            };
            if at <= bytes.len() {
                let end = (at + length).min(bytes.len());
                bytes.splice(at..end, encoded);
            }
            format!("{} = ULEB {value:#x} (was {current:#x})", field.description)
        }
        Encoding::Decimal(width) => {
            let text = decimal_text(rng, field.role, current, &seed.layout);
            let mut padded = text.clone().into_bytes();
            padded.resize(usize::from(width), b' ');
            padded.truncate(usize::from(width));
            overwrite(bytes, at, &padded);
            format!("{} = {text:?} (was {current})", field.description)
        }
        Encoding::Bytes(length) => {
            let length = (length as usize).max(1);
            match rng.below(4) {
                0 => {
                    // Strings lose their terminators.
                    let end = (at + length).min(bytes.len());
                    if let Some(range) = bytes.get_mut(at..end) {
                        range
                            .iter_mut()
                            .filter(|b| **b == 0)
                            .for_each(|b| *b = b'A');
                    }
                    format!("{}: every NUL made 'A'", field.description)
                }
                _ => {
                    let offset = at + rng.below(length);
                    let value = *rng
                        .pick(&[0, 0xff, b'/', b' ', b'\n', b'0', b'A', 0x80])
                        .unwrap_or(&0);
                    overwrite(bytes, offset, &[value]);
                    format!(
                        "{} byte +{:#x} = {value:#x}",
                        field.description,
                        offset - at
                    )
                }
            }
        }
    }
}

fn mutate_generic(
    rng: &mut SplitMix64,
    seed: &Mutable,
    donors: &[&[u8]],
    bytes: &mut Vec<u8>,
) -> String {
    let len = bytes.len();
    if len == 0 {
        bytes.push(0);
        return "empty file given one byte".to_owned();
    }
    let near_boundary = |rng: &mut SplitMix64| -> usize {
        match rng.pick(&seed.layout.boundaries) {
            Some(&boundary) if rng.chance(3, 4) => {
                (boundary + rng.below(3)).saturating_sub(1).min(len)
            }
            _ => rng.below(len + 1),
        }
    };
    match rng.below(8) {
        0 => {
            let offset = rng.below(len);
            let bit = rng.below(8);
            bytes[offset] ^= 1 << bit;
            format!("bit {bit} of byte {offset:#x} flipped")
        }
        1 => {
            let offset = rng.below(len);
            let value = rng.next_u64() as u8;
            bytes[offset] = value;
            format!("byte {offset:#x} = {value:#x}")
        }
        2 => {
            // A word of an unmodeled structure (instructions, CIE bodies, CREL deltas).
            let offset = rng.below(len) & !3;
            let width = if rng.chance(1, 2) { 4 } else { 8 };
            let current = bytes.get(offset..offset + width).map_or(0, |b| {
                b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x))
            });
            let value = interesting_value(rng, Role::Other, width as u8, current, &seed.layout);
            overwrite(bytes, offset, &value.to_le_bytes()[..width]);
            format!("{width}-byte word at {offset:#x} = {value:#x} (was {current:#x})")
        }
        3 => {
            let length = near_boundary(rng);
            bytes.truncate(length);
            format!("truncated to {length:#x} bytes (of {len:#x})")
        }
        4 => {
            let donor = rng.pick(donors).copied().unwrap_or(&[]);
            if donor.is_empty() {
                return "no donor to splice from".to_owned();
            }
            let from = rng.below(donor.len());
            let count = (1 + rng.below(256)).min(donor.len() - from);
            let to = near_boundary(rng).min(len - 1);
            overwrite(bytes, to, &donor[from..from + count]);
            format!("{count:#x} bytes from another seed at {from:#x} written over {to:#x}")
        }
        5 => {
            let at = near_boundary(rng);
            let count = 1 + rng.below(64);
            let filler = *rng.pick(&[0u8, 0xff, b'A']).unwrap_or(&0);
            bytes.splice(at..at, std::iter::repeat_n(filler, count));
            format!("{count} bytes {filler:#x} inserted at {at:#x}")
        }
        6 => {
            let at = near_boundary(rng).min(len - 1);
            let count = (1 + rng.below(64)).min(len - at);
            bytes.drain(at..at + count);
            format!("{count} bytes deleted at {at:#x}")
        }
        _ => {
            // A chunk of the file copied over another place of itself
            // (a section header over another, a symbol over a relocation).
            let from = rng.below(len);
            let count = (1 + rng.below(128)).min(len - from);
            let to = near_boundary(rng).min(len - 1);
            let chunk = bytes[from..from + count].to_vec();
            overwrite(bytes, to, &chunk);
            format!("{count:#x} bytes at {from:#x} copied over {to:#x}")
        }
    }
}

/// Writes `value` at `at`, clipped to the end of `bytes` (earlier changes may have truncated it).
fn overwrite(bytes: &mut [u8], at: usize, value: &[u8]) {
    let end = at.saturating_add(value.len()).min(bytes.len());
    if let Some(target) = bytes.get_mut(at..end) {
        let count = target.len();
        target.copy_from_slice(&value[..count]);
    }
}

fn read_field(bytes: &[u8], field: &Field) -> Option<u64> {
    let at = field.offset;
    match field.encoding {
        Encoding::Little(width) => {
            let raw = bytes.get(at..at + usize::from(width))?;
            Some(raw.iter().rev().fold(0u64, |v, &b| (v << 8) | u64::from(b)))
        }
        Encoding::Big(width) => {
            let raw = bytes.get(at..at + usize::from(width))?;
            Some(raw.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b)))
        }
        Encoding::Uleb(length) => {
            let raw = bytes.get(at..at + usize::from(length))?;
            Some(raw.iter().enumerate().fold(0u64, |v, (i, &b)| {
                v | (u64::from(b & 0x7f).checked_shl(7 * i as u32).unwrap_or(0))
            }))
        }
        Encoding::Decimal(width) => std::str::from_utf8(bytes.get(at..at + usize::from(width))?)
            .ok()?
            .trim()
            .parse()
            .ok(),
        Encoding::Bytes(_) => bytes.get(at).map(|&b| u64::from(b)),
    }
}

/// `value` as ULEB128 padded with continuation bytes to at least `length` bytes.
fn uleb(mut value: u64, length: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        out.push(byte | 0x80);
        if value == 0 && out.len() >= length {
            break;
        }
    }
    if let Some(last) = out.last_mut() {
        *last &= 0x7f;
    }
    out
}

/// Text for a decimal archive field: a number near something interesting,
/// or something that is not a plain number.
fn decimal_text(rng: &mut SplitMix64, role: Role, current: u64, layout: &Layout) -> String {
    match rng.below(6) {
        0 => (*rng
            .pick(&[
                "",
                "-1",
                "0x10",
                "1e3",
                "+5",
                "abc",
                " 12",
                "99999999999999999999",
            ])
            .unwrap_or(&""))
        .to_owned(),
        _ => interesting_value(rng, role, 8, current, layout)
            .min(if rng.chance(1, 2) {
                9_999_999_999
            } else {
                u64::MAX
            })
            .to_string(),
    }
}

/// A value for a `width`-byte field of kind `role` whose value is `current`.
fn interesting_value(
    rng: &mut SplitMix64,
    role: Role,
    width: u8,
    current: u64,
    layout: &Layout,
) -> u64 {
    let bits = u32::from(width) * 8;
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let value = match rng.below(10) {
        0 | 1 => *rng
            .pick(&[
                0,
                1,
                2,
                4,
                7,
                8,
                0x10,
                0x7f,
                0x80,
                0xff,
                0x100,
                0xffff,
                mask,
                mask >> 1,
                (mask >> 1) + 1,
            ])
            .unwrap_or(&0),
        2 | 3 => {
            let delta = 1 + rng.below(16) as u64;
            match rng.below(4) {
                0 => current.wrapping_add(delta),
                1 => current.wrapping_sub(delta),
                2 => current.wrapping_mul(2),
                _ => current ^ (1u64 << rng.below(bits as usize)),
            }
        }
        4 | 5 => {
            let limit = rng.pick(&layout.limits).copied().unwrap_or(0);
            match rng.below(5) {
                0 => limit.wrapping_sub(1),
                1 => limit,
                2 => limit.wrapping_add(1),
                3 => current.wrapping_add(limit),
                _ => limit.wrapping_mul(8),
            }
        }
        6..=8 => role_value(rng, role, current, layout),
        _ => rng.next_u64(),
    };
    value & mask
}

/// A value that means something for fields of kind `role`.
fn role_value(rng: &mut SplitMix64, role: Role, current: u64, layout: &Layout) -> u64 {
    if layout.macho_cputype != 0
        && let Some(value) = macho_role_value(rng, role, current, layout)
    {
        return value;
    }
    let value = match role {
        Role::SectionType => rng
            .pick(&[
                elf::SHT_NULL.0,
                elf::SHT_PROGBITS.0,
                elf::SHT_SYMTAB.0,
                elf::SHT_STRTAB.0,
                elf::SHT_RELA.0,
                elf::SHT_NOBITS.0,
                elf::SHT_REL.0,
                elf::SHT_GROUP.0,
                elf::SHT_SYMTAB_SHNDX.0,
                elf::SHT_INIT_ARRAY.0,
                elf::SHT_NOTE.0,
                elf::SHT_X86_64_UNWIND.0,
                icf_object::SHT_LLVM_ADDRSIG,
                crate::layout::SHT_CREL,
            ])
            .map(|&t| u64::from(t)),
        Role::Flags => rng
            .pick(&[
                elf::SHF_WRITE.0,
                elf::SHF_ALLOC.0,
                elf::SHF_EXECINSTR.0,
                elf::SHF_MERGE.0,
                elf::SHF_STRINGS.0,
                elf::SHF_INFO_LINK.0,
                elf::SHF_LINK_ORDER.0,
                elf::SHF_GROUP.0,
                elf::SHF_TLS.0,
                elf::SHF_COMPRESSED.0,
                u64::from(elf::GRP_COMDAT.0),
            ])
            .map(|&flag| current ^ flag),
        Role::SectionIndex => rng
            .pick(&[
                u64::from(elf::SHN_UNDEF.0),
                u64::from(elf::SHN_ABS.0),
                u64::from(elf::SHN_COMMON.0),
                u64::from(elf::SHN_XINDEX.0),
                u64::from(elf::SHN_LORESERVE),
                0xffff_ffff,
            ])
            .copied(),
        Role::SymbolIndex | Role::Count => Some(match rng.below(3) {
            0 => 0,
            1 => current.wrapping_add(1),
            _ => rng.below(64) as u64,
        }),
        Role::RelocationType => {
            let types: &[u32] = if layout.machine == elf::EM_AARCH64.0 {
                &[
                    elf::R_AARCH64_NONE.0,
                    elf::R_AARCH64_ABS64.0,
                    elf::R_AARCH64_ABS32.0,
                    elf::R_AARCH64_PREL32.0,
                    elf::R_AARCH64_CALL26.0,
                    elf::R_AARCH64_JUMP26.0,
                    elf::R_AARCH64_ADR_PREL_PG_HI21.0,
                    elf::R_AARCH64_ADD_ABS_LO12_NC.0,
                    elf::R_AARCH64_LDST64_ABS_LO12_NC.0,
                    elf::R_AARCH64_ADR_GOT_PAGE.0,
                    elf::R_AARCH64_LD64_GOT_LO12_NC.0,
                    elf::R_AARCH64_CONDBR19.0,
                    elf::R_AARCH64_TLSLE_ADD_TPREL_HI12.0,
                ]
            } else {
                &[
                    elf::R_X86_64_NONE.0,
                    elf::R_X86_64_64.0,
                    elf::R_X86_64_PC32.0,
                    elf::R_X86_64_PLT32.0,
                    elf::R_X86_64_32.0,
                    elf::R_X86_64_32S.0,
                    elf::R_X86_64_GOTPCRELX.0,
                    elf::R_X86_64_REX_GOTPCRELX.0,
                    elf::R_X86_64_TPOFF32.0,
                    elf::R_X86_64_PC64.0,
                    elf::R_X86_64_GOTPCREL.0,
                    elf::R_X86_64_TLSGD.0,
                    elf::R_X86_64_8.0,
                ]
            };
            rng.pick(types).map(|&t| u64::from(t))
        }
        Role::SymbolInfo => {
            let binding = *rng
                .pick(&[
                    elf::STB_LOCAL.0,
                    elf::STB_GLOBAL.0,
                    elf::STB_WEAK.0,
                    elf::STB_GNU_UNIQUE.0,
                    15,
                ])
                .unwrap_or(&0);
            let kind = *rng
                .pick(&[
                    elf::STT_NOTYPE.0,
                    elf::STT_OBJECT.0,
                    elf::STT_FUNC.0,
                    elf::STT_SECTION.0,
                    elf::STT_FILE.0,
                    elf::STT_COMMON.0,
                    elf::STT_TLS.0,
                    elf::STT_GNU_IFUNC.0,
                    15,
                ])
                .unwrap_or(&0);
            Some(u64::from((binding << 4) | kind))
        }
        Role::Signed => rng
            .pick(&[
                -1i64,
                -4,
                -8,
                i64::from(i32::MIN),
                i64::from(i32::MAX),
                i64::MIN,
                i64::MAX,
            ])
            .map(|&v| v as u64),
        Role::Offset | Role::Size | Role::StringOffset => Some(
            rng.pick(&layout.limits)
                .copied()
                .unwrap_or(0)
                .wrapping_add(rng.below(3) as u64)
                .wrapping_sub(1),
        ),
        Role::Text | Role::Other => None,
    };
    value.unwrap_or_else(|| rng.next_u64())
}

/// `cputype` of arm64 Mach-O files (`CPU_TYPE_ARM64`).
const CPU_TYPE_ARM64: u32 = 0x0100_000c;

/// A value that means something for a Mach-O field of kind `role`; `None`
/// where the role's meaning is the same as for ELF (offsets, sizes, counts).
fn macho_role_value(
    rng: &mut SplitMix64,
    role: Role,
    current: u64,
    layout: &Layout,
) -> Option<u64> {
    let value = match role {
        // Section types (S_REGULAR ... S_THREAD_LOCAL_INIT_FUNCTION_POINTERS).
        Role::SectionType => rng.below(0x17) as u64,
        // One bit of header flags (MH_SUBSECTIONS_VIA_SYMBOLS), section
        // attributes, `n_desc` (N_NO_DEAD_STRIP, N_WEAK_REF, N_WEAK_DEF,
        // N_ALT_ENTRY, common alignment) or a compact unwind mode.
        Role::Flags => {
            let bit = *rng.pick(&[
                0x2000u64,
                0x8000_0000,
                0x4000_0000,
                0x1000_0000,
                0x0200_0000,
                0x400,
                0x100,
                0x20,
                0x40,
                0x80,
                0x200,
                0x0f00,
                0x0100_0000,
                0x0200_0000,
                0x0300_0000,
                0x0400_0000,
                0x4000_0000,
            ])?;
            current ^ bit
        }
        // `n_sect`: none, the first, the last few, past the last, 255.
        Role::SectionIndex => *rng.pick(&[0u64, 1, 2, 3, 4, 5, 6, 7, 8, 0xfe, 0xff])?,
        // `n_type`: undefined, absolute, section, indirect, prebound, each
        // with and without N_EXT and N_PEXT; a stab.
        Role::SymbolInfo => {
            let kind = *rng.pick(&[0x0u64, 0x2, 0xa, 0xc, 0xe, 0x4, 0x6])?;
            let bits = *rng.pick(&[0u64, 0x1, 0x10, 0x11])?;
            if rng.chance(1, 8) {
                *rng.pick(&[0x24u64, 0x2e, 0x64, 0x66, 0xe0])?
            } else {
                kind | bits
            }
        }
        // The byte of `r_pcrel` (bit 0), `r_length` (bits 1-2), `r_extern`
        // (bit 3) and `r_type` (bits 4-7): one of them changed.
        Role::RelocationType => {
            let types = if layout.macho_cputype == CPU_TYPE_ARM64 {
                12 // ARM64_RELOC_UNSIGNED ... ARM64_RELOC_ADDEND
            } else {
                10 // X86_64_RELOC_UNSIGNED ... X86_64_RELOC_TLV
            };
            match rng.below(4) {
                0 => current ^ 1,
                1 => (current & !0x6) | (rng.below(4) as u64) << 1,
                2 => current ^ 0x8,
                _ => (current & 0x0f) | (rng.below(types) as u64) << 4,
            }
        }
        _ => return None,
    };
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uleb_pads_to_the_requested_length() {
        assert_eq!(uleb(0, 1), vec![0]);
        assert_eq!(uleb(0, 3), vec![0x80, 0x80, 0]);
        assert_eq!(uleb(300, 1), vec![0xac, 0x02]);
        assert_eq!(uleb(1, 2), vec![0x81, 0x00]);
    }

    #[test]
    fn overwrite_clips_at_the_end() {
        let mut bytes = vec![0u8; 4];
        overwrite(&mut bytes, 2, &[1, 2, 3]);
        assert_eq!(bytes, [0, 0, 1, 2]);
        overwrite(&mut bytes, 9, &[1]);
        assert_eq!(bytes, [0, 0, 1, 2]);
    }

    #[test]
    fn mutation_is_deterministic() {
        let seed = Mutable::new(b"!<arch>\n".iter().copied().chain([0u8; 100]).collect());
        let first = mutate(&mut SplitMix64::new(9), &seed, &[]);
        let second = mutate(&mut SplitMix64::new(9), &seed, &[]);
        assert_eq!(first, second);
    }
}
