//! The structural invariants ARCHITECTURE.md claims, checked on the
//! sources: no import circles between the modules of a crate, the
//! dependencies each core crate may have, and where format and
//! architecture knowledge may live.
//!
//! The module graph is read from the text: in `crates/<crate>/src`, a file
//! belongs to its top-level module (`x86_64/lift.rs` to `x86_64`), and a
//! path `crate::m::...` (in `use` or in code) is an edge to module `m`, or,
//! where `m` is an item `lib.rs` re-exports from a module, to that module.
//! Items `lib.rs` defines itself belong to `lib`, whose own edges are its
//! code's (paths through its modules and the names it re-exports), not its
//! `mod` and `pub use` lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable source directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The top-level module a source file belongs to (`lib` for `lib.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("file under src");
    let first = relative
        .components()
        .next()
        .expect("a file name")
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    first.trim_end_matches(".rs").to_string()
}

/// The text without comments (line comments and doc comments), so that a
/// path in prose is not taken for an import.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment of every `crate::` path in `code`, including each
/// branch of `crate::{a, b::c}`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(found) = code[from..].find("crate::") {
        let at = from + found;
        from = at + "crate::".len();
        // `icf_crate::` and the like are not `crate::`.
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut segment_start = true;
            let mut current = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !current.is_empty() {
                            names.insert(std::mem::take(&mut current));
                        }
                        segment_start = true;
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 && segment_start {
                    if c.is_alphanumeric() || c == '_' {
                        current.push(c);
                    } else if !current.is_empty() {
                        segment_start = false;
                    }
                }
            }
            if !current.is_empty() {
                names.insert(current);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// Modules of `lib.rs` and which module each name it re-exports comes from.
fn root_names(lib: &str) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let mut modules = BTreeSet::new();
    let mut reexports = BTreeMap::new();
    for statement in code_of(lib).split(';') {
        let statement = statement.trim();
        let declaration = statement
            .strip_prefix("pub mod ")
            .or_else(|| statement.strip_prefix("mod "));
        if let Some(name) = declaration {
            modules.insert(name.trim().to_string());
            continue;
        }
        let Some(path) = statement.strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, items)) = path.split_once("::") else {
            continue;
        };
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let item = item.trim();
            let name = item.rsplit("::").next().unwrap_or(item);
            let name = name.rsplit(" as ").next().unwrap_or(name).trim();
            if !name.is_empty() {
                reexports.insert(name.to_string(), module.to_string());
            }
        }
    }
    (modules, reexports)
}

/// The module graph of one crate: module -> modules it uses.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let (modules, reexports) = root_names(&lib);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(src) {
        let from = module_of(src, &file);
        let text = std::fs::read_to_string(&file).expect("readable source");
        let mut code = code_of(&text);
        if from == "lib" {
            // The root's declarations and re-exports are not uses.
            code = code
                .split(';')
                .filter(|s| {
                    let s = s.trim();
                    !(s.starts_with("mod ")
                        || s.starts_with("pub mod ")
                        || s.starts_with("pub use "))
                })
                .collect::<Vec<_>>()
                .join(";");
        }
        let mut names = crate_paths(&code);
        if from == "lib" {
            // The root names its modules and their re-exported items
            // without `crate::`.
            for word in code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')) {
                let first = word.split("::").next().unwrap_or(word);
                if (modules.contains(first) && word.contains("::")) || reexports.contains_key(first)
                {
                    names.insert(first.to_string());
                }
            }
        }
        let edges = graph.entry(from.clone()).or_default();
        for name in names {
            let to = if modules.contains(&name) {
                name
            } else if let Some(module) = reexports.get(&name) {
                module.clone()
            } else {
                "lib".to_string()
            };
            if to != from {
                edges.insert(to);
            }
        }
    }
    graph
}

/// One cycle of `graph`, if it has any.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Copy, Clone, PartialEq)]
    enum State {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, State>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(node) {
            Some(State::Done) => return None,
            Some(State::Open) => {
                let start = path.iter().position(|n| n == node).unwrap_or(0);
                let mut cycle = path[start..].to_vec();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            None => {}
        }
        state.insert(node.to_string(), State::Open);
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, state, path) {
                return Some(cycle);
            }
        }
        path.pop();
        state.insert(node.to_string(), State::Done);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if let Some(cycle) = visit(node, graph, &mut state, &mut Vec::new()) {
            return Some(cycle);
        }
    }
    None
}

fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.push(workspace().join("xtask"));
    dirs.sort();
    dirs
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let mut circles = Vec::new();
    for dir in crate_dirs() {
        let graph = module_graph(&dir.join("src"));
        if let Some(cycle) = find_cycle(&graph) {
            circles.push(format!("{}: {}", dir.display(), cycle.join(" -> ")));
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_reader_sees_a_circle_where_there_is_one() {
    let dir = std::env::temp_dir().join(format!("icf-structure-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).expect("scratch directory");
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).expect("write");
    write("lib.rs", "mod a;\nmod b;\nmod c;\npub use c::Thing;\n");
    write("a/mod.rs", "use crate::{b::B, c};\n");
    write(
        "b.rs",
        "// use crate::a; in a comment is no use\npub struct B;\n",
    );
    write("c.rs", "fn f() { crate::Thing::new(); }\n");
    let graph = module_graph(&src);
    assert_eq!(find_cycle(&graph), None, "{graph:?}");
    write("b.rs", "pub struct B(crate::Thing);\n");
    write(
        "c.rs",
        "pub struct Thing; fn f() { let _ = crate::a::x; }\n",
    );
    let cycle = find_cycle(&module_graph(&src)).expect("c uses a, which uses c");
    assert!(
        cycle.len() >= 3 && cycle.first() == cycle.last(),
        "{cycle:?}"
    );
    assert!(cycle.contains(&"a".to_string()) && cycle.contains(&"c".to_string()));
    std::fs::remove_dir_all(&dir).ok();
}

/// The `[dependencies]` of a crate's manifest, by name.
fn dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).expect("readable manifest");
    let mut in_dependencies = false;
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        if in_dependencies
            && let Some((name, _)) = line.split_once('=')
            && !line.starts_with('#')
        {
            let name = name.trim();
            names.insert(name.strip_suffix(".workspace").unwrap_or(name).to_string());
        }
    }
    names
}

#[test]
fn the_comparator_and_the_ir_know_no_file_format_and_no_instruction_set() {
    let crates = workspace().join("crates");
    let allowed = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        dependencies(&crates.join("icf-ir/Cargo.toml")),
        allowed(&["smallvec"])
    );
    // xxhash-rust fingerprints a key's code (`icf_fold::body`): a hash
    // function, no format or instruction set.
    assert_eq!(
        dependencies(&crates.join("icf-fold/Cargo.toml")),
        allowed(&["icf-ir", "rayon", "xxhash-rust"])
    );
}

/// The lines of `files` whose code (comments aside) `matches`, as
/// `path:line: text`.
fn code_lines(files: &[PathBuf], matches: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("readable source");
        for (number, line) in code_of(&text).lines().enumerate() {
            if matches(line) {
                found.push(format!(
                    "{}:{}: {}",
                    file.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    found
}

/// Whether `line` holds `needle` with no identifier character right
/// before it (`before`) or right after it (`!before`).
fn names_word(line: &str, needle: &str, before: bool) -> bool {
    let identifier = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(needle).any(|(at, _)| {
        let neighbour = if before {
            line[..at].chars().next_back()
        } else {
            line[at + needle.len()..].chars().next()
        };
        !neighbour.is_some_and(identifier)
    })
}

/// Lines of `crates/<name>/src` whose code (comments aside) contains `needle`.
fn occurrences(name: &str, needle: &str) -> Vec<String> {
    let src = workspace().join("crates").join(name).join("src");
    code_lines(&rust_files(&src), |line| line.contains(needle))
}

#[test]
fn instruction_set_knowledge_lives_in_icf_arch() {
    // Relocation types, machine numbers and per-architecture branches
    // belong to `icf-arch` (and to `icf-verify`, which decodes on its own
    // by design). The post-link shrinker moves code of both architectures
    // through the same trait.
    for name in [
        "icf",
        "icf-object",
        "icf-fold",
        "icf-ir",
        "icf-shrink",
        "icf-linkmap",
        "icf-cache",
        "icf-cli",
    ] {
        for needle in [
            "R_X86_64_",
            "R_AARCH64_",
            "Arch::X86_64 =>",
            "Arch::Aarch64 =>",
        ] {
            let found = occurrences(name, needle);
            assert!(
                found.is_empty(),
                "{needle} outside icf-arch:\n{}",
                found.join("\n")
            );
        }
    }
}

/// Raw ELF and Mach-O header fields and constants: what only a reader or
/// a writer of the format should name.
const RAW_FORMAT_NAMES: [&str; 14] = [
    "object::elf",
    "object::macho",
    "sh_type",
    "sh_flags",
    "sh_link",
    "sh_info",
    "sh_entsize",
    "st_info",
    "st_shndx",
    "r_info",
    "n_type",
    "n_sect",
    "elf::SHT_",
    "macho::S_",
];

/// Lines of the Rust files under `src` whose code (comments aside) names a
/// raw format field or constant ([`RAW_FORMAT_NAMES`]) as a word of its
/// own (`r_info`, not `other_info`).
fn raw_format_names(src: &Path) -> Vec<String> {
    code_lines(&rust_files(src), |line| {
        RAW_FORMAT_NAMES
            .iter()
            .any(|needle| names_word(line, needle, true))
    })
}

#[test]
fn the_pipeline_reads_objects_through_the_object_model() {
    // ELF and Mach-O fields, constants and flag tests belong to
    // `icf-object`, behind the model's predicates (`Section::is_alloc`,
    // `Section::patched_section`, ...), so that a second format is a
    // second reader and writer, not a fork of the pipeline. (`icf-shrink`
    // and `icf-verify` read linked images with readers of their own.)
    for name in ["icf", "icf-fold", "icf-ir", "icf-cache", "icf-cli"] {
        let found = raw_format_names(&workspace().join("crates").join(name).join("src"));
        assert!(
            found.is_empty(),
            "raw format fields in {name}:\n{}",
            found.join("\n")
        );
    }
}

#[test]
fn the_format_check_sees_a_raw_field() {
    let dir = std::env::temp_dir().join(format!("icf-structure-raw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let write = |text: &str| std::fs::write(dir.join("lib.rs"), text).expect("write");
    write("// a section's sh_type, in prose\nfn f(other_info: u32) -> bool { other_info == 0 }\n");
    assert_eq!(raw_format_names(&dir), Vec::<String>::new());
    write("fn f(s: &Section) -> bool { s.sh_type == 4 }\n");
    assert_eq!(raw_format_names(&dir).len(), 1);
    write("use object::macho;\nfn f(n: u8) -> bool { n & macho::N_EXT != 0 }\n");
    assert_eq!(raw_format_names(&dir).len(), 1);
    std::fs::remove_dir_all(&dir).ok();
}

/// The path dependencies a manifest declares itself (`name = { path =
/// ... }`) rather than through `[workspace.dependencies]`.
fn own_path_dependencies(manifest: &str) -> Vec<String> {
    manifest
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter(|line| line.contains("path =") && line.contains('{'))
        .filter_map(|line| Some(line.split_once('=')?.0.trim().to_string()))
        .collect()
}

#[test]
fn every_crate_is_a_member_and_reaches_the_others_through_the_workspace() {
    let root = std::fs::read_to_string(workspace().join("Cargo.toml")).expect("the root manifest");
    let members = root
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .expect("a members list");
    let mut manifests = vec![
        workspace().join("fixtures/Cargo.toml"),
        workspace().join("tests/Cargo.toml"),
    ];
    for dir in crate_dirs() {
        let relative = dir
            .strip_prefix(workspace())
            .expect("under the workspace")
            .display()
            .to_string();
        assert!(
            members.contains(&format!("\"{relative}\"")),
            "{relative} is not a workspace member: `cargo test --workspace` and clippy skip it"
        );
        manifests.push(dir.join("Cargo.toml"));
    }
    for manifest in manifests {
        let text = std::fs::read_to_string(&manifest).expect("readable manifest");
        let own = own_path_dependencies(&text);
        assert!(
            own.is_empty(),
            "{}: path dependencies outside [workspace.dependencies]: {own:?}",
            manifest.display()
        );
    }
}

#[test]
fn the_manifest_reader_sees_a_path_dependency() {
    let manifest = "[dependencies]\nicf.workspace = true\n# x = { path = \"old\" }\nicf-emu = { path = \"../icf-emu\" }\n[[test]]\npath = \"lift.rs\"\n";
    assert_eq!(own_path_dependencies(manifest), vec!["icf-emu".to_string()]);
}

/// Lines of code of the Rust files under `dirs` (but `except`) that
/// `matches`.
fn lines_under(
    dirs: &[PathBuf],
    except: &[PathBuf],
    matches: impl Fn(&str) -> bool,
) -> Vec<String> {
    let files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|dir| rust_files(dir))
        .filter(|file| !except.contains(file))
        .collect();
    code_lines(&files, matches)
}

/// `crates/`, `tests/`, `xtask/` and `fixtures/src/`: every test and task.
fn every_test_and_task() -> [PathBuf; 4] {
    let root = workspace();
    ["crates", "tests", "xtask", "fixtures/src"].map(|dir| root.join(dir))
}

/// Lines of the Rust files under `dirs` (but `except`) that declare a
/// toolchain of their own: an enum of compilers or linkers, or a command
/// that starts the emulator.
fn second_toolchains(dirs: &[PathBuf], except: &[PathBuf]) -> Vec<String> {
    let needles = ["enum Linker", "enum Compiler"];
    // The emulator, started by its name or through a variable.
    let emulator = ["Command::new(\"qemu", "Command::new(qemu"];
    // A needle as a whole word: `enum LinkerFlavor` (how a link command
    // line reads) is no linker list.
    lines_under(dirs, except, |line| {
        needles.iter().any(|needle| names_word(line, needle, false))
            || emulator.iter().any(|start| line.contains(start))
    })
}

#[test]
fn one_toolchain_serves_every_test_and_task() {
    // Compilers, linkers, their quirks (clang's `--target`, the cross
    // gcc's mold, gcc's lld) and the emulator that runs AArch64 programs
    // are `icf-fixtures`' (`Build::driver_command`, `Build::link_command`,
    // `run_command`, `runner`): a test or a task names them from there.
    let root = workspace();
    // This file names them to look for them.
    let except = [
        root.join("fixtures/src/lib.rs"),
        root.join("tests/structure.rs"),
    ];
    let found = second_toolchains(&every_test_and_task(), &except);
    assert!(
        found.is_empty(),
        "a toolchain besides icf-fixtures':\n{}",
        found.join("\n")
    );
}

#[test]
fn the_toolchain_check_sees_a_second_enum() {
    let dir = std::env::temp_dir().join(format!("icf-structure-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let file = dir.join("lib.rs");
    let dirs = std::slice::from_ref(&dir);
    std::fs::write(
        &file,
        "// enum Linker { Lld } in prose\nenum LinkerFlavor { Gnu }\n",
    )
    .expect("write");
    assert_eq!(second_toolchains(dirs, &[]).len(), 0);
    std::fs::write(&file, "enum Linker { Lld, Bfd }\n").expect("write");
    assert_eq!(second_toolchains(dirs, &[]).len(), 1);
    std::fs::write(&file, "let qemu = \"qemu-x86_64\";\nCommand::new(qemu);\n").expect("write");
    assert_eq!(second_toolchains(dirs, &[]).len(), 1);
    assert_eq!(
        second_toolchains(dirs, std::slice::from_ref(&file)).len(),
        0
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Lines of the Rust files under `dirs` (but `except`) that define a type
/// named `Target`.
fn target_types(dirs: &[PathBuf], except: &[PathBuf]) -> Vec<String> {
    lines_under(dirs, except, |line| {
        ["enum Target", "struct Target"]
            .iter()
            .any(|needle| names_word(line, needle, false))
    })
}

#[test]
fn a_target_is_what_a_reference_names() {
    // One meaning per word: a target is the place a relocation or a
    // reference names (`icf`'s target table, the link map's reading of
    // input relocations), and the bench's PASS/FAIL lines are the issues'
    // targets. What a program is built for is an architecture
    // (`icf_fixtures::Arch`) or a platform (`icf_emu::Platform`); what the
    // fuzzer mutates is an input kind (`icf_fuzz::InputKind`).
    let root = workspace();
    let except = [
        root.join("crates/icf/src/load/targets.rs"),
        root.join("crates/icf-linkmap/src/input_objects.rs"),
        root.join("xtask/src/bench/targets.rs"),
        // This file names the type to look for it.
        root.join("tests/structure.rs"),
    ];
    let found = target_types(&every_test_and_task(), &except);
    assert!(
        found.is_empty(),
        "a `Target` that is no reference target:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_target_check_sees_a_build_target() {
    let dir = std::env::temp_dir().join(format!("icf-structure-target-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let file = dir.join("lib.rs");
    let dirs = std::slice::from_ref(&dir);
    std::fs::write(&file, "// enum Target in prose\nenum TargetId { A }\n").expect("write");
    assert_eq!(target_types(dirs, &[]).len(), 0);
    std::fs::write(&file, "pub enum Target { X86_64, Aarch64 }\n").expect("write");
    assert_eq!(target_types(dirs, &[]).len(), 1);
    std::fs::remove_dir_all(&dir).ok();
}
