//! One linked image as the verifier reads it: the model every check
//! works on. `elf/read.rs` and `macho/read.rs` read an image into
//! [`ImageParts`]; [`Image::assemble`] indexes either.

use std::collections::{HashMap, HashSet};

/// The instruction set of an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
}

/// An allocated section (or any section, for names of relocation targets).
#[derive(Debug)]
pub(crate) struct Section {
    pub name: String,
    pub address: u64,
    pub size: u64,
    /// Byte range in the file, `None` for `SHT_NOBITS`.
    pub file_range: Option<(usize, usize)>,
    pub alloc: bool,
    /// Written at run time: `SHF_WRITE`, except `.data.rel.ro*`, which only
    /// the loader writes (relocations) before making it read-only (RELRO):
    /// constants with pointers, compared like read-only data.
    pub writable: bool,
    pub executable: bool,
    /// `SHF_MERGE | SHF_STRINGS`: NUL-terminated strings.
    pub strings: bool,
    /// `SHF_MERGE` constants of this size (0 when not a merge section).
    pub merge_entry_size: u64,
    /// Contents the linker makes rather than copies from input sections:
    /// see [`is_synthesized`].
    pub synthesized: bool,
    /// `SHF_COMPRESSED`: the file holds the contents compressed.
    pub compressed: bool,
    /// What the linker made the section for, where the checks care.
    pub role: SectionRole,
}

/// The linker-made sections code reaches other modules through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SectionRole {
    /// Anything else.
    Other,
    /// Entries of `entry_size` bytes, each a jump through one slot of a
    /// [`SectionRole::Got`] or [`SectionRole::LazyGot`] section: ELF's
    /// `.plt*`/`.iplt` (16 bytes), Mach-O's `__stubs` (`S_SYMBOL_STUBS`,
    /// the size its header gives).
    Plt { entry_size: u64 },
    /// Slots the loader fills before the program runs: ELF's `.got`,
    /// Mach-O's non-lazy pointers (`__got`).
    Got,
    /// Slots bound lazily, at the first call through them: ELF's
    /// `.got.plt`, Mach-O's `__la_symbol_ptr`.
    LazyGot,
}

/// Whether a symbol names code or data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SymbolKind {
    Function,
    Object,
}

/// Index into [`Image::symbols`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct SymbolId(pub u32);

/// A function or data object with a size (or a function without one).
#[derive(Debug)]
pub(crate) struct Symbol {
    pub name: String,
    /// The `STT_FILE` name that precedes a local symbol; `None` for globals.
    pub file: Option<String>,
    /// Position among the symbols of the same (name, file).
    pub ordinal_in_file: u32,
    /// Position among the symbols of the same name.
    pub ordinal_in_name: u32,
    pub address: u64,
    pub size: u64,
    pub kind: SymbolKind,
    pub section: usize,
    /// `STB_WEAK`: a vague-linkage definition (C++ inline functions and
    /// template instances) when the name is mangled.
    pub weak: bool,
    /// Not `STB_LOCAL` (mold makes every symbol of an executable local).
    pub global: bool,
    /// `STV_HIDDEN` or `STV_INTERNAL`: no other module sees it (GNU ld
    /// keeps such a symbol global in `.symtab`; lld makes it local).
    pub hidden: bool,
    /// A function with a Rust-mangled name in an image rustc contributed
    /// code to (see [`Symbol::is_rust_function`]); set by
    /// [`Image::assemble`].
    pub rustc_function: bool,
}

impl Symbol {
    pub fn end(&self) -> u64 {
        self.address.saturating_add(self.size)
    }

    /// Whether `offset` from the symbol is one past its end (a sized symbol).
    pub fn ends_at_offset(&self, offset: u64) -> bool {
        self.size > 0 && offset == self.size
    }

    /// A data object named by its compiler, not by the program: rustc's
    /// and LLVM's anonymous constants (`.Lanon.<hash>.<n>` as rustc emits
    /// them now, `anon.<hash>.<n>` with ThinLTO's `.llvm.<n>` suffix,
    /// `alloc_<hash>`), other local labels (`.L*`, `$*`) and gcc's switch
    /// tables (`CSWTCH.<n>`). No language lets a program rely on such a
    /// constant's address being distinct (Rust promises no address
    /// identity for constants; LLVM makes them `unnamed_addr`), so its
    /// address is not observed, as for read-only data without a symbol.
    /// Only a local or hidden symbol of such a name is one: compilers make
    /// every one of them local (rustc's and LLVM's are private, gcc's
    /// `static`), or hidden where link-time optimization shares one
    /// between partitions (ThinLTO's `anon.<hash>.<n>.llvm.<n>`, gcc's
    /// `CSWTCH.<n>.lto_priv.<n>`, which GNU ld keeps global), while a
    /// global of that name that other modules see is the program's own
    /// object (a C array named `alloc_large`), whose address is its
    /// identity. `alloc_` also needs its hash (16 hex digits at least),
    /// which a C identifier seldom has; the other names are no C
    /// identifiers at all. In an image whose symbol table keeps no binding
    /// (mold's executables) every symbol is local, and the name decides.
    pub fn is_anonymous_constant(&self) -> bool {
        self.kind == SymbolKind::Object
            && (!self.global || self.hidden)
            && is_anonymous_constant_name(&self.name)
    }

    /// A Rust function: its name is Rust-mangled (legacy `_ZN…17h<16
    /// hex>E`, possibly with a `.llvm.<n>`-style suffix, or v0 `_R…`) and
    /// rustc made code of the image (its `.comment` names rustc's version;
    /// see [`made_by_rustc`]). rustc makes every function `unnamed_addr`:
    /// Rust does not promise distinct functions distinct addresses, and
    /// icf's safe mode merges them, so such a function's address is not
    /// observed, in either mode. A name alone is no evidence: C can give a
    /// function any assembler name. In an image that links Rust with C or
    /// C++, the name is still trusted for each function (the linked image
    /// does not say which object a function came from).
    pub fn is_rust_function(&self) -> bool {
        self.rustc_function
    }
}

/// Whether `name` is a compiler's name for an anonymous constant (see
/// [`Symbol::is_anonymous_constant`]).
fn is_anonymous_constant_name(name: &str) -> bool {
    // A number, then nothing or a suffix (`.lto_priv.0`).
    let numbered = |rest: &str| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && (digits == rest.len() || rest.as_bytes()[digits] == b'.')
    };
    let hashed = |rest: &str| {
        let hex = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            .count();
        hex >= 16 && (hex == rest.len() || rest.as_bytes()[hex] == b'.')
    };
    name.starts_with(".L")
        || name.starts_with('$')
        || name.starts_with("anon.")
        || name.strip_prefix("CSWTCH.").is_some_and(numbered)
        || name.strip_prefix("alloc_").is_some_and(hashed)
}

/// Whether rustc made code of the image whose `.comment` section holds
/// `comment`: rustc writes its version there (`rustc version 1.95.0 ...`),
/// and linkers keep every input's `.comment` strings. Mach-O images have
/// no such section: there no function is taken for Rust's.
pub(crate) fn made_by_rustc(comment: Option<&[u8]>) -> bool {
    const RUSTC: &[u8] = b"rustc version ";
    comment.is_some_and(|bytes| bytes.windows(RUSTC.len()).any(|w| w == RUSTC))
}

/// Whether `name` is a Rust symbol name: v0 (`_R` then an uppercase letter
/// or a decimal version) or legacy (`_ZN`, ending in the hash segment
/// `17h` plus 16 lowercase hex digits and `E`, before an optional suffix
/// starting with `.`).
pub(crate) fn is_rust_mangled(name: &str) -> bool {
    let bytes = name.as_bytes();
    if let Some(rest) = name.strip_prefix("_R") {
        return rest
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    }
    if !name.starts_with("_ZN") {
        return false;
    }
    // The hash segment `17h` + 16 hex + `E`, at the end or before a `.`.
    const SEGMENT: usize = 3 + 16 + 1;
    (0..=bytes.len()).any(|end| {
        (end == bytes.len() || bytes[end] == b'.') && end >= SEGMENT + 3 && {
            let segment = &bytes[end - SEGMENT..end];
            segment.starts_with(b"17h")
                && segment[SEGMENT - 1] == b'E'
                && segment[3..SEGMENT - 1]
                    .iter()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        }
    })
}

/// What a relocation kept by `--emit-relocs` says about a place.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EmittedReloc {
    pub r_type: u32,
    /// The named symbol when it is a function or object we know (not a
    /// section symbol): the owner of the reference.
    pub symbol: Option<SymbolId>,
    /// The relocation names a section symbol: an assembler writes one for
    /// a reference to a local label or object (`.LC0`, `.rodata+16`),
    /// never for one naming a global symbol.
    pub section_symbol: bool,
    /// `S + A`.
    pub value: u64,
}

/// What the dynamic loader writes into a slot (GOT entry or pointer in data).
#[derive(Clone, Debug)]
pub(crate) enum Slot {
    /// The address of a symbol the loader looks up by name, plus addend.
    Named(String, i64),
    /// An address inside this image (relative relocation, or a symbol this
    /// image defines).
    Address(u64),
}

/// A linked image, read once.
#[derive(Debug)]
pub(crate) struct Image {
    pub arch: Arch,
    data: Vec<u8>,
    pub sections: Vec<Section>,
    pub symbols: Vec<Symbol>,
    /// Symbols with a size, by (address, larger size first).
    by_address: Vec<SymbolId>,
    /// Allocated sections by address.
    alloc_by_address: Vec<usize>,
    by_file_key: HashMap<(String, Option<String>, u32), SymbolId>,
    by_name_key: HashMap<(String, u32), SymbolId>,
    /// How many symbols share each (name, file), and each name.
    file_counts: HashMap<(String, Option<String>), u32>,
    name_counts: HashMap<String, u32>,
    /// The `STT_FILE` names that hold local symbols.
    files: HashSet<String>,
    /// Addresses of every symbol in allocated data, sized or not (`.LC0`
    /// labels a `-q` link keeps included), sorted.
    labels: Vec<u64>,
    /// Places of kept relocations that are not absolute pointers (offsets
    /// such as jump table entries), sorted.
    offset_places: Vec<u64>,
    /// Relocations a `-q` link kept, by place (virtual address).
    pub emitted: HashMap<u64, EmittedReloc>,
    /// Dynamic relocations by slot address.
    pub dynamic: HashMap<u64, Slot>,
    /// Slots other dynamic relocations fill (`IRELATIVE`, TLS): what they
    /// hold is known only at run time.
    pub runtime_slots: HashSet<u64>,
    /// Function symbols this image exports (`.dynsym`, defined).
    pub exported_functions: Vec<String>,
    /// Every symbol `.dynsym` defines: what another module can name.
    pub exported_names: HashSet<String>,
    /// Places holding pointers (dynamic relocations, kept absolute
    /// relocations), sorted.
    pointer_places: Vec<u64>,
    /// Where the pointers of `pointer_places` point (kept absolute
    /// relocations' `S + A`, relative dynamic relocations' addends), sorted:
    /// where a piece of data others point to starts (rustc's `&str`s in
    /// tables, packed back to back without a NUL).
    pointer_targets: Vec<u64>,
    /// `ET_DYN` (PIE or shared object): every pointer into the image has a
    /// dynamic relocation. In an `ET_EXEC` only those into other modules do.
    pub position_independent: bool,
    /// An executable (not a shared library): its own definitions come
    /// first in every lookup, so no other module's can take their place.
    pub is_program: bool,
    /// Where something enters code from outside any instruction: every
    /// symbol in an executable section that is not a data object (functions,
    /// `NOTYPE` labels), and the ELF entry point, unsorted.
    pub code_entries: Vec<u64>,
    /// [`Image::code_entries`], sorted and without duplicates.
    sorted_code_entries: Vec<u64>,
    /// x86-64: the start of every instruction some path reaches (see
    /// `reach.rs`), sorted; bytes of code no path reaches are data. Empty
    /// on AArch64, whose fixed-width words are decoded linearly.
    pub instruction_starts: Vec<u64>,
    /// Functions whose value, by their DWARF prototype, does not come back
    /// in a second register (`rdx`), by entry address, sorted
    /// (`dwarf.rs`).
    pub single_register_returns: Vec<u64>,
    /// Functions that, by their DWARF prototype, return an integer or
    /// pointer in the first integer register, by entry address, sorted.
    pub integer_returns: Vec<u64>,
    /// (entry address, how many argument registers the function reads),
    /// sorted, where its DWARF prototype says (`dwarf.rs`).
    pub argument_registers: Vec<(u64, u8)>,
    /// (entry address, bytes) of functions whose DWARF declares an
    /// alignment, sorted (`dwarf.rs`).
    pub declared_alignments: Vec<(u64, u64)>,
    /// Every non-code address an instruction references (x86-64: a reached
    /// one; AArch64: one in a function), sorted: where a piece of unnamed
    /// data (a table, a constant, a string) starts.
    pub referenced_data: Vec<u64>,
    /// x86-64: every place a jump table entry sends an indirect jump,
    /// sorted (see `reach.rs`).
    pub jump_targets: Vec<u64>,
    /// x86-64: the jump tables reached functions read, sorted by table.
    pub jump_tables: Vec<JumpTable>,
    /// Where the unwinder enters code (`eh.rs`), sorted.
    pub landing_pads: Vec<u64>,
    /// Each FDE with an exception table: (code start, code end, the
    /// table), sorted (`eh.rs`).
    pub exception_tables: Vec<(u64, u64, u64)>,
    /// Where calls go to functions that never return (`noreturn.rs`),
    /// sorted.
    pub noreturn_entries: Vec<u64>,
    /// GOT slots holding such a function (`noreturn::noreturn_slots`).
    pub noreturn_slots: Vec<u64>,
    /// Other callees proved never to return or not, as asked for
    /// ([`Image::never_returns_from`]).
    pub proved_noreturn: std::sync::Mutex<HashMap<u64, bool>>,
    /// (entry, GOT slot or PLT entry; what it reads) of the functions known
    /// to read what their pointer arguments point to only forward, sorted
    /// (`bounded_readers.rs`).
    pub forward_readers: Vec<(u64, crate::code::Reader)>,
    /// Where the link's input sections lie, from its map (PLAIN only, with
    /// `--plain-map`; see `icf-linkmap`).
    pub input_sections: Option<icf_linkmap::InputSections>,
    /// The objects that map names, read when a question needs them
    /// (PLAIN only; see `icf-linkmap`).
    pub input_objects: Option<icf_linkmap::InputObjects>,
    /// AArch64: (function entry, the caller-saved registers a call to it
    /// may write, a mask of x0-x30), sorted (`aarch64_clobbers.rs`).
    pub call_clobbers: Vec<(u64, u32)>,
    /// AArch64: the patches the linkers' Cortex-A53 erratum 843419 fix
    /// branches to (GNU ld's `e843419@*`, lld's `__CortexA53843419_*`),
    /// sorted: each holds the instruction it displaced, then a branch back.
    pub erratum_patches: Vec<u64>,
    /// Mach-O: the address of the Mach header (`__TEXT`'s `vmaddr`), which
    /// `__unwind_info` counts its offsets from; 0 for ELF.
    pub image_base: u64,
    /// Symbols have no sizes in the file: each runs to the next symbol,
    /// padding included, until `padding.rs` trims functions (Mach-O).
    pub sizes_to_next_symbol: bool,
    /// Mach-O: the runs of data inside code (`LC_DATA_IN_CODE`: jump
    /// tables, constant pools) as (start, end), sorted. Empty for ELF.
    pub data_in_code: Vec<(u64, u64)>,
    /// Whether the symbol table keeps bindings: some defined symbol is
    /// global or weak. mold makes every `.symtab` symbol of an executable
    /// local, so there a binding says nothing about linkage.
    pub bindings_kept: bool,
}

/// Emitted relocations that store an absolute address in data: their
/// `S + A` is the pointer's value.
pub(crate) fn is_absolute_pointer(arch: Arch, r_type: u32) -> bool {
    match arch {
        Arch::X86_64 => r_type == 1,    // R_X86_64_64
        Arch::Aarch64 => r_type == 257, // R_AARCH64_ABS64
    }
}

/// Emitted relocations whose field holds an absolute address (`S + A`):
/// pointers and address immediates.
pub(crate) fn is_absolute_address(arch: Arch, r_type: u32) -> bool {
    match arch {
        Arch::X86_64 => matches!(r_type, 1 | 10 | 11), // R_X86_64_64, _32, _32S
        Arch::Aarch64 => matches!(r_type, 257 | 258),  // R_AARCH64_ABS64, ABS32
    }
}

/// Emitted relocations whose 4-byte field holds an offset from its own
/// place (`S + A - P`): in read-only data, the entries of a table of
/// offsets (jump tables, tables of strings) that code adds to the table's
/// address.
pub(crate) fn is_relative_offset(arch: Arch, r_type: u32) -> bool {
    match arch {
        Arch::X86_64 => r_type == 2,    // R_X86_64_PC32
        Arch::Aarch64 => r_type == 261, // R_AARCH64_PREL32
    }
}

/// The bytes an emitted x86-64 relocation writes (what a comparison of
/// data in code must set apart); 4 for the types not named.
pub(crate) fn x86_field_size(r_type: u32) -> u64 {
    match r_type {
        0 => 0,                // R_X86_64_NONE
        1 | 24 | 25 | 29 => 8, // 64, PC64, GOTOFF64, GOTPC64
        12 | 13 => 2,          // 16, PC16
        14 | 15 => 1,          // 8, PC8
        _ => 4,
    }
}

/// A jump table a reached function reads, at least one entry of which
/// sends its indirect jump into the function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JumpTable {
    pub table: u64,
    /// The start of the function reading it.
    pub function: u64,
    /// How many entries the function's range check lets it select, when
    /// a check was recognized and nothing jumps past it (`x86_table.rs`).
    pub size: Option<TableSize>,
}

/// How many entries a jump table has, by its range check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableSize {
    /// How many entries the index can select.
    pub entries: u64,
    /// `cmp`/`ja`: exactly that many (every larger index goes elsewhere).
    /// A mask (`and $7`) only bounds the index: the compiler may know it
    /// smaller (a pointer's two tag bits under a mask of three) and lay
    /// the next table right after the entries it can reach.
    pub exact: bool,
    /// 4-byte offsets from the table's start (else 8-byte addresses).
    pub relative: bool,
}

/// The size of a jump table that several readers (dispatches) index,
/// from each one's bound (`None`: a reader whose index nothing bounds):
/// the table must be read as far as any reader can index it, so the
/// largest bound, exact only if an exact bound reaches it (a smaller exact
/// bound says only that the entries below it are cases; a mask's larger
/// bound does not say that the ones above are). No bound when a reader
/// has none, or when readers disagree on the entries' width.
pub(crate) fn combined_table_size(
    sizes: impl IntoIterator<Item = Option<TableSize>>,
) -> Option<TableSize> {
    let mut combined: Option<TableSize> = None;
    for size in sizes {
        let size = size?;
        combined = Some(match combined {
            None => size,
            Some(other) if other.relative != size.relative => return None,
            Some(other) => TableSize {
                entries: other.entries.max(size.entries),
                exact: (other.exact && other.entries >= size.entries)
                    || (size.exact && size.entries >= other.entries),
                relative: size.relative,
            },
        });
    }
    combined
}

/// What a format's reader (`elf/read.rs`, `macho/read.rs`) finds in an
/// image, before [`Image::assemble`] indexes it.
pub(crate) struct ImageParts {
    pub arch: Arch,
    /// The file's bytes (Mach-O: with chained fixups resolved in place).
    pub data: Vec<u8>,
    pub sections: Vec<Section>,
    /// Named functions and data objects, numbered ([`number_symbols`]).
    pub symbols: Vec<Symbol>,
    /// See [`Image::labels`]: sorted, without duplicates.
    pub labels: Vec<u64>,
    /// See [`Image::code_entries`].
    pub code_entries: Vec<u64>,
    /// See [`Image::erratum_patches`]: sorted.
    pub erratum_patches: Vec<u64>,
    /// See [`Image::bindings_kept`].
    pub bindings_kept: bool,
    pub relocations: Relocations,
    pub exported_functions: Vec<String>,
    pub exported_names: HashSet<String>,
    pub position_independent: bool,
    /// See [`Image::is_program`].
    pub is_program: bool,
    /// See [`Image::data_in_code`]: sorted.
    pub data_in_code: Vec<(u64, u64)>,
    /// See [`Image::sizes_to_next_symbol`].
    pub sizes_to_next_symbol: bool,
    /// See [`Image::image_base`].
    pub image_base: u64,
}

/// How many symbols share each (name, file), and each name.
type SymbolCounts = (HashMap<(String, Option<String>), u32>, HashMap<String, u32>);

/// Counts `symbols` by (name, file) and by name.
fn symbol_counts(symbols: &[Symbol]) -> SymbolCounts {
    let mut file_counts: HashMap<(String, Option<String>), u32> = HashMap::new();
    let mut name_counts: HashMap<String, u32> = HashMap::new();
    for s in symbols {
        *file_counts
            .entry((s.name.clone(), s.file.clone()))
            .or_insert(0) += 1;
        *name_counts.entry(s.name.clone()).or_insert(0) += 1;
    }
    (file_counts, name_counts)
}

/// Numbers `symbols`, in order, among those of the same (name, file) and
/// of the same name (their `ordinal_in_file` and `ordinal_in_name`).
pub(crate) fn number_symbols(symbols: &mut [Symbol]) {
    let mut in_file: HashMap<(String, Option<String>), u32> = HashMap::new();
    let mut in_name: HashMap<String, u32> = HashMap::new();
    for s in symbols {
        let f = in_file.entry((s.name.clone(), s.file.clone())).or_insert(0);
        s.ordinal_in_file = *f;
        *f += 1;
        let n = in_name.entry(s.name.clone()).or_insert(0);
        s.ordinal_in_name = *n;
        *n += 1;
    }
}

impl Image {
    /// The image a format's reader found: the lookups over its symbols and
    /// sections, and where its pointers and offsets are and point.
    pub(crate) fn assemble(parts: ImageParts) -> Image {
        let ImageParts {
            arch,
            data,
            sections,
            symbols,
            labels,
            code_entries,
            erratum_patches,
            bindings_kept,
            relocations,
            exported_functions,
            exported_names,
            position_independent,
            is_program,
            data_in_code,
            sizes_to_next_symbol,
            image_base,
        } = parts;
        let mut symbols = symbols;
        let rustc = made_by_rustc(
            sections
                .iter()
                .find(|s| s.name == ".comment" && !s.compressed)
                .and_then(|s| s.file_range)
                .and_then(|(start, end)| data.get(start..end)),
        );
        for symbol in &mut symbols {
            symbol.rustc_function =
                rustc && symbol.kind == SymbolKind::Function && is_rust_mangled(&symbol.name);
        }
        let lookups = SymbolLookups::new(&symbols);
        let (file_counts, name_counts) = symbol_counts(&symbols);
        let alloc_by_address = alloc_by_address(&sections);
        let pointer_places = pointer_places(arch, &relocations);
        let offset_places = offset_places(arch, &relocations.emitted);
        let pointer_targets = pointer_targets(arch, &sections, &relocations, &offset_places);
        let mut sorted_code_entries = code_entries.clone();
        sorted_code_entries.sort_unstable();
        sorted_code_entries.dedup();
        Image {
            pointer_targets,
            code_entries,
            sorted_code_entries,
            instruction_starts: Vec::new(),
            referenced_data: Vec::new(),
            jump_targets: Vec::new(),
            jump_tables: Vec::new(),
            landing_pads: Vec::new(),
            exception_tables: Vec::new(),
            noreturn_entries: Vec::new(),
            noreturn_slots: Vec::new(),
            proved_noreturn: std::sync::Mutex::new(HashMap::new()),
            forward_readers: Vec::new(),
            input_sections: None,
            input_objects: None,
            call_clobbers: Vec::new(),
            single_register_returns: Vec::new(),
            integer_returns: Vec::new(),
            argument_registers: Vec::new(),
            declared_alignments: Vec::new(),
            erratum_patches,
            bindings_kept,
            pointer_places,
            position_independent,
            is_program,
            arch,
            data,
            sections,
            symbols,
            by_address: lookups.by_address,
            alloc_by_address,
            by_file_key: lookups.by_file_key,
            by_name_key: lookups.by_name_key,
            file_counts,
            name_counts,
            files: lookups.files,
            labels,
            offset_places,
            emitted: relocations.emitted,
            dynamic: relocations.dynamic,
            runtime_slots: relocations.runtime_slots,
            exported_functions,
            exported_names,
            sizes_to_next_symbol,
            image_base,
            data_in_code,
        }
    }

    pub fn symbol(&self, id: SymbolId) -> &Symbol {
        &self.symbols[id.0 as usize]
    }

    /// Gives each (symbol, size) of `sizes` its new size (Mach-O functions
    /// without their padding: `padding.rs`), and sorts them by address anew.
    pub fn set_symbol_sizes(&mut self, sizes: &[(SymbolId, u64)]) {
        for &(id, size) in sizes {
            self.symbols[id.0 as usize].size = size;
        }
        self.by_address = SymbolLookups::new(&self.symbols).by_address;
    }

    /// The symbol of this image that is `other`'s symbol `id` in `other_image`:
    /// the same name in the same file at the same position. A local of a file
    /// this image names has no counterpart when that file lost it (a local
    /// folded into another unit's copy): another file's namesake is not it.
    /// Failing that (a global, or a file named only in `other_image`, as when
    /// the linker names an object without `STT_FILE` by its path, a
    /// temporary one for icf's rewritten objects) the same name at the same
    /// position among same-named symbols, if that symbol's file too is
    /// named only here: a file that lost every named local is still not the
    /// next one in line. Positions pair only where both images hold as
    /// many such symbols, and locals only where their file has one of that
    /// name: several are objects without `STT_FILE`, which lld lists under
    /// the previous file's name, in an order a fold may change. Those have
    /// no counterpart; their uses are still checked where they are made.
    pub fn counterpart(&self, other_image: &Image, id: SymbolId) -> Option<SymbolId> {
        let s = other_image.symbol(id);
        let file_key = (s.name.clone(), s.file.clone());
        let same_count = |mine: Option<&u32>, theirs: Option<&u32>| mine == theirs;
        let only_here = |file: &Option<String>| match (file, &s.file) {
            (None, None) => true,
            (Some(mine), Some(theirs)) => {
                !self.files.contains(theirs) && !other_image.files.contains(mine)
            }
            _ => false,
        };
        // Several locals of one name in one file are several objects the
        // linker named no file for: which is which is unknown.
        let ambiguous = s.file.is_some() && other_image.file_counts.get(&file_key) > Some(&1);
        let by_file = (!ambiguous
            && same_count(
                self.file_counts.get(&file_key),
                other_image.file_counts.get(&file_key),
            ))
        .then(|| {
            self.by_file_key
                .get(&(s.name.clone(), s.file.clone(), s.ordinal_in_file))
        })
        .flatten();
        by_file
            .or_else(|| {
                let known_here = self.file_counts.contains_key(&file_key);
                let counts_agree = same_count(
                    self.name_counts.get(&s.name),
                    other_image.name_counts.get(&s.name),
                );
                (!known_here && counts_agree && !ambiguous)
                    .then(|| self.by_name_key.get(&(s.name.clone(), s.ordinal_in_name)))
                    .flatten()
                    .filter(|&&found| only_here(&self.symbol(found).file))
            })
            .copied()
            .filter(|&found| self.symbol(found).kind == s.kind)
    }

    /// The allocated section holding `address`.
    pub fn section_at(&self, address: u64) -> Option<usize> {
        let i = self
            .alloc_by_address
            .partition_point(|&s| self.sections[s].address <= address);
        let index = *self.alloc_by_address.get(i.checked_sub(1)?)?;
        let s = &self.sections[index];
        (address < s.address.saturating_add(s.size)).then_some(index)
    }

    /// `len` bytes at `address`, if they are all in one section with file contents.
    pub fn bytes(&self, address: u64, len: u64) -> Option<&[u8]> {
        let section = &self.sections[self.section_at(address)?];
        let (start, end) = section.file_range?;
        let offset = usize::try_from(address - section.address).ok()?;
        let len = usize::try_from(len).ok()?;
        let from = start.checked_add(offset)?;
        let to = from.checked_add(len)?;
        (to <= end).then(|| &self.data[from..to])
    }

    /// The contents of the section named `name`, unless compressed or
    /// absent from the file (a section that is not loaded: `.debug_info`).
    pub fn section_contents(&self, name: &str) -> Option<&[u8]> {
        let section = self
            .sections
            .iter()
            .find(|s| s.name == name && !s.compressed)?;
        let (start, end) = section.file_range?;
        self.data.get(start..end)
    }

    /// The bytes from `address` to the end of its section.
    pub fn bytes_to_section_end(&self, address: u64) -> Option<&[u8]> {
        let section = &self.sections[self.section_at(address)?];
        let end = section.address.saturating_add(section.size);
        self.bytes(address, end - address)
    }

    pub fn read_u64(&self, address: u64) -> Option<u64> {
        let b = self.bytes(address, 8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    /// The address the GOT slot at `slot` holds whatever the loader does,
    /// when the link fixed it: a `RELATIVE` relocation's (the address of
    /// something in this image), or, in a position-dependent image, the
    /// word itself when no dynamic relocation writes it and it points into
    /// the image. Loading such a slot is taking that address (what a
    /// linker that relaxes the load writes instead: `lea`, `mov $sym`).
    /// `None` for a slot the loader binds by name (which another module
    /// may define) or fills at run time (an `IRELATIVE` resolver's result,
    /// a TLS offset), and for anything but `.got`.
    /// Where a call through the GOT slot `slot` goes, when the image says:
    /// its [`Image::got_constant`], or in a program the function the
    /// image itself defines of the name the slot binds (an executable's
    /// definition is the one every module's lookup finds).
    pub fn got_callee(&self, slot: u64) -> Option<u64> {
        if let Some(address) = self.got_constant(slot) {
            return Some(address);
        }
        let Some(Slot::Named(name, 0)) = self.dynamic.get(&slot) else {
            return None;
        };
        let name = name.split('@').next().unwrap_or(name);
        if !self.is_program || self.runtime_slots.contains(&slot) {
            return None;
        }
        let id = self.by_name_key.get(&(name.to_owned(), 0))?;
        let symbol = self.symbol(*id);
        (symbol.kind == SymbolKind::Function && symbol.global).then_some(symbol.address)
    }

    pub fn got_constant(&self, slot: u64) -> Option<u64> {
        let section = &self.sections[self.section_at(slot)?];
        if section.role != SectionRole::Got {
            return None;
        }
        if self.runtime_slots.contains(&slot) {
            return None;
        }
        match self.dynamic.get(&slot) {
            Some(Slot::Address(address)) => Some(*address),
            Some(Slot::Named(..)) => None,
            None if self.position_independent => None,
            None => self.read_u64(slot).filter(|&a| self.is_mapped(a)),
        }
    }

    /// The address the word at `at` holds once loaded: what a dynamic
    /// relocation puts there, else the word itself.
    pub fn read_pointer(&self, at: u64) -> Option<u64> {
        match self.dynamic.get(&at) {
            Some(Slot::Address(a)) => Some(*a),
            Some(Slot::Named(..)) => None,
            None => self.read_u64(at),
        }
    }

    /// Whether `address` lies in an allocated, executable section, and
    /// not in a run of data there (Mach-O's `LC_DATA_IN_CODE`).
    pub fn is_code(&self, address: u64) -> bool {
        self.section_at(address)
            .is_some_and(|s| self.sections[s].executable)
            && !self.in_data_in_code(address)
    }

    /// Whether `address` lies in a run of data inside code
    /// ([`Image::data_in_code`]).
    pub fn in_data_in_code(&self, address: u64) -> bool {
        let i = self
            .data_in_code
            .partition_point(|&(start, _)| start <= address);
        i.checked_sub(1)
            .is_some_and(|i| address < self.data_in_code[i].1)
    }

    /// The places in `(start, end)` where a run of data inside code starts
    /// or ends, sorted: where a run of unreached bytes is split.
    pub fn data_in_code_bounds(&self, start: u64, end: u64) -> Vec<u64> {
        let mut bounds: Vec<u64> = self
            .data_in_code
            .iter()
            .flat_map(|&(from, to)| [from, to])
            .filter(|&a| start < a && a < end)
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        bounds
    }

    /// The reached instruction starts in `[start, end)`.
    pub fn instruction_starts_in(&self, start: u64, end: u64) -> &[u64] {
        let from = self.instruction_starts.partition_point(|&a| a < start);
        let to = self.instruction_starts.partition_point(|&a| a < end);
        &self.instruction_starts[from..to.max(from)]
    }

    /// Whether the image exports a definition of `name` (`.dynsym`).
    pub fn exports(&self, name: &str) -> bool {
        self.exported_names.contains(name)
    }

    /// The jump table targets in `[start, end)`.
    /// The records of the jump table at `table` (one per function reading it).
    pub fn jump_table_at(&self, table: u64) -> &[JumpTable] {
        let from = self.jump_tables.partition_point(|t| t.table < table);
        let to = self.jump_tables.partition_point(|t| t.table <= table);
        &self.jump_tables[from..to]
    }

    /// How many entries the jump table at `table` has, as the range checks
    /// of its readers say (see [`combined_table_size`]).
    pub fn jump_table_size(&self, table: u64) -> Option<TableSize> {
        combined_table_size(self.jump_table_at(table).iter().map(|t| t.size))
    }

    pub fn jump_targets_in(&self, start: u64, end: u64) -> &[u64] {
        let from = self.jump_targets.partition_point(|&a| a < start);
        let to = self.jump_targets.partition_point(|&a| a < end);
        &self.jump_targets[from..to.max(from)]
    }

    pub fn read_u32(&self, address: u64) -> Option<u32> {
        let b = self.bytes(address, 4)?;
        Some(u32::from_le_bytes(b.try_into().ok()?))
    }

    /// Symbols containing `address`, innermost (latest start) first, and
    /// then those ending exactly at it (a one-past-the-end reference).
    pub fn symbols_around(&self, address: u64) -> (Vec<SymbolId>, Vec<SymbolId>) {
        let mut containing = Vec::new();
        let mut ending = Vec::new();
        let i = self
            .by_address
            .partition_point(|id| self.symbol(*id).address <= address);
        let mut starts_seen = 0;
        let mut last_start = None;
        for &id in self.by_address[..i].iter().rev() {
            let s = self.symbol(id);
            if last_start != Some(s.address) {
                starts_seen += 1;
                last_start = Some(s.address);
                if starts_seen > 8 {
                    break;
                }
            }
            if address < s.end() {
                containing.push(id);
            } else if address == s.end() {
                ending.push(id);
            }
        }
        (containing, ending)
    }

    /// Whether `address` lies in a C++ vtable or construction vtable
    /// (an object named `_ZTV*` or `_ZTC*`).
    pub fn in_vtable(&self, address: u64) -> bool {
        let (containing, _) = self.symbols_around(address);
        containing.iter().any(|&id| {
            let s = self.symbol(id);
            s.kind == SymbolKind::Object
                && (s.name.starts_with("_ZTV") || s.name.starts_with("_ZTC"))
        })
    }

    /// The function symbol starting at `address` with the largest size.
    pub fn function_starting_at(&self, address: u64) -> Option<SymbolId> {
        let i = self
            .by_address
            .partition_point(|id| self.symbol(*id).address < address);
        self.by_address[i..]
            .iter()
            .take_while(|id| self.symbol(**id).address == address)
            .find(|id| self.symbol(**id).kind == SymbolKind::Function)
            .copied()
    }

    /// Whether a vague-linkage function starts at `address`: a weak
    /// (`STB_WEAK`) function symbol with a C++ mangled name (`_Z`), as
    /// inline functions and template instances are. In an image whose
    /// symbol table keeps no binding (mold's), any `_Z` function.
    pub fn vague_linkage_function_at(&self, address: u64) -> bool {
        let i = self
            .by_address
            .partition_point(|id| self.symbol(*id).address < address);
        self.by_address[i..]
            .iter()
            .map(|id| self.symbol(*id))
            .take_while(|s| s.address == address)
            .any(|s| {
                s.kind == SymbolKind::Function
                    && (s.weak || !self.bindings_kept || self.in_comdat_group(address))
                    && s.name.starts_with("_Z")
            })
    }

    /// Whether the input object the link map names put the input section
    /// holding `address` in a COMDAT group: an inline function's, even
    /// where hidden visibility (`-fvisibility-inlines-hidden`) made the
    /// image's symbol local.
    fn in_comdat_group(&self, address: u64) -> bool {
        let (Some(objects), Some(map)) = (&self.input_objects, &self.input_sections) else {
            return false;
        };
        objects.in_comdat_group(map, address)
    }

    /// Where code reached at `address` really goes on: past the `nop`s
    /// a linker or a new layout put between functions, when no symbol
    /// holds `address`. Running a `nop` changes nothing, so code that
    /// runs on into padding and then into a function does what code
    /// running straight into it does. Anything else (a trap, a zero)
    /// stops the walk: running it is not running on.
    pub fn past_nop_padding(&self, address: u64) -> u64 {
        if !self.symbols_around(address).0.is_empty() || !self.is_code(address) {
            return address;
        }
        let end = self.next_symbol_start(address);
        let Some(bytes) = end
            .checked_sub(address)
            .and_then(|len| self.bytes(address, len))
        else {
            return address;
        };
        let skipped = match self.arch {
            Arch::Aarch64 => {
                4 * bytes
                    .chunks_exact(4)
                    .take_while(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) == 0xd503_201f)
                    .count()
            }
            Arch::X86_64 => {
                let mut decoder =
                    iced_x86::Decoder::with_ip(64, bytes, address, iced_x86::DecoderOptions::NONE);
                let mut at = 0;
                while decoder.can_decode() {
                    let instruction = decoder.decode();
                    if instruction.is_invalid() || instruction.mnemonic() != iced_x86::Mnemonic::Nop
                    {
                        break;
                    }
                    at += instruction.len();
                }
                at
            }
        };
        address + skipped as u64
    }

    /// The start of the first symbol after `address` (bounded by its section's end).
    pub fn next_symbol_start(&self, address: u64) -> u64 {
        let section_end = self
            .section_at(address)
            .map(|s| {
                self.sections[s]
                    .address
                    .saturating_add(self.sections[s].size)
            })
            .unwrap_or(address);
        let i = self
            .by_address
            .partition_point(|id| self.symbol(*id).address <= address);
        self.by_address
            .get(i)
            .map(|id| self.symbol(*id).address)
            .unwrap_or(u64::MAX)
            .min(section_end)
    }

    /// The first entry into code after `address` (a function or `NOTYPE`
    /// symbol of an executable section, sized or not: a linker's
    /// range-extension thunk, an AArch64 mapping symbol), else `u64::MAX`.
    pub fn next_code_entry(&self, address: u64) -> u64 {
        let i = self.sorted_code_entries.partition_point(|&a| a <= address);
        self.sorted_code_entries.get(i).copied().unwrap_or(u64::MAX)
    }

    /// The first data label after `address` (any symbol, sized or not, such
    /// as the `.LC0` a compiler puts before each constant), else `u64::MAX`.
    pub fn next_label(&self, address: u64) -> u64 {
        let i = self.labels.partition_point(|&a| a <= address);
        self.labels.get(i).copied().unwrap_or(u64::MAX)
    }

    /// Where unnamed data at `address` ends at the latest: the next symbol,
    /// data label, or place a reached instruction references.
    pub fn data_end(&self, address: u64) -> u64 {
        let i = self.referenced_data.partition_point(|&a| a <= address);
        let referenced = self.referenced_data.get(i).copied().unwrap_or(u64::MAX);
        let i = self.pointer_targets.partition_point(|&a| a <= address);
        let pointed_to = self.pointer_targets.get(i).copied().unwrap_or(u64::MAX);
        self.next_symbol_start(address)
            .min(self.next_label(address))
            .min(referenced)
            .min(pointed_to)
    }

    /// The first place after `address` holding a kept relocation that is not
    /// an absolute pointer (an offset, as in a jump table that follows a
    /// string), else `u64::MAX`.
    pub fn next_offset_place(&self, address: u64) -> u64 {
        let i = self.offset_places.partition_point(|&a| a <= address);
        self.offset_places.get(i).copied().unwrap_or(u64::MAX)
    }

    /// The pointer places in `[start, start + size)`.
    pub fn pointer_places_in(&self, start: u64, size: u64) -> &[u64] {
        let from = self.pointer_places.partition_point(|&p| p < start);
        let to = self
            .pointer_places
            .partition_point(|&p| p < start.saturating_add(size));
        &self.pointer_places[from..to]
    }

    /// Whether a relocation writes the `width`-byte word at `address` (a
    /// 4-byte offset or an 8-byte pointer): a kept one (`-q`), or for a
    /// pointer in a position-independent image a dynamic one; `None` when
    /// nothing can tell.
    pub fn relocated_word(&self, address: u64, width: u64) -> Option<bool> {
        if !self.has_emitted_relocs() {
            // A position-independent image relocates every address it
            // stores at load time (an offset between two of its places
            // needs none).
            return (width == 8 && !self.pointers_unmarked())
                .then(|| self.dynamic.contains_key(&address));
        }
        let places = if width == 4 {
            &self.offset_places
        } else {
            &self.pointer_places
        };
        Some(places.binary_search(&address).is_ok())
    }

    /// Whether the image kept its link-time relocations (`-q`).
    pub fn has_emitted_relocs(&self) -> bool {
        !self.emitted.is_empty()
    }

    /// Whether nothing says which data words are pointers into the image:
    /// no kept relocations, and no dynamic relocations covering them (none
    /// at all, or a position-dependent executable, whose dynamic relocations
    /// only fill slots for other modules).
    pub fn pointers_unmarked(&self) -> bool {
        !self.has_emitted_relocs() && (self.dynamic.is_empty() || !self.position_independent)
    }

    /// Whether any allocated section of this image holds `address`.
    pub fn is_mapped(&self, address: u64) -> bool {
        self.section_at(address).is_some()
    }
}

/// The ways [`Image`] finds its symbols: by address, by (name, file,
/// position) and by (name, position).
struct SymbolLookups {
    /// See [`Image::by_address`].
    by_address: Vec<SymbolId>,
    by_file_key: HashMap<(String, Option<String>, u32), SymbolId>,
    by_name_key: HashMap<(String, u32), SymbolId>,
    /// The `STT_FILE` names that hold local symbols.
    files: HashSet<String>,
}

impl SymbolLookups {
    /// Indexes `symbols`.
    fn new(symbols: &[Symbol]) -> SymbolLookups {
        let mut by_file_key = HashMap::with_capacity(symbols.len());
        let mut by_name_key = HashMap::with_capacity(symbols.len());
        let files: HashSet<String> = symbols.iter().filter_map(|s| s.file.clone()).collect();
        for (i, s) in symbols.iter().enumerate() {
            let id = SymbolId(i as u32);
            by_file_key.insert((s.name.clone(), s.file.clone(), s.ordinal_in_file), id);
            by_name_key.insert((s.name.clone(), s.ordinal_in_name), id);
        }
        let mut by_address: Vec<SymbolId> = (0..symbols.len() as u32)
            .map(SymbolId)
            .filter(|id| symbols[id.0 as usize].size > 0)
            .collect();
        by_address.sort_by_key(|id| {
            let s = &symbols[id.0 as usize];
            (s.address, std::cmp::Reverse(s.size), id.0)
        });
        SymbolLookups {
            by_address,
            by_file_key,
            by_name_key,
            files,
        }
    }
}

impl Image {
    /// Takes the link's map (see `icf-linkmap`): each local symbol's file
    /// becomes the input file its input section came from, where the map
    /// has one (linkers name the file of a local only through an
    /// `STT_FILE` symbol, which objects may lack: then every local seems
    /// to belong to the last file that had one). Used only when both
    /// images have their map, so that both name files alike.
    pub(crate) fn take_map(&mut self, sections: icf_linkmap::InputSections) {
        for symbol in &mut self.symbols {
            if symbol.file.is_none() {
                continue;
            }
            if let Some(file) = sections.file_at(symbol.address) {
                symbol.file = Some(format!("map:{}", sections.file_key(file)));
            }
        }
        number_symbols(&mut self.symbols);
        let lookups = SymbolLookups::new(&self.symbols);
        let (file_counts, name_counts) = symbol_counts(&self.symbols);
        self.by_address = lookups.by_address;
        self.by_file_key = lookups.by_file_key;
        self.by_name_key = lookups.by_name_key;
        self.files = lookups.files;
        self.file_counts = file_counts;
        self.name_counts = name_counts;
        self.input_sections = Some(sections);
    }
}

/// The allocated sections with a size, by address.
fn alloc_by_address(sections: &[Section]) -> Vec<usize> {
    let mut alloc_by_address: Vec<usize> = (0..sections.len())
        .filter(|&i| sections[i].alloc && sections[i].size > 0)
        .collect();
    alloc_by_address.sort_by_key(|&i| sections[i].address);
    alloc_by_address
}

/// The image's relocations: those a `-q` link kept, and the dynamic ones.
#[derive(Default)]
pub(crate) struct Relocations {
    /// See [`Image::emitted`].
    pub emitted: HashMap<u64, EmittedReloc>,
    /// See [`Image::dynamic`].
    pub dynamic: HashMap<u64, Slot>,
    /// See [`Image::runtime_slots`].
    pub runtime_slots: HashSet<u64>,
}

/// See [`Image::pointer_places`]: the slots of dynamic relocations and the
/// places of kept absolute pointers, sorted, without duplicates.
fn pointer_places(arch: Arch, relocations: &Relocations) -> Vec<u64> {
    let mut pointer_places: Vec<u64> = relocations
        .dynamic
        .keys()
        .copied()
        .chain(
            relocations
                .emitted
                .iter()
                .filter(|(_, r)| is_absolute_pointer(arch, r.r_type))
                .map(|(place, _)| *place),
        )
        .collect();
    pointer_places.sort_unstable();
    pointer_places.dedup();
    pointer_places
}

/// See [`Image::offset_places`]: the places of kept relocations that are
/// not absolute pointers, sorted.
fn offset_places(arch: Arch, emitted: &HashMap<u64, EmittedReloc>) -> Vec<u64> {
    let mut offset_places: Vec<u64> = emitted
        .iter()
        .filter(|(_, r)| !is_absolute_pointer(arch, r.r_type))
        .map(|(place, _)| *place)
        .collect();
    offset_places.sort_unstable();
    offset_places
}

/// See [`Image::pointer_targets`]: where kept absolute pointers and the
/// loader's addresses point, and where the entries of tables of offsets
/// point, sorted, without duplicates.
fn pointer_targets(
    arch: Arch,
    sections: &[Section],
    relocations: &Relocations,
    offset_places: &[u64],
) -> Vec<u64> {
    let mut pointer_targets: Vec<u64> = relocations
        .emitted
        .values()
        .filter(|r| is_absolute_pointer(arch, r.r_type))
        .map(|r| r.value)
        .chain(relocations.dynamic.values().filter_map(|slot| match slot {
            Slot::Address(a) => Some(*a),
            Slot::Named(..) => None,
        }))
        .collect();
    pointer_targets.extend(offset_table_targets(
        arch,
        sections,
        &relocations.emitted,
        offset_places,
    ));
    pointer_targets.sort_unstable();
    pointer_targets.dedup();
    pointer_targets
}

/// Where the entries of tables of 4-byte offsets from their start point
/// (rustc's tables of strings, jump tables): each run of kept relative
/// relocations 4 bytes apart outside code is one table whose entry at `P`
/// names `T + S + A - P`, with `T` the run's start. In the order of
/// `offset_places`.
fn offset_table_targets(
    arch: Arch,
    sections: &[Section],
    emitted: &HashMap<u64, EmittedReloc>,
    offset_places: &[u64],
) -> Vec<u64> {
    let mut targets = Vec::new();
    let mut run_start = None;
    let mut previous = None;
    for &place in offset_places {
        let Some(reloc) = emitted.get(&place) else {
            continue;
        };
        let in_code = sections.iter().any(|s| {
            s.executable && (s.address..s.address.saturating_add(s.size)).contains(&place)
        });
        if !is_relative_offset(arch, reloc.r_type) || in_code {
            previous = None;
            continue;
        }
        let table = match (previous, run_start) {
            (Some(p), Some(t)) if p + 4 == place => t,
            _ => place,
        };
        run_start = Some(table);
        previous = Some(place);
        targets.push(table.wrapping_add(reloc.value).wrapping_sub(place));
    }
    targets
}

/// `name+0x10`, or `name` at offset 0.
pub(crate) fn plus(name: &str, offset: u64) -> String {
    if offset == 0 {
        name.to_string()
    } else {
        format!("{name}+{offset:#x}")
    }
}

#[cfg(test)]
mod tests {
    use super::{
        Symbol, SymbolKind, TableSize, combined_table_size, is_rust_mangled, made_by_rustc,
    };

    fn size(entries: u64, exact: bool) -> Option<TableSize> {
        Some(TableSize {
            entries,
            exact,
            relative: true,
        })
    }

    #[test]
    fn a_table_is_read_as_far_as_any_reader_indexes_it() {
        // One reader checks `cmp $1; ja` (2 entries exactly), another
        // masks `and $3` (up to 4): the table has 4 entries to compare.
        assert_eq!(
            combined_table_size([size(2, true), size(4, false)]),
            size(4, false)
        );
        assert_eq!(
            combined_table_size([size(4, false), size(2, true)]),
            size(4, false)
        );
        // An exact bound that reaches as far as the others stays exact.
        assert_eq!(
            combined_table_size([size(4, false), size(4, true)]),
            size(4, true)
        );
        assert_eq!(
            combined_table_size([size(3, true), size(5, true)]),
            size(5, true)
        );
        // A reader without a bound leaves the table unbounded.
        assert_eq!(combined_table_size([size(2, true), None]), None);
        assert_eq!(combined_table_size([]), None);
        // Readers that disagree on the entries' width: no bound.
        let absolute = Some(TableSize {
            entries: 2,
            exact: true,
            relative: false,
        });
        assert_eq!(combined_table_size([size(2, true), absolute]), None);
    }

    fn object(name: &str, global: bool) -> Symbol {
        Symbol {
            name: name.to_string(),
            file: None,
            ordinal_in_file: 0,
            ordinal_in_name: 0,
            address: 0x1000,
            size: 16,
            kind: SymbolKind::Object,
            section: 0,
            weak: false,
            global,
            hidden: false,
            rustc_function: false,
        }
    }

    #[test]
    fn only_locals_of_a_compilers_names_are_anonymous_constants() {
        for name in [
            ".Lanon.6834638a5033a7d54f2cae00dbc36086.4",
            "anon.6834638a5033a7d54f2cae00dbc36086.4.llvm.12",
            "alloc_68d244bd4070015bf9253d1ac51d25f8",
            "CSWTCH.12",
            "CSWTCH.1.lto_priv.0",
            ".LC0",
        ] {
            assert!(object(name, false).is_anonymous_constant(), "{name}");
            // A global of that name is the program's own object, unless
            // hidden (link-time optimization shares it that way).
            assert!(!object(name, true).is_anonymous_constant(), "{name}");
            let hidden = Symbol {
                hidden: true,
                ..object(name, true)
            };
            assert!(hidden.is_anonymous_constant(), "{name}");
        }
        // A C static named like rustc's constants, without the hash.
        for name in ["alloc_small", "alloc_", "CSWTCH", "CSWTCH.x", "table"] {
            assert!(!object(name, false).is_anonymous_constant(), "{name}");
        }
    }

    #[test]
    fn rustc_is_named_in_the_comment() {
        assert!(made_by_rustc(Some(
            b"GCC: (Debian 12.2.0) 12.2.0\0rustc version 1.95.0 (59807616e 2026-04-14)\0"
        )));
        assert!(!made_by_rustc(Some(b"GCC: (Debian 12.2.0) 12.2.0\0")));
        assert!(!made_by_rustc(None));
    }

    #[test]
    fn rust_names_are_recognized() {
        assert!(is_rust_mangled(
            "_ZN44_$LT$$RF$T$u20$as$u20$core..fmt..Display$GT$3fmt17h7b11a6c9931a612aE"
        ));
        assert!(is_rust_mangled("_ZN3foo3bar17h0123456789abcdefE.llvm.42"));
        assert!(is_rust_mangled("_RNvCs1234_4main3foo"));
        assert!(!is_rust_mangled("_ZN3foo3barEv"));
        assert!(!is_rust_mangled("_ZN3foo3bar17h0123456789abcdeE"));
        assert!(!is_rust_mangled("_Z3foov"));
        assert!(!is_rust_mangled("main"));
        assert!(!is_rust_mangled("_Rx"));
    }
}
