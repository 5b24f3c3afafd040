//! Functions known to read what a pointer argument points to only at and
//! after it: Rust's core library functions that take a `&str` (a panic
//! message, a type's name: rustc passes it as pointer and length, and
//! reads within `[p, p + len)`), and the C library's `mem*`/`str*`
//! functions, which read `[p, p + n)` or up to a NUL. A call passing an
//! address in such a register reads forward from it (the x86-64 escape
//! scan, `x86_escape.rs`), which tells the side of an address that ends
//! one constant and starts the next in an image without kept relocations;
//! a length the caller sets to a constant says how far.
//! Main assumption: a function of one of these names (Rust paths with
//! rustc's mangling, the hash aside; C names bound through the GOT or PLT,
//! the symbol version aside) is that function, whose signature is part of
//! its library's stable API.

use crate::code::{Length, Reader};
use crate::decode;
use crate::image::{Image, SectionRole, Slot, SymbolKind};

/// (Rust path, the argument registers holding a `&str`'s pointer, a bit
/// each; its length is in the next register).
const STR_READERS: [(&str, u8); 19] = [
    ("<str as core::fmt::Display>::fmt", 1 << 0),
    ("<str as core::fmt::Debug>::fmt", 1 << 0),
    ("core::panicking::panic", 1 << 0),
    ("core::panicking::panic_nounwind", 1 << 0),
    ("core::option::expect_failed", 1 << 0),
    ("core::result::unwrap_failed", 1 << 0),
    ("core::fmt::Formatter::write_str", 1 << 1),
    ("core::fmt::Formatter::pad", 1 << 1),
    ("core::fmt::Formatter::debug_struct", 1 << 1),
    ("core::fmt::Formatter::debug_tuple", 1 << 1),
    ("core::fmt::Formatter::debug_tuple_field1_finish", 1 << 1),
    ("core::fmt::Formatter::debug_tuple_field2_finish", 1 << 1),
    ("core::fmt::Formatter::debug_tuple_field3_finish", 1 << 1),
    (
        "core::fmt::Formatter::debug_struct_field1_finish",
        1 << 1 | 1 << 3,
    ),
    (
        "core::fmt::Formatter::debug_struct_field2_finish",
        1 << 1 | 1 << 3,
    ),
    (
        "core::fmt::Formatter::debug_struct_field3_finish",
        1 << 1 | 1 << 3,
    ),
    (
        "core::fmt::Formatter::debug_struct_field4_finish",
        1 << 1 | 1 << 3,
    ),
    (
        "core::fmt::Formatter::debug_struct_field5_finish",
        1 << 1 | 1 << 3,
    ),
    ("core::fmt::builders::DebugStruct::field", 1 << 1),
];

/// (trait method, the argument registers holding a slice's pointer):
/// the trait's own default method (`std::io::Write::write_all`) and every
/// implementation of it (`<T as std::io::Write>::write_all`) take the
/// trait's signature.
const TRAIT_READERS: [(&str, &str, u8); 3] = [
    ("std::io::Write", "write", 1 << 1),
    ("std::io::Write", "write_all", 1 << 1),
    ("core::fmt::Write", "write_str", 1 << 1),
];

fn trait_reader(path: &str) -> Option<u8> {
    TRAIT_READERS
        .iter()
        .find(|&&(name, method, _)| {
            path.strip_suffix(method)
                .and_then(|owner| owner.strip_suffix("::"))
                .is_some_and(|owner| {
                    owner == name
                        || owner
                            .strip_suffix('>')
                            .and_then(|owner| owner.rsplit_once(" as "))
                            .is_some_and(|(_, implemented)| implemented == name)
                })
        })
        .map(|&(_, _, pointers)| pointers)
}

/// The count of `mem*` and `strncmp`: their third argument.
const THIRD: Length = Length::Argument(2);

/// (C name, the argument registers holding a pointer it reads forward
/// from, a bit each, and how far).
const C_READERS: [(&str, u8, Length); 9] = [
    ("memcmp", 1 << 0 | 1 << 1, THIRD),
    ("bcmp", 1 << 0 | 1 << 1, THIRD),
    ("memcpy", 1 << 0 | 1 << 1, THIRD),
    ("memmove", 1 << 0 | 1 << 1, THIRD),
    ("memchr", 1 << 0, THIRD),
    ("memrchr", 1 << 0, THIRD),
    ("strlen", 1 << 0, Length::Unbounded),
    ("strcmp", 1 << 0 | 1 << 1, Length::Unbounded),
    ("strncmp", 1 << 0 | 1 << 1, THIRD),
];

fn c_reader(name: &str) -> Option<Reader> {
    let name = name.split('@').next().unwrap_or(name);
    C_READERS
        .iter()
        .find(|&&(reader, _, _)| reader == name)
        .map(|&(_, pointers, length)| Reader { pointers, length })
}

/// A Rust function reading slices whose pointers are in `pointers`.
fn rust_reader(pointers: u8) -> Reader {
    Reader {
        pointers,
        length: Length::AfterEach,
    }
}

/// A function's path as `STR_READERS` spells it: rustc's v0 mangling
/// writes an inherent method as `<core::fmt::Formatter>::pad`.
fn path_of(name: &str) -> String {
    let path = format!("{:#}", rustc_demangle::demangle(name));
    match path
        .strip_prefix('<')
        .and_then(|rest| rest.split_once(">::"))
    {
        Some((owner, method)) if !owner.contains(" as ") && !owner.contains('<') => {
            format!("{owner}::{method}")
        }
        _ => path,
    }
}

/// (address, what it reads), sorted: the entries of the functions above
/// defined in the image, the GOT slots that hold one (`call *slot(%rip)`)
/// or bind a C reader by name, and the PLT entries that jump through such
/// a slot.
pub(crate) fn forward_readers(image: &Image) -> Vec<(u64, Reader)> {
    let mut found: Vec<(u64, Reader)> = image
        .symbols
        .iter()
        .filter(|symbol| symbol.kind == SymbolKind::Function)
        .filter_map(|symbol| {
            let reader = if symbol.rustc_function {
                let path = path_of(&symbol.name);
                STR_READERS
                    .iter()
                    .find(|&&(reader, _)| reader == path)
                    .map(|&(_, pointers)| pointers)
                    .or_else(|| trait_reader(&path))
                    .map(rust_reader)
            } else {
                // A C library function linked in statically.
                c_reader(&symbol.name).filter(|_| symbol.global)
            };
            reader.map(|reader| (symbol.address, reader))
        })
        .collect();
    found.sort_by_key(|&(address, _)| address);
    found.dedup_by_key(|&mut (address, _)| address);
    let mut slots = Vec::new();
    for section in image.sections.iter().filter(|s| s.role == SectionRole::Got) {
        for slot in (section.address..section.address + section.size).step_by(8) {
            let reader = match image.dynamic.get(&slot) {
                Some(Slot::Named(name, 0)) => c_reader(name),
                _ => image.got_constant(slot).and_then(|target| {
                    found
                        .binary_search_by_key(&target, |&(entry, _)| entry)
                        .ok()
                        .map(|i| found[i].1)
                }),
            };
            if let Some(reader) = reader {
                slots.push((slot, reader));
            }
        }
    }
    for (entry, slot) in decode::plt_entries(image) {
        if let Slot::Named(name, 0) = slot
            && let Some(reader) = c_reader(name)
        {
            slots.push((entry, reader));
        }
    }
    found.extend(slots);
    found.sort_by_key(|&(address, _)| address);
    found.dedup_by_key(|&mut (address, _)| address);
    found
}

#[cfg(test)]
mod tests {
    use super::{path_of, trait_reader};

    #[test]
    fn trait_methods_and_their_implementations() {
        assert_eq!(trait_reader("std::io::Write::write_all"), Some(2));
        assert_eq!(
            trait_reader("<std::io::stdio::StdoutLock as std::io::Write>::write_all"),
            Some(2)
        );
        assert_eq!(trait_reader("<&T as core::fmt::Write>::write_str"), Some(2));
        assert_eq!(trait_reader("my::Write::write_all"), None);
        assert_eq!(trait_reader("std::io::Write::write_all_vectored"), None);
    }

    #[test]
    fn paths_of_both_manglings() {
        assert_eq!(
            path_of("_RNvMsa_NtCsgEmfK2I1SDS_4core3fmtNtB5_9Formatter25debug_tuple_field1_finish"),
            "core::fmt::Formatter::debug_tuple_field1_finish"
        );
        assert_eq!(
            path_of("_ZN4core3fmt9Formatter3pad17h0123456789abcdefE"),
            "core::fmt::Formatter::pad"
        );
        assert_eq!(
            path_of("_RNvNtCsgEmfK2I1SDS_4core9panicking5panic"),
            "core::panicking::panic"
        );
    }
}
