//! The whole result of a link kept for the next link of the same inputs:
//! which inputs icf rewrote, and under which keys of icf's cache their
//! rewritten files are, so that relinking unchanged inputs (a build that
//! relinks after a change elsewhere, a test loop) runs the linker on the
//! stored files without reading, lifting or comparing anything.
//!
//! An entry is named by everything the fold reads ([`LinkMemo::for_link`]):
//! this build of icf, the plan's options, the link command as read, and
//! for every file icf reads (the inputs, linker scripts, export lists)
//! where it is and what the file system says of it: device, inode, size,
//! modification and status-change times, as ninja, cargo and ccache's
//! direct mode tell an unchanged file ([`FileStamp`]). The status-change
//! time cannot be set back: a file rewritten in place and given its old
//! modification time (`cp -p`, `touch -r`) still misses. A file changed
//! less than [`FileStamp::SETTLED_AFTER`] ago is not trusted (its times
//! may not tell two writes within their resolution apart, git's "racily
//! clean"), nor is a thin archive (its members are other files): then the
//! fold runs as usual and keeps no entry. The key cache tells an unchanged
//! file's object hashes by the same stamp (`analyse/key_cache.rs`).
//!
//! The stored files themselves are trusted no more than before: each is
//! handed out only when its bytes match its checksum
//! ([`icf_cache::Store::get_file`]); one that does not, or a missing
//! entry, is a miss, and the fold runs. Not kept: links that write a
//! report (it is computed from the analysis the entry skips), that plant
//! wrong folds, and Mach-O links (ld64's `-dead_strip` warning is the
//! fold's).

use crate::link::link_command::{LinkCommand, LinkFormat};
use crate::options::{CacheSettings, PlanOptions};
use icf_cache::{Key, KeyHasher, Store};
use icf_object::FileStamp;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Names an entry's key; bump the version when the payload changes.
const DOMAIN: &str = "icf link memo 1";

/// The start of a thin archive.
const THIN_ARCHIVE: &[u8; 8] = b"!<thin>\n";

/// One rewritten input: what the command named, the file name the
/// rewritten copy takes in the link's workspace, and its cache key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Replaced {
    pub input: PathBuf,
    pub name: std::ffi::OsString,
    pub key: Key,
}

/// A link's entry: where it is kept, and under which key.
pub(crate) struct LinkMemo {
    store: Store,
    key: Key,
}

impl LinkMemo {
    /// The entry of this link, `None` when it cannot have one (no cache,
    /// a report wanted, planted folds, Mach-O, a file icf reads that is
    /// missing, a thin archive or one changed within
    /// [`FileStamp::SETTLED_AFTER`]).
    pub(crate) fn for_link(
        parsed: &LinkCommand,
        plan: &PlanOptions,
        cache: Option<&CacheSettings>,
        wants_report: bool,
        files: &[PathBuf],
    ) -> Option<LinkMemo> {
        let cache = cache?;
        if wants_report || !plan.plants.is_empty() || parsed.format != LinkFormat::Elf {
            return None;
        }
        let now = SystemTime::now();
        let mut key = KeyHasher::new(DOMAIN);
        // The command as read: its words (response files expanded) and
        // all icf read from them.
        key.bytes(env!("ICF_BUILD_ID").as_bytes())
            .bytes(format!("{plan:?}").as_bytes())
            .bytes(format!("{parsed:?}").as_bytes());
        let read = files
            .iter()
            .chain(&parsed.scripts)
            .chain(&parsed.export_lists);
        for path in read {
            let stamp = FileStamp::of(&std::fs::metadata(path).ok()?)?;
            if !stamp.settled(now) || is_thin_archive(path) {
                return None;
            }
            key.bytes(path.as_os_str().as_encoded_bytes());
            for word in stamp.words() {
                key.u64(word);
            }
        }
        Some(LinkMemo {
            store: Store::open(&cache.dir, cache.limit).ok()?,
            key: key.finish(),
        })
    }

    /// The rewritten inputs of the link this entry names, each put into
    /// `dir` under its name; `None` (and nothing usable in `dir`) when the
    /// entry or any of its files is missing or does not match.
    pub(crate) fn replay(&self, dir: &Path) -> Option<Vec<(PathBuf, PathBuf)>> {
        let replaced = decode(&self.store.get(&self.key)?)?;
        replaced
            .into_iter()
            .map(|file| {
                let output = dir.join(&file.name);
                self.store
                    .get_file(&file.key, &output)
                    .then_some((file.input, output))
            })
            .collect()
    }

    /// Keeps `replaced` as this link's entry. Best effort: a cache that
    /// cannot take it costs the next link a fold, nothing more.
    pub(crate) fn record(&self, replaced: &[Replaced]) {
        let _ = self.store.put(&self.key, &encode(replaced));
    }
}

fn is_thin_archive(path: &Path) -> bool {
    use std::io::Read;
    let mut start = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut start))
        .is_ok_and(|()| &start == THIN_ARCHIVE)
}

/// The payload: per file, the input's path and the name's lengths (8
/// bytes each), the two, and the key (16 bytes).
fn encode(replaced: &[Replaced]) -> Vec<u8> {
    let mut payload = Vec::new();
    for file in replaced {
        let (input, name) = (
            file.input.as_os_str().as_encoded_bytes(),
            file.name.as_encoded_bytes(),
        );
        payload.extend((input.len() as u64).to_le_bytes());
        payload.extend((name.len() as u64).to_le_bytes());
        payload.extend(input);
        payload.extend(name);
        payload.extend(file.key.0);
    }
    payload
}

/// [`encode`]'s payload read back; `None` if it is not one.
fn decode(payload: &[u8]) -> Option<Vec<Replaced>> {
    fn take<'a>(payload: &'a [u8], at: &mut usize, count: usize) -> Option<&'a [u8]> {
        let taken = payload.get(*at..at.checked_add(count)?)?;
        *at += count;
        Some(taken)
    }
    let length = |bytes: &[u8]| usize::try_from(u64::from_le_bytes(bytes.try_into().ok()?)).ok();
    let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).ok();
    let (mut replaced, mut at) = (Vec::new(), 0);
    while at < payload.len() {
        let input = length(take(payload, &mut at, 8)?)?;
        let name = length(take(payload, &mut at, 8)?)?;
        let input = PathBuf::from(text(take(payload, &mut at, input)?)?);
        let name = text(take(payload, &mut at, name)?)?.into();
        let key = Key(take(payload, &mut at, 16)?.try_into().ok()?);
        replaced.push(Replaced { input, name, key });
    }
    Some(replaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_as_written_and_a_cut_one_does_not() {
        let replaced = vec![
            Replaced {
                input: PathBuf::from("/build/libLLVMCore.a"),
                name: "libLLVMCore.a".into(),
                key: Key([7; 16]),
            },
            Replaced {
                input: PathBuf::from("main.o"),
                name: "3-main.o".into(),
                key: Key([9; 16]),
            },
        ];
        let payload = encode(&replaced);
        assert_eq!(decode(&payload), Some(replaced));
        assert_eq!(decode(&[]), Some(Vec::new()));
        assert_eq!(decode(&payload[..payload.len() - 1]), None);
    }
}
