//! `icf report` and `icf explain` as a user runs them: the text report of a
//! fixture (a snapshot), members grouped by name with their objects on
//! request, the same JSON whatever the thread count, lld's
//! `--print-icf-sections` format, and explanations that name the difference.
//! Regenerate snapshots with `UPDATE_EXPECT=1 cargo test -p icf-cli --test report`.

use expect_test::expect_file;
use icf_fixtures::{Build, Compiler};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn icf(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_icf"));
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("run icf");
    assert!(
        output.status.success(),
        "icf {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn fixture(source: &str) -> PathBuf {
    icf_fixtures::object(Path::new(source), &Build::new(Compiler::Gcc))
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The report without the lines that vary from run to run (timings, paths):
/// each object's path becomes `<its source's stem>`.
fn stable_text(text: &str, objects: &[(&str, &Path)]) -> String {
    text.lines()
        .filter(|line| !line.starts_with("time:"))
        .map(|line| {
            objects.iter().fold(line.to_string(), |line, (stem, path)| {
                line.replace(&path.display().to_string(), &format!("<{stem}>"))
            })
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn text_report_of_identical_functions() {
    let object = fixture("c/identical.c");
    let path = object.to_str().expect("utf-8 path");
    let objects = [("identical", object.as_path())];
    let safe = stdout(&icf(&["report", path], &[]));
    expect_file!["snapshots/identical-safe.txt"].assert_eq(&stable_text(&safe, &objects));
    let all = stdout(&icf(&["report", "--mode", "all", path], &[]));
    expect_file!["snapshots/identical-all.txt"].assert_eq(&stable_text(&all, &objects));
}

#[test]
fn text_report_groups_members_by_name_and_lists_their_objects_on_request() {
    // Each object defines its own static `checksum`; shared_name_a.c adds
    // `checksum_twin`, the same code, and shared_name_c.c takes its copy's
    // address: a class of four members under two names.
    let stems = ["shared_name_a", "shared_name_b", "shared_name_c"];
    let built: Vec<PathBuf> = stems
        .iter()
        .map(|stem| fixture(&format!("report/{stem}.c")))
        .collect();
    let objects: Vec<(&str, &Path)> = stems
        .iter()
        .copied()
        .zip(built.iter().map(PathBuf::as_path))
        .collect();
    let paths: Vec<&str> = built
        .iter()
        .map(|path| path.to_str().expect("utf-8 path"))
        .collect();
    let report = |extra: &[&str]| {
        let args: Vec<&str> = ["report"]
            .iter()
            .chain(extra)
            .chain(&paths)
            .copied()
            .collect();
        stable_text(&stdout(&icf(&args, &[])), &objects)
    };

    let by_name = report(&[]);
    expect_file!["snapshots/shared-name-safe.txt"].assert_eq(&by_name);
    let group = group_lines(&by_name, "checksum");
    assert!(
        group[0]
            .ends_with("       4  3 x checksum (code) [thunk: address taken in checksum_address]"),
        "the three copies of checksum are one line, the thunk among them said:\n{by_name}"
    );
    assert_eq!(
        group[1..],
        ["                              checksum_twin"],
        "{by_name}"
    );

    let with_objects = report(&["--objects"]);
    expect_file!["snapshots/shared-name-objects.txt"].assert_eq(&with_objects);
    let group = group_lines(&with_objects, "checksum");
    assert_eq!(group[0], group_lines(&by_name, "checksum")[0]);
    assert_eq!(
        group[1..],
        [
            "                                <shared_name_a>",
            "                                <shared_name_b>",
            "                                <shared_name_c> (thunk)",
            "                              checksum_twin",
            "                                <shared_name_a> (kept)",
        ],
        "each name's objects under it, indented:\n{with_objects}"
    );
}

/// The lines of the text report's group whose first line names `name`.
fn group_lines<'t>(text: &'t str, name: &str) -> Vec<&'t str> {
    let mut lines = text.lines().skip_while(|line| {
        !(line.contains(&format!(" x {name} (")) || line.contains(&format!("  {name} (")))
    });
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no group named {name}:\n{text}"));
    std::iter::once(first)
        .chain(lines.take_while(|line| line.starts_with(&" ".repeat(26))))
        .collect()
}

#[test]
fn json_is_the_same_whatever_the_thread_count() {
    let objects: Vec<PathBuf> = [
        "c/identical.c",
        "c/fold_cases.c",
        "cpp/templates.cpp",
        "cpp/exceptions.cpp",
    ]
    .iter()
    .map(|s| fixture(s))
    .collect();
    let mut args = vec!["report", "--format", "json", "--mode", "all"];
    args.extend(objects.iter().map(|p| p.to_str().expect("utf-8 path")));
    let strip = |output: Output| -> serde_json::Value {
        let mut value: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("valid JSON");
        value
            .as_object_mut()
            .expect("an object")
            .remove("timings_ms");
        value
    };
    let one = strip(icf(&args, &[("RAYON_NUM_THREADS", "1")]));
    let two = strip(icf(&args, &[("RAYON_NUM_THREADS", "2")]));
    assert_eq!(one["version"], 1);
    assert!(
        one["totals"]["classes"].as_u64().expect("classes") >= 5,
        "{one}"
    );
    assert_eq!(one, two);
}

#[test]
fn print_icf_sections_uses_llds_format() {
    let object = fixture("c/fold_cases.c");
    let path = object.to_str().expect("utf-8 path");
    let text = stdout(&icf(
        &["report", "--mode", "all", "--print-icf-sections", path],
        &[],
    ));
    let display = object.display().to_string();
    assert!(
        text.contains(&format!("selected section {display}:(.text.leaf_a)")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "  removing identical section {display}:(.text.leaf_b)"
        )),
        "{text}"
    );
    assert!(
        text.lines().all(|l| l.starts_with("selected section ")
            || l.starts_with("  removing identical section "))
    );
}

#[test]
fn explain_names_the_first_difference_and_follows_callees() {
    let object = fixture("c/fold_cases.c");
    let path = object.to_str().expect("utf-8 path");
    let text = stdout(&icf(&["explain", "caller_a", "caller_c", path], &[]));
    assert!(
        text.starts_with("caller_a and caller_c differ: block 0 instruction"),
        "{text}"
    );
    assert!(
        text.contains("call leaf_a") && text.contains("call leaf_c"),
        "{text}"
    );
    assert!(
        text.contains("because leaf_a and leaf_c are not identical"),
        "{text}"
    );
    let same = stdout(&icf(
        &["explain", "caller_a@fold_cases", "caller_b", path],
        &[],
    ));
    assert_eq!(
        same.trim(),
        "caller_a and caller_b are identical: they fold (a class of 2)"
    );
}

#[test]
fn explain_an_unknown_function_is_an_error() {
    let object = fixture("c/fold_cases.c");
    let output = Command::new(env!("CARGO_BIN_EXE_icf"))
        .args([
            "explain",
            "caller_a",
            "no_such_function",
            object.to_str().expect("utf-8 path"),
        ])
        .output()
        .expect("run icf");
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("no function named 'no_such_function'")
    );
}

#[test]
fn markdown_against_a_baseline_and_the_size_gate() {
    let object = fixture("c/identical.c");
    let path = object.to_str().expect("utf-8 path");
    let dir = icf_fixtures::source_dir().join("../target/cli-report");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let (safe, all) = (dir.join("safe.json"), dir.join("all.json"));
    std::fs::write(
        &safe,
        icf(&["report", "--format", "json", path], &[]).stdout,
    )
    .expect("write");
    std::fs::write(
        &all,
        icf(&["report", "--format", "json", "--mode", "all", path], &[]).stdout,
    )
    .expect("write");
    let (safe, all) = (safe.to_str().expect("utf-8"), all.to_str().expect("utf-8"));
    let markdown = stdout(&icf(
        &["report", "--format", "markdown", "--baseline", safe, all],
        &[],
    ));
    assert!(markdown.starts_with("## icf size report\n"), "{markdown}");
    assert!(
        markdown.contains("| | before | after | saved | vs baseline |"),
        "{markdown}"
    );
    // Mode all folds sub1 too: 5 bytes fewer than safe mode.
    assert!(
        markdown.contains("| code | 780 | 582 | -198 (-25.38%) | -5 (-0.85%) |"),
        "{markdown}"
    );
    assert!(markdown.contains("| 54 | 54 | 2 | `fact0` |"), "{markdown}");
    // The gate: safe mode is 5 bytes larger than the all-mode baseline.
    let over = Command::new(env!("CARGO_BIN_EXE_icf"))
        .args(["report", "--baseline", all, "--fail-if-larger", "4", safe])
        .output()
        .expect("run icf");
    assert_eq!(over.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&over.stderr).contains("grew by 5 bytes"));
    icf(
        &["report", "--baseline", all, "--fail-if-larger", "5", safe],
        &[],
    );
}

#[test]
fn a_thunk_counts_its_landing_pad_and_is_made_only_where_it_is_smaller() {
    // Under IBT a thunk is `endbr64; jmp` (9 bytes): `tiny_b` (7 bytes,
    // address taken like its twin) keeps its body rather than grow.
    let build = Build {
        function_sections: true,
        extra_flags: vec!["-fcf-protection=full".to_string()],
        ..Build::new(Compiler::Gcc)
    };
    let object = icf_fixtures::object(Path::new("c/tiny_twins.c"), &build);
    let path = object.to_str().expect("utf-8 path");
    let report: serde_json::Value =
        serde_json::from_slice(&icf(&["report", "--format", "json", path], &[]).stdout)
            .expect("a JSON report");
    let members: Vec<&serde_json::Value> = report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|group| group["members"].as_array().expect("members"))
        .collect();
    let tiny_b = members
        .iter()
        .find(|member| member["name"] == "tiny_b")
        .unwrap_or_else(|| panic!("tiny_b is in no group: {report:#}"));
    assert_eq!(tiny_b["action"], "keep", "{report:#}");
    assert!(
        tiny_b["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("a thunk would not be smaller")),
        "{report:#}"
    );
}
