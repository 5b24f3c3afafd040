//! A content-addressed store of byte strings on disk: what icf computed
//! from one input object, kept so that a later link with the same object
//! (and the same surroundings, which the caller folds into the key) reads it
//! instead of computing it again.
//!
//! The store trusts nothing it reads. Every entry carries its key and a
//! checksum of its contents; an entry that is truncated, overwritten, of
//! another format or filed under the wrong name is a miss, and the caller
//! computes the value and writes the entry again. Entries are written to a
//! temporary file and renamed into place, so concurrent links sharing a
//! directory see either a whole entry or none; two links writing the same
//! key write the same bytes. The directory is bounded: [`Store::evict`]
//! removes the entries used longest ago (a hit renews an entry's
//! modification time) once the total passes the limit.
//!
//! Whole files can be stored too ([`Store::put_file`]): a file another
//! program reads as it is (a rewritten object the linker reads) cannot
//! carry a header, so its checksum lives in an entry of its own, and a file
//! is handed out only when its bytes match it ([`Store::get_file`]). Files
//! are hard-linked in and out, never copied where the file system allows.
//!
//! Keys are 128-bit XXH3 hashes ([`KeyHasher`]): not a defence against an
//! adversary who writes the cache directory (who could write any entry
//! anyway), but far from any accidental collision.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

/// The first bytes of every entry.
const MAGIC: &[u8; 8] = b"icfcache";
/// The entry layout; bump it when the header changes.
const FORMAT: u32 = 1;
/// Magic, format, payload length, key, checksum.
const HEADER: usize = 8 + 4 + 8 + 16 + 16;
/// Entry files end with this; temporary files start with `.tmp-`.
const EXTENSION: &str = "entry";
/// Stored files ([`Store::put_file`]) end with this.
const FILE_EXTENSION: &str = "file";
/// The payload of a stored file's entry: its XXH3-128 and its size.
const FILE_ENTRY: usize = 16 + 8;
/// A temporary file older than this was left by a link that died.
const STALE_TEMPORARY: Duration = Duration::from_secs(600);

/// The name of an entry: a 128-bit hash of everything its value depends on.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Key(pub [u8; 16]);

impl Key {
    /// The key as 32 lowercase hex digits (the entry's file name).
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Builds a [`Key`] from the values an entry depends on. Each value is
/// written with its length or in fixed width, so that different sequences
/// of values never hash the same bytes. The values are gathered and hashed
/// once at the end: XXH3 over one buffer is several times faster than fed
/// eight bytes at a time.
#[derive(Clone, Debug, Default)]
pub struct KeyHasher(Vec<u8>);

impl KeyHasher {
    /// A hasher for keys of one kind of entry: `domain` names it, so that
    /// two kinds never share a key.
    pub fn new(domain: &str) -> KeyHasher {
        let mut hasher = KeyHasher(Vec::with_capacity(256));
        hasher.bytes(domain.as_bytes());
        hasher
    }

    pub fn u64(&mut self, value: u64) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    pub fn u128(&mut self, value: u128) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    /// A byte string, length first.
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        self.u64(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
        self
    }

    pub fn finish(&self) -> Key {
        Key(xxh3_128(&self.0).to_le_bytes())
    }
}

/// The 128-bit XXH3 hash of `bytes`: how an input object is named in keys.
pub fn content_hash(bytes: &[u8]) -> u128 {
    xxh3_128(bytes)
}

/// A cache directory and its size limit.
#[derive(Clone, Debug)]
pub struct Store {
    dir: PathBuf,
    limit: u64,
}

/// What [`Store::evict`] did.
#[derive(Copy, Clone, Default, Debug, PartialEq, Eq)]
pub struct Eviction {
    /// Bytes of entries before and after.
    pub before: u64,
    pub after: u64,
    pub removed: usize,
}

impl Store {
    /// The store in `dir` (created if missing), holding at most about
    /// `limit` bytes of entries after each [`Store::evict`].
    pub fn open(dir: impl Into<PathBuf>, limit: u64) -> io::Result<Store> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(Store { dir, limit })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &Key) -> PathBuf {
        self.dir.join(format!("{}.{EXTENSION}", key.hex()))
    }

    /// The value stored under `key`, if an intact entry holds it. A hit
    /// marks the entry as just used.
    pub fn get(&self, key: &Key) -> Option<Vec<u8>> {
        let path = self.path(key);
        let entry = fs::read(&path).ok()?;
        let payload = check_entry(&entry, key)?;
        let payload = payload.to_vec();
        // Renewing the time is best effort: a read-only cache still hits.
        if let Ok(file) = fs::File::options().append(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        Some(payload)
    }

    /// Stores `payload` under `key`, replacing any entry there, through a
    /// temporary file renamed into place.
    pub fn put(&self, key: &Key, payload: &[u8]) -> io::Result<()> {
        self.put_parts(key, &[payload])
    }

    /// Stores the concatenation of `parts` under `key`, as [`Store::put`]
    /// does, without gathering them in one buffer first (a pack of
    /// comparator keys is tens of MiB in a cold LLVM link).
    pub fn put_parts(&self, key: &Key, parts: &[&[u8]]) -> io::Result<()> {
        static SERIAL: AtomicU64 = AtomicU64::new(0);
        let temporary = self.dir.join(format!(
            ".tmp-{}-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed),
            key.hex()
        ));
        let written = (|| {
            let mut file = io::BufWriter::new(fs::File::create(&temporary)?);
            file.write_all(&entry_header(key, parts))?;
            for part in parts {
                file.write_all(part)?;
            }
            drop(file.into_inner().map_err(io::IntoInnerError::into_error)?);
            fs::rename(&temporary, self.path(key))
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temporary);
        }
        written
    }

    fn file_path(&self, key: &Key) -> PathBuf {
        self.dir.join(format!("{}.{FILE_EXTENSION}", key.hex()))
    }

    /// Stores the file at `path` under `key`: hard-linked in (copied where
    /// the file system cannot link), with its checksum in an entry. The file
    /// must not change afterwards (icf writes files once, renaming them
    /// into place).
    pub fn put_file(&self, key: &Key, path: &Path) -> io::Result<()> {
        let (hash, size) = file_hash(path)?;
        let temporary = self
            .dir
            .join(format!(".tmp-{}-file-{}", std::process::id(), key.hex()));
        let _ = fs::remove_file(&temporary);
        if fs::hard_link(path, &temporary).is_err() {
            fs::copy(path, &temporary)?;
        }
        let linked = fs::rename(&temporary, self.file_path(key));
        if linked.is_err() {
            let _ = fs::remove_file(&temporary);
        }
        linked?;
        let mut payload = Vec::with_capacity(FILE_ENTRY);
        payload.extend_from_slice(&hash.to_le_bytes());
        payload.extend_from_slice(&size.to_le_bytes());
        self.put(key, &payload)
    }

    /// Puts the file stored under `key` at `to` (hard-linked, or copied),
    /// if the store holds it with bytes that match its checksum. A file
    /// that does not match is removed.
    pub fn get_file(&self, key: &Key, to: &Path) -> bool {
        let Some(payload) = self.get(key) else {
            return false;
        };
        let (Ok(hash), Ok(size)) = (
            <[u8; 16]>::try_from(payload.get(..16).unwrap_or_default()),
            <[u8; 8]>::try_from(payload.get(16..FILE_ENTRY).unwrap_or_default()),
        ) else {
            return false;
        };
        let stored = self.file_path(key);
        match file_hash(&stored) {
            Ok(found) if found == (u128::from_le_bytes(hash), u64::from_le_bytes(size)) => {}
            Ok(_) => {
                let _ = fs::remove_file(&stored);
                return false;
            }
            Err(_) => return false,
        }
        let _ = fs::remove_file(to);
        fs::hard_link(&stored, to).is_ok() || fs::copy(&stored, to).is_ok()
    }

    /// Removes the entries used longest ago until the store holds at most
    /// three quarters of its limit, if it holds more than the limit; and
    /// temporary files that dead links left. Entries another process
    /// removes meanwhile are skipped.
    pub fn evict(&self) -> io::Result<Eviction> {
        let now = SystemTime::now();
        let mut entries = Vec::new();
        for item in fs::read_dir(&self.dir)? {
            let Ok(item) = item else { continue };
            let Ok(metadata) = item.metadata() else {
                continue;
            };
            let name = item.file_name();
            let name = name.to_string_lossy();
            let modified = metadata.modified().unwrap_or(now);
            if name.starts_with(".tmp-") {
                if now.duration_since(modified).unwrap_or_default() > STALE_TEMPORARY {
                    let _ = fs::remove_file(item.path());
                }
            } else if (name.ends_with(EXTENSION) || name.ends_with(FILE_EXTENSION))
                && metadata.is_file()
            {
                entries.push((modified, metadata.len(), item.path()));
            }
        }
        let before: u64 = entries.iter().map(|&(_, size, _)| size).sum();
        let mut eviction = Eviction {
            before,
            after: before,
            removed: 0,
        };
        if before <= self.limit {
            return Ok(eviction);
        }
        entries.sort();
        let target = self.limit / 4 * 3;
        for (_, size, path) in entries {
            if eviction.after <= target {
                break;
            }
            match fs::remove_file(&path) {
                Ok(()) => eviction.removed += 1,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
            eviction.after -= size;
        }
        Ok(eviction)
    }
}

/// The XXH3-128 and size of the file at `path`, read a megabyte at a time.
fn file_hash(path: &Path) -> io::Result<(u128, u64)> {
    use std::io::Read;
    let mut file = fs::File::open(path)?;
    let mut hasher = Xxh3::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let read = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        hasher.update(&buffer[..read]);
        size += read as u64;
    }
    Ok((hasher.digest128(), size))
}

/// The header of an entry holding the concatenation of `parts` under
/// `key`; the payload follows it.
fn entry_header(key: &Key, parts: &[&[u8]]) -> [u8; HEADER] {
    let length: usize = parts.iter().map(|part| part.len()).sum();
    let mut header = [0; HEADER];
    let fields: [&[u8]; 5] = [
        MAGIC,
        &FORMAT.to_le_bytes(),
        &(length as u64).to_le_bytes(),
        &key.0,
        &checksum(key, parts).to_le_bytes(),
    ];
    let mut at = 0;
    for field in fields {
        header[at..at + field.len()].copy_from_slice(field);
        at += field.len();
    }
    header
}

/// The checksum covers the key too: an entry copied under another name is
/// not an entry for that name.
fn checksum(key: &Key, parts: &[&[u8]]) -> u128 {
    let mut hasher = Xxh3::new();
    hasher.update(&key.0);
    for part in parts {
        hasher.update(part);
    }
    hasher.digest128()
}

/// The payload of `entry` if it is an intact entry for `key`.
fn check_entry<'e>(entry: &'e [u8], key: &Key) -> Option<&'e [u8]> {
    let (header, payload) = entry.split_at_checked(HEADER)?;
    let (magic, rest) = header.split_at(8);
    let (format, rest) = rest.split_at(4);
    let (length, rest) = rest.split_at(8);
    let (stored_key, sum) = rest.split_at(16);
    let length = u64::from_le_bytes(length.try_into().ok()?);
    let ok = magic == MAGIC
        && u32::from_le_bytes(format.try_into().ok()?) == FORMAT
        && length == payload.len() as u64
        && stored_key == key.0
        && u128::from_le_bytes(sum.try_into().ok()?) == checksum(key, &[payload]);
    ok.then_some(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("icf-cache-test-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn key(value: u64) -> Key {
        KeyHasher::new("test").u64(value).finish()
    }

    #[test]
    fn a_stored_value_comes_back_and_others_miss() {
        let dir = scratch("roundtrip");
        let store = Store::open(&dir, 1 << 20).expect("opening the store");
        assert_eq!(store.get(&key(1)), None);
        store.put(&key(1), b"one").expect("storing");
        store.put(&key(2), b"").expect("storing");
        assert_eq!(store.get(&key(1)).as_deref(), Some(&b"one"[..]));
        assert_eq!(store.get(&key(2)).as_deref(), Some(&b""[..]));
        assert_eq!(store.get(&key(3)), None);
        store.put(&key(1), b"uno").expect("replacing");
        assert_eq!(store.get(&key(1)).as_deref(), Some(&b"uno"[..]));
        fs::remove_dir_all(&dir).expect("cleaning up");
    }

    #[test]
    fn a_value_stored_in_parts_is_the_entry_of_their_concatenation() {
        let dir = scratch("parts");
        let store = Store::open(&dir, 1 << 20).expect("opening the store");
        store
            .put_parts(&key(1), &[b"comparator ", b"", b"keys"])
            .expect("storing in parts");
        store
            .put(&key(2), b"comparator keys")
            .expect("storing whole");
        assert_eq!(store.get(&key(1)).as_deref(), Some(&b"comparator keys"[..]));
        // The same bytes but for the key the header and checksum name.
        let (parts, whole) = (
            fs::read(store.path(&key(1))).expect("reading"),
            fs::read(store.path(&key(2))).expect("reading"),
        );
        assert_eq!(parts.len(), whole.len());
        assert_eq!(parts[..20], whole[..20]);
        assert_eq!(parts[HEADER..], whole[HEADER..]);
        store.put_parts(&key(3), &[]).expect("storing nothing");
        assert_eq!(store.get(&key(3)).as_deref(), Some(&b""[..]));
        fs::remove_dir_all(&dir).expect("cleaning up");
    }

    #[test]
    fn keys_separate_sequences_and_domains() {
        let a = KeyHasher::new("d").bytes(b"ab").bytes(b"c").finish();
        let b = KeyHasher::new("d").bytes(b"a").bytes(b"bc").finish();
        let c = KeyHasher::new("e").bytes(b"ab").bytes(b"c").finish();
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, KeyHasher::new("d").bytes(b"ab").bytes(b"c").finish());
        assert_eq!(a.hex().len(), 32);
    }

    #[test]
    fn every_damaged_entry_is_a_miss() {
        let dir = scratch("damaged");
        let store = Store::open(&dir, 1 << 20).expect("opening the store");
        let payload = b"the comparator keys of one object".to_vec();
        store.put(&key(7), &payload).expect("storing");
        let path = store.path(&key(7));
        let intact = fs::read(&path).expect("reading the entry");
        // Every single flipped bit, anywhere in the entry, and every truncation.
        for at in 0..intact.len() {
            for bit in [0x01u8, 0x80] {
                let mut damaged = intact.clone();
                damaged[at] ^= bit;
                fs::write(&path, &damaged).expect("damaging");
                assert_eq!(store.get(&key(7)), None, "bit {bit:#x} of byte {at}");
            }
        }
        for length in 0..intact.len() {
            fs::write(&path, &intact[..length]).expect("truncating");
            assert_eq!(store.get(&key(7)), None, "truncated to {length}");
        }
        // Longer than its header says.
        fs::write(&path, [intact.as_slice(), b"x"].concat()).expect("extending");
        assert_eq!(store.get(&key(7)), None);
        // A whole entry filed under another key.
        fs::write(store.path(&key(8)), &intact).expect("copying");
        assert_eq!(store.get(&key(8)), None);
        // Rewritten, it hits again.
        store.put(&key(7), &payload).expect("storing again");
        assert_eq!(store.get(&key(7)), Some(payload));
        fs::remove_dir_all(&dir).expect("cleaning up");
    }

    #[test]
    fn eviction_removes_the_least_recently_used_entries() {
        let dir = scratch("evict");
        let store = Store::open(&dir, 1000).expect("opening the store");
        let payload = vec![0u8; 200 - HEADER];
        let old = SystemTime::now() - Duration::from_secs(3600);
        for i in 0..8u64 {
            store.put(&key(i), &payload).expect("storing");
            let file = fs::File::options()
                .append(true)
                .open(store.path(&key(i)))
                .expect("opening the entry");
            file.set_modified(old + Duration::from_secs(i))
                .expect("dating the entry");
        }
        // Entry 0 is the oldest, but a hit renews it.
        assert!(store.get(&key(0)).is_some());
        let leftover = dir.join(".tmp-1-1-dead");
        fs::write(&leftover, b"partial").expect("writing a leftover");
        fs::File::options()
            .append(true)
            .open(&leftover)
            .and_then(|f| f.set_modified(old))
            .expect("dating the leftover");
        let eviction = store.evict().expect("evicting");
        assert_eq!(eviction.before, 1600);
        // 1600 bytes over a 1000-byte limit: down to 750, five entries removed.
        assert_eq!((eviction.removed, eviction.after), (5, 600));
        assert!(!leftover.exists());
        let kept: Vec<u64> = (0..8).filter(|&i| store.get(&key(i)).is_some()).collect();
        assert_eq!(kept, [0, 6, 7]);
        // Under the limit, nothing goes.
        assert_eq!(store.evict().expect("evicting").removed, 0);
        fs::remove_dir_all(&dir).expect("cleaning up");
    }

    #[test]
    fn stored_files_come_back_only_while_their_bytes_match() {
        let dir = scratch("files");
        let store = Store::open(dir.join("cache"), 1 << 20).expect("opening the store");
        let original = dir.join("rewritten.o");
        fs::write(&original, b"a rewritten object").expect("writing");
        store
            .put_file(&key(1), &original)
            .expect("storing the file");
        let out = dir.join("out.o");
        assert!(store.get_file(&key(1), &out));
        assert_eq!(fs::read(&out).expect("reading"), b"a rewritten object");
        assert!(!store.get_file(&key(2), &out));
        // A stored file whose bytes changed is refused and removed.
        let stored = store.file_path(&key(1));
        fs::remove_file(&stored).expect("unlinking");
        fs::write(&stored, b"a rewritten objecT").expect("damaging");
        assert!(!store.get_file(&key(1), &out));
        assert!(!stored.exists());
        // Stored again, it comes back; eviction counts files too.
        store.put_file(&key(1), &original).expect("storing again");
        assert!(store.get_file(&key(1), &dir.join("again.o")));
        let entry = (HEADER + FILE_ENTRY) as u64;
        assert_eq!(store.evict().expect("evicting").before, 18 + entry);
        fs::remove_dir_all(&dir).expect("cleaning up");
    }

    #[test]
    fn concurrent_writers_of_one_key_leave_one_whole_entry() {
        let dir = scratch("concurrent");
        let store = Store::open(&dir, 1 << 30).expect("opening the store");
        let payload: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..20 {
                        store.put(&key(1), &payload).expect("storing");
                        if let Some(read) = store.get(&key(1)) {
                            assert_eq!(read, payload);
                        }
                    }
                });
            }
        });
        assert_eq!(store.get(&key(1)), Some(payload));
        let names: Vec<_> = fs::read_dir(&dir)
            .expect("listing")
            .map(|e| e.expect("an entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        fs::remove_dir_all(&dir).expect("cleaning up");
    }
}
