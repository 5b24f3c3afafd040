//! The I/O floor of one corpus: reading every input of its link once, then
//! writing fresh copies of the files a cold `icf link` rewrote (the copies
//! it hands the linker). No tool that rewrites a link's inputs in front of
//! an unmodified linker does less I/O; see the module header of `bench`.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::measure::write_back;
use super::set_aside::SetAside;
use crate::corpus::Corpus;

/// Every input is read through one buffer of this size, reused.
const READ_BUFFER_BYTES: usize = 1 << 20;
/// How icf's cache names a stored file (`icf_cache::Store::put_file`): a
/// rewritten file the linker read, hard-linked in, so its bytes.
const STORED_FILE_EXTENSION: &str = "file";

/// What the floor read and wrote, and how long each round took.
#[derive(Debug, Clone)]
pub(super) struct IoFloor {
    /// The link whose rewritten files are written (`icf safe + lld`).
    pub(super) rewritten_by: String,
    pub(super) read_files: usize,
    pub(super) read_bytes: u64,
    pub(super) written_files: usize,
    pub(super) written_bytes: u64,
    /// Every round, in order.
    pub(super) rounds: Vec<FloorRound>,
}

/// One round: every input read, then every rewritten file copied.
#[derive(Debug, Clone, Copy)]
pub(super) struct FloorRound {
    pub(super) read: Duration,
    pub(super) write: Duration,
}

impl FloorRound {
    pub(super) fn total(&self) -> Duration {
        self.read + self.write
    }
}

impl IoFloor {
    /// The fastest round, read plus write (as the links count their fastest).
    pub(super) fn best(&self) -> Option<FloorRound> {
        self.rounds.iter().copied().min_by_key(FloorRound::total)
    }
}

/// The floor being measured, a round at a time (one per round of the
/// timed links, after them): what it reads, the cache whose stored files
/// it copies, where it writes them, and its rounds so far.
#[derive(Debug)]
pub(super) struct FloorRounds {
    inputs: Vec<PathBuf>,
    cache: PathBuf,
    scratch: PathBuf,
    buffer: Vec<u8>,
    floor: IoFloor,
}

impl FloorRounds {
    /// The floor of `corpus`'s link, writing copies of the files stored in
    /// `cache` (the cache of the cold link `rewritten_by`) to `scratch`.
    pub(super) fn new(
        corpus: &Corpus,
        cache: &Path,
        rewritten_by: &str,
        scratch: &Path,
    ) -> FloorRounds {
        let inputs = link_inputs(corpus);
        FloorRounds {
            floor: IoFloor {
                rewritten_by: rewritten_by.to_owned(),
                read_files: inputs.len(),
                read_bytes: 0,
                written_files: 0,
                written_bytes: 0,
                rounds: Vec::new(),
            },
            inputs,
            cache: cache.to_owned(),
            scratch: scratch.to_owned(),
            buffer: vec![0; READ_BUFFER_BYTES],
        }
    }

    /// The link whose rewritten files the floor writes.
    pub(super) fn rewritten_by(&self) -> &str {
        &self.floor.rewritten_by
    }

    /// One timed round: every input read, then every file the cache holds
    /// now copied to the emptied scratch directory (listing, emptying
    /// and writing back are not timed).
    pub(super) fn round(&mut self, set_aside: &SetAside) -> Result<()> {
        let copies = rewritten_copies(&self.cache, &self.scratch)?;
        set_aside.empty_dir(&self.scratch)?;
        write_back()?;
        let started = Instant::now();
        self.floor.read_bytes = read_every_file(&self.inputs, &mut self.buffer)?;
        let read = started.elapsed();
        let started = Instant::now();
        self.floor.written_bytes = copy_every_file(&copies)?;
        let write = started.elapsed();
        self.floor.written_files = copies.len();
        self.floor.rounds.push(FloorRound { read, write });
        Ok(())
    }

    /// The rounds measured, the copies set aside.
    pub(super) fn finish(self, set_aside: &SetAside) -> Result<IoFloor> {
        set_aside.remove(&self.scratch)?;
        Ok(self.floor)
    }
}

/// Every argument of `corpus`'s link that names an existing file, once
/// each, in command-line order; not its output.
fn link_inputs(corpus: &Corpus) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    corpus
        .args
        .iter()
        .enumerate()
        .filter(|&(index, _)| index != corpus.output_arg_index)
        .map(|(_, arg)| PathBuf::from(arg))
        .filter(|path| path.is_file() && seen.insert(path.clone()))
        .collect()
}

/// Each file stored in `cache` and the path of its copy in `scratch`, by
/// name (none when the cold link left no cache).
fn rewritten_copies(cache: &Path, scratch: &Path) -> Result<Vec<(PathBuf, PathBuf)>> {
    let entries = match fs::read_dir(cache) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error).with_context(|| format!("listing {}", cache.display())),
    };
    let mut copies = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("listing {}", cache.display()))?
            .path();
        let stored = path
            .extension()
            .is_some_and(|ext| ext == STORED_FILE_EXTENSION);
        if let (true, Some(name)) = (stored, path.file_name()) {
            let copy = scratch.join(name);
            copies.push((path, copy));
        }
    }
    copies.sort();
    Ok(copies)
}

/// Reads each of `paths` to its end through `buffer`: the bytes read.
fn read_every_file(paths: &[PathBuf], buffer: &mut [u8]) -> Result<u64> {
    let mut total = 0;
    for path in paths {
        let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
        loop {
            let read = file
                .read(buffer)
                .with_context(|| format!("reading {}", path.display()))?;
            if read == 0 {
                break;
            }
            total += read as u64;
        }
    }
    Ok(total)
}

/// Copies each file to its new path (`fs::copy`: `copy_file_range` on
/// Linux, the copy made in the kernel): the bytes written.
fn copy_every_file(copies: &[(PathBuf, PathBuf)]) -> Result<u64> {
    let mut total = 0;
    for (from, to) in copies {
        total += fs::copy(from, to)
            .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory of its own under the system's temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("icf-floor-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("creating a scratch directory");
        dir
    }

    #[test]
    fn reads_the_link_inputs_and_copies_the_stored_files() {
        let dir = scratch("measure");
        let input = dir.join("a.o");
        let archive = dir.join("lib.a");
        let output = dir.join("out");
        fs::write(&input, vec![1; 3 << 20]).expect("writing a.o");
        fs::write(&archive, b"!<arch>\n").expect("writing lib.a");
        // An output left by an earlier link is not an input.
        fs::write(&output, b"old output").expect("writing out");
        let cache = dir.join("cache");
        fs::create_dir_all(&cache).expect("creating the cache");
        fs::write(cache.join("0123.file"), b"rewritten").expect("writing a stored file");
        fs::write(cache.join("0123.entry"), b"its checksum").expect("writing an entry");
        let path = |p: &Path| p.display().to_string();
        let corpus = Corpus {
            dir: dir.clone(),
            driver: "cc".into(),
            args: vec![
                path(&input),
                "-lc".into(),
                path(&archive),
                path(&input),
                "-o".into(),
                path(&output),
            ],
            inputs: vec![input.clone(), archive.clone()],
            output_arg_index: 5,
        };
        let copies = dir.join("floor");
        let set_aside = SetAside::new(&dir.join("bench"));
        let mut rounds = FloorRounds::new(&corpus, &cache, "icf safe + lld", &copies);
        for _ in 0..2 {
            rounds
                .round(&set_aside)
                .expect("measuring a round of the floor");
        }
        let floor = rounds.finish(&set_aside).expect("setting the copies aside");
        assert_eq!(floor.read_files, 2);
        assert_eq!(floor.read_bytes, (3 << 20) + 8);
        assert_eq!(floor.written_files, 1);
        assert_eq!(floor.written_bytes, 9);
        assert_eq!(floor.rounds.len(), 2);
        assert!(floor.best().is_some());
        assert!(
            !copies.exists(),
            "the copies are set aside after the last round"
        );
        set_aside.delete().expect("deleting what was set aside");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn no_cache_means_nothing_to_write() {
        let dir = scratch("no-cache");
        let copies = rewritten_copies(&dir.join("missing"), &dir.join("floor"))
            .expect("a missing cache is no error");
        assert!(copies.is_empty());
        let _ = fs::remove_dir_all(&dir);
    }
}
