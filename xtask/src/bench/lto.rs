//! The LTO corpus (issue M3-5): python-rapidjson 1.25, a C++ extension
//! module (RapidJSON's templates behind CPython's API) fetched from PyPI as
//! its source distribution, its `rapidjson.cpp` compiled once by clang++-19
//! with `-O2 -fPIC -flto=thin`, so the object holds bitcode and code is
//! made only in the link. Each round links the shared library four ways
//! with lld: plainly, with `--icf=all` (the peer, which folds after code
//! generation), and through `icf link --mode safe|all`, which links with
//! `--emit-relocs` and folds the image after the link; fastest wall time
//! and largest peak RSS count.
//!
//! Every output is then measured (`.text`, stripped size), proved by `icf
//! verify` against the plain link, and run: the package's own test suite
//! (`pytest tests`, Debian's python3 with python3-pytest and python3-tz)
//! imports it, and must pass and fail exactly as with the plain link.
//!
//! Targets: the whole `icf link` within [`TIME_LIMIT`] of the plain LTO
//! link, and its `.text` no larger than lld `--icf=all`'s in mode all (no
//! larger than the plain link's in mode safe).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use super::format::{mib, ms, thousands};
use super::measure::{stripped_size, timed};
use super::targets::Target;
use crate::peer;
use crate::process::{capture, display};

/// The source distribution, pinned by digest.
const PACKAGE: &str = "python-rapidjson 1.25";
const SDIST_URL: &str = "https://files.pythonhosted.org/packages/e1/45/\
                         7e2c05ef1c9357e22f1fc345fad41c24d50b9dfb6ac8104222987aef1f89/\
                         python_rapidjson-1.25.tar.gz";
const SDIST_SHA256: &str = "97c1de449552ec28ac5ae89350c2b53e4c5d21a9b4308d7a1630b1099e5db9fc";
const SOURCE_DIR: &str = "python_rapidjson-1.25";
/// Debian's interpreter: its headers (python3-dev) and pytest (python3-pytest)
/// come from apt, as the module must match both.
const PYTHON: &str = "/usr/bin/python3";
/// `icf link` on an LTO build may take this many times the plain LTO link.
const TIME_LIMIT: f64 = 1.3;
const COMPILE: &[&str] = &[
    "clang++-19",
    "-O2",
    "-fPIC",
    "-flto=thin",
    "-std=c++11",
    "-DPYTHON_RAPIDJSON_VERSION=\"1.25\"",
];
const LINK: &[&str] = &["clang++-19", "-shared", "-flto=thin", "-fuse-ld=lld"];

/// One way of linking the module, measured.
#[derive(Debug)]
pub(super) struct LtoLink {
    pub(super) label: &'static str,
    /// `icf link --mode M`, or none for the plain and peer links.
    mode: Option<&'static str>,
    walls: Vec<Duration>,
    rss_kib: u64,
    text: u64,
    stripped: u64,
    /// The test suite's summary line (`N passed, ...`).
    tests: String,
    /// `icf verify`'s summary, for icf's outputs.
    verified: Option<String>,
    /// Why the link, its proof or its tests failed.
    pub(super) failure: Option<String>,
}

impl LtoLink {
    fn best(&self) -> Option<Duration> {
        self.walls.iter().min().copied()
    }
}

#[derive(Debug)]
pub(super) struct LtoResult {
    pub(super) links: Vec<LtoLink>,
}

/// Fetches and compiles the corpus once, then links, measures and tests
/// it; `runs` rounds of the four links, round robin.
pub(super) fn measure(root: &Path, icf: &Path, runs: u32) -> Result<LtoResult> {
    let dir = root.join("lto");
    let source = prepare(&dir)?;
    let object = dir.join("rapidjson.o");
    let rss_file = dir.join("rss.txt");
    let out = dir.join("out");
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let variants: [(&'static str, Option<&'static str>, &[&str]); 4] = [
        ("lld", None, &[]),
        ("lld --icf=all", None, &["-Wl,--icf=all"]),
        ("icf link safe + lld", Some("safe"), &[]),
        ("icf link all + lld", Some("all"), &[]),
    ];
    let command = |index: usize| -> Command {
        let (_, mode, extra) = variants[index];
        let output = out.join(format!("rapidjson-{index}.so"));
        let mut command = match mode {
            Some(mode) => {
                let mut command = Command::new(icf);
                command.args(["link", "--strict", "--mode", mode, "--"]);
                command.args(LINK);
                command
            }
            None => {
                let mut command = Command::new(LINK[0]);
                command.args(&LINK[1..]);
                command
            }
        };
        command.args(extra).arg(&object).arg("-o").arg(output);
        command
    };
    let mut walls: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    let mut rss = vec![0u64; variants.len()];
    let mut failures: Vec<Option<String>> = vec![None; variants.len()];
    for round in 0..runs {
        for index in 0..variants.len() {
            if failures[index].is_some() {
                continue;
            }
            let command = command(index);
            eprintln!("    round {}: {}", round + 1, display(&command));
            match timed(&command, &rss_file) {
                Ok((wall, kib)) => {
                    walls[index].push(wall);
                    rss[index] = rss[index].max(kib);
                }
                Err(error) => failures[index] = Some(format!("{error:#}")),
            }
        }
    }
    let plain = out.join("rapidjson-0.so");
    let suffix = capture(Command::new(PYTHON).args([
        "-c",
        "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))",
    ]))?;
    let module_name = format!(
        "rapidjson{}",
        String::from_utf8_lossy(&suffix.stdout).trim()
    );
    // The plain link's run of the tests is what every other must match.
    let mut plain_tests: Option<String> = None;
    let mut links = Vec::new();
    for (index, (label, mode, _)) in variants.into_iter().enumerate() {
        let output = out.join(format!("rapidjson-{index}.so"));
        let mut link = LtoLink {
            label,
            mode,
            walls: std::mem::take(&mut walls[index]),
            rss_kib: rss[index],
            text: 0,
            stripped: 0,
            tests: String::new(),
            verified: None,
            failure: failures[index].take(),
        };
        if link.failure.is_none() {
            let checked = check(
                &source,
                icf,
                &plain,
                plain_tests.as_deref(),
                &output,
                mode,
                &out.join(format!("import-{index}")).join(&module_name),
                &mut link,
            );
            match checked {
                Ok(()) if index == 0 => plain_tests = Some(link.tests.clone()),
                Ok(()) => {}
                Err(error) => link.failure = Some(format!("{error:#}")),
            }
        }
        links.push(link);
    }
    Ok(LtoResult { links })
}

/// Measures, proves and tests one output against the plain link's (whose
/// own test run is `plain_tests`; `None` for the plain link itself, or
/// where it failed).
#[allow(clippy::too_many_arguments)]
fn check(
    source: &Path,
    icf: &Path,
    plain: &Path,
    plain_tests: Option<&str>,
    output: &Path,
    mode: Option<&str>,
    module: &Path,
    link: &mut LtoLink,
) -> Result<()> {
    link.text = peer::text_size(output)?;
    link.stripped = stripped_size(output, &output.with_extension("stripped"))?;
    link.tests = test_suite(source, output, module)?;
    // Where the plain link failed, the bench fails on that already.
    if let Some(expected) = plain_tests {
        ensure!(
            link.tests == expected,
            "the test suite says `{}`, with the plain link `{expected}`",
            link.tests
        );
    }
    if let Some(mode) = mode {
        let mut verify = Command::new(icf);
        verify
            .args(["verify", "--mode", mode])
            .arg(plain)
            .arg(output);
        let proof = capture(&mut verify)?;
        link.verified = Some(
            String::from_utf8_lossy(&proof.stdout)
                .lines()
                .last()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    Ok(())
}

/// Runs the package's own tests on the built library `built`, imported
/// as `module` (a path whose directory goes on `PYTHONPATH`): its summary
/// line (counts of passed, failed, skipped), which must not depend on the
/// link.
fn test_suite(source: &Path, built: &Path, module: &Path) -> Result<String> {
    let import_dir = module.parent().context("the module's directory")?;
    let _ = fs::remove_dir_all(import_dir);
    fs::create_dir_all(import_dir).with_context(|| format!("creating {}", import_dir.display()))?;
    fs::copy(built, module).with_context(|| format!("copying {}", built.display()))?;
    let mut pytest = Command::new(PYTHON);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .current_dir(source)
        .env("PYTHONPATH", import_dir)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = pytest
        .output()
        .with_context(|| format!("running `{}`", display(&pytest)))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout
        .lines()
        .rev()
        .find(|line| line.contains(" passed") || line.contains(" failed"))
        .with_context(|| {
            format!(
                "`{}` printed no summary:\n{stdout}{}",
                display(&pytest),
                String::from_utf8_lossy(&output.stderr)
            )
        })?;
    // The counts, without the time taken (`... in 2.51s`).
    let counts = summary
        .trim_matches(|c: char| c == '=' || c.is_whitespace())
        .rsplit_once(" in ")
        .map_or(summary, |(counts, _)| counts);
    Ok(counts.to_owned())
}

/// The source tree, fetched (digest checked) and compiled once: its
/// directory.
fn prepare(dir: &Path) -> Result<PathBuf> {
    let source = dir.join(SOURCE_DIR);
    let object = dir.join("rapidjson.o");
    if object.is_file() && source.join("tests").is_dir() {
        return Ok(source);
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let archive = dir.join(format!("{SOURCE_DIR}.tar.gz"));
    eprintln!("==> fetching {PACKAGE} from PyPI");
    capture(
        Command::new("curl")
            .args(["-sSfL", "--retry", "3", "-o"])
            .arg(&archive)
            .arg(SDIST_URL),
    )?;
    let digest = capture(Command::new("sha256sum").arg(&archive))?;
    let digest = String::from_utf8_lossy(&digest.stdout);
    if digest.split_whitespace().next() != Some(SDIST_SHA256) {
        bail!(
            "{}: sha256 {} is not the pinned {SDIST_SHA256}",
            archive.display(),
            digest.trim()
        );
    }
    let _ = fs::remove_dir_all(&source);
    capture(
        Command::new("tar")
            .arg("xzf")
            .arg(&archive)
            .arg("-C")
            .arg(dir),
    )?;
    let includes = capture(Command::new(format!("{PYTHON}-config")).arg("--includes"))?;
    let version = fs::read_to_string(source.join("rapidjson_exact_version.txt"))
        .context("reading rapidjson_exact_version.txt")?;
    let mut compile = Command::new(COMPILE[0]);
    compile
        .args(&COMPILE[1..])
        .arg(format!("-DRAPIDJSON_EXACT_VERSION=\"{}\"", version.trim()))
        .arg("-I")
        .arg(source.join("rapidjson/include"))
        .args(String::from_utf8_lossy(&includes.stdout).split_whitespace())
        .arg("-c")
        .arg(source.join("rapidjson.cpp"))
        .arg("-o")
        .arg(&object);
    eprintln!("==> compiling: {}", display(&compile));
    capture(&mut compile)?;
    Ok(source)
}

/// The section of results.md.
pub(super) fn write_table(md: &mut String, result: &LtoResult) {
    let _ = writeln!(
        md,
        "### lto\n\n{PACKAGE} from PyPI: `rapidjson.cpp` compiled by clang++-19 `-O2 -fPIC \
         -flto=thin`, the extension module linked by lld (`clang++-19 -shared -flto=thin`); \
         its own test suite (`pytest tests`) run on every output.\n"
    );
    let plain = result.links.first().and_then(LtoLink::best);
    let plain_text = result.links.first().map_or(0, |link| link.text);
    md.push_str(
        "| link | .text bytes | saved | stripped bytes | wall ms | ÷ plain | peak RSS | tests | icf verify |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for link in &result.links {
        if let Some(failure) = &link.failure {
            let _ = writeln!(md, "| {} | failed: {failure} | | | | | | | |", link.label);
            continue;
        }
        let wall = link.best().unwrap_or_default();
        let ratio = plain.map_or(String::new(), |plain| {
            format!("{:.2}", wall.as_secs_f64() / plain.as_secs_f64())
        });
        let saved = if plain_text > 0 {
            format!(
                "{:.2}%",
                100.0 * (plain_text as f64 - link.text as f64) / plain_text as f64
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            md,
            "| {} | {} | {saved} | {} | {} | {ratio} | {} | {} | {} |",
            link.label,
            thousands(link.text),
            thousands(link.stripped),
            ms(wall),
            mib(link.rss_kib * 1024),
            link.tests,
            link.verified.as_deref().unwrap_or(""),
        );
    }
    md.push('\n');
}

/// results.json's `lto` entry.
pub(super) fn to_json(result: &LtoResult) -> Value {
    json!({
        "package": PACKAGE,
        "links": result.links.iter().map(|link| json!({
            "link": link.label,
            "text_bytes": link.text,
            "stripped_bytes": link.stripped,
            "wall_ms": link.best().map(|wall| wall.as_millis() as u64),
            "peak_rss_kib": link.rss_kib,
            "tests": link.tests,
            "verified": link.verified,
            "failure": link.failure,
        })).collect::<Vec<_>>(),
    })
}

/// The PASS/FAIL lines: time against the plain LTO link, `.text` against
/// the peer's (mode all) or the plain link's (mode safe).
pub(super) fn targets(result: &LtoResult) -> Vec<Target> {
    let by_label = |label: &str| {
        result
            .links
            .iter()
            .find(|link| link.label == label && link.failure.is_none())
    };
    let (Some(plain), Some(peer)) = (by_label("lld"), by_label("lld --icf=all")) else {
        return Vec::new();
    };
    let mut targets = Vec::new();
    for link in result.links.iter().filter(|link| link.mode.is_some()) {
        let (Some(wall), Some(plain_wall)) = (link.best(), plain.best()) else {
            continue;
        };
        if link.failure.is_some() {
            continue;
        }
        let ratio = wall.as_secs_f64() / plain_wall.as_secs_f64();
        targets.push(Target {
            corpus: "lto".into(),
            name: "icf link time vs the plain LTO link",
            pass: ratio <= TIME_LIMIT,
            detail: format!(
                "{} {} vs plain lld {}: {ratio:.2}x (limit {TIME_LIMIT}x)",
                link.label,
                ms(wall),
                ms(plain_wall)
            ),
        });
        let (against, limit) = if link.mode == Some("all") {
            ("lld --icf=all", peer.text)
        } else {
            ("the plain link", plain.text)
        };
        targets.push(Target {
            corpus: "lto".into(),
            name: ".text no larger than the peer's",
            pass: link.text <= limit,
            detail: format!(
                "{}: .text {} vs {against} {}",
                link.label,
                thousands(link.text),
                thousands(limit)
            ),
        });
    }
    targets
}
