//! A seed's layout, whatever the container: an archive's member headers
//! and symbol tables, and each object's fields by its format (`layout.rs`
//! for ELF, `macho_layout.rs` for Mach-O).

use crate::layout::{Encoding, Field, Layout, Role, elf_object, read_be, read_le};
use crate::macho_layout;

impl Layout {
    /// The layout of a seed: an ELF object or an archive; empty for anything else.
    pub fn of(data: &[u8]) -> Layout {
        let mut layout = Layout {
            limits: vec![data.len() as u64],
            ..Layout::default()
        };
        if data.starts_with(b"!<arch>\n") || data.starts_with(b"!<thin>\n") {
            archive(&mut layout, data);
        } else {
            object_at(&mut layout, data, 0, "");
        }
        layout.boundaries.sort_unstable();
        layout.boundaries.dedup();
        layout.limits.sort_unstable();
        layout.limits.dedup();
        layout
    }
}

/// Adds the fields of the ELF or Mach-O object at `base`.
fn object_at(layout: &mut Layout, file: &[u8], base: usize, prefix: &str) {
    if file
        .get(base..)
        .is_some_and(|d| d.starts_with(&macho_layout::MAGIC))
    {
        macho_layout::macho_object(layout, file, base, prefix);
    } else {
        elf_object(layout, file, base, prefix);
    }
}

/// Member headers, the symbol table, the long-name table, and each ELF member.
fn archive(layout: &mut Layout, data: &[u8]) {
    let thin = data.starts_with(b"!<thin>\n");
    layout.fields.push(Field {
        offset: 0,
        encoding: Encoding::Bytes(8),
        role: Role::Text,
        description: "archive magic".to_owned(),
    });
    let mut at = 8;
    let mut member = 0;
    while at + 60 <= data.len() {
        let header = &data[at..at + 60];
        let name = String::from_utf8_lossy(&header[..16]).trim_end().to_owned();
        let Some(size) = std::str::from_utf8(&header[48..58])
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
        else {
            return;
        };
        let what = format!("archive member {member} '{name}' ");
        for (offset, encoding, field, role) in [
            (0, Encoding::Bytes(16), "name", Role::Text),
            (0, Encoding::Decimal(16), "name as number", Role::Offset),
            (
                1,
                Encoding::Decimal(15),
                "long-name offset",
                Role::StringOffset,
            ),
            (16, Encoding::Decimal(12), "date", Role::Other),
            (40, Encoding::Decimal(8), "mode", Role::Other),
            (48, Encoding::Decimal(10), "size", Role::Size),
            (58, Encoding::Bytes(2), "terminator", Role::Text),
        ] {
            layout.fields.push(Field {
                offset: at + offset,
                encoding,
                role,
                description: format!("{what}{field}"),
            });
        }
        let body = at + 60;
        layout.boundaries.extend([at, body, body + size]);
        layout.limits.push(size as u64);
        // BSD (Darwin) names: `#1/N`, the name's N bytes first in the member.
        let bsd_name_length = name
            .strip_prefix("#1/")
            .and_then(|length| length.parse::<usize>().ok())
            .filter(|&length| length <= size);
        if let Some(length) = bsd_name_length {
            layout.fields.push(Field {
                offset: at + 3,
                encoding: Encoding::Decimal(13),
                role: Role::Size,
                description: format!("{what}BSD name length"),
            });
            let name_bytes = data.get(body..body + length).unwrap_or_default();
            let end = name_bytes.iter().position(|&b| b == 0).unwrap_or(length);
            let long_name = String::from_utf8_lossy(&name_bytes[..end]).into_owned();
            if long_name.starts_with("__.SYMDEF") {
                bsd_symbol_table(layout, data, body + length, size - length, &what);
            } else {
                object_at(
                    layout,
                    data,
                    body + length,
                    &format!("{what}'{long_name}' "),
                );
            }
            at = (body + size + 1) & !1;
            member += 1;
            continue;
        }
        // Thin archives store only the symbol table and long names inline.
        let inline = !thin || name == "/" || name == "//" || name == "/SYM64/";
        if name == "/" || name == "/SYM64/" {
            let width = if name == "/" { 4 } else { 8 };
            if let Some(count) = read_be(data, body, width) {
                layout.limits.push(count);
                layout.fields.push(Field {
                    offset: body,
                    encoding: Encoding::Big(width as u8),
                    role: Role::Count,
                    description: format!("{what}symbol count"),
                });
                for entry in 0..(count as usize).min(size / width) {
                    layout.fields.push(Field {
                        offset: body + width + entry * width,
                        encoding: Encoding::Big(width as u8),
                        role: Role::Offset,
                        description: format!("{what}symbol {entry} member offset"),
                    });
                }
                let names = body + width + (count as usize).min(size / width) * width;
                if names < body + size {
                    layout.fields.push(Field {
                        offset: names,
                        encoding: Encoding::Bytes((body + size - names) as u32),
                        role: Role::Text,
                        description: format!("{what}symbol names"),
                    });
                }
            }
        } else if name == "//" {
            layout.fields.push(Field {
                offset: body,
                encoding: Encoding::Bytes(size as u32),
                role: Role::Text,
                description: format!("{what}long names"),
            });
        } else if inline {
            object_at(layout, data, body, &what);
        }
        let stored = if inline { size } else { 0 };
        at = (body + stored + 1) & !1;
        member += 1;
    }
}

/// A BSD archive's `__.SYMDEF`: the byte size of the `ranlib` entries,
/// each (name offset, member offset), then the byte size of the names and
/// the names, all little-endian.
fn bsd_symbol_table(layout: &mut Layout, data: &[u8], start: usize, size: usize, what: &str) {
    let Some(ranlib_size) = read_le(data, start, 4) else {
        return;
    };
    let ranlib_size = (ranlib_size as usize).min(size.saturating_sub(4));
    layout.limits.push(ranlib_size as u64 / 8);
    layout.fields.push(Field {
        offset: start,
        encoding: Encoding::Little(4),
        role: Role::Size,
        description: format!("{what}ranlib size"),
    });
    for entry in 0..ranlib_size / 8 {
        for (offset, name, role) in [
            (0, "name", Role::StringOffset),
            (4, "member offset", Role::Offset),
        ] {
            layout.fields.push(Field {
                offset: start + 4 + entry * 8 + offset,
                encoding: Encoding::Little(4),
                role,
                description: format!("{what}ranlib {entry} {name}"),
            });
        }
    }
    let names = start + 4 + ranlib_size;
    if names + 4 <= start + size {
        layout.fields.push(Field {
            offset: names,
            encoding: Encoding::Little(4),
            role: Role::Size,
            description: format!("{what}names size"),
        });
    }
}
