//! Which candidates the comparator and the partition find identical, on real
//! compiler output: identical pairs, self and mutual recursion, callers that
//! fold exactly when their callees do, functions reading identical or
//! different read-only tables (and taking their addresses or not),
//! switches with their own jump tables, and C++
//! functions whose exception tables catch the same or different types.

use icf::Analysis;
use icf_fixtures::{Build, Compiler};
use icf_tests::{load, open, x86_builds};
use std::path::Path;

fn class(analysis: &Analysis<'_, '_>, name: &str) -> icf::ClassId {
    let found = analysis.find(name);
    assert_eq!(found.len(), 1, "{name}: {found:?}");
    analysis.partition.class_of[found[0].index()]
}

fn check_pairs(source: &str, builds: &[Build], same: &[(&str, &str)], different: &[(&str, &str)]) {
    for build in builds {
        let object = icf_fixtures::object(Path::new(source), build);
        let inputs = open(&[object]);
        let program = load(&inputs);
        let analysis = Analysis::run(&program, &icf::PlanOptions::default());
        for (a, b) in same {
            assert_eq!(
                class(&analysis, a),
                class(&analysis, b),
                "{source} ({}): {a} and {b} should fold:\n{}",
                build.label(),
                analysis.explain(analysis.find(a)[0], analysis.find(b)[0])
            );
        }
        for (a, b) in different {
            assert_ne!(
                class(&analysis, a),
                class(&analysis, b),
                "{source} ({}): {a} and {b} must not fold",
                build.label()
            );
        }
    }
}

#[test]
fn identical_pairs_and_recursion_fold() {
    check_pairs(
        "c/identical.c",
        &x86_builds(),
        &[
            ("add0", "add1"),
            ("sum0", "sum1"),
            ("fact0", "fact1"),
            ("ping0", "ping1"),
            ("pong0", "pong1"),
            ("sub0", "sub1"),
        ],
        &[("add0", "add_plus_one"), ("ping0", "pong0")],
    );
}

#[test]
fn callers_fold_exactly_when_callees_fold() {
    check_pairs(
        "c/fold_cases.c",
        &x86_builds(),
        &[("leaf_a", "leaf_b"), ("caller_a", "caller_b")],
        &[("leaf_a", "leaf_c"), ("caller_a", "caller_c")],
    );
}

#[test]
fn functions_reading_identical_tables_fold_unless_they_take_their_addresses() {
    // Tables are separate candidates only with -fdata-sections.
    let sections = |extra: &[&str]| -> Vec<Build> {
        x86_builds()
            .into_iter()
            .filter(|b| b.function_sections)
            .map(|b| Build {
                extra_flags: extra.iter().map(|s| s.to_string()).collect(),
                ..b
            })
            .collect()
    };
    // Without -fpic a function loads straight from its table: any copy of
    // the table serves.
    check_pairs(
        "c/fold_cases.c",
        &sections(&["-fno-pic"]),
        &[
            ("table_a", "table_b"),
            ("lookup_a", "lookup_b"),
            ("switch_a", "switch_b"),
        ],
        &[("table_a", "table_c"), ("lookup_a", "lookup_c")],
    );
    // gcc's position-independent code takes the table's address (`lea`);
    // gcc writes no address-significance table, so the named tables' own
    // addresses count, and the plan will not give two of them one address.
    let gcc_pic: Vec<Build> = sections(&[])
        .into_iter()
        .filter(|b| b.compiler == Compiler::Gcc)
        .collect();
    check_pairs(
        "c/fold_cases.c",
        &gcc_pic,
        &[("table_a", "table_b"), ("switch_a", "switch_b")],
        &[("lookup_a", "lookup_b"), ("lookup_a", "lookup_c")],
    );
}

#[test]
fn references_to_equal_string_literals_compare_by_content() {
    for build in x86_builds() {
        let objects: Vec<_> = ["e2e/cross_a.c", "e2e/cross_b.c"]
            .iter()
            .map(|s| icf_fixtures::object(Path::new(s), &build))
            .collect();
        let inputs = open(&objects);
        let program = load(&inputs);
        let analysis = Analysis::run(&program, &icf::PlanOptions::default());
        assert_eq!(
            class(&analysis, "greet_a"),
            class(&analysis, "greet_b"),
            "{}",
            build.label()
        );
        assert_ne!(
            class(&analysis, "greet_a"),
            class(&analysis, "greet_other"),
            "{}",
            build.label()
        );
    }
}

#[test]
fn exception_tables_decide_for_identical_code() {
    // Without function sections each `.cold` part ends in a call to
    // `_Unwind_Resume` with the next one right after it: icf cannot know
    // the call does not return, so it compares what follows, and the parts
    // (which could not fold anyway, sharing their section) differ.
    let sections: Vec<Build> = x86_builds()
        .into_iter()
        .filter(|b| b.function_sections)
        .collect();
    check_pairs(
        "cpp/exceptions.cpp",
        &sections,
        &[("catch_int0(int)", "catch_int1(int)")],
        &[("catch_int0(int)", "catch_long(int)")],
    );
    check_pairs(
        "cpp/exceptions.cpp",
        &x86_builds(),
        &[],
        &[("catch_int0(int)", "catch_long(int)")],
    );
}

#[test]
fn explain_follows_references_to_the_first_difference() {
    let object = icf_fixtures::object(Path::new("c/fold_cases.c"), &Build::new(Compiler::Gcc));
    let inputs = open(&[object]);
    let program = load(&inputs);
    let analysis = Analysis::run(&program, &icf::PlanOptions::default());
    let (a, c) = (analysis.find("caller_a")[0], analysis.find("caller_c")[0]);
    let text = analysis.explain(a, c);
    assert!(text.contains("caller_a and caller_c differ"), "{text}");
    assert!(
        text.contains("because leaf_a and leaf_c are not identical"),
        "{text}"
    );
    assert!(text.contains("imul") || text.contains("lea"), "{text}");
    let same = analysis.explain(analysis.find("leaf_a")[0], analysis.find("leaf_b")[0]);
    assert!(same.contains("identical: they fold"), "{same}");
}

#[test]
fn vtable_entries_do_not_make_virtual_functions_significant() {
    // Position-independent vtables live in writable .data.rel.ro; without
    // -fpic they are read-only data candidates. Either way the entries are
    // no address use, while a function pointer in data is.
    let mut builds = Vec::new();
    for compiler in [Compiler::Gcc, Compiler::Clang] {
        for extra in [&[][..], &["-fno-pic".to_string()][..]] {
            builds.push(Build {
                extra_flags: extra.to_vec(),
                ..Build::new(compiler)
            });
        }
    }
    for build in builds {
        let objects = ["e2e/virtual_main.cpp", "e2e/virtual_tile.cpp"]
            .map(|source| icf_fixtures::object(Path::new(source), &build));
        let names = ["_ZNK6Square4areaEl", "_ZNK4Tile4areaEl", "_Z7scale_al"];
        assert_eq!(
            significant(&objects, &names),
            [false, false, true],
            "{names:?} ({})",
            build.label()
        );
    }
}

#[test]
fn a_virtual_function_that_also_has_another_name_stays_significant() {
    let object = icf_fixtures::object(Path::new("asm/vtable_alias.s"), &Build::new(Compiler::Gcc));
    let names = ["helper", "_ZNK6Square4areaEl", "_ZNK4Tile4areaEl"];
    assert_eq!(significant(&[object], &names), [true, true, false]);
}

/// Whether each of `names` has a significant address in safe mode.
fn significant(objects: &[std::path::PathBuf], names: &[&str]) -> Vec<bool> {
    let inputs = open(objects);
    let program = load(&inputs);
    let analysis = Analysis::run(&program, &icf::PlanOptions::default());
    let plan = &analysis.plan;
    names
        .iter()
        .map(|name| {
            let found = analysis.find(name);
            assert_eq!(found.len(), 1, "{name}: {found:?}");
            plan.significance[found[0].index()].is_some()
        })
        .collect()
}

#[test]
fn functions_rustc_made_fold_as_aliases_in_safe_mode() {
    // rustc marks every function unnamed_addr: no address of a Rust
    // function is significant, so safe mode makes no thunk for them, even
    // where a table of function pointers takes their addresses. (Twins in
    // one crate are merged by rustc itself: one crate per twin.)
    let dir = icf_fixtures::source_dir().join("../target/fold-rustc");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let objects: Vec<_> = ["a", "b"]
        .iter()
        .map(|twin| {
            let source = dir.join(format!("twin_{twin}.rs"));
            std::fs::write(
                &source,
                format!(
                    "#[inline(never)] pub fn twin(x: u32) -> u32 {{ x.wrapping_mul(7) ^ 3 }}\n\
                     pub static TABLE_{twin}: [fn(u32) -> u32; 1] = [twin];\n"
                ),
            )
            .expect("write source");
            let object = dir.join(format!("twin_{twin}.o"));
            let status =
                std::process::Command::new(std::env::var("RUSTC").unwrap_or("rustc".into()))
                    .args(["--edition", "2021", "--crate-type", "lib", "--emit=obj"])
                    .args(["-C", "opt-level=2", "-C", "codegen-units=1", "-o"])
                    .arg(&object)
                    .arg(&source)
                    .status()
                    .expect("rustc");
            assert!(status.success());
            object
        })
        .collect();
    let inputs = open(&objects);
    let program = load(&inputs);
    let analysis = Analysis::run(&program, &icf::PlanOptions::default());
    let (a, b) = (analysis.find("twin_a::twin"), analysis.find("twin_b::twin"));
    assert_eq!((a.len(), b.len()), (1, 1), "{a:?} {b:?}");
    // The tables (writable data) take both addresses: each object's data
    // has a relocation naming a function (its twin, the only one).
    let takes_its_twin = |object: &&icf::LoadedObject<'_>| {
        let object = &object.object;
        object
            .sections
            .iter()
            .filter(|section| !section.is_executable())
            .flat_map(|section| section.relocs.iter())
            .any(|r| object.symbol(r.symbol).kind == icf_object::SymbolKind::Func)
    };
    assert_eq!(program.objects.iter().filter(takes_its_twin).count(), 2);
    assert!(analysis.plan.significance[a[0].index()].is_none());
    assert!(analysis.plan.significance[b[0].index()].is_none());
    let (aliases, thunks) = analysis.plan.aliases_and_thunks();
    assert_eq!((aliases, thunks), (1, 0));
}
