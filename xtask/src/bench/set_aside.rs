//! What the bench would delete between timed links (a cold row's cache,
//! the I/O floor's copies) is moved aside instead, and deleted once every
//! corpus has been measured.
//!
//! On ext4 without a journal (this project's CI and bench machines), a new
//! inode is not taken from those freed in the last minute (five while
//! their inode table block is dirty): each file created scans past every
//! recently freed inode of its block group (`recently_deleted` in the
//! kernel's `fs/ext4/ialloc.c`). A cold `icf link` creates a file per
//! rewritten object and per cache entry; deleting the previous cold
//! link's cache just before it, as the harness did, made each of those
//! files pay a scan as long as the files deleted, a cost growing with the
//! square of the corpus. On the million-function synthetic corpus the
//! cold `icf link` took 11.3-12.4 s (4.5-5.3 s of system time) right after
//! the previous cache was deleted and 10.0-10.3 s (2.0 s) after it was
//! renamed away. The deletion is the harness's, not the link's: a user's
//! cache is not deleted before each link. The plain links write one file.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};

/// Where the trees taken out of the timed links' way wait to be deleted.
#[derive(Debug)]
pub(super) struct SetAside {
    /// `set-aside-PID` under the bench's root: one file system with every
    /// scratch directory, so a move is a rename.
    dir: PathBuf,
    /// How many trees were moved, which names the next.
    moved: AtomicUsize,
}

/// The prefix of the directories a bench sets trees aside in; one an
/// interrupted bench left is deleted with this bench's.
const PREFIX: &str = "set-aside-";

impl SetAside {
    /// Sets aside under `root` (`target/bench`).
    pub(super) fn new(root: &Path) -> SetAside {
        SetAside {
            dir: root.join(format!("{PREFIX}{}", std::process::id())),
            moved: AtomicUsize::new(0),
        }
    }

    /// Takes `path` (a file or a directory tree) away, if it is there, as
    /// removing it would, without deleting a file yet.
    pub(super) fn remove(&self, path: &Path) -> Result<()> {
        match fs::symlink_metadata(path) {
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(error).with_context(|| format!("reading {}", path.display())),
        }
        fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let to = self
            .dir
            .join(self.moved.fetch_add(1, Ordering::Relaxed).to_string());
        fs::rename(path, &to)
            .with_context(|| format!("moving {} to {}", path.display(), to.display()))
    }

    /// `dir`, created, and empty.
    pub(super) fn empty_dir(&self, dir: &Path) -> Result<()> {
        self.remove(dir)?;
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
    }

    /// Deletes what this bench set aside, and what an interrupted one left.
    pub(super) fn delete(self) -> Result<()> {
        let Some(root) = self.dir.parent() else {
            return Ok(());
        };
        for entry in fs::read_dir(root).with_context(|| format!("listing {}", root.display()))? {
            let entry = entry.with_context(|| format!("listing {}", root.display()))?;
            if entry.file_name().to_string_lossy().starts_with(PREFIX) {
                fs::remove_dir_all(entry.path())
                    .with_context(|| format!("removing {}", entry.path().display()))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_go_away_at_once_and_are_deleted_at_the_end() {
        let root = std::env::temp_dir().join(format!("icf-set-aside-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let cache = root.join("scratch/cache/icf-safe-lld");
        fs::create_dir_all(&cache).expect("creating a cache");
        fs::write(cache.join("0123.entry"), b"keys").expect("writing an entry");
        let leftover = root.join(format!("{PREFIX}1/0"));
        fs::create_dir_all(&leftover).expect("creating what an interrupted bench left");

        let aside = SetAside::new(&root);
        aside.remove(&cache).expect("setting the cache aside");
        assert!(!cache.exists(), "the cache is gone from its place");
        aside
            .remove(&root.join("scratch/missing"))
            .expect("nothing there is no error");
        let floor = root.join("scratch/floor");
        fs::create_dir_all(&floor).expect("creating the floor's copies");
        fs::write(floor.join("a.o"), b"copy").expect("writing a copy");
        aside
            .empty_dir(&floor)
            .expect("emptying the floor's copies");
        assert_eq!(fs::read_dir(&floor).expect("listing").count(), 0);
        let moved = root.join(format!("{PREFIX}{}", std::process::id()));
        assert!(
            moved.join("0/0123.entry").exists(),
            "set aside, not deleted"
        );
        assert!(moved.join("1/a.o").exists());

        aside.delete().expect("deleting what was set aside");
        assert!(!moved.exists());
        assert!(
            !leftover.exists(),
            "an interrupted bench's leftovers go too"
        );
        assert!(root.join("scratch/floor").exists());
        let _ = fs::remove_dir_all(&root);
    }
}
