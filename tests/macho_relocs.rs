//! The Mach-O reader's relocations checked against a real linker: each
//! fixture object (`fixtures/macho/relocs-*.s`, one of every relocation
//! kind clang's assembler writes) is read into the model, linked by
//! `ld64.lld-19`, and every model relocation (an ELF type, a symbol, an
//! explicit addend) must describe exactly the value the linker wrote in
//! its field. Atoms are checked too: each named symbol starts its own
//! model section, temporaries (`L...`, `l...`, `ltmp`) start none.

use icf_object::{Object, SectionIndex, SymbolPlace};
use object::elf;
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A scratch directory of its own for `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/macho-tests")
        .join(format!(
            "{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
    std::fs::create_dir_all(&dir).expect("creating the scratch directory");
    dir
}

fn run(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e} (run `cargo xtask install-deps`)"));
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Assembles `fixtures/macho/relocs-<arch>.s` and links it; returns both files.
fn build(arch: &str) -> (Vec<u8>, Vec<u8>) {
    let dir = scratch(&format!("relocs-{arch}"));
    let source = icf_fixtures::source_dir().join(format!("macho/relocs-{arch}.s"));
    let object = dir.join("relocs.o");
    let linked = dir.join("relocs");
    run(Command::new("clang-19")
        .args(["-target", &format!("{arch}-apple-macos11"), "-c"])
        .arg(&source)
        .arg("-o")
        .arg(&object));
    // No optimization hints: the linker must not rewrite what it patches.
    run(Command::new("ld64.lld-19")
        .args(["-arch", arch, "-platform_version", "macos", "11.0", "11.0"])
        .args(["-e", "_start", "-ignore_optimization_hints", "-o"])
        .arg(&linked)
        .arg(&object));
    let result = (read(&object), read(&linked));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The linked image: symbol addresses by name, and bytes by address.
struct Image<'a> {
    file: object::File<'a>,
    symbols: HashMap<Vec<u8>, u64>,
}

impl Image<'_> {
    fn parse(data: &[u8]) -> Image<'_> {
        let file = object::File::parse(data).expect("a linked Mach-O image");
        let symbols = file
            .symbols()
            .filter(|s| s.is_definition())
            .map(|s| (s.name_bytes().expect("a symbol name").to_vec(), s.address()))
            .collect();
        Image { file, symbols }
    }

    fn bytes(&self, address: u64, size: usize) -> &[u8] {
        for section in self.file.sections() {
            if (section.address()..section.address() + section.size()).contains(&address) {
                let data = section.data().expect("section data");
                let at = (address - section.address()) as usize;
                return &data[at..at + size];
            }
        }
        panic!("no section holds {address:#x}")
    }

    fn u64_at(&self, address: u64) -> u64 {
        u64::from_le_bytes(self.bytes(address, 8).try_into().expect("8 bytes"))
    }

    fn i32_at(&self, address: u64) -> i64 {
        i64::from(i32::from_le_bytes(
            self.bytes(address, 4).try_into().expect("4 bytes"),
        ))
    }

    fn word_at(&self, address: u64) -> u32 {
        u32::from_le_bytes(self.bytes(address, 4).try_into().expect("4 bytes"))
    }
}

/// Where each model section (atom) landed: a named symbol in it, found in
/// the image, minus its offset in the atom.
fn atom_addresses(model: &Object<'_>, image: &Image<'_>) -> HashMap<SectionIndex, u64> {
    let mut addresses = HashMap::new();
    for symbol in &model.symbols {
        if let (SymbolPlace::Section(section), Some(&address)) =
            (symbol.place, image.symbols.get(symbol.name))
            && !symbol.name.is_empty()
        {
            addresses.insert(section, address - symbol.value);
        }
    }
    // An atom no named symbol starts (a literal section, whole): where the
    // image's section of that name starts.
    let layout = model.macho.as_ref().expect("a Mach-O layout");
    for (index, atom) in layout.atoms.iter().enumerate().skip(1) {
        let section = SectionIndex(index as u32);
        if atom.start == 0 && !addresses.contains_key(&section) {
            let name = model.section(section).name;
            if let Some(out) = image
                .file
                .sections()
                .find(|s| s.name_bytes().ok() == Some(name))
            {
                addresses.insert(section, out.address());
            }
        }
    }
    addresses
}

/// Checks every relocation of `model` against `image`; returns how many
/// were checked, by model type.
fn check_relocations(model: &Object<'_>, image: &Image<'_>) -> HashMap<u32, usize> {
    let atoms = atom_addresses(model, image);
    let mut checked: HashMap<u32, usize> = HashMap::new();
    for (index, section) in model.sections.iter().enumerate().skip(1) {
        let Some(&atom) = atoms.get(&SectionIndex(index as u32)) else {
            continue;
        };
        let mut pending_subtrahend = None;
        let mut got_pages: HashMap<u32, u64> = HashMap::new();
        for reloc in &section.relocs {
            let symbol = model.symbol(reloc.symbol);
            let target = match symbol.place {
                SymbolPlace::Section(target) => atoms[&target] + symbol.value,
                _ => panic!("fixture relocations name defined symbols only"),
            };
            let s_plus_a = target.wrapping_add(reloc.addend as u64);
            let place = atom + reloc.offset;
            let what = format!(
                "{} +{:#x}: type {} to {} {:+#x}",
                section.name_lossy(),
                reloc.offset,
                reloc.r_type,
                symbol.name_lossy(),
                reloc.addend
            );
            if reloc.r_type == icf_arch::HIGH_BIT_POINTER {
                assert_eq!(image.u64_at(place), s_plus_a | 1 << 63, "{what}");
                *checked.entry(reloc.r_type).or_default() += 1;
                continue;
            }
            if reloc.r_type == icf_arch::SUBTRACTOR_MARKER {
                pending_subtrahend = Some(target);
                continue;
            }
            let subtrahend = pending_subtrahend.take();
            let pc = s_plus_a.wrapping_sub(place) as i64;
            let ok = match (model.arch, elf::RelocationType(reloc.r_type)) {
                (icf_ir::Arch::X86_64, elf::R_X86_64_PC32 | elf::R_X86_64_PLT32) => {
                    image.i32_at(place) == pc
                }
                (icf_ir::Arch::X86_64, elf::R_X86_64_64)
                | (icf_ir::Arch::Aarch64, elf::R_AARCH64_ABS64) => image.u64_at(place) == s_plus_a,
                (icf_ir::Arch::X86_64, elf::R_X86_64_32)
                | (icf_ir::Arch::Aarch64, elf::R_AARCH64_ABS32) => {
                    let value = s_plus_a.wrapping_sub(subtrahend.unwrap_or(0));
                    image.word_at(place) == value as u32
                }
                (icf_ir::Arch::X86_64, elf::R_X86_64_REX_GOTPCRELX | elf::R_X86_64_GOTPCREL) => {
                    // The slot (or, relaxed to `lea`, the symbol itself).
                    let reached = place
                        .wrapping_add(image.i32_at(place) as u64)
                        .wrapping_sub(reloc.addend as u64);
                    reached == target || image.u64_at(reached) == target
                }
                (icf_ir::Arch::Aarch64, elf::R_AARCH64_PREL32) => image.i32_at(place) == pc,
                (icf_ir::Arch::Aarch64, elf::R_AARCH64_GOTPCREL32) => {
                    let slot = place.wrapping_add(image.i32_at(place) as u64);
                    image.u64_at(slot) == target
                }
                (icf_ir::Arch::Aarch64, elf::R_AARCH64_CALL26 | elf::R_AARCH64_JUMP26) => {
                    let imm = ((image.word_at(place) << 6) as i32 >> 6) as i64 * 4;
                    imm == pc
                }
                (icf_ir::Arch::Aarch64, elf::R_AARCH64_ADR_PREL_PG_HI21) => {
                    adrp_page(image.word_at(place), place) == s_plus_a & !0xfff
                }
                (icf_ir::Arch::Aarch64, elf::R_AARCH64_ADR_GOT_PAGE) => {
                    got_pages.insert(reloc.symbol.0, adrp_page(image.word_at(place), place));
                    true
                }
                (icf_ir::Arch::Aarch64, elf::R_AARCH64_LD64_GOT_LO12_NC) => {
                    let page = got_pages[&reloc.symbol.0];
                    let slot = page + imm12(image.word_at(place)) * 8;
                    image.u64_at(slot) == target
                }
                (icf_ir::Arch::Aarch64, elf::R_AARCH64_ADD_ABS_LO12_NC) => {
                    imm12(image.word_at(place)) == s_plus_a & 0xfff
                }
                (icf_ir::Arch::Aarch64, kind) => {
                    let scale = match kind {
                        elf::R_AARCH64_LDST8_ABS_LO12_NC => 0,
                        elf::R_AARCH64_LDST16_ABS_LO12_NC => 1,
                        elf::R_AARCH64_LDST32_ABS_LO12_NC => 2,
                        elf::R_AARCH64_LDST64_ABS_LO12_NC => 3,
                        elf::R_AARCH64_LDST128_ABS_LO12_NC => 4,
                        _ => panic!("{what}: a type the fixture should not produce"),
                    };
                    imm12(image.word_at(place)) << scale == s_plus_a & 0xfff
                }
                _ => panic!("{what}: a type the fixture should not produce"),
            };
            assert!(ok, "{what}: the linked field says otherwise");
            *checked.entry(reloc.r_type).or_default() += 1;
        }
    }
    checked
}

fn adrp_page(word: u32, place: u64) -> u64 {
    let immlo = u64::from((word >> 29) & 3);
    let immhi = u64::from((word >> 5) & 0x7ffff);
    let imm = (((immhi << 2 | immlo) << 43) as i64 >> 43) << 12;
    (place & !0xfff).wrapping_add(imm as u64)
}

fn imm12(word: u32) -> u64 {
    u64::from((word >> 10) & 0xfff)
}

fn count(checked: &HashMap<u32, usize>, r_type: elf::RelocationType) -> usize {
    checked.get(&r_type.0).copied().unwrap_or(0)
}

#[test]
fn x86_64_relocations_mean_what_the_linker_writes() {
    let (object, linked) = build("x86_64");
    let model = Object::parse(&object).expect("the fixture reads");
    let image = Image::parse(&linked);
    let checked = check_relocations(&model, &image);
    // Every kind the fixture holds was seen and checked.
    assert_eq!(count(&checked, elf::R_X86_64_PLT32), 2, "{checked:?}");
    // Six `SIGNED` with and without addends (one local, to `__cstring`),
    // and `_f - _tab` within `_tab`'s own atom read as PC-relative data.
    assert_eq!(count(&checked, elf::R_X86_64_PC32), 8, "{checked:?}");
    assert_eq!(
        count(&checked, elf::R_X86_64_REX_GOTPCRELX),
        1,
        "{checked:?}"
    );
    // `_f - _d` across atoms: the marker and an absolute field.
    assert_eq!(count(&checked, elf::R_X86_64_32), 1, "{checked:?}");
    assert_eq!(count(&checked, elf::R_X86_64_64), 4, "{checked:?}");
}

#[test]
fn arm64_relocations_mean_what_the_linker_writes() {
    let (object, linked) = build("arm64");
    let model = Object::parse(&object).expect("the fixture reads");
    let image = Image::parse(&linked);
    let checked = check_relocations(&model, &image);
    assert_eq!(count(&checked, elf::R_AARCH64_CALL26), 1, "{checked:?}");
    assert_eq!(count(&checked, elf::R_AARCH64_JUMP26), 1, "{checked:?}");
    assert_eq!(
        count(&checked, elf::R_AARCH64_ADR_PREL_PG_HI21),
        4,
        "{checked:?}"
    );
    assert_eq!(
        count(&checked, elf::R_AARCH64_ADD_ABS_LO12_NC),
        2,
        "{checked:?}"
    );
    for (kind, n) in [
        (elf::R_AARCH64_LDST8_ABS_LO12_NC, 1),
        (elf::R_AARCH64_LDST16_ABS_LO12_NC, 1),
        (elf::R_AARCH64_LDST32_ABS_LO12_NC, 1),
        (elf::R_AARCH64_LDST64_ABS_LO12_NC, 1),
        (elf::R_AARCH64_LDST128_ABS_LO12_NC, 1),
        (elf::R_AARCH64_ADR_GOT_PAGE, 1),
        (elf::R_AARCH64_LD64_GOT_LO12_NC, 1),
        (elf::R_AARCH64_GOTPCREL32, 1),
        (elf::R_AARCH64_PREL32, 1),
        (elf::R_AARCH64_ABS32, 1),
        (elf::R_AARCH64_ABS64, 4),
    ] {
        assert_eq!(count(&checked, kind), n, "{kind:?}: {checked:?}");
    }
    assert_eq!(
        checked.get(&icf_arch::HIGH_BIT_POINTER).copied(),
        Some(1),
        "{checked:?}"
    );
}

#[test]
fn each_named_symbol_starts_an_atom_and_temporaries_start_none() {
    for arch in ["x86_64", "arm64"] {
        let (object, _) = build(arch);
        let model = Object::parse(&object).expect("the fixture reads");
        let layout = model.macho.as_ref().expect("a Mach-O layout");
        assert!(layout.subsections_via_symbols);
        for name in ["_start", "_f", "_cbase", "_d", "_ptrs"] {
            let symbol = model
                .symbols
                .iter()
                .find(|s| s.name == name.as_bytes())
                .unwrap_or_else(|| panic!("{arch}: {name} is read"));
            assert_eq!(symbol.value, 0, "{arch}: {name} starts its atom");
            let section = symbol.section().expect("defined");
            assert_eq!(
                symbol.size,
                model.section(section).size,
                "{arch}: {name} spans its atom"
            );
        }
        // `L_local` (x86_64) is inside `_cbase`'s atom, so `_cbase`'s atom is
        // its 8 bytes plus the 16 of `L_local`.
        let cbase = model
            .symbols
            .iter()
            .find(|s| s.name == b"_cbase")
            .expect("_cbase");
        let expected = if arch == "x86_64" { 24 } else { 16 };
        assert_eq!(
            model.section(cbase.section().expect("defined")).size,
            expected,
            "{arch}"
        );
        // Code atoms are executable, `__const` read-only, `__data` writable.
        let section_of = |name: &str| {
            let symbol = model
                .symbols
                .iter()
                .find(|s| s.name == name.as_bytes())
                .expect(name);
            model.section(symbol.section().expect("defined"))
        };
        assert!(section_of("_f").is_executable());
        assert!(section_of("_d").is_read_only_data());
        assert!(section_of("_ptrs").is_writable());
    }
}
