//! icf's cache of comparator keys, as `icf link` uses it: a link that reads
//! its keys from the cache writes exactly the binary an uncached link
//! writes, whether the cache is empty, full, damaged, or holds entries for
//! objects whose surroundings changed (a weak definition overridden, a
//! function changed in another object, `--gc-sections` keeping less).
//! Every binary is run and compared with the plain link's output.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = icf_fixtures::source_dir()
        .join("../target/cli-cache")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

const A: &str = r#"
__attribute__((weak)) int g(int x) { return x + 1; }
int sum_a(const int *p, int n) { int s = 0; for (int i = 0; i < n; i++) s += p[i] * 3; return s; }
int twice_a(int x) { return g(x) * 2; }
const char *label_a(void) { return "same label"; }
"#;

/// `VARIANT` changes `sum_b` (not its size) so that it no longer folds
/// with `sum_a`.
const B: &str = r#"
int g(int x);
#ifdef VARIANT
int sum_b(const int *p, int n) { int s = 0; for (int i = 0; i < n; i++) s += p[i] * 5; return s; }
#else
int sum_b(const int *p, int n) { int s = 0; for (int i = 0; i < n; i++) s += p[i] * 3; return s; }
#endif
int twice_b(int x) { return g(x) * 2; }
const char *label_b(void) { return "same label"; }
"#;

/// A strong `g`, overriding a.c's weak one.
const C: &str = "int g(int x) { return x + 100; }\n";

const MAIN: &str = r#"
#include <stdio.h>
int sum_a(const int *, int); int sum_b(const int *, int);
int twice_a(int); int twice_b(int);
const char *label_a(void); const char *label_b(void);
int main(void) {
    int v[] = {1, 2, 3, 4};
    printf("%d %d %d %d %s %s\n", sum_a(v, 4), sum_b(v, 4), twice_a(5), twice_b(6),
           label_a(), label_b());
    printf("distinct: %d\n", (void *)sum_a != (void *)sum_b);
    return 0;
}
"#;

fn compile(dir: &Path, name: &str, source: &str, defines: &[&str]) -> String {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).expect("write source");
    let object = dir.join(format!("{name}.o"));
    let status = Command::new("gcc")
        .args(["-O2", "-ffunction-sections", "-fdata-sections", "-c"])
        .args(defines)
        .arg(&c)
        .arg("-o")
        .arg(&object)
        .status()
        .expect("run gcc");
    assert!(status.success(), "gcc {name}.c failed");
    object.display().to_string()
}

fn run(binary: &Path) -> String {
    let output = Command::new(binary).output().expect("run linked program");
    assert!(output.status.success(), "{} failed", binary.display());
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What one `icf link -v` said about the cache.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Said {
    /// Runs of keys read, of those looked up.
    read: u64,
    runs: u64,
    /// Rewritten files linked from the cache, and written to it.
    reused: u64,
    stored: u64,
}

/// `icf link --strict -v (--cache-dir CACHE | --no-cache) [extra] -- LINK
/// -o OUTPUT`, which must succeed: what it said.
fn icf_link(cache: Option<&Path>, extra: &[&str], link: &[String], output: &Path) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_icf"));
    command.args(["link", "--strict", "-v"]);
    match cache {
        Some(dir) => command.arg("--cache-dir").arg(dir),
        None => command.arg("--no-cache"),
    };
    let result = command
        .args(extra)
        .arg("--")
        .args(link)
        .arg("-o")
        .arg(output)
        .output()
        .expect("run icf link");
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    assert!(result.status.success(), "{stderr}");
    stderr
}

fn link(cache: Option<&Path>, link: &[String], output: &Path) -> Said {
    let stderr = icf_link(cache, &[], link, output);
    let lines: Vec<Vec<&str>> = stderr
        .lines()
        .filter(|l| l.starts_with("icf: cache: "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let [keys, files] = lines.as_slice() else {
        assert!(cache.is_none(), "no cache lines in {stderr}");
        return Said::default();
    };
    let number = |words: &[&str], at: usize| words[at].parse::<u64>().expect("a count");
    Said {
        read: number(keys, 2),
        runs: number(keys, 4),
        reused: number(files, 2),
        stored: number(files, 9),
    }
}

/// Links `inputs` plainly, uncached and through `cache`, runs all three,
/// and requires the cached binary to be the uncached one byte for byte.
/// Returns what the cached link said about the cache.
fn check(dir: &Path, cache: &Path, inputs: &[String], step: &str) -> Said {
    let mut command = vec!["gcc".to_string()];
    command.extend(inputs.iter().cloned());
    let plain = dir.join(format!("{step}.plain"));
    let status = Command::new("gcc")
        .args(inputs)
        .arg("-o")
        .arg(&plain)
        .status()
        .expect("run gcc");
    assert!(status.success());
    let uncached = dir.join(format!("{step}.uncached"));
    let cached = dir.join(format!("{step}.cached"));
    link(None, &command, &uncached);
    let said = link(Some(cache), &command, &cached);
    let same = std::fs::read(&cached).expect("read the cached link's binary")
        == std::fs::read(&uncached).expect("read the uncached link's binary");
    assert!(same, "{step}: the cache changed the binary");
    assert_eq!(run(&cached), run(&plain), "{step}");
    said
}

/// The cache's entries and stored files.
fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(cache)
        .expect("list the cache")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "entry" || e == "file"))
        .collect();
    entries.sort();
    entries
}

#[test]
fn cached_keys_give_the_uncached_binary_in_every_state_of_the_cache() {
    let dir = scratch("states");
    let cache = dir.join("cache");
    let a = compile(&dir, "a", A, &[]);
    let b = compile(&dir, "b", B, &[]);
    let main = compile(&dir, "main", MAIN, &[]);
    let inputs = vec![main.clone(), a.clone(), b.clone()];

    // Empty: every run is lifted and written, every rewritten file stored.
    // Full: every run is read, every rewritten file linked from the cache.
    let cold = check(&dir, &cache, &inputs, "cold");
    assert!(cold.runs > 0 && cold.stored > 0);
    assert_eq!((cold.read, cold.reused), (0, 0));
    // Per object: its keys; per rewritten file: the file and its checksum.
    assert_eq!(entries(&cache).len() as u64, cold.runs + 2 * cold.stored);
    let full = Said {
        read: cold.runs,
        runs: cold.runs,
        reused: cold.stored,
        stored: 0,
    };
    assert_eq!(check(&dir, &cache, &inputs, "warm"), full);

    // Damaged: every entry and stored file with one byte flipped is a
    // miss, written again.
    for entry in entries(&cache) {
        let mut bytes = std::fs::read(&entry).expect("read entry");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(&entry, bytes).expect("damage entry");
    }
    assert_eq!(check(&dir, &cache, &inputs, "damaged"), cold);
    assert_eq!(check(&dir, &cache, &inputs, "repaired"), full);

    // b.o's sum_b changes, and c.o comes in with a strong g that
    // overrides a.o's weak one. main.o keeps its entry (what it calls
    // stays where it was); a.o's g and b.o's bytes changed: lifted again.
    let b = compile(&dir, "b", B, &["-DVARIANT"]);
    let c = compile(&dir, "c", C, &[]);
    let changed = vec![main.clone(), a.clone(), b.clone(), c];
    let said = check(&dir, &cache, &changed, "changed");
    assert_eq!((said.read, said.runs), (1, 4));
    let warm = check(&dir, &cache, &changed, "changed-warm");
    assert_eq!((warm.read, warm.stored), (warm.runs, 0));

    // --gc-sections keeps other pieces: whatever is read must still match.
    let mut collected = changed.clone();
    collected.push("-Wl,--gc-sections".into());
    check(&dir, &cache, &collected, "gc-sections");
    let warm = check(&dir, &cache, &collected, "gc-sections-warm");
    assert_eq!((warm.read, warm.stored), (warm.runs, 0));
}

/// A function with a shape of its own is stored sketched, not lifted
/// (`icf::analyse::entry`): a later link that brings in its twin must lift
/// it from the stored sketch and fold the two, as an uncached link does.
#[test]
fn a_function_stored_alone_folds_once_its_twin_comes_in() {
    let dir = scratch("twin");
    let cache = dir.join("cache");
    let body = "{ int s = 0; for (int i = 0; i < n; i++) s += p[i] * 7 - i; return s; }";
    let x = compile(
        &dir,
        "x",
        &format!("int solo(const int *p, int n) {body}\n"),
        &[],
    );
    let y = compile(
        &dir,
        "y",
        &format!("int twin(const int *p, int n) {body}\n"),
        &[],
    );
    let main_alone = compile(
        &dir,
        "main1",
        "#include <stdio.h>\nint solo(const int *, int);\nint main(void) { int v[] = {1, 2, 3}; printf(\"%d\\n\", solo(v, 3)); return 0; }\n",
        &[],
    );
    let main_both = compile(
        &dir,
        "main2",
        "#include <stdio.h>\nint solo(const int *, int); int twin(const int *, int);\nint main(void) { int v[] = {1, 2, 3}; printf(\"%d %d\\n\", solo(v, 3), twin(v, 2)); return 0; }\n",
        &[],
    );
    // Alone: x.o's run is stored with `solo` sketched.
    check(&dir, &cache, &[main_alone, x.clone()], "alone");
    // With its twin: x.o's run is read back, and `solo` lifted and folded.
    let said = check(&dir, &cache, &[main_both, x, y], "twins");
    assert_eq!(
        (said.read, said.runs),
        (1, 3),
        "x.o's keys come from the cache"
    );
    let folded = dir.join("twins.cached");
    let nm = Command::new("nm").arg(&folded).output().expect("run nm");
    let symbols = String::from_utf8_lossy(&nm.stdout);
    let address = |name: &str| {
        symbols
            .lines()
            .find(|line| line.ends_with(&format!(" {name}")))
            .and_then(|line| line.split_whitespace().next())
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no {name} in {symbols}"))
    };
    assert_eq!(address("solo"), address("twin"), "solo and twin fold");
}

#[test]
fn the_cache_keeps_within_its_size() {
    let dir = scratch("size");
    let cache = dir.join("cache");
    let main = compile(&dir, "main", MAIN, &[]);
    let a = compile(&dir, "a", A, &[]);
    let b = compile(&dir, "b", B, &[]);
    let command = ["gcc".to_string(), main, a, b];
    let total = |cache: &Path| -> u64 {
        entries(cache)
            .iter()
            .map(|e| std::fs::metadata(e).expect("stat").len())
            .sum()
    };
    // Unbounded, one link stores its keys and rewritten files.
    link(Some(&cache), &command, &dir.join("app"));
    let one_link = total(&cache);
    assert!(one_link > 0);
    // With a limit under that, what a link stores is evicted again,
    // rewritten files included, and the link still folds and runs.
    let _ = std::fs::remove_dir_all(&cache);
    let output = Command::new(env!("CARGO_BIN_EXE_icf"))
        .args(["link", "--strict", "--cache-dir"])
        .arg(&cache)
        .arg("--")
        .args(&command)
        .arg("-o")
        .arg(dir.join("small"))
        .env("ICF_CACHE_SIZE", (one_link / 2).to_string())
        .output()
        .expect("run icf link");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        total(&cache) <= one_link / 2,
        "{} of {one_link}",
        total(&cache)
    );
    assert_eq!(run(&dir.join("small")), run(&dir.join("app")));
}

#[test]
fn a_killed_links_workspace_is_removed_a_day_later() {
    let dir = scratch("abandoned");
    let cache = dir.join("cache");
    let main = compile(&dir, "main", MAIN, &[]);
    let a = compile(&dir, "a", A, &[]);
    let b = compile(&dir, "b", B, &[]);
    let old = cache.join("links/icf-link-1-2");
    let recent = cache.join("links/icf-link-3-4");
    for workspace in [&old, &recent] {
        std::fs::create_dir_all(workspace).expect("make a workspace");
        std::fs::write(workspace.join("main.o"), b"left behind").expect("write");
    }
    let two_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(48 * 3600);
    std::fs::File::open(&old)
        .and_then(|f| f.set_modified(two_days_ago))
        .expect("date the old workspace");
    link(
        Some(&cache),
        &["gcc".to_string(), main, a, b],
        &dir.join("app"),
    );
    assert!(!old.exists());
    assert!(recent.exists());
}

#[test]
fn concurrent_links_share_one_cache() {
    let dir = scratch("concurrent");
    let cache = dir.join("cache");
    let a = compile(&dir, "a", A, &[]);
    let b = compile(&dir, "b", B, &[]);
    let main = compile(&dir, "main", MAIN, &[]);
    let command = vec!["gcc".to_string(), main, a, b];
    let reference = dir.join("reference");
    link(None, &command, &reference);
    let expected = std::fs::read(&reference).expect("read the reference");
    std::thread::scope(|scope| {
        for i in 0..6 {
            let (dir, cache, command, expected) = (&dir, &cache, &command, &expected);
            scope.spawn(move || {
                for round in 0..3 {
                    let output = dir.join(format!("out-{i}-{round}"));
                    link(Some(cache), command, &output);
                    let same = &std::fs::read(&output).expect("read output") == expected;
                    assert!(same, "{} differs from the uncached link", output.display());
                }
            });
        }
    });
    // No temporary file is left, and every link's workspace is gone.
    let leftovers: Vec<_> = std::fs::read_dir(&cache)
        .expect("list the cache")
        .map(|e| e.expect("an entry").file_name())
        .filter(|n| {
            let n = n.to_string_lossy();
            !(n.ends_with(".entry") || n.ends_with(".file") || n == "links")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let workspaces = std::fs::read_dir(cache.join("links"))
        .expect("list the workspaces")
        .count();
    assert_eq!(workspaces, 0);
}

/// [`compile`] run in `dir` on `NAME.c`, so that the object names its
/// source by that name alone, wherever `dir` is.
fn compile_by_name(dir: &Path, name: &str, source: &str, defines: &[&str]) -> PathBuf {
    std::fs::write(dir.join(format!("{name}.c")), source).expect("write source");
    let status = Command::new("gcc")
        .current_dir(dir)
        .args(["-O2", "-ffunction-sections", "-fdata-sections", "-c"])
        .args(defines)
        .arg(format!("{name}.c"))
        .arg("-o")
        .arg(format!("{name}.o"))
        .status()
        .expect("run gcc");
    assert!(status.success(), "gcc {name}.c failed");
    dir.join(format!("{name}.o"))
}

/// [`icf_link`] with `cache`: whether it replayed a kept result, and the
/// binary's bytes.
fn relink(cache: &Path, extra: &[&str], link: &[String], output: &Path) -> (bool, Vec<u8>) {
    let stderr = icf_link(Some(cache), extra, link, output);
    let replayed = stderr.contains("icf: cache: the inputs are unchanged");
    let folded = stderr.contains("icf: time: load");
    assert!(replayed != folded, "replayed or folded, not both: {stderr}");
    (replayed, std::fs::read(output).expect("read the binary"))
}

/// Waits until files written now are past the window in which `icf link`
/// does not trust a file's times.
fn age_past_the_racy_window() {
    std::thread::sleep(std::time::Duration::from_millis(2500));
}

#[test]
fn a_relink_of_unchanged_inputs_replays_the_kept_result_and_any_change_misses() {
    let dir = scratch("memo");
    let cache = dir.join("cache");
    let a = compile(&dir, "a", A, &[]);
    let b = compile_by_name(&dir, "b", B, &[]);
    let main = compile(&dir, "main", MAIN, &[]);
    let command = vec!["gcc".to_string(), main, a, b.display().to_string()];
    let output = dir.join("app");

    // Inputs just written: their times are not trusted, nothing is kept.
    let (replayed, first) = relink(&cache, &[], &command, &output);
    assert!(!replayed);
    assert!(
        !relink(&cache, &[], &command, &output).0,
        "kept a racy link"
    );

    // Older: the first link keeps its result, the next replays it, and
    // writes the same binary.
    age_past_the_racy_window();
    assert!(!relink(&cache, &[], &command, &output).0);
    let (replayed, again) = relink(&cache, &[], &command, &output);
    assert!(replayed, "unchanged inputs were folded again");
    assert_eq!(again, first);
    let expected = run(&output);

    // A report needs the analysis: no replay.
    let report = dir.join("report.json");
    let (replayed, _) = relink(
        &cache,
        &["--report", report.to_str().expect("utf-8")],
        &command,
        &output,
    );
    assert!(!replayed);

    // b.o rewritten in place, its size and modification time as they
    // were: its status-change time tells.
    let bytes = std::fs::read(&b).expect("read b.o");
    let elsewhere = dir.join("variant");
    std::fs::create_dir_all(&elsewhere).expect("create a directory");
    let variant = compile_by_name(&elsewhere, "b", B, &["-DVARIANT"]);
    let variant = std::fs::read(&variant).expect("read the variant");
    assert_eq!(variant.len(), bytes.len(), "the variant's size differs");
    rewrite_keeping_its_time(&b, &variant);
    age_past_the_racy_window();
    let (replayed, changed) = relink(&cache, &[], &command, &output);
    assert!(!replayed, "a changed input was not seen");
    assert_ne!(changed, first);
    assert_ne!(run(&output), expected, "sum_b no longer folds with sum_a");
    let plain = plain_link(&dir, &command);
    assert_eq!(run(&output), run(&plain));

    // A stored rewritten file damaged: not handed out, the link folds.
    assert!(relink(&cache, &[], &command, &output).0);
    for stored in entries(&cache)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "file"))
    {
        let mut bytes = std::fs::read(stored).expect("read a stored file");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(stored, bytes).expect("damage a stored file");
    }
    let (replayed, repaired) = relink(&cache, &[], &command, &output);
    assert!(!replayed, "a damaged file was replayed");
    assert_eq!(repaired, changed);
    assert_eq!(run(&output), run(&plain));
}

/// Writes `bytes` over `path` in place and gives it back its modification
/// time: only its status-change time tells it changed.
fn rewrite_keeping_its_time(path: &Path, bytes: &[u8]) {
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("the file's time");
    std::fs::write(path, bytes).expect("rewrite the file");
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(modified))
        .expect("restore the file's time");
}

/// `command` (`gcc INPUTS...`) linked plainly into `DIR/plain`.
fn plain_link(dir: &Path, command: &[String]) -> PathBuf {
    let plain = dir.join("plain");
    let status = Command::new("gcc")
        .args(&command[1..])
        .arg("-o")
        .arg(&plain)
        .status()
        .expect("run gcc");
    assert!(status.success());
    plain
}

/// What `icf link -v` said of hashing: (objects hashed, objects).
fn objects_hashed(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains(" objects hashed"))
        .unwrap_or_else(|| panic!("no hashing line in {stderr}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|&w| w == "objects")
        .expect("the word objects");
    let number = |word: &str| word.parse::<u64>().expect("a count");
    (number(words[at - 3]), number(words[at - 1]))
}

/// `ar rcsD ARCHIVE MEMBERS...` run in `dir`.
fn archive(dir: &Path, name: &str, members: &[&Path]) -> PathBuf {
    let status = Command::new("ar")
        .current_dir(dir)
        .arg("rcsD")
        .arg(name)
        .args(members)
        .status()
        .expect("run ar");
    assert!(status.success(), "ar {name} failed");
    dir.join(name)
}

#[test]
fn a_relink_hashes_only_the_objects_of_files_that_changed() {
    let dir = scratch("stamps");
    let cache = dir.join("cache");
    let a = compile_by_name(&dir, "a", A, &[]);
    let b = compile_by_name(&dir, "b", B, &[]);
    let main = compile_by_name(&dir, "main", MAIN, &[]);
    let library = archive(&dir, "libab.a", &[&a, &b]);
    let command = vec![
        "gcc".to_string(),
        main.display().to_string(),
        library.display().to_string(),
    ];
    let output = dir.join("app");
    // A report needs the analysis: every link below analyses.
    let report = dir.join("report.json");
    let extra = ["--report", report.to_str().expect("utf-8")];
    let link = || icf_link(Some(&cache), &extra, &command, &output);

    // Files just written are not trusted by their stamps: all hashed.
    assert_eq!(objects_hashed(&link()), (3, 3));
    assert_eq!(objects_hashed(&link()), (3, 3), "kept a racy file's hashes");
    age_past_the_racy_window();
    assert_eq!(objects_hashed(&link()), (3, 3));
    assert_eq!(
        objects_hashed(&link()),
        (0, 3),
        "unchanged files hashed again"
    );
    let before = run(&output);

    // The archive rewritten in place with b.o's variant, its size and
    // modification time as they were: its status-change time tells, and
    // both its members are hashed again.
    let elsewhere = dir.join("variant");
    std::fs::create_dir_all(&elsewhere).expect("create a directory");
    std::fs::copy(&a, elsewhere.join("a.o")).expect("copy a.o");
    let variant_b = compile_by_name(&elsewhere, "b", B, &["-DVARIANT"]);
    let variant = archive(&elsewhere, "libab.a", &[&elsewhere.join("a.o"), &variant_b]);
    let variant = std::fs::read(&variant).expect("read the variant archive");
    let original = std::fs::read(&library).expect("read libab.a");
    assert_eq!(variant.len(), original.len(), "the variant's size differs");
    assert_ne!(variant, original);
    rewrite_keeping_its_time(&library, &variant);
    age_past_the_racy_window();
    assert_eq!(objects_hashed(&link()), (2, 3));
    let plain = plain_link(&dir, &command);
    assert_eq!(run(&output), run(&plain), "a stale hash folded sum_b");
    assert_ne!(run(&output), before);
}

/// Two objects of one file name, `u.o`, in two directories.
const U1: &str = "int u(void) { return 1; }\n";
const U2: &str = "int w(void) { return 2; }\n";
const MAIN_UW: &str = r#"
#include <stdio.h>
int u(void); int w(void);
int main(void) { printf("%d %d\n", u(), w()); return 0; }
"#;

/// Objects are named in keys by file name, not path: the same objects
/// linked from another directory read every key, and two files of one
/// name, in either order, still name two objects (the binary is the
/// uncached link's each time, and runs as the plain link does).
#[test]
fn the_same_objects_linked_from_another_directory_read_every_key() {
    let dir = scratch("moved");
    let cache = dir.join("cache");
    let first = dir.join("first");
    let second = dir.join("second");
    for tree in [&first, &second] {
        std::fs::create_dir_all(tree).expect("create a build tree");
    }
    let mut inputs = Vec::new();
    for (name, source) in [("main", MAIN), ("a", A), ("b", B)] {
        let object = compile_by_name(&first, name, source, &[]);
        let moved = second.join(format!("{name}.o"));
        std::fs::copy(&object, &moved).expect("copy an object");
        inputs.push((object, moved));
    }
    let (from_first, from_second): (Vec<String>, Vec<String>) = inputs
        .iter()
        .map(|(a, b)| (a.display().to_string(), b.display().to_string()))
        .unzip();
    let cold = check(&dir, &cache, &from_first, "first-tree");
    assert_eq!(cold.read, 0);
    // b.o calls a.o's weak `g`, main.o calls into both: every entry names
    // another object, and every one is read.
    let moved = check(&dir, &cache, &from_second, "second-tree");
    assert_eq!((moved.read, moved.runs), (cold.runs, cold.runs));

    let x = dir.join("x");
    let y = dir.join("y");
    for tree in [&x, &y] {
        std::fs::create_dir_all(tree).expect("create a directory");
    }
    let u1 = compile_by_name(&x, "u", U1, &[]).display().to_string();
    let u2 = compile_by_name(&y, "u", U2, &[]).display().to_string();
    let main = compile_by_name(&dir, "main_uw", MAIN_UW, &[])
        .display()
        .to_string();
    let said = check(
        &dir,
        &cache,
        &[main.clone(), u1.clone(), u2.clone()],
        "one-name",
    );
    assert_eq!(said.read, 0);
    let swapped = check(&dir, &cache, &[main, u2, u1], "one-name-swapped");
    assert!(swapped.read < swapped.runs, "{swapped:?}");
}
