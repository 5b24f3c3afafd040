//! Data compared: named objects by their namesakes, exported names,
//! bytes with the pointers in them, unnamed constants up to what the code
//! reads of them, and tables read by code (jump tables, offset tables,
//! fat pointers).

use super::*;

impl Checker<'_> {
    /// Every PLAIN data object against its namesake: same size, same bytes,
    /// pointers corresponding; objects in sections the linker synthesizes
    /// are not the program's data and are skipped.
    pub(super) fn check_data_roots(&mut self) -> Result<(), Failure> {
        for (index, symbol) in self.plain.symbols.iter().enumerate() {
            // Only data the program defines: the linker's own tables
            // (`_DYNAMIC`, `_GLOBAL_OFFSET_TABLE_`) differ with what it links.
            if symbol.kind != SymbolKind::Object || self.plain.sections[symbol.section].synthesized
            {
                continue;
            }
            let root = self.roots.len();
            self.roots.push(Root {
                name: symbol.name.clone(),
            });
            let check = TargetCheck {
                plain_target: symbol.address,
                folded_target: 0,
                use_: Use::Access,
                plain_field: 0,
                folded_field: 0,
                plain_site: symbol.address,
                folded_site: 0,
                width: 0,
                reach: Reach::Unknown,
                functions: None,
                via: None,
                root,
            };
            let Some(counterpart) = self.folded.counterpart(self.plain, SymbolId(index as u32))
            else {
                if symbol.file.is_some() {
                    // A local object the fold left without its symbol (its
                    // unit's uses were folded away or now name another copy):
                    // every use of it is checked where it is made.
                    self.stats.locals_without_symbol += 1;
                    continue;
                }
                if !self.plain.exports(&symbol.name) {
                    // An object the link does not export, which
                    // `--gc-sections` dropped once no use was left.
                    self.stats.unexported_without_symbol += 1;
                    continue;
                }
                return Err(self.fail(
                    &check,
                    DifferenceKind::MissingInFolded,
                    format!("FOLDED has no object {}", symbol.name),
                ));
            };
            let folded_symbol = self.folded.symbol(counterpart);
            let check = TargetCheck {
                folded_target: folded_symbol.address,
                folded_site: folded_symbol.address,
                ..check
            };
            self.stats.data_objects_checked += 1;
            if folded_symbol.size != symbol.size {
                return Err(self.fail(
                    &check,
                    DifferenceKind::DataDiffers,
                    format!(
                        "{} has {} bytes in PLAIN, {} in FOLDED",
                        symbol.name, symbol.size, folded_symbol.size
                    ),
                ));
            }
            let (plain_address, folded_address, size) =
                (symbol.address, folded_symbol.address, symbol.size);
            if let Some(reason) = self.compare_data(&check, plain_address, folded_address, size) {
                return Err(self.fail(&check, DifferenceKind::DataDiffers, reason));
            }
        }
        Ok(())
    }

    /// Functions a shared object or `--export-dynamic` exports: their
    /// addresses are observable from outside, as if taken.
    pub(super) fn check_exported(&mut self) -> Result<(), Failure> {
        let names: HashSet<&str> = self
            .plain
            .exported_functions
            .iter()
            .map(String::as_str)
            .collect();
        let root = self.roots.len();
        self.roots.push(Root {
            name: "(exported functions)".to_string(),
        });
        for (index, symbol) in self.plain.symbols.iter().enumerate() {
            if symbol.kind != SymbolKind::Function
                || symbol.file.is_some()
                || !names.contains(symbol.name.as_str())
                || symbol.is_rust_function()
            {
                continue;
            }
            let Some(counterpart) = self.folded.counterpart(self.plain, SymbolId(index as u32))
            else {
                continue;
            };
            let folded_address = self.folded.symbol(counterpart).address;
            let check = TargetCheck {
                plain_target: symbol.address,
                folded_target: folded_address,
                use_: Use::Address,
                plain_field: 0,
                folded_field: 0,
                plain_site: symbol.address,
                folded_site: folded_address,
                width: 0,
                reach: Reach::Unknown,
                functions: None,
                via: None,
                root,
            };
            self.record(&check, symbol.address, folded_address, true)?;
        }
        Ok(())
    }

    /// Compares `size` bytes of data at `plain` and `folded`; pointers found
    /// (by relocation, or by value in images without any) are queued as
    /// address checks. `Some(reason)` when the bytes differ.
    pub(super) fn compare_data(
        &mut self,
        check: &TargetCheck,
        plain: u64,
        folded: u64,
        size: u64,
    ) -> Option<String> {
        match self.data_done.get(&(plain, folded)) {
            Some(&done) if done >= size => return None,
            _ => {}
        }
        self.data_done.insert((plain, folded), size);
        let plain_bytes = self.plain.bytes(plain, size);
        let folded_bytes = self.folded.bytes(folded, size);
        let (plain_bytes, folded_bytes) = match (plain_bytes, folded_bytes) {
            (Some(p), Some(f)) => (p, f),
            (None, None) => return None, // both without contents (.bss)
            _ => {
                self.data_done.remove(&(plain, folded));
                return Some("only one of them has contents".to_string());
            }
        };
        let by_value = self.plain.pointers_unmarked() && self.folded.pointers_unmarked();
        // Offsets of the pointer slots either image knows of.
        let mut slots: Vec<u64> = self
            .plain
            .pointer_places_in(plain, size)
            .iter()
            .map(|a| a - plain)
            .chain(
                self.folded
                    .pointer_places_in(folded, size)
                    .iter()
                    .map(|a| a - folded),
            )
            .collect();
        slots.sort_unstable();
        slots.dedup();
        let mut pointers = Vec::new();
        let mut offset = 0u64;
        let mut failure = None;
        for slot in slots.into_iter().chain([size]) {
            if slot < offset {
                continue;
            }
            if let Some(reason) = self.compare_bytes(
                plain,
                folded,
                plain_bytes,
                folded_bytes,
                offset..slot,
                by_value,
                &mut pointers,
            ) {
                failure = Some(reason);
                break;
            }
            if slot == size {
                break;
            }
            let (p_at, f_at) = (plain + slot, folded + slot);
            let raw = |image: &Image, at: u64| image.read_u64(at).map(Pointer::Address);
            let p = pointer_slot(self.plain, p_at).or_else(|| raw(self.plain, p_at));
            let f = pointer_slot(self.folded, f_at).or_else(|| raw(self.folded, f_at));
            match (p, f) {
                (Some(Pointer::Address(a)), Some(Pointer::Address(b))) => {
                    pointers.push((a, b, p_at, f_at));
                }
                (Some(Pointer::Named(a, x)), Some(Pointer::Named(b, y))) if a == b && x == y => {}
                _ => {
                    failure = Some(format!(
                        "the pointer at {} differs from the one at {}",
                        self.plain.describe(p_at),
                        self.folded.describe(f_at)
                    ));
                    break;
                }
            }
            offset = slot + 8;
        }
        if failure.is_some() {
            self.data_done.remove(&(plain, folded));
            return failure;
        }
        for (a, b, p_at, f_at) in pointers {
            let via = Some(self.step(check));
            let use_ = if self.plain.in_vtable(p_at) {
                Use::VtableSlot
            } else {
                Use::Address
            };
            self.queue.push(TargetCheck {
                plain_target: a,
                folded_target: b,
                use_,
                plain_field: p_at,
                folded_field: f_at,
                plain_site: p_at,
                folded_site: f_at,
                width: 0,
                reach: Reach::Unknown,
                functions: None,
                via,
                root: check.root,
            });
        }
        None
    }

    /// Compares the bytes of `range` (offsets from `plain` and `folded`);
    /// in images where no relocation marks pointers into the image (no `-q`,
    /// and no dynamic relocations or a position-dependent executable),
    /// differing aligned 8-byte words that point into both images are taken
    /// for pointers.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn compare_bytes(
        &self,
        plain: u64,
        folded: u64,
        plain_bytes: &[u8],
        folded_bytes: &[u8],
        range: std::ops::Range<u64>,
        by_value: bool,
        pointers: &mut Vec<(u64, u64, u64, u64)>,
    ) -> Option<String> {
        let (from, to) = (range.start as usize, range.end as usize);
        let (left, right) = (plain_bytes.get(from..to)?, folded_bytes.get(from..to)?);
        if left == right {
            return None;
        }
        let mut i = 0;
        while i < left.len() {
            let at = (from + i) as u64;
            if by_value && (plain + at) % 8 == 0 && i + 8 <= left.len() {
                let word = |bytes: &[u8]| {
                    u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default())
                };
                let (a, b) = (word(left), word(right));
                if a != b && self.plain.is_mapped(a) && self.folded.is_mapped(b) {
                    pointers.push((a, b, plain + at, folded + at));
                    i += 8;
                    continue;
                }
            }
            if left[i] != right[i] {
                return Some(format!(
                    "byte {:#04x} at {} vs {:#04x} at {}",
                    left[i],
                    self.plain.describe(plain + at),
                    right[i],
                    self.folded.describe(folded + at)
                ));
            }
            i += 1;
        }
        None
    }

    /// Read-only data no symbol covers: a jump table of the referencing
    /// functions (4-byte offsets from the table, or 8-byte addresses, each
    /// landing on the same instruction of both), a merge constant, or else
    /// the bytes up to the first known bound of either image: the next
    /// symbol, label, place reached code references, place a pointer
    /// (kept or dynamic relocation) points to, or relocated offset. A NUL
    /// ends the piece sooner only in a mergeable-strings section and when
    /// the referencing code is not Rust (C reads a string to its NUL; Rust's
    /// `&str` carries its length, so its bytes have no NUL and a NUL further
    /// on belongs to other data); without any bound, at most 256 bytes.
    pub(super) fn compare_unnamed_data(
        &mut self,
        check: &TargetCheck,
        limit: u64,
    ) -> Option<String> {
        let (p, f) = (check.plain_target, check.folded_target);
        if let Some((plain_fn, folded_fn)) = check.functions
            && let Some(reason) = self.compare_jump_table(check, plain_fn, folded_fn)
        {
            return reason;
        }
        if let Some(reason) = self.compare_offset_table(check) {
            return reason;
        }
        if let Some(reason) = self.compare_offsets_read_by_code(check) {
            return reason;
        }
        let section = &self.plain.sections[self.plain.section_at(p)?];
        let bytes = self.plain.bytes_to_section_end(p)?;
        // An access of a known width reads at most its bytes.
        if limit != u64::MAX {
            return self.compare_data(check, p, f, limit.min(bytes.len() as u64));
        }
        // So does a Rust fat pointer in data, within its length.
        if let Some(len) = self.fat_pointer_length(check) {
            return self.compare_data(check, p, f, len.min(bytes.len() as u64));
        }
        // So does an AArch64 table indexed under an exact range check.
        if let Some(len) = self.aarch64_table_length(check) {
            return self.compare_data(check, p, f, len.min(bytes.len() as u64));
        }
        // Otherwise what the code reads is unknown: the piece, up to the
        // next symbol, label, referenced place or relocated offset of
        // either image, or the end of PLAIN's object holding it.
        let object_end = self
            .plain
            .symbols_around(p)
            .0
            .iter()
            .map(|&id| self.plain.symbol(id))
            .filter(|s| s.kind == SymbolKind::Object && s.size > 0)
            .map(|s| s.end())
            .min()
            .unwrap_or(u64::MAX);
        let end = |image: &Image, at: u64| image.data_end(at).min(image.next_offset_place(at));
        let plain_end = end(self.plain, p).min(object_end);
        // FOLDED's layout bounds the piece too (its kept copy may end
        // sooner than PLAIN's next known place): a choice that proves more
        // on non-text data, where no finer extent is known (see the
        // known cases of tests/false_passes.rs).
        let to_bound = (plain_end - p)
            .min(end(self.folded, f).saturating_sub(f))
            .min(bytes.len() as u64);
        // Rust code passes a string's length with its address (`&str`): its
        // bytes need no NUL and are packed back to back, so the piece is
        // what the known bounds say. C code reads a string up to its NUL.
        let c_string = check
            .functions
            .is_none_or(|(plain_fn, _)| !in_rust_function(self.plain, plain_fn.start));
        let through_nul = bytes
            .iter()
            .position(|&b| b == 0)
            .map_or(bytes.len(), |n| n + 1) as u64;
        // A C string holds its NUL in its own object: bytes without one up
        // to PLAIN's next symbol or label are no C string (Rust's strings
        // carry none, packed back to back, even in a section the linker
        // marks as strings), whatever code reads them.
        let nul_in_object = {
            let object = self
                .plain
                .next_symbol_start(p)
                .min(self.plain.next_label(p));
            through_nul <= object.saturating_sub(p)
        };
        // A pointer in the data of a Rust image: the linker may mark a
        // whole `.rodata` as strings while rustc's strings in it have no
        // NUL; it is read like a pointer in data to text below.
        let rust_data_pointer = self.plain_is_rust && check.functions.is_none();
        // lld marks an output section mergeable strings when one input is,
        // and puts merged strings in a section of its own (`<internal>`):
        // where PLAIN's map and objects say the place lies in an input
        // section that is not mergeable, it holds no such string.
        // GNU ld drops the flag, but the code's own relocation (`-q`, with
        // PLAIN's map and objects) may name a string of a mergeable-strings
        // input section (`.rodata.str1.1`): it ends at its NUL too.
        let strings = (section.strings && !self.in_unmerged_input_section(p))
            || self.names_merged_string(check.plain_field);
        let len = if strings && c_string && nul_in_object && !rust_data_pointer {
            // A mergeable-strings section holds strings that end at their
            // NUL: the linker merges them by it, and a suffix of one may be
            // another string (so a referenced place inside is no bound).
            // (lld marks a whole `.rodata` mergeable strings when its
            // inputs are.)
            through_nul
        } else if c_string && is_text(bytes) && check.functions.is_some() {
            // GNU ld merges `.rodata.str*` into `.rodata` and drops the
            // string flags: what C code reads as text up to a NUL may be a
            // string whose suffix something else references, or an array
            // read past its first zero: both are compared.
            through_nul.max(to_bound)
        } else if c_string && (is_text(bytes) || rust_data_pointer) {
            // A pointer in data to text: a C string (read to its NUL) or a
            // Rust `&str` (its length beside it), whose bytes run on into
            // the next string with no NUL between: up to the first of
            // both. (Which code reads through the pointer, and how far,
            // nothing here says.)
            through_nul.min(to_bound)
        } else if section.merge_entry_size > 0 && !section.strings {
            section.merge_entry_size.max(to_bound)
        } else {
            to_bound
        };
        self.compare_data(check, p, f, len)
    }

    /// Whether the relocation at PLAIN's `field` names a string of a
    /// mergeable-strings input section (with `--plain-map` and the object
    /// at hand).
    fn names_merged_string(&self, field: u64) -> bool {
        let (Some(map), Some(objects)) = (&self.plain.input_sections, &self.plain.input_objects)
        else {
            return false;
        };
        objects.names_merged_string(map, field)
    }

    /// Whether PLAIN's map places `address` in an input section its object
    /// says is not mergeable (with `--plain-map` and the object at hand).
    pub(super) fn in_unmerged_input_section(&self, address: u64) -> bool {
        let (Some(map), Some(objects)) = (&self.plain.input_sections, &self.plain.input_objects)
        else {
            return false;
        };
        map.span_at(address)
            .and_then(|span| objects.facts(map, span))
            .is_some_and(|facts| !facts.merge)
    }

    /// The length of a Rust fat pointer (`&str`, `&[u8]`) in data whose
    /// pointer is the word at the site: in an image rustc made code of,
    /// with kept relocations, a relocated pointer word followed by a word
    /// no relocation writes, the same non-zero number in both images. Its
    /// code reads `[p, p + len)` and nothing before `p` (Rust's references
    /// reach only their own bytes): an assumption about the layout rustc
    /// gives a reference to a slice, not proved from the code that loads
    /// it (see docs/design.md, "Where a fact is ambiguous").
    pub(super) fn fat_pointer_length(&self, check: &TargetCheck) -> Option<u64> {
        if check.functions.is_some() || !self.plain_is_rust {
            return None;
        }
        let (p, f) = (check.plain_site, check.folded_site);
        let pointer = |image: &Image, at: u64| {
            image.relocated_word(at, 8) == Some(true)
                && image.relocated_word(at + 8, 8) == Some(false)
        };
        if !pointer(self.plain, p) || !pointer(self.folded, f) {
            return None;
        }
        let len = self.plain.read_u64(p + 8)?;
        (len > 0 && self.folded.read_u64(f + 8) == Some(len)).then_some(len)
    }

    /// AArch64: how many bytes of the table the code at PLAIN's site reads,
    /// when an exact range check bounds its index
    /// (`aarch64_flow::table_length`).
    pub(super) fn aarch64_table_length(&self, check: &TargetCheck) -> Option<u64> {
        let (function, _) = check.functions?;
        if self.plain.arch != image::Arch::Aarch64 {
            return None;
        }
        let raw = aarch64::raw_words(
            self.plain
                .bytes(function.start, function.end - function.start)?,
        );
        let at = usize::try_from(check.plain_site.checked_sub(function.start)? / 4).ok()?;
        aarch64_flow::table_length(&raw, function.start, at)
    }

    /// A table of 4-byte offsets from its own start that a `-q` link kept
    /// relocations for (`R_X86_64_PC32`, `R_AARCH64_PREL32`), such as
    /// rustc's tables of string offsets for `Debug`: entry by entry, the
    /// table's address plus the entry is the address the code forms, so
    /// those addresses are compared as targets rather than the entries'
    /// bytes (which change whenever the table and its targets move apart).
    /// The table runs while PLAIN's entries carry such relocations, up to
    /// the next symbol, label or referenced place of either image (as all
    /// unnamed data does;
    /// a table that runs into the next one stops at the `__icf.*` name icf
    /// gives a kept copy); FOLDED's entries must carry them too. `Some(None)`: the entries correspond (checks
    /// queued); `Some(Some(_))`: they do not; `None`: no such table.
    pub(super) fn compare_offset_table(&mut self, check: &TargetCheck) -> Option<Option<String>> {
        let (p, f) = (check.plain_target, check.folded_target);
        let arch = self.plain.arch;
        let relative = |image: &Image, at: u64| {
            image
                .emitted
                .get(&at)
                .is_some_and(|r| image::is_relative_offset(arch, r.r_type))
        };
        if !relative(self.plain, p) {
            return None;
        }
        let (plain_end, folded_end) = (self.plain.data_end(p), self.folded.data_end(f));
        let mut entries = Vec::new();
        let mut i = 0u64;
        while p + 4 * i + 4 <= plain_end
            && f + 4 * i + 4 <= folded_end
            && relative(self.plain, p + 4 * i)
        {
            let (p_at, f_at) = (p + 4 * i, f + 4 * i);
            let target = |image: &Image, table: u64, at: u64| {
                image
                    .read_u32(at)
                    .map(|v| table.wrapping_add(v as i32 as i64 as u64))
            };
            match (target(self.plain, p, p_at), target(self.folded, f, f_at)) {
                (Some(a), Some(b)) if relative(self.folded, f_at) => {
                    entries.push((a, b, p_at, f_at));
                }
                _ => {
                    return Some(Some(format!(
                        "entry {i} of the table of offsets at {} has no counterpart at {}",
                        self.plain.describe(p_at),
                        self.folded.describe(f_at)
                    )));
                }
            }
            i += 1;
        }
        // What follows the relocated entries up to the piece's end is data
        // the same code may read (a length beside an offset): bytes, up to
        // the nearer end of either image's piece, as for any unnamed data
        // (alignment padding before the next table may differ).
        let rest = plain_end
            .saturating_sub(p + 4 * i)
            .min(folded_end.saturating_sub(f + 4 * i));
        if rest > 0
            && let Some(reason) = self.compare_data(check, p + 4 * i, f + 4 * i, rest)
        {
            return Some(Some(reason));
        }
        self.queue_words(check, entries, Use::Address, check.functions);
        Some(None)
    }

    /// A table of 4-byte offsets from its own start in images without kept
    /// relocations, recognized by the code that reads it: PLAIN's code
    /// forms the table's address and, on every path, only loads entries
    /// and adds them back ([`Reach::Offsets`], from
    /// `x86_escape::reads_only_offsets`), or both sites do so in straight
    /// line (`x86_table::reads_offsets_from`). Entry by entry, the addresses
    /// they form must correspond, as with kept relocations
    /// (`compare_offset_table`). Nothing says where such a table ends, so
    /// it runs while both images' entries name mapped places, up to the
    /// next symbol, label or referenced place of either image and short of
    /// the lowest place an entry names past the table (a table never holds
    /// what it points to); what is left up to the usual bound of unnamed
    /// data is compared as bytes, so an entry the bound cut off is never
    /// skipped. `None`: not such a table.
    pub(super) fn compare_offsets_read_by_code(
        &mut self,
        check: &TargetCheck,
    ) -> Option<Option<String>> {
        let (p, f) = (check.plain_target, check.folded_target);
        if self.plain.arch != image::Arch::X86_64
            || check.functions.is_none()
            || self.plain.has_emitted_relocs()
            || self.folded.has_emitted_relocs()
            || !(check.reach == Reach::Offsets
                || x86_table::reads_offsets_from(self.plain, check.plain_site, p)
                    && x86_table::reads_offsets_from(self.folded, check.folded_site, f))
        {
            return None;
        }
        let (plain_end, folded_end) = (self.plain.data_end(p), self.folded.data_end(f));
        let (mut plain_limit, mut folded_limit) = (plain_end, folded_end);
        let target = |image: &Image, table: u64, at: u64| {
            image
                .read_u32(at)
                .map(|v| table.wrapping_add(v as i32 as i64 as u64))
                .filter(|&a| image.section_at(a).is_some())
        };
        let mut entries = Vec::new();
        let mut n = 0u64;
        loop {
            let (p_at, f_at) = (p + 4 * n, f + 4 * n);
            if p_at + 4 > plain_limit || f_at + 4 > folded_limit {
                break;
            }
            let (Some(a), Some(b)) = (target(self.plain, p, p_at), target(self.folded, f, f_at))
            else {
                break;
            };
            if (p..p_at + 4).contains(&a) || (f..f_at + 4).contains(&b) {
                break;
            }
            if a > p {
                plain_limit = plain_limit.min(a);
            }
            if b > f {
                folded_limit = folded_limit.min(b);
            }
            entries.push((a, b, p_at, f_at));
            n += 1;
        }
        if entries.is_empty() {
            return None;
        }
        let rest = (plain_end - p)
            .min(folded_end.saturating_sub(f))
            .min(256)
            .saturating_sub(4 * n);
        if rest > 0
            && let Some(reason) = self.compare_data(check, p + 4 * n, f + 4 * n, rest)
        {
            return Some(Some(reason));
        }
        self.queue_words(check, entries, Use::Address, check.functions);
        Some(None)
    }

    /// Queues the targets that words of data reached from `check` name:
    /// (PLAIN target, FOLDED target, PLAIN place, FOLDED place), each used
    /// as `use_` by `functions` (the code reading the words' targets, for
    /// a table of offsets the code adds back: a Rust function's strings
    /// carry no NUL).
    pub(super) fn queue_words(
        &mut self,
        check: &TargetCheck,
        words: Vec<(u64, u64, u64, u64)>,
        use_: Use,
        functions: Option<(Extent, Extent)>,
    ) {
        if words.is_empty() {
            return;
        }
        let via = Some(self.step(check));
        for (a, b, p_at, f_at) in words {
            self.queue.push(TargetCheck {
                plain_target: a,
                folded_target: b,
                use_,
                plain_field: p_at,
                folded_field: f_at,
                plain_site: p_at,
                folded_site: f_at,
                width: 0,
                reach: Reach::Unknown,
                functions,
                via,
                root: check.root,
            });
        }
    }

    /// `Some(None)`: a jump table whose entries correspond; `Some(Some(_))`: a
    /// jump table whose entries do not; `None`: not a jump table.
    pub(super) fn compare_jump_table(
        &mut self,
        check: &TargetCheck,
        plain_fn: Extent,
        folded_fn: Extent,
    ) -> Option<Option<String>> {
        let (p, f) = (check.plain_target, check.folded_target);
        let relative = |image: &Image, table: u64, i: u64| {
            image
                .read_u32(table + 4 * i)
                .map(|v| table.wrapping_add(v as i32 as i64 as u64))
        };
        let absolute = |image: &Image, table: u64, i: u64| image.read_u64(table + 8 * i);
        let entry_of: [(&EntryReader, u64); 2] = [(&relative, 4), (&absolute, 8)];
        // The referencing pair was compared just before its targets are:
        // its instruction offsets say where the table ends (the first entry
        // that is not an instruction of the plain function).
        let Some(PairState::Done {
            plain_offsets,
            folded_offsets,
            ..
        }) = self.pairs.get(&(plain_fn.start, folded_fn.start))
        else {
            return None;
        };
        let instruction = |offsets: &[u32], extent: Extent, address: u64| {
            extent
                .contains(address)
                .then(|| offset_index(offsets, address - extent.start))
                .flatten()
        };
        // An exact range check before the function's load says how many
        // entries there are; otherwise the table ends where other data
        // starts (the next place code references: another table; a symbol
        // or label), and within a mask's bound.
        let size = self.plain.jump_table_size(p);
        let exact = size.filter(|s| s.exact).map(|s| s.entries);
        let at_most = size.map_or(u64::MAX, |s| s.entries);
        let entry_of = match size.map(|s| s.relative) {
            Some(true) => &entry_of[..1],
            Some(false) => &entry_of[1..],
            None => &entry_of[..],
        };
        for &(entry, width) in entry_of {
            let mut count = 0u64;
            let mut outside = Vec::new();
            let table_end = self.plain.data_end(p);
            loop {
                // With kept relocations, also at its first word no
                // relocation writes: what follows is other data, however
                // its bytes read.
                let at = p + width * count;
                let past_end = match exact {
                    Some(entries) => count >= entries,
                    None => {
                        count >= at_most
                            || at >= table_end
                            || self.plain.relocated_word(at, width) == Some(false)
                    }
                };
                if past_end {
                    break;
                }
                let plain_target = entry(self.plain, p, count);
                let folded_target = entry(self.folded, f, count);
                // A case outside the function (GCC's `f.cold` part; a tail
                // jump to another function; the function's end, where a
                // case the compiler knows unreachable goes) is a jump
                // there, in both: whatever runs there must correspond.
                // Without a known size, the first entry leaving the
                // function ends the table: what follows a table is often
                // another one, whose entries, read from here, land in code
                // too (an assumption: a case jumping out of the function
                // in such a table ends what is compared).
                if exact.is_some()
                    && let (Some(a), Some(b)) = (plain_target, folded_target)
                    && !plain_fn.contains(a)
                    && !folded_fn.contains(b)
                {
                    outside.push((a, b, p + width * count, f + width * count));
                    count += 1;
                    continue;
                }
                let a = plain_target.and_then(|a| instruction(plain_offsets, plain_fn, a));
                let b = folded_target.and_then(|b| instruction(folded_offsets, folded_fn, b));
                match (a, b) {
                    (Some(i), Some(j)) if i == j => {}
                    (None, _) if exact.is_none() || count == 0 => break,
                    // A first entry that does not land alike may just mean
                    // this is no table, unless PLAIN's function jumps there.
                    _ if count == 0 && !self.is_jump_table(check) => break,
                    _ => {
                        return Some(Some(format!(
                            "jump table entry {count} at {} vs {} does not land in the same function",
                            self.plain.describe(p + width * count),
                            self.folded.describe(f + width * count)
                        )));
                    }
                }
                count += 1;
            }
            if count > 0 {
                self.queue_words(check, outside, Use::Jump, None);
                return Some(None);
            }
        }
        None
    }
}

/// A word the loader or the link fills with an address.
pub(super) enum Pointer {
    Address(u64),
    Named(String, i64),
}

pub(super) fn pointer_slot(image: &Image, at: u64) -> Option<Pointer> {
    if let Some(slot) = image.dynamic.get(&at) {
        return Some(match slot {
            image::Slot::Address(a) => Pointer::Address(*a),
            image::Slot::Named(name, addend) => Pointer::Named(name.clone(), *addend),
        });
    }
    let reloc = image.emitted.get(&at)?;
    image::is_absolute_pointer(image.arch, reloc.r_type).then_some(Pointer::Address(reloc.value))
}

/// Whether `address` starts or lies in a Rust function of `image` (see
/// `Symbol::is_rust_function`).
pub(super) fn in_rust_function(image: &Image, address: u64) -> bool {
    image
        .symbols_around(address)
        .0
        .iter()
        .any(|&id| image.symbol(id).is_rust_function())
}

/// Whether `bytes` start with text ended by a NUL: printable ASCII,
/// whitespace or UTF-8 bytes, at least one.
pub(super) fn is_text(bytes: &[u8]) -> bool {
    let Some(nul) = bytes.iter().position(|&b| b == 0) else {
        return false;
    };
    nul > 0
        && bytes[..nul]
            .iter()
            .all(|&b| matches!(b, b'\t' | b'\n' | b'\r' | 0x20..=0x7e | 0x80..))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_printable_bytes_up_to_a_nul() {
        assert!(is_text(b"abc\0"));
        assert!(is_text(b"tab\there\r\n\0more"));
        assert!(is_text("é\0".as_bytes()), "UTF-8");
        assert!(!is_text(b"\0"), "empty");
        assert!(!is_text(b"abc"), "no NUL");
        assert!(!is_text(b"a\x01\0"), "a control byte");
    }
}
