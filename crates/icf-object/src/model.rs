//! The object model the pipeline works on: sections with their bytes and
//! relocations, symbols, groups of sections kept or dropped together, and
//! indices into them. Its shape is format-neutral; section types and flags
//! use ELF's vocabulary (`SHT_*`, `SHF_*`), which the pipeline never reads
//! directly: it asks the predicates here ([`Section::is_executable`],
//! [`Section::is_read_only_data`], ...). `elf/read.rs` reads an ELF object into
//! this model and `elf/write.rs` writes it back; another format is another
//! reader and writer of the same model.

use object::elf;

/// `SHT_LLVM_ADDRSIG`: the symbols whose address is significant (the
/// model's section type for it, whatever the format).
pub const SHT_LLVM_ADDRSIG: u32 = 0x6fff_4c03;

/// The bound on every magnitude a reader (ELF or Mach-O) accepts for a place: relocation
/// addends, values of symbols defined in a section, and section sizes are
/// all below 2^60 (an exbibyte: no x86-64 or AArch64 address space maps more
/// than 2^57 bytes). So later phases add a symbol value, an addend, an
/// offset and a field's size in `i64` without checks: no such sum can
/// overflow. The cost: objects that keep a tag in a pointer's top byte
/// (HWASan's tagged globals, `sym + (tag << 56)`) are refused by name rather
/// than folded; the lifter still computes addends modulo 2^64 (absolute
/// symbols may have any value), so it agrees with this bound.
pub const MAX_PLACE_MAGNITUDE: u64 = 1 << 60;

/// Index of a section in its object, as in the ELF section header table (0 is the null section).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct SectionIndex(pub u32);

/// Index of a symbol in its object's symbol table (0 is the null symbol).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct SymbolIndex(pub u32);

/// Index of a group in its object's [`Object::groups`](crate::Object::groups).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct GroupIndex(pub u32);

impl GroupIndex {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a relocation in its section's [`Section::relocs`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct RelocIndex(pub u32);

impl RelocIndex {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl SectionIndex {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl SymbolIndex {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A relocation, attached to the section it patches.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Reloc {
    /// Offset of the patched field in the section.
    pub offset: u64,
    pub r_type: u32,
    /// `SymbolIndex(0)` when the relocation names no symbol.
    pub symbol: SymbolIndex,
    pub addend: i64,
    /// Size of the patched field in bytes.
    pub size: u8,
    pub pc_relative: bool,
}

/// A section header with its contents.
#[derive(Clone, Debug)]
pub struct Section<'data> {
    pub name: &'data [u8],
    pub(crate) sh_type: u32,
    pub(crate) flags: u64,
    pub align: u64,
    pub size: u64,
    pub(crate) link: u32,
    pub(crate) info: u32,
    pub(crate) entsize: u64,
    /// The bytes; empty for `SHT_NOBITS`.
    pub data: &'data [u8],
    /// Relocations patching this section, sorted by offset; empty when
    /// [`Section::relocs_deferred`] (then [`crate::Object::relocations`]
    /// reads them).
    pub relocs: Vec<Reloc>,
    /// The `SHT_RELA` or `SHT_CREL` section they came from.
    pub reloc_section: Option<SectionIndex>,
    /// The relocations were left unread: the section is not loaded (debug
    /// information), the analysis never reads them, and they are most of
    /// an object's relocations. Only a rewrite of the object reads them.
    pub relocs_deferred: bool,
    /// The group this section belongs to.
    pub group: Option<GroupIndex>,
    /// Its name says nothing of how the link treats it ([`plain_name`]),
    /// told once while the name is read: later questions about many
    /// sections need not bring the string tables back into memory.
    pub name_is_plain: bool,
}

/// The XXH3-128 fingerprint of a section named `name`: the same-named
/// member of another instance of a COMDAT group is found by it (equal
/// fingerprints are equal names; see [`ComdatGroup::member_names`]).
pub fn name_fingerprint(name: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(name)
}

/// Whether a section named `name` is, by its name alone, like any other:
/// not one the link runs (`.init`, `.fini`, `.ctors`, `.dtors`, or one of
/// theirs, `.init.1`), and not one `__start_`/`__stop_` symbols may
/// delimit (a C identifier).
pub fn plain_name(name: &[u8]) -> bool {
    let runs = [&b".init"[..], b".fini", b".ctors", b".dtors"]
        .iter()
        .any(|s| {
            name.strip_prefix(*s)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"."))
        });
    !runs && !is_c_identifier(name)
}

/// Whether `name` is a C identifier (what `__start_NAME` can name).
pub fn is_c_identifier(name: &[u8]) -> bool {
    !name.is_empty()
        && name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && !name[0].is_ascii_digit()
}

impl Section<'_> {
    pub fn name_lossy(&self) -> String {
        String::from_utf8_lossy(self.name).into_owned()
    }

    /// One of this section's relocations.
    pub fn reloc(&self, index: RelocIndex) -> &Reloc {
        &self.relocs[index.index()]
    }

    pub fn is_executable(&self) -> bool {
        self.sh_type == elf::SHT_PROGBITS.0 && self.flags & elf::SHF_EXECINSTR.0 != 0
    }

    pub fn is_writable(&self) -> bool {
        self.flags & elf::SHF_WRITE.0 != 0
    }

    pub fn is_alloc(&self) -> bool {
        self.flags & elf::SHF_ALLOC.0 != 0
    }

    /// Bytes from the file (not zero-filled like `.bss`), neither notes
    /// nor any other special kind.
    pub fn is_plain_data(&self) -> bool {
        self.sh_type == elf::SHT_PROGBITS.0
    }

    /// Elements the linker merges by content itself (`SHF_MERGE`).
    pub fn is_mergeable(&self) -> bool {
        self.flags & elf::SHF_MERGE.0 != 0
    }

    /// A mergeable section's elements are zero-terminated strings
    /// (`SHF_STRINGS`), not fixed-size entries.
    pub fn holds_strings(&self) -> bool {
        self.flags & elf::SHF_STRINGS.0 != 0
    }

    /// One copy per thread (`SHF_TLS`).
    pub fn is_thread_local(&self) -> bool {
        self.flags & elf::SHF_TLS.0 != 0
    }

    /// Placed in the output by the section it is linked to
    /// (`SHF_LINK_ORDER`), and kept or dropped with it.
    pub fn follows_its_link(&self) -> bool {
        self.flags & elf::SHF_LINK_ORDER.0 != 0
    }

    /// Kept by a `--gc-sections` link whatever refers to it
    /// (`SHF_GNU_RETAIN`).
    pub fn is_retained(&self) -> bool {
        self.flags & elf::SHF_GNU_RETAIN.0 != 0
    }

    /// For `SHF_LINK_ORDER`, the section this one is linked to
    /// (`sh_link`); `None` for a section that follows no other.
    pub fn linked_section(&self) -> Option<SectionIndex> {
        self.follows_its_link().then_some(SectionIndex(self.link))
    }

    /// For a relocation section (`SHT_RELA`, `SHT_CREL`), the section its
    /// relocations patch (`sh_info`).
    pub fn patched_section(&self) -> Option<SectionIndex> {
        is_relocation_section(self.sh_type).then_some(SectionIndex(self.info))
    }

    /// The size of each element of a table or a mergeable section
    /// (`sh_entsize`; 0 when it holds no fixed-size elements).
    pub fn entry_size(&self) -> u64 {
        self.entsize
    }

    /// A note (`SHT_NOTE`), which a `--gc-sections` link keeps.
    pub fn is_note(&self) -> bool {
        self.sh_type == elf::SHT_NOTE.0
    }

    /// Pointers the loader calls at start-up or exit (`.init_array`,
    /// `.fini_array`, `.preinit_array` by type), which a `--gc-sections`
    /// link keeps.
    pub fn is_init_or_fini_array(&self) -> bool {
        [
            elf::SHT_INIT_ARRAY.0,
            elf::SHT_FINI_ARRAY.0,
            elf::SHT_PREINIT_ARRAY.0,
        ]
        .contains(&self.sh_type)
    }

    /// Read-only data a fold can share: allocated, not writable, not code,
    /// not mergeable (the linker merges those by content itself), not
    /// thread-local, not empty, and not `.eh_frame` (unwind entries are
    /// attributes of functions).
    pub fn is_read_only_data(&self) -> bool {
        self.is_plain_data()
            && self.is_alloc()
            && !self.is_writable()
            && !self.is_executable()
            && !self.is_mergeable()
            && !self.is_thread_local()
            && self.size > 0
            && self.name != b".eh_frame"
    }
}

/// Whether an ELF section of type `sh_type` holds relocations icf reads:
/// `SHT_RELA`, or `SHT_CREL` (compact relocations, written back as
/// `SHT_RELA`).
pub(crate) fn is_relocation_section(sh_type: u32) -> bool {
    sh_type == elf::SHT_RELA.0 || sh_type == elf::SHT_CREL.0
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Binding {
    Local,
    Global,
    Weak,
    /// `STB_GNU_UNIQUE`: one definition per process, like a COMDAT across shared objects.
    Unique,
    Other(u8),
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum SymbolKind {
    NoType,
    Object,
    Func,
    Section,
    File,
    Common,
    Tls,
    /// `STT_GNU_IFUNC`: the symbol's value is a resolver, never folded.
    Ifunc,
    Other(u8),
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Visibility {
    Default,
    Internal,
    Hidden,
    Protected,
}

/// Where a symbol is defined.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum SymbolPlace {
    Undefined,
    Absolute,
    Common,
    Section(SectionIndex),
}

#[derive(Clone, Debug)]
pub struct Symbol<'data> {
    pub name: &'data [u8],
    pub binding: Binding,
    pub kind: SymbolKind,
    pub visibility: Visibility,
    /// The raw `st_other` byte (visibility plus machine-specific bits); for
    /// Mach-O, `n_desc`'s `N_WEAK_DEF` and `N_WEAK_REF` bits.
    pub other: u8,
    pub place: SymbolPlace,
    pub value: u64,
    pub size: u64,
}

impl Symbol<'_> {
    pub fn name_lossy(&self) -> String {
        String::from_utf8_lossy(self.name).into_owned()
    }

    pub fn section(&self) -> Option<SectionIndex> {
        match self.place {
            SymbolPlace::Section(index) => Some(index),
            _ => None,
        }
    }

    pub fn is_defined(&self) -> bool {
        self.place != SymbolPlace::Undefined
    }

    /// The flags besides binding, kind and visibility that a copy of this
    /// symbol carries over (ELF: `st_other`'s machine bits, such as
    /// `STO_AARCH64_VARIANT_PCS`; Mach-O: `n_desc`'s weak bits).
    pub fn flags(&self) -> u8 {
        self.other & !0x3
    }
}

/// A `SHT_GROUP` section: sections kept or discarded together.
#[derive(Clone, Debug)]
pub struct ComdatGroup {
    /// The `SHT_GROUP` section itself.
    pub section: SectionIndex,
    pub signature: SymbolIndex,
    /// `GRP_COMDAT`: the linker keeps one group per signature across all inputs.
    pub is_comdat: bool,
    pub members: Vec<SectionIndex>,
    /// The [`name_fingerprint`] of each member, in the order of `members`,
    /// told while the names are read: questions about another instance of
    /// the group then need not bring the string tables back into memory.
    /// Only a group's members are asked that, so other sections carry no
    /// fingerprint (a program holds a section header per function).
    pub member_names: Vec<u128>,
}

impl ComdatGroup {
    /// The member named like the section whose name has fingerprint `name`.
    pub fn member_named(&self, name: u128) -> Option<SectionIndex> {
        self.members
            .iter()
            .zip(&self.member_names)
            .find(|&(_, &fingerprint)| fingerprint == name)
            .map(|(&member, _)| member)
    }
}
