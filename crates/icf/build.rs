//! Names this build of icf's analysis for its cache: a hash of the sources
//! that decide what a comparator key is (this crate, the IR, the lifters,
//! the object readers, the comparator), of `Cargo.lock` (the decoders'
//! versions) and of the compiler's version. A cache entry written by one
//! build is never read by another, so a change to the lifter can never meet
//! keys the old lifter made.

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::path::{Path, PathBuf};

fn main() {
    let crate_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let crates = crate_dir.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut files = Vec::new();
    for name in ["icf", "icf-ir", "icf-arch", "icf-object", "icf-fold"] {
        let dir = crates.join(name).join("src");
        println!("cargo:rerun-if-changed={}", dir.display());
        collect(&dir, &mut files);
        let manifest = crates.join(name).join("Cargo.toml");
        println!("cargo:rerun-if-changed={}", manifest.display());
        files.push(manifest);
    }
    if let Some(lock) = crates.parent().map(|root| root.join("Cargo.lock")) {
        println!("cargo:rerun-if-changed={}", lock.display());
        files.push(lock);
    }
    files.sort();
    let mut hasher = DefaultHasher::new();
    hasher.write(env!("CARGO_PKG_VERSION").as_bytes());
    // The compiler too: the same sources built by another rustc are another
    // build (formatting of derived `Debug` output, which names rewritten
    // files in the cache, is not promised to stay the same).
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    hasher.write(&version);
    for file in &files {
        let contents = std::fs::read(file).unwrap_or_default();
        let relative = file.strip_prefix(&crates).unwrap_or(file);
        hasher.write(relative.to_string_lossy().as_bytes());
        hasher.write_usize(contents.len());
        hasher.write(&contents);
    }
    println!("cargo:rustc-env=ICF_BUILD_ID={:016x}", hasher.finish());
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}
