//! Every function of every fixture object, of a rustc-built rlib and of the
//! installed libstd and libcore lifts into a well-formed function: its
//! instructions cover every byte exactly once, its blocks and operands are
//! in range. Functions that differ only in instruction encoding lift alike.
//! Sketches stand for their lifts, and a linked image's functions sketched
//! from the instructions its reader marked equal their whole sketches.

use icf_fixtures::{Build, Compiler};
use icf_tests::{aarch64_builds, function_named, ir_without_offsets, load, open, x86_builds};
use std::path::{Path, PathBuf};

/// Lifts everything in `paths`, checks every function, and returns (functions, opaque functions, their reasons).
fn lift_and_check(paths: &[PathBuf]) -> (usize, Vec<String>) {
    let inputs = open(paths);
    let program = load(&inputs);
    let lifted = program.lift_all();
    assert_eq!(lifted.len(), program.functions.len());
    let mut opaque = Vec::new();
    for (info, function) in program.functions.iter().zip(&lifted) {
        let name = program.function_name(info);
        if let Err(problem) = function.check() {
            panic!(
                "{} in {}: {problem}",
                name,
                program.object_name(info.object)
            );
        }
        assert_eq!(u64::from(function.size), info.extent.len(), "{name}: size");
        if let Some(run) = function.opaque.first() {
            opaque.push(format!(
                "{name}: {}",
                icf_ir::print::describe_reason(&run.reason)
            ));
        }
    }
    (lifted.len(), opaque)
}

#[test]
fn every_fixture_function_lifts_without_opaque_code() {
    for build in x86_builds() {
        for source in icf_fixtures::sources() {
            let object = icf_fixtures::object(&source, &build);
            let (count, opaque) = lift_and_check(std::slice::from_ref(&object));
            assert!(
                count > 0,
                "{} ({}) has no functions",
                source.display(),
                build.label()
            );
            assert!(
                opaque.is_empty(),
                "{} ({}): {opaque:#?}",
                source.display(),
                build.label()
            );
        }
    }
}

#[test]
fn every_aarch64_fixture_function_lifts_without_opaque_code() {
    for build in aarch64_builds() {
        let objects: Vec<PathBuf> = icf_fixtures::sources()
            .iter()
            .filter(|s| s.extension().is_some_and(|e| e != "s"))
            .map(|s| icf_fixtures::object(s, &build))
            .collect();
        let (count, opaque) = lift_and_check(&objects);
        assert!(count > 10, "{}: only {count} functions", build.label());
        assert!(opaque.is_empty(), "{}: {opaque:#?}", build.label());
    }
}

#[test]
fn aarch64_jump_tables_make_the_layout_matter() {
    // gcc and clang both address AArch64 jump tables relative to an `adr`
    // of a block, with entries the assembler computed: no relocation names
    // the targets, so only equal offsets make two copies equal.
    for build in aarch64_builds() {
        let object = icf_fixtures::object(Path::new("c/switch.c"), &build);
        let inputs = open(&[object]);
        let program = load(&inputs);
        let dispatch = program.lift(function_named(&program, "dispatch"));
        assert!(dispatch.layout_sensitive, "{}", build.label());
        assert!(
            dispatch.blocks.len() >= 10,
            "{}: {} blocks",
            build.label(),
            dispatch.blocks.len()
        );
    }
}

#[test]
fn rust_rlibs_lift_without_opaque_code() {
    let mut rlibs = icf_fixtures::std_rlibs();
    rlibs.push(icf_fixtures::rust_rlib());
    let (count, opaque) = lift_and_check(&rlibs);
    assert!(
        count > 1000,
        "only {count} functions in libstd, libcore and the fixture crate"
    );
    assert!(opaque.is_empty(), "{opaque:#?}");
}

#[test]
fn encodings_of_the_same_instructions_lift_alike() {
    for compiler in [Compiler::Gcc, Compiler::Clang] {
        let object = icf_fixtures::object(Path::new("asm/encodings.s"), &Build::new(compiler));
        let inputs = open(&[object]);
        let program = load(&inputs);
        let short = ir_without_offsets(&program, function_named(&program, "enc_short"));
        let long = ir_without_offsets(&program, function_named(&program, "enc_long"));
        let different = ir_without_offsets(&program, function_named(&program, "enc_different"));
        // The encodings really differ: the lifter has something to normalize.
        let size = |name| function_named(&program, name).extent.len();
        assert_ne!(size("enc_short"), size("enc_long"));
        assert_eq!(short, long);
        assert_ne!(short, different);
    }
}

#[test]
fn functions_sharing_a_section_are_split_and_local_calls_resolved() {
    let object = icf_fixtures::object(Path::new("asm/multi.s"), &Build::new(Compiler::Gcc));
    let inputs = open(&[object]);
    let program = load(&inputs);
    let names: Vec<String> = program
        .functions
        .iter()
        .map(|f| program.function_raw_name(f))
        .collect();
    for expected in ["multi_first", "multi_second", "multi_third", "double_it"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    let first = ir_without_offsets(&program, function_named(&program, "multi_first"));
    let second = ir_without_offsets(&program, function_named(&program, "multi_second"));
    // Both call the static `double_it` without a relocation, from different places.
    assert!(first.contains("call double_it <PC32 call>"), "{first}");
    assert_eq!(first, second);
}

#[test]
fn jump_table_targets_start_blocks() {
    for build in x86_builds() {
        let object = icf_fixtures::object(Path::new("c/switch.c"), &build);
        let inputs = open(&[object]);
        let program = load(&inputs);
        let dispatch = function_named(&program, "dispatch");
        let lifted = program.lift(dispatch);
        let object = program.object(dispatch.object);
        let targets = object
            .code_references
            .get(&dispatch.extent.section)
            .cloned()
            .unwrap_or_default();
        let in_dispatch: Vec<u64> = targets
            .into_iter()
            .filter(|&t| t > dispatch.extent.start && t < dispatch.extent.end)
            .collect();
        assert!(
            in_dispatch.len() >= 10,
            "{}: jump table targets {in_dispatch:?}",
            build.label()
        );
        for target in in_dispatch {
            let at = (target - dispatch.extent.start) as u32;
            let starts_block = lifted
                .blocks
                .iter()
                .any(|b| lifted.insts[b.insts.start as usize].at == at);
            assert!(
                starts_block,
                "{}: no block starts at jump-table target {at:#x}",
                build.label()
            );
        }
    }
}

/// The analysis lifts only functions whose shape another shares
/// (`icf_arch::Sketch`), and takes the others' references from their
/// sketches, so a sketch must stand for its lift. For every function of
/// the x86-64 fixtures (every build) and of libstd, libcore and the
/// fixture crate: where a sketch is made, the lift compares no bytes and
/// has the same references and fall-through; and functions whose keys
/// are equal, or only their structural hashes (equal up to registers and
/// constants: the report's near duplicates), have equal shapes.
#[test]
fn sketches_stand_for_their_lifts() {
    let mut paths: Vec<PathBuf> = x86_builds()
        .iter()
        .flat_map(|build| {
            icf_fixtures::sources()
                .into_iter()
                .map(move |source| icf_fixtures::object(&source, build))
        })
        .collect();
    paths.extend(icf_fixtures::std_rlibs());
    paths.push(icf_fixtures::rust_rlib());
    check_sketches(&paths);
}

fn check_sketches(paths: &[PathBuf]) {
    let inputs = open(paths);
    let program = load(&inputs);
    let references = |f: &icf_ir::Function| {
        let mut refs: Vec<_> = f
            .refs
            .iter()
            .map(|r| (r.target, r.addend, r.kind, r.use_ as u8))
            .collect();
        refs.sort_unstable();
        refs
    };
    let mut shape_of_structure: std::collections::HashMap<u64, u64> = Default::default();
    let (mut sketched, mut shared) = (0, 0);
    for info in &program.functions {
        let name = program.function_name(info);
        let lifted = program.lift(info);
        let Some(sketch) = program.sketch(info) else {
            continue;
        };
        sketched += 1;
        assert!(!lifted.has_opaque(), "{name}: sketched, but lifted opaque");
        assert_eq!(references(&sketch.function), references(&lifted), "{name}");
        assert_eq!(
            sketch.function.fall_through.is_some(),
            lifted.fall_through.is_some(),
            "{name}"
        );
        // Equal keys have equal structural hashes (the report's near
        // duplicates share one too): all must share a shape.
        let structure = icf_fold::body::Body::of(&lifted).structural_hash;
        match shape_of_structure.get(&structure) {
            Some(&shape) => {
                shared += 1;
                assert_eq!(
                    shape, sketch.shape,
                    "{name}: equal structures, other shapes"
                );
            }
            None => {
                shape_of_structure.insert(structure, sketch.shape);
            }
        }
    }
    let functions = program.functions.len();
    assert!(
        sketched * 10 >= functions * 9,
        "only {sketched} of {functions} functions sketched"
    );
    assert!(shared >= 20, "only {shared} structures shared");
}

/// A linked image's functions sketched from the marks its reader found
/// (as the analysis sketches them) give the whole sketches: this test's
/// own Rust executable, a C++ fixture linked statically by gcc and clang
/// (glibc's and libstdc++'s code besides the compilers'), and Debian's
/// lld and mold. Pieces no symbol starts and none marked, mostly the
/// padding between functions (which ends in `nop`s), are not counted.
#[test]
fn an_images_sketches_from_the_readers_marks_are_whole_sketches() {
    let dir = icf_fixtures::source_dir().join("../target/lift-marks");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let mut images = vec![std::env::current_exe().expect("the test's own path")];
    for build in x86_builds()
        .into_iter()
        .filter(|build| build.function_sections)
    {
        let object = icf_fixtures::object(Path::new("cpp/templates.cpp"), &build);
        let image = dir.join(format!("templates-{}", build.label()));
        let output = build
            .driver_command(true)
            .arg(&object)
            .args(["-static", "-o"])
            .arg(&image)
            .output()
            .expect("running the compiler driver");
        assert!(
            output.status.success(),
            "linking {}: {}",
            image.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        images.push(image);
    }
    // Two stripped distribution binaries, whose pieces of code come from
    // their unwind tables: the linkers the tests run.
    for linker in ["ld.lld-19", "mold"] {
        icf_fixtures::require_tool(linker);
        let path = icf_fixtures::find_program(linker).expect("required above");
        images.push(std::fs::canonicalize(&path).expect("the linker's own file"));
    }
    let (mut marked, mut functions, mut with_references) = (0, 0, 0);
    for image in &images {
        let counts = check_marked_sketches(image);
        assert!(counts.0 > 0, "{}: no function marked", image.display());
        marked += counts.0;
        functions += counts.1;
        with_references += counts.2;
    }
    assert!(
        marked * 100 >= functions * 95,
        "only {marked} of {functions} functions marked"
    );
    assert!(
        with_references * 2 >= marked,
        "only {with_references} of {marked} sketches with references"
    );
}

/// Checks every function of `image` the reader marked; returns how many
/// it marked, of how many, and how many sketches have references.
fn check_marked_sketches(image: &Path) -> (usize, usize, usize) {
    let inputs = open(&[image.to_path_buf()]);
    let program = icf::Program::load(
        &inputs,
        icf::Options {
            linked_image: true,
            ..icf::Options::default()
        },
    )
    .unwrap_or_else(|e| panic!("loading {}: {e:#}", image.display()));
    let shapes = &program.image().expect("a linked image").code_shapes;
    let (mut marked, mut with_references, mut unmarked_functions) = (0, 0, 0);
    for info in &program.functions {
        let extent = &info.extent;
        let marks = shapes
            .binary_search_by_key(&(extent.section, extent.start), |piece| {
                (piece.section, piece.start)
            })
            .ok()
            .map(|at| &shapes[at])
            .and_then(|piece| {
                Some((piece.shape, piece.marks.as_ref()?)).filter(|_| piece.end == extent.end)
            });
        let Some((shape, marks)) = marks else {
            // Pieces no symbol starts and none marked are mostly the
            // padding between functions, which ends in `nop`s: not counted.
            unmarked_functions += usize::from(!extent.symbols.is_empty());
            continue;
        };
        marked += 1;
        let name = program.function_name(info);
        let from_marks = program.sketch_marked(info, shape, marks);
        let whole = program.sketch(info);
        assert_eq!(
            from_marks.as_ref().map(|s| (s.shape, &s.function)),
            whole.as_ref().map(|s| (s.shape, &s.function)),
            "{}: {name}",
            image.display()
        );
        with_references += usize::from(whole.is_some_and(|s| !s.function.refs.is_empty()));
    }
    (marked, marked + unmarked_functions, with_references)
}
