//! Translation validation of identical code folding: given two linked ELF
//! images (executables or shared libraries, x86-64 or AArch64) or two
//! linked Mach-O images (`MH_EXECUTE`, x86_64 or arm64) built from
//! the same inputs without (PLAIN) and with (FOLDED) folding, prove that
//! every function of PLAIN does the same thing in FOLDED, or name the first
//! place where it may not. Main assumption: both images carry symbols
//! (`.symtab`, else `.dynsym`; Mach-O's `LC_SYMTAB`) that say where
//! functions and data objects start (and, on ELF, end).
//!
//! A Mach-O image is read into the same model (`macho/read.rs`: how its
//! sections, unsized symbols, stubs, fixups, exports, entry points and
//! data in code map onto what the checks below assume; `macho/fixups.rs`:
//! rebases and binds; `padding.rs`: where a function's code ends), and
//! every check below applies as written, with these differences: names
//! are compared without Darwin's leading `_`; there are no kept
//! relocations (ld64 has no `-q`) and no DWARF, so what `-q` and `-g` add
//! on ELF is never available; locals carry no source file, so several
//! locals of one name are no roots; x86_64 jump tables that clang leaves
//! in `__text` (`LC_DATA_IN_CODE`) are data, each compared as bytes.
//!
//! This crate deliberately does not depend on `icf` or `icf-arch`: it
//! decodes with iced-x86 and yaxpeax-arm directly, so a bug in icf's own
//! normalization cannot hide itself here.
//!
//! # What is checked
//!
//! - **Functions.** Every `STT_FUNC` symbol with a size in PLAIN is a root.
//!   Its counterpart in FOLDED is the symbol with the same name, the same
//!   `STT_FILE` context (locals) and the same position among those; if no
//!   such symbol exists, the one at the same position among symbols of that
//!   name. The code at the counterpart's address is compared with PLAIN's:
//!   an alias is simply the same address as another symbol, and when
//!   FOLDED's code there is a lone `jmp rel32`/`b imm26` (after an optional
//!   `endbr64`/`bti c`) and PLAIN's is not, the jump is followed (a thunk).
//!   With [`VerifyOptions::assume_odr`], a thunk between vague-linkage C++
//!   functions is accepted by the one-definition rule instead.
//! - **Code and data in code.** On x86-64, code is decoded by
//!   reachability, not linearly: a recursive descent over the whole image
//!   from every place something enters code (function symbols and other
//!   symbols in code, the entry point, landing pads from `.eh_frame` and
//!   the LSDAs, addresses kept (`-q`) or dynamic relocations store) that
//!   follows direct branches, calls, fall-through, the entries of the
//!   jump tables a function with an indirect jump reads, and the code
//!   addresses reached instructions form (`lea 1f(%rip),%rax; jmp *%rax`),
//!   unless the escape scan shows the address only loaded through (data
//!   the function embeds, below). A table whose
//!   dispatch is recognized (`movslq (base,idx,4); add base; jmp *` or
//!   `jmp *T(,idx,8)`) after a range check (`cmp $N; ja`: exactly N+1
//!   entries, where one at the function's end is an unreachable case and
//!   one outside it a jump to a cold part; `and $M`: at most M+1) is read
//!   first and to that bound (`x86_table.rs`); a table several
//!   dispatches read is compared as far as any of them can index it (the
//!   largest bound, exact only where an exact one reaches it; none if one
//!   dispatch has none); any other is read entry by
//!   entry, each entry's code decoded before the next is read, and ends at
//!   an entry outside its function or inside a decoded instruction, at the
//!   next table, at a data label, and with `-q` at an entry without a kept
//!   relocation. Bytes of a function no path reaches are data (`lea
//!   1f(%rip),%rax; jmp 2f; 1: .long -49; 2: movslq (%rax),%rax`): each
//!   run is compared as bytes,
//!   fields a kept relocation writes apart, compared as targets. So such
//!   bytes never become a bogus branch into another function. AArch64
//!   words are decoded linearly (fixed width: they cannot misalign).
//! - **Instructions** are decoded over the symbol's extent and are
//!   equal when mnemonic, encoding class (legacy/VEX/EVEX), legacy prefixes
//!   (`lock`, `rep`, segment overrides, `notrack`, size overrides), EVEX
//!   fields and operands are equal after every target is set apart; an
//!   immediate is compared by its value at the operand's width, not by its
//!   encoding: so `jmp rel8` and `jmp rel32`, `add $-1, %eax` as `83 /0 ib`,
//!   `81 /0 id` or `05 id` compare equal, and a different register,
//!   immediate value, operand size, prefix or mnemonic does not.
//!   On AArch64 an `adrp` and the `add`/load/store completing it form one
//!   address; the page is tracked by register along every path (it holds
//!   where all paths reaching an instruction bring it: a call keeps it in
//!   x19-x28, and in a caller-saved register only where the callee's code,
//!   and all it calls, provably never writes that register, which gcc's
//!   `-fipa-ra` relies on (a callee returning an integer or pointer by its
//!   DWARF prototype writes x0); a register a call may write is undefined
//!   after it where no path reads it before writing it, so only the other
//!   paths decide, and unknown where one does, the page it held then
//!   counting as a value of its own, as does one that paths meeting
//!   disagree on where a path from there reads the register; a copy
//!   carries it;
//!   paths go into a jump table's cases from its dispatch, read from the
//!   table where a `cmp` bounds it, into landing pads from every call,
//!   and not past a call of a function that never returns, though code
//!   no other path reaches holds there what the call would leave), and
//!   the forms the linkers relax it to depending on distance, which a
//!   fold changes, are
//!   one form: `adrp`+`add`, lld's `nop`+`adr` and GNU ld's `adr`+`nop`
//!   (unless a branch lands between the two), and GNU ld's erratum-843419
//!   `adr` of a data page that the next word completes, or that sits in
//!   a page's last two words with a word two or three on completing it,
//!   which is that `adrp`.
//! - **Targets** (branch targets, RIP-relative and absolute addresses,
//!   `adr`/`adrp` pairs) correspond when they are the same symbol at the same
//!   offset; or both are code whose functions verify equal in turn
//!   (co-inductively: a pair is assumed equal while it is checked, so
//!   recursion verifies), landing on the same instruction of the pair; or
//!   both are read-only data of the same size whose bytes are equal, with
//!   pointers inside compared as targets; writable data only by identity
//!   (`.data.rel.ro*` is not writable here: only the loader writes it,
//!   before making it read-only, so its constants compare as read-only
//!   data).
//!   A place between symbols is compared by its section's name: code as
//!   unnamed code up to the next symbol, writable data by offset in the
//!   section, read-only data by content (a jump table of 4-byte offsets from
//!   its start or 8-byte addresses into the referencing function, entry by
//!   entry; else up to the first known bound, below). A table of 4-byte offsets with kept relocations (`-q`:
//!   `R_X86_64_PC32`, `R_AARCH64_PREL32`) that is not a jump table (rustc's
//!   tables of strings for `Debug`) is compared entry by entry: table plus
//!   entry on each side as targets. Unnamed read-only data kept as a named
//!   object's copy is compared by content up to that object's end.
//!   PLT entries are the symbol their GOT slot's relocation binds;
//!   GOT slots are the symbol or address the loader writes there (an
//!   address use, unless the instruction only calls or jumps through it;
//!   an executable's slot bound by a name it defines holds its own
//!   definition). An x86-64 load from a GOT slot the link fixed, `lea
//!   sym(%rip)` and `mov $sym` are one instruction (linkers relax one into
//!   another by the symbol they bind), and a RIP-relative access compares
//!   only the bytes it reads (`bt`, `bts`, `btr`, `btc` with a register
//!   bit offset may read any, before or after the address). An address
//!   that ends an object and starts another function's jump table is that
//!   end.
//! - **Relocations kept by `-q`/`--emit-relocs`** are used where present: the
//!   symbol a relocation names is the preferred owner of a target (so a
//!   one-past-the-end pointer belongs to its array, not to the next one),
//!   absolute relocations say which immediates and displacements (with or
//!   without base and index registers) are addresses, and so does a GOT
//!   load's relocation in an immediate (lld and GNU ld relax `sub
//!   foo@GOTPCREL(%rip), %rax` to `sub $foo, %rax`). Without them, an
//!   immediate or displacement of at least 4 bytes pointing into a
//!   position-dependent image is an address (in position-independent code
//!   one is always a number), and data words are
//!   pointers where the dynamic relocations say so (PIE, shared objects), or
//!   in an image where nothing marks them (no relocations at all, or a
//!   position-dependent executable, whose dynamic relocations only fill slots
//!   for other modules) where the two values differ and both point into
//!   their images (equal words are not recorded as observed addresses).
//! - **Exception handlers** (`eh.rs`). Two functions whose code compares
//!   equal must also have exception tables (the LSDAs their FDEs name;
//!   ELF's `.eh_frame` and Mach-O's `__eh_frame`, not `__unwind_info`'s
//!   LSDA index) that say the same: the same call sites and landing pads, as offsets
//!   from each function's start, and the same action chains, with the
//!   types a handler catches (or an exception specification lists)
//!   compared by the symbol of their `type_info` (or the name the loader
//!   binds its slot to), else by address. A fold or a shrink that shares
//!   one table between two functions (as `icf shrink` shares equal ones)
//!   is checked by what the table says, not by where it is. A table that
//!   cannot be read is a difference.
//! - **Data objects.** Every `STT_OBJECT` of PLAIN must exist in FOLDED with
//!   the same size and bytes (pointers compared as targets), if it is data
//!   the program defines. Objects in sections the linker synthesizes are
//!   not: `.dynamic`, `.got`, `.got.plt`, `.plt*`, `.iplt`, `.rel*`/`.rela*`,
//!   `.dynsym`, `.dynstr`, `.hash`, `.gnu.hash`, `.gnu.version*`,
//!   `.eh_frame_hdr`, `.note*`, `.interp` and `.relro_padding` (by section
//!   type where ELF has one, else by name): their contents count, size and
//!   place what the link holds, so `_DYNAMIC` or `_GLOBAL_OFFSET_TABLE_`
//!   legitimately differ after a fold; uses of them are checked where code
//!   makes them (PLT entries by the symbol they bind, GOT slots by what the
//!   loader writes). Data from input sections (`.data`, `.rodata`, `.bss`,
//!   `.data.rel.ro`, `.init_array`, `.tm_clone_table`, ...) is compared.
//! - **Locals the fold removed.** A local function or object of PLAIN that
//!   FOLDED no longer names (folded into another unit's copy) is not a
//!   root: nothing outside its unit could name it, and every use of it is a
//!   reference checked in turn. The same holds for a global function or
//!   object the link does not export (`.dynsym`): `--gc-sections` drops it
//!   once the fold sent its last use to a twin. A local is never paired with another file's
//!   namesake: by position among same-named symbols only when neither
//!   file is named in the other image (the linker names an object without
//!   `STT_FILE` by its path, a temporary one for icf's rewritten objects).
//! - **Observed addresses.** Every use that makes an address a value (`lea`,
//!   `adr`, `adrp`+`add`, absolute immediates, pointers in data, exported
//!   functions) records which FOLDED address stands for which PLAIN one.
//!   Two distinct PLAIN addresses observed as one FOLDED address
//!   (significant addresses merged), or one observed as two, is a
//!   difference: for data always, for functions unless [`Mode::All`].
//!   Two exceptions follow the language: a function pointer in a C++ vtable
//!   (`_ZTV*`, `_ZTC*`) is not observed (C++ cannot compare a virtual
//!   function's address), and read-only data without a symbol (string
//!   literals, jump tables, constant pools) or with a compiler's name for
//!   an anonymous constant has none: a local or hidden symbol (compilers
//!   make these local, or hidden where link-time optimization shares
//!   one; a global of such a name that other modules see is the
//!   program's own object) named `.L*` (rustc's `.Lanon.<hash>.<n>`),
//!   `anon.*`, `alloc_<hash>` or `CSWTCH.<n>` (rustc's constants, which
//!   Rust gives no address identity; gcc's switch tables). Nor, in either
//!   mode, has
//!   a Rust function: a Rust-mangled name (legacy `_ZN…17h<16 hex>E`, v0
//!   `_R…`) in an image whose `.comment` names rustc (rustc makes every
//!   function `unnamed_addr`, Rust does not promise distinct functions
//!   distinct addresses, and icf's safe mode merges them). The name is
//!   trusted for each function of an image that links Rust with C (the
//!   image does not say which object made a function): a C function
//!   given a Rust-mangled assembler name there loses its identity. In a
//!   mold executable, whose symbols are all local, an anonymous
//!   constant's name alone decides; a Mach-O image has no `.comment`, so
//!   none of its functions is taken for Rust's.
//!   A `lea` (x86-64), `adr` or `adrp`+`add` (AArch64) of data makes its
//!   address a value only if the address escapes on some path through the
//!   function: the scan follows both ways at every conditional branch and
//!   around loops, and on x86-64 from a jump table's dispatch into every
//!   target of the function's jump tables, tracking the registers holding the address (copies, and
//!   pointers derived by `lea`, `add` or `sub` of an offset). Used only as
//!   the base or index of memory operands until overwritten, clobbered by
//!   a call (x86-64: `rax`, `r10`, `r11`) or dead at a return, it is an
//!   access, not observed (clang's `.llvm_addrsig` leaves out a table the
//!   code only loads from); a callee-saved register carries it across a
//!   call, and on AArch64 so does every register the call neither reads
//!   as an argument nor writes as a result by the callee's prototype (a
//!   callee may leave a temporary alone, and gcc's `-fipa-ra` then reads
//!   it after the call). Any other read (stored, compared, subtracted
//!   from another pointer, an argument register at a call, a result
//!   register at a return), an indirect branch other than a jump table's
//!   dispatch (one whose register holds, on every path from the
//!   function's entries, a table's address plus an entry of it, of a
//!   table the walk read for the function whose entries all land in it:
//!   any other is an indirect tail call or a jump out of the function,
//!   which may read every register), or
//!   anything the scan cannot follow counts as escaping. A call passing
//!   it where the callee is known to read only forward from that argument
//!   (`bounded_readers.rs`: `core::panicking::panic`'s message, `memcmp`)
//!   reads forward and goes no further. A pointer loaded
//!   from memory (a GOT slot) and only dereferenced the same way is
//!   a dereference: what it points to is not observed either. When
//!   the two images' scans disagree (one could not bound a jump table),
//!   PLAIN's decides: its facts say what the function's callers read;
//!   FOLDED's are those of whatever was folded there. Prototypes are
//!   PLAIN's in both images: FOLDED's DWARF is not read, each PLAIN
//!   function's prototype holds at its counterpart's address (a fact at
//!   an alias's address only when every function folded there has it), so
//!   a shrunk image whose DWARF is gone proves as its link did.
//!   Pointers in data stay observed.
//! - **One past the end.** An address one past a data object's end is also
//!   the start of what follows it (a string, or the function's own jump
//!   table placed right after an array). A kept relocation naming the
//!   object makes it that end; otherwise FOLDED's target must stand for
//!   what starts there, or failing that for the end, except that a jump
//!   table of the referencing function must always compare as that table.
//!   One past a section's end is that section's end (a `__stop_` bound,
//!   which a fold moves).
//!   Unnamed read-only data ends at the first known bound of either
//!   image: the next symbol, kept label (`.LC0`), relocated offset (a jump
//!   table after a string), place reached code references, or place a
//!   pointer in data points to (a kept absolute relocation's `S + A`, a
//!   relative dynamic relocation's address, an entry of a table of 4-byte
//!   offsets with kept relocations: the table's start plus the entry); at
//!   most 256 bytes. A NUL ends
//!   it sooner only where it is a C string: in a mergeable-strings output
//!   section, referenced by code that is not Rust (a Rust `&str` carries
//!   its length and has no NUL, so rustc's strings, packed back to back,
//!   would otherwise run into their neighbours, which a fold lays out
//!   anew). A
//!   place FOLDED names by a symbol PLAIN lacks (icf's `__icf.*`) is also
//!   compared as a place in its section.
//!
//! # What is not
//!
//! The calling convention is taken at its widest: an address left in `rdx`
//! at a return, or in an argument register (`rdi`..`r9`, x0-x8) at a call,
//! is observed, since the image does not say whether the function returns
//! a pair or how many arguments the callee takes; except where DWARF
//! prototypes (`-g`) say: `rdx` (x1) is no result of a function returning
//! at most 8 bytes, and a direct call reads only as many argument
//! registers as its callee has parameters, one more when it returns in
//! memory (more than 16 bytes, or any structure: C++ returns one that is
//! not trivially copyable through a pointer in the first argument
//! register); not for a compiler's clones. On AArch64 x2-x15 are dead at a
//! return. A fold merging such an address with another observed one is
//! reported although the program may never read it (generated programs
//! built without `-g` hit this in about one in a hundred links: clang
//! leaves a table's address in `rdx` after a loop).
//!
//! An address in a callee-saved register (`rbx`, `rbp`, `r12`-`r15`;
//! x19-x28) is taken to cross a call unread: compiled code never
//! interprets a callee-saved register it did not set (`setjmp` and
//! context switches store it only to restore it), so only a hand-written
//! callee reading it could observe the address. Proving that of each
//! callee would mean following its save slots through the stack and every
//! pointer into its frame, and would lose the proof wherever compiled code
//! keeps an address in `rbx` across a call of a function that passes a
//! local's address on.
//!
//! In a position-dependent image without kept relocations nothing tells
//! an address in code from a number that equals one: an immediate or
//! displacement of at least 4 bytes pointing into the image is compared as
//! the place it points to, not as a number (requiring both would reject
//! every fold that moves what such code names, string literals included).
//!
//! A call through the PLT to a runtime function of a name that never
//! returns (`exit`, `abort`, `__cxa_throw`, ...) is taken not to return
//! (the code after it is another block); a function of such a name the
//! image defines counts only where its code is proved never to return
//! (`noreturn.rs`), but for the unwinder's `_Unwind_Resume`, trusted. A
//! function's last instruction, a call, runs on into what follows it (which
//! must then correspond) unless its callee is one of those or a proof shows
//! its code never returns (Rust's `slice_index_fail`, reached through a
//! GOT slot the link fixed). What follows is found past any `nop` padding
//! no symbol holds (`Image::past_nop_padding`): a new layout may pad there
//! for the next function's alignment, and running a `nop` changes nothing;
//! a trap or anything else is a place of its own.
//!
//! Code reached only through computed addresses the decoder cannot see (a
//! pointer built arithmetically) is still compared as a root but its
//! address uses are not recorded; pointers stored unaligned in data are
//! compared as bytes; AArch64 jump tables of byte or halfword offsets are
//! compared as bytes (equal when the code is laid out alike). Unnamed
//! read-only data C or C++ code references that reads as text up to a NUL
//! is taken for a C string and compared through its NUL (GNU ld keeps no
//! string flags on the `.rodata` it merges strings into): an array of such
//! bytes read past its first zero is compared only that far.

mod aarch64;
mod aarch64_clobbers;
mod aarch64_flow;
mod aarch64_image;
mod bounded_readers;
mod check;
mod code;
mod decode;
mod dwarf;
mod eh;
mod elf;
mod error;
mod image;
mod macho;
mod noreturn;
mod outcome;
mod padding;
mod reach;
mod read;
mod x86;
mod x86_escape;
mod x86_table;

use std::path::Path;

pub use error::Error;
pub use image::Arch;
pub use outcome::{
    Difference, DifferenceKind, Location, Mode, Outcome, Site, Stats, VerifyOptions,
};

/// Why the link map `sections` does not describe `image`
/// ([`icf_linkmap::InputSections::mismatch`] over its `.text`), if it
/// does not.
fn map_mismatch(image: &image::Image, sections: &icf_linkmap::InputSections) -> Option<String> {
    let text = image
        .sections
        .iter()
        .find(|s| s.name == ".text" && s.executable)?;
    let (start, end) = (text.address, text.address.saturating_add(text.size));
    let functions = image
        .symbols
        .iter()
        .filter(|s| {
            s.kind == image::SymbolKind::Function && s.size > 0 && (start..end).contains(&s.address)
        })
        .map(|s| (s.address, s.size));
    sections.mismatch((".text", start, end), functions)
}

/// Proves that `folded` does what `plain` does, or finds the first difference.
pub fn verify(plain: &Path, folded: &Path, options: &VerifyOptions) -> Result<Outcome, Error> {
    let (plain_image, folded_image) = rayon::join(|| load_image(plain), || load_image(folded));
    let (mut plain_image, mut folded_image) = (plain_image?, folded_image?);
    let read_map = |map: &Path| {
        let text = std::fs::read_to_string(map)
            .map_err(|e| Error::new(map, format!("cannot be read: {e}")))?;
        icf_linkmap::InputSections::parse(&text).map_err(|why| Error::new(map, why))
    };
    // A map of another link would name other files and places.
    let read_map_of = |map: &Path, image: &image::Image| {
        let sections = read_map(map)?;
        match map_mismatch(image, &sections) {
            Some(why) => Err(Error::new(map, why)),
            None => Ok(sections),
        }
    };
    match (&options.plain_map, &options.folded_map) {
        (Some(plain_map), Some(folded_map)) => {
            plain_image.take_map(read_map_of(plain_map, &plain_image)?);
            folded_image.take_map(read_map_of(folded_map, &folded_image)?);
        }
        (Some(plain_map), None) => {
            plain_image.input_sections = Some(read_map_of(plain_map, &plain_image)?);
        }
        (None, _) => {}
    }
    if let (Some(map), Some(sections)) = (&options.plain_map, &plain_image.input_sections) {
        plain_image.input_objects = Some(icf_linkmap::InputObjects::new(map, sections));
    }
    if plain_image.arch != folded_image.arch {
        return Err(Error::new(
            folded,
            format!(
                "is {:?}, but {} is {:?}",
                folded_image.arch,
                plain.display(),
                plain_image.arch
            ),
        ));
    }
    // Prototypes come from PLAIN's DWARF only (see `dwarf::carried_over`).
    let prototypes = dwarf::prototypes(&plain_image);
    let carried = dwarf::carried_over(&prototypes, &plain_image, &folded_image);
    set_prototypes(&mut plain_image, prototypes);
    set_prototypes(&mut folded_image, carried);
    rayon::join(
        || analyse_code(&mut plain_image),
        || analyse_code(&mut folded_image),
    );
    let (stats, difference) = check::Checker::new(&plain_image, &folded_image, options).run();
    Ok(Outcome { stats, difference })
}

/// Reads and checks the image at `path`, then what it says of its code
/// without decoding it all: landing pads, functions that never return.
fn load_image(path: &Path) -> Result<image::Image, Error> {
    let mut image = image::Image::read(path)?;
    let mut landing_pads = eh::landing_pads(&image);
    landing_pads.sort_unstable();
    landing_pads.dedup();
    image.landing_pads = landing_pads;
    image.exception_tables = eh::exception_tables(&image);
    image.noreturn_entries = noreturn::noreturn_entries(&image);
    image.noreturn_slots = noreturn::noreturn_slots(&image, &image.noreturn_entries);
    image.forward_readers = bounded_readers::forward_readers(&image);
    Ok(image)
}

fn set_prototypes(image: &mut image::Image, prototypes: dwarf::Prototypes) {
    image.single_register_returns = prototypes.single_register_returns;
    image.integer_returns = prototypes.integer_returns;
    image.argument_registers = prototypes.argument_registers;
    image.declared_alignments = prototypes.declared_alignments;
}

/// Which bytes of `image` are instructions and which data they refer to,
/// once its prototypes are known.
fn analyse_code(image: &mut image::Image) {
    let mut code_references = Vec::new();
    if image.arch == Arch::X86_64 {
        let reached = reach::reach(image);
        code_references = reached.code_references;
        image.instruction_starts = reached.instruction_starts;
        image.referenced_data = reached.referenced_data;
        image.jump_targets = reached.jump_targets;
        image.jump_tables = reached.jump_tables;
    }
    if image.sizes_to_next_symbol {
        padding::trim_function_ends(image, &code_references);
    }
    if image.arch == Arch::Aarch64 {
        image.call_clobbers = aarch64_clobbers::call_clobbers(image);
        image.referenced_data = aarch64::referenced_data(image);
    }
}
