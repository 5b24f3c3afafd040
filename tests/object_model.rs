//! The object model on real compiler output: FDEs are linked to their
//! functions and LSDAs, COMDAT groups and the address-significance table are
//! read, and archives list their ELF members and skip the rest.

use icf_fixtures::{Build, Compiler};
use icf_object::{Object, SectionIndex};
use icf_tests::{load, open};
use std::path::Path;

/// The section a relocation in `section` at index `reloc` points into.
fn reloc_target_section(
    elf: &Object<'_>,
    section: SectionIndex,
    reloc: icf_object::RelocIndex,
) -> Option<SectionIndex> {
    let reloc = elf.section(section).reloc(reloc);
    elf.symbol(reloc.symbol).section()
}

#[test]
fn fdes_point_at_their_function_and_lsda() {
    for compiler in [Compiler::Gcc, Compiler::Clang] {
        let object = icf_fixtures::object(Path::new("cpp/exceptions.cpp"), &Build::new(compiler));
        let inputs = open(&[object]);
        let program = load(&inputs);
        let elf = &program.objects[0].object;
        let (eh_frame, fdes) = elf.eh_frame.as_ref().expect("an .eh_frame section");
        let mut with_lsda = Vec::new();
        for fde in fdes {
            let function =
                reloc_target_section(elf, *eh_frame, fde.pc_begin.expect("pc_begin relocation"))
                    .expect("FDE names a section");
            assert!(
                elf.section(function).is_executable(),
                "FDE at {:#x} describes a non-code section",
                fde.offset
            );
            if let Some(lsda) = fde.lsda {
                let table =
                    reloc_target_section(elf, *eh_frame, lsda).expect("LSDA names a section");
                assert!(
                    elf.section(table).name.starts_with(b".gcc_except_table"),
                    "{compiler:?}"
                );
                with_lsda.push(elf.section(function).name_lossy());
            }
        }
        for name in ["catch_int0", "catch_int1", "catch_long"] {
            assert!(
                with_lsda.iter().any(|s| s.contains(name)),
                "{compiler:?}: {name} has no LSDA in {with_lsda:?}"
            );
        }
        assert!(
            !with_lsda.iter().any(|s| s.contains("check_value")),
            "{compiler:?}: {with_lsda:?}"
        );
    }
}

#[test]
fn comdat_groups_and_address_significance_are_read() {
    for compiler in [Compiler::Gcc, Compiler::Clang] {
        let object = icf_fixtures::object(Path::new("cpp/templates.cpp"), &Build::new(compiler));
        let inputs = open(&[object]);
        let program = load(&inputs);
        let elf = &program.objects[0].object;
        let signatures: Vec<String> = elf
            .groups
            .iter()
            .map(|g| elf.symbol(g.signature).name_lossy())
            .collect();
        assert!(
            signatures.iter().any(|s| s.contains("sum_all")),
            "{compiler:?}: {signatures:?}"
        );
        for group in &elf.groups {
            assert!(group.is_comdat);
            for member in &group.members {
                assert_eq!(
                    elf.section(*member).group.map(|g| elf.group(g).section),
                    Some(group.section)
                );
            }
        }
        // clang emits `.llvm_addrsig`; gcc does not.
        match compiler {
            Compiler::Clang => {
                let table = elf
                    .addrsig
                    .as_ref()
                    .expect("clang objects carry .llvm_addrsig");
                assert!(table.iter().all(|s| s.index() < elf.symbols.len()));
            }
            Compiler::Gcc => assert!(elf.addrsig.is_none()),
        }
    }
}

#[test]
fn rlib_members_that_are_not_objects_are_skipped() {
    let rlib = icf_fixtures::rust_rlib();
    let inputs = open(&[rlib]);
    let program = load(&inputs);
    assert!(!program.objects.is_empty());
    let members: Vec<_> = program.objects.iter().map(|o| o.member.clone()).collect();
    assert!(
        members
            .iter()
            .all(|m| m.as_deref().is_some_and(|m| m.ends_with(".o"))),
        "{members:?}"
    );
    assert!(
        program.skipped.iter().any(|(_, s)| s.member == "lib.rmeta"),
        "lib.rmeta not listed as skipped: {:?}",
        program.skipped
    );
}
